/* SPDX-License-Identifier: MIT
 * chunked.h: the chunked framing of HTTP/1.1 (RFC 9112 §7.1), decoded
 * strictly, incrementally and within bounds: hexadecimal sizes, every line
 * ended by CRLF, an extension line of at most SL_CHUNKED_EXT_MAX bytes and
 * a trailer section of at most SL_CHUNKED_TRAILER_MAX. One decoder for the
 * peers' chunked answers (node/fwd.c) and S3's aws-chunked bodies
 * (api/s3chunk.c, whose chunk signatures ride in the extensions and whose
 * checksums in the trailers).
 *
 * A decoder is plain state (no allocation): zero it (or sl_chunked_init)
 * and feed it bytes in pieces of any size. One thread at a time.
 */
#ifndef SL_CHUNKED_H
#define SL_CHUNKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SL_CHUNKED_EXT_MAX 1024           /* a chunk's extension (after ';') */
#define SL_CHUNKED_TRAILER_MAX (32 * 1024) /* all trailer lines together */

/* What the decoder hands on; any member may be NULL (then nothing of it is
 * kept: an extension or a trailer line is only counted). A callback that
 * returns non-zero stops the decoding (sl_chunked_feed returns -1, *why
 * NULL: the callback knows why). */
struct sl_chunked_cb {
    void *arg;
    int (*data)(void *arg, const char *p, size_t n);
    /* a chunk's size line is in: size (0: the last chunk) and its extension
     * (the bytes after ';', ext_len 0 when none) */
    int (*chunk)(void *arg, uint64_t size, const char *ext, size_t ext_len);
    /* a chunk's data and the CRLF after it are in */
    int (*chunk_end)(void *arg);
    /* one trailer field line, without its CRLF */
    int (*trailer)(void *arg, const char *line, size_t len);
};

struct sl_chunked {
    int st;
    uint64_t left;              /* bytes left of the chunk */
    size_t digits;              /* of the size */
    size_t tlen;                /* bytes of the trailer section so far */
    char line[SL_CHUNKED_EXT_MAX + 1]; /* the extension or trailer line, when a callback wants it */
    size_t ll;
};

void sl_chunked_init(struct sl_chunked *c);
/* Decode p[0..n): 0, with *used the bytes that were framing (less than n
 * only when the framing ended: what follows is not the body's); -1 when
 * the framing is malformed (*why: what, static) or a callback stopped it
 * (*why NULL). */
int sl_chunked_feed(struct sl_chunked *c, const char *p, size_t n, const struct sl_chunked_cb *cb, size_t *used,
                    const char **why);
/* The last chunk and the trailer section's end are in. */
bool sl_chunked_done(const struct sl_chunked *c);

#endif
