#!/usr/bin/env bash
# `nanolet validate`: real manifests pass, bad ones fail with precise messages
# and exit codes as nanolet(8) says.
. "$(dirname "$0")/lib.sh"

DATA=${TEST_DATA_DIR:?}/manifests

out="$WORK/out"
if "$NANOLET" validate --hostname-override node1 "$DATA/valid" >"$out" 2>&1; then
        ok "all valid manifests accepted"
else
        cat "$out" >&2
        fail "valid manifests rejected"
fi
grep -q 'etcd-node1' "$out" || fail "etcd pod not listed"

for f in "$DATA"/invalid/*.yaml "$DATA"/invalid/*.json; do
        [ -e "$f" ] || continue
        rc=0
        "$NANOLET" validate -q --hostname-override node1 "$f" >"$out" 2>&1 || rc=$?
        if [ "$rc" -eq 0 ]; then
                fail "$(basename "$f") accepted"
                continue
        fi
        [ "$rc" -eq 1 ] || fail "$(basename "$f"): exit code $rc, want 1"
        exp="${f%.*}.expect"
        if [ -f "$exp" ]; then
                while IFS= read -r want; do
                        [ -z "$want" ] && continue
                        grep -qF -- "$want" "$out" || fail "$(basename "$f"): no \"$want\" in: $(cat "$out")"
                done <"$exp"
        fi
done
ok "invalid manifests rejected with their messages"

# stdin and usage errors
"$NANOLET" validate --hostname-override node1 - <"$DATA/valid/$(ls "$DATA/valid" | head -1)" >/dev/null 2>&1 ||
        fail "stdin not accepted"
set +e
"$NANOLET" validate >/dev/null 2>&1
[ $? -eq 2 ] || fail "no PATH should exit 2"
"$NANOLET" validate --bogus x >/dev/null 2>&1
[ $? -eq 2 ] || fail "unknown option should exit 2"
"$NANOLET" validate --qui x >/dev/null 2>"$WORK/abbrev.err"
[ $? -eq 2 ] && grep -q '^nanolet validate: unknown flag: --qui$' "$WORK/abbrev.err" ||
        fail "an abbreviation should be an unknown flag: $(cat "$WORK/abbrev.err")"
set -e

# duplicates across files in one directory
mkdir -m 0755 "$WORK/dup"
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: a}\nspec: {containers: [{name: c, image: busybox}]}\n' >"$WORK/dup/1.yaml"
cp "$WORK/dup/1.yaml" "$WORK/dup/2.yaml"
if "$NANOLET" validate --hostname-override node1 "$WORK/dup" >"$out" 2>&1; then
        fail "duplicate pods accepted"
fi
grep -q '2.yaml' "$out" && grep -q '1.yaml' "$out" || fail "duplicate message should name both files: $(cat "$out")"
ok "duplicates"

# --strict-kubelet: kubeadm's static pods are what kubelet runs unchanged;
# nanolet's own extensions are reported at their line and field, and fail
kubeadm_pods=()
for n in etcd kube-apiserver kube-controller-manager kube-scheduler; do
        kubeadm_pods+=("$DATA/valid/$n.yaml")
done
"$NANOLET" validate --strict-kubelet --hostname-override node1 "${kubeadm_pods[@]}" >"$out" 2>&1 ||
        fail "kubeadm's manifests differ from kubelet: $(cat "$out")"
grep -q 'kubelet:' "$out" && fail "kubeadm's manifests reported: $(cat "$out")"
rc=0
"$NANOLET" validate --strict-kubelet --hostname-override node1 "$DATA/valid/configmap-env.yaml" >"$out" 2>&1 || rc=$?
[ "$rc" -eq 1 ] || fail "--strict-kubelet: exit $rc for a pod using a ConfigMap: $(cat "$out")"
grep -qF "configmap-env.yaml:49: spec.volumes[0].configMap: warning: kubelet: a static pod may not use a ConfigMap" "$out" ||
        fail "--strict-kubelet: no ConfigMap volume line: $(cat "$out")"
grep -qF "configmap-env.yaml:3: warning: kubelet: does not read ConfigMap documents" "$out" ||
        fail "--strict-kubelet: no ConfigMap document line: $(cat "$out")"
grep -q '^[0-9]* differences from kubelet$' "$out" || fail "--strict-kubelet: no count: $(cat "$out")"
# without the flag the same file is valid
"$NANOLET" validate -q --hostname-override node1 "$DATA/valid/configmap-env.yaml" >"$out" 2>&1 ||
        fail "configmap-env.yaml rejected without --strict-kubelet: $(cat "$out")"
# a PodList is an error in kubelet's directory, not from its URL
rc=0
"$NANOLET" validate -q --strict-kubelet "$DATA/valid/podlist.yaml" >"$out" 2>&1 || rc=$?
[ "$rc" -eq 1 ] && grep -q 'one Pod per file' "$out" || fail "PodList from a file: $rc $(cat "$out")"
"$NANOLET" validate -q --strict-kubelet=url - <"$DATA/valid/podlist.yaml" >"$out" 2>&1 ||
        fail "PodList from a URL reported: $(cat "$out")"
rc=0
"$NANOLET" validate --strict-kubelet=ftp "$DATA/valid/podlist.yaml" >"$out" 2>&1 || rc=$?
[ "$rc" -eq 2 ] && grep -q 'takes "file" or "url"' "$out" || fail "--strict-kubelet=ftp: $rc $(cat "$out")"
ok "--strict-kubelet"

finish
