# SPDX-License-Identifier: MIT
"""Bounded archive-content listings and corrupt shards, on a playground of
1 gateway and 2 targets (so pages are merged across targets):

* listing a shard's members (flag 8, "arch-dir") is paged like any listing:
  pagesize entries per page, members included, with a continuation token that
  resumes inside the shard; every member comes exactly once, in order;
* the gateway's and the targets' RSS stay bounded across several full
  listings of a shard of 200k members (they used to build the whole listing
  as one page);
* a corrupt shard (truncated tar, garbage named .tar, corrupt gzip, zip,
  lz4) read with archpath / archregx / archindex or listed is a 422 naming
  the shard, never a 500 or a crash;
* on a standalone node: the member index of a 200k-member shard is built in
  batches, sent (archindex) and read for a selection (archregx) with the
  node's anonymous memory bounded, the outputs complete and exact; a shard
  re-indexed over a big old index, and an index build cut by a crash, leave
  a correct index.
"""
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import threading
import unittest

import msgpack
import requests

from harness import Node, heap_env, main, make_tar, make_zip, start_cluster, stop_cluster, wait_until

BIG_N = 200000


def tar_bytes(members):
    """A plain tar of (name, data) members."""
    out = io.BytesIO()
    for name, data in members:
        ti = tarfile.TarInfo(name)
        ti.size = len(data)
        out.write(ti.tobuf(format=tarfile.USTAR_FORMAT))
        out.write(data)
        if len(data) % 512:
            out.write(b"\0" * (512 - len(data) % 512))
    out.write(b"\0" * 1024)
    return out.getvalue()


def lz4_bytes(data):
    return subprocess.run(["lz4", "-c"], input=data, capture_output=True, check=True).stdout


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    raise AssertionError("no VmRSS for pid %d" % pid)


class TestBounded(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        start_cluster(cls, targets=2)
        cls.nodes = [n["name"] for n in cls.c.topology()["nodes"]]
        for b in ("big", "mix", "bad"):
            r = cls.s.post(cls.url + "/v1/buckets/" + b, json={"action": "create-bck"}, timeout=30)
            assert r.status_code == 200, r.text
        # one shard of many tiny members (the index path)
        cls.big = ["m%06d" % i for i in range(BIG_N)]
        r = cls.s.put(cls.url + "/v1/objects/big/big.tar", data=tar_bytes((n, b"") for n in cls.big), timeout=300)
        assert r.status_code == 200, r.text

    @classmethod
    def tearDownClass(cls):
        stop_cluster(cls)

    def lso(self, bucket, value, mp=False, session=None):
        h = {"Accept": "application/msgpack"} if mp else {}
        r = (session or self.s).get(self.url + "/v1/buckets/" + bucket,
                                    json={"action": "list", "name": "", "value": value}, headers=h, timeout=120)
        self.assertEqual(r.status_code, 200, r.text[:500])
        if mp:
            m = msgpack.unpackb(r.content)
            return [(e["n"], e.get("s", 0), e.get("f", 0)) for e in (m["Entries"] or [])], m["ContinuationToken"]
        j = r.json()
        return [(e["name"], int(e.get("size", "0")), e.get("flags", 0)) for e in (j["entries"] or [])], \
            j["continuation_token"]

    def list_pages(self, bucket, pagesize, mp=False, session=None, **value):
        """Every page of a listing: [[(name, size, flags)...]...], bounded in count."""
        pages, token, uuid = [], "", ""
        for _ in range(100000):
            v = dict(value, pagesize=pagesize, continuation_token=token, uuid=uuid)
            ents, token = self.lso(bucket, v, mp=mp, session=session)
            pages.append(ents)
            if not token:
                return pages
        raise AssertionError("listing did not end")

    def test_big_shard_paged(self):
        """members of a 200k-member shard in pages of 5000: each page full but the
        last, every member once and in order, the shard entry first"""
        pages = self.list_pages("big", 5000, prefix="big.tar", flags="8")
        self.assertGreater(len(pages), BIG_N // 5000, "one huge page instead of pages of 5000")
        for p in pages[:-1]:
            self.assertEqual(len(p), 5000)
        self.assertLessEqual(len(pages[-1]), 5000)
        names = [e[0] for p in pages for e in p]
        self.assertEqual(names[0], "big.tar")
        self.assertEqual(names[1:], ["big.tar/" + n for n in self.big])
        first = pages[0]
        self.assertTrue(first[0][2] & 512)
        self.assertTrue(all(e[2] & 128 for e in first[1:]))
        # the default page size applies too: not one page of 200001 entries
        ents, token = self.lso("big", {"prefix": "big.tar", "flags": "8"})
        self.assertLess(len(ents), BIG_N)
        self.assertTrue(token)
        # the CLI follows the tokens through the shard
        out = self.c.cli("ls", "ais://big/big.tar", "--archive", "--count-only", "--page-size", "7000").stdout
        self.assertIn("Listed %d names" % (BIG_N + 1), out.replace(",", ""))
        # a prefix into the shard: only its matching members, paged
        pages = self.list_pages("big", 300, mp=True, prefix="big.tar/m0012", flags="8")
        names = [e[0] for p in pages for e in p]
        self.assertEqual(names, ["big.tar"] + ["big.tar/m0012%02d" % i for i in range(100)])
        self.assertTrue(all(len(p) <= 300 for p in pages))

    def test_mixed_bucket_paged(self):
        """objects and shards of every format around them, small pages through the
        merge of two targets: the listing in one piece is what the pages add up to"""
        members = [("d%d/s%03d.%s" % (i % 3, i, ext), b"x" * (i + 1)) for i in range(40) for ext in ("jpg",)]
        shards = {
            "s1.tar": tar_bytes(members),
            "s2.tgz": make_tar(members[:25], gz=True),
            "s3.zip": make_zip(members[:17]),
            "s4.tar.lz4": lz4_bytes(tar_bytes(members[:11])),
            "s1.tar.bak": b"not a shard",
        }
        plain = ["a%02d" % i for i in range(13)] + ["s1.tar0", "zz"]
        for n, data in shards.items():
            self.assertEqual(self.s.put(self.url + "/v1/objects/mix/" + n, data=data).status_code, 200)
        for n in plain:
            self.assertEqual(self.s.put(self.url + "/v1/objects/mix/" + n, data=n.encode()).status_code, 200)
        # expected: objects by name, each shard followed by its members
        expect = []
        for n in sorted(list(shards) + plain):
            expect.append(n)
            if n in shards and n != "s1.tar.bak":
                k = {"s1.tar": 40, "s2.tgz": 25, "s3.zip": 17, "s4.tar.lz4": 11}[n]
                ms = [m for m, _ in members[:k]]
                if n.endswith(".tar"):
                    ms = sorted(ms)  # the member index keeps names in order
                expect += [n + "/" + m for m in ms]
        whole = self.list_pages("mix", 0, flags="8")
        self.assertEqual([e[0] for p in whole for e in p], expect)
        sizes = {e[0]: e[1] for p in whole for e in p}
        self.assertEqual(sizes["s2.tgz/d1/s001.jpg"], 2)
        for ps in (1, 7, 40):
            for mp in (False, True):
                pages = self.list_pages("mix", ps, mp=mp, flags="8")
                self.assertTrue(all(len(p) <= ps for p in pages), (ps, [len(p) for p in pages]))
                self.assertTrue(all(len(p) == ps for p in pages[:-1]), (ps, [len(p) for p in pages]))
                self.assertEqual([e[0] for p in pages for e in p], expect, (ps, mp))
        # without the flag: objects only
        self.assertEqual([e[0] for p in self.list_pages("mix", 4) for e in p], sorted(list(shards) + plain))
        # the CLI follows the tokens
        out = self.c.cli("archive", "ls", "ais://mix/s2.tgz").stdout
        self.assertIn("25 members", out)

    def test_long_member_names(self):
        """members over 400 bytes are indexed by a hash of their name (after the
        others): a page that ends on one resumes after it"""
        import hashlib
        short = ["s%d" % i for i in range(4)]
        long_ = [("L%d/" % i) + "x" * 450 for i in range(5)]
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
            for n in long_ + short:
                ti = tarfile.TarInfo(n)
                ti.size = 1
                t.addfile(ti, io.BytesIO(b"x"))
        self.assertEqual(self.s.put(self.url + "/v1/objects/big/long.tar", data=buf.getvalue()).status_code, 200)
        expect = ["long.tar"] + ["long.tar/" + n for n in sorted(short)] + \
            ["long.tar/" + n for n in sorted(long_, key=lambda n: hashlib.sha256(n.encode()).hexdigest())]
        for ps in (1, 2, 3):
            pages = self.list_pages("big", ps, prefix="long.tar", flags="8")
            self.assertEqual([e[0] for p in pages for e in p], expect, ps)
            self.assertTrue(all(len(p) == ps for p in pages[:-1]) and len(pages[-1]) <= ps, [len(p) for p in pages])

    def test_rss_bounded(self):
        """four concurrent full listings of the 200k-member shard, three times: the
        gateway and the targets stay within a generous bound"""
        pids = {n: self.c.pid(n) for n in self.nodes}
        self.assertTrue(all(pids.values()), pids)
        before = {n: rss_mib(p) for n, p in pids.items()}
        errors = []

        def one():
            try:
                s = requests.Session()
                pages = self.list_pages("big", 0, session=s, prefix="big.tar", flags="8")
                n = sum(len(p) for p in pages)
                if n != BIG_N + 1:
                    errors.append("listed %d entries" % n)
            except Exception as e:  # reported below
                errors.append(repr(e))
        peak = dict(before)
        for _ in range(3):
            th = [threading.Thread(target=one) for _ in range(4)]
            for t in th:
                t.start()
            for t in th:
                t.join(300)
            self.assertFalse(any(t.is_alive() for t in th), "listings did not finish")
            for n, p in pids.items():
                peak[n] = max(peak[n], rss_mib(p))
        self.assertEqual(errors, [])
        growth = {n: peak[n] - before[n] for n in pids}
        print("RSS MiB before", before, "peak", peak, "growth", growth)
        for n, g in growth.items():
            self.assertLess(g, 150, "%s grew by %d MiB listing a 200k-member shard (before %s, peak %s)" %
                            (n, g, before, peak))

    def test_corrupt_shards(self):
        """truncated tar, garbage named .tar, corrupt gzip, zip and lz4: 422 naming
        the shard for archpath, archregx, archindex and listing; nodes stay up"""
        good = [("a/%02d.txt" % i, b"hello %d" % i * 50) for i in range(30)]
        t = tar_bytes(good)
        gz = make_tar(good, gz=True)
        z = make_zip(good)
        lz = lz4_bytes(t)
        zc = bytearray(z)
        # damage every local header's compressed data
        pos = 0
        while True:
            pos = zc.find(b"PK\x03\x04", pos)
            if pos < 0:
                break
            zc[pos + 30 + 9: pos + 30 + 30] = b"\xff" * 21
            pos += 4
        bad = {
            "trunc.tar": t[:512 * 7 + 100],
            "garbage.tar": os.urandom(700) + b"garbage" * 300,
            "gz.tgz": gz[:10] + bytes(b ^ 0x5a for b in gz[10:60]) + gz[60:],
            "trunc.tgz": gz[: len(gz) // 2],
            "garbage.zip": b"PK\x03\x04" + os.urandom(3000),
            "corrupt.zip": bytes(zc),
            "garbage.tar.lz4": b"\x04\x22\x4d\x18" + os.urandom(2000),
            "trunc.tar.lz4": lz[: len(lz) // 3],
        }
        for n, data in bad.items():
            self.assertEqual(self.s.put(self.url + "/v1/objects/bad/" + n, data=data).status_code, 200)

        def check(r, n, what):
            self.assertNotEqual(r.status_code // 100, 5, "%s %s: %d %s" % (n, what, r.status_code, r.text[:300]))
            if r.status_code == 200:
                return False
            self.assertEqual(r.status_code, 422, "%s %s: %d %s" % (n, what, r.status_code, r.text[:300]))
            self.assertIn("bad/" + n, r.text, what)
            return True

        for n in bad:
            base = self.url + "/v1/objects/bad/" + n
            failed = []
            # a member near the end (the truncated ones may still serve the first)
            r = self.s.get(base, params={"archpath": "a/29.txt"}, timeout=60)
            failed.append(check(r, n, "archpath"))
            r = self.s.get(base, params={"archregx": "a/", "archmode": "prefix"}, timeout=60)
            if r.status_code == 200:
                # a tar stream that was cut: the body must not pretend to be whole
                self.assertLess(len(r.content), len(t), n)
            failed.append(check(r, n, "archregx"))
            if n.endswith(".tar"):
                r = self.s.get(base, params={"archindex": "true"}, timeout=60)
                failed.append(check(r, n, "archindex"))
            r = self.s.get(self.url + "/v1/buckets/bad", timeout=60,
                           json={"action": "list", "value": {"prefix": n, "flags": "8"}})
            failed.append(check(r, n, "list"))
            r = self.s.get(self.url + "/v1/buckets/bad", timeout=60,
                           json={"action": "list", "value": {"prefix": n + "/a/", "flags": "8"}})
            failed.append(check(r, n, "list into"))
            self.assertTrue(any(failed), "%s: nothing noticed the corruption" % n)
        # a listing of the whole bucket still works: the bad shards without members
        ents = [e for p in self.list_pages("bad", 0, flags="8") for e in p]
        self.assertEqual(sorted(e[0] for e in ents if not e[2] & 128), sorted(bad))
        # nobody crashed
        for n in self.nodes:
            self.assertEqual(requests.get(self.c.node_url(n) + "/v1/health", timeout=10).status_code, 200, n)
        self.assertEqual(self.s.get(self.url + "/v1/objects/big/big.tar", params={"archpath": "m000007"}).status_code,
                         200)


def long_shard(n, salt=""):
    """A plain tar of n members with ~180-byte names (ustar prefix + name), in
    an order that is not name order; every 1000th member has data. Returns
    (bytes, [(name, data offset, data)] in archive order)."""
    out = io.BytesIO()
    members = []
    for i in range(n):
        k = (i * 7919) % n  # a permutation: archive order != name order
        name = "train/d%d/%06d/%s/%s.cls" % (k % 10, k, "x" * 120, "y" * 40 + salt)
        data = (b"v%d." % k) * 7 if k % 1000 == 0 else b""
        ti = tarfile.TarInfo(name)
        ti.size = len(data)
        ti.mtime = 1700000000
        out.write(ti.tobuf(format=tarfile.USTAR_FORMAT))
        members.append((name, out.tell(), data))
        out.write(data)
        if len(data) % 512:
            out.write(b"\0" * (512 - len(data) % 512))
    out.write(b"\0" * 1024)
    return out.getvalue(), members


def index_json(members):
    """archindex's body: the members in name order, compact JSON, a newline."""
    return (json.dumps([{"name": n, "offset": o, "size": len(d)} for n, o, d in sorted(members)],
                       separators=(",", ":")) + "\n").encode()


class AnonPeak:
    """Samples a process's RssAnon (heap, not the mapped LMDB and shard pages)
    while a request runs: `with AnonPeak(pid) as p: ...; p.growth_mib`."""

    def __init__(self, pid):
        self.pid = pid

    def anon_kib(self):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith("RssAnon:"):
                    return int(line.split()[1])
        raise AssertionError("no RssAnon for pid %d" % self.pid)

    def __enter__(self):
        self.before = self.peak = self.anon_kib()
        self.stop = threading.Event()

        def sample():
            for _ in range(600 * 200):  # at most 10 minutes
                if self.stop.wait(0.005):
                    return
                try:
                    self.peak = max(self.peak, self.anon_kib())
                except OSError:
                    return
        self.th = threading.Thread(target=sample)
        self.th.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.th.join(10)
        self.peak = max(self.peak, self.anon_kib())
        self.growth_mib = (self.peak - self.before) / 1024.0


# what a request may add to the node's heap: the code that built the whole
# answer in memory for a 200k-member shard added 50-150 MiB here
MEM_BOUND_MIB = 24
# the index build keeps one transaction's members and dirty pages (4096 of
# each: ~27 MiB in random name order); one transaction for all added ~140
INDEX_BOUND_MIB = 64


class TestArchiveMemory(unittest.TestCase):
    """archindex, archregx and the index build of a shard of 200k members with
    long names, each measured on a freshly started node (its heap not warmed
    by an earlier request)."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shale-amem-")
        cls.node = Node(cls.tmp).start(env=heap_env())
        cls.url = cls.node.url
        r = requests.post(cls.url + "/v1/buckets/b", json={"action": "create-bck"}, timeout=30)
        assert r.status_code == 200, r.text
        cls.data, cls.members = long_shard(BIG_N)
        r = requests.put(cls.url + "/v1/objects/b/long.tar", data=cls.data, timeout=600)
        assert r.status_code == 200, r.text

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def fresh(self):
        self.node.restart()
        return AnonPeak(self.node.proc.pid)

    def test_archindex_streamed(self):
        """archindex of 200k members: byte for byte the JSON array, heap bounded"""
        with self.fresh() as p:
            r = requests.get(self.url + "/v1/objects/b/long.tar", params={"archindex": "true"}, timeout=600)
        print("archindex: RssAnon +%.1f MiB" % p.growth_mib)
        self.assertEqual(r.status_code, 200, r.text[:300])
        self.assertTrue(r.headers["Content-Type"].startswith("application/json"))
        self.assertEqual(r.content, index_json(self.members))
        self.assertLess(p.growth_mib, MEM_BOUND_MIB, "archindex of a 200k-member shard grew the heap by %.1f MiB" %
                        p.growth_mib)
        # each entry's range of the shard is the member
        ents = r.json()
        for e in ents[::997]:
            self.assertEqual(self.data[e["offset"]:e["offset"] + e["size"]],
                             dict((n, d) for n, _, d in self.members)[e["name"]])

    def test_archregx_streamed(self):
        """a selection of all 200k members (and of a few) as a tar stream: every
        match in archive order with its data, heap bounded"""
        with self.fresh() as p:
            r = requests.get(self.url + "/v1/objects/b/long.tar", params={"archregx": "train/",
                                                                       "archmode": "prefix"}, timeout=600)
        print("archregx: RssAnon +%.1f MiB" % p.growth_mib)
        self.assertEqual(r.status_code, 200, r.text[:300])
        with tarfile.open(fileobj=io.BytesIO(r.content)) as t:
            got = [(m.name, t.extractfile(m).read()) for m in t]
        self.assertEqual(got, [(n, d) for n, _, d in self.members])
        self.assertLess(p.growth_mib, MEM_BOUND_MIB, "archregx over a 200k-member shard grew the heap by %.1f MiB" %
                        p.growth_mib)
        # a regexp that matches a few, spread over the shard; and none: 404
        r = requests.get(self.url + "/v1/objects/b/long.tar", params={"archregx": "/0[0-9]{2}000/",
                                                                   "archmode": "regexp"}, timeout=600)
        self.assertEqual(r.status_code, 200, r.text[:300])
        with tarfile.open(fileobj=io.BytesIO(r.content)) as t:
            got = [(m.name, t.extractfile(m).read()) for m in t]
        self.assertEqual(got, [(n, d) for n, _, d in self.members if re.search("/0[0-9]{2}000/", n)])
        self.assertEqual(len(got), 100)
        r = requests.get(self.url + "/v1/objects/b/long.tar", params={"archregx": "nothing", "archmode": "substr"},
                         timeout=600)
        self.assertEqual(r.status_code, 404, r.text[:300])

    def test_index_build_bounded(self):
        """PUT of a 200k-member shard (indexed before the PUT answers): heap
        bounded; the index is then used (flag-8 listing in name order)"""
        with self.fresh() as p:
            r = requests.put(self.url + "/v1/objects/b/copy.tar", data=self.data, timeout=600)
        print("index build: RssAnon +%.1f MiB" % p.growth_mib)
        self.assertEqual(r.status_code, 200, r.text[:300])
        self.assertLess(p.growth_mib, INDEX_BOUND_MIB, "indexing a 200k-member shard grew the heap by %.1f MiB" %
                        p.growth_mib)
        r = requests.get(self.url + "/v1/buckets/b", json={"action": "list", "value": {
            "prefix": "copy.tar/train/d3/", "flags": "8", "pagesize": 100000}}, timeout=600)
        self.assertEqual(r.status_code, 200, r.text[:300])
        names = [e["name"] for e in r.json()["entries"]]
        self.assertEqual(names[1:], sorted("copy.tar/" + n for n, _, _ in self.members if n.startswith("train/d3/")))


class TestIndexRebuild(unittest.TestCase):
    """The member index replaced over an old one bigger than one LMDB
    transaction's deletions, and an index build cut by a crash."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="shale-aidx-")
        self.node = None

    def tearDown(self):
        if self.node:
            self.node.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_reindex_over_big_index(self):
        """a shard of 120k members re-PUT with other names: the PUT answers and
        the index is the new one's"""
        self.node = Node(self.tmp).start()
        url = self.node.url
        requests.post(url + "/v1/buckets/b", json={"action": "create-bck"}, timeout=30)
        d1, m1 = long_shard(120000)
        self.assertEqual(requests.put(url + "/v1/objects/b/s.tar", data=d1, timeout=600).status_code, 200)
        d2, m2 = long_shard(120001, salt="v2")
        r = requests.put(url + "/v1/objects/b/s.tar", data=d2, timeout=120)
        self.assertEqual(r.status_code, 200, r.text[:300])
        r = requests.get(url + "/v1/objects/b/s.tar", params={"archindex": "true"}, timeout=600)
        self.assertEqual(r.content, index_json(m2))
        n, _, d = m2[-1]
        self.assertEqual(requests.get(url + "/v1/objects/b/s.tar", params={"archpath": n}, timeout=60).content, d)

    def test_crash_mid_build(self):
        """a node killed after the first batch of an index build: after the
        restart the partial index is not taken for the shard's, every member is
        found"""
        self.node = Node(self.tmp).start()
        url = self.node.url
        requests.post(url + "/v1/buckets/b", json={"action": "create-bck"}, timeout=30)
        data, members = long_shard(30000)
        self.node.stop()
        self.node.start(env={"SHALE_FAULT": "arch-index-batch"})
        try:
            requests.put(url + "/v1/objects/b/s.tar", data=data, timeout=120)
        except requests.RequestException:
            pass
        wait_until(lambda: self.node.proc.poll() is not None, 60, what="the node to stop at the fault")
        self.node.proc = None
        with open(os.path.join(self.node.dir, "stdout.log"), errors="replace") as f:
            self.assertIn("SHALE_FAULT=arch-index-batch reached", f.read())
        self.node.start()
        # the shard was stored before it was indexed
        self.assertEqual(requests.head(url + "/v1/objects/b/s.tar", timeout=30).status_code, 200)
        last = sorted(members)[-1]
        r = requests.get(url + "/v1/objects/b/s.tar", params={"archpath": last[0]}, timeout=60)
        self.assertEqual((r.status_code, r.content), (200, last[2]))
        r = requests.get(url + "/v1/objects/b/s.tar", params={"archindex": "true"}, timeout=600)
        self.assertEqual(r.content, index_json(members))


if __name__ == "__main__":
    main()
