/* SPDX-License-Identifier: MIT
 * fuzz_s3chunk.c: S3's aws-chunked body decoder (server/api/s3chunk.c, on
 * server/core/chunked.c). Input: one byte of flags (bit 0: SigV4 streaming,
 * each chunk signed, with the fixed credentials below; bit 1: a signed
 * trailer too; bit 2: the sink refuses the first bytes; the rest picks the
 * piece sizes), then the body. Each input is decoded whole and in pieces:
 * both must agree on the bytes, the verdict and the trailer kept.
 */
#include "fuzz_node.h"
#include "s3chunk.h"

#include <string.h>

/* AWS's aws-chunked example (tests/unit/test_s3sig.c test_chunks) */
static const char SECRET[] = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
static struct sl_s3_auth auth = {
    .ak = "AKIAIOSFODNN7EXAMPLE",
    .date = "20130524",
    .region = "us-east-1",
    .service = "s3",
    .signed_headers = "host;x-amz-content-sha256;x-amz-date",
    .signature = "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9",
    .amz_date = "20130524T000000Z",
};

struct run {
    struct s3chunk c;
    struct fz_digest d;
    bool refuse;
    int rc;
};

static int sink(void *arg, const char *p, size_t n)
{
    struct run *r = arg;
    FZ_CHECK(n > 0);
    if (r->refuse) /* (at the first bytes: however many came in that piece) */
        return 1;
    fz_digest_add(&r->d, p, n);
    return 0;
}

static int feed(void *arg, const char *p, size_t n)
{
    struct run *r = arg;
    r->rc = s3chunk_feed(&r->c, p, n);
    return r->rc;
}

static void run(void *arg, uint8_t flags, const char *p, size_t n, uint32_t seed)
{
    struct run *r = arg;
    memset(r, 0, sizeof(*r));
    r->refuse = flags & 4;
    s3chunk_init(&r->c, flags & 1 ? &auth : NULL, SECRET, flags & 2, sink, r);
    fz_pieces(p, n, seed, feed, r);
    if (r->rc == 0)
        r->rc = s3chunk_end(&r->c);
    s3chunk_free(&r->c);
}

void fuzz_one(const uint8_t *data, size_t size)
{
    struct run a, b;
    size_t n;
    fz_whole_and_pieces(data, size, run, &a, &b, &n);
    FZ_CHECK(a.rc == b.rc && fz_digest_eq(&a.d, &b.d) && a.c.status == b.c.status);
    FZ_CHECK(!strcmp(a.c.msg, b.c.msg) && fz_same_text(a.c.code, b.c.code));
    FZ_CHECK(!strcmp(a.c.trailer_name, b.c.trailer_name) && !strcmp(a.c.trailer_val, b.c.trailer_val));
    FZ_CHECK(a.rc == 0 || a.c.status == 400 || a.c.status == 403 || (a.c.status == 0 && a.refuse));
    FZ_CHECK(a.rc < 0 || a.c.status == 0);
    FZ_CHECK(a.d.n <= n);
}
