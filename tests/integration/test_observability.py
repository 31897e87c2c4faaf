#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Observability: Debian's real `prometheus` scrapes every node of a 1-gateway, 3-target playground and answers
PromQL over AIStore's metric names and the base-unit ones; `promtool check metrics` finds no format error and
lints only AIStore's own names (which predate Prometheus's conventions); labels carry no object names;
`shale log show` reads a target's log through the gateway."""
import os
import shutil
import subprocess
import tempfile
import unittest

import requests

from harness import ClusterTest, free_port, main, stop_proc, wait_until

PROM = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")


@unittest.skipUnless(PROM and PROMTOOL, "prometheus not installed (Debian package prometheus; ./configure "
                                        "--install-deps installs it)")
class Prometheus(ClusterTest):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.ptmp = tempfile.mkdtemp(prefix="shale-prom-")
        cls.pport = free_port()
        nodes = ["127.0.0.1:%d" % n["port"] for n in cls.c.topology()["nodes"]]
        conf = os.path.join(cls.ptmp, "prometheus.yml")
        with open(conf, "w") as f:
            f.write("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
                    "  - job_name: shale\n    static_configs:\n      - targets: [%s]\n"
                    % ", ".join("'%s'" % n for n in nodes))
        cls.prom = subprocess.Popen([PROM, "--config.file", conf, "--storage.tsdb.path", os.path.join(cls.ptmp, "db"),
                                     "--web.listen-address", "127.0.0.1:%d" % cls.pport],
                                    stdout=open(os.path.join(cls.ptmp, "prom.log"), "wb"), stderr=subprocess.STDOUT)
        cls.purl = "http://127.0.0.1:%d" % cls.pport

    @classmethod
    def tearDownClass(cls):
        stop_proc(cls.prom)
        shutil.rmtree(cls.ptmp, ignore_errors=True)
        super().tearDownClass()

    def query(self, q):
        r = requests.get(self.purl + "/api/v1/query", params={"query": q}, timeout=10)
        r.raise_for_status()
        return r.json()["data"]["result"]

    def scalar(self, q):
        res = self.query(q)
        return float(res[0]["value"][1]) if res else None

    def test_scrape_and_query(self):
        self.s.post(self.url + "/v1/buckets/pm", json={"action": "create-bck"}).raise_for_status()
        names = ["secret-name-%d" % i for i in range(40)]
        for n in names:
            self.s.put(self.url + "/v1/objects/pm/" + n, data=b"x" * 1000).raise_for_status()
        for n in names[:25]:
            self.assertEqual(self.s.get(self.url + "/v1/objects/pm/" + n).content, b"x" * 1000)
        self.assertEqual(self.s.get(self.url + "/v1/objects/pm/nosuch").status_code, 404)
        wait_until(lambda: self.scalar("count(up == 1)") == 4, 60, interval=0.5, what="all 4 nodes scraped")
        wait_until(lambda: (self.scalar("sum(ais_target_put_count)") or 0) >= 40, 30, interval=0.5,
                   what="PUTs counted")
        wait_until(lambda: (self.scalar("sum(ais_target_get_count)") or 0) >= 26, 30, interval=0.5, what="GETs")
        # (bytes are counted when an answer is sent in full, after its count: a scrape can fall in between)
        wait_until(lambda: (self.scalar("sum(ais_target_get_bytes)") or 0) >= 25 * 1000, 30, interval=0.5,
                   what="GET bytes")
        self.assertGreaterEqual(self.scalar("sum(ais_target_err_get_count)"), 1)
        self.assertGreaterEqual(self.scalar('sum(shale_requests_total{op="put"})'), 40)
        self.assertGreaterEqual(self.scalar('sum(shale_request_sent_bytes_total{op="get"})'), 25 * 1000)
        # a latency quantile from the histogram, in seconds
        q = self.scalar('histogram_quantile(0.9, sum by (le) (shale_request_duration_seconds_bucket{op="put"}))')
        self.assertIsNotNone(q)
        self.assertGreater(q, 0)
        self.assertLess(q, 30)
        self.assertGreater(self.scalar("min(shale_capacity_bytes)"), 0)
        self.assertGreater(self.scalar('min(ais_proxy_uptime)'), 0)
        # labels never carry object names
        series = requests.get(self.purl + "/api/v1/series", params={"match[]": '{job="shale"}'}, timeout=10).json()
        self.assertTrue(series["data"])
        self.assertNotIn("secret-name", str(series["data"]))

    def test_promtool(self):
        for n in self.c.topology()["nodes"]:
            body = requests.get("http://127.0.0.1:%d/metrics" % n["port"], timeout=10).text
            p = subprocess.run([PROMTOOL, "check", "metrics"], input=body, capture_output=True, text=True)
            out = (p.stdout + p.stderr).strip()
            self.assertNotIn("error while linting", out)
            bad = [ln for ln in out.splitlines() if ln and not ln.startswith("ais_")]
            self.assertEqual(bad, [], "only AIStore's own names may break Prometheus's naming rules")
            self.assertIn("shale_request_duration_seconds_bucket", body)


class Logs(ClusterTest):
    def test_log_show(self):
        tid = next(iter(self.c.smap()["tmap"]))
        out = self.c.cli("log", "show", "t[%s]" % tid).stdout
        self.assertIn("starting: role target, id %s" % tid, out)
        out = self.c.cli("log", "show").stdout
        self.assertIn("is the primary proxy", out)
        r = self.c.cli("log", "show", "t[nosuch]", check=False)
        self.assertNotEqual(r.returncode, 0)


if __name__ == "__main__":
    main()
