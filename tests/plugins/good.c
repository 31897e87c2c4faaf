/* SPDX-License-Identifier: MIT
 * good.c: a well-formed sample-key test plugin ("test_good"). The loader
 * tests load it under several file names. init/fini leave a trace in the
 * environment (SL_TEST_GOOD_INIT / SL_TEST_GOOD_FINI) for the test to see.
 * The broken test plugins include it with a name (TEST_NAME) and the one
 * flaw they test: MISSING_KEY_FN, BAD_ABI_MAJOR, FAIL_INIT.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shale_plugin.h"

#ifndef TEST_NAME
#define TEST_NAME "test_good"
#endif

static const struct sl_host_api *host;

static int plug_init(const struct sl_host_api *h, void **state, char *err, size_t errlen)
{
#ifdef FAIL_INIT
    (void)h;
    *state = NULL;
    snprintf(err, errlen, "%s: deliberately failing init", TEST_NAME);
    return SL_PLUG_EINVAL;
#else
    (void)err;
    (void)errlen;
    *state = h->alloc(16);
    if (*state == NULL)
        return SL_PLUG_ENOMEM;
    setenv("SL_TEST_GOOD_INIT", TEST_NAME, 1);
    h->log(SL_PLUG_LOG_INFO, "%s: init", TEST_NAME);
    return SL_PLUG_OK;
#endif
}

static void plug_fini(void *state)
{
#ifdef FAIL_INIT
    (void)state;
    abort(); /* fini must not run after a failed init */
#else
    host->free(state);
    setenv("SL_TEST_GOOD_FINI", TEST_NAME, 1);
#endif
}

static int key_init(void *state, const char *config, void **inst, char *err, size_t errlen)
{
    (void)config;
    (void)err;
    (void)errlen;
    *inst = state;
    return SL_PLUG_OK;
}

static void key_fini(void *inst)
{
    (void)inst;
}

/* key = the whole name; no extension handling */
static int key_key(void *inst, const char *name, size_t len, struct sl_key_out *out, char *err, size_t errlen)
{
    (void)inst;
    (void)err;
    (void)errlen;
    out->key_len = len;
    out->ext_off = len;
    out->ext_len = 0;
    out->flags = SL_KEY_F_NOEXT;
    if (len + 1 > out->key_cap)
        return SL_PLUG_ERANGE;
    memcpy(out->key, name, len);
    out->key[len] = '\0';
    return SL_PLUG_OK;
}

static const struct sl_key_ops ops = {
    SL_ABI_INIT(struct sl_key_ops),
    .init = key_init,
    .fini = key_fini,
#ifndef MISSING_KEY_FN
    .key = key_key,
#endif
};

static struct sl_plugin plugin = {
    SL_ABI_INIT(struct sl_plugin),
    .kind = SL_PLUGIN_SAMPLE_KEY,
    .name = TEST_NAME,
    .version = "0.0.1",
    .description = "loader test plugin",
    .init = plug_init,
    .fini = plug_fini,
    .key = &ops,
};

SL_PLUGIN_EXPORT const struct sl_plugin *sl_plugin_entry(const struct sl_host_api *h, char *err, size_t errlen)
{
    (void)err;
    (void)errlen;
    host = h;
#ifdef BAD_ABI_MAJOR
    plugin.abi_major = BAD_ABI_MAJOR;
#endif
    (void)key_key;
    return &plugin;
}
