/* SPDX-License-Identifier: MIT
 * fuzz_chunked.c: the strict chunked decoder (server/core/chunked.c).
 * Input: one byte of flags (bit 0: no callbacks at all; bits 1-3: a
 * callback stops the decoding at its k-th call; the rest picks the piece
 * sizes), then the chunked bytes. Each input is decoded whole and in
 * pieces: both must agree on every callback, the verdict and the bytes
 * used.
 */
#include "fuzz_node.h"
#include "chunked.h"

#include <string.h>

struct run {
    struct sl_chunked c;
    const struct sl_chunked_cb *cb;
    struct fz_digest d;
    int calls, stop_at;          /* stop_at: the framing call (not data: pieces split it) that returns
                                  * non-zero (0: none) */
    int rc;
    const char *why;
    size_t used, data;
};

static int event(struct run *r, int kind)
{
    fz_digest_int(&r->d, kind);
    return ++r->calls == r->stop_at;
}

static int on_data(void *arg, const char *p, size_t n)
{
    struct run *r = arg;
    r->data += n;
    fz_digest_add(&r->d, p, n);
    return 0;
}

static int on_chunk(void *arg, uint64_t size, const char *ext, size_t el)
{
    struct run *r = arg;
    FZ_CHECK(el <= SL_CHUNKED_EXT_MAX && ext[el] == 0 && size < (UINT64_C(1) << 63));
    fz_digest_int(&r->d, (int64_t)size);
    fz_digest_add(&r->d, ext, el);
    return event(r, 2);
}

static int on_chunk_end(void *arg)
{
    return event(arg, 3);
}

static int on_trailer(void *arg, const char *line, size_t len)
{
    struct run *r = arg;
    FZ_CHECK(len > 0 && len <= SL_CHUNKED_EXT_MAX && line[len] == 0 && !memchr(line, '\r', len));
    fz_digest_add(&r->d, line, len);
    return event(r, 4);
}

static int feed(void *arg, const char *p, size_t n)
{
    struct run *r = arg;
    size_t used = 0;
    r->rc = sl_chunked_feed(&r->c, p, n, r->cb, &used, &r->why);
    FZ_CHECK(used <= n);
    FZ_CHECK(r->rc < 0 || used == n || sl_chunked_done(&r->c));
    r->used += used;
    return r->rc || used < n; /* (the framing ended: the rest is not the body's) */
}

static void run(void *arg, uint8_t flags, const char *p, size_t n, uint32_t seed)
{
    struct run *r = arg;
    static const struct sl_chunked_cb none = { 0 };
    const struct sl_chunked_cb all = { r, on_data, on_chunk, on_chunk_end, on_trailer };
    memset(r, 0, sizeof(*r));
    sl_chunked_init(&r->c);
    r->cb = flags & 1 ? (seed & 1 ? NULL : &none) : &all; /* (both kinds of "none" must agree) */
    r->stop_at = (flags >> 1) & 7;
    fz_pieces(p, n, seed, feed, r);
    r->cb = NULL;
}

void fuzz_one(const uint8_t *data, size_t size)
{
    struct run a, b;
    size_t n;
    fz_whole_and_pieces(data, size, run, &a, &b, &n);
    FZ_CHECK(a.rc == b.rc && a.used == b.used && a.data == b.data && fz_digest_eq(&a.d, &b.d));
    FZ_CHECK(fz_same_text(a.why, b.why));
    FZ_CHECK(sl_chunked_done(&a.c) == sl_chunked_done(&b.c));
    FZ_CHECK(a.rc == 0 || a.why || a.calls == a.stop_at); /* no text: a callback stopped it */
    FZ_CHECK(a.data <= n && a.used <= n);
}
