#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""S3 object versioning (issue 39) against a real cluster of 1 gateway and 2 targets, with boto3, the aws CLI and
rclone: PutBucketVersioning Enabled/Suspended (the bucket's props s3_versioning; a bucket never versioned keeps
one copy), a new version id on every PUT, copy and multipart complete, the older versions kept, GET/HEAD/DELETE and
CopyObject's source by versionId, delete markers (x-amz-delete-marker, GET 404), ListObjectVersions with
IsLatest and key-marker/version-id-marker paging, DeleteObjects with version ids, Suspended's null version, the
native API seeing the current version only, and versions that survive a rebalance and a restart of every node.

Signature verification is off in this cluster (the default).
"""
import os
import subprocess
import time
import unittest
from urllib.parse import quote

from harness import main, s3_client, S3Checks, SHALE, start_cluster, stop_cluster, wait_until

import boto3
import requests
from botocore.config import Config

AWS = "/usr/bin/aws"
RCLONE = "/usr/bin/rclone"
AK, SK = "shale-test-key", "shale-test-secret"


class S3VersionsTest(S3Checks, unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        start_cluster(cls, targets=2, mountpaths=2)  # (2: mirror copies)
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

    def vbucket(self, name, status="Enabled"):
        self.s3.create_bucket(Bucket=name)
        if status:
            self.s3.put_bucket_versioning(Bucket=name, VersioningConfiguration={"Status": status})
        return name

    def versions(self, b, prefix=""):
        """[(key, version id, is latest, is a delete marker)] in listing order (every page)"""
        out = []
        for page in self.s3.get_paginator("list_object_versions").paginate(Bucket=b, Prefix=prefix):
            for v in page.get("Versions", []):
                out.append((v["Key"], v["VersionId"], v["IsLatest"], False, v["LastModified"]))
            for v in page.get("DeleteMarkers", []):
                out.append((v["Key"], v["VersionId"], v["IsLatest"], True, v["LastModified"]))
        # (boto3 splits Versions and DeleteMarkers: put them back in S3's order, per key newest first)
        out.sort(key=lambda x: (x[0], -x[4].timestamp()))
        return [x[:4] for x in out]

    def body(self, b, k, **kw):
        return self.s3.get_object(Bucket=b, Key=k, **kw)["Body"].read()

    def native_get(self, b, k):
        return self.s.get(self.url + "/v1/objects/%s/%s" % (b, k), timeout=30)

    def native_names(self, b):
        r = self.s.get(self.url + "/v1/buckets/" + b, json={"action": "list", "value": {"props": "name"}},
                       timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        return sorted(e["name"] for e in (r.json().get("entries") or []))

    # ---- Enabled ----------------------------------------------------------------------------------------------

    def test_versions_enabled(self):
        b = self.vbucket("ver-on", status=None)
        self.s3.put_object(Bucket=b, Key="k", Body=b"v0")  # before versioning: the null version
        self.assertNotIn("Status", self.s3.get_bucket_versioning(Bucket=b))  # never turned on
        self.assertEqual(self.versions(b), [("k", "null", True, False)])
        self.s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
        self.assertEqual(self.s3.get_bucket_versioning(Bucket=b)["Status"], "Enabled")
        v1 = self.s3.put_object(Bucket=b, Key="k", Body=b"v1")["VersionId"]
        time.sleep(0.002)
        v2 = self.s3.put_object(Bucket=b, Key="k", Body=b"v2")["VersionId"]
        self.assertTrue(v1 and v2 and v1 != v2 and v1 != "null", (v1, v2))
        self.assertEqual(self.versions(b), [("k", v2, True, False), ("k", v1, False, False),
                                            ("k", "null", False, False)])
        self.assertEqual(self.body(b, "k"), b"v2")
        for vid, want in ((v2, b"v2"), (v1, b"v1"), ("null", b"v0")):
            o = self.s3.get_object(Bucket=b, Key="k", VersionId=vid)
            self.assertEqual((o["Body"].read(), o["VersionId"]), (want, vid))
            h = self.s3.head_object(Bucket=b, Key="k", VersionId=vid)
            self.assertEqual((h["ContentLength"], h["VersionId"]), (2, vid))
        # the native API: the current version, one object in the listing
        r = self.native_get(b, "k")
        self.assertEqual((r.status_code, r.content), (200, b"v2"))
        self.assertEqual(self.native_names(b), ["k"])
        self.client_err(lambda: self.s3.get_object(Bucket=b, Key="k", VersionId="0123456789abcdef0123"), 404,
                        "NoSuchVersion")
        self.client_err(lambda: self.s3.get_object(Bucket=b, Key="k", VersionId="nope"), 400, "InvalidArgument")
        # copy of an older version: a new version of the destination
        c = self.s3.copy_object(Bucket=b, Key="k2", CopySource={"Bucket": b, "Key": "k", "VersionId": v1})
        self.assertEqual(c["CopySourceVersionId"], v1)
        self.assertTrue(c["VersionId"] and c["VersionId"] != "null")
        self.assertEqual(self.body(b, "k2"), b"v1")
        # each version has its own tags (by versionId; without one, the current version's)
        self.s3.put_object_tagging(Bucket=b, Key="k", VersionId=v2, Tagging={"TagSet": [{"Key": "a", "Value": "1"}]})
        t = self.s3.put_object_tagging(Bucket=b, Key="k", VersionId=v1,
                                       Tagging={"TagSet": [{"Key": "old", "Value": "yes"}]})
        self.assertEqual(t["VersionId"], v1)
        t = self.s3.get_object_tagging(Bucket=b, Key="k", VersionId=v1)
        self.assertEqual((t["TagSet"], t["VersionId"]), ([{"Key": "old", "Value": "yes"}], v1))
        self.assertEqual(self.s3.get_object_tagging(Bucket=b, Key="k")["TagSet"], [{"Key": "a", "Value": "1"}])
        self.assertEqual(self.s3.get_object_tagging(Bucket=b, Key="k", VersionId=v2)["TagSet"],
                         [{"Key": "a", "Value": "1"}])
        self.assertEqual(self.s3.get_object_tagging(Bucket=b, Key="k", VersionId="null")["TagSet"], [])
        self.s3.delete_object_tagging(Bucket=b, Key="k", VersionId=v1)
        self.assertEqual(self.s3.get_object_tagging(Bucket=b, Key="k", VersionId=v1)["TagSet"], [])
        self.assertEqual(self.s3.get_object_tagging(Bucket=b, Key="k")["TagSet"], [{"Key": "a", "Value": "1"}])
        self.s3.put_object_tagging(Bucket=b, Key="k", VersionId=v1, Tagging={"TagSet": [{"Key": "o", "Value": "2"}]})
        self.assertEqual(self.body(b, "k", VersionId=v1), b"v1")  # (the data is as it was)
        self.client_err(lambda: self.s3.get_object_tagging(Bucket=b, Key="k", VersionId="0123456789abcdef0123"), 404,
                        "NoSuchVersion")
        # a delete marker: GET 404 with its headers; the versions stay
        d = self.s3.delete_object(Bucket=b, Key="k")
        self.assertTrue(d["DeleteMarker"])
        dm = d["VersionId"]
        e = self.client_err(lambda: self.s3.get_object(Bucket=b, Key="k"), 404, "NoSuchKey")
        self.assertEqual(e["ResponseMetadata"]["HTTPHeaders"].get("x-amz-delete-marker"), "true")
        self.assertEqual(self.native_get(b, "k").status_code, 404)
        self.assertEqual(self.native_names(b), ["k2"])
        self.assertEqual(self.versions(b, "k")[:2], [("k", dm, True, True), ("k", v2, False, False)])
        self.client_err(lambda: self.s3.head_object(Bucket=b, Key="k", VersionId=dm), 405, None)
        self.assertEqual(self.body(b, "k", VersionId=v2), b"v2")
        # removing the marker brings v2 back; removing v2 for good makes v1 current
        self.assertTrue(self.s3.delete_object(Bucket=b, Key="k", VersionId=dm)["DeleteMarker"])
        self.assertEqual(self.body(b, "k"), b"v2")
        self.s3.delete_object(Bucket=b, Key="k", VersionId=v2)
        self.assertEqual(self.body(b, "k"), b"v1")
        self.assertEqual(self.s3.get_object_tagging(Bucket=b, Key="k")["TagSet"], [{"Key": "o", "Value": "2"}])
        self.assertEqual(self.native_get(b, "k").content, b"v1")
        self.assertEqual([v[:3] for v in self.versions(b, "k")], [("k", v1, True), ("k", "null", False),
                                                                 ("k2", c["VersionId"], True)])
        self.client_err(lambda: self.s3.get_object(Bucket=b, Key="k", VersionId=v2), 404, "NoSuchVersion")
        # a multipart upload completes into a new version
        mp = self.s3.create_multipart_upload(Bucket=b, Key="k")
        pt = self.s3.upload_part(Bucket=b, Key="k", UploadId=mp["UploadId"], PartNumber=1, Body=b"m" * 100)
        done = self.s3.complete_multipart_upload(Bucket=b, Key="k", UploadId=mp["UploadId"], MultipartUpload={
            "Parts": [{"PartNumber": 1, "ETag": pt["ETag"]}]})
        self.assertTrue(done.get("VersionId") and done["VersionId"] != v1, done)
        self.assertEqual(self.body(b, "k"), b"m" * 100)
        self.assertEqual(self.body(b, "k", VersionId=v1), b"v1")
        # an older version copied onto its own key: restored as a new version, the others kept
        r = self.s3.copy_object(Bucket=b, Key="k", CopySource={"Bucket": b, "Key": "k", "VersionId": v1})
        self.assertEqual(self.body(b, "k"), b"v1")
        self.assertEqual(self.body(b, "k", VersionId=done["VersionId"]), b"m" * 100)
        self.assertEqual([v[1] for v in self.versions(b, "k") if v[0] == "k"][:2], [r["VersionId"], done["VersionId"]])
        # a bucket holding versions is not empty; suspending is the way back, never to ""
        self.client_err(lambda: self.s3.delete_bucket(Bucket=b), 409, "BucketNotEmpty")

    def test_suspended(self):
        b = self.vbucket("ver-susp")
        a1 = self.s3.put_object(Bucket=b, Key="a", Body=b"a1")["VersionId"]
        self.s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
        self.assertEqual(self.s3.get_bucket_versioning(Bucket=b)["Status"], "Suspended")
        self.assertEqual(self.s3.put_object(Bucket=b, Key="a", Body=b"a2").get("VersionId"), "null")
        self.s3.put_object(Bucket=b, Key="a", Body=b"a3")  # replaces the null version
        self.assertEqual(self.versions(b), [("a", "null", True, False), ("a", a1, False, False)])
        self.assertEqual(self.body(b, "a", VersionId="null"), b"a3")
        d = self.s3.delete_object(Bucket=b, Key="a")  # a null delete marker, in the null version's place
        self.assertEqual((d["DeleteMarker"], d["VersionId"]), (True, "null"))
        self.assertEqual(self.versions(b), [("a", "null", True, True), ("a", a1, False, False)])
        self.assertEqual(self.body(b, "a", VersionId=a1), b"a1")
        r = self.s.patch(self.url + "/v1/buckets/" + b, json={"action": "set-bprops", "value": {"s3_versioning": ""}},
                         timeout=30)
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("s3_versioning", r.text)

    def test_paging_and_delete_objects(self):
        b = self.vbucket("ver-page")
        want = []
        for k in ("p/a", "p/b", "p/c"):
            ids = []
            for i in range(3):
                ids.append(self.s3.put_object(Bucket=b, Key=k, Body=b"%s%d" % (k.encode(), i))["VersionId"])
                time.sleep(0.002)
            want += [(k, v, v == ids[-1], False) for v in reversed(ids)]
        self.assertEqual(self.versions(b), want)
        got, km, vm = [], None, None
        for _ in range(20):  # 2 per page by hand: key-marker and version-id-marker
            kw = {"KeyMarker": km, "VersionIdMarker": vm} if km else {}
            p = self.s3.list_object_versions(Bucket=b, MaxKeys=2, **kw)
            got += [(v["Key"], v["VersionId"]) for v in p.get("Versions", [])]
            if not p["IsTruncated"]:
                break
            km, vm = p["NextKeyMarker"], p["NextVersionIdMarker"]
        self.assertEqual(got, [(w[0], w[1]) for w in want])
        p = self.s3.list_object_versions(Bucket=b, Delimiter="/")
        self.assertEqual([c["Prefix"] for c in p["CommonPrefixes"]], ["p/"])
        # DeleteObjects: one version by id, one key without (a marker)
        r = self.s3.delete_objects(Bucket=b, Delete={"Objects": [{"Key": "p/a", "VersionId": want[1][1]},
                                                                 {"Key": "p/b"}]})
        dl = {d["Key"]: d for d in r["Deleted"]}
        self.assertEqual(dl["p/a"]["VersionId"], want[1][1])
        self.assertTrue(dl["p/b"]["DeleteMarker"])
        self.assertTrue(dl["p/b"]["DeleteMarkerVersionId"])
        v = self.versions(b, "p/")
        self.assertNotIn(("p/a", want[1][1], False, False), v)
        self.assertEqual(v[2][:4], ("p/b", dl["p/b"]["DeleteMarkerVersionId"], True, True))

    # ---- tools ------------------------------------------------------------------------------------------------

    def test_aws_sync_delete_markers(self):
        b = self.vbucket("ver-sync")
        src = os.path.join(self.tmp, "sync-src")
        os.makedirs(src, exist_ok=True)
        for i in range(3):
            with open(os.path.join(src, "f%d" % i), "wb") as f:
                f.write(b"f%d" % i)
        run = lambda *a: subprocess.run([AWS, "--endpoint-url", self.ep] + list(a), env=self.env,
                                        capture_output=True, text=True, timeout=120)
        p = run("s3", "sync", src, "s3://%s/" % b)
        self.assertEqual(p.returncode, 0, p.stderr)
        os.remove(os.path.join(src, "f1"))
        p = run("s3", "sync", "--delete", src, "s3://%s/" % b)
        self.assertEqual(p.returncode, 0, p.stderr)
        p = run("s3api", "list-object-versions", "--bucket", b)
        self.assertEqual(p.returncode, 0, p.stderr)
        import json
        out = json.loads(p.stdout)
        self.assertEqual([(m["Key"], m["IsLatest"]) for m in out["DeleteMarkers"]], [("f1", True)])
        self.assertEqual(sorted(v["Key"] for v in out["Versions"]), ["f0", "f1", "f2"])
        self.assertEqual(self.native_names(b), ["f0", "f2"])

    def test_rclone_sync_purge(self):
        if not os.access(RCLONE, os.X_OK):
            self.skipTest("no rclone")
        b = self.vbucket("ver-rclone")
        cfg = os.path.join(self.tmp, "rclone.conf")
        with open(cfg, "w") as f:
            f.write("[shale]\ntype = s3\nprovider = Other\naccess_key_id = %s\nsecret_access_key = %s\n"
                    "endpoint = %s\nforce_path_style = true\nregion = us-east-1\n" % (AK, SK, self.ep))
        src = os.path.join(self.tmp, "rc-src")
        os.makedirs(src, exist_ok=True)

        def rclone(*a):
            p = subprocess.run([RCLONE, "--config", cfg, "--retries", "1", "--low-level-retries", "2"] + list(a),
                               capture_output=True, text=True, timeout=120, env=self.env, stdin=subprocess.DEVNULL)
            return p
        for i in range(3):
            with open(os.path.join(src, "r%d" % i), "wb") as f:
                f.write(b"one%d" % i)
        self.assertEqual(rclone("sync", src, "shale:" + b).returncode, 0)
        with open(os.path.join(src, "r0"), "wb") as f:
            f.write(b"two-and-longer")
        os.remove(os.path.join(src, "r2"))
        p = rclone("sync", src, "shale:" + b)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.body(b, "r0"), b"two-and-longer")
        v = self.versions(b)
        self.assertEqual([(k, lat, dm) for k, _, lat, dm in v],
                         [("r0", True, False), ("r0", False, False), ("r1", True, False), ("r2", True, True),
                          ("r2", False, False)])
        # rclone's own view of the versions, then a purge: rclone lists every version of a versioned bucket
        # and deletes each by id, then the bucket
        p = rclone("lsf", "--s3-versions", "shale:" + b)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(len(p.stdout.split()), 4, p.stdout)  # r0, r0-vTIME, r1, r2-vTIME (markers unlisted)
        p = rclone("purge", "-vv", "shale:" + b)
        self.assertEqual(p.returncode, 0, p.stderr)
        # (it asks GetBucketVersioning; plain deletes would leave markers: BucketNotEmpty)
        self.assertIn("bucket is versioned: true", p.stderr)
        self.assertIn("Deleting delete marker", p.stderr)
        self.assertEqual(self.s.head(self.ep + "/" + b, timeout=30).status_code, 404)

    # ---- durability -------------------------------------------------------------------------------------------

    def test_mirror_copies_versions(self):
        """with mirror.copies 2 an older version gets its own copy on the other mountpath, as the current one"""
        b = self.vbucket("ver-mirror")
        r = self.s.patch(self.url + "/v1/buckets/" + b, timeout=30,
                         json={"action": "set-bprops", "value": {"mirror": {"enabled": True, "copies": 2}}})
        self.assertEqual(r.status_code, 200, r.text)
        v1 = self.s3.put_object(Bucket=b, Key="m", Body=b"one")["VersionId"]
        self.s3.put_object(Bucket=b, Key="m", Body=b"two")

        def copies(name):
            r = self.s.head(self.url + "/v1/objects/%s/%s" % (b, quote(name)), timeout=30, allow_redirects=True)
            return r.status_code == 200 and int(r.headers.get("Ais-Mirror-Copies", "0"))
        wait_until(lambda: copies("m") == 2 and copies("m\x01" + v1) == 2, 30, what="2 copies of each version")
        self.assertEqual(self.body(b, "m", VersionId=v1), b"one")

    def test_crash_around_the_archive(self):
        """a target killed after the current object was linked for its archive but before the commit: the old
        version stays current and nothing new is listed; killed after the commit, before the renames: the new
        version is current and the old one archived (the restart finishes both from their pending markers)"""
        b = self.vbucket("ver-crash")
        v0 = self.s3.put_object(Bucket=b, Key="k", Body=b"old")["VersionId"]
        targets = [n["name"] for n in self.c.topology()["nodes"] if n["role"] == "target"]
        for point, want in (("ver-after-link", b"old"), ("put-after-commit", b"new")):
            for t in targets:
                self.c.kill9(t)
            env = dict(os.environ, AIS_ENDPOINT=self.url, SHALE_FAULT=point)
            p = subprocess.run([SHALE, "playground", "start", "--dir", self.c.dir], env=env, capture_output=True,
                               text=True, timeout=120)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            wait_until(lambda: len(self.c.smap()["tmap"]) == 2, 60, what="2 targets")
            with self.assertRaises(Exception):
                self.s3.put_object(Bucket=b, Key="k", Body=b"new")
            self.c.stop()
            self.c.start()
            wait_until(lambda: len(self.c.smap()["tmap"]) == 2, 60, what="2 targets after the restart")
            wait_until(lambda: self.s.get(self.ep + "/" + b, timeout=10).status_code == 200, 60, what="S3 back")
            self.assertEqual(self.body(b, "k"), want, point)
            v = self.versions(b)
            if want == b"old":
                self.assertEqual(v, [("k", v0, True, False)], point)
            else:
                self.assertEqual([x[1:] for x in v[1:]], [(v0, False, False)], point)
                self.assertEqual(self.body(b, "k", VersionId=v0), b"old")
                self.assertEqual(self.native_names(b), ["k"])

    def wait_job(self, jid, timeout=120):
        def done():
            st = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid}, timeout=30)
            return st.status_code == 200 and st.json()["end_time"] != 0 and st.json()
        st = wait_until(done, timeout, interval=0.1, what="job %s" % jid)
        self.assertFalse(st.get("err"), st)
        return st

    def test_native_deletes_write_markers(self):
        """a native DELETE and a delete-listrange job in a versioned bucket are S3's DeleteObject: a delete
        marker on top, the data kept as an older version (Suspended: a null marker in the null version's
        place); a native DELETE of what is not there is 404 and makes nothing"""
        b = self.vbucket("ver-ndel")
        obj = self.url + "/v1/objects/%s/" % b
        v1 = self.s3.put_object(Bucket=b, Key="k", Body=b"one")["VersionId"]
        r = self.s.delete(obj + "k", timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        dm = r.headers.get("Ais-Delete-Marker")
        self.assertTrue(dm and dm != "null", r.headers)
        self.assertEqual(self.versions(b), [("k", dm, True, True), ("k", v1, False, False)])
        self.assertEqual(self.body(b, "k", VersionId=v1), b"one")
        self.assertEqual(self.native_get(b, "k").status_code, 404)
        self.assertEqual(self.s.delete(obj + "nothing", timeout=30).status_code, 404)
        self.assertEqual(self.versions(b, "nothing"), [])
        # delete-listrange: every object gets its marker (on both targets), none of the data goes
        ids = {"j%02d" % i: self.s3.put_object(Bucket=b, Key="j%02d" % i, Body=b"j%d" % i)["VersionId"]
               for i in range(12)}
        r = self.s.delete(self.url + "/v1/buckets/" + b, timeout=60,
                          json={"action": "delete-listrange", "name": "", "value": {"objnames": sorted(ids)}})
        self.assertEqual(r.status_code, 200, r.text)
        self.wait_job(r.text.strip())
        v = self.versions(b, "j")
        self.assertEqual([(x[0], x[2], x[3]) for x in v],
                         [y for k in sorted(ids) for y in ((k, True, True), (k, False, False))])
        self.assertEqual([x[1] for x in v if not x[3]], [ids[k] for k in sorted(ids)])
        for i in range(12):
            self.assertEqual(self.body(b, "j%02d" % i, VersionId=ids["j%02d" % i]), b"j%d" % i)
        self.assertEqual(self.native_names(b), [])
        # Suspended: the null version is replaced by a null marker; versions with ids stay
        self.s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Suspended"})
        s1 = self.s3.put_object(Bucket=b, Key="s", Body=b"s-null").get("VersionId")
        self.assertEqual(s1, "null")
        r = self.s.delete(obj + "s", timeout=30)
        self.assertEqual((r.status_code, r.headers.get("Ais-Delete-Marker")), (200, "null"), r.text)
        self.assertEqual(self.versions(b, "s"), [("s", "null", True, True)])
        r = self.s.delete(obj + "k", timeout=30)  # (no current object: 404, the marker and v1 stay)
        self.assertEqual(r.status_code, 404, r.text)
        self.assertEqual(self.body(b, "k", VersionId=v1), b"one")

    def test_internal_writers_keep_versions(self):
        """copy-bck into a versioned bucket (objects on both targets: the local copy and the batches sent to
        the other) and an archive job's shard are new versions: what they replace is kept, with its id; the
        copy's versions get ids of their own, not the source's"""
        src = self.vbucket("ver-cp-src")
        dst = self.vbucket("ver-cp-dst")
        names = ["c%02d" % i for i in range(16)]
        src_ids = {n: self.s3.put_object(Bucket=src, Key=n, Body=b"new " + n.encode())["VersionId"] for n in names}
        old = {n: self.s3.put_object(Bucket=dst, Key=n, Body=b"old " + n.encode())["VersionId"] for n in names}
        r = self.s.post(self.url + "/v1/buckets/" + src, params={"bck_to": "ais/@#/%s/" % dst},
                        json={"action": "copy-bck", "value": {}}, timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        self.wait_job(r.text.strip())
        for n in names:
            v = self.versions(dst, n)
            self.assertEqual([(x[0], x[2], x[3]) for x in v], [(n, True, False), (n, False, False)], n)
            self.assertEqual(v[1][1], old[n], n)
            self.assertNotIn(v[0][1], ("null", src_ids[n], old[n]), n)
            self.assertEqual(self.body(dst, n), b"new " + n.encode())
            self.assertEqual(self.body(dst, n, VersionId=old[n]), b"old " + n.encode())
        # an archive job's output over an existing shard
        a0 = self.s3.put_object(Bucket=dst, Key="a.tar", Body=b"not a tar yet")["VersionId"]
        r = self.s.put(self.url + "/v1/buckets/" + src, timeout=60, json={"action": "archive", "value": {
            "archname": "a.tar", "objnames": names[:3], "tobck": {"name": dst, "provider": "ais"}}})
        self.assertEqual(r.status_code, 200, r.text)
        self.wait_job(r.text.strip())
        v = self.versions(dst, "a.tar")
        self.assertEqual([(x[1] == a0, x[2]) for x in v], [(False, True), (True, False)], v)
        self.assertEqual(self.body(dst, "a.tar", VersionId=a0), b"not a tar yet")
        self.assertNotEqual(self.body(dst, "a.tar"), b"not a tar yet")
        # an S3 POST (browser form) upload over an existing version
        p0 = self.s3.put_object(Bucket=dst, Key="form", Body=b"before the form")["VersionId"]
        v4 = boto3.session.Session(aws_access_key_id=AK, aws_secret_access_key=SK, region_name="us-east-1").client(
            "s3", endpoint_url=self.ep, config=Config(s3={"addressing_style": "path"}, signature_version="s3v4"))
        p = v4.generate_presigned_post(dst, "form", ExpiresIn=600)
        r = requests.post(p["url"], data=p["fields"], files={"file": ("f", b"from the form")}, timeout=60)
        self.assertEqual(r.status_code, 204, r.text)
        v = self.versions(dst, "form")
        self.assertEqual([(x[1] == p0, x[2]) for x in v], [(False, True), (True, False)], v)
        self.assertEqual(self.body(dst, "form"), b"from the form")
        self.assertEqual(self.body(dst, "form", VersionId=p0), b"before the form")

    def test_copy_current_version_from_another_target(self):
        """CopyObject's source ?versionId= naming the current version (its id, or null) when the source is on
        another target than the copy's destination: copied; an id that is neither current nor archived is
        404 NoSuchVersion"""
        from test_cluster import hrw_owner
        b = self.vbucket("ver-cpcur", status=None)
        smap = self.c.smap()
        pairs = [("s%d" % i, "d%d" % i) for i in range(40)]
        pairs = [(s, d) for s, d in pairs
                 if hrw_owner(smap, b, s)["daemon_id"] != hrw_owner(smap, b, d)["daemon_id"]][:4]
        self.assertEqual(len(pairs), 4)
        s0, d0 = pairs[0]
        self.s3.put_object(Bucket=b, Key=s0, Body=b"null one")  # (before versioning: the null version)
        self.s3.put_bucket_versioning(Bucket=b, VersioningConfiguration={"Status": "Enabled"})
        r = self.s3.copy_object(Bucket=b, Key=d0, CopySource={"Bucket": b, "Key": s0, "VersionId": "null"})
        self.assertEqual(r["CopySourceVersionId"], "null")
        self.assertEqual(self.body(b, d0), b"null one")
        for s, d in pairs[1:]:
            old = self.s3.put_object(Bucket=b, Key=s, Body=b"old " + s.encode())["VersionId"]
            cur = self.s3.put_object(Bucket=b, Key=s, Body=b"cur " + s.encode())["VersionId"]
            for vid, want in ((cur, b"cur "), (old, b"old ")):
                r = self.s3.copy_object(Bucket=b, Key=d, CopySource={"Bucket": b, "Key": s, "VersionId": vid})
                self.assertEqual(r["CopySourceVersionId"], vid)
                self.assertEqual(self.body(b, d), want + s.encode())
            self.client_err(lambda: self.s3.copy_object(Bucket=b, Key=d, CopySource={
                "Bucket": b, "Key": s, "VersionId": "0123456789abcdef0123"}), 404, "NoSuchVersion")
            self.assertEqual(self.body(b, d), b"old " + s.encode())  # (nothing written)

    def test_versions_survive_rebalance_and_restart(self):
        """a target in maintenance gives its objects to the other, every version with them; then every node
        restarts: the versions, the markers and the current objects are as they were"""
        b = self.vbucket("ver-reb")
        ids = {}
        for i in range(12):
            k = "o%d" % i
            ids[k] = [self.s3.put_object(Bucket=b, Key=k, Body=b"%s-%d" % (k.encode(), j))["VersionId"]
                      for j in range(2)]
            if i % 4 == 0:
                self.s3.delete_object(Bucket=b, Key=k)
        before = self.versions(b)
        self.assertEqual(len(before), 12 * 2 + 3)
        tid = sorted(self.c.smap()["tmap"])[0]
        r = self.s.put(self.url + "/v1/cluster", json={"action": "start-maintenance", "value": {"sid": tid}})
        self.assertEqual(r.status_code, 200, r.text)
        jid = r.text.strip()

        def done():
            st = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid})
            return st.status_code == 200 and st.json()["end_time"] != 0 and st.json()

        def check():
            self.assertEqual(self.versions(b), before)
            for k, (v0, v1) in ids.items():
                self.assertEqual(self.body(b, k, VersionId=v0), k.encode() + b"-0")
                if int(k[1:]) % 4:
                    self.assertEqual(self.body(b, k), k.encode() + b"-1")
                else:
                    self.client_err(lambda: self.s3.get_object(Bucket=b, Key=k), 404, "NoSuchKey")
        try:
            st = wait_until(done, 120, interval=0.2, what="rebalance %s" % jid)
            self.assertFalse(st.get("err"), st)
            check()
        finally:
            r = self.s.put(self.url + "/v1/cluster", json={"action": "stop-maintenance", "value": {"sid": tid}})
            self.assertEqual(r.status_code, 200, r.text)
            jid = r.text.strip()
            wait_until(done, 120, interval=0.2, what="rebalance %s" % jid)
        check()
        self.c.stop()
        self.c.start()  # (the same directory: every node restarts)
        wait_until(lambda: len(self.c.smap()["tmap"]) == 2, 60, what="2 targets after the restart")
        wait_until(lambda: self.s.get(self.ep + "/" + b, timeout=10).status_code == 200, 60, what="S3 back")
        check()
        self.assertEqual(self.s3.get_bucket_versioning(Bucket=b)["Status"], "Enabled")


if __name__ == "__main__":
    main()
