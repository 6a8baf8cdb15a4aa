#!/usr/bin/env bash
# Node-pressure signals and conditions (SPEC §14) with --root-dir on a 64 MiB
# tmpfs: filling it past nodefs.available<10% makes DiskPressure True in
# <run-dir>/status/node.json (`nanolet node`) with kubelet's message, and
# False again once the space is freed and the transition period is over.
# (Evicting pods is not built yet: see docs/eviction.md.)
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

mount -t tmpfs -o size=64M nanolet-test-ev "$ROOT" || { fail "mount tmpfs"; finish; }
cond() {
        python3 -c 'import json,sys
j = json.load(open(sys.argv[1]))
print([c["status"] + ":" + c["message"] for c in j["conditions"] if c["type"] == sys.argv[2]][0])' \
                "$RUN/status/node.json" "$1" 2>/dev/null
}
wait_cond() {
        local i
        for ((i = 0; i < ${3:-30} * 5; i++)); do
                cond "$1" | grep -qE -- "$2" && return 0
                sleep 0.2
        done
        echo "--- $1: $(cond "$1")" >&2
        return 1
}
start_agent --eviction-hard 'nodefs.available<10%,memory.available<1Ki' \
        --eviction-pressure-transition-period 2s
wait_cond DiskPressure '^False' && ok "DiskPressure False on an empty root" || fail "no DiskPressure False"
cond MemoryPressure | grep -q '^False' && ok "MemoryPressure False" || fail "MemoryPressure: $(cond MemoryPressure)"
nl node >"$WORK/node" 2>&1 && grep -qE '^DiskPressure +False' "$WORK/node" && grep -qE '^nodefs.available ' "$WORK/node" &&
        ok "nanolet node lists the conditions and signals" || fail "nanolet node: $(cat "$WORK/node")"
# Leave about 5 % free.
avail=$(df -B1 --output=avail "$ROOT" | tail -1)
fallocate -l $((avail - 3 * 1024 * 1024)) "$ROOT/filler" || fail "fill"
wait_cond DiskPressure '^True:The node was low on resource: ephemeral-storage\. Threshold quantity: [0-9]+[KMi]*, available: [0-9]+[KMi]*\. $' &&
        ok "DiskPressure True with kubelet's message" || fail "DiskPressure not True"
expect "the pressure is logged" "$AGENT_LOG" 'Node condition DiskPressure is now True' 1 5
expect "image GC asked to reclaim" "$AGENT_LOG" 'Image GC: removing every unused image' 1 5
rm -f "$ROOT/filler"
wait_cond DiskPressure '^False' 20 && ok "DiskPressure False again after the space is freed" || fail "DiskPressure stays"
expect "the relief is logged" "$AGENT_LOG" 'Node condition DiskPressure is now False' 1 5
stop_agent
finish
