/* SPDX-License-Identifier: MIT
 * chunked.c: chunked framing, strict and bounded. See chunked.h.
 */
#include "chunked.h"

#include <string.h>

enum { ST_SIZE = 0, ST_EXT, ST_SIZE_LF, ST_DATA, ST_DATA_CR, ST_DATA_LF, ST_TRAILER, ST_TRAILER_LF, ST_DONE };

void sl_chunked_init(struct sl_chunked *c)
{
    memset(c, 0, sizeof(*c));
}

bool sl_chunked_done(const struct sl_chunked *c)
{
    return c->st == ST_DONE;
}

static int hexval(char ch)
{
    if (ch >= '0' && ch <= '9')
        return ch - '0';
    if ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'f')
        return (ch | 0x20) - 'a' + 10;
    return -1;
}

#define BAD(msg)                                                                                                   \
    do {                                                                                                           \
        *why = (msg);                                                                                              \
        *used = (size_t)(p - start);                                                                               \
        return -1;                                                                                                 \
    } while (0)
#define CALL(expr)                                                                                                 \
    do {                                                                                                           \
        if ((expr) != 0) {                                                                                         \
            *why = NULL;                                                                                           \
            *used = (size_t)(p - start);                                                                           \
            return -1;                                                                                             \
        }                                                                                                          \
    } while (0)

int sl_chunked_feed(struct sl_chunked *c, const char *p, size_t n, const struct sl_chunked_cb *cb, size_t *used,
                    const char **why)
{
    const char *start = p, *e = p + n;
    *why = NULL;
    while (p < e && c->st != ST_DONE) {
        char ch = *p;
        switch (c->st) {
        case ST_SIZE: {
            int v = hexval(ch);
            if (v >= 0 && c->left < (UINT64_C(1) << 59)) {
                c->left = c->left * 16 + (uint64_t)v;
                c->digits++;
                break;
            }
            if ((ch != ';' && ch != '\r') || !c->digits)
                BAD("a chunk size that is not hexadecimal");
            c->st = ch == ';' ? ST_EXT : ST_SIZE_LF;
            c->ll = 0;
            break;
        }
        case ST_EXT:
            if (ch == '\r') {
                c->st = ST_SIZE_LF;
            } else if (c->ll >= SL_CHUNKED_EXT_MAX) {
                BAD("a chunk extension over 1 KiB");
            } else {
                c->line[c->ll++] = ch;
            }
            break;
        case ST_SIZE_LF:
            if (ch != '\n')
                BAD("a chunk size line not ended by CRLF");
            c->line[c->ll] = 0;
            if (cb && cb->chunk)
                CALL(cb->chunk(cb->arg, c->left, c->line, c->ll));
            c->st = c->left ? ST_DATA : ST_TRAILER;
            c->digits = c->ll = 0;
            break;
        case ST_DATA: {
            size_t k = (size_t)(e - p) < c->left ? (size_t)(e - p) : (size_t)c->left;
            if (cb && cb->data)
                CALL(cb->data(cb->arg, p, k));
            p += k;
            c->left -= k;
            if (!c->left)
                c->st = ST_DATA_CR;
            continue;
        }
        case ST_DATA_CR:
        case ST_DATA_LF:
            if (ch != (c->st == ST_DATA_CR ? '\r' : '\n'))
                BAD("a chunk not followed by CRLF");
            if (c->st == ST_DATA_LF && cb && cb->chunk_end)
                CALL(cb->chunk_end(cb->arg));
            c->st = c->st == ST_DATA_CR ? ST_DATA_LF : ST_SIZE;
            break;
        case ST_TRAILER:
            if (ch == '\r') {
                c->st = ST_TRAILER_LF;
            } else if (++c->tlen > SL_CHUNKED_TRAILER_MAX) {
                BAD("trailer fields over 32 KiB");
            } else if (cb && cb->trailer && c->ll >= SL_CHUNKED_EXT_MAX) {
                BAD("a trailer field over 1 KiB");
            } else {
                if (cb && cb->trailer)
                    c->line[c->ll] = ch;
                c->ll++;
            }
            break;
        case ST_TRAILER_LF:
            if (ch != '\n')
                BAD("a trailer line not ended by CRLF");
            if (c->ll && cb && cb->trailer) {
                c->line[c->ll] = 0;
                CALL(cb->trailer(cb->arg, c->line, c->ll));
            }
            c->st = c->ll ? ST_TRAILER : ST_DONE;
            c->ll = 0;
            break;
        }
        p++;
    }
    *used = (size_t)(p - start);
    return 0;
}
