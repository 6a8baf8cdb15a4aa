"""The bench's environment knobs: the one list that bench.py, bench/run.sh
and docs/bench-knobs.md agree on. Code reads a knob only through get(),
which refuses a name not listed here; tests/check-bench-knobs.py fails the
style suite when the page differs from markdown() or when bench.py, this
package or run.sh read a variable the list does not name."""
import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Knob:
    name: str
    kind: str  # "int", "flag" (unset/0/no/false = off), "str", "list" (comma-separated)
    default: object  # the value when unset; a callable computes it
    doc_default: str  # the default as the page shows it
    reader: str  # "bench.py" or "run.sh"
    meaning: str


def _cpus2():
    return 2 * (os.cpu_count() or 1)


KNOBS = (
    # ---- what runs and how often
    Knob("RUNS", "int", 10, "10", "bench.py",
         "rounds of the single-pod latency columns (after one warm-up round)"),
    Knob("SCALE_PODS", "int", 100, "100", "bench.py",
         "pods dropped at once in the scale, parallel-floor, sweep and profile phases"),
    Knob("IDLE_SECONDS", "int", 60, "60", "bench.py",
         "how long the agent's CPU is measured with SCALE_PODS pods idle"),
    Knob("RESCAN_MANIFESTS", "int", 1000, "1000", "bench.py",
         "manifests in the directory-rescan measurement"),
    Knob("COLDSTART_PODS", "int", 20, "20", "bench.py",
         "pods running before the simulated reboot of the cold-start phase"),
    Knob("PROFILE", "int", 1, "1", "bench.py",
         "0 skips the profile phase (perf and a debug-logged agent, after the measurements)"),
    Knob("PROFILE_PODS", "int", 5, "5", "bench.py",
         "single pods the profile phase starts one by one before its many-pod drop"),
    Knob("SKIP_PODMAN", "flag", False, "0", "bench.py",
         "1: no podman columns (run.sh then does not install podman either)"),
    Knob("SKIP_CNI", "flag", False, "0", "bench.py",
         "1: no CNI bridge columns in the latency table"),
    Knob("SKIP_SCALE", "flag", False, "0", "bench.py",
         "1: no scale phase (and so no restart phase)"),
    Knob("SKIP_RESTART", "flag", False, "0", "bench.py",
         "1: no agent kill -9 and restart with the scale phase's pods"),
    Knob("SKIP_PARFLOOR", "flag", False, "0", "bench.py",
         "1: no measured parallel floor"),
    Knob("SKIP_COLDSTART", "flag", False, "0", "bench.py",
         "1: no cold start after a simulated reboot"),
    Knob("SKIP_KUBEADM", "flag", False, "0", "bench.py",
         "1: no kubeadm control-plane bootstrap"),
    Knob("SKIP_RESCAN", "flag", False, "0", "bench.py",
         "1: no directory-rescan measurement"),
    # ---- time limits
    Knob("BENCH_TIMEOUT", "int", 60, "60", "bench.py",
         "seconds one pod start may take before the run fails"),
    Knob("SCALE_TIMEOUT", "int", 300, "300", "bench.py",
         "seconds a many-pod start (or the restart's adoption) may take"),
    Knob("KUBEADM_TIMEOUT", "int", 120, "120", "bench.py",
         "seconds until the four kubeadm pods must be Ready"),
    # ---- the agent under test
    Knob("BENCH_NANOLET", "str", "", "BUILD/nanolet", "run.sh",
         "the nanolet binary measured, e.g. another commit's build for a before/after"),
    Knob("BENCH_AGENT_ARGS", "str", "", "(none)", "bench.py",
         "more `nanolet serve` flags, split at spaces (e.g. --seccomp-default=false)"),
    Knob("BENCH_MONITOR", "str", "", "(the agent's default)", "bench.py",
         "the agent runs with --container-monitor=VALUE (nanolet or conmon)"),
    # ---- the runtime queue sweep
    Knob("SCALE_SWEEP", "list", [], "(none)", "bench.py",
         "e.g. 1,2,4,8,auto: the SCALE_PODS drop again per --runtime-max-parallel value "
         "(auto: the agent's default)"),
    Knob("SWEEP_RUNS", "int", 2, "2", "bench.py",
         "interleaved rounds of SCALE_SWEEP"),
    # ---- the measured parallel floor
    Knob("PARFLOOR_RUNS", "int", 1, "1", "bench.py",
         "rounds of the parallel floor's variants (the order rotates each round)"),
    Knob("PARFLOOR_BOUND", "int", _cpus2, "2 × CPUs", "bench.py",
         "runc create+start at a time in the bounded variants (the agent's "
         "--runtime-max-parallel default)"),
    Knob("PARFLOOR_VARIANTS", "list", [], "(all)", "bench.py",
         "only these variants, e.g. bare/4,pod/4,nanolet, for a shorter lock hold"),
    Knob("PARFLOOR_PERF", "str", "", "(off)", "bench.py",
         "DIR: a system-wide `perf record -a -g` around the scale drop and each "
         "parallel-floor variant, data kept in DIR (bench/perf-by-process.py reads them; "
         "such a run's figures carry perf's overhead)"),
    # ---- logs kept for reading
    Knob("LATENCY_LOG_LEVEL", "str", "", "(the agent's default)", "bench.py",
         "7: the latency agent logs each start step by step (bench/start-timeline.py "
         "reads it; costs time, not for the figures)"),
    Knob("KEEP_LATENCY_LOG", "str", "", "(off)", "bench.py",
         "FILE: a copy of the latency phase's agent log"),
    Knob("RESTART_LOG_LEVEL", "str", "", "(the agent's default)", "bench.py",
         "7: the restarted agent logs its adoption step by step"),
    Knob("KEEP_AGENT_LOG", "str", "", "(off)", "bench.py",
         "FILE: a copy of the agent log after the restart phase"),
    Knob("KEEP_PROFILE_LOG", "str", "", "(off)", "bench.py",
         "FILE: a copy of the profile phase's debug log (its many-pod drops)"),
    # ---- run.sh
    Knob("BENCH_BUILD_DIR", "str", "build-bench", "build-bench", "run.sh",
         "the meson build directory run.sh sets up (debugoptimized, no sanitizer) and builds"),
    Knob("BENCH_NO_LOCK", "flag", False, "0", "run.sh",
         "1: do not take /tmp/nanolet-itest.lock (a machine of your own, or a caller "
         "holding it)"),
    Knob("BENCH_WORKDIR_FILE", "str", os.devnull, "(set by run.sh)", "bench.py",
         "where bench.py writes its work directory's path, for run.sh's cleanup trap"),
)

BY_NAME = {k.name: k for k in KNOBS}


def get(name):
    """The knob's value now, of its kind; a name not in KNOBS is a KeyError."""
    k = BY_NAME[name]
    raw = os.environ.get(name)
    if raw is None:
        return k.default() if callable(k.default) else k.default
    if k.kind == "int":
        return int(raw)
    if k.kind == "flag":
        return raw not in ("", "0", "no", "false")
    if k.kind == "list":
        return [v for v in raw.split(",") if v]
    return raw


def markdown():
    """docs/bench-knobs.md."""
    lines = [
        "# Benchmark knobs",
        "",
        "`bash bench/run.sh` (and `bench/bench.py`, which it runs) read these environment",
        "variables; [BENCHMARKS.md](BENCHMARKS.md) describes the measurements. A flag is on",
        "unless unset, empty, `0`, `no` or `false`. Example, a short run:",
        "`RUNS=3 SCALE_PODS=10 IDLE_SECONDS=5 RESCAN_MANIFESTS=100 bash bench/run.sh`.",
        "",
        "This page is generated from `bench/nanolet_bench/knobs.py`",
        "(`python3 bench/bench.py --print-knobs-md > docs/bench-knobs.md`); the style test",
        "`bench-knobs` fails when the two differ. The other scripts in `bench/` (`pull.sh`,",
        "`seccomp-cost.sh`, `monitor.sh`, `idle-cpu.py`, `idle-mem.sh`, the soak) list their own",
        "knobs in their headers.",
        "",
        "| knob | default | read by | meaning |",
        "|---|---|---|---|",
    ]
    for k in KNOBS:
        meaning = k.meaning.replace("|", "\\|")
        lines.append(f"| `{k.name}` | {k.doc_default} | {k.reader} | {meaning} |")
    return "\n".join(lines) + "\n"
