# SPDX-License-Identifier: MIT
"""The HTTP API driven by the real `curl` binary (as the README shows it):
bucket create, PUT -T, GET -L through easy URLs, Range, HEAD -I with Ais-*
headers, JSON listing, DELETE, JSON error bodies, a truncated upload; on a
standalone node and through a gateway's redirects."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

from harness import Cluster, NodeTest, main, wait_until

CURL = shutil.which("curl")


class CurlMixin:
    def curl(self, *args, timeout=60):
        """Run curl; returns (status, headers of the last response, body, exit code)."""
        if not CURL:
            raise AssertionError("the curl binary is required (apt-get install curl; ./configure --install-deps)")
        hf = os.path.join(self.ctmp, "hdrs")
        bf = os.path.join(self.ctmp, "body")
        for f in (hf, bf):
            if os.path.exists(f):
                os.unlink(f)
        p = subprocess.run([CURL, "-sS", "-D", hf, "-o", bf, "-w", "%{http_code}"] + list(args),
                           capture_output=True, timeout=timeout)
        hdrs = {}
        if os.path.exists(hf):
            with open(hf, "rb") as f:
                blocks = [b for b in f.read().decode("latin-1").split("\r\n\r\n") if b.strip()]
            for line in (blocks[-1].split("\r\n")[1:] if blocks else []):
                k, _, v = line.partition(":")
                hdrs[k.strip().lower()] = v.strip()
        body = b""
        if os.path.exists(bf):
            with open(bf, "rb") as f:
                body = f.read()
        code = p.stdout.decode().strip()
        return int(code) if code.isdigit() else 0, hdrs, body, p.returncode

    def file_of(self, name, data):
        path = os.path.join(self.ctmp, name)
        with open(path, "wb") as f:
            f.write(data)
        return path

    def flows(self, base, bucket):
        """The basic flows against base (a standalone node or a gateway)."""
        jh = ["-H", "Content-Type: application/json"]
        st, _, body, _ = self.curl("-X", "POST", base + "/v1/buckets/" + bucket, *jh, "-d", '{"action":"create-bck"}')
        self.assertEqual(st, 200, body)
        data = os.urandom(150000)
        src = self.file_of("src.bin", data)
        # PUT -T (through a gateway: -L follows the 307 and re-sends the file)
        st, h, body, _ = self.curl("-L", "-T", src, base + "/v1/objects/%s/dir/file.bin" % bucket)
        self.assertEqual(st, 200, body)
        self.assertEqual(h.get("ais-checksum-type"), "xxhash2")
        # GET -L via the easy URL
        st, h, body, _ = self.curl("-L", base + "/ais/%s/dir/file.bin" % bucket)
        self.assertEqual(st, 200, body[:200])
        self.assertEqual(body, data)
        self.assertEqual(h.get("content-type"), "application/octet-stream")
        # Range, both as curl's -r and as a header
        st, h, body, _ = self.curl("-L", "-r", "10-19", base + "/ais/%s/dir/file.bin" % bucket)
        self.assertEqual((st, body), (206, data[10:20]))
        self.assertEqual(h.get("content-range"), "bytes 10-19/%d" % len(data))
        st, _, body, _ = self.curl("-L", "-H", "Range: bytes=-7", base + "/v1/objects/%s/dir/file.bin" % bucket)
        self.assertEqual((st, body), (206, data[-7:]))
        st, h, _, _ = self.curl("-L", "-r", "999999-", base + "/v1/objects/%s/dir/file.bin" % bucket)
        self.assertEqual(st, 416)
        self.assertEqual(h.get("content-range"), "bytes */%d" % len(data))
        # HEAD (-I) with the Ais-* headers
        st, h, body, _ = self.curl("-L", "-I", base + "/v1/objects/%s/dir/file.bin" % bucket)
        self.assertEqual(st, 200)
        self.assertEqual(h.get("content-length"), str(len(data)))
        self.assertRegex(h.get("ais-checksum-value", ""), r"^[0-9a-f]{16}$")
        self.assertEqual(h.get("ais-version"), "1")
        self.assertTrue(int(h.get("ais-atime", "0")) > 0)
        self.assertEqual(h.get("ais-present"), "true")
        self.assertEqual(h.get("ais-name"), "dir/file.bin")
        self.assertRegex(h.get("ais-location", ""), r"^t\[\w+\]:/")
        st, h, _, _ = self.curl("-L", "-I", base + "/v1/objects/%s/dir/file.bin?props=cached" % bucket)
        self.assertEqual(st, 400)
        self.assertIn('invalid HEAD props \\"cached\\"', h.get("hdr-error", ""))
        # list as JSON, /v1 and easy URL
        self.curl("-L", "-T", self.file_of("small", b"s"), base + "/v1/objects/%s/dir/small" % bucket)
        for url in (base + "/v1/buckets/" + bucket, base + "/ais/" + bucket):
            st, h, body, _ = self.curl(url)
            self.assertEqual(st, 200, body)
            self.assertTrue(h.get("content-type", "").startswith("application/json"))
            j = json.loads(body)
            self.assertEqual([e["name"] for e in j["entries"]], ["dir/file.bin", "dir/small"])
            self.assertEqual([e["size"] for e in j["entries"]], [str(len(data)), "1"])
        # DELETE: a body that is not a plain delete deletes nothing; then a plain one
        url = base + "/v1/objects/%s/dir/file.bin" % bucket
        st, _, body, _ = self.curl("-L", "-X", "DELETE", url, *jh, "-d", '{"action":"frob"}')
        self.assertEqual(st, 400, body)
        self.assertEqual(self.curl("-L", "-I", url)[0], 200)
        st, _, body, _ = self.curl("-L", "-X", "DELETE", url)
        self.assertEqual(st, 200, body)
        # the error body on 404 is AIStore's JSON
        st, h, body, _ = self.curl("-L", base + "/ais/%s/dir/file.bin" % bucket)
        self.assertEqual(st, 404)
        self.assertTrue(h.get("content-type", "").startswith("application/json"))
        e = json.loads(body)
        self.assertEqual(e["status"], 404)
        self.assertIn("ais://%s/dir/file.bin does not exist" % bucket, e["message"])
        self.assertEqual(e["method"], "GET")
        self.assertRegex(e["node"], r"^t\[\w+\]$")
        st, _, body, _ = self.curl("-L", "-X", "DELETE", url)
        self.assertEqual(st, 404)
        self.assertEqual(json.loads(body)["message"], "ais://%s/dir/file.bin doesn't exist" % bucket)
        st, _, body, _ = self.curl(base + "/v1/buckets/nosuch")
        self.assertEqual(st, 404)
        self.assertEqual(json.loads(body)["message"], 'bucket "ais://nosuch" does not exist')


class TestCurlNode(CurlMixin, NodeTest):
    def setUp(self):
        self.ctmp = tempfile.mkdtemp(dir=self.tmp)

    def test_flows(self):
        self.flows(self.url, "cb")

    def test_truncated_upload(self):
        """A client that promises more bytes than it sends stores nothing."""
        st, _, body, _ = self.curl("-X", "POST", self.url + "/v1/buckets/tr", "-H", "Content-Type: application/json",
                                   "-d", '{"action":"create-bck"}')
        self.assertEqual(st, 200, body)
        src = self.file_of("500bytes", os.urandom(500))
        for name in ("new", "existing"):
            url = self.url + "/v1/objects/tr/" + name
            if name == "existing":
                self.assertEqual(self.curl("-T", self.file_of("orig", b"original"), url)[0], 200)
            st, _, _, rc = self.curl("-X", "PUT", "-H", "Content-Length: 1000", "--data-binary", "@" + src,
                                     "--max-time", "2", url, timeout=30)
            self.assertEqual(rc, 28, "curl should time out waiting for an answer")  # CURLE_OPERATION_TIMEDOUT
            want = (404, b"") if name == "new" else (200, b"original")

            def settled():
                st2, _, body2, _ = self.curl(url)
                return (st2, body2 if st2 == 200 else b"") == want
            wait_until(settled, 10, what="truncated PUT of %s left nothing" % name)
        wk = os.path.join(self.node.dir, "mp1", "@ais", "tr", "%wk")
        wait_until(lambda: not os.path.isdir(wk) or os.listdir(wk) == [], 10, what="work dir empty")

    def test_oversized_header(self):
        st, _, body, _ = self.curl("-H", "X-Big: " + "a" * 20000, self.url + "/v1/buckets")
        self.assertEqual(st, 431)
        self.assertIn("net.http.max_header_size", json.loads(body)["message"])


class TestCurlCluster(CurlMixin, unittest.TestCase):
    """Through a gateway: curl -L follows 301/307 to the owning target."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="shale-curl-")
        self.ctmp = tempfile.mkdtemp(dir=self.tmp)
        self.c = Cluster(self.tmp, proxies=1, targets=2).start()
        wait_until(lambda: len(self.c.smap()["tmap"]) == 2, 30, what="both targets in the Smap")

    def tearDown(self):
        self.c.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_flows(self):
        st, h, _, _ = self.curl("-X", "PUT", self.c.url + "/v1/objects/x/y", "--data-binary", "z")
        self.assertEqual(st, 404)  # no such bucket: the gateway answers itself
        self.flows(self.c.url, "cb")
        # without -L the gateway's redirect is what curl sees
        self.curl("-L", "-T", self.file_of("r", b"r"), self.c.url + "/v1/objects/cb/r")
        st, h, _, _ = self.curl(self.c.url + "/ais/cb/r")
        self.assertEqual(st, 301)
        self.assertIn("/v1/objects/cb/r?", h.get("location", ""))


if __name__ == "__main__":
    main()
