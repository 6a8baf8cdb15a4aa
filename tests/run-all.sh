#!/usr/bin/env bash
# The one test command (README, .ci/run): installs dependencies, builds a
# normal tree and an ASan+UBSan tree, runs every meson test in both, checks
# that the tree also builds with clang (counted as one test), and ends
# with exactly one summary line "N passed, N failed[, N skipped]".
#
# Environment:
#   NANOLET_SKIP_DEPS=1       do not run contrib/install-deps.sh
#   NANOLET_BUILD_PREFIX=DIR  build trees DIR and DIR-asan (default: build)
#   NANOLET_SKIP_ASAN=1       only the normal tree (quick local runs)
#   CI=true                   strict mode: a skipped test counts as failed
#                             (NANOLET_TEST_STRICT=1 is exported to tests)
#   MESON_TEST_ARGS="..."     extra arguments for `meson test` (e.g. --suite unit)
#   NANOLET_SKIP_GUEST=1      no Debian guest phase (counted as one skipped test)
#   NANOLET_GUEST_CACHE=DIR   where the guest image is cached (tests/guest/README.md)
#   NANOLET_GUEST_TESTS=GLOBS only these in-guest files (run-guest.sh --tests)
#
# The guest phase (tests/guest/): the guest image and the .deb are built in
# the background while the trees build and test; the guest boots after them
# and each of its checks counts as one test. A guest that cannot boot or
# gives no result counts as one failure.
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
exec </dev/null

prefix=${NANOLET_BUILD_PREFIX:-build}
strict=0
if [[ ${CI:-} == true || ${NANOLET_TEST_STRICT:-0} == 1 ]]; then
        strict=1
        export NANOLET_TEST_STRICT=1
fi

log() { printf '==> %s\n' "$*" >&2; }

if [[ ${NANOLET_SKIP_DEPS:-0} != 1 ]]; then
        log "installing dependencies"
        if ! bash "$ROOT/contrib/install-deps.sh"; then
                log "dependency installation failed"
                echo "0 passed, 1 failed"
                exit 1
        fi
        log "installing the test tools from npm"
        if ! NANOLET_TEST_NPM_MODULES=$(bash "$ROOT/tests/install-test-npm.sh"); then
                log "npm installation failed"
                echo "0 passed, 1 failed"
                exit 1
        fi
        export NANOLET_TEST_NPM_MODULES
fi

total_pass=0
total_fail=0
total_skip=0
t_suite=$SECONDS

# The guest's image and .deb, built in the background (their own logs) so
# they overlap the trees' tests; guest_phase waits for them.
guest_dir=$ROOT/$prefix-guest
guest_prep_pid=
guest_skip_reason=
if [[ ${NANOLET_SKIP_GUEST:-0} == 1 ]]; then
        guest_skip_reason="NANOLET_SKIP_GUEST=1"
elif [[ $(id -u) -ne 0 ]]; then
        guest_skip_reason="not root"
elif ! command -v qemu-system-x86_64 >/dev/null || ! command -v mmdebstrap >/dev/null; then
        guest_skip_reason="qemu-system-x86_64 or mmdebstrap missing (contrib/install-deps.sh)"
else
        rm -rf "$guest_dir"
        mkdir -p "$guest_dir/deb"
        log "guest: building the image and the .deb in the background (logs in $guest_dir)"
        # Its own process group (setsid), so an interrupted suite stops all of it.
        setsid bash "$ROOT/tests/guest/prepare.sh" "$guest_dir" &
        guest_prep_pid=$!
fi
stop_guest_prep() {
        if [[ -n $guest_prep_pid ]] && kill -0 "$guest_prep_pid" 2>/dev/null; then
                kill -- "-$guest_prep_pid" 2>/dev/null || true
        fi
}
trap stop_guest_prep EXIT

# count_results DIR: adds DIR/meson-logs/testlog.json to the totals.
count_results() {
        local json=$1/meson-logs/testlog.json counts
        if [[ ! -s $json ]]; then
                log "$1: no test log; counting the tree as one failure"
                total_fail=$((total_fail + 1))
                return
        fi
        counts=$(python3 - "$json" <<'PY'
import json, sys
ok = fail = skip = 0
with open(sys.argv[1]) as f:
    for line in f:
        line = line.strip()
        if not line:
            continue
        r = json.loads(line).get("result", "")
        if r in ("OK", "EXPECTEDFAIL"):
            ok += 1
        elif r == "SKIP":
            skip += 1
        else:  # FAIL, TIMEOUT, ERROR, UNEXPECTEDPASS, INTERRUPT, ...
            fail += 1
print(ok, fail, skip)
PY
) || { log "$1: unreadable test log"; total_fail=$((total_fail + 1)); return; }
        read -r p f s <<<"$counts"
        log "$1: $p passed, $f failed, $s skipped"
        total_pass=$((total_pass + p))
        total_fail=$((total_fail + f))
        total_skip=$((total_skip + s))
}

# run_tree DIR [meson options...]: configure (or reconfigure), build, test.
run_tree() {
        local dir=$1
        shift
        log "configuring $dir"
        local setup=(meson setup)
        [[ -f $dir/build.ninja ]] && setup+=(--reconfigure)
        local setup_log
        setup_log=$(mktemp)
        if ! "${setup[@]}" "$dir" -Dtests=enabled "$@" >"$setup_log" 2>&1; then
                cat "$setup_log" >&2
                rm -f "$setup_log"
                log "$dir: configuration failed"
                total_fail=$((total_fail + 1))
                return
        fi
        rm -f "$setup_log"
        log "building $dir"
        if ! ninja -C "$dir"; then
                log "$dir: build failed"
                total_fail=$((total_fail + 1))
                return
        fi
        rm -f "$dir/meson-logs/testlog.json"
        log "testing $dir"
        # meson test exits non-zero on failures; the log is the source of truth.
        # shellcheck disable=SC2086
        meson test -C "$dir" --print-errorlogs ${MESON_TEST_ARGS:-} "${test_args[@]}" || true
        count_results "$dir"
}

# build_only DIR [meson options...]: configure and build a tree without
# running its tests, counted as one test. The clang tree is here because
# clang refuses a goto that jumps past a _cleanup_ variable (gcc accepts it
# and frees garbage on that path), so CI catches what the gcc trees cannot.
build_only() {
        local dir=$1 out
        shift
        log "building $dir (build check only)"
        out=$(mktemp)
        local setup=(meson setup)
        [[ -f $dir/build.ninja ]] && setup+=(--reconfigure)
        if "${setup[@]}" "$dir" -Dtests=enabled "$@" >"$out" 2>&1 && ninja -C "$dir" >>"$out" 2>&1; then
                log "$dir: built"
                total_pass=$((total_pass + 1))
        else
                grep -E 'error|FAILED' "$out" | head -40 >&2
                log "$dir: build failed"
                total_fail=$((total_fail + 1))
        fi
        rm -f "$out"
}

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1

test_args=()
CC=${CC:-gcc} run_tree "$prefix"

if command -v clang >/dev/null 2>&1; then
        CC=clang build_only "$prefix-clang"
fi

if [[ ${NANOLET_SKIP_ASAN:-0} != 1 ]]; then
        # Sanitizers make tests slower; give them more time.
        test_args=(--timeout-multiplier 3)
        CC=${CC:-gcc} run_tree "$prefix-asan" \
                -Db_sanitize=address,undefined -Db_lundef=false -Doptimization=1
fi

# guest_phase: boots the Debian guest and counts its checks.
guest_phase() {
        local t0=$SECONDS line p f
        if [[ -n $guest_skip_reason ]]; then
                log "guest: skipped ($guest_skip_reason)"
                total_skip=$((total_skip + 1))
                return
        fi
        log "guest: waiting for the image and the .deb"
        if ! wait "$guest_prep_pid"; then
                guest_prep_pid=
                tail -20 "$guest_dir/build-image.log" "$guest_dir/build-deb.log" >&2
                log "guest: building the image or the .deb failed; counting one failure"
                total_fail=$((total_fail + 1))
                return
        fi
        guest_prep_pid=
        log "guest: prepared in the background ($(paste -sd, "$guest_dir/prep-times" | sed 's/,/, /g')), waited $((SECONDS - t0)) s for it"
        t0=$SECONDS
        line=$(bash "$ROOT/tests/guest/run-guest.sh" --deb "$(ls "$guest_dir"/deb/nanolet_*.deb | head -n 1)" \
                --out "$guest_dir/logs" ${NANOLET_GUEST_TESTS:+--tests "$NANOLET_GUEST_TESTS"} | tail -n 1)
        if [[ $line =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
                p=${BASH_REMATCH[1]}
                f=${BASH_REMATCH[2]}
        else
                p=0
                f=1
        fi
        # A guest that ran no check at all did not really run.
        if [[ $p -eq 0 && $f -eq 0 ]]; then
                f=1
        fi
        log "guest: $p passed, $f failed (checks in the guest), boot and tests took $((SECONDS - t0)) s; logs in $guest_dir/logs"
        total_pass=$((total_pass + p))
        total_fail=$((total_fail + f))
}
guest_phase
log "whole suite: $((SECONDS - t_suite)) s"

if [[ $strict == 1 && $total_skip -gt 0 ]]; then
        log "strict mode: $total_skip skipped test(s) count as failed"
        total_fail=$((total_fail + total_skip))
        total_skip=0
fi

summary="$total_pass passed, $total_fail failed"
[[ $total_skip -gt 0 ]] && summary+=", $total_skip skipped"
echo "$summary"
[[ $total_fail -eq 0 ]]
