# SPDX-License-Identifier: MIT
"""Rebalance moves small objects many per request (POST /v1/internal/putb, server/cluster/putb.c): a
rebalance of a few thousand small objects goes through it (the receivers' counters say so) and every
object arrives intact (bytes, checksum, version, custom metadata); a batch sent again changes nothing and
never replaces what the receiver has; an object that fails fails alone, whatever its name; a body that
does not parse stores nothing; a crash of the receiver in the middle of a batch loses nothing (the
sender sends the batch again); a crash of a sender with moved objects queued for deletion loses nothing
and leaves no copy behind once the next rebalance ran."""
import hashlib
import json
import os
import random
import re
import struct
import subprocess
import threading
from concurrent.futures import ThreadPoolExecutor

import requests

from harness import SHALE, cluster_sig, main, wait_until
from test_cluster import ClusterTest, hrw_owner


def metric(url, name):
    text = requests.get(url + "/metrics", timeout=10).text
    m = re.search(r"^ais_target_%s\{[^}]*\} (\d+)$" % name, text, re.M)
    return int(m.group(1)) if m else 0


def record(name, data, **meta):
    """one record of a put-batch body: 4-byte length, JSON metadata, the bytes"""
    j = json.dumps(dict(meta, name=name, size=len(data))).encode()
    return struct.pack(">I", len(j)) + j + data


class Base(ClusterTest):
    def setUp(self):
        super().setUp()
        self.secret = os.path.join(self.c.dir, "p0", "cluster.secret")

    def fill(self, b, n, mid=0, large=0):
        """n small objects (every 7th with custom metadata), `mid` of 900 KiB (a few fill a batch's 4 MiB) and
        `large` ones above the batch's 1 MiB limit: {name: (sha256, custom)}"""
        rnd = random.Random(n)
        todo = [("s/%05d" % i, os.urandom(rnd.randint(0, 3000)), {"k": "v%d" % i} if i % 7 == 0 else {})
                for i in range(n)]
        todo += [("M/%d" % i, os.urandom(900 << 10), {}) for i in range(mid)]
        todo += [("L/%d" % i, os.urandom((1 << 20) + 1000 * i + 1), {"big": str(i)}) for i in range(large)]
        sess = threading.local()

        def put(t):
            name, d, cu = t
            if not hasattr(sess, "s"):
                sess.s = requests.Session()
            h = {"Ais-Custom-Md": "%s=%s" % list(cu.items())[0]} if cu else {}
            r = sess.s.put(self.url + "/v1/objects/%s/%s" % (b, name), data=d, headers=h, timeout=60)
            self.assertEqual(r.status_code, 200, r.text)
            return name, (hashlib.sha256(d).hexdigest(), cu)
        with ThreadPoolExecutor(8) as ex:
            return dict(ex.map(put, todo))

    def custom_of(self, r):
        return dict(v.split("=", 1) for v in r.headers.get("Ais-Custom-Md", "").split(", ") if v)

    def wait_reb(self, jid):
        return self.wait_job(jid, timeout=180)

    def wait_latest_reb(self):
        return self.wait_reb(self.s.get(self.url + "/v1/cluster", params={"what": "status"},
                                        json={"Kind": "rebalance"}).json()["uuid"])

    def playground_with_fault(self, cmd, point):
        """`shale playground CMD` with SHALE_FAULT=point armed in the node(s) it starts"""
        env = dict(os.environ, AIS_ENDPOINT=self.url, SHALE_FAULT=point)
        p = subprocess.run([SHALE, "playground", cmd, "--dir", self.c.dir], env=env, capture_output=True,
                           text=True, timeout=120)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)

    def restart_after_fault(self, name, point):
        """wait for node `name` to exit at the fault point, start it again without the fault, until it answers"""
        out = os.path.join(self.c.dir, name, "log", "stdout.log")
        wait_until(lambda: "%s reached" % point in open(out, errors="replace").read(), 60, interval=0.2,
                   what="%s reaching %s" % (name, point))
        self.c.cli("playground", "start", "--dir", self.c.dir)
        wait_until(lambda: self.c.pid(name) and requests.get(self.c.node_url(name) + "/v1/health",
                                                             timeout=5).status_code == 200, 30, what=name + " back")

    def new_target(self):
        self.c.cli("playground", "add-target", "--dir", self.c.dir)
        wait_until(lambda: len(self.c.smap()["tmap"]) == 4, 30, what="4 targets")
        smap = self.c.smap()
        tid = [t for t in smap["tmap"] if self.c.target_name(t) == "t3"][0]
        return smap, tid

    def check_moved(self, b, data, smap, tid):
        """every object through the gateway: bytes and custom metadata; those the new target owns there
        without get-from-neighbour, with the checksum the sender had"""
        turl = smap["tmap"][tid]["public_net"]["direct_url"]
        on_new = 0
        for name, (h, cu) in sorted(data.items()):
            r = self.s.get(self.url + "/v1/objects/%s/%s" % (b, name))
            self.assertEqual(r.status_code, 200, "%s: %s" % (name, r.text))
            self.assertEqual(hashlib.sha256(r.content).hexdigest(), h, name)
            self.assertEqual(self.custom_of(r), cu, name)
            if hrw_owner(smap, b, name)["daemon_id"] == tid:
                on_new += 1
                r2 = self.s.get(turl + "/v1/objects/%s/%s" % (b, name), headers={"Ais-No-Gfn": "true"})
                self.assertEqual(r2.status_code, 200, name)
                self.assertEqual(hashlib.sha256(r2.content).hexdigest(), h, name)
                self.assertEqual(r2.headers.get("Ais-Checksum-Value"), r.headers.get("Ais-Checksum-Value"), name)
        names = [e["name"] for e in self.s.get(self.url + "/v1/buckets/" + b,
                                               json={"action": "list", "value": {"flags": "0"}}).json()["entries"]]
        self.assertEqual(names, sorted(data))
        return on_new


class TestBatchedRebalance(Base):
    def test_small_objects_move_in_batches(self):
        self.create("rbb")
        data = self.fill("rbb", 3000, mid=24, large=3)
        smap, tid = self.new_target()
        st = self.wait_latest_reb()
        self.assertEqual(st["err"], "")
        on_new = self.check_moved("rbb", data, smap, tid)
        small_new = sum(1 for n in data if n[0] in "sM" and hrw_owner(smap, "rbb", n)["daemon_id"] == tid)
        self.assertGreater(small_new, 400)
        stats = self.s.get(self.url + "/v1/cluster", params={"what": "qryxstats"}, json={"ID": st["uuid"]}).json()
        self.assertEqual(sum(int(sn["stats"]["out-objs"]) for arr in stats.values() for sn in arr), on_new)
        # the small ones went through the batch path, and far fewer requests than objects carried them
        turl = smap["tmap"][tid]["public_net"]["direct_url"]
        self.assertEqual(metric(turl, "putb_in_objs"), small_new)
        self.assertLess(metric(turl, "putb_in_batches"), small_new / 10)
        senders = [t["public_net"]["direct_url"] for t_id, t in smap["tmap"].items() if t_id != tid]
        self.assertEqual(sum(metric(u, "putb_out_objs") for u in senders), small_new)


class TestPutBatch(Base):
    """the receiver itself, called as a target calls it (signed)"""

    def post(self, turl, body, bck="pb", signed=True, reb=None):
        u = turl + "/v1/internal/putb?bck=%s&provider=ais" % bck
        h = cluster_sig(self.secret, "POST", u) if signed else {}
        if reb:
            h["Ais-Rebalance"] = reb
        return self.s.post(u, data=body, headers=h, timeout=60)

    def test_resend_is_harmless_and_keeps_what_is_there(self):
        self.create("pb")
        smap = self.c.smap()
        tid = sorted(smap["tmap"])[0]
        turl = smap["tmap"][tid]["public_net"]["direct_url"]
        names = [n for n in ("n%03d" % i for i in range(300)) if hrw_owner(smap, "pb", n)["daemon_id"] == tid][:5]
        a, b, c, bad, first = names
        # c is there already, newer than what the batch carries: it stays
        r = self.s.put(self.url + "/v1/objects/pb/" + c, data=b"newer")
        self.assertEqual(r.status_code, 200, r.text)
        da, db = os.urandom(5000), b""
        ck = self.s.head(self.url + "/v1/objects/pb/" + c, allow_redirects=True).headers["Ais-Checksum-Type"]
        body = (record(a, da, version=7, atime=1700000000000000000, custom={"k": "v", "x": "y"}) + record(b, db) +
                record(c, b"older") + record(bad, b"data", cksum_type=ck, cksum_value="0123456789abcdef"))
        before = metric(turl, "putb_in_objs")
        r = self.post(turl, body, signed=False)
        self.assertEqual(r.status_code, 401, r.text)
        for attempt in range(2):  # the second time: as a sender does after a timeout
            r = self.post(turl, body)
            self.assertEqual(r.status_code, 200, r.text)
            objs = r.json()["objs"]
            self.assertEqual([o["status"] for o in objs[:3]], [200, 200, 200], objs)
            self.assertEqual([bool(o.get("kept")) for o in objs[:3]], [bool(attempt), bool(attempt), True], objs)
            self.assertEqual(objs[3]["status"], 500, objs)
            self.assertIn("BAD DATA CHECKSUM", objs[3]["message"])
            ra = self.s.get(self.url + "/v1/objects/pb/" + a)
            self.assertEqual(ra.content, da)
            self.assertEqual(self.custom_of(ra), {"k": "v", "x": "y"})
            self.assertEqual(ra.headers.get("Ais-Version"), "7")
            self.assertEqual(ra.headers.get("Ais-Atime"), "1700000000000000000")
            self.assertEqual(self.s.get(self.url + "/v1/objects/pb/" + b).content, b"")
            self.assertEqual(self.s.get(self.url + "/v1/objects/pb/" + c).content, b"newer")
            self.assertEqual(self.s.head(self.url + "/v1/objects/pb/" + bad, allow_redirects=True).status_code, 404)
            self.assertEqual(metric(turl, "putb_in_objs"), before + 2)
        # a body that does not parse stores nothing, not even its good first record
        for tail in (b"\x00\x00", struct.pack(">I", 100) + b"{}", record("x", b"1")[:-1],
                     struct.pack(">I", 2) + b"[]"):
            r = self.post(turl, record(first, b"1") + tail)
            self.assertEqual(r.status_code, 400, r.text)
            self.assertIn("record 1", r.json()["message"])
            self.assertIn("nothing was stored", r.json()["message"])
        self.assertEqual(self.s.head(turl + "/v1/objects/pb/" + first, headers={"Ais-No-Gfn": "true"}).status_code,
                         404)
        r = self.post(turl, record("x", b"1"), bck="nosuch")
        self.assertEqual(r.status_code, 404, r.text)
        self.assertIn("nosuch", r.json()["message"])

    def test_failure_of_a_long_utf8_name_fails_it_alone(self):
        """the message of a failed object names it cut at a fixed size: never inside a character (the JSON
        answer would lose that object's entry and the sender would count the whole batch failed)"""
        self.create("pb")
        smap = self.c.smap()
        turl = smap["tmap"][sorted(smap["tmap"])[0]]["public_net"]["direct_url"]
        for odd in range(2):  # the 300-byte cut falls inside a 2-byte character either way round
            long_name = "a" * (odd + 1) + "\u00e9" * 300
            body = (record(long_name, b"data", cksum_type="xxhash", cksum_value="0123456789abcdef") +
                    record("ok%d" % odd, b"fine"))
            r = self.post(turl, body)
            self.assertEqual(r.status_code, 200, r.text)
            objs = r.json()["objs"]
            self.assertEqual([o["status"] for o in objs], [500, 200], objs)
            self.assertIn("BAD DATA CHECKSUM", objs[0]["message"])
            self.assertIn("\u00e9" * 10, objs[0]["message"])
            self.assertNotIn("?", objs[0]["message"].split("pb/", 1)[1].split("...", 1)[0])
            self.assertEqual(self.s.get(self.url + "/v1/objects/pb/ok%d" % odd).content, b"fine")


class TestReceiverCrash(Base):
    def test_crash_in_a_batch_loses_nothing(self):
        """a target dies after a batch's metadata commit (before its renames and its answer); started again
        it finishes those objects from their pending markers, and the senders' next pass sends the batch
        again: everything arrives, intact"""
        # t3 joins an empty cluster with the fault armed; objects reach it later, when its maintenance ends
        self.playground_with_fault("add-target", "putb-after-commit")
        wait_until(lambda: len(self.c.smap()["tmap"]) == 4, 30, what="4 targets")
        self.wait_latest_reb()
        smap = self.c.smap()
        tid = [t for t in smap["tmap"] if self.c.target_name(t) == "t3"][0]
        r = self.s.put(self.url + "/v1/cluster", json={"action": "start-maintenance", "value": {"sid": tid}})
        self.assertEqual(r.status_code, 200, r.text)
        self.wait_reb(r.text)
        self.create("rbc")
        data = self.fill("rbc", 1500)
        r = self.s.put(self.url + "/v1/cluster", json={"action": "stop-maintenance", "value": {"sid": tid}})
        self.assertEqual(r.status_code, 200, r.text)
        self.restart_after_fault("t3", "putb-after-commit")
        # the rebalance ends (its passes retry what t3 did not answer); one more moves whatever they gave up on
        self.wait_reb(r.text)
        self.c.cli("job", "start", "rebalance")
        self.wait_latest_reb()
        smap = self.c.smap()
        self.assertGreater(self.check_moved("rbc", data, smap, tid), 200)
        # the fsck of the restart finished the objects of the batch it died in
        self.assertIn("completed interrupted PUT", self.c.log("t3"))


class TestSenderCrash(Base):
    def test_crash_with_deletes_queued_loses_nothing(self):
        """a sender dies after its new owner took a batch, before it deleted its copies (they are queued on
        its deleter thread); restarted, the next rebalance finds the owner has them and deletes them: every
        object reads back intact, listed once, and the sender keeps none of those the new target owns"""
        self.create("rbs")
        data = self.fill("rbs", 1500)
        self.c.kill9("t0")
        self.playground_with_fault("start", "reb-before-delete")  # t0 again, with the fault armed
        self.c.cli("playground", "add-target", "--dir", self.c.dir)
        self.restart_after_fault("t0", "reb-before-delete")
        self.c.cli("job", "start", "rebalance")
        st = self.wait_latest_reb()
        self.assertEqual(st["err"], "")
        smap = self.c.smap()
        tid = [t for t in smap["tmap"] if self.c.target_name(t) == "t3"][0]
        self.assertGreater(self.check_moved("rbs", data, smap, tid), 200)
        t0 = self.c.node_url("t0")
        left = [n for n in data if hrw_owner(smap, "rbs", n)["daemon_id"] == tid and
                self.s.head(t0 + "/v1/objects/rbs/" + n, headers={"Ais-No-Gfn": "true"}).status_code != 404]
        self.assertEqual(left, [])


if __name__ == "__main__":
    main()
