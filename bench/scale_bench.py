#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""How a target's cost grows with the objects it holds (issue 40, first axis): 1 gateway + 1 target, a bucket
filled to each size in turn (1-byte objects, loaded by promote of one target's directory: the fastest honest
path, each file stored through the normal object write with batched syncs), and at each size:

  * load rate (objects/s of that promote), PUT and GET rate (2000 one-byte objects, 16 client threads, through
    the gateway), delete-listrange rate (those 2000, by template);
  * list rate (names/s, names only, pages of 10000, through the gateway) and bucket summary time;
  * start-up time of the target (SIGTERM, start, until the gateway's GET of an object answers);
  * the target's RSS, and its LMDB files' disk use (blocks allocated) per object.

Each row prints the ratio to the first size next to the ratio of work (objects), so a cost that grows faster
than the work shows at once. Timings on this shared machine are noisy: --rounds repeats the rate figures.

Sources are written and promoted a directory of --batch files at a time (deleted as they are stored), so a
run never holds more than that many besides the objects: 10^7 objects need 10^7 inodes and ~40 GB (4 KiB
blocks). With matplotlib the curves go to bench/plots/scale_objects.png (--plot FILE to choose; --plot-from
FILE.json redraws them, and the table, from a run's last line).

usage: scale_bench.py [--sizes 100000,1000000] [--rounds 1] [--batch 250000] [--quick] [--plot FILE]
                      [--plot-from JSON]
"""
import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from harness import SHALED, Cluster, wait_until  # noqa: E402
from scale_common import job_wait, loadavg, pyplot  # noqa: E402

B = "sc"


def load(s, url, pdir, first, n, batch):
    """n new 1-byte files o-FIRST.. promoted in directories of at most batch files, one promote each (dls: the
    sources go once stored, and a directory is removed before the next is written, so no more than batch
    source files exist at once): (objects/s over the promotes' time only, [(objects held, objects/s) per
    directory])"""
    tid = sorted(s.get(url + "/v1/daemon", params={"what": "smap"}).json()["tmap"])[0]
    spent, curve, i, k = 0.0, [], first, 0
    while i < first + n:
        m = min(batch, first + n - i)
        d = os.path.join(pdir, "batch-%d" % k)
        os.makedirs(d)
        for j in range(i, i + m):
            with open(os.path.join(d, "o-%09d" % j), "wb") as f:
                f.write(b"x")
        t0 = time.time()
        r = s.post(url + "/v1/objects/" + B, json={"action": "promote", "name": d,
                                                    "value": {"src": d, "dls": True, "tid": tid}}, timeout=60)
        r.raise_for_status()
        job_wait(s, url, r.text)
        dt = time.time() - t0
        left = os.listdir(d)
        if left:
            raise SystemExit("promote of %s left %d source file(s), e.g. %s" % (d, len(left), left[0]))
        os.rmdir(d)
        spent += dt
        i += m
        k += 1
        curve.append((i, m / dt))
        print("    load: %d objects held, this directory of %d at %.0f/s (load average %s)" % (
            i, m, m / dt, loadavg()), flush=True)
    return n / spent, curve


def parallel(fn, items, workers=16):
    t0 = time.time()
    with ThreadPoolExecutor(workers) as ex:
        list(ex.map(fn, items))
    return len(items) / (time.time() - t0)


def rates(url, names, tag):
    sess = {}

    def sx():
        import threading
        t = threading.get_ident()
        if t not in sess:
            sess[t] = requests.Session()
        return sess[t]

    def put(nm):
        sx().put("%s/v1/objects/%s/%s" % (url, B, nm), data=b"y", timeout=60).raise_for_status()

    def get(nm):
        r = sx().get("%s/v1/objects/%s/%s" % (url, B, nm), timeout=60)
        r.raise_for_status()

    pnames = ["put-%s/%05d" % (tag, i) for i in range(2000)]
    put_rate = parallel(put, pnames)
    get_rate = parallel(get, random.sample(names, 2000))
    s = requests.Session()
    t0 = time.time()
    r = s.delete(url + "/v1/buckets/" + B, json={"action": "delete-listrange",
                                                 "value": {"template": "put-%s/{00000..01999}" % tag}}, timeout=60)
    r.raise_for_status()
    job_wait(s, url, r.text)
    del_rate = 2000 / (time.time() - t0)
    return put_rate, get_rate, del_rate


def listing(s, url):
    n, token, t0 = 0, "", time.time()
    while True:
        r = s.get(url + "/v1/buckets/" + B, timeout=600, json={"action": "list", "value": {
            "props": "name", "continuation_token": token, "pagesize": 10000}})
        r.raise_for_status()
        j = r.json()
        n += len(j["entries"] or [])
        token = j["continuation_token"]
        if not token:
            return n, n / (time.time() - t0)


def summary(s, url):
    t0 = time.time()
    r = s.get(url + "/v1/buckets/" + B, json={"action": "summary-bck", "value": {"uuid": ""}}, timeout=60)
    assert r.status_code == 202, r.text
    jid = r.text
    while True:
        r = s.get(url + "/v1/buckets/" + B, json={"action": "summary-bck", "value": {"uuid": jid}}, timeout=60)
        if r.status_code == 200:
            return int(r.json()[0]["ObjCount"]["obj_count_present"]), time.time() - t0
        assert r.status_code == 202, r.text
        time.sleep(0.02)


def mdb_bytes(tdir):
    tot = 0
    for root, dirs, files in os.walk(tdir):
        dirs[:] = [x for x in dirs if not x.startswith("@")]  # not the buckets' objects (10^7 names)
        for f in files:
            if f.endswith(".mdb"):
                tot += os.stat(os.path.join(root, f)).st_blocks * 512
    return tot


def rss_kib(pid):
    """(RSS, its anonymous part) in KiB: the rest is file pages, most of them LMDB's map, which the kernel
    reclaims under pressure"""
    v = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k = line.split(":")[0]
            if k in ("VmRSS", "RssAnon"):
                v[k] = int(line.split()[1])
    return v.get("VmRSS", 0), v.get("RssAnon", 0)


def restart_target(c, s, probe):
    """SIGTERM the target, start it as the playground does, seconds until a GET through the gateway answers"""
    topo = c.topology()
    t = [n for n in topo["nodes"] if n["role"] == "target"][0]
    pid = c.pid(t["name"])
    os.kill(pid, signal.SIGTERM)
    wait_until(lambda: not os.path.exists("/proc/%d" % pid) or
               open("/proc/%d/stat" % pid).read().split()[2] == "Z", 120, what="target exit")
    nd = os.path.join(c.dir, t["name"])
    t0 = time.time()
    out = open(os.path.join(nd, "stdout.log"), "ab")
    p = subprocess.Popen([SHALED, "--config=%s" % os.path.join(nd, "shale.json"), "--role=target", "--bind",
                          "127.0.0.1"], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    out.close()
    with open(os.path.join(nd, "shaled.pid"), "w") as f:
        f.write("%d\n" % p.pid)

    def up():
        try:
            return s.get(c.url + "/v1/objects/%s/%s" % (B, probe), timeout=5).status_code == 200
        except requests.RequestException:
            return False
    wait_until(up, 600, interval=0.05, what="the target serving again")
    return time.time() - t0, p.pid


def table(rows):
    print("\n1 gateway + 1 target, 1-byte objects; ratios are to the first size (work ratio = objects ratio)")
    hdr = ("objects", "work x", "load/s", "PUT/s", "GET/s", "del/s", "list/s", "list x", "summ s", "summ x",
           "start s", "start x", "RSS MiB", "anon MiB", "LMDB B/obj")
    print(" ".join("%10s" % h for h in hdr))
    f = rows[0]
    for r in rows:
        print(" ".join("%10s" % v for v in (
            r["n"], "%.1f" % (r["n"] / f["n"]), "%.0f" % r["load"], "%.0f" % r["put"], "%.0f" % r["get"],
            "%.0f" % r["dele"], "%.0f" % r["list"], "%.2f" % ((r["n"] / r["list"]) / (f["n"] / f["list"])),
            "%.2f" % r["summ"], "%.2f" % (r["summ"] / f["summ"]), "%.2f" % r["up"], "%.2f" % (r["up"] / f["up"]),
            "%.0f" % (r["rss"] / 1024), "%.0f" % (r["anon"] / 1024), "%.0f" % (r["mdb"] / r["n"]))))
    if len(rows) > 1:
        a0, z = rows[0], rows[-1]
        per = (z["n"] - a0["n"]) / 1e6
        print("growth per 10^6 objects: RSS %.1f MiB, of it anonymous %.1f MiB; LMDB %.1f MiB" % (
            (z["rss"] - a0["rss"]) / 1024 / per, (z["anon"] - a0["anon"]) / 1024 / per,
            (z["mdb"] - a0["mdb"]) / 1048576 / per))


def plot(rows, path):
    """log-log curves against the objects held, each with a dashed reference through its first point: a
    time or size growing as the work (slope 1), a rate staying flat (slope 0); nothing without matplotlib"""
    plt = pyplot()
    if plt is None:
        return
    n = [r["n"] for r in rows]
    mib = 1048576.0

    def ref(ax, ys, slope):
        ax.plot([n[0], n[-1]], [ys[0], ys[0] * (n[-1] / n[0]) ** slope], "k--", lw=0.8, alpha=0.6,
                label="linear in the work" if slope else "flat (linear time)")

    fig, axs = plt.subplots(2, 3, figsize=(14, 8))
    times = (("full listing (names only), s", [r["n"] / r["list"] for r in rows], 1),
             ("bucket summary, s", [r["summ"] for r in rows], 1),
             ("LMDB on disk, MiB", [r["mdb"] / mib for r in rows], 1),
             ("target RSS, anonymous, MiB", [r["anon"] / 1024.0 for r in rows], 1))
    for ax, (title, ys, slope) in zip(axs.flat, times):
        ax.loglog(n, ys, "o-", label=title.split(",")[0])
        ref(ax, ys, slope)
        ax.set_title(title, fontsize=10)
    ax = axs.flat[4]
    ax.loglog(n, [r["up"] for r in rows], "o-", label="start-up (SIGTERM, start, first GET)")
    ax.axhline(30, color="r", lw=0.8, ls=":", label="goal at 10^7: 30 s")
    ax.set_title("target start-up, s", fontsize=10)
    ax = axs.flat[5]
    for k, lab in (("load", "load (promote)"), ("put", "PUT"), ("get", "GET"), ("dele", "delete-listrange")):
        ax.loglog(n, [r[k] for r in rows], "o-", label=lab)
    cur = [p for r in rows for p in r.get("load_curve", [])]
    if cur:
        ax.loglog([p[0] for p in cur], [p[1] for p in cur], ".", ms=3, alpha=0.5, label="load, each directory")
    ref(ax, [rows[0]["load"]] * len(rows), 0)
    ax.set_title("rates, objects/s", fontsize=10)
    for ax in axs.flat:
        ax.set_xlabel("objects in the bucket")
        ax.grid(alpha=0.3, which="both")
        ax.legend(fontsize=7)
    fig.suptitle("Shale: one target's cost against the objects it holds (bench/scale_bench.py)")
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=80)
    print("plot: %s" % path)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100000,1000000", help="objects in the bucket at each step, ascending")
    ap.add_argument("--rounds", type=int, default=1, help="PUT/GET/delete and list rates repeated this often")
    ap.add_argument("--batch", type=int, default=250000, help="source files per promoted directory (at most "
                    "this many exist at once)")
    ap.add_argument("--quick", action="store_true", help="sizes 2000,10000,50000 (a CI-sized run)")
    ap.add_argument("--plot", default=os.path.join(HERE, "plots", "scale_objects.png"), help="where the curves go")
    ap.add_argument("--json", metavar="FILE", help="also write the rows so far to FILE after each size (a long run "
                    "stopped early still has them; --plot-from reads it)")
    ap.add_argument("--plot-from", metavar="JSON", help="only redraw the curves (and the table) from a run's last "
                    "line (a file)")
    a = ap.parse_args()
    if a.plot_from:
        with open(a.plot_from) as f:
            rows = json.loads(f.read().strip().splitlines()[-1])
        table(rows)
        plot(rows, a.plot)
        return
    sizes = [2000, 10000, 50000] if a.quick else [int(x) for x in a.sizes.split(",")]
    work = tempfile.mkdtemp(prefix="shale-scale-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    c = Cluster(work, proxies=1, targets=1).start()
    s = requests.Session()
    rows = []
    try:
        s.put(c.url + "/v1/cluster", json={"action": "set-config", "value": {"log": {"level": 1}}})
        pdir = os.path.join(work, "promote")
        os.makedirs(pdir)
        s.put(c.url + "/v1/cluster/set-config", params={"promote.dir": pdir}).raise_for_status()
        s.post(c.url + "/v1/buckets/" + B, json={"action": "create-bck"}).raise_for_status()
        have = 0
        tnode = [n for n in c.topology()["nodes"] if n["role"] == "target"][0]["name"]
        tdir = os.path.join(c.dir, tnode)
        pid = c.pid(tnode)
        print("target pid %d, work directory %s" % (pid, work), flush=True)
        for n in sizes:
            ld, curve = load(s, c.url, pdir, have, n - have, a.batch)
            have = n
            names = ["o-%09d" % i for i in random.sample(range(n), min(n, 20000))]
            for rnd in range(a.rounds):
                pr, gr, dr = rates(c.url, names, "%d-%d" % (n, rnd))
                cnt, lr = listing(s, c.url)
                assert cnt == n, (cnt, n)
                sc, st = summary(s, c.url)
                assert sc == n, (sc, n)
                print("  %d objects, round %d: load %.0f/s PUT %.0f/s GET %.0f/s delete %.0f/s list %.0f names/s "
                      "summary %.2f s (load average %s)" % (n, rnd + 1, ld, pr, gr, dr, lr, st, loadavg()),
                      flush=True)
            rss, anon = rss_kib(pid)
            mdb = mdb_bytes(tdir)
            up, pid = restart_target(c, s, names[0])
            print("  %d objects: RSS %.0f MiB (anonymous %.0f), LMDB %.0f B/object, start-up %.2f s, target pid %d"
                  % (n, rss / 1024, anon / 1024, mdb / n, up, pid), flush=True)
            rows.append(dict(n=n, load=ld, put=pr, get=gr, dele=dr, list=lr, summ=st, rss=rss, anon=anon, mdb=mdb,
                             up=up, load_curve=curve, loadavg=loadavg()))
            if a.json:
                with open(a.json, "w") as f:
                    f.write(json.dumps(rows) + "\n")
    finally:
        c.stop()
        shutil.rmtree(work, ignore_errors=True)
    table(rows)
    plot(rows, a.plot)
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
