/* SPDX-License-Identifier: MIT
 * s3obj.c: S3 requests on objects, answered by the object's target: PUT
 * of an object or a part (plain, chunked, aws-chunked: s3chunk.c), GET and
 * HEAD (ranges, conditions, response-* overrides) through the read path,
 * DELETE, and the dispatch to CopyObject (s3copy.c) and the multipart
 * requests (s3mpu.c). See s3.h for the metadata kept.
 */
#include "s3.h"
#include "s3obj.h"
#include "cksum.h"
#include "cluster.h"
#include "ec.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "peer.h"
#include "stats.h"
#include "store.h"
#include "read.h"
#include "s3chunk.h"
#include "s3sse.h"
#include "upload.h"

#include <ctype.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>


/* ---- a PUT or a part being written ---- */

struct s3put {
    struct sl_put *p;                 /* object */
    struct sl_mpt_part *part;         /* or a part */
    char upload_id[80];
    int partno;
    EVP_MD_CTX *md5;
    bool chunked;                     /* aws-chunked */
    struct s3chunk ck;
    uint64_t decoded;
    int64_t expect;                   /* decoded length, -1 unknown */
    unsigned char content_md5[16];
    bool has_md5;
    struct s3xc xc;
    char xc_name[32];
    char xc_want[160];                /* from the header; "" = from the trailer */
    bool xc_self;                     /* none came: the upload's algorithm, computed here */
    char xc_got[160];                 /* what the body sums to (put_check) */
    char err_code[48];
    char err_msg[512];
    int err_status;
    struct s3auth au;
    EVP_MD_CTX *sha;                  /* the raw body, when the client declared its SHA-256 */
    char sha_want[65];
    struct sl_sse sse;                 /* encrypted at rest (s3sse.c): the bytes written are its ciphertext */
    char vid[24];                     /* the version written (x-amz-version-id), "" none */
    bool versioned;
};

static void put_free(struct s3put *u)
{
    if (!u)
        return;
    sl_put_abort(u->p);
    if (u->part) {
        struct sl_err e = { 0 };
        sl_mpt_part_end(u->part, false, &e);
    }
    if (u->md5)
        EVP_MD_CTX_free(u->md5);
    if (u->sha)
        EVP_MD_CTX_free(u->sha);
    s3chunk_free(&u->ck);
    OPENSSL_cleanse(u->au.secret, sizeof(u->au.secret));
    s3_xc_free(&u->xc);
    sl_sse_free(&u->sse);
    free(u);
}

static int put_fail(struct s3put *u, int status, const char *code, const char *msg)
{
    if (!u->err_status) {
        u->err_status = status;
        snprintf(u->err_code, sizeof(u->err_code), "%s", code);
        snprintf(u->err_msg, sizeof(u->err_msg), "%s", msg);
    }
    return -1;
}

static int sink(struct s3put *u, const char *p, size_t n)
{
    struct sl_err err = { 0 };
    EVP_DigestUpdate(u->md5, p, n);
    if (u->xc.alg)
        s3_xc_update(&u->xc, p, n);
    u->decoded += n;
    if (u->expect >= 0 && u->decoded > (uint64_t)u->expect)
        return put_fail(u, 400, "IncompleteBody", "the body holds more bytes than x-amz-decoded-content-length");
    if (u->sse.mode)
        p = sl_sse_crypt(&u->sse, p, n);
    int rc = u->part ? sl_mpt_part_write(u->part, p, n, &err) : sl_put_write(u->p, p, n, &err);
    if (rc < 0) {
        char m[400];
        snprintf(m, sizeof(m), "%.380s", err.msg);
        return put_fail(u, sl_err_status(err.code), err.code == SL_ENOSPC ? "InsufficientStorage" : "InternalError",
                        m);
    }
    return 0;
}

static int chunk_sink(void *arg, const char *p, size_t n)
{
    return sink(arg, p, n) < 0;
}

static int body_bytes(struct s3put *u, const char *p, size_t n)
{
    if (u->sha)
        EVP_DigestUpdate(u->sha, p, n);
    if (!u->chunked)
        return sink(u, p, n);
    if (s3chunk_feed(&u->ck, p, n) < 0)
        return u->ck.status ? put_fail(u, u->ck.status, u->ck.code, u->ck.msg) : -1;
    return 0;
}

static int put_data(struct sl_req *r, const char *data, size_t n)
{
    struct s3put *u = r->ctx;
    if (u->err_status)
        return 0; /* failed already: the rest is read and dropped, the error is the answer */
    body_bytes(u, data, n);
    return 0;
}

/* The body is in: check what the client said about it. 0 ok. */
static int put_check(struct s3put *u, char *etag_hex)
{
    if (u->err_status)
        return -1;
    if (u->chunked && s3chunk_end(&u->ck) < 0)
        return put_fail(u, u->ck.status, u->ck.code, u->ck.msg);
    if (u->sha) {
        unsigned char sd[32];
        unsigned sn = 0;
        char hex[65];
        EVP_DigestFinal_ex(u->sha, sd, &sn);
        sl_hex(sd, 32, hex);
        if (strcmp(hex, u->sha_want))
            return put_fail(u, 400, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does "
                            "not match what was computed; nothing was stored");
    }
    if (u->expect >= 0 && u->decoded != (uint64_t)u->expect)
        return put_fail(u, 400, "IncompleteBody", "the body is shorter than x-amz-decoded-content-length; nothing "
                        "was stored");
    unsigned char d[16];
    unsigned dn = 0;
    EVP_DigestFinal_ex(u->md5, d, &dn);
    sl_hex(d, 16, etag_hex);
    if (u->has_md5 && memcmp(d, u->content_md5, 16))
        return put_fail(u, 400, "BadDigest", "The Content-MD5 you specified did not match what we received; "
                        "nothing was stored");
    const char *want = u->xc_want[0] ? u->xc_want : u->ck.trailer_val;
    if (u->xc.alg) {
        char *got = u->xc_got;
        s3_xc_final(&u->xc, got);
        if (u->xc_self)
            return 0;
        if (!want[0])
            return put_fail(u, 400, "InvalidRequest", "x-amz-trailer names a checksum the body did not carry");
        if (strcmp(got, want)) {
            char m[400];
            snprintf(m, sizeof(m), "The %s you specified did not match the calculated checksum (%s); nothing was "
                     "stored", u->xc_name, got);
            return put_fail(u, 400, "BadDigest", m);
        }
    }
    return 0;
}

/* ---- GET / HEAD ---- */

static void add_obj_headers(struct sl_req *r, const struct sl_objmd *md)
{
    char t[64];
    s3_http_time(md->mtime, t, sizeof(t));
    sl_hdr_addf(r, "ETag", "\"%s\"", s3_obj_etag(md));
    sl_hdr_add(r, "Last-Modified", t);
    sl_hdr_add(r, "Accept-Ranges", "bytes");
    static const struct {
        const char *k, *h, *q;
    } std[] = { { "s3.ct", "Content-Type", "response-content-type" },
                { "s3.cd", "Content-Disposition", "response-content-disposition" },
                { "s3.ce", "Content-Encoding", "response-content-encoding" },
                { "s3.cl", "Content-Language", "response-content-language" },
                { "s3.cc", "Cache-Control", "response-cache-control" },
                { "s3.ex", "Expires", "response-expires" } };
    for (size_t i = 0; i < SL_ARRAY_SIZE(std); i++) {
        const char *v = sl_req_query(r, std[i].q);
        if (!v)
            v = sl_objmd_get_custom(md, std[i].k);
        if (!v && i == 0)
            v = "binary/octet-stream"; /* S3's default */
        if (v)
            sl_hdr_add(r, std[i].h, v);
    }
    for (int i = 0; i < md->ncustom; i++)
        if (!strncmp(md->custom[i].k, "x-amz-meta-", 11))
            sl_hdr_add(r, md->custom[i].k, md->custom[i].v);
    int nt = s3_tags_count(md);
    if (nt)
        sl_hdr_addf(r, "x-amz-tagging-count", "%d", nt);
    s3_lock_resp_hdrs(r, md); /* x-amz-object-lock-* (s3lock.c) */
    const char *mp = sl_objmd_get_custom(md, "s3.mp");
    if (mp && sl_req_query(r, "partNumber"))
        sl_hdr_add(r, "x-amz-mp-parts-count", mp);
}

/* x-amz-checksum-mode: ENABLED on a whole-object GET or HEAD: the
 * x-amz-checksum-ALG its PUT carried and was verified against (custom
 * "s3.xc"), which the client checks the body against; nothing for an object
 * stored without one (as S3, which then sends none either) */
static void add_checksum_header(struct sl_req *r, const struct sl_objmd *md)
{
    const char *mode = sl_req_header(r, "x-amz-checksum-mode");
    const char *xc = mode && !strcasecmp(mode, "ENABLED") ? sl_objmd_get_custom(md, S3_XC_KEY) : NULL;
    const char *colon = xc ? strchr(xc, ':') : NULL;
    if (!colon || colon == xc || colon - xc >= 16 || !colon[1])
        return;
    char h[40] = "x-amz-checksum-";
    size_t n = strlen(h);
    for (const char *c = xc; c < colon; c++)
        h[n++] = (char)tolower((unsigned char)*c);
    h[n] = 0;
    sl_hdr_add(r, h, colon + 1);
    /* a multipart upload's: the checksum of its parts' checksums */
    sl_hdr_add(r, "x-amz-checksum-type", sl_objmd_get_custom(md, "s3.mp") ? "COMPOSITE" : "FULL_OBJECT");
}

/* As S3: 1 a range, 0 none (a Range that is not a valid single byte range is
 * ignored: the whole object), -1 not satisfiable */
static int parse_range(const char *h, uint64_t size, uint64_t *off, uint64_t *len)
{
    int rc = sl_range_parse(h, size, off, len);
    return rc == SL_RANGE_OK ? 1 : rc == SL_RANGE_UNSAT ? -1 : 0;
}

/* The object found by the read path (cluster/read.h), answered in S3's
 * terms: conditions, ?partNumber, Range, and the headers S3 clients read */
static void get_fail(struct sl_req *r, const struct sl_bck *b, const char *key, size_t klen,
                     const struct sl_err *err)
{
    if (!s3_obj_acl_grants(r, NULL)) /* left to the object's ACL (s3policy.c): no object, no grant */
        s3_obj_acl_refuse(r);
    else if (err->code == SL_ENOOBJ || err->code == SL_ENOENT) {
        s3ver_miss(r, b, key, klen); /* a delete marker on top: its headers */
        s3_err(r, 404, "NoSuchKey", "The specified key does not exist.");
    } else
        s3_err_sl(r, err);
}

static const struct sl_read_ops get_ops;

static void get_serve(struct sl_req *r, const struct sl_bck *b, const char *key, size_t klen, struct sl_read *rd)
{
    struct stat st;
    if (r->method != SL_M_HEAD && !rd->checked && fstat(rd->fd, &st) == 0 && (uint64_t)st.st_size != rd->md.size) {
        /* the file is not what the metadata says: again on a pool thread, repaired or refused */
        sl_read_done(rd);
        sl_read_again(r, b, key, klen, sl_read_flags(r, b) | SL_READ_RAW, &get_ops);
        return;
    }
    const char *etag = s3_obj_etag(&rd->md);
    struct sl_objmd *md = &rd->md;
    struct sl_sse sse;
    if (s3_sse_open_s3(r, md, "", &sse) < 0) { /* encrypted: the key (SSE-C: the request's) */
        sl_read_done(rd);
        return;
    }
    int c = s3_conditions(r, "", etag, md->mtime, true);
    const char *pn = sl_req_query(r, "partNumber");
    if (!s3_obj_acl_grants(r, md)) { /* left to the object's ACL (s3policy.c) */
        s3_obj_acl_refuse(r);
    } else if (c == 412) {
        s3_err(r, 412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold");
    } else if (c == 304) {
        sl_hdr_addf(r, "ETag", "\"%s\"", etag);
        sl_resp_empty(r, 304);
    } else {
        uint64_t off = 0, len = md->size;
        int rg = 0;
        if (pn) {
            int pr = s3_part_range(md, pn, &off, &len);
            if (pr == -1) {
                s3_err(r, 400, "InvalidPart", "partNumber %s: the object has no such part", pn);
                goto done;
            }
            if (pr == -2) {
                s3_err(r, 501, "NotImplemented", "partNumber %s: this object's part sizes were not kept (more than "
                       "256 parts of different sizes)", pn);
                goto done;
            }
            rg = pr; /* 1: a part of a multipart object, sent as a range */
        } else {
            rg = parse_range(sl_req_header(r, "Range"), md->size, &off, &len);
        }
        if (rg < 0) {
            sl_hdr_addf(r, "Content-Range", "bytes */%llu", (unsigned long long)md->size);
            s3_err(r, 416, "InvalidRange", "The requested range is not satisfiable (the object has %llu bytes)",
                   (unsigned long long)md->size);
        } else {
            add_obj_headers(r, md);
            if (!rg)
                add_checksum_header(r, md); /* (a range's bytes are not what it sums) */
            s3_sse_headers(r, &sse);
            s3ver_hdr(r, b, key, klen, md);
            int status = rg ? 206 : 200;
            if (rg)
                sl_hdr_addf(r, "Content-Range", "bytes %llu-%llu/%llu", (unsigned long long)off,
                            (unsigned long long)(off + len - 1), (unsigned long long)md->size);
            if (r->method == SL_M_HEAD) {
                sl_resp_head(r, status, len);
            } else {
                if (rd->from == SL_READ_HERE)
                    sl_store_touch(b->bid, key, klen);
                if (sse.mode)
                    s3_sse_serve(r, status, rd->fd, off, len, &sse, NULL);
                else
                    sl_resp_fd(r, status, rd->fd, off, len, NULL);
                rd->fd = -1;
            }
        }
    }
done:
    sl_sse_free(&sse);
    sl_read_done(rd);
}

static const struct sl_read_ops get_ops = { .serve = get_serve, .fail = get_fail, .checks_size = true };

static void get_obj(struct sl_req *r, const struct s3req *q, const struct sl_bck *b)
{
    struct sl_buf n; /* ?versionId: that version's object (s3ver.c) */
    sl_buf_init(&n);
    if (s3ver_get_name(r, q, b, &n))
        sl_read_req(r, b, n.p, n.len, sl_read_flags(r, b) | SL_READ_RAW, &get_ops); /* (decrypted here: SSE-C with the request's key) */
    sl_buf_free(&n);
}

/* ---- PUT object / part ---- */

static void put_answer(struct sl_req *r, struct s3put *u, const char *etag_hex, const char *xc_got)
{
    sl_hdr_addf(r, "ETag", "\"%s\"", etag_hex);
    s3_sse_headers(r, &u->sse);
    if (u->vid[0])
        sl_hdr_add(r, "x-amz-version-id", u->vid);
    if (xc_got && xc_got[0]) {
        char h[64];
        snprintf(h, sizeof(h), "x-amz-checksum-%s", u->xc_name);
        sl_hdr_add(r, h, xc_got);
    }
    sl_resp_empty(r, 200);
}

/* multipart bookkeeping: the S3 side of an upload (its metadata and each
 * part's MD5 and size), next to upload.c's own state */
static void put_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct s3put *u = r->ctx;
    struct sl_err err = { 0 };
    char etag[33], xc_got[160] = "";
    if (put_check(u, etag) < 0) {
        s3_err(r, u->err_status, u->err_code, "%s", u->err_msg);
        return;
    }
    if (u->xc.alg)
        snprintf(xc_got, sizeof(xc_got), "%s", u->xc_got);
    if (u->part) {
        struct sl_mpt_part *part = u->part;
        u->part = NULL;
        char *info = s3_part_info(etag, xc_got); /* (recorded with the part: a restart keeps it) */
        sl_mpt_part_set_info(part, info);
        free(info);
        if (sl_mpt_part_end(part, true, &err) < 0) {
            s3_err_sl(r, &err);
            return;
        }
        s3_upload_record_part(u->upload_id, u->partno, u->decoded, etag, xc_got);
        put_answer(r, u, etag, xc_got);
        return;
    }
    struct sl_put *p = u->p;
    u->p = NULL;
    sl_put_set_custom(p, "ETag", etag); /* known now, published with the object */
    if (xc_got[0]) { /* verified: GetObjectAttributes answers it (s3attr.c) */
        char xc[200];
        snprintf(xc, sizeof(xc), "%s:%s", u->xc_name, xc_got);
        sl_put_set_custom(p, S3_XC_KEY, xc);
    }
    struct sl_objmd md;
    if (sl_put_commit(p, &md, &err) < 0) {
        s3_err_sl(r, &err);
        return;
    }
    if (u->versioned)
        snprintf(u->vid, sizeof(u->vid), "%s", sl_ver_id_of(&md));
    sl_objmd_free(&md);
    put_answer(r, u, etag, xc_got);
}

/* the part's or object's fsyncs and metadata commit: on a DISK pool thread */
static void put_done(struct sl_req *r)
{
    if (sl_store_put_syncs())
        sl_req_offload_disk(r, put_run, NULL, NULL);
    else
        put_run(r, NULL);
}

static void put_cleanup(struct sl_req *r, bool completed)
{
    (void)completed;
    put_free(r->ctx);
    r->ctx = NULL;
}

/* Body framing and checksums the request declares: 0, or -1 answered. */
static int put_setup(struct sl_req *r, struct s3put *u, const struct s3auth *au)
{
    u->md5 = EVP_MD_CTX_new();
    EVP_DigestInit_ex(u->md5, EVP_md5(), NULL);
    u->expect = -1;
    u->au = *au;
    const char *sha = sl_req_header(r, "x-amz-content-sha256");
    const char *ce = sl_req_header(r, "Content-Encoding");
    u->chunked = (sha && !strncmp(sha, "STREAMING-", 10)) || (ce && strcasestr(ce, "aws-chunked"));
    if (sha && strlen(sha) == 64 && strspn(sha, "0123456789abcdef") == 64) {
        u->sha = EVP_MD_CTX_new();
        EVP_DigestInit_ex(u->sha, EVP_sha256(), NULL);
        snprintf(u->sha_want, sizeof(u->sha_want), "%s", sha);
    }
    if (u->chunked) { /* chunk signatures chained from the request's (SigV4 streaming), when verifying */
        bool sig = au->on && sha && !strncmp(sha, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD", 34);
        s3chunk_init(&u->ck, sig ? &u->au.a : NULL, u->au.secret,
                     sig && !strcmp(sha, "STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER"), chunk_sink, u);
    }
    const char *dcl = sl_req_header(r, "x-amz-decoded-content-length");
    if (dcl) {
        char *e;
        long long v = strtoll(dcl, &e, 10);
        if (!*dcl || *e || v < 0) {
            s3_err(r, 400, "InvalidArgument", "x-amz-decoded-content-length: \"%s\" is not a length", dcl);
            return -1;
        }
        u->expect = v;
    } else if (!u->chunked) {
        u->expect = r->content_length >= 0 ? r->content_length : -1;
    }
    if (u->chunked && u->expect < 0) {
        s3_err(r, 411, "MissingContentLength", "an aws-chunked body needs x-amz-decoded-content-length");
        return -1;
    }
    const char *cmd5 = sl_req_header(r, "Content-MD5");
    if (cmd5) {
        if (s3_b64dec(cmd5, u->content_md5, 16) != 16) {
            s3_err(r, 400, "InvalidDigest", "The Content-MD5 you specified is not valid (base64 of 16 bytes)");
            return -1;
        }
        u->has_md5 = true;
    }
    const char *alg = sl_req_header(r, "x-amz-sdk-checksum-algorithm");
    const char *trailer = sl_req_header(r, "x-amz-trailer");
    char name[32] = "";
    if (trailer) {
        if (strncasecmp(trailer, "x-amz-checksum-", 15)) {
            s3_err(r, 400, "InvalidRequest", "x-amz-trailer: \"%s\" is not a checksum trailer", trailer);
            return -1;
        }
        snprintf(name, sizeof(name), "%s", trailer + 15);
    } else if (alg) {
        snprintf(name, sizeof(name), "%s", alg);
    } else { /* an x-amz-checksum-ALG header alone (as S3 takes it) */
        static const char *const algs[] = { "crc32", "crc32c", "sha1", "sha256", "crc64nvme" };
        for (size_t i = 0; i < SL_ARRAY_SIZE(algs) && !name[0]; i++) {
            char h[64];
            snprintf(h, sizeof(h), "x-amz-checksum-%s", algs[i]);
            if (sl_req_header(r, h))
                snprintf(name, sizeof(name), "%s", algs[i]);
        }
        alg = name[0] ? name : NULL;
    }
    if (name[0]) {
        for (char *c = name; *c; c++)
            *c = (char)((*c >= 'A' && *c <= 'Z') ? *c + 32 : *c);
        int a = s3_xc_alg(name);
        if (a < 0) {
            s3_err(r, 400, "InvalidRequest", "checksum algorithm \"%s\" is not supported here (supported: CRC32, CRC64NVME, "
                   "CRC32C, SHA1, SHA256)", name);
            return -1;
        }
        s3_xc_init(&u->xc, a);
        snprintf(u->xc_name, sizeof(u->xc_name), "%s", name);
        if (!trailer) {
            char h[64];
            snprintf(h, sizeof(h), "x-amz-checksum-%s", name);
            const char *v = sl_req_header(r, h);
            if (!v) {
                s3_err(r, 400, "InvalidRequest", "x-amz-sdk-checksum-algorithm %s without its %s header", alg, h);
                return -1;
            }
            snprintf(u->xc_want, sizeof(u->xc_want), "%s", v);
        }
    }
    return 0;
}

static void put_obj(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, const struct s3auth *au)
{
    const char *cs = sl_req_header(r, "x-amz-copy-source");
    if (cs) {
        s3_copy_object(r, q, b, cs, NULL, 0);
        return;
    }
    if (r->content_length < 0 && !sl_req_header(r, "x-amz-decoded-content-length") &&
        !sl_req_header(r, "Transfer-Encoding")) {
        s3_err(r, 411, "MissingContentLength", "You must provide the Content-Length HTTP header.");
        return;
    }
    struct sl_err err = { 0 };
    struct sl_objmd md;
    memset(&md, 0, sizeof(md));
    bool conditional = sl_req_header(r, "If-Match") || sl_req_header(r, "If-None-Match");
    if (conditional) {
        int st = sl_obj_stat(b, q->key, q->klen, &md, NULL, &err);
        if (st < 0) {
            s3_err_sl(r, &err);
            return;
        }
        int c = s3_conditions(r, "", st ? s3_obj_etag(&md) : "", md.mtime, st == 1);
        if (st)
            sl_objmd_free(&md);
        if (c) {
            s3_err(r, 412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold");
            return;
        }
    }
    struct s3put *u = sl_xcalloc(1, sizeof(*u));
    if (put_setup(r, u, au) < 0) {
        put_free(u);
        return;
    }
    struct kvs m = { 0 };
    s3_collect_meta(r, &m);
    if (m.bytes > S3_META_MAX) {
        s3_kv_free(&m);
        put_free(u);
        s3_err(r, 400, "MetadataTooLarge", "Your metadata headers exceed the maximum allowed metadata size (%d "
               "bytes)", S3_META_MAX);
        return;
    }
    if (s3_tagging_hdr(r, &m) < 0 || s3_lock_hdrs(r, b, &m) < 0 || s3_acl_hdr(r, b, &m) < 0 ||
        s3_sse_new(r, b, &u->sse, &m) < 0) {
        s3_kv_free(&m);
        put_free(u);
        return;
    }
    struct sl_put_opts o = { .client_cktype = -1, .custom = m.kv, .ncustom = m.n, .expect_size = u->expect };
    u->versioned = b->s3ver != SL_S3VER_OFF;
    if (s3ver_write_check(r, b, q->key, q->klen) < 0) {
        s3_kv_free(&m);
        put_free(u);
        return;
    }
    if (sl_put_begin(b, q->key, q->klen, &o, &u->p, &err) < 0) {
        s3_kv_free(&m);
        put_free(u);
        s3_err_sl(r, &err);
        return;
    }
    s3_kv_free(&m);
    r->ctx = u;
    r->on_cleanup = put_cleanup;
    sl_req_stream_body(r, put_data, put_done);
}

static void put_part(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, const char *id,
                     const struct s3auth *au)
{
    const char *pn = sl_req_query(r, "partNumber");
    char *e;
    long no = pn ? strtol(pn, &e, 10) : 0;
    if (!pn || !*pn || *e || no < 1 || no > 10000) {
        s3_err(r, 400, "InvalidArgument", "Part number must be an integer between 1 and 10000, inclusive");
        return;
    }
    if (!s3_upload_known(id)) {
        s3_err(r, 404, "NoSuchUpload", "The specified upload does not exist (it was completed, aborted, or never "
               "started on this cluster)");
        return;
    }
    const char *cs = sl_req_header(r, "x-amz-copy-source");
    if (cs) { /* UploadPartCopy */
        s3_copy_object(r, q, b, cs, id, (int)no);
        return;
    }
    struct s3put *u = sl_xcalloc(1, sizeof(*u));
    if (put_setup(r, u, au) < 0) {
        put_free(u);
        return;
    }
    if (u->expect <= 0) {
        put_free(u);
        s3_err(r, u->expect < 0 ? 411 : 400, u->expect < 0 ? "MissingContentLength" : "InvalidArgument",
               "a part needs its length (Content-Length or x-amz-decoded-content-length) and at least one byte");
        return;
    }
    int ua = s3_upload_alg(id); /* the upload's x-amz-checksum-algorithm: each part has its checksum */
    if (ua && u->xc.alg && u->xc.alg != ua) {
        put_free(u);
        s3_err(r, 400, "InvalidRequest", "Checksum Type mismatch occurred: the upload was created with "
               "x-amz-checksum-algorithm %s and this part carries another checksum; nothing was stored",
               ua == XC_CRC32 ? "CRC32" : ua == XC_CRC32C ? "CRC32C" : ua == XC_SHA1 ? "SHA1" : "SHA256");
        return;
    }
    if (ua && !u->xc.alg) {
        s3_xc_init(&u->xc, ua);
        u->xc_self = true;
        snprintf(u->xc_name, sizeof(u->xc_name), "%s", ua == XC_CRC32 ? "crc32" : ua == XC_CRC32C ? "crc32c" :
                 ua == XC_SHA1 ? "sha1" : "sha256");
    }
    struct kvs um = { 0 };
    s3_upload_meta(id, &um);
    int sr = s3_sse_part(r, &um, &u->sse, (int)no); /* the upload's encryption; SSE-C: this part's key */
    s3_kv_free(&um);
    if (sr < 0) {
        put_free(u);
        return;
    }
    struct sl_err err = { 0 };
    if (sl_mpt_part_begin(b, q->key, q->klen, id, pn, u->expect, &u->part, &err) < 0) {
        put_free(u);
        if (err.code == SL_ENOENT || err.code == SL_ENOOBJ)
            s3_err(r, 404, "NoSuchUpload", "%s", err.msg);
        else
            s3_err_sl(r, &err);
        return;
    }
    snprintf(u->upload_id, sizeof(u->upload_id), "%s", id);
    u->partno = (int)no;
    r->ctx = u;
    r->on_cleanup = put_cleanup;
    sl_req_stream_body(r, put_data, put_done);
}

/* ---- dispatch ---- */

/* Object sub-resources not built: answered 501 for every method, never the object's bytes (GET ?attributes
 * returned them) nor its deletion (DELETE ?tagging deleted the object). */
static const char *const obj_unsupported[] = { "restore",
                                               "select", "torrent", NULL };

static bool obj_sub_refused(struct sl_req *r)
{
    for (int i = 0; obj_unsupported[i]; i++)
        if (sl_req_query(r, obj_unsupported[i])) {
            s3_err(r, 501, "NotImplemented", "?%s on an object is not implemented by this Shale S3 front end "
                   "(docs/s3.md lists what is); nothing was read or changed", obj_unsupported[i]);
            return true;
        }
    return false;
}

void s3_obj(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, const struct s3auth *au)
{
    struct sl_err err = { 0 };
    if (sl_objname_check(q->key, q->klen, &err) < 0) {
        s3_err(r, 400, "InvalidArgument", "%s", err.msg);
        return;
    }
    if (obj_sub_refused(r))
        return;
    if (sl_req_query(r, "tagging")) {
        struct sl_buf n; /* ?versionId: that version's own tags (kept with it, s3ver.c) */
        sl_buf_init(&n);
        if (s3ver_sub_name(r, q, b, &n))
            s3_obj_tagging(r, b, n.p, n.len);
        sl_buf_free(&n);
        return;
    }
    if (sl_req_query(r, "attributes")) {
        s3_obj_attributes(r, q, b);
        return;
    }
    if (sl_req_query(r, "retention") || sl_req_query(r, "legal-hold")) { /* s3lock.c */
        s3_obj_lock(r, q, b);
        return;
    }
    const char *id = sl_req_query(r, "uploadId");
    switch (r->method) {
    case SL_M_GET:
    case SL_M_HEAD:
        if (id) {
            if (r->method == SL_M_HEAD)
                s3_err(r, 405, "MethodNotAllowed", "HEAD with ?uploadId is not allowed");
            else
                s3_list_parts(r, q, b, id);
            return;
        }
        if (sl_req_query(r, "acl")) {
            if (r->method == SL_M_GET)
                s3_obj_acl(r, q, b);
            else
                s3_err(r, 405, "MethodNotAllowed", "HEAD with ?acl is not allowed: GET it");
            return;
        }
        r->op = r->method == SL_M_HEAD ? SL_OP_HEAD : SL_OP_GET; /* counted as native GETs and HEADs are */
        get_obj(r, q, b);
        return;
    case SL_M_PUT:
        if (id)
            put_part(r, q, b, id, au);
        else if (sl_req_query(r, "acl"))
            s3_obj_acl(r, q, b);
        else {
            r->op = SL_OP_PUT;
            put_obj(r, q, b, au);
        }
        return;
    case SL_M_POST:
        if (sl_req_query(r, "uploads"))
            s3_create_upload(r, q, b);
        else if (id)
            s3_complete_upload(r, q, b, id);
        else
            s3_err(r, 405, "MethodNotAllowed", "POST on an object takes ?uploads or ?uploadId=");
        return;
    case SL_M_DELETE:
        if (id) {
            s3_abort_upload(r, q, b, id);
            return;
        }
        r->op = SL_OP_DELETE;
        if (s3ver_obj_delete(r, q, b)) /* a version, or a delete marker (s3ver.c) */
            return;
        if (sl_obj_delete(b, q->key, q->klen, &err) < 0 && err.code != SL_ENOOBJ && err.code != SL_ENOENT) {
            s3_err_sl(r, &err);
            return;
        }
        if (!err.code)
            sl_ec_after_delete(b, q->key, q->klen); /* erasure coded: its slices everywhere */
        sl_resp_empty(r, 204);
        return;
    default:
        s3_err(r, 405, "MethodNotAllowed", "%s is not allowed on an object", r->method_str);
    }
}
