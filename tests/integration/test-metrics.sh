#!/usr/bin/env bash
# /metrics and /metrics/probes of a real agent with pods, on loopback: both
# pass `promtool check metrics` (Debian's prometheus package); kubelet's
# metrics count what the agent did (pods and containers started, a
# container's restarts, a probe's failures, runtime and CNI operations, the
# PLEG relist, pod start durations, a static pod re-added with the same UID);
# manifest source errors appear and go; the manifest URL's polls are counted
# by result; process_* and image metrics are there. Every value is read from
# the agent's own answer, and checked against its status files.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

PY=/usr/bin/python3
PROMTOOL=$(command -v promtool || true)
if [ -z "$PROMTOOL" ]; then
        fail "promtool is not installed (apt-get install prometheus)"
        finish
fi
load_test_image || { fail "test image"; finish; }

read -r RO_PORT URL_PORT < <(free_ports 2)
RO=http://127.0.0.1:$RO_PORT

# The manifest URL: Python's own file server on loopback (it answers
# If-Modified-Since with 304).
mkdir -p "$WORK/www"
cat >"$WORK/www/pods.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: fromurl}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
YAML
# A modification time in the past: a Last-Modified of "now" is not used as
# a validator (racy), and the test wants 304s.
touch -d '2020-01-01' "$WORK/www/pods.yaml"
(cd "$WORK/www" && exec "$PY" -m http.server --bind 127.0.0.1 "$URL_PORT" >"$WORK/http.log" 2>&1) &
PIDS+=($!)
for ((i = 0; i < 300; i++)); do
        curl -fs -o /dev/null "http://127.0.0.1:$URL_PORT/pods.yaml" && break
        sleep 0.1
done

sleep_pod web 5 | put_manifest web.yaml
# Exits after a second, forever: restarts (with back-off). Its readiness
# probe always fails.
cat <<'YAML' | put_manifest crash.yaml
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, "sleep 1; exit 3"]
    readinessProbe:
      exec: {command: ["false"]}
      periodSeconds: 1
YAML
start_agent --stop-pods-on-exit --read-only-port "$RO_PORT" \
        --manifest-url "http://127.0.0.1:$URL_PORT/pods.yaml" --http-check-frequency 1s
expect "read-only API listening" "$AGENT_LOG" "Serving the read-only API on 127\.0\.0\.1:$RO_PORT\."
check_field "web is ready" web '[c["status"] for c in p["status"]["conditions"] if c["type"] == "Ready"][0]' True 60
check_field "fromurl is running" fromurl 'p["status"]["phase"]' Running 60
agent_maps "libcurl loaded for the URL source" yes libcurl
check_field "crash restarted twice" crash 'p["status"]["containerStatuses"][0]["restartCount"] >= 2' True 90

# scrape PATH FILE: the body in FILE; fails on anything but 200.
scrape() {
        curl -fs -o "$2" --max-time 30 "$RO$1"
}

# metric FILE NAME [label=value ...]: the sum of the series of NAME whose
# labels include the given ones ("" when there is none).
metric() {
        "$PY" - "$@" <<'PYEOF'
import re, sys
path, name, want = sys.argv[1], sys.argv[2], dict(a.split("=", 1) for a in sys.argv[3:])
total, found = 0.0, False
line_re = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
label_re = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')
for line in open(path):
    m = line_re.match(line.rstrip("\n"))
    if not m or m.group(1) != name:
        continue
    labels = dict(label_re.findall(m.group(2) or ""))
    if all(labels.get(k) == v for k, v in want.items()):
        total += float(m.group(3)); found = True
print(("%g" % total) if found else "")
PYEOF
}

# check_metric DESC FILE PYCOND NAME [labels...]: PYCOND on the value (as v).
check_metric() {
        local desc=$1 file=$2 cond=$3 v
        shift 3
        v=$(metric "$file" "$@")
        if [ -n "$v" ] && "$PY" -c "import sys; v=float(sys.argv[1]); sys.exit(0 if ($cond) else 1)" "$v"; then
                ok "$desc ($* = $v)"
        else
                fail "$desc: $* = '$v', want $cond"
        fi
}

# check_none DESC FILE NAME [labels...]: no such series, or only zeros.
check_none() {
        local desc=$1 file=$2 v
        shift 2
        v=$(metric "$file" "$@")
        [ -z "$v" ] || [ "$v" = 0 ] && ok "$desc ($* = '${v}')" || fail "$desc: $* = $v"
}

# wait_metric DESC PATH PYCOND NAME [labels...]: scrapes until PYCOND holds.
wait_metric() {
        local desc=$1 path=$2 cond=$3 v i
        shift 3
        for ((i = 0; i < 150; i++)); do
                scrape "$path" "$WORK/wait.txt" || true
                v=$(metric "$WORK/wait.txt" "$@")
                [ -n "$v" ] && "$PY" -c "import sys; v=float(sys.argv[1]); sys.exit(0 if ($cond) else 1)" "$v" && break
                sleep 0.2
        done
        check_metric "$desc" "$WORK/wait.txt" "$cond" "$@"
}

# --- promtool accepts every line of both endpoints
scrape /metrics "$WORK/m.txt" && ok "GET /metrics is 200" || fail "GET /metrics"
scrape /metrics/probes "$WORK/p.txt" && ok "GET /metrics/probes is 200" || fail "GET /metrics/probes"
for f in m p; do
        if out=$("$PROMTOOL" check metrics <"$WORK/$f.txt" 2>&1); then
                ok "promtool check metrics: $f.txt clean"
        else
                fail "promtool check metrics ($f.txt): $out"
        fi
done
grep -q '^Content-Type: text/plain; version=0.0.4' <(curl -sI "$RO/metrics" | tr -d '\r') &&
        ok "/metrics is text/plain; version=0.0.4" || fail "/metrics content type"
[ "$(curl -s -o /dev/null -w '%{http_code}' -X POST --max-time 30 "$RO/metrics" || true)" = 405 ] &&
        ok "POST /metrics: 405" || fail "POST /metrics"

# --- what the agent did, counted
M=$WORK/m.txt
check_metric "three pods running" "$M" 'v == 3' kubelet_running_pods
check_metric "three pods started" "$M" 'v == 3' kubelet_started_pods_total
check_metric "no pod start errors" "$M" 'v == 0' kubelet_started_pods_errors_total
check_metric "containers started, restarts included" "$M" 'v >= 5' kubelet_started_containers_total container_type=container
check_metric "pod start durations observed" "$M" 'v == 3' kubelet_pod_start_duration_seconds_count
check_metric "pod start within an hour" "$M" 'v == 3' kubelet_pod_start_duration_seconds_bucket le=3600
check_metric "pod worker syncs timed" "$M" 'v >= 3' kubelet_pod_worker_duration_seconds_count operation_type=create
check_metric "runc starts counted" "$M" 'v >= 4' kubelet_runtime_operations_total operation_type=start_container
check_metric "conmon creates counted" "$M" 'v >= 4' kubelet_runtime_operations_duration_seconds_count operation_type=create_container
check_metric "sandboxes counted" "$M" 'v == 3' kubelet_runtime_operations_total operation_type=run_podsandbox
check_none "no runtime errors" "$M" kubelet_runtime_operations_errors_total
check_metric "PLEG relists timed" "$M" 'v >= 1' kubelet_pleg_relist_duration_seconds_count
check_metric "PLEG relist interval about 1 s" "$M" 'v >= 1' kubelet_pleg_relist_interval_seconds_bucket le=2.5
check_metric "CNI ADDs counted" "$M" 'v == 3' nanolet_cni_operations_total operation=ADD
check_metric "CNI ADD durations" "$M" 'v == 3' nanolet_cni_operation_duration_seconds_count operation=ADD
restarts=$(pod_field crash 'p["status"]["containerStatuses"][0]["restartCount"]')
check_metric "crash restarts as its status says" "$M" "v >= $restarts" nanolet_container_restarts_total pod=crash-node1 container=main
check_metric "web never restarted" "$M" 'v == 0' nanolet_container_restarts_total pod=web-node1
check_metric "running containers" "$M" 'v >= 2' kubelet_running_containers container_state=running
check_metric "one image" "$M" 'v == 1' nanolet_images
check_metric "image bytes" "$M" 'v > 100000' nanolet_image_store_bytes
check_metric "resident memory" "$M" 'v > 1000000' process_resident_memory_bytes
check_metric "open fds" "$M" 'v > 5' process_open_fds
check_metric "start time" "$M" 'v > 1.7e9' process_start_time_seconds
check_metric "CPU seconds" "$M" 'v > 0' process_cpu_seconds_total
check_metric "no manifest errors" "$M" 'v == 0' nanolet_manifest_source_errors

# --- probe results on /metrics/probes only, kubelet's labels
P=$WORK/p.txt
uid=$(pod_field crash 'p["metadata"]["uid"]')
check_metric "readiness failures counted" "$P" 'v >= 2' prober_probe_total probe_type=Readiness result=failed container=main pod=crash-node1 namespace=default pod_uid="$uid"
check_none "no readiness successes for crash" "$P" prober_probe_total pod=crash-node1 result=successful
grep -q '^prober_probe_total' "$M" && fail "probe results in /metrics" || ok "probe results only in /metrics/probes"
grep -q '^kubelet_' "$P" && fail "kubelet metrics in /metrics/probes" || ok "/metrics/probes holds probes only"

# --- URL polls by result: the first 200, then 304s; a 404 is an error
wait_metric "URL answered 200" /metrics 'v >= 1' nanolet_manifest_url_fetches_total result=200
wait_metric "URL answered 304 afterwards" /metrics 'v >= 2' nanolet_manifest_url_fetches_total result=304
mv "$WORK/www/pods.yaml" "$WORK/pods.yaml.away"
wait_metric "a 404 is an error" /metrics 'v >= 1' nanolet_manifest_url_fetches_total result=error
wait_metric "the URL's failure is a source error" /metrics 'v == 1' nanolet_manifest_source_errors source=http reason=unreadable
mv "$WORK/pods.yaml.away" "$WORK/www/pods.yaml"
wait_metric "and goes when the URL answers again" /metrics 'v == 0' nanolet_manifest_source_errors source=http

# --- manifest errors appear and go
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: broken\n' | put_manifest broken.yaml
wait_metric "a syntax error is counted" /metrics 'v == 1' nanolet_manifest_source_errors source=file reason=syntax
sleep_pod broken | put_manifest broken.yaml
wait_metric "and goes when the file is fixed" /metrics 'v == 0' nanolet_manifest_source_errors source=file
check_field "the fixed pod runs" broken 'p["status"]["phase"]' Running 60

# --- a static pod removed and put back with the same content: same UID,
# counted as restarted (kubelet_restarted_pods_total{static="true"}).
mv "$MAN/web.yaml" "$WORK/web.yaml"
expect "web terminating" "$AGENT_LOG" 'Terminating pod "web-node1_default.*its manifest was removed' 1 30
mv "$WORK/web.yaml" "$MAN/web.yaml"
wait_metric "web counted as restarted" /metrics 'v == 1' kubelet_restarted_pods_total static=true
# Removed again before the new one could start: the new one goes without
# touching what the old one, still stopping, uses (same UID, same pod dir,
# cgroup and namespaces); then it comes back once more.
mv "$MAN/web.yaml" "$WORK/web.yaml"
expect "the waiting web goes" "$AGENT_LOG" 'Pod "web-node1_.* is gone \(it never started\)' 1 30
mv "$WORK/web.yaml" "$MAN/web.yaml"
wait_metric "web counted as restarted again" /metrics 'v == 2' kubelet_restarted_pods_total static=true
expect "the old web exits after its grace period" "$AGENT_LOG" 'Container "main" of pod "web-node1_.* exited with code 137' 1 30
for bad in 'leftover mount' 'cannot record its exit' 'failed to remove cgroup'; do
        grep -q "$bad" "$AGENT_LOG" && fail "the old web disturbed: $(grep "$bad" "$AGENT_LOG")" ||
                ok "old web undisturbed: no '$bad'"
done
# The new one starts once the old one is gone (its 5 s grace period).
expect "web runs again" "$AGENT_LOG" 'Started container "main" of pod "web-node1_' 2 60
wait_metric "four pods started in all" /metrics 'v == 5' kubelet_started_pods_total

# Everything still passes promtool once pods came and went.
scrape /metrics "$WORK/m2.txt" && "$PROMTOOL" check metrics <"$WORK/m2.txt" >"$WORK/pt" 2>&1 &&
        ok "promtool still clean" || fail "promtool after changes: $(cat "$WORK/pt")"

stop_agent
check_no_leftovers
finish
