#!/usr/bin/env bash
# A pod whose container start waits on a stalled registry pull is removed:
# the pod goes at once (its status file is removed) instead of waiting for
# the transfer, and the pull helper is killed once no pod waits for it any
# more, leaving no blob committed and no partial download after the next
# store open. Two pods share the pull: removing the first leaves the pull
# running for the second. The registry is
# fake-registry.py on 127.0.0.1 (plain HTTP, --insecure-registry), which
# sends half of each layer and then nothing: every step is observed in its
# log (STALL, CLOSED) and in the agent's status files, not by timing.
# Then an image that vanishes between its pull and the container's creation:
# a second fake registry holds the pull mid-layer until the test lets it go;
# the agent is stopped (SIGSTOP) while the pull helper finishes and commits,
# the image's index entry is removed (nanolet's own `image rm` refuses: a pod
# names the image), the agent goes on (SIGCONT): the
# container start finds the pulled image gone and the pod's status says so
# (ErrImagePull "was pulled but is no longer in the local store"); the next
# attempt pulls again and runs.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

"$TEST_DATA_DIR/make-test-image.sh" "$WORK/images" >/dev/null || { fail "make-test-image.sh"; finish; }
PORT=$(free_ports 1)
FREG=127.0.0.1:$PORT
FLOG=$WORK/fake-registry.log
: >"$FLOG"
python3 "$(dirname "$0")/fake-registry.py" --port "$PORT" --archive "$WORK/images/nanolet-test.tar" \
        --log "$FLOG" --stall 2>>"$WORK/fake-registry.err" &
PIDS+=($!)
wait_for "$FLOG" '^LISTENING' || { fail "fake registry did not start: $(cat "$WORK/fake-registry.err")"; finish; }
HPORT=$(free_ports 1)
HREG=127.0.0.1:$HPORT
HLOG=$WORK/hold-registry.log
: >"$HLOG"
python3 "$(dirname "$0")/fake-registry.py" --port "$HPORT" --archive "$WORK/images/nanolet-test.tar" \
        --log "$HLOG" --hold-until "$WORK/release" 2>>"$WORK/hold-registry.err" &
PIDS+=($!)
wait_for "$HLOG" '^LISTENING' || { fail "hold registry did not start: $(cat "$WORK/hold-registry.err")"; finish; }
LAYER=$(python3 - "$WORK/images/nanolet-test.tar" <<'PY'
import json, sys, tarfile
t = tarfile.open(sys.argv[1])
idx = json.load(t.extractfile("index.json"))
m = json.load(t.extractfile("blobs/sha256/" + idx["manifests"][0]["digest"][7:]))
print(m["layers"][0]["digest"][7:])
PY
)

# pod NAME: a pod on the stalling registry's image.
pod() {
        cat <<YAML | put_manifest "$1.yaml"
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: "$FREG/test/stall:v1", imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}
YAML
}
# gone NAME [TIMEOUT]: until pod NAME's status file is removed.
gone() {
        local i
        for ((i = 0; i < ${2:-30} * 5; i++)); do
                pod_json "$1" >/dev/null || return 0
                sleep 0.2
        done
        return 1
}
# The agent's pull helpers (internal-helper image-pull), one PID a line.
pull_helpers() {
        local p
        for p in $(pgrep -P "$AGENT_PID" || true); do
                tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q ' image-pull ' && echo "$p"
        done
        return 0
}

pod one
pod two
start_agent --stop-pods-on-exit --insecure-registry "$FREG" --insecure-registry "$HREG"
expect "the layer transfer stalls" "$FLOG" '^STALL ' 1 60
check_field "one waits for the image" one 'p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]' ContainerCreating 30
check_field "two waits for the image" two 'p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]' ContainerCreating 30
helpers=$(pull_helpers)
[ "$(echo "$helpers" | grep -c .)" = 1 ] && ok "one pull helper for both pods ($helpers)" ||
        fail "pull helpers: '$helpers'"
n=$(grep -c "GET /v2/test/stall/manifests/v1 200" "$FLOG" || true)
[ "$n" = 1 ] && ok "one manifest GET" || fail "$n manifest GETs: $(cat "$FLOG")"

# --- the first pod goes; the pull goes on for the second
rm -f "$MAN/one.yaml"
gone one && ok "one is gone while the pull stalls" || fail "one still has a status: $(pod_json one)"
grep -q 'Pod "one-node1_default(.*)" is gone' "$AGENT_LOG" && ok "the agent logged one gone" || fail "no 'gone' log line for one"
[ -n "$helpers" ] && kill -0 "$helpers" 2>/dev/null && ok "the shared pull still runs for two" ||
        fail "the pull helper went with the first pod"
grep -q '^CLOSED ' "$FLOG" && fail "the stalled transfer was closed: $(cat "$FLOG")" || ok "the transfer is still open"
check_field "two still waits" two 'p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]' ContainerCreating 5

# --- the last pod goes: the pull is cancelled
rm -f "$MAN/two.yaml"
gone two && ok "two is gone while the pull stalls" || fail "two still has a status: $(pod_json two)"
expect "the registry saw the transfer closed" "$FLOG" '^CLOSED ' 1 30
if [ -n "$helpers" ]; then
        for ((i = 0; i < 300; i++)); do kill -0 "$helpers" 2>/dev/null || break; sleep 0.1; done
        kill -0 "$helpers" 2>/dev/null && fail "pull helper $helpers still runs" || ok "the pull helper is gone"
fi
[ -z "$(pull_helpers)" ] && ok "no pull helper left" || fail "pull helpers left: $(pull_helpers)"
[ ! -e "$ROOT/images/blobs/sha256/$LAYER" ] && ok "the stalled layer was not committed" ||
        fail "layer $LAYER committed"
nl image ls >"$WORK/ls" 2>&1 || true
grep -q "test/stall" "$WORK/ls" && fail "image listed: $(cat "$WORK/ls")" || ok "no image recorded"
# No pull holds the killed helper's partial any more: that store open removed it.
ls "$ROOT"/images/.tmp-partial-* >/dev/null 2>&1 && fail "partials left: $(ls -la "$ROOT"/images/.tmp-partial-*)" ||
        ok "no partial download left by the cancelled pull"
grep -q 'no longer waiting for image' "$AGENT_LOG" && ok "the agent logged the abandoned wait" ||
        fail "no 'no longer waiting' log line"

# --- the pulled image vanishes before the container is created
cat <<YAML | put_manifest three.yaml
apiVersion: v1
kind: Pod
metadata: {name: three}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: "$HREG/test/vanish:v1", imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}
YAML
expect "the pull of three's image is held mid-layer" "$HLOG" '^HOLD ' 1 60
helper=$(pull_helpers)
[ -n "$helper" ] && ok "three's pull helper runs ($helper)" || fail "no pull helper for three"
kill -STOP "$AGENT_PID"
touch "$WORK/release"
# The helper finishes the pull, commits and exits; with its parent stopped
# it stays a zombie, unreaped, its result unread.
for ((i = 0; i < 300; i++)); do
        st=$(awk '{print $3}' "/proc/$helper/stat" 2>/dev/null || echo gone)
        [ "$st" = Z ] || [ "$st" = gone ] && break
        sleep 0.1
done
nl image ls >"$WORK/ls" 2>&1 || true
if grep -q "$HREG/test/vanish" "$WORK/ls"; then
        ok "the pull committed the image while the agent was stopped"
        # nanolet's own `image rm` and image GC refuse an image a pod names
        # (its checkpoint); what removes it here is a tool that does not
        # know about pods: the index entry goes, as a manual edit or another
        # program using the store would do it (temp file + rename).
        nl image rm "$HREG/test/vanish:v1" >"$WORK/rm.out" 2>&1 && fail "image rm removed an image a pod names" ||
                ok "image rm refuses: $(grep -o 'is in use by .*' "$WORK/rm.out")"
        python3 - "$ROOT/images/index.json" "$HREG/test/vanish:v1" <<'PY' && ok "index entry removed behind the agent's back" || fail "index edit"
import json, os, sys
path, name = sys.argv[1], sys.argv[2]
idx = json.load(open(path))
keep = [m for m in idx["manifests"] if m.get("annotations", {}).get("org.opencontainers.image.ref.name") != name]
assert len(keep) == len(idx["manifests"]) - 1
idx["manifests"] = keep
open(path + ".edit", "w").write(json.dumps(idx))
os.rename(path + ".edit", path)
PY
else
        fail "the held pull did not commit (helper state $st): $(cat "$WORK/ls") $(cat "$HLOG")"
fi
kill -CONT "$AGENT_PID"
check_field "three: the pulled image is gone, the status says so" three \
        'p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] in ("ErrImagePull", "ImagePullBackOff") and "image \"'"$HREG"'/test/vanish:v1\" was pulled but is no longer in the local store (removed before the container was created" in p["status"]["containerStatuses"][0]["state"]["waiting"]["message"]' True 30
nl events three-node1 >"$WORK/ev" 2>&1 || true
grep -q 'Error: ErrImagePull: image "'"$HREG"'/test/vanish:v1" was pulled but is no longer in the local store' "$WORK/ev" &&
        ok "event Failed with the vanished-image message" || fail "no vanished-image event: $(cat "$WORK/ev")"
check_field "three runs once the next attempt pulled the image again" three 'p["status"]["phase"]' Running 60
n=$(grep -c "GET /v2/test/vanish/manifests/v1 200" "$HLOG" || true)
[ "$n" = 2 ] && ok "the image was pulled twice" || fail "$n manifest GETs for three: $(cat "$HLOG")"
rm -f "$MAN/three.yaml"
gone three && ok "three is gone" || fail "three still has a status"
stop_agent
check_no_leftovers
finish
