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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define errf sl_cc_errf

struct call {
    struct sl_cc_call cc;
    const struct sl_backend_bck *b;
    const char *key;              /* NULL: the bucket's base URL */
    size_t klen;
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

static void explain(struct sl_cc_call *cc, char *err, size_t errlen)
{
    if (cc->sink_failed == 2)
        errf(err, errlen, "%s: the server (%s) answered a range request with the whole file; set "
             "backend.blob_workers to 1 for it", cc->desc, cc->url);
    else
        errf(err, errlen, "%s: the server answered %ld for %s", cc->desc, cc->status, cc->url);
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
    char *url = make_url(base, c->key, c->key ? c->klen : 0);
    if (!url)
        return SL_PLUG_ENOMEM;
    c->cc.url = url;
    c->cc.desc = c->desc;
    c->cc.peer = "the server";
    c->cc.peer_url = 1;
    c->cc.follow = 1;
    c->cc.explain = explain;
    int rc = sl_cc_perform(&c->cc, status, err, errlen);
    free(url);
    return rc;
}

static int ht_head_bucket(void *st, const struct sl_backend_bck *b, int *status, char *err, size_t errlen)
{
    (void)st;
    struct call c = { .b = b, .cc = { .method = "HEAD", .n = -1 } };
    return perform(&c, status, err, errlen);
}

static int ht_head_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len,
                          struct sl_backend_obj *o, int *status, char *err, size_t errlen)
{
    (void)st;
    struct call c = { .b = b, .key = name, .klen = len, .cc = { .method = "HEAD", .n = -1, .o = o } };
    return perform(&c, status, err, errlen);
}

static int ht_get_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len, int64_t off,
                         int64_t n, sl_backend_sink_fn sink, void *ctx, struct sl_backend_obj *o, int *status,
                         char *err, size_t errlen)
{
    (void)st;
    struct call c = { .b = b, .key = name, .klen = len,
                      .cc = { .method = "GET", .off = off, .n = n, .sink = sink, .sink_ctx = ctx, .o = o } };
    return perform(&c, status, err, errlen);
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

SL_CC_BACKEND_DEFINE(ht, "ht", "http", "1.0.0", "ht:// buckets: files of an HTTP(S) server, read-only, over libcurl", 0,
                     NULL);
