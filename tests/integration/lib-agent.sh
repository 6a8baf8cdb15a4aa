# Helpers for tests that run the real agent against runc and conmon: a
# private root/run/log dir per test, the test image loaded from an archive,
# and a cleanup that leaves no container, mount or pin behind even when the
# test fails.
ROOT=$WORK/root
RUN=$WORK/run
LOGS=$WORK/logs
CLOGS=$WORK/containers
MAN=$WORK/manifests
AGENT_LOG=$WORK/agent.log
mkdir -p "$ROOT" "$RUN" "$LOGS" "$CLOGS"
mkdir -m 0755 "$MAN"
AGENT_PID=
# A network of this test only: its own bridge and 10.x range, leases in
# $WORK, no masquerading (no iptables rules), removed by the trap.
CNI_CONF=$WORK/cni
TEST_BRIDGE=nlt$(printf '%04x' $((RANDOM % 65536)))
TEST_SUBNET=10.$((200 + RANDOM % 50)).$((RANDOM % 250)).0/24
mkdir -p "$CNI_CONF" "$WORK/leases"

# write_conflist FILE NAME BRIDGE SUBNET [portmap] [masq]: a bridge +
# host-local network of this test (leases under $WORK/leases/NAME), without
# masquerade; with "portmap" the portmap plugin is chained for hostPort, with
# "masq" the bridge masquerades (both add iptables rules: a test using them
# must check and clean them up).
write_conflist() {
        local portmap= masq=false opt
        for opt in "${@:5}"; do
                case $opt in
                portmap) portmap=',
  {"type": "portmap", "capabilities": {"portMappings": true}}' ;;
                masq) masq=true ;;
                esac
        done
        cat >"$1.tmp" <<JSON
{"cniVersion": "1.0.0", "name": "$2", "plugins": [
  {"type": "bridge", "bridge": "$3", "isGateway": true, "ipMasq": $masq,
   "ipam": {"type": "host-local", "dataDir": "$WORK/leases",
            "ranges": [[{"subnet": "$4"}]], "routes": [{"dst": "0.0.0.0/0"}]}}$portmap]}
JSON
        mv "$1.tmp" "$1"
}
write_conflist "$CNI_CONF/10-test.conflist" nanolet-test "$TEST_BRIDGE" "$TEST_SUBNET"

# cni_bin_wrapping_bridge DIR: a plugin directory for a test that wraps the
# bridge plugin: host-local from the CNI search path is linked into DIR, and
# REAL_BRIDGE names the bridge plugin the test's own DIR/bridge runs. Skips
# the test when either is missing.
cni_bin_wrapping_bridge() {
        local p d found dirs
        REAL_BRIDGE=
        for p in bridge host-local; do
                found=
                IFS=: read -ra dirs <<<"${CNI_BIN_DIRS:-/opt/cni/bin:/usr/lib/cni}"
                for d in "${dirs[@]}"; do [ -x "$d/$p" ] && { found=$d/$p; break; }; done
                [ -n "$found" ] || skip "CNI plugin $p not found"
                if [ "$p" = bridge ]; then REAL_BRIDGE=$found; else ln -s "$found" "$1/$p"; fi
        done
}

agent_cleanup() {
        local id m
        if [ "$failures" -gt 0 ] && [ -f "$AGENT_LOG" ]; then
                cp "$AGENT_LOG" "/tmp/$TEST_NAME-agent.log" 2>/dev/null || true
                # CI keeps only this output: the warnings and errors say why
                # a pod stalled, the tail what the agent did last.
                echo "--- agent log kept in /tmp/$TEST_NAME-agent.log; its last warnings and errors:" >&2
                grep -E '^[WEF][0-9]{4} ' "$AGENT_LOG" | tail -40 >&2 || true
                echo "--- its last lines:" >&2
                tail -40 "$AGENT_LOG" >&2
        fi
        if [ -n "$AGENT_PID" ]; then
                kill -9 "$AGENT_PID" 2>/dev/null || true
                wait "$AGENT_PID" 2>/dev/null || true
        fi
        if [ -d "$RUN/runc" ]; then
                for id in $(runc --root "$RUN/runc" list -q 2>/dev/null); do
                        runc --root "$RUN/runc" kill "$id" KILL 2>/dev/null || true
                        runc --root "$RUN/runc" delete --force "$id" 2>/dev/null || true
                done
        fi
        # container monitors (conmon, nanolet-monitor) of this test
        pkill -9 -f "conmon.*$RUN" 2>/dev/null || true
        pkill -9 -f "^[^ ]*nanolet-monitor .*$RUN" 2>/dev/null || true
        for m in $(awk -v w="$WORK" 'index($2, w) == 1 {print $2}' /proc/mounts | sort -r); do
                umount -l "$m" 2>/dev/null || true
        done
        ip link del "$TEST_BRIDGE" 2>/dev/null || true
        # Pod cgroups of this agent's pods, should it have been killed mid-way
        # (kubepods/[burstable|besteffort/]pod<uid> under any --cgroup-root),
        # and a test's own --cgroup-root tree (TEST_CGROUP_ROOT) whole.
        for m in $(agent_pod_cgroups); do
                find "$m" -depth -type d -exec rmdir {} \; 2>/dev/null
        done
        if [ -n "${TEST_CGROUP_ROOT:-}" ]; then
                for m in /sys/fs/cgroup/*"$TEST_CGROUP_ROOT" /sys/fs/cgroup"$TEST_CGROUP_ROOT"; do
                        [ -d "$m" ] && find "$m" -depth -type d -exec rmdir {} \; 2>/dev/null
                done
        fi
        cleanup
}

# The cgroup directories of this agent's pods that exist now, in every
# hierarchy: pod<uid> below a kubepods level (any --cgroup-root), or the old
# nanolet/pod<uid>.
agent_pod_cgroups() {
        local uid
        for uid in $(agent_pod_uids); do
                find /sys/fs/cgroup -maxdepth 8 -type d -name "pod$uid" 2>/dev/null |
                        grep -E '/(kubepods|burstable|besteffort|nanolet)/pod' || true
        done
}

# UIDs of every pod this test's agent was asked to run.
agent_pod_uids() {
        [ -f "$AGENT_LOG" ] || return 0
        grep -oE 'SyncLoop \((ADD|UPDATE), "[a-z]+"\): "[^"]*\([0-9a-f-]+\)' "$AGENT_LOG" |
                grep -oE '\([0-9a-f-]+\)"?$' | tr -d '()"' | sort -u
}
trap agent_cleanup EXIT

# pod_runc_ids UID...: the runtime IDs of those pods' containers, one a
# line. Container IDs are 64 hex digits that do not show the pod (or, from
# agents before that scheme, "<uid>-<name>-<attempt>"): a container belongs
# to the pod whose directory holds its bundle.
pod_runc_ids() {
        runc --root "$RUN/runc" list -f json 2>/dev/null | python3 -c '
import json, sys
uids = sys.argv[1:]
for c in json.load(sys.stdin) or []:
    if any("/pods/%s/" % u in c["bundle"] for u in uids):
        print(c["id"])' "$@"
}

# free_ports N: N TCP ports free on 127.0.0.1 now, on one line (bound
# together, so they differ).
free_ports() {
        python3 -c '
import socket, sys
s = [socket.socket() for _ in range(int(sys.argv[1]))]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))' "$1"
}

# Loads the busybox test image (built from the distro's busybox-static).
load_test_image() {
        "$TEST_DATA_DIR/make-test-image.sh" "$WORK/images" >/dev/null
        "$NANOLET" image --root-dir "$ROOT" load "$WORK/images/nanolet-test.tar" >/dev/null
}

# put FILE: stdin -> a manifest, written as installers do (temp + rename).
put_manifest() {
        cat >"$MAN/.$1.tmp"
        mv "$MAN/.$1.tmp" "$MAN/$1"
}

# The HTTP listeners are off (port 0) unless the test's own flags, which come
# later, turn them on: two agents must not want the same default port.
# NANOLET_TEST_CONTAINER_MONITOR=conmon|nanolet runs the tests against that
# container monitor (--container-monitor) instead of the default.
start_agent() {
        "$NANOLET" serve --root-dir "$ROOT" --run-dir "$RUN" --pod-logs-dir "$LOGS" \
                --container-logs-dir "$CLOGS" --pod-manifest-path "$MAN" --cni-conf-dir "$CNI_CONF" \
                --hostname-override node1 --file-check-frequency 2s \
                ${NANOLET_TEST_CONTAINER_MONITOR:+--container-monitor="$NANOLET_TEST_CONTAINER_MONITOR"} \
                --read-only-port 0 --healthz-port 0 "$@" >>"$AGENT_LOG" 2>&1 &
        AGENT_PID=$!
        wait_for "$AGENT_LOG" 'nanolet starting'
}

# log_times PATTERN: when the agent logged each line matching PATTERN, as
# seconds (fractional), one a line, in log order. The agent's own stamps
# (I1123 20:15:18.373737, local time) say when an event happened, however
# late the test looks at it.
log_times() {
        grep -E -- "$1" "$AGENT_LOG" | grep -E '^[DIWEF][0-9]{4} ' | python3 -c '
import sys, datetime
for line in sys.stdin:
    t = datetime.datetime.strptime("2000" + line[1:21], "%Y%m%d %H:%M:%S.%f")
    print("%.6f" % t.timestamp())'
}

# sleep_pod NAME [GRACE]: the manifest of a pod NAME with one container
# "main" sleeping for an hour, terminationGracePeriodSeconds GRACE (2).
sleep_pod() {
        cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1}
spec:
  terminationGracePeriodSeconds: ${2:-2}
  containers:
  - {name: main, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
YAML
}

# agent_maps DESC yes|no LIB: records whether the running agent process
# (nanolet-agent, exec'd by `nanolet serve`) has a mapping of library LIB
# ("libcurl", "libcrypto"), as expected. libcurl is loaded on first use and
# libcrypto never (docs/internals/runtime.md, "The agent executable").
agent_maps() {
        local desc=$1 want=$2 lib=$3 got=no exe
        exe=$(readlink "/proc/$AGENT_PID/exe" || true)
        case $exe in
        */nanolet-agent) ;;
        *) fail "$desc: the agent process runs \"$exe\", not nanolet-agent"; return ;;
        esac
        grep -qE "/$lib(-[^/]*)?\.so" "/proc/$AGENT_PID/maps" && got=yes
        [ "$got" = "$want" ] && ok "$desc" || fail "$desc: $lib mapped: $got, expected $want"
}

# A clean stop exits 0: under ASan this is where leaks in the agent show.
stop_agent() {
        local rc=0
        [ -n "$AGENT_PID" ] || return 0
        kill -TERM "$AGENT_PID" 2>/dev/null || true
        wait "$AGENT_PID" 2>/dev/null || rc=$?
        AGENT_PID=
        [ "$rc" -eq 0 ] && ok "agent stopped cleanly" || fail "agent exited with status $rc on SIGTERM"
}

nl() { "$NANOLET" "$1" --root-dir "$ROOT" --run-dir "$RUN" --pod-logs-dir "$LOGS" "${@:2}"; }

# pod_json NAME: the status file of pod NAME-node1 (any namespace).
pod_json() {
        local f
        for f in "$RUN"/status/*.json; do
                [ -e "$f" ] || continue
                if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["metadata"]["name"]==sys.argv[2] else 1)' "$f" "$1-node1" 2>/dev/null; then
                        cat "$f"
                        return 0
                fi
        done
        return 1
}

# pod_field NAME PYEXPR: evaluates PYEXPR on the status (as `p`), prints it.
pod_field() {
        pod_json "$1" 2>/dev/null | python3 -c "import json,sys; p=json.load(sys.stdin); print($2)" 2>/dev/null
}

# wait_field NAME PYEXPR VALUE [TIMEOUT]: TIMEOUT is at least WAIT_MIN_S.
wait_field() {
        local i v timeout=${4:-$WAIT_MIN_S}
        ((timeout >= WAIT_MIN_S)) || timeout=$WAIT_MIN_S
        for ((i = 0; i < timeout * 5; i++)); do
                v=$(pod_field "$1" "$2" || true)
                [ "$v" = "$3" ] && return 0
                sleep 0.2
        done
        echo "--- $1: $2 is '$v', want '$3'" >&2
        pod_json "$1" >&2 || echo "(no status file)" >&2
        tail -30 "$AGENT_LOG" >&2
        return 1
}

# check_field DESC NAME PYEXPR VALUE [TIMEOUT]
check_field() {
        local desc=$1
        shift
        if wait_field "$@"; then ok "$desc"; else fail "$desc"; fi
}

# Nothing of the agent's pods may remain: containers, mounts, pins.
check_no_leftovers() {
        local n
        n=$(runc --root "$RUN/runc" list -q 2>/dev/null | wc -l)
        [ "$n" -eq 0 ] && ok "no runc containers left" || fail "$n runc containers left"
        n=$(awk -v w="$WORK" 'index($2, w) == 1 && $2 != w"/run/ns" {print $2}' /proc/mounts | wc -l)
        [ "$n" -eq 0 ] && ok "no mounts left" || fail "mounts left: $(awk -v w="$WORK" 'index($2, w) == 1' /proc/mounts)"
        n=$(find "$RUN/ns" -mindepth 1 2>/dev/null | wc -l)
        [ "$n" -eq 0 ] && ok "no namespace pins left" || fail "pins left: $(find "$RUN/ns" -mindepth 1)"
        # Only this agent's pods count: other instances may run at the same time.
        local left
        left=$(agent_pod_cgroups)
        [ -z "$left" ] && ok "no pod cgroups left" || fail "pod cgroups left: $left"
        n=$(find "$WORK/leases" -type f ! -name lock ! -name 'last_reserved_ip*' 2>/dev/null | wc -l)
        [ "$n" -eq 0 ] && ok "no IP leases left" || fail "leases left: $(find "$WORK/leases" -type f)"
        # "|| true": no bridge at all (only hostNetwork pods ran) means no veth left
        n=$(ip -o link show master "$TEST_BRIDGE" 2>/dev/null | wc -l || true)
        [ "$n" -eq 0 ] && ok "no veths left on the test bridge" || fail "$n veths left on $TEST_BRIDGE"
        n=$(find "$ROOT/pods" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
        [ "$n" -eq 0 ] && ok "no pod dirs left" || fail "pod dirs left: $(ls "$ROOT/pods")"
}

# check_private_state NAME: what holds pod NAME's spec and env values is
# root's only (docs/internals/state-files.md): the status dir and files, the checkpoints and the
# bundles' config.json.
check_private_state() {
        local uid f want got bad=
        uid=$(pod_field "$1" 'p["metadata"]["uid"]')
        for f in "$RUN/status:700" "$ROOT/pods:700" "$ROOT/pods/$uid/pod.json:600"; do
                want=${f##*:}
                got=$(stat -c %a "${f%:*}" 2>/dev/null || echo missing)
                [ "$got" = "$want" ] || bad+=" ${f%:*}=$got(want $want)"
        done
        for f in "$RUN"/status/*.json; do
                got=$(stat -c %a "$f")
                [ "$got" = 600 ] || bad+=" $f=$got(want 600)"
        done
        for f in "$ROOT/pods/$uid"/containers/*/*/bundle/config.json; do
                got=$(stat -c %a "$f" 2>/dev/null || echo missing)
                [ "$got" = 600 ] || bad+=" $f=$got(want 600)"
        done
        [ -z "$bad" ] && ok "pod specs and env values readable by root only ($1)" ||
                fail "state readable by others:$bad"
}
