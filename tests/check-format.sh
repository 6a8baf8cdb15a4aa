#!/usr/bin/env bash
# clang-format --dry-run --Werror over every C source under src/ and tests/.
# Exits 77 (skip) without clang-format. Usage: check-format.sh [CLANG_FORMAT]
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
clang_format=${1:-clang-format}
if ! command -v "$clang_format" >/dev/null 2>&1; then
        echo "clang-format not found; skipping" >&2
        exit 77
fi

checked=0 failed=0
while IFS= read -r -d '' f; do
        f=${f#./}
        checked=$((checked + 1))
        if ! "$clang_format" --dry-run --Werror "$f"; then
                failed=$((failed + 1))
        fi
done < <(find src tests -type f \( -name '*.c' -o -name '*.h' \) -print0 | sort -z)

echo "clang-format: $checked file(s) checked, $failed not formatted"
[[ $failed -eq 0 ]]
