# SPDX-License-Identifier: MIT
"""ais's `show ...` spellings against a gateway and 3 targets: show object|bucket|config|log|etl|rebalance|dsort
run shale's own verbs (object show, bucket props show, config, log show, etl show, job show KIND);
`performance counters` / `show performance` print each node's counters; the not-built performance views and
unknown `show` words exit non-zero naming the word."""
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
        for v in ("latency", "disk"):
            p = self.shale("performance", v)
            self.assertEqual(p.returncode, 1)
            self.assertIn("performance %s" % v, p.stderr)

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
