# SPDX-License-Identifier: MIT
"""More of the verbs an `ais` user reaches for (issue 38), against one gateway and 2 targets: `bucket props reset`
(reset-bprops), `object mv` (rename-obj: the target answered 501), `object promote`, `show cluster bmd`,
`cluster reset-stats` (PUT /v1/cluster reset-stats was refused), `cluster download-logs` and `log get`,
`cluster reload-backend-creds` (reload-creds refused), `auth update role|cluster`, `alias reset`,
`tls validate-certificates` (over http: each node says it has none), `storage mountpath fshc` (the target had no
fshc action), `advanced random-node|random-mountpath`, `bucket lru`, and last `cluster shutdown` (the
whole-cluster shutdown action was refused)."""
import os
import subprocess

import requests

from harness import ClusterTest, SHALE, _zombie, main, start_cluster, wait_until


class TestCLIMore(ClusterTest):
    @classmethod
    def setUpClass(cls):
        start_cluster(cls, targets=2)

    def shale(self, *args, env=None, input=None):
        e = dict(os.environ, AIS_ENDPOINT=self.url)
        e.update(env or {})
        return subprocess.run([SHALE] + list(args), capture_output=True, text=True, env=e, timeout=120, input=input)

    def mkbucket(self, name):
        self.assertEqual(self.s.post(self.url + "/v1/buckets/" + name, json={"action": "create-bck"}).status_code, 200)

    def props(self, name):
        import json
        return json.loads(self.s.head(self.url + "/v1/buckets/" + name).headers["Ais-Bucket-Props"])

    def test_props_reset(self):
        self.mkbucket("pr")
        before = self.props("pr")
        p = self.shale("bucket", "props", "set", "ais://pr", "checksum.type=md5", "access=ro")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.props("pr")["checksum"]["type"], "md5")
        p = self.shale("bucket", "props", "reset", "ais://pr")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("props reset to the cluster defaults", p.stdout)
        after = self.props("pr")
        self.assertEqual(after["checksum"]["type"], before["checksum"]["type"])
        self.assertEqual(after["access"], before["access"])
        for k in ("bid", "created", "provider"):
            self.assertEqual(after.get(k), before.get(k), k)
        p = self.shale("bucket", "props", "reset", "ais://pr", "checksum.type=md5")
        self.assertEqual(p.returncode, 1)
        self.assertIn('unexpected argument "checksum.type=md5"', p.stderr)
        p = self.shale("bucket", "props", "reset", "ais://nosuch-pr")
        self.assertEqual(p.returncode, 1)
        self.assertIn("nosuch-pr", p.stderr)

    def test_object_mv(self):
        self.mkbucket("mv")
        names = ["o%d" % i for i in range(6)]
        for n in names:
            self.assertEqual(self.s.put(self.url + "/v1/objects/mv/" + n, data=n.encode() * 100).status_code, 200)
        # renamed onto new names that land on either target (6 names over 2 targets)
        for n in names:
            p = self.shale("object", "mv", "ais://mv/" + n, "new/" + n)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn('renamed "%s" to "new/%s"' % (n, n), p.stdout)
            g = self.s.get(self.url + "/v1/objects/mv/new/" + n)
            self.assertEqual((g.status_code, g.content), (200, n.encode() * 100))
            self.assertEqual(self.s.head(self.url + "/v1/objects/mv/" + n, allow_redirects=True).status_code, 404)
        p = self.shale("object", "mv", "ais://mv/new/o0", "ais://mv/o0")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.s.get(self.url + "/v1/objects/mv/o0").content, b"o0" * 100)
        # onto an existing name: overwritten, as AIStore's
        p = self.shale("object", "mv", "ais://mv/o0", "new/o1")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.s.get(self.url + "/v1/objects/mv/new/o1").content, b"o0" * 100)
        # bad arguments: nothing changes
        p = self.shale("object", "mv", "ais://mv/nosuch", "x")
        self.assertEqual(p.returncode, 1)
        self.assertIn("nosuch", p.stderr)
        p = self.shale("object", "mv", "ais://mv/new/o2", "ais://other/o2")
        self.assertEqual(p.returncode, 1)
        self.assertIn('"ais://other/o2"', p.stderr)
        p = self.shale("object", "mv", "ais://mv/new/o2", "new/o2")
        self.assertEqual(p.returncode, 1)
        self.assertIn("must differ", p.stderr)
        p = self.shale("object", "mv", "ais://mv/new/o2")
        self.assertEqual(p.returncode, 1)
        self.assertIn("object mv", p.stderr)
        self.assertEqual(self.s.get(self.url + "/v1/objects/mv/new/o2").content, b"o2" * 100)
        # the server refuses the same name itself
        r = self.s.post(self.url + "/v1/objects/mv/new/o2", json={"action": "rename-obj", "name": "new/o2"})
        self.assertEqual(r.status_code, 400, r.text)

    def test_object_promote(self):
        self.mkbucket("pm")
        pdir = os.path.join(self.c.dir, "promote")
        os.makedirs(os.path.join(pdir, "imgs", "sub"))
        for rel in ("a", "b", "sub/c"):
            with open(os.path.join(pdir, "imgs", rel), "wb") as f:
                f.write(rel.encode() * 10)
        self.s.put(self.url + "/v1/cluster/set-config", params={"promote.dir": pdir}).raise_for_status()
        src = os.path.join(pdir, "imgs")
        p = self.shale("object", "promote", src, "ais://pm/p/", "--recursive", "--wait")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        for rel in ("a", "b", "sub/c"):
            self.assertEqual(self.s.get(self.url + "/v1/objects/pm/p/" + rel).content, rel.encode() * 10, rel)
        self.assertTrue(os.path.exists(os.path.join(src, "a")))
        # one target, one file, the source deleted once stored
        tid = sorted(self.s.get(self.url + "/v1/daemon", params={"what": "smap"}).json()["tmap"])[0]
        p = self.shale("object", "promote", os.path.join(src, "a"), "ais://pm/one", "--target", "t[%s]" % tid,
                       "--delete-src", "--wait")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(self.s.get(self.url + "/v1/objects/pm/one").content, b"a" * 10)
        self.assertFalse(os.path.exists(os.path.join(src, "a")))
        # bad arguments
        p = self.shale("object", "promote", "imgs", "ais://pm")
        self.assertEqual(p.returncode, 1)
        self.assertIn('PATH "imgs" must be absolute', p.stderr)
        p = self.shale("object", "promote", self.c.dir, "ais://pm")
        self.assertEqual(p.returncode, 1)
        self.assertIn("promote.dir", p.stderr)
        p = self.shale("object", "promote", src, "ais://pm", "--target", "t[nosuch]")
        self.assertEqual(p.returncode, 1)
        self.assertIn("nosuch", p.stderr)
        p = self.shale("object", "promote", src, "ais://pm", "--recursve")
        self.assertEqual(p.returncode, 1)
        self.assertIn("--recursve", p.stderr)

    def test_show_cluster_bmd(self):
        self.mkbucket("bm")
        p = self.shale("show", "cluster", "bmd")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("bm", p.stdout)
        p = self.shale("show", "cluster", "bmd", "t[nosuch]")
        self.assertEqual(p.returncode, 1)
        self.assertIn("nosuch", p.stderr)

    def metric(self, node_url, name):
        import re
        m = re.search(r"(?m)^%s\{node_id=\"[^\"]+\"\} (\d+)$" % re.escape(name), requests.get(node_url + "/metrics").text)
        return int(m.group(1))

    def test_reset_stats(self):
        self.mkbucket("rs")
        for i in range(4):
            self.assertEqual(self.s.put(self.url + "/v1/objects/rs/o%d" % i, data=b"z" * 10).status_code, 200)
        self.s.get(self.url + "/v1/objects/rs/nosuch")
        tmap = self.c.smap()["tmap"]
        tids = sorted(tmap)
        turls = [tmap[t]["public_net"]["direct_url"] for t in tids]
        self.assertGreater(sum(self.metric(u, "ais_target_put_count") for u in turls), 0)
        p = self.shale("cluster", "reset-stats", "--errors-only")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.count("error counters reset to 0"), 3, p.stdout)
        self.assertEqual(sum(self.metric(u, "ais_target_err_get_count") for u in turls), 0)
        self.assertGreater(sum(self.metric(u, "ais_target_put_count") for u in turls), 0)
        tid = tids[0]
        p = self.shale("cluster", "reset-stats", "t[%s]" % tid)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(p.stdout.strip(), "%s: counters reset to 0" % tid)
        self.assertEqual(self.metric(turls[0], "ais_target_put_count"), 0)
        p = self.shale("cluster", "reset-stats")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sum(self.metric(u, "ais_target_put_count") for u in turls), 0)
        p = self.shale("cluster", "reset-stats", "t[nosuch]")
        self.assertEqual(p.returncode, 1)
        self.assertIn('node "nosuch" is not in the cluster map', p.stderr)
        p = self.shale("cluster", "reset-stats", "--error-only")
        self.assertEqual(p.returncode, 1)
        self.assertIn("--error-only", p.stderr)

    def test_download_logs(self):
        import tarfile
        import tempfile
        ids = sorted(self.c.smap()["pmap"]) + sorted(self.c.smap()["tmap"])
        d = tempfile.mkdtemp(dir=self.tmp)
        p = self.shale("cluster", "download-logs", "--dir", d)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(sorted(os.listdir(d)), sorted(i + ".tar.gz" for i in ids))
        for i in ids:
            with tarfile.open(os.path.join(d, i + ".tar.gz")) as t:
                self.assertTrue(any(n.endswith("shaled.log") for n in t.getnames()), (i, t.getnames()))
        p = self.shale("cluster", "download-logs", "t[nosuch]", "--dir", d)
        self.assertEqual(p.returncode, 1)
        self.assertIn('"nosuch" is not in the cluster map', p.stderr)
        p = self.shale("cluster", "download-logs", "--dir", os.path.join(d, "nosuch"))
        self.assertEqual(p.returncode, 1)
        self.assertIn("--dir", p.stderr)
        # log get: the current log of one node, into a file or stdout
        tid = sorted(self.c.smap()["tmap"])[0]
        out = os.path.join(d, "t.log")
        p = self.shale("log", "get", "t[%s]" % tid, out)
        self.assertEqual(p.returncode, 0, p.stderr)
        with open(out, errors="replace") as f:
            self.assertIn(tid, f.read())
        p = self.shale("log", "get", tid, "-")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(tid, p.stdout)
        p = self.shale("log", "get", "t[%s]" % tid, os.path.join(d, "a.tar.gz"), "--all")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(tarfile.is_tarfile(os.path.join(d, "a.tar.gz")))
        p = self.shale("log", "get", "t[nosuch]", "-")
        self.assertEqual(p.returncode, 1)
        self.assertIn("nosuch", p.stderr)
        p = self.shale("log", "get")
        self.assertEqual(p.returncode, 1)
        self.assertIn("log get", p.stderr)

    def test_reload_backend_creds(self):
        p = self.shale("cluster", "reload-backend-creds")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("reads its credentials file", p.stdout)
        p = self.shale("cluster", "reload-backend-creds", "aws")
        self.assertEqual(p.returncode, 1)
        self.assertIn('"aws"', p.stderr)

    def test_zz_cluster_shutdown(self):
        """last: the cluster is gone after it"""
        p = self.shale("cluster", "shutdown", input="")
        self.assertEqual(p.returncode, 1)
        self.assertIn("add -y (--yes)", p.stderr)
        self.assertEqual(self.s.get(self.url + "/v1/daemon", params={"what": "smap"}).status_code, 200)
        names = [n["name"] for n in self.c.topology()["nodes"]]
        pids = [self.c.pid(n) for n in names]
        self.assertTrue(all(pids), pids)
        p = self.shale("cluster", "shutdown", "-y")
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertEqual(p.stdout.count("shutting down"), len(names), p.stdout)
        wait_until(lambda: not any(os.path.exists("/proc/%d" % pid) and not _zombie(pid) for pid in pids), 30,
                   what="every node stopped")

    def test_auth_update(self):
        p = self.shale("auth", "add", "role", "rr", "ro", "--desc", "readers")
        self.assertEqual(p.returncode, 0, p.stderr)
        p = self.shale("auth", "update", "role", "rr", "--desc", "all readers")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("Role rr updated", p.stdout)
        role = self.s.get(self.url + "/v1/roles/rr").json()
        self.assertEqual(role["desc"], "all readers")
        p = self.shale("auth", "update", "role", "rr", "GET,HEAD-OBJECT", "--bucket", "ais://imgs")
        self.assertEqual(p.returncode, 0, p.stderr)
        role = self.s.get(self.url + "/v1/roles/rr").json()
        self.assertEqual([b["bck"]["name"] for b in role["buckets"]], ["imgs"], role)
        self.assertEqual(role["desc"], "all readers")
        p = self.shale("auth", "update", "role", "rr")
        self.assertEqual(p.returncode, 1)
        self.assertIn("--desc", p.stderr)
        p = self.shale("auth", "update", "role", "nosuch-role", "--desc", "x")
        self.assertEqual(p.returncode, 1)
        self.assertIn("nosuch-role", p.stderr)
        # a cluster: this one, registered under an alias, then its URL and alias changed
        uuid = self.c.smap()["uuid"]
        p = self.shale("auth", "add", "cluster", "here", self.url)
        self.assertEqual(p.returncode, 0, p.stderr)
        url2 = self.url.replace("127.0.0.1", "localhost")
        p = self.shale("auth", "update", "cluster", "here", self.url, url2, "--alias", "there")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("Cluster %s updated" % uuid, p.stdout)
        rec = self.s.get(self.url + "/v1/clusters/" + uuid).json()["clusters"][uuid]
        self.assertEqual((rec["alias"], rec["urls"]), ("there", [self.url, url2]))
        p = self.shale("auth", "update", "cluster", "there", "ftp://x")
        self.assertEqual(p.returncode, 1)
        self.assertIn('"ftp://x" is not a cluster URL', p.stderr)
        p = self.shale("auth", "update", "cluster", "nosuch-clu", self.url)
        self.assertEqual(p.returncode, 1)
        self.assertIn("nosuch-clu", p.stderr)
        self.assertEqual(self.shale("auth", "rm", "cluster", uuid).returncode, 0)

    def test_alias_reset_and_tls_validate(self):
        conf = os.path.join(self.tmp, "cli-conf.json")
        env = {"SHALE_CLI_CONFIG": conf}
        for name in ("lsa", "lsb"):
            self.assertEqual(self.shale("alias", "set", name, "ls", env=env).returncode, 0)
        p = self.shale("alias", "reset", env=env)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("Aliases reset: 2 removed", p.stdout)
        self.assertNotIn("lsa", self.shale("alias", "ls", env=env).stdout)
        p = self.shale("alias", "reset", "lsa", env=env)
        self.assertEqual(p.returncode, 1)
        self.assertIn('"lsa"', p.stderr)
        # a cluster over http: no node has a certificate to validate
        p = self.shale("tls", "validate-certificates")
        self.assertEqual(p.returncode, 1, p.stdout)
        self.assertIn("3 of 3 nodes have no valid certificate", p.stdout)

    def test_mountpath_fshc(self):
        import json
        tmap = self.c.smap()["tmap"]
        tid = sorted(tmap)[0]
        turl = tmap[tid]["public_net"]["direct_url"]
        mp = requests.get(turl + "/v1/daemon", params={"what": "mountpaths"}).json()["available"][0]
        p = self.shale("storage", "mountpath", "fshc", "t[%s]" % tid, mp)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        self.assertIn("t[%s] %s (ok): healthy" % (tid, mp), p.stdout)
        for c in ("daemon_id", "probe", "statvfs"):
            self.assertRegex(p.stdout, r"(?m)^  %s\s+ok: " % c)
        self.assertEqual([f for f in os.listdir(os.path.join(mp, ".shale")) if f.startswith("fshc.")], [])
        # a daemon_id that names another node: not healthy, exit 1
        idf = os.path.join(mp, ".shale", "daemon_id")
        with open(idf) as f:
            saved = f.read()
        try:
            with open(idf, "w") as f:
                f.write("someone-else")
            p = self.shale("storage", "mountpath", "fshc", tid, mp, "--json")
            self.assertEqual(p.returncode, 1, p.stdout + p.stderr)
            j = json.loads(p.stdout)
            self.assertFalse(j["healthy"])
            self.assertIn("someone-else", j["checks"]["daemon_id"]["error"])
            self.assertTrue(j["checks"]["probe"]["ok"])
        finally:
            with open(idf, "w") as f:
                f.write(saved)
        p = self.shale("storage", "mountpath", "fshc", tid, "/nosuch/mp")
        self.assertEqual(p.returncode, 1)
        self.assertIn("has no mountpath /nosuch/mp", p.stderr)
        p = self.shale("storage", "mountpath", "fshc", tid, "rel/mp")
        self.assertEqual(p.returncode, 1)
        self.assertIn('MOUNTPATH "rel/mp" is not an absolute path', p.stderr)
        pid = sorted(self.c.smap()["pmap"])[0]
        p = self.shale("storage", "mountpath", "fshc", "p[%s]" % pid, mp)
        self.assertEqual(p.returncode, 1)
        self.assertIn("gateway", p.stderr)

    def test_random_node_mountpath_and_lru(self):
        smap = self.c.smap()
        for argv, ids in ((("advanced", "random-node"), smap["tmap"]),
                          (("advanced", "random-node", "--type", "proxy"), smap["pmap"])):
            p = self.shale(*argv)
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertIn(p.stdout.strip(), ids, (argv, p.stdout))
        p = self.shale("advanced", "random-node", "--type", "disk")
        self.assertEqual(p.returncode, 1)
        self.assertIn('--type "disk"', p.stderr)
        tid = sorted(smap["tmap"])[0]
        mps = requests.get(smap["tmap"][tid]["public_net"]["direct_url"] + "/v1/daemon",
                           params={"what": "mountpaths"}).json()["available"]
        p = self.shale("advanced", "random-mountpath", "t[%s]" % tid)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn(p.stdout.strip(), mps)
        p = self.shale("advanced", "random-mountpath")
        self.assertEqual(p.returncode, 1)
        self.assertIn("advanced random-mountpath", p.stderr)
        p = self.shale("advanced", "random-mountpath", "t[nosuch]")
        self.assertEqual(p.returncode, 1)
        self.assertIn("nosuch", p.stderr)
        # bucket lru: the state, then set
        self.mkbucket("lr")
        p = self.shale("bucket", "lru", "ais://lr")
        self.assertEqual((p.returncode, p.stdout.strip()), (0, "ais://lr: LRU eviction disabled"), p.stderr)
        p = self.shale("bucket", "lru", "ais://lr", "--enable")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("LRU eviction enabled", p.stdout)
        self.assertTrue(self.props("lr")["lru"]["enabled"])
        p = self.shale("bucket", "lru", "ais://lr", "--disable")
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertFalse(self.props("lr")["lru"]["enabled"])
        p = self.shale("bucket", "lru", "ais://lr", "--enable", "--disable")
        self.assertEqual(p.returncode, 1)
        self.assertIn("--enable and --disable", p.stderr)
        p = self.shale("bucket", "lru", "ais://nosuch-lr", "--enable")
        self.assertEqual(p.returncode, 1)
        self.assertIn("nosuch-lr", p.stderr)


if __name__ == "__main__":
    main()
