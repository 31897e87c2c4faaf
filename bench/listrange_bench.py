#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""delete-listrange of N objects on 1 gateway + 3 targets: objects/s of the
job (from the request to the end of the job), against deleting a sample of
the same objects one DELETE at a time on one keep-alive connection, in the
same run.

usage: listrange_bench.py [--objects 100000] [--sample 3000]
"""
import argparse
import json
import os
import sys
import time

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ishard_bench  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", type=int, default=100000)
    ap.add_argument("--sample", type=int, default=3000)
    a = ap.parse_args()
    with ishard_bench.playground("shale-lr-bench-") as (work, url):
        src = ishard_bench.tiny_files(work, a.objects, "o-%06d")
        t0 = time.time()
        ishard_bench.upload_tree(url, "lr", src)
        print("%d objects put in %.1f s" % (a.objects, time.time() - t0))
        s = requests.Session()
        t0 = time.time()
        for i in range(a.sample):
            s.delete(url + "/v1/objects/lr/o-%06d" % i, timeout=30).raise_for_status()
        ser = a.sample / (time.time() - t0)
        t0 = time.time()
        r = s.delete(url + "/v1/buckets/lr", timeout=60, headers={"Content-Type": "application/json"},
                     data=json.dumps({"action": "delete-listrange", "value": {"template": "o-{%06d..%06d}" % (
                         a.sample, a.objects - 1)}}))
        r.raise_for_status()
        jid = r.text
        while True:
            st = s.get(url + "/v1/cluster", params={"what": "status"}, json={"ID": jid}, timeout=30).json()
            if st.get("end_time"):
                break
            time.sleep(0.05)
        dt = time.time() - t0
        n = a.objects - a.sample
        assert not st.get("err"), st
        print("delete-listrange: %d objects in %.2f s = %.0f objects/s; one DELETE at a time: %.0f objects/s "
              "(%.1fx)" % (n, dt, n / dt, ser, n / dt / ser))


if __name__ == "__main__":
    main()
