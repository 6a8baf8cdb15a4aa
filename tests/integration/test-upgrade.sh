#!/usr/bin/env bash
# An upgrade must not restart pods: the agent of an earlier version (built
# here from this repository's history, at the last commit that named
# containers "<uid>-<name>-<attempt>") runs two pods and is killed; this
# version adopts both containers as they are (same IDs, same processes,
# restart count 0), and the next attempt of a container gets a 64-hex ID
# with a /var/log/containers link log shippers parse.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

# The last commit with the legacy container IDs.
UPGRADE_FROM=37a68729e5a2139c19628b0593384195539e43e8
SRC=$(cd "$TEST_DATA_DIR/.." && pwd)
if ! git -C "$SRC" cat-file -e "$UPGRADE_FROM^{commit}" 2>/dev/null; then
        fail "the repository's history (commit $UPGRADE_FROM) is needed to build the earlier agent"
        finish
fi
mkdir -p "$WORK/old"
git -C "$SRC" archive "$UPGRADE_FROM" | tar -x -C "$WORK/old"
if meson setup "$WORK/old/build" "$WORK/old" -Dtests=disabled -Dman=disabled >"$WORK/old-build.log" 2>&1 &&
        ninja -C "$WORK/old/build" nanolet >>"$WORK/old-build.log" 2>&1; then
        ok "built the earlier agent ($UPGRADE_FROM)"
else
        fail "building the earlier agent: $(tail -20 "$WORK/old-build.log")"
        finish
fi
OLD=$WORK/old/build/nanolet
NEW=$NANOLET
# The earlier agent puts its pods below a fixed cgroup root, /nanolet, and
# nothing removes that root: the cleanup does, when this test made it.
if ! compgen -G '/sys/fs/cgroup/*/nanolet' >/dev/null && [ ! -d /sys/fs/cgroup/nanolet ]; then
        TEST_CGROUP_ROOT=/nanolet
fi

load_test_image || { fail "test image"; finish; }
sleep_pod web | put_manifest web.yaml
sleep_pod db | put_manifest db.yaml
NANOLET=$OLD start_agent
for p in web db; do check_field "$p runs under the earlier agent" "$p" 'p["status"]["phase"]' Running 60; done
declare -A cid pid
for p in web db; do
        cid[$p]=$(pod_field "$p" 'p["status"]["containerStatuses"][0]["containerID"].split("://")[1]')
        pid[$p]=$(runc --root "$RUN/runc" state "${cid[$p]}" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
        uid=$(pod_field "$p" 'p["metadata"]["uid"]')
        [ "${cid[$p]}" = "$uid-main-0" ] && ok "$p: legacy ID ${cid[$p]}" || fail "$p: ID ${cid[$p]} is not the legacy scheme"
done
kill -9 "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || true
AGENT_PID=

NANOLET=$NEW start_agent --stop-pods-on-exit
expect "both containers adopted" "$AGENT_LOG" 'Adopted running container "main" of pod "(web|db)-node1' 2 30
for p in web db; do
        check_field "$p: same container after the upgrade" "$p" 'p["status"]["containerStatuses"][0]["containerID"]' "runc://${cid[$p]}" 10
        check_field "$p: not restarted" "$p" 'p["status"]["containerStatuses"][0]["restartCount"]' 0 10
        kill -0 "${pid[$p]}" && ok "$p: its process survived the upgrade" || fail "$p: pid ${pid[$p]} gone"
done

# The next attempt is named by the new scheme; the legacy one is cleaned up.
kill -KILL "${pid[web]}"
check_field "web restarted" web 'p["status"]["containerStatuses"][0]["restartCount"] == 1 and "running" in p["status"]["containerStatuses"][0]["state"]' True 60
new=$(pod_field web 'p["status"]["containerStatuses"][0]["containerID"]')
[[ $new =~ ^runc://[0-9a-f]{64}$ ]] && ok "the new attempt's ID: $new" || fail "new attempt ID: $new"
check_field "lastState names the legacy container" web 'p["status"]["containerStatuses"][0]["lastState"]["terminated"]["containerID"]' "runc://${cid[web]}" 10
ls "$CLOGS" | grep -qE "^web-node1_default_main-[0-9a-f]{64}\.log$" && ok "a /var/log/containers link with the 64-hex ID" ||
        fail "links: $(ls "$CLOGS")"
uid=$(pod_field web 'p["metadata"]["uid"]')
[ "$(pod_runc_ids "$uid" | wc -l)" -le 2 ] && ok "no stray containers for web" || fail "web containers: $(pod_runc_ids "$uid")"

stop_agent
check_no_leftovers
finish
