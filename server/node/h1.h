/* SPDX-License-Identifier: MIT
 * h1.h: a peer's HTTP/1.1 answer (RFC 9112), parsed strictly, incrementally
 * and within bounds: the status line ("HTTP/1.x NNN"), header fields
 * ("Name: value", no obs-fold, no control characters), and a body framed by
 * Content-Length (one decimal number, repeated only with the same value),
 * chunked (core/chunked.h, the one chunked decoder) or the close of the
 * connection. Interim (1xx) answers are skipped, up to SL_H1_INTERIM_MAX.
 * A HEAD's answer and a 204 or 304 have no body. Anything else is refused
 * with a static text that says what was malformed.
 *
 * Pure computation: no sockets, no threads, no clock. The caller feeds the
 * bytes it received in pieces of any size; what is parsed goes to the
 * callbacks of struct sl_h1_cb. One thread at a time per parser.
 */
#ifndef SL_H1_H
#define SL_H1_H

#include "chunked.h"
#include "sl.h"

#define SL_H1_HDR_MAX (32 * 1024)         /* the status line and header fields (and the trailer) */
#define SL_H1_LINE_MAX SL_CHUNKED_EXT_MAX /* a chunk-size line's extension */
#define SL_H1_FIELDS_MAX 128              /* header fields of one answer */
#define SL_H1_INTERIM_MAX 8               /* 1xx answers before the final one */

struct sl_h1;

/* What the parser hands on; any member may be NULL. A callback that
 * returns non-zero stops the parsing (sl_h1_feed returns -1, *why NULL).
 * Pointers passed to a callback are valid during the call only. */
struct sl_h1_cb {
    void *arg;
    /* a status line, interim (1xx) ones too: the fields that follow are its */
    int (*status)(void *arg, int status);
    /* one header field: its name, and its value without surrounding blanks */
    int (*field)(void *arg, const char *name, size_t nlen, const char *value, size_t vlen);
    /* the final answer's header section is in: h->status, h->clen,
     * h->chunked, h->to_eof and h->keep say what follows */
    int (*head)(void *arg, const struct sl_h1 *h);
    /* body bytes, decoded (without the chunked framing) */
    int (*body)(void *arg, const char *p, size_t n);
};

/* Plain state: sl_h1_init, feed, sl_h1_free. The members above "private"
 * are the caller's to read once the head callback ran. */
struct sl_h1 {
    int status;                 /* the final answer's status */
    int64_t clen;               /* the body's length: 0 when none belongs (204, 304), -1 unknown (chunked,
                                 * to the close); a HEAD's answer keeps its Content-Length (or -1) */
    bool head_done;             /* the final answer's header section is in */
    bool chunked;               /* the body is chunked */
    bool to_eof;                /* no length: the body ends when the peer closes the connection */
    bool keep;                  /* HTTP/1.1 without "Connection: close": the connection may serve again */
    uint64_t got;               /* body bytes so far (decoded) */
    /* private */
    bool head;                  /* the request was a HEAD */
    bool eof;                   /* sl_h1_eof ended a body that runs to the close */
    int interim, nf;
    struct sl_buf hb;           /* the header section so far (at most SL_H1_HDR_MAX + 1 bytes) */
    struct sl_chunked ck;
};

/* head: the answer is to a HEAD (it has no body, whatever it says). */
void sl_h1_init(struct sl_h1 *h, bool head);
/* Release what the parser holds; sl_h1_init again to reuse it. */
void sl_h1_free(struct sl_h1 *h);
/* Parse p[0..n). 0: fine so far (sl_h1_done says when the answer is
 * complete; bytes beyond its end are refused); -1: malformed (*why: what,
 * static) or a callback stopped it (*why NULL). After -1 the parser is
 * spent. */
int sl_h1_feed(struct sl_h1 *h, const char *p, size_t n, const struct sl_h1_cb *cb, const char **why);
/* n body bytes of a Content-Length or to-the-close body that the caller
 * received into place itself (after the head callback; not chunked):
 * counted and checked as sl_h1_feed would, with no callback. 0 or -1
 * (*why). */
int sl_h1_take(struct sl_h1 *h, size_t n, const char **why);
/* The answer is complete: its header section and all of its body (a body
 * that runs to the close is complete only at sl_h1_eof). */
bool sl_h1_done(const struct sl_h1 *h);
/* The peer closed the connection: true when that ends the answer (its
 * header section is in and its body runs to the close), false when the
 * answer is cut short. */
bool sl_h1_eof(struct sl_h1 *h);
/* No byte of an answer is held: nothing came yet, or only whole interim
 * answers (a close now is a close before answering). */
bool sl_h1_idle(const struct sl_h1 *h);

#endif
