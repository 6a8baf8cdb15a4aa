#!/usr/bin/env bash
# The runtime is the truth at agent start (docs/internals/runtime.md, "Agent
# restart and reboot"): a pod whose checkpoint (pod.json) is missing, empty, garbage or a symlink
# while its containers still run is adopted from its manifest, never started
# a second time beside itself; with no manifest wanting it, its containers
# are stopped before its directory goes. An attempt the agent recorded but
# never created (a kill -9 between the record and runc create) is no restart.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

load_test_image || { fail "test image"; finish; }

# A runtime wrapper: every call goes to runc, except a create while $GATE
# exists, which says so ($HELD), waits while the gate says "hold" and then
# fails: that create never happens (also when the test's directory goes).
GATE=$WORK/gate
HELD=$WORK/held
cat >"$WORK/runtime" <<SH
#!/bin/sh
for a in "\$@"; do
        if [ "\$a" = create ] && [ -e "$GATE" ]; then
                touch "$HELD"
                while [ "\$(cat "$GATE" 2>/dev/null)" = hold ]; do sleep 0.1; done
                exit 1
        fi
done
exec runc "\$@"
SH
chmod 0755 "$WORK/runtime"
AGENT_ARGS=(--runtime "$WORK/runtime")
start_agent "${AGENT_ARGS[@]}"

C='image: nanolet-test, imagePullPolicy: Never'
put_manifest trunc.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: trunc}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - {name: a, $C, command: [sleep, "3600"]}
  - {name: b, $C, command: [sleep, "3600"]}
YAML
sleep_pod link | put_manifest link.yaml
sleep_pod garbage | put_manifest garbage.yaml
sleep_pod missing | put_manifest missing.yaml
sleep_pod orphan | put_manifest orphan.yaml
# without a network namespace to pin, nothing else stands in the way of a
# second sandbox
put_manifest hostnet.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: hostnet}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - {name: main, $C, command: [sleep, "3600"]}
YAML
PODS="trunc link garbage missing orphan hostnet"
for p in $PODS; do
        check_field "$p Running" "$p" 'p["status"]["phase"] == "Running" and all("running" in c["state"] for c in p["status"]["containerStatuses"])' True 60
done

declare -A UID_OF
for p in $PODS; do UID_OF[$p]=$(pod_field "$p" 'p["metadata"]["uid"]'); done

# live POD: "<container> <containerID> <pid>" per runc container of the pod
# that runs, sorted.
live() {
        runc --root "$RUN/runc" list -f json 2>/dev/null | python3 -c '
import json, sys
for c in json.load(sys.stdin) or []:
    if "/pods/%s/" % sys.argv[1] in c["bundle"] and c["status"] == "running":
        name = c["bundle"].split("/containers/")[1].split("/")[0]
        print(name, c["id"], c["pid"])' "${UID_OF[$1]}" | sort
}
for p in $PODS; do live "$p" >"$WORK/$p.before"; done

# --- kill -9, then damage the checkpoints
kill -9 "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || true
AGENT_PID=
pd() { echo "$ROOT/pods/${UID_OF[$1]}"; }
: >"$(pd trunc)/pod.json"
echo 'keep me' >"$WORK/elsewhere.json"
rm -f "$(pd link)/pod.json"
ln -s "$WORK/elsewhere.json" "$(pd link)/pod.json"
head -c 300 /dev/urandom >"$(pd garbage)/pod.json"
: >"$(pd hostnet)/pod.json"
rm -f "$(pd missing)/pod.json"
: >"$(pd orphan)/pod.json"
rm -f "$MAN/orphan.yaml"

start_agent "${AGENT_ARGS[@]}"
for p in trunc link garbage missing hostnet; do
        check_field "$p Running after restart, RESTARTS 0" "$p" 'p["status"]["phase"] == "Running" and all("running" in c["state"] and c["restartCount"] == 0 for c in p["status"]["containerStatuses"])' True 30
done
# The orphan's containers go, and only then its directory.
for ((i = 0; i < 150; i++)); do
        [ -z "$(pod_runc_ids "${UID_OF[orphan]}")" ] && [ ! -e "$(pd orphan)" ] && break
        sleep 0.2
done
[ -z "$(pod_runc_ids "${UID_OF[orphan]}")" ] && ok "orphan's containers stopped" ||
        fail "orphan's containers left: $(pod_runc_ids "${UID_OF[orphan]}")"
[ ! -e "$(pd orphan)" ] && ok "orphan's directory removed" || fail "orphan's directory remains"
# The adopted pods keep their network: no CNI DEL took it as an orphan's.
n=$(ip -o link show master "$TEST_BRIDGE" 2>/dev/null | wc -l || true)
[ "$n" = 4 ] && ok "the 4 adopted pods keep their veths" || fail "$n veths on the bridge, want 4"
for p in trunc link garbage missing hostnet; do
        live "$p" >"$WORK/$p.after"
        diff -u "$WORK/$p.before" "$WORK/$p.after" >&2 &&
                ok "$p: the same containers run, no second copy" || fail "$p: containers changed"
        n=$(pod_runc_ids "${UID_OF[$p]}" | wc -l)
        want=$(wc -l <"$WORK/$p.before")
        [ "$n" = "$want" ] && ok "$p: $n runc container(s)" || fail "$p: $n runc containers, want $want"
        f=$(pd "$p")/pod.json
        if [ -f "$f" ] && [ ! -L "$f" ] &&
                python3 -c 'import json,sys; sys.exit(json.load(open(sys.argv[1]))["uid"] != sys.argv[2])' "$f" "${UID_OF[$p]}"; then
                ok "$p: checkpoint rewritten"
        else
                fail "$p: checkpoint not rewritten: $(ls -l "$f" 2>&1)"
        fi
done
[ "$(cat "$WORK/elsewhere.json")" = 'keep me' ] && ok "symlink target untouched" || fail "symlink target changed"

# --- kill -9 between an attempt's record and its runc create
echo hold >"$GATE"
sleep_pod gated | put_manifest gated.yaml
for ((i = 0; i < 300; i++)); do [ -e "$HELD" ] && break; sleep 0.1; done
[ -e "$HELD" ] && ok "create held by the gate" || fail "create never reached the runtime"
gated_uid=$(sed -nE 's/.*SyncLoop \(ADD, "file"\): "gated-node1_default\(([0-9a-f-]+)\)".*/\1/p' "$AGENT_LOG" | head -1)
[ -f "$ROOT/pods/$gated_uid/containers/main/0/attempt.json" ] && ok "attempt recorded before its create" ||
        fail "no attempt record: $(find "$ROOT/pods/$gated_uid" -maxdepth 4 2>&1 | head)"
kill -9 "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || true
AGENT_PID=
echo fail >"$GATE"
for ((i = 0; i < 300; i++)); do pgrep -f "^/bin/sh $WORK/runtime" >/dev/null || break; sleep 0.1; done
rm -f "$GATE"
[ -z "$(pod_runc_ids "$gated_uid")" ] && ok "the held create never happened" || fail "gated container created"
start_agent "${AGENT_ARGS[@]}"
check_field "gated pod Running after restart" gated 'p["status"]["phase"] == "Running" and "running" in p["status"]["containerStatuses"][0]["state"]' True 30
check_field "an attempt that never ran is no restart (RESTARTS 0)" gated 'p["status"]["containerStatuses"][0]["restartCount"]' 0
n=$(nl pods | awk '$2 == "gated-node1" {print $5}')
[ "$n" = 0 ] && ok "nanolet pods shows RESTARTS 0" || fail "nanolet pods shows RESTARTS '$n': $(nl pods)"
n=$(pod_runc_ids "$gated_uid" | wc -l)
[ "$n" = 1 ] && ok "gated: one runc container" || fail "gated: $n runc containers"

# --- every manifest removed: everything stops, nothing is left
rm -f "$MAN"/*.yaml
for ((i = 0; i < 250; i++)); do
        [ -z "$(runc --root "$RUN/runc" list -q)" ] && [ -z "$(ls "$ROOT/pods")" ] && break
        sleep 0.2
done
check_no_leftovers
stop_agent
finish
