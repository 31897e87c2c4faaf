#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""S3 Object Lock (issue 39) against a real cluster of 1 gateway and 2 targets, with boto3 and the aws CLI: a
bucket made with x-amz-bucket-object-lock-enabled (versioning Enabled, never suspended), Get/PutObjectLock-
Configuration with a default retention applied to new versions, Get/PutObjectRetention and Get/PutObjectLegalHold
(by versionId too), a locked version that no DELETE can remove (S3 by versionId, DeleteObjects, the native API),
COMPLIANCE never shortened, GOVERNANCE with x-amz-bypass-governance-retention, a retention date that passes,
bad XML and dates refused, and all of it kept over a restart of every node.

Signature verification is off in this cluster (the default).
"""
import datetime
import json
import os
import subprocess
import time
import unittest
from urllib.parse import quote

from harness import main, s3_client, S3Checks, start_cluster, stop_cluster, wait_until

from botocore.exceptions import ClientError

AWS = "/usr/bin/aws"
AK, SK = "shale-test-key", "shale-test-secret"


def ahead(seconds):
    return datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds)


class S3LockTest(S3Checks, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        start_cluster(cls, targets=2)
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

    def aws(self, *args, check=True):
        p = subprocess.run([AWS, "--endpoint-url", self.ep, "s3api"] + list(args), capture_output=True, text=True,
                           env=self.env, timeout=60)
        if check:
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        return p

    def lbucket(self, name):
        self.s3.create_bucket(Bucket=name, ObjectLockEnabledForBucket=True)
        return name

    def native_delete(self, b, k, **params):
        return self.s.delete(self.url + "/v1/objects/%s/%s" % (b, quote(k)), params=dict(provider="ais", **params),
                             timeout=30)

    # ---- the bucket ------------------------------------------------------------------------------------------

    def test_bucket_config(self):
        b = self.lbucket("lk-cfg")
        self.assertEqual(self.s3.get_bucket_versioning(Bucket=b)["Status"], "Enabled")
        c = self.s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]
        self.assertEqual(c, {"ObjectLockEnabled": "Enabled"})
        self.s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Days": 2}}})
        c = self.s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]
        self.assertEqual(c["Rule"]["DefaultRetention"], {"Mode": "GOVERNANCE", "Days": 2})
        # the aws CLI sees the same
        p = self.aws("get-object-lock-configuration", "--bucket", b)
        self.assertEqual(json.loads(p.stdout)["ObjectLockConfiguration"]["Rule"]["DefaultRetention"]["Days"], 2)
        # versioning cannot be suspended on a locked bucket
        self.client_err(lambda: self.s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={
            "Status": "Suspended"}), 409, "InvalidBucketState")
        self.assertEqual(self.s3.get_bucket_versioning(Bucket=b)["Status"], "Enabled")
        # bad rules: nothing changed
        for rule in ({"Mode": "FOREVER", "Days": 1}, {"Mode": "COMPLIANCE", "Days": 1, "Years": 1},
                     {"Mode": "COMPLIANCE", "Days": 0}):
            self.client_err(lambda: self.s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration={
                "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": rule}}), 400, "MalformedXML")
        c = self.s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]
        self.assertEqual(c["Rule"]["DefaultRetention"], {"Mode": "GOVERNANCE", "Days": 2})
        r = self.s.put(self.ep + "/" + b + "?object-lock", data=b"<ObjectLockConfiguration>", timeout=10)
        self.assertEqual(r.status_code, 400, r.text)
        # a bucket without: 404; PUT ?object-lock needs versioning Enabled first (then turns lock on)
        self.s3.create_bucket(Bucket="lk-none")
        self.client_err(lambda: self.s3.get_object_lock_configuration(Bucket="lk-none"), 404,
                        "ObjectLockConfigurationNotFoundError")
        cfg = {"ObjectLockEnabled": "Enabled"}
        self.client_err(lambda: self.s3.put_object_lock_configuration(Bucket="lk-none", ObjectLockConfiguration=cfg),
                        409, "InvalidBucketState")
        self.s3.put_bucket_versioning(Bucket="lk-none", VersioningConfiguration={"Status": "Enabled"})
        self.s3.put_object_lock_configuration(Bucket="lk-none", ObjectLockConfiguration=cfg)
        self.assertEqual(self.s3.get_object_lock_configuration(Bucket="lk-none")["ObjectLockConfiguration"], cfg)
        # the native API cannot take the lock away either
        r = self.s.patch(self.url + "/v1/buckets/" + b, json={"action": "set-bprops", "value": {"s3_lock": ""}},
                         timeout=10)
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("s3_lock", r.text)

    # ---- a version's retention -------------------------------------------------------------------------------

    def test_compliance(self):
        b = self.lbucket("lk-comp")
        until = ahead(3600).replace(microsecond=0)
        v = self.s3.put_object(Bucket=b, Key="k", Body=b"worm", ObjectLockMode="COMPLIANCE",
                               ObjectLockRetainUntilDate=until)["VersionId"]
        h = self.s3.head_object(Bucket=b, Key="k")
        self.assertEqual(h["ObjectLockMode"], "COMPLIANCE")
        self.assertEqual(h["ObjectLockRetainUntilDate"], until)
        r = self.s3.get_object_retention(Bucket=b, Key="k", VersionId=v)["Retention"]
        self.assertEqual((r["Mode"], r["RetainUntilDate"]), ("COMPLIANCE", until))
        # no one deletes it: not by versionId, not with the bypass, not by DeleteObjects
        self.client_err(lambda: self.s3.delete_object(Bucket=b, Key="k", VersionId=v), 403, "AccessDenied")
        self.client_err(lambda: self.s3.delete_object(Bucket=b, Key="k", VersionId=v, BypassGovernanceRetention=True),
                        403, "AccessDenied")
        d = self.s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "k", "VersionId": v}]},
                                   BypassGovernanceRetention=True)
        self.assertEqual([e["Code"] for e in d.get("Errors", [])], ["AccessDenied"], d)
        # ...nor by the native API
        r = self.native_delete(b, "k")
        self.assertEqual(r.status_code, 403, r.text)
        self.assertIn("COMPLIANCE", r.text)
        # never shortened, never removed; lengthened, yes
        for ret in ({"Mode": "COMPLIANCE", "RetainUntilDate": ahead(60)},
                    {"Mode": "GOVERNANCE", "RetainUntilDate": ahead(7200)}):
            self.client_err(lambda: self.s3.put_object_retention(Bucket=b, Key="k", VersionId=v, Retention=ret,
                                                                 BypassGovernanceRetention=True), 403, "AccessDenied")
        later = ahead(7200).replace(microsecond=0)
        self.aws("put-object-retention", "--bucket", b, "--key", "k", "--version-id", v, "--retention",
                 "Mode=COMPLIANCE,RetainUntilDate=%s" % later.strftime("%Y-%m-%dT%H:%M:%SZ"))
        self.assertEqual(self.s3.get_object_retention(Bucket=b, Key="k")["Retention"]["RetainUntilDate"], later)
        # a plain DELETE writes a delete marker, as in S3; the version stays
        d = self.s3.delete_object(Bucket=b, Key="k")
        self.assertTrue(d["DeleteMarker"])
        self.assertEqual(self.s3.get_object(Bucket=b, Key="k", VersionId=v)["Body"].read(), b"worm")
        self.client_err(lambda: self.s3.delete_object(Bucket=b, Key="k", VersionId=v), 403, "AccessDenied")

    def test_governance_bypass(self):
        b = self.lbucket("lk-gov")
        v = self.s3.put_object(Bucket=b, Key="g", Body=b"1", ObjectLockMode="GOVERNANCE",
                               ObjectLockRetainUntilDate=ahead(3600))["VersionId"]
        self.client_err(lambda: self.s3.delete_object(Bucket=b, Key="g", VersionId=v), 403, "AccessDenied")
        self.client_err(lambda: self.s3.put_object_retention(Bucket=b, Key="g", Retention={
            "Mode": "GOVERNANCE", "RetainUntilDate": ahead(60)}), 403, "AccessDenied")
        self.s3.put_object_retention(Bucket=b, Key="g", Retention={"Mode": "GOVERNANCE", "RetainUntilDate": ahead(60)},
                                     BypassGovernanceRetention=True)
        self.s3.delete_object(Bucket=b, Key="g", VersionId=v, BypassGovernanceRetention=True)
        self.client_err(lambda: self.s3.head_object(Bucket=b, Key="g", VersionId=v), 404, "404")
        # DeleteObjects takes the bypass too
        v2 = self.s3.put_object(Bucket=b, Key="g2", Body=b"2", ObjectLockMode="GOVERNANCE",
                                ObjectLockRetainUntilDate=ahead(3600))["VersionId"]
        d = self.s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "g2", "VersionId": v2}]})
        self.assertEqual([e["Code"] for e in d.get("Errors", [])], ["AccessDenied"], d)
        d = self.s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "g2", "VersionId": v2}]},
                                   BypassGovernanceRetention=True)
        self.assertEqual(d.get("Errors", []), [], d)

    def test_legal_hold(self):
        b = self.lbucket("lk-hold")
        v = self.s3.put_object(Bucket=b, Key="h", Body=b"h", ObjectLockLegalHoldStatus="ON")["VersionId"]
        self.assertEqual(self.s3.get_object_legal_hold(Bucket=b, Key="h")["LegalHold"]["Status"], "ON")
        self.assertEqual(self.s3.head_object(Bucket=b, Key="h")["ObjectLockLegalHoldStatus"], "ON")
        self.client_err(lambda: self.s3.delete_object(Bucket=b, Key="h", VersionId=v, BypassGovernanceRetention=True),
                        403, "AccessDenied")
        self.assertEqual(self.native_delete(b, "h").status_code, 403)
        # the native API cannot lift it: a PATCH of the lock keys is refused, a PATCH replacing all custom
        # metadata keeps them (and the version's id), a PUT naming them is refused
        obj = self.url + "/v1/objects/%s/h" % b
        r = self.s.patch(obj, json={"action": "", "value": {"s3.lock.hold": "OFF"}}, timeout=30)
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("Shale's own", r.text)
        r = self.s.patch(obj, params={"set-new-custom": "true"}, json={"action": "", "value": {"k": "v"}},
                         timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.native_delete(b, "h").status_code, 403)
        self.assertEqual(self.s3.head_object(Bucket=b, Key="h")["VersionId"], v)
        r = self.s.put(self.url + "/v1/objects/%s/forged" % b, data=b"plain", timeout=30,
                       headers={"Ais-Custom-Md": "s3.sse=AES256"})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertEqual(self.s.head(self.url + "/v1/objects/%s/forged" % b, timeout=30,
                                    allow_redirects=True).status_code, 404)
        self.aws("put-object-legal-hold", "--bucket", b, "--key", "h", "--version-id", v, "--legal-hold",
                 "Status=OFF")
        p = self.aws("get-object-legal-hold", "--bucket", b, "--key", "h")
        self.assertEqual(json.loads(p.stdout)["LegalHold"]["Status"], "OFF")
        self.s3.delete_object(Bucket=b, Key="h", VersionId=v)
        # on again, on an existing version
        v = self.s3.put_object(Bucket=b, Key="h2", Body=b"x")["VersionId"]
        self.s3.put_object_legal_hold(Bucket=b, Key="h2", VersionId=v, LegalHold={"Status": "ON"})
        self.client_err(lambda: self.s3.delete_object(Bucket=b, Key="h2", VersionId=v), 403, "AccessDenied")
        self.client_err(lambda: self.s3.put_object_legal_hold(Bucket=b, Key="h2", LegalHold={"Status": "MAYBE"}),
                        400, "MalformedXML")

    def test_default_retention(self):
        b = self.lbucket("lk-dflt")
        self.s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "COMPLIANCE", "Days": 1}}})
        t0 = datetime.datetime.now(datetime.timezone.utc)
        v = self.s3.put_object(Bucket=b, Key="d", Body=b"d")["VersionId"]
        r = self.s3.get_object_retention(Bucket=b, Key="d")["Retention"]
        self.assertEqual(r["Mode"], "COMPLIANCE")
        self.assertLess(abs((r["RetainUntilDate"] - t0 - datetime.timedelta(days=1)).total_seconds()), 60)
        self.client_err(lambda: self.s3.delete_object(Bucket=b, Key="d", VersionId=v), 403, "AccessDenied")
        # a multipart upload's object too
        u = self.s3.create_multipart_upload(Bucket=b, Key="m")["UploadId"]
        e = self.s3.upload_part(Bucket=b, Key="m", UploadId=u, PartNumber=1, Body=b"p")["ETag"]
        self.s3.complete_multipart_upload(Bucket=b, Key="m", UploadId=u,
                                          MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
        self.assertEqual(self.s3.head_object(Bucket=b, Key="m")["ObjectLockMode"], "COMPLIANCE")

    def test_retention_passes(self):
        b = self.lbucket("lk-pass")
        v = self.s3.put_object(Bucket=b, Key="p", Body=b"p", ObjectLockMode="COMPLIANCE",
                               ObjectLockRetainUntilDate=ahead(3))["VersionId"]
        self.client_err(lambda: self.s3.delete_object(Bucket=b, Key="p", VersionId=v), 403, "AccessDenied")
        self.assertEqual(self.native_delete(b, "p").status_code, 403)
        deadline = time.time() + 15
        while True:
            try:
                self.s3.delete_object(Bucket=b, Key="p", VersionId=v)
                break
            except ClientError:
                self.assertLess(time.time(), deadline, "the retention did not pass")
                time.sleep(0.5)
        self.client_err(lambda: self.s3.head_object(Bucket=b, Key="p", VersionId=v), 404, "404")

    def test_bad_input(self):
        b = self.lbucket("lk-bad")
        put = self.s3.put_object
        self.client_err(lambda: put(Bucket=b, Key="x", Body=b"", ObjectLockMode="COMPLIANCE"), 400, "InvalidArgument")
        self.client_err(lambda: put(Bucket=b, Key="x", Body=b"", ObjectLockMode="COMPLIANCE",
                                    ObjectLockRetainUntilDate=ahead(-60)), 400, "InvalidArgument")
        r = self.s.put(self.ep + "/%s/x" % b, data=b"", timeout=10, headers={
            "x-amz-object-lock-mode": "GOVERNANCE", "x-amz-object-lock-retain-until-date": "tomorrow"})
        self.assertEqual(r.status_code, 400, r.text)
        r = self.s.put(self.ep + "/%s/x" % b, data=b"", timeout=10, headers={
            "x-amz-object-lock-mode": "FOREVER", "x-amz-object-lock-retain-until-date": "2099-01-01T00:00:00Z"})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertNotIn("Contents", self.s3.list_objects_v2(Bucket=b))
        v = put(Bucket=b, Key="y", Body=b"y")["VersionId"]
        self.client_err(lambda: self.s3.get_object_retention(Bucket=b, Key="y"), 404, "NoSuchObjectLockConfiguration")
        r = self.s.put(self.ep + "/%s/y?retention&versionId=%s" % (b, v), timeout=10,
                       data=b"<Retention><Mode>COMPLIANCE</Mode><RetainUntilDate>soon</RetainUntilDate></Retention>")
        self.assertEqual(r.status_code, 400, r.text)
        r = self.s.put(self.ep + "/%s/y?retention" % b, data=b"<Retention", timeout=10)
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("MalformedXML", r.text)
        self.client_err(lambda: self.s3.get_object_retention(Bucket=b, Key="y"), 404, "NoSuchObjectLockConfiguration")
        self.client_err(lambda: self.s3.get_object_retention(Bucket=b, Key="y", VersionId="0" * 20), 404,
                        "NoSuchVersion")
        # a bucket without object lock takes none of it
        self.s3.create_bucket(Bucket="lk-plain")
        self.client_err(lambda: put(Bucket="lk-plain", Key="x", Body=b"", ObjectLockLegalHoldStatus="ON"), 400,
                        "InvalidRequest")
        put(Bucket="lk-plain", Key="x", Body=b"")
        self.client_err(lambda: self.s3.get_object_retention(Bucket="lk-plain", Key="x"), 400, "InvalidRequest")

    def test_evict_is_lock_checked(self):
        """evict of a locked object is refused as a DELETE is (403, the cached copy stays; an evict-listrange
        job skips it and evicts the others); on an ais bucket without a remote evict is 400 and deletes nothing"""
        self.s3.create_bucket(Bucket="lk-origin")
        p = self.c.cli("bucket", "create", "ais://lk-cache", "--props",
                       "backend_bck=s3://lk-origin extra.aws.endpoint=%s" % self.ep)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        r = self.s.patch(self.url + "/v1/buckets/lk-cache", timeout=30, json={"action": "set-bprops", "value": {
            "s3_versioning": "Enabled"}})
        self.assertEqual(r.status_code, 200, r.text)
        self.s3.put_object_lock_configuration(Bucket="lk-cache", ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled"})
        self.s3.put_object(Bucket="lk-cache", Key="held", Body=b"held")
        self.s3.put_object_legal_hold(Bucket="lk-cache", Key="held", LegalHold={"Status": "ON"})
        self.s3.put_object(Bucket="lk-cache", Key="free", Body=b"free")
        obj = self.url + "/v1/objects/lk-cache/"

        def present(k):
            r = self.s.head(obj + k, params={"check_cached": "true"}, timeout=30, allow_redirects=True)
            return r.headers.get("Ais-Present") == "true"
        self.assertTrue(present("held") and present("free"))
        r = self.s.delete(obj + "held", json={"action": "evict-listrange"}, timeout=30)
        self.assertEqual(r.status_code, 403, r.text)
        self.assertIn("legal hold", r.text)
        self.assertTrue(present("held"))
        r = self.s.delete(self.url + "/v1/buckets/lk-cache", timeout=60, json={
            "action": "evict-listrange", "name": "", "value": {"objnames": ["held", "free"]}})
        self.assertEqual(r.status_code, 200, r.text)
        wait_until(lambda: not present("free"), 30, what="free evicted")
        self.assertTrue(present("held"))
        self.assertEqual(self.s.get(obj + "held", timeout=30).content, b"held")
        # an ais bucket has nothing to evict to: 400, the locked object stays
        b = self.lbucket("lk-evict")
        self.s3.put_object(Bucket=b, Key="x", Body=b"x", ObjectLockLegalHoldStatus="ON")
        r = self.s.delete(self.url + "/v1/objects/%s/x" % b, json={"action": "evict-listrange"}, timeout=30)
        self.assertEqual(r.status_code, 400, r.text)
        r = self.s.delete(self.url + "/v1/buckets/" + b, timeout=60, json={
            "action": "evict-listrange", "name": "", "value": {"objnames": ["x"]}})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertEqual(self.s3.get_object(Bucket=b, Key="x")["Body"].read(), b"x")

    def test_native_and_copy(self):
        """delete-listrange, rename-obj and destroy-bck leave locked versions; a native PUT makes a new version; a
        copy takes the request's lock, never the source's"""
        b = self.lbucket("lk-nat")
        v = self.s3.put_object(Bucket=b, Key="a", Body=b"a", ObjectLockMode="COMPLIANCE",
                               ObjectLockRetainUntilDate=ahead(3600))["VersionId"]
        self.s3.put_object(Bucket=b, Key="b", Body=b"b")
        obj = self.url + "/v1/objects/%s/" % b
        r = self.s.delete(self.url + "/v1/buckets/" + b, timeout=60, json={"action": "delete-listrange", "name": "",
                                                                         "value": {"objnames": ["a", "b"]}})
        self.assertEqual(r.status_code, 200, r.text)
        wait_until(lambda: self.s.head(obj + "b", timeout=10, allow_redirects=True).status_code == 404, 30, what="b deleted")
        self.assertEqual(self.s.get(obj + "a", timeout=10).content, b"a")
        r = self.s.post(obj + "a", json={"action": "rename-obj", "name": "a2"}, timeout=30)
        self.assertEqual(r.status_code, 403, r.text)
        self.assertEqual(self.s.head(obj + "a2", timeout=10, allow_redirects=True).status_code, 404)
        # a native PUT: a new version, the locked one kept
        self.assertEqual(self.s.put(obj + "a", data=b"new", timeout=10).status_code, 200)
        vs = self.s3.list_object_versions(Bucket=b, Prefix="a")["Versions"]
        self.assertEqual(len(vs), 2, vs)
        self.assertEqual(self.s3.get_object(Bucket=b, Key="a", VersionId=v)["Body"].read(), b"a")
        self.assertEqual(self.s3.get_object_retention(Bucket=b, Key="a", VersionId=v)["Retention"]["Mode"],
                         "COMPLIANCE")
        # copies
        self.s3.copy_object(Bucket=b, Key="c", CopySource={"Bucket": b, "Key": "a", "VersionId": v},
                            ObjectLockMode="GOVERNANCE", ObjectLockRetainUntilDate=ahead(3600))
        self.assertEqual(self.s3.head_object(Bucket=b, Key="c")["ObjectLockMode"], "GOVERNANCE")
        self.s3.copy_object(Bucket=b, Key="d", CopySource={"Bucket": b, "Key": "a", "VersionId": v})
        self.assertNotIn("ObjectLockMode", self.s3.head_object(Bucket=b, Key="d"))
        # destroy-bck: refused while it holds versions; an empty locked bucket goes
        r = self.s.delete(self.url + "/v1/buckets/" + b, json={"action": "destroy-bck"}, timeout=30)
        self.assertEqual(r.status_code, 403, r.text)
        self.assertIn("object lock", r.text)
        self.assertEqual(self.s3.head_bucket(Bucket=b)["ResponseMetadata"]["HTTPStatusCode"], 200)
        e = self.lbucket("lk-empty")
        r = self.s.delete(self.url + "/v1/buckets/" + e, json={"action": "destroy-bck"}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)

    def test_zz_restart_keeps_all(self):
        b = self.lbucket("lk-restart")
        self.s3.put_object_lock_configuration(Bucket=b, ObjectLockConfiguration={
            "ObjectLockEnabled": "Enabled", "Rule": {"DefaultRetention": {"Mode": "GOVERNANCE", "Years": 1}}})
        v = self.s3.put_object(Bucket=b, Key="r", Body=b"r", ObjectLockMode="COMPLIANCE",
                               ObjectLockRetainUntilDate=ahead(3600), ObjectLockLegalHoldStatus="ON")["VersionId"]
        self.c.stop()
        self.c.start()
        wait_until(lambda: len(self.c.smap()["tmap"]) == 2, 60, what="2 targets after the restart")
        wait_until(lambda: self.s.get(self.ep + "/" + b, timeout=10).status_code == 200, 60, what="S3 back")
        c = self.s3.get_object_lock_configuration(Bucket=b)["ObjectLockConfiguration"]
        self.assertEqual(c["Rule"]["DefaultRetention"], {"Mode": "GOVERNANCE", "Years": 1})
        self.assertEqual(self.s3.get_object_retention(Bucket=b, Key="r")["Retention"]["Mode"], "COMPLIANCE")
        self.assertEqual(self.s3.get_object_legal_hold(Bucket=b, Key="r")["LegalHold"]["Status"], "ON")
        self.client_err(lambda: self.s3.delete_object(Bucket=b, Key="r", VersionId=v), 403, "AccessDenied")


if __name__ == "__main__":
    main()
