#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""S3 access control (issue 39) on a cluster of 1 gateway and 2 targets with client authentication on and
SigV4 verification on, keys bound to Shale's users: bucket policies (a user granted reads on a prefix and denied
deletes, a Deny beating a role's permission, aws:SourceIp, s3:prefix, MalformedPolicy, ?policyStatus), canned
ACLs of buckets and objects (anonymous reads through public-read, authenticated-read, the ACL XML read back,
an AccessControlPolicy body), the public access block, with boto3 and the aws CLI, and all of it kept across
a restart of every node."""
import json
import os
import shutil
import subprocess
import tempfile
import unittest

import boto3
import requests
from botocore import UNSIGNED
from botocore.config import Config
from botocore.exceptions import ClientError

from harness import Cluster, main, wait_until

AWS = "/usr/bin/aws"
KEYS = {"admin": ("adminkey", "admin-secret-1"), "alice": ("alicekey", "alice-secret-1"),
        "bob": ("bobkey", "bob-secret-1")}
ALL = "http://acs.amazonaws.com/groups/global/AllUsers"
AUTH = "http://acs.amazonaws.com/groups/global/AuthenticatedUsers"


def cfg(**kw):
    return Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, **kw)


def policy(*stmts):
    return json.dumps({"Version": "2012-10-17", "Statement": list(stmts)})


class S3PolicyTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shale-s3pol-")
        cls.c = Cluster(cls.tmp, proxies=1, targets=2).start("--auth")
        cls.url = cls.c.url
        cls.ep = cls.url + "/s3"
        wait_until(lambda: len(cls.c.smap()["tmap"]) == 2, 30, what="2 targets")
        # alice: no permission on any bucket of her own (only listing the buckets): what she may do, a policy
        # grants; bob: read-write on ais://pol by his role
        cls.c.cli("auth", "add", "role", "lister", "LIST-BUCKETS")
        cls.c.cli("auth", "add", "role", "polrw", "rw", "--bucket", "ais://pol")
        cls.c.cli("auth", "add", "user", "alice", "lister", "--password", "alicepw")
        cls.c.cli("auth", "add", "user", "bob", "lister", "polrw", "--password", "bobpw")
        for u, (ak, sk) in KEYS.items():
            cls.c.cli("s3", "key", "add", ak, "--secret", sk, "--user", u)
        cls.c.cli("s3", "verify", "on")
        cls.adm, cls.alice, cls.bob = (cls.client(u) for u in ("admin", "alice", "bob"))
        cls.anon = boto3.client("s3", endpoint_url=cls.ep, region_name="us-east-1",
                                config=cfg(signature_version=UNSIGNED))
        awscfg = os.path.join(cls.tmp, "aws-config")
        with open(awscfg, "w") as f:
            f.write("[default]\nregion = us-east-1\ns3 =\n    addressing_style = path\n")
        cls.env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        cls.env.update(AWS_ACCESS_KEY_ID=KEYS["admin"][0], AWS_SECRET_ACCESS_KEY=KEYS["admin"][1],
                       AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE=awscfg,
                       AWS_SHARED_CREDENTIALS_FILE=os.path.join(cls.tmp, "none"), AWS_EC2_METADATA_DISABLED="true",
                       AWS_PAGER="", HOME=cls.tmp)
        cls.adm.create_bucket(Bucket="pol")
        for k in ("data/a", "data/b", "other/c", "keep/d"):
            cls.adm.put_object(Bucket="pol", Key=k, Body=k.encode())

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    @classmethod
    def client(cls, user):
        ak, sk = KEYS[user]
        return boto3.client("s3", endpoint_url=cls.ep, aws_access_key_id=ak, aws_secret_access_key=sk,
                            region_name="us-east-1", config=cfg())

    def aws(self, *args, check=True):
        p = subprocess.run([AWS, "--endpoint-url", self.ep] + list(args), capture_output=True, text=True,
                           env=self.env, timeout=120)
        if check:
            self.assertEqual(p.returncode, 0, p.stderr)
        return p

    def err(self, fn, status, code):
        with self.assertRaises(ClientError) as cm:
            fn()
        e = cm.exception.response
        self.assertEqual((e["ResponseMetadata"]["HTTPStatusCode"], e["Error"]["Code"]), (status, code), e)
        return e

    def denied(self, fn):
        return self.err(fn, 403, "AccessDenied")

    def read(self, c, b, k):
        return c.get_object(Bucket=b, Key=k)["Body"].read()

    def grants(self, acl):
        return sorted((g["Grantee"].get("URI", g["Grantee"].get("ID")), g["Permission"]) for g in acl["Grants"])

    # ---- policies ---------------------------------------------------------------------------------------------

    def test_governance_bypass_needs_an_admin(self):
        """with authentication on, x-amz-bypass-governance-retention is an admin's (AWS: the
        s3:BypassGovernanceRetention permission): bob, allowed everything on the bucket by its policy, cannot
        delete a version under GOVERNANCE retention with it; the admin can"""
        import datetime
        self.adm.create_bucket(Bucket="polk", ObjectLockEnabledForBucket=True)
        self.adm.put_bucket_policy(Bucket="polk", Policy=policy(
            {"Sid": "bob", "Effect": "Allow", "Principal": {"AWS": ["bob"]}, "Action": "s3:*",
             "Resource": ["arn:aws:s3:::polk", "arn:aws:s3:::polk/*"]}))
        until = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=1)
        v = self.bob.put_object(Bucket="polk", Key="g", Body=b"g", ObjectLockMode="GOVERNANCE",
                                ObjectLockRetainUntilDate=until)["VersionId"]
        e = self.denied(lambda: self.bob.delete_object(Bucket="polk", Key="g", VersionId=v,
                                                       BypassGovernanceRetention=True))
        self.assertIn("only an admin", e["Error"]["Message"])
        self.assertEqual(self.read(self.adm, "polk", "g"), b"g")
        self.adm.delete_object(Bucket="polk", Key="g", VersionId=v, BypassGovernanceRetention=True)
        self.err(lambda: self.adm.get_object(Bucket="polk", Key="g", VersionId=v), 404, "NoSuchVersion")

    def test_policy_prefix_read_and_denied_delete(self):
        """alice, who has no permission on the bucket, reads data/* and lists under data/ through the policy;
        her delete is denied though another statement allows it (an explicit Deny wins)"""
        self.denied(lambda: self.read(self.alice, "pol", "data/a"))  # nothing yet
        self.adm.put_bucket_policy(Bucket="pol", Policy=policy(
            {"Sid": "read", "Effect": "Allow", "Principal": {"AWS": ["arn:aws:iam::shale:user/alice"]},
             "Action": ["s3:GetObject"], "Resource": "arn:aws:s3:::pol/data/*"},
            {"Sid": "list", "Effect": "Allow", "Principal": {"AWS": "alice"}, "Action": "s3:ListBucket",
             "Resource": "arn:aws:s3:::pol", "Condition": {"StringLike": {"s3:prefix": "data/*"}}},
            {"Sid": "del", "Effect": "Allow", "Principal": {"AWS": "alice"}, "Action": "s3:Delete*",
             "Resource": "arn:aws:s3:::pol/*"},
            {"Sid": "nodel", "Effect": "Deny", "Principal": {"AWS": "alice"}, "Action": "s3:DeleteObject",
             "Resource": "arn:aws:s3:::pol/*"},
            {"Sid": "bobkeep", "Effect": "Deny", "Principal": {"AWS": "bob"}, "Action": "s3:DeleteObject",
             "Resource": "arn:aws:s3:::pol/keep/*"}))
        try:
            self.assertEqual(self.read(self.alice, "pol", "data/a"), b"data/a")
            self.denied(lambda: self.read(self.alice, "pol", "other/c"))
            self.denied(lambda: self.alice.put_object(Bucket="pol", Key="data/new", Body=b"x"))
            ls = self.alice.list_objects_v2(Bucket="pol", Prefix="data/")
            self.assertEqual([o["Key"] for o in ls["Contents"]], ["data/a", "data/b"])
            self.denied(lambda: self.alice.list_objects_v2(Bucket="pol", Prefix="other/"))
            self.denied(lambda: self.alice.list_objects_v2(Bucket="pol"))
            self.denied(lambda: self.alice.delete_object(Bucket="pol", Key="data/b"))
            self.assertEqual(self.read(self.adm, "pol", "data/b"), b"data/b")
            # a Deny beats bob's role (rw on ais://pol): keep/* stays, the rest he may delete
            self.denied(lambda: self.bob.delete_object(Bucket="pol", Key="keep/d"))
            self.bob.put_object(Bucket="pol", Key="tmp/x", Body=b"x")
            self.bob.delete_object(Bucket="pol", Key="tmp/x")
            # DeleteObjects names its keys in the body: a Deny on any key of the bucket refuses it whole
            self.denied(lambda: self.bob.delete_objects(Bucket="pol", Delete={"Objects": [{"Key": "keep/d"}]}))
            self.assertEqual(self.read(self.adm, "pol", "keep/d"), b"keep/d")
            # the aws CLI reads the policy back; a user with PATCH only through a policy may not change it
            got = json.loads(json.loads(self.aws("s3api", "get-bucket-policy", "--bucket", "pol").stdout)["Policy"])
            self.assertEqual([s["Sid"] for s in got["Statement"]], ["read", "list", "del", "nodel", "bobkeep"])
            self.denied(lambda: self.alice.delete_bucket_policy(Bucket="pol"))
            self.assertFalse(self.adm.get_bucket_policy_status(Bucket="pol")["PolicyStatus"]["IsPublic"])
        finally:
            self.adm.delete_bucket_policy(Bucket="pol")
        self.err(lambda: self.adm.get_bucket_policy(Bucket="pol"), 404, "NoSuchBucketPolicy")
        self.err(lambda: self.adm.get_bucket_policy_status(Bucket="pol"), 404, "NoSuchBucketPolicy")
        self.denied(lambda: self.read(self.alice, "pol", "data/a"))

    def test_policy_source_ip_and_cli(self):
        """aws:SourceIp: the clients here are 127.0.0.1; set with `aws s3api put-bucket-policy`"""
        self.adm.create_bucket(Bucket="ipb")
        self.adm.put_object(Bucket="ipb", Key="o", Body=b"ip")

        def allow_from(cidr, op="IpAddress"):
            doc = policy({"Effect": "Allow", "Principal": {"AWS": "alice"}, "Action": "s3:GetObject",
                          "Resource": "arn:aws:s3:::ipb/*", "Condition": {op: {"aws:SourceIp": cidr}}})
            self.aws("s3api", "put-bucket-policy", "--bucket", "ipb", "--policy", doc)
        allow_from(["10.0.0.0/8", "127.0.0.1/32"])
        self.assertEqual(self.read(self.alice, "ipb", "o"), b"ip")
        allow_from("10.0.0.0/8")
        self.denied(lambda: self.read(self.alice, "ipb", "o"))
        allow_from("127.0.0.0/8", "NotIpAddress")
        self.denied(lambda: self.read(self.alice, "ipb", "o"))
        # a Deny for everybody outside 10/8 shuts out even the admin's reads
        self.adm.put_bucket_policy(Bucket="ipb", Policy=policy(
            {"Effect": "Deny", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::ipb/*",
             "Condition": {"NotIpAddress": {"aws:SourceIp": "10.0.0.0/8"}}}))
        self.denied(lambda: self.read(self.adm, "ipb", "o"))
        self.adm.put_bucket_policy(Bucket="ipb", Policy=policy(
            {"Effect": "Deny", "Principal": "*", "Action": "s3:*",
             "Resource": ["arn:aws:s3:::ipb", "arn:aws:s3:::ipb/*"],
             "Condition": {"Bool": {"aws:SecureTransport": "false"}}}))
        self.denied(lambda: self.read(self.adm, "ipb", "o"))
        self.adm.delete_bucket_policy(Bucket="ipb")  # an admin may always repair the policy
        self.assertEqual(self.read(self.adm, "ipb", "o"), b"ip")

    def test_policy_dates_and_not_principal(self):
        """DateLessThan/DateGreaterThan on aws:CurrentTime open a time window (a window in the past grants
        nothing, one around now does); a NotPrincipal Deny shuts out everybody but the users it names"""
        import datetime
        now = datetime.datetime.now(datetime.timezone.utc)
        iso = lambda d: d.strftime("%Y-%m-%dT%H:%M:%SZ")  # noqa: E731
        self.adm.create_bucket(Bucket="dtb")
        self.adm.put_object(Bucket="dtb", Key="o", Body=b"dt")

        def window(lo, hi):
            self.adm.put_bucket_policy(Bucket="dtb", Policy=policy(
                {"Effect": "Allow", "Principal": {"AWS": "alice"}, "Action": "s3:GetObject",
                 "Resource": "arn:aws:s3:::dtb/*", "Condition": {"DateGreaterThan": {"aws:CurrentTime": iso(lo)},
                                                                 "DateLessThan": {"aws:CurrentTime": iso(hi)}}}))
        window(now - datetime.timedelta(days=2), now - datetime.timedelta(days=1))
        self.denied(lambda: self.read(self.alice, "dtb", "o"))
        window(now - datetime.timedelta(hours=1), now + datetime.timedelta(hours=1))
        self.assertEqual(self.read(self.alice, "dtb", "o"), b"dt")
        # epoch seconds too; a date that is none is MalformedPolicy and changes nothing
        e = self.err(lambda: self.adm.put_bucket_policy(Bucket="dtb", Policy=policy(
            {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::dtb/*",
             "Condition": {"DateLessThan": {"aws:CurrentTime": "next tuesday"}}})), 400, "MalformedPolicy")
        self.assertIn("not a date", e["Error"]["Message"])
        self.assertEqual(self.read(self.alice, "dtb", "o"), b"dt")
        # NotPrincipal: a Deny for all but alice shuts out even the admin's reads; alice's Allow still reads
        self.adm.put_bucket_policy(Bucket="dtb", Policy=policy(
            {"Sid": "a", "Effect": "Allow", "Principal": {"AWS": "alice"}, "Action": "s3:GetObject",
             "Resource": "arn:aws:s3:::dtb/*", "Condition": {"DateGreaterThan": {"aws:EpochTime": "1577836800"}}},
            {"Sid": "b", "Effect": "Deny", "NotPrincipal": {"AWS": ["arn:aws:iam::shale:user/alice"]},
             "Action": "s3:GetObject", "Resource": "arn:aws:s3:::dtb/*"}))
        try:
            self.assertEqual(self.read(self.alice, "dtb", "o"), b"dt")
            self.denied(lambda: self.read(self.adm, "dtb", "o"))
        finally:
            self.adm.delete_bucket_policy(Bucket="dtb")
        self.assertEqual(self.read(self.adm, "dtb", "o"), b"dt")

    def test_policy_malformed(self):
        self.adm.create_bucket(Bucket="badpol")
        ok = {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::badpol/*"}
        cases = {
            "not json": "{",
            "effect": policy(dict(ok, Effect="Permit")),
            "other bucket": policy(dict(ok, Resource="arn:aws:s3:::pol/*")),
            "bad action": policy(dict(ok, Action="ec2:RunInstances")),
            "no statement": json.dumps({"Version": "2012-10-17"}),
            "bad ip": policy(dict(ok, Condition={"IpAddress": {"aws:SourceIp": "300.1.1.1/8"}})),
            "operator": policy(dict(ok, Condition={"StringSortOf": {"s3:prefix": "a"}})),
            "principal": policy(dict(ok, Principal={"AWS": "arn:aws:iam::123456789012:role/x"})),
            "too large": policy(*[dict(ok, Sid="s%d" % i, Resource="arn:aws:s3:::badpol/" + "k" * 200 + str(i))
                                  for i in range(120)]),
        }
        for what, doc in cases.items():
            e = self.err(lambda: self.adm.put_bucket_policy(Bucket="badpol", Policy=doc), 400, "MalformedPolicy")
            self.assertIn("nothing was changed", e["Error"]["Message"], what)
        self.assertIn("20 KiB", self.err(lambda: self.adm.put_bucket_policy(Bucket="badpol", Policy=cases["too large"]),
                                         400, "MalformedPolicy")["Error"]["Message"])
        self.err(lambda: self.adm.get_bucket_policy(Bucket="badpol"), 404, "NoSuchBucketPolicy")

    # ---- ACLs and anonymous access ------------------------------------------------------------------------------

    def test_anonymous_through_acls_and_policy(self):
        self.adm.create_bucket(Bucket="pubr", ACL="public-read")
        self.adm.put_object(Bucket="pubr", Key="open", Body=b"open", ACL="public-read")
        self.adm.put_object(Bucket="pubr", Key="shut", Body=b"shut")
        for i in range(4):  # over both targets
            self.adm.put_object(Bucket="pubr", Key="o%d" % i, Body=b"o", ACL="public-read")
            self.assertEqual(requests.get(self.ep + "/pubr/o%d" % i).content, b"o")
        # unsigned: the public-read bucket lists, its public-read object reads (boto3 and plain HTTP)
        self.assertIn("open", [o["Key"] for o in self.anon.list_objects_v2(Bucket="pubr")["Contents"]])
        self.assertEqual(self.read(self.anon, "pubr", "open"), b"open")
        self.assertEqual(requests.head(self.ep + "/pubr/open").status_code, 200)
        # ... not a private object, not a write, not a missing key (no existence leak), not another bucket
        self.assertEqual(requests.get(self.ep + "/pubr/shut").status_code, 403)
        self.assertEqual(requests.get(self.ep + "/pubr/nope").status_code, 403)
        self.denied(lambda: self.anon.put_object(Bucket="pubr", Key="w", Body=b"w"))
        self.assertEqual(requests.get(self.ep + "/pol/data/a").status_code, 403)
        self.assertEqual(requests.get(self.ep + "/pol").status_code, 403)
        self.assertEqual(requests.get(self.ep + "/").status_code, 403)
        # public-read-write: anonymous writes; authenticated-read: users read, anonymous not
        self.adm.put_bucket_acl(Bucket="pubr", ACL="public-read-write")
        self.anon.put_object(Bucket="pubr", Key="w", Body=b"w")
        self.assertEqual(self.read(self.adm, "pubr", "w"), b"w")
        self.adm.put_bucket_acl(Bucket="pubr", ACL="private")
        self.denied(lambda: self.anon.put_object(Bucket="pubr", Key="w", Body=b"w"))
        self.denied(lambda: self.anon.list_objects_v2(Bucket="pubr"))
        self.adm.put_object_acl(Bucket="pubr", Key="shut", ACL="authenticated-read")
        self.assertEqual(self.read(self.alice, "pubr", "shut"), b"shut")
        self.assertEqual(requests.get(self.ep + "/pubr/shut").status_code, 403)
        # a policy for Principal "*" opens a prefix to anonymous readers
        self.adm.put_bucket_policy(Bucket="pubr", Policy=policy(
            {"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::pubr/o*"}))
        self.assertTrue(self.adm.get_bucket_policy_status(Bucket="pubr")["PolicyStatus"]["IsPublic"])
        self.adm.put_object(Bucket="pubr", Key="other", Body=b"pp")
        self.assertEqual(requests.get(self.ep + "/pubr/other").content, b"pp")
        self.assertEqual(requests.get(self.ep + "/pubr/w").status_code, 403)

    def test_acl_xml(self):
        self.adm.create_bucket(Bucket="aclx")
        self.assertEqual(self.grants(self.adm.get_bucket_acl(Bucket="aclx")), [("shale", "FULL_CONTROL")])
        self.adm.put_bucket_acl(Bucket="aclx", ACL="public-read")
        self.assertEqual(self.grants(self.adm.get_bucket_acl(Bucket="aclx")),
                         [(ALL, "READ"), ("shale", "FULL_CONTROL")])
        self.aws("s3api", "put-bucket-acl", "--bucket", "aclx", "--acl", "public-read-write")
        got = json.loads(self.aws("s3api", "get-bucket-acl", "--bucket", "aclx").stdout)
        self.assertEqual(self.grants(got), [(ALL, "READ"), (ALL, "WRITE"), ("shale", "FULL_CONTROL")])
        self.adm.put_object(Bucket="aclx", Key="k", Body=b"k", ACL="authenticated-read")
        self.assertEqual(self.grants(self.adm.get_object_acl(Bucket="aclx", Key="k")),
                         [(AUTH, "READ"), ("shale", "FULL_CONTROL")])
        # an AccessControlPolicy body that is a canned ACL's grants, through CopyObject and multipart too
        owner = {"ID": "shale", "DisplayName": "shale"}
        body = {"Owner": owner, "Grants": [
            {"Grantee": {"Type": "CanonicalUser", "ID": "shale"}, "Permission": "FULL_CONTROL"},
            {"Grantee": {"Type": "Group", "URI": ALL}, "Permission": "READ"}]}
        self.adm.put_object_acl(Bucket="aclx", Key="k", AccessControlPolicy=body)
        self.assertEqual(self.grants(self.adm.get_object_acl(Bucket="aclx", Key="k")),
                         [(ALL, "READ"), ("shale", "FULL_CONTROL")])
        self.adm.copy_object(Bucket="aclx", Key="k2", CopySource={"Bucket": "aclx", "Key": "k"})
        self.assertEqual(self.grants(self.adm.get_object_acl(Bucket="aclx", Key="k2")), [("shale", "FULL_CONTROL")])
        self.adm.copy_object(Bucket="aclx", Key="k3", CopySource={"Bucket": "aclx", "Key": "k"}, ACL="public-read")
        self.assertEqual(requests.get(self.ep + "/aclx/k3").content, b"k")
        up = self.adm.create_multipart_upload(Bucket="aclx", Key="mp", ACL="public-read")["UploadId"]
        et = self.adm.upload_part(Bucket="aclx", Key="mp", UploadId=up, PartNumber=1, Body=b"mp")["ETag"]
        self.adm.complete_multipart_upload(Bucket="aclx", Key="mp", UploadId=up,
                                           MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": et}]})
        self.assertEqual(requests.get(self.ep + "/aclx/mp").content, b"mp")
        # grants no canned ACL makes: 501 naming why; an unknown canned ACL: 400; nothing changed
        body["Grants"].append({"Grantee": {"Type": "CanonicalUser", "ID": "bob"}, "Permission": "WRITE"})
        e = self.err(lambda: self.adm.put_object_acl(Bucket="aclx", Key="k", AccessControlPolicy=body), 501,
                     "NotImplemented")
        self.assertIn("canned", e["Error"]["Message"])
        p = self.aws("s3api", "put-bucket-acl", "--bucket", "aclx", "--acl", "nonsense", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.err(lambda: self.adm.put_object(Bucket="aclx", Key="z", Body=b"z", ACL="aws-exec-read"), 501,
                 "NotImplemented")
        # the native API sets the same props, checked

        def native(value):
            return requests.patch(self.url + "/v1/buckets/aclx", headers=self.c.admin_headers(), timeout=30,
                                  json={"action": "set-bprops", "value": value})
        for bad in ({"s3_acl": "world-writable"}, {"s3_pab": "12"}, {"s3_policy": "not json"}):
            r = native(bad)
            self.assertEqual(r.status_code, 400, r.text)
            self.assertIn(list(bad)[0], r.text)
        self.assertEqual(native({"s3_acl": "authenticated-read"}).status_code, 200)
        self.assertEqual(self.grants(self.adm.get_bucket_acl(Bucket="aclx")),
                         [(AUTH, "READ"), ("shale", "FULL_CONTROL")])
        self.assertEqual(self.grants(self.adm.get_object_acl(Bucket="aclx", Key="k")),
                         [(ALL, "READ"), ("shale", "FULL_CONTROL")])

    def test_rclone_acls(self):
        """rclone's acl / bucket_acl settings: the bucket it makes and the objects it uploads carry them"""
        src = os.path.join(self.tmp, "rc")
        os.makedirs(src, exist_ok=True)
        with open(os.path.join(src, "f.txt"), "wb") as f:
            f.write(b"rclone public")
        conf = os.path.join(self.tmp, "rclone.conf")
        with open(conf, "w") as f:
            f.write("[shale]\ntype = s3\nprovider = Other\naccess_key_id = %s\nsecret_access_key = %s\n"
                    "endpoint = %s\nforce_path_style = true\nregion = us-east-1\nacl = public-read\n"
                    "bucket_acl = public-read\n" % (KEYS["admin"][0], KEYS["admin"][1], self.ep))
        p = subprocess.run(["/usr/bin/rclone", "--config", conf, "--retries", "1", "--low-level-retries", "1",
                            "copy", src, "shale:rcpub/d"], capture_output=True, text=True, timeout=120,
                           stdin=subprocess.DEVNULL, env=dict(self.env))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn((ALL, "READ"), self.grants(self.adm.get_bucket_acl(Bucket="rcpub")))
        self.assertEqual(requests.get(self.ep + "/rcpub/d/f.txt").content, b"rclone public")
        self.assertEqual([o["Key"] for o in self.anon.list_objects_v2(Bucket="rcpub")["Contents"]], ["d/f.txt"])

    def test_public_access_block(self):
        self.adm.create_bucket(Bucket="pab", ACL="public-read")
        self.adm.put_object(Bucket="pab", Key="o", Body=b"o", ACL="public-read")
        self.assertEqual(requests.get(self.ep + "/pab/o").status_code, 200)
        self.err(lambda: self.adm.get_public_access_block(Bucket="pab"), 404, "NoSuchPublicAccessBlockConfiguration")
        conf = {"BlockPublicAcls": True, "IgnorePublicAcls": True, "BlockPublicPolicy": True,
                "RestrictPublicBuckets": False}
        self.adm.put_public_access_block(Bucket="pab", PublicAccessBlockConfiguration=conf)
        self.assertEqual(self.adm.get_public_access_block(Bucket="pab")["PublicAccessBlockConfiguration"], conf)
        # ignored: the public ACLs grant nothing; blocked: no new public ACL, no public policy
        self.assertEqual(requests.get(self.ep + "/pab/o").status_code, 403)
        self.assertEqual(requests.get(self.ep + "/pab").status_code, 403)
        self.denied(lambda: self.adm.put_bucket_acl(Bucket="pab", ACL="public-read-write"))
        self.denied(lambda: self.adm.put_object(Bucket="pab", Key="p", Body=b"p", ACL="public-read"))
        self.denied(lambda: self.adm.put_object_acl(Bucket="pab", Key="o", ACL="public-read"))
        open_all = policy({"Effect": "Allow", "Principal": "*", "Action": "s3:GetObject",
                           "Resource": "arn:aws:s3:::pab/*"})
        self.denied(lambda: self.adm.put_bucket_policy(Bucket="pab", Policy=open_all))
        # RestrictPublicBuckets: a public policy grants anonymous nothing
        self.adm.put_public_access_block(Bucket="pab", PublicAccessBlockConfiguration=dict(
            conf, IgnorePublicAcls=False, BlockPublicPolicy=False, RestrictPublicBuckets=True, BlockPublicAcls=False))
        self.adm.put_bucket_acl(Bucket="pab", ACL="private")
        self.adm.put_object_acl(Bucket="pab", Key="o", ACL="private")
        self.adm.put_bucket_policy(Bucket="pab", Policy=open_all)
        self.assertEqual(requests.get(self.ep + "/pab/o").status_code, 403)
        self.adm.delete_public_access_block(Bucket="pab")
        self.assertEqual(requests.get(self.ep + "/pab/o").content, b"o")
        self.err(lambda: self.adm.get_public_access_block(Bucket="pab"), 404, "NoSuchPublicAccessBlockConfiguration")

    def test_zz_restart(self):
        """policies, ACLs and public access blocks are bucket props and object metadata: every node restarted,
        they hold as before"""
        self.adm.create_bucket(Bucket="keep", ACL="public-read")
        self.adm.put_object(Bucket="keep", Key="pub", Body=b"pub", ACL="public-read")
        self.adm.put_object(Bucket="keep", Key="mine", Body=b"mine")
        self.adm.put_bucket_policy(Bucket="keep", Policy=policy(
            {"Sid": "a", "Effect": "Allow", "Principal": {"AWS": "alice"}, "Action": "s3:GetObject",
             "Resource": "arn:aws:s3:::keep/mine"}))
        self.adm.put_public_access_block(Bucket="keep", PublicAccessBlockConfiguration={
            "BlockPublicAcls": False, "IgnorePublicAcls": False, "BlockPublicPolicy": True,
            "RestrictPublicBuckets": False})
        self.c.cli("playground", "stop", "--dir", self.c.dir)
        self.c.cli("playground", "start", "--dir", self.c.dir, "--auth")
        wait_until(lambda: len(self.c.smap()["tmap"]) == 2, 30, what="targets back")
        wait_until(lambda: requests.get(self.ep + "/keep/pub", timeout=5).status_code == 200, 30, what="anon read")
        self.assertEqual(requests.get(self.ep + "/keep/pub").content, b"pub")
        self.assertEqual(requests.get(self.ep + "/keep/mine").status_code, 403)
        self.assertEqual(self.read(self.alice, "keep", "mine"), b"mine")
        self.assertEqual(json.loads(self.adm.get_bucket_policy(Bucket="keep")["Policy"])["Statement"][0]["Sid"], "a")
        self.assertTrue(self.adm.get_public_access_block(Bucket="keep")["PublicAccessBlockConfiguration"][
            "BlockPublicPolicy"])
        self.assertIn((ALL, "READ"), self.grants(self.adm.get_object_acl(Bucket="keep", Key="pub")))


if __name__ == "__main__":
    main()
