# SPDX-License-Identifier: MIT
"""Crash safety and reconcile: kill -9 under PUT load, crashes injected at
each step of the PUT/DELETE protocol, startup fsck, disk full."""
import hashlib
import os
import random
import re
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

import requests

from harness import Node, main, wait_until


def create(url, b):
    r = requests.post(url + "/v1/buckets/" + b, json={"action": "create-bck"})
    assert r.status_code == 200, r.text


class TestKill9UnderLoad(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="shale-dur-")
        self.node = Node(self.tmp, mountpaths=2).start()

    def tearDown(self):
        self.node.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_kill9_during_puts(self):
        url = self.node.url
        create(url, "d")
        acked = {}       # name -> sha256 of the last acknowledged content
        attempted = {}   # name -> set of sha256 of every content ever sent
        lock = threading.Lock()
        stop = threading.Event()

        def worker(wid):
            s = requests.Session()
            rnd = random.Random(wid)
            i = 0
            while not stop.is_set() and i < 100000:
                name = "w%d/o%03d" % (wid, rnd.randrange(200))  # overwrites happen
                data = os.urandom(rnd.choice([10, 1000, 50000, 300000]))
                h = hashlib.sha256(data).hexdigest()
                with lock:
                    attempted.setdefault(name, set()).add(h)
                try:
                    r = s.put(url + "/v1/objects/d/" + name, data=data, timeout=10)
                except requests.RequestException:
                    return
                if r.status_code == 200:
                    with lock:
                        acked[name] = h
                i += 1

        ts = [threading.Thread(target=worker, args=(w,)) for w in range(6)]
        for t in ts:
            t.start()
        time.sleep(3)
        self.node.kill9()
        stop.set()
        for t in ts:
            t.join(30)
        self.assertGreater(len(acked), 50)
        self.node.start()
        s = requests.Session()
        for name, hs in attempted.items():
            r = s.get(url + "/v1/objects/d/" + name, timeout=10)
            if name in acked:
                self.assertEqual(r.status_code, 200, "acknowledged object %s lost" % name)
            if r.status_code == 200:
                got = hashlib.sha256(r.content).hexdigest()
                # the acknowledged version, or a later complete one; never torn
                self.assertIn(got, hs, "object %s is torn" % name)
                self.assertEqual(int(r.headers["Content-Length"]), len(r.content))
            else:
                self.assertEqual(r.status_code, 404)
        # listing agrees with reads
        names = requests.get(url + "/v1/buckets/d").json()["entries"] or []
        listed = {e["name"] for e in names}
        for name in acked:
            self.assertIn(name, listed)
        self.assertIn("previous run did not stop cleanly", self.node.log())


class TestInjectedCrashes(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="shale-fault-")
        self.node = Node(self.tmp).start()
        create(self.node.url, "f")
        r = requests.put(self.node.url + "/v1/objects/f/obj", data=b"old")
        self.assertEqual(r.status_code, 200)

    def tearDown(self):
        self.node.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def crash_at(self, point, method="PUT", data=b"new-content"):
        self.node.stop()
        self.node.start(env={"SHALE_FAULT": point})
        try:
            requests.request(method, self.node.url + "/v1/objects/f/obj", data=data, timeout=10)
        except requests.RequestException:
            pass
        wait_until(lambda: self.node.proc.poll() is not None, 10, what="fault exit")
        self.assertEqual(self.node.proc.returncode, 137)
        self.node.proc = None
        self.node.start()

    def test_crash_before_commit_keeps_old(self):
        self.crash_at("put-after-write")
        r = requests.get(self.node.url + "/v1/objects/f/obj")
        self.assertEqual(r.content, b"old")
        self.assertIn("removed 1 abandoned work file", self.node.log())

    def test_crash_after_commit_completes_new(self):
        self.crash_at("put-after-commit")
        r = requests.get(self.node.url + "/v1/objects/f/obj")
        self.assertEqual(r.content, b"new-content")
        self.assertEqual(int(r.headers["Content-Length"]), len(b"new-content"))
        self.assertIn("completed interrupted PUT", self.node.log())

    def test_crash_during_delete(self):
        self.crash_at("delete-after-unlink", method="DELETE", data=None)
        r = requests.get(self.node.url + "/v1/objects/f/obj")
        self.assertEqual(r.status_code, 404)
        names = requests.get(self.node.url + "/v1/buckets/f").json()["entries"] or []
        self.assertEqual(names, [])


class TestNoFsyncPolicy(unittest.TestCase):
    """write_policy data=never, md=delayed (nginx's durability): a waited metadata commit is made on the
    request's own thread when nothing is queued. Concurrent PUTs, overwrites and DELETEs of the same names
    end in the last state each client wrote, and a clean restart keeps it."""

    def test_concurrent_writes_keep_order(self):
        tmp = tempfile.mkdtemp(prefix="shale-test-")
        node = Node(tmp, extra_config={"write_policy": {"data": "never", "md": "delayed"}}).start()
        try:
            requests.post(node.url + "/v1/buckets/nf", json={"action": "create-bck"},
                          timeout=30).raise_for_status()

            def client(k):
                s = requests.Session()
                for i in range(40):
                    u = "%s/v1/objects/nf/c%d/%03d" % (node.url, k, i)
                    s.put(u, data=b"first", timeout=30).raise_for_status()
                    s.put(u, data=b"second %d %d" % (k, i), timeout=30).raise_for_status()
                    if i % 4 == 0:
                        s.delete(u, timeout=30).raise_for_status()
            ts = [threading.Thread(target=client, args=(k,)) for k in range(6)]
            for t in ts:
                t.start()
            for t in ts:
                t.join(120)

            def check():
                names = set()
                r = requests.get(node.url + "/v1/buckets/nf", timeout=30).json()
                names = {e["name"] for e in r["entries"] or []}
                want = {"c%d/%03d" % (k, i) for k in range(6) for i in range(40) if i % 4}
                self.assertEqual(names, want)
                for k in range(6):
                    for i in (1, 2, 3, 39):
                        r = requests.get("%s/v1/objects/nf/c%d/%03d" % (node.url, k, i), timeout=30)
                        self.assertEqual(r.content, b"second %d %d" % (k, i))
            check()
            node.restart()
            check()
        finally:
            node.stop()
            shutil.rmtree(tmp, ignore_errors=True)


class TestDirectoryFsync(unittest.TestCase):
    """An acknowledged PUT survives a power cut: after the work file is renamed into place, the directory
    that now holds it (and every directory made for it, up to the mountpath) is fsynced before the answer.
    Checked by tracing the node's system calls."""

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="shale-dsync-")
        self.node = Node(self.tmp).start()
        create(self.node.url, "ds")

    def tearDown(self):
        self.node.stop()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def trace_put(self, name):
        out = os.path.join(self.tmp, "trace-%d.txt" % len(os.listdir(self.tmp)))
        st = subprocess.Popen(["strace", "-f", "-qq", "-p", str(self.node.proc.pid), "-e",
                               "trace=openat,rename,renameat,renameat2,fsync,close", "-o", out],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            time.sleep(1.0)  # attached to every thread
            r = requests.put(self.node.url + "/v1/objects/ds/" + name, data=b"x" * 100, timeout=10)
            self.assertEqual(r.status_code, 200, r.text)
            time.sleep(0.3)
        finally:
            st.terminate()
            st.wait(10)
        with open(out) as f:
            return f.read().splitlines()

    def dir_fsyncs_after_rename(self, lines, name):
        """directories fsynced (by path) after the rename onto .../name, in order"""
        fds, synced, renamed = {}, [], False
        for ln in lines:
            m = re.search(r'rename(?:at2?)?\(.*"([^"]+)", .*"([^"]+)"', ln)
            if m and m.group(2).endswith("/" + name):
                renamed = True
                continue
            m = re.search(r'openat\(AT_FDCWD, "([^"]+)", [^)]*O_DIRECTORY[^)]*\) = (\d+)', ln)
            if m:
                fds[m.group(2)] = m.group(1)
                continue
            m = re.search(r"fsync\((\d+)\)\s+= 0", ln)
            if m and renamed and m.group(1) in fds:
                synced.append(fds[m.group(1)])
        self.assertTrue(renamed, "no rename onto %s traced:\n%s" % (name, "\n".join(lines[-40:])))
        return synced

    def test_directory_fsynced_before_ack(self):
        if not shutil.which("strace"):
            self.fail("strace is missing: ./configure --install-deps installs it")
        obj = os.path.join(self.node.dir, "mp1", "@ais", "ds", "%ob")
        # a new directory: it and its parents up to the mountpath
        synced = self.dir_fsyncs_after_rename(self.trace_put("new/sub/o1"), "o1")
        for d in (os.path.join(obj, "new", "sub"), os.path.join(obj, "new"), obj):
            self.assertIn(os.path.realpath(d), [os.path.realpath(x) for x in synced], synced)
        # an existing directory: that one
        synced = self.dir_fsyncs_after_rename(self.trace_put("new/sub/o2"), "o2")
        self.assertIn(os.path.realpath(os.path.join(obj, "new", "sub")), [os.path.realpath(x) for x in synced])


class TestFsck(unittest.TestCase):
    def test_reconcile(self):
        tmp = tempfile.mkdtemp(prefix="shale-fsck-")
        node = Node(tmp).start()
        try:
            create(node.url, "k")
            for n in ("a", "b", "c"):
                requests.put(node.url + "/v1/objects/k/" + n, data=n.encode() * 100)
            node.kill9()  # unclean: the next start runs the full check
            ob = os.path.join(node.dir, "mp1", "@ais", "k", "%ob")
            os.unlink(os.path.join(ob, "a"))                       # metadata without a file
            with open(os.path.join(ob, "b"), "wb") as f:           # size changed behind our back
                f.write(b"short")
            with open(os.path.join(ob, "orphan.txt"), "wb") as f:  # file without metadata
                f.write(b"adopt me")
            node.start()
            log = node.log()
            self.assertIn("has metadata but no file", log)
            self.assertIn("metadata updated", log)
            self.assertIn("adopted 1 file", log)
            self.assertEqual(requests.get(node.url + "/v1/objects/k/a").status_code, 404)
            self.assertEqual(requests.get(node.url + "/v1/objects/k/b").content, b"short")
            self.assertEqual(requests.get(node.url + "/v1/objects/k/orphan.txt").content, b"adopt me")
            self.assertEqual(requests.get(node.url + "/v1/objects/k/c").content, b"c" * 100)
            names = [e["name"] for e in requests.get(node.url + "/v1/buckets/k").json()["entries"]]
            self.assertEqual(names, ["b", "c", "orphan.txt"])
            # a clean stop makes the next start quick
            node.restart()
            self.assertIn("(quick)", node.log().splitlines()[-3] + node.log())
        finally:
            node.stop()
            shutil.rmtree(tmp, ignore_errors=True)


class TestReadPath(unittest.TestCase):
    """A GET opens its file relative to a directory each HTTP thread keeps
    open for the bucket: what it reads must still be what the metadata and
    the directory tree say."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shale-rp-")
        cls.node = Node(cls.tmp).start()
        cls.s = requests.Session()

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def ob(self, b):
        return os.path.join(self.node.dir, "mp1", "@ais", b, "%ob")

    def gets(self, b, name, n=64):
        # enough GETs, on fresh and kept connections, that every poll loop serves some
        out = set()
        for i in range(n):
            r = (self.s if i % 2 else requests).get("%s/v1/objects/%s/%s" % (self.node.url, b, name))
            out.add((r.status_code, r.content if r.status_code == 200 else b""))
        return out

    def test_file_of_another_size_is_refused(self):
        create(self.node.url, "sz")
        for size in (1000, 100 * 1024):  # read whole, and sent from the file
            for delta in (-1, 1):
                name = "o%d%+d" % (size, delta)
                data = os.urandom(size)
                self.assertEqual(self.s.put("%s/v1/objects/sz/%s" % (self.node.url, name), data=data).status_code, 200)
                self.assertEqual(self.gets("sz", name, 4), {(200, data)})
                path = os.path.join(self.ob("sz"), name)
                with open(path, "r+b") as f:
                    if delta < 0:
                        f.truncate(size - 1)
                    else:
                        f.seek(0, 2)
                        f.write(b"x")
                for rng in (None, "bytes=0-9"):
                    r = self.s.get("%s/v1/objects/sz/%s" % (self.node.url, name), headers={"Range": rng} if rng else {})
                    self.assertEqual(r.status_code, 500, (name, rng, r.status_code, r.content[:100]))
                    self.assertIn("size mismatch between data and metadata", r.text)
                self.assertIn("%s: size mismatch between data and metadata (the file has %d bytes, the metadata %d): the copy "
                              "here is damaged" % (name, size + delta, size), self.node.log())

    def test_rotted_bytes_are_not_served_when_checked(self):
        """checksum.validate_warm_get (or ?validate-checksum) on a plain bucket: a flipped byte is an error that
        says the object is damaged, for a small and a large object, whole and ranged, native and S3; unchecked
        it is served, as AIStore does"""
        create(self.node.url, "rot")
        for size in (3000, 200 * 1024):
            name = "r%d" % size
            data = os.urandom(size)
            self.assertEqual(self.s.put("%s/v1/objects/rot/%s" % (self.node.url, name), data=data).status_code, 200)
            with open(os.path.join(self.ob("rot"), name), "r+b") as f:
                f.seek(size // 2)
                f.write(bytes([data[size // 2] ^ 0xFF]))
            url = "%s/v1/objects/rot/%s" % (self.node.url, name)
            self.assertEqual(self.s.get(url).status_code, 200)  # not checked: served
            r = self.s.get(url, params={"validate-checksum": "true"})
            self.assertEqual(r.status_code, 500, r.text[:200])
            self.assertIn("BAD DATA CHECKSUM", r.text)
            # found damaged once, recorded: no read serves it since, checked or not (the build before served it)
            r = self.s.get(url)
            self.assertEqual(r.status_code, 500, r.text[:200])
            self.assertIn("recorded as damaged: BAD DATA CHECKSUM", r.text)
            self.assertIn("PUT it again, or delete it", r.text)
            self.assertEqual(self.s.get("%s/s3/rot/%s" % (self.node.url, name)).status_code, 500)
            h = self.s.head(url).headers
            self.assertIn("shale-damaged=BAD DATA CHECKSUM", h.get("Ais-Custom-Md", ""))
        r = self.s.patch(self.node.url + "/v1/buckets/rot",
                         json={"action": "set-bprops", "value": {"checksum": {"validate_warm_get": True}}})
        self.assertEqual(r.status_code, 200, r.text)
        for size in (3000, 200 * 1024):
            url = "%s/v1/objects/rot/r%d" % (self.node.url, size)
            for rng in (None, "bytes=0-9"):
                r = self.s.get(url, headers={"Range": rng} if rng else {})
                self.assertEqual(r.status_code, 500, (size, rng, r.text[:200]))
                self.assertIn("the object is damaged", r.text)
            r = self.s.get("%s/s3/rot/r%d" % (self.node.url, size))
            self.assertEqual(r.status_code, 500, (size, r.text[:200]))
        self.assertIn("BAD DATA CHECKSUM", self.node.log())
        # written again: the record goes with the old version
        data = os.urandom(3000)
        self.assertEqual(self.s.put("%s/v1/objects/rot/r3000" % self.node.url, data=data).status_code, 200)
        r = self.s.get("%s/v1/objects/rot/r3000" % self.node.url)
        self.assertEqual((r.status_code, r.content), (200, data))
        self.assertNotIn("shale-damaged", self.s.head("%s/v1/objects/rot/r3000" % self.node.url).headers.get(
            "Ais-Custom-Md", ""))

    def test_recreated_bucket_serves_its_own_objects(self):
        for rnd in range(3):
            create(self.node.url, "rc")
            data = ("round %d " % rnd).encode() * 50
            for name in ("a", "d/b"):
                self.assertEqual(self.s.put("%s/v1/objects/rc/%s" % (self.node.url, name), data=data).status_code, 200)
                self.assertEqual(self.gets("rc", name), {(200, data)}, (rnd, name))
            r = self.s.delete(self.node.url + "/v1/buckets/rc", json={"action": "destroy-bck"})
            self.assertEqual(r.status_code, 200, r.text)
            self.assertEqual(self.gets("rc", "a", 8), {(404, b"")})

    def test_directories_held_open_are_bounded(self):
        """the threads' open bucket directories take at most an eighth of the node's fd limit"""
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        tmp = tempfile.mkdtemp(prefix="shale-rpfd-")
        resource.setrlimit(resource.RLIMIT_NOFILE, (128, hard))  # the node inherits it: 16 directories
        try:
            node = Node(tmp).start()
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
        try:
            s = requests.Session()
            names = ["b%02d" % i for i in range(40)]
            for b in names:
                create(node.url, b)
                self.assertEqual(s.put("%s/v1/objects/%s/o" % (node.url, b), data=b.encode()).status_code, 200)
            for rnd in range(3):
                for b in names:
                    r = (s if rnd % 2 else requests).get("%s/v1/objects/%s/o" % (node.url, b))
                    self.assertEqual((r.status_code, r.content), (200, b.encode()))
            fds = os.listdir("/proc/%d/fd" % node.proc.pid)
            held = [f for f in fds if os.readlink("/proc/%d/fd/%s" % (node.proc.pid, f)).endswith("/%ob")]
            self.assertGreater(len(held), 0)
            self.assertLessEqual(len(held), 16, held)
        finally:
            node.stop()
            shutil.rmtree(tmp, ignore_errors=True)

    def test_bucket_directory_replaced_behind_the_node(self):
        create(self.node.url, "mv")
        data = os.urandom(3000)
        self.assertEqual(self.s.put(self.node.url + "/v1/objects/mv/x/o", data=data).status_code, 200)
        self.assertEqual(self.gets("mv", "x/o"), {(200, data)})
        # the directory the threads hold open goes; a copy of it takes its place
        ob = self.ob("mv")
        shutil.copytree(ob, ob + ".new")
        shutil.rmtree(ob)
        os.rename(ob + ".new", ob)
        self.assertEqual(self.gets("mv", "x/o"), {(200, data)})
        self.assertNotIn("removing the stale metadata", self.node.log())


@unittest.skipUnless(os.geteuid() == 0, "needs root to mount a small tmpfs")
class TestDiskFull(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="shale-full-")
        self.mp = os.path.join(self.tmp, "small")
        os.makedirs(self.mp)
        subprocess.run(["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", self.mp], check=True)
        self.node = Node(self.tmp, fspaths=[self.mp], extra_config={"space": {"out_of_space": 100}}).start()
        create(self.node.url, "full")

    def tearDown(self):
        self.node.stop()
        subprocess.run(["umount", self.mp])
        shutil.rmtree(self.tmp, ignore_errors=True)

    def test_507_and_nothing_partial(self):
        url = self.node.url
        big = os.urandom(6 << 20)
        r = requests.put(url + "/v1/objects/full/big", data=big)   # Content-Length known: refused up front
        self.assertEqual(r.status_code, 507, r.text)
        self.assertIn("out of space", r.json()["message"])

        def gen():  # chunked: no length, fails while streaming
            for i in range(0, len(big), 65536):
                yield big[i:i + 65536]
        r = requests.put(url + "/v1/objects/full/big2", data=gen())
        self.assertEqual(r.status_code, 507, r.text)
        for n in ("big", "big2"):
            self.assertEqual(requests.get(url + "/v1/objects/full/" + n).status_code, 404)
        wk = os.path.join(self.mp, "@ais", "full", "%wk")
        self.assertEqual(os.listdir(wk) if os.path.isdir(wk) else [], [])
        # the node keeps working once there is room
        r = requests.put(url + "/v1/objects/full/small", data=b"fits")
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(requests.get(url + "/v1/objects/full/small").content, b"fits")


if __name__ == "__main__":
    main()
