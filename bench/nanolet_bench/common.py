"""What every module of the bench uses: logging, running commands, the
interruption signal, the runc and CNI paths and a sample's statistics."""
import shutil
import statistics
import subprocess
import sys
import time

RUNC = shutil.which("runc") or "/usr/sbin/runc"
CNI_BIN = "/usr/lib/cni"


def log(msg):
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run(cmd, check=True, quiet=True, **kw):
    kw.setdefault("stdin", subprocess.DEVNULL)
    if quiet:
        kw.setdefault("stdout", subprocess.DEVNULL)
        kw.setdefault("stderr", subprocess.PIPE)
    r = subprocess.run(cmd, **kw)
    if check and r.returncode != 0:
        err = r.stderr.decode(errors="replace") if isinstance(r.stderr, bytes) else r.stderr
        raise RuntimeError(f"{' '.join(map(str, cmd))}: exit {r.returncode}: {err}")
    return r


def out(cmd, check=True):
    return run(cmd, check=check, stdout=subprocess.PIPE).stdout.decode()


class Interrupted(Exception):
    pass


def on_signal(signum, frame):
    raise Interrupted(f"signal {signum}")


def stats(ms):
    return {"runs": len(ms), "median_ms": round(statistics.median(ms), 2),
            "min_ms": round(min(ms), 2), "max_ms": round(max(ms), 2),
            "all_ms": [round(x, 2) for x in ms]}
