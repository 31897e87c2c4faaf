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

#define ERRBODY 2048
#define LISTMAX (64 << 20)
#define errf sl_cc_errf

struct call {
    struct sl_cc_call cc;
    const struct sl_backend_bck *b;
    const char *key;              /* NULL: the bucket */
    size_t klen;
    char desc[600];               /* "ais://@REMOTE/BUCKET/KEY" for messages */
    char version[80], cksum[80];
};

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

static struct curl_slist *prepare(struct sl_cc_call *cc, CURL *h)
{
    (void)h;
    struct call *c = cc->ud;
    c->version[0] = c->cksum[0] = 0;
    if (!strcmp(cc->method, "PUT"))
        return curl_slist_append(NULL, "Expect:"); /* (no 100-continue round trip) */
    return cc->mem ? curl_slist_append(NULL, "Content-Type: application/json") : NULL;
}

static void header(struct sl_cc_call *cc, const char *k, size_t kl, const char *v, size_t vl)
{
    struct call *c = cc->ud;
    if (cc->status >= 300 && cc->status < 400) /* (a redirect's headers are not the object's) */
        return;
    if (kl == 11 && !strncasecmp(k, "Ais-Version", 11))
        snprintf(c->version, sizeof(c->version), "%.*s", (int)vl, v);
    else if (kl == 18 && !strncasecmp(k, "Ais-Checksum-Value", 18))
        snprintf(c->cksum, sizeof(c->cksum), "%.*s", (int)vl, v);
    /* the ETag is the checksum, else the version, whatever ETag header came: set again after every line, so
     * that it holds once the last one is in */
    if (cc->o) {
        snprintf(cc->o->etag, sizeof(cc->o->etag), "%s", c->cksum[0] ? c->cksum : c->version);
        snprintf(cc->o->version, sizeof(cc->o->version), "%s", c->version);
    }
}

/* the remote's "message" of an error answer, else its start */
static void explain(struct sl_cc_call *cc, char *err, size_t errlen)
{
    if (cc->sink_failed == 2) {
        errf(err, errlen, "%s: the remote answered a range request with the whole object", cc->desc);
        return;
    }
    json_error_t je;
    json_t *j = cc->body ? json_loads(cc->body, 0, &je) : NULL;
    const char *m = json_string_value(json_object_get(j, "message"));
    char out[320];
    snprintf(out, sizeof(out), "%.300s", m ? m : cc->body ? cc->body : "");
    json_decref(j);
    errf(err, errlen, "%s: the remote cluster answered %ld%s%s", cc->desc, cc->status, out[0] ? ": " : "", out);
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
    if (!url || !sl_cc_handle()) {
        free(url);
        errf(err, errlen, "%s: out of memory", c->desc);
        return SL_PLUG_ENOMEM;
    }
    c->cc.url = url;
    c->cc.desc = c->desc;
    c->cc.peer = "the remote cluster";
    c->cc.follow = 1; /* gateway -> target */
    c->cc.keep = LISTMAX;
    c->cc.errkeep = c->cc.sink ? ERRBODY : LISTMAX;
    c->cc.prepare = prepare;
    c->cc.header = header;
    c->cc.explain = explain;
    c->cc.ud = c;
    int rc = sl_cc_perform(&c->cc, status, err, errlen);
    free(url);
    return rc;
}

static int done(struct call *c, int rc)
{
    sl_cc_free(&c->cc);
    return rc;
}

static int ais_head_bucket(void *st, const struct sl_backend_bck *b, int *status, char *err, size_t errlen)
{
    (void)st;
    struct call c = { .b = b, .cc = { .method = "HEAD", .n = -1 } };
    return done(&c, perform(&c, status, err, errlen));
}

static int ais_head_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len,
                           struct sl_backend_obj *o, int *status, char *err, size_t errlen)
{
    (void)st;
    struct call c = { .b = b, .key = name, .klen = len, .cc = { .method = "HEAD", .n = -1, .o = o } };
    return done(&c, perform(&c, status, err, errlen));
}

static int ais_get_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len, int64_t off,
                          int64_t n, sl_backend_sink_fn sink, void *ctx, struct sl_backend_obj *o, int *status,
                          char *err, size_t errlen)
{
    (void)st;
    struct call c = { .b = b, .key = name, .klen = len,
                      .cc = { .method = "GET", .off = off, .n = n, .sink = sink, .sink_ctx = ctx, .o = o } };
    return done(&c, perform(&c, status, err, errlen));
}

static int ais_put_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len, int fd,
                          int64_t size, struct sl_backend_obj *o, int *status, char *err, size_t errlen)
{
    (void)st;
    struct call c = { .b = b, .key = name, .klen = len,
                      .cc = { .method = "PUT", .n = -1, .src = { .fd = fd, .size = size }, .o = o } };
    int rc = done(&c, perform(&c, status, err, errlen));
    if (o)
        o->size = size;
    return rc;
}

static int ais_delete_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len, int *status,
                             char *err, size_t errlen)
{
    (void)st;
    struct call c = { .b = b, .key = name, .klen = len, .cc = { .method = "DELETE", .n = -1 } };
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
    struct call c = { .b = b, .cc = { .method = "GET", .n = -1, .mem = body, .memlen = strlen(body) } };
    int rc = perform(&c, status, err, errlen);
    free(body);
    if (rc != SL_PLUG_OK)
        return done(&c, rc);
    json_error_t je;
    json_t *j = c.cc.body ? json_loads(c.cc.body, 0, &je) : NULL;
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

SL_CC_BACKEND_DEFINE(ais, "ais", "ais", "1.0.0",
                     "buckets of attached remote AIStore-compatible clusters (ais://@ALIAS/NAME), native API over "
                     "libcurl", 0, NULL);
