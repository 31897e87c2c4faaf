# SPDX-License-Identifier: MIT
"""One HTTPS playground (a gateway, a target) for three CLI verbs the server lacked:
* `tls load-certificate [NODE]` / `tls show [NODE]` (= `show tls`): PUT /v1/cluster/load-x509 and
  GET /v1/cluster?what=tls_certificate (404/400 before): the cert files replaced, every node serves the new
  certificate to new connections (its serial seen by python's ssl); a broken file is an error naming it and
  the old certificate stays;
* `config reset [NODE]`: PUT /v1/cluster|daemon reset-config (refused before): set-config changes dropped for
  the config files' values, and so after a restart too;
* `auth show|set config`: AuthN's GET/PUT /v1/daemon (not served before): auth.expiration_time=2m gives
  logins tokens that expire in 2 minutes; a bad key is refused, named."""
import base64
import datetime
import ipaddress
import json
import os
import shutil
import socket
import ssl
import tempfile
import time
import unittest

import requests

from harness import Cluster, main, wait_until


def make_cert(ca_crt, ca_key, cn):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID
    key = ec.generate_private_key(ec.SECP256R1())
    with open(ca_key, "rb") as f:
        cak = serialization.load_pem_private_key(f.read(), None)
    with open(ca_crt, "rb") as f:
        issuer = x509.load_pem_x509_certificate(f.read()).subject
    now = datetime.datetime.now(datetime.timezone.utc)
    crt = (x509.CertificateBuilder()
           .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
           .issuer_name(issuer).public_key(key.public_key()).serial_number(x509.random_serial_number())
           .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=3))
           .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                       x509.DNSName("localhost")]), critical=False)
           .sign(cak, hashes.SHA256()))
    return (crt.serial_number, crt.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def served_serial(port, ca):
    """the serial of the certificate a new TLS connection to 127.0.0.1:port gets"""
    from cryptography import x509
    ctx = ssl.create_default_context(cafile=ca)
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
            return x509.load_der_x509_certificate(t.getpeercert(binary_form=True)).serial_number


class TestCLITLS(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shale-tls-cli-")
        cls.c = Cluster(cls.tmp, proxies=1, targets=1).start("--https")
        cls.s = requests.Session()
        cls.s.trust_env = False
        cls.s.verify = cls.c.ca
        wait_until(lambda: len(cls.c.smap()["tmap"]) == 1, 30, what="the target")
        smap = cls.c.smap()
        cls.pid, cls.tid = list(smap["pmap"])[0], list(smap["tmap"])[0]
        cls.tls = os.path.join(cls.c.dir, "tls")
        cls.ports = [n["port"] for n in cls.c.topology()["nodes"]]

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def shale(self, *args):
        return self.c.cli(*args, check=False)

    def write_pair(self, crt, key):
        for name, data in (("node.key", key), ("node.crt", crt)):
            with open(os.path.join(self.tls, name), "wb") as f:
                f.write(data)

    def test_tls_load_and_show(self):
        serial, crt, key = make_cert(os.path.join(self.tls, "ca.crt"), os.path.join(self.tls, "ca.key"), "rotated")
        old = served_serial(self.ports[0], self.c.ca)
        self.assertNotEqual(old, serial)
        self.write_pair(crt, key)
        p = self.shale("tls", "load-certificate")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("serial %d" % serial, p.stdout)
        for port in self.ports:  # every node, a new connection: the new certificate
            self.assertEqual(served_serial(port, self.c.ca), serial, port)
        for argv in (("tls", "show"), ("show", "tls")):
            p = self.shale(*argv)
            self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertEqual(p.stdout.count("serial-number          %d" % serial), 2, p.stdout)
            self.assertIn("CN=rotated", p.stdout)
            self.assertIn("IP:127.0.0.1, DNS:localhost", p.stdout)
        p = self.shale("tls", "show", "t[%s]" % self.tid, "--json")
        self.assertEqual(p.returncode, 0, p.stderr)
        info = json.loads(p.stdout)
        self.assertEqual(list(info), [self.tid])
        self.assertEqual(info[self.tid]["serial-number"], str(serial))
        self.assertEqual(info[self.tid]["certificate-file"], os.path.join(self.tls, "node.crt"))
        for k in ("subject", "issuer", "not-before", "not-after", "public-key-algorithm"):
            self.assertTrue(info[self.tid].get(k), (k, info))
        # one node only
        serial2, crt2, key2 = make_cert(os.path.join(self.tls, "ca.crt"), os.path.join(self.tls, "ca.key"), "t-only")
        self.write_pair(crt2, key2)
        p = self.shale("tls", "load-certificate", "t[%s]" % self.tid)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(served_serial(self.ports[1], self.c.ca), serial2)
        self.assertEqual(served_serial(self.ports[0], self.c.ca), serial)  # the gateway was not asked
        # a broken certificate file: non-zero, the file named, the old certificate still served
        with open(os.path.join(self.tls, "node.crt"), "wb") as f:
            f.write(b"-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")
        p = self.shale("tls", "load-certificate")
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn(os.path.join(self.tls, "node.crt"), p.stderr)
        self.assertIn("stays in use", p.stderr)
        self.assertEqual(served_serial(self.ports[0], self.c.ca), serial)
        os.unlink(os.path.join(self.tls, "node.crt"))  # missing: the same
        p = self.shale("tls", "load-certificate", "t[%s]" % self.tid)
        self.assertNotEqual(p.returncode, 0, p.stdout)
        self.assertIn("cannot read the certificate %s" % os.path.join(self.tls, "node.crt"), p.stderr)
        self.assertEqual(served_serial(self.ports[1], self.c.ca), serial2)
        self.write_pair(crt, key)  # (the cluster's pair again)
        self.assertEqual(self.shale("tls", "load-certificate").returncode, 0)
        # bad arguments
        p = self.shale("tls", "show", "t[nosuch]")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("nosuch", p.stderr)
        p = self.shale("tls", "load-certificate", "nosuch")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("nosuch", p.stderr)
        p = self.shale("tls", "show", "--bogus")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("--bogus", p.stderr)

    def node_conf(self, nid):
        h = {"Ais-Node-Id": nid}
        return self.s.get(self.c.url + "/v1/reverse/daemon?what=config", headers=h, timeout=10).json()

    def authn_ttl(self):
        u = "u%d" % int(time.time() * 1000)
        r = self.s.post(self.c.url + "/v1/users", json={"id": u, "pass": "pw-" + u, "roles": []}, timeout=10)
        self.assertEqual(r.status_code, 200, r.text)
        r = self.s.post(self.c.url + "/v1/users/" + u, json={"password": "pw-" + u, "expires_in": None}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        part = r.json()["token"].split(".")[1]
        claims = json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))
        return claims["exp"] - time.time()

    def restart(self):
        self.c.cli("playground", "stop", "--dir", self.c.dir)
        self.c.cli("playground", "start", "--dir", self.c.dir)
        wait_until(lambda: len(self.c.smap()["tmap"]) == 1, 60, what="the target back")

    def test_tls_validate_certificates(self):
        """every node's certificate valid (or expiring: a warning), all from the playground's CA"""
        p = self.c.cli("tls", "validate-certificates", check=False)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        nodes = [n["name"] for n in self.c.topology()["nodes"]]
        self.assertEqual(len([ln for ln in p.stdout.splitlines() if ": OK: " in ln or ": WARNING: valid" in ln]),
                         len(nodes), p.stdout)
        self.assertIn("All %d nodes have valid certificates" % len(nodes), p.stdout)

    def test_config_reset_and_authn_config(self):
        file_level = self.node_conf(self.pid)["log"]["level"]
        new_level = "4" if str(file_level) != "4" else "2"
        # AuthN's config: set, shown, in effect for the next login
        p = self.shale("auth", "set", "config", "expiration_time=2m")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        p = self.shale("auth", "show", "config")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"(?m)^auth\.expiration_time\s+2m$")
        self.assertNotRegex(p.stdout, r"(?m)^auth\.secret[ \t]+[^*\s]")  # never the secret itself
        ttl = self.authn_ttl()
        self.assertTrue(100 <= ttl <= 125, ttl)
        p = self.shale("auth", "show", "config", "--json")
        self.assertEqual(json.loads(p.stdout)["auth"]["expiration_time"], "2m")
        for argv, word in ((("auth", "set", "config", "bogus=1"), "bogus"),
                           (("auth", "set", "config", "expiration_time=10s"), "expiration_time"),
                           (("auth", "set", "config", "log.level=9"), "log.level")):
            p = self.shale(*argv)
            self.assertNotEqual(p.returncode, 0, argv)
            self.assertIn(word, p.stderr, argv)
        r = self.s.put(self.c.url + "/v1/daemon", json={"auth": {"nosuch": 1}}, timeout=10)
        self.assertEqual(r.status_code, 400)
        self.assertIn("auth.nosuch", r.text)
        r = self.s.put(self.c.url + "/v1/daemon", json={"auth": {"secret": ""}}, timeout=10)
        self.assertEqual(r.status_code, 400)
        self.assertIn("secret defined but empty string", r.text)
        self.assertEqual(self.s.get(self.c.url + "/v1/daemon", timeout=10).json()["auth"]["expiration_time"], "2m")

        # config reset NODE: that node only
        self.shale("config", "cluster", "log.level=" + new_level)
        self.assertEqual(str(self.node_conf(self.tid)["log"]["level"]), new_level)
        p = self.shale("config", "reset", "t[%s]" % self.tid)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(str(self.node_conf(self.tid)["log"]["level"]), str(file_level))
        self.assertEqual(str(self.node_conf(self.pid)["log"]["level"]), new_level)
        p = self.shale("config", "reset", "t[nosuch]")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("nosuch", p.stderr)

        # a restart keeps the runtime changes (and the node's reset)
        self.restart()
        self.assertEqual(str(self.node_conf(self.pid)["log"]["level"]), new_level)
        self.assertEqual(str(self.node_conf(self.tid)["log"]["level"]), str(file_level))
        self.assertEqual(self.s.get(self.c.url + "/v1/daemon", timeout=10).json()["auth"]["expiration_time"], "2m")

        # config reset: every node back to the files, after a restart too
        p = self.shale("config", "reset")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        for nid in (self.pid, self.tid):
            wait_until(lambda: str(self.node_conf(nid)["log"]["level"]) == str(file_level), 10, what="reset")
            self.assertEqual(self.node_conf(nid)["auth"]["expiration_time"], "24h")
        p = self.shale("config", "cluster", "log.level")
        self.assertRegex(p.stdout, r"(?m)^log\.level\s+%s$" % file_level)
        self.restart()
        for nid in (self.pid, self.tid):
            self.assertEqual(str(self.node_conf(nid)["log"]["level"]), str(file_level))
        self.assertEqual(self.s.get(self.c.url + "/v1/daemon", timeout=10).json()["auth"]["expiration_time"], "24h0m")
        p = self.shale("config", "reset", "a", "b")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("b", p.stderr)


if __name__ == "__main__":
    main()
