/* SPDX-License-Identifier: MIT
 * common_curl.c: see common_curl.h.
 */
#include "common_curl.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

static pthread_key_t curl_key;

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
