# SPDX-License-Identifier: MIT
"""AIStore's downloader (POST /v1/download) against a gateway and 3 targets, the sources served by python's
http.server on 127.0.0.1: one URL, a brace range of 50, a list (and a {name: URL} map); a 404 source counted
as an error with its URL; abort mid-way; every object's bytes and checksum equal the source's; file:// and
other schemes refused with 400; the CLI's `shale download`; AIStore's GET /v1/download (status, list) and DELETE
/v1/download/abort|remove; limits.connections (--limit-connections); type backend (a remote bucket's objects
into its cached copy, --sync)."""
import hashlib
import http.server
import os
import subprocess
import tempfile
import threading
import time

from harness import ClusterTest, SHALE, main, start_cluster, wait_until


class _Handler(http.server.SimpleHTTPRequestHandler):
    delay = 0.0
    lock = threading.Lock()
    active = peak = 0  # requests being served at once, and the most seen

    def log_message(self, *a):
        pass

    def do_GET(self):
        with _Handler.lock:
            _Handler.active += 1
            _Handler.peak = max(_Handler.peak, _Handler.active)
        try:
            if _Handler.delay:
                time.sleep(_Handler.delay)
            return super().do_GET()
        finally:
            with _Handler.lock:
                _Handler.active -= 1


class TestDownload(ClusterTest):
    @classmethod
    def setUpClass(cls):
        # (keys for the nodes' S3 backend plugin: a type backend download's remote is this cluster's own /s3)
        start_cluster(cls, targets=3, env={"AWS_ACCESS_KEY_ID": "dl-test", "AWS_SECRET_ACCESS_KEY": "dl-secret",
                                           "AWS_PROFILE": "", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"})
        cls.src = tempfile.mkdtemp(prefix="shale-dl-src-")
        cls.data = {}
        for i in range(50):
            d = os.urandom(1000 + i * 997)
            n = "shard-%03d.tar" % i
            cls.data[n] = d
            with open(os.path.join(cls.src, n), "wb") as f:
                f.write(d)
        d = os.urandom(3 * 1024 * 1024 + 7)
        cls.data["big.bin"] = d
        with open(os.path.join(cls.src, "big.bin"), "wb") as f:
            f.write(d)
        src = cls.src

        class H(_Handler):
            def __init__(self, *a, **kw):
                super().__init__(*a, directory=src, **kw)
        cls.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        cls.base = "http://127.0.0.1:%d" % cls.httpd.server_address[1]
        threading.Thread(target=cls.httpd.serve_forever, daemon=True).start()

    @classmethod
    def tearDownClass(cls):
        cls.httpd.shutdown()
        super().tearDownClass()

    def mkb(self, b):
        r = self.s.post(self.url + "/v1/buckets/" + b, json={"action": "create-bck"})
        self.assertEqual(r.status_code, 200, r.text)

    def start(self, body):
        r = self.s.post(self.url + "/v1/download", json=body, timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        jid = r.json()["id"]
        self.assertTrue(jid.startswith("dnl-"), jid)
        return jid

    def status(self, jid):
        r = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        return r.json()

    def wait(self, jid, timeout=120):
        out = {}

        def done():
            st = self.status(jid)
            out["st"] = st
            return st.get("end_time", 0) != 0
        wait_until(done, timeout, interval=0.2, what="download " + jid)
        return out["st"]

    def check_obj(self, b, name, src):
        r = self.s.get(self.url + "/v1/objects/%s/%s" % (b, name), timeout=60)
        self.assertEqual(r.status_code, 200, "%s/%s: %s" % (b, name, r.text[:200]))
        self.assertEqual(hashlib.sha256(r.content).hexdigest(), hashlib.sha256(self.data[src]).hexdigest(), name)
        h = self.s.head(self.url + "/v1/objects/%s/%s" % (b, name), timeout=30, allow_redirects=True)
        self.assertEqual(h.status_code, 200)
        ck = h.headers.get("ais-checksum-value", "")
        self.assertTrue(ck, "%s/%s has no checksum: %s" % (b, name, dict(h.headers)))
        # the checksum a plain PUT of the source's bytes gets
        ref = "ref-" + src
        r = self.s.put(self.url + "/v1/objects/%s/%s" % (b, ref), data=self.data[src], timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        h2 = self.s.head(self.url + "/v1/objects/%s/%s" % (b, ref), timeout=30, allow_redirects=True)
        self.assertEqual((h.headers.get("ais-checksum-type"), ck),
                         (h2.headers.get("ais-checksum-type"), h2.headers.get("ais-checksum-value")), name)
        self.s.delete(self.url + "/v1/objects/%s/%s" % (b, ref), timeout=30)

    def names(self, b):
        r = self.s.get(self.url + "/v1/buckets/" + b, json={"action": "list", "value": {}}, timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        return sorted(e["name"] for e in (r.json().get("entries") or []))

    def test_single(self):
        self.mkb("dl1")
        jid = self.start({"type": "single", "bucket": {"name": "dl1", "provider": "ais"},
                          "link": self.base + "/big.bin"})
        st = self.wait(jid)
        self.assertFalse(st.get("err"), st)
        self.check_obj("dl1", "big.bin", "big.bin")
        jid = self.start({"type": "single", "bucket": {"name": "dl1"}, "link": self.base + "/shard-001.tar",
                          "object_name": "renamed.tar", "subdir": "d"})
        self.wait(jid)
        self.check_obj("dl1", "d/renamed.tar", "shard-001.tar")

    def test_range_of_50(self):
        self.mkb("dl2")
        jid = self.start({"type": "range", "bucket": {"name": "dl2"}, "subdir": "train",
                          "template": self.base + "/shard-{000..049}.tar", "timeout": "30s"})
        st = self.wait(jid)
        self.assertFalse(st.get("err"), st)
        self.assertEqual(self.names("dl2"), sorted("train/shard-%03d.tar" % i for i in range(50)))
        for i in range(50):
            self.check_obj("dl2", "train/shard-%03d.tar" % i, "shard-%03d.tar" % i)

    def test_list_and_404(self):
        self.mkb("dl3")
        missing = self.base + "/no-such-file.tar"
        jid = self.start({"type": "multi", "bucket": {"name": "dl3"},
                          "objects": [self.base + "/shard-010.tar", self.base + "/shard-011.tar", missing]})
        self.wait(jid)
        self.assertEqual(self.names("dl3"), ["shard-010.tar", "shard-011.tar"])
        self.check_obj("dl3", "shard-010.tar", "shard-010.tar")
        # the failure, with its URL, in a target's job
        r = self.s.get(self.url + "/v1/cluster", params={"what": "qryxstats"}, json={"ID": jid}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        errs, nobj = [], 0
        for snaps in r.json().values():
            for sn in snaps or []:
                errs += (sn.get("ext") or {}).get("errors") or []
                nobj += int(sn.get("stats", {}).get("out-objs", 0))
        self.assertEqual(nobj, 2, r.json())
        self.assertEqual([(e["obj"], e["url"], e["ecode"]) for e in errs], [("no-such-file.tar", missing, 404)],
                         errs)
        jid = self.start({"type": "multi", "bucket": {"name": "dl3"},
                          "objects": {"m/a.tar": self.base + "/shard-020.tar"}})
        self.wait(jid)
        self.check_obj("dl3", "m/a.tar", "shard-020.tar")

    def test_refused(self):
        self.mkb("dl4")
        for body in ({"type": "single", "bucket": {"name": "dl4"}, "link": "file:///etc/passwd"},
                     {"type": "single", "bucket": {"name": "dl4"}, "link": "ftp://127.0.0.1/x"},
                     {"type": "range", "bucket": {"name": "dl4"}, "template": "file:///etc/{a,b}"},
                     {"type": "multi", "bucket": {"name": "dl4"}, "objects": [self.base + "/x", "file:///etc/passwd"]},
                     {"type": "multi", "bucket": {"name": "dl4"}, "objects": {"p": "gopher://h/x"}},
                     {"type": "bogus", "bucket": {"name": "dl4"}}):
            r = self.s.post(self.url + "/v1/download", json=body, timeout=30)
            self.assertEqual(r.status_code, 400, (body, r.status_code, r.text))
            self.assertIn("download: ", r.text)
            self.assertTrue("http:// and https://" in r.text or "bogus" in r.text, r.text)
        r = self.s.post(self.url + "/v1/download", timeout=30,
                        json={"type": "single", "bucket": {"name": "no-such-bucket"}, "link": self.base + "/big.bin"})
        self.assertEqual(r.status_code, 404, r.text)
        self.assertEqual(self.names("dl4"), [])

    def test_abort(self):
        self.mkb("dl5")
        _Handler.delay = 1.0
        try:
            jid = self.start({"type": "range", "bucket": {"name": "dl5"},
                              "template": self.base + "/shard-{000..049}.tar"})
            time.sleep(1.5)
            p = subprocess.run([SHALE, "job", "stop", jid], capture_output=True, text=True, timeout=60,
                               env=dict(os.environ, AIS_ENDPOINT=self.url))
            self.assertEqual(p.returncode, 0, p.stderr)
            st = self.wait(jid, 60)
            self.assertTrue(st.get("aborted"), st)
        finally:
            _Handler.delay = 0.0
        n = len(self.names("dl5"))
        self.assertGreater(n, 0)
        self.assertLess(n, 50)

    def test_status_abort_remove(self):
        """AIStore's admin routes: GET /v1/download {"id"} (or ?id=) the job over every target, GET /v1/download
        the list, DELETE /v1/download/abort and /remove {"id"}"""
        self.mkb("dl7")
        missing = self.base + "/no-such.tar"
        jid = self.start({"type": "multi", "bucket": {"name": "dl7"}, "description": "two and a miss",
                          "objects": [self.base + "/shard-040.tar", self.base + "/shard-041.tar", missing]})
        self.wait(jid)
        r = self.s.get(self.url + "/v1/download", json={"id": jid}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        st = r.json()
        self.assertEqual((st["id"], st["description"], st["finished_cnt"], st["error_cnt"], st["total"],
                          st["aborted"], st["all_dispatched"]), (jid, "two and a miss", 2, 1, 3, False, True), st)
        self.assertNotEqual(st["finished_time"], "0001-01-01T00:00:00Z", st)
        self.assertEqual([e["name"] for e in st["download_errors"]], ["no-such.tar"], st)
        self.assertIn(missing, st["download_errors"][0]["error"])
        self.assertEqual(self.s.get(self.url + "/v1/download", params={"id": jid}, timeout=30).json()["finished_cnt"],
                         2)
        r = self.s.get(self.url + "/v1/download", json={"regex": "^two"}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual([j["id"] for j in r.json()], [jid], r.json())
        _Handler.delay = 0.5
        try:
            j2 = self.start({"type": "range", "bucket": {"name": "dl7"}, "template": self.base + "/shard-{000..049}.tar"})
            r = self.s.get(self.url + "/v1/download", json={"id": j2}, timeout=30)
            self.assertEqual(r.status_code, 200, r.text)
            self.assertEqual((r.json()["total"], r.json()["all_dispatched"], r.json()["finished_time"]),
                             (50, False, "0001-01-01T00:00:00Z"), r.json())
            self.assertIn(j2, [j["id"] for j in self.s.get(self.url + "/v1/download", timeout=30).json()])
            r = self.s.delete(self.url + "/v1/download/remove", json={"id": j2}, timeout=30)
            self.assertEqual(r.status_code, 409, r.text)
            self.assertIn("still running", r.text)
            r = self.s.delete(self.url + "/v1/download/abort", json={"id": j2}, timeout=30)
            self.assertEqual(r.status_code, 200, r.text)
            self.assertTrue(self.wait(j2, 60).get("aborted"))
        finally:
            _Handler.delay = 0.0
        self.assertTrue(self.s.get(self.url + "/v1/download", json={"id": j2}, timeout=30).json()["aborted"])
        r = self.s.delete(self.url + "/v1/download/remove", params={"id": j2}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        r = self.s.get(self.url + "/v1/download", json={"id": j2}, timeout=30)
        self.assertEqual(r.status_code, 404, r.text)
        self.assertIn('download job "%s" not found' % j2, r.json()["message"])
        # bad requests: 400 naming what is wrong
        for method, path, body, msg in (("DELETE", "/v1/download/abort", {}, "name the job"),
                                        ("DELETE", "/v1/download", {"id": jid}, "DELETE /v1/download/abort"),
                                        ("GET", "/v1/download", {"regex": "(("}, "invalid regex"),
                                        ("GET", "/v1/download", {"id": jid, "regex": "x"}, "cannot be given together")):
            r = self.s.request(method, self.url + path, json=body, timeout=30)
            self.assertEqual(r.status_code, 400, (path, r.text))
            self.assertIn(msg, r.json()["message"])
        self.assertEqual(self.s.delete(self.url + "/v1/download/abort", json={"id": "dnl-nosuch"},
                                       timeout=30).status_code, 404)

    def test_limit_connections(self):
        """limits.connections (--limit-connections N): at most N transfers at a time on each target"""
        self.mkb("dl8")
        _Handler.delay = 0.15
        _Handler.peak = 0
        try:
            p = self.shale("download", self.base + "/shard-{000..023}.tar", "ais://dl8", "--limit-connections", "1",
                           "--wait")
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("Downloaded 24 objects", p.stdout)
            self.assertLessEqual(_Handler.peak, 3)  # 3 targets, one at a time each
            _Handler.peak = 0
            jid = self.start({"type": "range", "bucket": {"name": "dl8"}, "subdir": "w",
                              "template": self.base + "/shard-{000..023}.tar", "limits": {"connections": 8}})
            self.wait(jid)
            self.assertGreater(_Handler.peak, 3)  # (the default is 4 a target; 8 asked)
        finally:
            _Handler.delay = 0.0
        self.assertEqual(len(self.names("dl8")), 48)
        for lim in ({"connections": -1}, {"connections": 1000}, {"connections": "2"}, {"bytes_per_hour": 1000}):
            r = self.s.post(self.url + "/v1/download", timeout=30, json={
                "type": "single", "bucket": {"name": "dl8"}, "link": self.base + "/big.bin", "limits": lim})
            self.assertEqual(r.status_code, 400, (lim, r.text))
            self.assertIn("limits", r.json()["message"])
        for bad in ("0", "-2", "x", "257"):
            p = self.shale("download", self.base + "/big.bin", "ais://dl8", "--limit-connections", bad)
            self.assertEqual(p.returncode, 1, bad)
            self.assertIn("--limit-connections", p.stderr)

    def test_backend(self):
        """type backend: a remote bucket's objects (under a prefix) into its cached copy; held ones skipped; with
        synchronize the changed ones fetched again and the gone ones dropped here; the CLI's bucket source"""
        self.mkb("dsrc")
        for n in ("p/a", "p/b", "p/c.txt", "q/d"):
            self.assertEqual(self.s.put(self.url + "/v1/objects/dsrc/" + n, data=b"v1 " + n.encode()).status_code, 200)
        p = self.shale("bucket", "create", "ais://dbk", "--props",
                       "backend_bck=s3://dsrc extra.aws.endpoint=%s/s3" % self.url)
        self.assertEqual(p.returncode, 0, p.stderr)

        def held(n):
            h = self.s.head(self.url + "/v1/objects/dbk/" + n, timeout=30, allow_redirects=True)
            return h.status_code == 200 and h.headers.get("Ais-Present") == "true"

        def dl_status(jid):
            return self.s.get(self.url + "/v1/download", json={"id": jid}, timeout=30).json()
        jid = self.start({"type": "backend", "bucket": {"name": "dbk", "provider": "ais"}, "prefix": "p/",
                          "suffix": "", "description": "prefix p"})
        self.assertFalse(self.wait(jid).get("err"))
        self.assertEqual([held(n) for n in ("p/a", "p/b", "p/c.txt", "q/d")], [True, True, True, False])
        st = dl_status(jid)
        self.assertEqual((st["total"], st["finished_cnt"], st["skipped_cnt"], st["error_cnt"]), (3, 3, 0, 0), st)
        # again: held already, skipped; a suffix filter
        jid = self.start({"type": "backend", "bucket": {"name": "dbk"}, "prefix": "p/", "suffix": ".txt"})
        self.wait(jid)
        st = dl_status(jid)
        self.assertEqual((st["total"], st["finished_cnt"], st["skipped_cnt"]), (1, 0, 1), st)
        # the remote changes: synchronize fetches p/a again and drops p/b here (the CLI: --sync)
        self.assertEqual(self.s.put(self.url + "/v1/objects/dsrc/p/a", data=b"v2 p/a").status_code, 200)
        self.assertEqual(self.s.delete(self.url + "/v1/objects/dsrc/p/b").status_code, 200)
        p = self.shale("download", "ais://dbk/p/", "--sync", "--wait")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertFalse(held("p/b"))
        self.assertTrue(held("p/c.txt"))
        self.assertEqual(self.s.get(self.url + "/v1/objects/dbk/p/a", timeout=30).content, b"v2 p/a")
        self.assertFalse(held("q/d"))
        # refused: a bucket without a remote, another destination, --sync with a URL
        r = self.s.post(self.url + "/v1/download", json={"type": "backend", "bucket": {"name": "dsrc"}}, timeout=30)
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("has no remote", r.json()["message"])
        p = self.shale("download", "ais://dbk", "ais://dsrc")
        self.assertEqual(p.returncode, 1)
        self.assertIn("DESTINATION", p.stderr)
        p = self.shale("download", self.base + "/big.bin", "ais://dsrc", "--sync")
        self.assertEqual(p.returncode, 1)
        self.assertIn("--sync", p.stderr)

    def shale(self, *args):
        return subprocess.run([SHALE] + list(args), capture_output=True, text=True, timeout=300,
                              env=dict(os.environ, AIS_ENDPOINT=self.url))

    def test_cli(self):
        self.mkb("dl6")
        p = self.shale("download", self.base + "/shard-{000..009}.tar", "ais://dl6/cli", "--wait",
                       "--timeout", "30s", "--description", "ten shards")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("Downloaded 10 objects", p.stdout)
        jid = p.stdout.split()[0]
        self.assertTrue(jid.startswith("dnl-"), p.stdout)
        for i in range(10):
            self.check_obj("dl6", "cli/shard-%03d.tar" % i, "shard-%03d.tar" % i)
        lst = os.path.join(self.src, "names.json")
        with open(lst, "w") as f:
            f.write('["shard-030.tar", "missing.tar"]')
        p = self.shale("download", self.base, "ais://dl6/ol", "--object-list", lst, "--wait")
        self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
        self.assertIn("Downloaded 1 object", p.stdout)
        self.assertIn("ol/missing.tar", p.stdout)
        self.assertIn(self.base + "/missing.tar", p.stdout)
        self.check_obj("dl6", "ol/shard-030.tar", "shard-030.tar")
        p = self.shale("show", "job", "download", "--all")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(jid, p.stdout)
        p = self.shale("download", "file:///etc/passwd", "ais://dl6")
        self.assertEqual(p.returncode, 1)
        self.assertIn("only http:// and https://", p.stderr)
        p = self.shale("download", self.base + "/x", "ais://dl6", "--timeout", "soon")
        self.assertEqual(p.returncode, 1)
        self.assertIn("--timeout", p.stderr)


if __name__ == "__main__":
    main()
