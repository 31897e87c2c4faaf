#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What promote (dls: sources deleted once stored) costs per file, a build against a reference build, side by
side: 1 gateway + 1 target, --files 1-byte files in one directory promoted into a bucket, and for each run
the rate (files/s) and the target's CPU time per file (utime + stime from /proc: less sensitive than the rate
to the other work on a shared machine). Rounds alternate the two builds (which one goes first too) and every
round is printed, then the medians and their ratio.

usage: SHALE_BUILD=build promote_bench.py --before OTHER_BUILD [--files 20000] [--rounds 3]
"""
import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))


def cpu_s(pid):
    f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def one(files):
    """one measurement with the build in SHALE_BUILD: prints 'rate cpu_us_per_file'"""
    from harness import Cluster, wait_until
    work = tempfile.mkdtemp(prefix="shale-promote-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    c = Cluster(work, proxies=1, targets=1).start()
    try:
        s = requests.Session()
        pdir = os.path.join(work, "promote")
        d = os.path.join(pdir, "ds")
        os.makedirs(d)
        s.put(c.url + "/v1/cluster/set-config", params={"promote.dir": pdir}).raise_for_status()
        s.post(c.url + "/v1/buckets/pb", json={"action": "create-bck"}).raise_for_status()
        for i in range(files):
            with open(os.path.join(d, "f-%07d" % i), "wb") as f:
                f.write(b"x")
        os.sync()
        tnode = [n for n in c.topology()["nodes"] if n["role"] == "target"][0]["name"]
        pid = c.pid(tnode)
        tid = sorted(s.get(c.url + "/v1/daemon", params={"what": "smap"}).json()["tmap"])[0]
        c0, t0 = cpu_s(pid), time.time()
        r = s.post(c.url + "/v1/objects/pb", json={"action": "promote", "name": d,
                                                   "value": {"src": d, "dls": True, "tid": tid}}, timeout=60)
        r.raise_for_status()

        def done():
            st = s.get(c.url + "/v1/cluster", params={"what": "status"}, json={"ID": r.text}, timeout=60).json()
            if st.get("err"):
                raise SystemExit("promote: %s" % st)
            return bool(st.get("end_time"))
        wait_until(done, 3600, interval=0.05, what="the promote")
        dt, cpu = time.time() - t0, cpu_s(pid) - c0
        if os.listdir(d):
            raise SystemExit("promote left source files")
        print("%f %f" % (files / dt, cpu / files * 1e6))
    finally:
        c.stop()
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, help="the reference build directory (its bin/shaled, bin/shale)")
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--one", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.one:
        one(a.files)
        return
    builds = (("before", os.path.abspath(a.before)),
              ("after", os.path.abspath(os.environ.get("SHALE_BUILD") or os.path.join(HERE, "..", "build"))))
    res = {"before": [], "after": []}
    for rnd in range(a.rounds):
        for name, bdir in (builds if rnd % 2 == 0 else builds[::-1]):
            env = dict(os.environ, SHALE_BUILD=bdir)
            out = subprocess.run([sys.executable, os.path.abspath(__file__), "--one", "--before", a.before,
                                  "--files", str(a.files)], env=env, capture_output=True, text=True, timeout=7200)
            if out.returncode:
                raise SystemExit("%s: %s%s" % (name, out.stdout, out.stderr))
            rate, us = map(float, out.stdout.split()[-2:])
            res[name].append((rate, us))
            with open("/proc/loadavg") as f:
                la = " ".join(f.read().split()[:3])
            print("round %d %-6s: %6.0f files/s, target CPU %6.1f µs/file (load average %s)" % (
                rnd + 1, name, rate, us, la), flush=True)
    med = {k: (statistics.median(x[0] for x in v), statistics.median(x[1] for x in v)) for k, v in res.items()}
    print("medians: before %.0f files/s %.1f µs/file; after %.0f files/s %.1f µs/file; after/before: rate %.2f, "
          "CPU per file %.2f" % (med["before"][0], med["before"][1], med["after"][0], med["after"][1],
                                 med["after"][0] / med["before"][0], med["after"][1] / med["before"][1]))


if __name__ == "__main__":
    main()
