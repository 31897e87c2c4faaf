# SPDX-License-Identifier: MIT
"""shale_data: read a Shale epoch plan as a PyTorch IterableDataset.

An epoch plan (docs/get-batch.md section 6, `shale ml plan create`) fixes, on
the cluster, one shuffled order of a set of shards' samples for every epoch,
served as numbered batches: GET /v1/ml/plan/NAME/batch?epoch=E&index=I is a
tar of batch I's samples in order. This module only asks for batches by
number, so every reader sees the same order whatever the number of readers.

    from torch.utils.data import DataLoader
    from shale_data import PlanDataset

    ds = PlanDataset("http://gateway:8080", "train", mode="batch")
    ds.load_state_dict(saved)          # {"epoch": 3, "batch": 120}, optional
    for item in DataLoader(ds, batch_size=None, num_workers=4):
        ...                            # item: {"epoch", "index", "samples": [{"__key__", "jpg": b"..."}]}
        saved = {"epoch": item["epoch"], "batch": item["index"] + 1}

Readers: reader r of R, where R = world size x DataLoader workers and
r = rank x workers + worker id, takes batches start + r, start + r + R, ...
of each epoch, so the (rank, worker) pairs read disjoint shares that
together cover each batch exactly once. The rank and world size are the
arguments, else torch.distributed's when it is initialised, else 0 and 1.

Only the standard library and requests are needed; torch is imported when
a PlanDataset is made (without torch the class is a plain iterable).
"""
import io
import tarfile

import requests

__all__ = ["PlanDataset", "samples_of", "plan_info"]
__version__ = "1.0"


def _torch_data():
    try:
        import torch.utils.data as tud
        return tud
    except ImportError:
        return None


def _base():
    tud = _torch_data()
    return tud.IterableDataset if tud else object


def samples_of(tar_bytes):
    """The WebDataset samples of a batch tar, in order: adjacent members that
    share the key before the first dot of the basename form one sample,
    {"__key__": KEY, EXT: bytes, ...}."""
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


def plan_info(url, plan, timeout=120, session=None):
    """GET /v1/ml/plan/NAME: the plan's fields (batches, batch_size, seed, ...)."""
    s = session or requests
    r = s.get("%s/v1/ml/plan/%s" % (url.rstrip("/"), plan), timeout=timeout)
    if r.status_code != 200:
        raise RuntimeError("shale_data: plan %s at %s: HTTP %d: %s" % (plan, url, r.status_code, r.text.strip()))
    return r.json()


class _PlanDataset:
    """The batches of an epoch plan, one epoch per iteration (or epochs
    epoch .. epochs-1 in one iteration when epochs is given).

    url: the gateway (AIS_ENDPOINT); plan: the plan's name.
    mode: "batch" yields {"epoch", "index", "samples": [sample, ...]} per
    batch; "sample" yields each sample, with "__epoch__" and "__index__"
    (its batch) added; "tar" yields {"epoch", "index", "tar": bytes}, the
    batch API's answer as it is.
    rank, world_size: this process's place in DDP (default: torch.distributed
    when initialised, else 0 of 1).
    epoch, batch: where to start (as load_state_dict sets them).
    """

    def __init__(self, url, plan, mode="batch", rank=None, world_size=None, epoch=0, batch=0, epochs=None,
                 timeout=120):
        if mode not in ("batch", "sample", "tar"):
            raise ValueError("shale_data: mode must be \"batch\", \"sample\" or \"tar\", not %r" % (mode,))
        if epoch < 0 or batch < 0:
            raise ValueError("shale_data: epoch and batch must be >= 0 (got %r, %r)" % (epoch, batch))
        super().__init__()
        self.url, self.plan, self.mode, self.timeout = url.rstrip("/"), plan, mode, timeout
        self._rank, self._world = rank, world_size
        self.epoch, self.batch, self.epochs = epoch, batch, epochs
        self._batches = None

    # ---- where this reader is ----
    def world(self):
        """(rank, world_size): the arguments, else torch.distributed's, else (0, 1)."""
        rank, world = self._rank, self._world
        if rank is None or world is None:
            try:
                import torch.distributed as dist
                if dist.is_available() and dist.is_initialized():
                    rank = dist.get_rank() if rank is None else rank
                    world = dist.get_world_size() if world is None else world
            except ImportError:
                pass
        rank, world = rank or 0, world or 1
        if not 0 <= rank < world:
            raise ValueError("shale_data: rank %d is not in 0..%d (world size %d)" % (rank, world - 1, world))
        return rank, world

    def reader(self):
        """(r, R): this (rank, DataLoader worker)'s reader number and the number of readers."""
        rank, world = self.world()
        tud = _torch_data()
        info = tud.get_worker_info() if tud else None
        wid, nw = (info.id, info.num_workers) if info else (0, 1)
        return rank * nw + wid, world * nw

    def batches(self):
        """the plan's number of batches per epoch"""
        if self._batches is None:
            self._batches = int(plan_info(self.url, self.plan, self.timeout)["batches"])
        return self._batches

    def __len__(self):
        """the batches (mode "batch") this rank reads in the current epoch from the current position"""
        r, R = self.world()
        n = self.batches() - self.batch
        return max(0, (n - r + R - 1) // R)

    # ---- checkpoints ----
    def set_epoch(self, epoch):
        """the next iteration reads epoch from its first batch"""
        self.epoch, self.batch = epoch, 0

    def state_dict(self):
        """{"epoch", "batch"}: the position the next iteration starts at. Iterated
        in this process (num_workers=0) it follows what was yielded; with
        DataLoader workers record the "epoch"/"index" of the items instead."""
        return {"plan": self.plan, "epoch": self.epoch, "batch": self.batch}

    def load_state_dict(self, state):
        """resume at batch state["batch"] of epoch state["epoch"]: every reader
        skips the batches before it, and the rest of that epoch is read once"""
        epoch, batch = int(state["epoch"]), int(state.get("batch", 0))
        if epoch < 0 or batch < 0:
            raise ValueError("shale_data: a state's epoch and batch are >= 0 (got %r)" % (state,))
        if state.get("plan", self.plan) != self.plan:
            raise ValueError("shale_data: the state is of plan %r, this dataset reads %r" % (state["plan"], self.plan))
        self.epoch, self.batch = epoch, batch

    # ---- reading ----
    def fetch(self, session, epoch, index):
        """batch index of epoch as the batch API returns it (the tar's bytes)"""
        r = session.get("%s/v1/ml/plan/%s/batch" % (self.url, self.plan), params={"epoch": epoch, "index": index},
                        timeout=self.timeout)
        if r.status_code != 200:
            raise RuntimeError("shale_data: plan %s batch %d of epoch %d: HTTP %d: %s" %
                               (self.plan, index, epoch, r.status_code, r.text.strip()))
        return r.content

    def __iter__(self):
        me, readers = self.reader()
        s = requests.Session()
        last = self.epochs if self.epochs is not None else self.epoch + 1
        total = self.batches()
        while self.epoch < last:
            epoch, start = self.epoch, self.batch
            for index in range(start + me, total, readers):
                raw = self.fetch(s, epoch, index)
                self.batch = index + 1
                if self.mode == "tar":
                    yield {"epoch": epoch, "index": index, "tar": raw}
                    continue
                samples = samples_of(raw)
                if self.mode == "batch":
                    yield {"epoch": epoch, "index": index, "samples": samples}
                else:
                    for smp in samples:
                        smp["__epoch__"], smp["__index__"] = epoch, index
                        yield smp
            if self.epoch == epoch:
                self.epoch, self.batch = epoch + 1, 0


def __getattr__(name):
    """PlanDataset is made on first use, a torch IterableDataset when torch is
    there: `import shale_data` alone does not import torch."""
    if name != "PlanDataset":
        raise AttributeError("module %r has no attribute %r" % (__name__, name))
    base = _base()
    cls = type("PlanDataset", (_PlanDataset,) + ((base,) if base is not object else ()),
               {"__doc__": _PlanDataset.__doc__, "__module__": __name__})
    globals()["PlanDataset"] = cls
    return cls
