#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Resilver (spec ha-durability.md §4): after a target's mountpaths change,
job resilver moves every object (file and metadata) to its HRW mountpath and
gives the objects of mirrored buckets their copies back; objects stay
readable meanwhile (a read that misses on the HRW mountpath looks on the
others), a crash in the middle of a move loses nothing, and a manual run
(`PUT /v1/cluster start resilver`, `shale storage resilver`) re-makes a
mirror copy that was lost on its own."""
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

import requests
import xxhash

from harness import SHALE, Node, hrw_mix, main, wait_until

J = {"Content-Type": "application/json"}
MLCG32 = 1103515245
def hrw_mpath(mpaths, bucket, name):
    """The mountpath of an object inside its target (spec §13.3, store.c sl_store_pick)."""
    d = xxhash.xxh64(("ais/@#/%s/%s" % (bucket, name)).encode(), seed=MLCG32).intdigest()
    return max(mpaths, key=lambda p: hrw_mix(xxhash.xxh64(p.encode(), seed=MLCG32).intdigest() ^ d))


def copy_fname(name):
    return ".x" + hashlib.sha256(name.encode()).hexdigest()


class ResilverTest(unittest.TestCase):
    NOBJ = 120

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="shale-test-")
        self.s = requests.Session()
        d = os.path.join(self.tmp, "n0")
        self.mps = [os.path.join(d, "mp%d" % i) for i in range(1, 4)]
        self.node = None

    def tearDown(self):
        if self.node:
            self.node.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    # ---- helpers ----

    def start(self, mpaths, env=None, wait=True):
        if self.node is None:
            self.node = Node(self.tmp, fspaths=mpaths)
        else:
            self.node.config["fspaths"] = {p: "" for p in mpaths}
            self.node.write_config()
        self.node.start(env=env, wait=wait)
        self.url = self.node.url
        return self.node

    def populate(self):
        """ais://plain and ais://mir (2 replicas of each object): name -> md5"""
        self.data = {}
        r = self.s.post(self.url + "/v1/buckets/plain", headers=J, data=json.dumps({"action": "create-bck"}))
        self.assertEqual(r.status_code, 200, r.text)
        r = self.s.post(self.url + "/v1/buckets/mir", headers=J, data=json.dumps(
            {"action": "create-bck", "value": {"mirror": {"enabled": True, "copies": 2}}}))
        self.assertEqual(r.status_code, 200, r.text)
        for i in range(self.NOBJ):
            for b in ("plain", "mir"):
                name = "d%d/o%03d" % (i % 4, i)
                body = os.urandom(500 + 37 * i)
                r = self.s.put(self.url + "/v1/objects/%s/%s" % (b, name), data=body, timeout=60)
                self.assertEqual(r.status_code, 200, r.text)
                self.data[(b, name)] = hashlib.md5(body).hexdigest()
        wait_until(lambda: all(self.copies(b, n)[0] == 2 for (b, n) in self.data if b == "mir"), 60,
                   what="put-copies")

    def head(self, b, name):
        r = self.s.head(self.url + "/v1/objects/%s/%s" % (b, name), timeout=30)
        self.assertEqual(r.status_code, 200, "%s/%s: %s" % (b, name, r.headers))
        return r.headers

    def copies(self, b, name):
        h = self.head(b, name)
        return int(h["Ais-Mirror-Copies"]), h["Ais-Mirror-Paths"].strip("[]").split()

    def check_reads(self):
        for (b, name), md5 in self.data.items():
            r = self.s.get(self.url + "/v1/objects/%s/%s" % (b, name), timeout=30)
            self.assertEqual(r.status_code, 200, "%s/%s: %s" % (b, name, r.text))
            self.assertEqual(hashlib.md5(r.content).hexdigest(), md5, "%s/%s" % (b, name))

    def check_placement(self, mpaths, removed=()):
        """every object's main file and metadata on its HRW mountpath, nowhere else; 2 replicas in ais://mir"""
        for (b, name) in self.data:
            want = hrw_mpath(mpaths, b, name)
            self.assertEqual(self.head(b, name)["Ais-Location"].split(":", 1)[1], want, "%s/%s" % (b, name))
            for mp in mpaths + list(removed):
                f = os.path.join(mp, "@ais", b, "%ob", name)
                self.assertEqual(os.path.isfile(f), mp == want, f)
            if b == "mir":
                n, paths = self.copies(b, name)
                self.assertEqual(n, 2, name)
                self.assertEqual(paths[0], want)
                self.assertNotEqual(paths[1], want)
                self.assertIn(paths[1], mpaths)
                self.assertTrue(os.path.isfile(os.path.join(paths[1], "@ais", b, "%ob", copy_fname(name))))

    def jobs(self, kind="resilver"):
        r = self.s.get(self.url + "/v1/cluster", params={"what": "qryxstats"}, json={"Kind": kind}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        return [j for arr in r.json().values() for j in (arr or [])]

    def wait_resilver(self, jid=None, timeout=120):
        out = {}

        def done():
            js = [j for j in self.jobs() if not jid or j["id"] == jid]
            out["j"] = js
            return js and all(j["end_ns"] for j in js)
        wait_until(done, timeout, what="resilver")
        for j in out["j"]:
            self.assertFalse(j.get("aborted"), j)
            self.assertFalse(j.get("err"), j)
        return out["j"][0]["stats"]

    # ---- tests ----

    def test_add_mountpath(self):
        """2 -> 3 mountpaths: a resilver starts by itself, moves what HRW now puts on the new mountpath while
        every object stays readable, and ends with every object on its HRW mountpath, mirrored ones with 2
        replicas, checksums intact"""
        self.start(self.mps[:2])
        self.populate()
        self.check_placement(self.mps[:2])
        self.node.stop()
        moving = [k for k in self.data if hrw_mpath(self.mps, *k) != hrw_mpath(self.mps[:2], *k)]
        self.assertTrue(len(moving) > 10, moving)
        # readers from the moment the node serves until the job has ended
        errors, reads = [], [0]
        stop = threading.Event()

        def reader():
            s = requests.Session()
            while not stop.is_set() and reads[0] < 100000:
                for (b, name) in moving:
                    try:
                        r = s.get(self.node.url + "/v1/objects/%s/%s" % (b, name), timeout=30)
                    except requests.ConnectionError:
                        break
                    reads[0] += 1
                    if r.status_code != 200 or hashlib.md5(r.content).hexdigest() != self.data[(b, name)]:
                        errors.append((b, name, r.status_code))
        self.start(self.mps)
        t = threading.Thread(target=reader)
        t.start()
        try:
            j = self.wait_resilver()
        finally:
            stop.set()
            t.join(60)
        self.assertEqual(errors, [])
        self.assertGreater(reads[0], 0)
        self.assertEqual(int(j["in-objs"]), len(moving), j)
        self.check_placement(self.mps)
        self.check_reads()
        self.assertIn("the mountpaths changed since the last run", self.node.log())
        # listed once each
        r = self.s.get(self.url + "/v1/buckets/mir", json={"action": "list", "value": {"props": "name,size"}})
        names = [e["name"] for e in r.json()["entries"]]
        self.assertEqual(sorted(names), sorted(n for (b, n) in self.data if b == "mir"))
        # the same mountpaths again: nothing to do, no job
        self.node.restart()
        self.assertNotIn("started by the target itself", self.node.log().split("signal 15: shutting down")[-1])
        self.assertEqual(self.jobs(), [])

    def test_remove_mountpath(self):
        """3 -> 2 mountpaths (the removed one's directory still there): its objects are moved off it, copies it
        held are made again elsewhere; every object ends on its HRW mountpath with 2 replicas in ais://mir"""
        self.start(self.mps)
        self.populate()
        self.node.stop()
        on_gone = [k for k in self.data if hrw_mpath(self.mps, *k) == self.mps[2]]
        self.assertTrue(on_gone)
        self.start(self.mps[:2])
        j = self.wait_resilver()
        self.assertEqual(int(j["in-objs"]), len(on_gone), j)
        self.check_placement(self.mps[:2], removed=[self.mps[2]])
        self.check_reads()
        self.assertIn("moving the objects off removed mountpath " + self.mps[2], self.node.log())

    def test_crash_mid_move(self):
        """SIGKILL-like exit right after a moved file is renamed into place (metadata committed on the new
        mountpath, not yet removed from the old): nothing is lost; the next start runs the resilver again"""
        self.start(self.mps[:2])
        self.populate()
        self.node.stop()
        self.start(self.mps, env={"SHALE_FAULT": "resilver-after-rename"}, wait=False)
        wait_until(lambda: self.node.proc.poll() is not None, 60, what="the injected crash")
        self.assertEqual(self.node.proc.returncode, 137)
        self.node.proc = None
        self.start(self.mps)
        self.wait_resilver()
        self.check_placement(self.mps)
        self.check_reads()
        self.assertEqual(self.node.log().count("started by the target itself"), 2)

    def test_manual_remakes_lost_copy(self):
        """a mirror copy deleted on disk comes back with a manual resilver (REST with DaemonID, and the CLI)"""
        self.start(self.mps)
        self.populate()
        victims = [n for (b, n) in self.data if b == "mir"][:5]
        for name in victims:
            n, paths = self.copies("mir", name)
            os.unlink(os.path.join(paths[1], "@ais", "mir", "%ob", copy_fname(name)))
        tid = self.head("mir", victims[0])["Ais-Location"].split("]")[0][2:]
        r = self.s.put(self.url + "/v1/cluster", headers=J, data=json.dumps(
            {"action": "start", "value": {"Kind": "resilver", "DaemonID": tid}}))
        self.assertEqual(r.status_code, 200, r.text)
        j = self.wait_resilver(r.text)
        self.assertEqual(int(j["loc-objs"]), len(victims), j)
        self.assertEqual(int(j["in-objs"]), 0, j)
        self.check_placement(self.mps)
        self.check_reads()
        # a node that is not in the cluster: 404, nothing started
        n = len(self.jobs())
        r = self.s.put(self.url + "/v1/cluster", headers=J, data=json.dumps(
            {"action": "start", "value": {"Kind": "resilver", "DaemonID": "nosuchnode"}}))
        self.assertEqual(r.status_code, 404, r.text)
        self.assertIn("nosuchnode", r.text)
        self.assertEqual(len(self.jobs()), n)
        # the CLI: lose one more copy, `shale storage resilver --wait`
        name = victims[0]
        os.unlink(os.path.join(self.copies("mir", name)[1][1], "@ais", "mir", "%ob", copy_fname(name)))
        env = dict(os.environ, AIS_ENDPOINT=self.url)
        p = subprocess.run([SHALE, "storage", "resilver", "t[%s]" % tid, "--wait"], env=env, capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("finished", p.stdout)
        self.check_placement(self.mps)

    # ---- a mountpath lost for good: mirror copies carry the metadata ----

    def populate_md(self, n=300):
        """ais://md (2 replicas): objects with custom metadata, every third one written twice (version 2) and
        every fifth one PATCHed after its copies were made; name -> (md5, checksum, version, custom)"""
        r = self.s.post(self.url + "/v1/buckets/md", headers=J, data=json.dumps(
            {"action": "create-bck", "value": {"mirror": {"enabled": True, "copies": 2}}}))
        self.assertEqual(r.status_code, 200, r.text)
        bodies = {}
        for i in range(n):
            name = "m%d/o%04d" % (i % 7, i)
            for v in range(2 if i % 3 == 0 else 1):
                body = os.urandom(300 + 41 * i + v)
                r = self.s.put(self.url + "/v1/objects/md/" + name, data=body, timeout=60,
                               headers={"Ais-Custom-Md": "src=test,idx=%d,v=%d" % (i, v)})
                self.assertEqual(r.status_code, 200, r.text)
                bodies[name] = hashlib.md5(body).hexdigest()
        wait_until(lambda: all(self.copies("md", nm)[0] == 2 for nm in bodies), 120, what="put-copies")
        for i, name in enumerate(sorted(bodies)):
            if i % 5 == 0:
                r = self.s.patch(self.url + "/v1/objects/md/" + name, headers=J,
                                 data=json.dumps({"value": {"patched": "yes"}}), timeout=30)
                self.assertEqual(r.status_code, 200, r.text)
        self.md = {}
        for name, md5 in bodies.items():
            h = self.head("md", name)
            self.md[name] = (md5, h["Ais-Checksum-Value"], h["Ais-Version"], h["Ais-Custom-Md"])
        self.assertTrue(any(v[2] == "2" for v in self.md.values()))
        self.assertTrue(any("patched=yes" in v[3] for v in self.md.values()))

    def lose_mountpath(self, env=None, wait=True):
        """stop, the third mountpath's disk gone for good (rm -rf, out of fspaths), start: the names whose main
        replica (and metadata) were there"""
        self.node.stop()
        lost = [n for n in self.md if hrw_mpath(self.mps, "md", n) == self.mps[2]]
        self.assertGreater(len(lost), 30)
        shutil.rmtree(self.mps[2])
        self.start(self.mps[:2], env=env, wait=wait)
        return lost

    def check_md(self, names):
        for name in names:
            md5, ck, ver, custom = self.md[name]
            r = self.s.get(self.url + "/v1/objects/md/" + name, timeout=30)
            self.assertEqual(r.status_code, 200, "%s: %s" % (name, r.text))
            self.assertEqual(hashlib.md5(r.content).hexdigest(), md5, name)
            h = self.head("md", name)
            self.assertEqual((h["Ais-Checksum-Value"], h["Ais-Version"], h["Ais-Custom-Md"]), (ck, ver, custom),
                             name)
            n, paths = self.copies("md", name)
            self.assertEqual(n, 2, name)
            self.assertEqual(len(set(paths)), 2, name)
            self.assertTrue(set(paths) <= set(self.mps[:2]), (name, paths))
            self.assertEqual(paths[0], hrw_mpath(self.mps[:2], "md", name))

    def listed(self, b):
        r = self.s.get(self.url + "/v1/buckets/" + b, json={"action": "list", "value": {"props": "name,size"}},
                       timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        return [e["name"] for e in r.json()["entries"] or []]

    def test_lost_mountpath_copies_promoted(self):
        """the disk of one of 3 mountpaths is gone (directory deleted, out of fspaths): every object of a 2-way
        mirrored bucket stays readable (reads never fail, even before the resilver got to it), with its
        checksum, version and custom metadata (PATCHed ones included), and ends with 2 replicas on the
        remaining mountpaths, listed once"""
        self.start(self.mps)
        self.populate_md()
        errors, reads = [], [0]
        stop = threading.Event()
        lost = self.lose_mountpath(wait=False)

        def reader():
            s = requests.Session()
            for _ in range(200):
                if stop.is_set():
                    break
                for name in lost:
                    try:
                        r = s.get(self.node.url + "/v1/objects/md/" + name, timeout=30)
                    except requests.ConnectionError:
                        time.sleep(0.05)
                        break
                    reads[0] += 1
                    if r.status_code != 200 or hashlib.md5(r.content).hexdigest() != self.md[name][0]:
                        errors.append((name, r.status_code, r.text[:200]))
        t = threading.Thread(target=reader)
        t.start()
        try:
            self.node.wait_ready()
            j = self.wait_resilver()
        finally:
            stop.set()
            t.join(120)
        self.assertEqual(errors, [])
        self.assertGreaterEqual(int(j["in-objs"]), 1, j)
        self.check_md(self.md)
        self.assertEqual(sorted(self.listed("md")), sorted(self.md))
        self.assertIn("is its main replica on", self.node.log())
        # and it stays so: a restart has nothing to do
        self.node.restart()
        self.check_md(lost[:20])

    def test_replaced_empty_disk(self):
        """a mountpath's disk is replaced by an empty one (the directory is there, its contents are not; fspaths
        unchanged): at start the target notices, says so, resilvers by itself, and every object of the mirrored
        bucket reads back with 2 replicas, listed once; shown in node_status, `shale storage` and /metrics (the
        build before noticed nothing: the objects whose main was there answered 404 until an operator ran
        `shale storage resilver`)"""
        self.start(self.mps)
        self.populate_md()
        self.node.stop()
        lost = [n for n in self.md if hrw_mpath(self.mps, "md", n) == self.mps[2]]
        self.assertGreater(len(lost), 30)
        shutil.rmtree(self.mps[2])
        os.makedirs(self.mps[2])  # (the new disk, mounted where the old one was)
        self.start(self.mps)
        j = self.wait_resilver()
        self.assertGreaterEqual(int(j["in-objs"]), 1, j)
        self.assertIn("has none of its contents now", self.node.log())
        for name in self.md:
            md5, ck, ver, custom = self.md[name]
            r = self.s.get(self.url + "/v1/objects/md/" + name, timeout=30)
            self.assertEqual(r.status_code, 200, "%s: %s" % (name, r.text))
            self.assertEqual(hashlib.md5(r.content).hexdigest(), md5, name)
            n, paths = self.copies("md", name)
            self.assertEqual((n, len(set(paths))), (2, 2), name)
            self.assertEqual(paths[0], hrw_mpath(self.mps, "md", name))
        self.assertEqual(sorted(self.listed("md")), sorted(self.md))
        st = self.s.get(self.url + "/v1/daemon?what=node_status", timeout=10).json()["capacity"]
        self.assertEqual(st["mountpath_state"], {self.mps[0]: "ok", self.mps[1]: "ok", self.mps[2]: "emptied"})
        metrics = [ln for ln in self.s.get(self.url + "/metrics", timeout=10).text.splitlines() if "emptied" in ln]
        self.assertEqual(len(metrics), 3, metrics)  # HELP, TYPE and the value
        self.assertRegex(metrics[2], r'^ais_target_mpath_emptied_n\{node_id="[^"]+"\} 1$')
        # while it runs, another mountpath loses its contents: noticed within the watcher's 5 s, and said
        idf = os.path.join(self.mps[1], ".shale", "daemon_id")
        os.rename(idf, idf + ".away")
        try:
            wait_until(lambda: self.s.get(self.url + "/v1/daemon?what=node_status", timeout=10).json()["capacity"][
                "mountpath_state"][self.mps[1]] == "vanished", 20, interval=0.5, what="the lost mountpath noticed")
            self.assertIn("lost its contents while this target runs", self.node.log())
            env = dict(os.environ, AIS_ENDPOINT=self.url)
            p = subprocess.run([SHALE, "storage"], env=env, capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("%s: found without its contents at start" % self.mps[2], p.stdout)
            self.assertIn("%s: lost its contents while the target runs" % self.mps[1], p.stdout)
        finally:
            os.rename(idf + ".away", idf)

    def test_lost_mountpath_deleted_stay_deleted(self):
        """objects deleted before the disk was lost do not come back from what their copies left, nor do those
        deleted while the resilver runs (before or after their copy was promoted); the others survive"""
        self.start(self.mps)
        self.populate_md(n=150)
        on_lost = [n for n in self.md if hrw_mpath(self.mps, "md", n) == self.mps[2]]
        gone = on_lost[::2]
        for name in gone:
            r = self.s.delete(self.url + "/v1/objects/md/" + name, timeout=30)
            self.assertEqual(r.status_code, 200, r.text)
        self.lose_mountpath()
        late = on_lost[1::2][:10]
        for name in late:
            r = self.s.delete(self.url + "/v1/objects/md/" + name, timeout=30)
            self.assertEqual(r.status_code, 200, "%s: %s" % (name, r.text))
        self.wait_resilver()
        for name in gone + late:
            r = self.s.get(self.url + "/v1/objects/md/" + name, timeout=30)
            self.assertEqual(r.status_code, 404, "%s came back" % name)
            for mp in self.mps[:2]:
                self.assertFalse(os.path.exists(os.path.join(mp, "@ais", "md", "%ob", copy_fname(name))), name)
        kept = [n for n in self.md if n not in gone and n not in late]
        self.check_md(kept)
        self.assertEqual(sorted(self.listed("md")), sorted(kept))
        # nor after another restart (no record of theirs is left to promote)
        self.node.restart()
        for name in gone + late:
            self.assertEqual(self.s.head(self.url + "/v1/objects/md/" + name, timeout=30).status_code, 404, name)

    def test_promote_crash(self):
        """a crash right after a promoted copy was renamed into place as the main replica: nothing is lost; the
        next start finishes the job"""
        self.start(self.mps)
        self.populate_md(n=120)
        self.lose_mountpath(env={"SHALE_FAULT": "promote-after-rename"}, wait=False)
        wait_until(lambda: self.node.proc.poll() is not None, 60, what="the injected crash")
        self.assertEqual(self.node.proc.returncode, 137)
        self.node.proc = None
        self.start(self.mps[:2])
        self.wait_resilver()
        self.check_md(self.md)
        self.assertEqual(sorted(self.listed("md")), sorted(self.md))

    def test_lost_mountpath_hashed_names(self):
        """objects stored under a hashed file name (a path segment over 255 bytes) whose main replica's
        mountpath is lost while their copy is on the mountpath the copy is promoted to: the promoted main (the
        same path as that copy) stays when the copy's record goes"""
        self.start(self.mps)
        r = self.s.post(self.url + "/v1/buckets/hx", headers=J, data=json.dumps(
            {"action": "create-bck", "value": {"mirror": {"enabled": True, "copies": 2}}}))
        self.assertEqual(r.status_code, 200, r.text)
        data = {}
        for i in range(60):
            name = "h%02d/%s" % (i, "y" * 300)
            body = os.urandom(200 + 13 * i)
            r = self.s.put(self.url + "/v1/objects/hx/" + name, data=body, timeout=60)
            self.assertEqual(r.status_code, 200, r.text)
            data[name] = hashlib.md5(body).hexdigest()
        wait_until(lambda: all(self.copies("hx", n)[0] == 2 for n in data), 60, what="put-copies")
        rest = self.mps[:2]
        hit = [n for n in data if hrw_mpath(self.mps, "hx", n) == self.mps[2] and
               self.copies("hx", n)[1][1] == hrw_mpath(rest, "hx", n)]
        self.assertGreater(len(hit), 0)
        self.node.stop()
        shutil.rmtree(self.mps[2])
        self.start(rest)
        self.wait_resilver()
        for name, md5 in data.items():
            r = self.s.get(self.url + "/v1/objects/hx/" + name, timeout=30)
            self.assertEqual(r.status_code, 200, "%s: %s" % (name[:8], r.text))
            self.assertEqual(hashlib.md5(r.content).hexdigest(), md5, name[:8])
        self.node.restart()
        for name in hit:
            r = self.s.get(self.url + "/v1/objects/hx/" + name, timeout=30)
            self.assertEqual(r.status_code, 200, "%s: %s" % (name[:8], r.text))

    def test_unlisted_copy_deleted(self):
        """a crash between a mirror copy's record and the main's metadata naming it, then a DELETE: the copy
        goes with the object (all copy records do, not only the listed ones), and a resilver after the main's
        mountpath is lost does not bring the object back"""
        self.start(self.mps)
        r = self.s.post(self.url + "/v1/buckets/md", headers=J, data=json.dumps(
            {"action": "create-bck", "value": {"mirror": {"enabled": True, "copies": 2}}}))
        self.assertEqual(r.status_code, 200, r.text)
        name = next(n for n in ("u%d" % i for i in range(100)) if hrw_mpath(self.mps, "md", n) == self.mps[2])
        self.node.stop()
        self.start(self.mps, env={"SHALE_FAULT": "mirror-after-record"})
        r = self.s.put(self.url + "/v1/objects/md/" + name, data=b"x" * 1000, timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        wait_until(lambda: self.node.proc.poll() is not None, 60, what="the injected crash")
        self.assertEqual(self.node.proc.returncode, 137)
        self.node.proc = None
        self.start(self.mps)
        self.assertEqual(self.copies("md", name)[0], 1)  # the copy is not listed...
        left = [mp for mp in self.mps[:2] if os.path.isfile(os.path.join(mp, "@ais", "md", "%ob", copy_fname(name)))]
        self.assertEqual(len(left), 1)  # ...but it is there, with its record
        r = self.s.delete(self.url + "/v1/objects/md/" + name, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertFalse(os.path.exists(os.path.join(left[0], "@ais", "md", "%ob", copy_fname(name))))
        self.node.stop()
        shutil.rmtree(self.mps[2])
        self.start(self.mps[:2])
        self.wait_resilver()
        self.assertEqual(self.s.get(self.url + "/v1/objects/md/" + name, timeout=30).status_code, 404)
        self.assertEqual(self.listed("md"), [])


if __name__ == "__main__":
    main()
