/* SPDX-License-Identifier: MIT
 * common_curl.h: what the backend plugins over libcurl share (compiled into
 * each backend_*.so, as formats/common_*.c are into the format plugins):
 * one curl handle per thread and the plugin's init/fini around it.
 */
#ifndef SL_COMMON_CURL_H
#define SL_COMMON_CURL_H

#include "shale_plugin.h"

#include <stddef.h>
#include <curl/curl.h>

/* vsnprintf into err[errlen] (nothing when errlen is 0) */
void sl_cc_errf(char *err, size_t errlen, const char *fmt, ...) SL_PLUGIN_PRINTF(3, 4);
/* This thread's handle (made on first use, kept with its connections until
 * the thread ends), or NULL. */
CURL *sl_cc_handle(void);
/* For a plugin's init and fini: curl_global_init and the per-thread key;
 * min_version (0x074b00 = 7.75.0; 0 = any) refuses an older libcurl. */
int sl_cc_init(unsigned min_version, const char *why, char *err, size_t errlen);
void sl_cc_fini(void);

/* One header line of an answer (a CURLOPT_HEADERFUNCTION's buf[0..n)): the
 * status line sets *status and gives 1. A "Name: value" line gives 0 with
 * the name in k[0..kl) and the trimmed value in v[0..vl), after filling o
 * (NULL: nothing) with what every backend reads the same way: ETag (quotes
 * and W/ dropped), the object's size (Content-Length of a 200, the total of
 * a Content-Range) and Last-Modified. Header lines of a redirect (3xx) fill
 * nothing. Anything else gives -1. */
int sl_cc_header(const char *buf, size_t n, long *status, struct sl_backend_obj *o, const char **k, size_t *kl,
                 const char **v, size_t *vl);

/* An upload body: bytes [base, base + size) of fd, read with pread, and
 * rewound for a retry or a redirect. Set CURLOPT_READFUNCTION sl_cc_read,
 * CURLOPT_SEEKFUNCTION sl_cc_seek, their data a struct sl_cc_src. */
struct sl_cc_src {
    int fd;
    int64_t base, size, pos;
};
size_t sl_cc_read(char *buf, size_t size, size_t nitems, void *src);
int sl_cc_seek(void *src, curl_off_t off, int origin);

/* After a failed attempt (cc, the HTTP status; sunk: bytes were handed on
 * already): whether to try again (5xx and 429, or a broken transfer, of a
 * remote that answers), after a pause of 0.2 s, 0.4 s, ... */
int sl_cc_again(CURLcode cc, long status, int sunk, int attempt, int tries);

#endif
