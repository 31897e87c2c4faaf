# SPDX-License-Identifier: MIT
"""AIStore's downloader (POST /v1/download) against a gateway and 3 targets, the sources served by python's
http.server on 127.0.0.1: one URL, a brace range of 50, a list (and a {name: URL} map); a 404 source counted
as an error with its URL; abort mid-way; every object's bytes and checksum equal the source's; file:// and
other schemes refused with 400; the CLI's `shale download`."""
import hashlib
import http.server
import os
import subprocess
import tempfile
import threading
import time

from harness import ClusterTest, SHALE, main, wait_until


class _Handler(http.server.SimpleHTTPRequestHandler):
    delay = 0.0

    def log_message(self, *a):
        pass

    def do_GET(self):
        if _Handler.delay:
            time.sleep(_Handler.delay)
        return super().do_GET()


class TestDownload(ClusterTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
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
