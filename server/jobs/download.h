/* SPDX-License-Identifier: MIT
 * download.h: job download (download.c): AIStore's downloader, objects
 * fetched from http(s) URLs into a bucket.
 */
#ifndef SL_DOWNLOAD_H
#define SL_DOWNLOAD_H

#include "module.h"

extern const struct sl_module sl_download_module;

#endif
