# SPDX-License-Identifier: MIT
"""Defects found by probing a running cluster from outside: odd bytes on the wire, over-size metadata, junk
ranges and peer payloads, shutdown with a dead primary. Each test sends what the probe sent and checks that the
node refuses it cleanly and changes nothing."""
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import unittest

import requests

from harness import Cluster, NodeTest, SHALED, _zombie, cluster_sig, main, wait_until


def raw_request(port, data, timeout=10):
    """Send data as is on a new connection; return everything the node answers until it closes (bounded)."""
    so = socket.create_connection(("127.0.0.1", port), timeout=timeout)
    out = b""
    deadline = time.time() + timeout
    try:
        so.sendall(data)
        while time.time() < deadline:
            d = so.recv(65536)
            if not d:
                break
            out += d
    except (socket.timeout, ConnectionResetError):
        pass
    finally:
        so.close()
    return out


def status_of(reply):
    """The status code of a raw HTTP reply (0: empty reply)."""
    if not reply.startswith(b"HTTP/1."):
        return 0
    return int(reply.split(b" ", 2)[1])


class ProbeNodeTest(NodeTest):
    """A standalone node: request-level defects."""

    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        r = cls.s.post(cls.url + "/v1/buckets/pb", params={"provider": "ais"},
                       json={"action": "create-bck", "name": "", "value": None}, timeout=30)
        assert r.status_code == 200, r.text

    def head_status(self, bucket, obj):
        return self.s.head(self.url + "/v1/objects/%s/%s" % (bucket, obj), params={"provider": "ais"},
                           timeout=30).status_code

    # 3. a raw NUL in the request line named another object
    def test_nul_in_request_line(self):
        for q in (b"", b"?provider=ais"):
            reply = raw_request(self.node.port, b"PUT /v1/objects/pb/zz\x00evil" + q + b" HTTP/1.1\r\nHost: x\r\n"
                                b"Content-Length: 1\r\nConnection: close\r\n\r\nx")
            self.assertEqual(status_of(reply), 400, reply[:300])
            self.assertIn(b"NUL", reply)
        self.assertEqual(self.head_status("pb", "zz"), 404, "the object before the NUL was stored")
        # a target with spaces (tolerated by the parser) is not mistaken for one with a NUL
        reply = raw_request(self.node.port, b"PUT /v1/objects/pb/okay  HTTP/1.1\r\nHost: x\r\n"
                            b"Content-Length: 1\r\nConnection: close\r\n\r\nx")
        self.assertEqual(status_of(reply), 200, reply[:300])
        self.assertEqual(self.head_status("pb", "okay%20"), 200)  # (the name keeps the space)


if __name__ == "__main__":
    main()
