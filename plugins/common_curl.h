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

#endif
