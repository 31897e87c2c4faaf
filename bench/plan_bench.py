#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Epoch-plan figure: a PyTorch DataLoader with 4 workers reading one epoch of
1 KiB samples through plan batches (examples/get-batch/plan_dataset.py),
against the same DataLoader reading the shards the way webdataset does
(shards split over workers in a shuffled order, each shard read with one GET,
samples through a shuffle buffer of 1000, handed over in lists of 256 as
`.batched(256)` does, the same as the plan's batches). webdataset is not on Debian, so
the reference is that pattern written out in a few lines. Rounds alternate;
every round is printed.

usage: plan_bench.py [--shards 32] [--per 1000] [--rounds 3]
       BENCH_SERVER_CPUS=0 taskset -c 1 plan_bench.py    (the nodes on CPU 0, the loader on CPU 1)
"""
import argparse
import io
import os
import random
import sys
import tarfile
import time

import requests
import torch.utils.data

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "examples", "get-batch"))
import ishard_bench  # noqa: E402
from plan_dataset import PlanBatches, samples_of  # noqa: E402


class ShardReader(torch.utils.data.IterableDataset):
    """what webdataset does: shardshuffle, split by worker, a shuffle buffer"""

    def __init__(self, url, names, epoch, buf=1000, batch=256):
        super().__init__()
        self.url, self.names, self.epoch, self.buf, self.batch = url, names, epoch, buf, batch

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        wid, nw = (info.id, info.num_workers) if info else (0, 1)
        names = list(self.names)
        random.Random(self.epoch).shuffle(names)
        rnd = random.Random(self.epoch * 1000 + wid)
        s = requests.Session()
        pool, batch = [], []
        for n in names[wid::nw]:
            r = s.get("%s/v1/objects/ds/%s" % (self.url, n), timeout=60)
            r.raise_for_status()
            for smp in samples_of(r.content):
                pool.append(smp)
                if len(pool) >= self.buf:
                    batch.append(pool.pop(rnd.randrange(len(pool))))
                    if len(batch) == self.batch:
                        yield batch
                        batch = []
        rnd.shuffle(pool)
        batch += pool
        for i in range(0, len(batch), self.batch):
            yield batch[i:i + self.batch]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shards", type=int, default=32)
    ap.add_argument("--per", type=int, default=1000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    with ishard_bench.playground("shale-plan-bench-") as (work, url):
        s = requests.Session()
        s.post(url + "/v1/buckets/ds", json={"action": "create-bck"}, timeout=30).raise_for_status()
        names = []
        for i in range(a.shards):
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as tf:
                for j in range(a.per):
                    for ext, data in (("jpg", os.urandom(1024)), ("cls", b"%d" % (j % 10))):
                        ti = tarfile.TarInfo("s%03d/%05d.%s" % (i, j, ext))
                        ti.size = len(data)
                        tf.addfile(ti, io.BytesIO(data))
            names.append("sh-%03d.tar" % i)
            s.put(url + "/v1/objects/ds/" + names[-1], data=buf.getvalue(), timeout=60).raise_for_status()
        r = s.put(url + "/v1/ml/plan", timeout=600, json={"name": "bench", "bck": "ds", "prefix": "sh-",
                                                           "seed": 1, "batch_size": 256})
        r.raise_for_status()
        total = r.json()["samples"]
        print("%d samples of 1 KiB (+ a label) in %d shards on 3 targets; DataLoader, 4 workers" % (total, a.shards))
        print("%-6s %16s %18s %8s" % ("round", "plan samples/s", "shards+buffer s/s", "ratio"))
        for rnd in range(a.rounds):
            t0 = time.time()
            n = 0
            for _, smp in torch.utils.data.DataLoader(PlanBatches(url, "bench", epoch=rnd), batch_size=None,
                                                      num_workers=4):
                n += len(smp)
            tp = n / (time.time() - t0)
            assert n == total, (n, total)
            t0 = time.time()
            n = 0
            for smp in torch.utils.data.DataLoader(ShardReader(url, names, rnd), batch_size=None, num_workers=4):
                n += len(smp)
            tw = n / (time.time() - t0)
            assert n == total, (n, total)
            print("%-6d %16.0f %18.0f %7.2fx" % (rnd + 1, tp, tw, tp / tw))


if __name__ == "__main__":
    main()
