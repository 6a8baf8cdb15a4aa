#!/usr/bin/env bash
# Memory and PID pressure eviction (docs/eviction.md) with the real agent, runc and
# conmon, thresholds set relative to what the machine has when the test runs
# (it is shared: others' use may move by a GiB or a few hundred tasks, so
# each threshold sits in the middle of what the test's own pod adds), with
# --evict-static-pods (by default no pod is evicted: test-eviction.sh):
# - hard memory.available: a BestEffort pod filling a memory-backed emptyDir
#   in 256 MiB steps up to 3 GiB, with the threshold 1.5 GiB below the
#   available memory at the start, is evicted (Failed/Evicted, kubelet's
#   message naming memory); a Guaranteed pod beside it keeps running;
# - soft memory.available with a 15 s grace period: the eviction comes at
#   least the grace period after the agent logged the threshold as met (the
#   agent's own log stamps, not the test's sleeps);
# - hard pid.available 500 below what is free at the start: a pod starting
#   1000 sleeps (bounded by --pod-pids-limit 2000) is evicted with kubelet's
#   pids message (PIDPressure), a quiet pod beside it keeps running.
# The pods have their own --cgroup-root; the memory goes with the emptyDir's
# tmpfs when the evicted pod's volumes are released (or the cleanup's
# unmounts), the sleeps with the container.
. "$(dirname "$0")/lib.sh"
require_root
TEST_CGROUP_ROOT=/nanolet-test-$$-$RANDOM
. "$(dirname "$0")/lib-agent.sh"

load_test_image || { fail "test image"; finish; }

GI=1073741824
# bytes, by the shell: awk would print a float
mem_available() { echo $(($(awk '/^MemAvailable:/ {print $2}' /proc/meminfo) * 1024)); }

# hog NAME: fills /mem (tmpfs, 4Gi) in 256 MiB steps to 3 GiB, then holds.
hog_pod() {
        cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: mem, emptyDir: {medium: Memory, sizeLimit: 4Gi}}
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, 'i=0; while [ \$i -lt 12 ]; do dd if=/dev/zero of=/mem/f\$i bs=1M count=256 2>/dev/null; i=\$((i+1)); sleep 0.5; done; echo full; exec sleep 3600']
    volumeMounts: [{name: mem, mountPath: /mem}]
YAML
}

guaranteed_pod() {
        cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sleep, "3600"]
    resources: {limits: {cpu: 100m, memory: 64Mi}}
YAML
}

gone() { # NAME...: wait until each pod is gone
        local p
        for p in "$@"; do
                wait_for "$AGENT_LOG" "Pod \"$p-node1_default.*\" is gone" 1 60 || fail "$p not gone"
        done
}

MEMRE='^The node was low on resource: memory\. Threshold quantity: [0-9]+[KMGi]*, available: [0-9]+[KMGi]*\. $'

# ---- hard memory.available ----
M0=$(mem_available)
HARD=$((M0 - 3 * GI / 2))
echo "MemAvailable $M0, hard threshold memory.available<$HARD"
guaranteed_pod steady | put_manifest steady.yaml
start_agent --cgroup-root "$TEST_CGROUP_ROOT" --evict-static-pods --eviction-hard "memory.available<$HARD" \
        --eviction-pressure-transition-period 2s
check_field "Guaranteed pod Running" steady 'p["status"]["phase"]' Running 60
hog_pod hog | put_manifest hog.yaml
check_field "BestEffort hog evicted: Failed/Evicted" hog \
        'p["status"]["phase"] + "/" + p["status"].get("reason", "")' Failed/Evicted 120
msg=$(pod_field hog 'p["status"].get("message", "")')
echo "$msg" | grep -qE "$MEMRE" && ok "eviction message names memory: $msg" || fail "eviction message: '$msg'"
grep -q 'Node condition MemoryPressure is now True' "$AGENT_LOG" && ok "MemoryPressure was True" ||
        fail "no MemoryPressure in the log"
grep -qE 'Evicted pod "hog-node1" \(priority 0, memory usage [0-9]+, requests 0\) for memory.available' "$AGENT_LOG" &&
        ok "ranked by memory usage over requests" || fail "no eviction line for hog"
check_field "the Guaranteed pod still runs, never restarted" steady \
        'p["status"]["phase"] + "/" + str(p["status"]["containerStatuses"][0]["restartCount"])' Running/0
n=$(grep -c 'Evicting pod' "$AGENT_LOG" || true)
[ "$n" -eq 1 ] && ok "one pod evicted" || fail "$n pods evicted"
rm -f "$MAN"/*.yaml
gone steady hog
stop_agent

# ---- soft memory.available with a grace period ----
# what the first phase used must be back before the new baseline
for i in $(seq 1 100); do [ "$(mem_available)" -gt $((M0 - GI / 2)) ] && break; sleep 0.2; done
M1=$(mem_available)
SOFT=$((M1 - 3 * GI / 2))
GRACE=15
echo "MemAvailable $M1, soft threshold memory.available<$SOFT, grace ${GRACE}s"
hog_pod softhog | put_manifest softhog.yaml
start_agent --cgroup-root "$TEST_CGROUP_ROOT" --evict-static-pods --eviction-hard 'memory.available<1Ki' \
        --eviction-soft "memory.available<$SOFT" --eviction-soft-grace-period "memory.available=${GRACE}s" \
        --eviction-pressure-transition-period 2s
check_field "soft: the hog evicted: Failed/Evicted" softhog \
        'p["status"]["phase"] + "/" + p["status"].get("reason", "")' Failed/Evicted 120
msg=$(pod_field softhog 'p["status"].get("message", "")')
echo "$msg" | grep -qE "$MEMRE" && ok "soft: message names memory" || fail "soft: eviction message: '$msg'"
t_met=$(log_times 'Soft eviction threshold memory\.available<[0-9]+ met' | tail -1)
t_evict=$(log_times 'Evicting pod "softhog-node1' | head -1)
if [ -n "$t_met" ] && [ -n "$t_evict" ]; then
        d=$(python3 -c "print(round($t_evict - $t_met, 1))")
        python3 -c "import sys; sys.exit(0 if $t_evict - $t_met >= $GRACE else 1)" &&
                ok "soft: evicted ${d}s after the threshold was met (grace ${GRACE}s)" ||
                fail "soft: evicted ${d}s after the threshold was met, before the grace period"
else
        fail "soft: no record of the threshold met ($t_met) or the eviction ($t_evict)"
fi
rm -f "$MAN"/*.yaml
gone softhog
stop_agent

# ---- hard pid.available ----
LIMIT=$(cat /proc/sys/kernel/pid_max)
TMAX=$(cat /proc/sys/kernel/threads-max)
[ "$TMAX" -lt "$LIMIT" ] && LIMIT=$TMAX
TASKS=$(awk '{split($4, a, "/"); print a[2]}' /proc/loadavg)
PIDT=$((LIMIT - TASKS - 500))
echo "tasks $TASKS of $LIMIT, hard threshold pid.available<$PIDT"
sleep_pod quiet 1 | put_manifest quiet.yaml
cat <<'YAML' | put_manifest forker.yaml
apiVersion: v1
kind: Pod
metadata: {name: forker}
spec:
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, 'i=0; while [ $i -lt 1000 ]; do sleep 3600 & i=$((i+1)); done; echo forked; wait']
YAML
start_agent --cgroup-root "$TEST_CGROUP_ROOT" --evict-static-pods --eviction-hard "pid.available<$PIDT" --pod-pids-limit 2000
check_field "quiet pod Running" quiet 'p["status"]["phase"]' Running 60
check_field "the forker evicted: Failed/Evicted" forker \
        'p["status"]["phase"] + "/" + p["status"].get("reason", "")' Failed/Evicted 120
msg=$(pod_field forker 'p["status"].get("message", "")')
echo "$msg" | grep -qE '^The node was low on resource: pids\. Threshold quantity: [0-9]+k?, available: [0-9]+k?\. $' &&
        ok "eviction message names pids: $msg" || fail "pids eviction message: '$msg'"
grep -q 'Node condition PIDPressure is now True' "$AGENT_LOG" && ok "PIDPressure was True" || fail "no PIDPressure"
grep -qE 'Evicted pod "forker-node1" \(priority 0, pids usage [0-9]{3,}, requests 0\)' "$AGENT_LOG" &&
        ok "ranked by process count" || fail "no pids eviction line for the forker"
check_field "the quiet pod still runs, never restarted" quiet \
        'p["status"]["phase"] + "/" + str(p["status"]["containerStatuses"][0]["restartCount"])' Running/0
rm -f "$MAN"/*.yaml
gone quiet forker
check_no_leftovers
stop_agent
finish
