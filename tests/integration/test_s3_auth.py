# SPDX-License-Identifier: MIT
"""S3 with signature verification on (`shale s3 verify on`), on a cluster of 1 gateway and 2 targets: keys
made and listed with the CLI (secrets never listed), boto3 and awscli signing with SigV4 (header form and
presigned URLs fetched with curl), aws-chunked bodies with per-chunk signatures written by hand (a tampered or
truncated chunk stores nothing), bad signatures, unknown keys, skewed clocks, expired and SigV2 presigned
URLs, body hashes that do not match, and virtual-hosted requests (s3.vhost_domain) signed over their Host."""
import base64
import datetime
import hashlib
import hmac
import os
import subprocess
import unittest
import unittest.mock
import zlib

import boto3
import botocore
import requests
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from harness import main, start_cluster, stop_cluster

AK, SK = "trainer", "s3cr3t-value-for-tests"
AWS = "/usr/bin/aws"


def client(url, ak=AK, sk=SK, **cfg):
    return boto3.client("s3", endpoint_url=url + "/s3", aws_access_key_id=ak, aws_secret_access_key=sk,
                        region_name="us-east-1",
                        config=Config(s3={"addressing_style": "path"}, retries={"max_attempts": 1}, **cfg))


def code(fn):
    try:
        fn()
    except botocore.exceptions.ClientError as e:
        return e.response["Error"]["Code"]
    return "ok"


def hm(key, msg):
    return hmac.new(key, msg.encode(), hashlib.sha256).digest()


def clean_env():
    """the environment without AWS_* settings of the machine (a CA bundle, a profile)"""
    return {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}


def at(when):
    """botocore signs with this clock"""
    class Clock(datetime.datetime):
        @classmethod
        def utcnow(cls):
            return when
    return unittest.mock.patch("botocore.auth.datetime.datetime", Clock)


def signed_chunked_put(url, path, data, chunk, tamper_chunk=None, truncate=False, host=None, trailer=None):
    """PUT with x-amz-content-sha256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD, chunk signatures computed here; with
    trailer ("good", "bad-sig", "no-sig", "bad-crc") STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER with a CRC32
    trailer and its x-amz-trailer-signature"""
    now = datetime.datetime.utcnow()
    amz, day = now.strftime("%Y%m%dT%H%M%SZ"), now.strftime("%Y%m%d")
    scope = "%s/us-east-1/s3/aws4_request" % day
    chunks = [data[i:i + chunk] for i in range(0, len(data), chunk)] + [b""]
    enc_len = sum(len("%x;chunk-signature=%s\r\n" % (len(c), "0" * 64)) + len(c) + 2 for c in chunks)
    host = host or url.split("//")[1]
    mode = "STREAMING-AWS4-HMAC-SHA256-PAYLOAD" + ("-TRAILER" if trailer else "")
    headers = {"Host": host, "x-amz-date": amz, "x-amz-content-sha256": mode,
               "Content-Encoding": "aws-chunked", "x-amz-decoded-content-length": str(len(data))}
    if trailer:
        headers["x-amz-trailer"] = "x-amz-checksum-crc32"
    signed = sorted(k.lower() for k in headers)
    canon_h = "".join("%s:%s\n" % (k, headers[[h for h in headers if h.lower() == k][0]].strip()) for k in signed)
    creq = "\n".join(["PUT", path, "", canon_h, ";".join(signed), mode])
    sts = "\n".join(["AWS4-HMAC-SHA256", amz, scope, hashlib.sha256(creq.encode()).hexdigest()])
    key = hm(hm(hm(hm(("AWS4" + SK).encode(), day), "us-east-1"), "s3"), "aws4_request")
    sig = hmac.new(key, sts.encode(), hashlib.sha256).hexdigest()
    headers["Authorization"] = "AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s" % (
        AK, scope, ";".join(signed), sig)
    body, prev = b"", sig
    for i, c in enumerate(chunks):
        csts = "\n".join(["AWS4-HMAC-SHA256-PAYLOAD", amz, scope, prev, hashlib.sha256(b"").hexdigest(),
                          hashlib.sha256(c).hexdigest()])
        csig = hmac.new(key, csts.encode(), hashlib.sha256).hexdigest()
        prev = csig
        payload = c
        if tamper_chunk == i and c:
            payload = bytes([c[0] ^ 1]) + c[1:]
        body += b"%x;chunk-signature=%s\r\n" % (len(c), csig.encode()) + payload
        if c or not trailer:
            body += b"\r\n"
    if trailer:  # after the final chunk: the trailer, its signature over "name:value\n", an empty line
        crc = zlib.crc32(data if trailer != "bad-crc" else data + b"x") & 0xffffffff
        canon = "x-amz-checksum-crc32:%s\n" % base64.b64encode(crc.to_bytes(4, "big")).decode()
        tsts = "\n".join(["AWS4-HMAC-SHA256-TRAILER", amz, scope, prev, hashlib.sha256(canon.encode()).hexdigest()])
        tsig = hmac.new(key, tsts.encode(), hashlib.sha256).hexdigest()
        if trailer == "bad-sig":
            tsig = tsig[:-1] + ("0" if tsig[-1] != "0" else "1")
        body += canon.replace("\n", "\r\n").encode()
        if trailer != "no-sig":
            body += b"x-amz-trailer-signature:%s\r\n" % tsig.encode()
        body += b"\r\n"
    else:
        assert len(body) == enc_len
    if truncate:
        body = body[:len(body) // 2]
    return requests.put(url + path, data=body, headers=headers, timeout=60)


class S3AuthTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        start_cluster(cls, targets=2, prefix="shale-s3auth-")
        # verification on before any key would lock every client out: refused
        p = cls.c.cli("s3", "verify", "on", check=False)
        assert p.returncode != 0 and "no S3 access keys exist" in p.stderr, p.stderr
        cls.c.cli("s3", "key", "add", AK, "--secret", SK)
        out = cls.c.cli("s3", "key", "add", "generated").stdout
        cls.gen_secret = [ln.split(": ", 1)[1] for ln in out.splitlines() if ln.startswith("secret: ")][0]
        cls.c.cli("s3", "verify", "on")
        cls.s3 = client(cls.url)
        cls.s3.create_bucket(Bucket="auth")

    @classmethod
    def tearDownClass(cls):
        stop_cluster(cls)

    def test_keys_are_listed_without_secrets(self):
        """`shale s3 key ls` and GET /v1/s3/keys name the access keys and the mode, never a secret."""
        out = self.c.cli("s3", "key", "ls").stdout
        self.assertIn(AK, out)
        self.assertIn("generated", out)
        self.assertIn("Signature verification: on", out)
        self.assertNotIn(SK, out)
        self.assertNotIn(self.gen_secret, out)
        j = requests.get(self.url + "/v1/s3/keys", timeout=10).json()
        self.assertTrue(j["verify"])
        self.assertNotIn(SK, str(j))
        self.assertEqual(len(self.gen_secret), 40)
        for bad in ({"access_key": "x", "secret": "long-enough"}, {"access_key": "okkey", "secret": "short"},
                    {"access_key": "ok key", "secret": "long-enough"}):
            r = requests.put(self.url + "/v1/s3/keys", json=bad, timeout=10)
            self.assertEqual(r.status_code, 400, bad)
        # the generated secret signs too
        c = client(self.url, "generated", self.gen_secret)
        c.put_object(Bucket="auth", Key="gen", Body=b"g")
        self.assertEqual(c.get_object(Bucket="auth", Key="gen")["Body"].read(), b"g")

    def test_signed_requests_pass_and_bad_ones_do_not(self):
        """Good SigV4 passes through the gateway to the targets; a wrong secret, an unknown key, no signature,
        and a body whose declared SHA-256 differs are refused with S3's codes, storing nothing."""
        self.s3.put_object(Bucket="auth", Key="a.txt", Body=b"signed bytes", Metadata={"m": "v"})
        o = self.s3.get_object(Bucket="auth", Key="a.txt")
        self.assertEqual(o["Body"].read(), b"signed bytes")
        self.assertEqual(o["ETag"], '"%s"' % hashlib.md5(b"signed bytes").hexdigest())
        self.assertEqual(code(lambda: client(self.url, AK, "wrong-secret-xx").get_object(Bucket="auth", Key="a.txt")),
                         "SignatureDoesNotMatch")
        self.assertEqual(code(lambda: client(self.url, "nobody", SK).put_object(Bucket="auth", Key="x", Body=b"1")),
                         "InvalidAccessKeyId")
        self.assertEqual(code(lambda: client(self.url, AK, "wrong-secret-xx").list_objects_v2(Bucket="auth")),
                         "SignatureDoesNotMatch")
        r = requests.get(self.url + "/s3/auth/a.txt", timeout=10)
        self.assertEqual(r.status_code, 403)
        self.assertIn("<Code>AccessDenied</Code>", r.text)
        self.assertEqual(requests.put(self.url + "/s3/newbucket", timeout=10).status_code, 403)
        self.assertEqual(code(lambda: self.s3.head_bucket(Bucket="newbucket")), "404")
        # a body that is not what x-amz-content-sha256 (signed) says
        req = AWSRequest(method="PUT", url=self.url + "/s3/auth/hashed", data=b"real body",
                         headers={"x-amz-content-sha256": hashlib.sha256(b"other body").hexdigest()})
        SigV4Auth(Credentials(AK, SK), "s3", "us-east-1").add_auth(req)
        r = requests.put(req.url, data=b"real body", headers=dict(req.headers), timeout=10)
        self.assertEqual(r.status_code, 400, r.text)
        self.assertIn("XAmzContentSHA256Mismatch", r.text)
        self.assertEqual(code(lambda: self.s3.head_object(Bucket="auth", Key="hashed")), "404")

    def test_clock_skew_and_sigv2(self):
        """A request signed 20 minutes ago is RequestTimeTooSkewed; SigV2 headers and presigned URLs are refused
        with a message naming SigV4."""
        req = AWSRequest(method="GET", url=self.url + "/s3/auth", headers={"x-amz-content-sha256": "UNSIGNED-PAYLOAD"})
        with at(datetime.datetime.utcnow() - datetime.timedelta(minutes=20)):
            SigV4Auth(Credentials(AK, SK), "s3", "us-east-1").add_auth(req)
        r = requests.get(req.url, headers=dict(req.headers), timeout=10)
        self.assertEqual(r.status_code, 403, r.text)
        self.assertIn("RequestTimeTooSkewed", r.text)
        r = requests.get(self.url + "/s3/auth/a.txt", headers={"Authorization": "AWS %s:c2lnbmF0dXJl" % AK},
                         timeout=10)
        self.assertEqual(r.status_code, 400)
        self.assertIn("Signature Version 2", r.text)
        v2 = client(self.url).generate_presigned_url("get_object", Params={"Bucket": "auth", "Key": "a.txt"})
        if "AWSAccessKeyId=" in v2:  # botocore 1.29 presigns with SigV2 unless told otherwise
            r = requests.get(v2, timeout=10)
            self.assertEqual(r.status_code, 400)
            self.assertIn("Signature Version 2", r.text)

    def test_presigned_urls(self):
        """SigV4 presigned GET and PUT URLs work with curl; an expired, tampered or out-of-range one is 403."""
        self.s3.put_object(Bucket="auth", Key="p.bin", Body=b"presigned")
        v4 = client(self.url, signature_version="s3v4")
        u = v4.generate_presigned_url("get_object", Params={"Bucket": "auth", "Key": "p.bin"}, ExpiresIn=300)
        out = subprocess.run(["curl", "-sf", u], capture_output=True, timeout=30)
        self.assertEqual(out.returncode, 0)
        self.assertEqual(out.stdout, b"presigned")
        self.assertEqual(requests.get(u.replace("p.bin", "q.bin"), timeout=10).status_code, 403)
        sig = u.split("X-Amz-Signature=")[1][:64]
        bad = u.replace(sig, ("0" if sig[0] != "0" else "1") + sig[1:])
        self.assertEqual(requests.get(bad, timeout=10).status_code, 403)
        up = v4.generate_presigned_url("put_object", Params={"Bucket": "auth", "Key": "up.bin"}, ExpiresIn=300)
        self.assertEqual(requests.put(up, data=b"via presigned put", timeout=10).status_code, 200)
        self.assertEqual(self.s3.get_object(Bucket="auth", Key="up.bin")["Body"].read(), b"via presigned put")
        # expired: signed 2 hours ago for 60 s
        req = AWSRequest(method="GET", url=self.url + "/s3/auth/p.bin")
        from botocore.auth import S3SigV4QueryAuth
        signer = S3SigV4QueryAuth(Credentials(AK, SK), "s3", "us-east-1", expires=60)
        with at(datetime.datetime.utcnow() - datetime.timedelta(hours=2)):
            signer.add_auth(req)
        r = requests.get(req.url, timeout=10)
        self.assertEqual(r.status_code, 403, r.text)
        self.assertIn("AccessDenied", r.text)
        for exp in (0, 604801):
            req = AWSRequest(method="GET", url=self.url + "/s3/auth/p.bin")
            S3SigV4QueryAuth(Credentials(AK, SK), "s3", "us-east-1", expires=exp).add_auth(req)
            self.assertEqual(requests.get(req.url, timeout=10).status_code, 403, exp)

    def test_signed_aws_chunked(self):
        """STREAMING-AWS4-HMAC-SHA256-PAYLOAD: every chunk's signature is checked; the object is stored only when
        all match and the body is complete."""
        data = os.urandom(200 * 1024 + 17)
        r = signed_chunked_put(self.url, "/s3/auth/chunked.bin", data, 64 * 1024)
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.s3.get_object(Bucket="auth", Key="chunked.bin")["Body"].read(), data)
        self.assertEqual(r.headers["ETag"], '"%s"' % hashlib.md5(data).hexdigest())
        r = signed_chunked_put(self.url, "/s3/auth/tampered.bin", data, 64 * 1024, tamper_chunk=1)
        self.assertEqual(r.status_code, 403, r.text)
        self.assertIn("SignatureDoesNotMatch", r.text)
        self.assertEqual(code(lambda: self.s3.head_object(Bucket="auth", Key="tampered.bin")), "404")
        # an overwrite that fails keeps the old object
        r = signed_chunked_put(self.url, "/s3/auth/chunked.bin", os.urandom(1000), 512, tamper_chunk=0)
        self.assertEqual(r.status_code, 403)
        self.assertEqual(self.s3.get_object(Bucket="auth", Key="chunked.bin")["Body"].read(), data)
        try:
            r = signed_chunked_put(self.url, "/s3/auth/cut.bin", data, 64 * 1024, truncate=True)
            self.assertEqual(r.status_code, 400, r.text)
        except requests.exceptions.ConnectionError:
            pass  # the node may close the connection on a body that ends early; either way nothing is stored
        self.assertEqual(code(lambda: self.s3.head_object(Bucket="auth", Key="cut.bin")), "404")

    def test_signed_trailer(self):
        """STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER (what recent awscli sends): the chunks and the trailer
        signature are checked; a wrong or missing trailer signature, or a trailer checksum that does not match,
        stores nothing."""
        data = os.urandom(150 * 1024 + 3)
        r = signed_chunked_put(self.url, "/s3/auth/trailer.bin", data, 64 * 1024, trailer="good")
        self.assertEqual(r.status_code, 200, r.text)
        self.assertEqual(self.s3.get_object(Bucket="auth", Key="trailer.bin")["Body"].read(), data)
        for bad, status, err in (("bad-sig", 403, "SignatureDoesNotMatch"), ("no-sig", 403, "SignatureDoesNotMatch"),
                                 ("bad-crc", 400, "BadDigest")):
            r = signed_chunked_put(self.url, "/s3/auth/trailer-%s.bin" % bad, data, 64 * 1024, trailer=bad)
            self.assertEqual(r.status_code, status, (bad, r.text))
            self.assertIn(err, r.text)
            self.assertEqual(code(lambda: self.s3.head_object(Bucket="auth", Key="trailer-%s.bin" % bad)), "404")
        # a failed overwrite keeps the object
        r = signed_chunked_put(self.url, "/s3/auth/trailer.bin", b"other", 64 * 1024, trailer="bad-sig")
        self.assertEqual(r.status_code, 403)
        self.assertEqual(self.s3.get_object(Bucket="auth", Key="trailer.bin")["Body"].read(), data)

    def test_awscli_with_keys(self):
        """aws s3 cp (multipart above 8 MiB) and ls sign with the configured key; a wrong one is refused."""
        f = os.path.join(self.tmp, "cli.bin")
        data = os.urandom(9 << 20)
        with open(f, "wb") as fh:
            fh.write(data)
        env = dict(clean_env(), AWS_ACCESS_KEY_ID=AK, AWS_SECRET_ACCESS_KEY=SK, AWS_DEFAULT_REGION="us-east-1",
                   AWS_CONFIG_FILE=os.path.join(self.tmp, "awsconfig"),
                   AWS_SHARED_CREDENTIALS_FILE=os.path.join(self.tmp, "awscreds"))
        ep = ["--endpoint-url", self.url + "/s3"]
        p = subprocess.run([AWS] + ep + ["s3", "cp", f, "s3://auth/cli.bin", "--only-show-errors"],
                           capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertEqual(self.s3.get_object(Bucket="auth", Key="cli.bin")["Body"].read(), data)
        p = subprocess.run([AWS] + ep + ["s3", "ls", "s3://auth/"], capture_output=True, text=True, env=env,
                           timeout=60)
        self.assertIn("cli.bin", p.stdout)
        env["AWS_SECRET_ACCESS_KEY"] = "not-the-secret"
        p = subprocess.run([AWS] + ep + ["s3", "ls", "s3://auth/"], capture_output=True, text=True, env=env,
                           timeout=60)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("SignatureDoesNotMatch", p.stderr)

    def test_rclone_with_keys(self):
        """rclone signs with the configured key: copy up, list, read back; a wrong secret is refused."""
        d = os.path.join(self.tmp, "rc")
        os.makedirs(os.path.join(d, "sub"), exist_ok=True)
        files = {"a.txt": b"rclone signed", "sub/b.bin": os.urandom(300000)}
        for rel, data in files.items():
            with open(os.path.join(d, rel), "wb") as f:
                f.write(data)

        def rclone(secret, *args):
            cfg = os.path.join(self.tmp, "rclone-%s.conf" % len(secret))
            with open(cfg, "w") as f:
                f.write("[shale]\ntype = s3\nprovider = Other\naccess_key_id = %s\nsecret_access_key = %s\n"
                        "endpoint = %s/s3\nforce_path_style = true\nregion = us-east-1\n" % (AK, secret, self.url))
            return subprocess.run(["/usr/bin/rclone", "--config", cfg, "--retries", "1", "--low-level-retries", "1",
                                   "--contimeout", "10s", "--timeout", "60s"] + list(args), capture_output=True,
                                  text=True, timeout=120, stdin=subprocess.DEVNULL,
                                  env=dict(clean_env(), HOME=self.tmp))
        p = rclone(SK, "copy", d, "shale:auth/rc")
        self.assertEqual(p.returncode, 0, p.stderr)
        for rel, data in files.items():
            self.assertEqual(self.s3.get_object(Bucket="auth", Key="rc/" + rel)["Body"].read(), data)
        p = rclone(SK, "lsf", "-R", "--files-only", "shale:auth/rc")
        self.assertEqual(sorted(p.stdout.split()), sorted(files))
        p = rclone("not-the-secret-at-all", "lsf", "shale:auth/rc")
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("SignatureDoesNotMatch", p.stderr)

    def test_virtual_hosted_signed(self):
        """With s3.vhost_domain set, Host BUCKET.DOMAIN addresses the bucket; the signature covers that Host and
        the path as sent, through the gateway's forward to the owning target."""
        self.c.cli("config", "cluster", "s3.vhost_domain=s3.test")
        try:
            port = self.url.rsplit(":", 1)[1]
            for key, body in (("v/one.txt", b"vhost body"), ("v1/objects/x", b"not the native API")):
                host = "auth.s3.test:" + port
                req = AWSRequest(method="PUT", url="http://%s/%s" % (host, key), data=body,
                                 headers={"x-amz-content-sha256": hashlib.sha256(body).hexdigest()})
                SigV4Auth(Credentials(AK, SK), "s3", "us-east-1").add_auth(req)
                hdrs = dict(req.headers, Host=host)
                r = requests.put("%s/%s" % (self.url, key), data=body, headers=hdrs, timeout=10)
                self.assertEqual(r.status_code, 200, r.text)
                self.assertEqual(self.s3.get_object(Bucket="auth", Key=key)["Body"].read(), body)
            # the same signed request sent for another bucket's Host does not verify
            r = requests.put(self.url + "/v1/objects/x", data=body,
                             headers=dict(hdrs, Host="other.s3.test:" + port), timeout=10)
            self.assertIn(r.status_code, (403, 404))
            p = self.c.cli("config", "cluster", "s3.vhost_domain=Not_A_Domain", check=False)
            self.assertNotEqual(p.returncode, 0)
        finally:
            self.c.cli("config", "cluster", "s3.vhost_domain=")

    def test_s3cmd_at_root_signed(self):
        """With s3.root on, S3 is served at "/" too, so s3cmd (whose endpoint cannot carry a path its signature
        agrees with) works with verification on: mb, put, ls, get, del; a wrong secret is refused; the native
        API keeps its paths; with s3.root off a root path is the native 404 again."""
        port = self.url.rsplit(":", 1)[1]
        src = os.path.join(self.tmp, "s3cmd.in")
        data = os.urandom(70000)
        with open(src, "wb") as f:
            f.write(data)

        def s3cmd(secret, *args):
            cfg = os.path.join(self.tmp, "s3cmd-%d.cfg" % len(secret))
            hb = "127.0.0.1:" + port
            with open(cfg, "w") as f:
                f.write("[default]\naccess_key = %s\nsecret_key = %s\nhost_base = %s\nhost_bucket = %s\n"
                        "use_https = False\nsignature_v2 = False\nbucket_location = us-east-1\nproxy_host = \n"
                        "progress_meter = False\n" % (AK, secret, hb, hb))
            return subprocess.run(["/usr/bin/s3cmd", "-c", cfg, "--no-progress"] + list(args), capture_output=True,
                                  text=True, timeout=120, stdin=subprocess.DEVNULL, env=dict(clean_env(), HOME=self.tmp))
        r = requests.get(self.url + "/rootb/x", timeout=10)
        self.assertEqual(r.status_code, 404)
        self.assertIn("no such endpoint", r.text)  # s3.root is off: Shale's own 404
        self.c.cli("config", "cluster", "s3.root=true")
        try:
            for args in (("mb", "s3://rootb"), ("put", src, "s3://rootb/dir/f.bin")):
                p = s3cmd(SK, *args)
                self.assertEqual(p.returncode, 0, p.stdout + p.stderr)
            self.assertEqual(self.s3.get_object(Bucket="rootb", Key="dir/f.bin")["Body"].read(), data)
            p = s3cmd(SK, "ls", "-r", "s3://rootb")
            self.assertIn("s3://rootb/dir/f.bin", p.stdout, p.stderr)
            out = os.path.join(self.tmp, "s3cmd.out")
            p = s3cmd(SK, "get", "--force", "s3://rootb/dir/f.bin", out)
            self.assertEqual(p.returncode, 0, p.stderr)
            with open(out, "rb") as f:
                self.assertEqual(f.read(), data)
            p = s3cmd("not-the-secret", "ls", "s3://rootb")
            self.assertNotEqual(p.returncode, 0)
            self.assertIn("SignatureDoesNotMatch", p.stdout + p.stderr)
            r = requests.get(self.url + "/rootb/dir/f.bin", timeout=10)  # unsigned: an S3 error now
            self.assertEqual(r.status_code, 403, r.text)
            self.assertIn("<Code>AccessDenied</Code>", r.text)
            self.assertEqual(requests.get(self.url + "/v1/health", timeout=10).status_code, 200)
            r = requests.get(self.url + "/v1/objects/rootb/dir/f.bin", timeout=10)  # native, redirected
            self.assertEqual(r.content, data)
            p = s3cmd(SK, "del", "s3://rootb/dir/f.bin")
            self.assertEqual(p.returncode, 0, p.stderr)
            self.assertEqual(code(lambda: self.s3.head_object(Bucket="rootb", Key="dir/f.bin")), "404")
        finally:
            self.c.cli("config", "cluster", "s3.root=false")
        r = requests.get(self.url + "/rootb/x", timeout=10)
        self.assertEqual(r.status_code, 404)
        self.assertIn("no such endpoint", r.text)

    def test_zz_last_key_and_verify_off(self):
        """The last key cannot go while verification is on; turned off, any credentials pass again."""
        self.c.cli("s3", "key", "rm", "generated")
        p = self.c.cli("s3", "key", "rm", AK, check=False)
        self.assertNotEqual(p.returncode, 0)
        self.assertIn("last S3 access key", p.stderr)
        self.c.cli("s3", "verify", "off")
        anyone = client(self.url, "whoever", "whatever-secret")
        self.assertEqual(anyone.get_object(Bucket="auth", Key="a.txt")["Body"].read(), b"signed bytes")
        self.c.cli("s3", "key", "rm", AK)
        self.assertNotIn(AK, self.c.cli("s3", "key", "ls").stdout)


if __name__ == "__main__":
    main()
