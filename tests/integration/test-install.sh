#!/usr/bin/env bash
# What `meson install` and the .deb put on a machine (README,
# "Installing"): the systemd unit, tmpfiles.d, man pages, the OpenRC
# script and the CNI conflist on request, each naming the binary where this
# configuration installs it; `systemd-analyze verify` accepts the unit; the
# .deb from contrib/build-deb.sh installs, runs and purges cleanly.
# The package is purged and the directories its postinst created are removed
# again even on failure; a machine that already has a nanolet package is left
# alone (the test fails instead).
. "$(dirname "$0")/lib.sh"
require_root

SRC=$(cd "${TEST_DATA_DIR:?}/.." && pwd)
# meson test stops a test with SIGTERM on timeout: exit, so the EXIT traps
# (package purge, directories) still run.
trap "exit 143" TERM INT

missing=()
for tool in meson ninja systemd-analyze systemd-tmpfiles dpkg-buildpackage dh fakeroot; do
        command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [ ${#missing[@]} -gt 0 ]; then
        echo "SKIP: $TEST_NAME needs ${missing[*]} (contrib/install-deps.sh installs them)"
        [ "${NANOLET_TEST_STRICT:-0}" = 1 ] && exit 1
        exit 77
fi

# has FILE: FILE exists (as file or link) under the destdir being checked.
has() {
        if [ -e "$DEST/$1" ]; then ok "installed: $1"; else fail "not installed: $1"; fi
}
hasnt() {
        if [ ! -e "$DEST/$1" ]; then ok "not installed (option off): $1"; else fail "installed without being asked: $1"; fi
}
# line FILE REGEX DESC: FILE has exactly one line matching REGEX.
line() {
        local n
        n=$(grep -cE -- "$2" "$1" 2>/dev/null || true)
        if [ "$n" = 1 ]; then ok "$3"; else fail "$3: $n lines of $1 match /$2/"; grep -nE -- "$2" "$1" >&2 || true; fi
}
# verify_unit UNIT ROOT MANDIR: systemd-analyze verify, with the binary the
# unit runs looked up under ROOT (the destdir) and its Documentation= man pages
# in MANDIR. verify exits non-zero only for some errors; unknown keys and the
# like are warnings, so its output must be empty too.
verify_unit() {
        local unit=$1 root=$2 mandir=$3 copy out
        copy=$WORK/verify/$(basename "$unit")
        mkdir -p "$WORK/verify"
        sed "s|^ExecStart=/|ExecStart=$root/|" "$unit" >"$copy"
        if out=$(MANPATH=$mandir systemd-analyze verify "$copy" 2>&1) &&
                [ -z "$out" ]; then
                ok "systemd-analyze verify accepts $(basename "$unit") ($unit)"
        else
                fail "systemd-analyze verify $unit: $out"
        fi
}

# --- meson install, default options, prefix /usr ----------------------------
BUILD=$WORK/build
t0=$SECONDS
if ! meson setup "$BUILD" "$SRC" --prefix=/usr -Dtests=disabled -Dman=enabled \
        >"$WORK/setup.log" 2>&1; then
        cat "$WORK/setup.log" >&2
        fail "meson setup of $SRC"
        finish
fi
DEST=$WORK/dest-usr
if ! meson install -C "$BUILD" --destdir "$DEST" >"$WORK/install.log" 2>&1; then
        tail -n 30 "$WORK/install.log" >&2
        fail "meson install --destdir (prefix /usr)"
        finish
fi
echo "# build and install: $((SECONDS - t0)) s"

UNIT=usr/lib/systemd/system/nanolet.service
for f in usr/sbin/nanolet usr/libexec/nanolet/nanolet-agent usr/libexec/nanolet/nanolet-monitor "$UNIT" usr/lib/tmpfiles.d/nanolet.conf \
        usr/lib/systemd/network/80-nanolet-veth.link usr/share/man/man8/nanolet.8 usr/share/man/man5/nanolet-config.5 \
        usr/share/man/man5/nanolet-manifests.5 usr/share/doc/nanolet/examples/nanolet.default; do
        has "$f"
done
for f in etc/init.d/nanolet etc/conf.d/nanolet etc/cni/net.d/10-nanolet.conflist etc/default/nanolet; do
        hasnt "$f"
done
line "$DEST/$UNIT" '^ExecStart=/usr/sbin/nanolet serve \$NANOLET_OPTS$' "unit: ExecStart is the sbindir binary"
line "$DEST/$UNIT" '^EnvironmentFile=-/etc/default/nanolet$' "unit: EnvironmentFile=-/etc/default/nanolet"
line "$DEST/$UNIT" '^Type=notify$' "unit: Type=notify"
if grep -q '@' "$DEST/$UNIT"; then fail "unit: unsubstituted @VAR@ left"; fi
verify_unit "$DEST/$UNIT" "$DEST" "$DEST/usr/share/man"
# Every example line of the environment file is commented out.
if grep -vE '^[[:space:]]*(#|$)' "$DEST/usr/share/doc/nanolet/examples/nanolet.default"; then
        fail "nanolet.default: an active line (the example must change nothing)"
else
        ok "nanolet.default: comments only"
fi
# systemd-tmpfiles accepts the snippet and creates nanolet's directories.
if systemd-tmpfiles --root="$WORK/tmpfiles-root" --create "$DEST/usr/lib/tmpfiles.d/nanolet.conf" &&
        [ -d "$WORK/tmpfiles-root/var/lib/nanolet" ] && [ -d "$WORK/tmpfiles-root/run/nanolet" ] &&
        [ -d "$WORK/tmpfiles-root/var/log/pods" ]; then
        ok "tmpfiles.d: systemd-tmpfiles --create makes /run/nanolet, /var/lib/nanolet, /var/log/pods"
else
        fail "tmpfiles.d: systemd-tmpfiles --create"
fi
if out=$("$DEST/usr/sbin/nanolet" version 2>&1); then ok "installed binary runs: $out"; else fail "nanolet version: $out"; fi
# `nanolet serve` execs the agent executable where this prefix installs it.
if grep -qaF /usr/libexec/nanolet/nanolet-agent "$DEST/usr/sbin/nanolet"; then
        ok "nanolet names the installed agent /usr/libexec/nanolet/nanolet-agent"
else
        fail "nanolet does not name /usr/libexec/nanolet/nanolet-agent"
fi

# --- another prefix, OpenRC and the CNI conflist asked for -------------------
# Only install paths change (and the agent path compiled into cli-serve.c):
# the install is quick.
DEST=$WORK/dest-opt
if meson configure "$BUILD" --prefix=/opt/nanolet -Dopenrc=true -Dinstall-cni-conf=true \
        -Dtmpfilesdir=no -Dsystemdnetworkdir=no >"$WORK/configure.log" 2>&1 &&
        meson install -C "$BUILD" --destdir "$DEST" >"$WORK/install2.log" 2>&1; then
        ok "meson install --destdir (prefix /opt/nanolet, -Dopenrc=true -Dinstall-cni-conf=true)"
else
        cat "$WORK/configure.log" >&2
        tail -n 30 "$WORK/install2.log" >&2
        fail "meson install with -Dopenrc=true -Dinstall-cni-conf=true"
        finish
fi
UNIT=opt/nanolet/lib/systemd/system/nanolet.service
for f in opt/nanolet/sbin/nanolet opt/nanolet/libexec/nanolet/nanolet-agent opt/nanolet/libexec/nanolet/nanolet-monitor "$UNIT" opt/nanolet/etc/init.d/nanolet \
        opt/nanolet/etc/conf.d/nanolet opt/nanolet/etc/logrotate.d/nanolet \
        etc/cni/net.d/10-nanolet.conflist opt/nanolet/share/man/man8/nanolet.8; do
        has "$f"
done
hasnt opt/nanolet/lib/tmpfiles.d/nanolet.conf
hasnt opt/nanolet/lib/systemd/network/80-nanolet-veth.link
line "$DEST/$UNIT" '^ExecStart=/opt/nanolet/sbin/nanolet serve \$NANOLET_OPTS$' \
        "unit under /opt/nanolet: ExecStart is that prefix's sbindir binary"
verify_unit "$DEST/$UNIT" "$DEST" "$DEST/opt/nanolet/share/man"
if cmp -s "$DEST/etc/cni/net.d/10-nanolet.conflist" "$SRC/contrib/cni/10-nanolet.conflist"; then
        ok "CNI conflist: contrib/cni/10-nanolet.conflist in /etc/cni/net.d"
else
        fail "CNI conflist differs from contrib/cni/10-nanolet.conflist"
fi
OPENRC=$DEST/opt/nanolet/etc/init.d/nanolet
if [ -x "$OPENRC" ] && sh -n "$OPENRC"; then ok "OpenRC script: executable, sh -n"; else fail "OpenRC script: not executable or a syntax error"; fi
# What openrc-run takes from the script: its variables, evaluated as it does
# (conf.d first, then the script, sourced by sh).
openrc_vars() {
        env -i RC_SVCNAME=nanolet PATH=/usr/bin:/bin sh -c \
                '[ -n "$1" ] && eval "$1"; . "$0"; echo "command=$command"; echo "args=$command_args"
                 echo "output_log=$output_log"; echo "output_logger=$output_logger"' "$OPENRC" "$1"
}
openrc_vars "" >"$WORK/openrc.vars" 2>&1
line "$WORK/openrc.vars" '^command=/opt/nanolet/sbin/nanolet$' "OpenRC: command is the sbindir binary"
line "$WORK/openrc.vars" '^output_log=/var/log/nanolet.log$' "OpenRC: log to /var/log/nanolet.log by default"
line "$DEST/opt/nanolet/etc/logrotate.d/nanolet" '^/var/log/nanolet.log \{$' "OpenRC: logrotate rotates that file"
line "$DEST/opt/nanolet/etc/logrotate.d/nanolet" '^[[:space:]]+copytruncate$' "OpenRC: logrotate copytruncates"
openrc_vars 'nanolet_log=syslog; nanolet_opts="-v 2"' >"$WORK/openrc.vars" 2>&1
line "$WORK/openrc.vars" '^output_logger=logger -t nanolet -p daemon.info$' "OpenRC: nanolet_log=syslog logs through logger"
line "$WORK/openrc.vars" '^args=serve -v 2$' "OpenRC: nanolet_opts reach serve"
line "$WORK/openrc.vars" '^output_log=$' "OpenRC: no log file with nanolet_log=syslog"

# -Dsystemdsystemunitdir=no: no unit.
DEST=$WORK/dest-nounit
if meson configure "$BUILD" -Dsystemdsystemunitdir=no -Dopenrc=false -Dinstall-cni-conf=false \
        >"$WORK/configure.log" 2>&1 &&
        meson install -C "$BUILD" --destdir "$DEST" >"$WORK/install3.log" 2>&1; then
        if [ -z "$(find "$DEST" -name nanolet.service)" ]; then
                ok "-Dsystemdsystemunitdir=no installs no unit"
        else
                fail "-Dsystemdsystemunitdir=no: $(find "$DEST" -name nanolet.service)"
        fi
else
        fail "meson install with -Dsystemdsystemunitdir=no"
fi

# --- the .deb ---------------------------------------------------------------
# not-installed, or installed, config-files, half-installed ...
pkg_status() { dpkg-query -W -f='${db:Status-Status}' nanolet 2>/dev/null || echo not-installed; }
if [ "$(pkg_status)" != not-installed ]; then
        fail "a nanolet package is already on this machine; not touching it"
        finish
fi
t0=$SECONDS
if DEB_BUILD_OPTIONS="nocheck parallel=2" "$SRC/contrib/build-deb.sh" "$WORK/debs" >"$WORK/deb.log" 2>&1; then
        ok "contrib/build-deb.sh built $(cd "$WORK/debs" && ls nanolet_*.deb) in $((SECONDS - t0)) s"
else
        tail -n 40 "$WORK/deb.log" >&2
        fail "contrib/build-deb.sh"
        finish
fi
DEB=$(ls "$WORK"/debs/nanolet_*_*.deb)
dpkg-deb -f "$DEB" Depends >"$WORK/depends"
for dep in 'runc \| crun' 'conmon' 'containernetworking-plugins' 'iptables' 'libc6' 'libcurl4' \
        'libmicrohttpd12' 'libseccomp2'; do
        line "$WORK/depends" "(^|, )$dep( |,|$)" "deb Depends: $dep"
done
# The state of the machine the package touches, to restore it exactly.
TOUCHED_DIRS=(/run/nanolet /var/lib/nanolet /var/log/pods /etc/kubernetes/manifests /etc/kubernetes)
created_dirs=()
for d in "${TOUCHED_DIRS[@]}"; do [ -e "$d" ] || created_dirs+=("$d"); done
WANTS=/etc/systemd/system/multi-user.target.wants/nanolet.service
# No package may start its daemon here (as contrib/install-deps.sh does).
policy=/usr/sbin/policy-rc.d
policy_installed=false
deb_installed=false
deb_cleanup() {
        local d
        if $deb_installed; then dpkg -P nanolet >>"$WORK/dpkg.log" 2>&1 || echo "cleanup: dpkg -P nanolet failed" >&2; fi
        # rmdir, not rm -r: only what the package created and left empty.
        for d in "${created_dirs[@]}"; do rmdir "$d" 2>/dev/null || true; done
        if $policy_installed; then rm -f "$policy"; fi
        cleanup
}
trap deb_cleanup EXIT
if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod 755 "$policy"
        policy_installed=true
fi
deb_installed=true
if dpkg -i "$DEB" >"$WORK/dpkg.log" 2>&1 && [ "$(pkg_status)" = installed ]; then
        ok "dpkg -i $(basename "$DEB")"
else
        cat "$WORK/dpkg.log" >&2
        fail "dpkg -i $(basename "$DEB")"
        finish
fi
dpkg -L nanolet >"$WORK/files"
for f in /usr/sbin/nanolet /lib/systemd/system/nanolet.service /usr/lib/tmpfiles.d/nanolet.conf \
        /usr/lib/systemd/network/80-nanolet-veth.link /usr/share/man/man8/nanolet.8.gz /usr/share/man/man5/nanolet-config.5.gz \
        /usr/share/man/man5/nanolet-manifests.5.gz /etc/default/nanolet; do
        line "$WORK/files" "^${f//./\\.}$" "dpkg -L nanolet: $f"
done
if grep -qE '/nanolet/nanolet-agent$' "$WORK/files"; then
        ok "dpkg -L nanolet: the agent executable ($(grep -E '/nanolet/nanolet-agent$' "$WORK/files"))"
else
        fail "dpkg -L nanolet: no nanolet-agent"
fi
line /var/lib/dpkg/info/nanolet.conffiles '^/etc/default/nanolet$' "deb: /etc/default/nanolet is a conffile"
line /lib/systemd/system/nanolet.service '^ExecStart=/usr/sbin/nanolet serve \$NANOLET_OPTS$' \
        "deb unit: ExecStart=/usr/sbin/nanolet"
if out=$(/usr/sbin/nanolet version 2>&1); then ok "/usr/sbin/nanolet version: $out"; else fail "/usr/sbin/nanolet version: $out"; fi
# The installed unit as it is, against the installed binary and man pages.
if out=$(systemd-analyze verify /lib/systemd/system/nanolet.service 2>&1) && [ -z "$out" ]; then
        ok "systemd-analyze verify accepts the installed unit"
else
        fail "systemd-analyze verify /lib/systemd/system/nanolet.service: $out"
fi
if [ -L "$WANTS" ]; then ok "deb: unit enabled (dh_installsystemd)"; else fail "deb: $WANTS missing"; fi
for d in /run/nanolet /var/lib/nanolet /var/log/pods /etc/kubernetes/manifests; do
        if [ -d "$d" ]; then ok "deb postinst (tmpfiles): $d"; else fail "deb postinst: no $d"; fi
done

if dpkg -P nanolet >>"$WORK/dpkg.log" 2>&1; then
        deb_installed=false
        ok "dpkg -P nanolet"
else
        fail "dpkg -P nanolet"
fi
if [ "$(pkg_status)" = not-installed ] && [ ! -e /usr/sbin/nanolet ] && [ ! -e "$WANTS" ] &&
        [ ! -e /etc/default/nanolet ] && [ ! -e /lib/systemd/system/nanolet.service ] &&
        [ -z "$(find /var/lib/systemd/deb-systemd-helper-enabled -name 'nanolet*' 2>/dev/null)" ]; then
        ok "purged: no package, binary, unit, enable link, deb-systemd-helper state or /etc/default/nanolet left"
else
        fail "purge left files behind"
fi

finish
