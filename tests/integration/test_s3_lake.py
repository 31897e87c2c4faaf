#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""S3 for data lakes (issue 39) against a real cluster of 1 gateway and 2 targets: what a data lake's
governance tools send beyond the core object store. Today: tagging of objects and buckets with boto3 and the aws
CLI — x-amz-tagging on PUT and CreateMultipartUpload, Get/Put/DeleteObjectTagging, TagCount on GET
and HEAD, x-amz-tagging-directive on copy, S3's limits and error codes, tags that survive a rebalance (with
a stored header value holding a comma), and bucket tags.

Signature verification is off in this cluster (the default); the raw requests are unsigned.
"""
import os
import subprocess
import unittest
import xml.etree.ElementTree as ET
from urllib.parse import quote

from harness import main, s3_client, S3Checks, start_cluster, stop_cluster, wait_until


AWS = "/usr/bin/aws"
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
AK, SK = "shale-test-key", "shale-test-secret"


def tagset(d):
    return [{"Key": k, "Value": v} for k, v in d.items()]


def as_dict(ts):
    return {t["Key"]: t["Value"] for t in ts}


class S3LakeTest(S3Checks, unittest.TestCase):
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

    def tags(self, b, k):
        return as_dict(self.s3.get_object_tagging(Bucket=b, Key=k)["TagSet"])

    # ---- object tags ------------------------------------------------------------------------------------------

    def test_object_tagging(self):
        b = self.bucket("tg-obj")
        odd = {"team": "vision", "note": "a,b=c&d+e %41", "ünï": "çödé", "empty": ""}
        for i in range(6):  # over both targets
            k = "d/o%d" % i
            self.s3.put_object(Bucket=b, Key=k, Body=b"x" * i,
                               Tagging="&".join("%s=%s" % (quote(a, safe=""), quote(v, safe=""))
                                                for a, v in odd.items()))
            self.assertEqual(self.tags(b, k), odd)
            self.assertEqual(self.s3.head_object(Bucket=b, Key=k)["ResponseMetadata"]["HTTPHeaders"]
                             ["x-amz-tagging-count"], "4")
            self.assertEqual(self.s3.get_object(Bucket=b, Key=k)["TagCount"], 4)
        # replace, then delete; the object's bytes and other metadata stay
        self.s3.put_object(Bucket=b, Key="m", Body=b"keep", Metadata={"owner": "me"}, ContentType="text/csv")
        self.assertEqual(self.tags(b, "m"), {})
        self.assertNotIn("TagCount", self.s3.get_object(Bucket=b, Key="m"))
        self.s3.put_object_tagging(Bucket=b, Key="m", Tagging={"TagSet": tagset({"a": "1", "b": "2"})})
        self.assertEqual(self.tags(b, "m"), {"a": "1", "b": "2"})
        self.s3.put_object_tagging(Bucket=b, Key="m", Tagging={"TagSet": tagset({"c": "3"})})
        self.assertEqual(self.tags(b, "m"), {"c": "3"})
        o = self.s3.get_object(Bucket=b, Key="m")
        self.assertEqual((o["Body"].read(), o["Metadata"], o["ContentType"]), (b"keep", {"owner": "me"}, "text/csv"))
        r = self.s3.delete_object_tagging(Bucket=b, Key="m")
        self.assertEqual(r["ResponseMetadata"]["HTTPStatusCode"], 204)
        self.assertEqual(self.tags(b, "m"), {})
        self.assertEqual(self.s3.get_object(Bucket=b, Key="m")["Body"].read(), b"keep")
        # the object is still there after DELETE ?tagging (it once deleted the object)
        self.assertEqual(self.s3.head_object(Bucket=b, Key="m")["ContentLength"], 4)
        # a missing key
        self.client_err(lambda: self.s3.get_object_tagging(Bucket=b, Key="nope"), 404, "NoSuchKey")
        self.client_err(lambda: self.s3.put_object_tagging(Bucket=b, Key="nope", Tagging={"TagSet": []}), 404,
                        "NoSuchKey")
        self.assertNotIn("Contents", self.s3.list_objects_v2(Bucket=b, Prefix="nope"))
        # the native API sees them as custom metadata
        r = self.s.head(self.url + "/v1/objects/tg-obj/d/o1", params={"provider": "ais", "props": "custom"},
                   allow_redirects=True)
        self.assertIn("s3.tag.", r.headers.get("Ais-Custom-Md", ""))

    def test_object_tag_limits(self):
        b = self.bucket("tg-lim")
        self.s3.put_object(Bucket=b, Key="o", Body=b"1")
        put = lambda ts: self.s3.put_object_tagging(Bucket=b, Key="o", Tagging={"TagSet": ts})
        # S3's maximum: 10 tags of 128-character keys and 256-character values, with user metadata beside
        mx = {("k%d" % i) * 1 + "K" * (128 - len("k%d" % i)): "v" * 256 for i in range(10)}
        self.s3.put_object(Bucket=b, Key="max", Body=b"m", Metadata={"m": "x" * 1500})
        self.s3.put_object_tagging(Bucket=b, Key="max", Tagging={"TagSet": tagset(mx)})
        self.assertEqual(self.tags(b, "max"), mx)
        for ts, why in ((tagset({"k%d" % i: "v" for i in range(11)}), "greater than 10"),
                        (tagset({"K" * 129: "v"}), "TagKey"),
                        (tagset({"k": "v" * 257}), "TagValue"),
                        ([{"Key": "a", "Value": "1"}, {"Key": "a", "Value": "2"}], "same key"),
                        (tagset({"aws:x": "1"}), "aws:")):
            e = self.client_err(lambda: put(ts), 400, "InvalidTag")
            self.assertIn(why, e["Error"]["Message"])
        self.assertEqual(self.tags(b, "o"), {})  # nothing was changed
        r = self.s.put(self.ep + "/tg-lim/o", params={"tagging": ""}, data=b"<Tagging><TagSet><Tag><Key></Key>"
                       b"<Value>1</Value></Tag></TagSet></Tagging>")  # (boto3 refuses to send an empty key)
        self.assertEqual(r.status_code, 400, r.text)
        self.assertEqual(ET.fromstring(r.content).findtext("Code"), "InvalidTag")
        r = self.s.put(self.ep + "/tg-lim/o", params={"tagging": ""}, data=b"<Tagging><TagSet><Tag><Value>1</Value>"
                       b"</Tag></TagSet></Tagging>")
        self.assertEqual(r.status_code, 400, r.text)
        self.assertEqual(ET.fromstring(r.content).findtext("Code"), "MalformedXML")
        r = self.s.put(self.ep + "/tg-lim/o", params={"tagging": ""}, data=b"<Tagging><TagSet>")
        self.assertEqual(ET.fromstring(r.content).findtext("Code"), "MalformedXML")
        # a bad x-amz-tagging refuses the PUT: nothing stored
        e = self.client_err(lambda: self.s3.put_object(Bucket=b, Key="bad", Body=b"1",
                                                       Tagging="&".join("k%d=v" % i for i in range(11))),
                            400, "InvalidTag")
        self.assertIn("x-amz-tagging", e["Error"]["Message"])
        self.client_err(lambda: self.s3.head_object(Bucket=b, Key="bad"), 404, "404")

    def test_copy_and_multipart_tags(self):
        b = self.bucket("tg-cp")
        self.s3.put_object(Bucket=b, Key="src", Body=b"source", Tagging="a=1&b=2", CacheControl="no-cache, no-store")
        for i in range(6):  # destinations on both targets: the source read locally and from its target
            self.s3.copy_object(Bucket=b, Key="c%d" % i, CopySource={"Bucket": b, "Key": "src"})
            self.assertEqual(self.tags(b, "c%d" % i), {"a": "1", "b": "2"})
            self.s3.copy_object(Bucket=b, Key="r%d" % i, CopySource={"Bucket": b, "Key": "src"},
                                TaggingDirective="REPLACE", Tagging="z=9")
            self.assertEqual(self.tags(b, "r%d" % i), {"z": "9"})
            self.s3.copy_object(Bucket=b, Key="n%d" % i, CopySource={"Bucket": b, "Key": "src"},
                                TaggingDirective="REPLACE")
            self.assertEqual(self.tags(b, "n%d" % i), {})
            self.s3.copy_object(Bucket=b, Key="m%d" % i, CopySource={"Bucket": b, "Key": "src"},
                                MetadataDirective="REPLACE", Metadata={"q": "1"})
            self.assertEqual(self.tags(b, "m%d" % i), {"a": "1", "b": "2"})
            self.assertEqual(self.s3.head_object(Bucket=b, Key="m%d" % i)["Metadata"], {"q": "1"})
        self.client_err(lambda: self.s3.copy_object(Bucket=b, Key="x", CopySource={"Bucket": b, "Key": "src"},
                                                    TaggingDirective="MERGE"), 400, "InvalidArgument")
        mp = self.s3.create_multipart_upload(Bucket=b, Key="mp", Tagging="part=yes")
        pt = self.s3.upload_part(Bucket=b, Key="mp", UploadId=mp["UploadId"], PartNumber=1, Body=b"p" * 100)
        self.s3.complete_multipart_upload(Bucket=b, Key="mp", UploadId=mp["UploadId"],
                                          MultipartUpload={"Parts": [{"PartNumber": 1, "ETag": pt["ETag"]}]})
        self.assertEqual(self.tags(b, "mp"), {"part": "yes"})
        self.client_err(lambda: self.s3.create_multipart_upload(Bucket=b, Key="mp2", Tagging="aws:k=1"),
                        400, "InvalidTag")

    def test_tags_survive_rebalance(self):
        """a target in maintenance gives its objects to the other: their tags and a Cache-Control with a
        comma come along (the comma split the value into a bad entry, and the move failed)"""
        b = self.bucket("tg-reb")
        body = lambda i: (b"%02d" % i) * (i % 3 == 0 and 600000 or 1)  # some over 1 MiB: moved one per PUT
        for i in range(20):
            self.s3.put_object(Bucket=b, Key="o%d" % i, Body=body(i), Tagging="n=%d&s=a,b" % i,
                               CacheControl="no-cache, no-store")
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
            for i in range(20):
                self.assertEqual(self.tags(b, "o%d" % i), {"n": str(i), "s": "a,b"})
                o = self.s3.get_object(Bucket=b, Key="o%d" % i)
                self.assertEqual((o["Body"].read(), o["CacheControl"]), (body(i), "no-cache, no-store"))
        finally:
            r = self.s.put(self.url + "/v1/cluster", json={"action": "stop-maintenance", "value": {"sid": tid}})
            self.assertEqual(r.status_code, 200, r.text)
            jid = r.text.strip()
            wait_until(done, 120, interval=0.2, what="rebalance %s" % jid)

    def test_cli_tagging(self):
        b = self.bucket("tg-cli")
        self.s3.put_object(Bucket=b, Key="o", Body=b"1")
        run = lambda *a: subprocess.run([AWS, "--endpoint-url", self.ep, "s3api"] + list(a), env=self.env,
                                        capture_output=True, text=True, timeout=60)
        p = run("put-object-tagging", "--bucket", b, "--key", "o", "--tagging",
                '{"TagSet":[{"Key":"stage","Value":"raw"}]}')
        self.assertEqual(p.returncode, 0, p.stderr)
        p = run("get-object-tagging", "--bucket", b, "--key", "o")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn('"stage"', p.stdout)
        p = run("put-bucket-tagging", "--bucket", b, "--tagging", '{"TagSet":[{"Key":"cost","Value":"ml"}]}')
        self.assertEqual(p.returncode, 0, p.stderr)
        p = run("get-bucket-tagging", "--bucket", b)
        self.assertIn('"cost"', p.stdout)
        # (Debian 12's s3cmd 2.3 has no tagging commands; rclone sets none)

    # ---- bucket tags ------------------------------------------------------------------------------------------

    def test_bucket_tagging(self):
        b = self.bucket("tg-bck")
        self.client_err(lambda: self.s3.get_bucket_tagging(Bucket=b), 404, "NoSuchTagSet")
        t = {"project": "llm", "cost-center": "42", "odd": "a,b=c&d"}
        r = self.s3.put_bucket_tagging(Bucket=b, Tagging={"TagSet": tagset(t)})
        self.assertEqual(r["ResponseMetadata"]["HTTPStatusCode"], 204)
        self.assertEqual(as_dict(self.s3.get_bucket_tagging(Bucket=b)["TagSet"]), t)
        # the bucket's props (native API) carry them; every node answers the same
        props = self.s.head(self.url + "/v1/buckets/" + b, params={"provider": "ais"})
        self.assertEqual(props.status_code, 200)
        self.client_err(lambda: self.s3.put_bucket_tagging(
            Bucket=b, Tagging={"TagSet": tagset({"k%d" % i: "v" for i in range(51)})}), 400, "InvalidTag")
        self.client_err(lambda: self.s3.put_bucket_tagging(
            Bucket=b, Tagging={"TagSet": tagset({"aws:cf": "v"})}), 400, "InvalidTag")
        self.assertEqual(as_dict(self.s3.get_bucket_tagging(Bucket=b)["TagSet"]), t)  # unchanged
        self.s3.put_bucket_tagging(Bucket=b, Tagging={"TagSet": tagset({"k%d" % i: "v" for i in range(50)})})
        self.assertEqual(len(self.s3.get_bucket_tagging(Bucket=b)["TagSet"]), 50)
        r = self.s3.delete_bucket_tagging(Bucket=b)
        self.assertEqual(r["ResponseMetadata"]["HTTPStatusCode"], 204)
        self.client_err(lambda: self.s3.get_bucket_tagging(Bucket=b), 404, "NoSuchTagSet")
        # a tagging request did not create a bucket
        self.client_err(lambda: self.s3.put_bucket_tagging(Bucket="tg-none", Tagging={"TagSet": tagset(t)}),
                        404, "NoSuchBucket")
        self.client_err(lambda: self.s3.head_bucket(Bucket="tg-none"), 404, "404")


if __name__ == "__main__":
    main()
