/* SPDX-License-Identifier: MIT
 * fmt_tarlz4.c: the "tar.lz4" shard-format plugin: lz4-frame-compressed tar (lz4 CLI compatible): read and write.
 * The work is done by common_arch.c (libarchive) and common_tar.c.
 */
#include "common_fmt.h"

static const char *const extensions[] = { ".tar.lz4", NULL };

static const struct sl_format_ops ops = {
    SL_ABI_INIT(struct sl_format_ops),
    .extensions = extensions,
    .mime = "application/x-lz4",
    .caps = SL_FMT_CAP_READ | SL_FMT_CAP_WRITE,
    FMT_OPS_ARCHIVE,
};

FMT_PLUGIN_DEFINE("tar.lz4", FMT_FILTER_LZ4, FMT_FORMAT_TAR, ops, "1.0.0",
                  "lz4-frame-compressed tar (lz4 CLI compatible): read and write");
