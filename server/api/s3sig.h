/* SPDX-License-Identifier: MIT
 * s3sig.h: AWS Signature Version 4 as S3 uses it (../shared/spec/s3.md
 * §2): reading the credentials of a request (the Authorization header or a
 * presigned URL's query), and computing the signature the request must
 * carry, and the chunk signatures of an aws-chunked body.
 *
 * Nothing here knows HTTP requests: the caller hands over the method, the
 * path and query exactly as they arrived, and a way to read a header.
 */
#ifndef SL_S3SIG_H
#define SL_S3SIG_H

#include "sl.h"

#define SL_S3_SIG_HEX 65

struct sl_s3_auth {
    bool presigned;
    char ak[129];                   /* access key */
    char date[9];                   /* scope date yyyymmdd */
    char region[65];
    char service[17];
    char signed_headers[1024];      /* "host;x-amz-date", lower case, ';'-separated */
    char signature[SL_S3_SIG_HEX];
    char amz_date[17];              /* yyyymmddThhmmssZ */
    int64_t expires;                /* presigned: X-Amz-Expires, seconds */
};

/* Why a request's credentials are refused: S3's error code and status,
 * with a message in err. */
enum sl_s3_autherr {
    SL_S3_AUTH_MALFORMED = 1,       /* 400 AuthorizationHeaderMalformed / AuthorizationQueryParametersError */
    SL_S3_AUTH_EXPIRED,             /* 403 AccessDenied "Request has expired" */
    SL_S3_AUTH_SKEWED,              /* 403 RequestTimeTooSkewed */
    SL_S3_AUTH_MISMATCH,            /* 403 SignatureDoesNotMatch */
};

typedef const char *(*sl_s3_header_fn)(void *ctx, const char *name);

/* Parse "AWS4-HMAC-SHA256 Credential=AK/DATE/REGION/SERVICE/aws4_request,
 * SignedHeaders=..., Signature=..." with the request time amz_date
 * (x-amz-date, or Date converted by the caller). 0, or -1 with err and
 * *why. */
int sl_s3_auth_header(const char *authz, const char *amz_date, struct sl_s3_auth *a, int *why, struct sl_err *err);
/* The same from a presigned URL's raw query (X-Amz-Algorithm,
 * X-Amz-Credential, X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders,
 * X-Amz-Signature): 1 when the query is a presigned one, 0 when it is not,
 * -1 with err and *why. */
int sl_s3_auth_query(const char *raw_query, struct sl_s3_auth *a, int *why, struct sl_err *err);

/* Is the request time within skew_s of now (header form), or not expired
 * (presigned: X-Amz-Expires 1..604800)? 0, or -1 with err and *why. */
int sl_s3_auth_time(const struct sl_s3_auth *a, int64_t now_s, int64_t skew_s, int *why, struct sl_err *err);

/* The signature the request must carry (hex, out[SL_S3_SIG_HEX]): method,
 * raw_path and raw_query as received (the query without the leading '?';
 * presigned: X-Amz-Signature is left out here), the headers through get,
 * payload_hash the value of x-amz-content-sha256 (presigned:
 * "UNSIGNED-PAYLOAD"). 0, or -1 with err (a signed header is missing). */
int sl_s3_signature(const struct sl_s3_auth *a, const char *secret, const char *method, const char *raw_path,
                    const char *raw_query, sl_s3_header_fn get, void *ctx, const char *payload_hash,
                    char out[SL_S3_SIG_HEX], struct sl_err *err);

/* The signature of one aws-chunked chunk (STREAMING-AWS4-HMAC-SHA256-PAYLOAD):
 * prev is the previous chunk's signature (the first chunk: the request's),
 * chunk_sha the hex SHA-256 of the chunk's bytes. */
void sl_s3_chunk_signature(const struct sl_s3_auth *a, const char *secret, const char *prev,
                           const char chunk_sha[SL_S3_SIG_HEX], char out[SL_S3_SIG_HEX]);
/* The trailer signature of STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER: over
 * the canonical trailers ("name:value\n" each), chained to prev (the final
 * chunk's signature). */
void sl_s3_trailer_signature(const struct sl_s3_auth *a, const char *secret, const char *prev, const char *trailers,
                             size_t n, char out[SL_S3_SIG_HEX]);

/* The signature of a browser form's POST policy (x-amz-signature): the
 * base64 policy as it was sent, signed with a's scope (x-amz-credential). */
void sl_s3_policy_signature(const struct sl_s3_auth *a, const char *secret, const char *policy_b64,
                            char out[SL_S3_SIG_HEX]);

/* Constant-time comparison of two hex signatures. */
bool sl_s3_sig_equal(const char *a, const char *b);

#endif
