# SPDX-License-Identifier: MIT
"""Appends and native multipart uploads as AIStore's Python SDK sends them
(native-gaps.md §1-2), through a gateway to 3 targets and on a standalone
node: the SDK's file writer in "w" and "a" modes, flush with and without a
checksum, multipart parts out of order and re-sent, complete and abort, and
bad requests refused without changing the object."""
import hashlib
import json
import os

from harness import ClusterTest, NodeTest, main

J = {"Content-Type": "application/json"}


class UploadApi:
    def obj(self, name):
        return self.url + "/v1/objects/up/" + name

    def append(self, name, data, handle="", flush=False, headers=None):
        """ObjectWriter.append_content: both params always sent"""
        h = dict(J)
        h.update(headers or {})
        return self.s.put(self.obj(name), data=data, headers=h, timeout=60,
                          params={"append_type": "flush" if flush else "append", "append_handle": handle})

    def file_writer(self, name, chunks, mode="w"):
        """ObjectFileWriter: "w" truncates first; one append per write; flush at close"""
        if mode == "w":
            self.assertEqual(self.s.put(self.obj(name), data=b"", timeout=30).status_code, 200)
        handle = ""
        for c in chunks:
            r = self.append(name, c, handle)
            self.assertEqual(r.status_code, 200, r.text)
            handle = r.headers["Ais-Append-Handle"]
            self.assertEqual(len(handle.split("|")), 4)
        r = self.append(name, b"", handle, flush=True)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertNotIn("Ais-Append-Handle", r.headers)

    def check_append(self):
        self.s.post(self.url + "/v1/buckets/up", json={"action": "create-bck"}, timeout=30)
        self.file_writer("w.txt", [b"hello ", b"", b"world"])
        self.assertEqual(self.s.get(self.obj("w.txt")).content, b"hello world")
        self.file_writer("w.txt", [b"!", b"!"], mode="a")
        self.assertEqual(self.s.get(self.obj("w.txt")).content, b"hello world!!")
        self.file_writer("w.txt", [b"new"], mode="w")
        self.assertEqual(self.s.get(self.obj("w.txt")).content, b"new")
        # nothing is visible before flush
        r = self.append("w.txt", b" more")
        h = r.headers["Ais-Append-Handle"]
        self.assertEqual(self.s.get(self.obj("w.txt")).content, b"new")
        # a wrong checksum at flush changes nothing; a right one publishes
        r = self.append("w.txt", b"", h, flush=True,
                        headers={"Ais-Checksum-Type": "md5", "Ais-Checksum-Value": "00" * 16})
        self.assertEqual(r.status_code, 500, r.text)
        self.assertIn("BAD DATA CHECKSUM", r.text)
        self.assertEqual(self.s.get(self.obj("w.txt")).content, b"new")
        r = self.append("w.txt", b" more")
        h = r.headers["Ais-Append-Handle"]
        md5 = hashlib.md5(b"new more").hexdigest()
        r = self.append("w.txt", b"", h, flush=True, headers={"Ais-Checksum-Type": "md5", "Ais-Checksum-Value": md5})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.s.get(self.obj("w.txt")).content, b"new more")
        # bad input
        r = self.s.put(self.obj("w.txt"), data=b"x", params={"append_type": "bogus"})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("expecting either", r.text)
        r = self.append("w.txt", b"", "", flush=True)
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("empty source", r.text)
        r = self.append("w.txt", b"x", handle="a|b")
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("invalid APPEND handle", r.text)
        r = self.append("w.txt", b"x", handle=h)  # flushed: the session is gone
        self.assertEqual(r.status_code, 404, r.text)
        self.assertEqual(self.s.get(self.obj("w.txt")).content, b"new more")

    def mpt(self, name, action, params=None, value=None, method="POST"):
        return self.s.request(method, self.obj(name), params=params, timeout=120, headers=J,
                              data=json.dumps({"action": action, "name": "", "value": value}))

    def check_multipart(self):
        self.s.post(self.url + "/v1/buckets/up", json={"action": "create-bck"}, timeout=30)
        parts = [os.urandom(100000 + 7 * i) for i in range(8)]
        r = self.mpt("big.bin", "mpt-upload")
        self.assertEqual(r.status_code, 200, r.text)
        uid = r.text
        self.assertTrue(uid and '"' not in uid, uid)
        for n in (3, 1, 2, 8, 7, 6, 5, 4, 3):
            data = parts[n - 1]
            r = self.s.put(self.obj("big.bin"), data=data, params={"uploadId": uid, "partNumber": n}, headers=J)
            self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.s.head(self.obj("big.bin"), allow_redirects=True).status_code, 404, "not visible before complete")
        r = self.mpt("big.bin", "mpt-complete", {"uploadId": uid}, [{"part-number": n, "etag": ""} for n in range(1, 8)])
        self.assertEqual(r.status_code, 501, r.text)
        self.assertIn("partial completion", r.text)
        bad = [{"part-number": n, "etag": ""} for n in (1, 2, 3, 4, 5, 6, 7, 7)]
        r = self.mpt("big.bin", "mpt-complete", {"uploadId": uid}, bad)
        self.assertEqual(r.status_code, 400, r.text)
        r = self.mpt("big.bin", "mpt-complete", {"uploadId": uid}, None)
        self.assertEqual(r.status_code, 400, r.text)
        r = self.mpt("big.bin", "mpt-complete", {"uploadId": uid}, [{"part-number": n, "etag": ""} for n in range(1, 9)])
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.s.get(self.obj("big.bin")).content, b"".join(parts))
        r = self.mpt("big.bin", "mpt-complete", {"uploadId": uid}, [{"part-number": 1, "etag": ""}])
        self.assertEqual(r.status_code, 404, r.text)
        # equal parts but the last, out of order (each written in place), and the small last part first
        # (the others then wait aside and are copied): the same bytes either way
        for order in ((2, 4, 1, 6, 3, 5), (6, 1, 2, 3, 4, 5)):
            parts = [os.urandom(65536) for _ in range(5)] + [os.urandom(1000)]
            uid = self.mpt("eq.bin", "mpt-upload").text
            for n in order:
                r = self.s.put(self.obj("eq.bin"), data=parts[n - 1], params={"uploadId": uid, "partNumber": n},
                               headers=J)
                self.assertEqual(r.status_code, 200, r.text)
            r = self.mpt("eq.bin", "mpt-complete", {"uploadId": uid}, [{"part-number": n, "etag": ""}
                                                                       for n in range(1, 7)])
            self.assertEqual(r.status_code, 200, r.text)
            got = self.s.get(self.obj("eq.bin"))
            self.assertEqual(got.content, b"".join(parts), order)
            h = self.s.head(self.obj("eq.bin"), allow_redirects=True).headers
            if h.get("Ais-Checksum-Type") == "md5":
                self.assertEqual(h["Ais-Checksum-Value"], hashlib.md5(got.content).hexdigest())
        # abort leaves nothing; bad parts
        uid = self.mpt("gone.bin", "mpt-upload").text
        self.assertEqual(self.s.put(self.obj("gone.bin"), data=b"x", params={"uploadId": uid, "partNumber": 1},
                                    headers=J).status_code, 200)
        for n, data, code in ((0, b"x", 400), ("x", b"x", 400), (1, b"", 400)):
            r = self.s.put(self.obj("gone.bin"), data=data, params={"uploadId": uid, "partNumber": n}, headers=J)
            self.assertEqual(r.status_code, code, (n, r.text))
        r = self.s.put(self.obj("gone.bin"), data=b"x", params={"uploadId": "nosuchid", "partNumber": 1}, headers=J)
        self.assertEqual(r.status_code, 404, r.text)
        r = self.mpt("gone.bin", "mpt-abort", {"uploadId": uid}, method="DELETE")
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.s.head(self.obj("gone.bin"), allow_redirects=True).status_code, 404)
        r = self.mpt("gone.bin", "mpt-abort", {"uploadId": uid}, method="DELETE")
        self.assertEqual(r.status_code, 404, r.text)
        r = self.mpt("gone.bin", "mpt-abort", {"uploadId": "bad id!"}, method="DELETE")
        self.assertEqual(r.status_code, 400, r.text)

    def check_part_writer(self):
        """mpu.add_part(n).as_file() (the SDK's file writer on a part): its appends go to the part, not to the
        object (the build before appended them to the object); HEAD props=chunked and the listing's chunked
        flag show the parts"""
        self.s.post(self.url + "/v1/buckets/up", json={"action": "create-bck"}, timeout=30)
        self.assertEqual(self.s.put(self.obj("pw.bin"), data=b"old object", timeout=30).status_code, 200)
        uid = self.mpt("pw.bin", "mpt-upload").text
        p1, more, p3 = os.urandom(70000), [os.urandom(5000), os.urandom(3)], os.urandom(1234)
        part = {"uploadId": uid}

        def put_part(n, data):
            r = self.s.put(self.obj("pw.bin"), data=data, params=dict(part, partNumber=n), headers=J, timeout=60)
            self.assertEqual(r.status_code, 200, r.text)

        def part_file(n, chunks, handle=""):
            """ObjectFileWriter on ObjectWriter(params={uploadId, partNumber}), in mode a"""
            for c in chunks:
                r = self.s.put(self.obj("pw.bin"), data=c, headers=J, timeout=60, params=dict(
                    part, partNumber=n, append_type="append", append_handle=handle))
                self.assertEqual(r.status_code, 200, r.text)
                handle = r.headers["Ais-Append-Handle"]
                self.assertEqual(len(handle.split("|")), 4, handle)
            r = self.s.put(self.obj("pw.bin"), data=b"", headers=J, timeout=60, params=dict(
                part, partNumber=n, append_type="flush", append_handle=handle))
            self.assertEqual(r.status_code, 200, r.text)
            return handle
        put_part(1, p1)
        h1 = part_file(1, [b"+one"])  # after what part 1 held (placed in the work file)
        part_file(2, more)
        put_part(3, p3)
        # another part's handle, a flush of a part with nothing in it: refused, nothing changes
        r = self.s.put(self.obj("pw.bin"), data=b"zz", headers=J, params=dict(
            part, partNumber=2, append_type="append", append_handle=h1))
        self.assertEqual(r.status_code, 400, r.text)
        r = self.s.put(self.obj("pw.bin"), data=b"", headers=J, params=dict(
            part, partNumber=4, append_type="flush", append_handle=h1))
        self.assertEqual(r.status_code, 400, r.text)
        r = self.s.put(self.obj("pw.bin"), data=b"zz", headers=J, params=dict(
            uploadId="nosuchid", partNumber=1, append_type="append", append_handle=""))
        self.assertEqual(r.status_code, 404, r.text)
        self.assertEqual(self.s.get(self.obj("pw.bin")).content, b"old object", "parts invisible before complete")
        r = self.mpt("pw.bin", "mpt-complete", part, [{"part-number": n, "etag": ""} for n in (1, 2, 3)])
        self.assertEqual(r.status_code, 200, r.text)
        want = p1 + b"+one" + b"".join(more) + p3
        self.assertEqual(self.s.get(self.obj("pw.bin")).content, want)
        h = self.s.head(self.obj("pw.bin"), params={"props": "name,size,chunked"}, allow_redirects=True).headers
        self.assertEqual((h.get("Ais-Chunks-Count"), h.get("Ais-Chunks-Max-Chunk-Size")), ("3", str(len(p1) + 4)))
        r = self.s.get(self.url + "/v1/buckets/up", json={"action": "list", "value": {
            "props": "name,size,chunked", "prefix": "pw.bin"}})
        self.assertEqual([(e["name"], e.get("flags", 0) & 8192) for e in r.json()["entries"]], [("pw.bin", 8192)])
        # written whole again: no chunks
        self.assertEqual(self.s.put(self.obj("pw.bin"), data=b"whole", timeout=30).status_code, 200)
        h = self.s.head(self.obj("pw.bin"), params={"props": "name,size,chunked"}, allow_redirects=True).headers
        self.assertNotIn("Ais-Chunks-Count", h)


class UploadCluster(ClusterTest, UploadApi):
    def test_append(self):
        self.check_append()

    def test_multipart(self):
        self.check_multipart()

    def test_part_file_writer(self):
        self.check_part_writer()


class UploadStandalone(NodeTest, UploadApi):
    def test_append_and_multipart(self):
        self.check_append()
        self.check_multipart()
        self.check_part_writer()


if __name__ == "__main__":
    main()
