#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Bucket summary against a full listing of the same bucket (1 gateway + 3
targets, N one-byte objects): seconds for summary-bck (start + polls until
done) and for listing every name page by page through the gateway, rounds
alternating; every round is printed.

usage: summary_bench.py [--objects 100000] [--rounds 3]
"""
import argparse
import os
import sys
import time

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ishard_bench  # noqa: E402


def summary(s, url):
    r = s.get(url + "/v1/buckets/sb", json={"action": "summary-bck", "value": {"uuid": ""}}, timeout=60)
    assert r.status_code == 202, r.text
    jid = r.text
    while True:
        r = s.get(url + "/v1/buckets/sb", json={"action": "summary-bck", "value": {"uuid": jid}}, timeout=60)
        if r.status_code == 200:
            return int(r.json()[0]["ObjCount"]["obj_count_present"])
        assert r.status_code == 202, r.text
        time.sleep(0.02)


def listing(s, url):
    n, token = 0, ""
    while True:
        r = s.get(url + "/v1/buckets/sb", timeout=120, json={"action": "list", "value": {
            "props": "name,size", "continuation_token": token, "pagesize": 10000}})
        r.raise_for_status()
        j = r.json()
        n += len(j["entries"] or [])
        token = j["continuation_token"]
        if not token:
            return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--objects", type=int, default=100000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    with ishard_bench.playground("shale-summ-bench-") as (work, url):
        ishard_bench.upload_tree(url, "sb", ishard_bench.tiny_files(work, a.objects))
        s = requests.Session()
        print("%d objects on 3 targets" % a.objects)
        print("%-6s %12s %12s %8s" % ("round", "summary s", "listing s", "ratio"))
        for rnd in range(a.rounds):
            t0 = time.time()
            n1 = summary(s, url)
            ts = time.time() - t0
            t0 = time.time()
            n2 = listing(s, url)
            tl = time.time() - t0
            assert n1 == n2 == a.objects, (n1, n2)
            print("%-6d %12.2f %12.2f %7.2fx" % (rnd + 1, ts, tl, tl / ts))


if __name__ == "__main__":
    main()
