#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Image ETL (shale.image) figures, each against its reference in the same
run, rounds alternating:

  * images per CPU-second of Shale's offline etl-bck with the issue's
    contract script (decode, Resize(256), CenterCrop(224), normalised
    float32 .npy) against a Python process doing the same with PIL +
    torchvision (Debian's python3-torchvision) on the same shards read from
    Shale with requests (what users do without server-side ETL). Shale's
    CPU is every node's (gateway and target: reading the shards, the Lua,
    writing the output shards); the client's is its own process plus the
    nodes' CPU for serving its GETs.
  * inline ETL through the gateway (one client, one shard at a time) in
    images/s against the same transform run in one process on the shard
    file (build/bench/etl_local: the sandbox with no server, no HTTP, no
    output shard): the ETL machinery's own overhead.
  * peak RSS (VmHWM) of the target during the offline job against
    workers x mem_limit + 64 MiB.

The shards hold photo-like JPEGs of Oxford-IIIT Pets sizes (500 x 375 and
the like, ~90 KB; tests/integration/imagegen.py), 1 gateway + 1 target.

usage: etl_image_bench.py [--images N] [--per-shard K] [--rounds R] [--quick]
"""
import argparse
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

import numpy as np
import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
os.environ.setdefault("SHALE_BUILD", os.path.join(HERE, "..", "build"))
from harness import Cluster, wait_until  # noqa: E402
import imagegen  # noqa: E402
sys.path.insert(0, HERE)
from http_bench import cpu_seconds, status_kib  # noqa: E402

BUILD = os.environ["SHALE_BUILD"]
MEM_LIMIT = 64 << 20


def node_pids(c):
    return [c.pid(n["name"]) for n in c.topology()["nodes"]]


def target_pids(c):
    return [c.pid(n["name"]) for n in c.topology()["nodes"] if n["role"] == "target"]


def post(s, url, path, value, params=None):
    r = s.post(url + path, params=params, json=value, timeout=300)
    r.raise_for_status()
    return r.text


def wait_job(s, url, job):
    def done():
        r = s.get(url + "/v1/cluster", params={"what": "status"}, json={"id": job}, timeout=30)
        r.raise_for_status()
        j = r.json()
        return j if j["end_time"] else None
    st = wait_until(done, 1800, interval=0.1, what="job " + job)
    if st["err"]:
        raise RuntimeError("job %s: %s" % (job, st["err"]))


def shale_offline(c, s, shards, rnd):
    """etl-bck of the bucket into a new one: (seconds, node CPU seconds)"""
    dst = "out-%d" % rnd
    pids = node_pids(c)
    c0, t0 = cpu_seconds(pids), time.time()
    job = post(s, c.url, "/v1/buckets/pets", {"action": "etl-bck", "name": "", "value": {"id": "contract"}},
               params={"provider": "ais", "bck_to": "ais/@#/%s/" % dst})
    wait_job(s, c.url, job)
    t, cpu = time.time() - t0, cpu_seconds(pids) - c0
    names = s.get(c.url + "/v1/buckets/" + dst, json={"action": "list", "value": {"props": "name"}},
                  timeout=60).json()["entries"]
    if len(names) != len(shards):
        raise RuntimeError("etl-bck wrote %d shards of %d" % (len(names), len(shards)))
    # one output checked: the tensor a DataLoader would get
    data = s.get(c.url + "/v1/objects/%s/%s" % (dst, shards[0]), timeout=60).content
    with tarfile.open(fileobj=io.BytesIO(data)) as tf:
        m = [x for x in tf.getmembers() if x.name.endswith(".npy")][0]
        x = np.load(io.BytesIO(tf.extractfile(m).read()))
    if x.shape != (3, 224, 224) or x.dtype != np.float32:
        raise RuntimeError("unexpected tensor %s %s" % (x.shape, x.dtype))
    s.delete(c.url + "/v1/buckets/" + dst, timeout=60)
    return t, cpu


def client_pil(c, s, shards, tf):
    """The same work in this process with PIL + torchvision, shards read from Shale."""
    from PIL import Image
    pids = node_pids(c)
    c0, n0, t0 = time.process_time(), cpu_seconds(pids), time.time()
    n = 0
    for name in shards:
        data = s.get(c.url + "/v1/objects/pets/" + name, timeout=60).content
        with tarfile.open(fileobj=io.BytesIO(data)) as t:
            for m in t.getmembers():
                if not m.name.endswith(".jpg"):
                    continue
                x = tf(Image.open(io.BytesIO(t.extractfile(m).read())).convert("RGB")).numpy()
                out = io.BytesIO()
                np.save(out, x)
                n += 1
    return time.time() - t0, time.process_time() - c0, cpu_seconds(pids) - n0, n


def inline(c, shards, per_shard):
    """one client (curl, following the gateway's redirect, output discarded so
    that the client costs little), one shard at a time: (seconds, node CPU
    seconds, images)"""
    pids = node_pids(c)
    c0, t0 = cpu_seconds(pids), time.time()
    for name in shards:
        out = subprocess.run(["curl", "-sSfL", "-o", "/dev/null", "-w", "%{size_download}",
                              c.url + "/v1/objects/pets/%s?etl_name=contract" % name], capture_output=True,
                             text=True, check=True).stdout
        if int(out) < per_shard * 3 * 224 * 224 * 4:
            raise RuntimeError("inline %s: %s bytes, less than %d tensors" % (name, out, per_shard))
    return time.time() - t0, cpu_seconds(pids) - c0, len(shards) * per_shard


def dd_output(tmp, nbytes):
    """dd of nbytes of new data into a new file, fsync'd: (seconds, CPU seconds)"""
    path = os.path.join(tmp, "dd.out")
    t0 = time.time()
    r0 = os.times()
    subprocess.run(["dd", "if=/dev/zero", "of=" + path, "bs=1M", "count=%d" % (nbytes >> 20), "conv=fsync"],
                   capture_output=True, check=True)
    r1 = os.times()
    os.unlink(path)
    return time.time() - t0, (r1.children_user - r0.children_user) + (r1.children_system - r0.children_system)


def local(script, files):
    t = cpu = 0.0
    n = 0
    for f in files:
        out = subprocess.run([os.path.join(BUILD, "bench", "etl_local"), script, f], capture_output=True,
                             text=True, check=True).stdout.split()
        kv = dict(zip(out[::2], out[1::2]))
        n += int(kv["samples"])
        t += float(kv["wall_s"])
        cpu += float(kv["cpu_s"])
    return t, cpu, n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--images", type=int, default=600)
    ap.add_argument("--per-shard", type=int, default=50)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="120 images, 2 rounds")
    a = ap.parse_args()
    if a.quick:
        a.images, a.rounds = 120, 2
    if not os.path.exists(os.path.join(BUILD, "bench", "etl_local")):
        subprocess.run(["make", "-C", os.path.join(BUILD, ".."), "build/bench/etl_local"], check=True,
                       capture_output=True)
    tmp = tempfile.mkdtemp(prefix="shale-etlimg-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    c = Cluster(tmp, proxies=1, targets=1).start()
    s = requests.Session()
    try:
        wait_until(lambda: len(c.smap()["tmap"]) == 1, 30, what="the target")
        post(s, c.url, "/v1/buckets/pets", {"action": "create-bck"})
        samples = imagegen.pets_samples(a.images, seed=11)
        shards, files, total = [], [], 0
        for k in range(0, a.images, a.per_shard):
            part = [(key, [("jpg", dict(f)["image.jpg"]), ("cls", dict(f)["cls"])])
                    for key, f in samples[k:k + a.per_shard]]
            total += sum(len(dict(f)["jpg"]) for _, f in part)
            data = imagegen.tar_of(part)
            name = "shard-%04d.tar" % (k // a.per_shard)
            s.put(c.url + "/v1/objects/pets/" + name, data=data, timeout=120).raise_for_status()
            path = os.path.join(tmp, name)
            with open(path, "wb") as f:
                f.write(data)
            shards.append(name)
            files.append(path)
        script = os.path.join(tmp, "contract.lua")
        with open(script, "w") as f:
            f.write(imagegen.CONTRACT)
        s.put(c.url + "/v1/etl", json={"name": "contract", "runtime": "lua", "code": imagegen.CONTRACT,
                                       "mode": "sample", "mem_limit": "64MiB"}, timeout=120).raise_for_status()
        tf, _ = imagegen.reference()
        print("%d JPEGs (mean %.0f KB, Pets sizes) in %d shards; 1 gateway + 1 target; %d rounds, alternating" %
              (a.images, total / a.images / 1000, len(shards), a.rounds))
        print("%-6s %-34s %10s %10s %12s" % ("round", "what", "seconds", "CPU s", "img/CPU-s"))
        rows = {"shale": [], "pil": [], "inline": [], "inline_cpu": [], "local": [], "dd": []}
        for rnd in range(a.rounds):
            order = ["shale", "pil"] if rnd % 2 == 0 else ["pil", "shale"]
            for what in order:
                if what == "shale":
                    t, cpu = shale_offline(c, s, shards, rnd)
                    rows["shale"].append(a.images / cpu)
                    print("%-6d %-34s %10.2f %10.2f %12.0f" % (rnd, "Shale etl-bck (all nodes' CPU)", t, cpu,
                                                               a.images / cpu))
                else:
                    t, cpu, srv, n = client_pil(c, s, shards, tf)
                    rows["pil"].append(n / (cpu + srv))
                    print("%-6d %-34s %10.2f %10.2f %12.0f   (client %.2f + nodes %.2f)" %
                          (rnd, "PIL + torchvision client", t, cpu + srv, n / (cpu + srv), cpu, srv))
            order = ["inline", "local"] if rnd % 2 == 0 else ["local", "inline"]
            for what in order:
                if what == "inline":
                    t, cpu, n = inline(c, shards, a.per_shard)
                    rows["inline"].append(n / t)
                    rows["inline_cpu"].append(n / cpu)
                    print("%-6d %-34s %10.2f %10.2f %12.0f   %.0f img/s" % (rnd, "inline via gateway, 1 client", t,
                                                                          cpu, n / cpu, n / t))
                else:
                    t, cpu, n = local(script, files)
                    rows["local"].append(n / t)
                    print("%-6d %-34s %10.2f %10.2f %12.0f   %.0f img/s" % (rnd, "same script, local (etl_local)",
                                                                          t, cpu, n / cpu, n / t))
            # the output's own cost: writing as many new bytes into the page cache (dd, fsync'd)
            t, cpu = dd_output(tmp, a.images * (3 * 224 * 224 * 4 + 1024))
            rows["dd"].append(cpu)
            print("%-6d %-34s %10.2f %10.2f %12s   the etl-bck's output volume, written by dd" %
                  (rnd, "dd of %d MB" % (a.images * 0.6), t, cpu, ""))
        hwm = max(status_kib(p, "VmHWM") for p in target_pids(c)) / 1024
        med = {k: sorted(v)[len(v) // 2] for k, v in rows.items()}
        print()
        print("offline, images per CPU-second: Shale %.0f, PIL+torchvision %.0f: %.2fx (every round: %s)" %
              (med["shale"], med["pil"], med["shale"] / med["pil"],
               ", ".join("%.2fx" % (x / y) for x, y in zip(rows["shale"], rows["pil"]))))
        dd = sorted(rows["dd"])[len(rows["dd"]) // 2]
        print("  Shale's CPU per image %.2f ms; writing its output (%.0f KB of float32 per image) into the page cache "
              "costs about %.2f ms of it (dd of the same volume, fsync'd)" %
              (1e3 / med["shale"], 3 * 224 * 224 * 4 / 1000, 1e3 * dd / a.images))
        print("inline (streamed to the trainer, not stored), images per node CPU-second: %.0f: %.2fx PIL+torchvision"
              % (med["inline_cpu"], med["inline_cpu"] / med["pil"]))
        print("inline through the cluster %.0f img/s vs the same script locally %.0f img/s: %.2fx (every round: "
              "%s)" % (med["inline"], med["local"], med["inline"] / med["local"],
                       ", ".join("%.2fx" % (x / y) for x, y in zip(rows["inline"], rows["local"]))))
        workers = 4  # etl-bck's auto num-workers: 2 x the background pool (2 threads on 2 CPUs)
        print("peak RSS of the target %.0f MiB; bound workers x mem_limit + 64 MiB = %d x 64 + 64 = %d MiB" %
              (hwm, workers, workers * MEM_LIMIT // (1 << 20) + 64))
    finally:
        c.stop()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
