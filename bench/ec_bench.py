#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Erasure coding figures (1 gateway + 4 targets on loopback, same machine):

  * PUT and GET throughput of OBJ-size objects (10 MiB) into a plain bucket
    and an EC 2+1 bucket, alternating rounds, every round printed. An EC PUT
    is acknowledged after the local write (encoding is asynchronous), so the
    "PUT+encode" figure also times until every object's slices are out
    (HEAD shows Ais-Ec-Data).
  * After kill -9 of a target: GET of the objects it owned (each rebuilt
    from slices on the next target, first read), MB/s.
  * Then decommission it: time until every object has its slices again on
    the survivors (ec-encode after the rebalance), per GiB of the dead
    target's data (main objects + slices it held).

usage: ec_bench.py [--objs N] [--size BYTES] [--rounds N] [--threads N]
"""
import argparse
import glob
import hashlib
import os
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
os.environ.setdefault("SHALE_BUILD", os.path.join(HERE, "..", "build"))
from harness import Cluster, wait_until  # noqa: E402
from test_cluster import hrw_owner  # noqa: E402

S = requests.Session()


def act(url, method, path, action, value=None):
    r = S.request(method, url + path, json={"action": action, "value": value}, timeout=60)
    r.raise_for_status()
    return r


def put_round(url, b, names, blob, threads):
    def one(n):
        r = requests.put(url + "/v1/objects/%s/%s" % (b, n), data=blob, timeout=300)
        r.raise_for_status()
    t0 = time.time()
    with ThreadPoolExecutor(threads) as ex:
        list(ex.map(one, names))
    return time.time() - t0


def get_round(url, b, names, threads, want=None):
    def one(n):
        r = requests.get(url + "/v1/objects/%s/%s" % (b, n), timeout=300)
        r.raise_for_status()
        if want and hashlib.sha256(r.content).hexdigest() != want:
            raise RuntimeError("%s: wrong content" % n)
        return len(r.content)
    t0 = time.time()
    with ThreadPoolExecutor(threads) as ex:
        total = sum(ex.map(one, names))
    return time.time() - t0, total


def encoded(url, b, n):
    r = S.head(url + "/v1/objects/%s/%s" % (b, n), allow_redirects=True, timeout=30)
    return r.status_code == 200 and "Ais-Ec-Data" in r.headers


def holders(c, b, name, alive):
    h = hashlib.sha256(name.encode()).hexdigest()
    return sum(1 for t in alive if glob.glob(os.path.join(c.dir, t, "**", "@ais", b, "%ec", h), recursive=True))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--objs", type=int, default=16)
    ap.add_argument("--size", type=int, default=10 * 1024 * 1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=4)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="shale-ecb-")
    c = Cluster(tmp, proxies=1, targets=4).start()
    url = c.url
    try:
        wait_until(lambda: len(c.smap()["tmap"]) == 4, 30, what="4 targets")
        act(url, "POST", "/v1/buckets/plain", "create-bck")
        act(url, "POST", "/v1/buckets/ecb", "create-bck")
        act(url, "PATCH", "/v1/buckets/ecb", "set-bprops", {"ec": {"enabled": True, "data_slices": 2,
                                                                   "parity_slices": 1, "objsize_limit": 262144}})
        blob = os.urandom(a.size)
        want = hashlib.sha256(blob).hexdigest()
        mb = a.objs * a.size / 1e6
        res = {"plain put": [], "ec put": [], "ec put+encode": [], "plain get": [], "ec get": []}
        print("%d x %d-byte objects per round, %d client threads, 1 gateway + 4 targets, EC 2+1" %
              (a.objs, a.size, a.threads))
        for rnd in range(a.rounds):
            for b in ("plain", "ecb") if rnd % 2 == 0 else ("ecb", "plain"):
                names = ["r%d/o%03d" % (rnd, i) for i in range(a.objs)]
                t = put_round(url, b, names, blob, a.threads)
                k = "plain" if b == "plain" else "ec"
                res[k + " put"].append(mb / t)
                line = "round %d %-5s PUT %7.1f MB/s" % (rnd, k, mb / t)
                if b == "ecb":
                    t0 = time.time() - t
                    for n in names:
                        wait_until(lambda: encoded(url, b, n), 300, interval=0.05, what="encoded")
                    te = time.time() - t0
                    res["ec put+encode"].append(mb / te)
                    line += "  PUT+encode %7.1f MB/s" % (mb / te)
                tg, total = get_round(url, b, names, a.threads, want)
                res[k + " get"].append(total / 1e6 / tg)
                line += "  GET %7.1f MB/s" % (total / 1e6 / tg)
                print(line, flush=True)
        for k, v in res.items():
            print("median %-14s %7.1f MB/s" % (k, sorted(v)[len(v) // 2]))
        # a target lost: reads rebuild (the plain bucket goes first: its objects would be lost with it)
        act(url, "DELETE", "/v1/buckets/plain", "destroy-bck")
        smap = c.smap()
        allnames = ["r%d/o%03d" % (r, i) for r in range(a.rounds) for i in range(a.objs)]
        per = {}
        for n in allnames:
            per.setdefault(hrw_owner(smap, "ecb", n)["daemon_id"], []).append(n)
        victim = max(per, key=lambda t: len(per[t]))
        vname = None
        for n in c.topology()["nodes"]:
            if n["role"] == "target":
                try:
                    if requests.get("http://127.0.0.1:%d/v1/daemon?what=snode" % n["port"],
                                    timeout=2).json()["daemon_id"] == victim:
                        vname = n["name"]
                except requests.RequestException:
                    pass
        vbytes = sum(os.path.getsize(f) for f in glob.glob(os.path.join(c.dir, vname, "**", "@ais", "ecb", "**"),
                                                              recursive=True) if os.path.isfile(f))
        c.kill9(vname)
        wait_until(lambda: c.smap()["tmap"][victim].get("flags", 0) & (1 << 16), 30, what="victim offline")
        # half of its objects are read now (rebuilt by the GET), the rest is left to the ec-encode after the
        # decommission
        half = per[victim][:len(per[victim]) // 2]
        tg, total = get_round(url, "ecb", half, a.threads, want)
        print("degraded GET (rebuilt from slices on first read): %d objects, %7.1f MB/s" %
              (len(half), total / 1e6 / tg))
        tg, total = get_round(url, "ecb", half, a.threads, want)
        print("the same objects again (rebuilt again: a stand-in keeps no copy): %7.1f MB/s" % (total / 1e6 / tg))
        # decommissioned: back to full redundancy on the survivors
        alive = [n["name"] for n in c.topology()["nodes"] if n["role"] == "target" and n["name"] != vname]
        t0 = time.time()
        act(url, "PUT", "/v1/cluster", "decommission-node", {"sid": victim, "no_shutdown": True})
        rest = per[victim][len(half):]  # not read since the loss: the scan must rebuild them on a survivor

        def rebuilt(n):
            return any(os.path.isfile(os.path.join(c.dir, t, "mp1", "@ais", "ecb", "%ob", n)) for t in alive)
        for n in rest:
            wait_until(lambda: rebuilt(n), 600, interval=0.05, what="rebuilt " + n)
        for n in allnames:
            wait_until(lambda: holders(c, "ecb", n, alive) >= 2, 600, interval=0.05, what="slices of " + n)
        t = time.time() - t0
        print("decommission -> the %d unread objects of the dead target rebuilt on the survivors and every object "
              "has its slices again: %.1f s for %.2f GiB held by the dead target (%.1f s/GiB)" %
              (len(rest), t, vbytes / 2**30, t / (vbytes / 2**30)))
        tg, total = get_round(url, "ecb", allnames, a.threads, want)
        print("all %d objects read back after: %7.1f MB/s" % (len(allnames), total / 1e6 / tg))
    finally:
        c.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
