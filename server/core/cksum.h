/* SPDX-License-Identifier: MIT
 * cksum.h: AIStore checksum types computed while streaming
 * (none, xxhash, xxhash2, md5, crc32c, sha256, sha512). Values are lower-case
 * hex of the big-endian digest, as AIStore prints them.
 */
#ifndef SL_CKSUM_H
#define SL_CKSUM_H

#include "sl.h"

enum sl_cksum_type {
    SL_CK_NONE = 0,
    SL_CK_XXHASH,
    SL_CK_XXHASH2,
    SL_CK_MD5,
    SL_CK_CRC32C,
    SL_CK_SHA256,
    SL_CK_SHA512,
    SL_CK_MAX
};

#define SL_CKSUM_HEX_MAX 129

struct sl_cksum {
    int type;
    void *st;          /* algorithm state (XXH64_state_t, EVP_MD_CTX, crc) */
    uint32_t crc;
};

/* "xxhash2" -> SL_CK_XXHASH2; -1 when unknown. */
int sl_cksum_parse(const char *name);
const char *sl_cksum_name(int type);     /* static; "none" when unknown */
/* comma-separated list of valid names, for error messages (static) */
const char *sl_cksum_names(void);

/* May allocate c->st: sl_cksum_final or sl_cksum_free releases it (free
 * after final is a no-op). */
int sl_cksum_init(struct sl_cksum *c, int type);
void sl_cksum_update(struct sl_cksum *c, const void *p, size_t n);
/* writes hex (empty for none) and releases state */
void sl_cksum_final(struct sl_cksum *c, char out[SL_CKSUM_HEX_MAX]);
void sl_cksum_free(struct sl_cksum *c);
/* SHA-256 of a short buffer (names, keys). OpenSSL 3's one-shot SHA256()
 * looks the algorithm up by name on every call (0.4-0.9 us, and a lock);
 * this keeps the algorithm and a context per thread. */
void sl_sha256(const void *p, size_t n, unsigned char out[32]);
/* HMAC-SHA-256 under a key that changes from call to call (SigV4's key
 * derivation), the same way: HMAC() fetched HMAC and SHA-256 every time. */
void sl_hmac_sha256(const void *key, size_t klen, const void *p, size_t n, unsigned char out[32]);
/* one-shot */
void sl_cksum_buf(int type, const void *p, size_t n, char out[SL_CKSUM_HEX_MAX]);
/* compute over an open fd from offset 0 */
int sl_cksum_fd(int type, int fd, char out[SL_CKSUM_HEX_MAX]);

uint32_t sl_crc32c(uint32_t crc, const void *p, size_t n);

#endif
