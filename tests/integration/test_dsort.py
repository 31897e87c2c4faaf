# SPDX-License-Identifier: MIT
"""dsort against a real standalone node and a real 3-target cluster: the
WebDataset blog's spec unchanged, every record exactly once and whole, members
adjacent and in order, the same seed giving byte-identical shards on one node
and on three targets, other formats in and out, content ordering, a dry run,
JobInfo as the Python SDK reads it, abort and remove, and bad specs refused
with 4xx before anything starts."""
import io
import json
import os
import shutil
import tarfile
import tempfile
import time
import unittest

import requests

import subprocess

from harness import SHALE, Cluster, NodeTest, main, wait_until

NSHARDS, PER, MEMBERS = 6, 12, ("jpg", "cls", "json")


def make_shard(i, fmt="w"):
    """A WebDataset shard: PER samples of three members; sample keys are
    unique across shards."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode=fmt) as tf:
        for j in range(PER):
            key = "s%02d/k%02d-%02d" % (i, i, j)
            for ext in MEMBERS:
                data = (b"%s.%s " % (key.encode(), ext.encode())) * (20 * (1 + (i * 7 + j * 3) % 11))
                if ext == "cls":
                    data = b"%d" % ((i * 31 + j * 17) % 97)
                ti = tarfile.TarInfo("%s.%s" % (key, ext))
                ti.size = len(data)
                ti.mtime = 1700000000
                tf.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def members_of(blob):
    with tarfile.open(fileobj=io.BytesIO(blob), mode="r:*") as tf:
        return [(m.name, tf.extractfile(m).read()) for m in tf.getmembers()]


class DsortApi:
    def post_sort(self, spec, raw=None):
        return self.s.post(self.url + "/v1/sort", data=raw if raw is not None else json.dumps(spec), timeout=60)

    def wait_sort(self, jid, timeout=120):
        """Wait as the Python SDK does: every target's shard creation finished, or one aborted."""
        out = {}

        def done():
            r = self.s.get(self.url + "/v1/sort", params={"uuid": jid}, timeout=30)
            self.assertEqual(r.status_code, 200, r.text)
            out["info"] = r.json()
            ms = [v["Metrics"] for v in out["info"].values()]
            return any(m["aborted"] for m in ms) or all(m["shard_creation"]["finished"] for m in ms)
        wait_until(done, timeout, interval=0.2, what="dsort " + jid)
        return out["info"]

    def upload_shards(self, bucket, fmt="w", ext=".tar"):
        self.create_bucket(bucket)
        for i in range(NSHARDS):
            r = self.put(bucket, "samples-%02d%s" % (i, ext), make_shard(i, fmt))
            self.assertEqual(r.status_code, 200, r.text)

    def output(self, bucket, prefix):
        names = sorted(n for n in self.list_all(bucket) if n.startswith(prefix))
        return {n: self.get(bucket, n).content for n in names}

    def check_records(self, shards, ordered_keys=None):
        """Every input record exactly once, whole, members adjacent and in
        their original order. Returns the record keys in output order."""
        seen, order = set(), []
        for name in sorted(shards, key=lambda n: int("".join(c for c in n.split(".")[0] if c.isdigit()) or 0)):
            last = None
            for mname, _ in members_of(shards[name]):
                key, ext = mname.split(".", 1)
                if key != last:
                    self.assertNotIn(key, seen, "record %s split or repeated (in %s)" % (key, name))
                    seen.add(key)
                    order.append(key)
                    last, exts = key, []
                exts.append(ext)
                if len(exts) == len(MEMBERS):
                    self.assertEqual(exts, list(MEMBERS), "members of %s out of order" % key)
        self.assertEqual(len(seen), NSHARDS * PER, "every record once")
        return order


class DsortOnOneNode(NodeTest, DsortApi):
    @classmethod
    def setUpClass(cls):
        super().setUpClass()
        cls.src = "images"

    def setUp(self):
        if not getattr(type(self), "_uploaded", False):
            self.upload_shards("images")
            type(self)._uploaded = True

    def test_blog_spec_unchanged(self):
        spec = {"extension": ".tar", "bck": {"name": "images"}, "input_format": "samples-{00..05}",
                "output_format": "shuffled-shard-%d", "output_shard_size": "10KB",
                "description": "shuffle image samples", "algorithm": {"kind": "shuffle", "seed": "1234"}}
        r = self.post_sort(spec)
        self.assertEqual(r.status_code, 200, r.text)
        jid = r.text
        self.assertTrue(jid.startswith("srt-"), jid)
        info = self.wait_sort(jid)
        for tinfo in info.values():
            m = tinfo["Metrics"]
            self.assertFalse(m["aborted"], m["errors"])
            self.assertEqual(m["description"], "shuffle image samples")
            # the phases' durations as AIStore sends them (the SDK's JobInfo parses integers): nanoseconds,
            # each the phase's elapsed
            for k, ph in (("started_meta_sorting", "local_extraction"), ("started_shard_creation", "meta_sorting"),
                          ("finished_shard_creation", "shard_creation")):
                self.assertIsInstance(tinfo[k], int, (k, tinfo[k]))
                self.assertEqual(tinfo[k], m[ph]["elapsed"], k)
                self.assertGreaterEqual(tinfo[k], 0)
            self.assertGreater(tinfo["started_meta_sorting"] + tinfo["finished_shard_creation"], 0)
        shards = self.output("images", "shuffled-shard-")
        self.assertGreater(len(shards), 2)
        order = self.check_records(shards)
        self.assertNotEqual(order, sorted(order), "a shuffle")
        # the same seed again: byte-identical output
        r = self.post_sort(dict(spec, output_format="again-%d"))
        self.wait_sort(r.text)
        again = self.output("images", "again-")
        self.assertEqual([again[n] for n in sorted(again)], [shards[n] for n in sorted(shards)])
        type(self).blog_shards = {n: shards[n] for n in shards}
        # listed, and removable once finished
        lst = self.s.get(self.url + "/v1/sort", params={"regex": "image"}).json()
        self.assertIn(jid, [j["id"] for j in lst])
        self.assertEqual(self.s.delete(self.url + "/v1/sort", params={"uuid": jid}).status_code, 200)
        self.assertEqual(self.s.get(self.url + "/v1/sort", params={"uuid": jid}).status_code, 404)

    def test_shard_size_counts_what_is_written(self):
        """Records of three tiny members (the cls-like case): output_shard_size is the size of the tar
        written, headers and padding included (each member takes 1 KiB there for 20 bytes of data), so
        30 KB shards are 30-35 KB, not 30 KB of data (~1.5 MB of tar, as before)."""
        self.create_bucket("tiny")
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tf:
            for j in range(200):
                for ext in ("cls", "txt", "json"):
                    data = b"%03d-%s-0123456789" % (j, ext.encode())
                    ti = tarfile.TarInfo("t%03d.%s" % (j, ext))
                    ti.size = len(data)
                    tf.addfile(ti, io.BytesIO(data))
        self.assertEqual(self.put("tiny", "in-0.tar", buf.getvalue()).status_code, 200)
        r = self.post_sort({"input_bck": "tiny", "input_format": "in-{0..0}", "output_format": "out-{000..999}",
                            "output_shard_size": "30KB", "algorithm": {"kind": "alphanumeric"}})
        self.assertEqual(r.status_code, 200, r.text)
        info = self.wait_sort(r.text)
        self.assertFalse(list(info.values())[0]["Metrics"]["aborted"], info)
        shards = self.output("tiny", "out-")
        sizes = [len(shards[n]) for n in sorted(shards)]
        self.assertGreater(len(sizes), 10, sizes)
        for sz in sizes[:-1]:
            self.assertGreaterEqual(sz, 30000, sizes)
            self.assertLessEqual(sz, 30000 + 3 * 1024 + 10240, sizes)  # one record over, GNU tar's record padding
        self.assertEqual(sum(len(members_of(b)) for b in shards.values()), 600)

    def test_alphanumeric_decreasing_tgz_out(self):
        spec = {"input_bck": {"name": "images", "provider": "ais"}, "input_format": {"template": "samples-{00..05}"},
                "input_extension": ".tar", "output_bck": {"name": "sorted"}, "output_format": "out-{0..99}",
                "output_extension": ".tgz", "output_shard_size": "20KiB",
                "algorithm": {"kind": "alphanumeric", "decreasing": True}}
        r = self.post_sort(spec)
        self.assertEqual(r.status_code, 200, r.text)
        self.wait_sort(r.text)
        shards = self.output("sorted", "out-")
        self.assertTrue(all(n.endswith(".tgz") for n in shards))
        order = self.check_records(shards)
        self.assertEqual(order, sorted(order, reverse=True))

    def test_content_order_and_dry_run(self):
        spec = {"input_bck": "ais://images", "input_format": "samples-{00..05}.tar", "output_format": "c-{000..999}",
                "output_shard_size": "8KiB", "algorithm": {"kind": "content", "extension": ".cls",
                                                            "content_key_type": "int"}}
        r = self.post_sort(dict(spec, dry_run=True))
        self.assertEqual(r.status_code, 200, r.text)
        info = self.wait_sort(r.text)
        layout = list(info.values())[0]["dry_run"]
        self.assertGreater(len(layout), 1)
        self.assertEqual(sum(x["records"] for x in layout), NSHARDS * PER)
        self.assertEqual([n for n in self.list_all("images") if n.startswith("c-")], [], "a dry run writes nothing")
        r = self.post_sort(spec)
        self.wait_sort(r.text)
        shards = self.output("images", "c-")
        vals = []
        for name in sorted(shards):
            vals += [int(d) for n, d in members_of(shards[name]) if n.endswith(".cls")]
        self.assertEqual(vals, sorted(vals))

    def test_cli_yaml_spec(self):
        spec = os.path.join(self.tmp, "spec.yaml")
        with open(spec, "w") as f:
            f.write("# as AIStore's CLI takes it\n"
                    "input_bck: {name: placeholder}\n"
                    "input_format:\n  template: samples-{00..05}\n"
                    "input_extension: .tar\n"
                    "output_format: cli-{00..99}\n"
                    "output_shard_size: 16KiB\n"
                    "description: from the CLI\n"
                    "algorithm:\n  kind: shuffle\n  seed: '99'\n")
        env = dict(os.environ, AIS_ENDPOINT=self.url)
        p = subprocess.run([SHALE, "dsort", "ais://images", "ais://clidst", "-f", spec, "--wait", "--timeout", "2m"],
                           capture_output=True, text=True, env=env, timeout=180)
        self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
        jid = p.stdout.strip().splitlines()[0]
        self.assertTrue(jid.startswith("srt-"), p.stdout)
        shards = self.output("clidst", "cli-")
        self.check_records(shards)
        p = subprocess.run([SHALE, "job", "show", jid], capture_output=True, text=True, env=env, timeout=60)
        self.assertIn("dsort", p.stdout)
        self.assertIn("Finished", p.stdout)
        p = subprocess.run([SHALE, "job", "rm", "dsort", jid], capture_output=True, text=True, env=env, timeout=60)
        self.assertEqual(p.returncode, 0, p.stderr)
        # a spec the server refuses: the CLI says why and exits non-zero
        with open(spec, "a") as f:
            f.write("bogus_field: 1\n")
        p = subprocess.run([SHALE, "start", "dsort", "-f", spec], capture_output=True, text=True, env=env, timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("bogus_field", p.stderr)

    def test_ekm(self):
        """External key maps: JSON from an ais:// object, text over http with a missing key, and Lua."""
        ekm = {"fam-low-%d": ["k0[0-2]-"], "fam-high-{0..9}": ["k0[3-5]-"]}
        self.assertEqual(self.put("images", "ekm.json", json.dumps(ekm).encode()).status_code, 200)
        base = {"input_bck": "images", "input_format": "samples-{00..05}", "output_shard_size": "48KiB",
                "algorithm": {"kind": "alphanumeric"}}
        r = self.post_sort(dict(base, ekm_file="ais://images/ekm.json"))
        self.assertEqual(r.status_code, 200, r.text)
        info = self.wait_sort(r.text)
        self.assertFalse(list(info.values())[0]["Metrics"]["aborted"], info)
        low, high = self.output("images", "fam-low-"), self.output("images", "fam-high-")
        self.assertTrue(low and high, (sorted(low), sorted(high)))
        for fam, want in ((low, ("00", "01", "02")), (high, ("03", "04", "05"))):
            for blob in fam.values():
                for name, _ in members_of(blob):
                    self.assertIn(name.split("/k")[1][:2], want, name)
        self.check_records(dict(low, **high))
        # text EKM over http: records of shard 5 match nothing; warn leaves them out
        text = "k0[0-4]-\tt-all-{00..99}\nnot a rule\n"
        self.assertEqual(self.put("images", "ekm.txt", text.encode()).status_code, 200)
        r = self.post_sort(dict(base, ekm_file=self.url + "/v1/objects/images/ekm.txt?provider=ais",
                                Config={"ekm_missing_key": "warn", "ekm_malformed_line": "warn"}))
        info = self.wait_sort(r.text)
        m = list(info.values())[0]["Metrics"]
        self.assertFalse(m["aborted"], m["errors"])
        self.assertTrue(any("no shard in the EKM" in w for w in m["warnings"]), m["warnings"])
        self.assertTrue(any("malformed" in w for w in m["warnings"]), m["warnings"])
        got = self.output("images", "t-all-")
        keys = {n.split(".")[0] for b in got.values() for n, _ in members_of(b)}
        self.assertEqual(len(keys), 5 * PER)
        # the default reaction aborts and names the record
        r = self.post_sort(dict(base, ekm_file=self.url + "/v1/objects/images/ekm.txt?provider=ais",
                                Config={"ekm_malformed_line": "ignore"}))
        info = self.wait_sort(r.text)
        self.assertIn("has no shard in the EKM", " ".join(list(info.values())[0]["Metrics"]["errors"]))
        # Lua: shard_for(key, record)
        lua = ("function shard_for(key, record)\n"
               "  local c = tonumber(record:read('.cls'))\n"
               "  if c % 2 == 0 then return 'even-%d' end\n"
               "  return 'odd-%d'\n"
               "end\n")
        r = self.post_sort(dict(base, ekm_lua=lua))
        self.assertEqual(r.status_code, 200, r.text)
        info = self.wait_sort(r.text)
        self.assertFalse(list(info.values())[0]["Metrics"]["aborted"], info)
        even, odd = self.output("images", "even-"), self.output("images", "odd-")
        for fam, rem in ((even, 0), (odd, 1)):
            for blob in fam.values():
                for name, data in members_of(blob):
                    if name.endswith(".cls"):
                        self.assertEqual(int(data) % 2, rem, name)
        self.check_records(dict(even, **odd))

    def test_lua_ordering(self):
        script = ("function sort_key(record)\n"
                  "  return -tonumber(record:read('.cls'))  -- descending by class\n"
                  "end\n")
        spec = {"input_bck": "images", "input_format": "samples-{00..05}", "output_format": "lua-{000..999}",
                "output_shard_size": "8KiB", "algorithm": {"kind": "lua", "script": script}}
        r = self.post_sort(spec)
        self.assertEqual(r.status_code, 200, r.text)
        info = self.wait_sort(r.text)
        self.assertFalse(list(info.values())[0]["Metrics"]["aborted"], info)
        shards = self.output("images", "lua-")
        vals = []
        for name in sorted(shards):
            vals += [int(d) for n, d in members_of(shards[name]) if n.endswith(".cls")]
        self.assertEqual(len(vals), NSHARDS * PER)
        self.assertEqual(vals, sorted(vals, reverse=True))
        # a runtime error names the record and the line
        r = self.post_sort(dict(spec, output_format="lx-{0..99}",
                                algorithm={"kind": "lua", "script": "function sort_key(r)\n  return r.nope.x\nend"}))
        info = self.wait_sort(r.text)
        errs = " ".join(list(info.values())[0]["Metrics"]["errors"])
        self.assertIn("record s0", errs)
        self.assertIn("line 2", errs)

    def test_bad_specs(self):
        base = {"input_bck": "images", "input_format": "samples-{00..05}", "output_format": "o-{0..99}",
                "output_shard_size": "10KiB"}
        cases = [
            (dict(base, algorithm={"kind": "random"}), 400, "valid: alphanumeric"),
            (dict(base, input_extension=".rar"), 400, "supported"),
            (dict(base, output_shard_size="100XB"), 400, "100XB"),
            (dict(base, output_format="fixed"), 400, "no counter or range"),
            (dict(base, input_bck="nosuch"), 404, "nosuch"),
            (dict(base, input_format="s-%d"), 400, "no upper bound"),
            (dict(base, algorithm={"kind": "lua", "script": "function sort_key(r)\n return +\nend"}), 400, "line"),
            (dict(base, bogus=1), 400, "bogus"),
        ]
        for spec, code, text in cases:
            r = self.post_sort(spec)
            self.assertEqual(r.status_code, code, "%s: %s" % (spec, r.text))
            self.assertIn(text, r.text)
        r = self.post_sort(None, raw="input_bck: [unclosed\n")
        self.assertEqual(r.status_code, 400, r.text)
        # YAML is taken
        r = self.post_sort(None, raw="input_bck: images\ninput_format: samples-{00..01}\noutput_format: y-{0..9}\n"
                                     "output_shard_size: 1MiB\n")
        self.assertEqual(r.status_code, 200, r.text)
        self.wait_sort(r.text)
        # a missing input shard: abort by default, named
        r = self.post_sort(dict(base, input_format="samples-{00..09}", output_format="m-{0..99}"))
        info = self.wait_sort(r.text)
        m = list(info.values())[0]["Metrics"]
        self.assertTrue(m["aborted"])
        self.assertIn("samples-06.tar does not exist", " ".join(m["errors"]))
        self.assertEqual([n for n in self.list_all("images") if n.startswith("m-")], [])
        # output over its own inputs is refused unless told
        r = self.post_sort(dict(base, output_format="samples-{00..99}", output_shard_size="1KiB"))
        info = self.wait_sort(r.text)
        self.assertIn("overwrite", " ".join(list(info.values())[0]["Metrics"]["errors"]))
        self.assertEqual(self.s.get(self.url + "/v1/sort", params={"uuid": "srt-nope"}).status_code, 404)
        self.assertEqual(self.s.delete(self.url + "/v1/sort/abort", params={"uuid": "srt-nope"}).status_code, 404)


class DsortOnThreeTargets(unittest.TestCase, DsortApi):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shale-dsort-")
        # every build that is not the coordinator's own comes 300 ms late:
        # wait_sort must not see "all finished" before an owner has its job
        cls.c = Cluster(cls.tmp, proxies=1, targets=3, env={"SHALE_TEST_DSORT_BUILD_DELAY_MS": "300"}).start()
        cls.url = cls.c.url
        cls.s = requests.Session()

    @classmethod
    def tearDownClass(cls):
        cls.c.stop()
        shutil.rmtree(cls.tmp, ignore_errors=True)

    create_bucket = NodeTest.create_bucket
    act = NodeTest.act
    put = NodeTest.put
    get = NodeTest.get
    list_objects = NodeTest.list_objects
    list_all = NodeTest.list_all

    def test_shuffle_same_bytes_as_one_node(self):
        self.upload_shards("images")
        spec = {"extension": ".tar", "bck": {"name": "images"}, "input_format": "samples-{00..05}",
                "output_format": "shuffled-shard-%d", "output_shard_size": "10KB",
                "description": "shuffle image samples", "algorithm": {"kind": "shuffle", "seed": "1234"}}
        r = self.post_sort(spec)
        self.assertEqual(r.status_code, 200, r.text)
        info = self.wait_sort(r.text)
        self.assertEqual(len(info), 3, "every target reports: %s" % list(info))
        for tinfo in info.values():
            self.assertFalse(tinfo["Metrics"]["aborted"], tinfo["Metrics"]["errors"])
            self.assertTrue(tinfo["Metrics"]["shard_creation"]["finished"])
        shards = self.output("images", "shuffled-shard-")
        self.check_records(shards)
        created = sum(int(t["Metrics"]["shard_creation"]["created_count"]) for t in info.values())
        self.assertEqual(created, len(shards))
        # the same output as the standalone node's run, byte for byte
        one = getattr(DsortOnOneNode, "blog_shards", None)
        if one is not None:
            self.assertEqual(sorted(one), sorted(shards))
            self.assertEqual([one[n] for n in sorted(one)], [shards[n] for n in sorted(shards)])

    def test_spill_past_max_mem_usage(self):
        """A dataset many times max_mem_usage completes: pulled records go to
        disk, the output is the same bytes as an unbounded run, and nothing is
        left in the targets' temporary directories."""
        self.create_bucket("spill")
        for i in range(NSHARDS):
            self.put("spill", "in-%02d.tar" % i, make_shard(i))
        base = {"input_bck": "spill", "input_format": "in-{00..05}", "output_shard_size": "96KiB",
                "algorithm": {"kind": "shuffle", "seed": "99"}}
        runs = {}
        for prefix, mem in (("free-", None), ("tight-", "16KiB")):
            spec = dict(base, output_format=prefix + "{00..99}")
            if mem:
                spec["max_mem_usage"] = mem
            r = self.post_sort(spec)
            self.assertEqual(r.status_code, 200, r.text)
            info = self.wait_sort(r.text)
            for t in info.values():
                self.assertFalse(t["Metrics"]["aborted"], t["Metrics"]["errors"])
            runs[prefix] = (info, self.output("spill", prefix))
        total = sum(len(b) for b in runs["free-"][1].values())
        self.assertGreater(total, 10 * 16 * 1024, "the data is many times the limit")
        free, tight = runs["free-"][1], runs["tight-"][1]
        self.assertEqual(len(free), len(tight))
        self.assertGreater(len(tight), 1)
        for n in sorted(free):
            self.assertEqual(free[n], tight["tight-" + n[len("free-"):]], n)
        self.check_records(tight)
        spilled = sum(int(t["Metrics"]["local_extraction"]["extracted_to_disk_count"])
                      for t in runs["tight-"][0].values())
        self.assertGreater(spilled, 0, "pulls past max_mem_usage went to disk")
        self.assertEqual(sum(int(t["Metrics"]["local_extraction"]["extracted_to_disk_count"])
                             for t in runs["free-"][0].values()), 0)
        for root, _dirs, files in os.walk(self.tmp):
            if os.path.basename(root) == "tmp" and ".shale" in root:
                self.assertEqual(files, [], "spill files left in " + root)

    def test_coordinator_record_list_within_max_mem_usage(self):
        """max_mem_usage bounds the coordinator's record list too: with a limit far below the list, the
        extraction answers come in small batches, the records past the limit go to a mapped file, the job
        reports its peak in memory under the limit, and the output is the same bytes as an unbounded run."""
        self.create_bucket("coord")
        nsh, per = 30, 40
        for i in range(nsh):
            buf = io.BytesIO()
            with tarfile.open(fileobj=buf, mode="w") as tf:
                for j in range(per):
                    for ext in ("txt", "cls"):
                        data = b"%d-%d.%s" % (i, j, ext.encode())
                        ti = tarfile.TarInfo("c%02d/rec-%02d-%03d.%s" % (i, i, j, ext))
                        ti.size, ti.mtime = len(data), 1700000000
                        tf.addfile(ti, io.BytesIO(data))
            self.assertEqual(self.put("coord", "in-%02d.tar" % i, buf.getvalue()).status_code, 200)
        limit = 16 * 1024
        runs = {}
        for prefix, mem in (("free-", None), ("tight-", "16KiB")):
            spec = {"input_bck": "coord", "input_format": "in-{00..%02d}" % (nsh - 1), "output_shard_size": "20KiB",
                    "output_format": prefix + "{000..999}", "algorithm": {"kind": "shuffle", "seed": "5"}}
            if mem:
                spec["max_mem_usage"] = mem
            r = self.post_sort(spec)
            self.assertEqual(r.status_code, 200, r.text)
            info = self.wait_sort(r.text)
            for t in info.values():
                self.assertFalse(t["Metrics"]["aborted"], t["Metrics"]["errors"])
            coord = [t["Metrics"]["meta_sorting"]["coordinator"] for t in info.values()
                     if "coordinator" in t["Metrics"]["meta_sorting"]]
            self.assertEqual(len(coord), 1, "exactly one target reports the coordinator's record list")
            runs[prefix] = (coord[0], self.output("coord", prefix))
        free, tight = runs["free-"], runs["tight-"]
        self.assertEqual(free[0]["spilled_bytes"], 0)
        self.assertEqual(free[0]["mem_limit"], 0)
        self.assertGreater(free[0]["mem_peak"], 4 * limit, "the record list is many times the limit")
        self.assertEqual(tight[0]["mem_limit"], limit)
        self.assertLessEqual(tight[0]["mem_peak"], limit, "the coordinator's peak stays under max_mem_usage")
        self.assertGreater(tight[0]["spilled_bytes"], 0, "the records past the limit went to disk")
        self.assertGreater(tight[0]["records_bytes"], 4 * limit)
        self.assertEqual(sorted(free[1]), sorted("free-" + n[len("tight-"):] for n in tight[1]))
        for n in sorted(free[1]):
            self.assertEqual(free[1][n], tight[1]["tight-" + n[len("free-"):]], n)
        keys = [m.split(".")[0] for b in tight[1].values() for m, _ in members_of(b)]
        self.assertEqual(sorted(set(keys)), sorted("c%02d/rec-%02d-%03d" % (i, i, j) for i in range(nsh)
                                                   for j in range(per)))
        self.assertEqual(len(keys), 2 * nsh * per, "every record once, whole")
        for root, _dirs, files in os.walk(self.tmp):
            if os.path.basename(root) == "tmp" and ".shale" in root:
                self.assertEqual(files, [], "spill files left in " + root)

    def test_abort_removes_partial_output(self):
        self.create_bucket("big")
        for i in range(NSHARDS):
            self.put("big", "b-%02d.tar" % i, make_shard(i))
        r = self.post_sort({"input_bck": "big", "input_format": "b-{00..05}", "output_format": "x-{0000..9999}",
                            "output_shard_size": "1KiB", "algorithm": {"kind": "shuffle", "seed": "7"}})
        self.assertEqual(r.status_code, 200, r.text)
        jid = r.text
        a = self.s.delete(self.url + "/v1/sort/abort", params={"uuid": jid})
        self.assertEqual(a.status_code, 200, a.text)
        info = self.wait_sort(jid)
        if any(t["Metrics"]["aborted"] for t in info.values()):
            wait_until(lambda: not [n for n in self.list_all("big") if n.startswith("x-")], 30,
                       what="partial output removed")
        r = self.s.delete(self.url + "/v1/sort", params={"uuid": jid})
        self.assertIn(r.status_code, (200, 400), r.text)


if __name__ == "__main__":
    main()
