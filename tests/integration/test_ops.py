#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Operations through the native API on a real cluster (1 gateway, 3 targets):
node logs and status through the gateway's reverse path (AIStore's
/v1/reverse/daemon with Ais-Node-Id), a node's own log endpoint, and
promote (files in promote.dir become objects; nothing outside it is read),
bucket rename (move-bck: nothing acknowledged is lost, reads keep working,
the old name takes no writes meanwhile), and LRU eviction under the space
watermarks."""
import hashlib
import io
import json
import os
import random
import tarfile
import threading
import time

import requests

from harness import ClusterTest, NodeTest, main, wait_until

J = {"Content-Type": "application/json"}


class TestNodeLogs(ClusterTest):
    def nodes(self):
        sm = self.c.smap()
        return sm["pmap"], sm["tmap"]

    def log(self, node_url, **params):
        return self.s.get(node_url + "/v1/daemon", params=dict(what="log", **params), timeout=30)

    def reverse(self, node_id, **params):
        h = {"Ais-Node-Id": node_id} if node_id is not None else {}
        return self.s.get(self.url + "/v1/reverse/daemon", params=params, headers=h, timeout=30)

    def test_own_log(self):
        pmap, tmap = self.nodes()
        turl = next(iter(tmap.values()))["public_net"]["direct_url"]
        r = self.log(turl)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertTrue(r.headers["Content-Type"].startswith("text/plain"))
        lines = r.text.splitlines()
        self.assertTrue(lines and all(ln[:2] in ("I ", "W ", "E ", "D ") for ln in lines), lines[:3])
        # an offset reads from there on; past the end is a 400 that says the log likely rotated
        part = self.log(turl, offset=10)
        self.assertEqual(part.status_code, 200)
        self.assertTrue(r.content[10:].startswith(part.content[:100]))
        big = self.log(turl, offset=10 ** 12)
        self.assertEqual(big.status_code, 400)
        self.assertIn("rotated", big.json()["message"])
        self.assertIn("offset=0", big.json()["message"])
        self.assertEqual(self.log(turl, offset="ten").status_code, 400)
        # warnings and errors only (one "file", as AIStore's error log)
        # a failed request makes a warning line
        self.s.get(turl + "/v1/objects/nosuchbucket/x", timeout=10)
        w = self.log(turl, severity="warning")
        self.assertEqual(w.status_code, 200)
        self.assertTrue(all(ln[:2] in ("W ", "E ") for ln in w.text.splitlines()), w.text[:300])
        self.assertLess(len(w.content), len(r.content))
        r = self.log(turl, severity="x")
        self.assertEqual(r.status_code, 400)
        self.assertIn('unknown log severity "x"', r.json()["message"])
        # all=true: a tar.gz of the log files
        r = self.log(turl, all="true")
        self.assertEqual(r.status_code, 200)
        with tarfile.open(fileobj=io.BytesIO(r.content), mode="r:gz") as tf:
            names = tf.getnames()
            self.assertIn("shaled.log", names)
            self.assertTrue(tf.extractfile("shaled.log").read().startswith(b"I "))

    def test_reverse(self):
        pmap, tmap = self.nodes()
        for tid, t in tmap.items():
            # the gateway asks the node: its own status and log
            r = self.reverse(tid, what="node_status")
            self.assertEqual(r.status_code, 200, r.text)
            self.assertIn("tracker", r.json())
            self.assertIn("capacity", r.json())
            direct = self.log(t["public_net"]["direct_url"]).content
            r = self.reverse(tid, what="log", severity="info")
            self.assertEqual(r.status_code, 200, r.text)
            self.assertTrue(r.headers["Content-Type"].startswith("text/plain"))
            self.assertTrue(r.content.startswith(direct[:200]))
            snode = self.reverse(tid, what="snode").json()
            self.assertEqual(snode["daemon_id"], tid)
        r = self.reverse(next(iter(tmap)), what="log", all="true")
        self.assertEqual(r.headers["Content-Type"], "application/gzip")
        tarfile.open(fileobj=io.BytesIO(r.content), mode="r:gz").getnames()
        # the gateway itself
        pid = next(iter(pmap))
        self.assertEqual(self.reverse(pid, what="snode").json()["daemon_id"], pid)
        # bad input
        r = self.reverse(None, what="log")
        self.assertEqual(r.status_code, 400)
        self.assertIn("Ais-Node-Id", r.json()["message"])
        r = self.reverse("nosuchnode", what="log")
        self.assertEqual(r.status_code, 404)
        self.assertIn("nosuchnode", r.json()["message"])
        r = self.reverse(next(iter(tmap)), what="log", severity="q")
        self.assertEqual(r.status_code, 400)
        self.assertIn("severity", r.json()["message"])
        r = self.s.get(self.url + "/v1/reverse/other", timeout=10)
        self.assertEqual(r.status_code, 404)
        # PUT carries an action to a node (config reset, ...); a PUT without one is 400, other methods 405
        r = requests.put(self.url + "/v1/reverse/daemon", headers={"Ais-Node-Id": next(iter(tmap))}, timeout=10)
        self.assertEqual(r.status_code, 400, r.text)
        r = requests.delete(self.url + "/v1/reverse/daemon", headers={"Ais-Node-Id": pid}, timeout=10)
        self.assertEqual(r.status_code, 405)


class TestPromote(ClusterTest):
    def setUp(self):
        self.pdir = os.path.join(self.tmp, "promote")
        os.makedirs(self.pdir, exist_ok=True)
        r = self.s.put(self.url + "/v1/cluster/set-config", params={"promote.dir": self.pdir}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)

    def promote(self, bucket, src, **value):
        value.setdefault("src", src)
        return self.s.post(self.url + "/v1/objects/" + bucket, headers=J, timeout=60,
                           data=json.dumps({"action": "promote", "name": src, "value": value}))

    def wait(self, jid):
        out = {}

        def done():
            r = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid}, timeout=30)
            out["st"] = r.json() if r.status_code == 200 else {}
            return out["st"].get("end_time", 0) != 0
        wait_until(done, 60, what="job " + jid)
        return out["st"]

    def files(self, root, spec):
        for rel, data in spec.items():
            p = os.path.join(root, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(data)

    def listing(self, bucket):
        r = self.s.get(self.url + "/v1/buckets/" + bucket, timeout=30,
                       json={"action": "list", "value": {"pagesize": 10000}})
        return sorted(e["name"] for e in r.json()["entries"] or [])

    def get(self, bucket, name):
        r = self.s.get(self.url + "/v1/objects/%s/%s" % (bucket, name), timeout=30)
        return r.content if r.status_code == 200 else None

    def test_promote(self):
        self.s.post(self.url + "/v1/buckets/pr", json={"action": "create-bck"}, timeout=30).raise_for_status()
        spec = {"ds/a-%02d.bin" % i: os.urandom(100 + i) for i in range(40)}
        spec.update({"ds/sub/deep-%d.txt" % i: b"deep %d" % i for i in range(5)})
        self.files(self.pdir, spec)
        # a file outside promote.dir, reachable through a symlink inside it: never read
        secret = os.path.join(self.tmp, "outside.txt")
        with open(secret, "wb") as f:
            f.write(b"secret")
        os.symlink(secret, os.path.join(self.pdir, "ds", "link.txt"))
        os.symlink(self.tmp, os.path.join(self.pdir, "ds", "linkdir"))
        # top level only
        r = self.promote("pr", self.pdir + "/ds")
        self.assertEqual(r.status_code, 200, r.text)
        st = self.wait(r.text)
        self.assertFalse(st.get("err"), st)
        top = sorted(k[3:] for k in spec if k.count("/") == 1)
        self.assertEqual(self.listing("pr"), top)
        # recursive, under a prefix; every object has its file's bytes; the symlinks were not followed
        r = self.promote("pr", self.pdir + "/ds", rcr=True, obj="all/")
        self.assertEqual(r.status_code, 200, r.text)
        self.assertFalse(self.wait(r.text).get("err"))
        names = [n for n in self.listing("pr") if n.startswith("all/")]
        self.assertEqual(names, sorted("all/" + k[3:] for k in spec))
        for k, data in spec.items():
            self.assertEqual(self.get("pr", "all/" + k[3:]), data, k)
        self.assertNotIn(b"secret", b"".join(self.get("pr", n) or b"" for n in self.listing("pr")))
        # one file under a chosen name; existing objects are kept without ovw and replaced with it
        self.files(self.pdir, {"one.txt": b"first"})
        r = self.promote("pr", self.pdir + "/one.txt", obj="named/one")
        self.assertFalse(self.wait(r.text).get("err"))
        self.assertEqual(self.get("pr", "named/one"), b"first")
        self.files(self.pdir, {"one.txt": b"second"})
        self.assertFalse(self.wait(self.promote("pr", self.pdir + "/one.txt", obj="named/one").text).get("err"))
        self.assertEqual(self.get("pr", "named/one"), b"first")
        self.assertFalse(self.wait(self.promote("pr", self.pdir + "/one.txt", obj="named/one", ovw=True).text)
                         .get("err"))
        self.assertEqual(self.get("pr", "named/one"), b"second")
        # dls: the sources go once stored; tid: one target promotes its own directory and sends each object
        # to its owner
        self.files(self.pdir, {"mv/m-%d" % i: b"m%d" % i for i in range(12)})
        tid = next(iter(self.c.smap()["tmap"]))
        r = self.promote("pr", self.pdir + "/mv", obj="mv/", dls=True, tid=tid)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertFalse(self.wait(r.text).get("err"))
        self.assertEqual([self.get("pr", "mv/m-%d" % i) for i in range(12)], [b"m%d" % i for i in range(12)])
        self.assertEqual(os.listdir(os.path.join(self.pdir, "mv")), [])
        self.assertTrue(os.path.exists(secret))

    def test_bad_input(self):
        self.s.post(self.url + "/v1/buckets/pb", json={"action": "create-bck"}, timeout=30).raise_for_status()
        self.files(self.pdir, {"x/f": b"f"})
        cases = [
            ("x/f", {}, 400, "absolute"),
            (self.pdir + "/x/../x/f", {}, 400, "'..'"),
            (self.pdir + "/./x", {}, 400, "'.'"),
            ("/etc", {}, 400, "must be under"),
            (self.pdir + "/x", {"bogus": 1}, 400, "unknown field"),
            (self.pdir + "/x", {"rcr": "yes"}, 400, "rcr"),
            (self.pdir + "/x", {"tid": "nosuch"}, 404, "nosuch"),
        ]
        for src, extra, code, text in cases:
            r = self.promote("pb", src, **extra)
            self.assertEqual(r.status_code, code, "%s %s: %s" % (src, extra, r.text))
            self.assertIn(text, r.json()["message"])
        r = self.s.post(self.url + "/v1/objects/pb", headers=J, timeout=30, data=json.dumps(
            {"action": "promote", "name": self.pdir + "/x", "value": {"src": self.pdir + "/y"}}))
        self.assertEqual(r.status_code, 400)
        r = self.promote("nosuchbucket", self.pdir + "/x")
        self.assertEqual(r.status_code, 404)
        # a symlink out of promote.dir as the source: the job fails and reads nothing
        os.symlink("/etc", os.path.join(self.pdir, "etc"))
        r = self.promote("pb", self.pdir + "/etc", rcr=True)
        self.assertEqual(r.status_code, 200, r.text)
        st = self.wait(r.text)
        self.assertIn("symlink", st.get("err", ""))
        self.assertEqual(self.listing("pb"), [])
        # a directory on the way that is a symlink out of promote.dir: nothing read either
        os.symlink(self.tmp, os.path.join(self.pdir, "up"))
        with open(os.path.join(self.tmp, "secret.txt"), "wb") as f:
            f.write(b"secret")
        r = self.promote("pb", self.pdir + "/up/secret.txt", dls=True)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertIn("outside promote.dir", self.wait(r.text).get("err", ""))
        self.assertEqual(self.listing("pb"), [])
        self.assertTrue(os.path.exists(os.path.join(self.tmp, "secret.txt")))
        # promote off
        r = self.s.put(self.url + "/v1/cluster/set-config", params={"promote.dir": ""}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        r = self.promote("pb", self.pdir + "/x")
        self.assertEqual(r.status_code, 400)
        self.assertIn("promote is off", r.json()["message"])
        for bad in ("relative/dir", "/"):
            r = self.s.put(self.url + "/v1/cluster/set-config", params={"promote.dir": bad}, timeout=30)
            self.assertEqual(r.status_code, 400, bad)
        self.assertEqual(self.listing("pb"), [])


class MoveBucket:
    """shared by the cluster and the single node"""

    def move(self, src, dst, **params):
        if dst is not None:
            params["bck_to"] = "ais/@#/%s/" % dst
        return self.s.post(self.url + "/v1/buckets/" + src, params=params, headers=J, timeout=60,
                           data=json.dumps({"action": "move-bck"}))

    def props(self, b):
        r = self.s.head(self.url + "/v1/buckets/" + b, timeout=30)
        return json.loads(r.headers["Ais-Bucket-Props"]) if r.status_code == 200 else None

    def names(self, b):
        out, token = [], ""
        while True:
            r = self.s.get(self.url + "/v1/buckets/" + b, timeout=30, json={
                "action": "list", "value": {"pagesize": 1000, "continuation_token": token}})
            self.assertEqual(r.status_code, 200, r.text)
            out += [e["name"] for e in r.json()["entries"] or []]
            token = r.json()["continuation_token"]
            if not token:
                return out

    def check_move(self, n=300):
        src, dst = "mv-src", "mv-dst"
        self.s.post(self.url + "/v1/buckets/" + src, json={"action": "create-bck"}, timeout=30).raise_for_status()
        r = self.s.patch(self.url + "/v1/buckets/" + src, headers=J, timeout=30, data=json.dumps(
            {"action": "set-bprops", "value": {"versioning": {"enabled": False}}}))
        self.assertEqual(r.status_code, 200, r.text)
        data = {}
        for i in range(n):
            name = "d%d/o-%04d" % (i % 7, i)
            data[name] = os.urandom(random.Random(i).randint(1, 5000))
            self.s.put(self.url + "/v1/objects/%s/%s" % (src, name), data=data[name], timeout=30).raise_for_status()
        acked, refused, bad_reads, reads = {}, [], [], [0]
        stop = threading.Event()

        def writer():
            s = requests.Session()
            for i in range(100000):
                if stop.is_set():
                    return
                name = "w/late-%05d" % i
                body = b"late %d" % i
                r = s.put(self.url + "/v1/objects/%s/%s" % (src, name), data=body, timeout=30)
                if r.status_code == 200:
                    acked[name] = body
                elif r.status_code in (409, 404):
                    refused.append(r.status_code)
                    if r.status_code == 409:
                        self.assertIn("renamed", r.json()["message"])
                    time.sleep(0.01)

        def reader():
            s = requests.Session()
            rnd = random.Random(5)
            names = sorted(data)
            while not stop.is_set():
                name = rnd.choice(names)
                for b in (src, dst):
                    r = s.get(self.url + "/v1/objects/%s/%s" % (b, name), timeout=30)
                    if r.status_code == 200:
                        reads[0] += 1
                        if r.content != data[name]:
                            bad_reads.append((b, name))
                    elif r.status_code != 404 or "bucket" not in r.json()["message"] or \
                            "/v1/objects/%s/" % b not in r.url:
                        # only "no such bucket" is expected: the new name before the rename starts, the old
                        # one after it ends
                        bad_reads.append((b, name, r.status_code, r.text[:200]))
        th = [threading.Thread(target=writer), threading.Thread(target=reader)]
        for t in th:
            t.start()
        time.sleep(0.3)
        r = self.move(src, dst)
        self.assertEqual(r.status_code, 200, r.text)
        jid = r.text
        # the old name cannot be destroyed meanwhile (409 while the rename runs, 404 once it is done)
        r = self.s.delete(self.url + "/v1/buckets/" + src, headers=J, timeout=30,
                          data=json.dumps({"action": "destroy-bck"}))
        self.assertIn(r.status_code, (409, 404), r.text)
        if r.status_code == 409:
            self.assertIn("being renamed", r.json()["message"])
        def finished():
            st = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid}, timeout=30)
            return st.status_code == 200 and st.json()["end_time"] != 0
        try:
            # finished means committed: the moment the job reports its end, the old name is gone (AIStore's
            # wait() returned about 0.25 s early, while the old name still answered HEAD 200 and DELETE 409)
            wait_until(finished, 120, interval=0.02, what="move-bck %s finished" % jid)
            self.assertIsNone(self.props(src), "the rename reported finished before it was committed")
            r = self.s.delete(self.url + "/v1/buckets/" + src, headers=J, timeout=30,
                              data=json.dumps({"action": "destroy-bck"}))
            self.assertEqual(r.status_code, 404, r.text)
        finally:
            time.sleep(0.3)
            stop.set()
            for t in th:
                t.join(60)
        st = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid}, timeout=30)
        self.assertEqual(st.status_code, 200, st.text)
        self.assertFalse(st.json().get("err"), st.text)
        # every acknowledged write is in the new bucket, byte for byte; writes after the mark were refused
        want = dict(data)
        want.update(acked)
        self.assertEqual(sorted(self.names(dst)), sorted(want))
        for name, body in want.items():
            r = self.s.get(self.url + "/v1/objects/%s/%s" % (dst, name), timeout=30)
            self.assertEqual(hashlib.sha256(r.content).hexdigest(), hashlib.sha256(body).hexdigest(), name)
        self.assertTrue(refused, "no write was refused during the rename")
        self.assertEqual(bad_reads, [])
        self.assertGreater(reads[0], 0)
        p = self.props(dst)
        self.assertNotIn("renaming_from", p)
        self.assertFalse(p["versioning"]["enabled"], "the new name keeps the old one's properties")
        self.assertEqual(self.s.get(self.url + "/v1/objects/%s/d0/o-0000" % src, timeout=30).status_code, 404)
        # bad input changes nothing
        self.s.post(self.url + "/v1/buckets/other", json={"action": "create-bck"}, timeout=30).raise_for_status()
        cases = [
            (dst, None, 400, "bck_to"),
            (dst, dst, 400, "itself"),
            (dst, "other", 409, "already exists"),
            ("nosuch", "x1", 404, "nosuch"),
            (dst, "bad name!", 400, ""),
        ]
        for a, b, code, text in cases:
            r = self.move(a, b)
            self.assertEqual(r.status_code, code, "%s -> %s: %s" % (a, b, r.text))
            self.assertIn(text, r.json()["message"])
        r = self.s.post(self.url + "/v1/buckets/" + dst, params={"bck_to": "s3/@#/x/"}, headers=J, timeout=30,
                        data=json.dumps({"action": "move-bck"}))
        self.assertEqual(r.status_code, 400, r.text)
        self.assertEqual(len(self.names(dst)), len(want))
        self.assertIsNotNone(self.props("other"))


class TestLRU(ClusterTest):
    def config(self, **kv):
        r = self.s.put(self.url + "/v1/cluster/set-config", params=kv, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)

    def bucket(self, name, enabled, keep, n):
        self.s.post(self.url + "/v1/buckets/" + name, json={"action": "create-bck"}, timeout=30).raise_for_status()
        r = self.s.patch(self.url + "/v1/buckets/" + name, headers=J, timeout=30, data=json.dumps(
            {"action": "set-bprops", "value": {"lru": {"enabled": enabled, "dont_evict_time": keep}}}))
        self.assertEqual(r.status_code, 200, r.text)
        for i in range(n):
            self.s.put(self.url + "/v1/objects/%s/o-%03d" % (name, i), data=b"x" * (i + 1),
                       timeout=30).raise_for_status()

    def present(self, b):
        r = self.s.get(self.url + "/v1/buckets/" + b, timeout=30, json={"action": "list", "value": {}})
        return sorted(e["name"] for e in r.json()["entries"] or [])

    def start(self, value):
        return self.s.put(self.url + "/v1/cluster", headers=J, timeout=60,
                          data=json.dumps({"action": "start", "value": dict(Kind="lru", **value)}))

    def run_job(self, value):
        r = self.start(value)
        self.assertEqual(r.status_code, 200, r.text)
        jid = r.text

        def done():
            st = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid}, timeout=30)
            return st.status_code == 200 and st.json().get("end_time", 0) != 0 and st.json()
        st = wait_until(done, 60, what="lru job " + jid)
        self.assertFalse(st.get("err"), st)
        return st

    def test_lru(self):
        self.bucket("lru-on", True, "4s", 30)
        self.bucket("lru-off", False, "1s", 10)
        self.bucket("lru-fresh", True, "1h", 10)
        # below space.highwm there is nothing to do
        self.run_job({})
        self.assertEqual(len(self.present("lru-on")), 30)
        time.sleep(5)
        read = ["o-%03d" % i for i in (0, 7, 11, 20, 29)]
        for n in read:
            self.assertEqual(self.s.get(self.url + "/v1/objects/lru-on/" + n, timeout=30).status_code, 200)
        # above it (the test disk is more than 2% full): the least recently used objects of lru-enabled buckets
        # go, those read within dont_evict_time stay; disabled buckets and fresh objects stay
        self.config(**{"space.lowwm": "1", "space.highwm": "2"})
        try:
            self.run_job({})
            self.assertEqual(self.present("lru-on"), read)
            self.assertEqual(len(self.present("lru-off")), 10)
            self.assertEqual(len(self.present("lru-fresh")), 10)
            # Force takes the disabled bucket too, only the named one
            self.run_job({"Buckets": [{"name": "lru-off", "provider": "ais"}], "Force": True})
            self.assertEqual(self.present("lru-off"), [])
            self.assertEqual(self.present("lru-on"), read)
            self.assertEqual(len(self.present("lru-fresh")), 10)
            # a target starts it by itself, every lru.capacity_upd_time
            self.bucket("lru-auto", True, "1s", 6)
            self.config(**{"lru.capacity_upd_time": "1s"})
            wait_until(lambda: self.present("lru-auto") == [], 30, what="automatic eviction")
            self.assertEqual(len(self.present("lru-fresh")), 10)
        finally:
            self.config(**{"space.lowwm": "75", "space.highwm": "90", "lru.capacity_upd_time": "10m"})
        # bad input
        for value, code, text in [({"Buckets": "lru-on"}, 400, "list"),
                                  ({"Buckets": [{"name": "nosuch"}]}, 404, "nosuch")]:
            r = self.start(value)
            self.assertEqual(r.status_code, code, r.text)
            self.assertIn(text, r.json()["message"])
        r = self.s.put(self.url + "/v1/cluster", headers=J, timeout=30,
                       data=json.dumps({"action": "start", "value": {"Kind": "nosuch"}}))
        self.assertEqual(r.status_code, 400)
        self.assertIn("lru", r.json()["message"])
        r = self.s.put(self.url + "/v1/cluster/set-config", params={"lru.capacity_upd_time": "0s"}, timeout=30)
        self.assertEqual(r.status_code, 400)
        # bucket lru properties: a duration that is not one, and the interval that is the cluster's
        for lru, text in (({"dont_evict_time": "soon"}, "duration"), ({"capacity_upd_time": "1m"}, "cluster")):
            r = self.s.patch(self.url + "/v1/buckets/lru-on", headers=J, timeout=30, data=json.dumps(
                {"action": "set-bprops", "value": {"lru": lru}}))
            self.assertEqual(r.status_code, 400, r.text)
            self.assertIn(text, r.json()["message"])
        # redundancy the cluster cannot hold is refused, not stored: EC 2+2 on 3 targets, a mirror the targets'
        # single mountpaths cannot hold (test_mirror.py, test_ec.py have the rest); the values it has are accepted
        for props, code in (({"mirror": {"enabled": True, "copies": 2}}, 400), ({"ec": {"enabled": True}}, 400),
                            ({"mirror": {"enabled": False}}, 200)):
            r = self.s.patch(self.url + "/v1/buckets/lru-on", headers=J, timeout=30, data=json.dumps(
                {"action": "set-bprops", "value": props}))
            self.assertEqual(r.status_code, code, r.text)
        p = json.loads(self.s.head(self.url + "/v1/buckets/lru-on", timeout=30).headers["Ais-Bucket-Props"])
        self.assertFalse(p["mirror"]["enabled"])
        self.assertFalse(p["ec"]["enabled"])


class TestMoveBucketCluster(ClusterTest, MoveBucket):
    def test_move(self):
        self.check_move()


class TestMoveBucketNode(NodeTest, MoveBucket):
    def test_move(self):
        self.check_move(n=100)


if __name__ == "__main__":
    main()
