/* SPDX-License-Identifier: MIT
 * key_collapse_all_dir.c: the "collapse_all_dir" sample-key rule (ishard's
 * collapse_all_dir: regex "/" replaced by ""). The key is the full_name key
 * (directory + stem, without the extension) with every '/' removed:
 *   "train/n01/x.seg.jpg" -> key "trainn01x", ext "seg.jpg"
 *   "/a//b/c.jpg"        -> key "abc"
 * Only '/' is removed; dots and other characters in directories are kept.
 * Distinct paths can collide ("ab/c" and "a/bc" both give "abc").
 * The checks, the split and the plugin boilerplate: SL_PLUGIN_KEY_RULE.
 */
#include "shale_plugin.h"

static int collapse_all_dir_key(const char *name, size_t len, const struct sl_wds_split *s, struct sl_key_out *out)
{
    size_t i, n = 0, end = s->dir_len + s->stem_len;

    (void)len;
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

SL_PLUGIN_KEY_RULE("collapse_all_dir", "1.0.0",
                   "sample key = full name up to the basename's first dot with every '/' removed "
                   "(\"a/b/x.jpg\" -> \"abx\")",
                   collapse_all_dir_key);
