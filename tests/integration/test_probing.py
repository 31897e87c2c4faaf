# SPDX-License-Identifier: MIT
"""Defects found by probing a running cluster from outside: odd bytes on the wire, over-size metadata, junk
ranges and peer payloads, shutdown with a dead primary. Each test sends what the probe sent and checks that the
node refuses it cleanly and changes nothing."""
import concurrent.futures
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

import requests

from harness import Cluster, Node, NodeTest, SHALED, _zombie, cluster_sig, main, start_cluster, stop_cluster, wait_until


def raw_request(port, data, timeout=10):
    """Send data as is on a new connection; return everything the node answers until it closes (bounded)."""
    so = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out = b""
    deadline = time.time() + timeout
    try:
        try:
            so.sendall(data)
        except (ConnectionResetError, BrokenPipeError):
            pass  # a node may answer and close before it has read all we send: read the answer
        while time.time() < deadline:
            d = so.recv(65536)
            if not d:
                break
            out += d
    except (socket.timeout, ConnectionResetError):
        pass
    finally:
        so.close()
    return out


def status_of(reply):
    """The status code of a raw HTTP reply (0: empty reply)."""
    if not reply.startswith(b"HTTP/1."):
        return 0
    return int(reply.split(b" ", 2)[1])


class ProbeNodeTest(NodeTest):
    """A standalone node: request-level defects."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        r = cls.s.post(cls.url + "/v1/buckets/pb", params={"provider": "ais"},
                       json={"action": "create-bck", "name": "", "value": None}, timeout=30)
        assert r.status_code == 200, r.text

    def head_status(self, bucket, obj):
        return self.s.head(self.url + "/v1/objects/%s/%s" % (bucket, obj), params={"provider": "ais"},
                           timeout=30).status_code

    # 3. a raw NUL in the request line named another object
    def test_nul_in_request_line(self):
        for q in (b"", b"?provider=ais"):
            reply = raw_request(self.node.port, b"PUT /v1/objects/pb/zz\x00evil" + q + b" HTTP/1.1\r\nHost: x\r\n"
                                b"Content-Length: 1\r\nConnection: close\r\n\r\nx")
            self.assertEqual(status_of(reply), 400, reply[:300])
            self.assertIn(b"NUL", reply)
        self.assertEqual(self.head_status("pb", "zz"), 404, "the object before the NUL was stored")
        # a target with spaces (tolerated by the parser) is not mistaken for one with a NUL
        reply = raw_request(self.node.port, b"PUT /v1/objects/pb/okay  HTTP/1.1\r\nHost: x\r\n"
                            b"Content-Length: 1\r\nConnection: close\r\n\r\nx")
        self.assertEqual(status_of(reply), 200, reply[:300])
        self.assertEqual(self.head_status("pb", "okay%20"), 200)  # (the name keeps the space)

    def custom_md(self, obj):
        r = self.s.head(self.url + "/v1/objects/pb/" + obj, params={"provider": "ais", "props": "custom"},
                        timeout=30)
        self.assertEqual(r.status_code, 200, r.headers)
        return r.headers.get("Ais-Custom-Md", "")

    # 1. ~7.7 KB of Ais-Custom-Md: the object was stored and the answer was empty
    def test_custom_md_header_too_big(self):
        many = ",".join("a%d=1" % i for i in range(1300))             # what the probe sent (9 KB, many keys)
        big = ",".join("k%d=%s" % (i, "v" * 60) for i in range(120))  # 7.7 KB, fewer keys
        for name, md in (("cm1", many), ("cm2", big), ("cm3", "k=" + "v" * 7700)):
            reply = raw_request(self.node.port, ("PUT /v1/objects/pb/%s HTTP/1.1\r\nHost: x\r\nAis-Custom-Md: %s\r\n"
                                                 "Content-Length: 1\r\nConnection: close\r\n\r\nx" % (name, md)).encode())
            self.assertEqual(status_of(reply), 400, "%s: %r" % (name, reply[:300]))
            self.assertRegex(reply, rb"at most (8192|64|2048)", name)
            self.assertEqual(self.head_status("pb", name), 404, "%s was stored" % name)
        # far over even libmicrohttpd's buffer: its own 431, nothing stored
        reply = raw_request(self.node.port, ("PUT /v1/objects/pb/cm4 HTTP/1.1\r\nHost: x\r\nAis-Custom-Md: k=%s\r\n"
                                             "Content-Length: 1\r\nConnection: close\r\n\r\nx" % ("v" * 100000)).encode())
        self.assertEqual(status_of(reply), 431, reply[:300])
        self.assertEqual(self.head_status("pb", "cm4"), 404)
        # at the limits: stored, and every byte comes back (a value was cut at 1 KiB in the answer)
        val = "w" * 2048
        r = self.put("pb", "cm5", b"x", headers={"Ais-Custom-Md": "big=%s,small=1" % val})
        self.assertEqual(r.status_code, 200, r.text)
        md = self.custom_md("cm5")
        self.assertIn("big=" + val, md)
        self.assertIn("small=1", md)
        r = self.put("pb", "cm6", b"x", headers={"Ais-Custom-Md": "big=%s" % (val + "w")})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("at most 2048", r.json()["message"])
        r = self.put("pb", "cm7", b"x", headers={"Ais-Custom-Md": ",".join("e%d=1" % i for i in range(65))})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("at most 64", r.json()["message"])
        self.assertEqual(self.head_status("pb", "cm6"), 404)
        self.assertEqual(self.head_status("pb", "cm7"), 404)

    # 2. a 15 MiB custom-metadata value (PATCH, JSON) was taken and came back cut
    def test_custom_md_json_too_big(self):
        r = self.put("pb", "cj", b"x", headers={"Ais-Custom-Md": "k1=v1"})
        self.assertEqual(r.status_code, 200, r.text)

        def patch(value, params=None):
            return self.s.patch(self.url + "/v1/objects/pb/cj", params=dict(params or {}, provider="ais"),
                                data=json.dumps({"action": "", "value": value}),
                                headers={"Content-Type": "application/json"}, timeout=120)

        r = patch({"huge": "v" * (15 << 20)})
        self.assertEqual(r.status_code, 400, r.text[:300])
        self.assertIn("at most 2048", r.json()["message"])
        for bad, why in (({"k": "a\r\nX-Evil: 1"}, "control"), ({"": "v"}, "invalid"), ({"a=b": "v"}, "invalid"),
                         ({"k" * 129: "v"}, "at most 128"), ({"e%d" % i: "1" for i in range(65)}, "at most 64")):
            r = patch(bad)
            self.assertEqual(r.status_code, 400, "%s: %s" % (why, r.text[:300]))
            self.assertIn(why, r.json()["message"])
        # each PATCH within the limits, but merged with what is there over the total
        for i in range(6):
            r = patch({"p%d" % i: "v" * 1200})
            self.assertEqual(r.status_code, 200, r.text)
        r = patch({"p6": "v" * 1200})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("at most 8192", r.json()["message"])
        md = self.custom_md("cj")
        self.assertIn("k1=v1", md)
        self.assertIn("p2=" + "v" * 1200, md)
        self.assertNotIn("p6=", md)
        # replacing (set-new-custom) is checked on its own
        r = patch({"p3": "v" * 1200}, {"set-new-custom": "true"})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.custom_md("cj"), "p3=" + "v" * 1200)

    def test_s3_metadata_too_big(self):
        meta = {"x-amz-meta-m%d" % i: "v" * 100 for i in range(25)}  # 2.6 KB: over S3's 2 KiB
        r = self.s.post(self.url + "/s3/pb/mp1?uploads", headers=meta, timeout=30)
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("MetadataTooLarge", r.text)
        r = self.put("pb", "src", b"x")
        self.assertEqual(r.status_code, 200, r.text)
        h = dict(meta, **{"x-amz-copy-source": "/pb/src", "x-amz-metadata-directive": "REPLACE"})
        r = self.s.put(self.url + "/s3/pb/cp1", headers=h, timeout=30)
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("MetadataTooLarge", r.text)
        self.assertEqual(self.head_status("pb", "cp1"), 404)

    def buckets(self):
        r = self.s.get(self.url + "/v1/buckets", params={"provider": "ais"}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        return sorted(b["name"] for b in r.json())

    # 4. "a%2fb" as a bucket name created bucket "a" ("a%2f" too)
    def test_encoded_slash_in_bucket_name(self):
        before = self.buckets()
        for path in ["/v1/buckets/sa%2fb", "/v1/buckets/sb%2F", "/v1/buckets/sc%2f%2f", "/ais/sd%2f"]:
            r = self.s.post(self.url + path, params={"provider": "ais"},
                            json={"action": "create-bck", "name": "", "value": None}, timeout=30)
            self.assertEqual(r.status_code, 400, "%s: %s" % (path, r.text))
            self.assertIn("bucket names may not contain '/'", r.json()["message"], path)
        for path in ["/s3/se%2fb", "/s3/sfff%2f"]:  # S3 CreateBucket
            r = self.s.put(self.url + path, timeout=30)
            self.assertEqual(r.status_code, 400, "%s: %s" % (path, r.text))
            self.assertIn("<Code>InvalidBucketName</Code>", r.text)
        self.assertEqual(self.buckets(), before, "a bucket was created")
        # objects: an encoded slash in the bucket part is refused, in the object name it is a '/'
        r = self.s.put(self.url + "/v1/objects/pb%2Fx/o", params={"provider": "ais"}, data=b"x", timeout=30)
        self.assertEqual(r.status_code, 400, r.text)
        r = self.s.put(self.url + "/s3/pb%2Fx/o2", data=b"x", timeout=30)
        self.assertEqual(r.status_code, 400, r.text)
        self.assertEqual(self.head_status("pb", "x/o"), 404)
        self.assertEqual(self.head_status("pb", "x/o2"), 404)
        r = self.s.put(self.url + "/v1/objects/pb/d%2Fo", params={"provider": "ais"}, data=b"x", timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.head_status("pb", "d/o"), 200)
        # a literal trailing '/' after a bucket name stays fine
        r = self.s.post(self.url + "/v1/buckets/sg/", params={"provider": "ais"},
                        json={"action": "create-bck", "name": "", "value": None}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertIn("sg", self.buckets())

    # 5. "bytes=--5" was served as 206 with the whole object
    def test_invalid_ranges(self):
        r = self.put("pb", "rng", b"0123456789")
        self.assertEqual(r.status_code, 200, r.text)

        def get(path, rg):
            reply = raw_request(self.node.port, ("GET %s HTTP/1.1\r\nHost: x\r\nRange: %s\r\nConnection: close"
                                                 "\r\n\r\n" % (path, rg)).encode())
            return status_of(reply), reply.split(b"\r\n\r\n", 1)[-1]

        junk = ["bytes=--5", "bytes=5-3", "bytes=abc", "bytes=1-2-3", " bytes = 0-1", "bytes=", "bytes=-",
                "bytes=- 5", "bytes=+1-2", "items=0-1"]
        for rg in junk:
            # native API, as AIStore: 416 naming the header, never a partial or whole-object 206
            st, body = get("/v1/objects/pb/rng", rg)
            self.assertEqual(st, 416, "%r: %s" % (rg, body[:200]))
            self.assertIn(b"invalid range", body, rg)
            # S3, as AWS S3: an invalid Range is ignored, the whole object is 200
            st, body = get("/s3/pb/rng", rg)
            self.assertEqual((st, body), (200, b"0123456789"), rg)
        for rg in ["bytes=-0", "bytes=10-", "bytes=99999999999999999999999-"]:  # valid, not satisfiable
            self.assertEqual(get("/v1/objects/pb/rng", rg)[0], 416, rg)
            self.assertEqual(get("/s3/pb/rng", rg)[0], 416, rg)
        for rg, want in [("bytes=0-1", b"01"), ("bytes=-3", b"789"), ("bytes=7-", b"789"), ("bytes=8-99", b"89"),
                         ("BYTES=1-1", b"1"), ("bytes=-99", b"0123456789")]:
            self.assertEqual(get("/v1/objects/pb/rng", rg), (206, want), rg)
            self.assertEqual(get("/s3/pb/rng", rg), (206, want), rg)
        # several ranges: 416 (native), the whole object (S3)
        self.assertEqual(get("/v1/objects/pb/rng", "bytes=0-1,3-4")[0], 416)
        self.assertEqual(get("/s3/pb/rng", "bytes=0-1,3-4"), (200, b"0123456789"))


class ProbeClusterTest(unittest.TestCase):
    """1 gateway + 2 targets: intra-cluster endpoints."""

    @classmethod
    def setUpClass(cls):
        start_cluster(cls, targets=2)

    @classmethod
    def tearDownClass(cls):
        stop_cluster(cls)

    def versions(self, url):
        out = {}
        for what in ("smap", "bmd", "config"):
            r = self.s.get(url + "/v1/daemon", params={"what": what}, timeout=10)
            self.assertEqual(r.status_code, 200, r.text)
            j = r.json()
            out[what] = str(j.get("version", j.get("config_version")))
        return out

    # 6. PUT /v1/metasync answered 200 to junk (and an Smap without the node made it shut down)
    def test_metasync_junk(self):
        smap = self.c.smap()
        pid = smap["proxy_si"]["daemon_id"]
        tid = sorted(smap["tmap"])[0]
        turl = smap["tmap"][tid]["public_net"]["direct_url"]
        name = [n["name"] for n in self.c.topology()["nodes"] if n["role"] == "target"][0]
        secret = os.path.join(self.c.dir, name, "cluster.secret")
        before = self.versions(turl)
        self.assertNotIn("None", before.values())
        bodies = [b"junk", b"[]", b"{}", b'{"uuid": "%s"}' % smap["uuid"].encode(), b'{"foo": 1}',
                  b'{"smap": "x"}', b'{"smap": {"version": "100"}}', b'{"bmd": {"version": "99"}, "foo": {}}',
                  b'{"bmd": 5}', b'{"rmd": {"version": 7}}', b'{"config": {"version": 99, "log": {"level": "x"}}}',
                  b'{"etlmd": {}}', b'{"smap": {"version": "100", "uuid": "other", "proxy_si": {"daemon_id": "p"},'
                  b' "pmap": {}, "tmap": {}}}']
        for body in bodies:
            url = turl + "/v1/metasync"
            h = cluster_sig(secret, "PUT", url, node_id=pid, body=body)
            r = self.s.put(url, data=body, headers=dict(h, **{"Content-Type": "application/json"}), timeout=10)
            self.assertEqual(r.status_code, 400, "%r: %s" % (body, r.text))
            self.assertIn("message", r.json())
        self.assertEqual(self.versions(turl), before)
        self.assertEqual(self.s.get(turl + "/v1/health", timeout=10).status_code, 200, "the target went away")
        # what the primary sends is still taken: a new bucket reaches the target
        r = self.s.post(self.c.url + "/v1/buckets/msync", params={"provider": "ais"},
                        json={"action": "create-bck", "name": "", "value": None}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        wait_until(lambda: int(self.versions(turl)["bmd"]) > int(before["bmd"]), 10, what="BMD at the target")
        self.assertNotIn("metasync to", self.c.log("p0"), "a push of the primary was refused")


class StopWithoutPrimaryTest(unittest.TestCase):
    """7. With the primary gateway dead (or hung), a target ignored SIGTERM: one starting up waited to join for
    timeout.join_startup_time (3m) with the signal blocked."""

    STOP_S = 5

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="shale-test-")
        self.c = Cluster(self.tmp, proxies=1, targets=2).start()
        self.procs = []
        wait_until(lambda: len(self.c.smap()["tmap"]) == 2, 30, what="2 targets")

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()
                p.wait(10)
        pid = self.c.pid("p0")
        if pid and os.path.exists("/proc/%d" % pid):
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        self.c.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def term_running(self, name):
        """SIGTERM a node the playground started; seconds until it is gone"""
        pid = self.c.pid(name)
        self.assertTrue(pid)
        t0 = time.time()
        os.kill(pid, signal.SIGTERM)
        wait_until(lambda: not os.path.exists("/proc/%d" % pid) or _zombie(pid), self.STOP_S + 10,
                   what="%s to exit" % name)
        return time.time() - t0

    def restart_and_term(self, name):
        """start the (stopped) target again, SIGTERM it while it waits for the primary: (exit code, seconds)"""
        with open(os.path.join(self.tmp, name + ".out"), "ab") as out:
            p = subprocess.Popen([SHALED, "--config", os.path.join(self.c.dir, name, "shale.json"), "--role",
                                  "target", "--bind", "127.0.0.1"], stdout=out, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL)
        self.procs.append(p)
        log = os.path.join(self.c.dir, name, "log", "shaled.log")
        wait_until(lambda: "waiting for the primary" in open(log, errors="replace").read().split(" starting: ")[-1],
                   20, what="%s waiting for the primary" % name)
        time.sleep(1)  # in the middle of an attempt
        t0 = time.time()
        p.send_signal(signal.SIGTERM)
        try:
            rc = p.wait(self.STOP_S + 10)
        except subprocess.TimeoutExpired:
            rc = None
        return rc, time.time() - t0

    def test_stop_with_primary_hung_then_dead(self):
        ppid = self.c.pid("p0")
        # hung primary: connections are accepted (backlog), nothing is answered
        os.kill(ppid, signal.SIGSTOP)
        self.assertLess(self.term_running("t0"), self.STOP_S)
        rc, dt = self.restart_and_term("t0")
        self.assertEqual(rc, 0, self.c.log("t0")[-2000:])
        self.assertLess(dt, self.STOP_S, "a target waiting for a hung primary took %.1fs to stop" % dt)
        # dead primary: connections refused
        os.kill(ppid, signal.SIGCONT)
        self.c.kill9("p0")
        self.assertLess(self.term_running("t1"), self.STOP_S)
        rc, dt = self.restart_and_term("t1")
        self.assertEqual(rc, 0, self.c.log("t1")[-2000:])
        self.assertLess(dt, self.STOP_S, "a target waiting for a dead primary took %.1fs to stop" % dt)
        self.assertIn("stopped while waiting to join", self.c.log("t1"))
        self.assertTrue(self.c.log("t1").rstrip().endswith("stopped"), self.c.log("t1")[-500:])


class UnknownBucketHungPrimaryTest(unittest.TestCase):
    """8. A target asked for a bucket it did not know pulled the BMD from the primary on the HTTP thread: with the
    primary hung, each such request held one of the target's (few) poll loops for the control-plane timeout,
    and every other client of that loop waited."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="shale-test-")
        self.c = Cluster(self.tmp, proxies=1, targets=1).start()
        wait_until(lambda: len(self.c.smap()["tmap"]) == 1, 30, what="1 target")
        self.ppid = self.c.pid("p0")

    def tearDown(self):
        try:
            os.kill(self.ppid, signal.SIGCONT)
        except OSError:
            pass
        self.c.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_unknown_bucket_with_primary_hung(self):
        import threading
        r = requests.post(self.c.url + "/v1/buckets/known", json={"action": "create-bck"}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        r = requests.put(self.c.url + "/v1/objects/known/o", data=b"x" * 1024, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        smap = self.c.smap()
        turl = list(smap["tmap"].values())[0]["public_net"]["direct_url"]
        self.assertEqual(requests.get(turl + "/v1/objects/known/o", timeout=10).status_code, 200)
        os.kill(self.ppid, signal.SIGSTOP)  # connections are accepted, nothing is answered
        res = {}

        def unknown(i):
            # half as a client would send it, half as if a gateway had redirected it (pid=)
            q = "?pid=%s" % smap["proxy_si"]["daemon_id"] if i % 2 else ""
            t0 = time.time()
            try:
                st = requests.get("%s/v1/objects/nosuch%d/x%s" % (turl, i, q), timeout=60).status_code
            except requests.RequestException as e:
                st = str(e)
            res[i] = (st, time.time() - t0)
        ts = [threading.Thread(target=unknown, args=(i,)) for i in range(8)]
        for t in ts:
            t.start()
        time.sleep(0.3)
        # the target's other clients go on: 20 GETs of a known object
        t0 = time.time()
        for _ in range(20):
            r = requests.get(turl + "/v1/objects/known/o", timeout=60)
            self.assertEqual(r.status_code, 200, r.text)
        dt = time.time() - t0
        for t in ts:
            t.join(90)
        self.assertLess(dt, 2.0, "20 GETs of a known object took %.1fs while unknown buckets were asked for" % dt)
        for i, (st, secs) in sorted(res.items()):
            self.assertEqual(st, 404, "request %d: %s" % (i, st))
            if i % 2 == 0:  # not redirected: answered from the BMD there is, at once
                self.assertLess(secs, 2.0, "request %d waited %.1fs" % (i, secs))


class SlowDiskTest(unittest.TestCase):
    """A PUT, DELETE or PATCH waited for its metadata commit on the HTTP thread: with every group commit slowed
    to 2 s (SHALE_TEST_MD_COMMIT_DELAY_MS, a slow disk), a few of them held both poll loops and a health
    check or a GET of another object waited seconds."""

    DELAY_MS = 2000

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="shale-test-")
        self.node = Node(self.tmp, extra_config={"net": {"http": {"workers": 2}}}).start(
            env={"SHALE_TEST_MD_COMMIT_DELAY_MS": str(self.DELAY_MS)})
        self.url = self.node.url
        r = requests.post(self.url + "/v1/buckets/sd", json={"action": "create-bck", "name": "", "value": None},
                          timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        # the PUTs share group commits: about one delay for all of them
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            for r in ex.map(lambda i: requests.put(self.url + "/v1/objects/sd/o%d" % i, data=b"x" * 100,
                                                   timeout=30), range(8)):
                self.assertEqual(r.status_code, 200, r.text)

    def tearDown(self):
        self.node.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def check_not_blocked(self, send):
        with concurrent.futures.ThreadPoolExecutor(6) as ex:
            slow = [ex.submit(send, i) for i in range(6)]
            time.sleep(0.3)  # all six are waiting on the slowed commit now
            t0 = time.time()
            r = requests.get(self.url + "/v1/health", timeout=30)
            health = time.time() - t0
            self.assertEqual(r.status_code, 200)
            t0 = time.time()
            r = requests.get(self.url + "/v1/objects/sd/o7", timeout=30)
            get = time.time() - t0
            self.assertEqual(r.status_code, 200)
            for f in slow:
                self.assertEqual(f.result().status_code, 200, f.result().text)
        self.assertLess(health, self.DELAY_MS / 2000.0, "a health check waited on other requests' commits")
        self.assertLess(get, self.DELAY_MS / 2000.0, "a GET waited on other requests' commits")

    def test_delete_does_not_hold_http_threads(self):
        self.check_not_blocked(lambda i: requests.delete(self.url + "/v1/objects/sd/o%d" % i, timeout=30))
        self.assertEqual(requests.head(self.url + "/v1/objects/sd/o0", timeout=30).status_code, 404)

    def test_put_does_not_hold_http_threads(self):
        self.check_not_blocked(lambda i: requests.put(self.url + "/v1/objects/sd/n%d" % i, data=b"y" * 1000,
                                                      timeout=30))
        self.assertEqual(requests.get(self.url + "/v1/objects/sd/n5", timeout=30).content, b"y" * 1000)

    def test_patch_does_not_hold_http_threads(self):
        self.check_not_blocked(lambda i: requests.patch(
            self.url + "/v1/objects/sd/o%d" % i, json={"action": "", "value": {"k": "v%d" % i}}, timeout=30))
        r = requests.head(self.url + "/v1/objects/sd/o3", timeout=30)
        self.assertIn("k=v3", r.headers.get("Ais-Custom-Md", ""))


class ConnLimitsTest(NodeTest):
    """8. No header-read timeout (idle half-requests stayed for net.http.idle_conn_time and filled the node's
    connections); no per-client cap."""

    extra_config = {"net": {"http": {"header_timeout": "2s", "idle_conn_time": "60s"}}}

    def test_header_timeout(self):
        socks = []
        try:
            for _ in range(200):
                so = socket.create_connection(("127.0.0.1", self.node.port), timeout=10)
                so.sendall(b"GET /v1/hea")  # half a request line, then nothing
                socks.append(so)
            # a keep-alive connection that finished a request may idle longer (net.http.idle_conn_time)
            ka = socket.create_connection(("127.0.0.1", self.node.port), timeout=10)
            socks.append(ka)
            ka.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertTrue(ka.recv(1000).startswith(b"HTTP/1.1 200"))
            t0 = time.time()
            r = requests.get(self.url + "/v1/health", timeout=5)
            self.assertEqual(r.status_code, 200)
            self.assertLess(time.time() - t0, 1.0, "health was slow with idle connections open")
            t0 = time.time()

            def all_closed():
                for so in socks[:-1]:
                    so.settimeout(0.05)
                    try:
                        if so.recv(100) != b"":
                            return False
                    except socket.timeout:
                        return False
                    except (ConnectionResetError, OSError):
                        pass
                return True
            wait_until(all_closed, 10, interval=0.2, what="the node to close the idle half-requests")
            self.assertGreater(time.time() - t0, 0.5, "closed before the timeout")
            ka.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
            self.assertTrue(ka.recv(1000).startswith(b"HTTP/1.1 200"), "the keep-alive connection was closed")
        finally:
            for so in socks:
                so.close()

    def test_trickled_header_is_cut(self):
        """a client that trickles its first request's header (a byte every half second) is closed once
        net.http.header_timeout (2 s) has passed since it connected: libmicrohttpd's own timeout counts idle
        time only, and the trickle reset it for ever"""
        so = socket.create_connection(("127.0.0.1", self.node.port), timeout=10)
        t0 = time.time()
        closed_at = None
        try:
            so.sendall(b"GET /v1/health HTTP/1.1\r\nX-Slow: ")
            for _ in range(20):  # 10 s at the most
                time.sleep(0.5)
                try:
                    so.sendall(b"a")
                    so.settimeout(0.01)
                    if so.recv(100) == b"":
                        closed_at = time.time()
                        break
                except socket.timeout:
                    continue
                except (ConnectionResetError, BrokenPipeError, OSError):
                    closed_at = time.time()
                    break
        finally:
            so.close()
        self.assertIsNotNone(closed_at, "a trickled header kept its connection open for 10 s")
        self.assertGreater(closed_at - t0, 1.5, "closed before net.http.header_timeout")
        self.assertLess(closed_at - t0, 6, "closed too long after net.http.header_timeout")
        self.assertIn("first request's header did not come within", self.node.log())

    def test_default_per_ip_limit(self):
        cfg = self.s.get(self.url + "/v1/daemon", params={"what": "config"}, timeout=10).json()
        self.assertEqual(cfg["net"]["http"]["max_conns_per_ip"], 1024, "a per-address limit is on by default")
        self.assertEqual(cfg["net"]["http"]["max_conns"], 8192)

    def test_waiting_connections_make_room(self):
        """at the node's connection limit (net.http.max_conns 32), connections that wait (here: 32 from another
        address that never send a byte) are closed, the one that waited longest first, to make room for a new
        client, instead of the new client being refused"""
        node = type(self.node)(self.tmp, name="room", extra_config={"net": {"http": {"max_conns": 32}}}).start()
        socks = []
        try:
            for _ in range(32):
                so = socket.socket()
                so.bind(("127.0.0.2", 0))
                so.settimeout(10)
                so.connect(("127.0.0.1", node.port))
                socks.append(so)
            wait_until(lambda: sum(int(line.rsplit(" ", 1)[1]) for line in requests.get(
                node.url + "/metrics", timeout=10).text.splitlines() if line.startswith("shale_http_connections{"))
                >= 32, 10, what="the 32 idle connections counted")
            served = 0
            for _ in range(5):  # each new client takes the place of a waiting one
                r = requests.get(node.url + "/v1/health", timeout=5, headers={"Connection": "close"})
                served += r.status_code == 200
            self.assertEqual(served, 5, "new clients refused at the limit while others only waited")

            def dropped():
                n = 0
                for so in socks:
                    so.settimeout(0.01)
                    try:
                        n += so.recv(10) == b""
                    except socket.timeout:
                        pass
                    except OSError:
                        n += 1
                return n
            self.assertGreaterEqual(wait_until(dropped, 10, what="waiting connections closed"), 1)
            self.assertIn("to make room at the node's connection limit", node.log())
        finally:
            for so in socks:
                so.close()
            node.stop()

    def test_per_ip_cap(self):
        node = type(self.node)(self.tmp, name="cap", extra_config={"net": {"http": {"max_conns_per_ip": 20}}}).start()
        socks = []
        try:
            def served(so):
                so.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
                return so.recv(1000).startswith(b"HTTP/1.1 200")

            def open_one():
                so = socket.create_connection(("127.0.0.1", node.port), timeout=5)
                socks.append(so)
                try:
                    return served(so)
                except (ConnectionResetError, BrokenPipeError):
                    return False
            wait_until(lambda: open_one(), 10, what="a first connection")  # (wait_ready's may linger a moment)
            for _ in range(19):
                self.assertTrue(open_one(), "connection %d of 20 refused" % (len(socks)))
            self.assertFalse(open_one(), "the 21st connection from one address was served")
            socks.pop().close()
            socks.pop(0).close()  # one of the 20 goes: a new one is taken again
            wait_until(lambda: open_one(), 10, what="a connection after one closed")
        finally:
            for so in socks:
                so.close()
            node.stop()

    def test_connections_spread_over_loops(self):
        """Connections a client opens together go to different poll loops (libmicrohttpd's thread pool let
        whichever loop woke first accept them all: 4 of 4 on one loop, bench/RESULTS.md §17.7)."""
        node = type(self.node)(self.tmp, name="spread", extra_config={"net": {"http": {"workers": 3}}}).start()
        socks = []
        try:
            def loads():
                t = requests.get(node.url + "/metrics", timeout=10).text
                return [int(line.rsplit(" ", 1)[1]) for line in t.splitlines()
                        if line.startswith("shale_http_connections{")]
            self.assertEqual(len(loads()), 3, "one gauge per poll loop (net.http.workers 3)")
            base = loads()
            for _ in range(6):
                so = socket.create_connection(("127.0.0.1", node.port), timeout=10)
                socks.append(so)
                so.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
                self.assertTrue(so.recv(1000).startswith(b"HTTP/1.1 200"))
            now = loads()
            added = [n - b for n, b in zip(now, base)]
            self.assertGreaterEqual(sum(now), 6, "the six open connections are counted: %s" % now)
            self.assertTrue(all(a >= 1 for a in added), "six connections spread over three loops: %s" % added)
            for so in socks:
                so.close()
            socks.clear()
            wait_until(lambda: sum(loads()) <= sum(base) + 1, 10, interval=0.2,
                       what="closed connections no longer counted")
        finally:
            for so in socks:
                so.close()
            node.stop()

    def test_out_of_fds(self):
        """With its open-files limit reached, the node waits (new clients stay in the backlog) instead of
        spinning on the readable listening socket, says why once, and accepts again when fds free up."""
        node = type(self.node)(self.tmp, name="nofd").start()
        pid = node.proc.pid
        socks = []
        try:
            nfd = len(os.listdir("/proc/%d/fd" % pid))
            soft = subprocess.run(["prlimit", "--pid", str(pid), "--nofile", "--output=SOFT", "--noheadings"],
                                  check=True, capture_output=True, text=True).stdout.strip()
            subprocess.run(["prlimit", "--pid", str(pid), "--nofile=%d:" % (nfd + 8)], check=True)
            for _ in range(30):
                so = socket.create_connection(("127.0.0.1", node.port), timeout=10)
                socks.append(so)

            def cpu():
                with open("/proc/%d/stat" % pid) as f:
                    st = f.read().rsplit(")", 1)[1].split()
                return (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")
            time.sleep(0.5)
            c0 = cpu()
            time.sleep(2)
            self.assertLess(cpu() - c0, 0.5, "the node spun while out of fds")
            wait_until(lambda: "cannot accept connections: Too many open files" in node.log(), 10,
                       what="the node to say it is out of fds")
            self.assertIn("ulimit -n", node.log())
            for so in socks:
                so.close()
            socks.clear()
            subprocess.run(["prlimit", "--pid", str(pid), "--nofile=%s:" % soft], check=True)
            r = requests.get(node.url + "/v1/health", timeout=10)
            self.assertEqual(r.status_code, 200)
        finally:
            for so in socks:
                so.close()
            node.stop()

    def test_bad_values_refused(self):
        for key, val, want in (("header_timeout", "0s", "header_timeout must be 1s to 1h"),
                               ("header_timeout", "2h", "header_timeout must be 1s to 1h"),
                               ("idle_conn_time", "0s", "idle_conn_time 1s to 24h"),
                               ("max_conns_per_ip", -1, "max_conns_per_ip"),
                               ("max_conns_per_ip", 100000, "max_conns_per_ip must be 0"),
                               ("workers", -1, "net.http.workers"),
                               ("workers", 257, "net.http.workers must be 0")):
            n = type(self.node)(self.tmp, name="bad", extra_config={"net": {"http": {key: val}}})
            p = subprocess.run([SHALED, "--config", n.config_path, "--check-config"], capture_output=True, text=True,
                               timeout=30)
            self.assertNotEqual(p.returncode, 0, "%s=%s accepted" % (key, val))
            self.assertIn(want, p.stderr + p.stdout)
            r = requests.put(self.url + "/v1/cluster", json={"action": "set-config",
                                                             "value": {"net": {"http": {key: val}}}}, timeout=30)
            self.assertEqual(r.status_code, 400, "set-config %s=%s: %s" % (key, val, r.text))
            self.assertIn(want, r.text)


if __name__ == "__main__":
    main()
