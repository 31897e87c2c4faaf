# SPDX-License-Identifier: MIT
"""ais-compatible object and bucket verbs of the CLI, against a gateway and 2 targets: `bucket rm` asks
before destroying (-y/--yes skips; without a terminal and -y it refuses, naming -y: it refused -y as an
unknown flag); `object cat` writes an object (or a byte range of it) to stdout; `object set-custom` adds or
replaces custom metadata, and `object show --props all` prints every custom key (it printed the first only)."""
import os
import shutil
import subprocess
import tempfile
import unittest

import boto3
import requests
from botocore.config import Config

from harness import ClusterTest, Cluster, SHALE, main, wait_until


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

    def test_archive_ls_limit_and_list(self):
        self.mkb("ar1")
        for n in ("a", "b", "c"):
            self.assertEqual(self.s.put(self.url + "/v1/objects/ar1/" + n, data=n.encode() * 10).status_code, 200)
        p = self.shale("archive", "bucket", "ais://ar1", "ais://ar2/s.tar", "--list", "a,b", "--wait")
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.shale("archive", "ls", "ais://ar2/s.tar", "-H")
        self.assertEqual([l.split()[0] for l in p.stdout.splitlines()], ["s.tar", "s.tar/a", "s.tar/b"], p.stdout)
        p = self.shale("archive", "ls", "ais://ar2/s.tar", "--limit", "2", "-H")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual([l.split()[0] for l in p.stdout.splitlines()], ["s.tar", "s.tar/a"], p.stdout)
        p = self.shale("archive", "ls", "ais://ar2", "--limit", "-1")
        self.assertEqual(p.returncode, 1)
        self.assertIn("--limit", p.stderr)

    def test_object_concat(self):
        self.mkb("cc1")
        d = tempfile.mkdtemp(prefix="shale-concat-")
        paths = []
        for i, data in enumerate((b"first-", b"second-", b"third")):
            paths.append(os.path.join(d, "p%d" % i))
            with open(paths[-1], "wb") as f:
                f.write(data)
        p = self.shale("object", "concat", *paths, "ais://cc1/whole")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("Concatenated 3 files into ais://cc1/whole", p.stdout)
        self.assertEqual(self.s.get(self.url + "/v1/objects/cc1/whole").content, b"first-second-third")
        p = self.shale("object", "concat", d + "/nope", "ais://cc1/x")
        self.assertEqual(p.returncode, 1)
        self.assertIn("nope", p.stderr)
        shutil.rmtree(d, ignore_errors=True)


AK, SK = "cliobj-node", "cliobj-remote-secret-1"


class TestCLIRemote(unittest.TestCase):
    """s3:// verbs against a second cluster's /s3 endpoint as the remote: `evict --keep-md` waits for its job and
    keeps the bucket (it was refused as an unknown flag); `object blob-download` / `blob-download` fetch one
    object with a job."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shale-cliobj-")
        cls.remote = Cluster(cls.tmp, proxies=1, targets=1, name="remote").start()
        cls.remote.cli("s3", "key", "add", AK, "--secret", SK)
        cls.rs3 = boto3.client("s3", endpoint_url=cls.remote.url + "/s3", aws_access_key_id=AK,
                               aws_secret_access_key=SK, region_name="us-east-1",
                               config=Config(s3={"addressing_style": "path"}))
        cls.rs3.create_bucket(Bucket="rbk")
        for i in range(5):
            cls.rs3.put_object(Bucket="rbk", Key="o%d" % i, Body=b"y" * 1000)
        cls.rs3.put_object(Bucket="rbk", Key="big", Body=b"z" * (3 << 20))
        creds = os.path.join(cls.tmp, "credentials")
        with open(creds, "w") as f:
            f.write("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % (AK, SK))
        env = {"AWS_SHARED_CREDENTIALS_FILE": creds, "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
               "AWS_PROFILE": "", "S3_ENDPOINT": cls.remote.url + "/s3"}
        cls.c = Cluster(cls.tmp, proxies=1, targets=2, name="local", env=env).start()
        wait_until(lambda: len(cls.c.smap()["tmap"]) == 2, 30, what="2 targets")
        cls.url = cls.c.url

    @classmethod
    def tearDownClass(cls):
        try:
            cls.c.stop()
        finally:  # (a sanitizer report raises from the first: the remote stops all the same)
            cls.remote.stop()
        if not os.environ.get("SHALE_KEEP_TMP"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    def cached(self):
        out = self.c.cli("ls", "s3://rbk", "--cached", "-H").stdout
        return sorted(l.split()[0] for l in out.splitlines() if l.strip())

    def test_evict_keep_md(self):
        self.c.cli("prefetch", "s3://rbk", "--template", "o{0..4}")
        self.assertTrue({"o0", "o1", "o2", "o3", "o4"} <= set(self.cached()))
        p = self.c.cli("evict", "s3://rbk", "--keep-md")
        self.assertRegex(p.stdout, r"Evicted every object of s3://rbk \(job \S+\); the bucket and its properties stay")
        self.assertEqual(self.cached(), [])
        self.assertEqual(requests.head(self.url + "/v1/buckets/rbk?provider=aws&dont_add_remote=true").status_code,
                         200)
        p = self.c.cli("evict", "s3://rbk", "--keep-md", "--prefix", "o", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("--keep-md", p.stderr)

    def test_blob_download(self):
        p = self.c.cli("object", "blob-download", "s3://rbk/big", "--chunk-size", "1MiB", "--num-workers", "2",
                       "--wait")
        self.assertIn("Downloaded s3://rbk/big", p.stdout)
        self.assertIn("big", self.cached())
        p = self.c.cli("blob-download", "s3://rbk/big", "--chunk-size", "lots", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("--chunk-size", p.stderr)
        p = self.c.cli("blob-download", "s3://rbk/big", "--progress", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("--wait", p.stderr)

    def test_prefetch_flags(self):
        self.rs3.put_object(Bucket="rbk", Key="pf/a", Body=b"a" * 5000)
        p = self.c.cli("prefetch", "s3://rbk", "--prefix", "pf/", "--blob-threshold", "1KiB", "--blob-chunk-size",
                       "64KiB", "--blob-num-workers", "2", "--progress")
        self.assertIn("Prefetched", p.stdout)
        self.assertIn("pf/a", self.cached())
        self.rs3.put_object(Bucket="rbk", Key="pf/a", Body=b"b" * 5000)
        self.c.cli("prefetch", "s3://rbk", "--prefix", "pf/", "--latest")
        r = requests.get(self.url + "/v1/objects/rbk/pf/a?provider=aws")
        self.assertEqual(r.content, b"b" * 5000)
        p = self.c.cli("prefetch", "s3://rbk", "--blob-threshold", "huge", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("--blob-threshold", p.stderr)

    def test_cp_latest_sync(self):
        self.rs3.put_object(Bucket="rbk", Key="cs/a", Body=b"1")
        self.rs3.put_object(Bucket="rbk", Key="cs/b", Body=b"1")
        self.c.cli("bucket", "cp", "s3://rbk", "ais://csdst", "--prefix", "cs/", "--wait")
        self.rs3.put_object(Bucket="rbk", Key="cs/a", Body=b"22")
        self.rs3.delete_object(Bucket="rbk", Key="cs/b")
        self.c.cli("bucket", "cp", "s3://rbk", "ais://csdst", "--prefix", "cs/", "--latest", "--wait")
        self.assertEqual(requests.get(self.url + "/v1/objects/csdst/cs/a").content, b"22")
        self.assertEqual(requests.head(self.url + "/v1/objects/csdst/cs/b", allow_redirects=True).status_code, 200)
        self.c.cli("bucket", "cp", "s3://rbk", "ais://csdst", "--prefix", "cs/", "--sync", "--wait")
        self.assertEqual(requests.head(self.url + "/v1/objects/csdst/cs/b", allow_redirects=True).status_code, 404)
        p = self.c.cli("cp", "s3://rbk/cs/a", "ais://csdst/x", "--latest", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("--latest", p.stderr)

    def test_inventory(self):
        self.rs3.put_object(Bucket="rbk", Key="inv/a", Body=b"a" * 100)
        self.rs3.put_object(Bucket="rbk", Key="inv/b", Body=b"b" * 200)
        p = self.c.cli("nbi", "create", "s3://rbk", "--inv-name", "snap1", "--prefix", "inv/", "--wait")
        self.assertIn("Created the inventory of s3://rbk", p.stdout)
        self.rs3.put_object(Bucket="rbk", Key="inv/c", Body=b"c")  # after the snapshot: not in it
        p = self.c.cli("ls", "s3://rbk", "--inventory", "--inv-name", "snap1", "-H")
        names = sorted(l.split()[0] for l in p.stdout.splitlines() if l.strip())
        self.assertEqual(names, ["inv/a", "inv/b"], p.stdout)
        p = self.c.cli("nbi", "show", "s3://rbk")
        self.assertRegex(p.stdout, r"(?m)^snap1\s+inv/\s+2\s")
        p = self.c.cli("ls", "s3://rbk", "--inv-name", "snap1", check=False)
        self.assertEqual(p.returncode, 1)
        self.assertIn("--inventory", p.stderr)
        p = self.c.cli("nbi", "rm", "s3://rbk", "--inv-name", "snap1")
        self.assertIn("Removed the inventory", p.stdout)
        p = self.c.cli("ls", "s3://rbk", "--inventory", check=False)
        self.assertNotEqual(p.returncode, 0)

    def test_inventory_of_versioned_remote(self):
        """the remote keeps S3 versions (older ones, a delete marker): the inventory has the current objects
        only, as a listing does"""
        self.rs3.create_bucket(Bucket="rvb")
        self.rs3.put_bucket_versioning(Bucket="rvb", VersioningConfiguration={"Status": "Enabled"})
        for n in range(3):
            self.rs3.put_object(Bucket="rvb", Key="a", Body=b"a" * (n + 1))
        self.rs3.put_object(Bucket="rvb", Key="b", Body=b"b")
        self.rs3.delete_object(Bucket="rvb", Key="b")
        self.c.cli("nbi", "create", "s3://rvb", "--inv-name", "v1", "--wait")
        p = self.c.cli("ls", "s3://rvb", "--inventory", "-H")
        self.assertEqual([l.split()[0] for l in p.stdout.splitlines() if l.strip()], ["a"], repr(p.stdout))
        p = self.c.cli("nbi", "show", "s3://rvb")
        self.assertRegex(p.stdout, r"(?m)^v1\s+\S*\s*1\s", p.stdout)


if __name__ == "__main__":
    main()
