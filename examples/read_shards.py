#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Read WebDataset shards from Shale the way a training loop does: list the
shards of a bucket, stream each one over HTTP (the gateway redirects to the
target that holds it), group members into samples by WebDataset's rule (key =
name up to the first dot of the basename, adjacent members), decode `cls`
and yield samples. With PyTorch installed (Debian: python3-torch) the same
iterator feeds a torch DataLoader with two workers that split the shards.

usage: read_shards.py ENDPOINT BUCKET [--prefix P] [--batch N]
"""
import argparse
import collections
import re
import tarfile

import requests

KEY = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")


def shard_names(endpoint, bucket, prefix=""):
    names, token = [], ""
    while True:
        r = requests.get("%s/v1/buckets/%s" % (endpoint, bucket), timeout=60,
                         json={"action": "list", "value": {"prefix": prefix, "continuation_token": token,
                                                           "props": "name"}})
        r.raise_for_status()
        j = r.json()
        names += [e["name"] for e in j["entries"] or [] if re.search(r"\.(tar|tgz|tar\.gz)$", e["name"])]
        token = j["continuation_token"]
        if not token:
            return names


def samples(endpoint, bucket, shards):
    for name in shards:
        with requests.get("%s/v1/objects/%s/%s" % (endpoint, bucket, name), stream=True, timeout=300) as r:
            r.raise_for_status()
            cur = None
            with tarfile.open(fileobj=r.raw, mode="r|*") as t:      # streaming, as webdataset does
                for m in t:
                    if not m.isfile():
                        continue
                    k = KEY.match(m.name)
                    if not k:
                        continue
                    key, ext = k.group(1), k.group(2).lower()
                    if cur is not None and cur["__key__"] != key:
                        yield cur
                        cur = None
                    if cur is None:
                        cur = {"__key__": key, "__url__": name}
                    cur[ext] = t.extractfile(m).read()
            if cur is not None:
                yield cur


def decode(s):
    out = dict(s)
    if "cls" in out:
        out["cls"] = int(out["cls"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("endpoint")
    ap.add_argument("bucket")
    ap.add_argument("--prefix", default="")
    ap.add_argument("--batch", type=int, default=8)
    a = ap.parse_args()
    shards = shard_names(a.endpoint, a.bucket, a.prefix)
    print("%d shards in ais://%s" % (len(shards), a.bucket))
    try:
        import torch
        from torch.utils.data import DataLoader, IterableDataset, get_worker_info

        class Shards(IterableDataset):
            def __iter__(self):
                wi = get_worker_info()
                mine = shards if wi is None else shards[wi.id::wi.num_workers]
                for s in samples(a.endpoint, a.bucket, mine):
                    s = decode(s)
                    img = s.get("jpg") or s.get("jpeg") or b""
                    yield torch.tensor(s.get("cls", -1)), torch.tensor(len(img))

        n, per_class = 0, collections.Counter()
        for labels, sizes in DataLoader(Shards(), batch_size=a.batch, num_workers=2):
            n += len(labels)
            per_class.update(labels.tolist())
        print("torch DataLoader (2 workers): %d samples; per class: %s" % (n, dict(sorted(per_class.items()))))
    except ImportError:
        n, per_class, batch = 0, collections.Counter(), []
        for s in samples(a.endpoint, a.bucket, shards):
            s = decode(s)
            batch.append(s)
            if len(batch) == a.batch:
                batch = []
            n += 1
            per_class[s.get("cls", -1)] += 1
        print("%d samples (PyTorch not installed: plain iterator); per class: %s" %
              (n, dict(sorted(per_class.items()))))


if __name__ == "__main__":
    main()
