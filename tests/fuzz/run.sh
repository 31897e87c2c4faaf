#!/bin/sh
# SPDX-License-Identifier: MIT
# Fuzz the shard-format readers: one libFuzzer target per format (tar, tgz,
# zip, tar.lz4), each built from tests/fuzz/fuzz_<t>.c plus the format's own
# sources with $FUZZ_CC -fsanitize=fuzzer,address,undefined.
#
# For every target: replay the checked-in seeds (tests/fuzz/corpus/<t>),
# then fuzz for FUZZ_TIME seconds (default 20) starting from the seeds and
# from what earlier runs found ($SHALE_BUILD/fuzz/corpus_<t>). Binaries,
# the growing corpus, logs and crash artifacts all live under
# $SHALE_BUILD/fuzz; nothing is written into the source tree.
#
# Environment: SHALE_SRC, SHALE_BUILD (set by tests/run.sh / make), FUZZ_CC
# (clang with libFuzzer; unset = skip), FUZZ_TIME, FUZZ_TARGETS="tar zip".
# Exit status: 0 when every target built, replayed and fuzzed without a
# crash, leak, timeout or sanitizer report; 1 otherwise.
set -u
: "${SHALE_SRC:?set SHALE_SRC to the source tree}" "${SHALE_BUILD:?set SHALE_BUILD to the build directory}"

if [ -z "${FUZZ_CC:-}" ]; then
    echo "fuzz: FUZZ_CC is not set (needs clang with libFuzzer: apt-get install clang libclang-rt-14-dev); skipping"
    exit 0
fi

out="$SHALE_BUILD/fuzz"
mkdir -p "$out"
time_s=${FUZZ_TIME:-20}
targets=${FUZZ_TARGETS:-tar tgz zip tarlz4}
arch_cflags=$(pkg-config --cflags libarchive 2>/dev/null)
arch_libs=$(pkg-config --libs libarchive 2>/dev/null || echo -larchive)
cflags="-g -O1 -std=gnu11 -Wall -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined \
-fno-omit-frame-pointer -D_GNU_SOURCE -I$SHALE_SRC/plugins -I$SHALE_SRC/formats $arch_cflags"
fail=0
summary=""

for t in $targets; do
    bin="$out/fuzz_$t"
    seeds="$SHALE_SRC/tests/fuzz/corpus/$t"
    corpus="$out/corpus_$t"
    mkdir -p "$corpus"
    # shellcheck disable=SC2086
    if ! $FUZZ_CC $cflags -o "$bin" "$SHALE_SRC/tests/fuzz/fuzz_$t.c" "$SHALE_SRC/formats/fmt_$t.c" \
        "$SHALE_SRC"/formats/common_*.c $arch_libs -llz4 >"$out/build_$t.log" 2>&1; then
        cat "$out/build_$t.log"
        summary="$summary\nFAIL fuzz/$t: build (log: $out/build_$t.log)"
        fail=1
        continue
    fi
    # 1. replay the seeds: every one must run clean
    if ! "$bin" -runs=0 -timeout=10 "$seeds" >"$out/replay_$t.log" 2>&1; then
        tail -40 "$out/replay_$t.log"
        summary="$summary\nFAIL fuzz/$t: seed replay (log: $out/replay_$t.log)"
        fail=1
        continue
    fi
    # 2. bounded fuzzing; new inputs go to the build-side corpus
    if ! "$bin" -max_total_time="$time_s" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        -artifact_prefix="$out/$t-" -print_final_stats=1 "$corpus" "$seeds" >"$out/fuzz_$t.log" 2>&1; then
        tail -60 "$out/fuzz_$t.log"
        summary="$summary\nFAIL fuzz/$t: crash or sanitizer report (log: $out/fuzz_$t.log, artifacts: $out/$t-*)"
        fail=1
        continue
    fi
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/fuzz_$t.log" | tail -1)
    cov=$(grep -o 'cov: [0-9]*' "$out/fuzz_$t.log" | tail -1)
    summary="$summary\nPASS fuzz/$t: ${runs:-?} runs in ${time_s}s, $cov, corpus $(ls "$corpus" | wc -l) inputs"
done
printf "%b\n" "$summary"
exit $fail
