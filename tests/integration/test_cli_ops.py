# SPDX-License-Identifier: MIT
"""Operations verbs of the CLI against a gateway and 2 targets: `job ls` (ais's spelling of `job show`) and
`job show KIND` / `show job KIND` for any kind the server runs (resilver, scrub, lru were taken as job ids
and matched nothing); `advanced resilver`, `advanced check-lock ais://B/O` (the target answered 501); `advanced rotate-logs [NODE]` (PUT /v1/daemon
rotate-logs was refused); `scrub [ais://B] --wait` (no such verb)."""
import os
import signal
import subprocess
import time

from harness import ClusterTest, SHALE, main, start_cluster, wait_until


class TestCLIOps(ClusterTest):
    @classmethod
    def setUpClass(cls):
        # the nodes' S3 backend plugin signs with these keys; this cluster's own /s3 is the remote of a bucket
        # (signatures are not checked: s3 verify is off)
        start_cluster(cls, targets=3, env={"AWS_ACCESS_KEY_ID": "ops-test", "AWS_SECRET_ACCESS_KEY": "ops-secret",
                                           "AWS_PROFILE": "", "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent"})

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
        self.assertIn("No damaged objects found", p.stdout)
        p = self.shale("job", "ls", "scrub", "--all")
        self.assertRegex(p.stdout, r"(?m)\sscrub\s", p.stdout)
        p = self.shale("scrub", "--fixit")
        self.assertEqual(p.returncode, 1)
        self.assertIn("--fixit", p.stderr)

    def test_scrub_report_and_fix(self):
        """scrub is detect-only (a table OBJECT PROBLEM FIXED; the bytes on disk stay as they are); --fix repairs:
        a remote-backed object is fetched again, a plain bucket's is recorded as damaged (nothing to make it from)"""
        import glob
        self.assertEqual(self.s.post(self.url + "/v1/buckets/org2", json={"action": "create-bck"}).status_code, 200)
        self.assertEqual(self.s.post(self.url + "/v1/buckets/sp", json={"action": "create-bck"}).status_code, 200)
        good = b"z" * 4000
        for o in ("a", "b"):
            self.assertEqual(self.s.put(self.url + "/v1/objects/org2/" + o, data=good).status_code, 200)
            self.assertEqual(self.s.put(self.url + "/v1/objects/sp/" + o, data=good).status_code, 200)
        self.c.cli("bucket", "create", "ais://sb", "--props", "backend_bck=s3://org2 extra.aws.endpoint=%s/s3" % self.url)
        for o in ("a", "b"):
            self.assertEqual(self.s.get(self.url + "/v1/objects/sb/" + o, timeout=30).content, good)  # cached here

        def held(b, o):
            # (a cold GET's copy may be written after the answer: wait for it, bounded)
            pat = os.path.join(glob.escape(self.c.dir), "t*", "mp*", "@ais", b, "%ob", o)
            fs = wait_until(lambda: glob.glob(pat), 20, what="%s/%s on a target's disk" % (b, o))
            self.assertEqual(len(fs), 1, fs)
            return fs[0]

        for f in (held("sb", "a"), held("sp", "a")):
            with open(f, "r+b") as fh:
                fh.write(b"BAD!")  # the same size: only the checksum tells
        p = self.shale("scrub", "ais://sb", "ais://sp", "--wait")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"(?m)^OBJECT\s+PROBLEM\s+FIXED", p.stdout)
        self.assertRegex(p.stdout, r"(?m)^ais://sb/a\s+checksum mismatch .*\sno$", p.stdout)
        self.assertRegex(p.stdout, r"(?m)^ais://sp/a\s+checksum mismatch .*\sno$", p.stdout)
        self.assertNotIn("/b ", p.stdout)
        self.assertIn("2 damaged object(s); nothing was changed", p.stdout)
        for f in (held("sb", "a"), held("sp", "a")):
            with open(f, "rb") as fh:
                self.assertEqual(fh.read(4), b"BAD!", f)  # detect-only: left as it is
        p = self.shale("scrub", "ais://sb", "ais://sp", "--fix", "--wait")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertRegex(p.stdout, r"(?m)^ais://sb/a\s+checksum mismatch .*\syes$", p.stdout)
        self.assertRegex(p.stdout, r"(?m)^ais://sp/a\s+checksum mismatch .*\sno$", p.stdout)
        self.assertIn("2 damaged object(s), 1 fixed", p.stdout)
        with open(held("sb", "a"), "rb") as fh:
            self.assertEqual(fh.read(), good)  # fetched again from the remote
        self.assertEqual(self.s.get(self.url + "/v1/objects/sb/a", timeout=30).content, good)
        r = self.s.get(self.url + "/v1/objects/sp/a", timeout=30)
        self.assertNotEqual(r.status_code, 200)  # recorded as damaged: refused, not served
        p = self.shale("scrub", "ais://sb", "ais://sp", "--wait")
        self.assertRegex(p.stdout, r"(?m)^ais://sp/a\s+recorded as damaged", p.stdout)
        self.assertIn("1 damaged object(s)", p.stdout)

    def test_backend_disable_enable(self):
        """advanced disable-backend aws: requests to s3-backed buckets fail at once (503 naming the provider and
        how to enable it), objects held are still served; enable-backend restores; per target with NODE"""
        self.assertEqual(self.s.post(self.url + "/v1/buckets/org", json={"action": "create-bck"}).status_code, 200)
        for o in ("o1", "o2", "o3"):
            self.assertEqual(self.s.put(self.url + "/v1/objects/org/" + o, data=b"remote " + o.encode()).status_code,
                             200)
        self.c.cli("bucket", "create", "ais://bc", "--props", "backend_bck=s3://org extra.aws.endpoint=%s/s3" % self.url)
        get = lambda o: self.s.get(self.url + "/v1/objects/bc/" + o, timeout=30)  # noqa: E731
        r = get("o1")
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.content, b"remote o1")
        p = self.shale("advanced", "disable-backend", "aws")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("Backend aws disabled on every target", p.stdout)
        t0 = time.monotonic()
        r = get("o2")
        self.assertLess(time.monotonic() - t0, 5)
        self.assertEqual(r.status_code, 503, r.text)
        self.assertIn('s3://org: backend "aws" is disabled on target t[', r.json()["message"])
        self.assertIn("shale advanced enable-backend aws", r.json()["message"])
        self.assertEqual(get("o1").content, b"remote o1")  # held here: no remote call
        p = self.shale("advanced", "disable-backend", "s3")
        self.assertEqual(p.returncode, 1)
        self.assertIn('backend \"aws\" is already disabled', p.stderr)
        p = self.shale("advanced", "enable-backend", "s3://")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        r = get("o2")
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.content, b"remote o2")
        # one target: only its share of the bucket fails
        tid = sorted(self.c.smap()["tmap"])[0]
        p = self.shale("advanced", "disable-backend", "aws", "t[%s]" % tid)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("Backend aws disabled on target %s" % tid, p.stdout)
        p = self.shale("advanced", "enable-backend", "aws", "t[%s]" % tid)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(get("o3").content, b"remote o3")
        # bad arguments: nothing changes
        for argv, msg in ((("advanced", "disable-backend"), "usage: shale advanced disable-backend"),
                          (("advanced", "disable-backend", "ais"), "can only disable cloud backend"),
                          (("advanced", "disable-backend", "nosuch"), "can only disable cloud backend"),
                          (("advanced", "disable-backend", "gcp"), 'backend \"gcp\" is not configured'),
                          (("advanced", "enable-backend", "aws"), 'backend \"aws\" is already enabled'),
                          (("advanced", "disable-backend", "aws", "t[nosuch]"), 'target \"nosuch\" is not in the')):
            p = self.shale(*argv)
            self.assertEqual(p.returncode, 1, argv)
            self.assertIn(msg, p.stderr, argv)
        self.assertEqual(self.s.put(self.url + "/v1/cluster/disable-bend", timeout=10).status_code, 400)

    def test_zz_remove_from_smap(self):
        """(last: it takes a target out and brings it back) rm-unsafe removes the node at once, it keeps running
        and stays out (the keepalive polls only the map's nodes), and joins again when restarted, as AIStore's"""
        smap = self.c.smap()
        primary = smap["proxy_si"]["daemon_id"]
        victim = sorted(smap["tmap"])[0]
        name = self.c.target_name(victim)
        pid = self.c.pid(name)
        p = self.shale("advanced", "remove-from-smap")
        self.assertEqual(p.returncode, 1)
        self.assertIn("usage: shale advanced remove-from-smap", p.stderr)
        p = self.shale("advanced", "remove-from-smap", "t[nosuch]")
        self.assertEqual(p.returncode, 1)
        self.assertIn("node \"nosuch\" is not in the cluster map", p.stderr)
        p = self.shale("advanced", "remove-from-smap", "p[%s]" % primary)
        self.assertEqual(p.returncode, 1)
        self.assertIn("is the primary proxy and cannot remove itself", p.stderr)
        self.assertEqual(len(self.c.smap()["tmap"]), 3)
        v0 = self.c.smap()["version"]
        p = self.shale("advanced", "remove-from-smap", "t[%s]" % victim)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("Node %s removed from the cluster map" % victim, p.stdout)
        sm = self.c.smap()
        self.assertNotIn(victim, sm["tmap"])
        self.assertGreater(sm["version"], v0)
        # two keepalive rounds (2s in a playground): it stays out, and it is still running
        time.sleep(4.5)
        self.assertNotIn(victim, self.c.smap()["tmap"])
        self.assertTrue(os.path.exists("/proc/%d" % pid), "the removed target shut down")
        self.assertIn("rm-unsafe", self.c.log(name))
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            argv = [a.decode() for a in f.read().split(b"\0") if a]
        exe = os.readlink("/proc/%d/exe" % pid)
        # re-join: restart it (same config, id and data)
        os.kill(pid, signal.SIGTERM)
        wait_until(lambda: not os.path.exists("/proc/%d" % pid) or open("/proc/%d/stat" % pid).read().split()[2]
                   == "Z", 20, what="the removed target stopped")
        with open(os.path.join(self.c.dir, name, "log", "stdout.log"), "ab") as out:
            np = subprocess.Popen(argv, executable=exe, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                  start_new_session=True, env=dict(os.environ, **self.c.env))
        with open(os.path.join(self.c.dir, name, "shaled.pid"), "w") as f:
            f.write("%d\n" % np.pid)
        wait_until(lambda: victim in self.c.smap()["tmap"], 30, what="the target joined again")


if __name__ == "__main__":
    main()
