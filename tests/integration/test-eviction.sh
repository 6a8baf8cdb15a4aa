#!/usr/bin/env bash
# Node-pressure eviction (docs/eviction.md) with --root-dir on a 64 MiB tmpfs:
# - filling it past nodefs.available<10% makes DiskPressure True in
#   <run-dir>/node-conditions.json (`nanolet node`) with kubelet's message, and
#   False again once the space is freed and the transition period is over;
# - by default (kubelet's rule: a static pod is never evicted) a BestEffort
#   pod filling an emptyDir past the threshold, and pods over their
#   emptyDir sizeLimit or ephemeral-storage limit, keep running: the agent
#   asks image GC to reclaim, logs that no pod is evicted, and evicts none
#   while minutes of evaluation pass (the status file's periodic rewrite is
#   the record that they did); removing the pod ends the pressure;
# - with evictStaticPods: true (the config file): the BestEffort filler is
#   evicted (phase Failed, reason Evicted, kubelet's message, an Evicted
#   event, counted in kubelet_evictions_total), a system-node-critical pod
#   beside it keeps running, and the evicted pod starts again once the
#   pressure is gone (its emptyDir went with the eviction); an emptyDir over
#   its sizeLimit, and a container over its ephemeral-storage limit, are
#   evicted with kubelet's messages.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

mount -t tmpfs -o size=64M nanolet-test-ev "$ROOT" || { fail "mount tmpfs"; finish; }
load_test_image || fail "load the test image"
PORT=$((20000 + RANDOM % 20000))
cond() {
        python3 -c 'import json,sys
j = json.load(open(sys.argv[1]))
print([c["status"] + ":" + c["message"] for c in j["conditions"] if c["type"] == sys.argv[2]][0])' \
                "$RUN/node-conditions.json" "$1" 2>/dev/null
}
wait_cond() {
        local i
        for ((i = 0; i < ${3:-30} * 5; i++)); do
                cond "$1" | grep -qE -- "$2" && return 0
                sleep 0.2
        done
        echo "--- $1: $(cond "$1")" >&2
        return 1
}
start_agent --eviction-hard 'nodefs.available<10%,memory.available<1Ki' \
        --eviction-pressure-transition-period 2s --read-only-port "$PORT" --pinned-images nanolet-test
wait_cond DiskPressure '^False' && ok "DiskPressure False on an empty root" || fail "no DiskPressure False"
cond MemoryPressure | grep -q '^False' && ok "MemoryPressure False" || fail "MemoryPressure: $(cond MemoryPressure)"
nl node >"$WORK/node" 2>&1 && grep -qE '^DiskPressure +False' "$WORK/node" && grep -qE '^nodefs.available ' "$WORK/node" &&
        ok "nanolet node lists the conditions and signals" || fail "nanolet node: $(cat "$WORK/node")"
# Leave about 5 % free.
avail=$(df -B1 --output=avail "$ROOT" | tail -1)
fallocate -l $((avail - 3 * 1024 * 1024)) "$ROOT/filler" || fail "fill"
wait_cond DiskPressure '^True:The node was low on resource: ephemeral-storage\. Threshold quantity: [0-9]+[KMi]*, available: [0-9]+[KMi]*\. $' &&
        ok "DiskPressure True with kubelet's message" || fail "DiskPressure not True"
expect "the pressure is logged" "$AGENT_LOG" 'Node condition DiskPressure is now True' 1 5
expect "image GC asked to reclaim" "$AGENT_LOG" 'Image GC: removing every unused image' 1 5
rm -f "$ROOT/filler"
wait_cond DiskPressure '^False' 20 && ok "DiskPressure False again after the space is freed" || fail "DiskPressure stays"
expect "the relief is logged" "$AGENT_LOG" 'Node condition DiskPressure is now False' 1 5

# --- by default no pod is evicted: node-level reclaim only
put_manifest critical.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: critical, namespace: kube-system}
spec:
  priorityClassName: system-node-critical
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
YAML
limited_pods() {
        put_manifest limited.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: limited}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: scratch, emptyDir: {sizeLimit: 1Mi}}
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, "dd if=/dev/zero of=/scratch/big bs=1M count=3; exec sleep 3600"]
    volumeMounts: [{name: scratch, mountPath: /scratch}]
YAML
        put_manifest greedy.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: greedy}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    resources: {limits: {ephemeral-storage: 1Mi}}
    command: [sh, -c, "dd if=/dev/zero of=/big bs=1M count=3; exec sleep 3600"]
YAML
}
limited_pods
expect "a pod over its emptyDir sizeLimit is named, not evicted" "$AGENT_LOG" \
        'Pod "limited-node1" is over a local storage limit and is not evicted .*Usage of EmptyDir volume "scratch" exceeds the limit "1Mi"' 1 90
expect "a pod over its ephemeral-storage limit is named, not evicted" "$AGENT_LOG" \
        'Pod "greedy-node1" is over a local storage limit and is not evicted .*Container main exceeded its local ephemeral storage limit' 1 90
# The hog leaves 3 MiB of the tmpfs free (below 10 %), whatever the others use.
put_manifest hog.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: hog}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: data, emptyDir: {}}
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, "set -- \$(df -Pk /data | tail -1); dd if=/dev/zero of=/data/fill bs=1K count=\$((\$4 - 3072)); exec sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}]
YAML
wait_cond DiskPressure '^True:The node was low on resource: ephemeral-storage\.' 90 &&
        ok "the hog makes DiskPressure True" || fail "DiskPressure not True with the hog"
expect "image GC asked to reclaim in this episode too" "$AGENT_LOG" 'Image GC: removing every unused image' 2 30
# (the first of the two lines came with the filler file above)
expect "the agent says no pod is evicted, after reclaiming" "$AGENT_LOG" \
        'Eviction threshold nodefs.available met: no pod is evicted \(static pods are not evicted; --evict-static-pods evicts them\); image GC was asked to remove every unused image' 2 30
# The status file is rewritten every minute while nothing changes: once it
# has been, several evaluation periods (10 s) went by under pressure.
t0=$(stat -c %Y "$RUN/node-conditions.json")
for ((i = 0; i < 100 * 5; i++)); do
        [ "$(stat -c %Y "$RUN/node-conditions.json")" -gt "$t0" ] && break
        sleep 0.2
done
[ "$(stat -c %Y "$RUN/node-conditions.json")" -gt "$t0" ] && ok "the status file was rewritten under pressure" ||
        fail "no rewrite of node-conditions.json"
cond DiskPressure | grep -q '^True' && ok "still under pressure" || fail "the pressure went: $(cond DiskPressure)"
for p in hog limited greedy critical; do
        check_field "$p runs on, never restarted" $p \
                'p["status"]["phase"] + "/" + str(p["status"].get("reason")) + "/" + str(p["status"]["containerStatuses"][0]["restartCount"])' Running/None/0 5
done
n=$(count_lines "$AGENT_LOG" 'Evicting pod|Evicted pod')
[ "$n" -eq 0 ] && ok "no eviction in the log" || fail "$n eviction lines"
python3 -c 'import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))["evicted"] == 0 else 1)' \
        "$RUN/node-conditions.json" && ok "node-conditions.json: evicted 0" || fail "evicted: $(cat "$RUN/node-conditions.json")"
curl -s "http://127.0.0.1:$PORT/metrics" >"$WORK/metrics" || fail "GET /metrics"
grep -qE '^kubelet_evictions_total\{.*\} [1-9]' "$WORK/metrics" && fail "evictions counted: $(grep evictions "$WORK/metrics")" ||
        ok "kubelet_evictions_total counts none"
n=$(count_lines "$AGENT_LOG" 'Eviction threshold nodefs.available met: no pod is evicted')
[ "$n" -eq 2 ] && ok "said once per episode (the filler file's and the hog's)" || fail "said $n times"
for f in hog limited greedy; do rm -f "$MAN/$f.yaml"; done
expect "the hog and the limited pods removed" "$AGENT_LOG" 'Pod "(hog|limited|greedy)-node1_default\([0-9a-f]+\)" is gone' 3 60
wait_cond DiskPressure '^False' 60 && ok "DiskPressure False once the hog is gone" || fail "DiskPressure stays"
stop_agent

# --- with evictStaticPods (the config file's key): evicted, then started again
cat >"$WORK/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
evictStaticPods: true
YAML
start_agent --config "$WORK/kubelet.yaml" --eviction-hard 'nodefs.available<10%,memory.available<1Ki' \
        --eviction-pressure-transition-period 2s --read-only-port "$PORT" --pinned-images nanolet-test

# --- a BestEffort pod filling an emptyDir is evicted; the critical one stays
mkdir -p "$WORK/flag"
# It fills its emptyDir on its first run only (the flag is on the host).
put_manifest filler.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: filler}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: data, emptyDir: {}}
  - {name: flag, hostPath: {path: $WORK/flag}}
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, "if [ ! -e /flag/filled ]; then touch /flag/filled; dd if=/dev/zero of=/data/fill bs=1M count=60 || true; fi; exec sleep 3600"]
    volumeMounts: [{name: data, mountPath: /data}, {name: flag, mountPath: /flag}]
YAML
check_field "critical pod Running" critical 'p["status"]["phase"]' Running
check_field "filler evicted: Failed/Evicted" filler 'p["status"]["phase"] + "/" + p["status"].get("reason", "")' Failed/Evicted 90
msg=$(pod_field filler 'p["status"].get("message", "")')
echo "$msg" | grep -qE '^The node was low on resource: ephemeral-storage\. Threshold quantity: [0-9]+[KMGi]*, available: [0-9]+[KMGi]*\. $' &&
        ok "eviction message as kubelet's: $msg" || fail "eviction message: '$msg'"
uid=$(pod_field filler 'p["metadata"]["uid"]')
python3 - "$RUN/status/events/$uid.json" <<'PY' && ok "an Evicted event (Warning)" || fail "no Evicted event: $(cat "$RUN/status/events/$uid.json" 2>/dev/null)"
import json, sys
items = json.load(open(sys.argv[1]))["items"]
sys.exit(0 if any(e["reason"] == "Evicted" and e["type"] == "Warning" and
                  "low on resource: ephemeral-storage" in e["message"] for e in items) else 1)
PY
grep -q 'Evicting pod "filler-node1_default' "$AGENT_LOG" && ok "the eviction is logged" || fail "no eviction log line"
curl -s "http://127.0.0.1:$PORT/metrics" >"$WORK/metrics" || fail "GET /metrics"
grep -qE '^kubelet_evictions_total\{eviction_signal="nodefs.available"\} 1$' "$WORK/metrics" &&
        ok "kubelet_evictions_total counts it" || fail "metric: $(grep evictions "$WORK/metrics")"
out=$(promtool check metrics <"$WORK/metrics" 2>&1) && ok "promtool check metrics clean" || fail "promtool: $out"
check_field "the critical pod still runs, not restarted" critical \
        'p["status"]["phase"] + "/" + str(p["status"]["containerStatuses"][0]["restartCount"])' Running/0
# The eviction removed the emptyDir: the pressure goes, and the pod comes back.
wait_cond DiskPressure '^False' 60 && ok "DiskPressure False once the evicted pod's emptyDir is gone" || fail "DiskPressure stays"
check_field "the evicted pod starts again" filler \
        'p["status"]["phase"] + "/" + str(p["status"].get("reason")) + "/" + str(p["status"]["containerStatuses"][0]["state"].get("running") is not None)' Running/None/True 90
grep -q 'may start again' "$AGENT_LOG" && ok "the restart is logged" || fail "no restart log line"
check_field "the critical pod was never touched" critical \
        'p["status"]["phase"] + "/" + str(p["status"]["containerStatuses"][0]["restartCount"])' Running/0

# --- emptyDir.sizeLimit and ephemeral-storage limits
limited_pods
check_field "emptyDir over its sizeLimit evicted" limited \
        'p["status"]["phase"] + "/" + p["status"].get("reason", "") + "/" + p["status"].get("message", "")' \
        'Failed/Evicted/Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ' 90
check_field "container over its ephemeral-storage limit evicted" greedy \
        'p["status"]["phase"] + "/" + p["status"].get("reason", "") + "/" + p["status"].get("message", "")' \
        'Failed/Evicted/Container main exceeded its local ephemeral storage limit "1Mi". ' 90
check_field "the critical pod still runs" critical 'p["status"]["phase"]' Running
for f in critical filler limited greedy; do rm -f "$MAN/$f.yaml"; done
# limited and greedy went once already, in the first part
expect "pods removed" "$AGENT_LOG" 'Pod "(critical|filler|limited|greedy)-node1_[a-z-]+\([0-9a-f]+\)" is gone' 6 60
stop_agent
finish
