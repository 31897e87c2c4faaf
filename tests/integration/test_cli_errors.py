# SPDX-License-Identifier: MIT
"""The CLI's errors in the user's terms, against a gateway and 2 targets: get-batch says its prefix once and
names the flag (--cont-on-err), not the request's JSON field; `ml get-batch ais://B/SHARD.tar/MEMBER` is the
shard's member (it was taken as an object name); an unreadable AIS_CLIENT_CA is reported as such (it said "is
the cluster running?")."""
import io
import os
import subprocess
import tarfile
import tempfile

from harness import ClusterTest, SHALE, main


class TestCLIErrors(ClusterTest):
    def shale(self, *args, env=None):
        e = dict(os.environ, AIS_ENDPOINT=self.url)
        e.update(env or {})
        return subprocess.run([SHALE] + list(args), capture_output=True, text=True, env=e, timeout=60)

    def test_get_batch(self):
        self.assertEqual(self.s.post(self.url + "/v1/buckets/gb", json={"action": "create-bck"}).status_code, 200)
        bio = io.BytesIO()
        with tarfile.open(fileobj=bio, mode="w") as t:
            for n, d in (("s1.jpg", b"abc"), ("s2.cls", b"7")):
                ti = tarfile.TarInfo(n)
                ti.size = len(d)
                t.addfile(ti, io.BytesIO(d))
        self.assertEqual(self.s.put(self.url + "/v1/objects/gb/shard.tar", data=bio.getvalue()).status_code, 200)
        out = os.path.join(tempfile.mkdtemp(prefix="shale-clierr-"), "b.tar")
        p = self.shale("ml", "get-batch", "ais://gb/missing", out)
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stderr.count("get-batch:"), 1, p.stderr)
        self.assertIn("add --cont-on-err", p.stderr)
        self.assertNotIn('"coer"', p.stderr)
        p = self.shale("ml", "get-batch", "ais://gb/shard.tar/s2.cls", "ais://gb/shard.tar/s1.jpg", out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with tarfile.open(out) as t:
            got = [(m.name, t.extractfile(m).read()) for m in t.getmembers()]
        self.assertEqual([d for _, d in got], [b"7", b"abc"], got)

    def test_etl_cut_off_mid_shard(self):
        """an inline sample-mode ETL that fails at the 150th sample, after the answer began: the CLI says the
        transform failed and where to look (it said curl's "Transferred a partial file")"""
        self.assertEqual(self.s.post(self.url + "/v1/buckets/ec", json={"action": "create-bck"}).status_code, 200)
        bio = io.BytesIO()
        with tarfile.open(fileobj=bio, mode="w") as t:
            for i in range(200):
                d = os.urandom(20000)
                ti = tarfile.TarInfo("s%03d.bin" % i)
                ti.size = len(d)
                t.addfile(ti, io.BytesIO(d))
        self.assertEqual(self.s.put(self.url + "/v1/objects/ec/big.tar", data=bio.getvalue()).status_code, 200)
        code = ("function transform_sample(s)\n  if s.__key__ == 's150' then error('bad sample') end\n"
                "  return s\nend\n")
        r = self.s.put(self.url + "/v1/etl", json={"name": "cut-off", "runtime": "lua", "code": code, "mode": "sample"})
        self.assertEqual(r.status_code, 200, r.text)
        out = os.path.join(tempfile.mkdtemp(prefix="shale-clierr-"), "o.tar")
        p = self.shale("object", "get", "ais://ec/big.tar", out, "--etl-name", "cut-off")
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn("the transform cut-off failed mid-object (`shale etl show errors cut-off` says why)", p.stderr)
        self.assertNotIn("Transferred a partial file", p.stderr)

    def test_wait_shows_progress_and_a_summary(self):
        """--wait --progress on a long job: lines of objects, bytes and rate (it printed dots), then what each
        node did and the total (it printed "finished" only)"""
        self.assertEqual(self.s.post(self.url + "/v1/buckets/mv1", json={"action": "create-bck"}).status_code, 200)
        for i in range(30):
            self.assertEqual(self.s.put(self.url + "/v1/objects/mv1/o%02d" % i, data=b"x" * 1000).status_code, 200)
        p = self.shale("bucket", "mv", "ais://mv1", "ais://mv2", "--wait", "--progress")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stderr, r"move-bck\[\S+\]  \d+ objects  [0-9.]+\s*[KM]?i?B", p.stderr)
        self.assertNotIn("...", p.stderr)
        self.assertRegex(p.stdout, r"Job move-bck\[\S+\] finished in [0-9.]+s")
        self.assertRegex(p.stdout, r"(?m)^NODE\s+OBJECTS\s+BYTES\s+ERRORS$")
        self.assertRegex(p.stdout, r"(?m)^TOTAL\s+30\s", p.stdout)

    def test_unreadable_ca(self):
        p = self.shale("ls", "ais://gb", env={"AIS_ENDPOINT": self.url.replace("http://", "https://"),
                                             "AIS_CLIENT_CA": "/nonexistent/ca.pem"})
        self.assertEqual(p.returncode, 1)
        self.assertIn("AIS_CLIENT_CA=/nonexistent/ca.pem: no such readable file", p.stderr)
        self.assertNotIn("is the cluster running", p.stderr)


if __name__ == "__main__":
    main()
