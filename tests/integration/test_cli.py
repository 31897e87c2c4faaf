# SPDX-License-Identifier: MIT
"""The shale CLI against a real playground node: output formats of
../shared/spec/cli.md, exit codes, stdin/stdout streaming, playground
start/stop/restart by PID."""
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
import unittest

import requests

from harness import SHALE, free_port_range, main


class TestCLI(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shale-cli-")
        cls.pg = os.path.join(cls.tmp, "pg")
        cls.port = free_port_range(4)
        cls.url = "http://127.0.0.1:%d" % cls.port
        p = cls.run_cli("playground", "start", "--dir", cls.pg, "--port", str(cls.port))
        assert p.returncode == 0, p.stderr
        assert "Endpoint: %s" % cls.url in p.stdout, p.stdout

    @classmethod
    def tearDownClass(cls):
        cls.run_cli("playground", "stop", "--dir", cls.pg)
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def run_cli(cls, *args, input=None, env=None, binary=False):
        e = dict(os.environ, AIS_ENDPOINT=cls.url)
        if env:
            e.update(env)
        return subprocess.run([SHALE] + list(args), capture_output=True, env=e, timeout=120, input=input,
                              text=not binary)

    def cli(self, *args, **kw):
        p = self.run_cli(*args, **kw)
        self.assertEqual(p.returncode, 0, "shale %s: %s %s" % (" ".join(args), p.stdout, p.stderr))
        return p

    def test_bucket_verbs(self):
        p = self.cli("bucket", "create", "ais://cb1")
        self.assertEqual(p.stdout.strip(), '"ais://cb1" bucket created')
        p = self.run_cli("bucket", "create", "ais://cb1")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('bucket "ais://cb1" already exists', p.stderr)
        p = self.cli("ls")
        self.assertRegex(p.stdout, r"NAME\s+PRESENT")
        self.assertIn("ais://cb1", p.stdout)
        p = self.cli("bucket", "props", "set", "ais://cb1", "checksum.type=md5")
        self.assertEqual(p.stdout.splitlines(), ["Bucket props successfully updated",
                                                 '"checksum.type" set to: "md5" (was: "xxhash2")'])
        p = self.cli("bucket", "props", "set", "ais://cb1", "checksum.type=sha256", "checksum.validate_warm_get=true")
        self.assertEqual(p.stdout.splitlines()[1:], ['"checksum.type" set to: "sha256" (was: "md5")',
                                                     '"checksum.validate_warm_get" set to: "true" (was: "false")'])
        self.cli("bucket", "props", "set", "ais://cb1", "checksum.type=md5")
        p = self.cli("bucket", "props", "show", "ais://cb1")
        self.assertRegex(p.stdout, r"checksum.type\s+md5")
        p = self.cli("bucket", "rm", "ais://cb1")
        self.assertEqual(p.stdout.strip(), '"ais://cb1" destroyed')
        p = self.run_cli("bucket", "rm", "ais://cb1")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('bucket "ais://cb1" does not exist', p.stderr)
        p = self.run_cli("bucket", "create", "ais://bad..name")
        self.assertNotEqual(p.returncode, 0)

    def test_put_get_file_and_stdio(self):
        self.cli("bucket", "create", "ais://cb2")
        f = os.path.join(self.tmp, "README.md")
        with open(f, "wb") as fh:
            fh.write(b"hello readme\n" * 1000)
        p = self.cli("put", f, "ais://cb2/docs/")
        self.assertEqual(p.stdout.strip(), 'PUT "%s" => ais://cb2/docs/README.md' % f)
        p = self.cli("put", f, "ais://cb2/exact-name")
        self.assertIn("=> ais://cb2/exact-name", p.stdout)
        out = os.path.join(self.tmp, "out.md")
        p = self.cli("get", "ais://cb2/docs/README.md", out)
        self.assertRegex(p.stdout, r'^GET "docs/README.md" from bucket "ais://cb2" as "%s" \[12.70KiB\]' % re.escape(out))
        with open(out, "rb") as a, open(f, "rb") as b:
            self.assertEqual(a.read(), b.read())
        # stdout carries only the bytes
        p = self.cli("get", "ais://cb2/docs/README.md", "-", binary=True)
        self.assertEqual(p.stdout, b"hello readme\n" * 1000)
        # stdin upload of unknown length
        data = os.urandom(200000)
        self.cli("put", "-", "ais://cb2/from-stdin", input=data, binary=True)
        p = self.cli("get", "ais://cb2/from-stdin", "-", binary=True)
        self.assertEqual(p.stdout, data)
        # range
        p = self.cli("get", "ais://cb2/from-stdin", "-", "--offset", "10", "--length", "5", binary=True)
        self.assertEqual(p.stdout, data[10:15])
        # errors: non-zero exit, message on stderr, no output file left
        p = self.run_cli("get", "ais://cb2/nope", os.path.join(self.tmp, "nope"))
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("ais://cb2/nope does not exist", p.stderr)
        self.assertFalse(os.path.exists(os.path.join(self.tmp, "nope")))
        # a consumer that closes the pipe early is not a failure
        sh = subprocess.run("%s get ais://cb2/from-stdin - | head -c 10 >/dev/null; echo ${PIPESTATUS[0]}" % SHALE,
                            shell=True, executable="/bin/bash", capture_output=True, text=True,
                            env=dict(os.environ, AIS_ENDPOINT=self.url))
        self.assertIn(sh.stdout.strip(), ("0", "141"))
        self.assertNotIn("Error", sh.stderr)

    def test_put_dir_ls_show_rmo(self):
        self.cli("bucket", "create", "ais://cb3")
        src = os.path.join(self.tmp, "tree")
        for d in ("a", "a/b", "c"):
            os.makedirs(os.path.join(src, d), exist_ok=True)
        files = {"a/1.jpg": 100, "a/2.jpg": 2000, "a/b/3.cls": 3, "c/4.json": 40, "top.txt": 5}
        for n, sz in files.items():
            with open(os.path.join(src, n), "wb") as f:
                f.write(b"x" * sz)
        # into a bucket that does not exist: one error that says what to do, nothing uploaded
        p = self.run_cli("put", src, "ais://cb3-missing/ds/", "-r", "-y")
        self.assertNotEqual(p.returncode, 0)
        self.assertEqual(p.stderr.count("Error:"), 1, p.stderr)
        self.assertIn('bucket "ais://cb3-missing" does not exist (create it with: shale bucket create', p.stderr)
        p = self.cli("put", src, "ais://cb3/ds/", "-r", "--progress", "-y")
        self.assertRegex(p.stdout, r"EXTENSION\s+COUNT\s+SIZE")
        self.assertRegex(p.stdout, r"\.jpg\s+2\s+2.05KiB")
        self.assertRegex(p.stdout, r"TOTAL\s+5\s+")
        self.assertIn("PUT 5 objects", p.stdout)
        self.assertIn("Objects:", p.stderr)
        p = self.cli("ls", "ais://cb3")
        self.assertRegex(p.stdout, r"NAME\s+SIZE")
        for n in files:
            self.assertIn("ds/" + n, p.stdout)
        self.assertRegex(p.stdout, r"ds/a/2\.jpg\s+1\.95KiB")
        self.assertRegex(p.stdout, r"ds/top\.txt\s+5B")
        self.assertIn("Listed 5 names", p.stdout)
        p = self.cli("ls", "ais://cb3/ds/a/")
        self.assertIn("Listed 3 names", p.stdout)
        p = self.cli("ls", "ais://cb3", "--limit", "2")
        self.assertIn("Listed 2 names", p.stdout)
        p = self.cli("ls", "ais://cb3", "--paged", "--page-size", "2")
        self.assertIn("Page 1: 2 names", p.stdout)
        self.assertIn("Page 3: 1 names", p.stdout)
        p = self.cli("ls", "ais://cb3", "--props", "all")
        lines = p.stdout.splitlines()
        self.assertEqual(lines[0].split(), "NAME SIZE CHECKSUM ATIME VERSION CACHED TARGET URL STATUS COPIES".split())
        row = [ln for ln in lines if ln.startswith("ds/a/2.jpg ")][0]
        self.assertRegex(row, r"^ds/a/2\.jpg\s+1\.95KiB\s+[0-9a-f]{16}\s+.+\s+1\s+yes\s+t\[\w+\]:/\S+\s+ok\s+1$")
        p = self.cli("ls", "ais://cb3", "--props", "name,size,custom")
        self.assertEqual(p.stdout.splitlines()[0].split(), ["NAME", "SIZE", "CUSTOM"])
        p = self.cli("ls", "ais://cb3", "-H", "--name-only")
        self.assertEqual(p.stdout.split(), sorted("ds/" + n for n in files))
        p = self.cli("ls", "ais://cb3/ds/", "--nr")
        self.assertIn("ds/a/", p.stdout)
        p = self.cli("object", "show", "ais://cb3/ds/a/2.jpg")
        self.assertRegex(p.stdout, r"PROPERTY\s+VALUE")
        self.assertRegex(p.stdout, r"checksum\s+xxhash2 [0-9a-f]{16}")
        self.assertRegex(p.stdout, r"size\s+1\.95KiB")
        p = self.cli("object", "show", "ais://cb3/ds/a/2.jpg", "--json")
        self.assertEqual(json.loads(p.stdout)["size"], 2000)
        p = self.cli("rmo", "ais://cb3/ds/top.txt")
        self.assertIn('deleted "ds/top.txt" from bucket "ais://cb3"', p.stdout)
        p = self.cli("ls", "ais://cb3")
        self.assertIn("Listed 4 names", p.stdout)
        # many at once (a delete-listrange job): --list, a brace range in the name, --prefix
        self.cli("bucket", "create", "ais://rm")
        for n in ["x-%d" % i for i in range(6)] + ["d/a", "d/b", "keep"]:
            requests.put(self.url + "/v1/objects/rm/" + n, data=b"1").raise_for_status()

        def left():
            return sorted(e["name"] for e in requests.get(self.url + "/v1/buckets/rm").json()["entries"] or [])
        self.cli("rmo", "ais://rm", "--list", "x-0,x-1")
        self.assertEqual(left(), ["d/a", "d/b", "keep", "x-2", "x-3", "x-4", "x-5"])
        p = self.cli("rmo", "ais://rm/x-{2..4}")
        self.assertIn("Deleted x-{2..4}", p.stdout)
        self.cli("rmo", "ais://rm", "--prefix", "d/")
        self.assertEqual(left(), ["keep", "x-5"])
        # ls selections and footers
        for n in ("x-6", "x-7", "y-1"):
            requests.put(self.url + "/v1/objects/rm/" + n, data=b"1").raise_for_status()
        p = self.cli("ls", "ais://rm", "--template", "x-{5..6}", "--name-only", "-H")
        self.assertEqual(p.stdout.split(), ["x-5", "x-6"])
        p = self.cli("ls", "ais://rm", "--regex", "^(keep|y-)", "--name-only", "-H")
        self.assertEqual(p.stdout.split(), ["keep", "y-1"])
        p = self.cli("ls", "ais://rm", "--count-only")
        self.assertEqual(p.stdout.strip(), "Listed 5 names")
        p = self.cli("ls", "ais://rm", "--no-footers", "--name-only")
        self.assertNotIn("Listed", p.stdout)
        self.assertIn("keep", p.stdout)
        p = self.run_cli("ls", "ais://rm", "--regex", "(")
        self.assertNotEqual(p.returncode, 0)
        p = self.run_cli("rmo", "ais://rm", "--list", "nope")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("nope", p.stderr)

    def test_show_cluster(self):
        p = self.cli("show", "cluster")
        self.assertRegex(p.stdout, r"PROXY\s+MEM USED\(%\)\s+MEM AVAIL")
        self.assertRegex(p.stdout, r"p\[\w+\]\[P\]")
        self.assertRegex(p.stdout, r"TARGET\s+MEM USED\(%\)\s+MEM AVAIL\s+CAP USED\(%\)\s+CAP AVAIL")
        self.assertIn("Summary:", p.stdout)
        self.assertRegex(p.stdout, r"Targets:\s+1 \(num disks: 1\)")
        self.assertRegex(p.stdout, r"Status:\s+1 online")
        self.assertRegex(p.stdout, r"Rebalance:\s+\S")
        self.assertRegex(p.stdout, r"Build:\s+\S")
        self.assertRegex(p.stdout, r"TARGET\s+MEM USED\(%\)\s+MEM AVAIL\s+CAP USED\(%\)\s+CAP AVAIL\s+CPU\(%\)\s+"
                                   r"REBALANCE")
        self.assertNotIn("LOAD AVERAGE", p.stdout)
        # sub-views
        p = self.cli("show", "cluster", "proxy")
        self.assertIn("PROXY", p.stdout)
        self.assertNotIn("TARGET", p.stdout)
        self.assertNotIn("Summary:", p.stdout)
        p = self.cli("show", "cluster", "target")
        self.assertIn("TARGET", p.stdout)
        self.assertNotIn("PROXY", p.stdout)
        smap = json.loads(self.cli("show", "cluster", "smap", "--json").stdout)
        tid = list(smap["tmap"])[0]
        p = self.cli("show", "cluster", "smap")
        self.assertRegex(p.stdout, r"NODE\s+TYPE\s+PUBLIC URL\s+CONTROL URL\s+DATA URL")
        self.assertIn("t[%s]" % tid, p.stdout)
        self.assertRegex(p.stdout, r"Smap version:\s+%s" % smap["version"])
        self.assertIn("providers", json.loads(self.cli("show", "cluster", "bmd", "--json").stdout))
        self.assertRegex(self.cli("show", "cluster", "bmd").stdout, r"BMD version:\s+\d+")
        self.assertRegex(self.cli("show", "cluster", "config").stdout, r"checksum\.type\s+\w+")
        self.assertIn("checksum", json.loads(self.cli("show", "cluster", "config", "--json").stdout))
        p = self.cli("show", "cluster", "stats")
        self.assertRegex(p.stdout, r"NODE\s+GET\s+GET SIZE\s+PUT\s+PUT SIZE")
        # NODE filters to that node
        p = self.cli("show", "cluster", "t[%s]" % tid)
        self.assertIn("t[%s]" % tid, p.stdout)
        self.assertNotIn("PROXY", p.stdout)
        p = self.cli("show", "cluster", "target", tid, "--json")
        self.assertEqual(list(json.loads(p.stdout)), ["t[%s]" % tid])
        for bad in (["frob"], ["target", "t[nosuchnode]"], ["proxy", "t[%s]" % tid], ["smap", "x", "y"]):
            p = self.run_cli("show", "cluster", *bad)
            self.assertEqual(p.returncode, 1, bad)
            self.assertIn("Error:", p.stderr)

    def shard_members(self, bucket, shard):
        r = requests.get(self.url + "/v1/buckets/" + bucket, json={"action": "list", "value": {
            "prefix": shard, "flags": "8"}})
        self.assertEqual(r.status_code, 200, r.text)
        return sorted(e["name"][len(shard) + 1:] for e in r.json()["entries"] if e["name"] != shard)

    def test_archive_cli(self):
        p = self.cli("archive", "--help")
        self.assertIn("Usage: shale archive put", p.stdout)
        self.assertIn("gen-shards", p.stdout)
        p = self.cli("archive", "put", "--help")
        self.assertIn("--list", p.stdout)
        self.assertIn("--dry-run", p.stdout)
        self.assertIn("--cleanup", self.cli("archive", "gen-shards", "--help").stdout)
        self.cli("bucket", "create", "ais://ca")
        src = os.path.join(self.tmp, "asrc")
        os.makedirs(src)
        for n in ("a", "b", "c", "s1.json", "s2.json", "s3.json", "s4.json"):
            with open(os.path.join(src, n), "w") as f:
                f.write(n)
        # --list and --template select which files become members
        self.cli("archive", "put", src, "ais://ca/l.tar", "--list", "a,b", "--append-or-put")
        self.assertEqual(self.shard_members("ca", "l.tar"), ["a", "b"])
        self.cli("archive", "put", src, "ais://ca/t.tar", "--template", "s{1..3}.json", "--append-or-put")
        self.assertEqual(self.shard_members("ca", "t.tar"), ["s1.json", "s2.json", "s3.json"])
        p = self.run_cli("archive", "put", src, "ais://ca/x.tar", "--list", "a,nope", "--append-or-put")
        self.assertEqual(p.returncode, 1)
        self.assertIn('"nope"', p.stderr)
        # --dry-run says what it would do and does nothing
        p = self.cli("archive", "put", src, "ais://ca/d.tar", "--template", "s{1..2}.json", "--append-or-put",
                     "--dry-run")
        self.assertIn("[DRY RUN] No modifications on the cluster", p.stdout)
        self.assertIn("=> ais://ca/d.tar/s2.json", p.stdout)
        self.assertIn("2 files (14B) would have been archived into ais://ca/d.tar", p.stdout)
        self.assertEqual(requests.head(self.url + "/v1/objects/ca/d.tar", allow_redirects=True).status_code, 404)
        # archive bucket: the destination is created; --cont-on-err skips what is missing and succeeds
        self.cli("put", os.path.join(src, "a"), "ais://ca/a")
        p = self.run_cli("archive", "bucket", "ais://ca", "ais://newdst/j.tar", "--list", "a,nope", "--cont-on-err",
                         "--wait")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(self.shard_members("newdst", "j.tar"), ["a"])
        # gen-shards: a missing bucket fails before any progress is drawn
        p = self.run_cli("archive", "gen-shards", "ais://nosuchb/g-{0..1}.tar", "--fcount", "1", "--fsize", "10")
        self.assertEqual(p.returncode, 1)
        self.assertIn('bucket "ais://nosuchb" does not exist', p.stderr)
        self.assertNotIn("Shards created", p.stdout + p.stderr)
        # --cleanup: the bucket is emptied (destroyed and created) first
        p = self.cli("archive", "gen-shards", "ais://ca/g-{0..1}.tar", "--fcount", "2", "--fsize", "10", "--cleanup")
        self.assertIn("Created 2 shards in ais://ca", p.stdout)
        names = [e["name"] for e in requests.get(self.url + "/v1/buckets/ca").json()["entries"]]
        self.assertEqual(names, ["g-0.tar", "g-1.tar"])

    def test_help(self):
        cmds = {
            "bucket": ["create", "ls", "rm", "props"], "ls": [], "create": [], "rmb": [], "put": [], "get": [],
            "object": ["show", "get", "put", "rm"], "rmo": [], "show": ["cluster"],
            "archive": ["put", "get", "ls", "bucket", "gen-shards"], "job": ["show", "wait", "stop", "start"],
            "cluster": ["maintenance", "decommission"], "playground": ["start", "stop", "status", "add-target"],
        }
        alias = {"bucket ls": "ls", "object get": "get", "object put": "put", "object rm": "rmo"}
        for c, subs in cmds.items():
            for words in [[c]] + [[c, s] for s in subs]:
                for flag in ("--help", "-h"):
                    p = self.run_cli(*(words + [flag]))
                    self.assertEqual(p.returncode, 0, (words, flag, p.stderr))
                    self.assertNotIn("unknown flag", p.stderr)
                    want = alias.get(" ".join(words), " ".join(words))
                    self.assertTrue(p.stdout.startswith("Usage: shale " + want), (words, p.stdout))
        # also after other arguments, and never with a side effect
        p = self.run_cli("bucket", "create", "ais://helponly", "--help")
        self.assertEqual(p.returncode, 0)
        self.assertNotEqual(self.run_cli("ls", "ais://helponly").returncode, 0)
        p = self.run_cli("--help")
        self.assertEqual(p.returncode, 0)
        self.assertIn("Usage: shale COMMAND", p.stdout)

    def test_errors_and_usage(self):
        p = self.run_cli("frobnicate")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("unknown command", p.stderr)
        self.assertEqual(len(p.stderr.strip().splitlines()), 1, "one line, not the whole help")
        p = self.run_cli("lss")
        self.assertIn('did you mean "ls"?', p.stderr)
        # ais's short spellings of the job verbs
        self.assertEqual(self.run_cli("show", "job").returncode, 0)
        p = self.run_cli("wait", "typo-id")
        self.assertIn("no job", p.stderr)
        p = self.run_cli("ls", "ais://nosuchbucket")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn('bucket "ais://nosuchbucket" does not exist', p.stderr)
        p = self.run_cli("ls", env={"AIS_ENDPOINT": "http://127.0.0.1:1"})
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("is the cluster running", p.stderr)
        p = self.run_cli("put", "/nonexistent/file", "ais://x")
        self.assertNotEqual(p.returncode, 0)
        # a job id nobody knows is an error at once, not after the whole timeout (issue 15)
        t0 = time.time()
        p = self.run_cli("job", "wait", "typo-job-id")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("no job", p.stderr)
        self.assertLess(time.time() - t0, 20)
        # --json prints JSON also when nothing runs
        p = self.cli("job", "show", "--json")
        self.assertIsInstance(json.loads(p.stdout), dict)


class TestPlayground(unittest.TestCase):
    def test_start_stop_restart(self):
        tmp = tempfile.mkdtemp(prefix="shale-pg-")
        port = free_port_range(3)
        url = "http://127.0.0.1:%d" % port
        env = dict(os.environ, AIS_ENDPOINT=url)
        d = os.path.join(tmp, "pg")
        try:
            p = subprocess.run([SHALE, "playground", "start", "--dir", d, "--port", str(port)], capture_output=True,
                               text=True, env=env, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(requests.get(url + "/v1/health").status_code, 200)
            requests.post(url + "/v1/buckets/keep", json={"action": "create-bck"})
            requests.put(url + "/v1/objects/keep/obj", data=b"persist")
            with open(os.path.join(d, "n0", "shaled.pid")) as f:
                pid1 = int(f.read())
            p = subprocess.run([SHALE, "playground", "status", "--dir", d], capture_output=True, text=True, env=env)
            self.assertRegex(p.stdout, r"n0\s+standalone\s+%d\s+%d\s+online" % (port, pid1))
            p = subprocess.run([SHALE, "playground", "stop", "--dir", d], capture_output=True, text=True, env=env,
                               timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertFalse(os.path.exists("/proc/%d" % pid1) and open("/proc/%d/stat" % pid1).read().split()[2] != "Z")
            self.assertRaises(requests.ConnectionError, requests.get, url + "/v1/health", timeout=2)
            p = subprocess.run([SHALE, "playground", "status", "--dir", d], capture_output=True, text=True, env=env)
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("stopped", p.stdout)
            # start on the existing dir restarts it with the same data
            p = subprocess.run([SHALE, "playground", "start", "--dir", d], capture_output=True, text=True, env=env,
                               timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("restarted", p.stdout)
            self.assertEqual(requests.get(url + "/v1/objects/keep/obj").content, b"persist")
            # start while running is a no-op that still succeeds
            p = subprocess.run([SHALE, "playground", "start", "--dir", d], capture_output=True, text=True, env=env,
                               timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn("already running", p.stdout)
            self.assertNotIn("restarted", p.stdout)
        finally:
            subprocess.run([SHALE, "playground", "stop", "--dir", d], capture_output=True, timeout=60)
            shutil.rmtree(tmp, ignore_errors=True)

    def test_targets_alone_mean_one_gateway(self):
        tmp = tempfile.mkdtemp(prefix="shale-pg-")
        port = free_port_range(4)
        d = os.path.join(tmp, "pg")
        try:
            p = subprocess.run([SHALE, "playground", "start", "--dir", d, "--port", str(port), "--targets", "1"],
                               capture_output=True, text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            smap = requests.get("http://127.0.0.1:%d/v1/daemon" % port, params={"what": "smap"}, timeout=10).json()
            self.assertEqual((len(smap["pmap"]), len(smap["tmap"])), (1, 1))
        finally:
            subprocess.run([SHALE, "playground", "stop", "--dir", d], capture_output=True, timeout=60)
            shutil.rmtree(tmp, ignore_errors=True)

    def test_port_taken(self):
        """A node that cannot bind its port fails the start, even though the port answers health."""
        tmp = tempfile.mkdtemp(prefix="shale-pg-")
        port = free_port_range(3)
        d1, d2 = os.path.join(tmp, "pg1"), os.path.join(tmp, "pg2")
        try:
            p = subprocess.run([SHALE, "playground", "start", "--dir", d1, "--port", str(port)], capture_output=True,
                               text=True, timeout=60)
            self.assertEqual(p.returncode, 0, p.stderr)
            for _ in range(2):  # fresh dir, then a restart of the existing one
                p = subprocess.run([SHALE, "playground", "start", "--dir", d2, "--port", str(port)],
                                   capture_output=True, text=True, timeout=60)
                self.assertNotEqual(p.returncode, 0, p.stdout)
                self.assertNotIn("started", p.stdout)
                self.assertIn("another process answers on port %d" % port, p.stderr)
                self.assertIn(os.path.join(d2, "n0", "log"), p.stderr)
                p = subprocess.run([SHALE, "playground", "status", "--dir", d2], capture_output=True, text=True)
                self.assertRegex(p.stdout, r"n0\s+standalone\s+%d\s+-\s+stopped" % port)
            # the first playground is untouched
            p = subprocess.run([SHALE, "playground", "status", "--dir", d1], capture_output=True, text=True)
            self.assertEqual(p.returncode, 0, p.stdout)
        finally:
            for d in (d2, d1):
                subprocess.run([SHALE, "playground", "stop", "--dir", d], capture_output=True, timeout=60)
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
