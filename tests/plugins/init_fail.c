/* SPDX-License-Identifier: MIT
 * init_fail.c: a plugin whose init fails; the loader must refuse it, not
 * call fini, and dlclose it. */
#include <stdio.h>
#include <stdlib.h>

#include "shale_plugin.h"

static int plug_init(const struct sl_host_api *h, void **state, char *err, size_t errlen)
{
    (void)h;
    *state = NULL;
    snprintf(err, errlen, "test_init_fail: deliberately failing init");
    return SL_PLUG_EINVAL;
}

static void plug_fini(void *state)
{
    (void)state;
    abort(); /* fini must not run after a failed init */
}

static int key_init(void *s, const char *c, void **i, char *e, size_t n)
{
    (void)s, (void)c, (void)e, (void)n;
    *i = NULL;
    return SL_PLUG_OK;
}

static void key_fini(void *i)
{
    (void)i;
}

static int key_key(void *i, const char *nm, size_t l, struct sl_key_out *o, char *e, size_t n)
{
    (void)i, (void)nm, (void)l, (void)o, (void)e, (void)n;
    return SL_PLUG_EUNSUPP;
}

static const struct sl_key_ops ops = {
    SL_ABI_INIT(struct sl_key_ops),
    .init = key_init,
    .fini = key_fini,
    .key = key_key,
};

static const struct sl_plugin plugin = {
    SL_ABI_INIT(struct sl_plugin),
    .kind = SL_PLUGIN_SAMPLE_KEY,
    .name = "test_init_fail",
    .version = "0.0.1",
    .init = plug_init,
    .fini = plug_fini,
    .key = &ops,
};

SL_PLUGIN_EXPORT const struct sl_plugin *sl_plugin_entry(const struct sl_host_api *h, char *err, size_t errlen)
{
    (void)h, (void)err, (void)errlen;
    return &plugin;
}
