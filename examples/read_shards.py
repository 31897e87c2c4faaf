#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Read WebDataset shards from Shale the way a training loop does: list the
shards of a bucket, stream each one over HTTP (the gateway redirects to the
target that holds it), group members into samples by WebDataset's rule (key =
name up to the first dot of the basename, adjacent members), decode `cls`
and yield samples. With PyTorch installed (Debian: python3-torch) the same
iterator feeds a torch DataLoader with two workers that split the shards.

With --etl NAME the shards stream through that ETL on the targets (inline),
and the DataLoader batches the tensors it made (.npy, as webdataset decodes
them).

usage: read_shards.py ENDPOINT BUCKET [--prefix P] [--batch N] [--etl NAME]
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


def samples(endpoint, bucket, shards, etl=None):
    """etl: the name of an ETL the targets run on each shard as it streams (?etl_name=)"""
    params = {"etl_name": etl} if etl else None
    for name in shards:
        with requests.get("%s/v1/objects/%s/%s" % (endpoint, bucket, name), params=params, stream=True,
                          timeout=300) as r:
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
    """as webdataset's default decoders: cls as an int, .npy through numpy.load"""
    out = dict(s)
    if "cls" in out:
        out["cls"] = int(out["cls"])
    for k in list(out):
        if k.endswith("npy"):
            import io
            import numpy
            out[k] = numpy.load(io.BytesIO(out[k]), allow_pickle=False)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("endpoint")
    ap.add_argument("bucket")
    ap.add_argument("--prefix", default="")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--etl", help="read through this ETL (inline, on the targets), e.g. pets-preprocess")
    a = ap.parse_args()
    shards = shard_names(a.endpoint, a.bucket, a.prefix)
    print("%d shards in ais://%s%s" % (len(shards), a.bucket, " through etl %s" % a.etl if a.etl else ""))
    try:
        import torch
        from torch.utils.data import DataLoader, IterableDataset, get_worker_info

        if a.etl:   # tensors made on the targets: batch them as a training loop would
            class Tensors(IterableDataset):
                def __iter__(self):
                    wi = get_worker_info()
                    mine = shards if wi is None else shards[wi.id::wi.num_workers]
                    for s in samples(a.endpoint, a.bucket, mine, a.etl):
                        s = decode(s)
                        yield (torch.from_numpy(s["npy"]), torch.from_numpy(s["trimap.npy"]),
                               torch.tensor(s.get("cls", -1)))
            n = 0
            for i, (img, tri, cls) in enumerate(DataLoader(Tensors(), batch_size=a.batch, num_workers=2)):
                if i == 0:
                    print("first batch: image %s %s (mean %.3f), trimap %s %s (classes %s), cls %s" %
                          (tuple(img.shape), img.dtype, float(img.mean()), tuple(tri.shape), tri.dtype,
                           sorted(set(tri.unique().tolist())), cls.tolist()))
                n += len(cls)
            print("torch DataLoader (2 workers): %d samples of normalised 3 x 224 x 224 tensors" % n)
            return

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
