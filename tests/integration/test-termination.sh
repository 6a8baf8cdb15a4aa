#!/usr/bin/env bash
# Termination messages as kubelet records them: the last 4096 bytes of a
# longer file, bytes that are not UTF-8 replaced by U+FFFD, a sparse 10 GiB
# file read only at its end; FallbackToLogsOnError's log tail (the last 80
# lines, at most their last 2048 bytes) when the file says nothing and the
# container failed, the file when it does; in each case the exit code (3) and reason are
# recorded, in the status and in the attempt's exit record the agent reads
# back after a restart.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

load_test_image || { fail "test image"; finish; }
start_agent

put_manifest term.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: term}
spec:
  restartPolicy: Never
  containers:
  - name: long
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, "{ head -c 5000 /dev/zero | tr '\\0' A; head -c 4997 /dev/zero | tr '\\0' B; printf END; } >/dev/termination-log; exit 3"]
  - name: badutf8
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, "printf 'bad \\377\\376 utf8 \\303\\050 end' >/dev/termination-log; exit 3"]
  - name: sparse
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, "truncate -s 10737418236 /dev/termination-log && printf last >>/dev/termination-log; exit 3"]
  - name: fallback
    image: nanolet-test
    imagePullPolicy: Never
    terminationMessagePolicy: FallbackToLogsOnError
    command: [sh, -c, "awk 'BEGIN { for (i = 1; i <= 100; i++) print \"line \" i }'; printf 'no newline'; exit 3"]
  - name: fallbacklong
    image: nanolet-test
    imagePullPolicy: Never
    terminationMessagePolicy: FallbackToLogsOnError
    command: [sh, -c, "echo first; head -c 3000 /dev/zero | tr '\\0' L; echo; exit 3"]
  - name: fallbackfile
    image: nanolet-test
    imagePullPolicy: Never
    terminationMessagePolicy: FallbackToLogsOnError
    command: [sh, -c, "echo from the log; printf 'from the file' >/dev/termination-log; exit 3"]
  - name: fallbackok
    image: nanolet-test
    imagePullPolicy: Never
    terminationMessagePolicy: FallbackToLogsOnError
    command: [sh, -c, "echo all is well"]
YAML
check_field "term Failed" term 'p["status"]["phase"]' Failed 60

nl pods -o json >"$WORK/pods.json" 2>"$WORK/err" || fail "pods -o json: $(cat "$WORK/err")"
check() { # check DESC CONTAINER PYEXPR-on-message
        python3 - "$WORK/pods.json" "$2" "$3" <<'PY' && ok "$1" || fail "$1"
import json, sys
items = {p["metadata"]["name"]: p for p in json.load(open(sys.argv[1]))["items"]}
cs = {c["name"]: c for c in items["term-node1"]["status"]["containerStatuses"]}
t = cs[sys.argv[2]]["state"]["terminated"]
m = t.get("message", "")
ok = t["exitCode"] == 3 and t["reason"] == "Error" and eval(sys.argv[3])
if not ok:
    print(f"{sys.argv[2]}: exitCode {t['exitCode']} reason {t['reason']} message {m[:80]!r}...{m[-20:]!r} ({len(m)})", file=sys.stderr)
sys.exit(0 if ok else 1)
PY
}
check "10000-byte message: exit 3, its last 4096 bytes" long 'm == "B" * 4093 + "END"'
check "invalid UTF-8: exit 3, bytes replaced by U+FFFD" badutf8 'm == "bad \ufffd\ufffd utf8 \ufffd( end"'
check "sparse 10 GiB file: exit 3, only its end read" sparse 'm == "\ufffd" * 4092 + "last"'
check "FallbackToLogsOnError: the log's last 80 lines" fallback \
        'm == "".join(f"line {i}\n" for i in range(22, 101)) + "no newline"'
check "FallbackToLogsOnError: at most the log's last 2048 bytes" fallbacklong 'm == "L" * 2047 + "\n"'
check "FallbackToLogsOnError: the file when it says something" fallbackfile 'm == "from the file"'
python3 - "$WORK/pods.json" <<'PY' && ok "FallbackToLogsOnError: no message when the container succeeded" || fail "fallbackok: $(cat "$WORK/pods.json")"
import json, sys
items = {p["metadata"]["name"]: p for p in json.load(open(sys.argv[1]))["items"]}
cs = {c["name"]: c for c in items["term-node1"]["status"]["containerStatuses"]}
t = cs["fallbackok"]["state"]["terminated"]
sys.exit(0 if t["exitCode"] == 0 and t["reason"] == "Completed" and "message" not in t else 1)
PY

# The exit record the agent reads back after a restart.
for c in long badutf8 sparse; do
        rec=$(echo "$ROOT"/pods/*/containers/$c/0/attempt.json)
        python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["exitCode"]==3 and r["reason"]=="Error" and r.get("message") else 1)' "$rec" 2>/dev/null \
                && ok "$c: exit record has code 3 and the message" || fail "$c: exit record $(head -c 200 "$rec" 2>/dev/null)"
done
grep -q "cannot record its exit" "$AGENT_LOG" && fail "agent: $(grep 'cannot record its exit' "$AGENT_LOG" | head -1)" \
        || ok "no exit record failed"

rm -f "$MAN"/*.yaml
for ((i = 0; i < 250; i++)); do [ -z "$(ls "$RUN/status" 2>/dev/null | grep -vx sources.json | grep json)" ] && break; sleep 0.2; done
check_no_leftovers
stop_agent
finish
