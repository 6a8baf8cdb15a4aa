#!/usr/bin/env bash
# The agent survives what a daemon meets: its stderr is a
# pipe whose reader goes away (`nanolet serve | tee` then Ctrl-C, a log
# collector restarting), so the next log line would raise SIGPIPE; SIGHUP
# makes it rescan the manifest sources at once instead of killing it.
# Everything is observed through the state files: the agent's log is the
# broken pipe.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

# The log reader dies mid-test, so the cleanup learns the pods' UIDs from
# their directories.
signals_cleanup() {
        local u
        for u in $(ls "$ROOT/pods" 2>/dev/null); do
                echo "SyncLoop (ADD, \"file\"): \"pod($u)\"" >>"$AGENT_LOG"
        done
        agent_cleanup
}
trap signals_cleanup EXIT

load_test_image || { fail "test image"; finish; }

running='p["status"]["phase"] == "Running"'

mkfifo "$WORK/stderr"
cat "$WORK/stderr" >>"$AGENT_LOG" &
READER=$!
# No periodic rescan during the test: only inotify and SIGHUP find manifests.
"$NANOLET" serve --root-dir "$ROOT" --run-dir "$RUN" --pod-logs-dir "$LOGS" \
        --container-logs-dir "$CLOGS" --pod-manifest-path "$MAN" --cni-conf-dir "$CNI_CONF" \
        --hostname-override node1 --file-check-frequency 1h --stop-pods-on-exit \
        --read-only-port 0 --healthz-port 0 \
        >/dev/null 2>"$WORK/stderr" &
AGENT_PID=$!
wait_for "$AGENT_LOG" 'nanolet starting'

sleep_pod first | put_manifest first.yaml
check_field "first pod Running while the log is read" first "$running" True 60

kill "$READER"
wait "$READER" 2>/dev/null || true
# The agent logs SyncLoop (ADD) for this one into the reader-less pipe.
sleep_pod second | put_manifest second.yaml
check_field "second pod Running after the log reader went away" second "$running" True 60
kill -0 "$AGENT_PID" 2>/dev/null && ok "agent alive after writing into a broken pipe" ||
        fail "agent died writing into a broken pipe"

# A manifest inotify cannot see: a file system mounted over the watched
# directory (as a re-mounted NFS export would be). Only a rescan finds it.
mount -t tmpfs -o mode=0755 nanolet-test "$MAN"
for p in first second third; do sleep_pod $p >"$MAN/$p.yaml"; done
kill -HUP "$AGENT_PID" || fail "agent gone before SIGHUP"
check_field "SIGHUP: third pod (seen only by a rescan) Running" third "$running" True 60
kill -0 "$AGENT_PID" 2>/dev/null && ok "agent alive after SIGHUP" || fail "agent died of SIGHUP"
for p in first second; do
        check_field "$p pod still Running after the rescan" $p "$running" True 5
done

stop_agent
umount "$MAN"
check_no_leftovers
finish
