#!/bin/sh
# SPDX-License-Identifier: MIT
# Run the benchmarks (`make bench`), each once, in the order of the list below: all of them, or the ones
# named as arguments or in $BENCH:
#   sh bench/run.sh floor s3      BENCH="floor s3" sh bench/run.sh      make bench BENCH="floor s3"
# Every other argument goes to each Python benchmark that runs (e.g. `sh bench/run.sh http floor --quick`;
# the benchmarks take different flags, so name the ones that take it). Each prints its figures, to this
# script's output, next to a reference measured in the same run; the references come from Debian:
# ./configure --install-deps --with-bench-deps installs them. A failing benchmark does not stop the others:
# the failures are listed at the end and the exit status is 1.
# Environment: SHALE_BUILD (the build directory; `make bench` sets it), BENCH_DIR (the benchmarks' data,
# default /var/tmp), BENCH_BEFORE (for dirsync: a shaled built without the directory fsync; a run of all
# without it skips dirsync).
# Not benchmarks themselves: loadgen.c (the libcurl load generator some of them build) and slow_remote.py
# (the rate-limited remote of backend --slow-mbps).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
: "${SHALE_BUILD:=$HERE/../build}"
export SHALE_BUILD
PATH=$PATH:/usr/sbin
PY=/usr/bin/python3

# The benchmarks: name (bench/NAME_bench.py; s3sig: bench/s3sig_bench.c) | what it needs (on PATH, or py:MODULE)
# | what it measures, and roughly how long it runs at its defaults on a 2-CPU machine.
list() {
    cat <<'EOF'
http      | wrk nginx curl       | one node vs nginx: GET/PUT 1 KiB..10 MiB, CPU/GB, RSS while 4 GiB streams (~10 min)
floor     | wrk nginx            | the floor: six client shapes vs nginx, CPU and switches per request (~8 min)
cluster   | nginx cc             | 1 KiB GET via gateway/direct vs nginx; rebalance, small and large (~15 min)
archive   | wrk tar bsdtar       | a member of a 1 GiB tar vs a GET; archive job vs GNU tar, bsdtar (~5 min)
etl       | wrk                  | Lua ETL inline vs GET, sample mode on a shard, etl-bck vs copy-bck (~8 min)
etl_image | curl dd py:torchvision | image ETL (decode, resize, crop, normalise) vs PIL+torchvision per CPU-second (~3 min)
ishard    | tar cc               | ishard of 100k small files vs GNU tar; an epoch as objects vs shards (~15 min)
dsort     | dd                   | dsort of 2 GiB of shards vs cat+dd and a Python reshuffle; RSS (~15 min)
get_batch |                      | get-batch of small objects and of tar members vs serial GETs (~3 min)
plan      | py:torch             | PyTorch DataLoader on epoch-plan batches vs shard reads (~5 min)
mpt       | curl                 | native multipart PUT of 1 GiB (8 parts, 4 at once) vs one PUT (~5 min)
listrange |                      | delete-listrange of 100k objects vs one DELETE at a time (~5 min)
summary   |                      | summary-bck vs a full paged listing of 100k objects (~5 min)
s3        | curl aws cc py:boto3 | /s3 GETs vs native; 1 GiB aws s3 cp vs curl; SigV4 CPU (~10 min)
backend   | curl aws             | remote bucket: cold/warm 1 GiB GET vs curl; prefetch vs s3 sync (~15 min)
auth      | cc                   | what tokens (--auth) and TLS (--https) cost on GETs (~5 min)
metrics   |                      | /metrics of a target holding 10^6 objects vs GET /v1/health (~10 min)
failover  |                      | kill -9 of the primary: time to a new primary, to a bucket create (~5 min)
ec        |                      | EC 2+1 PUT/GET of 10 MiB vs plain, degraded GETs, rebuild (~5 min)
dirsync   | wrk                  | durable PUT with vs without the directory fsync; BENCH_BEFORE (~3 min)
s3sig     |                      | SigV4 verification of a GET in us vs SHA-256 of 1 KiB (C; seconds)
s3_features | cc py:boto3        | S3 GET/PUT with versioning, SSE-S3, a 20-statement policy vs plain /s3 (~10 min)
scale     |                      | one target's cost at 10^5..10^6 objects (--sizes: to 10^7): rates, list, summary, start, RSS, LMDB (~40 min)
scale_cluster |                  | 3..24 targets: metadata change, balance, rebalance moved/ideal, failover (~8 min)
scale_shards |                   | dsort/epoch plan of 10^3..10^5 shards, ishard of 10^4..10^6 files: time, RSS (~60 min)
EOF
}

names=$(list | awk -F'|' '{ gsub(/ /, "", $1); printf "%s%s", (NR > 1 ? " " : ""), $1 }')
what() { list | awk -F'|' -v n="$1" '{ gsub(/ /, "", $1) } $1 == n { gsub(/^ +| +$/, "", $3); print $3 }'; }
needs() { list | awk -F'|' -v n="$1" '{ gsub(/ /, "", $1) } $1 == n { print $2 }'; }

# the arguments: benchmark names select; options, and the word after an option (its value), stay in "$@"
# for the benchmarks
sel=${BENCH:-}
prev=""
n=$#
while [ "$n" -gt 0 ]; do
    a=$1
    shift
    n=$((n - 1))
    case " $names " in
        *" $a "*) sel="$sel $a" ;;
        *)
            case $a$prev in
                -* | *-) set -- "$@" "$a" ;;
                *) echo "bench: no benchmark $a (known: $names)" >&2; exit 2 ;;
            esac ;;
    esac
    case $a in -*) prev=- ;; *) prev="" ;; esac
done
all=1
for b in $sel; do
    all=0
    case " $names " in
        *" $b "*) ;;
        *) echo "bench: no benchmark $b (known: $names)" >&2; exit 2 ;;
    esac
done
[ $all = 0 ] || sel=$names

# what the selected benchmarks need, before any starts
missing=""
run=""
for b in $sel; do
    if [ "$b" = dirsync ] && [ -z "${BENCH_BEFORE:-}" ]; then
        if [ $all = 1 ]; then
            echo "bench: skipping dirsync (set BENCH_BEFORE to a shaled built without the directory fsync)" >&2
            continue
        fi
        missing="$missing\n  dirsync: BENCH_BEFORE=PATH/TO/OLD/shaled"
    fi
    for t in $(needs "$b"); do
        case $t in
            py:*) "$PY" -c "import ${t#py:}" 2>/dev/null || missing="$missing\n  $b: python3 module ${t#py:}" ;;
            *) command -v "$t" >/dev/null 2>&1 || missing="$missing\n  $b: $t" ;;
        esac
    done
    run="$run $b"
done
if [ -n "$missing" ]; then
    printf "bench: missing:%b\n(./configure --install-deps --with-bench-deps installs the tools and modules)\n" \
        "$missing" >&2
    exit 1
fi

run_one() { # run_one NAME ARGS...: one benchmark
    name=$1
    shift
    case $name in
        s3sig)
            exe=$SHALE_BUILD/bench/s3sig_bench
            [ -x "$exe" ] || make -C "$(dirname "$SHALE_BUILD")" "$(basename "$SHALE_BUILD")/bench/s3sig_bench" >&2 ||
                return 1
            "$exe" ;;
        dirsync) "$PY" "$HERE/dirsync_bench.py" --before "$BENCH_BEFORE" "$@" ;;
        *) "$PY" "$HERE/${name}_bench.py" "$@" ;;
    esac
}

failed=""
for b in $run; do
    echo "== $b: $(what "$b") =="
    run_one "$b" "$@" </dev/null || failed="$failed $b"
done
if [ -n "$failed" ]; then
    echo "bench: failed:$failed" >&2
    exit 1
fi
