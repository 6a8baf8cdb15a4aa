#!/usr/bin/env bash
# hostUsers: false (docs/internals/runtime.md) on the host, with runc: each
# such pod gets 65,536 host IDs no other pod has, kept across an agent
# restart and freed with the pod; its container is refused with a reason
# naming crun, since runc could not exec into it; hostNetwork with
# hostUsers: false fails validation; nothing is left behind. What runs
# inside such a pod (ID maps, idmapped rootfs and volumes) is checked with
# crun in the guest (tests/guest/in-guest/t-70-userns.sh).
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

load_test_image || fail "load the test image"
mkdir -p "$WORK/host"
echo host-file >"$WORK/host/f"

# userns_pod NAME
userns_pod() {
        cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  terminationGracePeriodSeconds: 1
  hostUsers: false
  volumes:
  - {name: scratch, emptyDir: {}}
  - {name: host, hostPath: {path: $WORK/host}}
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, 'exec sleep 3600']
    volumeMounts:
    - {name: scratch, mountPath: /scratch}
    - {name: host, mountPath: /host}
YAML
}

# range NAME: the first host ID the pod's record names
range() {
        local uid
        uid=$(pod_field "$1" 'p["metadata"]["uid"]')
        python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["hostID"])' \
                "$ROOT/pods/$uid/userns.json" 2>/dev/null
}

start_agent
put_manifest a.yaml < <(userns_pod a)
put_manifest b.yaml < <(userns_pod b)
# runc cannot join the pod's namespaces from the container's user namespace
# (exec would fail): the container waits with the reason, as a runtime
# that refuses it; crun runs it (tests/guest/in-guest/t-70-userns.sh).
for n in a b; do
        check_field "pod $n refused under runc" $n \
                'p["status"]["containerStatuses"][0]["state"].get("waiting", {}).get("reason")' \
                CreateContainerError
        msg=$(pod_field $n 'p["status"]["containerStatuses"][0]["state"]["waiting"]["message"]')
        [[ $msg == *"hostUsers: false needs crun"* ]] && ok "pod $n: the message names crun" ||
                fail "pod $n's message: $msg"
done
[ -z "$(pod_runc_ids "$(pod_field a 'p["metadata"]["uid"]')")" ] && ok "no container was created for a" ||
        fail "a container runs for a hostUsers: false pod under runc"
ra=$(range a)
rb=$(range b)
[ -n "$ra" ] && [ -n "$rb" ] && [ "$ra" != "$rb" ] && [ "$ra" -ge 65536 ] && [ "$rb" -ge 65536 ] &&
        ok "two pods, two ranges above the host's IDs ($ra, $rb)" || fail "ranges: '$ra' '$rb'"

# The ranges survive a restart of the agent.
stop_agent
start_agent
put_manifest c.yaml < <(userns_pod c)
check_field "pod c refused after the restart" c \
        'p["status"]["containerStatuses"][0]["state"].get("waiting", {}).get("reason")' CreateContainerError
[ "$(range a)" = "$ra" ] && [ "$(range b)" = "$rb" ] && ok "a and b keep their ranges" ||
        fail "ranges after restart: $(range a) $(range b)"
rc=$(range c)
[ -n "$rc" ] && [ "$rc" != "$ra" ] && [ "$rc" != "$rb" ] && ok "pod c got a range of its own ($rc)" ||
        fail "pod c's range: '$rc'"

# hostNetwork with hostUsers: false is refused by validation.
cat >"$WORK/bad.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: bad}
spec:
  hostUsers: false
  hostNetwork: true
  containers: [{name: c, image: nanolet-test}]
YAML
out=$("$NANOLET" validate "$WORK/bad.yaml" 2>&1) && fail "validate accepted hostNetwork with hostUsers: false" ||
        { echo "$out" | grep -q 'spec.hostNetwork.*may not be true when hostUsers is false' &&
                ok "nanolet validate names spec.hostNetwork" || fail "validate: $out"; }

# Removal frees the ranges and leaves no mounts.
rm -f "$MAN/a.yaml" "$MAN/b.yaml" "$MAN/c.yaml"
for n in a b c; do
        for ((i = 0; i < 300; i++)); do pod_json $n >/dev/null || break; sleep 0.2; done
done
for ((i = 0; i < 300; i++)); do [ -z "$(ls "$ROOT/pods")" ] && break; sleep 0.2; done
put_manifest d.yaml < <(userns_pod d)
check_field "pod d refused" d 'p["status"]["containerStatuses"][0]["state"].get("waiting", {}).get("reason")' \
        CreateContainerError
rd=$(range d)
[ "$rd" != "$ra" ] && ok "a freed range is not handed out again at once ($rd)" || fail "pod d reuses $ra"
rm -f "$MAN/d.yaml"
for ((i = 0; i < 300; i++)); do pod_json d >/dev/null || break; sleep 0.2; done
for ((i = 0; i < 300; i++)); do [ -z "$(ls "$ROOT/pods")" ] && break; sleep 0.2; done
stop_agent
check_no_leftovers
finish
