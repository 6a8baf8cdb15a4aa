#!/usr/bin/env bash
# Boots the Debian 12 guest (build-image.sh) under QEMU and runs the
# in-guest tests (in-guest/t-*.sh, contract in in-guest/lib.sh):
#   tests/guest/run-guest.sh [--deb FILE] [--tests GLOB[,GLOB...]] [--out DIR]
#                            [--timeout SECONDS]
# --deb      the nanolet package to install in the guest (default: built
#            now with contrib/build-deb.sh, DEB_BUILD_OPTIONS="nocheck parallel=2")
# --tests    only the in-guest files matching these globs (e.g. t-10*)
# --out      where the guest's logs are copied (default: a new
#            /tmp/nanolet-guest.XXXXXX, printed)
# --timeout  a hard limit for the whole guest run, in seconds (default:
#            none; each stage has its own limit, see the wait loop below)
# Environment: NANOLET_GUEST_CACHE (build-image.sh), NANOLET_GUEST_ACCEL=kvm
# to try KVM (default TCG: this project's CI hosts' nested KVM does not boot
# a stock Debian kernel), NANOLET_GUEST_MEM (MiB, default 2048),
# NANOLET_GUEST_SMP (default 2), NANOLET_GUEST_BOOT_TIMEOUT (seconds from
# power-on or reboot to the test runner, default 600),
# NANOLET_GUEST_STALL_TIMEOUT (seconds the runner, once up, may go without
# a line on the console or a new check, default 1200).
#
# The guest gets the .deb, the busybox test image and the test scripts
# through a 9p share, has no route out (user networking with restrict=on),
# may reboot itself any number of times (each boot is a new QEMU process on
# the same disk, a throw-away copy of the cached image), and powers itself
# off when done. QEMU is killed on every exit path of this script. The last
# line of output is the guest's "N passed, N failed", or "0 passed, 1
# failed" when the guest produced no result.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../.." && pwd)
deb= tests= out= timeout=0
while [[ $# -gt 0 ]]; do
        case $1 in
        --deb) deb=$2; shift 2 ;;
        --tests) tests=$2; shift 2 ;;
        --out) out=$2; shift 2 ;;
        --timeout) timeout=$2; shift 2 ;;
        *) echo "usage: $0 [--deb FILE] [--tests GLOB,...] [--out DIR] [--timeout S]" >&2; exit 2 ;;
        esac
done

log() { printf 'guest: %s\n' "$*" >&2; }
no_result() {
        log "$*"
        echo "0 passed, 1 failed"
        exit 1
}

[[ $(id -u) -eq 0 ]] || no_result "must run as root (9p share of root-owned files, image cache)"
command -v qemu-system-x86_64 >/dev/null || no_result "qemu-system-x86_64 missing (contrib/install-deps.sh)"

t_start=$SECONDS
image=$("$here/build-image.sh") || no_result "the guest image could not be built"
log "image: $image (ready after $((SECONDS - t_start)) s)"

work=$(mktemp -d /tmp/nanolet-guest-run.XXXXXX)
[[ -n $out ]] || out=$(mktemp -d /tmp/nanolet-guest.XXXXXX)
mkdir -p "$out"
qemu_pid=
finish() {
        local rc=$?
        if [[ -n $qemu_pid ]] && kill -0 "$qemu_pid" 2>/dev/null; then
                kill -TERM "$qemu_pid" 2>/dev/null || true
                for _ in 1 2 3 4 5; do
                        kill -0 "$qemu_pid" 2>/dev/null || break
                        sleep 1
                done
                kill -KILL "$qemu_pid" 2>/dev/null || true
                wait "$qemu_pid" 2>/dev/null || true
        fi
        if [[ -d $work/share/out ]]; then
                cp -a "$work/share/out/." "$out/" 2>/dev/null || true
        fi
        rm -rf "$work"
        exit "$rc"
}
trap finish EXIT
trap 'log "interrupted"; exit 130' INT
trap 'log "terminated"; exit 143' TERM

share=$work/share
mkdir -p "$share/deb" "$share/images" "$share/out" "$share/in-guest"
cp -a "$here/in-guest/." "$share/in-guest/"
# kubeadm's kubelet files as kubeadm writes them, and nanolet's drop-in for
# them (in-guest/kubeadm-pods.sh).
mkdir -p "$share/kubeadm"
cp "$src/tests/kubeadm/config.yaml" "$src/tests/kubeadm/kubeadm-flags.env" \
        "$src/contrib/kubeadm/10-kubeadm.conf" "$share/kubeadm/"
if [[ -n $tests ]]; then
        tr ',' '\n' <<<"$tests" >"$share/in-guest/only"
fi
if [[ -z $deb ]]; then
        log "building the .deb"
        DEB_BUILD_OPTIONS="nocheck parallel=2" "$src/contrib/build-deb.sh" "$work/deb-build" \
                >"$out/build-deb.log" 2>&1 || no_result "contrib/build-deb.sh failed (log: $out/build-deb.log)"
        deb=$(ls "$work"/deb-build/nanolet_*.deb | head -n 1)
fi
[[ -f $deb ]] || no_result "no .deb at $deb"
cp "$deb" "$share/deb/"
"$src/tests/make-test-image.sh" "$work/images" >/dev/null || no_result "tests/make-test-image.sh failed"
cp "$work/images/nanolet-test.tar" "$share/images/"

accel=tcg,thread=multi
cpu=max
if [[ ${NANOLET_GUEST_ACCEL:-tcg} == kvm ]]; then
        accel=kvm
        cpu=host
fi
log "accelerator: ${accel%%,*} (${NANOLET_GUEST_SMP:-2} CPUs, ${NANOLET_GUEST_MEM:-2048} MiB)"

serial=$out/serial.log
: >"$serial"
# Each boot is a QEMU process of its own: -no-reboot ends the process at a
# guest reboot, and the loop below starts the next boot on the same disk, a
# sparse copy of the cached image that lives as long as this run. QEMU 7.2's
# multi-threaded TCG, which restarted the machine in place, once died of a
# SIGSEGV at a guest address (the HPET's) while the rebooted kernel probed
# its devices, under a busy host; a fresh process has no state from the boot
# before. The serial console file is appended to, so it holds every boot.
# no_timer_check: early in boot the kernel checks that the timer interrupt
# ticks within a few milliseconds of its own delay loop. Under TCG on a
# loaded host the vCPU can miss that window, and the kernel then panics
# with "IO-APIC + timer doesn't work!" before userspace (seen beside
# stress-ng --cpu 4). The timer works; only the check is unfit for TCG.
cp --sparse=always "$image/disk.img" "$work/disk.img" || no_result "cannot copy the guest image to $work"
boots=0
qemu_start() {
        boots=$((boots + 1))
        qemu-system-x86_64 \
                -name nanolet-guest \
                -machine q35 -accel "$accel" -cpu "$cpu" \
                -smp "${NANOLET_GUEST_SMP:-2}" -m "${NANOLET_GUEST_MEM:-2048}" \
                -nodefaults -no-user-config -display none -vga none -no-reboot \
                -kernel "$image/vmlinuz" -initrd "$image/initrd.img" \
                -append "root=/dev/vda rw console=ttyS0 panic=-1 no_timer_check net.ifnames=0 nanolet.guest=run systemd.show_status=error" \
                -drive "file=$work/disk.img,format=raw,if=virtio,cache=unsafe" \
                -virtfs "local,path=$share,mount_tag=share,security_model=none,id=share" \
                -nic user,restrict=on,model=virtio-net-pci \
                -device virtio-rng-pci \
                -chardev "file,id=serial0,path=$serial,append=on" -serial chardev:serial0 \
                -monitor none \
                </dev/null >>"$out/qemu.log" 2>&1 &
        qemu_pid=$!
}
qemu_start
t_boot=$SECONDS

# progress: the runner's new lines on the serial console, to stderr. It
# also tracks whether the guest is booting (at the start and after a
# reboot, until the runner is up), which has a limit of its own, so a
# guest that does not boot fails in minutes;
# whether the runner announced a reboot, the only end of a QEMU process
# after which the next boot is started; and when the runner last showed
# progress, a line or a new check.
seen=0
checks_seen=0
booting_since=$SECONDS
reboot_asked=
last_progress=$SECONDS
progress() {
        local n lines checks
        # The kernel's console messages may share a line with the runner's;
        # the console ends lines with CR LF, and may carry any byte.
        n=$(grep -ac 'nanolet-guest: ' "$serial" 2>/dev/null || true)
        if ((n > seen)); then
                lines=$(grep -ao 'nanolet-guest: .*' "$serial" | tr -d '\r' | sed -n "$((seen + 1)),${n}p")
                sed "s/^nanolet-guest: /guest [$((SECONDS - t_boot)) s] /" <<<"$lines" >&2
                seen=$n
                last_progress=$SECONDS
                if grep -q 'runner up' <<<"$lines"; then
                        booting_since=
                        reboot_asked=
                fi
                if grep -q 'rebooting$' <<<"$lines"; then
                        booting_since=$SECONDS
                        reboot_asked=1
                fi
        fi
        checks=$(grep -c '' "$share/out/checks.txt" 2>/dev/null || true)
        if ((${checks:-0} > checks_seen)); then
                checks_seen=$checks
                last_progress=$SECONDS
        fi
}
boot_timeout=${NANOLET_GUEST_BOOT_TIMEOUT:-600}
# The runner prints a line when a test file's phase starts and when it
# ends, and stops a phase that records no new check for 1000 s
# (GUEST_PHASE_STALL_TIMEOUT in runner.sh); after a failed phase it saves
# the evidence and waits up to 300 s for the file's pods to go. So a runner
# that is alive is never silent much longer than 1000 s, however slow the
# host, and 1200 s of silence means the runner or the guest itself is
# stuck. A limit on the whole run instead would fail a slow host that still
# makes progress, and would have to grow with every test file added.
stall_timeout=${NANOLET_GUEST_STALL_TIMEOUT:-1200}

panicked() {
        if grep -aq 'Kernel panic' "$serial"; then
                grep -aA20 'Kernel panic' "$serial" | head -30 >&2
                no_result "the guest kernel panicked (logs: $out)"
        fi
}
# Wait for the guest to power off, starting its next boot after each
# reboot the runner announced. A kernel panic (panic=-1) also ends a
# process; it ends the run.
while :; do
        while kill -0 "$qemu_pid" 2>/dev/null; do
                progress
                panicked
                if [[ -n $booting_since ]] && ((SECONDS - booting_since > boot_timeout)); then
                        log "the guest did not boot to the test runner within $boot_timeout s"
                        tail -30 "$serial" >&2
                        no_result "guest did not boot (accelerator ${accel%%,*}; logs: $out)"
                fi
                if [[ -z $booting_since ]] && ((SECONDS - last_progress > stall_timeout)); then
                        log "no line from the runner and no new check for $stall_timeout s; stopping the guest"
                        tail -30 "$serial" >&2
                        no_result "guest stalled (logs: $out)"
                fi
                if ((timeout > 0 && SECONDS - t_boot > timeout)); then
                        log "no result within $timeout s; stopping the guest"
                        tail -30 "$serial" >&2
                        no_result "guest timed out (logs: $out)"
                fi
                sleep 2
        done
        qemu_status=0
        wait "$qemu_pid" || qemu_status=$?
        qemu_pid=
        progress
        panicked
        if ((qemu_status > 128)); then
                tail -20 "$serial" >&2
                no_result "QEMU itself died of signal $((qemu_status - 128)) in boot $boots, not the guest (logs: $out)"
        fi
        # A machine that reset on its own (a triple fault) ends the run.
        if [[ ! -s $share/out/result && -n $reboot_asked ]]; then
                log "boot $boots ended with the reboot the runner asked for; starting boot $((boots + 1))"
                qemu_start
                continue
        fi
        break
done
log "guest powered off after $((SECONDS - t_boot)) s, $boots boot(s) (whole run $((SECONDS - t_start)) s)"

result=$share/out/result
if [[ ! -s $result ]]; then
        tail -40 "$serial" >&2
        if [[ -s $out/qemu.log ]]; then
                log "QEMU said:"
                tail -10 "$out/qemu.log" >&2
        fi
        no_result "the guest powered off without a result (logs: $out)"
fi
if grep -q '^FAIL ' "$share/out/checks.txt" 2>/dev/null; then
        log "failed checks:"
        grep '^FAIL ' "$share/out/checks.txt" >&2
fi
log "logs: $out"
cat "$result"
grep -q ' 0 failed$' "$result"
