#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Seeds for the server-parser fuzz targets (tests/fuzz/fuzz_<t>.c): a
handful of well-formed inputs and edge cases per target, written to
<out>/<target>/<name>. Run by gen_corpus.sh (parsers). The input layout of
each target is described at the top of its harness."""
import hashlib
import hmac
import json
import os
import sys

out = sys.argv[1]
seeds = {}


def seed(target, name, data):
    seeds.setdefault(target, {})[name] = data if isinstance(data, bytes) else data.encode()


# ---- h1: flags (bit 0 HEAD) + the peer's answer ----
CL = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Type: text/plain\r\nETag: \"1\"\r\n\r\nhello"
seed("h1", "content-length", b"\x00" + CL)
seed("h1", "chunked-ext-trailer", b"\x02HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
     b"5;ext=1;q=\"a b\"\r\nhello\r\na\r\n0123456789\r\n0;last\r\nX-T: t\r\n\r\n")
seed("h1", "head", b"\x01HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nAccept-Ranges: bytes\r\n\r\n")
seed("h1", "204", b"\x00HTTP/1.1 204 No Content\r\nX-Request-Id: 1\r\n\r\n")
seed("h1", "304", b"\x04HTTP/1.1 304 Not Modified\r\nETag: x\r\nContent-Length: 9\r\n\r\n")
seed("h1", "to-eof", b"\x00HTTP/1.0 200 OK\r\nConnection: close\r\n\r\nuntil the close")
seed("h1", "interim", b"\x06HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n")
seed("h1", "keep-then-close", b"\x08HTTP/1.1 404 Not Found\r\nConnection: keep-alive, close\r\n"
     b"Content-Length: 2\r\n\r\n{}")
seed("h1", "obs-fold", b"\x00HTTP/1.1 200 OK\r\nX-A: b\r\n  c\r\nContent-Length: 0\r\n\r\n")
seed("h1", "cl-and-chunked", b"\x00HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n")
seed("h1", "more-than-cl", b"\x0aHTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcd")

# ---- chunked: flags (bit 0 no callbacks, bits 1-3 stop at call k) + the chunked bytes ----
seed("chunked", "two-chunks", b"\x00" + b"5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n")
seed("chunked", "ext-trailers", b"\x00" + b"3;a=1;b\r\nabc\r\n0;x=\"y\"\r\nT: v\r\nChecksum: 1\r\n\r\n")
seed("chunked", "no-callbacks", b"\x01" + b"A\r\n0123456789\r\n0\r\n\r\n")
seed("chunked", "stop", b"\x04" + b"1\r\na\r\n1\r\nb\r\n0\r\n\r\n")
seed("chunked", "after-last", b"\x00" + b"0\r\n\r\nHTTP/1.1 200 OK\r\n")
seed("chunked", "upper-hex", b"\x00" + b"1F\r\n" + b"x" * 31 + b"\r\n0\r\n\r\n")

# ---- s3chunk: flags (bit 0 signed, bit 1 signed trailer, bit 2 sink refuses) + the body ----
SECRET = b"wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
DATE, AMZ, SCOPE = "20130524", "20130524T000000Z", "20130524/us-east-1/s3/aws4_request"
SEED_SIG = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9"
EMPTY = hashlib.sha256(b"").hexdigest()


def hm(k, m):
    return hmac.new(k, m.encode(), hashlib.sha256).digest()


KEY = hm(hm(hm(hm(b"AWS4" + SECRET, DATE), "us-east-1"), "s3"), "aws4_request")


def sign(sts):
    return hmac.new(KEY, sts.encode(), hashlib.sha256).hexdigest()


def aws_chunked(chunks, trailers=None):
    body, prev = b"", SEED_SIG
    for c in chunks + [b""]:
        prev = sign("AWS4-HMAC-SHA256-PAYLOAD\n%s\n%s\n%s\n%s\n%s" % (AMZ, SCOPE, prev, EMPTY,
                                                                     hashlib.sha256(c).hexdigest()))
        body += b"%x;chunk-signature=%s\r\n" % (len(c), prev.encode()) + c + (b"\r\n" if c else b"")
    if trailers is not None:
        canon = "".join("%s:%s\n" % (k, v) for k, v in trailers)
        tsig = sign("AWS4-HMAC-SHA256-TRAILER\n%s\n%s\n%s\n%s" % (AMZ, SCOPE, prev,
                                                                 hashlib.sha256(canon.encode()).hexdigest()))
        for k, v in trailers:
            body += ("%s:%s\r\n" % (k, v)).encode()
        body += b"x-amz-trailer-signature:" + tsig.encode() + b"\r\n"
    return body + b"\r\n"


seed("s3chunk", "unsigned", b"\x00" + b"5\r\nhello\r\n0\r\n\r\n")
seed("s3chunk", "unsigned-checksum", b"\x00" + b"5\r\nhello\r\n0\r\nx-amz-checksum-crc32:NhCmhg==\r\n\r\n")
seed("s3chunk", "signed", b"\x01" + aws_chunked([b"a" * 100, b"b" * 7]))
seed("s3chunk", "signed-trailer", b"\x03" + aws_chunked([b"hello"], [("x-amz-checksum-crc32", "NhCmhg==")]))
seed("s3chunk", "signed-bad", b"\x01" + b"5;chunk-signature=" + b"0" * 64 + b"\r\nhello\r\n")
seed("s3chunk", "sink-refuses", b"\x04" + b"5\r\nhello\r\n0\r\n\r\n")

# ---- s3sig: lines: Authorization, x-amz-date, method, path, query, payload hash, headers ----
E = EMPTY
seed("s3sig", "get-range", "\n".join([
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261124/us-east-1/s3/aws4_request, "
    "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
    "Signature=27aefe0d64df33cf653478b4c3d74f8cf7d0b3dbb4ada2a0f06a43da25b79f1a",
    "20261124T123045Z", "GET", "/s3/my-bucket/dir/a%20b+c~d.txt",
    "list-type=2&prefix=a%2Fb&max-keys=10&fetch-owner", E,
    "host: 127.0.0.1:8080", "range: bytes=0-9", "x-amz-content-sha256: " + E, "x-amz-date: 20261124T123045Z"]))
PH = hashlib.sha256(b"hello").hexdigest()
seed("s3sig", "put-meta", "\n".join([
    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261124/us-east-1/s3/aws4_request, "
    "SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-meta-foo, "
    "Signature=8e4b4c0be6056e9c1598133fa4d3d35005d4a057d4bb76b760e39c26da1ba9ad",
    "20261124T123045Z", "PUT", "/s3/b1/k%2Fx", "", PH,
    "content-type: text/plain", "host: 127.0.0.1:8080", "x-amz-content-sha256: " + PH,
    "x-amz-date: 20261124T123045Z", "x-amz-meta-foo: bar baz"]))
seed("s3sig", "presigned", "\n".join([
    "", "", "GET", "/s3/b1/obj.bin",
    "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20261124%2Fus-east-1%2Fs3%2F"
    "aws4_request&X-Amz-Date=20261124T123045Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&"
    "X-Amz-Signature=d285eccddcdd985a40473f38c1d582d68ff94b20a64fab2f0e67a8ab7dca6c4a",
    "UNSIGNED-PAYLOAD", "host: 127.0.0.1:8080"]))
seed("s3sig", "malformed", "\n".join([
    "AWS4-HMAC-SHA256 Credential=AK/20261124/us-east-1/s3/aws4, SignedHeaders=host, Signature=abc",
    "2026-11-24", "GET", "/", "X-Amz-Algorithm=AWS4-HMAC-SHA1", E]))
seed("s3sig", "missing-signed-header", "\n".join([
    "AWS4-HMAC-SHA256 Credential=AK/20261124/us-east-1/s3/aws4_request, SignedHeaders=host;range, "
    "Signature=" + "0" * 64, "20261124T123045Z", "GET", "/x", "a=1&a=0&b&%41=%zz", E, "host: h"]))

# ---- uri: lines: request target, Range, query keys ----
seed("uri", "object", "/v1/objects/bck/dir/a%20b.txt?provider=ais&archpath=x%2Fy\nbytes=0-9\nprovider\narchpath")
seed("uri", "s3", "/s3/b1/k%2Fx?uploads&list-type=2&prefix=a+b&max-keys=10\nbytes=-5\nuploads\nprefix")
seed("uri", "nul", "/v1/objects/b/a%00b?x=%00&y=1\nbytes=5-,10-20\nx\ny")
seed("uri", "dots", "/v1/objects//b/./../o?&&=&k=\nbytes=abc\nk\n")
seed("uri", "easy", "/ais/b/o%2fp%2Fq?%zz=%4\nbytes=0-0, 2-3\n%zz")
seed("uri", "bucket", "/v1/buckets/b?what=summary&props=name,size&flt=2\nBYTES=1-\nwhat\nflt")

# ---- dsort_spec: JSON or YAML ----
seed("dsort_spec", "aistore.json", json.dumps({
    "input_bck": {"name": "src", "provider": "ais"}, "input_format": {"template": "shard-{0..9}"},
    "input_extension": ".tar", "output_bck": {"name": "dst"}, "output_format": "out-{00..99}",
    "output_extension": ".tgz", "output_shard_size": "10MiB", "description": "d",
    "algorithm": {"kind": "shuffle", "seed": "42"}, "max_mem_usage": "60%",
    "Config": {"missing_shards": "warn"}}))
seed("dsort_spec", "objnames.json", json.dumps({
    "input_bck": "ais://src", "input_format": {"objnames": ["a.tar", "b.tar"]}, "output_format": "o-%d",
    "output_shard_size": 1048576, "algorithm": {"kind": "content", "extension": ".cls",
                                                 "content_key_type": "int"}}))
seed("dsort_spec", "blog.json", json.dumps({
    "extension": ".tar", "bck": {"name": "images"}, "input_format": "samples-{00..18}",
    "output_format": "shuffled-shard-%d", "output_shard_size": "10KB", "description": "shuffle image samples",
    "algorithm": {"kind": "shuffle", "seed": "1234"}}))
seed("dsort_spec", "lua-ekm.json", json.dumps({
    "input_bck": "src", "input_format": "s-{0..3}.tar", "output_format": "o-{0..3}",
    "algorithm": {"kind": "lua", "script": "function sort_key(r) return r.name end"},
    "ekm_file": "ais://maps/ekm.json", "ekm_file_sep": " ", "dry_run": True}))
seed("dsort_spec", "spec.yaml", "# a dsort spec in YAML\ninput_bck:\n  name: src\n  provider: ais\ninput_format:\n"
     "  template: shard-{0..9}\noutput_format: out-{000..999}\noutput_shard_size: 1MiB\nalgorithm:\n"
     "  kind: alphanumeric\n  decreasing: true\ndry_run: true\n")
seed("dsort_spec", "short.yaml", "input_bck: src\noutput_format: o-{0..9}\nalgorithm:\n  kind: shuffle\n  seed: 7\n")
seed("dsort_spec", "broken.yaml", "input_bck: [unclosed\n")

# ---- ishard_msg: JSON ----
seed("ishard_msg", "basic.json", json.dumps({
    "src_bck": "ais://raw", "dst_bck": "ais://pets", "shard_size": "16KiB", "sample_exts": "jpg,png",
    "missing_extension_action": "exclude", "shard_template": "pets-{0000..9999}", "ext": ".tar"}))
seed("ishard_msg", "ekm.json", json.dumps({
    "src_bck": "ais://raw", "dst_bck": "ais://ekm-json", "shard_size": "5", "sample_exts": "jpg,png",
    "missing_extension_action": "exclude", "ekm": {"cats-%d.tar": ["^[A-Z]"], "dogs-{00..99}.tar": ["^[a-z]"]}}))
seed("ishard_msg", "lua.json", json.dumps({
    "src_bck": "ais://lab", "dst_bck": "ais://lab-out",
    "ekm_lua": "function shard_for(key, sample) return 'x-%d' end", "ekm_content": ["cls"],
    "ekm_missing_key": "warn", "sort": "shuffle", "dry_run": "show_keys"}))
seed("ishard_msg", "pattern.json", json.dumps({
    "src_bck": "ais://tree", "src_prefix": "a/", "dst_bck": "ais://tree-col", "shard_size": "4",
    "sample_key_pattern": "full_name", "collapse": True, "ext_collision": "keep_first", "overwrite": True}))
seed("ishard_msg", "regex.json", json.dumps({"src_bck": "ais://raw", "dst_bck": "ais://b1",
                                             "sample_key_pattern": "(unclosed"}))

# ---- ekm: flags (bits 0-1 sep, 2-3 reaction, 4 .json, 5 ishard) + a line of keys + the map ----
KEYS = "a/1 b/2 cat-1 Dog-2 n01440764_10026 x"
seed("ekm", "text-tab", "\x00" + KEYS + "\n^a/.*\tshard-a-%d\n^b/.*\tshard-b-{00..99}\n\n")
seed("ekm", "text-space-warn", "\x05" + KEYS + "\n^c.*  cats-%d\nno separator here\n^[A-Z] dogs-%d\r\n")
seed("ekm", "text-abort", "\x08" + KEYS + "\n^a\tx-%d\nmalformed\n")
seed("ekm", "json", "\x10" + KEYS + "\n" + json.dumps({"shard-a-%d": ["^a/.*", "^A"], "shard-b-%d": ["^b/"]}))
seed("ekm", "json-overlap", "\x10" + KEYS + "\n" + json.dumps({"one-%d": ["^a"], "two-%d": [".*1$"]}))
seed("ekm", "ishard", "\x20" + KEYS + "\n" + json.dumps({"fish-%d.tar": ["n01440764.*"], "dog-{0..9}.tar": "n02.*"}))
seed("ekm", "bad-regex", "\x30" + KEYS + "\n" + json.dumps({"x-%d": ["("]}))

for t, files in seeds.items():
    d = os.path.join(out, t)
    os.makedirs(d, exist_ok=True)
    for name, data in files.items():
        with open(os.path.join(d, name), "wb") as f:
            f.write(data)
