/* SPDX-License-Identifier: MIT
 * fuzz_node.c: the libFuzzer entry points of the server-parser harnesses
 * and their helpers. See fuzz_node.h.
 */
#include "fuzz_node.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((weak)) void fuzz_init(void)
{
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    /* what the inputs provoke is refused, and logged: not to the fuzzer's output */
    struct sl_log_conf lc = { .level = SL_LOG_ERR, .path = "/dev/null" };
    sl_log_open(&lc);
    fuzz_init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_one(data, size);
    return 0;
}

void fz_fail(const char *what, const char *file, int line)
{
    fprintf(stderr, "fuzz: invariant broken at %s:%d: %s\n", file, line, what);
    abort();
}

uint8_t fz_byte(struct fz_in *in)
{
    if (!in->n)
        return 0;
    in->n--;
    return *in->p++;
}

static char *take(struct fz_in *in, size_t k, size_t skip, size_t *len)
{
    char *s = sl_xmalloc(k + 1);
    memcpy(s, in->p, k);
    s[k] = 0;
    in->p += k + skip;
    in->n -= k + skip;
    if (len)
        *len = k;
    return s;
}

char *fz_line(struct fz_in *in, size_t *len)
{
    const uint8_t *nl = memchr(in->p, '\n', in->n);
    return nl ? take(in, (size_t)(nl - in->p), 1, len) : take(in, in->n, 0, len);
}

char *fz_rest(struct fz_in *in, size_t *len)
{
    return take(in, in->n, 0, len);
}

int fz_pieces(const char *p, size_t n, uint32_t seed, int (*fn)(void *arg, const char *p, size_t n), void *arg)
{
    uint32_t x = seed * 2654435761u + 1;
    size_t off = 0;
    if (!seed)
        return fn(arg, p, n);
    do {
        x ^= x << 13; /* xorshift32: sizes that vary along the input */
        x ^= x >> 17;
        x ^= x << 5;
        size_t left = n - off, k;
        switch (x % 4) {
        case 0: k = 1; break;
        case 1: k = 1 + (x >> 8) % 8; break;
        case 2: k = 1 + (x >> 8) % 512; break;
        default: k = left; break;
        }
        if (k > left)
            k = left;
        int rc = fn(arg, p + off, k);
        if (rc)
            return rc;
        off += k;
    } while (off < n);
    return 0;
}

uint8_t fz_whole_and_pieces(const uint8_t *data, size_t size, fz_run_fn run, void *a, void *b, size_t *n)
{
    struct fz_in in = { data, size };
    uint8_t flags = fz_byte(&in);
    run(a, flags, (const char *)in.p, in.n, 0);
    run(b, flags, (const char *)in.p, in.n, flags | 0x100u);
    *n = in.n;
    return flags;
}

bool fz_same_text(const char *a, const char *b)
{
    return a == b || (a && b && !strcmp(a, b));
}

void fz_digest_add(struct fz_digest *d, const void *p, size_t n)
{
    const unsigned char *b = p;
    if (!d->h)
        d->h = 14695981039346656037ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        d->h = (d->h ^ b[i]) * 1099511628211ull;
    d->n += n;
}

void fz_digest_int(struct fz_digest *d, int64_t v)
{
    fz_digest_add(d, &v, sizeof(v));
}

bool fz_digest_eq(const struct fz_digest *a, const struct fz_digest *b)
{
    return a->h == b->h && a->n == b->n;
}
