#!/usr/bin/env bash
# The read-only HTTP API of a real agent with running pods, on loopback:
# /pods decoded by the official Kubernetes Python client as a V1PodList and
# matching `nanolet pods -o json`; /healthz on both listeners; both bound to
# 127.0.0.1 only; 405 for other methods, 404 for other paths (no exec,
# attach, port-forward, logs or run); a port in use is a start-up error; a
# stopped loop makes /healthz 500 with the reason, and 200 again once it runs.
# libmicrohttpd (and GnuTLS behind it) is not mapped by the agent until the
# first connection to a listener, and is once one was answered; libseccomp
# and zlib are not mapped at all.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

PY=/usr/bin/python3
if ! "$PY" -c 'import kubernetes' 2>/dev/null; then
        fail "python3-kubernetes is not installed (apt-get install python3-kubernetes)"
        finish
fi
load_test_image || { fail "test image"; finish; }

read -r RO_PORT HZ_PORT < <(free_ports 2)

sleep_pod web | put_manifest web.yaml
sleep_pod db | put_manifest db.yaml
start_agent --stop-pods-on-exit --read-only-port "$RO_PORT" --healthz-port "$HZ_PORT"
expect "read-only API listening" "$AGENT_LOG" "Serving the read-only API on 127\.0\.0\.1:$RO_PORT\."
expect "health endpoint listening" "$AGENT_LOG" "Serving the health endpoint on 127\.0\.0\.1:$HZ_PORT\."
for p in web db; do
        check_field "$p is ready" "$p" '[c["status"] for c in p["status"]["conditions"] if c["type"] == "Ready"][0]' True 60
done

RO=http://127.0.0.1:$RO_PORT
HZ=http://127.0.0.1:$HZ_PORT

# --- libmicrohttpd on first use: listening, pods running, nobody asked yet
agent_maps "agent listening without libmicrohttpd before any request" no libmicrohttpd
agent_maps "agent without GnuTLS before any request" no libgnutls
# Nor what only Localhost seccomp profiles (the pods run RuntimeDefault) and
# the log rotation workers need.
agent_maps "agent running pods without libseccomp" no libseccomp
agent_maps "agent without zlib" no libz

# status BODYFILE METHOD URL: the HTTP status, the body in BODYFILE.
status() {
        curl -s -o "$1" -w '%{http_code}' -X "$2" --max-time 30 "$3" || true
}

# --- /pods: a V1PodList the official client accepts, same as the CLI's list
[ "$(status "$WORK/pods.json" GET "$RO/pods")" = 200 ] && ok "GET /pods is 200" || fail "GET /pods"
agent_maps "libmicrohttpd loaded by the first request" yes libmicrohttpd
nl pods -o json >"$WORK/cli.json"
if out=$("$PY" - "$WORK/pods.json" "$WORK/cli.json" <<'PYEOF' 2>&1
import json, sys
from kubernetes.client import ApiClient

class Response:  # what ApiClient.deserialize() reads: .data
    def __init__(self, data):
        self.data = data

pl = ApiClient().deserialize(Response(open(sys.argv[1]).read()), "V1PodList")
cli = json.load(open(sys.argv[2]))["items"]
assert pl.kind == "PodList" and pl.api_version == "v1", (pl.kind, pl.api_version)
names = [p.metadata.name for p in pl.items]
assert names == ["db-node1", "web-node1"], names
assert names == [p["metadata"]["name"] for p in cli], [p["metadata"]["name"] for p in cli]
for p, c in zip(pl.items, cli):
    s, cs = p.status, c["status"]
    assert p.metadata.uid == c["metadata"]["uid"]
    assert s.phase == "Running" == cs["phase"], (s.phase, cs["phase"])
    assert s.pod_ip and s.pod_ip == cs["podIP"], (s.pod_ip, cs.get("podIP"))
    assert [(x.type, x.status) for x in s.conditions] == \
        [(x["type"], x["status"]) for x in cs["conditions"]], s.conditions
    assert ("Ready", "True") in [(x.type, x.status) for x in s.conditions]
    assert all(x.last_transition_time is not None for x in s.conditions)
    assert len(s.container_statuses) == 1 == len(cs["containerStatuses"])
    k, kc = s.container_statuses[0], cs["containerStatuses"][0]
    assert k.name == "main" == kc["name"]
    assert k.ready is True and k.restart_count == 0 == kc["restartCount"]
    assert k.container_id == kc["containerID"] and k.container_id.startswith("runc://")
    assert k.state.running is not None and k.state.running.started_at is not None
    assert k.image == kc["image"] and k.image_id == kc["imageID"]
    assert p.spec.containers[0].command == ["sleep", "3600"]
    assert p.spec.node_name == "node1"
print("%d pods" % len(pl.items))
PYEOF
); then
        ok "/pods decodes as V1PodList and matches 'nanolet pods -o json' ($out)"
else
        fail "/pods as V1PodList: $out"
        head -c 2000 "$WORK/pods.json" >&2
fi
grep -q '^Content-Type: application/json' <(curl -sI "$RO/pods" | tr -d '\r') &&
        ok "/pods is application/json" || fail "/pods content type"

# --- /healthz on both listeners; /pods only on the read-only one
for url in "$RO/healthz" "$HZ/healthz"; do
        code=$(status "$WORK/hz" GET "$url")
        [ "$code" = 200 ] && [ "$(cat "$WORK/hz")" = ok ] && ok "GET $url: 200 ok" ||
                fail "GET $url: $code $(cat "$WORK/hz")"
done
[ "$(curl -s -o /dev/null -w '%{http_code}' -I --max-time 30 "$HZ/healthz" || true)" = 200 ] &&
        ok "HEAD /healthz is 200" || fail "HEAD /healthz"
[ "$(status "$WORK/b" GET "$HZ/pods")" = 404 ] && ok "no /pods on the health port" ||
        fail "/pods on the health port"

# --- methods and paths
for m in POST PUT DELETE PATCH; do
        code=$(curl -s -o /dev/null -D "$WORK/h" -w '%{http_code}' -X "$m" --max-time 30 "$RO/pods" || true)
        [ "$code" = 405 ] && grep -qi '^Allow: GET, HEAD' "$WORK/h" && ok "$m /pods: 405 with Allow" ||
                fail "$m /pods: $code"
done
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 30 -d 'x' "$RO/healthz" || true)
[ "$code" = 405 ] && ok "POST with a body: 405" || fail "POST with a body: $code"
for path in / /nothing /pods/ /exec/default/web-node1/main /attach/default/web-node1/main \
        /portForward/default/web-node1 /containerLogs/default/web-node1/main \
        /run/default/web-node1/main /logs/ /metrics/cadvisor /spec/; do
        code=$(status "$WORK/b" GET "$RO$path")
        [ "$code" = 404 ] && ok "GET $path: 404" || fail "GET $path: $code"
done

# --- bound to 127.0.0.1 only
for port in "$RO_PORT" "$HZ_PORT"; do
        l=$(ss -Hltn "sport = :$port" | awk '{print $4}' | sort -u | tr '\n' ' ')
        [ "$l" = "127.0.0.1:$port " ] && ok "port $port: listening on 127.0.0.1 only" ||
                fail "port $port listeners: '$l'"
done

# --- a port in use: a second agent refuses to start, naming address:port
mkdir -p "$WORK/second"/{root,run,logs,man}
rc=0
timeout 60 "$NANOLET" serve --root-dir "$WORK/second/root" --run-dir "$WORK/second/run" --pod-logs-dir "$WORK/second/logs" \
        --container-logs-dir "$WORK/second/logs" --pod-manifest-path "$WORK/second/man" \
        --cni-conf-dir "$CNI_CONF" --hostname-override node1 --healthz-port 0 \
        --read-only-port "$RO_PORT" >"$WORK/second/log" 2>&1 || rc=$?
[ "$rc" -ne 0 ] && grep -q "Failed to start the read-only API: Cannot listen on 127\.0\.0\.1:$RO_PORT: Address already in use" "$WORK/second/log" &&
        ok "port in use: start-up error naming 127.0.0.1:$RO_PORT" ||
        fail "port in use: rc $rc, $(cat "$WORK/second/log")"
kill -0 "$AGENT_PID" && ok "first agent still runs" || fail "first agent died"

# --- a stopped loop: the request waits in the listen backlog while the agent
# is stopped; on SIGCONT the loop answers it before its timers run (the
# relist included; test-api-server proves that order), so the answer
# deterministically reports the stall. The stop lasts longer than the 2 s
# limit (2 x the 1 s relist period): the process cannot run meanwhile.
kill -STOP "$AGENT_PID"
curl -s -o "$WORK/stalled" -w '%{http_code}' --max-time 60 "$HZ/healthz" >"$WORK/stalled.code" &
CURL=$!
PIDS+=("$CURL")
sleep 3
kill -CONT "$AGENT_PID"
wait "$CURL" || true
code=$(cat "$WORK/stalled.code")
reason=$(cat "$WORK/stalled")
if [ "$code" = 500 ] && [[ $reason =~ ^syncloop\ failed:\ sync\ loop\ last\ ran\ ([0-9]+)\.[0-9]s\ ago,\ limit\ 2\.0s$ ]] &&
        [ "${BASH_REMATCH[1]}" -ge 3 ]; then
        ok "after SIGSTOP: 500 '$reason'"
else
        fail "after SIGSTOP: $code '$reason'"
fi
# Once the loop turns again it is healthy: the next relist is at most a
# period away (polled for far longer, for a loaded machine).
for ((i = 0; i < 150; i++)); do
        code=$(status "$WORK/hz" GET "$HZ/healthz")
        [ "$code" = 200 ] && break
        sleep 0.2
done
[ "$code" = 200 ] && ok "healthy again after SIGCONT" || fail "still $code after SIGCONT: $(cat "$WORK/hz")"

stop_agent
check_no_leftovers
finish
