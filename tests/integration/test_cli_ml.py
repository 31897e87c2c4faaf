# SPDX-License-Identifier: MIT
"""`shale ml plan create|ls|show|rm|batch` against a gateway and 2 targets, the Python reader
python/shale_data (DDP ranks x DataLoader workers cover each batch once; resume from a state_dict),
`make install DESTDIR=...` placing it and the completions, the bash (and zsh) completion script made from
the help table, and `shale version` showing the cluster's version."""
import io
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
import unittest

from harness import SHALE, SRC, BUILD, make_tar, start_cluster, stop_cluster, main

PY = "/usr/bin/python3"
PYDIR = os.path.abspath(os.path.join(SRC, "python"))
SHARDS, PER, BS = 6, 10, 8          # 60 samples, 8 batches of 8 (the last of 4)


def completion_script():
    p = subprocess.run([SHALE, "completion", "bash"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, p.stderr
    return p.stdout


def complete(script, words):
    """what the bash completion function offers for the command line words (the last one being completed)"""
    arr = " ".join("'%s'" % w for w in words)
    code = "%s\ncomplete -p shale >/dev/null || exit 3\nCOMP_WORDS=(%s); COMP_CWORD=%d; _shale\n" \
           "printf '%%s\\n' \"${COMPREPLY[@]}\"\n" % (script, arr, len(words) - 1)
    p = subprocess.run(["bash", "-c", code], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, (p.returncode, p.stderr)
    return [x for x in p.stdout.split("\n") if x]


class TestCompletion(unittest.TestCase):
    def test_bash(self):
        s = completion_script()
        self.assertEqual(complete(s, ["shale", "buc"]), ["bucket"])
        verbs = complete(s, ["shale", "bucket", ""])
        for v in ("create", "ls", "rm", "cp", "mv", "props", "summary", "evict"):
            self.assertIn(v, verbs)
        self.assertEqual(complete(s, ["shale", "ls", "--pre"]), ["--prefix"])
        self.assertEqual(complete(s, ["shale", "ml", "plan", "cr"]), ["create"])
        self.assertEqual(complete(s, ["shale", "ml", "plan", "create", "x", "--batch"]), ["--batch-size"])
        # flags of a leaf come after its arguments and other flags too
        self.assertIn("--drop-last", complete(s, ["shale", "ml", "plan", "create", "n", "--seed", "1", "--d"]))
        self.assertEqual(complete(s, ["shale", "compl"]), ["completion"])

    def test_zsh(self):
        p = subprocess.run([SHALE, "completion", "zsh"], capture_output=True, text=True, timeout=30)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertTrue(p.stdout.startswith("#compdef shale"))
        if not shutil.which("zsh"):
            self.skipTest("zsh is not installed: only the script's generation was checked, not that zsh parses it")
        d = tempfile.mkdtemp(prefix="shale-zsh-")
        with open(os.path.join(d, "_shale"), "w") as f:
            f.write(p.stdout)
        f = os.path.join(d, "_shale")
        r = subprocess.run(["zsh", "-n", f], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        # loaded by compinit: registered for shale, and its tables are the CLI's
        r = subprocess.run(["zsh", "-fc", "autoload -U compinit; compinit -u -d %s/zcd; source %s; "
                            "echo ${_comps[shale]}; _shale_subs bucket; _shale_flags 'ml plan create'" % (d, f)],
                           capture_output=True, text=True, timeout=30)
        shutil.rmtree(d)
        self.assertEqual(r.returncode, 0, r.stderr)
        lines = r.stdout.splitlines()
        self.assertEqual(lines[0], "_shale")
        self.assertIn("mv", lines[1].split())
        self.assertIn("--batch-size", lines[2].split())

    def test_bad_shell(self):
        p = subprocess.run([SHALE, "completion", "fish"], capture_output=True, text=True, timeout=30)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("bash or zsh", p.stderr)


class TestInstall(unittest.TestCase):
    def test_make_install_destdir(self):
        d = tempfile.mkdtemp(prefix="shale-destdir-")
        try:
            p = subprocess.run(["make", "-C", SRC, "install", "DESTDIR=" + d, "PREFIX=/usr"], capture_output=True,
                               text=True, timeout=600)
            self.assertEqual(p.returncode, 0, p.stdout[-2000:] + p.stderr[-2000:])
            site = os.path.join(d, "usr", "lib", "python3", "dist-packages")
            self.assertTrue(os.path.isfile(os.path.join(site, "shale_data", "__init__.py")))
            self.assertTrue(os.path.isfile(os.path.join(d, "usr", "share", "bash-completion", "completions", "shale")))
            self.assertTrue(os.path.isfile(os.path.join(d, "usr", "share", "zsh", "vendor-completions", "_shale")))
            with open(os.path.join(d, "usr", "share", "bash-completion", "completions", "shale")) as f:
                self.assertEqual(f.read(), completion_script())
            r = subprocess.run([PY, "-c", "import shale_data, sys; print(shale_data.__file__); "
                                "print('torch' in sys.modules)"], capture_output=True, text=True, timeout=60,
                               env=dict(os.environ, PYTHONPATH=site), cwd=d)
            self.assertEqual(r.returncode, 0, r.stderr)
            where, torch_loaded = r.stdout.split()
            self.assertTrue(where.startswith(site), where)
            self.assertEqual(torch_loaded, "False", "torch is imported only when a PlanDataset is made")
        finally:
            shutil.rmtree(d, ignore_errors=True)


class TestCLIMl(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        start_cluster(cls, targets=2)
        r = cls.s.post(cls.url + "/v1/buckets/ds", json={"action": "create-bck"}, timeout=30)
        r.raise_for_status()
        for i in range(SHARDS):
            members = []
            for j in range(PER):
                key = "k%02d-%02d" % (i, j)
                members += [(key + ".jpg", b"img %d %d" % (i, j)), (key + ".cls", b"%d" % (j % 3))]
            cls.s.put(cls.url + "/v1/objects/ds/sh-%d.tar" % i, data=make_tar(members),
                      timeout=30).raise_for_status()

    @classmethod
    def tearDownClass(cls):
        stop_cluster(cls)

    def shale(self, *args):
        return subprocess.run([SHALE] + list(args), capture_output=True, text=True, timeout=120,
                              env=dict(os.environ, AIS_ENDPOINT=self.url))

    def ok(self, *args):
        p = self.shale(*args)
        self.assertEqual(p.returncode, 0, "%s: %s%s" % (args, p.stdout, p.stderr))
        return p.stdout

    def bad(self, args, *texts, code=None):
        p = self.shale(*args)
        self.assertNotEqual(p.returncode, 0, "%s: %s" % (args, p.stdout))
        if code is not None:
            self.assertEqual(p.returncode, code, p.stderr)
        for t in texts:
            self.assertIn(t, p.stderr, args)
        return p.stderr

    def test_1_plan_cli(self):
        out = self.ok("ml", "plan", "create", "p1", "ais://ds", "--template", "sh-{0..5}.tar", "--batch-size", "8",
                      "--seed", "7", "--shuffle-block", "2")
        self.assertIn("Created plan p1: 6 shards, 60 samples, 8 batches of 8 (seed 7)", out)
        j = json.loads(self.ok("ml", "plan", "create", "p2", "ais://ds", "--prefix", "sh-", "--batch-size", "8",
                               "--drop-last", "--json"))
        self.assertEqual((j["batches"], j["drop_last"], j["prefix"], j["shuffle_block"]), (7, True, "sh-", 4))
        self.assertIsInstance(j["seed"], int)
        # every flag reached the server
        info = self.s.get(self.url + "/v1/ml/plan/p1", timeout=30).json()
        self.assertEqual((info["seed"], info["shuffle_block"], info["batch_size"], info["template"],
                          info["drop_last"]), (7, 2, 8, "sh-{0..5}.tar", False))
        # ls: a table and --json
        lines = self.ok("ml", "plan", "ls").splitlines()
        self.assertEqual(lines[0].split()[:3], ["NAME", "BUCKET", "SHARDS"])
        rows = {ln.split()[0]: ln.split() for ln in lines[1:]}
        self.assertEqual(sorted(rows), ["p1", "p2"])
        self.assertEqual(rows["p1"][1:6], ["ais://ds", "sh-{0..5}.tar", "8", "60", "8"])
        self.assertEqual(rows["p2"][2], "sh-*.tar")
        self.assertEqual(sorted(p["name"] for p in json.loads(self.ok("ml", "plan", "ls", "--json"))), ["p1", "p2"])
        self.assertNotIn("NAME", self.ok("ml", "plan", "ls", "-H"))
        # show
        out = self.ok("ml", "plan", "show", "p1")
        props = {ln.split()[0]: ln.split()[1] for ln in out.splitlines()[1:]}
        self.assertEqual((props["seed"], props["batches"], props["shuffle_block"], props["bck"]),
                         ("7", "8", "2", "ds"))
        self.assertEqual(json.loads(self.ok("ml", "plan", "show", "p1", "--json"))["samples"], 60)
        # batch: the same bytes as the API's
        d = tempfile.mkdtemp(prefix="shale-climl-")
        out = os.path.join(d, "b.tar")
        self.assertIn("Wrote %s (batch 3 of epoch 2" % out,
                      self.ok("ml", "plan", "batch", "p1", out, "--epoch", "2", "--index", "3"))
        api = self.s.get(self.url + "/v1/ml/plan/p1/batch", params={"epoch": 2, "index": 3}, timeout=60)
        with open(out, "rb") as f:
            self.assertEqual(f.read(), api.content)
        p = subprocess.run([SHALE, "ml", "plan", "batch", "p1", "-", "--epoch", "0", "--index", "7"],
                           capture_output=True, env=dict(os.environ, AIS_ENDPOINT=self.url), timeout=60)
        with tarfile.open(fileobj=io.BytesIO(p.stdout)) as tf:
            self.assertEqual(len(tf.getmembers()), 8)       # the last batch: 4 samples of 2 members
        shutil.rmtree(d)
        # rm
        self.assertIn("Removed plan p2", self.ok("ml", "plan", "rm", "p2"))
        self.assertEqual(self.s.get(self.url + "/v1/ml/plan/p2", timeout=30).status_code, 404)
        self.bad(("ml", "plan", "rm", "p2"), "ml plan rm p2")
        self.ok("ml", "plan", "rm", "p2", "--ignore-error")

    def test_2_plan_errors(self):
        self.bad(("ml", "plan", "create", "p9", "ais://ds", "--prefix", "sh-"), "--batch-size N is required")
        self.bad(("ml", "plan", "create", "p9", "ais://ds", "--batch-size", "4"), "--template", "--prefix")
        self.bad(("ml", "plan", "create", "p9", "ais://ds", "--prefix", "a", "--template", "b", "--batch-size", "4"),
                 "exactly one")
        self.bad(("ml", "plan", "create", "p9", "ais://ds", "--prefix", "sh-", "--batch-size", "0"),
                 "--batch-size expects an integer >= 1")
        self.bad(("ml", "plan", "create", "p9", "ais://ds", "--prefix", "sh-", "--batch-size", "4", "--seed", "-3"),
                 "--seed expects")
        self.bad(("ml", "plan", "create", "p9", "ais://ds", "--prefix", "sh-", "--batch-size", "4",
                  "--shuffle-block", "x"), "--shuffle-block expects")
        self.bad(("ml", "plan", "create", "bad name", "ais://ds", "--prefix", "sh-", "--batch-size", "4"),
                 "plan name", "A-Z a-z 0-9")
        self.bad(("ml", "plan", "create", "p9", "ais://ds", "--prefix", "nothing-", "--batch-size", "4"),
                 "ml plan create p9", "no .tar shards")
        self.bad(("ml", "plan", "create", "p9", "ais://ds", "--prefix", "sh-", "--batch-size", "4", "--frob"),
                 "--frob")
        self.bad(("ml", "plan", "create", "p9"), "usage: shale ml plan create NAME")
        self.bad(("ml", "plan", "show", "nope"), "ml plan show nope")
        self.bad(("ml", "plan", "batch", "nope", "-", "--epoch", "0", "--index", "0"), "ml plan batch nope")
        self.bad(("ml", "plan", "batch", "p1", "-", "--epoch", "0"), "--index I are both required")
        self.bad(("ml", "plan", "batch", "p1", "-", "--epoch", "-1", "--index", "0"), "--epoch expects")
        self.bad(("ml", "plan", "batch", "p1", "-", "--epoch", "0", "--index", "99"), "8 batches")
        self.bad(("ml", "plan", "frob"), "ml plan frob", "create, ls, show, rm, batch")

    def test_3_dataset(self):
        """2 ranks x 2 DataLoader workers read each batch of each epoch exactly once; a state_dict at
        (epoch, batch) resumes with exactly the rest"""
        self.ok("ml", "plan", "create", "pd", "ais://ds", "--template", "sh-{0..5}.tar", "--batch-size", "8",
                "--seed", "3")
        code = r"""
import json, sys
sys.path.insert(0, %r)
from torch.utils.data import DataLoader
from shale_data import PlanDataset
url = %r
def run(state=None, epochs=None, mode="batch", workers=2):
    out = []
    for rank in (0, 1):
        ds = PlanDataset(url, "pd", mode=mode, rank=rank, world_size=2, epochs=epochs)
        if state:
            ds.load_state_dict(state)
        for it in DataLoader(ds, batch_size=None, num_workers=workers):
            if mode == "batch":
                out.append([rank, it["epoch"], it["index"], [s["__key__"] for s in it["samples"]]])
            elif mode == "tar":
                out.append([rank, it["epoch"], it["index"], [len(it["tar"])]])
            else:
                out.append([rank, it["__epoch__"], it["__index__"], [it["__key__"]]])
    return out
res = {"two_epochs": run(epochs=2), "resumed": run({"epoch": 1, "batch": 5}, epochs=2),
       "samples": run(mode="sample"), "tar": run(mode="tar", workers=0)}
ds = PlanDataset(url, "pd", rank=1, world_size=2)
it = iter(ds); next(it)
res["state"] = ds.state_dict()
res["len"] = len(PlanDataset(url, "pd", rank=0, world_size=2))
print(json.dumps(res))
""" % (PYDIR, self.url)
        p = subprocess.run([PY, "-c", code], capture_output=True, text=True, timeout=600)
        self.assertEqual(p.returncode, 0, p.stderr)
        res = json.loads(p.stdout)
        full = res["two_epochs"]
        for e in (0, 1):
            got = sorted(i for _, ep, i, _ in full if ep == e)
            self.assertEqual(got, list(range(8)), "epoch %d: each batch once" % e)
            # disjoint shares: a batch is read by one rank only, and both ranks read
            self.assertEqual({r for r, ep, _, _ in full if ep == e}, {0, 1})
            keys = [k for _, ep, i, ks in sorted(full, key=lambda x: x[2]) if ep == e for k in ks]
            self.assertEqual(len(keys), 60)
            self.assertEqual(len(set(keys)), 60)
        # the keys are the batch API's
        api = self.s.get(self.url + "/v1/ml/plan/pd/batch", params={"epoch": 1, "index": 2}, timeout=60)
        with tarfile.open(fileobj=io.BytesIO(api.content)) as tf:
            want = [m.name.split(".")[0] for m in tf.getmembers()][::2]
        self.assertEqual([ks for _, ep, i, ks in full if (ep, i) == (1, 2)], [want])
        # resumed at (1, 5): batches 5, 6, 7 of epoch 1, once each, with the same samples
        rest = res["resumed"]
        self.assertEqual(sorted((ep, i) for _, ep, i, _ in rest), [(1, 5), (1, 6), (1, 7)])
        self.assertEqual(sorted((ep, i, ks) for _, ep, i, ks in [(a, b, c, tuple(d)) for a, b, c, d in rest]),
                         sorted((ep, i, tuple(ks)) for _, ep, i, ks in full if ep == 1 and i >= 5))
        # sample mode: the 60 samples of epoch 0, once each
        self.assertEqual(sorted(k for _, _, _, [k] in res["samples"]),
                         sorted(k for _, ep, _, ks in full if ep == 0 for k in ks))
        # tar mode: the batch API's bytes as they are
        self.assertEqual(sorted(i for _, _, i, _ in res["tar"]), list(range(8)))
        self.assertEqual([n for _, _, i, [n] in res["tar"] if i == 2][0],
                         len(self.s.get(self.url + "/v1/ml/plan/pd/batch", params={"epoch": 0, "index": 2},
                                        timeout=60).content))
        # rank 1 of 2, one reader: first batch 1, so the next position is (0, 2)
        self.assertEqual((res["state"]["epoch"], res["state"]["batch"]), (0, 2))
        self.assertEqual(res["len"], 4)

    def test_3b_torch_distributed(self):
        """no rank arguments: the rank and world size are torch.distributed's (2 processes, gloo)"""
        self.ok("ml", "plan", "create", "pdd", "ais://ds", "--template", "sh-{0..5}.tar", "--batch-size", "8")
        d = tempfile.mkdtemp(prefix="shale-dist-")
        code = ("import sys, json; sys.path.insert(0, %r)\n"
                "import torch.distributed as dist\n"
                "dist.init_process_group('gloo', init_method='file://%s/rdv', rank=int(sys.argv[1]), world_size=2)\n"
                "from shale_data import PlanDataset\n"
                "from torch.utils.data import DataLoader\n"
                "ds = PlanDataset(%r, 'pdd')\n"
                "print(json.dumps([ds.world(), [it['index'] for it in DataLoader(ds, batch_size=None, "
                "num_workers=2)]]))\n"
                "dist.destroy_process_group()\n") % (PYDIR, d, self.url)
        procs = [subprocess.Popen([PY, "-c", code, str(r)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for r in (0, 1)]
        outs = [p.communicate(timeout=300) for p in procs]
        shutil.rmtree(d, ignore_errors=True)
        for p, (out, err) in zip(procs, outs):
            self.assertEqual(p.returncode, 0, err)
        got = [json.loads(out) for out, _ in outs]
        self.assertEqual([w for w, _ in got], [[0, 2], [1, 2]])
        self.assertEqual(sorted(got[0][1] + got[1][1]), list(range(8)))
        self.assertFalse(set(got[0][1]) & set(got[1][1]))

    def test_4_version(self):
        out = self.ok("version").splitlines()
        self.assertTrue(out[0].startswith("shale version "), out)
        self.assertTrue(out[1].startswith("cluster version "), out)
        j = json.loads(self.ok("version", "--json"))
        self.assertEqual(j["cli"], j["cluster"])
        p = subprocess.run([SHALE, "version"], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, AIS_ENDPOINT="http://127.0.0.1:1"))
        self.assertEqual(p.returncode, 0)
        self.assertIn("not reachable", p.stderr)
        self.assertEqual(len(p.stdout.splitlines()), 1)


if __name__ == "__main__":
    main()
