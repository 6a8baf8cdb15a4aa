#!/usr/bin/env bash
# Events and source errors as a user sees them, from the real agent: a good
# pod's Created/Started, a failing probe's Unhealthy, a crash-looping pod's
# BackOff with a count in `nanolet events` and `nanolet inspect`, `events -w`
# following a pod to its end and stopping with the status directory, and a
# broken manifest shown by `nanolet pods` (from the agent's
# status/sources.json) until it is fixed or removed. Everything is observed
# in the agent's own records.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

load_test_image || { fail "test image"; finish; }
start_agent

# wait_event NAME REASON MIN_COUNT [TIMEOUT]: until the agent's events file
# of pod NAME holds an event REASON with count >= MIN_COUNT.
wait_event() {
        local i uid timeout=${4:-60}
        for ((i = 0; i < timeout * 5; i++)); do
                uid=$(pod_field "$1" 'p["metadata"]["uid"]' || true)
                if [ -n "$uid" ] && python3 - "$RUN/status/events/$uid.json" "$2" "$3" 2>/dev/null <<'PY'; then
import json, sys
items = json.load(open(sys.argv[1]))["items"]
sys.exit(0 if any(e["reason"] == sys.argv[2] and e["count"] >= int(sys.argv[3]) for e in items) else 1)
PY
                        return 0
                fi
                sleep 0.2
        done
        echo "--- $1: no $2 event with count >= $3; events: $(cat "$RUN/status/events/$uid.json" 2>/dev/null)" >&2
        return 1
}

# --- a good pod: Pulled, Created, Started
sleep_pod good | put_manifest good.yaml
check_field "good pod Running" good 'p["status"]["phase"]' Running
wait_event good Started 1 && ok "Started event recorded" || fail "no Started event"
nl events good >"$WORK/out" 2>&1
has() { # has DESC FILE REGEX
        if grep -qE -- "$3" "$2"; then ok "$1"; else fail "$1: no /$3/ in: $(cat "$2")"; fi
}
has "events: header" "$WORK/out" '^LAST SEEN +TYPE +REASON +OBJECT +MESSAGE$'
has "events: Pulled" "$WORK/out" 'Normal +Pulled +pod/good-node1 +Container image "nanolet-test" already present on machine$'
has "events: Created" "$WORK/out" 'Normal +Created +pod/good-node1 +Created container: main$'
has "events: Started" "$WORK/out" 'Normal +Started +pod/good-node1 +Started container main$'
[ "$(grep -nE 'Created|Started' "$WORK/out" | cut -d: -f2 | tr -s ' ' | cut -d' ' -f3 | tr '\n' ' ')" = "Created Started " ] &&
        ok "events in order" || fail "order: $(cat "$WORK/out")"
uid=$(pod_field good 'p["metadata"]["uid"]')
python3 - "$RUN/status/events/$uid.json" "$uid" <<'PY' && ok "events file is a v1 EventList" || fail "events file: $(cat "$RUN/status/events/$uid.json")"
import json, sys
l = json.load(open(sys.argv[1]))
assert l["apiVersion"] == "v1" and l["kind"] == "EventList", l
e = [e for e in l["items"] if e["reason"] == "Started"][0]
assert e["kind"] == "Event" and e["type"] == "Normal" and e["count"] == 1, e
o = e["involvedObject"]
assert o["kind"] == "Pod" and o["name"] == "good-node1" and o["uid"] == sys.argv[2], o
assert o["fieldPath"] == "spec.containers{main}", o
assert e["source"]["component"] == "nanolet" and e["firstTimestamp"] == e["lastTimestamp"], e
PY
[ "$(stat -c %a "$RUN/status/events/$uid.json")" = 600 ] && ok "events file is root's only" ||
        fail "events file mode $(stat -c %a "$RUN/status/events/$uid.json")"
# The status file stays a plain v1 Pod.
pod_json good | python3 -c 'import json,sys; p=json.load(sys.stdin); assert set(p) == {"apiVersion","kind","metadata","spec","status"}, set(p)' &&
        ok "status file holds no events" || fail "status file keys changed"

# --- a crash-looping pod: BackOff, collapsed with a count
cat <<YAML | put_manifest crash.yaml
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "exit 3"]}
YAML
wait_event crash BackOff 2 90 && ok "BackOff collapsed with count >= 2" || fail "no repeated BackOff"
nl events crash >"$WORK/out" 2>&1
has "events: BackOff with its count" "$WORK/out" \
        '^[0-9a-z]+ \(x[0-9]+ over [0-9a-z]+\) +Warning +BackOff +pod/crash-node1 +Back-off restarting failed container main in pod crash-node1_default\('
[ "$(grep -c BackOff "$WORK/out")" = 1 ] && ok "one BackOff line for the repeats" || fail "BackOff lines: $(cat "$WORK/out")"
nl inspect crash >"$WORK/out" 2>&1
has "inspect: Events section" "$WORK/out" '^Events:$'
has "inspect: describe columns" "$WORK/out" '^  Type +Reason +Age +From +Message$'
has "inspect: BackOff with count" "$WORK/out" '^  Warning +BackOff +[0-9a-z]+ \(x[0-9]+ over [0-9a-z]+\) +nanolet +Back-off restarting failed container main'
has "inspect: Started" "$WORK/out" '^  Normal +Started +.* +nanolet +Started container main$'
nl inspect -o json crash | python3 -c '
import json, sys
p = json.load(sys.stdin)
assert p["kind"] == "Pod" and any(e["reason"] == "BackOff" and e["count"] >= 2 for e in p["events"])
' && ok "inspect -o json: one document with the events" || fail "inspect -o json"
nl events >"$WORK/out" 2>&1
has "events of all pods: namespace column" "$WORK/out" '^NAMESPACE +LAST SEEN +TYPE +REASON +OBJECT +MESSAGE$'
has "events of all pods: good" "$WORK/out" '^default +.* +Started +pod/good-node1 '
has "events of all pods: crash" "$WORK/out" '^default +.* +BackOff +pod/crash-node1 '

# --- a failing readiness probe: Unhealthy on each failure, collapsed
cat <<YAML | put_manifest unready.yaml
apiVersion: v1
kind: Pod
metadata: {name: unready}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sleep, "3600"]
    readinessProbe:
      exec: {command: [sh, -c, "echo nope; exit 1"]}
      periodSeconds: 1
YAML
wait_event unready Unhealthy 2 60 && ok "Unhealthy collapsed with count >= 2" || fail "no repeated Unhealthy"
nl events unready >"$WORK/out" 2>&1
has "events: Unhealthy with the probe output" "$WORK/out" \
        '\(x[0-9]+ over [0-9a-z]+\) +Warning +Unhealthy +pod/unready-node1 +Readiness probe failed: nope'
rm "$MAN/unready.yaml"

# --- events -w: follows a pod until it is gone
# Sets rc to the exit status of background job PID once it ends, or to ""
# if it is still running after 30 s. Not in $(...): only this shell can
# wait for its own jobs.
wait_exit_30s() {
        local i
        rc=
        for ((i = 0; i < 300; i++)); do
                if ! kill -0 "$1" 2>/dev/null; then
                        wait "$1"
                        rc=$?
                        return
                fi
                sleep 0.1
        done
}

nl events -w good >"$WORK/watch" 2>&1 &
WATCH_PID=$!
wait_for "$WORK/watch" 'Started +pod/good-node1' || fail "events -w printed no list"
rm "$MAN/good.yaml"
wait_for "$WORK/watch" 'Normal +Killing +pod/good-node1 +Stopping container main$' 1 30 &&
        ok "events -w prints the Killing event as it comes" || fail "events -w: $(cat "$WORK/watch")"
# The pod's status and events files go with it; -w then ends by itself.
wait_exit_30s "$WATCH_PID"
[ "$rc" = 0 ] && ok "events -w ends when the pod is gone" || { kill "$WATCH_PID" 2>/dev/null; fail "events -w still running or rc=$rc"; }
[ ! -e "$RUN/status/events/$uid.json" ] && ok "events file removed with the pod" || fail "events file left"

# events -w of all pods ends when the status directory goes (an agent's
# run-dir removed), without waiting for a timeout of its own.
FAKE=$WORK/fake-run
mkdir -p "$FAKE/status"
"$NANOLET" events -w --run-dir "$FAKE" >"$WORK/watch2" 2>&1 &
WATCH_PID=$!
wait_for "$WORK/watch2" '^NAMESPACE' || fail "events -w on an empty dir printed no header"
rm -rf "$FAKE"
wait_exit_30s "$WATCH_PID"
[ "$rc" = 0 ] && ok "events -w ends when the status directory goes" || { kill "$WATCH_PID" 2>/dev/null; fail "events -w did not end (rc=$rc)"; }

# --- a broken manifest: shown until fixed, and until removed
cat <<YAML | put_manifest broken.yaml
apiVersion: v1
kind: Pod
spec: {containers: [{name: c}]}
metadata: {name: broken}
YAML
wait_for "$RUN/status/sources.json" 'broken\.yaml:3: spec\.containers\[0\]\.image: image is required' 1 30 &&
        ok "agent wrote the error to sources.json" || fail "sources.json: $(cat "$RUN/status/sources.json")"
python3 - "$RUN/status/sources.json" "$MAN/broken.yaml" <<'PY' && ok "sources.json entry: source, origin, since, items" || fail "sources.json: $(cat "$RUN/status/sources.json")"
import json, sys
e = json.load(open(sys.argv[1]))["errors"]
assert len(e) == 1 and e[0]["source"] == "file" and e[0]["origin"] == sys.argv[2], e
assert e[0]["since"].endswith("Z"), e
i = e[0]["items"][0]
assert i["file"] == sys.argv[2] and i["line"] == 3 and i["field"] == "spec.containers[0].image", i
assert i["message"] == "image is required" and i["reason"] == "invalid", i
PY
[ "$(stat -c %a "$RUN/status/sources.json")" = 600 ] && ok "sources.json is root's only" || fail "sources.json mode"
nl pods >"$WORK/out" 2>&1
has "pods: manifest errors" "$WORK/out" '^manifest errors:$'
has "pods: the broken manifest" "$WORK/out" 'broken\.yaml:3: spec\.containers\[0\]\.image: image is required'
sleep_pod broken | put_manifest broken.yaml
wait_for "$AGENT_LOG" "\"$MAN/broken\\.yaml\": problems resolved" 1 30 || fail "agent did not log the fix"
wait_for "$RUN/status/sources.json" '^\{"errors": ?\[\]\}$' 1 10 && ok "fixed: sources.json empty" || fail "sources.json after fix: $(cat "$RUN/status/sources.json")"
nl pods >"$WORK/out" 2>&1
! grep -q 'manifest errors' "$WORK/out" && ok "fixed: pods shows no manifest errors" || fail "pods after fix: $(cat "$WORK/out")"
check_field "fixed manifest's pod Running" broken 'p["status"]["phase"]' Running
# Broken again (the last good pod keeps running), then removed.
echo 'apiVersion: v1
kind: Pod
metadata: {name: broken' | put_manifest broken.yaml
wait_for "$RUN/status/sources.json" 'broken\.yaml' 1 30 && ok "broken again: shown" || fail "broken again not shown"
python3 - "$RUN/status/sources.json" <<'PY' && ok "syntax error reason" || fail "reason: $(cat "$RUN/status/sources.json")"
import json, sys
e = json.load(open(sys.argv[1]))["errors"]
assert e[0]["items"][0]["reason"] == "syntax", e
PY
rm "$MAN/broken.yaml"
wait_for "$AGENT_LOG" "\"$MAN/broken\\.yaml\": problems resolved" 2 30 || fail "agent did not log the removal"
wait_for "$RUN/status/sources.json" '^\{"errors": ?\[\]\}$' 1 10 && ok "removed: sources.json empty" || fail "sources.json after removal: $(cat "$RUN/status/sources.json")"

# --- teardown
rm -f "$MAN"/*.yaml
for ((i = 0; i < 250; i++)); do [ -z "$(ls "$RUN/status" 2>/dev/null | grep -vx sources.json | grep json)" ] && break; sleep 0.2; done
[ -z "$(ls "$RUN/status/events" 2>/dev/null)" ] && ok "no events files left" || fail "events files left: $(ls "$RUN/status/events")"
check_no_leftovers
stop_agent
finish
