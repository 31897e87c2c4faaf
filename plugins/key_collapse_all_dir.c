/* SPDX-License-Identifier: MIT
 * key_collapse_all_dir.c: the "collapse_all_dir" sample-key rule (ishard's
 * collapse_all_dir: regex "/" replaced by ""). The key is the full_name key
 * (directory + stem, without the extension) with every '/' removed:
 *   "train/n01/x.seg.jpg" -> key "trainn01x", ext "seg.jpg"
 *   "/a//b/c.jpg"        -> key "abc"
 * Only '/' is removed; dots and other characters in directories are kept.
 * Distinct paths can collide ("ab/c" and "a/bc" both give "abc").
 */
#define RULE "collapse_all_dir"
#define DESCRIPTION                                                                                                \
    "sample key = full name up to the basename's first dot with every '/' removed (\"a/b/x.jpg\" -> \"abx\")"
#include <stdio.h>
#include <string.h>

#include "shale_plugin.h"

static int kerr(char *err, size_t errlen, int code, const char *msg)
{
    if (err != NULL && errlen > 0)
        snprintf(err, errlen, "%s: %s", RULE, msg);
    return code;
}

/* Common argument checks and the WebDataset split; fills out's ext fields. */
static int key_prepare(const char *name, size_t len, struct sl_key_out *out, struct sl_wds_split *s, char *err,
                       size_t errlen)
{
    if (name == NULL || out == NULL || !SL_ABI_HAS(out, struct sl_key_out, flags) || out->key == NULL)
        return kerr(err, errlen, SL_PLUG_EINVAL, "bad arguments (sl_key_out not initialised with SL_ABI_SET?)");
    if (memchr(name, '\0', len) != NULL)
        return kerr(err, errlen, SL_PLUG_EINVAL, "the object name contains a NUL byte");
    sl_plugin_wds_split(name, len, s);
    out->ext_off = s->ext_off;
    out->ext_len = s->ext_len;
    out->flags = (s->ext_len == 0 ? SL_KEY_F_NOEXT : 0) | (s->has_dot && s->stem_len == 0 ? SL_KEY_F_NOSTEM : 0);
    return SL_PLUG_OK;
}

static char instance_tag; /* stateless rule: every instance is this address */

static int key_init(void *state, const char *config, void **inst, char *err, size_t errlen)
{
    (void)state;
    (void)config;
    (void)err;
    (void)errlen;
    *inst = &instance_tag;
    return SL_PLUG_OK;
}

static void key_fini(void *inst)
{
    (void)inst;
}

static int key_key(void *inst, const char *name, size_t len, struct sl_key_out *out, char *err, size_t errlen)
{
    struct sl_wds_split s;
    size_t i, n = 0, end;
    int rc;

    (void)inst;
    rc = key_prepare(name, len, out, &s, err, errlen);
    if (rc != SL_PLUG_OK)
        return rc;
    end = s.dir_len + s.stem_len;
    for (i = 0; i < end; i++)
        n += name[i] != '/';
    out->key_len = n;
    if (n + 1 > out->key_cap)
        return SL_PLUG_ERANGE;
    for (i = 0, n = 0; i < end; i++)
        if (name[i] != '/')
            out->key[n++] = name[i];
    out->key[n] = '\0';
    return SL_PLUG_OK;
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
    .name = RULE,
    .version = "1.0.0",
    .description = DESCRIPTION,
    .key = &ops,
};

SL_PLUGIN_EXPORT const struct sl_plugin *sl_plugin_entry(const struct sl_host_api *host, char *err, size_t errlen)
{
    (void)host;
    (void)err;
    (void)errlen;
    return &plugin;
}
