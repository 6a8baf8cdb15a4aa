#!/usr/bin/env bash
# Local ConfigMap and Secret documents that change reach a running pod's
# configMap/secret volumes (kubelet's atomic writer: a "..<timestamp>"
# directory, the "..data" symlink swapped, user-visible names symlinks into
# ..data) without a restart: the container keeps its PID and restartCount 0.
# An env var taken from the ConfigMap keeps its value until the container
# restarts, as in Kubernetes.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

objects() {
        cat <<YAML
apiVersion: v1
kind: ConfigMap
metadata: {name: cfg}
data: {greeting: $1}
---
apiVersion: v1
kind: Secret
metadata: {name: sec}
stringData: {password: $2}
YAML
}

load_test_image || { fail "test image"; finish; }
objects hello s3cret | put_manifest objects.yaml
cat <<'YAML' | put_manifest reader.yaml
apiVersion: v1
kind: Pod
metadata: {name: reader}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: cfg, configMap: {name: cfg}}
  - {name: sec, secret: {secretName: sec}}
  containers:
  - name: main
    image: nanolet-test
    imagePullPolicy: Never
    env:
    - name: GREETING
      valueFrom: {configMapKeyRef: {name: cfg, key: greeting}}
    command: [sh, -c, 'echo "env=$GREETING"; while [ ! -e /tmp/stop ]; do sleep 0.2; done; exit 3']
    volumeMounts:
    - {name: cfg, mountPath: /etc/cfg}
    - {name: sec, mountPath: /etc/sec}
YAML
start_agent

check_field "reader running" reader 'p["status"]["containerStatuses"][0]["state"].get("running") is not None' True 60
uid=$(pod_field reader 'p["metadata"]["uid"]')
cid=$(pod_field reader 'p["status"]["containerStatuses"][0]["containerID"].split("://")[-1]')
pid_of() { runc --root "$RUN/runc" state "$1" 2>/dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])'; }
pid0=$(pid_of "$cid")
[ -n "$pid0" ] && ok "container pid $pid0" || fail "no pid for container $cid"

in_pod() { nl exec reader -- "$@" 2>"$WORK/exec.err"; }
[ "$(in_pod cat /etc/cfg/greeting)" = hello ] && ok "configMap volume: first value" ||
        fail "configMap volume: '$(in_pod cat /etc/cfg/greeting)' $(cat "$WORK/exec.err")"
[ "$(in_pod cat /etc/sec/password)" = s3cret ] && ok "secret volume: first value" ||
        fail "secret volume: '$(in_pod cat /etc/sec/password)'"

# kubelet's layout on the node
vol=$ROOT/pods/$uid/volumes/kubernetes.io~configmap/cfg
layout() {
        local d=$1 data
        data=$(readlink "$d/..data")
        [[ $data == ..20* ]] || { echo "..data -> '$data'"; return 1; }
        [ -d "$d/$data" ] || { echo "$data is not a directory"; return 1; }
        [ "$(readlink "$d/$2")" = "..data/$2" ] || { echo "$2 -> '$(readlink "$d/$2")'"; return 1; }
        [ "$(find "$d" -maxdepth 1 -name '..20*' | wc -l)" = 1 ] || { echo "versions: $(ls -a "$d")"; return 1; }
}
out=$(layout "$vol" greeting) && ok "atomic writer layout" || fail "layout: $out"
first_version=$(readlink "$vol/..data")

# Edit both documents: the volumes change in place.
objects bonjour n3wpass | put_manifest objects.yaml
expect "the agent updated the configMap volume" "$AGENT_LOG" \
        'Updated volumes from configmap .*pod="default/reader-node1" podUID="'"$uid"'"' 1 30
expect "the agent updated the secret volume" "$AGENT_LOG" \
        'Updated volumes from secret .*pod="default/reader-node1"' 1 30
[ "$(in_pod cat /etc/cfg/greeting)" = bonjour ] && ok "configMap volume: new value in the running container" ||
        fail "configMap volume after the edit: '$(in_pod cat /etc/cfg/greeting)'"
[ "$(in_pod cat /etc/sec/password)" = n3wpass ] && ok "secret volume: new value in the running container" ||
        fail "secret volume after the edit: '$(in_pod cat /etc/sec/password)'"
out=$(layout "$vol" greeting) && ok "atomic writer layout after the swap" || fail "layout after the swap: $out"
[ "$(readlink "$vol/..data")" != "$first_version" ] && ok "..data points to a new version" ||
        fail "..data still points to $first_version"
[ ! -e "$vol/$first_version" ] && ok "the previous version is removed" || fail "$first_version left"

check_field "no restart" reader 'p["status"]["containerStatuses"][0]["restartCount"]' 0 5
[ "$(pid_of "$cid")" = "$pid0" ] && ok "same container process ($pid0)" ||
        fail "container process changed: $pid0 -> $(pid_of "$cid")"
[ "$(nl logs reader)" = "env=hello" ] && ok "env var unchanged without a restart" ||
        fail "logs: $(nl logs reader)"

# A restart takes the new value into the environment.
in_pod touch /tmp/stop || fail "exec touch: $(cat "$WORK/exec.err")"
check_field "restarted once" reader 'p["status"]["containerStatuses"][0]["restartCount"]' 1 60
check_field "running again" reader 'p["status"]["containerStatuses"][0]["state"].get("running") is not None' True 60
for ((i = 0; i < 150; i++)); do
        [ "$(nl logs reader 2>/dev/null)" = "env=bonjour" ] && break
        sleep 0.2
done
[ "$(nl logs reader)" = "env=bonjour" ] && ok "env var has the new value after the restart" ||
        fail "logs after the restart: $(nl logs reader)"

# A ConfigMap nothing projects rewrites nothing.
cat <<'YAML' | put_manifest other.yaml
apiVersion: v1
kind: ConfigMap
metadata: {name: unrelated}
data: {k: v}
YAML
expect "the agent saw the unrelated ConfigMap" "$AGENT_LOG" 'SyncLoop \(LOCAL, "file"\).*configmap="default/unrelated"' 1 30
n=$(count_lines "$AGENT_LOG" 'Updated volumes from configmap')
[ "$n" = 1 ] && ok "an unrelated ConfigMap rewrites nothing" || fail "$n volume updates"

rm -f "$MAN/reader.yaml" "$MAN/objects.yaml" "$MAN/other.yaml"
expect "pod removed" "$AGENT_LOG" 'Pod "reader-node1_default\([0-9a-f-]+\)" is gone' 1 60
stop_agent
check_no_leftovers

# --- the agent's log: klog's header on every line, key/values on pod events
bad=$(grep -vE '^[IWE][0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6} +[0-9]+ [a-z0-9_.-]+\.c:[0-9]+\] ' "$AGENT_LOG" || true)
[ -z "$bad" ] && ok "every agent log line has klog's header ($(wc -l <"$AGENT_LOG") lines)" ||
        fail "lines without klog's header: $(echo "$bad" | head -5)"
expect "Started container carries pod, podUID and containerName" "$AGENT_LOG" \
        'Started container "main" of pod "reader-node1_default\([0-9a-f]+\)".* pod="default/reader-node1" podUID="'"$uid"'" containerName="main"$' 1 1
expect "Killing container carries them too" "$AGENT_LOG" \
        'Killing container "main" .* pod="default/reader-node1" podUID="'"$uid"'" containerName="main"$' 1 1

# --- --logging-format=json: kubelet's shape, every line JSON
AGENT_LOG=$WORK/agent-json.log
sleep_pod jsonpod 1 | put_manifest jsonpod.yaml
start_agent --logging-format=json
check_field "json: pod running" jsonpod 'p["status"]["phase"]' Running 60
juid=$(pod_field jsonpod 'p["metadata"]["uid"]')
rm -f "$MAN/jsonpod.yaml"
expect "json: pod removed" "$AGENT_LOG" 'Pod \\"jsonpod-node1_default\([0-9a-f]+\)\\" is gone' 1 60
stop_agent
out=$(python3 - "$AGENT_LOG" "$juid" <<'PY'
import json, sys
n = 0; started = None
for line in open(sys.argv[1]):
    d = json.loads(line)  # raises on any non-JSON line
    assert isinstance(d["ts"], float) and "msg" in d and "caller" in d, line
    assert ("v" in d) != ("err" in d), line
    n += 1
    if d["msg"].startswith('Started container "main"'):
        started = d
assert started, "no Started container line"
assert started["pod"] == {"name": "jsonpod-node1", "namespace": "default"}, started
assert started["podUID"] == sys.argv[2] and started["containerName"] == "main", started
print(n)
PY
) && ok "json: all $out lines parse, Started container has pod/podUID/containerName" ||
        fail "json log: $out"
check_no_leftovers
finish
