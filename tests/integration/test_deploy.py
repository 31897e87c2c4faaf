#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""deploy/: the systemd units pass `systemd-analyze verify` (their ExecStart pointed at this build's shaled, as
`make install` would put it in /usr/local/bin), a broken copy does not (so the check checks), and the sample
configs pass `shaled --check-config` for both roles."""
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from harness import SHALED, main

SRC = os.environ.get("SHALE_SRC", os.path.join(os.path.dirname(__file__), "..", ".."))
DEPLOY = os.path.join(SRC, "deploy")
ANALYZE = shutil.which("systemd-analyze")


class Deploy(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="shale-deploy-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def unit(self, name, as_name=None, edit=None):
        with open(os.path.join(DEPLOY, name)) as f:
            text = f.read().replace("/usr/local/bin/shaled", SHALED)
        if edit:
            text = edit(text)
        p = os.path.join(self.tmp, as_name or name)
        with open(p, "w") as f:
            f.write(text)
        return p

    @unittest.skipUnless(ANALYZE, "systemd-analyze not installed (Debian package systemd)")
    def test_units_verify(self):
        units = [self.unit("shale-proxy.service"), self.unit("shale-target@.service", "shale-target@t1.service")]
        p = subprocess.run([ANALYZE, "verify"] + units, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertNotIn("shale", (p.stdout + p.stderr).lower().replace(self.tmp.lower(), ""))
        for u in units:
            with open(u) as f:
                text = f.read()
            self.assertRegex(text, r"ExecReload=/bin/kill -HUP \$MAINPID")
            self.assertIn("NoNewPrivileges=yes", text)
            self.assertIn("User=shale", text)
        bad = self.unit("shale-proxy.service", "bad.service", lambda t: t.replace("ExecStart=", "ExecStart=nosuch"))
        p = subprocess.run([ANALYZE, "verify", bad], capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)

    def test_sample_configs(self):
        # the samples name /etc/shale/tls/{node.crt,node.key,ca.crt}: --check-config reads them as the start
        # would, so here they are made and the paths pointed at them; without them it says which is missing
        crt, key = os.path.join(self.tmp, "node.crt"), os.path.join(self.tmp, "node.key")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-days", "1",
                        "-subj", "/CN=10.0.0.1", "-out", crt], check=True, capture_output=True)
        tls = ["--set", "net.http.server_crt=" + crt, "--set", "net.http.server_key=" + key,
               "--set", "net.http.client_ca_tls=" + crt]
        for role, local in (("proxy", "proxy.json"), ("target", "target-t1.json")):
            base = [SHALED, "--check-config", "--config", os.path.join(DEPLOY, "shale.json"),
                    "--local-config", os.path.join(DEPLOY, local), "--role", role]
            p = subprocess.run(base + tls, capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertIn("configuration OK", p.stdout)
            if not os.path.exists("/etc/shale/tls/node.crt"):
                p = subprocess.run(base, capture_output=True, text=True, timeout=30)
                self.assertEqual(p.returncode, 2, p.stdout)
                self.assertIn("/etc/shale/tls/node.crt (net.http.server_crt)", p.stderr)
        # the units name the files the samples are
        with open(os.path.join(DEPLOY, "shale-target@.service")) as f:
            self.assertIn("/etc/shale/target-%i.json", f.read())
        with open(os.path.join(DEPLOY, "prometheus.yml")) as f:
            self.assertTrue(re.search(r"job_name: shale", f.read()))


if __name__ == "__main__":
    main()
