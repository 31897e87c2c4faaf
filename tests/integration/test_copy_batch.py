# SPDX-License-Identifier: MIT
"""copy-bck (and etl-bck in object mode, and promote) stores small objects many per request (server/jobs/tcb.c batches, POST /v1/internal/putb
?replace=true on a remote owner, sl_putb_store on the copying target itself): every object arrives with
its bytes and custom metadata, one the destination had already is replaced as a PUT replaces it (a new
version, never "kept" as a rebalance would), objects above the batch limit go one PUT each, the
receivers' counters show far fewer requests than objects, and an object that fails in a batch is counted
and listed as a failure of its own (coer), nothing stored. The receiver's modes on the wire: copy
replaces, new keeps, both store as a PUT does (the record's version and atime unused); a mode it does not
know is 400 and stores nothing."""
import hashlib
import os
import time

from harness import cluster_sig, main, wait_until
from test_cluster import hrw_owner
from test_rebalance_batch import Base, metric, record


class TestCopyBatches(Base):
    def copy(self, src, dst, value=None):
        r = self.s.post(self.url + "/v1/buckets/" + src, params={"bck_to": "ais/@#/%s/" % dst},
                        json={"action": "copy-bck", "value": value or {}}, timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        return self.wait_job(r.text, timeout=180)

    def stats(self, jid):
        tot, errors = {"out-objs": 0, "err-objs": 0}, []
        r = self.s.get(self.url + "/v1/cluster", params={"what": "qryxstats"}, json={"ID": jid}, timeout=30)
        for snaps in r.json().values():
            for sn in snaps:
                for k in tot:
                    tot[k] += int(sn["stats"].get(k, "0"))
                errors += (sn.get("ext") or {}).get("errors") or []
        return tot, errors

    def test_copy_in_batches(self):
        self.create("cbs")
        # 600 small ones (every 7th with custom metadata), 2 above the batch's 128 KiB limit
        data = self.fill("cbs", 600)
        data.update(self.fill("cbs", 0, large=2))
        # names the destination holds already, with other bytes
        self.create("cbd")
        old = {}
        for name in sorted(data)[:40:4]:
            r = self.s.put(self.url + "/v1/objects/cbd/" + name, data=b"old " + name.encode())
            self.assertEqual(r.status_code, 200, r.text)
            old[name] = int(self.s.head(self.url + "/v1/objects/cbd/" + name, allow_redirects=True).headers["Ais-Version"])
        smap = self.c.smap()
        turls = [t["public_net"]["direct_url"] for t in smap["tmap"].values()]
        before = {u: (metric(u, "putb_in_objs"), metric(u, "putb_in_batches")) for u in turls}

        st = self.copy("cbs", "cbd")
        self.assertEqual(st["err"], "", st)
        tot, errors = self.stats(st["uuid"] if "uuid" in st else st["id"])
        self.assertEqual((tot["out-objs"], tot["err-objs"], errors), (len(data), 0, []))
        for name, (h, cu) in sorted(data.items()):
            r = self.s.get(self.url + "/v1/objects/cbd/" + name)
            self.assertEqual(r.status_code, 200, "%s: %s" % (name, r.text))
            self.assertEqual(hashlib.sha256(r.content).hexdigest(), h, name)
            self.assertEqual(self.custom_of(r), cu, name)
            src = self.s.head(self.url + "/v1/objects/cbs/" + name, allow_redirects=True)
            self.assertEqual(r.headers.get("Ais-Checksum-Value"), src.headers.get("Ais-Checksum-Value"), name)
            if name in old:  # replaced as a PUT replaces: the next version
                self.assertEqual(int(r.headers["Ais-Version"]), old[name] + 1, name)
            # on the destination name's owner, without get-from-neighbour
            t = hrw_owner(smap, "cbd", name)
            r2 = self.s.get(t["public_net"]["direct_url"] + "/v1/objects/cbd/" + name,
                            headers={"Ais-No-Gfn": "true"})
            self.assertEqual(r2.status_code, 200, name)
        names = [e["name"] for e in self.s.get(self.url + "/v1/buckets/cbd",
                                               json={"action": "list", "value": {"flags": "0"}}).json()["entries"]]
        self.assertEqual(names, sorted(data))

        # the small objects whose owner differs went to it in batches; the large ones did not
        moved = sum(1 for n in data if n[0] == "s" and hrw_owner(smap, "cbs", n)["daemon_id"] !=
                    hrw_owner(smap, "cbd", n)["daemon_id"])
        self.assertGreater(moved, 200)
        objs = sum(metric(u, "putb_in_objs") - before[u][0] for u in turls)
        batches = sum(metric(u, "putb_in_batches") - before[u][1] for u in turls)
        self.assertEqual(objs, moved)
        self.assertLess(batches, moved / 5)

    def test_transform_in_batches(self):
        """etl-bck (object mode): the outputs go to their owners in batches too"""
        self.create("ces")
        names = ["e/%04d" % i for i in range(300)]
        for n in names:
            self.assertEqual(self.s.put(self.url + "/v1/objects/ces/" + n, data=n.encode()).status_code, 200)
        r = self.s.put(self.url + "/v1/etl", json={"name": "upper-b", "runtime": "lua",
                                                   "code": "function transform(d, ctx) return d:upper() end\n"},
                       timeout=120)
        self.assertEqual(r.status_code, 200, r.text)
        smap = self.c.smap()
        turls = [t["public_net"]["direct_url"] for t in smap["tmap"].values()]
        before = sum(metric(u, "putb_in_objs") for u in turls)
        r = self.s.post(self.url + "/v1/buckets/ces", params={"bck_to": "ais/@#/ced/"},
                        json={"action": "etl-bck", "value": {"id": "upper-b", "prepend": "up/"}}, timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        st = self.wait_job(r.text, timeout=180)
        self.assertEqual(st["err"], "", st)
        for n in names:
            r = self.s.get(self.url + "/v1/objects/ced/up/" + n)
            self.assertEqual((r.status_code, r.content), (200, n.upper().encode()), n)
        moved = sum(1 for n in names if hrw_owner(smap, "ces", n)["daemon_id"] !=
                    hrw_owner(smap, "ced", "up/" + n)["daemon_id"])
        self.assertGreater(moved, 100)
        self.assertEqual(sum(metric(u, "putb_in_objs") for u in turls) - before, moved)

    def test_promote_in_batches(self):
        """promote (one target's own directory, files sent to their owners): the small files go in batches; an
        object already there is kept without ovw (counted, its file not deleted, its atime not moved) and replaced
        with it"""
        pdir = os.path.join(self.tmp, "promote")
        r = self.s.put(self.url + "/v1/cluster/set-config", params={"promote.dir": pdir}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        self.create("cpr")
        files = {"f-%03d" % i: os.urandom(i * 7) for i in range(200)}
        files["big"] = os.urandom(300 << 10)
        os.makedirs(os.path.join(pdir, "ds"))
        for n, d in files.items():
            with open(os.path.join(pdir, "ds", n), "wb") as f:
                f.write(d)
            os.utime(os.path.join(pdir, "ds", n), (1000000000, time.time()))  # an atime a read would move
        self.assertEqual(self.s.put(self.url + "/v1/objects/cpr/p/f-007", data=b"here before").status_code, 200)
        smap = self.c.smap()
        tid = sorted(smap["tmap"])[0]
        turls = [t["public_net"]["direct_url"] for t in smap["tmap"].values()]
        before = sum(metric(u, "putb_in_objs") for u in turls)

        def promote(**kw):
            value = dict({"src": pdir + "/ds", "obj": "p/", "tid": tid}, **kw)
            r = self.s.post(self.url + "/v1/objects/cpr", json={"action": "promote", "name": pdir + "/ds",
                                                                 "value": value}, timeout=60)
            self.assertEqual(r.status_code, 200, r.text)
            st = self.wait_job(r.text, timeout=180)
            self.assertFalse(st.get("err"), st)
        promote(dls=True)
        for n, d in files.items():
            r = self.s.get(self.url + "/v1/objects/cpr/p/" + n)
            self.assertEqual(r.status_code, 200, n)
            self.assertEqual(r.content, b"here before" if n == "f-007" else d, n)
        self.assertEqual(os.listdir(os.path.join(pdir, "ds")), ["f-007"])  # the kept one's file stays
        # read (it went in a batch) without touching its atime: no inode write per source file
        self.assertEqual(os.stat(os.path.join(pdir, "ds", "f-007")).st_atime, 1000000000)
        sent = sum(1 for n in files if n != "big" and hrw_owner(smap, "cpr", "p/" + n)["daemon_id"] != tid)
        self.assertGreater(sent, 80)
        # (the kept one counts as received: the receiver answers for it)
        self.assertEqual(sum(metric(u, "putb_in_objs") for u in turls) - before,
                         sent - (hrw_owner(smap, "cpr", "p/f-007")["daemon_id"] != tid))
        promote(ovw=True)
        self.assertEqual(self.s.get(self.url + "/v1/objects/cpr/p/f-007").content, files["f-007"])

    def test_modes_on_the_wire(self):
        self.create("cwm")
        smap = self.c.smap()
        tid = sorted(smap["tmap"])[0]
        turl = smap["tmap"][tid]["public_net"]["direct_url"]
        a, b = [n for n in ("w%03d" % i for i in range(300)) if hrw_owner(smap, "cwm", n)["daemon_id"] == tid][:2]
        for n in (a, b):
            self.assertEqual(self.s.put(self.url + "/v1/objects/cwm/" + n, data=b"was").status_code, 200)
        v0 = int(self.s.head(self.url + "/v1/objects/cwm/" + a, allow_redirects=True).headers["Ais-Version"])

        def post(mode, body):
            u = turl + "/v1/internal/putb?bck=cwm&provider=ais&mode=" + mode
            return self.s.post(u, data=body, headers=cluster_sig(self.secret, "POST", u), timeout=60)
        body = record(a, b"copied", version=99, atime=1700000000000000000, custom={"k": "v"})
        r = post("bogus", body)
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("invalid mode", r.json()["message"])
        self.assertEqual(self.s.get(self.url + "/v1/objects/cwm/" + a).content, b"was")
        r = post("new", record(b, b"new bytes"))
        self.assertEqual(r.json()["objs"], [{"status": 200, "kept": True}], r.text)
        self.assertEqual(self.s.get(self.url + "/v1/objects/cwm/" + b).content, b"was")
        r = post("copy", body)
        self.assertEqual(r.json()["objs"], [{"status": 200}], r.text)
        ra = self.s.get(self.url + "/v1/objects/cwm/" + a)
        self.assertEqual(ra.content, b"copied")
        self.assertEqual(int(ra.headers["Ais-Version"]), v0 + 1)  # as a PUT: not the record's 99
        self.assertNotEqual(ra.headers.get("Ais-Atime"), "1700000000000000000")
        self.assertEqual(self.custom_of(ra), {"k": "v"})

    def test_rename_in_batches(self):
        """move-bck: the copy into the new name goes in batches (carrying the rename, the one write the new
        name takes meanwhile); every object is there under the new name, the old name is gone"""
        self.create("crn")
        data = self.fill("crn", 300)
        smap = self.c.smap()
        turls = [t["public_net"]["direct_url"] for t in smap["tmap"].values()]
        before = sum(metric(u, "putb_in_objs") for u in turls)
        r = self.s.post(self.url + "/v1/buckets/crn", params={"bck_to": "ais/@#/crn2/"},
                        json={"action": "move-bck"}, timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        st = self.wait_job(r.text, timeout=180)
        self.assertEqual(st["err"], "", st)
        wait_until(lambda: self.s.head(self.url + "/v1/buckets/crn").status_code == 404, 60,
                   what="the old name gone")
        for name, (h, cu) in sorted(data.items()):
            r = self.s.get(self.url + "/v1/objects/crn2/" + name)
            self.assertEqual(r.status_code, 200, "%s: %s" % (name, r.text))
            self.assertEqual(hashlib.sha256(r.content).hexdigest(), h, name)
            self.assertEqual(self.custom_of(r), cu, name)
        moved = sum(1 for n in data if hrw_owner(smap, "crn", n)["daemon_id"] != hrw_owner(smap, "crn2", n)["daemon_id"])
        self.assertGreater(moved, 100)
        self.assertEqual(sum(metric(u, "putb_in_objs") for u in turls) - before, moved)

    def test_failures_in_a_batch_are_the_objects_own(self):
        """every PUT refused (the disks count as full): with coer each object is counted and listed as failed,
        the batched ones as the single ones, and nothing is stored"""
        self.create("cfs")
        data = self.fill("cfs", 60)
        data.update(self.fill("cfs", 0, large=1))
        self.create("cfd")
        low = {"space.lowwm": "1", "space.highwm": "1", "space.out_of_space": "1"}
        r = self.s.put(self.url + "/v1/cluster/set-config", params=low)
        self.assertEqual(r.status_code, 200, r.text)
        try:
            st = self.copy("cfs", "cfd", {"coer": True})
        finally:
            r = self.s.put(self.url + "/v1/cluster/set-config", params={"space.lowwm": "75", "space.highwm": "90",
                                                                        "space.out_of_space": "95"})
            self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(st["err"], "", st)
        tot, errors = self.stats(st["uuid"] if "uuid" in st else st["id"])
        self.assertEqual((tot["out-objs"], tot["err-objs"]), (0, len(data)))
        self.assertEqual(sorted(e["obj"] for e in errors), sorted("ais://cfs/" + n for n in data))
        for e in errors:
            self.assertIn("out_of_space", e["msg"], e)
        r = self.s.get(self.url + "/v1/buckets/cfd", json={"action": "list", "value": {"flags": "0"}})
        self.assertEqual(r.json()["entries"] or [], [])
        # and once there is room the same copy stores everything
        st = self.copy("cfs", "cfd")
        self.assertEqual(st["err"], "", st)
        for name, (h, cu) in data.items():
            r = self.s.get(self.url + "/v1/objects/cfd/" + name)
            self.assertEqual(hashlib.sha256(r.content).hexdigest(), h, name)


if __name__ == "__main__":
    main()
