#!/usr/bin/env bash
# The CNI cache lives under the root dir (docs/internals/network.md), so a
# lease survives nothing the agent cannot release:
# - an upgrade from a layout that kept the cache in <run-dir>/cni: the
#   agent, restarted beside its running pod, moves the file to
#   <root-dir>/cni/results (a symlink planted there is removed, its target
#   untouched) and adopts the pod without a CHECK failure;
# - a simulated reboot (every container, mount, netns and cgroup gone, the
#   run dir wiped) after which the pod's checkpoint and manifest are gone
#   too: the orphan sweep finds the cached result, runs the DEL, and
#   host-local's lease file in its (persistent) data dir disappears.
# Traffic: none.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

load_test_image || { fail "test image"; finish; }
LEASES=$WORK/leases/nanolet-test
CACHE=$ROOT/cni/results

start_agent
sleep_pod web 1 | put_manifest web.yaml
check_field "web Running" web 'p["status"]["phase"]' Running 60
uid=$(pod_field web 'p["metadata"]["uid"]')
ip=$(pod_field web 'p["status"]["podIP"]')
[ -f "$CACHE/$uid.json" ] && ok "CNI cache in the root dir" || fail "no $CACHE/$uid.json: $(ls -R "$ROOT/cni" "$RUN" 2>&1 | head -20)"
[ ! -e "$RUN/cni" ] && ok "nothing of CNI in the run dir" || fail "run dir has $(ls -R "$RUN/cni")"
grep -qs "$uid" "$LEASES/$ip" && ok "host-local lease $ip names the pod" || fail "no lease for $ip: $(ls "$LEASES")"

# --- an older layout's cache, moved on start
stop_agent
mkdir -p "$RUN/cni"
mv "$CACHE/$uid.json" "$RUN/cni/$uid.json"
echo "not a cache" >"$WORK/target"
ln -s "$WORK/target" "$RUN/cni/00000000-0000-0000-0000-00000000beef.json"
l0=$(wc -l <"$AGENT_LOG")
start_agent --v=4
expect "the agent moved the old cache" "$AGENT_LOG" "Moved 1 CNI cache files from $RUN/cni to $CACHE"
expect "web adopted" "$AGENT_LOG" 'Adopted running container "main" of pod "web-node1'
[ -f "$CACHE/$uid.json" ] && [ ! -e "$RUN/cni" ] && ok "the cache moved, the old dir is gone" \
        || fail "cache: $(ls -la "$CACHE" "$RUN/cni" 2>&1)"
[ "$(cat "$WORK/target")" = "not a cache" ] && [ ! -e "$CACHE/00000000-0000-0000-0000-00000000beef.json" ] \
        && ok "the planted symlink was removed, not followed" || fail "symlink handling"
# The adoption CHECKs with the cached result: a lost cache fails it.
expect "CNI CHECK of the adopted pod passed" "$AGENT_LOG" 'web-node1.*CNI CHECK passed'
tail -n +$((l0 + 1)) "$AGENT_LOG" >"$WORK/log2"
! grep -E "^W.*(CHECK|$CACHE)" "$WORK/log2" && ok "no warning about the CHECK or the cache" || fail "warnings after the move"

# --- a simulated reboot: what the kernel loses goes, the disk stays
kill -9 "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || true
AGENT_PID=
for id in $(runc --root "$RUN/runc" list -q 2>/dev/null); do
        runc --root "$RUN/runc" kill "$id" KILL 2>/dev/null || true
        runc --root "$RUN/runc" delete --force "$id" 2>/dev/null || true
done
# The container monitors leave once their container is gone.
monitors() {
        local p exe
        for p in /proc/[0-9]*; do
                exe=$(readlink "$p/exe" 2>/dev/null) || continue
                case ${exe##*/} in
                conmon | nanolet-monitor) ;;
                *) continue ;;
                esac
                { tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -qF -- "$RUN" && echo "${p#/proc/}"
        done
        return 0
}
for ((i = 0; i < 150; i++)); do [ -z "$(monitors)" ] && break; sleep 0.2; done
[ -z "$(monitors)" ] && ok "container monitors gone" || fail "monitors left: $(monitors)"
for m in $(awk -v w="$WORK" 'index($2, w) == 1 {print $2}' /proc/mounts | sort -r); do
        umount -l "$m" || fail "cannot unmount $m"
done
for m in $(agent_pod_cgroups); do
        find "$m" -depth -type d -exec rmdir {} \; 2>/dev/null || true
done
rm -rf "$RUN" && mkdir -p "$RUN"
rm -rf "$ROOT/pods/$uid" "$MAN/web.yaml"
[ -f "$LEASES/$ip" ] && [ -f "$CACHE/$uid.json" ] && ok "after the reboot: the lease and the cache are still there" \
        || fail "lease or cache lost: $(ls "$LEASES" "$CACHE")"

start_agent
expect "the orphan sweep DELs the cached sandbox" "$AGENT_LOG" "Released the network of sandbox $uid"
[ ! -e "$LEASES/$ip" ] && ok "host-local's lease $ip is released" || fail "lease $ip left: $(cat "$LEASES/$ip")"
[ ! -e "$CACHE/$uid.json" ] && ok "the cache entry is gone" || fail "cache left: $(ls "$CACHE")"
stop_agent
check_no_leftovers
finish
