#!/usr/bin/env bash
# A CNI pod's first containers are prepared (attempt directory,
# overlay rootfs, config.json) while CNI ADD runs, and only launched once
# the network has given the pod its IP. The bridge plugin is wrapped by a
# gate of this test that holds the ADD until the test lets it go (or fails
# it). Checked: the bundle is there while ADD runs, a container whose env needs
# status.podIP is not prepared early and gets the right IP, /etc/hosts has
# the pod IP; a failed ADD, a pod removed during ADD and an agent killed
# during ADD leave no attempt, overlay mount or container cgroup behind
# (and the restarted agent starts the pod afresh). Traffic: none; the
# network is this test's own bridge.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

CNI_BIN=$WORK/cni-bin
GATE=$WORK/gate
mkdir -p "$CNI_BIN" "$GATE"
cni_bin_wrapping_bridge "$CNI_BIN"
# The gate, per pod (K8S_POD_NAME): <name>.entered says ADD began and holds
# the pod UID; <name>.go lets it go on, <name>.fail makes it fail with a CNI
# error.
cat >"$CNI_BIN/bridge" <<SH
#!/bin/sh
name=\$(echo "\$CNI_ARGS" | tr ';' '\n' | sed -n 's/^K8S_POD_NAME=//p')
g=$GATE/\$name
if [ "\$CNI_COMMAND" = ADD ]; then
        echo "\$CNI_CONTAINERID" >"\$g.entered.tmp"
        mv "\$g.entered.tmp" "\$g.entered"
        i=0
        while [ ! -e "\$g.go" ] && [ ! -e "\$g.fail" ] && [ \$i -lt 300 ]; do
                sleep 0.1
                i=\$((i + 1))
        done
        if [ -e "\$g.fail" ]; then
                printf '{"cniVersion":"1.0.0","code":11,"msg":"the test gate refused the network"}'
                exit 1
        fi
fi
# DEL with <name>.holddel: the real DEL runs, then the gate holds in
# <name>.del-entered until <name>.del-go (an agent killed there has deleted
# the network but not yet removed the pod).
if [ "\$CNI_COMMAND" = DEL ] && [ -e "\$g.holddel" ]; then
        $REAL_BRIDGE "\$@"
        rc=\$?
        : >"\$g.del-entered"
        i=0
        while [ ! -e "\$g.del-go" ] && [ \$i -lt 300 ]; do
                sleep 0.1
                i=\$((i + 1))
        done
        exit \$rc
fi
exec $REAL_BRIDGE "\$@"
SH
chmod +x "$CNI_BIN/bridge"

load_test_image
start_agent -v 4 --cni-bin-dir "$CNI_BIN"

pod_uid() { pod_field "$1" 'p["metadata"]["uid"]'; }
# mounts below pod NAME's container attempts (its /dev/shm and volumes are
# the pod's, there from before the sandbox until the pod goes)
pod_mounts() {
        local uid
        uid=$(pod_uid "$1")
        [ -n "$uid" ] || return 0
        awk -v d="$ROOT/pods/$uid/containers/" 'index($2, d) == 1 {print $2}' /proc/mounts
}
# directories below pod NAME's cgroup (runc's container cgroups)
container_cgroups() {
        local uid m
        uid=$(pod_uid "$1")
        [ -n "$uid" ] || return 0
        for m in $(find /sys/fs/cgroup -maxdepth 8 -type d -name "pod$uid" 2>/dev/null); do
                find "$m" -mindepth 1 -type d
        done
}
wait_file() {
        local i
        for ((i = 0; i < 300; i++)); do
                [ -e "$1" ] && return 0
                sleep 0.1
        done
        return 1
}

# --- 1. prepared during ADD, launched after it with the pod IP
put_manifest early.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: early}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: a
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, 'cat /etc/hosts; sleep 3600']
  - name: b
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, 'echo "IP=$MY_IP"; sleep 3600']
    env:
    - name: MY_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
YAML
if wait_file "$GATE/early-node1.entered"; then
        ok "CNI ADD of pod early began"
else
        fail "CNI ADD of pod early never began"
fi
# attempt PODNAME CONTAINER: the attempt 0 directory of that container
attempt() { echo "$ROOT/pods/$(cat "$GATE/$1-node1.entered" 2>/dev/null)/containers/$2/0"; }
# The preparation runs once the ADD was spawned: its bundle appears while
# the gate holds the ADD, i.e. before the agent has the network's result.
if wait_file "$(attempt early a)/bundle/config.json"; then
        ok "container a's config.json is written while CNI ADD runs"
else
        fail "container a's config.json did not appear while CNI ADD ran"
fi
if [ -e "$(attempt early b)" ]; then
        fail "container b (env from status.podIP) was prepared before the pod had an IP"
else
        ok "container b (env from status.podIP) waits for the network"
fi
if pod_mounts early | grep -q '/containers/a/0/rootfs$'; then
        ok "container a's rootfs is mounted while CNI ADD runs"
else
        fail "container a's rootfs not mounted during CNI ADD: $(pod_mounts early)"
fi
n=$(runc --root "$RUN/runc" list -q 2>/dev/null | wc -l)
[ "$n" -eq 0 ] && ok "nothing created in runc before the network" || fail "$n runc containers during CNI ADD"
: >"$GATE/early-node1.go"
check_field "pod early runs after its network" early 'p["status"]["phase"]' Running
check_field "both containers of pod early run" early \
        'sum(1 for c in p["status"]["containerStatuses"] if "running" in c["state"])' 2
IP=$(pod_field early 'p["status"]["podIP"]')
UID_EARLY=$(pod_uid early)
[ -n "$IP" ] && ok "pod early has IP $IP" || fail "pod early has no IP"
LOGDIR=$(echo "$LOGS"/default_early-node1_"$UID_EARLY")
expect "the prepared container's /etc/hosts names the pod IP" "$LOGDIR/a/0.log" "$(echo "$IP" | sed 's/\./\\./g')[[:space:]]+early" 1 10
expect "the env of the container prepared after the network has the pod IP" "$LOGDIR/b/0.log" "IP=$IP\$" 1 10
expect "the prepared bundle was launched after the sandbox" "$AGENT_LOG" 'sandbox ready, starting the prepared bundle' 1 5

# --- 2. ADD fails: the prepared attempt goes as a failed create's would
put_manifest refused.yaml < <(sleep_pod refused)
if wait_file "$GATE/refused-node1.entered" && wait_file "$(attempt refused main)/bundle/config.json"; then
        ok "pod refused: bundle prepared during ADD"
else
        fail "pod refused: no bundle during ADD"
fi
: >"$GATE/refused-node1.fail"
expect "pod refused: the sandbox failed" "$AGENT_LOG" 'Failed to create sandbox of pod "refused-node1.*the test gate refused' 1 10
expect "pod refused: the prepared start was given up" "$AGENT_LOG" 'main.*given up \(the sandbox failed\)' 1 10
UID_REFUSED=$(pod_uid refused)
[ -n "$UID_REFUSED" ] && [ ! -e "$ROOT/pods/$UID_REFUSED/containers/main/0" ] &&
        ok "pod refused: no attempt directory left" ||
        fail "pod refused: attempt directory left: $(ls -R "$ROOT/pods/$UID_REFUSED/containers" 2>&1 | head)"
m=$(pod_mounts refused)
[ -z "$m" ] && ok "pod refused: no overlay mount left" || fail "pod refused: mounts left: $m"
m=$(container_cgroups refused)
[ -z "$m" ] && ok "pod refused: no container cgroup" || fail "pod refused: cgroups: $m"
check_field "pod refused has no container id" refused \
        'sum(1 for c in p["status"]["containerStatuses"] if c.get("containerID"))' 0
rm -f "$MAN/refused.yaml"

# --- 3. the pod is removed while ADD runs
put_manifest gone.yaml < <(sleep_pod gone)
wait_file "$GATE/gone-node1.entered" && wait_file "$(attempt gone main)/bundle/config.json" &&
        ok "pod gone: bundle prepared during ADD" || fail "pod gone: no bundle during ADD"
UID_GONE=$(pod_uid gone)
rm -f "$MAN/gone.yaml"
expect "pod gone: the prepared start was given up while ADD ran" "$AGENT_LOG" 'gone-node1.*given up \(the pod is terminating\)' 1 10
m=$(pod_mounts gone)
[ -z "$m" ] && ok "pod gone: rootfs unmounted before ADD returned" || fail "pod gone: mounts: $m"
: >"$GATE/gone-node1.go"
expect "pod gone is torn down" "$AGENT_LOG" 'Pod "gone-node1.*" is gone' 1 20
[ -n "$UID_GONE" ] && [ ! -e "$ROOT/pods/$UID_GONE" ] && ok "pod gone: its directory is removed" ||
        fail "pod gone: $ROOT/pods/$UID_GONE left"

# --- 4. the agent is killed while ADD runs: the restarted agent starts the
# pod afresh and unmounts what the prepared attempt had mounted
put_manifest restart.yaml < <(sleep_pod restart)
if wait_file "$GATE/restart-node1.entered" && wait_file "$(attempt restart main)/bundle/config.json"; then
        ok "pod restart: bundle prepared during ADD"
else
        fail "pod restart: no bundle during ADD"
fi
UID_RESTART=$(pod_uid restart)
kill -9 "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || true
AGENT_PID=
: >"$GATE/restart-node1.go"
start_agent -v 4 --cni-bin-dir "$CNI_BIN"
check_field "pod restart runs after the agent restart" restart 'p["status"]["phase"]' Running 30
# The prepared attempt never started: not a restart, its number is used
# again, and only the running attempt's rootfs is mounted.
m=$(pod_mounts restart)
[ "$(echo "$m" | grep -c rootfs)" -eq 1 ] && echo "$m" | grep -q '/main/0/rootfs$' &&
        ok "pod restart: only the running attempt's rootfs is mounted" ||
        fail "pod restart: mounts: $m"
check_field "pod restart: the attempt that never started is no restart" restart \
        'p["status"]["containerStatuses"][0]["restartCount"]' 0
check_field "pod early was adopted, not restarted" early \
        'sum(c["restartCount"] for c in p["status"]["containerStatuses"])' 0

# --- the agent killed in a pod's teardown after its network's DEL, and the
# same pod wanted again: its sandbox (namespaces pinned, record still
# there) has no network any more, so it is made anew, not adopted.
: >"$GATE/back-node1.go"
sleep_pod back | put_manifest back.yaml
check_field "pod back Running" back 'p["status"]["phase"]' Running 30
UID_BACK=$(pod_uid back)
: >"$GATE/back-node1.holddel"
mv "$MAN/back.yaml" "$WORK/back.yaml"
wait_for_file() { local i; for ((i = 0; i < WAIT_MIN_S * 10; i++)); do [ -e "$1" ] && return 0; sleep 0.1; done; return 1; }
if wait_for_file "$GATE/back-node1.del-entered"; then
        ok "pod back: its network deleted, the teardown held"
        kill -9 "$AGENT_PID"
        wait "$AGENT_PID" 2>/dev/null || true
        AGENT_PID=
        rm -f "$GATE/back-node1.holddel"
        : >"$GATE/back-node1.del-go"
        mv "$WORK/back.yaml" "$MAN/back.yaml"
        start_agent -v 4 --cni-bin-dir "$CNI_BIN"
        expect "pod back: not adopted, made anew" "$AGENT_LOG" "Pod \"back-node1_default\($UID_BACK\)\" was left by an earlier run of the agent: it was being removed, starting it afresh" 1 30
        check_field "pod back Running again" back 'p["status"]["phase"]' Running 30
        ip=$(pod_field back 'p["status"]["podIP"]')
        [ -n "$ip" ] && nl exec back -c main -- ip -o -4 addr show eth0 2>/dev/null | grep -qF " $ip/" \
                && ok "pod back: eth0 has its pod IP $ip" || fail "pod back: no eth0 with its pod IP '$ip'"
        [ -n "$(grep -rlF "$UID_BACK" "$WORK/leases" 2>/dev/null)" ] && ok "pod back: its lease" \
                || fail "pod back: no lease"
else
        fail "pod back: the DEL never reached the gate"
        mv "$WORK/back.yaml" "$MAN/back.yaml"
fi

rm -f "$MAN"/*.yaml
expect "every pod is gone" "$AGENT_LOG" '" is gone' 5 40
stop_agent
check_no_leftovers
finish
