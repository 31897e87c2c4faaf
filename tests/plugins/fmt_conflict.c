/* SPDX-License-Identifier: MIT
 * fmt_conflict.c: a format plugin ("test_tarcopy") claiming ".tar", which the
 * built-in tar plugin already owns; loaded after it, it must be refused.
 * Alone it loads: a minimal valid format (every operation unsupported). */
#include <stdio.h>

#include "shale_plugin.h"

static int detect(void *s, const void *h, size_t n)
{
    (void)s, (void)h, (void)n;
    return 0;
}

static int r_open(void *s, const struct sl_io *io, const struct sl_fmt_limits *l, uint32_t f, void **rd, char *e,
                  size_t n)
{
    (void)s, (void)io, (void)l, (void)f;
    *rd = NULL;
    snprintf(e, n, "test_tarcopy: cannot read anything");
    return SL_PLUG_EUNSUPP;
}

static int r_next(void *rd, struct sl_fmt_entry *en, char *e, size_t n)
{
    (void)rd, (void)en, (void)e, (void)n;
    return SL_PLUG_EOF;
}

static int64_t r_read(void *rd, void *b, size_t l, char *e, size_t n)
{
    (void)rd, (void)b, (void)l, (void)e, (void)n;
    return 0;
}

static int r_skip(void *rd, char *e, size_t n)
{
    (void)rd, (void)e, (void)n;
    return SL_PLUG_OK;
}

static void r_close(void *rd)
{
    (void)rd;
}

static const char *const exts[] = { ".tar", NULL };

static const struct sl_format_ops ops = {
    SL_ABI_INIT(struct sl_format_ops),
    .extensions = exts,
    .mime = "application/x-test",
    .caps = SL_FMT_CAP_READ,
    .detect = detect,
    .reader_open = r_open,
    .reader_next = r_next,
    .reader_read = r_read,
    .reader_skip = r_skip,
    .reader_close = r_close,
};

static const struct sl_plugin plugin = {
    SL_ABI_INIT(struct sl_plugin),
    .kind = SL_PLUGIN_FORMAT,
    .name = "test_tarcopy",
    .version = "0.0.1",
    .format = &ops,
};

SL_PLUGIN_EXPORT const struct sl_plugin *sl_plugin_entry(const struct sl_host_api *h, char *err, size_t errlen)
{
    (void)h, (void)err, (void)errlen;
    return &plugin;
}
