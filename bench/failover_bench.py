#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Failover time: a playground of 3 gateways and 4 targets, kill -9 of the
primary, then the time until (a) a surviving gateway's Smap names a new
primary and (b) the first bucket create through a surviving gateway
succeeds. Rounds with the playground's keepalive interval (2s) and with
AIStore's default (10s), alternating; every round is printed.

usage: failover_bench.py [--rounds N]
"""
import argparse
import os
import shutil
import signal
import sys
import tempfile
import time

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cluster_bench import cli, start_playground  # noqa: E402


def one(work, tag, interval):
    url, env, pg = start_playground(work, tag, 3, 4, nports=16)
    try:
        for _ in range(300):
            sm = requests.get(url + "/v1/daemon?what=smap").json()
            if len(sm["tmap"]) == 4 and len(sm["pmap"]) == 3:
                break
            time.sleep(0.1)
        if interval != "2s":
            r = requests.put(url + "/v1/cluster", json={"action": "set-config", "value": {
                "keepalivetracker": {"target": {"interval": interval}}}})
            r.raise_for_status()
        old = sm["proxy_si"]["daemon_id"]
        other = [p["public_net"]["direct_url"] for pid, p in sm["pmap"].items() if pid != old][0]
        with open(os.path.join(pg, "p0", "shaled.pid")) as f:
            pid = int(f.read())
        time.sleep(1)
        t0 = time.time()
        os.kill(pid, signal.SIGKILL)
        t_elected = t_create = None
        for i in range(1200):
            try:
                if t_elected is None and requests.get(other + "/v1/daemon?what=smap", timeout=2).json()[
                        "proxy_si"]["daemon_id"] != old:
                    t_elected = time.time() - t0
                if t_elected is not None and requests.post(other + "/v1/buckets/b%d" % i, json={
                        "action": "create-bck"}, timeout=5).status_code == 200:
                    t_create = time.time() - t0
                    break
            except requests.RequestException:
                pass
            time.sleep(0.1)
        return t_elected, t_create
    finally:
        env2 = dict(env, AIS_ENDPOINT=url)
        try:
            cli(env2, "playground", "stop", "--dir", pg)
        except Exception:  # noqa: BLE001 (the primary is dead: stop the rest)
            pass
        shutil.rmtree(os.path.join(work, tag), ignore_errors=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="shale-failover-")
    try:
        print("%-10s %5s %16s %22s" % ("keepalive", "round", "new primary (s)", "first bucket create (s)"))
        for i in range(a.rounds):
            for iv in ("2s", "10s") if i % 2 == 0 else ("10s", "2s"):
                e, c = one(work, "r%d-%s" % (i, iv), iv)
                print("%-10s %5d %16s %22s" % (iv, i + 1, "%.1f" % e if e else "-", "%.1f" % c if c else "-"),
                      flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
