/* SPDX-License-Identifier: MIT
 * sse.c: encryption at rest (sse.h): the master key file of
 * s3.sse_key_file and the key service on it, AES-256-CTR at any offset,
 * an object's decryptor for the read path.
 */
#include "sse.h"
#include "b64.h"
#include "conf.h"
#include "log.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

static void hex2bin(const char *h, unsigned char *out, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned v = 0;
        sscanf(h + 2 * i, "%2x", &v);
        out[i] = (unsigned char)v;
    }
}

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
        hex2bin(b, key, 32);
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

int sl_sse_key_check(const char *path, struct sl_err *err)
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

static const struct sl_kms file_kms = { "file", file_key_id, file_wrap, file_unwrap };
const struct sl_kms *sl_kms = &file_kms;

/* ---- the cipher ---- */

void sl_sse_free(struct sl_sse *s)
{
    if (s->c)
        EVP_CIPHER_CTX_free(s->c);
    free(s->seg);
    free(s->buf);
    OPENSSL_cleanse(s, sizeof(*s));
}

/* c at block blk of counter space no */
void sl_sse_ctr_at(struct sl_sse *s, int no, uint64_t blk)
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

static void ctr_run(struct sl_sse *s, unsigned char *out, const unsigned char *in, size_t n)
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
static void ctr_seek(struct sl_sse *s, int no, uint64_t off)
{
    sl_sse_ctr_at(s, no, off / 16);
    unsigned char skip[16];
    if (off % 16)
        ctr_run(s, skip, skip, off % 16);
}

const char *sl_sse_crypt(struct sl_sse *s, const char *p, size_t n)
{
    if (s->bufn < n) {
        free(s->buf);
        s->bufn = SL_MAX(n, (size_t)64 * 1024);
        s->buf = sl_xmalloc(s->bufn);
    }
    ctr_run(s, (unsigned char *)s->buf, (const unsigned char *)p, n);
    return s->buf;
}

void sl_sse_xor_at(struct sl_sse *s, uint64_t off, char *buf, size_t n)
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
        const struct sl_sse_seg *g = &s->seg[s->cur];
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

/* "FIRST[-LAST]:SIZE,...": the layout of a multipart object; else one segment */
void sl_sse_layout(struct sl_sse *s, const struct sl_objmd *md)
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
            s->seg[s->nseg++] = (struct sl_sse_seg){ (int)n, off, size };
            off += size;
        }
        p = *e == ',' ? e + 1 : e;
    }
    if (!s->nseg) {
        s->seg = sl_xmalloc(sizeof(*s->seg));
        s->seg[0] = (struct sl_sse_seg){ 0, 0, md->size };
        s->nseg = 1;
    }
}


int sl_sse_mode(const struct sl_objmd *md)
{
    const char *m = md->ncustom ? sl_objmd_get_custom(md, "s3.sse") : NULL;
    return !m ? SL_SSE_NONE : !strcmp(m, "SSE-C") ? SL_SSE_C : SL_SSE_S3;
}

bool sl_sse_key_is_own(const char *k)
{
    return !strncmp(k, "s3.sse", 6);
}

int sl_sse_bck_default(const struct sl_bck *b)
{
    const char *d = b && b->props ? json_string_value(json_object_get(b->props, "sse")) : NULL;
    return d && !strcmp(d, "AES256") ? SL_SSE_S3 : SL_SSE_NONE;
}

int sl_sse_new_s3(struct sl_sse *s, void (*add)(void *arg, const char *k, const char *v), void *arg,
                  struct sl_err *err)
{
    memset(s, 0, sizeof(*s));
    s->cur = -1;
    s->next = UINT64_MAX;
    char kid[64], hex[130];
    unsigned char w[48];
    size_t wn = 0;
    RAND_bytes(s->key, 32);
    RAND_bytes(s->iv, 16);
    if (sl_kms->key_id(kid, sizeof(kid), err) < 0 || sl_kms->wrap(kid, s->key, w, &wn, err) < 0) {
        sl_sse_free(s);
        return -1;
    }
    s->mode = SL_SSE_S3;
    add(arg, "s3.sse", "AES256");
    sl_hex(s->iv, 16, hex);
    add(arg, "s3.sse.iv", hex);
    add(arg, "s3.sse.kid", kid);
    sl_hex(w, wn, hex);
    add(arg, "s3.sse.dk", hex);
    sl_sse_ctr_at(s, 0, 0);
    return 0;
}

int sl_sse_open_s3(const struct sl_objmd *md, struct sl_sse *s, struct sl_err *err)
{
    memset(s, 0, sizeof(*s));
    s->cur = -1;
    s->next = UINT64_MAX;
    const char *iv = sl_objmd_get_custom(md, "s3.sse.iv"), *kid = sl_objmd_get_custom(md, "s3.sse.kid"),
               *dk = sl_objmd_get_custom(md, "s3.sse.dk");
    size_t dl = dk ? strlen(dk) : 0;
    unsigned char w[48];
    if (!iv || strlen(iv) != 32 || !kid || !dk || dl % 2 || dl > 96 || strspn(dk, "0123456789abcdef") != dl)
        return sl_errf(err, SL_EINTERNAL, "the object's encryption metadata is damaged (s3.sse.iv, s3.sse.kid, "
                       "s3.sse.dk)");
    hex2bin(iv, s->iv, 16);
    hex2bin(dk, w, dl / 2);
    if (sl_kms->unwrap(kid, w, dl / 2, s->key, err) < 0) {
        sl_sse_free(s);
        return -1;
    }
    s->mode = SL_SSE_S3;
    sl_sse_layout(s, md);
    return 0;
}

int sl_sse_plain_fd(struct sl_sse *s, int fd, uint64_t size, struct sl_err *err)
{
    int out = memfd_create("shale-sse-plain", MFD_CLOEXEC);
    if (out < 0)
        return sl_errf(err, SL_EINTERNAL, "decrypting an object: memfd_create: %s", strerror(errno));
    size_t bn = 1024 * 1024;
    char *buf = sl_xmalloc(bn);
    uint64_t off = 0;
    while (off < size) {
        ssize_t n = pread(fd, buf, (size_t)SL_MIN((uint64_t)bn, size - off), (off_t)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            sl_errf(err, SL_EIO, "decrypting an object: reading it: %s", n < 0 ? strerror(errno) : "short file");
            goto fail;
        }
        sl_sse_xor_at(s, off, buf, (size_t)n);
        for (ssize_t w = 0; w < n;) {
            ssize_t m = pwrite(out, buf + w, (size_t)(n - w), (off_t)(off + (uint64_t)w));
            if (m < 0 && errno == EINTR)
                continue;
            if (m < 0) {
                sl_errf(err, errno == ENOMEM || errno == ENOSPC ? SL_EUNAVAIL : SL_EINTERNAL,
                        "decrypting an object of %llu bytes into memory: %s", (unsigned long long)size,
                        strerror(errno));
                goto fail;
            }
            w += m;
        }
        off += (uint64_t)n;
    }
    OPENSSL_cleanse(buf, bn);
    free(buf);
    return out;
fail:
    OPENSSL_cleanse(buf, bn);
    free(buf);
    close(out);
    return -1;
}
