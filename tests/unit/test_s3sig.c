/* SPDX-License-Identifier: MIT
 * test_s3sig.c: SigV4 for S3 (api/s3sig.c) against signatures made by
 * botocore 1.29 (Debian 12's) for fixed requests, and the aws-chunked
 * example of AWS's documentation ("Signature Calculations for the
 * Authorization Header: Transferring Payload in Multiple Chunks").
 */
#include "tap.h"
#include "s3sig.h"

#include <openssl/sha.h>
#include <string.h>

#define EMPTY_64 "0000000000000000000000000000000000000000000000000000000000000000"

static void sha_hex(const void *p, size_t n, char out[SL_S3_SIG_HEX])
{
    unsigned char d[SHA256_DIGEST_LENGTH];
    SHA256(p, n, d);
    sl_hex(d, sizeof(d), out);
}

struct hdrs {
    const char *const *kv;      /* name, value, ..., NULL (names lower case) */
};

static const char *get(void *ctx, const char *name)
{
    const struct hdrs *h = ctx;
    for (int i = 0; h->kv[i]; i += 2)
        if (!strcmp(h->kv[i], name))
            return h->kv[i + 1];
    return NULL;
}

static const char SECRET[] = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
static const char EMPTY[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
#define DATE "20261124T123045Z"

/* a from the Authorization header authz of a request made at DATE: a TAP line "what" */
static void parse_authz(struct sl_s3_auth *a, const char *authz, const char *what)
{
    struct sl_err err = { 0 };
    int why = 0;
    TAP_OK(sl_s3_auth_header(authz, DATE, a, &why, &err) == 0, "%s%s%s", what, err.msg[0] ? ": " : "", err.msg);
}

/* The signature of method raw_path?raw_query with the headers kv (name, value, ..., NULL) and payload_hash,
 * under secret, into sig: -1 when it cannot be computed (err says why), else whether it is a's. */
static int signed_as(const struct sl_s3_auth *a, const char *secret, const char *method, const char *raw_path,
                     const char *raw_query, const char *const *kv, const char *payload_hash, char sig[SL_S3_SIG_HEX],
                     struct sl_err *err)
{
    struct hdrs h = { kv };
    if (sl_s3_signature(a, secret, method, raw_path, raw_query, get, &h, payload_hash, sig, err) != 0)
        return -1;
    return sl_s3_sig_equal(sig, a->signature);
}

#define GET_PATH "/s3/my-bucket/dir/a%20b+c~d.txt"
#define GET_QUERY "list-type=2&prefix=a%2Fb&max-keys=10&fetch-owner"
static const char *const GET_HDRS[] = { "host", "127.0.0.1:8080", "range", "bytes=0-9", "x-amz-content-sha256",
                                        EMPTY, "x-amz-date", DATE, NULL };
static const char *const GET_HDRS_RANGE2[] = { "host", "127.0.0.1:8080", "range", "bytes=0-10",
                                               "x-amz-content-sha256", EMPTY, "x-amz-date", DATE, NULL };
static const char *const GET_HDRS_NO_RANGE[] = { "host", "127.0.0.1:8080", "x-amz-content-sha256", EMPTY,
                                                 "x-amz-date", DATE, NULL };

static void test_header_get(void)
{
    struct sl_s3_auth a;
    struct sl_err err = { 0 };
    parse_authz(&a,
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261124/us-east-1/s3/aws4_request, "
                "SignedHeaders=host;range;x-amz-content-sha256;x-amz-date, "
                "Signature=27aefe0d64df33cf653478b4c3d74f8cf7d0b3dbb4ada2a0f06a43da25b79f1a",
                "botocore's header parses");
    TAP_OK(!strcmp(a.ak, "AKIDEXAMPLE") && !strcmp(a.region, "us-east-1") && !strcmp(a.service, "s3") &&
       !strcmp(a.date, "20261124"), "credential scope");
    char sig[SL_S3_SIG_HEX];
    int rc = signed_as(&a, SECRET, "GET", GET_PATH, GET_QUERY, GET_HDRS, EMPTY, sig, &err);
    TAP_OK(rc >= 0, "signature computed");
    TAP_OK(rc == 1, "GET with a query and a Range: botocore's signature (%s)", sig);
    /* what else goes into the signature: the same request seen another way signs the same (want 1), anything
     * else signed changes it (want 0) */
    static const struct {
        const char *secret, *query;
        const char *const *kv;
        int want;
        const char *what;
    } v[] = {
        /* the query in another order and with an unencoded '/' in a value */
        { SECRET, "fetch-owner&max-keys=10&prefix=a/b&list-type=2", GET_HDRS, 1, "the query is canonicalised" },
        { SECRET, "list-type=2&prefix=a%2Fc&max-keys=10&fetch-owner", GET_HDRS, 0,
          "another query value: another signature" },
        { "wrong", GET_QUERY, GET_HDRS, 0, "another secret: another signature" },
        { SECRET, GET_QUERY, GET_HDRS_RANGE2, 0, "another signed header value: another signature" },
    };
    for (size_t i = 0; i < SL_ARRAY_SIZE(v); i++)
        TAP_OK(signed_as(&a, v[i].secret, "GET", GET_PATH, v[i].query, v[i].kv, EMPTY, sig, &err) == v[i].want,
               "%s", v[i].what);
    TAP_OK(signed_as(&a, SECRET, "GET", "/x", "", GET_HDRS_NO_RANGE, EMPTY, sig, &err) < 0 &&
               strstr(err.msg, "range"),
           "a signed header that was not sent: %s", err.msg);
}

static void test_header_put(void)
{
    struct sl_s3_auth a;
    struct sl_err err = { 0 };
    parse_authz(&a,
                "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261124/us-east-1/s3/aws4_request, "
                "SignedHeaders=content-type;host;x-amz-content-sha256;x-amz-date;x-amz-meta-foo, "
                "Signature=8e4b4c0be6056e9c1598133fa4d3d35005d4a057d4bb76b760e39c26da1ba9ad",
                "PUT header parses");
    const char *ph = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824"; /* sha256("hello") */
    const char *const kv[] = { "content-type", "text/plain", "host", "127.0.0.1:8080", "x-amz-content-sha256", ph,
                               "x-amz-date", DATE, "x-amz-meta-foo", "  bar   baz ", NULL };
    char sig[SL_S3_SIG_HEX];
    TAP_OK(signed_as(&a, SECRET, "PUT", "/s3/b1/k%2Fx", "", kv, ph, sig, &err) == 1,
           "PUT with metadata (spaces collapsed): botocore's signature");
}

static void test_presigned(void)
{
    struct sl_s3_auth a;
    struct sl_err err = { 0 };
    int why = 0;
    const char *q = "X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20261124%2Fus-east-1%2Fs3%2F"
                    "aws4_request&X-Amz-Date=20261124T123045Z&X-Amz-Expires=3600&X-Amz-SignedHeaders=host&"
                    "X-Amz-Signature=d285eccddcdd985a40473f38c1d582d68ff94b20a64fab2f0e67a8ab7dca6c4a";
    TAP_OK(sl_s3_auth_query(q, &a, &why, &err) == 1 && a.presigned && a.expires == 3600, "presigned query parses");
    TAP_OK(sl_s3_auth_query("list-type=2", &a, &why, &err) == 0, "an ordinary query is not presigned");
    TAP_OK(sl_s3_auth_query(q, &a, &why, &err) == 1, "again");
    const char *const kv[] = { "host", "127.0.0.1:8080", NULL };
    struct hdrs h = { kv };
    char sig[SL_S3_SIG_HEX];
    TAP_OK(sl_s3_signature(&a, SECRET, "GET", "/s3/b1/obj.bin", q, get, &h, "UNSIGNED-PAYLOAD", sig, &err) == 0 &&
       sl_s3_sig_equal(sig, a.signature), "presigned GET: botocore's signature");
    /* 2026-11-24 12:30:45 UTC = 1795523445 */
    int64_t t0 = 1795523445;
    TAP_OK(sl_s3_auth_time(&a, t0 + 3600, 900, &why, &err) == 0, "valid for its hour");
    TAP_OK(sl_s3_auth_time(&a, t0 + 3601, 900, &why, &err) < 0 && why == SL_S3_AUTH_EXPIRED &&
       strstr(err.msg, "expired"), "expired after it: %s", err.msg);
    a.expires = 604801;
    TAP_OK(sl_s3_auth_time(&a, t0, 900, &why, &err) < 0 && why == SL_S3_AUTH_EXPIRED, "more than 7 days: refused");
    a.expires = 0;
    TAP_OK(sl_s3_auth_time(&a, t0, 900, &why, &err) < 0 && why == SL_S3_AUTH_EXPIRED, "0 s: refused");
}

static void test_time_and_malformed(void)
{
    struct sl_s3_auth a;
    struct sl_err err = { 0 };
    int why = 0;
    const char *authz = "AWS4-HMAC-SHA256 Credential=AK/20261124/us-east-1/s3/aws4_request, SignedHeaders=host, "
                        "Signature=0000000000000000000000000000000000000000000000000000000000000000";
    parse_authz(&a, authz, "parses");
    int64_t t0 = 1795523445;
    TAP_OK(sl_s3_auth_time(&a, t0 + 899, 900, &why, &err) == 0, "within the skew");
    TAP_OK(sl_s3_auth_time(&a, t0 + 901, 900, &why, &err) < 0 && why == SL_S3_AUTH_SKEWED, "too skewed: %s", err.msg);
    TAP_OK(sl_s3_auth_time(&a, t0 - 901, 900, &why, &err) < 0 && why == SL_S3_AUTH_SKEWED, "too far ahead");
    const char *bad[] = {
        "AWS4-HMAC-SHA256 Credential=AK/20261124/us-east-1/s3/aws4, SignedHeaders=host, Signature=" EMPTY_64,
        "AWS4-HMAC-SHA256 Credential=AK/2026112/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=" EMPTY_64,
        "AWS4-HMAC-SHA256 Credential=AK/20261124/us-east-1/s3/aws4_request, Signature=" EMPTY_64,
        "AWS4-HMAC-SHA256 Credential=AK/20261124/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=abc",
        "AWS AK:c2lnbmF0dXJl",
        "AWS4-HMAC-SHA256 Credential=AK/20261123/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=" EMPTY_64,
        "",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        TAP_OK(sl_s3_auth_header(bad[i], "20261124T123045Z", &a, &why, &err) < 0 && why == SL_S3_AUTH_MALFORMED,
           "malformed %zu refused: %s", i, err.msg);
    TAP_OK(sl_s3_auth_header(authz, "2026-11-24", &a, &why, &err) < 0, "malformed x-amz-date refused");
}

static void test_chunks(void)
{
    /* AWS's example: 64 KiB + 1 KiB of 'a', secret wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY */
    struct sl_s3_auth a;
    memset(&a, 0, sizeof(a));
    strcpy(a.amz_date, "20130524T000000Z");
    strcpy(a.date, "20130524");
    strcpy(a.region, "us-east-1");
    strcpy(a.service, "s3");
    const char *secret = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
    static char buf[65536];
    memset(buf, 'a', sizeof(buf));
    char sha[SL_S3_SIG_HEX], s1[SL_S3_SIG_HEX], s2[SL_S3_SIG_HEX], s3[SL_S3_SIG_HEX];
    sha_hex(buf, 65536, sha);
    sl_s3_chunk_signature(&a, secret, "4f232c4386841ef735655705268965c44a0e4690baa4adea153f7db9fa80a0a9", sha, s1);
    TAP_OK(!strcmp(s1, "ad80c730a21e5b8d04586a2213dd63b9a0e99e0e2307b0ade35a65485a288648"), "chunk 1: %s", s1);
    sha_hex(buf, 1024, sha);
    sl_s3_chunk_signature(&a, secret, s1, sha, s2);
    TAP_OK(!strcmp(s2, "0055627c9e194cb4542bae2aa5492e3c1575bbb81b612b7d234b86a503ef5497"), "chunk 2: %s", s2);
    sl_s3_chunk_signature(&a, secret, s2, EMPTY, s3);
    TAP_OK(!strcmp(s3, "b6c6ea8a5354eaf15b3cb7646744f4275b71ea724fed81ceb9323e279d449df9"), "final chunk: %s", s3);
}

int main(void)
{
    test_header_get();
    test_header_put();
    test_presigned();
    test_time_and_malformed();
    test_chunks();
    return tap_done();
}
