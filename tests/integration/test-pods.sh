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
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    command: ["sh", "-c"]
    args: ["echo hello \$(GREETING) \$POD_NAME \$POD_NS \$\$HOME; ip link 2>/dev/null | grep -c UP > /host/links; echo \$\$\$\$ > /host/pid; exec sleep 3600"]
    env:
    - {name: GREETING, value: world}
    - name: POD_NAME
      valueFrom: {fieldRef: {fieldPath: metadata.name}}
    - name: POD_NS
      valueFrom: {fieldRef: {fieldPath: metadata.namespace}}
    volumeMounts:
    - {name: host, mountPath: /host}
  volumes:
  - name: host
    hostPath: {path: $HOSTDIR, type: Directory}
YAML
check_field "simple pod Running" simple 'p["status"]["phase"]' Running
check_field "simple container ready" simple 'p["status"]["containerStatuses"][0]["ready"]' True
wait_for "$LOGS/default_simple-node1_"*/main/0.log 'stdout F hello world simple-node1 default /root$' \
        && ok "env, fieldRef and \$(VAR) expansion in args" || fail "expansion: $(cat "$LOGS"/default_simple-node1_*/main/0.log)"
nl logs simple >"$WORK/out" 2>&1
grep -q '^hello world simple-node1 default' "$WORK/out" && ok "nanolet logs" || fail "nanolet logs: $(cat "$WORK/out")"
nl pods >"$WORK/out" 2>&1
grep -qE 'default +simple-node1 +1/1 +Running +0' "$WORK/out" && ok "nanolet pods" || fail "nanolet pods: $(cat "$WORK/out")"
rc=0
nl exec simple -- sh -c 'echo from-exec; exit 4' >"$WORK/out" 2>&1 || rc=$?
[ "$rc" = 4 ] && grep -q from-exec "$WORK/out" && ok "nanolet exec output and exit code" || fail "exec rc=$rc $(cat "$WORK/out")"
sleep 0.5
pid=$(cat "$HOSTDIR/pid" 2>/dev/null || echo 0)
[ "$pid" -gt 0 ] && ok "container wrote to its hostPath" || fail "no pid file"

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
wait_for "$LOGS"/default_init-node1_*/app/0.log 'F first' && \
        [ "$(sed -E 's/^[^ ]+ [^ ]+ [PF] //' "$LOGS"/default_init-node1_*/app/0.log | tr '\n' ' ')" = "first second app " ] \
        && ok "init containers ran in order" || fail "order: $(cat "$LOGS"/default_init-node1_*/app/0.log)"
check_field "Initialized condition" init '[c["status"] for c in p["status"]["conditions"] if c["type"]=="Initialized"][0]' True

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
for ((i = 0; i < 100; i++)); do [ "$(cat "$HOSTDIR/version" 2>/dev/null)" = v2 ] && break; sleep 0.2; done
[ "$(cat "$HOSTDIR/version")" = v2 ] && ok "changed manifest recreated the pod" || fail "no v2"
[ "$(tr '\n' ' ' <"$HOSTDIR/graceful" 2>/dev/null)" = "term bye " ] && ok "old pod got SIGTERM and finished its handler first" \
        || fail "graceful: $(cat "$HOSTDIR/graceful" 2>/dev/null)"

# --- delete: SIGTERM seen, then everything is gone
rm -f "$MAN/simple.yaml"
for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
kill -0 "$pid" 2>/dev/null && fail "deleted pod still runs" || ok "deleted pod's process is gone"
for ((i = 0; i < 50; i++)); do pod_json simple >/dev/null || break; sleep 0.2; done
pod_json simple >/dev/null && fail "status of deleted pod remains" || ok "status of deleted pod removed"

# --- remove everything and check nothing is left
rm -f "$MAN"/*.yaml
for ((i = 0; i < 150; i++)); do [ -z "$(ls "$RUN/status" 2>/dev/null | grep json)" ] && break; sleep 0.2; done
check_no_leftovers
stop_agent
finish
