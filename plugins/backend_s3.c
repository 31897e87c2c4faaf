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
#include <curl/curl.h>
#include <expat.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const struct sl_host_api *H;

#define EMPTY_SHA "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define TRIES 3
#define ERRBODY 4096

/* ---- small strings ---- */

struct sbuf {
    char *p;
    size_t len, cap;
};

static int sb_add(struct sbuf *b, const char *s, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t nc = b->cap ? b->cap * 2 : 256;
        while (nc < b->len + n + 1)
            nc *= 2;
        char *np = H->realloc(b->p, nc);
        if (!np)
            return -1;
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
    return 0;
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
    H->free(b->p);
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
    const struct sl_backend_bck *b;
    const char *method;
    const char *key;
    size_t klen;
    const char *query;            /* canonical (sorted, encoded), without '?'; "" none */
    int64_t off, n;               /* GET range; n < 0 to the end, off 0 and n < 0: no Range */
    struct sl_cc_src src;         /* PUT body: [base, base + size) of fd */
    const char *mem;              /* POST body (memlen bytes; NULL: none) */
    size_t memlen;
    sl_backend_sink_fn sink;
    void *sink_ctx;
    struct sbuf body;             /* a non-2xx answer's body, or a list answer */
    int collect;                  /* keep a 2xx body in .body (list) */
    long status;
    int sunk;                     /* bytes went to sink: no retry */
    int sink_failed;
    struct sl_backend_obj *o;
    char region[64];
    struct creds cr;
    char url_desc[600];
};


static size_t hdr_cb(char *buf, size_t size, size_t nitems, void *ud)
{
    struct call *c = ud;
    const char *k, *v;
    size_t kl, vl;
    if (sl_cc_header(buf, size * nitems, &c->status, c->o, &k, &kl, &v, &vl) == 0 && c->o && kl == 16 &&
        !strncasecmp(k, "x-amz-version-id", 16))
        snprintf(c->o->version, sizeof(c->o->version), "%.*s", (int)vl, v);
    return size * nitems;
}

static size_t wr_cb(char *data, size_t size, size_t nmemb, void *ud)
{
    struct call *c = ud;
    size_t n = size * nmemb;
    if (c->status < 200 || c->status >= 300 || c->collect) {
        if (c->collect && c->status >= 200 && c->status < 300)
            return sb_add(&c->body, data, n) < 0 ? 0 : n;
        if (c->body.len < ERRBODY)
            sb_add(&c->body, data, n < ERRBODY - c->body.len ? n : ERRBODY - c->body.len);
        return n;
    }
    if (!c->sink)
        return n;
    c->sunk = 1;
    if (c->sink(c->sink_ctx, data, n)) {
        c->sink_failed = 1;
        return 0;
    }
    return n;
}

/* "<Code>X</Code>" of an S3 error body, or "". */
static void xml_code(const struct sbuf *b, const char *tag, char *out, size_t n)
{
    out[0] = 0;
    if (!b->p)
        return;
    char open[40], close[40];
    snprintf(open, sizeof(open), "<%s>", tag);
    snprintf(close, sizeof(close), "</%s>", tag);
    const char *s = strstr(b->p, open), *e;
    if (s && (e = strstr(s, close)))
        snprintf(out, n, "%.*s", (int)(e - s - strlen(open)), s + strlen(open));
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

/* Run c: SL_PLUG_OK on 2xx, else the error in err. */
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
    CURL *h = sl_cc_handle(); /* this thread's, its connections kept open */
    if (!h) {
        sb_free(&url);
        errf(err, errlen, "%s: curl_easy_init failed", c->url_desc);
        return SL_PLUG_ENOMEM;
    }
    char sig[128], up[600], tok[2100], range[80];
    snprintf(sig, sizeof(sig), "aws:amz:%s:s3", c->region);
    snprintf(up, sizeof(up), "%s:%s", c->cr.ak, c->cr.sk);
    int rc = SL_PLUG_EIO;
    for (int attempt = 0; attempt < TRIES; attempt++) {
        struct curl_slist *hl = NULL;
        int put = !strcmp(c->method, "PUT"), post = !strcmp(c->method, "POST");
        hl = curl_slist_append(hl, put || (post && c->mem) ? "x-amz-content-sha256: UNSIGNED-PAYLOAD"
                                                           : "x-amz-content-sha256: " EMPTY_SHA);
        if (post)
            hl = curl_slist_append(hl, "Content-Type: application/xml");
        if (c->cr.token[0]) {
            snprintf(tok, sizeof(tok), "x-amz-security-token: %s", c->cr.token);
            hl = curl_slist_append(hl, tok);
        }
        curl_easy_reset(h);
        curl_easy_setopt(h, CURLOPT_URL, url.p);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
        curl_easy_setopt(h, CURLOPT_AWS_SIGV4, sig);
        curl_easy_setopt(h, CURLOPT_USERPWD, up);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, hdr_cb);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, wr_cb);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
        curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 256L * 1024);
        if (!strcmp(c->method, "HEAD")) {
            curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
        } else if (put) {
            c->src.pos = 0;
            curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
            curl_easy_setopt(h, CURLOPT_READFUNCTION, sl_cc_read);
            curl_easy_setopt(h, CURLOPT_READDATA, &c->src);
            curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, sl_cc_seek);
            curl_easy_setopt(h, CURLOPT_SEEKDATA, &c->src);
            curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)c->src.size);
            curl_easy_setopt(h, CURLOPT_UPLOAD_BUFFERSIZE, 256L * 1024);
        } else if (post) {
            curl_easy_setopt(h, CURLOPT_POST, 1L);
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->mem ? c->mem : "");
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(c->mem ? c->memlen : 0));
        } else if (strcmp(c->method, "GET")) {
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, c->method);
        }
        if (!strcmp(c->method, "GET") && (c->off > 0 || c->n >= 0)) {
            if (c->n >= 0)
                snprintf(range, sizeof(range), "%lld-%lld", (long long)c->off, (long long)(c->off + c->n - 1));
            else
                snprintf(range, sizeof(range), "%lld-", (long long)c->off);
            curl_easy_setopt(h, CURLOPT_RANGE, range); /* not signed: S3 does not require it */
        }
        c->status = 0;
        sb_free(&c->body);
        if (c->o) { /* nothing from a failed attempt carries over */
            int64_t keep = strcmp(c->method, "PUT") ? -1 : c->o->size;
            memset((char *)c->o + offsetof(struct sl_backend_obj, size), 0,
                   sizeof(*c->o) - offsetof(struct sl_backend_obj, size));
            c->o->size = keep;
        }
        CURLcode cc = curl_easy_perform(h);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
        curl_slist_free_all(hl);
        *status = (int)c->status;
        if (c->sink_failed) {
            errf(err, errlen, "%s: the transfer was stopped by the receiving side", c->url_desc);
            rc = SL_PLUG_EIO;
            break;
        }
        if (cc == CURLE_OK && c->status >= 200 && c->status < 300) {
            rc = SL_PLUG_OK;
            break;
        }
        if (cc != CURLE_OK) {
            *status = 0;
            errf(err, errlen, "%s: the remote (%s) could not be reached or the transfer broke: %s", c->url_desc,
                 url.p, curl_easy_strerror(cc));
            rc = SL_PLUG_EIO;
        } else {
            char code[80], msg[300];
            xml_code(&c->body, "Code", code, sizeof(code));
            xml_code(&c->body, "Message", msg, sizeof(msg));
            int auth = c->status == 401 || c->status == 403;
            errf(err, errlen, "%s: the remote answered %ld%s%s%s%s%s%s", c->url_desc, c->status, code[0] ? " " : "",
                 code, msg[0] ? ": " : "", msg, auth ? "; credentials used: " : "", auth ? c->cr.source : "");
            rc = SL_PLUG_EREMOTE;
        }
        if (!sl_cc_again(cc, c->status, c->sunk, attempt, TRIES)) /* (down, or bytes handed on: no retry) */
            break;
    }
    sb_free(&url);
    return rc;
}

/* ---- operations ---- */

/* the header stays as the host set it; the rest starts unknown */
static void obj_init(struct sl_backend_obj *o)
{
    if (!o)
        return;
    memset((char *)o + offsetof(struct sl_backend_obj, size), 0, sizeof(*o) - offsetof(struct sl_backend_obj, size));
    o->size = -1;
}

static int s3_head_bucket(void *st, const struct sl_backend_bck *b, int *status, char *err, size_t errlen)
{
    (void)st;
    struct call c = { .b = b, .method = "HEAD", .n = -1 };
    int rc = perform(&c, status, err, errlen);
    sb_free(&c.body);
    return rc;
}

static int s3_head_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len,
                          struct sl_backend_obj *o, int *status, char *err, size_t errlen)
{
    (void)st;
    obj_init(o);
    struct call c = { .b = b, .method = "HEAD", .key = name, .klen = len, .n = -1, .o = o };
    int rc = perform(&c, status, err, errlen);
    sb_free(&c.body);
    return rc;
}

static int s3_get_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len, int64_t off,
                         int64_t n, sl_backend_sink_fn sink, void *ctx, struct sl_backend_obj *o, int *status,
                         char *err, size_t errlen)
{
    (void)st;
    obj_init(o);
    struct call c = { .b = b, .method = "GET", .key = name, .klen = len, .off = off, .n = n,
                      .sink = sink, .sink_ctx = ctx, .o = o };
    int rc = perform(&c, status, err, errlen);
    sb_free(&c.body);
    return rc;
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
            struct call pc = { .b = u->b, .method = "PUT", .key = u->name, .klen = u->len, .n = -1,
                               .src = { .fd = u->fd, .base = off, .size = n }, .o = &po, .query = q.p };
            rc = perform(&pc, &st, e, sizeof(e));
            sb_free(&pc.body);
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
    struct call c = { .b = b, .method = "POST", .key = name, .klen = len, .n = -1, .collect = 1,
                      .query = "uploads=" };
    int rc = perform(&c, status, err, errlen);
    char id[1024];
    xml_code(&c.body, "UploadId", id, sizeof(id));
    sb_free(&c.body);
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
        struct call cc = { .b = b, .method = "POST", .key = name, .klen = len, .n = -1, .collect = 1,
                           .query = q.p, .mem = done.p, .memlen = done.len };
        rc = perform(&cc, status, err, errlen);
        char code[80], etag[200];
        xml_code(&cc.body, "Code", code, sizeof(code));
        xml_code(&cc.body, "ETag", etag, sizeof(etag));
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
        sb_free(&cc.body);
    }
    if (rc != SL_PLUG_OK && mp_query(&q, 0, id) == 0) { /* abort: the parts go */
        struct call ac = { .b = b, .method = "DELETE", .key = name, .klen = len, .n = -1, .query = q.p };
        int st2;
        char e2[256];
        perform(&ac, &st2, e2, sizeof(e2));
        sb_free(&ac.body);
    }
    sb_free(&q);
    sb_free(&done);
    return rc;
}

static int s3_put_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len, int fd,
                         int64_t size, struct sl_backend_obj *o, int *status, char *err, size_t errlen)
{
    (void)st;
    obj_init(o);
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
        struct call c = { .b = b, .method = "PUT", .key = name, .klen = len, .n = -1, .src = { .fd = fd, .size = size },
                          .o = o };
        rc = perform(&c, status, err, errlen);
        sb_free(&c.body);
    }
    if (o)
        o->size = size;
    return rc;
}

static int s3_delete_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len, int *status,
                            char *err, size_t errlen)
{
    (void)st;
    struct call c = { .b = b, .method = "DELETE", .key = name, .klen = len, .n = -1 };
    int rc = perform(&c, status, err, errlen);
    sb_free(&c.body);
    return rc;
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
    struct call c = { .b = b, .method = "GET", .n = -1, .collect = 1, .query = q.p ? q.p : "" };
    int rc = perform(&c, status, err, errlen);
    if (rc == SL_PLUG_OK) {
        struct lx x = { .cb = cb, .ctx = ctx, .next = next_token, .next_len = next_len };
        XML_Parser p = XML_ParserCreate(NULL);
        XML_SetUserData(p, &x);
        XML_SetElementHandler(p, lx_start, lx_end);
        XML_SetCharacterDataHandler(p, lx_chars);
        if (XML_Parse(p, c.body.p ? c.body.p : "", (int)c.body.len, 1) != XML_STATUS_OK || x.bad) {
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
    sb_free(&c.body);
    sb_free(&q);
    return rc;
}

static int s3_init(const struct sl_host_api *host, void **state, char *err, size_t errlen)
{
    (void)host;
    *state = NULL;
    return sl_cc_init(0x074b00, "it has no SigV4 signing (7.75 or newer is needed)", err, errlen);
}

static void s3_fini(void *state)
{
    (void)state;
    sl_cc_fini();
}

static const struct sl_backend_ops ops = {
    SL_ABI_INIT(struct sl_backend_ops),
    .provider = "aws",
    .head_bucket = s3_head_bucket,
    .head_object = s3_head_object,
    .get_object = s3_get_object,
    .put_object = s3_put_object,
    .delete_object = s3_delete_object,
    .list_page = s3_list_page,
};

static const struct sl_plugin desc = {
    SL_ABI_INIT(struct sl_plugin),
    .kind = SL_PLUGIN_BACKEND,
    .name = "s3",
    .version = "1.0.0",
    .description = "S3 and S3-compatible remote buckets (provider aws), SigV4 over libcurl",
    .init = s3_init,
    .fini = s3_fini,
    .backend = &ops,
};

SL_PLUGIN_EXPORT const struct sl_plugin *sl_plugin_entry(const struct sl_host_api *host, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    H = host;
    return &desc;
}
