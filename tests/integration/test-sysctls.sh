#!/usr/bin/env bash
# spec.securityContext.sysctls (kubelet's sysctl admission, docs/internals/runtime.md): a safe
# sysctl reaches the pod's own network namespace; an unsafe one, or a net.*
# one in a hostNetwork pod, makes the pod fail admission as kubelet does
# (phase Failed, reason SysctlForbidden, kubelet's message, an event, nothing
# created); --allowed-unsafe-sysctls='net.core.*' admits the unsafe one and
# the container sees its value. The host's own values never change.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

load_test_image || fail "load the test image"
host_range=$(cat /proc/sys/net/ipv4/ip_local_port_range)
host_somaxconn=$(cat /proc/sys/net/core/somaxconn)
[ "$host_somaxconn" != 1234 ] || fail "the host already has somaxconn 1234: the test cannot tell"

# sysctl_pod NAME SYSCTL VALUE [hostNetwork]
sysctl_pod() {
        cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  terminationGracePeriodSeconds: 1
  hostNetwork: ${4:-false}
  securityContext:
    sysctls: [{name: $2, value: "$3"}]
  containers:
  - {name: main, image: nanolet-test, imagePullPolicy: Never,
     command: [sh, -c, 'echo "$2 is \$(cat /proc/sys/$(echo $2 | tr . /))"; exec sleep 3600']}
YAML
}

# wait_event NAME REASON: until the pod's events file has that reason.
wait_event() {
        local uid i
        for ((i = 0; i < 300; i++)); do
                uid=$(pod_field "$1" 'p["metadata"]["uid"]')
                if [ -n "$uid" ] && grep -q "\"reason\": *\"$2\"" "$RUN/status/events/$uid.json" 2>/dev/null; then
                        return 0
                fi
                sleep 0.1
        done
        return 1
}

start_agent
put_manifest safe.yaml < <(sysctl_pod safe net.ipv4.ip_local_port_range "40000 50000")
put_manifest unsafe.yaml < <(sysctl_pod unsafe net.core.somaxconn 1234)
put_manifest hostnet.yaml < <(sysctl_pod hostnet net.ipv4.ip_local_port_range "40000 50000" true)

check_field "the safe sysctl's pod runs" safe 'p["status"]["phase"]' Running
out=$(nl exec safe -- cat /proc/sys/net/ipv4/ip_local_port_range 2>&1)
[ "$(echo $out)" = "40000 50000" ] && ok "the container's netns has the safe sysctl's value" ||
        fail "ip_local_port_range in the container: $out"
# The log went to the non-default --pod-logs-dir (lib-agent.sh's $LOGS), the
# /var/log/containers-style symlink points there, and `nanolet logs` reads it.
uid=$(pod_field safe 'p["metadata"]["uid"]')
expect "the container's log is in --pod-logs-dir" "$LOGS/default_safe-node1_$uid/main/0.log" \
        'net.ipv4.ip_local_port_range is 40000.50000' 1 20
link=$(ls "$CLOGS"/safe-node1_default_main-*.log 2>/dev/null | head -1)
[ -n "$link" ] && [ "$(readlink -f "$link")" = "$(readlink -f "$LOGS/default_safe-node1_$uid/main/0.log")" ] &&
        ok "the container-logs symlink points into --pod-logs-dir" || fail "symlink: $link -> $(readlink "$link")"
nl logs safe >"$WORK/out" 2>&1
grep -q 'ip_local_port_range is 40000.50000' "$WORK/out" && ok "nanolet logs --pod-logs-dir reads it" ||
        fail "nanolet logs: $(cat "$WORK/out")"
bundle=$(grep -l '"net.ipv4.ip_local_port_range"' "$ROOT"/pods/*/containers/*/*/bundle/config.json 2>/dev/null | head -1)
[ -n "$bundle" ] && python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); assert c["linux"]["sysctl"] == {"net.ipv4.ip_local_port_range": "40000 50000"}' "$bundle" &&
        ok "config.json carries it in linux.sysctl" || fail "no linux.sysctl in the bundle's config.json"

check_field "the unsafe sysctl's pod fails admission" unsafe \
        'p["status"]["phase"] + "/" + p["status"].get("reason", "")' Failed/SysctlForbidden
check_field "with kubelet's message" unsafe 'p["status"].get("message")' \
        'Pod was rejected: forbidden sysctl: "net.core.somaxconn" not allowlisted'
check_field "and kubelet's status of a rejected pod (no container statuses)" unsafe \
        '",".join(sorted(p["status"]))' 'message,phase,qosClass,reason'
wait_event unsafe SysctlForbidden && ok "a SysctlForbidden event" || fail "no SysctlForbidden event"
nl events unsafe >"$WORK/out" 2>&1
grep -qE 'Warning +SysctlForbidden +pod/unsafe-node1 +forbidden sysctl' "$WORK/out" &&
        ok "nanolet events shows it" || fail "nanolet events: $(cat "$WORK/out")"
check_field "a hostNetwork pod may not set a net.* sysctl" hostnet \
        'p["status"]["phase"] + "/" + p["status"].get("reason", "") + "/" + p["status"].get("message", "")' \
        'Failed/SysctlForbidden/Pod was rejected: forbidden sysctl: "net.ipv4.ip_local_port_range" not allowed with host net enabled'
uid=$(pod_field unsafe 'p["metadata"]["uid"]')
[ -n "$uid" ] && [ -z "$(pod_runc_ids "$uid")" ] && [ ! -e "$RUN/ns/$uid" ] &&
        ok "nothing of the rejected pod was created" || fail "the rejected pod has containers or namespaces"
grep -q 'Pod "unsafe-node1_default([0-9a-f-]*)" rejected: forbidden sysctl' "$AGENT_LOG" &&
        ok "the agent logs the rejection" || fail "no rejection line in the agent log"
stop_agent
rm -f "$MAN/unsafe.yaml" "$MAN/hostnet.yaml"

# The unsafe sysctl allowed by a prefix, as kubelet's --allowed-unsafe-sysctls.
start_agent --allowed-unsafe-sysctls 'net.core.*'
put_manifest allowed.yaml < <(sysctl_pod allowed net.core.somaxconn 1234)
check_field "the allowed unsafe sysctl's pod runs" allowed 'p["status"]["phase"]' Running
out=$(nl exec allowed -- cat /proc/sys/net/core/somaxconn 2>&1)
[ "$out" = 1234 ] && ok "the container's netns has somaxconn 1234" || fail "somaxconn in the container: $out"
check_field "the safe pod, adopted, still runs" safe 'p["status"]["phase"]' Running
[ "$(cat /proc/sys/net/ipv4/ip_local_port_range)" = "$host_range" ] &&
        [ "$(cat /proc/sys/net/core/somaxconn)" = "$host_somaxconn" ] &&
        ok "the host's values are unchanged" || fail "a host sysctl changed"
stop_agent

# An allowedUnsafeSysctls entry that no namespace isolates: the agent refuses
# to start, as kubelet does.
rc=0
timeout 60 "$NANOLET" serve --root-dir "$ROOT" --run-dir "$RUN" --pod-logs-dir "$LOGS" \
        --pod-manifest-path "$MAN" --hostname-override node1 --read-only-port 0 --healthz-port 0 \
        --allowed-unsafe-sysctls vm.swappiness >"$WORK/bad.log" 2>&1 || rc=$?
[ "$rc" -ne 0 ] && grep -q 'the sysctl "vm.swappiness" are not known to be namespaced' "$WORK/bad.log" &&
        ok "a non-namespaced allowedUnsafeSysctls entry is refused at start" ||
        fail "exit $rc: $(cat "$WORK/bad.log")"
finish
