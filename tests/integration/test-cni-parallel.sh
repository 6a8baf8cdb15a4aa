#!/usr/bin/env bash
# How many CNI operations the agent runs at once, and what the plugin
# timeout counts. The bridge plugin is wrapped by a "crowd" of this test:
# each run records how many runs are alive beside it (itself included), and
# an ADD sleeps 3 s for each of them before the real bridge runs, as plugins
# queueing on one lock do. So the eight ADDs of part 1 at once would wait
# up to 24 s, past its timeout (3 s x the bound + 10 s: 16 s on 2 CPUs), and
# be killed; within the bound each waits at most 3 s x the bound. Checked from the agent's own records (its log,
# its events files) and the wrapper's: part 1, eight pods at once under the
# default bound (one per CPU, at least 2), all Running, no run beyond the
# bound, not one FailedCreatePodSandBox; part 2, --cni-max-parallel 1 and
# --cni-plugin-timeout 8s: one run at a time, four pods, the last of whose
# ADDs waits 9 s and more in the queue, still come up (the timeout counts
# from a plugin's start), and a plugin that hangs is killed after 8 s and
# named.
# Traffic: none; the network is this test's own bridge, without masquerade.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

CNI_BIN=$WORK/cni-bin
CROWD=$WORK/crowd
mkdir -p "$CNI_BIN" "$CROWD/running"
cni_bin_wrapping_bridge "$CNI_BIN"
# A run registers its pid, counts the registered pids still alive (a run
# the agent killed leaves its file, not its process) and logs
# "COMMAND POD COUNT" to $CROWD/log.
cat >"$CNI_BIN/bridge" <<SH
#!/bin/sh
name=\$(echo "\$CNI_ARGS" | tr ';' '\n' | sed -n 's/^K8S_POD_NAME=//p')
: >"$CROWD/running/\$\$"
n=0
for f in "$CROWD"/running/*; do
        kill -0 "\${f##*/}" 2>/dev/null && n=\$((n + 1))
done
echo "\$CNI_COMMAND \$name \$n" >>"$CROWD/log"
if [ "\$CNI_COMMAND" = ADD ]; then
        case \$name in
        hang-*) sleep 3600 ;;
        *) sleep \$((n * 3)) ;;
        esac
fi
$REAL_BRIDGE "\$@"
rc=\$?
rm -f "$CROWD/running/\$\$"
exit \$rc
SH
chmod +x "$CNI_BIN/bridge"

# most_at_once [COMMAND]: the largest count the wrapper logged (of COMMAND).
most_at_once() {
        awk -v c="${1:-}" 'c == "" || $1 == c {if ($3 > m) m = $3} END {print m + 0}' "$CROWD/log" 2>/dev/null
}
# sandbox_failures NAME-PREFIX: FailedCreatePodSandBox events the agent
# recorded for pods whose name starts with NAME-PREFIX.
sandbox_failures() {
        python3 - "$RUN/status/events" "$1" <<'PY'
import glob, json, os, sys
n = 0
for f in glob.glob(os.path.join(sys.argv[1], "*.json")):
    try:
        items = json.load(open(f)).get("items", [])
    except (OSError, ValueError):
        continue
    for e in items:
        obj = e.get("involvedObject", {}).get("name", "")
        if obj.startswith(sys.argv[2]) and e.get("reason") == "FailedCreatePodSandBox":
            n += e.get("count", 1)
print(n)
PY
}
n_running() {
        python3 - "$RUN/status" "$1" <<'PY'
import glob, json, os, sys
n = 0
for f in glob.glob(os.path.join(sys.argv[1], "*.json")):
    try:
        p = json.load(open(f))
    except (OSError, ValueError):
        continue
    if p.get("metadata", {}).get("name", "").startswith(sys.argv[2]) and \
            p.get("status", {}).get("phase") == "Running" and p["status"].get("podIP"):
        n += 1
print(n)
PY
}
# wait_running PREFIX N: until N pods named PREFIX* are Running with an IP.
wait_running() {
        local i
        for ((i = 0; i < 900; i++)); do
                [ "$(n_running "$1")" -ge "$2" ] && return 0
                sleep 0.2
        done
        return 1
}
# all_gone: every pod's status file removed (the teardown, DEL included, done).
all_gone() {
        local i
        for ((i = 0; i < 600; i++)); do
                [ -z "$(find "$RUN/status" -maxdepth 1 -name '*.json' ! -name sources.json 2>/dev/null)" ] && return 0
                sleep 0.2
        done
        return 1
}

load_test_image || { fail "test image"; finish; }
nproc=$(getconf _NPROCESSORS_ONLN)
bound=$((nproc > 2 ? nproc : 2))

# --- 1. eight pods at once, the default bound
start_agent --cni-bin-dir "$CNI_BIN" --cni-plugin-timeout "$((3 * bound + 10))s"
mkdir -p "$WORK/stage"
for i in 0 1 2 3 4 5 6 7; do sleep_pod "a$i" 1 >"$WORK/stage/a$i.yaml"; done
mv "$WORK/stage/"*.yaml "$MAN/"
if wait_running a 8; then
        ok "8 pods dropped at once are Running with an IP"
else
        fail "$(n_running a) of 8 pods Running with an IP"
fi
m=$(most_at_once ADD)
[ "$m" -ge 2 ] && [ "$m" -le "$bound" ] &&
        ok "at most $bound CNI ADDs ran at once ($m seen; the default bound on $nproc CPUs)" ||
        fail "$m CNI ADDs ran at once, the default bound on $nproc CPUs is $bound: $(tr '\n' ' ' <"$CROWD/log")"
n=$(sandbox_failures a)
[ "$n" -eq 0 ] && ok "no FailedCreatePodSandBox event: no ADD ran into its timeout while waiting" ||
        fail "$n FailedCreatePodSandBox events for pods a*"
n=$(count_lines "$AGENT_LOG" 'Failed to create sandbox')
[ "$n" -eq 0 ] && ok "the agent logged no failed sandbox" ||
        fail "$n failed sandboxes logged: $(grep 'Failed to create sandbox' "$AGENT_LOG" | head -3)"
rm -f "$MAN"/*.yaml
all_gone && ok "the 8 pods are removed" || fail "pods left: $(ls "$RUN/status")"
m=$(most_at_once DEL)
[ "$m" -ge 1 ] && [ "$m" -le "$bound" ] && ok "at most $bound CNI DELs ran at once ($m seen)" ||
        fail "$m CNI DELs ran at once (bound $bound)"
stop_agent

# --- 2. one at a time, an 8 s plugin timeout
: >"$CROWD/log"
: >"$AGENT_LOG"
start_agent --cni-bin-dir "$CNI_BIN" --cni-max-parallel 1 --cni-plugin-timeout 8s
for i in 0 1 2 3; do sleep_pod "b$i" 1 >"$WORK/stage/b$i.yaml"; done
mv "$WORK/stage/"*.yaml "$MAN/"
if wait_running b 4; then
        ok "4 pods Running with --cni-max-parallel 1"
else
        fail "$(n_running b) of 4 pods Running with --cni-max-parallel 1"
fi
m=$(most_at_once)
[ "$m" -eq 1 ] && ok "one CNI operation at a time" || fail "$m CNI operations at once with --cni-max-parallel 1"
# Each ADD sleeps 3 s, one after another: the fourth waited 9 s in the
# queue, more than the timeout, and must not have been killed for it.
n=$(sandbox_failures b)
[ "$n" -eq 0 ] && ok "ADDs that waited longer than the plugin timeout in the queue were not killed" ||
        fail "$n FailedCreatePodSandBox events for pods b*: $(grep 'Failed to create sandbox' "$AGENT_LOG" | head -3)"
sleep_pod hang 1 | put_manifest hang.yaml
expect "a hung plugin is killed after --cni-plugin-timeout and named" "$AGENT_LOG" \
        'Failed to create sandbox of pod "hang-node1.*plugin "bridge" failed: ADD timed out after 8 s, killed' 1 40
n=$(n_running b)
[ "$n" -eq 4 ] && ok "the other pods kept running" || fail "$n of 4 pods b* Running after the hung plugin"
rm -f "$MAN"/*.yaml
all_gone && ok "all pods are removed" || fail "pods left: $(ls "$RUN/status")"
stop_agent
check_no_leftovers
n=$(find "$WORK/leases" -type f ! -name 'last_reserved_ip*' ! -name lock 2>/dev/null | wc -l)
[ "$n" -eq 0 ] && ok "no lease left" || fail "leases left: $(find "$WORK/leases" -type f)"
finish
