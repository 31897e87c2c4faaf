# SPDX-License-Identifier: MIT
"""Operations verbs of the CLI against a gateway and 2 targets: `job ls` (ais's spelling of `job show`) and
`job show KIND` / `show job KIND` for any kind the server runs (resilver, scrub, lru were taken as job ids
and matched nothing); `advanced resilver`, `advanced check-lock ais://B/O` (the target answered 501); `advanced rotate-logs [NODE]` (PUT /v1/daemon
rotate-logs was refused); `scrub [ais://B] --wait` (no such verb)."""
import os
import subprocess

from harness import ClusterTest, SHALE, main


class TestCLIOps(ClusterTest):
    def shale(self, *args, env=None):
        e = dict(os.environ, AIS_ENDPOINT=self.url)
        e.update(env or {})
        return subprocess.run([SHALE] + list(args), capture_output=True, text=True, env=e, timeout=120)

    def test_job_ls_and_kinds(self):
        p = self.shale("job", "ls", "--help")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("--all", p.stdout)
        p = self.shale("job", "start", "resilver", "--wait")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        for argv in (("job", "ls", "resilver", "--all"), ("job", "show", "resilver", "--all"),
                     ("show", "job", "resilver", "--all")):
            p = self.shale(*argv)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertRegex(p.stdout, r"(?m)^NODE\s+ID\s+KIND", (argv, p.stdout))
            self.assertRegex(p.stdout, r"(?m)\sresilver\s", (argv, p.stdout))
        p = self.shale("job", "ls", "scrub", "--all")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertNotIn("resilver", p.stdout)
        p = self.shale("job", "ls", "--all")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("resilver", p.stdout)

    def test_advanced(self):
        p = self.shale("advanced", "resilver", "--wait")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"Job resilver\[\S+\] finished", p.stdout)
        p = self.shale("advanced", "resilver", "--wait", "--progress")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stderr, r"resilver\[\S+\]\s+\S+ objects", p.stderr)
        self.assertEqual(self.s.post(self.url + "/v1/buckets/lk", json={"action": "create-bck"}).status_code, 200)
        self.assertEqual(self.s.put(self.url + "/v1/objects/lk/a.bin", data=b"x" * 100).status_code, 200)
        p = self.shale("advanced", "check-lock", "ais://lk/a.bin")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("ais://lk/a.bin is not locked", p.stdout)
        p = self.shale("advanced", "check-lock", "ais://lk")
        self.assertEqual(p.returncode, 1)
        self.assertIn("name an object", p.stderr)
        p = self.shale("advanced", "check-lock")
        self.assertEqual(p.returncode, 1)
        self.assertIn("usage: shale advanced check-lock", p.stderr)

    def test_rotate_logs(self):
        nodes = [n["name"] for n in self.c.topology()["nodes"]]
        p = self.shale("advanced", "rotate-logs")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout.count("rotated"), len(nodes), p.stdout)
        for n in nodes:
            self.assertTrue(os.path.exists(os.path.join(self.c.dir, n, "log", "shaled.log.1")), n)
            self.assertTrue(os.path.exists(os.path.join(self.c.dir, n, "log", "shaled.log")), n)
        p = self.shale("advanced", "rotate-logs", "t[nosuch]")
        self.assertEqual(p.returncode, 1)
        self.assertIn("rotate-logs: node \"nosuch\" is not in the cluster map", p.stderr)

    def test_scrub(self):
        self.assertEqual(self.s.post(self.url + "/v1/buckets/sc", json={"action": "create-bck"}).status_code, 200)
        for i in range(5):
            self.assertEqual(self.s.put(self.url + "/v1/objects/sc/o%d" % i, data=b"y" * 1000).status_code, 200)
        p = self.shale("scrub", "ais://sc", "--wait")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"Job scrub\[\S+\] finished", p.stdout)
        p = self.shale("job", "ls", "scrub", "--all")
        self.assertRegex(p.stdout, r"(?m)\sscrub\s", p.stdout)
        p = self.shale("scrub", "--fix")
        self.assertEqual(p.returncode, 1)
        self.assertIn("--fix", p.stderr)


if __name__ == "__main__":
    main()
