# SPDX-License-Identifier: MIT
"""get-batch (GET /v1/ml/moss) against a real 3-target cluster and a
standalone node: objects from every target, shard members and byte ranges in
exactly request order, streamed (tar, tgz, tar.lz4) and multipart (metadata
+ archive, zip too), opaque passed back, onob, coer's __404__ entries, errors
before the first byte, and bad requests refused with 4xx."""
import email.parser
import io
import json
import os
import random
import subprocess
import tarfile
import zipfile

from harness import ClusterTest, NodeTest, cluster_sig, main, make_tar, wait_until


def tar_entries(data, mode="r:*"):
    with tarfile.open(fileobj=io.BytesIO(data), mode=mode) as tf:
        return [(m.name, tf.extractfile(m).read()) for m in tf.getmembers()]


class GetBatchApi:
    def moss(self, body, bucket="", params=None, stream=False):
        path = "/v1/ml/moss" + ("/" + bucket if bucket else "")
        return self.s.get(self.url + path, data=json.dumps(body), params=params,
                          headers={"Content-Type": "application/json"}, timeout=60, stream=stream)

    def populate(self):
        rnd = random.Random(5)
        self.objs = {}
        r = self.s.post(self.url + "/v1/buckets/gb", json={"action": "create-bck"}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        for i in range(40):
            name = "obj-%03d.bin" % i
            data = bytes(rnd.getrandbits(8) for _ in range(1024 + 37 * i))
            self.objs[name] = data
            self.assertEqual(self.s.put(self.url + "/v1/objects/gb/" + name, data=data, timeout=30).status_code, 200)
        self.members = [("s%02d.jpg" % i, os.urandom(500 + i)) for i in range(10)]
        self.s.put(self.url + "/v1/objects/gb/shard.tar", data=make_tar(self.members), timeout=30).raise_for_status()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w:gz") as tf:
            ti = tarfile.TarInfo("inner/a.txt")
            ti.size = 5
            tf.addfile(ti, io.BytesIO(b"hello"))
        self.s.put(self.url + "/v1/objects/gb/shard.tgz", data=buf.getvalue(), timeout=30).raise_for_status()
        r = self.s.post(self.url + "/v1/buckets/other", json={"action": "create-bck"}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        self.s.put(self.url + "/v1/objects/other/x.txt", data=b"from another bucket", timeout=30).raise_for_status()

    def request_items(self):
        names = list(self.objs)
        random.Random(9).shuffle(names)
        items = [{"objname": n} for n in names[:25]]
        items.insert(3, {"objname": "shard.tar", "archpath": "s07.jpg"})
        items.insert(9, {"objname": "shard.tgz", "archpath": "inner/a.txt", "opaque": "b3BhcXVl"})
        items.insert(12, {"objname": names[30], "start": 100, "length": 50})
        items.insert(14, {"objname": names[31], "start": 1000, "length": -1})
        items.insert(16, {"objname": "x.txt", "bucket": "other"})
        items.insert(18, {"objname": "shard.tar", "archpath": "s02.jpg", "start": 10, "length": 20})
        return items

    def expected(self, items, onob=False):
        out = []
        for it in items:
            b = it.get("bucket", "gb")
            name = it["objname"] if onob else "%s/%s" % (b, it["objname"])
            if it.get("archpath"):
                name += "/" + it["archpath"]
                data = dict(self.members).get(it["archpath"], b"hello")
            elif b == "other":
                data = b"from another bucket"
            else:
                data = self.objs[it["objname"]]
            s, ln = it.get("start", 0), it.get("length", 0)
            if s or ln:
                data = data[s:] if ln == -1 else data[s:s + ln]
            out.append((name, data))
        return out

    def check_stream(self):
        items = self.request_items()
        r = self.moss({"in": items, "strm": True}, bucket="gb")
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.headers["Content-Type"], "application/x-tar")
        self.assertEqual(tar_entries(r.content), self.expected(items))

    def check_multipart(self, mime=".tar"):
        items = self.request_items()
        r = self.moss({"in": items, "mime": mime}, bucket="gb")
        self.assertEqual(r.status_code, 200, r.text)
        ct = r.headers["Content-Type"]
        self.assertTrue(ct.startswith("multipart/mixed; boundary="), ct)
        msg = email.parser.BytesParser().parsebytes(b"Content-Type: " + ct.encode() + b"\r\n\r\n" + r.content)
        parts = msg.get_payload()
        self.assertEqual(len(parts), 2)
        self.assertIn('name="metadata"', parts[0]["Content-Disposition"])
        meta = json.loads(parts[0].get_payload(decode=True))
        archive = parts[1].get_payload(decode=True)
        self.assertIn('name="archive"', parts[1]["Content-Disposition"])
        exp = self.expected(items)
        self.assertEqual(len(meta["out"]), len(items))
        for it, o, (_, data) in zip(items, meta["out"], exp):
            self.assertEqual(o["objname"], it["objname"])
            self.assertEqual(o["size"], len(data))
            self.assertEqual(o.get("opaque"), it.get("opaque"))
            self.assertEqual(o.get("archpath"), it.get("archpath"))
        if mime == ".zip":
            z = zipfile.ZipFile(io.BytesIO(archive))
            got = [(n, z.read(n)) for n in z.namelist()]
        else:
            got = tar_entries(archive)
        self.assertEqual(got, exp)

    def check_errors(self):
        names = list(self.objs)[:3]
        items = [{"objname": names[0]}, {"objname": "nope.bin"}, {"objname": names[1]},
                 {"objname": "shard.tar", "archpath": "missing.jpg"}]
        r = self.moss({"in": items, "strm": True}, bucket="gb")
        self.assertEqual(r.status_code, 404, r.text)
        self.assertIn("nope.bin", r.text)
        self.assertIn("coer", r.text)
        r = self.moss({"in": items, "strm": True, "coer": True, "onob": True}, bucket="gb")
        self.assertEqual(r.status_code, 200, r.text)
        got = tar_entries(r.content)
        self.assertEqual([n for n, _ in got], [names[0], "__404__/nope.bin", names[1],
                                               "__404__/shard.tar/missing.jpg"])
        self.assertEqual(got[1][1], b"")
        self.assertEqual(got[0][1], self.objs[names[0]])
        r = self.moss({"in": items, "coer": True}, bucket="gb")
        self.assertEqual(r.status_code, 200, r.text)
        self.assertIn(b'"err_msg"', r.content)
        cases = [
            ({"in": []}, 400, "at least one"),
            ({"in": [{"objname": names[0]}], "mime": ".rar"}, 400, ".tar.lz4"),
            ({"in": [{"objname": names[0]}], "bogus": 1}, 400, "bogus"),
            ({"in": [{"objname": names[0]}], "mime": ".zip", "strm": True}, 400, "cannot be streamed"),
            ({"in": [{"objname": names[0], "start": 5, "length": 0}]}, 416, "length -1"),
            ({"in": [{"objname": names[0], "start": 5000000, "length": 1}]}, 416, "past the end"),
            ({"in": [{"objname": names[0], "archpath": "a.jpg"}]}, 400, "not a shard"),
            ({"in": [{"objname": "a", "bucket": "nosuchbucket"}]}, 404, "nosuchbucket"),
            ({"in": [{"objname": "x"}] * 10001}, 400, "max_items"),
            ({"in": [{"bucket": "gb"}]}, 400, "objname"),
        ]
        for body, code, text in cases:
            r = self.moss(body, bucket="gb")
            self.assertEqual(r.status_code, code, "%s: %s" % (json.dumps(body)[:200], r.text))
            self.assertIn(text, r.text)
        r = self.moss({"in": [{"objname": names[0]}]})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("no bucket", r.text)


EXAMPLES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "examples", "get-batch")
PLAN_SHARDS, PLAN_PER = 6, 10


class PlanApi:
    """Epoch plans: the order is the cluster's, the same on any cluster size."""

    def plan_data(self):
        r = self.s.post(self.url + "/v1/buckets/ds", json={"action": "create-bck"}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        self.plan_members = {}
        for i in range(PLAN_SHARDS):
            members = []
            for j in range(PLAN_PER):
                key = "part%d/k%02d-%02d" % (i % 2, i, j)
                if i == 5 and j == 0:
                    # one member named with over 100 characters: a pax header before its plain one, which
                    # the server finds when it checks the header (the run looks fine from the index)
                    members.append(("part1/" + "long" * 30 + ".jpg", b"long"))
                    continue
                members += [(key + ".jpg", b"img %d %d " % (i, j) * (j + 1)), (key + ".cls", b"%d" % (j % 3))]
            self.plan_members.update(members)
            self.s.put(self.url + "/v1/objects/ds/sh-%d.tar" % i, data=make_tar(members, mtime=1700000000),
                       timeout=30).raise_for_status()

    def batch(self, name, epoch, index):
        return self.s.get(self.url + "/v1/ml/plan/%s/batch" % name, params={"epoch": epoch, "index": index},
                          timeout=60)

    def epoch_keys(self, name, epoch, batches):
        """every member with its bytes; a batch whose samples are all runs of
        plain tar entries is served as those runs (the shards' mtime), one
        with the pax-headed sample member by member (mtime 0)"""
        keys, modes = [], set()
        for i in range(batches):
            r = self.batch(name, epoch, i)
            self.assertEqual(r.status_code, 200, r.text)
            last = None
            with tarfile.open(fileobj=io.BytesIO(r.content), mode="r:") as tf:
                ms = tf.getmembers()
                for m in ms:
                    self.assertEqual(tf.extractfile(m).read(), self.plan_members[m.name], m.name)
            long_one = any("long" in m.name for m in ms)
            self.assertEqual({m.mtime for m in ms}, {0 if long_one else 1700000000}, "batch %d" % i)
            modes.add(long_one)
            for m in ms:
                k = m.name.split(".")[0]
                if k != last:
                    self.assertNotIn(k, keys, "sample %s twice or split" % k)
                    keys.append(k)
                    last = k
        self.assertEqual(modes, {True, False}, "both ways of serving a batch were used")
        return keys

    def check_plan(self):
        r = self.s.put(self.url + "/v1/ml/plan", timeout=60, json={
            "name": "p1", "bck": "ais://ds", "template": "sh-{0..5}.tar", "seed": 7, "batch_size": 8})
        self.assertEqual(r.status_code, 200, r.text)
        info = r.json()
        self.assertEqual((info["samples"], info["batches"], info["shards"]), (60, 8, 6))
        e0 = self.epoch_keys("p1", 0, 8)
        self.assertEqual(len(e0), 60)
        self.assertEqual(sorted(e0), sorted({n.split(".")[0] for n in self.plan_members}))
        self.assertEqual(self.epoch_keys("p1", 0, 8), e0, "the same epoch, the same order")
        e1 = self.epoch_keys("p1", 1, 8)
        self.assertNotEqual(e1, e0)
        self.assertEqual(sorted(e1), sorted(e0))
        # samples are whole and in shard order within a sample; the same request gives the same bytes
        b3 = self.batch("p1", 2, 3)
        self.assertEqual(b3.content, self.batch("p1", 2, 3).content)
        names = [n for n, _ in tar_entries(b3.content)]
        self.assertIn(len(names), (15, 16))
        self.assertEqual(len({n.split(".")[0] for n in names}), 8)
        # drop_last, the listing, bad input
        r = self.s.put(self.url + "/v1/ml/plan", timeout=60, json={
            "name": "p2", "bck": "ds", "prefix": "sh-", "seed": "7", "batch_size": 8, "drop_last": True})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.json()["batches"], 7)
        self.assertEqual(sorted(p["name"] for p in self.s.get(self.url + "/v1/ml/plan", timeout=30).json()),
                         ["p1", "p2"])
        r = self.batch("p1", 0, 8)
        self.assertEqual(r.status_code, 404, r.text)
        self.assertIn("8 batches", r.text)
        cases = [
            ({"name": "p1", "bck": "ds", "prefix": "sh-", "batch_size": 4}, 409, "exists"),
            ({"name": "p3", "bck": "ds", "prefix": "nothing-", "batch_size": 4}, 404, "no .tar shards"),
            ({"name": "p3", "bck": "nosuch", "prefix": "sh-", "batch_size": 4}, 404, "nosuch"),
            ({"name": "p3", "bck": "ds", "prefix": "sh-", "batch_size": 0}, 400, "batch_size"),
            ({"name": "p3", "bck": "ds", "prefix": "sh-"}, 400, "batch_size"),
            ({"name": "bad name", "bck": "ds", "prefix": "sh-", "batch_size": 4}, 400, "name"),
            ({"name": "p3", "bck": "ds", "batch_size": 4}, 400, "exactly one"),
            ({"name": "p3", "bck": "ds", "template": "sh-{0..9}.tar", "batch_size": 4}, 404, "sh-6.tar"),
            ({"name": "p3", "bck": "gb", "prefix": "shard.tg", "batch_size": 4}, 404, "no .tar shards"),
            ({"name": "p3", "bck": "gb", "template": "obj-{000..001}.bin", "batch_size": 4}, 400, "obj-000.bin"),
        ]
        for body, code, text in cases:
            r = self.s.put(self.url + "/v1/ml/plan", json=body, timeout=60)
            self.assertEqual(r.status_code, code, "%s: %s" % (body, r.text))
            self.assertIn(text, r.text)
        self.assertEqual(self.batch("p1", -1, 0).status_code, 400)
        self.assertEqual(self.batch("nope", 0, 0).status_code, 404)
        r = self.s.delete(self.url + "/v1/ml/plan/p2", timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.s.get(self.url + "/v1/ml/plan/p2", timeout=30).status_code, 404)
        return e0


class GetBatchCluster(ClusterTest, GetBatchApi, PlanApi):
    def setUp(self):
        if not getattr(GetBatchCluster, "populated", False):
            self.populate()
            GetBatchCluster.populated = True
            GetBatchCluster.objs_, GetBatchCluster.members_ = self.objs, self.members
        self.objs, self.members = GetBatchCluster.objs_, GetBatchCluster.members_

    def test_stream_in_request_order(self):
        self.check_stream()
        # the gateway redirects (307) to a designated target, as AIStore's does
        r = self.s.get(self.url + "/v1/ml/moss/gb", data=json.dumps({"in": [{"objname": "obj-001.bin"}]}),
                       allow_redirects=False, timeout=30)
        self.assertEqual(r.status_code, 307, r.text)
        self.assertIn("/v1/ml/moss/gb/", r.headers["Location"])
        # items come from every target
        owners = set()
        for n in list(self.objs)[:25]:
            loc = self.s.get(self.url + "/v1/objects/gb/" + n, allow_redirects=False, timeout=30).headers["Location"]
            owners.add(loc.split("/v1/")[0])
        self.assertEqual(len(owners), 3)

    def test_job_in_qryxstats(self):
        """get-batch is a demand job per target (gbt-...), idle between requests; a known kind with no jobs
        answers 200 with an empty list per target, an unknown kind 400"""
        self.check_stream()
        q = lambda body: self.s.get(self.url + "/v1/cluster", params={"what": "qryxstats"}, json=body, timeout=30)
        r = q({"kind": "get-batch"})
        self.assertEqual(r.status_code, 200, r.text)
        snaps = [sn for arr in r.json().values() for sn in arr]
        self.assertTrue(snaps, r.text)
        for sn in snaps:
            self.assertTrue(sn["id"].startswith("gbt-"), sn)
            self.assertEqual(sn["kind"], "get-batch")
        wait_until(lambda: all(sn["is_idle"] for arr in q({"kind": "get-batch"}).json().values() for sn in arr), 30,
                   what="get-batch idle")
        items = sum(int(sn["stats"]["loc-objs"]) + int(sn["stats"]["in-objs"]) for sn in snaps)
        self.assertGreaterEqual(items, len(self.request_items()))
        r = q({"kind": "dsort"})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(len(r.json()), 3)
        self.assertEqual([v for v in r.json().values()], [[], [], []])
        r = q({"kind": "no-such-kind"})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("get-batch", r.text)
        self.assertEqual(q({"id": "gbt-nope"}).status_code, 404)
        p = self.c.cli("job", "show", "dsort", check=False)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("No running jobs", p.stdout)
        # ten seconds without requests: each job finishes (not "Running" forever), and the next request
        # starts a new one
        ids = {sn["id"] for sn in snaps}
        st = lambda jid: self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"id": jid},
                                    timeout=30).json()
        wait_until(lambda: all(st(j)["end_time"] != 0 for j in ids), 40, interval=0.5, what="idle get-batch jobs end")
        self.check_stream()
        again = {sn["id"] for arr in q({"kind": "get-batch"}).json().values() for sn in arr
                 if sn.get("end-time", "0001").startswith("0001")}
        self.assertTrue(again, "no get-batch job runs after a new request")
        self.assertFalse(again & ids, "the old jobs served the new request")

    def test_multipart_and_formats(self):
        self.check_multipart()
        self.check_multipart(".zip")
        items = self.request_items()
        r = self.moss({"in": items, "strm": True, "mime": ".tgz"}, bucket="gb")
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(tar_entries(r.content, "r:gz"), self.expected(items))
        r = self.moss({"in": items, "strm": True, "mime": ".tar.lz4", "coloc": 1}, bucket="gb")
        self.assertEqual(r.status_code, 200, r.text)
        raw = subprocess.run(["lz4", "-d", "-c"], input=r.content, capture_output=True, check=True).stdout
        self.assertEqual(tar_entries(raw), self.expected(items))

    def test_errors(self):
        self.check_errors()

    def test_cli(self):
        out = os.path.join(self.tmp, "batch.tar")
        names = list(self.objs)[:5]
        p = self.c.cli("ml", "get-batch", "ais://gb", out, "--list", ",".join(names), check=False)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(out, "rb") as f:
            self.assertEqual(tar_entries(f.read()), [("gb/" + n, self.objs[n]) for n in names])
        spec = os.path.join(self.tmp, "spec.json")
        with open(spec, "w") as f:
            json.dump({"in": [{"objname": n} for n in names[:2]], "onob": True}, f)
        p = self.c.cli("ml", "get-batch", "ais://gb", out, "--spec", spec, "--streaming", check=False)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(out, "rb") as f:
            self.assertEqual([n for n, _ in tar_entries(f.read())], names[:2])
        p = self.c.cli("ml", "get-batch", "ais://gb", out, "--prefix", "obj-00", "--omit-src-bck", "--nv", check=False)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout, "")
        with open(out, "rb") as f:
            self.assertEqual([n for n, _ in tar_entries(f.read())], ["obj-%03d.bin" % i for i in range(10)])
        p = self.c.cli("ml", "get-batch", "ais://gb", out, "--list", "obj-001.bin,nope", "--cont-on-err", "-f",
                       spec, check=False)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        with open(out, "rb") as f:
            self.assertEqual([n for n, _ in tar_entries(f.read())],
                             names[:2] + ["obj-001.bin", "__404__/nope"])
        p = self.c.cli("ml", "get-batch", "ais://gb", out, "--list", "nope", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("nope", p.stderr)


    def test_plan(self):
        GetBatchCluster.plan_keys = None
        self.plan_data()
        GetBatchCluster.plan_keys = self.check_plan()
        GetBatchCluster.plan_b3 = self.batch("p1", 2, 3).content
        # every target works out its own part of a batch from the plan: the parts add up to the batch, and a
        # target on another cluster map refuses instead of guessing
        sm = self.c.smap()
        ver = int(sm["version"])

        def part(t, v):  # (an intra-cluster call: signed with the cluster secret, as a node signs it)
            u = t["public_net"]["direct_url"] + "/v1/internal/plan/pull?plan=p1&epoch=2&index=3&smap=%d" % v
            r = self.s.get(u, timeout=30, headers=cluster_sig(os.path.join(self.c.dir, "p0", "cluster.secret"),
                                                              "GET", u))
            self.assertEqual(r.status_code, 200, r.text)
            hl = int.from_bytes(r.content[:8], "little")
            return json.loads(r.content[8:8 + hl])
        parts = [part(t, ver) for t in sm["tmap"].values()]
        self.assertEqual(sum(len(p) for p in parts), 8, parts)
        stale = part(next(iter(sm["tmap"].values())), ver + 100)
        self.assertIn("retry the batch", stale["error"])
        # the route of every batch: the target the gateway sends it to, asked directly gives the same bytes
        r = self.s.get(self.url + "/v1/ml/plan/p1/targets", params={"epoch": 2}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        rt = r.json()
        self.assertEqual((rt["from"], rt["batches"], len(rt["route"])), (0, 8, 8))
        self.assertTrue(set(rt["route"]) <= set(sm["tmap"]))
        direct = self.s.get(rt["targets"][rt["route"][3]] + "/v1/ml/plan/p1/batch", params={"epoch": 2, "index": 3},
                            allow_redirects=False, timeout=30)
        self.assertEqual(direct.status_code, 200)
        self.assertEqual(direct.content, GetBatchCluster.plan_b3)
        via = self.s.get(self.url + "/v1/ml/plan/p1/batch", params={"epoch": 2, "index": 3}, allow_redirects=False,
                         timeout=30)
        self.assertEqual(via.status_code, 307)
        self.assertTrue(via.headers["Location"].startswith(rt["targets"][rt["route"][3]]))
        r = self.s.get(self.url + "/v1/ml/plan/p1/targets", params={"epoch": 2, "from": 6}, timeout=30)
        self.assertEqual(r.json()["route"], rt["route"][6:])
        for bad in ({}, {"epoch": "-1"}, {"epoch": "x"}):
            self.assertEqual(self.s.get(self.url + "/v1/ml/plan/p1/targets", params=bad, timeout=30).status_code, 400)
        self.assertEqual(self.s.get(self.url + "/v1/ml/plan/nope/targets", params={"epoch": 0},
                                    timeout=30).status_code, 404)
        # the PyTorch reader: 3 DataLoader workers give the epoch in plan order, and resume from an index
        code = ("import sys, json; sys.path.insert(0, %r)\n"
                "from plan_dataset import PlanBatches\n"
                "from torch.utils.data import DataLoader\n"
                "def keys(start):\n"
                "    out = []\n"
                "    for index, samples in DataLoader(PlanBatches(%r, 'p1', epoch=0, start=start), batch_size=None,\n"
                "                                     num_workers=3):\n"
                "        out.append([index, [s['__key__'] for s in samples]])\n"
                "    return out\n"
                "print(json.dumps([keys(0), keys(5)]))\n") % (EXAMPLES, self.url)
        p = subprocess.run(["/usr/bin/python3", "-c", code], capture_output=True, text=True, timeout=300)
        self.assertEqual(p.returncode, 0, p.stderr)
        full, resumed = json.loads(p.stdout)
        self.assertEqual([i for i, _ in full], list(range(8)))
        self.assertEqual([k for _, ks in full for k in ks], GetBatchCluster.plan_keys)
        self.assertEqual(resumed, full[5:])


class GetBatchStandalone(NodeTest, GetBatchApi, PlanApi):
    def test_standalone(self):
        self.populate()
        self.check_stream()
        self.check_multipart()
        self.check_errors()

    def test_standalone_plan(self):
        """the same plan on one node gives the same order and bytes as on three targets, and survives a
        restart"""
        self.plan_data()
        keys = self.check_plan()
        if getattr(GetBatchCluster, "plan_keys", None):
            self.assertEqual(keys, GetBatchCluster.plan_keys)
            self.assertEqual(self.batch("p1", 2, 3).content, GetBatchCluster.plan_b3)
        self.node.stop()
        self.node.start()
        r = self.s.get(self.url + "/v1/ml/plan/p1", timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.epoch_keys("p1", 0, 8), keys)


if __name__ == "__main__":
    main()
