#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""S3 bucket lifecycle (issue 39) against a real cluster of 1 gateway and 2 targets: PUT/GET/DELETE ?lifecycle
with boto3, raw XML and the aws CLI (S3's checks and error codes, nothing stored on a bad one), and job lifecycle
applying it: rules by prefix, by tag, by size, by age (Days) and by Date expire exactly the objects they match
(not those of other buckets, not with a Disabled rule), old multipart uploads are aborted, the job shows in
`job ls`, and the configuration survives a restart of every node.

The nodes run with SHALE_TEST_CLOCK=1, which lets the test set lifecycle.debug_days_offset (the test clock:
"now" that many days later for the job). Signature verification is off (the default); raw requests are unsigned.
"""
import json
import os
import re
import subprocess
import time
import unittest

from harness import main, s3_client, S3Checks, start_cluster, stop_cluster, wait_until


AWS = "/usr/bin/aws"
AK, SK = "shale-test-key", "shale-test-secret"
DAY = 86400


def rule(rid, filt, status="Enabled", **actions):
    r = {"ID": rid, "Status": status, "Filter": filt}
    r.update(actions)
    return r


class S3LifecycleTest(S3Checks, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        start_cluster(cls, targets=2, env={"SHALE_TEST_CLOCK": "1"})
        cls.ep = cls.url + "/s3"
        cls.s3 = s3_client(cls.ep)
        cfg = os.path.join(cls.tmp, "aws-config")
        with open(cfg, "w") as f:
            f.write("[default]\nregion = us-east-1\ns3 =\n    addressing_style = path\n")
        cls.env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        cls.env.update(AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_DEFAULT_REGION="us-east-1",
                       AWS_CONFIG_FILE=cfg, AWS_SHARED_CREDENTIALS_FILE=os.path.join(cls.tmp, "none"),
                       AWS_EC2_METADATA_DISABLED="true", AWS_PAGER="", HOME=cls.tmp)

    @classmethod
    def tearDownClass(cls):
        stop_cluster(cls)

    def keys(self, b):
        return sorted(o["Key"] for o in self.s3.list_objects_v2(Bucket=b).get("Contents", []))

    def set_offset(self, days):
        self.c.cli("config", "cluster", "lifecycle.debug_days_offset=%d" % days)

    def run_job(self, *buckets):
        p = self.c.cli("job", "start", "lifecycle", *["ais://" + b for b in buckets], "--wait", timeout=120)
        self.assertRegex(p.stdout, r"lifecycle\[\S+\] finished", p.stdout + p.stderr)

    # ---- the configuration ------------------------------------------------------------------------------------

    def test_put_get_delete(self):
        b = self.bucket("lc-conf")
        self.client_err(lambda: self.s3.get_bucket_lifecycle_configuration(Bucket=b), 404,
                        "NoSuchLifecycleConfiguration")
        rules = [
            rule("logs", {"Prefix": "logs/"}, Expiration={"Days": 30}),
            rule("tmp", {"Tag": {"Key": "class", "Value": "tmp"}}, Expiration={"Days": 7}),
            rule("big", {"And": {"Prefix": "b/", "Tags": [{"Key": "a", "Value": "1"}], "ObjectSizeGreaterThan": 10,
                                 "ObjectSizeLessThan": 1000}}, status="Disabled",
                 Expiration={"Date": "2030-01-01T00:00:00Z"}),
            rule("mpu", {"Prefix": ""}, AbortIncompleteMultipartUpload={"DaysAfterInitiation": 3},
                 NoncurrentVersionExpiration={"NoncurrentDays": 5}),
            rule("dm", {"ObjectSizeGreaterThan": 5}, Expiration={"ExpiredObjectDeleteMarker": True}),
        ]
        r = self.s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": rules})
        self.assertEqual(r["ResponseMetadata"]["HTTPStatusCode"], 200)
        got = self.s3.get_bucket_lifecycle_configuration(Bucket=b)["Rules"]
        self.assertEqual([g["ID"] for g in got], ["logs", "tmp", "big", "mpu", "dm"])
        self.assertEqual(got[0]["Filter"], {"Prefix": "logs/"})
        self.assertEqual(got[0]["Expiration"], {"Days": 30})
        self.assertEqual(got[1]["Filter"], {"Tag": {"Key": "class", "Value": "tmp"}})
        self.assertEqual(got[2]["Status"], "Disabled")
        self.assertEqual(got[2]["Filter"]["And"]["Tags"], [{"Key": "a", "Value": "1"}])
        self.assertEqual((got[2]["Filter"]["And"]["ObjectSizeGreaterThan"], got[2]["Filter"]["And"]["Prefix"]),
                         (10, "b/"))
        self.assertEqual(got[2]["Expiration"]["Date"].strftime("%Y-%m-%d %H:%M"), "2030-01-01 00:00")
        self.assertEqual(got[3]["AbortIncompleteMultipartUpload"], {"DaysAfterInitiation": 3})
        self.assertEqual(got[3]["NoncurrentVersionExpiration"]["NoncurrentDays"], 5)
        self.assertEqual(got[4]["Expiration"], {"ExpiredObjectDeleteMarker": True})
        # the bucket's props carry it (native API)
        p = self.s.head(self.url + "/v1/buckets/" + b, params={"provider": "ais"})
        self.assertEqual(p.status_code, 200)
        lc = json.loads(json.loads(p.headers["Ais-Bucket-Props"])["lifecycle"])
        self.assertEqual(lc["rules"][0]["filter"]["prefix"], "logs/")
        # a rule without an ID gets one
        self.s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
            {"Status": "Enabled", "Filter": {}, "Expiration": {"Days": 1}}]})
        got = self.s3.get_bucket_lifecycle_configuration(Bucket=b)["Rules"]
        self.assertEqual(len(got), 1)
        self.assertTrue(got[0]["ID"])
        r = self.s3.delete_bucket_lifecycle(Bucket=b)
        self.assertEqual(r["ResponseMetadata"]["HTTPStatusCode"], 204)
        self.client_err(lambda: self.s3.get_bucket_lifecycle_configuration(Bucket=b), 404,
                        "NoSuchLifecycleConfiguration")
        # no bucket: 404, and none made
        self.client_err(lambda: self.s3.put_bucket_lifecycle_configuration(
            Bucket="lc-none", LifecycleConfiguration={"Rules": rules[:1]}), 404, "NoSuchBucket")
        self.client_err(lambda: self.s3.head_bucket(Bucket="lc-none"), 404, "404")

    def test_bad_configurations(self):
        b = self.bucket("lc-bad")
        good = [rule("keep", {"Prefix": "k/"}, Expiration={"Days": 9})]
        self.s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": good})
        url = self.ep + "/" + b + "?lifecycle"

        def xml(rules):
            return ('<LifecycleConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">%s'
                    '</LifecycleConfiguration>' % rules)
        r1 = "<Rule><ID>%s</ID><Filter><Prefix>p/</Prefix></Filter><Status>Enabled</Status>%s</Rule>"
        cases = [
            ("<LifecycleConfiguration><Rule>", 400, "MalformedXML"),
            (xml(""), 400, "MalformedXML"),
            (xml(r1 % ("a", "<Expiration><Days>x</Days></Expiration>")), 400, "MalformedXML"),
            (xml(r1 % ("a", "<Expiration><Days>1</Days><Date>2030-01-01T00:00:00Z</Date></Expiration>")), 400,
             "MalformedXML"),
            (xml("<Rule><ID>a</ID><Filter><Prefix>p</Prefix></Filter><Status>On</Status>"
                 "<Expiration><Days>1</Days></Expiration></Rule>"), 400, "MalformedXML"),
            (xml("<Rule><ID>a</ID><Filter><Prefix>p</Prefix><Tag><Key>k</Key><Value>v</Value></Tag></Filter>"
                 "<Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>"), 400, "MalformedXML"),
            (xml("<Rule><ID>a</ID><Status>Enabled</Status><Expiration><Days>1</Days></Expiration></Rule>"), 400,
             "MalformedXML"),
            (xml(r1 % ("a", "<Expiration><Days>0</Days></Expiration>")), 400, "InvalidArgument"),
            (xml(r1 % ("a", "<Expiration><Date>2030-01-01T10:00:00Z</Date></Expiration>")), 400,
             "InvalidArgument"),
            (xml(r1 % ("a", "<Expiration><Days>1</Days></Expiration>") * 2), 400, "InvalidArgument"),
            (xml(r1 % ("a", "")), 400, "InvalidRequest"),
            (xml("<Rule><ID>a</ID><Filter><Tag><Key>k</Key><Value>v</Value></Tag></Filter><Status>Enabled</Status>"
                 "<AbortIncompleteMultipartUpload><DaysAfterInitiation>1</DaysAfterInitiation>"
                 "</AbortIncompleteMultipartUpload></Rule>"), 400, "InvalidRequest"),
            (xml("".join(r1 % ("r%d" % i, "<Expiration><Days>1</Days></Expiration>") for i in range(1001))), 400,
             "InvalidArgument"),
            (xml(r1 % ("a", "<Transition><Days>1</Days><StorageClass>GLACIER</StorageClass></Transition>")), 501,
             "NotImplemented"),
        ]
        for body, status, code in cases:
            r = self.s.put(url, data=body.encode())
            self.assertEqual(r.status_code, status, (body[:200], r.text))
            self.assertIn("<Code>%s</Code>" % code, r.text, body[:200])
        # nothing was stored by any of them
        got = self.s3.get_bucket_lifecycle_configuration(Bucket=b)["Rules"]
        self.assertEqual([(g["ID"], g["Filter"], g["Expiration"]) for g in got], [("keep", {"Prefix": "k/"},
                                                                                  {"Days": 9})])
        # 1000 rules are S3's most
        r = self.s.put(url, data=xml("".join(r1 % ("r%d" % i, "<Expiration><Days>1</Days></Expiration>")
                                             for i in range(1000))).encode())
        self.assertEqual(r.status_code, 200, r.text[:300])
        self.assertEqual(len(self.s3.get_bucket_lifecycle_configuration(Bucket=b)["Rules"]), 1000)
        # the native API refuses a prop that is not a configuration
        r = self.s.patch(self.url + "/v1/buckets/" + b, params={"provider": "ais"},
                         json={"action": "set-bprops", "value": {"lifecycle": "not json"}})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("lifecycle", r.text)

    def test_cli_lifecycle(self):
        b = self.bucket("lc-cli")
        run = lambda *a: subprocess.run([AWS, "--endpoint-url", self.ep, "s3api"] + list(a), env=self.env,  # noqa
                                        capture_output=True, text=True, timeout=60)
        conf = {"Rules": [{"ID": "cli", "Status": "Enabled", "Filter": {"Prefix": "tmp/"},
                           "Expiration": {"Days": 2}}]}
        p = run("put-bucket-lifecycle-configuration", "--bucket", b, "--lifecycle-configuration", json.dumps(conf))
        self.assertEqual(p.returncode, 0, p.stderr)
        p = run("get-bucket-lifecycle-configuration", "--bucket", b)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(json.loads(p.stdout)["Rules"], conf["Rules"])
        p = run("put-bucket-lifecycle-configuration", "--bucket", b, "--lifecycle-configuration",
                json.dumps({"Rules": [{"ID": "x", "Status": "Enabled", "Filter": {"Prefix": ""},
                                       "Expiration": {"Days": -1}}]}))
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("InvalidArgument", p.stderr)
        p = run("delete-bucket-lifecycle", "--bucket", b)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = run("get-bucket-lifecycle-configuration", "--bucket", b)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("NoSuchLifecycleConfiguration", p.stderr)

    # ---- the job ---------------------------------------------------------------------------------------------

    def test_expiration_job(self):
        a, o, d, f = self.bucket("lc-a"), self.bucket("lc-other"), self.bucket("lc-date"), self.bucket("lc-far")
        put = lambda b, k, n=10, tags=None: self.s3.put_object(  # noqa: E731
            Bucket=b, Key=k, Body=b"x" * n, **({"Tagging": tags} if tags else {}))
        expect_gone, expect_kept = set(), set()
        for i in range(6):  # (over both targets)
            put(a, "logs/l%d" % i)
            expect_gone.add((a, "logs/l%d" % i))
            put(a, "data/t%d" % i, tags="class=tmp&x=%d" % i)
            expect_gone.add((a, "data/t%d" % i))
            put(a, "data/u%d" % i, tags="class=keep")
            put(a, "big/s%d" % i, n=100)        # too small for its rule
            put(a, "big/b%d" % i, n=5000)
            expect_gone.add((a, "big/b%d" % i))
            put(a, "keep/k%d" % i)              # its rule is Disabled
            put(a, "young/y%d" % i)             # 100 days
            put(o, "logs/l%d" % i)              # the same names in a bucket without rules
            put(d, "d/x%d" % i)
            expect_gone.add((d, "d/x%d" % i))
            put(d, "e/x%d" % i)
            put(f, "d/x%d" % i)                 # its Date is far off
        for b in (a, o, d, f):
            for k in self.keys(b):
                if (b, k) not in expect_gone:
                    expect_kept.add((b, k))
        self.s3.put_bucket_lifecycle_configuration(Bucket=a, LifecycleConfiguration={"Rules": [
            rule("logs", {"Prefix": "logs/"}, Expiration={"Days": 30}),
            rule("tmp", {"Tag": {"Key": "class", "Value": "tmp"}}, Expiration={"Days": 30}),
            rule("big", {"And": {"Prefix": "big/", "ObjectSizeGreaterThan": 1000}}, Expiration={"Days": 30}),
            rule("off", {"Prefix": "keep/"}, status="Disabled", Expiration={"Days": 1}),
            rule("young", {"Prefix": "young/"}, Expiration={"Days": 100}),
            rule("mpu", {"Prefix": "mp/"}, AbortIncompleteMultipartUpload={"DaysAfterInitiation": 7}),
        ]})
        midnight = (int(time.time()) // DAY + 10) * DAY
        iso = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(midnight))
        self.s3.put_bucket_lifecycle_configuration(Bucket=d, LifecycleConfiguration={"Rules": [
            rule("date", {"Prefix": "d/"}, Expiration={"Date": iso})]})
        self.s3.put_bucket_lifecycle_configuration(Bucket=f, LifecycleConfiguration={"Rules": [
            rule("far", {"Prefix": "d/"}, Expiration={"Date": "2100-01-01T00:00:00Z"})]})
        # multipart uploads: one under mp/ (aborted), one elsewhere (kept)
        ups = {}
        for k in ("mp/one", "mp/two", "other/three"):
            u = self.s3.create_multipart_upload(Bucket=a, Key=k)["UploadId"]
            self.s3.upload_part(Bucket=a, Key=k, UploadId=u, PartNumber=1, Body=b"p" * 1000)
            ups[k] = u
        uploads = lambda: sorted(x["Key"] for x in self.s3.list_multipart_uploads(Bucket=a).get("Uploads", []))  # noqa
        self.assertEqual(uploads(), ["mp/one", "mp/two", "other/three"])

        def state():
            return {(b, k) for b in (a, o, d, f) for k in self.keys(b)}
        everything = expect_gone | expect_kept
        self.assertEqual(state(), everything)
        # today nothing is old enough, and the Date is 10 days off
        self.set_offset(0)
        self.run_job()
        self.assertEqual(state(), everything)
        self.assertEqual(len(uploads()), 3)
        # 40 days later: exactly the matching objects go
        self.set_offset(40)
        try:
            self.run_job()
        finally:
            self.set_offset(0)
        self.assertEqual(state(), expect_kept)
        self.assertEqual(uploads(), ["other/three"])
        self.client_err(lambda: self.s3.complete_multipart_upload(
            Bucket=a, Key="mp/one", UploadId=ups["mp/one"],
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": "x"}]}), 404, "NoSuchUpload")
        # the job is in job ls, with what it deleted
        p = self.c.cli("job", "ls", "lifecycle", "--all")
        self.assertRegex(p.stdout, r"(?m)\slifecycle\s", p.stdout)
        p = self.c.cli("job", "ls", "lifecycle", "--all", "--json")
        self.assertIn("lifecycle", p.stdout)

    def test_version_actions(self):
        """NoncurrentVersionExpiration (NoncurrentDays counted from when a version was replaced, the
        NewerNoncurrentVersions newest kept) and ExpiredObjectDeleteMarker (a delete marker left alone for its
        key goes, also one left so by the same run) in a versioned bucket, over both targets; current objects
        and keys under no such rule keep every version"""
        b = self.bucket("lc-ver")
        self.s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
        vid = {}
        for i in range(4):  # (keys over both targets)
            for k in ("v/k%d" % i, "m/c%d" % i, "o/k%d" % i):
                vid[k] = [self.s3.put_object(Bucket=b, Key=k, Body=b"%s-%d" % (k.encode(), n))["VersionId"]
                          for n in range(4 if k.startswith(("v/", "o/")) else 2)]
            self.s3.put_object(Bucket=b, Key="v/d%d" % i, Body=b"d")
            self.s3.put_object(Bucket=b, Key="v/d%d" % i, Body=b"dd")
            self.s3.delete_object(Bucket=b, Key="v/d%d" % i)  # a marker over 2 versions
            self.s3.put_object(Bucket=b, Key="m/a%d" % i, Body=b"a")
            self.s3.delete_object(Bucket=b, Key="m/a%d" % i)  # a marker over 1 version
            self.s3.delete_object(Bucket=b, Key="m/b%d" % i)  # a marker alone
            self.s3.delete_object(Bucket=b, Key="v/b%d" % i)  # a marker alone, no such rule on it
        self.s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
            rule("v", {"Prefix": "v/"}, NoncurrentVersionExpiration={"NoncurrentDays": 10,
                                                                    "NewerNoncurrentVersions": 1}),
            rule("m", {"Prefix": "m/"}, Expiration={"ExpiredObjectDeleteMarker": True},
                 NoncurrentVersionExpiration={"NoncurrentDays": 1}),
        ]})

        def state():
            got, pages = set(), self.s3.get_paginator("list_object_versions").paginate(Bucket=b)
            for pg in pages:
                got |= {(v["Key"], v["VersionId"], v["IsLatest"]) for v in pg.get("Versions", [])}
                got |= {(m["Key"], "marker", m["IsLatest"]) for m in pg.get("DeleteMarkers", [])}
            return got
        before = state()
        self.assertEqual(len(before), 4 * (4 + 2 + 4 + 3 + 2 + 1 + 1))
        self.set_offset(5)  # v/: not yet 10 days; m/: past 1 day
        try:
            self.run_job(b)
        finally:
            self.set_offset(0)
        after5 = state()
        for i in range(4):
            self.assertTrue({("v/k%d" % i, v, v == vid["v/k%d" % i][-1]) for v in vid["v/k%d" % i]} <= after5)
            self.assertEqual({x for x in after5 if x[0] == "m/c%d" % i}, {("m/c%d" % i, vid["m/c%d" % i][1], True)})
            self.assertFalse({x for x in after5 if x[0] in ("m/a%d" % i, "m/b%d" % i)})  # version, then marker
            self.assertIn(("v/b%d" % i, "marker", True), after5)
        self.set_offset(20)
        try:
            self.run_job(b)
        finally:
            self.set_offset(0)
        after = state()
        for i in range(4):
            k = "v/k%d" % i  # the current one and the newest noncurrent one stay
            self.assertEqual({x for x in after if x[0] == k}, {(k, vid[k][3], True), (k, vid[k][2], False)})
            d = sorted(x[1:] for x in after if x[0] == "v/d%d" % i)  # the marker and its newest version
            self.assertEqual(len(d), 2, d)
            self.assertIn(("marker", True), d)
            k = "o/k%d" % i  # under no rule: every version
            self.assertEqual({x[1] for x in after if x[0] == k}, set(vid[k]))
            self.assertIn(("v/b%d" % i, "marker", True), after)
            self.assertEqual(self.s3.get_object(Bucket=b, Key="v/k%d" % i)["Body"].read(), b"v/k%d-3" % i)
        self.assertEqual(self.s3.get_object(Bucket=b, Key="v/k0", VersionId=vid["v/k0"][2])["Body"].read(),
                         b"v/k0-2")
        self.client_err(lambda: self.s3.get_object(Bucket=b, Key="v/k0", VersionId=vid["v/k0"][0]), 404,
                        "NoSuchVersion")
        p = self.c.cli("job", "ls", "lifecycle", "--all")
        self.assertEqual(p.returncode, 0)

    def test_expiration_in_versioned_bucket(self):
        """Expiration of a current object in a versioned bucket writes a delete marker, as S3: the object
        becomes noncurrent (readable by its id), a second run adds no marker over the marker, and a
        NoncurrentVersionExpiration removes the versions later, counted from the marker; Suspended: a null
        marker replaces the null version"""
        b = self.bucket("lc-vexp")
        self.s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
        vid = {}
        for i in range(6):  # (keys over both targets)
            k = "e/k%d" % i
            vid[k] = [self.s3.put_object(Bucket=b, Key=k, Body=b"%s-%d" % (k.encode(), n))["VersionId"]
                      for n in range(2)]
        self.s3.put_object(Bucket=b, Key="keep/x", Body=b"x")
        self.s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
            rule("e", {"Prefix": "e/"}, Expiration={"Days": 30})]})

        def state():
            got, pages = set(), self.s3.get_paginator("list_object_versions").paginate(Bucket=b)
            for pg in pages:
                got |= {(v["Key"], v["VersionId"], v["IsLatest"]) for v in pg.get("Versions", [])}
                got |= {(m["Key"], "marker", m["IsLatest"]) for m in pg.get("DeleteMarkers", [])}
            return got
        want = set()
        for k, vs in vid.items():
            want |= {(k, "marker", True), (k, vs[0], False), (k, vs[1], False)}
        for _ in range(2):  # (the second run finds no current object to expire)
            self.set_offset(40)
            try:
                self.run_job(b)
            finally:
                self.set_offset(0)
            got = state()
            self.assertEqual({x for x in got if x[0].startswith("e/")}, want)
            self.assertEqual(len([x for x in got if x[0] == "keep/x"]), 1)
        self.assertEqual(self.keys(b), ["keep/x"])
        for k, vs in vid.items():
            self.client_err(lambda: self.s3.get_object(Bucket=b, Key=k), 404, "NoSuchKey")
            self.assertEqual(self.s3.get_object(Bucket=b, Key=k, VersionId=vs[1])["Body"].read(), k.encode() + b"-1")
        # the versions expire as noncurrent ones, from the marker's time on; the lone markers stay
        self.s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
            rule("e", {"Prefix": "e/"}, Expiration={"Days": 30}, NoncurrentVersionExpiration={"NoncurrentDays": 10})]})
        self.set_offset(5)
        try:
            self.run_job(b)
        finally:
            self.set_offset(0)
        self.assertEqual({x for x in state() if x[0].startswith("e/")}, want)
        self.set_offset(20)
        try:
            self.run_job(b)
        finally:
            self.set_offset(0)
        self.assertEqual({x for x in state() if x[0].startswith("e/")}, {(k, "marker", True) for k in vid})
        # Suspended: the expired null version goes, a null marker in its place; a version with an id stays
        s = self.bucket("lc-vsusp")
        self.s3.put_bucket_versioning(Bucket=s, VersioningConfiguration={"Status": "Enabled"})
        v1 = self.s3.put_object(Bucket=s, Key="n", Body=b"with id")["VersionId"]
        self.s3.put_bucket_versioning(Bucket=s, VersioningConfiguration={"Status": "Suspended"})
        self.s3.put_object(Bucket=s, Key="n", Body=b"null one")
        self.s3.put_bucket_lifecycle_configuration(Bucket=s, LifecycleConfiguration={"Rules": [
            rule("all", {}, Expiration={"Days": 30})]})
        self.set_offset(40)
        try:
            self.run_job(s)
        finally:
            self.set_offset(0)
        vs = self.s3.list_object_versions(Bucket=s)
        self.assertEqual([(m["VersionId"], m["IsLatest"]) for m in vs.get("DeleteMarkers", [])], [("null", True)])
        self.assertEqual([(v["VersionId"], v["IsLatest"]) for v in vs.get("Versions", [])], [(v1, False)])
        self.assertEqual(self.s3.get_object(Bucket=s, Key="n", VersionId=v1)["Body"].read(), b"with id")

    def test_job_start_and_interval(self):
        # on demand through the API, for one bucket
        b = self.bucket("lc-api")
        r = self.s.put(self.url + "/v1/cluster", json={"action": "start", "value": {"kind": "lifecycle",
                                                                                     "Bck": {"name": b}}})
        self.assertEqual(r.status_code, 200, r.text)
        jid = r.text.strip()
        p = self.c.cli("job", "wait", jid, "--timeout", "60s")
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.c.cli("job", "start", "lifecycle", "ais://lc-nosuch", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("lc-nosuch", p.stderr)
        # lifecycle.interval: validated, and used (each target starts a run by itself)
        p = self.c.cli("config", "cluster", "lifecycle.interval=500ms", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("lifecycle.interval", p.stderr)
        p = self.c.cli("config", "cluster", "lifecycle.debug_days_offset=-3", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("lifecycle.debug_days_offset", p.stderr)
        count = lambda: len(re.findall(r"(?m)\slifecycle\s", self.c.cli("job", "ls", "lifecycle", "--all").stdout))  # noqa
        before = count()
        self.c.cli("config", "cluster", "lifecycle.interval=1s")
        try:
            wait_until(lambda: count() >= before + 2, 30, interval=0.5, what="runs started by the targets")
        finally:
            self.c.cli("config", "cluster", "lifecycle.interval=1h")
        self.assertTrue(any("started by the target itself (lifecycle.interval)" in self.c.log(n)
                            for n in ("t0", "t1")))

    def test_zz_restart(self):
        """the configuration is in the bucket's props: every node restarted, it is still there, and applied"""
        b = self.bucket("lc-restart")
        self.s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
            rule("r", {"Prefix": "old/"}, Expiration={"Days": 3})]})
        self.s3.put_object(Bucket=b, Key="old/a", Body=b"1")
        self.s3.put_object(Bucket=b, Key="new/a", Body=b"1")
        self.c.cli("playground", "stop", "--dir", self.c.dir)
        self.c.cli("playground", "start", "--dir", self.c.dir)
        wait_until(lambda: len(self.c.smap()["tmap"]) == 2, 30, what="2 targets back")
        got = wait_until(lambda: self.s3.get_bucket_lifecycle_configuration(Bucket=b)["Rules"], 30,
                         what="the configuration after the restart")
        self.assertEqual([(g["ID"], g["Filter"], g["Expiration"]) for g in got], [("r", {"Prefix": "old/"},
                                                                                  {"Days": 3})])
        self.set_offset(5)
        try:
            self.run_job(b)
        finally:
            self.set_offset(0)
        self.assertEqual(self.keys(b), ["new/a"])


if __name__ == "__main__":
    main()
