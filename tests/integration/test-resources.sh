#!/usr/bin/env bash
# Pod cgroups, QoS, OOM and maxPods with the real agent, runc and conmon
# (cgroup v1 here; v2 is covered by unit tests on fixture trees).
#  - Guaranteed, Burstable and BestEffort pods: the container process sits in
#    <cgroup-root>/kubepods[/burstable|/besteffort]/pod<uid>/<id>; the pod
#    cgroup holds the pod's memory limit, CFS quota, cpu shares and the
#    --pod-pids-limit; the container's oom_score_adj is kubelet's value, or
#    the agent's own when lower values need CAP_SYS_RESOURCE (one warning).
#  - A container over its 32Mi limit ends OOMKilled with exit code 137:
#    restartPolicy Never in state.terminated, Always in lastState.
#  - --max-pods 2 with three pods: the third waits with OutOfpods and
#    kubelet's message, and starts once another pod is removed.
#  - The QoS levels: besteffort 2 cpu shares, burstable the burstable pods'
#    cpu requests (back to 2 once they are gone), kubepods the allocatable.
#  - Pod cgroups are gone with their pods.
. "$(dirname "$0")/lib.sh"
require_root
# A --cgroup-root of this test alone: its tree goes whole in the cleanup.
TEST_CGROUP_ROOT=/nanolet-test-$$-$RANDOM
. "$(dirname "$0")/lib-agent.sh"

load_test_image || { fail "test image"; finish; }

[ -f /sys/fs/cgroup/cgroup.controllers ] && { echo "cgroup v2 host: this test reads v1 files"; exit 77; }

pod_with() { # NAME RESTART RESOURCES-YAML COMMAND
        cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: $2
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, '$4']
    resources: $3
YAML
}

pod_with gua Always '{limits: {cpu: 200m, memory: 64Mi}}' 'sleep 3600' | put_manifest gua.yaml
pod_with bur Always '{requests: {cpu: 100m, memory: 32Mi}, limits: {cpu: 500m, memory: 128Mi}}' \
        'sleep 3600' | put_manifest bur.yaml
pod_with be Always '{}' 'sleep 3600' | put_manifest be.yaml
# a shell variable of 100 MB, far over the 32Mi limit
HOG='x=$(head -c 100000000 /dev/zero | tr "\0" a); echo survived; sleep 1'
pod_with oomnever Never '{limits: {memory: 32Mi}}' "$HOG" | put_manifest oomnever.yaml
pod_with oomalways Always '{limits: {memory: 32Mi}}' "$HOG" | put_manifest oomalways.yaml

start_agent --cgroup-root "$TEST_CGROUP_ROOT" --pod-pids-limit 100 \
        --system-reserved cpu=500m,memory=1Gi --kube-reserved memory=256Mi -v 2

for p in gua bur be; do
        check_field "$p runs" "$p" 'p["status"]["phase"]' Running
done
check_field "qosClass Guaranteed" gua 'p["status"].get("qosClass")' Guaranteed
check_field "qosClass Burstable" bur 'p["status"].get("qosClass")' Burstable
check_field "qosClass BestEffort" be 'p["status"].get("qosClass")' BestEffort

cpid() { # NAME: the main container's pid
        local cid
        cid=$(pod_field "$1" 'p["status"]["containerStatuses"][0]["containerID"].split("://")[1]')
        runc --root "$RUN/runc" state "$cid" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])'
}

FLOOR=$(cat /proc/self/oom_score_adj)
CAPRES=$(($(awk '/^CapEff/ {print "0x"$2}' /proc/self/status) >> 24 & 1))
MEMCAP=$(($(awk '/^MemTotal/ {print $2}' /proc/meminfo) * 1024))
# kubelet: 1000 - 1000*request/capacity, clamped to 3..999
BUR_ADJ=$((1000 - 1000 * 33554432 / MEMCAP))
[ "$BUR_ADJ" -lt 3 ] && BUR_ADJ=3
[ "$BUR_ADJ" -gt 999 ] && BUR_ADJ=999
GUA_ADJ=-997
[ "$CAPRES" -eq 0 ] && [ "$FLOOR" -gt -997 ] && GUA_ADJ=$FLOOR

# check_pod NAME LEVEL MEMLIMIT SHARES QUOTA ADJ
check_pod() {
        local name=$1 level=$2 uid pid cg dir v
        uid=$(pod_field "$name" 'p["metadata"]["uid"]')
        pid=$(cpid "$name")
        cg=$(awk -F: '$2 == "memory" {print $3}' "/proc/$pid/cgroup")
        case "$cg" in
        "$TEST_CGROUP_ROOT/kubepods$level/pod$uid/"*) ok "$name: container in $TEST_CGROUP_ROOT/kubepods$level/pod<uid>/<id>" ;;
        *) fail "$name: container memory cgroup is $cg, want $TEST_CGROUP_ROOT/kubepods$level/pod$uid/..." ;;
        esac
        dir=$TEST_CGROUP_ROOT/kubepods$level/pod$uid
        v=$(cat "/sys/fs/cgroup/memory$dir/memory.limit_in_bytes")
        [ "$v" = "$3" ] && ok "$name: pod memory.limit_in_bytes $v" || fail "$name: pod memory.limit_in_bytes $v, want $3"
        v=$(cat "/sys/fs/cgroup/pids$dir/pids.max")
        [ "$v" = 100 ] && ok "$name: pod pids.max 100 (--pod-pids-limit)" || fail "$name: pod pids.max $v, want 100"
        v=$(cat "/sys/fs/cgroup/cpu$dir/cpu.shares")
        [ "$v" = "$4" ] && ok "$name: pod cpu.shares $v" || fail "$name: pod cpu.shares $v, want $4"
        v=$(cat "/sys/fs/cgroup/cpu$dir/cpu.cfs_quota_us")
        [ "$v" = "$5" ] && ok "$name: pod cpu.cfs_quota_us $v" || fail "$name: pod cpu.cfs_quota_us $v, want $5"
        # the pids limit is the pod's, not each container's
        v=$(cat "/sys/fs/cgroup/pids${cg}/pids.max")
        [ "$v" = max ] && ok "$name: no per-container pids limit" || fail "$name: container pids.max $v"
        v=$(cat "/proc/$pid/oom_score_adj")
        [ "$v" = "$6" ] && ok "$name: oom_score_adj $v" || fail "$name: oom_score_adj $v, want $6"
}
UNLIMITED=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes)
check_pod gua "" 67108864 204 20000 "$GUA_ADJ"
check_pod bur /burstable 134217728 102 50000 "$BUR_ADJ"
check_pod be /besteffort "$UNLIMITED" 2 -1 1000
v=$(cat "/sys/fs/cgroup/cpu$TEST_CGROUP_ROOT/kubepods/besteffort/cpu.shares")
[ "$v" = 2 ] && ok "besteffort level cpu.shares 2" || fail "besteffort level cpu.shares $v"
# kubelet's QoS manager: burstable gets the burstable pods' cpu requests
# (bur 100m; the OOM pods request memory only) -> 100 * 1024 / 1000 = 102
BU_SHARES=/sys/fs/cgroup/cpu$TEST_CGROUP_ROOT/kubepods/burstable/cpu.shares
v=$(cat "$BU_SHARES")
[ "$v" = 102 ] && ok "burstable level cpu.shares 102 (the burstable pods' 100m)" || fail "burstable level cpu.shares $v, want 102"

n=$(grep -c 'Cannot lower oom_score_adj' "$AGENT_LOG" || true)
if [ "$GUA_ADJ" = -997 ]; then
        [ "$n" -eq 0 ] && ok "no oom_score_adj warning with CAP_SYS_RESOURCE" || fail "$n warnings"
else
        [ "$n" -eq 1 ] && ok "oom_score_adj degraded to $GUA_ADJ with one warning" || fail "$n oom_score_adj warnings, want 1"
fi

check_field "Never: OOMKilled" oomnever \
        'p["status"]["containerStatuses"][0]["state"]["terminated"]["reason"]' OOMKilled 60
check_field "Never: exit code 137" oomnever \
        'p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"]' 137
check_field "Never: pod Failed" oomnever 'p["status"]["phase"]' Failed
check_field "Always: lastState OOMKilled" oomalways \
        'p["status"]["containerStatuses"][0]["lastState"]["terminated"]["reason"]' OOMKilled 60
check_field "Always: lastState exit code 137" oomalways \
        'p["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"]' 137

# allocatable = capacity - reserved: in `nanolet node` and as kubepods' limits
ALLOC_MEM=$((MEMCAP - 1073741824 - 268435456))
ALLOC_CPU=$(($(getconf _NPROCESSORS_ONLN) * 1000 - 500))
v=$(nl node -o json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["allocatable"]["memory"], d["allocatable"]["cpu"], d["capacity"]["memory"])')
[ "$v" = "$ALLOC_MEM ${ALLOC_CPU}m $MEMCAP" ] && ok "nanolet node: allocatable $v" || fail "nanolet node: '$v', want '$ALLOC_MEM ${ALLOC_CPU}m $MEMCAP'"
nl node | grep -q '^Allocatable:' && ok "nanolet node prints Allocatable" || fail "nanolet node: $(nl node 2>&1)"
v=$(cat "/sys/fs/cgroup/memory$TEST_CGROUP_ROOT/kubepods/memory.limit_in_bytes")
[ "$v" = "$ALLOC_MEM" ] && ok "kubepods memory.limit_in_bytes = allocatable" || fail "kubepods memory limit $v, want $ALLOC_MEM"
v=$(cat "/sys/fs/cgroup/cpu$TEST_CGROUP_ROOT/kubepods/cpu.shares")
want=$((ALLOC_CPU * 1024 / 1000))
[ "$want" -gt 262144 ] && want=262144
[ "$v" = "$want" ] && ok "kubepods cpu.shares from allocatable ($v)" || fail "kubepods cpu.shares $v, want $want"

# the pods go, their cgroups with them
CGS=$(agent_pod_cgroups | wc -l)
[ "$CGS" -ge 5 ] && ok "pod cgroups exist ($CGS)" || fail "pod cgroups: $CGS"
rm -f "$MAN"/*.yaml
for p in gua bur be oomnever oomalways; do
        wait_for "$AGENT_LOG" "Pod \"$p-node1_default.*\" is gone" 1 30 || fail "$p not gone"
done
check_no_leftovers
v=$(cat "$BU_SHARES")
[ "$v" = 2 ] && ok "burstable level back to 2 shares once its pods are gone" || fail "burstable level cpu.shares $v after the pods went, want 2"
stop_agent

# ---- maxPods ----
for p in a b c; do sleep_pod "max$p" 1 | put_manifest "max$p.yaml"; done
start_agent --cgroup-root "$TEST_CGROUP_ROOT" --max-pods 2

running_count() {
        local n=0 p
        for p in maxa maxb maxc; do
                [ "$(pod_field "$p" 'p["status"]["phase"]')" = Running ] && n=$((n + 1))
        done
        echo $n
}
waiting=
for i in $(seq 1 150); do
        for p in maxa maxb maxc; do
                [ "$(pod_field "$p" 'p["status"].get("reason")')" = OutOfpods ] && waiting=$p
        done
        [ -n "$waiting" ] && [ "$(running_count)" = 2 ] && break
        sleep 0.2
done
[ -n "$waiting" ] && ok "one pod waits with reason OutOfpods ($waiting)" || fail "no pod waits with OutOfpods"
[ "$(running_count)" = 2 ] && ok "two pods run (--max-pods 2)" || fail "$(running_count) pods run"
if [ -n "$waiting" ]; then
        check_field "OutOfpods message" "$waiting" 'p["status"].get("message")' \
                "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"
        check_field "the waiting pod is Pending" "$waiting" 'p["status"]["phase"]' Pending
        WORKER_STATE='p["metadata"]["annotations"].get("nanolet.io/worker-state")'
        check_field "the waiting pod's worker state" "$waiting" "$WORKER_STATE" admitting
        check_field "its container waits with OutOfpods" "$waiting" \
                'p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]' OutOfpods
        sleep 2
        [ "$(pod_field "$waiting" 'p["status"]["phase"]')" = Pending ] && ok "still waiting 2 s later" || fail "the third pod started"
        n=$(nl events "$waiting" 2>/dev/null | grep -c OutOfpods || true)
        [ "$n" -ge 1 ] && ok "OutOfpods event" || fail "no OutOfpods event: $(nl events "$waiting" 2>&1)"
        other=maxa
        [ "$waiting" = maxa ] && other=maxb
        rm -f "$MAN/$other.yaml"
        check_field "the waiting pod starts once $other is gone" "$waiting" 'p["status"]["phase"]' Running 30
        check_field "its reason is cleared" "$waiting" 'p["status"].get("reason")' None
        check_field "its worker state once admitted" "$waiting" "$WORKER_STATE" running
fi
rm -f "$MAN"/*.yaml
for p in maxa maxb maxc; do
        wait_for "$AGENT_LOG" "Pod \"$p-node1_default.*\" is gone" 1 30 || fail "$p not gone"
done
check_no_leftovers
stop_agent
finish
