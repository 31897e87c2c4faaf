#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""How shard work grows (issue 40, third axis): one playground of 1 gateway + 3 targets on this machine, and
for each size:

  * dsort of N shards (--dsort): every input shard holds --records records of one 100-byte member (a tar of
    --records x 1 KiB + 1 KiB), shuffled with a seed into output shards of the same size (about N outputs, in
    another bucket): total time, the three phases (extraction, sorting, creation, from the coordinator's
    JobInfo), the peak RSS of the coordinating target and of the other two (VmHWM, reset through
    /proc/PID/clear_refs before each run) and their peak anonymous memory (RssAnon, sampled every 50 ms), and
    what the coordinator reports of its record list (Metrics.meta_sorting.coordinator: bytes of the record
    list, its peak in memory, bytes spilled to disk) under max_mem_usage (--mem-limit);
  * an epoch plan over N shards (--plan; the dsort inputs of that size, 10 samples each): the time to create
    it (PUT /v1/ml/plan), its size (the plan as kept in PlanMD, JSON bytes), the time to the routes of every
    batch of epoch 0 (GET .../targets, what plan_dataset.py asks first), to the first batch of epoch 0 and to
    the last batch (GET .../batch through the gateway);
  * ishard of N files of 100 bytes (--ishard) into 1 MiB shards: its time and the targets' peak RSS.

The inputs are written under the work directory and promoted (promote.dir) into the buckets, then deleted. Each
figure is printed with the ratio to the first size beside the ratio of the work; the last line is the rows as
JSON. With matplotlib the curves go to bench/plots/scale_shards.png (--plot FILE; --plot-from FILE.json redraws
them from a run's last line). This machine is shared: the load average is printed; ratios matter, not seconds.

usage: scale_shards_bench.py [--dsort 1000,10000,100000] [--plan 1000,10000,100000]
                             [--ishard 10000,100000,1000000] [--records 10] [--mem-limit 16MiB] [--quick]
                             [--plot FILE] [--plot-from JSON]
"""
import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import time

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from harness import Cluster, wait_until  # noqa: E402
from scale_common import job_wait, loadavg, pyplot  # noqa: E402


def tar_member(name, data):
    """one ustar member (512-byte header + data padded to 512), without tarfile's per-member cost"""
    h = bytearray(512)
    h[0:len(name)] = name.encode()
    h[100:108] = b"0000644\0"
    h[108:116] = b"0000000\0"
    h[116:124] = b"0000000\0"
    h[124:136] = b"%011o\0" % len(data)
    h[136:148] = b"%011o\0" % 1700000000
    h[148:156] = b" " * 8
    h[156:157] = b"0"
    h[257:265] = b"ustar\x0000"
    h[148:156] = b"%06o\0 " % sum(h)
    return bytes(h) + data + b"\0" * (-len(data) % 512)


def write_shards(root, n, records, seed=1):
    """n tars in-%06d.tar of records records (key s<shard>-<i>, one .bin member of 100 bytes)"""
    os.makedirs(root, exist_ok=True)
    pool = os.urandom(4096)
    for i in range(n):
        parts = []
        for j in range(records):
            off = (i * 7 + j * 13 + seed) % 3900
            parts.append(tar_member("s%07d-%03d.bin" % (i, j), pool[off:off + 100]))
        parts.append(b"\0" * 1024)
        with open(os.path.join(root, "in-%06d.tar" % i), "wb") as f:
            f.write(b"".join(parts))


def write_files(root, n):
    for i in range(n):
        if i % 1000 == 0:
            d = os.path.join(root, "d%04d" % (i // 1000))
            os.makedirs(d, exist_ok=True)
        with open(os.path.join(d, "f%07d.jpg" % i), "wb") as f:
            f.write(b"%099d\n" % i)


def promote(s, url, bucket, src):
    s.post(url + "/v1/buckets/" + bucket, json={"action": "create-bck"}, timeout=30).raise_for_status()
    r = s.post(url + "/v1/objects/" + bucket, timeout=60, headers={"Content-Type": "application/json"},
               data=json.dumps({"action": "promote", "name": src, "value": {"src": src, "rcr": True}}))
    r.raise_for_status()
    t0 = time.time()
    job_wait(s, url, r.text)
    shutil.rmtree(src, ignore_errors=True)
    return time.time() - t0


def status_kib(pid, key):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


class Peaks:
    """each target's peak VmHWM (reset at start) and sampled peak RssAnon, in KiB"""

    def __init__(self, pids):
        self.pids, self.anon, self.stop = pids, {t: 0 for t in pids}, False
        for p in pids.values():
            try:
                with open("/proc/%d/clear_refs" % p, "w") as f:
                    f.write("5")
            except OSError:
                pass
        self.th = threading.Thread(target=self.run, daemon=True)
        self.th.start()

    def run(self):
        while not self.stop:
            for t, p in self.pids.items():
                self.anon[t] = max(self.anon[t], status_kib(p, "RssAnon"))
            time.sleep(0.05)

    def done(self):
        self.stop = True
        self.th.join()
        return {t: status_kib(p, "VmHWM") for t, p in self.pids.items()}, self.anon


def ratio_row(rows, key):
    base = rows[0].get(key) or 0
    return ["%.1fx" % (r.get(key, 0) / base) if base else "-" for r in rows]


def run_dsort(s, url, n, rnd, mem_limit):
    spec = {"input_bck": "ds%d" % n, "input_format": "in-{000000..%06d}" % (n - 1), "input_extension": ".tar",
            "output_bck": "ds%d-out%d" % (n, rnd), "output_format": "out-{0000000..9999999}",
            "output_shard_size": "10KiB", "max_mem_usage": mem_limit, "algorithm": {"kind": "shuffle", "seed": "7"}}
    t0 = time.time()
    r = s.post(url + "/v1/sort", json=spec, timeout=60)
    r.raise_for_status()
    jid = r.text
    info = {}

    def done():
        nonlocal info
        info = s.get(url + "/v1/sort", params={"uuid": jid}, timeout=60).json()
        ms = [v["Metrics"] for v in info.values()]
        if any(m["aborted"] for m in ms):
            raise SystemExit("dsort failed: %s" % [m["errors"] for m in ms])
        return len(ms) == 3 and all(m["shard_creation"]["finished"] for m in ms)
    wait_until(done, 7200, interval=0.1, what="dsort %s" % jid)
    total = time.time() - t0
    coord = None
    for tid, v in info.items():
        if v["Metrics"]["meta_sorting"].get("coordinator"):
            coord = tid
    return jid, total, info, coord


def dsort_size(s, c, url, n, records, mem_limit, pids, rnd=0):
    peaks = Peaks(pids)
    jid, total, info, coord = run_dsort(s, url, n, rnd, mem_limit)
    hwm, anon = peaks.done()
    tids = {}
    for tid in info:
        tids[tid] = c.target_name(tid)
    if coord is None:  # (a build without the coordinator's report: the largest peak)
        coord = max(info, key=lambda t: hwm[tids[t]])
    ci = info[coord]
    cm = ci["Metrics"]["meta_sorting"].get("coordinator") or {}
    others = [tids[t] for t in info if t != coord]
    # (the coordinator's JobInfo sums every target's extraction; the others show their own)
    recs = max(int(v["Metrics"]["local_extraction"]["extracted_record_count"]) for v in info.values())
    outs = sum(int(v["Metrics"]["shard_creation"]["created_count"]) for v in info.values())
    row = {"n": n, "records": recs, "outputs": outs, "total_s": total,
           "extract_s": max(v["started_meta_sorting"] for v in info.values()) / 1e9,
           "sort_s": max(v["started_shard_creation"] for v in info.values()) / 1e9,
           "create_s": max(v["finished_shard_creation"] for v in info.values()) / 1e9,
           "coord_hwm_mib": hwm[tids[coord]] / 1024, "coord_anon_mib": anon[tids[coord]] / 1024,
           "other_hwm_mib": max(hwm[t] for t in others) / 1024, "other_anon_mib": max(anon[t] for t in others) / 1024,
           "rec_bytes": int(cm.get("records_bytes", 0)), "rec_peak": int(cm.get("mem_peak", 0)),
           "rec_spilled": int(cm.get("spilled_bytes", 0)), "load": loadavg(1)}
    s.delete(url + "/v1/sort", params={"uuid": jid}, timeout=60)
    s.delete(url + "/v1/buckets/ds%d-out%d" % (n, rnd), timeout=600)
    return row


def plan_size(s, c, url, n):
    t0 = time.time()
    r = s.put(url + "/v1/ml/plan", timeout=3600, json={"name": "p%d" % n, "bck": "ds%d" % n,
                                                        "template": "in-{000000..%06d}.tar" % (n - 1), "seed": 1,
                                                        "batch_size": 256})
    r.raise_for_status()
    t_create = time.time() - t0
    summ = r.json()
    # the plan as PlanMD keeps it (compact JSON: the summary, the shard names and the counts per shard)
    size = len(json.dumps(dict(summ, shards=["in-%06d.tar" % i for i in range(n)], counts=[summ["samples"] // n] * n),
                          separators=(",", ":")))
    last = summ["batches"] - 1

    def batch(i):
        t0 = time.time()
        r = s.get(url + "/v1/ml/plan/p%d/batch" % n, params={"epoch": 0, "index": i}, timeout=600)
        r.raise_for_status()
        return time.time() - t0
    t0 = time.time()  # the route of every batch of epoch 0, as plan_dataset.py asks before its first batch
    r = s.get(url + "/v1/ml/plan/p%d/targets" % n, params={"epoch": 0}, timeout=3600)
    r.raise_for_status()
    t_routes = time.time() - t0
    assert len(r.json()["route"]) == min(summ["batches"], 100000), r.text[:200]
    row = {"n": n, "samples": summ["samples"], "batches": summ["batches"], "create_s": t_create, "plan_bytes": size,
           "routes_s": t_routes, "first_batch_s": batch(0), "last_batch_s": batch(last), "load": loadavg(1)}
    s.delete(url + "/v1/ml/plan/p%d" % n, timeout=600).raise_for_status()
    return row


def ishard_size(s, c, url, n, work, pids):
    src = os.path.join(work, "promote", "ish%d" % n)
    write_files(src, n)
    promote(s, url, "ish%d-raw" % n, src)
    peaks = Peaks(pids)
    t0 = time.time()
    r = s.post(url + "/v1/ishard", timeout=120, json={"src_bck": "ais://ish%d-raw" % n, "dst_bck": "ais://ish%d" % n,
                                                       "shard_size": "1MiB", "sample_key_pattern": "full_name"})
    r.raise_for_status()
    job = r.text
    st = {}

    def done():
        nonlocal st
        st = s.get(url + "/v1/ishard/" + job, timeout=60).json()
        return st["state"] not in ("planning", "running")
    wait_until(done, 7200, interval=0.1, what="ishard %s" % job)
    dt = time.time() - t0
    hwm, anon = peaks.done()
    if st["state"] != "finished" or st["report"]["samples"] != n:
        raise SystemExit("ishard %s: %s %s" % (job, st["state"], st.get("err")))
    row = {"n": n, "shards": st["report"]["shards"], "time_s": dt, "max_hwm_mib": max(hwm.values()) / 1024,
           "max_anon_mib": max(anon.values()) / 1024, "load": loadavg(1)}
    for b in ("ish%d-raw" % n, "ish%d" % n):
        s.delete(url + "/v1/buckets/" + b, timeout=600)
    return row


def table(title, rows, cols):
    """cols: (key, header, fmt); each figure with its ratio to the first size, beside the ratio of work"""
    print("\n== %s ==" % title)
    heads = ["size", "work"] + [h for _, h, _ in cols for h in (h, "x")] + ["load"]
    print(" ".join("%10s" % h for h in heads))
    base = rows[0]["n"]
    rats = {k: ratio_row(rows, k) for k, _, _ in cols}
    for i, r in enumerate(rows):
        cells = ["%10d" % r["n"], "%10s" % ("%.0fx" % (r["n"] / base))]
        for k, _, f in cols:
            cells += ["%10s" % (f % r.get(k, 0)), "%10s" % rats[k][i]]
        cells.append("%10s" % r["load"])
        print(" ".join(cells))


def plot(res, path):
    plt = pyplot()
    if plt is None:
        return
    panels = [("dsort", "total_s", "dsort time (s)"), ("dsort", "coord_hwm_mib", "dsort coordinator peak RSS (MiB)"),
              ("dsort", "rec_peak", "coordinator record list in memory (B)"),
              ("plan", "create_s", "plan creation (s)"), ("plan", "routes_s", "plan: routes of an epoch (s)"),
              ("ishard", "time_s", "ishard time (s)")]
    fig, axs = plt.subplots(2, 3, figsize=(13, 7))
    for ax, (kind, key, title) in zip(axs.flat, panels):
        rows = res.get(kind) or []
        if rows:
            xs = [r["n"] for r in rows]
            ys = [r.get(key, 0) for r in rows]
            ax.plot(xs, ys, "o-", label="measured")
            if ys[0]:
                ax.plot(xs, [ys[0] * x / xs[0] for x in xs], "--", color="gray", label="linear")
            ax.set_xscale("log")
            ax.set_yscale("log" if all(y > 0 for y in ys) else "linear")
            ax.legend(fontsize=8)
        ax.set_title(title, fontsize=10)
        ax.set_xlabel({"dsort": "input shards", "plan": "shards", "ishard": "files"}[kind])
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=90)
    print("plot: %s" % path)


def sizes(v):
    return [int(x) for x in v.split(",") if x]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dsort", type=sizes, default=sizes("1000,10000,100000"))
    ap.add_argument("--plan", type=sizes, default=sizes("1000,10000,100000"))
    ap.add_argument("--ishard", type=sizes, default=sizes("10000,100000,1000000"))
    ap.add_argument("--records", type=int, default=10, help="records per input shard (dsort, plan)")
    ap.add_argument("--mem-limit", default="16MiB", help="the dsort spec's max_mem_usage")
    ap.add_argument("--quick", action="store_true", help="CI-sized: 200,400,800 shards, 2000,4000,8000 files")
    ap.add_argument("--plot", default=os.path.join(HERE, "plots", "scale_shards.png"))
    ap.add_argument("--plot-from", metavar="JSON", help="only redraw the curves from a run's last line (a file)")
    a = ap.parse_args()
    if a.plot_from:
        with open(a.plot_from) as f:
            return plot(json.loads(f.read().strip().splitlines()[-1]), a.plot)
    if a.quick:
        a.dsort, a.plan, a.ishard = [200, 400, 800], [200, 400, 800], [2000, 4000, 8000]
    work = tempfile.mkdtemp(prefix="shale-scale-shards-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    c = None
    res = {"dsort": [], "plan": [], "ishard": []}
    try:
        c = Cluster(work, proxies=1, targets=3).start()
        s = requests.Session()
        url = c.url
        wait_until(lambda: len(c.smap()["tmap"]) == 3, 120, what="3 targets")
        os.makedirs(os.path.join(work, "promote"))
        s.put(url + "/v1/cluster/set-config", params={"promote.dir": os.path.join(work, "promote")},
              timeout=30).raise_for_status()
        pids = {n["name"]: c.pid(n["name"]) for n in c.topology()["nodes"] if n["role"] == "target"}
        print("1 gateway + 3 targets; %d records of 100 B per shard; max_mem_usage %s; load %s" % (
            a.records, a.mem_limit, loadavg(1)))
        for n in sorted(set(a.dsort) | set(a.plan)):
            src = os.path.join(work, "promote", "ds%d" % n)
            write_shards(src, n, a.records)
            t = promote(s, url, "ds%d" % n, src)
            print("  %d shards written and promoted (%.1f s)" % (n, t))
        for n in a.dsort:
            res["dsort"].append(dsort_size(s, c, url, n, a.records, a.mem_limit, pids))
            print("  dsort %d: %s" % (n, json.dumps(res["dsort"][-1])))
        for n in a.plan:
            res["plan"].append(plan_size(s, c, url, n))
            print("  plan %d: %s" % (n, json.dumps(res["plan"][-1])))
        for n in sorted(set(a.dsort) | set(a.plan)):
            s.delete(url + "/v1/buckets/ds%d" % n, timeout=600)
        for n in a.ishard:
            res["ishard"].append(ishard_size(s, c, url, n, work, pids))
            print("  ishard %d: %s" % (n, json.dumps(res["ishard"][-1])))
        if res["dsort"]:
            table("dsort of N shards (%d records each), shuffle, max_mem_usage %s" % (a.records, a.mem_limit),
                  res["dsort"], [("total_s", "total s", "%.2f"), ("extract_s", "extract s", "%.2f"),
                                 ("sort_s", "sort s", "%.2f"), ("create_s", "create s", "%.2f"),
                                 ("coord_hwm_mib", "coordRSS", "%.0f"), ("coord_anon_mib", "coordAnon", "%.0f"),
                                 ("other_hwm_mib", "otherRSS", "%.0f"), ("rec_bytes", "reclist B", "%d"),
                                 ("rec_peak", "recmem B", "%d"), ("rec_spilled", "spilled B", "%d")])
            print("(coordRSS/otherRSS: VmHWM MiB of the coordinator / the larger of the other two targets; "
                  "coordAnon: its peak RssAnon; reclist/recmem/spilled: the coordinator's record list, its most "
                  "in memory, what went to disk)")
        if res["plan"]:
            table("epoch plan over N shards (10 samples each), batch 256", res["plan"],
                  [("create_s", "create s", "%.2f"), ("plan_bytes", "PlanMD B", "%d"), ("routes_s", "routes s", "%.3f"),
                   ("first_batch_s", "1st batch", "%.3f"), ("last_batch_s", "last batch", "%.3f")])
        if res["ishard"]:
            table("ishard of N files of 100 B into 1 MiB shards", res["ishard"],
                  [("time_s", "time s", "%.2f"), ("max_hwm_mib", "maxRSS", "%.0f"),
                   ("max_anon_mib", "maxAnon", "%.0f")])
        plot(res, a.plot)
        print(json.dumps(res))
    finally:
        if c:
            c.stop()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
