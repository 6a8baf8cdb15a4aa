# Shared helpers for integration tests: temporary dirs, a trap that always
# cleans up, root check with strict mode, and log polling.
set -euo pipefail

NANOLET=${NANOLET:?NANOLET must point to the nanolet binary}
TEST_NAME=$(basename "$0" .sh)
WORK=$(mktemp -d "/tmp/nanolet-${TEST_NAME}.XXXXXX")
chmod 0755 "$WORK"
PIDS=()
failures=0

cleanup() {
        local pid
        for pid in "${PIDS[@]:-}"; do
                [ -n "$pid" ] && kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
        done
        rm -rf "$WORK"
        print_failed_checks
}
trap cleanup EXIT

# skip REASON: the test cannot run here (exit 77, meson's "skipped"); in
# strict mode (CI) a skipped test is a failure.
skip() {
        echo "SKIP: $*"
        [ "${NANOLET_TEST_STRICT:-0}" = 1 ] && exit 1
        exit 77
}

require_root() {
        [ "$(id -u)" = 0 ] || skip "$TEST_NAME needs root"
}

FAILED_CHECKS=()
fail() {
        echo "FAIL: $*" >&2
        failures=$((failures + 1))
        FAILED_CHECKS+=("$*")
}

# The failed checks once more, after the cleanup's agent log: CI shows only
# the end of a test's output.
print_failed_checks() {
        [ "${#FAILED_CHECKS[@]}" -gt 0 ] || return 0
        echo "--- $TEST_NAME: failed checks:" >&2
        printf 'FAIL: %s\n' "${FAILED_CHECKS[@]}" >&2
}

ok() {
        echo "ok: $*"
}

# A wait's budget bounds a stuck test; it is never a speed the agent must
# reach (that is bench/'s business). A wait ends as soon as its condition
# holds, so no budget is below WAIT_MIN_S, which a loaded machine needs
# (a start under ASan beside other builds, a CNI plugin's fork and exec).
WAIT_MIN_S=30

# wait_for FILE PATTERN [COUNT] [TIMEOUT_S]: until FILE has COUNT lines
# matching PATTERN, for TIMEOUT_S (at least WAIT_MIN_S).
wait_for() {
        local file=$1 pattern=$2 count=${3:-1} timeout=${4:-$WAIT_MIN_S} i
        ((timeout >= WAIT_MIN_S)) || timeout=$WAIT_MIN_S
        for ((i = 0; i < timeout * 10; i++)); do
                if [ "$(grep -cE -- "$pattern" "$file" 2>/dev/null || true)" -ge "$count" ]; then
                        return 0
                fi
                sleep 0.1
        done
        echo "--- timed out waiting for $count x /$pattern/ in $file; log follows" >&2
        cat "$file" >&2 || true
        return 1
}

count_lines() {
        grep -cE -- "$2" "$1" 2>/dev/null || true
}

finish() {
        if [ "$failures" -gt 0 ]; then
                echo "$TEST_NAME: $failures check(s) failed"
                exit 1
        fi
        echo "$TEST_NAME: all checks passed"
        exit 0
}

# expect DESC FILE PATTERN [COUNT] [TIMEOUT_S]: a wait_for that records the outcome.
expect() {
        local desc=$1
        shift
        if wait_for "$@"; then ok "$desc"; else fail "$desc"; fi
}
