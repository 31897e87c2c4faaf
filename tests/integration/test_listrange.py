# SPDX-License-Identifier: MIT
"""delete-listrange as AIStore's clients send it (native-gaps.md §3), on 3
targets and on a standalone node: by names, by range template, by prefix
(non-recursive too) and the whole bucket; the job followed with
what=status; missing names with and without coer; evict/prefetch refused on
ais:// buckets; bad messages refused with 400 and nothing deleted."""
import json
import os
import subprocess

from harness import SHALE, ClusterTest, NodeTest, main, wait_until

J = {"Content-Type": "application/json"}


class ListRangeApi:
    def names(self):
        out, token = [], ""
        for _ in range(100):
            r = self.s.get(self.url + "/v1/buckets/lr", timeout=60, json={
                "action": "list", "value": {"props": "name", "continuation_token": token}})
            self.assertEqual(r.status_code, 200, r.text)
            out += [e["name"] for e in r.json()["entries"] or []]
            token = r.json()["continuation_token"]
            if not token:
                return sorted(out)
        raise AssertionError("listing did not end")

    def delete(self, value):
        return self.s.delete(self.url + "/v1/buckets/lr", headers=J, timeout=60,
                             data=json.dumps({"action": "delete-listrange", "name": "", "value": value}))

    def wait(self, jid):
        out = {}

        def done():
            r = self.s.get(self.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid}, timeout=30)
            if r.status_code != 200:
                return False
            out["st"] = r.json()
            return r.json().get("end_time", 0) != 0
        wait_until(done, 60, what="job " + jid)
        return out["st"]

    def check(self):
        self.s.post(self.url + "/v1/buckets/lr", json={"action": "create-bck"}, timeout=30)
        all_names = ["o-%03d" % i for i in range(120)] + ["d/x-%02d" % i for i in range(5)] + ["d/sub/y"]
        for n in all_names:
            self.s.put(self.url + "/v1/objects/lr/" + n, data=n.encode(), timeout=30).raise_for_status()
        # bad messages delete nothing
        for value, text in (({"objnames": "o-000"}, "list"), ({"bogus": 1}, "bogus"),
                            ({"objnames": ["o-000"], "template": "o-{000..001}"}, "not both"),
                            ({"template": "o-{5..1"}, "template"), ({"num-workers": 99}, "num-workers")):
            r = self.delete(value)
            self.assertEqual(r.status_code, 400, (value, r.text))
            self.assertIn(text, r.text)
        r = self.s.delete(self.url + "/v1/buckets/lr", headers=J, data=json.dumps({"action": "evict-listrange",
                                                                                    "value": {}}))
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("with a remote bucket behind them", r.text)
        r = self.s.post(self.url + "/v1/buckets/lr", headers=J, data=json.dumps({"action": "prefetch-listrange",
                                                                                  "value": {}}))
        self.assertEqual(r.status_code, 400, r.text)
        r = self.s.delete(self.url + "/v1/buckets/lr", headers=J, data=json.dumps({"action": "fly", "value": {}}))
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("delete-listrange", r.text)
        self.assertEqual(self.names(), sorted(all_names))
        # by names: a missing one fails the job without coer (the others are gone), not with coer
        r = self.delete({"objnames": ["o-000", "o-001", "nope"]})
        self.assertEqual(r.status_code, 200, r.text)
        st = self.wait(r.text)
        self.assertIn("nope", st["err"])
        r = self.delete({"objnames": ["o-002", "nope"], "coer": True})
        st = self.wait(r.text)
        self.assertEqual(st["err"], "", st)
        self.assertEqual(self.names(), sorted(set(all_names) - {"o-000", "o-001", "o-002"}))
        # a range, a prefix without recursion, then the whole bucket
        st = self.wait(self.delete({"template": "o-{010..099}", "num-workers": 4}).text)
        self.assertEqual(st["err"], "", st)
        left = sorted(set(all_names) - {"o-000", "o-001", "o-002"} - {"o-%03d" % i for i in range(10, 100)})
        self.assertEqual(self.names(), left)
        st = self.wait(self.delete({"template": "d/", "non-recurs": True}).text)
        self.assertEqual(self.names(), [n for n in left if not n.startswith("d/x")])
        st = self.wait(self.delete(None).text)
        self.assertEqual(st["err"], "", st)
        self.assertEqual(self.names(), [])
        # the bucket itself stays
        self.assertEqual(self.s.head(self.url + "/v1/buckets/lr").status_code, 200)


class SummaryApi:
    """bucket summaries, as AIStore's Python SDK (HEAD 202 -> polls -> 200) and Go API/CLI (summary-bck) ask"""

    def check_summary(self):
        self.s.post(self.url + "/v1/buckets/sm", json={"action": "create-bck"}, timeout=30)
        sizes = {"a/%02d" % i: 100 + i for i in range(30)}
        sizes.update({"b/x": 7, "b/y": 5000})
        for n, sz in sizes.items():
            self.s.put(self.url + "/v1/objects/sm/" + n, data=b"z" * sz, timeout=30).raise_for_status()
        # HEAD protocol: 202 + id, then polls
        r = self.s.head(self.url + "/v1/buckets/sm", params={"provider": "ais", "bsumm_remote": "True"})
        self.assertEqual(r.status_code, 202, r.headers)
        jid = r.headers["Ais-Xaction-Id"]
        out = {}

        def done():
            rr = self.s.head(self.url + "/v1/buckets/sm", params={"bsumm_remote": "True", "uuid": jid})
            if rr.status_code == 200:
                out["s"] = json.loads(rr.headers["Ais-Bucket-Summ"])
            return rr.status_code == 200
        wait_until(done, 30, interval=0.1, what="summary")
        sm = out["s"]
        self.assertEqual(sm["ObjCount"]["obj_count_present"], str(len(sizes)))
        self.assertEqual(sm["TotalSize"]["size_all_present_objs"], str(sum(sizes.values())))
        self.assertEqual((sm["ObjSize"]["obj_min_size"], sm["ObjSize"]["obj_max_size"]), (7, 5000))
        # the action form, with a prefix
        r = self.s.get(self.url + "/v1/buckets/sm", json={"action": "summary-bck", "value": {"uuid": "",
                                                                                          "prefix": "a/"}})
        self.assertEqual(r.status_code, 202, r.text)
        jid = r.text

        def done2():
            rr = self.s.get(self.url + "/v1/buckets/sm", json={"action": "summary-bck", "value": {"uuid": jid}})
            if rr.status_code == 200:
                out["a"] = rr.json()[0]
            return rr.status_code == 200
        wait_until(done2, 30, interval=0.1, what="summary a/")
        self.assertEqual(out["a"]["ObjCount"]["obj_count_present"], "30")
        r = self.s.get(self.url + "/v1/buckets/sm", json={"action": "summary-bck", "value": {"uuid": "nope"}})
        self.assertEqual(r.status_code, 404, r.text)
        # every bucket at once (GET /v1/buckets): one entry per bucket, by name, an empty one too
        self.s.post(self.url + "/v1/buckets/sm-empty", json={"action": "create-bck"}, timeout=30).raise_for_status()
        r = self.s.get(self.url + "/v1/buckets", json={"action": "summary-bck", "value": {"uuid": ""}})
        self.assertEqual(r.status_code, 202, r.text)
        jid = r.text

        def done3():
            rr = self.s.get(self.url + "/v1/buckets", json={"action": "summary-bck", "value": {"uuid": jid}})
            if rr.status_code == 200:
                out["all"] = {e["name"]: e for e in rr.json()}
            return rr.status_code == 200
        wait_until(done3, 30, interval=0.1, what="summary of every bucket")
        self.assertEqual(out["all"]["sm"]["ObjCount"]["obj_count_present"], str(len(sizes)))
        self.assertEqual(out["all"]["sm-empty"]["ObjCount"]["obj_count_present"], "0")
        names = list(out["all"])
        self.assertEqual(names, sorted(names))
        # the CLI
        p = subprocess.run([SHALE, "ls", "ais://sm", "--summary"], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, AIS_ENDPOINT=self.url))
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertRegex(p.stdout, r"ais://sm\s+32\s")


class ListRangeCluster(ClusterTest, ListRangeApi, SummaryApi):
    def test_delete_listrange(self):
        self.check()

    def test_summary(self):
        self.check_summary()


class ListRangeStandalone(NodeTest, ListRangeApi, SummaryApi):
    def test_delete_listrange(self):
        self.check()

    def test_summary(self):
        self.check_summary()


if __name__ == "__main__":
    main()
