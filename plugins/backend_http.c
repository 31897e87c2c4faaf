/* SPDX-License-Identifier: MIT
 * backend_http.c: the "ht" backend plugin (ht:// buckets, AIStore's HTTP
 * backend): any HTTP(S) server as a read-only remote, over libcurl.
 *
 * A bucket's extra.http.original_url is the base URL (http://host/dir/);
 * object NAME is the file at base + NAME (each path segment URL-encoded).
 * HEAD of the bucket is a HEAD of the base URL; HEAD and GET (with a Range)
 * of an object are plain HTTP; PUT, DELETE and listing are not possible on
 * a web server and answer SL_PLUG_EUNSUPP with a message that says so.
 * A server that ignores Range answers 200 with the whole file: its
 * Content-Length is then the object's size.
 *
 * 5xx and 429 answers are retried (3 tries, 0.2 s then 0.4 s apart) when
 * nothing of the body was handed on yet; a server that cannot be reached
 * fails at once (connect timeout 5 s).
 */
#include "shale_plugin.h"
#include "common_curl.h"

#include <stddef.h>
#include <curl/curl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TRIES 3

#define errf sl_cc_errf

struct call {
    const struct sl_backend_bck *b;
    const char *method;           /* "HEAD", "GET" */
    const char *key;              /* NULL: the bucket's base URL */
    size_t klen;
    int64_t off, n;               /* GET range; off 0 and n < 0: no Range */
    sl_backend_sink_fn sink;
    void *sink_ctx;
    struct sl_backend_obj *o;
    long status;
    int sunk, sink_failed;
    char *url;
    char desc[600];               /* "ht://BUCKET/KEY" for messages */
};

/* base + key, every byte of key but '/' and the unreserved ones %-encoded */
static char *make_url(const char *base, const char *key, size_t klen)
{
    size_t bl = strlen(base);
    char *u = malloc(bl + 1 + 3 * klen + 1);
    if (!u)
        return NULL;
    memcpy(u, base, bl);
    size_t p = bl;
    if (key && (!bl || base[bl - 1] != '/'))
        u[p++] = '/';
    static const char hex[] = "0123456789ABCDEF";
    for (size_t i = 0; key && i < klen; i++) {
        unsigned char c = (unsigned char)key[i];
        if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
            c == '.' || c == '~' || c == '/') {
            u[p++] = (char)c;
        } else {
            u[p++] = '%';
            u[p++] = hex[c >> 4];
            u[p++] = hex[c & 15];
        }
    }
    u[p] = 0;
    return u;
}

static size_t hdr_cb(char *buf, size_t size, size_t nitems, void *ud)
{
    struct call *c = ud;
    const char *k, *v;
    size_t kl, vl;
    sl_cc_header(buf, size * nitems, &c->status, c->o, &k, &kl, &v, &vl);
    return size * nitems;
}

static size_t wr_cb(char *data, size_t size, size_t nmemb, void *ud)
{
    struct call *c = ud;
    size_t n = size * nmemb;
    if (c->status < 200 || c->status >= 300 || !c->sink)
        return n;
    if (c->off > 0 && c->status == 200) { /* a range asked, the whole file came: not what was asked */
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

static int perform(struct call *c, int *status, char *err, size_t errlen)
{
    *status = 0;
    const char *base = c->b->endpoint;
    snprintf(c->desc, sizeof(c->desc), "ht://%s%s%.*s", c->b->name, c->key ? "/" : "",
             c->key ? (int)(c->klen > 400 ? 400 : c->klen) : 0, c->key ? c->key : "");
    if (!base || (strncmp(base, "http://", 7) && strncmp(base, "https://", 8))) {
        errf(err, errlen, "%s: the bucket has no extra.http.original_url (the http:// or https:// URL its objects "
             "are under); set it", c->desc);
        return SL_PLUG_EINVAL;
    }
    c->url = make_url(base, c->key, c->key ? c->klen : 0);
    if (!c->url)
        return SL_PLUG_ENOMEM;
    CURL *h = sl_cc_handle();
    if (!h) {
        errf(err, errlen, "%s: curl_easy_init failed", c->desc);
        return SL_PLUG_ENOMEM;
    }
    char range[80];
    int rc = SL_PLUG_EIO;
    for (int attempt = 0; attempt < TRIES; attempt++) {
        curl_easy_reset(h);
        curl_easy_setopt(h, CURLOPT_URL, c->url);
        curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
        curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, hdr_cb);
        curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
        curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, wr_cb);
        curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
        curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 256L * 1024);
        if (!strcmp(c->method, "HEAD"))
            curl_easy_setopt(h, CURLOPT_NOBODY, 1L);
        if (!strcmp(c->method, "GET") && (c->off > 0 || c->n >= 0)) {
            if (c->n >= 0)
                snprintf(range, sizeof(range), "%lld-%lld", (long long)c->off, (long long)(c->off + c->n - 1));
            else
                snprintf(range, sizeof(range), "%lld-", (long long)c->off);
            curl_easy_setopt(h, CURLOPT_RANGE, range);
        }
        c->status = 0;
        if (c->o) {
            memset((char *)c->o + offsetof(struct sl_backend_obj, size), 0,
                   sizeof(*c->o) - offsetof(struct sl_backend_obj, size));
            c->o->size = -1;
        }
        CURLcode cc = curl_easy_perform(h);
        *status = (int)c->status;
        if (c->sink_failed) {
            errf(err, errlen, c->sink_failed == 2 ? "%s: the server (%s) answered a range request with the whole "
                 "file; set backend.blob_workers to 1 for it" : "%s: the transfer was stopped by the receiving side",
                 c->desc, c->url);
            rc = SL_PLUG_EIO;
            break;
        }
        if (cc == CURLE_OK && c->status >= 200 && c->status < 300) {
            rc = SL_PLUG_OK;
            break;
        }
        if (cc != CURLE_OK) {
            *status = 0;
            errf(err, errlen, "%s: the server (%s) could not be reached or the transfer broke: %s", c->desc, c->url,
                 curl_easy_strerror(cc));
            rc = SL_PLUG_EIO;
        } else {
            errf(err, errlen, "%s: the server answered %ld for %s", c->desc, c->status, c->url);
            rc = SL_PLUG_EREMOTE;
        }
        if (!sl_cc_again(cc, c->status, c->sunk, attempt, TRIES))
            break;
    }
    return rc;
}

static int done(struct call *c, int rc)
{
    free(c->url);
    return rc;
}

static int ht_head_bucket(void *st, const struct sl_backend_bck *b, int *status, char *err, size_t errlen)
{
    (void)st;
    struct call c = { .b = b, .method = "HEAD", .n = -1 };
    return done(&c, perform(&c, status, err, errlen));
}

static int ht_head_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len,
                          struct sl_backend_obj *o, int *status, char *err, size_t errlen)
{
    (void)st;
    struct call c = { .b = b, .method = "HEAD", .key = name, .klen = len, .n = -1, .o = o };
    return done(&c, perform(&c, status, err, errlen));
}

static int ht_get_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len, int64_t off,
                         int64_t n, sl_backend_sink_fn sink, void *ctx, struct sl_backend_obj *o, int *status,
                         char *err, size_t errlen)
{
    (void)st;
    struct call c = { .b = b, .method = "GET", .key = name, .klen = len, .off = off, .n = n, .sink = sink,
                      .sink_ctx = ctx, .o = o };
    return done(&c, perform(&c, status, err, errlen));
}

static int ht_put_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len, int fd,
                         int64_t size, struct sl_backend_obj *o, int *status, char *err, size_t errlen)
{
    (void)st, (void)fd, (void)size, (void)o;
    *status = 0;
    errf(err, errlen, "ht://%s/%.*s: an ht:// bucket is read-only (a web server takes no writes); nothing was "
         "written", b->name, (int)(len > 400 ? 400 : len), name);
    return SL_PLUG_EUNSUPP;
}

static int ht_delete_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len, int *status,
                            char *err, size_t errlen)
{
    (void)st;
    *status = 0;
    errf(err, errlen, "ht://%s/%.*s: an ht:// bucket is read-only: the object cannot be deleted at the server (evict "
         "drops the copy here)", b->name, (int)(len > 400 ? 400 : len), name);
    return SL_PLUG_EUNSUPP;
}

static int ht_list_page(void *st, const struct sl_backend_bck *b, const char *prefix, const char *token, int max,
                        sl_backend_list_fn cb, void *ctx, char *next_token, size_t next_len, int *status, char *err,
                        size_t errlen)
{
    (void)st, (void)prefix, (void)token, (void)max, (void)cb, (void)ctx;
    *status = 0;
    if (next_len)
        next_token[0] = 0;
    errf(err, errlen, "ht://%s: a web server's files cannot be listed; list what the cluster holds (--cached, flag "
         "cached), or name the objects (a list or a template)", b->name);
    return SL_PLUG_EUNSUPP;
}

static int ht_init(const struct sl_host_api *host, void **state, char *err, size_t errlen)
{
    (void)host;
    *state = NULL;
    return sl_cc_init(0, NULL, err, errlen);
}

static void ht_fini(void *state)
{
    (void)state;
    sl_cc_fini();
}

static const struct sl_backend_ops ops = {
    SL_ABI_INIT(struct sl_backend_ops),
    .provider = "ht",
    .head_bucket = ht_head_bucket,
    .head_object = ht_head_object,
    .get_object = ht_get_object,
    .put_object = ht_put_object,
    .delete_object = ht_delete_object,
    .list_page = ht_list_page,
};

static const struct sl_plugin desc = {
    SL_ABI_INIT(struct sl_plugin),
    .kind = SL_PLUGIN_BACKEND,
    .name = "http",
    .version = "1.0.0",
    .description = "ht:// buckets: files of an HTTP(S) server, read-only, over libcurl",
    .init = ht_init,
    .fini = ht_fini,
    .backend = &ops,
};

SL_PLUGIN_EXPORT const struct sl_plugin *sl_plugin_entry(const struct sl_host_api *host, char *err, size_t errlen)
{
    (void)host, (void)err, (void)errlen;
    return &desc;
}
