/* SPDX-License-Identifier: MIT
 * fuzz_h1.c: the direct forward's HTTP/1.1 answer parser (server/node/h1.c,
 * chunked bodies through server/core/chunked.c). Input: one byte of flags
 * (bit 0: the request was a HEAD; the rest picks the piece sizes), then the
 * peer's bytes. Each input is parsed whole and in pieces: both must agree
 * on everything handed on (the body only when it was all taken), on the
 * verdict and on the state.
 */
#include "fuzz_node.h"
#include "h1.h"

#include <string.h>

struct run {
    struct sl_h1 h;
    struct fz_digest d;          /* status lines, fields and heads, in order */
    struct fz_digest body;       /* (a length is checked per piece: a refused piece passes no byte) */
    int rc;
    const char *why;
    int fields;
};

static int on_status(void *arg, int st)
{
    struct run *r = arg;
    FZ_CHECK(st >= 100 && st <= 999 && st != 101);
    r->fields = 0;
    fz_digest_int(&r->d, st);
    return 0;
}

static int on_field(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    struct run *r = arg;
    FZ_CHECK(kl > 0 && ++r->fields <= SL_H1_FIELDS_MAX);
    FZ_CHECK(!memchr(k, ':', kl) && !memchr(v, '\r', vl) && !memchr(v, '\n', vl) && !memchr(v, 0, vl));
    fz_digest_add(&r->d, k, kl);
    fz_digest_int(&r->d, -1);
    fz_digest_add(&r->d, v, vl);
    return 0;
}

static int on_head(void *arg, const struct sl_h1 *h)
{
    struct run *r = arg;
    FZ_CHECK(h->status >= 200 && h->head_done && !(h->chunked && h->clen >= 0) && !(h->to_eof && h->keep));
    fz_digest_int(&r->d, -2);
    fz_digest_int(&r->d, h->clen);
    return 0;
}

static int on_body(void *arg, const char *p, size_t n)
{
    struct run *r = arg;
    FZ_CHECK(n > 0);
    fz_digest_add(&r->body, p, n);
    return 0;
}

static int feed(void *arg, const char *p, size_t n)
{
    struct run *r = arg;
    const struct sl_h1_cb cb = { r, on_status, on_field, on_head, on_body };
    r->rc = sl_h1_feed(&r->h, p, n, &cb, &r->why);
    return r->rc;
}

static void run(void *arg, uint8_t flags, const char *p, size_t n, uint32_t seed)
{
    struct run *r = arg;
    memset(r, 0, sizeof(*r));
    sl_h1_init(&r->h, flags & 1);
    fz_pieces(p, n, seed, feed, r);
}

void fuzz_one(const uint8_t *data, size_t size)
{
    struct run a, b;
    size_t n;
    fz_whole_and_pieces(data, size, run, &a, &b, &n);
    FZ_CHECK(a.rc == b.rc && fz_digest_eq(&a.d, &b.d) && (a.rc || fz_digest_eq(&a.body, &b.body)));
    FZ_CHECK(fz_same_text(a.why, b.why));
    FZ_CHECK(a.rc == 0 || a.rc == -1);
    FZ_CHECK(a.rc == 0 || a.why != NULL); /* (no callback here stops it) */
    FZ_CHECK(a.h.got <= n);
    /* (after a refusal the state is not looked at: the transport drops the
     * connection, and the pieces may have passed on more of the body first) */
    FZ_CHECK(a.h.head_done == b.h.head_done && (a.rc || sl_h1_done(&a.h) == sl_h1_done(&b.h)));
    FZ_CHECK(a.rc || (a.h.got == b.h.got && a.h.got == a.body.n));
    if (a.rc == 0 && a.h.head_done) {
        const struct sl_h1 *h = &a.h;
        FZ_CHECK(h->status == b.h.status && h->clen == b.h.clen && h->chunked == b.h.chunked &&
                 h->to_eof == b.h.to_eof && h->keep == b.h.keep);
        FZ_CHECK(!h->head || (!h->chunked && !h->to_eof && h->got == 0 && sl_h1_done(h)));
        if (!h->chunked && h->clen >= 0 && !h->head)
            FZ_CHECK(h->got <= (uint64_t)h->clen && sl_h1_done(h) == (h->got == (uint64_t)h->clen));
        /* what the transport does after: bytes received in place, the close */
        const char *why;
        int rc = sl_h1_take(&a.h, 3, &why);
        FZ_CHECK(h->chunked ? rc < 0 : rc == 0 || why != NULL);
        FZ_CHECK(sl_h1_eof(&b.h) == (b.h.to_eof && b.h.head_done));
    } else if (a.rc == 0) {
        FZ_CHECK(!sl_h1_done(&a.h) && !sl_h1_eof(&a.h) && a.h.got == 0);
    }
    sl_h1_free(&a.h);
    sl_h1_free(&b.h);
}
