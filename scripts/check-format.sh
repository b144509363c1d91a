#!/usr/bin/env bash
# Fails when a C++/CUDA file tracked by git is not in the house format (.clang-format).
# Fix with: git ls-files '*.cpp' '*.h' '*.inc' '*.cu' '*.cuh' | xargs clang-format -i
# Usage: scripts/check-format.sh            (CLANG_FORMAT overrides the binary)
set -euo pipefail
cd "$(dirname "$0")/.."
CLANG_FORMAT=${CLANG_FORMAT:-clang-format}
if ! command -v "$CLANG_FORMAT" >/dev/null; then
  echo "check-format: $CLANG_FORMAT not found (apt-get install clang-format)" >&2
  exit 2
fi
bad=$(git ls-files '*.cpp' '*.h' '*.inc' '*.cu' '*.cuh' | while read -r f; do
  "$CLANG_FORMAT" --dry-run --Werror "$f" >/dev/null 2>&1 || echo "$f"
done)
if [ -n "$bad" ]; then
  echo "check-format: not formatted ($(echo "$bad" | wc -l) files); run clang-format -i on:" >&2
  echo "$bad" | sed 's/^/  /' >&2
  exit 1
fi
echo "check-format: $(git ls-files '*.cpp' '*.h' '*.inc' '*.cu' '*.cuh' | wc -l) files in the house format"
