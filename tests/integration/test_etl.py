# SPDX-License-Identifier: MIT
"""Lua ETL against real nodes: init (compiled on every target, errors with
line numbers, 409 on duplicates), inline GET in object and WebDataset sample
mode (tar, tgz, zip), pipelines and etl_args, offline etl-bck / etl-listrange
and copies across 3 targets, coer over a 10k-object job, stop/start/rm,
logs and object errors, EtlMD surviving restarts, the CLI, and every hostile
script of tests/lua/hostile/ run through the API while the node stays
healthy and other ETLs keep working."""
import concurrent.futures
import glob
import gzip
import io
import json
import os
import re
import shutil
import subprocess
import tarfile
import tempfile
import threading
import time
import unittest
import zipfile

import requests

from harness import SHALE, Cluster, NodeTest, main, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
HOSTILE = os.path.join(HERE, "..", "lua", "hostile")
EXAMPLES = os.path.join(HERE, "..", "..", "examples", "etl")

UPPER = """
function transform(data, ctx)
    shale.log("upper", ctx.name, #data)
    local tag = ""
    if type(ctx.args) == "table" and ctx.args.tag then tag = ctx.args.tag end
    if type(ctx.args) == "string" then tag = ctx.args end
    return data:upper() .. tag
end
"""

REVERSE = "function transform(data, ctx) return data:reverse() end\n"

SAMPLE = """
function transform_sample(s, ctx)
    if s.cls == "0" then return nil end          -- drop class 0
    s.txt = "key=" .. s.__key__ .. " index=" .. ctx.index
    s.jpeg, s.jpg = s.jpg, nil                   -- rename an extension
    return s
end
"""


def wds_samples(members):
    """Group (name, data) the way webdataset's tar iterator does (first-dot rule, adjacency)."""
    out, cur = [], None
    for name, data in members:
        m = re.match(r"^((?:.*/|)[^.]+)[.]([^/]*)$", name)
        if not m:
            continue
        key, ext = m.group(1), m.group(2)
        if cur is None or cur["__key__"] != key:
            cur = {"__key__": key}
            out.append(cur)
        cur[ext] = data
    return out


def make_shard(fmt, samples, extra=()):
    buf = io.BytesIO()
    items = []
    for key, fields in samples:
        for ext, data in fields:
            items.append(("%s.%s" % (key, ext), data))
    items += list(extra)
    if fmt == "zip":
        with zipfile.ZipFile(buf, "w") as z:
            for n, d in items:
                z.writestr(n, d)
    else:
        with tarfile.open(fileobj=buf, mode="w:gz" if fmt == "tgz" else "w") as t:
            for n, d in items:
                ti = tarfile.TarInfo(n)
                ti.size = len(d)
                t.addfile(ti, io.BytesIO(d))
    return buf.getvalue()


def read_shard(fmt, data):
    if fmt == "zip":
        z = zipfile.ZipFile(io.BytesIO(data))
        return [(n, z.read(n)) for n in z.namelist()]
    t = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
    return [(m.name, t.extractfile(m).read()) for m in t.getmembers() if m.isfile()]


class EtlApi:
    """Helpers shared by the standalone and the cluster tests."""

    def init(self, name, code, mode=None, **kw):
        msg = {"name": name, "runtime": "lua", "code": code}
        if mode:
            msg["mode"] = mode
        msg.update(kw)
        return self.s.put(self.url + "/v1/etl", json=msg, timeout=120)

    def init_ok(self, name, code, mode=None, **kw):
        r = self.init(name, code, mode, **kw)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertTrue(r.text.startswith("etl-"), r.text)
        return r.text

    def rm(self, name):
        return self.s.delete(self.url + "/v1/etl/" + name, timeout=60)

    def etl_get(self, bucket, obj, name, **params):
        p = {"provider": "ais", "etl_name": name}
        p.update(params)
        return self.s.get(self.url + "/v1/objects/%s/%s" % (bucket, obj), params=p, timeout=120)

    def status(self, job):
        r = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"id": job}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        return r.json()

    def wait_job(self, job, timeout=300):
        return wait_until(lambda: (lambda st: st if st["end_time"] else None)(self.status(job)), timeout,
                          interval=0.2, what="job %s" % job)

    def job_stats(self, job):
        r = self.s.get(self.url + "/v1/cluster", params={"what": "qryxstats"}, json={"id": job}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        tot = {"out-objs": 0, "out-bytes": 0, "err-objs": 0, "loc-objs": 0}
        errors = []
        for snaps in r.json().values():
            for s in snaps:
                for k in tot:
                    tot[k] += int(s["stats"].get(k, "0"))
                errors += ((s.get("ext") or {}).get("errors") or [])
        return tot, errors

    def start_job(self, src, action, value, bck_to=None):
        params = {"provider": "ais"}
        if bck_to:
            params["bck_to"] = "ais/@#/%s/" % bck_to
        r = self.s.post(self.url + "/v1/buckets/" + src, params=params,
                        json={"action": action, "name": "", "value": value}, timeout=120)
        self.assertEqual(r.status_code, 200, r.text)
        return r.text

    def bucket_names(self, bucket):
        names, token = [], ""
        for _ in range(1000):
            r = self.s.get(self.url + "/v1/buckets/" + bucket, params={"provider": "ais"},
                           json={"action": "list", "value": {"pagesize": 5000, "continuation_token": token,
                                                             "props": "name"}}, timeout=60)
            self.assertEqual(r.status_code, 200, r.text)
            j = r.json()
            names += [e["name"] for e in j["entries"] or []]
            token = j["continuation_token"]
            if not token:
                return names
        raise AssertionError("listing did not end")


class StandaloneEtlTest(NodeTest, EtlApi):
    """API behaviour and hostile scripts on one node."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        r = requests.post(cls.url + "/v1/buckets/src", json={"action": "create-bck"}, timeout=30)
        assert r.status_code == 200, r.text
        requests.put(cls.url + "/v1/objects/src/a.txt", data=b"hello world", timeout=30)

    def test_init_validation(self):
        self.init_ok("upper-a", UPPER)
        r = self.init("upper-a", UPPER)
        self.assertEqual(r.status_code, 409)
        self.assertIn("etl job upper-a already exists", r.json()["message"])
        cases = [
            ({"name": "syntax-err", "code": "function transform(d)\n  return d +\nend\n"}, "line 3"),
            ({"name": "no-entry", "code": "function other(d) return d end"}, "transform(data, ctx)"),
            ({"name": "no-sample-fn", "code": REVERSE, "mode": "sample"}, "transform_sample"),
            ({"name": "Bad_Name", "code": REVERSE}, "invalid name"),
            ({"name": "short", "code": REVERSE}, "invalid name"),
            ({"name": "no-code-here"}, "\"code\""),
            ({"name": "bad-mode", "code": REVERSE, "mode": "batch"}, "invalid \"mode\""),
            ({"name": "bad-timeout", "code": REVERSE, "obj_timeout": "forever"}, "obj_timeout"),
            ({"name": "bad-memory", "code": REVERSE, "mem_limit": "1KiB"}, "mem_limit"),
            ({"name": "container", "runtime": {"image": "aistorage/runtime_python"}}, "not as containers"),
            ({"name": "bytecode-x", "code": "\x1bLJ\x02\x01function"}, "bytecode"),
            ({"name": "top-error", "code": "error('boom at init')\nfunction transform(d) return d end"},
             "boom at init"),
        ]
        for msg, want in cases:
            msg.setdefault("runtime", "lua")
            r = self.s.put(self.url + "/v1/etl", json=msg, timeout=60)
            self.assertEqual(r.status_code, 400, "%s: %s" % (msg["name"], r.text))
            self.assertIn(want, r.json()["message"], msg["name"])
        r = self.s.put(self.url + "/v1/etl", data=b"{not json", timeout=30)
        self.assertEqual(r.status_code, 400)
        names = [e["id"] for e in self.s.get(self.url + "/v1/etl", timeout=30).json()]
        self.assertIn("upper-a", names)
        for msg, _ in cases:
            self.assertNotIn(msg["name"], names)
        self.assertEqual(self.rm("upper-a").status_code, 200)

    def test_inline_args_pipeline_errors(self):
        self.init_ok("upper-b", UPPER)
        self.init_ok("reverse-b", REVERSE)
        r = self.etl_get("src", "a.txt", "upper-b")
        self.assertEqual((r.status_code, r.content), (200, b"HELLO WORLD"))
        r = self.etl_get("src", "a.txt", "upper-b", etl_args='{"tag":"!"}')
        self.assertEqual(r.content, b"HELLO WORLD!")
        r = self.etl_get("src", "a.txt", "upper-b", etl_args="plain")
        self.assertEqual(r.content, b"HELLO WORLDplain")
        r = self.etl_get("src", "a.txt", "upper-b", etl_pipeline="reverse-b")
        self.assertEqual(r.content, b"DLROW OLLEH")
        # plain GET and HEAD are untouched
        self.assertEqual(self.get("src", "a.txt").content, b"hello world")
        r = self.s.head(self.url + "/v1/objects/src/a.txt", params={"etl_name": "upper-b"}, timeout=30)
        self.assertEqual(r.headers["Content-Length"], "11")
        r = self.etl_get("src", "a.txt", "no-such-etl")
        self.assertEqual(r.status_code, 404)
        self.assertIn("etl job no-such-etl does not exist", r.json()["message"])
        r = self.s.get(self.url + "/v1/objects/src/a.txt", params={"etl_name": "upper-b"},
                       headers={"Range": "bytes=0-3"}, timeout=30)
        self.assertEqual(r.status_code, 400)
        r = self.etl_get("src", "missing.txt", "upper-b")
        self.assertEqual(r.status_code, 404)
        self.assertIn("ais://src/missing.txt", r.json()["message"])
        # a runtime error names the object, the script line, and is listed
        self.init_ok("fails-on-b", "function transform(d, ctx)\n  if ctx.name == 'a.txt' then\n"
                                  "    error('cannot handle ' .. ctx.name)\n  end\n  return d\nend\n")
        r = self.etl_get("src", "a.txt", "fails-on-b")
        self.assertEqual(r.status_code, 500)
        m = r.json()["message"]
        self.assertIn("ais://src/a.txt", m)
        self.assertIn("line 3", m)
        self.assertIn("cannot handle a.txt", m)
        d = self.s.get(self.url + "/v1/etl/fails-on-b", timeout=30).json()
        self.assertEqual(d["init_msg"]["name"], "fails-on-b")
        # what AIStore's SDK (ETLDetails) parses: code in base64, communication and timeouts as strings
        import base64
        self.assertIn(b"cannot handle", base64.b64decode(d["init_msg"]["code"], validate=True))
        self.assertIsInstance(d["init_msg"]["communication"], str)
        self.assertIsInstance(d["init_msg"]["obj_timeout"], str)
        self.assertTrue(any(e["obj_name"] == "ais://src/a.txt" and e["ecode"] == 500 and "line 3" in e["msg"]
                            for e in d["obj_errors"]), d)
        logs = self.s.get(self.url + "/v1/etl/upper-b/logs", timeout=30).json()
        text = base64.b64decode(logs[0]["logs"]).decode()
        self.assertIn("upper\ta.txt\t11", text)
        for n in ("upper-b", "reverse-b", "fails-on-b"):
            self.assertEqual(self.rm(n).status_code, 200)

    def test_stop_start_rm(self):
        self.init_ok("toggle-x", REVERSE)
        self.assertEqual(self.etl_get("src", "a.txt", "toggle-x").content, b"dlrow olleh")
        self.assertEqual(self.s.post(self.url + "/v1/etl/toggle-x/stop", timeout=30).status_code, 200)
        r = self.etl_get("src", "a.txt", "toggle-x")
        self.assertEqual(r.status_code, 404)
        self.assertIn("not running", r.json()["message"])
        lst = {e["id"]: e for e in self.s.get(self.url + "/v1/etl", timeout=30).json()}
        self.assertEqual(lst["toggle-x"]["stage"], "Aborted")
        self.assertEqual(self.s.post(self.url + "/v1/etl/toggle-x/start", timeout=30).status_code, 200)
        r = self.s.post(self.url + "/v1/etl/toggle-x/start", timeout=30)
        self.assertEqual(r.status_code, 400)
        self.assertEqual(self.etl_get("src", "a.txt", "toggle-x").content, b"dlrow olleh")
        self.assertEqual(self.rm("toggle-x").status_code, 200)
        r = self.rm("toggle-x")
        self.assertEqual(r.status_code, 404)
        self.assertIn("etl job toggle-x does not exist", r.json()["message"])
        self.assertEqual(self.s.get(self.url + "/v1/etl/toggle-x", timeout=30).status_code, 404)

    def test_sample_mode_formats(self):
        self.init_ok("sample-x", SAMPLE, mode="sample")
        samples = [("train/s%02d" % i, [("jpg", b"J" * (10 + i)), ("cls", str(i % 3).encode()),
                                        ("seg.png", b"P%d" % i)]) for i in range(12)]
        for fmt, name in (("tar", "shard.tar"), ("tgz", "shard.tgz"), ("zip", "shard.zip")):
            data = make_shard(fmt, samples, extra=[("README", b"keep me")])
            self.assertEqual(self.put("src", name, data).status_code, 200)
            r = self.etl_get("src", name, "sample-x")
            self.assertEqual(r.status_code, 200, r.text[:300])
            if fmt == "tgz":
                self.assertEqual(r.content[:2], b"\x1f\x8b")
            if fmt == "zip":
                self.assertEqual(r.content[:2], b"PK")
            members = read_shard(fmt, r.content)
            self.assertIn(("README", b"keep me"), members)
            got = wds_samples(members)
            want = [i for i in range(12) if i % 3 != 0]
            self.assertEqual([s["__key__"] for s in got], ["train/s%02d" % i for i in want])
            for s, i in zip(got, want):
                self.assertEqual(s["jpeg"], b"J" * (10 + i))
                self.assertNotIn("jpg", s)
                self.assertEqual(s["seg.png"], b"P%d" % i)
                self.assertEqual(s["txt"], ("key=train/s%02d index=%d" % (i, i)).encode())
        # three shards of 12 samples: OBJECTS counts the shards, SAMPLES the samples (OBJECTS counted samples)
        lst = {e["id"]: e for e in self.s.get(self.url + "/v1/etl", timeout=30).json()}
        self.assertEqual((lst["sample-x"]["obj_count"], lst["sample-x"]["sample_count"]), (3, 36), lst["sample-x"])
        p = subprocess.run([SHALE, "etl", "show"], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, AIS_ENDPOINT=self.url))
        self.assertRegex(p.stdout, r"(?m)^sample-x\s+sample\s+\S+\s+\S+\s+3\s+36\s", p.stdout)
        # not a shard
        r = self.etl_get("src", "a.txt", "sample-x")
        self.assertEqual(r.status_code, 400)
        self.assertIn("not a shard", r.json()["message"])
        # a failing first sample gives a proper error, not a cut-off 200
        self.init_ok("sample-bad", "function transform_sample(s)\n  return s.missing.field\nend\n", mode="sample")
        r = self.etl_get("src", "shard.tar", "sample-bad")
        self.assertEqual(r.status_code, 500)
        self.assertIn("line 2", r.json()["message"])
        self.assertIn("train/s00", r.json()["message"])
        self.assertEqual(self.rm("sample-x").status_code, 200)
        self.assertEqual(self.rm("sample-bad").status_code, 200)

    def test_sample_outputs_that_would_not_read_back(self):
        """Sample-mode results WebDataset would misread are refused and recorded."""
        samples = [("k%d" % i, [("jpg", b"J"), ("cls", b"1")]) for i in range(3)]
        self.assertEqual(self.put("src", "rk.tar", make_shard("tar", samples)).status_code, 200)
        cases = [
            ("rk-samekey", "function transform_sample(s) s.__key__ = 'same' return s end", "written just before"),
            ("rk-dotkey", "function transform_sample(s) s.__key__ = s.__key__ .. '.v2' return s end", "has a dot"),
            ("rk-slash", "function transform_sample(s) s['a/b'] = 'x' return s end", "cannot name a member"),
            ("rk-emptykey", "function transform_sample(s) s.__key__ = '' return s end", "non-empty string"),
        ]
        for name, code, want in cases:
            self.init_ok(name, code, mode="sample")
            if name == "rk-samekey":
                # the first sample goes out, the second fails: the transfer is cut short, never completed
                with self.assertRaises(requests.exceptions.ChunkedEncodingError):
                    self.etl_get("src", "rk.tar", name)
            else:
                r = self.etl_get("src", "rk.tar", name)
                self.assertEqual(r.status_code, 500, r.text)
                self.assertIn(want, r.json()["message"])
            d = self.s.get(self.url + "/v1/etl/" + name, timeout=30).json()
            self.assertTrue(any(want in e["msg"] for e in d["obj_errors"]), (name, d["obj_errors"]))
            self.rm(name)

    def test_limits_are_recorded(self):
        self.init_ok("tiny-mem", "function transform_sample(s) return s end", mode="sample", mem_limit="1MiB")
        samples = [("a", [("jpg", b"x" * 10)]), ("b", [("jpg", os.urandom(700 * 1024))])]
        self.assertEqual(self.put("src", "big-sample.tar", make_shard("tar", samples)).status_code, 200)
        with self.assertRaises(requests.exceptions.ChunkedEncodingError):  # sample "b" is over the limit
            self.etl_get("src", "big-sample.tar", "tiny-mem")
        d = self.s.get(self.url + "/v1/etl/tiny-mem", timeout=30).json()
        self.assertTrue(any(e["ecode"] == 413 and "raise mem_limit" in e["msg"] for e in d["obj_errors"]),
                        d["obj_errors"])
        self.rm("tiny-mem")
        self.init_ok("tiny-obj", REVERSE, mem_limit="1MiB")
        self.assertEqual(self.put("src", "big.obj", os.urandom(800 * 1024)).status_code, 200)
        self.assertEqual(self.etl_get("src", "big.obj", "tiny-obj").status_code, 413)
        d = self.s.get(self.url + "/v1/etl/tiny-obj", timeout=30).json()
        self.assertEqual([e["ecode"] for e in d["obj_errors"]], [413])
        self.rm("tiny-obj")

    def test_unknown_init_field(self):
        r = self.init("typo-field", REVERSE, modee="sample")
        self.assertEqual(r.status_code, 400)
        self.assertIn('unknown field "modee"', r.json()["message"])
        # AIStore's container fields are accepted and ignored
        self.init_ok("aistore-fields", REVERSE, communication="hpush://", init_timeout="5m")
        self.rm("aistore-fields")

    maxDiff = None

    def test_hostile_scripts(self):
        """Every script of tests/lua/hostile through the real API; the node stays healthy."""
        self.init_ok("good-one", REVERSE)
        files = sorted(glob.glob(os.path.join(HOSTILE, "*.lua")))
        self.assertGreater(len(files), 60)
        failures = []
        for i, path in enumerate(files):
            with open(path, encoding="utf-8", errors="surrogateescape") as f:
                src = f.read()
            hdr = dict(re.findall(r"^-- (expect|timeout_ms|mem_mb|max_output): (.*)$", src, re.M))
            expect = hdr["expect"].split(" ", 1)
            codes = expect[0].split("|")
            want = expect[1] if len(expect) > 1 else ""
            if "OK" in codes:
                wrapper = src + "\nfunction transform(data, ctx)\n  local r = run()\n" \
                                "  if type(r) == 'string' then return r end\n  return 'ok:' .. type(r)\nend\n"
            else:
                # the value itself must cross the boundary (limit_return_*, limit_output*)
                wrapper = src + "\nfunction transform(data, ctx)\n  local r = run()\n" \
                                "  if r == nil then return 'ok:nil' end\n  return r\nend\n"
            name = "hostile-%02d" % i
            extra = {"obj_timeout": "%dms" % int(hdr.get("timeout_ms", "2000"))}
            if "mem_mb" in hdr:
                extra["mem_limit"] = "%sMiB" % hdr["mem_mb"]
            if "max_output" in hdr:
                extra["max_output"] = hdr["max_output"]
            r = self.init(name, wrapper, **extra)
            if r.status_code != 200:
                failures.append("%s: init %d %s" % (os.path.basename(path), r.status_code, r.text[:200]))
                continue
            r = self.etl_get("src", "a.txt", name)
            if "OK" in codes:
                ok = r.status_code == 200
            else:
                ok = (r.status_code == 504 and "ETIMEOUT" in codes) or r.status_code == 500
                if ok and want:
                    ok = any(w in r.json()["message"] for w in want.split("|"))
            if not ok:
                failures.append("%s: expected %s %r, got %d %s" % (os.path.basename(path), hdr["expect"], want,
                                                                  r.status_code, r.text[:300]))
            self.assertEqual(self.rm(name).status_code, 200)
            # the node and the other ETL are unaffected
            self.assertEqual(self.s.get(self.url + "/v1/health", timeout=10).status_code, 200)
            self.assertEqual(self.etl_get("src", "a.txt", "good-one").content, b"dlrow olleh")
        self.assertEqual(failures, [])
        self.assertEqual(self.rm("good-one").status_code, 200)

    def test_loops_do_not_block_the_node(self):
        """Lua runs off the HTTP threads: eight looping transforms at once leave the node answering."""
        self.init_ok("spin-forever", "function transform(d)\n  while true do end\nend\n", obj_timeout="3s")
        self.init_ok("spin-pcall", "function transform(d)\n  while true do pcall(function() while true do end end) "
                                   "end\nend\n", obj_timeout="3s")
        self.init_ok("good-two", REVERSE)
        res = []

        def spin(n):
            res.append(self.etl_get("src", "a.txt", n))
        threads = [threading.Thread(target=spin, args=("spin-forever" if i % 2 else "spin-pcall",))
                   for i in range(8)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        t0 = time.time()
        for _ in range(5):
            self.assertEqual(requests.get(self.url + "/v1/health", timeout=5).status_code, 200)
            self.assertEqual(requests.get(self.url + "/v1/objects/src/a.txt", timeout=5).content, b"hello world")
        self.assertLess(time.time() - t0, 2.5)
        for t in threads:
            t.join(60)
        self.assertEqual(len(res), 8)
        for r in res:
            self.assertEqual(r.status_code, 504, r.text)
            self.assertIn("timed out", r.json()["message"])
        self.assertEqual(self.etl_get("src", "a.txt", "good-two").content, b"dlrow olleh")
        for n in ("spin-forever", "spin-pcall", "good-two"):
            self.rm(n)

    def test_large_object_refused(self):
        self.init_ok("small-mem", REVERSE, mem_limit="3MiB")
        self.assertEqual(self.put("src", "big.bin", b"x" * (2 * 1024 * 1024)).status_code, 200)
        r = self.etl_get("src", "big.bin", "small-mem")
        self.assertEqual(r.status_code, 413)
        self.assertIn("mem_limit", r.json()["message"])
        self.rm("small-mem")

    def test_examples_compile(self):
        """The shipped example ETLs init cleanly (their own tests run in the cluster class)."""
        files = sorted(glob.glob(os.path.join(EXAMPLES, "*.lua")))
        self.assertGreaterEqual(len(files), 5)
        for path in files:
            with open(path) as f:
                src = f.read()
            mode = "sample" if "transform_sample" in src else "object"
            name = "ex-" + os.path.basename(path)[:-4].replace("_", "-")
            r = self.init(name, src, mode=mode)
            self.assertEqual(r.status_code, 200, "%s: %s" % (path, r.text))
            self.rm(name)


class ClusterEtlTest(unittest.TestCase, EtlApi):
    """1 proxy + 3 targets."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shale-etl-")
        cls.c = Cluster(cls.tmp, proxies=1, targets=3).start()
        cls.url = cls.c.url
        cls.s = requests.Session()
        wait_until(lambda: len(cls.c.smap()["tmap"]) == 3, 30, what="3 targets")
        r = cls.s.post(cls.url + "/v1/buckets/raw", json={"action": "create-bck"}, timeout=30)
        assert r.status_code == 200, r.text
        cls.objs = {"d/obj-%03d.txt" % i: ("object %d" % i).encode() for i in range(300)}
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            list(ex.map(lambda kv: cls.s.put(cls.url + "/v1/objects/raw/" + kv[0], data=kv[1], timeout=60),
                        cls.objs.items()))

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def targets_holding(self, bucket, names):
        """target id -> how many of names it holds (direct HEAD on each target)."""
        smap = self.c.smap()
        out = {}
        for tid, t in smap["tmap"].items():
            n = 0
            for name in names:
                r = requests.head(t["public_net"]["direct_url"] + "/v1/objects/%s/%s" % (bucket, name), timeout=10)
                n += r.status_code == 200
            out[tid] = n
        return out

    def test_inline_through_gateway(self):
        self.init_ok("upper-c", UPPER)
        spread = self.targets_holding("raw", list(self.objs)[:30])
        self.assertEqual(sum(1 for v in spread.values() if v), 3, spread)
        for name in list(self.objs)[:30]:
            r = self.etl_get("raw", name, "upper-c", etl_args='{"tag":"?"}')
            self.assertEqual(r.status_code, 200, r.text)
            self.assertEqual(r.content, self.objs[name].upper() + b"?")
        # the redirect is the normal 301 to the owner
        r = self.s.get(self.url + "/v1/objects/raw/d/obj-000.txt", params={"etl_name": "upper-c"},
                       allow_redirects=False, timeout=30)
        self.assertEqual(r.status_code, 301)
        self.assertIn("etl_name=upper-c", r.headers["Location"])
        # counters and logs are aggregated over targets
        lst = {e["id"]: e for e in self.s.get(self.url + "/v1/etl", timeout=30).json()}
        self.assertGreaterEqual(lst["upper-c"]["obj_count"], 30)
        logs = self.s.get(self.url + "/v1/etl/upper-c/logs", timeout=30).json()
        self.assertEqual(len(logs), 3)
        health = self.s.get(self.url + "/v1/etl/upper-c/health", timeout=30).json()
        self.assertEqual(sorted(h["health_status"] for h in health), ["Running"] * 3)
        one = logs[0]["target_id"]
        r = self.s.get(self.url + "/v1/etl/upper-c/logs/" + one, timeout=30).json()
        self.assertEqual([x["target_id"] for x in r], [one])
        self.rm("upper-c")

    def test_init_checks_every_target_and_syntax(self):
        r = self.init("broken-c", "function transform(d)\n  local x = = 1\nend\n")
        self.assertEqual(r.status_code, 400)
        self.assertIn("line 2", r.json()["message"])
        self.assertNotIn("broken-c", [e["id"] for e in self.s.get(self.url + "/v1/etl", timeout=30).json()])

    def test_offline_bucket_and_listrange(self):
        self.init_ok("upper-d", UPPER)
        job = self.start_job("raw", "etl-bck", {"id": "upper-d", "prefix": "d/obj-1", "prepend": "up/",
                                                "ext": {"txt": "TXT"}}, bck_to="dst-d")
        st = self.wait_job(job)
        self.assertEqual(st["err"], "", st)
        self.assertEqual(st["kind"], "etl-bck")
        want = sorted("up/" + n[:-3] + "TXT" for n in self.objs if n.startswith("d/obj-1"))
        self.assertEqual(sorted(self.bucket_names("dst-d")), want)
        for n in want[:20]:
            src = n[len("up/"):-3] + "txt"
            self.assertEqual(self.s.get(self.url + "/v1/objects/dst-d/" + n, timeout=30).content,
                             self.objs[src].upper())
        tot, _ = self.job_stats(job)
        self.assertEqual(tot["out-objs"], 100)
        # every output object sits on its HRW owner: a direct GET there works
        from test_cluster import hrw_owner
        smap = self.c.smap()
        for n in want[:20]:
            t = hrw_owner(smap, "dst-d", n)
            r = requests.get(t["public_net"]["direct_url"] + "/v1/objects/dst-d/" + n, timeout=10)
            self.assertEqual(r.status_code, 200, n)
        # list/range: a template and a list
        job = self.start_job("raw", "etl-listrange", {"id": "upper-d", "template": "d/obj-{000..009}.txt",
                                                      "tobck": {"name": "dst-lr"}})
        self.assertTrue(job.startswith("tco-"), job)
        self.assertEqual(self.wait_job(job)["err"], "")
        self.assertEqual(len(self.bucket_names("dst-lr")), 10)
        job = self.start_job("raw", "etl-listrange", {"id": "upper-d", "objnames": ["d/obj-200.txt", "d/obj-201.txt"],
                                                      "tobck": {"name": "dst-lr2"}})
        self.assertEqual(self.wait_job(job)["err"], "")
        self.assertEqual(sorted(self.bucket_names("dst-lr2")), ["d/obj-200.txt", "d/obj-201.txt"])
        # etl_args given as JSON reach the script as a table
        job = self.start_job("raw", "etl-listrange", {"id": "upper-d", "objnames": ["d/obj-001.txt"],
                                                      "etl_args": {"tag": "+json"}, "tobck": {"name": "dst-args"}})
        self.assertEqual(self.wait_job(job)["err"], "")
        self.assertEqual(self.s.get(self.url + "/v1/objects/dst-args/d/obj-001.txt", timeout=30).content,
                         b"OBJECT 1+json")
        # dry run writes nothing
        job = self.start_job("raw", "etl-bck", {"id": "upper-d", "dry_run": True}, bck_to="dst-dry")
        self.assertEqual(self.wait_job(job)["err"], "")
        tot, _ = self.job_stats(job)
        self.assertEqual(tot["out-objs"], len(self.objs))
        r = self.s.head(self.url + "/v1/buckets/dst-dry", timeout=30)
        self.assertEqual(r.status_code, 404)
        # plain copy keeps bytes
        job = self.start_job("raw", "copy-bck", {"prefix": "d/obj-2"}, bck_to="cp")
        self.assertEqual(self.wait_job(job)["err"], "")
        names = self.bucket_names("cp")
        self.assertEqual(len(names), 100)
        self.assertEqual(self.s.get(self.url + "/v1/objects/cp/" + names[0], timeout=30).content, self.objs[names[0]])
        # one object through an ETL into another bucket
        r = self.s.put(self.url + "/v1/objects/raw/d/obj-007.txt",
                       params={"object_to": "ais/@#/cp/single.txt", "etl_name": "upper-d"}, timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.s.get(self.url + "/v1/objects/cp/single.txt", timeout=30).content, b"OBJECT 7")
        # bad requests
        r = self.s.post(self.url + "/v1/buckets/raw", params={"bck_to": "ais/@#/raw/"},
                        json={"action": "etl-bck", "value": {"id": "upper-d"}}, timeout=30)
        self.assertEqual(r.status_code, 400)
        self.assertIn("same bucket", r.json()["message"])
        r = self.s.post(self.url + "/v1/buckets/raw", params={"bck_to": "ais/@#/x1/"},
                        json={"action": "etl-bck", "value": {"id": "nope-nope"}}, timeout=30)
        self.assertEqual(r.status_code, 404)
        self.assertIn("etl job nope-nope does not exist", r.json()["message"])
        r = self.s.post(self.url + "/v1/buckets/nosuchbucket", params={"bck_to": "ais/@#/x1/"},
                        json={"action": "etl-bck", "value": {"id": "upper-d"}}, timeout=30)
        self.assertEqual(r.status_code, 404)
        self.assertEqual(self.s.head(self.url + "/v1/buckets/x1", timeout=30).status_code, 404)
        self.rm("upper-d")

    def test_sample_mode_offline(self):
        self.init_ok("sample-c", SAMPLE, mode="sample")
        samples = [("s%03d" % i, [("jpg", b"J%d" % i), ("cls", str(i % 3).encode())]) for i in range(30)]
        self.s.post(self.url + "/v1/buckets/shards", json={"action": "create-bck"}, timeout=30)
        for k in range(6):
            data = make_shard("tar", samples[k * 5:(k + 1) * 5])
            self.assertEqual(self.s.put(self.url + "/v1/objects/shards/shard-%d.tar" % k, data=data,
                                        timeout=60).status_code, 200)
        job = self.start_job("shards", "etl-bck", {"id": "sample-c"}, bck_to="shards-out")
        self.assertEqual(self.wait_job(job)["err"], "")
        keys = []
        for k in range(6):
            r = self.s.get(self.url + "/v1/objects/shards-out/shard-%d.tar" % k, timeout=30)
            self.assertEqual(r.status_code, 200)
            keys += [s["__key__"] for s in wds_samples(read_shard("tar", r.content))]
        self.assertEqual(keys, ["s%03d" % i for i in range(30) if i % 3])
        self.rm("sample-c")

    def test_coer_over_10k_objects(self):
        """A script that fails on one object of 10,000: with coer the job finishes and names it; without, it
        fails naming it."""
        self.s.post(self.url + "/v1/buckets/many", json={"action": "create-bck"}, timeout=30)
        names = ["m/%05d" % i for i in range(10000)]
        sess = threading.local()

        def put(n):
            if not hasattr(sess, "s"):
                sess.s = requests.Session()
            r = sess.s.put(self.url + "/v1/objects/many/" + n, data=n.encode(), timeout=60)
            return r.status_code
        with concurrent.futures.ThreadPoolExecutor(16) as ex:
            codes = list(ex.map(put, names))
        self.assertEqual(set(codes), {200})
        self.init_ok("fails-once", "function transform(d, ctx)\n  if ctx.name == 'm/04242' then\n"
                                   "    error('bad record in ' .. ctx.name)\n  end\n  return d\nend\n")
        job = self.start_job("many", "etl-bck", {"id": "fails-once", "coer": True}, bck_to="many-out")
        st = self.wait_job(job, timeout=600)
        self.assertEqual(st["err"], "", st)
        tot, errors = self.job_stats(job)
        self.assertEqual(tot["out-objs"], 9999)
        self.assertEqual(tot["err-objs"], 1)
        self.assertEqual(len(errors), 1)
        self.assertEqual(errors[0]["obj"], "ais://many/m/04242")
        self.assertIn("line 3", errors[0]["msg"])
        self.assertEqual(len(self.bucket_names("many-out")), 9999)
        d = self.s.get(self.url + "/v1/etl/fails-once", params={"uuid": job}, timeout=30).json()
        self.assertEqual([e["obj_name"] for e in d["obj_errors"]], ["ais://many/m/04242"])
        # without coer: the job fails and says where
        job = self.start_job("many", "etl-bck", {"id": "fails-once"}, bck_to="many-out2")
        st = self.wait_job(job, timeout=600)
        # failed (by its own object), not "aborted" as a job someone stopped
        self.assertFalse(st["aborted"], st)
        self.assertIn("ais://many/m/04242", st["err"])
        # the ended job, named by id, is shown without --all: failed where the object failed
        p = subprocess.run([SHALE, "job", "show", job], capture_output=True, text=True,
                           env=dict(os.environ, AIS_ENDPOINT=self.url), timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("Failed", p.stdout)
        self.assertIn(job, p.stdout)
        self.assertIn("line 3", st["err"])
        self.rm("fails-once")

    def test_examples_on_real_shards(self):
        """The shipped examples do what their headers promise."""
        import hashlib

        def load(n):
            with open(os.path.join(EXAMPLES, n)) as f:
                return f.read()
        self.s.post(self.url + "/v1/buckets/ex", json={"action": "create-bck"}, timeout=30)
        samples = []
        for i in range(8):
            meta = {"split": "train" if i % 2 else "val", "width": 100 * i}
            samples.append(("pets/p%d" % i, [("JPEG", b"IMG%d" % i), ("cls", b"%d\n" % (i % 3)),
                                              ("json", json.dumps(meta).encode())]))
        samples.append(("pets/noimg", [("cls", b"1")]))
        self.assertEqual(self.s.put(self.url + "/v1/objects/ex/s.tar", data=make_shard("tar", samples),
                                    timeout=30).status_code, 200)
        names = {"relabel.lua": "ex-relabel", "filter_json.lua": "ex-filter", "gzip_json.lua": "ex-gzip",
                 "rename_ext.lua": "ex-rename", "wds_prepare.lua": "ex-prepare", "md5.lua": "ex-md5",
                 "compress.lua": "ex-compress"}
        for f, n in names.items():
            src = load(f)
            self.init_ok(n, src, mode="sample" if "transform_sample" in src else None)

        def run(n, **args):
            r = self.etl_get("ex", "s.tar", n, **args)
            self.assertEqual(r.status_code, 200, r.text[:300])
            return wds_samples(read_shard("tar", r.content))
        out = run("ex-relabel", etl_args=json.dumps({"0": "5", "2": "drop"}))
        self.assertEqual([(s["__key__"], s.get("cls")) for s in out],
                         [("pets/p0", b"5"), ("pets/p1", b"1\n"), ("pets/p3", b"5"), ("pets/p4", b"1\n"),
                          ("pets/p6", b"5"), ("pets/p7", b"1\n"), ("pets/noimg", b"1")])
        out = run("ex-filter", etl_args=json.dumps({"field": "split", "equals": "train"}))
        self.assertEqual([s["__key__"] for s in out], ["pets/p1", "pets/p3", "pets/p5", "pets/p7"])
        out = run("ex-filter", etl_args=json.dumps({"field": "width", "min": 500}))
        self.assertEqual([s["__key__"] for s in out], ["pets/p5", "pets/p6", "pets/p7"])
        out = run("ex-gzip")
        self.assertEqual(json.loads(gzip.decompress(out[0]["json.gz"])), {"split": "val", "width": 0})
        self.assertNotIn("json", out[0])
        out = run("ex-rename")
        self.assertEqual(out[0]["jpg"], b"IMG0")
        out = run("ex-prepare", etl_args=json.dumps({"require_label": True}))
        self.assertEqual(len(out), 8)  # the sample without an image is dropped
        meta = json.loads(out[3]["json"])
        self.assertEqual((meta["key"], meta["cls"], meta["image"], meta["image_bytes"]), ("pets/p3", 0, "jpg", 4))
        self.assertEqual(meta["md5"], hashlib.md5(b"IMG3").hexdigest())
        self.assertEqual(out[3]["cls"], b"0")
        self.put_obj = self.s.put(self.url + "/v1/objects/ex/plain.txt", data=b"some text", timeout=30)
        r = self.etl_get("ex", "plain.txt", "ex-md5")
        self.assertEqual(r.content.decode(), hashlib.md5(b"some text").hexdigest())
        r = self.etl_get("ex", "plain.txt", "ex-compress")
        self.assertEqual(gzip.decompress(r.content), b"some text")
        for n in names.values():
            self.rm(n)

    def test_etlmd_survives_target_restart_and_cli(self):
        env = dict(os.environ, AIS_ENDPOINT=self.url)
        code = os.path.join(self.tmp, "rev.lua")
        with open(code, "w") as f:
            f.write(REVERSE)
        p = subprocess.run([SHALE, "etl", "init", "--name", "rev-cli", "--code", code], capture_output=True,
                           text=True, env=env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('ETL "rev-cli" initialised', p.stdout)
        p = subprocess.run([SHALE, "etl", "show"], capture_output=True, text=True, env=env, timeout=60)
        self.assertIn("rev-cli", p.stdout)
        self.assertIn("NAME", p.stdout.splitlines()[0])
        # one ETL: its properties and its Lua source as text (the API sends it in base64)
        p = subprocess.run([SHALE, "etl", "show", "rev-cli"], capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(REVERSE.strip().splitlines()[0], p.stdout)
        # kill -9 the owner of an object, restart it: the ETL is still there (node LMDB) and works
        from test_cluster import hrw_owner
        owner = hrw_owner(self.c.smap(), "raw", "d/obj-042.txt")
        name = next(n["name"] for n in self.c.topology()["nodes"]
                    if n["port"] == int(owner["public_net"]["daemon_port"]))
        self.c.kill9(name)
        self.c.start()
        wait_until(lambda: self.etl_get("raw", "d/obj-042.txt", "rev-cli").status_code == 200, 60,
                   what="ETL after restart")
        self.assertEqual(self.etl_get("raw", "d/obj-042.txt", "rev-cli").content, b"24 tcejbo")
        out = os.path.join(self.tmp, "out.txt")
        p = subprocess.run([SHALE, "etl", "object", "rev-cli", "ais://raw/d/obj-042.txt", out], capture_output=True,
                           text=True, env=env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out, "rb") as f:
            self.assertEqual(f.read(), b"24 tcejbo")
        p = subprocess.run([SHALE, "etl", "bucket", "rev-cli", "ais://raw", "ais://rev-out", "--template",
                            "d/obj-{010..019}.txt", "--wait"], capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("Transformed 10 objects", p.stdout)
        # --ext: with or without braces, but a half-braced or empty mapping is a typo, refused before any job
        for bad in ("{txt:md", "txt:md}", "{:md}", "{txt:}"):
            p = subprocess.run([SHALE, "etl", "bucket", "rev-cli", "ais://raw", "ais://rev-ext", "--ext", bad],
                               capture_output=True, text=True, env=env, timeout=60)
            self.assertNotEqual(p.returncode, 0, bad)
            self.assertIn("expected '{old:new, ...}'", p.stderr)
        p = subprocess.run([SHALE, "etl", "bucket", "rev-cli", "ais://raw", "ais://rev-ext", "--template",
                            "d/obj-{010..011}.txt", "--ext", "txt:md", "--wait"], capture_output=True, text=True,
                           env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("Transformed 2 objects", p.stdout)
        self.assertEqual(self.bucket_names("rev-ext"), ["d/obj-010.md", "d/obj-011.md"])
        p = subprocess.run([SHALE, "etl", "rm", "rev-cli"], capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = subprocess.run([SHALE, "etl", "object", "rev-cli", "ais://raw/d/obj-042.txt", "-"],
                           capture_output=True, text=True, env=env, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("etl job rev-cli does not exist", p.stderr)

    def test_zz_target_joining_later_gets_the_etls(self):
        """EtlMD reaches a target that joins after the ETL was initialised (runs last: it grows the cluster)."""
        self.init_ok("late-join", REVERSE)
        env = dict(os.environ, AIS_ENDPOINT=self.url)
        p = subprocess.run([SHALE, "playground", "add-target", "--dir", self.c.dir], capture_output=True, text=True,
                           env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        wait_until(lambda: len(self.c.smap()["tmap"]) == 4, 60, what="the 4th target")
        health = wait_until(lambda: (lambda h: h if len(h) == 4 else None)(
            self.s.get(self.url + "/v1/etl/late-join/health", timeout=30).json()), 60, what="4 targets")
        self.assertEqual([h["health_status"] for h in health], ["Running"] * 4)
        subprocess.run([SHALE, "job", "wait", "rebalance", "--timeout", "2m"], capture_output=True, env=env,
                       timeout=180)
        for n in list(self.objs)[:40]:
            r = self.etl_get("raw", n, "late-join")
            self.assertEqual(r.content, self.objs[n][::-1], n)
        self.rm("late-join")


if __name__ == "__main__":
    main()
