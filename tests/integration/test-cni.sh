#!/bin/bash
# src/network against the real CNI plugins (bridge, host-local, portmap from
# containernetworking-plugins), through tests/unit/cni-tool: two network
# namespaces get distinct IPs from a CIDR of this test, reach each other and
# are reached from the host; DEL removes veths, leases and the cache. Only
# this test's own bridge (nlt<random>), CIDR, namespaces and lease dir are
# touched, and the trap removes all of them, whatever happened. ipMasq is off
# and no port mappings are given, so iptables is not touched; the trap still
# checks for (and removes) any rule naming the test bridge.
. "$(dirname "$0")/lib.sh"
require_root

CNI_TOOL=${CNI_TOOL:-$(dirname "$NANOLET")/tests/unit/cni-tool}
BIN_DIRS=${CNI_BIN_DIRS:-/opt/cni/bin:/usr/lib/cni}
for p in bridge host-local portmap; do
        found=0
        IFS=: read -ra dirs <<<"$BIN_DIRS"
        for d in "${dirs[@]}"; do [ -x "$d/$p" ] && found=1; done
        if [ $found = 0 ]; then
                echo "SKIP: CNI plugin $p not found in $BIN_DIRS"
                [ "${NANOLET_TEST_STRICT:-0}" = 1 ] && exit 1
                exit 77
        fi
done
[ -x "$CNI_TOOL" ] || { echo "FAIL: $CNI_TOOL missing"; exit 1; }

SUFFIX=$(printf '%04x%02x' $((RANDOM)) $((RANDOM % 256)))
BR=nlt$SUFFIX
NS1=nanolet-cni-$SUFFIX-a
NS2=nanolet-cni-$SUFFIX-b
NET=10.$((200 + RANDOM % 50)).$((RANDOM % 250))
CIDR=$NET.0/24
CONF=$WORK/conf
CACHE=$WORK/cache
LEASES=$WORK/leases

cni_cleanup() {
        ip netns del "$NS1" 2>/dev/null || true
        ip netns del "$NS2" 2>/dev/null || true
        ip link del "$BR" 2>/dev/null || true
        if command -v iptables-save >/dev/null; then
                local table rule
                for table in nat filter; do
                        iptables-save -t "$table" 2>/dev/null | grep -E -- "$BR|$SUFFIX" |
                                grep '^-A' | sed 's/^-A/-D/' | while read -r rule; do
                                eval iptables -t "$table" "$rule" 2>/dev/null || true
                        done || true
                done
        fi
        cleanup
}
trap cni_cleanup EXIT

mkdir -p "$CONF" "$CACHE" "$LEASES"
cat >"$CONF/10-test.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "nanolet-test-$SUFFIX",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$BR",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$LEASES",
        "ranges": [[{"subnet": "$CIDR"}]],
        "routes": [{"dst": "$CIDR"}]
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
JSON

ip netns add "$NS1"
ip netns add "$NS2"
ip -n "$NS1" link set lo up
ip -n "$NS2" link set lo up

tool() { "$CNI_TOOL" "$1" "$CONF" "$CACHE" "$BIN_DIRS" "$2" "/run/netns/$3"; }

if ip1=$(tool add c1-$SUFFIX "$NS1") && ip2=$(tool add c2-$SUFFIX "$NS2"); then
        ok "ADD on two namespaces: $ip1, $ip2"
else
        fail "ADD failed"
        finish
fi
case $ip1 in "$NET".*) ok "IP 1 in $CIDR" ;; *) fail "IP 1 $ip1 not in $CIDR" ;; esac
case $ip2 in "$NET".*) ok "IP 2 in $CIDR" ;; *) fail "IP 2 $ip2 not in $CIDR" ;; esac
[ "$ip1" != "$ip2" ] && ok "distinct IPs" || fail "same IP twice"
ip -n "$NS1" -4 addr show eth0 | grep -q "inet $ip1/" && ok "eth0 in ns 1 has $ip1" ||
        fail "eth0 in ns 1 lacks $ip1"
[ -f "$CACHE/c1-$SUFFIX.json" ] && ok "cache written" || fail "no cache file"
[ -f "$LEASES/nanolet-test-$SUFFIX/$ip1" ] && ok "host-local lease in the test's dataDir" ||
        fail "no lease for $ip1"

# ping (iputils or busybox), only ever to this test's pod IPs.
if command -v ping >/dev/null; then PING=(ping); else PING=(busybox ping); fi
ip netns exec "$NS1" "${PING[@]}" -c 1 -W 2 "$ip2" >/dev/null && ok "ns 1 reaches ns 2" ||
        fail "ns 1 cannot reach ns 2"
"${PING[@]}" -c 1 -W 2 "$ip1" >/dev/null && ok "host reaches ns 1" || fail "host cannot reach $ip1"

tool check c1-$SUFFIX "$NS1" && ok "CHECK passes" || fail "CHECK failed"

veths_before=$(ip -o link show master "$BR" | wc -l)
[ "$veths_before" = 2 ] && ok "two veths on $BR" || fail "$veths_before veths on $BR"
tool del c1-$SUFFIX "$NS1" && ok "DEL 1" || fail "DEL 1 failed"
[ "$(ip -o link show master "$BR" | wc -l)" = 1 ] && ok "DEL removed the veth" ||
        fail "veth left after DEL"
[ ! -e "$LEASES/nanolet-test-$SUFFIX/$ip1" ] && ok "DEL released the lease" ||
        fail "lease $ip1 left"
[ ! -e "$CACHE/c1-$SUFFIX.json" ] && ok "DEL removed the cache" || fail "cache left"
tool del c1-$SUFFIX "$NS1" && ok "second DEL is a no-op" || fail "second DEL failed"

# The netns is gone before the DEL (reboot, crash): DEL must still release.
ip netns del "$NS2"
tool del c2-$SUFFIX "$NS2" && ok "DEL with the netns gone" || fail "DEL without netns failed"
[ ! -e "$LEASES/nanolet-test-$SUFFIX/$ip2" ] && ok "lease released without netns" ||
        fail "lease $ip2 left"
[ "$(ip -o link show master "$BR" | wc -l)" = 0 ] && ok "no veths left" || fail "veths left"

finish
