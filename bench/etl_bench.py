#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Lua ETL figures, each against its reference measured in the same run:
  * inline identity transform vs plain GET of the same objects (1 KiB and
    128 KiB; wrk, 2 threads, direct to a standalone node)
  * sample mode over a 100 MiB WebDataset shard vs a plain GET of the shard
  * offline etl-bck (identity) vs copy-bck of the same bucket, 1 proxy + 3
    targets, and the bucket's rename (move-bck) after them

usage: etl_bench.py [--duration S] [--quick] [--offline-only [--objects N] [--rounds R]]
(--offline-only: the offline part alone, R rounds, for alternating runs of two builds
with SHALE_BUILD=<build dir>)
"""
import argparse
import concurrent.futures
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import threading
import time

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import http_bench  # noqa: E402  (wrk runner, node launcher)

SHALE = os.path.join(http_bench.BUILD, "bin", "shale")
IDENTITY = "function transform(data, ctx) return data end\n"
IDENTITY_SAMPLE = "function transform_sample(s, ctx) return s end\n"


def put_many(url, bucket, names, data, workers=16):
    loc = threading.local()

    def put(n):
        if not hasattr(loc, "s"):
            loc.s = requests.Session()
        r = loc.s.put("%s/v1/objects/%s/%s" % (url, bucket, n), data=data, timeout=120)
        r.raise_for_status()
    with concurrent.futures.ThreadPoolExecutor(workers) as ex:
        list(ex.map(put, names))


def init_etl(url, name, code, mode="object"):
    r = requests.put(url + "/v1/etl", json={"name": name, "runtime": "lua", "code": code, "mode": mode,
                                            "mem_limit": "512MiB"}, timeout=120)
    r.raise_for_status()


def inline(dur):
    work = tempfile.mkdtemp(prefix="shale-etlbench-")
    node = http_bench.Shaled(work, durable=False)
    rows = []
    try:
        init_etl(node.url, "identity", IDENTITY)
        for label, size, n, conns in (("1KiB", 1024, 2000, 64), ("128KiB", 128 * 1024, 400, 64)):
            put_many(node.url, "bench", ["o%s-%05d" % (label, i) for i in range(n)], os.urandom(size))
            prefix = "/v1/objects/bench/o%s-" % label
            # warm-up (Lua states and chunk caches per pool thread)
            http_bench.wrk(node.url, prefix, n, "GET", conns, 2, suffix="?etl_name=identity")
            plain = http_bench.wrk(node.url, prefix, n, "GET", conns, dur, pids=[node.proc.pid])
            etl = http_bench.wrk(node.url, prefix, n, "GET", conns, dur, pids=[node.proc.pid],
                                 suffix="?etl_name=identity")
            for x in (plain, etl):
                if x["non2xx"] or x["errors"]:
                    raise SystemExit("errors during the run: %s %s\n%s" % (x["non2xx"], x["errors"], x["raw"]))
            rows.append((label, plain, etl))
    finally:
        node.stop()
        shutil.rmtree(work, ignore_errors=True)
    return rows


def make_big_shard(path, target_bytes):
    """A WebDataset shard of ~target_bytes: samples of jpg (8 KiB) + cls + json."""
    n = 0
    with tarfile.open(path, "w") as t:
        size = 0
        while size < target_bytes:
            key = "train/%07d" % n
            for ext, data in (("jpg", os.urandom(8192)), ("cls", b"%d" % (n % 37)),
                              ("json", json.dumps({"i": n, "split": "train"}).encode())):
                ti = tarfile.TarInfo("%s.%s" % (key, ext))
                ti.size = len(data)
                t.addfile(ti, io.BytesIO(data))
                size += 512 + ((len(data) + 511) // 512) * 512
            n += 1
    return n


def timed_get(url, params=None, runs=3):
    best = None
    nbytes = 0
    for _ in range(runs):
        t0 = time.time()
        with requests.get(url, params=params, stream=True, timeout=600) as r:
            r.raise_for_status()
            nbytes = 0
            for chunk in r.iter_content(1 << 20):
                nbytes += len(chunk)
        dt = time.time() - t0
        best = dt if best is None else min(best, dt)
    return best, nbytes


def sample_mode(mib):
    work = tempfile.mkdtemp(prefix="shale-etlbench-")
    node = http_bench.Shaled(work, durable=False)
    try:
        path = os.path.join(work, "big.tar")
        nsamples = make_big_shard(path, mib * 1024 * 1024)
        with open(path, "rb") as f:
            requests.put(node.url + "/v1/objects/bench/big.tar", data=f, timeout=600).raise_for_status()
        init_etl(node.url, "ident-sample", IDENTITY_SAMPLE, mode="sample")
        url = node.url + "/v1/objects/bench/big.tar"
        plain_t, plain_b = timed_get(url)
        etl_t, etl_b = timed_get(url, {"etl_name": "ident-sample"})
        return nsamples, (plain_t, plain_b), (etl_t, etl_b)
    finally:
        node.stop()
        shutil.rmtree(work, ignore_errors=True)


def offline(nobj):
    from cluster_bench import free_range  # (8 ports in a row that were free, as the playground needs)
    work = tempfile.mkdtemp(prefix="shale-etlbench-")
    base = free_range(8)
    env = dict(os.environ)
    d = os.path.join(work, "pg")
    url = "http://127.0.0.1:%d" % base
    try:  # (a playground that fails to start half-way is stopped too)
        subprocess.run([SHALE, "playground", "start", "--dir", d, "--port", str(base), "--proxies", "1",
                        "--targets", "3"], check=True, capture_output=True, env=env, timeout=120)
        requests.post(url + "/v1/buckets/src", json={"action": "create-bck"}, timeout=30).raise_for_status()
        put_many(url, "src", ["o-%06d" % i for i in range(nobj)], os.urandom(1024))
        init_etl(url, "identity", IDENTITY)

        def run(action, dst, value):
            t0 = time.time()
            r = requests.post(url + "/v1/buckets/src", params={"bck_to": "ais/@#/%s/" % dst},
                              json={"action": action, "value": value}, timeout=60)
            r.raise_for_status()
            job = r.text
            while True:
                st = requests.get(url + "/v1/cluster", params={"what": "status"}, json={"id": job}, timeout=30).json()
                if st["end_time"]:
                    break
                time.sleep(0.05)
            if st["err"]:
                raise SystemExit("%s failed: %s" % (action, st["err"]))
            return time.time() - t0
        copy_t = run("copy-bck", "dst-copy", {})
        etl_t = run("etl-bck", "dst-etl", {"id": "identity"})
        # the rename of the source: its copy into the new name, then the old name's removal
        t0 = time.time()
        r = requests.post(url + "/v1/buckets/src", params={"bck_to": "ais/@#/src-moved/"},
                          json={"action": "move-bck"}, timeout=60)
        r.raise_for_status()
        for _ in range(36000):
            if requests.head(url + "/v1/buckets/src", timeout=30).status_code == 404:
                break
            time.sleep(0.05)
        else:
            raise SystemExit("move-bck did not end")
        return copy_t, etl_t, time.time() - t0
    finally:
        subprocess.run([SHALE, "playground", "stop", "--dir", d], capture_output=True, timeout=120)
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--offline-only", action="store_true")
    ap.add_argument("--objects", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=1)
    a = ap.parse_args()
    if a.offline_only:
        print("== offline bucket transform, 1 proxy + 3 targets, %d x 1 KiB objects (%s) ==" % (a.objects,
                                                                                         http_bench.BUILD))
        for r in range(a.rounds):
            ct, et2, mt = offline(a.objects)
            print("round %d: copy-bck %.0f objects/s; etl-bck (identity) %.0f objects/s; move-bck %.0f objects/s" %
                  (r + 1, a.objects / ct, a.objects / et2, a.objects / mt), flush=True)
        return
    dur = 3 if a.quick else a.duration
    lua = tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False)
    lua.write(http_bench.WRK_LUA)
    lua.close()
    http_bench.LUA_PATH = lua.name
    try:
        print("== inline transform (identity) vs plain GET, standalone node, wrk -t2 -c64, %ds ==" % dur)
        print("%-8s %12s %12s %7s   %s" % ("SIZE", "GET req/s", "ETL req/s", "RATIO", "GOAL"))
        for label, plain, etl in inline(dur):
            goal = 0.8 if label == "1KiB" else 0.7
            r = etl["rps"] / plain["rps"]
            print("%-8s %12.0f %12.0f %6.2fx   >= %.1fx %s" % (label, plain["rps"], etl["rps"], r, goal,
                                                             "met" if r >= goal else "NOT MET"))
        mib = 32 if a.quick else 100
        print("\n== sample mode (identity transform_sample) over a %d MiB shard vs plain GET ==" % mib)
        ns, (pt, pb), (et, eb) = sample_mode(mib)
        print("samples: %d; plain GET %.1f MB/s; sample-mode ETL %.1f MB/s (%.0f samples/s); ratio %.2fx" %
              (ns, pb / pt / 1e6, eb / et / 1e6, ns / et, (eb / et) / (pb / pt)))
        n = 3000 if a.quick else 20000
        print("\n== offline bucket transform, 1 proxy + 3 targets, %d x 1 KiB objects ==" % n)
        ct, et2, mt = offline(n)
        print("copy-bck %.0f objects/s; etl-bck (identity) %.0f objects/s; ratio %.2fx; move-bck (the rename) %.0f "
              "objects/s" % (n / ct, n / et2, ct / et2, n / mt))
    finally:
        os.unlink(lua.name)


if __name__ == "__main__":
    main()
