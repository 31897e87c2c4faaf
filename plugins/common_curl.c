/* SPDX-License-Identifier: MIT
 * common_curl.c: see common_curl.h.
 */
#include "common_curl.h"

#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static pthread_key_t curl_key;
const struct sl_host_api *sl_cc_host;

void sl_cc_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static void curl_key_free(void *h)
{
    curl_easy_cleanup(h);
}

CURL *sl_cc_handle(void)
{
    CURL *h = pthread_getspecific(curl_key);
    if (!h && (h = curl_easy_init()) != NULL)
        pthread_setspecific(curl_key, h);
    return h;
}

int sl_cc_init(unsigned min_version, const char *why, char *err, size_t errlen)
{
    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        sl_cc_errf(err, errlen, "curl_global_init failed");
        return SL_PLUG_EINTERNAL;
    }
    curl_version_info_data *v = curl_version_info(CURLVERSION_NOW);
    if (v->version_num < min_version) {
        sl_cc_errf(err, errlen, "libcurl %s is too old: %s", v->version, why ? why : "");
        curl_global_cleanup();
        return SL_PLUG_EUNSUPP;
    }
    if (pthread_key_create(&curl_key, curl_key_free) != 0) {
        sl_cc_errf(err, errlen, "pthread_key_create: %s", strerror(errno));
        curl_global_cleanup();
        return SL_PLUG_EINTERNAL;
    }
    return SL_PLUG_OK;
}

void sl_cc_fini(void)
{
    CURL *h = pthread_getspecific(curl_key);
    if (h) {
        pthread_setspecific(curl_key, NULL);
        curl_easy_cleanup(h);
    }
    /* threads still alive keep their handle (no destructor runs into an unloaded plugin) */
    pthread_key_delete(curl_key);
    curl_global_cleanup();
}

int sl_cc_header(const char *buf, size_t n, long *status, struct sl_backend_obj *o, const char **k, size_t *kl,
                 const char **v, size_t *vl)
{
    if (n >= 5 && !strncmp(buf, "HTTP/", 5)) {
        const char *sp = memchr(buf, ' ', n);
        *status = sp ? strtol(sp + 1, NULL, 10) : 0;
        return 1;
    }
    const char *colon = memchr(buf, ':', n);
    if (!colon)
        return -1;
    *k = buf;
    *kl = (size_t)(colon - buf);
    const char *p = colon + 1;
    while (p < buf + n && (*p == ' ' || *p == '\t'))
        p++;
    size_t l = (size_t)(buf + n - p);
    while (l && (p[l - 1] == '\r' || p[l - 1] == '\n' || p[l - 1] == ' '))
        l--;
    *v = p;
    *vl = l;
    if (!o || (*status >= 300 && *status < 400)) /* (a redirect's headers are not the object's) */
        return 0;
    if (*kl == 4 && !strncasecmp(buf, "ETag", 4)) {
        if (l >= 2 && p[0] == 'W' && p[1] == '/')
            p += 2, l -= 2;
        if (l >= 2 && p[0] == '"' && p[l - 1] == '"')
            p++, l -= 2;
        snprintf(o->etag, sizeof(o->etag), "%.*s", (int)l, p);
    } else if (*kl == 14 && !strncasecmp(buf, "Content-Length", 14) && *status == 200) {
        o->size = strtoll(p, NULL, 10); /* (a 206's is the range's) */
    } else if (*kl == 13 && !strncasecmp(buf, "Content-Range", 13)) {
        const char *sl = memchr(p, '/', l);
        if (sl && sl[1] != '*')
            o->size = strtoll(sl + 1, NULL, 10);
    } else if (*kl == 13 && !strncasecmp(buf, "Last-Modified", 13)) {
        char tmp[64];
        snprintf(tmp, sizeof(tmp), "%.*s", (int)l, p);
        time_t t = curl_getdate(tmp, NULL);
        if (t > 0)
            o->mtime_ns = (int64_t)t * 1000000000LL;
    }
    return 0;
}

size_t sl_cc_read(char *buf, size_t size, size_t nitems, void *arg)
{
    struct sl_cc_src *s = arg;
    size_t max = size * nitems;
    int64_t left = s->size - s->pos;
    if (left <= 0)
        return 0;
    if ((int64_t)max > left)
        max = (size_t)left;
    ssize_t r = pread(s->fd, buf, max, s->base + s->pos);
    if (r <= 0)
        return CURL_READFUNC_ABORT;
    s->pos += r;
    return (size_t)r;
}

int sl_cc_seek(void *arg, curl_off_t off, int origin)
{
    struct sl_cc_src *s = arg;
    if (origin != SEEK_SET)
        return CURL_SEEKFUNC_CANTSEEK;
    s->pos = off;
    return CURL_SEEKFUNC_OK;
}

int sl_cc_again(CURLcode cc, long status, int sunk, int attempt, int tries)
{
    if (sunk || attempt + 1 >= tries)
        return 0;
    if (cc != CURLE_OK ? cc == CURLE_COULDNT_CONNECT || cc == CURLE_COULDNT_RESOLVE_HOST ||
                             cc == CURLE_OPERATION_TIMEDOUT /* down: at once */
                       : !(status >= 500 || status == 429))
        return 0;
    struct timespec ts = { 0, 200000000L << attempt };
    nanosleep(&ts, NULL);
    return 1;
}

void sl_cc_obj_init(struct sl_backend_obj *o)
{
    if (!o)
        return;
    memset((char *)o + offsetof(struct sl_backend_obj, size), 0, sizeof(*o) - offsetof(struct sl_backend_obj, size));
    o->size = -1;
}

int sl_cc_append(char **p, size_t *len, size_t *cap, const char *s, size_t n)
{
    if (*len + n + 1 > *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        while (nc < *len + n + 1)
            nc *= 2;
        char *np = sl_cc_host->realloc(*p, nc);
        if (!np)
            return -1;
        *p = np;
        *cap = nc;
    }
    memcpy(*p + *len, s, n);
    *len += n;
    (*p)[*len] = 0;
    return 0;
}

/* the first max bytes of an answer's body into c->body */
static int keep_body(struct sl_cc_call *c, const char *d, size_t n, size_t max)
{
    if (c->blen >= max)
        return 0;
    return sl_cc_append(&c->body, &c->blen, &c->bcap, d, n < max - c->blen ? n : max - c->blen);
}

static size_t hdr_cb(char *buf, size_t size, size_t nitems, void *ud)
{
    struct sl_cc_call *c = ud;
    const char *k, *v;
    size_t kl, vl;
    if (sl_cc_header(buf, size * nitems, &c->status, c->o, &k, &kl, &v, &vl) == 0 && c->header)
        c->header(c, k, kl, v, vl);
    return size * nitems;
}

static size_t body_cb(char *data, size_t size, size_t nmemb, void *ud)
{
    struct sl_cc_call *c = ud;
    size_t n = size * nmemb;
    int ok = c->status >= 200 && c->status < 300;
    if (!ok || !c->sink) /* an error's start only feeds a message; a cut list would be wrong: that stops */
        return keep_body(c, data, n, ok ? c->keep : c->errkeep) < 0 && ok ? 0 : n;
    if (c->off > 0 && c->status == 200 && !c->whole_ok) { /* a range asked, the whole object came */
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

/* The options of one try but the plugin's own. */
static void set_opts(struct sl_cc_call *c, CURL *h, char *range, size_t rlen)
{
    curl_easy_reset(h);
    curl_easy_setopt(h, CURLOPT_URL, c->url);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1L);
    curl_easy_setopt(h, CURLOPT_LOW_SPEED_TIME, 60L);
    if (c->follow) {
        curl_easy_setopt(h, CURLOPT_FOLLOWLOCATION, 1L);
        curl_easy_setopt(h, CURLOPT_MAXREDIRS, 5L);
    }
    curl_easy_setopt(h, CURLOPT_HEADERFUNCTION, hdr_cb);
    curl_easy_setopt(h, CURLOPT_HEADERDATA, c);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, body_cb);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, c);
    curl_easy_setopt(h, CURLOPT_BUFFERSIZE, 256L * 1024);
    int post = !strcmp(c->method, "POST");
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
    } else if (post || c->mem) {
        if (post)
            curl_easy_setopt(h, CURLOPT_POST, 1L);
        else
            curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, c->method); /* (AIStore's list: a GET with a body) */
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, c->mem ? c->mem : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(c->mem ? c->memlen : 0));
    } else if (strcmp(c->method, "GET")) {
        curl_easy_setopt(h, CURLOPT_CUSTOMREQUEST, c->method);
    }
    if (!strcmp(c->method, "GET") && (c->off > 0 || c->n >= 0)) {
        if (c->n >= 0)
            snprintf(range, rlen, "%lld-%lld", (long long)c->off, (long long)(c->off + c->n - 1));
        else
            snprintf(range, rlen, "%lld-", (long long)c->off);
        curl_easy_setopt(h, CURLOPT_RANGE, range); /* (not signed: S3 does not require it) */
    }
}

int sl_cc_perform(struct sl_cc_call *c, int *status, char *err, size_t errlen)
{
    *status = 0;
    CURL *h = sl_cc_handle(); /* this thread's, its connections kept open */
    if (!h) {
        sl_cc_errf(err, errlen, "%s: curl_easy_init failed", c->desc);
        return SL_PLUG_ENOMEM;
    }
    char range[80];
    int rc = SL_PLUG_EIO;
    for (int attempt = 0; attempt < SL_CC_TRIES; attempt++) {
        set_opts(c, h, range, sizeof(range));
        struct curl_slist *hl = c->prepare ? c->prepare(c, h) : NULL;
        if (hl)
            curl_easy_setopt(h, CURLOPT_HTTPHEADER, hl);
        c->status = 0;
        c->blen = 0;
        if (c->body)
            c->body[0] = 0;
        sl_cc_obj_init(c->o);
        CURLcode cc = curl_easy_perform(h);
        curl_easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
        curl_slist_free_all(hl);
        *status = (int)c->status;
        if (c->sink_failed) {
            if (c->sink_failed == 2 && c->explain)
                c->explain(c, err, errlen);
            else
                sl_cc_errf(err, errlen, "%s: the transfer was stopped by the receiving side", c->desc);
            rc = SL_PLUG_EIO;
            break;
        }
        if (cc == CURLE_OK && c->status >= 200 && c->status < 300) {
            rc = SL_PLUG_OK;
            break;
        }
        if (cc != CURLE_OK) {
            *status = 0;
            sl_cc_errf(err, errlen, "%s: %s%s%s%s could not be reached or the transfer broke: %s", c->desc, c->peer,
                       c->peer_url ? " (" : "", c->peer_url ? c->url : "", c->peer_url ? ")" : "",
                       curl_easy_strerror(cc));
            rc = SL_PLUG_EIO;
        } else {
            if (c->explain)
                c->explain(c, err, errlen);
            else
                sl_cc_errf(err, errlen, "%s: %s answered %ld", c->desc, c->peer, c->status);
            rc = SL_PLUG_EREMOTE;
        }
        if (!sl_cc_again(cc, c->status, c->sunk, attempt, SL_CC_TRIES)) /* (down, or bytes handed on: no retry) */
            break;
    }
    return rc;
}

void sl_cc_free(struct sl_cc_call *c)
{
    if (c->body)
        sl_cc_host->free(c->body);
    c->body = NULL;
    c->blen = c->bcap = 0;
}
