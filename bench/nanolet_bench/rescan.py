"""The directory source's rescan: RESCAN_MANIFESTS manifests, CPU time of the
first scan, of a rescan with nothing changed and with every file touched
(bench/bench-rescan), and callgrind's instruction counts."""
import json
import os
import re
import subprocess

from . import knobs
from .common import log, out, run


def rescan(h):
    d = f"{h.w}/rescan"
    os.makedirs(d)
    n = knobs.get("RESCAN_MANIFESTS")
    for i in range(n):
        with open(f"{d}/pod-{i:04d}.yaml", "w") as f:
            f.write(h.manifest(f"rescan-{i:04d}", True))
    log(f"rescan: {n} manifests, in-process CPU time")
    res = json.loads(out([h.rescan_bin, d, "10"]))
    # Instructions: the VM may hide the PMU, callgrind counts anyway.
    for mode in ("unchanged", "touched"):
        cg = f"{h.w}/callgrind.{mode}"
        r = run(["valgrind", "--tool=callgrind", "--toggle-collect=dir_source_rescan",
                 f"--callgrind-out-file={cg}", h.rescan_bin, d, "1", mode],
                check=False, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        m = re.search(rb"Collected : (\d+)", r.stderr)
        res[f"callgrind_instructions_rescan_{mode}"] = int(m.group(1)) if m else None
        if m:
            top = out(["callgrind_annotate", "--inclusive=no", cg], check=False)
            res[f"callgrind_top_{mode}"] = [l.strip() for l in top.splitlines()
                                            if re.match(r"\s*[\d,]+ \(", l)][:12]
    h.results["rescan"] = res
