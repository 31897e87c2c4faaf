#!/bin/sh
# SPDX-License-Identifier: MIT
# Run the benchmarks (`make bench`). Each prints its figures next to a
# reference measured in the same run. Installs wrk/nginx if missing.
set -eu
HERE=$(cd "$(dirname "$0")" && pwd)
for p in wrk nginx bsdtar; do
    command -v $p >/dev/null 2>&1 || { echo "installing $p"; apt-get install -y -q $([ $p = bsdtar ] && echo libarchive-tools || echo $p) >/dev/null; }
done
echo "== single node: shaled vs nginx =="
/usr/bin/python3 "$HERE/http_bench.py" "$@"
echo "== cluster: gateway/direct vs nginx, rebalance =="
/usr/bin/python3 "$HERE/cluster_bench.py" "$@"
echo "== shards: member reads, archive creation =="
/usr/bin/python3 "$HERE/archive_bench.py" "$@"
echo "== Lua ETL: inline, sample mode, offline =="
/usr/bin/python3 "$HERE/etl_bench.py" "$@"
echo "== ishard: sharding vs GNU tar, epoch reads as shards vs objects =="
/usr/bin/python3 "$HERE/ishard_bench.py" "$@"
