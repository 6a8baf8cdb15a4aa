#!/usr/bin/env bash
# 100 CNI pods dropped at once (SCALE_CNI_PODS), on a network like the
# shipped default (bridge with ipMasq, host-local, portmap) of this test's
# own bridge, subnet and name: every pod becomes Running with its own IP
# (the agent's status files), each IP is the one host-local leased to that
# pod and answers an ICMP echo from the host, and once the manifests are
# removed together nothing is left: no lease, netns pin, veth, masquerade
# chain or rule, cgroup, container or CNI cache entry. The times from the
# rename to the last pod Running and from the removal to the last status
# file gone are printed ("figures:").
# Traffic: ICMP echo to the pods' addresses only.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"
command -v iptables-save >/dev/null || skip "iptables not installed"

N=${SCALE_CNI_PODS:-100}
NET=${TEST_SUBNET%.0/24}
NETNAME=nlt-scale-$TEST_BRIDGE
LEASES=$WORK/leases/$NETNAME
write_conflist "$CNI_CONF/10-test.conflist" "$NETNAME" "$TEST_BRIDGE" "$TEST_SUBNET" portmap masq

# The rules of this test: they name an address of its subnet or its network.
our_rules() {
        iptables-save -t nat 2>/dev/null | grep -E -- "$NET\.|name: \"$NETNAME\"" || true
}
# For a failed run: the rules of this test, then the chains they jumped to.
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
trap 'iptables_cleanup || true; agent_cleanup' EXIT

# statuses: "name uid phase podIP" of every pod status file, one a line.
statuses() {
        python3 - "$RUN/status" <<'PY'
import glob, json, os, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "*.json"))):
    if f.endswith("/sources.json"):
        continue
    try:
        p = json.load(open(f))
        print(p["metadata"]["name"], p["metadata"]["uid"], p["status"].get("phase", "-"),
              p["status"].get("podIP") or "-")
    except (OSError, ValueError, KeyError):
        pass
PY
}
n_running() { statuses | awk '$3 == "Running" && $4 != "-"' | wc -l; }
n_status() { statuses | wc -l; }

load_test_image || { fail "test image"; finish; }
start_agent

mkdir -p "$WORK/stage"
for ((i = 0; i < N; i++)); do
        sleep_pod "c$i" 1 >"$WORK/stage/c$i.yaml"
done
t0=$(date +%s.%N)
mv "$WORK/stage/"*.yaml "$MAN/"
for ((i = 0; i < 3000; i++)); do [ "$(n_running)" -ge "$N" ] && break; sleep 0.2; done
t1=$(date +%s.%N)
up=$(python3 -c "print(round($t1 - $t0, 1))")
[ "$(n_running)" -eq "$N" ] && ok "$N CNI pods Running with an IP in $up s" \
        || fail "$(n_running) of $N Running with an IP: $(statuses | awk '$3 != "Running" || $4 == "-"' | head -5)"
statuses >"$WORK/pods"

# Distinct IPs, all in the test's subnet, each the one host-local leased to that pod.
n=$(awk '{print $4}' "$WORK/pods" | sort -u | grep -c "^$NET\." || true)
[ "$n" -eq "$N" ] && ok "$N distinct pod IPs in $TEST_SUBNET" || fail "$n distinct IPs in the subnet for $N pods"
bad=
while read -r name uid phase ip; do
        grep -qs "$uid" "$LEASES/$ip" || bad+=" $name($ip)"
done <"$WORK/pods"
[ -z "$bad" ] && ok "each IP is host-local's lease of its pod" || fail "no matching lease:$bad"
n=$(ip -o link show master "$TEST_BRIDGE" 2>/dev/null | wc -l || true)
[ "$n" -eq "$N" ] && ok "$N veths on the test bridge" || fail "$n veths on $TEST_BRIDGE"
n=$(find "$ROOT/cni/results" -name '*.json' 2>/dev/null | wc -l)
[ "$n" -eq "$N" ] && ok "$N CNI cache entries" || fail "$n CNI cache entries"
n=$(our_rules | grep -c '^-A POSTROUTING' || true)
[ "$n" -eq "$N" ] && ok "$N masquerade jumps in POSTROUTING" || fail "$n masquerade jumps for $N pods"

# ICMP echo to every pod from the host (raw socket; no ping binary needed),
# three rounds for the ones that did not answer yet.
awk '{print $4}' "$WORK/pods" >"$WORK/ips"
python3 - "$WORK/ips" >"$WORK/unanswered" <<'PY' || echo "(the ICMP check failed)" >"$WORK/unanswered"
import os, select, socket, struct, sys, time
ips = set(open(sys.argv[1]).read().split())
def csum(b):
    s = sum(struct.unpack("!%dH" % (len(b) // 2), b))
    s = (s >> 16) + (s & 0xffff); s += s >> 16
    return ~s & 0xffff
ident = os.getpid() & 0xffff
sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
answered = set()
for rnd in range(3):
    for seq, ip in enumerate(sorted(ips - answered)):
        hdr = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
        pkt = struct.pack("!BBHHH", 8, 0, csum(hdr + b"nanolet!"), ident, seq) + b"nanolet!"
        sock.sendto(pkt, (ip, 0))
    end = time.monotonic() + 3
    while answered != ips and time.monotonic() < end:
        if not select.select([sock], [], [], max(0, end - time.monotonic()))[0]:
            break
        data, (src, _) = sock.recvfrom(2048)
        ihl = (data[0] & 0x0f) * 4
        typ, _, _, rid, _ = struct.unpack("!BBHHH", data[ihl:ihl + 8])
        if typ == 0 and rid == ident and src in ips:
            answered.add(src)
    if answered == ips:
        break
print(*sorted(ips - answered))
PY
unanswered=$(cat "$WORK/unanswered")
[ -z "$unanswered" ] && ok "all $N pods answer an ICMP echo from the host" || fail "no answer from: $unanswered"

# --- all removed at once
t0=$(date +%s.%N)
rm -f "$MAN"/c*.yaml
for ((i = 0; i < 3000; i++)); do [ "$(n_status)" -eq 0 ] && break; sleep 0.2; done
t1=$(date +%s.%N)
down=$(python3 -c "print(round($t1 - $t0, 1))")
[ "$(n_status)" -eq 0 ] && ok "$N pods removed in $down s" || fail "$(n_status) pods left"
stop_agent
echo "figures: $N CNI pods: all Running $up s after the rename, all removed $down s after the manifests went"
check_no_leftovers
n=$(find "$ROOT/cni/results" -type f 2>/dev/null | wc -l)
[ "$n" -eq 0 ] && ok "no CNI cache entries left" || fail "$n CNI cache entries left"
n=$(our_rules | grep -c '^-A' || true)
[ "$n" -eq 0 ] && ok "no iptables rules of the test's subnet left" || fail "rules left: $(our_rules)"
finish
