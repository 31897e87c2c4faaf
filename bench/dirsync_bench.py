#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The cost of fsyncing the object's directory after the rename (an
acknowledged PUT survives a power cut): durable PUTs (write_policy data and md
immediate, the defaults) of 1 KiB and 128 KiB objects against two shaled
binaries, the current one and one built without the directory fsync, in
alternating rounds (wrk on loopback, one standalone node, one mountpath).

usage: dirsync_bench.py --before PATH/TO/OLD/shaled [--rounds N] [--duration S]
  e.g. the binary of the commit before the change:
    git worktree add /tmp/before <commit>^ && cd /tmp/before && ./configure && make -j2
    bench/dirsync_bench.py --before /tmp/before/build/bin/shaled
"""
import argparse
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import http_bench  # noqa: E402

SIZES = (("1KiB", 1024, 64), ("128KiB", 128 * 1024, 16))


def run(binary, work, label, size, conns, duration, tag):
    http_bench.SHALED = binary
    d = tempfile.mkdtemp(dir=work, prefix=tag)
    node = http_bench.Shaled(d, durable=True)
    try:
        r = http_bench.wrk(node.url, "/v1/objects/benchput/%s-" % label, 20000, "PUT", conns, duration,
                           body=os.path.join(work, "body-" + label), pids=[node.proc.pid])
        if r["non2xx"] or r["errors"]:
            raise SystemExit("errors in the run: %s %s" % (r["non2xx"], r["errors"]))
        return r
    finally:
        node.stop()
        shutil.rmtree(d, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", required=True, help="shaled built without the directory fsync")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--duration", type=int, default=8)
    a = ap.parse_args()
    now = os.path.join(os.environ.get("SHALE_BUILD") or os.path.join(HERE, "..", "build"), "bin", "shaled")
    work = tempfile.mkdtemp(prefix="shale-dirsync-")
    try:
        http_bench.LUA_PATH = os.path.join(work, "bench.lua")
        with open(http_bench.LUA_PATH, "w") as f:
            f.write(http_bench.WRK_LUA)
        for label, size, _ in SIZES:
            with open(os.path.join(work, "body-" + label), "wb") as f:
                f.write(os.urandom(size))
        print("%-14s %5s %12s %12s %7s" % ("durable PUT", "round", "with dirsync", "without", "ratio"))
        for label, size, conns in SIZES:
            for i in range(a.rounds):
                order = [("with", now), ("without", a.before)]
                if i % 2:
                    order.reverse()
                res = {tag: run(b, work, label, size, conns, a.duration, tag) for tag, b in order}
                w, wo = res["with"]["rps"], res["without"]["rps"]
                print("%-14s %5d %10.0f/s %10.0f/s %7.2f" % (label + " x%d" % conns, i + 1, w, wo, w / wo),
                      flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
