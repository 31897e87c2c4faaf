/* SPDX-License-Identifier: MIT
 * key_full_name.c: the "full_name" sample-key rule, WebDataset's own: the
 * key is the whole name up to the first dot of the basename (the directory
 * part stays in the key; dots in directories are fine).
 *   "train/n01/x.seg.jpg" -> key "train/n01/x", ext "seg.jpg"
 *   "a.b/c.d.e" -> key "a.b/c", ext "d.e"
 * The checks, the split and the plugin boilerplate: SL_PLUGIN_KEY_RULE.
 */
#include "shale_plugin.h"

static int full_name_key(const char *name, size_t len, const struct sl_wds_split *s, struct sl_key_out *out)
{
    (void)len;
    return sl_plugin_key_set(out, name, s->dir_len + s->stem_len);
}

SL_PLUGIN_KEY_RULE("full_name", "1.0.0",
                   "sample key = full name up to the basename's first dot (\"a/b/x.seg.jpg\" -> \"a/b/x\")",
                   full_name_key);
