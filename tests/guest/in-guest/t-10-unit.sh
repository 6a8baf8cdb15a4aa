#!/usr/bin/env bash
# nanolet from its own .deb on a systemd host: dpkg -i offline, the shipped
# unit enabled and active as Type=notify, the watchdog fed past WatchdogSec,
# the agent's log in journald with the level of each line as the entry's
# priority, and a static pod from /etc/kubernetes/manifests Running with the
# busybox test image.
. "$(dirname "$0")/lib.sh"

deb=$(ls "$GUEST_SHARE"/deb/nanolet_*.deb | head -n 1)
if ! dpkg-query -W -f='${Status}' nanolet 2>/dev/null | grep -q 'install ok installed'; then
        check "dpkg -i $(basename "$deb") offline (every Depends in the image)" dpkg -i "$deb"
fi
check_eq "package installed" "$(dpkg-query -W -f='${Status}' nanolet)" "install ok installed"
check_eq "unit enabled by the package" "$(systemctl is-enabled nanolet 2>&1)" enabled
check_eq "unit started by the package's postinst" "$(systemctl is-active nanolet 2>&1)" active
systemctl restart nanolet
check_eq "unit reached active/running as Type=notify" \
        "$(systemctl show -p Type,ActiveState,SubState --value nanolet | paste -sd' ')" \
        "notify active running"
watchdog=$(systemctl show -p WatchdogUSec --value nanolet)
check_eq "WatchdogSec of the shipped unit" "$watchdog" 30s
check_eq "NotifyAccess lets only the main process notify" \
        "$(systemctl show -p NotifyAccess --value nanolet)" main

# The watchdog: the same process still active a while past WatchdogSec
# (systemd would have killed and restarted a silent one).
pid=$(systemctl show -p MainPID --value nanolet)
restarts=$(systemctl show -p NRestarts --value nanolet)
since=$(date '+%Y-%m-%d %H:%M:%S')
note "waiting 40 s, past WatchdogSec=$watchdog"
sleep 40
check_eq "agent still active past WatchdogSec" "$(systemctl show -p ActiveState --value nanolet)" active
check_eq "same main process past WatchdogSec (pid $pid)" "$(systemctl show -p MainPID --value nanolet)" "$pid"
check_eq "no restart by systemd" "$(systemctl show -p NRestarts --value nanolet)" "$restarts"
check "no watchdog timeout in the journal" \
        bash -c "! journalctl --no-pager --since '$since' | grep -i 'nanolet.service: watchdog timeout'"

# journald: the agent writes "<N>message" under JOURNAL_STREAM (docs/logs.md):
# journald takes N as the priority and keeps the message whole.
journalctl -u nanolet -o cat --no-pager | keep journal-cat.txt
journalctl -u nanolet -o json --no-pager | keep journal.json
check "journal has the agent's start line" grep -q 'nanolet starting' "$GUEST_OUT/$GUEST_FILE/journal-cat.txt"
check "no journal line keeps a <N> prefix" bash -c "! grep -qE '^<[0-7]>' '$GUEST_OUT/$GUEST_FILE/journal-cat.txt'"
check "the start line is logged at info (PRIORITY 6)" \
        jq -se 'map(select(.MESSAGE | type == "string" and test("nanolet starting"))) | length > 0 and all(.PRIORITY == "6")' \
        "$GUEST_OUT/$GUEST_FILE/journal.json"
# journald stamps time and PID itself, so the agent drops klog's header
# there: the entry's _PID is the unit's main process.
check_eq "the last start line's _PID is the unit's MainPID" \
        "$(jq -rs 'map(select(.MESSAGE | type == "string" and test("nanolet starting"))) | last | ._PID' \
                "$GUEST_OUT/$GUEST_FILE/journal.json")" "$(systemctl show -p MainPID --value nanolet)"
check "no klog header inside journal messages" \
        bash -c "! grep -qE '^[IWEF][0-9]{4} [0-9:.]+ +[0-9]+ [^ ]+:[0-9]+\\] ' '$GUEST_OUT/$GUEST_FILE/journal-cat.txt'"

# A manifest that cannot be read is logged at warning or error priority,
# its name quoted in the message.
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: [broken\n' | put_manifest broken.yaml
wait_until 60 "a broken manifest is logged with priority warning or worse" bash -c \
        "journalctl -u nanolet -o json --no-pager | jq -se 'map(select((.MESSAGE | type == \"string\") and (.MESSAGE | test(\"broken.yaml\")) and ((.PRIORITY | tonumber) <= 4))) | length > 0'"
rm -f "$NANOLET_MANIFESTS/broken.yaml"

# A static pod with the busybox image, loaded into the agent's store.
check "test image loaded into the agent's store" nanolet_load_test_image
sleep_pod web | put_manifest web.yaml
wait_until 300 "static pod web Running and ready (read-only API /pods)" pods_running 1
pod=$(api_pods | jq -r '.items[0].metadata.name')
check_eq "pod named <name>-<node>" "$pod" "web-$(hostname)"
nanolet pods | tee /dev/stderr | keep nanolet-pods.txt
check "nanolet pods lists it Running" bash -c "nanolet pods | grep -w Running | grep -q web"
check "the container runs (nanolet exec)" nanolet exec "web-$(hostname)" -- true
journalctl -u nanolet -o cat --no-pager | keep journal-cat.txt

rm -f "$NANOLET_MANIFESTS/web.yaml"
wait_until 120 "pod removed with its manifest" pods_count 0
wait_until 60 "no container left in runc" bash -c '[ -z "$(runc --root /run/nanolet/runc list -q)" ]'
