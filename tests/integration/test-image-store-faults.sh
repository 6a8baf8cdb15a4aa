#!/usr/bin/env bash
# The image store after years unattended (docs/images.md, "Partial
# downloads" and "When index.json is damaged").
# Partial downloads: a registry that declares a 2 GiB layer and closes the
# connection after 50 MiB (fake-registry.py --claim-size --cut) fails the
# pull, from the CLI and from the agent's pull helper, and leaves no
# images/.tmp-partial-* behind; a pull helper killed mid-layer has its
# partial removed by the agent; partials planted while no pull runs count in
# the imageFs usage of /stats/summary and go at the agent's start and in an
# image GC pass. A connection that breaks once is continued with Range in
# the same pull.
# index.json: damaged each way (missing, empty, garbage, another JSON type,
# another version's, a symlink, a directory) while the agent is stopped, and
# once while it runs: a new pod of the loaded image starts, the agent's log
# names index.json and the problem, the bad file is kept aside (one).
# Missing index + `nanolet image prune`: the running pod's blobs stay.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

"$TEST_DATA_DIR/make-test-image.sh" "$WORK/images" >/dev/null || { fail "make-test-image.sh"; finish; }
IMAGES=$ROOT/images
# Eviction's thresholds out of the way: the disk under /tmp may be full.
EV=(--eviction-hard 'nodefs.available<1%,imagefs.available<1%')
partials() { find "$IMAGES" -maxdepth 1 -name '.tmp-partial-*' | wc -l; }
# The agent's pull helpers (internal-helper image-pull), one PID a line.
pull_helpers() {
        local p
        for p in $(pgrep -P "$AGENT_PID" || true); do
                tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -q ' image-pull ' && echo "$p"
        done
        return 0
}
# start ARGS...: start_agent, until this start's own "nanolet starting" line
# (the log holds the earlier runs' too).
start() {
        local n
        n=$(count_lines "$AGENT_LOG" 'nanolet starting')
        start_agent "$@"
        wait_for "$AGENT_LOG" 'nanolet starting' $((n + 1)) || fail "the agent did not start"
}
# fake_registry NAME ARGS...: starts fake-registry.py; sets PORT_<NAME>.
fake_registry() {
        local name=$1 port
        port=$(free_ports 1)
        : >"$WORK/$name.log"
        python3 "$(dirname "$0")/fake-registry.py" --port "$port" --archive "$WORK/images/nanolet-test.tar" \
                --log "$WORK/$name.log" "${@:2}" 2>>"$WORK/$name.err" &
        PIDS+=($!)
        wait_for "$WORK/$name.log" '^LISTENING' || { fail "$name registry: $(cat "$WORK/$name.err")"; finish; }
        eval "PORT_$name=$port"
}
fake_registry liar --claim-size $((2 << 30)) --cut $((50 << 20))
fake_registry hold --hold-until "$WORK/release"
fake_registry flaky --cut-first 4096
LIAR=127.0.0.1:$PORT_liar HOLD=127.0.0.1:$PORT_hold FLAKY=127.0.0.1:$PORT_flaky

# --- the lying registry, from the CLI
if nl image pull --insecure-registry "$LIAR" "$LIAR/test/liar:v1" >"$WORK/out" 2>&1; then
        fail "the pull from the lying registry succeeded"
else
        grep -qE "transfer closed with [0-9]+ bytes remaining|the registry sent [0-9]+ of 2147483648 bytes" "$WORK/out" &&
                ok "the pull failed: $(tail -1 "$WORK/out")" ||
                fail "pull error: $(cat "$WORK/out")"
fi
grep -q '^CUT ' "$WORK/liar.log" && ok "the registry cut the layer" || fail "no CUT in the registry's log"
[ "$(partials)" = 0 ] && ok "no partial download left by the failed CLI pull" ||
        fail "partials left: $(ls -la "$IMAGES"/.tmp-partial-*)"

# --- the lying registry, from the agent's pull helper
# (The store holds no layer yet: a blob in the store is never downloaded.)
RO_PORT=$(free_ports 1)
RO=http://127.0.0.1:$RO_PORT
start --insecure-registry "$LIAR" --insecure-registry "$HOLD" \
        "${EV[@]}"
cat <<YAML | put_manifest liar.yaml
apiVersion: v1
kind: Pod
metadata: {name: liar}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: "$LIAR/test/liar:v2", imagePullPolicy: Always, command: [sleep, "3600"]}
YAML
check_field "the pod's pull failed" liar \
        'p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] in ("ErrImagePull", "ImagePullBackOff")' True 60
n=$(partials)
[ "$n" = 0 ] && ok "no partial download left by the agent's failed pull" || fail "$n partials left by the agent's pull"
rm -f "$MAN/liar.yaml"

# --- a pull helper killed mid-layer: the agent removes its partial
cat <<YAML | put_manifest held.yaml
apiVersion: v1
kind: Pod
metadata: {name: held}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: "$HOLD/test/held:v1", imagePullPolicy: IfNotPresent, command: [sleep, "3600"]}
YAML
expect "the pull is held mid-layer" "$WORK/hold.log" '^HOLD ' 1 60
[ "$(partials)" -ge 1 ] && ok "the held pull has its partial download" || fail "no partial while the pull is held"
# The pull fetches the config beside the layer. Once the config is in, the
# held layer's partial is the pull's only one, and the kill leaves exactly
# that for the sweep.
layer=$(sed -n 's/^HOLD sha256://p' "$WORK/hold.log" | head -n 1)
only_layer_partial() {
        [ "$(find "$IMAGES" -maxdepth 1 -name '.tmp-partial-*' -printf '%f\n')" = ".tmp-partial-$layer" ]
}
for ((i = 0; i < WAIT_MIN_S * 10; i++)); do
        only_layer_partial && break
        sleep 0.1
done
only_layer_partial && ok "the held layer's partial is the pull's only one" ||
        fail "partials while the pull is held: $(ls -A "$IMAGES")"
helper=$(pull_helpers)
[ -n "$helper" ] && kill -9 $helper
# The next pull comes after the image back-off (10 s): nothing makes a new
# partial before the sweep's line appears.
expect "the agent removed the killed pull's partial" "$AGENT_LOG" \
        'Removed 1 partial registry download\(s\) of image pulls that ended' 1 10
[ "$(partials)" = 0 ] && ok "no partial left by the killed pull" || fail "partials left after the helper was killed"
rm -f "$MAN/held.yaml"
touch "$WORK/release"
stop_agent

# --- a connection that breaks once: continued with Range in the same pull
if nl image pull --insecure-registry "$FLAKY" "$FLAKY/test/flaky:v1" >"$WORK/out" 2>&1; then
        ok "the pull over a connection that broke once succeeded"
        grep -q "resuming" "$WORK/out" && ok "it resumed the layer" || fail "no resume: $(cat "$WORK/out")"
        grep -q " 206$" "$WORK/flaky.log" && ok "the registry served the rest (206)" ||
                fail "no 206 in the registry's log: $(cat "$WORK/flaky.log")"
else fail "flaky pull: $(cat "$WORK/out")"; fi
[ "$(partials)" = 0 ] && ok "no partial left by the resumed pull" || fail "partials left after the flaky pull"

load_test_image || { fail "load the test image"; finish; }
start --read-only-port "$RO_PORT" "${EV[@]}"

# --- planted partials count in imageFs usage
put_manifest keep.yaml < <(sleep_pod keep)
check_field "keep runs" keep 'p["status"]["phase"]' Running 60
imagefs() { curl -s --max-time 30 "$RO/stats/summary" | python3 -c 'import json,sys; print(json.load(sys.stdin)["node"]["runtime"]["imageFs"].get("usedBytes", 0))' 2>/dev/null || echo 0; }
before=0
for ((i = 0; i < 60; i++)); do before=$(imagefs); [ "$before" -gt 0 ] && break; sleep 1; done
head -c $((32 << 20)) /dev/urandom >"$IMAGES/.tmp-partial-$(printf '%064d' 1)"
after=$before
for ((i = 0; i < 60; i++)); do
        after=$(imagefs)
        [ "$after" -ge $((before + (30 << 20))) ] && break
        sleep 1
done
[ "$after" -ge $((before + (30 << 20))) ] && ok "imageFs usage counts the planted partial ($before -> $after)" ||
        fail "imageFs usage $before -> $after: the 32 MiB partial is not counted"
stop_agent

# --- planted partials go at the agent's start
head -c $((1 << 20)) /dev/urandom >"$IMAGES/.tmp-partial-$(printf '%064d' 2)"
[ "$(partials)" = 2 ] || fail "planted partials: $(partials)"
start --image-gc-high-threshold 1 --image-gc-low-threshold 0 --image-minimum-gc-age 0 \
        "${EV[@]}"
[ "$(partials)" = 0 ] && ok "the agent's start removed the planted partials" || fail "partials after the start: $(partials)"
grep -q 'Removed 2 partial registry download(s) of pulls that ended' "$AGENT_LOG" && ok "the agent logged it" ||
        fail "no log line for the partials removed at the start"

# --- a partial planted while the agent runs goes in an image GC pass
head -c $((1 << 20)) /dev/urandom >"$IMAGES/.tmp-partial-$(printf '%064d' 3)"
expect "image GC removed the planted partial" "$AGENT_LOG" \
        'Image GC: removed 1 partial registry download\(s\) no pull owned' 1 40
[ "$(partials)" = 0 ] && ok "no partial after the image GC pass" || fail "partials after image GC: $(partials)"
check_field "keep still runs" keep 'p["status"]["phase"]' Running 5
stop_agent

# --- index.json damaged each way while the agent is stopped
for damage in missing empty garbage array other-version symlink directory; do
        rm -rf "$IMAGES/index.json"
        case $damage in
        missing) problem='is missing' ;;
        empty)
                problem='is empty'
                : >"$IMAGES/index.json" ;;
        garbage)
                problem='is not valid JSON'
                printf '\x7fELF\x01 \r\n{{' >"$IMAGES/index.json" ;;
        array)
                problem='is a JSON array'
                echo '[]' >"$IMAGES/index.json" ;;
        other-version)
                problem='has a schemaVersion other than 2'
                echo '{"schemaVersion":3,"images":{}}' >"$IMAGES/index.json" ;;
        symlink)
                problem='is a symbolic link'
                echo '{"schemaVersion":2,"manifests":[]}' >"$WORK/elsewhere.json"
                ln -s "$WORK/elsewhere.json" "$IMAGES/index.json" ;;
        directory)
                problem='is a directory'
                mkdir "$IMAGES/index.json" ;;
        esac
        start "${EV[@]}"
        expect "index.json $damage: the agent's log names it" "$AGENT_LOG" \
                "images/index\.json $problem.*Rebuilt it from the store" 1 10
        put_manifest "new-$damage.yaml" < <(sleep_pod "new-$damage")
        check_field "index.json $damage: a new pod of the loaded image runs" "new-$damage" 'p["status"]["phase"]' Running 60
        stop_agent
done
[ "$(find "$IMAGES" -maxdepth 1 -name 'index.json.corrupt-*' | wc -l)" = 1 ] &&
        ok "one damaged index.json kept aside" || fail "kept aside: $(ls "$IMAGES")"
[ "$(cat "$WORK/elsewhere.json")" = '{"schemaVersion":2,"manifests":[]}' ] && ok "the symlink's target is untouched" ||
        fail "the symlink's target changed"

# --- damaged while the agent runs
start "${EV[@]}"
rm -f "$IMAGES/index.json"
printf 'not json' >"$IMAGES/index.json"
put_manifest late.yaml < <(sleep_pod late)
check_field "damaged while running: a new pod of the loaded image runs" late 'p["status"]["phase"]' Running 60
grep -q 'images/index\.json is not valid JSON' "$AGENT_LOG" && ok "the agent's log names it" ||
        fail "no log line for the index damaged while running"

# --- a missing index, then prune: the running pods' blobs stay
blobs_before=$(ls "$IMAGES/blobs/sha256" | sort)
rm -f "$IMAGES/index.json"
nl image prune >"$WORK/prune" 2>&1 || fail "prune: $(cat "$WORK/prune")"
blobs_after=$(ls "$IMAGES/blobs/sha256" | sort)
[ -n "$blobs_before" ] && [ "$blobs_before" = "$blobs_after" ] && ok "prune after a missing index kept the running pods' blobs" ||
        fail "blobs before: $blobs_before; after: $blobs_after"
nl image inspect nanolet-test >/dev/null 2>&1 && ok "the image keeps its tag" || fail "nanolet-test no longer resolves"
put_manifest last.yaml < <(sleep_pod last)
check_field "a new pod of the image runs after the prune" last 'p["status"]["phase"]' Running 60
[ "$(runc --root "$RUN/runc" list -q | wc -l)" -ge 2 ] && ok "the running containers are still there" ||
        fail "runc containers: $(runc --root "$RUN/runc" list -q)"
stop_agent
finish
