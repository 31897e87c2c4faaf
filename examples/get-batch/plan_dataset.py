# SPDX-License-Identifier: MIT
"""Read a Shale epoch plan with a PyTorch DataLoader (docs/get-batch.md §6).

The cluster fixes the order of every epoch; this reader only asks for
batches by index. Reader r of R (R = world size x DataLoader workers) takes
indexes start + r, start + r + R, ... and the DataLoader hands them back in
index order, so the global order does not depend on how many readers there
are, and a job resumes from the (epoch, index) it saved. It asks the
gateway once which target serves each batch and then asks those targets
directly (any target serves any batch; this only saves the redirect).

    ds = PlanBatches("http://gateway:8080", "train", epoch=3, start=120)
    for index, samples in DataLoader(ds, batch_size=None, num_workers=4):
        ...                     # samples: [{"__key__": ..., "jpg": b"...", ...}]
        save_progress(3, index + 1)
"""
import io
import tarfile

import requests

try:
    import torch.utils.data as tud
    Base = tud.IterableDataset
except ImportError:  # no PyTorch: the same reader as a plain iterable
    tud, Base = None, object


def samples_of(tar_bytes):
    """WebDataset grouping: adjacent members sharing the key before the
    first dot of the basename form one sample."""
    out = []
    with tarfile.open(fileobj=io.BytesIO(tar_bytes), mode="r:") as tf:
        for m in tf.getmembers():
            if not m.isfile():
                continue
            slash = m.name.rfind("/") + 1
            dot = m.name.find(".", slash)
            key, ext = (m.name[:dot], m.name[dot + 1:]) if dot > 0 else (m.name, "")
            if not out or out[-1]["__key__"] != key:
                out.append({"__key__": key})
            out[-1][ext] = tf.extractfile(m).read()
    return out


class PlanBatches(Base):
    def __init__(self, url, plan, epoch=0, start=0, rank=0, world=1, timeout=120):
        super().__init__()
        self.url, self.plan, self.epoch, self.start = url.rstrip("/"), plan, epoch, start
        self.rank, self.world, self.timeout = rank, world, timeout

    def batches(self):
        r = requests.get("%s/v1/ml/plan/%s" % (self.url, self.plan), timeout=self.timeout)
        r.raise_for_status()
        return r.json()["batches"]

    def routes(self, s):
        """index -> the target that serves that batch (GET .../targets), so
        that each batch is one request instead of a gateway redirect and a
        request; None if the gateway cannot tell"""
        out, start = {}, 0
        while True:
            r = s.get("%s/v1/ml/plan/%s/targets" % (self.url, self.plan),
                      params={"epoch": self.epoch, "from": start}, timeout=self.timeout)
            if r.status_code != 200:
                return None
            j = r.json()
            for i, tid in enumerate(j["route"]):
                out[j["from"] + i] = j["targets"][tid]
            start = j["from"] + len(j["route"])
            if not j["route"] or start >= j["batches"]:
                return out

    def __iter__(self):
        info = tud.get_worker_info() if tud else None
        wid, nw = (info.id, info.num_workers) if info else (0, 1)
        readers, me = self.world * nw, self.rank * nw + wid
        s = requests.Session()
        routes = self.routes(s) or {}
        path = "/v1/ml/plan/%s/batch" % self.plan
        for index in range(self.start + me, self.batches(), readers):
            params = {"epoch": self.epoch, "index": index}
            r = None
            if index in routes:
                try:
                    r = s.get(routes[index] + path, params=params, timeout=self.timeout)
                except requests.ConnectionError:
                    r = None  # that target is gone: the gateway knows who serves it now
            if r is None or r.status_code == 503:
                r = s.get(self.url + path, params=params, timeout=self.timeout)
            r.raise_for_status()
            yield index, samples_of(r.content)
