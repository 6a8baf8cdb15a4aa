#!/bin/sh
# splice-settings.sh NANOLET PAGE.scd: prints PAGE.scd with its @SETTINGS@
# line replaced by the settings sections that NANOLET generates from its
# settings table (`nanolet serve --print-settings-man`). Run by
# man/meson.build, so nanolet-config(5) always describes the binary built
# with it.
set -eu
nanolet=$1
page=$2
generated=$("$nanolet" serve --print-settings-man)
# awk reads the generated text from the environment: it holds backslashes
# and asterisks that -v would interpret.
GENERATED=$generated awk '
        $0 == "@SETTINGS@" { print ENVIRON["GENERATED"]; found = 1; next }
        { print }
        END { if (!found) { print "splice-settings.sh: no @SETTINGS@ line" > "/dev/stderr"; exit 1 } }
' "$page"
