#!/usr/bin/env bash
# Installs the test tools that come from npm rather than Debian: Sigstore's
# own bundle verifier, which test-signed-manifests uses to show that the
# bundles it signs are the real format. Run with the dependencies, before
# any test, so that no test talks to a registry. Node.js >= 20.17 is
# needed (@sigstore/verify 3); without it nothing is installed and the test
# says so. Prints the node_modules directory it filled, or nothing.
set -euo pipefail

dir=${NANOLET_TEST_NPM_DIR:-/var/cache/nanolet-test/npm}
packages=(@sigstore/verify@3 @sigstore/bundle@4)

command -v node >/dev/null && command -v npm >/dev/null || exit 0
node -e 'const [a, b] = process.versions.node.split(".").map(Number);
process.exit(a > 20 || (a === 20 && b >= 17) ? 0 : 1)' || exit 0
if ! NODE_PATH=$dir/node_modules node -e 'require("@sigstore/verify"); require("@sigstore/bundle")' \
        >/dev/null 2>&1; then
        mkdir -p "$dir"
        npm install --silent --no-audit --no-fund --prefix "$dir" "${packages[@]}" </dev/null >&2
fi
echo "$dir/node_modules"
