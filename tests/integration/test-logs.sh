#!/usr/bin/env bash
# Container logs end to end: a container writing numbered lines fast has its
# log rotated by the agent through conmon's control FIFO (small size limit,
# three files), older files gzipped; `nanolet logs` reads across the files
# without a torn, lost or repeated line, --tail and -f included; a
# crash-looping container keeps only its last exited attempt and the current
# one.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

load_test_image || { fail "test image"; finish; }
start_agent --container-log-max-size 64Ki --container-log-max-files 3 \
        --container-log-monitor-interval 1s

put() { # put FILE: stdin -> manifest (temp + rename)
        cat >"$MAN/.$1.tmp"
        mv "$MAN/.$1.tmp" "$MAN/$1"
}

# check_seq DESC FILE [MIN_LINES] [cut]: every line is "seq <n> <padding>",
# the numbers consecutive (a gap would be a lost line, a repeat a
# duplicate). "cut": the client was killed, its last output line may be
# unfinished.
check_seq() {
        local out
        if out=$(python3 - "$2" "${3:-1}" "${4:-}" <<'PY' 2>&1
import re, sys
lines = open(sys.argv[1]).read().split("\n")
if lines and (lines[-1] == "" or sys.argv[3] == "cut"):
    lines.pop()
if len(lines) < int(sys.argv[2]):
    sys.exit(f"only {len(lines)} lines")
prev = None
for i, l in enumerate(lines):
    m = re.fullmatch(r"seq (\d+) x{60}", l)
    if not m:
        sys.exit(f"line {i + 1} is torn or foreign: {l[:100]!r}")
    n = int(m.group(1))
    if prev is not None and n != prev + 1:
        sys.exit(f"line {i + 1}: {n} after {prev}")
    prev = n
print(f"{len(lines)} lines, {lines[0].split()[1]}..{prev}")
PY
        ); then ok "$1 ($out)"; else fail "$1: $out"; fi
}

last_seq() { tail -n 1 "$1" | awk '{print $2}'; }

# --- a fast writer
pad=$(printf 'x%.0s' $(seq 60))
put chatty.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: chatty}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: talk
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, "i=0; while true; do i=\$((i+1)); echo \"seq \$i $pad\"; [ \$((i % 50)) = 0 ] && sleep 0.05; done"]
YAML
check_field "chatty Running" chatty 'p["status"]["phase"]' Running
dir=$(echo "$LOGS"/default_chatty-node1_*/talk)

# Several rotations: a compressed file appears, and at every look the
# directory holds at most 3 log files, at most one of them rotated and
# still plain (the newest, which conmon may still be finishing).
gz_seen=0 over=0 plain_over=0 samples=0
for ((i = 0; i < 300; i++)); do
        files=$(cd "$dir" && ls -1 2>/dev/null | grep -E '^0\.log' | grep -v '\.tmp$' || true)
        n=$(printf '%s\n' "$files" | grep -c . || true)
        plain=0
        for f in $(printf '%s\n' "$files" | grep -E '^0\.log\.[0-9]{8}-[0-9]{6}$' || true); do
                [ -e "$dir/$f.gz" ] || plain=$((plain + 1))
        done
        [ "$n" -gt 3 ] && { over=$((over + 1)); echo "too many files: $files" >&2; }
        [ "$plain" -gt 1 ] && { plain_over=$((plain_over + 1)); echo "uncompressed: $files" >&2; }
        printf '%s\n' "$files" | grep -q '\.gz$' && gz_seen=$((gz_seen + 1))
        samples=$((samples + 1))
        [ "$gz_seen" -ge 10 ] && break
        sleep 0.2
done
[ "$gz_seen" -gt 0 ] && ok "rotated logs are gzipped ($gz_seen of $samples looks)" \
        || fail "no .gz file after $samples looks: $(ls -l "$dir")"
[ "$over" = 0 ] && ok "never more than 3 log files (containerLogMaxFiles)" || fail "$over looks with more than 3 files"
[ "$plain_over" = 0 ] && ok "only the newest rotated file is left uncompressed" \
        || fail "$plain_over looks with older uncompressed files"
sz=$(stat -c %s "$dir/0.log" 2>/dev/null || echo 0)
[ "$sz" -lt $((8 * 1024 * 1024)) ] && ok "live file kept small ($sz bytes)" || fail "live file grew to $sz bytes"
grep -q "Failed to rotate" "$AGENT_LOG" && fail "agent: $(grep 'Failed to rotate' "$AGENT_LOG" | tail -1)" || ok "no rotation errors logged"

# --- nanolet logs reads every file, oldest first, as one stream
nl logs chatty >"$WORK/all" 2>"$WORK/err" || fail "nanolet logs: $(cat "$WORK/err")"
check_seq "nanolet logs: lines across rotated, gzipped and live files in order" "$WORK/all" 1000
first=$(head -n 1 "$WORK/all" | awk '{print $2}')
[ "${first:-0}" -gt 1 ] && ok "the oldest lines were rotated away (first is $first)" || fail "nothing was deleted: first line $first"
# A rotation may have just emptied the live file, or renamed it before
# conmon reopened a new one (kubelet's rotation has the same window): wait
# for its next line.
for ((i = 0; i < 300; i++)); do
        live_last=$(awk '$4 == "seq" {n = $5} END {print n}' "$dir/0.log" 2>/dev/null || true)
        [ -n "$live_last" ] && break
        sleep 0.1
done
all_last=$(last_seq "$WORK/all")
[ -n "$all_last" ] && [ -n "$live_last" ] && [ "$all_last" -le "$live_last" ] && [ "$all_last" -ge $((live_last - 20000)) ] \
        && ok "nanolet logs ends with the newest lines ($all_last, live file at $live_last)" \
        || fail "last line $all_last, live file at $live_last"

nl logs --tail 5 chatty >"$WORK/tail" 2>"$WORK/err" || fail "logs --tail: $(cat "$WORK/err")"
[ "$(wc -l <"$WORK/tail")" = 5 ] && ok "--tail 5 prints 5 lines" || fail "--tail 5: $(cat "$WORK/tail")"
check_seq "--tail 5 lines in sequence" "$WORK/tail" 5
[ "$(last_seq "$WORK/tail")" -ge "$all_last" ] && ok "--tail shows the newest lines" \
        || fail "--tail is older than the earlier read ($all_last): $(cat "$WORK/tail")"
# more lines than the live file holds: the rest comes from rotated files
want=$(($( (wc -l <"$dir/0.log") 2>/dev/null || echo 0) + 200))
nl logs --tail "$want" chatty >"$WORK/tail" 2>"$WORK/err" || fail "logs --tail $want: $(cat "$WORK/err")"
[ "$(wc -l <"$WORK/tail")" = "$want" ] && ok "--tail $want prints $want lines" || fail "--tail $want: $(wc -l <"$WORK/tail") lines"
check_seq "--tail $want reaches back into rotated files" "$WORK/tail" "$want"

# --- -f goes on across rotations
rotated() { (cd "$dir" && ls | grep -E '^0\.log\.' | grep -v '\.tmp$' | sed 's/\.gz$//' | sort -u | tr '\n' ' ' || true); }
# wait_rotation SET: until the rotated files differ from SET (a rotation
# happened), as the agent's rotation leaves them; prints the new set.
wait_rotation() {
        local now i
        for ((i = 0; i < 300; i++)); do
                now=$(rotated)
                [ -n "$now" ] && [ "$now" != "$1" ] && break
                sleep 0.2
        done
        echo "$now"
}
before=$(rotated)
nl logs -f --tail 1 chatty >"$WORK/follow" 2>"$WORK/err" &
fpid=$!
PIDS+=("$fpid")
now=$(wait_rotation "$before")
wait_rotation "$now" >/dev/null # at least one more rotation while following
# A rotation may have just emptied the live file: wait for its first line.
for ((i = 0; i < 300; i++)); do
        live_first=$(awk '$4 == "seq" {print $5; exit}' "$dir/0.log" 2>/dev/null || true)
        [ -n "$live_first" ] && break
        sleep 0.1
done
# the follower is done once it printed a line of the live file (or never will)
for ((i = 0; i < 300; i++)); do
        followed=$(grep -E "^seq [0-9]+ x{60}\$" "$WORK/follow" | tail -n 1 | awk '{print $2}')
        [ "${followed:-0}" -ge "${live_first:-1}" ] && break
        sleep 0.2
done
kill "$fpid" 2>/dev/null || true
wait "$fpid" 2>/dev/null || true
check_seq "logs -f across rotations: nothing lost or repeated" "$WORK/follow" 100 cut
followed=$(grep -E "^seq [0-9]+ x{60}\$" "$WORK/follow" | tail -n 1 | awk '{print $2}')
[ "${followed:-0}" -ge "${live_first:-1}" ] && ok "logs -f reached the file created by the rotation" \
        || fail "follow stopped at $followed, the live file started at $live_first"

# --- a crash loop keeps the last exited attempt and the current one
put crashy.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: crashy}
spec:
  containers:
  - {name: crash, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "echo run at $(date +%s); exit 3"]}
YAML
# back-off 10 s, 20 s: attempt 2 after about 30 s
check_field "crashy restarted twice" crashy 'p["status"]["containerStatuses"][0]["restartCount"] >= 2' True 120
cdir=$(echo "$ROOT"/pods/*/containers/crash)
ldir=$(echo "$LOGS"/default_crashy-node1_*/crash)
rc=$(pod_field crashy 'p["status"]["containerStatuses"][0]["restartCount"]')
for ((i = 0; i < 150; i++)); do
        [ "$(ls "$cdir" | sort -n | tr '\n' ' ')" = "$((rc - 1)) $rc " ] && break
        sleep 0.2
done
[ "$(ls "$cdir" | sort -n | tr '\n' ' ')" = "$((rc - 1)) $rc " ] && ok "attempt dirs: only $((rc - 1)) and $rc (restartCount $rc)" \
        || fail "attempt dirs at restartCount $rc: $(ls "$cdir" | tr '\n' ' ')"
[ "$(ls "$ldir" | sort -n | tr '\n' ' ')" = "$((rc - 1)).log $rc.log " ] && ok "log files: only attempts $((rc - 1)) and $rc" \
        || fail "log files at restartCount $rc: $(ls "$ldir" | tr '\n' ' ')"
n=$(ls "$CLOGS" | grep -c '^crashy-node1_default_crash-' || true)
[ "$n" -le 2 ] && ok "at most 2 /var/log/containers links for crashy ($n)" || fail "links: $(ls "$CLOGS")"
nl logs -p crashy >"$WORK/prev" 2>&1 && grep -q '^run at ' "$WORK/prev" && ok "logs -p shows the previous attempt" \
        || fail "logs -p: $(cat "$WORK/prev")"

# --- remove everything and check nothing is left
rm -f "$MAN"/*.yaml
for ((i = 0; i < 250; i++)); do [ -z "$(ls "$RUN/status" 2>/dev/null | grep -vx sources.json | grep json)" ] && break; sleep 0.2; done
check_no_leftovers
[ -z "$(find "$LOGS" -name '*.tmp')" ] && ok "no temporary log files left" || fail "tmp files: $(find "$LOGS" -name '*.tmp')"
stop_agent
finish
