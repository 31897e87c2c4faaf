/* SPDX-License-Identifier: MIT
 * s3obj.c: S3 requests on objects, answered by the object's target: PUT
 * (plain, chunked, aws-chunked), GET and HEAD (ranges, conditions,
 * response-* overrides), DELETE, and multipart uploads over the native
 * multipart of upload.h. See s3.h for the metadata kept.
 */
#include "s3.h"
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
#include "upload.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <ctype.h>
#include <string.h>
#include <strings.h>
#include <errno.h>
#include <unistd.h>
#include <zlib.h>

#define S3_META_MAX 2048

/* ---- small helpers ---- */

static const char *obj_etag(const struct sl_objmd *md)
{
    const char *e = sl_objmd_get_custom(md, "ETag");
    return e ? e : md->cksum;
}

static void hex2bin(const char *hex, unsigned char *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        sscanf(hex + 2 * i, "%2x", &v);
        out[i] = (unsigned char)v;
    }
}

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
    char err_code[48];
    char err_msg[512];
    int err_status;
    struct s3auth au;
    EVP_MD_CTX *sha;                  /* the raw body, when the client declared its SHA-256 */
    char sha_want[65];
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
        char got[160];
        s3_xc_final(&u->xc, got);
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

/* ---- the metadata a PUT carries ---- */

struct kvs {
    struct sl_kv *kv;
    int n;
    size_t bytes;
};

static void kv_add(struct kvs *k, const char *name, const char *v)
{
    k->kv = sl_xrealloc(k->kv, (size_t)(k->n + 1) * sizeof(*k->kv));
    k->kv[k->n].k = sl_xstrdup(name);
    k->kv[k->n].v = sl_xstrdup(v);
    k->n++;
    k->bytes += strlen(name) + strlen(v);
}

static void kv_free(struct kvs *k)
{
    for (int i = 0; i < k->n; i++) {
        free(k->kv[i].k);
        free(k->kv[i].v);
    }
    free(k->kv);
    memset(k, 0, sizeof(*k));
}

static void meta_cb(void *arg, const char *k, const char *v)
{
    struct kvs *m = arg;
    if (!strncasecmp(k, "x-amz-meta-", 11)) {
        char low[256];
        size_t n = strlen(k);
        if (n >= sizeof(low))
            n = sizeof(low) - 1;
        for (size_t i = 0; i < n; i++)
            low[i] = (char)((k[i] >= 'A' && k[i] <= 'Z') ? k[i] + 32 : k[i]);
        low[n] = 0;
        kv_add(m, low, v);
    }
}

/* Content-Type and the other stored headers, and x-amz-meta-*. */
static void collect_meta(struct sl_req *r, struct kvs *m)
{
    static const struct {
        const char *h, *k;
    } std[] = { { "Content-Type", "s3.ct" },        { "Content-Disposition", "s3.cd" },
                { "Content-Language", "s3.cl" },    { "Cache-Control", "s3.cc" },
                { "Expires", "s3.ex" } };
    for (size_t i = 0; i < SL_ARRAY_SIZE(std); i++) {
        const char *v = sl_req_header(r, std[i].h);
        if (v)
            kv_add(m, std[i].k, v);
    }
    const char *ce = sl_req_header(r, "Content-Encoding");
    if (ce) { /* stored without aws-chunked */
        struct sl_buf b;
        sl_buf_init(&b);
        const char *p = ce;
        while (*p) {
            while (*p == ' ' || *p == ',')
                p++;
            size_t l = strcspn(p, ",");
            size_t tl = l;
            while (tl && p[tl - 1] == ' ')
                tl--;
            if (tl && !(tl == 11 && !strncasecmp(p, "aws-chunked", 11))) {
                if (b.len)
                    sl_buf_adds(&b, ", ");
                sl_buf_add(&b, p, tl);
            }
            p += l;
        }
        if (b.len) {
            sl_buf_addc(&b, 0);
            kv_add(m, "s3.ce", b.p);
        }
        sl_buf_free(&b);
    }
    sl_req_headers_each(r, meta_cb, m);
}

/* ---- conditions ---- */

static bool etag_match(const char *list, const char *etag)
{
    const char *p = list;
    while (*p) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == '*')
            return true;
        size_t l = strcspn(p, ",");
        size_t tl = l;
        while (tl && p[tl - 1] == ' ')
            tl--;
        const char *v = p;
        if (tl >= 2 && v[0] == '"' && v[tl - 1] == '"') {
            v++;
            tl -= 2;
        }
        if (tl == strlen(etag) && !strncmp(v, etag, tl))
            return true;
        p += l;
    }
    return false;
}

/* 0 go on, else the status to answer (412, 304) */
static int conditions(struct sl_req *r, const char *pfx, const char *etag, int64_t mtime_ns, bool exists)
{
    char h[80];
    snprintf(h, sizeof(h), "%sIf-Match", pfx);
    const char *im = sl_req_header(r, h);
    snprintf(h, sizeof(h), "%sIf-None-Match", pfx);
    const char *inm = sl_req_header(r, h);
    snprintf(h, sizeof(h), "%sIf-Modified-Since", pfx);
    const char *ims = sl_req_header(r, h);
    snprintf(h, sizeof(h), "%sIf-Unmodified-Since", pfx);
    const char *ius = sl_req_header(r, h);
    int64_t mt = mtime_ns / 1000000000LL;
    if (im) {
        if (!exists || !etag_match(im, etag))
            return 412;
    } else if (ius && exists) {
        int64_t t = s3_parse_http_time(ius);
        if (t >= 0 && mt > t)
            return 412;
    }
    if (inm) {
        if (exists && etag_match(inm, etag))
            return r->method == SL_M_GET || r->method == SL_M_HEAD ? 304 : 412;
    } else if (ims && exists && (r->method == SL_M_GET || r->method == SL_M_HEAD)) {
        int64_t t = s3_parse_http_time(ims);
        if (t >= 0 && mt <= t)
            return 304;
    }
    return 0;
}

/* ---- GET / HEAD ---- */

static void add_obj_headers(struct sl_req *r, const struct sl_objmd *md)
{
    char t[64];
    s3_http_time(md->mtime, t, sizeof(t));
    sl_hdr_addf(r, "ETag", "\"%s\"", obj_etag(md));
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
    const char *mp = sl_objmd_get_custom(md, "s3.mp");
    if (mp && sl_req_query(r, "partNumber"))
        sl_hdr_add(r, "x-amz-mp-parts-count", mp);
}

/* ?partNumber=N: the part's bytes. 1 a part of a multipart object, 0 the
 * whole object (part 1 of a plain one), -1 no such part, -2 sizes unknown */
static int part_range(const struct sl_objmd *md, const char *pn, uint64_t *off, uint64_t *len)
{
    char *e;
    long n = strtol(pn, &e, 10);
    if (!*pn || *e || n < 1 || n > 10000)
        return -1;
    const char *mp = sl_objmd_get_custom(md, "s3.mp");
    if (!mp)
        return n == 1 ? 0 : -1;
    long parts = atol(mp);
    if (n > parts)
        return -1;
    const char *sz = sl_objmd_get_custom(md, "s3.mpsz");
    const char *list = sl_objmd_get_custom(md, "s3.mpsizes");
    if (sz) {
        uint64_t z = strtoull(sz, NULL, 10);
        *off = (uint64_t)(n - 1) * z;
        *len = n < parts ? z : md->size - *off;
    } else if (list) {
        uint64_t o = 0, l = 0;
        const char *p = list;
        for (long i = 1; i <= n && *p; i++) {
            l = strtoull(p, &e, 10);
            if (i < n)
                o += l;
            p = *e == ',' ? e + 1 : e;
        }
        *off = o;
        *len = l;
    } else {
        return -2;
    }
    if (*off + *len > md->size || !*len)
        return -1;
    return 1;
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
    if (err->code == SL_ENOOBJ || err->code == SL_ENOENT)
        s3_err(r, 404, "NoSuchKey", "The specified key does not exist.");
    else
        s3_err_sl(r, err);
}

static void get_serve(struct sl_req *r, const struct sl_bck *b, const char *key, size_t klen, struct sl_read *rd)
{
    const char *etag = obj_etag(&rd->md);
    struct sl_objmd *md = &rd->md;
    int c = conditions(r, "", etag, md->mtime, true);
    const char *pn = sl_req_query(r, "partNumber");
    if (c == 412) {
        s3_err(r, 412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold");
    } else if (c == 304) {
        sl_hdr_addf(r, "ETag", "\"%s\"", etag);
        sl_resp_empty(r, 304);
    } else {
        uint64_t off = 0, len = md->size;
        int rg = 0;
        if (pn) {
            int pr = part_range(md, pn, &off, &len);
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
            int status = rg ? 206 : 200;
            if (rg)
                sl_hdr_addf(r, "Content-Range", "bytes %llu-%llu/%llu", (unsigned long long)off,
                            (unsigned long long)(off + len - 1), (unsigned long long)md->size);
            if (r->method == SL_M_HEAD) {
                sl_resp_head(r, status, len);
            } else {
                if (rd->from == SL_READ_HERE)
                    sl_store_touch(b->bid, key, klen);
                sl_resp_fd(r, status, rd->fd, off, len, NULL);
                rd->fd = -1;
            }
        }
    }
done:
    sl_read_done(rd);
}

static const struct sl_read_ops get_ops = { .serve = get_serve, .fail = get_fail };

static void get_obj(struct sl_req *r, const struct s3req *q, const struct sl_bck *b)
{
    sl_read_req(r, b, q->key, q->klen, sl_read_flags(r, b), &get_ops);
}

/* ---- PUT object / part ---- */

static void put_answer(struct sl_req *r, struct s3put *u, const char *etag_hex, const char *xc_got)
{
    sl_hdr_addf(r, "ETag", "\"%s\"", etag_hex);
    if (xc_got && xc_got[0]) {
        char h[64];
        snprintf(h, sizeof(h), "x-amz-checksum-%s", u->xc_name);
        sl_hdr_add(r, h, xc_got);
    }
    sl_resp_empty(r, 200);
}

/* multipart bookkeeping: the S3 side of an upload (its metadata and each
 * part's MD5 and size), next to upload.c's own state */
struct s3part {
    int no;
    uint64_t size;
    char md5[33];
    int64_t at;
};

struct s3upload {
    char id[80];
    uint64_t bid;
    char *key;
    size_t klen;
    struct kvs meta;
    struct s3part *parts;
    int nparts;
    int64_t created, last;      /* unix ns */
    struct s3upload *next;
};

static pthread_mutex_t up_mu = PTHREAD_MUTEX_INITIALIZER;
static struct s3upload *uploads;

static struct s3upload *up_find(const char *id) /* up_mu held */
{
    for (struct s3upload *u = uploads; u; u = u->next)
        if (!strcmp(u->id, id))
            return u;
    return NULL;
}

static void up_drop(const char *id)
{
    pthread_mutex_lock(&up_mu);
    for (struct s3upload **pp = &uploads; *pp; pp = &(*pp)->next) {
        if (!strcmp((*pp)->id, id)) {
            struct s3upload *u = *pp;
            *pp = u->next;
            kv_free(&u->meta);
            free(u->parts);
            free(u->key);
            free(u);
            break;
        }
    }
    pthread_mutex_unlock(&up_mu);
}

/* A part is in: its size and MD5 for Complete and ListParts. */
static void record_part(const char *id, int partno, uint64_t size, const char *etag)
{
    pthread_mutex_lock(&up_mu);
    struct s3upload *up = up_find(id);
    if (up) {
        int i;
        for (i = 0; i < up->nparts && up->parts[i].no != partno; i++)
            ;
        if (i == up->nparts) {
            up->parts = sl_xrealloc(up->parts, (size_t)(up->nparts + 1) * sizeof(*up->parts));
            up->nparts++;
        }
        up->parts[i].no = partno;
        up->parts[i].size = size;
        up->parts[i].at = up->last = sl_now_ns();
        snprintf(up->parts[i].md5, sizeof(up->parts[i].md5), "%s", etag);
    }
    pthread_mutex_unlock(&up_mu);
}

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
        snprintf(xc_got, sizeof(xc_got), "%s", u->xc_want[0] ? u->xc_want : u->ck.trailer_val);
    if (u->part) {
        struct sl_mpt_part *part = u->part;
        u->part = NULL;
        if (sl_mpt_part_end(part, true, &err) < 0) {
            s3_err_sl(r, &err);
            return;
        }
        record_part(u->upload_id, u->partno, u->decoded, etag);
        put_answer(r, u, etag, xc_got);
        return;
    }
    struct sl_put *p = u->p;
    u->p = NULL;
    sl_put_set_custom(p, "ETag", etag); /* known now, published with the object */
    if (sl_put_commit(p, NULL, &err) < 0) {
        s3_err_sl(r, &err);
        return;
    }
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

/* ---- CopyObject: PUT with x-amz-copy-source, on the destination's target ---- */

struct copy_job {
    struct sl_bck dst, src;
    char *dkey, *skey;
    size_t dklen, sklen;
    bool replace;
    struct kvs meta;              /* REPLACE: the request's metadata */
    bool part;                    /* UploadPartCopy: into part partno of upload id */
    char id[80];
    int partno;
    bool ranged;                  /* x-amz-copy-source-range: bytes [roff, roff + rlen) */
    uint64_t roff, rlen;
};

static void copy_free(void *arg)
{
    struct copy_job *j = arg;
    sl_bck_release(&j->dst);
    sl_bck_release(&j->src);
    free(j->dkey);
    free(j->skey);
    kv_free(&j->meta);
    free(j);
}

struct copy_src {                 /* a source read from its own target */
    struct sl_req *r;
    const struct copy_job *j;
    struct sl_put *p;
    struct sl_mpt_part *mp;       /* a part: begun once its size is known */
    int64_t clen;                 /* the source's Content-Length as its target sent it */
    bool begin_failed, range_bad;
    struct sl_err werr;
    EVP_MD_CTX *md5;
    struct kvs custom;
    char etag[160];
    int64_t mtime;
    bool checked, refused;
    int status;
};

static void copy_hdr(void *ctx, const char *name, const char *value)
{
    struct copy_src *c = ctx;
    if (!strcasecmp(name, "Ais-Custom-Md")) {
        const char *eq = strchr(value, '=');
        if (eq) {
            char *k = sl_xstrndup(value, (size_t)(eq - value));
            if (!strcmp(k, "ETag"))
                snprintf(c->etag, sizeof(c->etag), "%s", eq + 1);
            kv_add(&c->custom, k, eq + 1);
            free(k);
        }
    } else if (!strcasecmp(name, "Ais-Checksum-Value") && !c->etag[0]) {
        snprintf(c->etag, sizeof(c->etag), "%s", value);
    } else if (!strcasecmp(name, "Ais-Atime")) {
        c->mtime = strtoll(value, NULL, 10);
    } else if (!strcasecmp(name, "Content-Length")) {
        c->clen = strtoll(value, NULL, 10);
    }
}

static int part_begin(struct copy_src *c, uint64_t size, struct sl_err *err)
{
    char pn[16];
    snprintf(pn, sizeof(pn), "%d", c->j->partno);
    if (sl_mpt_part_begin(&c->j->dst, c->j->dkey, c->j->dklen, c->j->id, pn, (int64_t)size, &c->mp, err) < 0) {
        c->begin_failed = true;
        return -1;
    }
    return 0;
}

static int dst_write(struct copy_src *c, const void *data, size_t n, struct sl_err *err)
{
    EVP_DigestUpdate(c->md5, data, n);
    return c->j->part ? sl_mpt_part_write(c->mp, data, n, err) : sl_put_write(c->p, data, n, err);
}

static void dst_abort(struct copy_src *c)
{
    if (c->mp) {
        struct sl_err e = { 0 };
        sl_mpt_part_end(c->mp, false, &e);
        c->mp = NULL;
    }
    if (c->p) {
        sl_put_abort(c->p);
        c->p = NULL;
    }
}

static int copy_sink(void *ctx, const char *data, size_t n)
{
    struct copy_src *c = ctx;
    if (!c->checked) {
        c->checked = true;
        if (conditions(c->r, "x-amz-copy-source-", c->etag, c->mtime, true)) {
            c->refused = true;
            return -1;
        }
    }
    if (c->j->ranged && c->clen != (int64_t)c->j->rlen) { /* its target clamped the range: past the end */
        c->range_bad = true;
        return -1;
    }
    if (c->j->part && !c->mp && (c->clen <= 0 || part_begin(c, (uint64_t)c->clen, &c->werr) < 0)) {
        if (c->clen <= 0)
            sl_errf(&c->werr, SL_EINVAL, "the copy source's length is unknown");
        c->begin_failed = true;
        return -1;
    }
    return dst_write(c, data, n, &c->werr);
}

static void copy_run(struct sl_req *r, void *arg)
{
    struct copy_job *j = arg;
    struct sl_err err = { 0 };
    struct copy_src c = { .r = r, .j = j, .clen = -1 };
    c.md5 = EVP_MD_CTX_new();
    EVP_DigestInit_ex(c.md5, EVP_md5(), NULL);
    struct sl_smap *s = sl_smap_get();
    /* the source is read where the read path serves it (cluster/read.h) */
    bool local = sl_read_here(s, &j->src, j->skey, j->sklen);
    const struct sl_snode *owner = local ? NULL : sl_read_target(s, &j->src, j->skey, j->sklen);
    int fd = -1;
    struct sl_objmd md;
    memset(&md, 0, sizeof(md));
    if (local) {
        if (sl_read_obj(&j->src, j->skey, j->sklen, &fd, &md, &err) < 0) {
            if (err.code == SL_ENOOBJ || err.code == SL_ENOENT)
                s3_err(r, 404, "NoSuchKey", "The specified key does not exist (the copy source)");
            else
                s3_err_sl(r, &err);
            goto out;
        }
        snprintf(c.etag, sizeof(c.etag), "%s", obj_etag(&md));
        c.mtime = md.mtime;
        c.checked = true;
        if (conditions(r, "x-amz-copy-source-", c.etag, c.mtime, true)) {
            s3_err(r, 412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold "
                   "(x-amz-copy-source-if-*)");
            goto out;
        }
        for (int i = 0; i < md.ncustom; i++)
            kv_add(&c.custom, md.custom[i].k, md.custom[i].v);
    } else if (!owner) {
        s3_err(r, 503, "ServiceUnavailable", "the cluster has no active targets; retry later");
        goto out;
    }
    /* the new object's metadata: the source's (COPY) or the request's (REPLACE); the ETag is computed */
    struct kvs *use = j->replace ? &j->meta : &c.custom;
    struct sl_put_opts o = { .client_cktype = -1, .expect_size = local ? (int64_t)md.size : -1 };
    struct kvs keep = { 0 };
    if (local || j->replace) {
        for (int i = 0; i < use->n; i++)
            if (strcmp(use->kv[i].k, "ETag") && strcmp(use->kv[i].k, "s3.mp") && strcmp(use->kv[i].k, "orig_fntl"))
                kv_add(&keep, use->kv[i].k, use->kv[i].v);
        o.custom = keep.kv;
        o.ncustom = keep.n;
    }
    if (!j->part && sl_put_begin(&j->dst, j->dkey, j->dklen, &o, &c.p, &err) < 0) {
        kv_free(&keep);
        s3_err_sl(r, &err);
        goto out;
    }
    kv_free(&keep);
    if (local) {
        uint64_t off = 0, end = md.size;
        if (j->ranged) {
            if (j->roff >= md.size || j->roff + j->rlen > md.size) {
                s3_err(r, 416, "InvalidRange", "x-amz-copy-source-range is outside the source (%llu bytes)",
                       (unsigned long long)md.size);
                goto out;
            }
            off = j->roff;
            end = j->roff + j->rlen;
        }
        if (j->part && part_begin(&c, end - off, &err) < 0) {
            s3_err(r, err.code == SL_ENOENT ? 404 : 400, err.code == SL_ENOENT ? "NoSuchUpload" : "InvalidRequest",
                   "%s", err.msg);
            goto out;
        }
        char *buf = sl_xmalloc(256 * 1024);
        while (off < end) {
            size_t want = end - off < 256 * 1024 ? (size_t)(end - off) : 256 * 1024;
            ssize_t n = pread(fd, buf, want, (off_t)off);
            if (n <= 0) {
                sl_errf(&err, SL_EIO, "reading the copy source: %s", n < 0 ? strerror(errno) : "short file");
                break;
            }
            if (dst_write(&c, buf, (size_t)n, &err) < 0)
                break;
            off += (uint64_t)n;
        }
        free(buf);
        if (off < end) {
            dst_abort(&c);
            s3_err_sl(r, &err);
            goto out;
        }
    } else {
        struct sl_buf url;
        sl_buf_init(&url);
        sl_peer_obj_url(&url, owner->url, j->src.name, "ais", j->skey, j->sklen);
        struct sl_peer_resp pr = { 0 };
        char rh[80];
        struct sl_peer_hdr h = { "Range", rh };
        snprintf(rh, sizeof(rh), "bytes=%llu-%llu", (unsigned long long)j->roff,
                 (unsigned long long)(j->roff + j->rlen - 1));
        int rc = sl_peer_get_stream(url.p, j->ranged ? &h : NULL, j->ranged ? 1 : 0, copy_sink, copy_hdr, &c, 0, &pr);
        sl_buf_free(&url);
        bool okst = pr.status == 200 || (j->ranged && pr.status == 206);
        if (rc == 0 && okst && !c.checked &&
            conditions(r, "x-amz-copy-source-", c.etag, c.mtime, true)) /* an empty source */
            c.refused = true;
        if (rc == 0 && okst && j->part && !c.mp && !c.refused && !c.begin_failed) {
            c.begin_failed = true; /* an empty source: a part needs a byte */
            sl_errf(&c.werr, SL_EINVAL, "the copy source is empty: a part needs at least one byte");
        }
        if (c.refused || c.begin_failed || c.range_bad || rc < 0 || !okst) {
            dst_abort(&c);
            if (c.range_bad)
                s3_err(r, 416, "InvalidRange", "x-amz-copy-source-range is outside the source");
            else if (c.refused)
                s3_err(r, 412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold "
                       "(x-amz-copy-source-if-*)");
            else if (c.begin_failed)
                s3_err(r, c.werr.code == SL_ENOENT ? 404 : 400,
                       c.werr.code == SL_ENOENT ? "NoSuchUpload" : "InvalidRequest", "%s", c.werr.msg);
            else if (pr.status == 404)
                s3_err(r, 404, "NoSuchKey", "The specified key does not exist (the copy source)");
            else if (pr.status == 416)
                s3_err(r, 416, "InvalidRange", "x-amz-copy-source-range is outside the source");
            else
                s3_err(r, 503, "ServiceUnavailable", "reading the copy source from t[%s]: %s", owner->id, pr.err);
            sl_peer_resp_free(&pr);
            goto out;
        }
        sl_peer_resp_free(&pr);
        if (!j->replace && !j->part) /* the source's metadata came with its bytes */
            for (int i = 0; i < c.custom.n; i++)
                if (strcmp(c.custom.kv[i].k, "ETag") && strcmp(c.custom.kv[i].k, "s3.mp"))
                    sl_put_set_custom(c.p, c.custom.kv[i].k, c.custom.kv[i].v);
    }
    unsigned char d[16];
    unsigned dn = 0;
    char etag[33];
    EVP_DigestFinal_ex(c.md5, d, &dn);
    sl_hex(d, 16, etag);
    if (j->part) {
        struct sl_mpt_part *mp = c.mp;
        c.mp = NULL;
        uint64_t size = j->ranged ? j->rlen : local ? md.size : (uint64_t)c.clen;
        if (sl_mpt_part_end(mp, true, &err) < 0) {
            s3_err_sl(r, &err);
            goto out;
        }
        record_part(j->id, j->partno, size, etag);
        char t[64];
        s3_iso_time(sl_now_ns(), t, sizeof(t));
        struct sl_buf x;
        sl_buf_init(&x);
        sl_buf_printf(&x, "<CopyPartResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LastModified>%s"
                      "</LastModified><ETag>&quot;%s&quot;</ETag></CopyPartResult>", t, etag);
        s3_xml(r, 200, &x);
        goto out;
    }
    sl_put_set_custom(c.p, "ETag", etag);
    struct sl_objmd out;
    memset(&out, 0, sizeof(out));
    struct sl_put *p = c.p;
    c.p = NULL;
    if (sl_put_commit(p, &out, &err) < 0) {
        s3_err_sl(r, &err);
        goto out;
    }
    char t[64];
    s3_iso_time(out.mtime, t, sizeof(t));
    sl_objmd_free(&out);
    struct sl_buf x;
    sl_buf_init(&x);
    sl_buf_printf(&x, "<CopyObjectResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LastModified>%s"
                  "</LastModified><ETag>&quot;%s&quot;</ETag></CopyObjectResult>", t, etag);
    s3_xml(r, 200, &x);
out:
    dst_abort(&c);
    if (fd >= 0)
        close(fd);
    if (local)
        sl_objmd_free(&md);
    EVP_MD_CTX_free(c.md5);
    kv_free(&c.custom);
    sl_smap_put(s);
    copy_free(j);
}

static void copy_cancel(void *arg)
{
    copy_free(arg);
}

static void copy_object(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, const char *src,
                        const char *upload_id, int partno)
{
    size_t sl = strlen(src);
    char *tmp = sl_xmalloc(sl + 1);
    size_t dl = sl_url_decode(src, sl, tmp, false);
    char *s = tmp;
    if (memchr(s, 0, dl)) {
        free(tmp);
        s3_err(r, 400, "InvalidArgument", "x-amz-copy-source holds a NUL byte");
        return;
    }
    char *qm = strstr(s, "?versionId=");
    if (qm) {
        if (strcmp(qm + 11, "null")) {
            free(tmp);
            s3_err(r, 501, "NotImplemented", "copying a version (versionId) is not implemented: Shale buckets keep "
                   "one version");
            return;
        }
        *qm = 0;
    }
    if (*s == '/')
        s++;
    char *slash = strchr(s, '/');
    if (!slash || slash == s || !slash[1]) {
        free(tmp);
        s3_err(r, 400, "InvalidArgument", "x-amz-copy-source must be BUCKET/KEY (URL-encoded)");
        return;
    }
    *slash = 0;
    const char *dir = sl_req_header(r, "x-amz-metadata-directive");
    if (dir && strcmp(dir, "COPY") && strcmp(dir, "REPLACE")) {
        free(tmp);
        s3_err(r, 400, "InvalidArgument", "Unknown metadata directive \"%s\" (COPY or REPLACE)", dir);
        return;
    }
    bool replace = dir && !strcmp(dir, "REPLACE");
    const char *skey = slash + 1;
    size_t sklen = strlen(skey);
    struct sl_err err = { 0 };
    if (sklen > 1024 || sl_objname_check(skey, sklen, &err) < 0) {
        free(tmp);
        s3_err(r, 400, "InvalidArgument", "x-amz-copy-source: the source key is not valid");
        return;
    }
    struct copy_job *j = sl_xcalloc(1, sizeof(*j));
    if (sl_bck_resolve(s, "ais", NULL, &j->src, &err) < 0) {
        free(tmp);
        free(j);
        s3_err(r, 404, "NoSuchBucket", "The specified bucket does not exist (the copy source's)");
        return;
    }
    if (upload_id) {
        j->part = true;
        snprintf(j->id, sizeof(j->id), "%s", upload_id);
        j->partno = partno;
        const char *rg = sl_req_header(r, "x-amz-copy-source-range");
        if (rg) {
            unsigned long long a, z;
            char tail;
            if (strncmp(rg, "bytes=", 6) || strchr(rg, ',') || sscanf(rg + 6, "%llu-%llu%c", &a, &z, &tail) != 2 ||
                strspn(rg + 6, "0123456789-") != strlen(rg + 6) || z < a) {
                sl_bck_release(&j->src);
                free(tmp);
                free(j);
                s3_err(r, 400, "InvalidArgument", "x-amz-copy-source-range must be bytes=FIRST-LAST (got \"%s\")",
                       rg);
                return;
            }
            j->ranged = true;
            j->roff = a;
            j->rlen = z - a + 1;
        }
    } else if (!replace && !strcmp(j->src.name, b->name) && sklen == q->klen && !memcmp(skey, q->key, sklen)) {
        sl_bck_release(&j->src);
        free(tmp);
        free(j);
        s3_err(r, 400, "InvalidRequest", "This copy request is illegal because it is trying to copy an object to "
               "itself without changing the object's metadata, storage class, website redirect location or "
               "encryption attributes.");
        return;
    }
    sl_bck_copy(&j->dst, b);
    j->skey = sl_xstrndup(skey, sklen);
    j->sklen = sklen;
    j->dkey = sl_xstrndup(q->key, q->klen);
    j->dklen = q->klen;
    j->replace = replace;
    if (replace)
        collect_meta(r, &j->meta);
    free(tmp);
    if (j->meta.bytes > S3_META_MAX) {
        copy_cancel(j);
        s3_err(r, 400, "MetadataTooLarge", "Your metadata headers exceed the maximum allowed metadata size (%d "
               "bytes)", S3_META_MAX);
        return;
    }
    sl_req_offload(r, copy_run, copy_cancel, j);
}

static void put_obj(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, const struct s3auth *au)
{
    const char *cs = sl_req_header(r, "x-amz-copy-source");
    if (cs) {
        copy_object(r, q, b, cs, NULL, 0);
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
        int c = conditions(r, "", st ? obj_etag(&md) : "", md.mtime, st == 1);
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
    collect_meta(r, &m);
    if (m.bytes > S3_META_MAX) {
        kv_free(&m);
        put_free(u);
        s3_err(r, 400, "MetadataTooLarge", "Your metadata headers exceed the maximum allowed metadata size (%d "
               "bytes)", S3_META_MAX);
        return;
    }
    struct sl_put_opts o = { .client_cktype = -1, .custom = m.kv, .ncustom = m.n, .expect_size = u->expect };
    if (sl_put_begin(b, q->key, q->klen, &o, &u->p, &err) < 0) {
        kv_free(&m);
        put_free(u);
        s3_err_sl(r, &err);
        return;
    }
    kv_free(&m);
    r->ctx = u;
    r->on_cleanup = put_cleanup;
    sl_req_stream_body(r, put_data, put_done);
}

/* ---- multipart ---- */

/* "<ROOT xmlns=...><Bucket>B</Bucket><Key>K</Key><UploadId>ID</UploadId>": how the
 * answers about one multipart upload begin. */
static void upload_xml_head(struct sl_buf *x, const char *root, const struct sl_bck *b, const struct s3req *q,
                            const char *id)
{
    sl_buf_printf(x, "<%s xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Bucket>", root);
    s3_xml_esc(x, b->name, strlen(b->name));
    sl_buf_adds(x, "</Bucket><Key>");
    s3_xml_esc(x, q->key, q->klen);
    sl_buf_adds(x, "</Key><UploadId>");
    s3_xml_esc(x, id, strlen(id));
    sl_buf_adds(x, "</UploadId>");
}

static void create_upload(struct sl_req *r, const struct s3req *q, const struct sl_bck *b)
{
    char id[80];
    struct sl_err err = { 0 };
    struct kvs meta = { 0 };
    collect_meta(r, &meta);
    if (meta.bytes > S3_META_MAX) {
        kv_free(&meta);
        s3_err(r, 400, "MetadataTooLarge", "Your metadata headers exceed the maximum allowed metadata size (%d "
               "bytes)", S3_META_MAX);
        return;
    }
    if (sl_mpt_create(b, q->key, q->klen, id, sizeof(id), &err) < 0) {
        kv_free(&meta);
        s3_err_sl(r, &err);
        return;
    }
    struct s3upload *up = sl_xcalloc(1, sizeof(*up));
    snprintf(up->id, sizeof(up->id), "%s", id);
    up->bid = b->bid;
    up->key = sl_xstrndup(q->key, q->klen);
    up->klen = q->klen;
    up->meta = meta;
    up->created = up->last = sl_now_ns();
    pthread_mutex_lock(&up_mu);
    /* upload.c drops an upload left alone for UPLOAD_IDLE_S: so does this list */
    for (struct s3upload **pp = &uploads; *pp;) {
        struct s3upload *o = *pp;
        if (up->created - o->last > (int64_t)UPLOAD_IDLE_S * 1000000000LL) {
            *pp = o->next;
            kv_free(&o->meta);
            free(o->parts);
            free(o->key);
            free(o);
        } else {
            pp = &o->next;
        }
    }
    up->next = uploads;
    uploads = up;
    pthread_mutex_unlock(&up_mu);
    struct sl_buf x;
    sl_buf_init(&x);
    upload_xml_head(&x, "InitiateMultipartUploadResult", b, q, id);
    sl_buf_adds(&x, "</InitiateMultipartUploadResult>");
    s3_xml(r, 200, &x);
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
    pthread_mutex_lock(&up_mu);
    bool known = up_find(id) != NULL;
    pthread_mutex_unlock(&up_mu);
    if (!known) {
        s3_err(r, 404, "NoSuchUpload", "The specified upload does not exist (it was completed, aborted, or never "
               "started on this cluster)");
        return;
    }
    const char *cs = sl_req_header(r, "x-amz-copy-source");
    if (cs) { /* UploadPartCopy */
        copy_object(r, q, b, cs, id, (int)no);
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

struct cpl_parse {
    int *nos;
    char (*etags)[80];
    int n, cap;
    int cur_no;
    char cur_etag[80];
    bool bad;
};

static void cpl_end(void *arg, const char *parent, const char *name, const char *text)
{
    struct cpl_parse *c = arg;
    if (!strcmp(parent, "Part") && !strcmp(name, "PartNumber")) {
        c->cur_no = atoi(text);
    } else if (!strcmp(parent, "Part") && !strcmp(name, "ETag")) {
        const char *t = text;
        size_t l = strlen(t);
        if (l >= 2 && t[0] == '"' && t[l - 1] == '"') {
            t++;
            l -= 2;
        }
        snprintf(c->cur_etag, sizeof(c->cur_etag), "%.*s", (int)SL_MIN(l, 79), t);
    } else if (!strcmp(name, "Part")) {
        if (c->n >= 10000) {
            c->bad = true;
            return;
        }
        if (c->n == c->cap) {
            c->cap = c->cap ? c->cap * 2 : 16;
            c->nos = sl_xrealloc(c->nos, (size_t)c->cap * sizeof(int));
            c->etags = sl_xrealloc(c->etags, (size_t)c->cap * sizeof(*c->etags));
        }
        c->nos[c->n] = c->cur_no;
        snprintf(c->etags[c->n], 80, "%s", c->cur_etag);
        c->n++;
        c->cur_no = 0;
        c->cur_etag[0] = 0;
    }
}

/* Completed uploads, kept a while: completing again answers the same (S3 does; s3-tests checks it). */
#define DONE_KEEP 256
#define DONE_TTL_NS (15 * 60 * 1000000000LL)

struct done_up {
    char id[80];
    uint64_t bid;
    char *key;
    char etag[48];
    int64_t at;
};

static struct done_up done_ups[DONE_KEEP];
static int done_next;

static void done_add(const struct sl_bck *b, const char *key, size_t klen, const char *id, const char *etag)
{
    pthread_mutex_lock(&up_mu);
    struct done_up *d = &done_ups[done_next++ % DONE_KEEP];
    free(d->key);
    snprintf(d->id, sizeof(d->id), "%s", id);
    d->bid = b->bid;
    d->key = sl_xstrndup(key, klen);
    snprintf(d->etag, sizeof(d->etag), "%s", etag);
    d->at = sl_mono_ns();
    pthread_mutex_unlock(&up_mu);
}

static void complete_xml(struct sl_req *r, const struct sl_bck *b, const char *key, size_t klen, const char *etag)
{
    struct sl_buf x;
    sl_buf_init(&x);
    sl_buf_adds(&x, "<CompleteMultipartUploadResult xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><Location>");
    s3_xml_esc(&x, key, klen);
    sl_buf_adds(&x, "</Location><Bucket>");
    s3_xml_esc(&x, b->name, strlen(b->name));
    sl_buf_adds(&x, "</Bucket><Key>");
    s3_xml_esc(&x, key, klen);
    sl_buf_printf(&x, "</Key><ETag>&quot;%s&quot;</ETag></CompleteMultipartUploadResult>", etag);
    s3_xml(r, 200, &x);
}

/* true when id completed recently for this object (answered) */
static bool done_find(const struct sl_bck *b, const char *key, size_t klen, const char *id, struct sl_req *r)
{
    char etag[48] = "";
    pthread_mutex_lock(&up_mu);
    for (int i = 0; i < DONE_KEEP; i++) {
        struct done_up *d = &done_ups[i];
        if (d->key && !strcmp(d->id, id) && d->bid == b->bid && strlen(d->key) == klen && !memcmp(d->key, key, klen) &&
            sl_mono_ns() - d->at < DONE_TTL_NS)
            snprintf(etag, sizeof(etag), "%s", d->etag);
    }
    pthread_mutex_unlock(&up_mu);
    if (!etag[0])
        return false;
    complete_xml(r, b, key, klen, etag);
    return true;
}

struct cpl_job {
    struct sl_bck b;
    char *key;
    size_t klen;
    char id[80];
};

static void complete_run(struct sl_req *r, void *arg)
{
    struct cpl_job *j = arg;
    struct cpl_parse c = { 0 };
    struct sl_err err = { 0 };
    if (s3_xml_parse(r->body.p ? r->body.p : "", r->body.len, cpl_end, &c) < 0 || c.bad || !c.n) {
        s3_err(r, 400, "MalformedXML", "The XML you provided was not well-formed or did not validate against our "
               "published schema (CompleteMultipartUpload with 1 to 10000 Part elements)");
        goto out;
    }
    for (int i = 1; i < c.n; i++)
        if (c.nos[i] <= c.nos[i - 1]) {
            s3_err(r, 400, "InvalidPartOrder", "The list of parts was not in ascending order (part %d after %d)",
                   c.nos[i], c.nos[i - 1]);
            goto out;
        }
    pthread_mutex_lock(&up_mu);
    struct s3upload *up = up_find(j->id);
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_md5(), NULL);
    int status = 0;
    char msg[300] = "";
    for (int i = 0; up && i < c.n && !status; i++) {
        struct s3part *p = NULL;
        for (int k = 0; k < up->nparts; k++)
            if (up->parts[k].no == c.nos[i])
                p = &up->parts[k];
        if (!p || strcmp(p->md5, c.etags[i])) {
            status = 400;
            snprintf(msg, sizeof(msg), "part %d: %s", c.nos[i], p ? "its ETag is not the one listed" :
                     "it was not uploaded");
        } else if (i < c.n - 1 && p->size < 5 * 1024 * 1024) {
            status = -400;
            snprintf(msg, sizeof(msg), "part %d has %llu bytes; every part but the last needs at least 5 MiB",
                     c.nos[i], (unsigned long long)p->size);
        } else {
            unsigned char d[16];
            hex2bin(p->md5, d, 16);
            EVP_DigestUpdate(md, d, 16);
        }
    }
    if (!status && up && up->nparts != c.n) {
        status = 400;
        snprintf(msg, sizeof(msg), "%d parts were uploaded and %d listed: this Shale S3 front end completes an "
                 "upload with all its parts", up->nparts, c.n);
    }
    unsigned char d[16];
    unsigned dn = 0;
    EVP_DigestFinal_ex(md, d, &dn);
    EVP_MD_CTX_free(md);
    struct kvs meta = { 0 };
    if (up)
        for (int i = 0; i < up->meta.n; i++)
            kv_add(&meta, up->meta.kv[i].k, up->meta.kv[i].v);
    if (up && !status) { /* part sizes, for GET ?partNumber= */
        uint64_t first = 0;
        bool equal = true;
        struct sl_buf sizes;
        sl_buf_init(&sizes);
        for (int i = 0; i < c.n; i++)
            for (int k = 0; k < up->nparts; k++)
                if (up->parts[k].no == c.nos[i]) {
                    if (!i)
                        first = up->parts[k].size;
                    else if (i < c.n - 1 && up->parts[k].size != first)
                        equal = false;
                    sl_buf_printf(&sizes, "%s%llu", i ? "," : "", (unsigned long long)up->parts[k].size);
                }
        char z[32];
        snprintf(z, sizeof(z), "%llu", (unsigned long long)first);
        if (equal && (c.n == 1 || first > 0))
            kv_add(&meta, "s3.mpsz", z);
        else if (c.n <= 256 && sizes.p)
            kv_add(&meta, "s3.mpsizes", sizes.p);
        sl_buf_free(&sizes);
    }
    pthread_mutex_unlock(&up_mu);
    if (!up && done_find(&j->b, j->key, j->klen, j->id, r)) /* completed already: the same answer again */
        goto out_meta;
    if (!up) {
        s3_err(r, 404, "NoSuchUpload", "The specified upload does not exist (completed, aborted or unknown)");
    } else if (status == 400) {
        s3_err(r, 400, "InvalidPart", "One or more of the specified parts could not be found or did not match: %s",
               msg);
    } else if (status) {
        s3_err(r, 400, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed size: %s", msg);
    } else {
        json_t *parts = json_array();
        for (int i = 0; i < c.n; i++)
            json_array_append_new(parts, json_pack("{s:i,s:s}", "part-number", c.nos[i], "etag", ""));
        struct sl_objmd out;
        memset(&out, 0, sizeof(out));
        int rc = sl_mpt_complete(&j->b, j->key, j->klen, j->id, parts, &out, &err);
        json_decref(parts);
        if (rc < 0) {
            s3_err_sl(r, &err);
        } else {
            char etag[48], n[16];
            sl_hex(d, 16, etag);
            snprintf(etag + 32, sizeof(etag) - 32, "-%d", c.n);
            snprintf(n, sizeof(n), "%d", c.n);
            kv_add(&meta, "ETag", etag);
            kv_add(&meta, "s3.mp", n);
            if (sl_obj_set_custom(&j->b, j->key, j->klen, meta.kv, meta.n, false, &err) < 0)
                sl_logw("s3 complete %s/%.*s: metadata not set: %s", j->b.name, (int)SL_MIN(j->klen, 200), j->key,
                        err.msg);
            sl_objmd_free(&out);
            up_drop(j->id);
            done_add(&j->b, j->key, j->klen, j->id, etag);
            complete_xml(r, &j->b, j->key, j->klen, etag);
        }
    }
out_meta:
    kv_free(&meta);
out:
    free(c.nos);
    free(c.etags);
    sl_bck_release(&j->b);
    free(j->key);
    free(j);
}

static void cpl_cancel(void *arg)
{
    struct cpl_job *j = arg;
    sl_bck_release(&j->b);
    free(j->key);
    free(j);
}

static void complete_body(struct sl_req *r)
{
    s3_body_offload(r, complete_run, cpl_cancel);
}

static void complete_upload(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, const char *id)
{
    struct cpl_job *j = sl_xcalloc(1, sizeof(*j));
    sl_bck_copy(&j->b, b);
    j->key = sl_xstrndup(q->key, q->klen);
    j->klen = q->klen;
    snprintf(j->id, sizeof(j->id), "%s", id);
    r->ctx = j;
    sl_req_buffer_body(r, 4 * 1024 * 1024, complete_body);
}

static void abort_upload(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, const char *id)
{
    struct sl_err err = { 0 };
    if (sl_mpt_abort(b, q->key, q->klen, id, &err) < 0) {
        s3_err(r, 404, "NoSuchUpload", "The specified upload does not exist: %s", err.msg);
        return;
    }
    up_drop(id);
    sl_resp_empty(r, 204);
}

static int part_cmp_no(const void *a, const void *b)
{
    return ((const struct s3part *)a)->no - ((const struct s3part *)b)->no;
}

/* ListParts: GET ?uploadId=U[&max-parts&part-number-marker] */
static void list_parts(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, const char *id)
{
    const char *mp = sl_req_query(r, "max-parts"), *pm = sl_req_query(r, "part-number-marker");
    char *e;
    long maxp = mp ? strtol(mp, &e, 10) : 1000, marker = pm ? strtol(pm, &e, 10) : 0;
    if ((mp && (!*mp || maxp < 0)) || (pm && (!*pm || marker < 0))) {
        s3_err(r, 400, "InvalidArgument", "max-parts and part-number-marker must be non-negative integers");
        return;
    }
    if (maxp > 1000)
        maxp = 1000;
    pthread_mutex_lock(&up_mu);
    struct s3upload *up = up_find(id);
    if (!up || up->bid != b->bid || up->klen != q->klen || memcmp(up->key, q->key, q->klen)) {
        pthread_mutex_unlock(&up_mu);
        s3_err(r, 404, "NoSuchUpload", "The specified upload does not exist (completed, aborted or unknown)");
        return;
    }
    if (up->nparts)
        qsort(up->parts, (size_t)up->nparts, sizeof(*up->parts), part_cmp_no);
    struct sl_buf x;
    sl_buf_init(&x);
    upload_xml_head(&x, "ListPartsResult", b, q, id);
    sl_buf_adds(&x, "<Initiator><ID>shale</ID><DisplayName>shale</DisplayName></Initiator>"
                    "<Owner><ID>shale</ID><DisplayName>shale</DisplayName></Owner><StorageClass>STANDARD"
                    "</StorageClass>");
    sl_buf_printf(&x, "<PartNumberMarker>%ld</PartNumberMarker><MaxParts>%ld</MaxParts>", marker, maxp);
    int shown = 0, last = 0;
    bool more = false;
    struct sl_buf parts;
    sl_buf_init(&parts);
    for (int i = 0; i < up->nparts; i++) {
        struct s3part *p = &up->parts[i];
        if (p->no <= marker)
            continue;
        if (shown == maxp) {
            more = true;
            break;
        }
        char t[64];
        s3_iso_time(p->at, t, sizeof(t));
        sl_buf_printf(&parts, "<Part><PartNumber>%d</PartNumber><LastModified>%s</LastModified><ETag>&quot;%s"
                      "&quot;</ETag><Size>%llu</Size></Part>", p->no, t, p->md5, (unsigned long long)p->size);
        shown++;
        last = p->no;
    }
    pthread_mutex_unlock(&up_mu);
    if (more)
        sl_buf_printf(&x, "<NextPartNumberMarker>%d</NextPartNumberMarker>", last);
    sl_buf_printf(&x, "<IsTruncated>%s</IsTruncated>", more ? "true" : "false");
    if (parts.len)
        sl_buf_add(&x, parts.p, parts.len);
    sl_buf_free(&parts);
    sl_buf_adds(&x, "</ListPartsResult>");
    s3_xml(r, 200, &x);
}

json_t *s3_local_uploads(uint64_t bid)
{
    json_t *a = json_array();
    pthread_mutex_lock(&up_mu);
    for (struct s3upload *u = uploads; u; u = u->next)
        if (u->bid == bid)
            json_array_append_new(a, json_pack("{s:s%,s:s,s:I}", "key", u->key, u->klen, "id", u->id, "initiated",
                                               (json_int_t)u->created));
    pthread_mutex_unlock(&up_mu);
    return a;
}

/* ---- dispatch ---- */

void s3_obj(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, const struct s3auth *au)
{
    struct sl_err err = { 0 };
    if (sl_objname_check(q->key, q->klen, &err) < 0) {
        s3_err(r, 400, "InvalidArgument", "%s", err.msg);
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
                list_parts(r, q, b, id);
            return;
        }
        if (sl_req_query(r, "acl") && r->method == SL_M_GET) {
            s3_acl(r);
            return;
        }
        if (sl_req_query(r, "acl") || sl_req_query(r, "tagging") || sl_req_query(r, "versionId")) {
            s3_err(r, 501, "NotImplemented", "this object sub-resource is not implemented by this Shale S3 front "
                   "end");
            return;
        }
        r->op = r->method == SL_M_HEAD ? SL_OP_HEAD : SL_OP_GET; /* counted as native GETs and HEADs are */
        get_obj(r, q, b);
        return;
    case SL_M_PUT:
        if (id)
            put_part(r, q, b, id, au);
        else if (sl_req_query(r, "acl"))
            sl_resp_empty(r, 200);
        else if (sl_req_query(r, "tagging") || sl_req_query(r, "retention") || sl_req_query(r, "legal-hold"))
            s3_err(r, 501, "NotImplemented", "this object sub-resource is not implemented by this Shale S3 front "
                   "end");
        else {
            r->op = SL_OP_PUT;
            put_obj(r, q, b, au);
        }
        return;
    case SL_M_POST:
        if (sl_req_query(r, "uploads"))
            create_upload(r, q, b);
        else if (id)
            complete_upload(r, q, b, id);
        else
            s3_err(r, 405, "MethodNotAllowed", "POST on an object takes ?uploads or ?uploadId=");
        return;
    case SL_M_DELETE:
        if (id) {
            abort_upload(r, q, b, id);
            return;
        }
        r->op = SL_OP_DELETE;
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
