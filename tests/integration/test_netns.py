# SPDX-License-Identifier: MIT
"""A cluster whose nodes live in separate network namespaces (veth pairs on a
bridge, 10.x addresses), so nothing can lean on 127.0.0.1: each node must
advertise an address the others and the client can reach. Needs root and
iproute2; skipped otherwise."""
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import unittest

import requests

from harness import SHALED, main, wait_until, check_sanitizer_reports


def sh(*cmd, check=True):
    return subprocess.run(list(cmd), capture_output=True, text=True, check=check)


def have_netns():
    if os.geteuid() != 0 or not shutil.which("ip"):
        return False
    name = "slprobe%d" % os.getpid()
    if sh("ip", "netns", "add", name, check=False).returncode != 0:
        return False
    sh("ip", "netns", "del", name, check=False)
    return True


def lab_up(br, subnet, names, host_if):
    """A bridge br at subnet.1/24 and one namespace per name, joined to it by a veth pair (host_if + index
    on the host's side, eth0 inside) with the address subnet.(10 + index)."""
    sh("ip", "link", "add", br, "type", "bridge")
    sh("ip", "addr", "add", subnet + ".1/24", "dev", br)
    sh("ip", "link", "set", br, "up")
    for i, ns in enumerate(names):
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", "%s%d" % (host_if, i), "type", "veth", "peer", "name", "eth0", "netns", ns)
        sh("ip", "link", "set", "%s%d" % (host_if, i), "master", br)
        sh("ip", "link", "set", "%s%d" % (host_if, i), "up")
        sh("ip", "netns", "exec", ns, "ip", "addr", "add", "%s.%d/24" % (subnet, 10 + i), "dev", "eth0")
        sh("ip", "netns", "exec", ns, "ip", "link", "set", "eth0", "up")
        sh("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up")


def start_in_ns(ns, d, cfg, role, secret_from=None):
    """shaled in namespace ns with config cfg (a target gets d/mp1), its output in d/stdout.log (appended);
    the cluster secret copied from the node directory secret_from (the first node makes it)."""
    if role == "target":
        cfg["fspaths"] = [d + "/mp1"]
    with open(d + "/shale.json", "w") as f:
        json.dump(cfg, f)
    if secret_from:
        shutil.copy2(os.path.join(secret_from, "cluster.secret"), d + "/cluster.secret")
    out = open(d + "/stdout.log", "ab")
    p = subprocess.Popen(["ip", "netns", "exec", ns, SHALED, "--config", d + "/shale.json", "--role", role],
                         stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    out.close()
    return p


def lab_down(br, names, host_if):
    """What lab_up made, removed (whatever of it exists)."""
    for i, ns in enumerate(names):
        sh("ip", "netns", "del", ns, check=False)
        sh("ip", "link", "del", "%s%d" % (host_if, i), check=False)
    sh("ip", "link", "del", br, check=False)


@unittest.skipUnless(have_netns(), "needs root and ip netns")
class TestNetns(unittest.TestCase):
    N = 4  # 1 proxy + 3 targets, each in its own namespace

    def setUp(self):
        self.tag = "%x" % (os.getpid() & 0xfff)
        self.subnet = "10.%d.%d" % (100 + (os.getpid() % 100), (os.getpid() >> 8) % 250 + 1)
        self.br = "slbr" + self.tag
        self.ns = ["sln%s_%d" % (self.tag, i) for i in range(self.N)]
        self.procs = []
        self.tmp = tempfile.mkdtemp(prefix="shale-netns-")
        lab_up(self.br, self.subnet, self.ns, "slv" + self.tag)

    def tearDown(self):
        for p in self.procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(20)
                except subprocess.TimeoutExpired:
                    p.kill()
        lab_down(self.br, self.ns, "slv" + self.tag)
        for i in range(self.N):
            check_sanitizer_reports(os.path.join(self.tmp, "n%d" % i, "stdout.log"))
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self, i, role, primary):
        d = os.path.join(self.tmp, "n%d" % i)
        os.makedirs(d)
        cfg = {"confdir": d + "/conf", "log_dir": d + "/log", "host_net": {"port": 8080},
               "proxy": {"primary_url": primary},
               "keepalivetracker": {"target": {"interval": "2s"}}}
        # no --bind and no hostname: the node must find and advertise its own address
        p = start_in_ns(self.ns[i], d, cfg, role, os.path.join(self.tmp, "n0") if i > 0 else None)
        self.procs.append(p)
        return p

    def test_cluster_across_namespaces(self):
        purl = "http://%s.10:8080" % self.subnet
        self.start(0, "proxy", purl)
        wait_until(lambda: requests.get(purl + "/v1/health", timeout=1).status_code == 200, 30, what="proxy")
        for i in range(1, self.N):
            self.start(i, "target", purl)
        wait_until(lambda: len(requests.get(purl + "/v1/daemon?what=smap", timeout=2).json()["tmap"]) == self.N - 1,
                   30, what="targets joined")
        smap = requests.get(purl + "/v1/daemon?what=smap").json()
        addrs = set()
        for m in ("pmap", "tmap"):
            for sn in smap[m].values():
                url = sn["public_net"]["direct_url"]
                self.assertTrue(url.startswith("http://%s." % self.subnet), url)  # not 127.0.0.1
                addrs.add(url)
        self.assertEqual(len(addrs), self.N)  # every node advertises its own address
        s = requests.Session()
        self.assertEqual(s.post(purl + "/v1/buckets/nb", json={"action": "create-bck"}).status_code, 200)
        seen = set()
        for i in range(60):
            r = s.put(purl + "/v1/objects/nb/o%02d" % i, data=b"x%d" % i)
            self.assertEqual(r.status_code, 200, r.text)
            r = s.get(purl + "/v1/objects/nb/o%02d" % i, allow_redirects=False)
            self.assertEqual(r.status_code, 301)
            seen.add(r.headers["Location"].split("/v1/")[0])
            self.assertEqual(s.get(purl + "/v1/objects/nb/o%02d" % i).content, b"x%d" % i)  # reachable
        self.assertEqual(len(seen), self.N - 1)  # redirects went to every target's own address
        names = [e["name"] for e in s.get(purl + "/v1/buckets/nb").json()["entries"]]
        self.assertEqual(names, ["o%02d" % i for i in range(60)])


if __name__ == "__main__":
    main()
