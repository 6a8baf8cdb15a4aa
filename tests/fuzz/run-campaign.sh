#!/bin/sh
# One fuzz campaign (not run by CI): runs a libFuzzer target of a fuzz tree
# (see meson.build here) for RUNS executions or SECONDS of wall time,
# whichever comes first, then merges what it found into the committed corpus
# with -merge=1, which adds only inputs that bring new coverage. Crashes,
# leaks, OOMs and timeouts are left in WORKDIR/artifacts; add the input that
# reproduces a fixed bug to the corpus by hand, under a name saying what it is.
#
#   tests/fuzz/run-campaign.sh BUILD-DIR TARGET [RUNS [SECONDS]] [-- LIBFUZZER-FLAGS]
#   tests/fuzz/run-campaign.sh build-fuzz fuzz-oci-json 10000000 3600
#
# The fuzzer runs under nice -n 19, one process, with a 512 MB RSS and
# malloc limit; new inputs are capped at 4096 bytes (-max_len) so that the
# corpus stays small. Set KEEP_CORPUS=1 to skip the merge.
set -eu

usage() {
        echo "usage: $0 BUILD-DIR TARGET [RUNS [SECONDS]] [-- LIBFUZZER-FLAGS]" >&2
        exit 2
}
[ $# -ge 2 ] || usage
build=$1
target=$2
shift 2
runs=10000000
seconds=3600
if [ $# -gt 0 ] && [ "$1" != "--" ]; then runs=$1; shift; fi
if [ $# -gt 0 ] && [ "$1" != "--" ]; then seconds=$1; shift; fi
if [ $# -gt 0 ]; then
        [ "$1" = "--" ] || usage
        shift
fi

here=$(cd "$(dirname "$0")" && pwd)
bin=$build/tests/fuzz/$target
corpus=$here/corpus/${target#fuzz-}
[ -x "$bin" ] || { echo "$bin: not built (ninja -C $build tests/fuzz/$target)" >&2; exit 1; }
[ -d "$corpus" ] || { echo "$corpus: no such corpus" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/nanolet-$target.XXXXXX")
mkdir "$work/new" "$work/artifacts"
limits="-rss_limit_mb=512 -malloc_limit_mb=512 -timeout=25"
echo "campaign: $target, $runs runs or ${seconds}s; work dir $work" >&2

start=$(date +%s)
rc=0
# shellcheck disable=SC2086 # $limits and "$@" are flag lists
nice -n 19 "$bin" $limits -runs="$runs" -max_total_time="$seconds" -max_len=4096 \
        -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$@" \
        "$work/new" "$corpus" >"$work/fuzz.log" 2>&1 || rc=$?
end=$(date +%s)

execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/fuzz.log" | tail -n1)
speed=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/fuzz.log" | tail -n1)
last=$(grep -E '^#[0-9]+' "$work/fuzz.log" | tail -n1 || true)
cov=$(echo "$last" | sed -n 's/.* cov: \([0-9]*\).*/\1/p')
ft=$(echo "$last" | sed -n 's/.* ft: \([0-9]*\).*/\1/p')
findings=$(ls "$work/artifacts" | wc -l)
echo "result: target=$target rc=$rc executions=${execs:-?} seconds=$((end - start))" \
        "exec/s=${speed:-?} cov=${cov:-?} ft=${ft:-?} artifacts=$findings"
[ "$findings" -eq 0 ] || ls -l "$work/artifacts"
[ "$rc" -eq 0 ] || tail -n 40 "$work/fuzz.log" >&2

if [ "${KEEP_CORPUS:-0}" != 1 ]; then
        before=$(ls "$corpus" | wc -l)
        # shellcheck disable=SC2086
        nice -n 19 "$bin" $limits -merge=1 -artifact_prefix="$work/artifacts/" \
                "$corpus" "$work/new" >"$work/merge.log" 2>&1 ||
                { echo "merge failed, see $work/merge.log" >&2; exit 1; }
        after=$(ls "$corpus" | wc -l)
        size=$(cat "$corpus"/* | wc -c)
        echo "corpus: $corpus: $before -> $after inputs, $size bytes"
        [ "$size" -le 2097152 ] || echo "warning: corpus over 2 MiB; prune it before committing" >&2
fi
exit "$rc"
