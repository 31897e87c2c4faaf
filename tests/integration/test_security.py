#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Security: the cluster secret and what it signs (peer calls, redirects, joins), client authentication with
AIStore-compatible JWTs (HS256 from the cluster's own AuthN, RS256 from an outside issuer), permissions, the AuthN
endpoints and `shale auth`, and the attacks of issue 18: forged metasync, rogue joins, replayed / expired /
altered redirect signatures, bad / alg:none / expired / other-cluster tokens, a user without permission, brute-force
logins. Each: refused, logged, nothing changed."""
import base64
import hashlib
import hmac
import json
import os
import shutil
import subprocess
import tempfile
import time
import unittest

import boto3
import botocore.config
import botocore.exceptions
import requests

from harness import SHALED, Cluster, Node, cluster_sig, main, wait_until


class SourceAdapter(requests.adapters.HTTPAdapter):
    """connections from another loopback address (a second client host, as far as the node can tell)"""

    def __init__(self, source, **kw):
        self.source = source
        super().__init__(**kw)

    def init_poolmanager(self, *a, **kw):
        kw["source_address"] = (self.source, 0)
        super().init_poolmanager(*a, **kw)


def b64u(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def jwt(claims, key, alg="HS256"):
    h = b64u(json.dumps({"alg": alg, "typ": "JWT"}).encode())
    p = b64u(json.dumps(claims).encode())
    if alg == "none":
        return "%s.%s." % (h, p)
    sig = hmac.new(key, ("%s.%s" % (h, p)).encode(), hashlib.sha256).digest()
    return "%s.%s.%s" % (h, p, b64u(sig))


def own_key(secret_path):
    """the key the cluster's AuthN signs with: derived from the cluster secret (server/node/auth.c)"""
    with open(secret_path) as f:
        sec = bytes.fromhex(f.read().strip())
    return hmac.new(sec, b"shale AuthN token key v1", hashlib.sha256).digest()


class IntraCluster(unittest.TestCase):
    """No client auth: the cluster secret alone keeps outsiders from the nodes' own endpoints and from writing to
    targets."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shale-sec-")
        cls.c = Cluster(cls.tmp, proxies=1, targets=2).start()
        cls.url = cls.c.url
        cls.s = requests.Session()
        wait_until(lambda: len(cls.c.smap()["tmap"]) == 2, 30, what="2 targets")
        cls.t0 = cls.c.node_url("t0")
        cls.secret = os.path.join(cls.c.dir, "p0", "cluster.secret")
        cls.s.post(cls.url + "/v1/buckets/sb", json={"action": "create-bck"}).raise_for_status()

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def bmd_version(self, url=None):
        return int(self.s.get((url or self.url) + "/v1/daemon?what=bmd").json()["version"])

    def test_secret_files(self):
        for n in ("p0", "t0", "t1"):
            st = os.stat(os.path.join(self.c.dir, n, "cluster.secret"))
            self.assertEqual(st.st_mode & 0o777, 0o600, n)
        with open(self.secret) as f, open(os.path.join(self.c.dir, "t0", "cluster.secret")) as g:
            self.assertEqual(f.read(), g.read())

    def test_forged_metasync(self):
        v = self.bmd_version(self.t0)
        doc = {"bmd": {"version": "999", "uuid": "x", "buckets": {}}}
        r = self.s.put(self.t0 + "/v1/metasync", json=doc)  # no signature
        self.assertEqual(r.status_code, 401, r.text)
        bad = cluster_sig(self.secret, "PUT", self.t0 + "/v1/metasync")
        parts = bad["Ais-Cluster-Auth"].split()
        parts[3] = "0" * 32  # a made-up signature
        r = self.s.put(self.t0 + "/v1/metasync", json=doc, headers={"Ais-Cluster-Auth": " ".join(parts)})
        self.assertEqual(r.status_code, 401, r.text)
        self.assertIn("does not match", r.json()["message"])
        # signed with another secret
        other = os.path.join(self.tmp, "other.secret")
        with open(other, "w") as f:
            f.write(os.urandom(32).hex())
        r = self.s.put(self.t0 + "/v1/metasync", json=doc, headers=cluster_sig(other, "PUT", self.t0 + "/v1/metasync"))
        self.assertEqual(r.status_code, 401, r.text)
        self.assertEqual(self.bmd_version(self.t0), v)
        self.assertEqual(self.s.head(self.url + "/v1/buckets/sb").status_code, 200)
        self.assertIn("refused PUT /v1/metasync", self.c.log("t0"))

    def test_signed_body(self):
        """a signed call's body is bound to the signature: the same header with another body is refused"""
        u = self.t0 + "/v1/metasync"
        body = json.dumps({}).encode()
        h = cluster_sig(self.secret, "PUT", u, body=body)
        r = self.s.put(u, data=b'{"bmd": {"version": "999"}}', headers=h)
        self.assertEqual(r.status_code, 401, r.text)
        self.assertIn("not the one", r.json()["message"])

    def test_signed_call_replayed_at_another_node(self):
        """a call signed for one node (its id, or its address) and captured on its way there is refused by every
        other node, even one that never saw it: the signature names its receiver (the build before took it at
        t1, which had not seen it yet)"""
        t1 = self.c.node_url("t1")
        smap = self.c.smap()
        ids = {sn["public_net"]["direct_url"].rstrip("/"): sid for sid, sn in smap["tmap"].items()}
        doc = json.dumps({}).encode()
        for dest in (None, ids[self.t0.rstrip("/")]):  # by address, and by node id as the nodes sign
            h = cluster_sig(self.secret, "PUT", self.t0 + "/v1/metasync", body=doc, dest=dest)
            r = self.s.put(t1 + "/v1/metasync", data=doc, headers=h)  # replayed where it was not going
            self.assertEqual(r.status_code, 401, r.text)
            self.assertIn("cluster signature is for another node", r.json()["message"])
            r = self.s.put(self.t0 + "/v1/metasync", data=doc, headers=h)  # where it was going: taken
            self.assertNotEqual(r.status_code, 401, r.text)
        # a header without a receiver (an older node's) is refused, saying why
        h = cluster_sig(self.secret, "GET", t1 + "/v1/internal/jobs?id=&kind=&active=false")
        parts = h["Ais-Cluster-Auth"].split()
        r = self.s.get(t1 + "/v1/internal/jobs?id=&kind=&active=false",
                       headers={"Ais-Cluster-Auth": " ".join(parts[:4])})
        self.assertEqual(r.status_code, 401, r.text)
        self.assertIn("names no receiver", r.json()["message"])

    def test_signed_call_once(self):
        """a correctly signed intra-cluster call passes (so the refusals above are about the signature), once:
        the same header again is a replay"""
        u = self.t0 + "/v1/internal/jobs?id=&kind=&active=false"
        h = cluster_sig(self.secret, "GET", u)
        self.assertEqual(self.s.get(u, headers=h).status_code, 200)
        r = self.s.get(u, headers=h)
        self.assertEqual(r.status_code, 401)
        self.assertIn("already used", r.json()["message"])
        r = self.s.get(u, headers=cluster_sig(self.secret, "GET", u, exp=int(time.time()) - 5))
        self.assertEqual(r.status_code, 401)
        self.assertIn("expired", r.json()["message"])
        # the signature covers the method and the request target
        h = cluster_sig(self.secret, "GET", u)
        self.assertEqual(self.s.get(u + "&x=1", headers=h).status_code, 401)
        self.assertEqual(self.s.delete(u, headers=h).status_code, 401)

    def test_rogue_join(self):
        sm = self.c.smap()
        body = {"snode": {"daemon_id": "rogue1", "daemon_type": "target",
                          "public_net": {"node_ip_addr": "127.0.0.1", "daemon_port": "9", "direct_url":
                                         "http://127.0.0.1:9"}}}
        r = self.s.post(self.url + "/v1/cluster/join", json=body)
        self.assertEqual(r.status_code, 401, r.text)
        self.assertEqual(self.c.smap()["version"], sm["version"])
        # a real target with a wrong secret cannot join, and says why
        n = Node(self.tmp, name="rogue", role="target", primary=self.url)
        with open(n.secret_path, "w") as f:
            f.write(os.urandom(32).hex())
        os.chmod(n.secret_path, 0o600)
        p = subprocess.run([SHALED, "--config", n.config_path, "--role", "target", "--bind", "127.0.0.1"],
                           capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("join refused", p.stderr)
        self.assertIn("cluster secret", p.stderr)
        self.assertEqual(len(self.c.smap()["tmap"]), 2)
        # ... nor one without any
        os.unlink(n.secret_path)
        p = subprocess.run([SHALED, "--config", n.config_path, "--role", "target", "--bind", "127.0.0.1"],
                           capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("no cluster secret", p.stderr)
        # ... nor one whose secret others can read
        with open(n.secret_path, "w") as f:
            f.write(open(self.secret).read())
        os.chmod(n.secret_path, 0o644)
        p = subprocess.run([SHALED, "--config", n.config_path, "--role", "target", "--bind", "127.0.0.1"],
                           capture_output=True, text=True, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("chmod 600", p.stderr)

    def test_direct_writes_and_admin_at_a_target(self):
        for q in ("", "?pid=x&utm=1", "?pid=x&utm=1&x=99999999999.ab&u=" + "0" * 32):
            r = self.s.put(self.t0 + "/v1/objects/sb/direct" + q, data=b"evil")
            self.assertEqual(r.status_code, 401, (q, r.text))
        r = self.s.put(self.t0 + "/v1/objects/sb/direct?pid=x&x=.ab&u=" + "0" * 32, data=b"evil")
        self.assertEqual(r.status_code, 401, r.text)
        self.assertIn("malformed redirect signature", r.json()["message"])
        self.assertEqual(self.s.head(self.url + "/v1/objects/sb/direct", allow_redirects=True).status_code, 404)
        r = self.s.put(self.t0 + "/v1/daemon", json={"action": "shutdown"})
        self.assertEqual(r.status_code, 401)
        self.assertEqual(self.s.get(self.t0 + "/v1/health").status_code, 200)
        # reads straight from a target stay allowed while client auth is off (as in AIStore)
        self.s.put(self.url + "/v1/objects/sb/r", data=b"ok").raise_for_status()
        for t in ("t0", "t1"):
            r = self.s.get(self.c.node_url(t) + "/v1/objects/sb/r")
            if r.status_code == 200:
                self.assertEqual(r.content, b"ok")

    def test_no_forged_log_lines(self):
        """a refused request's path is logged on one line, whatever bytes it holds"""
        r = self.s.put(self.t0 + "/v1/objects/sb/x%0AE%2000:00:00.000000%20fake.c:1%20forged", data=b"x")
        self.assertEqual(r.status_code, 401)
        log = self.c.log("t0")
        self.assertIn("\\nE 00:00:00.000000 fake.c:1 forged", log)
        self.assertFalse(any(ln.startswith("E 00:00:00.000000 fake.c:1") for ln in log.splitlines()))

    def test_redirect_signatures(self):
        r = self.s.put(self.url + "/v1/objects/sb/rd", data=b"one", allow_redirects=False)
        self.assertEqual(r.status_code, 307)
        loc = r.headers["Location"]
        self.assertRegex(loc, r"[?&]x=\d+\.[0-9a-f]+&u=[0-9a-f]{32}$")
        # altered: another object name, another method
        self.assertEqual(self.s.put(loc.replace("/rd?", "/rd2?"), data=b"x").status_code, 401)
        self.assertEqual(self.s.delete(loc).status_code, 401)
        self.assertEqual(self.s.put(loc, data=b"one").status_code, 200)
        r = self.s.put(loc, data=b"two")  # replayed
        self.assertEqual(r.status_code, 401)
        self.assertIn("already used", r.json()["message"])
        self.assertEqual(self.s.get(self.url + "/v1/objects/sb/rd").content, b"one")
        self.assertEqual(self.s.head(self.url + "/v1/objects/sb/rd2", allow_redirects=True).status_code, 404)
        self.assertIn("refused PUT /v1/objects/sb/rd", self.c.log("t0") + self.c.log("t1"))

    def test_zz_expired_redirect(self):
        self.s.put(self.url + "/v1/cluster", json={"action": "set-config",
                                                   "value": {"auth": {"intra_cluster": {"ttl": "1s"}}}}
                   ).raise_for_status()
        try:
            r = self.s.put(self.url + "/v1/objects/sb/exp", data=b"x", allow_redirects=False)
            time.sleep(2.5)
            r = self.s.put(r.headers["Location"], data=b"x")
            self.assertEqual(r.status_code, 401)
            self.assertIn("expired", r.json()["message"])
            self.assertEqual(self.s.head(self.url + "/v1/objects/sb/exp", allow_redirects=True).status_code, 404)
            # a fresh one works
            self.assertEqual(self.s.put(self.url + "/v1/objects/sb/exp", data=b"x").status_code, 200)
        finally:
            self.s.put(self.url + "/v1/cluster", json={"action": "set-config",
                                                       "value": {"auth": {"intra_cluster": {"ttl": "60s"}}}})
        r = self.s.put(self.url + "/v1/cluster", json={"action": "set-config",
                                                       "value": {"auth": {"intra_cluster": {"ttl": "0s"}}}})
        self.assertEqual(r.status_code, 400)

    def test_bind_default(self):
        """a hand-started shaled listens on the address it advertises, not on every interface"""
        n = Node(self.tmp, name="solo")
        p = subprocess.Popen([SHALED, "--config", n.config_path], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        try:
            n.proc = p
            n.wait_ready()
            out = subprocess.run(["ss", "-ltnH", "sport = :%d" % n.port], capture_output=True, text=True).stdout
            self.assertIn("127.0.0.1:%d" % n.port, out)
            self.assertNotIn("0.0.0.0:%d" % n.port, out)
            self.assertNotIn("*:%d" % n.port, out)
        finally:
            p.terminate()
            p.wait(20)


class ClientAuth(unittest.TestCase):
    """`playground start --auth`: tokens, roles, permissions, AuthN, the CLI, S3 with a token."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shale-auth-")
        cls.c = Cluster(cls.tmp, proxies=2, targets=2).start("--auth")
        cls.url = cls.c.url
        cls.p1 = cls.c.node_url("p1")
        cls.adm = requests.Session()
        cls.adm.headers.update(cls.c.admin_headers())
        wait_until(lambda: len(cls.c.smap()["tmap"]) == 2 and len(cls.c.smap()["pmap"]) == 2, 30, what="nodes")
        cls.uuid = cls.c.smap()["uuid"]
        cls.key = own_key(os.path.join(cls.c.dir, "p0", "cluster.secret"))
        for b in ("pub", "priv"):
            cls.adm.post(cls.url + "/v1/buckets/" + b, json={"action": "create-bck"}).raise_for_status()
        cls.adm.put(cls.url + "/v1/objects/pub/a", data=b"A").raise_for_status()
        cls.adm.put(cls.url + "/v1/objects/priv/s", data=b"S").raise_for_status()
        cls.c.cli("auth", "add", "role", "pubro", "ro", "--bucket", "ais://pub", "--desc", "read pub")
        cls.c.cli("auth", "add", "role", "lister", "LIST-BUCKETS")
        cls.c.cli("auth", "add", "user", "bob", "pubro", "lister", "--password", "bobpw")

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def login(self, user, pw, url=None):
        r = requests.post((url or self.url) + "/v1/users/" + user, json={"password": pw})
        self.assertEqual(r.status_code, 200, r.text)
        return r.json()["token"]

    def sess(self, tok):
        s = requests.Session()
        s.headers["Authorization"] = "Bearer " + tok
        return s

    def test_playground_files(self):
        for f in ("admin.password", "admin.token"):
            self.assertEqual(os.stat(os.path.join(self.c.dir, f)).st_mode & 0o777, 0o600)
        cfg = self.adm.get(self.url + "/v1/cluster?what=cluster_config").json()
        self.assertTrue(cfg["auth"]["client_auth_required"])

    def test_no_token_and_bad_tokens(self):
        time.sleep(1.1)  # refusals are logged at most ten a second: start a fresh second
        r = requests.get(self.url + "/v1/buckets")
        self.assertEqual(r.status_code, 401)
        self.assertIn("token required", r.json()["message"])
        now = int(time.time())
        good = {"sub": "admin", "iat": now, "exp": now + 600, "admin": True}
        self.assertEqual(self.sess(jwt(good, self.key)).get(self.url + "/v1/buckets").status_code, 200)
        cases = {
            "bad signature": jwt(good, b"not the key"),
            "alg none": jwt(good, b"", alg="none"),
            "expired": jwt(dict(good, exp=now - 5), self.key),
            "no exp": jwt({"sub": "admin", "admin": True}, self.key),
            "no sub": jwt({"exp": now + 600, "admin": True}, self.key),
            "garbage": "abc.def",
        }
        t = jwt(good, self.key).split(".")
        cases["altered claims"] = ".".join([t[0], b64u(json.dumps(dict(good, sub="mallory")).encode()), t[2]])
        h384 = b64u(json.dumps({"alg": "HS384"}).encode())
        cases["another alg"] = ".".join([h384, t[1], t[2]])
        for what, tok in cases.items():
            r = self.sess(tok).delete(self.url + "/v1/buckets/priv", json={"action": "destroy-bck"})
            self.assertEqual(r.status_code, 401, (what, r.text))
        # valid, but for another cluster: no permission here
        other = jwt({"sub": "bob", "iat": now, "exp": now + 600, "clusters": [{"id": "other-uuid", "perm": "262143"}]},
                    self.key)
        r = self.sess(other).delete(self.url + "/v1/buckets/priv", json={"action": "destroy-bck"})
        self.assertEqual(r.status_code, 403, r.text)
        mine = jwt({"sub": "bob", "iat": now, "exp": now + 600, "clusters": [{"id": self.uuid, "perm": "4096"}]},
                   self.key)
        self.assertEqual(self.sess(mine).get(self.url + "/v1/buckets").status_code, 200)
        self.assertEqual(self.adm.head(self.url + "/v1/buckets/priv").status_code, 200)
        log = self.c.log("p0")
        self.assertIn("bad signature", log)
        self.assertIn("token expired", log)

    def test_permissions(self):
        bob = self.sess(self.login("bob", "bobpw"))
        self.assertEqual(bob.get(self.url + "/v1/objects/pub/a").content, b"A")
        self.assertEqual(bob.get(self.url + "/v1/buckets").status_code, 200)
        self.assertEqual(bob.get(self.url + "/v1/buckets/pub").status_code, 200)
        for method, path, body in (("GET", "/v1/objects/priv/s", None), ("PUT", "/v1/objects/pub/b", b"x"),
                                   ("DELETE", "/v1/objects/pub/a", None),
                                   ("DELETE", "/v1/buckets/pub", {"action": "destroy-bck"}),
                                   ("POST", "/v1/buckets/new", {"action": "create-bck"}),
                                   ("POST", "/v1/buckets/pub?bck_to=ais/@%23/pubcopy/", {"action": "copy-bck"}),
                                   ("PATCH", "/v1/buckets/pub", {"action": "set-bprops", "value": {}}),
                                   ("PUT", "/v1/cluster", {"action": "set-config", "value": {}}),
                                   ("POST", "/v1/etl", {"name": "x"})):
            kw = {"json": body} if isinstance(body, dict) else {"data": body}
            for base in (self.url, self.p1):  # the primary, and a gateway that forwards to it
                r = bob.request(method, base + path, allow_redirects=False, **kw)
                self.assertEqual(r.status_code, 403, (method, path, base, r.text))
                self.assertIn('user \\"bob\\" lacks', r.text)
        # AuthN's own routes answer 401, as AIStore's AuthN does (403 is for its built-ins only)
        for base in (self.url, self.p1):
            r = bob.get(base + "/v1/users")
            self.assertEqual(r.status_code, 401, (base, r.text))
            self.assertIn('user \\"bob\\" lacks ADMIN', r.text)
        # easy URLs are checked as their /v1 form, also with S3 at the root or virtual-hosted
        self.assertEqual(bob.get(self.url + "/ais/pub/a").content, b"A")
        self.assertEqual(bob.get(self.url + "/ais/priv/s", allow_redirects=False).status_code, 403)
        self.adm.put(self.url + "/v1/cluster", json={"action": "set-config", "value": {
            "s3": {"root": True, "vhost_domain": "s3.local"}}}).raise_for_status()
        try:
            for h in ({}, {"Host": "127.0.0.1"}):
                r = bob.get(self.url + "/ais/priv/s", allow_redirects=False, headers=h)
                self.assertEqual(r.status_code, 403, r.text)
            r = bob.get(self.url + "/priv/s", allow_redirects=False)  # S3 at the root
            self.assertEqual(r.status_code, 403, r.text)
            self.assertIn("AccessDenied", r.text)
            r = bob.get(self.url + "/s", allow_redirects=False, headers={"Host": "priv.s3.local"})  # virtual host
            self.assertEqual(r.status_code, 403, r.text)
            self.assertEqual(bob.get(self.url + "/a", headers={"Host": "pub.s3.local"}).content, b"A")
        finally:
            self.adm.put(self.url + "/v1/cluster", json={"action": "set-config", "value": {
                "s3": {"root": False, "vhost_domain": ""}}}).raise_for_status()
        # get-batch reads every bucket it names
        r = bob.get(self.url + "/v1/ml/moss/pub", json={"in": [{"objname": "a"}, {"objname": "s", "bucket": "priv"}]})
        self.assertEqual(r.status_code, 403, r.text)
        self.assertEqual(self.adm.head(self.url + "/v1/buckets/pub").status_code, 200)
        self.assertEqual(self.adm.get(self.url + "/v1/objects/pub/a").content, b"A")
        self.assertEqual(self.adm.head(self.url + "/v1/objects/pub/b", allow_redirects=True).status_code, 404)
        # targets take no direct client requests with auth on, not even reads with a token
        for t in ("t0", "t1"):
            r = bob.get(self.c.node_url(t) + "/v1/objects/pub/a")
            self.assertEqual(r.status_code, 401)

    def test_bypasses_closed(self):
        """the ways around the checks a review found, each refused"""
        bob = self.sess(self.login("bob", "bobpw"))
        # an action on an object (the body names it) is checked before the redirect
        r = bob.post(self.url + "/v1/objects/priv/s", json={"action": "mpt-upload"}, allow_redirects=False)
        self.assertEqual(r.status_code, 403, r.text)
        r = self.adm.post(self.url + "/v1/objects/pub/mp", json={"action": "mpt-upload"}, allow_redirects=False)
        self.assertEqual(r.status_code, 307, r.text)
        self.assertIn("bh=", r.headers["Location"])
        up = self.adm.post(r.headers["Location"], json={"action": "mpt-upload"}).text.strip().strip('"')
        self.assertTrue(up)
        # ... and its body cannot be swapped at the target
        r = self.adm.post(self.url + "/v1/objects/pub/mp", json={"action": "mpt-upload"}, allow_redirects=False)
        r = requests.post(r.headers["Location"], json={"action": "mpt-abort", "value": up})
        self.assertEqual(r.status_code, 401, r.text)
        # an empty completion is a 400, not a crash
        r = self.adm.post(self.url + "/v1/objects/pub/mp", json={"action": "mpt-complete", "value": []},
                          params={"uploadid": up})
        self.assertIn(r.status_code, (400, 404), r.text)
        self.assertEqual(self.adm.get(self.url + "/v1/health").status_code, 200)
        self.assertEqual(len(self.c.smap()["tmap"]), 2)
        # get-batch: the redirect's body is the one checked
        r = bob.get(self.url + "/v1/ml/moss/pub", json={"in": [{"objname": "a"}]}, allow_redirects=False)
        self.assertIn(r.status_code, (301, 302, 307), r.text)
        r = requests.get(r.headers["Location"], json={"in": [{"objname": "s", "bucket": "priv"}]})
        self.assertEqual(r.status_code, 401, r.text)
        self.assertNotIn(b"S", r.content[:1])
        # every destination of a copy or archive is checked, however the message spells it
        for q, key in (("?bck_to=ais/@%23/pub/", "tobck"), ("", "TOBCK"), ("", "ToBck")):
            r = bob.post(self.url + "/v1/buckets/pub" + q, json={"action": "copy-listrange", "value": {
                "objnames": ["a"], key: {"name": "priv"}}})
            self.assertEqual(r.status_code, 403, (q, key, r.text))
        r = bob.put(self.url + "/v1/buckets/pub", json={"action": "archive", "value": {
            "archname": "x.tar", "objnames": ["a"], "ToBck": {"name": "newbkt"}}})
        self.assertEqual(r.status_code, 403, r.text)
        self.assertEqual(self.adm.head(self.url + "/v1/buckets/newbkt").status_code, 404)
        # appends need APPEND, and a made-up parameter does not turn a PUT into one
        for q in ("?appendty=x", "?append_type=append"):
            r = bob.put(self.url + "/v1/objects/pub/ap" + q, data=b"x", allow_redirects=False)
            self.assertEqual(r.status_code, 403, (q, r.text))
        # S3 copy: the source is read as the copy reads it (URL-decoded)
        long = "k" * 70
        self.adm.put(self.url + "/v1/objects/priv/" + long, data=b"S").raise_for_status()
        for src in ("priv%2F" + long, "/%70riv/" + long, "priv/" + long):
            r = requests.put(self.url + "/s3/pub/stolen", headers={
                "x-amz-copy-source": src, "X-Amz-Security-Token": self.login("bob", "bobpw")})
            self.assertEqual(r.status_code, 403, (src, r.text))
        self.assertEqual(self.adm.head(self.url + "/v1/objects/pub/stolen", allow_redirects=True).status_code, 404)
        # a revoked token stays revoked however its base64 is spelled
        tok = self.login("bob", "bobpw")
        self.assertEqual(self.sess(tok).delete(self.url + "/v1/tokens", json={"token": tok}).status_code, 200)
        al = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
        for flip in (1, 2, 3):
            alt = tok[:-1] + al[al.index(tok[-1]) ^ flip]
            self.assertEqual(self.sess(alt).get(self.url + "/v1/buckets").status_code, 401, flip)
        # a query of the client's own cannot name the body the target takes
        body = json.dumps({"action": "mpt-upload"}).encode()
        r = bob.post(self.url + "/v1/objects/priv/new?bh=" + hashlib.sha256(body).hexdigest(), data=b"",
                     allow_redirects=False)
        self.assertEqual(r.status_code, 400, r.text)
        r = bob.post(self.url + "/v1/objects/priv/new?b%68=" + hashlib.sha256(body).hexdigest(), data=b"",
                     allow_redirects=False)
        self.assertEqual(r.status_code, 400, r.text)
        r = bob.post(self.url + "/v1/objects/priv/new", data=b"", allow_redirects=False)  # no action: ADMIN
        self.assertEqual(r.status_code, 403, r.text)
        # a copy through PUT ?object_to= needs GET on the source and PUT on the destination
        self.c.cli("auth", "add", "role", "pubrw", "rw", "--bucket", "ais://pub")
        self.c.cli("auth", "add", "user", "carol2", "pubrw", "--password", "c2")
        carol = self.sess(self.login("carol2", "c2"))
        self.assertEqual(carol.put(self.url + "/v1/objects/pub/cb", data=b"mine").status_code, 200)
        r = carol.put(self.url + "/v1/objects/pub/cb?object_to=ais/@%23/priv/pwned", data=b"", allow_redirects=False)
        self.assertEqual(r.status_code, 403, r.text)
        self.assertEqual(self.adm.head(self.url + "/v1/objects/priv/pwned", allow_redirects=True).status_code, 404)
        # a removed user's token is no longer good
        self.c.cli("auth", "add", "user", "temp", "pubro", "--password", "t1")
        tt = self.sess(self.login("temp", "t1"))
        self.assertEqual(tt.get(self.url + "/v1/objects/pub/a").status_code, 200)
        self.c.cli("auth", "rm", "user", "temp")
        wait_until(lambda: tt.get(self.url + "/v1/objects/pub/a", allow_redirects=False).status_code == 401, 10,
                   what="removed user refused")
        # ... nor after a user of that name is made again
        time.sleep(1.1)  # (tokens carry whole seconds)
        self.c.cli("auth", "add", "user", "temp", "pubro", "--password", "t2")
        self.assertEqual(tt.get(self.url + "/v1/objects/pub/a", allow_redirects=False).status_code, 401)
        self.assertEqual(self.sess(self.login("temp", "t2")).get(self.url + "/v1/objects/pub/a").status_code, 200)

    def test_revoke_and_own_password(self):
        self.c.cli("auth", "add", "user", "carol", "pubro", "--password", "c1")
        tok = self.login("carol", "c1")
        s = self.sess(tok)
        self.assertEqual(s.get(self.url + "/v1/objects/pub/a").status_code, 200)
        r = s.put(self.url + "/v1/users/carol", json={"password": "c2"})
        self.assertEqual(r.status_code, 200, r.text)
        r = s.put(self.url + "/v1/users/carol", json={"roles": ["Admin"]})
        self.assertEqual(r.status_code, 401, r.text)  # (AuthN's refusals are 401, as AIStore's)
        r = requests.post(self.url + "/v1/users/carol", json={"password": "c1"})
        self.assertEqual(r.status_code, 401)
        self.assertEqual(s.delete(self.url + "/v1/tokens", json={"token": tok}).status_code, 200)
        wait_until(lambda: s.get(self.p1 + "/v1/objects/pub/a", allow_redirects=False).status_code == 401, 10,
                   what="revocation on the other gateway")
        self.assertEqual(s.get(self.url + "/v1/objects/pub/a").status_code, 401)
        self.assertEqual(self.sess(self.login("carol", "c2")).get(self.url + "/v1/objects/pub/a").status_code, 200)

    def test_brute_force(self):
        self.c.cli("auth", "add", "user", "dave", "--password", "right")
        codes = [requests.post(self.url + "/v1/users/dave", json={"password": "wrong%d" % i}).status_code
                 for i in range(7)]
        self.assertEqual(codes[:5], [401] * 5)
        self.assertEqual(codes[5:], [429, 429])
        r = requests.post(self.url + "/v1/users/dave", json={"password": "right"})
        self.assertEqual(r.status_code, 429)  # the right password too, until the minute is over
        self.assertIn("failed login", self.c.log("p0"))
        # ... from that address: dave logs in from another (loopback 127.0.0.2), whoever guessed from the first
        other = requests.Session()
        other.mount("http://", SourceAdapter("127.0.0.2"))
        r = other.post(self.url + "/v1/users/dave", json={"password": "right"}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertIn("token", r.json())

    def test_cli(self):
        env = dict(os.environ, AIS_ENDPOINT=self.url, HOME=os.path.join(self.tmp, "home"))
        env.pop("AIS_AUTHN_TOKEN_FILE", None)

        def sh(*a, ok=True, inp=None):
            p = subprocess.run([os.path.join(os.path.dirname(SHALED), "shale")] + list(a), capture_output=True,
                               text=True, env=env, input=inp, timeout=60)
            self.assertEqual(p.returncode == 0, ok, (a, p.stdout, p.stderr))
            return p.stdout + p.stderr
        self.assertIn("token required", sh("ls", ok=False))
        self.assertIn("Logged in as bob", sh("auth", "login", "bob", inp="bobpw\n"))
        tf = os.path.join(self.tmp, "home", ".config", "shale", "auth.token")
        self.assertEqual(os.stat(tf).st_mode & 0o777, 0o600)
        self.assertIn("ais://pub", sh("ls"))
        self.assertIn('lacks DESTROY-BUCKET', sh("rmb", "ais://pub", "-y", ok=False))
        self.assertIn("lacks ADMIN", sh("auth", "show", "user", ok=False))
        self.assertIn("Logged out", sh("auth", "logout"))
        self.assertFalse(os.path.exists(tf))
        out = self.c.cli("auth", "show", "role").stdout
        self.assertIn("pubro", out)
        self.assertIn("Admin", out)
        self.assertIn("bob", self.c.cli("auth", "show", "user").stdout)

    def test_s3_with_token(self):
        tok = self.login("bob", "bobpw")
        cfg = botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1})
        s3 = boto3.client("s3", endpoint_url=self.url + "/s3", aws_access_key_id="x", aws_secret_access_key="y",
                          aws_session_token=tok, region_name="us-east-1", config=cfg)
        self.assertEqual(s3.get_object(Bucket="pub", Key="a")["Body"].read(), b"A")
        with self.assertRaises(Exception) as cm:
            s3.put_object(Bucket="pub", Key="z", Body=b"z")
        self.assertIn("AccessDenied", str(cm.exception))
        with self.assertRaises(Exception):
            s3.get_object(Bucket="priv", Key="s")
        anon = boto3.client("s3", endpoint_url=self.url + "/s3", aws_access_key_id="x", aws_secret_access_key="y",
                            region_name="us-east-1", config=cfg)
        with self.assertRaises(Exception) as cm:
            anon.get_object(Bucket="pub", Key="a")
        self.assertIn("AccessDenied", str(cm.exception))

    def test_s3_keys_of_users(self):
        """with verification on, an access key that belongs to a user acts with that user's permissions; a key
        of nobody, a made-up key, and a right key with a wrong secret do nothing"""
        r = self.c.cli("s3", "key", "add", "bobkey", "--secret", "bob-secret-1", "--user", "bob", check=False)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("no user", self.c.cli("s3", "key", "add", "k2key", "--secret", "xxxxxxxx1", "--user", "nobody",
                                            check=False).stderr)
        self.c.cli("s3", "key", "add", "loose", "--secret", "loose-secret-1")
        self.assertIn("bobkey", self.c.cli("s3", "key", "ls").stdout)
        self.c.cli("s3", "verify", "on")
        try:
            cfg = botocore.config.Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1})

            def client(ak, sk):
                return boto3.client("s3", endpoint_url=self.url + "/s3", aws_access_key_id=ak,
                                    aws_secret_access_key=sk, region_name="us-east-1", config=cfg)
            bob = client("bobkey", "bob-secret-1")
            self.assertEqual(bob.get_object(Bucket="pub", Key="a")["Body"].read(), b"A")
            # authenticated first, then authorised: a bad signature or an unknown key is refused as such, before
            # the key's user's permissions are looked at (a PUT bob may not do)
            for c, what, code in ((bob, "no PUT", "AccessDenied"),
                                  (client("bobkey", "wrong-secret"), "bad signature", "SignatureDoesNotMatch"),
                                  (client("loose", "loose-secret-1"), "a key of no user", "AccessDenied"),
                                  (client("made-up", "whatever1"), "unknown key", "InvalidAccessKeyId")):
                with self.assertRaises(botocore.exceptions.ClientError, msg=what) as cm:
                    c.put_object(Bucket="pub", Key="zz", Body=b"z")
                self.assertEqual(cm.exception.response["Error"]["Code"], code, what)
            with self.assertRaises(Exception):
                client("bobkey", "wrong-secret").get_object(Bucket="pub", Key="a")
            with self.assertRaises(Exception):
                bob.get_object(Bucket="priv", Key="s")
            self.assertEqual(self.adm.head(self.url + "/v1/objects/pub/zz", allow_redirects=True).status_code, 404)
        finally:
            self.c.cli("s3", "verify", "off")

    def test_zz_restart(self):
        """an --auth playground restarts (its own checks of the nodes are signed) and keeps its users"""
        self.c.cli("playground", "stop", "--dir", self.c.dir)
        self.c.cli("playground", "start", "--dir", self.c.dir, "--auth")
        wait_until(lambda: len(self.c.smap()["tmap"]) == 2, 30, what="targets back")
        bob = self.sess(self.login("bob", "bobpw"))
        self.assertEqual(bob.get(self.url + "/v1/objects/pub/a").content, b"A")

    def test_secret_key_masked_and_admin_to_enable(self):
        cfg = self.adm.get(self.url + "/v1/cluster?what=cluster_config").json()
        self.assertEqual(cfg["auth"]["signature"]["key"], "")
        self.adm.put(self.url + "/v1/cluster", json={"action": "set-config", "value": {
            "auth": {"signature": {"key": "", "method": "HS256"}}}}).raise_for_status()
        bob = self.sess(self.login("bob", "bobpw"))
        r = bob.put(self.url + "/v1/cluster", json={"action": "set-config",
                                                    "value": {"auth": {"client_auth_required": False}}})
        self.assertEqual(r.status_code, 403)


class RS256Auth(unittest.TestCase):
    """Tokens from an outside issuer, checked with its RSA public key; the cluster's own login is then refused."""

    def test_rs256(self):
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import padding, rsa
        tmp = tempfile.mkdtemp(prefix="shale-rs-")
        try:
            key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            pub = key.public_key().public_bytes(serialization.Encoding.PEM,
                                                serialization.PublicFormat.SubjectPublicKeyInfo).decode()
            n = Node(tmp, name="n0", extra_config={"auth": {"client_auth_required": True, "signature": {
                "method": "RS256", "key": pub}}}).start()
            try:
                def rs(claims, k=key):
                    h = b64u(json.dumps({"alg": "RS256", "typ": "JWT"}).encode())
                    p = b64u(json.dumps(claims).encode())
                    sig = k.sign(("%s.%s" % (h, p)).encode(), padding.PKCS1v15(), hashes.SHA256())
                    return "%s.%s.%s" % (h, p, b64u(sig))
                now = int(time.time())
                ok = rs({"sub": "u", "exp": now + 60, "admin": True})
                r = requests.post(n.url + "/v1/buckets/b", json={"action": "create-bck"},
                                  headers={"Authorization": "Bearer " + ok})
                self.assertEqual(r.status_code, 200, r.text)
                other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
                for tok in (rs({"sub": "u", "exp": now + 60, "admin": True}, other),
                            jwt({"sub": "u", "exp": now + 60, "admin": True}, pub.encode()),  # HS256 with the PEM
                            rs({"sub": "u", "exp": now - 1, "admin": True})):
                    r = requests.get(n.url + "/v1/buckets", headers={"Authorization": "Bearer " + tok})
                    self.assertEqual(r.status_code, 401, r.text)
                r = requests.get(n.url + "/v1/cluster?what=cluster_config", headers={"Authorization": "Bearer " + ok})
                self.assertEqual(r.json()["auth"]["signature"]["key"], "**********")
            finally:
                n.stop()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


def make_cert(ca_crt_path, ca_key_path, cn="shale-node", other_ca=False, rsa=False):
    """a node certificate for 127.0.0.1 signed by the playground's CA (or by a CA of its own), an ECDSA key (or
    RSA): PEM cert, key"""
    import datetime
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.asymmetric import rsa as rsa_keys
    from cryptography.x509.oid import NameOID
    import ipaddress
    key = rsa_keys.generate_private_key(65537, 2048) if rsa else ec.generate_private_key(ec.SECP256R1())
    if other_ca:
        ca_key = ec.generate_private_key(ec.SECP256R1())
        ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "rogue CA")])
    else:
        with open(ca_key_path, "rb") as f:
            ca_key = serialization.load_pem_private_key(f.read(), None)
        with open(ca_crt_path, "rb") as f:
            ca_name = x509.load_pem_x509_certificate(f.read()).subject
    now = datetime.datetime.now(datetime.timezone.utc)
    crt = (x509.CertificateBuilder()
           .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)]))
           .issuer_name(ca_name).public_key(key.public_key()).serial_number(x509.random_serial_number())
           .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=2))
           .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1")),
                                                       x509.DNSName("localhost")]), critical=False)
           .sign(ca_key, hashes.SHA256()))
    return (crt.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def tls_session(host, port, ca, fn, tls12=False, ciphers=None):
    """fn(the SSLSocket) over a fresh TLS connection; tls12: offer TLS 1.2 only, ciphers: the TLS 1.2 suites"""
    import ssl
    import socket
    ctx = ssl.create_default_context(cafile=ca)
    if tls12:
        ctx.maximum_version = ssl.TLSVersion.TLSv1_2
    if ciphers:
        ctx.set_ciphers(ciphers)
    with socket.create_connection((host, port), timeout=10) as s:
        with ctx.wrap_socket(s, server_hostname=host) as t:
            return fn(t)


def served_serial(host, port, ca):
    from cryptography import x509
    return tls_session(host, port, ca,
                       lambda t: x509.load_der_x509_certificate(t.getpeercert(binary_form=True)).serial_number)


class TLS(unittest.TestCase):
    """`playground start --https`: every hop over TLS with verification; certificate reload without a restart;
    a node whose certificate the cluster does not trust (or that does not trust the cluster) cannot join."""

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shale-tls-")
        cls.c = Cluster(cls.tmp, proxies=1, targets=2).start("--https")
        cls.url = cls.c.url
        cls.s = requests.Session()
        cls.s.trust_env = False  # (REQUESTS_CA_BUNDLE would win over .verify)
        cls.s.verify = cls.c.ca
        wait_until(lambda: len(cls.c.smap()["tmap"]) == 2, 30, what="2 targets")

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_https_everywhere(self):
        self.assertTrue(self.url.startswith("https://"))
        sm = self.c.smap()
        for m in ("pmap", "tmap"):
            for sn in sm[m].values():
                self.assertTrue(sn["public_net"]["direct_url"].startswith("https://"), sn)
        self.s.post(self.url + "/v1/buckets/tb", json={"action": "create-bck"}).raise_for_status()
        data = os.urandom(12 * 1024 * 1024 + 7)  # (over 4 MiB: the gateway reads it before redirecting)
        self.assertEqual(self.s.put(self.url + "/v1/objects/tb/big", data=data).status_code, 200)
        self.assertEqual(self.s.get(self.url + "/v1/objects/tb/big").content, data)
        r = self.s.get(self.url + "/v1/objects/tb/big", headers={"Range": "bytes=5000000-5300000"})
        self.assertEqual(r.status_code, 206)
        self.assertEqual(r.content, data[5000000:5300001])
        # the CLI, trusting the CA through AIS_CLIENT_CA
        src = os.path.join(self.tmp, "f.txt")
        with open(src, "w") as f:
            f.write("over tls")
        self.c.cli("put", src, "ais://tb/f")
        self.assertEqual(self.c.cli("get", "ais://tb/f", "-").stdout, "over tls")
        self.assertIn("online", self.c.cli("show", "cluster").stdout)
        # without the CA a client refuses the node; plain HTTP gets no answer
        with self.assertRaises(requests.exceptions.SSLError):
            requests.get(self.url + "/v1/health", timeout=10)
        with self.assertRaises(requests.exceptions.ConnectionError):
            requests.get(self.url.replace("https://", "http://") + "/v1/health", timeout=10)

    def test_cipher(self):
        # OpenSSL (Python, libcurl: clients and the nodes' own calls) asks for AES-256-GCM first; the nodes'
        # order wins: AES-128-GCM where the CPU has AES instructions, ChaCha20 where it has not
        with open("/proc/cpuinfo") as f:
            aes = "aes" in next((ln for ln in f if ln.startswith("flags")), "").split()
        want13, want12 = (("TLS_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256") if aes else
                          ("TLS_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"))
        offered = tls_session("127.0.0.1", int(self.url.rsplit(":", 1)[1]), self.c.ca,
                              lambda t: [c["name"] for c in t.context.get_ciphers() if c["protocol"] == "TLSv1.3"])
        self.assertNotEqual(offered[0], want13, "the client must prefer another cipher for this test to mean much")
        for sn in list(self.c.smap()["pmap"].values()) + list(self.c.smap()["tmap"].values()):
            port = int(sn["public_net"]["direct_url"].rsplit(":", 1)[1])
            self.assertEqual(tls_session("127.0.0.1", port, self.c.ca, lambda t: t.cipher()[0]), want13, sn)
            self.assertEqual(tls_session("127.0.0.1", port, self.c.ca, lambda t: t.cipher()[0], tls12=True),
                             want12, sn)

    def test_reload(self):
        port = int(self.url.rsplit(":", 1)[1])
        before = served_serial("127.0.0.1", port, self.c.ca)
        tls = os.path.join(self.c.dir, "tls")
        # a broken pair first: refused, logged, the old certificate stays
        crt, key = make_cert(os.path.join(tls, "ca.crt"), os.path.join(tls, "ca.key"))
        crt2, key2 = make_cert(os.path.join(tls, "ca.crt"), os.path.join(tls, "ca.key"))
        shutil.copy(os.path.join(tls, "node.crt"), os.path.join(self.tmp, "node.crt.orig"))
        shutil.copy(os.path.join(tls, "node.key"), os.path.join(self.tmp, "node.key.orig"))
        with open(os.path.join(tls, "node.crt"), "wb") as f:
            f.write(crt)
        with open(os.path.join(tls, "node.key"), "wb") as f:
            f.write(key2)
        os.kill(self.c.pid("p0"), 1)
        wait_until(lambda: "does not belong to certificate" in self.c.log("p0"), 10, what="refusal logged")
        self.assertEqual(served_serial("127.0.0.1", port, self.c.ca), before)
        with open(os.path.join(tls, "node.key"), "wb") as f:
            f.write(key)
        os.kill(self.c.pid("p0"), 1)
        want = __import__("cryptography.x509", fromlist=["x"]).load_pem_x509_certificate(crt).serial_number
        wait_until(lambda: served_serial("127.0.0.1", port, self.c.ca) == want, 10, what="new certificate served")
        self.assertEqual(self.s.get(self.url + "/v1/health").status_code, 200)
        self.assertEqual(self.c.pid("p0") > 0, True)

    def reload_pair(self, crt, key):
        """the gateway's certificate and key replaced (SIGHUP) until it serves crt: the old pair's bytes"""
        tls = os.path.join(self.c.dir, "tls")
        old = []
        for name, b in (("node.crt", crt), ("node.key", key)):
            with open(os.path.join(tls, name), "rb") as f:
                old.append(f.read())
            with open(os.path.join(tls, name), "wb") as f:
                f.write(b)
        os.kill(self.c.pid("p0"), 1)
        want = __import__("cryptography.x509", fromlist=["x"]).load_pem_x509_certificate(crt).serial_number
        wait_until(lambda: served_serial("127.0.0.1", int(self.url.rsplit(":", 1)[1]), self.c.ca) == want, 10,
                   what="the new certificate served")
        return old

    def test_rsa_certificate_keeps_forward_secrecy(self):
        # a TLS 1.2 client that offers RSA key exchange first still gets ECDHE from a node with an RSA key
        tls = os.path.join(self.c.dir, "tls")
        old = self.reload_pair(*make_cert(os.path.join(tls, "ca.crt"), os.path.join(tls, "ca.key"), rsa=True))
        try:
            got = tls_session("127.0.0.1", int(self.url.rsplit(":", 1)[1]), self.c.ca, lambda t: t.cipher()[0],
                              tls12=True, ciphers="AES128-GCM-SHA256:AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
                                                  "ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-CHACHA20-POLY1305")
            self.assertTrue(got.startswith("ECDHE-RSA-"), got)
        finally:
            self.reload_pair(*old)

    def test_session_resumption(self):
        # a client that connects again resumes its session (TLS 1.3 and 1.2 tickets) until the pair is reloaded
        import socket
        import ssl
        port = int(self.url.rsplit(":", 1)[1])

        def connect(ctx, session):
            with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
                with ctx.wrap_socket(s, server_hostname="127.0.0.1", session=session) as t:
                    t.sendall(b"GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n")
                    self.assertIn(b" 200 ", t.recv(4096))  # (a TLS 1.3 ticket comes after the handshake)
                    return t.session, t.session_reused

        for tls12 in (False, True):
            ctx = ssl.create_default_context(cafile=self.c.ca)
            if tls12:
                ctx.maximum_version = ssl.TLSVersion.TLSv1_2
            sess, reused = connect(ctx, None)
            self.assertFalse(reused)
            for _ in range(2):
                sess, reused = connect(ctx, sess)
                self.assertTrue(reused, "tls12=%s" % tls12)
            tls = os.path.join(self.c.dir, "tls")
            old = self.reload_pair(*make_cert(os.path.join(tls, "ca.crt"), os.path.join(tls, "ca.key")))
            try:  # a new pair: its certificate is checked again, no ticket of the old one is taken
                self.assertFalse(connect(ctx, sess)[1], "tls12=%s" % tls12)
            finally:
                self.reload_pair(*old)

    def test_untrusted_nodes_cannot_join(self):
        tls = os.path.join(self.c.dir, "tls")
        secret = os.path.join(self.c.dir, "p0", "cluster.secret")
        for case in ("rogue cert", "rogue CA"):
            n = Node(self.tmp, name="x" + case.split()[1], role="target", primary=self.url)
            crt, key = make_cert(os.path.join(tls, "ca.crt"), os.path.join(tls, "ca.key"),
                                 other_ca=case == "rogue cert")
            for name, b in (("n.crt", crt), ("n.key", key)):
                with open(os.path.join(n.dir, name), "wb") as f:
                    f.write(b)
            ca = os.path.join(tls, "ca.crt")
            if case == "rogue CA":  # it trusts another CA: the primary's certificate fails its check
                other, _ = make_cert(None, None, other_ca=True)
                ca = os.path.join(n.dir, "other-ca.crt")
                with open(ca, "wb") as f:
                    f.write(other)
            n.config["net"] = {"http": {"use_https": True, "server_crt": os.path.join(n.dir, "n.crt"),
                                        "server_key": os.path.join(n.dir, "n.key"), "client_ca_tls": ca}}
            n.config["timeout"] = {"join_startup_time": "3s"}
            n.write_config()
            shutil.copy2(secret, n.secret_path)
            p = subprocess.run([SHALED, "--config", n.config_path, "--role", "target", "--bind", "127.0.0.1"],
                               capture_output=True, text=True, timeout=60)
            self.assertNotEqual(p.returncode, 0, case)
            self.assertTrue("certificate" in p.stderr or "SSL" in p.stderr, (case, p.stderr))
            self.assertEqual(len(self.c.smap()["tmap"]), 2, case)


if __name__ == "__main__":
    main()
