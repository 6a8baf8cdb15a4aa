#!/usr/bin/env bash
# Agent restarts never touch running containers (docs/internals/runtime.md): after a
# kill -9, a SIGTERM and a simulated reboot, pods are adopted or restarted
# exactly as kubelet users expect, with the same PIDs where they survived,
# real exit codes for what died meanwhile, restart counts kept, and nothing
# left behind.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

load_test_image || { fail "test image"; finish; }
HOSTDIR=$WORK/host
mkdir -p "$HOSTDIR"
# agent_fds: the agent's open fds, the least of a few reads (a helper's pipe
# in flight does not count), without the image store's cached index.json
# (one fd, held once any image was looked up, never one per pod).
agent_fds() {
        local i n min=
        for ((i = 0; i < 5; i++)); do
                n=$(find "/proc/$AGENT_PID/fd" -mindepth 1 -printf '%l\n' 2>/dev/null | grep -vc '/images/index\.json$' || true)
                [ -z "$min" ] || [ "$n" -lt "$min" ] && min=$n
                sleep 0.1
        done
        echo "$min"
}
start_agent
fds_no_pods=$(agent_fds)

C='image: nanolet-test, imagePullPolicy: Never'

put_manifest multi.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: multi}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - {name: a, $C, command: [sleep, "3600"]}
  - {name: b, $C, command: [sleep, "3600"]}
YAML
put_manifest withinit.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: withinit}
spec:
  terminationGracePeriodSeconds: 2
  initContainers:
  - {name: prep, $C, command: [sh, -c, "echo ran >> /w/order"], volumeMounts: [{name: w, mountPath: /w}]}
  - {name: side, $C, restartPolicy: Always, command: [sleep, "3600"]}
  containers:
  - {name: app, $C, command: [sleep, "3600"], volumeMounts: [{name: w, mountPath: /w}]}
  volumes:
  - {name: w, emptyDir: {}}
YAML
put_manifest victim.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: victim}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - {name: main, $C, command: [sh, -c, "trap 'exit 143' TERM; while true; do sleep 1; done"]}
YAML
sleep_pod gone | put_manifest gone.yaml
sleep_pod deleted | put_manifest deleted.yaml
put_manifest changed.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: changed}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - {name: main, $C, command: [sh, -c, "echo v1 > /h/version; exec sleep 3600"], volumeMounts: [{name: h, mountPath: /h}]}
  volumes:
  - {name: h, hostPath: {path: $HOSTDIR, type: Directory}}
YAML
for p in multi withinit victim gone changed deleted; do
        check_field "$p Running and ready" "$p" 'p["status"]["phase"] == "Running" and all(c["ready"] for c in p["status"]["containerStatuses"])' True 60
done

# kubelet's config annotations: config.seen is when this agent first saw
# the pod, also when it is adopted after a restart (from its checkpoint)
CONFIG_ANNOTATIONS='all(k in p["metadata"].get("annotations", {}) for k in ("kubernetes.io/config.seen", "kubernetes.io/config.source", "kubernetes.io/config.hash"))'
check_field "config.seen, config.source and config.hash set" multi "$CONFIG_ANNOTATIONS" True
seen_first=$(pod_field multi 'p["metadata"]["annotations"]["kubernetes.io/config.seen"]')

# snapshot POD...: "<container> <containerID> <pid> <restartCount>" per running container
snapshot() {
        local p
        for p in "$@"; do
                pod_json "$p" | python3 -c '
import json, subprocess, sys
p = json.load(sys.stdin)
for c in p["status"].get("initContainerStatuses", []) + p["status"]["containerStatuses"]:
    if "running" not in c["state"]:
        continue
    cid = c["containerID"].split("://")[1]
    st = json.loads(subprocess.run(["runc", "--root", sys.argv[1], "state", cid], capture_output=True, text=True).stdout or "{}")
    print(sys.argv[2], c["name"], cid, st.get("pid"), c["restartCount"])
' "$RUN/runc" "$p"
        done
}
pid_of() { snapshot "$1" | awk -v c="$2" '$2 == c {print $4}'; }

snapshot multi withinit >"$WORK/before"
[ "$(wc -l <"$WORK/before")" = 4 ] && ok "4 running containers recorded" || fail "snapshot: $(cat "$WORK/before")"
victim_pid=$(pid_of victim main)
deleted_pid=$(pid_of deleted main)
deleted_cid=$(pod_field deleted 'p["status"]["containerStatuses"][0]["containerID"].split("://")[1]')
deleted_uid=$(pod_field deleted 'p["metadata"]["uid"]')
gone_uid=$(pod_field gone 'p["metadata"]["uid"]')
changed_uid=$(pod_field changed 'p["metadata"]["uid"]')

# --- kill -9; while the agent is down a container is stopped, a manifest
# removed and one changed
kill -9 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null || true; AGENT_PID=
kill -TERM "$victim_pid"
# runc's state of this one goes too (runc delete --force: SIGKILL); conmon
# still writes its exit file
runc --root "$RUN/runc" delete --force "$deleted_cid" >/dev/null 2>&1 || true
rm -f "$MAN/gone.yaml"
sed 's/echo v1/echo v2/' "$MAN/changed.yaml" | put_manifest changed.yaml
for ((i = 0; i < 300; i++)); do kill -0 "$victim_pid" 2>/dev/null || kill -0 "$deleted_pid" 2>/dev/null || break; sleep 0.1; done
start_agent
expect "adoption logged" "$AGENT_LOG" 'Adopted running container "a" of pod "multi-node1' 1 20
check_field "kill -9 + start: the adopted pod has config.seen (and source, hash)" multi "$CONFIG_ANNOTATIONS" True
check_field "victim restarted per policy" victim 'p["status"]["containerStatuses"][0]["restartCount"] == 1 and "running" in p["status"]["containerStatuses"][0]["state"]' True 30
check_field "victim's exit code while the agent was down: 143" victim 'p["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"]' 143
check_field "runc state deleted while down: restarted" deleted 'p["status"]["containerStatuses"][0]["restartCount"] == 1 and "running" in p["status"]["containerStatuses"][0]["state"]' True 30
check_field "runc state deleted while down: exit code from conmon's exit file (137)" deleted 'p["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"]' 137
# the rest of the test counts the other pods' containers and veths
rm -f "$MAN/deleted.yaml"
for ((i = 0; i < 150; i++)); do [ "$(cat "$HOSTDIR/version" 2>/dev/null)" = v2 ] && break; sleep 0.2; done
[ "$(cat "$HOSTDIR/version")" = v2 ] && ok "manifest changed while down: pod recreated" || fail "changed pod not recreated"
for ((i = 0; i < 150; i++)); do
        [ -z "$(pod_runc_ids "$gone_uid" "$changed_uid" "$deleted_uid")" ] && break
        sleep 0.2
done
[ -z "$(pod_runc_ids "$gone_uid" "$changed_uid" "$deleted_uid")" ] && ok "removed and replaced pods terminated" \
        || fail "old containers remain: $(runc --root "$RUN/runc" list -q)"
[ ! -e "$ROOT/pods/$gone_uid" ] && ok "removed pod's directory gone" || fail "pod dir of removed pod remains"
snapshot multi withinit >"$WORK/after"
diff -u "$WORK/before" "$WORK/after" >&2 && ok "kill -9: identical container IDs, PIDs and restart counts" || fail "containers changed across kill -9"
order=$(find "$ROOT/pods" -name order -exec cat {} \;)
[ "$order" = ran ] && ok "init container not re-run on adoption" || fail "init ran: '$order'"
check_field "init container reported Completed" withinit 'p["status"]["initContainerStatuses"][0]["state"]["terminated"]["reason"]' Completed

# --- SIGTERM: pods keep running; the next agent adopts them again
stop_agent
snapshot_pids=$(awk '{print $4}' "$WORK/before")
alive=0; for p in $snapshot_pids; do kill -0 "$p" 2>/dev/null && alive=$((alive + 1)); done
[ "$alive" = 4 ] && ok "SIGTERM leaves the pods running" || fail "$alive of 4 alive after SIGTERM"
read -r API_PORT < <(free_ports 1)
adopted_b=$(count_lines "$AGENT_LOG" 'Adopted running container "b" of pod "multi-node1')
start_agent --read-only-port "$API_PORT"
expect "adopted after SIGTERM" "$AGENT_LOG" 'Adopted running container "b" of pod "multi-node1' $((adopted_b + 1)) 20
# what the read-only API shows: the adopted pods as a restarted kubelet
# shows its static pods, config.seen from this run's first sighting. A pod
# is listed once its manifest was read, which may follow the adoption line.
for ((i = 0; i < 300; i++)); do
        curl -sf "http://127.0.0.1:$API_PORT/pods" -o "$WORK/api-pods.json" &&
                grep -q '"multi-node1"' "$WORK/api-pods.json" &&
                grep -q '"withinit-node1"' "$WORK/api-pods.json" && break
        sleep 0.1
done
if python3 - "$WORK/api-pods.json" "$seen_first" <<'PY'; then
import json, sys
pods = {p["metadata"]["name"]: p for p in json.load(open(sys.argv[1]))["items"]}
for name in ("multi-node1", "withinit-node1"):
    a = pods[name]["metadata"].get("annotations", {})
    assert a.get("kubernetes.io/config.source") == "file", (name, a)
    assert a.get("kubernetes.io/config.hash") == pods[name]["metadata"]["uid"], (name, a)
    seen = a.get("kubernetes.io/config.seen", "")
    assert seen.endswith("Z") and seen > sys.argv[2], (name, seen, sys.argv[2])
PY
        ok "API /pods after SIGTERM + start: config.seen (this run's), config.source, config.hash"
else fail "API /pods annotations after restart: $(cat "$WORK/api-pods.json" 2>/dev/null)"; fi
sleep 2
snapshot multi withinit >"$WORK/after2"
diff -u "$WORK/before" "$WORK/after2" >&2 && ok "SIGTERM + start: identical containers" || fail "containers changed across SIGTERM"

# --- reboot: every process gone, <run-dir> empty, <root-dir> and logs kept
stop_agent
for id in $(runc --root "$RUN/runc" list -q); do
        runc --root "$RUN/runc" kill "$id" KILL 2>/dev/null || true
done
sleep 1
for id in $(runc --root "$RUN/runc" list -q); do runc --root "$RUN/runc" delete --force "$id" 2>/dev/null || true; done
pkill -9 -f "conmon.*$RUN" 2>/dev/null || true
pkill -9 -f "^[^ ]*nanolet-monitor .*$RUN" 2>/dev/null || true
for m in $(awk -v w="$WORK" 'index($2, w) == 1 {print $2}' /proc/mounts | sort -r); do umount -l "$m"; done
ip link del "$TEST_BRIDGE" 2>/dev/null || true
rm -rf "$RUN"; mkdir -p "$RUN"
start_agent
for p in multi withinit victim changed; do
        check_field "$p back after reboot" "$p" 'p["status"]["phase"] == "Running" and all("running" in c["state"] for c in p["status"]["containerStatuses"])' True 60
done
check_field "restart count continues after reboot" multi 'p["status"]["containerStatuses"][0]["restartCount"]' 1
check_field "victim's count continues too" victim 'p["status"]["containerStatuses"][0]["restartCount"]' 2
order=$(find "$ROOT/pods" -name order -exec cat {} \; | tr '\n' ' ')
[ "$order" = "ran ran " ] && ok "init container re-ran in the new sandbox" || fail "init after reboot: '$order'"
n=$(runc --root "$RUN/runc" list -q | wc -l)
[ "$n" = 6 ] && ok "6 containers after reboot, no duplicates" || fail "$n containers: $(runc --root "$RUN/runc" list -q)"

# --- kill -9 in the middle of a pod's creation (sandbox and CNI ADD)
sleep_pod late | put_manifest late.yaml
wait_for "$AGENT_LOG" 'SyncLoop \(ADD, "file"\): "late-node1' 1 20 || true
sleep 0.$((RANDOM % 4))
kill -9 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null || true; AGENT_PID=
start_agent
check_field "late pod Running after kill -9 mid-creation" late 'p["status"]["phase"]' Running 60
late_uid=$(pod_field late 'p["metadata"]["uid"]')
n=$(pod_runc_ids "$late_uid" | wc -l)
[ "$n" = 1 ] && ok "one container for the late pod" || fail "late pod containers: $n"
n=$(ip -o link show master "$TEST_BRIDGE" 2>/dev/null | wc -l)
[ "$n" = 5 ] && ok "one veth per pod on the bridge" || fail "$n veths for 5 pods"

# --- kill -9 in the middle of termination
rm -f "$MAN/late.yaml"
wait_for "$AGENT_LOG" 'Terminating pod "late-node1' 1 20 || true
kill -9 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null || true; AGENT_PID=
start_agent
for ((i = 0; i < 150; i++)); do [ ! -e "$ROOT/pods/$late_uid" ] && break; sleep 0.2; done
[ ! -e "$ROOT/pods/$late_uid" ] && ok "pod removed during a kill -9 is gone after restart" || fail "late pod remains"

rm -f "$MAN"/*.yaml
for ((i = 0; i < 250; i++)); do [ -z "$(ls "$RUN/status" 2>/dev/null | grep -vx sources.json | grep json)" ] && break; sleep 0.2; done
# This agent adopted every pod it had (kill -9 above): their exit watches
# and whatever else adoption opened went with them.
fds_after=$(agent_fds)
[ "$fds_after" = "$fds_no_pods" ] && ok "fds after adoption and removal of every pod: $fds_after, as with no pods" \
        || { fail "fds after adoption and removal: $fds_after, with no pods: $fds_no_pods"; ls -l "/proc/$AGENT_PID/fd" >&2; }
check_no_leftovers
stop_agent
finish
