"""A full run: the machine's description, then every measurement in turn
(each enabled by its knob), the raw results and the table."""
import datetime
import json
import os
import platform
import shutil
import signal
import sys
import traceback

from . import (coldstart, kubeadm, knobs, latency, parfloor, podman, profile, report, rescan,
               restart, scale, sweep)
from .cleanup import cleanup
from .common import RUNC, Interrupted, log, on_signal, out
from .harness import Harness


def machine(h):
    def ver(cmd):
        try:
            return out(cmd, check=False).splitlines()[0].strip()
        except Exception:
            return None
    h.results["machine"] = {
        "nproc": os.cpu_count(), "kernel": platform.release(),
        "cpu": next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo")
                     if l.startswith("model name")), None),
        "mem_total": next((l.split(":", 1)[1].strip() for l in open("/proc/meminfo")
                           if l.startswith("MemTotal")), None),
        "loadavg_at_start": open("/proc/loadavg").read().split()[:3],
        "runc": ver([RUNC, "--version"]), "conmon": ver(["conmon", "--version"]),
        "podman": None if knobs.get("SKIP_PODMAN") else ver(["podman", "--version"]),
        "nanolet": ver([h.nanolet, "version"]),
        "nanolet_commit": ver(["git", "-C", h.repo, "rev-parse", "--short", "HEAD"]),
    }


def recorded(h, what, fn, on_error):
    """fn(h); a failure is logged and on_error(h, e) records it, so that the
    run goes on; an interruption passes."""
    try:
        fn(h)
    except Interrupted:
        raise
    except Exception as e:  # noqa: BLE001 — recorded
        log(f"{what} failed: {e!r}")
        on_error(h, e)


def agent_phase(h, what, fn, on_error):
    """A phase with an agent of its own, torn down afterwards."""
    h.start_agent()
    recorded(h, what, fn, on_error)
    h.teardown_pods()


def latency_phase(h):
    # LATENCY_LOG_LEVEL=7: the latency agent logs each start step by step
    # (the timeline in docs/BENCHMARKS.md, bench/start-timeline.py reads
    # it; the logging costs time, so not for the figures themselves).
    lvl = knobs.get("LATENCY_LOG_LEVEL")
    h.start_agent(env=dict(os.environ, NANOLET_LOG_LEVEL=lvl) if lvl else None)
    latency.agent_idle_zero(h)
    latency.latencies(h)
    keep = knobs.get("KEEP_LATENCY_LOG")
    if keep:
        shutil.copyfile(f"{h.w}/agent.log", keep)


def podman_phase(h):
    h.skip_podman = knobs.get("SKIP_PODMAN")
    if h.skip_podman:
        return
    try:
        podman.setup(h)
    except RuntimeError as e:
        log(f"podman setup failed, no podman columns: {e}")
        h.results["podman_error"] = str(e)
        h.skip_podman = True


def run_all(h):
    machine(h)
    h.setup()
    podman_phase(h)
    latency_phase(h)
    if not knobs.get("SKIP_SCALE"):
        names = scale.scale(h)
        if not knobs.get("SKIP_RESTART"):
            restart.restart(h, names)
    h.teardown_pods()
    if not knobs.get("SKIP_PARFLOOR"):
        parfloor.parfloor(h)
        h.teardown_pods()
    if not knobs.get("SKIP_COLDSTART"):
        agent_phase(h, "cold start", coldstart.coldstart,
                    lambda h, e: h.results.update(coldstart_error=repr(e)))
    if not knobs.get("SKIP_KUBEADM"):
        agent_phase(h, "kubeadm", kubeadm.kubeadm,
                    lambda h, e: h.results.update(kubeadm={"skipped": f"failed: {e}"}))
    if knobs.get("SCALE_SWEEP"):
        def sweep_failed(h, e):
            h.results["sweep_error"] = repr(e)
            h.teardown_pods()
        recorded(h, "sweep", sweep.sweep, sweep_failed)
    if knobs.get("PROFILE"):
        recorded(h, "profile", profile.profile, lambda h, e: None)
        h.teardown_pods()
    if not knobs.get("SKIP_RESCAN"):
        rescan.rescan(h)
    h.results["machine"]["loadavg_at_end"] = open("/proc/loadavg").read().split()[:3]
    h.results["finished"] = datetime.datetime.now().isoformat(timespec="seconds")


def save(h, repo, rc):
    """The raw results (also of a run that failed after its latencies) and,
    for a complete run, the table."""
    os.makedirs(f"{repo}/bench/results", exist_ok=True)
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    path = f"{repo}/bench/results/{stamp}.json"
    h.results["complete"] = rc == 0
    try:
        table = report.report(h.results, path) if rc == 0 else ""
    except Exception as e:  # noqa: BLE001 — the raw file is written anyway
        log(f"report failed: {e!r}")
        table = ""
    h.results["table_markdown"] = table
    with open(path, "w") as f:
        json.dump(h.results, f, indent=1)


def finish(h, rc):
    """Stops what the run left running and removes everything it made."""
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if h.watcher:
        h.watcher.close()
    if h.agent and h.agent.poll() is None and rc != 0:
        h.agent.kill()
    if h.w:
        log("cleaning up")
        cleanup(h.w)


def main(repo, nanolet, rescan_bin):
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, on_signal)
    h = Harness(repo, nanolet, rescan_bin)
    rc = 0
    try:
        run_all(h)
    except (Interrupted, KeyboardInterrupt) as e:
        log(f"interrupted ({e}); cleaning up")
        rc = 130
    except Exception as e:
        log(f"failed: {e!r}")
        traceback.print_exc()
        if h.w and os.path.exists(f"{h.w}/agent.log"):
            shutil.copy(f"{h.w}/agent.log", "/tmp/nanolet-bench-agent.log")
            log("agent log kept in /tmp/nanolet-bench-agent.log")
        rc = 1
    finally:
        finish(h, rc)
    if rc == 0 or h.results["latency"]:
        save(h, repo, rc)
    return rc


def cli(argv):
    if len(argv) == 2 and argv[1] == "--print-knobs-md":
        sys.stdout.write(knobs.markdown())
        return 0
    if len(argv) == 3 and argv[1] == "--cleanup":
        cleanup(argv[2])
        return 0
    if len(argv) != 4:
        print("usage: bench.py REPO_ROOT NANOLET BENCH_RESCAN | --cleanup WORKDIR | --print-knobs-md",
              file=sys.stderr)
        return 2
    return main(*argv[1:4])
