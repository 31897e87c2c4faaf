#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""get-batch figures, each against its reference in the same run:
  1. objects of 1 KiB and 10 KiB spread over 3 targets, batches of 256:
     items/s of get-batch (streaming tar) vs serial GETs of the same items on
     one keep-alive connection (through the gateway, following its redirect,
     as AIStore's clients do)
  2. members of indexed tar shards (archpath): items/s of get-batch
Rounds alternate get-batch and the reference; every round is printed.

usage: get_batch_bench.py [--items 2048] [--rounds 3]
"""
import argparse
import io
import json
import os
import sys
import tarfile
import time

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ishard_bench  # noqa: E402


def batches(names, size):
    return [names[i:i + size] for i in range(0, len(names), size)]


def run_batch(s, url, bucket, items):
    r = s.get(url + "/v1/ml/moss/" + bucket, data=json.dumps({"in": items, "strm": True}), timeout=120)
    r.raise_for_status()
    return len(r.content)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--items", type=int, default=2048)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    with ishard_bench.playground("shale-gb-bench-") as (work, url):
        s = requests.Session()
        for size in (1024, 10240):
            b = "b%d" % size
            s.post(url + "/v1/buckets/" + b, json={"action": "create-bck"}, timeout=30).raise_for_status()
            names = ["o-%05d" % i for i in range(a.items)]
            data = os.urandom(size)
            for n in names:
                s.put(url + "/v1/objects/%s/%s" % (b, n), data=data, timeout=30).raise_for_status()
            print("\n%d objects of %d bytes on 3 targets, batch 256" % (a.items, size))
            print("%-6s %14s %14s %8s" % ("round", "get-batch it/s", "serial GET it/s", "ratio"))
            for rnd in range(a.rounds):
                t0 = time.time()
                for bt in batches(names, 256):
                    run_batch(s, url, b, [{"objname": n} for n in bt])
                gb = a.items / (time.time() - t0)
                t0 = time.time()
                for n in names:
                    s.get(url + "/v1/objects/%s/%s" % (b, n), timeout=30).raise_for_status()
                ser = a.items / (time.time() - t0)
                print("%-6d %14.0f %14.0f %7.1fx" % (rnd + 1, gb, ser, gb / ser))
        # members of indexed shards
        s.post(url + "/v1/buckets/sh", json={"action": "create-bck"}, timeout=30).raise_for_status()
        nsh, per = 12, 512
        for i in range(nsh):
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as tf:
                for j in range(per):
                    ti = tarfile.TarInfo("m-%04d.bin" % j)
                    ti.size = 1024
                    tf.addfile(ti, io.BytesIO(os.urandom(1024)))
            s.put(url + "/v1/objects/sh/s-%02d.tar" % i, data=buf.getvalue(), timeout=60).raise_for_status()
        items = [{"objname": "s-%02d.tar" % (k % nsh), "archpath": "m-%04d.bin" % ((k * 7) % per)}
                 for k in range(nsh * per)]
        print("\narchpath items (1 KiB members of %d indexed tar shards), batch 256" % nsh)
        for rnd in range(a.rounds):
            t0 = time.time()
            for bt in batches(items, 256):
                run_batch(s, url, "sh", bt)
            dt = time.time() - t0
            print("round %d: %.0f items/s in all, %.0f per target" % (rnd + 1, len(items) / dt, len(items) / dt / 3))


if __name__ == "__main__":
    main()
