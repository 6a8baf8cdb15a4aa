#!/usr/bin/env bash
# The client subcommands (pods, ps, inspect, logs, exec) against status and
# CRI log files laid out as docs/internals/state-files.md says, written here as
# fixtures, plus a real runc container for exec and inspect; sources.json
# comes from the real agent, run on a broken manifest first.
. "$(dirname "$0")/lib.sh"

require_root
command -v runc >/dev/null || { echo "SKIP: runc not installed"; [ "${NANOLET_TEST_STRICT:-0}" = 1 ] && exit 1; exit 77; }
command -v busybox >/dev/null || { echo "SKIP: busybox not installed"; [ "${NANOLET_TEST_STRICT:-0}" = 1 ] && exit 1; exit 77; }

RUN=$WORK/run
LOGS=$WORK/logs
ROOT=$WORK/root
STATUS=$RUN/status
mkdir -p "$RUN/runc" "$STATUS" "$LOGS" "$ROOT"
DIRS=(--root-dir "$ROOT" --run-dir "$RUN" --pod-logs-dir "$LOGS")
EXEC_UID=c11e0000-0000-4000-8000-$(printf '%012d' $$)
CID=$EXEC_UID-app-0

cleanup_cli() {
        runc --root "$RUN/runc" delete --force "$CID" >/dev/null 2>&1 || true
        agent_cleanup
}

# -- status/sources.json as the real agent writes it for a broken manifest --
. "$(dirname "$0")/lib-agent.sh"
cat >"$MAN/bad.yaml" <<'EOF'
apiVersion: v1
kind: Pod
spec: {containers: [{name: c}]}
metadata: {name: bad}
EOF
start_agent
wait_for "$STATUS/sources.json" 'bad\.yaml:3: spec\.containers\[0\]\.image' ||
        fail "the agent wrote no source error to sources.json"
stop_agent
trap cleanup_cli EXIT

# -- a real container for exec and inspect --------------------------------
B=$WORK/bundle
mkdir -p "$B/rootfs/bin"
cp "$(command -v busybox)" "$B/rootfs/bin/busybox"
for a in sh echo cat sleep tty; do ln -s busybox "$B/rootfs/bin/$a"; done
(cd "$B" && runc spec)
python3 - "$B/config.json" <<'EOF'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
c["process"]["terminal"] = False
c["process"]["args"] = ["/bin/sleep", "3600"]
c["root"]["readonly"] = True
json.dump(c, open(p, "w"))
EOF
runc --root "$RUN/runc" run -d --bundle "$B" "$CID" </dev/null >/dev/null 2>"$WORK/runc.err" ||
        { cat "$WORK/runc.err" >&2; fail "runc run"; finish; }

# -- status files (v1 Pods as kubectl get pod -o json shows them) ---------
python3 - "$STATUS" "$EXEC_UID" <<'EOF'
import datetime, json, os, sys
status_dir, exec_uid = sys.argv[1], sys.argv[2]
now = datetime.datetime.now(datetime.timezone.utc)
def ts(seconds_ago):
    return (now - datetime.timedelta(seconds=seconds_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")

def pod(ns, name, uid, containers, init=None, phase="Running", statuses=None, init_statuses=None,
        conditions=None, annotations=None, age=3 * 3600):
    p = {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "uid": uid, "creationTimestamp": ts(age),
                     "annotations": dict({"kubernetes.io/config.source": "file",
                                          "kubernetes.io/config.hash": uid}, **(annotations or {}))},
        "spec": {"nodeName": "node1", "restartPolicy": "Always",
                 "containers": [{"name": c, "image": "busybox:1.36"} for c in containers]},
        "status": {"phase": phase, "hostIP": "10.0.0.1", "podIP": "10.0.0.1",
                   "podIPs": [{"ip": "10.0.0.1"}], "startTime": ts(age),
                   "conditions": conditions or [], "containerStatuses": statuses or []},
    }
    if init:
        p["spec"]["initContainers"] = [{"name": c, "image": "busybox:1.36"} for c in init]
        p["status"]["initContainerStatuses"] = init_statuses or []
    return p

def running(name, uid, attempt, started=600, last=None):
    s = {"name": name, "ready": True, "started": True, "restartCount": attempt,
         "image": "docker.io/library/busybox:1.36", "imageID": "sha256:abc",
         "containerID": "runc://%s-%s-%d" % (uid, name, attempt),
         "state": {"running": {"startedAt": ts(started)}}, "lastState": {}}
    if attempt > 0:
        s["lastState"] = {"terminated": {"exitCode": 137, "reason": "Error", "startedAt": ts(7200),
                                         "finishedAt": ts(last or 620),
                                         "containerID": "runc://%s-%s-%d" % (uid, name, attempt - 1)}}
    return s

ready = [{"type": t, "status": "True"} for t in
         ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled")]
pods = {
    "uid-etcd": pod("kube-system", "etcd-node1", "uid-etcd", ["etcd"], conditions=ready,
                    statuses=[running("etcd", "uid-etcd", 2)]),
    "uid-web": pod("default", "web-node1", "uid-web", ["app", "log"], init=["setup"], conditions=[
                       {"type": "Initialized", "status": "True"}, {"type": "Ready", "status": "False"}],
                   init_statuses=[{"name": "setup", "ready": True, "restartCount": 0, "image": "busybox:1.36",
                                   "containerID": "runc://uid-web-setup-0",
                                   "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                                                            "startedAt": ts(900), "finishedAt": ts(890),
                                                            "containerID": "runc://uid-web-setup-0"}}}],
                   statuses=[{"name": "app", "ready": False, "restartCount": 4, "image": "busybox:1.36",
                              "containerID": "runc://uid-web-app-3",
                              "state": {"waiting": {"reason": "CrashLoopBackOff",
                                                    "message": "back-off 40s restarting failed container"}},
                              "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                                                           "startedAt": ts(70), "finishedAt": ts(65),
                                                           "containerID": "runc://uid-web-app-3"}}},
                             running("log", "uid-web", 0)]),
    "uid-job": pod("default", "job-node1", "uid-job", ["main"], phase="Succeeded",
                   annotations={"nanolet.io/worker-state": "finished\u001b]0;x\u0007"},
                   statuses=[{"name": "main", "ready": False, "restartCount": 0, "image": "busybox:1.36",
                              "containerID": "runc://uid-job-main-0",
                              "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                                                       "startedAt": ts(300), "finishedAt": ts(290),
                                                       "containerID": "runc://uid-job-main-0"}}}]),
    exec_uid: pod("default", "shell-node1", exec_uid, ["app"], conditions=ready, age=30,
                  annotations={"nanolet.io/worker-state": "running"},
                  statuses=[running("app", exec_uid, 0, started=20)]),
}
for uid, p in pods.items():
    with open(os.path.join(status_dir, uid + ".json"), "w") as f:
        json.dump(p, f, indent=2)
with open(os.path.join(status_dir, "broken.json"), "w") as f:
    f.write('{"apiVersion": "v1", "kind": "Pod", "metadata": {"na')
EOF

# -- CRI logs --------------------------------------------------------------
now_ts() { date -u +%Y-%m-%dT%H:%M:%S.%NZ; }
ED=$LOGS/kube-system_etcd-node1_uid-etcd/etcd
mkdir -p "$ED" "$LOGS/default_web-node1_uid-web/app" "$LOGS/default_web-node1_uid-web/log"
cat >"$ED/1.log.20240501-100000" <<'EOF'
2020-01-01T00:00:00.000000001Z stdout F attempt1 rotated line
EOF
cat >"$ED/1.log" <<'EOF'
2020-01-01T00:00:01.000000000Z stdout F attempt1 line1
2020-01-01T00:00:02.000000000Z stderr F attempt1 line2
EOF
{
        echo "2020-01-01T00:01:00.000000000Z stdout F old line"
        echo "2020-01-01T00:01:01.000000000Z stdout P joined "
        echo "2020-01-01T00:01:01.100000000Z stderr F an error"
        echo "not a cri line at all"
        echo "2020-01-01T00:01:01.200000000Z stdout P part"
        echo "2020-01-01T00:01:01.300000000Z stdout F s"
        echo "$(now_ts) stdout F recent line"
} >"$ED/2.log"
echo "$(now_ts) stdout F app says hi" >"$LOGS/default_web-node1_uid-web/app/4.log"
echo "$(now_ts) stdout F log says hi" >"$LOGS/default_web-node1_uid-web/log/0.log"

out=$WORK/out
err=$WORK/err

# run EXPECTED_RC ARGS...: runs nanolet with the fixture dirs into $out/$err.
run() {
        local want=$1 rc=0
        shift
        "$NANOLET" "$1" "${DIRS[@]}" "${@:2}" >"$out" 2>"$err" || rc=$?
        if [ "$rc" != "$want" ]; then
                fail "nanolet $* exited $rc, want $want; stdout: $(cat "$out"); stderr: $(cat "$err")"
                return 1
        fi
        return 0
}
has() { # has DESC FILE REGEX
        if grep -qE -- "$3" "$2"; then ok "$1"; else fail "$1: no /$3/ in: $(cat "$2")"; fi
}

# -- pods --------------------------------------------------------------------
if run 0 pods; then
        has "pods header" "$out" '^NAMESPACE +NAME +READY +STATUS +RESTARTS +AGE +IP$'
        has "etcd running" "$out" '^kube-system +etcd-node1 +1/1 +Running +2 \(10m ago\) +3h +10\.0\.0\.1$'
        has "web crash loop" "$out" '^default +web-node1 +1/2 +CrashLoopBackOff +4 \(6[5-9]s ago\) +3h '
        has "job completed" "$out" '^default +job-node1 +0/1 +Completed +0 +3h '
        has "shell age" "$out" '^default +shell-node1 +1/1 +Running +0 +3[0-9]s '
        has "manifest errors" "$out" '^manifest errors:$'
        has "manifest error message" "$out" 'bad\.yaml:3: spec\.containers\[0\]\.image: image is required'
        has "broken status file warned" "$err" 'broken\.json'
        [ "$(grep -c node1 "$out")" = 4 ] || fail "pods: want 4 rows"
fi
run 0 pods -o wide && has "wide has NODE" "$out" '^NAMESPACE .* IP +NODE +UID$'
run 0 pods -n kube-system && has "namespace filter" "$out" 'etcd-node1' &&
        { grep -q web-node1 "$out" && fail "-n kube-system shows default pods" || true; }
if run 0 pods -o json; then
        cp "$out" "$WORK/pods.json"
        if python3 -c '
import json, sys
l = json.load(open(sys.argv[1]))
assert l["apiVersion"] == "v1" and l["kind"] == "PodList", l.get("kind")
assert [p["metadata"]["name"] for p in l["items"]] == ["job-node1", "shell-node1", "web-node1", "etcd-node1"]
' "$out"; then ok "pods -o json is a PodList"; else fail "pods -o json"; fi
        has "json: source errors on stderr" "$err" 'manifest errors'
fi
if run 0 pods -o yaml; then
        if python3 -c 'import yaml' 2>/dev/null; then
                if python3 -c '
import json, sys, yaml
y = yaml.safe_load(open(sys.argv[1]))
j = json.load(open(sys.argv[2]))
assert y == j, "yaml and json differ"
' "$out" "$WORK/pods.json"; then ok "pods -o yaml parses back to the JSON"; else fail "pods -o yaml"; fi
        else
                echo "note: python3-yaml missing, YAML not parsed back"
        fi
fi
run 0 pods -o name && { [ "$(sort "$out" | tr '\n' ' ')" = "pod/etcd-node1 pod/job-node1 pod/shell-node1 pod/web-node1 " ] &&
        ok "pods -o name" || fail "pods -o name: $(cat "$out")"; }
run 2 pods -o xml
run 2 pods --bogus
# whole names only, as kubelet's and kubectl's pflag: an abbreviation is unknown
run 2 pods --out=wide && has "pods: an abbreviation is an unknown flag" "$err" '^nanolet pods: unknown flag: --out$'
run 2 logs web --foll && has "logs: an abbreviation is an unknown flag" "$err" '^nanolet logs: unknown flag: --foll$'
run 2 ps --al && has "ps: an abbreviation is an unknown flag" "$err" '^nanolet ps: unknown flag: --al$'
mv "$STATUS" "$STATUS.x"
run 0 pods && has "no pods" "$err" '^No pods found\.$'
mv "$STATUS.x" "$STATUS"

# -- ps ----------------------------------------------------------------------
if run 0 ps; then
        has "ps header" "$out" '^CONTAINER +IMAGE +CREATED +STATE +NAME +ATTEMPT +POD ID +POD$'
        has "ps etcd" "$out" '^uid-etcd-etcd +docker\.io/library/busybox:1\.36 +10 minutes ago +Running +etcd +2 +uid-etcd +etcd-node1$'
        grep -q Exited "$out" && fail "ps without -a shows exited containers"
        [ "$(grep -c Running "$out")" = 3 ] || fail "ps: want 3 running containers: $(cat "$out")"
fi
if run 0 ps -a; then
        has "ps -a exited job" "$out" ' Exited +main +0 +uid-job +job-node1$'
        has "ps -a previous etcd attempt" "$out" ' Exited +etcd +1 +uid-etcd +etcd-node1$'
        has "ps -a previous app attempt" "$out" ' Exited +app +3 +uid-web +web-node1$'
fi
run 0 ps -q && has "ps -q full ids" "$out" "^$CID\$"
if run 0 ps -a -o json; then
        python3 - "$out" "$CID" <<'PYEOF' && ok "ps -o json: crictl's shape" || fail "ps -o json: $(cat "$out")"
import json, sys
d = json.load(open(sys.argv[1]))["containers"]
ids = [c["id"] for c in d]
assert sys.argv[2] in ids, ids
etcd = [c for c in d if c["metadata"]["name"] == "etcd" and c["state"] == "CONTAINER_RUNNING"][0]
assert etcd["metadata"]["attempt"] == 2 and etcd["podSandboxId"] == "uid-etcd", etcd
assert etcd["labels"]["io.kubernetes.pod.name"] == "etcd-node1", etcd
assert etcd["labels"]["io.kubernetes.pod.namespace"] == "kube-system", etcd
assert etcd["image"]["image"] == "docker.io/library/busybox:1.36", etcd
assert any(c["state"] == "CONTAINER_EXITED" for c in d)
PYEOF
fi
run 0 ps -o yaml && has "ps -o yaml" "$out" '^containers:'
run 2 ps -o xml

# -- logs --------------------------------------------------------------------
if run 0 logs etcd; then
        printf 'old line\nan error\njoined parts\nrecent line\n' >"$WORK/want"
        diff -u "$WORK/want" "$out" >&2 && ok "logs joins partial lines, skips bad ones" || fail "logs etcd"
fi
run 0 logs kube-system/etcd-node1 --tail 2 && { [ "$(cat "$out")" = "$(printf 'joined parts\nrecent line')" ] &&
        ok "logs --tail 2" || fail "logs --tail 2: $(cat "$out")"; }
run 0 logs etcd --tail 0 && { [ -s "$out" ] && fail "logs --tail 0 printed lines" || ok "logs --tail 0"; }
run 0 logs etcd -p && { [ "$(cat "$out")" = "$(printf 'attempt1 rotated line\nattempt1 line1\nattempt1 line2')" ] &&
        ok "logs -p reads the previous attempt with its rotated file" || fail "logs -p: $(cat "$out")"; }
run 0 logs etcd -t --tail 1 &&
        has "logs --timestamps" "$out" '^20[0-9-]+T[0-9:]+\.[0-9]{9}Z recent line$'
run 0 logs etcd --timestamps -p --tail 1 &&
        has "logs --timestamps keeps the record's time" "$out" '^2020-01-01T00:00:02\.000000000Z attempt1 line2$'
run 0 logs etcd --since 1h && { [ "$(cat "$out")" = "recent line" ] && ok "logs --since" ||
        fail "logs --since 1h: $(cat "$out")"; }
run 0 logs etcd --since-time 2020-01-01T00:01:01Z && { [ "$(wc -l <"$out")" = 3 ] && ok "logs --since-time" ||
        fail "logs --since-time: $(cat "$out")"; }
run 1 logs web && has "logs: container must be chosen" "$err" 'choose one of: \[app log\] or one of the init containers: \[setup\]'
run 0 logs web -c log && has "logs -c" "$out" '^log says hi$'
run 0 logs web app && has "logs POD CONTAINER" "$out" '^app says hi$'
run 1 logs job -p && has "logs -p without restarts" "$err" 'previous terminated container "main"'
run 1 logs nosuchpod && has "logs: unknown pod" "$err" 'pod "nosuchpod" not found'
run 1 logs web -c nope && has "logs: unknown container" "$err" 'container nope is not valid'
run 2 logs
run 2 logs etcd --since forever

# logs -f: picks up appended lines, moves to the next attempt's file when the
# container restarts, and ends when the pod's status file is removed.
follow_out=$WORK/follow.out
: >"$follow_out"
"$NANOLET" logs "${DIRS[@]}" -f --tail 1 etcd >"$follow_out" 2>"$WORK/follow.err" &
fpid=$!
PIDS+=("$fpid")
expect "logs -f prints the tail" "$follow_out" '^recent line$'
echo "$(now_ts) stdout F appended line" >>"$ED/2.log"
expect "logs -f follows appended lines" "$follow_out" '^appended line$'
printf '%s stdout P ha' "$(now_ts)" >>"$ED/2.log"
sleep 0.3
printf 'lf \n%s stdout F and done\n' "$(now_ts)" >>"$ED/2.log"
expect "logs -f joins a record written in two steps" "$follow_out" '^half and done$'
echo "$(now_ts) stdout F after restart" >"$ED/3.log"
expect "logs -f continues with the restarted container's file" "$follow_out" '^after restart$'
echo "$(now_ts) stdout F more after restart" >>"$ED/3.log"
expect "logs -f follows the new file" "$follow_out" '^more after restart$'
mv "$STATUS/uid-etcd.json" "$WORK/uid-etcd.json"
for ((i = 0; i < 300; i++)); do
        kill -0 "$fpid" 2>/dev/null || break
        sleep 0.1
done
if kill -0 "$fpid" 2>/dev/null; then
        fail "logs -f still running after the pod's status file was removed"
else
        rc=0
        wait "$fpid" || rc=$?
        [ "$rc" = 0 ] && ok "logs -f ends when the pod is deleted" || fail "logs -f exit code $rc: $(cat "$WORK/follow.err")"
fi
[ "$(cat "$follow_out")" = "$(printf 'recent line\nappended line\nhalf and done\nafter restart\nmore after restart')" ] ||
        fail "logs -f duplicated or lost lines: $(cat "$follow_out")"
mv "$WORK/uid-etcd.json" "$STATUS/uid-etcd.json"

# -- inspect -----------------------------------------------------------------
if run 0 inspect shell; then
        has "inspect: ends with the Events section" "$out" '^Events:  <none>$'
        has "inspect: the worker state line" "$out" '^Worker state:  running$'
fi
if run 0 inspect default/job; then
        has "inspect: a hostile worker state is shown escaped" "$out" '^Worker state:  finished\\x1b]0;x\\a$'
        if grep -q $'\x1b' "$out"; then fail "inspect job: a raw ESC reached the terminal"; else ok "inspect job: no raw ESC"; fi
fi
if run 0 inspect default/web; then
        if grep -q '^Worker state:' "$out"; then fail "inspect web: a worker state without the annotation"; else ok "inspect: no worker state line without the annotation"; fi
fi
if run 0 inspect -o json shell; then
        if python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
assert p["kind"] == "Pod" and p["metadata"]["name"] == "shell-node1"
st = p["runtime"]["app"]
assert st["id"] == sys.argv[2] and st["status"] == "running", st
' "$out" "$CID"; then ok "inspect: pod JSON with the runtime state"; else fail "inspect shell: $(cat "$out")"; fi
fi
if run 0 inspect -o json default/job; then
        python3 -c '
import json, sys
p = json.load(open(sys.argv[1]))
assert "error" in p["runtime"]["main"], p["runtime"]
' "$out" && ok "inspect: unknown container gives an error object" || fail "inspect job: $(cat "$out")"
fi
run 2 inspect
run 2 inspect -o yaml shell
sed 's/"namespace": "default"/"namespace": "other"/' "$STATUS/uid-web.json" >"$STATUS/uid-web2.json"
run 1 inspect web && has "inspect: ambiguous name lists candidates" "$err" 'ambiguous.*default/web-node1, other/web-node1'
run 0 inspect other/web && ok "inspect NAMESPACE/NAME"
rm "$STATUS/uid-web2.json"

# -- exec --------------------------------------------------------------------
run 0 exec shell -- echo hi && { [ "$(cat "$out")" = hi ] && ok "exec echo hi" || fail "exec: $(cat "$out")"; }
run 7 exec default/shell-node1 -c app -- sh -c 'exit 7' && ok "exec passes the exit code"
echo piped | "$NANOLET" exec "${DIRS[@]}" -i shell -- cat >"$out" 2>"$err" &&
        [ "$(cat "$out")" = piped ] && ok "exec -i passes stdin" || fail "exec -i: $(cat "$out" "$err")"
run 0 exec shell -- sh -c 'cat; echo end' && has "exec without -i gets no input" "$out" '^end$'
# etcd's status says running, but runc has no such container: runc's error and exit status.
rc=0
"$NANOLET" exec "${DIRS[@]}" etcd -- true >"$out" 2>"$err" || rc=$?
[ "$rc" != 0 ] && grep -q 'does not exist' "$err" && ok "exec: runc's error passes through" ||
        fail "exec etcd: rc $rc: $(cat "$err")"
run 1 exec job -- true && has "exec: exited container" "$err" 'is not running'
# -it: a terminal inside (script(1) gives this test a pty of its own).
if command -v script >/dev/null; then
        rc=0
        timeout 60 script -qec "$NANOLET exec ${DIRS[*]} -it shell -- tty" /dev/null </dev/null >"$out" 2>&1 || rc=$?
        # (runc's pty relay may put a NUL byte in front)
        [ "$rc" = 0 ] && grep -aq '/dev/pts/' "$out" && ok "exec -it: the command has a terminal" ||
                fail "exec -it tty: rc $rc: $(cat "$out")"
        rc=0
        printf 'echo inside-$((6*7))\nexit 3\n' |
                timeout 60 script -qec "$NANOLET exec ${DIRS[*]} -it shell -- sh" /dev/null >"$out" 2>&1 || rc=$?
        [ "$rc" = 3 ] && grep -q 'inside-42' "$out" && ok "exec -it: interactive shell, exit code kept" ||
                fail "exec -it sh: rc $rc: $(cat "$out")"
        # as kubectl: no terminal on stdin, so no TTY (a warning), and the command runs
        run 1 exec -t shell -- tty && has "exec -t without a terminal drops the TTY" "$err" 'Unable to use a TTY'
else
        echo "note: script(1) missing, exec -it not checked"
fi
run 2 exec shell
run 2 exec -- echo

# -- container ID prefixes, logs --all-containers --prefix, pods -w ----------
HEXA=abcdef01$(printf '%056d' 1)
HEXB=abcdef02$(printf '%056d' 2)
write_hexpod() { # write_hexpod RESTARTS: the status file, replaced by rename as the agent does
        python3 - "$STATUS" "$HEXA" "$HEXB" "$1" <<'PY'
import datetime, json, os, sys
d, a, b, restarts = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
t = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
def cs(name, cid, rc):
    return {"name": name, "ready": True, "started": True, "restartCount": rc, "image": "busybox:1.36",
            "containerID": "runc://" + cid, "state": {"running": {"startedAt": t}}, "lastState": {}}
p = {"apiVersion": "v1", "kind": "Pod",
     "metadata": {"name": "hexpod-node1", "namespace": "default", "uid": "uid-hex", "creationTimestamp": t},
     "spec": {"nodeName": "node1", "initContainers": [{"name": "c0", "image": "busybox:1.36"}],
              "containers": [{"name": "c1", "image": "busybox:1.36"}, {"name": "c2", "image": "busybox:1.36"}]},
     "status": {"phase": "Running", "conditions": [], "podIP": "10.0.0.9", "podIPs": [{"ip": "10.0.0.9"}],
                "initContainerStatuses": [{"name": "c0", "ready": True, "restartCount": 0, "image": "busybox:1.36",
                                           "containerID": "runc://" + "9" * 64,
                                           "state": {"terminated": {"exitCode": 0, "reason": "Completed",
                                                                    "startedAt": t, "finishedAt": t,
                                                                    "containerID": "runc://" + "9" * 64}}}],
                "containerStatuses": [cs("c1", a, restarts), cs("c2", b, 0)]}}
json.dump(p, open(os.path.join(d, ".uid-hex.tmp"), "w"))
os.rename(os.path.join(d, ".uid-hex.tmp"), os.path.join(d, "uid-hex.json"))
PY
}
write_hexpod 0
for c in c0:0 c1:0 c2:0; do
        mkdir -p "$LOGS/default_hexpod-node1_uid-hex/${c%%:*}"
        echo "2024-05-01T10:00:00.000000001Z stdout F ${c%%:*} says hi" >"$LOGS/default_hexpod-node1_uid-hex/${c%%:*}/${c#*:}.log"
done
if run 0 ps abcdef0; then
        [ "$(grep -c abcdef0 "$out")" = 2 ] && has "ps ID: a shared prefix lists both" "$out" '^abcdef0100000 ' ||
                fail "ps abcdef0: $(cat "$out")"
fi
if run 0 ps --id "runc://${HEXA:0:13}"; then
        [ "$(grep -c abcdef "$out")" = 1 ] && has "ps --id: the 13 characters ps shows select one" "$out" "^${HEXA:0:13} " ||
                fail "ps --id: $(cat "$out")"
fi
run 0 logs "${HEXB:0:13}" && has "logs takes a container ID prefix" "$out" '^c2 says hi$'
run 0 logs abcdef01 && has "logs: any unique prefix" "$out" '^c1 says hi$'
run 1 logs abcdef0 && has "logs: an ambiguous prefix is an error" "$err" 'prefix "abcdef0" is ambiguous, it matches 2' &&
        has "logs: … naming the first match" "$err" "^  $HEXA \(container \"c1\" of pod default/hexpod-node1\)$" &&
        has "logs: … and the second" "$err" "^  $HEXB \(container \"c2\""
run 1 logs abcdef7 && has "logs: an unknown prefix says what to look at" "$err" 'no container ID starts with "abcdef7" \(see `nanolet ps -a`\)'
run 1 exec abcdef0 -- true && has "exec: an ambiguous prefix too" "$err" 'ambiguous'
if run 0 logs --all-containers --prefix hexpod; then
        printf '[pod/hexpod-node1/c0] c0 says hi\n[pod/hexpod-node1/c1] c1 says hi\n[pod/hexpod-node1/c2] c2 says hi\n' >"$WORK/want"
        cmp -s "$out" "$WORK/want" && ok "logs --all-containers --prefix: init first, kubectl's prefix" ||
                fail "logs --all-containers --prefix: $(cat "$out")"
fi
run 0 logs --prefix -t -c c2 hexpod && has "logs --prefix -t: prefix, then the time" "$out" \
        '^\[pod/hexpod-node1/c2\] 2024-05-01T10:00:00\.000000001Z c2 says hi$'
run 2 logs --all-containers -f hexpod && has "logs --all-containers -f: says what to do" "$err" 'follow one container with -f -c NAME'
run 2 logs --all-containers -c c1 hexpod
for v in pods ps inspect events logs exec node validate version image serve; do
        "$NANOLET" "$v" --help >"$out" 2>&1 && grep -q '^Usage: nanolet' "$out" || fail "$v --help: $(head -3 "$out")"
done
ok "--help on every subcommand"

# pods -w: rows as status files change; a removed pod's last row marked (deleted)
"$NANOLET" pods "${DIRS[@]}" -w >"$WORK/watch" 2>"$WORK/watch.err" &
WATCH_PID=$!
PIDS+=("$WATCH_PID")
wait_for "$WORK/watch" '^default +hexpod-node1 +2/2 +Running +0 ' 1 10 || fail "pods -w: no first table"
write_hexpod 1
expect "pods -w: the changed row" "$WORK/watch" '^default +hexpod-node1 +2/2 +Running +1 ' 1 10
rm -f "$STATUS/uid-hex.json"
expect "pods -w: the removed pod" "$WORK/watch" '^default +hexpod-node1 .*\(deleted\)$' 1 10
n=$(grep -c 'etcd-node1' "$WORK/watch")
[ "$n" = 1 ] && ok "pods -w: unchanged pods are not printed again" || fail "etcd printed $n times"
kill "$WATCH_PID" 2>/dev/null; wait "$WATCH_PID" 2>/dev/null || true
run 2 pods -w -o json

finish
