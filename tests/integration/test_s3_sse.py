#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""S3 encryption at rest (issue 39) against a real cluster of 1 gateway and 2 targets: SSE-S3 (the cluster's
master key from s3.sse_key_file) and SSE-C (the customer's key, never stored) with boto3 and the aws CLI; the
bytes on the targets' disks are not the plaintext; ranges; a missing or wrong SSE-C key; CopyObject from an
SSE-C source; multipart uploads (a part copied from an SSE-C source); rclone and s3cmd; the bucket default (?encryption); the native API's GET; a restart of every
node; an encrypted object moved by a rebalance still decrypts.
"""
import base64
import hashlib
import io
import json
import os
import subprocess
import tarfile
import unittest

from harness import main, start_cluster, stop_cluster, wait_until

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

AWS = "/usr/bin/aws"
AK, SK = "shale-test-key", "shale-test-secret"
KEY_C = b"0123456789abcdef0123456789abcdef"     # an SSE-C key (32 bytes)
KEY_C2 = b"fedcba9876543210fedcba9876543210"


def ssec(key=KEY_C, pfx=""):
    return {pfx + "SSECustomerAlgorithm": "AES256", pfx + "SSECustomerKey": key.decode()}


def marker(tag, n):
    return (b"PLAINTEXT-%s-" % tag.encode()) * n


def make_tar(members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tf:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def tar_members(data):
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as tf:
        return [(m.name, tf.extractfile(m).read()) for m in tf.getmembers()]


class S3SseTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        start_cluster(cls, targets=2)
        cls.ep = cls.url + "/s3"
        cls.s3 = boto3.session.Session(aws_access_key_id=AK, aws_secret_access_key=SK,
                                       region_name="us-east-1").client(
            "s3", endpoint_url=cls.ep,
            config=Config(s3={"addressing_style": "path"}, connect_timeout=10, read_timeout=60,
                          retries={"max_attempts": 1}))
        cfg = os.path.join(cls.tmp, "aws-config")
        with open(cfg, "w") as f:
            f.write("[default]\nregion = us-east-1\ns3 =\n    addressing_style = path\n")
        cls.env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        cls.env.update(AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_DEFAULT_REGION="us-east-1",
                       AWS_CONFIG_FILE=cfg, AWS_SHARED_CREDENTIALS_FILE=os.path.join(cls.tmp, "none"),
                       AWS_EC2_METADATA_DISABLED="true", AWS_PAGER="", HOME=cls.tmp)
        # no key file yet: SSE-S3 is refused naming the setting (test_a_no_key_file), then the key is set
        cls.keyfile = os.path.join(cls.tmp, "sse.key")
        with open(cls.keyfile, "w") as f:
            f.write(os.urandom(32).hex() + "\n")
        os.chmod(cls.keyfile, 0o600)

    @classmethod
    def tearDownClass(cls):
        stop_cluster(cls)

    def set_key_file(self, path):
        r = self.s.put(self.url + "/v1/cluster/set-config", params={"s3.sse_key_file": path})
        self.assertEqual(r.status_code, 200, r.text)

    def setUp(self):
        if not self._testMethodName.startswith("test_a_"):
            self.set_key_file(self.keyfile)
        # this cluster serves plain HTTP: SSE-C needs the (insecure) setting, but in test_a_ssec_over_http
        allow = "false" if self._testMethodName == "test_a_ssec_over_http" else "true"
        r = self.s.put(self.url + "/v1/cluster/set-config", params={"s3.sse_c_allow_http": allow})
        self.assertEqual(r.status_code, 200, r.text)

    def test_a_ssec_over_http(self):
        """SSE-C over plain HTTP is refused as AWS does (400 InvalidRequest), nothing stored or read"""
        b = self.bucket("sse-http")
        e = self.client_err(lambda: self.s3.put_object(Bucket=b, Key="c", Body=b"secret", **ssec()), 400,
                            "InvalidRequest")
        self.assertIn("must be made over a secure connection", e["Error"]["Message"])
        self.assertIn("s3.sse_c_allow_http", e["Error"]["Message"])
        self.client_err(lambda: self.s3.head_object(Bucket=b, Key="c"), 404, None)
        self.client_err(lambda: self.s3.get_object(Bucket=b, Key="c", **ssec()), 400, "InvalidRequest")
        self.s3.put_object(Bucket=b, Key="p", Body=b"plain")
        self.client_err(lambda: self.s3.copy_object(Bucket=b, Key="q", CopySource={"Bucket": b, "Key": "p"},
                                                    **ssec(KEY_C, "CopySource")), 400, "InvalidRequest")
        r = self.s.put(self.url + "/v1/cluster/set-config", params={"s3.sse_c_allow_http": "maybe"})
        self.assertEqual(r.status_code, 400, r.text)

    def bucket(self, name):
        try:
            self.s3.create_bucket(Bucket=name)
        except ClientError as e:
            if e.response["Error"]["Code"] not in ("BucketAlreadyOwnedByYou", "BucketAlreadyExists"):
                raise
        return name

    def client_err(self, fn, status, code):
        with self.assertRaises(ClientError) as cm:
            fn()
        e = cm.exception.response
        self.assertEqual(e["ResponseMetadata"]["HTTPStatusCode"], status, e)
        if code:
            self.assertEqual(e["Error"]["Code"], code, e)
        return e

    def on_disk(self, needle):
        """the files under the playground holding needle"""
        hits = []
        for root, _, files in os.walk(self.c.dir):
            for fn in files:
                p = os.path.join(root, fn)
                try:
                    with open(p, "rb") as f:
                        if needle in f.read():
                            hits.append(p)
                except OSError:
                    pass
        return hits

    def aws(self, *a):
        return subprocess.run([AWS, "--endpoint-url", self.ep] + list(a), env=self.env, capture_output=True,
                              timeout=120)

    # ---- the tests -------------------------------------------------------------------------------------------

    def test_a_no_key_file(self):
        """SSE-S3 without a master key: refused naming the setting, nothing stored; --check-config checks the
        file"""
        self.set_key_file("")
        b = self.bucket("sse-nokey")
        e = self.client_err(lambda: self.s3.put_object(Bucket=b, Key="o", Body=b"x", ServerSideEncryption="AES256"),
                            500, "InternalError")
        self.assertIn("s3.sse_key_file", e["Error"]["Message"])
        self.client_err(lambda: self.s3.head_object(Bucket=b, Key="o"), 404, "404")
        self.set_key_file(os.path.join(self.tmp, "missing.key"))
        e = self.client_err(lambda: self.s3.put_object(Bucket=b, Key="o", Body=b"x", ServerSideEncryption="AES256"),
                            500, "InternalError")
        self.assertIn("missing.key", e["Error"]["Message"])
        e = self.client_err(lambda: self.s3.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}), 500, "InternalError")
        self.assertIn("s3.sse_key_file", e["Error"]["Message"])
        # shaled --check-config reads the key file named in the config
        shaled = os.path.join(os.environ.get("SHALE_BUILD", os.path.join(os.path.dirname(__file__), "../../build")),
                              "bin", "shaled")
        bad = os.path.join(self.tmp, "bad.key")
        with open(bad, "w") as f:
            f.write("not a key\n")
        for path, ok in ((self.keyfile, True), (bad, False), (os.path.join(self.tmp, "missing.key"), False)):
            p = subprocess.run([shaled, "--check-config", "--role", "proxy", "--set", "s3.sse_key_file=" + path],
                               capture_output=True, text=True, timeout=30)
            self.assertEqual(p.returncode == 0, ok, p.stdout + p.stderr)
            if not ok:
                self.assertIn("s3.sse_key_file", p.stderr)

    def test_sse_s3_round_trip_and_disk(self):
        b = self.bucket("sse-s3")
        plain = marker("S3", 40000)  # ~400 KiB
        r = self.s3.put_object(Bucket=b, Key="enc", Body=plain, ServerSideEncryption="AES256")
        self.assertEqual(r["ServerSideEncryption"], "AES256")
        self.assertEqual(r["ETag"], '"%s"' % hashlib.md5(plain).hexdigest())
        o = self.s3.get_object(Bucket=b, Key="enc")
        self.assertEqual(o["ServerSideEncryption"], "AES256")
        self.assertEqual(o["Body"].read(), plain)
        self.assertEqual(self.s3.head_object(Bucket=b, Key="enc")["ServerSideEncryption"], "AES256")
        # the file on the target holds ciphertext; a plain object's bytes are found (the search works)
        ctl = marker("CONTROL", 1000)
        self.s3.put_object(Bucket=b, Key="plain", Body=ctl)
        self.assertTrue(self.on_disk(b"PLAINTEXT-CONTROL-PLAINTEXT-CONTROL"))
        self.assertEqual(self.on_disk(b"PLAINTEXT-S3-PLAINTEXT-S3"), [])
        self.assertNotIn("ServerSideEncryption", self.s3.head_object(Bucket=b, Key="plain"))
        # ranges: across block boundaries and at odd offsets
        for a, z in ((0, 0), (1, 15), (15, 16), (17, 100000), (123457, len(plain) - 1), (len(plain) - 3, None)):
            rg = "bytes=%d-%s" % (a, "" if z is None else z)
            got = self.s3.get_object(Bucket=b, Key="enc", Range=rg)["Body"].read()
            self.assertEqual(got, plain[a:None if z is None else z + 1], rg)
        got = self.s3.get_object(Bucket=b, Key="enc", Range="bytes=-5")["Body"].read()
        self.assertEqual(got, plain[-5:])
        # the native API: SSE-S3 decrypted
        r = self.s.get(self.url + "/v1/objects/%s/enc" % b, params={"provider": "ais"})
        self.assertEqual((r.status_code, r.content == plain), (200, True))
        r = self.s.get(self.url + "/v1/objects/%s/enc" % b, params={"provider": "ais"}, headers={"Range": "bytes=5-9"})
        self.assertEqual(r.content, plain[5:10])
        self.assertNotIn("Ais-Checksum-Value", r.headers)  # (the stored checksum is the ciphertext's)
        # the stored checksum covers the ciphertext: a validated read passes, without the key
        r = self.s.get(self.url + "/v1/objects/%s/enc" % b, params={"provider": "ais", "validate-checksum": "true"})
        self.assertEqual((r.status_code, r.content == plain), (200, True))
        o = self.s3.get_object(Bucket=b, Key="enc", ChecksumMode="ENABLED")
        self.assertEqual(o["Body"].read(), plain)
        # CopyObject from an SSE-S3 source (on either target) into plain and SSE-S3 objects
        for i in range(4):
            self.s3.copy_object(Bucket=b, Key="cp%d" % i, CopySource={"Bucket": b, "Key": "enc"})
            o = self.s3.get_object(Bucket=b, Key="cp%d" % i)
            self.assertEqual((o.get("ServerSideEncryption"), o["Body"].read() == plain), (None, True))
            r = self.s3.copy_object(Bucket=b, Key="ce%d" % i, CopySource={"Bucket": b, "Key": "enc"},
                                    ServerSideEncryption="AES256")
            self.assertEqual(r["ServerSideEncryption"], "AES256")
            self.assertEqual(self.s3.get_object(Bucket=b, Key="ce%d" % i)["Body"].read(), plain)
        # an empty encrypted object, a 1-byte one
        for body in (b"", b"z"):
            self.s3.put_object(Bucket=b, Key="small", Body=body, ServerSideEncryption="AES256")
            self.assertEqual(self.s3.get_object(Bucket=b, Key="small")["Body"].read(), body)
        self.client_err(lambda: self.s3.put_object(Bucket=b, Key="x", Body=b"x", ServerSideEncryption="aws:kms"),
                        501, "NotImplemented")
        self.client_err(lambda: self.s3.put_object(Bucket=b, Key="x", Body=b"x", ServerSideEncryption="AES256",
                                                   **ssec()), 400, "InvalidArgument")

    def test_sse_c(self):
        b = self.bucket("sse-c")
        plain = marker("SSEC", 30000)
        r = self.s3.put_object(Bucket=b, Key="c", Body=plain, **ssec())
        md5 = base64.b64encode(hashlib.md5(KEY_C).digest()).decode()
        self.assertEqual((r["SSECustomerAlgorithm"], r["SSECustomerKeyMD5"]), ("AES256", md5))
        o = self.s3.get_object(Bucket=b, Key="c", **ssec())
        self.assertEqual(o["Body"].read(), plain)
        self.assertEqual(o["SSECustomerKeyMD5"], md5)
        self.assertEqual(self.s3.head_object(Bucket=b, Key="c", **ssec())["ContentLength"], len(plain))
        got = self.s3.get_object(Bucket=b, Key="c", Range="bytes=1000-1999", **ssec())["Body"].read()
        self.assertEqual(got, plain[1000:2000])
        # no key: 400; another key: 403; the key is nowhere on disk, nor the plaintext
        self.client_err(lambda: self.s3.get_object(Bucket=b, Key="c"), 400, "InvalidRequest")
        self.client_err(lambda: self.s3.head_object(Bucket=b, Key="c"), 400, None)
        self.client_err(lambda: self.s3.get_object(Bucket=b, Key="c", **ssec(KEY_C2)), 403, "AccessDenied")
        self.assertEqual(self.on_disk(b"PLAINTEXT-SSEC-PLAINTEXT-SSEC"), [])
        self.assertEqual(self.on_disk(KEY_C), [])
        self.assertEqual(self.on_disk(base64.b64encode(KEY_C)), [])
        # an SSE-C key for an object that has none: 400
        self.s3.put_object(Bucket=b, Key="p", Body=b"plain")
        self.client_err(lambda: self.s3.get_object(Bucket=b, Key="p", **ssec()), 400, "InvalidRequest")
        # the native API refuses it, saying why
        r = self.s.get(self.url + "/v1/objects/%s/c" % b, params={"provider": "ais"})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("SSE-C", r.text)
        # CopyObject: an SSE-C source read with its key, into SSE-C (another key), SSE-S3 and plain
        src = {"Bucket": b, "Key": "c"}
        self.client_err(lambda: self.s3.copy_object(Bucket=b, Key="cp0", CopySource=src), 400, None)
        self.client_err(lambda: self.s3.copy_object(Bucket=b, Key="cp0", CopySource=src,
                                                    **ssec(KEY_C2, "CopySource")), 403, "AccessDenied")
        for i in range(4):  # destinations on both targets
            self.s3.copy_object(Bucket=b, Key="cpc%d" % i, CopySource=src, **ssec(KEY_C, "CopySource"),
                                **ssec(KEY_C2))
            self.assertEqual(self.s3.get_object(Bucket=b, Key="cpc%d" % i, **ssec(KEY_C2))["Body"].read(), plain)
            self.client_err(lambda: self.s3.get_object(Bucket=b, Key="cpc%d" % i, **ssec()), 403, "AccessDenied")
            r = self.s3.copy_object(Bucket=b, Key="cps%d" % i, CopySource=src, **ssec(KEY_C, "CopySource"),
                                    ServerSideEncryption="AES256")
            self.assertEqual(r["ServerSideEncryption"], "AES256")
            self.assertEqual(self.s3.get_object(Bucket=b, Key="cps%d" % i)["Body"].read(), plain)
            self.s3.copy_object(Bucket=b, Key="cpp%d" % i, CopySource=src, **ssec(KEY_C, "CopySource"))
            o = self.s3.get_object(Bucket=b, Key="cpp%d" % i)
            self.assertNotIn("ServerSideEncryption", o)
            self.assertEqual(o["Body"].read(), plain)
        self.client_err(lambda: self.s3.put_object(Bucket=b, Key="bad", Body=b"x", SSECustomerAlgorithm="AES256",
                                                   SSECustomerKey="short"), 400, "InvalidArgument")

    def test_native_readers(self):
        """every native reader of an SSE-S3 object sees its plaintext (the read path decrypts it); an SSE-C one
        is refused naming the key, never answered with ciphertext"""
        b = self.bucket("sse-nat")
        members = [("m%02d.txt" % i, marker("M%02d" % i, 300 + 7 * i)) for i in range(6)]
        shard = make_tar(members)
        big = marker("BIG", 20000)  # > 64 KiB: streamed, not read whole
        self.s3.put_object(Bucket=b, Key="enc.tar", Body=shard, ServerSideEncryption="AES256")
        self.s3.put_object(Bucket=b, Key="big", Body=big, ServerSideEncryption="AES256")
        self.s3.put_object(Bucket=b, Key="c.tar", Body=shard, **ssec())
        ob = self.url + "/v1/objects/%s/" % b
        for name, want in (("enc.tar", shard), ("big", big)):
            r = self.s.get(ob + name)
            self.assertEqual((r.status_code, r.content == want), (200, True), name)
            self.assertEqual(r.headers.get("Ais-Server-Side-Encryption"), "AES256")
            for a, z in ((0, 0), (15, 16), (4097, 70000), (len(want) - 3, len(want) - 1)):
                r = self.s.get(ob + name, headers={"Range": "bytes=%d-%d" % (a, z)})
                self.assertEqual((r.status_code, r.content == want[a:z + 1]), (206, True), (name, a, z))
        # HEAD: the ciphertext's checksum is not presented as the object's; the mode is
        for params in ({}, {"props": "checksum,size,custom"}):
            r = self.s.head(ob + "big", params=params, allow_redirects=True)
            self.assertEqual(r.status_code, 200)
            self.assertNotIn("Ais-Checksum-Value", r.headers)
            self.assertEqual(r.headers.get("Ais-Server-Side-Encryption"), "AES256")
            self.assertNotIn("s3.sse.dk", r.headers.get("Ais-Custom-Md", ""))
        # archive reads: a member, the list, a regex
        r = self.s.get(ob + "enc.tar", params={"archpath": "m03.txt"})
        self.assertEqual((r.status_code, r.content == members[3][1]), (200, True), r.text[:300])
        r = self.s.get(ob + "enc.tar", params={"archregx": "m0[12]", "archmode": "regexp"})
        self.assertEqual((r.status_code, sorted(tar_members(r.content))), (200, members[1:3]), r.text[:300])
        # get-batch: whole objects, a range, an archive member
        body = {"in": [{"objname": "big"}, {"objname": "big", "start": 70001, "length": 40},
                       {"objname": "enc.tar", "archpath": "m05.txt"}], "strm": True}
        r = self.s.get(self.url + "/v1/ml/moss/" + b, data=json.dumps(body),
                       headers={"Content-Type": "application/json"}, timeout=60)
        self.assertEqual(r.status_code, 200, r.text[:300])
        got = [d for _, d in tar_members(r.content)]
        self.assertEqual(got, [big, big[70001:70041], members[5][1]])
        # SSE-C: no key on the native API, so a clear 400 naming it (S3's InvalidRequest wording)
        for params in ({}, {"archpath": "m01.txt"}):
            r = self.s.get(ob + "c.tar", params=params)
            self.assertEqual(r.status_code, 400, r.text)
            self.assertIn("x-amz-server-side-encryption-customer-key", r.text)
            self.assertIn("The correct parameters must be provided", r.text)
            self.assertNotIn(b"PLAINTEXT", r.content)
        r = self.s.get(self.url + "/v1/ml/moss/" + b, data=json.dumps({"in": [{"objname": "c.tar"}], "strm": True}),
                       headers={"Content-Type": "application/json"}, timeout=60)
        self.assertNotEqual(r.status_code, 200)
        self.assertNotIn(b"PLAINTEXT", r.content)
        self.assertIn("customer", r.text)

    def test_multipart(self):
        b = self.bucket("sse-mpu")
        parts = [os.urandom(5 * 1024 * 1024 + 7), os.urandom(5 * 1024 * 1024), os.urandom(1234)]
        plain = b"".join(parts)
        self.s3.put_object(Bucket=b, Key="mp-src", Body=parts[2], **ssec(KEY_C2))
        for kw in (ssec(), {"ServerSideEncryption": "AES256"}):
            k = "mp-%s" % ("c" if "SSECustomerKey" in kw else "s3")
            pk = kw if "SSECustomerKey" in kw else {}
            up = self.s3.create_multipart_upload(Bucket=b, Key=k, **kw)
            uid = up["UploadId"]
            if pk:  # every part carries the key: without, or another, refused
                self.client_err(lambda: self.s3.upload_part(Bucket=b, Key=k, UploadId=uid, PartNumber=1,
                                                            Body=parts[0]), 400, "InvalidRequest")
                self.client_err(lambda: self.s3.upload_part(Bucket=b, Key=k, UploadId=uid, PartNumber=1,
                                                            Body=parts[0], **ssec(KEY_C2)), 403, "AccessDenied")
            done = []
            for i, p in enumerate(parts[:2]):
                r = self.s3.upload_part(Bucket=b, Key=k, UploadId=uid, PartNumber=i + 1, Body=p, **pk)
                done.append({"PartNumber": i + 1, "ETag": r["ETag"]})
            # the last part copied from an SSE-C source (its key), encrypted as the upload's
            r = self.s3.upload_part_copy(Bucket=b, Key=k, UploadId=uid, PartNumber=3, CopySource={
                "Bucket": b, "Key": "mp-src"}, **ssec(KEY_C2, "CopySource"), **pk)
            done.append({"PartNumber": 3, "ETag": r["CopyPartResult"]["ETag"]})
            self.s3.complete_multipart_upload(Bucket=b, Key=k, UploadId=uid, MultipartUpload={"Parts": done})
            o = self.s3.get_object(Bucket=b, Key=k, **pk)
            self.assertEqual(o["Body"].read(), plain)
            a = len(parts[0]) - 10
            got = self.s3.get_object(Bucket=b, Key=k, Range="bytes=%d-%d" % (a, a + len(parts[1]) + 20),
                                     **pk)["Body"].read()
            self.assertEqual(got, plain[a:a + len(parts[1]) + 21])
            got = self.s3.get_object(Bucket=b, Key=k, PartNumber=2, **pk)["Body"].read()
            self.assertEqual(got, parts[1])
        self.assertEqual(self.on_disk(parts[1][1000:1100]), [])

    def test_bucket_default(self):
        b = self.bucket("sse-dflt")
        self.client_err(lambda: self.s3.get_bucket_encryption(Bucket=b), 404,
                        "ServerSideEncryptionConfigurationNotFoundError")
        cfg = {"Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]}
        self.s3.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration=cfg)
        got = self.s3.get_bucket_encryption(Bucket=b)["ServerSideEncryptionConfiguration"]
        self.assertEqual(got["Rules"][0]["ApplyServerSideEncryptionByDefault"]["SSEAlgorithm"], "AES256")
        self.client_err(lambda: self.s3.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "aws:kms"}}]}), 501, "NotImplemented")
        r = self.s3.put_object(Bucket=b, Key="d", Body=marker("DFLT", 2000))
        self.assertEqual(r["ServerSideEncryption"], "AES256")
        self.assertEqual(self.s3.head_object(Bucket=b, Key="d")["ServerSideEncryption"], "AES256")
        self.assertEqual(self.on_disk(b"PLAINTEXT-DFLT-PLAINTEXT-DFLT"), [])
        # SSE-C wins over the default
        r = self.s3.put_object(Bucket=b, Key="dc", Body=b"c", **ssec())
        self.assertNotIn("ServerSideEncryption", r)
        self.assertEqual(self.s3.get_object(Bucket=b, Key="dc", **ssec())["Body"].read(), b"c")
        self.s3.delete_bucket_encryption(Bucket=b)
        self.client_err(lambda: self.s3.get_bucket_encryption(Bucket=b), 404,
                        "ServerSideEncryptionConfigurationNotFoundError")
        self.assertNotIn("ServerSideEncryption", self.s3.put_object(Bucket=b, Key="after", Body=b"x"))
        self.assertEqual(self.s3.get_object(Bucket=b, Key="d")["Body"].read(), marker("DFLT", 2000))
        r = self.s.put(self.url + "/v1/buckets/" + b, json={"action": "set-bprops", "value": {"sse": "DES"}})
        self.assertEqual(r.status_code, 400, r.text)

    def test_aws_cli(self):
        b = self.bucket("sse-cli")
        src = os.path.join(self.tmp, "cli-src")
        plain = marker("CLI", 50000)
        with open(src, "wb") as f:
            f.write(plain)
        keyf = os.path.join(self.tmp, "cli-ssec.key")
        with open(keyf, "wb") as f:
            f.write(KEY_C)
        for args, get in ((["--sse", "AES256"], []),
                          (["--sse-c", "AES256", "--sse-c-key", "fileb://" + keyf],
                           ["--sse-c", "AES256", "--sse-c-key", "fileb://" + keyf])):
            p = self.aws("s3", "cp", src, "s3://%s/o" % b, *args)
            self.assertEqual(p.returncode, 0, p.stderr)
            dst = os.path.join(self.tmp, "cli-dst")
            p = self.aws("s3", "cp", "s3://%s/o" % b, dst, *get)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(dst, "rb") as f:
                self.assertEqual(f.read(), plain)
        p = self.aws("s3", "cp", "s3://%s/o" % b, os.path.join(self.tmp, "cli-nokey"))
        self.assertNotEqual(p.returncode, 0)
        p = self.aws("s3api", "head-object", "--bucket", b, "--key", "o", "--sse-customer-algorithm", "AES256",
                     "--sse-customer-key", "fileb://" + keyf)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(b"SSECustomerKeyMD5", p.stdout)
        self.assertEqual(self.on_disk(b"PLAINTEXT-CLI-PLAINTEXT-CLI"), [])

    def test_rclone_s3cmd(self):
        b = self.bucket("sse-tools")
        src = os.path.join(self.tmp, "tools-src")
        plain = marker("TOOLS", 30000)
        with open(src, "wb") as f:
            f.write(plain)
        # rclone: --s3-server-side-encryption AES256 (its SSE-C flags refuse plain HTTP: "cannot send SSE keys
        # over HTTP", and this cluster has no TLS)
        cfg = os.path.join(self.tmp, "rclone.conf")
        with open(cfg, "w") as f:
            f.write("[shale]\ntype = s3\nprovider = Other\naccess_key_id = %s\nsecret_access_key = %s\n"
                    "endpoint = %s\nforce_path_style = true\nregion = us-east-1\n" % (AK, SK, self.ep))
        rc = lambda *a: subprocess.run(["/usr/bin/rclone", "--config", cfg, "--retries", "1", "--low-level-retries",
                                        "1"] + list(a), capture_output=True, timeout=120, env=self.env,
                                       stdin=subprocess.DEVNULL)
        for name, flags, kw in (("rs3", ["--s3-server-side-encryption", "AES256"], {}),):
            p = rc("copyto", src, "shale:%s/%s" % (b, name), *flags)
            self.assertEqual(p.returncode, 0, p.stderr)
            o = self.s3.get_object(Bucket=b, Key=name, **kw)
            self.assertEqual(o["Body"].read(), plain)
            self.assertEqual(o.get("ServerSideEncryption", o.get("SSECustomerAlgorithm")), "AES256")
            out = os.path.join(self.tmp, "tools-" + name)
            p = rc("copyto", "shale:%s/%s" % (b, name), out, *flags)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out, "rb") as f:
                self.assertEqual(f.read(), plain)
        # s3cmd: --server-side-encryption (SSE-S3)
        scfg = os.path.join(self.tmp, "s3cmd.cfg")
        hb = self.ep.split("//", 1)[1]
        with open(scfg, "w") as f:
            f.write("[default]\naccess_key = %s\nsecret_key = %s\nhost_base = %s\nhost_bucket = %s\n"
                    "use_https = False\nsignature_v2 = False\nbucket_location = us-east-1\ncheck_ssl_certificate = "
                    "False\nproxy_host = \nprogress_meter = False\n" % (AK, SK, hb, hb))
        p = subprocess.run(["/usr/bin/s3cmd", "-c", scfg, "--no-progress", "put", "--server-side-encryption", src,
                            "s3://%s/s3cmd" % b], capture_output=True, timeout=120, env=self.env,
                           stdin=subprocess.DEVNULL)
        self.assertEqual(p.returncode, 0, p.stderr)
        o = self.s3.get_object(Bucket=b, Key="s3cmd")
        self.assertEqual((o["ServerSideEncryption"], o["Body"].read() == plain), ("AES256", True))
        self.assertEqual(self.on_disk(b"PLAINTEXT-TOOLS-PLAINTEXT-TOOLS"), [])

    def test_z_restart_and_rebalance(self):
        """encrypted objects and the bucket default survive a restart of every node, and a rebalance (a target
        in maintenance) moves them as they are: they still decrypt"""
        b = self.bucket("sse-reb")
        self.s3.put_bucket_encryption(Bucket=b, ServerSideEncryptionConfiguration={
            "Rules": [{"ApplyServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]})
        body = lambda i: (b"%02d" % i) * (i % 3 == 0 and 600000 or 10)
        for i in range(12):
            kw = ssec() if i % 2 else {}
            self.s3.put_object(Bucket=b, Key="o%d" % i, Body=body(i), **kw)
        self.c.cli("playground", "stop", "--dir", self.c.dir)
        self.c.cli("playground", "start", "--dir", self.c.dir)
        wait_until(lambda: len(self.c.smap()["tmap"]) == 2, 60, what="the targets back")
        wait_until(lambda: self.s3.get_bucket_encryption(Bucket=b), 30, what="the bucket default after restart")
        for i in range(12):
            kw = ssec() if i % 2 else {}
            self.assertEqual(self.s3.get_object(Bucket=b, Key="o%d" % i, **kw)["Body"].read(), body(i))
        tid = sorted(self.c.smap()["tmap"])[0]
        r = self.s.put(self.url + "/v1/cluster", json={"action": "start-maintenance", "value": {"sid": tid}})
        self.assertEqual(r.status_code, 200, r.text)
        jid = r.text.strip()

        def done():
            st = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid})
            return st.status_code == 200 and st.json()["end_time"] != 0 and st.json()
        try:
            st = wait_until(done, 120, interval=0.2, what="rebalance %s" % jid)
            self.assertFalse(st.get("err"), st)
            for i in range(12):
                kw = ssec() if i % 2 else {}
                o = self.s3.get_object(Bucket=b, Key="o%d" % i, **kw)
                self.assertEqual(o["Body"].read(), body(i))
                self.assertEqual(o.get("ServerSideEncryption", "C" if kw else None), "C" if kw else "AES256")
        finally:
            r = self.s.put(self.url + "/v1/cluster", json={"action": "stop-maintenance", "value": {"sid": tid}})
            self.assertEqual(r.status_code, 200, r.text)
            jid = r.text.strip()
            wait_until(done, 120, interval=0.2, what="rebalance %s" % jid)


if __name__ == "__main__":
    main()
