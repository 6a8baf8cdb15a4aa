#!/usr/bin/env bash
# Probes and lifecycle hooks run by the agent (docs/probes.md), end to end with
# real runc/conmon/CNI: exec (with a hung command), httpGet on the pod IP
# and on 127.0.0.1 for hostNetwork pods (named port, headers, HTTPS), gRPC
# health, startup gating, postStart/preStop, and a kubeadm-style etcd
# static pod. Every server the test starts listens on 127.0.0.1 or inside
# the test's own pod network.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

load_test_image || { fail "test image"; finish; }
HOSTDIR=$WORK/host
mkdir -p "$HOSTDIR"
BASE=$((20000 + RANDOM % 20000))
P_HOSTWEB=$BASE P_TLS=$((BASE + 1)) P_GRPC=$((BASE + 2))
P_ETCD_C=$((BASE + 3)) P_ETCD_P=$((BASE + 4)) P_ETCD_M=$((BASE + 5))
start_agent

put() {
        cat >"$MAN/.$1.tmp"
        mv "$MAN/.$1.tmp" "$MAN/$1"
}
cond() { echo "[c for c in p[\"status\"][\"conditions\"] if c[\"type\"]==\"$1\"][0]"; }
cs() { echo "p[\"status\"][\"containerStatuses\"][$1]"; }
podlog() { grep -F "$1" "$AGENT_LOG" | grep -c -- "$2" || true; }

# --- liveness exec: the file goes, 3 failures at a 2 s period, restart
# (a timeout far above a loaded machine's runc exec: only the missing file
# fails the probe)
put live.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: live}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, "touch /tmp/healthy; sleep 3; rm /tmp/healthy; exec sleep 3600"]
    livenessProbe:
      exec: {command: [cat, /tmp/healthy]}
      periodSeconds: 2
      timeoutSeconds: 10
      failureThreshold: 3
YAML
check_field "liveness pod running" live "$(cs 0)['state'].get('running') is not None" True
check_field "liveness failure restarts the container" live "$(cs 0)['restartCount']" 1 60
# file gone at ~3 s, failures at 4, 6, 8 s (+-2), then kill after <= 2 s
# grace and the back-off; timed by the agent's own start stamps
wait_for "$AGENT_LOG" 'Started container "main" of pod "live-node1' 2 60 || true
dt=$(log_times 'Started container "main" of pod "live-node1' | head -2 |
        python3 -c 'import sys; t = [float(x) for x in sys.stdin]; print(int(t[1] - t[0]) if len(t) == 2 else -1)')
[ "$dt" -ge 5 ] && [ "$dt" -le 40 ] && ok "restart after $dt s (window 5..40)" || fail "restart after $dt s"
n=$(sed -n '/Killing container "main" of pod "live-node1/q;p' "$AGENT_LOG" | grep 'probeType="Liveness" pod="live-node1' | grep -c 'Probe failed' || true)
[ "$n" = 3 ] && ok "killed after exactly failureThreshold (3) failures" || fail "failures before the kill: $n"
grep -q 'Container main failed liveness probe, will be restarted' "$AGENT_LOG" && ok "kill reason logged" || fail "kill reason"
check_field "lastState recorded" live "$(cs 0)['lastState']['terminated']['exitCode'] > 0" True

# --- a hung exec probe counts as a failure at its timeout
put hung.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: hung}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sleep, "3600"]
    readinessProbe:
      exec: {command: [sh, -c, "sleep 101"]}
      timeoutSeconds: 1
      periodSeconds: 2
YAML
expect "hung exec probe times out" "$AGENT_LOG" 'probeType="Readiness" pod="hung-node1.*command "sh -c sleep 101" timed out' 2 30
# At most the probe running now: each timed-out one is killed (left alive,
# one more would pile up every period, each for 101 s).
for ((i = 0; i < 150; i++)); do
        n=$(pgrep -fxc 'sleep 101' || true)
        [ "$n" -le 1 ] && break
        sleep 0.2
done
[ "$n" -le 1 ] && ok "timed-out probe commands are killed ($n running)" || fail "$n 'sleep 101' left"
check_field "hung probe pod not ready" hung "$(cond Ready)['status']" False

# --- readiness both ways; startup gates liveness
put ready.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: ready}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sleep, "3600"]
    readinessProbe:
      exec: {command: [test, -f, /tmp/ready]}
      periodSeconds: 1
  - name: gated
    image: nanolet-test
    imagePullPolicy: Never
    command: [sleep, "3600"]
    startupProbe:
      exec: {command: [test, -f, /tmp/started]}
      periodSeconds: 1
      failureThreshold: 600
    livenessProbe:
      exec: {command: ["false"]}
      periodSeconds: 1
      failureThreshold: 2
YAML
check_field "readiness pod running" ready "p['status']['phase']" Running
expect "readiness probe ran and failed" "$AGENT_LOG" 'Probe failed: probeType="Readiness" pod="ready-node1.*container="main"' 1 30
check_field "not Ready before the probe passes" ready "$(cond Ready)['status']" False
check_field "container not ready" ready "$(cs 0)['ready']" False
nl exec ready -c main -- touch /tmp/ready
check_field "container ready after the file appears" ready "$(cs 0)['ready']" True
nl exec ready -c main -- rm /tmp/ready
check_field "container not ready again" ready "$(cs 0)['ready']" False
check_field "ContainersReady False" ready "$(cond ContainersReady)['status']" False
[ "$(pod_field ready "$(cs 1)['started']")" = False ] && [ "$(pod_field ready "$(cs 1)['restartCount']")" = 0 ] \
        && [ "$(podlog 'pod="ready-node1' 'probeType="Liveness"')" = 0 ] \
        && ok "startup probe holds liveness back" || fail "liveness ran before startup passed"
nl exec ready -c gated -- touch /tmp/started
check_field "started after the startup probe" ready "$(cs 1)['started'] or $(cs 1)['restartCount'] > 0" True
check_field "liveness runs once started (and restarts it)" ready "$(cs 1)['restartCount'] >= 1" True 30
nl exec ready -c main -- touch /tmp/ready
check_field "pod Ready both ways" ready "$(cs 0)['ready']" True

# --- runc writes `exec --pid-file F` through a sibling `.F` made with
# O_EXCL, then renames it: a runc killed in between (a probe's timeout, an
# agent stopped mid-probe) leaves `.F`, on which every later exec with F
# would fail ("file exists") for as long as the container runs. A real
# leftover appears between runs; this one may land while a run is between
# the agent's removal and runc's create, and that run fails on it: one run
# may, the next may not.
uid=$(pod_field ready "p['metadata']['uid']")
attempt_dir=$ROOT/pods/$uid/containers/main/$(pod_field ready "$(cs 0)['restartCount']")
planted_at=$(wc -l <"$AGENT_LOG") planted=0
if [ -d "$attempt_dir" ]; then
        : >"$attempt_dir/.probe-1.pid"
        for ((i = 0; i < WAIT_MIN_S * 10; i++)); do
                [ -e "$attempt_dir/.probe-1.pid" ] || break
                sleep 0.1
        done
        [ ! -e "$attempt_dir/.probe-1.pid" ] && ok "the next readiness probe removed runc's leftover .probe-1.pid" \
                || fail "runc's leftover .probe-1.pid still there"
        check_field "still ready after the leftover" ready "$(cs 0)['ready']" True
        planted=$(tail -n +"$((planted_at + 1))" "$AGENT_LOG" |
                grep -c 'Probe failed: probeType="Readiness" pod="ready-node1_[^"]*" container="main".*file exists' || true)
        [ "$planted" -le 1 ] && ok "the planted leftover failed at most one probe run ($planted)" \
                || fail "the planted leftover failed $planted probe runs"
else
        fail "no attempt directory $attempt_dir"
fi

# --- httpGet on the pod IP: named port, path with query, headers (CGI dumps them)
put web.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: httpd
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, "mkdir -p /www/cgi-bin && printf '#!/bin/sh\\\\nenv > /host/headers\\\\necho Content-Type: text/plain\\\\necho\\\\necho ok\\\\n' > /www/cgi-bin/hdr && chmod +x /www/cgi-bin/hdr && exec httpd -f -p 8080 -h /www"]
    ports: [{name: http, containerPort: 8080}]
    readinessProbe:
      httpGet:
        path: /cgi-bin/hdr?probe=1
        port: http
        httpHeaders: [{name: X-Probe-Token, value: s3cret}]
      periodSeconds: 1
    volumeMounts: [{name: host, mountPath: /host}]
  volumes:
  - name: host
    hostPath: {path: $HOSTDIR, type: Directory}
YAML
check_field "httpGet on the pod IP with a named port: ready" web "$(cs 0)['ready']" True
agent_maps "libcurl loaded for the HTTP probe" yes libcurl
grep -q '^HTTP_X_PROBE_TOKEN=s3cret$' "$HOSTDIR/headers" 2>/dev/null && ok "probe header received by the server" \
        || fail "headers: $(cat "$HOSTDIR/headers" 2>/dev/null)"
grep -q '^QUERY_STRING=probe=1$' "$HOSTDIR/headers" 2>/dev/null && ok "query string passed" || fail "query string"
grep -q '^HTTP_USER_AGENT=kube-probe/' "$HOSTDIR/headers" 2>/dev/null && ok "kube-probe user agent" || fail "user agent"

# --- hostNetwork: httpGet on 127.0.0.1, a 404, HTTPS, gRPC
openssl req -x509 -newkey rsa:2048 -nodes -subj /CN=localhost -days 1 \
        -keyout "$WORK/tls.key" -out "$WORK/tls.crt" >/dev/null 2>&1
timeout 600 openssl s_server -accept "127.0.0.1:$P_TLS" -cert "$WORK/tls.crt" -key "$WORK/tls.key" -www -quiet \
        >/dev/null 2>&1 </dev/null &
PIDS+=($!)
cat >"$WORK/grpc-health.py" <<'PY'
import sys, time, grpc
from concurrent import futures
# Raw protobuf: HealthCheckRequest{service=1}, HealthCheckResponse{status=1}.
def check(req, ctx):
    service = req[2:].decode() if req else ""
    return b"\x08\x01" if service in ("", "ok") else b"\x08\x02"
h = grpc.method_handlers_generic_handler("grpc.health.v1.Health", {
    "Check": grpc.unary_unary_rpc_method_handler(check)})
s = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
s.add_generic_rpc_handlers((h,))
s.add_insecure_port("127.0.0.1:" + sys.argv[1])
s.start()
time.sleep(600)
PY
timeout 600 /usr/bin/python3 "$WORK/grpc-health.py" "$P_GRPC" >"$WORK/grpc.log" 2>&1 &
PIDS+=($!)
put hostnet.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: hostnet}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - name: httpd
    image: nanolet-test
    imagePullPolicy: Never
    command: [httpd, -f, -p, "127.0.0.1:$P_HOSTWEB", -h, /var/www]
    readinessProbe: {httpGet: {path: /index.html, port: $P_HOSTWEB}, periodSeconds: 1}
  - name: missing
    image: nanolet-test
    imagePullPolicy: Never
    command: [sleep, "3600"]
    readinessProbe: {httpGet: {path: /nope, port: $P_HOSTWEB}, periodSeconds: 1}
  - name: tls
    image: nanolet-test
    imagePullPolicy: Never
    command: [sleep, "3600"]
    readinessProbe: {httpGet: {scheme: HTTPS, path: /, port: $P_TLS}, periodSeconds: 1}
  - name: grpc
    image: nanolet-test
    imagePullPolicy: Never
    command: [sleep, "3600"]
    readinessProbe: {grpc: {port: $P_GRPC}, periodSeconds: 1}
  - name: grpcsick
    image: nanolet-test
    imagePullPolicy: Never
    command: [sleep, "3600"]
    readinessProbe: {grpc: {port: $P_GRPC, service: sick}, periodSeconds: 1}
YAML
check_field "hostNetwork httpGet on 127.0.0.1: ready" hostnet "$(cs 0)['ready']" True
check_field "HTTPS without verification: ready" hostnet "$(cs 2)['ready']" True
check_field "gRPC SERVING: ready" hostnet "$(cs 3)['ready']" True
expect "404 fails the probe" "$AGENT_LOG" 'pod="hostnet-node1.*container="missing".*statuscode: 404' 1 20
expect "gRPC NOT_SERVING fails the probe" "$AGENT_LOG" 'pod="hostnet-node1.*container="grpcsick".*NOT_SERVING' 1 20
[ "$(pod_field hostnet "$(cs 1)['ready']")" = False ] && [ "$(pod_field hostnet "$(cs 4)['ready']")" = False ] \
        && ok "failing containers stay unready" || fail "failing containers ready"
check_field "pod with unready containers is not Ready" hostnet "$(cond Ready)['status']" False

# --- postStart seen by the main process; a failing postStart; preStop before SIGTERM, cut at the grace period
put hooks.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: hooks}
spec:
  terminationGracePeriodSeconds: 4
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, "trap 'echo term >> /host/order; exit 0' TERM; while [ ! -f /tmp/ps ]; do sleep 0.1; done; cat /tmp/ps > /host/main-saw; while true; do sleep 0.2; done"]
    lifecycle:
      postStart: {exec: {command: [sh, -c, "while [ ! -f /host/release-poststart ]; do sleep 0.1; done; echo from-poststart > /tmp/ps"]}}
      preStop: {exec: {command: [sh, -c, "echo prestop >> /host/order; sleep 100"]}}
    volumeMounts: [{name: host, mountPath: /host}]
  volumes:
  - name: host
    hostPath: {path: $HOSTDIR, type: Directory}
YAML
# The hook waits for the test to release it, so "still running postStart"
# is a state that holds until the test ends it, not a window to catch.
check_field "not Running while postStart runs" hooks "$(cs 0)['state'].get('waiting', {}).get('reason')" ContainerCreating 20
touch "$HOSTDIR/release-poststart"
check_field "Running after postStart" hooks "$(cs 0)['state'].get('running') is not None" True 20
[ "$(cat "$HOSTDIR/main-saw" 2>/dev/null)" = from-poststart ] && ok "postStart output visible to the main process" \
        || fail "main saw: $(cat "$HOSTDIR/main-saw" 2>/dev/null)"
put badhook.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: badhook}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sleep, "3600"]
    lifecycle:
      postStart: {exec: {command: [sh, -c, "echo no; exit 1"]}}
YAML
check_field "failed postStart kills the container" badhook "$(cs 0)['restartCount'] >= 1" True 40
grep -q 'FailedPostStartHook' "$AGENT_LOG" && ok "FailedPostStartHook logged" || fail "FailedPostStartHook"
rm -f "$MAN/badhook.yaml"
rm -f "$MAN/hooks.yaml"
expect "hooks pod gone" "$AGENT_LOG" 'Pod "hooks-node1_[^"]*" is gone' 1 60
[ "$(tr '\n' ' ' <"$HOSTDIR/order" 2>/dev/null)" = "prestop term " ] && ok "preStop ran before SIGTERM" \
        || fail "order: $(cat "$HOSTDIR/order" 2>/dev/null)"
# how long termination took, from the agent's own stamps: at least the
# grace period (4 s), and far less than the preStop hook's 100 s
dt=$({ log_times 'Terminating pod "hooks-node1'; log_times 'Pod "hooks-node1_[^"]*" is gone'; } |
        python3 -c 'import sys; t = [float(x) for x in sys.stdin]; print(int(t[1] - t[0]) if len(t) == 2 else -1)')
[ "$dt" -ge 3 ] && [ "$dt" -le 60 ] && ok "preStop cut at the grace period ($dt s)" || fail "pod took $dt s to stop"
grep -q 'PreStop hook of container "main" of pod "hooks-node1.*failed' "$AGENT_LOG" && ok "cut preStop logged" || fail "preStop log"

# --- kubeadm-style etcd static pod: startup + liveness httpGet on 127.0.0.1 /health
if command -v etcd >/dev/null; then
        /usr/bin/python3 - "$TEST_DATA_DIR/images/make-images.py" "$WORK/etcd.tar" <<'PY'
import importlib.util, sys, os
spec = importlib.util.spec_from_file_location("mi", sys.argv[1])
mi = importlib.util.module_from_spec(spec); spec.loader.exec_module(mi)
def blob(p): return open(p, "rb").read()
libc = os.path.realpath("/lib/x86_64-linux-gnu/libc.so.6")
ld = os.path.realpath("/lib64/ld-linux-x86-64.so.2")
base = mi.tar_bytes(mi.base_entries("/bin/busybox"))
layer = mi.tar_bytes([("usr", "dir", {}), ("usr/bin", "dir", {}), ("lib", "dir", {}),
                      ("lib/x86_64-linux-gnu", "dir", {}), ("lib64", "dir", {}),
                      ("var", "dir", {}), ("var/lib", "dir", {}), ("var/lib/etcd", "dir", {}),
                      ("usr/bin/etcd", "file", {"data": blob("/usr/bin/etcd"), "mode": 0o755}),
                      ("lib/x86_64-linux-gnu/libc.so.6", "file", {"data": blob(libc), "mode": 0o755}),
                      ("lib64/ld-linux-x86-64.so.2", "file", {"data": blob(ld), "mode": 0o755})])
blobs, desc, _, _ = mi.make_image([base, layer], {"Cmd": ["etcd"]})
mi.write_oci_archive(sys.argv[2], [("localhost/etcd-probe:test", blobs, desc)])
PY
        "$NANOLET" image --root-dir "$ROOT" load "$WORK/etcd.tar" >/dev/null && ok "etcd image built from the host's etcd" || fail "etcd image"
        mkdir -p "$WORK/etcd-data"
        put etcd.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: etcd, namespace: kube-system, labels: {component: etcd, tier: control-plane}}
spec:
  hostNetwork: true
  priorityClassName: system-node-critical
  terminationGracePeriodSeconds: 3
  containers:
  - name: etcd
    image: localhost/etcd-probe:test
    imagePullPolicy: Never
    command:
    - etcd
    - --name=n1
    - --data-dir=/var/lib/etcd
    - --listen-client-urls=http://127.0.0.1:$P_ETCD_C
    - --advertise-client-urls=http://127.0.0.1:$P_ETCD_C
    - --listen-peer-urls=http://127.0.0.1:$P_ETCD_P
    - --initial-advertise-peer-urls=http://127.0.0.1:$P_ETCD_P
    - --initial-cluster=n1=http://127.0.0.1:$P_ETCD_P
    - --listen-metrics-urls=http://127.0.0.1:$P_ETCD_M
    livenessProbe:
      failureThreshold: 3
      httpGet: {host: 127.0.0.1, path: /health, port: $P_ETCD_M, scheme: HTTP}
      initialDelaySeconds: 2
      periodSeconds: 2
      timeoutSeconds: 5
    startupProbe:
      failureThreshold: 120
      httpGet: {host: 127.0.0.1, path: /health, port: $P_ETCD_M, scheme: HTTP}
      initialDelaySeconds: 1
      periodSeconds: 1
      timeoutSeconds: 5
    volumeMounts: [{name: etcd-data, mountPath: /var/lib/etcd}]
  volumes:
  - name: etcd-data
    hostPath: {path: $WORK/etcd-data, type: DirectoryOrCreate}
YAML
        check_field "etcd becomes Ready" etcd "$(cond Ready)['status']" True 150
        check_field "etcd started (startup probe passed)" etcd "$(cs 0)['started']" True
        sleep 8
        [ "$(pod_field etcd "$(cond Ready)['status']")" = True ] && [ "$(pod_field etcd "$(cs 0)['restartCount']")" = 0 ] \
                && ok "etcd stays Ready with liveness probing" || fail "etcd not steady: $(pod_json etcd)"
        cid=$(pod_field etcd "$(cs 0)['containerID'].split('://')[1]")
        epid=$(runc --root "$RUN/runc" state "$cid" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
        kill -STOP "$epid" && ok "etcd (pid $epid) stopped from the host" || fail "cannot stop etcd"
        check_field "unresponsive etcd restarted by liveness" etcd "$(cs 0)['restartCount']" 1 120
        check_field "etcd Ready again" etcd "$(cond Ready)['status']" True 60
else
        echo "SKIP: etcd not installed (apt-get install etcd-server)"
fi

# --- counters and teardown
rm -f "$MAN"/*.yaml
for ((i = 0; i < 250; i++)); do [ -z "$(ls "$RUN/status" 2>/dev/null | grep -vx sources.json | grep json)" ] && break; sleep 0.2; done
check_no_leftovers
[ ! -e "$WORK"/root/pods ] || [ -z "$(find "$WORK/root/pods" -name '*.pid')" ] && ok "no probe pid files left" || fail "pid files left"
# Timed-out runs (the hung pod) kill runc at any point: none of their
# leftovers may fail a later run. Only the planted one was allowed one.
n=$(($(grep -c 'Probe failed.*file exists' "$AGENT_LOG" || true) - planted))
[ "$n" = 0 ] && ok "no probe failed on a leftover pid file the agent's own runs left" \
        || fail "$n probe run(s) failed on a leftover pid file"
stop_agent
finish
