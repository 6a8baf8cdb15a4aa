#!/usr/bin/env bash
# A bounded load on the read-only API, loopback only: 20 concurrent clients
# (ab, from apache2-utils; -l: the answers change length as pods start),
# 10,000 requests in all, half /pods, half
# /metrics, while five new pods start. Zero failed or non-200 requests; the
# sync loop is not starved: /healthz on the health port never fails during
# the load and no relist interval exceeds 2.5 s (the agent's own histogram);
# the five pods reach Running. The latency percentiles and the pods' start
# durations are printed for docs/BENCHMARKS.md, never asserted.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

PY=/usr/bin/python3
AB=$(command -v ab || true)
if [ -z "$AB" ]; then
        fail "ab is not installed (apt-get install apache2-utils)"
        finish
fi
load_test_image || { fail "test image"; finish; }

read -r RO_PORT HZ_PORT < <(free_ports 2)
RO=http://127.0.0.1:$RO_PORT
HZ=http://127.0.0.1:$HZ_PORT

for p in base1 base2 base3; do sleep_pod "$p" 1 | put_manifest "$p.yaml"; done
start_agent --stop-pods-on-exit --read-only-port "$RO_PORT" --healthz-port "$HZ_PORT"
for p in base1 base2 base3; do
        check_field "$p is running" "$p" 'p["status"]["phase"]' Running 60
done

# The health port, watched for the whole load: every answer that is not 200.
touch "$WORK/load.running"
(
        while [ -e "$WORK/load.running" ]; do
                code=$(curl -s -o "$WORK/hz.body" -w '%{http_code}' --max-time 10 "$HZ/healthz" || echo curl-failed)
                [ "$code" = 200 ] || echo "$code $(cat "$WORK/hz.body" 2>/dev/null)" >>"$WORK/hz.bad"
                echo x >>"$WORK/hz.count"
                sleep 0.2
        done
) &
PIDS+=($!)

# Five pods dropped in as the load begins.
"$AB" -q -l -n 5000 -c 10 -e "$WORK/pods.csv" "$RO/pods" >"$WORK/ab-pods.txt" 2>&1 &
AB1=$!
"$AB" -q -l -n 5000 -c 10 -e "$WORK/metrics.csv" "$RO/metrics" >"$WORK/ab-metrics.txt" 2>&1 &
AB2=$!
PIDS+=("$AB1" "$AB2")
for p in load1 load2 load3 load4 load5; do sleep_pod "$p" 1 | put_manifest "$p.yaml"; done
rc1=0 rc2=0
wait "$AB1" || rc1=$?
wait "$AB2" || rc2=$?
rm -f "$WORK/load.running"
sleep 0.5

for f in pods metrics; do
        t=$WORK/ab-$f.txt
        complete=$(awk '/^Complete requests:/ {print $3}' "$t")
        failed=$(awk '/^Failed requests:/ {print $3}' "$t")
        non2xx=$(awk '/^Non-2xx responses:/ {print $3}' "$t")
        if [ "${rc1}${rc2}" = 00 ] && [ "$complete" = 5000 ] && [ "$failed" = 0 ] && [ -z "$non2xx" ]; then
                ok "/$f: 5000 requests from 10 clients, none failed"
        else
                fail "/$f: ab rc $rc1/$rc2, complete '$complete', failed '$failed', non-2xx '$non2xx': $(cat "$t")"
        fi
        # ab -e: "percentage,milliseconds" for 0..100 %
        p50=$(awk -F, '$1 == 50 {print $2}' "$WORK/$f.csv")
        p99=$(awk -F, '$1 == 99 {print $2}' "$WORK/$f.csv")
        rps=$(awk '/^Requests per second:/ {print $4}' "$t")
        echo "figures: /$f p50 ${p50} ms, p99 ${p99} ms, max $(awk -F, '$1 == 100 {print $2}' "$WORK/$f.csv") ms, ${rps} requests/s"
done

n=$(wc -l <"$WORK/hz.count")
if [ ! -s "$WORK/hz.bad" ] && [ "$n" -ge 1 ]; then
        ok "/healthz answered 200 all through the load ($n answers)"
else
        fail "/healthz during the load: $(cat "$WORK/hz.bad" 2>/dev/null)"
fi
for p in load1 load2 load3 load4 load5; do
        check_field "$p started under load" "$p" 'p["status"]["phase"]' Running 60
done

curl -fs -o "$WORK/m.txt" --max-time 30 "$RO/metrics" || fail "GET /metrics after the load"
count=$(awk '/^kubelet_pleg_relist_interval_seconds_count / {print $2}' "$WORK/m.txt")
le25=$(awk '/^kubelet_pleg_relist_interval_seconds_bucket\{le="2.5"\} / {print $2}' "$WORK/m.txt")
[ -n "$count" ] && [ "$count" = "$le25" ] &&
        ok "the relist kept its pace: $count intervals, none over 2.5 s" ||
        fail "relist intervals over 2.5 s: count $count, within 2.5 s $le25"
# Start durations (kubelet's histogram): the 3 before the load and the 5
# under it, in the agent's own log, for the benchmark notes.
"$PY" - "$AGENT_LOG" <<'PYEOF'
import re, sys, datetime
seen, started = {}, {}
for line in open(sys.argv[1]):
    if not re.match(r'^[DIWEF]\d{4} ', line):
        continue
    t = datetime.datetime.strptime("2000" + line[1:21], "%Y%m%d %H:%M:%S.%f").timestamp()
    m = re.search(r'SyncLoop \(ADD, "file"\): "([a-z0-9]+)-node1_', line)
    if m: seen.setdefault(m.group(1), t)
    m = re.search(r'Started container "main" of pod "([a-z0-9]+)-node1_', line)
    if m: started.setdefault(m.group(1), t)
for group in ("base", "load"):
    d = sorted(started[p] - seen[p] for p in seen if p.startswith(group) and p in started)
    if d:
        print("figures: %s pods: manifest -> container started: median %.0f ms, max %.0f ms (%d pods)"
              % (group, 1000 * d[len(d) // 2], 1000 * d[-1], len(d)))
PYEOF

stop_agent
check_no_leftovers
finish
