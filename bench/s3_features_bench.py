#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""What the data-lake features of the S3 front end cost (issue 39), same machine, same run, rounds alternating:

  * plain: a bucket with none of them (the reference);
  * versioning: a bucket with S3 versioning Enabled (every PUT a new version);
  * sse-s3: a bucket whose default encryption is SSE-S3 (AES256: every PUT encrypted, every GET decrypted);
  * policy-20: on a second cluster with client authentication on, anonymous requests to a bucket whose
    policy has 20 statements (19 that do not apply, checked first, then the Allow), against the same
    cluster's bucket with only the Allow (policy-1), and policy-1 against the plain bucket of the first
    cluster (what authentication with a policy costs at all).

GET: bench/loadgen (libcurl multi) on /s3/BUCKET/KEY through the gateway (1 KiB: requests/s, 32 connections;
10 MiB: MB/s, 8 connections). PUT: 8 Python threads with requests (1 KiB: requests/s; 10 MiB: MB/s), the same
client for every bucket. Goals: >= 0.9x of plain for versioning and policy-20, >= 0.7x for SSE-S3 at 10 MiB.

usage: s3_features_bench.py [--duration S] [--rounds N] [--quick] [--only plain,versioning] [--sizes 10MiB]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cluster_bench import build_loadgen, cli, free_range, load  # noqa: E402

SETS = {"1KiB": (1024, 2000, 32), "10MiB": (10 << 20, 16, 8)}


def put_rate(url, bucket, prefix, data, n, secs):
    """PUTs of data under prefix for about secs seconds with 8 threads: (objects/s, MB/s)"""
    sess, done, stop = {}, [0], time.time() + secs
    lock = threading.Lock()

    def worker(w):
        t = threading.get_ident()
        s = sess.setdefault(t, requests.Session())
        i = 0
        while time.time() < stop:
            r = s.put("%s/s3/%s/%s-%d-%d" % (url, bucket, prefix, w, i % n), data=data, timeout=120)
            r.raise_for_status()
            i += 1
            with lock:
                done[0] += 1
    t0 = time.time()
    with ThreadPoolExecutor(8) as ex:
        list(ex.map(worker, range(8)))
    dt = time.time() - t0
    return done[0] / dt, done[0] * len(data) / dt / 1e6


def policy(bucket, n):
    """n statements: n-1 that do not apply to an anonymous GET/PUT from 127.0.0.1, then the Allow"""
    st = []
    for i in range(n - 1):
        if i % 3 == 0:
            st.append({"Sid": "d%d" % i, "Effect": "Deny", "Principal": "*", "Action": "s3:*",
                       "Resource": "arn:aws:s3:::%s/nomatch-%d/*" % (bucket, i)})
        elif i % 3 == 1:
            st.append({"Sid": "d%d" % i, "Effect": "Deny", "Principal": "*", "Action": ["s3:DeleteObject"],
                       "Resource": "arn:aws:s3:::%s/*" % bucket})
        else:
            st.append({"Sid": "d%d" % i, "Effect": "Deny", "Principal": "*", "Action": "s3:GetObject",
                       "Resource": "arn:aws:s3:::%s/*" % bucket,
                       "Condition": {"IpAddress": {"aws:SourceIp": "10.%d.0.0/16" % i}}})
    st.append({"Sid": "allow", "Effect": "Allow", "Principal": "*", "Action": ["s3:GetObject", "s3:PutObject"],
               "Resource": "arn:aws:s3:::%s/*" % bucket})
    return json.dumps({"Version": "2012-10-17", "Statement": st})


def start(work, name, auth):
    base = free_range(8)
    url = "http://127.0.0.1:%d" % base
    pg = os.path.join(work, name)
    env = dict(os.environ, AIS_ENDPOINT=url)
    cli(env, "playground", "start", "--dir", pg, "--port", str(base), "--proxies", "1", "--targets", "2",
        *(["--auth"] if auth else []))
    hdr = {}
    if auth:
        env["AIS_AUTHN_TOKEN_FILE"] = os.path.join(pg, "admin.token")
        hdr = {"Authorization": "Bearer " + json.load(open(env["AIS_AUTHN_TOKEN_FILE"]))["token"]}
    requests.put(url + "/v1/cluster", json={"action": "set-config", "value": {"log": {"level": 1}}},
                 headers=hdr).raise_for_status()
    return url, env, pg, hdr


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--duration", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", help="these buckets only (plain is always measured: the reference)")
    ap.add_argument("--sizes", help="these sizes only (1KiB, 10MiB)")
    a = ap.parse_args()
    only = set(a.only.split(",")) | {"plain"} if a.only else None
    sets = {k: v for k, v in SETS.items() if not a.sizes or k in a.sizes.split(",")}
    if a.quick:
        a.duration, a.rounds = 2, 1
    work = tempfile.mkdtemp(prefix="shale-s3feat-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    exe = build_loadgen(work)
    keyf = os.path.join(work, "sse.key")
    with open(keyf, "w") as f:
        f.write(os.urandom(32).hex() + "\n")
    os.chmod(keyf, 0o600)
    clusters = []
    res = {}
    try:
        u1, e1, p1, _ = start(work, "plain", False)
        clusters.append((e1, p1))
        u2, e2, p2, h2 = start(work, "auth", True)
        clusters.append((e2, p2))
        cli(e1, "config", "cluster", "s3.sse_key_file=" + keyf)
        s = requests.Session()
        for b in ("fplain", "fver", "fsse"):
            s.put("%s/s3/%s" % (u1, b)).raise_for_status()
        s.put("%s/s3/fver?versioning" % u1, data=b'<VersioningConfiguration xmlns="http://s3.amazonaws.com/doc/'
              b'2006-03-01/"><Status>Enabled</Status></VersioningConfiguration>').raise_for_status()
        s.put("%s/s3/fsse?encryption" % u1, data=b'<ServerSideEncryptionConfiguration><Rule>'
              b'<ApplyServerSideEncryptionByDefault><SSEAlgorithm>AES256</SSEAlgorithm>'
              b'</ApplyServerSideEncryptionByDefault></Rule></ServerSideEncryptionConfiguration>').raise_for_status()
        for b, n in (("fpol1", 1), ("fpol20", 20)):
            s.put("%s/s3/%s" % (u2, b), headers=h2).raise_for_status()
            r = s.put("%s/s3/%s?policy" % (u2, b), data=policy(b, n), headers=h2)
            assert r.status_code in (200, 204), r.text
        buckets = {"plain": (u1, "fplain"), "versioning": (u1, "fver"), "sse-s3": (u1, "fsse"),
                   "policy-1": (u2, "fpol1"), "policy-20": (u2, "fpol20")}
        if only:
            buckets = {k: v for k, v in buckets.items() if k in only or (k == "policy-1" and "policy-20" in only)}
        # the objects to GET, put once (anonymously on the auth cluster: the policy allows it)
        for label, (size, n, _) in sets.items():
            data = os.urandom(size)
            for name, (u, b) in buckets.items():
                with ThreadPoolExecutor(8) as ex:
                    list(ex.map(lambda i: requests.put("%s/s3/%s/g%s-%d" % (u, b, label, i), data=data,
                                                       timeout=120).raise_for_status(), range(n)))
            # GET rounds, the order of the buckets turned each round
            for rd in range(a.rounds):
                order = list(buckets) if rd % 2 == 0 else list(buckets)[::-1]
                for name in order:
                    u, b = buckets[name]
                    r = load(exe, ["%s/s3/%s/g%s-%d" % (u, b, label, i) for i in range(n)], work, SETS[label][2],
                             a.duration, False)
                    assert not r["errors"], (name, r)
                    v = r["rps"] if label == "1KiB" else r["bytes"] / r["seconds"] / 1e6
                    res.setdefault(("GET", label, name), []).append(v)
                    print("  GET %-5s %-10s round %d: %9.1f %s (load %.1f)" % (
                        label, name, rd + 1, v, "req/s" if label == "1KiB" else "MB/s", os.getloadavg()[0]),
                        flush=True)
                for name in order:
                    u, b = buckets[name]
                    ops, mbs = put_rate(u, b, "p%s-%d" % (label, rd), data, n, a.duration)
                    v = ops if label == "1KiB" else mbs
                    res.setdefault(("PUT", label, name), []).append(v)
                    print("  PUT %-5s %-10s round %d: %9.1f %s (load %.1f)" % (
                        label, name, rd + 1, v, "req/s" if label == "1KiB" else "MB/s", os.getloadavg()[0]),
                        flush=True)
        # a check that versioning was on: three PUTs of one key keep three versions
        for _ in range(3):
            s.put("%s/s3/fver/vcheck" % u1, data=b"v").raise_for_status()
        res["versions_seen"] = s.get("%s/s3/fver?versions&prefix=vcheck" % u1).text.count("<Version>")
    finally:
        for e, pg in clusters:
            cli(e, "playground", "stop", "--dir", pg)
        shutil.rmtree(work, ignore_errors=True)
    print("\nmedian of %d rounds; ratio = feature / reference (plain; policy-20 also / policy-1)" % a.rounds)
    print("%-4s %-6s %-11s %10s %8s" % ("op", "size", "bucket", "median", "ratio"))
    for op in ("GET", "PUT"):
        for label in sets:
            ref = statistics.median(res[(op, label, "plain")])
            for name in [x for x in ("plain", "versioning", "sse-s3", "policy-1", "policy-20") if (op, label, x) in res]:
                m = statistics.median(res[(op, label, name)])
                extra = ""
                if name == "policy-20":
                    extra = "  (/ policy-1: %.2f)" % (m / statistics.median(res[(op, label, "policy-1")]))
                print("%-4s %-6s %-11s %10.1f %8.2f%s" % (op, label, name, m, m / ref, extra))
    print("versions kept of one key PUT 3 times into the versioned bucket: %d" % res["versions_seen"])


if __name__ == "__main__":
    main()
