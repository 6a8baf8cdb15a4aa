#!/usr/bin/env bash
# nanolet benchmarks: one command, one table (docs/BENCHMARKS.md).
#   sudo bash bench/run.sh
# Knobs (environment): RUNS=10 SCALE_PODS=100 IDLE_SECONDS=60 RESCAN_MANIFESTS=1000
#   SKIP_PODMAN=1 SKIP_CNI=1 SKIP_SCALE=1 SKIP_RESTART=1 SKIP_RESCAN=1
#   BENCH_BUILD_DIR=build-bench  BENCH_TIMEOUT=60 (s per pod start) SCALE_TIMEOUT=300
#   BENCH_NO_LOCK=1 (do not take /tmp/nanolet-itest.lock: a machine of your own, or a caller holding it)
#   KEEP_AGENT_LOG=FILE RESTART_LOG_LEVEL=7 (the agent restart's timeline, docs/BENCHMARKS.md)
#   KEEP_LATENCY_LOG=FILE LATENCY_LOG_LEVEL=7 (each pod start's timeline: bench/start-timeline.py FILE)
#   KEEP_PROFILE_LOG=FILE (the profile phase's debug log: its many-pod drops)
#   BENCH_NANOLET=PATH (measure another nanolet binary, e.g. main's, with this bench)
#   SKIP_KUBEADM=1 SKIP_COLDSTART=1 COLDSTART_PODS=20 KUBEADM_TIMEOUT=120
#   BENCH_AGENT_ARGS="--flag=value ..." (more agent flags, e.g. --seccomp-default=false)
#   BENCH_MONITOR=nanolet|conmon (the agent runs with --container-monitor=VALUE; default: the agent's default)
#   SCALE_SWEEP=1,2,4,8,auto SWEEP_RUNS=2 (SCALE_PODS again per --runtime-max-parallel)
#   SKIP_PARFLOOR=1 PARFLOOR_RUNS=1 PARFLOOR_BOUND=2xCPUs PARFLOOR_VARIANTS=bare/4,pod/4,nanolet PARFLOOR_PERF=DIR (the measured parallel floor: SCALE_PODS
#     runc create+start at once, bare bundle / the agent's config.json / without seccomp)
# Builds a non-sanitized optimized tree, installs podman (Debian) if missing,
# holds the shared integration-test lock for the whole run, and leaves nothing
# behind (containers, pods, netns, leases, bridges, iptables rules, mounts,
# pod cgroups, the kubeadm hostPath directories it had to create)
# even when interrupted. Raw results: bench/results/<date>.json.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
BUILD=${BENCH_BUILD_DIR:-build-bench}

if [ "$(id -u)" != 0 ]; then
        echo "bench/run.sh: needs root (runc, CNI, podman)" >&2
        exit 1
fi
for t in runc conmon ip iptables-save valgrind python3; do
        command -v "$t" >/dev/null || { echo "bench/run.sh: $t is missing (contrib/install-deps.sh)" >&2; exit 1; }
done

# -O2 -g: optimized, with symbols for perf; release (-O3) trips
# -Werror=maybe-uninitialized in gcc 12 today.
if [ ! -f "$BUILD/build.ninja" ]; then
        meson setup "$BUILD" --buildtype=debugoptimized -Db_sanitize=none -Dtests=disabled -Dman=disabled >/dev/null
fi
ninja -j2 -C "$BUILD" nanolet nanolet-agent nanolet-monitor bench/bench-rescan >/dev/null

if [ "${SKIP_PODMAN:-0}" != 1 ] && { ! command -v podman >/dev/null || ! [ -x /usr/libexec/podman/catatonit ] && ! command -v catatonit >/dev/null; }; then
        echo "bench/run.sh: installing podman (apt)" >&2
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends podman catatonit >/dev/null
fi

workdir_file=$(mktemp /tmp/nanolet-bench-wd.XXXXXX)
child=
on_exit() {
        local rc=$?
        trap - EXIT INT TERM
        if [ -n "$child" ]; then
                kill -TERM "$child" 2>/dev/null || true
                wait "$child" 2>/dev/null || true
        fi
        # The bench cleans up after itself; this covers a bench that died hard.
        local wd
        wd=$(cat "$workdir_file" 2>/dev/null || true)
        if [ -n "$wd" ] && [ -d "$wd" ]; then
                python3 "$ROOT/bench/bench.py" --cleanup "$wd" || true
        fi
        rm -f "$workdir_file"
        exit "$rc"
}
trap on_exit EXIT
trap 'exit 130' INT TERM

if [ "${BENCH_NO_LOCK:-0}" != 1 ]; then
        exec 9>/tmp/nanolet-itest.lock
        echo "bench/run.sh: waiting for /tmp/nanolet-itest.lock" >&2
        flock 9
fi
# BENCH_NANOLET=PATH: measure that nanolet binary (e.g. another commit's
# build, for a before/after on the same machine) with this bench.
BENCH_WORKDIR_FILE=$workdir_file python3 "$ROOT/bench/bench.py" "$ROOT" "${BENCH_NANOLET:-$ROOT/$BUILD/nanolet}" \
        "$ROOT/$BUILD/bench/bench-rescan" &
child=$!
wait "$child"
rc=$?
child=
exit "$rc"
