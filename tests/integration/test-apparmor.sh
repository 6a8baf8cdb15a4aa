#!/usr/bin/env bash
# AppArmor on a host without it (the development machines; the Debian
# guest's t-60-apparmor.sh covers a host with it): RuntimeDefault, named or
# not, and Unconfined run with no profile, as containerd and CRI-O run them;
# a Localhost profile, by field or by annotation, cannot be enforced, so
# admission refuses the pod (phase Failed, reason AppArmor, a message
# naming the container and the profile, an event, nothing created); and
# `nanolet validate` reports the rules kubelet's validation has.
. "$(dirname "$0")/lib.sh"
require_root
. "$(dirname "$0")/lib-agent.sh"

if grep -qx Y /sys/module/apparmor/parameters/enabled 2>/dev/null; then
        skip "AppArmor is enabled here: tests/guest/in-guest/t-60-apparmor.sh covers such hosts"
fi

load_test_image || fail "load the test image"
start_agent
put_manifest runs.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: runs
  annotations:
    container.apparmor.security.beta.kubernetes.io/anno: runtime/default
spec:
  terminationGracePeriodSeconds: 1
  securityContext:
    appArmorProfile: {type: RuntimeDefault}
  containers:
  - {name: none, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
  - {name: anno, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
  - {name: unconfined, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"],
     securityContext: {appArmorProfile: {type: Unconfined}}}
YAML
put_manifest local.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata: {name: local}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"],
     securityContext: {appArmorProfile: {type: Localhost, localhostProfile: my-profile}}}
YAML
put_manifest anno.yaml <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: anno
  annotations:
    container.apparmor.security.beta.kubernetes.io/side: localhost/other
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - {name: main, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
  - {name: side, image: nanolet-test, imagePullPolicy: Never, command: [sleep, "3600"]}
YAML

check_field "RuntimeDefault and Unconfined run without AppArmor" runs \
        'p["status"]["phase"] + "/" + ",".join(str(c.get("ready")) for c in p["status"]["containerStatuses"])' \
        Running/True,True,True
n=$( (grep -l apparmorProfile "$ROOT"/pods/*/containers/*/*/bundle/config.json 2>/dev/null || true) | wc -l)
[ "$n" = 0 ] && ok "no config.json names an AppArmor profile" || fail "$n config.json name a profile"

check_field "a Localhost profile: the pod fails admission" local \
        'p["status"]["phase"] + "/" + p["status"].get("reason", "")' Failed/AppArmor
check_field "with a message naming the container and the profile" local 'p["status"].get("message")' \
        'Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host (container "main" asks for the Localhost profile "my-profile")'
check_field "by annotation too" anno 'p["status"]["phase"] + "/" + p["status"].get("reason", "") + "/" + p["status"].get("message", "")' \
        'Failed/AppArmor/Pod was rejected: Cannot enforce AppArmor: AppArmor is not enabled on the host (container "side" asks for the Localhost profile "other")'
uid=$(pod_field local 'p["metadata"]["uid"]')
[ -n "$uid" ] && [ -z "$(pod_runc_ids "$uid")" ] && [ ! -e "$RUN/ns/$uid" ] &&
        ok "nothing of the refused pod was created" || fail "the refused pod has containers or namespaces"
nl events local >"$WORK/out" 2>&1 || true
grep -qE 'Warning +AppArmor +pod/local-node1 +Cannot enforce AppArmor' "$WORK/out" &&
        ok "an AppArmor warning event" || fail "nanolet events: $(cat "$WORK/out")"

# nanolet validate: kubelet's rules, with file, line and field.
cat >"$WORK/bad.yaml" <<'YAML'
apiVersion: v1
kind: Pod
metadata:
  name: bad
  annotations:
    container.apparmor.security.beta.kubernetes.io/ghost: runtime/default
    container.apparmor.security.beta.kubernetes.io/main: localhost/a
spec:
  containers:
  - name: main
    image: busybox
    securityContext:
      appArmorProfile: {type: Localhost, localhostProfile: b}
  - name: side
    image: busybox
    securityContext:
      appArmorProfile: {type: Localhost}
YAML
rc=0
"$NANOLET" validate "$WORK/bad.yaml" >"$WORK/validate.out" 2>&1 || rc=$?
[ "$rc" = 1 ] && ok "validate: the manifest is invalid" || fail "validate exit $rc"
for want in \
        "bad.yaml:6: metadata.annotations[container.apparmor.security.beta.kubernetes.io/ghost]: invalid value \"ghost\": container not found" \
        "bad.yaml:13: spec.containers[0].securityContext.appArmorProfile.localhostProfile: apparmor profile in annotation and field must match" \
        "bad.yaml:17: spec.containers[1].securityContext.appArmorProfile.localhostProfile: must be set when AppArmor type is Localhost"; do
        grep -qF -- "$want" "$WORK/validate.out" && ok "validate: ${want#*: }" ||
                fail "validate lacks \"$want\": $(cat "$WORK/validate.out")"
done

rm -f "$MAN/runs.yaml" "$MAN/local.yaml" "$MAN/anno.yaml"
expect "pod runs removed" "$AGENT_LOG" 'Pod "runs-node1_default\([0-9a-f-]+\)" is gone' 1 120
stop_agent
check_no_leftovers
finish
