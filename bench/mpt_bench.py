#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Native multipart PUT against a single PUT of the same bytes, one
gateway and 3 targets: a 1 GiB object as 8 parts, 4 uploaded at once
(mpt-upload, parts, mpt-complete, as AIStore's SDK sends them), and as one
PUT. The bytes go with curl (the part files are cut before the clock
starts), to the target the gateway redirects to. MB/s of each, rounds
alternating; every round is printed.

usage: mpt_bench.py [--mib 1024] [--parts 8] [--par 4] [--rounds 3]
"""
import argparse
import concurrent.futures
import json
import os
import sys
import time

import subprocess

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ishard_bench  # noqa: E402

J = {"Content-Type": "application/json"}


def direct(method, url, params=None):
    """the target's URL for this request (the gateway's redirect): a large
    body goes there directly, as clients do"""
    r = requests.request(method, url, params=params, headers=J, data=b"", allow_redirects=False, timeout=60)
    assert r.status_code in (301, 307), (r.status_code, r.text)
    return r.headers["Location"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--parts", type=int, default=8)
    ap.add_argument("--par", type=int, default=4)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    with ishard_bench.playground("shale-mpt-bench-") as (work, url):
        size = a.mib << 20
        src = os.path.join(work, "src.bin")
        with open(src, "wb") as f:
            for _ in range(a.mib):
                f.write(os.urandom(1 << 20))
        psz = (size + a.parts - 1) // a.parts
        pfiles = []
        with open(src, "rb") as f:
            for n in range(a.parts):
                pfiles.append(os.path.join(work, "part-%d" % (n + 1)))
                with open(pfiles[-1], "wb") as out:
                    out.write(f.read(psz))
        requests.post(url + "/v1/buckets/mb", json={"action": "create-bck"}, timeout=30).raise_for_status()
        obj = url + "/v1/objects/mb/big.bin"
        print("%d MiB, %d parts, %d at once; 1 gateway + 3 targets" % (a.mib, a.parts, a.par))
        print("%-6s %12s %12s %8s" % ("round", "single MB/s", "mpt MB/s", "ratio"))
        for rnd in range(a.rounds):
            t0 = time.time()
            subprocess.run(["curl", "-sf", "-T", src, direct("PUT", obj)], check=True, timeout=3600)
            single = size / (time.time() - t0) / 1e6
            t0 = time.time()
            s = requests.Session()
            r = s.post(obj, headers=J, data=json.dumps({"action": "mpt-upload", "name": "", "value": None}))
            r.raise_for_status()
            uid = r.text

            def put_part(n):
                loc = direct("PUT", obj, {"uploadId": uid, "partNumber": n})
                subprocess.run(["curl", "-sf", "-T", pfiles[n - 1], loc], check=True, timeout=3600)
            with concurrent.futures.ThreadPoolExecutor(a.par) as ex:
                list(ex.map(put_part, range(1, a.parts + 1)))
            t_parts = time.time() - t0
            s.post(obj, params={"uploadId": uid}, headers=J, timeout=3600, data=json.dumps(
                {"action": "mpt-complete", "name": "", "value": [{"part-number": n, "etag": ""}
                                                                 for n in range(1, a.parts + 1)]})).raise_for_status()
            dt = time.time() - t0
            mpt = size / dt / 1e6
            print("%-6d %12.0f %12.0f %7.2fx   (parts %.1f s, complete %.1f s)" % (rnd + 1, single, mpt, mpt / single,
                                                                              t_parts, dt - t_parts))


if __name__ == "__main__":
    main()
