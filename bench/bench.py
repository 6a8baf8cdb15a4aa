#!/usr/bin/env python3
"""nanolet benchmarks (docs/BENCHMARKS.md; knobs: docs/bench-knobs.md). Run
through bench/run.sh, which builds, installs podman if missing and holds the
shared test lock. The measurements live in bench/nanolet_bench/, one module
each.

Every latency is taken the same way: the bench records CLOCK_MONOTONIC just
before the triggering action (rename of the manifest, `runc create`, `podman
kube play`) and the container's first command creates a file in a hostPath
directory the bench watches with inotify; a watcher thread stamps the event
when it arrives. The container is running when its own process has run.

Usage: bench.py REPO_ROOT NANOLET BENCH_RESCAN      (a full run)
       bench.py --cleanup WORKDIR                  (what the run.sh trap calls)
       bench.py --print-knobs-md                   (docs/bench-knobs.md)
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from nanolet_bench.runner import cli  # noqa: E402

if __name__ == "__main__":
    sys.exit(cli(sys.argv))
