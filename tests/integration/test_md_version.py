# SPDX-License-Identifier: MIT
"""Metadata schema version on a real standalone node: a node whose node LMDB
(or a mountpath's object LMDB) records a newer schema refuses to start with a
message naming the path and what to do, and starts with its data once the
record is restored; a node LMDB without a record (written before versioning)
is migrated with one log line.

The record is read and written by a tiny C helper built here against liblmdb
(a build dependency already), at the place metadata/md.h documents: node
environment <confdir>/meta, main DB, key "\\0schema"; object environment
<mountpath>/.shale/md, DB "meta", key "schema"; value ASCII decimal."""
import os
import shutil
import subprocess
import tempfile
import unittest

import requests

from harness import Node, main

CURRENT = "1"       # SL_MD_SCHEMA_VERSION in metadata/md.h
NODE_KEY = b"\0schema".hex()
OBJ_KEY = b"schema".hex()

HELPER_C = r"""
#include <errno.h>
#include <lmdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
/* mdbrec DIR DB KEYHEX get|del|put [VALUE]   (DB "" = main DB)
 * get prints the value; exit 0 done, 1 not found, 2 error */
int main(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    const char *dir = argv[1], *db = argv[2][0] ? argv[2] : NULL, *hex = argv[3], *op = argv[4];
    unsigned char key[256];
    size_t klen = strlen(hex) / 2;
    if (klen == 0 || klen > sizeof(key))
        return 2;
    for (size_t i = 0; i < klen; i++) {
        unsigned x;
        if (sscanf(hex + 2 * i, "%2x", &x) != 1)
            return 2;
        key[i] = (unsigned char)x;
    }
    int ro = !strcmp(op, "get");
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    int rc = mdb_env_create(&env);
    if (!rc)
        rc = mdb_env_set_maxdbs(env, 8);
    if (!rc)
        rc = mdb_env_open(env, dir, 0, 0644);
    if (!rc)
        rc = mdb_txn_begin(env, NULL, ro ? MDB_RDONLY : 0, &txn);
    if (!rc)
        rc = mdb_dbi_open(txn, db, 0, &dbi);
    if (rc) {
        fprintf(stderr, "mdbrec %s: %s\n", dir, mdb_strerror(rc));
        return 2;
    }
    MDB_val k = { klen, key }, v;
    if (ro) {
        rc = mdb_get(txn, dbi, &k, &v);
        if (rc == 0)
            fwrite(v.mv_data, 1, v.mv_size, stdout);
        mdb_txn_abort(txn);
    } else {
        if (!strcmp(op, "del")) {
            rc = mdb_del(txn, dbi, &k, NULL);
        } else if (!strcmp(op, "put") && argc > 5) {
            v.mv_data = argv[5];
            v.mv_size = strlen(argv[5]);
            rc = mdb_put(txn, dbi, &k, &v, 0);
        } else {
            rc = EINVAL;
        }
        if (rc)
            mdb_txn_abort(txn);
        else
            rc = mdb_txn_commit(txn);
    }
    mdb_env_close(env);
    if (rc && rc != MDB_NOTFOUND)
        fprintf(stderr, "mdbrec %s %s: %s\n", dir, op, mdb_strerror(rc));
    return rc == 0 ? 0 : rc == MDB_NOTFOUND ? 1 : 2;
}
"""


class TestMdVersion(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.htmp = tempfile.mkdtemp(prefix="shale-mdv-helper-")
        src = os.path.join(cls.htmp, "mdbrec.c")
        cls.helper = os.path.join(cls.htmp, "mdbrec")
        with open(src, "w") as f:
            f.write(HELPER_C)
        cc = os.environ.get("CC") or shutil.which("cc") or "gcc"
        p = subprocess.run([cc, "-o", cls.helper, src, "-llmdb"], capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise AssertionError("cannot build the LMDB helper with %s (needs liblmdb-dev, a build dependency):\n%s"
                                 % (cc, p.stderr))

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.htmp, ignore_errors=True)

    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="shale-mdv-")
        self.node = Node(self.tmp)

    def tearDown(self):
        self.node.stop()
        if os.environ.get("SHALE_KEEP_TMP"):
            print("kept", self.tmp)
        else:
            shutil.rmtree(self.tmp, ignore_errors=True)

    # helpers
    def rec(self, path, db, keyhex, op, value=None):
        args = [self.helper, path, db, keyhex, op] + ([value] if value is not None else [])
        p = subprocess.run(args, capture_output=True, timeout=30)
        self.assertIn(p.returncode, (0, 1), "mdbrec %s failed: %s" % (op, p.stderr.decode(errors="replace")))
        return p.stdout.decode(errors="replace") if p.returncode == 0 else None

    def node_md(self):
        return os.path.join(self.node.config["confdir"], "meta")

    def obj_md(self):
        return os.path.join(list(self.node.config["fspaths"])[0], ".shale", "md")

    def populate(self):
        """Start the node, make a bucket with one object, stop it cleanly."""
        self.node.start()
        r = requests.post(self.node.url + "/v1/buckets/keep", json={"action": "create-bck"}, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        self.data = os.urandom(5000)
        r = requests.put(self.node.url + "/v1/objects/keep/dir/obj", data=self.data, timeout=30)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.node.stop(), 0)

    def stdout_size(self):
        try:
            return os.path.getsize(os.path.join(self.node.dir, "stdout.log"))
        except OSError:
            return 0

    def start_refused(self):
        """Start the node, expect it to exit non-zero within 30 s; returns what it printed."""
        off = self.stdout_size()
        self.node.start(wait=False)
        try:
            rc = self.node.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.node.stop()
            raise AssertionError("node started although its metadata records a newer schema")
        self.assertNotEqual(rc, 0, "node exited 0 instead of refusing")
        self.node.stop()
        with open(os.path.join(self.node.dir, "stdout.log"), "rb") as f:
            f.seek(off)
            return f.read().decode(errors="replace")

    def check_data(self):
        self.node.start()
        r = requests.get(self.node.url + "/v1/objects/keep/dir/obj", timeout=30)
        self.assertEqual(r.status_code, 200, r.text[:300])
        self.assertEqual(r.content, self.data)
        self.assertEqual(self.node.stop(), 0)

    # tests
    def test_node_env_newer_refused_then_restored(self):
        self.populate()
        md = self.node_md()
        self.assertEqual(self.rec(md, "", NODE_KEY, "get"), CURRENT, "node LMDB records the current schema")
        self.rec(md, "", NODE_KEY, "put", "99")
        out = self.start_refused()
        want = ("shaled: node metadata at %s was written by a newer Shale (schema 99; this build reads up to %s): "
                "run a newer shaled, or restore %s from a backup" % (md, CURRENT, md))
        self.assertIn(want, out)
        self.assertIn(want[len("shaled: "):], self.node.log(), "the refusal is in shaled.log too")
        self.assertEqual(self.rec(md, "", NODE_KEY, "get"), "99", "a refused environment is left as it was")
        self.rec(md, "", NODE_KEY, "put", CURRENT)
        self.check_data()

    def test_mountpath_env_newer_refused_then_restored(self):
        self.populate()
        md = self.obj_md()
        self.assertEqual(self.rec(md, "meta", OBJ_KEY, "get"), CURRENT, "object LMDB records the current schema")
        self.rec(md, "meta", OBJ_KEY, "put", "7")
        out = self.start_refused()
        self.assertIn("shaled: object metadata at %s was written by a newer Shale (schema 7; this build reads up "
                      "to %s): run a newer shaled" % (md, CURRENT), out)
        self.rec(md, "meta", OBJ_KEY, "put", CURRENT)
        self.check_data()

    def test_node_env_garbage_refused(self):
        self.populate()
        md = self.node_md()
        self.rec(md, "", NODE_KEY, "put", "v2")
        out = self.start_refused()
        self.assertIn('shaled: node metadata at %s has an unreadable schema version ("v2", 2 bytes' % md, out)
        self.assertIn("restore %s from a backup" % md, out)
        self.rec(md, "", NODE_KEY, "put", CURRENT)
        self.check_data()

    def test_node_env_without_version_is_migrated(self):
        self.populate()
        md = self.node_md()
        self.rec(md, "", NODE_KEY, "del")
        self.assertIsNone(self.rec(md, "", NODE_KEY, "get"))
        self.check_data()
        self.assertEqual(self.rec(md, "", NODE_KEY, "get"), CURRENT, "the migration recorded the current schema")
        line = "node metadata at %s: no schema version recorded (written before versioning); migrated to schema %s" \
            % (md, CURRENT)
        self.assertEqual(self.node.log().count(line), 1, self.node.log_tail())
        self.check_data()
        self.assertEqual(self.node.log().count(line), 1, "migrated once only")


if __name__ == "__main__":
    main()
