/* SPDX-License-Identifier: MIT
 * s3auth.c: who may use the S3 front end. Two modes, kept with the access
 * keys in the cluster document "s3md" ({"verify": bool, "keys": {AK:
 * {"secret", "created", "user"}}}), which the primary changes and every node
 * receives:
 *   verify off  any credentials pass (AIStore's default deployment)
 *   verify on   SigV4 (header or presigned) against the keys: the request's
 *               signature, its time, and its body's hash or chunk
 *               signatures (checked where the body is read, s3obj.c)
 * Secrets never leave the document: listings show access keys only, and
 * nothing here logs one.
 *
 * Admin API (gateways): GET /v1/s3/keys, PUT /v1/s3/keys {"access_key",
 * "secret"}, DELETE /v1/s3/keys/AK, PUT /v1/s3/verify {"verify": bool}.
 */
#include "s3.h"
#include "access.h"
#include "cluster.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "sec.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define SKEW_S 900

static const char *hdr_get(void *ctx, const char *name)
{
    return sl_req_header(ctx, name);
}

static void auth_err(struct sl_req *r, int why, const struct sl_err *e)
{
    switch (why) {
    case SL_S3_AUTH_EXPIRED:
        s3_err(r, 403, "AccessDenied", "Request has expired: %s", e->msg);
        break;
    case SL_S3_AUTH_SKEWED:
        s3_err(r, 403, "RequestTimeTooSkewed", "The difference between the request time and the server's time is "
               "too large: %s", e->msg);
        break;
    case SL_S3_AUTH_MISMATCH:
        s3_err(r, 403, "SignatureDoesNotMatch", "%s", e->msg);
        break;
    default:
        s3_err(r, 400, "AuthorizationHeaderMalformed", "%s", e->msg);
    }
}

/* RFC 1123 Date -> yyyymmddThhmmssZ */
static bool date_to_amz(const char *d, char out[17])
{
    int64_t t = s3_parse_http_time(d);
    if (t < 0)
        return false;
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(out, 17, "%Y%m%dT%H%M%SZ", &tm);
    return true;
}

int s3_auth(struct sl_req *r, struct s3auth *au)
{
    memset(au, 0, sizeof(*au));
    json_t *doc = sl_cluster_doc("s3md");
    bool verify = doc && json_is_true(json_object_get(doc, "verify"));
    if (!verify) {
        json_decref(doc);
        return 0;
    }
    au->on = true;
    struct sl_err err = { 0 };
    int why = 0;
    const char *qm = strchr(r->raw_uri, '?');
    char *raw_path = sl_xstrndup(r->raw_uri, qm ? (size_t)(qm - r->raw_uri) : strlen(r->raw_uri));
    const char *raw_query = qm ? qm + 1 : "";
    int rc = -1;
    int pre = sl_s3_auth_query(raw_query, &au->a, &why, &err);
    if (pre < 0) {
        auth_err(r, why, &err);
        goto out;
    }
    if (!pre && sl_req_query(r, "AWSAccessKeyId") && sl_req_query(r, "Signature")) {
        s3_err(r, 400, "InvalidRequest", "Signature Version 2 presigned URLs are not supported: presign with "
               "AWS4-HMAC-SHA256 (boto3: Config(signature_version='s3v4'); aws s3 presign does so)");
        goto out;
    }
    if (!pre) {
        const char *authz = sl_req_header(r, "Authorization");
        bool tok = sl_req_header(r, "X-Amz-Security-Token") || sl_req_query(r, "X-Amz-Security-Token");
        if (!authz && ((r->trust == SL_TRUST_PEER && sl_req_header(r, "X-Shale-S3-Hop")) ||
                       (sl_auth_on() && !tok))) {
            /* anonymous (no signature, no token): with client authentication on the bucket's policy and
             * ACLs decide (s3policy.c); a gateway decided already for a request it forwarded */
            au->on = false;
            au->anonymous = true;
            rc = 0;
            goto out;
        }
        if (!authz) {
            s3_err(r, 403, "AccessDenied", "Access Denied: this cluster verifies S3 signatures and the request has "
                   "none (no Authorization header or presigned query)");
            goto out;
        }
        if (!strncmp(authz, "AWS ", 4)) {
            s3_err(r, 400, "InvalidRequest", "Signature Version 2 is not supported: sign with AWS4-HMAC-SHA256");
            goto out;
        }
        char amz[17] = "";
        const char *xd = sl_req_header(r, "x-amz-date");
        if (xd)
            snprintf(amz, sizeof(amz), "%s", xd);
        else if (sl_req_header(r, "Date") && !date_to_amz(sl_req_header(r, "Date"), amz))
            amz[0] = 0;
        if (sl_s3_auth_header(authz, amz, &au->a, &why, &err) < 0) {
            auth_err(r, why, &err);
            goto out;
        }
    }
    if (sl_s3_auth_time(&au->a, sl_now_ns() / 1000000000LL, SKEW_S, &why, &err) < 0) {
        auth_err(r, why, &err);
        goto out;
    }
    json_t *k = json_object_get(json_object_get(doc, "keys"), au->a.ak);
    const char *secret = json_string_value(json_object_get(k, "secret"));
    if (!secret) {
        s3_err(r, 403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records (add "
               "it with `shale s3 key add`)");
        goto out;
    }
    snprintf(au->secret, sizeof(au->secret), "%s", secret);
    const char *ph = au->a.presigned ? "UNSIGNED-PAYLOAD" : sl_req_header(r, "x-amz-content-sha256");
    if (!ph) {
        s3_err(r, 400, "InvalidRequest", "Missing required header for this request: x-amz-content-sha256");
        goto out;
    }
    snprintf(au->payload, sizeof(au->payload), "%s", ph);
    snprintf(au->user, sizeof(au->user), "%s", sl_json_str(k, "user", ""));
    /* A request a gateway verified and forwarded here (a peer's signed call
     * marked as an S3 hop) is not verified again: only parsed, for the
     * chunk signatures its body may carry. */
    bool verified = r->trust == SL_TRUST_PEER && sl_req_header(r, "X-Shale-S3-Hop");
    char want[SL_S3_SIG_HEX];
    if (!verified &&
        sl_s3_signature(&au->a, au->secret, r->method_str, raw_path, raw_query, hdr_get, r, ph, want, &err) < 0) {
        s3_err(r, 400, "AuthorizationHeaderMalformed", "%s", err.msg);
        goto out;
    }
    if (!verified && !sl_s3_sig_equal(want, au->a.signature)) {
        s3_err(r, 403, "SignatureDoesNotMatch", "The request signature we calculated does not match the signature "
               "you provided. Check your key and signing method.");
        goto out;
    }
    rc = 0;
out:
    free(raw_path);
    json_decref(doc);
    return rc;
}

int s3_key_secret(const char *ak, bool *verify, char *secret, size_t sn, char *user, size_t un)
{
    json_t *doc = sl_cluster_doc("s3md");
    *verify = doc && json_is_true(json_object_get(doc, "verify"));
    json_t *k = json_object_get(json_object_get(doc, "keys"), ak ? ak : "");
    const char *sec = json_string_value(json_object_get(k, "secret"));
    int rc = sec ? 0 : -1;
    snprintf(secret, sn, "%s", sec ? sec : "");
    snprintf(user, un, "%s", sl_json_str(k, "user", ""));
    json_decref(doc);
    return rc;
}

/* ---- admin ---- */

static bool ak_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 3 || n > 128)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= 'A' && s[i] <= 'Z') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') ||
              strchr("_-.+=@,", s[i])))
            return false;
    return true;
}

static bool secret_ok(const char *s)
{
    size_t n = strlen(s);
    if (n < 8 || n > 128)
        return false;
    for (size_t i = 0; i < n; i++)
        if (s[i] <= ' ' || s[i] > '~')
            return false;
    return true;
}

static json_t *doc_copy(void)
{
    json_t *d = sl_cluster_doc("s3md");
    json_t *c = d ? json_deep_copy(d) : json_pack("{s:b,s:{}}", "verify", 0, "keys");
    json_decref(d);
    if (!json_is_object(json_object_get(c, "keys")))
        json_object_set_new(c, "keys", json_object());
    return c;
}

struct admin_job {
    int op;           /* 0 add, 1 rm, 2 verify */
    char *ak, *secret;
    char *user;       /* the AuthN user the key belongs to, or NULL */
    bool verify;
};

static void admin_free(void *arg)
{
    struct admin_job *j = arg;
    free(j->ak);
    free(j->user);
    if (j->secret)
        OPENSSL_cleanse(j->secret, strlen(j->secret));
    free(j->secret);
    free(j);
}

static pthread_mutex_t admin_mu = PTHREAD_MUTEX_INITIALIZER;

static void admin_run(struct sl_req *r, void *arg)
{
    struct admin_job *j = arg;
    struct sl_err ferr = { 0 };
    if (sl_cluster_fence(&ferr) < 0) { /* (a primary cut off from the majority changes nothing) */
        sl_resp_err(r, &ferr);
        return;
    }
    pthread_mutex_lock(&admin_mu);
    json_t *d = doc_copy();
    json_t *keys = json_object_get(d, "keys");
    json_t *amd = j->user ? sl_cluster_doc("authmd") : NULL;
    if (j->op == 0 && j->user && !json_object_get(json_object_get(amd, "users"), j->user)) {
        json_decref(d);
        sl_resp_errf(r, SL_ENOENT, "no user \"%s\" (S3 access keys belong to users of the cluster's AuthN: "
                     "`shale auth add user`)", j->user);
    } else if (j->op == 0) {
        char ts[40];
        sl_format_gotime(sl_now_ns(), "2006-01-02T15:04:05Z07:00", ts, sizeof(ts));
        json_object_set_new(keys, j->ak, json_pack("{s:s,s:s,s:s?}", "secret", j->secret, "created", ts, "user",
                                                   j->user));
        sl_cluster_set_doc("s3md", d);
        sl_logi("s3: access key %s added", j->ak);
        sl_resp_empty(r, 200);
    } else if (j->op == 1) {
        if (!json_object_get(keys, j->ak)) {
            json_decref(d);
            sl_resp_errf(r, SL_ENOENT, "S3 access key \"%s\" does not exist (list them with `shale s3 key ls`)",
                         j->ak);
        } else if (json_object_size(keys) == 1 && json_is_true(json_object_get(d, "verify"))) {
            json_decref(d);
            sl_resp_errf(r, SL_EINVAL, "\"%s\" is the last S3 access key and verification is on: no request could "
                         "pass; turn verification off first (`shale s3 verify off`)", j->ak);
        } else {
            json_object_del(keys, j->ak);
            sl_cluster_set_doc("s3md", d);
            sl_logi("s3: access key %s removed", j->ak);
            sl_resp_empty(r, 200);
        }
    } else {
        if (j->verify && !json_object_size(keys)) {
            json_decref(d);
            sl_resp_errf(r, SL_EINVAL, "no S3 access keys exist: with verification on no request could pass; add one "
                         "first (`shale s3 key add ACCESS_KEY`)");
        } else {
            json_object_set_new(d, "verify", json_boolean(j->verify));
            sl_cluster_set_doc("s3md", d);
            sl_logi("s3: signature verification %s", j->verify ? "on" : "off");
            sl_resp_empty(r, 200);
        }
    }
    pthread_mutex_unlock(&admin_mu);
    json_decref(amd);
    admin_free(j);
}

static void admin_body(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    if (!j) {
        sl_resp_err(r, &err);
        return;
    }
    struct admin_job *job = sl_xcalloc(1, sizeof(*job));
    if (sl_req_path_is(r, "/v1/s3/verify")) {
        json_t *v = json_object_get(j, "verify");
        if (!json_is_boolean(v) || json_object_size(j) != 1) {
            sl_resp_errf(r, SL_EINVAL, "PUT /v1/s3/verify takes {\"verify\": true|false}");
            goto bad;
        }
        job->op = 2;
        job->verify = json_is_true(v);
    } else {
        const char *ak = json_string_value(json_object_get(j, "access_key"));
        const char *sec = json_string_value(json_object_get(j, "secret"));
        if (!ak || !ak_ok(ak)) {
            sl_resp_errf(r, SL_EINVAL, "\"access_key\" must be 3 to 128 characters of A-Z a-z 0-9 _-.+=@,");
            goto bad;
        }
        if (!sec || !secret_ok(sec)) {
            sl_resp_errf(r, SL_EINVAL, "\"secret\" must be 8 to 128 printable characters without spaces");
            goto bad;
        }
        json_t *u = json_object_get(j, "user");
        if (json_is_null(u))
            u = NULL;
        if (u && !json_is_string(u)) {
            sl_resp_errf(r, SL_EINVAL, "\"user\" must be a user name");
            goto bad;
        }
        job->ak = sl_xstrdup(ak);
        job->secret = sl_xstrdup(sec);
        job->user = u ? sl_xstrdup(json_string_value(u)) : NULL;
    }
    json_decref(j);
    sl_req_offload(r, admin_run, admin_free, job);
    return;
bad:
    json_decref(j);
    admin_free(job);
}

void s3_keys_admin(struct sl_req *r)
{
    bool keys = sl_req_path_is(r, "/v1/s3/keys"), verify = sl_req_path_is(r, "/v1/s3/verify");
    if (!keys && !verify) {
        sl_resp_errf(r, SL_ENOENT, "no such endpoint: %s %s (S3 administration: /v1/s3/keys, /v1/s3/verify)",
                     r->method_str, r->path);
        return;
    }
    if (!sl_is_proxy()) {
        sl_resp_errf(r, SL_EINVAL, "%s %s: S3 keys are managed through a gateway", r->method_str, r->path);
        return;
    }
    if (r->method == SL_M_GET && keys) {
        json_t *d = sl_cluster_doc("s3md");
        json_t *out = json_object();
        json_t *arr = json_array();
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(d, "keys"), k, v)
            json_array_append_new(arr, json_pack("{s:s,s:s,s:s}", "access_key", k, "created",
                                                 sl_json_str(v, "created", ""), "user", sl_json_str(v, "user", "")));
        json_object_set_new(out, "verify", json_boolean(d && json_is_true(json_object_get(d, "verify"))));
        json_object_set_new(out, "keys", arr);
        json_decref(d);
        sl_resp_json_new(r, 200, out);
        return;
    }
    if (!sl_is_primary() && (r->method == SL_M_PUT || r->method == SL_M_DELETE)) {
        sl_forward_to_primary(r);
        return;
    }
    if (r->method == SL_M_PUT) {
        sl_req_buffer_body(r, 64 * 1024, admin_body);
    } else if (r->method == SL_M_DELETE && keys) {
        const char *ak = r->path + strlen("/v1/s3/keys");
        while (*ak == '/')
            ak++;
        if (!*ak) {
            sl_resp_errf(r, SL_EINVAL, "DELETE /v1/s3/keys/ACCESS_KEY: which key?");
            return;
        }
        struct admin_job *job = sl_xcalloc(1, sizeof(*job));
        job->op = 1;
        job->ak = sl_xstrdup(ak);
        sl_req_offload(r, admin_run, admin_free, job);
    } else {
        sl_resp_method_not_allowed(r, keys ? "GET, PUT, DELETE" : "PUT");
    }
}
