/* SPDX-License-Identifier: MIT
 * fmt_tar.c: the "tar" shard-format plugin: plain POSIX/GNU/pax tar: read,
 * write, true append, member index with exact offsets.
 * The work is done by common_arch.c (libarchive) and common_tar.c.
 */
#include "common_fmt.h"

static const struct fmt_kind kind = {
    .name = "tar",
    .label = "tar shard",
    .filter = FMT_FILTER_NONE,
    .format = FMT_FORMAT_TAR,
};

static const char *const extensions[] = { ".tar", NULL };

static int plug_init(const struct sl_host_api *host, void **state, char *err, size_t errlen)
{
    return fmt_init_kind(host, &kind, state, err, errlen);
}

static const struct sl_format_ops ops = {
    SL_ABI_INIT(struct sl_format_ops),
    .extensions = extensions,
    .mime = "application/x-tar",
    .caps = SL_FMT_CAP_READ | SL_FMT_CAP_WRITE | SL_FMT_CAP_APPEND | SL_FMT_CAP_INDEX | SL_FMT_CAP_OFFSETS,
    .detect = fmt_detect,
    .reader_open = fmt_reader_open,
    .reader_next = fmt_reader_next,
    .reader_read = fmt_reader_read,
    .reader_skip = fmt_reader_skip,
    .reader_close = fmt_reader_close,
    .writer_open = fmt_writer_open,
    .writer_add = fmt_writer_add,
    .writer_write = fmt_writer_write,
    .writer_finish = fmt_writer_finish,
    .writer_close = fmt_writer_close,
    .append_offset = fmt_tar_append_offset,
    .index = fmt_tar_index,
};

static const struct sl_plugin plugin = {
    SL_ABI_INIT(struct sl_plugin),
    .kind = SL_PLUGIN_FORMAT,
    .name = "tar",
    .version = "1.0.0",
    .description = "plain POSIX/GNU/pax tar: read, write, true append, member index with exact offsets",
    .init = plug_init,
    .fini = fmt_fini,
    .format = &ops,
};

SL_PLUGIN_EXPORT const struct sl_plugin *sl_plugin_entry(const struct sl_host_api *host, char *err, size_t errlen)
{
    if (!fmt_host_ok(host, kind.name, err, errlen))
        return NULL;
    return &plugin;
}
