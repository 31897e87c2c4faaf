#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Cluster figures (1 proxy + 3 targets on loopback, same machine, same run):

  * 1 KiB GET through the gateway (client follows the 301), directly to the
    owning targets, and from nginx serving the same files — one load
    generator (bench/loadgen.c, libcurl multi) for all three;
  * rebalance throughput when a 4th target joins: objects/s and MB/s moved,
    for many small objects and for fewer large ones.

usage: cluster_bench.py [--small N] [--large N] [--large-size BYTES] [--duration S] [--rounds N] [--quick]
                        [--reb-only]

--reb-only skips the GET figures and --large 0 the large-object rebalance: to compare two builds, run it
alternately with SHALE_BUILD pointing at each.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
BUILD = os.environ.get("SHALE_BUILD") or os.path.join(HERE, "..", "build")
SHALE = os.path.join(BUILD, "bin", "shale")
sys.path.insert(0, HERE)
from http_bench import Nginx, cpu_seconds, free_port  # noqa: E402


def free_range(n):
    import random
    import socket
    for _ in range(200):
        base = random.randint(20000, 60000 - n)
        ok = True
        for p in range(base, base + n):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", p))
            except OSError:
                ok = False
            s.close()
            if not ok:
                break
        if ok:
            return base
    raise RuntimeError("no ports")


def cli(env, *args, shale=SHALE):
    p = subprocess.run([shale] + list(args), capture_output=True, text=True, env=env, timeout=3600)
    if p.returncode:
        raise RuntimeError("shale %s: %s%s" % (" ".join(args), p.stdout, p.stderr))
    return p.stdout


def start_playground(work, name, proxies, targets, nports=8, extra_env=None):
    """a playground in work/name on free ports, logging warnings only (info lines per request would skew the
    figures): (gateway url, the CLI's environment, its directory)"""
    base = free_range(nports)
    url = "http://127.0.0.1:%d" % base
    env = dict(os.environ, AIS_ENDPOINT=url, **(extra_env or {}))
    pg = os.path.join(work, name)
    cli(env, "playground", "start", "--dir", pg, "--port", str(base), "--proxies", str(proxies), "--targets",
        str(targets))
    requests.put(url + "/v1/cluster", json={"action": "set-config", "value": {"log": {"level": 1}}})
    return url, env, pg


def build_loadgen(work):
    exe = os.path.join(work, "loadgen")
    flags = subprocess.run(["pkg-config", "--cflags", "--libs", "libcurl"], capture_output=True,
                           text=True).stdout.split()
    subprocess.run(["cc", "-O2", "-o", exe, os.path.join(HERE, "loadgen.c")] + flags, check=True)
    return exe


def load(exe, urls, work, conns, secs, follow, pids=()):
    """one loadgen run; "cpu_us" = the servers' (pids') CPU per request served, in µs"""
    uf = os.path.join(work, "urls.txt")
    with open(uf, "w") as f:
        f.write("\n".join(urls) + "\n")
    args = [exe, "-c", str(conns), "-d", str(secs)] + (["-L"] if follow else []) + [uf]
    c0 = cpu_seconds(pids)
    out = subprocess.run(args, capture_output=True, text=True, timeout=secs + 120).stdout
    r = json.loads(out)
    r["cpu_us"] = (cpu_seconds(pids) - c0) * 1e6 / max(1, r["ok"])
    return r


def node_pids(pg):
    """the playground's shaled processes (gateways and targets)"""
    topo = json.load(open(os.path.join(pg, "playground.json")))
    pids = []
    for node in topo["nodes"]:
        with open(os.path.join(pg, node["name"], "shaled.pid")) as f:
            pids.append(int(f.read().split()[0]))
    return pids


def put_many(url, bucket, names, data, workers=16):
    import threading
    sess = {}

    def one(n):
        t = threading.get_ident()
        if t not in sess:
            sess[t] = requests.Session()
        r = sess[t].put("%s/v1/objects/%s/%s" % (url, bucket, n), data=data)
        r.raise_for_status()
    with ThreadPoolExecutor(workers) as ex:
        list(ex.map(one, names))


def rebalance_run(env, url, pgdir, bucket, n, size):
    names = ["r/%07d" % i for i in range(n)]
    cli(env, "bucket", "create", "ais://" + bucket)
    t0 = time.time()
    put_many(url, bucket, names, os.urandom(size))
    t_put = time.time() - t0
    t0 = time.time()
    cli(env, "playground", "add-target", "--dir", pgdir)
    st = requests.get(url + "/v1/cluster", params={"what": "status"}, json={"Kind": "rebalance"}).json()
    cli(env, "job", "wait", st["uuid"], "--timeout", "30m")
    dt = time.time() - t0
    stats = requests.get(url + "/v1/cluster", params={"what": "qryxstats"}, json={"ID": st["uuid"]}).json()
    snaps = [sn for arr in stats.values() for sn in arr]
    moved = sum(int(sn["stats"]["out-objs"]) for sn in snaps)
    mbytes = sum(int(sn["stats"]["out-bytes"]) for sn in snaps)
    # the job's own duration: first start to last end over all targets
    job_s = (max(sn["end_ns"] for sn in snaps) - min(sn["start_ns"] for sn in snaps)) / 1e9
    cli(env, "bucket", "rm", "ais://" + bucket, "-y")  # the next run moves only its own objects
    return {"objects": n, "size": size, "put_s": t_put, "moved": moved, "bytes": mbytes, "seconds": job_s,
            "wall": dt}


def promote_run(env, url, work, n, size):
    """n files of size bytes in promote.dir: a client's PUT of them through the gateway (16 threads: the
    reference), then promote of the shared directory (each target its own files) into another bucket, and
    of one target's directory (tid: it sends the others' files to their owners) into a third"""
    pdir = os.path.join(work, "promote")
    os.makedirs(os.path.join(pdir, "ds"))
    data = os.urandom(size)
    names = ["f-%07d" % i for i in range(n)]
    for nm in names:
        with open(os.path.join(pdir, "ds", nm), "wb") as f:
            f.write(data)
    requests.put(url + "/v1/cluster/set-config", params={"promote.dir": pdir}).raise_for_status()
    out = {"objects": n, "size": size}
    for b in ("prput", "prshared", "prtid"):
        cli(env, "bucket", "create", "ais://" + b)
    t0 = time.time()
    put_many(url, "prput", names, data)
    out["put"] = n / (time.time() - t0)
    tid = sorted(requests.get(url + "/v1/daemon?what=smap").json()["tmap"])[0]
    for key, b, extra in (("shared", "prshared", {}), ("tid", "prtid", {"tid": tid})):
        t0 = time.time()
        r = requests.post(url + "/v1/objects/" + b, json={"action": "promote", "name": pdir + "/ds",
                                                         "value": dict({"src": pdir + "/ds"}, **extra)})
        r.raise_for_status()
        cli(env, "job", "wait", r.text, "--timeout", "30m")
        out[key] = n / (time.time() - t0)
        st = requests.get(url + "/v1/cluster", params={"what": "status"}, json={"ID": r.text}).json()
        if st.get("err"):
            raise SystemExit("promote failed: %s" % st["err"])
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--small", type=int, default=100000)
    ap.add_argument("--large", type=int, default=1000)
    ap.add_argument("--large-size", type=int, default=4 << 20)
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3, help="gateway/direct/nginx alternate this many times")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--reb-only", action="store_true", help="only the rebalance figures")
    ap.add_argument("--promote-only", type=int, metavar="N", default=0,
                    help="only promote of N files of 1 KiB, against a client's PUT of them")
    a = ap.parse_args()
    if a.quick:
        a.small, a.large, a.large_size, a.duration, a.rounds = 5000, 100, 1 << 20, 3, 1
    work = tempfile.mkdtemp(prefix="shale-cbench-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    exe = build_loadgen(work)
    url, env, pg = start_playground(work, "pg", 1, 3, nports=12)
    res = {}
    if a.promote_only:
        try:
            r = promote_run(env, url, work, a.promote_only, 1024)
        finally:
            cli(env, "playground", "stop", "--dir", pg)
            shutil.rmtree(work, ignore_errors=True)
        print("%d files of 1 KiB, objects/s: client PUT (16 threads, via the gateway) %.0f; promote of the shared "
              "directory %.0f (%.2fx); promote of one target's directory (tid) %.0f (%.2fx)" % (
                  r["objects"], r["put"], r["shared"], r["shared"] / r["put"], r["tid"], r["tid"] / r["put"]))
        return
    try:
        if not a.reb_only:
            cli(env, "bucket", "create", "ais://g1k")
            n = 2000
            names = ["o%05d" % i for i in range(n)]
            put_many(url, "g1k", names, os.urandom(1024))
            smap = requests.get(url + "/v1/daemon?what=smap").json()
            # where each object lives: HEAD through the gateway tells the target location
            direct, files = [], []
            for nm in names:
                r = requests.get(url + "/v1/objects/g1k/" + nm, allow_redirects=False)
                loc = r.headers["Location"]
                direct.append(loc.split("?")[0])
                tid = [t for t, sn in smap["tmap"].items() if loc.startswith(sn["public_net"]["direct_url"])][0]
                files.append((tid, nm))
            # nginx serves the same files straight from the targets' mountpaths
            tdirs = {}
            topo = json.load(open(os.path.join(pg, "playground.json")))
            for node in topo["nodes"]:
                if node["role"] != "target":
                    continue
                sid = requests.get("http://127.0.0.1:%d/v1/daemon?what=snode" % node["port"]).json()["daemon_id"]
                tdirs[sid] = os.path.join(pg, node["name"], "mp1", "@ais", "g1k", "%ob")
            root = os.path.join(work, "nginx-root")
            os.makedirs(root)
            for tid, nm in files:
                os.symlink(os.path.join(tdirs[tid], nm), os.path.join(root, nm))
            ng = Nginx(work, root)
            try:
                gw = ["%s/v1/objects/g1k/%s" % (url, nm) for nm in names]
                ngu = ["%s/obj/%s" % (ng.url, nm) for nm in names]
                # alternate the three a few times: a shared machine drifts over
                # minutes; each ratio is taken within one round
                rounds = []
                nodes = node_pids(pg)
                for _ in range(a.rounds):
                    rd = {"gateway": load(exe, gw, work, 32, a.duration, True, nodes),
                          "direct": load(exe, direct, work, 32, a.duration, False, nodes),
                          "nginx": load(exe, ngu, work, 32, a.duration, False, ng.pids())}
                    rounds.append(rd)
                res["rounds"] = rounds
            finally:
                ng.stop()
        res["reb_small"] = rebalance_run(env, url, pg, "rbsmall", a.small, 1024)
        if a.large:
            res["reb_large"] = rebalance_run(env, url, pg, "rblarge", a.large, a.large_size)
    finally:
        cli(env, "playground", "stop", "--dir", pg)
        shutil.rmtree(work, ignore_errors=True)

    if not a.reb_only:
        print("\n%-44s %12s %10s %8s" % ("1 KiB GET, 32 connections (bench/loadgen)", "req/s", "vs nginx", "goal"))
        print("(server CPU per object read, all shaled processes or nginx's workers: %s)" % "; ".join(
            "%s %s µs" % (k, "/".join("%.1f" % rd[k]["cpu_us"] for rd in res["rounds"]))
            for k in ("gateway", "direct", "nginx")))
    for k, label, goal in () if a.reb_only else (("gateway", "via gateway (client follows the 301)", 0.45),
                                                 ("direct", "directly to the owning targets", 0.9),
                                                 ("nginx", "nginx, same files", None)):
        # the round with the median ratio, and every round's ratio
        per = sorted(((rd[k]["rps"] / rd["nginx"]["rps"], rd[k]) for rd in res["rounds"]), key=lambda t: t[0])
        ratio, r = per[len(per) // 2]
        errs = sum(rd[k]["errors"] for rd in res["rounds"])
        print("%-44s %12.0f %10.2f %8s%s%s" % (label, r["rps"], ratio,
                                               (">=%.2f " % goal + ("ok" if ratio >= goal else "MISS")) if goal else "",
                                               "" if goal is None or len(per) < 2 else
                                               "  rounds " + "/".join("%.2f" % t[0] for t in per),
                                               "" if not errs else "  (errors: %d)" % errs))
    print("\n%-44s %10s %10s %10s %10s" % ("rebalance: 3 -> 4 targets", "objects", "moved", "objs/s", "MB/s"))
    for k in ("reb_small", "reb_large")[:2 if a.large else 1]:
        r = res[k]
        print("%-44s %10d %10d %10.0f %10.1f   (job %.1f s; add-target to done %.1f s)" % (
            "%d x %s" % (r["objects"], "1KiB" if r["size"] == 1024 else "%dMiB" % (r["size"] >> 20)), r["objects"],
            r["moved"], r["moved"] / r["seconds"], r["bytes"] / r["seconds"] / 1e6, r["seconds"], r["wall"]))


if __name__ == "__main__":
    main()
