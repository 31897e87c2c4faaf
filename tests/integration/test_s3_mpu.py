#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""S3 multipart uploads that outlive a target restart, and S3's composite checksums of multipart uploads,
against a real cluster of 1 gateway and 2 targets driven by boto3 (and raw requests for the wire details).

Durable uploads: an upload with 2 acknowledged parts survives a SIGKILL of every target: after the restart
ListMultipartUploads and ListParts show it (parts, sizes, ETags, checksums), part 3 goes in, Complete makes
the object byte for byte with the metadata given at the start; Abort and the lifecycle job's
AbortIncompleteMultipartUpload remove uploads taken back after a restart. The native API's multipart
upload (mpt-upload) survives one too.

Composite checksums: CreateMultipartUpload with x-amz-checksum-algorithm (CRC32, CRC32C, SHA1, SHA256),
each part's checksum verified (BadDigest) and returned, listed by ListParts, required and compared by
CompleteMultipartUpload (InvalidRequest / InvalidPart, nothing completed), the object's checksum as S3 makes
it (the checksum of the parts' checksums, "-N", COMPOSITE) on Complete, HEAD and GET with x-amz-checksum-mode
ENABLED, and GetObjectAttributes (Checksum, ObjectParts with each part's checksum).

The nodes run with SHALE_TEST_CLOCK=1 (lifecycle.debug_days_offset). Signature verification is off (the
default): raw requests are unsigned.
"""
import base64
import hashlib
import os
import struct
import unittest
import xml.etree.ElementTree as ET
import zlib

import requests

from harness import main, s3_client, S3Checks, start_cluster, stop_cluster, wait_until


AK, SK = "shale-test-key", "shale-test-secret"
NS = "{http://s3.amazonaws.com/doc/2006-03-01/}"
MiB = 1024 * 1024


def b64(b):
    return base64.b64encode(b).decode()


def _crc32c_table():
    t = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
        t.append(c)
    return t


CRC32C_TAB = _crc32c_table()


def crc32c(data):
    crc, tab = 0xFFFFFFFF, CRC32C_TAB
    for byte in data:
        crc = tab[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def digest(alg, data):
    """the raw checksum of data, as S3 computes it"""
    if alg == "CRC32":
        return struct.pack(">I", zlib.crc32(data) & 0xFFFFFFFF)
    if alg == "CRC32C":
        return struct.pack(">I", crc32c(data))
    return hashlib.new(alg.lower(), data).digest()


def composite(alg, parts):
    """S3's checksum of a multipart object: of its parts' raw checksums one after another, then -N"""
    return b64(digest(alg, b"".join(digest(alg, p) for p in parts))) + "-%d" % len(parts)


def body(n, seed):
    return (hashlib.sha256(seed.encode()).digest() * (n // 32 + 1))[:n]


class S3MpuTest(S3Checks, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        start_cluster(cls, targets=2, env={"SHALE_TEST_CLOCK": "1"})
        cls.ep = cls.url + "/s3"
        cls.s3 = s3_client(cls.ep)

    @classmethod
    def tearDownClass(cls):
        stop_cluster(cls)

    def kill_and_restart_targets(self):
        """SIGKILL every target (nothing flushed, nothing said goodbye), start them again, wait for them"""
        for n in self.c.topology()["nodes"]:
            if n["role"] == "target":
                self.c.kill9(n["name"])
        self.c.cli("playground", "start", "--dir", self.c.dir)

        def back():
            try:
                return len(self.c.smap()["tmap"]) == 2 and all(
                    requests.get("http://127.0.0.1:%d/v1/health" % n["port"], timeout=2).status_code == 200
                    for n in self.c.topology()["nodes"])
            except requests.RequestException:
                return False
        wait_until(back, 60, interval=0.2, what="the targets back")

    def uploads(self, b):
        return sorted((u["Key"], u["UploadId"]) for u in self.s3.list_multipart_uploads(Bucket=b).get("Uploads", []))

    # ---- durable uploads ---------------------------------------------------------------------------------------

    def test_upload_survives_target_kill(self):
        b = self.bucket("mpu-kill")
        keys = ["k%d" % i for i in range(4)]  # (over both targets)
        data = {k: [body(5 * MiB, k + "1"), body(5 * MiB + 7, k + "2"), body(123457, k + "3")] for k in keys}
        ids, etags = {}, {}
        for k in keys:
            u = self.s3.create_multipart_upload(Bucket=b, Key=k, Metadata={"color": "blue-" + k},
                                                ContentType="application/x-test", ChecksumAlgorithm="SHA256")
            ids[k] = u["UploadId"]
            etags[k] = []
            for no in (1, 2):
                r = self.s3.upload_part(Bucket=b, Key=k, UploadId=ids[k], PartNumber=no, Body=data[k][no - 1],
                                        ChecksumAlgorithm="SHA256")
                self.assertEqual(r["ChecksumSHA256"], b64(digest("SHA256", data[k][no - 1])))
                etags[k].append(r["ETag"])
        self.kill_and_restart_targets()
        self.assertEqual(self.uploads(b), sorted((k, ids[k]) for k in keys))
        for k in keys:
            lp = self.s3.list_parts(Bucket=b, Key=k, UploadId=ids[k])
            self.assertEqual([(p["PartNumber"], p["Size"], p["ETag"], p["ChecksumSHA256"]) for p in lp["Parts"]],
                             [(no, len(data[k][no - 1]), etags[k][no - 1], b64(digest("SHA256", data[k][no - 1])))
                              for no in (1, 2)])
            r = self.s3.upload_part(Bucket=b, Key=k, UploadId=ids[k], PartNumber=3, Body=data[k][2],
                                    ChecksumAlgorithm="SHA256")
            etags[k].append(r["ETag"])
            done = self.s3.complete_multipart_upload(
                Bucket=b, Key=k, UploadId=ids[k], MultipartUpload={"Parts": [
                    {"PartNumber": no, "ETag": etags[k][no - 1],
                     "ChecksumSHA256": b64(digest("SHA256", data[k][no - 1]))} for no in (1, 2, 3)]})
            self.assertEqual(done["ChecksumSHA256"], composite("SHA256", data[k]))
            want_etag = '"%s-3"' % hashlib.md5(b"".join(bytes.fromhex(e.strip('"')) for e in etags[k])).hexdigest()
            self.assertEqual(done["ETag"], want_etag)
            got = self.s3.get_object(Bucket=b, Key=k)
            self.assertEqual(got["Body"].read(), b"".join(data[k]))
            self.assertEqual(got["Metadata"], {"color": "blue-" + k})
            self.assertEqual(got["ContentType"], "application/x-test")
            self.assertEqual(got["ETag"], want_etag)
        self.assertEqual(self.uploads(b), [])
        # nothing of them is left on the mountpaths
        for n in self.c.topology()["nodes"]:
            for root, dirs, files in os.walk(os.path.join(self.c.dir, n["name"])):
                self.assertFalse(set(dirs) & set(ids.values()), root)

    def test_abort_and_lifecycle_after_restart(self):
        b = self.bucket("mpu-abort")
        ids = {}
        for k in ("gone/a", "gone/b", "mp/c", "mp/d", "keep/e"):
            ids[k] = self.s3.create_multipart_upload(Bucket=b, Key=k)["UploadId"]
            self.s3.upload_part(Bucket=b, Key=k, UploadId=ids[k], PartNumber=1, Body=b"p" * 1000)
        self.s3.put_bucket_lifecycle_configuration(Bucket=b, LifecycleConfiguration={"Rules": [
            {"ID": "mpu", "Status": "Enabled", "Filter": {"Prefix": "mp/"},
             "AbortIncompleteMultipartUpload": {"DaysAfterInitiation": 7}}]})
        self.kill_and_restart_targets()
        self.assertEqual([k for k, _ in self.uploads(b)], ["gone/a", "gone/b", "keep/e", "mp/c", "mp/d"])
        for k in ("gone/a", "gone/b"):
            self.s3.abort_multipart_upload(Bucket=b, Key=k, UploadId=ids[k])
            self.client_err(lambda: self.s3.list_parts(Bucket=b, Key=k, UploadId=ids[k]), 404, "NoSuchUpload")
        self.c.cli("config", "cluster", "lifecycle.debug_days_offset=8")
        try:
            p = self.c.cli("job", "start", "lifecycle", "ais://" + b, "--wait", timeout=120)
            self.assertRegex(p.stdout, r"lifecycle\[\S+\] finished", p.stdout + p.stderr)
        finally:
            self.c.cli("config", "cluster", "lifecycle.debug_days_offset=0")
        self.assertEqual(self.uploads(b), [("keep/e", ids["keep/e"])])
        # ... and they stay gone after another restart
        self.kill_and_restart_targets()
        self.assertEqual(self.uploads(b), [("keep/e", ids["keep/e"])])
        self.client_err(lambda: self.s3.upload_part(Bucket=b, Key="mp/c", UploadId=ids["mp/c"], PartNumber=2,
                                                    Body=b"x"), 404, "NoSuchUpload")

    def test_native_upload_survives_restart(self):
        """the native API's multipart upload (AIStore's mpt-upload / put-part / mpt-complete)"""
        s = requests.Session()
        self.assertEqual(s.post(self.url + "/v1/buckets/nmpu", json={"action": "create-bck"}).status_code, 200)
        r = s.post(self.url + "/v1/objects/nmpu/obj", json={"action": "mpt-upload"})
        self.assertEqual(r.status_code, 200, r.text)
        uid = r.text.strip()
        p1, p2 = body(300000, "n1"), body(1000, "n2")
        r = s.put(self.url + "/v1/objects/nmpu/obj", params={"uploadId": uid, "partNumber": "1"}, data=p1)
        self.assertEqual(r.status_code, 200, r.text)
        self.kill_and_restart_targets()
        r = s.put(self.url + "/v1/objects/nmpu/obj", params={"uploadId": uid, "partNumber": "2"}, data=p2)
        self.assertEqual(r.status_code, 200, r.text)
        r = s.post(self.url + "/v1/objects/nmpu/obj", params={"uploadId": uid},
                   json={"action": "mpt-complete", "value": [{"part-number": 1, "etag": ""},
                                                             {"part-number": 2, "etag": ""}]})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(s.get(self.url + "/v1/objects/nmpu/obj").content, p1 + p2)

    # ---- composite checksums -----------------------------------------------------------------------------------

    def test_composite_checksums(self):
        b = self.bucket("mpu-xc")
        for alg in ("CRC32", "CRC32C", "SHA1", "SHA256"):
            k = "obj-" + alg
            parts = [body(5 * MiB, k + "a"), body(5 * MiB, k + "b"), body(4321, k + "c")]
            if alg == "CRC32C":  # (summed in Python here: slow)
                parts = [parts[0], parts[2]]
            raw = [digest(alg, p) for p in parts]
            cks = [b64(d) for d in raw]
            want = b64(digest(alg, b"".join(raw))) + "-%d" % len(parts)
            u = self.s3.create_multipart_upload(Bucket=b, Key=k, ChecksumAlgorithm=alg)
            self.assertEqual(u["ChecksumAlgorithm"], alg)
            uid = u["UploadId"]
            done = []
            for no, p in enumerate(parts, 1):
                if alg == "CRC32C":  # (boto3 computes it only with awscrt: the header by hand)
                    r = requests.put("%s/%s/%s?partNumber=%d&uploadId=%s" % (self.ep, b, k, no, uid), data=p,
                                     headers={"x-amz-checksum-crc32c": cks[no - 1]})
                    self.assertEqual(r.status_code, 200, r.text)
                    got, etag = r.headers["x-amz-checksum-crc32c"], r.headers["ETag"]
                else:
                    r = self.s3.upload_part(Bucket=b, Key=k, UploadId=uid, PartNumber=no, Body=p,
                                            ChecksumAlgorithm=alg)
                    got, etag = r["Checksum" + alg], r["ETag"]
                self.assertEqual(got, cks[no - 1], alg)
                done.append({"PartNumber": no, "ETag": etag, "Checksum" + alg: cks[no - 1]})
            lp = self.s3.list_parts(Bucket=b, Key=k, UploadId=uid)
            self.assertEqual([p["Checksum" + alg] for p in lp["Parts"]], cks)
            self.assertEqual(lp["ChecksumAlgorithm"], alg)
            # a part's checksum missing from the list, or not the one uploaded: nothing completes
            miss = [dict(done[0])] + done[1:]
            del miss[0]["Checksum" + alg]
            self.client_err(lambda: self.s3.complete_multipart_upload(
                Bucket=b, Key=k, UploadId=uid, MultipartUpload={"Parts": miss}), 400, "InvalidRequest")
            bad = done[:-1] + [dict(done[-1], **{"Checksum" + alg: b64(digest(alg, b"other"))})]
            self.client_err(lambda: self.s3.complete_multipart_upload(
                Bucket=b, Key=k, UploadId=uid, MultipartUpload={"Parts": bad}), 400, "InvalidPart")
            self.client_err(lambda: self.s3.head_object(Bucket=b, Key=k), 404, "404")
            r = self.s3.complete_multipart_upload(Bucket=b, Key=k, UploadId=uid, MultipartUpload={"Parts": done})
            self.assertEqual(r["Checksum" + alg], want, alg)
            h = self.s3.head_object(Bucket=b, Key=k, ChecksumMode="ENABLED")
            self.assertEqual(h["Checksum" + alg], want)
            self.assertEqual(h["ResponseMetadata"]["HTTPHeaders"]["x-amz-checksum-type"], "COMPOSITE")
            g = requests.get("%s/%s/%s" % (self.ep, b, k), headers={"x-amz-checksum-mode": "ENABLED"})
            self.assertEqual(g.headers["x-amz-checksum-" + alg.lower()], want)
            self.assertEqual(g.content, b"".join(parts))
            a = self.s3.get_object_attributes(Bucket=b, Key=k, ObjectAttributes=["Checksum", "ObjectParts"])
            self.assertEqual(a["Checksum"]["Checksum" + alg], want)
            # (Debian's botocore predates ChecksumType in this answer: read it from the XML)
            x = requests.get("%s/%s/%s?attributes" % (self.ep, b, k), headers={"x-amz-object-attributes": "Checksum"})
            self.assertIn("<ChecksumType>COMPOSITE</ChecksumType>", x.text)
            self.assertEqual(a["ObjectParts"]["TotalPartsCount"], len(parts))
            self.assertEqual([(p["PartNumber"], p["Size"], p["Checksum" + alg]) for p in a["ObjectParts"]["Parts"]],
                             [(no, len(p), cks[no - 1]) for no, p in enumerate(parts, 1)])

    def test_part_checksum_on_the_wire(self):
        """raw requests: a part whose x-amz-checksum-ALG is wrong is refused (BadDigest, not kept); one with
        another algorithm than the upload's is refused; one without gets the upload's computed and returned"""
        b = self.bucket("mpu-wire")
        r = requests.post("%s/%s/w?uploads" % (self.ep, b), headers={"x-amz-checksum-algorithm": "CRC32"})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.headers["x-amz-checksum-algorithm"], "CRC32")
        self.assertEqual(r.headers["x-amz-checksum-type"], "COMPOSITE")
        uid = ET.fromstring(r.content).find(NS + "UploadId").text
        url = "%s/%s/w?partNumber=1&uploadId=%s" % (self.ep, b, uid)
        p = b"part-one" * 1000
        r = requests.put(url, data=p, headers={"x-amz-checksum-crc32": b64(digest("CRC32", b"nope"))})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("BadDigest", r.text)
        r = requests.put(url, data=p, headers={"x-amz-checksum-sha256": b64(digest("SHA256", p))})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("InvalidRequest", r.text)
        lp = self.s3.list_parts(Bucket=b, Key="w", UploadId=uid)
        self.assertEqual(lp.get("Parts", []), [])
        r = requests.put(url, data=p)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.headers["x-amz-checksum-crc32"], b64(digest("CRC32", p)))
        for bad in ({"x-amz-checksum-algorithm": "MD5"}, {"x-amz-checksum-algorithm": "SHA1",
                                                          "x-amz-checksum-type": "FULL_OBJECT"}):
            r = requests.post("%s/%s/w2?uploads" % (self.ep, b), headers=bad)
            self.assertIn(r.status_code, (400, 501), r.text)
        self.assertEqual([k for k, _ in self.uploads(b)], ["w"])


if __name__ == "__main__":
    main()
