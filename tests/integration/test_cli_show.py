# SPDX-License-Identifier: MIT
"""ais's `show ...` spellings against a gateway and 3 targets: show object|bucket|config|log|etl|rebalance|dsort
run shale's own verbs (object show, bucket props show, config, log show, etl show, job show KIND);
`performance counters` / `show performance` print each node's counters; `performance latency|disk|capacity`
and `storage disk show` each target's latencies, disks and mountpaths; unknown `show` words and bad flags exit
non-zero naming them."""
import json
import os
import subprocess

from harness import ClusterTest, SHALE, main


class TestCLIShow(ClusterTest):
    def shale(self, *args):
        e = dict(os.environ, AIS_ENDPOINT=self.url)
        return subprocess.run([SHALE] + list(args), capture_output=True, text=True, env=e, timeout=60)

    def ok(self, *args):
        p = self.shale(*args)
        self.assertEqual(p.returncode, 0, "%s: %s%s" % (args, p.stdout, p.stderr))
        return p.stdout

    def test_show_spellings(self):
        self.assertEqual(self.s.post(self.url + "/v1/buckets/sh", json={"action": "create-bck"}).status_code, 200)
        self.assertEqual(self.s.put(self.url + "/v1/objects/sh/o1", data=b"hello").status_code, 200)
        self.assertEqual(self.ok("show", "object", "ais://sh/o1"), self.ok("object", "show", "ais://sh/o1"))
        j = json.loads(self.ok("show", "object", "ais://sh/o1", "--json"))
        self.assertEqual(j.get("size"), 5, j)
        self.assertEqual(json.loads(self.ok("show", "bucket", "ais://sh", "--json")),
                         json.loads(self.ok("bucket", "props", "show", "ais://sh", "--json")))
        self.assertEqual(self.ok("show", "config", "cluster", "--json"), self.ok("config", "cluster", "--json"))
        self.assertTrue(self.ok("show", "log"))
        self.ok("show", "etl")
        self.ok("show", "rebalance", "--all")
        self.ok("show", "dsort")
        p = self.shale("show", "bogus")
        self.assertEqual(p.returncode, 1)
        self.assertIn('"show bogus"', p.stderr)
        for v in ("object", "bucket", "config", "log", "etl", "rebalance", "dsort", "performance"):
            p = self.shale("show", v, "--help")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("Usage: shale", p.stdout)

    def test_performance(self):
        self.assertEqual(self.s.post(self.url + "/v1/buckets/pf", json={"action": "create-bck"}).status_code, 200)
        self.assertEqual(self.s.put(self.url + "/v1/objects/pf/o", data=b"x" * 1000).status_code, 200)
        self.assertEqual(self.s.get(self.url + "/v1/objects/pf/o").status_code, 200)
        for args in (("performance", "counters"), ("show", "performance"), ("performance",)):
            out = self.ok(*args)
            self.assertIn("GET", out.splitlines()[0], out)
            self.assertEqual(sum(1 for l in out.splitlines() if l.startswith("t[")), 3, out)
        j = json.loads(self.ok("performance", "counters", "--json"))
        gets = sum(int(v["get.n"]["v"]) for v in j.values() if isinstance(v, dict) and "get.n" in v)
        self.assertGreaterEqual(gets, 1, j)
        out = self.ok("performance", "throughput", "--refresh", "1s", "--count", "2")
        self.assertEqual(out.count("GET(/s)"), 2, out)
        self.assertEqual(sum(1 for l in out.splitlines() if l.startswith("t[")), 6, out)
        th = {}
        import threading
        def sample():
            th["j"] = json.loads(self.ok("performance", "throughput", "--refresh", "2s", "--json"))
        t = threading.Thread(target=sample)
        t.start()
        import time
        time.sleep(0.5)
        for i in range(20):
            self.assertEqual(self.s.get(self.url + "/v1/objects/pf/o").status_code, 200)
        t.join()
        self.assertGreater(sum(v["get_per_s"] for v in th["j"].values()), 0, th["j"])
        p = self.shale("performance", "throughput", "--refresh", "soon")
        self.assertEqual(p.returncode, 1)
        self.assertIn("--refresh", p.stderr)
        p = self.shale("performance", "throughput", "--count", "0")
        self.assertEqual(p.returncode, 1)
        self.assertIn("--count", p.stderr)
        p = self.shale("performance", "bogus")
        self.assertEqual(p.returncode, 1)
        self.assertIn("performance bogus", p.stderr)

    def targets(self):
        """{id: (direct url, [mountpaths])} from the Smap and each target's node_status"""
        smap = self.s.get(self.url + "/v1/daemon", params={"what": "smap"}).json()
        out = {}
        for tid, sn in smap["tmap"].items():
            u = sn["public_net"]["direct_url"]
            st = self.s.get(u + "/v1/daemon", params={"what": "node_status"}).json()
            out[tid] = (u, st["capacity"]["mountpaths"])
        return out

    def bad_flags(self, *words):
        for flag, val in (("--refresh", "x"), ("--count", "0")):
            p = self.shale(*(words + (flag, val)))
            self.assertNotEqual(p.returncode, 0, p.stdout)
            self.assertIn(flag, p.stderr)
        p = self.shale(*(words + ("t[nosuch]",)))
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn("t[nosuch]", p.stderr)

    def test_performance_latency(self):
        import threading
        import time
        self.assertEqual(self.s.post(self.url + "/v1/buckets/lat", json={"action": "create-bck"}).status_code, 200)
        self.assertEqual(self.s.put(self.url + "/v1/objects/lat/o0", data=b"y" * 100).status_code, 200)
        th = {}

        def sample():
            th["j"] = json.loads(self.ok("performance", "latency", "--refresh", "4s", "--json"))
        t = threading.Thread(target=sample)
        t.start()
        time.sleep(1.0)  # (the first sample is taken)
        for i in range(5):
            self.assertEqual(self.s.put(self.url + "/v1/objects/lat/o%d" % (i + 1), data=b"z" * 500).status_code, 200)
        for i in range(10):
            self.assertEqual(self.s.get(self.url + "/v1/objects/lat/o0").status_code, 200)
        t.join()
        j = th["j"]
        self.assertEqual(len(j), 3, j)
        self.assertEqual(sum(v["get"]["n"] for v in j.values()), 10, j)
        self.assertEqual(sum(v["put"]["n"] for v in j.values()), 5, j)
        for v in j.values():
            for op in ("get", "put"):
                if v[op]["n"]:
                    self.assertGreater(v[op]["avg_ms"], 0, j)
                else:
                    self.assertIsNone(v[op]["avg_ms"], j)
        out = self.ok("performance", "latency", "--refresh", "1s", "--count", "2")
        self.assertEqual(out.count("GET(n)"), 2, out)
        self.assertIn("PUT(t)", out)
        self.assertEqual(sum(1 for l in out.splitlines() if l.startswith("t[")), 6, out)
        self.bad_flags("performance", "latency")

    def check_disk_view(self, tid, mps, v):
        """one target's disks: a device per mountpath with non-negative rates, or an explicit no-device reason"""
        self.assertEqual(set(v), {"disks", "no_disk"}, v)
        seen = set(v["no_disk"])
        for why in v["no_disk"].values():
            self.assertIn("no ", why)
        for name, d in v["disks"].items():
            self.assertTrue(name and "/" not in name, name)
            for k in ("read_bytes_per_s", "read_iops", "write_bytes_per_s", "write_iops", "util_pct"):
                self.assertGreaterEqual(d[k], 0, d)
            self.assertLessEqual(d["util_pct"], 100, d)
            seen |= set(d["mountpaths"])
        self.assertEqual(seen, set(mps), "t[%s]: %s" % (tid, v))  # (this target's mountpaths, each once)

    def test_performance_disk(self):
        tg = self.targets()
        for tid, (u, mps) in tg.items():
            j = json.loads(self.ok("performance", "disk", "t[%s]" % tid, "--refresh", "1s", "--json"))
            self.assertEqual(list(j), ["t[%s]" % tid], j)
            self.check_disk_view(tid, mps, j["t[%s]" % tid])
            m = self.s.get(u + "/metrics").text
            for name in j["t[%s]" % tid]["disks"]:
                self.assertIn('ais_target_disk_read_bytes{disk="%s",node_id="%s"}' % (name, tid), m)
                self.assertIn('ais_target_disk_write_bytes{disk="%s",node_id="%s"}' % (name, tid), m)
        out = self.ok("performance", "disk", "--refresh", "1s")
        lines = out.splitlines()
        self.assertIn("UTIL(%)", lines[0])
        for tid in tg:
            row = [l for l in lines if l.startswith("t[%s]" % tid) and "no disk statistics" not in l]
            self.assertEqual(len(row), 1, out)
            cols = row[0].split()
            if cols[1] == "(none)":  # (then the reason, under the table, for each of its mountpaths)
                notes = [l for l in lines if l.startswith("t[%s] " % tid) and "no block device" in l]
                self.assertEqual(len(notes), len(tg[tid][1]), out)
            else:
                self.assertTrue(cols[2].endswith("/s"), row)
                # (the second scrape, over a second after the first: the utilisation since then)
                m = self.s.get(tg[tid][0] + "/metrics").text
                self.assertRegex(m, r'ais_target_disk_util\{disk="%s",node_id="%s"\} \d+\n' % (cols[1], tid))
        self.bad_flags("performance", "disk")

    def test_performance_capacity(self):
        tg = self.targets()
        j = json.loads(self.ok("performance", "capacity", "--json"))
        self.assertEqual(set(j["targets"]), {"t[%s]" % t for t in tg}, j)
        for tid, (u, mps) in tg.items():
            v = j["targets"]["t[%s]" % tid]
            self.assertEqual(set(v["mountpaths"]), set(mps), v)
            for m in v["mountpaths"].values():
                self.assertGreater(m["total"], 0, v)
                self.assertEqual(m["used"] + m["avail"], m["total"], v)
                self.assertTrue(0 <= m["used_pct"] <= 100, v)
        self.assertEqual(j["cluster"]["total"], sum(v["total"] for v in j["targets"].values()), j)
        self.assertEqual(j["cluster"]["num_targets"], 3, j)
        out = self.ok("performance", "capacity")
        self.assertIn("USED(%)", out.splitlines()[0])
        self.assertIn("Cluster: 3 targets", out)
        one = next(iter(tg))
        out = self.ok("performance", "capacity", "t[%s]" % one)
        self.assertEqual([l.split()[0] for l in out.splitlines() if l.startswith("t[")], ["t[%s]" % one], out)
        p = self.shale("performance", "capacity", "t[nosuch]")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("t[nosuch]", p.stderr)

    def test_dashboard(self):
        out = self.ok("show", "dashboard", "--refresh", "1s")
        for w in ("== Nodes", "== Throughput", "GET(/s)", "== Jobs running"):
            self.assertIn(w, out)
        self.assertEqual(sum(1 for l in out.splitlines() if l.startswith("t[")), 3 + 3, out)
        p = self.shale("show", "dashboard", "--refresh", "x")
        self.assertEqual(p.returncode, 1)
        self.assertIn("--refresh", p.stderr)

    def test_storage_show(self):
        want = self.ok("storage", "--json")
        for args in (("storage", "disk", "show"), ("storage", "mountpath", "show"), ("show", "storage")):
            self.assertEqual(json.loads(self.ok(*(args + ("--json",)))).keys(), json.loads(want).keys())
        self.assertEqual(len(json.loads(want)), 3, want)

    def test_storage_disk_show(self):
        tg = self.targets()
        j = json.loads(self.ok("storage", "disk", "show", "--json", "--refresh", "500ms"))
        self.assertEqual(set(j), {"t[%s]" % t for t in tg}, j)
        for tid, (u, mps) in tg.items():
            v = j["t[%s]" % tid]
            self.assertEqual(v["mountpaths"], mps, v)
            self.check_disk_view(tid, mps, {"disks": v["disks"], "no_disk": v["no_disk"]})
        out = self.ok("storage", "disk", "show")
        self.assertIn("MOUNTPATH", out)
        self.assertIn("UTIL(%)", out)
        p = self.shale("storage", "disk", "show", "--refresh", "x")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--refresh", p.stderr)

    def test_storage_cleanup(self):
        p = self.shale("storage", "cleanup", "--wait")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        jid = p.stdout.split()[0]
        r = self.s.get(self.url + "/v1/cluster", params={"what": "allxstats"})
        self.assertIn("cleanup-store", r.text + self.ok("job", "show", "cleanup-store", "--all"))
        self.assertTrue(jid)
        p = self.shale("storage", "cleanup", "--progress")
        self.assertEqual(p.returncode, 1)
        self.assertIn("--wait", p.stderr)
        p = self.shale("storage", "cleanup", "extra")
        self.assertEqual(p.returncode, 1)
        self.assertIn('"extra"', p.stderr)


if __name__ == "__main__":
    main()
