#!/usr/bin/env bash
# nanolet benchmarks: one command, one table (docs/BENCHMARKS.md).
#   sudo bash bench/run.sh
# Knobs (environment): docs/bench-knobs.md, generated from
# bench/nanolet_bench/knobs.py (`python3 bench/bench.py --print-knobs-md`).
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
