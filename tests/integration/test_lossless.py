# SPDX-License-Identifier: MIT
"""No silent loss and no stalls: get-from-neighbour off the HTTP threads (a
slow or stopped peer costs only the requests that wait for it), and the
refusal to decommission a target whose objects exist nowhere else."""
import hashlib
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
from test_cluster import hrw_owner


class Base(unittest.TestCase):
    targets = 3

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="shale-ll-")
        self.c = Cluster(self.tmp, proxies=1, targets=self.targets).start()
        self.url = self.c.url
        self.s = requests.Session()
        wait_until(lambda: len(self.c.smap()["tmap"]) == self.targets, 30, what="all targets in the Smap")
        self.stopped = []

    def tearDown(self):
        for pid in self.stopped:  # never leave a stopped process behind
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        self.c.stop()
        if not os.environ.get("SHALE_KEEP_TMP"):
            shutil.rmtree(self.tmp, ignore_errors=True)

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
        for n in self.c.topology()["nodes"]:
            if n["role"] == "target":
                try:
                    if requests.get("http://127.0.0.1:%d/v1/daemon?what=snode" % n["port"], timeout=2).json()[
                            "daemon_id"] == tid:
                        return n["name"]
                except requests.RequestException:
                    pass
        raise KeyError(tid)

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


if __name__ == "__main__":
    main()
