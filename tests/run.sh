#!/bin/sh
# SPDX-License-Identifier: MIT
# Test driver: `make check` runs `tests/run.sh all`.
#   unit         C unit tests (build/tests/test_*)
#   integration  Python tests that start real nodes/clusters (tests/integration/test_*.py)
#   structure    the floors of server/ from the objects (tests/structure.py)
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

# Integration files run in SHALE_TEST_JOBS lanes (default 2; 1 runs them one after another), the slow ones
# first so that the lanes end together. Each running file holds a lane number k and gets the k-th slice of
# the test port range (SHALE_TEST_PORT_SLICE=k/N, read by harness.free_port_range), so two files never
# pick the same ports.
SLOW_FIRST="test_cluster test_rebalance_batch test_ec test_lossless test_failover test_partition test_bounded test_etl
 test_ops test_s3 test_resilver test_security"

run_one() {  # run_one RESULTS_DIR JOBS FILE: one integration file in a free lane
    res=$1 jobs=$2 t=$3
    name=$(basename "$t" .py)
    k=0
    while [ $k -lt "$jobs" ] && ! mkdir "$res/lane.$k" 2>/dev/null; do k=$((k + 1)); done
    [ $k -lt "$jobs" ] || k=0
    start=$(date +%s)
    SHALE_TEST_PORT_SLICE="$k/$jobs" timeout 900 "$PY" "$t" >"$SHALE_BUILD/$name.log" 2>&1
    echo "$? $(( $(date +%s) - start ))" >"$res/$name.rc"
    rmdir "$res/lane.$k" 2>/dev/null
    return 0
}

run_integration() {
    res="$SHALE_BUILD/itest.results.$$" # (one per run: two runs side by side keep apart)
    rm -rf "$res" && mkdir -p "$res" || return 1
    jobs=${SHALE_TEST_JOBS:-2}
    list=""
    for n in $SLOW_FIRST; do [ -f "$SHALE_SRC/tests/integration/$n.py" ] && list="$list $n"; done
    for t in "$SHALE_SRC"/tests/integration/test_*.py; do
        n=$(basename "$t" .py)
        echo " $list " | grep -q " $n " || list="$list $n"
    done
    sel=""
    for n in $list; do
        if [ -n "${TESTS:-}" ] && ! echo " $TESTS " | grep -q " $n "; then continue; fi
        sel="$sel $SHALE_SRC/tests/integration/$n.py"
    done
    [ -n "$sel" ] || return 0
    echo "$sel" | tr ' ' '\n' | grep . | xargs -P "$jobs" -n 1 sh "$SHALE_SRC/tests/run.sh" _one "$res" "$jobs"
    for t in $sel; do
        name=$(basename "$t" .py)
        rc=1 dur=0
        [ -f "$res/$name.rc" ] && read -r rc dur <"$res/$name.rc"
        if [ "$rc" -eq 0 ]; then
            summary="$summary\nPASS integration/$name (${dur}s)"
        else
            echo "=== $name (rc=$rc) ==="
            tail -60 "$SHALE_BUILD/$name.log"
            summary="$summary\nFAIL integration/$name (rc=$rc, ${dur}s; log: $SHALE_BUILD/$name.log)"
            fail=1
        fi
    done
    rm -rf "$res"
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

# the floors, from the objects (tests/structure.py): no call up a floor, no
# call cycle between files, no source file over 1,500 lines; its self-test
# shows that such a call and such a cycle are caught
run_structure() {
    if out=$("$PY" "$SHALE_SRC/tests/structure.py" --selftest 2>&1) &&
        out="$out
$("$PY" "$SHALE_SRC/tests/structure.py" "$SHALE_BUILD" "$SHALE_SRC" 2>&1)"; then
        summary="$summary\nPASS structure ($(echo "$out" | tail -1 | sed 's/^structure: //'))"
    else
        echo "$out" | grep -v '^  selftest' | head -40
        summary="$summary\nFAIL structure"
        fail=1
    fi
}

case "$what" in
    _one) shift; run_one "$@"; exit 0 ;;
    unit) run_unit; run_structure ;;
    structure) run_structure ;;
    integration) run_integration ;;
    fuzz) run_fuzz ;;
    all) run_unit; run_structure; run_integration; run_fuzz ;;
    *) echo "usage: tests/run.sh unit|structure|integration|fuzz|all" >&2; exit 2 ;;
esac
printf "%b\n" "$summary"
[ $fail -eq 0 ] && echo "ALL TESTS PASSED" || echo "SOME TESTS FAILED"
# the closing line CI reads: counts of test files (unit programs,
# integration scripts, the fuzz replay)
npass=$(printf "%b\n" "$summary" | grep -c '^PASS')
nfail=$(printf "%b\n" "$summary" | grep -c '^FAIL')
echo "$npass passed, $nfail failed"
exit $fail
