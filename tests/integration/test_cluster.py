# SPDX-License-Identifier: MIT
"""Cluster: 1 proxy + 3 targets started with `shale playground`. HRW
placement and redirects, kill -9 under PUT load, liveness, rebalance on
add/decommission/maintenance with reads throughout, metadata catch-up,
foreign-cluster refusal, job status."""
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

import requests
import xxhash

from harness import Cluster, Node, SHALE, hrw_mix as mix, main, start_cluster, stop_cluster, wait_until

SEED = 1103515245


def hrw_owner(smap, bucket, obj):
    """The Python SDK's client-side placement (spec §13.2), from the Smap's id_digest."""
    d = xxhash.xxh64(("ais/@#/%s/%s" % (bucket, obj)).encode(), seed=SEED).intdigest()
    best, bs = None, -1
    for tid, t in smap["tmap"].items():
        if t.get("flags", 0) & (4 | 8):
            continue
        sc = mix(int(t["id_digest"]) ^ d)
        if sc > bs:
            best, bs = t, sc
    return best


class ClusterTest(unittest.TestCase):
    targets = 3

    def setUp(self):
        start_cluster(self, targets=self.targets, prefix="shale-cl-")

    def tearDown(self):
        stop_cluster(self)

    def create(self, b):
        r = self.s.post(self.url + "/v1/buckets/" + b, json={"action": "create-bck"})
        self.assertEqual(r.status_code, 200, r.text)

    def fill(self, b, n, size=(10, 3000), prefix="o"):
        data = {}
        rnd = random.Random(n)
        for i in range(n):
            name = "%s/%05d" % (prefix, i)
            d = os.urandom(rnd.randint(*size))
            r = self.s.put(self.url + "/v1/objects/%s/%s" % (b, name), data=d)
            self.assertEqual(r.status_code, 200, r.text)
            data[name] = hashlib.sha256(d).hexdigest()
        return data

    def check_all(self, b, data):
        for name, h in data.items():
            r = self.s.get(self.url + "/v1/objects/%s/%s" % (b, name))
            self.assertEqual(r.status_code, 200, "%s: %s" % (name, r.text))
            self.assertEqual(hashlib.sha256(r.content).hexdigest(), h, name)

    def target_name_by_id(self, tid):
        return self.c.target_name(tid)

    def job_status(self, jid):
        r = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid})
        return r

    def wait_job(self, jid, timeout=60):
        def done():
            r = self.job_status(jid)
            return r.status_code == 200 and r.json()["end_time"] != 0 and r.json()
        return wait_until(done, timeout, interval=0.2, what="job %s" % jid)


class TestPlacement(ClusterTest):
    def test_spread_and_redirects(self):
        self.create("pl")
        data = self.fill("pl", 150)
        smap = self.c.smap()
        self.assertEqual(len(smap["tmap"]), 3)
        counts = {}
        for name in data:
            r = self.s.get(self.url + "/v1/objects/pl/" + name, allow_redirects=False)
            self.assertEqual(r.status_code, 301)
            loc = r.headers["Location"]
            owner = hrw_owner(smap, "pl", name)
            self.assertTrue(loc.startswith(owner["public_net"]["direct_url"] + "/v1/objects/pl/" + name), loc)
            self.assertIn("pid=", loc)
            self.assertIn("utm=", loc)
            counts[owner["daemon_id"]] = counts.get(owner["daemon_id"], 0) + 1
            self.assertNotIn("provider=", loc)  # only pid and utm are added
            for m, net in (("PUT", "intra_data_net"), ("HEAD", "intra_control_net"), ("DELETE", "intra_control_net")):
                r2 = self.s.request(m, self.url + "/v1/objects/pl/" + name, allow_redirects=False)
                self.assertEqual(r2.status_code, 307, m)
                self.assertTrue(r2.headers["Location"].startswith(owner[net]["direct_url"]))
        self.assertEqual(len(counts), 3, counts)          # every target got objects
        self.assertTrue(min(counts.values()) > 20, counts)
        # the data really is on the owner: a direct GET to the owner works without redirects
        name = sorted(data)[0]
        owner = hrw_owner(smap, "pl", name)
        r = self.s.get(owner["public_net"]["direct_url"] + "/v1/objects/pl/" + name)
        self.assertEqual(r.status_code, 200)
        # targets refuse unredirected writes, accept direct reads
        r = self.s.put(owner["public_net"]["direct_url"] + "/v1/objects/pl/direct-put", data=b"x")
        self.assertEqual(r.status_code, 401)
        self.assertIn("signed redirect", r.json()["message"])
        # ... and writes with made-up redirect marks
        r = self.s.put(owner["public_net"]["direct_url"] + "/v1/objects/pl/direct-put?pid=x&utm=1", data=b"x")
        self.assertEqual(r.status_code, 401)
        self.assertEqual(self.s.head(self.url + "/v1/objects/pl/direct-put", allow_redirects=True).status_code, 404)
        self.check_all("pl", data)
        # DELETE and POST bodies survive the redirect (clients re-send them to the target)
        name = sorted(data)[1]
        u = self.url + "/v1/objects/pl/" + name
        for body, status in (('{"action":"frob"}', 400), ('{"action":', 400), ('{"action":"mpt-abort"}', 400)):
            r = self.s.delete(u, data=body, headers={"Content-Type": "application/json"})
            self.assertEqual(r.status_code, status, (body, r.text))
            self.assertEqual(self.s.get(u).status_code, 200, body)
        r = self.s.post(u, json={"action": "frob"})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("rename-obj", r.json()["message"])
        r = self.s.post(self.url + "/v1/objects/pl", json={"action": "frob"})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("blob-download", r.json()["message"])
        r = self.s.post(self.url + "/v1/objects/pl", json={"action": "blob-download"})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn('goes in "name"', r.json()["message"])
        # with the name: the gateway sends it (and its body) to the owner, which says why not here
        r = self.s.post(self.url + "/v1/objects/pl", json={"action": "blob-download", "name": name})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("has no remote behind it", r.json()["message"])
        r = self.s.post(self.url + "/v1/objects/pl", json={"action": "promote"})  # served: test_ops.py
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("source path", r.json()["message"])
        self.assertEqual(self.s.delete(u, data='{"action":""}').status_code, 200)
        self.assertEqual(self.s.get(u).status_code, 404)
        del data[name]
        # listing merges all targets: exact and sorted
        names = []
        token, uuid = "", ""
        while True:
            r = self.s.get(self.url + "/v1/buckets/pl", json={"action": "list", "value": {
                "pagesize": 40, "continuation_token": token, "uuid": uuid, "flags": "0"}})
            self.assertEqual(r.status_code, 200, r.text)
            j = r.json()
            names += [e["name"] for e in j["entries"] or []]
            token, uuid = j["continuation_token"], j["uuid"]
            if not token:
                break
        self.assertEqual(names, sorted(data))
        # the CLI shows the cluster
        p = self.c.cli("show", "cluster")
        self.assertRegex(p.stdout, r"Targets:\s+3 \(num disks: 3\)")
        self.assertRegex(p.stdout, r"Status:\s+4 online")
        self.assertRegex(p.stdout, r"Rebalance:\s+g\d+ (finished|running)")
        p = self.c.cli("show", "cluster", "target")
        self.assertEqual(len(re.findall(r"^t\[", p.stdout, re.M)), 3)
        self.assertNotIn("PROXY", p.stdout)


class TestRedirectNetworks(unittest.TestCase):
    """A target with distinct public, data and control addresses: GET goes to
    the public URL, PUT to the data URL, HEAD/DELETE to the control URL (spec
    §1.4), and the redirect adds only pid and utm to the client's query."""

    def test_redirect_targets_the_right_network(self):
        tmp = tempfile.mkdtemp(prefix="shale-rn-")
        p0 = Node(tmp, name="p0", role="proxy").start()
        t0 = Node(tmp, name="t0", role="target", primary=p0.url, secret_from=p0, extra_config={
            "host_net": {"hostname_intra_control": "localhost", "hostname_intra_data": "127.1"}})
        try:
            t0.start()
            s = requests.Session()
            wait_until(lambda: len(s.get(p0.url + "/v1/daemon?what=smap").json()["tmap"]) == 1, 30, what="join")
            sn = list(s.get(p0.url + "/v1/daemon?what=smap").json()["tmap"].values())[0]
            pub, data, ctrl = (sn[k]["direct_url"] for k in ("public_net", "intra_data_net", "intra_control_net"))
            self.assertEqual(len({pub, data, ctrl}), 3, sn)
            self.assertEqual(s.post(p0.url + "/v1/buckets/rn", json={"action": "create-bck"}).status_code, 200)
            self.assertEqual(s.put(p0.url + "/v1/objects/rn/o", data=b"x").status_code, 200)
            for method, code, base in (("GET", 301, pub), ("PUT", 307, data), ("HEAD", 307, ctrl),
                                       ("DELETE", 307, ctrl)):
                r = s.request(method, p0.url + "/v1/objects/rn/o?archpath=a", allow_redirects=False)
                self.assertEqual(r.status_code, code, method)
                loc = r.headers["Location"]
                self.assertTrue(loc.startswith(base + "/v1/objects/rn/o?archpath=a&pid="), (method, loc))
                self.assertNotIn("provider=", loc)
            r = s.get(p0.url + "/v1/objects/rn/o?provider=ais", allow_redirects=False)
            self.assertEqual(r.headers["Location"].count("provider=ais"), 1)
            self.assertEqual(s.get(p0.url + "/v1/objects/rn/o").content, b"x")
        finally:
            t0.stop()
            p0.stop()
            if not os.environ.get("SHALE_KEEP_TMP"):
                shutil.rmtree(tmp, ignore_errors=True)


class TestKill9Target(ClusterTest):
    def test_kill9_during_put_load(self):
        self.create("k9")
        acked, attempted, lock = {}, {}, threading.Lock()
        stop = threading.Event()

        def worker(w):
            s = requests.Session()
            rnd = random.Random(w)
            while not stop.is_set():
                name = "w%d/%04d" % (w, rnd.randrange(300))
                d = os.urandom(rnd.choice([100, 5000, 200000]))
                h = hashlib.sha256(d).hexdigest()
                with lock:
                    attempted.setdefault(name, set()).add(h)
                try:
                    r = s.put(self.url + "/v1/objects/k9/" + name, data=d, timeout=10)
                except requests.RequestException:
                    continue
                if r.status_code == 200:
                    with lock:
                        acked[name] = h

        ts = [threading.Thread(target=worker, args=(w,)) for w in range(4)]
        for t in ts:
            t.start()
        time.sleep(2)
        self.c.kill9("t1")
        time.sleep(1.5)
        stop.set()
        for t in ts:
            t.join(30)
        self.c.cli("playground", "start", "--dir", self.c.dir)  # restarts t1 with its id and data
        wait_until(lambda: not any(t.get("flags", 0) & (1 << 16) for t in self.c.smap()["tmap"].values()), 30,
                   what="t1 back online")
        self.assertGreater(len(acked), 30)
        for name, hs in attempted.items():
            r = self.s.get(self.url + "/v1/objects/k9/" + name)
            if name in acked:
                self.assertEqual(r.status_code, 200, "acknowledged %s lost: %s" % (name, r.text))
            if r.status_code == 200:
                self.assertIn(hashlib.sha256(r.content).hexdigest(), hs, "%s torn" % name)
            else:
                self.assertEqual(r.status_code, 404, r.text)


class TestLiveness(ClusterTest):
    def test_offline_target(self):
        self.create("lv")
        data = self.fill("lv", 60)
        smap = self.c.smap()
        victim = hrw_owner(smap, "lv", sorted(data)[0])
        vname = self.target_name_by_id(victim["daemon_id"])
        t0 = time.time()
        self.c.kill9(vname)
        # flagged within interval (2s) x factor (3) + a keepalive timeout
        wait_until(lambda: self.c.smap()["tmap"][victim["daemon_id"]].get("flags", 0) & (1 << 16), 20,
                   what="victim flagged offline")
        self.assertLess(time.time() - t0, 20)
        for name in data:
            r = self.s.get(self.url + "/v1/objects/lv/" + name, timeout=10)
            if hrw_owner(smap, "lv", name)["daemon_id"] == victim["daemon_id"]:
                self.assertEqual(r.status_code, 503)
                self.assertIn("t[%s]" % victim["daemon_id"], r.json()["message"])
            else:
                self.assertEqual(r.status_code, 200)
        r = self.s.get(self.url + "/v1/buckets/lv", json={"action": "list", "value": {"flags": "0"}})
        self.assertEqual(r.status_code, 503)
        self.assertIn("t[%s]" % victim["daemon_id"], r.json()["message"])
        self.create("lv-other")  # control plane keeps working
        # back: same id, same data, the bucket created meanwhile is known
        self.c.cli("playground", "start", "--dir", self.c.dir)
        wait_until(lambda: not self.c.smap()["tmap"][victim["daemon_id"]].get("flags", 0) & (1 << 16), 30,
                   what="victim back")
        self.check_all("lv", data)
        vurl = victim["public_net"]["direct_url"]
        bmd = requests.get(vurl + "/v1/daemon?what=bmd").json()
        self.assertIn("lv-other", bmd["providers"]["ais"]["@#"])


class TestRebalance(ClusterTest):
    def reader(self, data, stop, failures):
        s = requests.Session()
        names = sorted(data)
        rnd = random.Random(1)
        n = 0
        while not stop.is_set() and n < 100000:
            name = rnd.choice(names)
            try:
                r = s.get(self.url + "/v1/objects/rb/" + name, timeout=10)
                if r.status_code != 200 or hashlib.sha256(r.content).hexdigest() != data[name]:
                    failures.append((name, r.status_code, r.text[:200]))
            except requests.RequestException as e:
                failures.append((name, "exc", str(e)))
            n += 1

    def test_add_and_decommission(self):
        self.create("rb")
        data = self.fill("rb", 400)
        stop, failures = threading.Event(), []
        t = threading.Thread(target=self.reader, args=(data, stop, failures))
        t.start()
        try:
            self.c.cli("playground", "add-target", "--dir", self.c.dir)
            wait_until(lambda: len(self.c.smap()["tmap"]) == 4, 30, what="4 targets")
            r = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"Kind": "rebalance"})
            self.assertEqual(r.status_code, 200, r.text)
            st = self.wait_job(r.json()["uuid"])
            self.assertEqual(st["err"], "")
            # every object is on its HRW owner now
            smap = self.c.smap()
            newt = [tid for tid in smap["tmap"] if self.target_name_by_id(tid) == "t3"][0]
            on_new = [n for n in data if hrw_owner(smap, "rb", n)["daemon_id"] == newt]
            self.assertGreater(len(on_new), 40)
            for n in on_new[:50]:
                r = self.s.get(smap["tmap"][newt]["public_net"]["direct_url"] + "/v1/objects/rb/" + n,
                               headers={"Ais-No-Gfn": "true"})
                self.assertEqual(r.status_code, 200, n)
            stats = self.s.get(self.url + "/v1/cluster", params={"what": "qryxstats"},
                               json={"ID": st["uuid"]}).json()
            moved = sum(int(sn["stats"]["out-objs"]) for arr in stats.values() for sn in arr)
            self.assertEqual(moved, len(on_new))
            # every target scanned its objects: loc-bytes counts their bytes along with loc-objs
            for arr in stats.values():
                for sn in arr:
                    if int(sn["stats"]["loc-objs"]) > 0:
                        self.assertGreater(int(sn["stats"]["loc-bytes"]), 0, sn)
            # status_all filters by id (and kind)
            r = self.s.get(self.url + "/v1/cluster", params={"what": "status_all"}, json={"id": st["uuid"]})
            self.assertEqual([x["uuid"] for x in r.json()], [st["uuid"]])
            r = self.s.get(self.url + "/v1/cluster", params={"what": "status_all"}, json={"kind": "archive"})
            self.assertEqual(r.json() or [], [])
            # health?cii reports the real RMD version (the rebalance id is g<version>)
            cii = self.s.get(self.c.node_url("t3") + "/v1/health", params={"cii": "true"}).json()
            self.assertEqual("g" + cii["rmd"]["version"], st["uuid"])
            self.assertEqual(cii["etlmd"], {"version": "0"})
            # decommission one of the original targets
            victim = [tid for tid in smap["tmap"] if tid != newt][0]
            r = self.s.put(self.url + "/v1/cluster", json={"action": "decommission-node",
                                                          "value": {"sid": victim, "no_shutdown": True}})
            self.assertEqual(r.status_code, 200, r.text)
            self.wait_job(r.text)
            wait_until(lambda: victim not in self.c.smap()["tmap"], 30, what="victim removed from the Smap")
        finally:
            stop.set()
            t.join(60)
        self.assertEqual(failures, [], failures[:5])
        self.check_all("rb", data)
        names = [e["name"] for e in self.s.get(self.url + "/v1/buckets/rb",
                                               json={"action": "list", "value": {"flags": "0"}}).json()["entries"]]
        self.assertEqual(names, sorted(data))

    def test_playground_keeps_a_decommissioned_target_down(self):
        victim = sorted(self.c.smap()["tmap"])[0]
        name = self.target_name_by_id(victim)
        self.c.cli("cluster", "decommission", "t[%s]" % victim, "--wait")
        wait_until(lambda: victim not in self.c.smap()["tmap"], 30, what="victim removed from the Smap")
        status = lambda: self.c.cli("playground", "status", "--dir", self.c.dir, check=False).stdout  # noqa: E731
        wait_until(lambda: re.search(r"^%s\s+target\s+\d+\s+-\s+stopped" % name, status(), re.M), 30,
                   what="the decommissioned target shut down")
        # restarting the playground does not bring it back under its old id
        for _ in range(2):
            p = self.c.cli("playground", "start", "--dir", self.c.dir)
            self.assertIn("%s (t[%s]) was decommissioned" % (name, victim), p.stdout)
            self.assertRegex(status(), r"(?m)^%s\s+target\s+\d+\s+-\s+decommissioned" % name)
            time.sleep(1)
            self.assertNotIn(victim, self.c.smap()["tmap"])
            self.assertEqual(len(self.c.smap()["tmap"]), self.targets - 1)
            self.c.cli("playground", "stop", "--dir", self.c.dir)  # the second round starts from nothing

    def test_maintenance(self):
        self.create("rb")
        data = self.fill("rb", 200)
        smap = self.c.smap()
        victim = sorted(smap["tmap"])[0]
        r = self.s.put(self.url + "/v1/cluster", json={"action": "start-maintenance", "value": {"sid": victim}})
        self.assertEqual(r.status_code, 200, r.text)
        self.wait_job(r.text)
        smap = self.c.smap()
        self.assertTrue(smap["tmap"][victim]["flags"] & 4)
        vdir = os.path.join(self.c.dir, self.target_name_by_id(victim), "mp1", "@ais", "rb", "%ob")
        left = [f for _, _, fs in os.walk(vdir) for f in fs]
        self.assertEqual(left, [])  # everything moved off
        self.check_all("rb", data)
        # back, through the CLI this time
        p = self.c.cli("cluster", "maintenance", "stop", "t[%s]" % victim, "--wait")
        self.assertIn("stop-maintenance %s: rebalance g" % victim, p.stdout)
        self.assertIn("finished", p.stdout)
        self.check_all("rb", data)
        p = self.c.cli("job", "show", "rebalance", "--all")
        self.assertRegex(p.stdout, r"NODE\s+ID\s+KIND\s+BUCKET\s+OBJECTS\s+BYTES\s+START\s+END\s+STATE")
        self.assertIn("Finished", p.stdout)
        self.assertEqual(self.job_status("nonexistent-job").status_code, 404)


class TestRebalanceReadRace(ClusterTest):
    reader = TestRebalance.reader

    def setUp(self):
        # each read that misses here while a rebalance runs waits 0.3 s before asking its neighbours
        start_cluster(self, targets=self.targets, prefix="shale-cl-", env={"SHALE_FAULT": "read-before-gfn@300"})

    def test_object_moved_while_neighbours_asked(self):
        """reads during the rebalance after a target joins: the new owner misses an object, and the rebalance
        sends it there (its sender dropping its own copy) before the neighbours are asked; the object is here
        now, and served (the build before answered 404 "does not exist", as a CI run of
        test_add_and_decommission once did). Made certain after the rebalance: an object the new target owns
        is written while a read of it waits between its look here and the neighbours' answers."""
        self.create("rb")
        data = self.fill("rb", 300)
        # what travels with a moved object: 20 custom keys (the build before sent 16), a multipart upload's parts
        custom = {"k%02d" % i: "v%d" % i for i in range(20)}
        for i in range(30):
            r = self.s.patch(self.url + "/v1/objects/rb/o/%05d" % i, json={"value": custom})
            self.assertEqual(r.status_code, 200, r.text)
            uid = self.s.post(self.url + "/v1/objects/rb/mpu/%d" % i, json={"action": "mpt-upload"}).text
            for n, part in ((1, b"a" * 1000), (2, b"b" * 10)):
                r = self.s.put(self.url + "/v1/objects/rb/mpu/%d" % i, data=part, params={"uploadId": uid,
                                                                                         "partNumber": n})
                self.assertEqual(r.status_code, 200, r.text)
            r = self.s.post(self.url + "/v1/objects/rb/mpu/%d" % i, params={"uploadId": uid}, json={
                "action": "mpt-complete", "value": [{"part-number": 1, "etag": ""}, {"part-number": 2, "etag": ""}]})
            self.assertEqual(r.status_code, 200, r.text)
        stop, failures = threading.Event(), []
        readers = [threading.Thread(target=self.reader, args=(data, stop, failures)) for _ in range(6)]
        for t in readers:
            t.start()
        try:
            self.c.cli("playground", "add-target", "--dir", self.c.dir)
            wait_until(lambda: len(self.c.smap()["tmap"]) == 4, 30, what="4 targets")
            r = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"Kind": "rebalance"})
            self.assertEqual(r.status_code, 200, r.text)
            self.assertEqual(self.wait_job(r.json()["uuid"])["err"], "")
        finally:
            stop.set()
            for t in readers:
                t.join(60)
        self.assertEqual(failures, [], failures[:5])
        smap = self.c.smap()
        newt = [tid for tid in smap["tmap"] if self.target_name_by_id(tid) == "t3"][0]
        direct = smap["tmap"][newt]["public_net"]["direct_url"] + "/v1/objects/rb/"
        moved = [i for i in range(30) if hrw_owner(smap, "rb", "o/%05d" % i)["daemon_id"] == newt]
        self.assertTrue(moved)
        for i in moved:
            r = self.s.head(direct + "o/%05d" % i, headers={"Ais-No-Gfn": "true"})
            self.assertEqual(r.status_code, 200, i)
            self.assertEqual(len([k for k in r.headers["Ais-Custom-Md"].split(",") if k.strip().startswith("k")]),
                             20, r.headers["Ais-Custom-Md"])
        moved = [i for i in range(30) if hrw_owner(smap, "rb", "mpu/%d" % i)["daemon_id"] == newt]
        self.assertTrue(moved)
        for i in moved:
            r = self.s.head(direct + "mpu/%d" % i, params={"props": "name,size,chunked"}, headers={"Ais-No-Gfn": "true"})
            self.assertEqual((r.status_code, r.headers.get("Ais-Chunks-Count"), r.headers.get(
                "Ais-Chunks-Max-Chunk-Size")), (200, "2", "1000"), i)
        name = [n for n in ("late/%d" % i for i in range(1000)) if hrw_owner(smap, "rb", n)["daemon_id"] == newt][0]
        got = {}

        def get():
            r = requests.get(self.url + "/v1/objects/rb/" + name, timeout=30)
            got["r"] = (r.status_code, r.content if r.status_code == 200 else r.text[:300])
        t = threading.Thread(target=get)
        t.start()
        time.sleep(0.1)  # the read has missed it on t3 and waits 0.3 s before asking the others
        r = self.s.put(self.url + "/v1/objects/rb/" + name, data=b"arrived meanwhile")
        self.assertEqual(r.status_code, 200, r.text)
        t.join(30)
        self.assertEqual(got["r"], (200, b"arrived meanwhile"))
        self.assertIn("ais://rb/%s: came by the rebalance while the neighbours were asked for it" % name,
                      self.c.log("t3"))
        self.check_all("rb", data)


class TestMetadata(ClusterTest):
    def test_restart_with_older_metadata_catches_up(self):
        self.create("m1")
        self.c.cli("playground", "stop", "--dir", self.c.dir)  # all down
        # start only the proxy, change metadata while the targets are down
        topo = self.c.topology()
        p0 = [n for n in topo["nodes"] if n["name"] == "p0"][0]
        pproc = subprocess.Popen([os.path.join(os.path.dirname(SHALE), "shaled"), "--config",
                                  os.path.join(self.c.dir, "p0", "shale.json"), "--role", "proxy", "--bind",
                                  "127.0.0.1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        with open(os.path.join(self.c.dir, "p0", "shaled.pid"), "w") as f:
            f.write(str(pproc.pid))
        wait_until(lambda: requests.get(self.url + "/v1/health", timeout=1).status_code == 200, 20, what="proxy")
        for b in ("m2", "m3"):
            self.create(b)
        self.s.put(self.url + "/v1/cluster", json={"action": "set-config", "value": {"checksum": {"type": "md5"}}})
        pbmd = requests.get(self.url + "/v1/daemon?what=bmd").json()
        # targets come back with their older Smap/BMD/config and catch up
        self.c.cli("playground", "start", "--dir", self.c.dir)
        for n in topo["nodes"]:
            if n["role"] != "target":
                continue
            u = "http://127.0.0.1:%d" % n["port"]
            wait_until(lambda: requests.get(u + "/v1/daemon?what=bmd").json()["version"] == pbmd["version"], 20,
                       what="BMD catch-up on " + n["name"])
            self.assertEqual(requests.get(u + "/v1/daemon?what=config").json()["checksum"]["type"], "md5")
            self.assertEqual(requests.get(u + "/v1/daemon?what=smap").json()["version"],
                             self.c.smap()["version"])
        self.create("m4")  # new buckets take the checksum type of the updated config
        r = self.s.put(self.url + "/v1/objects/m4/x", data=b"1")
        self.assertEqual(r.status_code, 200)
        self.assertEqual(r.headers["Ais-Checksum-Type"], "md5")

    def test_foreign_cluster_refused(self):
        # a target of another cluster tries to join this one
        other = Cluster(self.tmp, proxies=1, targets=1, name="other").start()
        try:
            other.cli("playground", "stop", "--dir", other.dir)
            tconf = os.path.join(other.dir, "t0", "shale.json")
            with open(tconf) as f:
                cfg = json.load(f)
            cfg["proxy"]["primary_url"] = self.url
            with open(tconf, "w") as f:
                json.dump(cfg, f)
            cmd = [os.path.join(os.path.dirname(SHALE), "shaled"), "--config", tconf, "--role", "target", "--bind",
                   "127.0.0.1"]
            # with its own cluster's secret it is not even heard
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("join refused", p.stderr + p.stdout)
            self.assertIn("cluster secret", p.stderr + p.stdout)
            self.assertEqual(len(self.c.smap()["tmap"]), 3)
            self.assertIn("cluster signature does not match", self.c.log("p0"))
            # with this cluster's secret it is heard, and refused for being another cluster's member
            sec = os.path.join(other.dir, "t0", "cluster.secret")
            os.unlink(sec)
            shutil.copy2(os.path.join(self.c.dir, "p0", "cluster.secret"), sec)
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("was a member of cluster", p.stderr + p.stdout)
            self.assertIn("remove its node metadata", p.stderr + p.stdout)
            self.assertEqual(len(self.c.smap()["tmap"]), 3)
        finally:
            other.stop()


if __name__ == "__main__":
    main()
