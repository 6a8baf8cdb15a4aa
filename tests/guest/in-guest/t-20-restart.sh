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
rm -f "$NANOLET_MANIFESTS/a.yaml" "$NANOLET_MANIFESTS/b.yaml"
wait_until 120 "pods removed with their manifests" pods_count 0
wait_until 60 "no container left in runc" bash -c '[ -z "$(runc --root /run/nanolet/runc list -q)" ]'
