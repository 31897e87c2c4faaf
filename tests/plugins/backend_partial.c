/* SPDX-License-Identifier: MIT
 * backend_partial.c: a backend plugin for provider "gcp" without list_page;
 * refused ("missing backend operation"). Built with -DWRONG_PROVIDER it
 * names provider "ftp" instead, also refused. */
#include "shale_plugin.h"

#include <stddef.h>

static int head_bucket(void *st, const struct sl_backend_bck *b, int *status, char *err, size_t errlen)
{
    (void)st, (void)b, (void)err, (void)errlen;
    *status = 200;
    return SL_PLUG_OK;
}

static int head_object(void *st, const struct sl_backend_bck *b, const char *name, size_t len,
                       struct sl_backend_obj *o, int *status, char *err, size_t errlen)
{
    (void)st, (void)b, (void)name, (void)len, (void)o, (void)err, (void)errlen;
    *status = 404;
    return SL_PLUG_EREMOTE;
}

static const struct sl_backend_ops ops = {
    SL_ABI_INIT(struct sl_backend_ops),
    .provider = "gcp",
    .head_bucket = head_bucket,
    .head_object = head_object,
};

static const struct sl_plugin desc = {
    SL_ABI_INIT(struct sl_plugin),
    .kind = SL_PLUGIN_BACKEND,
    .name = "test_backend_partial",
    .version = "0",
    .backend = &ops,
};

SL_PLUGIN_EXPORT const struct sl_plugin *sl_plugin_entry(const struct sl_host_api *host, char *err, size_t errlen)
{
    (void)host, (void)err, (void)errlen;
    return &desc;
}
