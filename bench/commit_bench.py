#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The cost of a cluster metadata change that needs a majority of the gateways: bucket creation (and its
destroy) on a playground of 3 gateways and 2 targets, timed one after another through the primary, for two
builds side by side (A, the baseline, and B). B's primary asks the other gateways first whether it still
has a majority (docs/cluster.md, "Partitions"); A's only asked the gateways it thought online for a newer
map. Rounds alternate which build goes first; every round is printed, then the medians and B/A.

usage: commit_bench.py --a BUILD_DIR [--b BUILD_DIR] [--rounds 3] [--n 100] [--proxies 3]
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cluster_bench import cli, free_range  # noqa: E402


def one(work, tag, build, proxies, n):
    shale = os.path.join(build, "bin", "shale")
    base = free_range(8 + 2 * proxies)
    url = "http://127.0.0.1:%d" % base
    env = dict(os.environ, AIS_ENDPOINT=url)
    pg = os.path.join(work, tag)
    cli(env, "playground", "start", "--dir", pg, "--port", str(base), "--proxies", str(proxies), "--targets", "2",
        shale=shale)
    try:
        requests.put(url + "/v1/cluster", json={"action": "set-config", "value": {"log": {"level": 1}}})
        for _ in range(300):
            sm = requests.get(url + "/v1/daemon?what=smap").json()
            if len(sm["pmap"]) == proxies and len(sm["tmap"]) == 2:
                break
            time.sleep(0.1)
        s = requests.Session()
        mk, rm = [], []
        for i in range(n):
            t0 = time.perf_counter()
            r = s.post(url + "/v1/buckets/cb%04d" % i, json={"action": "create-bck"})
            mk.append(time.perf_counter() - t0)
            r.raise_for_status()
        for i in range(n):
            t0 = time.perf_counter()
            r = s.delete(url + "/v1/buckets/cb%04d" % i, json={"action": "destroy-bck"})
            rm.append(time.perf_counter() - t0)
            r.raise_for_status()
        return statistics.median(mk) * 1e3, statistics.median(rm) * 1e3
    finally:
        cli(env, "playground", "stop", "--dir", pg, shale=shale)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="build directory of the baseline (holds bin/shale, bin/shaled)")
    ap.add_argument("--b", default=os.path.join(HERE, "..", "build"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--n", type=int, default=100, help="buckets per round")
    ap.add_argument("--proxies", type=int, default=3)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="shale-commit-bench-")
    res = {"A": [], "B": []}
    try:
        print("%d gateways, 2 targets; median ms per request over %d buckets" % (a.proxies, a.n))
        print("| round | build | create | destroy |")
        print("|---|---|---|---|")
        for rnd in range(a.rounds):
            order = ("A", "B") if rnd % 2 == 0 else ("B", "A")
            for who in order:
                mk, rm = one(work, "%s%d" % (who, rnd), a.a if who == "A" else a.b, a.proxies, a.n)
                res[who].append((mk, rm))
                print("| %d | %s | %.2f | %.2f |" % (rnd + 1, who, mk, rm), flush=True)
        ma = [statistics.median(x[i] for x in res["A"]) for i in (0, 1)]
        mb = [statistics.median(x[i] for x in res["B"]) for i in (0, 1)]
        print("medians: create A %.2f B %.2f (B/A %.2f); destroy A %.2f B %.2f (B/A %.2f)" %
              (ma[0], mb[0], mb[0] / ma[0], ma[1], mb[1], mb[1] / ma[1]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
