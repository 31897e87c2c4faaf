/* SPDX-License-Identifier: MIT
 * test_h1.c: the HTTP/1.1 answer parser of the direct forward
 * (server/node/h1.c): well-formed answers fed whole and in pieces of every
 * size from 1 byte up (Content-Length, chunked with extensions and
 * trailers, interim answers, HEAD, 204/304, to the close), and each kind
 * of malformed answer refused with a text that says what was wrong.
 */
#include "tap.h"
#include "h1.h"

#include <stdlib.h>
#include <string.h>

/* what the callbacks saw */
struct seen {
    int status[16], ns;
    struct sl_buf fields;      /* "name=value\n" each */
    int heads;
    struct sl_buf body;
    int stop_at_status;        /* a status callback that returns non-zero for this status */
};

static int on_status(void *arg, int st)
{
    struct seen *s = arg;
    if (s->ns < (int)SL_ARRAY_SIZE(s->status))
        s->status[s->ns++] = st;
    return st == s->stop_at_status;
}

static int on_field(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    struct seen *s = arg;
    sl_buf_add(&s->fields, k, kl);
    sl_buf_addc(&s->fields, '=');
    sl_buf_add(&s->fields, v, vl);
    sl_buf_addc(&s->fields, '\n');
    return 0;
}

static int on_head(void *arg, const struct sl_h1 *h)
{
    struct seen *s = arg;
    (void)h;
    s->heads++;
    return 0;
}

static int on_body(void *arg, const char *p, size_t n)
{
    struct seen *s = arg;
    sl_buf_add(&s->body, p, n);
    return 0;
}

static void seen_free(struct seen *s)
{
    sl_buf_free(&s->fields);
    sl_buf_free(&s->body);
    memset(s, 0, sizeof(*s));
}

/* Feed in[0..n) in pieces of step bytes (0: whole): 0, or -1 with *why. */
static int feed(struct sl_h1 *h, bool head, const char *in, size_t n, size_t step, struct seen *s, const char **why)
{
    const struct sl_h1_cb cb = { s, on_status, on_field, on_head, on_body };
    int stop = s->stop_at_status;
    seen_free(s);
    s->stop_at_status = stop;
    sl_h1_init(h, head);
    *why = NULL;
    size_t off = 0;
    do {
        size_t k = step && n - off > step ? step : n - off;
        if (sl_h1_feed(h, in + off, k, &cb, why) < 0)
            return -1;
        off += k;
    } while (off < n);
    return 0;
}

/* What a well-formed answer must give, in pieces of every size. */
struct want {
    int status;
    int64_t clen;
    bool chunked, to_eof, keep;
    const char *fields;        /* "name=value\n" each */
    const char *body;
    size_t body_len;
    int ns;                    /* status lines seen (interim ones too) */
};

static void ok_case(const char *what, const char *in, size_t n, bool head, const struct want *w)
{
    struct sl_h1 h;
    struct seen s = { 0 };
    const char *why = NULL;
    size_t bad_step = 0;
    char detail[256] = "";
    for (size_t step = 0; step <= n && !bad_step; step++) {
        int rc = feed(&h, head, in, n, step, &s, &why);
        bool done = sl_h1_done(&h);
        if (w->to_eof && rc == 0)
            done = !done && sl_h1_eof(&h) && sl_h1_done(&h);
        const char *f = w->fields ? w->fields : "";
        if (rc < 0 || !done || h.status != w->status || h.clen != w->clen || h.chunked != w->chunked ||
            h.to_eof != w->to_eof || h.keep != w->keep || s.heads != 1 || s.ns != w->ns ||
            s.fields.len != strlen(f) || (s.fields.len && memcmp(s.fields.p, f, s.fields.len)) ||
            s.body.len != w->body_len || (w->body_len && memcmp(s.body.p, w->body, w->body_len)) ||
            h.got != w->body_len) {
            bad_step = step ? step : n + 1;
            snprintf(detail, sizeof(detail), "rc %d (%s), done %d, status %d, clen %lld, body %zu bytes", rc,
                     why ? why : "-", done, h.status, (long long)h.clen, s.body.len);
        }
        sl_h1_free(&h);
    }
    seen_free(&s);
    TAP_OK(!bad_step, "%s: whole and in pieces of 1..%zu bytes%s%s", what, n, bad_step ? "; failed: " : "", detail);
}

#define OK_CASE(what, in, head, ...)                                                                               \
    do {                                                                                                           \
        const struct want w_ = { __VA_ARGS__ };                                                                    \
        ok_case(what, in, sizeof(in) - 1, head, &w_);                                                              \
    } while (0)

/* A malformed answer: refused, whole and in every piece size, saying want. */
static void bad_case(const char *what, const char *in, size_t n, bool head, const char *want)
{
    struct sl_h1 h;
    struct seen s = { 0 };
    const char *why = NULL;
    size_t bad_step = 0;
    int rc = 0;
    for (size_t step = 0; step <= n && !bad_step; step += step < 64 ? 1 : 61) {
        rc = feed(&h, head, in, n, step, &s, &why);
        if (rc == 0 || !why || !strstr(why, want))
            bad_step = step ? step : n + 1;
        sl_h1_free(&h);
    }
    seen_free(&s);
    TAP_OK(!bad_step, "refused: %s (%s)%s", what, why ? why : "-", bad_step ? " <- wrong" : "");
}

static void t_well_formed(void)
{
    OK_CASE("Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A:  b c \t\r\n\r\nhello", false,
            .status = 200, .clen = 5, .keep = true, .fields = "Content-Length=5\nX-A=b c\n", .body = "hello",
            .body_len = 5, .ns = 1);
    OK_CASE("no reason phrase, an empty value", "HTTP/1.1 200\r\nX-E:\r\nContent-Length: 1\r\n\r\nz", false,
            .status = 200, .clen = 1, .keep = true, .fields = "X-E=\nContent-Length=1\n", .body = "z", .body_len = 1,
            .ns = 1);
    OK_CASE("the same Content-Length twice", "HTTP/1.1 200 OK\r\ncontent-length: 2\r\nContent-Length: 02\r\n\r\nab",
            false, .status = 200, .clen = 2, .keep = true, .fields = "content-length=2\nContent-Length=02\n",
            .body = "ab", .body_len = 2, .ns = 1);
    OK_CASE("interim answers first",
            "HTTP/1.1 100 Continue\r\nX-I: 1\r\n\r\nHTTP/1.1 103 Early Hints\r\n\r\n"
            "HTTP/1.1 201 Created\r\nContent-Length: 3\r\n\r\nabc",
            false, .status = 201, .clen = 3, .keep = true, .fields = "X-I=1\nContent-Length=3\n", .body = "abc",
            .body_len = 3, .ns = 3);
    OK_CASE("chunked, with extensions and trailers",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            "5;ext=1;q=\"a b\"\r\nhello\r\na\r\n0123456789\r\n0;last\r\nX-T: t\r\nY: z\r\n\r\n",
            false, .status = 200, .clen = -1, .chunked = true, .keep = true, .fields = "Transfer-Encoding=chunked\n",
            .body = "hello0123456789", .body_len = 15, .ns = 1);
    OK_CASE("chunked spelled otherwise, no trailer",
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: CHUNKED \t\r\n\r\n3\r\nabc\r\n0\r\n\r\n", false, .status = 200,
            .clen = -1, .chunked = true, .keep = true, .fields = "Transfer-Encoding=CHUNKED\n", .body = "abc",
            .body_len = 3, .ns = 1);
    OK_CASE("chunked, empty", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", false, .status = 200,
            .clen = -1, .chunked = true, .keep = true, .fields = "Transfer-Encoding=chunked\n", .ns = 1);
    OK_CASE("HEAD: a length and no body", "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n", true, .status = 200,
            .clen = 1000, .keep = true, .fields = "Content-Length=1000\n", .ns = 1);
    OK_CASE("HEAD: chunked, no body", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n", true, .status = 200,
            .clen = -1, .keep = true, .fields = "Transfer-Encoding=chunked\n", .ns = 1);
    OK_CASE("204 without body", "HTTP/1.1 204 No Content\r\n\r\n", false, .status = 204, .clen = 0, .keep = true,
            .ns = 1);
    OK_CASE("304 with a Content-Length: no body", "HTTP/1.1 304 Not Modified\r\nContent-Length: 10\r\n\r\n", false,
            .status = 304, .clen = 0, .keep = true, .fields = "Content-Length=10\n", .ns = 1);
    OK_CASE("Content-Length: 0", "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", false, .status = 404,
            .clen = 0, .keep = true, .fields = "Content-Length=0\n", .ns = 1);
    OK_CASE("to the close", "HTTP/1.1 200 OK\r\nX: y\r\n\r\nsome bytes\r\n\r\nmore", false, .status = 200, .clen = -1,
            .to_eof = true, .fields = "X=y\n", .body = "some bytes\r\n\r\nmore", .body_len = 18, .ns = 1);
    OK_CASE("HTTP/1.0: not kept", "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", false, .status = 200, .clen = 1,
            .fields = "Content-Length=1\n", .body = "x", .body_len = 1, .ns = 1);
    OK_CASE("Connection: close in a list",
            "HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n", false, .status = 200,
            .clen = 0, .fields = "Connection=keep-alive, Close\nContent-Length=0\n", .ns = 1);
}

static void t_states(void)
{
    struct sl_h1 h;
    struct seen s = { 0 };
    const char *why;
    const struct sl_h1_cb cb = { &s, on_status, on_field, on_head, on_body };
    static const char cl[] = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabcd";

    sl_h1_init(&h, false);
    TAP_OK(sl_h1_idle(&h) && !sl_h1_done(&h), "a new parser is idle");
    TAP_OK(sl_h1_feed(&h, "HTTP/1.1 1", 10, &cb, &why) == 0 && !sl_h1_idle(&h), "part of a status line: not idle");
    TAP_OK(sl_h1_feed(&h, "00 Continue\r\n\r\n", 15, &cb, &why) == 0 && sl_h1_idle(&h) && !h.head_done,
           "after a whole interim answer: idle again");
    TAP_OK(!sl_h1_eof(&h), "a close now cuts the answer");
    sl_h1_free(&h);

    sl_h1_init(&h, false);
    TAP_OK(sl_h1_feed(&h, cl, sizeof(cl) - 1, &cb, &why) == 0 && h.head_done && h.got == 4 && !sl_h1_done(&h),
           "a head and 4 of 10 body bytes");
    TAP_OK(sl_h1_take(&h, 5, &why) == 0 && h.got == 9 && !sl_h1_done(&h), "5 more received in place");
    TAP_OK(!sl_h1_eof(&h), "a close before the length is a cut body");
    TAP_OK(sl_h1_take(&h, 1, &why) == 0 && sl_h1_done(&h), "the last one: complete");
    TAP_OK(sl_h1_take(&h, 1, &why) < 0 && why && strstr(why, "more body than its Content-Length"),
           "one more in place: %s", why ? why : "-");
    sl_h1_free(&h);

    sl_h1_init(&h, false);
    TAP_OK(sl_h1_take(&h, 1, &why) < 0, "body bytes in place before the head: refused (%s)", why ? why : "-");
    sl_h1_free(&h);

    static const char ck[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n";
    sl_h1_init(&h, false);
    TAP_OK(sl_h1_feed(&h, ck, sizeof(ck) - 1, &cb, &why) == 0 && !sl_h1_done(&h) && sl_h1_take(&h, 1, &why) < 0,
           "a chunked body cannot be received in place");
    TAP_OK(!sl_h1_eof(&h), "a close mid-chunked is a cut body");
    sl_h1_free(&h);

    static const char eof[] = "HTTP/1.1 200 OK\r\n\r\nab";
    sl_h1_init(&h, false);
    TAP_OK(sl_h1_feed(&h, eof, sizeof(eof) - 1, &cb, &why) == 0 && !sl_h1_done(&h) &&
           sl_h1_take(&h, 1000, &why) == 0 && h.got == 1002 && sl_h1_eof(&h) && sl_h1_done(&h),
           "a to-the-close body: received in place, complete at the close");
    sl_h1_free(&h);

    s.stop_at_status = 200;
    TAP_OK(feed(&h, false, cl, sizeof(cl) - 1, 0, &s, &why) < 0 && !why && s.heads == 0,
           "a callback that stops: -1 with no text");
    sl_h1_free(&h);
    seen_free(&s);

    /* the bound of the header section is exact */
    struct sl_buf b;
    sl_buf_init(&b);
    sl_buf_adds(&b, "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nX: ");
    while (b.len < SL_H1_HDR_MAX - 4)
        sl_buf_addc(&b, 'v');
    sl_buf_adds(&b, "\r\n\r\n");
    int rc = feed(&h, false, b.p, b.len, 0, &s, &why);
    TAP_OK(rc == 0 && b.len == SL_H1_HDR_MAX && sl_h1_done(&h), "a header section of exactly 32 KiB (%s)",
           why ? why : "ok");
    sl_h1_free(&h);
    b.len -= 4;
    sl_buf_adds(&b, "v\r\n\r\n");
    rc = feed(&h, false, b.p, b.len, 1000, &s, &why);
    TAP_OK(rc < 0 && why && strstr(why, "over 32 KiB"), "one byte more: %s", why ? why : "-");
    sl_h1_free(&h);
    seen_free(&s);
    sl_buf_free(&b);
}

/* Malformed answers: what, the bytes (NULs inside), a HEAD's, what the refusal says */
#define B(what, in, head, want) { what, in, sizeof(in) - 1, head, want }
static const struct bad {
    const char *what, *in;
    size_t n;
    bool head;
    const char *want;
} bads[] = {
    B("HTTP/2", "HTTP/2 200 OK\r\nContent-Length: 0\r\n\r\n", false, "no \"HTTP/1.x NNN\" status line"),
    B("HTTP/1.2", "HTTP/1.2 200 OK\r\n\r\n", false, "status line"),
    B("a two-digit status", "HTTP/1.1 20 OK\r\n\r\n", false, "status line"),
    B("no space after the status", "HTTP/1.1 200OK\r\n\r\n", false, "status line"),
    B("a letter in the status", "HTTP/1.1 2x0 OK\r\n\r\n", false, "status line"),
    B("not HTTP", "ICY 200 OK\r\n\r\n", false, "status line"),
    B("lower case", "http/1.1 200 OK\r\n\r\n", false, "status line"),
    B("status 099", "HTTP/1.1 099 Low\r\n\r\n", false, "a status under 100"),
    B("101", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n", false, "a 101 switch of protocols"),
    B("obs-fold", "HTTP/1.1 200 OK\r\nX-A: b\r\n  c\r\nContent-Length: 0\r\n\r\n",
      false, "a header line that is not \"Name: value\""),
    B("obs-fold with a tab", "HTTP/1.1 200 OK\r\nX-A: b\r\n\tc\r\n\r\n", false, "not \"Name: value\""),
    B("a line without a colon", "HTTP/1.1 200 OK\r\nX-A b\r\n\r\n", false, "not \"Name: value\""),
    B("an empty name", "HTTP/1.1 200 OK\r\n: b\r\n\r\n", false, "not \"Name: value\""),
    B("a blank before the colon", "HTTP/1.1 200 OK\r\nX-A : b\r\n\r\n", false, "not \"Name: value\""),
    B("NUL in a name", "HTTP/1.1 200 OK\r\nX\0A: b\r\n\r\n", false, "not \"Name: value\""),
    B("NUL in a value", "HTTP/1.1 200 OK\r\nX-A: b\0c\r\n\r\n", false, "a control character in a header value"),
    B("a CTL in a value", "HTTP/1.1 200 OK\r\nX-A: b\x01\r\n\r\n", false, "control character"),
    B("ESC in a value", "HTTP/1.1 200 OK\r\nX-A: \x1b[31m\r\n\r\n", false, "control character"),
    B("a bare LF in a value", "HTTP/1.1 200 OK\r\nX-A: b\nContent-Length: 9\r\n\r\n", false, "control character"),
    B("a bare CR in a line", "HTTP/1.1 200 OK\r\nX-A: b\rc\r\n\r\n", false, "a header line not ended by CRLF"),
    B("conflicting Content-Lengths", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello",
      false, "a Content-Length that is not one decimal number"),
    B("a Content-Length list", "HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello", false, "not one decimal number"),
    B("a negative Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", false, "not one decimal number"),
    B("a signed Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello", false, "not one decimal number"),
    B("an empty Content-Length", "HTTP/1.1 200 OK\r\nContent-Length:\r\n\r\n", false, "not one decimal number"),
    B("a hexadecimal Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 0x10\r\n\r\n",
      false, "not one decimal number"),
    B("a Content-Length of 19 digits", "HTTP/1.1 200 OK\r\nContent-Length: 1000000000000000000\r\n\r\n",
      false, "not one decimal number"),
    B("Content-Length and chunked", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n",
      false, "both Content-Length and Transfer-Encoding"),
    B("chunked and Content-Length", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n",
      false, "both Content-Length and Transfer-Encoding"),
    B("Transfer-Encoding: gzip", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
      false, "a Transfer-Encoding other than chunked"),
    B("Transfer-Encoding: gzip, chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
      false, "other than chunked"),
    B("chunked twice", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
      false, "other than chunked"),
    B("more than 8 interim answers",
      "HTTP/1.1 100 A\r\n\r\nHTTP/1.1 100 A\r\n\r\nHTTP/1.1 100 A\r\n\r\nHTTP/1.1 100 A\r\n\r\n"
      "HTTP/1.1 100 A\r\n\r\nHTTP/1.1 100 A\r\n\r\nHTTP/1.1 100 A\r\n\r\nHTTP/1.1 100 A\r\n\r\n"
      "HTTP/1.1 100 A\r\n\r\nHTTP/1.1 200 OK\r\n\r\n",
      false, "more than 8 interim (1xx) answers"),
    B("a chunk size that is not hexadecimal", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
      false, "a chunk size that is not hexadecimal"),
    B("a chunk size with a blank", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5 \r\nhello\r\n",
      false, "not hexadecimal"),
    B("a chunk size ended by LF alone", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n",
      false, "not hexadecimal"),
    B("a chunk size line with CR alone", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\rhello\r\n",
      false, "a chunk size line not ended by CRLF"),
    B("a chunk size that overflows", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n",
      false, "not hexadecimal"),
    B("a chunk longer than its size", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabcd\r\n",
      false, "a chunk not followed by CRLF"),
    B("an empty size line", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\r\n", false, "not hexadecimal"),
    B("a trailer line with CR alone", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX: y\rz\r\n\r\n",
      false, "a trailer line not ended by CRLF"),
    B("bytes after the last chunk", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\nHTTP/1.1",
      false, "bytes after the last chunk"),
    B("more body than its Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabcd",
      false, "more body than its Content-Length"),
    B("a body after a HEAD's head", "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc",
      true, "a body where none belongs"),
    B("a body after a 204", "HTTP/1.1 204 No Content\r\n\r\nx", false, "a body where none belongs"),
    B("a body after a 304", "HTTP/1.1 304 Not Modified\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
      false, "a body where none belongs"),
    B("a body after Content-Length: 0", "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nx",
      false, "a body where none belongs"),
};
#undef B

/* head, unit n times, tail: returns new (free), *len its length */
static char *big(const char *head, const char *unit, int n, const char *tail, size_t *len)
{
    struct sl_buf b;
    sl_buf_init(&b);
    sl_buf_adds(&b, head);
    for (int i = 0; i < n; i++)
        sl_buf_adds(&b, unit);
    sl_buf_adds(&b, tail);
    *len = b.len;
    return b.p;
}

static void bad_big(const char *what, const char *head, const char *unit, int n, const char *tail, const char *want)
{
    size_t len;
    char *in = big(head, unit, n, tail, &len);
    bad_case(what, in, len, false, want);
    free(in);
}

static void t_malformed(void)
{
    for (size_t i = 0; i < SL_ARRAY_SIZE(bads); i++)
        bad_case(bads[i].what, bads[i].in, bads[i].n, bads[i].head, bads[i].want);

    /* the bounds */
    static const char ck[] = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
    bad_big("a header field over 32 KiB (no end in sight)", "HTTP/1.1 200 OK\r\nX-Big: ", "a", 33 * 1024, "",
            "header fields over 32 KiB");
    bad_big("header fields over 32 KiB", "HTTP/1.1 200 OK\r\nX-Big: ", "a", 33 * 1024,
            "\r\nContent-Length: 0\r\n\r\n", "header fields over 32 KiB");
    bad_big("129 header fields", "HTTP/1.1 200 OK\r\n", "X-F: v\r\n", 129, "\r\n", "more than 128 header fields");
    size_t n;
    char *head = big(ck, "", 0, "1;", &n);
    bad_big("a chunk extension over 1 KiB", head, "e", SL_H1_LINE_MAX + 1, "\r\nx\r\n0\r\n\r\n",
            "a chunk extension over 1 KiB");
    free(head);
    char *line = big("X-T: ", "t", 1000, "\r\n", &n);
    head = big(ck, "", 0, "0\r\n", &n);
    bad_big("trailer fields over 32 KiB", head, line, 40, "\r\n", "trailer fields over 32 KiB");
    free(head);
    free(line);
}

int main(void)
{
    t_well_formed();
    t_states();
    t_malformed();
    return tap_done();
}
