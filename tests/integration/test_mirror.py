#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""N-way mirroring (spec ha-durability.md §2): copies of each object on
other mountpaths of its target, made by the put-copies job after a PUT and
by make-n-copies for existing objects; reads survive a lost or corrupt main
replica (served from a copy, which restores it); mirror props are validated
(ranges, mountpaths of every target)."""
import hashlib
import json
import os
import time

from harness import NodeTest, main, start_cluster, stop_cluster, wait_until

J = {"Content-Type": "application/json"}


def copy_fname(name):
    """On-disk name of a mirror copy: %ob/.x<sha256(name)>"""
    return ".x" + hashlib.sha256(name.encode()).hexdigest()


class MirrorBase:
    def mpaths(self, node):
        return sorted(node.config["fspaths"].keys())

    def replicas(self, node, bucket, name):
        """Mountpaths holding a file of the object (main or copy)."""
        out = []
        for mp in self.mpaths(node):
            ob = os.path.join(mp, "@ais", bucket, "%ob")
            if os.path.isfile(os.path.join(ob, name)) or os.path.isfile(os.path.join(ob, copy_fname(name))):
                out.append(mp)
        return out

    def files_of(self, node, bucket, name):
        out = []
        for mp in self.mpaths(node):
            ob = os.path.join(mp, "@ais", bucket, "%ob")
            for f in (os.path.join(ob, name), os.path.join(ob, copy_fname(name))):
                if os.path.isfile(f):
                    out.append(f)
        return out

    def main_file(self, node, bucket, name):
        for mp in self.mpaths(node):
            f = os.path.join(mp, "@ais", bucket, "%ob", name)
            if os.path.isfile(f):
                return f
        return None

    def bprops(self, url, bucket):
        r = self.s.head(url + "/v1/buckets/" + bucket, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        return json.loads(r.headers["Ais-Bucket-Props"])

    def setprops(self, url, bucket, props):
        return self.s.patch(url + "/v1/buckets/" + bucket, headers=J, timeout=60,
                            data=json.dumps({"action": "set-bprops", "value": props}))

    def head_copies(self, url, bucket, name):
        r = self.s.head(url + "/v1/objects/%s/%s" % (bucket, name), timeout=30, allow_redirects=True)
        self.assertEqual(r.status_code, 200, r.text)
        return int(r.headers["Ais-Mirror-Copies"]), r.headers["Ais-Mirror-Paths"]

    def wait_job(self, url, jid, timeout=60):
        out = {}

        def done():
            r = self.s.get(url + "/v1/cluster", params={"what": "status"}, json={"ID": jid}, timeout=30)
            out["st"] = r.json() if r.status_code == 200 else {}
            return out["st"].get("end_time", 0) != 0
        wait_until(done, timeout, what="job " + jid)
        self.assertFalse(out["st"].get("aborted"), out["st"])
        self.assertFalse(out["st"].get("err"), out["st"])
        return out["st"]

    def make_n(self, url, bucket, n):
        r = self.s.post(url + "/v1/buckets/" + bucket, headers=J, timeout=60,
                        data=json.dumps({"action": "make-n-copies", "value": n}))
        self.assertEqual(r.status_code, 200, r.text)
        self.assertTrue(r.text.strip(), "make-n-copies returns the job id")
        return r.text.strip()


class TestMirror(NodeTest, MirrorBase):
    mountpaths = 3

    def data(self, i):
        return os.urandom(100 + i * 3001) if i % 3 else (b"%d-" % i) * 50000

    def fill(self, bucket, n):
        objs = {}
        for i in range(n):
            name = "d%d/obj-%03d" % (i % 3, i)
            objs[name] = self.data(i)
            r = self.put(bucket, name, objs[name])
            self.assertEqual(r.status_code, 200, r.text)
        return objs

    def wait_replicas(self, bucket, objs, n, timeout=60):
        wait_until(lambda: all(len(self.replicas(self.node, bucket, k)) == n for k in objs), timeout,
                   what="%d replicas of every object" % n)
        # and the metadata says so (only once recorded does it count)
        wait_until(lambda: all(self.head_copies(self.url, bucket, k)[0] == n for k in objs), timeout,
                   what="HEAD: %d copies" % n)

    def test_put_makes_copies_and_get_survives(self):
        self.create_bucket("m2")
        r = self.setprops(self.url, "m2", {"mirror": {"enabled": True, "copies": 2}})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.bprops(self.url, "m2")["mirror"]["copies"], 2)
        objs = self.fill("m2", 30)
        self.wait_replicas("m2", objs, 2)
        # the copies were made by a put-copies job, visible like other jobs
        r = self.s.get(self.url + "/v1/cluster", params={"what": "qryxstats"}, json={"Kind": "put-copies"},
                       timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        snaps = [s for v in r.json().values() for s in (v or [])]
        self.assertTrue(any(s["kind"] == "put-copies" and s["bck"]["name"] == "m2" for s in snaps), r.text)
        self.assertGreaterEqual(sum(int(s["stats"]["loc-objs"]) for s in snaps), len(objs))
        for k, v in objs.items():
            reps = self.replicas(self.node, "m2", k)
            self.assertEqual(len(set(reps)), 2, (k, reps))
            n, paths = self.head_copies(self.url, "m2", k)
            self.assertEqual(n, 2)
            self.assertEqual(sorted(paths.strip("[]").split()), sorted(reps))
            for f in self.files_of(self.node, "m2", k):
                with open(f, "rb") as fh:
                    self.assertEqual(fh.read(), v, f)
            r = self.s.head(self.url + "/v1/objects/m2/" + k, params={"props": "copies"}, timeout=30)
            self.assertEqual(r.headers["Ais-Mirror-Copies"], "2")
            self.assertEqual(len(r.headers["Ais-Mirror-Paths"].split(",")), 2)

        # lose one disk's main replicas: every GET still returns the bytes, and restores the main
        victim = self.mpaths(self.node)[0]
        lost = [k for k in objs if os.path.isfile(os.path.join(victim, "@ais", "m2", "%ob", k))]
        self.assertTrue(lost, "some objects live on " + victim)
        for k in lost:
            os.unlink(os.path.join(victim, "@ais", "m2", "%ob", k))
        for k, v in objs.items():
            r = self.get("m2", k)
            self.assertEqual(r.status_code, 200, (k, r.text[:300]))
            self.assertEqual(r.content, v, k)
        for k in lost:
            self.assertTrue(os.path.isfile(os.path.join(victim, "@ais", "m2", "%ob", k)), "main restored: " + k)
        self.wait_replicas("m2", objs, 2)

        # a corrupt copy: a checked GET still returns the right bytes
        k = sorted(objs)[1]
        main_f = self.main_file(self.node, "m2", k)
        copy_f = [f for f in self.files_of(self.node, "m2", k) if f != main_f][0]
        with open(copy_f, "r+b") as fh:
            fh.write(b"XXXX")
        r = self.get("m2", k, params={"provider": "ais", "validate-checksum": "true"})
        self.assertEqual(r.status_code, 200, r.text[:300])
        self.assertEqual(r.content, objs[k])
        # a corrupt main: the checked GET serves a copy's bytes (never the corrupt ones) and repairs the main
        k2 = sorted(objs)[2]
        main2 = self.main_file(self.node, "m2", k2)
        with open(main2, "r+b") as fh:
            fh.seek(10)
            fh.write(b"garbage!")
        r = self.get("m2", k2, params={"provider": "ais", "validate-checksum": "true"})
        self.assertEqual(r.status_code, 200, r.text[:300])
        self.assertEqual(r.content, objs[k2])
        with open(main2, "rb") as fh:
            self.assertEqual(fh.read(), objs[k2], "main repaired from the copy")

        # overwrite: the old copies go, the new object gets its own
        k3 = sorted(objs)[3]
        new = b"new content " * 1000
        self.assertEqual(self.put("m2", k3, new).status_code, 200)
        wait_until(lambda: len(self.files_of(self.node, "m2", k3)) == 2 and
                   self.head_copies(self.url, "m2", k3)[0] == 2, 30, what="copies of the new version")
        for f in self.files_of(self.node, "m2", k3):
            with open(f, "rb") as fh:
                self.assertEqual(fh.read(), new, f)
        # DELETE removes every copy
        r = self.s.delete(self.url + "/v1/objects/m2/" + k3, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.files_of(self.node, "m2", k3), [])
        self.assertEqual(self.get("m2", k3).status_code, 404)

    def test_archive_read_of_damaged_main(self):
        """a member read (?archpath=) of a shard whose main replica is gone: the main is restored from the
        copy, then the member is read (that the repair runs off the HTTP thread is not observable here)"""
        import io
        import tarfile
        self.create_bucket("ma")
        self.assertEqual(self.setprops(self.url, "ma", {"mirror": {"enabled": True, "copies": 2}}).status_code, 200)
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tf:
            for i in range(5):
                d = (b"member %d " % i) * 50
                ti = tarfile.TarInfo("m%d.txt" % i)
                ti.size = len(d)
                tf.addfile(ti, io.BytesIO(d))
        shard = buf.getvalue()
        self.assertEqual(self.put("ma", "s.tar", shard).status_code, 200)
        self.wait_replicas("ma", {"s.tar": shard}, 2)
        main_f = self.main_file(self.node, "ma", "s.tar")
        os.unlink(main_f)
        r = self.get("ma", "s.tar", params={"provider": "ais", "archpath": "m3.txt"})
        self.assertEqual(r.status_code, 200, r.text[:300])
        self.assertEqual(r.content, b"member 3 " * 50)
        self.assertTrue(os.path.isfile(main_f), "main restored")

    def test_make_n_copies(self):
        self.create_bucket("mn")
        objs = self.fill("mn", 12)
        for k in objs:
            self.assertEqual(len(self.replicas(self.node, "mn", k)), 1)
        jid = self.make_n(self.url, "mn", 3)
        self.wait_job(self.url, jid)
        p = self.bprops(self.url, "mn")["mirror"]
        self.assertEqual((p["enabled"], p["copies"]), (True, 3))
        for k, v in objs.items():
            self.assertEqual(len(self.replicas(self.node, "mn", k)), 3, k)
            self.assertEqual(self.head_copies(self.url, "mn", k)[0], 3)
        r = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid}, timeout=30)
        self.assertEqual(r.json()["kind"], "make-n-copies")
        ents = self.list_objects("mn", props="name,copies").json()["entries"]
        self.assertEqual({e["name"]: e["copies"] for e in ents}, {k: 3 for k in objs})
        # a copy lost by itself comes back with the next run
        k = sorted(objs)[0]
        main_f = self.main_file(self.node, "mn", k)
        gone = [f for f in self.files_of(self.node, "mn", k) if f != main_f][0]
        os.unlink(gone)
        self.wait_job(self.url, self.make_n(self.url, "mn", 3))
        self.assertEqual(len(self.replicas(self.node, "mn", k)), 3)
        # back to one: copies removed, mirroring off
        self.wait_job(self.url, self.make_n(self.url, "mn", 1))
        p = self.bprops(self.url, "mn")["mirror"]
        self.assertEqual((p["enabled"], p["copies"]), (False, 1))
        for k, v in objs.items():
            self.assertEqual(len(self.files_of(self.node, "mn", k)), 1, k)
            self.assertEqual(self.head_copies(self.url, "mn", k)[0], 1)
            self.assertEqual(self.get("mn", k).content, v)
        # set-bprops that changes the mirror starts make-n-copies too and returns its id
        r = self.setprops(self.url, "mn", {"mirror": {"enabled": True, "copies": 2}})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertTrue(r.text.strip(), "set-bprops of mirror returns the job id")
        self.wait_job(self.url, r.text.strip())
        for k in objs:
            self.assertEqual(len(self.replicas(self.node, "mn", k)), 2, k)
        # a change that leaves the mirror alone starts nothing
        r = self.setprops(self.url, "mn", {"lru": {"dont_evict_time": "3h"}})
        self.assertEqual((r.status_code, r.text), (200, ""))

    def test_invalid_props(self):
        self.create_bucket("inv")
        before = self.bprops(self.url, "inv")["mirror"]
        for props, text in (({"copies": -1}, "mirror.copies"), ({"copies": 33, "enabled": True}, "mirror.copies"),
                            ({"copies": 1, "enabled": True}, "mirror.copies"),
                            ({"burst_buffer": -5}, "mirror.burst_buffer"),
                            ({"burst_buffer": 10**6}, "mirror.burst_buffer"),
                            ({"enabled": "yes"}, "mirror.enabled"),
                            ({"copies": 4, "enabled": True}, "not enough mountpaths (3) to configure ais://inv as "
                                                             "4-way mirror")):
            r = self.setprops(self.url, "inv", {"mirror": props})
            self.assertEqual(r.status_code, 400, (props, r.text))
            self.assertIn(text, r.json()["message"], props)
            self.assertEqual(self.bprops(self.url, "inv")["mirror"], before, props)
        for n in (0, 33, -2, "x"):
            r = self.s.post(self.url + "/v1/buckets/inv", headers=J, timeout=30,
                            data=json.dumps({"action": "make-n-copies", "value": n}))
            self.assertEqual(r.status_code, 400, (n, r.text))
        r = self.s.post(self.url + "/v1/buckets/inv", headers=J, timeout=30,
                        data=json.dumps({"action": "make-n-copies", "value": 4}))
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("not enough mountpaths (3)", r.json()["message"])
        self.assertEqual(self.bprops(self.url, "inv")["mirror"], before)
        # create-bck with a mirror that does not fit
        r = self.act("POST", "/v1/buckets/inv2", "create-bck", {"mirror": {"enabled": True, "copies": 5}})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertEqual(self.s.head(self.url + "/v1/buckets/inv2", timeout=30).status_code, 404)
        # copies 0 means the default; burst_buffer takes effect (a tiny buffer still copies everything)
        r = self.setprops(self.url, "inv", {"mirror": {"enabled": True, "copies": 0, "burst_buffer": 1}})
        self.assertEqual(r.status_code, 200, r.text)
        p = self.bprops(self.url, "inv")["mirror"]
        self.assertEqual((p["copies"], p["burst_buffer"]), (2, 1))
        objs = {"b%02d" % i: os.urandom(20000) for i in range(64)}
        import concurrent.futures
        with concurrent.futures.ThreadPoolExecutor(8) as ex:  # a burst: more than one object waits at a time
            codes = list(ex.map(lambda kv: self.put("inv", kv[0], kv[1]).status_code, objs.items()))
        self.assertEqual(codes, [200] * len(objs))
        wait_until(lambda: all(len(self.replicas(self.node, "inv", k)) == 2 for k in objs), 60,
                   what="copies past the burst buffer")
        # (8 writers against one copier and a buffer of 1: the overflow path, a walk of the bucket, ran)
        self.assertIn("more than mirror.burst_buffer=1 objects of inv were waiting", self.node.log())

    def test_bad_copies_dropped(self):
        """Main gone, first copy corrupt: the next copy serves and restores; the bad one is dropped and made
        again. Main gone and the only copy corrupt: an error, never the corrupt bytes."""
        self.create_bucket("m3")
        self.assertEqual(self.setprops(self.url, "m3", {"mirror": {"enabled": True, "copies": 3}}).status_code, 200)
        v = os.urandom(300000)
        self.assertEqual(self.put("m3", "x", v).status_code, 200)
        wait_until(lambda: self.head_copies(self.url, "m3", "x")[0] == 3, 30, what="3 copies")
        paths = self.head_copies(self.url, "m3", "x")[1].strip("[]").split()
        main_f = os.path.join(paths[0], "@ais", "m3", "%ob", "x")
        first_copy = os.path.join(paths[1], "@ais", "m3", "%ob", copy_fname("x"))
        with open(first_copy, "r+b") as fh:
            fh.seek(1000)
            fh.write(b"corrupt")
        os.unlink(main_f)
        r = self.get("m3", "x")
        self.assertEqual(r.status_code, 200, r.text[:300])
        self.assertEqual(r.content, v)
        with open(main_f, "rb") as fh:
            self.assertEqual(fh.read(), v)
        # the same through the S3 front end (restored off the HTTP thread, then served)
        os.unlink(main_f)
        r = self.s.get(self.url + "/s3/m3/x", timeout=30)
        self.assertEqual((r.status_code, r.content), (200, v))
        self.assertTrue(os.path.isfile(main_f))
        # the corrupt copy was dropped, and put-copies makes a good one again
        wait_until(lambda: self.head_copies(self.url, "m3", "x")[0] == 3, 30, what="3 copies again")
        for f in self.files_of(self.node, "m3", "x"):
            with open(f, "rb") as fh:
                self.assertEqual(fh.read(), v, f)

        self.assertEqual(self.setprops(self.url, "m3", {"mirror": {"copies": 2}}).status_code, 200)
        self.assertEqual(self.put("m3", "y", v).status_code, 200)
        wait_until(lambda: self.head_copies(self.url, "m3", "y")[0] == 2, 30, what="2 copies")
        paths = self.head_copies(self.url, "m3", "y")[1].strip("[]").split()
        only = os.path.join(paths[1], "@ais", "m3", "%ob", copy_fname("y"))
        with open(only, "r+b") as fh:
            fh.write(b"corrupt")
        os.unlink(os.path.join(paths[0], "@ais", "m3", "%ob", "y"))
        r = self.get("m3", "y")
        self.assertEqual(r.status_code, 500, r.text[:300])
        self.assertIn("BAD DATA CHECKSUM", r.json()["message"])
        self.assertTrue(os.path.isfile(only), "nothing is deleted when no replica is intact")
        # with no file left at all the object is gone (404), as after an interrupted DELETE
        os.unlink(only)
        self.assertEqual(self.get("m3", "y").status_code, 404)
        self.assertEqual(self.s.head(self.url + "/v1/objects/m3/y", timeout=30).status_code, 404)

    def test_concurrent_overwrites(self):
        """Overwrites and deletes racing put-copies: in the end every object has exactly its replicas, all of
        them the last acknowledged bytes, and no file is left of a deleted one."""
        import concurrent.futures
        self.create_bucket("race")
        self.assertEqual(self.setprops(self.url, "race", {"mirror": {"enabled": True, "copies": 3}}).status_code,
                         200)
        last = {}

        def writer(w):
            for rnd in range(15):
                for j in range(4):
                    k = "w%d/o%d" % (w, j)
                    v = os.urandom(1000 + 997 * ((rnd * 7 + j) % 50))
                    self.assertEqual(self.put("race", k, v).status_code, 200)
                    last[k] = v
                if rnd % 5 == 4:
                    k = "w%d/o0" % w
                    self.assertEqual(self.s.delete(self.url + "/v1/objects/race/" + k, timeout=30).status_code, 200)
                    last.pop(k)
                    r = self.get("race", "w%d/o1" % w)
                    self.assertEqual((r.status_code, r.content), (200, last["w%d/o1" % w]))
        with concurrent.futures.ThreadPoolExecutor(6) as ex:
            list(ex.map(writer, range(6)))
        wait_until(lambda: all(self.head_copies(self.url, "race", k)[0] == 3 for k in last), 60, what="copies")
        for k, v in last.items():
            files = self.files_of(self.node, "race", k)
            self.assertEqual(len(files), 3, (k, files))
            for f in files:
                with open(f, "rb") as fh:
                    self.assertEqual(fh.read(), v, f)
        for w in range(6):
            self.assertEqual(self.files_of(self.node, "race", "w%d/o0" % w), [])

    def test_restart_keeps_copies(self):
        """Copy locations survive a restart (they are in the object's metadata) and old records read fine."""
        self.create_bucket("rs")
        plain = {"p%d" % i: os.urandom(500) for i in range(5)}
        for k, v in plain.items():
            self.assertEqual(self.put("rs", k, v).status_code, 200)
        self.assertEqual(self.setprops(self.url, "rs", {"mirror": {"enabled": True}}).status_code, 200)
        mirrored = {"m%d" % i: os.urandom(700) for i in range(5)}
        for k, v in mirrored.items():
            self.assertEqual(self.put("rs", k, v).status_code, 200)
        wait_until(lambda: all(self.head_copies(self.url, "rs", k)[0] == 2 for k in mirrored), 30, what="copies")
        self.node.restart()
        for k, v in {**plain, **mirrored}.items():
            r = self.get("rs", k)
            self.assertEqual((r.status_code, r.content), (200, v), k)
        for k in mirrored:
            self.assertEqual(self.head_copies(self.url, "rs", k)[0], 2)


class TestMirrorCrash(NodeTest, MirrorBase):
    """A crash while a copy is made (SHALE_FAULT): the acknowledged object reads back intact after the
    restart, its metadata names no copy that is not complete, and make-n-copies makes the copies."""
    mountpaths = 3

    def crash_at(self, point, bucket):
        self.node.stop()
        self.node.start(env={"SHALE_FAULT": point})
        self.create_bucket(bucket)
        self.assertEqual(self.setprops(self.url, bucket, {"mirror": {"enabled": True}}).status_code, 200)
        v = os.urandom(50000)
        r = self.put(bucket, "obj", v)
        self.assertEqual(r.status_code, 200, r.text)  # acknowledged before any copy is made
        wait_until(lambda: self.node.proc.poll() is not None, 30, what="the fault point to be reached")
        self.assertEqual(self.node.proc.returncode, 137)
        self.node.proc = None
        self.node.start()
        r = self.get(bucket, "obj")
        self.assertEqual((r.status_code, r.content), (200, v))
        self.assertEqual(self.head_copies(self.url, bucket, "obj")[0], 1, "no copy recorded")
        for mp in self.mpaths(self.node):
            wk = os.path.join(mp, "@ais", bucket, "%wk")
            self.assertEqual(os.listdir(wk) if os.path.isdir(wk) else [], [], "work files removed at start")
        self.wait_job(self.url, self.make_n(self.url, bucket, 2))
        self.assertEqual(self.head_copies(self.url, bucket, "obj")[0], 2)
        for f in self.files_of(self.node, bucket, "obj"):
            with open(f, "rb") as fh:
                self.assertEqual(fh.read(), v, f)
        r = self.get(bucket, "obj", params={"provider": "ais", "validate-checksum": "true"})
        self.assertEqual((r.status_code, r.content), (200, v))

    def test_fsck_after_unclean_stop(self):
        """The full start-up check (after a kill) drops a recorded copy whose file is gone and restores a
        missing main replica from its copy."""
        self.create_bucket("fk")
        self.assertEqual(self.setprops(self.url, "fk", {"mirror": {"enabled": True, "copies": 3}}).status_code, 200)
        a, b = os.urandom(4000), os.urandom(5000)
        self.assertEqual(self.put("fk", "a", a).status_code, 200)
        self.assertEqual(self.put("fk", "b", b).status_code, 200)
        wait_until(lambda: self.head_copies(self.url, "fk", "a")[0] == 3 and
                   self.head_copies(self.url, "fk", "b")[0] == 3, 30, what="copies")
        self.node.kill9()
        main_a = self.main_file(self.node, "fk", "a")
        os.unlink([f for f in self.files_of(self.node, "fk", "a") if f != main_a][0])
        main_b = self.main_file(self.node, "fk", "b")
        os.unlink(main_b)
        self.node.start()
        self.assertIn("fsck", self.node.log())
        self.assertEqual(self.head_copies(self.url, "fk", "a")[0], 2, "the missing copy is no longer recorded")
        with open(main_b, "rb") as fh:
            self.assertEqual(fh.read(), b, "main restored at start")
        self.assertEqual(self.head_copies(self.url, "fk", "b")[0], 3)
        for k, v in (("a", a), ("b", b)):
            r = self.get("fk", k)
            self.assertEqual((r.status_code, r.content), (200, v))
        self.wait_job(self.url, self.make_n(self.url, "fk", 3))
        self.assertEqual(self.head_copies(self.url, "fk", "a")[0], 3)

    def test_crash_before_rename(self):
        self.crash_at("mirror-before-rename", "cb")

    def test_crash_after_rename(self):
        self.crash_at("mirror-after-rename", "ca")


class TestMirrorConfig(NodeTest, MirrorBase):
    """The cluster's mirror.* config: the mirror props new buckets start with, validated like them."""
    mountpaths = 3
    extra_config = {"mirror": {"enabled": False, "copies": 2, "burst_buffer": 512}}  # AIStore's section loads

    def setcfg(self, **kv):
        return self.s.put(self.url + "/v1/cluster/set-config", params=kv, timeout=60)

    def cfg(self):
        r = self.s.get(self.url + "/v1/daemon", params={"what": "config"}, timeout=30)
        return r.json()["mirror"]

    def test_config_default(self):
        before = self.cfg()
        for kv, text in (({"mirror.copies": "40"}, "mirror"), ({"mirror.copies": "-1"}, "mirror"),
                         ({"mirror.enabled": "true", "mirror.copies": "1"}, "mirror"),
                         ({"mirror.burst_buffer": "20000"}, "mirror"),
                         ({"mirror.enabled": "true", "mirror.copies": "4"},
                          "not enough mountpaths (3) to configure new buckets as 4-way mirror")):
            r = self.setcfg(**kv)
            self.assertEqual(r.status_code, 400, (kv, r.text))
            self.assertIn(text, r.json()["message"], kv)
            self.assertEqual(self.cfg(), before, kv)
        r = self.setcfg(**{"mirror.enabled": "true", "mirror.copies": "3"})
        self.assertEqual(r.status_code, 200, r.text)
        try:
            self.create_bucket("dflt")
            p = self.bprops(self.url, "dflt")["mirror"]
            self.assertEqual((p["enabled"], p["copies"]), (True, 3))
            v = os.urandom(3000)
            self.assertEqual(self.put("dflt", "o", v).status_code, 200)
            wait_until(lambda: len(self.files_of(self.node, "dflt", "o")) == 3 and
                       self.head_copies(self.url, "dflt", "o")[0] == 3, 30, what="3 replicas from the default")
        finally:
            self.assertEqual(self.setcfg(**{"mirror.enabled": "false"}).status_code, 200)
        self.create_bucket("plain")
        self.assertFalse(self.bprops(self.url, "plain")["mirror"]["enabled"])


class TestMirrorCluster(MirrorBase, NodeTest):
    """Two targets with 2 mountpaths each: each target mirrors its own objects."""
    mountpaths = 1

    @classmethod
    def setUpClass(cls):
        start_cluster(cls, targets=2, mountpaths=2)

    @classmethod
    def tearDownClass(cls):
        stop_cluster(cls)

    def test_cluster_mirror(self):
        r = self.s.post(self.url + "/v1/buckets/cm", headers=J, timeout=30,
                        data=json.dumps({"action": "create-bck", "value": None}))
        self.assertEqual(r.status_code, 200, r.text)
        r = self.setprops(self.url, "cm", {"mirror": {"enabled": True, "copies": 3}})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("not enough mountpaths (2) to configure ais://cm as 3-way mirror", r.json()["message"])
        objs = {"o%02d" % i: os.urandom(1000 + i) for i in range(16)}
        for k, v in objs.items():
            r = self.s.put(self.url + "/v1/objects/cm/" + k, data=v, timeout=30)
            self.assertEqual(r.status_code, 200, r.text)
        # the CLI: `shale start mirror` (AIStore's `ais start mirror BUCKET --copies N`)
        p = self.c.cli("start", "mirror", "ais://cm", "--copies", "2", "--wait")
        jid = p.stdout.strip().splitlines()[0]
        self.assertEqual(self.wait_job(self.url, jid)["kind"], "make-n-copies")
        p = self.c.cli("start", "mirror", "ais://cm", "--copies", "0", check=False)
        self.assertNotEqual(p.returncode, 0)
        holders = set()
        for k, v in objs.items():
            r = self.s.head(self.url + "/v1/objects/cm/" + k, timeout=30, allow_redirects=True)
            self.assertEqual(r.headers["Ais-Mirror-Copies"], "2", k)
            loc = r.headers["Ais-Location"]
            holders.add(loc.split("]")[0])
            paths = r.headers["Ais-Mirror-Paths"].strip("[]").split()
            self.assertEqual(len(set(paths)), 2)
            # both replicas on the target that owns the object (its mountpaths share a directory)
            self.assertEqual(len({os.path.dirname(p.rstrip("/")) for p in paths}), 1, paths)
            self.assertEqual(self.s.get(self.url + "/v1/objects/cm/" + k, timeout=30).content, v)
        self.assertEqual(len(holders), 2, "objects on both targets")
        # new PUTs are mirrored by the owning target's put-copies
        r = self.s.put(self.url + "/v1/objects/cm/late", data=b"late" * 100, timeout=30)
        self.assertEqual(r.status_code, 200)
        wait_until(lambda: self.s.head(self.url + "/v1/objects/cm/late", timeout=30, allow_redirects=True).headers.get(
            "Ais-Mirror-Copies") == "2", 30, what="copies of a new object")


if __name__ == "__main__":
    main()
