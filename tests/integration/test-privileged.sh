#!/usr/bin/env bash
# privileged: true gets every device node of the host, as containerd and
# CRI-O give it (docs/manifests.md): the container's /dev holds the same
# nodes as the host's (its own pts, shm, mqueue and console apart), the
# device cgroup allows them (the disk's first sector and /dev/kmsg read,
# /dev/null written), and a container without privileged in the same pod
# has only the default nodes.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

load_test_image || fail "load the test image"
start_agent
put_manifest privileged.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: privileged}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: priv, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"],
     securityContext: {privileged: true}}
  - {name: plain, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
YAML
check_field "the pod runs" privileged 'p["status"]["phase"]' Running
wait_field privileged '",".join(str(c.get("ready")) for c in p["status"]["containerStatuses"])' True,True ||
        fail "both containers ready"

nodes='find /dev \( -path /dev/pts -o -path /dev/shm -o -path /dev/mqueue -o -path /dev/fd \) -prune -o \( -type c -o -type b \) -print | grep -vxE "/dev/(console|ptmx)"'
host=$(bash -c "$nodes" | sort)
inside=$(nl exec privileged -c priv -- sh -c "$nodes" | sort)
plain=$(nl exec privileged -c plain -- sh -c "$nodes" | sort)
echo "device nodes: host $(wc -l <<<"$host"), privileged $(wc -l <<<"$inside"), plain $(wc -l <<<"$plain")"
missing=$(comm -23 <(printf '%s\n' "$host") <(printf '%s\n' "$inside"))
[ -z "$missing" ] && ok "every host device node is in the privileged container's /dev" ||
        fail "missing in the privileged container: $(echo $missing)"
[ "$(wc -l <<<"$plain")" -lt 12 ] && ! grep -qx /dev/kmsg <<<"$plain" &&
        ok "the plain container has only the default nodes" || fail "plain container's /dev: $(echo $plain)"

nl exec privileged -c priv -- sh -c 'head -n 1 /dev/kmsg >/dev/null' &&
        ok "privileged: /dev/kmsg is readable" || fail "privileged: /dev/kmsg not readable"
nl exec privileged -c priv -- sh -c 'echo x > /dev/null' && ok "privileged: /dev/null is writable" ||
        fail "privileged: /dev/null not writable"
nl exec privileged -c priv -- test -c /dev/loop-control && ok "privileged: /dev/loop-control" ||
        fail "privileged: no /dev/loop-control"
disk=$(ls /dev/vda /dev/sda /dev/nvme0n1 /dev/xvda 2>/dev/null | head -n 1 || true)
if [ -n "$disk" ] && ! head -c 512 "$disk" >/dev/null 2>&1; then
        echo "-- the host itself may not read $disk (a sandbox): the disk check is left out"
elif [ -n "$disk" ]; then
        nl exec privileged -c priv -- sh -c "head -c 512 $disk >/dev/null" &&
                ok "privileged: the host's disk $disk is readable" || fail "privileged: $disk not readable"
        ! nl exec privileged -c plain -- test -e "$disk" && ok "plain: no $disk" || fail "plain: $disk is there"
else
        echo "-- no /dev/vda, sda, nvme0n1 or xvda on this host: the disk check is left out"
fi
nl exec privileged -c plain -- sh -c 'echo x > /dev/null' && ok "plain: /dev/null is writable" ||
        fail "plain: /dev/null not writable"
bundle=$(ls "$ROOT"/pods/*/containers/priv/*/bundle/config.json 2>/dev/null | head -1)
[ -n "$bundle" ] && python3 -c '
import json, sys
c = json.load(open(sys.argv[1]))
assert len(c["linux"]["devices"]) > 10
assert c["linux"]["resources"]["devices"] == [{"allow": True, "access": "rwm"}]' "$bundle" &&
        ok "config.json: linux.devices listed, the device cgroup allows all" || fail "config.json of priv: $bundle"

rm -f "$MAN/privileged.yaml"
expect "pod removed with its manifest" "$AGENT_LOG" "Pod \"privileged-node1_default\\([0-9a-f-]+\\)\" is gone" 1 120
stop_agent
check_no_leftovers
finish
