#!/usr/bin/env python3
"""`shale auth whoami` against a cluster started with auth on: the playground's admin token is an admin's,
a user logged in with `shale auth login` is that user (not an admin) with an expiry, and no token / a token
that is not a JWT is an error naming what to do (exit 1)."""
import os
import shutil
import tempfile
import unittest

import requests

from harness import Cluster, main


class CLIAuth(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shale-cliauth-")
        cls.c = Cluster(cls.tmp, proxies=1, targets=1).start("--auth")

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_whoami(self):
        p = self.c.cli("auth", "whoami")
        self.assertIn("ADMIN\tyes", p.stdout)
        self.assertIn("EXPIRES\t", p.stdout)
        self.c.cli("auth", "add", "user", "bob", "--password", "b0bpass")
        tf = os.path.join(self.tmp, "bob.token")
        self.c.cli("auth", "login", "bob", "--password", "b0bpass", "--file", tf)
        old = self.c.env.get("AIS_AUTHN_TOKEN_FILE")
        try:
            self.c.env["AIS_AUTHN_TOKEN_FILE"] = tf
            p = self.c.cli("auth", "whoami")
            self.assertIn("USER\tbob\n", p.stdout)
            self.assertIn("ADMIN\tno", p.stdout)
            p = self.c.cli("auth", "whoami", "--json")
            self.assertIn('"sub": "bob"', p.stdout)
            self.c.env["AIS_AUTHN_TOKEN_FILE"] = os.path.join(self.tmp, "none.token")
            p = self.c.cli("auth", "whoami", check=False)
            self.assertEqual(p.returncode, 1)
            self.assertIn("shale auth login", p.stderr)
            self.c.env["AIS_AUTHN_TOKEN"] = "garbage"
            p = self.c.cli("auth", "whoami", check=False)
            self.assertEqual(p.returncode, 1)
            self.assertIn("not a JWT", p.stderr)
        finally:
            self.c.env.pop("AIS_AUTHN_TOKEN", None)
            self.c.env["AIS_AUTHN_TOKEN_FILE"] = old

    def test_clusters(self):
        """auth add|show|rm cluster: the cluster registered with its id read from its URL, under an alias"""
        uuid = requests.get(self.c.url + "/v1/daemon", params={"what": "smap"},
                            headers=self.c.admin_headers()).json()["uuid"]
        p = self.c.cli("auth", "add", "cluster", "main", self.c.url)
        self.assertIn(uuid, p.stdout)
        p = self.c.cli("auth", "show", "cluster")
        self.assertIn("%s\tmain\t%s" % (uuid, self.c.url), p.stdout)
        p = self.c.cli("auth", "show", "cluster", "main", "--json")
        self.assertIn(uuid, p.stdout)
        p = self.c.cli("auth", "add", "cluster", "again", self.c.url, check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("already registered", p.stderr)
        p = self.c.cli("auth", "add", "cluster", "x", "ftp://h", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("not a cluster URL", p.stderr)
        self.c.cli("auth", "rm", "cluster", "main")
        self.assertNotIn(uuid, self.c.cli("auth", "show", "cluster").stdout)


class FirstAdmin(unittest.TestCase):
    """AIS_AUTHN_SU_NAME / AIS_AUTHN_SU_PASS in the nodes' environment make the first admin (no user added by
    hand); a restart with other values changes and adds nothing"""

    def test_first_admin_from_env(self):
        tmp = tempfile.mkdtemp(prefix="shale-suadmin-")
        c = Cluster(tmp, proxies=1, targets=1)
        c.env.update(AIS_AUTHN_SU_NAME="root", AIS_AUTHN_SU_PASS="r00tpass")
        tf = os.path.join(tmp, "root.token")
        c.env["AIS_AUTHN_TOKEN_FILE"] = tf
        try:
            c.start()
            c.cli("auth", "login", "root", "--password", "r00tpass")
            self.assertIn("ADMIN\tyes", c.cli("auth", "whoami").stdout)
            c.cli("config", "cluster", "auth.client_auth_required=true")  # the env's admin may turn auth on
            self.assertEqual(requests.get(c.url + "/v1/buckets", timeout=10).status_code, 401)
            c.cli("playground", "stop", "--dir", c.dir)
            c.env.update(AIS_AUTHN_SU_NAME="other", AIS_AUTHN_SU_PASS="otherpass")
            os.unlink(tf)
            c.start()
            p = c.cli("auth", "login", "other", "--password", "otherpass", check=False)
            self.assertNotEqual(p.returncode, 0, p.stdout)
            p = c.cli("auth", "login", "root", "--password", "otherpass", check=False)
            self.assertNotEqual(p.returncode, 0, p.stdout)
            c.cli("auth", "login", "root", "--password", "r00tpass")
            self.assertEqual(requests.get(c.url + "/v1/buckets", timeout=10).status_code, 401)
            self.assertNotIn("other", c.cli("auth", "show", "user").stdout)
        finally:
            c.stop()
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
