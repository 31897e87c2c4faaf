/* SPDX-License-Identifier: MIT
 * s3chunk.h: an aws-chunked body ("<hex>[;chunk-signature=SIG]\r\n<bytes>\r\n
 * ... 0[;chunk-signature=SIG]\r\n[trailers]\r\n"), decoded with the strict
 * chunked decoder (core/chunked.h): the decoded bytes go to a sink; with
 * SigV4 streaming each chunk's signature is checked against its bytes (a
 * chain from the request's seed signature), and with a signed trailer the
 * trailers against x-amz-trailer-signature; an x-amz-checksum-* trailer is
 * kept for the caller to compare. Pure computation on the caller's thread.
 */
#ifndef SL_S3CHUNK_H
#define SL_S3CHUNK_H

#include "chunked.h"
#include "s3sig.h"

#include <stdbool.h>

struct s3chunk {
    struct sl_chunked ck;
    /* set up by s3chunk_init */
    const struct sl_s3_auth *a;   /* NULL: chunks are not signed */
    const char *secret;
    bool signed_trailer;          /* STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER */
    int (*sink)(void *arg, const char *p, size_t n); /* non-zero: stop (the sink said why) */
    void *arg;
    /* state */
    void *csha;                   /* EVP_MD_CTX of the current chunk, when signed */
    char prev_sig[SL_S3_SIG_HEX];
    char sig[SL_S3_SIG_HEX];      /* this chunk's chunk-signature */
    char tcanon[512];             /* the trailers as signed: "name:value\n" each */
    size_t tcl;
    char tsig[SL_S3_SIG_HEX];     /* x-amz-trailer-signature */
    /* results */
    char trailer_name[64];        /* an x-amz-checksum-NAME trailer: NAME and its value */
    char trailer_val[160];
    int status;                   /* the refusal when s3chunk_feed failed for the body's sake */
    const char *code;
    char msg[256];
};

/* a and secret (borrowed until s3chunk_free; a NULL: unsigned chunks)
 * with a->signature the seed; sink takes the decoded bytes. */
void s3chunk_init(struct s3chunk *c, const struct sl_s3_auth *a, const char *secret, bool signed_trailer,
                  int (*sink)(void *arg, const char *p, size_t n), void *arg);
void s3chunk_free(struct s3chunk *c);
/* 0, or -1: refused (status/code/msg set) or the sink stopped (status 0) */
int s3chunk_feed(struct s3chunk *c, const char *p, size_t n);
/* The body ended: 0 when the final chunk and the trailers were in (and the
 * trailer signature, when signed, verified), else -1 with status/code/msg. */
int s3chunk_end(struct s3chunk *c);

#endif
