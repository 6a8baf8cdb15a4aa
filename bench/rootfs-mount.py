#!/usr/bin/env python3
"""The two ways a container's rootfs is mounted when every layer of its image
is unpacked already (docs/internals/design-decisions.md, "The start path"), timed
interleaved: the rootfs helper (`nanolet internal-helper unpack-rootfs`: fork,
exec of the 48-library binary, store open, the overlay mount, exit) and the
overlay mount(2) the agent now makes itself, with the same options.

Usage (root): rootfs-mount.py NANOLET [RUNS]
Builds the test image (tests/make-test-image.sh) into a store under a temp
dir and removes everything it mounted and made.
"""
import ctypes
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time


def main():
    nanolet = os.path.abspath(sys.argv[1])
    runs = int(sys.argv[2]) if len(sys.argv) > 2 else 20
    repo = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    libc = ctypes.CDLL(None, use_errno=True)
    w = tempfile.mkdtemp(prefix="nanolet-rootfs-bench.")
    mounted = []
    try:
        subprocess.run([f"{repo}/tests/make-test-image.sh", f"{w}/images"], check=True,
                       stdout=subprocess.DEVNULL)
        root = f"{w}/root"
        subprocess.run([nanolet, "image", "--root-dir", root, "load",
                        f"{w}/images/nanolet-test-layers.tar"], check=True,
                       stdout=subprocess.DEVNULL)
        import json
        im = json.loads(subprocess.run([nanolet, "image", "--root-dir", root, "inspect",
                                        "nanolet-test-layers"], check=True,
                                       stdout=subprocess.PIPE).stdout)
        digest = im["digest"]
        # Every layer dir of the store is this image's (it is the only one);
        # overlayfs takes them in any order for timing purposes.
        lowers = ":".join(f"{root}/layers/{l}" for l in sorted(os.listdir(f"{root}/layers")))

        def attempt(i):
            b = f"{w}/a{i}"
            for d in ("rootfs", "upper", "work"):
                os.makedirs(f"{b}/{d}")
            return b

        helper, direct = [], []
        for i in range(runs + 1):  # the first of each is a warm-up
            b = attempt(2 * i)
            t = time.perf_counter()
            subprocess.run([nanolet, "internal-helper", "unpack-rootfs", f"--store={root}"]
                           + [f"--{k}=0" for k in ("max-layer-size", "max-total-size", "max-ratio",
                                                   "ratio-min-size", "max-entries", "max-path")]
                           + [f"--digest={digest}", f"--target={b}/rootfs",
                              f"--upper-dir={b}/upper", f"--work-dir={b}/work"],
                           stdout=subprocess.DEVNULL, check=True)
            dt = time.perf_counter() - t
            mounted.append(f"{b}/rootfs")
            if i:
                helper.append(dt * 1000)
            b = attempt(2 * i + 1)
            opts = f"lowerdir={lowers},upperdir={b}/upper,workdir={b}/work"
            t = time.perf_counter()
            if libc.mount(b"overlay", f"{b}/rootfs".encode(), b"overlay", 0, opts.encode()) != 0:
                raise OSError(ctypes.get_errno(), "mount overlay")
            dt = time.perf_counter() - t
            mounted.append(f"{b}/rootfs")
            if i:
                direct.append(dt * 1000)

        def line(name, v):
            return (f"{name}: median {statistics.median(v):.2f} ms, min {min(v):.2f}, "
                    f"max {max(v):.2f} ({len(v)} runs)")
        print(line("rootfs helper (fork + exec + store open + mount + exit)", helper))
        print(line("overlay mount(2) from the caller", direct))
        print(f"load average {' '.join(open('/proc/loadavg').read().split()[:3])}")
    finally:
        for m in reversed(mounted):
            subprocess.run(["umount", m], check=False)
        shutil.rmtree(w, ignore_errors=True)


if __name__ == "__main__":
    main()
