# Library of the in-guest tests (sourced by runner.sh and every t-*.sh).
#
# Contract for test files
# -----------------------
# - A test is tests/guest/in-guest/t-NN-name.sh (bash). runner.sh runs the
#   files in the order of their names, each as root in a fresh bash, with
#   this library already sourced by the file itself:
#       . "$(dirname "$0")/lib.sh"
#   It runs inside a booted Debian 12 guest (systemd PID 1, cgroup v2,
#   AppArmor) with no network route out. Files are independent: a file
#   must not rely on what an earlier file left (pods, config), and should
#   leave the agent as it found it where that is cheap; use
#   nanolet_install to get the agent installed and running.
# - Checks: `pass DESC`, `fail DESC`, `check DESC CMD...` (passes when CMD
#   exits 0, otherwise fails with CMD's output), `check_eq DESC GOT WANT`,
#   `wait_until SECONDS DESC CMD...` (polls CMD each second; passes or
#   fails once). Every check is one line in $GUEST_OUT/checks.txt;
#   the run's closing line "N passed, N failed" counts those lines. A file
#   that exits non-zero (other than a reboot request) adds one failure.
# - Phases and reboots: $GUEST_PHASE is 1 on a file's first run. A file
#   that needs a real reboot calls `guest_reboot N`: the runner records
#   that this file continues with phase N, reboots the guest with
#   `systemctl reboot`, and on the next boot runs the same file again with
#   GUEST_PHASE=N. Values that must survive the reboot go through
#   `guest_save KEY VALUE` / `guest_load KEY` (on the guest's disk).
#   A reboot that no file asked for counts as a failure of the file that
#   was running.
# - Output: a file's stdout and stderr go to $GUEST_OUT/<file>.log (one
#   log per phase: <file>.phase<N>.log); `note MSG` adds a line to it.
#   Put extra evidence (journal excerpts, agent state) under
#   $GUEST_OUT/<file>/ with `keep NAME < data`. $GUEST_OUT is on the
#   host's share, so it survives a crashed guest; the host copies it back.
#   `say MSG` also prints MSG on the serial console, in the host's output.
# - Limits follow progress, not the clock: the runner stops a phase that
#   records no new check for GUEST_PHASE_STALL_TIMEOUT (1000 s; a single
#   wait_until may take up to 900 s), and the host stops a guest whose
#   runner shows no progress (no line, no new check) for 1200 s.
# - Fixtures on the share: $GUEST_SHARE/deb/nanolet_*.deb (the package
#   built from this tree) and $GUEST_SHARE/images/nanolet-test.tar (the
#   busybox test image, docker.io/library/nanolet-test:latest).

GUEST_SHARE=${GUEST_SHARE:-/mnt/share}
GUEST_OUT=${GUEST_OUT:-$GUEST_SHARE/out}
GUEST_STATE=${GUEST_STATE:-/var/lib/nanolet-guest}
GUEST_PHASE=${GUEST_PHASE:-1}
GUEST_FILE=${GUEST_FILE:-$(basename "$0" .sh)}
export GUEST_SHARE GUEST_OUT GUEST_STATE GUEST_PHASE GUEST_FILE

# The exit status that asks runner.sh for a reboot.
GUEST_REBOOT_STATUS=100

_record() {
        printf '%s %s: %s\n' "$1" "$GUEST_FILE" "$2" >>"$GUEST_OUT/checks.txt"
        sync -f "$GUEST_OUT/checks.txt" 2>/dev/null || true
}

pass() {
        echo "ok: $*"
        _record PASS "$*"
}

fail() {
        echo "FAIL: $*" >&2
        _record FAIL "$*"
}

note() { echo "-- $*"; }

# say MSG: a line on the serial console, which run-guest.sh shows as the
# run's progress (timings worth seeing without opening the logs).
say() {
        echo "-- $*"
        echo "nanolet-guest: $GUEST_FILE: $*" >/dev/ttyS0 2>/dev/null || true
}

# check DESC CMD...: CMD's exit status decides; its output is shown on failure.
check() {
        local desc=$1 out
        shift
        if out=$("$@" 2>&1); then
                pass "$desc"
        else
                fail "$desc (command: $*; output: ${out:0:2000})"
        fi
}

check_eq() {
        if [[ "$2" == "$3" ]]; then
                pass "$1"
        else
                fail "$1: got \"$2\", expected \"$3\""
        fi
}

# wait_until SECONDS DESC CMD...: polls CMD once a second.
wait_until() {
        local limit=$1 desc=$2 deadline out
        shift 2
        deadline=$((SECONDS + limit))
        while ! out=$("$@" 2>&1); do
                if ((SECONDS >= deadline)); then
                        fail "$desc (not within $limit s; last output: ${out:0:2000})"
                        return 1
                fi
                sleep 1
        done
        pass "$desc"
}

# keep NAME: stdin -> $GUEST_OUT/<file>/NAME, evidence for a failure.
keep() {
        mkdir -p "$GUEST_OUT/$GUEST_FILE"
        cat >"$GUEST_OUT/$GUEST_FILE/$1"
}

guest_save() {
        mkdir -p "$GUEST_STATE/kv"
        printf '%s\n' "$2" >"$GUEST_STATE/kv/$GUEST_FILE.$1"
        sync
}

guest_load() {
        cat "$GUEST_STATE/kv/$GUEST_FILE.$1" 2>/dev/null
}

# guest_reboot N: reboot the guest and run this file again with phase N.
guest_reboot() {
        printf '%s\n' "$1" >"$GUEST_STATE/next-phase"
        sync
        exit "$GUEST_REBOOT_STATUS"
}

# Seconds since the kernel started, for timing boots.
uptime_s() { cut -d' ' -f1 /proc/uptime; }

# --- nanolet helpers ----------------------------------------------------------

NANOLET_MANIFESTS=/etc/kubernetes/manifests

# nanolet_install: the package from the share installed (dpkg -i, offline)
# and the service active. Idempotent, so a file can run alone.
nanolet_install() {
        local deb
        if ! dpkg-query -W -f='${Status}' nanolet 2>/dev/null | grep -q 'install ok installed'; then
                deb=$(ls "$GUEST_SHARE"/deb/nanolet_*.deb 2>/dev/null | head -n 1)
                [[ -n $deb ]] || { fail "no nanolet .deb on the share"; return 1; }
                dpkg -i "$deb" >"$GUEST_OUT/$GUEST_FILE.dpkg.log" 2>&1 ||
                        { fail "dpkg -i $(basename "$deb") (log: $GUEST_FILE.dpkg.log)"; return 1; }
        fi
        mkdir -p "$NANOLET_MANIFESTS"
        systemctl start nanolet
}

# leftover_pods_remove: the manifests a file left (it stopped at a failed
# check) removed, and their pods gone from the running agent; a failure
# of the file that left them when the agent does not remove them.
leftover_pods_remove() {
        local left
        left=$(find "$NANOLET_MANIFESTS" -maxdepth 1 -type f 2>/dev/null) || return 0
        [[ -n $left ]] || return 0
        say "removing the manifests it left: $(tr '\n' ' ' <<<"$left")"
        find "$NANOLET_MANIFESTS" -maxdepth 1 -type f -delete
        systemctl -q is-active nanolet || return 0
        wait_until 300 "the pods it left removed after it stopped" pods_count 0
}

# nanolet_load_test_image: the busybox test image in the agent's store.
nanolet_load_test_image() {
        nanolet image load "$GUEST_SHARE/images/nanolet-test.tar" >/dev/null
}

# sleep_pod NAME: a pod with one container sleeping for an hour.
sleep_pod() {
        cat <<YAML
apiVersion: v1
kind: Pod
metadata: {name: $1, namespace: default}
spec:
  terminationGracePeriodSeconds: 2
  containers:
  - {name: main, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
YAML
}

# put_manifest FILE: stdin -> a manifest, written as installers do.
put_manifest() {
        cat >"$NANOLET_MANIFESTS/.$1.tmp"
        mv "$NANOLET_MANIFESTS/.$1.tmp" "$NANOLET_MANIFESTS/$1"
}

# api_pods: the read-only API's /pods (the agent's own view).
api_pods() {
        curl -fsS --max-time 10 http://127.0.0.1:10255/pods
}

# pods_running N: exactly N pods, all Running with every container ready.
pods_running() {
        api_pods | jq -e --argjson n "$1" '
                [.items[] | select(.status.phase == "Running"
                        and ([.status.containerStatuses[]? | .ready] | all))] | length == $n'
}

# pods_count N: exactly N pods in /pods, whatever their phase.
pods_count() {
        api_pods | jq -e --argjson n "$1" '.items | length == $n'
}
