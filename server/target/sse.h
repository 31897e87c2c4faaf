/* SPDX-License-Identifier: MIT
 * sse.h: encryption at rest (sse.c): the cipher, the key service that
 * wraps per-object data keys (the master key file of s3.sse_key_file),
 * and an object's decryptor. S3 (api/s3sse.c) and the native API alike
 * write with it; the read path (cluster/read.c) decrypts with it.
 *
 * An object's bytes are AES-256-CTR under a data key, with a random
 * 128-bit IV per object; the counter of the 16-byte block at offset o is
 * IV + o/16 (+ N * 2^36 in part N of a multipart object), so a range is
 * decrypted from where it starts. The file holds ciphertext only: its
 * checksum (the store's) covers the ciphertext, so rebalance, mirroring,
 * EC and checksum validation move and check it untouched. Kept in the
 * object's custom metadata:
 *   "s3.sse"       "AES256" (SSE-S3) or "SSE-C"
 *   "s3.sse.iv"    the IV (hex)
 *   "s3.sse.kid"   SSE-S3: the id of the master key (key service)
 *   "s3.sse.dk"    SSE-S3: the data key wrapped by that key (RFC 3394, hex)
 *   "s3.sse.salt", "s3.sse.kh"  SSE-C: a salt and HMAC-SHA256(salt, key),
 *                  to tell the customer's key from a wrong one (the key
 *                  itself is never stored)
 *   "s3.sse.parts" a multipart object: its parts, "FIRST[-LAST]:SIZE,..."
 */
#ifndef SL_SSE_H
#define SL_SSE_H

#include "md.h"
#include "meta.h"

enum { SL_SSE_NONE = 0, SL_SSE_S3, SL_SSE_C };

/* The key service SSE-S3 wraps data keys with: a function table, so that
 * a KMS can stand in for the key file. */
struct sl_kms {
    const char *name;
    /* the id of the key new objects are wrapped with; -1 with err when none */
    int (*key_id)(char *kid, size_t n, struct sl_err *err);
    int (*wrap)(const char *kid, const unsigned char dk[32], unsigned char *out, size_t *outn, struct sl_err *err);
    int (*unwrap)(const char *kid, const unsigned char *in, size_t inn, unsigned char dk[32], struct sl_err *err);
};
extern const struct sl_kms *sl_kms;
/* The key file of s3.sse_key_file readable and well-formed (shaled --check-config) */
int sl_sse_key_check(const char *path, struct sl_err *err);

struct sl_sse_seg {
    int no;                         /* counter space: 0 a whole object, N part N */
    uint64_t off, size;
};

struct sl_sse {
    int mode;
    unsigned char key[32];          /* the data key (SSE-C: the customer's) */
    unsigned char iv[16];
    char kmd5[32];                  /* SSE-C: base64 MD5 of the key, as answered */
    void *c;                        /* EVP_CIPHER_CTX */
    struct sl_sse_seg *seg;         /* a reader's layout */
    int nseg, cur;
    uint64_t next;                  /* the object offset c stands at (UINT64_MAX: nowhere) */
    char *buf;                      /* a writer's ciphertext */
    size_t bufn;
};

void sl_sse_free(struct sl_sse *s);
/* c at block blk of counter space no (a writer's start: 0, 0; part N: N, 0) */
void sl_sse_ctr_at(struct sl_sse *s, int no, uint64_t blk);
/* A writer's next n bytes encrypted (into s->buf: returned) */
const char *sl_sse_crypt(struct sl_sse *s, const char *p, size_t n);
/* n bytes at object offset off, decrypted (or encrypted) in place */
void sl_sse_xor_at(struct sl_sse *s, uint64_t off, char *buf, size_t n);

/* A new SSE-S3 object: a random data key and IV into s (ready to
 * encrypt from offset 0), the metadata that says so through add(arg, k, v).
 * -1 with err (no master key). */
int sl_sse_new_s3(struct sl_sse *s, void (*add)(void *arg, const char *k, const char *v), void *arg,
                  struct sl_err *err);
/* The encryption an object's metadata names: SL_SSE_NONE, _S3, _C */
int sl_sse_mode(const struct sl_objmd *md);
/* The custom entry k is the encryption's own (kept with the ciphertext only) */
bool sl_sse_key_is_own(const char *k);
/* The layout of an object's counter spaces ("s3.sse.parts", else one) into s */
void sl_sse_layout(struct sl_sse *s, const struct sl_objmd *md);
/* The decryptor of an SSE-S3 object (its data key unwrapped, its layout):
 * 0, or -1 with err (SL_EINTERNAL: no master key, damaged metadata). */
int sl_sse_open_s3(const struct sl_objmd *md, struct sl_sse *s, struct sl_err *err);
/* The bucket's default encryption (props "sse", set by S3 ?encryption):
 * SL_SSE_S3 or SL_SSE_NONE */
int sl_sse_bck_default(const struct sl_bck *b);
/* fd's size bytes decrypted into a new anonymous memory file (memfd: never
 * on the data disks): its fd, or -1 with err. s is used from offset 0. */
int sl_sse_plain_fd(struct sl_sse *s, int fd, uint64_t size, struct sl_err *err);

#endif
