#!/usr/bin/env bash
# Memory of an idle agent with no pods, mapping by mapping (docs/internals/design-decisions.md,
# "The agent maps little"):
#   bash bench/idle-mem.sh NANOLET [RO_PORT HZ_PORT]
# Starts `NANOLET serve` as bench/bench.py does (private directories under a
# temp dir, no manifests, no CNI config), waits IDLE_WAIT=4 seconds and prints
# RSS, PSS and anonymous memory of /proc/<pid>/smaps_rollup and, with
# PER_MAPPING=1, the same per mapped file. Without ports the listeners are off
# (the bench's configuration); with two free ports they listen, and after the
# first figures /metrics and /healthz are asked once and the figures printed
# again (libmicrohttpd is loaded by the first connection). No runc, no
# network beyond 127.0.0.1, nothing shared: it needs neither root's lock nor
# the bench's; run the builds to compare alternately.
set -euo pipefail
NANOLET=${1:?usage: idle-mem.sh NANOLET [RO_PORT HZ_PORT]}
RO_PORT=${2:-0}
HZ_PORT=${3:-0}
W=$(mktemp -d /tmp/nanolet-idle-mem.XXXXXX)
PID=
cleanup() {
        if [ -n "$PID" ]; then
                kill "$PID" 2>/dev/null || true
                wait "$PID" 2>/dev/null || true
        fi
        rm -rf "$W"
}
trap cleanup EXIT
mkdir -p "$W/man" "$W/cni"

figures() {
        printf '%-30s' "$1"
        awk '/^(Rss|Pss|Anonymous):/ { printf "  %s %6.2f MiB", $1, $2 / 1024 } END { print "" }' \
                "/proc/$PID/smaps_rollup"
        [ -n "${PER_MAPPING:-}" ] || return 0
        awk '/^[0-9a-f]+-[0-9a-f]+ / { n = split($6, p, "/"); m = (NF >= 6) ? p[n] : "[anonymous]"; next }
             $1 == "Rss:" { rss[m] += $2 } $1 == "Pss:" { pss[m] += $2 } $1 == "Anonymous:" { an[m] += $2 }
             END { for (m in rss) if (rss[m] > 0) printf "  %-34s RSS %6d  PSS %6d  anonymous %5d KiB\n", m, rss[m], pss[m], an[m] }' \
                "/proc/$PID/smaps" | sort -k3 -n -r
}

"$NANOLET" serve --root-dir "$W/root" --run-dir "$W/run" --pod-logs-dir "$W/logs" \
        --container-logs-dir "$W/containers" --pod-manifest-path "$W/man" --cni-conf-dir "$W/cni" \
        --hostname-override node1 --read-only-port "$RO_PORT" --healthz-port "$HZ_PORT" \
        >"$W/agent.log" 2>&1 &
PID=$!
sleep "${IDLE_WAIT:-4}"
kill -0 "$PID" 2>/dev/null || { cat "$W/agent.log" >&2; exit 1; }
figures "idle, 0 pods"
if [ "$RO_PORT" != 0 ] && [ "$HZ_PORT" != 0 ]; then
        curl -fs -o /dev/null "http://127.0.0.1:$RO_PORT/metrics"
        curl -fs -o /dev/null "http://127.0.0.1:$HZ_PORT/healthz"
        sleep 1
        figures "after /metrics and /healthz"
fi
