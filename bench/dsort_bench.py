#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""dsort figures, each against its reference measured in the same run:
  1. shuffling S GiB of WebDataset shards (samples 1-100 KiB, 3 members
     each) on 3 targets vs the lower bound on the same disk: reading every
     input byte once (cat of the shard files) plus writing every output byte
     once (dd of the same size, fsync'd)
  2. the same shuffle as a user does it without dsort: one Python process
     reading every shard (tarfile, as webdataset does underneath), shuffling
     the samples in memory and writing new shards (the ShardWriter pattern),
     on the same files
  3. peak RSS of each target during the dsort (VmHWM), next to the input
     size and max_mem_usage set to a quarter of the input
  4. one more dsort with max_mem_usage a sixteenth of the input: its time
     and what went to disk
Rounds alternate dsort and the references; every round is printed.

usage: dsort_bench.py [--gib 2] [--rounds 2] [--quick]
"""
import argparse
import glob
import io
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ishard_bench  # noqa: E402


def make_shards(root, gib, shard_mib=64, seed=7):
    """Shards of samples with 3 members (.jpg 1-100 KiB, .cls, .json)."""
    rnd = random.Random(seed)
    pool = os.urandom(100 * 1024 + 4096)
    total, i, n = 0, 0, 0
    os.makedirs(root, exist_ok=True)
    target = int(gib * (1 << 30))
    while total < target:
        path = os.path.join(root, "in-%04d.tar" % i)
        with tarfile.open(path, "w") as tf:
            size = 0
            while size < shard_mib << 20 and total + size < target:
                key = "s%07d" % n
                n += 1
                for ext, sz in (("jpg", rnd.randint(1024, 100 * 1024)), ("cls", 2), ("json", 40)):
                    off = rnd.randint(0, 4096)
                    ti = tarfile.TarInfo("%s.%s" % (key, ext))
                    ti.size = sz
                    ti.mtime = 1700000000
                    tf.addfile(ti, io.BytesIO(pool[off:off + sz]))
                    size += sz
        total += os.path.getsize(path)
        i += 1
    return i, n, total


def lower_bound(root, total, scratch):
    """cat every input byte once + write (and fsync) as many bytes once."""
    t0 = time.time()
    for p in sorted(glob.glob(os.path.join(root, "*.tar"))):
        with open(p, "rb") as f:
            while f.read(1 << 20):
                pass
    t_read = time.time() - t0
    out = os.path.join(scratch, "dd.out")
    t0 = time.time()
    subprocess.run(["dd", "if=/dev/zero", "of=" + out, "bs=1M", "count=%d" % max(1, total >> 20), "conv=fsync",
                    "status=none"], check=True)
    t_write = time.time() - t0
    os.unlink(out)
    return t_read + t_write


def python_shuffle(root, out_dir, shard_bytes, seed=1234):
    """What a user writes without dsort: read all samples, shuffle, write shards."""
    t0 = time.time()
    samples = []
    for p in sorted(glob.glob(os.path.join(root, "*.tar"))):
        with tarfile.open(p, "r") as tf:
            cur, key = [], None
            for m in tf.getmembers():
                k = m.name.split(".", 1)[0]
                if k != key and cur:
                    samples.append(cur)
                    cur = []
                key = k
                cur.append((m.name, tf.extractfile(m).read()))
            if cur:
                samples.append(cur)
    random.Random(seed).shuffle(samples)
    os.makedirs(out_dir, exist_ok=True)
    i, size, tf = 0, 0, None
    for s in samples:
        if tf is None or size >= shard_bytes:
            if tf:
                tf.close()
            tf = tarfile.open(os.path.join(out_dir, "out-%05d.tar" % i), "w")
            i, size = i + 1, 0
        for name, data in s:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
            size += len(data)
    if tf:
        tf.close()
    dt = time.time() - t0
    shutil.rmtree(out_dir, ignore_errors=True)
    return dt


def target_pids(pgdir):
    pids = {}
    for p in glob.glob(os.path.join(pgdir, "t*", "shaled.pid")):
        with open(p) as f:
            pids[os.path.basename(os.path.dirname(p))] = int(f.read().strip())
    return pids


def hwm_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def run_dsort(url, nshards, total, rnd_i, mem_frac=4, out=None):
    spec = {"input_bck": "in", "input_format": "in-{0000..%04d}" % (nshards - 1), "input_extension": ".tar",
            "output_bck": "out", "output_format": "r%s-{00000..99999}" % rnd_i, "output_shard_size": "64MiB",
            "max_mem_usage": str(total // mem_frac), "algorithm": {"kind": "shuffle", "seed": "1234"}}
    t0 = time.time()
    r = requests.post(url + "/v1/sort", json=spec, timeout=60)
    r.raise_for_status()
    jid = r.text
    deadline = time.time() + 3600
    while time.time() < deadline:
        info = requests.get(url + "/v1/sort", params={"uuid": jid}, timeout=30).json()
        ms = [v["Metrics"] for v in info.values()]
        if any(m["aborted"] for m in ms):
            raise SystemExit("dsort failed: %s" % [m["errors"] for m in ms])
        if ms and all(m["shard_creation"]["finished"] for m in ms):
            if out is not None:
                out["disk_cnt"] = sum(int(m["local_extraction"]["extracted_to_disk_count"]) for m in ms)
                out["disk_size"] = sum(int(m["local_extraction"]["extracted_to_disk_size"]) for m in ms)
            return time.time() - t0
        time.sleep(0.2)
    raise SystemExit("dsort did not finish in an hour")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gib", type=float, default=2.0)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--quick", action="store_true", help="0.25 GiB, one round")
    a = ap.parse_args()
    if a.quick:
        a.gib, a.rounds = 0.25, 1
    work = tempfile.mkdtemp(prefix="shale-dsort-bench-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    pg = None
    try:
        src = os.path.join(work, "shards")
        nshards, nsamples, total = make_shards(src, a.gib)
        print("input: %d shards, %d samples, %.2f GiB" % (nshards, nsamples, total / (1 << 30)))
        pg, url = ishard_bench.start_pg(work, "pg", 3)
        requests.post(url + "/v1/buckets/in", json={"action": "create-bck"}, timeout=30).raise_for_status()
        env = dict(os.environ, AIS_ENDPOINT=url)
        subprocess.run([ishard_bench.SHALE, "put", src, "ais://in/", "-r", "-y", "--num-workers", "8"], check=True,
                       capture_output=True, env=env, timeout=7200)
        print("\n%-6s %10s %12s %8s %12s %10s" % ("round", "dsort s", "lower bnd s", "ratio", "python s", "speedup"))
        for i in range(a.rounds):
            t_lb = lower_bound(src, total, work)
            t_ds = run_dsort(url, nshards, total, i)
            t_py = python_shuffle(src, os.path.join(work, "py-out"), 64 << 20)
            print("%-6d %10.1f %12.1f %8.2f %12.1f %9.1fx" % (i + 1, t_ds, t_lb, t_ds / t_lb, t_py, t_py / t_ds))
        print("\npeak RSS per target (VmHWM) vs input %.0f MiB, max_mem_usage %.0f MiB:" % (
            total / (1 << 20), total / 4 / (1 << 20)))
        for name, pid in sorted(target_pids(pg).items()):
            print("  %-4s %8.0f MiB" % (name, hwm_kib(pid) / 1024))
        # past the limit: max_mem_usage a sixteenth of the input, so that
        # the records of output shards being built go to disk
        sp = {}
        t_sp = run_dsort(url, nshards, total, "spill", mem_frac=16, out=sp)
        print("\nmax_mem_usage %.0f MiB (input / 16): dsort %.1f s, %d pulls spilled, %.0f MiB to disk" % (
            total / 16 / (1 << 20), t_sp, sp["disk_cnt"], sp["disk_size"] / (1 << 20)))
    finally:
        if pg:
            ishard_bench.stop_pg(pg)
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
