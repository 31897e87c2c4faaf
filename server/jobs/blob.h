/* SPDX-License-Identifier: MIT
 * blob.h: job blob-download (blob.c): one big object of a remote bucket,
 * fetched in parallel ranges.
 */
#ifndef SL_BLOB_H
#define SL_BLOB_H

#include "module.h"

extern const struct sl_module sl_blob_module;

#endif
