/* SPDX-License-Identifier: MIT
 * cksum.c: streaming checksums. XXH64 from libxxhash, MD5/SHA from OpenSSL,
 * CRC-32C (Castagnoli) here: Debian has no C library for it, and it is a
 * dozen lines with the SSE4.2 instruction plus a table fallback.
 */
#include "cksum.h"

#include <errno.h>
#include <isa-l/crc.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/params.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <xxhash.h>

static EVP_MD *sha256_md;
static EVP_MAC *hmac_alg;
static pthread_key_t sha256_key, hmac_key;
static pthread_once_t sha256_once = PTHREAD_ONCE_INIT;

static void sha256_ctx_free(void *p)
{
    EVP_MD_CTX_free(p);
}

static void hmac_ctx_free(void *p)
{
    EVP_MAC_CTX_free(p);
}

static void sha256_init(void)
{
    if (pthread_key_create(&sha256_key, sha256_ctx_free) == 0)
        sha256_md = EVP_MD_fetch(NULL, "SHA256", NULL);
    if (pthread_key_create(&hmac_key, hmac_ctx_free) == 0)
        hmac_alg = EVP_MAC_fetch(NULL, "HMAC", NULL);
}

void sl_hmac_sha256(const void *key, size_t klen, const void *p, size_t n, unsigned char out[32])
{
    pthread_once(&sha256_once, sha256_init);
    EVP_MAC_CTX *c = hmac_alg ? pthread_getspecific(hmac_key) : NULL;
    bool fresh = false;
    if (hmac_alg && !c && (c = EVP_MAC_CTX_new(hmac_alg)) != NULL) {
        if (pthread_setspecific(hmac_key, c) != 0) {
            EVP_MAC_CTX_free(c);
            c = NULL;
        }
        fresh = true;
    }
    /* the digest is set once per context; a new key each call */
    OSSL_PARAM prm[] = { OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0),
                         OSSL_PARAM_construct_end() };
    size_t ol = 0;
    if (c && EVP_MAC_init(c, key, klen, fresh ? prm : NULL) == 1 && EVP_MAC_update(c, p, n) == 1 &&
        EVP_MAC_final(c, out, &ol, 32) == 1 && ol == 32)
        return;
    unsigned int l = 32;
    HMAC(EVP_sha256(), key, (int)klen, p, n, out, &l); /* (no context: the library's own way) */
}

void sl_sha256(const void *p, size_t n, unsigned char out[32])
{
    pthread_once(&sha256_once, sha256_init);
    EVP_MD_CTX *c = sha256_md ? pthread_getspecific(sha256_key) : NULL;
    if (sha256_md && !c && (c = EVP_MD_CTX_new()) != NULL && pthread_setspecific(sha256_key, c) != 0) {
        EVP_MD_CTX_free(c);
        c = NULL;
    }
    unsigned int ol = 0;
    if (c && EVP_DigestInit_ex2(c, sha256_md, NULL) == 1 && EVP_DigestUpdate(c, p, n) == 1 &&
        EVP_DigestFinal_ex(c, out, &ol) == 1 && ol == 32)
        return;
    SHA256(p, n, out); /* (no context: the library's own way) */
}

static const char *names[SL_CK_MAX] = {
    [SL_CK_NONE] = "none", [SL_CK_XXHASH] = "xxhash", [SL_CK_XXHASH2] = "xxhash2",
    [SL_CK_MD5] = "md5", [SL_CK_CRC32C] = "crc32c", [SL_CK_SHA256] = "sha256", [SL_CK_SHA512] = "sha512",
};

int sl_cksum_parse(const char *name)
{
    if (!name)
        return -1;
    for (int i = 0; i < SL_CK_MAX; i++)
        if (strcasecmp(name, names[i]) == 0)
            return i;
    if (name[0] == 0)
        return SL_CK_NONE;
    return -1;
}

const char *sl_cksum_name(int type)
{
    return type >= 0 && type < SL_CK_MAX ? names[type] : "none";
}

const char *sl_cksum_names(void)
{
    return "none, xxhash, xxhash2, md5, crc32c, sha256, sha512";
}

/* ---- CRC-32C ---- */

/* ISA-L's (SSE4.2/AVX-512 where the CPU has them, chosen once by the
 * library): crc32_iscsi takes and returns the register, not the inverted
 * value, and an int length */
uint32_t sl_crc32c(uint32_t crc, const void *buf, size_t n)
{
    const unsigned char *p = buf;
    uint32_t c = ~crc;
    while (n) {
        int k = n > (size_t)INT_MAX ? INT_MAX : (int)n;
        c = crc32_iscsi((unsigned char *)p, k, c);
        p += k;
        n -= (size_t)k;
    }
    return ~c;
}

/* ---- streaming API ---- */

int sl_cksum_init(struct sl_cksum *c, int type)
{
    memset(c, 0, sizeof(*c));
    c->type = type;
    switch (type) {
    case SL_CK_NONE:
        return 0;
    case SL_CK_XXHASH:
    case SL_CK_XXHASH2: {
        XXH64_state_t *s = XXH64_createState();
        if (!s)
            return -1;
        XXH64_reset(s, 0);
        c->st = s;
        return 0;
    }
    case SL_CK_CRC32C:
        c->crc = 0;
        return 0;
    case SL_CK_MD5:
    case SL_CK_SHA256:
    case SL_CK_SHA512: {
        EVP_MD_CTX *m = EVP_MD_CTX_new();
        const EVP_MD *md = type == SL_CK_MD5 ? EVP_md5() : type == SL_CK_SHA256 ? EVP_sha256() : EVP_sha512();
        if (!m || EVP_DigestInit_ex(m, md, NULL) != 1) {
            EVP_MD_CTX_free(m);
            return -1;
        }
        c->st = m;
        return 0;
    }
    }
    return -1;
}

void sl_cksum_update(struct sl_cksum *c, const void *p, size_t n)
{
    switch (c->type) {
    case SL_CK_XXHASH:
    case SL_CK_XXHASH2:
        XXH64_update(c->st, p, n);
        break;
    case SL_CK_CRC32C:
        c->crc = sl_crc32c(c->crc, p, n);
        break;
    case SL_CK_MD5:
    case SL_CK_SHA256:
    case SL_CK_SHA512:
        EVP_DigestUpdate(c->st, p, n);
        break;
    default:
        break;
    }
}

void sl_cksum_free(struct sl_cksum *c)
{
    if (!c->st)
        return;
    if (c->type == SL_CK_XXHASH || c->type == SL_CK_XXHASH2)
        XXH64_freeState(c->st);
    else
        EVP_MD_CTX_free(c->st);
    c->st = NULL;
}

void sl_cksum_final(struct sl_cksum *c, char out[SL_CKSUM_HEX_MAX])
{
    out[0] = 0;
    switch (c->type) {
    case SL_CK_XXHASH:
    case SL_CK_XXHASH2:
        snprintf(out, SL_CKSUM_HEX_MAX, "%016llx", (unsigned long long)XXH64_digest(c->st));
        break;
    case SL_CK_CRC32C:
        snprintf(out, SL_CKSUM_HEX_MAX, "%08x", c->crc);
        break;
    case SL_CK_MD5:
    case SL_CK_SHA256:
    case SL_CK_SHA512: {
        unsigned char d[EVP_MAX_MD_SIZE];
        unsigned int n = 0;
        EVP_DigestFinal_ex(c->st, d, &n);
        sl_hex(d, n, out);
        break;
    }
    default:
        break;
    }
    sl_cksum_free(c);
}

void sl_cksum_buf(int type, const void *p, size_t n, char out[SL_CKSUM_HEX_MAX])
{
    struct sl_cksum c;
    if (sl_cksum_init(&c, type) < 0) {
        out[0] = 0;
        return;
    }
    sl_cksum_update(&c, p, n);
    sl_cksum_final(&c, out);
}

int sl_cksum_fd(int type, int fd, char out[SL_CKSUM_HEX_MAX])
{
    struct sl_cksum c;
    if (sl_cksum_init(&c, type) < 0)
        return -1;
    char *buf = sl_xmalloc(256 * 1024);
    off_t off = 0;
    for (;;) {
        ssize_t r = pread(fd, buf, 256 * 1024, off);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            sl_cksum_free(&c);
            free(buf);
            return -1;
        }
        if (r == 0)
            break;
        sl_cksum_update(&c, buf, (size_t)r);
        off += r;
    }
    free(buf);
    sl_cksum_final(&c, out);
    return 0;
}
