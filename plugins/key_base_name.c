/* SPDX-License-Identifier: MIT
 * key_base_name.c: the "base_name" sample-key rule. The key is the stem of
 * the basename: after the last '/', up to the first dot.
 *   "train/n01/x.seg.jpg" -> key "x", ext "seg.jpg"
 *   "x.jpg" -> key "x";  "dir/noext" -> key "noext", ext "" (SL_KEY_F_NOEXT)
 * Same as ishard's base_file_name minus the extension. Files with the same
 * basename in different directories share a key: ishard must then rename the
 * members to the key (WebDataset would see different keys).
 * The checks, the split and the plugin boilerplate: SL_PLUGIN_KEY_RULE.
 */
#include "shale_plugin.h"

static int base_name_key(const char *name, size_t len, const struct sl_wds_split *s, struct sl_key_out *out)
{
    (void)len;
    return sl_plugin_key_set(out, name + s->dir_len, s->stem_len);
}

SL_PLUGIN_KEY_RULE("base_name", "1.0.0", "sample key = basename up to its first dot (\"a/b/x.seg.jpg\" -> \"x\")",
                   base_name_key);
