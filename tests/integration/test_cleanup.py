# SPDX-License-Identifier: MIT
"""Job cleanup-store (`ais storage cleanup`) on a gateway and 3 targets: a work file nobody holds or wrote for
space.dont_cleanup_time is removed, a fresh one and one a request holds open stay, and the setting takes effect;
malformed requests are refused. And what AIStore's cleanup also does, removing misplaced copies, the rebalance
does here: targets killed between sending an object and deleting their copy (SHALE_FAULT=reb-before-delete) leave
none once they are back."""
import os
import time

from harness import ClusterTest, main, start_cluster, stop_cluster, wait_until
import unittest


def job_totals(t, jid, kind):
    def done():
        r = t.s.get(t.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid}, timeout=30)
        return r.status_code == 200 and r.json()["end_time"] != 0 and r.json()
    st = wait_until(done, 60, what="%s %s done" % (kind, jid))
    t.assertEqual(st["err"], "")
    stats = t.s.get(t.url + "/v1/cluster", params={"what": "qryxstats"}, json={"ID": jid}).json()
    tot = {}
    for arr in stats.values():
        for sn in arr:
            t.assertEqual(sn["kind"], kind)
            for k in ("out-objs", "out-bytes"):
                tot[k] = tot.get(k, 0) + int(sn["stats"][k])
    return tot


class TestCleanup(ClusterTest):
    def start(self, value):
        return self.s.put(self.url + "/v1/cluster", json={"action": "start", "value": value}, timeout=30)

    def test_work_files(self):
        self.assertEqual(self.s.post(self.url + "/v1/buckets/cb", json={"action": "create-bck"}).status_code, 200)
        smap = self.c.smap()
        t0 = self.c.target_name(sorted(smap["tmap"])[0])
        wk = os.path.join(self.c.dir, t0, "mp1", "@ais", "cb", "%wk")
        os.makedirs(wk, exist_ok=True)
        old, fresh = os.path.join(wk, "left-by-a-crash"), os.path.join(wk, "being-written")
        for f in (old, fresh):
            with open(f, "wb") as fh:
                fh.write(b"x" * 1000)
        t = time.time() - 3 * 3600
        os.utime(old, (t, t))
        # an append session's work file: open in the target, and written an hour "ago"
        r = self.s.put(self.url + "/v1/objects/cb/appended", data=b"first", params={"append_type": "append",
                                                                                     "append_handle": ""})
        self.assertEqual(r.status_code, 200, r.text)
        handle = r.headers["Ais-Append-Handle"]
        for tn in [n["name"] for n in self.c.topology()["nodes"] if n["role"] == "target"]:
            d = os.path.join(self.c.dir, tn, "mp1", "@ais", "cb", "%wk")
            for f in os.listdir(d) if os.path.isdir(d) else []:
                if f not in ("left-by-a-crash", "being-written"):
                    os.utime(os.path.join(d, f), (t, t))
        # bad requests change nothing
        for v in ({"Kind": "cleanup-store", "Buckets": [{"name": "no/such"}]}, {"Kind": "cleanup-store", "Bck": 7}):
            r = self.start(v)
            self.assertEqual(r.status_code, 400, r.text)
        self.assertTrue(os.path.exists(old))
        r = self.start({"Kind": "cleanup-store"})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(job_totals(self, r.text, "cleanup-store"), {"out-objs": 1, "out-bytes": 1000})
        self.assertFalse(os.path.exists(old))
        self.assertTrue(os.path.exists(fresh))
        self.assertIn("removed %s/left-by-a-crash, a work file nobody wrote for" % wk, self.c.log(t0))
        # the append session goes on
        r = self.s.put(self.url + "/v1/objects/cb/appended", data=b"+second", params={"append_type": "append",
                                                                                       "append_handle": handle})
        self.assertEqual(r.status_code, 200, r.text)
        r = self.s.put(self.url + "/v1/objects/cb/appended", data=b"", params={"append_type": "flush",
                                                                                "append_handle": handle})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.s.get(self.url + "/v1/objects/cb/appended").content, b"first+second")
        # space.dont_cleanup_time takes effect: at 0s the fresh file goes too (a bucket named: that one only)
        r = self.s.put(self.url + "/v1/cluster", json={"action": "set-config", "value": {"space": {
            "dont_cleanup_time": "0s"}}}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        try:
            r = self.start({"Kind": "cleanup-store", "Bck": {"name": "cb", "provider": "ais"}})
            self.assertEqual(r.status_code, 200, r.text)
            self.assertEqual(job_totals(self, r.text, "cleanup-store")["out-objs"], 1)
            self.assertFalse(os.path.exists(fresh))
        finally:
            self.s.put(self.url + "/v1/cluster", json={"action": "set-config", "value": {"space": {
                "dont_cleanup_time": "30m"}}}, timeout=30)


class TestMisplacedAfterCrash(unittest.TestCase):
    def setUp(self):
        start_cluster(self, targets=3, prefix="shale-cln-", env={"SHALE_FAULT": "reb-before-delete"})

    def tearDown(self):
        stop_cluster(self)

    def test_no_copy_left(self):
        """every original target dies between sending its objects to the new one and deleting them; back
        without the fault, they move and delete again: each object is on one target, its owner"""
        self.assertEqual(self.s.post(self.url + "/v1/buckets/cb", json={"action": "create-bck"}).status_code, 200)
        for i in range(40):
            self.assertEqual(self.s.put(self.url + "/v1/objects/cb/o%d" % i, data=b"x" * (100 + i)).status_code, 200)
        self.c.cli("playground", "add-target", "--dir", self.c.dir)
        status = lambda: self.c.cli("playground", "status", "--dir", self.c.dir, check=False).stdout  # noqa: E731
        wait_until(lambda: status().count(" stopped") >= 1, 30, what="a sender killed after sending")
        time.sleep(2)
        self.c.env.pop("SHALE_FAULT")
        self.c.cli("playground", "start", "--dir", self.c.dir)

        def placed():
            smap = self.c.smap()
            n = 0
            for tid, t in smap["tmap"].items():
                for i in range(40):
                    r = self.s.get(t["public_net"]["direct_url"] + "/v1/objects/cb/o%d" % i,
                                   headers={"Ais-No-Gfn": "true"})
                    n += r.status_code == 200
            return len(smap["tmap"]) == 4 and n == 40
        wait_until(placed, 60, interval=1, what="each object on one target only")
        for i in range(40):
            self.assertEqual(self.s.get(self.url + "/v1/objects/cb/o%d" % i).content, b"x" * (100 + i))
        self.assertTrue(any("SHALE_FAULT=reb-before-delete reached" in open(os.path.join(
            self.c.dir, n, "log", "stdout.log")).read() for n in ("t0", "t1", "t2")))


if __name__ == "__main__":
    main()
