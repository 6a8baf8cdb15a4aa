#!/usr/bin/env bash
# clang-format --dry-run --Werror over the C sources under src/ and tests/,
# except those listed in tests/clang-format-exclude.txt. Exits 77 (skip)
# without clang-format. Usage: check-format.sh [CLANG_FORMAT]
set -uo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
clang_format=${1:-clang-format}
if ! command -v "$clang_format" >/dev/null 2>&1; then
        echo "clang-format not found; skipping" >&2
        exit 77
fi

declare -A excluded=()
while read -r line; do
        [[ -z $line || $line == \#* ]] && continue
        excluded[$line]=1
done <tests/clang-format-exclude.txt

checked=0 failed=0
while IFS= read -r -d '' f; do
        f=${f#./}
        [[ -n ${excluded[$f]:-} ]] && continue
        checked=$((checked + 1))
        if ! "$clang_format" --dry-run --Werror "$f"; then
                failed=$((failed + 1))
        fi
done < <(find src tests -type f \( -name '*.c' -o -name '*.h' \) -print0 | sort -z)

for f in "${!excluded[@]}"; do
        [[ -e $f ]] || echo "tests/clang-format-exclude.txt: $f does not exist" >&2
done
echo "clang-format: $checked file(s) checked, $failed not formatted"
[[ $failed -eq 0 ]]
