#!/usr/bin/env bash
# Text from outside cannot drive a terminal or forge a log line. A registry
# (fake-registry.py --deny) refuses a pull with an error body holding escape
# sequences (set the window title, clear the screen), a CR, a C1 CSI and a
# newline followed by a klog header ("W1128 00:00:00 all pods evicted"); a
# CNI plugin fails ADD with the same kind of message; a container writes it
# as its termination message and to its stdout; a manifest whose file name
# and pod name carry it is rejected. `nanolet events`, `inspect`, `pods`,
# `validate` and the agent's log show all of it escaped, one line each, while
# `inspect -o json` and the status files hold the exact text. `nanolet logs`
# prints the container's own output as it wrote it (as kubectl logs does),
# and that output cannot forge the CRI log file's framing. Last, `nanolet
# events` in a real terminal (tmux) leaves the pane's title alone.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

TMUX_SOCK=$WORK/tmux.sock
injection_cleanup() {
        if command -v tmux >/dev/null && [ -S "$TMUX_SOCK" ]; then
                tmux -S "$TMUX_SOCK" kill-server 2>/dev/null || true
        fi
        agent_cleanup
}
trap injection_cleanup EXIT

CNI_BIN=$WORK/cni-bin
mkdir -p "$CNI_BIN"
# The network's bridge plugin, hostile: ADD fails with a message that
# carries escape sequences and a forged log line (JSON-escaped on the wire,
# raw once decoded); anything else succeeds doing nothing (no interface was
# made).
cat >"$CNI_BIN/bridge" <<'SH'
#!/bin/sh
case "$CNI_COMMAND" in
ADD)
        printf '%s' '{"cniVersion":"1.0.0","code":11,"msg":"cni\u001b]0;pwned\u0007\u001b[2J\nW1128 00:00:00 all pods evicted\r\u009b31m"}'
        exit 1 ;;
VERSION)
        printf '%s' '{"cniVersion":"1.0.0","supportedVersions":["0.4.0","1.0.0"]}' ;;
esac
exit 0
SH
chmod +x "$CNI_BIN/bridge"
cp "$CNI_BIN/bridge" "$CNI_BIN/host-local"

# The registry's refusal: OSC 0 (window title), BEL, CSI 2J (clear screen),
# a newline and a klog header, CR, and U+009B (the C1 form of CSI).
HOSTILE=$'denied\e]0;pwned\a\e[2J\nW1128 00:00:00 all pods evicted\r\xc2\x9b31m'
printf '%s' "$HOSTILE" >"$WORK/deny.txt"
ESCAPED='denied\x1b]0;pwned\a\x1b[2J\nW1128 00:00:00 all pods evicted\r\u009b31m'

load_test_image || { fail "test image"; finish; }
PORT=$(free_ports 1)
FREG=127.0.0.1:$PORT
FLOG=$WORK/fake-registry.log
: >"$FLOG"
python3 "$(dirname "$0")/fake-registry.py" --port "$PORT" --archive "$WORK/images/nanolet-test.tar" \
        --log "$FLOG" --deny "$WORK/deny.txt" 2>>"$WORK/fake-registry.err" &
PIDS+=($!)
wait_for "$FLOG" '^LISTENING' || { fail "fake registry did not start: $(cat "$WORK/fake-registry.err")"; finish; }

cat <<YAML | put_manifest pull.yaml
apiVersion: v1
kind: Pod
metadata: {name: pull}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: "$FREG/test/denied:v1", imagePullPolicy: Always, command: [sleep, "3600"]}
YAML
# The termination message and the stdout carry the same; the second stdout
# line looks like a CRI log line of its own.
cat <<'YAML' | put_manifest term.yaml
apiVersion: v1
kind: Pod
metadata: {name: term}
spec:
  hostNetwork: true
  restartPolicy: Never
  terminationGracePeriodSeconds: 1
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, "printf 'out\\033]0;pwned\\007\\n2026-01-01T00:00:00.000000000Z stdout F forged\\n'; printf 'bye\\033]0;pwned\\007\\033[2J\\nW1128 00:00:00 all pods evicted\\r' >/dev/termination-log; exit 3"]
YAML
sleep_pod cni | put_manifest cni.yaml
# A file name and a pod name the validation refuses, its message quoting both.
cat <<'YAML' | put_manifest $'evil\e]0;pwned\a\nW1128 00:00:00 forged.yaml'
apiVersion: v1
kind: Pod
metadata: {name: "bad\e]0;pwned\a\e[2J\nW1128 00:00:00 all pods evicted"}
spec:
  containers:
  - {name: main, image: nanolet-test, command: [sleep, "3600"]}
YAML

start_agent --cni-bin-dir "$CNI_BIN" --insecure-registry "$FREG"

# wait_event NAME REASON: until pod NAME's events file has an event REASON.
wait_event() {
        local i uid
        for ((i = 0; i < 300; i++)); do
                uid=$(pod_field "$1" 'p["metadata"]["uid"]' || true)
                if [ -n "$uid" ] && python3 - "$RUN/status/events/$uid.json" "$2" 2>/dev/null <<'PY'; then
import json, sys
sys.exit(0 if any(e["reason"] == sys.argv[2] for e in json.load(open(sys.argv[1]))["items"]) else 1)
PY
                        return 0
                fi
                sleep 0.2
        done
        return 1
}
wait_event pull Failed && ok "the refused pull is an event" || fail "no Failed event for pull"
wait_event cni FailedCreatePodSandBox && ok "the failed CNI ADD is an event" ||
        fail "no FailedCreatePodSandBox event for cni"
check_field "term terminated" term 'p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"]' 3
wait_for "$RUN/status/sources.json" 'pwned' 1 30 >/dev/null || fail "the rejected manifest is not in sources.json"

# clean DESC FILE: no raw control character a terminal acts on (ESC, BEL,
# CR, C1 CSI) and no line that starts as a forged klog line.
clean() {
        local n
        n=$(grep -c -e $'\e' -e $'\a' -e $'\r' -e $'\xc2\x9b' "$2" || true)
        [ "$n" = 0 ] && ok "$1: no raw control characters" ||
                fail "$1: $n lines with raw control characters: $(cat -v "$2")"
        n=$(grep -cE '^W1128 00:00:00' "$2" || true)
        [ "$n" = 0 ] && ok "$1: no forged line" || fail "$1: forged lines: $(grep -E '^W1128 00:00:00' "$2" | cat -v)"
}
# has DESC FILE STRING: FILE holds STRING (fixed).
has() {
        grep -qF -- "$3" "$2" && ok "$1" || fail "$1: no '$3' in: $(cat -v "$2")"
}

nl events >"$WORK/events" 2>&1 || fail "nanolet events: $(cat "$WORK/events")"
clean "events" "$WORK/events"
has "events: the registry's words, escaped" "$WORK/events" "$ESCAPED"
has "events: the CNI plugin's words, escaped" "$WORK/events" \
        'cni\x1b]0;pwned\a\x1b[2J\nW1128 00:00:00 all pods evicted\r\u009b31m'

for p in pull cni term; do
        nl inspect "$p" >"$WORK/inspect-$p" 2>&1 || fail "nanolet inspect $p: $(cat "$WORK/inspect-$p")"
        clean "inspect $p" "$WORK/inspect-$p"
done
has "inspect: the refusal in the events section" "$WORK/inspect-pull" "$ESCAPED"
has "inspect: the termination message as JSON escapes it" "$WORK/inspect-term" \
        '"message": "bye\u001B]0;pwned\u0007\u001B[2J\nW1128 00:00:00 all pods evicted\r"'

nl pods >"$WORK/pods" 2>&1 || fail "nanolet pods: $(cat "$WORK/pods")"
clean "pods" "$WORK/pods"
has "pods: the rejected manifest's message, escaped" "$WORK/pods" \
        'bad\x1b]0;pwned\a\x1b[2J\nW1128 00:00:00 all pods evicted'
nl pods -o wide >"$WORK/pods-wide" 2>&1 || true
clean "pods -o wide" "$WORK/pods-wide"

"$NANOLET" validate "$MAN" >"$WORK/validate" 2>&1 || true
clean "validate" "$WORK/validate"
has "validate: the file name, escaped" "$WORK/validate" 'evil\x1b]0;pwned\a\nW1128 00:00:00 forged.yaml'

# --- JSON keeps the exact text
nl inspect pull -o json >"$WORK/pull.json" 2>/dev/null || fail "inspect -o json"
nl inspect term -o json >"$WORK/term.json" 2>/dev/null || fail "inspect -o json"
python3 - "$WORK/pull.json" "$WORK/term.json" "$HOSTILE" <<'PY' && ok "-o json holds the exact texts" || fail "-o json lost the texts"
import json, sys
pull, term, hostile = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), sys.argv[3]
assert any(hostile in e["message"] for e in pull["events"]), [e["message"] for e in pull["events"]]
msg = term["status"]["containerStatuses"][0]["state"]["terminated"]["message"]
assert msg == "bye\x1b]0;pwned\x07\x1b[2J\nW1128 00:00:00 all pods evicted\r", repr(msg)
PY

# --- the container's output: raw through `nanolet logs`, framing intact
printf 'out\e]0;pwned\a\n2026-01-01T00:00:00.000000000Z stdout F forged\n' >"$WORK/logs-want"
nl logs term >"$WORK/logs-got" 2>&1 || true
cmp -s "$WORK/logs-want" "$WORK/logs-got" && ok "logs: the container's output as written" ||
        fail "logs: $(cat -v "$WORK/logs-got")"
nl logs --timestamps term >"$WORK/logs-ts" 2>&1 || true
TS='[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+(Z|[+-][0-9:]+)'
n=$(grep -cE "^$TS " "$WORK/logs-ts" || true)
grep -qE "^$TS 2026-01-01T00:00:00.000000000Z stdout F forged\$" "$WORK/logs-ts" && [ "$n" = 2 ] &&
        ok "logs: the forged CRI line is the content of a real one" || fail "logs --timestamps: $(cat -v "$WORK/logs-ts")"
f=$(find "$LOGS" -path '*term*/main/*.log' | head -1)
n=$(grep -cvE "^$TS (stdout|stderr) [PF] " "$f" || true)
[ -n "$f" ] && [ "$n" = 0 ] && [ "$(grep -c . "$f")" = 2 ] && ok "CRI log file: two framed lines" ||
        fail "CRI log file $f: $(cat -v "$f" 2>/dev/null)"

# --- the agent's log: everything escaped, no forged line
clean "agent log" "$AGENT_LOG"
has "agent log: the registry's words, escaped" "$AGENT_LOG" "$ESCAPED"

# --- a real terminal: the title stays, the text shows escaped
if command -v tmux >/dev/null; then
        tmux -S "$TMUX_SOCK" -f /dev/null new-session -d -s inj -x 250 -y 50 \
                "$NANOLET events --run-dir $RUN >/dev/null; $NANOLET events --run-dir $RUN; echo EVENTS-DONE; sleep 600"
        for ((i = 0; i < 300; i++)); do
                tmux -S "$TMUX_SOCK" capture-pane -p -t inj >"$WORK/pane" 2>/dev/null || true
                grep -q EVENTS-DONE "$WORK/pane" && break
                sleep 0.1
        done
        title=$(tmux -S "$TMUX_SOCK" display-message -p -t inj '#{pane_title}')
        [ "$title" != pwned ] && ok "tmux: the pane title is unchanged ($title)" || fail "tmux: the pane title was set to '$title'"
        grep -qF 'pwned\a\x1b[2J' "$WORK/pane" && ok "tmux: the escaped text is on the screen" ||
                fail "tmux: pane: $(cat "$WORK/pane")"
        tmux -S "$TMUX_SOCK" kill-server 2>/dev/null || true
else
        echo "tmux not installed: terminal check left out"
fi

for p in pull.yaml term.yaml cni.yaml; do rm -f "$MAN/$p"; done
rm -f "$MAN"/evil*
stop_agent
finish
