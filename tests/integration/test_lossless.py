# SPDX-License-Identifier: MIT
"""No silent loss and no stalls: get-from-neighbour off the HTTP threads (a
slow or stopped peer costs only the requests that wait for it), and the
refusal to decommission a target whose objects exist nowhere else."""
import hashlib
import os
import random
import shutil
import signal
import subprocess
import threading
import time
import unittest

import requests

from harness import SHALE, SHALED, main, start_cluster, stop_cluster, wait_until
from test_cluster import hrw_owner


class Base(unittest.TestCase):
    targets = 3
    env = None  # more environment for the nodes

    def setUp(self):
        start_cluster(self, targets=self.targets, prefix="shale-ll-", env=dict(self.env or {}))
        self.stopped = []

    def tearDown(self):
        for pid in self.stopped:  # never leave a stopped process behind
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        stop_cluster(self)

    def create(self, b):
        r = self.s.post(self.url + "/v1/buckets/" + b, json={"action": "create-bck"})
        self.assertEqual(r.status_code, 200, r.text)

    def fill(self, b, n, prefix="o"):
        data = {}
        rnd = random.Random(n)
        for i in range(n):
            name = "%s/%05d" % (prefix, i)
            d = os.urandom(rnd.randint(10, 3000))
            r = self.s.put(self.url + "/v1/objects/%s/%s" % (b, name), data=d)
            self.assertEqual(r.status_code, 200, r.text)
            data[name] = hashlib.sha256(d).hexdigest()
        return data

    def name_of(self, tid):
        return self.c.target_name(tid)

    @staticmethod
    def stop_proc(proc):
        """a node this test started itself, by its Popen"""
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)

    def timed_gets(self, names, bucket, results, idx):
        s = requests.Session()
        for name in names:
            t0 = time.time()
            try:
                r = s.get(self.url + "/v1/objects/%s/%s" % (bucket, name), timeout=60)
                results[idx].append((name, r.status_code, time.time() - t0))
            except requests.RequestException as e:
                results[idx].append((name, "exc %s" % e, time.time() - t0))


class TestGetFromNeighbourDoesNotStall(Base):
    def test_stopped_peer_costs_only_its_waiters(self):
        self.create("gf")
        data = self.fill("gf", 120)
        old = self.c.smap()
        self.c.cli("playground", "add-target", "--dir", self.c.dir)
        wait_until(lambda: len(self.c.smap()["tmap"]) == 4, 30, what="4 targets")
        new = self.c.smap()
        # right after the change every target asks its neighbours for what it lacks; stop one of them
        victim = sorted(old["tmap"])[0]
        vpid = self.c.pid(self.name_of(victim))
        os.kill(vpid, signal.SIGSTOP)
        self.stopped.append(vpid)
        t0 = time.time()
        # absent objects all owned by one target that is up: it asks the stopped peer for each and waits;
        # more of them than the target has HTTP threads (8)
        owner = sorted(t for t in old["tmap"] if t != victim)[0]
        absent = [n for n in ("absent/%d" % i for i in range(2000))
                  if hrw_owner(new, "gf", n)["daemon_id"] == owner][:16]
        self.assertEqual(len(absent), 16)
        # objects that stay on that target: nothing to ask anyone
        present = [n for n in sorted(data) if hrw_owner(old, "gf", n)["daemon_id"] == owner and
                   hrw_owner(new, "gf", n)["daemon_id"] == owner][:20]
        self.assertGreater(len(present), 5)
        res = [[] for _ in range(17)]
        ths = [threading.Thread(target=self.timed_gets, args=([absent[i]], "gf", res, i)) for i in range(16)]
        for t in ths:
            t.start()
        time.sleep(0.5)  # the absent reads are waiting on the stopped peer now
        self.timed_gets(present, "gf", res, 16)
        for name, st, dt in res[16]:
            self.assertEqual(st, 200, name)
            self.assertLess(dt, 2.0, "GET %s took %.1fs while other requests waited on a stopped peer" % (name, dt))
        # the waiters give up on a peer that sends nothing (5 x timeout.cplane_operation) and answer
        for t in ths:
            t.join(90)
        self.assertLess(time.time() - t0, 90)
        for name, st, dt in sum(res[:16], []):
            self.assertEqual(st, 404, name)
            self.assertLess(dt, 40, "%s waited %.1fs on a stopped peer" % (name, dt))

    def test_absent_reads_after_membership_change(self):
        self.create("ab")
        self.fill("ab", 50)
        self.c.cli("playground", "add-target", "--dir", self.c.dir)
        wait_until(lambda: len(self.c.smap()["tmap"]) == 4, 30, what="4 targets")
        res = [[] for _ in range(8)]
        ths = [threading.Thread(target=self.timed_gets, args=(["none/%d/%d" % (i, k) for k in range(10)], "ab",
                                                               res, i)) for i in range(8)]
        for t in ths:
            t.start()
        for t in ths:
            t.join(120)
        got = sum(res, [])
        self.assertEqual(len(got), 80)
        for name, st, dt in got:
            self.assertEqual(st, 404, name)
            self.assertLess(dt, 2.0, "GET of absent %s took %.1fs" % (name, dt))


class LossBase(Base):
    def lost(self):
        r = self.s.get(self.url + "/v1/cluster", params={"what": "lost"})
        self.assertEqual(r.status_code, 200, r.text)
        return r.json()

    def list_names(self, b):
        return self.s.get(self.url + "/v1/buckets/" + b, json={"action": "list", "value": {"flags": "0"}})

    def decommission(self, tid, **value):
        value["sid"] = tid
        return self.s.put(self.url + "/v1/cluster", json={"action": "decommission-node", "value": value},
                          timeout=60)


class TestNoSilentLoss(LossBase):
    def test_dead_target_is_not_dropped_silently(self):
        self.create("nl")
        self.create("nl-empty")
        data = self.fill("nl", 90)
        t_filled = time.time_ns()
        smap = self.c.smap()
        per = {}
        for n in data:
            per.setdefault(hrw_owner(smap, "nl", n)["daemon_id"], []).append(n)
        # the primary's inventory of every target, taken after the objects were written
        def inventoried():
            inv = self.lost().get("inventory", {})
            return all(tid in inv and inv[tid]["time"] > t_filled and
                       inv[tid]["buckets"].get("nl", {}).get("n", 0) == len(per.get(tid, []))
                       for tid in smap["tmap"])
        wait_until(inventoried, 60, interval=0.5, what="inventories after the PUTs")
        victim = max(per, key=lambda t: len(per[t]))
        vname = self.name_of(victim)
        vcfg = os.path.join(self.c.dir, vname, "shale.json")
        self.c.kill9(vname)
        wait_until(lambda: self.c.smap()["tmap"][victim].get("flags", 0) & (1 << 16), 30, what="victim offline")

        # refused, naming what would be lost; nothing changes
        r = self.s.put(self.url + "/v1/cluster", json={"action": "decommission-node", "value": {"sid": victim}})
        self.assertEqual(r.status_code, 409, r.text)
        msg = r.json()["message"]
        self.assertIn("t[%s]" % victim, msg)
        self.assertIn("%d in ais://nl " % len(per[victim]), msg)
        self.assertNotIn("nl-empty", msg)
        self.assertIn("force", msg)
        self.assertIn(victim, self.c.smap()["tmap"])
        p = self.c.cli("cluster", "decommission", "t[%s]" % victim, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("exist nowhere else", p.stderr + p.stdout)
        self.assertIn(victim, self.c.smap()["tmap"])

        # forced: removed, and the loss recorded where everyone sees it
        self.c.cli("cluster", "decommission", "t[%s]" % victim, "--force", "--no-shutdown")
        wait_until(lambda: victim not in self.c.smap()["tmap"], 60, what="victim removed")
        rec = self.lost()["lostmd"]["targets"][victim]
        self.assertEqual(rec["buckets"]["nl"]["n"], len(per[victim]))
        self.assertNotIn("nl-empty", rec["buckets"])
        out = self.c.cli("cluster", "lost").stdout
        self.assertRegex(out, r"t\[%s\]\s+decommission-node\s+ais://nl\s+%d" % (victim, len(per[victim])))
        # listings say so instead of coming back short; other buckets list as usual
        r = self.list_names("nl")
        self.assertEqual(r.status_code, 409, r.text)
        self.assertIn("%d objects of this bucket existed only on target t[%s]" % (len(per[victim]), victim),
                      r.json()["message"])
        self.assertEqual(self.list_names("nl-empty").status_code, 200)
        for n in per[victim][:5]:
            self.assertEqual(self.s.get(self.url + "/v1/objects/nl/" + n).status_code, 404)
        for t, names in per.items():
            if t != victim:
                for n in names[:5]:
                    self.assertEqual(self.s.get(self.url + "/v1/objects/nl/" + n).status_code, 200)

        # re-attach: the old target starts again on its data directory, rejoins, and its objects come back
        proc = subprocess.Popen([SHALED, "--config=" + vcfg, "--role=target", "--bind", "127.0.0.1"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_until(lambda: victim in self.c.smap()["tmap"], 60, what="old target rejoined")
            wait_until(lambda: victim not in self.lost()["lostmd"]["targets"], 30, what="loss record cleared")
            wait_until(lambda: self.list_names("nl").status_code == 200, 60, what="listing works")

            def reb_done():
                r = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"Kind": "rebalance"})
                return r.status_code == 200 and r.json()["end_time"] != 0
            wait_until(reb_done, 60, interval=0.3, what="the rebalance after the rejoin")
            names = [e["name"] for e in self.list_names("nl").json()["entries"]]
            self.assertEqual(names, sorted(data))
            for n, h in data.items():
                r = self.s.get(self.url + "/v1/objects/nl/" + n)
                self.assertEqual(r.status_code, 200, n)
                self.assertEqual(hashlib.sha256(r.content).hexdigest(), h)
        finally:
            self.stop_proc(proc)

    def test_acknowledged_loss_and_skip_rebalance(self):
        self.create("ak")
        self.create("ak-re")
        data = self.fill("ak", 40)
        self.fill("ak-re", 40)
        smap = self.c.smap()
        owners = {n: hrw_owner(smap, "ak", n)["daemon_id"] for n in data}
        victim = max(set(owners.values()), key=lambda t: sum(1 for o in owners.values() if o == t))
        mine = sorted(n for n in data if owners[n] == victim)
        # a live target, asked now: skip_rebalance would strand its objects
        r = self.s.put(self.url + "/v1/cluster", json={"action": "decommission-node",
                                                      "value": {"sid": victim, "skip_rebalance": True}})
        self.assertEqual(r.status_code, 409, r.text)
        self.assertIn("%d in ais://ak " % len(mine), r.json()["message"])
        self.assertIn("skip_rebalance", r.json()["message"])
        # forced, then acknowledged: the listing works again, without those objects
        r = self.s.put(self.url + "/v1/cluster", json={"action": "decommission-node", "value": {
            "sid": victim, "skip_rebalance": True, "force": True, "no_shutdown": True}})
        self.assertEqual(r.status_code, 200, r.text)
        wait_until(lambda: victim not in self.c.smap()["tmap"], 60, what="victim removed")
        self.assertEqual(self.list_names("ak").status_code, 409)
        self.assertEqual(self.list_names("ak-re").status_code, 409)
        # a bucket created again under the same name is not the one that lost objects
        self.assertEqual(self.s.delete(self.url + "/v1/buckets/ak-re", json={"action": "destroy-bck"}).status_code,
                         200)
        self.create("ak-re")
        r = self.list_names("ak-re")
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.json()["entries"] or [], [])
        p = self.c.cli("cluster", "lost", "clear", "t[other]", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.c.cli("cluster", "lost", "clear", "t[%s]" % victim)
        self.assertEqual(self.lost()["lostmd"]["targets"], {})
        r = self.list_names("ak")
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual([e["name"] for e in r.json()["entries"]], sorted(set(data) - set(mine)))
        self.assertEqual(self.c.cli("cluster", "lost").stdout.strip(), "No objects are recorded as lost")

    def test_no_rebalance_and_rejoin_without_data(self):
        self.create("nd")
        data = self.fill("nd", 40)
        smap = self.c.smap()
        owners = {n: hrw_owner(smap, "nd", n)["daemon_id"] for n in data}
        victim = max(set(owners.values()), key=lambda t: sum(1 for o in owners.values() if o == t))
        mine = sum(1 for o in owners.values() if o == victim)
        # with rebalance disabled nothing moves away from a live target either
        r = self.s.put(self.url + "/v1/cluster", json={"action": "set-config",
                                                      "value": {"rebalance": {"enabled": False}}})
        self.assertEqual(r.status_code, 200, r.text)
        r = self.s.put(self.url + "/v1/cluster", json={"action": "decommission-node", "value": {"sid": victim}})
        self.assertEqual(r.status_code, 409, r.text)
        self.assertIn("rebalance.enabled is false", r.json()["message"])
        self.assertIn("%d in ais://nd " % mine, r.json()["message"])
        self.s.put(self.url + "/v1/cluster", json={"action": "set-config", "value": {"rebalance": {"enabled": True}}})
        # dead, removed by force, then back under its id with an empty disk: the loss stays recorded
        vname = self.name_of(victim)
        vcfg = os.path.join(self.c.dir, vname, "shale.json")
        self.c.kill9(vname)
        wait_until(lambda: self.c.smap()["tmap"][victim].get("flags", 0) & (1 << 16), 30, what="victim offline")
        r = self.s.put(self.url + "/v1/cluster", json={"action": "decommission-node", "value": {
            "sid": victim, "force": True, "no_shutdown": True}})
        self.assertEqual(r.status_code, 200, r.text)
        wait_until(lambda: victim not in self.c.smap()["tmap"], 60, what="victim removed")
        mp = os.path.join(self.c.dir, vname, "mp1")
        shutil.rmtree(mp)
        os.makedirs(mp)
        proc = subprocess.Popen([SHALED, "--config=" + vcfg, "--role=target", "--bind", "127.0.0.1"],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            wait_until(lambda: victim in self.c.smap()["tmap"], 60, what="the target rejoined")
            time.sleep(1)
            self.assertIn(victim, self.lost()["lostmd"]["targets"])
            r = self.list_names("nd")
            self.assertEqual(r.status_code, 409, r.text)
        finally:
            self.stop_proc(proc)


class TestDecommissionAgainstTruth(LossBase):
    """A dead target's decommission is checked against what is true at the time of the request, not against
    the cluster map's flags or a count taken earlier."""

    def inventoried_after(self, t_ns, tids):
        def ok():
            inv = self.lost().get("inventory", {})
            return all(inv.get(t, {}).get("time", 0) > t_ns for t in tids)
        wait_until(ok, 60, interval=0.3, what="inventories after %d" % t_ns)

    def test_right_after_the_kill(self):
        """sent before the keepalives flag the dead target offline, the decommission is refused as for an
        offline one (the build before answered 200, and its objects were gone)"""
        self.create("dk")
        data = self.fill("dk", 60)
        t_filled = time.time_ns()
        smap = self.c.smap()
        per = {}
        for n in data:
            per.setdefault(hrw_owner(smap, "dk", n)["daemon_id"], []).append(n)
        self.inventoried_after(t_filled, smap["tmap"])
        victim = max(per, key=lambda t: len(per[t]))
        self.c.kill9(self.name_of(victim))
        self.assertFalse(self.c.smap()["tmap"][victim].get("flags", 0) & (1 << 16), "flagged offline already")
        r = self.decommission(victim)
        self.assertEqual(r.status_code, 409, r.text)
        msg = r.json()["message"]
        self.assertIn("the target is offline (it does not answer)", msg)
        self.assertIn("these exist nowhere else: %d in ais://dk " % len(per[victim]), msg)
        self.assertIn(victim, self.c.smap()["tmap"])
        self.assertIn("does not answer (the cluster map still has it online)", self.c.log("p0"))
        # nothing else changed: the rest reads, the listing is whole but for the dead target's share
        wait_until(lambda: self.c.smap()["tmap"][victim].get("flags", 0) & (1 << 16), 30, what="victim offline")
        for t, names in per.items():
            if t != victim:
                for n in names[:5]:
                    self.assertEqual(self.s.get(self.url + "/v1/objects/dk/" + n).status_code, 200)
        self.assertEqual(self.lost()["lostmd"]["targets"], {})

    def test_objects_written_after_the_inventory(self):
        """the last inventory was counted before a new bucket got objects on the target: what the target
        holds is unknown, so its decommission is refused (the build before went by the stale count, which
        had nothing for the new bucket, and answered 200)"""
        self.create("old")  # (empty: by the last count the victim holds nothing that would be lost)
        smap = self.c.smap()
        t_filled = time.time_ns()
        self.inventoried_after(t_filled, smap["tmap"])
        # a new bucket and objects in it, the victim's share known
        self.create("fresh")
        data = self.fill("fresh", 30)
        per = {}
        for n in data:
            per.setdefault(hrw_owner(smap, "fresh", n)["daemon_id"], []).append(n)
        victim = max(per, key=lambda t: len(per[t]))
        inv = self.lost()["inventory"][victim]
        self.assertNotIn("fresh", inv["buckets"])  # (the next inventory is 20 s after the last)
        time.sleep(3)  # (a keepalive round after the PUTs: its answer carries the changes)
        self.c.kill9(self.name_of(victim))
        wait_until(lambda: self.c.smap()["tmap"][victim].get("flags", 0) & (1 << 16), 30, what="victim offline")
        self.assertNotIn("fresh", self.lost()["inventory"][victim]["buckets"])
        r = self.decommission(victim)
        self.assertEqual(r.status_code, 409, r.text)
        msg = r.json()["message"]
        self.assertIn("objects were written or deleted there after its last inventory was counted", msg)
        self.assertIn(victim, self.c.smap()["tmap"])
        # forced: every bucket it may hold objects of is recorded, count unknown, and says so when listed
        r = self.decommission(victim, force=True, no_shutdown=True)
        self.assertEqual(r.status_code, 200, r.text)
        wait_until(lambda: victim not in self.c.smap()["tmap"], 60, what="victim removed")
        rec = self.lost()["lostmd"]["targets"][victim]
        self.assertTrue(rec["unknown"])
        self.assertEqual(rec["buckets"]["fresh"]["n"], -1)
        r = self.list_names("fresh")
        self.assertEqual(r.status_code, 409, r.text)
        self.assertIn("an unknown number of objects of this bucket existed only on target t[%s]" % victim,
                      r.json()["message"])


class TestECNoSilentLoss(LossBase):
    """Erasure-coded buckets: what a target holds that was never encoded, and everything it holds once
    more targets are gone than the bucket survives, is not dropped silently either."""
    targets = 4
    env = {"SHALE_TEST_EC_MAX_OBJ": "65536"}  # what is larger is not encoded, as over 1 GiB would not be
    BIG = 100000

    def create_ec(self, b):
        self.create(b)
        r = self.s.patch(self.url + "/v1/buckets/" + b, json={"action": "set-bprops", "value": {"ec": {
            "enabled": True, "data_slices": 1, "parity_slices": 1, "objsize_limit": 1024}}})
        self.assertEqual(r.status_code, 200, r.text)

    def wait_encoded(self, b, names):
        def enc(n):
            r = self.s.head(self.url + "/v1/objects/%s/%s" % (b, n), allow_redirects=True, timeout=10)
            return r.status_code == 200 and r.headers.get("Ais-Ec-Data") == "1"
        for n in names:
            wait_until(lambda: enc(n), 30, interval=0.2, what="%s encoded" % n)

    def owners(self, b, names):
        smap = self.c.smap()
        per = {}
        for n in names:
            per.setdefault(hrw_owner(smap, b, n)["daemon_id"], []).append(n)
        return per

    def test_unencoded_object_is_not_dropped_silently(self):
        self.create_ec("ecl")
        data = self.fill("ecl", 30)
        big = os.urandom(self.BIG)
        r = self.s.put(self.url + "/v1/objects/ecl/big/0", data=big)
        self.assertEqual(r.status_code, 200, r.text)
        t_put = time.time_ns()
        self.wait_encoded("ecl", data)
        r = self.s.head(self.url + "/v1/objects/ecl/big/0", allow_redirects=True)
        self.assertNotIn("Ais-Ec-Data", r.headers)  # too big: never encoded
        per = self.owners("ecl", list(data) + ["big/0"])
        victim = [t for t, names in per.items() if "big/0" in names][0]
        what = "1 in ais://ecl (%d bytes; erasure coded, but not encoded" % self.BIG

        # a live target, asked now: skip_rebalance would strand the object that has no slices or replicas
        r = self.decommission(victim, skip_rebalance=True)
        self.assertEqual(r.status_code, 409, r.text)
        self.assertIn(what, r.json()["message"])
        self.assertIn(victim, self.c.smap()["tmap"])

        # dead: the primary's inventory says the same
        def inventoried():
            e = self.lost().get("inventory", {}).get(victim, {})
            return e.get("time", 0) > t_put and e["buckets"].get("ecl", {}).get("unprotected_n") == 1
        wait_until(inventoried, 60, interval=0.5, what="an inventory of the victim after the PUTs")
        self.c.kill9(self.name_of(victim))
        wait_until(lambda: self.c.smap()["tmap"][victim].get("flags", 0) & (1 << 16), 30, what="victim offline")
        r = self.decommission(victim)
        self.assertEqual(r.status_code, 409, r.text)
        self.assertIn(what, r.json()["message"])
        self.assertIn("offline", r.json()["message"])
        self.assertIn(victim, self.c.smap()["tmap"])

        # forced: the loss is recorded and the listing says so; the encoded objects still read
        r = self.decommission(victim, force=True, no_shutdown=True)
        self.assertEqual(r.status_code, 200, r.text)
        wait_until(lambda: victim not in self.c.smap()["tmap"], 60, what="victim removed")
        self.assertEqual(self.lost()["lostmd"]["targets"][victim]["buckets"]["ecl"]["n"], 1)
        r = self.list_names("ecl")
        self.assertEqual(r.status_code, 409, r.text)
        for n in per[victim][:5]:
            if n != "big/0":
                r = self.s.get(self.url + "/v1/objects/ecl/" + n, timeout=60)
                self.assertEqual(r.status_code, 200, n)
                self.assertEqual(hashlib.sha256(r.content).hexdigest(), data[n])

    def test_encoded_allowed_until_too_many_targets_are_gone(self):
        self.create_ec("ecp")
        data = self.fill("ecp", 40)
        self.wait_encoded("ecp", data)
        per = self.owners("ecp", data)
        victim = max(per, key=lambda t: len(per[t]))

        # everything encoded: nothing exists only on the victim, even without a rebalance
        r = self.decommission(victim, skip_rebalance=True, no_shutdown=True)
        self.assertEqual(r.status_code, 200, r.text)
        wait_until(lambda: victim not in self.c.smap()["tmap"], 60, what="victim removed")
        lost = self.lost()["lostmd"]
        self.assertEqual(lost["targets"], {})
        self.assertIn(victim, lost["gone"])  # its slices and replicas left with it, nothing re-encoded yet
        self.assertEqual(self.list_names("ecp").status_code, 200)

        # one more target down: 2 gone, and P = 1 -- a third target's objects would have nothing left
        rest = sorted((t for t in per if t != victim), key=lambda t: len(per[t]))
        dead, third = rest[0], rest[-1]
        self.c.kill9(self.name_of(dead))
        wait_until(lambda: self.c.smap()["tmap"][dead].get("flags", 0) & (1 << 16), 30, what="second offline")
        r = self.decommission(third, skip_rebalance=True)
        self.assertEqual(r.status_code, 409, r.text)
        msg = r.json()["message"]
        self.assertIn("%d in ais://ecp (" % len(per[third]), msg)
        self.assertIn("2 other target(s) are gone", msg)
        self.assertIn(third, self.c.smap()["tmap"])


if __name__ == "__main__":
    main()
