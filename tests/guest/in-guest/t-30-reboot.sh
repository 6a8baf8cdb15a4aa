#!/usr/bin/env bash
# A real reboot of the guest with 10 pods: at the first start and after the
# cold start every pod is Running, each sandbox made once (no failed sandbox
# in the agent's log: ten CNI ADDs at once must not run into their timeout),
# the time from kernel start and from the agent's start is printed, and the
# network state matches the pods exactly: one
# host-local lease per running pod carrying its IP and UID, one CNI cache
# entry, one netns pin, one veth and one masquerade chain each, nothing
# left of the sandboxes from before the reboot. Removing the pods
# afterwards releases all of it.
. "$(dirname "$0")/lib.sh"

PODS=10
NET=/var/lib/cni/networks/nanolet

# leases: "IP CONTAINER-ID" per lease file of the built-in network.
leases() {
        local f
        for f in "$NET"/*; do
                [[ -f $f ]] || continue
                case ${f##*/} in last_reserved_ip.* | lock) continue ;; esac
                printf '%s %s\n' "${f##*/}" "$(head -n 1 "$f" | tr -d '\r')"
        done | sort
}
# pod_ips: "IP UID" of every pod in /pods.
pod_ips() {
        api_pods | jq -r '.items[] | "\(.status.podIP) \(.metadata.uid)"' | sort
}
pins() { ls /run/nanolet/ns 2>/dev/null | sort; }
uids() { api_pods | jq -r '.items[].metadata.uid' | sort; }
veths() { ip -o link show type veth | wc -l; }
cni_cache() { ls /var/lib/nanolet/cni/results/ 2>/dev/null | grep -c '\.json$'; }
# masq_chains: the bridge plugin's per-sandbox masquerade chains (ipMasq of
# the built-in network), not portmap's shared CNI-HOSTPORT-* ones.
masq_chains() { iptables -t nat -S | grep '^-N CNI-' | grep -vc -e '^-N CNI-HOSTPORT-' -e '^-N CNI-DN-'; }

# consistent WHEN: the network state is exactly that of the running pods.
consistent() {
        local when=$1 l p
        l=$(leases)
        p=$(pod_ips)
        printf 'leases:\n%s\npods:\n%s\n' "$l" "$p" | keep "network-$when.txt"
        check_eq "$when: one lease per pod, with its IP and UID" "$l" "$p"
        check_eq "$when: one netns pin per pod" "$(pins)" "$(uids)"
        check_eq "$when: one CNI cache entry per pod" "$(cni_cache)" "$PODS"
        check_eq "$when: one veth per pod" "$(veths)" "$PODS"
        check_eq "$when: one masquerade chain per pod" "$(masq_chains)" "$PODS"
}

case $GUEST_PHASE in
1)
        nanolet_install || exit 1
        check "test image loaded" nanolet_load_test_image
        since=$(date '+%Y-%m-%d %H:%M:%S')
        for i in $(seq -w 1 $PODS); do
                sleep_pod "p$i" | put_manifest "p$i.yaml"
        done
        wait_until 600 "$PODS pods Running and ready" pods_running $PODS || exit 1
        # A sandbox the agent had to make again (a CNI ADD past its timeout
        # while the others ran) converges too, only later: the window above
        # does not see it, the agent's log does.
        check "each pod's sandbox made once: no failed sandbox in the agent's log" bash -c \
                "! journalctl -u nanolet --since '$since' -o cat --no-pager | grep 'Failed to create sandbox'"
        consistent before-reboot
        guest_save uids "$(uids)"
        guest_save reboot_at "$(date +%s.%N)"
        guest_reboot 2
        ;;
2)
        booted=$(uptime_s)
        # The agent's start, in the same clock as the kernel's uptime.
        agent_start=$(systemctl show -p ExecMainStartTimestampMonotonic --value nanolet)
        t0=$SECONDS
        wait_until 900 "all $PODS pods Running and ready after the reboot" pods_running $PODS || exit 1
        up=$(uptime_s)
        all=$(awk -v a="$up" 'BEGIN { printf "%.1f", a }')
        since_agent=$(awk -v a="$up" -v s="$agent_start" 'BEGIN { printf "%.1f", a - s / 1e6 }')
        # From `systemctl reboot` to the new kernel's start: the shutdown.
        down=$(awk -v now="$(date +%s.%N)" -v up="$up" -v at="$(guest_load reboot_at)" \
                'BEGIN { printf "%.1f", now - up - at }')
        say "reboot with $PODS pods: shutdown $down s; cold start: all Running $all s after kernel start, $since_agent s after the agent started (runner up at $booted s)"
        echo "pods=$PODS shutdown=$down kernel_to_running=$all agent_to_running=$since_agent" | keep timing.txt
        check_eq "the same $PODS pods (UIDs) after the reboot" "$(uids)" "$(guest_load uids)"
        boot_time=$(date -d "@$(($(date +%s) - ${up%.*}))" -u +%s)
        started=$(api_pods | jq -r '.items[].status.containerStatuses[].state.running.startedAt' | sort | head -n 1)
        check "containers started in this boot (earliest $started)" \
                test "$(date -d "$started" +%s)" -ge "$((boot_time - 5))"
        consistent after-reboot
        check "each pod's sandbox made once in the cold start: no failed sandbox in the agent's log" \
                bash -c "! journalctl -u nanolet -b -o cat --no-pager | grep 'Failed to create sandbox'"
        check "no netns pin of a pod from before that is not running" bash -c \
                '[ -z "$(comm -23 <(ls /run/nanolet/ns | sort) <(curl -fsS http://127.0.0.1:10255/pods | jq -r ".items[].metadata.uid" | sort))" ]'
        journalctl -u nanolet -o cat --no-pager | keep journal-after-reboot.txt

        rm -f "$NANOLET_MANIFESTS"/p*.yaml
        wait_until 300 "pods removed with their manifests" pods_count 0
        check_eq "no lease left after the pods are gone" "$(leases)" ""
        check_eq "no netns pin left" "$(pins)" ""
        check_eq "no CNI cache entry left" "$(cni_cache)" 0
        check_eq "no veth left" "$(veths)" 0
        check_eq "no masquerade chain left" "$(masq_chains)" 0
        ;;
esac
