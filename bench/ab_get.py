#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Small GETs from two builds of shaled, with nginx as the reference, in one run.
Use it when a change must not move the data path: a refactor, a new
dependency, a compiler flag.

usage: ab_get.py --a BUILD_DIR --b BUILD_DIR [--size 1024] [--rounds 5] [--duration 6]

Each build serves its own copy of the same objects (uploaded through it). nginx
serves build A's files. Each round runs A, B and nginx, and who goes first
rotates from round to round, so that drift on a shared machine lands on all
three. Every round is printed, then the median of
B/A and of each build against nginx.
"""
import argparse
import os
import shutil
import statistics
import sys
import tempfile

import requests

import http_bench
from http_bench import Nginx, Shaled, wrk


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True, help="build directory of the baseline (holds bin/shaled)")
    ap.add_argument("--b", required=True, help="build directory of the candidate")
    ap.add_argument("--size", type=int, default=1024)
    ap.add_argument("--objects", type=int, default=2000)
    ap.add_argument("--conns", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=6)
    a = ap.parse_args()
    for tool in ("wrk", "nginx"):
        if not shutil.which(tool) and not os.path.exists("/usr/sbin/" + tool):
            sys.exit("ab_get needs %s: ./configure --install-deps --with-bench-deps" % tool)
    os.environ["PATH"] += ":/usr/sbin"
    work = tempfile.mkdtemp(prefix="shale-ab-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    http_bench.LUA_PATH = os.path.join(work, "bench.lua")
    with open(http_bench.LUA_PATH, "w") as f:
        f.write(http_bench.WRK_LUA)
    servers = {}
    ng = None
    try:
        for tag, build in (("A", a.a), ("B", a.b)):
            http_bench.SHALED = os.path.join(build, "bin", "shaled")
            os.makedirs(os.path.join(work, tag))
            servers[tag] = Shaled(os.path.join(work, tag), durable=False)
        ng = Nginx(work, servers["A"].objdir())
        data = os.urandom(a.size)
        s = requests.Session()
        for srv in servers.values():
            for i in range(a.objects):
                s.put(srv.url + "/v1/objects/bench/o-%05d" % i, data=data).raise_for_status()
        runs = {"A": [], "B": [], "nginx": []}
        print("round  %12s %12s %12s   B/A   A/nginx B/nginx" % ("A req/s", "B req/s", "nginx req/s"))
        for rnd in range(a.rounds):
            r = {}
            order = ["A", "B", "nginx"]
            order = order[rnd % 3:] + order[:rnd % 3]  # who goes first rotates
            for tag in order:
                if tag == "nginx":
                    r[tag] = wrk(ng.url, "/obj/o-", a.objects, "GET", a.conns, a.duration, pids=ng.pids())["rps"]
                else:
                    srv = servers[tag]
                    r[tag] = wrk(srv.url, "/v1/objects/bench/o-", a.objects, "GET", a.conns, a.duration,
                                 pids=[srv.proc.pid])["rps"]
            for k in runs:
                runs[k].append(r[k])
            print("%5d  %12.0f %12.0f %12.0f  %5.2f  %6.2f  %6.2f" % (
                rnd + 1, r["A"], r["B"], r["nginx"], r["B"] / r["A"], r["A"] / r["nginx"], r["B"] / r["nginx"]))
        ba = statistics.median(b / x for b, x in zip(runs["B"], runs["A"]))
        an = statistics.median(x / n for x, n in zip(runs["A"], runs["nginx"]))
        bn = statistics.median(b / n for b, n in zip(runs["B"], runs["nginx"]))
        print("median B/A %.2f; A/nginx %.2f; B/nginx %.2f (GET %d B, wrk -t2 -c%d, %d s per run)" % (
            ba, an, bn, a.size, a.conns, a.duration))
    finally:
        if ng:
            ng.stop()
        for srv in servers.values():
            srv.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
