/* SPDX-License-Identifier: MIT
 * s3sse.h: encryption at rest for S3 objects (s3sse.c): SSE-S3 and SSE-C,
 * per request and as a bucket default (props "sse").
 *
 * The scheme, the metadata kept and the key service: target/sse.h.
 */
#ifndef SL_S3SSE_H
#define SL_S3SSE_H

#include "s3obj.h"
#include "sse.h"

/* What a write asks (x-amz-server-side-encryption, the SSE-C headers, or
 * the bucket's default): s->mode, the key and IV, and the metadata that
 * says so appended to meta. 0 (also when nothing), -1 answered. */
int s3_sse_new(struct sl_req *r, const struct sl_bck *b, struct sl_sse *s, struct kvs *meta);
/* A part partno of an upload whose metadata (from its Create) is up: the
 * key (SSE-C: the part's headers checked against it). 0, -1 answered. */
int s3_sse_part(struct sl_req *r, const struct kvs *up, struct sl_sse *s, int partno);

/* Reading an object with md: the key from the request's SSE-C headers
 * (named with prefix pfx: "" or "x-amz-copy-source-") or the key service.
 * 0 not encrypted (and no SSE-C header), 1 ready, -1 refused: status,
 * code and msg say why (400 no key, 403 another key). */
int s3_sse_open(struct sl_req *r, const struct sl_objmd *md, const char *pfx, struct sl_sse *s, int *status,
                const char **code, char *msg, size_t mn);
/* The same for a request without an S3 answer of its own (-1: answered) */
int s3_sse_open_s3(struct sl_req *r, const struct sl_objmd *md, const char *pfx, struct sl_sse *s);
/* x-amz-server-side-encryption / the SSE-C answer headers */
void s3_sse_headers(struct sl_req *r, const struct sl_sse *s);
/* Answer [off, off+len) of fd decrypted; takes fd and s's state */
void s3_sse_serve(struct sl_req *r, int status, int fd, uint64_t off, uint64_t len, struct sl_sse *s,
                  const char *ctype);
/* A native GET that carries S3's SSE-C headers (a CopyObject's source read
 * on its target, s3copy.c; read raw): decrypted with that key. Takes fd. */
void s3_sse_native_get(struct sl_req *r, int status, int fd, uint64_t off, uint64_t len, const struct sl_objmd *md);
/* A request with SSE-C headers that did not come over TLS: refused (400
 * InvalidRequest, as AWS) unless s3.sse_c_allow_http. 0 go on, -1 answered. */
int s3_sse_transport(struct sl_req *r);
bool s3_sse_encrypted(const struct sl_objmd *md);
/* CompleteMultipartUpload of an encrypted upload: "s3.sse.parts" into meta */
void s3_sse_parts_meta(struct kvs *meta, const int *nos, const uint64_t *sizes, int n);

/* ?encryption of a bucket (props "sse", set by s3.c): GET answered; a
 * PUT's body checked (0: set "AES256"; -1 answered) */
void s3_sse_bck_get(struct sl_req *r, const struct sl_bck *b);
int s3_sse_bck_config(struct sl_req *r, const char *body, size_t n);

#endif
