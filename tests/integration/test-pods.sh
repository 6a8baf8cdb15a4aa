#!/usr/bin/env bash
# The pod runtime end to end: real runc and conmon run pods from manifests
# dropped into a watched directory; processes, files, logs, exit codes,
# restart counts and status are checked from outside, and nothing is left.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

load_test_image || { fail "test image"; finish; }
HOSTDIR=$WORK/host
mkdir -p "$HOSTDIR"
start_agent

put() { # put FILE: stdin -> manifest, written as installers do (temp + rename)
        cat >"$MAN/.$1.tmp"
        mv "$MAN/.$1.tmp" "$MAN/$1"
}

# --- one container, its own network namespace, env/fieldRef/args expansion
put simple.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: simple, namespace: default, labels: {app: demo}}
spec:
  terminationGracePeriodSeconds: 3
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: ["sh", "-c"]
    args: ["echo hello \$(GREETING) \$POD_NAME \$POD_NS \$\$HOME; echo ip=\$POD_IP; grep -c \$POD_IP /etc/hosts > /host/hosts; ip link 2>/dev/null | grep -c UP > /host/links; echo \$\$\$\$ > /host/pid; exec sleep 3600"]
    env:
    - {name: GREETING, value: world}
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    - name: POD_NS
      valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
    - name: POD_IP
      valueFrom: {fieldRef: {fieldPath: status.podIP}}
    volumeMounts:
    - {name: host, mountPath: /host}
  volumes:
  - name: host
    hostPath: {path: $HOSTDIR, type: Directory}
YAML
check_field "simple pod Running" simple 'p["status"]["phase"]' Running
check_field "simple container ready" simple 'p["status"]["containerStatuses"][0]["ready"]' True
# No URL source, no HTTP probe: the running agent has mapped neither.
agent_maps "agent without libcurl while nothing needs it" no libcurl
agent_maps "agent without libcrypto" no libcrypto
wait_for "$LOGS/default_simple-node1_"*/main/0.log 'stdout F hello world simple-node1 default /root$' \
        && ok "env, fieldRef and \$(VAR) expansion in args" || fail "expansion: $(cat "$LOGS"/default_simple-node1_*/main/0.log)"
nl logs simple >"$WORK/out" 2>&1
grep -q '^hello world simple-node1 default' "$WORK/out" && ok "nanolet logs" || fail "nanolet logs: $(cat "$WORK/out")"
nl pods >"$WORK/out" 2>&1
grep -qE 'default +simple-node1 +1/1 +Running +0' "$WORK/out" && ok "nanolet pods" || fail "nanolet pods: $(cat "$WORK/out")"
rc=0
nl exec simple -- sh -c 'echo from-exec; exit 4' >"$WORK/out" 2>&1 || rc=$?
[ "$rc" = 4 ] && grep -q from-exec "$WORK/out" && ok "nanolet exec output and exit code" || fail "exec rc=$rc $(cat "$WORK/out")"
for ((i = 0; i < 150; i++)); do [ -s "$HOSTDIR/pid" ] && break; sleep 0.2; done
[ "$(cat "$HOSTDIR/pid" 2>/dev/null)" = 1 ] && ok "container is pid 1 of its own PID namespace, wrote to its hostPath" \
        || fail "pid file: $(cat "$HOSTDIR/pid" 2>/dev/null)"
cid=$(pod_field simple 'p["status"]["containerStatuses"][0]["containerID"].split("://")[1]')
pid=$(runc --root "$RUN/runc" state "$cid" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
[ "${pid:-0}" -gt 1 ] && kill -0 "$pid" && ok "runc state shows the running container (pid $pid)" || fail "runc state: $cid"
[ "$(cat "$HOSTDIR/links")" = 2 ] && ok "pod network namespace has lo and eth0 up" || fail "links up: $(cat "$HOSTDIR/links")"
podip=$(pod_field simple 'p["status"]["podIP"]')
python3 -c 'import ipaddress,sys; sys.exit(0 if ipaddress.ip_address(sys.argv[1]) in ipaddress.ip_network(sys.argv[2]) else 1)' "$podip" "$TEST_SUBNET" \
        && ok "pod IP $podip from the test network's range" || fail "pod IP '$podip' not in $TEST_SUBNET"
grep -q "stdout F ip=$podip\$" "$LOGS"/default_simple-node1_*/main/0.log && ok "status.podIP in the container's env" || fail "POD_IP env"
[ "$(cat "$HOSTDIR/hosts")" = 1 ] && ok "/etc/hosts names the pod IP" || fail "/etc/hosts: $(cat "$HOSTDIR/hosts")"
[ -L "$CLOGS/simple-node1_default_main-$cid.log" ] && ok "/var/log/containers-style symlink" || fail "no log symlink in $CLOGS: $(ls "$CLOGS")"
# The shapes log shippers and kubelet's own parsers expect: containerd's
# 64-hex IDs behind the runtime's scheme, and Fluent Bit's kubernetes filter
# regex (its kube.var.log.containers tag) on the symlink's name.
check_field "containerID is <runtime>://<64 hex>" simple \
        'bool(__import__("re").fullmatch(r"(runc|crun)://[0-9a-f]{64}", p["status"]["containerStatuses"][0]["containerID"]))' True 5
python3 - "$CLOGS/simple-node1_default_main-$cid.log" <<'PYEOF' && ok "the symlink name matches Fluent Bit's regex" || fail "Fluent Bit's regex does not match the symlink"
import os, re, sys
# fluent-bit plugins/filter_kubernetes/kube_regex.h, KUBE_TAG_TO_REGEX's file part
r = re.compile(r"(?P<pod_name>[a-z0-9](?:[-a-z0-9]*[a-z0-9])?(?:\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)_(?P<namespace_name>[^_]+)_(?P<container_name>.+)-(?P<docker_id>[a-z0-9]{64})\.log$")
m = r.match(os.path.basename(sys.argv[1]))
sys.exit(0 if m and m["pod_name"] == "simple-node1" and m["namespace_name"] == "default" and m["container_name"] == "main" else 1)
PYEOF

# --- init containers run in order, then the app; emptyDir shared
put init.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: init}
spec:
  initContainers:
  - {name: first, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "echo first >> /work/order; sleep 0.3"], volumeMounts: [{name: w, mountPath: /work}]}
  - {name: second, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "echo second >> /work/order"], volumeMounts: [{name: w, mountPath: /work}]}
  containers:
  - {name: app, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "echo app >> /work/order; cat /work/order; exec sleep 3600"], volumeMounts: [{name: w, mountPath: /work}]}
  volumes:
  - {name: w, emptyDir: {}}
YAML
check_field "init pod Running" init 'p["status"]["phase"]' Running 40
check_field "init containers Completed" init '",".join(s["state"]["terminated"]["reason"] for s in p["status"]["initContainerStatuses"])' Completed,Completed
wait_for "$LOGS"/default_init-node1_*/app/0.log 'F app$' && \
        [ "$(sed -E 's/^[^ ]+ [^ ]+ [PF] //' "$LOGS"/default_init-node1_*/app/0.log | tr '\n' ' ')" = "first second app " ] \
        && ok "init containers ran in order" || fail "order: $(cat "$LOGS"/default_init-node1_*/app/0.log)"
check_field "Initialized condition" init '[c["status"] for c in p["status"]["conditions"] if c["type"]=="Initialized"][0]' True

# --- several containers, a sidecar, hostPath types
mkdir -p "$HOSTDIR/dir"
touch "$HOSTDIR/file"
python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$HOSTDIR/sock"
put multi.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: multi}
spec:
  terminationGracePeriodSeconds: 3
  initContainers:
  - {name: sidecar, image: nanolet-test, imagePullPolicy: Never, restartPolicy: Always, command: [sh, -c, "echo sidecar > /shared/sidecar; exec sleep 3600"], volumeMounts: [{name: shared, mountPath: /shared}]}
  containers:
  - {name: a, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "cat /shared/sidecar; ls -d /d /doc /f /fc; exec sleep 3600"], volumeMounts: [{name: shared, mountPath: /shared}, {name: d, mountPath: /d}, {name: doc, mountPath: /doc}, {name: f, mountPath: /f}, {name: fc, mountPath: /fc}]}
  - {name: b, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"], volumeMounts: [{name: cd, mountPath: /cd}, {name: sock, mountPath: /sock}]}
  volumes:
  - {name: cd, hostPath: {path: /dev/null, type: CharDevice}}
  - {name: sock, hostPath: {path: $HOSTDIR/sock, type: Socket}}
  - {name: shared, emptyDir: {}}
  - {name: d, hostPath: {path: $HOSTDIR/dir, type: Directory}}
  - {name: doc, hostPath: {path: $HOSTDIR/created-dir, type: DirectoryOrCreate}}
  - {name: f, hostPath: {path: $HOSTDIR/file, type: File}}
  - {name: fc, hostPath: {path: $HOSTDIR/created-file, type: FileOrCreate}}
YAML
check_field "multi-container pod Running, 2/2 ready" multi 'sum(1 for s in p["status"]["containerStatuses"] if s["ready"])' 2
check_field "sidecar running alongside" multi 'list(p["status"]["initContainerStatuses"][0]["state"].keys())[0]' running
wait_for "$LOGS"/default_multi-node1_*/a/0.log 'F sidecar' && ok "app saw the sidecar's file" || fail "sidecar file"
[ -d "$HOSTDIR/created-dir" ] && [ -f "$HOSTDIR/created-file" ] && ok "DirectoryOrCreate and FileOrCreate created" || fail "hostPath create"
put badhost.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: badhost}
spec:
  containers:
  - {name: c, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"], volumeMounts: [{name: v, mountPath: /v}]}
  volumes:
  - {name: v, hostPath: {path: $HOSTDIR/file, type: Directory}}
YAML
check_field "hostPath type mismatch refused, reason in the pod's status" badhost \
        '"%s: %s" % (p["status"].get("reason"), "hostPath type check failed" in p["status"].get("message", ""))' \
        "FailedCreatePodSandBox: True"
check_field "badhost has no running container" badhost '"running" in str(p["status"].get("containerStatuses", ""))' False
# kubectl's printer shows the container's ContainerCreating; inspect says why.
nl inspect badhost >"$WORK/out" 2>&1
grep -q 'hostPath type check failed' "$WORK/out" && ok "nanolet inspect shows why badhost does not start" || fail "inspect: $(cat "$WORK/out")"
rm -f "$MAN/badhost.yaml"

# --- shareProcessNamespace: containers see each other's processes, pid 1 is the holder
put shared-pid.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: shared-pid}
spec:
  shareProcessNamespace: true
  terminationGracePeriodSeconds: 2
  containers:
  - {name: sleeper, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "exec sleep 3601"]}
  - {name: looker, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "while ! grep -q 3601 /proc/[0-9]*/cmdline 2>/dev/null; do sleep 0.2; done; echo saw-sleeper; tr '\\0' ' ' < /proc/1/cmdline; echo; exec sleep 3600"]}
YAML
check_field "shared PID namespace pod Running" shared-pid 'p["status"]["phase"]' Running
wait_for "$LOGS"/default_shared-pid-node1_*/looker/0.log 'F saw-sleeper' 1 20 && ok "containers share the PID namespace" || fail "shared pid"
wait_for "$LOGS"/default_shared-pid-node1_*/looker/0.log ' [PF] nanolet-pod-holder' 1 5 && ok "pid 1 is the pod's holder" || fail "holder: $(cat "$LOGS"/default_shared-pid-node1_*/looker/0.log)"
rm -f "$MAN/shared-pid.yaml"

# --- activeDeadlineSeconds
put deadline.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: deadline}
spec:
  activeDeadlineSeconds: 2
  terminationGracePeriodSeconds: 2
  containers:
  - {name: c, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
YAML
check_field "activeDeadlineSeconds: Failed, DeadlineExceeded" deadline '"%s/%s" % (p["status"]["phase"], p["status"].get("reason"))' Failed/DeadlineExceeded 30

# --- kubeadm's control-plane manifests, unchanged, with stand-in images under their names
"$NANOLET" image --root-dir "$ROOT" load "$WORK/images/nanolet-kube.tar" >/dev/null
created=()
for p in /etc/kubernetes /etc/kubernetes/pki /etc/kubernetes/pki/etcd /var/lib/etcd /etc/ca-certificates \
         /usr/local/share/ca-certificates /usr/share/ca-certificates /usr/libexec/kubernetes \
         /etc/kubernetes/controller-manager.conf /etc/kubernetes/scheduler.conf; do
        [ -e "$p" ] || created+=("$p")
done
mkdir -p /etc/kubernetes # kubeadm's own directory, present on any kubeadm host
for f in etcd kube-apiserver kube-controller-manager kube-scheduler; do
        img=$(awk '/image:/ {print $2; exit}' "$TEST_DATA_DIR/manifests/valid/$f.yaml")
        "$NANOLET" image --root-dir "$ROOT" tag localhost/nanolet-kube "$img" >/dev/null
        cp "$TEST_DATA_DIR/manifests/valid/$f.yaml" "$MAN/.$f.tmp"
        mv "$MAN/.$f.tmp" "$MAN/$f.yaml"
done
for f in etcd kube-apiserver kube-controller-manager kube-scheduler; do
        check_field "kubeadm $f runs unchanged" "$f" 'p["status"]["phase"]' Running 60
        wait_for "$LOGS"/kube-system_"$f"-node1_*/"$f"/0.log "F $f --" 1 10 && ok "$f got its command line" || fail "$f log"
done
check_field "etcd is hostNetwork with RuntimeDefault seccomp, priority set" etcd 'p["spec"]["priorityClassName"]' system-node-critical
rm -f "$MAN"/etcd.yaml "$MAN"/kube-*.yaml
for ((i = 0; i < 150; i++)); do pod_json kube-apiserver >/dev/null || break; sleep 0.2; done
for ((i = ${#created[@]} - 1; i >= 0; i--)); do rm -rf "${created[$i]}"; done
if [ ${#created[@]} -gt 0 ] && [[ " ${created[*]} " == *" /usr/libexec/kubernetes "* ]]; then :; fi

# --- back-off spacing, as kubelet: the first restart at once, then 10 s and
# 20 s after the exits, measured from the agent's own log stamps (exit
# logged -> next start logged), not from when the test happens to look
put spacing.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: spacing}
spec:
  containers:
  - {name: c, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "exit 1"]}
YAML
check_field "fourth attempt after back-off" spacing 'p["status"]["containerStatuses"][0]["restartCount"] >= 3' True 90
wait_for "$AGENT_LOG" 'Started container "c" of pod "spacing-node1' 4 60 || true
{
        log_times 'Container "c" of pod "spacing-node1.* exited with code'
        echo --
        log_times 'Started container "c" of pod "spacing-node1'
} >"$WORK/spacing"
python3 - "$WORK/spacing" <<'PY' && ok "back-off spacing: at once, 10 s, then 20 s" || fail "spacing: $(tr '\n' ' ' <"$WORK/spacing")"
import sys
exits, starts = open(sys.argv[1]).read().split("--")
exits, starts = [float(x) for x in exits.split()], [float(x) for x in starts.split()]
# restart n+1 follows exit n; the back-off runs from when the agent saw the
# exit. Each gap is at least its back-off and less than the next one: that
# tells which back-off the agent applied, whatever the container's creation
# took on a loaded machine.
d = [s - e for e, s in zip(exits, starts[1:])]
assert len(d) >= 3 and d[0] < 9.9 and 9.9 <= d[1] < 19.9 and 19.9 <= d[2] < 39.9, d
PY
rm -f "$MAN/spacing.yaml"

# --- restartPolicy Never: failing command -> Failed, exit code, reason Error
put never.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: never}
spec:
  restartPolicy: Never
  containers:
  - {name: fail, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "exit 3"]}
YAML
check_field "Never pod Failed" never 'p["status"]["phase"]' Failed
check_field "exit code 3, reason Error" never '"%s/%s" % (p["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], p["status"]["containerStatuses"][0]["state"]["terminated"]["reason"])' 3/Error
check_field "no restart under Never" never 'p["status"]["containerStatuses"][0]["restartCount"]' 0

# --- restartPolicy OnFailure: success -> Succeeded, Completed
put onfailure.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: onfailure}
spec:
  restartPolicy: OnFailure
  containers:
  - {name: ok, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "echo done"]}
YAML
check_field "OnFailure pod Succeeded" onfailure 'p["status"]["phase"]' Succeeded
check_field "reason Completed" onfailure 'p["status"]["containerStatuses"][0]["state"]["terminated"]["reason"]' Completed

# --- restartPolicy Always with a crashing container: restarts with back-off
put crash.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: crash}
spec:
  containers:
  - {name: c, image: nanolet-test, imagePullPolicy: Never, command: [sh, -c, "date +%s >> /tmp/x; exit 1"]}
YAML
check_field "crashing container restarted once" crash 'p["status"]["containerStatuses"][0]["restartCount"] >= 1' True 30
check_field "CrashLoopBackOff while waiting" crash 'p["status"]["containerStatuses"][0]["state"].get("waiting", {}).get("reason")' CrashLoopBackOff 30
check_field "lastState records the exit" crash 'p["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"]' 1 30
nl logs -p crash >/dev/null 2>&1 && ok "logs -p" || fail "logs -p"

# --- a missing image gives a waiting reason, not a crash
put noimage.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: noimage}
spec:
  containers:
  - {name: c, image: does-not-exist:1, imagePullPolicy: Never}
YAML
check_field "missing image: ErrImageNeverPull" noimage 'p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"]' ErrImageNeverPull

# --- change: the old pod gets SIGTERM and its grace period, then the new one starts
put graceful.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: graceful}
spec:
  terminationGracePeriodSeconds: 10
  containers:
  - name: c
    image: nanolet-test
    imagePullPolicy: Never
    command: [sh, -c, "trap 'echo term >> /host/graceful; sleep 1; echo bye >> /host/graceful; exit 0' TERM; echo v1 > /host/version; while true; do sleep 0.1; done"]
    volumeMounts: [{name: host, mountPath: /host}]
  volumes: [{name: host, hostPath: {path: $HOSTDIR}}]
YAML
check_field "graceful v1 Running" graceful 'p["status"]["phase"]' Running
sed -i 's/echo v1/echo v2/' "$MAN/graceful.yaml"
for ((i = 0; i < 150; i++)); do [ "$(cat "$HOSTDIR/version" 2>/dev/null)" = v2 ] && break; sleep 0.2; done
[ "$(cat "$HOSTDIR/version")" = v2 ] && ok "changed manifest recreated the pod" || fail "no v2"
[ "$(tr '\n' ' ' <"$HOSTDIR/graceful" 2>/dev/null)" = "term bye " ] && ok "old pod got SIGTERM and finished its handler first" \
        || fail "graceful: $(cat "$HOSTDIR/graceful" 2>/dev/null)"

# --- agent killed: the restarted agent adopts the running pod (same
# container, same process) and leaves no duplicate behind
kill -9 "$AGENT_PID"; wait "$AGENT_PID" 2>/dev/null || true; AGENT_PID=
start_agent
wait_for "$AGENT_LOG" 'Adopted running container "main" of pod "simple-node1' 1 20 \
        && ok "restarted agent adopted the running container" || fail "no adoption logged"
sleep 2
n=$(pod_runc_ids "$(pod_field simple 'p["metadata"]["uid"]')" | wc -l)
[ "$n" = 1 ] && ok "after kill -9 of the agent: one container for the pod" || fail "containers of simple after restart: $n"
kill -0 "$pid" 2>/dev/null && ok "the container's process survived the agent restart" || fail "pid $pid is gone"
check_field "same container after adoption" simple 'p["status"]["containerStatuses"][0]["containerID"]' "runc://$cid"
check_field "restart count unchanged by adoption" simple 'p["status"]["containerStatuses"][0]["restartCount"]' 0

# --- delete: SIGTERM seen, then everything is gone
rm -f "$MAN/simple.yaml"
for ((i = 0; i < 150; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
kill -0 "$pid" 2>/dev/null && fail "deleted pod still runs" || ok "deleted pod's process is gone"
for ((i = 0; i < 150; i++)); do pod_json simple >/dev/null || break; sleep 0.2; done
pod_json simple >/dev/null && fail "status of deleted pod remains" || ok "status of deleted pod removed"

# --- remove everything and check nothing is left
rm -f "$MAN"/*.yaml
# sleep as pid 1 ignores SIGTERM: pods without a short grace period take 30 s
for ((i = 0; i < 250; i++)); do [ -z "$(ls "$RUN/status" 2>/dev/null | grep -vx sources.json | grep json)" ] && break; sleep 0.2; done
check_no_leftovers
stop_agent
finish
