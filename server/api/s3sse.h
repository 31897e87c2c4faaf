/* SPDX-License-Identifier: MIT
 * s3sse.h: encryption at rest for S3 objects (s3sse.c): SSE-S3 and SSE-C,
 * per request and as a bucket default (props "sse").
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
#ifndef SL_S3SSE_H
#define SL_S3SSE_H

#include "s3obj.h"

enum { S3SSE_NONE = 0, S3SSE_S3, S3SSE_C };

/* The key service SSE-S3 wraps data keys with: a function table, so that
 * a KMS can stand in for the key file. */
struct s3_kms {
    const char *name;
    /* the id of the key new objects are wrapped with; -1 with err when none */
    int (*key_id)(char *kid, size_t n, struct sl_err *err);
    int (*wrap)(const char *kid, const unsigned char dk[32], unsigned char *out, size_t *outn, struct sl_err *err);
    int (*unwrap)(const char *kid, const unsigned char *in, size_t inn, unsigned char dk[32], struct sl_err *err);
};
extern const struct s3_kms *s3_kms;
/* The key file of s3.sse_key_file readable and well-formed (shaled --check-config) */
int s3_sse_key_check(const char *path, struct sl_err *err);

struct s3sse_seg {
    int no;                         /* counter space: 0 a whole object, N part N */
    uint64_t off, size;
};

struct s3sse {
    int mode;
    unsigned char key[32];          /* the data key (SSE-C: the customer's) */
    unsigned char iv[16];
    char kmd5[32];                  /* SSE-C: base64 MD5 of the key, as answered */
    void *c;                        /* EVP_CIPHER_CTX */
    struct s3sse_seg *seg;          /* a reader's layout */
    int nseg, cur;
    uint64_t next;                  /* the object offset c stands at (UINT64_MAX: nowhere) */
    char *buf;                      /* a writer's ciphertext */
    size_t bufn;
};

void s3_sse_free(struct s3sse *s);

/* What a write asks (x-amz-server-side-encryption, the SSE-C headers, or
 * the bucket's default): s->mode, the key and IV, and the metadata that
 * says so appended to meta. 0 (also when nothing), -1 answered. */
int s3_sse_new(struct sl_req *r, const struct sl_bck *b, struct s3sse *s, struct kvs *meta);
/* A part partno of an upload whose metadata (from its Create) is up: the
 * key (SSE-C: the part's headers checked against it). 0, -1 answered. */
int s3_sse_part(struct sl_req *r, const struct kvs *up, struct s3sse *s, int partno);
/* A writer's next n bytes encrypted (into s->buf: returned) */
const char *s3_sse_crypt(struct s3sse *s, const char *p, size_t n);

/* Reading an object with md: the key from the request's SSE-C headers
 * (named with prefix pfx: "" or "x-amz-copy-source-") or the key service.
 * 0 not encrypted (and no SSE-C header), 1 ready, -1 refused: status,
 * code and msg say why (400 no key, 403 another key). */
int s3_sse_open(struct sl_req *r, const struct sl_objmd *md, const char *pfx, struct s3sse *s, int *status,
                const char **code, char *msg, size_t mn);
/* The same for a request without an S3 answer of its own (-1: answered) */
int s3_sse_open_s3(struct sl_req *r, const struct sl_objmd *md, const char *pfx, struct s3sse *s);
/* n bytes at object offset off, decrypted in place */
void s3_sse_xor_at(struct s3sse *s, uint64_t off, char *buf, size_t n);
/* x-amz-server-side-encryption / the SSE-C answer headers */
void s3_sse_headers(struct sl_req *r, const struct s3sse *s);
/* Answer [off, off+len) of fd decrypted; takes fd and s's state */
void s3_sse_serve(struct sl_req *r, int status, int fd, uint64_t off, uint64_t len, struct s3sse *s,
                  const char *ctype);
/* The native API's GET of an encrypted object (api/tgt.c): SSE-S3
 * decrypted, SSE-C with the S3 SSE-C headers only. Takes fd. */
void s3_sse_native_get(struct sl_req *r, int status, int fd, uint64_t off, uint64_t len, const struct sl_objmd *md);
bool s3_sse_encrypted(const struct sl_objmd *md);
/* A copy's custom entry that belongs to the source's encryption */
bool s3_sse_key_is_own(const char *k);
/* CompleteMultipartUpload of an encrypted upload: "s3.sse.parts" into meta */
void s3_sse_parts_meta(struct kvs *meta, const int *nos, const uint64_t *sizes, int n);

/* ?encryption of a bucket (props "sse", set by s3.c): GET answered; a
 * PUT's body checked (0: set "AES256"; -1 answered) */
void s3_sse_bck_get(struct sl_req *r, const struct sl_bck *b);
int s3_sse_bck_config(struct sl_req *r, const char *body, size_t n);

#endif
