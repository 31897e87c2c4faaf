#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""A remote that limits every connection to a fixed rate, as object stores do per stream (a single S3 GET
often tops out near 100 MB/s while many GETs in parallel go much further). It serves the files of a directory
as BUCKET/KEY in path style: GET (with a Range), HEAD of an object, HEAD of a bucket; no listing, no writes,
no signature check. For bench/backend_bench.py --slow-mbps, which compares a cold GET in one stream with one in
parallel ranges against it, on loopback only.

usage: slow_remote.py DIR PORT MB_PER_S
"""
import email.utils
import hashlib
import http.server
import os
import re
import sys
import time

ROOT, PORT, RATE = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]) * 1e6
BLOCK = 256 * 1024


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def path_of(self):
        p = self.path.split("?", 1)[0].lstrip("/")
        f = os.path.realpath(os.path.join(ROOT, p))
        return f if f.startswith(os.path.realpath(ROOT) + os.sep) or f == os.path.realpath(ROOT) else None

    def head_common(self, f):
        st = os.stat(f)
        etag = hashlib.md5(("%s-%d-%d" % (f, st.st_size, st.st_mtime_ns)).encode()).hexdigest()
        self.send_header("ETag", '"%s"' % etag)
        self.send_header("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True))
        self.send_header("Accept-Ranges", "bytes")
        return st.st_size

    def answer(self, body):
        f = self.path_of()
        if f is None or not os.path.exists(f):
            self.send_response(404)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if os.path.isdir(f):  # HEAD of a bucket
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        size = os.path.getsize(f)
        start, end = 0, size - 1
        m = re.match(r"bytes=(\d+)-(\d*)$", self.headers.get("Range", ""))
        if m:
            start = int(m.group(1))
            end = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
            if start >= size:
                self.send_response(416)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(206)
            self.send_header("Content-Range", "bytes %d-%d/%d" % (start, end, size))
        else:
            self.send_response(200)
        self.head_common(f)
        n = end - start + 1
        self.send_header("Content-Length", str(n))
        self.end_headers()
        if not body:
            return
        t0 = time.time()
        sent = 0
        with open(f, "rb") as fh:
            fh.seek(start)
            while sent < n:
                b = fh.read(min(BLOCK, n - sent))
                if not b:
                    break
                self.wfile.write(b)
                sent += len(b)
                ahead = sent / RATE - (time.time() - t0)  # this connection's rate, no more
                if ahead > 0:
                    time.sleep(ahead)

    def do_GET(self):
        self.answer(True)

    def do_HEAD(self):
        self.answer(False)


http.server.ThreadingHTTPServer.daemon_threads = True
http.server.ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
