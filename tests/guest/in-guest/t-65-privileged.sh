#!/usr/bin/env bash
# privileged: true gets every device node of the host, as containerd and
# CRI-O give it: the same nodes in the container's /dev as in the host's
# (apart from the container's own pts, shm, mqueue and console), with
# access allowed by the device cgroup (cgroup v2: runc's eBPF program): the
# guest's disk is readable, /dev/kmsg too, /dev/null writable. A container
# without privileged has only the default nodes.
. "$(dirname "$0")/lib.sh"

nanolet_install || exit 1
check "test image loaded" nanolet_load_test_image

cat <<'YAML' | put_manifest privileged.yaml
apiVersion: v1
kind: Pod
metadata: {name: privileged, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: priv, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"],
     securityContext: {privileged: true}}
  - {name: plain, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
YAML
wait_until 300 "pod privileged Running" pods_running 1 || exit 1

# nodes_script: the device nodes below /dev, one path a line, without what
# every container has of its own (runc makes /dev/ptmx a link into pts).
nodes_script='find /dev \( -path /dev/pts -o -path /dev/shm -o -path /dev/mqueue -o -path /dev/fd \) -prune -o \( -type c -o -type b \) -print | grep -vxE "/dev/(console|ptmx)"'
host=$(bash -c "$nodes_script" | sort)
inside=$(nanolet exec privileged -c priv -- sh -c "$nodes_script" | sort)
plain=$(nanolet exec privileged -c plain -- sh -c "$nodes_script" | sort)
printf '%s\n' "$host" | keep host-dev.txt
printf '%s\n' "$inside" | keep privileged-dev.txt
printf '%s\n' "$plain" | keep plain-dev.txt
note "device nodes: host $(wc -l <<<"$host"), privileged $(wc -l <<<"$inside"), plain $(wc -l <<<"$plain")"
missing=$(comm -23 <(printf '%s\n' "$host") <(printf '%s\n' "$inside"))
check_eq "every host device node is in the privileged container's /dev" "$missing" ""
check "more than 50 of them" test "$(wc -l <<<"$inside")" -gt 50
check "the plain container has only the default nodes (no /dev/kmsg)" \
        bash -c "[ $(wc -l <<<"$plain") -lt 12 ] && ! grep -qx /dev/kmsg <<<'$plain'"

disk=$(ls /dev/vda /dev/sda 2>/dev/null | head -n 1)
check "the guest has a disk ($disk)" test -n "$disk"
check "privileged: the disk's first sector is readable ($disk)" \
        nanolet exec privileged -c priv -- sh -c "head -c 512 $disk >/dev/null"
check "privileged: /dev/kmsg is readable" \
        nanolet exec privileged -c priv -- sh -c 'head -n 1 /dev/kmsg >/dev/null'
check "privileged: /dev/loop-control is there" nanolet exec privileged -c priv -- test -c /dev/loop-control
check "privileged: /dev/null is writable" nanolet exec privileged -c priv -- sh -c 'echo x > /dev/null'
check "plain: /dev/null is writable" nanolet exec privileged -c plain -- sh -c 'echo x > /dev/null'
check "plain: the disk is not there" bash -c "! nanolet exec privileged -c plain -- test -e $disk"

rm -f "$NANOLET_MANIFESTS/privileged.yaml"
wait_until 120 "pod removed with its manifest" pods_count 0
