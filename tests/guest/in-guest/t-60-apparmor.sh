#!/usr/bin/env bash
# AppArmor on a kernel that enforces it, as kubelet and containerd apply it:
# a container that names no profile, or RuntimeDefault, runs under nanolet's
# own profile (nanolet-default, enforce), which the agent loads with
# apparmor_parser when the kernel does not have it; a Localhost profile the
# host loaded applies by field and by annotation; Unconfined and privileged
# containers run unconfined; a Localhost profile that is not loaded keeps the
# container from starting with a reason naming it. Each container prints
# the label of its own first process (/proc/self/attr/current) to its log.
. "$(dirname "$0")/lib.sh"

nanolet_install || exit 1
check "test image loaded" nanolet_load_test_image

profiles=/sys/kernel/security/apparmor/profiles
# The agent must load its profile itself: an earlier file's pods had it loaded.
if grep -q '^nanolet-default ' "$profiles"; then
        apparmor_parser -R /usr/share/nanolet/apparmor/nanolet-default
fi
check "nanolet-default not loaded before the pods" bash -c "! grep -q '^nanolet-default ' $profiles"

# A Localhost profile, loaded as an administrator would.
cat >/tmp/nanolet-test-local <<'PROFILE'
abi <abi/3.0>,
#include <tunables/global>
profile nanolet-test-local flags=(attach_disconnected,mediate_deleted) {
  #include <abstractions/base>
  file,
  network,
  capability,
  signal,
  ptrace,
  umount,
  deny /tmp/** w,
}
PROFILE
check "the test's Localhost profile loads" apparmor_parser -r /tmp/nanolet-test-local
apparmor_parser -R /tmp/nanolet-missing 2>/dev/null || true

# label: print the container's own AppArmor label, then sleep.
label='cat /proc/self/attr/current; echo; exec sleep 3600'
cat <<YAML | put_manifest apparmor.yaml
apiVersion: v1
kind: Pod
metadata:
  name: apparmor
  namespace: default
  annotations:
    container.apparmor.security.beta.kubernetes.io/anno-local: localhost/nanolet-test-local
    container.apparmor.security.beta.kubernetes.io/anno-unconfined: unconfined
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: none, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "$label"]}
  - {name: default, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "$label"],
     securityContext: {appArmorProfile: {type: RuntimeDefault}}}
  - {name: local, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "$label"],
     securityContext: {appArmorProfile: {type: Localhost, localhostProfile: nanolet-test-local}}}
  - {name: anno-local, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "$label"]}
  - {name: unconfined, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "$label"],
     securityContext: {appArmorProfile: {type: Unconfined}}}
  - {name: anno-unconfined, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "$label"]}
  - {name: privileged, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "$label"],
     securityContext: {privileged: true}}
YAML
cat <<YAML | put_manifest missing.yaml
apiVersion: v1
kind: Pod
metadata: {name: missing, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"],
     securityContext: {appArmorProfile: {type: Localhost, localhostProfile: nanolet-missing}}}
YAML

# pod_json NAME: the agent's view of the pod NAME-<node>.
pod_json() { api_pods | jq -e --arg n "$1-" '.items[] | select(.metadata.name | startswith($n))'; }
export -f pod_json api_pods
wait_until 300 "pod apparmor Running with its 7 containers ready" bash -c \
        'pod_json apparmor | jq -e ".status.phase == \"Running\" and ([.status.containerStatuses[] | .ready] | all)"'
check "the agent loaded nanolet-default, in enforce mode" grep -qx 'nanolet-default (enforce)' "$profiles"
journalctl -u nanolet -o cat --no-pager | keep journal.txt
check "the agent logged the load" grep -q 'Loaded the AppArmor profile nanolet-default' \
        "$GUEST_OUT/$GUEST_FILE/journal.txt"

# label_of CONTAINER: the first line of its log.
label_of() { nanolet logs apparmor -c "$1" 2>&1 | head -n 1; }
check_eq "no profile named: RuntimeDefault, nanolet-default enforced" "$(label_of none)" "nanolet-default (enforce)"
check_eq "RuntimeDefault: nanolet-default enforced" "$(label_of default)" "nanolet-default (enforce)"
check_eq "Localhost by field: the host's profile" "$(label_of local)" "nanolet-test-local (enforce)"
check_eq "Localhost by annotation: the host's profile" "$(label_of anno-local)" "nanolet-test-local (enforce)"
check_eq "Unconfined by field" "$(label_of unconfined)" "unconfined"
check_eq "Unconfined by annotation" "$(label_of anno-unconfined)" "unconfined"
check_eq "privileged: no profile (RuntimeDefault does not apply)" "$(label_of privileged)" "unconfined"
check "unconfined: a file can be written to /tmp" nanolet exec apparmor -c unconfined -- touch /tmp/x
check "the Localhost profile is enforced: its deny of /tmp writes holds" \
        bash -c 'out=$(nanolet exec apparmor -c local -- touch /tmp/y 2>&1); [[ $out == *"Permission denied"* ]]'

wait_until 120 "a Localhost profile that is not loaded: CreateContainerConfigError" bash -c \
        'pod_json missing | jq -e ".status.containerStatuses[0].state.waiting.reason == \"CreateContainerConfigError\""'
msg=$(pod_json missing | jq -r '.status.containerStatuses[0].state.waiting.message')
note "missing: $msg"
check "its message names the container and the profile" \
        grep -q 'container "main": AppArmor profile "nanolet-missing" is not loaded' <<<"$msg"
check_eq "and the container never ran" \
        "$(pod_json missing | jq -r '.status.containerStatuses[0].restartCount')" 0

rm -f "$NANOLET_MANIFESTS/apparmor.yaml" "$NANOLET_MANIFESTS/missing.yaml"
wait_until 120 "pods removed with their manifests" pods_count 0
apparmor_parser -R /tmp/nanolet-test-local 2>/dev/null || true
