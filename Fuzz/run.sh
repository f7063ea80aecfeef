#!/usr/bin/env bash
# Builds the fuzzing executable with libFuzzer and runs one target for a while, adding new
# coverage-increasing inputs to Fuzz/Corpus/TARGET. Crashes are written to Fuzz/Findings/.
#
#   Fuzz/run.sh TARGET SECONDS [extra libFuzzer flags]
#
# Targets: walDecode recovery segmentDecode manifestDecode lz4Block operations recordDecode schemaDecode queryParse
#          schemaChanges encryptedDamage realmFileDecode realmFileDecrypt syncWire
# FUZZ_PORTABLE=1 Fuzz/run.sh TARGET SECONDS runs any target with the engine's Swift LZ4 and XXH3 (what Apple
# platforms use) in place of liblz4 and libxxhash; lz4Block compares the two decoders on every input anyway.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: Fuzz/run.sh TARGET SECONDS}
seconds=${2:-60}
shift 2 || true
# AddressSanitizer is left out: with `--sanitize=fuzzer --sanitize=address` this toolchain's build runs, but
# libFuzzer reports no coverage ("Is the code instrumented for coverage?") and fuzzes blind.
swift build --scratch-path .build-fuzz --sanitize=fuzzer -Xswiftc -DFUZZING --product Fuzz >&2
mkdir -p "Fuzz/Corpus/$target" Fuzz/Findings
# Without Swift's backtracer, libFuzzer's own handler writes the crashing input to Fuzz/Findings.
SWIFT_BACKTRACE=enable=no FUZZ_TARGET="$target" .build-fuzz/debug/Fuzz "Fuzz/Corpus/$target" \
  -max_total_time="$seconds" -max_len=65536 -artifact_prefix="Fuzz/Findings/$target-" -print_final_stats=1 "$@"
