#!/usr/bin/env bash
# A container that can write to its pod's log directory (a hostPath of the
# pod logs dir, as log shippers have) plants a symlink to a host file under a
# rotated-log name. Rotation must neither gzip the host file into the log
# directory nor change it, `nanolet logs` must not print it, and the agent
# removes the planted link (without following it) and says so once.
# Second part: a link planted ahead at the live log name of a container's
# next attempt (conmon opens that name by path and follows links): the agent
# removes it before the attempt starts, so the container's output goes to a
# real log file and never to the host file.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

load_test_image || { fail "test image"; finish; }
start_agent --container-log-max-size 64Ki --container-log-max-files 5 \
        --container-log-monitor-interval 1s

# A host file the container cannot see, in CRI format so that a reader
# following the link would print it.
secret="$WORK/host-secret"
token="TOPSECRET-$RANDOM$RANDOM"
printf '2024-01-01T00:00:00Z stdout F %s\n' "$token" >"$secret"
chmod 0604 "$secret"
sum=$(sha256sum <"$secret")

pad=$(printf 'x%.0s' $(seq 60))
put_manifest planter.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: planter}
spec:
  terminationGracePeriodSeconds: 1
  volumes:
  - {name: pods, hostPath: {path: "$LOGS", type: Directory}}
  containers:
  - name: plant
    image: nanolet-test
    imagePullPolicy: Never
    volumeMounts: [{name: pods, mountPath: /pods}]
    command:
    - sh
    - -c
    - |
      until d=\$(ls -d /pods/default_planter-node1_*/plant 2>/dev/null); do sleep 0.1; done
      ln -s "$secret" "\$d/0.log.29991231-235959"
      i=0; while [ \$i -lt 2000 ]; do echo "line \$i $pad"; i=\$((i+1)); done
      exec sleep 3600
YAML
check_field "planter Running" planter 'p["status"]["phase"]' Running
dir=$(echo "$LOGS"/default_planter-node1_*/plant)

# The agent's own rotation leaves a file stamped with today's UTC date.
for ((i = 0; i < 300; i++)); do
        ls "$dir" 2>/dev/null | grep -qE '^0\.log\.20[0-9]{6}-[0-9]{6}' && break
        sleep 0.2
done
ls "$dir" | grep -qE '^0\.log\.20[0-9]{6}-[0-9]{6}' && ok "the log was rotated" \
        || fail "no rotation: $(ls -l "$dir")"

[ "$(sha256sum <"$secret")" = "$sum" ] && ok "host file contents untouched" || fail "host file changed"
[ "$(stat -c %a "$secret")" = 604 ] && ok "host file mode untouched" || fail "host file mode $(stat -c %a "$secret")"
leaked=
for f in "$dir"/*; do
        [ -f "$f" ] && [ ! -L "$f" ] || continue
        zcat -f "$f" 2>/dev/null | grep -q "$token" && leaked+=" $(basename "$f")"
done
[ -z "$leaked" ] && ok "no log file holds the host file's contents" || fail "copied into:$leaked"
[ ! -L "$dir/0.log.29991231-235959" ] && [ ! -e "$dir/0.log.29991231-235959.gz" ] \
        && ok "the planted link is gone, not compressed" || fail "planted name still there: $(ls -l "$dir")"
n=$(count_lines "$AGENT_LOG" 'Removed a symlink "0\.log\.29991231-235959"')
[ "$n" = 1 ] && ok "the agent said once that it removed the planted link" \
        || fail "$n log lines about the planted link"

nl logs planter >"$WORK/out" 2>"$WORK/err" || fail "nanolet logs: $(cat "$WORK/err")"
grep -q "$token" "$WORK/out" && fail "nanolet logs printed the host file" || ok "nanolet logs does not print the host file"
grep -q '^line 1999 ' "$WORK/out" && ok "nanolet logs prints the container's lines" || fail "lines missing: $(tail -3 "$WORK/out")"
# A link planted after the rotation is skipped by the reader itself.
ln -s "$secret" "$dir/0.log.29991231-235958"
nl logs planter >"$WORK/out" 2>"$WORK/err" || fail "nanolet logs: $(cat "$WORK/err")"
grep -q "$token" "$WORK/out" && fail "nanolet logs printed the host file through a new link" \
        || ok "nanolet logs skips a link planted later"
grep -q 'skipping "0.log.29991231-235958"' "$WORK/err" && ok "and says it skipped it" || fail "stderr: $(cat "$WORK/err")"
rm -f "$dir/0.log.29991231-235958"

# The victim's first attempt waits until the planter has planted links at
# the names of its second one, then fails: restartPolicy Always starts
# attempt 1 over the planted names, and only the later attempts print.
target="$WORK/host-target"
echo original >"$target"
pwned="PWNED-$RANDOM$RANDOM"
put_manifest victim.yaml <<YAML
apiVersion: v1
kind: Pod
metadata: {name: victim}
spec:
  terminationGracePeriodSeconds: 1
  restartPolicy: Always
  volumes:
  - {name: pods, hostPath: {path: "$LOGS", type: Directory}}
  - {name: shared, emptyDir: {}}
  containers:
  - name: victim
    image: nanolet-test
    imagePullPolicy: Never
    volumeMounts: [{name: shared, mountPath: /shared}]
    command:
    - sh
    - -c
    - |
      n=\$(cat /shared/runs 2>/dev/null || echo 0)
      echo \$((n + 1)) >/shared/runs
      if [ "\$n" = 0 ]; then
        until [ -e /shared/planted ]; do sleep 0.1; done
      else
        echo $pwned
      fi
      exit 1
  - name: plant
    image: nanolet-test
    imagePullPolicy: Never
    volumeMounts: [{name: pods, mountPath: /pods}, {name: shared, mountPath: /shared}]
    command:
    - sh
    - -c
    - |
      until d=\$(ls -d /pods/default_victim-node1_*/victim 2>/dev/null); do sleep 0.1; done
      ln -s "$target" "\$d/1.log"
      ln -s "$target" "\$d/1.log.tmp"
      touch /shared/planted
      exec sleep 3600
YAML
wait_for "$AGENT_LOG" 'Container "victim" of pod "victim-node1_default\([^)]*\)" exited with code 1' 2 90 \
        && ok "the victim's attempt 1 ran and exited" || fail "the victim did not restart"
[ "$(cat "$target")" = original ] && ok "the host file behind the planted live log is untouched" \
        || fail "host file written through the planted link: $(cat "$target")"
n=$(count_lines "$AGENT_LOG" 'Removed a symlink "1\.log" ')
[ "$n" = 1 ] && ok "the agent said once that it removed the planted live log link" \
        || fail "$n log lines about the planted 1.log"
n=$(count_lines "$AGENT_LOG" 'Removed a symlink "1\.log\.tmp"')
[ "$n" = 1 ] && ok "the agent said once that it removed the planted 1.log.tmp" \
        || fail "$n log lines about the planted 1.log.tmp"
nl logs victim -c victim >"$WORK/out" 2>"$WORK/err" || fail "nanolet logs: $(cat "$WORK/err")"
grep -q "$pwned" "$WORK/out" && ok "the victim's output went to its own log file" \
        || fail "victim's line missing from nanolet logs: $(cat "$WORK/out" "$WORK/err")"

rm -f "$MAN"/*.yaml
for ((i = 0; i < 250; i++)); do [ -z "$(ls "$RUN/status" 2>/dev/null | grep -vx sources.json | grep json)" ] && break; sleep 0.2; done
check_no_leftovers
stop_agent
finish
