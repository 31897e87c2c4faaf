/* SPDX-License-Identifier: MIT
 * s3chunk.c: aws-chunked bodies on the strict chunked decoder. See
 * s3chunk.h.
 */
#include "s3chunk.h"
#include "sl.h"

#include <ctype.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>

static int refuse(struct s3chunk *c, int status, const char *code, const char *msg)
{
    if (!c->status) {
        c->status = status;
        c->code = code;
        snprintf(c->msg, sizeof(c->msg), "%s", msg);
    }
    return -1;
}

void s3chunk_init(struct s3chunk *c, const struct sl_s3_auth *a, const char *secret, bool signed_trailer,
                  int (*sink)(void *arg, const char *p, size_t n), void *arg)
{
    memset(c, 0, sizeof(*c));
    sl_chunked_init(&c->ck);
    c->sink = sink;
    c->arg = arg;
    if (a) {
        c->a = a;
        c->secret = secret;
        c->signed_trailer = signed_trailer;
        c->csha = EVP_MD_CTX_new();
        EVP_DigestInit_ex(c->csha, EVP_sha256(), NULL);
        snprintf(c->prev_sig, sizeof(c->prev_sig), "%s", a->signature);
    }
}

void s3chunk_free(struct s3chunk *c)
{
    if (c->csha)
        EVP_MD_CTX_free(c->csha);
    c->csha = NULL;
}

/* The chunk just read (or the final empty one) against its signature. */
static int chunk_verify(struct s3chunk *c)
{
    if (!c->csha)
        return 0;
    unsigned char d[32];
    unsigned dn = 0;
    EVP_DigestFinal_ex(c->csha, d, &dn);
    EVP_DigestInit_ex(c->csha, EVP_sha256(), NULL);
    char hex[SL_S3_SIG_HEX], want[SL_S3_SIG_HEX];
    sl_hex(d, 32, hex);
    sl_s3_chunk_signature(c->a, c->secret, c->prev_sig, hex, want);
    if (!sl_s3_sig_equal(want, c->sig))
        return refuse(c, 403, "SignatureDoesNotMatch", "aws-chunked body: a chunk signature does not match its "
                      "bytes; nothing was stored");
    memcpy(c->prev_sig, want, sizeof(want));
    return 0;
}

static int on_data(void *arg, const char *p, size_t n)
{
    struct s3chunk *c = arg;
    if (c->csha)
        EVP_DigestUpdate(c->csha, p, n);
    return c->sink(c->arg, p, n) ? -1 : 0;
}

static int on_chunk(void *arg, uint64_t size, const char *ext, size_t el)
{
    struct s3chunk *c = arg;
    c->sig[0] = 0;
    static const char cs[] = "chunk-signature=";
    const char *v = el >= sizeof(cs) - 1 ? strstr(ext, cs) : NULL;
    if (v)
        snprintf(c->sig, sizeof(c->sig), "%.*s", (int)strcspn(v + sizeof(cs) - 1, ";"), v + sizeof(cs) - 1);
    if (c->csha && !c->sig[0])
        return refuse(c, 403, "SignatureDoesNotMatch", "aws-chunked body: a chunk has no chunk-signature");
    return size ? 0 : chunk_verify(c); /* the last one is signed over no bytes */
}

static int on_chunk_end(void *arg)
{
    return chunk_verify(arg);
}

static int on_trailer(void *arg, const char *line, size_t len)
{
    struct s3chunk *c = arg;
    const char *colon = memchr(line, ':', len);
    if (!colon || colon == line)
        return refuse(c, 400, "IncompleteBody", "aws-chunked body: a trailer line without a name and ':'");
    size_t nl = (size_t)(colon - line);
    char name[80];
    if (nl >= sizeof(name))
        return refuse(c, 400, "IncompleteBody", "aws-chunked body: a trailer name over 79 bytes");
    for (size_t i = 0; i < nl; i++)
        name[i] = (char)tolower((unsigned char)line[i]);
    name[nl] = 0;
    const char *v = colon + 1, *e = line + len;
    while (v < e && (*v == ' ' || *v == '\t'))
        v++;
    while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    size_t vl = (size_t)(e - v);
    if (!strcmp(name, "x-amz-trailer-signature")) {
        snprintf(c->tsig, sizeof(c->tsig), "%.*s", (int)vl, v);
        return 0;
    }
    if (c->tcl + nl + vl + 2 > sizeof(c->tcanon))
        return refuse(c, 400, "IncompleteBody", "aws-chunked body: the trailers are too long");
    memcpy(c->tcanon + c->tcl, name, nl);
    c->tcanon[c->tcl + nl] = ':';
    memcpy(c->tcanon + c->tcl + nl + 1, v, vl);
    c->tcanon[c->tcl + nl + 1 + vl] = '\n';
    c->tcl += nl + vl + 2;
    if (nl > 15 && !memcmp(name, "x-amz-checksum-", 15)) {
        snprintf(c->trailer_name, sizeof(c->trailer_name), "%.63s", name + 15);
        snprintf(c->trailer_val, sizeof(c->trailer_val), "%.*s", (int)vl, v);
    }
    return 0;
}

int s3chunk_feed(struct s3chunk *c, const char *p, size_t n)
{
    if (sl_chunked_done(&c->ck))
        return n ? refuse(c, 400, "IncompleteBody", "aws-chunked body: bytes after the final chunk") : 0;
    const struct sl_chunked_cb cb = { c, on_data, on_chunk, on_chunk_end, on_trailer };
    size_t used;
    const char *why;
    if (sl_chunked_feed(&c->ck, p, n, &cb, &used, &why) < 0) {
        if (why) {
            char m[200];
            snprintf(m, sizeof(m), "aws-chunked body: %s", why);
            return refuse(c, 400, "IncompleteBody", m);
        }
        return -1; /* a callback's refusal, or the sink's */
    }
    if (used < n)
        return refuse(c, 400, "IncompleteBody", "aws-chunked body: bytes after the final chunk");
    return 0;
}

int s3chunk_end(struct s3chunk *c)
{
    if (!sl_chunked_done(&c->ck))
        return refuse(c, 400, "IncompleteBody", "aws-chunked body ended before its final chunk; nothing was "
                      "stored");
    if (!c->signed_trailer)
        return 0;
    if (!c->tsig[0])
        return refuse(c, 403, "SignatureDoesNotMatch", "aws-chunked body: STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER "
                      "without an x-amz-trailer-signature; nothing was stored");
    char want[SL_S3_SIG_HEX];
    sl_s3_trailer_signature(c->a, c->secret, c->prev_sig, c->tcanon, c->tcl, want);
    if (!sl_s3_sig_equal(want, c->tsig))
        return refuse(c, 403, "SignatureDoesNotMatch", "aws-chunked body: the trailer signature does not match the "
                      "trailers; nothing was stored");
    return 0;
}
