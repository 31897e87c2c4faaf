# SPDX-License-Identifier: MIT
"""AIStore HTTP API on a standalone node: daemon, buckets, objects, listing,
errors, bad input. Every test talks to a real shaled on a loopback port."""
import hashlib
import json
import os
import tempfile
import socket
import threading
import time
import zlib
from urllib.parse import quote

import crc32c
import msgpack
import requests
import xxhash

from harness import NodeTest, main, SHALED, Node, wait_until


def xxh(b):
    return "%016x" % xxhash.xxh64(b, seed=0).intdigest()


CKSUMS = {
    "xxhash2": xxh,
    "xxhash": xxh,
    "md5": lambda b: hashlib.md5(b).hexdigest(),
    "sha256": lambda b: hashlib.sha256(b).hexdigest(),
    "sha512": lambda b: hashlib.sha512(b).hexdigest(),
    "crc32c": lambda b: "%08x" % crc32c.crc32c(b),
}


class TestDaemon(NodeTest):
    def test_health(self):
        r = self.s.get(self.url + "/v1/health")
        self.assertEqual(r.status_code, 200)
        self.assertTrue(int(r.headers["Ais-Node-Uptime"]) > 0)
        self.assertIn("Ais-Cluster-Uptime", r.headers)
        r = self.s.get(self.url + "/v1/health", params={"cii": "true"})
        self.assertEqual(r.status_code, 200)
        cii = r.json()
        self.assertIn("smap", cii)
        # NodeStateInfo: every document's version as a string, flags = NodeStarted|ClusterStarted
        for doc in ("smap", "bmd", "rmd", "config", "etlmd"):
            self.assertIsInstance(cii[doc]["version"], str, doc)
        self.assertEqual(cii["etlmd"]["version"], "0")
        self.assertEqual(cii["flags"] & (2 | 4), 2 | 4, cii["flags"])
        r = self.s.get(self.url + "/v1/health", params={"cii": "true", "prr": "true"})
        self.assertEqual(r.status_code, 400)

    def test_smap(self):
        r = self.s.get(self.url + "/v1/daemon", params={"what": "smap"})
        self.assertEqual(r.status_code, 200)
        self.assertTrue(r.headers["Content-Type"].startswith("application/json"))
        self.assertTrue(r.text.endswith("\n"))
        sm = r.json()
        self.assertIsInstance(sm["version"], str)
        self.assertEqual(len(sm["tmap"]), 1)
        self.assertEqual(len(sm["pmap"]), 1)
        for m in ("tmap", "pmap"):
            for nid, sn in sm[m].items():
                self.assertEqual(sn["daemon_id"], nid)
                # clients compute HRW from this exact value
                self.assertEqual(sn["id_digest"], xxhash.xxh64(nid.encode(), seed=1103515245).intdigest())
                self.assertEqual(sn["public_net"]["direct_url"], self.url)
                self.assertIsInstance(sn["public_net"]["daemon_port"], str)
        self.assertEqual(sm["proxy_si"]["daemon_id"], list(sm["pmap"])[0])
        self.assertTrue(sm["uuid"])

    def test_daemon_whats(self):
        for what in ("bmd", "config", "snode", "node_status"):
            r = self.s.get(self.url + "/v1/daemon", params={"what": what})
            self.assertEqual(r.status_code, 200, what)
            r.json()
        cfg = self.s.get(self.url + "/v1/daemon", params={"what": "config"}).json()
        for k in ("checksum", "log", "host_net", "fspaths", "confdir", "timeout", "space", "config_version"):
            self.assertIn(k, cfg)
        self.assertEqual(cfg["checksum"]["type"], "xxhash2")
        r = self.s.get(self.url + "/v1/daemon", params={"what": "nonsense"})
        self.assertEqual(r.status_code, 400)
        self.assertIn("what=nonsense", r.json()["message"])
        r = self.s.get(self.url + "/metrics")
        self.assertEqual(r.status_code, 200)
        self.assertIn("ais_target_get_count", r.text)

    def test_unknown_endpoint(self):
        r = self.s.get(self.url + "/v1/nosuch")
        self.assertEqual(r.status_code, 404)
        self.assertIn("no such endpoint", r.json()["message"])


class TestBuckets(NodeTest):
    def test_lifecycle(self):
        self.create_bucket("lc1")
        r = self.act("POST", "/v1/buckets/lc1", "create-bck")
        self.assertEqual(r.status_code, 409)
        self.assertEqual(r.json()["message"], 'bucket "ais://lc1" already exists')
        err = r.json()
        for k in ("message", "method", "url_path", "remote_addr", "caller", "node", "status"):
            self.assertIn(k, err)
        self.assertEqual(err["status"], 409)
        self.assertEqual(err["method"], "POST")
        self.assertEqual(err["url_path"], "/v1/buckets/lc1")
        r = self.s.head(self.url + "/v1/buckets/lc1", params={"provider": "ais"})
        self.assertEqual(r.status_code, 200)
        props = json.loads(r.headers["Ais-Bucket-Props"])
        self.assertEqual(props["checksum"]["type"], "xxhash2")
        self.assertEqual(props["provider"], "ais")
        self.assertIsInstance(props["bid"], str)
        r = self.s.get(self.url + "/v1/buckets", params={"provider": "ais"},
                       data=json.dumps({"action": "list", "name": "", "value": None}),
                       headers={"Content-Type": "application/json"})
        self.assertEqual(r.status_code, 200)
        self.assertIn({"name": "lc1", "provider": "ais", "namespace": {"uuid": "", "name": ""}}, r.json())
        r = self.act("DELETE", "/v1/buckets/lc1", "destroy-bck")
        self.assertEqual(r.status_code, 200)
        r = self.act("DELETE", "/v1/buckets/lc1", "destroy-bck")
        self.assertEqual(r.status_code, 404)
        self.assertEqual(r.json()["message"], 'bucket "ais://lc1" does not exist')
        r = self.s.head(self.url + "/v1/buckets/lc1")
        self.assertEqual(r.status_code, 404)
        self.assertIn("Hdr-Error", r.headers)
        self.assertEqual(json.loads(r.headers["Hdr-Error"])["message"], 'bucket "ais://lc1" does not exist')
        self.assertEqual(r.content, b"")

    def test_destroy_removes_data(self):
        self.create_bucket("lc2")
        self.assertEqual(self.put("lc2", "x", b"1").status_code, 200)
        self.act("DELETE", "/v1/buckets/lc2", "destroy-bck")
        self.create_bucket("lc2")
        self.assertEqual(self.get("lc2", "x").status_code, 404)
        self.assertEqual(self.list_all("lc2"), [])

    def test_create_with_props_and_set_bprops(self):
        self.create_bucket("lc3", {"checksum": {"type": "md5"}})
        r = self.s.head(self.url + "/v1/buckets/lc3")
        self.assertEqual(json.loads(r.headers["Ais-Bucket-Props"])["checksum"]["type"], "md5")
        r = self.put("lc3", "o", b"abc")
        self.assertEqual(r.headers["Ais-Checksum-Type"], "md5")
        self.assertEqual(r.headers["Ais-Checksum-Value"], hashlib.md5(b"abc").hexdigest())
        r = self.act("PATCH", "/v1/buckets/lc3", "set-bprops", {"checksum": {"type": "sha256"}})
        self.assertEqual(r.status_code, 200, r.text)
        r = self.put("lc3", "o2", b"abc")
        self.assertEqual(r.headers["Ais-Checksum-Value"], hashlib.sha256(b"abc").hexdigest())
        # bad props change nothing
        for bad in ({"checksum": {"type": "nope"}}, {"nosuch": 1}, {"checksum": {"type": 5}}, {"bid": "1"}):
            r = self.act("PATCH", "/v1/buckets/lc3", "set-bprops", bad)
            self.assertEqual(r.status_code, 400, (bad, r.text))
        # an unknown property names the valid ones at its level
        r = self.act("PATCH", "/v1/buckets/lc3", "set-bprops", {"checksum": {"typo": "md5"}})
        self.assertIn("checksum.type", r.json()["message"])
        r = self.act("PATCH", "/v1/buckets/lc3", "set-bprops", {"nosuch": 1})
        self.assertIn("versioning", r.json()["message"])
        r = self.s.head(self.url + "/v1/buckets/lc3")
        self.assertEqual(json.loads(r.headers["Ais-Bucket-Props"])["checksum"]["type"], "sha256")
        r = self.act("PATCH", "/v1/buckets/lc3", "reset-bprops")
        self.assertEqual(r.status_code, 200)
        r = self.s.head(self.url + "/v1/buckets/lc3")
        self.assertEqual(json.loads(r.headers["Ais-Bucket-Props"])["checksum"]["type"], "xxhash2")

    def test_bad_bucket_input(self):
        for name in ("a..b", ".hidden", "x" * 65, "bad%20name", "semi;colon"):
            r = self.act("POST", "/v1/buckets/" + quote(name), "create-bck")
            self.assertEqual(r.status_code, 400, (name, r.text))
        before = self.s.get(self.url + "/v1/buckets").json()
        h = {"Content-Type": "application/json"}
        for body in ('{"action": "create-bck"', '[1,2]', '{"action": 5}', '{"action": "create-bck", "value": 7}',
                     '{"action": "fly-away"}', '"str"'):
            r = self.s.post(self.url + "/v1/buckets/okname", data=body, headers=h)
            self.assertEqual(r.status_code, 400, (body, r.text))
            self.assertTrue(r.json()["message"])
        r = self.s.post(self.url + "/v1/buckets/okname", data='{"action": "fly-away"}', headers=h)
        self.assertIn("create-bck", r.json()["message"])
        self.assertEqual(self.s.get(self.url + "/v1/buckets").json(), before)
        # a typo after the bucket name touches nothing (issue 15): no create, no destroy
        r = self.act("POST", "/v1/buckets/typo/badname", "create-bck")
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("invalid request URI", r.text)
        self.assertEqual(self.s.head(self.url + "/v1/buckets/typo").status_code, 404)
        self.create_bucket("keepme")
        self.s.put(self.url + "/v1/objects/keepme/o", data=b"data").raise_for_status()
        for method in ("DELETE", "POST", "PATCH", "PUT", "GET", "HEAD"):
            r = self.act(method, "/v1/buckets/keepme/badname", "destroy-bck")
            self.assertEqual(r.status_code, 400, (method, r.text))
        self.assertEqual(self.s.get(self.url + "/v1/objects/keepme/o").content, b"data")
        # a bare DELETE (no action) destroys nothing either
        for body in (None, b"", b'{"action": ""}'):
            r = self.s.delete(self.url + "/v1/buckets/keepme", data=body)
            self.assertEqual(r.status_code, 400, (body, r.text))
            self.assertIn("destroy-bck", r.text)
        self.assertEqual(self.s.get(self.url + "/v1/objects/keepme/o").content, b"data")
        r = self.act("POST", "/v1/buckets/b9", "create-bck", params={"provider": "weird"})
        self.assertEqual(r.status_code, 400)
        r = self.act("POST", "/v1/buckets/b9", "create-bck", params={"provider": "gcp"})
        self.assertEqual(r.status_code, 501)  # no gcp backend plugin


class TestObjects(NodeTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        r = cls.s.post(cls.url + "/v1/buckets/ob", data=json.dumps({"action": "create-bck"}),
                       headers={"Content-Type": "application/json"})
        assert r.status_code == 200

    def test_put_get_head_delete(self):
        data = os.urandom(300000)
        r = self.put("ob", "dir/a.bin", data)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.headers["Ais-Checksum-Type"], "xxhash2")
        self.assertEqual(r.headers["Ais-Checksum-Value"], xxh(data))
        self.assertEqual(r.headers["Ais-Version"], "1")
        r = self.get("ob", "dir/a.bin")
        self.assertEqual(r.status_code, 200)
        self.assertEqual(r.content, data)
        self.assertEqual(r.headers["Content-Type"], "application/octet-stream")
        self.assertEqual(r.headers["Ais-Checksum-Value"], xxh(data))
        at = int(r.headers["Ais-Atime"])
        self.assertTrue(abs(at / 1e9 - time.time()) < 600)
        r = self.s.head(self.url + "/v1/objects/ob/dir/a.bin")
        self.assertEqual(r.status_code, 200)
        self.assertEqual(r.headers["Content-Length"], str(len(data)))
        self.assertEqual(r.headers["Ais-Name"], "dir/a.bin")
        self.assertEqual(r.headers["Ais-Bucket-Name"], "ob")
        self.assertEqual(r.headers["Ais-Bucket-Provider"], "ais")
        self.assertEqual(r.headers["Ais-Present"], "true")
        self.assertTrue(r.headers["Ais-Location"].startswith("t["))
        # overwrite bumps the version
        r = self.put("ob", "dir/a.bin", b"new")
        self.assertEqual(r.headers["Ais-Version"], "2")
        self.assertEqual(self.get("ob", "dir/a.bin").content, b"new")
        r = self.s.delete(self.url + "/v1/objects/ob/dir/a.bin")
        self.assertEqual(r.status_code, 200)
        r = self.get("ob", "dir/a.bin")
        self.assertEqual(r.status_code, 404)
        self.assertRegex(r.json()["message"], r"^t\[.+\]: ais://ob/dir/a.bin does not exist$")
        r = self.s.delete(self.url + "/v1/objects/ob/dir/a.bin")
        self.assertEqual(r.status_code, 404)
        self.assertEqual(r.json()["message"], "ais://ob/dir/a.bin doesn't exist")
        r = self.s.head(self.url + "/v1/objects/ob/dir/a.bin")
        self.assertEqual(r.status_code, 404)
        self.assertIn("does not exist", json.loads(r.headers["Hdr-Error"])["message"])
        r = self.get("nobucket", "x")
        self.assertEqual(r.status_code, 404)
        self.assertEqual(r.json()["message"], 'bucket "ais://nobucket" does not exist')

    def test_empty_object(self):
        r = self.put("ob", "empty", b"")
        self.assertEqual(r.status_code, 200)
        r = self.get("ob", "empty")
        self.assertEqual((r.status_code, r.content), (200, b""))

    def test_checksum_types(self):
        data = os.urandom(70000)
        for t, fn in CKSUMS.items():
            b = "ck-" + t
            self.create_bucket(b, {"checksum": {"type": t}})
            r = self.put(b, "o", data)
            self.assertEqual(r.status_code, 200, r.text)
            self.assertEqual(r.headers["Ais-Checksum-Type"], t)
            self.assertEqual(r.headers["Ais-Checksum-Value"], fn(data), t)
            # client-supplied checksum of any type is validated
            r = self.put(b, "o2", data, headers={"Ais-Checksum-Type": t, "Ais-Checksum-Value": fn(data)})
            self.assertEqual(r.status_code, 200, r.text)
        self.create_bucket("ck-none", {"checksum": {"type": "none"}})
        r = self.put("ck-none", "o", data)
        self.assertEqual(r.status_code, 200)
        self.assertNotIn("Ais-Checksum-Type", r.headers)

    def test_client_checksum_mismatch_creates_nothing(self):
        data = b"hello world"
        for t in ("xxhash2", "md5", "crc32c", "sha256"):
            r = self.put("ob", "bad-" + t, data, headers={"Ais-Checksum-Type": t, "Ais-Checksum-Value": "00ff"})
            self.assertEqual(r.status_code, 500, r.text)
            self.assertIn("BAD DATA CHECKSUM", r.json()["message"])
            self.assertEqual(self.get("ob", "bad-" + t).status_code, 404)
        # existing object untouched by a bad overwrite
        self.put("ob", "keep", b"v1")
        r = self.put("ob", "keep", b"v2", headers={"Ais-Checksum-Type": "md5", "Ais-Checksum-Value": "0" * 32})
        self.assertEqual(r.status_code, 500)
        self.assertEqual(self.get("ob", "keep").content, b"v1")
        r = self.put("ob", "keep", b"v2", headers={"Ais-Checksum-Type": "blake9", "Ais-Checksum-Value": "00"})
        self.assertEqual(r.status_code, 400)

    def test_same_checksum_put_is_noop(self):
        r = self.put("ob", "same", b"content")
        v1 = r.headers["Ais-Version"]
        ck = {"Ais-Checksum-Type": "xxhash2", "Ais-Checksum-Value": xxh(b"content")}
        r = self.put("ob", "same", b"content", headers=ck)
        self.assertEqual(r.status_code, 200)
        self.assertEqual(r.headers["Ais-Version"], v1)
        r = self.put("ob", "same", b"content", headers=ck, params={"provider": "ais", "skip_vc": "true"})
        self.assertEqual(r.headers["Ais-Version"], str(int(v1) + 1))

    def test_range(self):
        data = bytes(range(256)) * 1000
        self.put("ob", "rng", data)
        r = self.get("ob", "rng", headers={"Range": "bytes=10-19"})
        self.assertEqual(r.status_code, 206)
        self.assertEqual(r.content, data[10:20])
        self.assertEqual(r.headers["Content-Range"], "bytes 10-19/%d" % len(data))
        r = self.get("ob", "rng", headers={"Range": "bytes=-5"})
        self.assertEqual((r.status_code, r.content), (206, data[-5:]))
        r = self.get("ob", "rng", headers={"Range": "bytes=255990-"})
        self.assertEqual((r.status_code, r.content), (206, data[255990:]))
        r = self.get("ob", "rng", headers={"Range": "bytes=100000-200000"})  # clipped to the end
        self.assertEqual(r.content, data[100000:200001])
        r = self.get("ob", "rng", headers={"Range": "bytes=999999-"})
        self.assertEqual(r.status_code, 416)
        self.assertEqual(r.headers["Content-Range"], "bytes */%d" % len(data))
        r = self.get("ob", "rng", headers={"Range": "bytes=0-1,5-6"})
        self.assertEqual(r.status_code, 416)
        r = self.get("ob", "rng", headers={"Range": "items=0-1"})
        self.assertEqual(r.status_code, 416)

    def test_custom_metadata(self):
        r = self.put("ob", "cm", b"x", headers={"Ais-Custom-Md": "k1=v1"})
        self.assertEqual(r.status_code, 200)
        r = self.s.head(self.url + "/v1/objects/ob/cm")
        self.assertIn("k1=v1", r.headers["Ais-Custom-Md"])
        r = self.s.patch(self.url + "/v1/objects/ob/cm", data=json.dumps({"action": "", "value": {"k2": "v2"}}),
                         headers={"Content-Type": "application/json"})
        self.assertEqual(r.status_code, 200, r.text)
        md = self.s.head(self.url + "/v1/objects/ob/cm").headers["Ais-Custom-Md"]
        self.assertIn("k1=v1", md)
        self.assertIn("k2=v2", md)
        r = self.s.patch(self.url + "/v1/objects/ob/cm", params={"set-new-custom": "true"},
                         data=json.dumps({"action": "", "value": {"k3": "v3"}}),
                         headers={"Content-Type": "application/json"})
        md = self.s.head(self.url + "/v1/objects/ob/cm").headers["Ais-Custom-Md"]
        self.assertEqual(md, "k3=v3")
        r = self.s.patch(self.url + "/v1/objects/ob/cm", data=json.dumps({"value": {"k": 5}}),
                         headers={"Content-Type": "application/json"})
        self.assertEqual(r.status_code, 400)
        r = self.put("ob", "cm2", b"x", headers={"Ais-Custom-Md": "novalue"})
        self.assertEqual(r.status_code, 400)

    def test_easy_url(self):
        r = self.s.put(self.url + "/ais/ob/easy/one.txt", data=b"easy")
        self.assertEqual(r.status_code, 200)
        self.assertEqual(self.s.get(self.url + "/ais/ob/easy/one.txt").content, b"easy")
        r = self.s.get(self.url + "/ais/ob")
        self.assertEqual(r.status_code, 200)
        self.assertIn("easy/one.txt", [e["name"] for e in r.json()["entries"]])
        r = self.s.get(self.url + "/ais/")
        self.assertIn("ob", [b["name"] for b in r.json()])
        self.assertEqual(self.s.put(self.url + "/ais/ob", data=b"x").status_code, 400)
        self.assertEqual(self.s.delete(self.url + "/ais/ob/easy/one.txt").status_code, 200)

    def test_names(self):
        names = [
            "x" * 1024,                                  # longest allowed
            "a/" + "b" * 300 + "/c",                      # long segment -> hashed file name
            "unicode/日本語/файл-ü.txt",
            "spaces and+plus&amp;=eq?q#hash%25.bin",
            "trailing/",
            "double//slash",
            "conflict",
            "conflict/child",                             # file vs directory on disk
            ".x" + "0" * 64,                             # looks like a hashed name
        ]
        for n in names:
            d = n.encode() + b"-data"
            r = self.put("ob", n, d)
            self.assertEqual(r.status_code, 200, (n[:50], r.text))
        for n in names:
            r = self.get("ob", n)
            self.assertEqual((r.status_code, r.content), (200, n.encode() + b"-data"), n[:50])
        listed = set(self.list_all("ob"))
        for n in names:
            self.assertIn(n, listed, n[:50])
        r = self.put("ob", "y" * 1025, b"1")
        self.assertEqual(r.status_code, 400)
        self.assertIn("too long", r.json()["message"])

    def test_bad_object_names(self):
        import http.client
        bad = ["a/../b", "..", "x/./y", "./x", "a/..", "%2E%2E/x", "a/%2e%2e/%2E%2E/etc"]
        for n in bad:
            # raw request: clients would normalize dot segments away
            c = http.client.HTTPConnection("127.0.0.1", self.node.port, timeout=10)
            c.request("PUT", "/v1/objects/ob/" + n, body=b"1")
            resp = c.getresponse()
            body = resp.read()
            c.close()
            self.assertEqual(resp.status, 400, (n, body))
            self.assertIn(b"segment", body)
        r = self.s.put(self.url + "/v1/objects/ob/with%00nul", data=b"1")
        self.assertEqual(r.status_code, 400)
        r = self.s.put(self.url + "/v1/objects/ob/bad%ffutf8", data=b"1")
        self.assertEqual(r.status_code, 400)
        r = self.s.put(self.url + "/v1/objects/ob/", data=b"1")
        self.assertEqual(r.status_code, 400)
        # nothing escaped the mountpath
        mp = os.path.join(self.node.dir, "mp1")
        for root, dirs, files in os.walk(os.path.dirname(mp)):
            for f in files:
                self.assertNotIn(f, ("b", "y", "x"), os.path.join(root, f))

    def test_delete_body(self):
        url = self.url + "/v1/objects/ob/del/a.bin"
        jh = {"Content-Type": "application/json"}
        self.put("ob", "del/a.bin", b"keep me")
        # a body that is not a plain delete never deletes
        for body, status, words in (('{"action":"frob"}', 400, ('"frob"', "evict-listrange", "mpt-abort")),
                                    ('{"action":', 400, ("invalid JSON",)),
                                    ('[1,2]', 400, ("JSON object",)),
                                    ('{"action":"mpt-abort"}', 400, ("multipart upload id",)),
                                    ('{"action":"evict-listrange"}', 400, ("remote",))):
            r = self.s.delete(url, data=body, headers=jh)
            self.assertEqual(r.status_code, status, (body, r.text))
            for w in words:
                self.assertIn(w, r.json()["message"], body)
            self.assertIn("nothing was deleted", r.json()["message"])
            self.assertEqual(self.get("ob", "del/a.bin").content, b"keep me", body)
        # the connection stays usable after an error answered before the body
        r = self.s.delete(url, data='{"action":"frob"}', headers=jh)
        self.assertEqual(r.status_code, 400)
        # empty action, empty body: delete
        r = self.s.delete(url, data='{"action":""}', headers=jh)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.get("ob", "del/a.bin").status_code, 404)
        self.put("ob", "del/a.bin", b"again")
        r = self.s.delete(url, data=b"", headers=jh)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.get("ob", "del/a.bin").status_code, 404)

    def test_post_actions(self):
        self.put("ob", "post/a.bin", b"x")
        for path in ("/v1/objects/ob/post/a.bin", "/v1/objects/ob"):
            r = self.act("POST", path, "frob")
            self.assertEqual(r.status_code, 400, (path, r.text))
            msg = r.json()["message"]
            self.assertIn('"frob"', msg)
            for a in ("rename-obj", "promote", "blob-download", "mpt-upload"):
                self.assertIn(a, msg)
            # rename-obj (test_cli_more.py): the new name in "name", the object in the path
            r = self.act("POST", path, "rename-obj")
            self.assertEqual(r.status_code, 400, (path, r.text))
            self.assertIn("the new object name goes in" if path.endswith(".bin") else "names the object in the path",
                          r.json()["message"])
            # blob-download: remote buckets only (test_remote_migrate), the object in the path or in "name"
            r = self.act("POST", path, "blob-download", name="post/a.bin")
            self.assertEqual(r.status_code, 400, (path, r.text))
            self.assertIn("has no remote behind it", r.json()["message"])
            # promote is served on the bucket (test_ops.py); on an object it says where to send it, and
            # without a source path it says what is missing
            r = self.act("POST", path, "promote")
            self.assertEqual(r.status_code, 400, (path, r.text))
            self.assertIn("/v1/objects/BUCKET" if path.endswith("a.bin") else "source path", r.json()["message"])
            # multipart uploads are served (test_upload.py): on an object an id, on a bucket a 400
            r = self.act("POST", path, "mpt-upload")
            if path.endswith("a.bin"):
                self.assertEqual(r.status_code, 200, r.text)
                r = self.act("DELETE", path, "mpt-abort", params={"uploadId": r.text, "provider": "ais"})
                self.assertEqual(r.status_code, 200, r.text)
            else:
                self.assertEqual(r.status_code, 400, r.text)
            r = self.s.post(self.url + path, data='{"action":', headers={"Content-Type": "application/json"})
            self.assertEqual(r.status_code, 400, r.text)
            r = self.s.post(self.url + path)
            self.assertEqual(r.status_code, 400, r.text)
            self.assertIn("missing", r.json()["message"])
        self.assertEqual(self.get("ob", "post/a.bin").content, b"x")

    def test_head_invalid_props(self):
        self.put("ob", "hp", b"x")
        for bad in ("cached", "status", "checksum,cached" + "x" * 300):
            r = self.s.head(self.url + "/v1/objects/ob/hp", params={"props": bad})
            self.assertEqual(r.status_code, 400, bad)
            msg = json.loads(r.headers["Hdr-Error"])["message"]
            self.assertIn('invalid HEAD props "%s"' % bad.split(",")[-1], msg)
            self.assertIn("valid: name, size, checksum", msg)

    def test_oversized_headers(self):
        r = self.s.get(self.url + "/v1/objects/ob/x", headers={"X-Big": "a" * 200000})
        self.assertIn(r.status_code, (413, 431))
        # over net.http.max_header_size (16KiB) but within what the node reads: its own 431
        self.put("ob", "hdr", b"small")
        for hdrs in ({"X-Big": "a" * 20000}, {"X-H%d" % i: "v" * 1000 for i in range(20)}):
            for m in ("GET", "PUT", "HEAD"):
                r = requests.request(m, self.url + "/v1/objects/ob/hdr", headers=hdrs, timeout=10,
                                     data=b"overwrite" if m == "PUT" else None)
                self.assertEqual(r.status_code, 431, m)
                if m != "HEAD":
                    msg = r.json()["message"]
                    self.assertIn("net.http.max_header_size", msg)
                    self.assertIn("16384", msg)
        self.assertEqual(self.get("ob", "hdr").content, b"small")
        # just under the limit is fine
        r = self.s.get(self.url + "/v1/objects/ob/hdr", headers={"X-Big": "a" * 15000})
        self.assertEqual((r.status_code, r.content), (200, b"small"))

    def test_truncated_upload_creates_nothing(self):
        s = socket.create_connection(("127.0.0.1", self.node.port))
        s.sendall(b"PUT /v1/objects/ob/trunc HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + b"z" * 5000)
        s.shutdown(socket.SHUT_WR)
        try:
            s.recv(1000)
        except OSError:
            pass
        s.close()
        time.sleep(0.3)
        self.assertEqual(self.get("ob", "trunc").status_code, 404)
        # an existing object survives a truncated overwrite
        self.put("ob", "trunc2", b"original")
        s = socket.create_connection(("127.0.0.1", self.node.port))
        s.sendall(b"PUT /v1/objects/ob/trunc2 HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n" + b"z" * 5000)
        s.close()
        time.sleep(0.3)
        self.assertEqual(self.get("ob", "trunc2").content, b"original")
        # no work files left behind
        wk = os.path.join(self.node.dir, "mp1", "@ais", "ob", "%wk")
        wait_until(lambda: not os.path.isdir(wk) or os.listdir(wk) == [], 5, what="work dir empty")

    def test_chunked_upload(self):
        def gen():
            for i in range(10):
                yield os.urandom(10000) if i == 0 else b"q" * 10000
        r = self.s.put(self.url + "/v1/objects/ob/chunked", data=gen())
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(len(self.get("ob", "chunked").content), 100000)

    def test_method_not_allowed(self):
        r = self.s.request("OPTIONS", self.url + "/v1/objects/ob/x")
        self.assertEqual(r.status_code, 405)
        self.assertIn("Allow", r.headers)


class TestListing(NodeTest):
    mountpaths = 3

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.s.post(cls.url + "/v1/buckets/ls", data=json.dumps({"action": "create-bck"}),
                   headers={"Content-Type": "application/json"})
        cls.names = sorted(["d%d/f%04d.txt" % (i % 7, i) for i in range(2500)] + ["top%d" % i for i in range(30)])
        from concurrent.futures import ThreadPoolExecutor
        with ThreadPoolExecutor(16) as ex:
            list(ex.map(lambda n: cls.s.put(cls.url + "/v1/objects/ls/" + quote(n), data=n.encode()), cls.names))

    def test_all_sorted_paged(self):
        got = self.list_all("ls", pagesize=1000)
        self.assertEqual(got, self.names)
        # pages are cut at pagesize with the last name as the token
        r = self.list_objects("ls", pagesize=1000).json()
        self.assertEqual(len(r["entries"]), 1000)
        self.assertEqual(r["continuation_token"], r["entries"][-1]["name"])
        self.assertTrue(r["uuid"])
        # the final page has an empty token
        r = self.list_objects("ls", pagesize=100000).json()
        self.assertEqual(r["continuation_token"], "")
        self.assertEqual(len(r["entries"]), len(self.names))

    def test_prefix_start_after(self):
        got = self.list_all("ls", prefix="d3/")
        self.assertEqual(got, [n for n in self.names if n.startswith("d3/")])
        got = self.list_all("ls", start_after="d6/f2400.txt")
        self.assertEqual(got, [n for n in self.names if n > "d6/f2400.txt"])
        self.assertEqual(self.list_all("ls", prefix="nothing-here"), [])

    def test_props_and_flags(self):
        r = self.list_objects("ls", prefix="top1", props="name,size,checksum,atime,version,location,custom").json()
        e = r["entries"][0]
        self.assertEqual(e["name"], "top1")
        self.assertEqual(e["size"], "4")
        self.assertEqual(e["checksum"], xxh(b"top1"))
        self.assertIn("version", e)
        self.assertTrue(e["location"].startswith("t["))
        self.assertRegex(e["atime"], r"^\d\d [A-Z][a-z][a-z] \d\d \d\d:\d\d UTC$")
        r = self.list_objects("ls", prefix="top1", flags="16").json()  # name-only
        self.assertEqual(set(r["entries"][0]), {"name"})
        r = self.list_objects("ls", props="bogus")
        self.assertEqual(r.status_code, 400)
        r = self.list_objects("ls", flags="abc")
        self.assertEqual(r.status_code, 400)
        r = self.list_objects("ls", pagesize="ten")
        self.assertEqual(r.status_code, 400)

    def test_no_recursion(self):
        r = self.list_objects("ls", flags=str(2048), pagesize=100000).json()
        names = [e["name"] for e in r["entries"]]
        self.assertEqual(names, ["d%d/" % i for i in range(7)] + sorted("top%d" % i for i in range(30)))
        self.assertTrue(all(e.get("flags", 0) & 256 for e in r["entries"] if e["name"].endswith("/")))
        # no-dirs does not hide them in a non-recursive listing of an ais:// bucket (AIStore's code, which its
        # clients follow); in a recursive one there are none to hide
        r = self.list_objects("ls", flags=str(2048 | 8192), pagesize=100000).json()
        self.assertEqual([e["name"] for e in r["entries"]], names)
        r = self.list_objects("ls", flags=str(8192), prefix="d1", pagesize=100000).json()
        self.assertTrue(r["entries"] and all(not e["name"].endswith("/") for e in r["entries"]))

    def test_msgpack(self):
        r = self.list_objects("ls", msgpack=True, pagesize=10, props="name,size,checksum,version")
        self.assertEqual(r.headers["Content-Type"], "application/msgpack")
        m = msgpack.unpackb(r.content, raw=False)
        self.assertEqual(list(m.keys()), ["UUID", "ContinuationToken", "Entries", "Flags"])
        self.assertEqual(len(m["Entries"]), 10)
        e = m["Entries"][0]
        self.assertEqual(list(e.keys())[0], "n")
        self.assertIsInstance(e["s"], int)
        self.assertEqual(set(e) - {"n", "cs", "a", "v", "t", "m", "s", "c", "f"}, set())
        self.assertEqual(m["ContinuationToken"], m["Entries"][-1]["n"])
        r = self.list_objects("ls", msgpack=True, prefix="none-such")
        self.assertIsNone(msgpack.unpackb(r.content)["Entries"])

    def test_stable_under_concurrent_puts(self):
        stop = threading.Event()
        errors = []

        def writer():
            i = 0
            s = requests.Session()
            while not stop.is_set() and i < 3000:
                n = "d%d/new-%05d" % (i % 7, i)
                r = s.put(self.url + "/v1/objects/ls/" + n, data=b"n")
                if r.status_code != 200:
                    errors.append(r.text)
                i += 1

        t = threading.Thread(target=writer)
        t.start()
        try:
            got = self.list_all("ls", pagesize=97)
        finally:
            stop.set()
            t.join(60)
        self.assertEqual(errors, [])
        self.assertEqual(got, sorted(got))
        self.assertEqual(len(got), len(set(got)))
        for n in self.names:  # everything that existed before the listing is there exactly once
            self.assertIn(n, got)


class TestConfig(NodeTest):
    def test_check_config_reads_the_certificates(self):
        """--check-config with use_https reads the certificate and key as the start would (it said
        "configuration OK" with the files missing)"""
        import subprocess
        d = tempfile.mkdtemp(prefix="shale-chk-", dir=self.tmp)
        crt, key, key2 = (os.path.join(d, n) for n in ("n.crt", "n.key", "other.key"))
        for k, c in ((key, crt), (key2, None)):
            args = ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", k, "-days", "1",
                    "-subj", "/CN=127.0.0.1", "-out", c or os.path.join(d, "other.crt")]
            subprocess.run(args, check=True, capture_output=True)

        def check(c, k, ca=""):
            sets = ["net.http.use_https=true", "net.http.server_crt=" + c, "net.http.server_key=" + k]
            if ca:
                sets.append("net.http.client_ca_tls=" + ca)
            cmd = [SHALED, "--check-config", "--fspath", d]
            for s in sets:
                cmd += ["--set", s]
            return subprocess.run(cmd, capture_output=True, text=True)
        r = check(crt, key)
        self.assertEqual((r.returncode, r.stdout.strip()), (0, "configuration OK"), r.stderr)
        r = check(os.path.join(d, "missing.crt"), key)
        self.assertEqual(r.returncode, 2)
        self.assertIn("cannot read the certificate %s/missing.crt (net.http.server_crt)" % d, r.stderr)
        r = check(crt, key2)
        self.assertEqual(r.returncode, 2)
        self.assertIn("does not belong to certificate", r.stderr)
        r = check(crt, key, ca=os.path.join(d, "no-ca.pem"))
        self.assertEqual(r.returncode, 2)
        self.assertIn("net.http.client_ca_tls", r.stderr)

    def test_unknown_key_rejected(self):
        p = os.path.join(self.tmp, "bad.json")
        with open(p, "w") as f:
            json.dump({"checksum": {"tpye": "md5"}, "confdir": "/tmp/x", "fspaths": ["/tmp/x"]}, f)
        import subprocess
        r = subprocess.run([SHALED, "--config", p, "--check-config"], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn('unknown configuration key "checksum.tpye"', r.stderr)
        self.assertIn("type", r.stderr)  # lists the valid keys
        with open(p, "w") as f:
            json.dump({"log": {"level": "loud"}, "confdir": "/tmp/x", "fspaths": ["/tmp/x"]}, f)
        r = subprocess.run([SHALED, "--config", p, "--check-config"], capture_output=True, text=True)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("log.level", r.stderr)
        with open(p, "w") as f:
            json.dump({"log": {"level": 3}, "confdir": "/tmp/x", "fspaths": ["/tmp/x"]}, f)
        r = subprocess.run([SHALED, "--config", p, "--set", "log.level=2", "--check-config"], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        r = subprocess.run([SHALED, "--config", p, "--set", "log.level=two", "--check-config"], capture_output=True,
                           text=True)
        self.assertIn("log.level", r.stderr)
        r = subprocess.run([SHALED, "--set", "nosuch.key=1", "--check-config", "--fspath", "/tmp/x"],
                           capture_output=True, text=True)
        self.assertIn('unknown configuration key "nosuch.key"', r.stderr)
        self.assertIn('section "nosuch" does not exist; valid sections: ', r.stderr)
        self.assertIn("checksum", r.stderr)
        with open(p, "w") as f:
            f.write('{"checksum": {')
        r = subprocess.run([SHALED, "--config", p, "--check-config"], capture_output=True, text=True)
        self.assertIn("line", r.stderr)

    def test_set_config_runtime(self):
        r = self.s.put(self.url + "/v1/cluster", data=json.dumps({"action": "set-config", "value": {
            "checksum": {"type": "md5"}}}), headers={"Content-Type": "application/json"})
        self.assertEqual(r.status_code, 200, r.text)
        cfg = self.s.get(self.url + "/v1/daemon?what=config").json()
        self.assertEqual(cfg["checksum"]["type"], "md5")
        self.create_bucket("cfgb")
        r = self.s.head(self.url + "/v1/buckets/cfgb")
        self.assertEqual(json.loads(r.headers["Ais-Bucket-Props"])["checksum"]["type"], "md5")
        r = self.s.put(self.url + "/v1/cluster", data=json.dumps({"action": "set-config", "value": {
            "checksum": {"type": "bogus"}}}), headers={"Content-Type": "application/json"})
        self.assertEqual(r.status_code, 400)
        r = self.s.put(self.url + "/v1/cluster", data=json.dumps({"action": "set-config", "value": {
            "host_net": {"port": 1}}}), headers={"Content-Type": "application/json"})
        self.assertEqual(r.status_code, 400)
        r = self.s.put(self.url + "/v1/cluster/set-config", params={"checksum.type": "xxhash2"})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.s.get(self.url + "/v1/daemon?what=config").json()["checksum"]["type"], "xxhash2")
        # space.out_of_space takes effect at once (it used to be read at start only): at 1% every PUT is
        # refused with 507, back at 95% they go through. The watermarks keep their order (lowwm <= highwm <=
        # out_of_space), so they move together
        low = {"space.lowwm": "1", "space.highwm": "1", "space.out_of_space": "1"}
        r = self.s.put(self.url + "/v1/cluster/set-config", params={"space.out_of_space": "1"})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("lowwm <= highwm <= out_of_space", r.text)
        r = self.s.put(self.url + "/v1/cluster/set-config", params=low)
        self.assertEqual(r.status_code, 200, r.text)
        r = self.s.put(self.url + "/v1/objects/cfgb/full", data=b"x")
        self.assertEqual(r.status_code, 507, r.text)
        self.assertIn("space.out_of_space=1%", r.text)
        r = self.s.put(self.url + "/v1/cluster/set-config", params={"space.lowwm": "75", "space.highwm": "90",
                                                                    "space.out_of_space": "95"})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.s.put(self.url + "/v1/objects/cfgb/full", data=b"x").status_code, 200)
        # a key nothing reads cannot be changed; one read at start says so
        r = self.s.put(self.url + "/v1/cluster/set-config", params={"net.http.chunked_transfer": "false"})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("no effect", r.text)
        # HTTPS without a certificate is refused, and changes nothing
        r = self.s.put(self.url + "/v1/cluster/set-config", params={"net.http.use_https": "true"})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("needs net.http.server_crt", r.text)
        self.assertFalse(self.s.get(self.url + "/v1/daemon", params={"what": "config"}).json()["net"]["http"]
                         ["use_https"])
        r = self.s.put(self.url + "/v1/cluster/set-config", params={"net.http.max_json_body": "8MiB",
                                                                    "net.http.workers": "6"})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.json()["restart_required"], ["net.http.workers"])


class TestRestart(NodeTest):
    def test_data_survives_restart(self):
        self.create_bucket("rs")
        for i in range(50):
            self.put("rs", "o%d" % i, b"v%d" % i)
        smap1 = self.s.get(self.url + "/v1/daemon?what=smap").json()
        self.node.restart()
        self.s = type(self.s)()
        for i in range(50):
            self.assertEqual(self.get("rs", "o%d" % i).content, b"v%d" % i)
        smap2 = self.s.get(self.url + "/v1/daemon?what=smap").json()
        self.assertEqual(smap1["uuid"], smap2["uuid"])
        self.assertEqual(list(smap1["tmap"]), list(smap2["tmap"]))  # same node id
        self.assertIn("fsck", self.node.log())

    def test_file_key_the_persisted_config_overrides_is_named(self):
        """a cluster key edited in the file after a set-config changed it: the node starts with the cluster's value
        (persisted, newer) and says so, naming the key and both values; a key the file leaves alone is not named"""
        n = Node(self.tmp, "ovr", extra_config={"checksum": {"type": "md5"}}).start()
        try:
            r = requests.put(n.url + "/v1/cluster/set-config", params={"checksum.type": "sha256",
                                                                        "log.level": "3"}, timeout=30)
            self.assertEqual(r.status_code, 200, r.text)
            n.restart()
            self.assertEqual(requests.get(n.url + "/v1/daemon?what=config", timeout=30).json()["checksum"]["type"],
                             "sha256")
            log = n.log()
            self.assertIn('overrides 1 key of the configuration file: checksum.type (file: "md5", in effect: '
                          '"sha256")', log)
            self.assertNotIn("log.level (file", log)
            self.assertIn("shale config cluster KEY=VALUE", log)
        finally:
            n.stop()


if __name__ == "__main__":
    main()
