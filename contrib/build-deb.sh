#!/usr/bin/env bash
# Builds nanolet's Debian package from this source tree:
#   contrib/build-deb.sh OUTDIR
# Debian's tools want debian/ at the source root; nanolet keeps it in
# contrib/debian, so this copies the tree (tracked and untracked files,
# not build directories) to a scratch directory, copies contrib/debian to
# debian/ there and runs `dpkg-buildpackage -us -uc -b`. The .deb (with its
# .buildinfo and .changes) lands in OUTDIR; the scratch copy is removed,
# even on failure. The source tree is not written to.
# DEB_BUILD_OPTIONS passes through, e.g. DEB_BUILD_OPTIONS="nocheck parallel=2"
# (nocheck also selects the nocheck build profile, so cmocka is not needed).
# Needs debhelper, dpkg-dev and the Build-Depends of contrib/debian/control
# (contrib/install-deps.sh installs them); no network.
set -euo pipefail

if [[ $# -ne 1 ]]; then
        echo "usage: $0 OUTDIR" >&2
        exit 2
fi
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)

# The package version is the changelog's; a release bumps both.
meson_version=$(sed -n "s/^ *version *: *'\([^']*\)'.*/\1/p" "$src/meson.build" | head -n 1)
deb_version=$(sed -n '1s/^nanolet (\([^)]*\)).*/\1/p' "$src/contrib/debian/changelog")
if [[ ${deb_version%%-*} != "$meson_version" ]]; then
        echo "build-deb.sh: contrib/debian/changelog is at $deb_version, meson.build at" \
                "$meson_version: add a changelog entry for $meson_version" >&2
        exit 1
fi

scratch=$(mktemp -d /tmp/nanolet-deb.XXXXXX)
trap 'rm -rf "$scratch"' EXIT
tree=$scratch/nanolet-$meson_version
mkdir "$tree"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
        # What git would commit now, without ignored build directories.
        git -C "$src" ls-files -z --cached --others --exclude-standard |
                (cd "$src" && xargs -0 cp --parents -a -t "$tree" 2>/dev/null || true)
        # ls-files --cached still lists files deleted from the work tree:
        # cp skips them (the `|| true`); check that the essentials arrived.
        [[ -f $tree/meson.build && -d $tree/src ]] || { echo "build-deb.sh: copying $src failed" >&2; exit 1; }
else
        tar -C "$src" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$tree" -xf -
fi
rm -rf "$tree/debian"
cp -a "$tree/contrib/debian" "$tree/debian"

profiles=()
if [[ " ${DEB_BUILD_OPTIONS:-} " == *" nocheck "* ]]; then
        profiles=(-Pnocheck)
fi
(cd "$tree" && dpkg-buildpackage -us -uc -b "${profiles[@]}")

shopt -s nullglob
debs=("$scratch"/nanolet_*.deb)
if [[ ${#debs[@]} -eq 0 ]]; then
        echo "build-deb.sh: dpkg-buildpackage made no .deb" >&2
        exit 1
fi
mv -f "$scratch"/nanolet*_*.deb "$scratch"/nanolet_*.buildinfo "$scratch"/nanolet_*.changes "$out"/
ls -1 "$out"/nanolet_"$meson_version"_*.deb
