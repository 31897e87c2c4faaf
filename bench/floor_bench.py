#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The data path's floor: GETs from one node against nginx on the same files,
with the server's CPU per request (per GB for large objects) and context
switches per request next to every throughput ratio. Optionally a second
build of shaled (A, the baseline) in the same run, to show what a change
moved.

usage: floor_bench.py [--a BUILD_DIR] [--b BUILD_DIR] [--rounds 3] [--duration 6]
                      [--tests get1k-t1c32,get1k-t2c64,get10m-c4,get10m-c1]
                      [--workers-a N] [--workers-b N] [--durable] [--quick]

Client shapes (wrk on loopback, objects picked at random):
  get1k-t1c32   1 KiB among 2,000 objects, one wrk thread, 32 keep-alive connections
  get1k-t2c64   1 KiB among 2,000 objects, two wrk threads, 64 connections (http_bench.py's shape)
  get10m-c4     10 MiB among 24 objects, one wrk thread, 4 connections
  get10m-c1     the same, one connection
  put1k-c32     PUT 1 KiB over 2,000 names, one wrk thread, 32 connections (nginx: its DAV module)
  put128k-c32   PUT 128 KiB over 500 names, the same
Each run also gives wrk's own CPU in the same unit (per GB or per request).
The shaled servers run with write_policy never/delayed (no fsync, as nginx's
DAV), or with --durable at the default (fsync data and metadata), to compare
two builds' PUT at full durability; nginx never fsyncs.
Each round runs every server on a test, and who goes first rotates from round
to round, so that drift on a shared machine lands on all of them. Every round
is printed, then the medians. nginx serves build B's files.
"""
import argparse
import os
import shutil
import statistics
import sys

import requests

import http_bench
from http_bench import Nginx, Shaled, wrk

TESTS = {  # name: (object size, objects, wrk threads, connections)
    "get1k-t1c32": (1024, 2000, 1, 32),
    "get1k-t2c64": (1024, 2000, 2, 64),
    "get10m-c4": (10 << 20, 24, 1, 4),
    "get10m-c1": (10 << 20, 24, 1, 1),
    "put1k-c32": (1024, 2000, 1, 32),
    "put128k-c32": (128 << 10, 500, 1, 32),
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", help="build directory of a baseline shaled (holds bin/shaled)")
    ap.add_argument("--b", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "build"),
                    help="build directory of the shaled under test (default: ../build)")
    ap.add_argument("--workers-a", type=int, default=0, help="net.http.workers for A (0: its default)")
    ap.add_argument("--workers-b", type=int, default=0, help="net.http.workers for B (0: its default)")
    ap.add_argument("--tests", default=",".join(TESTS))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--duration", type=int, default=6)
    ap.add_argument("--durable", action="store_true", help="shaled fsyncs data and metadata (its default)")
    ap.add_argument("--quick", action="store_true", help="one round of 3 s per test")
    a = ap.parse_args()
    if a.quick:
        a.rounds, a.duration = 1, 3
    tests = a.tests.split(",")
    for t in tests:
        if t not in TESTS:
            sys.exit("unknown test %s (known: %s)" % (t, ", ".join(TESTS)))
    os.environ["PATH"] += ":/usr/sbin"
    for tool in ("wrk", "nginx"):
        if not shutil.which(tool):
            sys.exit("floor_bench needs %s: ./configure --install-deps --with-bench-deps" % tool)
    work = http_bench.work_dir("shale-floor-")
    servers = {}
    ng = None
    try:
        for tag, build, w in (("A", a.a, a.workers_a), ("B", a.b, a.workers_b)):
            if build:
                os.makedirs(os.path.join(work, tag))
                servers[tag] = Shaled(os.path.join(work, tag), durable=a.durable,
                                      binary=os.path.join(build, "bin", "shaled"), workers=w)
        ng = Nginx(work, servers["B"].objdir())
        s = requests.Session()
        bodies = {}
        for size, n in sorted({(TESTS[t][0], TESTS[t][1]) for t in tests}):
            data = os.urandom(size)
            bodies[size] = os.path.join(work, "body-%d" % size)
            with open(bodies[size], "wb") as f:
                f.write(data)
            if not any(t.startswith("get") and TESTS[t][0] == size for t in tests):
                continue
            for srv in servers.values():
                for i in range(n):
                    s.put(srv.url + "/v1/objects/bench/%d-%05d" % (size, i), data=data).raise_for_status()
        tags = sorted(servers) + ["nginx"]
        for t in tests:
            size, n, threads, conns = TESTS[t]
            method = "PUT" if t.startswith("put") else "GET"
            body = bodies[size] if method == "PUT" else None
            big = size > 1024 and method == "GET"
            unit = "MiB/s" if big else "req/s"
            cost = "CPU ms/GB" if big else "CPU us/req"
            print("\n%s: %s %d B among %d objects, wrk -t%d -c%d, %d s per run%s" % (
                t, method, size, n, threads, conns, a.duration,
                " (shaled durable, nginx not)" if a.durable and method == "PUT" else ""))
            print("round " + "".join("%31s" % ("%s %s / %s / csw/req / wrk's" % (x, unit, cost)) for x in tags) +
                  "".join("  %s/nginx rate cost" % x for x in sorted(servers)))
            runs = {x: [] for x in tags}
            for rnd in range(a.rounds):
                order = tags[rnd % len(tags):] + tags[:rnd % len(tags)]
                r = {}
                for x in order:
                    if x == "nginx":
                        r[x] = wrk(ng.url, ("/obj/%d-" if method == "GET" else "/dav/%d-") % size, n, method, conns,
                                   a.duration, pids=ng.pids(), threads=threads, rand=True, body=body)
                    else:
                        r[x] = wrk(servers[x].url, ("/v1/objects/bench/%d-" if method == "GET" else
                                                    "/v1/objects/benchput/%d-") % size, n, method, conns,
                                   a.duration, pids=[servers[x].proc.pid], threads=threads, rand=True, body=body)
                    reqs = max(1, r[x]["reqs"])
                    r[x]["rate"] = r[x]["bps"] / 2 ** 20 if big else r[x]["rps"]
                    # per GB of body, or per request
                    r[x]["cost"] = r[x]["cpu"] * 1e3 / (reqs * size / 1e9) if big else r[x]["cpu"] * 1e6 / reqs
                    r[x]["cswr"] = r[x]["csw"] / reqs
                    # the client's CPU in the same unit: on loopback the kernel's delivery of the bytes runs
                    # in whichever context transmits them, the server's or the client's (RESULTS §17.8)
                    r[x]["wcost"] = r[x]["wrk_cpu"] * 1e3 / (reqs * size / 1e9) if big else r[x]["wrk_cpu"] * 1e6 / reqs
                    if r[x]["non2xx"] or r[x]["errors"]:
                        print("  (%s: %d non-2xx, socket errors: %s)" % (x, r[x]["non2xx"], r[x]["errors"]))
                for x in tags:
                    runs[x].append(r[x])
                print("%5d " % (rnd + 1) + "".join("%31s" % ("%.0f / %.1f / %.2f / %.1f" % (
                    r[x]["rate"], r[x]["cost"], r[x]["cswr"], r[x]["wcost"])) for x in tags) +
                      "".join("  %11.2f %5.2f" % (r[x]["rate"] / r["nginx"]["rate"], r[x]["cost"] / r["nginx"]["cost"])
                              for x in sorted(servers)))
            med = {x: (statistics.median(v["rate"] for v in runs[x]), statistics.median(v["cost"] for v in runs[x]))
                   for x in tags}
            ratios = ["%s/nginx: rate %.2f (rounds %s), cost %.2f (rounds %s)" % (
                x, statistics.median(p["rate"] / q["rate"] for p, q in zip(runs[x], runs["nginx"])),
                "/".join("%.2f" % (p["rate"] / q["rate"]) for p, q in zip(runs[x], runs["nginx"])),
                statistics.median(p["cost"] / q["cost"] for p, q in zip(runs[x], runs["nginx"])),
                "/".join("%.2f" % (p["cost"] / q["cost"]) for p, q in zip(runs[x], runs["nginx"])))
                for x in sorted(servers)]
            print("median " + "; ".join("%s %.0f %s, %.1f %s" % (x, med[x][0], unit, med[x][1], cost) for x in tags))
            print("median " + "; ".join(ratios))
    finally:
        if ng:
            ng.stop()
        for srv in servers.values():
            srv.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
