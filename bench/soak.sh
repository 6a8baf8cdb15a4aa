#!/usr/bin/env bash
# The soak (docs/BENCHMARKS.md, "Soak"): tests/integration/test-soak.sh with
# more lifecycles, on an optimized build, under the integration-test lock.
#   sudo bash bench/soak.sh               2,000 pod lifecycles
#   sudo N=500 bash bench/soak.sh
# Knobs (environment): N (2000) WAVE (14 pods at once) BENCH_BUILD_DIR (build-bench)
#   BENCH_NANOLET=PATH (another nanolet binary, e.g. main's) BENCH_NO_LOCK=1
# Output: the per-resource growth per 1,000 lifecycles; raw figures in
# bench/results/soak-<date>.json.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
MODE=${SOAK_MODE:-soak}
[ "$(id -u)" = 0 ] || { echo "bench/$MODE.sh: needs root" >&2; exit 1; }
BUILD=${BENCH_BUILD_DIR:-build-bench}
if [ -z "${BENCH_NANOLET:-}" ]; then
        [ -f "$BUILD/build.ninja" ] ||
                meson setup "$BUILD" --buildtype=debugoptimized -Db_sanitize=none -Dtests=disabled -Dman=disabled >/dev/null
        ninja -j2 -C "$BUILD" nanolet nanolet-agent nanolet-monitor >/dev/null
fi
mkdir -p bench/results
result=$PWD/bench/results/$MODE-$(date -u +%Y%m%dT%H%M%S).json
run() {
        NANOLET=${BENCH_NANOLET:-$PWD/$BUILD/nanolet} TEST_DATA_DIR=$PWD/tests SOAK_MODE=$MODE \
                SOAK_LIFECYCLES=${N:-2000} SOAK_WAVE=${WAVE:-14} SOAK_KILLS=${KILLS:-100} SOAK_PODS=${PODS:-50} \
                SOAK_RESULT=$result bash tests/integration/test-soak.sh
}
if [ "${BENCH_NO_LOCK:-0}" = 1 ]; then
        run
else
        echo "bench/$MODE.sh: waiting for /tmp/nanolet-itest.lock" >&2
        exec 9>/tmp/nanolet-itest.lock
        flock 9
        run
fi
echo "bench/$MODE.sh: figures in $result"
