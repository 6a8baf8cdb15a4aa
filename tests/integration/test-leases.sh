#!/usr/bin/env bash
# IP leases and masquerade rules are released only by a CNI DEL of a sandbox
# this agent recorded: two agents with their own root/run/log dirs
# share one host-local lease directory and one masquerading bridge, as two
# instances with the shipped default network would. Neither agent's orphan
# sweep may touch the other's leases, and an agent killed with -9 whose pod
# then disappeared DELs the cached sandbox on its next start, so that no
# CNI-* masquerade chain and no POSTROUTING jump of that pod's IP remain,
# and removes the pod's cgroup.
# Traffic: none; iptables rules are only those of this test's subnet.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"
command -v iptables >/dev/null && command -v iptables-save >/dev/null || skip "iptables not installed"

NET=${TEST_SUBNET%.0/24}
# A network name of this test only: the bridge plugin's masquerade chains
# and rules carry it in their comments.
NETNAME=nlt-leases-$TEST_BRIDGE
LEASES=$WORK/leases/$NETNAME

# Agent B: its own dirs and configuration, the same network.
B=$WORK/b
B_ROOT=$B/root B_RUN=$B/run B_LOGS=$B/logs B_CLOGS=$B/containers B_MAN=$B/manifests
B_CNI_CONF=$B/cni B_LOG=$B/agent.log B_PID=
mkdir -p "$B_ROOT" "$B_RUN" "$B_LOGS" "$B_CLOGS" "$B_CNI_CONF"
mkdir -m 0755 "$B_MAN"
write_conflist "$CNI_CONF/10-test.conflist" "$NETNAME" "$TEST_BRIDGE" "$TEST_SUBNET" masq
write_conflist "$B_CNI_CONF/10-test.conflist" "$NETNAME" "$TEST_BRIDGE" "$TEST_SUBNET" masq

# Rules of this test: they name an address of its subnet or its network.
our_rules() {
        iptables-save -t nat 2>/dev/null | grep -E -- "$NET\.|name: \"$NETNAME\"" || true
}
# Fallback for a failed run: the rules of this test, then the chains they
# jumped to (the bridge plugin's CNI-<hash> per pod).
iptables_cleanup() {
        local rule chain chains
        chains=$(our_rules | grep -oE -- '-j CNI-[0-9a-f]+' | sed 's/^-j //' | sort -u || true)
        our_rules | grep '^-A' | sed 's/^-A/-D/' | while read -r rule; do
                eval iptables -w -t nat "$rule" 2>/dev/null || true
        done || true
        for chain in $chains; do
                iptables -w -t nat -F "$chain" 2>/dev/null || true
                iptables -w -t nat -X "$chain" 2>/dev/null || true
        done
}

# pod_cgroups_of UID: the pod's cgroup directories in every hierarchy, at any
# QoS level (and the old nanolet/pod<uid>).
pod_cgroups_of() {
        find /sys/fs/cgroup -maxdepth 5 -type d -name "pod$1" 2>/dev/null || true
}

b_cleanup() {
        local id uid m
        if [ "$failures" -gt 0 ] && [ -f "$B_LOG" ]; then
                cp "$B_LOG" "/tmp/$TEST_NAME-agent-b.log" 2>/dev/null || true
                echo "--- agent B log kept in /tmp/$TEST_NAME-agent-b.log; last lines:" >&2
                tail -40 "$B_LOG" >&2
        fi
        if [ -n "$B_PID" ]; then
                kill -9 "$B_PID" 2>/dev/null || true
                wait "$B_PID" 2>/dev/null || true
        fi
        for id in $(runc --root "$B_RUN/runc" list -q 2>/dev/null); do
                runc --root "$B_RUN/runc" kill "$id" KILL 2>/dev/null || true
                runc --root "$B_RUN/runc" delete --force "$id" 2>/dev/null || true
        done
        pkill -9 -f "conmon.*$B_RUN" 2>/dev/null || true
        for uid in $(AGENT_LOG=$B_LOG agent_pod_uids); do
                for m in $(pod_cgroups_of "$uid"); do
                        find "$m" -depth -type d -exec rmdir {} \; 2>/dev/null
                done
        done
}
trap 'b_cleanup || true; iptables_cleanup || true; agent_cleanup' EXIT

start_b() {
        "$NANOLET" serve --root-dir "$B_ROOT" --run-dir "$B_RUN" --pod-logs-dir "$B_LOGS" \
                --container-logs-dir "$B_CLOGS" --pod-manifest-path "$B_MAN" --cni-conf-dir "$B_CNI_CONF" \
                --hostname-override node1 --file-check-frequency 2s --read-only-port 0 --healthz-port 0 \
                >>"$B_LOG" 2>&1 &
        B_PID=$!
        wait_for "$B_LOG" 'nanolet starting'
}
b_field() { RUN=$B_RUN pod_field "$@"; }
b_check_field() {
        local desc=$1
        shift
        if RUN=$B_RUN AGENT_LOG=$B_LOG wait_field "$@"; then ok "$desc"; else fail "$desc"; fi
}

# lease_owner IP: the container ID host-local recorded for IP, or nothing.
lease_owner() { head -n1 "$LEASES/$1" 2>/dev/null | tr -d '\r' || true; }
# masq_rules ID IP: nat rules the bridge plugin made for container ID / IP.
masq_rules() {
        iptables-save -t nat 2>/dev/null | { grep -E -- "^-A .*(-s $2/32 |id: \"$1\")" || true; } | wc -l
}
# pod_addr PIN: the IPv4 address of eth0 in a pod's pinned netns.
pod_addr() {
        nsenter --net="$1" ip -4 -o addr show eth0 2>/dev/null | awk '{print $4}' | cut -d/ -f1
}

load_test_image || { fail "test image"; finish; }
"$NANOLET" image --root-dir "$B_ROOT" load "$WORK/images/nanolet-test.tar" >/dev/null ||
        { fail "test image for agent B"; finish; }

# --- 1. agent B's sweep leaves agent A's lease alone -------------------------
start_agent
sleep_pod a 1 | put_manifest a.yaml
check_field "agent A's pod is running" a 'p["status"]["phase"]' Running 60
A_IP=$(pod_field a 'p["status"]["podIP"]')
A_UID=$(pod_field a 'p["metadata"]["uid"]')
[ "$(lease_owner "$A_IP")" = "$A_UID" ] && ok "A's lease names A's pod" ||
        fail "lease of $A_IP: '$(lease_owner "$A_IP")', want '$A_UID'"
[ "$(masq_rules "$A_UID" "$A_IP")" -gt 0 ] && ok "A's pod has masquerade rules" ||
        fail "no masquerade rules for $A_IP: $(our_rules)"

# Agent B sweeps orphans when it starts (and every minute after).
start_b
sleep_pod b 1 | cat >"$B_MAN/.b.tmp" && mv "$B_MAN/.b.tmp" "$B_MAN/b.yaml"
b_check_field "agent B's pod is running" b 'p["status"]["phase"]' Running 60
B_IP=$(b_field b 'p["status"]["podIP"]')
B_UID=$(b_field b 'p["metadata"]["uid"]')
[ -n "$B_IP" ] && [ "$B_IP" != "$A_IP" ] && ok "B's pod got another address ($B_IP)" ||
        fail "B's pod address '$B_IP' (A has $A_IP)"
[ "$(lease_owner "$A_IP")" = "$A_UID" ] && ok "A's lease survives agent B's sweep" ||
        fail "A's lease of $A_IP after B's sweep: '$(lease_owner "$A_IP")'"
[ "$(pod_addr "$RUN/ns/$A_UID/net")" = "$A_IP" ] && ok "A's pod still has $A_IP" ||
        fail "A's pod has '$(pod_addr "$RUN/ns/$A_UID/net")', want $A_IP"
grep -q "Released address $A_IP" "$B_LOG" && fail "agent B released A's address" ||
        ok "agent B did not release A's address"

# --- 2. a crash leaves a cached sandbox: the next start DELs it ---------------
[ -f "$B_ROOT/cni/results/$B_UID.json" ] && ok "B recorded its ADD in its CNI cache" ||
        fail "no CNI cache $B_ROOT/cni/results/$B_UID.json"
kill -9 "$B_PID"
wait "$B_PID" 2>/dev/null || true
B_PID=
# While it was down its pod went away: manifest, containers and pod state,
# everything but the network the CNI cache recorded.
rm -f "$B_MAN/b.yaml"
for id in $(runc --root "$B_RUN/runc" list -q 2>/dev/null); do
        runc --root "$B_RUN/runc" kill "$id" KILL 2>/dev/null || true
        runc --root "$B_RUN/runc" delete --force "$id" 2>/dev/null || true
done
pkill -9 -f "conmon.*$B_RUN" 2>/dev/null || true
for m in $(awk -v p="$B_ROOT/pods/$B_UID/" 'index($2, p) == 1 {print $2}' /proc/mounts | sort -r); do
        umount -l "$m"
done
rm -rf "${B_ROOT:?}/pods/$B_UID"
[ "$(masq_rules "$B_UID" "$B_IP")" -gt 0 ] && ok "B's orphan still has masquerade rules" ||
        fail "no masquerade rules for $B_IP before the restart"
# runc removed the containers' cgroups; the pod's own is still there
[ -n "$(pod_cgroups_of "$B_UID")" ] && ok "B's orphan still has its pod cgroup" ||
        fail "no pod cgroup of $B_UID before the restart"

start_b
expect "agent B DELs the orphaned sandbox" "$B_LOG" "Released the network of sandbox $B_UID" 1 60
[ ! -e "$B_ROOT/cni/results/$B_UID.json" ] && ok "its CNI cache is gone" || fail "CNI cache of $B_UID left"
n=$(masq_rules "$B_UID" "$B_IP")
[ "$n" -eq 0 ] && ok "no masquerade rules of $B_IP left" ||
        fail "$n masquerade rules of $B_IP left: $(our_rules)"
[ ! -e "$LEASES/$B_IP" ] && ok "B's lease of $B_IP released" || fail "lease $B_IP left"
# as kubelet's orphaned pod cgroup cleanup: an empty pod cgroup leaked once
# per run here before
left=$(pod_cgroups_of "$B_UID")
[ -z "$left" ] && ok "the orphan's pod cgroup removed" || fail "pod cgroup of B's orphan left: $left"
[ "$(lease_owner "$A_IP")" = "$A_UID" ] && ok "A's lease survives B's restart" ||
        fail "A's lease of $A_IP after B's restart: '$(lease_owner "$A_IP")'"
[ "$(masq_rules "$A_UID" "$A_IP")" -gt 0 ] && ok "A's masquerade rules survive" ||
        fail "A's masquerade rules of $A_IP are gone"

# --- 3. A's own DEL removes the rest ------------------------------------------
rm -f "$MAN/a.yaml"
expect "agent A's pod is gone" "$AGENT_LOG" 'Pod "a-node1_default\(.*\)" is gone' 1 60
stop_agent
kill -TERM "$B_PID" 2>/dev/null || true
rc=0
wait "$B_PID" 2>/dev/null || rc=$?
B_PID=
[ "$rc" -eq 0 ] && ok "agent B stopped cleanly" || fail "agent B exited with status $rc on SIGTERM"
# Agent B's orphan left nothing either; its ns dir is a mount of its own.
n=$(find "$B_RUN/ns" -mindepth 1 2>/dev/null | wc -l)
[ "$n" -eq 0 ] && ok "no namespace pins of B's orphan left" || fail "B's pins left: $(find "$B_RUN/ns" -mindepth 1)"
n=$(awk -v w="$B" 'index($2, w) == 1 && $2 != w"/run/ns" {print $2}' /proc/mounts | wc -l)
[ "$n" -eq 0 ] && ok "no mounts of agent B left" || fail "B's mounts left: $(awk -v w="$B" 'index($2, w) == 1' /proc/mounts)"
umount -l "$B_RUN/ns" 2>/dev/null || true
[ ! -e "$B_RUN/sandboxes/$B_UID.json" ] && ok "no sandbox record of B's orphan left" ||
        fail "sandbox record $B_RUN/sandboxes/$B_UID.json left"
check_no_leftovers
n=$(our_rules | grep -c '^-A' || true)
[ "$n" -eq 0 ] && ok "no iptables rules of the test's subnet left" || fail "rules left: $(our_rules)"
finish
