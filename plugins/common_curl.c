/* SPDX-License-Identifier: MIT
 * common_curl.c: see common_curl.h.
 */
#include "common_curl.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

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
