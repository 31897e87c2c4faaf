/* SPDX-License-Identifier: MIT
 * s3sse.c: server-side encryption of S3 objects (SSE-S3, SSE-C), the key
 * service SSE-S3 uses (the master key file of s3.sse_key_file), and a
 * bucket's default encryption (?encryption, props "sse"). See s3sse.h for
 * the scheme and the metadata kept, docs/s3.md for why.
 */
#include "s3sse.h"
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

#define PART_BLOCKS_SHIFT 36        /* part N's counters start at IV + N * 2^36 (1 TiB of blocks apart) */

/* ---- the key file: the cluster's master key ---- */

struct keyfile {
    char path[4096];
    struct timespec mtime;
    off_t size;
    unsigned char key[32];
    char kid[40];
    bool ok;
};
static pthread_mutex_t kf_mu = PTHREAD_MUTEX_INITIALIZER;
static struct keyfile kf;

static int key_parse(const char *path, unsigned char key[32], struct sl_err *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return sl_errf(err, SL_EINTERNAL, "cannot read the SSE-S3 master key file %s (s3.sse_key_file): %s", path,
                       strerror(errno));
    char b[256];
    ssize_t n = read(fd, b, sizeof(b) - 1);
    close(fd);
    if (n < 0)
        return sl_errf(err, SL_EINTERNAL, "cannot read the SSE-S3 master key file %s (s3.sse_key_file): %s", path,
                       strerror(errno));
    while (n > 0 && (b[n - 1] == '\n' || b[n - 1] == '\r' || b[n - 1] == ' '))
        n--;
    b[n] = 0;
    if (n == 64 && strspn(b, "0123456789abcdefABCDEF") == 64) {
        s3_hex2bin(b, key, 32);
        return 0;
    }
    unsigned char out[64];
    char why[80];
    if (n == 44 && sl_b64_decode(b, (size_t)n, 0, out, why, sizeof(why)) == 32) {
        memcpy(key, out, 32);
        OPENSSL_cleanse(out, sizeof(out));
        return 0;
    }
    OPENSSL_cleanse(b, sizeof(b));
    return sl_errf(err, SL_EINTERNAL, "the SSE-S3 master key file %s (s3.sse_key_file) does not hold a 256-bit key "
                   "(64 hex digits or 44 base64 characters; e.g. `openssl rand -hex 32 > FILE`)", path);
}

int s3_sse_key_check(const char *path, struct sl_err *err)
{
    unsigned char k[32];
    int rc = key_parse(path, k, err);
    OPENSSL_cleanse(k, sizeof(k));
    return rc;
}

/* The master key (kf_mu held): read again when the setting or the file changed */
static int kf_load(struct sl_err *err)
{
    const char *path = sl_conf->s3_sse_key_file;
    if (!path || !*path) {
        kf.ok = false;
        return sl_errf(err, SL_EINTERNAL, "SSE-S3 is not configured on this cluster: set s3.sse_key_file to a file "
                       "holding a 256-bit master key (the same file on every node), or use SSE-C");
    }
    struct stat st;
    if (stat(path, &st) < 0) {
        kf.ok = false;
        return sl_errf(err, SL_EINTERNAL, "cannot read the SSE-S3 master key file %s (s3.sse_key_file): %s", path,
                       strerror(errno));
    }
    if (kf.ok && !strcmp(kf.path, path) && kf.size == st.st_size && kf.mtime.tv_sec == st.st_mtim.tv_sec &&
        kf.mtime.tv_nsec == st.st_mtim.tv_nsec)
        return 0;
    kf.ok = false;
    if (key_parse(path, kf.key, err) < 0)
        return -1;
    unsigned char d[32];
    unsigned dn = 0;
    EVP_MD_CTX *md = EVP_MD_CTX_new();
    EVP_DigestInit_ex(md, EVP_sha256(), NULL);
    EVP_DigestUpdate(md, "shale-sse-kid:", 14);
    EVP_DigestUpdate(md, kf.key, 32);
    EVP_DigestFinal_ex(md, d, &dn);
    EVP_MD_CTX_free(md);
    memcpy(kf.kid, "file-", 5);
    sl_hex(d, 8, kf.kid + 5);
    snprintf(kf.path, sizeof(kf.path), "%s", path);
    kf.mtime = st.st_mtim;
    kf.size = st.st_size;
    kf.ok = true;
    return 0;
}

static int file_key_id(char *kid, size_t n, struct sl_err *err)
{
    pthread_mutex_lock(&kf_mu);
    int rc = kf_load(err);
    if (rc == 0)
        snprintf(kid, n, "%s", kf.kid);
    pthread_mutex_unlock(&kf_mu);
    return rc;
}

static int kw(bool enc, const unsigned char *k, const unsigned char *in, size_t inn, unsigned char *out, size_t *outn)
{
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    EVP_CIPHER_CTX_set_flags(c, EVP_CIPHER_CTX_FLAG_WRAP_ALLOW);
    int n = 0, m = 0, ok = EVP_CipherInit_ex(c, EVP_aes_256_wrap(), NULL, k, NULL, enc) &&
                           EVP_CipherUpdate(c, out, &n, in, (int)inn) && EVP_CipherFinal_ex(c, out + n, &m);
    EVP_CIPHER_CTX_free(c);
    *outn = (size_t)(n + m);
    return ok ? 0 : -1;
}

static int file_wrap(const char *kid, const unsigned char dk[32], unsigned char *out, size_t *outn,
                     struct sl_err *err)
{
    pthread_mutex_lock(&kf_mu);
    int rc = kf_load(err);
    if (rc == 0 && strcmp(kid, kf.kid))
        rc = sl_errf(err, SL_EINTERNAL, "SSE-S3: key %s is not the one in %s (%s)", kid, kf.path, kf.kid);
    if (rc == 0 && kw(true, kf.key, dk, 32, out, outn) < 0)
        rc = sl_errf(err, SL_EINTERNAL, "SSE-S3: wrapping a data key failed");
    pthread_mutex_unlock(&kf_mu);
    return rc;
}

static int file_unwrap(const char *kid, const unsigned char *in, size_t inn, unsigned char dk[32],
                       struct sl_err *err)
{
    pthread_mutex_lock(&kf_mu);
    int rc = kf_load(err);
    unsigned char out[64];
    size_t n = 0;
    if (rc == 0 && strcmp(kid, kf.kid))
        rc = sl_errf(err, SL_EINTERNAL, "the object was encrypted under SSE-S3 master key %s, and %s "
                     "(s3.sse_key_file) holds key %s: give this node the cluster's key file", kid, kf.path, kf.kid);
    else if (rc == 0 && (inn > 48 || kw(false, kf.key, in, inn, out, &n) < 0 || n != 32))
        rc = sl_errf(err, SL_EINTERNAL, "SSE-S3: the object's wrapped data key does not unwrap under key %s "
                     "(damaged metadata)", kid);
    if (rc == 0)
        memcpy(dk, out, 32);
    OPENSSL_cleanse(out, sizeof(out));
    pthread_mutex_unlock(&kf_mu);
    return rc;
}

static const struct s3_kms file_kms = { "file", file_key_id, file_wrap, file_unwrap };
const struct s3_kms *s3_kms = &file_kms;

/* ---- the cipher ---- */

void s3_sse_free(struct s3sse *s)
{
    if (s->c)
        EVP_CIPHER_CTX_free(s->c);
    free(s->seg);
    free(s->buf);
    OPENSSL_cleanse(s, sizeof(*s));
}

/* c at block blk of counter space no */
static void ctr_at(struct s3sse *s, int no, uint64_t blk)
{
    unsigned char iv[16];
    memcpy(iv, s->iv, 16);
    /* 128-bit big-endian add of no * 2^36 + blk */
    unsigned __int128 add = ((unsigned __int128)(unsigned)no << PART_BLOCKS_SHIFT) + blk, carry = 0;
    for (int i = 15; i >= 0; i--) {
        unsigned __int128 v = (unsigned __int128)iv[i] + (add & 0xff) + carry;
        iv[i] = (unsigned char)v;
        carry = v >> 8;
        add >>= 8;
    }
    if (!s->c)
        s->c = EVP_CIPHER_CTX_new();
    EVP_EncryptInit_ex(s->c, EVP_aes_256_ctr(), NULL, s->key, iv);
}

static void ctr_run(struct s3sse *s, unsigned char *out, const unsigned char *in, size_t n)
{
    while (n) {
        int m = (int)SL_MIN(n, (size_t)1 << 30), o = 0;
        EVP_EncryptUpdate(s->c, out, &o, in, m);
        out += m;
        in += m;
        n -= (size_t)m;
    }
}

/* c at offset off of counter space no (whose bytes start at 0) */
static void ctr_seek(struct s3sse *s, int no, uint64_t off)
{
    ctr_at(s, no, off / 16);
    unsigned char skip[16];
    if (off % 16)
        ctr_run(s, skip, skip, off % 16);
}

const char *s3_sse_crypt(struct s3sse *s, const char *p, size_t n)
{
    if (s->bufn < n) {
        free(s->buf);
        s->bufn = SL_MAX(n, (size_t)64 * 1024);
        s->buf = sl_xmalloc(s->bufn);
    }
    ctr_run(s, (unsigned char *)s->buf, (const unsigned char *)p, n);
    return s->buf;
}

void s3_sse_xor_at(struct s3sse *s, uint64_t off, char *buf, size_t n)
{
    while (n) {
        if (s->cur < 0 || off < s->seg[s->cur].off || off >= s->seg[s->cur].off + s->seg[s->cur].size) {
            int i;
            for (i = 0; i < s->nseg && !(off >= s->seg[i].off && off < s->seg[i].off + s->seg[i].size); i++)
                ;
            if (i == s->nseg)
                return; /* past the layout: nothing of ours */
            s->cur = i;
            s->next = UINT64_MAX;
        }
        const struct s3sse_seg *g = &s->seg[s->cur];
        if (off != s->next)
            ctr_seek(s, g->no, off - g->off);
        size_t m = (size_t)SL_MIN((uint64_t)n, g->off + g->size - off);
        ctr_run(s, (unsigned char *)buf, (const unsigned char *)buf, m);
        off += m;
        buf += m;
        n -= m;
        s->next = off;
    }
}

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

int s3_sse_new(struct sl_req *r, const struct sl_bck *b, struct s3sse *s, struct kvs *meta)
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
        s->mode = S3SSE_C;
        RAND_bytes(salt, 16);
        char mac[65];
        ssec_mac(salt, s->key, mac);
        s3_kv_add(meta, "s3.sse", "SSE-C");
        s3_kv_add(meta, "s3.sse.iv", hex);
        sl_hex(salt, 16, hex);
        s3_kv_add(meta, "s3.sse.salt", hex);
        s3_kv_add(meta, "s3.sse.kh", mac);
        ctr_at(s, 0, 0);
        return 0;
    }
    struct sl_err err = { 0 };
    char kid[64];
    unsigned char w[48];
    size_t wn = 0;
    RAND_bytes(s->key, 32);
    if (s3_kms->key_id(kid, sizeof(kid), &err) < 0 || s3_kms->wrap(kid, s->key, w, &wn, &err) < 0) {
        s3_err(r, 500, "InternalError", "%s; nothing was stored", err.msg);
        return -1;
    }
    s->mode = S3SSE_S3;
    s3_kv_add(meta, "s3.sse", "AES256");
    s3_kv_add(meta, "s3.sse.iv", hex);
    s3_kv_add(meta, "s3.sse.kid", kid);
    sl_hex(w, wn, hex);
    s3_kv_add(meta, "s3.sse.dk", hex);
    ctr_at(s, 0, 0);
    return 0;
}

/* s from the custom entries get(name) of an object or an upload: the data key unwrapped (SSE-S3) or the
 * request's checked (SSE-C, headers pfx). 0 not encrypted, 1 ready, -1 refused (status, code, msg). */
static int sse_load(struct sl_req *r, const char *(*get)(const void *, const char *), const void *src,
                    const char *pfx, struct s3sse *s, int *status, const char **code, char *msg, size_t mn)
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
        s->mode = S3SSE_C;
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
    if (s3_kms->unwrap(kid, w, dl / 2, s->key, &err) < 0) {
        *status = 500;
        *code = "InternalError";
        snprintf(msg, mn, "%s", err.msg);
        goto refused;
    }
    s->mode = S3SSE_S3;
    return 1;
refused:
    OPENSSL_cleanse(key, sizeof(key));
    s3_sse_free(s);
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

/* "FIRST[-LAST]:SIZE,...": the layout of a multipart object; else one segment */
static void layout(struct s3sse *s, const struct sl_objmd *md)
{
    const char *p = sl_objmd_get_custom(md, "s3.sse.parts");
    uint64_t off = 0;
    while (p && *p) {
        char *e;
        long a = strtol(p, &e, 10), z = a;
        if (*e == '-')
            z = strtol(e + 1, &e, 10);
        if (*e != ':' || a < 1 || z < a || z > 10000)
            break;
        uint64_t size = strtoull(e + 1, &e, 10);
        for (long n = a; n <= z; n++) {
            s->seg = sl_xrealloc(s->seg, (size_t)(s->nseg + 1) * sizeof(*s->seg));
            s->seg[s->nseg++] = (struct s3sse_seg){ (int)n, off, size };
            off += size;
        }
        p = *e == ',' ? e + 1 : e;
    }
    if (!s->nseg) {
        s->seg = sl_xmalloc(sizeof(*s->seg));
        s->seg[0] = (struct s3sse_seg){ 0, 0, md->size };
        s->nseg = 1;
    }
}

int s3_sse_open(struct sl_req *r, const struct sl_objmd *md, const char *pfx, struct s3sse *s, int *status,
                const char **code, char *msg, size_t mn)
{
    int rc = sse_load(r, md_get, md, pfx, s, status, code, msg, mn);
    if (rc == 1)
        layout(s, md);
    return rc;
}

int s3_sse_open_s3(struct sl_req *r, const struct sl_objmd *md, const char *pfx, struct s3sse *s)
{
    int status;
    const char *code;
    char msg[600];
    int rc = s3_sse_open(r, md, pfx, s, &status, &code, msg, sizeof(msg));
    if (rc < 0)
        s3_err(r, status, code, "%s", msg);
    return rc;
}

int s3_sse_part(struct sl_req *r, const struct kvs *up, struct s3sse *s, int partno)
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
        ctr_at(s, partno, 0);
    return 0;
}

bool s3_sse_encrypted(const struct sl_objmd *md)
{
    return sl_objmd_get_custom(md, "s3.sse") != NULL;
}

bool s3_sse_key_is_own(const char *k)
{
    return !strncmp(k, "s3.sse", 6);
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

void s3_sse_headers(struct sl_req *r, const struct s3sse *s)
{
    if (s->mode == S3SSE_S3) {
        sl_hdr_add(r, "x-amz-server-side-encryption", "AES256");
    } else if (s->mode == S3SSE_C) {
        sl_hdr_add(r, "x-amz-server-side-encryption-customer-algorithm", "AES256");
        sl_hdr_add(r, "x-amz-server-side-encryption-customer-key-MD5", s->kmd5);
    }
}

/* ---- reads ---- */

struct sse_stream {
    int fd;
    uint64_t off, len;
    struct s3sse s;
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
    s3_sse_xor_at(&st->s, st->off + pos, buf, (size_t)n);
    return n;
}

static void sse_stream_free(void *ctx)
{
    struct sse_stream *st = ctx;
    close(st->fd);
    s3_sse_free(&st->s);
    free(st);
}

void s3_sse_serve(struct sl_req *r, int status, int fd, uint64_t off, uint64_t len, struct s3sse *s,
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
    struct s3sse s;
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
    } else if (s3_kms->key_id(kid, sizeof(kid), &err) < 0) {
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
