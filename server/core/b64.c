/* SPDX-License-Identifier: MIT
 * b64.c: base64 on OpenSSL's EVP_EncodeBlock / EVP_DecodeBlock, with the
 * checks those leave to the caller (alphabet, padding, length). See b64.h.
 */
#include "b64.h"
#include "sl.h"

#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t sl_b64_encoded_len(size_t n, unsigned flags)
{
    size_t full = 4 * ((n + 2) / 3);
    if (!(flags & SL_B64_URL))
        return full;
    return full - (n % 3 == 1 ? 2 : n % 3 == 2 ? 1 : 0);
}

size_t sl_b64_encode(const void *p, size_t n, unsigned flags, char *out)
{
    const unsigned char *in = p;
    size_t w = 0, whole = n / 3 * 3;
    /* the whole groups in blocks (an int length never overflows), then the
     * last one or two bytes through a small buffer: the URL form is shorter
     * than what EVP_EncodeBlock writes for them */
    for (size_t off = 0; off < whole;) {
        size_t k = whole - off > ((size_t)3 << 28) ? (size_t)3 << 28 : whole - off;
        w += (size_t)EVP_EncodeBlock((unsigned char *)out + w, in + off, (int)k);
        off += k;
    }
    if (n > whole) {
        unsigned char tail[5];
        EVP_EncodeBlock(tail, in + whole, (int)(n - whole));
        size_t keep = (flags & SL_B64_URL) ? n - whole + 1 : 4;
        memcpy(out + w, tail, keep);
        w += keep;
    }
    out[w] = 0;
    if (flags & SL_B64_URL)
        for (size_t i = 0; i < w; i++)
            out[i] = out[i] == '+' ? '-' : out[i] == '/' ? '_' : out[i];
    return w;
}

size_t sl_b64_decoded_max(size_t n)
{
    return (n + 3) / 4 * 3;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\f' || c == '\v';
}

#define WHY(...)                                                                                                   \
    do {                                                                                                           \
        if (why && why_len)                                                                                        \
            snprintf(why, why_len, __VA_ARGS__);                                                                   \
        free(t);                                                                                                   \
        return -1;                                                                                                 \
    } while (0)

ssize_t sl_b64_decode(const char *s, size_t n, unsigned flags, void *out, char *why, size_t why_len)
{
    bool url = flags & SL_B64_URL;
    char *t = sl_xmalloc(n + 4); /* the characters that count, in the standard alphabet, padded */
    size_t core = 0, pad = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if ((flags & SL_B64_SPACE) && is_space(c))
            continue;
        if (c == '=' && !url) {
            pad++;
            continue;
        }
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
                  (url ? c == '-' || c == '_' : c == '+' || c == '/');
        if (!ok)
            WHY("invalid character 0x%02x at offset %zu", (unsigned char)c, i);
        if (pad)
            WHY("data after '=' padding at offset %zu", i);
        t[core++] = c == '-' ? '+' : c == '_' ? '/' : c;
    }
    if (core % 4 == 1)
        WHY("invalid length (%zu base64 characters)", core);
    size_t need = (4 - core % 4) % 4;
    if (pad != need && (pad || (!url && !(flags & SL_B64_NOPAD)))) /* (none is fine when it is optional) */
        WHY("bad padding (%zu '=' where %zu expected)", pad, need);
    memset(t + core, '=', need);
    size_t len = core + need;
    unsigned char *o = out;
    size_t w = 0;
    for (size_t off = 0; off < len;) {
        size_t k = len - off > ((size_t)1 << 30) ? (size_t)1 << 30 : len - off; /* (a multiple of 4) */
        int d = EVP_DecodeBlock(o + w, (unsigned char *)t + off, (int)k);
        if (d < 0)
            WHY("malformed base64");
        w += (size_t)d;
        off += k;
    }
    free(t);
    return (ssize_t)(w - need); /* (EVP_DecodeBlock counts the padding's zero bytes) */
}
