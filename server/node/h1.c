/* SPDX-License-Identifier: MIT
 * h1.c: a peer's HTTP/1.1 answer, strict and bounded. See h1.h.
 */
#include "h1.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

/* the trailer is held to the header section's bound, a chunk extension to a line's */
_Static_assert(SL_CHUNKED_TRAILER_MAX == SL_H1_HDR_MAX, "trailer bound");
_Static_assert(SL_H1_LINE_MAX == 1024, "chunk extension bound");

void sl_h1_init(struct sl_h1 *h, bool head)
{
    memset(h, 0, sizeof(*h));
    sl_buf_init(&h->hb);
    h->clen = -1;
    h->head = head;
}

void sl_h1_free(struct sl_h1 *h)
{
    sl_buf_free(&h->hb);
}

static int bad(const char **why, const char *what)
{
    *why = what;
    return -1;
}

static bool tchar(int ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* A Connection value (a token list: "keep-alive, close") names close. */
static bool has_close(const char *p, size_t n)
{
    const char *e = p + n;
    while (p < e) {
        while (p < e && (*p == ',' || *p == ' ' || *p == '\t'))
            p++;
        const char *t = p;
        while (p < e && *p != ',' && *p != ' ' && *p != '\t')
            p++;
        if (p - t == 5 && !strncasecmp(t, "close", 5))
            return true;
    }
    return false;
}

/* One header field line [p, e) (no CRLF). */
static int field(struct sl_h1 *h, const char *p, const char *e, bool *te_seen, const struct sl_h1_cb *cb,
                 const char **why)
{
    const char *k = p;
    while (p < e && tchar((unsigned char)*p))
        p++;
    if (p == k || p == e || *p != ':')
        return bad(why, "a header line that is not \"Name: value\"");
    size_t kl = (size_t)(p - k);
    p++;
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    for (const char *q = p; q < e; q++)
        if ((unsigned char)*q < 0x20 && *q != '\t')
            return bad(why, "a control character in a header value");
    if (h->nf == SL_H1_FIELDS_MAX)
        return bad(why, "more than 128 header fields");
    size_t vl = (size_t)(e - p);
    if (kl == 14 && !strncasecmp(k, "Content-Length", kl)) {
        uint64_t v = 0;
        size_t i = 0;
        while (i < vl && i < 18 && isdigit((unsigned char)p[i]))
            v = v * 10 + (uint64_t)(p[i++] - '0');
        if (!vl || i != vl || (h->clen >= 0 && (uint64_t)h->clen != v))
            return bad(why, "a Content-Length that is not one decimal number");
        h->clen = (int64_t)v;
    } else if (kl == 17 && !strncasecmp(k, "Transfer-Encoding", kl)) {
        if (*te_seen || vl != 7 || strncasecmp(p, "chunked", 7))
            return bad(why, "a Transfer-Encoding other than chunked");
        *te_seen = true;
    } else if (kl == 10 && !strncasecmp(k, "Connection", kl) && has_close(p, vl)) {
        h->keep = false;
    }
    h->nf++;
    if (cb && cb->field && cb->field(cb->arg, k, kl, p, vl))
        return bad(why, NULL);
    return 0;
}

/* The status line and header fields in h->hb, up to the blank line at
 * hend. 0, 1 for an interim (1xx) answer to skip, -1. */
static int head(struct sl_h1 *h, const char *hend, const struct sl_h1_cb *cb, const char **why)
{
    const char *p = h->hb.p, *e = memchr(p, '\r', (size_t)(hend - p));
    if (!e || e[1] != '\n' || e - p < 12 || strncmp(p, "HTTP/1.", 7) || (p[7] != '0' && p[7] != '1') ||
        p[8] != ' ' || !isdigit((unsigned char)p[9]) || !isdigit((unsigned char)p[10]) ||
        !isdigit((unsigned char)p[11]) || (e - p > 12 && p[12] != ' '))
        return bad(why, "no \"HTTP/1.x NNN\" status line");
    int status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    if (status < 100)
        return bad(why, "a status under 100");
    if (status == 101) /* (nobody asked it to switch) */
        return bad(why, "a 101 switch of protocols");
    h->status = status;
    h->keep = p[7] == '1';
    h->clen = -1;
    h->nf = 0;
    if (cb && cb->status && cb->status(cb->arg, status))
        return bad(why, NULL);
    bool te = false;
    for (p = e + 2; p < hend; p = e + 2) {
        e = memchr(p, '\r', (size_t)(hend - p));
        if (!e || e[1] != '\n')
            return bad(why, "a header line not ended by CRLF");
        if (field(h, p, e, &te, cb, why) < 0)
            return -1;
    }
    if (status < 200)
        return ++h->interim > SL_H1_INTERIM_MAX ? bad(why, "more than 8 interim (1xx) answers") : 1;
    if (te && h->clen >= 0)
        return bad(why, "both Content-Length and Transfer-Encoding");
    bool none = h->head || status == 204 || status == 304;
    h->chunked = te && !none;
    sl_chunked_init(&h->ck);
    h->to_eof = !none && !te && h->clen < 0;
    if (h->to_eof)
        h->keep = false;
    if (none && !h->head)
        h->clen = 0;
    return 0;
}

struct dec {
    struct sl_h1 *h;
    const struct sl_h1_cb *cb;
};

static int dec_data(void *arg, const char *p, size_t n)
{
    struct dec *d = arg;
    d->h->got += n;
    return d->cb && d->cb->body && n ? d->cb->body(d->cb->arg, p, n) : 0;
}

/* Body bytes after the header section (p NULL: the caller has them). */
static int body(struct sl_h1 *h, const char *p, size_t n, const struct sl_h1_cb *cb, const char **why)
{
    if (h->head || (!h->chunked && !h->to_eof && h->clen == 0))
        return bad(why, "a body where none belongs");
    if (h->chunked) {
        struct dec d = { h, cb };
        const struct sl_chunked_cb ccb = { .arg = &d, .data = dec_data };
        size_t used;
        if (sl_chunked_feed(&h->ck, p, n, &ccb, &used, why) < 0)
            return -1;
        return used < n ? bad(why, "bytes after the last chunk") : 0;
    }
    if (h->clen >= 0 && h->got + n > (uint64_t)h->clen)
        return bad(why, "more body than its Content-Length");
    h->got += n;
    if (p && n && cb && cb->body && cb->body(cb->arg, p, n))
        return bad(why, NULL);
    return 0;
}

int sl_h1_feed(struct sl_h1 *h, const char *p, size_t n, const struct sl_h1_cb *cb, const char **why)
{
    *why = NULL;
    while (!h->head_done && n) {
        /* (a section found beyond the bound is refused all the same: no more is held) */
        size_t old = h->hb.len, k = SL_MIN(n, (size_t)SL_H1_HDR_MAX + 1 - old);
        sl_buf_add(&h->hb, p, k);
        const char *from = h->hb.p + (old > 3 ? old - 3 : 0);
        const char *end = memmem(from, h->hb.len - (size_t)(from - h->hb.p), "\r\n\r\n", 4);
        if (!end)
            return h->hb.len > SL_H1_HDR_MAX ? bad(why, "header fields over 32 KiB") : 0;
        size_t hl = (size_t)(end - h->hb.p) + 4;
        if (hl > SL_H1_HDR_MAX)
            return bad(why, "header fields over 32 KiB");
        int rc = head(h, end + 2, cb, why);
        if (rc < 0)
            return -1;
        size_t used = hl - old; /* of p */
        p += used;
        n -= used;
        h->hb.len = 0;
        if (rc == 0) {
            h->head_done = true;
            if (cb && cb->head && cb->head(cb->arg, h))
                return bad(why, NULL);
        }
    }
    return n ? body(h, p, n, cb, why) : 0;
}

int sl_h1_take(struct sl_h1 *h, size_t n, const char **why)
{
    *why = NULL;
    if (!h->head_done || h->chunked)
        return bad(why, "body bytes taken outside a Content-Length or to-the-close body");
    return n ? body(h, NULL, n, NULL, why) : 0;
}

bool sl_h1_done(const struct sl_h1 *h)
{
    if (!h->head_done)
        return false;
    if (h->to_eof)
        return h->eof;
    return h->chunked ? sl_chunked_done(&h->ck) : h->head || h->got == (uint64_t)h->clen;
}

bool sl_h1_eof(struct sl_h1 *h)
{
    if (h->head_done && h->to_eof)
        h->eof = true;
    return h->eof;
}

bool sl_h1_idle(const struct sl_h1 *h)
{
    return !h->head_done && !h->hb.len;
}
