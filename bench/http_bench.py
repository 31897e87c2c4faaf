#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""GET/PUT of 1 KiB, 128 KiB and 10 MiB objects: shaled vs nginx on the same
files, same machine, same run (wrk on loopback). Also: CPU seconds per GB for
10 MiB GETs, and shaled's RSS while a 4 GiB object streams in and out.

usage: http_bench.py [--duration S] [--big-gib N] [--quick]
Prints a table of ratios; see bench/RESULTS.md for recorded figures.
"""
import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from harness import stop_proc  # noqa: E402

BUILD = os.environ.get("SHALE_BUILD") or os.path.join(HERE, "..", "build")
SHALED = os.path.join(BUILD, "bin", "shaled")
CLK = os.sysconf("SC_CLK_TCK")


def free_port():
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def cpu_seconds(pids):
    t = 0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                parts = f.read().rsplit(")", 1)[1].split()
            t += (int(parts[11]) + int(parts[12])) / CLK
        except OSError:
            pass
    return t


def status_kib(pid, field):
    """a KiB field of /proc/PID/status (VmRSS, VmHWM: the peak)"""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


def rss_kib(pid):
    return status_kib(pid, "VmRSS")


def children(pid):
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True, text=True).stdout
    return [int(x) for x in out.split()]


WRK_LUA = r'''
local n = tonumber(os.getenv("BENCH_N") or "1")
local prefix = os.getenv("BENCH_PREFIX")
local suffix = os.getenv("BENCH_SUFFIX") or ""
local method = os.getenv("BENCH_METHOD") or "GET"
local bodyfile = os.getenv("BENCH_BODY")
local body = nil
if bodyfile then local f = io.open(bodyfile, "rb"); body = f:read("*a"); f:close() end
local random = os.getenv("BENCH_RANDOM")
local counter = 0
function setup(thread) thread:set("tid", counter); counter = counter + 1 end
function init(args) math.randomseed(os.time() + (tid or 0)) end
local i = 0
function request()
  i = i + 1
  local k = random and math.random(0, n - 1) or (i * 7 + tid * 131) % n
  local path = string.format("%s%05d%s", prefix, k, suffix)
  if method == "PUT" then
    return wrk.format("PUT", path, {["Content-Type"] = "application/octet-stream"}, body)
  end
  return wrk.format("GET", path)
end
'''


def work_dir(prefix):
    """A new work directory under $BENCH_DIR (default /var/tmp), holding the wrk script that wrk() runs."""
    global LUA_PATH
    work = tempfile.mkdtemp(prefix=prefix, dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    LUA_PATH = os.path.join(work, "bench.lua")
    with open(LUA_PATH, "w") as f:
        f.write(WRK_LUA)
    return work


def ctx_switches(pids):
    """voluntary + involuntary context switches of every thread of pids"""
    t = 0
    for pid in pids:
        try:
            tids = os.listdir("/proc/%d/task" % pid)
        except OSError:
            continue
        for tid in tids:
            try:
                with open("/proc/%d/task/%s/status" % (pid, tid)) as f:
                    t += sum(int(l.split()[1]) for l in f if "ctxt_switches:" in l)
            except (OSError, ValueError, IndexError):
                pass
    return t


def children_cpu():
    """CPU seconds of this process's finished children (wrk)"""
    u = resource.getrusage(resource.RUSAGE_CHILDREN)
    return u.ru_utime + u.ru_stime


def wrk(url_base, prefix, n, method, conns, duration, body=None, pids=(), suffix="", threads=2, rand=False):
    """one wrk run; "cpu" = the pids' CPU seconds, "wrk_cpu" = wrk's, "reqs" = requests done,
    "csw" = their context switches meanwhile"""
    env = dict(os.environ, BENCH_N=str(n), BENCH_PREFIX=prefix, BENCH_METHOD=method, BENCH_SUFFIX=suffix)
    if body:
        env["BENCH_BODY"] = body
    if rand:
        env["BENCH_RANDOM"] = "1"
    c0, x0, w0 = cpu_seconds(pids), ctx_switches(pids), children_cpu()
    p = subprocess.run(["wrk", "-t%d" % threads, "-c%d" % conns, "-d%ds" % duration, "--latency", "-s", LUA_PATH, url_base],
                       capture_output=True, text=True, env=env, timeout=duration + 60)
    c1, x1, w1 = cpu_seconds(pids), ctx_switches(pids), children_cpu()
    out = p.stdout
    reqs = int(re.search(r"(\d+) requests in", out).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    m = re.search(r"Transfer/sec:\s+([\d.]+)(\w+)", out)
    mult = {"B": 1, "KB": 1024, "MB": 1024 ** 2, "GB": 1024 ** 3}[m.group(2)]
    bps = float(m.group(1)) * mult
    non2xx = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errs = re.search(r"Socket errors: (.*)", out)
    p50 = re.search(r"50%\s+([\d.]+\w+)", out)
    return {"rps": rps, "bps": bps, "cpu": c1 - c0, "wrk_cpu": w1 - w0, "reqs": reqs, "csw": x1 - x0, "non2xx": int(non2xx.group(1)) if non2xx else 0,
            "errors": errs.group(1) if errs else "", "p50": p50.group(1) if p50 else "?", "raw": out}


def paired(rounds, key, run_s, run_n):
    """Run shaled and nginx alternately `rounds` times; the disk and the
    other tenants of a shared machine drift over minutes, so a single pair
    can be off by tens of percent. Returns the round with the median ratio
    and every round's ratio."""
    pairs = []
    for _ in range(max(1, rounds)):
        s, n = run_s(), run_n()
        pairs.append((s[key] / n[key], s, n))
    pairs.sort(key=lambda t: t[0])
    mid = pairs[len(pairs) // 2]
    return mid[1], mid[2], [round(t[0], 2) for t in pairs]


class Shaled:
    def __init__(self, work, durable, binary=None, workers=0):
        self.port = free_port()
        self.dir = os.path.join(work, "shaled-%s" % ("durable" if durable else "fast"))
        os.makedirs(self.dir)
        cfg = {"confdir": self.dir + "/conf", "log_dir": self.dir + "/log",
               "host_net": {"hostname": "127.0.0.1", "port": self.port},
               "fspaths": {self.dir + "/mp": ""}, "log": {"level": 1},
               "write_policy": {"data": "immediate" if durable else "never",
                                "md": "immediate" if durable else "delayed"}}
        if workers:
            cfg["net"] = {"http": {"workers": workers}}
        with open(self.dir + "/shale.json", "w") as f:
            json.dump(cfg, f)
        self.proc = subprocess.Popen([binary or SHALED, "--config", self.dir + "/shale.json", "--bind", "127.0.0.1"],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = "http://127.0.0.1:%d" % self.port
        for _ in range(300):
            try:
                if requests.get(self.url + "/v1/health", timeout=1).status_code == 200:
                    break
            except requests.RequestException:
                pass
            time.sleep(0.05)
        for b in ("bench", "benchput"):
            requests.post(self.url + "/v1/buckets/" + b, json={"action": "create-bck"}).raise_for_status()

    def objdir(self):
        return self.dir + "/mp/@ais/bench/%ob"

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)


class Nginx:
    def __init__(self, work, root):
        self.port = free_port()
        self.dir = os.path.join(work, "nginx")
        for d in ("dav", "tmp", "logs"):
            os.makedirs(os.path.join(self.dir, d), exist_ok=True)
        conf = """
%(user)s
worker_processes 2;
pid %(d)s/nginx.pid;
error_log %(d)s/logs/error.log warn;
daemon off;
events { worker_connections 4096; }
http {
  access_log off;
  sendfile on; tcp_nopush on; tcp_nodelay on;
  keepalive_requests 1000000; keepalive_timeout 65;
  default_type application/octet-stream;
  client_body_temp_path %(d)s/tmp;
  server {
    listen 127.0.0.1:%(port)d;
    location /obj/ { alias %(root)s/; }
    location /dav/ { alias %(d)s/dav/; dav_methods PUT; create_full_put_path on; client_max_body_size 0;
                     client_body_buffer_size 128k; }
  }
}
""" % {"d": self.dir, "port": self.port, "root": root, "user": "user root;" if os.geteuid() == 0 else ""}
        with open(self.dir + "/nginx.conf", "w") as f:
            f.write(conf)
        self.proc = subprocess.Popen(["nginx", "-c", self.dir + "/nginx.conf", "-p", self.dir],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.url = "http://127.0.0.1:%d" % self.port
        for _ in range(300):
            try:
                requests.get(self.url + "/", timeout=1)
                break
            except requests.RequestException:
                time.sleep(0.05)

    def pids(self):
        return [self.proc.pid] + children(self.proc.pid)

    def stop(self):
        stop_proc(self.proc, signal.SIGQUIT, 30)


SIZES = [("1KiB", 1024, 2000, 64), ("128KiB", 128 * 1024, 400, 64), ("10MiB", 10 * 1024 * 1024, 24, 8)]


def fmt_rate(x):
    return "%.0f" % x


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--big-gib", type=float, default=4)
    ap.add_argument("--rounds", type=int, default=3,
                    help="shaled/nginx runs alternate this many times per test; the median round is shown")
    ap.add_argument("--quick", action="store_true", help="short single-round runs, 256 MiB streaming test")
    a = ap.parse_args()
    if a.quick:
        a.duration, a.big_gib, a.rounds = 3, 0.25, 1
    for tool in ("wrk", "nginx"):
        if not shutil.which(tool):
            sys.exit("bench needs %s (apt-get install %s)" % (tool, tool))
    work = work_dir("shale-bench-")
    rows = []
    fast = Shaled(work, durable=False)
    ng = Nginx(work, fast.objdir())
    try:
        # the same files for both servers: uploaded once through shaled, served by nginx from its %ob
        s = requests.Session()
        bodies = {}
        for label, size, n, _ in SIZES:
            data = os.urandom(size)
            bodies[label] = os.path.join(work, "body-" + label)
            with open(bodies[label], "wb") as f:
                f.write(data)
            for i in range(n):
                s.put(fast.url + "/v1/objects/bench/%s-%05d" % (label, i), data=data).raise_for_status()
        spid = [fast.proc.pid]
        for label, size, n, conns in SIZES:
            rows.append(("GET %s" % label,) + paired(
                a.rounds, "bps" if size > 1024 else "rps",
                lambda: wrk(fast.url, "/v1/objects/bench/%s-" % label, n, "GET", conns, a.duration, pids=spid),
                lambda: wrk(ng.url, "/obj/%s-" % label, n, "GET", conns, a.duration, pids=ng.pids())))

        def put_run(url, prefix, label, size, n, conns, pids):
            r = wrk(url, prefix, n, "PUT", conns, a.duration, body=bodies[label], pids=pids)
            r["bps"] = r["rps"] * size  # wrk's Transfer/sec counts response bytes only
            return r
        for label, size, n, conns in SIZES:
            rows.append(("PUT %s (no fsync, both)" % label,) + paired(
                a.rounds, "rps",
                lambda: put_run(fast.url, "/v1/objects/benchput/%s-" % label, label, size, n, conns, spid),
                lambda: put_run(ng.url, "/dav/%s-" % label, label, size, n, conns, ng.pids())))
    finally:
        ng.stop()
        fast.stop()
    # default durability (fsync data + metadata) for reference, no nginx equivalent
    dur = Shaled(work, durable=True)
    durable_rows = []
    try:
        for label, size, n, conns in SIZES:
            p = wrk(dur.url, "/v1/objects/benchput/%s-" % label, n, "PUT", conns, a.duration,
                    body=os.path.join(work, "body-" + label), pids=[dur.proc.pid])
            p["bps"] = p["rps"] * size
            durable_rows.append(("PUT %s (fsync data+md)" % label, p))
        # RSS while a big object streams in and out
        big = int(a.big_gib * (1 << 30))
        base = rss_kib(dur.proc.pid)
        peak = [base]
        stop = threading.Event()

        def sample():
            while not stop.is_set():
                peak[0] = max(peak[0], rss_kib(dur.proc.pid))
                time.sleep(0.2)
        t = threading.Thread(target=sample)
        t.start()
        t0 = time.time()
        dd = subprocess.Popen(["dd", "if=/dev/zero", "bs=1M", "count=%d" % (big >> 20), "status=none"],
                              stdout=subprocess.PIPE)
        subprocess.run(["curl", "-sf", "-T", "-", dur.url + "/v1/objects/bench/big"], stdin=dd.stdout, check=True)
        dd.wait()
        t_put = time.time() - t0
        rss_put = peak[0]
        t0 = time.time()
        subprocess.run(["curl", "-sf", "-o", "/dev/null", dur.url + "/v1/objects/bench/big"], check=True)
        t_get = time.time() - t0
        stop.set()
        t.join()
        rss_get = peak[0]
    finally:
        dur.stop()
        shutil.rmtree(work, ignore_errors=True)

    goals = {"GET 1KiB": ("rps", 0.9), "GET 10MiB": ("bps", 0.95), "PUT 1KiB (no fsync, both)": ("rps", 1.0),
             "PUT 128KiB (no fsync, both)": ("rps", 1.0), "PUT 10MiB (no fsync, both)": ("rps", 1.0)}
    print("\n%-30s %14s %14s %8s %8s  %s" % ("test (wrk -t2, loopback)", "shaled", "nginx", "ratio", "goal",
                                           "p50 shaled/nginx"))
    for name, sv, nv, ratios in rows:
        if "1KiB" in name:
            sv_s, nv_s = "%s req/s" % fmt_rate(sv["rps"]), "%s req/s" % fmt_rate(nv["rps"])
            ratio = sv["rps"] / nv["rps"]
        else:
            sv_s, nv_s = "%.0f MiB/s" % (sv["bps"] / 2 ** 20), "%.0f MiB/s" % (nv["bps"] / 2 ** 20)
            ratio = sv["bps"] / nv["bps"]
        goal = goals.get(name, (None, None))[1]
        flag = "" if goal is None else ("ok" if ratio >= goal else "MISS")
        print("%-30s %14s %14s %8.2f %8s  %s/%s %s%s" % (
            name, sv_s, nv_s, ratio, ">=%.2f %s" % (goal, flag) if goal else "", sv["p50"], nv["p50"],
            "" if len(ratios) < 2 else " rounds %s" % "/".join("%.2f" % x for x in ratios),
            "" if not (sv["non2xx"] or nv["non2xx"]) else " (non-2xx: %d/%d)" % (sv["non2xx"], nv["non2xx"])))
        if name == "GET 10MiB":
            gb_s = sv["bps"] * a.duration / 1e9
            gb_n = nv["bps"] * a.duration / 1e9
            print("%-30s %14.3f %14.3f %8s %8s" % ("  CPU-s per GB (10MiB GET)", sv["cpu"] / gb_s, nv["cpu"] / gb_n,
                                                 "", "<=0.30 " + ("ok" if sv["cpu"] / gb_s <= 0.3 else "MISS")))
    for name, p in durable_rows:
        unit = "%.0f MiB/s" % (p["bps"] / 2 ** 20) if "10MiB" in name else "%s req/s" % fmt_rate(p["rps"])
        print("%-30s %14s %14s" % (name, unit, "-"))
    print("%-30s %14s" % ("stream %.2f GiB PUT" % a.big_gib, "%.0f MiB/s" % (big / t_put / 2 ** 20)))
    print("%-30s %14s" % ("stream %.2f GiB GET" % a.big_gib, "%.0f MiB/s" % (big / t_get / 2 ** 20)))
    print("%-30s %14s   (baseline %d KiB; peak during PUT %d KiB, during GET %d KiB)" % (
        "RSS growth while streaming", "%+d KiB" % (max(rss_put, rss_get) - base), base, rss_put, rss_get))


if __name__ == "__main__":
    main()
