#!/usr/bin/env bash
# Soak: SOAK_LIFECYCLES pod lifecycles (200 here) of every kind the
# agent handles (CNI with probes and edits, hostNetwork, crash loops, log
# rotation, ConfigMap edits, images pulled from a local registry and removed
# by image GC, hostPorts) with the read-only API scraped, then the manifest
# directory back as it started: every resource the agent holds must be back
# at its baseline (bench/resources.py: files and bytes of its dirs, mounts,
# cgroups, leases, veths, pins, iptables rules, status and events files,
# metric series but a live pod's own, which go with that pod; RSS, fds and
# threads within a stated tolerance). The diff is
# printed. bench/soak.sh runs this with 2,000 lifecycles and SOAK_MODE=kill9
# is bench/kill9.sh's phase (docs/BENCHMARKS.md, "Soak").
# Traffic: the registry on 127.0.0.1; iptables rules only of this test's subnet.
. "$(dirname "$0")/lib.sh"
require_root
command -v iptables-save >/dev/null || skip "iptables not installed"
TEST_CGROUP_ROOT=/nanolet-soak-$$
. "$(dirname "$0")/lib-agent.sh"
. "$(dirname "$0")/lib-registry.sh"
BENCH=$TEST_DATA_DIR/../bench

NETNAME=nlt-soak-$TEST_BRIDGE
NET=${TEST_SUBNET%.0/24}
# Masquerade and hostPort: the bridge and portmap plugins' iptables rules are
# part of what must come back.
write_conflist "$CNI_CONF/10-test.conflist" "$NETNAME" "$TEST_BRIDGE" "$TEST_SUBNET" portmap masq

our_rules() {
        local t
        for t in nat filter; do
                iptables-save -t "$t" 2>/dev/null | grep -E -- "$NET\.|name: \"$NETNAME\"" | sed "s/^/$t /" || true
        done
}
iptables_cleanup() {
        local t rule chain chains
        chains=$(our_rules | grep -oE -- '-j CNI-[0-9A-Za-z-]+' | sed 's/^-j //' | sort -u || true)
        our_rules | grep -E '^[a-z]+ -A' | while read -r t rule; do
                eval iptables -w -t "$t" "${rule/#-A/-D}" 2>/dev/null || true
        done || true
        for chain in $chains; do
                for t in nat filter; do
                        iptables -w -t "$t" -F "$chain" 2>/dev/null || true
                        iptables -w -t "$t" -X "$chain" 2>/dev/null || true
                done
        done
}
# The agent is soak.py's child (restarted by the kill -9 phase): its last pid.
soak_cleanup() {
        AGENT_PID=$(cat "$WORK/agent.pid" 2>/dev/null || true)
        [ -n "$SOAK_PID" ] && kill -9 "$SOAK_PID" 2>/dev/null || true
        [ -n "$AGENT_PID" ] && [ -d "/proc/$AGENT_PID" ] && grep -qF "$WORK" "/proc/$AGENT_PID/cmdline" 2>/dev/null &&
                kill -9 "$AGENT_PID" 2>/dev/null || true
        AGENT_PID=
        agent_cleanup
}
SOAK_PID=
trap 'soak_cleanup; iptables_cleanup || true' EXIT

load_test_image || { fail "test image"; finish; }
start_registry
VARIANTS=
for k in 0 1 2 3; do
        python3 "$BENCH/soak.py" variant "$WORK/images/nanolet-test.tar" "$WORK/images/v$k.tar" "$k" ||
                { fail "variant image $k"; finish; }
        push "oci-archive:$WORK/images/v$k.tar" "soak/v$k:latest"
        VARIANTS+=" soak/v$k:latest"
done
[ "$failures" = 0 ] || finish

SOAK_WORK=$WORK SOAK_REG=$REG SOAK_CERTS=$CERTS SOAK_BRIDGE=$TEST_BRIDGE SOAK_SUBNET=$TEST_SUBNET \
        SOAK_NETNAME=$NETNAME SOAK_CGROUP_ROOT=$TEST_CGROUP_ROOT SOAK_VARIANTS=$VARIANTS \
        SOAK_PORT=$(free_ports 1) SOAK_HOSTPORTS="$(free_ports 4)" \
        python3 "$BENCH/soak.py" > >(tee "$WORK/soak.out") &
SOAK_PID=$!
rc=0
wait "$SOAK_PID" || rc=$?
SOAK_PID=
if [ "$rc" = 0 ]; then
        ok "${SOAK_MODE:-soak}: every resource back at its baseline"
else
        fail "${SOAK_MODE:-soak}: $(grep '^FAIL: ' "$WORK/soak.out" 2>/dev/null | sed 's/^FAIL: //' | head -20 | paste -sd ';' -)"
fi
finish
