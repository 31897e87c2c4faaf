/* SPDX-License-Identifier: MIT
 * s3sse.c: server-side encryption of S3 objects (SSE-S3, SSE-C), the key
 * service SSE-S3 uses (the master key file of s3.sse_key_file), and a
 * bucket's default encryption (?encryption, props "sse"). See s3sse.h for
 * the scheme and the metadata kept, docs/s3.md for why.
 */
#include "s3sse.h"
#include "sse.h"
#include "b64.h"
#include "log.h"
#include "node.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the request's SSE-C headers ---- */

/* SSE-C headers named with pfx: 0 none, 1 a key (into key, kmd5), -1 bad (why) */
static int ssec_hdrs(struct sl_req *r, const char *pfx, unsigned char key[32], char kmd5[32], char *why, size_t wn)
{
    char h[3][128];
    pfx = *pfx ? pfx : "x-amz-"; /* x-amz-server-side-encryption-customer-*, x-amz-copy-source-server-side-... */
    snprintf(h[0], sizeof(h[0]), "%sserver-side-encryption-customer-algorithm", pfx);
    snprintf(h[1], sizeof(h[1]), "%sserver-side-encryption-customer-key", pfx);
    snprintf(h[2], sizeof(h[2]), "%sserver-side-encryption-customer-key-MD5", pfx);
    const char *alg = sl_req_header(r, h[0]), *k = sl_req_header(r, h[1]), *m = sl_req_header(r, h[2]);
    if (!alg && !k && !m)
        return 0;
    if (!alg || !k) {
        snprintf(why, wn, "SSE-C needs both %s and %s (and optionally %s)", h[0], h[1], h[2]);
        return -1;
    }
    if (strcmp(alg, "AES256")) {
        snprintf(why, wn, "%s: \"%s\" is not AES256, the one algorithm SSE-C has", h[0], alg);
        return -1;
    }
    if (s3_b64dec(k, key, 32) != 32) {
        snprintf(why, wn, "The secret key was invalid for the specified algorithm (%s must be the base64 of 32 "
                 "bytes)", h[1]);
        return -1;
    }
    unsigned char d[16], g[16];
    unsigned dn = 0;
    EVP_Digest(key, 32, d, &dn, EVP_md5(), NULL);
    if (m && (s3_b64dec(m, g, 16) != 16 || CRYPTO_memcmp(d, g, 16))) {
        snprintf(why, wn, "The calculated MD5 hash of the key did not match the hash that was provided (%s)", h[2]);
        return -1;
    }
    sl_b64_encode(d, 16, 0, kmd5);
    return 1;
}

static void ssec_mac(const unsigned char salt[16], const unsigned char key[32], char out[65])
{
    unsigned char mac[32];
    unsigned mn = 0;
    HMAC(EVP_sha256(), salt, 16, key, 32, mac, &mn);
    sl_hex(mac, 32, out);
}

/* key is the one the object's metadata (custom entries) was made with */
static bool ssec_matches(const char *salt_hex, const char *kh, const unsigned char key[32])
{
    if (!salt_hex || !kh || strlen(salt_hex) != 32 || strlen(kh) != 64)
        return false;
    unsigned char salt[16];
    char got[65];
    s3_hex2bin(salt_hex, salt, 16);
    ssec_mac(salt, key, got);
    return CRYPTO_memcmp(got, kh, 64) == 0;
}

static const char *kv_get(const struct kvs *k, const char *name)
{
    for (int i = 0; i < k->n; i++)
        if (!strcmp(k->kv[i].k, name))
            return k->kv[i].v;
    return NULL;
}

/* ---- writes ---- */

static void kv_add(void *meta, const char *k, const char *v)
{
    s3_kv_add(meta, k, v);
}

int s3_sse_new(struct sl_req *r, const struct sl_bck *b, struct sl_sse *s, struct kvs *meta)
{
    memset(s, 0, sizeof(*s));
    s->cur = -1;
    const char *h = sl_req_header(r, "x-amz-server-side-encryption");
    char why[600];
    int c = ssec_hdrs(r, "", s->key, s->kmd5, why, sizeof(why));
    if (c < 0) {
        s3_err(r, 400, "InvalidArgument", "%s; nothing was stored", why);
        return -1;
    }
    if (h && *h && c) {
        s3_err(r, 400, "InvalidArgument", "Server Side Encryption with Customer provided key is incompatible with "
               "the encryption method specified (x-amz-server-side-encryption %s); send one of them", h);
        return -1;
    }
    if (h && *h && strcmp(h, "AES256")) {
        s3_err(r, strcmp(h, "aws:kms") && strcmp(h, "aws:kms:dsse") ? 400 : 501,
               strcmp(h, "aws:kms") && strcmp(h, "aws:kms:dsse") ? "InvalidArgument" : "NotImplemented",
               "x-amz-server-side-encryption \"%s\": Shale encrypts with AES256 (SSE-S3) or a customer's key "
               "(SSE-C); nothing was stored", h);
        return -1;
    }
    if (sl_req_header(r, "x-amz-server-side-encryption-aws-kms-key-id")) {
        s3_err(r, 501, "NotImplemented", "x-amz-server-side-encryption-aws-kms-key-id: Shale has no KMS (SSE-S3 "
               "uses the cluster's master key); nothing was stored");
        return -1;
    }
    const char *dflt = b && b->props ? json_string_value(json_object_get(b->props, "sse")) : NULL;
    if (!c && !(h && *h) && !(dflt && !strcmp(dflt, "AES256")))
        return 0;
    char hex[130];
    unsigned char salt[16];
    RAND_bytes(s->iv, 16);
    sl_hex(s->iv, 16, hex);
    if (c) {
        s->mode = SL_SSE_C;
        RAND_bytes(salt, 16);
        char mac[65];
        ssec_mac(salt, s->key, mac);
        s3_kv_add(meta, "s3.sse", "SSE-C");
        s3_kv_add(meta, "s3.sse.iv", hex);
        sl_hex(salt, 16, hex);
        s3_kv_add(meta, "s3.sse.salt", hex);
        s3_kv_add(meta, "s3.sse.kh", mac);
        sl_sse_ctr_at(s, 0, 0);
        return 0;
    }
    struct sl_err err = { 0 };
    if (sl_sse_new_s3(s, kv_add, meta, &err) < 0) {
        s3_err(r, 500, "InternalError", "%s; nothing was stored", err.msg);
        return -1;
    }
    return 0;
}

/* s from the custom entries get(name) of an object or an upload: the data key unwrapped (SSE-S3) or the
 * request's checked (SSE-C, headers pfx). 0 not encrypted, 1 ready, -1 refused (status, code, msg). */
static int sse_load(struct sl_req *r, const char *(*get)(const void *, const char *), const void *src,
                    const char *pfx, struct sl_sse *s, int *status, const char **code, char *msg, size_t mn)
{
    memset(s, 0, sizeof(*s));
    s->cur = -1;
    s->next = UINT64_MAX;
    unsigned char key[32];
    char why[600];
    int c = ssec_hdrs(r, pfx, key, s->kmd5, why, sizeof(why));
    pfx = *pfx ? pfx : "x-amz-"; /* (for the messages) */
    const char *mode = get(src, "s3.sse"), *iv = get(src, "s3.sse.iv");
    *status = 400;
    *code = "InvalidArgument";
    if (c < 0) {
        snprintf(msg, mn, "%s", why);
        goto refused;
    }
    if (!mode) {
        if (!c)
            return 0;
        *code = "InvalidRequest";
        snprintf(msg, mn, "The encryption parameters are not applicable to this object (it is not encrypted with "
                 "a customer's key); send the request without the %sserver-side-encryption-customer-* headers",
                 pfx);
        goto refused;
    }
    if (!iv || strlen(iv) != 32) {
        *status = 500;
        *code = "InternalError";
        snprintf(msg, mn, "the object's encryption metadata is damaged (s3.sse.iv)");
        goto refused;
    }
    s3_hex2bin(iv, s->iv, 16);
    if (!strcmp(mode, "SSE-C")) {
        if (!c) {
            *code = "InvalidRequest";
            snprintf(msg, mn, "The object was stored using a form of Server Side Encryption. The correct parameters "
                     "must be provided to retrieve the object (%sserver-side-encryption-customer-algorithm, "
                     "-key and -key-MD5)", pfx);
            goto refused;
        }
        if (!ssec_matches(get(src, "s3.sse.salt"), get(src, "s3.sse.kh"), key)) {
            *status = 403;
            *code = "AccessDenied";
            snprintf(msg, mn, "Access Denied: the SSE-C key given (%sserver-side-encryption-customer-key) is "
                     "not the one the object was stored with", pfx);
            goto refused;
        }
        s->mode = SL_SSE_C;
        memcpy(s->key, key, 32);
        OPENSSL_cleanse(key, sizeof(key));
        return 1;
    }
    if (c) {
        *code = "InvalidRequest";
        snprintf(msg, mn, "The encryption parameters are not applicable to this object (it is encrypted with SSE-S3); "
                 "send the request without the %sserver-side-encryption-customer-* headers", pfx);
        goto refused;
    }
    const char *kid = get(src, "s3.sse.kid"), *dk = get(src, "s3.sse.dk");
    size_t dl = dk ? strlen(dk) : 0;
    struct sl_err err = { 0 };
    unsigned char w[48];
    if (!kid || !dk || dl % 2 || dl > 96 || strspn(dk, "0123456789abcdef") != dl) {
        *status = 500;
        *code = "InternalError";
        snprintf(msg, mn, "the object's encryption metadata is damaged (s3.sse.kid, s3.sse.dk)");
        goto refused;
    }
    s3_hex2bin(dk, w, dl / 2);
    if (sl_kms->unwrap(kid, w, dl / 2, s->key, &err) < 0) {
        *status = 500;
        *code = "InternalError";
        snprintf(msg, mn, "%s", err.msg);
        goto refused;
    }
    s->mode = SL_SSE_S3;
    return 1;
refused:
    OPENSSL_cleanse(key, sizeof(key));
    sl_sse_free(s);
    return -1;
}

static const char *md_get(const void *md, const char *k)
{
    return sl_objmd_get_custom(md, k);
}

static const char *up_get(const void *k, const char *name)
{
    return kv_get(k, name);
}

int s3_sse_open(struct sl_req *r, const struct sl_objmd *md, const char *pfx, struct sl_sse *s, int *status,
                const char **code, char *msg, size_t mn)
{
    int rc = sse_load(r, md_get, md, pfx, s, status, code, msg, mn);
    if (rc == 1)
        sl_sse_layout(s, md);
    return rc;
}

int s3_sse_open_s3(struct sl_req *r, const struct sl_objmd *md, const char *pfx, struct sl_sse *s)
{
    int status;
    const char *code;
    char msg[600];
    int rc = s3_sse_open(r, md, pfx, s, &status, &code, msg, sizeof(msg));
    if (rc < 0)
        s3_err(r, status, code, "%s", msg);
    return rc;
}

int s3_sse_part(struct sl_req *r, const struct kvs *up, struct sl_sse *s, int partno)
{
    int status;
    const char *code;
    char msg[600];
    int rc = sse_load(r, up_get, up, "", s, &status, &code, msg, sizeof(msg));
    if (rc < 0) {
        if (status == 403) /* the upload's key, not an object's */
            snprintf(msg, sizeof(msg), "Access Denied: the SSE-C key of this part is not the one the upload was "
                     "created with (CreateMultipartUpload); every part carries the upload's key");
        else if (!strcmp(code, "InvalidRequest") && kv_get(up, "s3.sse"))
            snprintf(msg, sizeof(msg), "The upload was created with a customer's key (SSE-C): every part carries it "
                     "(x-amz-server-side-encryption-customer-algorithm, -key and -key-MD5)");
        s3_err(r, status, code, "%s; the part was not stored", msg);
        return -1;
    }
    if (rc == 1)
        sl_sse_ctr_at(s, partno, 0);
    return 0;
}

bool s3_sse_encrypted(const struct sl_objmd *md)
{
    return sl_objmd_get_custom(md, "s3.sse") != NULL;
}

void s3_sse_parts_meta(struct kvs *meta, const int *nos, const uint64_t *sizes, int n)
{
    if (!kv_get(meta, "s3.sse"))
        return;
    struct sl_buf b;
    sl_buf_init(&b);
    for (int i = 0; i < n;) {
        int j = i;
        while (j + 1 < n && nos[j + 1] == nos[j] + 1 && sizes[j + 1] == sizes[i])
            j++;
        if (j > i)
            sl_buf_printf(&b, "%s%d-%d:%llu", i ? "," : "", nos[i], nos[j], (unsigned long long)sizes[i]);
        else
            sl_buf_printf(&b, "%s%d:%llu", i ? "," : "", nos[i], (unsigned long long)sizes[i]);
        i = j + 1;
    }
    if (b.p)
        s3_kv_add(meta, "s3.sse.parts", b.p);
    sl_buf_free(&b);
}

void s3_sse_headers(struct sl_req *r, const struct sl_sse *s)
{
    if (s->mode == SL_SSE_S3) {
        sl_hdr_add(r, "x-amz-server-side-encryption", "AES256");
    } else if (s->mode == SL_SSE_C) {
        sl_hdr_add(r, "x-amz-server-side-encryption-customer-algorithm", "AES256");
        sl_hdr_add(r, "x-amz-server-side-encryption-customer-key-MD5", s->kmd5);
    }
}

/* ---- reads ---- */

struct sse_stream {
    int fd;
    uint64_t off, len;
    struct sl_sse s;
};

static ssize_t sse_read(void *ctx, uint64_t pos, char *buf, size_t max)
{
    struct sse_stream *st = ctx;
    if (pos >= st->len)
        return 0;
    size_t want = (size_t)SL_MIN((uint64_t)max, st->len - pos);
    ssize_t n = pread(st->fd, buf, want, (off_t)(st->off + pos));
    if (n <= 0)
        return -1;
    sl_sse_xor_at(&st->s, st->off + pos, buf, (size_t)n);
    return n;
}

static void sse_stream_free(void *ctx)
{
    struct sse_stream *st = ctx;
    close(st->fd);
    sl_sse_free(&st->s);
    free(st);
}

void s3_sse_serve(struct sl_req *r, int status, int fd, uint64_t off, uint64_t len, struct sl_sse *s,
                  const char *ctype)
{
    struct sse_stream *st = sl_xcalloc(1, sizeof(*st));
    st->fd = fd;
    st->off = off;
    st->len = len;
    st->s = *s;
    memset(s, 0, sizeof(*s)); /* (moved) */
    if (!len) {
        sse_stream_free(st);
        sl_resp_bytes(r, status, ctype, "", 0);
        return;
    }
    r->resp_len = len;
    sl_resp_stream(r, status, ctype, len, sse_read, st, sse_stream_free);
}

void s3_sse_native_get(struct sl_req *r, int status, int fd, uint64_t off, uint64_t len, const struct sl_objmd *md)
{
    struct sl_sse s;
    int st;
    const char *code;
    char msg[600];
    if (s3_sse_open(r, md, "", &s, &st, &code, msg, sizeof(msg)) < 0) {
        close(fd);
        if (!strcmp(code, "InvalidRequest") && sl_objmd_get_custom(md, "s3.sse") &&
            !strcmp(sl_objmd_get_custom(md, "s3.sse"), "SSE-C"))
            sl_resp_errf(r, SL_EINVAL, "the object is encrypted with a customer's key (S3 SSE-C): read it through S3 "
                         "(/s3/BUCKET/KEY) with its x-amz-server-side-encryption-customer-* headers; the native API "
                         "has no way to pass the key");
        else
            sl_resp_errf(r, st == 403 ? SL_EFORBIDDEN : st == 400 ? SL_EINVAL : SL_EINTERNAL, "%s", msg);
        return;
    }
    s3_sse_serve(r, status, fd, off, len, &s, "application/octet-stream");
}

int s3_sse_transport(struct sl_req *r)
{
    static const char *const h[] = { "x-amz-server-side-encryption-customer-algorithm",
                                     "x-amz-server-side-encryption-customer-key",
                                     "x-amz-copy-source-server-side-encryption-customer-algorithm",
                                     "x-amz-copy-source-server-side-encryption-customer-key" };
    bool ssec = false;
    for (size_t i = 0; i < sizeof(h) / sizeof(h[0]); i++)
        ssec = ssec || sl_req_header(r, h[i]);
    if (!ssec || sl_req_tls(r) || sl_conf->s3_sse_c_allow_http)
        return 0;
    s3_err(r, 400, "InvalidRequest", "Requests specifying Server Side Encryption with Customer provided keys must be "
           "made over a secure connection (this one is plain HTTP: use https://, or set s3.sse_c_allow_http=true "
           "to accept the key in the clear, insecure); nothing was done");
    return -1;
}

/* ---- ?encryption of a bucket: its props "sse" ("AES256" or "") ---- */

struct ssecfg {
    char alg[32];
    int rules;
    bool kms_key;
};

static void cfg_end(void *arg, const char *parent, const char *name, const char *text)
{
    struct ssecfg *c = arg;
    if (!strcmp(name, "SSEAlgorithm"))
        snprintf(c->alg, sizeof(c->alg), "%s", text);
    else if (!strcmp(name, "Rule"))
        c->rules++;
    else if (!strcmp(name, "KMSMasterKeyID") && *text)
        c->kms_key = true;
}

int s3_sse_bck_config(struct sl_req *r, const char *body, size_t n)
{
    struct ssecfg c = { 0 };
    struct sl_err err = { 0 };
    char kid[64];
    if (s3_xml_parse(body, n, cfg_end, &c) < 0 || c.rules != 1 || !c.alg[0]) {
        s3_err(r, 400, "MalformedXML", "The XML you provided was not well-formed or did not validate against our "
               "published schema (a ServerSideEncryptionConfiguration with one Rule holding "
               "ApplyServerSideEncryptionByDefault/SSEAlgorithm); nothing was changed");
    } else if (strcmp(c.alg, "AES256")) {
        bool kms = !strncmp(c.alg, "aws:kms", 7);
        s3_err(r, kms ? 501 : 400, kms ? "NotImplemented" : "InvalidArgument", "SSEAlgorithm \"%s\": Shale's "
               "bucket default encryption is AES256 (SSE-S3)%s; nothing was changed", c.alg,
               kms ? ", there is no KMS" : "");
    } else if (c.kms_key) {
        s3_err(r, 400, "InvalidArgument", "KMSMasterKeyID goes with aws:kms only; nothing was changed");
    } else if (sl_kms->key_id(kid, sizeof(kid), &err) < 0) {
        s3_err(r, 500, "InternalError", "%s; nothing was changed", err.msg);
    } else {
        return 0;
    }
    return -1;
}

void s3_sse_bck_get(struct sl_req *r, const struct sl_bck *b)
{
    const char *v = json_string_value(json_object_get(b->props, "sse"));
    if (!v || strcmp(v, "AES256")) {
        s3_err(r, 404, "ServerSideEncryptionConfigurationNotFoundError", "The server side encryption "
               "configuration was not found (bucket %s has no default encryption)", b->name);
        return;
    }
    struct sl_buf x;
    sl_buf_init(&x);
    sl_buf_adds(&x, "<ServerSideEncryptionConfiguration xmlns=\"" XMLNS "\"><Rule><ApplyServerSideEncryptionByDefault>"
                "<SSEAlgorithm>AES256</SSEAlgorithm></ApplyServerSideEncryptionByDefault><BucketKeyEnabled>false"
                "</BucketKeyEnabled></Rule></ServerSideEncryptionConfiguration>");
    s3_xml(r, 200, &x);
}
