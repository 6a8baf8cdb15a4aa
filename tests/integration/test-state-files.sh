#!/usr/bin/env bash
# Every state file the agent reads back or rewrites, tampered four ways plus
# one from another version (docs/internals/state-files.md): missing, empty, garbage, a
# symlink to a file outside the agent's dirs, a valid JSON object of an
# unknown shape. After each tampering the agent is killed (-9) and started
# again; it must come up, follow no link (the target keeps its bytes and
# mtime, its secret shows nowhere), keep every running container (same IDs
# and PIDs, no second one) and name each file it found damaged in a warning.
# Files that do not depend on each other are tampered in one round.
#
# STATE_FILES_GROUPS (default: all) limits the groups: agent (sandbox
# records, exit files, the files the agent only writes), cni (its CNI cache),
# images (the image store's index and last-used marks), checkpoints (pod.json,
# attempt.json).
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

load_test_image || { fail "test image"; finish; }
start_agent

sleep_pod cni | put_manifest cni.yaml
put_manifest hostnet.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: hostnet}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 2
  containers:
  - {name: main, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
YAML
for p in cni hostnet; do
        check_field "$p Running" "$p" 'p["status"]["phase"] == "Running" and all("running" in c["state"] for c in p["status"]["containerStatuses"])' True 60
done
CNI_UID=$(pod_field cni 'p["metadata"]["uid"]')
HOST_UID=$(pod_field hostnet 'p["metadata"]["uid"]')
CNI_IP=$(pod_field cni 'p["status"]["podIP"]')
[ -n "$CNI_IP" ] && ok "cni pod has IP $CNI_IP" || fail "cni pod has no IP"
cid_of() { pod_field "$1" 'p["status"]["containerStatuses"][0]["containerID"].split("://")[1]'; }
CNI_CID=$(cid_of cni)
HOST_CID=$(cid_of hostnet)

# The symlinks' target: valid JSON of every shape a reader could want, so
# a reader that followed it would find something to use and to show.
SECRET="canary-$RANDOM$RANDOM-secret"
CANARY=$WORK/outside/canary.json
mkdir -p "$WORK/outside"
cat >"$CANARY" <<JSON
{"network": true, "podIPs": ["10.99.99.99"], "config": {"cniVersion": "1.0.0", "name": "$SECRET", "plugins": [{"type": "$SECRET"}]}, "uid": "$SECRET", "name": "$SECRET", "namespace": "default", "source": "file", "origin": "$SECRET", "manifest": {"kind": "$SECRET"}, "startedAt": 1, "exitCode": 0, "manifests": [], "secret": "$SECRET"}
JSON
touch -d '2001-02-03 04:05:06' "$CANARY"
canary_sum() { stat -c '%s %Y' "$CANARY"; sha256sum <"$CANARY"; }
CANARY_SUM=$(canary_sum)

# "<pod uid> <runc id> <pid> <status>" for every runc container, sorted.
snapshot() {
        runc --root "$RUN/runc" list -f json 2>/dev/null | python3 -c '
import json, re, sys
for c in sorted(json.load(sys.stdin) or [], key=lambda c: c["id"]):
    m = re.search(r"/pods/([^/]+)/", c["bundle"])
    print(m.group(1) if m else "?", c["id"], c["pid"], c["status"])'
}
snapshot >"$WORK/before"
[ "$(grep -c running "$WORK/before")" = 2 ] && ok "two running containers" || fail "snapshot: $(cat "$WORK/before")"

# One image in the store: its manifest digest's hex names its last-used mark.
IMAGE_HEX=$(find "$ROOT/images/last-used" -type f -printf '%f\n' 2>/dev/null | head -1)

# tamper WAY FILE: one file, one way.
tamper() {
        local way=$1 f=$2
        mkdir -p "$(dirname "$f")"
        rm -f "$f"
        case $way in
        missing) ;;
        empty) : >"$f" ;;
        garbage) printf '\x00\xff{"network": tr\x01\n%s\n' "$(head -c 64 /dev/urandom | base64 -w0)" >"$f" ;;
        symlink) ln -s "$CANARY" "$f" ;;
        version) printf '{"version": 99, "kind": "FromTheFuture", "items": [{"x": 1}]}\n' >"$f" ;;
        esac
}

# The files of each group: "FILE EXPECT", EXPECT one of
#   warn          the agent names the file in a warning
#   warn+rewrite  that, and it writes the file again (regular, valid JSON)
#   warn-present  the file is absent while all is well (a running
#                 container's exit file): not removed, a warning otherwise
#   rewrite       the agent writes the file again, without reading it
#   client        the agent writes it later; the client must not follow it
group_files() {
        case $1 in
        agent)
                echo "$RUN/sandboxes/$CNI_UID.json warn+rewrite"
                echo "$RUN/sandboxes/$HOST_UID.json warn+rewrite"
                echo "$RUN/exits/$CNI_CID warn-present"
                echo "$RUN/exits/$HOST_CID warn-present"
                echo "$RUN/status/$CNI_UID.json rewrite"
                echo "$RUN/status/$HOST_UID.json rewrite"
                echo "$RUN/status/sources.json rewrite"
                echo "$RUN/node.json rewrite"
                echo "$RUN/node-conditions.json rewrite"
                echo "$RUN/status/events/$CNI_UID.json client"
                ;;
        cni)
                echo "$ROOT/cni/results/$CNI_UID.json warn+rewrite"
                ;;
        images)
                echo "$ROOT/images/index.json warn"
                if [ -n "$IMAGE_HEX" ]; then echo "$ROOT/images/last-used/$IMAGE_HEX client"; fi
                ;;
        checkpoints)
                echo "$ROOT/pods/$CNI_UID/pod.json warn"
                echo "$ROOT/pods/$HOST_UID/pod.json warn"
                local a
                for a in "$ROOT/pods/$CNI_UID"/containers/main/*/attempt.json "$ROOT/pods/$HOST_UID"/containers/main/*/attempt.json; do
                        [ -e "$a" ] || continue
                        echo "$a warn"
                done
                ;;
        esac
}

# Whether the agent logged a warning (or error) naming FILE since line FROM.
warned() {
        tail -n +"$2" "$AGENT_LOG" | grep -E '^[WE][0-9]{4} ' | grep -qF -- "$1"
}

# Everything the client shows and the agent wrote must be free of the secret.
secret_shown() {
        local out
        out=$(tail -n +"$1" "$AGENT_LOG"
                cat "$RUN"/status/*.json "$RUN"/node*.json 2>/dev/null
                nl pods -o json 2>&1
                nl pods 2>&1
                nl events 2>&1
                nl inspect cni 2>&1
                nl node 2>&1) || true
        grep -qF -- "$SECRET" <<<"$out"
}

adoptions=0
# round GROUP WAY: kill -9, tamper GROUP's files WAY, start, check.
round() {
        local group=$1 way=$2 f expect from line files tag="[$1/$2]"
        files=$(group_files "$group")
        kill -9 "$AGENT_PID"
        wait "$AGENT_PID" 2>/dev/null || true
        AGENT_PID=
        while read -r f expect; do
                [ -n "$f" ] || continue
                case $expect in
                warn-present) [ "$way" = missing ] && continue ;;
                esac
                tamper "$way" "$f"
        done <<<"$files"
        # what a write interrupted by the kill leaves: its temporary file
        local temps=
        if [ "$group" = agent ]; then
                temps="$RUN/status/$CNI_UID.json.tmp.Q1w2E3 $RUN/sandboxes/$HOST_UID.json.tmp.Q1w2E3 $RUN/node.json.tmp.Q1w2E3"
                for f in $temps; do echo partial >"$f"; done
        fi
        from=$(($(wc -l <"$AGENT_LOG") + 1))
        start_agent || { fail "$tag agent did not start"; return; }
        adoptions=$((adoptions + 2))
        # Both pods adopted again (the log line of each adoption), then their
        # status written afresh, as after every restart.
        if ! wait_for "$AGENT_LOG" 'Adopted running container "main" of pod "(cni|hostnet)-node1' "$adoptions" 20 >/dev/null 2>&1; then
                fail "$tag both running containers adopted"
                adoptions=$(count_lines "$AGENT_LOG" 'Adopted running container "main" of pod "(cni|hostnet)-node1')
        fi
        for p in cni hostnet; do
                wait_field "$p" 'p["status"]["phase"]' Running 20 >/dev/null 2>&1 ||
                        fail "$tag $p Running after the restart"
        done
        # A second container or a restart shows in runc and in the status
        # within the sync that adopted; a second for its runc create.
        sleep 1
        snapshot >"$WORK/after"
        if diff -u "$WORK/before" "$WORK/after" >"$WORK/diff"; then
                ok "$tag same containers, same PIDs, none added"
        else
                fail "$tag containers changed: $(cat "$WORK/diff")"
                cp "$WORK/after" "$WORK/before" # judge the next round on its own
        fi
        for p in cni hostnet; do
                [ "$(cid_of "$p")" = "$(awk -v u="$([ $p = cni ] && echo "$CNI_UID" || echo "$HOST_UID")" '$1 == u {print $2}' "$WORK/before")" ] ||
                        fail "$tag $p's status names another container: $(cid_of "$p")"
        done
        [ "$(pod_field cni 'p["status"]["podIP"]')" = "$CNI_IP" ] || fail "$tag cni pod's IP changed: $(pod_field cni 'p["status"].get("podIP")')"
        for f in $temps; do
                [ ! -e "$f" ] && ok "$tag temporary file $f removed" || fail "$tag $f left"
        done
        [ "$(canary_sum)" = "$CANARY_SUM" ] && ok "$tag symlink target untouched" || fail "$tag the symlink target changed"
        secret_shown "$from" && fail "$tag the symlink target's content was read and shown" || ok "$tag nothing of the symlink target shown"
        while read -r f expect; do
                [ -n "$f" ] || continue
                case $expect in
                warn | warn+rewrite | warn-present)
                        if [ "$way" != missing ] || [ "$expect" != warn-present ]; then
                                warned "$f" "$from" && ok "$tag warning names $f" ||
                                        fail "$tag no warning names $f"
                        fi
                        ;;
                esac
                case $expect in
                rewrite | warn+rewrite)
                        for ((line = 0; line < 50; line++)); do
                                [ -f "$f" ] && [ ! -L "$f" ] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$f" 2>/dev/null && break
                                sleep 0.2
                        done
                        [ -f "$f" ] && [ ! -L "$f" ] && python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$f" 2>/dev/null &&
                                ok "$tag $f written again" || fail "$tag $f not written again"
                        ;;
                esac
        done <<<"$files"
}

GROUPS_RUN=${STATE_FILES_GROUPS:-agent cni images checkpoints}
for group in $GROUPS_RUN; do
        for way in missing empty garbage symlink version; do
                round "$group" "$way"
        done
done

# The pods still go cleanly, whatever their files went through.
rm -f "$MAN"/*.yaml
for ((i = 0; i < 150; i++)); do
        [ -z "$(ls "$RUN/status" 2>/dev/null | grep -vx sources.json | grep json)" ] && break
        sleep 0.2
done
check_no_leftovers
[ "$(canary_sum)" = "$CANARY_SUM" ] && ok "symlink target untouched at the end" || fail "the symlink target changed"
stop_agent
finish
