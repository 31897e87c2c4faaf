# SPDX-License-Identifier: MIT
"""The CLI's own settings and aliases (ais's `config cli` and `alias`) against a gateway and a target: a saved
endpoint is used when AIS_ENDPOINT is unset (and AIS_ENDPOINT wins over it); an alias runs its command with the
words given after it; an alias may not hide a command nor name one that does not exist; a broken settings
file is reported with its path, never ignored; `object mpu` drives a multipart upload."""
import os
import subprocess
import tempfile

from harness import ClusterTest, SHALE, main


class TestCLIConf(ClusterTest):

    def setUp(self):
        self.home = tempfile.mkdtemp(prefix="shale-cliconf-")

    def shale(self, *args, endpoint=None):
        e = {k: v for k, v in os.environ.items() if k not in ("AIS_ENDPOINT", "SHALE_CLI_CONFIG")}
        e.update(HOME=self.home, XDG_CONFIG_HOME=os.path.join(self.home, "xdg"))
        if endpoint:
            e["AIS_ENDPOINT"] = endpoint
        return subprocess.run([SHALE] + list(args), capture_output=True, text=True, env=e, timeout=60)

    def test_endpoint_setting(self):
        self.assertEqual(self.s.post(self.url + "/v1/buckets/cfgb", json={"action": "create-bck"}).status_code, 200)
        p = self.shale("ls")  # the default, localhost:8080, is not this cluster
        self.assertNotIn("cfgb", p.stdout)
        p = self.shale("config", "cli", "set", "endpoint=" + self.url)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.shale("ls")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("cfgb", p.stdout)
        p = self.shale("config", "cli", "show")
        self.assertIn(self.url, p.stdout)
        self.assertIn(os.path.join(self.home, "xdg", "shale", "cli.json"), p.stdout)
        self.assertEqual(os.stat(os.path.join(self.home, "xdg", "shale", "cli.json")).st_mode & 0o777, 0o600)
        # AIS_ENDPOINT wins over the file
        p = self.shale("ls", endpoint="http://127.0.0.1:1")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("127.0.0.1:1", p.stderr)
        for bad, word in (("endpoint=ftp://x", "http"), ("colour=red", "colour"), ("endpoint", "KEY=VALUE")):
            p = self.shale("config", "cli", "set", bad)
            self.assertEqual(p.returncode, 1, bad)
            self.assertIn(word, p.stderr)
        p = self.shale("config", "cli", "reset")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("cfgb", self.shale("ls").stdout)
        # a broken file is an error naming it
        os.makedirs(os.path.join(self.home, "xdg", "shale"), exist_ok=True)
        with open(os.path.join(self.home, "xdg", "shale", "cli.json"), "w") as f:
            f.write("{not json")
        p = self.shale("config", "cli", "show")
        self.assertEqual(p.returncode, 1)
        self.assertIn("cli.json", p.stderr)
        self.assertIn("config cli reset", p.stderr)

    def test_alias(self):
        self.assertEqual(self.s.post(self.url + "/v1/buckets/alb", json={"action": "create-bck"}).status_code, 200)
        self.assertEqual(self.s.put(self.url + "/v1/objects/alb/x/one", data=b"1").status_code, 200)
        self.assertEqual(self.s.put(self.url + "/v1/objects/alb/y/two", data=b"22").status_code, 200)
        p = self.shale("alias", "set", "lsa", "ls", "ais://alb", "--props", "name,size")
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.shale("lsa", "--prefix", "y/", endpoint=self.url)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("y/two", p.stdout)
        self.assertNotIn("x/one", p.stdout)
        p = self.shale("alias", "ls")
        self.assertIn("lsa", p.stdout)
        self.assertIn("ls ais://alb --props name,size", p.stdout)
        p = self.shale("alias", "set", "ls", "bucket", "ls")
        self.assertEqual(p.returncode, 1)
        self.assertIn("is a shale command", p.stderr)
        p = self.shale("alias", "set", "zz", "nosuch")
        self.assertEqual(p.returncode, 1)
        self.assertIn('"nosuch" is not a shale command', p.stderr)
        p = self.shale("alias", "set", "bad/name", "ls")
        self.assertEqual(p.returncode, 1)
        self.assertIn("alias name", p.stderr)
        p = self.shale("alias", "rm", "nosuch")
        self.assertEqual(p.returncode, 1)
        self.assertIn('no alias "nosuch"', p.stderr)
        self.assertEqual(self.shale("alias", "rm", "lsa").returncode, 0)
        p = self.shale("lsa", endpoint=self.url)
        self.assertEqual(p.returncode, 1)
        self.assertIn('unknown command "lsa"', p.stderr)


    def test_mpu(self):
        """object mpu create|put-part|complete|abort: parts sent out of order make the object in
        part order; bad part numbers, ids and lists are refused naming them; abort leaves nothing"""
        self.assertEqual(self.s.post(self.url + "/v1/buckets/mpub", json={"action": "create-bck"}).status_code, 200)
        p = self.shale("object", "mpu", "create", "ais://mpub/big.bin", endpoint=self.url)
        self.assertEqual(p.returncode, 0, p.stderr)
        uid = p.stdout.strip()
        self.assertTrue(uid and "\n" not in uid, p.stdout)
        parts = [os.urandom(70000), os.urandom(70000), os.urandom(1234)]
        files = []
        for i, d in enumerate(parts):
            f = os.path.join(self.home, "part%d" % (i + 1))
            with open(f, "wb") as fh:
                fh.write(d)
            files.append(f)
        for i in (2, 0):
            p = self.shale("object", "mpu", "put-part", "ais://mpub/big.bin", uid, str(i + 1), files[i],
                           endpoint=self.url)
            self.assertEqual(p.returncode, 0, p.stderr)
        p = self.shale("object", "mpu", "put", "ais://mpub/big.bin", uid, "2", files[1], endpoint=self.url)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.s.get(self.url + "/v1/objects/mpub/big.bin").status_code, 404)  # not yet
        for args, word in ((["put-part", "ais://mpub/big.bin", uid, "0", files[0]], "part number"),
                           (["put-part", "ais://mpub/big.bin", "bad/id", "1", files[0]], "upload id"),
                           (["complete", "ais://mpub/big.bin", uid, "1,1"], "parts"),
                           (["complete", "ais://mpub/", uid, "1"], "name one object"),
                           (["put-part", "ais://mpub/big.bin", uid, "1", "-"], "name a file")):
            p = self.shale("object", "mpu", *args, endpoint=self.url)
            self.assertEqual(p.returncode, 1, args)
            self.assertIn(word, p.stderr, args)
        p = self.shale("object", "mpu", "complete", "ais://mpub/big.bin", uid, "1-3", endpoint=self.url)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.s.get(self.url + "/v1/objects/mpub/big.bin").content, b"".join(parts))
        uid2 = self.shale("object", "mpu", "create", "ais://mpub/gone.bin", endpoint=self.url).stdout.strip()
        self.assertEqual(self.shale("object", "mpu", "put-part", "ais://mpub/gone.bin", uid2, "1", files[2],
                                    endpoint=self.url).returncode, 0)
        p = self.shale("object", "mpu", "abort", "ais://mpub/gone.bin", uid2, endpoint=self.url)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.shale("object", "mpu", "complete", "ais://mpub/gone.bin", uid2, "1", endpoint=self.url)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(self.s.get(self.url + "/v1/objects/mpub/gone.bin").status_code, 404)


if __name__ == "__main__":
    main()
