# SPDX-License-Identifier: MIT
"""Remote-backed buckets (backend_bck, the "aws" backend plugin backend_s3.so): a local cluster caches buckets of
a remote S3 store. The remote is a second Shale cluster's /s3 endpoint with SigV4 verification on (so the plugin's
signatures are really checked) and, when build/npm has it (configure --install-deps), s3rver from npm as an
independent S3 implementation. Cold GET fetches and keeps, warm GET serves local bytes (also with the remote
down), concurrent cold GETs of one object, HEAD of an object not held, write-through PUT, DELETE of both, evict,
validate_warm_get after an out-of-band change, wrong credentials (the error names the credential source), a remote
that is down (503 naming the remote, fast), and props that are refused."""
import concurrent.futures
import functools
import hashlib
import http.server
import io
import json
import os
import shutil
import signal
import subprocess
import tarfile
import tempfile
import threading
import time
import unittest

import boto3
import requests
from botocore.config import Config

from harness import BUILD, SRC, Cluster, Node, free_port_range, main, wait_until

AK, SK = "cache-node", "remote-secret-value-1"


def s3client(url, ak=AK, sk=SK):
    return boto3.client("s3", endpoint_url=url, aws_access_key_id=ak, aws_secret_access_key=sk,
                        region_name="us-east-1", config=Config(s3={"addressing_style": "path"},
                                                               retries={"max_attempts": 1}))


class BackendTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shale-backend-")
        cls.remote = Cluster(cls.tmp, proxies=1, targets=1, name="remote").start()
        cls.remote.cli("s3", "key", "add", AK, "--secret", SK)
        cls.remote.cli("s3", "verify", "on")
        cls.rs3 = s3client(cls.remote.url + "/s3")
        cls.rs3.create_bucket(Bucket="origin")
        creds = os.path.join(cls.tmp, "credentials")
        with open(creds, "w") as f:
            f.write("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n\n"
                    "[wrong]\naws_access_key_id = %s\naws_secret_access_key = not-the-secret\n" % (AK, SK, AK))
        cls.ep = cls.remote.url + "/s3"
        # the nodes take their keys from this file only (not from the machine's environment); s3:// buckets
        # without an extra.aws.endpoint of their own go to the remote cluster
        env = {"AWS_SHARED_CREDENTIALS_FILE": creds, "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
               "AWS_PROFILE": "", "S3_ENDPOINT": cls.ep}
        cls.c = Cluster(cls.tmp, proxies=1, targets=2, name="local", env=env).start()
        wait_until(lambda: len(cls.c.smap()["tmap"]) == 2, 30, what="2 targets")
        cls.url = cls.c.url
        cls.c.cli("bucket", "create", "ais://cache", "--props",
                  "backend_bck=s3://origin extra.aws.endpoint=%s" % cls.ep)
        cls.s = requests.Session()

    @classmethod
    def tearDownClass(cls):
        try:
            cls.c.stop()
        finally:  # (a sanitizer report raises from the first: the remote stops all the same)
            cls.remote.stop()
        if not os.environ.get("SHALE_KEEP_TMP"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def get(self, bucket, key, **kw):
        return self.s.get("%s/v1/objects/%s/%s" % (self.url, bucket, key), timeout=60, **kw)

    def head(self, bucket, key):
        return self.s.head("%s/v1/objects/%s/%s" % (self.url, bucket, key), timeout=60, allow_redirects=True)

    def cached(self, bucket, key):
        """held by the local cluster: a HEAD answers Ais-Present: true"""
        return self.head(bucket, key).headers.get("Ais-Present") == "true"

    def test_props(self):
        """backend_bck and extra.aws show in the bucket's props; a provider with no backend plugin, an endpoint that
        is not a URL and a provider without a name are refused and change nothing."""
        p = json.loads(self.s.head(self.url + "/v1/buckets/cache").headers["Ais-Bucket-Props"])
        self.assertEqual(p["backend_bck"], {"name": "origin", "provider": "aws", "namespace": {"uuid": "", "name": ""}})
        self.assertEqual(p["extra"]["aws"]["endpoint"], self.ep)
        for bad, why in (("backend_bck=gs://x", "no backend plugin"), ("extra.aws.endpoint=ftp://x", "http"),
                         ("backend_bck.name=", "without a bucket name")):
            r = self.c.cli("bucket", "props", "set", "ais://cache", bad, check=False)
            self.assertNotEqual(r.returncode, 0, bad)
            self.assertIn(why, r.stderr + r.stdout, bad)
        # on a bucket without a remote, validate_warm_get would do nothing: refused
        self.c.cli("bucket", "create", "ais://plainb")
        # so would extra.* settings the bucket's remote does not read
        for bad in ("extra.aws.multipart_size=5242880", "extra.http.original_url=http://x/"):
            r = self.c.cli("bucket", "props", "set", "ais://plainb", bad, check=False)
            self.assertNotEqual(r.returncode, 0, bad)
            self.assertIn("would do nothing", r.stderr + r.stdout, bad)
        r = self.c.cli("bucket", "props", "set", "ais://cache", "extra.http.original_url=http://x/", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("this one's is s3://", r.stderr + r.stdout)
        r = self.c.cli("bucket", "props", "set", "ais://plainb", "versioning.validate_warm_get=true", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("applies to buckets with a remote bucket behind them", r.stderr + r.stdout)
        p2 = json.loads(self.s.head(self.url + "/v1/buckets/cache").headers["Ais-Bucket-Props"])
        self.assertEqual(p2["backend_bck"], p["backend_bck"])
        self.assertEqual(p2["extra"], p["extra"])

    def remote_gets(self):
        """GET requests the remote cluster's target has answered"""
        m = requests.get(self.remote.node_url("t0") + "/metrics", timeout=10).text
        return sum(int(float(l.rsplit(" ", 1)[1])) for l in m.splitlines()
                   if not l.startswith("#") and "_get_count{" in l and "_err_" not in l)

    def test_blob_ranges(self):
        """A cold GET of an object bigger than backend.blob_chunk reads it in ranges, backend.blob_workers at a
        time (the remote answers one GET per chunk), streamed in order to its client; a range GET of such an
        object and the stored checksum are right; with blob_workers 1 it is one GET of the whole object."""
        mib = 1024 * 1024
        self.c.cli("config", "cluster", "backend.blob_chunk=1MiB")
        try:
            data = [os.urandom(5 * mib + 1234 * i) for i in range(3)]
            for i, d in enumerate(data):
                self.rs3.put_object(Bucket="origin", Key="blob/%d.bin" % i, Body=d)
            n0 = self.remote_gets()
            r = self.get("cache", "blob/0.bin")
            self.assertEqual(r.status_code, 200, r.content[:300])
            self.assertTrue(r.content == data[0])
            self.assertEqual(r.headers.get("Ais-Present"), "false")  # streamed as it was fetched
            self.assertEqual(self.remote_gets() - n0, 5)  # 5 MiB in 1 MiB ranges
            # the caching target counts it: one remote GET of the object, its bytes, as AIStore names them
            m = "".join(requests.get(self.c.node_url(t) + "/metrics", timeout=10).text for t in ("t0", "t1"))
            gets = [l for l in m.splitlines() if "_remote_get_count{" in l]
            self.assertTrue(gets and all('backend="aws"' in l for l in gets), gets)
            self.assertGreaterEqual(sum(int(l.rsplit(" ", 1)[1]) for l in gets), 1)
            self.assertTrue(any("_remote_get_bytes_total{" in l and int(l.rsplit(" ", 1)[1]) >= len(data[0])
                                for l in m.splitlines()), "remote_get_bytes_total")
            self.assertTrue(self.cached("cache", "blob/0.bin"))
            r = self.get("cache", "blob/0.bin", params={"validate-checksum": "true"})
            self.assertTrue(r.status_code == 200 and r.content == data[0], r.status_code)
            r = self.get("cache", "blob/1.bin", headers={"Range": "bytes=%d-%d" % (mib - 5, mib + 4)})
            self.assertEqual((r.status_code, r.content), (206, data[1][mib - 5:mib + 5]))
            self.assertTrue(self.get("cache", "blob/1.bin").content == data[1])
            self.c.cli("config", "cluster", "backend.blob_workers=1")
            n0 = self.remote_gets()
            self.assertTrue(self.get("cache", "blob/2.bin").content == data[2])
            self.assertEqual(self.remote_gets() - n0, 1)
            r = self.c.cli("config", "cluster", "backend.blob_workers=99", check=False)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("backend.blob_workers 1 to 32", r.stderr + r.stdout)
        finally:
            self.c.cli("config", "cluster", "backend.blob_chunk=8MiB", "backend.blob_workers=4")

    def test_ht_bucket(self):
        """An ht:// bucket (backend_http.so) reads the files of a web server (Python's http.server, which ignores
        Range): cold GET fetches and keeps (big files too, in ranges or not), HEAD asks the server, archive reads
        work; PUT, DELETE at the server and listing the server are refused (501) and change nothing; the bucket
        needs its URL, and an unknown ht:// bucket is a 404 that says how to add it."""
        web = os.path.join(self.tmp, "web")
        os.makedirs(os.path.join(web, "pub", "sub"))
        big = os.urandom(2 * 1024 * 1024 + 3)
        files = {"a.txt": b"served by http.server", "sub/b.bin": big}
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as t:
            ti = tarfile.TarInfo("x.txt")
            ti.size = 5
            t.addfile(ti, io.BytesIO(b"inner"))
        files["sh.tar"] = buf.getvalue()
        for k, v in files.items():
            with open(os.path.join(web, "pub", k), "wb") as f:
                f.write(v)
        handler = functools.partial(_QuietFiles, directory=web)
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", free_port_range(1)), handler)
        srv.daemon_threads = True
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        try:
            base = "http://127.0.0.1:%d/pub/" % srv.server_address[1]
            r = self.c.cli("bucket", "create", "ht://web", check=False)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("extra.http.original_url", r.stderr)
            self.c.cli("bucket", "create", "ht://web", "--props", "extra.http.original_url=" + base)
            q = {"provider": "ht"}
            h = self.s.head(self.url + "/v1/objects/web/sub/b.bin", params=q, allow_redirects=True, timeout=60)
            self.assertEqual((h.status_code, h.headers.get("Ais-Present")), (200, "false"))
            self.assertEqual(int(h.headers["Content-Length"]), len(big))
            self.assertEqual(self.c.cli("get", "ht://web/a.txt", "-").stdout, "served by http.server")
            self.c.cli("config", "cluster", "backend.blob_chunk=1MiB")
            try:
                r = self.s.get(self.url + "/v1/objects/web/sub/b.bin", params=q, timeout=60)
                self.assertTrue(r.status_code == 200 and r.content == big, r.status_code)
            finally:
                self.c.cli("config", "cluster", "backend.blob_chunk=8MiB")
            h = self.s.head(self.url + "/v1/objects/web/sub/b.bin", params=dict(q, props="custom"),
                            allow_redirects=True, timeout=60)
            self.assertEqual(h.headers.get("Ais-Present"), "true")
            self.assertIn("source=ht", h.headers.get("Ais-Custom-Md", ""))
            r = self.s.get(self.url + "/v1/objects/web/sh.tar", params=dict(q, archpath="x.txt"), timeout=60)
            self.assertEqual((r.status_code, r.content), (200, b"inner"))
            r = self.s.get(self.url + "/v1/objects/web/none.txt", params=q, timeout=60)
            self.assertEqual(r.status_code, 404, r.text)
            r = self.s.put(self.url + "/v1/objects/web/new.txt", params=q, data=b"no", timeout=60)
            self.assertEqual(r.status_code, 501, r.text)
            self.assertIn("read-only", r.text)
            self.assertFalse(os.path.exists(os.path.join(web, "pub", "new.txt")))
            self.assertNotEqual(self.s.head(self.url + "/v1/objects/web/new.txt", params=q, allow_redirects=True,
                                            timeout=60).headers.get("Ais-Present"), "true")
            r = self.s.delete(self.url + "/v1/objects/web/a.txt", params=q, timeout=60)
            self.assertEqual(r.status_code, 501, r.text)
            r = self.c.cli("ls", "ht://web", check=False)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("cannot be listed", r.stderr)
            out = self.c.cli("ls", "ht://web", "--cached", "-H").stdout
            self.assertEqual(sorted(l.split()[0] for l in out.splitlines() if l.strip()),
                             ["a.txt", "sh.tar", "sub/b.bin"])
            r = self.s.get(self.url + "/v1/objects/nosuchweb/a.txt", params=q, timeout=60)
            self.assertEqual(r.status_code, 404, r.text)
            self.assertIn("extra.http.original_url", r.text)
        finally:
            srv.shutdown()
            srv.server_close()

    def test_truncated_remote(self):
        """A remote that sends less than it promised: the GET fails (a cut answer, or an error naming the remote
        object) and nothing is cached, whether the object came in one stream or in ranges."""
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", free_port_range(1)), _Faulty)
        srv.daemon_threads = True
        th = threading.Thread(target=srv.serve_forever, daemon=True)
        th.start()
        try:
            ep = "http://127.0.0.1:%d" % srv.server_address[1]
            self.c.cli("bucket", "create", "ais://cut", "--props", "backend_bck=s3://faulty extra.aws.endpoint=%s" % ep)
            for workers, key in ((1, "one"), (4, "ranges")):
                self.c.cli("config", "cluster", "backend.blob_chunk=1MiB", "backend.blob_workers=%d" % workers)
                try:
                    r = self.get("cut", key, stream=True)
                    body = b""
                    try:
                        for piece in r.iter_content(65536):
                            body += piece
                    except requests.exceptions.RequestException:
                        pass
                    self.assertTrue(r.status_code != 200 or len(body) < _Faulty.SIZE, (key, r.status_code, len(body)))
                    if r.status_code != 200:
                        self.assertIn("s3://faulty/" + key, body.decode(errors="replace"))
                finally:
                    self.c.cli("config", "cluster", "backend.blob_chunk=8MiB", "backend.blob_workers=4")
                h = self.head("cut", key)
                self.assertEqual(h.headers.get("Ais-Present"), "false", key)  # the remote's word, nothing here
                kept = [d for d, _, fs in os.walk(self.c.dir) if fs and os.sep + os.path.join("@ais", "cut") in d]
                self.assertEqual(kept, [], key)
        finally:
            srv.shutdown()
            srv.server_close()

    def test_cold_then_warm(self):
        """A GET of an object only the remote has fetches it (ETag and source kept as custom metadata); the next
        GET is served from the local copy; a range of a cold object works; HEAD of an object not held answers
        what the remote says, with Ais-Present: false."""
        data = os.urandom(3 * 1024 * 1024 + 7)
        self.rs3.put_object(Bucket="origin", Key="cold/a.bin", Body=data)
        self.rs3.put_object(Bucket="origin", Key="cold/b.bin", Body=b"0123456789")
        h = self.head("cache", "cold/a.bin")
        self.assertEqual(h.status_code, 200, h.text)
        self.assertEqual(h.headers["Ais-Present"], "false")
        self.assertEqual(int(h.headers["Content-Length"]), len(data))
        self.assertFalse(self.cached("cache", "cold/a.bin"))
        r = self.get("cache", "cold/a.bin")
        self.assertEqual(r.status_code, 200, r.content[:300])
        self.assertEqual(r.content, data)
        self.assertTrue(self.cached("cache", "cold/a.bin"))
        md = self.s.head("%s/v1/objects/cache/cold/a.bin" % self.url, params={"props": "custom"},
                         allow_redirects=True)
        custom = md.headers.get("Ais-Custom-Md", "")
        self.assertIn("source=aws", custom)
        self.assertIn(hashlib.md5(data).hexdigest(), custom)
        r = self.get("cache", "cold/b.bin", headers={"Range": "bytes=2-4"})
        self.assertEqual((r.status_code, r.content), (206, b"234"))
        # warm: served here even after the remote copy is gone
        self.rs3.delete_object(Bucket="origin", Key="cold/a.bin")
        self.assertEqual(self.get("cache", "cold/a.bin").content, data)
        r = self.get("cache", "cold/missing.bin")
        self.assertEqual(r.status_code, 404, r.text)
        self.assertIn("s3://origin/cold/missing.bin", r.text)

    def test_list(self):
        """Listing a remote-backed bucket lists the remote's names (paged with the remote's tokens), each flagged
        cached when the cluster holds it; flag cached (shale ls --cached) lists only those; a non-recursive listing
        is refused (501) for now."""
        self.c.cli("bucket", "create", "ais://lst", "--props",
                   "backend_bck=s3://origin extra.aws.endpoint=%s" % self.ep)
        names = ["ls/%03d" % i for i in range(25)]
        for n in names:
            self.rs3.put_object(Bucket="origin", Key=n, Body=n.encode())
        for n in names[3:6]:
            self.assertEqual(self.get("lst", n).content, n.encode())
            self.assertTrue(self.cached("lst", n))  # (a HEAD waits for the fetch's commit)
        seen, token = [], ""
        for _ in range(20):
            r = self.s.get(self.url + "/v1/buckets/lst", timeout=60,
                           json={"action": "list", "value": {"prefix": "ls/", "pagesize": 10, "props": "name,size",
                                                             "continuation_token": token}})
            self.assertEqual(r.status_code, 200, r.text)
            page = r.json()
            for e in page["entries"]:
                seen.append((e["name"], e.get("size"), bool(e.get("flags", 0) & 64)))
            token = page.get("continuation_token") or ""
            if not token:
                break
        self.assertEqual([n for n, _, _ in seen], names)
        self.assertEqual([n for n, _, c in seen if c], names[3:6])
        self.assertEqual({int(sz) for _, sz, _ in seen}, {6}, seen[:3])  # (sizes travel as strings)
        out = self.c.cli("ls", "ais://lst", "--cached").stdout
        self.assertEqual(sorted(ln.split()[0] for ln in out.splitlines()[1:] if ln.startswith("ls/")), names[3:6])
        out = self.c.cli("ls", "ais://lst", "--props", "name,cached").stdout
        self.assertEqual(len([ln for ln in out.splitlines() if ln.startswith("ls/")]), 25)
        r = self.s.get(self.url + "/v1/buckets/lst", timeout=60,
                       json={"action": "list", "value": {"prefix": "ls/", "flags": "2048"}})
        self.assertEqual(r.status_code, 501, r.text)

    def test_concurrent_cold_gets(self):
        """Eight GETs of one uncached 16 MiB object at once all get its bytes."""
        data = os.urandom(16 * 1024 * 1024)
        self.rs3.put_object(Bucket="origin", Key="conc.bin", Body=data)
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            outs = list(ex.map(lambda _: requests.get(self.url + "/v1/objects/cache/conc.bin", timeout=120),
                               range(8)))
        for r in outs:
            self.assertEqual(r.status_code, 200, r.content[:300])  # (r.text would guess the charset of 16 MiB)
            self.assertEqual(hashlib.sha256(r.content).digest(), hashlib.sha256(data).digest())
        self.assertTrue(self.cached("cache", "conc.bin"))

    def test_write_through_delete_evict(self):
        """PUT goes to the remote and is kept here; DELETE removes both; evict-listrange removes only the local
        copy, and the next GET fetches it again."""
        r = self.s.put(self.url + "/v1/objects/cache/wt/x.txt", data=b"written through", timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.rs3.get_object(Bucket="origin", Key="wt/x.txt")["Body"].read(), b"written through")
        self.assertTrue(self.cached("cache", "wt/x.txt"))
        r = self.s.delete(self.url + "/v1/objects/cache/wt/x.txt", timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        with self.assertRaises(Exception):
            self.rs3.head_object(Bucket="origin", Key="wt/x.txt")
        self.assertEqual(self.get("cache", "wt/x.txt").status_code, 404)
        self.rs3.put_object(Bucket="origin", Key="wt/e.txt", Body=b"evict me")
        self.assertEqual(self.get("cache", "wt/e.txt").content, b"evict me")
        r = self.s.delete(self.url + "/v1/objects/cache/wt/e.txt", json={"action": "evict-listrange"}, timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertFalse(self.cached("cache", "wt/e.txt"))
        self.assertEqual(self.rs3.get_object(Bucket="origin", Key="wt/e.txt")["Body"].read(), b"evict me")
        self.assertEqual(self.get("cache", "wt/e.txt").content, b"evict me")
        self.assertTrue(self.cached("cache", "wt/e.txt"))

    def test_validate_warm_get(self):
        """With versioning.validate_warm_get, a GET compares the remote's ETag: an object changed there out of
        band is fetched again; without it the cached bytes are served; ?latest-ver=true asks once."""
        self.c.cli("bucket", "create", "ais://vwg", "--props",
                   "backend_bck=s3://origin extra.aws.endpoint=%s" % self.ep)
        self.rs3.put_object(Bucket="origin", Key="v.txt", Body=b"version one")
        self.assertEqual(self.get("vwg", "v.txt").content, b"version one")
        self.rs3.put_object(Bucket="origin", Key="v.txt", Body=b"version two!")
        self.assertEqual(self.get("vwg", "v.txt").content, b"version one")  # not validated: the copy here
        self.assertEqual(self.get("vwg", "v.txt", params={"latest-ver": "true"}).content, b"version two!")
        self.c.cli("bucket", "props", "set", "ais://vwg", "versioning.validate_warm_get=true")
        self.rs3.put_object(Bucket="origin", Key="v.txt", Body=b"version three")
        self.assertEqual(self.get("vwg", "v.txt").content, b"version three")
        self.rs3.delete_object(Bucket="origin", Key="v.txt")
        self.assertEqual(self.get("vwg", "v.txt").status_code, 404)

    def test_wrong_credentials(self):
        """A bucket whose extra.aws.profile holds a wrong secret: 403, and the error names the profile and file
        used; nothing is cached and a PUT stores nothing."""
        self.c.cli("bucket", "create", "ais://badcreds", "--props",
                   "backend_bck=s3://origin extra.aws.endpoint=%s extra.aws.profile=wrong" % self.ep)
        self.rs3.put_object(Bucket="origin", Key="cred.txt", Body=b"secret stuff")
        r = self.get("badcreds", "cred.txt")
        self.assertEqual(r.status_code, 403, r.text)
        self.assertIn("SignatureDoesNotMatch", r.text)
        self.assertIn('profile \\"wrong\\"', r.text)
        r = self.s.put(self.url + "/v1/objects/badcreds/new.txt", data=b"x", timeout=60)
        self.assertEqual(r.status_code, 403, r.text)
        self.assertFalse(self.cached("badcreds", "new.txt"))

    @unittest.skipUnless(os.access(os.path.join(BUILD, "npm", "node_modules", ".bin", "s3rver"), os.X_OK),
                         "s3rver not installed in build/npm (./configure --install-deps installs it with npm)")
    def test_s3rver_remote(self):
        """s3rver (an independent S3 implementation, from npm) as the remote: cold GET, write-through PUT and
        DELETE."""
        port = free_port_range(1)
        d = os.path.join(self.tmp, "s3rver")
        os.makedirs(d)
        p = subprocess.Popen(["node", "--openssl-legacy-provider", os.path.join(BUILD, "npm", "node_modules", ".bin",
                                                                                 "s3rver"),
                              "-d", d, "-a", "127.0.0.1", "-p", str(port), "--silent", "--configure-bucket", "sv"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            ep = "http://127.0.0.1:%d" % port
            wait_until(lambda: _up(ep), 30, what="s3rver")
            sv = s3client(ep, "S3RVER", "S3RVER")
            sv.put_object(Bucket="sv", Key="dir/one.txt", Body=b"from s3rver")
            creds = os.path.join(self.tmp, "credentials")
            with open(creds, "a") as f:
                f.write("\n[s3rver]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n")
            self.c.cli("bucket", "create", "ais://svc", "--props",
                       "backend_bck=s3://sv extra.aws.endpoint=%s extra.aws.profile=s3rver" % ep)
            self.assertEqual(self.get("svc", "dir/one.txt").content, b"from s3rver")
            r = self.s.put(self.url + "/v1/objects/svc/dir/two.txt", data=b"to s3rver", timeout=60)
            self.assertEqual(r.status_code, 200, r.text)
            self.assertEqual(sv.get_object(Bucket="sv", Key="dir/two.txt")["Body"].read(), b"to s3rver")
            self.assertEqual(self.s.delete(self.url + "/v1/objects/svc/dir/two.txt", timeout=60).status_code, 200)
            # a multipart upload to it, parts of 5 MiB (s3rver's ETag of it is a plain MD5: the bytes say it worked)
            self.c.cli("bucket", "props", "set", "ais://svc", "extra.aws.multipart_size=5242880")
            big = os.urandom(11 * 1024 * 1024)
            r = self.s.put(self.url + "/v1/objects/svc/dir/big.bin", data=big, timeout=120)
            self.assertEqual(r.status_code, 200, r.text)
            self.assertTrue(sv.get_object(Bucket="sv", Key="dir/big.bin")["Body"].read() == big)
            with self.assertRaises(Exception):
                sv.head_object(Bucket="sv", Key="dir/two.txt")
        finally:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def job_done(self, jid, timeout=60):
        def done():
            st = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid})
            return st.status_code == 200 and st.json()["end_time"] != 0 and st.json()
        return wait_until(done, timeout, interval=0.2, what="job %s" % jid)

    def test_prefetch_and_evict_jobs(self):
        """prefetch-listrange fetches what is not held (a template, a prefix that lists the remote), split over
        the targets; evict-listrange drops the copies here and leaves the remote as it was; both are refused on
        a bucket without a remote."""
        self.c.cli("bucket", "create", "ais://pf", "--props",
                   "backend_bck=s3://origin extra.aws.endpoint=%s" % self.ep)
        names = ["pf/a%02d" % i for i in range(20)] + ["pf/b/%02d" % i for i in range(15)]
        for n in names:
            self.rs3.put_object(Bucket="origin", Key=n, Body=n.encode() * 10)
        r = self.s.post(self.url + "/v1/buckets/pf", json={"action": "prefetch-listrange",
                                                           "value": {"template": "pf/a{00..19}"}}, timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        st = self.job_done(r.text)
        self.assertEqual(st["err"], "", st)
        self.assertTrue(all(self.cached("pf", n) for n in names[:20]))
        self.assertFalse(any(self.cached("pf", n) for n in names[20:]))
        r = self.s.post(self.url + "/v1/buckets/pf", json={"action": "prefetch-listrange",
                                                           "value": {"template": "pf/b/"}}, timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.job_done(r.text)["err"], "")
        self.assertTrue(all(self.cached("pf", n) for n in names))
        r = self.s.delete(self.url + "/v1/buckets/pf", json={"action": "evict-listrange",
                                                             "value": {"template": "pf/"}}, timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.job_done(r.text)["err"], "")
        self.assertFalse(any(self.cached("pf", n) for n in names))
        self.assertEqual(self.rs3.get_object(Bucket="origin", Key=names[0])["Body"].read(), names[0].encode() * 10)
        self.assertEqual(self.get("pf", names[0]).content, names[0].encode() * 10)  # cold again
        # a name the remote does not have: the job reports it (coer skips it)
        r = self.s.post(self.url + "/v1/buckets/pf", json={"action": "prefetch-listrange",
                                                           "value": {"objnames": ["pf/none"]}}, timeout=60)
        self.assertIn("did not exist", self.job_done(r.text)["err"])
        self.c.cli("bucket", "create", "ais://nopf")
        r = self.s.post(self.url + "/v1/buckets/nopf", json={"action": "prefetch-listrange", "value": {}}, timeout=60)
        self.assertEqual(r.status_code, 400, r.text)
        # latest-ver: a held copy the remote has changed since is fetched again (without it, it stays)
        self.assertEqual(self.get("pf", names[1]).content, names[1].encode() * 10)
        self.assertTrue(self.cached("pf", names[1]))
        self.rs3.put_object(Bucket="origin", Key=names[1], Body=b"changed at the remote")
        r = self.s.post(self.url + "/v1/buckets/pf", json={"action": "prefetch-listrange",
                                                           "value": {"objnames": [names[1]]}}, timeout=60)
        self.assertEqual(self.job_done(r.text)["err"], "")
        self.assertEqual(self.get("pf", names[1]).content, names[1].encode() * 10)
        r = self.s.post(self.url + "/v1/buckets/pf", json={"action": "prefetch-listrange",
                                                           "value": {"objnames": [names[1]], "latest-ver": True}},
                        timeout=60)
        self.assertEqual(self.job_done(r.text)["err"], "")
        self.assertEqual(self.get("pf", names[1]).content, b"changed at the remote")
        r = self.s.delete(self.url + "/v1/buckets/pf", json={"action": "evict-listrange",
                                                             "value": {"template": "pf/", "latest-ver": True}},
                          timeout=60)
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("prefetch-listrange only", r.text)

    def cached_aws(self, bucket, key):
        r = self.s.head("%s/v1/objects/%s/%s" % (self.url, bucket, key), params={"provider": "aws"}, timeout=60,
                        allow_redirects=True)
        return r.headers.get("Ais-Present") == "true"

    def aws_buckets(self):
        r = self.s.get(self.url + "/v1/buckets", params={"provider": "aws"}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        return sorted(b["name"] for b in r.json())

    def test_s3_bucket_first_access_by_jobs(self):
        """A prefetch-listrange over HTTP and a get-batch naming s3:// buckets the cluster has not seen add them
        (as a native GET would) and do their work."""
        for bk in ("jfa1", "jfa2"):
            self.rs3.create_bucket(Bucket=bk)
            for i in range(3):
                self.rs3.put_object(Bucket=bk, Key="j/%d" % i, Body=b"%s %d" % (bk.encode(), i))
        r = self.s.post(self.url + "/v1/buckets/jfa1", params={"provider": "aws"}, timeout=60,
                        json={"action": "prefetch-listrange", "value": {"template": "j/"}})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.job_done(r.text)["err"], "")
        self.assertTrue(all(self.cached_aws("jfa1", "j/%d" % i) for i in range(3)))
        r = self.s.get(self.url + "/v1/ml/moss/jfa2", params={"provider": "aws"}, timeout=120,
                       data=json.dumps({"in": [{"objname": "j/%d" % i} for i in range(3)], "strm": True}),
                       headers={"Content-Type": "application/json"})
        self.assertEqual(r.status_code, 200, r.text[:500])
        with tarfile.open(fileobj=io.BytesIO(r.content), mode="r:") as t:
            self.assertEqual([t.extractfile(m).read() for m in t.getmembers()], [b"jfa2 %d" % i for i in range(3)])
        self.assertIn("jfa2", self.aws_buckets())

    def test_s3_bucket_get_batch(self):
        """get-batch items of a remote bucket that the cluster does not hold are fetched (once per shard) on the
        targets that own them and served in the batch (AIStore answers them __404__); an object the remote lacks
        fails the batch naming it, or with coer is a __404__ entry."""
        self.rs3.create_bucket(Bucket="gbr")
        objs = {"o/%d.bin" % i: os.urandom(3000 + 17 * i) for i in range(8)}
        for k, v in objs.items():
            self.rs3.put_object(Bucket="gbr", Key=k, Body=v)
        buf = io.BytesIO()
        members = [("m%d.txt" % i, b"member %d" % i) for i in range(4)]
        with tarfile.open(fileobj=buf, mode="w") as t:
            for n, body in members:
                ti = tarfile.TarInfo(n)
                ti.size = len(body)
                t.addfile(ti, io.BytesIO(body))
        self.rs3.put_object(Bucket="gbr", Key="sh.tar", Body=buf.getvalue())
        self.c.cli("bucket", "create", "s3://gbr")
        items = [{"objname": k} for k in objs] + [{"objname": "sh.tar", "archpath": n} for n, _ in members[:3]]
        r = self.s.get(self.url + "/v1/ml/moss/gbr", params={"provider": "aws"}, timeout=120,
                       data=json.dumps({"in": items, "strm": True}), headers={"Content-Type": "application/json"})
        self.assertEqual(r.status_code, 200, r.text[:500])
        with tarfile.open(fileobj=io.BytesIO(r.content), mode="r:") as t:
            got = [(m.name, t.extractfile(m).read()) for m in t.getmembers()]
        want = [("gbr/" + k, v) for k, v in objs.items()] + [("gbr/sh.tar/" + n, b) for n, b in members[:3]]
        self.assertEqual(got, want)
        self.assertTrue(all(self.cached_aws("gbr", k) for k in list(objs) + ["sh.tar"]))
        bad = [{"objname": "o/0.bin"}, {"objname": "o/none.bin"}]
        r = self.s.get(self.url + "/v1/ml/moss/gbr", params={"provider": "aws"}, timeout=120,
                       data=json.dumps({"in": bad, "strm": True}), headers={"Content-Type": "application/json"})
        self.assertEqual(r.status_code, 404, r.text[:500])
        self.assertIn("o/none.bin", r.text)
        r = self.s.get(self.url + "/v1/ml/moss/gbr", params={"provider": "aws"}, timeout=120,
                       data=json.dumps({"in": bad, "strm": True, "coer": True}),
                       headers={"Content-Type": "application/json"})
        self.assertEqual(r.status_code, 200, r.text[:500])
        with tarfile.open(fileobj=io.BytesIO(r.content), mode="r:") as t:
            self.assertEqual([m.name for m in t.getmembers()], ["gbr/o/0.bin", "__404__/gbr/o/none.bin"])

    def test_s3_bucket_lru(self):
        """An s3:// bucket starts with lru.enabled (its copies are a cache); above space.highwm the lru job drops
        its least recently used copies, not the remote's objects, which read again (cold); an ais:// bucket in
        the same job keeps its objects (lru.enabled false)."""
        self.rs3.create_bucket(Bucket="lrub")
        for i in range(4):
            self.rs3.put_object(Bucket="lrub", Key="l/%d" % i, Body=b"lru %d" % i)
            r = self.s.get(self.url + "/v1/objects/lrub/l/%d" % i, params={"provider": "aws"}, timeout=60)
            self.assertEqual(r.content, b"lru %d" % i)
        self.c.cli("bucket", "create", "ais://keeplru")
        self.s.put(self.url + "/v1/objects/keeplru/k", data=b"kept", timeout=30).raise_for_status()
        p = json.loads(self.s.head(self.url + "/v1/buckets/lrub", params={"provider": "aws"},
                                   timeout=30).headers["Ais-Bucket-Props"])
        self.assertTrue(p["lru"]["enabled"])
        self.c.cli("bucket", "props", "set", "s3://lrub", "lru.dont_evict_time=1s")
        self.assertTrue(all(self.cached_aws("lrub", "l/%d" % i) for i in range(4)))
        time.sleep(1.5)
        self.c.cli("config", "cluster", "space.lowwm=1", "space.highwm=2")
        try:
            self.c.cli("job", "start", "lru", "s3://lrub", "ais://keeplru", "--wait", timeout=120)
        finally:
            self.c.cli("config", "cluster", "space.lowwm=75", "space.highwm=90")
        self.assertFalse(any(self.cached_aws("lrub", "l/%d" % i) for i in range(4)))
        self.assertEqual(self.get("keeplru", "k").content, b"kept")
        self.assertEqual(len(self.rs3.list_objects_v2(Bucket="lrub")["Contents"]), 4)
        r = self.s.get(self.url + "/v1/objects/lrub/l/2", params={"provider": "aws"}, timeout=60)
        self.assertEqual((r.status_code, r.content), (200, b"lru 2"))

    def test_s3_bucket_first_access(self):
        """s3://fresh is a bucket of its own (provider aws): the first GET through the gateway adds it to the
        cluster (no create), objects fetched are kept under @aws/ on the targets, apart from an ais:// bucket of
        the same name; ls lists the remote's names (--cached: only those held); PUT and DELETE go through to the
        remote; a remote bucket that does not exist is a 404 naming it and is not added."""
        self.rs3.create_bucket(Bucket="fresh")
        self.rs3.put_object(Bucket="fresh", Key="own/a.txt", Body=b"aaa")
        self.rs3.put_object(Bucket="fresh", Key="own/b.txt", Body=b"bbbb")
        self.assertNotIn("fresh", self.aws_buckets())
        r = self.s.get(self.url + "/v1/objects/fresh/own/a.txt", params={"provider": "aws"}, timeout=60)
        self.assertEqual((r.status_code, r.content), (200, b"aaa"), r.content[:300])
        self.assertIn("fresh", self.aws_buckets())
        h = self.s.head(self.url + "/v1/buckets/fresh", params={"provider": "aws"}, timeout=30)
        self.assertEqual(json.loads(h.headers["Ais-Bucket-Props"])["provider"], "aws")
        self.assertTrue(self.cached_aws("fresh", "own/a.txt"))  # (a HEAD waits for the fetch's commit)

        def kept():  # the metadata commit comes before the rename: the file may land a moment after the HEAD
            return [os.path.join(dp, f) for dp, _, fs in os.walk(self.c.dir) for f in fs
                    if os.sep + os.path.join("@aws", "fresh", "%ob", "own") in dp]
        wait_until(kept, 10, what="the fetched object's file under @aws/fresh/%ob")
        self.assertEqual(len(kept()), 1, kept())
        # an ais:// bucket of the same name is another bucket
        self.c.cli("bucket", "create", "ais://fresh")
        self.assertEqual(self.get("fresh", "own/a.txt").status_code, 404)
        # ls: the remote's names, and --cached: the ones held here
        out = self.c.cli("ls", "s3://fresh", "--prefix", "own/", "-H").stdout
        self.assertIn("own/a.txt", out)
        self.assertIn("own/b.txt", out)
        out = self.c.cli("ls", "s3://fresh", "--prefix", "own/", "--cached", "-H").stdout
        self.assertIn("own/a.txt", out)
        self.assertNotIn("own/b.txt", out)
        self.assertIn("s3://fresh", self.c.cli("ls").stdout)
        # get, put, rmo through the CLI
        self.assertEqual(self.c.cli("get", "s3://fresh/own/b.txt", "-").stdout, "bbbb")
        src = os.path.join(self.tmp, "c.txt")
        with open(src, "w") as f:
            f.write("written through")
        self.c.cli("put", src, "s3://fresh/own/c.txt")
        self.assertEqual(self.rs3.get_object(Bucket="fresh", Key="own/c.txt")["Body"].read(), b"written through")
        self.c.cli("rmo", "s3://fresh/own/c.txt")
        with self.assertRaises(Exception):
            self.rs3.head_object(Bucket="fresh", Key="own/c.txt")
        # a first access that is a PUT (a body behind it, routed again once the bucket is added)
        self.rs3.create_bucket(Bucket="fresh2")
        r = self.s.put(self.url + "/v1/objects/fresh2/p.txt", params={"provider": "aws"}, data=b"put first",
                       timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.rs3.get_object(Bucket="fresh2", Key="p.txt")["Body"].read(), b"put first")
        # a bucket the remote does not have
        r = self.s.get(self.url + "/v1/objects/nosuch/x", params={"provider": "aws"}, timeout=60)
        self.assertEqual(r.status_code, 404, r.text)
        self.assertIn("s3://nosuch", r.text)
        self.assertNotIn("nosuch", self.aws_buckets())

    def test_virtual_hosted_addressing(self):
        """extra.aws.addressing=virtual sends BUCKET.HOST/KEY (AWS's default style): the remote here answers S3
        only for Host BUCKET.localhost (its s3.vhost_domain), which libcurl resolves to loopback; path style
        against that endpoint fails; a style that is neither is refused."""
        self.remote.cli("config", "cluster", "s3.vhost_domain=localhost")
        try:
            self.rs3.put_object(Bucket="origin", Key="vh/a.txt", Body=b"virtual host")
            ep = self.remote.url.replace("127.0.0.1", "localhost")
            self.c.cli("bucket", "create", "ais://vhost", "--props",
                       "backend_bck=s3://origin extra.aws.endpoint=%s extra.aws.addressing=virtual" % ep)
            r = self.get("vhost", "vh/a.txt")
            self.assertEqual((r.status_code, r.content), (200, b"virtual host"), r.content[:300])
            self.c.cli("bucket", "create", "ais://vpath", "--props",
                       "backend_bck=s3://origin extra.aws.endpoint=%s extra.aws.addressing=path" % ep)
            self.assertGreaterEqual(self.get("vpath", "vh/a.txt").status_code, 400)
            r = self.c.cli("bucket", "props", "set", "ais://vpath", "extra.aws.addressing=dns", check=False)
            self.assertNotEqual(r.returncode, 0)
            self.assertIn("use path", r.stderr + r.stdout)
        finally:
            self.remote.cli("config", "cluster", "s3.vhost_domain=")

    def test_multipart_write_through(self):
        """A PUT bigger than extra.aws.multipart_size goes to the remote as a multipart upload (its ETag is the
        remote's "-N" one, on the local copy too) with the same bytes; a multipart_size S3 could not take is
        refused."""
        self.c.cli("bucket", "create", "ais://mpw", "--props",
                   "backend_bck=s3://origin extra.aws.endpoint=%s extra.aws.multipart_size=5242880" % self.ep)
        data = os.urandom(12 * 1024 * 1024 + 99)
        r = self.s.put(self.url + "/v1/objects/mpw/mp/big.bin", data=data, timeout=120)
        self.assertEqual(r.status_code, 200, r.text)
        h = self.rs3.head_object(Bucket="origin", Key="mp/big.bin")
        self.assertTrue(h["ETag"].strip('"').endswith("-3"), h["ETag"])
        self.assertEqual(self.rs3.get_object(Bucket="origin", Key="mp/big.bin")["Body"].read(), data)
        md = self.s.head(self.url + "/v1/objects/mpw/mp/big.bin", params={"props": "custom"}, allow_redirects=True)
        self.assertIn(h["ETag"].strip('"'), md.headers.get("Ais-Custom-Md", ""))
        self.assertEqual(self.get("mpw", "mp/big.bin").content, data)
        # no parts left behind at the remote
        self.assertEqual(self.rs3.list_multipart_uploads(Bucket="origin").get("Uploads", []), [])
        r = self.c.cli("bucket", "props", "set", "ais://mpw", "extra.aws.multipart_size=1000", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("5 MiB", r.stderr + r.stdout)

    def test_remote_ais_cluster(self):
        """A remote AIStore-compatible cluster (here a second Shale, over its native API) attached under an alias
        (cluster remote-attach, show remote-cluster, GET /v1/cluster?what=remote) backs an ais:// bucket with
        backend_bck=ais://@ALIAS/NAME: cold GET (redirects followed), listing with the cached flag, write-through
        PUT and DELETE land in the remote's native bucket; an unknown alias is refused; after a detach cached
        objects still serve and uncached ones fail naming what to do."""
        rs = requests.Session()
        self.remote.cli("bucket", "create", "ais://natb")
        objs = {"n/%d" % i: os.urandom(1000 + i) for i in range(5)}
        for k, v in objs.items():
            rs.put("%s/v1/objects/natb/%s" % (self.remote.url, k), data=v, timeout=30).raise_for_status()
        self.c.cli("cluster", "remote-attach", "rem=" + self.remote.url)
        out = self.c.cli("show", "remote-cluster", "-H").stdout
        self.assertIn("rem", out)
        self.assertIn(self.remote.url, out)
        self.assertIn("yes", out)
        ra = self.s.get(self.url + "/v1/cluster", params={"what": "remote"}, timeout=30).json()
        self.assertEqual([c["alias"] for c in ra["a"]], ["rem"])
        self.assertEqual(ra["a"][0]["uuid"], self.remote.smap()["uuid"])
        r = self.c.cli("cluster", "remote-attach", "rem=http://127.0.0.1:9", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("already attached", r.stderr)
        r = self.c.cli("cluster", "remote-detach", "nosuch", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("not attached", r.stderr)
        r = self.c.cli("bucket", "create", "ais://viarem", "--props", "backend_bck=ais://@nosuch/natb", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("remote-attach", r.stderr)
        self.c.cli("bucket", "create", "ais://viarem", "--props", "backend_bck=ais://@rem/natb")
        p = json.loads(self.s.head(self.url + "/v1/buckets/viarem", timeout=30).headers["Ais-Bucket-Props"])
        self.assertEqual(p["backend_bck"]["namespace"]["uuid"], "rem")
        self.assertEqual(self.get("viarem", "n/1").content, objs["n/1"])
        self.assertTrue(self.cached("viarem", "n/1"))
        r = self.s.get(self.url + "/v1/buckets/viarem", timeout=60,
                       json={"action": "list", "value": {"prefix": "n/", "props": "name,size"}})
        self.assertEqual(r.status_code, 200, r.text)
        ents = {e["name"]: e for e in r.json()["entries"]}
        self.assertEqual(sorted(ents), sorted(objs))
        self.assertTrue(ents["n/1"].get("flags", 0) & 64)
        self.assertFalse(ents["n/2"].get("flags", 0) & 64)
        r = self.s.put(self.url + "/v1/objects/viarem/n/new", data=b"written through to a cluster", timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(rs.get(self.remote.url + "/v1/objects/natb/n/new", timeout=30).content,
                         b"written through to a cluster")
        self.assertEqual(self.s.delete(self.url + "/v1/objects/viarem/n/0", timeout=60).status_code, 200)
        self.assertEqual(rs.get(self.remote.url + "/v1/objects/natb/n/0", timeout=30).status_code, 404)
        self.c.cli("cluster", "remote-detach", "rem")
        self.assertEqual(self.get("viarem", "n/1").content, objs["n/1"])  # cached: still served
        r = self.get("viarem", "n/3")
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("remote-attach rem=", r.text)
        self.c.cli("cluster", "remote-attach", "rem=" + self.remote.url)
        self.assertEqual(self.get("viarem", "n/3").content, objs["n/3"])

    def test_s3_bucket_archive_and_etl(self):
        """An archive read (archpath) and an inline transform (etl_name) of objects only the remote has fetch them
        first, then answer as for any object (and the objects stay cached)."""
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as t:
            for n, body in (("s1.cls", b"7"), ("s1.txt", b"first sample")):
                ti = tarfile.TarInfo(n)
                ti.size = len(body)
                t.addfile(ti, io.BytesIO(body))
        self.rs3.put_object(Bucket="origin", Key="arch/shard-0.tar", Body=buf.getvalue())
        self.rs3.put_object(Bucket="origin", Key="arch/plain.txt", Body=b"make me loud")
        r = self.s.get(self.url + "/v1/objects/origin/arch/shard-0.tar", timeout=60,
                       params={"provider": "aws", "archpath": "s1.txt"})
        self.assertEqual((r.status_code, r.content), (200, b"first sample"), r.content[:300])
        self.assertTrue(self.cached_aws("origin", "arch/shard-0.tar"))
        r = self.s.put(self.url + "/v1/etl", json={"name": "make-loud", "runtime": "lua",
                                                   "code": "function transform(data, ctx) return data:upper() end\n"},
                       timeout=120)
        self.assertEqual(r.status_code, 200, r.text)
        r = self.s.get(self.url + "/v1/objects/origin/arch/plain.txt", timeout=60,
                       params={"provider": "aws", "etl_name": "make-loud"})
        self.assertEqual((r.status_code, r.content), (200, b"MAKE ME LOUD"), r.content[:300])
        self.assertTrue(self.cached_aws("origin", "arch/plain.txt"))
        # an object the remote lacks: the remote's 404, naming it
        r = self.s.get(self.url + "/v1/objects/origin/arch/none.tar", timeout=60,
                       params={"provider": "aws", "archpath": "x"})
        self.assertEqual(r.status_code, 404, r.text)
        self.assertIn("s3://origin/arch/none.tar", r.text)
        self.s.delete(self.url + "/v1/etl/make-loud", timeout=60)

    def test_s3_bucket_copy_and_etl_jobs(self):
        """copy-bck of an s3:// bucket the cluster has not seen (shale cp s3://B ais://D): the job adds it, each
        target lists the remote and copies the objects it owns, fetching them (and keeping them, as a cold
        read does); copy-listrange of named objects and an offline transform read the remote too."""
        self.rs3.create_bucket(Bucket="cpsrc")
        objs = {"c/%d" % i: b"copy me %d" % i for i in range(12)}
        for k, v in objs.items():
            self.rs3.put_object(Bucket="cpsrc", Key=k, Body=v)
        self.assertNotIn("cpsrc", self.aws_buckets())
        self.c.cli("cp", "s3://cpsrc", "ais://cpdst", "--wait", timeout=120)
        for k, v in objs.items():
            self.assertEqual(self.get("cpdst", k).content, v, k)
        self.assertIn("cpsrc", self.aws_buckets())
        self.assertTrue(self.cached_aws("cpsrc", "c/5"))
        self.c.cli("cp", "s3://cpsrc", "ais://cpdst2", "--template", "c/{0..2}", "--wait", timeout=120)
        out = self.c.cli("ls", "ais://cpdst2", "-H").stdout
        self.assertEqual(sorted(l.split()[0] for l in out.splitlines() if l.strip()), ["c/0", "c/1", "c/2"])
        r = self.s.put(self.url + "/v1/etl", json={"name": "shout-copy", "runtime": "lua",
                                                   "code": "function transform(data, ctx) return data:upper() end\n"},
                       timeout=120)
        self.assertEqual(r.status_code, 200, r.text)
        self.c.cli("evict", "s3://cpsrc", "--prefix", "c/1")  # some cold again
        self.c.cli("etl", "bucket", "shout-copy", "s3://cpsrc", "ais://cpetl", "--wait", timeout=120)
        for k, v in objs.items():
            self.assertEqual(self.get("cpetl", k).content, v.upper(), k)
        self.s.delete(self.url + "/v1/etl/shout-copy", timeout=60)

    def test_s3_bucket_ishard(self):
        """ishard from an s3:// source the cluster has not seen (raw samples in the remote): the job adds the
        bucket, lists the remote, fetches the samples on the targets that own them (kept), and writes shards into
        an ais:// bucket; an s3:// destination is refused."""
        self.rs3.create_bucket(Bucket="rawsrc")
        samples = {}
        for i in range(10):
            for ext, body in (("jpg", b"image %d" % i), ("cls", b"%d" % (i % 3))):
                samples["s/k%02d.%s" % (i, ext)] = body
        for k, v in samples.items():
            self.rs3.put_object(Bucket="rawsrc", Key=k, Body=v)
        p = self.c.cli("ishard", "--src-bck", "s3://rawsrc/s/", "--dst-bck", "ais://ishout", "--shard-size", "4",
                       "--wait", timeout=180)
        self.assertIn("Wrote 10 samples in 3 shards", p.stdout)
        got = {}
        out = self.c.cli("ls", "ais://ishout", "-H").stdout
        shards = sorted(l.split()[0] for l in out.splitlines() if l.strip())
        self.assertEqual(len(shards), 3, shards)
        for sh in shards:
            with tarfile.open(fileobj=io.BytesIO(self.get("ishout", sh).content), mode="r:") as t:
                for m in t.getmembers():
                    got[m.name] = t.extractfile(m).read()
        self.assertEqual(got, samples)
        self.assertTrue(self.cached_aws("rawsrc", "s/k03.jpg"))
        r = self.c.cli("ishard", "--src-bck", "ais://ishout", "--dst-bck", "s3://rawsrc", "--shard-size", "4",
                       check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("only ais:// buckets are supported here", r.stderr)

    def test_s3_bucket_dsort(self):
        """dsort with an s3:// input the cluster has not seen: the coordinator adds the bucket, the input shards
        are fetched (and kept) by the targets that own them, and the output shards in the ais:// output bucket
        hold every record once; a remote input without output_bck is refused."""
        self.rs3.create_bucket(Bucket="dsin")
        want = {}
        for i in range(3):
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as t:
                for k in range(5):
                    body = b"record %d-%d" % (i, k)
                    ti = tarfile.TarInfo("r%d%d.txt" % (i, k))
                    ti.size = len(body)
                    t.addfile(ti, io.BytesIO(body))
                    want[ti.name] = body
            self.rs3.put_object(Bucket="dsin", Key="sh-%d.tar" % i, Body=buf.getvalue())
        spec = {"input_bck": {"name": "dsin", "provider": "aws"}, "input_format": {"template": "sh-{0..2}"},
                "input_extension": ".tar", "output_bck": {"name": "dsout"}, "output_format": "out-{00..99}",
                "output_shard_size": "100B", "algorithm": {"kind": "shuffle", "seed": "7"}}
        r = self.s.post(self.url + "/v1/sort", data=json.dumps(spec), timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        jid = r.text

        def done():
            info = self.s.get(self.url + "/v1/sort", params={"uuid": jid}, timeout=30).json()
            ms = [v["Metrics"] for v in info.values()]
            return ms if any(m["aborted"] for m in ms) or all(m["shard_creation"]["finished"] for m in ms) else None
        ms = wait_until(done, 120, interval=0.2, what="dsort " + jid)
        self.assertFalse(any(m["aborted"] for m in ms), [m["errors"] for m in ms])
        got = {}
        out = self.c.cli("ls", "ais://dsout", "-H").stdout
        for sh in (l.split()[0] for l in out.splitlines() if l.strip()):
            with tarfile.open(fileobj=io.BytesIO(self.get("dsout", sh).content), mode="r:") as t:
                for m in t.getmembers():
                    self.assertNotIn(m.name, got)
                    got[m.name] = t.extractfile(m).read()
        self.assertEqual(got, want)
        self.assertTrue(self.cached_aws("dsin", "sh-1.tar"))
        spec.pop("output_bck")
        r = self.s.post(self.url + "/v1/sort", data=json.dumps(spec), timeout=60)
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("output_bck", r.text)

    def test_s3_bucket_create_evict_prefetch(self):
        """bucket create s3://B asks the remote (refused, changing nothing, when it has no such bucket) unless
        --skip-lookup; its props may name an endpoint of their own; bucket rm is refused for s3:// (the remote is
        never destroyed) and evict drops the copies and the bucket, not the remote's objects; prefetch of an
        s3:// bucket the cluster has not seen yet adds it and fetches."""
        self.rs3.create_bucket(Bucket="second")
        for i in range(6):
            self.rs3.put_object(Bucket="second", Key="p/%d" % i, Body=b"x%d" % i)
        r = self.c.cli("bucket", "create", "s3://absent", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("does not exist", r.stderr)
        self.assertIn("--skip-lookup", r.stderr)
        self.assertNotIn("absent", self.aws_buckets())
        self.c.cli("bucket", "create", "s3://absent", "--skip-lookup")
        self.assertIn("absent", self.aws_buckets())
        # an endpoint of its own (the environment's is the same remote here; a wrong one proves it is used)
        self.c.cli("bucket", "create", "s3://elsewhere", "--skip-lookup", "--props",
                   "extra.aws.endpoint=http://127.0.0.1:9")
        r = self.s.get(self.url + "/v1/objects/elsewhere/x", params={"provider": "aws"}, timeout=60)
        self.assertEqual(r.status_code, 503, r.text)
        self.assertIn("127.0.0.1:9", r.text)
        r = self.c.cli("bucket", "props", "set", "s3://absent", "backend_bck=s3://origin", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("only ais:// buckets take a backend_bck", r.stderr + r.stdout)
        # prefetch: first access and fetch in one command
        self.assertNotIn("second", self.aws_buckets())
        self.c.cli("prefetch", "s3://second", "--prefix", "p/")
        out = self.c.cli("ls", "s3://second", "--cached", "-H").stdout
        self.assertEqual(sorted(l.split()[0] for l in out.splitlines() if l.strip()), ["p/%d" % i for i in range(6)])
        self.c.cli("evict", "s3://second", "--template", "p/{0..2}")
        out = self.c.cli("ls", "s3://second", "--cached", "-H").stdout
        self.assertEqual(sorted(l.split()[0] for l in out.splitlines() if l.strip()), ["p/3", "p/4", "p/5"])
        r = self.c.cli("bucket", "rm", "s3://second", "-y", check=False)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("evict", r.stderr)
        self.assertIn("second", self.aws_buckets())
        self.c.cli("evict", "s3://second")
        self.assertNotIn("second", self.aws_buckets())
        self.assertEqual(len(self.rs3.list_objects_v2(Bucket="second")["Contents"]), 6)
        wait_until(lambda: not [d for d, _, fs in os.walk(self.c.dir) if fs and
                                os.sep + os.path.join("@aws", "second", "%ob") in d], 10, what="copies gone")
        # and it comes back on the next access, cold
        r = self.s.get(self.url + "/v1/objects/second/p/4", params={"provider": "aws"}, timeout=60)
        self.assertEqual((r.status_code, r.content), (200, b"x4"))

    def test_put_checksum_and_delete_listrange(self):
        """A write-through PUT whose Ais-Checksum-Value does not match its body reaches neither the remote nor
        the cluster; delete-listrange on a remote-backed bucket deletes at the remote too."""
        self.rs3.put_object(Bucket="origin", Key="ck/x", Body=b"original")
        r = self.s.put(self.url + "/v1/objects/cache/ck/x", data=b"new bytes", timeout=60,
                       headers={"Ais-Checksum-Type": "md5", "Ais-Checksum-Value": "0" * 32})
        self.assertGreaterEqual(r.status_code, 400, r.text)
        self.assertIn("nothing was stored", r.text)
        self.assertEqual(self.rs3.get_object(Bucket="origin", Key="ck/x")["Body"].read(), b"original")
        for n in ("dl/1", "dl/2", "dl/3"):
            self.rs3.put_object(Bucket="origin", Key=n, Body=n.encode())
        self.assertEqual(self.get("cache", "dl/1").content, b"dl/1")
        r = self.s.delete(self.url + "/v1/buckets/cache", json={"action": "delete-listrange",
                                                                "value": {"objnames": ["dl/1", "dl/2"]}}, timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.job_done(r.text)["err"], "")
        for n in ("dl/1", "dl/2"):
            with self.assertRaises(Exception):
                self.rs3.head_object(Bucket="origin", Key=n)
        self.assertFalse(self.cached("cache", "dl/1"))
        self.assertEqual(self.rs3.get_object(Bucket="origin", Key="dl/3")["Body"].read(), b"dl/3")

    def test_promote_writes_through(self):
        """promote into a remote-backed bucket is a PUT into it: every file reaches the remote, those its
        promoting target owns as well as those it sends to their owners (shared directory, then tid)."""
        pdir = os.path.join(self.tmp, "promote")
        r = self.s.put(self.url + "/v1/cluster/set-config", params={"promote.dir": pdir}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        tid = sorted(self.c.smap()["tmap"])[0]
        for sub, extra in (("shared", {}), ("tid", {"tid": tid})):
            files = {"pw/%s/%02d.txt" % (sub, i): b"promoted %s %d" % (sub.encode(), i) for i in range(16)}
            for k, v in files.items():
                os.makedirs(os.path.dirname(os.path.join(pdir, k)), exist_ok=True)
                with open(os.path.join(pdir, k), "wb") as f:
                    f.write(v)
            src = os.path.join(pdir, "pw", sub)
            r = self.s.post(self.url + "/v1/objects/cache", timeout=60,
                            json={"action": "promote", "name": src, "value": dict({"src": src, "obj": "pw/%s/" % sub},
                                                                                   **extra)})
            self.assertEqual(r.status_code, 200, r.text)
            jid = r.text

            def done():
                st = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid}, timeout=30)
                return st.status_code == 200 and st.json().get("end_time", 0) != 0
            wait_until(done, 60, what="promote " + sub)
            for k, v in files.items():
                self.assertEqual(self.rs3.get_object(Bucket="origin", Key=k)["Body"].read(), v, k)
                self.assertTrue(self.cached("cache", k), k)
                self.assertEqual(self.get("cache", k).content, v, k)

    def test_y_rebalance_does_not_write_through(self):
        """A target joins: rebalance moves cached copies between targets without writing them to the remote
        (objects changed at the remote in the meantime keep their new content there), and every object still
        reads (the moved copies warm, the rest cold)."""
        names = ["rb/%02d" % i for i in range(40)]
        for n in names:
            self.rs3.put_object(Bucket="origin", Key=n, Body=b"v1 " + n.encode())
        for n in names:
            self.assertEqual(self.get("cache", n).content, b"v1 " + n.encode())
            self.assertTrue(self.cached("cache", n))
        for n in names:  # changed at the remote, out of band
            self.rs3.put_object(Bucket="origin", Key=n, Body=b"v2 " + n.encode())
        self.c.cli("playground", "add-target", "--dir", self.c.dir)
        wait_until(lambda: len(self.c.smap()["tmap"]) == 3, 30, what="3 targets")
        r = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"Kind": "rebalance"})
        self.assertEqual(r.status_code, 200, r.text)
        jid = r.json()["uuid"]

        def done():
            st = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid})
            return st.status_code == 200 and st.json()["end_time"] != 0
        wait_until(done, 60, interval=0.2, what="rebalance")
        for n in names:  # the remote kept the new content: nothing stale was written through
            self.assertEqual(self.rs3.get_object(Bucket="origin", Key=n)["Body"].read(), b"v2 " + n.encode())
        for n in names:  # the cached copies (v1) still serve, wherever they are now
            self.assertEqual(self.get("cache", n).content, b"v1 " + n.encode())

    def test_zz_remote_down(self):
        """With the remote down, cached objects keep being served; an uncached GET fails fast with 503 naming the
        remote bucket and object."""
        self.rs3.put_object(Bucket="origin", Key="down/kept.txt", Body=b"kept")
        self.rs3.put_object(Bucket="origin", Key="down/lost.txt", Body=b"lost")
        self.assertEqual(self.get("cache", "down/kept.txt").content, b"kept")
        self.remote.stop()
        self.assertEqual(self.get("cache", "down/kept.txt").content, b"kept")
        t0 = time.time()
        r = self.get("cache", "down/lost.txt")
        self.assertEqual(r.status_code, 503, r.text)
        self.assertIn("s3://origin/down/lost.txt", r.text)
        self.assertLess(time.time() - t0, 10)


class ExampleBackendTest(unittest.TestCase):
    """examples/backend-dir, a backend plugin built out of tree against the installed header (as a user writes
    one): installed into the plugin directory, it serves gs:// buckets from a directory tree."""

    def test_backend_dir(self):
        tmp = tempfile.mkdtemp(prefix="shale-bdir-")
        try:
            inst = os.path.join(tmp, "inst")
            p = subprocess.run(["make", "-C", os.path.dirname(os.path.abspath(BUILD)), "install", "PREFIX=" + inst],
                               capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            ex = os.path.join(tmp, "backend-dir")
            shutil.copytree(os.path.join(SRC, "examples", "backend-dir"), ex)
            for target in ("all", "check", "install"):
                p = subprocess.run(["make", "-C", ex, target, "PREFIX=" + inst], capture_output=True, text=True)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            root = os.path.join(tmp, "gs")
            os.makedirs(os.path.join(root, "photos", "a"))
            with open(os.path.join(root, "photos", "a", "1.txt"), "wb") as f:
                f.write(b"from the directory")
            node = Node(tmp, extra_config={"plugins": {"dir": os.path.join(inst, "lib", "shale")}})
            node.start(env={"SHALE_GS_ROOT": root})
            try:
                s = requests.Session()
                pl = s.get(node.url + "/v1/daemon?what=plugins", timeout=10).json()
                self.assertIn("dir", [x.get("name") for x in pl if x.get("status") == "loaded"])
                q = {"provider": "gcp"}
                r = s.get(node.url + "/v1/objects/photos/a/1.txt", params=q, timeout=30)
                self.assertEqual((r.status_code, r.content), (200, b"from the directory"))
                r = s.put(node.url + "/v1/objects/photos/b.txt", params=q, data=b"written through", timeout=30)
                self.assertEqual(r.status_code, 200, r.text)
                with open(os.path.join(root, "photos", "b.txt"), "rb") as f:
                    self.assertEqual(f.read(), b"written through")
                r = s.get(node.url + "/v1/buckets/photos", params=q, timeout=30,
                          json={"action": "list", "value": {"props": "name,size"}})
                self.assertEqual([e["name"] for e in r.json()["entries"]], ["a/1.txt", "b.txt"])
                self.assertEqual(s.delete(node.url + "/v1/objects/photos/b.txt", params=q, timeout=30).status_code,
                                 200)
                self.assertFalse(os.path.exists(os.path.join(root, "photos", "b.txt")))
                r = s.get(node.url + "/v1/objects/nophotos/x", params=q, timeout=30)
                self.assertEqual(r.status_code, 404, r.text)
            finally:
                node.stop()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


class _QuietFiles(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *a):
        pass


class _Faulty(http.server.BaseHTTPRequestHandler):
    """A remote that cuts its bodies short: every object is SIZE bytes of a known pattern, but a GET (or a
    range of it past CUT) stops sending at byte CUT of the object and closes the connection."""
    protocol_version = "HTTP/1.1"
    SIZE, CUT = 3 * 1024 * 1024 + 5, 2 * 1024 * 1024 + 7
    BODY = bytes(range(256)) * (SIZE // 256 + 1)

    def log_message(self, *a):
        pass

    def head(self, status, n, extra=()):
        self.send_response(status)
        self.send_header("Content-Length", str(n))
        self.send_header("ETag", '"faulty-1"')
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()

    def do_HEAD(self):
        self.head(200, 0 if self.path.count("/") == 1 else self.SIZE)

    def do_GET(self):
        start, end = 0, self.SIZE - 1
        rg = self.headers.get("Range", "")
        if rg.startswith("bytes="):
            a, b = rg[6:].split("-")
            start, end = int(a), min(int(b) if b else self.SIZE - 1, self.SIZE - 1)
            self.head(206, end - start + 1, [("Content-Range", "bytes %d-%d/%d" % (start, end, self.SIZE))])
        else:
            self.head(200, self.SIZE)
        self.wfile.write(self.BODY[start:min(end + 1, self.CUT)])
        self.wfile.flush()
        self.close_connection = True


def _up(ep):
    try:
        requests.get(ep, timeout=2)
        return True
    except requests.exceptions.ConnectionError:
        return False


if __name__ == "__main__":
    main()
