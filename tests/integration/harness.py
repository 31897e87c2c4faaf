# SPDX-License-Identifier: MIT
"""Test harness: start real Shale nodes / clusters on loopback in temp dirs.

Everything started here is stopped by PID (never by name), every wait is
bounded in time, and every node gets its own temporary directory.
"""
import hashlib
import hmac
import io
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import unittest
import zipfile

import requests

# Response.text on a body without a charset asks chardet to guess the encoding: seconds for a 200 KB random
# binary body, and every `assertEqual(r.status_code, 200, r.text)` builds its message first. The server's
# texts are UTF-8 (JSON, XML, error lines): decode as that, at once (invalid bytes replaced).
requests.models.Response.apparent_encoding = property(lambda self: "utf-8")

BUILD = os.environ.get("SHALE_BUILD") or os.path.join(os.path.dirname(__file__), "..", "..", "build")
SRC = os.environ.get("SHALE_SRC") or os.path.join(os.path.dirname(__file__), "..", "..")
BIN = os.path.join(BUILD, "bin")
SHALED = os.path.join(BIN, "shaled")
SHALE = os.path.join(BIN, "shale")
PLUGDIR = os.path.join(BUILD, "lib", "shale")


def free_port():
    return free_port_range(1)


def free_port_range(n, tries=200):
    """n consecutive free ports on 127.0.0.1, below the kernel's ephemeral range: a port in that range can be
    taken by any outgoing connection between this check and the node's bind (or a target added later)"""
    import random
    lo, hi = 15000, 32000
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            eph = int(f.read().split()[0])
        if eph - 1000 > lo:
            hi = eph - 1
    except (OSError, ValueError, IndexError):
        pass
    lane = os.environ.get("SHALE_TEST_PORT_SLICE")  # "k/N" from tests/run.sh: files running side by side
    if lane:
        k, n_lanes = (int(x) for x in lane.split("/"))
        width = (hi - lo) // n_lanes
        lo, hi = lo + k * width, lo + (k + 1) * width
    for _ in range(tries):
        base = random.randint(lo, hi - n)
        socks = []
        ok = True
        for p in range(base, base + n):
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", p))
                socks.append(s)
            except OSError:
                ok = False
                break
        for s in socks:
            s.close()
        if ok:
            return base
    raise RuntimeError("no free port range")


def stop_proc(proc, sig=signal.SIGTERM, timeout=20):
    """Send proc sig and wait up to timeout seconds for it to exit; past that, SIGKILL it."""
    proc.send_signal(sig)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def remove_tmp(tmp):
    """Remove a test's temporary directory, unless SHALE_KEEP_TMP is set (then say where it is)."""
    if os.environ.get("SHALE_KEEP_TMP"):
        print("kept", tmp)
    else:
        shutil.rmtree(tmp, ignore_errors=True)


def make_tar(members, gz=False, mtime=0):
    """A tar (gzip'd with gz) of (name, data) members, written by tarfile."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz" if gz else "w") as t:
        for name, data in members:
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            ti.mtime = mtime
            t.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def make_zip(members):
    """A deflated zip of (name, data) members."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in members:
            z.writestr(name, data)
    return buf.getvalue()


def wait_until(fn, timeout=30, interval=0.05, what="condition"):
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        try:
            v = fn()
            if v:
                return v
        except Exception as e:  # noqa: BLE001
            last = e
        time.sleep(interval)
    raise AssertionError("timed out after %ss waiting for %s (last error: %s)" % (timeout, what, last))


class Node:
    """One shaled process (standalone by default)."""

    def __init__(self, tmp, name="n0", role="standalone", port=None, mountpaths=1, extra_config=None,
                 primary=None, fspaths=None, secret_from=None):
        self.tmp = tmp
        self.secret_from = secret_from
        self.name = name
        self.role = role
        self.port = port or free_port()
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir, exist_ok=True)
        self.url = "http://127.0.0.1:%d" % self.port
        self.proc = None
        cfg = {
            "confdir": os.path.join(self.dir, "conf"),
            "log_dir": os.path.join(self.dir, "log"),
            "host_net": {"hostname": "127.0.0.1", "port": self.port},
        }
        if role != "proxy":
            fps = fspaths or [os.path.join(self.dir, "mp%d" % i) for i in range(1, mountpaths + 1)]
            cfg["fspaths"] = {p: "" for p in fps}
        if primary:
            cfg["proxy"] = {"primary_url": primary}
        if extra_config:
            deep_update(cfg, extra_config)
        self.config = cfg
        self.config_path = os.path.join(self.dir, "shale.json")
        self.write_config()

    def write_config(self):
        with open(self.config_path, "w") as f:
            json.dump(self.config, f, indent=2)

    @property
    def secret_path(self):
        return os.path.join(self.dir, "cluster.secret")

    def give_secret(self, other):
        """Copy other's cluster secret here (what an operator does with scp)."""
        with open(other.secret_path) as f:
            sec = f.read()
        if os.path.exists(self.secret_path):
            os.unlink(self.secret_path)
        fd = os.open(self.secret_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(sec)

    def start(self, wait=True, args=(), env=None):
        self.start_env = env  # restart() starts it with the same
        if self.secret_from is not None and not os.path.exists(self.secret_path):
            self.give_secret(self.secret_from)
        out = open(os.path.join(self.dir, "stdout.log"), "ab")
        cmd = [SHALED, "--config", self.config_path, "--role", self.role, "--bind", "127.0.0.1"] + list(args)
        e = dict(os.environ)
        e.pop("SHALE_FAULT", None)
        if env:
            e.update(env)
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=e)
        out.close()
        if wait:
            self.wait_ready()
        return self

    def wait_ready(self, timeout=30):
        def ok():
            if self.proc.poll() is not None:
                raise AssertionError("node %s exited with %s:\n%s" % (self.name, self.proc.returncode, self.log_tail()))
            return requests.get(self.url + "/v1/health", timeout=2).status_code == 200
        wait_until(ok, timeout, what="node %s health" % self.name)

    def stop(self, timeout=20):
        if self.proc and self.proc.poll() is None:
            stop_proc(self.proc, timeout=timeout)
        rc = self.proc.returncode if self.proc else None
        self.proc = None
        check_sanitizer_reports(os.path.join(self.dir, "stdout.log"))
        return rc

    def kill9(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)
        self.proc = None

    def restart(self):
        self.stop()
        return self.start(env=getattr(self, "start_env", None))

    def log(self):
        p = os.path.join(self.dir, "log", "shaled.log")
        try:
            with open(p, errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def log_tail(self, n=40):
        lines = self.log().splitlines()[-n:]
        try:
            with open(os.path.join(self.dir, "stdout.log"), errors="replace") as f:
                lines += f.read().splitlines()[-n:]
        except OSError:
            pass
        return "\n".join(lines)

    def rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0


_asan = None


def asan_build():
    """Whether shaled was built with --enable-asan."""
    global _asan
    if _asan is None:
        try:
            with open(SHALED, "rb") as f:
                _asan = b"__asan_init" in f.read()
        except OSError:
            _asan = False
    return _asan


def heap_env():
    """The environment for a node whose heap a test measures: under ASan, freed memory waits in a quarantine
    (256 MiB) instead of being reused, which a heap bound would take for growth; turn it off there."""
    if not asan_build():
        return None
    opts = os.environ.get("ASAN_OPTIONS", "")
    return {"ASAN_OPTIONS": (opts + ":" if opts else "") + "quarantine_size_mb=0:thread_local_quarantine_size_kb=0"}


SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer", "runtime error:",
                     "WARNING: ThreadSanitizer")


def check_sanitizer_reports(path):
    """Fail the test if a node's stderr holds a sanitizer report (ASan builds)."""
    try:
        with open(path, errors="replace") as f:
            text = f.read()
    except OSError:
        return
    for m in SANITIZER_MARKERS:
        i = text.find(m)
        if i >= 0:
            raise AssertionError("sanitizer report in %s:\n%s" % (path, text[max(0, i - 200):i + 3000]))


def cluster_sig(secret_path, method, url, node_id="test", ttl=60, exp=None, nonce=None, body=None, dest=None):
    """The Ais-Cluster-Auth header (and Ais-Cluster-Body for a body) a node of the cluster whose secret is at
    secret_path puts on method url (server/node/sec.c): what tests use to call intra-cluster endpoints, and to
    forge bad ones. dest: who it is for (a node id, or by default "@host:port" of url)."""
    with open(secret_path) as f:
        secret = bytes.fromhex(f.read().strip())
    target = url[url.index("/", url.index("://") + 3):] if "://" in url else url
    exp = int(time.time()) + ttl if exp is None else exp
    nonce = nonce or os.urandom(8).hex()
    bh = hashlib.sha256(body).hexdigest() if body is not None else ""
    if dest is None:
        dest = "@" + url.split("://", 1)[1].split("/", 1)[0] if "://" in url else "@"
    msg = "h\n%s\n%s\n%s\n%d\n%s\n%s\n%s" % (method, target, node_id, exp, nonce, bh, dest)
    sig = hmac.new(secret, msg.encode(), hashlib.sha256).hexdigest()[:32]
    h = {"Ais-Cluster-Auth": "%s %d %s %s %s" % (node_id, exp, nonce, sig, dest)}
    if bh:
        h["Ais-Cluster-Body"] = bh
    return h


M64 = (1 << 64) - 1


def hrw_mix(x):
    """sl_hrw_mix (node/meta.c): the mixing step of HRW placement (spec §13)"""
    z = (x + 0x9e3779b97f4a7c15) & M64
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    z = ((z ^ (z >> 31)) + 0x9e3779b97f4a7c15) & M64
    z = ((z ^ (z >> 30)) * 0xbf58476d1ce4e5b9) & M64
    z = ((z ^ (z >> 27)) * 0x94d049bb133111eb) & M64
    z = ((z ^ (z >> 31)) * 5) & M64
    z = ((z << 7) | (z >> 57)) & M64
    return (z * 9) & M64


def deep_update(d, u):
    for k, v in u.items():
        if isinstance(v, dict) and isinstance(d.get(k), dict):
            deep_update(d[k], v)
        else:
            d[k] = v


class Cluster:
    """A playground cluster started with the CLI (proxies then targets on consecutive ports)."""

    def __init__(self, tmp, proxies=1, targets=3, mountpaths=1, name="pg", env=None):
        self.env = env or {}  # more environment for the nodes (and the CLI)
        self.dir = os.path.join(tmp, name)
        self.nports = proxies + targets + 8
        self.base = free_port_range(self.nports)
        self.proxies, self.targets, self.mountpaths = proxies, targets, mountpaths
        self.url = "http://127.0.0.1:%d" % self.base

    def cli(self, *args, check=True, timeout=120, input=None):
        env = dict(os.environ, AIS_ENDPOINT=self.url, **self.env)
        p = subprocess.run([SHALE] + list(args), capture_output=True, text=True, env=env, timeout=timeout, input=input)
        if check and p.returncode != 0:
            raise AssertionError("shale %s failed (%d):\n%s%s" % (" ".join(args), p.returncode, p.stdout, p.stderr))
        return p

    def start(self, *extra):
        """extra: more `playground start` flags (--auth)"""
        self.cli("playground", "start", "--dir", self.dir, "--port", str(self.base), "--proxies",
                 str(self.proxies), "--targets", str(self.targets), "--mountpaths", str(self.mountpaths), *extra)
        if "--auth" in extra:  # the CLI and smap() use the admin's token
            self.env.setdefault("AIS_AUTHN_TOKEN_FILE", os.path.join(self.dir, "admin.token"))
        if "--https" in extra:  # ... and trust the playground's CA
            self.ca = os.path.join(self.dir, "tls", "ca.crt")
            self.url = self.url.replace("http://", "https://")
            self.env.setdefault("AIS_CLIENT_CA", self.ca)
        return self

    ca = True  # what requests verifies the nodes' certificates with

    def admin_headers(self):
        p = os.path.join(self.dir, "admin.token")
        if not os.path.exists(p):
            return {}
        with open(p) as f:
            return {"Authorization": "Bearer " + json.load(f)["token"]}

    def stop(self):
        if os.path.exists(os.path.join(self.dir, "playground.json")):
            self.cli("playground", "stop", "--dir", self.dir, check=False)
            # sanitizer builds: a report in any node's output fails the test
            for n in self.topology()["nodes"]:
                check_sanitizer_reports(os.path.join(self.dir, n["name"], "log", "stdout.log"))

    def topology(self):
        with open(os.path.join(self.dir, "playground.json")) as f:
            return json.load(f)

    def pid(self, name):
        try:
            with open(os.path.join(self.dir, name, "shaled.pid")) as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            return 0

    def node_url(self, name):
        for n in self.topology()["nodes"]:
            if n["name"] == name:
                return "%s://127.0.0.1:%d" % ("https" if self.topology().get("https") else "http", n["port"])
        raise KeyError(name)

    def kill9(self, name):
        pid = self.pid(name)
        if pid:
            os.kill(pid, signal.SIGKILL)
            wait_until(lambda: not os.path.exists("/proc/%d" % pid) or _zombie(pid), 10, what="kill")

    def target_name(self, tid):
        """the playground name ("t1") of the target with daemon id tid"""
        for n in self.topology()["nodes"]:
            if n["role"] == "target":
                try:
                    if requests.get("http://127.0.0.1:%d/v1/daemon?what=snode" % n["port"], timeout=2).json()[
                            "daemon_id"] == tid:
                        return n["name"]
                except requests.RequestException:
                    pass
        raise KeyError(tid)

    def log(self, name):
        try:
            with open(os.path.join(self.dir, name, "log", "shaled.log"), errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def smap(self):
        return requests.get(self.url + "/v1/daemon?what=smap", timeout=10, headers=self.admin_headers(),
                            verify=self.ca).json()


def _zombie(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().split()[2] == "Z"
    except OSError:
        return True


def start_cluster(obj, targets=3, proxies=1, prefix="shale-test-", **kw):
    """Start a playground of proxies gateways and targets targets (kw: more Cluster arguments) in a new temporary
    directory and wait until the Smap holds every target; sets obj.tmp, obj.c, obj.url and obj.s (a session), obj
    being a test class (setUpClass) or a test (setUp). A cluster whose targets do not all join is stopped."""
    obj.tmp = tempfile.mkdtemp(prefix=prefix)
    obj.c = Cluster(obj.tmp, proxies=proxies, targets=targets, **kw).start()
    obj.url = obj.c.url
    obj.s = requests.Session()
    try:
        wait_until(lambda: len(obj.c.smap()["tmap"]) == targets, 30, what="%d targets in the Smap" % targets)
    except Exception:
        obj.c.stop()
        raise
    return obj.c


def stop_cluster(obj):
    """Stop what start_cluster started and remove its directory (see remove_tmp)."""
    obj.c.stop()
    remove_tmp(obj.tmp)


class ClusterTest(unittest.TestCase):
    """Base: one playground of 1 gateway and 3 targets per test class
    (cls.c, cls.url, cls.s, cls.tmp)."""

    @classmethod
    def setUpClass(cls):
        start_cluster(cls, targets=3)

    @classmethod
    def tearDownClass(cls):
        stop_cluster(cls)


class NodeTest(unittest.TestCase):
    """Base: one standalone node per test class."""

    mountpaths = 1
    extra_config = None

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.mkdtemp(prefix="shale-test-")
        cls.node = Node(cls.tmp, mountpaths=cls.mountpaths, extra_config=cls.extra_config).start()
        cls.url = cls.node.url
        cls.s = requests.Session()

    @classmethod
    def tearDownClass(cls):
        cls.node.stop()
        remove_tmp(cls.tmp)

    # helpers
    def act(self, method, path, action, value=None, name="", params=None, headers=None):
        h = {"Content-Type": "application/json"}
        if headers:
            h.update(headers)
        return self.s.request(method, self.url + path, params=params or {"provider": "ais"},
                              data=json.dumps({"action": action, "name": name, "value": value}), headers=h, timeout=60)

    def create_bucket(self, name, props=None):
        r = self.act("POST", "/v1/buckets/" + name, "create-bck", props)
        self.assertEqual(r.status_code, 200, r.text)

    def put(self, bucket, obj, data, headers=None, params=None):
        from urllib.parse import quote
        return self.s.put(self.url + "/v1/objects/%s/%s" % (bucket, quote(obj)), data=data, headers=headers or {},
                          params=params or {"provider": "ais"}, timeout=120)

    def get(self, bucket, obj, headers=None, params=None, stream=False):
        from urllib.parse import quote
        return self.s.get(self.url + "/v1/objects/%s/%s" % (bucket, quote(obj)), headers=headers or {},
                          params=params or {"provider": "ais"}, timeout=120, stream=stream)

    def list_objects(self, bucket, msgpack=False, **lso):
        h = {"Content-Type": "application/json"}
        if msgpack:
            h["Accept"] = "application/msgpack"
        value = {"props": "", "prefix": "", "pagesize": 0, "flags": "0", "uuid": "", "continuation_token": ""}
        value.update(lso)
        return self.s.get(self.url + "/v1/buckets/" + bucket, params={"provider": "ais"},
                          data=json.dumps({"action": "list", "name": "", "value": value}), headers=h, timeout=60)

    def list_all(self, bucket, **lso):
        names, token, uuid = [], "", ""
        for _ in range(100000):
            r = self.list_objects(bucket, continuation_token=token, uuid=uuid, **lso)
            self.assertEqual(r.status_code, 200, r.text)
            j = r.json()
            names += [e["name"] for e in (j["entries"] or [])]
            token, uuid = j["continuation_token"], j["uuid"]
            if not token:
                return names
        raise AssertionError("listing did not finish")


S3_AK, S3_SK = "shale-test-key", "shale-test-secret"  # the keys the S3 test files give their clusters


def s3_client(endpoint, ak=S3_AK, sk=S3_SK):
    """a boto3 S3 client of endpoint (".../s3"): path-style, SigV4, bounded timeouts, no retries (a test sees
    the first answer)"""
    import boto3
    from botocore.config import Config
    return boto3.session.Session(aws_access_key_id=ak, aws_secret_access_key=sk, region_name="us-east-1").client(
        "s3", endpoint_url=endpoint, config=Config(s3={"addressing_style": "path"}, connect_timeout=10,
                                                   read_timeout=60, retries={"max_attempts": 1}))


class S3Checks:
    """for test cases with a boto3 client in self.s3: make a bucket, expect S3's error"""

    def bucket(self, name):
        self.s3.create_bucket(Bucket=name)
        return name

    def client_err(self, fn, status, code):
        """fn() must fail with this HTTP status and S3 error code (code None: any): the error response"""
        from botocore.exceptions import ClientError
        with self.assertRaises(ClientError) as cm:
            fn()
        e = cm.exception.response
        self.assertEqual(e["ResponseMetadata"]["HTTPStatusCode"], status, e)
        if code:
            self.assertEqual(e["Error"]["Code"], code, e)
        return e


class _TimedResult(unittest.TextTestResult):
    """verbose result that prints each case's wall time: the log shows where a file's minutes go"""

    def startTest(self, test):
        self._t0 = time.monotonic()
        super().startTest(test)

    def _took(self):
        return " (%.1fs)" % (time.monotonic() - getattr(self, "_t0", time.monotonic()))

    def addSuccess(self, test):
        if self.showAll:
            self.stream.write("ok" + self._took() + "\n")
            self.stream.flush()
            unittest.TestResult.addSuccess(self, test)
        else:
            super().addSuccess(test)


def main():
    """unittest main with verbose output and a non-zero exit on failure."""
    import warnings
    warnings.simplefilter("ignore", ResourceWarning)
    runner = unittest.TextTestRunner(verbosity=2, buffer=False, warnings="ignore",
                                     resultclass=_TimedResult)
    unittest.main(verbosity=2, buffer=False, warnings="ignore", testRunner=runner)
