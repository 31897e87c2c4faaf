/* SPDX-License-Identifier: MIT
 * backend_s3.c: the "aws" backend plugin: S3 and S3-compatible servers
 * (MinIO, s3rver, another Shale's /s3) over libcurl, signed with SigV4
 * (libcurl's CURLOPT_AWS_SIGV4).
 *
 * Where a call goes:
 *   endpoint  the bucket's extra.aws.endpoint, else $S3_ENDPOINT, else
 *             https://s3.<region>.amazonaws.com; path style
 *             (ENDPOINT/BUCKET/KEY), a path in the endpoint kept (.../s3),
 *             or virtual-hosted (BUCKET.HOST/KEY) with the bucket's
 *             extra.aws.addressing "virtual", and for AWS's own endpoint
 *             when the bucket name is a DNS label (AWS's default)
 *   region    the bucket's extra.aws.cloud_region, else $AWS_REGION /
 *             $AWS_DEFAULT_REGION, else us-east-1
 *   keys      the bucket's extra.aws.profile, else $AWS_PROFILE: that
 *             profile of the credentials file ($AWS_SHARED_CREDENTIALS_FILE,
 *             else ~/.aws/credentials); else $AWS_ACCESS_KEY_ID /
 *             $AWS_SECRET_ACCESS_KEY (+ $AWS_SESSION_TOKEN); else the file's
 *             [default]. Read at every call: a changed file takes effect.
 *
 * libcurl 7.88's signer signs the URL's query as written and every header
 * we pass: so queries are built sorted and RFC 3986-encoded here, every
 * request carries x-amz-content-sha256 (the empty body's hash, or
 * UNSIGNED-PAYLOAD for a PUT), and no header is removed with "Name:".
 *
 * A PUT bigger than the bucket's extra.aws.multipart_size (0: 64 MiB; -1:
 * never) goes up as an S3 multipart upload, in parts of that size (at
 * least 5 MiB, at most 10,000 parts), 4 parts at a time.
 *
 * 5xx and 429 answers are retried (3 tries, 0.2 s then 0.4 s apart) when
 * nothing of the answer was handed on yet; a remote that cannot be reached
 * fails at once (connect timeout 5 s).
 */
#include "shale_plugin.h"
#include "common_curl.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <curl/curl.h>
#include <expat.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define ERRBODY 4096

/* ---- small strings ---- */

struct sbuf {
    char *p;
    size_t len, cap;
};

static int sb_add(struct sbuf *b, const char *s, size_t n)
{
    return sl_cc_append(&b->p, &b->len, &b->cap, s, n);
}

static int sb_adds(struct sbuf *b, const char *s)
{
    return sb_add(b, s, strlen(s));
}

/* RFC 3986 percent-encoding (upper-case hex); '/' kept when keep_slash. */
static int sb_enc(struct sbuf *b, const char *s, size_t n, int keep_slash)
{
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
            c == '.' || c == '~' || (c == '/' && keep_slash)) {
            if (sb_add(b, (const char *)&c, 1) < 0)
                return -1;
        } else {
            char e[3] = { '%', hex[c >> 4], hex[c & 15] };
            if (sb_add(b, e, 3) < 0)
                return -1;
        }
    }
    return 0;
}

static void sb_free(struct sbuf *b)
{
    sl_cc_host->free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

#define errf sl_cc_errf

/* ---- credentials ---- */

struct creds {
    char ak[256], sk[256], token[2048];
    char source[1400]; /* where they came from, for 403 messages */
};

static int ini_profile(const char *file, const char *profile, struct creds *c)
{
    FILE *f = fopen(file, "r");
    if (!f)
        return -1;
    char line[2400];
    int in = 0, found = 0;
    while (fgets(line, sizeof(line), f)) {
        char *s = line;
        while (*s == ' ' || *s == '\t')
            s++;
        size_t l = strlen(s);
        while (l && (s[l - 1] == '\n' || s[l - 1] == '\r' || s[l - 1] == ' ' || s[l - 1] == '\t'))
            s[--l] = 0;
        if (*s == '[') {
            char *e = strchr(s, ']');
            if (e)
                *e = 0;
            const char *name = s + 1;
            if (!strncmp(name, "profile ", 8))
                name += 8;
            in = !strcmp(name, profile);
            found |= in;
            continue;
        }
        if (!in || *s == '#' || *s == ';')
            continue;
        char *eq = strchr(s, '=');
        if (!eq)
            continue;
        char *k = s, *v = eq + 1, *ke = eq;
        while (ke > k && (ke[-1] == ' ' || ke[-1] == '\t'))
            ke--;
        *ke = 0;
        while (*v == ' ' || *v == '\t')
            v++;
        if (!strcmp(k, "aws_access_key_id"))
            snprintf(c->ak, sizeof(c->ak), "%s", v);
        else if (!strcmp(k, "aws_secret_access_key"))
            snprintf(c->sk, sizeof(c->sk), "%s", v);
        else if (!strcmp(k, "aws_session_token"))
            snprintf(c->token, sizeof(c->token), "%s", v);
    }
    fclose(f);
    return found ? 0 : -1;
}

static int get_creds(const struct sl_backend_bck *b, struct creds *c, char *err, size_t errlen)
{
    memset(c, 0, sizeof(*c));
    char file[1024];
    const char *cf = getenv("AWS_SHARED_CREDENTIALS_FILE"), *home = getenv("HOME");
    if (cf && *cf)
        snprintf(file, sizeof(file), "%s", cf);
    else
        snprintf(file, sizeof(file), "%s/.aws/credentials", home && *home ? home : "/root");
    const char *prof = b->profile && *b->profile ? b->profile : getenv("AWS_PROFILE");
    if (prof && *prof) {
        if (ini_profile(file, prof, c) < 0 || !c->ak[0] || !c->sk[0]) {
            errf(err, errlen, "no credentials: profile \"%s\" (%s) was not found in %s or has no "
                 "aws_access_key_id/aws_secret_access_key", prof,
                 b->profile && *b->profile ? "the bucket's extra.aws.profile" : "$AWS_PROFILE", file);
            return -1;
        }
        snprintf(c->source, sizeof(c->source), "profile \"%s\" of %s (%s)", prof, file,
                 b->profile && *b->profile ? "extra.aws.profile" : "$AWS_PROFILE");
        return 0;
    }
    const char *ak = getenv("AWS_ACCESS_KEY_ID"), *sk = getenv("AWS_SECRET_ACCESS_KEY");
    if (ak && *ak && sk && *sk) {
        snprintf(c->ak, sizeof(c->ak), "%s", ak);
        snprintf(c->sk, sizeof(c->sk), "%s", sk);
        const char *t = getenv("AWS_SESSION_TOKEN");
        if (t)
            snprintf(c->token, sizeof(c->token), "%s", t);
        snprintf(c->source, sizeof(c->source), "$AWS_ACCESS_KEY_ID %s of the server's environment", c->ak);
        return 0;
    }
    if (ini_profile(file, "default", c) == 0 && c->ak[0] && c->sk[0]) {
        snprintf(c->source, sizeof(c->source), "profile \"default\" of %s", file);
        return 0;
    }
    errf(err, errlen, "no credentials for the remote: set the bucket's extra.aws.profile, or AWS_ACCESS_KEY_ID and "
         "AWS_SECRET_ACCESS_KEY in the server's environment, or a [default] profile in %s", file);
    return -1;
}

/* ---- one request ---- */

struct call {
    struct sl_cc_call cc;
    const struct sl_backend_bck *b;
    const char *key;
    size_t klen;
    const char *query;            /* canonical (sorted, encoded), without '?'; "" none */
    char region[64];
    struct creds cr;
    char url_desc[600];
    char sig[128], up[600], tok[2100];
};

static struct curl_slist *prepare(struct sl_cc_call *cc, CURL *h)
{
    struct call *c = cc->ud;
    struct curl_slist *hl = NULL;
    int put = !strcmp(cc->method, "PUT"), post = !strcmp(cc->method, "POST");
    hl = curl_slist_append(hl, put || (post && cc->mem) ? "x-amz-content-sha256: UNSIGNED-PAYLOAD"
                                                        : "x-amz-content-sha256: " EMPTY_SHA);
    if (post)
        hl = curl_slist_append(hl, "Content-Type: application/xml");
    if (c->cr.token[0]) {
        snprintf(c->tok, sizeof(c->tok), "x-amz-security-token: %s", c->cr.token);
        hl = curl_slist_append(hl, c->tok);
    }
    curl_easy_setopt(h, CURLOPT_AWS_SIGV4, c->sig);
    curl_easy_setopt(h, CURLOPT_USERPWD, c->up);
    if (put)
        curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 256L * 1024);
    return hl;
}

static void header(struct sl_cc_call *cc, const char *k, size_t kl, const char *v, size_t vl)
{
    if (cc->o && kl == 16 && !strncasecmp(k, "x-amz-version-id", 16))
        snprintf(cc->o->version, sizeof(cc->o->version), "%.*s", (int)vl, v);
}

/* "<Code>X</Code>" of an S3 answer body (NULL: none), or "". */
static void xml_code(const char *body, const char *tag, char *out, size_t n)
{
    out[0] = 0;
    if (!body)
        return;
    char open[40], close[40];
    snprintf(open, sizeof(open), "<%s>", tag);
    snprintf(close, sizeof(close), "</%s>", tag);
    const char *s = strstr(body, open), *e;
    if (s && (e = strstr(s, close)))
        snprintf(out, n, "%.*s", (int)(e - s - strlen(open)), s + strlen(open));
}

static void explain(struct sl_cc_call *cc, char *err, size_t errlen)
{
    struct call *c = cc->ud;
    char code[80], msg[300];
    xml_code(cc->body, "Code", code, sizeof(code));
    xml_code(cc->body, "Message", msg, sizeof(msg));
    int auth = cc->status == 401 || cc->status == 403;
    errf(err, errlen, "%s: the remote answered %ld%s%s%s%s%s%s", cc->desc, cc->status, code[0] ? " " : "", code,
         msg[0] ? ": " : "", msg, auth ? "; credentials used: " : "", auth ? c->cr.source : "");
}

static int build_url(struct call *c, struct sbuf *u, char *err, size_t errlen)
{
    const char *ep = c->b->endpoint && *c->b->endpoint ? c->b->endpoint : getenv("S3_ENDPOINT");
    char def[128];
    if (!ep || !*ep) {
        snprintf(def, sizeof(def), "https://s3.%s.amazonaws.com", c->region);
        ep = def;
    }
    if (strncmp(ep, "http://", 7) && strncmp(ep, "https://", 8)) {
        errf(err, errlen, "endpoint \"%s\" is not an http:// or https:// URL (set extra.aws.endpoint)", ep);
        return -1;
    }
    size_t el = strlen(ep);
    while (el && ep[el - 1] == '/')
        el--;
    const char *style = SL_ABI_HAS(c->b, struct sl_backend_bck, addressing) && c->b->addressing ? c->b->addressing
                                                                                                 : "";
    bool dns = strspn(c->b->name, "abcdefghijklmnopqrstuvwxyz0123456789-") == strlen(c->b->name);
    /* virtual-hosted: asked for, or AWS itself (its default) for a name that is a DNS label */
    if (!strcmp(style, "virtual") || (!*style && ep == def && dns)) {
        const char *host = strstr(ep, "://") + 3;
        if (sb_add(u, ep, (size_t)(host - ep)) < 0 || sb_adds(u, c->b->name) < 0 || sb_adds(u, ".") < 0 ||
            sb_add(u, host, el - (size_t)(host - ep)) < 0)
            return -1;
    } else if (sb_add(u, ep, el) < 0 || sb_adds(u, "/") < 0 || sb_enc(u, c->b->name, strlen(c->b->name), 0) < 0) {
        return -1;
    }
    if (c->key && (sb_adds(u, "/") < 0 || sb_enc(u, c->key, c->klen, 1) < 0))
        return -1;
    if (c->query && *c->query && (sb_adds(u, "?") < 0 || sb_adds(u, c->query) < 0))
        return -1;
    return 0;
}

/* Run c: SL_PLUG_OK on 2xx, else the error in err. Free c->cc's body after. */
static int perform(struct call *c, int *status, char *err, size_t errlen)
{
    *status = 0;
    const char *rg = c->b->region && *c->b->region ? c->b->region : getenv("AWS_REGION");
    if (!rg || !*rg)
        rg = getenv("AWS_DEFAULT_REGION");
    snprintf(c->region, sizeof(c->region), "%s", rg && *rg ? rg : "us-east-1");
    if (get_creds(c->b, &c->cr, err, errlen) < 0)
        return SL_PLUG_EINVAL;
    snprintf(c->url_desc, sizeof(c->url_desc), "s3://%s%s%.*s", c->b->name, c->key ? "/" : "",
             c->key ? (int)(c->klen > 400 ? 400 : c->klen) : 0, c->key ? c->key : "");
    struct sbuf url = { 0 };
    if (build_url(c, &url, err, errlen) < 0) {
        sb_free(&url);
        return SL_PLUG_EINVAL;
    }
    snprintf(c->sig, sizeof(c->sig), "aws:amz:%s:s3", c->region);
    snprintf(c->up, sizeof(c->up), "%s:%s", c->cr.ak, c->cr.sk);
    c->cc.url = url.p;
    c->cc.desc = c->url_desc;
    c->cc.peer = "the remote";
    c->cc.peer_url = 1;
    c->cc.whole_ok = 1;
    c->cc.errkeep = ERRBODY;
    c->cc.prepare = prepare;
    c->cc.header = header;
    c->cc.explain = explain;
    c->cc.ud = c;
    int rc = sl_cc_perform(&c->cc, status, err, errlen);
    sb_free(&url);
    return rc;
}

/* a call without anything to read in its answer */
static int perform_free(struct call *c, int *status, char *err, size_t errlen)
{
    int rc = perform(c, status, err, errlen);
    sl_cc_free(&c->cc);
    return rc;
}

/* ---- operations ---- */

static int s3_head_bucket(void *st, const struct sl_backend_bck *b, int *status, char *err, size_t errlen)
{
    (void)st;
    struct call c = { .b = b, .cc = { .method = "HEAD", .n = -1 } };
    return perform_free(&c, status, err, errlen);
}

static int s3_head_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len,
                          struct sl_backend_obj *o, int *status, char *err, size_t errlen)
{
    (void)st;
    sl_cc_obj_init(o);
    struct call c = { .b = b, .key = name, .klen = len, .cc = { .method = "HEAD", .n = -1, .o = o } };
    return perform_free(&c, status, err, errlen);
}

static int s3_get_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len, int64_t off,
                         int64_t n, sl_backend_sink_fn sink, void *ctx, struct sl_backend_obj *o, int *status,
                         char *err, size_t errlen)
{
    (void)st;
    sl_cc_obj_init(o);
    struct call c = { .b = b, .key = name, .klen = len,
                      .cc = { .method = "GET", .off = off, .n = n, .sink = sink, .sink_ctx = ctx, .o = o } };
    return perform_free(&c, status, err, errlen);
}

#define MP_DEFAULT (64LL << 20)   /* multipart above this when the bucket says 0 */
#define MP_MIN (5LL << 20)        /* S3's smallest part (but the last) */
#define MP_MAXPARTS 10000

/* "partNumber=N&uploadId=ID", "uploadId=ID" (sorted, encoded) */
static int mp_query(struct sbuf *q, int part, const char *id)
{
    char pn[40];
    snprintf(pn, sizeof(pn), "partNumber=%d&", part);
    sb_free(q);
    if ((part && sb_adds(q, pn) < 0) || sb_adds(q, "uploadId=") < 0 || sb_enc(q, id, strlen(id), 0) < 0)
        return -1;
    return 0;
}

#define MP_PAR 4                  /* parts in flight at once */

/* The parts of one upload, taken by MP_PAR threads. */
struct mpu {
    pthread_mutex_t mu;
    const struct sl_backend_bck *b;
    const char *name, *id;
    size_t len;
    int fd, nparts, next;
    int64_t size, part;
    char (*etag)[80];           /* per part */
    int rc, status;             /* the first failure */
    char err[1024];
};

static void *mp_worker(void *arg)
{
    struct mpu *u = arg;
    struct sbuf q = { 0 };
    for (;;) {
        pthread_mutex_lock(&u->mu);
        int i = u->rc != SL_PLUG_OK || u->next > u->nparts ? 0 : u->next++;
        pthread_mutex_unlock(&u->mu);
        if (!i)
            break;
        struct sl_backend_obj po;
        memset(&po, 0, sizeof(po));
        po.size = -1;
        int64_t off = (int64_t)(i - 1) * u->part, n = u->size - off < u->part ? u->size - off : u->part;
        char e[1024] = "";
        int st = 0, rc = mp_query(&q, i, u->id) < 0 ? SL_PLUG_ENOMEM : SL_PLUG_OK;
        if (rc == SL_PLUG_OK) {
            struct call pc = { .b = u->b, .key = u->name, .klen = u->len, .query = q.p,
                               .cc = { .method = "PUT", .n = -1, .src = { .fd = u->fd, .base = off, .size = n },
                                       .o = &po } };
            rc = perform_free(&pc, &st, e, sizeof(e));
        }
        if (rc == SL_PLUG_OK && !po.etag[0]) {
            errf(e, sizeof(e), "s3://%s/%.*s: part %d of %d: the remote's answer has no ETag", u->b->name,
                 (int)(u->len > 400 ? 400 : u->len), u->name, i, u->nparts);
            rc = SL_PLUG_EREMOTE;
        }
        pthread_mutex_lock(&u->mu);
        if (rc == SL_PLUG_OK) {
            snprintf(u->etag[i - 1], sizeof(u->etag[0]), "%s", po.etag);
        } else if (u->rc == SL_PLUG_OK) {
            u->rc = rc;
            u->status = st;
            snprintf(u->err, sizeof(u->err), "%s", e);
        }
        pthread_mutex_unlock(&u->mu);
    }
    sb_free(&q);
    return NULL; /* (a part thread's curl handle goes with it) */
}

/* S3 multipart upload of [0, size) of fd: create, the parts (MP_PAR at a
 * time), complete; an abort on any failure. */
static int put_multipart(const struct sl_backend_bck *b, const char *name, size_t len, int fd, int64_t size,
                         int64_t part, struct sl_backend_obj *o, int *status, char *err, size_t errlen)
{
    struct call c = { .b = b, .key = name, .klen = len, .query = "uploads=",
                      .cc = { .method = "POST", .n = -1, .keep = SIZE_MAX } };
    int rc = perform(&c, status, err, errlen);
    char id[1024];
    xml_code(c.cc.body, "UploadId", id, sizeof(id));
    sl_cc_free(&c.cc);
    if (rc != SL_PLUG_OK)
        return rc;
    if (!id[0]) {
        errf(err, errlen, "s3://%s/%.*s: the remote's answer to CreateMultipartUpload has no UploadId", b->name,
             (int)(len > 400 ? 400 : len), name);
        return SL_PLUG_EREMOTE;
    }
    struct mpu u = { .b = b, .name = name, .id = id, .len = len, .fd = fd, .next = 1, .size = size, .part = part,
                     .rc = SL_PLUG_OK };
    u.nparts = (int)((size + part - 1) / part);
    u.etag = calloc((size_t)u.nparts, sizeof(*u.etag));
    if (!u.etag)
        return SL_PLUG_ENOMEM;
    pthread_mutex_init(&u.mu, NULL);
    pthread_t th[MP_PAR];
    int nt = 0;
    while (nt < MP_PAR - 1 && nt < u.nparts - 1 && pthread_create(&th[nt], NULL, mp_worker, &u) == 0)
        nt++;
    mp_worker(&u); /* this thread too */
    for (int i = 0; i < nt; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&u.mu);
    rc = u.rc;
    if (rc != SL_PLUG_OK) {
        *status = u.status;
        errf(err, errlen, "%s", u.err);
    }
    struct sbuf q = { 0 }, done = { 0 };
    if (rc == SL_PLUG_OK && sb_adds(&done, "<CompleteMultipartUpload>") < 0)
        rc = SL_PLUG_ENOMEM;
    for (int i = 1; rc == SL_PLUG_OK && i <= u.nparts; i++) {
        char x[200];
        snprintf(x, sizeof(x), "<Part><PartNumber>%d</PartNumber><ETag>\"%s\"</ETag></Part>", i, u.etag[i - 1]);
        if (sb_adds(&done, x) < 0)
            rc = SL_PLUG_ENOMEM;
    }
    free(u.etag);
    if (rc == SL_PLUG_OK && (sb_adds(&done, "</CompleteMultipartUpload>") < 0 || mp_query(&q, 0, id) < 0))
        rc = SL_PLUG_ENOMEM;
    if (rc == SL_PLUG_OK) {
        struct call cc = { .b = b, .key = name, .klen = len, .query = q.p,
                           .cc = { .method = "POST", .n = -1, .keep = SIZE_MAX, .mem = done.p, .memlen = done.len } };
        rc = perform(&cc, status, err, errlen);
        char code[80], etag[200];
        xml_code(cc.cc.body, "Code", code, sizeof(code));
        xml_code(cc.cc.body, "ETag", etag, sizeof(etag));
        if (rc == SL_PLUG_OK && code[0]) { /* S3 may say 200 and then fail in the body */
            errf(err, errlen, "s3://%s/%.*s: CompleteMultipartUpload failed: %s", b->name,
                 (int)(len > 400 ? 400 : len), name, code);
            rc = SL_PLUG_EREMOTE;
        }
        if (rc == SL_PLUG_OK && o) { /* "&quot;x-N&quot;" or "\"x-N\"" */
            const char *e = etag;
            size_t el = strlen(e);
            if (!strncmp(e, "&quot;", 6) && el >= 12)
                e += 6, el -= 12;
            else if (el >= 2 && e[0] == '"')
                e++, el -= 2;
            snprintf(o->etag, sizeof(o->etag), "%.*s", (int)el, e);
        }
        sl_cc_free(&cc.cc);
    }
    if (rc != SL_PLUG_OK && mp_query(&q, 0, id) == 0) { /* abort: the parts go */
        struct call ac = { .b = b, .key = name, .klen = len, .query = q.p, .cc = { .method = "DELETE", .n = -1 } };
        int st2;
        char e2[256];
        perform_free(&ac, &st2, e2, sizeof(e2));
    }
    sb_free(&q);
    sb_free(&done);
    return rc;
}

static int s3_put_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len, int fd,
                         int64_t size, struct sl_backend_obj *o, int *status, char *err, size_t errlen)
{
    (void)st;
    sl_cc_obj_init(o);
    int64_t mp = SL_ABI_HAS(b, struct sl_backend_bck, multipart_size) ? b->multipart_size : 0;
    if (mp == 0)
        mp = MP_DEFAULT;
    int rc;
    if (mp > 0 && size > mp) {
        int64_t part = mp < MP_MIN ? MP_MIN : mp;
        if ((size + part - 1) / part > MP_MAXPARTS)
            part = (size + MP_MAXPARTS - 1) / MP_MAXPARTS;
        rc = put_multipart(b, name, len, fd, size, part, o, status, err, errlen);
    } else {
        struct call c = { .b = b, .key = name, .klen = len,
                          .cc = { .method = "PUT", .n = -1, .src = { .fd = fd, .size = size }, .o = o } };
        rc = perform_free(&c, status, err, errlen);
    }
    if (o)
        o->size = size;
    return rc;
}

static int s3_delete_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len, int *status,
                            char *err, size_t errlen)
{
    (void)st;
    struct call c = { .b = b, .key = name, .klen = len, .cc = { .method = "DELETE", .n = -1 } };
    return perform_free(&c, status, err, errlen);
}

/* ListObjectsV2 answer: Contents/{Key,Size,ETag,LastModified}, NextContinuationToken */
struct lx {
    char path[256];
    struct sbuf text;
    struct sbuf key;
    struct sl_backend_obj o;
    sl_backend_list_fn cb;
    void *ctx;
    char *next;
    size_t next_len;
    int stop, bad;
};

static void XMLCALL lx_start(void *ud, const XML_Char *name, const XML_Char **atts)
{
    (void)atts;
    struct lx *x = ud;
    size_t l = strlen(x->path), nl = strlen(name);
    if (l + nl + 2 >= sizeof(x->path)) {
        x->bad = 1;
        return;
    }
    x->path[l] = '/';
    memcpy(x->path + l + 1, name, nl + 1);
    x->text.len = 0;
    if (x->text.p)
        x->text.p[0] = 0;
    if (!strcmp(x->path, "/ListBucketResult/Contents")) {
        x->key.len = 0;
        memset(&x->o, 0, sizeof(x->o));
        SL_ABI_SET(&x->o);
        x->o.size = -1;
    }
}

static void XMLCALL lx_chars(void *ud, const XML_Char *s, int len)
{
    struct lx *x = ud;
    if (sb_add(&x->text, s, (size_t)len) < 0)
        x->bad = 1;
}

static void XMLCALL lx_end(void *ud, const XML_Char *name)
{
    struct lx *x = ud;
    const char *t = x->text.p ? x->text.p : "";
    if (!strcmp(x->path, "/ListBucketResult/Contents/Key")) {
        x->key.len = 0;
        sb_add(&x->key, t, x->text.len);
    } else if (!strcmp(x->path, "/ListBucketResult/Contents/Size")) {
        x->o.size = strtoll(t, NULL, 10);
    } else if (!strcmp(x->path, "/ListBucketResult/Contents/ETag")) {
        size_t l = x->text.len;
        const char *v = t;
        if (l >= 2 && v[0] == '"' && v[l - 1] == '"')
            v++, l -= 2;
        snprintf(x->o.etag, sizeof(x->o.etag), "%.*s", (int)l, v);
    } else if (!strcmp(x->path, "/ListBucketResult/Contents/LastModified")) {
        time_t tt = curl_getdate(t, NULL);
        if (tt > 0)
            x->o.mtime_ns = (int64_t)tt * 1000000000LL;
    } else if (!strcmp(x->path, "/ListBucketResult/Contents")) {
        if (!x->stop && x->key.p && x->cb(x->ctx, x->key.p, x->key.len, &x->o))
            x->stop = 1;
    } else if (!strcmp(x->path, "/ListBucketResult/NextContinuationToken")) {
        snprintf(x->next, x->next_len, "%s", t);
    }
    x->text.len = 0;
    if (x->text.p)
        x->text.p[0] = 0;
    char *sl = strrchr(x->path, '/');
    if (sl)
        *sl = 0;
    (void)name;
}

static int s3_list_page(void *st, const struct sl_backend_bck *b, const char *prefix, const char *token, int max,
                        sl_backend_list_fn cb, void *ctx, char *next_token, size_t next_len, int *status, char *err,
                        size_t errlen)
{
    (void)st;
    if (next_len)
        next_token[0] = 0;
    /* the query sorted by name, every value RFC 3986-encoded (libcurl signs it as written) */
    struct sbuf q = { 0 };
    char mk[32];
    snprintf(mk, sizeof(mk), "%d", max > 0 && max <= 1000 ? max : 1000);
    if (token && *token) {
        sb_adds(&q, "continuation-token=");
        sb_enc(&q, token, strlen(token), 0);
        sb_adds(&q, "&");
    }
    sb_adds(&q, "list-type=2&max-keys=");
    sb_adds(&q, mk);
    if (prefix && *prefix) {
        sb_adds(&q, "&prefix=");
        sb_enc(&q, prefix, strlen(prefix), 0);
    }
    struct call c = { .b = b, .query = q.p ? q.p : "", .cc = { .method = "GET", .n = -1, .keep = SIZE_MAX } };
    int rc = perform(&c, status, err, errlen);
    if (rc == SL_PLUG_OK) {
        struct lx x = { .cb = cb, .ctx = ctx, .next = next_token, .next_len = next_len };
        XML_Parser p = XML_ParserCreate(NULL);
        XML_SetUserData(p, &x);
        XML_SetElementHandler(p, lx_start, lx_end);
        XML_SetCharacterDataHandler(p, lx_chars);
        if (XML_Parse(p, c.cc.body ? c.cc.body : "", (int)c.cc.blen, 1) != XML_STATUS_OK || x.bad) {
            errf(err, errlen, "s3://%s: the remote's list answer is not the XML of ListObjectsV2 (%s)", b->name,
                 XML_ErrorString(XML_GetErrorCode(p)));
            rc = SL_PLUG_EIO;
        }
        XML_ParserFree(p);
        sb_free(&x.text);
        sb_free(&x.key);
        if (x.stop && next_len)
            next_token[0] = 0;
    }
    sl_cc_free(&c.cc);
    sb_free(&q);
    return rc;
}

SL_CC_BACKEND_DEFINE(s3, "aws", "s3", "1.0.0", "S3 and S3-compatible remote buckets (provider aws), SigV4 over libcurl",
                     0x074b00, "it has no SigV4 signing (7.75 or newer is needed)");
