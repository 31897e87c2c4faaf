/* SPDX-License-Identifier: MIT
 * fmt_tgz.c: the "tgz" shard-format plugin: gzip-compressed tar (.tgz = .tar.gz): read and write.
 * The work is done by common_arch.c (libarchive) and common_tar.c.
 */
#include "common_fmt.h"

static const char *const extensions[] = { ".tgz", ".tar.gz", NULL };

static const struct sl_format_ops ops = {
    SL_ABI_INIT(struct sl_format_ops),
    .extensions = extensions,
    .mime = "application/gzip",
    .caps = SL_FMT_CAP_READ | SL_FMT_CAP_WRITE,
    FMT_OPS_ARCHIVE,
};

FMT_PLUGIN_DEFINE("tgz", FMT_FILTER_GZIP, FMT_FORMAT_TAR, ops, "1.0.0",
                  "gzip-compressed tar (.tgz = .tar.gz): read and write");
