#!/usr/bin/env bash
# `nanolet serve --dry-run` against a real watched directory and a URL
# served on 127.0.0.1: every kind of change gives exactly the right events.
. "$(dirname "$0")/lib.sh"
require_root

MAN="$WORK/manifests"
mkdir -m 0755 "$MAN"
LOG="$WORK/serve.log"

pod() { # pod NAME IMAGE
        cat <<YAML
apiVersion: v1
kind: Pod
metadata:
  name: $1
  namespace: kube-system
spec:
  hostNetwork: true
  containers:
  - name: main
    image: $2
    command: ["sleep", "3600"]
YAML
}

# Writes like an installer does: temp file then rename into place.
put() { # put FILE CONTENT
        printf '%s\n' "$2" >"$MAN/.$1.tmp"
        mv "$MAN/.$1.tmp" "$MAN/$1"
}

"$NANOLET" serve --dry-run --pod-manifest-path "$MAN" --hostname-override node1 \
        --file-check-frequency 2s >"$LOG" 2>&1 &
PIDS+=($!)
wait_for "$LOG" 'nanolet starting'

# add
put etcd.yaml "$(pod etcd registry.k8s.io/etcd:3.5.9-0)"
expect "add" "$LOG" 'SyncLoop \(ADD, "file"\): "etcd-node1_kube-system\([0-9a-f]{32}\)"'
uid1=$(grep -oE 'ADD, "file"\): "etcd-node1_kube-system\([0-9a-f]+' "$LOG" | grep -oE '[0-9a-f]{32}$')

# change in place (content written by an editor that truncates and rewrites)
pod etcd registry.k8s.io/etcd:3.5.10-0 >"$MAN/etcd.yaml"
expect "change" "$LOG" "SyncLoop \(UPDATE, \"file\"\): \"etcd-node1_kube-system\([0-9a-f]{32}\)\" replaces \($uid1\)"

# rename-save: the new content arrives by rename over the old file
before_remove=$(count_lines "$LOG" 'REMOVE')
before_update=$(count_lines "$LOG" 'UPDATE')
pod etcd registry.k8s.io/etcd:3.5.11-0 >"$MAN/.etcd.yaml.swp"
mv "$MAN/.etcd.yaml.swp" "$MAN/etcd.yaml"
wait_for "$LOG" 'UPDATE' $((before_update + 1))
sleep 1.5 # longer than the removal debounce
[ "$(count_lines "$LOG" 'UPDATE')" -eq $((before_update + 1)) ] || fail "rename-save gave more than one UPDATE"
[ "$(count_lines "$LOG" 'REMOVE')" -eq "$before_remove" ] || fail "rename-save gave a REMOVE"
ok "rename-save is one UPDATE"

# vim-style save: the old file is moved to a backup, a new one written
# within the removal debounce (the content is made first, and written by
# the shell itself, so a loaded machine does not stretch the gap)
before_update=$(count_lines "$LOG" 'UPDATE')
new=$(pod etcd registry.k8s.io/etcd:3.5.12-0)
mv "$MAN/etcd.yaml" "$MAN/etcd.yaml~"
printf '%s\n' "$new" >"$MAN/etcd.yaml"
wait_for "$LOG" 'UPDATE' $((before_update + 1))
sleep 1.5
[ "$(count_lines "$LOG" 'REMOVE')" -eq "$before_remove" ] || fail "vim-style save gave a REMOVE"
expect "backup file ignored" "$LOG" 'Ignoring .*etcd.yaml~'
rm -f "$MAN/etcd.yaml~"

# invalid: a syntax error keeps the last good pod and names file and line
printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\n  namespace: kube-system\nspec:\n  containers:\n  - name: main\n    image: [unclosed\n' >"$MAN/etcd.yaml"
expect "invalid file reported" "$LOG" 'SyncLoop \(ERROR, "file"\)'
expect "error names file:line" "$LOG" "$MAN/etcd.yaml:[0-9]+"
sleep 1.5
[ "$(count_lines "$LOG" 'REMOVE')" -eq "$before_remove" ] || fail "invalid file removed the pod"

# a validation error reports the field path
printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: etcd\n  namespace: kube-system\nspec:\n  containers:\n  - name: main\n' >"$MAN/etcd.yaml"
expect "validation error names the field" "$LOG" "$MAN/etcd.yaml:[0-9]+: spec.containers\\[0\\].image"

# fixed again
before_update=$(count_lines "$LOG" 'UPDATE')
put etcd.yaml "$(pod etcd registry.k8s.io/etcd:3.5.13-0)"
expect "error cleared" "$LOG" 'problems resolved'
expect "fixed file updates the pod" "$LOG" 'UPDATE' $((before_update + 1))

# duplicate: the same namespace/name in a later file is an error naming both
put zz-etcd-copy.yaml "$(pod etcd registry.k8s.io/etcd:9.9.9)"
expect "duplicate names both files" "$LOG" "zz-etcd-copy.yaml.*etcd.yaml|etcd.yaml.*zz-etcd-copy.yaml"
rm -f "$MAN/zz-etcd-copy.yaml"

# a second pod, then deletes
put scheduler.yaml "$(pod kube-scheduler registry.k8s.io/kube-scheduler:v1.28.0)"
expect "second pod added" "$LOG" 'SyncLoop \(ADD, "file"\): "kube-scheduler-node1_kube-system'
rm -f "$MAN/etcd.yaml"
expect "delete" "$LOG" 'SyncLoop \(REMOVE, "file"\): "etcd-node1_kube-system'
[ "$(count_lines "$LOG" 'REMOVE.*kube-scheduler')" -eq 0 ] || fail "delete removed another pod"

# ignored names are never read
put etcd.yaml.bak "$(pod etcd-bak registry.k8s.io/etcd:1)"
put notes.txt "not a manifest"
# the agent's record that it saw the file, then time for a rescan to log it again
wait_for "$LOG" 'Ignoring .*etcd.yaml.bak"' 1 30 || fail "ignored file not logged"
sleep 2.5 # past one rescan
[ "$(count_lines "$LOG" 'etcd-bak')" -eq 0 ] || fail "backup file was read"
[ "$(count_lines "$LOG" 'Ignoring .*etcd.yaml.bak"')" -eq 1 ] || fail "ignored file not logged exactly once"
ok "ignore rules"

# URL source on loopback
if command -v python3 >/dev/null; then
        WEB="$WORK/web"
        mkdir "$WEB"
        pod web-from-url registry.k8s.io/pause:3.9 >"$WEB/pods.yaml"
        python3 -m http.server 0 --bind 127.0.0.1 --directory "$WEB" >"$WORK/http.log" 2>&1 &
        PIDS+=($!)
        wait_for "$WORK/http.log" 'Serving HTTP on 127.0.0.1 port [0-9]+'
        port=$(grep -oE 'port [0-9]+' "$WORK/http.log" | head -1 | cut -d' ' -f2)
        LOG2="$WORK/serve-url.log"
        "$NANOLET" serve --dry-run --pod-manifest-path "" --manifest-url "http://127.0.0.1:$port/pods.yaml" \
                --hostname-override node1 --http-check-frequency 1s >"$LOG2" 2>&1 &
        PIDS+=($!)
        expect "URL add" "$LOG2" 'SyncLoop \(ADD, "http"\): "web-from-url-node1_kube-system'
        pod web-from-url registry.k8s.io/pause:3.10 >"$WEB/pods.yaml"
        expect "URL change" "$LOG2" 'SyncLoop \(UPDATE, "http"\)'
        rm -f "$WEB/pods.yaml" # 404: nothing changes
        # the agent logs the failed fetch; only then is "no REMOVE" meaningful
        expect "URL error logged, pods kept" "$LOG2" '404' 1 30
        sleep 2.5 # more fetches at the 1 s check frequency
        [ "$(count_lines "$LOG2" 'REMOVE')" -eq 0 ] || fail "URL error removed pods"
        printf 'apiVersion: v1\nkind: PodList\nitems: []\n' >"$WEB/pods.yaml"
        expect "empty PodList removes URL pods" "$LOG2" 'SyncLoop \(REMOVE, "http"\)'
fi

# kubelet's command-line habits: null means unset in the file, kubelet's own
# flags are accepted (one warning each when nanolet ignores them), any other
# unknown flag is a usage error.
cat >"$WORK/kc.yaml" <<'YAML'
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
clusterDNS: null
staticPodURL: null
fileCheckFrequency: 0s
rotateCertificates: true
YAML
LOG3="$WORK/serve-kubelet.log"
env -u JOURNAL_STREAM "$NANOLET" serve --dry-run --config "$WORK/kc.yaml" --pod-manifest-path "$MAN" --hostname-override node1 \
        --kubeconfig=/etc/kubernetes/kubelet.conf --node-labels a=b --register-node=false \
        --read-only-port 0 --healthz-port 0 >"$LOG3" 2>&1 &
PIDS+=($!)
expect "null and 0s in the file, kubelet's flags: the agent starts" "$LOG3" 'nanolet starting'
sed '/nanolet starting/q' "$LOG3" >"$WORK/serve-kubelet-start.log"
[ "$(count_lines "$WORK/serve-kubelet-start.log" 'warning: |^W[0-9]{4} ')" -eq 4 ] &&
        [ "$(count_lines "$LOG3" 'Flag --kubeconfig is ignored: ')" -eq 1 ] &&
        [ "$(count_lines "$LOG3" 'kc.yaml:6: rotateCertificates: warning: ignored: ')" -eq 1 ] &&
        ok "one warning per ignored setting (3 flags, 1 field)" || fail "warnings: $(cat "$LOG3")"

# Every line the agent writes is a log line: klog's header, the file's
# warnings and the flags' problems included (no JOURNAL_STREAM: that one
# trades the header for "<N>"), or JSON under --logging-format=json.
KLOG='^[IWE][0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6} +[0-9]+ [^ ]+:[0-9]+\] '
all_klog() { # FILE: every line has klog's header
        [ -s "$1" ] && [ "$(count_lines "$1" "$KLOG")" -eq "$(wc -l <"$1")" ]
}
all_json() { # FILE: every line is a JSON object with ts, caller and msg
        [ -s "$1" ] && python3 -c '
import json, sys
for line in open(sys.argv[1]):
    o = json.loads(line)
    assert isinstance(o, dict) and {"ts", "caller", "msg"} <= o.keys(), line
' "$1" 2>/dev/null
}
all_klog "$WORK/serve-kubelet-start.log" && [ "$(count_lines "$WORK/serve-kubelet-start.log" "${KLOG}.*kc.yaml:6: rotateCertificates: warning: ")" -eq 1 ] &&
        ok "the file's warnings carry klog's header, as every line" ||
        fail "lines without klog's header: $(grep -vE "$KLOG" "$WORK/serve-kubelet-start.log")"
LOG4="$WORK/serve-json.log"
env -u JOURNAL_STREAM "$NANOLET" serve --dry-run --config "$WORK/kc.yaml" --pod-manifest-path "$MAN" \
        --hostname-override node1 --kubeconfig=/etc/kubernetes/kubelet.conf --read-only-port 0 \
        --healthz-port 0 --logging-format=json >"$LOG4" 2>&1 &
PIDS+=($!)
expect "--logging-format=json after --config: the agent starts" "$LOG4" 'nanolet starting'
sed '/nanolet starting/q' "$LOG4" >"$WORK/serve-json-start.log"
all_json "$WORK/serve-json-start.log" &&
        [ "$(count_lines "$WORK/serve-json-start.log" '"msg":"[^"]*kc.yaml:6: rotateCertificates: warning: ')" -eq 1 ] &&
        ok "under --logging-format=json the file's warnings are JSON, as every line" ||
        fail "JSON log: $(cat "$WORK/serve-json-start.log")"
for bad in "--config $WORK/none.yaml" "--kubeconfg=/x" "--max-pods=x" "--root"; do
        rc=0
        # shellcheck disable=SC2086 # the flags split on purpose
        env -u JOURNAL_STREAM timeout 30 "$NANOLET" serve --dry-run --logging-format=json $bad >"$WORK/bad-json.log" 2>&1 || rc=$?
        [ "$rc" -ne 0 ] && all_json "$WORK/bad-json.log" ||
                fail "$bad under json: status $rc, $(cat "$WORK/bad-json.log")"
        rc=0
        # shellcheck disable=SC2086
        env -u JOURNAL_STREAM timeout 30 "$NANOLET" serve --dry-run $bad >"$WORK/bad-text.log" 2>&1 || rc=$?
        [ "$rc" -ne 0 ] && all_klog "$WORK/bad-text.log" ||
                fail "$bad: status $rc, $(cat "$WORK/bad-text.log")"
done
ok "a bad flag or file is said in log lines (klog or JSON)"
rc=0
"$NANOLET" serve --dry-run --pod-manifest-path "$MAN" --kubeconfg=/x >"$WORK/typo.log" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q '^E[0-9]\{4\} .*unknown flag: --kubeconfg; ' "$WORK/typo.log" &&
        ok "an unknown flag exits 2 naming it" || fail "unknown flag: status $rc, $(cat "$WORK/typo.log")"
# Whole names only, as kubelet's pflag: getopt's abbreviations are unknown.
# (An agent that took one would run: the timeout ends it, as a failure.)
for abbrev in --root=/x --max-pod=5 --container-runtime=remote -hostname=n; do
        rc=0
        timeout 30 "$NANOLET" serve --dry-run --pod-manifest-path "$MAN" "$abbrev" >"$WORK/abbrev.log" 2>&1 || rc=$?
        [ "$rc" -eq 2 ] && grep -q "unknown flag: ${abbrev%%=*}; " "$WORK/abbrev.log" ||
                fail "abbreviation $abbrev: status $rc, $(cat "$WORK/abbrev.log")"
done
ok "abbreviated flags are unknown flags"

finish
