#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Operations through the native API on a real cluster (1 gateway, 3 targets):
node logs and status through the gateway's reverse path (AIStore's
/v1/reverse/daemon with Ais-Node-Id), and a node's own log endpoint."""
import io
import tarfile

import requests

from harness import ClusterTest, main


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


if __name__ == "__main__":
    main()
