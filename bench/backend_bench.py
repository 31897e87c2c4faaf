#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Remote-backed buckets (backend_bck over the s3 backend plugin), same machine, same run:

  * cold GET of one big object through the caching cluster (the object is evicted before each round, so the
    cluster fetches it from the remote, stores it and serves it) vs curl of the same object straight from the
    remote's S3 endpoint: once as one stream (backend.blob_workers=1) and once in parallel ranges
    (backend.blob_workers=--workers, backend.blob_chunk 8 MiB);
  * warm GET of the cached object vs the native GET of an object of the same size in a plain ais:// bucket of
    the same cluster;
  * a native PUT of the same bytes: what storing the cold object costs the target's disk.

The remote is a second Shale cluster (1 proxy + 1 target) answering S3 on /s3 (verification off, so curl can GET
unsigned; the plugin signs anyway);
the caching cluster is 1 proxy + 2 targets. Rounds alternate the two sides of each figure.

  * prefetch-listrange of N objects of 100 KiB (a prefix: the targets list the remote and fetch their
    shares) vs `aws s3 sync` of the same prefix from the remote's /s3 to a local directory, objects/s.

  * with --slow-mbps R: the same two cold GETs against a remote that limits every connection to R MB/s
    (bench/slow_remote.py, as object stores limit one stream), vs curl of it: what parallel ranges give when
    the remote serves ranges concurrently.

usage: backend_bench.py [--mib N] [--rounds N] [--objects N (0: no prefetch figure)] [--workers N]
                        [--slow-mbps R] [--quick]
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import requests

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from cluster_bench import cli, free_port, put_many, start_playground  # noqa: E402

AK, SK = "bench", "bench-secret-value"


def curl_get(url, headers=()):
    """seconds to GET url to /dev/null with curl (following redirects)"""
    args = ["curl", "-sfL", "-o", "/dev/null"]
    for h in headers:
        args += ["-H", h]
    t0 = time.time()
    subprocess.run(args + [url], check=True, timeout=3600)
    return time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mib", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--objects", type=int, default=10000)
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--slow-mbps", type=float, default=0)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    if a.quick:
        a.mib, a.rounds, a.objects = 128, 1, 1000
    work = tempfile.mkdtemp(prefix="shale-backendbench-", dir=os.environ.get("BENCH_DIR", "/var/tmp"))
    creds = os.path.join(work, "credentials")
    with open(creds, "w") as f:
        f.write("[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n" % (AK, SK))
    rurl, renv, rpg = start_playground(work, "remote", 1, 1)
    lurl, lenv, lpg = start_playground(work, "local", 1, 2, extra_env={
        "AWS_SHARED_CREDENTIALS_FILE": creds, "AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": "",
        "AWS_PROFILE": "", "S3_ENDPOINT": ""})
    res, pre, same, slowres = [], [], False, []
    try:
        big = os.path.join(work, "big.bin")
        with open(big, "wb") as f:
            for _ in range(a.mib):
                f.write(os.urandom(1 << 20))
        # the remote: bucket origin with the object, written natively (same bytes the S3 side serves)
        cli(renv, "bucket", "create", "ais://origin")
        subprocess.run(["curl", "-sfL", "-T", big, "-o", "/dev/null", rurl + "/v1/objects/origin/big.bin"],
                       check=True, timeout=3600)
        cli(renv, "s3", "key", "add", AK, "--secret", SK)
        # the caching cluster: ais://cache in front of s3://origin, and a plain bucket with the same bytes
        cli(lenv, "bucket", "create", "ais://cache", "--props",
            "backend_bck=s3://origin extra.aws.endpoint=%s/s3" % rurl)
        cli(lenv, "bucket", "create", "ais://plain")
        subprocess.run(["curl", "-sfL", "-T", big, "-o", "/dev/null", lurl + "/v1/objects/plain/big.bin"],
                       check=True, timeout=3600)
        def cold(bucket, workers):
            """seconds of a cold GET of bucket/big.bin with backend.blob_workers=workers (evicted first)"""
            url = lurl + "/v1/objects/%s/big.bin" % bucket
            cli(lenv, "config", "cluster", "backend.blob_workers=%d" % workers)
            subprocess.run(["curl", "-sfL", "-X", "DELETE", "-H", "Content-Type: application/json", "-d",
                            '{"action":"evict-listrange"}', "-o", "/dev/null", url], check=True, timeout=60)
            t = curl_get(url)
            # the client had every byte before the copy here was committed: wait for it
            for _ in range(600):
                h = requests.head(url, allow_redirects=True)
                if h.headers.get("Ais-Present") == "true":
                    break
                time.sleep(0.1)
            return t

        def cold_pair(bucket, rd):
            """(one stream, ranges), alternating which goes first"""
            if rd % 2:
                t_ranges = cold(bucket, a.workers)
                return cold(bucket, 1), t_ranges
            return cold(bucket, 1), cold(bucket, a.workers)

        for rd in range(a.rounds):
            t_remote = curl_get(rurl + "/s3/origin/big.bin")  # verification off: an unsigned GET
            t_cold, t_ranges = cold_pair("cache", rd)
            t_warm = curl_get(lurl + "/v1/objects/cache/big.bin")
            t_native = curl_get(lurl + "/v1/objects/plain/big.bin")
            t0 = time.time()  # the local disk's part: a native PUT of the same bytes (what a cold GET also writes)
            subprocess.run(["curl", "-sfL", "-T", big, "-o", "/dev/null", lurl + "/v1/objects/plain/put.bin"],
                           check=True, timeout=3600)
            t_put = time.time() - t0
            res.append((t_remote, t_cold, t_ranges, t_warm, t_native, t_put))
        back = subprocess.run(["curl", "-sfL", lurl + "/v1/objects/cache/big.bin"], capture_output=True,
                              check=True, timeout=3600).stdout
        same = back == open(big, "rb").read()
        if a.slow_mbps:  # a remote that limits every connection
            sdir = os.path.join(work, "slow")
            os.makedirs(os.path.join(sdir, "slowb"))
            os.link(big, os.path.join(sdir, "slowb", "big.bin"))
            port = free_port()
            slow = subprocess.Popen([sys.executable, os.path.join(HERE, "slow_remote.py"), sdir, str(port),
                                     str(a.slow_mbps)])
            try:
                surl = "http://127.0.0.1:%d" % port
                for _ in range(100):
                    if subprocess.run(["curl", "-sfI", "-o", "/dev/null", surl + "/slowb"]).returncode == 0:
                        break
                    time.sleep(0.1)
                cli(lenv, "bucket", "create", "ais://slowc", "--props",
                    "backend_bck=s3://slowb extra.aws.endpoint=%s" % surl)
                for rd in range(a.rounds):
                    t_remote = curl_get(surl + "/slowb/big.bin")
                    t_cold, t_ranges = cold_pair("slowc", rd)
                    slowres.append((t_remote, t_cold, t_ranges))
            finally:
                slow.kill()
                slow.wait()
        # prefetch vs aws s3 sync: N x 100 KiB under pf/
        names = ["pf/%06d" % i for i in range(a.objects)]
        if names:
            put_many(rurl, "origin", names, os.urandom(100 * 1024), workers=16)
        aenv = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
        aenv.update(AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_DEFAULT_REGION="us-east-1",
                    AWS_CONFIG_FILE="/dev/null", AWS_SHARED_CREDENTIALS_FILE="/dev/null")
        pre = []
        for rd in range(a.rounds if a.objects else 0):
            subprocess.run(["curl", "-sfL", "-X", "DELETE", "-H", "Content-Type: application/json", "-d",
                            '{"action":"evict-listrange","value":{"template":"pf/"}}', "-o", "/dev/null",
                            lurl + "/v1/buckets/cache"], check=True, timeout=600)
            time.sleep(2)
            t0 = time.time()
            jid = requests.post(lurl + "/v1/buckets/cache", json={"action": "prefetch-listrange",
                                                                   "value": {"template": "pf/"}}).text
            for _ in range(36000):
                st = requests.get(lurl + "/v1/cluster", params={"what": "status"}, json={"ID": jid}).json()
                if st["end_time"]:
                    break
                time.sleep(0.05)
            t_pf = time.time() - t0
            dst = os.path.join(work, "sync%d" % rd)
            t0 = time.time()
            subprocess.run(["/usr/bin/aws", "--endpoint-url", rurl + "/s3", "s3", "sync", "s3://origin/pf/", dst,
                            "--only-show-errors"], check=True, env=aenv, timeout=3600)
            t_sync = time.time() - t0
            shutil.rmtree(dst, ignore_errors=True)
            pre.append((t_pf, t_sync, st.get("err", "")))
    finally:
        cli(lenv, "playground", "stop", "--dir", lpg)
        cli(renv, "playground", "stop", "--dir", rpg)
        shutil.rmtree(work, ignore_errors=True)
    mb = a.mib * 1.048576
    print("%d MiB object; MB/s per round" % a.mib)
    for t_remote, t_cold, t_ranges, t_warm, t_native, t_put in res:
        print("  curl from the remote %7.1f   cold GET one stream %7.1f (%.2fx)   in ranges x%d %7.1f (%.2fx)   "
              "native PUT %7.1f   warm GET %7.1f   native GET %7.1f (%.2fx)"
              % (mb / t_remote, mb / t_cold, t_remote / t_cold, a.workers, mb / t_ranges, t_remote / t_ranges,
                 mb / t_put, mb / t_warm, mb / t_native, t_native / t_warm))
    print("  cached copy identical: %s" % same)
    if slowres:
        print("%d MiB object from a remote limited to %.0f MB/s per connection; MB/s per round" % (a.mib, a.slow_mbps))
        for t_remote, t_cold, t_ranges in slowres:
            print("  curl from the remote %7.1f   cold GET one stream %7.1f (%.2fx)   in ranges x%d %7.1f (%.2fx)"
                  % (mb / t_remote, mb / t_cold, t_remote / t_cold, a.workers, mb / t_ranges, t_remote / t_ranges))
    print("prefetch of %d x 100 KiB; objects/s per round" % a.objects)
    for t_pf, t_sync, err in pre:
        print("  prefetch-listrange %8.0f   aws s3 sync %8.0f (%.2fx)%s" % (a.objects / t_pf, a.objects / t_sync,
                                                                        t_sync / t_pf, "  job error: " + err if err else ""))


if __name__ == "__main__":
    main()
