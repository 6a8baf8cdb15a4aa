#!/usr/bin/env bash
# nanolet's container monitor (nanolet-monitor, --container-monitor=nanolet)
# with real runc:
#  - hostile output: a container writes a 10 MiB line of NUL bytes without a
#    newline and 1 MiB of random junk; the agent and the monitor survive, every record
#    in the log is bounded (8 KiB of text, the rest "P" partial records that
#    `nanolet logs` joins), the monitor's memory stays small, and the agent's
#    rotation (1 MiB limit, 3 files) brings the log back under the limit;
#  - a tty container's output is logged as stdout (the pty master came over
#    the console socket), a stdin: true container keeps an open stdin
#    (`cat` keeps running), exit codes reach the status;
#  - switching monitors: a container started under conmon is adopted by an
#    agent running nanolet-monitor, and its exit code still comes from
#    conmon's exit file;
#  - a container that dies while its monitor is stopped, the monitor then
#    killed (no exit file): the exit is still recorded and the pod restarts.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

load_test_image || { fail "test image"; finish; }

# monitor_pid ID: the pid of the monitor of container ID.
monitor_pid() { cat "$RUN/conmon/$1/conmon.pid" 2>/dev/null; }
container_id() { pod_field "$1" 'p["status"]["containerStatuses"][0]["containerID"].split("//")[-1]'; }

# --- 1. under conmon: a container to hand over later
start_agent --container-monitor=conmon
sleep_pod handover | put_manifest handover.yaml
check_field "handover Running under conmon" handover 'p["status"]["phase"]' Running
hid=$(container_id handover)
mp=$(monitor_pid "$hid")
[ "$(cat "/proc/$mp/comm" 2>/dev/null)" = conmon ] && ok "handover's monitor is conmon" ||
        fail "handover's monitor $mp is $(cat "/proc/$mp/comm" 2>/dev/null)"
stop_agent

# --- 2. nanolet-monitor
start_agent --container-monitor=nanolet --container-log-max-size 1Mi --container-log-max-files 3 \
        --container-log-monitor-interval 1s
check_field "handover adopted (restartCount 0)" handover \
        'p["status"]["containerStatuses"][0]["restartCount"] == 0 and "running" in p["status"]["containerStatuses"][0]["state"]' True
[ "$(container_id handover)" = "$hid" ] && ok "same container after the switch" || fail "handover's container changed"

put_manifest hostile.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: hostile}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: junk
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, "head -c 10485760 /dev/zero; head -c 1048576 /dev/urandom; head -c 4096 /dev/urandom >&2; echo; echo done-marker; exec sleep 3600"]
YAML
put_manifest tty.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: tty}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: t, image: nanolet-test, imagePullPolicy: Never, tty: true,
     command: [sh, -c, "echo tty-hello; readlink /proc/self/fd/1; exec sleep 3600"]}
YAML
put_manifest stdin.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: stdin}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: s, image: nanolet-test, imagePullPolicy: Never, stdin: true, command: [cat]}
YAML
put_manifest exits.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: exits}
spec:
  restartPolicy: Never
  containers:
  - {name: e, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "echo bye; exit 7"]}
YAML

check_field "hostile Running" hostile 'p["status"]["phase"]' Running 60
hid2=$(container_id hostile)
mp=$(monitor_pid "$hid2")
[ "$(cat "/proc/$mp/comm" 2>/dev/null)" = nanolet-monitor ] && ok "hostile's monitor is nanolet-monitor" ||
        fail "hostile's monitor $mp is $(cat "/proc/$mp/comm" 2>/dev/null)"
dir=$(echo "$LOGS"/default_hostile-node1_*/junk)
for ((i = 0; i < 300; i++)); do
        nl logs hostile 2>/dev/null | grep -aq '^done-marker$' && break
        sleep 0.2
done
nl logs hostile >"$WORK/hostile.out" 2>"$WORK/err" || fail "nanolet logs hostile: $(cat "$WORK/err")"
grep -aq '^done-marker$' "$WORK/hostile.out" && ok "the line after the junk is logged" ||
        fail "no done-marker: $(tail -c 300 "$WORK/hostile.out" | od -c | tail -3)"
kill -0 "$AGENT_PID" 2>/dev/null && ok "agent alive after the burst" || fail "agent died"
kill -0 "$mp" 2>/dev/null && ok "monitor alive after the burst" || fail "monitor $mp died"
rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$mp/status" 2>/dev/null || echo 0)
# The ASan tree's monitor starts at ~5 MiB (the sanitizer's runtime and
# shadow); either bound stays below what holding the 11 MiB would take.
limit=4096
grep -q libasan "/proc/$mp/maps" 2>/dev/null && limit=10240
[ "${rss:-0}" -gt 0 ] && [ "$rss" -lt "$limit" ] && ok "monitor RSS after 11 MiB of output: $rss KiB" ||
        fail "monitor RSS $rss KiB"
# Every record of the plain files is well-formed and at most 8 KiB of text.
if out=$(python3 - "$dir" <<'PY' 2>&1
import os, re, sys
d = sys.argv[1]
rec = re.compile(rb"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}[+-]\d\d:\d\d (stdout|stderr) [PF] ")
n = longest = 0
for f in sorted(os.listdir(d)):
    if f.endswith(".gz") or f.endswith(".tmp"):
        continue
    for line in open(os.path.join(d, f), "rb").read().split(b"\n")[:-1]:
        m = rec.match(line)
        if not m:
            sys.exit(f"{f}: bad record {line[:80]!r}")
        n += 1
        longest = max(longest, len(line) - m.end())
if longest > 8192:
    sys.exit(f"a record of {longest} bytes")
print(f"{n} records, longest text {longest} bytes")
PY
); then ok "log records bounded ($out)"; else fail "log records: $out"; fi
# The rotation catches up: at most 3 files, the live one under the limit.
for ((i = 0; i < 150; i++)); do
        n=$(ls "$dir" | grep -cv '\.tmp$' || true)
        sz=$(stat -c %s "$dir/0.log" 2>/dev/null || echo 0)
        [ "$n" -le 3 ] && [ "$sz" -lt 1048576 ] && break
        sleep 0.2
done
[ "$n" -le 3 ] && [ "$sz" -lt 1048576 ] && ok "log back under the limit ($n files, live $sz bytes)" ||
        fail "log files: $(ls -l "$dir")"
grep -q "Failed to rotate" "$AGENT_LOG" && fail "agent: $(grep 'Failed to rotate' "$AGENT_LOG" | tail -1)" ||
        ok "no rotation errors"

check_field "tty Running" tty 'p["status"]["phase"]' Running 60
for ((i = 0; i < 150; i++)); do nl logs tty 2>/dev/null | grep -q tty-hello && break; sleep 0.2; done
nl logs tty >"$WORK/tty.out" 2>&1 || true
grep -q '^tty-hello' "$WORK/tty.out" && grep -q '^/dev/pts/' "$WORK/tty.out" &&
        ok "tty output logged ($(tr -d '\r' <"$WORK/tty.out" | tr '\n' ' '))" || fail "tty log: $(cat "$WORK/tty.out")"
tdir=$(echo "$LOGS"/default_tty-node1_*/t)
grep -q ' stdout F tty-hello' "$tdir/0.log" && ok "tty output is stdout" || fail "tty records: $(head -3 "$tdir/0.log")"

check_field "stdin: cat Running" stdin 'p["status"]["phase"]' Running 60
sleep 2 # cat would have ended at once on an empty stdin
check_field "stdin: cat still running, no restart" stdin \
        'p["status"]["containerStatuses"][0]["restartCount"] == 0 and "running" in p["status"]["containerStatuses"][0]["state"]' True

check_field "exit 7 recorded" exits 'p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"]' 7 60
check_field "exits: pod Failed" exits 'p["status"]["phase"]' Failed
nl logs exits 2>/dev/null | grep -q '^bye$' && ok "exits' output logged" || fail "exits log: $(nl logs exits 2>&1)"

# The conmon-started container, watched by conmon, still reports its exit.
hpid=$(runc --root "$RUN/runc" state "$hid" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
kill -KILL "$hpid"
check_field "handover's SIGKILL seen through conmon's exit file (137)" handover \
        'p["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"]' 137 60
check_field "handover restarted under nanolet-monitor" handover \
        'p["status"]["containerStatuses"][0]["restartCount"] == 1 and "running" in p["status"]["containerStatuses"][0]["state"]' True 60
hid3=$(container_id handover)
mp=$(monitor_pid "$hid3")
[ "$(cat "/proc/$mp/comm" 2>/dev/null)" = nanolet-monitor ] && ok "the restart runs under nanolet-monitor" ||
        fail "restart's monitor: $(cat "/proc/$mp/comm" 2>/dev/null)"

# --- 3. the agent dies: monitors keep running, the next agent adopts
kill -9 "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || true
AGENT_PID=
kill -0 "$mp" 2>/dev/null && ok "monitor survives the agent's kill -9" || fail "monitor died with the agent"
start_agent --container-monitor=nanolet
check_field "handover adopted after kill -9" handover \
        'p["status"]["containerStatuses"][0]["restartCount"] == 1 and "running" in p["status"]["containerStatuses"][0]["state"]' True

# --- 4. the container dies while its monitor is stopped, then the monitor is
# killed: no exit file is ever written. The agent sees the death as an event
# (the init's pidfd), keeps the container running while the monitor may
# still write the file, polls it, and once the monitor is gone records the
# exit without a code (137) and restarts it.
hid4=$(container_id handover)
mp=$(monitor_pid "$hid4")
cpid=$(runc --root "$RUN/runc" state "$hid4" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
kill -STOP "$mp"
kill -KILL "$cpid"
for ((i = 0; i < 300; i++)); do [ "$(awk '{print $3}' "/proc/$cpid/stat" 2>/dev/null)" = Z ] && break; sleep 0.1; done
[ "$(awk '{print $3}' "/proc/$cpid/stat" 2>/dev/null)" = Z ] && ok "the container is a zombie of its stopped monitor" ||
        fail "container $cpid: $(cat "/proc/$cpid/stat" 2>/dev/null)"
kill -KILL "$mp"
check_field "an exit without an exit file recorded (137) once the monitor is gone" handover \
        'p["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"] == 137 and p["status"]["containerStatuses"][0]["lastState"]["terminated"]["containerID"].endswith("'"$hid4"'")' True 60
check_field "handover restarted again" handover \
        'p["status"]["containerStatuses"][0]["restartCount"] == 2 and "running" in p["status"]["containerStatuses"][0]["state"]' True 60

rm -f "$MAN"/*.yaml
for ((i = 0; i < 250; i++)); do [ -z "$(ls "$RUN/status" 2>/dev/null | grep -vx sources.json | grep json)" ] && break; sleep 0.2; done
check_no_leftovers
# A monitor exits right after its exit file, which the agent may act on
# first: give the last ones a moment, then name what is left.
for ((i = 0; i < 300; i++)); do
        n=$(pgrep -fc "^[^ ]*nanolet-monitor .*$RUN" || true)
        [ "$n" = 0 ] && break
        sleep 0.1
done
[ "$n" = 0 ] && ok "no monitors left" ||
        fail "$n monitors left: $(for p in $(pgrep -f "^[^ ]*nanolet-monitor .*$RUN"); do
                echo "$p $(awk '{print $3}' /proc/$p/stat) $(ls -l /proc/$p/fd 2>/dev/null | tail -n +2 | awk '{print $NF}' | tr '\n' ' ')"; done)"
stop_agent
finish
