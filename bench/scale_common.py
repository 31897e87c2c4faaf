# SPDX-License-Identifier: MIT
"""What the three scale benchmarks (scale_bench, scale_cluster_bench, scale_shards_bench) share: waiting for a
job, the load average printed beside each row, and matplotlib (Agg) when Debian's python3-matplotlib is there."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "integration"))
from harness import wait_until  # noqa: E402


def job_wait(s, url, jid, timeout=3600, interval=0.05):
    """wait for the job jid to end (GET /v1/cluster?what=status); its status, or SystemExit if it failed"""
    def done():
        st = s.get(url + "/v1/cluster", params={"what": "status"}, json={"ID": jid}, timeout=60)
        return st.status_code == 200 and st.json().get("end_time") and st.json()
    st = wait_until(done, timeout, interval=interval, what="job %s" % jid)
    if st.get("err") or st.get("aborted"):
        raise SystemExit("job %s: %s" % (jid, st))
    return st


def loadavg(n=3):
    """the first n load averages, as /proc/loadavg prints them"""
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:n])


def pyplot():
    """matplotlib.pyplot drawing to files, or None (and a line saying so) without python3-matplotlib"""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no plot: python3-matplotlib is not installed)")
        return None
    return plt
