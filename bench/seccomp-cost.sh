#!/usr/bin/env bash
# What nanolet's RuntimeDefault seccomp profile costs `runc create`, and what
# rewrites of it would cost (docs/internals/design-decisions.md, "The
# seccomp profile stays the default").
#   sudo bash bench/seccomp-cost.sh
# Knobs (environment): RUNS=20 (create/start/delete cycles per variant)
#   COMPILE_ROUNDS=50 (in-process libseccomp replays per variant)
#   VARIANTS="none current ..." (default: all below)  BENCH_BUILD_DIR=build-bench
#   BENCH_NO_LOCK=1 (do not take /tmp/nanolet-itest.lock)
# Variants of the profile nanolet generates (bench-seccomp profile):
#   none          no linux.seccomp (the floor bench/run.sh compares with)
#   current       the profile as nanolet writes it
#   merged        every unconditional allow name in one syscalls[] entry   (same filter)
#   split         one syscalls[] entry per name                            (same filter)
#   reversed      the names in reverse order                               (same filter)
#   errno-implicit  no defaultErrnoRet (runc's default is EPERM too)       (same filter)
#   arch-order    SCMP_ARCH_X32 listed before SCMP_ARCH_X86                (same filter)
#   x86_64-only, no-x32, no-x86   fewer architectures: NOT equivalent (32-bit and x32
#                 processes get the bad-architecture action), measured only
#   no-args       the argument rules dropped: NOT equivalent (denies socket,
#                 personality, clone), measured only
# Per variant: the median wall time of `runc create` and of start+delete, the
# CPU time of the whole cycle (perf stat task-clock over RUNS cycles, runc init
# included), the in-process libseccomp time (rule adds, BPF export) and the
# BPF size, and whether libseccomp's pseudo filter code equals the current
# profile's. Leaves nothing behind (containers, bundles).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
BUILD=${BENCH_BUILD_DIR:-build-bench}
RUNS=${RUNS:-20}
COMPILE_ROUNDS=${COMPILE_ROUNDS:-50}
VARIANTS=${VARIANTS:-"none current merged split reversed errno-implicit arch-order x86_64-only no-x32 no-x86 no-args"}

if [ "$(id -u)" != 0 ]; then
        echo "bench/seccomp-cost.sh: needs root (runc)" >&2
        exit 1
fi
for t in runc busybox python3 perf; do
        command -v "$t" >/dev/null || { echo "bench/seccomp-cost.sh: $t is missing" >&2; exit 1; }
done
if [ ! -f "$BUILD/build.ninja" ]; then
        meson setup "$BUILD" --buildtype=debugoptimized -Db_sanitize=none -Dtests=disabled -Dman=disabled >/dev/null
fi
ninja -j2 -C "$BUILD" bench/bench-seccomp >/dev/null
BS=$ROOT/$BUILD/bench/bench-seccomp
# Timings only under the shared lock (other tests skew them); held to the end.
if [ "${BENCH_NO_LOCK:-0}" != 1 ]; then
        exec flock /tmp/nanolet-itest.lock env BENCH_NO_LOCK=1 bash "$ROOT/bench/seccomp-cost.sh"
fi

wd=$(mktemp -d /tmp/nanolet-seccomp-cost.XXXXXX)
ids=()
cleanup() {
        for id in "${ids[@]}"; do runc delete -f "$id" >/dev/null 2>&1 || true; done
        rm -rf "$wd"
}
trap cleanup EXIT INT TERM

# A static busybox rootfs; the container runs `true` (runc's own spec otherwise).
mkdir -p "$wd/rootfs/bin" "$wd/rootfs/proc" "$wd/rootfs/dev" "$wd/rootfs/sys"
cp "$(command -v busybox)" "$wd/rootfs/bin/busybox"
ln -s busybox "$wd/rootfs/bin/true"
(cd "$wd" && runc spec)
"$BS" profile >"$wd/profile.json"

python3 - "$wd" $VARIANTS <<'EOF'
import copy, json, os, sys
wd, variants = sys.argv[1], sys.argv[2:]
spec = json.load(open(f"{wd}/config.json"))
spec["process"]["terminal"] = False
spec["process"]["args"] = ["/bin/true"]
spec["root"]["path"] = f"{wd}/rootfs"
prof = json.load(open(f"{wd}/profile.json"))
plain = lambda s: "args" not in s and s["action"] == "SCMP_ACT_ALLOW"
def variant(v):
    p = copy.deepcopy(prof)
    if v == "none":
        return None
    if v == "merged":
        names = [n for s in p["syscalls"] if plain(s) for n in s["names"]]
        p["syscalls"] = [{"names": names, "action": "SCMP_ACT_ALLOW"}] + \
                        [s for s in p["syscalls"] if not plain(s)]
    elif v == "split":
        p["syscalls"] = [dict(s, names=[n]) for s in p["syscalls"] for n in s["names"]]
    elif v == "reversed":
        p["syscalls"] = [dict(s, names=s["names"][::-1]) for s in p["syscalls"][::-1]]
    elif v == "errno-implicit":
        del p["defaultErrnoRet"]
    elif v == "arch-order":
        p["architectures"] = ["SCMP_ARCH_X86_64", "SCMP_ARCH_X32", "SCMP_ARCH_X86"]
    elif v == "x86_64-only":
        p["architectures"] = ["SCMP_ARCH_X86_64"]
    elif v == "no-x32":
        p["architectures"] = ["SCMP_ARCH_X86_64", "SCMP_ARCH_X86"]
    elif v == "no-x86":
        p["architectures"] = ["SCMP_ARCH_X86_64", "SCMP_ARCH_X32"]
    elif v == "no-args":
        p["syscalls"] = [s for s in p["syscalls"] if "args" not in s]
    elif v != "current":
        sys.exit(f"unknown variant {v}")
    return p
for v in variants:
    s = copy.deepcopy(spec)
    p = variant(v)
    if p is not None:
        s["linux"]["seccomp"] = p
    os.makedirs(f"{wd}/b-{v}")
    json.dump(s, open(f"{wd}/b-{v}/config.json", "w"))
EOF

# One create/start/delete cycle; prints "create_us rest_us".
cycle() {
        local b=$1 id=$2 t0 t1 t2
        t0=$(date +%s%N)
        runc create --bundle "$b" "$id" </dev/null >/dev/null
        t1=$(date +%s%N)
        runc start "$id"
        runc delete -f "$id"
        t2=$(date +%s%N)
        echo "$(((t1 - t0) / 1000)) $(((t2 - t1) / 1000))"
}
export -f cycle
for v in $VARIANTS; do ids+=("nanolet-scc-$$-$v" "nanolet-scc-$$-cpu-$v"); done

# Wall times: the variants interleaved, so drift hits them alike.
for i in $(seq "$RUNS"); do
        for v in $VARIANTS; do
                echo "$v $(cycle "$wd/b-$v" "nanolet-scc-$$-$v")"
        done
done >"$wd/wall.txt"
# CPU: every process of RUNS cycles, runc init included.
for v in $VARIANTS; do
        perf stat -x, -e task-clock -o "$wd/cpu-$v.txt" -- bash -c \
                "for i in \$(seq $RUNS); do cycle $wd/b-$v nanolet-scc-$$-cpu-$v >/dev/null; done"
done

for v in $VARIANTS; do
        if [ "$v" = none ]; then
                echo "{}" >"$wd/compile-$v.json"
                continue
        fi
        "$BS" compile "$wd/b-$v/config.json" "$COMPILE_ROUNDS" >"$wd/compile-$v.json"
        "$BS" pfc "$wd/b-$v/config.json" >"$wd/pfc-$v.txt"
done

python3 - "$wd" "$RUNS" $VARIANTS <<'EOF'
import json, statistics as st, sys
wd, runs, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
wall = {}
for line in open(f"{wd}/wall.txt"):
    v, c, r = line.split()
    wall.setdefault(v, []).append((int(c) / 1000, int(r) / 1000))
def cpu(v):
    for line in open(f"{wd}/cpu-{v}.txt"):
        f = line.split(",")
        if len(f) > 2 and f[2].startswith("task-clock"):
            return float(f[0]) / runs
    return float("nan")
ref = open(f"{wd}/pfc-current.txt").read() if "current" in variants else None
print(f"{'variant':16} {'create ms':>22} {'start+delete':>12} {'cycle CPU ms':>12} "
      f"{'rule add':>9} {'export':>8} {'BPF insns':>9}  same filter as current")
for v in variants:
    c = sorted(x[0] for x in wall[v])
    comp = json.load(open(f"{wd}/compile-{v}.json"))
    same = "-" if v == "none" or ref is None else \
        ("yes" if open(f"{wd}/pfc-{v}.txt").read() == ref else "NO")
    print(f"{v:16} {st.median(c):8.1f} ({c[0]:5.1f}-{c[-1]:5.1f}) "
          f"{st.median(x[1] for x in wall[v]):12.1f} {cpu(v):12.1f} "
          f"{comp.get('rule_add_ms', 0):9.2f} {comp.get('export_ms', 0):8.2f} "
          f"{comp.get('bpf_instructions', 0):9}  {same}")
EOF
