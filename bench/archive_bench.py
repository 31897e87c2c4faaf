#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Shard figures, same machine, same run:

  * one member by ?archpath= from a ~1 GiB plain tar (indexed) vs GET of a
    plain 1 KiB object, both with wrk;
  * archive creation (the archive job, members read from the store) in MB/s
    and files/s vs GNU tar and bsdtar packing the very same files.

usage: archive_bench.py [--tar-gib G] [--files N] [--file-size BYTES] [--duration S] [--quick]
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import time

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import http_bench  # noqa: E402
from http_bench import Shaled, wrk  # noqa: E402

MEMBER = 1024


def ustar_header(name, size):
    h = bytearray(512)
    nb = name.encode()
    h[0:len(nb)] = nb
    h[100:108] = b"0000644\0"
    h[108:116] = b"0000000\0"
    h[116:124] = b"0000000\0"
    h[124:136] = ("%011o\0" % size).encode()
    h[136:148] = ("%011o\0" % int(time.time())).encode()
    h[148:156] = b"        "
    h[156:157] = b"0"
    h[257:263] = b"ustar\0"
    h[263:265] = b"00"
    h[148:156] = ("%06o\0 " % sum(h)).encode()
    return bytes(h)


def write_tar(path, n, size):
    payload = os.urandom(size)
    pad = b"\0" * ((512 - size % 512) % 512)
    with open(path, "wb") as f:
        for i in range(n):
            f.write(ustar_header("m%07d.bin" % i, size))
            f.write(payload)
            f.write(pad)
        f.write(b"\0" * 1024)


def timed(cmd, cwd=None):
    t0 = time.time()
    subprocess.run(cmd, check=True, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tar-gib", type=float, default=1.0)
    ap.add_argument("--files", type=int, default=20000)
    ap.add_argument("--file-size", type=int, default=10240)
    ap.add_argument("--duration", type=int, default=8)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.tar_gib, a.files, a.duration = 0.05, 2000, 3
    for tool in ("wrk", "tar", "bsdtar"):
        if not shutil.which(tool):
            sys.exit("archive bench needs %s (apt-get install wrk tar libarchive-tools)" % tool)
    work = http_bench.work_dir("shale-abench-")
    nmem = int(a.tar_gib * (1 << 30) / (MEMBER + 512))
    tarpath = os.path.join(work, "big.tar")
    write_tar(tarpath, nmem, MEMBER)
    node = Shaled(work, durable=False)
    res = {}
    try:
        s = requests.Session()
        t0 = time.time()
        with open(tarpath, "rb") as f:
            s.put(node.url + "/v1/objects/bench/big.tar", data=f).raise_for_status()
        res["put_index_s"] = time.time() - t0
        os.unlink(tarpath)
        one = os.urandom(MEMBER)
        for i in range(2000):
            s.put(node.url + "/v1/objects/bench/o%05d" % i, data=one).raise_for_status()
        r = s.get(node.url + "/v1/objects/bench/big.tar", params={"archpath": "m0000007.bin"})
        assert r.status_code == 200 and len(r.content) == MEMBER, r.status_code
        pid = [node.proc.pid]
        # wrk path template: prefix + %05d; members need 7 digits, so fold the rest into the prefix
        res["member"] = wrk(node.url, "/v1/objects/bench/big.tar?archpath=m00", min(nmem, 100000), "GET", 64,
                            a.duration, pids=pid, suffix=".bin")
        res["plain"] = wrk(node.url, "/v1/objects/bench/o", 2000, "GET", 64, a.duration, pids=pid)

        # archive creation vs GNU tar and bsdtar on the same files
        data = os.urandom(a.file_size)
        names = ["f/%06d.bin" % i for i in range(a.files)]
        s.post(node.url + "/v1/buckets/arch", json={"action": "create-bck"}).raise_for_status()
        for n in names:
            s.put(node.url + "/v1/objects/arch/" + n, data=data).raise_for_status()
        r = s.put(node.url + "/v1/buckets/arch", json={"action": "archive", "value": {
            "archname": "all.tar", "template": "f/", "tobck": {"name": "bench"}}})
        r.raise_for_status()
        jid = r.text
        for _ in range(6000):
            st = s.get(node.url + "/v1/cluster", params={"what": "status"}, json={"ID": jid}).json()
            if st["end_time"]:
                break
            time.sleep(0.05)
        assert not st["err"], st
        snap = list(s.get(node.url + "/v1/cluster", params={"what": "qryxstats"}, json={"ID": jid}).json()
                    .values())[0][0]
        res["job_s"] = (snap["end_ns"] - snap["start_ns"]) / 1e9
        objdir = os.path.join(node.dir, "mp", "@ais", "arch", "%ob")
        res["gnutar_s"] = timed(["tar", "-cf", os.path.join(work, "gnu.tar"), "f"], cwd=objdir)
        res["bsdtar_s"] = timed(["bsdtar", "-cf", os.path.join(work, "bsd.tar"), "f"], cwd=objdir)
    finally:
        node.stop()
        shutil.rmtree(work, ignore_errors=True)

    m, p = res["member"], res["plain"]
    print("\n%-52s %12s %12s %8s %8s" % ("member reads (wrk -t2 -c64, 1 KiB)", "req/s", "p50", "ratio", "goal"))
    print("%-52s %12.0f %12s %8.2f %8s" % ("GET ?archpath= from a %.2f GiB tar (%d members, indexed)" % (
        a.tar_gib, nmem), m["rps"], m["p50"], m["rps"] / p["rps"], ">=0.50 " + (
        "ok" if m["rps"] / p["rps"] >= 0.5 else "MISS")))
    print("%-52s %12.0f %12s %8.2f" % ("GET of a plain 1 KiB object", p["rps"], p["p50"], 1.0))
    print("  (PUT of the tar including building its index: %.1f s)" % res["put_index_s"])
    total = a.files * a.file_size
    print("\n%-52s %10s %10s %10s %8s" % ("archive creation: %d files x %d B" % (a.files, a.file_size), "MB/s",
                                        "files/s", "vs bsdtar", "goal"))
    for k, label in (("job_s", "shale archive job (store -> store)"), ("gnutar_s", "GNU tar -cf"),
                     ("bsdtar_s", "bsdtar -cf")):
        t = res[k]
        ratio = res["bsdtar_s"] / t
        print("%-52s %10.1f %10.0f %10.2f %8s" % (label, total / t / 1e6, a.files / t, ratio,
                                                  (">=1.00 " + ("ok" if ratio >= 1 else "MISS")) if k == "job_s"
                                                  else ""))


if __name__ == "__main__":
    main()
