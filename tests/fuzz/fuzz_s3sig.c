/* SPDX-License-Identifier: MIT
 * fuzz_s3sig.c: SigV4 as S3 reads it (server/api/s3sig.c): the
 * Authorization header, a presigned URL's query, the request time, and the
 * canonical request behind the signature, as tests/unit/test_s3sig.c calls
 * them. Input, one field a line: Authorization, x-amz-date, method, raw
 * path, raw query (no '?'), x-amz-content-sha256, then "name: value" header
 * lines.
 */
#include "fuzz_node.h"
#include "s3sig.h"

#include <string.h>
#include <strings.h>

static const char SECRET[] = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
static const char EMPTY[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
static const int64_t NOW = 1795523445; /* 2026-11-24 12:30:45 UTC, the seeds' time */

#define MAX_HDRS 32

struct hdrs {
    char *k[MAX_HDRS], *v[MAX_HDRS];
    int n;
};

static const char *get(void *ctx, const char *name)
{
    const struct hdrs *h = ctx;
    FZ_CHECK(name && *name);
    for (int i = 0; i < h->n; i++)
        if (!strcasecmp(h->k[i], name))
            return h->v[i];
    return NULL;
}

static void refused(int rc, int why, const struct sl_err *err)
{
    FZ_CHECK(rc == -1 && why >= SL_S3_AUTH_MALFORMED && why <= SL_S3_AUTH_MISMATCH);
    FZ_CHECK(memchr(err->msg, 0, sizeof(err->msg)) && err->msg[0]);
}

/* What a verifier does with parsed credentials. */
static void verify(const struct sl_s3_auth *a, const char *method, const char *path, const char *query,
                   struct hdrs *h, const char *payload)
{
    struct sl_err err = { 0 };
    int why = 0;
    static const int64_t skews[] = { 0, 899, 901, -901, 3600, 604801 };
    for (size_t i = 0; i < SL_ARRAY_SIZE(skews); i++) {
        int rc = sl_s3_auth_time(a, NOW + skews[i], 900, &why, &err);
        if (rc)
            refused(rc, why, &err);
    }
    char sig[SL_S3_SIG_HEX], next[SL_S3_SIG_HEX];
    memset(&err, 0, sizeof(err));
    if (sl_s3_signature(a, SECRET, method, path, query, get, h, a->presigned ? "UNSIGNED-PAYLOAD" : payload, sig,
                        &err) == 0) {
        FZ_CHECK(strlen(sig) == 64 && strspn(sig, "0123456789abcdef") == 64);
        FZ_CHECK(sl_s3_sig_equal(sig, a->signature) == !strcmp(sig, a->signature));
        sl_s3_chunk_signature(a, SECRET, sig, EMPTY, next);
        FZ_CHECK(strlen(next) == 64);
        sl_s3_trailer_signature(a, SECRET, next, query, strlen(query), sig);
        FZ_CHECK(strlen(sig) == 64);
    } else {
        FZ_CHECK(err.msg[0] && memchr(err.msg, 0, sizeof(err.msg)));
    }
}

void fuzz_one(const uint8_t *data, size_t size)
{
    struct fz_in in = { data, size };
    char *authz = fz_line(&in, NULL), *date = fz_line(&in, NULL), *method = fz_line(&in, NULL);
    char *path = fz_line(&in, NULL), *query = fz_line(&in, NULL), *payload = fz_line(&in, NULL);
    struct hdrs h = { .n = 0 };
    while (in.n && h.n < MAX_HDRS) {
        char *line = fz_line(&in, NULL), *colon = strchr(line, ':');
        if (!colon) {
            free(line);
            continue;
        }
        *colon = 0;
        h.k[h.n] = line;
        h.v[h.n++] = colon + 1 + strspn(colon + 1, " ");
    }
    struct sl_s3_auth a;
    struct sl_err err = { 0 };
    int why = 0;
    int rc = sl_s3_auth_header(authz, *date ? date : NULL, &a, &why, &err);
    if (rc == 0) {
        FZ_CHECK(strlen(a.signature) == 64 && strlen(a.date) == 8 && !a.presigned);
        verify(&a, method, path, query, &h, payload);
    } else {
        refused(rc, why, &err);
    }
    memset(&err, 0, sizeof(err));
    rc = sl_s3_auth_query(query, &a, &why, &err);
    FZ_CHECK(rc >= -1 && rc <= 1);
    if (rc == 1) {
        FZ_CHECK(a.presigned);
        verify(&a, method, path, query, &h, payload);
    } else if (rc < 0) {
        refused(rc, why, &err);
    }
    for (int i = 0; i < h.n; i++)
        free(h.k[i]);
    free(authz);
    free(date);
    free(method);
    free(path);
    free(query);
    free(payload);
}
