#!/usr/bin/env bash
# A pod's logs go with the pod (docs/logs.md, "When logs are removed"): its
# <pod-logs-dir>/<ns>_<pod>_<uid> directory and its container-logs-dir links
# when the pod is removed or replaced by an edit (a new UID), also when the
# manifest went while the agent was down (kill -9); at start, log directories
# and links an earlier run left for pods that no longer exist are removed,
# while a running pod's current and previous logs (`logs -p`) stay, and
# nothing the agent did not make, nor anything a planted symlink points to,
# is touched.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

load_test_image || { fail "test image"; finish; }
start_agent

# pod_dirs NAME: the pod log directories of pod NAME, one a line.
pod_dirs() { find "$LOGS" -mindepth 1 -maxdepth 1 -name "default_$1-node1_*" -printf '%f\n'; }
# pod_links NAME: the container log links of pod NAME, one a line.
pod_links() { find "$CLOGS" -mindepth 1 -maxdepth 1 -name "$1-node1_default_*" -printf '%f\n'; }
# check_gone DESC NAME: nothing of NAME's logs is left.
check_gone() {
        local d l
        d=$(pod_dirs "$2") l=$(pod_links "$2")
        [ -z "$d$l" ] && ok "$1" || fail "$1: left $d $l"
}
# wait_gone N NAME: the agent logged "Pod NAME is gone" N times.
wait_gone() { wait_for "$AGENT_LOG" "Pod \"$2-node1_default\\([0-9a-f-]+\\)\" is gone" "$1" 60; }

# --- a container that failed once and runs now: logs -p has its first attempt
put_manifest again.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: again}
spec:
  terminationGracePeriodSeconds: 2
  volumes:
  - {name: d, emptyDir: {}}
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    volumeMounts: [{name: d, mountPath: /d}]
    command: [sh, -c, "if [ -e /d/once ]; then echo second attempt; exec sleep 3600; fi; touch /d/once; echo first attempt; exit 1"]
YAML

# --- three pods removed
for p in gone1 gone2 gone3; do sleep_pod $p | put_manifest $p.yaml; done
for p in gone1 gone2 gone3; do check_field "$p Running" $p 'p["status"]["phase"]' Running; done
[ "$(pod_dirs gone1 | wc -l) $(pod_links gone1 | wc -l)" = "1 1" ] &&
        ok "a running pod has one log directory and one link" ||
        fail "gone1: dirs $(pod_dirs gone1), links $(pod_links gone1)"
rm -f "$MAN"/gone[123].yaml
for p in gone1 gone2 gone3; do
        wait_gone 1 $p || fail "$p not gone"
        check_gone "removed pod $p: log directory and links gone" $p
done

# --- a manifest edited twice: each edit is a new pod (new UID)
sleep_pod edit | put_manifest edit.yaml
check_field "edit Running" edit 'p["status"]["phase"]' Running
for v in 1 2; do
        old_uid=$(pod_field edit 'p["metadata"]["uid"]')
        sleep_pod edit | sed "s/\"3600\"/\"360$v\"/" | put_manifest edit.yaml
        wait_gone $v edit || fail "edit $v: the old pod is not gone"
        check_field "edit $v: a new pod runs" edit "p['metadata']['uid'] != '$old_uid' and p['status']['phase'] == 'Running'" True
done
edit_uid=$(pod_field edit 'p["metadata"]["uid"]')
[ "$(pod_dirs edit)" = "default_edit-node1_$edit_uid" ] &&
        ok "edited twice: only the current pod's log directory" ||
        fail "edited twice: log directories $(pod_dirs edit | tr '\n' ' ') (current $edit_uid)"
links=$(pod_links edit)
[ "$(echo "$links" | wc -l)" = 1 ] && readlink "$CLOGS/$links" | grep -q "/default_edit-node1_$edit_uid/main/0.log$" &&
        ok "edited twice: one link, to the current pod" || fail "edited twice: links $links"

check_field "again restarted once and runs" again 'p["status"]["containerStatuses"][0]["restartCount"] == 1 and "running" in p["status"]["containerStatuses"][0]["state"]' True 60
again_uid=$(pod_field again 'p["metadata"]["uid"]')
[ "$(pod_links again | wc -l)" = 2 ] && ok "again: links to attempts 0 and 1" || fail "again links: $(pod_links again)"

# --- kill -9; the manifest of "down" goes while the agent is down, and what
# an earlier run may have left is planted
sleep_pod down | put_manifest down.yaml
check_field "down Running" down 'p["status"]["phase"]' Running
kill -9 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null || true; AGENT_PID=
rm -f "$MAN/down.yaml"
ghost=0123456789abcdef0123456789abcdef
mkdir -p "$LOGS/default_ghost-node1_$ghost/main" "$WORK/outside"
echo old >"$LOGS/default_ghost-node1_$ghost/main/0.log"
ln -s "$LOGS/default_ghost-node1_$ghost/main/0.log" "$CLOGS/ghost-node1_default_main-$ghost-main-0.log"
# a dangling link of ours: its pod was removed by an agent that left links
ln -s "$LOGS/default_ghost2-node1_$ghost/main/3.log" "$CLOGS/ghost2-node1_default_main-$ghost-main-3.log"
# a dead attempt's link of the running pod whose log file went
ln -s "$LOGS/default_again-node1_$again_uid/main/7.log" "$CLOGS/again-node1_default_main-$again_uid-main-7.log"
# planted links: a container with a hostPath of its log directory; another
# tool's links in the shared directory; a link of our shape into the outside
echo keep >"$WORK/outside/keep"
ln -s "$WORK/outside" "$LOGS/default_ghost-node1_$ghost/main/evil"
ln -s "$WORK/outside/keep" "$LOGS/default_ghost-node1_$ghost/main/1.log"
ln -s "$WORK/outside" "$LOGS/default_evil-node1_$ghost"
ln -s /nonexistent/x.log "$CLOGS/foreign_kube-system_fluentd-abc.log"
ln -s "$WORK/outside/keep" "$CLOGS/evil-node1_default_main-$ghost-main-0.log"
touch "$CLOGS/plain.log"

start_agent
wait_gone 1 down || fail "down not gone"
expect "orphaned log directory removal logged" "$AGENT_LOG" \
        "Removed the log directory $LOGS/default_ghost-node1_$ghost, whose pod no longer exists" 1 20
check_gone "manifest removed while down: log directory and links gone" down
check_gone "orphaned log directory and link removed at start" ghost
check_gone "dangling link of a gone pod removed at start" ghost2
[ ! -L "$CLOGS/again-node1_default_main-$again_uid-main-7.log" ] &&
        ok "dangling link of a running pod's dead attempt removed" || fail "again's attempt 7 link left"
[ "$(cat "$WORK/outside/keep" 2>/dev/null)" = keep ] && ok "planted symlinks not followed" ||
        fail "the file a planted symlink points to was touched"
for f in "$LOGS/default_evil-node1_$ghost" "$CLOGS/foreign_kube-system_fluentd-abc.log" \
        "$CLOGS/evil-node1_default_main-$ghost-main-0.log" "$CLOGS/plain.log"; do
        [ -L "$f" ] || [ -f "$f" ] && ok "not ours, kept: ${f##*/}" || fail "removed: $f"
done
[ "$(pod_dirs edit)" = "default_edit-node1_$edit_uid" ] && [ "$(pod_links edit | wc -l)" = 1 ] &&
        ok "running pod's logs kept across the restart" || fail "edit: $(pod_dirs edit) $(pod_links edit)"
[ "$(pod_links again | wc -l)" = 2 ] && ok "again: both attempts' links kept" || fail "again links: $(pod_links again)"
nl logs again >"$WORK/cur" 2>&1 && grep -qx 'second attempt' "$WORK/cur" &&
        ok "logs: the current attempt after the restart" || fail "logs: $(cat "$WORK/cur")"
nl logs -p again >"$WORK/prev" 2>&1 && grep -qx 'first attempt' "$WORK/prev" &&
        ok "logs -p: the previous attempt after the restart" || fail "logs -p: $(cat "$WORK/prev")"

# --- everything removed: only what is not ours is left
rm -f "$MAN"/*.yaml
wait_gone 1 again || fail "again not gone"
wait_gone 3 edit || fail "edit not gone"
left=$(find "$LOGS" -mindepth 1 -maxdepth 1 ! -name "default_evil-node1_$ghost")
[ -z "$left" ] && ok "no pod log directories left" || fail "left in $LOGS: $left"
left=$(find "$CLOGS" -mindepth 1 -maxdepth 1 ! -name 'foreign_*' ! -name 'evil-*' ! -name plain.log)
[ -z "$left" ] && ok "no container log links left" || fail "left in $CLOGS: $left"
rm -f "$LOGS/default_evil-node1_$ghost"
check_no_leftovers
stop_agent
finish
