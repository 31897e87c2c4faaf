#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""How Shale's cost grows with the number of targets (issue 40, second axis): for each cluster size N (a fresh
playground of 3 gateways and N targets on this machine, the targets reniced to +10: processes with small CPU
shares), with a fixed dataset of --objects 1-byte objects:

  * start: playground start until the gateway's map holds N targets;
  * metadata change: a bucket created through the primary, until every node's BMD has that version
    (median and max of --changes creates);
  * HRW balance: objects per target, max/mean (from each target's listing, props location);
  * join: `playground add-target`, until every node's map has N+1 targets;
  * rebalance after that join: its time, objects it moved, against the ideal objects/(N+1);
  * gateway CPU per redirected GET (the primary's utime+stime over --gets GETs through it);
  * /metrics scrape time of the primary and of one target (median of 10);
  * failover: SIGKILL of the primary, until a bucket create through another gateway succeeds (a new primary
    elected by the other two).

Every figure is printed next to the ratio of N to the first N; timings on this shared machine are noisy.

With matplotlib (Debian's python3-matplotlib, `./configure --install-deps --with-bench-deps`) the curves also go to
bench/plots/scale_cluster.png (--plot FILE to choose; --plot-from FILE.json redraws them from a run's last line).

usage: scale_cluster_bench.py [--targets 3,6,12,24] [--objects 6000] [--quick] [--plot FILE] [--plot-from JSON]
"""
import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from harness import Cluster, wait_until  # noqa: E402
from scale_common import job_wait, pyplot  # noqa: E402

B = "scl"
TICK = os.sysconf("SC_CLK_TCK")


def nodes(c, role=None):
    return [n for n in c.topology()["nodes"] if role is None or n["role"] == role]


def nurl(n):
    return "http://127.0.0.1:%d" % n["port"]


def get_json(s, url, timeout=10, **kw):
    r = s.get(url, timeout=timeout, **kw)
    r.raise_for_status()
    return r.json()


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        v = f.read().rsplit(")", 1)[1].split()
    return (int(v[11]) + int(v[12])) / TICK


def renice_targets(c):
    for n in nodes(c, "target"):
        pid = c.pid(n["name"])
        if pid:
            try:
                os.setpriority(os.PRIO_PROCESS, pid, 10)
            except OSError:
                pass


def all_versions(s, c, what):
    """{node: version} of what (smap, bmd) as each node holds it"""
    out = {}
    for n in nodes(c):
        try:
            out[n["name"]] = int(get_json(s, nurl(n) + "/v1/daemon", params={"what": what}, timeout=5)["version"])
        except (requests.RequestException, ValueError, KeyError):
            out[n["name"]] = -1
    return out


def md_change(s, c, primary, i):
    """seconds from a create-bck at the primary until every node has the BMD version it made"""
    t0 = time.time()
    r = s.post(primary + "/v1/buckets/md%d" % i, json={"action": "create-bck"}, timeout=60)
    r.raise_for_status()
    want = int(get_json(s, primary + "/v1/daemon", params={"what": "bmd"})["version"])
    wait_until(lambda: min(all_versions(s, c, "bmd").values()) >= want, 60, interval=0.005,
               what="BMD v%d everywhere" % want)
    return time.time() - t0


def fill(url, n):
    sess = {}

    def put(i):
        import threading
        t = threading.get_ident()
        if t not in sess:
            sess[t] = requests.Session()
        sess[t].put("%s/v1/objects/%s/o-%07d" % (url, B, i), data=b"x", timeout=60).raise_for_status()
    with ThreadPoolExecutor(16) as ex:
        list(ex.map(put, range(n)))


def per_target(s, url):
    """{target id: objects} from one listing with props location"""
    cnt, token = {}, ""
    while True:
        j = s.get(url + "/v1/buckets/" + B, timeout=600, json={"action": "list", "value": {
            "props": "name,location", "continuation_token": token, "pagesize": 10000}}).json()
        for e in j["entries"] or []:
            tid = e.get("location", "").split("]")[0].lstrip("t[")
            cnt[tid] = cnt.get(tid, 0) + 1
        token = j["continuation_token"]
        if not token:
            return cnt


def moved_objs(s, url, jid):
    """(seconds from the first target's start to the last one's end, objects the targets sent)"""
    snaps = s.get(url + "/v1/cluster", params={"what": "qryxstats"}, json={"ID": jid}, timeout=30).json()
    ss = [sn for lst in snaps.values() for sn in (lst or [])]
    return ((max(sn["end_ns"] for sn in ss) - min(sn["start_ns"] for sn in ss)) / 1e9,
            sum(int(sn["stats"]["out-objs"]) for sn in ss))


def scrape(s, url):
    ts = []
    for _ in range(10):
        t0 = time.time()
        s.get(url + "/metrics", timeout=30).raise_for_status()
        ts.append(time.time() - t0)
    return statistics.median(ts)


def one_size(n, objects, changes, gets, work):
    c = Cluster(work, proxies=3, targets=n, name="c%d" % n)
    t0 = time.time()
    c.start()
    s = requests.Session()
    row = {"n": n}
    try:
        wait_until(lambda: len(c.smap()["tmap"]) == n and len(c.smap()["pmap"]) == 3, 120,
                   what="%d targets and 3 gateways" % n)
        row["start"] = time.time() - t0
        renice_targets(c)
        primary = c.smap()["proxy_si"]["public_net"]["direct_url"] if "proxy_si" in c.smap() else c.url
        s.put(primary + "/v1/cluster", json={"action": "set-config", "value": {"log": {"level": 1}}})
        ts = [md_change(s, c, primary, i) for i in range(changes)]
        row["md_med"], row["md_max"] = statistics.median(ts), max(ts)
        s.post(primary + "/v1/buckets/" + B, json={"action": "create-bck"}).raise_for_status()
        fill(primary, objects)
        cnt = per_target(s, primary)
        assert sum(cnt.values()) == objects, cnt
        row["balance"] = max(cnt.values()) / (objects / n)
        # gateway CPU per redirected GET
        gw = [x for x in nodes(c, "proxy") if nurl(x) == primary.rstrip("/")] or nodes(c, "proxy")[:1]
        gpid = c.pid(gw[0]["name"])
        c0 = cpu_s(gpid)
        for i in range(gets):
            s.get("%s/v1/objects/%s/o-%07d" % (primary, B, i % objects), timeout=30).raise_for_status()
        row["gw_cpu_us"] = (cpu_s(gpid) - c0) / gets * 1e6
        row["scrape_gw"] = scrape(s, primary)
        row["scrape_t"] = scrape(s, nurl(nodes(c, "target")[0]))
        # join one more target, then the rebalance it starts
        v0 = c.smap()["version"]
        t0 = time.time()
        c.cli("playground", "add-target", "--dir", c.dir, timeout=120)
        wait_until(lambda: min(all_versions(s, c, "smap").values()) > int(v0) and
                   all(len(get_json(s, nurl(x) + "/v1/daemon", params={"what": "smap"})["tmap"]) == n + 1
                       for x in nodes(c)), 120, interval=0.01, what="the new target in every map")
        row["join"] = time.time() - t0
        renice_targets(c)
        jid = ""

        def reb_id():
            st = s.get(primary + "/v1/cluster", params={"what": "status"}, json={"Kind": "rebalance"}, timeout=30)
            return st.status_code == 200 and st.json().get("uuid")
        jid = wait_until(reb_id, 60, what="the rebalance of the join")
        job_wait(s, primary, jid)
        row["reb_s"], row["moved"] = moved_objs(s, primary, jid)
        row["ideal"] = objects / (n + 1)
        cnt = per_target(s, primary)
        assert sum(cnt.values()) == objects, cnt
        # failover: the primary dies
        t0 = time.time()
        os.kill(gpid, 9)
        other = [x for x in nodes(c, "proxy") if x["name"] != gw[0]["name"]][0]

        def took_over():
            try:
                return s.post(nurl(other) + "/v1/buckets/after-failover", json={"action": "create-bck"},
                              timeout=10).status_code == 200
            except requests.RequestException:
                return False
        wait_until(took_over, 120, interval=0.1, what="a bucket create after the primary died")
        row["failover"] = time.time() - t0
    finally:
        c.stop()
    return row


def plot(rows, path):
    """the curves, one panel each, against the number of targets (nothing without matplotlib)"""
    plt = pyplot()
    if plt is None:
        return
    n = [r["n"] for r in rows]
    panels = (("metadata change to every node, s (median)", [r["md_med"] for r in rows]),
              ("rebalance moved / ideal", [r["moved"] / r["ideal"] for r in rows]),
              ("objects per target, max / mean", [r["balance"] for r in rows]),
              ("primary's CPU per redirected GET, µs", [r["gw_cpu_us"] for r in rows]),
              ("join, s", [r["join"] for r in rows]),
              ("failover, s", [r["failover"] for r in rows]))
    fig, axs = plt.subplots(2, 3, figsize=(13, 7))
    for ax, (title, ys) in zip(axs.flat, panels):
        ax.plot(n, ys, "o-")
        ax.set_title(title, fontsize=10)
        ax.set_xlabel("targets")
        ax.set_xticks(n)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    fig.suptitle("Shale: cost against cluster size (bench/scale_cluster_bench.py)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=80)
    print("plot: %s" % path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--targets", default="3,6,12,24", help="cluster sizes, ascending")
    ap.add_argument("--objects", type=int, default=6000, help="objects in the fixed dataset")
    ap.add_argument("--changes", type=int, default=5, help="metadata changes timed per size")
    ap.add_argument("--gets", type=int, default=2000, help="GETs through the gateway for its CPU per GET")
    ap.add_argument("--quick", action="store_true", help="sizes 3,6, 1200 objects (a CI-sized run)")
    ap.add_argument("--plot", default=os.path.join(HERE, "plots", "scale_cluster.png"), help="where the curves go")
    ap.add_argument("--plot-from", metavar="JSON", help="only redraw the curves from a run's last line (a file)")
    a = ap.parse_args()
    if a.plot_from:
        with open(a.plot_from) as f:
            return plot(json.loads(f.read().strip().splitlines()[-1]), a.plot)
    sizes = [3, 6] if a.quick else [int(x) for x in a.targets.split(",")]
    objects = 1200 if a.quick else a.objects
    work = tempfile.mkdtemp(prefix="shale-scalec-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    rows = []
    try:
        for n in sizes:
            r = one_size(n, objects, a.changes, 300 if a.quick else a.gets, work)
            print("  %d targets: %s (load %.1f)" % (n, json.dumps({k: round(v, 4) if isinstance(v, float) else v
                                                                  for k, v in r.items()}), os.getloadavg()[0]),
                  flush=True)
            rows.append(r)
            shutil.rmtree(os.path.join(work, "c%d" % n), ignore_errors=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("\n3 gateways + N targets (reniced +10), %d 1-byte objects; x = ratio to the first N" % objects)
    hdr = ("targets", "N x", "start s", "md med s", "md max s", "md x", "max/mean", "join s", "reb s",
           "moved", "ideal", "moved/ideal", "gw us/GET", "gw x", "scrape gw", "scrape t", "failover s")
    print(" ".join("%10s" % h for h in hdr))
    f = rows[0]
    for r in rows:
        print(" ".join("%10s" % v for v in (
            r["n"], "%.1f" % (r["n"] / f["n"]), "%.2f" % r["start"], "%.3f" % r["md_med"], "%.3f" % r["md_max"],
            "%.2f" % (r["md_med"] / f["md_med"]), "%.3f" % r["balance"], "%.2f" % r["join"], "%.2f" % r["reb_s"],
            r["moved"], "%.0f" % r["ideal"], "%.3f" % (r["moved"] / r["ideal"]), "%.0f" % r["gw_cpu_us"],
            "%.2f" % (r["gw_cpu_us"] / f["gw_cpu_us"]), "%.4f" % r["scrape_gw"], "%.4f" % r["scrape_t"],
            "%.2f" % r["failover"])))
    print(json.dumps(rows))
    if not a.quick:
        plot(rows, a.plot)


if __name__ == "__main__":
    main()
