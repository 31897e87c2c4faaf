#!/usr/bin/env python3
"""AIStore's AuthN API as its clients use it (spec/authn-api.md), against the AuthN a Shale cluster's gateways
serve: the request bodies are the ones AIStore's Python SDK (aistore.sdk.authn) and Go api/authn send, the
answers are checked as the SDK parses them; the tokens are then used on the cluster with exactly the permissions
the roles grant, and a revoked one is refused by the cluster's gateways."""
import base64
import http.server
import json
import os
import shutil
import tempfile
import threading
import time
import unittest

import requests

from harness import Cluster, main, wait_until

ACCESS_RO, ACCESS_RW = 771, 831
LIST_BUCKETS, CREATE_BUCKET, DESTROY_BUCKET = 4096, 16384, 32768
JSON = {"Content-Type": "application/json", "User-Agent": "ais/python"}  # the SDK sends both on every request


class AuthnAPI(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shale-authn-")
        cls.c = Cluster(cls.tmp, proxies=2, targets=1).start("--auth")
        cls.url = cls.c.url
        cls.p1 = cls.c.node_url("p1")
        cls.adm = requests.Session()
        cls.adm.headers.update(JSON)
        cls.adm.headers.update(cls.c.admin_headers())
        wait_until(lambda: len(cls.c.smap()["pmap"]) == 2 and len(cls.c.smap()["tmap"]) == 1, 30, what="nodes")
        # the SDK's register(): the uuid from the cluster, then POST
        cls.uuid = cls.adm.get(cls.url + "/v1/daemon", params={"what": "smap"}).json()["uuid"]
        # (checked by test_clusters_registry; each test is to fail on its own where this is not served)
        cls.registered = cls.adm.post(cls.url + "/v1/clusters", json={"id": cls.uuid, "alias": "main",
                                                                      "urls": [cls.url]})
        for b in ("pub", "priv"):
            cls.adm.post(cls.url + "/v1/buckets/" + b, json={"action": "create-bck"}).raise_for_status()
        cls.adm.put(cls.url + "/v1/objects/pub/a", data=b"A").raise_for_status()
        cls.adm.put(cls.url + "/v1/objects/priv/s", data=b"S").raise_for_status()

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    # ---- helpers: the SDK's bodies

    def add_role(self, name, clusters=None, buckets=None, desc="Test Description"):
        r = self.adm.post(self.url + "/v1/roles", json={"name": name, "desc": desc, "clusters": clusters,
                                                        "buckets": buckets, "admin": False})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.text, "")
        return self.adm.get(self.url + "/v1/roles/" + name).json()

    def add_user(self, uid, pw, roles):
        r = self.adm.post(self.url + "/v1/users", json={"id": uid, "roles": roles, "pass": pw})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.text, "")

    def login(self, uid, pw, expires_in=None):
        r = requests.post(self.url + "/v1/users/" + uid, json={"password": pw, "expires_in": expires_in},
                          headers=JSON)
        self.assertEqual(r.status_code, 200, r.text)
        return r.json()["token"]

    def sess(self, tok):
        s = requests.Session()
        s.headers.update(JSON)
        s.headers["Authorization"] = "Bearer " + tok
        return s

    def bck_acl(self, name, perm, ns=None):
        return {"bck": {"name": name, "provider": "ais", "namespace": {"uuid": ns or self.uuid, "name": ""}},
                "perm": str(perm)}

    # ---- the cluster registry

    def test_clusters_registry(self):
        self.assertEqual((self.registered.status_code, self.registered.text), (200, ""))
        want = {"id": self.uuid, "alias": "main", "urls": [self.url]}
        r = requests.get(self.url + "/v1/clusters", headers=JSON)  # public
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(r.json()["clusters"][self.uuid], want)
        for key in (self.uuid, "main"):  # by id or alias, the envelope keyed by id
            self.assertEqual(requests.get(self.url + "/v1/clusters/" + key).json(), {"clusters": {self.uuid: want}})
        # a second registration of the same id, or of another id under a registered alias: 409 "cluster "
        for body in ({"id": self.uuid, "alias": "again", "urls": [self.url]}, {"id": "X1", "alias": "main",
                                                                               "urls": []}):
            r = self.adm.post(self.url + "/v1/clusters", json=body)
            self.assertEqual(r.status_code, 409, r.text)
            self.assertIn("already registered", r.text)
        # the update test_update_cluster sends: urls [] keeps the urls; then a null alias keeps the alias
        r = self.adm.put(self.url + "/v1/clusters/" + self.uuid, json={"id": self.uuid, "alias": "new-test-alias",
                                                                        "urls": []})
        self.assertEqual((r.status_code, r.text), (200, ""))
        got = self.adm.get(self.url + "/v1/clusters/new-test-alias").json()["clusters"][self.uuid]
        self.assertEqual(got, dict(want, alias="new-test-alias"))
        r = self.adm.put(self.url + "/v1/clusters/" + self.uuid, json={"id": self.uuid, "alias": None, "urls": None})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.adm.get(self.url + "/v1/clusters/" + self.uuid).json()["clusters"][self.uuid]["alias"],
                         "new-test-alias")
        self.assertEqual(self.adm.put(self.url + "/v1/clusters/" + self.uuid, json={
            "id": self.uuid, "alias": "main", "urls": []}).status_code, 200)
        # PUT takes the id only; unknown: 404 "cluster "
        r = self.adm.put(self.url + "/v1/clusters/main", json={"id": self.uuid, "alias": "x"})
        self.assertEqual(r.status_code, 404, r.text)
        self.assertIn("cluster ", r.json()["message"])
        # registering makes AIStore's three roles
        roles = {x["name"]: x for x in requests.get(self.url + "/v1/roles").json()}
        self.assertEqual(roles["Guest-main"]["clusters"], [{"id": self.uuid, "alias": "main", "perm": "771"}])
        self.assertIn("ClusterOwner-main", roles)
        self.assertIn("BucketOwner-main", roles)
        # a cluster that does not take this AuthN's token (here: nothing listens) is not registered
        r = self.adm.post(self.url + "/v1/clusters", json={"id": "DeadCluster1", "alias": "dead",
                                                            "urls": ["http://127.0.0.1:9"]})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("validate-signer", r.text)
        self.assertEqual(requests.get(self.url + "/v1/clusters/dead").status_code, 404)
        # with no urls nothing is contacted; delete by alias, then 404 "cluster " as the SDK wants it
        r = self.adm.post(self.url + "/v1/clusters", json={"id": "OtherCluster1", "alias": "other", "urls": []})
        self.assertEqual((r.status_code, r.text), (200, ""))
        self.assertEqual(requests.get(self.url + "/v1/clusters/other").json(),
                         {"clusters": {"OtherCluster1": {"id": "OtherCluster1", "alias": "other"}}})
        self.assertEqual(self.adm.delete(self.url + "/v1/clusters/other").status_code, 200)
        for m in ("get", "delete"):
            r = getattr(self.adm, m)(self.url + "/v1/clusters/other")
            self.assertEqual(r.status_code, 404, r.text)
            self.assertIn("cluster other does not exist", r.text)
        # bad input changes nothing
        for body in ({"alias": "noid", "urls": []}, {"id": "Y1", "alias": "-bad", "urls": []},
                     {"id": "Y2", "alias": "ok", "urls": ["ftp://x"]}, {"id": "Y3", "alias": "ok2", "urls": "x"}):
            r = self.adm.post(self.url + "/v1/clusters", json=body)
            self.assertEqual(r.status_code, 400, (body, r.text))
        self.assertEqual(set(requests.get(self.url + "/v1/clusters").json()["clusters"]), {self.uuid})

    # ---- roles

    def test_roles(self):
        # the SDK's cluster-scoped create (alias resolved to the id by the SDK)
        role = self.add_role("Test-Role-c1", clusters=[{"id": self.uuid, "perm": str(LIST_BUCKETS)}])
        self.assertEqual(role, {"name": "Test-Role-c1", "desc": "Test Description", "buckets": None, "admin": False,
                                "clusters": [{"id": self.uuid, "alias": "main", "perm": "4096"}]})
        lst = requests.get(self.url + "/v1/roles").json()  # public, a list
        self.assertIsInstance(lst, list)
        names = [x["name"] for x in lst]
        self.assertEqual(names, sorted(names))
        self.assertIn(role, lst)  # the same object as GET /v1/roles/NAME
        self.assertIn({"name": "Admin", "desc": "AuthN administrator", "clusters": None, "buckets": None,
                       "admin": True}, lst)
        # bucket-scoped
        role = self.add_role("Test-Role-b1", buckets=[self.bck_acl("pub", 1)])
        self.assertEqual(role["clusters"], None)
        self.assertEqual(role["buckets"], [self.bck_acl("pub", 1)])
        # the SDK's update: the whole role back, with a new bucket entry and a cluster entry where there was none
        role["buckets"] = [self.bck_acl("pub", ACCESS_RO)]
        role["clusters"] = [{"id": self.uuid, "perm": "53248"}]
        role["desc"] = ""
        r = self.adm.put(self.url + "/v1/roles/Test-Role-b1", json=role)
        self.assertEqual((r.status_code, r.text), (200, ""))
        got = self.adm.get(self.url + "/v1/roles/Test-Role-b1").json()
        self.assertEqual(got["buckets"], [self.bck_acl("pub", ACCESS_RO)])
        self.assertEqual(got["clusters"], [{"id": self.uuid, "alias": "main", "perm": "53248"}])
        self.assertEqual(got["desc"], "Test Description")  # an empty desc keeps it
        # merged: another bucket is added, nothing removed
        self.adm.put(self.url + "/v1/roles/Test-Role-b1", json={"name": "x", "desc": "d2", "buckets": [
            self.bck_acl("priv", 1)], "clusters": None}).raise_for_status()
        got = self.adm.get(self.url + "/v1/roles/Test-Role-b1").json()
        self.assertEqual(got["buckets"], [self.bck_acl("pub", ACCESS_RO), self.bck_acl("priv", 1)])
        self.assertEqual((got["name"], got["desc"]), ("Test-Role-b1", "d2"))
        # refusals, in AIStore's words
        r = self.adm.post(self.url + "/v1/roles", json={"name": "Test-Role-c1", "desc": "", "clusters": None,
                                                        "buckets": None, "admin": False})
        self.assertEqual(r.status_code, 409, r.text)
        self.assertIn("role Test-Role-c1 already exists", r.text)
        r = self.adm.post(self.url + "/v1/roles", json={"name": "Sneaky", "desc": "", "admin": True})
        self.assertEqual(r.status_code, 403, r.text)
        r = self.adm.post(self.url + "/v1/roles", json={"name": "BadPerm", "desc": "", "clusters": [
            {"id": self.uuid, "perm": "lots"}]})
        self.assertEqual(r.status_code, 400, r.text)
        for m, code in (("put", 403), ("delete", 403)):
            self.assertEqual(getattr(self.adm, m)(self.url + "/v1/roles/Admin", json={"desc": "x"}).status_code, code)
        self.assertNotIn("Sneaky", [x["name"] for x in requests.get(self.url + "/v1/roles").json()])
        r = requests.get(self.url + "/v1/roles/NoSuchRole")
        self.assertEqual(r.status_code, 404)
        self.assertIn('role \\"NoSuchRole\\" does not exist', r.text)
        self.assertEqual(requests.patch(self.url + "/v1/roles").status_code, 405)
        # delete: gone from the list, and from the users that held it
        self.add_user("Test-User-d1", "12345", [role])
        self.assertEqual(self.adm.delete(self.url + "/v1/roles/Test-Role-b1").status_code, 200)
        self.assertNotIn("Test-Role-b1", [x["name"] for x in requests.get(self.url + "/v1/roles").json()])
        self.assertEqual(self.adm.get(self.url + "/v1/users/Test-User-d1").json()["roles"], [])
        r = self.adm.delete(self.url + "/v1/roles/Test-Role-b1")
        self.assertEqual(r.status_code, 404, r.text)
        self.assertIn("role ", r.text)

    # ---- users

    def test_users(self):
        r1 = self.add_role("Test-Role-u1", clusters=[{"id": self.uuid, "perm": str(LIST_BUCKETS)}])
        r2 = self.add_role("Test-Role-u2", buckets=[self.bck_acl("pub", ACCESS_RO)])
        # the SDK's create: full role objects
        self.add_user("Test-User-u1", "12345", [r1])
        u = self.adm.get(self.url + "/v1/users/Test-User-u1").json()
        self.assertEqual(u, {"id": "Test-User-u1", "roles": [r1]})
        # null for the list: no roles
        self.add_user("Test-User-u2", "12345", None)
        self.assertEqual(self.adm.get(self.url + "/v1/users/Test-User-u2").json()["roles"], [])
        # the SDK's update, roles only: "password": null keeps the password, the roles are replaced
        r = self.adm.put(self.url + "/v1/users/Test-User-u1", json={"id": "Test-User-u1", "password": None,
                                                                     "roles": [r2]})
        self.assertEqual((r.status_code, r.text), (200, ""))
        self.assertEqual(self.adm.get(self.url + "/v1/users/Test-User-u1").json()["roles"], [r2])
        self.login("Test-User-u1", "12345")
        # ... password only: roles [] keeps the roles
        r = self.adm.put(self.url + "/v1/users/Test-User-u1", json={"id": "Test-User-u1", "roles": [],
                                                                     "pass": "new"})
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.adm.get(self.url + "/v1/users/Test-User-u1").json()["roles"], [r2])
        tok = self.login("Test-User-u1", "new")
        # the list: an object by id, each entry as GET shows it
        allu = self.adm.get(self.url + "/v1/users").json()
        self.assertEqual(allu["Test-User-u1"], self.adm.get(self.url + "/v1/users/Test-User-u1").json())
        self.assertIn("admin", allu)
        # a user reads their own entry (not others'), and changes their own password with roles []
        me = self.sess(tok)
        self.assertEqual(me.get(self.url + "/v1/users/Test-User-u1").status_code, 200)
        r = me.put(self.url + "/v1/users/Test-User-u1", json={"id": "Test-User-u1", "roles": [], "pass": "mine"})
        self.assertEqual(r.status_code, 200, r.text)
        # AuthN answers 401 to every authorisation failure (as AIStore's)
        for method, path, body in (("GET", "/v1/users/Test-User-u2", None), ("GET", "/v1/users", None),
                                   ("POST", "/v1/roles", {"name": "x", "desc": ""}),
                                   ("PUT", "/v1/users/Test-User-u1", {"id": "Test-User-u1", "roles": [r1]}),
                                   ("POST", "/v1/clusters", {"id": "Z", "alias": "z", "urls": []})):
            r = me.request(method, self.url + path, json=body)
            self.assertEqual(r.status_code, 401, (method, path, r.text))
        self.assertEqual(self.adm.get(self.url + "/v1/users/Test-User-u1").json()["roles"], [r2])
        # refusals the SDK tells apart by their text
        r = self.adm.post(self.url + "/v1/users", json={"id": "Test-User-u1", "roles": [], "pass": "x"})
        self.assertEqual(r.status_code, 409, r.text)
        self.assertIn("user Test-User-u1 already exists", r.text)
        r = self.adm.get(self.url + "/v1/users/NoSuchUser")
        self.assertEqual(r.status_code, 404, r.text)
        self.assertIn('user \\"NoSuchUser\\" does not exist', r.text)
        r = self.adm.post(self.url + "/v1/users", json={"id": "Test-User-u3", "roles": [{"name": "NoSuchRole"}],
                                                        "pass": "x"})
        self.assertEqual(r.status_code, 400, r.text)
        self.assertEqual(self.adm.get(self.url + "/v1/users/Test-User-u3").status_code, 404)
        self.assertEqual(self.adm.delete(self.url + "/v1/users/Test-User-u2").status_code, 200)
        r = self.adm.delete(self.url + "/v1/users/Test-User-u2")
        self.assertEqual(r.status_code, 404, r.text)
        self.assertIn("user ", r.text)

    # ---- login

    def test_login(self):
        self.add_user("Test-User-l1", "12345", None)
        for uid, pw in (("Test-User-l1", "wrong"), ("NoSuchUser", "12345")):
            r = requests.post(self.url + "/v1/users/" + uid, json={"password": pw, "expires_in": None}, headers=JSON)
            self.assertEqual(r.status_code, 401, r.text)
            self.assertIn("invalid credentials", r.text)  # the SDK's ErrUserInvalidCredentials
        r = requests.post(self.url + "/v1/users/Test-User-l1", json={"password": None}, headers=JSON)
        self.assertEqual(r.status_code, 401, r.text)
        # expires_in in nanoseconds: 2 minutes; below a minute, or past the maximum, 400
        tok = self.login("Test-User-l1", "12345", expires_in=120 * 10**9)
        claims = json.loads(__import__("base64").urlsafe_b64decode(tok.split(".")[1] + "=="))
        self.assertAlmostEqual(claims["exp"] - time.time(), 120, delta=10)
        self.assertIs(claims["admin"], False)
        for ns in (1500000000, 10**9 * 86400 * 400):
            r = requests.post(self.url + "/v1/users/Test-User-l1", json={"password": "12345", "expires_in": ns})
            self.assertEqual(r.status_code, 400, r.text)

    # ---- tokens on the cluster

    def test_token_permissions(self):
        # read-only on bucket pub, LIST-BUCKETS on this cluster named by its alias
        ro = self.add_role("Test-Role-p1", buckets=[self.bck_acl("pub", ACCESS_RO)],
                           clusters=[{"id": "main", "perm": str(LIST_BUCKETS)}])
        rw = self.add_role("Test-Role-p2", clusters=[{"id": self.uuid, "perm": str(ACCESS_RW | LIST_BUCKETS)}])
        guest = requests.get(self.url + "/v1/roles/Guest-main").json()
        self.add_user("Test-User-p1", "pw1", [ro])
        self.add_user("Test-User-p2", "pw2", [rw])
        self.add_user("Test-User-p3", "pw3", [guest])
        reader = self.sess(self.login("Test-User-p1", "pw1"))
        self.assertEqual(reader.get(self.url + "/v1/objects/pub/a").content, b"A")
        self.assertEqual(reader.get(self.url + "/v1/buckets").status_code, 200)
        for method, path, body in (("PUT", "/v1/objects/pub/b", b"x"), ("GET", "/v1/objects/priv/s", None),
                                   ("DELETE", "/v1/objects/pub/a", None)):
            r = reader.request(method, self.url + path, data=body, allow_redirects=False)
            self.assertEqual(r.status_code, 403, (method, path, r.text))
        writer = self.sess(self.login("Test-User-p2", "pw2"))
        for b in ("pub", "priv"):
            self.assertEqual(writer.put(self.url + "/v1/objects/%s/w" % b, data=b"w").status_code, 200)
        self.assertEqual(writer.get(self.url + "/v1/objects/priv/s").content, b"S")
        r = writer.post(self.url + "/v1/buckets/newb", json={"action": "create-bck"})
        self.assertEqual(r.status_code, 403, r.text)
        self.assertEqual(writer.get(self.url + "/v1/users").status_code, 401)
        g = self.sess(self.login("Test-User-p3", "pw3"))  # Guest-main: ro on every bucket of this cluster
        self.assertEqual(g.get(self.url + "/v1/objects/priv/s").content, b"S")
        self.assertEqual(g.put(self.url + "/v1/objects/priv/g", data=b"g", allow_redirects=False).status_code, 403)
        # the admin (role Admin) can do all
        with open(os.path.join(self.c.dir, "admin.password")) as f:
            adm = self.sess(self.login("admin", f.read().strip()))
        self.assertEqual(adm.post(self.url + "/v1/buckets/newb", json={"action": "create-bck"}).status_code, 200)
        self.assertEqual(adm.delete(self.url + "/v1/buckets/newb", json={"action": "destroy-bck"}).status_code, 200)
        # no token: 401 token required
        r = requests.get(self.url + "/v1/objects/pub/a")
        self.assertEqual(r.status_code, 401)
        self.assertIn("token required", r.text)

    def test_revoke(self):
        role = self.add_role("Test-Role-r1", buckets=[self.bck_acl("pub", ACCESS_RO)])
        self.add_user("Test-User-r1", "12345", [role])
        tok = self.login("Test-User-r1", "12345")
        s = self.sess(tok)
        self.assertEqual(s.get(self.url + "/v1/objects/pub/a").status_code, 200)
        self.assertEqual(s.get(self.p1 + "/v1/objects/pub/a").status_code, 200)
        # the SDK's revoke / logout: the user's own token in the body (no admin; the header not looked at)
        r = requests.delete(self.url + "/v1/tokens", json={"token": tok}, headers=JSON)
        self.assertEqual((r.status_code, r.text), (200, ""))
        r = s.get(self.url + "/v1/objects/pub/a", allow_redirects=False)
        self.assertEqual(r.status_code, 401, r.text)
        self.assertIn("revoked", r.text)
        wait_until(lambda: s.get(self.p1 + "/v1/objects/pub/a", allow_redirects=False).status_code == 401, 10,
                   what="the other gateway refusing the revoked token")
        self.assertIn("revoked", s.get(self.p1 + "/v1/objects/pub/a").text)
        r = s.get(self.url + "/v1/users/Test-User-r1")  # AuthN too
        self.assertEqual(r.status_code, 401, r.text)
        self.assertIn("revoked", r.text)
        # again: still 200 (the token verifies); nonsense: 401; none: 400
        self.assertEqual(requests.delete(self.url + "/v1/tokens", json={"token": tok}).status_code, 200)
        r = requests.delete(self.url + "/v1/tokens", json={"token": "abc.def.ghi"})
        self.assertEqual(r.status_code, 401, r.text)
        self.assertIn("invalid token", r.text)
        self.assertEqual(requests.delete(self.url + "/v1/tokens", json={"token": ""}).status_code, 400)
        # a new login works
        self.assertEqual(self.sess(self.login("Test-User-r1", "12345")).get(self.url + "/v1/objects/pub/a").content,
                         b"A")

    def test_revoked_list_from_another_authn(self):
        """AIStore's AuthN tells a cluster of revoked tokens with {"tokens": [...], "version": "0"} (admin)"""
        self.add_user("Test-User-t1", "12345", None)
        tok = self.login("Test-User-t1", "12345")
        r = self.sess(tok).delete(self.url + "/v1/tokens", json={"tokens": [tok], "version": "0"})
        self.assertEqual(r.status_code, 403, r.text)  # not an admin
        self.assertEqual(self.sess(tok).get(self.url + "/v1/users/Test-User-t1").status_code, 200)
        r = self.adm.delete(self.url + "/v1/tokens", json={"tokens": [tok], "version": "0"})
        self.assertEqual((r.status_code, r.text), (200, ""))
        r = self.sess(tok).get(self.url + "/v1/users/Test-User-t1")
        self.assertEqual(r.status_code, 401, r.text)
        self.assertIn("revoked", r.text)

    def test_other_cluster_handshake_and_revoke_push(self):
        """another registered cluster (here a stand-in that records what it is sent) is asked whether it takes
        this AuthN's token when registered, and told of a revocation before the revoke is answered"""
        seen = []

        class H(http.server.BaseHTTPRequestHandler):
            def answer(self):
                n = int(self.headers.get("Content-Length") or 0)
                seen.append((self.command, self.path, self.headers.get("Authorization", ""),
                             self.rfile.read(n).decode()))
                self.send_response(200)
                self.send_header("Content-Length", "0")
                self.end_headers()
            do_POST = do_DELETE = answer

            def log_message(self, *a):
                pass
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        try:
            other = "http://127.0.0.1:%d" % srv.server_address[1]
            r = self.adm.post(self.url + "/v1/clusters", json={"id": "RemoteCluster1", "alias": "remote",
                                                                "urls": [other + "/"]})
            self.assertEqual((r.status_code, r.text), (200, ""))
            self.assertEqual(requests.get(self.url + "/v1/clusters/remote").json()["clusters"]["RemoteCluster1"]
                             ["urls"], [other])
            self.assertEqual([x[:2] for x in seen], [("POST", "/v1/tokens")])
            claims = json.loads(base64.urlsafe_b64decode(seen[0][2].split(".")[1] + "=="))
            self.assertEqual((claims["sub"], claims["admin"], claims["aud"]), ("AuthN", True, ["RemoteCluster1"]))
            self.add_user("Test-User-o1", "12345", None)
            tok = self.login("Test-User-o1", "12345")
            self.assertEqual(requests.delete(self.url + "/v1/tokens", json={"token": tok}).status_code, 200)
            self.assertEqual(seen[1][:2], ("DELETE", "/v1/tokens"))
            self.assertEqual(json.loads(seen[1][3]), {"tokens": [tok], "version": "0"})
            self.assertTrue(seen[1][2].startswith("Bearer "))
        finally:
            self.adm.delete(self.url + "/v1/clusters/remote")
            srv.shutdown()
            srv.server_close()


if __name__ == "__main__":
    main()
