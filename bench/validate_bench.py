#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What checksum.validate_warm_get=true costs a GET: one standalone node (no fsync), two buckets with the
same objects, one with the check off (the default) and one with it on (every GET hashes the object's bytes
against its stored checksum, xxhash by default, before answering; docs/storage.md). wrk on loopback, objects
picked at random, the two buckets alternately (which goes first alternates); every round is printed, then
the medians and on/off.

usage: validate_bench.py [--rounds 5] [--duration 5] [--tests get1k,get10m]
"""
import argparse
import os
import statistics
import sys

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from http_bench import Shaled, work_dir, wrk  # noqa: E402

TESTS = {"get1k": (1024, 2000, 2, 64), "get10m": (10 << 20, 24, 1, 4)}  # size, objects, wrk threads, conns


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--tests", default=",".join(TESTS))
    a = ap.parse_args()
    work = work_dir("shale-validate-bench-")
    srv = Shaled(work, False)
    s = requests.Session()
    try:
        for b, on in (("off", False), ("on", True)):
            s.post(srv.url + "/v1/buckets/" + b, json={"action": "create-bck"}).raise_for_status()
            s.patch(srv.url + "/v1/buckets/" + b, json={"action": "set-bprops", "value": {
                "checksum": {"validate_warm_get": on}}}).raise_for_status()
        for t in a.tests.split(","):
            size, n, threads, conns = TESTS[t]
            data = os.urandom(size)
            for b in ("off", "on"):
                for i in range(n):
                    s.put(srv.url + "/v1/objects/%s/%d-%05d" % (b, size, i), data=data).raise_for_status()
            big = size > 1024
            unit = "MiB/s" if big else "req/s"
            print("\n%s: GET %d B among %d objects, wrk -t%d -c%d, %d s per run" % (t, size, n, threads, conns,
                                                                                 a.duration))
            print("| round | off %s | on %s | on/off | on: server CPU per %s |" % (unit, unit, "GB (s)" if big else
                                                                                   "request (us)"))
            print("|---|---|---|---|---|")
            rates = {"off": [], "on": []}
            for rnd in range(a.rounds):
                r = {}
                for b in (("off", "on") if rnd % 2 == 0 else ("on", "off")):
                    x = wrk(srv.url, "/v1/objects/%s/%d-" % (b, size), n, "GET", conns, a.duration,
                            pids=[srv.proc.pid], threads=threads, rand=True)
                    if x["non2xx"] or x["errors"]:
                        raise RuntimeError("%s/%s: %d non-2xx, errors %s" % (t, b, x["non2xx"], x["errors"]))
                    x["rate"] = x["bps"] / 2 ** 20 if big else x["rps"]
                    x["cost"] = x["cpu"] / (x["reqs"] * size / 1e9) if big else x["cpu"] * 1e6 / max(1, x["reqs"])
                    r[b] = x
                    rates[b].append(x["rate"])
                print("| %d | %.0f | %.0f | %.2f | %.2f |" % (rnd + 1, r["off"]["rate"], r["on"]["rate"],
                                                              r["on"]["rate"] / r["off"]["rate"], r["on"]["cost"]),
                      flush=True)
            mo, mn = statistics.median(rates["off"]), statistics.median(rates["on"])
            print("median: off %.0f, on %.0f %s (on/off %.2f)" % (mo, mn, unit, mn / mo))
    finally:
        srv.stop()


if __name__ == "__main__":
    main()
