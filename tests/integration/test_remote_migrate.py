# SPDX-License-Identifier: MIT
"""An AIStore user's remote-bucket requests, as AIStore's clients send them (Python SDK bodies, `ais` CLI
spellings), against a local cluster whose s3:// (provider aws) buckets live on a remote S3 store: a second
Shale cluster's /s3 endpoint with SigV4 verification on. Summary of an aws:// bucket (SDK bucket.summary() and
bucket.info()), template copies/prefetches that skip names the remote lacks, evict-remote-bck with keep_bck_md,
copy with latest-ver and synchronize."""
import os
import shutil
import tempfile
import time
import unittest

import boto3
import requests
from botocore.config import Config

from harness import Cluster, main, wait_until

AK, SK = "migrate-node", "remote-secret-value-2"


class RemoteMigrateTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shale-remmig-")
        cls.remote = Cluster(cls.tmp, proxies=1, targets=1, name="remote").start()
        cls.remote.cli("s3", "key", "add", AK, "--secret", SK)
        cls.remote.cli("s3", "verify", "on")
        cls.ep = cls.remote.url + "/s3"
        cls.rs3 = boto3.client("s3", endpoint_url=cls.ep, aws_access_key_id=AK, aws_secret_access_key=SK,
                               region_name="us-east-1", config=Config(s3={"addressing_style": "path"},
                                                                      retries={"max_attempts": 1}))
        creds = os.path.join(cls.tmp, "credentials")
        with open(creds, "w") as f:
            f.write("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % (AK, SK))
        env = {"AWS_SHARED_CREDENTIALS_FILE": creds, "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
               "AWS_PROFILE": "", "S3_ENDPOINT": cls.ep}
        cls.c = Cluster(cls.tmp, proxies=1, targets=2, name="local", env=env).start()
        wait_until(lambda: len(cls.c.smap()["tmap"]) == 2, 30, what="2 targets")
        cls.url = cls.c.url
        cls.s = requests.Session()

    @classmethod
    def tearDownClass(cls):
        try:
            cls.c.stop()
        finally:  # (a sanitizer report raises from the first: the remote stops all the same)
            cls.remote.stop()
        if not os.environ.get("SHALE_KEEP_TMP"):
            shutil.rmtree(cls.tmp, ignore_errors=True)

    # ---- helpers ----

    def remote_bucket(self, name, objs):
        self.rs3.create_bucket(Bucket=name)
        for k, v in objs.items():
            self.rs3.put_object(Bucket=name, Key=k, Body=v)

    def get(self, bucket, key, provider="aws"):
        return self.s.get("%s/v1/objects/%s/%s" % (self.url, bucket, key), params={"provider": provider},
                          timeout=60)

    def cached(self, bucket, key):
        r = self.s.head("%s/v1/objects/%s/%s" % (self.url, bucket, key), params={"provider": "aws"}, timeout=60,
                        allow_redirects=True)
        return r.headers.get("Ais-Present") == "true"

    def job_done(self, jid, timeout=60):
        def done():
            st = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid})
            return st.status_code == 200 and st.json()["end_time"] != 0 and st.json()
        return wait_until(done, timeout, interval=0.2, what="job %s" % jid)

    def names(self, bucket):
        r = self.s.get(self.url + "/v1/buckets/" + bucket, params={"provider": "ais"}, timeout=60,
                       json={"action": "list", "value": {"props": "name,size"}})
        self.assertEqual(r.status_code, 200, r.text)
        return sorted(e["name"] for e in r.json()["entries"] or [])

    def sdk_summary(self, bucket, cached=True, present=True):
        """Python SDK Bucket.summary(): GET summary-bck with BsummCtrlMsg, 202 + id, then poll until 200"""
        msg = {"uuid": "", "prefix": "", "cached": cached, "present": present}
        r = self.s.get(self.url + "/v1/buckets/" + bucket, params={"provider": "aws"}, timeout=60,
                       json={"action": "summary-bck", "value": msg})
        self.assertEqual(r.status_code, 202, r.text)
        msg["uuid"] = r.text.strip('"')
        for _ in range(100):
            r = self.s.get(self.url + "/v1/buckets/" + bucket, params={"provider": "aws"}, timeout=60,
                           json={"action": "summary-bck", "value": msg})
            if r.status_code == 200:
                return r.json()[0]
            self.assertIn(r.status_code, (202, 206), r.text)
            time.sleep(0.2)
        self.fail("summary of %s did not finish" % bucket)

    # ---- 1. summary ----

    def test_summary_of_aws_bucket(self):
        """bucket.summary() and bucket.info() of an s3:// bucket: what is cached here (cached=true), and with
        cached=false (bsumm_remote=true) also what the remote holds; not a 404 for ais://NAME."""
        objs = {"s/%d" % i: b"x" * (100 * (i + 1)) for i in range(5)}
        self.remote_bucket("summ", objs)
        for k in ("s/0", "s/3"):
            self.assertEqual(self.get("summ", k).content, objs[k])
            wait_until(lambda: self.cached("summ", k), 10, what="%s kept" % k)
        res = self.sdk_summary("summ", cached=True)
        self.assertEqual((res["name"], res["provider"]), ("summ", "aws"))
        self.assertEqual(res["ObjCount"]["obj_count_present"], "2")
        self.assertEqual(res["TotalSize"]["size_all_present_objs"], str(100 + 400))
        self.assertEqual(res["ObjSize"]["obj_max_size"], 400)
        self.assertTrue(res["is_present"])
        res = self.sdk_summary("summ", cached=False)
        self.assertEqual(res["ObjCount"]["obj_count_present"], "2")
        self.assertEqual(res["ObjCount"]["obj_count_remote"], "5")
        self.assertEqual(res["TotalSize"]["size_all_remote_objs"], str(sum(len(v) for v in objs.values())))
        # Bucket.info(): HEAD ?bsumm_remote=True, 202 + id, poll with uuid
        r = self.s.head(self.url + "/v1/buckets/summ", timeout=60,
                        params={"provider": "aws", "presence": 0, "bsumm_remote": "True"})
        self.assertEqual(r.status_code, 202, r.headers)
        xid = r.headers["Ais-Xaction-Id"]
        summ = wait_until(lambda: (lambda h: h.status_code == 200 and h.headers["Ais-Bucket-Summ"])(
            self.s.head(self.url + "/v1/buckets/summ", timeout=60,
                        params={"provider": "aws", "presence": 0, "bsumm_remote": "True", "uuid": xid})),
            30, interval=0.2, what="info")
        import json
        summ = json.loads(summ)
        self.assertEqual(summ["ObjCount"]["obj_count_remote"], "5")
        self.assertEqual(summ["ObjCount"]["obj_count_present"], "2")
        # a bucket the remote does not have: 404 naming it, as s3://
        r = self.s.get(self.url + "/v1/buckets/nosuchsumm", params={"provider": "aws"}, timeout=60,
                       json={"action": "summary-bck", "value": {"uuid": "", "prefix": "", "cached": True}})
        self.assertEqual(r.status_code, 404, r.text)
        self.assertIn("s3://nosuchsumm", r.text)

    # ---- 2. templates skip missing names ----

    def test_template_skips_missing(self):
        """copy-listrange / prefetch-listrange with a template: a name in the range the remote does not have is
        skipped (counted), as AIStore does; a list (objnames) of a missing name still fails unless coer."""
        objs = {"t/%d" % i: b"tmpl %d" % i for i in range(6) if i not in (2, 4)}
        self.remote_bucket("tmsrc", objs)
        r = self.s.post(self.url + "/v1/buckets/tmsrc", params={"provider": "aws"}, timeout=60,
                        json={"action": "copy-listrange",
                              "value": {"template": "t/{0..5}", "tobck": {"name": "tmdst", "provider": "ais"},
                                        "prefix": "", "prepend": "", "dry_run": False, "force": False,
                                        "latest-ver": False, "synchronize": False}})
        self.assertEqual(r.status_code, 200, r.text)
        for jid in r.text.split(","):
            st = self.job_done(jid, 120)
            self.assertEqual(st["err"], "", st)
        self.assertEqual(self.names("tmdst"), sorted(objs))
        for k, v in objs.items():
            self.assertEqual(self.get("tmdst", k, provider="ais").content, v)
        r = self.s.delete(self.url + "/v1/buckets/tmsrc", params={"provider": "aws"}, timeout=60,
                          json={"action": "evict-listrange", "value": {"template": "t/{0..5}"}})
        self.assertEqual(r.status_code, 200, r.text)
        self.job_done(r.text)
        r = self.s.post(self.url + "/v1/buckets/tmsrc", params={"provider": "aws"}, timeout=60,
                        json={"action": "prefetch-listrange", "value": {"template": "t/{0..5}"}})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.job_done(r.text)["err"], "")
        self.assertTrue(all(self.cached("tmsrc", k) for k in objs))
        # a named list still reports the missing one
        r = self.s.post(self.url + "/v1/buckets/tmsrc", params={"provider": "aws"}, timeout=60,
                        json={"action": "prefetch-listrange", "value": {"objnames": ["t/2"]}})
        self.assertIn("did not exist", self.job_done(r.text)["err"])
        # an offline transform of a template
        r = self.s.put(self.url + "/v1/etl", json={"name": "up-tmpl", "runtime": "lua",
                                                   "code": "function transform(data, ctx) return data:upper() end\n"},
                       timeout=120)
        self.assertEqual(r.status_code, 200, r.text)
        r = self.s.post(self.url + "/v1/buckets/tmsrc", params={"provider": "aws"}, timeout=60,
                        json={"action": "etl-listrange",
                              "value": {"template": "t/{0..5}", "tobck": {"name": "tmetl", "provider": "ais"},
                                        "id": "up-tmpl"}})
        self.assertEqual(r.status_code, 200, r.text)
        for jid in r.text.split(","):
            self.assertEqual(self.job_done(jid, 120)["err"], "")
        self.assertEqual(self.get("tmetl", "t/5", provider="ais").content, b"TMPL 5")
        self.assertEqual(self.names("tmetl"), sorted(objs))
        self.s.delete(self.url + "/v1/etl/up-tmpl", timeout=60)

    # ---- 3. evict keep_bck_md ----

    def test_evict_keep_md(self):
        """evict-remote-bck with keep_bck_md=true (ais bucket evict --keep-md): the cached objects go, the bucket
        and its props stay; the remote keeps its objects."""
        objs = {"k/%d" % i: b"keep %d" % i for i in range(4)}
        self.remote_bucket("keepmd", objs)
        for k in objs:
            self.assertEqual(self.get("keepmd", k).content, objs[k])
            wait_until(lambda: self.cached("keepmd", k), 10, what="%s kept" % k)
        r = self.s.patch(self.url + "/v1/buckets/keepmd", params={"provider": "aws"}, timeout=60,
                         json={"action": "set-bprops", "value": {"lru": {"enabled": False}}})
        self.assertEqual(r.status_code, 200, r.text)
        r = self.s.delete(self.url + "/v1/buckets/keepmd", params={"provider": "aws", "keep_bck_md": "True"},
                          json={"action": "evict-remote-bck"}, timeout=60)
        self.assertEqual(r.status_code, 200, r.text)
        if r.text:
            st = self.job_done(r.text)
            self.assertEqual(st["err"], "", st)
        wait_until(lambda: not any(self.cached("keepmd", k) for k in objs), 30, what="copies gone")
        bl = self.s.get(self.url + "/v1/buckets", params={"provider": "aws"}, timeout=30).json()
        self.assertIn("keepmd", [b["name"] for b in bl])
        import json
        p = json.loads(self.s.head(self.url + "/v1/buckets/keepmd", params={"provider": "aws"},
                                   timeout=30).headers["Ais-Bucket-Props"])
        self.assertFalse(p["lru"]["enabled"])
        self.assertEqual(len(self.rs3.list_objects_v2(Bucket="keepmd")["Contents"]), 4)
        self.assertEqual(self.get("keepmd", "k/2").content, objs["k/2"])
        # a bad value is refused
        r = self.s.delete(self.url + "/v1/buckets/keepmd", params={"provider": "aws", "keep_bck_md": "maybe"},
                          json={"action": "evict-remote-bck"}, timeout=60)
        self.assertEqual(r.status_code, 400, r.text)
        self.assertTrue(self.cached("keepmd", "k/2"))

    # ---- 4. copy latest / sync ----

    def copy_bck(self, src, dst, **flags):
        msg = {"prefix": "", "prepend": "", "dry_run": False, "force": False, "latest-ver": False,
               "synchronize": False}
        msg.update(flags)
        r = self.s.post(self.url + "/v1/buckets/" + src, timeout=60,
                        params={"provider": "aws", "bck_to": "ais/@#/%s/" % dst},
                        json={"action": "copy-bck", "value": msg})
        self.assertEqual(r.status_code, 200, r.text)
        for jid in r.text.split(","):
            st = self.job_done(jid, 120)
            self.assertEqual(st["err"], "", st)

    def test_copy_latest_and_sync(self):
        """copy-bck from a remote with latest-ver fetches a cached object the remote changed again; without it
        the cached bytes are copied; synchronize also deletes destination objects gone at the remote."""
        objs = {"l/%d" % i: b"first %d" % i for i in range(4)}
        self.remote_bucket("lsrc", objs)
        self.copy_bck("lsrc", "ldst")
        self.assertEqual(self.names("ldst"), sorted(objs))
        self.rs3.put_object(Bucket="lsrc", Key="l/1", Body=b"changed at the remote")
        self.copy_bck("lsrc", "ldst")
        self.assertEqual(self.get("ldst", "l/1", provider="ais").content, b"first 1")
        self.copy_bck("lsrc", "ldst", **{"latest-ver": True})
        self.assertEqual(self.get("ldst", "l/1", provider="ais").content, b"changed at the remote")
        self.assertEqual(self.get("lsrc", "l/1").content, b"changed at the remote")
        # gone at the remote: latest-ver alone keeps the destination's copy; synchronize deletes it
        self.rs3.delete_object(Bucket="lsrc", Key="l/2")
        self.copy_bck("lsrc", "ldst", **{"latest-ver": True})
        self.assertIn("l/2", self.names("ldst"))
        self.copy_bck("lsrc", "ldst", synchronize=True)
        self.assertEqual(self.names("ldst"), ["l/0", "l/1", "l/3"])
        self.assertFalse(self.cached("lsrc", "l/2"))
        # copy-listrange with synchronize over a template
        self.rs3.delete_object(Bucket="lsrc", Key="l/3")
        r = self.s.post(self.url + "/v1/buckets/lsrc", params={"provider": "aws"}, timeout=60,
                        json={"action": "copy-listrange",
                              "value": {"template": "l/{0..3}", "tobck": {"name": "ldst", "provider": "ais"},
                                        "synchronize": True}})
        self.assertEqual(r.status_code, 200, r.text)
        for jid in r.text.split(","):
            self.assertEqual(self.job_done(jid, 120)["err"], "")
        self.assertEqual(self.names("ldst"), ["l/0", "l/1"])
        # synchronize with prepend: refused, nothing copied
        r = self.s.post(self.url + "/v1/buckets/lsrc", timeout=60,
                        params={"provider": "aws", "bck_to": "ais/@#/lnone/"},
                        json={"action": "copy-bck", "value": {"synchronize": True, "prepend": "p/"}})
        self.assertEqual(r.status_code, 400, r.text)


    # ---- blob download ----

    def remote_gets(self):
        """GETs the remote's target has served (each range is one)"""
        tr = self.s.get(self.remote.node_url("t0") + "/v1/daemon", params={"what": "node_status"},
                        timeout=10).json()["tracker"]
        return int(tr.get("get.n", {"v": "0"})["v"])

    def xstats(self, jid):
        r = self.s.get(self.url + "/v1/cluster", params={"what": "qryxstats"}, json={"ID": jid})
        self.assertEqual(r.status_code, 200, r.text)
        return [sn for arr in r.json().values() for sn in arr]

    def test_blob_download(self):
        """SDK Object.blob_download(): POST /v1/objects/B {"action": "blob-download", "name": O, "value": BlobMsg}
        (and the object in the path): a job on the owner fetches it in ranges of chunk-size, num-workers at a
        time; latest-ver fetches a changed one again; bad requests are 400 and start nothing (the build before
        answered 501)"""
        big = os.urandom(1 << 20)
        self.remote_bucket("blob", {"big": big, "big2": big[::-1], "small": b"s" * 1000})
        g0 = self.remote_gets()
        r = self.s.post(self.url + "/v1/objects/blob", params={"provider": "aws"}, json={
            "action": "blob-download", "name": "big", "value": {"latest-ver": False, "chunk-size": 262144,
                                                                "num-workers": 3}})
        self.assertEqual(r.status_code, 200, r.text)
        st = self.job_done(r.text)
        self.assertEqual((st["kind"], st["err"]), ("blob-download", ""))
        sn = [x for x in self.xstats(r.text) if int(x["stats"]["in-objs"])]
        self.assertEqual([(int(x["stats"]["in-objs"]), int(x["stats"]["in-bytes"])) for x in sn], [(1, len(big))])
        self.assertEqual(self.remote_gets() - g0, 4, "4 ranges of 256 KiB")
        self.assertTrue(self.cached("blob", "big"))
        self.assertEqual(self.get("blob", "big").content, big)
        # the object in the path; the defaults (backend.blob_chunk 8 MiB: one range)
        r = self.s.post(self.url + "/v1/objects/blob/big2", params={"provider": "aws"}, json={
            "action": "blob-download", "value": {"latest-ver": False}})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.job_done(r.text)["err"], "")
        self.assertTrue(self.cached("blob", "big2"))
        # held already: left; with latest-ver, a copy changed at the remote is fetched again
        self.rs3.put_object(Bucket="blob", Key="big", Body=b"changed")
        r = self.s.post(self.url + "/v1/objects/blob", params={"provider": "aws"}, json={
            "action": "blob-download", "name": "big", "value": {"latest-ver": False}})
        self.assertEqual(self.job_done(r.text)["err"], "")
        self.assertEqual(self.get("blob", "big").content, big)
        r = self.s.post(self.url + "/v1/objects/blob", params={"provider": "aws"}, json={
            "action": "blob-download", "name": "big", "value": {"latest-ver": True}})
        self.assertEqual(self.job_done(r.text)["err"], "")
        self.assertEqual(self.get("blob", "big").content, b"changed")
        # gone at the remote: the job fails naming it
        r = self.s.post(self.url + "/v1/objects/blob", params={"provider": "aws"}, json={
            "action": "blob-download", "name": "nosuch", "value": {"latest-ver": False}})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertIn("nosuch", self.job_done(r.text)["err"])
        # refused: an ais:// bucket, bad values, an unknown field, no name
        self.s.post(self.url + "/v1/buckets/plain", json={"action": "create-bck"})
        for params, body in (({}, {"action": "blob-download", "name": "x", "value": {"latest-ver": False}}),
                             ({"provider": "aws"}, {"action": "blob-download", "name": "small",
                                                    "value": {"chunk-size": 100}}),
                             ({"provider": "aws"}, {"action": "blob-download", "name": "small",
                                                    "value": {"num-workers": 1000}}),
                             ({"provider": "aws"}, {"action": "blob-download", "name": "small",
                                                    "value": {"chunksize": 1}}),
                             ({"provider": "aws"}, {"action": "blob-download", "value": {}})):
            b = "plain" if not params else "blob"
            r = self.s.post(self.url + "/v1/objects/" + b, params=params, json=body)
            self.assertEqual(r.status_code, 400, (body, r.text))
        self.assertFalse(self.cached("blob", "small"))

    def test_get_with_blob_headers(self):
        """a cold GET with Ais-Blob-Download: true, Ais-Blob-Chunk, Ais-Blob-Workers fetches in those ranges"""
        data = os.urandom(600000)
        self.remote_bucket("blobget", {"o": data})
        g0 = self.remote_gets()
        r = self.s.get(self.url + "/v1/objects/blobget/o", params={"provider": "aws"}, timeout=60, headers={
            "Ais-Blob-Download": "true", "Ais-Blob-Chunk": "128KiB", "Ais-Blob-Workers": "2"})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.content, data)
        self.assertEqual(self.remote_gets() - g0, 5, "5 ranges of 128 KiB")
        r = self.s.get(self.url + "/v1/objects/blobget/o2", params={"provider": "aws"}, timeout=60, headers={
            "Ais-Blob-Download": "true", "Ais-Blob-Chunk": "1KiB"})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("Ais-Blob-Chunk", r.text)

    def test_prefetch_blob_threshold(self):
        """prefetch with blob-threshold: objects at or above it come as blob downloads (ranges of
        blob-chunk-size), smaller ones in one GET each (the build before refused the field)"""
        self.remote_bucket("pfb", {"big": os.urandom(700000), "small1": b"1" * 5000, "small2": b"2" * 5000})
        g0 = self.remote_gets()
        r = self.s.post(self.url + "/v1/buckets/pfb", params={"provider": "aws"}, json={
            "action": "prefetch-listrange", "value": {"objnames": ["big", "small1", "small2"], "coer": False,
                                                      "latest-ver": False, "blob-threshold": 500000,
                                                      "blob-chunk-size": 262144, "blob-num-workers": 2}})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.job_done(r.text)["err"], "")
        self.assertEqual(sum(int(x.get("ext", {}).get("blob_downloads", 0)) for x in self.xstats(r.text)), 1)
        # 3 ranges of big, 2 small ones, and a HEAD each (not a GET)
        self.assertEqual(self.remote_gets() - g0, 5)
        for n in ("big", "small1", "small2"):
            self.assertTrue(self.cached("pfb", n), n)
        r = self.s.post(self.url + "/v1/buckets/pfb", params={"provider": "aws"}, json={
            "action": "evict-listrange", "value": {"objnames": ["big"], "blob-threshold": 1}})
        self.assertEqual(r.status_code, 400, r.text)

    # ---- native bucket inventory ----

    def nbi_list(self, bucket, inv="", pagesize=7, extra_flags=0):
        """`ais ls s3://B --inventory [--inv-name INV]`: flag 32768, paged; (names, sizes, cached) or a response"""
        out, tok, uuid = [], "", ""
        for _ in range(100):
            r = self.s.get(self.url + "/v1/buckets/" + bucket, params={"provider": "aws"}, timeout=60,
                           headers={"Ais-Inv-Name": inv} if inv else {},
                           json={"action": "list", "value": {"props": "name,size", "flags": str(32768 | extra_flags),
                                                             "pagesize": pagesize, "continuation_token": tok,
                                                             "uuid": uuid}})
            if r.status_code != 200:
                return r
            j = r.json()
            out += [(e["name"], int(e["size"]), bool(e.get("flags", 0) & 64)) for e in j["entries"] or []]
            tok, uuid = j["continuation_token"], j["uuid"]
            if not tok:
                return out
        raise AssertionError("listing did not end")

    def test_inventory(self):
        """create-inventory / show-inventory / destroy-inventory and `ls --inventory` (flag 32768,
        Ais-Inv-Name) as AIStore's Go API and CLI send them: the listing is the snapshot, never the remote's
        current names, paged and merged from both targets, with cached from the cluster (the build before had
        none of it)"""
        objs = {"d/%02d" % i: os.urandom(100 + i) for i in range(30)}
        objs.update({"e/%d" % i: b"e" * i for i in range(1, 6)})
        self.remote_bucket("invb", objs)
        r = self.s.post(self.url + "/v1/buckets/invb", params={"provider": "aws"}, json={
            "action": "create-inventory", "value": {"name": "snap1", "prefix": "d/"}})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertTrue(r.text.startswith("inv-"), r.text)
        st = self.job_done(r.text)
        self.assertEqual((st["kind"], st["err"]), ("create-inventory", ""))
        per = [int(x["stats"]["loc-objs"]) for x in self.xstats(r.text)]
        self.assertEqual((len(per), sum(per)), (2, 30))
        info = self.s.get(self.url + "/v1/buckets/invb", params={"provider": "aws"},
                          json={"action": "show-inventory", "name": ""}).json()
        self.assertEqual(list(info), ["snap1"])
        i = info["snap1"]
        self.assertEqual((i["name"], i["obj_name"], i["prefix"], i["ntotal"]), ("snap1", "aws/@#/invb/snap1", "d/", 30))
        self.assertTrue(0 < i["started"] <= i["finished"], i)
        want = [(n, len(v), False) for n, v in sorted(objs.items()) if n.startswith("d/")]
        self.assertEqual(self.nbi_list("invb", "snap1"), want)
        self.assertEqual(self.nbi_list("invb", pagesize=1000), want)
        # cached from the cluster now; a name added at the remote is not in the snapshot
        self.assertEqual(self.get("invb", "d/03").status_code, 200)
        self.rs3.put_object(Bucket="invb", Key="d/new", Body=b"later")
        got = self.nbi_list("invb", "snap1")
        self.assertEqual([n for n, _, c in got if c], ["d/03"])
        self.assertNotIn("d/new", [n for n, _, _ in got])
        # one a bucket: again without force is 409 and changes nothing; with force, the whole bucket now
        r = self.s.post(self.url + "/v1/buckets/invb", params={"provider": "aws"}, json={
            "action": "create-inventory", "value": {"name": "snap2"}})
        self.assertEqual(r.status_code, 409, r.text)
        self.assertEqual(len(self.nbi_list("invb", "snap1")), 30)
        r = self.s.post(self.url + "/v1/buckets/invb", params={"provider": "aws"}, json={
            "action": "create-inventory", "value": {"name": "snap2", "force": True}})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.job_done(r.text)["err"], "")
        self.assertEqual(len(self.nbi_list("invb", "snap2")), 36)
        r = self.nbi_list("invb", "snap1")
        self.assertEqual(r.status_code, 404, r.text)
        self.assertIn("no inventory", r.text)
        # refused: an ais:// bucket, bad flags, start_after, listing flags that make no sense from a snapshot
        self.s.post(self.url + "/v1/buckets/plain2", json={"action": "create-bck"})
        r = self.s.post(self.url + "/v1/buckets/plain2", json={"action": "create-inventory", "value": {}})
        self.assertEqual(r.status_code, 400, r.text)
        for v in ({"flags": "1"}, {"start_after": "d/05"}, {"props": "name,checksum"}, {"name": "bad name!"},
                  {"names_per_chunk": 100}):
            r = self.s.post(self.url + "/v1/buckets/invb", params={"provider": "aws"}, json={
                "action": "create-inventory", "value": dict(v, force=True)})
            self.assertEqual(r.status_code, 400, (v, r.text))
        r = self.nbi_list("invb", extra_flags=2048)
        self.assertEqual(r.status_code, 400, r.text)
        # destroy: gone everywhere; again is 404
        r = self.s.delete(self.url + "/v1/buckets/invb", params={"provider": "aws"},
                          json={"action": "destroy-inventory", "name": "snap2"})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.s.get(self.url + "/v1/buckets/invb", params={"provider": "aws"},
                                    json={"action": "show-inventory"}).json(), {})
        self.assertEqual(self.nbi_list("invb").status_code, 404)
        r = self.s.delete(self.url + "/v1/buckets/invb", params={"provider": "aws"},
                          json={"action": "destroy-inventory"})
        self.assertEqual(r.status_code, 404, r.text)

if __name__ == "__main__":
    main()
