#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""S3 front end vs the native API (1 proxy + 2 targets on loopback, same machine, same run):

  * GET of 1 KiB and 10 MiB objects: /s3/BUCKET/KEY on the gateway (forwarded to the
    owning target, streamed back) vs the native GET of the same objects, both through the
    gateway (the client follows the redirect) and straight from the owning target; one
    load generator (bench/loadgen.c, libcurl multi) for all, rounds alternating;
  * a 1 GiB upload with awscli (`aws s3 cp`, multipart, 8 MiB parts) vs a native PUT of
    the same file with curl straight to the owning target;
  * what SigV4 verification costs: the gateway's and targets' CPU time per request for
    1 KiB S3 GETs signed by boto3 with verification on, against the same GETs with it off.

usage: s3_bench.py [--duration S] [--rounds N] [--big-mib N] [--quick] [--sig-only] [--fwd-stat] [--ab BUILD]

--ab BUILD: only the GETs, on two clusters at once (this build and BUILD, e.g. main's), in slices of
--duration seconds that alternate build and path (/s3, native via the gateway) round after round, so that
both builds see the same machine; every slice is printed, and the median ratio per build.
"""
import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import statistics
import time

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cluster_bench import build_loadgen, cli, load, put_many, start_playground  # noqa: E402

AWS = "/usr/bin/aws"


def node_cpu(pgdir):
    """CPU seconds (user + system) of each node of the playground so far: {name: s}"""
    out = {}
    tck = os.sysconf("SC_CLK_TCK")
    topo = json.load(open(os.path.join(pgdir, "playground.json")))
    for n in topo["nodes"]:
        with open(os.path.join(pgdir, n["name"], "shaled.pid")) as f:
            pid = int(f.read().strip())
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        out[n["name"]] = (int(fields[11]) + int(fields[12])) / tck
    return out


def owner_url(url, bucket, key, method="GET"):
    """the owning target's URL (a PUT keeps the gateway's redirect marks, which a target requires)"""
    r = requests.request(method, "%s/v1/objects/%s/%s" % (url, bucket, key), allow_redirects=False)
    loc = r.headers["Location"]
    return loc if method == "PUT" else loc.split("?")[0]


def fwd_stat(url, pg):
    """CPU µs, context switches and syscalls of the gateway per GET of one 1 KiB object, 2000 GETs in a row
    from one client: forwarded (/s3) and redirected (native; the client follows)"""
    topo = json.load(open(os.path.join(pg, "playground.json")))
    gw = topo["nodes"][0]["name"]
    pid = int(open(os.path.join(pg, gw, "shaled.pid")).read())
    ev = ["context-switches", "syscalls:sys_enter_poll", "syscalls:sys_enter_recvfrom", "syscalls:sys_enter_sendto",
          "syscalls:sys_enter_write", "syscalls:sys_enter_read"]
    out, s, n = [], requests.Session(), 2000
    for path in ("/s3/s3b/one", "/v1/objects/s3b/one"):
        s.get(url + path).content
        ps = subprocess.Popen(["perf", "stat", "-x", ",", "-e", ",".join(ev), "-p", str(pid)],
                              stderr=subprocess.PIPE, text=True)
        time.sleep(0.5)
        c0 = node_cpu(pg)[gw]
        for _ in range(n):
            s.get(url + path).content
        c1 = node_cpu(pg)[gw]
        ps.send_signal(2)
        err = ps.communicate(timeout=30)[1]
        st = {"cpu_us": (c1 - c0) / n * 1e6}
        for ln in err.splitlines():
            f = ln.split(",")
            if len(f) > 2 and f[0].isdigit():
                st[f[2].replace("syscalls:sys_enter_", "")] = int(f[0]) / n
        out.append((path, st))
    return out


def ab(a, work, exe):
    """--ab: /s3 vs native-via-gateway GETs on this build and on a.ab, slices alternating"""
    import cluster_bench
    builds = {"base": os.path.join(os.path.abspath(a.ab), "bin", "shale"), "this": cluster_bench.SHALE}
    sets = {"1KiB": (["k%05d" % i for i in range(2000)], os.urandom(1024), 32, "req/s"),
            "10MiB": (["m%03d" % i for i in range(12)], os.urandom(10 << 20), 8, "MB/s")}
    pgs = {}
    try:
        for b, shale in builds.items():
            cluster_bench.SHALE = shale  # (cli() runs this build's CLI, which starts its own shaled)
            url, env, pg = start_playground(work, "pg-" + b, 1, 2)
            pgs[b] = (url, env, pg)
            cli(env, "bucket", "create", "ais://s3b")
            for names, data, _, _ in sets.values():
                put_many(url, "s3b", names, data, workers=8)
        for label, (names, data, conns, unit) in sets.items():
            ratios = {b: [] for b in builds}
            print("\nGET %s, %d connections, %s per %d s slice" % (label, conns, unit, a.duration))
            for i in range(a.rounds):
                order = list(builds) if i % 2 == 0 else list(builds)[::-1]
                for b in order:
                    url = pgs[b][0]
                    fig = []
                    for path, follow in (("/s3/s3b/", False), ("/v1/objects/s3b/", True)):
                        r = load(exe, [url + path + n for n in names], work, conns, a.duration, follow)
                        fig.append(r["rps"] if label == "1KiB" else r["bytes"] / r["seconds"] / 1e6)
                        if r["errors"]:
                            print("  errors: %s %s %s" % (b, path, r["errors"]))
                    ratios[b].append(fig[0] / fig[1])
                    print("  round %d %-4s  /s3 %9.0f   native via gateway %9.0f   ratio %.2f   (load %s)" % (
                        i + 1, b, fig[0], fig[1], fig[0] / fig[1], open("/proc/loadavg").read().split()[0]),
                        flush=True)
            for b in builds:
                print("  median ratio %-4s %.2f  (min %.2f, max %.2f)" % (b, statistics.median(ratios[b]),
                                                                         min(ratios[b]), max(ratios[b])))
    finally:
        for b, (url, env, pg) in pgs.items():
            cluster_bench.SHALE = builds[b]
            cli(env, "playground", "stop", "--dir", pg)
        shutil.rmtree(work, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=6)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--big-mib", type=int, default=1024)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--sig-only", action="store_true", help="only the SigV4 CPU figure")
    ap.add_argument("--fwd-stat", action="store_true",
                    help="only: the gateway's CPU, context switches and syscalls per sequential 1 KiB GET, "
                         "forwarded (/s3) and redirected (native), with perf stat")
    ap.add_argument("--ab", metavar="BUILD", help="only the GETs, this build against BUILD, slices alternating")
    a = ap.parse_args()
    if a.quick:
        a.duration, a.rounds, a.big_mib = 2, 1, 128
    work = tempfile.mkdtemp(prefix="shale-s3bench-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    exe = build_loadgen(work)
    if a.ab:
        return ab(a, work, exe)
    url, env, pg = start_playground(work, "pg", 1, 2)
    aenv = dict(os.environ, AWS_ACCESS_KEY_ID="bench", AWS_SECRET_ACCESS_KEY="bench-secret",
                AWS_DEFAULT_REGION="us-east-1", AWS_CONFIG_FILE=os.path.join(work, "awsconfig"),
                AWS_SHARED_CREDENTIALS_FILE=os.path.join(work, "awscreds"))
    res = {}
    try:
        cli(env, "bucket", "create", "ais://s3b")
        sets = {"1KiB": (["k%05d" % i for i in range(2000)], os.urandom(1024), 32),
                "10MiB": (["m%03d" % i for i in range(24)], os.urandom(10 << 20), 8)}
        if a.sig_only or a.fwd_stat:
            sets.pop("10MiB")
        if a.fwd_stat:
            put_many(url, "s3b", ["one"], os.urandom(1024))
            print("per sequential 1 KiB GET on the gateway (2000 GETs, one client, perf stat):")
            for path, st in fwd_stat(url, pg):
                print("  %-22s %s" % (path, "  ".join("%s %.1f" % kv for kv in st.items())))
            return
        for label, (names, data, _) in sets.items():
            put_many(url, "s3b", names, data, workers=8)
        for label, (names, data, conns) in ([] if a.sig_only else sets.items()):
            s3u = ["%s/s3/s3b/%s" % (url, n) for n in names]
            gw = ["%s/v1/objects/s3b/%s" % (url, n) for n in names]
            direct = [owner_url(url, "s3b", n) for n in names]
            rounds = []
            for _ in range(a.rounds):
                rounds.append({"s3": load(exe, s3u, work, conns, a.duration, False),
                               "native-gw": load(exe, gw, work, conns, a.duration, True),
                               "native-direct": load(exe, direct, work, conns, a.duration, False)})
            res[label] = rounds

        # 1 GiB: awscli multipart through /s3 vs a native PUT straight to the owner
        big = os.path.join(work, "big.bin")
        if a.sig_only:
            a.big_mib, a.rounds = 1, 0
        with open(big, "wb") as f:
            for _ in range(a.big_mib):
                f.write(os.urandom(1 << 20))
        up = []

        def cpu_now():
            t = os.times()
            return t.children_user + t.children_system, node_cpu(pg)

        def cpu_since(c0):
            c1 = cpu_now()
            return {"client": c1[0] - c0[0], **{k: c1[1][k] - c0[1][k] for k in c1[1]}}
        for i in range(a.rounds):
            c0 = cpu_now()
            t0 = time.time()
            subprocess.run([AWS, "--endpoint-url", url + "/s3", "s3", "cp", big, "s3://s3b/big%d" % i,
                            "--only-show-errors"], check=True, env=aenv, timeout=3600)
            t_s3 = time.time() - t0
            cpu_s3 = cpu_since(c0)
            dst = owner_url(url, "s3b", "nbig%d" % i, "PUT")
            c0 = cpu_now()
            t0 = time.time()
            subprocess.run(["curl", "-sf", "-T", big, "-o", "/dev/null", dst], check=True, timeout=3600)
            t_nat = time.time() - t0
            up.append((t_s3, t_nat, cpu_s3, cpu_since(c0)))
        res["upload"] = up
        if up:
            h = hashlib.sha256(open(big, "rb").read()).hexdigest()
            back = hashlib.sha256(requests.get(url + "/s3/s3b/big0").content).hexdigest()
            res["upload_ok"] = h == back

        # SigV4 cost: CPU of all nodes per signed 1 KiB GET, verification on vs off
        import boto3
        from botocore.config import Config
        s3 = boto3.client("s3", endpoint_url=url + "/s3", aws_access_key_id="bench",
                          aws_secret_access_key="bench-secret", region_name="us-east-1",
                          config=Config(s3={"addressing_style": "path"}))
        keys = sets["1KiB"][0][:200]
        cli(env, "s3", "key", "add", "bench", "--secret", "bench-secret")
        cpu = []
        for mode in ("off", "on", "off", "on"):  # alternating: the machine drifts
            cli(env, "s3", "verify", mode)
            time.sleep(0.5)
            c0 = node_cpu(pg)
            for _ in range(10):
                for k in keys:
                    s3.get_object(Bucket="s3b", Key=k)["Body"].read()
            c1 = node_cpu(pg)
            cpu.append((mode, {n: (c1[n] - c0[n]) / (10 * len(keys)) * 1e6 for n in c1}))
        cli(env, "s3", "verify", "off")
        res["sigcpu"] = cpu
    finally:
        cli(env, "playground", "stop", "--dir", pg)
        shutil.rmtree(work, ignore_errors=True)

    for label in [x for x in ("1KiB", "10MiB") if x in res]:
        rounds = res[label]
        unit = "req/s" if label == "1KiB" else "MB/s"

        def fig(r):
            return r["rps"] if label == "1KiB" else r["bytes"] / r["seconds"] / 1e6
        print("\nGET %s, %d connections (bench/loadgen)   %s per round" % (label, sets[label][2], unit))
        for rd in rounds:
            print("  /s3 via gateway %10.0f   native via gateway %10.0f (%.2fx)   native direct %10.0f (%.2fx)%s" % (
                fig(rd["s3"]), fig(rd["native-gw"]), fig(rd["s3"]) / fig(rd["native-gw"]), fig(rd["native-direct"]),
                fig(rd["s3"]) / fig(rd["native-direct"]),
                "" if not sum(rd[k]["errors"] for k in rd) else "  errors %s" % {k: rd[k]["errors"] for k in rd}))
    if res["upload"]:
        print("\n%d MiB upload: aws s3 cp via /s3 (multipart) vs curl -T native PUT to the owner" % a.big_mib)
        for t_s3, t_nat, c_s3, c_nat in res["upload"]:
            print("  aws %.1f MB/s   native %.1f MB/s   ratio %.2f" % (a.big_mib * 1.048576 / t_s3,
                                                                        a.big_mib * 1.048576 / t_nat, t_nat / t_s3))
            print("    CPU s  aws: %s   curl: %s" % ("  ".join("%s %.1f" % kv for kv in sorted(c_s3.items())),
                                                    "  ".join("%s %.1f" % kv for kv in sorted(c_nat.items()))))
        print("  read back identical: %s" % res["upload_ok"])
    print("\nCPU per signed 1 KiB GET from boto3 (2000 GETs per round; per node, us; a clock tick is 5 us here):")
    for mode, per in res["sigcpu"]:
        print("  verification %-3s  %s   total %.0f" % (mode, "  ".join("%s %.0f" % kv for kv in sorted(per.items())),
                                                       sum(per.values())))


if __name__ == "__main__":
    main()
