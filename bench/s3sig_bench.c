/* SPDX-License-Identifier: MIT
 * s3sig_bench.c: what verifying one SigV4 request costs in CPU: parse the
 * Authorization header, check the time, rebuild the canonical request and
 * the signature (api/s3sig.c) for a GET as boto3 signs it, N times on one
 * thread. Prints microseconds per verification next to one SHA-256 of a
 * 1 KiB body (what a signed 1 KiB PUT adds on top) as the reference.
 *
 * build and run: make bench-s3sig (or build/bench/s3sig_bench [N])
 */
#include "s3sig.h"

#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *const hdrs[] = { "host", "127.0.0.1:8080", "x-amz-content-sha256",
                                    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
                                    "x-amz-date", "20261124T120000Z", NULL };

static const char *get(void *ctx, const char *name)
{
    (void)ctx;
    for (int i = 0; hdrs[i]; i += 2)
        if (!strcmp(hdrs[i], name))
            return hdrs[i + 1];
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 200000;
    const char *secret = "bench-secret-value";
    struct sl_s3_auth a;
    struct sl_err err = { 0 };
    int why = 0;
    /* a signature to verify: made once with the same code */
    char authz[512];
    snprintf(authz, sizeof(authz), "AWS4-HMAC-SHA256 Credential=bench/20261124/us-east-1/s3/aws4_request, "
             "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=%064d", 0);
    if (sl_s3_auth_header(authz, "20261124T120000Z", &a, &why, &err) < 0) {
        fprintf(stderr, "parse: %s\n", err.msg);
        return 1;
    }
    char sig[SL_S3_SIG_HEX];
    sl_s3_signature(&a, secret, "GET", "/s3/bench/k00042", "", get, NULL, hdrs[3], sig, &err);
    snprintf(authz, sizeof(authz), "AWS4-HMAC-SHA256 Credential=bench/20261124/us-east-1/s3/aws4_request, "
             "SignedHeaders=host;x-amz-content-sha256;x-amz-date, Signature=%s", sig);
    long ok = 0;
    double t0 = now_s();
    for (long i = 0; i < n; i++) {
        char want[SL_S3_SIG_HEX];
        if (sl_s3_auth_header(authz, "20261124T120000Z", &a, &why, &err) < 0 ||
            sl_s3_auth_time(&a, 1795521600, 900, &why, &err) < 0 ||
            sl_s3_signature(&a, secret, "GET", "/s3/bench/k00042", "", get, NULL, hdrs[3], want, &err) < 0) {
            fprintf(stderr, "verification failed: %s\n", err.msg);
            return 1;
        }
        ok += sl_s3_sig_equal(want, a.signature);
    }
    double dt = now_s() - t0;
    unsigned char body[1024], d[32];
    memset(body, 7, sizeof(body));
    double t1 = now_s();
    for (long i = 0; i < n; i++) {
        body[0] = (unsigned char)i;
        SHA256(body, sizeof(body), d);
    }
    double dsha = now_s() - t1;
    printf("SigV4 verification of a GET: %.2f us each (%ld of %ld verified); SHA-256 of 1 KiB: %.2f us; "
           "ratio %.1fx\n", dt / (double)n * 1e6, ok, n, dsha / (double)n * 1e6, dt / dsha);
    return ok == n ? 0 : 1;
}
