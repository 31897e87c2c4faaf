/* SPDX-License-Identifier: MIT
 * fmt_zip.c: the "zip" shard-format plugin: zip: read (central directory when
 * seekable, streaming with data descriptors otherwise) and streamed write.
 * The work is done by common_arch.c (libarchive).
 */
#include "common_fmt.h"

static const char *const extensions[] = { ".zip", NULL };

static const struct sl_format_ops ops = {
    SL_ABI_INIT(struct sl_format_ops),
    .extensions = extensions,
    .mime = "application/zip",
    .caps = SL_FMT_CAP_READ | SL_FMT_CAP_WRITE,
    FMT_OPS_ARCHIVE,
};

FMT_PLUGIN_DEFINE("zip", FMT_FILTER_NONE, FMT_FORMAT_ZIP, ops, "1.0.0",
                  "zip: read (central directory when seekable, streaming with data descriptors otherwise) "
                  "and streamed write");
