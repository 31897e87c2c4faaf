/* SPDX-License-Identifier: MIT
 * fmt_tar.c: the "tar" shard-format plugin: plain POSIX/GNU/pax tar: read,
 * write, true append, member index with exact offsets.
 * The work is done by common_arch.c (libarchive) and common_tar.c.
 */
#include "common_fmt.h"

static const char *const extensions[] = { ".tar", NULL };

static const struct sl_format_ops ops = {
    SL_ABI_INIT(struct sl_format_ops),
    .extensions = extensions,
    .mime = "application/x-tar",
    .caps = SL_FMT_CAP_READ | SL_FMT_CAP_WRITE | SL_FMT_CAP_APPEND | SL_FMT_CAP_INDEX | SL_FMT_CAP_OFFSETS,
    FMT_OPS_ARCHIVE,
    .append_offset = fmt_tar_append_offset,
    .index = fmt_tar_index,
};

FMT_PLUGIN_DEFINE("tar", FMT_FILTER_NONE, FMT_FORMAT_TAR, ops, "1.0.0",
                  "plain POSIX/GNU/pax tar: read, write, true append, member index with exact offsets");
