/* SPDX-License-Identifier: MIT
 * s3post.c: POST Object, a browser's form upload (POST /s3/BUCKET with a
 * multipart/form-data body: key, policy, x-amz-algorithm,
 * x-amz-credential, x-amz-date, x-amz-signature, success_action_status or
 * success_action_redirect, Content-Type and the other headers, x-amz-meta-*,
 * then the file).
 *
 * The form is read with libmicrohttpd's post processor as the body streams
 * in. A gateway reads the fields before the file (at most 384 KiB of them),
 * checks the signature and the policy (and, with AuthN on, that the key's
 * user may PUT), then forwards the whole body, the bytes it read first, to
 * the object's target (sl_fwd with a prefix: nothing is held but those
 * bytes). The target reads the form again, checks it the same way, and
 * streams the file into the object; content-length-range is checked as the
 * bytes come and at the end.
 *
 * The policy (base64 JSON {"expiration", "conditions"}) is checked when the
 * form has one, with verification on or off: an expired policy, a failed
 * condition (an object {"field": "value"}, ["eq" | "starts-with", "$field",
 * "value"], ["content-length-range", min, max]) or a field no condition
 * names (but policy, x-amz-signature, file and x-ignore-*) is 403
 * AccessDenied naming it. With verification on the policy and the SigV4
 * signature over it are required.
 */
#include "s3.h"
#include "s3obj.h"
#include "access.h"
#include "cluster.h"
#include "conf.h"
#include "fwd.h"
#include "node.h"
#include "store.h"
#include "b64.h"

#include <microhttpd.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define POST_FIELDS_MAX (384 * 1024)   /* the raw bytes of the form before the file (a gateway holds them) */
#define POST_POLICY_MAX (64 * 1024)

struct post {
    struct sl_req *r;
    struct sl_bck b;
    struct MHD_PostProcessor *pp;
    bool gateway;
    struct kvs f;                      /* the fields before the file */
    char *cur;                         /* the field being read */
    struct sl_buf val;
    bool file, after_file;             /* the file part began; a part after it */
    char *filename, *file_ct;
    struct sl_buf raw;                 /* gateway: the body so far */
    int status;                        /* failed: the answer */
    char code[48], msg[700];
    /* target */
    char *key;
    struct sl_put *p;
    EVP_MD_CTX *md5;
    uint64_t size, next_off;           /* the file's bytes so far; the offset its next chunk has */
    int64_t len_min, len_max;          /* content-length-range, -1 none */
};

static int post_fail(struct post *st, int status, const char *code, const char *fmt, ...) SL_PRINTF(4, 5);

static int post_fail(struct post *st, int status, const char *code, const char *fmt, ...)
{
    if (!st->status) {
        st->status = status;
        snprintf(st->code, sizeof(st->code), "%s", code);
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(st->msg, sizeof(st->msg), fmt, ap);
        va_end(ap);
    }
    return -1;
}

static void post_free(struct post *st)
{
    if (!st)
        return;
    if (st->pp)
        MHD_destroy_post_processor(st->pp);
    sl_bck_release(&st->b);
    s3_kv_free(&st->f);
    free(st->cur);
    sl_buf_free(&st->val);
    free(st->filename);
    free(st->file_ct);
    sl_buf_free(&st->raw);
    free(st->key);
    sl_put_abort(st->p);
    if (st->md5)
        EVP_MD_CTX_free(st->md5);
    free(st);
}

static void post_cleanup(struct sl_req *r, bool completed)
{
    (void)completed;
    post_free(r->ctx);
    r->ctx = NULL;
}

static const char *field(const struct post *st, const char *name)
{
    for (int i = 0; i < st->f.n; i++)
        if (!strcasecmp(st->f.kv[i].k, name))
            return st->f.kv[i].v;
    return NULL;
}

bool s3_is_post_object(const struct sl_req *r)
{
    const char *ct = sl_req_header(r, "Content-Type");
    return r->method == SL_M_POST && ct && !strncasecmp(ct, "multipart/form-data", 19) && !sl_req_query(r, "delete");
}

/* ---- the policy and the signature ---- */

static int64_t iso_time(const char *s)
{
    struct tm tm;
    memset(&tm, 0, sizeof(tm));
    const char *e = s ? strptime(s, "%Y-%m-%dT%H:%M:%S", &tm) : NULL;
    if (!e)
        return -1;
    if (*e == '.')
        e += 1 + strspn(e + 1, "0123456789");
    if (strcmp(e, "Z") && strcmp(e, "+00:00"))
        return -1;
    return (int64_t)timegm(&tm);
}

static bool ignored(const char *name)
{
    return !strcasecmp(name, "policy") || !strcasecmp(name, "x-amz-signature") || !strcasecmp(name, "file") ||
           !strncasecmp(name, "x-ignore-", 9);
}

/* the value a condition tests: a form field, or the bucket */
static const char *cond_value(const struct post *st, const char *name)
{
    if (!strcasecmp(name, "bucket"))
        return st->b.name;
    return field(st, name);
}

static int policy_check(struct post *st, const char *b64)
{
    size_t n = strlen(b64);
    if (n > POST_POLICY_MAX)
        return post_fail(st, 400, "InvalidPolicyDocument", "Invalid Policy: larger than %d bytes", POST_POLICY_MAX);
    unsigned char *dec = sl_xmalloc(sl_b64_decoded_max(n) + 1);
    ssize_t dl = sl_b64_decode(b64, n, 0, dec, NULL, 0);
    json_t *pol = dl < 0 ? NULL : json_loadb((const char *)dec, (size_t)dl, 0, NULL);
    free(dec);
    json_t *conds = json_object_get(pol, "conditions");
    int rc = 0;
    const char *exp = json_string_value(json_object_get(pol, "expiration"));
    int64_t et = iso_time(exp);
    if (!json_is_object(pol) || !json_is_array(conds) || et < 0) {
        rc = post_fail(st, 400, "InvalidPolicyDocument", "Invalid Policy: the policy field must be base64 of a JSON "
                       "object with \"expiration\" (ISO 8601, UTC) and a \"conditions\" array");
        goto out;
    }
    if (et < sl_now_ns() / 1000000000LL) {
        rc = post_fail(st, 403, "AccessDenied", "Invalid according to Policy: Policy expired (at %s); sign a new one",
                       exp);
        goto out;
    }
    bool *covered = sl_xcalloc((size_t)st->f.n + 1, sizeof(bool));
    size_t i;
    json_t *c;
    json_array_foreach(conds, i, c) {
        const char *name = NULL, *want = NULL, *op = "eq";
        if (json_is_object(c) && json_object_size(c) == 1) {
            const char *k;
            json_t *v;
            json_object_foreach(c, k, v) {
                name = k;
                want = json_string_value(v);
            }
        } else if (json_is_array(c) && json_array_size(c) == 3 && json_is_string(json_array_get(c, 0))) {
            op = json_string_value(json_array_get(c, 0));
            if (!strcasecmp(op, "content-length-range")) {
                json_t *lo = json_array_get(c, 1), *hi = json_array_get(c, 2);
                if (!json_is_integer(lo) || !json_is_integer(hi) || json_integer_value(lo) < 0 ||
                    json_integer_value(hi) < json_integer_value(lo)) {
                    rc = post_fail(st, 400, "InvalidPolicyDocument", "Invalid Policy: content-length-range takes "
                                   "two integers, min <= max");
                    break;
                }
                st->len_min = json_integer_value(lo);
                st->len_max = json_integer_value(hi);
                continue;
            }
            const char *f = json_string_value(json_array_get(c, 1));
            name = f && f[0] == '$' ? f + 1 : NULL;
            want = json_string_value(json_array_get(c, 2));
        }
        if (!name || !want || (strcasecmp(op, "eq") && strcasecmp(op, "starts-with"))) {
            char *s = json_dumps(c, JSON_COMPACT | JSON_ENCODE_ANY);
            rc = post_fail(st, 400, "InvalidPolicyDocument", "Invalid Policy: Invalid Condition: %.300s (conditions "
                           "are {\"field\": \"value\"}, [\"eq\", \"$field\", \"value\"], [\"starts-with\", "
                           "\"$field\", \"prefix\"], [\"content-length-range\", min, max])", s ? s : "?");
            free(s);
            break;
        }
        const char *have = cond_value(st, name);
        bool ok = !strcasecmp(op, "eq") ? have && !strcmp(have, want) : !strncmp(have ? have : "", want, strlen(want));
        if (!ok) {
            char *s = json_dumps(c, JSON_COMPACT | JSON_ENCODE_ANY);
            rc = post_fail(st, 403, "AccessDenied", "Invalid according to Policy: Policy Condition failed: %.300s "
                           "(the form has %s%.200s%s); nothing was stored", s ? s : "?", have ? "\"" : "",
                           have ? have : "no such field", have ? "\"" : "");
            free(s);
            break;
        }
        for (int j = 0; j < st->f.n; j++)
            if (!strcasecmp(st->f.kv[j].k, name))
                covered[j] = true;
    }
    for (int j = 0; !rc && j < st->f.n; j++)
        if (!covered[j] && !ignored(st->f.kv[j].k))
            rc = post_fail(st, 403, "AccessDenied", "Invalid according to Policy: Extra input fields: %.200s (every "
                           "field but policy, x-amz-signature, file and x-ignore-* needs a condition); nothing was "
                           "stored", st->f.kv[j].k);
    free(covered);
out:
    json_decref(pol);
    return rc;
}

/* The fields, at the file: signature, policy, key. 0, or -1 (st->status). */
static int form_check(struct sl_req *r, struct post *st)
{
    const char *policy = field(st, "policy"), *sig = field(st, "x-amz-signature");
    const char *cred = field(st, "x-amz-credential"), *alg = field(st, "x-amz-algorithm");
    bool verify = false;
    char secret[129] = "", user[128] = "";
    struct sl_s3_auth a;
    memset(&a, 0, sizeof(a));
    int have = cred ? sscanf(cred, "%128[^/]/%8[0-9]/%64[^/]/%16[^/]/aws4_request", a.ak, a.date, a.region,
                             a.service) : 0;
    int known = s3_key_secret(have >= 1 ? a.ak : NULL, &verify, secret, sizeof(secret), user, sizeof(user));
    if (verify) {
        if (field(st, "AWSAccessKeyId") || field(st, "signature"))
            return post_fail(st, 400, "InvalidRequest", "Signature Version 2 POST forms are not supported: sign the "
                             "policy with AWS4-HMAC-SHA256 (boto3's generate_presigned_post does)");
        if (!policy || !sig || !cred || !alg)
            return post_fail(st, 400, "InvalidArgument", "Bucket POST must contain the fields policy, x-amz-algorithm, "
                             "x-amz-credential, x-amz-date and x-amz-signature (this cluster verifies S3 signatures; "
                             "missing: %s)", !policy ? "policy" : !sig ? "x-amz-signature" : !cred ?
                             "x-amz-credential" : "x-amz-algorithm");
        if (strcmp(alg, "AWS4-HMAC-SHA256") || have != 4)
            return post_fail(st, 400, "InvalidArgument", "x-amz-algorithm must be AWS4-HMAC-SHA256 and "
                             "x-amz-credential AK/yyyymmdd/REGION/s3/aws4_request (they are \"%.40s\" and \"%.200s\")",
                             alg, cred);
        if (known < 0)
            return post_fail(st, 403, "InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our "
                             "records (add it with `shale s3 key add`)");
        char want[SL_S3_SIG_HEX];
        sl_s3_policy_signature(&a, secret, policy, want);
        OPENSSL_cleanse(secret, sizeof(secret));
        if (!sl_s3_sig_equal(want, sig))
            return post_fail(st, 403, "SignatureDoesNotMatch", "The request signature we calculated does not match "
                             "the signature you provided. Check your key and signing method.");
    }
    OPENSSL_cleanse(secret, sizeof(secret));
    if (!verify)
        user[0] = 0; /* an unverified access key names nobody (as s3_auth) */
    if (policy && policy_check(st, policy) < 0)
        return -1;
    const char *key = field(st, "key");
    if (!key || !*key)
        return post_fail(st, 400, "InvalidArgument", "Bucket POST must contain a field named 'key'.  If it is "
                         "specified, please check the order of the fields (they come before the file).");
    /* ${filename}: the file's name */
    struct sl_buf k;
    sl_buf_init(&k);
    const char *fn = st->filename ? st->filename : "", *s = key, *v;
    while ((v = strstr(s, "${filename}"))) {
        sl_buf_add(&k, s, (size_t)(v - s));
        sl_buf_adds(&k, fn);
        s = v + 11;
    }
    sl_buf_adds(&k, s);
    sl_buf_addc(&k, 0);
    st->key = sl_buf_steal(&k);
    struct sl_err err = { 0 };
    size_t kl = strlen(st->key);
    if (kl > 1024)
        return post_fail(st, 400, "KeyTooLongError", "Your key is too long (%zu bytes; at most 1024)", kl);
    if (sl_objname_check(st->key, kl, &err) < 0)
        return post_fail(st, 400, "InvalidArgument", "key \"%.200s\": %.300s", st->key, err.msg);
    const char *acl = field(st, "acl");
    if (acl && strcmp(acl, "private") && strcmp(acl, "bucket-owner-full-control"))
        return post_fail(st, 501, "NotImplemented", "acl \"%.60s\" is not implemented: Shale keeps one ACL per "
                         "object (the owner's full control); send \"private\" or no acl; nothing was stored", acl);
    static const char *const no[] = { "tagging", "x-amz-server-side-encryption", "x-amz-storage-class",
                                      "x-amz-website-redirect-location", NULL };
    for (int i = 0; no[i]; i++)
        if (field(st, no[i]) && (strcmp(no[i], "x-amz-storage-class") || strcmp(field(st, no[i]), "STANDARD")))
            return post_fail(st, 501, "NotImplemented", "the form field %s is not implemented by Shale's POST "
                             "Object; send the form without it; nothing was stored", no[i]);
    if (st->gateway && sl_access_s3(r, st->b.name, true, user, &err) < 0)
        return post_fail(st, 403, "AccessDenied", "%s", err.msg);
    return 0;
}

/* ---- the target: the file into the object ---- */

static int file_begin(struct post *st)
{
    struct kvs m = { 0 };
    static const struct {
        const char *f, *k;
    } std[] = { { "Content-Type", "s3.ct" }, { "Content-Disposition", "s3.cd" }, { "Content-Encoding", "s3.ce" },
                { "Content-Language", "s3.cl" }, { "Cache-Control", "s3.cc" }, { "Expires", "s3.ex" } };
    for (size_t i = 0; i < SL_ARRAY_SIZE(std); i++) {
        const char *v = field(st, std[i].f);
        if (!v && i == 0 && st->file_ct && strcasecmp(st->file_ct, "application/octet-stream"))
            v = st->file_ct;
        if (v)
            s3_kv_add(&m, std[i].k, v);
    }
    for (int i = 0; i < st->f.n; i++)
        if (!strncasecmp(st->f.kv[i].k, "x-amz-meta-", 11)) {
            char *k = sl_xstrdup(st->f.kv[i].k);
            for (char *c = k; *c; c++)
                *c = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
            s3_kv_add(&m, k, st->f.kv[i].v);
            free(k);
        }
    if (m.bytes > S3_META_MAX) {
        s3_kv_free(&m);
        return post_fail(st, 400, "MetadataTooLarge", "Your metadata fields exceed the maximum allowed metadata size "
                         "(%d bytes)", S3_META_MAX);
    }
    struct sl_smap *s = sl_smap_get();
    bool here = sl_obj_owned_here(s, &st->b, st->key, strlen(st->key));
    sl_smap_put(s);
    struct sl_err err = { 0 };
    struct sl_put_opts o = { .client_cktype = -1, .custom = m.kv, .ncustom = m.n, .expect_size = -1 };
    int rc = 0;
    if (!here)
        rc = post_fail(st, 503, "SlowDown", "the cluster map is changing (%s does not own key %.200s); retry", G.name,
                       st->key);
    else if (sl_put_begin(&st->b, st->key, strlen(st->key), &o, &st->p, &err) < 0)
        rc = post_fail(st, sl_err_status(err.code), "InternalError", "%.400s", err.msg);
    s3_kv_free(&m);
    if (!rc) {
        st->md5 = EVP_MD_CTX_new();
        EVP_DigestInit_ex(st->md5, EVP_md5(), NULL);
    }
    return rc;
}

static int file_data(struct post *st, const char *p, size_t n)
{
    if (!st->p)
        return 0;
    st->size += n;
    if (st->len_max >= 0 && st->size > (uint64_t)st->len_max)
        return post_fail(st, 400, "EntityTooLarge", "Your proposed upload exceeds the maximum allowed size: more "
                         "than %lld bytes (the policy's content-length-range); nothing was stored",
                         (long long)st->len_max);
    EVP_DigestUpdate(st->md5, p, n);
    struct sl_err err = { 0 };
    if (sl_put_write(st->p, p, n, &err) < 0)
        return post_fail(st, sl_err_status(err.code), err.code == SL_ENOSPC ? "InsufficientStorage" : "InternalError",
                         "%.400s", err.msg);
    return 0;
}

/* ---- the form ---- */

static void field_end(struct post *st)
{
    if (!st->cur)
        return;
    sl_buf_addc(&st->val, 0);
    s3_kv_add(&st->f, st->cur, st->val.p);
    free(st->cur);
    st->cur = NULL;
    sl_buf_reset(&st->val);
}

static enum MHD_Result form_iter(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
                                 const char *content_type, const char *transfer_encoding, const char *data,
                                 uint64_t off, size_t size)
{
    (void)kind;
    (void)transfer_encoding;
    struct post *st = cls;
    if (st->status || st->after_file)
        return MHD_YES;
    if (st->file) {
        if (strcasecmp(key, "file") || off != st->next_off) {
            st->after_file = true; /* S3 ignores what follows the file */
            return MHD_YES;
        }
        st->next_off = off + size;
        if (!st->gateway)
            file_data(st, data, size);
        return MHD_YES;
    }
    if (!strcasecmp(key, "file")) {
        field_end(st);
        st->file = true;
        st->filename = sl_xstrdup(filename ? filename : "");
        st->file_ct = content_type ? sl_xstrdup(content_type) : NULL;
        st->next_off = off + size;
        /* the fields are all in: check them; a target takes the data */
        if (form_check(st->r, st) == 0 && !st->gateway && file_begin(st) == 0)
            file_data(st, data, size);
        return MHD_YES;
    }
    if (!st->cur || strcasecmp(st->cur, key) || (off == 0 && st->val.len)) {
        field_end(st);
        st->cur = sl_xstrdup(key);
    }
    if (st->val.len + size > 64 * 1024) {
        post_fail(st, 400, "InvalidArgument", "form field %.100s is larger than 64 KiB", key);
        return MHD_YES;
    }
    sl_buf_add(&st->val, data, size);
    return MHD_YES;
}

static struct post *post_new(struct sl_req *r, const char *bucket)
{
    struct sl_bck b;
    struct sl_err err = { 0 };
    if (sl_bck_resolve(bucket, "ais", NULL, &b, &err) < 0) {
        if (err.code == SL_ENOBCK || err.code == SL_EINVAL)
            s3_err(r, 404, "NoSuchBucket", "The specified bucket does not exist: %s", bucket);
        else
            s3_err_sl(r, &err);
        return NULL;
    }
    struct post *st = sl_xcalloc(1, sizeof(*st));
    st->b = b;
    st->r = r;
    st->gateway = !sl_is_target();
    st->len_min = st->len_max = -1;
    sl_buf_init(&st->val);
    sl_buf_init(&st->raw);
    st->pp = MHD_create_post_processor(r->conn, 16 * 1024, form_iter, st);
    if (!st->pp) {
        post_free(st);
        s3_err(r, 400, "MalformedPOSTRequest", "The body of your POST request is not well-formed "
               "multipart/form-data (Content-Type multipart/form-data needs its boundary)");
        return NULL;
    }
    return st;
}

static void post_err(struct sl_req *r, const struct post *st)
{
    s3_err(r, st->status, st->code, "%s", st->msg);
}

/* The gateway: the fields, then the whole body to the key's target */
static void gw_fwd_err(struct sl_req *r, int status, const char *msg)
{
    s3_err(r, status, status == 502 ? "InternalError" : "ServiceUnavailable", "%s; retry", msg);
}

static ssize_t gw_take(struct sl_req *r, const char *data, size_t n)
{
    struct post *st = r->ctx;
    if (st->status)
        return (ssize_t)n; /* failed: read and dropped, answered at the end */
    if (st->raw.len >= POST_FIELDS_MAX) {
        post_fail(st, 400, "InvalidArgument", "the form's fields before the file are larger than %d KiB (the file "
                  "must be the last field)", POST_FIELDS_MAX / 1024);
        return (ssize_t)n;
    }
    n = SL_MIN(n, POST_FIELDS_MAX - st->raw.len); /* the rest of the chunk comes again */
    sl_buf_add(&st->raw, data, n);
    if (MHD_post_process(st->pp, data, n) != MHD_YES) {
        post_fail(st, 400, "MalformedPOSTRequest", "The body of your POST request is not well-formed "
                  "multipart/form-data.");
        return (ssize_t)n;
    }
    if (!st->file || st->status) /* (the fields were checked at the file: form_iter) */
        return (ssize_t)n;
    struct sl_smap *s = sl_smap_get();
    struct sl_buf un;
    sl_buf_init(&un);
    sl_obj_uname(&un, st->b.provider, st->b.name, st->key, strlen(st->key));
    const struct sl_snode *t = sl_smap_hrw_target(s, un.p, un.len);
    sl_buf_free(&un);
    if (!t) {
        sl_smap_put(s);
        post_fail(st, 503, "ServiceUnavailable", "the cluster has no active targets; retry later");
        return (ssize_t)n;
    }
    char *url = sl_xasprintf("%s%s", t->url, r->raw_uri);
    sl_smap_put(s);
    struct sl_buf raw = st->raw;
    sl_buf_init(&st->raw);
    post_free(st);
    r->ctx = NULL;
    r->on_cleanup = NULL;
    sl_hdr_del(r, "x-amz-request-id");
    static const char *const hop[] = { "X-Shale-S3-Hop: 1", NULL };
    struct sl_fwd_opts o = { .url = url, .hdrs = hop, .timeout_ms = sl_conf->send_file_time_ns / 1000000,
                             .prefix = raw.p, .prefix_len = raw.len };
    sl_fwd(r, &o, gw_fwd_err);
    sl_buf_free(&raw);
    free(url);
    return (ssize_t)n;
}

static void gw_done(struct sl_req *r)
{
    struct post *st = r->ctx;
    s3_cors_actual(r, &st->b);
    if (st->status)
        post_err(r, st);
    else
        s3_err(r, 400, "InvalidArgument", "POST requires exactly one file upload per request (a form field named "
               "file, the last one).");
}

/* The target: the file into the object, then the answer */
static int tg_data(struct sl_req *r, const char *data, size_t n)
{
    struct post *st = r->ctx;
    if (st->status)
        return 0;
    if (MHD_post_process(st->pp, data, n) != MHD_YES)
        post_fail(st, 400, "MalformedPOSTRequest", "The body of your POST request is not well-formed "
                  "multipart/form-data.");
    return 0;
}

static void tg_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct post *st = r->ctx;
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned dl = 0;
    char etag[33];
    EVP_DigestFinal_ex(st->md5, d, &dl);
    sl_hex(d, 16, etag);
    struct sl_put *p = st->p;
    st->p = NULL;
    sl_put_set_custom(p, "ETag", etag);
    struct sl_err err = { 0 };
    if (sl_put_commit(p, NULL, &err) < 0) {
        s3_err_sl(r, &err);
        return;
    }
    const char *host = sl_req_header(r, "Host");
    struct sl_buf loc;
    sl_buf_init(&loc);
    sl_buf_printf(&loc, "http://%s/s3/%s/", host ? host : "localhost", st->b.name);
    for (const unsigned char *c = (const unsigned char *)st->key; *c; c++) {
        if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || strchr("-_.~/", *c))
            sl_buf_addc(&loc, (char)*c);
        else
            sl_buf_printf(&loc, "%%%02X", *c);
    }
    sl_buf_addc(&loc, 0);
    sl_hdr_addf(r, "ETag", "\"%s\"", etag);
    sl_hdr_add(r, "Location", loc.p);
    const char *redir = field(st, "success_action_redirect");
    if (!redir)
        redir = field(st, "redirect");
    const char *sas = field(st, "success_action_status");
    if (redir && *redir) {
        struct sl_buf u;
        sl_buf_init(&u);
        sl_buf_printf(&u, "%s%sbucket=%s&key=", redir, strchr(redir, '?') ? "&" : "?", st->b.name);
        for (const unsigned char *c = (const unsigned char *)st->key; *c; c++) {
            if ((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') || (*c >= '0' && *c <= '9') || strchr("-_.~", *c))
                sl_buf_addc(&u, (char)*c);
            else
                sl_buf_printf(&u, "%%%02X", *c);
        }
        sl_buf_printf(&u, "&etag=%%22%s%%22", etag);
        sl_buf_addc(&u, 0);
        sl_hdr_del(r, "Location");
        sl_hdr_add(r, "Location", u.p);
        sl_buf_free(&u);
        sl_resp_empty(r, 303);
    } else if (sas && !strcmp(sas, "201")) {
        struct sl_buf x;
        sl_buf_init(&x);
        sl_buf_adds(&x, "<PostResponse>");
        s3_xel(&x, "Location", loc.p);
        s3_xel(&x, "Bucket", st->b.name);
        s3_xel(&x, "Key", st->key);
        sl_buf_printf(&x, "<ETag>&quot;%s&quot;</ETag>", etag);
        sl_buf_adds(&x, "</PostResponse>");
        s3_xml(r, 201, &x);
    } else {
        sl_resp_empty(r, sas && !strcmp(sas, "200") ? 200 : 204);
    }
    sl_buf_free(&loc);
}

static void tg_done(struct sl_req *r)
{
    struct post *st = r->ctx;
    if (st->pp && !st->status) {
        enum MHD_Result ok = MHD_destroy_post_processor(st->pp);
        st->pp = NULL;
        if (ok != MHD_YES && !st->after_file)
            post_fail(st, 400, "IncompleteBody", "the form's body ended before its closing boundary");
    }
    if (!st->status && !st->file)
        post_fail(st, 400, "InvalidArgument", "POST requires exactly one file upload per request (a form field named "
                  "file, the last one).");
    if (!st->status && st->len_min >= 0 && st->size < (uint64_t)st->len_min)
        post_fail(st, 400, "EntityTooSmall", "Your proposed upload is smaller than the minimum allowed size: %llu "
                  "bytes, the policy's content-length-range asks for at least %lld; nothing was stored",
                  (unsigned long long)st->size, (long long)st->len_min);
    if (st->status) {
        post_err(r, st);
        return;
    }
    if (sl_store_put_syncs())
        sl_req_offload_disk(r, tg_run, NULL, NULL);
    else
        tg_run(r, NULL);
}

void s3_post_object(struct sl_req *r, const char *bucket)
{
    if (!*bucket) {
        s3_err(r, 405, "MethodNotAllowed", "POST / is not allowed: a form upload goes to POST /s3/BUCKET");
        return;
    }
    struct post *st = post_new(r, bucket);
    if (!st)
        return;
    if (!st->gateway) /* (a gateway's own answers are its errors: gw_done) */
        s3_cors_actual(r, &st->b);
    r->ctx = st;
    r->on_cleanup = post_cleanup;
    if (st->gateway)
        sl_req_stream_body_bp(r, gw_take, gw_done);
    else
        sl_req_stream_body(r, tg_data, tg_done);
}
