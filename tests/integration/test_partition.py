# SPDX-License-Identifier: MIT
"""Network partitions: 3 gateways and 4 targets, each in its own network namespace (veth pairs on a bridge
the test creates and removes; the test process reaches every node through the bridge). A partition is a
blackhole route in each namespace of one side for every address of the other: the nodes of one side cannot
reach the other's, the client reaches both. Under a load of bucket creation, PUT, DELETE and GET, a checker
records every acknowledged operation and verifies after the heal: no acknowledged bucket or object lost, no
read of wrong bytes, and at most one side accepting cluster metadata changes while the network is split.
Needs root and iproute2; skipped otherwise."""
import hashlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import unittest

import requests

from harness import main, wait_until, check_sanitizer_reports
from test_netns import have_netns, lab_down, lab_up, sh, start_in_ns

PROXIES, TARGETS = 3, 4


class Checker:
    """What was acknowledged, and what each side accepted while split."""

    def __init__(self):
        self.mu = threading.Lock()
        self.buckets = set()       # created (200)
        self.objects = {}          # (bucket, name) -> sha256 of the last acknowledged PUT
        self.deleted = set()       # (bucket, name) acknowledged DELETEs (not PUT again since)
        self.torn = []             # GETs that answered 200 with bytes no PUT wrote
        self.meta_ok = {}          # side -> number of metadata changes accepted while split

    def put_ok(self, b, n, data):
        with self.mu:
            self.objects[(b, n)] = hashlib.sha256(data).hexdigest()
            self.deleted.discard((b, n))

    def delete_ok(self, b, n):
        with self.mu:
            self.objects.pop((b, n), None)
            self.deleted.add((b, n))

    def got(self, b, n, body, written):
        if hashlib.sha256(body).hexdigest() not in written:
            with self.mu:
                self.torn.append((b, n, len(body)))


@unittest.skipUnless(have_netns(), "needs root and ip netns")
class PartitionBase(unittest.TestCase):
    def setUp(self):
        self.tag = "%x" % (os.getpid() & 0xfff)
        # (10.200-249.x: test_netns, which may run beside this file, takes 10.100-199.x)
        self.subnet = "10.%d.%d" % (200 + (os.getpid() % 50), (os.getpid() >> 8) % 250 + 1)
        self.br = "slpb" + self.tag
        self.n = PROXIES + TARGETS
        self.ns = ["slp%s_%d" % (self.tag, i) for i in range(self.n)]
        self.procs = []
        self.routes = []  # (ns, address) blackholes in place
        self.tmp = tempfile.mkdtemp(prefix="shale-part-")
        self.addCleanup(self.cleanup)  # (also when the cluster does not come up: nothing is left behind)
        lab_up(self.br, self.subnet, self.ns, "slq" + self.tag)
        self.urls = ["http://%s:8080" % self.addr(i) for i in range(self.n)]
        self.s = requests.Session()
        self.last_err = None
        self.start_cluster()

    def cleanup(self):
        self.heal()
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait(5)
        lab_down(self.br, self.ns, "slq" + self.tag)
        for i in range(self.n):
            check_sanitizer_reports(os.path.join(self.tmp, "n%d" % i, "stdout.log"))
        if not os.environ.get("SHALE_KEEP_TMP"):
            shutil.rmtree(self.tmp, ignore_errors=True)

    def addr(self, i):
        return "%s.%d" % (self.subnet, 10 + i)

    def log(self, i):
        out = ""
        for f in ("log/shaled.log", "stdout.log"):
            try:
                with open(os.path.join(self.tmp, "n%d" % i, f), errors="replace") as fh:
                    out += fh.read()
            except OSError:
                pass
        return out

    # ---- the cluster: n0..n2 gateways (n0 the first primary), n3..n6 targets ----

    def start_node(self, i, role):
        d = os.path.join(self.tmp, "n%d" % i)
        os.makedirs(d, exist_ok=True)
        cfg = {"confdir": d + "/conf", "log_dir": d + "/log", "host_net": {"port": 8080},
               "proxy": {"primary_url": self.urls[0]},
               "keepalivetracker": {"target": {"interval": "1s", "factor": 3}},
               "timeout": {"max_keepalive": "1s", "cplane_operation": "1s"}}
        p = start_in_ns(self.ns[i], d, cfg, role, os.path.join(self.tmp, "n0") if i > 0 else None)
        self.procs.append(p)
        return p

    def start_cluster(self):
        self.start_node(0, "proxy")
        wait_until(lambda: requests.get(self.urls[0] + "/v1/health", timeout=1).status_code == 200, 30,
                   what="the first gateway")
        for i in range(1, self.n):
            self.start_node(i, "proxy" if i < PROXIES else "target")
        wait_until(lambda: self.smap(0) and len(self.smap(0)["pmap"]) == PROXIES and
                   len(self.smap(0)["tmap"]) == TARGETS, 60, what="every node joined")
        v = self.smap(0)["version"]
        wait_until(lambda: all((self.smap(i) or {}).get("version") == v for i in range(self.n)), 30,
                   what="one cluster map everywhere")
        self.ids = {}
        sm = self.smap(0)
        for m in ("pmap", "tmap"):
            for sid, sn in sm[m].items():
                self.ids[sn["public_net"]["direct_url"].rstrip("/")] = sid
        self.sid = [self.ids[u] for u in self.urls]

    def smap(self, i):
        try:
            r = requests.get(self.urls[i] + "/v1/daemon?what=smap", timeout=2)
            return r.json() if r.status_code == 200 else None
        except (requests.RequestException, ValueError):
            return None

    def primary_at(self, i):
        sm = self.smap(i)
        return sm["proxy_si"]["daemon_id"] if sm and sm.get("proxy_si") else None

    # ---- partitions ----

    def split(self, side_a):
        side_b = [i for i in range(self.n) if i not in side_a]
        for a in side_a:
            for b in side_b:
                for x, y in ((a, b), (b, a)):
                    sh("ip", "netns", "exec", self.ns[x], "ip", "route", "add", "blackhole", self.addr(y) + "/32")
                    self.routes.append((x, y))

    def heal(self):
        for x, y in self.routes:
            sh("ip", "netns", "exec", self.ns[x], "ip", "route", "del", "blackhole", self.addr(y) + "/32",
               check=False)
        self.routes = []

    # ---- the load and the checker ----

    def create(self, i, b):
        try:
            return self.s.post(self.urls[i] + "/v1/buckets/" + b, json={"action": "create-bck"}, timeout=10)
        except requests.RequestException:
            return None

    def put(self, i, b, n, data, chk):
        try:
            r = self.s.put(self.urls[i] + "/v1/objects/%s/%s" % (b, n), data=data, timeout=10)
        except requests.RequestException:
            return False
        if r.status_code == 200:
            chk.put_ok(b, n, data)
        else:
            self.last_err = "PUT %s/%s at n%d: %d %s" % (b, n, i, r.status_code, r.text[:300])
        return r.status_code == 200

    def delete(self, i, b, n, chk):
        try:
            r = self.s.delete(self.urls[i] + "/v1/objects/%s/%s" % (b, n), timeout=10)
        except requests.RequestException:
            return False
        if r.status_code == 200:
            chk.delete_ok(b, n)
        return r.status_code == 200

    def verify(self, chk, written):
        """Through every gateway: every acknowledged bucket listed, every acknowledged object read whole,
        every acknowledged delete gone."""
        self.assertEqual(chk.torn, [])
        for g in range(PROXIES):
            have = {b["name"] for b in self.s.get(self.urls[g] + "/v1/buckets/", timeout=10).json()}
            self.assertEqual(chk.buckets - have, set(), "buckets acknowledged and lost, at gateway n%d" % g)
        bad = []
        for (b, n), h in sorted(chk.objects.items()):
            g = hash(n) % PROXIES
            r = self.s.get(self.urls[g] + "/v1/objects/%s/%s" % (b, n), timeout=30)
            if r.status_code != 200 or hashlib.sha256(r.content).hexdigest() != h:
                bad.append((b, n, g, r.status_code, r.text[:200] if r.status_code != 200 else "wrong bytes"))
        self.assertEqual(bad, [], "%d of %d acknowledged objects lost or wrong" % (len(bad), len(chk.objects)))
        for b, n in sorted(chk.deleted):
            r = self.s.get(self.urls[0] + "/v1/objects/%s/%s" % (b, n), timeout=30)
            self.assertEqual(r.status_code, 404, "%s/%s deleted (acknowledged) and back" % (b, n))

    def bmd_version(self, i):
        try:
            r = requests.get(self.urls[i] + "/v1/daemon?what=bmd", timeout=2)
            return r.json().get("version") if r.status_code == 200 else None
        except (requests.RequestException, ValueError):
            return None

    def converged(self, want_primary):
        """one primary, and one cluster map and one bucket map on every node (the BMD can come a moment
        after the Smap: a gateway that lists buckets before it would look like a loss)"""
        prim = [self.primary_at(i) for i in range(self.n)]
        vers = {(self.smap(i) or {}).get("version") for i in range(self.n)}
        bmds = {self.bmd_version(i) for i in range(self.n)}
        return all(p == want_primary for p in prim) and len(vers) == 1 and len(bmds) == 1 and None not in bmds

    def wait_rebalanced(self):
        def idle():
            r = self.s.get(self.urls[self.primary_idx()] + "/v1/cluster?what=status",
                           data=json.dumps({"Kind": "rebalance"}), timeout=5)
            return r.status_code == 404 or (r.status_code == 200 and (r.json().get("end_time") or
                                                                       r.json().get("is_idle")))
        wait_until(idle, 90, interval=0.5, what="the rebalance after the heal")

    def primary_idx(self):
        p = self.primary_at(1) or self.primary_at(0)
        return self.sid.index(p)


class TestPartition(PartitionBase):
    def run_split(self, side, figures):
        """Split side (node indexes, the first primary among them) from the rest, under load on both
        sides; heal; the checker's verdict."""
        chk = Checker()
        written = set()
        base = ["o%03d" % i for i in range(40)]
        self.assertEqual(self.create(1, "before").status_code, 200)
        chk.buckets.add("before")
        for n in base:
            d = os.urandom(2000 + hash(n) % 3000)
            written.add(hashlib.sha256(d).hexdigest())
            self.assertTrue(self.put(1, "before", n, d, chk))
        old = self.primary_at(0)
        majority = [i for i in range(PROXIES) if i not in side]
        t_split = time.time()
        self.split(side)
        stop = threading.Event()
        accepted_minority = []

        def minority_load():
            """clients of the cut-off primary: bucket creations (must be refused), PUTs of objects whose
            owners it still reaches"""
            k = 0
            while not stop.is_set() and k < 400:
                r = self.create(0, "minority-%d" % k)
                if r is not None and r.status_code == 200:
                    accepted_minority.append(("minority-%d" % k, time.time() - t_split))
                    chk.buckets.add("minority-%d" % k)
                d = os.urandom(1500)
                written.add(hashlib.sha256(d).hexdigest())
                self.put(0, "before", "m%03d" % k, d, chk)
                k += 1
                time.sleep(0.2)
        th = threading.Thread(target=minority_load)
        th.start()
        try:
            # the majority elects its own primary
            new = wait_until(lambda: self.primary_at(majority[0]) not in (None, old) and
                             self.primary_at(majority[0]), 60, interval=0.2, what="a primary on the majority side")
            t_elected = time.time()
            # and takes admin operations again
            wait_until(lambda: (self.create(majority[0], "major-0") or requests.Response()).status_code == 200, 60,
                       interval=0.2, what="a bucket created on the majority side")
            t_resumed = time.time()
            chk.buckets.add("major-0")
            for k in range(1, 8):
                b = "major-%d" % k
                r = self.create(majority[k % len(majority)], b)
                self.assertEqual(r.status_code, 200, r.text)
                chk.buckets.add(b)
            cut_targets = [self.sid[i] for i in side if i >= PROXIES]
            if cut_targets:  # the majority flags the targets it cannot reach offline (and places around them)
                wait_until(lambda: all(self.smap(majority[0])["tmap"][t].get("flags", 0) & (1 << 16)
                                       for t in cut_targets), 30, interval=0.3, what="cut-off targets offline")
            acked = 0
            for k in range(60):  # (an owner on the other side fails a PUT until it is flagged offline)
                b = "major-%d" % (k % 8)
                d = os.urandom(1000 + k)
                written.add(hashlib.sha256(d).hexdigest())
                acked += self.put(majority[k % len(majority)], b, "x%03d" % k, d, chk)
            self.assertGreaterEqual(acked, 15 if cut_targets else 60, self.last_err)  # (owners cut off: refused)
            # writes and deletes of objects that existed before, on the majority side (their owner may be cut off:
            # then the PUT may fail, never be acknowledged and lost)
            for n in base[:10]:
                d = os.urandom(777)
                written.add(hashlib.sha256(d).hexdigest())
                self.put(majority[0], "before", n, d, chk)
            for n in base[10:16]:
                self.delete(majority[0], "before", n, chk)
            # reads on the majority side: right bytes, or an error (an owner cut off), never other bytes
            for (b, n) in list(chk.objects)[:40]:
                try:
                    r = self.s.get(self.urls[majority[0]] + "/v1/objects/%s/%s" % (b, n), timeout=10)
                except requests.RequestException:
                    continue
                if r.status_code == 200:
                    chk.got(b, n, r.content, written)
        finally:
            stop.set()
            th.join(60)
        r_last = self.create(0, "minority-last")
        t_heal = time.time()
        self.heal()
        wait_until(lambda: self.converged(new), 90, interval=0.5, what="one primary (%s) and one map" % new)
        t_one = time.time()
        self.wait_rebalanced()
        self.verify(chk, written)
        # the cut-off primary accepted no metadata change while the majority had its own, and said why
        self.assertEqual(accepted_minority, [], "the cut-off primary accepted bucket creations")
        self.assertEqual(r_last.status_code, 503, r_last.text)
        self.assertIn("needs a majority", r_last.json()["message"])
        self.assertIn("not a majority", self.log(0))
        # admin operations through the old primary work again (forwarded to the new one)
        wait_until(lambda: (self.create(0, "after-heal") or requests.Response()).status_code == 200, 30,
                   interval=0.3, what="a bucket created through the old primary")
        figures.update(elect=t_elected - t_split, resume=t_resumed - t_split, heal=t_one - t_heal,
                       objects=len(chk.objects), buckets=len(chk.buckets))
        print("partition %s: elected after %.1f s, admin operations resumed after %.1f s, one map %.1f s after "
              "the heal; %d acknowledged objects and %d buckets checked" %
              (side, figures["elect"], figures["resume"], figures["heal"], figures["objects"], figures["buckets"]))

    def test_primary_cut_off(self):
        """the primary alone on one side: it refuses bucket creations (503, needs a majority) while the other
        two gateways elect a primary and take creations, PUTs and DELETEs; after the heal the old primary
        follows the new one and nothing acknowledged on either side is lost (the build before adopted the
        cut-off primary's map and bucket list, and every bucket made on the majority side was gone)"""
        self.run_split([0], {})

    def test_primary_and_two_targets_cut_off(self):
        """the primary and two of the four targets on one side: objects PUT on either side (the cut-off one
        writes to the targets it reaches) are all there after the heal and its rebalance; the buckets made on
        the majority side too"""
        self.run_split([0, PROXIES, PROXIES + 1], {})


class TestFlapping(PartitionBase):
    def test_flapping_links_and_kill9(self):
        """the primary's link goes down and up four times (2.5 s each way: too short for an election, or
        just long enough), then the primary is killed -9 and started again, while clients create buckets,
        PUT, DELETE and GET through every gateway: no acknowledged bucket or object lost, no wrong bytes,
        and no bucket creation acknowledged through the cut-off gateway while it was cut off"""
        chk = Checker()
        written = set()
        self.assertEqual(self.create(1, "load").status_code, 200)
        chk.buckets.add("load")
        stop = threading.Event()
        cut = threading.Event()
        wrong_side = []

        def load(g):
            k = 0
            while not stop.is_set() and k < 2000:
                k += 1
                if k % 10 == 0:
                    b = "f%d-%d" % (g, k)
                    was_cut = cut.is_set()
                    r = self.create(g, b)
                    if r is not None and r.status_code == 200:
                        chk.buckets.add(b)
                        if g == 0 and was_cut and cut.is_set():
                            wrong_side.append(b)
                n = "g%d-%04d" % (g, k % 50)
                if k % 7 == 0:
                    self.delete(g, "load", n, chk)
                else:
                    d = os.urandom(500 + k % 1500)
                    with chk.mu:
                        written.add(hashlib.sha256(d).hexdigest())
                    self.put(g, "load", n, d, chk)
                try:
                    r = self.s.get(self.urls[g] + "/v1/objects/load/" + n, timeout=10)
                    if r.status_code == 200:
                        with chk.mu:
                            chk.got("load", n, r.content, written)
                except requests.RequestException:
                    pass
                time.sleep(0.05)
        ths = [threading.Thread(target=load, args=(g,)) for g in range(PROXIES)]
        for t in ths:
            t.start()
        try:
            for _ in range(4):
                # (cut only while every route is in place: a gateway that reaches one other while the routes go
                # in or out has a majority, and may accept)
                self.split([0])
                cut.set()
                time.sleep(2.5)
                cut.clear()
                self.heal()
                time.sleep(2.5)
            # kill -9 of whichever gateway is the primary now, and back
            prim = self.primary_at(1)
            pi = self.sid.index(prim)
            self.procs[pi].kill()
            self.procs[pi].wait(10)
            others = [i for i in range(PROXIES) if i != pi]
            wait_until(lambda: self.primary_at(others[0]) not in (None, prim), 60, interval=0.3,
                       what="a primary after the kill")
            time.sleep(2)
            self.start_node(pi, "proxy")
            time.sleep(3)
        finally:
            stop.set()
            for t in ths:
                t.join(60)
        self.heal()
        new = self.primary_at(others[0])
        wait_until(lambda: self.converged(new), 90, interval=0.5, what="one primary (%s) and one map" % new)
        self.wait_rebalanced()
        self.verify(chk, written)
        self.assertEqual(wrong_side, [], "bucket creations acknowledged through the cut-off gateway")
        self.assertGreater(len(chk.objects), 20)
        self.assertGreater(len(chk.buckets), 5)


if __name__ == "__main__":
    main()
