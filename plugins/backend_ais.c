/* SPDX-License-Identifier: MIT
 * backend_ais.c: the "ais" backend plugin: a bucket of a remote
 * AIStore-compatible cluster (AIStore, or another Shale) behind a local one
 * (backend_bck ais://@ALIAS/NAME), over the remote's native API with
 * libcurl. The host gives the remote gateway's URL as the endpoint (the
 * attached alias's, GET /v1/cluster?what=remote).
 *
 *   HEAD bucket   HEAD /v1/buckets/NAME?provider=ais
 *   HEAD object   HEAD /v1/objects/NAME/KEY?provider=ais (redirects followed)
 *   GET           GET  /v1/objects/NAME/KEY?provider=ais, with a Range
 *   PUT, DELETE   the same path (the body sent again after a redirect)
 *   list          GET  /v1/buckets/NAME?provider=ais {"action": "list", ...}
 *
 * What identifies a version of an object (the host's ETag) is the remote's
 * checksum value (Ais-Checksum-Value), else its Ais-Version.
 *
 * 5xx and 429 answers are retried (3 tries, 0.2 s then 0.4 s apart) when
 * nothing of the body was handed on yet; a remote that cannot be reached
 * fails at once (connect timeout 5 s).
 */
#include "shale_plugin.h"
#include "common_curl.h"

#include <stddef.h>
#include <curl/curl.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define TRIES 3
#define ERRBODY 2048
#define errf sl_cc_errf

struct call {
    const struct sl_backend_bck *b;
    const char *method;           /* HEAD GET PUT DELETE; "LIST": a GET with a JSON body */
    const char *key;              /* NULL: the bucket */
    size_t klen;
    int64_t off, n;               /* GET range; off 0 and n < 0: no Range */
    struct sl_cc_src src;         /* PUT body: [0, size) of fd */
    const char *body;             /* LIST: the request body */
    sl_backend_sink_fn sink;
    void *sink_ctx;
    struct sl_backend_obj *o;
    long status;
    int sunk, sink_failed;
    char *buf;                    /* an error's or a list's answer */
    size_t blen;
    char desc[600];               /* "ais://@REMOTE/BUCKET/KEY" for messages */
    char version[80], cksum[80];
};

static int add_buf(struct call *c, const char *d, size_t n, size_t max)
{
    if (c->blen + n > max)
        n = c->blen < max ? max - c->blen : 0;
    char *p = realloc(c->buf, c->blen + n + 1);
    if (!p)
        return -1;
    c->buf = p;
    memcpy(c->buf + c->blen, d, n);
    c->blen += n;
    c->buf[c->blen] = 0;
    return 0;
}

/* base/v1/objects/NAME/KEY?provider=ais (KEY %-encoded but '/') */
static char *make_url(const char *base, const struct call *c)
{
    size_t bl = strlen(base), nl = strlen(c->b->name);
    char *u = malloc(bl + nl + 3 * (c->key ? c->klen : 0) + 64);
    if (!u)
        return NULL;
    size_t p = (size_t)sprintf(u, "%s/v1/%s/%s", base, c->key ? "objects" : "buckets", c->b->name);
    static const char hex[] = "0123456789ABCDEF";
    if (c->key) {
        u[p++] = '/';
        for (size_t i = 0; i < c->klen; i++) {
            unsigned char ch = (unsigned char)c->key[i];
            if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' ||
                ch == '_' || ch == '.' || ch == '~' || ch == '/') {
                u[p++] = (char)ch;
            } else {
                u[p++] = '%';
                u[p++] = hex[ch >> 4];
                u[p++] = hex[ch & 15];
            }
        }
    }
    strcpy(u + p, "?provider=ais");
    return u;
}

static size_t hdr_cb(char *buf, size_t size, size_t nitems, void *ud)
{
    struct call *c = ud;
    const char *k, *v;
    size_t kl, vl;
    if (sl_cc_header(buf, size * nitems, &c->status, c->o, &k, &kl, &v, &vl) == 0 &&
        !(c->status >= 300 && c->status < 400)) { /* (a redirect's headers are not the object's) */
        if (kl == 11 && !strncasecmp(k, "Ais-Version", 11))
            snprintf(c->version, sizeof(c->version), "%.*s", (int)vl, v);
        else if (kl == 18 && !strncasecmp(k, "Ais-Checksum-Value", 18))
            snprintf(c->cksum, sizeof(c->cksum), "%.*s", (int)vl, v);
    }
    return size * nitems;
}

static size_t wr_cb(char *data, size_t size, size_t nmemb, void *ud)
{
    struct call *c = ud;
    size_t n = size * nmemb;
    if (c->status < 200 || c->status >= 300 || !c->sink) /* an error's (or a list's) body */
        return add_buf(c, data, n, c->sink ? ERRBODY : 64 << 20) < 0 ? 0 : n;
    if (c->off > 0 && c->status == 200) { /* a range asked, the whole object came */
        c->sink_failed = 2;
        return 0;
    }
    c->sunk = 1;
    if (c->sink(c->sink_ctx, data, n)) {
        c->sink_failed = 1;
        return 0;
    }
    return n;
}

/* the remote's "message" of an error answer, else its start */
static void err_msg(const struct call *c, char *out, size_t n)
{
    out[0] = 0;
    json_error_t je;
    json_t *j = c->buf ? json_loads(c->buf, 0, &je) : NULL;
    const char *m = json_string_value(json_object_get(j, "message"));
    snprintf(out, n, "%.300s", m ? m : c->buf ? c->buf : "");
    json_decref(j);
}

static int perform(struct call *c, int *status, char *err, size_t errlen)
{
    *status = 0;
    const char *base = c->b->endpoint;
    snprintf(c->desc, sizeof(c->desc), "remote cluster %s: ais://%s%s%.*s", base ? base : "", c->b->name,
             c->key ? "/" : "", c->key ? (int)(c->klen > 400 ? 400 : c->klen) : 0, c->key ? c->key : "");
    if (!base || (strncmp(base, "http://", 7) && strncmp(base, "https://", 8))) {
        errf(err, errlen, "%s: no URL for the remote cluster (attach it: shale cluster remote-attach ALIAS=URL)",
             c->desc);
        return SL_PLUG_EINVAL;
    }
    char *url = make_url(base, c);
    CURL *h = sl_cc_handle();
    if (!url || !h) {
        free(url);
        errf(err, errlen, "%s: out of memory", c->desc);
        return SL_PLUG_ENOMEM;
    }
    char range[80];
    int rc = SL_PLUG_EIO;
    for (int attempt = 0; attempt < TRIES; attempt++) {
        struct curl_slist *hl = NULL;
        curl_easy_reset(h);
        curl_easy_setopt(h, CURLOPT_URL, url);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L); /* gateway -> target */
        curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, hdr_cb);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, wr_cb);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
        curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 256L * 1024);
        if (!strcmp(c->method, "HEAD")) {
            curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
        } else if (!strcmp(c->method, "PUT")) {
            c->src.pos = 0;
            curl_easy_setopt(h, CURLOPT_UPLOAD, 1L);
            curl_easy_setopt(h, CURLOPT_READFUNCTION, sl_cc_read);
            curl_easy_setopt(h, CURLOPT_READDATA, &c->src);
            curl_easy_setopt(h, CURLOPT_SEEKFUNCTION, sl_cc_seek); /* (a redirect sends the body again) */
            curl_easy_setopt(h, CURLOPT_SEEKDATA, &c->src);
            curl_easy_setopt(h, CURLOPT_INFILESIZE_LARGE, (curl_off_t)c->src.size);
            hl = curl_slist_append(hl, "Expect:"); /* (no 100-continue round trip) */
        } else if (!strcmp(c->method, "LIST")) {
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, "GET");
            curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->body);
            curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)strlen(c->body));
            hl = curl_slist_append(hl, "Content-Type: application/json");
        } else if (strcmp(c->method, "GET")) {
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, c->method);
        }
        if (hl)
            curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
        if (!strcmp(c->method, "GET") && (c->off > 0 || c->n >= 0)) {
            if (c->n >= 0)
                snprintf(range, sizeof(range), "%lld-%lld", (long long)c->off, (long long)(c->off + c->n - 1));
            else
                snprintf(range, sizeof(range), "%lld-", (long long)c->off);
            curl_easy_setopt(h, CURLOPT_RANGE, range);
        }
        c->status = 0;
        c->version[0] = c->cksum[0] = 0;
        free(c->buf);
        c->buf = NULL;
        c->blen = 0;
        if (c->o) {
            memset((char *)c->o + offsetof(struct sl_backend_obj, size), 0,
                   sizeof(*c->o) - offsetof(struct sl_backend_obj, size));
            c->o->size = -1;
        }
        CURLcode cc = curl_easy_perform(h);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
        curl_slist_free_all(hl);
        *status = (int)c->status;
        if (c->o) {
            snprintf(c->o->etag, sizeof(c->o->etag), "%s", c->cksum[0] ? c->cksum : c->version);
            snprintf(c->o->version, sizeof(c->o->version), "%s", c->version);
        }
        if (c->sink_failed) {
            errf(err, errlen, c->sink_failed == 2 ? "%s: the remote answered a range request with the whole object"
                 : "%s: the transfer was stopped by the receiving side", c->desc);
            rc = SL_PLUG_EIO;
            break;
        }
        if (cc == CURLE_OK && c->status >= 200 && c->status < 300) {
            rc = SL_PLUG_OK;
            break;
        }
        if (cc != CURLE_OK) {
            *status = 0;
            errf(err, errlen, "%s: the remote cluster could not be reached or the transfer broke: %s", c->desc,
                 curl_easy_strerror(cc));
            rc = SL_PLUG_EIO;
        } else {
            char m[320];
            err_msg(c, m, sizeof(m));
            errf(err, errlen, "%s: the remote cluster answered %ld%s%s", c->desc, c->status, m[0] ? ": " : "", m);
            rc = SL_PLUG_EREMOTE;
        }
        if (!sl_cc_again(cc, c->status, c->sunk, attempt, TRIES))
            break;
    }
    free(url);
    return rc;
}

static int done(struct call *c, int rc)
{
    free(c->buf);
    return rc;
}

static int ais_head_bucket(void *st, const struct sl_backend_bck *b, int *status, char *err, size_t errlen)
{
    (void)st;
    struct call c = { .b = b, .method = "HEAD", .n = -1 };
    return done(&c, perform(&c, status, err, errlen));
}

static int ais_head_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len,
                           struct sl_backend_obj *o, int *status, char *err, size_t errlen)
{
    (void)st;
    struct call c = { .b = b, .method = "HEAD", .key = name, .klen = len, .n = -1, .o = o };
    return done(&c, perform(&c, status, err, errlen));
}

static int ais_get_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len, int64_t off,
                          int64_t n, sl_backend_sink_fn sink, void *ctx, struct sl_backend_obj *o, int *status,
                          char *err, size_t errlen)
{
    (void)st;
    struct call c = { .b = b, .method = "GET", .key = name, .klen = len, .off = off, .n = n, .sink = sink,
                      .sink_ctx = ctx, .o = o };
    return done(&c, perform(&c, status, err, errlen));
}

static int ais_put_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len, int fd,
                          int64_t size, struct sl_backend_obj *o, int *status, char *err, size_t errlen)
{
    (void)st;
    struct call c = { .b = b, .method = "PUT", .key = name, .klen = len, .n = -1, .src = { .fd = fd, .size = size },
                      .o = o };
    int rc = done(&c, perform(&c, status, err, errlen));
    if (o)
        o->size = size;
    return rc;
}

static int ais_delete_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len, int *status,
                             char *err, size_t errlen)
{
    (void)st;
    struct call c = { .b = b, .method = "DELETE", .key = name, .klen = len, .n = -1 };
    return done(&c, perform(&c, status, err, errlen));
}

static int ais_list_page(void *st, const struct sl_backend_bck *b, const char *prefix, const char *token, int max,
                         sl_backend_list_fn cb, void *ctx, char *next_token, size_t next_len, int *status, char *err,
                         size_t errlen)
{
    (void)st;
    if (next_len)
        next_token[0] = 0;
    json_t *v = json_pack("{s:s,s:s,s:i,s:s}", "prefix", prefix ? prefix : "", "continuation_token",
                          token ? token : "", "pagesize", max, "props", "name,size,version,checksum");
    json_t *msg = json_pack("{s:s,s:o}", "action", "list", "value", v);
    char *body = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (!body)
        return SL_PLUG_ENOMEM;
    struct call c = { .b = b, .method = "LIST", .n = -1, .body = body };
    int rc = perform(&c, status, err, errlen);
    free(body);
    if (rc != SL_PLUG_OK)
        return done(&c, rc);
    json_error_t je;
    json_t *j = c.buf ? json_loads(c.buf, 0, &je) : NULL;
    if (!json_is_object(j)) {
        errf(err, errlen, "ais://%s: the remote cluster's listing is not JSON", b->name);
        json_decref(j);
        return done(&c, SL_PLUG_EREMOTE);
    }
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(j, "entries"), i, e) {
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (!nm)
            continue;
        struct sl_backend_obj o;
        memset(&o, 0, sizeof(o));
        o.size = json_integer_value(json_object_get(e, "size"));
        const char *ver = json_string_value(json_object_get(e, "version"));
        const char *ck = json_string_value(json_object_get(e, "checksum"));
        snprintf(o.version, sizeof(o.version), "%s", ver ? ver : "");
        snprintf(o.etag, sizeof(o.etag), "%s", ck && *ck ? ck : ver ? ver : "");
        if (cb(ctx, nm, strlen(nm), &o))
            break;
    }
    const char *nt = json_string_value(json_object_get(j, "continuation_token"));
    if (nt && next_len)
        snprintf(next_token, next_len, "%s", nt);
    json_decref(j);
    return done(&c, SL_PLUG_OK);
}

static int ais_init(const struct sl_host_api *host, void **state, char *err, size_t errlen)
{
    (void)host;
    *state = NULL;
    return sl_cc_init(0, NULL, err, errlen);
}

static void ais_fini(void *state)
{
    (void)state;
    sl_cc_fini();
}

static const struct sl_backend_ops ops = {
    SL_ABI_INIT(struct sl_backend_ops),
    .provider = "ais",
    .head_bucket = ais_head_bucket,
    .head_object = ais_head_object,
    .get_object = ais_get_object,
    .put_object = ais_put_object,
    .delete_object = ais_delete_object,
    .list_page = ais_list_page,
};

static const struct sl_plugin desc = {
    SL_ABI_INIT(struct sl_plugin),
    .kind = SL_PLUGIN_BACKEND,
    .name = "ais",
    .version = "1.0.0",
    .description = "buckets of attached remote AIStore-compatible clusters (ais://@ALIAS/NAME), native API over "
                   "libcurl",
    .init = ais_init,
    .fini = ais_fini,
    .backend = &ops,
};

SL_PLUGIN_EXPORT const struct sl_plugin *sl_plugin_entry(const struct sl_host_api *host, char *err, size_t errlen)
{
    (void)host, (void)err, (void)errlen;
    return &desc;
}
