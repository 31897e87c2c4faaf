#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What authentication and TLS cost on the GET path, same machine, same run, rounds alternating:

  plain   a 1-gateway 1-target playground, HTTP, client auth off (the cluster secret signs the redirect)
  token   the same with `--auth`: every request carries a JWT the gateway verifies and checks
  tls     the same with `--https`: TLS on the client's hops and between the nodes (no sendfile under TLS)

The client is bench/loadgen (libcurl multi) following the gateway's redirect, as AIStore clients do; GETs of
1 KiB (C connections) and of 10 MiB (fewer connections). Ratios are against plain in the same round.

With --a BUILD_DIR (a baseline build, holding bin/shale and bin/shaled), plain and tls of that build run too,
in the same rounds, so that a change to the TLS path is measured against its baseline on the same machine
state: the columns A-plain, A-tls and A-tls/plain follow.

At the end, CPU seconds per GB (10 MiB) and per 10,000 requests (1 KiB) of the target, the gateway and the
client, the median over the rounds (from /proc/PID/stat of the nodes and the client's rusage): where the CPUs
are the limit, the throughput ratio follows these.

usage: auth_bench.py [--rounds N] [--secs S] [--conns C] [--a BUILD_DIR]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cluster_bench import SHALE, build_loadgen, cli, free_range  # noqa: E402


def start(work, name, *flags, shale=SHALE):
    base = free_range(8)
    pg = os.path.join(work, name)
    scheme = "https" if "--https" in flags else "http"
    url = "%s://127.0.0.1:%d" % (scheme, base)
    env = dict(os.environ, AIS_ENDPOINT=url)
    cli(env, "playground", "start", "--dir", pg, "--port", str(base), "--proxies", "1", "--targets", "1", *flags,
        shale=shale)
    s = requests.Session()
    s.trust_env = False
    ca = None
    if scheme == "https":
        ca = os.path.join(pg, "tls", "ca.crt")
        s.verify = ca
    hdrs = []
    if "--auth" in flags:
        with open(os.path.join(pg, "admin.token")) as f:
            tok = json.load(f)["token"]
        s.headers["Authorization"] = "Bearer " + tok
        hdrs = ["Authorization: Bearer " + tok]
    s.put(url + "/v1/cluster", json={"action": "set-config", "value": {"log": {"level": 1}}}).raise_for_status()
    s.post(url + "/v1/buckets/ab", json={"action": "create-bck"}).raise_for_status()
    small = os.urandom(1024)
    for i in range(200):
        s.put("%s/v1/objects/ab/s%03d" % (url, i), data=small).raise_for_status()
    big = os.urandom(10 * 1024 * 1024)
    for i in range(4):
        s.put("%s/v1/objects/ab/b%d" % (url, i), data=big).raise_for_status()
    return {"name": name, "url": url, "pg": pg, "env": env, "hdrs": hdrs, "ca": ca, "shale": shale}


def node_cpu(c):
    """CPU seconds the playground's nodes used so far: {"p0": s, "t0": s}"""
    out = {}
    for n in ("p0", "t0"):
        with open(os.path.join(c["pg"], n, "shaled.pid")) as f:
            pid = f.read().strip()
        with open("/proc/%s/stat" % pid) as f:
            st = f.read().rsplit(")", 1)[1].split()
        out[n] = (int(st[11]) + int(st[12])) / os.sysconf("SC_CLK_TCK")
    return out


def run(exe, work, c, urls, conns, secs):
    uf = os.path.join(work, "urls-%s.txt" % c["name"])
    with open(uf, "w") as f:
        f.write("\n".join(urls) + "\n")
    args = [exe, "-c", str(conns), "-d", str(secs), "-L"]
    for h in c["hdrs"]:
        args += ["-H", h]
    if c["ca"]:
        args += ["-C", c["ca"]]
    n0, t0 = node_cpu(c), os.times()
    out = subprocess.run(args + [uf], capture_output=True, text=True, timeout=secs + 120).stdout
    n1, t1 = node_cpu(c), os.times()
    r = json.loads(out)
    r["cpu"] = {"target": n1["t0"] - n0["t0"], "gateway": n1["p0"] - n0["p0"],
                "client": t1.children_user - t0.children_user + t1.children_system - t0.children_system}
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--secs", type=int, default=5)
    ap.add_argument("--conns", type=int, default=16)
    ap.add_argument("--a", help="build directory of a baseline (bin/shale, bin/shaled): its plain and tls run too")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="shale-authbench-")
    exe = build_loadgen(work)
    cls = []
    try:
        cls = [start(work, "plain"), start(work, "token", "--auth"), start(work, "tls", "--https")]
        head = "round  size     plain            token            tls              token/plain  tls/plain"
        if a.a:
            ashale = os.path.join(os.path.abspath(a.a), "bin", "shale")
            cls += [start(work, "A-plain", shale=ashale), start(work, "A-tls", "--https", shale=ashale)]
            head += "    A-plain          A-tls            A-tls/plain"
        print(head)
        cpu = {}  # (name, size) -> [{"target": s per unit, ...} per round]
        for rnd in range(a.rounds):
            for size, prefix, n, conns in (("1KiB", "s", 200, a.conns), ("10MiB", "b", 4, 4)):
                order = cls if rnd % 2 == 0 else list(reversed(cls))
                res = {}
                for c in order:
                    urls = ["%s/v1/objects/ab/%s%03d" % (c["url"], prefix, i) if prefix == "s" else
                            "%s/v1/objects/ab/%s%d" % (c["url"], prefix, i) for i in range(n)]
                    r = run(exe, work, c, urls, conns, a.secs)
                    if r["errors"]:
                        raise SystemExit("%s: %d errors" % (c["name"], r["errors"]))
                    res[c["name"]] = r["rps"] if size == "1KiB" else r["bytes"] / r["seconds"] / 1e6
                    units = r["requests"] / 1e4 if size == "1KiB" else r["bytes"] / 1e9
                    cpu.setdefault((c["name"], size), []).append({k: v / units for k, v in r["cpu"].items()})
                unit = "req/s" if size == "1KiB" else "MB/s"
                line = "%5d  %-6s  %8.0f %-6s  %8.0f %-6s  %8.0f %-6s  %5.2f        %5.2f" % (
                    rnd + 1, size, res["plain"], unit, res["token"], unit, res["tls"], unit,
                    res["token"] / res["plain"], res["tls"] / res["plain"])
                if a.a:
                    line += "        %8.0f %-6s  %8.0f %-6s  %5.2f" % (
                        res["A-plain"], unit, res["A-tls"], unit, res["A-tls"] / res["A-plain"])
                print(line, flush=True)
        print("\nCPU seconds per 10,000 requests (1KiB) and per GB (10MiB), median of the rounds:")
        print("%-8s %-6s  %7s %7s %7s %7s" % ("", "size", "target", "gateway", "client", "total"))
        for (name, size), rows in cpu.items():
            med = {k: statistics.median(x[k] for x in rows) for k in ("target", "gateway", "client")}
            print("%-8s %-6s  %7.3f %7.3f %7.3f %7.3f" % (name, size, med["target"], med["gateway"], med["client"],
                                                         sum(med.values())))
    finally:
        for c in cls:
            cli(c["env"], "playground", "stop", "--dir", c["pg"], shale=c["shale"])
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
