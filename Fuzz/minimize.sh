#!/usr/bin/env bash
# Shrinks Fuzz/Corpus/TARGET to the inputs that keep its coverage (libFuzzer -merge=1), keeping every
# committed crasher (crash-*) and seed (seed-*) as they are.
#
#   Fuzz/minimize.sh TARGET
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: Fuzz/minimize.sh TARGET}
swift build --scratch-path .build-fuzz --sanitize=fuzzer -Xswiftc -DFUZZING --product Fuzz >&2
corpus="Fuzz/Corpus/$target"
fresh=$(mktemp -d)
FUZZ_TARGET="$target" .build-fuzz/debug/Fuzz -merge=1 "$fresh" "$corpus" >&2
find "$corpus" -type f ! -name 'crash-*' ! -name 'seed-*' -delete
cp -n "$fresh"/* "$corpus"/ 2>/dev/null || true
rm -rf "$fresh"
echo "$target: $(ls "$corpus" | wc -l) inputs"
