#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Operations through the native API on a real cluster (1 gateway, 3 targets):
node logs and status through the gateway's reverse path (AIStore's
/v1/reverse/daemon with Ais-Node-Id), a node's own log endpoint, and
promote (files in promote.dir become objects; nothing outside it is read)."""
import io
import json
import os
import tarfile

import requests

from harness import ClusterTest, main, wait_until

J = {"Content-Type": "application/json"}


class TestNodeLogs(ClusterTest):
    def nodes(self):
        sm = self.c.smap()
        return sm["pmap"], sm["tmap"]

    def log(self, node_url, **params):
        return self.s.get(node_url + "/v1/daemon", params=dict(what="log", **params), timeout=30)

    def reverse(self, node_id, **params):
        h = {"Ais-Node-Id": node_id} if node_id is not None else {}
        return self.s.get(self.url + "/v1/reverse/daemon", params=params, headers=h, timeout=30)

    def test_own_log(self):
        pmap, tmap = self.nodes()
        turl = next(iter(tmap.values()))["public_net"]["direct_url"]
        r = self.log(turl)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertTrue(r.headers["Content-Type"].startswith("text/plain"))
        lines = r.text.splitlines()
        self.assertTrue(lines and all(ln[:2] in ("I ", "W ", "E ", "D ") for ln in lines), lines[:3])
        # an offset reads from there on; past the end is a 400 that says the log likely rotated
        part = self.log(turl, offset=10)
        self.assertEqual(part.status_code, 200)
        self.assertTrue(r.content[10:].startswith(part.content[:100]))
        big = self.log(turl, offset=10 ** 12)
        self.assertEqual(big.status_code, 400)
        self.assertIn("rotated", big.json()["message"])
        self.assertEqual(self.log(turl, offset="ten").status_code, 400)
        # warnings and errors only (one "file", as AIStore's error log)
        # a failed request makes a warning line
        self.s.get(turl + "/v1/objects/nosuchbucket/x", timeout=10)
        w = self.log(turl, severity="warning")
        self.assertEqual(w.status_code, 200)
        self.assertTrue(all(ln[:2] in ("W ", "E ") for ln in w.text.splitlines()), w.text[:300])
        self.assertLess(len(w.content), len(r.content))
        r = self.log(turl, severity="x")
        self.assertEqual(r.status_code, 400)
        self.assertIn('unknown log severity "x"', r.json()["message"])
        # all=true: a tar.gz of the log files
        r = self.log(turl, all="true")
        self.assertEqual(r.status_code, 200)
        with tarfile.open(fileobj=io.BytesIO(r.content), mode="r:gz") as tf:
            names = tf.getnames()
            self.assertIn("shaled.log", names)
            self.assertTrue(tf.extractfile("shaled.log").read().startswith(b"I "))

    def test_reverse(self):
        pmap, tmap = self.nodes()
        for tid, t in tmap.items():
            # the gateway asks the node: its own status and log
            r = self.reverse(tid, what="node_status")
            self.assertEqual(r.status_code, 200, r.text)
            self.assertIn("tracker", r.json())
            self.assertIn("capacity", r.json())
            direct = self.log(t["public_net"]["direct_url"]).content
            r = self.reverse(tid, what="log", severity="info")
            self.assertEqual(r.status_code, 200, r.text)
            self.assertTrue(r.headers["Content-Type"].startswith("text/plain"))
            self.assertTrue(r.content.startswith(direct[:200]))
            snode = self.reverse(tid, what="snode").json()
            self.assertEqual(snode["daemon_id"], tid)
        r = self.reverse(next(iter(tmap)), what="log", all="true")
        self.assertEqual(r.headers["Content-Type"], "application/gzip")
        tarfile.open(fileobj=io.BytesIO(r.content), mode="r:gz").getnames()
        # the gateway itself
        pid = next(iter(pmap))
        self.assertEqual(self.reverse(pid, what="snode").json()["daemon_id"], pid)
        # bad input
        r = self.reverse(None, what="log")
        self.assertEqual(r.status_code, 400)
        self.assertIn("Ais-Node-Id", r.json()["message"])
        r = self.reverse("nosuchnode", what="log")
        self.assertEqual(r.status_code, 404)
        self.assertIn("nosuchnode", r.json()["message"])
        r = self.reverse(next(iter(tmap)), what="log", severity="q")
        self.assertEqual(r.status_code, 400)
        self.assertIn("severity", r.json()["message"])
        r = self.s.get(self.url + "/v1/reverse/other", timeout=10)
        self.assertEqual(r.status_code, 404)
        r = requests.put(self.url + "/v1/reverse/daemon", headers={"Ais-Node-Id": pid}, timeout=10)
        self.assertEqual(r.status_code, 405)


class TestPromote(ClusterTest):
    def setUp(self):
        self.pdir = os.path.join(self.tmp, "promote")
        os.makedirs(self.pdir, exist_ok=True)
        r = self.s.put(self.url + "/v1/cluster/set-config", params={"promote.dir": self.pdir}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)

    def promote(self, bucket, src, **value):
        value.setdefault("src", src)
        return self.s.post(self.url + "/v1/objects/" + bucket, headers=J, timeout=60,
                           data=json.dumps({"action": "promote", "name": src, "value": value}))

    def wait(self, jid):
        out = {}

        def done():
            r = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid}, timeout=30)
            out["st"] = r.json() if r.status_code == 200 else {}
            return out["st"].get("end_time", 0) != 0
        wait_until(done, 60, what="job " + jid)
        return out["st"]

    def files(self, root, spec):
        for rel, data in spec.items():
            p = os.path.join(root, rel)
            os.makedirs(os.path.dirname(p), exist_ok=True)
            with open(p, "wb") as f:
                f.write(data)

    def listing(self, bucket):
        r = self.s.get(self.url + "/v1/buckets/" + bucket, timeout=30,
                       json={"action": "list", "value": {"pagesize": 10000}})
        return sorted(e["name"] for e in r.json()["entries"] or [])

    def get(self, bucket, name):
        r = self.s.get(self.url + "/v1/objects/%s/%s" % (bucket, name), timeout=30)
        return r.content if r.status_code == 200 else None

    def test_promote(self):
        self.s.post(self.url + "/v1/buckets/pr", json={"action": "create-bck"}, timeout=30).raise_for_status()
        spec = {"ds/a-%02d.bin" % i: os.urandom(100 + i) for i in range(40)}
        spec.update({"ds/sub/deep-%d.txt" % i: b"deep %d" % i for i in range(5)})
        self.files(self.pdir, spec)
        # a file outside promote.dir, reachable through a symlink inside it: never read
        secret = os.path.join(self.tmp, "outside.txt")
        with open(secret, "wb") as f:
            f.write(b"secret")
        os.symlink(secret, os.path.join(self.pdir, "ds", "link.txt"))
        os.symlink(self.tmp, os.path.join(self.pdir, "ds", "linkdir"))
        # top level only
        r = self.promote("pr", self.pdir + "/ds")
        self.assertEqual(r.status_code, 200, r.text)
        st = self.wait(r.text)
        self.assertFalse(st.get("err"), st)
        top = sorted(k[3:] for k in spec if k.count("/") == 1)
        self.assertEqual(self.listing("pr"), top)
        # recursive, under a prefix; every object has its file's bytes; the symlinks were not followed
        r = self.promote("pr", self.pdir + "/ds", rcr=True, obj="all/")
        self.assertEqual(r.status_code, 200, r.text)
        self.assertFalse(self.wait(r.text).get("err"))
        names = [n for n in self.listing("pr") if n.startswith("all/")]
        self.assertEqual(names, sorted("all/" + k[3:] for k in spec))
        for k, data in spec.items():
            self.assertEqual(self.get("pr", "all/" + k[3:]), data, k)
        self.assertNotIn(b"secret", b"".join(self.get("pr", n) or b"" for n in self.listing("pr")))
        # one file under a chosen name; existing objects are kept without ovw and replaced with it
        self.files(self.pdir, {"one.txt": b"first"})
        r = self.promote("pr", self.pdir + "/one.txt", obj="named/one")
        self.assertFalse(self.wait(r.text).get("err"))
        self.assertEqual(self.get("pr", "named/one"), b"first")
        self.files(self.pdir, {"one.txt": b"second"})
        self.assertFalse(self.wait(self.promote("pr", self.pdir + "/one.txt", obj="named/one").text).get("err"))
        self.assertEqual(self.get("pr", "named/one"), b"first")
        self.assertFalse(self.wait(self.promote("pr", self.pdir + "/one.txt", obj="named/one", ovw=True).text)
                         .get("err"))
        self.assertEqual(self.get("pr", "named/one"), b"second")
        # dls: the sources go once stored; tid: one target promotes its own directory and sends each object
        # to its owner
        self.files(self.pdir, {"mv/m-%d" % i: b"m%d" % i for i in range(12)})
        tid = next(iter(self.c.smap()["tmap"]))
        r = self.promote("pr", self.pdir + "/mv", obj="mv/", dls=True, tid=tid)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertFalse(self.wait(r.text).get("err"))
        self.assertEqual([self.get("pr", "mv/m-%d" % i) for i in range(12)], [b"m%d" % i for i in range(12)])
        self.assertEqual(os.listdir(os.path.join(self.pdir, "mv")), [])
        self.assertTrue(os.path.exists(secret))

    def test_bad_input(self):
        self.s.post(self.url + "/v1/buckets/pb", json={"action": "create-bck"}, timeout=30).raise_for_status()
        self.files(self.pdir, {"x/f": b"f"})
        cases = [
            ("x/f", {}, 400, "absolute"),
            (self.pdir + "/x/../x/f", {}, 400, "'..'"),
            (self.pdir + "/./x", {}, 400, "'.'"),
            ("/etc", {}, 400, "must be under"),
            (self.pdir + "/x", {"bogus": 1}, 400, "unknown field"),
            (self.pdir + "/x", {"rcr": "yes"}, 400, "rcr"),
            (self.pdir + "/x", {"tid": "nosuch"}, 404, "nosuch"),
        ]
        for src, extra, code, text in cases:
            r = self.promote("pb", src, **extra)
            self.assertEqual(r.status_code, code, "%s %s: %s" % (src, extra, r.text))
            self.assertIn(text, r.json()["message"])
        r = self.s.post(self.url + "/v1/objects/pb", headers=J, timeout=30, data=json.dumps(
            {"action": "promote", "name": self.pdir + "/x", "value": {"src": self.pdir + "/y"}}))
        self.assertEqual(r.status_code, 400)
        r = self.promote("nosuchbucket", self.pdir + "/x")
        self.assertEqual(r.status_code, 404)
        # a symlink out of promote.dir as the source: the job fails and reads nothing
        os.symlink("/etc", os.path.join(self.pdir, "etc"))
        r = self.promote("pb", self.pdir + "/etc", rcr=True)
        self.assertEqual(r.status_code, 200, r.text)
        st = self.wait(r.text)
        self.assertIn("outside", st.get("err", ""))
        self.assertEqual(self.listing("pb"), [])
        # promote off
        r = self.s.put(self.url + "/v1/cluster/set-config", params={"promote.dir": ""}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        r = self.promote("pb", self.pdir + "/x")
        self.assertEqual(r.status_code, 400)
        self.assertIn("promote is off", r.json()["message"])
        r = self.s.put(self.url + "/v1/cluster/set-config", params={"promote.dir": "relative/dir"}, timeout=30)
        self.assertEqual(r.status_code, 400)
        self.assertEqual(self.listing("pb"), [])


if __name__ == "__main__":
    main()
