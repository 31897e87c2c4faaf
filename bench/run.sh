#!/bin/sh
# SPDX-License-Identifier: MIT
# Run the benchmarks (`make bench`). Each prints its figures next to a
# reference measured in the same run. The references come from Debian:
# ./configure --install-deps --with-bench-deps installs them.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
PATH=$PATH:/usr/sbin
for p in wrk nginx bsdtar; do
    command -v $p >/dev/null 2>&1 || {
        echo "bench: $p is not installed; run ./configure --install-deps --with-bench-deps" >&2
        exit 1
    }
done
echo "== single node: shaled vs nginx =="
/usr/bin/python3 "$HERE/http_bench.py" "$@"
echo "== the floor: GETs in the client shapes of issue 20, CPU per request and per GB =="
/usr/bin/python3 "$HERE/floor_bench.py" "$@"
echo "== cluster: gateway/direct vs nginx, rebalance =="
/usr/bin/python3 "$HERE/cluster_bench.py" "$@"
echo "== shards: member reads, archive creation =="
/usr/bin/python3 "$HERE/archive_bench.py" "$@"
echo "== Lua ETL: inline, sample mode, offline =="
/usr/bin/python3 "$HERE/etl_bench.py" "$@"
echo "== ishard: sharding vs GNU tar, epoch reads as shards vs objects =="
/usr/bin/python3 "$HERE/ishard_bench.py" "$@"
