#!/usr/bin/env bash
# What a kill -9 of the agent leaves in <run-dir> has an owner
# (docs/internals/runtime.md, "Agent restart and reboot"): the monitor dir and exit file of a container
# deleted while the agent was down are read by the adoption, then removed;
# planted entries of unknown IDs go too, a symlink there without being
# followed; a live container's stay. A crash-looping container keeps its
# back-off across the restart: its next start waits the delay its restart
# count earned, counted from its last exit. A mount a killed runc exec left
# in a container's runtime state does not keep the container, or its pod;
# the status files of a pod that is gone go at the next start.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

load_test_image || { fail "test image"; finish; }
start_agent

put_manifest crash.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "exit 3"]}
YAML
sleep_pod gone | put_manifest gone.yaml
sleep_pod live | put_manifest live.yaml
for p in gone live; do
        check_field "$p Running" "$p" 'p["status"]["phase"]' Running 60
done
# Its second exit: restart count 1, waiting out its first back-off (10 s).
CS='p["status"]["containerStatuses"][0]'
check_field "crash in back-off" crash "$CS[\"restartCount\"] == 1 and \"waiting\" in $CS[\"state\"]" True 60
gone_id=$(pod_runc_ids "$(pod_field gone 'p["metadata"]["uid"]')")
live_id=$(pod_runc_ids "$(pod_field live 'p["metadata"]["uid"]')")

kill -9 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null || true; AGENT_PID=
CRASH_STARTED='Started container "main" of pod "crash-'
starts_before=$(grep -c "$CRASH_STARTED" "$AGENT_LOG")
crash_uid=$(pod_field crash 'p["metadata"]["uid"]')
# attempt_times: "number startedAt finishedAt" (seconds) of each attempt of
# crash's container, from the attempt records the agent keeps: the back-off
# counts from the exit the monitor saw, which the agent may log later.
attempt_times() {
        python3 - "$ROOT/pods/$crash_uid/containers/main" <<'PY'
import json, os, sys
d = sys.argv[1]
for n in sorted((int(x) for x in os.listdir(d) if x.isdigit())):
    try:
        r = json.load(open(os.path.join(d, str(n), "attempt.json")))
    except (OSError, ValueError):
        continue
    print(n, r.get("startedAt", 0) / 1e6, r.get("finishedAt", 0) / 1e6)
PY
}
last_attempt=$(attempt_times | tail -1)
read -r last_n _ exited_at <<<"${last_attempt:-0 0 0}"
# "gone" exits and its runtime state goes while the agent is down, as if
# the agent died between runc delete and removing what the monitor wrote.
runc --root "$RUN/runc" kill "$gone_id" KILL
wait_for_file() { local i; for ((i = 0; i < 300; i++)); do [ -e "$1" ] && return 0; sleep 0.1; done; return 1; }
wait_for_file "$RUN/exits/$gone_id" || fail "no exit file of gone"
runc --root "$RUN/runc" delete --force "$gone_id"
[ -d "$RUN/conmon/$gone_id" ] || fail "gone's monitor dir is missing before the restart"
# Entries of IDs no runtime knows; one a symlink to a directory outside
# with a pid file naming a live process of the monitor's name.
fake=$(printf 'f%.0s' {1..64})
link=$(printf 'e%.0s' {1..64})
mkdir -p "$RUN/conmon/$fake" "$WORK/outside"
echo x >"$RUN/conmon/$fake/oom"
echo 1 >"$RUN/exits/$fake"
echo keep >"$WORK/outside/keep"
ln -s "$WORK/outside" "$RUN/conmon/$link"
ln -s "$WORK/outside/keep" "$RUN/exits/$link"
# The status and events files of a pod that never started (no checkpoint:
# it waited for its predecessor when the agent died) whose manifest went
# while the agent was down.
ghost=0123456789abcdef0123456789abcdef
pod_json live | python3 -c 'import json, sys
p = json.load(sys.stdin); p["metadata"]["name"] = "ghost-node1"; p["metadata"]["uid"] = sys.argv[1]
p["status"] = {"phase": "Pending"}; print(json.dumps(p))' "$ghost" >"$RUN/status/$ghost.json"
echo '{"kind": "EventList", "items": []}' >"$RUN/status/events/$ghost.json"

start_agent
check_field "gone reported with the monitor's exit code" gone \
        'p["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] if "terminated" in p["status"]["containerStatuses"][0].get("lastState", {}) else p["status"]["containerStatuses"][0]["state"].get("terminated", {}).get("exitCode")' 137 30
wait_for "$AGENT_LOG" "left by a container the runtime no longer knows" 6 30 || true
for e in "conmon/$gone_id" "exits/$gone_id" "conmon/$fake" "exits/$fake" "conmon/$link" "exits/$link"; do
        [ ! -e "$RUN/$e" ] && [ ! -L "$RUN/$e" ] && ok "$e removed" || fail "$e remains"
done
[ "$(cat "$WORK/outside/keep" 2>/dev/null)" = keep ] && ok "symlink target untouched" || fail "symlink target changed"
expect "the gone pod's status file removed" "$AGENT_LOG" "Removed 1 file\(s\) of pods that are gone from $RUN/status\." 1 30
expect "the gone pod's events file removed" "$AGENT_LOG" "Removed 1 file\(s\) of pods that are gone from $RUN/status/events\." 1 30
[ ! -e "$RUN/status/$ghost.json" ] && [ ! -e "$RUN/status/events/$ghost.json" ] && ! pod_json ghost >/dev/null &&
        ok "no status of the gone pod left" || fail "the gone pod's files remain: $(ls "$RUN/status" "$RUN/status/events")"
[ -e "$RUN/conmon/$live_id/conmon.pid" ] && ok "live container's monitor dir kept" || fail "live monitor dir removed"
check_field "live still Running" live 'p["status"]["phase"]' Running 10

# The crash loop's next start waits its back-off from its last exit.
# Its first start after the kill is a new "Started" line (the restart count
# may have reached 2 before the kill, on a slow machine).
expect "crash started again after the restart" "$AGENT_LOG" "$CRASH_STARTED" $((starts_before + 1)) 60
next_start=$(attempt_times | awk -v n="$last_n" '$1 == n + 1 { print $2 }')
gap=
[ -n "$next_start" ] && python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) > 0 else 1)' "$exited_at" &&
        gap=$(python3 -c 'import sys; print("%.2f" % (float(sys.argv[1]) - float(sys.argv[2])))' "$next_start" "$exited_at")
echo "# crash: attempt $((last_n + 1)) started ${gap}s after attempt $last_n exited" >&2
python3 -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= 10 else 1)' "${gap:-0}" &&
        ok "back-off kept across the restart (${gap}s >= 10 s)" ||
        fail "back-off lost across the restart: attempt $((last_n + 1)) started ${gap:-?}s after attempt $last_n exited: $(attempt_times | tr '\n' ';')"

# runc 1.1's exec bind-mounts its binary on a temporary file in the
# container's state directory for a moment; killed then (a probe's timeout
# on a loaded machine), it leaves the mount, and runc delete fails on it.
# The container and its pod must still go with the manifest.
live_uid=$(pod_field live 'p["metadata"]["uid"]')
stray="$RUN/runc/$live_id/runc.Ab12Cd"
if : >"$stray" && mount --bind "$(command -v runc)" "$stray" && mount -o remount,bind,ro "$stray"; then
        ok "a killed runc exec's mount planted in live's runtime state"
else
        fail "planting a mount in live's runtime state"
fi
rm -f "$MAN/live.yaml"
expect "live gone despite the mount in its runtime state" "$AGENT_LOG" 'Pod "live-node1_[^"]*" is gone' 1 60
grep -q "unmounted 1 mount(s) a killed runc exec left in the state of container $live_id" "$AGENT_LOG" &&
        ok "the agent unmounted it before runc delete" || fail "no unmount of the stray mount logged"
! grep -q 'cannot be removed from the runtime' "$AGENT_LOG" &&
        ok "no container kept for the runtime" || fail "$(grep 'cannot be removed from the runtime' "$AGENT_LOG")"
[ -z "$(pod_runc_ids "$live_uid")" ] && ok "live's container deleted" || fail "live's container remains"
! awk -v d="$RUN/runc/" 'index($2, d) == 1' /proc/mounts | grep -q . &&
        ok "nothing mounted in the runtime's state" || fail "mounts left: $(awk -v d="$RUN/runc/" 'index($2, d) == 1' /proc/mounts)"
[ ! -e "$ROOT/pods/$live_uid" ] && ok "live's pod directory removed" || fail "live's pod directory kept"

stop_agent
finish
