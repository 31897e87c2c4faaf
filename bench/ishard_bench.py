#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""ishard figures, each against its reference measured in the same run:
  1. sharding N small files (1-100 KiB, random sizes) with 1 target
     (standalone node) and with 3 targets, vs GNU tar packing the same files
     on the same disk: files/s and MB/s
  2. one epoch of 1 KiB samples read as the original objects vs as shards of
     128 KiB ... 512 MiB (3 targets, every GET through the gateway, following
     its redirect, libcurl load generator): samples/s

usage: ishard_bench.py [--files N] [--epoch-samples N] [--quick]
"""
import argparse
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cluster_bench  # noqa: E402
import http_bench  # noqa: E402

SHALE = os.path.join(http_bench.BUILD, "bin", "shale")


def make_files(root, n, lo, hi, seed=1):
    rnd = random.Random(seed)
    pool = os.urandom(hi + 4096)
    total = 0
    for i in range(n):
        d = os.path.join(root, "d%03d" % (i // 1000))
        if i % 1000 == 0:
            os.makedirs(d, exist_ok=True)
        sz = rnd.randint(lo, hi)
        off = rnd.randint(0, 4096)
        with open(os.path.join(d, "f%06d.jpg" % i), "wb") as f:
            f.write(pool[off:off + sz])
        total += sz
    return total


def gnu_tar(src, out):
    t0 = time.time()
    subprocess.run(["tar", "-cf", out, "-C", src, "."], check=True)
    dt = time.time() - t0
    os.unlink(out)
    return dt


def start_pg(work, name, targets):
    base = cluster_bench.free_range(targets + 10)
    d = os.path.join(work, name)
    args = ["playground", "start", "--dir", d, "--port", str(base)]
    if targets > 1:
        args += ["--proxies", "1", "--targets", str(targets)]
    pin = os.environ.get("BENCH_SERVER_CPUS")  # e.g. "0": the nodes on their own CPUs
    subprocess.run((["taskset", "-c", pin] if pin else []) + [SHALE] + args, check=True, capture_output=True,
                   timeout=300)
    return d, "http://127.0.0.1:%d" % base


def stop_pg(d):
    subprocess.run([SHALE, "playground", "stop", "--dir", d], capture_output=True, timeout=300)


@contextlib.contextmanager
def playground(prefix, targets=3):
    """A work directory (under $BENCH_DIR, default /var/tmp) and a playground
    of 1 gateway + targets in it: yields (work, url); both are gone after."""
    work = tempfile.mkdtemp(prefix=prefix, dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    pg = None
    try:
        pg, url = start_pg(work, "pg", targets)
        yield work, url
    finally:
        if pg:
            stop_pg(pg)
        shutil.rmtree(work, ignore_errors=True)


def tiny_files(work, n, fmt="o-%07d"):
    """n one-byte files named fmt % i in work/src (returned)"""
    src = os.path.join(work, "src")
    os.makedirs(src)
    for i in range(n):
        with open(os.path.join(src, fmt % i), "wb") as f:
            f.write(b"x")
    return src


def upload_tree(url, bucket, root):
    requests.post(url + "/v1/buckets/" + bucket, json={"action": "create-bck"}, timeout=30).raise_for_status()
    env = dict(os.environ, AIS_ENDPOINT=url)
    subprocess.run([SHALE, "put", root, "ais://%s/" % bucket, "-r", "-y", "--num-workers", "16"], check=True,
                   capture_output=True, env=env, timeout=7200)


def ishard(url, msg):
    t0 = time.time()
    r = requests.post(url + "/v1/ishard", json=msg, timeout=120)
    r.raise_for_status()
    job = r.text
    while True:
        st = requests.get(url + "/v1/ishard/" + job, timeout=60).json()
        if st["state"] not in ("planning", "running"):
            break
        time.sleep(0.05)
    if st["state"] != "finished":
        raise SystemExit("ishard %s: %s %s" % (job, st["state"], st["err"]))
    return time.time() - t0, st


def shard_throughput(work, nfiles):
    src = os.path.join(work, "files")
    total = make_files(src, nfiles, 1024, 100 * 1024)
    tar_t = gnu_tar(src, os.path.join(work, "ref.tar"))
    rows = [("GNU tar", tar_t)]
    for targets in (1, 3):
        d, url = start_pg(work, "pg%d" % targets, targets)
        try:
            upload_tree(url, "raw", src)
            dt, st = ishard(url, {"src_bck": "ais://raw", "dst_bck": "ais://out", "shard_size": "256MiB",
                                  "sample_key_pattern": "full_name"})
            assert st["report"]["samples"] == nfiles, st["report"]
            rows.append(("ishard, %d target%s" % (targets, "s" if targets > 1 else ""), dt))
        finally:
            stop_pg(d)
    shutil.rmtree(src, ignore_errors=True)
    return nfiles, total, rows


def epoch(work, nsamples, secs):
    exe = cluster_bench.build_loadgen(work)
    d, url = start_pg(work, "pge", 3)
    out = []
    try:
        requests.post(url + "/v1/buckets/s1k", json={"action": "create-bck"}, timeout=30).raise_for_status()
        cluster_bench.put_many(url, "s1k", ["s/%07d.bin" % i for i in range(nsamples)], os.urandom(1024))
        urls = ["%s/v1/objects/s1k/s/%07d.bin" % (url, i) for i in range(nsamples)]
        obj = cluster_bench.load(exe, urls, work, 32, secs, True)
        out.append(("objects (1 KiB each)", 1, obj["rps"], obj["rps"] * 1024))
        for label, size in (("128KiB", "128KiB"), ("1MiB", "1MiB"), ("8MiB", "8MiB"), ("64MiB", "64MiB"),
                            ("512MiB", "512MiB")):
            bk = "sh-" + label.lower()
            dt, st = ishard(url, {"src_bck": "ais://s1k", "dst_bck": "ais://" + bk, "shard_size": size,
                                  "sample_key_pattern": "full_name"})
            nsh = st["report"]["shards"]
            per = nsamples / nsh
            r = requests.get(url + "/v1/buckets/" + bk, json={"action": "list", "value": {"props": "name"}},
                             timeout=60).json()
            surls = ["%s/v1/objects/%s/%s" % (url, bk, e["name"]) for e in r["entries"]]
            res = cluster_bench.load(exe, surls, work, min(32, max(2, nsh)), secs, True)
            out.append(("shards of %s (%d shards, %.0f samples each)" % (label, nsh, per), per, res["rps"] * per,
                        res["bytes"] / max(res["seconds"], 1e-9)))
    finally:
        stop_pg(d)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100000)
    ap.add_argument("--epoch-samples", type=int, default=50000)
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.files, a.epoch_samples, a.duration = 5000, 5000, 3
    work = tempfile.mkdtemp(prefix="shale-ishbench-", dir=os.environ.get("BENCH_DIR"))
    try:
        n, total, rows = shard_throughput(work, a.files)
        print("== sharding %d files (1-100 KiB, %.1f MB) into 256 MiB tar shards ==" % (n, total / 1e6))
        tar_t = rows[0][1]
        print("%-22s %10s %10s %10s %8s" % ("", "seconds", "files/s", "MB/s", "vs tar"))
        for label, t in rows:
            print("%-22s %10.2f %10.0f %10.1f %7.2fx" % (label, t, n / t, total / t / 1e6, tar_t / t))
        print("(goal: ishard >= 0.5x GNU tar)")
        print("\n== one epoch of %d 1 KiB samples, 3 targets, through the gateway ==" % a.epoch_samples)
        res = epoch(work, a.epoch_samples, a.duration)
        base = res[0][2]
        print("%-50s %12s %10s %8s" % ("READ AS", "samples/s", "MB/s", "vs objs"))
        for label, per, sps, bps in res:
            print("%-50s %12.0f %10.1f %7.1fx" % (label, sps, bps / 1e6, sps / base))
        print("(goal: >= 8x for 1 KiB samples)")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
