#!/usr/bin/env python3
"""The bench's one list of knobs (bench/nanolet_bench/knobs.py) against what
reads the environment and against its page:

1. docs/bench-knobs.md is exactly what `bench.py --print-knobs-md` prints;
2. every variable bench.py, bench/nanolet_bench/ and bench/run.sh read is
   in the list, and the Python code reads it only through knobs.get();
3. every knob in the list is read somewhere (no entry outlives its code).

Usage: check-bench-knobs.py SOURCE_ROOT"""
import glob
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, f"{root}/bench")
from nanolet_bench import knobs  # noqa: E402

errors = []
listed = set(knobs.BY_NAME)

with open(f"{root}/docs/bench-knobs.md") as f:
    if f.read() != knobs.markdown():
        errors.append("docs/bench-knobs.md differs from the knob list: regenerate it with "
                      "`python3 bench/bench.py --print-knobs-md > docs/bench-knobs.md`")

# Reads of the environment outside knobs.get(): os.environ.get("X"),
# os.environ["X"] (not an assignment), os.getenv("X"), and a bare
# os.environ.get(name) whose name the check cannot see.
DIRECT = re.compile(r'os\.environ\.get\(\s*"([A-Za-z0-9_]+)"|os\.environ\[\s*"([A-Za-z0-9_]+)"\s*\](?!\s*=[^=])'
                    r'|os\.getenv\(\s*"([A-Za-z0-9_]+)"')
OPAQUE = re.compile(r'os\.environ\.get\(\s*[^"\s]|os\.getenv\(\s*[^"\s]')
KNOB = re.compile(r'knobs\.get\(\s*"([A-Za-z0-9_]+)"\s*\)')
py = [f"{root}/bench/bench.py"] + sorted(glob.glob(f"{root}/bench/nanolet_bench/*.py"))
read = set()
for path in py:
    rel = os.path.relpath(path, root)
    with open(path) as f:
        text = f.read()
    for no, line in enumerate(text.splitlines(), 1):
        if rel.endswith("nanolet_bench/knobs.py"):
            continue
        for m in DIRECT.finditer(line):
            name = next(g for g in m.groups() if g)
            errors.append(f"{rel}:{no}: reads {name} from the environment directly; "
                          f"list it in knobs.py and read it with knobs.get()")
        if OPAQUE.search(line):
            errors.append(f"{rel}:{no}: reads the environment by a computed name; use knobs.get()")
        for m in KNOB.finditer(line):
            read.add(m.group(1))
            if m.group(1) not in listed:
                errors.append(f"{rel}:{no}: knob {m.group(1)} is not in knobs.py")

# run.sh: ${X:-...}, ${X-...}, ${X:+...} and plain $X / ${X} of a name it
# does not assign itself.
with open(f"{root}/bench/run.sh") as f:
    sh = f.read()
assigned = set(re.findall(r'(?m)^\s*(?:local\s+|export\s+)?([A-Za-z_][A-Za-z0-9_]*)=', sh))
assigned |= set(re.findall(r'\bfor\s+([A-Za-z_][A-Za-z0-9_]*)\s+in\b', sh))
for m in re.finditer(r'\$\{?([A-Z_][A-Z0-9_]*)', sh):
    name = m.group(1)
    if name in assigned or name in ("BASH_SOURCE", "PWD", "HOME", "PATH"):
        continue
    read.add(name)
    if name not in listed:
        no = sh.count("\n", 0, m.start()) + 1
        errors.append(f"bench/run.sh:{no}: reads {name}, which is not in knobs.py")

for k in knobs.KNOBS:
    if k.name not in read:
        errors.append(f"knobs.py lists {k.name}, which nothing reads")

for e in errors:
    print(e, file=sys.stderr)
sys.exit(1 if errors else 0)
