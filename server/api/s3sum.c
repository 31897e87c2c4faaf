/* SPDX-License-Identifier: MIT
 * s3sum.c: the integrity checks S3 clients ask for: Content-MD5, the
 * SHA-256 of x-amz-content-sha256, and x-amz-checksum-ALG (CRC32, CRC32C,
 * CRC64NVME, SHA1, SHA256), streamed (PUT bodies) or over a whole body
 * (DeleteObjects, CompleteMultipartUpload).
 */
#include "s3.h"
#include "b64.h"
#include "cksum.h"

#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>

/* CRC-64/NVME (AWS's CRC64NVME): reflected polynomial 0x9a6c9329ac4bc9b5,
 * init and xorout all ones. No Debian library has it (ISA-L 2.30 lacks the
 * NVMe polynomial), hence the table here. */
static uint64_t crc64_tab[256];
static pthread_once_t crc64_once = PTHREAD_ONCE_INIT;

static void crc64_init(void)
{
    for (int i = 0; i < 256; i++) {
        uint64_t c = (uint64_t)i;
        for (int k = 0; k < 8; k++)
            c = c & 1 ? (c >> 1) ^ 0x9a6c9329ac4bc9b5ULL : c >> 1;
        crc64_tab[i] = c;
    }
}

static uint64_t crc64nvme(uint64_t crc, const void *p, size_t n)
{
    pthread_once(&crc64_once, crc64_init);
    const unsigned char *b = p;
    crc = ~crc;
    for (size_t i = 0; i < n; i++)
        crc = crc64_tab[(crc ^ b[i]) & 0xff] ^ (crc >> 8);
    return ~crc;
}

int s3_b64dec(const char *in, unsigned char *out, size_t max)
{
    size_t n = strlen(in);
    unsigned char tmp[128];
    if (!n || sl_b64_decoded_max(n) > sizeof(tmp))
        return -1;
    ssize_t k = sl_b64_decode(in, n, 0, tmp, NULL, 0); /* (padded, as S3 sends it) */
    if (k < 0 || (size_t)k > max)
        return -1;
    memcpy(out, tmp, (size_t)k);
    return (int)k;
}

/* ---- checksums a client asks for (x-amz-checksum-ALG, header or trailer) ---- */

int s3_xc_alg(const char *name)
{
    if (!strcasecmp(name, "crc32"))
        return XC_CRC32;
    if (!strcasecmp(name, "crc32c"))
        return XC_CRC32C;
    if (!strcasecmp(name, "sha1"))
        return XC_SHA1;
    if (!strcasecmp(name, "sha256"))
        return XC_SHA256;
    if (!strcasecmp(name, "crc64nvme"))
        return XC_CRC64NVME;
    return -1;
}

void s3_xc_init(struct s3xc *x, int alg)
{
    x->alg = alg;
    x->crc = 0;
    x->crc64 = 0;
    if (alg == XC_SHA1 || alg == XC_SHA256) {
        x->md = EVP_MD_CTX_new();
        EVP_DigestInit_ex(x->md, alg == XC_SHA1 ? EVP_sha1() : EVP_sha256(), NULL);
    }
}

void s3_xc_update(struct s3xc *x, const void *p, size_t n)
{
    if (x->alg == XC_CRC32)
        x->crc = (uint32_t)crc32(x->crc, p, (uInt)n);
    else if (x->alg == XC_CRC32C)
        x->crc = sl_crc32c(x->crc, p, n);
    else if (x->alg == XC_CRC64NVME)
        x->crc64 = crc64nvme(x->crc64, p, n);
    else if (x->md)
        EVP_DigestUpdate(x->md, p, n);
}

/* base64 of the digest, as S3 sends it */
void s3_xc_final(struct s3xc *x, char *out)
{
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    if (x->alg == XC_CRC64NVME) {
        for (int i = 0; i < 8; i++)
            d[i] = (unsigned char)(x->crc64 >> (56 - 8 * i));
        n = 8;
    } else if (x->alg == XC_CRC32 || x->alg == XC_CRC32C) {
        d[0] = (unsigned char)(x->crc >> 24);
        d[1] = (unsigned char)(x->crc >> 16);
        d[2] = (unsigned char)(x->crc >> 8);
        d[3] = (unsigned char)x->crc;
        n = 4;
    } else if (x->md) {
        EVP_DigestFinal_ex(x->md, d, &n);
    }
    EVP_EncodeBlock((unsigned char *)out, d, (int)n);
}

void s3_xc_free(struct s3xc *x)
{
    if (x->md)
        EVP_MD_CTX_free(x->md);
    x->md = NULL;
}

void s3_body_offload(struct sl_req *r, sl_offload_fn fn, void (*cancel)(void *))
{
    void *job = r->ctx;
    r->ctx = NULL;
    if (s3_body_check(r, r->body.p ? r->body.p : "", r->body.len) < 0)
        cancel(job);
    else
        sl_req_offload(r, fn, cancel, job);
}

/* A whole body against every integrity header it came with. 0, or -1
 * answered (400 InvalidDigest, BadDigest, XAmzContentSHA256Mismatch). */
int s3_body_check(struct sl_req *r, const void *body, size_t n)
{
    const char *want = sl_req_header(r, "x-amz-content-sha256");
    if (want && strlen(want) == 64 && strspn(want, "0123456789abcdef") == 64) {
        unsigned char d[32];
        unsigned dn = 0;
        EVP_Digest(body, n, d, &dn, EVP_sha256(), NULL);
        char hex[65];
        sl_hex(d, 32, hex);
        if (strcmp(hex, want)) {
            s3_err(r, 400, "XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match "
                   "what was computed.");
            return -1;
        }
    }
    const char *cmd5 = sl_req_header(r, "Content-MD5");
    if (cmd5) {
        unsigned char w[16], d[16];
        unsigned dn = 0;
        if (s3_b64dec(cmd5, w, 16) != 16) {
            s3_err(r, 400, "InvalidDigest", "The Content-MD5 you specified is not valid (base64 of 16 bytes)");
            return -1;
        }
        EVP_Digest(body, n, d, &dn, EVP_md5(), NULL);
        if (memcmp(w, d, 16)) {
            s3_err(r, 400, "BadDigest", "The Content-MD5 you specified did not match what we received.");
            return -1;
        }
    }
    static const char *const algs[] = { "crc32", "crc32c", "crc64nvme", "sha1", "sha256" };
    for (size_t i = 0; i < SL_ARRAY_SIZE(algs); i++) {
        char h[48];
        snprintf(h, sizeof(h), "x-amz-checksum-%s", algs[i]);
        const char *v = sl_req_header(r, h);
        if (!v)
            continue;
        struct s3xc x;
        s3_xc_init(&x, s3_xc_alg(algs[i]));
        s3_xc_update(&x, body, n);
        char got[160];
        s3_xc_final(&x, got);
        s3_xc_free(&x);
        if (strcmp(got, v)) {
            s3_err(r, 400, "BadDigest", "The %s you specified did not match the calculated checksum.", h);
            return -1;
        }
    }
    return 0;
}
