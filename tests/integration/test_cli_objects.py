# SPDX-License-Identifier: MIT
"""ais-compatible object and bucket verbs of the CLI, against a gateway and 2 targets: `bucket rm` asks
before destroying (-y/--yes skips; without a terminal and -y it refuses, naming -y: it refused -y as an
unknown flag); `object cat` writes an object (or a byte range of it) to stdout; `object set-custom` adds or
replaces custom metadata, and `object show --props all` prints every custom key (it printed the first only)."""
import os
import subprocess

from harness import ClusterTest, SHALE, main


class TestCLIObjects(ClusterTest):
    def shale(self, *args):
        e = dict(os.environ, AIS_ENDPOINT=self.url)
        return subprocess.run([SHALE] + list(args), capture_output=True, text=True, env=e, timeout=60,
                              stdin=subprocess.DEVNULL)

    def mkb(self, b):
        self.assertEqual(self.s.post(self.url + "/v1/buckets/" + b, json={"action": "create-bck"}).status_code, 200)

    def test_bucket_rm_yes(self):
        self.mkb("rm1")
        p = self.shale("bucket", "rm", "ais://rm1")
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("add -y", p.stderr)
        self.assertEqual(self.s.head(self.url + "/v1/buckets/rm1").status_code, 200)
        p = self.shale("bucket", "rm", "ais://rm1", "-y")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), '"ais://rm1" destroyed')
        self.assertEqual(self.s.head(self.url + "/v1/buckets/rm1").status_code, 404)
        p = self.shale("rmb", "ais://rm1", "--yes", "--ignore-error")
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.shale("rmb", "ais://rm1", "--yes")
        self.assertNotEqual(p.returncode, 0)

    def test_ls_default_columns(self):
        self.mkb("ls1")
        self.assertEqual(self.s.put(self.url + "/v1/objects/ls1/a.bin", data=b"x" * 1234).status_code, 200)
        p = self.shale("ls", "ais://ls1")
        self.assertEqual(p.returncode, 0, p.stderr)
        lines = p.stdout.splitlines()
        self.assertRegex(lines[0], r"^NAME\s+SIZE\s*$")
        self.assertRegex(lines[1], r"^a\.bin\s+1\.21KiB\s*$")

    def test_object_cat(self):
        self.mkb("cat1")
        self.assertEqual(self.s.put(self.url + "/v1/objects/cat1/d/a.txt", data=b"0123456789").status_code, 200)
        p = self.shale("object", "cat", "ais://cat1/d/a.txt")
        self.assertEqual((p.returncode, p.stdout), (0, "0123456789"), p.stderr)
        p = self.shale("object", "cat", "ais://cat1/d/a.txt", "--offset", "3", "--length", "4")
        self.assertEqual((p.returncode, p.stdout), (0, "3456"), p.stderr)
        p = self.shale("object", "cat", "ais://cat1/d/")
        self.assertEqual(p.returncode, 1)
        self.assertIn("ais://BUCKET/OBJECT", p.stderr)
        p = self.shale("object", "cat", "ais://cat1/d/a.txt", "--num-workers", "3")
        self.assertEqual(p.returncode, 1)
        self.assertIn("--num-workers", p.stderr)
        p = self.shale("object", "cat", "ais://cat1/nope")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stdout, "")

    def test_set_custom_and_show(self):
        self.mkb("cm1")
        self.assertEqual(self.s.put(self.url + "/v1/objects/cm1/o", data=b"x").status_code, 200)
        p = self.shale("object", "set-custom", "ais://cm1/o", "label=cat", "src=web")
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.shale("object", "show", "ais://cm1/o", "--props", "all")
        self.assertEqual(p.returncode, 0, p.stderr)
        line = [l for l in p.stdout.splitlines() if l.startswith("custom")][0]
        self.assertIn("label=cat", line)
        self.assertIn("src=web", line)
        p = self.shale("object", "set-custom", "ais://cm1/o", "label=dog", "--replace")
        self.assertEqual(p.returncode, 0, p.stderr)
        line = [l for l in self.shale("object", "show", "ais://cm1/o", "--props", "all").stdout.splitlines()
                if l.startswith("custom")][0]
        self.assertIn("label=dog", line)
        self.assertNotIn("src=web", line)
        p = self.shale("object", "set-custom", "ais://cm1/o", "novalue")
        self.assertEqual(p.returncode, 1)
        self.assertIn("KEY=VALUE", p.stderr)
        p = self.shale("object", "set-custom", "ais://cm1/o")
        self.assertNotEqual(p.returncode, 0)


if __name__ == "__main__":
    main()
