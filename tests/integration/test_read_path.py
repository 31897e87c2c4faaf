#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""One read path for every front end: every object is read through each of them (native GET, HEAD and ranges;
S3 GetObject, HeadObject and ranges; an archive member; get-batch; an inline ETL) while the object is not
where a plain local read finds it, and every read must return exactly what was written:

* rebalance: a target joins, and the objects it now owns are read before the rebalance moves them (the
  rebalance held back with rebalance.enabled=false), and after; another joins, and reads go on while the
  rebalance runs, and after it;
* erasure coding (2+1, objects both replicated and sliced) with the main copies damaged on disk (cut, grown,
  removed): rebuilt from the slices; then with a target killed: its objects are rebuilt;
* mirror (2 copies on 2 mountpaths) with main replicas deleted or truncated on disk: served from the copy;
* a bucket backed by a remote S3 store (a second cluster's /s3): cold, warm, the cached copies damaged on
  disk (fetched again), and cold again after evict.

Every object is a small tar shard, so the same object serves all the front ends. The reads of an object go
through the front ends in a rotated order, so that each front end is the first to touch (and so the one to
find the object missing, damaged or cold) a share of the objects. A 503 retried a few times is accepted (a
map change may ask for it); a 404, a wrong byte or a persisting error is a miss, and the test asserts 0."""
import collections
import concurrent.futures
import glob
import hashlib
import io
import json
import os
import random
import shutil
import tarfile
import tempfile
import threading
import time
import unittest

import boto3
import botocore.exceptions
import requests
from botocore.config import Config

from harness import Cluster, main, wait_until
from test_cluster import hrw_owner

ETL = "rp-prefix"
ETL_CODE = 'function transform(data, ctx)\n    return "rp:" .. data\nend\n'
ETL_PREFIX = b"rp:"

NATIVE_TRIES = 5        # a 503 (or a dropped connection) is tried again this many times in all
BATCH_ITEMS = 24        # objects per get-batch request (each asked whole and by one member)
WORKERS = 12
PASS_DEADLINE = 150     # seconds: what a read_all pass may take at most (what is left is reported as a miss)

FRONTS = ("get", "head", "range", "s3-get", "s3-head", "s3-range", "arch", "batch", "etl")

OFFLINE = 1 << 16       # smap flag of a target the primary found dead


def make_tar(members):
    """a ustar archive of (name, bytes), without the padding to 10 KiB records tarfile adds (so a shard is a few
    KiB: some below the EC size limit, some above)"""
    out = bytearray()
    for name, data in members:
        ti = tarfile.TarInfo(name)
        ti.size, ti.mtime, ti.mode = len(data), 0, 0o644
        out += ti.tobuf(format=tarfile.USTAR_FORMAT)
        out += data + b"\0" * (-len(data) % 512)
    out += b"\0" * 1024
    return bytes(out)


class Shard:
    """An object: its bytes, its members and what each front end must return."""

    def __init__(self, name, seed):
        rnd = random.Random(seed)
        stem = name.rsplit("/", 1)[-1].split(".")[0]
        self.name = name
        self.members = []
        for k in range(rnd.randint(2, 4)):
            n = rnd.choice((rnd.randint(60, 400), rnd.randint(400, 3500)))
            self.members.append(("%s/m%d.%s" % (stem, k, ("bin", "txt", "cls")[k % 3]), rnd.randbytes(n)))
        self.data = make_tar(self.members)
        self.sha = hashlib.sha256(self.data).hexdigest()
        self.seed = seed
        n = len(self.data)
        mid = n // 2
        # first 100 bytes, a middle range, the last 77 (a suffix range)
        self.ranges = [(0, 99), (mid - 300, mid + 211), (n - 77, None)]

    def member(self, k):
        return self.members[k % len(self.members)]

    def range_bytes(self, rg):
        a, b = rg
        return self.data[a:] if b is None else self.data[a:b + 1]

    @staticmethod
    def range_header(rg):
        a, b = rg
        return "bytes=-77" if b is None else "bytes=%d-%d" % (a, b)


def sha(b):
    return hashlib.sha256(b).hexdigest()


def s3client(url):
    return boto3.client("s3", endpoint_url=url, aws_access_key_id="reader", aws_secret_access_key="reader-secret",
                        region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, connect_timeout=10, read_timeout=60,
                                      retries={"max_attempts": 4, "mode": "standard"},
                                      max_pool_connections=2 * WORKERS))


class Reader:
    """Reads objects of one bucket through every front end of one cluster (its gateway)."""

    def __init__(self, url, bucket):
        self.url, self.bucket = url, bucket
        self.s3 = s3client(url + "/s3")
        self.tls = threading.local()

    def sess(self):
        s = getattr(self.tls, "s", None)
        if s is None:
            s = self.tls.s = requests.Session()
        return s

    def native(self, method, path, **kw):
        """(response, None), or (None, why) after NATIVE_TRIES 503s / connection errors"""
        why = None
        for i in range(NATIVE_TRIES):
            try:
                r = self.sess().request(method, self.url + path, timeout=60, allow_redirects=True, **kw)
            except requests.RequestException as e:
                why = "connection: %s" % e
            else:
                if r.status_code != 503:
                    return r, None
                why = "503 (after %d tries) %s" % (NATIVE_TRIES, r.text[:200])
            time.sleep(0.2 * (i + 1))
        return None, why

    def opath(self, o):
        return "/v1/objects/%s/%s" % (self.bucket, o.name)

    # one function per front end: returns None when right, else what was wrong
    def f_get(self, o, i):
        r, why = self.native("GET", self.opath(o))
        if why:
            return why
        if r.status_code != 200:
            return "%d %s" % (r.status_code, r.text[:200])
        if sha(r.content) != o.sha:
            return "wrong bytes: %d bytes, want %d" % (len(r.content), len(o.data))
        return None

    def f_head(self, o, i):
        r, why = self.native("HEAD", self.opath(o))
        if why:
            return why
        if r.status_code != 200:
            return "%d (HEAD)" % r.status_code
        if r.headers.get("Content-Length") != str(len(o.data)):
            return "Content-Length %s, want %d" % (r.headers.get("Content-Length"), len(o.data))
        return None

    def f_range(self, o, i):
        for rg in o.ranges:
            h = Shard.range_header(rg)
            r, why = self.native("GET", self.opath(o), headers={"Range": h})
            if why:
                return "%s: %s" % (h, why)
            if r.status_code != 206:
                return "%s: %d %s" % (h, r.status_code, r.text[:200])
            if r.content != o.range_bytes(rg):
                return "%s: wrong bytes (%d)" % (h, len(r.content))
        return None

    def f_arch(self, o, i):
        m, d = o.member(i)
        r, why = self.native("GET", self.opath(o), params={"archpath": m})
        if why:
            return "%s: %s" % (m, why)
        if r.status_code != 200:
            return "%s: %d %s" % (m, r.status_code, r.text[:200])
        if r.content != d:
            return "%s: wrong bytes (%d, want %d)" % (m, len(r.content), len(d))
        return None

    def f_etl(self, o, i):
        r, why = self.native("GET", self.opath(o), params={"etl_name": ETL})
        if why:
            return why
        if r.status_code != 200:
            return "%d %s" % (r.status_code, r.text[:200])
        if sha(r.content) != sha(ETL_PREFIX + o.data):
            return "wrong bytes: %d bytes, want %d" % (len(r.content), len(o.data) + len(ETL_PREFIX))
        return None

    @staticmethod
    def s3err(e):
        if isinstance(e, botocore.exceptions.ClientError):
            md = e.response.get("ResponseMetadata", {})
            return "%s %s %s" % (md.get("HTTPStatusCode"), e.response.get("Error", {}).get("Code"),
                                 e.response.get("Error", {}).get("Message", "")[:150])
        return "%s: %s" % (type(e).__name__, str(e)[:200])

    def f_s3_get(self, o, i):
        try:
            body = self.s3.get_object(Bucket=self.bucket, Key=o.name)["Body"].read()
        except Exception as e:  # noqa: BLE001
            return self.s3err(e)
        if sha(body) != o.sha:
            return "wrong bytes: %d bytes, want %d" % (len(body), len(o.data))
        return None

    def f_s3_head(self, o, i):
        try:
            h = self.s3.head_object(Bucket=self.bucket, Key=o.name)
        except Exception as e:  # noqa: BLE001
            return self.s3err(e)
        if h["ContentLength"] != len(o.data):
            return "ContentLength %s, want %d" % (h["ContentLength"], len(o.data))
        return None

    def f_s3_range(self, o, i):
        for rg in o.ranges:
            h = Shard.range_header(rg)
            try:
                r = self.s3.get_object(Bucket=self.bucket, Key=o.name, Range=h)
                body = r["Body"].read()
            except Exception as e:  # noqa: BLE001
                return "%s: %s" % (h, self.s3err(e))
            if r["ResponseMetadata"]["HTTPStatusCode"] != 206 or body != o.range_bytes(rg):
                return "%s: %d, %d bytes, want 206 and %d" % (h, r["ResponseMetadata"]["HTTPStatusCode"], len(body),
                                                             len(o.range_bytes(rg)))
        return None

    def batch(self, objs, tries=NATIVE_TRIES):
        """one get-batch of objs (index, shard): each whole and one member; [] or [(name, why)]"""
        items, want = [], []
        for i, o in objs:
            m, d = o.member(i + 1)
            items += [{"objname": o.name}, {"objname": o.name, "archpath": m}]
            want += [("%s/%s" % (self.bucket, o.name), o.data), ("%s/%s/%s" % (self.bucket, o.name, m), d)]
        body = json.dumps({"in": items, "strm": True, "mime": ".tar"})
        why = None
        for t in range(tries):
            try:
                r = self.sess().get(self.url + "/v1/ml/moss/" + self.bucket, data=body, timeout=60,
                                    headers={"Content-Type": "application/json"})
            except requests.RequestException as e:
                why = "connection: %s" % e
            else:
                if r.status_code == 200:
                    try:
                        with tarfile.open(fileobj=io.BytesIO(r.content), mode="r:") as tf:
                            got = [(m.name, tf.extractfile(m).read()) for m in tf.getmembers()]
                    except (tarfile.TarError, OSError) as e:  # a stream cut by a map change: try again
                        why = "200 with a bad archive (%s), %d bytes" % (e, len(r.content))
                    else:
                        if [(n, sha(d)) for n, d in got] == [(n, sha(d)) for n, d in want]:
                            return []
                        bad = [w[0] for w, g in zip(want, got) if (w[0], sha(w[1])) != (g[0], sha(g[1]))]
                        return [(o.name, "200 but entries differ: %d entries for %d, first wrong %s" % (
                            len(got), len(want), (bad or ["(count)"])[0])) for _, o in objs]
                elif r.status_code != 503:
                    why = "%d %s" % (r.status_code, r.text[:200])
                    break
                else:
                    why = "503 (after %d tries) %s" % (tries, r.text[:200])
            time.sleep(0.2 * (t + 1))
        return [(o.name, why) for _, o in objs]

    def front(self, f):
        return getattr(self, "f_" + f.replace("-", "_"))

    def read_all(self, shards, rot=0, deadline=PASS_DEADLINE):
        """every front end for every object; the misses as [(object, front end, why)]. Object i goes through the
        front ends in the order FRONTS rotated by i + rot: pass w of the loop below is, for each object, its
        w-th front end (the first pass touches every object once, each front end a share of them)."""
        misses = []
        t_end = time.time() + deadline
        nf = len(FRONTS)
        with concurrent.futures.ThreadPoolExecutor(WORKERS) as ex:
            for w in range(nf):
                single, batched = [], []
                for i, o in enumerate(shards):
                    f = FRONTS[(i + rot + w) % nf]
                    (batched if f == "batch" else single).append((i, o, f))
                futs = {}
                for i, o, f in single:
                    futs[ex.submit(self.timed, t_end, self.front(f), o, i)] = (o.name, f)
                for k in range(0, len(batched), BATCH_ITEMS):
                    part = [(i, o) for i, o, _ in batched[k:k + BATCH_ITEMS]]
                    futs[ex.submit(self.timed_batch, t_end, part)] = (None, "batch")
                for fu in concurrent.futures.as_completed(futs):
                    name, f = futs[fu]
                    try:
                        res = fu.result()
                    except Exception as e:  # noqa: BLE001
                        res = "%s: %s" % (type(e).__name__, e)
                    if f == "batch":
                        if isinstance(res, str):
                            misses.append(("(batch)", f, res))
                        else:
                            misses += [(n, f, why) for n, why in res]
                    elif res:
                        misses.append((name, f, res))
        return misses

    @staticmethod
    def timed(t_end, fn, o, i):
        if time.time() > t_end:
            return "not read: the pass ran out of time"
        return fn(o, i)

    def timed_batch(self, t_end, part):
        if time.time() > t_end:
            return [(o.name, "not read: the pass ran out of time") for _, o in part]
        res = self.batch(part)
        if not res or len(part) == 1:
            return res
        # the batch failed: ask for each object alone, to name the ones that miss
        with concurrent.futures.ThreadPoolExecutor(WORKERS) as ex:
            return [m for ms in ex.map(lambda io_: self.batch([io_], tries=2), part) for m in ms]


def describe(misses, limit=20):
    """the misses per phase and front end, and the first `limit` of them"""
    if not misses:
        return "no misses"
    per = collections.Counter((p, f) for p, _, f, _ in misses)
    lines = ["%d misses; per phase and front end:" % len(misses)]
    lines += ["  %-22s %-9s %d" % (p, f, n) for (p, f), n in sorted(per.items())]
    lines.append("first %d:" % min(limit, len(misses)))
    lines += ["  [%s] %s %s: %s" % (p, f, o, why) for p, o, f, why in misses[:limit]]
    return "\n".join(lines)


class ReadPathBase(unittest.TestCase):
    clusters = ()

    @classmethod
    def tearDownClass(cls):
        for c in cls.clusters:
            try:
                c.stop()
            except Exception:  # noqa: BLE001
                pass
        if os.environ.get("SHALE_KEEP_TMP"):
            print("kept", cls.tmp)
        else:
            shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shale-readpath-")
        cls.clusters = ()
        try:
            cls.setup_clusters()
        except BaseException:
            cls.tearDownClass()  # (not called when setUpClass fails)
            raise

    @classmethod
    def start(cls, ntargets, mountpaths=1, name="pg", env=None):
        c = Cluster(cls.tmp, proxies=1, targets=ntargets, mountpaths=mountpaths, name=name, env=env)
        cls.clusters = tuple(cls.clusters) + (c,)
        c.start()
        wait_until(lambda: len(c.smap()["tmap"]) == ntargets, 30, what="%d targets" % ntargets)
        return c

    def setUp(self):
        self.s = requests.Session()
        self.misses = []

    def act(self, c, method, path, action, value=None):
        r = self.s.request(method, c.url + path, json={"action": action, "value": value}, timeout=60)
        self.assertEqual(r.status_code, 200, "%s %s: %s" % (action, path, r.text))
        return r

    def create(self, c, b, props=None):
        self.act(c, "POST", "/v1/buckets/" + b, "create-bck")
        if props:
            self.act(c, "PATCH", "/v1/buckets/" + b, "set-bprops", props)

    def shards(self, prefix, n, seed):
        return [Shard("%s-%04d.tar" % (prefix, i), seed * 100000 + i) for i in range(n)]

    def put_native(self, c, b, shards):
        def put(o):
            for _ in range(3):
                r = requests.put(c.url + "/v1/objects/%s/%s" % (b, o.name), data=o.data, timeout=60)
                if r.status_code == 200:
                    return None
            return "%s: %d %s" % (o.name, r.status_code, r.text[:200])
        with concurrent.futures.ThreadPoolExecutor(WORKERS) as ex:
            errs = [e for e in ex.map(put, shards) if e]
        self.assertEqual(errs, [])

    def put_s3(self, s3, b, shards):
        def put(o):
            s3.put_object(Bucket=b, Key=o.name, Body=o.data)
        with concurrent.futures.ThreadPoolExecutor(WORKERS) as ex:
            list(ex.map(put, shards))

    def etl_init(self, c):
        r = self.s.put(c.url + "/v1/etl", json={"name": ETL, "runtime": "lua", "code": ETL_CODE}, timeout=120)
        self.assertEqual(r.status_code, 200, r.text)

    def job_done(self, c, jid, timeout=120):
        def done():
            r = self.s.get(c.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid}, timeout=30)
            return r.status_code == 200 and r.json().get("end_time", 0) != 0 and r.json()
        return wait_until(done, timeout, interval=0.2, what="job " + jid)

    def read(self, reader, shards, phase, rot=0):
        t0 = time.time()
        m = reader.read_all(shards, rot=rot)
        self.misses += [(phase, o, f, why) for o, f, why in m]
        if os.environ.get("SHALE_READ_PATH_VERBOSE"):
            print("  %s: %d objects, %d misses, %.1fs" % (phase, len(shards), len(m), time.time() - t0))
        return m

    def assert_no_misses(self):
        dump = os.environ.get("SHALE_READ_PATH_DUMP")
        if dump:
            with open(dump, "a") as f:
                for m in self.misses:
                    f.write(json.dumps([type(self).__name__] + list(m)) + "\n")
        self.assertEqual(len(self.misses), 0, "\n" + describe(self.misses))

    def offline(self, c, tid):
        return c.smap()["tmap"][tid].get("flags", 0) & OFFLINE

    def damage_copies(self, c, b, shards):
        """the copy each target serves of every object, damaged on its disk: cut in two, grown by a few bytes,
        or its file removed (its metadata kept), in turn"""
        for i, o in enumerate(shards):
            fs = glob.glob(os.path.join(glob.escape(c.dir), "t*", "mp*", "@ais", b, "%ob", glob.escape(o.name)))
            self.assertEqual(len(fs), 1, (o.name, fs))
            if i % 3 == 0:
                os.truncate(fs[0], len(o.data) // 2)
            elif i % 3 == 1:
                with open(fs[0], "ab") as f:
                    f.write(b"rot")
            else:
                os.unlink(fs[0])

    def tid_of(self, c, name):
        return requests.get(c.node_url(name) + "/v1/daemon?what=snode", timeout=10).json()["daemon_id"]


class TestReadDuringRebalance(ReadPathBase):
    """1 gateway + 3 targets (objects put natively and through /s3), then a 4th: read while the objects it owns
    are still on their old targets (the map changed, the rebalance held back), after the rebalance; then a 5th
    joins with the rebalance on and reads go on while it runs, and after."""

    @classmethod
    def setup_clusters(cls):
        cls.c = cls.start(3)

    def test_rebalance(self):
        c = self.c
        self.create(c, "rb")
        native = self.shards("sh", 260, 1)
        vias3 = self.shards("s3put", 40, 2)
        self.put_native(c, "rb", native)
        self.put_s3(s3client(c.url + "/s3"), "rb", vias3)
        shards = native + vias3
        self.etl_init(c)
        rd = Reader(c.url, "rb")
        self.read(rd, shards, "before")
        # the map changes and nothing moves: every object the new target owns is elsewhere
        c.cli("config", "cluster", "rebalance.enabled=false")
        c.cli("playground", "add-target", "--dir", c.dir)
        wait_until(lambda: len(c.smap()["tmap"]) == 4, 30, what="4 targets")
        newt = self.tid_of(c, "t3")
        wait_until(lambda: not c.smap()["tmap"][newt].get("flags", 0), 30, what="t3 active")
        smap = c.smap()
        moved = [o for o in shards if hrw_owner(smap, "rb", o.name)["daemon_id"] == newt]
        self.assertGreater(len(moved), 30, "objects the new target owns")
        r = self.s.get(smap["tmap"][newt]["public_net"]["direct_url"] + "/v1/objects/rb/" + moved[0].name,
                       headers={"Ais-No-Gfn": "true"}, timeout=30)
        self.assertEqual(r.status_code, 404, "the new target does not hold its objects yet")
        # the objects the new target owns first (each front end is the first to read some), then all
        self.read(rd, moved, "map-changed,moved")
        self.read(rd, shards, "map-changed,all", rot=3)
        # the rebalance that was held back moves what those reads did not fetch
        c.cli("config", "cluster", "rebalance.enabled=true")
        r = self.s.put(c.url + "/v1/cluster", json={"action": "start", "value": {"kind": "rebalance"}}, timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        jid = r.text.strip()
        self.assertEqual(self.job_done(c, jid, timeout=180).get("err", ""), "")
        self.read(rd, shards, "rebalanced", rot=6)
        for o in moved[:20]:  # the new target holds its objects now
            r = self.s.get(smap["tmap"][newt]["public_net"]["direct_url"] + "/v1/objects/rb/" + o.name,
                           headers={"Ais-No-Gfn": "true"}, timeout=30)
            self.assertEqual((r.status_code, sha(r.content)), (200, o.sha), o.name)
        # a 5th target joins with the rebalance on, and reads go on all along: of every object until the gateway's
        # map has the new target, then of the objects it owns (those the rebalance is moving)
        before = set(c.smap()["tmap"])
        stop, passes = threading.Event(), []

        def reader():
            rot, mine = 1, None
            while not stop.is_set() and len(passes) < 40:
                if mine is None:
                    try:
                        sm = c.smap()
                        extra = set(sm["tmap"]) - before
                        if extra:
                            t = extra.pop()
                            mine = [o for o in shards if hrw_owner(sm, "rb", o.name)["daemon_id"] == t]
                    except (requests.RequestException, ValueError, KeyError):
                        pass
                t0 = time.time()
                m = rd.read_all(mine or shards, rot=rot)
                passes.append((t0, len(mine or shards), m))
                rot += 2
        th = threading.Thread(target=reader, daemon=True)
        th.start()
        try:
            c.cli("playground", "add-target", "--dir", c.dir)
            wait_until(lambda: len(c.smap()["tmap"]) == 5, 30, what="5 targets")

            def started():
                r = self.s.get(c.url + "/v1/cluster", params={"what": "status"}, json={"Kind": "rebalance"},
                               timeout=30)
                return r.status_code == 200 and r.json().get("uuid") not in (None, "", jid) and r.json()["uuid"]
            jid2 = wait_until(started, 60, interval=0.1, what="the rebalance after t4 joined")
            st = self.job_done(c, jid2, timeout=180)
            t_done = time.time()
            self.assertEqual(st.get("err", ""), "", st)
            # one more whole pass that started once the rebalance had ended
            wait_until(lambda: any(t0 >= t_done for t0, _, _ in passes) or not th.is_alive(), 240, interval=0.2,
                       what="a read pass after the rebalance")
        finally:
            stop.set()
            th.join(300)
        if os.environ.get("SHALE_READ_PATH_VERBOSE"):
            print("  rebalancing: %d passes (%d began before the rebalance ended), objects read: %s" % (
                len(passes), sum(t0 < t_done for t0, _, _ in passes), [n for _, n, _ in passes]))
        for n, (_, _, m) in enumerate(passes):
            self.misses += [("rebalancing#%d" % n, o, f, why) for o, f, why in m]
        self.read(rd, shards, "after", rot=5)
        self.assert_no_misses()


class TestReadECTargetDown(ReadPathBase):
    """EC 2+1 on 4 targets (shards below 6 KiB replicated, the others sliced), one target killed: every object of
    it is rebuilt by whichever front end reads it."""

    LIMIT = 6144

    @classmethod
    def setup_clusters(cls):
        cls.c = cls.start(4)

    def encoded(self, o):
        r = self.s.head(self.c.url + "/v1/objects/ec/" + o.name, timeout=10, allow_redirects=True)
        return r.status_code == 200 and r.headers.get("Ais-Ec-Data") == "2"

    def test_ec_target_down(self):
        c = self.c
        self.create(c, "ec", {"ec": {"enabled": True, "data_slices": 2, "parity_slices": 1,
                                     "objsize_limit": self.LIMIT}})
        shards = self.shards("ec", 150, 3)
        small = sum(len(o.data) < self.LIMIT for o in shards)
        self.assertTrue(20 < small < len(shards) - 20, "both replicated and sliced objects (%d small)" % small)
        self.put_native(c, "ec", shards)
        for o in shards:
            wait_until(lambda: self.encoded(o), 60, what="%s encoded" % o.name)
        self.etl_init(c)  # (refused while a target is down)
        rd = Reader(c.url, "ec")
        self.read(rd, shards, "all-up")
        # the main copies damaged on disk: rebuilt from the slices by whichever front end reads them first
        self.damage_copies(c, "ec", shards)
        self.read(rd, shards, "damaged", rot=3)
        smap = c.smap()
        per = collections.defaultdict(list)
        for o in shards:
            per[hrw_owner(smap, "ec", o.name)["daemon_id"]].append(o)
        victim = max(per, key=lambda t: len(per[t]))
        lost = per[victim]
        self.assertTrue(any(len(o.data) < self.LIMIT for o in lost) and any(len(o.data) >= self.LIMIT for o in lost))
        c.kill9(c.target_name(victim))
        wait_until(lambda: self.offline(c, victim), 60, what="victim offline")
        # (a rebuilt object is not kept by the target that rebuilt it: every read of the victim's objects
        # is a rebuild, whichever front end comes first)
        self.read(rd, shards, "target-down")
        self.assert_no_misses()


class TestReadMirrorDamaged(ReadPathBase):
    """mirror 2 on targets with 2 mountpaths: main replicas deleted or truncated on disk; each front end
    serves the copy (and the main is restored)."""

    @classmethod
    def setup_clusters(cls):
        cls.c = cls.start(2, mountpaths=2)

    def copies(self, o):
        r = self.s.head(self.c.url + "/v1/objects/mr/" + o.name, timeout=10, allow_redirects=True)
        return r.status_code == 200 and r.headers.get("Ais-Mirror-Copies") == "2"

    def main_file(self, o):
        fs = glob.glob(os.path.join(glob.escape(self.c.dir), "t*", "mp*", "@ais", "mr", "%ob", o.name))
        self.assertEqual(len(fs), 1, (o.name, fs))
        return fs[0]

    def damage(self, shards, mains, flip):
        """delete the main replica of half the objects and cut the other half's in two; how many were damaged"""
        n = 0
        for i, o in enumerate(shards):
            f = mains[o.name]
            if not os.path.isfile(f) or os.path.getsize(f) != len(o.data):
                continue  # not restored (yet): still damaged
            if (i + flip) % 2:
                os.unlink(f)
            else:
                os.truncate(f, len(o.data) // 2)
            n += 1
        return n

    def test_mirror_damaged_main(self):
        c = self.c
        self.create(c, "mr", {"mirror": {"enabled": True, "copies": 2}})
        shards = self.shards("mr", 120, 4)
        self.put_native(c, "mr", shards)
        for o in shards:
            wait_until(lambda: self.copies(o), 60, what="%s: 2 copies" % o.name)
        self.etl_init(c)
        rd = Reader(c.url, "mr")
        self.read(rd, shards, "intact")
        mains = {o.name: self.main_file(o) for o in shards}
        self.assertEqual(self.damage(shards, mains, 0), len(shards))
        self.read(rd, shards, "damaged#1")
        # the other damage for each object, the other front ends first (the reads restored the mains)
        self.assertGreater(self.damage(shards, mains, 1), len(shards) // 2, "mains restored by the reads")
        self.read(rd, shards, "damaged#2", rot=5)
        self.assert_no_misses()


class TestReadRemoteBacked(ReadPathBase):
    """ais://cache backed by s3://origin of a second cluster (its /s3, SigV4 verified): objects put at the remote
    only, read cold, warm, and cold again after evict."""

    AK, SK = "cache-node", "remote-secret-value-1"

    @classmethod
    def setup_clusters(cls):
        cls.remote = cls.start(1, name="remote")
        cls.remote.cli("s3", "key", "add", cls.AK, "--secret", cls.SK)
        cls.remote.cli("s3", "verify", "on")
        cls.ep = cls.remote.url + "/s3"
        creds = os.path.join(cls.tmp, "credentials")
        with open(creds, "w") as f:
            f.write("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % (cls.AK, cls.SK))
        env = {"AWS_SHARED_CREDENTIALS_FILE": creds, "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
               "AWS_PROFILE": "", "S3_ENDPOINT": cls.ep}
        cls.c = cls.start(2, name="local", env=env)

    def present(self, o):
        r = self.s.head(self.c.url + "/v1/objects/cache/" + o.name, timeout=30, allow_redirects=True)
        return r.headers.get("Ais-Present") == "true"

    def test_remote_cold_warm_evicted(self):
        c = self.c
        rs3 = boto3.client("s3", endpoint_url=self.ep, aws_access_key_id=self.AK, aws_secret_access_key=self.SK,
                           region_name="us-east-1", config=Config(s3={"addressing_style": "path"}))
        rs3.create_bucket(Bucket="origin")
        shards = self.shards("rm", 120, 5)
        self.put_s3(rs3, "origin", shards)
        c.cli("bucket", "create", "ais://cache", "--props", "backend_bck=s3://origin extra.aws.endpoint=%s" % self.ep)
        self.etl_init(c)
        self.assertFalse(any(self.present(o) for o in shards[:10]), "nothing cached yet")
        rd = Reader(c.url, "cache")
        self.read(rd, shards, "cold")
        self.read(rd, shards, "warm", rot=2)
        # the cached copies damaged on disk: fetched again from the remote by whichever front end reads them first
        self.damage_copies(c, "cache", shards)
        self.read(rd, shards, "damaged", rot=4)
        r = self.s.delete(c.url + "/v1/buckets/cache", json={"action": "evict-listrange",
                                                             "value": {"template": "rm-"}}, timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.job_done(c, r.text.strip())["err"], "")
        self.assertEqual([o.name for o in shards if self.present(o)], [], "evicted")
        self.read(rd, shards, "evicted", rot=5)
        self.assert_no_misses()


if __name__ == "__main__":
    main()
