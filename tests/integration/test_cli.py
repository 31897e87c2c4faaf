# SPDX-License-Identifier: MIT
"""The shale CLI against a real playground node: output formats of
../shared/spec/cli.md, exit codes, stdin/stdout streaming, playground
start/stop/restart by PID."""
import contextlib
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
        p = self.cli("bucket", "rm", "ais://cb1", "-y")
        self.assertEqual(p.stdout.strip(), '"ais://cb1" destroyed')
        p = self.run_cli("bucket", "rm", "ais://cb1", "-y")
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

    # every command path and its spelling in "Usage:" (aliases that keep the canonical usage map to it)
    COMMANDS = [
        "bucket", "bucket create", "bucket rm", "bucket ls", "bucket props", "bucket lru", "bucket summary", "bucket cp", "bucket mv",
        "bucket evict", "prefetch", "evict", "download", "ls",
        "create", "rmb", "cp", "put", "get", "object", "object show", "object get", "object put", "object rm",
        "object cp", "object mv", "object promote", "rmo", "show", "show cluster", "show job", "show storage", "show remote-cluster", "storage",
        "storage resilver", "storage mountpath", "storage mountpath attach", "storage mountpath detach", "storage mountpath enable",
        "storage mountpath disable", "storage mountpath fshc",
        "show object", "show bucket", "show config", "show log", "show etl", "show rebalance", "show dsort",
        "show performance", "show dashboard", "performance", "performance counters", "performance throughput",
        "performance latency", "performance disk", "performance capacity", "storage disk", "storage disk show", "storage cleanup",
        "config",
        "config cluster", "config node", "config reset", "search", "archive", "archive put", "archive get", "archive ls",
        "archive bucket", "archive gen-shards", "etl", "etl init", "etl show", "etl view-logs", "etl stop",
        "etl start", "etl rm", "etl object", "etl bucket", "ishard", "job", "job show", "job wait", "job stop",
        "job start", "job rm", "start", "wait", "stop", "dsort", "ml", "ml get-batch", "ml plan", "ml plan create", "ml plan ls", "ml plan show",
        "ml plan rm", "ml plan batch", "completion", "version", "cluster",
        "cluster maintenance", "cluster decommission", "cluster lost", "cluster lost clear", "cluster reset-stats", "cluster download-logs", "cluster shutdown", "cluster reload-backend-creds", "cluster set-primary", "cluster remote-attach", "cluster remote-detach", "playground",
        "playground start", "playground stop", "playground status", "playground add-target", "s3", "s3 key", "s3 key add", "s3 key ls", "s3 key rm",
        "s3 verify", "auth", "auth login", "auth logout", "auth whoami", "auth add", "auth add user", "auth add role", "auth update",
        "auth update user", "auth update role", "auth update cluster", "auth rm", "auth rm user", "auth rm role", "auth rm token", "auth show", "auth show user",
        "auth show role", "auth show config", "auth set", "auth set config", "tls", "tls load-certificate", "tls validate-certificates",
        "tls show", "show tls", "log", "log show", "log get",
        "job ls", "advanced", "advanced resilver", "advanced check-lock", "advanced rotate-logs",
        "advanced remove-from-smap", "advanced enable-backend", "advanced disable-backend", "advanced random-node", "advanced random-mountpath", "scrub",
        "object cat", "object concat", "object set-custom", "object blob-download", "blob-download", "nbi", "nbi create", "nbi rm",
        "nbi show", "show nbi",
        "auth add cluster", "auth show cluster", "auth rm cluster",
        "object mpu", "object mpu create", "object mpu put-part", "object mpu put", "object mpu complete",
        "object mpu abort",
        "alias", "alias ls", "alias set", "alias rm", "alias reset", "config cli", "config cli show", "config cli set", "config cli reset",
    ]
    USAGE_OF = {"bucket ls": "ls", "bucket evict": "evict", "object get": "get", "object put": "put",
                "object rm": "rmo", "show job": "job show", "show storage": "storage",
                "show object": "object show", "show bucket": "bucket props", "show config": "config",
                "show log": "log show", "show etl": "etl show", "show performance": "performance",
                "performance counters": "performance", "storage disk": "storage disk show", "job ls": "job show",
                "blob-download": "object blob-download", "show nbi": "nbi show",
                "object mpu put": "object mpu put-part", "show tls": "tls show"}

    @staticmethod
    def help_sections(text):
        """usage, description, {flag spec: meaning text}, examples, commands of one --help"""
        parts = text.split("\n\n")
        flags, examples, commands = {}, [], []
        for part in parts[2:]:
            lines = part.splitlines()
            if lines[0] == "Flags:":
                spec = None
                for ln in lines[1:]:
                    m = re.match(r"  (-\S.*?)  +(\S.*)$", ln)
                    if m:
                        spec = m.group(1)
                        flags[spec] = m.group(2)
                    else:
                        flags[spec] += " " + ln.strip()
            elif lines[0] == "Examples:":
                examples = [ln.strip() for ln in lines[1:]]
            elif lines[0] == "Commands:":
                commands = [re.match(r"  shale (\S+ \S+)", ln).group(1) for ln in lines[1:] if ln.startswith("  shale")]
        return parts[0], parts[1] if len(parts) > 1 else "", flags, examples, commands

    def test_help(self):
        top = self.cli("--help").stdout
        self.assertIn("Usage: shale COMMAND", top)
        for name in re.findall(r"^  (\S+)  ", top, re.M):
            self.assertIn(name, self.COMMANDS, "top-level command without a help check")
        for words in self.COMMANDS:
            for flag in ("--help", "-h"):
                p = self.run_cli(*(words.split() + [flag]))
                self.assertEqual(p.returncode, 0, (words, flag, p.stderr))
                want = self.USAGE_OF.get(words, words)
                self.assertTrue(p.stdout.startswith("Usage: shale " + want), (words, p.stdout))
            usage, desc, flags, examples, commands = self.help_sections(p.stdout)
            # one sentence of description
            self.assertTrue(desc.strip().endswith("."), (words, desc))
            self.assertEqual(desc.count(". "), 0, (words, desc))
            # a group lists its commands, and each is checked here too
            for c in commands:
                self.assertIn(c, self.COMMANDS, (words, c))
            if not commands:
                self.assertTrue(flags or "Flags: none" in p.stdout, (words, p.stdout))
            for spec, meaning in flags.items():
                self.assertRegex(meaning, r"\(default: [^)]+\)$", (words, spec))
            self.assertTrue(examples, words)
            for ex in examples:
                self.assertTrue(ex.startswith("shale "), (words, ex))
            # every flag the help shows is one the command takes: an unknown flag put last is the only one
            # refused (the command never runs: parsing fails first)
            if flags:
                args = []
                for spec in flags:
                    valued = bool(re.match(r"^(?:-\S+, )*-\S+ [^\[]", spec))
                    for name in re.findall(r"(?:^|, )(--?[\w-]+)", spec):
                        args.append(name + "=x" if valued else name)
                p = self.run_cli(*(words.split() + args + ["--zz-not-a-flag"]),
                                 env={"AIS_ENDPOINT": "http://127.0.0.1:1"})
                self.assertNotEqual(p.returncode, 0)
                self.assertIn("unknown flag '--zz-not-a-flag'", p.stderr, (words, args, p.stderr))
        # also after other arguments, and never with a side effect
        p = self.run_cli("bucket", "create", "ais://helponly", "--help")
        self.assertEqual(p.returncode, 0)
        self.assertNotEqual(self.run_cli("ls", "ais://helponly").returncode, 0)
        self.assertEqual(self.cli("help", "bucket", "cp").stdout, self.cli("bucket", "cp", "--help").stdout)
        self.assertIn("Also spelled: shale cp, shale object cp", self.cli("cp", "--help").stdout)

    def test_search(self):
        p = self.cli("search", "mountpath")
        self.assertRegex(p.stdout, r"^COMMAND\s+WHAT IT DOES")
        self.assertRegex(p.stdout, r"(?m)^shale storage\s+Show each target's mountpaths")
        p = self.cli("search", "copy", "-H")
        cmds = [ln.split("  ")[0] for ln in p.stdout.splitlines()]
        for c in ("shale bucket cp", "shale cp", "shale object cp"):
            self.assertIn(c, cmds)
        self.assertNotIn("shale put", cmds)
        # flags by name and by description
        p = self.cli("search", "archregx")
        self.assertIn("shale get --archregx X", p.stdout)
        self.assertIn("shale archive get --archregx X", p.stdout)
        p = self.cli("search", "restarted")  # in a description
        self.assertIn("shale playground start", p.stdout)
        p = self.run_cli("search", "zzqqxx")
        self.assertEqual(p.returncode, 1)
        self.assertIn('no command or flag mentions "zzqqxx"', p.stderr)
        self.assertNotEqual(self.run_cli("search").returncode, 0)

    def test_unknown_flags_and_stray_arguments(self):
        for args, near in ((["get", "ais://b/o", "--prefx", "p"], "--prefix"),
                           (["ls", "ais://b", "--templte", "x"], "--template"),
                           (["bucket", "cp", "ais://a", "ais://b", "--dryrun"], "--dry-run"),
                           (["job", "wait", "x", "--timout", "1m"], "--timeout"),
                           (["archive", "put", "f", "ais://b/s.tar", "--apend"], "--append")):
            p = self.run_cli(*args)
            self.assertEqual(p.returncode, 1, args)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertIn("did you mean %s?" % near, p.stderr)
        p = self.run_cli("put", "f", "ais://b", "--json")  # put prints no table: --json is not one of its flags
        self.assertIn("unknown flag '--json' for `shale put`", p.stderr)
        for args in (["ls", "ais://b", "extra1"], ["get", "ais://b/o", "out", "extra1"],
                     ["object", "show", "ais://b/o", "extra1"], ["job", "wait", "x", "extra1"],
                     ["wait", "x", "extra1"], ["storage", "t[x]", "extra1"], ["search", "a", "extra1"],
                     ["bucket", "summary", "ais://b", "extra1"], ["bucket", "cp", "ais://a", "ais://b", "extra1"],
                     ["cp", "ais://a", "ais://b", "extra1"], ["etl", "show", "n", "extra1"],
                     ["cluster", "decommission", "n", "extra1"], ["archive", "ls", "ais://b", "extra1"],
                     ["playground", "stop", "--dir", self.tmp, "extra1"], ["config", "node", "n", "k", "extra1"],
                     ["bucket", "props", "show", "ais://b", "extra1"], ["job", "start", "rebalance", "extra1"],
                     ["config", "cluster", "log", "extra1"], ["ishard", "extra1"],
                     ["rmo", "ais://b", "extra1", "--prefix", "x"]):
            p = self.run_cli(*args)
            self.assertEqual(p.returncode, 1, args)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, (args, p.stderr))
            self.assertIn('unexpected argument "extra1"', p.stderr, args)

    def names(self, bucket):
        r = requests.get(self.url + "/v1/buckets/" + bucket, json={"action": "list", "value": {"props": "name"}})
        if r.status_code == 404:
            return None
        r.raise_for_status()
        return sorted(e["name"] for e in r.json()["entries"])

    def obj(self, bucket, name):
        r = requests.get(self.url + "/v1/objects/%s/%s" % (bucket, name))
        return r.content if r.status_code == 200 else None

    def fill(self, bucket, names):
        self.cli("bucket", "create", "ais://" + bucket)
        for n in names:
            requests.put(self.url + "/v1/objects/%s/%s" % (bucket, n), data=n.encode()).raise_for_status()

    def test_bucket_cp(self):
        names = ["a/1", "a/2", "b/3", "x-0", "x-1", "x-2"]
        self.fill("cpsrc", names)
        # without --wait: the job id alone on stdout, how to follow it on stderr
        p = self.cli("bucket", "cp", "ais://cpsrc", "ais://cpall")
        jid = p.stdout.strip()
        self.assertRegex(jid, r"^[\w-]+$")
        self.assertIn("Copying ais://cpsrc => ais://cpall", p.stderr)
        self.assertIn("shale job wait %s" % jid, p.stderr)
        self.cli("job", "wait", jid)
        self.assertEqual(self.names("cpall"), names)
        self.assertEqual(self.obj("cpall", "b/3"), b"b/3")
        # a prefix (flag, or a directory in SRC), waited for
        p = self.cli("cp", "ais://cpsrc", "ais://cppfx", "--prefix", "a/", "--wait")
        self.assertIn("Copied 2 objects (6B) from ais://cpsrc (prefix a/) to ais://cppfx", p.stdout)
        self.assertEqual(self.names("cppfx"), ["a/1", "a/2"])
        self.cli("cp", "ais://cpsrc/b/", "ais://cppfx", "--wait")
        self.assertEqual(self.names("cppfx"), ["a/1", "a/2", "b/3"])
        # a template (flag, or in SRC), with the destination's object part put in front of the names
        p = self.cli("bucket", "cp", "ais://cpsrc", "ais://cptpl", "--template", "x-{0..1}", "--wait")
        self.assertIn("Copied 2 objects", p.stdout)
        self.assertEqual(self.names("cptpl"), ["x-0", "x-1"])
        self.cli("cp", "ais://cpsrc/x-{1..2}", "ais://cptpl/old/", "--wait")
        self.assertEqual(self.names("cptpl"), ["old/x-1", "old/x-2", "x-0", "x-1"])
        self.assertEqual(self.obj("cptpl", "old/x-2"), b"x-2")
        # --list; a missing name fails the job unless --cont-on-err
        p = self.run_cli("cp", "ais://cpsrc", "ais://cplst", "--list", "x-0,nope", "--wait")
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("nope", p.stdout + p.stderr)
        p = self.cli("cp", "ais://cpsrc", "ais://cplst", "--list", "x-0,nope", "--wait", "--cont-on-err")
        self.assertIn("1 object(s) failed:", p.stdout)
        self.assertRegex(p.stdout, r"ais://cpsrc/nope\s+404")
        self.assertIn("x-0", self.names("cplst"))
        # --dry-run counts and copies nothing (the destination is not even created)
        p = self.cli("cp", "ais://cpsrc", "ais://cpdry", "--dry-run")
        self.assertIn("[DRY RUN] No modifications on the cluster", p.stdout)
        self.assertIn("6 objects (18B) would have been copied from ais://cpsrc to ais://cpdry", p.stdout)
        self.assertIsNone(self.names("cpdry"))
        # bad input: one line, non-zero, nothing started
        for args, msg in ((["cp", "ais://cpsrc", "ais://cpbad", "--timeout", "soon", "--wait"], "--timeout"),
                          (["cp", "ais://cpsrc/x-0", "ais://cpbad", "--prefix", "a"], "one way"),
                          (["cp", "ais://cpsrc", "ais://cpsrc"], "same bucket"),
                          (["cp", "ais://cpsrc"], "usage: shale cp"),
                          (["cp", "ais://nosuchsrc", "ais://cpbad"], "does not exist")):
            p = self.run_cli(*args)
            self.assertEqual(p.returncode, 1, args)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, (args, p.stderr))
            self.assertIn(msg, p.stderr)
        self.assertIsNone(self.names("cpbad"))

    def test_bucket_mv_and_lru(self):
        names = ["m/1", "m/2", "n-3"]
        self.fill("mvsrc", names)
        p = self.cli("bucket", "mv", "ais://mvsrc", "ais://mvdst", "--wait")
        self.assertIn("ais://mvsrc is now ais://mvdst", p.stdout)
        self.assertEqual(self.names("mvdst"), names)
        self.assertIsNone(self.names("mvsrc"))
        self.assertEqual(self.obj("mvdst", "n-3"), b"n-3")
        for args, msg in ((["bucket", "mv", "ais://mvdst", "ais://mvdst"], "itself"),
                          (["bucket", "mv", "ais://nosuch", "ais://x"], "does not exist"),
                          (["bucket", "mv", "ais://mvdst/m/1", "ais://x"], "whole buckets"),
                          (["bucket", "mv", "ais://mvdst"], "usage: shale bucket mv")):
            p = self.run_cli(*args)
            self.assertEqual(p.returncode, 1, args)
            self.assertIn(msg, p.stderr)
        # lru of one bucket, forced: below space.highwm nothing is evicted, and the job ends
        p = self.cli("job", "start", "lru", "ais://mvdst", "--force", "--wait")
        self.assertEqual(self.names("mvdst"), names)
        p = self.run_cli("job", "start", "lru", "ais://nosuch")
        self.assertEqual(p.returncode, 1)
        self.assertIn("nosuch", p.stderr)

    def test_object_cp(self):
        self.fill("ocsrc", ["d/cat.jpg", "dog.jpg"])
        p = self.cli("object", "cp", "ais://ocsrc/d/cat.jpg", "ais://ocdst/tom.jpg")
        self.assertEqual(p.stdout.strip(), "Copied ais://ocsrc/d/cat.jpg => ais://ocdst/tom.jpg")
        self.assertIn('"ais://ocdst" bucket created', p.stderr)
        self.assertEqual(self.obj("ocdst", "tom.jpg"), b"d/cat.jpg")
        self.cli("cp", "ais://ocsrc/dog.jpg", "ais://ocdst/pets/")
        self.cli("cp", "ais://ocsrc/dog.jpg", "ais://ocdst")
        self.assertEqual(self.names("ocdst"), ["dog.jpg", "pets/dog.jpg", "tom.jpg"])
        p = self.cli("cp", "ais://ocsrc/dog.jpg", "ais://ocdst/x", "--dry-run")
        self.assertIn("ais://ocsrc/dog.jpg (7B) would have been copied to ais://ocdst/x", p.stdout)
        self.assertIsNone(self.obj("ocdst", "x"))
        p = self.run_cli("object", "cp", "ais://ocsrc/nope", "ais://ocdst")
        self.assertEqual(p.returncode, 1)
        self.assertIn("ais://ocsrc/nope does not exist", p.stderr)

    def test_get_many(self):
        names = ["s-0.tar", "s-1.tar", "s-2.tar", "d/e/f.txt", "other"]
        self.fill("gm", names)
        out = os.path.join(self.tmp, "gm1")
        p = self.cli("get", "ais://gm/s-{0..2}.tar", out)
        self.assertEqual(p.stdout.strip(), "GET 3 objects from ais://gm to %s (21B)" % out)
        self.assertEqual(sorted(os.listdir(out)), ["s-0.tar", "s-1.tar", "s-2.tar"])
        with open(os.path.join(out, "s-1.tar"), "rb") as f:
            self.assertEqual(f.read(), b"s-1.tar")
        out = os.path.join(self.tmp, "gm2")
        self.cli("get", "ais://gm", out, "--prefix", "d/")
        with open(os.path.join(out, "d", "e", "f.txt"), "rb") as f:
            self.assertEqual(f.read(), b"d/e/f.txt")
        out = os.path.join(self.tmp, "gm3")
        self.cli("get", "ais://gm", out, "--template", "s-{1..2}.tar", "--num-workers", "1")
        self.assertEqual(sorted(os.listdir(out)), ["s-1.tar", "s-2.tar"])
        self.cli("get", "ais://gm", out, "--template", "oth")  # no braces: a prefix
        self.assertIn("other", os.listdir(out))
        # a missing name: reported and counted, the others written, exit 1
        out = os.path.join(self.tmp, "gm4")
        p = self.run_cli("get", "ais://gm", out, "--list", "s-0.tar,nope")
        self.assertEqual(p.returncode, 1)
        self.assertIn("Error: GET nope: ", p.stderr)
        self.assertIn("Failed to GET 1 of 2 objects from ais://gm", p.stderr)
        self.assertEqual(os.listdir(out), ["s-0.tar"])
        # the default directory is the current one
        here = os.path.join(self.tmp, "gm5")
        os.makedirs(here)
        subprocess.run([SHALE, "get", "ais://gm", "--prefix", "s-0"], cwd=here, check=True, capture_output=True,
                       env=dict(os.environ, AIS_ENDPOINT=self.url))
        self.assertEqual(os.listdir(here), ["s-0.tar"])
        for args, msg in ((["get", "ais://gm", "-", "--prefix", "s"], "cannot go to stdout"),
                          (["get", "ais://gm", out, "--prefix", "zz"], 'no object in ais://gm starts with "zz"'),
                          (["get", "ais://gm", out, "--prefix", "s", "--offset", "1"], "--offset applies to one"),
                          (["get", "ais://gm"], "missing object name"),
                          (["get", "ais://gm/x", "--list", "a"], "one way")):
            p = self.run_cli(*args)
            self.assertEqual(p.returncode, 1, args)
            self.assertIn(msg, p.stderr, args)

    def test_storage(self):
        smap = requests.get(self.url + "/v1/daemon", params={"what": "smap"}).json()
        tid = list(smap["tmap"])[0]
        st = requests.get(self.url + "/v1/daemon", params={"what": "node_status"}).json()["capacity"]
        p = self.cli("storage")
        self.assertRegex(p.stdout, r"TARGET\s+MOUNTPATH\s+USED\s+AVAIL\s+TOTAL\s+USED\(%\)")
        self.assertRegex(p.stdout, r"t\[%s\]\s+%s\s+" % (tid, re.escape(st["mountpaths"][0])))
        j = json.loads(self.cli("storage", "--json").stdout)
        self.assertEqual(list(j), ["t[%s]" % tid])
        t = j["t[%s]" % tid]
        self.assertEqual(t["mountpaths"], st["mountpaths"])
        self.assertTrue(os.path.isdir(t["mountpaths"][0]), t)
        self.assertGreater(t["total"], 0)
        self.assertEqual(t["used"] + t["avail"], t["total"])
        self.assertEqual(t["total"], int(st["total"]))
        for args in (["show", "storage", "t[%s]" % tid], ["storage", "mountpath", "show", tid]):
            self.assertEqual(json.loads(self.cli(*args, "--json").stdout)["t[%s]" % tid]["mountpaths"],
                             st["mountpaths"])
        p = self.run_cli("storage", "t[nosuchnode]")
        self.assertEqual(p.returncode, 1)
        self.assertIn('node "t[nosuchnode]" is not in the cluster map', p.stderr)

    def test_config(self):
        p = self.cli("config", "cluster", "checksum")
        self.assertRegex(p.stdout, r"PROPERTY\s+VALUE")
        self.assertRegex(p.stdout, r"checksum\.type\s+\w+")
        self.assertNotIn("log.level", p.stdout)
        conf = lambda: requests.get(self.url + "/v1/cluster", params={"what": "cluster_config"}).json()  # noqa: E731
        level = conf()["log"]["level"]
        self.assertEqual(json.loads(self.cli("config", "cluster", "log.level", "--json").stdout), level)
        try:
            p = self.cli("config", "cluster", "log.level=%d" % (level + 1))
            self.assertEqual(p.stdout.splitlines(), ["Cluster config updated", '"log.level" set to: "%d" (was: "%d")'
                                                     % (level + 1, level)])
            self.assertEqual(conf()["log"]["level"], level + 1)
            # a key the server applies at restart: what it answered
            size = conf()["log"]["max_size"]
            p = self.cli("config", "cluster", "log.max_size=65MiB")
            self.assertIn('"log.max_size" set to: "65MiB"', p.stdout)
            self.assertIn("Restart required: log.max_size (server: stored;", p.stdout)
            self.cli("config", "cluster", "log.max_size=" + size)
        finally:
            self.cli("config", "cluster", "log.level=%d" % level)
        for args, msg in ((["config", "cluster", "nokey=1"], 'unknown configuration key "nokey"'),
                          (["config", "cluster", "log.level=abc"], "must be an integer"),
                          (["config", "cluster", "chksum"], 'did you mean "checksum"?'),
                          (["config", "cluster", "log.level=3", "log"], "give either one KEY to show"),
                          (["config", "node", "x"], "not in the cluster map"),
                          (["config", "cli", "set", "nokey=1"], 'unknown CLI setting "nokey"')):
            p = self.run_cli(*args)
            self.assertEqual(p.returncode, 1, args)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, (args, p.stderr))
            self.assertIn(msg, p.stderr, args)
        self.assertEqual(conf()["log"]["level"], level)
        smap = requests.get(self.url + "/v1/daemon", params={"what": "smap"}).json()
        tid = list(smap["tmap"])[0]
        p = self.cli("config", "node", "t[%s]" % tid, "log")
        self.assertRegex(p.stdout, r"log\.level\s+%d" % level)
        node = json.loads(self.cli("config", "node", tid, "--json").stdout)
        self.assertIn("confdir", node)  # a node's own keys too
        p = self.run_cli("config", "node", tid, "log.level=4")
        self.assertEqual(p.returncode, 1)
        self.assertIn("config cluster log.level=4", p.stderr)

    def test_archive_put_errors_name_flags(self):
        self.cli("bucket", "create", "ais://ape")
        f = os.path.join(self.tmp, "ape.txt")
        with open(f, "w") as fh:
            fh.write("x")
        for args, flag in ((["--append"], "--append-or-put"), (["--archpath", "../up"], "--archpath"),
                           (["--append", "--append-or-put"], "--append-or-put")):
            p = self.run_cli("archive", "put", f, "ais://ape/new.tar", *args)
            self.assertEqual(p.returncode, 1, args)
            self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
            self.assertIn(flag, p.stderr)
            for wire in ("Ais-Pine", "?archpath", "PUT "):
                self.assertNotIn(wire, p.stderr)
        self.assertIsNone(self.obj("ape", "new.tar"))

    def test_specs_json_or_yaml(self):
        self.fill("spc", ["hello.txt"])
        code = "function transform(data) return string.upper(data) end\n"
        y = os.path.join(self.tmp, "etl.yaml")
        with open(y, "w") as f:
            f.write("name: upper-yaml\nruntime: lua\ncode: |\n  " + code)
        j = os.path.join(self.tmp, "etl.json")
        with open(j, "w") as f:
            json.dump({"name": "upper-json", "runtime": "lua", "code": code}, f)
        try:
            self.cli("etl", "init", "-f", y)
            self.cli("etl", "init", "--spec", j)
            for name in ("upper-yaml", "upper-json"):
                p = self.cli("etl", "object", name, "ais://spc/hello.txt", "-")
                self.assertEqual(p.stdout, "HELLO.TXT")
        finally:
            self.run_cli("etl", "rm", "upper-yaml", "upper-json")
        # a YAML dsort spec reaches the server (which checks its fields)
        d = os.path.join(self.tmp, "dsort.yaml")
        with open(d, "w") as f:
            f.write("input_bck: {name: spc, provider: ais}\ninput_format: {template: 'x-{0..1}.tar'}\n")
        p = self.run_cli("dsort", "-f", d)
        self.assertEqual(p.returncode, 1)
        self.assertNotIn("not a valid dsort spec", p.stderr)
        self.assertIn("start dsort", p.stderr)
        # wrong forms: one line naming the file and the forms accepted
        bad = {"list.yaml": "- a\n- b\n", "broken.json": '{"name": ', "broken.yaml": "a: [b\n", "empty.yaml": ""}
        for name, text in bad.items():
            path = os.path.join(self.tmp, name)
            with open(path, "w") as f:
                f.write(text)
            for args in (["dsort", "-f", path], ["etl", "init", "--spec", path],
                         ["ml", "get-batch", "ais://spc", os.path.join(self.tmp, "o.tar"), "--spec", path]):
                p = self.run_cli(*args)
                self.assertEqual(p.returncode, 1, args)
                self.assertEqual(len(p.stderr.strip().splitlines()), 1, p.stderr)
                self.assertIn(path + ": not a valid", p.stderr)
                self.assertIn('a JSON object {"field": ...} or a YAML mapping (field: value)', p.stderr)

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

    @contextlib.contextmanager
    def cluster(self, nports, targets, timeout=60):
        """a playground of one gateway and `targets` targets on free ports, stopped and removed after:
        (its directory, the gateway's port)"""
        tmp = tempfile.mkdtemp(prefix="shale-pg-")
        port = free_port_range(nports)
        d = os.path.join(tmp, "pg")
        try:
            p = subprocess.run([SHALE, "playground", "start", "--dir", d, "--port", str(port), "--targets",
                                str(targets)], capture_output=True, text=True, timeout=timeout)
            self.assertEqual(p.returncode, 0, p.stderr)
            yield d, port
        finally:
            subprocess.run([SHALE, "playground", "stop", "--dir", d], capture_output=True, timeout=60)
            shutil.rmtree(tmp, ignore_errors=True)

    def test_targets_alone_mean_one_gateway(self):
        with self.cluster(4, 1) as (_, port):
            smap = requests.get("http://127.0.0.1:%d/v1/daemon" % port, params={"what": "smap"}, timeout=10).json()
            self.assertEqual((len(smap["pmap"]), len(smap["tmap"])), (1, 1))

    def test_cluster_nodes_share_the_cpus(self):
        """The nodes of a playground cluster share this machine's CPUs: each runs CPUs / nodes HTTP poll
        loops (at least 1), not the standalone default of one per CPU and at least 2 each."""
        with self.cluster(5, 2, timeout=90) as (d, port):
            ncpu = os.sysconf("SC_NPROCESSORS_ONLN")
            want = max(1, ncpu // 3)
            with open(os.path.join(d, "playground.json")) as f:
                self.assertEqual(json.load(f)["http_loops"], want)
            for k in range(3):
                m = requests.get("http://127.0.0.1:%d/metrics" % (port + k), timeout=10).text
                loops = {line.split('loop="')[1].split('"')[0] for line in m.splitlines()
                         if line.startswith("shale_http_connections{")}
                self.assertEqual(len(loops), want, "node on port %d: %s" % (port + k, sorted(loops)))

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
