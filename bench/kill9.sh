#!/usr/bin/env bash
# kill -9 under churn (docs/BENCHMARKS.md, "Soak"): PODS pods (50; half never
# change, the rest are created, edited and removed, some pulling from a local
# registry, image GC on), the agent killed with SIGKILL at KILLS points (100)
# and restarted; after each restart 0 restarts of unchanged pods and 0
# duplicate containers, at the end 0 leaks.
#   sudo bash bench/kill9.sh    (knobs of bench/soak.sh, and KILLS, PODS)
exec env SOAK_MODE=kill9 bash "$(dirname "${BASH_SOURCE[0]}")/soak.sh" "$@"
