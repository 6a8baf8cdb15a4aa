#!/usr/bin/env bash
# Image volumes (volumes[].image) through the real agent: a second image,
# built at test time as the test images are (tests/images/make-images.py:
# two layers, a script with the exec bit, symlinks pointing out of the
# image), mounted whole and with subPath; inside the container the files of
# both layers are there, writes and exec are refused and /proc/mounts says
# ro,noexec. While a pod runs, `image rm` refuses the image; after the
# agent is killed (-9) and restarted, the pod's removal still leaves no
# mount and no directory. A missing image gives ErrImagePull then
# ImagePullBackOff (pullPolicy Never: ErrImageNeverPull); a subPath through
# a symlink that leaves the image, or with "..", is refused; an image
# volume with pullPolicy Always is pulled from a registry (127.0.0.1) with
# the pod's imagePullSecrets.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"
. "$(dirname "$0")/lib-registry.sh"

start_registry
load_test_image || { fail "test image"; finish; }
DATA_REF=localhost/nanolet-data:1
python3 - "$TEST_DATA_DIR/images/make-images.py" "$WORK/images/data.tar" "$DATA_REF" <<'PY' || { fail "data image"; finish; }
import importlib.util, sys
spec = importlib.util.spec_from_file_location("make_images", sys.argv[1])
mi = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mi)
l1 = mi.tar_bytes([
    ("data", "dir", {}),
    ("data/hello.txt", "file", {"data": b"hello from the image volume\n"}),
    ("data/tool.sh", "file", {"data": b"#!/bin/sh\necho TOOL-RAN\n", "mode": 0o755}),
    ("data/sub", "dir", {}),
    ("data/sub/inner.txt", "file", {"data": b"inner\n"}),
    ("escape", "symlink", {"target": "../../../../../../../../.."}),
    ("abs", "symlink", {"target": "/etc"}),
])
l2 = mi.tar_bytes([
    ("data", "dir", {}),
    ("data/sub", "dir", {}),
    ("data/sub/second.txt", "file", {"data": b"second layer\n"}),
])
blobs, desc, _, _ = mi.make_image([l1, l2], {})
mi.write_oci_archive(sys.argv[2], [(sys.argv[3], blobs, desc)])
PY
"$NANOLET" image --root-dir "$ROOT" load "$WORK/images/data.tar" >/dev/null || fail "load the data image"
push "oci-archive:$WORK/images/data.tar:$DATA_REF" test/data:v1

cat <<YAML | put_manifest secret-good.yaml
apiVersion: v1
kind: Secret
metadata: {name: good}
type: kubernetes.io/dockerconfigjson
data:
  .dockerconfigjson: $(dockerconfigjson tester s3cret)
YAML

start_agent --stop-pods-on-exit --registry-certs-dir "$CERTS" \
        --image-credential-file "$WORK/no-such-config.json"

mounts_under() { awk -v d="$1" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo; }
pod_uid() { pod_field "$1" 'p["metadata"]["uid"]'; }
# pod_gone NAME UID: the manifest removed, the agent reports the pod gone,
# and nothing of it is mounted or left on disk.
pod_gone() {
        rm -f "$MAN/$1.yaml"
        expect "pod $1 removed" "$AGENT_LOG" "Pod \"$1-node1_default\\([0-9a-f-]+\\)\" is gone" 1 120
        [ -n "$2" ] || { fail "no uid for pod $1"; return; }
        local left
        left=$(mounts_under "$ROOT/pods/$2")
        [ -z "$left" ] && ok "$1: no mount left below its pod directory" || fail "$1: mounts left: $left"
        [ ! -e "$ROOT/pods/$2" ] && ok "$1: pod directory removed" || fail "$1: left: $(find "$ROOT/pods/$2" | head -20)"
}
waiting() { pod_field "$1" "p['status']['containerStatuses'][$2]['state'].get('waiting', {}).get('$3')"; }

# --- mounted whole and with subPath, read-only and noexec inside
put_manifest local.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: local, namespace: default}
spec:
  restartPolicy: Never
  volumes:
  - {name: data, image: {reference: "$DATA_REF"}}
  containers:
  - name: app
    image: nanolet-test
    imagePullPolicy: Never
    command:
    - sh
    - -c
    - |
      cat /img/data/hello.txt /sub/inner.txt /sub/second.txt
      if touch /img/x 2>/dev/null; then echo WRITABLE; else echo READONLY; fi
      if touch /sub/x 2>/dev/null; then echo SUB-WRITABLE; else echo SUB-READONLY; fi
      if /img/data/tool.sh 2>/dev/null; then echo EXEC-ALLOWED; else echo NOEXEC; fi
      grep ' /img ' /proc/mounts
    volumeMounts:
    - {name: data, mountPath: /img}
    - {name: data, mountPath: /sub, subPath: data/sub}
YAML
check_field "local: Succeeded" local 'p["status"]["phase"]' Succeeded 60
uid=$(pod_uid local)
log=$(cat "$LOGS"/default_local-node1_*/app/0.log 2>/dev/null | sed 's/^[^ ]* std[a-z]* [FP] //' || true)
for want in "hello from the image volume" inner "second layer" READONLY SUB-READONLY NOEXEC; do
        grep -qx "$want" <<<"$log" && ok "local: $want" || fail "local: no \"$want\" in: $log"
done
mline=$(grep ' /img ' <<<"$log" || true)
[[ $mline == *" ro,"* && $mline == *noexec* && $mline == *nosuid* ]] &&
        ok "local: /img is ro,nosuid,noexec ($mline)" || fail "local: /img mount: $mline"
left=$(mounts_under "$ROOT/pods/$uid" | grep -E '/subpaths(/|$)' || true)
[ -z "$left" ] && ok "local: image volume mounts of the exited container released" || fail "local: left: $left"
pod_gone local "$uid"

# --- a running pod: the host's mount is sealed, the image is in use; after
# an agent crash the pod's removal still cleans up
put_manifest running.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: running, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: data, image: {reference: "$DATA_REF", pullPolicy: IfNotPresent}}
  containers:
  - name: app
    image: nanolet-test
    imagePullPolicy: Never
    command: [sleep, "3600"]
    volumeMounts: [{name: data, mountPath: /img}]
YAML
check_field "running: Running" running 'p["status"]["phase"]' Running 60
uid=$(pod_uid running)
target=$ROOT/pods/$uid/containers/app/0/subpaths/image-data
opts=$(awk -v t="$target" '$5 == t {print $6}' /proc/self/mountinfo)
[[ ,$opts, == *,ro,* && ,$opts, == *,noexec,* ]] && ok "running: the agent's mount of the image is ro,noexec ($opts)" ||
        fail "running: mount of $target: '$opts'"
out=$(nl exec running -- cat /img/data/sub/second.txt 2>&1 || true)
[ "$out" = "second layer" ] && ok "running: exec reads the image volume" || fail "running: exec: $out"
rc=0
"$NANOLET" image --root-dir "$ROOT" rm "$DATA_REF" >"$WORK/rm.out" 2>&1 || rc=$?
[ "$rc" -ne 0 ] && ok "running: image rm refused while the pod uses the image" || fail "image rm removed an image in use"
grep -q imageVolumeDigests "$ROOT/pods/$uid/containers/app/0/attempt.json" &&
        ok "running: the attempt records the image volume's digest" || fail "attempt.json: $(cat "$ROOT/pods/$uid/containers/app/0/attempt.json")"
kill -9 "$AGENT_PID"
wait "$AGENT_PID" 2>/dev/null || true
AGENT_PID=
start_agent --stop-pods-on-exit --registry-certs-dir "$CERTS" \
        --image-credential-file "$WORK/no-such-config.json"
check_field "running: adopted after the crash" running 'p["status"]["phase"]' Running 60
[ -n "$(mounts_under "$target")" ] && ok "running: the adopted container keeps its image volume" || fail "running: mount lost on adoption"
pod_gone running "$uid"

# --- missing images: kubelet's waiting reasons, with back-off
put_manifest missing.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: missing, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: gone, image: {reference: "127.0.0.1:1/nanolet-missing:1"}}
  - {name: never, image: {reference: "localhost/nanolet-absent:1", pullPolicy: Never}}
  containers:
  - name: a
    image: nanolet-test
    imagePullPolicy: Never
    command: [sleep, "3600"]
    volumeMounts: [{name: gone, mountPath: /g}]
  - name: b
    image: nanolet-test
    imagePullPolicy: Never
    command: [sleep, "3600"]
    volumeMounts: [{name: never, mountPath: /n}]
YAML
check_field "missing: ImagePullBackOff" missing \
        "p['status']['containerStatuses'][0]['state'].get('waiting', {}).get('reason')" ImagePullBackOff 60
msg=$(waiting missing 0 message)
[[ $msg == 'Back-off pulling image "127.0.0.1:1/nanolet-missing:1": ErrImagePull: image volume "gone"'* ]] &&
        ok "missing: the message names the volume's image: $msg" || fail "missing: message: $msg"
grep -qE "Failed to start container \"a\" of pod \"missing-node1_default\([0-9a-f-]+\)\": ErrImagePull: image volume \"gone\"" "$AGENT_LOG" &&
        ok "missing: ErrImagePull logged first" || fail "missing: no ErrImagePull in the log"
check_field "missing: Never gives ErrImageNeverPull" missing \
        "p['status']['containerStatuses'][1]['state'].get('waiting', {}).get('reason')" ErrImageNeverPull 60
pod_gone missing "$(pod_uid missing)"

# --- hostile subPaths: symlinks out of the image, ".." after expansion
put_manifest hostile.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: hostile, namespace: default}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: data, image: {reference: "localhost/nanolet-data:1"}}
  containers:
  - name: rel
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, "ls /x; sleep 3600"]
    volumeMounts: [{name: data, mountPath: /x, subPath: escape}]
  - name: abs
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, "ls /x; sleep 3600"]
    volumeMounts: [{name: data, mountPath: /x, subPath: abs}]
  - name: dots
    image: nanolet-test
    imagePullPolicy: Never
    env: [{name: UP, value: "data/../../.."}]
    command: [sh, -c, "ls /x; sleep 3600"]
    volumeMounts: [{name: data, mountPath: /x, subPathExpr: "$(UP)"}]
  - name: nope
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, "ls /x; sleep 3600"]
    volumeMounts: [{name: data, mountPath: /x, subPath: data/nope}]
YAML
for i in 0 1 2 3; do
        check_field "hostile: container $i refused" hostile \
                "p['status']['containerStatuses'][$i]['state'].get('waiting', {}).get('reason') in ('CreateContainerConfigError', 'CrashLoopBackOff')" True 60
done
[ "$(waiting hostile 0 reason)" = CreateContainerConfigError ] && [[ $(waiting hostile 0 message) == *"leaves the volume"* ]] &&
        ok "hostile: relative symlink out of the image refused" || fail "hostile rel: $(waiting hostile 0 message)"
[[ $(waiting hostile 1 message) == *"leaves the volume"* ]] && ok "hostile: absolute symlink refused" || fail "hostile abs: $(waiting hostile 1 message)"
[[ $(waiting hostile 2 message) == *"must not contain '..'"* ]] && ok "hostile: '..' refused" || fail "hostile dots: $(waiting hostile 2 message)"
[[ $(waiting hostile 3 message) == *"does not exist in the image"* ]] && ok "hostile: a missing subPath is not created" || fail "hostile nope: $(waiting hostile 3 message)"
[ -z "$(pod_field hostile "[s for s in p['status']['containerStatuses'] if 'running' in s['state']]" | tr -d '[]')" ] &&
        ok "hostile: no container ran" || fail "hostile: a container ran"
pod_gone hostile "$(pod_uid hostile)"
cat >"$WORK/dots.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: dots}
spec:
  volumes: [{name: data, image: {reference: "localhost/nanolet-data:1"}}]
  containers:
  - {name: c, image: nanolet-test, volumeMounts: [{name: data, mountPath: /x, subPath: ../etc}]}
YAML
rc=0
"$NANOLET" validate "$WORK/dots.yaml" >"$WORK/validate.out" 2>&1 || rc=$?
[ "$rc" -ne 0 ] && grep -q "must not contain '..'" "$WORK/validate.out" && ok "validate refuses subPath ../etc" ||
        fail "validate: rc $rc: $(cat "$WORK/validate.out")"

# --- pulled from a registry with the pod's imagePullSecrets (Always)
put_manifest pulled.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: pulled, namespace: default}
spec:
  restartPolicy: Never
  imagePullSecrets: [{name: good}]
  volumes:
  - {name: data, image: {reference: "$REG/test/data:v1", pullPolicy: Always}}
  containers:
  - name: app
    image: nanolet-test
    imagePullPolicy: Never
    command: [cat, /img/data/hello.txt]
    volumeMounts: [{name: data, mountPath: /img}]
YAML
check_field "pulled: Succeeded" pulled 'p["status"]["phase"]' Succeeded 90
nl events pulled-node1 >"$WORK/ev" 2>/dev/null || true
grep -q "Pulling image \"$REG/test/data:v1\"" "$WORK/ev" && grep -q "Successfully pulled image \"$REG/test/data:v1\"" "$WORK/ev" &&
        ok "pulled: Pulling and Pulled events for the volume's image" || fail "pulled: events: $(cat "$WORK/ev")"
grep -q 'hello from the image volume' "$LOGS"/default_pulled-node1_*/app/0.log 2>/dev/null &&
        ok "pulled: the container read the pulled image" || fail "pulled: log: $(cat "$LOGS"/default_pulled-node1_*/app/0.log 2>/dev/null)"
pod_gone pulled "$(pod_uid pulled)"

stop_agent
check_no_leftovers
finish
