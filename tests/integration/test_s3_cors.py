#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""S3 CORS and GetObjectAttributes (issue 39) against a real cluster of 1 gateway and 2 targets:
Put/Get/DeleteBucketCors with boto3 and the aws CLI (S3's limits and error codes, kept in the bucket's props
"cors"), browser preflights (OPTIONS /s3/B[/KEY], raw, without credentials, also with signature verification
on) matched by Origin, Access-Control-Request-Method and -Headers, the Access-Control-* headers of actual
requests (answered by a gateway or by an object's target), the configuration surviving a restart of every
node; GetObjectAttributes (ETag, Checksum, ObjectParts, StorageClass, ObjectSize) of plain and multipart
objects.
"""
import hashlib
import json
import os
import subprocess
import unittest
import xml.etree.ElementTree as ET

from harness import main, start_cluster, stop_cluster

import boto3
import requests
from botocore.config import Config
from botocore.exceptions import ClientError

AWS = "/usr/bin/aws"
S3CMD = "/usr/bin/s3cmd"
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
AK, SK = "shale-test-key", "shale-test-secret"

RULES = {"CORSRules": [
    {"ID": "app", "AllowedOrigins": ["https://app.example.com", "http://*.example.org"],
     "AllowedMethods": ["GET", "PUT", "HEAD", "POST"], "AllowedHeaders": ["x-amz-*", "Content-Type"],
     "ExposeHeaders": ["ETag", "x-amz-request-id"], "MaxAgeSeconds": 600},
    {"AllowedOrigins": ["*"], "AllowedMethods": ["GET"]},
]}


class S3CorsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        start_cluster(cls, targets=2, prefix="shale-s3cors-")
        cls.ep = cls.url + "/s3"
        cls.s3 = cls.client(AK, SK)
        cfg = os.path.join(cls.tmp, "aws-config")
        with open(cfg, "w") as f:
            f.write("[default]\nregion = us-east-1\ns3 =\n    addressing_style = path\n")
        cls.env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        cls.env.update(AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_DEFAULT_REGION="us-east-1",
                       AWS_CONFIG_FILE=cfg, AWS_SHARED_CREDENTIALS_FILE=os.path.join(cls.tmp, "none"),
                       AWS_EC2_METADATA_DISABLED="true", AWS_PAGER="", HOME=cls.tmp)
        cls.s3.create_bucket(Bucket="cors")

    def cors(self):
        """bucket "cors" gets its rules once (here, not in setUpClass: on a build without CORS each test fails)"""
        if not getattr(S3CorsTest, "configured", False):
            self.s3.put_bucket_cors(Bucket="cors", CORSConfiguration=RULES)
            S3CorsTest.configured = True

    @classmethod
    def client(cls, ak, sk):
        return boto3.session.Session(aws_access_key_id=ak, aws_secret_access_key=sk, region_name="us-east-1").client(
            "s3", endpoint_url=cls.ep,
            config=Config(s3={"addressing_style": "path"}, signature_version="s3v4", connect_timeout=10,
                          read_timeout=60, retries={"max_attempts": 1}))

    @classmethod
    def tearDownClass(cls):
        stop_cluster(cls)

    def client_err(self, fn, status, code):
        with self.assertRaises(ClientError) as cm:
            fn()
        e = cm.exception.response
        self.assertEqual(e["ResponseMetadata"]["HTTPStatusCode"], status, e)
        self.assertEqual(e["Error"]["Code"], code, e)
        return e

    def err(self, r, status, code):
        self.assertEqual(r.status_code, status, r.text)
        self.assertEqual(ET.fromstring(r.content).findtext("Code"), code, r.text)
        return ET.fromstring(r.content).findtext("Message")

    def aws(self, *args, check=True):
        p = subprocess.run([AWS, "--endpoint-url", self.ep] + list(args), capture_output=True, text=True,
                           env=self.env, timeout=120)
        if check:
            self.assertEqual(p.returncode, 0, p.stderr)
        return p

    def preflight(self, path, origin, method, headers=None):
        h = {}
        if origin is not None:
            h["Origin"] = origin
        if method is not None:
            h["Access-Control-Request-Method"] = method
        if headers:
            h["Access-Control-Request-Headers"] = headers
        return requests.options(self.ep + path, headers=h, timeout=30)

    # ---- the configuration ------------------------------------------------------------------------------------

    def test_cors_configuration(self):
        """PutBucketCors / GetBucketCors / DeleteBucketCors with boto3: the rules round-trip, in order, kept in the
        bucket's props "cors" (the native API shows them); none → 404 NoSuchCORSConfiguration; S3's limits refused
        with S3's codes and nothing changed"""
        b = "cors-cfg"
        self.s3.create_bucket(Bucket=b)
        self.client_err(lambda: self.s3.get_bucket_cors(Bucket=b), 404, "NoSuchCORSConfiguration")
        r = self.s3.put_bucket_cors(Bucket=b, CORSConfiguration=RULES)
        self.assertEqual(r["ResponseMetadata"]["HTTPStatusCode"], 200)
        got = self.s3.get_bucket_cors(Bucket=b)["CORSRules"]
        self.assertEqual(got, RULES["CORSRules"])
        props = json.loads(self.s.head(self.url + "/v1/buckets/" + b, timeout=30).headers["Ais-Bucket-Props"])
        self.assertEqual(json.loads(props["cors"])[0]["origins"], RULES["CORSRules"][0]["AllowedOrigins"])
        # S3's limits
        one = {"AllowedOrigins": ["https://a.example"], "AllowedMethods": ["GET"]}
        bad = [({"CORSRules": [one] * 101}, 400, "MalformedXML"),
               ({"CORSRules": [dict(one, AllowedMethods=["PATCH"])]}, 400, "InvalidRequest"),
               ({"CORSRules": [dict(one, AllowedOrigins=["https://*.*.example"])]}, 400, "InvalidRequest"),
               ({"CORSRules": [dict(one, AllowedHeaders=["x-*-*"])]}, 400, "InvalidRequest"),
               ({"CORSRules": [dict(one, ID="i" * 256)]}, 400, "InvalidArgument")]
        for cfg, st, code in bad:
            e = self.client_err(lambda: self.s3.put_bucket_cors(Bucket=b, CORSConfiguration=cfg), st, code)
            self.assertIn("nothing was changed", e["Error"]["Message"])
        self.assertEqual(self.s3.get_bucket_cors(Bucket=b)["CORSRules"], RULES["CORSRules"])  # unchanged
        self.s3.put_bucket_cors(Bucket=b, CORSConfiguration={"CORSRules": [one] * 100})  # the maximum
        self.assertEqual(len(self.s3.get_bucket_cors(Bucket=b)["CORSRules"]), 100)
        # malformed bodies, raw (Content-MD5 is not required here)
        for body in (b"<CORSConfiguration/>", b"<CORSConfiguration><CORSRule><AllowedMethod>GET</AllowedMethod>"
                     b"</CORSRule></CORSConfiguration>", b"<CORS"):
            self.err(requests.put(self.ep + "/" + b, params={"cors": ""}, data=body, timeout=30), 400,
                     "MalformedXML")
        self.err(requests.post(self.ep + "/" + b, params={"cors": ""}, timeout=30), 405, "MethodNotAllowed")
        r = self.s3.delete_bucket_cors(Bucket=b)
        self.assertEqual(r["ResponseMetadata"]["HTTPStatusCode"], 204)
        self.client_err(lambda: self.s3.get_bucket_cors(Bucket=b), 404, "NoSuchCORSConfiguration")
        self.client_err(lambda: self.s3.get_bucket_cors(Bucket="no-such-cors"), 404, "NoSuchBucket")
        self.client_err(lambda: self.s3.put_bucket_cors(Bucket="no-such-cors", CORSConfiguration=RULES), 404,
                        "NoSuchBucket")
        self.assertEqual(requests.head(self.ep + "/no-such-cors", timeout=30).status_code, 404)  # not created

    def test_cors_aws_cli(self):
        """aws s3api put-bucket-cors / get-bucket-cors / delete-bucket-cors"""
        b = "cors-cli"
        self.aws("s3api", "create-bucket", "--bucket", b)
        cfg = os.path.join(self.tmp, "cors.json")
        with open(cfg, "w") as f:
            json.dump({"CORSRules": [{"AllowedOrigins": ["https://cli.example"], "AllowedMethods": ["PUT", "POST"],
                                      "AllowedHeaders": ["*"], "MaxAgeSeconds": 30}]}, f)
        self.aws("s3api", "put-bucket-cors", "--bucket", b, "--cors-configuration", "file://" + cfg)
        got = json.loads(self.aws("s3api", "get-bucket-cors", "--bucket", b).stdout)["CORSRules"]
        self.assertEqual(got, [{"AllowedHeaders": ["*"], "AllowedMethods": ["PUT", "POST"],
                                "AllowedOrigins": ["https://cli.example"], "MaxAgeSeconds": 30}])
        r = self.preflight("/%s/up/load" % b, "https://cli.example", "POST", "Content-Type, X-Whatever")
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.headers["Access-Control-Allow-Headers"], "Content-Type, X-Whatever")
        self.aws("s3api", "delete-bucket-cors", "--bucket", b)
        p = self.aws("s3api", "get-bucket-cors", "--bucket", b, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("NoSuchCORSConfiguration", p.stderr)

    @unittest.skipUnless(os.access(S3CMD, os.X_OK), "no /usr/bin/s3cmd")
    def test_cors_s3cmd(self):
        """s3cmd setcors / info (shows the CORS rules) / delcors"""
        cfg = os.path.join(self.tmp, "s3cmd.cfg")
        hb = "127.0.0.1:%d/s3" % self.c.base
        with open(cfg, "w") as f:
            f.write("[default]\naccess_key = %s\nsecret_key = %s\nhost_base = %s\nhost_bucket = %s\n"
                    "use_https = False\nsignature_v2 = False\nbucket_location = us-east-1\nproxy_host = \n"
                    "progress_meter = False\n" % (AK, SK, hb, hb))

        def s3cmd(*args):
            p = subprocess.run([S3CMD, "-c", cfg, "--no-progress"] + list(args), capture_output=True, text=True,
                               timeout=120, env=self.env, stdin=subprocess.DEVNULL)
            self.assertEqual(p.returncode, 0, "s3cmd %s: %s%s" % (args, p.stdout, p.stderr))
            return p.stdout
        self.s3.create_bucket(Bucket="cors-s3cmd")
        xml = os.path.join(self.tmp, "cors.xml")
        with open(xml, "w") as f:
            f.write("<CORSConfiguration><CORSRule><AllowedOrigin>https://s3cmd.example</AllowedOrigin>"
                    "<AllowedMethod>GET</AllowedMethod><MaxAgeSeconds>5</MaxAgeSeconds></CORSRule>"
                    "</CORSConfiguration>")
        s3cmd("setcors", xml, "s3://cors-s3cmd")
        self.assertEqual(self.s3.get_bucket_cors(Bucket="cors-s3cmd")["CORSRules"],
                         [{"AllowedOrigins": ["https://s3cmd.example"], "AllowedMethods": ["GET"], "MaxAgeSeconds": 5}])
        self.assertIn("https://s3cmd.example", s3cmd("info", "s3://cors-s3cmd"))
        s3cmd("delcors", "s3://cors-s3cmd")
        self.client_err(lambda: self.s3.get_bucket_cors(Bucket="cors-s3cmd"), 404, "NoSuchCORSConfiguration")

    # ---- preflights and actual requests ------------------------------------------------------------------------

    def test_cors_preflight(self):
        """OPTIONS /s3/B[/KEY] (raw, no credentials): a matching rule → 200 with Access-Control-Allow-Origin,
        -Methods, -Headers, -Expose-Headers, -Max-Age and Vary; no match by origin, method or header → 403
        AccessForbidden; no configuration → 403; no Origin or method → 400"""
        self.cors()
        for path in ("/cors/some/key", "/cors"):
            r = self.preflight(path, "https://app.example.com", "PUT", "x-amz-meta-a, content-type")
            self.assertEqual(r.status_code, 200, r.text)
            h = r.headers
            self.assertEqual(h["Access-Control-Allow-Origin"], "https://app.example.com")
            self.assertEqual(h["Access-Control-Allow-Methods"], "GET, PUT, HEAD, POST")
            self.assertEqual(h["Access-Control-Allow-Headers"], "x-amz-meta-a, content-type")
            self.assertEqual(h["Access-Control-Expose-Headers"], "ETag, x-amz-request-id")
            self.assertEqual(h["Access-Control-Max-Age"], "600")
            self.assertEqual(h["Access-Control-Allow-Credentials"], "true")
            self.assertIn("Origin", h["Vary"])
        r = self.preflight("/cors/k", "http://shop.example.org", "HEAD")  # the wildcard origin
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.headers["Access-Control-Allow-Origin"], "http://shop.example.org")
        r = self.preflight("/cors/k", "https://anyone.test", "GET")  # the second rule: "*"
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.headers["Access-Control-Allow-Origin"], "*")
        self.assertNotIn("Access-Control-Allow-Credentials", r.headers)
        for origin, method, hdrs in (("https://evil.example.com", "PUT", None),    # origin
                                     ("https://app.example.com", "DELETE", None),  # method
                                     ("https://app.example.com", "PUT", "Authorization"),  # header
                                     ("https://example.org", "GET", "x-amz-date")):  # neither rule allows it
            r = self.preflight("/cors/k", origin, method, hdrs)
            self.assertIn("not allowed", self.err(r, 403, "AccessForbidden"))
            self.assertNotIn("Access-Control-Allow-Origin", r.headers)
        self.s3.create_bucket(Bucket="cors-none")
        self.assertIn("not enabled", self.err(self.preflight("/cors-none/k", "https://a.example", "GET"), 403,
                                              "AccessForbidden"))
        self.err(self.preflight("/cors/k", None, "GET"), 400, "BadRequest")
        self.err(self.preflight("/cors/k", "https://app.example.com", None), 400, "BadRequest")
        self.err(self.preflight("/cors/k", "https://app.example.com", "PATCH"), 400, "BadRequest")
        self.err(self.preflight("/no-such-cors/k", "https://app.example.com", "GET"), 404, "NoSuchBucket")

    def test_cors_actual_requests(self):
        """an actual request with an Origin a rule allows for its method gets Access-Control-Allow-Origin and
        -Expose-Headers, on objects answered by either target and on bucket requests answered by the gateway;
        an origin no rule allows, or no Origin, gets none"""
        self.cors()
        for i in range(6):  # over both targets
            k = "obj%d" % i
            self.s3.put_object(Bucket="cors", Key=k, Body=b"v%d" % i)
            r = requests.get(self.ep + "/cors/" + k, headers={"Origin": "https://app.example.com"}, timeout=30)
            self.assertEqual((r.status_code, r.content), (200, b"v%d" % i))
            self.assertEqual(r.headers["Access-Control-Allow-Origin"], "https://app.example.com")
            self.assertEqual(r.headers["Access-Control-Expose-Headers"], "ETag, x-amz-request-id")
            r = requests.head(self.ep + "/cors/" + k, headers={"Origin": "http://x.example.org"}, timeout=30)
            self.assertEqual(r.headers.get("Access-Control-Allow-Origin"), "http://x.example.org")
            r = requests.get(self.ep + "/cors/" + k, headers={"Origin": "https://evil.test.com"}, timeout=30)
            self.assertEqual(r.headers.get("Access-Control-Allow-Origin"), "*")  # rule 2 allows GET from anyone
            r = requests.delete(self.ep + "/cors/nothing", headers={"Origin": "https://app.example.com"}, timeout=30)
            self.assertNotIn("Access-Control-Allow-Origin", r.headers)  # DELETE is in no rule
            r = requests.get(self.ep + "/cors/" + k, timeout=30)
            self.assertNotIn("Access-Control-Allow-Origin", r.headers)
        r = requests.get(self.ep + "/cors", params={"list-type": "2"}, headers={"Origin": "https://app.example.com"},
                         timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.headers["Access-Control-Allow-Origin"], "https://app.example.com")

    def test_cors_preflight_without_credentials_when_verifying(self):
        """with signature verification on, a browser's preflight (no credentials) is still answered from the
        rules, while an unsigned GET is refused"""
        self.cors()
        self.c.cli("s3", "key", "add", AK, "--secret", SK)
        self.c.cli("s3", "verify", "on")
        try:
            r = self.preflight("/cors/k", "https://app.example.com", "PUT", "x-amz-date")
            self.assertEqual(r.status_code, 200, r.text)
            self.assertEqual(r.headers["Access-Control-Allow-Origin"], "https://app.example.com")
            self.err(self.preflight("/cors/k", "https://evil.example.com", "PUT"), 403, "AccessForbidden")
            self.err(requests.get(self.ep + "/cors/obj0", timeout=30), 403, "AccessDenied")
            self.assertEqual(len(self.s3.get_bucket_cors(Bucket="cors")["CORSRules"]), 2)  # signed: fine
        finally:
            self.c.cli("s3", "verify", "off")
            self.c.cli("s3", "key", "rm", AK)

    # ---- GetObjectAttributes ----------------------------------------------------------------------------------

    def test_object_attributes(self):
        """GetObjectAttributes with boto3 and the aws CLI: ETag (unquoted), the verified CRC32 a PUT carried,
        ObjectSize, StorageClass of plain objects on both targets; a multipart object's PartsCount and parts,
        paged by MaxParts and PartNumberMarker; an unknown or missing attribute name → 400 InvalidArgument, a
        missing key → 404 NoSuchKey, any method but GET → 405"""
        b = "attrs"
        self.s3.create_bucket(Bucket=b)
        every = ["ETag", "Checksum", "ObjectParts", "StorageClass", "ObjectSize"]
        for i in range(4):  # over both targets
            k = "plain%d" % i
            put = self.s3.put_object(Bucket=b, Key=k, Body=b"z" * (100 + i), ChecksumAlgorithm="CRC32")
            a = self.s3.get_object_attributes(Bucket=b, Key=k, ObjectAttributes=every)
            self.assertEqual(a["ETag"], put["ETag"].strip('"'))
            self.assertEqual(a["Checksum"]["ChecksumCRC32"], put["ChecksumCRC32"])
            self.assertEqual((a["ObjectSize"], a["StorageClass"]), (100 + i, "STANDARD"))
            self.assertNotIn("ObjectParts", a)  # not a multipart object
            self.assertIn("LastModified", a)
            a = self.s3.get_object_attributes(Bucket=b, Key=k, ObjectAttributes=["ObjectSize"])
            self.assertNotIn("ETag", a)
            self.assertNotIn("StorageClass", a)
            # x-amz-checksum-mode: ENABLED answers that CRC32 on GET and HEAD (boto3 checks the body against it)
            g = self.s3.get_object(Bucket=b, Key=k, ChecksumMode="ENABLED")
            self.assertEqual(g["ChecksumCRC32"], put["ChecksumCRC32"])
            self.assertEqual(g["Body"].read(), b"z" * (100 + i))
            h = self.s3.head_object(Bucket=b, Key=k, ChecksumMode="ENABLED")
            self.assertEqual((h["ChecksumCRC32"], h["ResponseMetadata"]["HTTPHeaders"]["x-amz-checksum-type"]),
                             (put["ChecksumCRC32"], "FULL_OBJECT"))
            self.assertNotIn("ChecksumCRC32", self.s3.head_object(Bucket=b, Key=k))  # not asked: not sent
            rg = self.s3.get_object(Bucket=b, Key=k, ChecksumMode="ENABLED", Range="bytes=0-9")
            self.assertNotIn("ChecksumCRC32", rg)  # a range is not what it sums
            self.assertEqual(rg["Body"].read(), b"z" * 10)
        self.s3.put_object(Bucket=b, Key="nosum", Body=b"n")
        a = self.s3.get_object_attributes(Bucket=b, Key="nosum", ObjectAttributes=every)
        self.assertNotIn("Checksum", a)
        self.assertEqual(a["ObjectSize"], 1)
        self.assertNotIn("ChecksumCRC32", self.s3.get_object(Bucket=b, Key="nosum", ChecksumMode="ENABLED"))
        out = json.loads(self.aws("s3api", "head-object", "--bucket", b, "--key", "plain1", "--checksum-mode",
                                  "ENABLED").stdout)
        self.assertEqual(out["ChecksumCRC32"], self.s3.head_object(Bucket=b, Key="plain1", ChecksumMode="ENABLED")[
            "ChecksumCRC32"])
        # multipart: 3 parts
        mib = 1024 * 1024
        up = self.s3.create_multipart_upload(Bucket=b, Key="mp")["UploadId"]
        parts = []
        for n, size in ((1, 5 * mib), (2, 5 * mib), (3, 123)):
            e = self.s3.upload_part(Bucket=b, Key="mp", UploadId=up, PartNumber=n, Body=b"p" * size)["ETag"]
            parts.append({"PartNumber": n, "ETag": e})
        done = self.s3.complete_multipart_upload(Bucket=b, Key="mp", UploadId=up, MultipartUpload={"Parts": parts})
        a = self.s3.get_object_attributes(Bucket=b, Key="mp", ObjectAttributes=every)
        self.assertEqual(a["ETag"], done["ETag"].strip('"'))
        self.assertEqual(a["ObjectSize"], 10 * mib + 123)
        op = a["ObjectParts"]
        self.assertEqual(op["TotalPartsCount"], 3)
        self.assertEqual([(p["PartNumber"], p["Size"]) for p in op["Parts"]], [(1, 5 * mib), (2, 5 * mib), (3, 123)])
        self.assertFalse(op["IsTruncated"])
        a = self.s3.get_object_attributes(Bucket=b, Key="mp", ObjectAttributes=["ObjectParts"], MaxParts=2)
        self.assertTrue(a["ObjectParts"]["IsTruncated"])
        self.assertEqual([p["PartNumber"] for p in a["ObjectParts"]["Parts"]], [1, 2])
        self.assertEqual(a["ObjectParts"]["NextPartNumberMarker"], 2)
        a = self.s3.get_object_attributes(Bucket=b, Key="mp", ObjectAttributes=["ObjectParts"], PartNumberMarker=2)
        self.assertEqual([p["PartNumber"] for p in a["ObjectParts"]["Parts"]], [3])
        self.assertFalse(a["ObjectParts"]["IsTruncated"])
        # the aws CLI
        out = json.loads(self.aws("s3api", "get-object-attributes", "--bucket", b, "--key", "mp",
                                  "--object-attributes", "ObjectSize", "StorageClass").stdout)
        self.assertEqual((out["ObjectSize"], out["StorageClass"]), (10 * mib + 123, "STANDARD"))
        # errors
        self.client_err(lambda: self.s3.get_object_attributes(Bucket=b, Key="none", ObjectAttributes=["ETag"]), 404,
                        "NoSuchKey")
        url = self.ep + "/attrs/plain0"
        self.assertIn("Invalid attribute name", self.err(requests.get(url, params={"attributes": ""}, headers={
            "x-amz-object-attributes": "ETag,Colour"}, timeout=30), 400, "InvalidArgument"))
        self.assertIn("missing or empty", self.err(requests.get(url, params={"attributes": ""}, timeout=30), 400,
                                                   "InvalidArgument"))
        self.err(requests.get(url, params={"attributes": ""}, headers={"x-amz-object-attributes": "ETag",
                                                                       "x-amz-max-parts": "many"}, timeout=30),
                 400, "InvalidArgument")
        for m in ("PUT", "DELETE"):
            self.err(requests.request(m, url, params={"attributes": ""}, data=b"x", timeout=30), 405,
                     "MethodNotAllowed")
        self.assertEqual(self.s3.get_object(Bucket=b, Key="plain0")["Body"].read(), b"z" * 100)  # untouched

    # ---- POST Object ------------------------------------------------------------------------------------------

    def post(self, p, data, name="f.txt", extra=None, drop=(), **kw):
        fields = {k: v for k, v in p["fields"].items() if k not in drop}
        fields.update(extra or {})
        return requests.post(p["url"], data=fields, files={"file": (name, data)}, timeout=120, **kw)

    def test_post_object(self):
        """POST Object with boto3's generate_presigned_post and requests (verification off): ${filename}, the file
        streamed into the object on its target (both targets, and 8 MiB: more than a gateway holds), metadata and
        Content-Type fields, success_action_status 200/201/204 and success_action_redirect; policy violations are
        403 AccessDenied naming the condition (and content-length-range 400 EntityTooLarge/Small), an expired policy
        403; nothing is stored then; CORS headers on the answer"""
        self.cors()
        b = "post"
        self.s3.create_bucket(Bucket=b)
        p = self.s3.generate_presigned_post(b, "up/${filename}", Conditions=[["content-length-range", 1, 9 << 20]],
                                            ExpiresIn=600)
        for i in range(6):  # over both targets
            body = b"hello %d " % i * 100
            r = self.post(p, body, name="f%d.txt" % i)
            self.assertEqual(r.status_code, 204, r.text)
            self.assertEqual(r.headers["ETag"], '"%s"' % hashlib.md5(body).hexdigest())
            o = self.s3.get_object(Bucket=b, Key="up/f%d.txt" % i)
            self.assertEqual((o["Body"].read(), o["ETag"]), (body, r.headers["ETag"]))
        big = os.urandom(1 << 20) * 8
        r = self.post(p, big, name="big.bin")
        self.assertEqual(r.status_code, 204, r.text)
        o = self.s3.get_object(Bucket=b, Key="up/big.bin")
        self.assertEqual(hashlib.md5(o["Body"].read()).hexdigest(), hashlib.md5(big).hexdigest())
        # fields: metadata, Content-Type, the answers
        fields = {"x-amz-meta-owner": "ann", "Content-Type": "text/csv", "success_action_status": "201"}
        p2 = self.s3.generate_presigned_post(b, "meta.csv", Fields=fields,
                                             Conditions=[{k: v} for k, v in fields.items()], ExpiresIn=600)
        r = self.post(p2, b"a,b\n", headers={"Origin": "https://app.example.com"})
        self.assertEqual(r.status_code, 201, r.text)
        x = ET.fromstring(r.content)
        self.assertEqual((x.findtext("Bucket"), x.findtext("Key")), (b, "meta.csv"))
        self.assertEqual(x.findtext("ETag"), '"%s"' % hashlib.md5(b"a,b\n").hexdigest())
        self.assertTrue(x.findtext("Location").endswith("/s3/post/meta.csv"))
        self.assertNotIn("Access-Control-Allow-Origin", r.headers)  # bucket "post" has no CORS configuration
        h = self.s3.head_object(Bucket=b, Key="meta.csv")
        self.assertEqual((h["Metadata"], h["ContentType"]), ({"owner": "ann"}, "text/csv"))
        p3 = self.s3.generate_presigned_post(b, "s200", Fields={"success_action_status": "200"},
                                             Conditions=[{"success_action_status": "200"}], ExpiresIn=600)
        self.assertEqual(self.post(p3, b"x").status_code, 200)
        p4 = self.s3.generate_presigned_post(b, "redir", Fields={"success_action_redirect": "http://127.0.0.1:1/ok"},
                                             Conditions=[{"success_action_redirect": "http://127.0.0.1:1/ok"}],
                                             ExpiresIn=600)
        r = self.post(p4, b"r", allow_redirects=False)
        self.assertEqual(r.status_code, 303, r.text)
        self.assertTrue(r.headers["Location"].startswith("http://127.0.0.1:1/ok?bucket=post&key=redir&etag=%22"))
        # a bucket with CORS: the answer carries Access-Control-Allow-Origin
        pc = self.s3.generate_presigned_post("cors", "from-browser", ExpiresIn=600)
        r = self.post(pc, b"b", headers={"Origin": "https://app.example.com"})
        self.assertEqual(r.status_code, 204, r.text)
        self.assertEqual(r.headers["Access-Control-Allow-Origin"], "https://app.example.com")
        # violations: nothing stored
        def refused(r, status, code, words):
            self.assertIn(words, self.err(r, status, code))
        refused(self.post(p, b"x", extra={"key": "other/x"}), 403, "AccessDenied", '["starts-with","$key","up/"]')
        refused(self.post(p, b"x", name="e.txt", extra={"x-amz-meta-extra": "1"}), 403, "AccessDenied",
                "Extra input fields: x-amz-meta-extra")
        refused(self.post(p, b"", name="empty.txt"), 400, "EntityTooSmall", "content-length-range")
        small = self.s3.generate_presigned_post(b, "up/${filename}", Conditions=[["content-length-range", 0, 10]],
                                                ExpiresIn=600)
        refused(self.post(small, b"y" * 11, name="toolarge.txt"), 400, "EntityTooLarge", "10 bytes")
        old = self.s3.generate_presigned_post(b, "up/${filename}", ExpiresIn=-60)
        refused(self.post(old, b"x", name="old.txt"), 403, "AccessDenied", "Policy expired")
        refused(self.post(p, b"x", drop=("key",)), 403, "AccessDenied", "$key")
        refused(requests.post(self.ep + "/post", files={"file": ("f", b"x")}, timeout=30), 400, "InvalidArgument",
                "a field named 'key'")  # no policy (verification off): only the key is missing
        r = requests.post(p["url"], files={k: (None, v) for k, v in p["fields"].items()}, timeout=30)
        refused(r, 400, "InvalidArgument", "exactly one file")
        self.err(requests.post(self.ep + "/no-such-post", files={"file": ("f", b"x")}, timeout=30), 404,
                 "NoSuchBucket")
        for k in ("other/x", "up/e.txt", "up/empty.txt", "up/toolarge.txt", "up/old.txt"):
            self.client_err(lambda: self.s3.head_object(Bucket=b, Key=k), 404, "404")

    def test_post_object_verified(self):
        """with signature verification on: a form signed with a known key's secret is stored; a wrong secret, a
        policy changed after signing, an unknown access key, missing signature fields and a SigV2 form are refused
        with S3's codes"""
        self.c.cli("s3", "key", "add", AK, "--secret", SK)
        self.c.cli("s3", "verify", "on")
        try:
            p = self.s3.generate_presigned_post("post", "v/${filename}", ExpiresIn=600)
            r = self.post(p, b"signed", name="ok.txt")
            self.assertEqual(r.status_code, 204, r.text)
            self.assertEqual(self.s3.get_object(Bucket="post", Key="v/ok.txt")["Body"].read(), b"signed")
            bad = self.client(AK, "not-the-secret").generate_presigned_post("post", "v/${filename}", ExpiresIn=600)
            self.err(self.post(bad, b"x", name="bad.txt"), 403, "SignatureDoesNotMatch")
            other = self.s3.generate_presigned_post("post", "w/${filename}", ExpiresIn=600)
            forged = dict(p, fields=dict(p["fields"], policy=other["fields"]["policy"]))
            self.err(self.post(forged, b"x", name="forged.txt"), 403, "SignatureDoesNotMatch")
            unknown = self.client("no-such-key", SK).generate_presigned_post("post", "v/${filename}", ExpiresIn=600)
            self.err(self.post(unknown, b"x", name="unknown.txt"), 403, "InvalidAccessKeyId")
            self.err(self.post(p, b"x", name="nosig.txt", drop=("x-amz-signature",)), 400, "InvalidArgument")
            v2 = boto3.session.Session(aws_access_key_id=AK, aws_secret_access_key=SK,
                                       region_name="us-east-1").client(
                "s3", endpoint_url=self.ep, config=Config(s3={"addressing_style": "path"}, signature_version="s3"))
            self.err(self.post(v2.generate_presigned_post("post", "v/${filename}"), b"x", name="v2.txt"), 400,
                     "InvalidRequest")
            for k in ("bad", "forged", "unknown", "nosig", "v2"):
                self.client_err(lambda: self.s3.head_object(Bucket="post", Key="v/%s.txt" % k), 404, "404")
        finally:
            self.c.cli("s3", "verify", "off")
            self.c.cli("s3", "key", "rm", AK)

    def test_zz_cors_survives_restart(self):
        """the rules are in the bucket's props: after every node restarts, GetBucketCors and preflights answer the
        same"""
        self.cors()
        self.c.stop()
        self.c.start()
        for _ in range(100):
            try:
                if requests.get(self.url + "/v1/health", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
        self.assertEqual(self.s3.get_bucket_cors(Bucket="cors")["CORSRules"], RULES["CORSRules"])
        r = self.preflight("/cors/k", "https://app.example.com", "GET")
        self.assertEqual(r.status_code, 200, r.text)


if __name__ == "__main__":
    main()
