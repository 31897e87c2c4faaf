# SPDX-License-Identifier: MIT
"""A gateway answers a redirectable PUT from its headers (issue 37): AIStore's
Python SDK, over TLS, sends "PUT ... Content-Length: N" to the gateway with
no body, waits for the 307, and sends the bytes to the target it names. The
gateway must not wait for a body it will not read. Checked on plain HTTP and
on TLS (a playground with --https), for that client (a raw socket writing
exactly what the SDK writes, then the body to the Location), with
"Expect: 100-continue", and for clients that send the body at once
(requests, curl), whose bodies the gateway still reads and drops so that
their connection survives the redirect."""
import os
import socket
import ssl
import subprocess
import time
import unittest

import requests

from harness import main, start_cluster, stop_cluster


def headers_only_put(host, port, ca, path, n, expect=False, timeout=5):
    """Send a PUT's headers announcing n bytes and nothing else; the status
    line, headers and seconds to the answer."""
    s = socket.create_connection((host, port), timeout=timeout)
    if ca:
        ctx = ssl.create_default_context(cafile=ca)
        ctx.check_hostname = False
        s = ctx.wrap_socket(s)
    try:
        t0 = time.time()
        s.sendall(("PUT %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Length: %d\r\n%s\r\n" %
                   (path, host, port, n, "Expect: 100-continue\r\n" if expect else "")).encode())
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = s.recv(4096)
            if not chunk:
                break
            data += chunk
        head = data.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
        hdrs = {k.strip().lower(): v.strip() for k, v in (h.split(":", 1) for h in head[1:] if ":" in h)}
        return head[0], hdrs, time.time() - t0
    finally:
        s.close()


class PutRedirect:
    https = False

    @classmethod
    def setUpClass(cls):
        start_cluster(cls, targets=2, prefix="shale-putredir-")
        r = cls.s.post(cls.url + "/v1/buckets/up", json={"action": "create-bck"}, timeout=30)
        assert r.status_code == 200, r.text

    @classmethod
    def tearDownClass(cls):
        stop_cluster(cls)

    def ca(self):
        return self.c.ca if self.https else None

    def test_headers_only_client_gets_the_redirect_at_once(self):
        body = os.urandom(300_000)
        for expect in (False, True):
            name = "sdk-%s.bin" % ("expect" if expect else "plain")
            status, hdrs, secs = headers_only_put("127.0.0.1", self.c.base, self.ca(), "/v1/objects/up/" + name,
                                                  len(body), expect=expect)
            self.assertIn(" 307 ", status, (status, hdrs))
            self.assertLess(secs, 2.0, "the gateway waited %.1f s for a body it does not read" % secs)
            loc = hdrs["location"]
            self.assertTrue(loc.startswith("https://" if self.https else "http://"), loc)
            # the SDK then sends the bytes to the target the gateway named
            r = self.s.put(loc, data=body, timeout=60)
            self.assertEqual(r.status_code, 200, r.text)
            self.assertEqual(self.s.get(self.url + "/v1/objects/up/" + name, timeout=60).content, body)

    def test_clients_that_send_at_once_still_work(self):
        for size in (1, 70_000, 1_000_000, 5_000_000):
            data = os.urandom(size)
            for i in range(3):
                name = "req-%d-%d" % (size, i)
                r = self.s.put(self.url + "/v1/objects/up/" + name, data=data, timeout=60)
                self.assertEqual(r.status_code, 200, r.text)
                self.assertEqual(self.s.get(self.url + "/v1/objects/up/" + name, timeout=60).content, data)
        path = os.path.join(self.tmp, "curl.bin")
        with open(path, "wb") as f:
            f.write(os.urandom(2_000_000))
        args = ["curl", "-sSfL", "-T", path, self.url + "/v1/objects/up/curl.bin"]
        if self.https:
            args[1:1] = ["--cacert", self.c.ca]
        p = subprocess.run(args, capture_output=True, text=True, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(path, "rb") as f:
            self.assertEqual(self.s.get(self.url + "/v1/objects/up/curl.bin", timeout=60).content, f.read())


class PlainHttp(PutRedirect, unittest.TestCase):
    https = False


class Tls(PutRedirect, unittest.TestCase):
    https = True

    @classmethod
    def setUpClass(cls):
        import harness
        import tempfile
        cls.tmp = tempfile.mkdtemp(prefix="shale-putredir-tls-")
        cls.c = harness.Cluster(cls.tmp, proxies=1, targets=2).start("--https")
        cls.url = cls.c.url
        cls.s = requests.Session()
        cls.s.trust_env = False  # (REQUESTS_CA_BUNDLE would override verify)
        cls.s.verify = cls.c.ca
        harness.wait_until(lambda: len(cls.c.smap()["tmap"]) == 2, 30, what="2 targets")
        r = cls.s.post(cls.url + "/v1/buckets/up", json={"action": "create-bck"}, timeout=30)
        assert r.status_code == 200, r.text


if __name__ == "__main__":
    main()
