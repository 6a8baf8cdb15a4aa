#!/usr/bin/env bash
# The container monitor's own cost, conmon against nanolet-monitor
# (docs/internals/design-decisions.md, "An own container monitor"):
#   sudo bash bench/monitor.sh [BUILD_DIR]
# For each monitor: N hostNetwork pods (one sleeping container each) are
# started one after the other; from the agent's debug log, per container,
# "monitor spawned -> created" (the monitor's start, its fork, `runc create`
# and the sync line); then each monitor process's RSS, PSS, anonymous and
# private memory (/proc/<pid>/smaps_rollup). Knobs: PODS=10.
# Takes the integration-test lock; cleans up as the integration tests do.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${1:-$SRC/build}
export NANOLET=$BUILD/nanolet TEST_DATA_DIR=$SRC/tests
PODS=${PODS:-10}
if [ "${BENCH_NO_LOCK:-0}" != 1 ]; then
        exec 9>/tmp/nanolet-itest.lock
        flock 9
fi
. "$SRC/tests/integration/lib.sh"
. "$SRC/tests/integration/lib-agent.sh"
load_test_image

measure() { # measure MONITOR
        local mon=$1 i
        : >"$AGENT_LOG"
        start_agent -v 4 --container-monitor="$mon"
        for ((i = 0; i < PODS; i++)); do
                cat <<YAML | put_manifest "m$i.yaml"
apiVersion: v1
kind: Pod
metadata: {name: m$i}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
YAML
                wait_field "m$i" 'p["status"]["phase"]' Running 60
        done
        sleep 1
        python3 - "$mon" "$AGENT_LOG" "$RUN" <<'PY'
import os, re, statistics, sys
mon, log, run = sys.argv[1:4]
spawned, created = [], []
for line in open(log, errors="replace"):
    m = re.match(r"^[DIWEF]\d{4} (\d\d):(\d\d):(\d\d\.\d+)", line)
    if not m:
        continue
    t = int(m[1]) * 3600 + int(m[2]) * 60 + float(m[3])
    if re.search(r"runtime: spawned \S*(conmon|nanolet-monitor) as", line):
        spawned.append(t)
    elif "runtime: created" in line:
        created.append(t)
ms = [(c - s) * 1000 for s, c in zip(spawned, created)]
mem = []
for d in os.listdir(f"{run}/conmon"):
    try:
        pid = int(open(f"{run}/conmon/{d}/conmon.pid").read())
        v = {}
        for l in open(f"/proc/{pid}/smaps_rollup"):
            k, _, rest = l.partition(":")
            if k in ("Rss", "Pss", "Anonymous", "Private_Clean", "Private_Dirty"):
                v[k] = int(rest.split()[0])
        v["Private"] = v.pop("Private_Clean") + v.pop("Private_Dirty")
        mem.append(v)
    except (OSError, ValueError):
        pass
med = lambda xs: statistics.median(xs) if xs else float("nan")
print(f"{mon}: {len(ms)} containers; monitor spawned -> created: median {med(ms):.1f} ms, "
      f"min {min(ms):.1f}, max {max(ms):.1f}")
for k in ("Rss", "Pss", "Anonymous", "Private"):
    xs = [v[k] for v in mem]
    print(f"{mon}: {len(xs)} monitors, {k} per monitor: median {med(xs):.0f} KiB "
          f"(min {min(xs)}, max {max(xs)})")
PY
        rm -f "$MAN"/*.yaml
        for ((i = 0; i < 250; i++)); do
                [ -z "$(ls "$RUN/status" 2>/dev/null | grep -vx sources.json | grep json)" ] && break
                sleep 0.2
        done
        stop_agent >/dev/null
}

for mon in ${MONITORS:-conmon nanolet}; do
        measure "$mon"
done
