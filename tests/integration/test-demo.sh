#!/usr/bin/env bash
# The demo: its pods end on SIGTERM at once (busybox sh as
# PID 1 ignores signals it has no handler for, so without a trap every stop
# waited out the grace period and ended in SIGKILL), and contrib/demo.sh,
# when the agent died instead of stopping its pods, stops what the agent
# left before deleting its state.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

SRC=$(cd "$TEST_DATA_DIR/.." && pwd)
DEMO_STATE=
DEMO_PID=
pids=      # the demo's containers and conmon monitors, once known
demo_uids=

# alive PID: exists and is not a zombie.
alive() {
        local st
        st=$(awk '{print $3}' "/proc/$1/stat" 2>/dev/null) || return 1
        [ -n "$st" ] && [ "$st" != Z ]
}

# Processes whose command line names dir (conmon monitors, the agent).
procs_naming() {
        grep -lsF -- "$1/" /proc/[0-9]*/cmdline | cut -d/ -f3 | grep -vx "$$" || true
}

# Whatever the demo part left if the test failed half-way.
demo_cleanup() {
        local id m pid
        [ -n "$DEMO_PID" ] && kill -9 "$DEMO_PID" 2>/dev/null || true
        # What a broken demo.sh left running (its state may be gone).
        for pid in $pids; do alive "$pid" && kill -9 "$pid" 2>/dev/null || true; done
        for uid in $demo_uids; do
                echo "SyncLoop (ADD, \"file\"): \"demo($uid)\"" >>"$AGENT_LOG"
        done
        if [ -n "$DEMO_STATE" ] && [ -d "$DEMO_STATE" ]; then
                for id in $(runc --root "$DEMO_STATE/run/runc" list -q 2>/dev/null); do
                        runc --root "$DEMO_STATE/run/runc" kill "$id" KILL 2>/dev/null || true
                        runc --root "$DEMO_STATE/run/runc" delete --force "$id" 2>/dev/null || true
                done
                for pid in $(procs_naming "$DEMO_STATE"); do kill -9 "$pid" 2>/dev/null || true; done
                for m in $(awk -v s="$DEMO_STATE" 'index($2, s) == 1 {print $2}' /proc/mounts | sort -r); do
                        umount -l "$m" 2>/dev/null || true
                done
                for uid in $(ls "$DEMO_STATE/lib/pods" 2>/dev/null); do
                        echo "SyncLoop (ADD, \"file\"): \"demo($uid)\"" >>"$AGENT_LOG"
                done
                rm -rf "$DEMO_STATE"
        fi
        agent_cleanup
}
trap demo_cleanup EXIT

load_test_image || { fail "test image"; finish; }
"$NANOLET" image --root-dir "$ROOT" load "$WORK/images/nanolet-demo.tar" >/dev/null ||
        { fail "demo image"; finish; }

# --- 1. The demo pods stop through their SIGTERM handlers ------------------
start_agent --stop-pods-on-exit
for f in "$SRC"/manifests-example/*.yaml; do
        put_manifest "$(basename "$f")" <"$f"
done
ready='p["status"]["phase"] == "Running" and all(c["ready"] for c in p["status"]["containerStatuses"])'
for p in web hello greeter; do
        check_field "demo pod $p Running and ready" $p "$ready" True 90
done
stop_agent
# The agent's own record of each exit: code 0 (Completed) is the trap's
# `exit 0`; a container that ignored SIGTERM ends in SIGKILL, 137 (Error).
for pc in web:httpd hello:main greeter:greet; do
        line=$(grep -E "Container \"${pc#*:}\" of pod \"${pc%%:*}-node1_[^\"]*\" exited with code" "$AGENT_LOG" | tail -1)
        case $line in
        *"exited with code 0 (Completed)."*) ok "${pc%%:*}/${pc#*:} ended by its SIGTERM handler (exit 0)" ;;
        *) fail "${pc%%:*}/${pc#*:} did not end by its SIGTERM handler: ${line:-no exit recorded}" ;;
        esac
done
check_no_leftovers

# --- 2. contrib/demo.sh after the agent died --------------------------------
BUILD=$(dirname "$NANOLET")
if [ ! -f "$BUILD/build.ninja" ]; then
        echo "note: $NANOLET is not in a meson build directory; demo.sh part skipped"
        finish
fi
NANOLET_SKIP_DEPS=1 NANOLET_BUILD_DIR=$BUILD bash "$SRC/contrib/demo.sh" \
        --cni-conf-dir "$CNI_CONF" --hostname-override node1 >"$WORK/demo.out" 2>&1 &
DEMO_PID=$!
if ! wait_for "$WORK/demo.out" 'pods --root-dir ' 1 180; then
        fail "demo did not start its agent"
        finish
fi
DEMO_STATE=$(grep -oE 'pods --root-dir [^ ]+/lib ' "$WORK/demo.out" | head -1 | sed -E 's/^pods --root-dir (.*)\/lib $/\1/')
case $DEMO_STATE in
/tmp/nanolet-demo.*) ok "demo state in $DEMO_STATE" ;;
*) fail "cannot find the demo's state directory: '$DEMO_STATE'"; finish ;;
esac
for p in web hello greeter; do
        RUN=$DEMO_STATE/run check_field "demo.sh: pod $p Running" $p 'p["status"]["phase"]' Running 90
done

# What runs for the demo: containers (runc's PIDs) and conmon monitors.
pids=
for id in $(runc --root "$DEMO_STATE/run/runc" list -q 2>/dev/null); do
        pids+=" $(runc --root "$DEMO_STATE/run/runc" state "$id" 2>/dev/null |
                python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])' 2>/dev/null || true)"
done
agent=$(pgrep -f "nanolet serve .*$DEMO_STATE/lib" | head -1 || true)
for pid in $(procs_naming "$DEMO_STATE"); do
        [ "$pid" != "$agent" ] && pids+=" $pid"
done
n=$(echo $pids | wc -w)
[ "$n" -ge 6 ] && ok "$n demo processes (containers, conmon) running" ||
        fail "only $n demo processes found: $pids"

demo_uids=$(ls "$DEMO_STATE/lib/pods" 2>/dev/null || true)

# The agent dies without stopping its pods; the demo's trap takes over.
[ -n "$agent" ] && kill -9 "$agent"
wait "$DEMO_PID" 2>/dev/null || true
DEMO_PID=
left=
for pid in $pids; do alive "$pid" && left+=" $pid($(tr '\0' ' ' <"/proc/$pid/cmdline" | cut -c1-60))"; done
[ -z "$left" ] && ok "demo.sh stopped the containers and conmon the agent left" ||
        fail "demo.sh left running:$left"
n=$(awk -v s="$DEMO_STATE" 'index($2, s) == 1' /proc/mounts | wc -l)
[ "$n" -eq 0 ] && ok "no demo mounts left" || fail "$n demo mounts left"
left=
for uid in $demo_uids; do
        left+=$(find /sys/fs/cgroup -maxdepth 5 -type d -name "pod$uid" 2>/dev/null || true)
done
[ -z "$left" ] && ok "no demo pod cgroups left" || fail "demo pod cgroups left: $left"
[ ! -e "$DEMO_STATE" ] && ok "demo state removed" || fail "demo state $DEMO_STATE still there"
# The pods' addresses went back through a CNI DEL: host-local keeps one
# file per leased IP (named by the IP) next to its lock and last_reserved_ip.
leases=$(find "$WORK/leases" -type f -name '[0-9]*.[0-9]*.[0-9]*.[0-9]*' 2>/dev/null | xargs -r -n1 basename)
[ -z "$leases" ] && ok "demo.sh released the pods' IP leases (CNI DEL)" ||
        fail "IP leases left after demo.sh: $leases"
finish
