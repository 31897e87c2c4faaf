# SPDX-License-Identifier: MIT
"""Primary failover: 3 gateways and 4 targets; kill -9 the primary under a
PUT/GET load, a new primary is elected, no acknowledged write is lost, admin
calls work again; the old primary comes back as a gateway; set-primary."""
import hashlib
import json
import os
import random
import shutil
import signal
import tempfile
import threading
import time
import unittest

import requests

from harness import Cluster, main, wait_until


class TestFailover(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="shale-fo-")
        self.c = Cluster(self.tmp, proxies=3, targets=4).start()
        wait_until(lambda: len(self.c.smap()["tmap"]) == 4 and len(self.c.smap()["pmap"]) == 3, 60,
                   what="3 gateways and 4 targets")
        self.s = requests.Session()

    def tearDown(self):
        self.c.stop()
        if not os.environ.get("SHALE_KEEP_TMP"):
            shutil.rmtree(self.tmp, ignore_errors=True)

    def smap_at(self, url):
        return requests.get(url + "/v1/daemon?what=smap", timeout=5).json()

    def storm(self, url, stop, acked, errors, seed):
        s = requests.Session()
        rnd = random.Random(seed)
        for i in range(100000):
            if stop.is_set():
                return
            name = "w%d/%05d" % (seed, i)
            d = os.urandom(rnd.randint(10, 4000))
            try:
                r = s.put(url + "/v1/objects/fo/" + name, data=d, timeout=10)
                if r.status_code == 200:
                    acked[name] = hashlib.sha256(d).hexdigest()
                else:
                    errors.append(r.status_code)
                if acked:
                    k = rnd.choice(list(acked))
                    g = s.get(url + "/v1/objects/fo/" + k, timeout=10)
                    if g.status_code != 200 or hashlib.sha256(g.content).hexdigest() != acked[k]:
                        errors.append(("GET", k, g.status_code))
            except requests.RequestException as e:
                errors.append(str(e)[:80])

    def test_kill_primary_under_load(self):
        topo = self.c.topology()["nodes"]
        p0, p1, p2 = [n for n in topo if n["role"] == "proxy"]
        u0, u1, u2 = ["http://127.0.0.1:%d" % n["port"] for n in (p0, p1, p2)]
        old = self.smap_at(self.c.url)["proxy_si"]["daemon_id"]
        # the HRW candidate (highest id digest but the primary) is made non-electable: the next one wins
        sm0 = self.smap_at(self.c.url)
        ranked = sorted((pid for pid in sm0["pmap"] if pid != old), key=lambda p: -int(sm0["pmap"][p]["id_digest"]))
        top = ranked[0]
        tname = next(n["name"] for n in (p1, p2) if self.smap_at("http://127.0.0.1:%d" % n["port"])["proxy_si"]
                     and requests.get("http://127.0.0.1:%d/v1/daemon?what=snode" % n["port"]).json()["daemon_id"]
                     == top)
        cfg = os.path.join(self.c.dir, tname, "shale.json")
        with open(cfg) as f:
            conf = json.load(f)
        conf.setdefault("proxy", {})["non_electable"] = True
        with open(cfg, "w") as f:
            json.dump(conf, f)
        self.c.kill9(tname)
        self.c.cli("playground", "start", "--dir", self.c.dir)
        wait_until(lambda: self.smap_at(self.c.url)["pmap"][top].get("flags", 0) & 1, 30,
                   what="the top candidate flagged non-electable")
        wait_until(lambda: not self.smap_at(self.c.url)["pmap"][top].get("flags", 0) & (1 << 16), 30,
                   what="it is back")
        r = self.s.post(u1 + "/v1/buckets/fo", json={"action": "create-bck"})
        self.assertEqual(r.status_code, 200, r.text)
        stop, acked, errors = threading.Event(), {}, []
        ths = [threading.Thread(target=self.storm, args=(u, stop, acked, errors, i))
               for i, u in enumerate((u1, u2, u1, u2))]
        for t in ths:
            t.start()
        try:
            wait_until(lambda: len(acked) >= 50, 30, what="writes before the kill")
            t0 = time.time()
            self.c.kill9("p0")

            # admin calls work again through the surviving gateways: the first bucket create that succeeds
            def created():
                try:
                    return self.s.post(u1 + "/v1/buckets/after", json={"action": "create-bck"},
                                       timeout=10).status_code == 200
                except requests.RequestException:
                    return False
            wait_until(created, 60, interval=0.25, what="a bucket create after the primary died")
            failover = time.time() - t0
            n_at_failover = len(acked)
            wait_until(lambda: len(acked) >= n_at_failover + 50, 30, what="writes after the failover")
        finally:
            stop.set()
            for t in ths:
                t.join(60)
        print("failover: first successful bucket create %.1fs after kill -9 of the primary" % failover)
        # keepalive 2s x factor 3 + the vote: well within 30s
        self.assertLess(failover, 30)
        sm = self.smap_at(u1)
        new = sm["proxy_si"]["daemon_id"]
        self.assertNotEqual(new, old)
        self.assertEqual(new, ranked[1], "the electable gateway with the highest digest after %s" % top)
        self.assertEqual(self.smap_at(u2)["proxy_si"]["daemon_id"], new)
        self.assertTrue(sm["pmap"][old].get("flags", 0) & (1 << 16), "old primary flagged offline")
        for t in sm["tmap"].values():
            self.assertEqual(self.smap_at(t["public_net"]["direct_url"])["proxy_si"]["daemon_id"], new)
        # no acknowledged write lost
        for name, h in acked.items():
            g = self.s.get(u1 + "/v1/objects/fo/" + name, timeout=10)
            self.assertEqual(g.status_code, 200, name)
            self.assertEqual(hashlib.sha256(g.content).hexdigest(), h, name)
        names = [e["name"] for e in self.s.get(u2 + "/v1/buckets/fo", json={
            "action": "list", "value": {"flags": "0"}}).json()["entries"]]
        self.assertTrue(set(acked) <= set(names))
        # admin: config, job status
        r = self.s.put(u2 + "/v1/cluster", json={"action": "set-config", "value": {"lru": {"capacity_upd_time": "9m"}}})
        self.assertEqual(r.status_code, 200, r.text)

        # the old primary comes back as a gateway
        self.c.cli("playground", "start", "--dir", self.c.dir)
        wait_until(lambda: not self.smap_at(u1)["pmap"][old].get("flags", 0) & (1 << 16), 60,
                   what="the old primary back in the map")
        self.assertEqual(self.smap_at(u0)["proxy_si"]["daemon_id"], new)
        self.assertEqual(self.smap_at(u1)["proxy_si"]["daemon_id"], new)
        r = self.s.post(u0 + "/v1/buckets/via-old", json={"action": "create-bck"})
        self.assertEqual(r.status_code, 200, r.text)  # forwarded to the new primary

        # set-primary back to it, with the CLI through another gateway
        self.c.url = u2  # the CLI's endpoint
        p = self.c.cli("cluster", "set-primary", "p[%s]" % old)
        self.assertIn("is the primary now", p.stdout)
        wait_until(lambda: all(self.smap_at(u)["proxy_si"]["daemon_id"] == old for u in (u0, u1, u2)), 30,
                   what="every gateway follows set-primary")
        r = self.s.post(u1 + "/v1/buckets/after-set", json={"action": "create-bck"})
        self.assertEqual(r.status_code, 200, r.text)
        # refused: not a gateway
        tid = next(iter(sm["tmap"]))
        p = self.c.cli("cluster", "set-primary", tid, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("not a gateway", p.stderr + p.stdout)


    def test_paused_primary_does_not_split_the_cluster(self):
        """A primary that was paused (SIGSTOP) while another was elected must not change cluster metadata when
        it resumes: it refuses until it has checked, then follows the new primary and learns what changed."""
        topo = self.c.topology()["nodes"]
        p0, p1, p2 = [n for n in topo if n["role"] == "proxy"]
        u0, u1, u2 = ["http://127.0.0.1:%d" % n["port"] for n in (p0, p1, p2)]
        old = self.smap_at(u0)["proxy_si"]["daemon_id"]
        pid = self.c.pid("p0")
        os.kill(pid, signal.SIGSTOP)
        try:
            wait_until(lambda: self.smap_at(u1)["proxy_si"]["daemon_id"] != old, 60, what="a new primary")

            def create(url, b):
                try:
                    return self.s.post(url + "/v1/buckets/" + b, json={"action": "create-bck"}, timeout=10)
                except requests.RequestException:
                    return None
            wait_until(lambda: (create(u1, "made-on-new") or requests.Response()).status_code == 200, 30,
                       what="a bucket created on the new primary")
        finally:
            os.kill(pid, signal.SIGCONT)
        # at once, through the old primary: refused (503) or forwarded to the new one, never made on its own
        r = create(u0, "via-old")
        self.assertIsNotNone(r)
        self.assertIn(r.status_code, (200, 503), r.text)
        if r.status_code == 503:
            self.assertIn("no longer the primary", r.json()["message"])
        wait_until(lambda: self.smap_at(u0)["proxy_si"]["daemon_id"] != old, 30, what="the old primary steps down")
        wait_until(lambda: (create(u0, "via-old") or requests.Response()).status_code in (200, 409), 30,
                   what="a bucket create through the old primary")
        # one view of the buckets everywhere: what the new primary made, and what went through the old one
        for u in (u0, u1, u2):
            wait_until(lambda: {"made-on-new", "via-old"} <= {b["name"] for b in self.s.get(
                u + "/v1/buckets/", timeout=10).json()}, 15, what="both buckets known at %s" % u)
        r = self.s.put(u1 + "/v1/objects/via-old/x", data=b"x")
        self.assertEqual(r.status_code, 200, r.text)


    def test_whole_cluster_restart_after_failover(self):
        """After a failover and changes made by the new primary, the whole cluster restarts: the configured
        primary comes up first with older metadata, the others with newer; they end with one primary, one
        view, and nothing made after the failover is forgotten."""
        topo = self.c.topology()["nodes"]
        p0, p1, p2 = [n for n in topo if n["role"] == "proxy"]
        u0, u1, u2 = ["http://127.0.0.1:%d" % n["port"] for n in (p0, p1, p2)]
        old = self.smap_at(u0)["proxy_si"]["daemon_id"]
        self.c.kill9("p0")
        wait_until(lambda: self.smap_at(u1)["proxy_si"]["daemon_id"] != old, 60, what="a new primary")
        for b in ("after1", "after2"):
            wait_until(lambda: self.s.post(u1 + "/v1/buckets/" + b, json={"action": "create-bck"},
                                           timeout=10).status_code == 200, 30, what="create " + b)
        r = self.s.put(u1 + "/v1/objects/after1/o", data=b"kept")
        self.assertEqual(r.status_code, 200, r.text)
        self.c.url = u1  # the playground's CLI: through a gateway that is up
        self.c.cli("playground", "stop", "--dir", self.c.dir)
        self.c.url = u0
        self.c.cli("playground", "start", "--dir", self.c.dir)

        def one_view():
            try:
                prim = {self.smap_at(u)["proxy_si"]["daemon_id"] for u in (u0, u1, u2)}
                return len(prim) == 1 and all({"after1", "after2"} <= {b["name"] for b in self.s.get(
                    u + "/v1/buckets/", timeout=5).json()} for u in (u0, u1, u2))
            except (requests.RequestException, ValueError, KeyError):
                return False
        wait_until(one_view, 60, interval=0.5, what="one primary and the buckets made after the failover")
        for u in (u0, u1, u2):
            r = self.s.post(u + "/v1/buckets/again-%d" % (u0, u1, u2).index(u), json={"action": "create-bck"},
                            timeout=10)
            self.assertEqual(r.status_code, 200, (u, r.text))
        r = self.s.get(u2 + "/v1/objects/after1/o")
        self.assertEqual(r.content, b"kept")


if __name__ == "__main__":
    main()
