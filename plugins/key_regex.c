/* SPDX-License-Identifier: MIT
 * key_regex.c: the "regex" sample-key rule. The instance config is a POSIX
 * extended regular expression (regcomp REG_EXTENDED). It is applied to the
 * object name WITHOUT its extension (full name up to the basename's first
 * dot); the key is the first capture group when the pattern has one and it
 * took part in the match, else the whole match.
 *   pattern "^[^/]+/(.*)$", "train/n01/x.seg.jpg" -> subject "train/n01/x",
 *     key "n01/x", ext "seg.jpg"
 *   pattern "[0-9]+", "shard/img_0042.jpg" -> key "0042"
 * No match: the key is the subject unchanged (as ishard's ReplaceAll leaves
 * the name) and SL_KEY_F_NOMATCH is set so the caller can warn or skip.
 * An empty match (pattern matching "") gives an empty key.
 * A rule with state, so it writes its own ops; the argument checks, the split
 * and storing the key are sl_plugin_key_prepare and sl_plugin_key_set.
 */
#include <regex.h>
#include <stdio.h>
#include <string.h>

#include "shale_plugin.h"

#define RULE "regex"

struct rx {
    regex_t re;
    size_t nsub;
};

static const struct sl_host_api *host_api;

static int key_init(void *state, const char *config, void **inst, char *err, size_t errlen)
{
    struct rx *rx;
    char why[256];
    int r;

    (void)state;
    *inst = NULL;
    if (config == NULL || config[0] == '\0')
        return sl_plugin_key_error(err, errlen, SL_PLUG_EINVAL, RULE, "no pattern: the regex rule needs a POSIX "
                                   "extended regular expression, e.g. \"^[^/]+/(.*)$\"");
    rx = host_api->calloc(1, sizeof(*rx));
    if (rx == NULL)
        return sl_plugin_key_error(err, errlen, SL_PLUG_ENOMEM, RULE, "out of memory");
    r = regcomp(&rx->re, config, REG_EXTENDED);
    if (r != 0) {
        char msg[400];
        regerror(r, &rx->re, why, sizeof(why));
        host_api->free(rx);
        snprintf(msg, sizeof(msg), "bad pattern \"%.100s\": %s; fix the sample key pattern", config, why);
        return sl_plugin_key_error(err, errlen, SL_PLUG_EINVAL, RULE, msg);
    }
    rx->nsub = rx->re.re_nsub;
    *inst = rx;
    return SL_PLUG_OK;
}

static void key_fini(void *inst)
{
    struct rx *rx = inst;

    if (rx == NULL)
        return;
    regfree(&rx->re);
    host_api->free(rx);
}

static int key_key(void *inst, const char *name, size_t len, struct sl_key_out *out, char *err, size_t errlen)
{
    struct rx *rx = inst;
    struct sl_wds_split s;
    regmatch_t m[2];
    size_t from, klen;
    int r;

    if (rx == NULL)
        return sl_plugin_key_error(err, errlen, SL_PLUG_EINVAL, RULE,
                                   "bad arguments (sl_key_out not initialised with SL_ABI_SET?)");
    r = sl_plugin_key_prepare(RULE, name, len, out, &s, err, errlen);
    if (r != SL_PLUG_OK)
        return r;

    /* REG_STARTEND: match name[0 .. subject end) without copying or a NUL. */
    memset(m, 0, sizeof(m));
    m[0].rm_so = 0;
    m[0].rm_eo = (regoff_t)(s.dir_len + s.stem_len);
    r = regexec(&rx->re, name, 2, m, REG_STARTEND);
    if (r == REG_NOMATCH) {
        out->flags |= SL_KEY_F_NOMATCH;
        from = 0;
        klen = s.dir_len + s.stem_len;
    } else if (r != 0) {
        return sl_plugin_key_error(err, errlen, SL_PLUG_EINTERNAL, RULE, "regexec failed (out of memory?)");
    } else if (rx->nsub >= 1 && m[1].rm_so >= 0) {
        from = (size_t)m[1].rm_so;
        klen = (size_t)(m[1].rm_eo - m[1].rm_so);
    } else {
        from = (size_t)m[0].rm_so;
        klen = (size_t)(m[0].rm_eo - m[0].rm_so);
    }
    return sl_plugin_key_set(out, name + from, klen);
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
    .description = "sample key = first capture group (else whole match) of a POSIX ERE applied to the name without "
                   "its extension",
    .key = &ops,
};

SL_PLUGIN_EXPORT const struct sl_plugin *sl_plugin_entry(const struct sl_host_api *host, char *err, size_t errlen)
{
    if (host == NULL || !SL_ABI_HAS(host, struct sl_host_api, free) || host->calloc == NULL || host->free == NULL) {
        sl_plugin_key_error(err, errlen, SL_PLUG_EINVAL, RULE, "the server's host API lacks calloc/free; upgrade the "
                            "server");
        return NULL;
    }
    host_api = host;
    return &plugin;
}
