#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""`shale storage mountpath attach|detach|enable|disable TARGET MOUNTPATH` (AIStore's `ais storage mountpath ...`:
PUT|POST|DELETE /v1/reverse/daemon/mountpaths, header Ais-Node-Id, {"action": "attach-mp", "value": PATH}) on a
gateway and one target with two mountpaths: an attached mountpath takes its share of the objects (resilver), a
disabled one gives all of them away and takes no new PUT, an enabled one takes its share back, a detached one is
emptied and forgotten, and a restart keeps the list; objects stay readable throughout (a reader thread counts
failed GETs) and mirror copies are kept. Bad input (not a mountpath, a file, a missing or nested directory, the
last enabled mountpath, a missing argument) is refused naming it."""
import hashlib
import json
import os
import signal
import threading
import time

import requests

from harness import ClusterTest, main, start_cluster, stop_cluster, wait_until

J = {"Content-Type": "application/json"}
NOBJ = 200
NMIR = 30


class TestMountpath(ClusterTest):
    @classmethod
    def setUpClass(cls):
        start_cluster(cls, targets=1, mountpaths=2)
        cls.tid = next(iter(cls.c.smap()["tmap"]))
        tn = [n for n in cls.c.topology()["nodes"] if n["role"] == "target"][0]["name"]
        cls.tname = tn
        cls.mp1, cls.mp2 = (os.path.join(cls.c.dir, tn, "mp%d" % k) for k in (1, 2))
        cls.mp3 = os.path.join(cls.c.dir, tn, "mp3")
        os.makedirs(cls.mp3)

    @classmethod
    def tearDownClass(cls):
        stop_cluster(cls)

    # ---- helpers ----

    def mpaths(self):
        r = self.s.get(self.url + "/v1/reverse/daemon", params={"what": "mountpaths"},
                       headers={"Ais-Node-Id": self.tid}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        return r.json()

    def cli(self, *args, check=True):
        return self.c.cli("storage", "mountpath", *args, check=check, timeout=300)

    def head(self, b, name):
        r = self.s.head(self.url + "/v1/objects/%s/%s" % (b, name), timeout=30, allow_redirects=True)
        self.assertEqual(r.status_code, 200, "%s/%s" % (b, name))
        return r.headers

    def location(self, b, name):
        return self.head(b, name)["Ais-Location"].split(":", 1)[1]

    def locations(self):
        return {k: self.location(*k) for k in self.data}

    def check_reads(self):
        for (b, name), md5 in self.data.items():
            r = self.s.get(self.url + "/v1/objects/%s/%s" % (b, name), timeout=30)
            self.assertEqual(r.status_code, 200, "%s/%s: %s" % (b, name, r.text))
            self.assertEqual(hashlib.md5(r.content).hexdigest(), md5, "%s/%s" % (b, name))

    def check_mirror(self, avoid=()):
        """every object of ais://mir has 2 replicas, none on a mountpath of avoid"""
        for (b, name) in self.data:
            if b != "mir":
                continue
            h = self.head(b, name)
            self.assertEqual(h["Ais-Mirror-Copies"], "2", "%s/%s: %s" % (b, name, dict(h)))
            for mp in avoid:
                self.assertNotIn(mp, h["Ais-Mirror-Paths"], "%s/%s" % (b, name))

    def put(self, b, name, n=None):
        body = os.urandom(300 + (n if n is not None else len(self.data)) % 700)
        r = self.s.put(self.url + "/v1/objects/%s/%s" % (b, name), data=body, timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        self.data[(b, name)] = hashlib.md5(body).hexdigest()

    def reading(self):
        """a reader thread that GETs the objects over and over, counting failures, until the returned stop()"""
        stop, errs, n = threading.Event(), [], [0]
        keys = list(self.data.items())

        def run():
            s = requests.Session()
            while not stop.is_set():
                for (b, name), md5 in keys:
                    if stop.is_set():
                        break
                    try:
                        r = s.get(self.url + "/v1/objects/%s/%s" % (b, name), timeout=30)
                        if r.status_code != 200 or hashlib.md5(r.content).hexdigest() != md5:
                            errs.append("%s/%s: %d %s" % (b, name, r.status_code, r.text[:200]))
                    except requests.RequestException as e:
                        errs.append("%s/%s: %s" % (b, name, e))
                    n[0] += 1
        t = threading.Thread(target=run, daemon=True)
        t.start()

        def done():
            stop.set()
            t.join(60)
            self.assertEqual(errs[:5], [], "%d of %d GETs failed during the resilver" % (len(errs), n[0]))
            self.assertGreater(n[0], 0)
        return done

    def restart_target(self):
        pid = self.c.pid(self.tname)
        os.kill(pid, signal.SIGTERM)
        wait_until(lambda: not os.path.exists("/proc/%d" % pid), 30, what="the target to stop")
        self.c.start()
        wait_until(lambda: requests.get(self.c.node_url(self.tname) + "/v1/health", timeout=2).status_code == 200,
                   30, what="the target to serve")
        wait_until(lambda: self.s.get(self.url + "/v1/health", params={"readiness": "true"}, timeout=5).status_code
                   == 200, 30, what="the cluster")

    # ---- the test ----

    def test_lifecycle(self):
        self.data = {}
        self.assertEqual(self.s.post(self.url + "/v1/buckets/mpb", headers=J,
                                     data=json.dumps({"action": "create-bck"})).status_code, 200)
        r = self.s.post(self.url + "/v1/buckets/mir", headers=J, data=json.dumps(
            {"action": "create-bck", "value": {"mirror": {"enabled": True, "copies": 2}}}))
        self.assertEqual(r.status_code, 200, r.text)
        for i in range(NOBJ):
            self.put("mpb", "d%d/o%03d" % (i % 4, i), i)
        for i in range(NMIR):
            self.put("mir", "m%02d" % i, i)
        wait_until(lambda: all(self.head(b, n)["Ais-Mirror-Copies"] == "2" for (b, n) in self.data if b == "mir"),
                   60, what="put-copies")
        self.assertEqual(sorted(self.mpaths()["available"]), [self.mp1, self.mp2])

        # attach: the new mountpath takes its share; every object stays readable meanwhile
        done = self.reading()
        p = self.cli("attach", "t[%s]" % self.tid, self.mp3, "--wait")
        done()
        self.assertIn("attached", p.stdout)
        self.assertEqual(sorted(self.mpaths()["available"]), [self.mp1, self.mp2, self.mp3])
        self.check_reads()
        locs = self.locations()
        on3 = sum(1 for v in locs.values() if v == self.mp3)
        self.assertGreater(on3, NOBJ // 10, "objects on the attached mountpath: %d" % on3)
        self.assertTrue(os.path.isdir(os.path.join(self.mp3, "@ais", "mpb", "%ob")))
        self.check_mirror()

        # disable: nothing left on it, no new PUT lands there, reads go on
        done = self.reading()
        self.cli("disable", self.tid, self.mp1, "--wait")
        done()
        m = self.mpaths()
        self.assertEqual(m["disabled"], [self.mp1], m)
        self.assertNotIn(self.mp1, m["available"])
        st = json.loads(self.c.cli("storage", "--json").stdout)["t[%s]" % self.tid]
        self.assertEqual(st["state"][self.mp1], "disabled", st)
        self.assertIn("disabled", self.c.cli("storage").stdout)
        for i in range(40):
            self.put("mpb", "new/n%02d" % i, i)
        self.check_reads()
        locs = self.locations()
        self.assertNotIn(self.mp1, set(locs.values()))
        self.check_mirror(avoid=[self.mp1])
        left = [f for _, _, fs in os.walk(os.path.join(self.mp1, "@ais")) for f in fs]
        self.assertEqual(left, [], "files left on the disabled mountpath")
        self.assertEqual(self.cli("disable", self.tid, self.mp1).stdout.count("nothing to do"), 1)

        # enable: it takes its share back
        self.cli("enable", self.tid, self.mp1, "--wait")
        self.assertEqual(self.mpaths()["disabled"], [])
        locs = self.locations()
        self.assertGreater(sum(1 for v in locs.values() if v == self.mp1), NOBJ // 10)
        self.check_reads()

        # detach: emptied, then forgotten; mirror copies kept on what is left
        done = self.reading()
        p = self.cli("detach", self.tid, self.mp2, "--wait")
        done()
        m = self.mpaths()
        self.assertEqual(sorted(m["available"]), [self.mp1, self.mp3], m)
        self.assertEqual(m["disabled"], [])
        self.check_reads()
        self.assertNotIn(self.mp2, set(self.locations().values()))
        self.check_mirror(avoid=[self.mp2])
        self.assertFalse(os.path.exists(os.path.join(self.mp2, ".shale", "daemon_id")))
        st = json.loads(self.c.cli("storage", "--json").stdout)["t[%s]" % self.tid]
        self.assertEqual(sorted(st["mountpaths"]), [self.mp1, self.mp3], st)

        # a restart keeps the list (mp2 is still in the target's fspaths: detached all the same)
        self.restart_target()
        m = self.mpaths()
        self.assertEqual(sorted(m["available"]), [self.mp1, self.mp3], m)
        self.check_reads()
        self.check_mirror(avoid=[self.mp2])

        # bad input: named, 4xx, nothing changed
        p = self.cli("detach", self.tid, self.mp2, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(self.mp2, p.stderr)
        self.assertIn("no such mountpath", p.stderr)
        f = os.path.join(self.c.dir, "afile")
        with open(f, "w") as fh:
            fh.write("x")
        for bad, why in ((f, "not a directory"), (os.path.join(self.c.dir, "nope"), "No such file"),
                         (os.path.join(self.mp1, "sub"), "inside"), (self.mp1, "already")):
            if why == "inside":
                os.makedirs(bad, exist_ok=True)
            p = self.cli("attach", self.tid, bad, check=False)
            self.assertNotEqual(p.returncode, 0, bad)
            self.assertIn(bad, p.stderr)
            self.assertIn(why, p.stderr)
        for method, action in (("PUT", "attach-mp"), ("DELETE", "detach-mp")):
            r = self.s.request(method, self.url + "/v1/reverse/daemon/mountpaths", headers=dict(J, **{
                "Ais-Node-Id": self.tid}), data=json.dumps({"action": action, "value": f}), timeout=30)
            self.assertIn(r.status_code, range(400, 500), r.text)
            self.assertIn(f, r.text)
        r = self.s.delete(self.url + "/v1/reverse/daemon/mountpaths", params={"dntres": "true"}, headers=dict(J, **{
            "Ais-Node-Id": self.tid}), data=json.dumps({"action": "detach-mp", "value": self.mp3}), timeout=30)
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("dntres", r.text)
        self.assertIn(self.mp3, self.mpaths()["available"])
        self.cli("disable", self.tid, self.mp3, "--wait")
        p = self.cli("detach", self.tid, self.mp1, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("last enabled mountpath", p.stderr)
        r = self.s.post(self.url + "/v1/reverse/daemon/mountpaths", headers=dict(J, **{"Ais-Node-Id": self.tid}),
                        data=json.dumps({"action": "disable-mp", "value": self.mp1}), timeout=30)
        self.assertEqual(r.status_code, 409, r.text)
        self.cli("enable", self.tid, self.mp3, "--wait")
        self.assertEqual(sorted(self.mpaths()["available"]), [self.mp1, self.mp3])
        self.check_reads()

        # the detached mountpath (still in fspaths) attached again: it takes its share back
        self.cli("attach", self.tid, self.mp2, "--wait")
        self.assertEqual(sorted(self.mpaths()["available"]), [self.mp1, self.mp2, self.mp3])
        self.assertTrue(os.path.exists(os.path.join(self.mp2, ".shale", "daemon_id")))
        self.assertIn(self.mp2, set(self.locations().values()))
        self.check_reads()

    def test_bad_args(self):
        for args, word in ((("attach", self.tid), "MOUNTPATH"), (("attach",), "TARGET"),
                           (("detach", self.tid, "relative/dir"), "relative/dir"),
                           (("enable", "t[nosuch]", "/x"), "nosuch"),
                           (("attach", self.tid, "/x", "--bogus"), "--bogus")):
            p = self.cli(*args, check=False)
            self.assertNotEqual(p.returncode, 0, args)
            self.assertIn(word, p.stderr, args)


if __name__ == "__main__":
    main()
