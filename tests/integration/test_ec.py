# SPDX-License-Identifier: MIT
"""Erasure coding across targets (spec ha-durability.md §3) on a playground of
1 gateway + 4 targets: bucket props validation, slices/replicas written after
PUT and removed with the object, reads through a dead target (rebuilt from
slices on the next HRW target), and back to full redundancy after the dead
target is decommissioned (a second target can then be lost too)."""
import glob
import hashlib
import os
import shutil
import tempfile
import unittest

import requests

from harness import Cluster, Node, main, wait_until
from test_cluster import hrw_owner

D, P, LIMIT = 2, 1, 4096
SIZES = [0, 1, 17, 4095, 4096, 4097, 65537, 100003, 1024 * 1024 + 3, 3 * 1024 * 1024 + 1]


class ECTest(unittest.TestCase):
    node_env = None  # more environment for the nodes

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="shale-ec-")
        self.c = Cluster(self.tmp, proxies=1, targets=4, env=self.node_env).start()
        self.url = self.c.url
        self.s = requests.Session()
        wait_until(lambda: len(self.c.smap()["tmap"]) == 4, 30, what="4 targets in the Smap")

    def tearDown(self):
        self.c.stop()
        if not os.environ.get("SHALE_KEEP_TMP"):
            shutil.rmtree(self.tmp, ignore_errors=True)

    def act(self, method, path, action, value=None):
        return self.s.request(method, self.url + path, json={"action": action, "value": value}, timeout=30)

    def create(self, b, ec=None):
        r = self.act("POST", "/v1/buckets/" + b, "create-bck")
        self.assertEqual(r.status_code, 200, r.text)
        if ec:
            r = self.act("PATCH", "/v1/buckets/" + b, "set-bprops", {"ec": ec})
            self.assertEqual(r.status_code, 200, r.text)

    def props(self, b):
        r = self.s.head(self.url + "/v1/buckets/" + b)
        self.assertEqual(r.status_code, 200, r.text)
        import json
        return json.loads(r.headers["Ais-Bucket-Props"])

    def put_all(self, b, sizes, prefix="o"):
        data = {}
        for i, n in enumerate(sizes):
            name = "%s/%03d-%d" % (prefix, i, n)
            d = os.urandom(n)
            r = self.s.put(self.url + "/v1/objects/%s/%s" % (b, name), data=d, timeout=60)
            self.assertEqual(r.status_code, 200, r.text)
            data[name] = d
        return data

    def check_all(self, b, data):
        for name, d in data.items():
            r = self.s.get(self.url + "/v1/objects/%s/%s" % (b, name), timeout=60)
            self.assertEqual(r.status_code, 200, "%s: %s" % (name, r.text[:300]))
            self.assertEqual(hashlib.sha256(r.content).hexdigest(), hashlib.sha256(d).hexdigest(), name)

    def encoded(self, b, name):
        r = self.s.head(self.url + "/v1/objects/%s/%s" % (b, name), timeout=10, allow_redirects=True)
        return r.status_code == 200 and r.headers.get("Ais-Ec-Data") == str(D) and r

    def slice_holders(self, b, name, alive=None):
        """targets (playground node names) holding an EC slice/replica file of b/name"""
        h = hashlib.sha256(name.encode()).hexdigest()
        out = []
        for n in self.c.topology()["nodes"]:
            if n["role"] != "target" or (alive is not None and n["name"] not in alive):
                continue
            if glob.glob(os.path.join(self.c.dir, n["name"], "**", "@ais", b, "%ec", h), recursive=True):
                out.append(n["name"])
        return out

    def want_holders(self, n):
        return P if n < LIMIT else D + P

    def name_by_id(self, tid):
        return self.c.target_name(tid)


class TestECProps(ECTest):
    def test_validation(self):
        self.create("ev")
        for bad, key, rng in (({"data_slices": 0}, "ec.data_slices", "1-32"),
                              ({"data_slices": 33}, "ec.data_slices", "1-32"),
                              ({"parity_slices": 0, "enabled": True}, "ec.parity_slices", "1-32"),
                              ({"objsize_limit": -2}, "ec.objsize_limit", "-1")):
            r = self.act("PATCH", "/v1/buckets/ev", "set-bprops", {"ec": bad})
            self.assertEqual(r.status_code, 400, r.text)
            self.assertIn(key, r.text)
            self.assertIn(rng, r.text)
        self.assertFalse(self.props("ev")["ec"]["enabled"])
        # more targets than the cluster has: D+P+1 sliced, P+1 always replicated
        r = self.act("PATCH", "/v1/buckets/ev", "set-bprops", {"ec": {"enabled": True, "data_slices": 3,
                                                                      "parity_slices": 1}})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("EC configuration (D = 3, P = 1) requires at least 5 targets (have 4)", r.json()["message"])
        r = self.act("PATCH", "/v1/buckets/ev", "set-bprops", {"ec": {"enabled": True, "data_slices": 1,
                                                                      "parity_slices": 4, "objsize_limit": -1}})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("requires at least 5 targets (have 4)", r.text)
        r = self.act("POST", "/v1/buckets/ev", "ec-encode", {"data_slices": 2, "parity_slices": 2})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("EC configuration (D = 2, P = 2) requires at least 5 targets (have 4)", r.text)
        r = self.act("POST", "/v1/buckets/ev", "ec-encode", {"data_slices": 2})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertFalse(self.props("ev")["ec"]["enabled"])
        # on, then D/P fixed and no way back
        r = self.act("PATCH", "/v1/buckets/ev", "set-bprops", {"ec": {"enabled": True, "data_slices": 2,
                                                                      "parity_slices": 1}})
        self.assertEqual(r.status_code, 200, r.text)
        for bad in ({"data_slices": 1}, {"parity_slices": 2}, {"enabled": False}):
            r = self.act("PATCH", "/v1/buckets/ev", "set-bprops", {"ec": bad})
            self.assertEqual(r.status_code, 400, r.text)
        r = self.act("POST", "/v1/buckets/ev", "ec-encode", {"data_slices": 1, "parity_slices": 1})
        self.assertEqual(r.status_code, 400, r.text)
        r = self.act("PATCH", "/v1/buckets/ev", "set-bprops", {"ec": {"objsize_limit": 1000}})
        self.assertEqual(r.status_code, 200, r.text)
        ec = self.props("ev")["ec"]
        self.assertEqual((ec["enabled"], ec["data_slices"], ec["parity_slices"], ec["objsize_limit"]),
                         (True, 2, 1, 1000))
        r = self.act("PATCH", "/v1/buckets/ev", "set-bprops", {"ec": {"compression": "always"}})
        self.assertEqual(r.status_code, 501, r.text)

    def test_slices_follow_put_overwrite_delete(self):
        self.create("es", {"enabled": True, "data_slices": D, "parity_slices": P, "objsize_limit": LIMIT})
        data = self.put_all("es", SIZES)
        for name in data:
            r = wait_until(lambda: self.encoded("es", name), 30, what="%s encoded" % name)
            self.assertEqual(r.headers["Ais-Ec-Parity"], str(P))
            self.assertEqual(r.headers["Ais-Ec-Replicated"], "true" if len(data[name]) < LIMIT else "false")
            self.assertTrue(int(r.headers["Ais-Ec-Generation"]) > 0)
            self.assertEqual(len(self.slice_holders("es", name)), self.want_holders(len(data[name])), name)
        # listings show the objects only
        r = self.s.get(self.url + "/v1/buckets/es", json={"action": "list", "value": {"flags": "0"}})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(sorted(e["name"] for e in r.json()["entries"]), sorted(data))
        # overwrite: a new generation everywhere; delete: gone everywhere
        name = sorted(data)[-1]
        g0 = self.encoded("es", name).headers["Ais-Ec-Generation"]
        nd = os.urandom(200000)
        self.assertEqual(self.s.put(self.url + "/v1/objects/es/" + name, data=nd).status_code, 200)
        wait_until(lambda: self.encoded("es", name) and self.encoded("es", name).headers["Ais-Ec-Generation"] != g0,
                   30, what="re-encoded")
        data[name] = nd
        self.check_all("es", data)
        victim = sorted(data)[3]
        self.assertEqual(self.s.delete(self.url + "/v1/objects/es/" + victim).status_code, 200)
        wait_until(lambda: not self.slice_holders("es", victim), 30, what="slices of the deleted object gone")
        self.assertEqual(self.s.get(self.url + "/v1/objects/es/" + victim).status_code, 404)
        del data[victim]
        # delete-listrange too
        gone = sorted(data)[:2]
        r = self.s.delete(self.url + "/v1/buckets/es", timeout=60, json={"action": "delete-listrange", "name": "",
                                                                          "value": {"objnames": gone}})
        self.assertEqual(r.status_code, 200, r.text)
        for n in gone:
            wait_until(lambda: not self.slice_holders("es", n), 30, what="slices of %s gone" % n)
            del data[n]
        # slices survive a restart of the target that holds them (start-up reconcile leaves %ec/%mt alone)
        name = sorted(data)[-2]
        holder = self.slice_holders("es", name)[0]
        before = {n: self.slice_holders("es", n) for n in data}
        tid = requests.get(self.c.node_url(holder) + "/v1/daemon?what=snode", timeout=5).json()["daemon_id"]
        self.c.kill9(holder)
        self.c.cli("playground", "start", "--dir", self.c.dir)
        wait_until(lambda: not self.c.smap()["tmap"][tid].get("flags", 0) & (1 << 16), 60, what="holder back")
        self.assertEqual({n: self.slice_holders("es", n) for n in data}, before)
        for n in data:
            self.assertTrue(self.encoded("es", n), n)


class TestECEncode(ECTest):
    def test_ec_encode_existing_objects(self):
        self.create("ee")
        data = self.put_all("ee", SIZES[1:6] + [200000, 777777])
        self.assertFalse(self.encoded("ee", sorted(data)[0]))
        self.assertEqual(self.slice_holders("ee", sorted(data)[0]), [])
        r = self.act("POST", "/v1/buckets/ee", "ec-encode", {"data_slices": D, "parity_slices": P,
                                                             "objsize_limit": LIMIT})
        self.assertEqual(r.status_code, 200, r.text)
        jid = r.text.strip()
        self.assertTrue(jid)

        def done():
            r = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid})
            return r.status_code == 200 and r.json()["end_time"] != 0 and r.json()
        st = wait_until(done, 60, interval=0.2, what="ec-encode %s" % jid)
        self.assertEqual(st.get("kind", "ec-encode"), "ec-encode")
        ec = self.props("ee")["ec"]
        self.assertEqual((ec["enabled"], ec["data_slices"], ec["parity_slices"], ec["objsize_limit"]),
                         (True, D, P, LIMIT))
        for name in data:
            r = self.encoded("ee", name)
            self.assertTrue(r, name)
            self.assertEqual(len(self.slice_holders("ee", name)), self.want_holders(len(data[name])), name)
        self.check_all("ee", data)


class TestECConfig(unittest.TestCase):
    def test_aistore_ec_section_loads(self):
        tmp = tempfile.mkdtemp(prefix="shale-ecc-")
        n = Node(tmp, extra_config={"ec": {"objsize_limit": 1000, "compression": "never", "bundle_multiplier": 2,
                                           "data_slices": 3, "parity_slices": 1, "enabled": False,
                                           "disk_only": False, "burst_buffer": 512}})
        try:
            n.start()
            cfg = requests.get(n.url + "/v1/daemon?what=config", timeout=10).json()
            self.assertEqual(cfg["ec"]["data_slices"], 3)
            r = requests.post(n.url + "/v1/buckets/cb", json={"action": "create-bck"}, timeout=10)
            self.assertEqual(r.status_code, 200, r.text)
            import json
            p = json.loads(requests.head(n.url + "/v1/buckets/cb", timeout=10).headers["Ais-Bucket-Props"])
            self.assertEqual((p["ec"]["data_slices"], p["ec"]["parity_slices"], p["ec"]["objsize_limit"]),
                             (3, 1, 1000))
        finally:
            n.stop()
            shutil.rmtree(tmp, ignore_errors=True)


class TestECLoss(ECTest):
    def test_kill_decommission_rebuild(self):
        self.create("ec", {"enabled": True, "data_slices": D, "parity_slices": P, "objsize_limit": LIMIT})
        data = self.put_all("ec", SIZES + [300 + 977 * i for i in range(12)] + [5000 + 7919 * i for i in range(8)])
        for name in data:
            wait_until(lambda: self.encoded("ec", name), 30, what="%s encoded" % name)
        smap = self.c.smap()
        per = {}
        for name in data:
            per.setdefault(hrw_owner(smap, "ec", name)["daemon_id"], []).append(name)
        victim = max(per, key=lambda t: len(per[t]))
        self.assertTrue(per[victim])
        vname = self.name_by_id(victim)
        # the primary's inventory of the victim (the no-silent-loss check reads it), taken once all is encoded
        def inventoried():
            c = self.s.get(self.url + "/v1/cluster", params={"what": "lost"}).json().get("inventory", {}).get(
                victim, {}).get("buckets", {}).get("ec", {})
            return c.get("n", 0) > 0 and c.get("unprotected_n") == 0
        wait_until(inventoried, 60, interval=0.5, what="inventory of the victim")
        self.c.kill9(vname)
        wait_until(lambda: self.c.smap()["tmap"][victim].get("flags", 0) & (1 << 16), 30, what="victim offline")
        # every object still reads, byte-identical (the gateway sends reads of the
        # dead target's objects to the next HRW target, which rebuilds them)
        self.check_all("ec", data)
        name = per[victim][0]
        r = self.s.head(self.url + "/v1/objects/ec/" + name, allow_redirects=True)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(int(r.headers["Content-Length"]), len(data[name]))
        # a stand-in serves the rebuilt object without keeping a stray copy of it
        for n in per[victim]:
            stray = [f for f in glob.glob(os.path.join(self.c.dir, "t*", "**", "@ais", "ec", "%ob", n), recursive=True)
                     if not f.startswith(os.path.join(self.c.dir, vname) + os.sep)]
            self.assertEqual(stray, [], n)
        # then gone for good: every object of it was encoded, so nothing counts as lost
        r = self.s.put(self.url + "/v1/cluster", json={"action": "decommission-node",
                                                       "value": {"sid": victim, "no_shutdown": True}}, timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        wait_until(lambda: victim not in self.c.smap()["tmap"], 60, what="victim removed")
        lost = self.s.get(self.url + "/v1/cluster", params={"what": "lost"}).json()
        self.assertNotIn(victim, lost.get("lostmd", {}).get("targets", {}))
        alive = [n["name"] for n in self.c.topology()["nodes"] if n["role"] == "target" and n["name"] != vname]
        # back to full redundancy: every object has all its slices/replicas on the survivors
        # (3 targets are left: the main target + 2 others, so a sliced object keeps
        # its 2 data slices and loses its parity placement; any one more loss is still survivable)
        # the dead target's objects are rebuilt on their new main targets without being read
        # (ec-encode after the rebalance), and ...
        for name in per[victim]:
            wait_until(lambda: any(os.path.isfile(os.path.join(self.c.dir, t, "mp1", "@ais", "ec", "%ob", name))
                                   for t in alive), 90, interval=0.5, what="%s rebuilt on a survivor" % name)
        for name in data:
            want = min(self.want_holders(len(data[name])), len(alive) - 1)
            wait_until(lambda: len(self.slice_holders("ec", name, alive)) >= want, 90,
                       interval=0.5, what="%s has its slices again" % name)
        self.check_all("ec", data)
        # ... which a second loss proves: everything still reads
        smap = self.c.smap()
        second = hrw_owner(smap, "ec", sorted(data)[0])["daemon_id"]
        self.c.kill9(self.name_by_id(second))
        wait_until(lambda: self.c.smap()["tmap"][second].get("flags", 0) & (1 << 16), 30, what="second offline")
        self.check_all("ec", data)
        # a third loss is one too many: what cannot be rebuilt says so (never wrong bytes)
        third = [t for t in self.c.smap()["tmap"] if t != second][0]
        self.c.kill9(self.name_by_id(third))
        wait_until(lambda: self.c.smap()["tmap"][third].get("flags", 0) & (1 << 16), 30, what="third offline")
        lost = 0
        for name, d in data.items():
            r = self.s.get(self.url + "/v1/objects/ec/" + name, timeout=60)
            self.assertIn(r.status_code, (200, 404, 500), r.text)
            if r.status_code == 200:
                self.assertEqual(r.content, d, name)
            elif r.status_code == 500:
                self.assertIn("is lost: it was erasure coded as D = 2 data and P = 1 parity slices", r.text)
                lost += 1
        self.assertGreater(lost, 0)


class TestECRepair(ECTest):
    def test_damaged_main_copy_is_rebuilt(self):
        """the main target's copy of an erasure-coded object is damaged on its disk (truncated, grown, a byte
        flipped under checksum.validate_warm_get, the file gone and its metadata kept): every GET, native and
        S3, whole and ranged, 30 at once, gets the right bytes, rebuilt from the slices, and the main copy is
        made again (the build before served the short file or failed the read)"""
        self.create("er", {"enabled": True, "data_slices": D, "parity_slices": P, "objsize_limit": LIMIT})
        r = self.act("PATCH", "/v1/buckets/er", "set-bprops", {"checksum": {"validate_warm_get": True}})
        self.assertEqual(r.status_code, 200, r.text)
        data = self.put_all("er", [100003, 65537, 200000, 1000, 300001, 1 << 20])
        for name in data:
            wait_until(lambda: self.encoded("er", name), 30, what="%s encoded" % name)
        names = sorted(data)
        smap = self.c.smap()
        main_file = {n: os.path.join(self.c.dir, self.name_by_id(hrw_owner(smap, "er", n)["daemon_id"]), "mp1",
                                     "@ais", "er", "%ob", n) for n in names}
        for n in names:
            self.assertTrue(os.path.isfile(main_file[n]), main_file[n])
        how = dict(zip(names, ("truncate", "flip", "remove", "truncate", "grow", "truncate")))
        for n in names:
            f = main_file[n]
            if how[n] == "remove":
                os.unlink(f)
                continue
            with open(f, "r+b") as fh:
                if how[n] == "truncate":
                    fh.truncate(len(data[n]) // 2)
                elif how[n] == "grow":
                    fh.seek(0, 2)
                    fh.write(b"junk")
                else:
                    fh.seek(len(data[n]) // 3)
                    b = fh.read(1)
                    fh.seek(len(data[n]) // 3)
                    fh.write(bytes([b[0] ^ 0x55]))
        # one read of each first, on the front end that would have served the file as it is
        fronts = ("native", "s3", "range", "s3-range")
        for i, n in enumerate(names):
            front = fronts[i % len(fronts)]
            path = ("/s3/er/" if front.startswith("s3") else "/v1/objects/er/") + n
            hdr = {"Range": "bytes=10-4009"} if front.endswith("range") else {}
            r = self.s.get(self.url + path, headers=hdr, timeout=60)
            want = data[n][10:4010] if hdr else data[n]
            self.assertEqual(r.status_code, 206 if hdr else 200, "%s (%s, %s): %s" % (n, how[n], front, r.text[:300]))
            self.assertEqual(r.content, want, "%s (%s, %s)" % (n, how[n], front))
        # the main copies are whole again, on the disk where they belong
        for n in names:
            wait_until(lambda: os.path.isfile(main_file[n]) and os.path.getsize(main_file[n]) == len(data[n]), 30,
                       what="%s made again on its main target" % n)
            with open(main_file[n], "rb") as fh:
                self.assertEqual(fh.read(), data[n], n)
        # damaged again, read by 30 clients at once: every one gets the object (readers that found the damaged
        # copy while another made it again, or dropped it, included); four times over
        n = names[-1]
        import concurrent.futures

        def get(i):
            path = ("/s3/er/" if i % 2 else "/v1/objects/er/") + n
            r = requests.get(self.url + path, timeout=60)
            return r.status_code, hashlib.sha256(r.content).hexdigest() if r.status_code == 200 else r.text[:300]
        for rnd in range(4):
            wait_until(lambda: os.path.isfile(main_file[n]) and os.path.getsize(main_file[n]) == len(data[n]), 30,
                       what="%s made again on its main target" % n)
            with open(main_file[n], "r+b") as fh:
                fh.truncate(12345 + rnd)
            with concurrent.futures.ThreadPoolExecutor(30) as ex:
                got = list(ex.map(get, range(30)))
            self.assertEqual(set(got), {(200, hashlib.sha256(data[n]).hexdigest())}, "round %d: %s" % (rnd, got))
        self.check_all("er", data)
        # each repair was logged and counted where it happened
        targets = [t["name"] for t in self.c.topology()["nodes"] if t["role"] == "target"]
        logs = "".join(self.c.log(t) for t in targets)
        self.assertIn("the damaged copy here is dropped, to be made again from its erasure-coded slices", logs)
        counted = sum(int(requests.get(self.c.node_url(t) + "/v1/daemon?what=node_status", timeout=10).json()[
            "tracker"].get("err_cksum_n", {"v": "0"})["v"]) for t in targets)
        # 5 damaged files (the removed one is metadata without a file, not damage), and the last one again
        self.assertGreaterEqual(counted, 6)
        # an S3 object encrypted at rest (SSE-S3) comes back from its slices with its custom metadata: its
        # encryption (else its ciphertext was served as its bytes), Content-Type and ETag (the EC metafile kept
        # none of them)
        kf = os.path.join(self.tmp, "sse.key")
        with open(kf, "w") as fh:
            fh.write(os.urandom(32).hex())
        r = self.s.put(self.url + "/v1/cluster/set-config", params={"s3.sse_key_file": kf}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        body = os.urandom(300001)
        r = self.s.put(self.url + "/s3/er/enc", data=body, timeout=60,
                       headers={"x-amz-server-side-encryption": "AES256", "Content-Type": "text/x-enc"})
        self.assertEqual(r.status_code, 200, r.text)
        wait_until(lambda: self.encoded("er", "enc"), 30, what="enc encoded")
        f = os.path.join(self.c.dir, self.name_by_id(hrw_owner(self.c.smap(), "er", "enc")["daemon_id"]), "mp1",
                         "@ais", "er", "%ob", "enc")
        os.unlink(f)
        for hdr in ({}, {"Range": "bytes=7-70006"}):
            r = self.s.get(self.url + "/s3/er/enc", headers=hdr, timeout=60)
            self.assertEqual(r.status_code, 206 if hdr else 200, r.text[:300])
            self.assertEqual(r.content, body[7:70007] if hdr else body)
            self.assertEqual((r.headers.get("x-amz-server-side-encryption"), r.headers.get("Content-Type"),
                              r.headers.get("ETag")), ("AES256", "text/x-enc", '"%s"' % hashlib.md5(body).hexdigest()))


class TestECSliceRot(ECTest):
    def test_main_missing_and_a_slice_rotted(self):
        """the main copy's file is gone and one of the other targets' slices has a flipped byte: the rebuild
        leaves the rotted slice out (its own checksum, in its metadata, does not match) and reads right from
        the other two; a slice whose metadata has no checksum of its own (encoded before there was one) is
        found by trying the other combinations of D slices against the object's checksum (the build before
        answered 500: the first D slices it found rebuilt an object with the wrong checksum)"""
        import json
        self.create("rot", {"enabled": True, "data_slices": D, "parity_slices": P, "objsize_limit": LIMIT})
        data = self.put_all("rot", [100003, 65537, 300001])
        for name in data:
            wait_until(lambda: self.encoded("rot", name), 30, what="%s encoded" % name)
        smap = self.c.smap()
        names = sorted(data)
        for k, n in enumerate(names):
            main_name = self.name_by_id(hrw_owner(smap, "rot", n)["daemon_id"])
            os.unlink(os.path.join(self.c.dir, main_name, "mp1", "@ais", "rot", "%ob", n))
            h = hashlib.sha256(n.encode()).hexdigest()
            holders = [t for t in self.slice_holders("rot", n) if t != main_name]
            self.assertEqual(len(holders), D + P, holders)
            def meta_of(t):
                mf = glob.glob(os.path.join(self.c.dir, t, "**", "@ais", "rot", "%mt", h), recursive=True)[0]
                with open(mf) as fh:
                    return mf, json.load(fh)
            # (a data slice, the first one a rebuild tries: slices go in the order of their ids)
            victim = [t for t in holders if meta_of(t)[1]["slice_id"] == 1][0] if k == 2 else holders[k]
            sf = glob.glob(os.path.join(self.c.dir, victim, "**", "@ais", "rot", "%ec", h), recursive=True)[0]
            with open(sf, "r+b") as fh:
                fh.seek(100)
                b = fh.read(1)
                fh.seek(100)
                fh.write(bytes([b[0] ^ 0xff]))
            if k == 2:  # its metadata without a checksum of its own
                mf, m = meta_of(victim)
                m.pop("slice_cksum", None)
                with open(mf, "w") as fh:
                    json.dump(m, fh)
        for i, n in enumerate(names):
            path = ("/s3/rot/" if i % 2 else "/v1/objects/rot/") + n
            r = self.s.get(self.url + path, timeout=60)
            self.assertEqual(r.status_code, 200, "%s: %s" % (n, r.text[:300]))
            self.assertEqual(r.content, data[n], n)
        logs = "".join(self.c.log(t["name"]) for t in self.c.topology()["nodes"] if t["role"] == "target")
        self.assertEqual(logs.count("left out of the rebuild"), 2, logs[-3000:])
        self.assertIn("rebuilt from slices 2, 3, after 2 set(s) of D = 2 that did not rebuild it", logs)


class TestScrub(ECTest):
    def scrub(self, value=None):
        r = self.s.put(self.url + "/v1/cluster", json={"action": "start", "value": dict(
            {"Kind": "scrub"}, **(value or {}))}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        jid = r.text
        out = {}

        def done():
            r = self.s.get(self.url + "/v1/cluster", params={"what": "qryxstats"}, json={"ID": jid}, timeout=30)
            js = [j for arr in r.json().values() for j in (arr or [])]
            out["j"] = js
            return len(js) == 4 and all(j["end_ns"] for j in js)
        wait_until(done, 60, interval=0.3, what="scrub %s on every target" % jid)
        tot = {}
        for j in out["j"]:
            self.assertFalse(j.get("err"), j)
            for k in ("loc-objs", "out-objs", "in-objs", "err-objs"):
                tot[k] = tot.get(k, 0) + int(j["stats"].get(k, 0))
        return tot

    def test_scrub_checks_every_object(self):
        """job scrub with Fix reads every object of every bucket on every target with the checksum check: a
        flipped byte in an erasure-coded object's main copy is made again from its slices, one in a plain bucket
        is recorded as damaged (its reads refuse it from then on, checked or not); counted per job; a bucket can
        be named; scrub.interval makes the targets run it (detect-only) by themselves"""
        self.create("sp")
        self.create("se", {"enabled": True, "data_slices": D, "parity_slices": P, "objsize_limit": LIMIT})
        sizes = [1000, 3000, 100003, 65537, 200000, 7000]
        dp = self.put_all("sp", sizes)
        de = self.put_all("se", sizes)
        for name in de:
            wait_until(lambda: self.encoded("se", name), 30, what="%s encoded" % name)
        smap = self.c.smap()

        def flip(b, n, size):
            f = os.path.join(self.c.dir, self.name_by_id(hrw_owner(smap, b, n)["daemon_id"]), "mp1", "@ais", b,
                             "%ob", n)
            with open(f, "r+b") as fh:
                fh.seek(size // 3)
                c = fh.read(1)
                fh.seek(size // 3)
                fh.write(bytes([c[0] ^ 0x5a]))
            return f
        bad_p = sorted(dp)[2:4]
        bad_e = sorted(de)[1:3]
        for n in bad_p:
            flip("sp", n, len(dp[n]))
        files_e = {n: flip("se", n, len(de[n])) for n in bad_e}
        tot = self.scrub({"Fix": True})
        # (out-objs: the slices and replicas held, 4 objects of 3 slices and 2 of 1 replica; 14 but for those
        # being sent again at that moment, the objects made again being encoded again)
        self.assertIn(tot.pop("out-objs"), range(12, 17))
        self.assertEqual(tot, {"loc-objs": 12, "in-objs": 2, "err-objs": 2}, tot)
        for n, f in files_e.items():  # made again on its disk
            wait_until(lambda: open(f, "rb").read() == de[n], 30, what="%s made again" % n)
        for n, d in de.items():
            r = self.s.get(self.url + "/v1/objects/se/" + n, timeout=30)
            self.assertEqual((r.status_code, r.content == d), (200, True), n)
        for n, d in dp.items():
            r = self.s.get(self.url + "/v1/objects/sp/" + n, timeout=30)  # (not checked by this read)
            if n in bad_p:
                self.assertEqual(r.status_code, 500, n)
                self.assertIn("recorded as damaged: BAD DATA CHECKSUM", r.json()["message"])
            else:
                self.assertEqual((r.status_code, r.content == d), (200, True), n)
        # a slice on another target rots: checked against its own checksum, and its object encoded again;
        # one bucket named: only its objects
        import json
        import xxhash
        n = sorted(de)[4]
        h = hashlib.sha256(n.encode()).hexdigest()
        main_name = self.name_by_id(hrw_owner(smap, "se", n)["daemon_id"])
        holder = [t for t in self.slice_holders("se", n) if t != main_name][0]
        sf = glob.glob(os.path.join(self.c.dir, holder, "**", "@ais", "se", "%ec", h), recursive=True)[0]
        mf = glob.glob(os.path.join(self.c.dir, holder, "**", "@ais", "se", "%mt", h), recursive=True)[0]
        wait_until(lambda: self.scrub({"Bck": {"name": "se", "provider": "ais"}})["out-objs"] == 14, 30,
                   interval=0.5, what="every slice in place")  # (none being sent again)
        with open(sf, "r+b") as fh:
            c = fh.read(1)
            fh.seek(0)
            fh.write(bytes([c[0] ^ 1]))
        tot = self.scrub({"Bck": {"name": "se", "provider": "ais"}, "Fix": True})
        self.assertIn(tot.pop("out-objs"), range(13, 16))
        self.assertEqual(tot, {"loc-objs": 6, "in-objs": 1, "err-objs": 1}, tot)
        self.assertIn("here is damaged (xxhash", self.c.log(holder))

        def slice_whole():
            with open(sf, "rb") as fh, open(mf) as fm:
                return "%016x" % xxhash.xxh64(fh.read()).intdigest() == json.load(fm)["slice_cksum"]
        wait_until(slice_whole, 30, what="the slice encoded again")
        tot = self.scrub({"Bck": {"name": "se", "provider": "ais"}})
        self.assertEqual(tot, {"loc-objs": 6, "out-objs": 14, "in-objs": 0, "err-objs": 0}, tot)
        r = self.s.put(self.url + "/v1/cluster", json={"action": "start", "value": {"Kind": "scrub", "Bck": {
            "name": "nosuch"}}}, timeout=30)
        self.assertEqual(r.status_code, 404, r.text)
        # by themselves, every scrub.interval
        r = self.s.put(self.url + "/v1/cluster", json={"action": "set-config", "value": {"scrub": {
            "interval": "500ms"}}}, timeout=30)
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("scrub.interval must be 0s (off) or at least 1s", r.text)
        r = self.s.put(self.url + "/v1/cluster", json={"action": "set-config", "value": {"scrub": {
            "interval": "2s"}}}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        targets = [t["name"] for t in self.c.topology()["nodes"] if t["role"] == "target"]
        wait_until(lambda: all("started by the target itself (scrub.interval)" in self.c.log(t) for t in targets), 30,
                   interval=0.5, what="every target scrubbing by itself")
        r = self.s.put(self.url + "/v1/cluster", json={"action": "set-config", "value": {"scrub": {
            "interval": "0s"}}}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)


class TestECRepairRace(ECTest):
    node_env = {"SHALE_FAULT": "read-damaged@400"}  # each read that finds the copy damaged waits 0.4 s first

    def test_readers_side_by_side_find_it_damaged(self):
        """12 reads at once, native and S3, all find the main copy damaged before any of them drops it: the
        first drops it and rebuilds it, the others find it gone or made again; then the same with its file
        removed and its metadata kept: every one gets the object (the build before answered 500 "the object is
        damaged" to those whose drop found nothing left to drop)"""
        self.create("er", {"enabled": True, "data_slices": D, "parity_slices": P, "objsize_limit": LIMIT})
        data = self.put_all("er", [1 << 20])
        n = list(data)[0]
        wait_until(lambda: self.encoded("er", n), 30, what="%s encoded" % n)
        main_name = self.name_by_id(hrw_owner(self.c.smap(), "er", n)["daemon_id"])
        f = os.path.join(self.c.dir, main_name, "mp1", "@ais", "er", "%ob", n)
        import concurrent.futures

        def get(i):
            path = ("/s3/er/" if i % 2 else "/v1/objects/er/") + n
            r = requests.get(self.url + path, timeout=60)
            return r.status_code, hashlib.sha256(r.content).hexdigest() if r.status_code == 200 else r.text[:300]
        for rnd in range(3):
            wait_until(lambda: os.path.isfile(f) and os.path.getsize(f) == len(data[n]), 30, what="main copy whole")
            if rnd == 2:  # the file gone, its metadata kept: no reader may answer 404
                os.unlink(f)
            else:
                with open(f, "r+b") as fh:
                    fh.truncate(1000 + rnd)
            with concurrent.futures.ThreadPoolExecutor(12) as ex:
                got = list(ex.map(get, range(12)))
            self.assertEqual(set(got), {(200, hashlib.sha256(data[n]).hexdigest())}, "round %d: %s" % (rnd, got))
        # more than one reader found it damaged: the race was run
        self.assertGreater(self.c.log(main_name).count("the copy here is damaged"), 2)


class TestECMountpaths(ECTest):
    def test_slices_found_after_mountpaths_change(self):
        """a target's mountpaths change (two added): the resilver moves its objects, not its slices and
        replicas, which stay where the old HRW put them; they must still be found when their object's main
        target dies (a 1-replica object has no other way back)"""
        import json
        import signal
        from test_resilver import hrw_mpath
        self.create("ec", {"enabled": True, "data_slices": D, "parity_slices": P, "objsize_limit": LIMIT})
        data = self.put_all("ec", [100 + 37 * i for i in range(60)])  # all below LIMIT: one replica each
        for name in data:
            wait_until(lambda: self.encoded("ec", name), 30, what="%s encoded" % name)
        smap = self.c.smap()
        targets = [n["name"] for n in self.c.topology()["nodes"] if n["role"] == "target"]
        owner = {name: self.name_by_id(hrw_owner(smap, "ec", name)["daemon_id"]) for name in data}
        holder = {name: self.slice_holders("ec", name) for name in data}
        # x: the target whose new mountpaths move the HRW place of most replicas it holds for others
        new = {t: [os.path.join(self.c.dir, t, "mp%d" % i) for i in (1, 2, 3)] for t in targets}
        moved = {t: [n for n in data if holder[n] == [t] and owner[n] != t and
                     hrw_mpath(new[t], "ec", n) != new[t][0]] for t in targets}
        x = max(targets, key=lambda t: len(moved[t]))
        victim = max({owner[n] for n in moved[x]}, key=lambda v: sum(owner[n] == v for n in moved[x]))
        probe = [n for n in moved[x] if owner[n] == victim]
        self.assertTrue(probe, "no replica on a moved mountpath (placement)")
        # restart x with 3 mountpaths
        pid = self.c.pid(x)
        os.kill(pid, signal.SIGTERM)
        wait_until(lambda: not os.path.exists("/proc/%d" % pid), 30, what="%s stopped" % x)
        cfgp = os.path.join(self.c.dir, x, "shale.json")
        with open(cfgp) as f:
            cfg = json.load(f)
        for p in new[x][1:]:
            os.makedirs(p, exist_ok=True)
        cfg["fspaths"] = {p: "" for p in new[x]}
        with open(cfgp, "w") as f:
            json.dump(cfg, f)
        self.c.start()
        xid = [t for t in smap["tmap"] if self.name_by_id(t) == x][0]
        wait_until(lambda: not self.c.smap()["tmap"][xid].get("flags", 0) & (1 << 16), 60, what="%s back" % x)
        # the victim dies: its objects are rebuilt from what the others hold, x included
        vid = [t for t in smap["tmap"] if self.name_by_id(t) == victim][0]
        self.c.kill9(victim)
        wait_until(lambda: self.c.smap()["tmap"][vid].get("flags", 0) & (1 << 16), 30, what="victim offline")
        self.check_all("ec", {n: data[n] for n in probe})
        self.check_all("ec", data)


if __name__ == "__main__":
    main()
