#!/usr/bin/env bash
# hostUsers: false (docs/internals/runtime.md): each such pod runs in a user namespace
# of its own with 65,536 host IDs no other pod has (container root is the
# range's first ID on the host), its rootfs and volumes usable through
# idmapped mounts (root's inside, writable where they should be), its range
# kept across an agent restart and freed with the pod, no mount left behind.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

# runc 1.1 reaches the rootfs as the container's root: the run dir's
# ancestors must be searchable by others (the agent checks and says so).
chmod 0711 "$WORK"
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

# inpod NAME CMD...: runs CMD in pod NAME's container
inpod() { nl exec "$1" -- "${@:2}" 2>&1 || true; }

# host_uid NAME: the host UID of pod NAME's container process
host_uid() {
        local uid id pid
        uid=$(pod_field "$1" 'p["metadata"]["uid"]')
        id=$(pod_runc_ids "$uid" | head -1)
        pid=$(runc --root "$RUN/runc" state "$id" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])' || true)
        awk '/^Uid:/ {print $2}' "/proc/$pid/status" 2>/dev/null || true
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
check_field "pod a runs" a 'p["status"]["phase"]' Running
check_field "pod b runs" b 'p["status"]["phase"]' Running
ra=$(range a)
rb=$(range b)
[ -n "$ra" ] && [ -n "$rb" ] && [ "$ra" != "$rb" ] && [ $((ra % 65536)) -eq 0 ] && [ "$ra" -ge 65536 ] &&
        [ $((rb % 65536)) -eq 0 ] && [ "$rb" -ge 65536 ] &&
        ok "two pods, two ranges above the host's IDs ($ra, $rb)" || fail "ranges: '$ra' '$rb'"
out=$(inpod a cat /proc/self/uid_map)
[ "$(echo $out)" = "0 $ra 65536" ] && ok "uid_map inside is the pod's range" || fail "uid_map: $out"
out=$(inpod a cat /proc/self/gid_map)
[ "$(echo $out)" = "0 $ra 65536" ] && ok "gid_map inside is the pod's range" || fail "gid_map: $out"
out=$(inpod a id -u)
[ "$out" = 0 ] && ok "id -u is 0 inside" || fail "id -u: $out"
out=$(host_uid a)
[ "$out" = "$ra" ] && ok "the process's host UID is the range start" || fail "host uid: $out (want $ra)"
out=$(inpod a stat -c %u:%g /bin/sh /etc)
[ "$(echo $out)" = "0:0 0:0" ] && ok "the image's files are root's inside" || fail "rootfs owners: $out"
out=$(inpod a sh -c 'echo x >/etc/written && cat /etc/written')
[ "$out" = x ] && ok "the rootfs is writable by root inside" || fail "rootfs write: $out"
out=$(inpod a sh -c 'stat -c %u:%g /scratch && echo y >/scratch/f && cat /scratch/f')
[ "$(echo $out)" = "0:0 y" ] && ok "the emptyDir is root's and writable" || fail "emptyDir: $out"
out=$(inpod a sh -c 'stat -c %u:%g /host/f && cat /host/f && echo z >/host/g')
[ "$(echo $out)" = "0:0 host-file" ] && ok "the hostPath is root's inside and writable" || fail "hostPath: $out"
[ "$(stat -c %u "$WORK/host/g" 2>/dev/null)" = 0 ] &&
        ok "what the pod writes on the hostPath is host root's" || fail "host owner of g: $(stat -c %u "$WORK/host/g")"

# The ranges survive a restart of the agent (the pods are adopted).
stop_agent
start_agent
put_manifest c.yaml < <(userns_pod c)
check_field "pod c runs after the restart" c 'p["status"]["phase"]' Running
check_field "pod a is still running" a 'p["status"]["phase"]' Running
[ "$(range a)" = "$ra" ] && [ "$(range b)" = "$rb" ] && ok "a and b keep their ranges" ||
        fail "ranges after restart: $(range a) $(range b)"
rc=$(range c)
[ -n "$rc" ] && [ "$rc" != "$ra" ] && [ "$rc" != "$rb" ] && ok "pod c got a range of its own ($rc)" ||
        fail "pod c's range: '$rc'"
out=$(host_uid a)
[ "$out" = "$ra" ] && ok "pod a's container kept its host UID" || fail "host uid after restart: $out"

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
check_field "pod d runs" d 'p["status"]["phase"]' Running
rm -f "$MAN/d.yaml"
for ((i = 0; i < 300; i++)); do pod_json d >/dev/null || break; sleep 0.2; done
for ((i = 0; i < 300; i++)); do [ -z "$(ls "$ROOT/pods")" ] && break; sleep 0.2; done
stop_agent
check_no_leftovers
finish
