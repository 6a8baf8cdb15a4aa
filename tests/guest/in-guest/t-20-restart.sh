#!/usr/bin/env bash
# The agent stopped, restarted and killed by systemd while pods run:
# `systemctl stop` then `start`, `systemctl restart`, and
# `systemctl kill -s KILL` then `start`. Each time the containers keep
# running (KillMode=process) and the new agent adopts them: the same
# container IDs, start times and restart counts in the agent's /pods, the
# same container processes in runc.
. "$(dirname "$0")/lib.sh"

nanolet_install || exit 1
check "test image loaded" nanolet_load_test_image
sleep_pod a | put_manifest a.yaml
cat <<'YAML' | put_manifest b.yaml
apiVersion: v1
kind: Pod
metadata: {name: b, namespace: default}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - {name: one, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
  - {name: two, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
YAML
wait_until 300 "two pods Running and ready" pods_running 2 || exit 1

# snapshot: per container, what must not change across an adoption.
snapshot() {
        api_pods | jq -r '.items[] | .metadata.name as $p | .metadata.uid as $u |
                .status.containerStatuses[] |
                "\($p) \($u) \(.name) \(.containerID) \(.state.running.startedAt) \(.restartCount)"' | sort
}
processes() {
        runc --root /run/nanolet/runc list -f json | jq -r '.[] | "\(.id) \(.pid) \(.status)"' | sort
}
# The host side of each pod's veth keeps the MAC address its CNI result
# reports: the package's .link file keeps systemd-udevd's
# MACAddressPolicy=persistent from replacing it when udev wins the race
# with the plugin, which fails the CNI CHECK of that pod's adoptions below.
veth_macs() {
        local f name mac
        for f in /var/lib/nanolet/cni/results/*.json; do
                jq -r '.result.interfaces[] | select(.sandbox == null and (.name | startswith("veth")))
                        | "\(.name) \(.mac)"' "$f" || return 1
        done | while read -r name mac; do
                echo "$name result $mac host $(cat "/sys/class/net/$name/address" 2>&1)"
        done
}
macs=$(veth_macs)
printf '%s\n' "$macs" | keep veth-macs.txt
check_eq "a host-side veth in each pod's CNI result" "$(grep -c '^veth' <<<"$macs")" 2
check "host-side veths keep the MAC address their CNI result reports" \
        bash -c '! awk "\$3 != \$5" <<<"$1" | grep .' _ "$macs"
check "the package's .link file is installed" test -f /usr/lib/systemd/network/80-nanolet-veth.link
# The cause, on a pair of its own and without the race: udev's queue is
# held while the kernel-given addresses are read; then udev leaves the veth
# the file matches as created and rewrites the other (99-default.link).
udevadm settle
udevadm control --stop-exec-queue
ip link add vethc0ffee01 type veth peer name nltveth0
matched=$(cat /sys/class/net/vethc0ffee01/address)
unmatched=$(cat /sys/class/net/nltveth0/address)
udevadm control --start-exec-queue
udevadm settle
check_eq "udev keeps the MAC address of a veth named as the CNI plugins name them" \
        "$(cat /sys/class/net/vethc0ffee01/address)" "$matched"
check "udev's own policy still applies to other veths (it rewrote nltveth0's MAC address)" \
        test "$(cat /sys/class/net/nltveth0/address)" != "$unmatched"
ip link del vethc0ffee01

before=$(snapshot)
procs=$(processes)
printf '%s\n' "$before" | keep snapshot-before.txt
check_eq "three containers recorded" "$(wc -l <<<"$before")" 3
check_eq "three container processes running in runc" "$(grep -c ' running$' <<<"$procs")" 3

# after DESC: the agent is back, has adopted every pod, nothing restarted.
after() {
        local desc=$1 now
        wait_until 120 "$desc: agent active again" \
                bash -c '[ "$(systemctl show -p ActiveState --value nanolet)" = active ]'
        wait_until 120 "$desc: both pods Running and ready after adoption" pods_running 2
        now=$(snapshot)
        printf '%s\n' "$now" | keep "snapshot-$desc.txt"
        check_eq "$desc: container IDs, start times and restart counts unchanged" "$now" "$before"
        check_eq "$desc: the same container processes in runc" "$(processes)" "$procs"
}

systemctl stop nanolet
check_eq "stop: unit inactive" "$(systemctl show -p ActiveState --value nanolet)" inactive
check_eq "stop: containers kept running" "$(processes)" "$procs"
systemctl start nanolet
after stop-start

systemctl restart nanolet
after restart

pid=$(systemctl show -p MainPID --value nanolet)
systemctl kill -s KILL nanolet
wait_until 30 "kill -s KILL: the agent process is gone" bash -c "! kill -0 $pid 2>/dev/null"
check_eq "kill -s KILL: containers kept running" "$(processes)" "$procs"
systemctl start nanolet
after kill

journalctl -u nanolet -o cat --no-pager | keep journal-cat.txt
check "no CNI CHECK of an adopted pod failed (three adoptions of two pods)" \
        bash -c '! journalctl -u nanolet -o cat --no-pager | grep "CNI CHECK of the adopted network failed"'
rm -f "$NANOLET_MANIFESTS/a.yaml" "$NANOLET_MANIFESTS/b.yaml"
wait_until 120 "pods removed with their manifests" pods_count 0
wait_until 60 "no container left in runc" bash -c '[ -z "$(runc --root /run/nanolet/runc list -q)" ]'
