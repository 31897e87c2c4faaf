#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The S3 front end (path style, served on /s3 of every node) against a real
cluster of 1 gateway and 2 targets, driven by the clients people use with
it: boto3, the aws CLI, s3cmd, rclone, curl, and raw HTTP for the wire
details the SDKs hide.

Covered: buckets (list, create and re-create, head, delete with the
BucketNotEmpty check, S3 bucket-name rules, the sub-resources answered and
the ones that are 501), objects shared with the native /v1 API both ways,
PUT bodies (Content-Length, chunked, aws-chunked with and without a trailer
checksum), MD5 ETags, Content-MD5 / x-amz-content-sha256 / x-amz-checksum-*
verification (nothing is stored when a check fails), stored headers and user
metadata, key rules (1024 bytes, odd characters), ranges, conditional GET,
HEAD and PUT, response-* overrides, CopyObject, DeleteObject(s), ListObjects v1 and v2
with every parameter and paging over more than 1000 keys, multipart uploads
(ETag, error rules, abort), a > 100 MiB multipart upload with boto3 and the
aws CLI, request ids, the operations that are not implemented yet, and a
WebDataset-style `pipe:aws s3 cp s3://... -` reader.

Signature verification is off in this cluster (the default): any access key
and secret are accepted, so the raw requests below are unsigned.
"""
import base64
import concurrent.futures
import datetime
import hashlib
import http.client
import json
import os
import socket
import struct
import subprocess
import tarfile
import time
import unittest
import xml.etree.ElementTree as ET
import zlib
from email.utils import formatdate, parsedate_to_datetime
from urllib.parse import quote

import requests

from harness import main, make_tar, start_cluster, stop_cluster

try:
    import boto3
    from boto3.s3.transfer import TransferConfig
    from botocore.config import Config
    from botocore.exceptions import ClientError
except ImportError:  # pragma: no cover - Debian python3-boto3 is a test dependency
    boto3 = None

AWS = "/usr/bin/aws"
S3CMD = "/usr/bin/s3cmd"
RCLONE = "/usr/bin/rclone"
CURL = "/usr/bin/curl"
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
AK, SK = "shale-test-key", "shale-test-secret"
MiB = 1024 * 1024


def md5hex(b):
    return hashlib.md5(b).hexdigest()


def b64(b):
    return base64.b64encode(b).decode()


def crc32_b64(b):
    return b64(struct.pack(">I", zlib.crc32(b) & 0xFFFFFFFF))


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(MiB), b""):
            h.update(chunk)
    return h.hexdigest()


class _Resp:
    """an http.client response seen through the few attributes S3Test.err reads"""

    def __init__(self, r):
        self.status_code = r.status
        self.headers = requests.structures.CaseInsensitiveDict(r.getheaders())
        self.content = r.read()
        self.text = self.content.decode(errors="replace")


def aws_chunked(data, chunk, trailer=None, signed=False):
    """an aws-chunked body: `<hex>[;chunk-signature=..]\\r\\n<bytes>\\r\\n` ... final chunk [+ trailer line]"""
    sig = ";chunk-signature=" + "0" * 64 if signed else ""
    out = b""
    for i in range(0, len(data), chunk):
        c = data[i:i + chunk]
        out += b"%x%s\r\n%s\r\n" % (len(c), sig.encode(), c)
    out += b"0%s\r\n" % sig.encode()
    if trailer:
        out += trailer.encode() + b"\r\n"
    return out + b"\r\n"


@unittest.skipUnless(boto3 is not None, "python3-boto3 is not installed")
class S3Test(unittest.TestCase):
    """One cluster (1 gateway + 2 targets) for every test of the class; each
    test uses its own bucket(s)."""

    @classmethod
    def setUpClass(cls):
        start_cluster(cls, targets=2)
        cls.ep = cls.url + "/s3"
        cls.port = cls.c.base
        # the CLIs and boto3 read only files in the temp dir (never ~/.aws)
        cls.aws_cfg = os.path.join(cls.tmp, "aws-config")
        cls.aws_creds = os.path.join(cls.tmp, "aws-credentials")
        with open(cls.aws_cfg, "w") as f:
            f.write("[default]\nregion = us-east-1\ns3 =\n    addressing_style = path\n")
        with open(cls.aws_creds, "w") as f:
            f.write("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % (AK, SK))
        cls.env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        cls.env.update(AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_DEFAULT_REGION="us-east-1",
                       AWS_CONFIG_FILE=cls.aws_cfg, AWS_SHARED_CREDENTIALS_FILE=cls.aws_creds,
                       AWS_EC2_METADATA_DISABLED="true", AWS_PAGER="", HOME=cls.tmp)
        for k in ("AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
            os.environ[k] = cls.env[k]
        cls.s3 = boto3.session.Session(aws_access_key_id=AK, aws_secret_access_key=SK,
                                       region_name="us-east-1").client(
            "s3", endpoint_url=cls.ep,
            config=Config(s3={"addressing_style": "path"}, connect_timeout=10, read_timeout=120,
                          retries={"max_attempts": 2, "mode": "standard"}, max_pool_connections=20))

    @classmethod
    def tearDownClass(cls):
        stop_cluster(cls)

    # ---- helpers ----------------------------------------------------------------------------------------------

    def req(self, method, path, **kw):
        """a raw (unsigned) request to the S3 endpoint; path is already percent-encoded"""
        kw.setdefault("timeout", 60)
        kw.setdefault("allow_redirects", False)
        return self.s.request(method, self.ep + path, **kw)

    def bucket(self, name):
        r = self.req("PUT", "/" + name)
        self.assertEqual(r.status_code, 200, r.text)
        return name

    def err(self, r, status, code):
        """r is an S3 error: the status, an XML body with that Code, and a RequestId equal to the header"""
        self.assertEqual(r.status_code, status, r.text[:500])
        self.assertTrue(r.headers.get("Content-Type", "").startswith("application/xml"), r.headers)
        root = ET.fromstring(r.content)
        self.assertEqual(root.tag, "Error", r.text)
        self.assertEqual(root.findtext("Code"), code, r.text)
        return root

    def client_err(self, fn, status, code):
        with self.assertRaises(ClientError) as cm:
            fn()
        e = cm.exception.response
        self.assertEqual(e["ResponseMetadata"]["HTTPStatusCode"], status, e)
        self.assertEqual(e["Error"]["Code"], code, e)
        return e

    def xml(self, r):
        self.assertEqual(r.status_code, 200, r.text[:500])
        return ET.fromstring(r.content)

    def get_bytes(self, bucket, key):
        return self.s3.get_object(Bucket=bucket, Key=key)["Body"].read()

    def absent(self, bucket, key):
        r = self.req("HEAD", "/%s/%s" % (bucket, quote(key)))
        return r.status_code == 404

    def aws(self, *args, check=True, timeout=120):
        p = subprocess.run([AWS, "--endpoint-url", self.ep] + list(args), capture_output=True, env=self.env,
                           timeout=timeout, stdin=subprocess.DEVNULL)
        if check and p.returncode != 0:
            raise AssertionError("aws %s failed (%d):\n%s%s" % (" ".join(args), p.returncode,
                                                              p.stdout.decode(errors="replace")[-2000:],
                                                              p.stderr.decode(errors="replace")[-2000:]))
        return p

    # ---- buckets ----------------------------------------------------------------------------------------------

    def test_buckets(self):
        """CreateBucket answers 200 (also for an existing bucket, whose objects stay), ListBuckets lists it with
        a current CreationDate, HeadBucket is 200 / 404 with no body, S3 name rules are enforced, DeleteBucket
        is 409 BucketNotEmpty while objects remain, then 204, then 404 NoSuchBucket; object requests on a
        missing bucket are 404 NoSuchBucket"""
        before = datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=5)
        r = self.req("PUT", "/bkt-life")
        self.assertEqual(r.status_code, 200, r.text)
        self.s3.put_object(Bucket="bkt-life", Key="keep", Body=b"kept")
        r = self.req("PUT", "/bkt-life")
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.get_bytes("bkt-life", "keep"), b"kept")
        lb = self.s3.list_buckets()
        self.assertIn("ID", lb["Owner"])
        found = [b for b in lb["Buckets"] if b["Name"] == "bkt-life"]
        self.assertEqual(len(found), 1, lb["Buckets"])
        self.assertGreaterEqual(found[0]["CreationDate"], before - datetime.timedelta(seconds=1))
        self.assertLessEqual(found[0]["CreationDate"], datetime.datetime.now(datetime.timezone.utc)
                             + datetime.timedelta(seconds=5))
        raw = self.xml(self.req("GET", "/"))
        self.assertEqual(raw.tag, NS + "ListAllMyBucketsResult")
        for cd in raw.iter(NS + "CreationDate"):
            self.assertRegex(cd.text, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        # HEAD
        r = self.req("HEAD", "/bkt-life")
        self.assertEqual((r.status_code, r.headers.get("x-amz-bucket-region")), (200, "us-east-1"))
        r = self.req("HEAD", "/no-such-bucket-x")
        self.assertEqual(r.status_code, 404)
        self.assertEqual(r.content, b"")
        self.client_err(lambda: self.s3.head_bucket(Bucket="no-such-bucket-x"), 404, "404")
        # names
        for bad in ("ab", "Upper", "a_b", "1.2.3.4", "-abc", "abc-", "a..b", ".abc", "x" * 64):
            r = self.req("PUT", "/" + bad)
            self.err(r, 400, "InvalidBucketName")
            self.assertEqual(self.req("HEAD", "/" + bad).status_code, 404, bad)
        for good in ("a" * 63, "abc", "1.2-x.y"):
            self.assertEqual(self.req("PUT", "/" + good).status_code, 200, good)
            self.assertEqual(self.req("DELETE", "/" + good).status_code, 204, good)
        # delete
        self.err(self.req("DELETE", "/bkt-life"), 409, "BucketNotEmpty")
        self.assertEqual(self.get_bytes("bkt-life", "keep"), b"kept")
        self.s3.delete_object(Bucket="bkt-life", Key="keep")
        r = self.req("DELETE", "/bkt-life")
        self.assertEqual(r.status_code, 204, r.text)
        self.assertEqual(r.content, b"")
        self.err(self.req("DELETE", "/bkt-life"), 404, "NoSuchBucket")
        self.assertEqual(self.req("HEAD", "/bkt-life").status_code, 404)
        self.assertNotIn("bkt-life", [b["Name"] for b in self.s3.list_buckets()["Buckets"]])
        # object and list requests on a missing bucket
        self.err(self.req("GET", "/bkt-life/k"), 404, "NoSuchBucket")
        self.err(self.req("PUT", "/bkt-life/k", data=b"x"), 404, "NoSuchBucket")
        self.err(self.req("DELETE", "/bkt-life/k"), 404, "NoSuchBucket")
        self.err(self.req("GET", "/bkt-life"), 404, "NoSuchBucket")
        self.err(self.req("GET", "/bkt-life", params={"list-type": "2"}), 404, "NoSuchBucket")
        self.assertEqual(self.req("HEAD", "/bkt-life/k").status_code, 404)

    def test_bucket_subresources(self):
        """GET ?location is an empty LocationConstraint; ?versioning GET/PUT read and set the bucket's
        s3_versioning property (no Status until first set; Enabled/Suspended), which the native API then shows
        (test_s3_versions.py has what it does); a malformed or MFA versioning body changes nothing; ?acl GET and
        PUT of canned ACLs are accepted (test_s3_policy.py enforces them), an unknown one is 400 and changes
        nothing; ?website is 501 NotImplemented with an XML error (?lifecycle: test_s3_lifecycle.py, ?cors:
        test_s3_cors.py)"""
        b = self.bucket("bkt-sub")
        loc = self.xml(self.req("GET", "/" + b, params={"location": ""}))
        self.assertEqual(loc.tag, NS + "LocationConstraint")
        self.assertFalse(loc.text)
        self.assertIn(self.s3.get_bucket_location(Bucket=b)["LocationConstraint"], (None, ""))

        def native_versioning():
            r = self.s.head(self.url + "/v1/buckets/" + b, timeout=30)
            self.assertEqual(r.status_code, 200, r.text)
            return json.loads(r.headers["Ais-Bucket-Props"])["s3_versioning"]

        ver = self.xml(self.req("GET", "/" + b, params={"versioning": ""}))
        self.assertEqual(ver.tag, NS + "VersioningConfiguration")
        self.assertIsNone(ver.findtext(NS + "Status"))  # never turned on (whatever versioning.enabled says)
        self.assertEqual(native_versioning(), "")
        self.s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
        self.assertEqual(self.s3.get_bucket_versioning(Bucket=b)["Status"], "Suspended")
        self.assertEqual(native_versioning(), "Suspended")
        for bad in (b"<VersioningConfiguration><Status>On</Status></VersioningConfiguration>", b"<Vers",
                    b"<VersioningConfiguration/>"):
            self.err(self.req("PUT", "/" + b, params={"versioning": ""}, data=bad), 400, "MalformedXML")
        mfa = (b'<VersioningConfiguration><Status>Enabled</Status><MfaDelete>Enabled</MfaDelete>'
               b'</VersioningConfiguration>')
        self.err(self.req("PUT", "/" + b, params={"versioning": ""}, data=mfa), 501, "NotImplemented")
        self.assertEqual(native_versioning(), "Suspended")  # none of the refused bodies changed it
        body = (b'<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
                b'<Status>Enabled</Status></VersioningConfiguration>')
        r = self.req("PUT", "/" + b, params={"versioning": ""}, data=body)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(native_versioning(), "Enabled")
        self.assertEqual(self.s3.get_bucket_versioning(Bucket=b)["Status"], "Enabled")
        self.client_err(lambda: self.s3.put_bucket_versioning(Bucket="no-such-bkt-v",
                                                              VersioningConfiguration={"Status": "Enabled"}),
                        404, "NoSuchBucket")
        acl = self.xml(self.req("GET", "/" + b, params={"acl": ""}))
        self.assertEqual(acl.tag, NS + "AccessControlPolicy")
        self.assertEqual(self.s3.get_bucket_acl(Bucket=b)["ResponseMetadata"]["HTTPStatusCode"], 200)
        r = self.req("PUT", "/" + b, params={"acl": ""}, headers={"x-amz-acl": "private"})
        self.assertEqual(r.status_code, 200, r.text)
        self.err(self.req("PUT", "/" + b, params={"acl": ""}, headers={"x-amz-acl": "public-rw"}), 400,
                 "InvalidArgument")
        self.err(self.req("PUT", "/bkt-sub-public", headers={"x-amz-acl": "public-rw"}), 400, "InvalidArgument")
        self.assertEqual(self.req("HEAD", "/bkt-sub-public").status_code, 404)  # not created
        for sub in ("website", "replication"):
            self.err(self.req("GET", "/" + b, params={sub: ""}), 501, "NotImplemented")
            self.err(self.req("PUT", "/" + b, params={sub: ""}, data=b"<x/>"), 501, "NotImplemented")
        self.client_err(lambda: self.s3.get_bucket_lifecycle_configuration(Bucket=b), 404,
                        "NoSuchLifecycleConfiguration")

    def test_list_buckets_paged(self):
        """ListBuckets is sorted by name and pages as S3 does: max-buckets, prefix, continuation-token (it
        ignored all three and answered every bucket at once)"""
        want = ["bkt-pg-%s" % c for c in "edcba"]
        for b in want:
            self.bucket(b)
        got, tok = [], None
        for _ in range(10):
            params = {"max-buckets": "2", "prefix": "bkt-pg-"}
            if tok:
                params["continuation-token"] = tok
            x = self.xml(self.req("GET", "/", params=params))
            names = [e.findtext(NS + "Name") for e in x.iter(NS + "Bucket")]
            self.assertLessEqual(len(names), 2)
            self.assertEqual(x.findtext(NS + "Prefix"), "bkt-pg-")
            got += names
            tok = x.findtext(NS + "ContinuationToken")
            if not tok:
                break
        self.assertEqual(got, sorted(want))
        for bad in ("0", "10001", "x"):
            self.err(self.req("GET", "/", params={"max-buckets": bad}), 400, "InvalidArgument")
        self.err(self.req("GET", "/", params={"continuation-token": "zz"}), 400, "InvalidArgument")
        every = [b["Name"] for b in self.s3.list_buckets()["Buckets"]]
        self.assertEqual(every, sorted(every))

    def test_object_subresources_and_versions(self):
        """object sub-resources Shale lacks are 501 for every method: never the object's bytes (GET ?attributes,
        before it was built, returned them with 200); ListObjectVersions lists each
        object once as its one version "null" (it was 501, so `rclone purge` failed) in a bucket never versioned;
        versionId=null is the object itself, any other versionId is NoSuchVersion (404) and changes nothing
        (test_s3_versions.py has versioned buckets); empty and UTF-8 x-amz-meta-* values round-trip"""
        b = self.bucket("bkt-osub")
        for i in range(5):
            self.s3.put_object(Bucket=b, Key="d/k%d" % i, Body=b"v%d" % i)
        for sub in ("torrent",):  # (?retention, ?legal-hold: test_s3_lock.py)
            for m in ("GET", "HEAD", "PUT", "DELETE"):
                r = self.req(m, "/%s/d/k0" % b, params={sub: ""}, data=b"<x/>" if m == "PUT" else None)
                self.assertEqual(r.status_code, 501, "%s ?%s: %s" % (m, sub, r.text))
                if m != "HEAD":
                    self.assertNotIn(b"v0", r.content)
                    self.assertIn(b"NotImplemented", r.content)
        self.assertEqual(self.get_bytes(b, "d/k0"), b"v0")  # nothing deleted or overwritten
        vs = self.s3.list_object_versions(Bucket=b, Prefix="d/")
        self.assertEqual([(v["Key"], v["VersionId"], v["IsLatest"], v["Size"]) for v in vs["Versions"]],
                         [("d/k%d" % i, "null", True, 2) for i in range(5)])
        self.assertFalse(vs["IsTruncated"])
        page = self.s3.list_object_versions(Bucket=b, Prefix="d/", MaxKeys=2, KeyMarker="d/k0")
        self.assertEqual([v["Key"] for v in page["Versions"]], ["d/k1", "d/k2"])
        self.assertTrue(page["IsTruncated"])
        self.assertEqual((page["NextKeyMarker"], page["NextVersionIdMarker"]), ("d/k2", "null"))
        self.err(self.req("PUT", "/" + b, params={"versions": ""}, data=b"<x/>"), 405, "MethodNotAllowed")
        self.assertEqual(self.s3.get_object(Bucket=b, Key="d/k1", VersionId="null")["Body"].read(), b"v1")
        self.client_err(lambda: self.s3.get_object(Bucket=b, Key="d/k1", VersionId="0123456789abcdef0123"), 404,
                        "NoSuchVersion")
        self.client_err(lambda: self.s3.get_object(Bucket=b, Key="d/k1", VersionId="3HL4kqtJlcpXroDTDmJ"), 400,
                        "InvalidArgument")
        self.s3.delete_object(Bucket=b, Key="d/k1", VersionId="0123456789abcdef0123")  # none such: nothing goes
        self.assertEqual(self.get_bytes(b, "d/k1"), b"v1")
        self.s3.delete_object(Bucket=b, Key="d/k1", VersionId="null")
        self.assertTrue(self.absent(b, "d/k1"))
        # user metadata: an empty value and UTF-8 bytes come back as sent (the empty one was dropped)
        uni = "caf\u00e9 \u2713".encode()
        r = self.req("PUT", "/%s/meta" % b, data=b"m", headers={"x-amz-meta-empty": "", "x-amz-meta-uni": uni})
        self.assertEqual(r.status_code, 200, r.text)
        md = self.s3.head_object(Bucket=b, Key="meta")["Metadata"]
        self.assertEqual(md, {"empty": "", "uni": uni.decode("latin-1")})
        if os.access(RCLONE, os.X_OK):
            cfg = os.path.join(self.tmp, "rclone-purge.conf")
            with open(cfg, "w") as f:
                f.write("[shale]\ntype = s3\nprovider = Other\naccess_key_id = %s\nsecret_access_key = %s\n"
                        "endpoint = %s\nforce_path_style = true\nregion = us-east-1\n" % (AK, SK, self.ep))
            p = subprocess.run([RCLONE, "--config", cfg, "--retries", "1", "--low-level-retries", "2", "purge",
                                "shale:%s" % b], capture_output=True, timeout=120, env=self.env,
                               stdin=subprocess.DEVNULL)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(self.req("HEAD", "/" + b).status_code, 404)

    # ---- native interop ---------------------------------------------------------------------------------------

    def test_native_interop(self):
        """a bucket made over S3 is an ordinary ais:// bucket: an object PUT over S3 reads back through
        GET /v1/objects on the gateway, a native PUT reads back (and lists) over S3"""
        b = self.bucket("bkt-native")
        data = os.urandom(70000)
        self.s3.put_object(Bucket=b, Key="dir/via-s3.bin", Body=data)
        r = self.s.get(self.url + "/v1/objects/%s/dir/via-s3.bin" % b, timeout=30)
        self.assertEqual(r.status_code, 200, r.text[:300])
        self.assertEqual(r.content, data)
        data2 = os.urandom(50000)
        r = self.s.put(self.url + "/v1/objects/%s/via-native.bin" % b, data=data2, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        got = self.s3.get_object(Bucket=b, Key="via-native.bin")
        self.assertEqual(got["Body"].read(), data2)
        self.assertEqual(got["ContentLength"], len(data2))
        self.assertTrue(got["ETag"].startswith('"') and len(got["ETag"]) > 2, got["ETag"])
        keys = [o["Key"] for o in self.s3.list_objects_v2(Bucket=b)["Contents"]]
        self.assertEqual(keys, ["dir/via-s3.bin", "via-native.bin"])
        r = self.s.get(self.url + "/v1/buckets", timeout=30)
        self.assertEqual(r.status_code, 200)
        self.assertIn(b, [x["name"] for x in r.json()])

    # ---- objects: PUT bodies, ETags, metadata -----------------------------------------------------------------

    def test_put_get_metadata(self):
        """PutObject answers the quoted hex MD5 as ETag; Content-Type, Content-Encoding, Content-Disposition,
        Content-Language, Cache-Control, Expires and x-amz-meta-* come back on GET and HEAD; a PUT replaces
        all metadata; > 2 KiB of user metadata is 400 MetadataTooLarge and stores nothing; empty objects work"""
        b = self.bucket("bkt-meta")
        data = os.urandom(12345)
        exp = datetime.datetime(2037, 1, 2, 3, 4, 5, tzinfo=datetime.timezone.utc)
        r = self.s3.put_object(Bucket=b, Key="m", Body=data, ContentType="text/x-shale",
                               ContentEncoding="x-shale-enc", ContentDisposition='attachment; filename="m.txt"',
                               ContentLanguage="de-CH", CacheControl="max-age=60", Expires=exp,
                               Metadata={"color": "blue", "Mixed-Case": "Value With Spaces"})
        self.assertEqual(r["ETag"], '"%s"' % md5hex(data))
        for resp in (self.s3.get_object(Bucket=b, Key="m"), self.s3.head_object(Bucket=b, Key="m")):
            h = resp["ResponseMetadata"]["HTTPHeaders"]
            self.assertEqual(resp["ETag"], '"%s"' % md5hex(data))
            self.assertEqual(resp["ContentLength"], len(data))
            self.assertEqual(resp["ContentType"], "text/x-shale")
            self.assertEqual(resp["ContentEncoding"], "x-shale-enc")
            self.assertEqual(resp["ContentDisposition"], 'attachment; filename="m.txt"')
            self.assertEqual(resp["ContentLanguage"], "de-CH")
            self.assertEqual(resp["CacheControl"], "max-age=60")
            self.assertEqual(h["expires"], "Fri, 02 Jan 2037 03:04:05 GMT")
            self.assertEqual(resp["Metadata"], {"color": "blue", "mixed-case": "Value With Spaces"})
            self.assertEqual(h.get("accept-ranges"), "bytes")
            lm = parsedate_to_datetime(h["last-modified"])
            self.assertLess(abs((lm - datetime.datetime.now(datetime.timezone.utc)).total_seconds()), 120)
            if "Body" in resp:
                self.assertEqual(resp["Body"].read(), data)
        # PUT replaces every stored header
        self.s3.put_object(Bucket=b, Key="m", Body=b"v2", Metadata={"other": "1"})
        h = self.s3.head_object(Bucket=b, Key="m")
        self.assertEqual(h["Metadata"], {"other": "1"})
        for k in ("ContentEncoding", "ContentDisposition", "ContentLanguage", "CacheControl"):
            self.assertNotIn(k, h)
        self.assertNotIn("expires", h["ResponseMetadata"]["HTTPHeaders"])
        self.assertEqual(h["ContentLength"], 2)
        # the ACL and storage class that are so are accepted; what Shale does not do is refused, not ignored,
        # and stores nothing
        r = self.s3.put_object(Bucket=b, Key="acl", Body=b"acl", ACL="private", StorageClass="STANDARD")
        self.assertEqual(r["ETag"], '"%s"' % md5hex(b"acl"))
        for kw in ({"ACL": "aws-exec-read"}, {"StorageClass": "GLACIER"},
                   {"GrantRead": 'id="x"'}):  # (object lock headers: test_s3_lock.py)
            e = self.client_err(lambda: self.s3.put_object(Bucket=b, Key="refused", Body=b"x", **kw), 501,
                                "NotImplemented")
            self.assertIn("nothing was changed", e["Error"]["Message"])
            self.client_err(lambda: self.s3.create_multipart_upload(Bucket=b, Key="refused", **kw), 501,
                            "NotImplemented")
        self.assertTrue(self.absent(b, "refused"))
        self.client_err(lambda: self.s3.put_object_acl(Bucket=b, Key="acl", ACL="aws-exec-read"), 501,
                        "NotImplemented")
        self.s3.put_object_acl(Bucket=b, Key="acl", ACL="private")
        # no Content-Type sent: the AWS default
        r = self.req("PUT", "/%s/no-ct" % b, data=b"abc", headers={"Content-Type": None})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.req("HEAD", "/%s/no-ct" % b).headers.get("Content-Type"), "binary/octet-stream")
        # user metadata over 2 KiB
        self.client_err(lambda: self.s3.put_object(Bucket=b, Key="m", Body=b"v3", Metadata={"big": "x" * 2100}),
                        400, "MetadataTooLarge")
        self.client_err(lambda: self.s3.put_object(Bucket=b, Key="new-big", Body=b"v3",
                                                   Metadata={"big": "x" * 2100}), 400, "MetadataTooLarge")
        self.assertEqual(self.get_bytes(b, "m"), b"v2")
        self.assertTrue(self.absent(b, "new-big"))
        # empty object
        r = self.s3.put_object(Bucket=b, Key="empty", Body=b"")
        self.assertEqual(r["ETag"], '"d41d8cd98f00b204e9800998ecf8427e"')
        g = self.s3.get_object(Bucket=b, Key="empty")
        self.assertEqual((g["ContentLength"], g["Body"].read()), (0, b""))

    def test_put_bodies(self):
        """a Transfer-Encoding: chunked body, an aws-chunked body with chunk signatures (not verified here) and
        one with an unsigned trailer are stored decoded with the MD5 ETag of the payload; aws-chunked is
        removed from the stored Content-Encoding; a truncated aws-chunked body is 400 IncompleteBody"""
        b = self.bucket("bkt-bodies")
        data = os.urandom(300000)

        def gen():
            for i in range(0, len(data), 65536):
                yield data[i:i + 65536]
        r = self.req("PUT", "/%s/chunked" % b, data=gen())
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.headers["ETag"], '"%s"' % md5hex(data))
        self.assertEqual(self.get_bytes(b, "chunked"), data)

        body = aws_chunked(data, 65536, signed=True)
        r = self.req("PUT", "/%s/awschunked" % b, data=body, headers={
            "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "Content-Encoding": "aws-chunked",
            "x-amz-decoded-content-length": str(len(data))})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.headers["ETag"], '"%s"' % md5hex(data))
        h = self.s3.head_object(Bucket=b, Key="awschunked")
        self.assertEqual(h["ContentLength"], len(data))
        self.assertNotIn("ContentEncoding", h)
        self.assertEqual(self.get_bytes(b, "awschunked"), data)

        r = self.req("PUT", "/%s/gz" % b, data=aws_chunked(b"not really gzip", 4, signed=True), headers={
            "x-amz-content-sha256": "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", "Content-Encoding": "gzip, aws-chunked",
            "x-amz-decoded-content-length": "15"})
        self.assertEqual(r.status_code, 200, r.text)
        g = self.s3.get_object(Bucket=b, Key="gz")
        self.assertEqual(g["ContentEncoding"], "gzip")
        self.assertEqual(g["Body"].read(), b"not really gzip")

        # truncated: the final chunk never comes; a decoded length the chunks do not reach
        for key, bad in (("trunc1", aws_chunked(data, 65536)[:-5]),
                         ("trunc2", aws_chunked(data[:1000], 65536))):
            r = self.req("PUT", "/%s/%s" % (b, key), data=bad, headers={
                "x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER", "Content-Encoding": "aws-chunked",
                "x-amz-decoded-content-length": str(len(data))})
            self.err(r, 400, "IncompleteBody")
            self.assertTrue(self.absent(b, key), key)

    def test_put_framing(self):
        """a PUT with neither Content-Length nor chunked framing is 411 MissingContentLength and stores
        nothing; Expect: 100-continue gets 100 before the body on a good request and the 404 NoSuchBucket
        before the body on a missing bucket; Expect: 200 is accepted"""
        b = self.bucket("bkt-framing")
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=20)
        conn.putrequest("PUT", "/s3/%s/nolen" % b, skip_accept_encoding=True)
        conn.endheaders()
        r = conn.getresponse()
        self.err(_Resp(r), 411, "MissingContentLength")
        conn.close()
        self.assertTrue(self.absent(b, "nolen"))

        def expect100(path):
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=20)
            try:
                sock.sendall(b"PUT %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 5\r\n"
                             b"Expect: 100-continue\r\n\r\n" % path.encode())
                first = sock.recv(65536)
                buf = first
                if first.startswith(b"HTTP/1.1 100"):
                    sock.sendall(b"hello")
                    deadline = time.time() + 20
                    while buf.count(b"\r\n\r\n") < 2 and time.time() < deadline:
                        more = sock.recv(65536)
                        if not more:
                            break
                        buf += more
                return first, buf
            finally:
                sock.close()
        first, everything = expect100("/s3/%s/cont" % b)
        self.assertTrue(first.startswith(b"HTTP/1.1 100"), first)
        self.assertIn(b"\r\n\r\nHTTP/1.1 200", everything)
        self.assertEqual(self.get_bytes(b, "cont"), b"hello")
        first, _ = expect100("/s3/no-such-bkt-100/cont")
        self.assertTrue(first.startswith(b"HTTP/1.1 404"), first)
        self.assertIn(b"<Code>NoSuchBucket</Code>", first)
        r = self.req("PUT", "/%s/exp200" % b, data=b"x", headers={"Expect": "200"})
        self.assertEqual(r.status_code, 200, r.text)

    def test_content_md5_and_sha256(self):
        """Content-MD5 that is not base64 of 16 bytes is 400 InvalidDigest, a mismatch 400 BadDigest, a hex
        x-amz-content-sha256 that does not match 400 XAmzContentSHA256Mismatch; in every case the old object
        stays; a correct Content-MD5 is accepted"""
        b = self.bucket("bkt-md5")
        self.s3.put_object(Bucket=b, Key="k", Body=b"original")
        for bad in ("not-base64!!", "", b64(b"0123456789abcde"), b64(b"0123456789abcdefg")):
            r = self.req("PUT", "/%s/k" % b, data=b"new", headers={"Content-MD5": bad})
            self.err(r, 400, "InvalidDigest")
        r = self.req("PUT", "/%s/k" % b, data=b"new", headers={"Content-MD5": b64(hashlib.md5(b"other").digest())})
        self.err(r, 400, "BadDigest")
        r = self.req("PUT", "/%s/fresh" % b, data=b"new", headers={"Content-MD5": b64(hashlib.md5(b"x").digest())})
        self.err(r, 400, "BadDigest")
        self.assertTrue(self.absent(b, "fresh"))
        r = self.req("PUT", "/%s/k" % b, data=b"new",
                     headers={"x-amz-content-sha256": hashlib.sha256(b"other").hexdigest()})
        self.err(r, 400, "XAmzContentSHA256Mismatch")
        self.assertEqual(self.get_bytes(b, "k"), b"original")
        r = self.req("PUT", "/%s/k" % b, data=b"new", headers={
            "Content-MD5": b64(hashlib.md5(b"new").digest()),
            "x-amz-content-sha256": hashlib.sha256(b"new").hexdigest()})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.headers["ETag"], '"%s"' % md5hex(b"new"))
        self.assertEqual(self.get_bytes(b, "k"), b"new")

    def test_checksum_headers_and_trailers(self):
        """x-amz-sdk-checksum-algorithm CRC32 / SHA256 with its x-amz-checksum-* header is verified (echoed on
        success, 400 BadDigest on a mismatch with nothing stored); the STREAMING-UNSIGNED-PAYLOAD-TRAILER form
        (aws-chunked body, checksum in the trailer) is decoded and verified, CRC64NVME (the standard check value
        of "123456789") too; an unknown algorithm is 400 InvalidRequest"""
        b = self.bucket("bkt-cksum")
        data = b"checksum me " * 1000
        crc = crc32_b64(data)
        r = self.req("PUT", "/%s/hdr" % b, data=data, headers={
            "x-amz-sdk-checksum-algorithm": "CRC32", "x-amz-checksum-crc32": crc})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.headers["ETag"], '"%s"' % md5hex(data))
        self.assertEqual(r.headers.get("x-amz-checksum-crc32"), crc)
        self.assertEqual(self.get_bytes(b, "hdr"), data)
        r = self.req("PUT", "/%s/hdr" % b, data=b"changed", headers={
            "x-amz-sdk-checksum-algorithm": "CRC32", "x-amz-checksum-crc32": crc})
        self.err(r, 400, "BadDigest")
        self.assertEqual(self.get_bytes(b, "hdr"), data)
        sha = b64(hashlib.sha256(data).digest())
        r = self.req("PUT", "/%s/sha" % b, data=data, headers={
            "x-amz-sdk-checksum-algorithm": "SHA256", "x-amz-checksum-sha256": sha})
        self.assertEqual(r.status_code, 200, r.text)
        r = self.req("PUT", "/%s/sha-bad" % b, data=data + b"!", headers={
            "x-amz-sdk-checksum-algorithm": "SHA256", "x-amz-checksum-sha256": sha})
        self.err(r, 400, "BadDigest")
        self.assertTrue(self.absent(b, "sha-bad"))

        def trailer_put(key, payload, trailer_crc, chunk=4000, alg="crc32"):
            body = aws_chunked(payload, chunk, trailer="x-amz-checksum-%s:%s" % (alg, trailer_crc))
            return self.req("PUT", "/%s/%s" % (b, key), data=body, headers={
                "x-amz-content-sha256": "STREAMING-UNSIGNED-PAYLOAD-TRAILER", "Content-Encoding": "aws-chunked",
                "x-amz-decoded-content-length": str(len(payload)), "x-amz-trailer": "x-amz-checksum-" + alg})
        for key, chunk in (("trl-one", len(data)), ("trl-many", 4000)):
            r = trailer_put(key, data, crc, chunk)
            self.assertEqual(r.status_code, 200, r.text)
            self.assertEqual(r.headers["ETag"], '"%s"' % md5hex(data))
            h = self.s3.head_object(Bucket=b, Key=key)
            self.assertEqual(h["ContentLength"], len(data))
            self.assertNotIn("ContentEncoding", h)
            self.assertEqual(self.get_bytes(b, key), data)
        self.err(trailer_put("trl-bad", data, crc32_b64(b"other")), 400, "BadDigest")
        self.assertTrue(self.absent(b, "trl-bad"))
        # CRC64NVME (aws CLI >= 2.23 default): CRC-64/NVME of "123456789" is 0xae8b14860a799888
        nv = base64.b64encode(bytes.fromhex("ae8b14860a799888")).decode()
        r = self.req("PUT", "/%s/nvme" % b, data=b"123456789", headers={
            "x-amz-sdk-checksum-algorithm": "CRC64NVME", "x-amz-checksum-crc64nvme": nv})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.headers.get("x-amz-checksum-crc64nvme"), nv)
        self.assertEqual(trailer_put("nvme2", b"123456789", nv, alg="crc64nvme").status_code, 200)
        self.assertEqual(self.get_bytes(b, "nvme2"), b"123456789")
        self.err(trailer_put("nvme3", data, "AAAAAAAAAAA=", alg="crc64nvme"), 400, "BadDigest")
        r = self.req("PUT", "/%s/nvme4" % b, data=data, headers={
            "x-amz-sdk-checksum-algorithm": "CRC16", "x-amz-checksum-crc16": "AAAA"})
        self.err(r, 400, "InvalidRequest")
        self.assertTrue(self.absent(b, "nvme3") and self.absent(b, "nvme4"))

    # ---- keys -------------------------------------------------------------------------------------------------

    def test_keys(self):
        """keys are opaque UTF-8 up to 1024 bytes (1025 bytes is 400 KeyTooLongError): double slashes, a
        trailing slash, unicode, spaces, '+' (a literal plus in the path), '%', '?' and '#' round-trip and list"""
        b = self.bucket("bkt-keys")
        keys = ["a//b", "dir/", "ünïcødé/ключ/鍵", "with space", "plus+sign", "per%cent", "q?mark", "hash#tag",
                "k" * 1024, "é" * 512]
        for k in keys:
            self.s3.put_object(Bucket=b, Key=k, Body=k.encode())
        for k in keys:
            self.assertEqual(self.get_bytes(b, k), k.encode(), k)
            self.assertEqual(self.s3.head_object(Bucket=b, Key=k)["ContentLength"], len(k.encode()))
        listed = [o["Key"] for o in self.s3.list_objects_v2(Bucket=b)["Contents"]]
        self.assertEqual(listed, sorted(keys, key=lambda k: k.encode()))
        # a key equal to a common prefix ("dir/") is rolled up into it
        d = self.s3.list_objects_v2(Bucket=b, Delimiter="/")
        self.assertEqual([p["Prefix"] for p in d["CommonPrefixes"]], ["a/", "dir/", "ünïcødé/"])
        self.assertEqual([o["Key"] for o in d["Contents"]],
                         sorted((k for k in keys if "/" not in k), key=lambda k: k.encode()))
        r = self.req("GET", "/%s/plus+sign" % b)
        self.assertEqual((r.status_code, r.content), (200, b"plus+sign"))
        self.assertEqual(self.req("GET", "/%s/plus%%20sign" % b).status_code, 404)
        for k in ("k" * 1025, "é" * 512 + "x"):
            self.client_err(lambda: self.s3.put_object(Bucket=b, Key=k, Body=b"x"), 400, "KeyTooLongError")
            self.err(self.req("PUT", "/%s/%s" % (b, quote(k)), data=b"x"), 400, "KeyTooLongError")
        # a C1 control character (U+008A) is refused as s3-tests expects
        self.err(self.req("PUT", "/%s/a%%C2%%8Ab" % b, data=b"x"), 400, "InvalidURI")
        self.assertNotIn("a\u008ab", [o["Key"] for o in self.s3.list_objects_v2(Bucket=b).get("Contents", [])])

    # ---- GET / HEAD -------------------------------------------------------------------------------------------

    def test_missing_key(self):
        """GET of a missing key is 404 NoSuchKey, HEAD a 404 with no body"""
        b = self.bucket("bkt-missing")
        self.err(self.req("GET", "/%s/nope" % b), 404, "NoSuchKey")
        r = self.req("HEAD", "/%s/nope" % b)
        self.assertEqual((r.status_code, r.content), (404, b""))
        self.client_err(lambda: self.s3.get_object(Bucket=b, Key="nope"), 404, "NoSuchKey")
        self.client_err(lambda: self.s3.head_object(Bucket=b, Key="nope"), 404, "404")

    def test_range(self):
        """Range bytes=a-b, bytes=a-, bytes=-n are 206 with Content-Range and exactly those bytes, an end past
        the object is clamped, a start at or past the end is 416 InvalidRange (also any range on an empty
        object), a range that does not parse is ignored (200, whole object)"""
        b = self.bucket("bkt-range")
        data = bytes(range(256)) * 40
        n = len(data)
        self.s3.put_object(Bucket=b, Key="r", Body=data)
        self.s3.put_object(Bucket=b, Key="empty", Body=b"")
        for rng, lo, hi in (("bytes=0-9", 0, 9), ("bytes=10000-", 10000, n - 1), ("bytes=-100", n - 100, n - 1),
                            ("bytes=10200-99999", 10200, n - 1), ("bytes=5-5", 5, 5), ("bytes=-99999", 0, n - 1)):
            r = self.req("GET", "/%s/r" % b, headers={"Range": rng})
            self.assertEqual(r.status_code, 206, rng)
            self.assertEqual(r.headers["Content-Range"], "bytes %d-%d/%d" % (lo, hi, n), rng)
            self.assertEqual(r.headers["Content-Length"], str(hi - lo + 1), rng)
            self.assertEqual(r.content, data[lo:hi + 1], rng)
        g = self.s3.get_object(Bucket=b, Key="r", Range="bytes=100-199")
        self.assertEqual(g["Body"].read(), data[100:200])
        self.assertEqual(g["ContentRange"], "bytes 100-199/%d" % n)
        for rng in ("bytes=%d-" % n, "bytes=%d-%d" % (n + 10, n + 20)):
            r = self.req("GET", "/%s/r" % b, headers={"Range": rng})
            self.err(r, 416, "InvalidRange")
            self.assertEqual(r.headers.get("Content-Range"), "bytes */%d" % n)
        self.err(self.req("GET", "/%s/empty" % b, headers={"Range": "bytes=0-0"}), 416, "InvalidRange")
        r = self.req("GET", "/%s/r" % b, headers={"Range": "bytes=abc"})
        self.assertEqual((r.status_code, r.content), (200, data))

    def test_conditional_get_head(self):
        """If-Match / If-None-Match / If-Modified-Since / If-Unmodified-Since on GET and HEAD: 412
        PreconditionFailed and 304 (no body) exactly when S3 gives them, including the two combined rules"""
        b = self.bucket("bkt-cond")
        self.s3.put_object(Bucket=b, Key="c", Body=b"conditional")
        h = self.req("HEAD", "/%s/c" % b).headers
        etag, lm = h["ETag"], parsedate_to_datetime(h["Last-Modified"])
        past = formatdate((lm - datetime.timedelta(days=1)).timestamp(), usegmt=True)
        future = formatdate((lm + datetime.timedelta(days=1)).timestamp(), usegmt=True)
        cases = [
            ({"If-Match": etag}, 200), ({"If-Match": etag.strip('"')}, 200), ({"If-Match": "*"}, 200),
            ({"If-Match": '"0123"'}, 412),
            ({"If-None-Match": etag}, 304), ({"If-None-Match": '"0123"'}, 200), ({"If-None-Match": "*"}, 304),
            ({"If-Modified-Since": h["Last-Modified"]}, 304), ({"If-Modified-Since": past}, 200),
            ({"If-Unmodified-Since": past}, 412), ({"If-Unmodified-Since": future}, 200),
            ({"If-Match": etag, "If-Unmodified-Since": past}, 200),
            ({"If-None-Match": etag, "If-Modified-Since": past}, 304),
            ({"If-Match": '"0123"', "If-None-Match": etag}, 412),
        ]
        for hdrs, want in cases:
            for m in ("GET", "HEAD"):
                r = self.req(m, "/%s/c" % b, headers=hdrs)
                self.assertEqual(r.status_code, want, "%s %s" % (m, hdrs))
                if want == 200 and m == "GET":
                    self.assertEqual(r.content, b"conditional")
                elif want == 304 or m == "HEAD":
                    self.assertEqual(r.content, b"", "%s %s" % (m, hdrs))
                else:
                    self.err(r, 412, "PreconditionFailed")
        self.client_err(lambda: self.s3.get_object(Bucket=b, Key="c", IfMatch='"0123"'), 412, "PreconditionFailed")

    def test_conditional_put(self):
        """PUT with If-None-Match: * is 412 on an existing key and creates a missing one; PUT with If-Match is
        412 for a wrong ETag and replaces the object for the right one"""
        b = self.bucket("bkt-cput")
        e1 = self.s3.put_object(Bucket=b, Key="k", Body=b"one")["ETag"]
        self.err(self.req("PUT", "/%s/k" % b, data=b"two", headers={"If-None-Match": "*"}), 412, "PreconditionFailed")
        self.err(self.req("PUT", "/%s/k" % b, data=b"two", headers={"If-Match": '"%s"' % md5hex(b"x")}), 412,
                 "PreconditionFailed")
        self.assertEqual(self.get_bytes(b, "k"), b"one")
        r = self.req("PUT", "/%s/k" % b, data=b"two", headers={"If-Match": e1})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.get_bytes(b, "k"), b"two")
        r = self.req("PUT", "/%s/new" % b, data=b"new", headers={"If-None-Match": "*"})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.get_bytes(b, "new"), b"new")

    def test_response_overrides(self):
        """response-content-type, -disposition, -encoding, -language, -cache-control and -expires on GET
        replace the returned headers"""
        b = self.bucket("bkt-override")
        self.s3.put_object(Bucket=b, Key="o", Body=b"override", ContentType="text/plain")
        g = self.s3.get_object(Bucket=b, Key="o", ResponseContentType="application/x-over",
                               ResponseContentDisposition='attachment; filename="o.bin"',
                               ResponseContentEncoding="x-over", ResponseContentLanguage="fr",
                               ResponseCacheControl="no-cache",
                               ResponseExpires=datetime.datetime(2030, 5, 6, 7, 8, 9, tzinfo=datetime.timezone.utc))
        self.assertEqual(g["ContentType"], "application/x-over")
        self.assertEqual(g["ContentDisposition"], 'attachment; filename="o.bin"')
        self.assertEqual(g["ContentEncoding"], "x-over")
        self.assertEqual(g["ContentLanguage"], "fr")
        self.assertEqual(g["CacheControl"], "no-cache")
        self.assertEqual(g["ResponseMetadata"]["HTTPHeaders"]["expires"], "Mon, 06 May 2030 07:08:09 GMT")
        self.assertEqual(g["Body"].read(), b"override")
        self.assertEqual(self.s3.head_object(Bucket=b, Key="o")["ContentType"], "text/plain")

    def test_request_ids(self):
        """every response, whether the gateway answers it or forwards it to a target, carries exactly one
        non-empty x-amz-request-id, and an error's XML RequestId equals it"""
        b = self.bucket("bkt-reqid")
        self.s3.put_object(Bucket=b, Key="x", Body=b"x")
        reqs = [("GET", "/", {}), ("PUT", "/" + b, {}), ("HEAD", "/" + b, {}), ("GET", "/" + b, {}),
                ("HEAD", "/no-such-bkt-r", {}), ("PUT", "/%s/y" % b, {"data": b"y"}), ("GET", "/%s/x" % b, {}),
                ("HEAD", "/%s/x" % b, {}), ("GET", "/%s/nope" % b, {}), ("HEAD", "/%s/nope" % b, {}),
                ("PUT", "/%s/y" % b, {"data": b"y", "headers": {"Content-MD5": "bad"}}),
                ("DELETE", "/%s/y" % b, {}), ("PUT", "/ab", {}), ("GET", "/no-such-bkt-r/x", {})]
        for m, p, kw in reqs:
            r = self.req(m, p, **kw)
            ids = r.raw.headers.getlist("x-amz-request-id")
            self.assertEqual(len(ids), 1, "%s %s: x-amz-request-id %s" % (m, p, ids))
            self.assertTrue(ids[0], "%s %s" % (m, p))
            if r.status_code >= 400 and r.content:
                self.assertEqual(ET.fromstring(r.content).findtext("RequestId"), ids[0], "%s %s" % (m, p))

    # ---- delete -----------------------------------------------------------------------------------------------

    def test_delete_objects(self):
        """DeleteObject is 204 for present and missing keys; DeleteObjects reports missing keys as Deleted,
        lists nothing but errors when Quiet, and refuses 1001 keys and malformed XML with 400 MalformedXML"""
        b = self.bucket("bkt-del")
        r = self.req("DELETE", "/%s/never-was" % b)
        self.assertEqual((r.status_code, r.content), (204, b""))
        self.s3.put_object(Bucket=b, Key="one", Body=b"1")
        self.assertEqual(self.req("DELETE", "/%s/one" % b).status_code, 204)
        self.assertTrue(self.absent(b, "one"))
        for k in ("a", "b", "c", "d"):
            self.s3.put_object(Bucket=b, Key=k, Body=k.encode())
        r = self.s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "a"}, {"Key": "b"}, {"Key": "missing"}]})
        self.assertEqual(sorted(d["Key"] for d in r["Deleted"]), ["a", "b", "missing"])
        self.assertNotIn("Errors", r)
        r = self.s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "c"}, {"Key": "gone"}], "Quiet": True})
        self.assertNotIn("Deleted", r)
        self.assertNotIn("Errors", r)
        self.assertEqual([o["Key"] for o in self.s3.list_objects_v2(Bucket=b)["Contents"]], ["d"])
        self.client_err(lambda: self.s3.delete_objects(
            Bucket=b, Delete={"Objects": [{"Key": "k%d" % i} for i in range(1001)]}), 400, "MalformedXML")
        # botocore >= 1.36 sends x-amz-checksum-crc32 instead of Content-MD5
        self.s3.put_object(Bucket=b, Key="e", Body=b"e")
        body = b"<Delete><Object><Key>e</Key></Object></Delete>"
        r = self.req("POST", "/%s?delete" % b, data=body, headers={"x-amz-checksum-crc32": crc32_b64(body)})
        self.assertEqual([x.findtext(NS + "Key") for x in self.xml(r).findall(NS + "Deleted")], ["e"])
        self.assertTrue(self.absent(b, "e"))
        for body in (b"<Delete><Object><Key>d</Key></Object>", b"not xml at all"):
            r = self.req("POST", "/%s?delete" % b, data=body, headers={"Content-MD5": b64(hashlib.md5(body).digest())})
            self.err(r, 400, "MalformedXML")
        self.assertEqual(self.get_bytes(b, "d"), b"d")
        # a body that is not what its integrity headers say deletes nothing
        body = b"<Delete><Object><Key>d</Key></Object></Delete>"
        r = self.req("POST", "/%s?delete" % b, data=body, headers={"Content-MD5": b64(hashlib.md5(b"x").digest())})
        self.err(r, 400, "BadDigest")
        r = self.req("POST", "/%s?delete" % b, data=body, headers={"x-amz-checksum-crc32": crc32_b64(b"x")})
        self.err(r, 400, "BadDigest")
        self.err(self.req("POST", "/%s?delete" % b, data=body, headers={"Content-MD5": "nope"}), 400, "InvalidDigest")
        self.assertEqual(self.get_bytes(b, "d"), b"d")

    # ---- listing ----------------------------------------------------------------------------------------------

    LIST_KEYS = ["a/1", "a/2", "a/b/3", "b/1", "c", "d+e", "sp ace", "x%y", "z--1", "z--2"]

    def list_raw(self, b, **params):
        return self.req("GET", "/" + b, params=params)

    def keys_of(self, root):
        return [c.findtext(NS + "Key") for c in root.findall(NS + "Contents")]

    def prefixes_of(self, root):
        return [c.findtext(NS + "Prefix") for c in root.findall(NS + "CommonPrefixes")]

    def test_list_objects(self):
        """ListObjects v1 and v2: byte order, prefix, any delimiter (common prefixes counted as keys), max-keys
        0 / paging / non-integer, marker, start-after, continuation-token (wins over start-after),
        NextMarker, KeyCount, encoding-type=url, Owner in v1 and only with fetch-owner in v2"""
        b = self.bucket("bkt-list")
        for k in self.LIST_KEYS:
            self.s3.put_object(Bucket=b, Key=k, Body=b"12345")
        v1 = self.xml(self.list_raw(b))
        self.assertEqual(self.keys_of(v1), self.LIST_KEYS)
        self.assertEqual(v1.findtext(NS + "Prefix"), "")
        self.assertEqual(v1.findtext(NS + "IsTruncated"), "false")
        self.assertIsNone(v1.find(NS + "Delimiter"))
        c0 = v1.find(NS + "Contents")
        self.assertEqual(c0.findtext(NS + "ETag"), '"%s"' % md5hex(b"12345"))
        self.assertEqual(c0.findtext(NS + "Size"), "5")
        self.assertEqual(c0.findtext(NS + "StorageClass"), "STANDARD")
        self.assertRegex(c0.findtext(NS + "LastModified"), r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
        self.assertIsNotNone(c0.find(NS + "Owner"))
        v2 = self.xml(self.list_raw(b, **{"list-type": "2"}))
        self.assertEqual(self.keys_of(v2), self.LIST_KEYS)
        self.assertEqual(v2.findtext(NS + "KeyCount"), str(len(self.LIST_KEYS)))
        self.assertIsNone(v2.find(NS + "Contents").find(NS + "Owner"))
        v2o = self.xml(self.list_raw(b, **{"list-type": "2", "fetch-owner": "true"}))
        self.assertIsNotNone(v2o.find(NS + "Contents").find(NS + "Owner"))
        # prefix and delimiter
        for lt in ({}, {"list-type": "2"}):
            r = self.xml(self.list_raw(b, prefix="a/", **lt))
            self.assertEqual(self.keys_of(r), ["a/1", "a/2", "a/b/3"])
            self.assertEqual(r.findtext(NS + "Prefix"), "a/")
            r = self.xml(self.list_raw(b, delimiter="/", **lt))
            self.assertEqual(self.keys_of(r), ["c", "d+e", "sp ace", "x%y", "z--1", "z--2"])
            self.assertEqual(self.prefixes_of(r), ["a/", "b/"])
            self.assertEqual(r.findtext(NS + "Delimiter"), "/")
            r = self.xml(self.list_raw(b, prefix="a/", delimiter="/", **lt))
            self.assertEqual((self.keys_of(r), self.prefixes_of(r)), (["a/1", "a/2"], ["a/b/"]))
            r = self.xml(self.list_raw(b, delimiter="--", **lt))
            self.assertEqual(self.prefixes_of(r), ["z--"])
            self.assertEqual(self.keys_of(r), self.LIST_KEYS[:-2])
            r = self.xml(self.list_raw(b, delimiter="%", **lt))
            self.assertEqual(self.prefixes_of(r), ["x%"])
            r = self.xml(self.list_raw(b, delimiter="", **lt))
            self.assertIsNone(r.find(NS + "Delimiter"))
            self.assertEqual(self.keys_of(r), self.LIST_KEYS)
            r = self.xml(self.list_raw(b, **{"max-keys": "0"}, **lt))
            self.assertEqual((self.keys_of(r), r.findtext(NS + "IsTruncated")), ([], "false"))
            self.err(self.list_raw(b, **{"max-keys": "ten"}, **lt), 400, "InvalidArgument")
            self.err(self.list_raw(b, **{"max-keys": "-1"}, **lt), 400, "InvalidArgument")
            # encoding-type=url
            r = self.xml(self.list_raw(b, **{"encoding-type": "url", "prefix": "d+", "delimiter": " "}, **lt))
            self.assertEqual(r.findtext(NS + "EncodingType"), "url")
            self.assertEqual(self.keys_of(r), ["d%2Be"])
            self.assertEqual(r.findtext(NS + "Prefix"), "d%2B")
            self.assertEqual(r.findtext(NS + "Delimiter"), "%20")
            r = self.xml(self.list_raw(b, **{"encoding-type": "url", "delimiter": "/"}, **lt))
            self.assertEqual(self.keys_of(r), ["c", "d%2Be", "sp%20ace", "x%25y", "z--1", "z--2"])
        # v1 marker and NextMarker (only with a delimiter)
        r = self.xml(self.list_raw(b, marker="b/1"))
        self.assertEqual(self.keys_of(r), self.LIST_KEYS[4:])
        self.assertEqual(r.findtext(NS + "Marker"), "b/1")
        r = self.xml(self.list_raw(b, marker="zzz"))
        self.assertEqual((self.keys_of(r), r.findtext(NS + "IsTruncated")), ([], "false"))
        r = self.xml(self.list_raw(b, delimiter="/", **{"max-keys": "3"}))
        self.assertEqual((self.prefixes_of(r), self.keys_of(r)), (["a/", "b/"], ["c"]))
        self.assertEqual((r.findtext(NS + "IsTruncated"), r.findtext(NS + "NextMarker")), ("true", "c"))
        r = self.xml(self.list_raw(b, delimiter="/", marker="c", **{"max-keys": "3"}))
        self.assertEqual(self.keys_of(r), ["d+e", "sp ace", "x%y"])
        # v2 start-after, max-keys paging with continuation tokens
        r = self.xml(self.list_raw(b, **{"list-type": "2", "start-after": "c"}))
        self.assertEqual(self.keys_of(r), self.LIST_KEYS[5:])
        self.assertEqual(r.findtext(NS + "StartAfter"), "c")
        got, token, pages = [], None, 0
        for _ in range(20):
            p = {"list-type": "2", "max-keys": "3"}
            if token:
                p["continuation-token"] = token
            r = self.xml(self.list_raw(b, **p))
            pages += 1
            got += self.keys_of(r)
            self.assertEqual(r.findtext(NS + "MaxKeys"), "3")
            self.assertEqual(r.findtext(NS + "KeyCount"), str(len(self.keys_of(r))))
            if token:
                self.assertEqual(r.findtext(NS + "ContinuationToken"), token)
            if r.findtext(NS + "IsTruncated") != "true":
                self.assertIsNone(r.find(NS + "NextContinuationToken"))
                break
            token = r.findtext(NS + "NextContinuationToken")
            self.assertTrue(token)
        self.assertEqual((got, pages), (self.LIST_KEYS, 4))
        r = self.xml(self.list_raw(b, **{"list-type": "2", "max-keys": "3"}))
        tok = r.findtext(NS + "NextContinuationToken")
        r = self.xml(self.list_raw(b, **{"list-type": "2", "max-keys": "3", "continuation-token": tok,
                                        "start-after": "x"}))
        self.assertEqual(self.keys_of(r), self.LIST_KEYS[3:6])
        self.assertEqual(r.findtext(NS + "StartAfter"), "x")
        # boto3 (adds encoding-type=url itself and decodes)
        bl = self.s3.list_objects_v2(Bucket=b, Delimiter="/")
        self.assertEqual([o["Key"] for o in bl["Contents"]], ["c", "d+e", "sp ace", "x%y", "z--1", "z--2"])
        self.assertEqual([p["Prefix"] for p in bl["CommonPrefixes"]], ["a/", "b/"])

    def test_list_many(self):
        """1100 keys: every key exactly once and in order through the boto3 v1 and v2 paginators and the aws
        CLI; a page is at most 1000 keys even when max-keys asks for more"""
        b = self.bucket("bkt-many")
        keys = ["many/%05d" % i for i in range(1100)]
        with concurrent.futures.ThreadPoolExecutor(16) as ex:
            list(ex.map(lambda k: self.s3.put_object(Bucket=b, Key=k, Body=k.encode()), keys))
        for op in ("list_objects", "list_objects_v2"):
            got, pages = [], 0
            for page in self.s3.get_paginator(op).paginate(Bucket=b):
                got += [o["Key"] for o in page.get("Contents", [])]
                pages += 1
            self.assertEqual(got, keys, op)
            self.assertEqual(pages, 2, op)
        for lt in ({}, {"list-type": "2"}):
            r = self.xml(self.list_raw(b, **{"max-keys": "5000"}, **lt))
            self.assertEqual(self.keys_of(r), keys[:1000])
            self.assertEqual(r.findtext(NS + "IsTruncated"), "true")
        p = self.aws("s3", "ls", "s3://%s/many/" % b)
        lines = p.stdout.decode().splitlines()
        self.assertEqual([ln.split()[-1] for ln in lines], [k[5:] for k in keys])

    # ---- multipart --------------------------------------------------------------------------------------------

    def complete_raw(self, b, key, uid, body):
        return self.req("POST", "/%s/%s" % (b, key), params={"uploadId": uid}, data=body)

    def test_multipart(self):
        """create / upload part (ETag = part MD5) / complete: the ETag is "md5(part md5s)-N", the object has
        every byte and Create's Content-Type and metadata; InvalidPartOrder, InvalidPart (wrong ETag, a part
        not uploaded, a subset of the uploaded parts), MalformedXML, EntityTooSmall, InvalidArgument part
        numbers; abort is 204 and the id is then 404 NoSuchUpload"""
        b = self.bucket("bkt-mpu")
        parts = [os.urandom(5 * MiB), os.urandom(5 * MiB), os.urandom(1000)]
        uid = self.s3.create_multipart_upload(Bucket=b, Key="mp", ContentType="application/x-mp",
                                              Metadata={"m": "1"})["UploadId"]
        etags = []
        for i, p in enumerate(parts, 1):
            e = self.s3.upload_part(Bucket=b, Key="mp", UploadId=uid, PartNumber=i, Body=p)["ETag"]
            self.assertEqual(e, '"%s"' % md5hex(p))
            etags.append(e)
        self.assertTrue(self.absent(b, "mp"))

        def complete(lst):
            return lambda: self.s3.complete_multipart_upload(
                Bucket=b, Key="mp", UploadId=uid,
                MultipartUpload={"Parts": [{"PartNumber": n, "ETag": e} for n, e in lst]})
        self.client_err(complete([(2, etags[1]), (1, etags[0]), (3, etags[2])]), 400, "InvalidPartOrder")
        self.client_err(complete([(1, etags[0]), (2, '"%s"' % md5hex(b"no")), (3, etags[2])]), 400, "InvalidPart")
        self.client_err(complete([(1, etags[0]), (2, etags[1]), (4, etags[2])]), 400, "InvalidPart")
        self.client_err(complete([(1, etags[0]), (3, etags[2])]), 400, "InvalidPart")
        self.err(self.complete_raw(b, "mp", uid, b"<CompleteMultipartUpload><Part>"), 400, "MalformedXML")
        self.err(self.complete_raw(b, "mp", uid, b"<CompleteMultipartUpload></CompleteMultipartUpload>"), 400,
                 "MalformedXML")
        for bad in (0, 10001):
            r = self.req("PUT", "/%s/mp" % b, params={"uploadId": uid, "partNumber": str(bad)}, data=b"x")
            self.err(r, 400, "InvalidArgument")
        self.assertTrue(self.absent(b, "mp"))
        r = complete([(1, etags[0]), (2, etags[1]), (3, etags[2])])()
        want = '"%s-3"' % md5hex(b"".join(hashlib.md5(p).digest() for p in parts))
        self.assertEqual(r["ETag"], want)
        g = self.s3.get_object(Bucket=b, Key="mp")
        self.assertEqual(g["ETag"], want)
        self.assertEqual(g["ContentType"], "application/x-mp")
        self.assertEqual(g["Metadata"], {"m": "1"})
        self.assertEqual(g["ContentLength"], sum(map(len, parts)))
        self.assertEqual(hashlib.sha256(g["Body"].read()).digest(), hashlib.sha256(b"".join(parts)).digest())
        lst = self.s3.list_objects_v2(Bucket=b, Prefix="mp")["Contents"]
        self.assertEqual([(o["Key"], o["ETag"], o["Size"]) for o in lst], [("mp", want, sum(map(len, parts)))])
        # completing again with the same id and parts answers the same result (s3-tests completes twice)
        self.assertEqual(complete([(1, etags[0]), (2, etags[1]), (3, etags[2])])()["ETag"], want)

        # small parts: EntityTooSmall at complete; then abort
        uid2 = self.s3.create_multipart_upload(Bucket=b, Key="small")["UploadId"]
        e1 = self.s3.upload_part(Bucket=b, Key="small", UploadId=uid2, PartNumber=1, Body=b"a" * 10240)["ETag"]
        e2 = self.s3.upload_part(Bucket=b, Key="small", UploadId=uid2, PartNumber=2, Body=b"b" * 10240)["ETag"]
        self.client_err(lambda: self.s3.complete_multipart_upload(
            Bucket=b, Key="small", UploadId=uid2,
            MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}, {"PartNumber": 2, "ETag": e2}]}),
            400, "EntityTooSmall")
        self.assertTrue(self.absent(b, "small"))
        r = self.req("DELETE", "/%s/small" % b, params={"uploadId": uid2})
        self.assertEqual((r.status_code, r.content), (204, b""))
        self.client_err(lambda: self.s3.upload_part(Bucket=b, Key="small", UploadId=uid2, PartNumber=3, Body=b"c"),
                        404, "NoSuchUpload")
        self.client_err(lambda: self.s3.complete_multipart_upload(
            Bucket=b, Key="small", UploadId=uid2, MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e1}]}),
            404, "NoSuchUpload")
        self.err(self.req("DELETE", "/%s/small" % b, params={"uploadId": uid2}), 404, "NoSuchUpload")
        self.assertTrue(self.absent(b, "small"))
        # a single small part is a valid upload
        uid3 = self.s3.create_multipart_upload(Bucket=b, Key="one")["UploadId"]
        e = self.s3.upload_part(Bucket=b, Key="one", UploadId=uid3, PartNumber=1, Body=b"only part")["ETag"]
        r = self.s3.complete_multipart_upload(Bucket=b, Key="one", UploadId=uid3,
                                              MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": e}]})
        self.assertEqual(r["ETag"], '"%s-1"' % md5hex(hashlib.md5(b"only part").digest()))
        self.assertEqual(self.get_bytes(b, "one"), b"only part")

    def test_get_part_number(self):
        """GET/HEAD ?partNumber=N: on a multipart object part N's bytes with x-amz-mp-parts-count and the object
        ETag, N past the parts 400 InvalidPart; on a single-part object N=1 is the whole object and N=2 400
        InvalidPart; before completion 404 NoSuchKey"""
        b = self.bucket("bkt-partno")
        parts = [os.urandom(5 * MiB), b"the tail part"]
        uid = self.s3.create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
        etags = [self.s3.upload_part(Bucket=b, Key="mp", UploadId=uid, PartNumber=i, Body=p)["ETag"]
                 for i, p in enumerate(parts, 1)]
        self.err(self.req("GET", "/%s/mp" % b, params={"partNumber": "1"}), 404, "NoSuchKey")
        etag = self.s3.complete_multipart_upload(
            Bucket=b, Key="mp", UploadId=uid,
            MultipartUpload={"Parts": [{"PartNumber": i, "ETag": e} for i, e in enumerate(etags, 1)]})["ETag"]
        for n, p in enumerate(parts, 1):
            r = self.req("GET", "/%s/mp" % b, params={"partNumber": str(n)})
            self.assertIn(r.status_code, (200, 206), r.text[:300])
            self.assertEqual((len(r.content), r.headers.get("x-amz-mp-parts-count"), r.headers.get("ETag")),
                             (len(p), "2", etag), n)
            self.assertEqual(r.content, p, n)
            h = self.req("HEAD", "/%s/mp" % b, params={"partNumber": str(n)})
            self.assertEqual(h.headers.get("Content-Length"), str(len(p)))
        self.err(self.req("GET", "/%s/mp" % b, params={"partNumber": "3"}), 400, "InvalidPart")
        self.s3.put_object(Bucket=b, Key="single", Body=b"single part")
        r = self.req("GET", "/%s/single" % b, params={"partNumber": "1"})
        self.assertEqual((r.status_code in (200, 206), r.content), (True, b"single part"))
        self.err(self.req("GET", "/%s/single" % b, params={"partNumber": "2"}), 400, "InvalidPart")

    def owner(self, bucket, key):
        """the id of the target that stores bucket/key (native HEAD through the gateway: Ais-Location t[ID]:..)"""
        r = self.s.head(self.url + "/v1/objects/%s/%s" % (bucket, quote(key)), allow_redirects=True, timeout=30)
        self.assertEqual(r.status_code, 200, key)
        loc = r.headers["Ais-Location"]
        return loc[loc.index("[") + 1:loc.index("]")]

    def test_copy_object(self):
        """CopyObject: the copy has the source's bytes and an MD5 ETag (CopyObjectResult), keeps the source's
        Content-Type and user metadata with COPY and takes the request's with REPLACE; it works between
        buckets, whether or not the source is on the destination's target, for 16 MiB, empty and
        percent-encoded keys; onto itself it is 400 InvalidRequest with COPY and replaces metadata with
        REPLACE; x-amz-copy-source-if-* failing is 412; a missing source is 404 NoSuchKey / NoSuchBucket,
        a missing destination bucket 404 NoSuchBucket"""
        b, b2 = self.bucket("bkt-copy"), self.bucket("bkt-copy2")
        data = os.urandom(16 * MiB + 3)
        src_etag = self.s3.put_object(Bucket=b, Key="src", Body=data, ContentType="text/x-src",
                                      Metadata={"a": "1"})["ETag"]
        r = self.s3.copy_object(Bucket=b2, Key="dst", CopySource={"Bucket": b, "Key": "src"})
        self.assertEqual(r["CopyObjectResult"]["ETag"], '"%s"' % md5hex(data))
        self.assertIsNotNone(r["CopyObjectResult"]["LastModified"])
        g = self.s3.get_object(Bucket=b2, Key="dst")
        self.assertEqual((g["ContentType"], g["Metadata"], g["ETag"]), ("text/x-src", {"a": "1"}, src_etag))
        self.assertEqual(hashlib.sha256(g["Body"].read()).digest(), hashlib.sha256(data).digest())
        # REPLACE takes the request's metadata
        self.s3.copy_object(Bucket=b, Key="replaced", CopySource={"Bucket": b, "Key": "src"},
                            MetadataDirective="REPLACE", ContentType="text/x-new", Metadata={"b": "2"})
        h = self.s3.head_object(Bucket=b, Key="replaced")
        self.assertEqual((h["ContentType"], h["Metadata"], h["ContentLength"]), ("text/x-new", {"b": "2"}, len(data)))
        # the source on the destination's target and on the other one
        small = os.urandom(100000)
        self.s3.put_object(Bucket=b, Key="small", Body=small)
        src_owner, seen = self.owner(b, "small"), set()
        for i in range(40):
            k = "spread/%d" % i
            self.s3.copy_object(Bucket=b, Key=k, CopySource={"Bucket": b, "Key": "small"})
            self.assertEqual(self.get_bytes(b, k), small, k)
            seen.add(self.owner(b, k) == src_owner)
            if len(seen) == 2:
                break
        self.assertEqual(seen, {True, False})
        # empty, and keys that need percent-encoding (raw header: no leading slash)
        self.s3.put_object(Bucket=b, Key="empty", Body=b"")
        r = self.s3.copy_object(Bucket=b, Key="empty-copy", CopySource={"Bucket": b, "Key": "empty"})
        self.assertEqual(r["CopyObjectResult"]["ETag"], '"d41d8cd98f00b204e9800998ecf8427e"')
        self.assertEqual(self.get_bytes(b, "empty-copy"), b"")
        odd = "dir/sp ace+plus%ü.txt"
        self.s3.put_object(Bucket=b, Key=odd, Body=b"odd")
        r = self.req("PUT", "/%s/%s" % (b2, quote("copied/ü +.txt")),
                     headers={"x-amz-copy-source": quote(b + "/" + odd)})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.xml(r).tag, NS + "CopyObjectResult")
        self.assertEqual(self.get_bytes(b2, "copied/ü +.txt"), b"odd")
        # onto itself
        self.client_err(lambda: self.s3.copy_object(Bucket=b, Key="small", CopySource={"Bucket": b, "Key": "small"}),
                        400, "InvalidRequest")
        self.s3.copy_object(Bucket=b, Key="small", CopySource={"Bucket": b, "Key": "small"},
                            MetadataDirective="REPLACE", Metadata={"self": "yes"})
        h = self.s3.head_object(Bucket=b, Key="small")
        self.assertEqual((h["Metadata"], h["ETag"]), ({"self": "yes"}, '"%s"' % md5hex(small)))
        self.assertEqual(self.get_bytes(b, "small"), small)
        # copy-source conditions
        sm = '"%s"' % md5hex(small)
        for kw in ({"CopySourceIfNoneMatch": sm}, {"CopySourceIfMatch": '"%s"' % md5hex(b"no")},
                   {"CopySourceIfUnmodifiedSince": datetime.datetime(2001, 1, 1, tzinfo=datetime.timezone.utc)}):
            self.client_err(lambda: self.s3.copy_object(Bucket=b, Key="cond", CopySource={"Bucket": b, "Key": "small"},
                                                        **kw), 412, "PreconditionFailed")
        self.assertTrue(self.absent(b, "cond"))
        self.s3.copy_object(Bucket=b, Key="cond", CopySource={"Bucket": b, "Key": "small"}, CopySourceIfMatch=sm)
        self.assertEqual(self.get_bytes(b, "cond"), small)
        # missing source / destination
        self.client_err(lambda: self.s3.copy_object(Bucket=b, Key="x", CopySource={"Bucket": b, "Key": "nope"}),
                        404, "NoSuchKey")
        self.client_err(lambda: self.s3.copy_object(Bucket=b, Key="x", CopySource={"Bucket": "no-such-src-b",
                                                                                    "Key": "small"}),
                        404, "NoSuchBucket")
        self.client_err(lambda: self.s3.copy_object(Bucket="no-such-dst-b", Key="x",
                                                    CopySource={"Bucket": b, "Key": "small"}), 404, "NoSuchBucket")
        self.assertTrue(self.absent(b, "x"))

    def test_list_uploads_parts_and_part_copy(self):
        """ListMultipartUploads gathers the uploads in flight from every target (prefix, delimiter, markers,
        max-uploads); ListParts pages an upload's parts; UploadPartCopy copies whole sources or byte ranges from
        either target into parts (bad range syntax 400 InvalidArgument, past the end 416 InvalidRange); the
        completed object is the concatenation and GET ?partNumber serves each part"""
        b = self.bucket("bkt-upl")
        src = os.urandom(6 * 1024 * 1024 + 100)
        for i in range(4):
            self.s3.put_object(Bucket=b, Key="src%d" % i, Body=src)
        ids = {k: self.s3.create_multipart_upload(Bucket=b, Key=k)["UploadId"] for k in ("a/1", "a/2", "b", "c")}
        r = self.s3.list_multipart_uploads(Bucket=b)
        self.assertEqual([u["Key"] for u in r["Uploads"]], ["a/1", "a/2", "b", "c"])
        self.assertEqual({u["UploadId"] for u in r["Uploads"]}, set(ids.values()))
        r = self.s3.list_multipart_uploads(Bucket=b, Delimiter="/")
        self.assertEqual([u["Key"] for u in r["Uploads"]], ["b", "c"])
        self.assertEqual([c["Prefix"] for c in r["CommonPrefixes"]], ["a/"])
        r = self.s3.list_multipart_uploads(Bucket=b, MaxUploads=2)
        self.assertTrue(r["IsTruncated"])
        r = self.s3.list_multipart_uploads(Bucket=b, KeyMarker=r["NextKeyMarker"],
                                           UploadIdMarker=r["NextUploadIdMarker"])
        self.assertEqual([u["Key"] for u in r["Uploads"]], ["b", "c"])
        self.assertEqual([u["Key"] for u in self.s3.list_multipart_uploads(Bucket=b, Prefix="a/")["Uploads"]],
                         ["a/1", "a/2"])
        five = 5 * 1024 * 1024
        for n, key in enumerate(("a/1", "a/2", "b", "c")):
            uid = ids[key]
            p1 = self.s3.upload_part_copy(Bucket=b, Key=key, UploadId=uid, PartNumber=1,
                                          CopySource="%s/src%d" % (b, n), CopySourceRange="bytes=0-%d" % (five - 1))
            p2 = self.s3.upload_part_copy(Bucket=b, Key=key, UploadId=uid, PartNumber=2,
                                          CopySource={"Bucket": b, "Key": "src%d" % ((n + 1) % 4)},
                                          CopySourceRange="bytes=%d-%d" % (five, len(src) - 1))
            self.assertEqual(p1["CopyPartResult"]["ETag"], '"%s"' % hashlib.md5(src[:five]).hexdigest())
            parts = self.s3.list_parts(Bucket=b, Key=key, UploadId=uid)["Parts"]
            self.assertEqual([(p["PartNumber"], p["Size"]) for p in parts], [(1, five), (2, len(src) - five)])
            pg = self.s3.list_parts(Bucket=b, Key=key, UploadId=uid, MaxParts=1)
            self.assertTrue(pg["IsTruncated"])
            self.assertEqual(pg["NextPartNumberMarker"], 1)
            self.s3.complete_multipart_upload(Bucket=b, Key=key, UploadId=uid, MultipartUpload={"Parts": [
                {"PartNumber": 1, "ETag": p1["CopyPartResult"]["ETag"]},
                {"PartNumber": 2, "ETag": p2["CopyPartResult"]["ETag"]}]})
            self.assertEqual(self.get_bytes(b, key), src)
            o = self.s3.get_object(Bucket=b, Key=key, PartNumber=2)
            self.assertEqual(o["Body"].read(), src[five:])
            self.assertEqual(o["PartsCount"], 2)
        self.assertEqual(self.s3.list_multipart_uploads(Bucket=b).get("Uploads", []), [])
        uid = self.s3.create_multipart_upload(Bucket=b, Key="bad")["UploadId"]
        for rng in ("bytes=0", "0-2", "bytes=hello-", "bytes=5-1", "bytes=0-1,3-4"):
            self.client_err(lambda: self.s3.upload_part_copy(Bucket=b, Key="bad", UploadId=uid, PartNumber=1,
                                                             CopySource="%s/src0" % b, CopySourceRange=rng),
                            400, "InvalidArgument")
        for n in range(4):  # past the end, from whichever target holds the source
            self.client_err(lambda: self.s3.upload_part_copy(Bucket=b, Key="bad", UploadId=uid, PartNumber=1,
                                                             CopySource="%s/src%d" % (b, n),
                                                             CopySourceRange="bytes=0-99999999"),
                            416, "InvalidRange")
        self.assertEqual(self.s3.list_parts(Bucket=b, Key="bad", UploadId=uid).get("Parts", []), [])
        self.s3.abort_multipart_upload(Bucket=b, Key="bad", UploadId=uid)
        self.client_err(lambda: self.s3.list_parts(Bucket=b, Key="bad", UploadId=uid), 404, "NoSuchUpload")
        self.assertTrue(self.absent(b, "bad"))

    def test_large_upload(self):
        """a 110 MiB file goes up with boto3 upload_file (multipart, 8 MiB parts) and with aws s3 cp, and both
        read back byte-identical (boto3 download_file, aws s3 cp to stdout)"""
        b = self.bucket("bkt-big")
        path = os.path.join(self.tmp, "big.bin")
        h = hashlib.sha256()
        with open(path, "wb") as f:
            for _ in range(110):
                chunk = os.urandom(MiB)
                h.update(chunk)
                f.write(chunk)
        want = h.hexdigest()
        try:
            self.s3.upload_file(path, b, "boto3.bin", Config=TransferConfig(max_concurrency=4))
            head = self.s3.head_object(Bucket=b, Key="boto3.bin")
            self.assertEqual(head["ContentLength"], 110 * MiB)
            self.assertRegex(head["ETag"], r'^"[0-9a-f]{32}-14"$')
            back = os.path.join(self.tmp, "big.back")
            self.s3.download_file(b, "boto3.bin", back)
            self.assertEqual(sha256_file(back), want)
            os.unlink(back)
            self.aws("s3", "cp", "--no-progress", "--only-show-errors", path, "s3://%s/cli.bin" % b)
            p = subprocess.Popen([AWS, "--endpoint-url", self.ep, "s3", "cp", "--no-progress", "--only-show-errors",
                                  "s3://%s/cli.bin" % b, "-"], stdout=subprocess.PIPE, env=self.env,
                                 stdin=subprocess.DEVNULL)
            h2, n = hashlib.sha256(), 0
            for chunk in iter(lambda: p.stdout.read(MiB), b""):
                h2.update(chunk)
                n += len(chunk)
            self.assertEqual(p.wait(120), 0)
            self.assertEqual((n, h2.hexdigest()), (110 * MiB, want))
        finally:
            os.unlink(path)

    def raw(self, head, body_parts=(), pause=0.0):
        """a raw HTTP/1.1 request to the gateway over one socket: the head, then the body in parts with pauses"""
        sk = socket.create_connection(("127.0.0.1", self.port), timeout=60)
        sk.sendall(head.encode())
        for part in body_parts:
            sk.sendall(part)
            time.sleep(pause)
        return sk

    def read_answer(self, sk, slow_after=None, pause=0.0):
        """status and body of the answer on sk (Content-Length framed); with slow_after, stop reading for `pause`
        seconds once that many body bytes are in"""
        f = sk.makefile("rb")
        status = int(f.readline().split()[1])
        n = 0
        while True:
            ln = f.readline().strip()
            if not ln:
                break
            k, v = ln.split(b":", 1)
            if k.lower() == b"content-length":
                n = int(v)
        body, slept = bytearray(), False
        while len(body) < n:
            chunk = f.read(min(65536, n - len(body)))
            if not chunk:
                break
            body += chunk
            if slow_after is not None and not slept and len(body) >= slow_after:
                time.sleep(pause)
                slept = True
        return status, bytes(body)

    def test_forward_back_pressure(self):
        """Through the gateway's forward, a reader that stops for a while and an uploader that sends its body in
        slow pieces both get every byte (the transfer pauses and resumes); clients that vanish mid-download and
        mid-upload store nothing and leave the gateway serving."""
        b = self.bucket("bkt-bp")
        data = os.urandom(24 * MiB + 5)
        self.s3.put_object(Bucket=b, Key="big", Body=data)
        path = "/s3/%s/big" % b
        sk = self.raw("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path)
        st, got = self.read_answer(sk, slow_after=MiB, pause=1.5)  # the forward's ring fills: it must pause
        sk.close()
        self.assertEqual((st, len(got), hashlib.sha256(got).hexdigest()),
                         (200, len(data), hashlib.sha256(data).hexdigest()))
        up = os.urandom(3 * MiB + 11)
        parts = [up[i:i + 256 * 1024] for i in range(0, len(up), 256 * 1024)]
        sk = self.raw("PUT /s3/%s/slow HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (b, len(up)), parts,
                      pause=0.05)  # the target reads faster than this: the upload pauses for data each time
        st, _ = self.read_answer(sk)
        sk.close()
        self.assertEqual(st, 200)
        self.assertEqual(self.get_bytes(b, "slow"), up)
        for _ in range(3):  # a reader that goes away after 1 MiB
            sk = self.raw("GET %s HTTP/1.1\r\nHost: x\r\n\r\n" % path)
            sk.recv(MiB)
            sk.close()
        # an uploader that goes away half-way: nothing is stored
        sk = self.raw("PUT /s3/%s/cut HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % (b, len(up)),
                      parts[:4], pause=0.05)
        sk.close()
        time.sleep(0.5)
        self.assertTrue(self.absent(b, "cut"))
        self.assertEqual(self.get_bytes(b, "big"), data)  # and the gateway goes on serving

    # ---- CLIs -------------------------------------------------------------------------------------------------

    @unittest.skipUnless(os.access(AWS, os.X_OK), "no /usr/bin/aws (awscli)")
    def test_awscli(self):
        """aws s3 cp up and down, s3 ls, s3 sync (a second sync uploads nothing), a presigned URL fetched with
        curl, s3api put-object / head-object"""
        b = self.bucket("bkt-cli")
        d = os.path.join(self.tmp, "cli")
        files = {"a.txt": b"alpha\n", "sub/b.bin": os.urandom(100000), "sub/deeper/c.txt": b"gamma\n"}
        for rel, data in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            with open(os.path.join(d, rel), "wb") as f:
                f.write(data)
        self.aws("s3", "cp", "--no-progress", "--only-show-errors", os.path.join(d, "sub/b.bin"), "s3://%s/one.bin" % b)
        out = os.path.join(self.tmp, "one.out")
        self.aws("s3", "cp", "--no-progress", "--only-show-errors", "s3://%s/one.bin" % b, out)
        with open(out, "rb") as f:
            self.assertEqual(f.read(), files["sub/b.bin"])
        self.assertEqual(self.s3.head_object(Bucket=b, Key="one.bin")["ETag"], '"%s"' % md5hex(files["sub/b.bin"]))
        ls = self.aws("s3", "ls", "s3://%s/" % b).stdout.decode()
        self.assertEqual([ln.split()[-1] for ln in ls.splitlines()], ["one.bin"])
        self.assertIn(" 100000 ", ls)
        first = self.aws("s3", "sync", "--no-progress", d, "s3://%s/sync/" % b).stdout.decode()
        self.assertEqual(first.count("upload:"), 3, first)
        keys = sorted(o["Key"] for o in self.s3.list_objects_v2(Bucket=b, Prefix="sync/")["Contents"])
        self.assertEqual(keys, sorted("sync/" + k for k in files))
        for rel, data in files.items():
            self.assertEqual(self.get_bytes(b, "sync/" + rel), data)
        second = self.aws("s3", "sync", "--no-progress", d, "s3://%s/sync/" % b).stdout.decode()
        self.assertEqual(second.strip(), "", second)
        ls = self.aws("s3", "ls", "--recursive", "s3://%s/sync/" % b).stdout.decode()
        self.assertEqual(sorted(ln.split()[-1] for ln in ls.splitlines()), keys)
        # presigned GET through curl
        url = self.aws("s3", "presign", "s3://%s/one.bin" % b, "--expires-in", "300").stdout.decode().strip()
        self.assertTrue(url.startswith(self.ep + "/%s/one.bin?" % b), url)
        self.assertIn("X-Amz-Signature=", url)
        c = subprocess.run([CURL, "-sS", "-f", "--max-time", "30", url], capture_output=True, timeout=60)
        self.assertEqual(c.returncode, 0, c.stderr)
        self.assertEqual(c.stdout, files["sub/b.bin"])
        # s3api
        pj = json.loads(self.aws("s3api", "put-object", "--bucket", b, "--key", "api/a.txt", "--body",
                                 os.path.join(d, "a.txt"), "--content-type", "text/x-api",
                                 "--metadata", "k1=v1").stdout)
        self.assertEqual(pj["ETag"], '"%s"' % md5hex(files["a.txt"]))
        hj = json.loads(self.aws("s3api", "head-object", "--bucket", b, "--key", "api/a.txt").stdout)
        self.assertEqual((hj["ContentLength"], hj["ContentType"], hj["Metadata"], hj["ETag"]),
                         (len(files["a.txt"]), "text/x-api", {"k1": "v1"}, pj["ETag"]))
        p = self.aws("s3api", "head-object", "--bucket", b, "--key", "api/none", check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn(b"404", p.stderr)

    @unittest.skipUnless(os.access(S3CMD, os.X_OK), "no /usr/bin/s3cmd")
    def test_s3cmd(self):
        """s3cmd 2.3 with host_base = HOST:PORT/s3 (its ConnMan takes the path after host:port as a prefix) and
        host_bucket without %(bucket)s (path style): mb, put, ls, get, info, del"""
        cfg = os.path.join(self.tmp, "s3cmd.cfg")
        hb = "127.0.0.1:%d/s3" % self.port
        with open(cfg, "w") as f:
            f.write("[default]\naccess_key = %s\nsecret_key = %s\nhost_base = %s\nhost_bucket = %s\n"
                    "use_https = False\nsignature_v2 = False\nbucket_location = us-east-1\ncheck_ssl_certificate = "
                    "False\nproxy_host = \nprogress_meter = False\n" % (AK, SK, hb, hb))

        def s3cmd(*args):
            p = subprocess.run([S3CMD, "-c", cfg, "--no-progress"] + list(args), capture_output=True,
                               timeout=120, env=self.env, stdin=subprocess.DEVNULL)
            self.assertEqual(p.returncode, 0, "s3cmd %s: %s%s" % (args, p.stdout, p.stderr))
            return p.stdout.decode()
        s3cmd("mb", "s3://bkt-s3cmd")
        self.assertEqual(self.req("HEAD", "/bkt-s3cmd").status_code, 200)
        src = os.path.join(self.tmp, "s3cmd.in")
        data = os.urandom(40000)
        with open(src, "wb") as f:
            f.write(data)
        s3cmd("put", src, "s3://bkt-s3cmd/dir/file.bin")
        self.assertEqual(self.get_bytes("bkt-s3cmd", "dir/file.bin"), data)
        ls = s3cmd("ls", "-r", "s3://bkt-s3cmd")
        self.assertIn("s3://bkt-s3cmd/dir/file.bin", ls)
        self.assertIn(" 40000 ", ls)
        out = os.path.join(self.tmp, "s3cmd.out")
        s3cmd("get", "--force", "s3://bkt-s3cmd/dir/file.bin", out)
        with open(out, "rb") as f:
            self.assertEqual(f.read(), data)
        info = s3cmd("info", "s3://bkt-s3cmd/dir/file.bin")
        self.assertIn(md5hex(data), info)
        s3cmd("del", "s3://bkt-s3cmd/dir/file.bin")
        self.assertTrue(self.absent("bkt-s3cmd", "dir/file.bin"))

    @unittest.skipUnless(os.access(RCLONE, os.X_OK), "no /usr/bin/rclone")
    def test_rclone(self):
        """rclone (s3, provider Other, force_path_style): copy a directory up and back, lsf, check (MD5 of
        single-part objects) passes and then catches a changed local file"""
        cfg = os.path.join(self.tmp, "rclone.conf")
        with open(cfg, "w") as f:
            f.write("[shale]\ntype = s3\nprovider = Other\naccess_key_id = %s\nsecret_access_key = %s\n"
                    "endpoint = %s\nforce_path_style = true\nregion = us-east-1\n" % (AK, SK, self.ep))
        b = self.bucket("bkt-rclone")
        d = os.path.join(self.tmp, "rc-src")
        files = {"x.txt": b"x" * 1000, "y/z.bin": os.urandom(200000), "y/w w.txt": b"spaces\n"}
        for rel, data in files.items():
            os.makedirs(os.path.dirname(os.path.join(d, rel)), exist_ok=True)
            with open(os.path.join(d, rel), "wb") as f:
                f.write(data)

        def rclone(*args, check=True):
            p = subprocess.run([RCLONE, "--config", cfg, "--retries", "1", "--low-level-retries", "2",
                                "--contimeout", "10s", "--timeout", "60s"] + list(args), capture_output=True,
                               timeout=120, env=self.env, stdin=subprocess.DEVNULL)
            if check:
                self.assertEqual(p.returncode, 0, "rclone %s: %s%s" % (args, p.stdout, p.stderr))
            return p
        rclone("copy", d, "shale:%s/dir" % b)
        for rel, data in files.items():
            self.assertEqual(self.get_bytes(b, "dir/" + rel), data)
        lsf = rclone("lsf", "-R", "--files-only", "shale:%s/dir" % b).stdout.decode().splitlines()
        self.assertEqual(sorted(lsf), sorted(files))
        rclone("check", d, "shale:%s/dir" % b)
        back = os.path.join(self.tmp, "rc-back")
        rclone("copy", "shale:%s/dir" % b, back)
        for rel, data in files.items():
            with open(os.path.join(back, rel), "rb") as f:
                self.assertEqual(f.read(), data, rel)
        with open(os.path.join(d, "x.txt"), "wb") as f:
            f.write(b"y" * 1000)
        p = rclone("check", d, "shale:%s/dir" % b, check=False)
        self.assertNotEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"x.txt", p.stderr)

    @unittest.skipUnless(os.access(AWS, os.X_OK), "no /usr/bin/aws (awscli)")
    def test_webdataset_pipe(self):
        """a tar shard written over S3 is read back the way WebDataset's `pipe:aws s3 cp s3://... -` URL does:
        the CLI streams it to stdout and tarfile parses it in stream mode, every member intact and in order"""
        b = self.bucket("bkt-wds")
        members = []
        for i in range(8):
            members += [("%06d.cls" % i, str(i % 3).encode()), ("%06d.jpg" % i, os.urandom(3000 + 17 * i))]
        self.s3.put_object(Bucket=b, Key="train/shard-000000.tar", Body=make_tar(members, mtime=1700000000))
        p = subprocess.Popen([AWS, "--endpoint-url", self.ep, "s3", "cp", "--no-progress", "--only-show-errors",
                              "s3://%s/train/shard-000000.tar" % b, "-"], stdout=subprocess.PIPE, env=self.env,
                             stdin=subprocess.DEVNULL)
        try:
            with tarfile.open(fileobj=p.stdout, mode="r|") as tf:
                got = [(m.name, tf.extractfile(m).read()) for m in tf]
        finally:
            p.stdout.close()
            rc = p.wait(60)
        self.assertEqual(rc, 0)
        self.assertEqual(got, members)


# ---- S3AuthTest (signature verification on) ----------------------------------------------------------------------
# Signature verification on (SigV4, presigned URLs, signed aws-chunked bodies, virtual-hosted style) is tested
# on a cluster of its own in tests/integration/test_s3_auth.py; everything above runs with verification off.


if __name__ == "__main__":
    main()
