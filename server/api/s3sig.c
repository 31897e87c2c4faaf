/* SPDX-License-Identifier: MIT
 * s3sig.c: see s3sig.h. The canonical request follows AWS's SigV4 rules
 * for S3: the path exactly as the client sent it (S3 does not normalise
 * or re-encode it), the query decoded and re-encoded with only
 * A-Za-z0-9-_.~ left bare and sorted, the signed headers in lower case with
 * their values trimmed and inner runs of spaces collapsed.
 */
#include "s3sig.h"
#include "cksum.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char EMPTY_SHA[] = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

static void sha256_hex(const void *p, size_t n, char out[SL_S3_SIG_HEX])
{
    unsigned char d[SHA256_DIGEST_LENGTH];
    sl_sha256(p, n, d);
    sl_hex(d, sizeof(d), out);
}

static void hmac(const void *key, size_t klen, const void *msg, size_t mlen, unsigned char out[32])
{
    sl_hmac_sha256(key, klen, msg, mlen, out);
}

/* copy [p, p + n) into out (size sz), NUL-terminated; false if it does not fit */
static bool take(char *out, size_t sz, const char *p, size_t n)
{
    if (n >= sz)
        return false;
    memcpy(out, p, n);
    out[n] = 0;
    return true;
}

/* "AK/yyyymmdd/region/service/aws4_request" */
static int parse_cred(const char *c, size_t n, struct sl_s3_auth *a, int *why, struct sl_err *err)
{
    const char *part[5];
    size_t plen[5];
    int k = 0;
    const char *s = c, *end = c + n;
    while (k < 5) {
        const char *slash = memchr(s, '/', (size_t)(end - s));
        part[k] = s;
        plen[k] = (size_t)((slash ? slash : end) - s);
        k++;
        if (!slash)
            break;
        s = slash + 1;
    }
    if (k != 5 || (size_t)(part[4] + plen[4] - c) != n || plen[4] != 12 || memcmp(part[4], "aws4_request", 12) ||
        !take(a->ak, sizeof(a->ak), part[0], plen[0]) || !plen[0] || plen[1] != 8 ||
        !take(a->date, sizeof(a->date), part[1], plen[1]) || !take(a->region, sizeof(a->region), part[2], plen[2]) ||
        !take(a->service, sizeof(a->service), part[3], plen[3])) {
        *why = SL_S3_AUTH_MALFORMED;
        return sl_errf(err, SL_EINVAL, "the credential \"%.*s\" is malformed: expecting "
                       "\"<access key>/<yyyymmdd>/<region>/s3/aws4_request\"", (int)SL_MIN(n, 300), c);
    }
    return 0;
}

static bool amz_date_ok(const char *d)
{
    if (strlen(d) != 16 || d[8] != 'T' || d[15] != 'Z')
        return false;
    for (int i = 0; i < 15; i++)
        if (i != 8 && !isdigit((unsigned char)d[i]))
            return false;
    return true;
}

int sl_s3_auth_header(const char *authz, const char *amz_date, struct sl_s3_auth *a, int *why, struct sl_err *err)
{
    memset(a, 0, sizeof(*a));
    static const char alg[] = "AWS4-HMAC-SHA256";
    *why = SL_S3_AUTH_MALFORMED;
    if (!authz || strncmp(authz, alg, sizeof(alg) - 1) || authz[sizeof(alg) - 1] != ' ')
        return sl_errf(err, SL_EINVAL, "the Authorization header is not AWS4-HMAC-SHA256 (SigV4)");
    bool have_c = false, have_h = false, have_s = false;
    for (const char *p = authz + sizeof(alg); *p;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p)
            break;
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        while (n && p[n - 1] == ' ')
            n--;
        if (n > 11 && !strncmp(p, "Credential=", 11)) {
            if (parse_cred(p + 11, n - 11, a, why, err) < 0)
                return -1;
            have_c = true;
        } else if (n > 14 && !strncmp(p, "SignedHeaders=", 14)) {
            have_h = take(a->signed_headers, sizeof(a->signed_headers), p + 14, n - 14);
        } else if (n > 10 && !strncmp(p, "Signature=", 10)) {
            have_s = n - 10 == 64 && take(a->signature, sizeof(a->signature), p + 10, n - 10);
        }
        p += e ? (size_t)(e - p) + 1 : strlen(p);
    }
    if (!have_c || !have_h || !have_s)
        return sl_errf(err, SL_EINVAL, "the Authorization header is malformed: it needs Credential=, SignedHeaders= "
                       "and a 64-digit Signature=");
    if (!amz_date || !amz_date_ok(amz_date))
        return sl_errf(err, SL_EINVAL, "the request time is missing or malformed: send x-amz-date as "
                       "yyyymmddThhmmssZ");
    snprintf(a->amz_date, sizeof(a->amz_date), "%s", amz_date);
    if (strncmp(a->amz_date, a->date, 8))
        return sl_errf(err, SL_EINVAL, "the credential's date %s is not the request's date %.8s", a->date,
                       a->amz_date);
    *why = 0;
    return 0;
}

/* the value of key in a raw query, decoded into out; false when absent */
static bool query_get(const char *q, const char *key, char *out, size_t sz)
{
    size_t kl = strlen(key);
    for (const char *p = q; p && *p;) {
        const char *amp = strchr(p, '&');
        size_t n = amp ? (size_t)(amp - p) : strlen(p);
        if (n > kl && p[kl] == '=' && !strncmp(p, key, kl)) {
            size_t vl = n - kl - 1;
            if (vl >= sz)
                return false;
            size_t m = sl_url_decode(p + kl + 1, vl, out, false);
            out[m] = 0;
            return true;
        }
        p = amp ? amp + 1 : NULL;
    }
    return false;
}

int sl_s3_auth_query(const char *raw_query, struct sl_s3_auth *a, int *why, struct sl_err *err)
{
    memset(a, 0, sizeof(*a));
    char alg[64], cred[512], exp[32];
    *why = SL_S3_AUTH_MALFORMED;
    if (!raw_query || !query_get(raw_query, "X-Amz-Algorithm", alg, sizeof(alg)))
        return 0;
    if (strcmp(alg, "AWS4-HMAC-SHA256"))
        return sl_errf(err, SL_EINVAL, "X-Amz-Algorithm \"%s\" is not supported (AWS4-HMAC-SHA256 is)", alg);
    if (!query_get(raw_query, "X-Amz-Credential", cred, sizeof(cred)) ||
        !query_get(raw_query, "X-Amz-Date", a->amz_date, sizeof(a->amz_date)) ||
        !query_get(raw_query, "X-Amz-Expires", exp, sizeof(exp)) ||
        !query_get(raw_query, "X-Amz-SignedHeaders", a->signed_headers, sizeof(a->signed_headers)) ||
        !query_get(raw_query, "X-Amz-Signature", a->signature, sizeof(a->signature)))
        return sl_errf(err, SL_EINVAL, "a presigned URL needs X-Amz-Credential, X-Amz-Date, X-Amz-Expires, "
                       "X-Amz-SignedHeaders and X-Amz-Signature");
    if (parse_cred(cred, strlen(cred), a, why, err) < 0)
        return -1;
    char *end;
    a->expires = strtoll(exp, &end, 10);
    if (*end || !*exp || !amz_date_ok(a->amz_date) || strlen(a->signature) != 64)
        return sl_errf(err, SL_EINVAL, "X-Amz-Date, X-Amz-Expires or X-Amz-Signature is malformed");
    a->presigned = true;
    *why = 0;
    return 1;
}

static int64_t amz_time(const char *d)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    if (sscanf(d, "%4d%2d%2dT%2d%2d%2dZ", &tm.tm_year, &tm.tm_mon, &tm.tm_mday, &tm.tm_hour, &tm.tm_min,
               &tm.tm_sec) != 6)
        return -1;
    tm.tm_year -= 1900;
    tm.tm_mon -= 1;
    return (int64_t)timegm(&tm);
}

int sl_s3_auth_time(const struct sl_s3_auth *a, int64_t now_s, int64_t skew_s, int *why, struct sl_err *err)
{
    int64_t t = amz_time(a->amz_date);
    if (t < 0) {
        *why = SL_S3_AUTH_MALFORMED;
        return sl_errf(err, SL_EINVAL, "the request time %s is malformed", a->amz_date);
    }
    if (a->presigned) {
        if (a->expires < 1 || a->expires > 604800) {
            *why = SL_S3_AUTH_EXPIRED;
            return sl_errf(err, SL_EFORBIDDEN, "X-Amz-Expires must be 1 to 604800 seconds, not %lld",
                           (long long)a->expires);
        }
        if (now_s > t + a->expires || t > now_s + skew_s) {
            *why = SL_S3_AUTH_EXPIRED;
            return sl_errf(err, SL_EFORBIDDEN, "Request has expired (signed at %s for %lld s)", a->amz_date,
                           (long long)a->expires);
        }
        return 0;
    }
    if (t < now_s - skew_s || t > now_s + skew_s) {
        *why = SL_S3_AUTH_SKEWED;
        return sl_errf(err, SL_EFORBIDDEN, "The difference between the request time (%s) and the server's time is "
                       "more than %lld s: correct the client's clock", a->amz_date, (long long)skew_s);
    }
    return 0;
}

/* AWS's URI encoding: A-Za-z0-9-_.~ bare, the rest %XX */
static void uri_encode(struct sl_buf *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
            sl_buf_addc(b, (char)c);
        } else {
            char e[3] = { '%', hex[c >> 4], hex[c & 15] };
            sl_buf_add(b, e, 3);
        }
    }
}

struct qpair {
    char *k, *v;                /* encoded */
};

static int qpair_cmp(const void *x, const void *y)
{
    const struct qpair *a = x, *b = y;
    int c = strcmp(a->k, b->k);
    return c ? c : strcmp(a->v, b->v);
}

/* the canonical query: every parameter but X-Amz-Signature (presigned) */
static void canonical_query(struct sl_buf *out, const char *q, bool presigned)
{
    struct qpair *v = NULL;
    size_t n = 0, cap = 0;
    char *tmp = sl_xmalloc(strlen(q) + 1);
    for (const char *p = q; p && *p;) {
        const char *amp = strchr(p, '&');
        size_t len = amp ? (size_t)(amp - p) : strlen(p);
        const char *eq = memchr(p, '=', len);
        size_t kl = eq ? (size_t)(eq - p) : len;
        if (len && !(presigned && kl == 15 && !strncmp(p, "X-Amz-Signature", 15))) {
            if (n == cap) {
                cap = cap ? cap * 2 : 16;
                v = sl_xrealloc(v, cap * sizeof(*v));
            }
            struct sl_buf k, val;
            sl_buf_init(&k);
            sl_buf_init(&val);
            size_t m = sl_url_decode(p, kl, tmp, false);
            uri_encode(&k, tmp, m);
            if (eq) {
                m = sl_url_decode(eq + 1, len - kl - 1, tmp, false);
                uri_encode(&val, tmp, m);
            }
            v[n].k = sl_buf_steal(&k);
            v[n].v = sl_buf_steal(&val);
            n++;
        }
        p = amp ? amp + 1 : NULL;
    }
    free(tmp);
    if (n)
        qsort(v, n, sizeof(*v), qpair_cmp);
    for (size_t i = 0; i < n; i++) {
        sl_buf_printf(out, "%s%s=%s", i ? "&" : "", v[i].k, v[i].v);
        free(v[i].k);
        free(v[i].v);
    }
    free(v);
}

/* a header value trimmed, inner runs of spaces collapsed to one */
static void header_value(struct sl_buf *out, const char *v)
{
    while (*v == ' ' || *v == '\t')
        v++;
    bool space = false;
    for (; *v; v++) {
        if (*v == ' ' || *v == '\t') {
            space = true;
            continue;
        }
        if (space)
            sl_buf_addc(out, ' ');
        space = false;
        sl_buf_addc(out, *v);
    }
}

static void signing_key(const struct sl_s3_auth *a, const char *secret, unsigned char key[32])
{
    char *k0 = sl_xasprintf("AWS4%s", secret);
    unsigned char k1[32], k2[32], k3[32];
    hmac(k0, strlen(k0), a->date, strlen(a->date), k1);
    hmac(k1, 32, a->region, strlen(a->region), k2);
    hmac(k2, 32, a->service, strlen(a->service), k3);
    hmac(k3, 32, "aws4_request", 12, key);
    OPENSSL_cleanse(k0, strlen(k0));
    free(k0);
}

static void sign(const struct sl_s3_auth *a, const char *secret, const char *sts, char out[SL_S3_SIG_HEX])
{
    unsigned char key[32], sig[32];
    signing_key(a, secret, key);
    hmac(key, 32, sts, strlen(sts), sig);
    OPENSSL_cleanse(key, sizeof(key));
    sl_hex(sig, sizeof(sig), out);
}

void sl_s3_policy_signature(const struct sl_s3_auth *a, const char *secret, const char *policy_b64,
                            char out[SL_S3_SIG_HEX])
{
    sign(a, secret, policy_b64, out);
}

int sl_s3_signature(const struct sl_s3_auth *a, const char *secret, const char *method, const char *raw_path,
                    const char *raw_query, sl_s3_header_fn get, void *ctx, const char *payload_hash,
                    char out[SL_S3_SIG_HEX], struct sl_err *err)
{
    struct sl_buf cr;
    sl_buf_init(&cr);
    sl_buf_printf(&cr, "%s\n%s\n", method, raw_path);
    canonical_query(&cr, raw_query ? raw_query : "", a->presigned);
    sl_buf_addc(&cr, '\n');
    int rc = 0;
    for (const char *h = a->signed_headers; *h && rc == 0;) {
        const char *semi = strchr(h, ';');
        size_t n = semi ? (size_t)(semi - h) : strlen(h);
        char name[128];
        if (!n || n >= sizeof(name)) {
            rc = sl_errf(err, SL_EINVAL, "SignedHeaders has an empty or overlong name");
            break;
        }
        for (size_t i = 0; i < n; i++)
            name[i] = (char)tolower((unsigned char)h[i]);
        name[n] = 0;
        const char *v = get(ctx, name);
        if (!v) {
            rc = sl_errf(err, SL_EINVAL, "header %s is signed but was not sent", name);
            break;
        }
        sl_buf_printf(&cr, "%s:", name);
        header_value(&cr, v);
        sl_buf_addc(&cr, '\n');
        h += n + (semi ? 1 : 0);
    }
    if (rc < 0) {
        sl_buf_free(&cr);
        return -1;
    }
    sl_buf_printf(&cr, "\n%s\n%s", a->signed_headers, payload_hash);
    char crh[SL_S3_SIG_HEX];
    sha256_hex(cr.p, cr.len, crh);
    sl_buf_free(&cr);
    char *sts = sl_xasprintf("AWS4-HMAC-SHA256\n%s\n%s/%s/%s/aws4_request\n%s", a->amz_date, a->date, a->region,
                             a->service, crh);
    sign(a, secret, sts, out);
    free(sts);
    return 0;
}

void sl_s3_chunk_signature(const struct sl_s3_auth *a, const char *secret, const char *prev,
                           const char chunk_sha[SL_S3_SIG_HEX], char out[SL_S3_SIG_HEX])
{
    char *sts = sl_xasprintf("AWS4-HMAC-SHA256-PAYLOAD\n%s\n%s/%s/%s/aws4_request\n%s\n%s\n%s", a->amz_date, a->date,
                             a->region, a->service, prev, EMPTY_SHA, chunk_sha);
    sign(a, secret, sts, out);
    free(sts);
}

void sl_s3_trailer_signature(const struct sl_s3_auth *a, const char *secret, const char *prev, const char *trailers,
                             size_t n, char out[SL_S3_SIG_HEX])
{
    unsigned char d[32];
    char hex[SL_S3_SIG_HEX];
    sl_sha256(trailers, n, d);
    sl_hex(d, 32, hex);
    char *sts = sl_xasprintf("AWS4-HMAC-SHA256-TRAILER\n%s\n%s/%s/%s/aws4_request\n%s\n%s", a->amz_date, a->date,
                             a->region, a->service, prev, hex);
    sign(a, secret, sts, out);
    free(sts);
}

bool sl_s3_sig_equal(const char *a, const char *b)
{
    return strlen(a) == 64 && strlen(b) == 64 && CRYPTO_memcmp(a, b, 64) == 0;
}
