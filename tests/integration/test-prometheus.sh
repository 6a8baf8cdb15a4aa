#!/usr/bin/env bash
# Fleet metrics with a real Prometheus (Debian's prometheus package) on
# loopback: every metrics endpoint of a real agent passes `promtool check
# metrics`; a Prometheus scrapes /metrics, /metrics/resource and
# /metrics/pods (the last relabelled job="kube-state-metrics") and
# kubernetes-mixin's KubePodCrashLooping expression, unchanged, returns the
# crash-looping pod; the resource series (with their sample timestamps)
# reach Prometheus; a Prometheus in agent mode remote-writes /metrics/pods
# with an external label naming the box to the first one (a remote-write
# receiver), which then has the series with that label; the URL source's
# last good fetch moves; a removed pod's series are gone from every
# endpoint. Everything is observed through the agent's answers and
# Prometheus' HTTP API. Every process and directory goes with the test.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

PY=/usr/bin/python3
PROMETHEUS=$(command -v prometheus || true)
PROMTOOL=$(command -v promtool || true)
if [ -z "$PROMETHEUS" ] || [ -z "$PROMTOOL" ]; then
        fail "prometheus and promtool are not installed (apt-get install prometheus)"
        finish
fi
load_test_image || { fail "test image"; finish; }

read -r RO_PORT URL_PORT PROM_PORT AGENT_PORT < <(free_ports 4)
RO=http://127.0.0.1:$RO_PORT
PROM=http://127.0.0.1:$PROM_PORT
BOX=edge-box-042

# The crash-looping pod comes from the manifest URL (Python's file server on
# loopback): its source's last good fetch is then a series too.
mkdir -p "$WORK/www"
cat >"$WORK/www/pods.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "exit 3"]}
YAML
touch -d '2020-01-01' "$WORK/www/pods.yaml"
(cd "$WORK/www" && exec "$PY" -m http.server --bind 127.0.0.1 "$URL_PORT" >"$WORK/http.log" 2>&1) &
PIDS+=($!)
for ((i = 0; i < 300; i++)); do
        curl -fs -o /dev/null "http://127.0.0.1:$URL_PORT/pods.yaml" && break
        sleep 0.1
done

sleep_pod web | put_manifest web.yaml
sleep_pod gone 1 | put_manifest gone.yaml
start_agent --stop-pods-on-exit --read-only-port "$RO_PORT" \
        --manifest-url "http://127.0.0.1:$URL_PORT/pods.yaml" --http-check-frequency 1s
expect "read-only API listening" "$AGENT_LOG" "Serving the read-only API on 127\.0\.0\.1:$RO_PORT\."
check_field "web runs" web 'p["status"]["phase"]' Running 60
check_field "gone runs" gone 'p["status"]["phase"]' Running 60
check_field "crash is in CrashLoopBackOff" crash \
        'p["status"]["containerStatuses"][0]["state"].get("waiting", {}).get("reason")' CrashLoopBackOff 90
check_field "crash restarted" crash 'p["status"]["containerStatuses"][0]["restartCount"] >= 1' True 90

scrape() {
        curl -fs -o "$2" --max-time 30 "$RO$1"
}

# --- promtool accepts every metrics endpoint
ENDPOINTS=(/metrics /metrics/probes /metrics/resource /metrics/pods)
check_promtool() {
        local path f out
        for path in "${ENDPOINTS[@]}"; do
                f=$WORK/scrape$(echo "$path" | tr / _).txt
                if ! scrape "$path" "$f"; then
                        fail "GET $path ($1)"
                        continue
                fi
                if out=$("$PROMTOOL" check metrics <"$f" 2>&1); then
                        ok "promtool check metrics $path ($1): clean"
                else
                        fail "promtool check metrics $path ($1): $out"
                fi
        done
}
check_promtool "pods running"
R=$WORK/scrape_metrics_resource.txt
K=$WORK/scrape_metrics_pods.txt
M=$WORK/scrape_metrics.txt

# has FILE REGEX DESC: a line of FILE matches REGEX.
has() {
        grep -qE -- "$2" "$1" && ok "$3" || fail "$3: no line /$2/ in $(basename "$1")"
}
has "$R" '^container_cpu_usage_seconds_total\{container="main",pod="web-node1",namespace="default"\} [0-9.e+-]+ [0-9]{13}$' \
        "web's container CPU seconds with a sample timestamp in ms"
has "$R" '^container_memory_working_set_bytes\{container="main",pod="web-node1",namespace="default"\} [0-9.e+]+ [0-9]{13}$' \
        "web's container working set"
has "$R" '^container_start_time_seconds\{container="main",pod="web-node1",namespace="default"\} 1\.[0-9]+e\+09$' \
        "web's container start time"
has "$R" '^pod_cpu_usage_seconds_total\{pod="web-node1",namespace="default"\} ' "web's pod CPU seconds"
has "$R" '^pod_memory_working_set_bytes\{pod="web-node1",namespace="default"\} ' "web's pod working set"
has "$R" '^node_cpu_usage_seconds_total [0-9.e+]+ [0-9]{13}$' "the node's CPU seconds"
has "$R" '^node_memory_working_set_bytes [0-9.e+]+ [0-9]{13}$' "the node's working set"
has "$R" '^scrape_error 0$' "scrape_error 0"
has "$R" '^resource_scrape_error 0$' "resource_scrape_error 0"
has "$K" '^kube_pod_status_phase\{namespace="default",pod="web-node1",uid="[0-9a-f-]+",phase="Running"\} 1$' \
        "web's phase Running"
has "$K" '^kube_pod_status_ready\{namespace="default",pod="web-node1",uid="[0-9a-f-]+",condition="true"\} 1$' \
        "web ready"
has "$K" '^kube_pod_container_status_running\{namespace="default",pod="web-node1",uid="[0-9a-f-]+",container="main"\} 1$' \
        "web's container running"
has "$K" '^kube_pod_info\{namespace="default",pod="web-node1",.*node="node1"' "web's kube_pod_info"
has "$K" '^kube_pod_container_status_restarts_total\{namespace="default",pod="crash-node1",uid="[0-9a-f-]+",container="main"\} [1-9]' \
        "crash's restarts counted"
has "$M" "^nanolet_build_info\\{version=\"[0-9][^\"]*\"\\} 1\$" "nanolet_build_info"
has "$M" '^nanolet_manifest_source_last_success_timestamp_seconds\{source="http"\} 1\.[0-9]+e\+09$' \
        "the URL's last good fetch"
t1=$(sed -n 's/^nanolet_manifest_source_last_success_timestamp_seconds{source="http"} //p' "$M")

# --- a Prometheus scraping the agent every second, and receiving remote writes
mkdir -p "$WORK/prom" "$WORK/prom-agent"
cat >"$WORK/prom.yml" <<YAML
global: {scrape_interval: 1s, scrape_timeout: 1s}
scrape_configs:
- job_name: nanolet
  static_configs: [{targets: ["127.0.0.1:$RO_PORT"]}]
  relabel_configs:
  - {target_label: job, replacement: kubelet}
  - {source_labels: [__metrics_path__], target_label: metrics_path}
- job_name: nanolet-resource
  metrics_path: /metrics/resource
  static_configs: [{targets: ["127.0.0.1:$RO_PORT"]}]
  relabel_configs:
  - {target_label: job, replacement: kubelet}
  - {source_labels: [__metrics_path__], target_label: metrics_path}
- job_name: nanolet-pods
  metrics_path: /metrics/pods
  static_configs: [{targets: ["127.0.0.1:$RO_PORT"]}]
  relabel_configs:
  - {target_label: job, replacement: kube-state-metrics}
  - {source_labels: [__metrics_path__], target_label: metrics_path}
YAML
cat >"$WORK/prom-agent.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  external_labels: {box: $BOX}
scrape_configs:
- job_name: nanolet-pods
  metrics_path: /metrics/pods
  static_configs: [{targets: ["127.0.0.1:$RO_PORT"]}]
  relabel_configs:
  - {target_label: job, replacement: kube-state-metrics}
  - {source_labels: [__metrics_path__], target_label: metrics_path}
remote_write:
- url: $PROM/api/v1/write
  queue_config: {batch_send_deadline: 1s}
YAML
out=$("$PROMTOOL" check config "$WORK/prom.yml" 2>&1) || fail "promtool check config prom.yml: $out"
out=$("$PROMTOOL" check config --agent "$WORK/prom-agent.yml" 2>&1) ||
        fail "promtool check config --agent prom-agent.yml: $out"
"$PROMETHEUS" --config.file="$WORK/prom.yml" --storage.tsdb.path="$WORK/prom" \
        --web.listen-address="127.0.0.1:$PROM_PORT" --web.enable-remote-write-receiver \
        >"$WORK/prom.log" 2>&1 &
PIDS+=($!)
"$PROMETHEUS" --enable-feature=agent --config.file="$WORK/prom-agent.yml" \
        --storage.agent.path="$WORK/prom-agent" --web.listen-address="127.0.0.1:$AGENT_PORT" \
        >"$WORK/prom-agent.log" 2>&1 &
PIDS+=($!)

# prom_wait DESC EXPR PYCOND [TIMEOUT_S]: polls Prometheus' query API with
# EXPR until PYCOND holds on its result vector (as r: a list of
# {"metric": {...}, "value": [t, "v"]}).
prom_wait() {
        local desc=$1 expr=$2 cond=$3 timeout=${4:-90} i
        for ((i = 0; i < timeout * 2; i++)); do
                if curl -fs --max-time 10 --data-urlencode "query=$expr" "$PROM/api/v1/query" >"$WORK/q.json" 2>/dev/null &&
                        "$PY" -c '
import json, sys
d = json.load(open(sys.argv[1]))
r = d["data"]["result"] if d.get("status") == "success" else []
sys.exit(0 if eval(sys.argv[2]) else 1)' "$WORK/q.json" "$cond"; then
                        ok "$desc"
                        return 0
                fi
                sleep 0.5
        done
        fail "$desc: $expr gives $(cat "$WORK/q.json" 2>/dev/null), want $cond"
        tail -20 "$WORK/prom.log" "$WORK/prom-agent.log" >&2
        return 1
}

prom_wait "Prometheus scrapes the three endpoints" 'up{box=""}' \
        'len(r) == 3 and all(x["value"][1] == "1" for x in r)'
# kubernetes-mixin's KubePodCrashLooping, as it is written.
prom_wait "KubePodCrashLooping's expression returns the crash-looping pod" \
        'max_over_time(kube_pod_container_status_waiting_reason{reason="CrashLoopBackOff", job="kube-state-metrics"}[5m]) >= 1' \
        'any(x["metric"].get("pod") == "crash-node1" and x["metric"].get("container") == "main" and x["metric"].get("namespace") == "default" for x in r) and not any(x["metric"].get("pod") == "web-node1" for x in r)'
prom_wait "container CPU seconds reach Prometheus (sample timestamps accepted)" \
        'container_cpu_usage_seconds_total{job="kubelet", pod="web-node1", container="main"}' 'len(r) == 1'
prom_wait "node working set reaches Prometheus" 'node_memory_working_set_bytes{job="kubelet"} > 0' 'len(r) == 1'
prom_wait "the remote-written series carry the box's external label" \
        "kube_pod_status_phase{box=\"$BOX\", job=\"kube-state-metrics\", pod=\"web-node1\", phase=\"Running\"} == 1" \
        'len(r) == 1'
prom_wait "the receiver's own scrape has no box label" \
        'kube_pod_status_phase{box="", job="kube-state-metrics", pod="web-node1", phase="Running"}' 'len(r) == 1'

# --- the URL's last good fetch moves with each poll (304s included)
for ((i = 0; i < 100; i++)); do
        scrape /metrics "$M" || true
        t2=$(sed -n 's/^nanolet_manifest_source_last_success_timestamp_seconds{source="http"} //p' "$M")
        "$PY" -c 'import sys; sys.exit(0 if float(sys.argv[2]) > float(sys.argv[1]) else 1)' "$t1" "${t2:-0}" && break
        sleep 0.2
done
"$PY" -c 'import sys; sys.exit(0 if float(sys.argv[2]) > float(sys.argv[1]) else 1)' "$t1" "${t2:-0}" &&
        ok "the last good fetch moved ($t1 -> $t2)" || fail "the last good fetch stayed at $t1 ($t2)"

# --- a removed pod leaves no series behind
mv "$MAN/gone.yaml" "$WORK/gone.yaml"
expect "gone is removed" "$AGENT_LOG" 'Pod "gone-node1_[^"]*" is gone' 1 60
for ((i = 0; i < 150; i++)); do
        curl -fs --max-time 10 "$RO/pods" | grep -q '"gone-node1"' || break
        sleep 0.2
done
check_promtool "a pod removed"
for path in "${ENDPOINTS[@]}"; do
        f=$WORK/scrape$(echo "$path" | tr / _).txt
        if grep -q 'gone-node1' "$f"; then
                fail "$path still has series of the removed pod: $(grep 'gone-node1' "$f" | head -3)"
        else
                ok "$path has no series of the removed pod"
        fi
done
has "$K" 'pod="web-node1"' "web's series stay"

stop_agent
check_no_leftovers
finish
