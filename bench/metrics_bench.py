#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Scrape time of /metrics on a target that holds N objects (default 10^6), against a plain GET /v1/health of
the same node in the same run (the HTTP round trip alone), rounds alternating.

The objects are made by promoting N small files (a promote job on one standalone node: LMDB and mountpath are
as full as N PUTs would leave them, in a fraction of the time).

usage: metrics_bench.py [--objects N] [--rounds N] [--scrapes N]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from harness import Node, wait_until  # noqa: E402


def count(s, url):
    """objects in bucket m, by listing it (names only)"""
    total, token = 0, ""
    while True:
        j = s.get(url + "/v1/buckets/m", json={"action": "list", "value": {"props": "name", "continuation_token":
                                                                           token, "pagesize": 100000}}).json()
        total += len(j.get("entries") or [])
        token = j.get("continuation_token", "")
        if not token:
            return total


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", type=int, default=1000000)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--scrapes", type=int, default=50)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="shale-mbench-")
    src = os.path.join(tmp, "src")
    t0 = time.time()
    for d in range((a.objects + 999) // 1000):
        dd = os.path.join(src, "d%04d" % d)
        os.makedirs(dd)
        for i in range(min(1000, a.objects - d * 1000)):
            with open(os.path.join(dd, "o%03d" % i), "wb") as f:
                f.write(b"x" * 16)
    print("made %d files in %.1fs" % (a.objects, time.time() - t0), flush=True)
    n = Node(tmp, extra_config={"promote": {"dir": src}}).start()
    s = requests.Session()
    try:
        s.post(n.url + "/v1/buckets/m", json={"action": "create-bck"}).raise_for_status()
        t0 = time.time()
        r = s.post(n.url + "/v1/objects/m", json={"action": "promote", "name": src,
                                                  "value": {"src": src, "rcr": True, "dls": True}})
        r.raise_for_status()
        jid = r.text.strip()

        def done():
            j = s.get(n.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid}).json()
            return j.get("end_time", 0) != 0
        wait_until(done, 3600, interval=2, what="promote")
        print("promoted in %.1fs; the bucket holds %s objects" % (time.time() - t0, count(s, n.url)), flush=True)
        shutil.rmtree(src, ignore_errors=True)
        print("round  metrics_ms(p50,max)  health_ms(p50,max)  metrics_bytes")
        for rnd in range(a.rounds):
            res = {}
            for what in (("metrics", "/metrics"), ("health", "/v1/health")) if rnd % 2 == 0 else \
                    (("health", "/v1/health"), ("metrics", "/metrics")):
                ts = []
                for _ in range(a.scrapes):
                    t = time.perf_counter()
                    body = s.get(n.url + what[1]).content
                    ts.append((time.perf_counter() - t) * 1000)
                ts.sort()
                res[what[0]] = (ts[len(ts) // 2], ts[-1], len(body))
            print("%5d  %8.2f %8.2f  %8.2f %8.2f  %d" % (rnd + 1, res["metrics"][0], res["metrics"][1],
                                                        res["health"][0], res["health"][1], res["metrics"][2]),
                  flush=True)
    finally:
        n.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
