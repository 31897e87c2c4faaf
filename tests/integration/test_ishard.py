# SPDX-License-Identifier: MIT
"""ishard against real nodes: samples never split and read back in
WebDataset as exactly the samples grouped (tar, tgz, zip), directory
boundaries and --collapse, extension policies, extension collisions (dry run
explains, the job refuses unless told), names WebDataset would mis-split,
JSON and Lua EKM (with member contents), sort and seeded shuffle, count-based
shards and templates, shard owners = HRW owners, bad input, abort removing
written shards, a source that changes during the job, and the CLI."""
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import time
import unittest
import zipfile

import requests

from harness import SHALE, Cluster, Node, main, wait_until
from test_cluster import hrw_owner

KEY = re.compile(r"^((?:.*/|)[^.]+)[.]([^/]*)$")


def wds_read(data, fmt="tar"):
    """(key, {ext: bytes}) per sample, grouped as webdataset does (adjacent, first-dot key)."""
    if fmt == "zip":
        z = zipfile.ZipFile(io.BytesIO(data))
        members = [(n, z.read(n)) for n in z.namelist()]
    else:
        t = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
        members = [(m.name, t.extractfile(m).read()) for m in t.getmembers() if m.isfile()]
    out = []
    for name, d in members:
        m = KEY.match(name)
        if not m:
            continue
        if not out or out[-1][0] != m.group(1):
            out.append((m.group(1), {}))
        assert m.group(2) not in out[-1][1], "duplicate extension %s in sample %s" % (m.group(2), m.group(1))
        out[-1][1][m.group(2)] = d
    return out, [n for n, _ in members]


class IshardApi:
    def start(self, **msg):
        return self.s.post(self.url + "/v1/ishard", json=msg, timeout=120)

    def ishard(self, **msg):
        r = self.start(**msg)
        self.assertEqual(r.status_code, 200, r.text)
        return self.wait(r.text)

    def wait(self, job, timeout=300):
        def done():
            st = self.s.get(self.url + "/v1/ishard/" + job, timeout=30).json()
            return st if st["state"] not in ("planning", "running") else None
        return wait_until(done, timeout, interval=0.1, what="ishard %s" % job)

    def names(self, bucket, prefix=""):
        out, token = [], ""
        for _ in range(1000):
            r = self.s.get(self.url + "/v1/buckets/" + bucket, timeout=60,
                           json={"action": "list", "value": {"prefix": prefix, "continuation_token": token,
                                                             "props": "name,size", "pagesize": 5000}})
            if r.status_code == 404:
                return []
            self.assertEqual(r.status_code, 200, r.text)
            j = r.json()
            out += [e["name"] for e in j["entries"] or []]
            token = j["continuation_token"]
            if not token:
                return out
        raise AssertionError("listing did not end")

    def put(self, bucket, name, data):
        r = self.s.put(self.url + "/v1/objects/%s/%s" % (bucket, name), data=data, timeout=60)
        self.assertEqual(r.status_code, 200, r.text)

    def bucket(self, name):
        r = self.s.post(self.url + "/v1/buckets/" + name, json={"action": "create-bck"}, timeout=30)
        self.assertIn(r.status_code, (200, 409), r.text)

    def read_all(self, bucket, fmt="tar"):
        shards = {}
        for n in self.names(bucket):
            r = self.s.get(self.url + "/v1/objects/%s/%s" % (bucket, n), timeout=60)
            self.assertEqual(r.status_code, 200)
            shards[n] = wds_read(r.content, fmt)
        return shards


def pets(per_class=6):
    """Pets-like raw files: images/<Breed>_<n>.jpg, annotations/trimaps/<Breed>_<n>.png, annotations/list.txt"""
    files = {}
    breeds = ["Abyssinian", "Bengal", "beagle", "pug"]
    lines = []
    for c, b in enumerate(breeds, 1):
        for i in range(1, per_class + 1):
            stem = "%s_%d" % (b, i)
            files["images/%s.jpg" % stem] = os.urandom(3000 + 100 * i)
            files["annotations/trimaps/%s.png" % stem] = b"PNG" + stem.encode()
            lines.append("%s %d 1 %d" % (stem, c, i))
    files["annotations/list.txt"] = ("\n".join(lines) + "\n").encode()
    return files


class ClusterIshardTest(unittest.TestCase, IshardApi):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shale-ishard-")
        cls.c = Cluster(cls.tmp, proxies=1, targets=3).start()
        cls.url = cls.c.url
        cls.s = requests.Session()
        wait_until(lambda: len(cls.c.smap()["tmap"]) == 3, 30, what="3 targets")
        cls.s.post(cls.url + "/v1/buckets/raw", json={"action": "create-bck"}, timeout=30)
        cls.files = pets()
        for n, d in cls.files.items():
            cls.s.put(cls.url + "/v1/objects/raw/" + n, data=d, timeout=60).raise_for_status()

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_pets_samples_read_back_exactly(self):
        st = self.ishard(src_bck="ais://raw", dst_bck="ais://pets", shard_size="16KiB",
                      sample_exts=".jpg,.png", missing_extension_action="exclude")
        self.assertEqual(st["state"], "finished", st)
        rep = st["report"]
        self.assertEqual(rep["samples"], 24)
        self.assertEqual(rep["skipped"]["excluded_samples"], 1)  # list.txt
        self.assertEqual(rep["renamed_samples"], 24)              # members come from two directories
        self.assertEqual(st["progress"]["shards_written"], rep["shards"])
        shards = self.read_all("pets")
        self.assertEqual(len(shards), rep["shards"])
        seen = {}
        smap = self.c.smap()
        for name, (samples, members) in shards.items():
            for key, fields in samples:
                self.assertNotIn(key, seen, "sample %s split across %s and %s" % (key, seen.get(key), name))
                seen[key] = name
                self.assertEqual(sorted(fields), ["jpg", "png"])
                self.assertEqual(fields["jpg"], self.files["images/%s.jpg" % key])
                self.assertEqual(fields["png"], self.files["annotations/trimaps/%s.png" % key])
            # written by the HRW owner of the shard's name
            owner = hrw_owner(smap, "pets", name)
            r = requests.head(owner["public_net"]["direct_url"] + "/v1/objects/pets/" + name, timeout=10)
            self.assertEqual(r.status_code, 200, name)
        self.assertEqual(sorted(seen), sorted(k[len("images/"):-4] for k in self.files if k.startswith("images/")))
        # shards are filled to the size; only the last may be smaller
        sizes = sorted(int(s["size"]) for s in self.s.get(self.url + "/v1/buckets/pets", timeout=30, json={
            "action": "list", "value": {"props": "name,size"}}).json()["entries"])
        self.assertGreaterEqual(sizes[1], 16 * 1024)
        # a non-empty destination is refused unless told
        r = self.start(src_bck="ais://raw", dst_bck="ais://pets")
        self.assertEqual(r.status_code, 409)
        self.assertIn("not empty", r.json()["message"])
        st = self.ishard(src_bck="ais://raw", dst_bck="ais://pets", shard_size="16KiB", sample_exts="jpg,png",
                      missing_extension_action="exclude", overwrite=True)
        self.assertEqual(st["state"], "finished")

    def test_formats(self):
        for ext, fmt in ((".tgz", "tgz"), (".zip", "zip"), (".tar.lz4", None)):
            dst = "fmt" + ext.replace(".", "-")
            st = self.ishard(src_bck="ais://raw/images/", dst_bck="ais://" + dst, shard_size="8", ext=ext)
            self.assertEqual(st["state"], "finished", st)
            names = self.names(dst)
            self.assertTrue(all(n.endswith(ext) for n in names), names)
            self.assertEqual(len(names), 3)
            if fmt:
                samples, _ = wds_read(self.s.get(self.url + "/v1/objects/%s/%s" % (dst, names[0]),
                                                 timeout=30).content, fmt)
                self.assertEqual(len(samples), 8)
            else:  # tar.lz4: through the server's own reader
                r = self.s.get(self.url + "/v1/objects/%s/%s" % (dst, names[0]),
                               params={"archregx": "", "archmode": "prefix"}, timeout=30)
                self.assertEqual(r.status_code, 200)
                self.assertEqual(len(wds_read(r.content)[0]), 8)

    def test_member_names_with_the_lists_punctuation(self):
        """the build request carries each shard's member list as one encoded string ("LEN:NAME...SIZE;"):
        names with digits, ':', '=' and ';' in them, and a member over the 1 MiB prefetch limit, come back whole"""
        self.bucket("punct")
        want = {}
        for i, stem in enumerate(("12:a=b;3", "x;9=:", "7=7:7;")):
            for ext, data in (("jpg", os.urandom(1500 + i)), ("cls", str(i).encode())):
                want["p/%s.%s" % (stem, ext)] = data
        want["p/big.jpg"] = os.urandom(1536 * 1024)
        want["p/big.cls"] = b"big"
        for n, d in want.items():
            self.put("punct", n, d)
        st = self.ishard(src_bck="ais://punct", dst_bck="ais://punct-out", shard_size="1", sample_key_pattern="full_name")
        self.assertEqual(st["state"], "finished", st)
        got = {}
        for name, (samples, members) in self.read_all("punct-out").items():
            for key, fields in samples:
                for ext, data in fields.items():
                    got["%s.%s" % (key, ext)] = data
        self.assertEqual(sorted(got), sorted(want))
        for n in want:
            self.assertEqual(got[n], want[n], n)

    def test_directories_and_collapse(self):
        self.bucket("tree")
        for split, n in (("train/a", 5), ("train/b", 3), ("val/a", 2)):
            for i in range(n):
                self.put("tree", "%s/x%d.jpg" % (split, i), os.urandom(2000))
                self.put("tree", "%s/x%d.cls" % (split, i), b"1")
        st = self.ishard(src_bck="ais://tree", dst_bck="ais://tree-out", shard_size="4", sample_key_pattern="full_name")
        self.assertEqual(st["report"]["renamed_samples"], 0)  # members already share their key
        dirs_per_shard = []
        for name, (samples, members) in self.read_all("tree-out").items():
            dirs_per_shard.append({k.rsplit("/", 1)[0] for k, _ in samples})
        self.assertTrue(all(len(d) == 1 for d in dirs_per_shard), dirs_per_shard)  # boundaries kept
        self.assertEqual(len(dirs_per_shard), 2 + 1 + 1)  # 5 -> 4+1, 3, 2
        st = self.ishard(src_bck="ais://tree", dst_bck="ais://tree-col", shard_size="4", sample_key_pattern="full_name",
                      collapse=True)
        shards = self.read_all("tree-col")
        self.assertLess(len(shards), 4)
        self.assertEqual(sum(len(s) for s, _ in shards.values()), 10)

    def test_collisions_dry_run_then_refusal(self):
        self.bucket("coll")
        for stem in ("n01", "n02"):
            self.put("coll", "Annotations/%s.xml" % stem, b"<a/>")
            self.put("coll", "Data/%s.xml" % stem, b"<d/>")
            self.put("coll", "Data/%s.jpg" % stem, b"J")
        self.put("coll", "Data/n03.jpg", b"J")
        self.put("coll", "Data/n03.xml", b"<d/>")
        st = self.ishard(src_bck="ais://coll", dst_bck="ais://coll-out", dry_run=True)
        self.assertEqual(st["state"], "finished")
        self.assertEqual(st["report"]["ext_collisions"], 2)
        self.assertTrue(any("share the extension" in w for w in st["report"]["warnings"]), st["report"])
        self.assertEqual(self.names("coll-out"), [])
        st = self.ishard(src_bck="ais://coll", dst_bck="ais://coll-out")
        self.assertEqual(st["state"], "failed")
        self.assertIn("Annotations/n01.xml", st["err"])
        self.assertIn("ext_collision", st["err"])
        self.assertEqual(self.names("coll-out"), [])
        self.assertEqual(self.s.head(self.url + "/v1/buckets/coll-out", timeout=30).status_code, 404)
        st = self.ishard(src_bck="ais://coll", dst_bck="ais://coll-drop", ext_collision="drop")
        self.assertEqual(st["state"], "finished", st)
        self.assertEqual(st["report"]["skipped"]["collision_samples"], 2)
        samples = [s for v in self.read_all("coll-drop").values() for s in v[0]]
        self.assertEqual([k for k, _ in samples], ["Data/n03"])  # its members already share a key: names kept
        st = self.ishard(src_bck="ais://coll", dst_bck="ais://coll-keep", ext_collision="keep-first")
        self.assertEqual(st["state"], "finished", st)
        samples = dict(s for v in self.read_all("coll-keep").values() for s in v[0])
        self.assertEqual(sorted(samples), ["Data/n03", "n01", "n02"])
        self.assertEqual(samples["n01"]["xml"], b"<a/>")  # the first (by name) is kept
        self.assertEqual(sorted(samples["n01"]), ["jpg", "xml"])

    def test_missing_extension_actions(self):
        st = self.ishard(src_bck="ais://raw", dst_bck="ais://miss-abort", sample_exts="jpg,png,cls",
                      missing_extension_action="abort")
        self.assertEqual(st["state"], "failed")
        self.assertRegex(st["err"], r'sample "\w+" has no member with extension "\.(jpg|cls)"')
        self.assertEqual(self.names("miss-abort"), [])
        st = self.ishard(src_bck="ais://raw", dst_bck="ais://miss-warn", sample_exts="jpg,png,cls",
                      missing_extension_action="warn", dry_run=True)
        self.assertEqual(st["report"]["incomplete_samples"], 25)
        self.assertTrue(any('no ".cls" member' in w for w in st["report"]["warnings"]))
        st = self.ishard(src_bck="ais://raw", dst_bck="ais://miss-excl", sample_exts="jpg", missing_extension_action="exclude",
                      dry_run=True)
        self.assertEqual(st["report"]["samples"], 24)  # png members dropped as unexpected, list.txt excluded

    def test_names_webdataset_would_mis_split(self):
        self.bucket("dots")
        self.put("dots", "cam/2023-01-01T10.00.00.jpg", b"a")
        self.put("dots", "cam/noext", b"b")
        self.put("dots", "cam/.hidden", b"c")
        self.put("dots", "cam/ok.jpg", b"d")
        st = self.ishard(src_bck="ais://dots", dst_bck="ais://dots-out", dry_run=True)
        rep = st["report"]
        self.assertEqual(rep["skipped"]["no_extension"], 2)
        self.assertEqual(rep["multi_dot_names"], 1)
        text = "\n".join(rep["warnings"])
        self.assertIn('key "cam/2023-01-01T10" and extension "00.00.jpg"', text)
        self.assertIn("cam/noext", text)

    def test_ekm_json_lua_and_errors(self):
        ekm = {"cats-%d.tar": ["^[A-Z]"], "dogs-{00..99}.tar": ["^[a-z]"]}
        st = self.ishard(src_bck="ais://raw", dst_bck="ais://ekm-json", shard_size="5", sample_exts="jpg,png",
                      missing_extension_action="exclude", ekm=ekm)
        self.assertEqual(st["state"], "finished", st)
        names = self.names("ekm-json")
        self.assertEqual(sorted(n.split("-")[0] for n in names), ["cats"] * 3 + ["dogs"] * 3)
        for n, (samples, _) in self.read_all("ekm-json").items():
            for k, _ in samples:
                self.assertEqual(k[0].isupper(), n.startswith("cats"), (n, k))
        self.assertEqual(st["report"]["families"]["cats-%d.tar"]["samples"], 12)
        # Lua, routing on the contents of a member
        self.bucket("lab")
        for i in range(12):
            self.put("lab", "s%02d.jpg" % i, b"img")
            self.put("lab", "s%02d.cls" % i, b"%d\n" % (i % 3))
        lua = ("function shard_for(key, sample)\n"
               "  local c = shale.trim(sample.cls)\n"
               "  if c == '2' then return nil end\n"
               "  return 'class' .. c .. '-%02d'\nend\n")
        st = self.ishard(src_bck="ais://lab", dst_bck="ais://lab-out", ekm_lua=lua, ekm_content=["cls"],
                      ekm_missing_key="warn")
        self.assertEqual(st["state"], "finished", st)
        self.assertEqual(st["report"]["skipped"]["ekm_unmatched"], 4)
        for n, (samples, _) in self.read_all("lab-out").items():
            for k, f in samples:
                self.assertEqual(n[:6], "class" + f["cls"].decode().strip(), n)
        # a Lua error names the line and the sample
        bad = "function shard_for(key, sample)\n  if key == 's05' then\n    error('no route for ' .. key)\n  end\n" \
              "  return 'x-%d'\nend\n"
        st = self.ishard(src_bck="ais://lab", dst_bck="ais://lab-bad", ekm_lua=bad)
        self.assertEqual(st["state"], "failed")
        self.assertIn("line 3", st["err"])
        self.assertIn('"s05"', st["err"])
        self.assertEqual(self.names("lab-bad"), [])
        # bad EKMs are a 400 at once
        for msg, want in (({"ekm": "{not json"}, "does not parse"), ({"ekm": {"x-%d": ["("]}}, "not a valid regular expression"),
                          ({"ekm_lua": "function shard_for(k) return 'x-%d' end\nlocal = 1"}, "line 2"),
                          ({"ekm_lua": "function other() end"}, "shard_for")):
            r = self.start(src_bck="ais://lab", dst_bck="ais://lab-x", **msg)
            self.assertEqual(r.status_code, 400, r.text)
            self.assertIn(want, r.json()["message"])

    def test_pattern_typo_warned(self):
        st = self.ishard(src_bck="ais://raw", dst_bck="ais://typo", sample_key_pattern="basename", dry_run=True)
        text = "\n".join(st["report"]["warnings"])
        self.assertIn('"basename" (a regular expression) matched 0 of 49 names', text)
        self.assertIn("Did you mean one of the built-in rules", text)

    def test_sort_and_shuffle(self):
        st = self.ishard(src_bck="ais://raw/images/", dst_bck="ais://srt", shard_size="100", sort="alpha:dec",
                      dry_run="show_keys")
        keys = st["report"]["plan"][0]["keys"]
        self.assertEqual(keys, sorted(keys, reverse=True))
        a = self.ishard(src_bck="ais://raw/images/", dst_bck="ais://srt", shard_size="100", sort="shuffle:7",
                     dry_run="show_keys")["report"]["plan"][0]["keys"]
        b = self.ishard(src_bck="ais://raw/images/", dst_bck="ais://srt", shard_size="100", sort="shuffle:7",
                     dry_run="show_keys")["report"]["plan"][0]["keys"]
        c = self.ishard(src_bck="ais://raw/images/", dst_bck="ais://srt", shard_size="100", sort="shuffle:8",
                     dry_run="show_keys")["report"]["plan"][0]["keys"]
        self.assertEqual(a, b)
        self.assertNotEqual(a, c)
        self.assertEqual(sorted(a), sorted(c))

    def test_sort_is_dsorts_order(self):
        """ishard --sort orders samples as dsort does: ishard without --sort and
        then dsort shuffle with seed 7 gives the same sample order as ishard
        --sort shuffle:7 in one pass (likewise alpha:dec and decreasing)."""
        st = self.ishard(src_bck="ais://raw/images/", dst_bck="ais://eq", shard_size="5", shard_template="r-{00..99}")
        self.assertEqual(st["state"], "finished", st)
        n = st["report"]["shards"]
        self.assertGreater(n, 2)
        for sort, alg in (("shuffle:7", {"kind": "shuffle", "seed": "7"}),
                          ("alpha:dec", {"kind": "alphanumeric", "decreasing": True})):
            prefix = "d%s-" % sort[0]
            r = self.s.post(self.url + "/v1/sort", timeout=60, data=json.dumps({
                "input_bck": "eq", "input_format": "r-{00..%02d}" % (n - 1), "output_format": prefix + "{00..99}",
                "output_shard_size": "1MiB", "algorithm": alg}))
            self.assertEqual(r.status_code, 200, r.text)
            jid = r.text

            def done():
                info = self.s.get(self.url + "/v1/sort", params={"uuid": jid}, timeout=30).json()
                ms = [v["Metrics"] for v in info.values()]
                self.assertFalse(any(m["aborted"] for m in ms), ms)
                return all(m["shard_creation"]["finished"] for m in ms)
            wait_until(done, 60, what="dsort " + jid)
            dsorted = []
            for name in self.names("eq", prefix):
                data = self.s.get(self.url + "/v1/objects/eq/" + name, timeout=30).content
                dsorted += [k.split("/")[-1] for k, _ in wds_read(data)[0]]
            plan = self.ishard(src_bck="ais://raw/images/", dst_bck="ais://eq2", shard_size="5", sort=sort,
                               dry_run="show_keys")["report"]["plan"]
            one_pass = [k for sh in plan for k in sh["keys"]]
            self.assertEqual(len(dsorted), 24)
            self.assertEqual(one_pass, dsorted, sort)

    def test_templates_and_counts(self):
        st = self.ishard(src_bck="ais://raw/images/", dst_bck="ais://tpl", shard_size="10",
                      shard_template="train-{000..099}")
        self.assertEqual(self.names("tpl"), ["train-000.tar", "train-001.tar", "train-002.tar"])
        st = self.ishard(src_bck="ais://raw/images/", dst_bck="ais://tpl2", shard_size="10", shard_template="p-@9")
        self.assertEqual(self.names("tpl2"), ["p-0.tar", "p-1.tar", "p-2.tar"])
        st = self.ishard(src_bck="ais://raw/images/", dst_bck="ais://tpl3", shard_size="1", shard_template="q-{0..3}")
        self.assertEqual(st["state"], "failed")
        self.assertIn("yields 4 names", st["err"])
        self.assertEqual(self.names("tpl3"), [])

    def test_bad_input(self):
        cases = [
            ({"src_bck": "ais://raw", "dst_bck": "ais://b1", "sample_key_pattern": "(unclosed"}, 400,
             "base_name, collapse_all_dir, full_name"),
            ({"src_bck": "ais://raw", "dst_bck": "ais://b1", "ext": ".rar"}, 400, ".tar"),
            ({"src_bck": "ais://raw", "dst_bck": "ais://b1", "shard_size": "lots"}, 400, "shard_size"),
            ({"src_bck": "ais://raw", "dst_bck": "ais://b1", "shard_template": "fixed"}, 400, "no counter"),
            ({"src_bck": "ais://raw", "dst_bck": "ais://b1", "sort": "random"}, 400, "alpha"),
            ({"src_bck": "ais://raw", "dst_bck": "ais://raw"}, 400, "same bucket"),
            ({"src_bck": "ais://raw/nothing-here/", "dst_bck": "ais://b1"}, 400, "has no objects"),
            ({"src_bck": "ais://nosuch", "dst_bck": "ais://b1"}, 404, 'bucket "ais://nosuch" does not exist'),
            ({"dst_bck": "ais://b1"}, 400, "src_bck"),
        ]
        for msg, code, want in cases:
            r = self.start(**msg)
            self.assertEqual(r.status_code, code, "%s: %s" % (msg, r.text))
            self.assertIn(want, r.json()["message"], msg)
        for msg, want in (({"dry_run": "keys"}, "invalid dry_run"), ({"shard_sise": "1MiB"}, 'unknown field "shard_sise"')):
            r = self.start(src_bck="ais://raw", dst_bck="ais://b1", **msg)
            self.assertEqual(r.status_code, 400, r.text)
            self.assertIn(want, r.json()["message"])
        r = self.s.post(self.url + "/v1/ishard", data=b"{nope", timeout=30)
        self.assertEqual(r.status_code, 400)
        self.assertEqual(self.s.head(self.url + "/v1/buckets/b1", timeout=30).status_code, 404)

    def test_abort_removes_written_shards(self):
        self.bucket("many")
        import concurrent.futures
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            list(ex.map(lambda i: self.s.put(self.url + "/v1/objects/many/m%05d.bin" % i, data=b"x" * 100,
                                             timeout=60), range(3000)))
        r = self.start(src_bck="ais://many", dst_bck="ais://many-out", shard_size="1")
        self.assertEqual(r.status_code, 200)
        job = r.text
        wait_until(lambda: self.s.get(self.url + "/v1/ishard/" + job, timeout=30).json()["progress"]
                   ["shards_written"] > 20, 60, what="some shards written")
        self.assertEqual(self.s.delete(self.url + "/v1/ishard/" + job, timeout=30).status_code, 200)
        st = self.wait(job)
        self.assertEqual(st["state"], "aborted", st)
        wait_until(lambda: self.names("many-out") == [], 30, what="written shards removed")
        # an id no target knows: 404, from the API and the CLI (not "Stopped")
        r = self.s.delete(self.url + "/v1/ishard/ish-nonexistent", timeout=30)
        self.assertEqual(r.status_code, 404, r.text)
        self.assertIn("not found on any target", r.text)
        p = subprocess.run([SHALE, "job", "stop", "ish-nonexistent"], capture_output=True, text=True,
                           env=dict(os.environ, AIS_ENDPOINT=self.url), timeout=60)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertNotIn("Stopped", p.stdout)

    def test_cli(self):
        env = dict(os.environ, AIS_ENDPOINT=self.url)
        p = subprocess.run([SHALE, "ishard", "-src_bck=ais://raw", "-dst_bck=ais://cli-out", "-shard_size=8",
                            "-sample_exts=jpg,png", "-missing_extension_action=exclude", "-dry_run=show_keys"],
                           capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("[DRY RUN] No modifications on the cluster", p.stdout)
        self.assertIn("SHARD", p.stdout)
        self.assertIn("shard-000000.tar:\n    Abyssinian_1\n", p.stdout)  # one key per line
        self.assertIn("Would write 24 samples in 3 shards", p.stdout)
        p = subprocess.run([SHALE, "ishard", "--src-bck", "ais://raw", "--dst-bck", "ais://cli-out", "--shard-size",
                            "8", "--sample-exts", ".jpg,.png", "--missing-extension-action", "exclude", "--wait"],
                           capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("Wrote 24 samples in 3 shards", p.stdout)
        self.assertRegex(p.stdout, r"in 3 shards \([0-9.]+KiB; member data [0-9.]+KiB\)")
        # member data is what the shards hold (it was the planned tars' size, headers and padding included)
        import io
        import re
        import tarfile
        held = 0
        for e in self.s.get(self.url + "/v1/buckets/cli-out", json={"action": "list", "value": {}}).json()["entries"]:
            with tarfile.open(fileobj=io.BytesIO(self.s.get(self.url + "/v1/objects/cli-out/" + e["name"]).content)) as t:
                held += sum(m.size for m in t.getmembers())
        said = float(re.search(r"member data ([0-9.]+)KiB", p.stdout).group(1))
        self.assertAlmostEqual(said, held / 1024, delta=0.01, msg=p.stdout)
        # a flag value that starts with '-' is passed as given
        p = subprocess.run([SHALE, "ishard", "--src-bck", "ais://raw/images/", "--dst-bck", "ais://cli-dash",
                            "--shard-template", "-x-%d", "--shard-size", "100", "--dry-run"],
                           capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("-x-0.tar", p.stdout)
        self.assertNotIn("--x-0.tar", p.stdout)
        # a shuffle without a seed prints the seed it drew, to repeat the layout
        p = subprocess.run([SHALE, "ishard", "--src-bck", "ais://raw/images/", "--dst-bck", "ais://cli-shuf",
                            "--shard-size", "100", "--sort", "shuffle", "--dry-run"],
                           capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"Order: shuffle:\d+ \(run again with --sort shuffle:\d+")
        # a dry run into a non-empty destination says what the real run will do
        p = subprocess.run([SHALE, "ishard", "--src-bck", "ais://raw", "--dst-bck", "ais://cli-out", "--dry-run"],
                           capture_output=True, text=True, env=env, timeout=120)
        self.assertIn("is not empty: the real run is refused unless --overwrite", p.stdout)
        p = subprocess.run([SHALE, "ishard", "--src-bck", "ais://raw", "--dst-bck", "ais://cli-out2", "--ext", ".7z"],
                           capture_output=True, text=True, env=env, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("unsupported ext", p.stderr)


class StandaloneIshardTest(unittest.TestCase, IshardApi):
    """A source that changes between the listing and the build."""

    def test_vanished_objects_are_reported(self):
        tmp = tempfile.mkdtemp(prefix="shale-ishard-")
        node = Node(tmp).start(env={"SHALE_TEST_ISHARD_PAUSE_MS": "1500"})
        try:
            self.url = node.url
            self.s = requests.Session()
            self.bucket("src")
            for i in range(20):
                self.put("src", "v%02d.jpg" % i, b"img%d" % i)
                self.put("src", "v%02d.cls" % i, b"1")
            r = self.start(src_bck="ais://src", dst_bck="ais://out", shard_size="5")
            self.assertEqual(r.status_code, 200, r.text)
            time.sleep(0.3)  # listed, now paused before planning
            for n in ("v03.jpg", "v17.cls"):
                self.assertEqual(self.s.delete(self.url + "/v1/objects/src/" + n, timeout=30).status_code, 200)
            self.put("src", "late.jpg", b"late")
            st = self.wait(r.text)
            self.assertEqual(st["state"], "finished", st)
            self.assertEqual(st["report"]["listed"]["objects"], 40)
            self.assertEqual(st["progress"]["vanished"], 2)
            self.assertEqual(sorted(st["progress"]["vanished_objects"]), ["v03.jpg", "v17.cls"])
            keys = {}
            for n, (samples, _) in self.read_all("out").items():
                for k, f in samples:
                    keys[k] = sorted(f)
            self.assertNotIn("late", keys)
            self.assertEqual(keys["v03"], ["cls"])
            self.assertEqual(keys["v17"], ["jpg"])
        finally:
            node.stop()
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
