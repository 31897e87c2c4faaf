#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The gateway's S3 forward against a target that misbehaves (1 gateway + 2
targets): one target is killed and a fake one listens on its port, so the
gateway still forwards that target's objects there and gets, by turns, a
well-formed answer in each framing the forward reads (Content-Length, also
streamed in pieces, chunked with extensions and trailers, up to the close,
after a 1xx) and a
malformed one (no status line, headers over 32 KiB, a bad Content-Length,
Content-Length with Transfer-Encoding, a folded header, a bad chunk size, a
body cut short), or no answer at all. The client must get the answer, or an
S3 XML 502/503 that says what the target did, within the forward's limit
(timeout.send_file_time); the gateway must go on serving. Last, nothing
listens on the port: 503, cannot connect. test_framing_edges covers more of
what the answer's parser reads and the bounds it keeps.
"""
import os
import shutil
import socket
import struct
import tempfile
import threading
import time
import unittest
import xml.etree.ElementTree as ET

import requests

from harness import Cluster, main, wait_until

OK = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
BIG = os.urandom(3 << 20)
ANSWERS = {  # mode: (the bytes, close the connection after them)
    "ok": (OK + b"Content-Length: 2\r\n\r\nok", False),
    "chunked": (OK + b"Transfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\n",
                False),
    "to-close": (OK + b"Connection: close\r\n\r\nuntil the close", True),
    "interim": (b"HTTP/1.1 100 Continue\r\n\r\n" + OK + b"Content-Length: 3\r\n\r\nyes", False),
    "garbage": (b"HELLO THERE\r\n\r\n", True),
    "big-header": (OK + b"X-Big: " + b"a" * 40000 + b"\r\n\r\n", True),
    "bad-length": (OK + b"Content-Length: 12x\r\n\r\n", True),
    "length-and-chunked": (OK + b"Content-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", True),
    "folded": (OK + b"X-A: 1\r\n continued\r\nContent-Length: 0\r\n\r\n", True),
    "bad-chunk": (OK + b"Transfer-Encoding: chunked\r\n\r\nzz\r\n", True),
    "no-chunk-size": (OK + b"Transfer-Encoding: chunked\r\n\r\n\r\n\r\n", True),  # not a last chunk
    "low-status": (b"HTTP/1.1 099 Low\r\n\r\n" + OK + b"Content-Length: 3\r\n\r\nyes", True),
    "interims": (b"HTTP/1.1 100 Continue\r\n\r\n" * 9 + OK + b"Content-Length: 3\r\n\r\nyes", True),
    "short": (OK + b"Content-Length: 1000\r\n\r\nonly ten b", True),
    "long-cut": (OK + b"Content-Length: %d\r\n\r\n" % (8 << 20) + b"x" * (1 << 20), True),
    "silent": (b"", False),
    "chunked-reset": (b"", False),  # see chunked_reset
    "head-stray-body": (OK + b"Content-Length: 2\r\n\r\nok", False),  # a HEAD gets the body 50 ms late
    "big": (OK + b"Content-Length: 200000\r\n\r\n" + b"y" * 200000, False),  # over 64 KiB: out_read receives it
    # the first 100,000 bytes with the header, the rest 0.3 s later: the forward streams (more than 64 KiB), what
    # came with the header goes out first
    "pieces": (OK + b"Content-Length: %d\r\n\r\n" % len(BIG) + BIG[:100000], False),
    # more framing and the parser's bounds (test_framing_edges); a list: pieces 50 ms apart
    "split": ([OK + b"X-Split: ab", b"cd\r\nContent-Le", b"ngth: 3\r\n\r", b"\nyes"], False),
    "hints": (b"HTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n" + OK + b"Content-Length: 3\r\n\r\nyes", False),
    "tiny-chunks": (OK + b"Transfer-Encoding: chunked\r\n\r\n" + b"1;e=x\r\nz\r\n" * 3000 + b"0\r\n\r\n", False),
    "ext-1000": (OK + b"Transfer-Encoding: chunked\r\n\r\n2;" + b"e" * 1000 + b"\r\nok\r\n0\r\n\r\n", False),
    "ext-2000": (OK + b"Transfer-Encoding: chunked\r\n\r\n2;" + b"e" * 2000 + b"\r\nok\r\n0\r\n\r\n", True),
    "big-trailer": (OK + b"Transfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\nX-T: " + b"t" * 40000 + b"\r\n\r\n",
                    True),
    "gzip": (OK + b"Transfer-Encoding: gzip\r\n\r\nnot gzip", True),
    "two-lengths": (OK + b"Content-Length: 2\r\nContent-Length: 3\r\n\r\nok", True),
    "tab-chunked": (OK + b"Transfer-Encoding: chunked\t\r\n\r\n5\r\nhello\r\n0\r\n\r\n", False),
    "short-chunk": (OK + b"Transfer-Encoding: chunked\r\n\r\n1\r\nabc0\r\n\r\n", True),
    "not-http": (b"HXYZ/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", True),
    "space-name": (OK + b"X Y: 1\r\nContent-Length: 2\r\n\r\nok", True),
    "http2": (b"HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\nok", True),
    "upgrade": (b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\nConnection: upgrade\r\n\r\n", True),
    "fields": (OK + b"".join(b"X-%d: 1\r\n" % i for i in range(130)) + b"Content-Length: 2\r\n\r\nok", True),
    "extra": (OK + b"Content-Length: 2\r\n\r\nokAND MORE", True),
}


class FakeTarget:
    """Listens on a dead target's port: health probes get that target's last health answer, /s3 requests the
    answer of the current mode."""

    def __init__(self, port, health):
        self.mode, self.health, self.conns = "ok", health, []
        self.ls = socket.socket()
        self.ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        deadline = time.time() + 10
        while True:  # the killed target's socket may linger a moment
            try:
                self.ls.bind(("127.0.0.1", port))
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.1)
        self.ls.listen(64)
        threading.Thread(target=self.accept, daemon=True).start()

    def accept(self):
        while True:
            try:
                sk, _ = self.ls.accept()
            except OSError:
                return
            self.conns.append(sk)
            threading.Thread(target=self.serve, args=(sk,), daemon=True).start()

    def serve(self, sk):
        buf = b""
        sk.settimeout(60)
        try:
            while True:
                while b"\r\n\r\n" not in buf:
                    d = sk.recv(65536)
                    if not d:
                        return
                    buf += d
                head, buf = buf.split(b"\r\n\r\n", 1)
                path = head.split(b" ")[1]
                if not path.startswith(b"/s3/"):
                    sk.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                               % len(self.health) + self.health)
                    continue
                data, close = ANSWERS[self.mode]
                if self.mode == "silent":
                    time.sleep(20)
                    return
                if self.mode == "chunked-reset":
                    self.chunked_reset(sk)
                    return
                if self.mode == "head-stray-body" and head.startswith(b"HEAD "):  # the body comes late
                    sk.sendall(OK + b"Content-Length: 2\r\n\r\n")
                    time.sleep(0.05)
                    sk.sendall(b"ok")
                    continue
                if head.startswith(b"HEAD "):  # no body (a peer that sends one spoils the kept connection)
                    data = data[:data.index(b"\r\n\r\n") + 4]
                for i, piece in enumerate(data if isinstance(data, list) else [data]):
                    if i:
                        time.sleep(0.05)
                    sk.sendall(piece)
                if self.mode == "pieces":
                    time.sleep(0.3)
                    sk.sendall(BIG[100000:])
                if close:
                    return
        except OSError:
            pass
        finally:
            sk.close()

    def chunked_reset(self, sk):
        """chunks until the gateway takes no more (its ring and the socket buffers are full: the client does not
        read), then a reset"""
        sk.sendall(OK + b"Transfer-Encoding: chunked\r\n\r\n")
        sk.settimeout(3)
        piece = b"%x\r\n" % 65536 + b"z" * 65536 + b"\r\n"
        try:
            for _ in range(2000):
                sk.sendall(piece)
        except OSError:
            pass
        sk.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.reset_done = True

    def close(self):
        """stop listening and end every connection (shutdown: a close would not wake the threads in accept and
        recv, and the sockets would stay open)"""
        for sk in [self.ls] + self.conns:
            try:
                sk.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        self.ls.close()


class S3ForwardTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shale-test-")
        cls.c = Cluster(cls.tmp, proxies=1, targets=2).start()
        cls.fake = None
        try:
            wait_until(lambda: len(cls.c.smap()["tmap"]) == 2, 30, what="2 targets")
        except Exception:
            cls.c.stop()
            raise

    @classmethod
    def tearDownClass(cls):
        if cls.fake:
            cls.fake.close()
        cls.c.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def owner_port(self, key):
        r = requests.get("%s/v1/objects/fwd/%s" % (self.c.url, key), allow_redirects=False, timeout=10)
        return int(r.headers["Location"].split("/")[2].split(":")[1])

    def s3err(self, r, status, code, *words):
        self.assertEqual(r.status_code, status, r.text[:300])
        root = ET.fromstring(r.content)
        self.assertEqual(root.findtext("Code"), code, r.text)
        for w in words:
            self.assertIn(w, root.findtext("Message"), r.text)

    def fake_target(self):
        """(once) kill the target that owns a key and listen on its port: the object's URL, the fake, the URL of
        an object on the other target"""
        cls = S3ForwardTest
        if cls.fake:
            return cls.url, cls.fake, cls.other_url
        s3 = self.c.url + "/s3"
        self.assertEqual(requests.put(s3 + "/fwd", timeout=30).status_code, 200)
        ports = {n["name"]: n["port"] for n in self.c.topology()["nodes"]}
        keys = {}
        for i in range(200):
            keys.setdefault(self.owner_port("k%d" % i), "k%d" % i)
        victim = [n for n in ports if n.startswith("t") and ports[n] in keys][0]
        vport = ports[victim]
        other = [k for p, k in keys.items() if p != vport][0]
        self.assertEqual(requests.put("%s/fwd/%s" % (s3, other), data=b"other", timeout=30).status_code, 200)
        key = keys[vport]
        url = "%s/fwd/%s" % (s3, key)
        self.assertEqual(requests.get(url, timeout=30).status_code, 404)  # a kept connection to the victim now
        health = requests.get("http://127.0.0.1:%d/v1/health?cii=true" % vport, timeout=10).content
        requests.put(self.c.url + "/v1/cluster", json={"action": "set-config",
                                                       "value": {"timeout": {"send_file_time": "2s"}}}, timeout=30)
        self.c.kill9(victim)
        cls.fake, cls.url, cls.other_url, cls.vport = FakeTarget(vport, health), url, "%s/fwd/%s" % (s3, other), vport
        return cls.url, cls.fake, cls.other_url

    def test_client_reads_after_reset(self):
        """A chunked answer fills the out ring while the client does not read; the target resets the connection
        (or the forward's limit ends it first): the client reading afterwards gets a cut answer, and the gateway
        lives on (it crashed unpausing a forward that had let its connection go)."""
        url, fake, _ = self.fake_target()
        fake.mode, fake.reset_done = "chunked-reset", False
        r = requests.get(url, timeout=60, stream=True)
        self.assertEqual(r.status_code, 200)
        wait_until(lambda: fake.reset_done, 30, what="the fake target's reset")
        time.sleep(0.5)  # (the gateway sees the reset)
        try:
            got = sum(len(b) for b in r.iter_content(65536))
        except requests.exceptions.RequestException:
            got = None
        self.assertTrue(got is None or got < 2000 * 65536, got)
        fake.mode = "ok"  # and the gateway still serves (a crashed one would not answer)
        self.assertEqual(requests.get(url, timeout=30).content, b"ok")

    def test_idle_connections_after_pull(self):
        """Sequential GETs of an answer over 64 KiB (out_read receives it) reuse the kept connection: each
        forward lets it go once the body is in (they held it up to timeout.send_file_time, and each GET opened
        another connection to the target)."""
        url, fake, _ = self.fake_target()
        fake.mode = "big"
        s = requests.Session()
        s.get(url, timeout=30)
        n0 = len(fake.conns)
        for _ in range(100):
            r = s.get(url, timeout=30)
            self.assertEqual((r.status_code, len(r.content)), (200, 200000))
        # (0 or 1 here; 14 to 19 when each forward kept its connection until the limit)
        self.assertLess(len(fake.conns) - n0, 8, "new target connections for 100 sequential GETs")

    def test_kept_connection_stray_body(self):
        """A target sends a body after its answer to a HEAD, a moment late: the next forward on that kept
        connection still gets its own answer (it read the stray body as its answer: 502)."""
        url, fake, _ = self.fake_target()
        s = requests.Session()
        for i in range(20):
            fake.mode = "head-stray-body"
            r = s.head(url, timeout=30)
            self.assertEqual((r.status_code, r.headers.get("Content-Length")), (200, "2"))
            fake.mode = "ok"
            r = s.get(url, timeout=30)
            self.assertEqual((i, r.status_code, r.content), (i, 200, b"ok"), r.text[:300])

    def test_framing_edges(self):
        """What the answer's parser reads and the bounds it keeps: a header value split across reads is one
        value (not a folded line), an interim 103's fields are dropped, 3000 small chunks with extensions come
        through, "chunked" followed by a tab is chunked, a 1000-byte chunk extension passes and a 2000-byte one
        or trailer fields over 32 KiB or a chunk longer than its size cut the answer (a lenient parser passed
        that chunk's first bytes as the whole body: a wrong answer, not a cut one); a Transfer-Encoding other
        than chunked, two different Content-Lengths, a field name with a space, HTTP/2.0 or no HTTP at all, a
        101 switch, more than 128 fields and bytes after the answer are 502s naming the fault."""
        url, fake, _ = self.fake_target()
        s = requests.Session()
        for mode, want in (("split", b"yes"), ("hints", b"yes"), ("tiny-chunks", b"z" * 3000), ("ext-1000", b"ok"),
                           ("tab-chunked", b"hello")):
            fake.mode = mode
            r = s.get(url, timeout=30)
            self.assertEqual((mode, r.status_code, r.content), (mode, 200, want), r.text[:300])
            if mode == "split":
                self.assertEqual(r.headers.get("X-Split"), "abcd")
            if mode == "hints":
                self.assertNotIn("Link", r.headers)
        for mode, wrong in (("ext-2000", b"ok"), ("big-trailer", b"ok"), ("short-chunk", b"a")):  # under way: cut
            fake.mode = mode
            try:
                r = requests.get(url, timeout=30)
                got = (r.status_code, r.content)
            except requests.exceptions.RequestException:
                got = None
            self.assertTrue(got is None or got[1] != wrong, (mode, got))
        for mode, words in (("gzip", ["Transfer-Encoding other than chunked"]),
                            ("two-lengths", ["Content-Length"]), ("space-name", ["header line"]),
                            ("http2", ["status line"]), ("not-http", ["status line"]), ("upgrade", ["101 switch"]),
                            ("fields", ["more than 128 header fields"]),
                            ("extra", ["more body than its Content-Length"])):
            fake.mode = mode
            r = s.get(url, timeout=30)
            self.s3err(r, 502, "InternalError", "malformed", *words)
            self.assertIn(str(self.vport), r.text)
        fake.mode = "ok"
        self.assertEqual(s.get(url, timeout=30).content, b"ok")

    def test_misbehaving_target(self):
        """Every framing of a good answer comes through whole; every malformed answer is a 502 naming what was
        wrong, a silent target a 503 after timeout.send_file_time, a body cut mid-stream a cut answer; the
        gateway goes on serving, the other target's objects too. (It runs last of all: it ends the fake.)"""
        url, fake, other_url = self.fake_target()
        vport, s = self.vport, requests.Session()

        # good answers, on kept connections and after closes
        for mode, want in (("ok", b"ok"), ("chunked", b"hello world"), ("to-close", b"until the close"),
                           ("ok", b"ok"), ("interim", b"yes"), ("ok", b"ok")):
            fake.mode = mode
            r = s.get(url, timeout=30)
            self.assertEqual((mode, r.status_code, r.content), (mode, 200, want), r.text[:300])
        self.assertNotIn("X-T", r.headers)
        fake.mode = "pieces"
        for _ in range(3):
            r = s.get(url, timeout=30)
            self.assertEqual((r.status_code, len(r.content)), (200, len(BIG)), r.text[:300])
            self.assertTrue(r.content == BIG, "the streamed body came out of order")
        fake.mode = "ok"
        r = s.head(url, timeout=30)
        self.assertEqual((r.status_code, r.headers.get("Content-Length")), (200, "2"))

        # malformed answers: 502 with what was wrong
        for mode, words in (("garbage", ["malformed", "status line"]), ("big-header", ["over 32 KiB"]),
                            ("bad-length", ["Content-Length"]), ("length-and-chunked", ["both"]),
                            ("folded", ["header line"]), ("short", ["closed the connection"]),
                            ("low-status", ["status under 100"]), ("interims", ["more than 8 interim"])):
            fake.mode = mode
            r = s.get(url, timeout=30)
            self.s3err(r, 502, "InternalError", *words)
            self.assertIn(str(vport), r.text)

        # a malformed chunk or a large body cut off once the answer is under way: the client's answer is cut
        for mode, whole in (("bad-chunk", 0), ("no-chunk-size", 0), ("long-cut", 8 << 20)):
            fake.mode = mode
            try:
                r = requests.get(url, timeout=30)
                got = (r.status_code, len(r.content))
            except requests.exceptions.RequestException:  # (urllib3 2 checks the length, 1 does not)
                got = None
            self.assertTrue(got is None or (whole and got[1] < whole), (mode, got))

        # a target that never answers: 503 after timeout.send_file_time (2 s), not the client's own timeout
        fake.mode = "silent"
        t0 = time.time()
        r = s.get(url, timeout=60)
        self.s3err(r, 503, "ServiceUnavailable", "sent nothing for 2000 ms")
        self.assertLess(time.time() - t0, 30)

        # and the gateway still serves both
        fake.mode = "ok"
        self.assertEqual(s.get(url, timeout=30).content, b"ok")
        self.assertEqual(s.get(other_url, timeout=30).content, b"other")

        # nothing listens on the port any more (the kept connections close too): 503, cannot connect
        fake.close()
        r = s.get(url, timeout=30)
        self.s3err(r, 503, "ServiceUnavailable", "cannot connect")


if __name__ == "__main__":
    main()
