#!/usr/bin/env bash
# The in-guest test runner, started at every boot by the image's
# nanolet-guest.service (via /usr/local/sbin/nanolet-guest-boot). Runs the
# t-*.sh files next to it in name order (only those matching the globs in
# $GUEST_SHARE/in-guest/only, one a line, when that file exists), follows
# their reboot requests (lib.sh, "Phases and reboots"), and at the end
# writes the closing line "N passed, N failed" to $GUEST_OUT/result and the
# serial console, then powers the guest off.
#
# State on the guest's disk ($GUEST_STATE/runner): "FILE PHASE running"
# while a file runs, "FILE PHASE reboot" when it asked for a reboot.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GUEST_FILE=runner
. "$here/lib.sh"

console=/dev/ttyS0
say() { echo "nanolet-guest: $*" | tee -a "$GUEST_OUT/runner.log" >"$console"; }

checks_count() { grep -c '' "$GUEST_OUT/checks.txt" 2>/dev/null || true; }

# run_phase FILE PHASE LOG: one phase of a test file. A slow host slows every
# step, so the limit is on silence, not on the phase's length: the phase is
# stopped (exit 124) when checks.txt has had no new check for
# GUEST_PHASE_STALL_TIMEOUT seconds. That is longer than the longest single
# wait a file makes (900 s) and shorter than the host's stall limit, so a
# stalled phase fails alone and the files after it still run. `timeout` with
# no duration is only the process-group holder: a TERM to it reaches the
# whole phase, and KILL follows 10 s later.
run_phase() {
        local f=$1 phase=$2 log=$3 pid seen now last_progress=$SECONDS
        local limit=${GUEST_PHASE_STALL_TIMEOUT:-1000}
        GUEST_PHASE=$phase GUEST_FILE=${f%.sh} timeout -k 10 0 bash "$here/$f" >"$log" 2>&1 &
        pid=$!
        seen=$(checks_count)
        while kill -0 "$pid" 2>/dev/null; do
                sleep 2
                now=$(checks_count)
                if [[ $now != "$seen" ]]; then
                        seen=$now
                        last_progress=$SECONDS
                elif ((SECONDS - last_progress > limit)); then
                        say "$f phase $phase: no new check for $limit s; stopping it"
                        kill -TERM "$pid" 2>/dev/null
                        wait "$pid"
                        return 124
                fi
        done
        wait "$pid"
}

mkdir -p "$GUEST_OUT" "$GUEST_STATE"
boot=$(($(cat "$GUEST_STATE/boots" 2>/dev/null || echo 0) + 1))
echo "$boot" >"$GUEST_STATE/boots"
say "boot $boot: runner up $(uptime_s) s after kernel start (kernel $(uname -r), $(nproc) CPUs)"
# For the host's timing report and for debugging a slow boot.
systemd-analyze time >>"$GUEST_OUT/runner.log" 2>&1 || true

mapfile -t files < <(cd "$here" && ls t-[0-9]*.sh 2>/dev/null | sort)
if [[ -f $here/only ]]; then
        selected=()
        for f in "${files[@]}"; do
                while read -r glob; do
                        [[ -n $glob ]] || continue
                        # shellcheck disable=SC2053
                        if [[ $f == $glob || $f == $glob.sh ]]; then
                                selected+=("$f")
                                break
                        fi
                done <"$here/only"
        done
        files=("${selected[@]}")
fi

start_index=0
start_phase=1
if read -r sfile sphase sstate <"$GUEST_STATE/runner" 2>/dev/null; then
        for i in "${!files[@]}"; do
                [[ ${files[$i]} == "$sfile" ]] && start_index=$i
        done
        if [[ $sstate == reboot ]]; then
                start_phase=$sphase
                say "$sfile continues with phase $sphase after the reboot it asked for"
        else
                GUEST_FILE=${sfile%.sh} fail "the guest rebooted while phase $sphase ran (no reboot was asked for)"
                start_index=$((start_index + 1))
        fi
fi

for ((i = start_index; i < ${#files[@]}; i++)); do
        f=${files[$i]}
        phase=1
        ((i == start_index)) && phase=$start_phase
        name=${f%.sh}
        echo "$f $phase running" >"$GUEST_STATE/runner"
        rm -f "$GUEST_STATE/next-phase"
        sync
        say "$f phase $phase starting"
        t0=$SECONDS
        run_phase "$f" "$phase" "$GUEST_OUT/$name.phase$phase.log"
        rc=$?
        say "$f phase $phase finished in $((SECONDS - t0)) s (exit $rc)"
        if [[ $rc == "$GUEST_REBOOT_STATUS" && -s $GUEST_STATE/next-phase ]]; then
                echo "$f $(cat "$GUEST_STATE/next-phase") reboot" >"$GUEST_STATE/runner"
                sync
                say "$f asked for a reboot; rebooting"
                systemctl reboot
                exit 0
        fi
        if [[ $rc != 0 ]]; then
                GUEST_FILE=$name fail "$f phase $phase exited with status $rc (log: $name.phase$phase.log)"
                # Its evidence now, in case the guest does not reach the
                # boot journal's dump at the end (the host's stall limit).
                journalctl -u nanolet -b --no-pager >"$GUEST_OUT/$name.phase$phase.journal.txt" 2>&1
                api_pods >"$GUEST_OUT/$name.phase$phase.pods.json" 2>&1
                sync
                # A file that stopped early leaves its pods; the next one
                # must not start with them.
                GUEST_FILE=$name leftover_pods_remove
        fi
done

echo "done" >"$GUEST_STATE/runner"
passed=$(grep -c '^PASS ' "$GUEST_OUT/checks.txt" 2>/dev/null)
failed=$(grep -c '^FAIL ' "$GUEST_OUT/checks.txt" 2>/dev/null)
echo "${passed:-0} passed, ${failed:-0} failed" >"$GUEST_OUT/result.tmp"
mv "$GUEST_OUT/result.tmp" "$GUEST_OUT/result"
journalctl -b --no-pager >"$GUEST_OUT/journal-boot$boot.txt" 2>&1 || true
sync
say "result: $(cat "$GUEST_OUT/result")"
systemctl poweroff
