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

usage: scale_bench.py [--sizes 100000,1000000] [--rounds 1] [--quick]
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

B = "sc"


def job_wait(s, url, jid, timeout=7200):
    t0 = time.time()
    while time.time() - t0 < timeout:
        st = s.get(url + "/v1/cluster", params={"what": "status"}, json={"ID": jid}, timeout=60).json()
        if st.get("end_time"):
            if st.get("err") or st.get("aborted"):
                raise SystemExit("job %s: %s" % (jid, st))
            return
        time.sleep(0.05)
    raise SystemExit("job %s did not end in %d s" % (jid, timeout))


def load(s, url, pdir, first, n):
    """n new 1-byte files o-FIRST.. promoted (dls: the sources go once stored): objects/s"""
    d = os.path.join(pdir, "batch")
    os.makedirs(d)
    for i in range(first, first + n):
        with open(os.path.join(d, "o-%09d" % i), "wb") as f:
            f.write(b"x")
    tid = sorted(s.get(url + "/v1/daemon", params={"what": "smap"}).json()["tmap"])[0]
    t0 = time.time()
    r = s.post(url + "/v1/objects/" + B, json={"action": "promote", "name": d,
                                                "value": {"src": d, "dls": True, "tid": tid}}, timeout=60)
    r.raise_for_status()
    job_wait(s, url, r.text)
    dt = time.time() - t0
    shutil.rmtree(d, ignore_errors=True)
    return n / dt


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
    for root, _, files in os.walk(tdir):
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


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="100000,1000000", help="objects in the bucket at each step, ascending")
    ap.add_argument("--rounds", type=int, default=1, help="PUT/GET/delete and list rates repeated this often")
    ap.add_argument("--quick", action="store_true", help="sizes 2000,10000,50000 (a CI-sized run)")
    a = ap.parse_args()
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
        for n in sizes:
            ld = load(s, c.url, pdir, have, n - have)
            have = n
            names = ["o-%09d" % i for i in random.sample(range(n), min(n, 20000))]
            for rnd in range(a.rounds):
                pr, gr, dr = rates(c.url, names, "%d-%d" % (n, rnd))
                cnt, lr = listing(s, c.url)
                assert cnt == n, (cnt, n)
                sc, st = summary(s, c.url)
                assert sc == n, (sc, n)
                print("  %d objects, round %d: PUT %.0f/s GET %.0f/s delete %.0f/s list %.0f names/s summary "
                      "%.2f s" % (n, rnd + 1, pr, gr, dr, lr, st), flush=True)
            rss, anon = rss_kib(pid)
            mdb = mdb_bytes(tdir)
            up, pid = restart_target(c, s, names[0])
            rows.append(dict(n=n, load=ld, put=pr, get=gr, dele=dr, list=lr, summ=st, rss=rss, anon=anon, mdb=mdb, up=up))
    finally:
        c.stop()
        shutil.rmtree(work, ignore_errors=True)
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
    print(json.dumps(rows))


if __name__ == "__main__":
    main()
