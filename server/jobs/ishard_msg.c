/* SPDX-License-Identifier: MIT
 * ishard_msg.c: see ishard_msg.h.
 */
#include "ishard_msg.h"
#include "rxguard.h"
#include "arch.h"
#include "sandbox.h"
#include "template.h"
#include "jsonx.h"
#include "meta.h"
#include "plug.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const ma_names[] = { "ignore", "warn", "abort", "exclude" };
static const char *const col_names[] = { "abort", "drop", "keep-first" };
void sl_ishard_msg_free(struct sl_ishard_msg *m)
{
    free(m->src);
    free(m->prefix);
    free(m->dst);
    free(m->tmpl);
    free(m->ext);
    free(m->pattern);
    sl_strv_free(m->exts, m->nexts);
    json_decref(m->ekm);
    free(m->ekm_lua);
    sl_strv_free(m->ekm_content, m->nec);
    memset(m, 0, sizeof(*m));
}

/* one of names, or a 400 listing them */
static int pick(const char *what, const char *v, const char *const *names, int n, int *out, struct sl_err *err)
{
    return sl_pick_name("ishard", what, v, names, n, out, err);
}

/* "ais://raw/pre/fix", "raw", {"name":"raw","provider":"ais"} -> name (+
 * prefix); prov (the source's only, else NULL) also takes a remote
 * provider: s3://raw, {"provider": "aws"} */
static int parse_bck(const json_t *v, const char *what, char **name, char **prefix, char *prov_out, size_t pn,
                     struct sl_err *err)
{
    const char *s, *p = "ais";
    if (json_is_object(v)) {
        p = sl_provider_norm(sl_json_str(v, "provider", "ais"));
        s = sl_json_str(v, "name", "");
    } else if (json_is_string(v)) {
        s = json_string_value(v);
    } else {
        return sl_errf(err, SL_EINVAL, "ishard: \"%s\" is required (a bucket such as \"ais://raw\")", what);
    }
    char prov[16], nm[256];
    const char *rest;
    if (sl_bck_parse(s, 0, prov, sizeof(prov), nm, sizeof(nm), &rest, err) < 0)
        return -1;
    if (strstr(s, "://"))
        p = sl_provider_norm(prov);
    if (!p || (strcmp(p, "ais") && !prov_out))
        return sl_errf(err, SL_EUNSUPP, "ishard: %s \"%s\": only ais:// buckets are supported here%s", what, s,
                       prov_out ? "" : " (shards are written into the cluster)");
    if (prov_out)
        snprintf(prov_out, pn, "%s", p);
    if (!prefix && *rest)
        return sl_errf(err, SL_EINVAL, "ishard: %s \"%s\" takes no prefix", what, s);
    if (sl_bck_name_valid(nm, err) < 0)
        return -1;
    *name = sl_xstrdup(nm);
    if (prefix)
        *prefix = sl_xstrdup(rest);
    return 0;
}

/* list of strings: JSON array or "a,b,c"; lower-cased, leading dots dropped */
static int parse_list(const json_t *v, char ***out, int *n, bool lower)
{
    *out = NULL;
    *n = 0;
    if (!v || json_is_null(v))
        return 0;
    char **r = NULL;
    int cnt = 0;
    if (json_is_array(v)) {
        r = sl_xcalloc(json_array_size(v) + 1, sizeof(char *));
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            if (!json_is_string(x)) {
                sl_strv_free(r, cnt);
                return -1;
            }
            r[cnt++] = sl_xstrdup(json_string_value(x));
        }
    } else if (json_is_string(v)) {
        char *d = sl_xstrdup(json_string_value(v)), *save = NULL;
        r = sl_xcalloc(strlen(d) / 2 + 2, sizeof(char *));
        for (char *t = strtok_r(d, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            while (*t == ' ')
                t++;
            if (*t)
                r[cnt++] = sl_xstrdup(t);
        }
        free(d);
    } else {
        return -1;
    }
    for (int i = 0; i < cnt; i++) {
        char *s = r[i];
        while (*s == '.')
            s++;
        memmove(r[i], s, strlen(s) + 1);
        size_t l = strlen(r[i]);
        while (l && r[i][l - 1] == ' ')
            r[i][--l] = 0;
        if (lower)
            for (char *c = r[i]; *c; c++)
                *c = (char)tolower((unsigned char)*c);
    }
    *out = r;
    *n = cnt;
    return 0;
}


/* JSON EKM {"tmpl": ["regex", ...], ...} -> rules (compiled) */
int sl_ekm_compile(const json_t *ekm, struct sl_ekm_rule **out, int *n, struct sl_err *err)
{
    *out = NULL;
    *n = 0;
    if (!json_is_object(ekm) || !json_object_size(ekm))
        return sl_errf(err, SL_EINVAL, "ishard: the EKM must be a JSON object {\"shard-template\": [\"regex\", ...], "
                       "...}, e.g. {\"fish-%%d.tar\": [\"n01440764.*\"]}");
    struct sl_ekm_rule *r = sl_xcalloc(json_object_size(ekm), sizeof(*r));
    int cnt = 0;
    const char *t;
    json_t *v;
    json_object_foreach((json_t *)ekm, t, v) {
        struct sl_ekm_rule *x = &r[cnt++];
        x->tmpl = sl_xstrdup(t);
        struct sl_tmpl *tp;
        if (sl_tmpl_parse(t, &tp, err) < 0) {
            sl_err_wrap(err, "ishard: EKM shard template \"%s\"", t);
            goto fail;
        }
        sl_tmpl_free(tp);
        json_t *one = json_is_string(v) ? json_pack("[O]", v) : NULL; /* a single regex as a string */
        if (one)
            v = one;
        if (!json_is_array(v) || !json_array_size(v)) {
            json_decref(one);
            sl_errf(err, SL_EINVAL, "ishard: EKM \"%s\": expected a non-empty array of regular expressions", t);
            goto fail;
        }
        x->re = sl_xcalloc(json_array_size(v), sizeof(regex_t));
        x->pat = sl_xcalloc(json_array_size(v), sizeof(char *));
        size_t i;
        json_t *p;
        json_array_foreach(v, i, p) {
            if (!json_is_string(p)) {
                sl_errf(err, SL_EINVAL, "ishard: EKM \"%s\": entry %zu is not a string", t, i);
                json_decref(one);
                goto fail;
            }
            char what[300];
            snprintf(what, sizeof(what), "ishard: EKM \"%.200s\"", t);
            if (sl_regcomp(&x->re[x->nre], json_string_value(p), REG_EXTENDED | REG_NOSUB, what, err) < 0) {
                json_decref(one);
                goto fail;
            }
            x->pat[x->nre++] = sl_xstrdup(json_string_value(p));
        }
        json_decref(one);
    }
    *out = r;
    *n = cnt;
    return 0;
fail:
    sl_ekm_free(r, cnt);
    return -1;
}

void sl_ekm_free(struct sl_ekm_rule *r, int n)
{
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < r[i].nre; k++) {
            regfree(&r[i].re[k]);
            free(r[i].pat[k]);
        }
        free(r[i].re);
        free(r[i].pat);
        free(r[i].tmpl);
    }
    free(r);
}

/* The sample-key rule: a plugin by name, else a regular expression. */
const struct sl_plug *sl_plan_key_rule(const char *pattern, const char **config)
{
    static const char *const alias[][2] = { { "base_file_name", "base_name" }, { "base_filename", "base_name" },
                                            { "", "base_name" } };
    const char *name = pattern;
    for (size_t i = 0; i < SL_ARRAY_SIZE(alias); i++)
        if (!strcmp(pattern, alias[i][0]))
            name = alias[i][1];
    const struct sl_plug *p = sl_plug_find(sl_arch_reg(), SL_PLUGIN_SAMPLE_KEY, name);
    if (p && strcmp(name, "regex")) {
        *config = NULL;
        return p;
    }
    *config = pattern;
    return sl_plug_find(sl_arch_reg(), SL_PLUGIN_SAMPLE_KEY, "regex");
}

static void key_rule_names(struct sl_buf *b)
{
    const struct sl_plug_reg *reg = sl_arch_reg();
    int n = 0;
    for (size_t i = 0; i < sl_plug_count(reg); i++) {
        const struct sl_plug *p = sl_plug_at(reg, i);
        if (sl_plug_kind(p) == SL_PLUGIN_SAMPLE_KEY && strcmp(sl_plug_name(p), "regex"))
            sl_buf_printf(b, "%s%s", n++ ? ", " : "", sl_plug_name(p));
    }
}

static const char *const imsg_fields[] = {
    "src_bck", "src_prefix", "dst_bck", "shard_size", "shard_template", "ext", "sample_key_pattern", "sample_exts",
    "missing_extension_action", "collapse", "ekm", "ekm_lua", "ekm_content", "ekm_missing_key", "sort",
    "ext_collision", "overwrite", "dry_run", "dst_not_empty",
};

int sl_ishard_msg_parse(const json_t *v, struct sl_ishard_msg *m, struct sl_err *err)
{
    memset(m, 0, sizeof(*m));
    if (!json_is_object(v))
        return sl_errf(err, SL_EINVAL, "ishard: the body must be a JSON object (src_bck, dst_bck, shard_size, ...)");
    const char *fk = sl_json_unknown_key(v, imsg_fields, SL_ARRAY_SIZE(imsg_fields));
    if (fk) {
        struct sl_buf b;
        sl_buf_init(&b);
        for (size_t i = 0; i + 1 < SL_ARRAY_SIZE(imsg_fields); i++)
            sl_buf_printf(&b, "%s%s", i ? ", " : "", imsg_fields[i]);
        sl_errf(err, SL_EINVAL, "ishard: unknown field \"%s\" (valid: %s)", fk, b.p);
        sl_buf_free(&b);
        return -1;
    }
    m->dst_not_empty = sl_json_bool(v, "dst_not_empty", false);
    if (parse_bck(sl_json_get(v, "src_bck"), "src_bck", &m->src, &m->prefix, m->src_prov, sizeof(m->src_prov),
                  err) < 0 ||
        parse_bck(sl_json_get(v, "dst_bck"), "dst_bck", &m->dst, NULL, NULL, 0, err) < 0)
        return -1;
    const char *pfx = sl_json_str(v, "src_prefix", "");
    if (pfx[0]) {
        free(m->prefix);
        m->prefix = sl_xstrdup(pfx);
    }
    if (!strcmp(m->src, m->dst) && !strcmp(m->src_prov, "ais"))
        return sl_errf(err, SL_EINVAL, "ishard: source and destination are the same bucket ais://%s", m->src);
    /* shard_size: an integer is a sample count, else a size */
    json_t *ss = sl_json_get(v, "shard_size");
    const char *sss = json_is_string(ss) ? json_string_value(ss) : NULL;
    if (!ss || json_is_null(ss) || (sss && !sss[0])) {
        m->shard_size = 1024 * 1024;
    } else if (json_is_integer(ss) || (sss && sss[strspn(sss, "0123456789")] == 0)) {
        m->by_count = true;
        m->shard_size = json_is_integer(ss) ? (uint64_t)json_integer_value(ss) : strtoull(sss, NULL, 10);
    } else if (!sss || sl_parse_size(sss, &m->shard_size) < 0) {
        return sl_errf(err, SL_EINVAL, "ishard: invalid shard_size %s: give a size (\"512MiB\", \"10MB\") or a "
                       "number of samples per shard (\"1000\")", sss ? sss : "(not a string)");
    }
    if (!m->shard_size)
        return sl_errf(err, SL_EINVAL, "ishard: shard_size must be positive");
    m->tmpl = sl_xstrdup(sl_json_str(v, "shard_template", "shard-%06d"));
    if (!m->tmpl[0]) {
        free(m->tmpl);
        m->tmpl = sl_xstrdup("shard-%06d");
    }
    struct sl_tmpl *tp;
    if (sl_tmpl_parse(m->tmpl, &tp, err) < 0) {
        sl_err_wrap(err, "ishard: shard_template");
        return -1;
    }
    bool ranged = sl_tmpl_is_range(tp);
    sl_tmpl_free(tp);
    if (!ranged)
        return sl_errf(err, SL_EINVAL, "ishard: shard_template \"%s\" has no counter or range; use e.g. "
                       "\"shard-%%06d\", \"shard-{0000..9999}\" or \"shard-@9999\"", m->tmpl);
    const char *ext = sl_json_str(v, "ext", ".tar");
    m->ext = sl_xasprintf("%s%s", ext[0] == '.' ? "" : ".", ext[0] ? ext : "tar");
    char *probe = sl_xasprintf("x%s", m->ext);
    const struct sl_plug *fmt = sl_arch_format_by_name(probe, strlen(probe));
    free(probe);
    if (!fmt || !(sl_plug_caps(fmt) & SL_FMT_CAP_WRITE))
        return sl_errf(err, SL_EINVAL, "ishard: unsupported ext \"%s\" (valid: %s)", m->ext, sl_arch_supported());
    m->pattern = sl_xstrdup(sl_json_str(v, "sample_key_pattern", "base_name"));
    const char *cfg;
    const struct sl_plug *rule = sl_plan_key_rule(m->pattern, &cfg);
    if (rule && cfg && !strcmp(sl_plug_name(rule), "regex") &&
        sl_regex_guard(cfg, "ishard: sample_key_pattern", err) < 0) /* (the plugin compiles it) */
        return -1;
    struct sl_plug_key *k = NULL;
    struct sl_err e2 = { 0 };
    if (!rule || sl_plug_key_new(rule, cfg, &k, &e2) < 0) {
        struct sl_buf b;
        sl_buf_init(&b);
        key_rule_names(&b);
        sl_errf(err, SL_EINVAL, "ishard: invalid sample_key_pattern \"%s\": not a sample-key rule (%s) and not a "
                "valid regular expression%s%s", m->pattern, b.p ? b.p : "", e2.msg[0] ? ": " : "", e2.msg);
        sl_buf_free(&b);
        return -1;
    }
    sl_plug_key_free(k);
    if (parse_list(sl_json_get(v, "sample_exts"), &m->exts, &m->nexts, true) < 0)
        return sl_errf(err, SL_EINVAL, "ishard: sample_exts must be a list of extensions (\".jpg,.cls\")");
    if (pick("missing_extension_action", sl_json_str(v, "missing_extension_action", "ignore"), ma_names, 4, &m->miss,
             err) < 0)
        return -1;
    m->collapse = sl_json_bool(v, "collapse", false);
    json_t *ekm = sl_json_get(v, "ekm");
    if (json_is_string(ekm) && json_string_value(ekm)[0]) {
        json_error_t je;
        m->ekm = json_loads(json_string_value(ekm), 0, &je);
        if (!m->ekm)
            return sl_errf(err, SL_EINVAL, "ishard: the EKM does not parse as JSON: %s (line %d, column %d)", je.text,
                           je.line, je.column);
    } else if (json_is_object(ekm)) {
        m->ekm = json_deep_copy(ekm);
    } else if (ekm && !json_is_null(ekm) && !(json_is_string(ekm) && !json_string_value(ekm)[0])) {
        return sl_errf(err, SL_EINVAL, "ishard: \"ekm\" must be a JSON object (or its text)");
    }
    if (m->ekm) {
        struct sl_ekm_rule *r;
        int n;
        if (sl_ekm_compile(m->ekm, &r, &n, err) < 0)
            return -1;
        sl_ekm_free(r, n);
    }
    const char *lua = sl_json_str(v, "ekm_lua", "");
    if (lua[0]) {
        if (m->ekm)
            return sl_errf(err, SL_EINVAL, "ishard: give either \"ekm\" (JSON) or \"ekm_lua\", not both");
        m->ekm_lua = sl_xstrdup(lua);
        struct sl_lua_limits lim;
        sl_lua_limits_default(&lim);
        if (sl_lua_check_fn("ekm", lua, strlen(lua), "shard_for", &lim, err) < 0) {
            if (err->code == SL_ENOENT)
                sl_errf(err, SL_EINVAL, "ishard: the Lua EKM must define shard_for(key, sample)");
            else
                sl_err_wrap(err, "ishard: Lua EKM");
            err->code = SL_EINVAL;
            return -1;
        }
    }
    if (parse_list(sl_json_get(v, "ekm_content"), &m->ekm_content, &m->nec, true) < 0)
        return sl_errf(err, SL_EINVAL, "ishard: ekm_content must be a list of extensions");
    if (pick("ekm_missing_key", sl_json_str(v, "ekm_missing_key", "warn"), ma_names, 3, &m->ekm_missing, err) < 0)
        return -1;
    const char *sort = sl_json_str(v, "sort", "");
    if (!sort[0]) {
        m->sort = SORT_NONE;
    } else if (!strcmp(sort, "alpha") || !strcmp(sort, "alpha:inc")) {
        m->sort = SORT_INC;
    } else if (!strcmp(sort, "alpha:dec")) {
        m->sort = SORT_DEC;
    } else if (!strcmp(sort, "shuffle") || sl_has_prefix(sort, "shuffle:")) {
        m->sort = SORT_SHUFFLE;
        if (sort[7] == ':') {
            char *end;
            m->seed = strtoull(sort + 8, &end, 10);
            if (!sort[8] || *end)
                return sl_errf(err, SL_EINVAL, "ishard: invalid sort \"%s\": the seed must be an integer "
                               "(shuffle:1234)", sort);
            m->seed_set = true;
        }
    } else {
        return sl_errf(err, SL_EINVAL, "ishard: invalid sort \"%s\" (valid: alpha, alpha:inc, alpha:dec, shuffle, "
                       "shuffle:SEED)", sort);
    }
    if (m->sort == SORT_SHUFFLE && !m->seed_set) {
        m->seed = (uint64_t)sl_now_ns();
        m->seed_set = true;
    }
    json_t *dr = sl_json_get(v, "dry_run");
    const char *drs = json_is_string(dr) ? json_string_value(dr) : NULL;
    if (drs && !strcmp(drs, "show_keys"))
        m->dry_run = 2;
    else if (drs && (!strcmp(drs, "true") || !strcmp(drs, "false") || !drs[0]))
        m->dry_run = !strcmp(drs, "true");
    else if (drs || (dr && !json_is_boolean(dr) && !json_is_null(dr)))
        return sl_errf(err, SL_EINVAL, "ishard: invalid dry_run %s%s%s (valid: true, false, \"show_keys\")",
                       drs ? "\"" : "", drs ? drs : "(not a boolean)", drs ? "\"" : "");
    else
        m->dry_run = json_is_true(dr) ? 1 : 0;
    m->overwrite = sl_json_bool(v, "overwrite", false);
    if (pick("ext_collision", sl_json_str(v, "ext_collision", "abort"), col_names, 3, &m->collision, err) < 0)
        return -1;
    return 0;
}

json_t *sl_ishard_msg_json(const struct sl_ishard_msg *m)
{
    json_t *o = json_object();
    json_object_set_new(o, "src_bck", json_pack("{s:s,s:s}", "name", m->src, "provider", m->src_prov));
    json_object_set_new(o, "src_prefix", json_string(m->prefix));
    json_object_set_new(o, "dst_bck", json_string(m->dst));
    char sz[32];
    snprintf(sz, sizeof(sz), "%llu%s", (unsigned long long)m->shard_size, m->by_count ? "" : "B");
    json_object_set_new(o, "shard_size", json_string(sz));
    json_object_set_new(o, "shard_template", json_string(m->tmpl));
    json_object_set_new(o, "ext", json_string(m->ext));
    json_object_set_new(o, "sample_key_pattern", json_string(m->pattern));
    json_t *a = json_array();
    for (int i = 0; i < m->nexts; i++)
        json_array_append_new(a, json_string(m->exts[i]));
    json_object_set_new(o, "sample_exts", a);
    json_object_set_new(o, "missing_extension_action", json_string(ma_names[m->miss]));
    json_object_set_new(o, "collapse", json_boolean(m->collapse));
    if (m->ekm)
        json_object_set(o, "ekm", m->ekm);
    if (m->ekm_lua)
        json_object_set_new(o, "ekm_lua", json_string(m->ekm_lua));
    a = json_array();
    for (int i = 0; i < m->nec; i++)
        json_array_append_new(a, json_string(m->ekm_content[i]));
    json_object_set_new(o, "ekm_content", a);
    json_object_set_new(o, "ekm_missing_key", json_string(ma_names[m->ekm_missing]));
    char so[48] = "";
    if (m->sort == SORT_INC)
        snprintf(so, sizeof(so), "alpha:inc");
    else if (m->sort == SORT_DEC)
        snprintf(so, sizeof(so), "alpha:dec");
    else if (m->sort == SORT_SHUFFLE)
        snprintf(so, sizeof(so), "shuffle:%llu", (unsigned long long)m->seed);
    json_object_set_new(o, "sort", json_string(so));
    json_object_set_new(o, "dry_run", m->dry_run == 2 ? json_string("show_keys") : json_boolean(m->dry_run));
    json_object_set_new(o, "overwrite", json_boolean(m->overwrite));
    json_object_set_new(o, "ext_collision", json_string(col_names[m->collision]));
    if (m->dst_not_empty)
        json_object_set_new(o, "dst_not_empty", json_true());
    return o;
}
