#!/usr/bin/env bash
# Pod networking end to end through the agent (docs/internals/network.md): pods on this test's
# own bridge get distinct IPs, reach each other and the host reaches them;
# hostPort through portmap from 127.0.0.1 and the bridge's address;
# hostNetwork pods see the host's interfaces and get no CNI call; the first
# conflist of --cni-conf-dir is used, a broken one is a clear pod error with
# no half-created sandbox, and fixing it lets the pod start; resolv.conf and
# /etc/hosts for every dnsPolicy; nothing left afterwards (pins, veths,
# leases, iptables rules). Traffic goes only to 127.0.0.1 and to pod IPs on
# this test's bridge.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

# --- prerequisites: the plugins (in a bin dir of this test, so one can go
# missing), iptables for portmap
CNI_BIN=$WORK/cni-bin
mkdir -p "$CNI_BIN"
for p in bridge host-local portmap; do
        found=
        IFS=: read -ra dirs <<<"${CNI_BIN_DIRS:-/opt/cni/bin:/usr/lib/cni}"
        for d in "${dirs[@]}"; do [ -x "$d/$p" ] && { found=$d/$p; break; }; done
        [ -n "$found" ] || skip "CNI plugin $p not found"
        ln -s "$found" "$CNI_BIN/$p"
done
command -v iptables >/dev/null && command -v iptables-save >/dev/null || skip "iptables not installed"
if command -v curl >/dev/null; then
        fetch() { curl -sf --noproxy '*' --max-time 5 "$1"; }
else
        fetch() { timeout 10 busybox wget -q -Y off -O - "$1"; } # busybox 1.35 wget -T crashes
fi

HOSTPORT=$((30000 + RANDOM % 2000))
NET=${TEST_SUBNET%.0/24}
GATEWAY=$NET.1
BRIDGE2=${TEST_BRIDGE}b
NET2=10.$((200 + RANDOM % 50)).$((RANDOM % 250))
[ "$NET2" = "$NET" ] && NET2=${NET%.*}.$(((${NET##*.} + 1) % 250))
SUBNET2=$NET2.0/24
write_conflist "$CNI_CONF/10-test.conflist" nanolet-test "$TEST_BRIDGE" "$TEST_SUBNET" portmap

# Rules of this test: they name its host port or an address of its subnets.
our_rules() {
        iptables-save 2>/dev/null | grep -E -- "--dport $HOSTPORT|--dports $HOSTPORT|$NET\.|$NET2\." || true
}
had_hostport_chain=0
iptables-save -t nat 2>/dev/null | grep -q '^:CNI-HOSTPORT-DNAT' && had_hostport_chain=1
# With iptables-nft, the first rule creates nftables' "nat" tables; they go
# again at the end when this test created them and they are empty.
had_nat_tables=1
if iptables -V 2>/dev/null | grep -q nf_tables && command -v nft >/dev/null &&
        ! nft list table ip nat >/dev/null 2>&1 && ! nft list table ip6 nat >/dev/null 2>&1; then
        had_nat_tables=0
fi

# Fallback for a failed run (normally the agent's DELs remove everything):
# our rules, the per-pod CNI-DN-* chains they jump to, and portmap's shared
# top-level chains when this test created them and nothing else uses them.
iptables_cleanup() {
        local table rule chain chains
        for table in nat filter mangle; do
                chains=$(iptables-save -t "$table" 2>/dev/null |
                        grep -E -- "--dports? $HOSTPORT|$NET\.|$NET2\." | grep -oE 'CNI-DN-[0-9a-f]+' | sort -u || true)
                iptables-save -t "$table" 2>/dev/null | grep '^-A' |
                        grep -E -- "--dports? $HOSTPORT|$NET\.|$NET2\." | sed 's/^-A/-D/' |
                        while read -r rule; do
                                eval iptables -w -t "$table" "$rule" 2>/dev/null || true
                        done || true
                for chain in $chains; do
                        iptables -w -t "$table" -F "$chain" 2>/dev/null || true
                        iptables-save -t "$table" 2>/dev/null | grep "^-A .*-j $chain\( \|\$\)" | sed 's/^-A/-D/' |
                                while read -r rule; do
                                        eval iptables -w -t "$table" "$rule" 2>/dev/null || true
                                done || true
                        iptables -w -t "$table" -X "$chain" 2>/dev/null || true
                done
        done
        if [ $had_hostport_chain = 0 ] &&
                ! iptables-save -t nat 2>/dev/null | grep -qE '^-A CNI-HOSTPORT-DNAT|^-A CNI-DN-'; then
                for chain in CNI-HOSTPORT-DNAT CNI-HOSTPORT-MASQ CNI-HOSTPORT-SETMARK; do
                        iptables-save -t nat 2>/dev/null | grep "^-A .*-j $chain\( \|\$\)" | sed 's/^-A/-D/' |
                                while read -r rule; do
                                        eval iptables -w -t nat "$rule" 2>/dev/null || true
                                done || true
                        iptables -w -t nat -F "$chain" 2>/dev/null || true
                        iptables -w -t nat -X "$chain" 2>/dev/null || true
                done
        fi
        if [ $had_nat_tables = 0 ] && [ -z "$(iptables-save -t nat 2>/dev/null | grep -E '^-A|^:CNI-')" ] &&
                [ -z "$(ip6tables-save -t nat 2>/dev/null | grep -E '^-A|^:CNI-')" ]; then
                nft delete table ip nat 2>/dev/null || true
                nft delete table ip6 nat 2>/dev/null || true
        fi
}

net_cleanup() {
        local i
        # Failed half-way: let the agent DEL its pods' networks first.
        if [ -n "$AGENT_PID" ] && kill -0 "$AGENT_PID" 2>/dev/null; then
                rm -f "$MAN"/*.yaml
                for ((i = 0; i < 200; i++)); do
                        [ -z "$(ls "$RUN/status" 2>/dev/null | grep -vx sources.json | grep json)" ] && break
                        sleep 0.2
                done
        fi
        if [ -n "$AGENT_PID" ]; then
                kill -9 "$AGENT_PID" 2>/dev/null || true
                wait "$AGENT_PID" 2>/dev/null || true
                AGENT_PID=
        fi
        iptables_cleanup
        ip link del "$BRIDGE2" 2>/dev/null || true
        agent_cleanup
}
trap net_cleanup EXIT

n=$(our_rules | wc -l)
[ "$n" = 0 ] || { echo "FAIL: iptables already has rules naming port $HOSTPORT or $NET/$NET2"; exit 1; }

load_test_image || { fail "test image"; finish; }
cat >"$WORK/resolv.conf" <<'EOF'
# the node's resolver, for dnsPolicy Default
nameserver 192.0.2.53
nameserver 192.0.2.54
search example.test corp.test
options timeout:2 attempts:3
EOF
start_agent -v 4 --cni-bin-dir "$CNI_BIN" --cluster-dns 10.96.0.10 --cluster-domain cluster.local \
        --resolv-conf "$WORK/resolv.conf" --sync-frequency 2s

put() { # put FILE: stdin -> manifest, written as installers do (temp + rename)
        cat >"$MAN/.$1.tmp"
        mv "$MAN/.$1.tmp" "$MAN/$1"
}
in_subnet() {
        python3 -c 'import ipaddress,sys; sys.exit(0 if ipaddress.ip_address(sys.argv[1]) in ipaddress.ip_network(sys.argv[2]) else 1)' "$1" "$2" 2>/dev/null
}
pod_uid() { pod_field "$1" 'p["metadata"]["uid"]'; }
# exec_out POD CMD...: the output of a command in POD's (only) container
exec_out() { nl exec "$1" -- "${@:2}" 2>&1; }
# same_text DESC ACTUAL EXPECTED
same_text() {
        if [ "$2" = "$3" ]; then ok "$1"; else fail "$1"; diff <(echo "$3") <(echo "$2") >&2 || true; fi
}

# --- two pods on the bridge: a web server with a hostPort and a client
put web.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: nettest}
spec:
  terminationGracePeriodSeconds: 2
  hostname: webhost
  hostAliases:
  - {ip: 192.0.2.7, hostnames: [alias-one, alias-two]}
  - {ip: 192.0.2.8, hostnames: [alias-three]}
  containers:
  - name: httpd
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, "mkdir -p /www && echo served-by-\$POD_IP > /www/index.html && exec httpd -f -p 8080 -h /www"]
    ports:
    - {containerPort: 8080, hostPort: $HOSTPORT}
    env:
    - name: POD_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
YAML
put client.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: client, namespace: nettest}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - name: c
    image: nanolet-test
    imagePullPolicy: Never
    command: [sleep, "3600"]
    env:
    - name: MY_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
YAML
check_field "web Running" web 'p["status"]["phase"]' Running 60
check_field "client Running" client 'p["status"]["phase"]' Running 60
webip=$(pod_field web 'p["status"]["podIP"]')
clientip=$(pod_field client 'p["status"]["podIP"]')
in_subnet "$webip" "$TEST_SUBNET" && ok "web's IP $webip from the conflist's subnet" || fail "web IP '$webip' not in $TEST_SUBNET"
in_subnet "$clientip" "$TEST_SUBNET" && ok "client's IP $clientip from the conflist's subnet" || fail "client IP '$clientip' not in $TEST_SUBNET"
[ -n "$webip" ] && [ "$webip" != "$clientip" ] && ok "distinct pod IPs" || fail "pod IPs '$webip' '$clientip'"
[ "$(pod_field web '",".join(i["ip"] for i in p["status"]["podIPs"])')" = "$webip" ] && ok "status.podIPs" || fail "podIPs: $(pod_field web 'p["status"].get("podIPs")')"
[ "$(ip -o link show master "$TEST_BRIDGE" | wc -l)" = 2 ] && ok "two veths on the test bridge" || fail "veths: $(ip -o link show master "$TEST_BRIDGE")"
webuid=$(pod_uid web)
[ -f "$ROOT/cni/results/$webuid.json" ] && ok "CNI cache of web" || fail "no CNI cache $ROOT/cni/results/$webuid.json"
grep -rlq "$webuid" "$WORK/leases/nanolet-test" 2>/dev/null && ok "host-local lease of web names its UID" || fail "no lease for web: $(ls -R "$WORK/leases")"
# The sandbox of a CNI pod is pinned from a thread of the agent, not a
# forked helper; the agent's debug log (-v 4) says which.
grep -qF "runtime: sandbox \"$RUN/ns/$webuid\" pinned from thread" "$AGENT_LOG" &&
        ! grep -qF "runtime: sandbox \"$RUN/ns/$webuid\" pinned (holder" "$AGENT_LOG" &&
        ok "web's namespaces pinned from a thread, no helper fork" ||
        fail "web's sandbox: $(grep -F "$RUN/ns/$webuid" "$AGENT_LOG" | head -3)"

# Debian 12's busybox wget crashes with -T: timeout(1) bounds it instead.
body=
for ((i = 0; i < 50; i++)); do
        body=$(exec_out client timeout 10 wget -q -O - "http://$webip:8080/index.html" || true)
        [ "$body" = "served-by-$webip" ] && break
        sleep 0.2
done
[ "$body" = "served-by-$webip" ] && ok "pod to pod: client fetched web's file from $webip" || fail "pod to pod: '$body'"
body=$(fetch "http://$webip:8080/index.html" || true)
[ "$body" = "served-by-$webip" ] && ok "host to pod IP" || fail "host to pod IP: '$body'"

# --- hostPort through portmap
n=$(our_rules | wc -l)
[ "$n" -gt 0 ] && ok "portmap added $n iptables rules for port $HOSTPORT" || fail "no iptables rules for port $HOSTPORT"
body=$(fetch "http://127.0.0.1:$HOSTPORT/index.html" || true)
[ "$body" = "served-by-$webip" ] && ok "hostPort from 127.0.0.1" || fail "hostPort from 127.0.0.1: '$body'"
body=$(fetch "http://$GATEWAY:$HOSTPORT/index.html" || true)
[ "$body" = "served-by-$webip" ] && ok "hostPort from the bridge address $GATEWAY" || fail "hostPort from $GATEWAY: '$body'"

# --- env, /etc/hosts, resolv.conf, hostname of a ClusterFirst pod
env_ip=$(exec_out web sh -c 'tr "\0" "\n" </proc/1/environ | sed -n "s/^POD_IP=//p"')
same_text "status.podIP env (fieldRef) equals status.podIP" "$env_ip" "$webip"
env_ip=$(exec_out client sh -c 'tr "\0" "\n" </proc/1/environ | sed -n "s/^MY_IP=//p"')
same_text "client's fieldRef env equals its status.podIP" "$env_ip" "$clientip"
same_text "ClusterFirst resolv.conf: cluster DNS, namespace search path, ndots:5" \
        "$(exec_out web cat /etc/resolv.conf)" \
        "search nettest.svc.cluster.local svc.cluster.local cluster.local example.test corp.test
nameserver 10.96.0.10
options ndots:5"
same_text "/etc/hosts: managed header, pod IP with hostname, hostAliases" "$(exec_out web cat /etc/hosts)" \
        "# Kubernetes-managed hosts file.
127.0.0.1	localhost
::1	localhost ip6-localhost ip6-loopback
fe00::0	ip6-localnet
fe00::0	ip6-mcastprefix
fe00::1	ip6-allnodes
fe00::2	ip6-allrouters
$webip	webhost

# Entries added by HostAliases.
192.0.2.7	alias-one	alias-two
192.0.2.8	alias-three"
same_text "hostname is spec.hostname" "$(exec_out web hostname)" webhost
same_text "/etc/hostname" "$(exec_out web cat /etc/hostname)" webhost
exec_out client grep -q "^$clientip	client-node1\$" /etc/hosts && ok "client's /etc/hosts names its IP and pod name" \
        || fail "client /etc/hosts: $(exec_out client cat /etc/hosts)"
links=$(exec_out client ip -o link | awk -F': ' '{print $2}' | sed 's/@.*//' | sort | tr '\n' ' ')
same_text "a pod's own network namespace has lo and eth0 only" "$links" "eth0 lo "

# --- Default and None + dnsConfig
put dns.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: dns-default}
spec:
  terminationGracePeriodSeconds: 2
  dnsPolicy: Default
  containers:
  - {name: c, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: dns-none}
spec:
  terminationGracePeriodSeconds: 2
  dnsPolicy: None
  dnsConfig:
    nameservers: [192.0.2.99, 192.0.2.98]
    searches: [a.test, b.test]
    options:
    - {name: ndots, value: "2"}
    - {name: edns0}
  containers:
  - {name: c, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: dns-merge}
spec:
  terminationGracePeriodSeconds: 2
  dnsConfig:
    nameservers: [192.0.2.97]
    searches: [extra.test]
    options:
    - {name: ndots, value: "1"}
    - {name: single-request}
  containers:
  - {name: c, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
YAML
check_field "dns-default Running" dns-default 'p["status"]["phase"]' Running 60
check_field "dns-none Running" dns-none 'p["status"]["phase"]' Running 60
check_field "dns-merge Running" dns-merge 'p["status"]["phase"]' Running 60
same_text "Default: the --resolv-conf file's servers, search and options" \
        "$(exec_out dns-default cat /etc/resolv.conf)" \
        "search example.test corp.test
nameserver 192.0.2.53
nameserver 192.0.2.54
options timeout:2 attempts:3"
same_text "None: only dnsConfig" "$(exec_out dns-none cat /etc/resolv.conf)" \
        "search a.test b.test
nameserver 192.0.2.99
nameserver 192.0.2.98
options ndots:2 edns0"
same_text "ClusterFirst + dnsConfig: appended, options merged by name" \
        "$(exec_out dns-merge cat /etc/resolv.conf)" \
        "search default.svc.cluster.local svc.cluster.local cluster.local example.test corp.test extra.test
nameserver 10.96.0.10
nameserver 192.0.2.97
options ndots:1 single-request"

# --- hostNetwork: the host's interfaces, no CNI; DNS falls back to Default
put hostnet.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: hostnet}
spec:
  terminationGracePeriodSeconds: 2
  hostNetwork: true
  hostAliases:
  - {ip: 192.0.2.9, hostnames: [hostnet-alias]}
  containers:
  - {name: c, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
---
apiVersion: v1
kind: Pod
metadata: {name: hostnet-cf}
spec:
  terminationGracePeriodSeconds: 2
  hostNetwork: true
  dnsPolicy: ClusterFirstWithHostNet
  containers:
  - {name: c, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
YAML
check_field "hostnet Running" hostnet 'p["status"]["phase"]' Running 60
check_field "hostnet-cf Running" hostnet-cf 'p["status"]["phase"]' Running 60
node_ip=$(pod_field hostnet 'p["status"]["hostIP"]')
ip -o addr show >"$WORK/addrs"
[ -n "$node_ip" ] && grep -q " $node_ip/" "$WORK/addrs" && ok "status.hostIP is an address of this node ($node_ip)" \
        || fail "status.hostIP '$node_ip'"
check_field "hostNetwork pod: status.podIP is the node's address" hostnet 'p["status"]["podIP"]' "$node_ip"
host_links=$(ip -o link | awk -F': ' '{print $2}' | sed 's/@.*//' | sort | tr '\n' ' ')
pod_links=$(exec_out hostnet ip -o link | awk -F': ' '{print $2}' | sed 's/@.*//' | sort | tr '\n' ' ')
case " $pod_links " in
*" $TEST_BRIDGE "*) ok "hostNetwork pod sees the host's interfaces (the test bridge $TEST_BRIDGE)" ;;
*) fail "hostNetwork pod's links: '$pod_links' (host: '$host_links')" ;;
esac
[ "$(exec_out hostnet hostname)" = "$(hostname)" ] && ok "hostNetwork pod has the host's hostname" || fail "hostname: $(exec_out hostnet hostname)"
for p in hostnet hostnet-cf; do
        uid=$(pod_uid $p)
        if [ -n "$uid" ] && ! ls "$ROOT/cni/results/$uid"* >/dev/null 2>&1 && ! grep -rlq "$uid" "$WORK/leases" &&
                ! grep -q "cni: ADD .* for $uid" "$AGENT_LOG"; then
                ok "$p: no CNI call (no cache, no lease, no ADD in the log)"
        else
                fail "$p ($uid) went through CNI"
        fi
done
grep -q "cni: ADD bridge for $webuid" "$AGENT_LOG" && ok "(the log does show CNI ADDs of bridge pods)" || fail "no ADD of web in the log"
same_text "hostNetwork + ClusterFirst: resolv.conf as Default (kubelet)" \
        "$(exec_out hostnet cat /etc/resolv.conf)" \
        "search example.test corp.test
nameserver 192.0.2.53
nameserver 192.0.2.54
options timeout:2 attempts:3"
same_text "hostNetwork + ClusterFirstWithHostNet: cluster DNS" \
        "$(exec_out hostnet-cf cat /etc/resolv.conf)" \
        "search default.svc.cluster.local svc.cluster.local cluster.local example.test corp.test
nameserver 10.96.0.10
options ndots:5"
same_text "hostNetwork /etc/hosts: the host's file plus hostAliases" "$(exec_out hostnet cat /etc/hosts)" \
        "$(cat /etc/hosts; printf '\n# Entries added by HostAliases.\n192.0.2.9\thostnet-alias')"

# --- broken configurations: a clear status error, nothing half-created
veths_before=$(ip -o link show master "$TEST_BRIDGE" | wc -l)
# pod_error NAME: "reason|message" of NAME's status
pod_error() { pod_field "$1" '"%s|%s" % (p["status"].get("reason"), p["status"].get("message", ""))'; }
# wait_error NAME SUBSTRING: until the pod's status is FailedCreatePodSandBox with SUBSTRING
wait_error() {
        local i e
        for ((i = 0; i < 150; i++)); do
                e=$(pod_error "$1" || true)
                case $e in FailedCreatePodSandBox\|*"$2"*) return 0 ;; esac
                sleep 0.2
        done
        echo "--- $1: status '$e', want FailedCreatePodSandBox with '$2'" >&2
        return 1
}
# no_sandbox NAME: nothing of the pod's sandbox exists
no_sandbox() {
        local uid left=
        uid=$(pod_uid "$1")
        [ -n "$uid" ] || { echo "no uid for $1"; return 1; }
        [ -z "$(find "$RUN/ns/$uid" -mindepth 1 2>/dev/null)" ] || left+=" pins:$(find "$RUN/ns/$uid" -mindepth 1)"
        ! grep -qs " $RUN/ns/$uid/" /proc/mounts || left+=" pin-mounts"
        ! grep -rlqs "$uid" "$WORK/leases" || left+=" lease:$(grep -rls "$uid" "$WORK/leases")"
        [ "$(ip -o link show master "$TEST_BRIDGE" | wc -l)" = "$veths_before" ] || left+=" veth-on-$TEST_BRIDGE"
        [ "$(ip -o link show master "$BRIDGE2" 2>/dev/null | wc -l)" = 0 ] || left+=" veth-on-$BRIDGE2"
        [ ! -e "$ROOT/cni/results/$uid.json" ] || left+=" cni-cache"
        [ -z "$(pod_runc_ids "$uid")" ] || left+=" containers"
        [ -z "$left" ] || { echo "$1 left:$left" >&2; return 1; }
}
late_pod() { # late_pod NAME: a pod created while the conf dir is broken
        put "$1.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - {name: c, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
YAML
}
gone() { # gone NAME: the manifest removed, wait until the pod's status is gone
        rm -f "$MAN/$1.yaml"
        for ((i = 0; i < 150; i++)); do pod_json "$1" >/dev/null || return 0; sleep 0.2; done
        fail "$1 still has a status after its manifest was removed"
}

# 05- sorts before 10-test.conflist: the first file is used, never skipped.
BROKEN=$CNI_CONF/05-broken.conflist
printf '{"cniVersion": "1.0.0", "name": "broken", "plugins": [\n  {"type": "bridge",,}]}\n' >"$BROKEN"
late_pod bad-json
if wait_error bad-json "05-broken.conflist"; then ok "invalid JSON: FailedCreatePodSandBox naming the file"; else fail "invalid JSON: $(pod_error bad-json)"; fi
echo "    message: $(pod_error bad-json)"
pod_error bad-json | grep -qE '05-broken.conflist:?[^|]*[0-9]+:[0-9]+|line [0-9]+' && ok "the JSON error has a position" || fail "no line:column in '$(pod_error bad-json)'"
no_sandbox bad-json && ok "invalid JSON: no half-created sandbox" || fail "invalid JSON left a sandbox"
nl pods -o json >"$WORK/pods.json" 2>&1
python3 - "$WORK/pods.json" <<'PY' && ok "nanolet pods -o json shows the reason and message" || fail "pods -o json: $(head -c 600 "$WORK/pods.json")"
import json, sys
items = {p["metadata"]["name"]: p for p in json.load(open(sys.argv[1]))["items"]}
st = items["bad-json-node1"]["status"]
assert st["reason"] == "FailedCreatePodSandBox" and "05-broken.conflist" in st["message"], st
PY
gone bad-json

cat >"$BROKEN" <<'JSON'
{"cniVersion": "1.0.0", "name": "broken", "plugins": [{"type": "nosuchplugin"}]}
JSON
late_pod bad-type
if wait_error bad-type "\"nosuchplugin\" (from \"$BROKEN\") not found"; then ok "unknown plugin type: FailedCreatePodSandBox naming the plugin and the file"; else fail "unknown type: $(pod_error bad-type)"; fi
echo "    message: $(pod_error bad-type)"
no_sandbox bad-type && ok "unknown plugin type: no half-created sandbox" || fail "unknown type left a sandbox"
gone bad-type

# bridge runs and must be undone when the next plugin's binary is missing
cat >"$BROKEN" <<JSON
{"cniVersion": "1.0.0", "name": "broken", "plugins": [
  {"type": "bridge", "bridge": "$BRIDGE2", "isGateway": true, "ipMasq": false,
   "ipam": {"type": "host-local", "dataDir": "$WORK/leases", "ranges": [[{"subnet": "$SUBNET2"}]]}},
  {"type": "bandwidth", "capabilities": {"bandwidth": true}}]}
JSON
late_pod late
if wait_error late "\"bandwidth\" (from \"$BROKEN\") not found"; then ok "missing plugin binary: FailedCreatePodSandBox naming it"; else fail "missing binary: $(pod_error late)"; fi
echo "    message: $(pod_error late)"
grep -q "cni: ADD bridge for $(pod_uid late)" "$AGENT_LOG" && ok "(bridge did run for the pod)" || fail "bridge never ran for late"
no_sandbox late && ok "missing plugin binary: bridge's veth and lease undone, no pins" || fail "missing binary left a sandbox"

# Fixed: a conflist on another bridge and subnet; the pod starts after its back-off.
write_conflist "$BROKEN" custom "$BRIDGE2" "$SUBNET2"
check_field "after the fix the pod comes up (retry after back-off)" late 'p["status"]["phase"]' Running 90
lateip=$(pod_field late 'p["status"]["podIP"]')
in_subnet "$lateip" "$SUBNET2" && ok "it got $lateip from the custom conflist's subnet $SUBNET2" || fail "late's IP '$lateip' not in $SUBNET2"
[ "$(ip -o link show master "$BRIDGE2" | wc -l)" = 1 ] && ok "its veth is on $BRIDGE2" || fail "veths on $BRIDGE2: $(ip -o link show master "$BRIDGE2")"
same_text "the other pods kept their network" "$(pod_field web 'p["status"]["podIP"]')" "$webip"
exec_out late ip -4 -o addr show eth0 | grep -q "inet $lateip/24" && ok "late's eth0 has $lateip/24" || fail "late eth0: $(exec_out late ip -o addr)"

# --- delete everything; DELs use the network each pod was added with
rm -f "$MAN"/*.yaml
for ((i = 0; i < 250; i++)); do [ -z "$(ls "$RUN/status" 2>/dev/null | grep -vx sources.json | grep json)" ] && break; sleep 0.2; done
check_no_leftovers
n=$(ip -o link show master "$BRIDGE2" 2>/dev/null | wc -l)
[ "$n" -eq 0 ] && ok "no veths left on $BRIDGE2" || fail "$n veths left on $BRIDGE2"
n=$(find "$ROOT/cni" -type f 2>/dev/null | wc -l)
[ "$n" -eq 0 ] && ok "no CNI cache files left" || fail "CNI cache left: $(ls -R "$ROOT/cni")"
n=$(our_rules | wc -l)
[ "$n" -eq 0 ] && ok "portmap's rules for the pods are gone" || fail "iptables rules left: $(our_rules)"
# --sync-frequency 2s: the agent's periodic full sync, from its own records
mapfile -t syncs < <(log_times 'SyncLoop \(SYNC\)')
if [ ${#syncs[@]} -ge 2 ] && python3 -c 'import sys; sys.exit(0 if float(sys.argv[2]) - float(sys.argv[1]) >= 1.9 else 1)' "${syncs[0]}" "${syncs[1]}"; then
        ok "periodic sync every --sync-frequency (${#syncs[@]} SyncLoop (SYNC) lines)"
else
        fail "periodic sync: ${#syncs[@]} SyncLoop (SYNC) lines (${syncs[*]:0:2})"
fi
stop_agent
n=$(our_rules | wc -l)
[ "$n" -eq 0 ] && ok "no iptables rules of this test after the agent stopped" || fail "iptables rules left: $(our_rules)"
# portmap never removes its shared chains (CNI-HOSTPORT-*); this test does
# when it created them and they are empty.
iptables_cleanup
if [ $had_hostport_chain = 0 ]; then
        n=$(iptables-save -t nat 2>/dev/null | grep -c 'CNI-HOSTPORT\|CNI-DN-' || true)
        [ "$n" -eq 0 ] && ok "portmap's shared chains removed" || fail "CNI chains left: $(iptables-save -t nat | grep CNI-)"
fi
finish
