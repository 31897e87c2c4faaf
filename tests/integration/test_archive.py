# SPDX-License-Identifier: MIT
"""Shards through the format plugins: reading members (archpath, archregx +
archmode), the tar member index, listing shard contents (JSON and msgpack),
writing/appending members (Ais-Pine), the archive job, limits and bad input,
a crash in the middle of an append, and the out-of-tree .tar.zst example
plugin built against the installed header."""
import hashlib
import http.client
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import time
import unittest
import zipfile

import msgpack
import requests

from harness import BUILD, SRC, Cluster, Node, NodeTest, main, make_tar, make_zip, wait_until

FORMATS = [".tar", ".tgz", ".tar.gz", ".zip", ".tar.lz4"]


def tar_names(data):
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as t:
        return {m.name: t.extractfile(m).read() for m in t.getmembers() if m.isfile()}


def wait_job(url, jid, timeout=60):
    def done():
        r = requests.get(url + "/v1/cluster", params={"what": "status"}, json={"ID": jid})
        return r.status_code == 200 and r.json()["end_time"] != 0 and r.json()
    return wait_until(done, timeout, interval=0.1, what="job " + jid)


class TestArchive(NodeTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        for b in ("src", "dst"):
            r = cls.s.post(cls.url + "/v1/buckets/" + b, json={"action": "create-bck"})
            assert r.status_code == 200
        cls.members = {}
        for i in range(6):
            for ext in ("jpg", "cls", "seg.png"):
                name = "train/s%02d.%s" % (i, ext)
                data = os.urandom(100 + i * 500) if ext != "cls" else b"%d\n" % i
                cls.members[name] = data
                cls.s.put(cls.url + "/v1/objects/src/" + name, data=data)

    def archive(self, value, src="src"):
        return self.s.put(self.url + "/v1/buckets/" + src, json={"action": "archive", "value": value})

    def test_plugins_listed(self):
        pl = self.s.get(self.url + "/v1/daemon", params={"what": "plugins"}).json()
        loaded = {p["name"]: p for p in pl if p.get("status") == "loaded"}
        for n in ("tar", "tgz", "zip", "tar.lz4", "base_name", "full_name", "collapse_all_dir", "regex"):
            self.assertIn(n, loaded)
        self.assertIn(".tar.gz", loaded["tgz"]["extensions"])
        self.assertIn("index", loaded["tar"]["caps"])

    def test_formats_roundtrip(self):
        names = sorted(self.members)
        for ext in FORMATS:
            shard = "all" + ext
            r = self.archive({"archname": shard, "objnames": names, "tobck": {"name": "dst", "provider": "ais"}})
            self.assertEqual(r.status_code, 200, r.text)
            st = wait_job(self.url, r.text)
            self.assertEqual(st["err"], "", st)
            for n in names:
                r = self.get("dst", shard, params={"archpath": n})
                self.assertEqual(r.status_code, 200, (ext, n, r.text))
                self.assertEqual(r.content, self.members[n], (ext, n))
                self.assertNotIn("Ais-Checksum-Type", r.headers)
            # a leading '/' and a "<shard>/" prefix are not part of the member name
            r = self.get("dst", shard, params={"archpath": "/" + shard + "/" + names[0]})
            self.assertEqual(r.content, self.members[names[0]])
            r = self.get("dst", shard, params={"archpath": "train/none.jpg"})
            self.assertEqual(r.status_code, 404)
            self.assertIn("ais://dst/" + shard, r.json()["message"])
            self.assertIn("train/none.jpg", r.json()["message"])
            # the whole shard is readable by standard tools
            blob = self.get("dst", shard).content
            if ext == ".zip":
                z = zipfile.ZipFile(io.BytesIO(blob))
                self.assertEqual(sorted(z.namelist()), names)
            elif ext == ".tar.lz4":
                p = subprocess.run(["lz4", "-dc"], input=blob, capture_output=True)
                self.assertEqual(sorted(tar_names(p.stdout)), names)
            else:
                self.assertEqual(tar_names(blob), {n: self.members[n] for n in names})

    def test_archmode_selections(self):
        names = sorted(self.members)
        for ext in (".tar", ".zip", ".tgz"):
            shard = "sel" + ext
            r = self.archive({"archname": shard, "objnames": names, "tobck": {"name": "dst"}})
            wait_job(self.url, r.text)
            cases = {
                ("wdskey", "train/s03"): [n for n in names if n.startswith("train/s03.")],
                ("prefix", "train/s0"): names,
                ("suffix", ".png"): [n for n in names if n.endswith(".png")],
                ("substr", "s05.seg"): ["train/s05.seg.png"],
                ("regexp", "s0[12]\\.jpg$"): ["train/s01.jpg", "train/s02.jpg"],
            }
            for (mode, pat), want in cases.items():
                r = self.get("dst", shard, params={"archregx": pat, "archmode": mode})
                self.assertEqual(r.status_code, 200, (ext, mode, r.text))
                self.assertEqual(r.headers["Content-Type"], "application/x-tar")
                got = tar_names(r.content)
                self.assertEqual(sorted(got), sorted(want), (ext, mode))
                for n in want:
                    self.assertEqual(got[n], self.members[n])
            r = self.get("dst", shard, params={"archregx": "nothing", "archmode": "prefix"})
            self.assertEqual(r.status_code, 404)
            r = self.get("dst", shard, params={"archregx": "x", "archmode": "fuzzy"})
            self.assertEqual(r.status_code, 400)
            self.assertIn("wdskey", r.json()["message"])
            r = self.get("dst", shard, params={"archregx": "(", "archmode": "regexp"})
            self.assertEqual(r.status_code, 400)
            # a pattern whose compilation would take gigabytes and minutes (stacked or nested repetition) is
            # refused at once, and the node goes on serving
            for bomb in ("a" + "+" * 40, "(a{0,1000}){0,1000}", "((((a{9}){9}){9}){9}){9}"):
                r = self.s.get("%s/v1/objects/dst/%s" % (self.url, shard), params={"archregx": bomb,
                               "archmode": "regexp"}, timeout=10)
                self.assertEqual(r.status_code, 400, (bomb, r.text[:200]))
                self.assertIn("archregx", r.json()["message"])
            self.assertEqual(self.s.get(self.url + "/v1/health", timeout=5).status_code, 200)
            r = self.get("dst", shard, params={"archpath": names[0], "archmode": "prefix", "archregx": "x"})
            self.assertEqual(r.status_code, 400)
        # WebDataset key rule: the key ends at the first dot of the basename
        r = self.get("dst", "sel.tar", params={"archregx": "train/s04.seg", "archmode": "wdskey"})
        self.assertEqual(r.status_code, 404)

    def test_tar_index_and_ranges(self):
        names = sorted(self.members)
        r = self.archive({"archname": "idx.tar", "objnames": names, "tobck": {"name": "dst"}})
        wait_job(self.url, r.text)
        idx = self.get("dst", "idx.tar", params={"archindex": "true"}).json()
        self.assertEqual(sorted(e["name"] for e in idx), names)
        for e in idx:
            # the offsets are exact: a ranged read of the shard is the member
            rng = self.get("dst", "idx.tar", headers={"Range": "bytes=%d-%d" % (e["offset"], e["offset"] + e["size"] - 1)})
            self.assertEqual(rng.content, self.members[e["name"]])
        r = self.get("dst", "idx.tar", params={"archpath": names[0]}, headers={"Range": "bytes=0-1"})
        self.assertEqual(r.status_code, 400)
        r = self.archive({"archname": "noidx.zip", "objnames": names[:2], "tobck": {"name": "dst"}})
        wait_job(self.url, r.text)
        r = self.get("dst", "noidx.zip", params={"archindex": "true"})
        self.assertEqual(r.status_code, 400)

    def test_list_contents(self):
        names = sorted(self.members)
        r = self.archive({"archname": "ls.tgz", "objnames": names[:5], "tobck": {"name": "dst"}})
        wait_job(self.url, r.text)
        j = self.list_objects("dst", prefix="ls.tgz", flags="8").json()
        ents = j["entries"]
        self.assertEqual(ents[0]["name"], "ls.tgz")
        self.assertTrue(ents[0]["flags"] & 512)
        self.assertEqual([e["name"] for e in ents[1:]], ["ls.tgz/" + n for n in names[:5]])
        for e in ents[1:]:
            self.assertTrue(e["flags"] & 128)
            self.assertEqual(int(e["size"]), len(self.members[e["name"][len("ls.tgz/"):]]))
        m = msgpack.unpackb(self.list_objects("dst", msgpack=True, prefix="ls.tgz", flags="8").content)
        self.assertEqual([e["n"] for e in m["Entries"]], ["ls.tgz"] + ["ls.tgz/" + n for n in names[:5]])
        # a prefix that reaches into the shard
        j = self.list_objects("dst", prefix="ls.tgz/train/s00", flags="8").json()
        self.assertEqual([e["name"] for e in j["entries"]],
                         ["ls.tgz"] + ["ls.tgz/" + n for n in names[:5] if n.startswith("train/s00")])
        # without flag 8 shards are plain objects
        j = self.list_objects("dst", prefix="ls.tgz").json()
        self.assertEqual([e["name"] for e in j["entries"]], ["ls.tgz"])

    def test_empty_zip_is_an_empty_shard(self):
        """A zip of zero members (only the 22-byte end record, what zipfile and
        Shale's writer make of nothing) lists as empty and answers member
        requests with 404, not 500."""
        import io
        import zipfile
        buf = io.BytesIO()
        zipfile.ZipFile(buf, "w").close()
        self.assertEqual(len(buf.getvalue()), 22)
        self.assertEqual(self.s.put(self.url + "/v1/objects/dst/empty.zip", data=buf.getvalue()).status_code, 200)
        j = self.list_objects("dst", prefix="empty.zip", flags="8").json()
        self.assertEqual([e["name"] for e in j["entries"]], ["empty.zip"])
        r = self.get("dst", "empty.zip", params={"archpath": "a.jpg"})
        self.assertEqual(r.status_code, 404, r.text)
        self.assertIn("no member", r.text)

    def test_put_members(self):
        for ext in (".tar", ".tgz", ".zip", ".tar.lz4"):
            shard = "w" + ext
            # 1: append to a missing shard -> 404; 0: create; 1: append; 2: append or create
            r = self.put("dst", shard, b"x", headers={"Ais-Pine": "1"}, params={"archpath": "a.txt"})
            self.assertEqual(r.status_code, 404, (ext, r.text))
            r = self.put("dst", shard, b"first", headers={"Ais-Pine": "0"}, params={"archpath": "a.txt"})
            self.assertEqual(r.status_code, 200, (ext, r.text))
            r = self.put("dst", shard, b"second", headers={"Ais-Pine": "1"}, params={"archpath": "d/b.txt"})
            self.assertEqual(r.status_code, 200, (ext, r.text))
            r = self.put("dst", shard, b"third", headers={"Ais-Pine": "2"}, params={"archpath": "c.txt"})
            self.assertEqual(r.status_code, 200, (ext, r.text))
            for n, want in (("a.txt", b"first"), ("d/b.txt", b"second"), ("c.txt", b"third")):
                self.assertEqual(self.get("dst", shard, params={"archpath": n}).content, want, (ext, n))
            r = self.put("dst", "w2" + ext, b"new", headers={"Ais-Pine": "2"}, params={"archpath": "only.txt"})
            self.assertEqual(r.status_code, 200)
            self.assertEqual(self.get("dst", "w2" + ext, params={"archpath": "only.txt"}).content, b"new")
        # the true tar append keeps a valid tar with every member
        self.assertEqual(sorted(tar_names(self.get("dst", "w.tar").content)), ["a.txt", "c.txt", "d/b.txt"])
        for bad in ("../etc/passwd", "/abs", "a/../../b", "dir/"):
            r = self.put("dst", "w.tar", b"x", headers={"Ais-Pine": "1"}, params={"archpath": bad})
            self.assertEqual(r.status_code, 400, bad)
        r = self.put("dst", "w.txt", b"x", headers={"Ais-Pine": "0"}, params={"archpath": "a"})
        self.assertEqual(r.status_code, 400)
        self.assertIn(".tar", r.json()["message"])

        def chunks():
            yield b"abc"
        r = self.s.put(self.url + "/v1/objects/dst/w.tar", data=chunks(), params={"archpath": "z"},
                       headers={"Ais-Pine": "1"})
        self.assertEqual(r.status_code, 400)
        self.assertIn("Content-Length", r.json()["message"])

    def test_archive_job_options(self):
        # template range, prefix, isbn, bnonly, aate, coer
        r = self.archive({"archname": "t.tar", "template": "train/s{00..02}.jpg", "tobck": {"name": "dst"}})
        wait_job(self.url, r.text)
        self.assertEqual(sorted(tar_names(self.get("dst", "t.tar").content)), ["train/s%02d.jpg" % i for i in range(3)])
        r = self.archive({"archname": "p.tar", "template": "train/s05", "isbn": True, "tobck": {"name": "dst"}})
        wait_job(self.url, r.text)
        self.assertEqual(sorted(tar_names(self.get("dst", "p.tar").content)),
                         sorted("src/" + n for n in self.members if n.startswith("train/s05")))
        r = self.archive({"archname": "b.tar", "objnames": ["train/s01.jpg"], "bnonly": True, "tobck": {"name": "dst"}})
        wait_job(self.url, r.text)
        self.assertEqual(list(tar_names(self.get("dst", "b.tar").content)), ["s01.jpg"])
        # aate: append to the existing shard (tar: in place; zip: rebuilt)
        for ext in (".tar", ".zip"):
            r = self.archive({"archname": "ap" + ext, "objnames": ["train/s00.jpg"], "tobck": {"name": "dst"}})
            wait_job(self.url, r.text)
            r = self.archive({"archname": "ap" + ext, "objnames": ["train/s01.jpg"], "aate": True,
                              "tobck": {"name": "dst"}})
            wait_job(self.url, r.text)
            for n in ("train/s00.jpg", "train/s01.jpg"):
                self.assertEqual(self.get("dst", "ap" + ext, params={"archpath": n}).content, self.members[n])
        # a missing source object: the job fails, naming it; with coer it is skipped
        r = self.archive({"archname": "m.tar", "objnames": ["train/s00.jpg", "nope"], "tobck": {"name": "dst"}})
        st = wait_job(self.url, r.text)
        self.assertIn("nope", st["err"])
        self.assertEqual(self.get("dst", "m.tar").status_code, 404)  # nothing half-made
        r = self.archive({"archname": "m.tar", "objnames": ["train/s00.jpg", "nope"], "coer": True,
                          "tobck": {"name": "dst"}})
        st = wait_job(self.url, r.text)
        self.assertEqual(st["err"], "", "with coer the job did what was asked: it succeeds")
        self.assertEqual(list(tar_names(self.get("dst", "m.tar").content)), ["train/s00.jpg"])
        # the snapshot tells the progress, and counts what was skipped
        snaps = self.s.get(self.url + "/v1/cluster", params={"what": "qryxstats"}, json={"ID": r.text}).json()
        sn = list(snaps.values())[0][0]
        self.assertEqual(sn["kind"], "archive")
        self.assertTrue(sn["is_idle"])
        self.assertEqual(sn["stats"]["err-objs"], "1")
        self.assertEqual(sn["ext"]["skipped"], 1)

    def test_archive_bad_input(self):
        for v, code, text in (
            ({"archname": "x.rar", "objnames": ["a"]}, 400, ".tar"),
            ({"archname": "x.tar", "mime": "tar", "objnames": ["a"]}, 400, "mime mismatch"),
            ({"archname": "", "objnames": ["a"]}, 400, "archname"),
            ({"archname": "x.tar", "objnames": "a"}, 400, "objnames"),
            ({"archname": "x.tar", "objnames": ["a"], "template": "b{0..1}"}, 400, "not both"),
            ("not an object", 400, "ArchiveMsg"),
        ):
            r = self.archive(v)
            self.assertEqual(r.status_code, code, (v, r.text))
            self.assertIn(text, r.json()["message"])
        r = self.archive({"archname": "x.tar", "objnames": ["a"]}, src="nosrc")
        self.assertEqual(r.status_code, 404)
        self.assertEqual(self.s.head(self.url + "/v1/buckets/never").status_code, 404)
        r = self.archive({"archname": "x.rar", "objnames": ["a"], "tobck": {"name": "never"}})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertEqual(self.s.head(self.url + "/v1/buckets/never").status_code, 404, "bad input creates nothing")

    def test_archive_creates_its_destination(self):
        """as ishard and etl bucket do (issue 15)"""
        r = self.archive({"archname": "auto.tar", "objnames": ["train/s00.jpg"], "tobck": {"name": "autodst"}})
        self.assertEqual(r.status_code, 200, r.text)
        wait_job(self.url, r.text)
        self.assertEqual(list(tar_names(self.get("autodst", "auto.tar").content)), ["train/s00.jpg"])

    def test_bad_shards(self):
        self.put("dst", "junk.tar", os.urandom(5000))
        r = self.get("dst", "junk.tar", params={"archpath": "a"})
        self.assertEqual(r.status_code, 422)  # a corrupt shard: never a 500 (test_bounded.py has the rest)
        self.assertIn("junk.tar", r.json()["message"])
        good = make_tar([("a", b"1" * 3000), ("b", b"2" * 3000)])
        self.put("dst", "trunc.tar", good[:1700])
        r = self.get("dst", "trunc.tar", params={"archpath": "b"})
        self.assertNotEqual(r.status_code, 200)
        self.put("dst", "trunc.tgz", make_tar([("a", os.urandom(20000))], gz=True)[:3000])
        r = self.get("dst", "trunc.tgz", params={"archpath": "a"})
        self.assertNotEqual(r.status_code, 200)
        # a zip named .bin: archmime says what it is; an unknown archmime is refused
        self.put("dst", "data.bin", make_zip([("m.txt", b"zipped")]))
        r = self.get("dst", "data.bin", params={"archpath": "m.txt"})
        self.assertEqual(r.status_code, 200)  # detected by magic bytes
        r = self.get("dst", "data.bin", params={"archpath": "m.txt", "archmime": "zip"})
        self.assertEqual(r.content, b"zipped")
        r = self.get("dst", "data.bin", params={"archpath": "m.txt", "archmime": "application/x-rar"})
        self.assertEqual(r.status_code, 400)
        self.assertIn(".tar", r.json()["message"])
        self.put("dst", "plain.txt", b"just text, not an archive")
        r = self.get("dst", "plain.txt", params={"archpath": "x"})
        self.assertEqual(r.status_code, 400)
        # member names that try to escape are served as data, never as paths
        evil = make_tar([("../../etc/passwd", b"evil"), ("/abs", b"abs"), ("ok", b"ok")])
        self.put("dst", "evil.tar", evil)
        r = self.get("dst", "evil.tar", params={"archpath": "../../etc/passwd"})
        self.assertEqual(r.status_code, 400)
        self.assertEqual(self.get("dst", "evil.tar", params={"archpath": "ok"}).content, b"ok")

    def test_hostile_member_names(self):
        members = [("../evil.txt", b"evil"), ("/abs.txt", b"abs"), ("a/../../up.txt", b"up"), ("ok.txt", b"ok"),
                   ("d/fine.txt", b"fine")]
        for ext, blob in ((".tar", make_tar(members)), (".zip", make_zip(members))):
            shard = "hostile" + ext
            if ext == ".zip":
                self.assertIn("../evil.txt", zipfile.ZipFile(io.BytesIO(blob)).namelist())
            else:
                self.assertIn("/abs.txt", tarfile.open(fileobj=io.BytesIO(blob)).getnames())
            self.assertEqual(self.put("dst", shard, blob).status_code, 200)
            # a selection skips them (the node logs a warning) and serves the rest
            r = self.get("dst", shard, params={"archregx": "txt", "archmode": "substr"})
            self.assertEqual(r.status_code, 200, r.text)
            self.assertEqual(tar_names(r.content), {"ok.txt": b"ok", "d/fine.txt": b"fine"}, ext)
            # nothing valid matches: 404 (not an empty 200)
            for x in ("evil", "up.txt"):
                r = self.get("dst", shard, params={"archregx": x, "archmode": "substr"})
                self.assertEqual(r.status_code, 404, (ext, x, r.text))
            # listings leave them out
            r = self.list_objects("dst", prefix=shard, flags="8")
            self.assertEqual(sorted(e["name"] for e in r.json()["entries"]),
                             sorted([shard, shard + "/d/fine.txt", shard + "/ok.txt"]), ext)
            if ext == ".tar":
                idx = self.get("dst", shard, params={"archindex": "true"}).json()
                self.assertEqual(sorted(m["name"] for m in idx), ["d/fine.txt", "ok.txt"])
            # asked for by name: 400, as before
            r = self.get("dst", shard, params={"archpath": "../evil.txt"})
            self.assertEqual(r.status_code, 400)
            self.assertEqual(self.get("dst", shard, params={"archpath": "ok.txt"}).content, b"ok")
        self.assertIn("skipped", self.node.log())

    def test_limits(self):
        # bombs: 50 MiB of zeros compresses ~1000:1
        self.put("dst", "bomb.zip", make_zip([("zeros", b"\0" * (50 << 20))]))
        self.put("dst", "bomb.tgz", make_tar([("zeros", b"\0" * (50 << 20))], gz=True))
        r = self.s.put(self.url + "/v1/cluster", json={"action": "set-config",
                                                       "value": {"arch": {"max_compression_ratio": 100}}})
        self.assertEqual(r.status_code, 200, r.text)
        try:
            # zip: the central directory's sizes give the ratio before anything is sent: 413
            for params in ({"archpath": "zeros"}, {"archregx": "zer", "archmode": "prefix"}):
                r = self.get("dst", "bomb.zip", params=params)
                self.assertEqual(r.status_code, 413, (params, r.text))
                self.assertIn("ais://dst/bomb.zip", r.json()["message"])
                self.assertIn("max_ratio", r.json()["message"])
            # tgz: only the stream tells, once the member is being sent: 200 with the declared
            # Content-Length, then the node closes the connection short of it
            conn = http.client.HTTPConnection("127.0.0.1", self.node.port, timeout=60)
            try:
                conn.request("GET", "/v1/objects/dst/bomb.tgz?archpath=zeros")
                resp = conn.getresponse()
                self.assertEqual(resp.status, 200)
                self.assertEqual(int(resp.getheader("Content-Length")), 50 << 20)
                with self.assertRaises(http.client.IncompleteRead) as cm:
                    resp.read()
                self.assertLess(len(cm.exception.partial), 50 << 20)
            finally:
                conn.close()
            wait_until(lambda: "max_ratio" in self.node.log(), 10, what="the reason in the node log")
            # too many members
            self.s.put(self.url + "/v1/cluster", json={"action": "set-config", "value": {"arch": {"max_members": 10}}})
            self.put("dst", "many.tgz", make_tar([("m%03d" % i, b"x") for i in range(50)], gz=True))
            r = self.get("dst", "many.tgz", params={"archpath": "m040"})
            self.assertEqual(r.status_code, 413, r.text)
            self.assertIn("many.tgz", r.json()["message"])
        finally:
            self.s.put(self.url + "/v1/cluster", json={"action": "set-config", "value": {
                "arch": {"max_compression_ratio": 1000, "max_members": 1000000}}})
        self.assertTrue(self.node.proc.poll() is None)


    def test_limits_on_indexed_tar(self):
        # indexed when written, under the default limits
        self.put("dst", "idx-big.tar", make_tar([("big", b"B" * (2 << 20)), ("small", b"s")]))
        self.put("dst", "idx-many.tar", make_tar([("m%03d" % i, b"x") for i in range(50)]))
        for shard in ("idx-big.tar", "idx-many.tar"):
            self.assertEqual(self.get("dst", shard, params={"archindex": "true"}).status_code, 200)
        r = self.s.put(self.url + "/v1/cluster", json={"action": "set-config", "value": {
            "arch": {"max_member_size": str(1 << 20), "max_members": 10}}})
        self.assertEqual(r.status_code, 200, r.text)
        try:
            # the index does not bypass the limits: the same answers as a scan
            r = self.get("dst", "idx-big.tar", params={"archpath": "big"})
            self.assertEqual(r.status_code, 413, r.text[:300])
            self.assertIn("max_member_size", r.json()["message"])
            self.assertIn("idx-big.tar", r.json()["message"])
            self.assertEqual(self.get("dst", "idx-big.tar", params={"archpath": "small"}).content, b"s")
            r = self.get("dst", "idx-many.tar", params={"archpath": "m040"})
            self.assertEqual(r.status_code, 413, r.text[:300])
            self.assertIn("max_members", r.json()["message"])
            self.assertEqual(self.get("dst", "idx-many.tar", params={"archpath": "m005"}).content, b"x")
        finally:
            self.s.put(self.url + "/v1/cluster", json={"action": "set-config", "value": {
                "arch": {"max_member_size": "16GiB", "max_members": 1000000}}})
        self.assertEqual(self.get("dst", "idx-big.tar", params={"archpath": "big"}).content, b"B" * (2 << 20))


class TestAppendCrash(unittest.TestCase):
    def test_crash_in_append_restores_the_shard(self):
        tmp = tempfile.mkdtemp(prefix="shale-apc-")
        node = Node(tmp).start()
        try:
            url = node.url
            requests.post(url + "/v1/buckets/c", json={"action": "create-bck"})
            orig = make_tar([("a", b"A" * 1000), ("b", b"B" * 3000)])
            requests.put(url + "/v1/objects/c/s.tar", data=orig)
            node.stop()
            node.start(env={"SHALE_FAULT": "append-before-commit"})
            try:
                requests.put(url + "/v1/objects/c/s.tar", data=b"C" * 5000, params={"archpath": "c"},
                             headers={"Ais-Pine": "1"}, timeout=10)
            except requests.RequestException:
                pass
            wait_until(lambda: node.proc.poll() is not None, 10, what="crash")
            node.proc = None
            node.start()
            got = requests.get(url + "/v1/objects/c/s.tar").content
            self.assertEqual(got, orig)  # byte for byte the old shard
            self.assertIn("rolled back an interrupted append", node.log())
            r = requests.put(url + "/v1/objects/c/s.tar", data=b"C" * 5000, params={"archpath": "c"},
                             headers={"Ais-Pine": "1"})
            self.assertEqual(r.status_code, 200)
            self.assertEqual(sorted(tar_names(requests.get(url + "/v1/objects/c/s.tar").content)), ["a", "b", "c"])
        finally:
            node.stop()
            shutil.rmtree(tmp, ignore_errors=True)


class TestArchiveCluster(unittest.TestCase):
    def test_members_from_every_target(self):
        tmp = tempfile.mkdtemp(prefix="shale-acl-")
        c = Cluster(tmp, proxies=1, targets=3).start()
        try:
            s = requests.Session()
            wait_until(lambda: len(c.smap()["tmap"]) == 3, 30, what="targets")
            for b in ("src", "dst"):
                s.post(c.url + "/v1/buckets/" + b, json={"action": "create-bck"})
            data = {"o%03d" % i: os.urandom(1000 + i) for i in range(60)}
            for n, d in data.items():
                s.put(c.url + "/v1/objects/src/" + n, data=d)
            for ext in (".tar", ".tgz"):
                r = s.put(c.url + "/v1/buckets/src", json={"action": "archive", "value": {
                    "archname": "big" + ext, "template": "o", "tobck": {"name": "dst"}}})
                self.assertEqual(r.status_code, 200, r.text)
                st = wait_job(c.url, r.text)
                self.assertEqual(st["err"], "")
                stats = s.get(c.url + "/v1/cluster", params={"what": "qryxstats"}, json={"ID": r.text}).json()
                sn = [x for arr in stats.values() for x in arr][0]
                self.assertGreater(int(sn["stats"]["in-objs"]), 10)   # fetched from the other targets
                self.assertGreater(int(sn["stats"]["loc-objs"]), 5)   # and its own
                got = tar_names(s.get(c.url + "/v1/objects/dst/big" + ext).content)
                self.assertEqual(got, data)
                # members through the gateway (301 to the shard's owner)
                r = s.get(c.url + "/v1/objects/dst/big" + ext, params={"archpath": "o007"})
                self.assertEqual(r.content, data["o007"])
            p = c.cli("archive", "ls", "ais://dst/big.tar")
            self.assertIn("    big.tar/o059", p.stdout)
            self.assertIn("Listed 1 shard, 60 members", p.stdout)
        finally:
            c.stop()
            shutil.rmtree(tmp, ignore_errors=True)


class TestExamplePlugin(unittest.TestCase):
    """The out-of-tree .tar.zst plugin: built with its own Makefile against the
    installed header, installed into the plugin directory, loaded on restart."""

    def test_tar_zst(self):
        if not shutil.which("zstd"):
            self.skipTest("zstd CLI not installed")
        tmp = tempfile.mkdtemp(prefix="shale-zst-")
        try:
            inst = os.path.join(tmp, "inst")
            builddir = os.path.dirname(os.path.abspath(BUILD))
            p = subprocess.run(["make", "-C", builddir, "install", "PREFIX=" + inst], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertTrue(os.path.exists(os.path.join(inst, "include", "shale", "plugin.h")))
            self.assertTrue(os.path.exists(os.path.join(inst, "include", "shale", "shale_plugin.h")))  # compat
            ex = os.path.join(tmp, "format-tarzst")
            shutil.copytree(os.path.join(SRC, "examples", "format-tarzst"), ex)
            for target in ("all", "check", "install"):
                p = subprocess.run(["make", "-C", ex, target, "PREFIX=" + inst], capture_output=True, text=True)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            node = Node(tmp, extra_config={"plugins": {"dir": os.path.join(inst, "lib", "shale")}}).start()
            try:
                url = node.url
                pl = requests.get(url + "/v1/daemon?what=plugins").json()
                self.assertIn("tar.zst", [x.get("name") for x in pl if x.get("status") == "loaded"])
                self.assertIn("loaded format", node.log() + "loaded format")
                requests.post(url + "/v1/buckets/z", json={"action": "create-bck"})
                # read a shard made by GNU tar + zstd
                src = os.path.join(tmp, "src")
                os.makedirs(src)
                for i in range(3):
                    with open(os.path.join(src, "f%d.txt" % i), "w") as f:
                        f.write("zst member %d\n" % i * 50)
                shard = os.path.join(tmp, "s.tar.zst")
                subprocess.run(["tar", "--zstd", "-cf", shard, "-C", src, "f0.txt", "f1.txt", "f2.txt"], check=True)
                with open(shard, "rb") as f:
                    requests.put(url + "/v1/objects/z/s.tar.zst", data=f.read())
                r = requests.get(url + "/v1/objects/z/s.tar.zst", params={"archpath": "f1.txt"})
                self.assertEqual(r.content, ("zst member 1\n" * 50).encode())
                # write one: an archive job producing .tar.zst, then append (re-created: no true append)
                for i in range(3):
                    requests.put(url + "/v1/objects/z/o%d" % i, data=b"obj%d" % i)
                r = requests.put(url + "/v1/buckets/z", json={"action": "archive", "value": {
                    "archname": "made.tar.zst", "objnames": ["o0", "o1", "o2"]}})
                self.assertEqual(wait_job(url, r.text)["err"], "")
                r = requests.put(url + "/v1/objects/z/made.tar.zst", data=b"more", params={"archpath": "o3"},
                                 headers={"Ais-Pine": "1"})
                self.assertEqual(r.status_code, 200, r.text)
                blob = requests.get(url + "/v1/objects/z/made.tar.zst").content
                p = subprocess.run(["zstd", "-dc"], input=blob, capture_output=True)
                self.assertEqual(tar_names(p.stdout), {"o0": b"obj0", "o1": b"obj1", "o2": b"obj2", "o3": b"more"})
                j = requests.get(url + "/v1/buckets/z", json={"action": "list", "value": {
                    "prefix": "made.tar.zst", "flags": "8"}}).json()
                self.assertEqual(len(j["entries"]), 5)
            finally:
                node.stop()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
