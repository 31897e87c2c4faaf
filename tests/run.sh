#!/bin/sh
# SPDX-License-Identifier: MIT
# Test driver: `make check` runs `tests/run.sh all`.
#   unit         C unit tests (build/tests/test_*)
#   integration  Python tests that start real nodes/clusters (tests/integration/test_*.py)
#   fuzz         replay the checked-in corpora through the fuzz targets (bounded time)
# Environment: SHALE_BUILD (build dir), SHALE_SRC (source dir), TESTS="name ..." to select.
set -u
what=${1:-all}
: "${SHALE_BUILD:?}" "${SHALE_SRC:?}"
export SHALE_BUILD SHALE_SRC
PY=/usr/bin/python3
fail=0
summary=""

run_unit() {
    for t in "$SHALE_BUILD"/tests/test_*; do
        [ -x "$t" ] || continue
        name=$(basename "$t")
        if [ -n "${TESTS:-}" ] && ! echo " $TESTS " | grep -q " $name "; then continue; fi
        out=$(cd "$SHALE_BUILD" && timeout 300 "$t" 2>&1)
        rc=$?
        if [ $rc -eq 0 ]; then
            summary="$summary\nPASS unit/$name ($(echo "$out" | grep -c '^ok'))"
        else
            echo "$out" | grep -E '^(not ok|#)' | head -40
            summary="$summary\nFAIL unit/$name (rc=$rc)"
            fail=1
        fi
    done
}

run_integration() {
    for t in "$SHALE_SRC"/tests/integration/test_*.py; do
        [ -f "$t" ] || continue
        name=$(basename "$t" .py)
        if [ -n "${TESTS:-}" ] && ! echo " $TESTS " | grep -q " $name "; then continue; fi
        start=$(date +%s)
        timeout 900 "$PY" "$t" >"$SHALE_BUILD/$name.log" 2>&1
        rc=$?
        dur=$(( $(date +%s) - start ))
        if [ $rc -eq 0 ]; then
            summary="$summary\nPASS integration/$name (${dur}s)"
        else
            tail -60 "$SHALE_BUILD/$name.log"
            summary="$summary\nFAIL integration/$name (rc=$rc, ${dur}s; log: $SHALE_BUILD/$name.log)"
            fail=1
        fi
    done
}

run_fuzz() {
    if [ -z "${FUZZ_CC:-}" ]; then
        summary="$summary\nSKIP fuzz (no clang with libFuzzer; apt-get install clang libclang-rt-14-dev)"
        return
    fi
    if [ -x "$SHALE_SRC/tests/fuzz/run.sh" ] || [ -f "$SHALE_SRC/tests/fuzz/run.sh" ]; then
        if sh "$SHALE_SRC/tests/fuzz/run.sh" >"$SHALE_BUILD/fuzz.log" 2>&1; then
            summary="$summary\nPASS fuzz"
        else
            tail -40 "$SHALE_BUILD/fuzz.log"
            summary="$summary\nFAIL fuzz (log: $SHALE_BUILD/fuzz.log)"
            fail=1
        fi
    fi
}

case "$what" in
    unit) run_unit ;;
    integration) run_integration ;;
    fuzz) run_fuzz ;;
    all) run_unit; run_integration; run_fuzz ;;
    *) echo "usage: tests/run.sh unit|integration|fuzz|all" >&2; exit 2 ;;
esac
printf "%b\n" "$summary"
[ $fail -eq 0 ] && echo "ALL TESTS PASSED" || echo "SOME TESTS FAILED"
# the closing line CI reads: counts of test files (unit programs,
# integration scripts, the fuzz replay)
npass=$(printf "%b\n" "$summary" | grep -c '^PASS')
nfail=$(printf "%b\n" "$summary" | grep -c '^FAIL')
echo "$npass passed, $nfail failed"
exit $fail
