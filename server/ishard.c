/* SPDX-License-Identifier: MIT
 * ishard.c: initial sharding (see ishard.h, docs/ishard.md).
 *
 *   gateway      POST /v1/ishard (IshardMsg) -> checks, creates the
 *                destination, picks the coordinator, answers the job id;
 *                GET /v1/ishard/ID -> report and progress; DELETE -> abort
 *   coordinator  POST /v1/internal/ishard/plan: list -> samples -> policy ->
 *                EKM -> order -> pack -> name -> dispatch (or dry-run report)
 *   owners       POST /v1/internal/ishard/build: write the shards they own
 *
 * The WebDataset rule holds throughout: a member's key is its name up to the
 * first dot of the basename. Members of one sample are written adjacent
 * under one key: their own names when they already share it, else
 * "<sample key>.<extension>".
 */
#include "ishard.h"
#include "arch.h"
#include "cluster.h"
#include "jsonx.h"
#include "log.h"
#include "lso.h"
#include "node.h"
#include "peer.h"
#include "plug.h"
#include "sandbox.h"
#include "shard.h"
#include "store.h"
#include "template.h"
#include "xact.h"

#include <ctype.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (256 * 1024)
#define MAX_WARN 100
#define MAX_PLAN_KEYS 64          /* keys listed per shard in a show_keys dry run */
#define BUILD_WORKERS 4
#define PREFETCH 64                 /* members fetched from other targets at once */
#define PREFETCH_MAX (1024 * 1024)  /* members larger than this are streamed */
#define EKM_CONTENT_MAX (1024 * 1024)

enum { MA_IGNORE, MA_WARN, MA_ABORT, MA_EXCLUDE };
enum { SORT_NONE, SORT_INC, SORT_DEC, SORT_SHUFFLE };
enum { COL_ABORT, COL_DROP, COL_KEEP_FIRST };

static const char *const ma_names[] = { "ignore", "warn", "abort", "exclude" };
static const char *const col_names[] = { "abort", "drop", "keep-first" };

/* ------------------------------------------------------------------ */
/* the request                                                        */
/* ------------------------------------------------------------------ */

struct ekm_rule {
    char *tmpl;
    regex_t *re;
    char **pat;
    int nre;
};

struct imsg {
    char *src, *prefix, *dst;
    uint64_t shard_size;        /* bytes, or samples when by_count */
    bool by_count;
    char *tmpl;
    char *ext;                  /* ".tar" */
    char *pattern;              /* as given */
    char **exts;                /* sample_exts, lower-case, no dot */
    int nexts;
    int miss;
    bool collapse;
    json_t *ekm;                /* JSON EKM (object) or NULL */
    char *ekm_lua;              /* Lua EKM source or NULL */
    char **ekm_content;         /* extensions whose bytes the Lua EKM gets */
    int nec;
    int ekm_missing;            /* MA_IGNORE / MA_WARN / MA_ABORT */
    int sort;
    uint64_t seed;
    bool seed_set;
    int dry_run;                /* 0, 1, 2 = show_keys */
    bool overwrite;
    bool dst_not_empty;         /* set by the gateway for a dry run (warned) */
    int collision;
};

static void free_strv(char **v, int n)
{
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void imsg_free(struct imsg *m)
{
    free(m->src);
    free(m->prefix);
    free(m->dst);
    free(m->tmpl);
    free(m->ext);
    free(m->pattern);
    free_strv(m->exts, m->nexts);
    json_decref(m->ekm);
    free(m->ekm_lua);
    free_strv(m->ekm_content, m->nec);
    memset(m, 0, sizeof(*m));
}

static int pick(const char *what, const char *v, const char *const *names, int n, int *out, struct sl_err *err)
{
    for (int i = 0; i < n; i++)
        if (!strcmp(v, names[i])) {
            *out = i;
            return 0;
        }
    struct sl_buf b;
    sl_buf_init(&b);
    for (int i = 0; i < n; i++)
        sl_buf_printf(&b, "%s%s", i ? ", " : "", names[i]);
    sl_errf(err, SL_EINVAL, "ishard: invalid %s \"%s\" (valid: %s)", what, v, b.p);
    sl_buf_free(&b);
    return -1;
}

/* "ais://raw/pre/fix", "raw", {"name":"raw","provider":"ais"} -> name (+ prefix) */
static int parse_bck(const json_t *v, const char *what, char **name, char **prefix, struct sl_err *err)
{
    const char *s;
    if (json_is_object(v)) {
        const char *p = sl_json_str(v, "provider", "ais");
        if (p[0] && strcmp(p, "ais"))
            return sl_errf(err, SL_EUNSUPP, "ishard: %s: only ais:// buckets are supported", what);
        s = sl_json_str(v, "name", "");
    } else if (json_is_string(v)) {
        s = json_string_value(v);
    } else {
        return sl_errf(err, SL_EINVAL, "ishard: \"%s\" is required (a bucket such as \"ais://raw\")", what);
    }
    if (sl_has_prefix(s, "ais://"))
        s += 6;
    else if (strstr(s, "://"))
        return sl_errf(err, SL_EUNSUPP, "ishard: %s \"%s\": only ais:// buckets are supported", what, s);
    const char *sl = strchr(s, '/');
    *name = sl ? sl_xstrndup(s, (size_t)(sl - s)) : sl_xstrdup(s);
    if (prefix)
        *prefix = sl_xstrdup(sl ? sl + 1 : "");
    else if (sl && sl[1])
        return sl_errf(err, SL_EINVAL, "ishard: %s \"%s\" takes no prefix", what, s);
    return sl_bck_name_valid(*name, err) < 0 ? -1 : 0;
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
                free_strv(r, cnt);
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

static void ekm_free(struct ekm_rule *r, int n);

/* JSON EKM {"tmpl": ["regex", ...], ...} -> rules (compiled) */
static int ekm_compile(const json_t *ekm, struct ekm_rule **out, int *n, struct sl_err *err)
{
    *out = NULL;
    *n = 0;
    if (!json_is_object(ekm) || !json_object_size(ekm))
        return sl_errf(err, SL_EINVAL, "ishard: the EKM must be a JSON object {\"shard-template\": [\"regex\", ...], "
                       "...}, e.g. {\"fish-%%d.tar\": [\"n01440764.*\"]}");
    struct ekm_rule *r = sl_xcalloc(json_object_size(ekm), sizeof(*r));
    int cnt = 0;
    const char *t;
    json_t *v;
    json_object_foreach((json_t *)ekm, t, v) {
        struct ekm_rule *x = &r[cnt++];
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
            int rc = regcomp(&x->re[x->nre], json_string_value(p), REG_EXTENDED | REG_NOSUB);
            if (rc) {
                char eb[200];
                regerror(rc, &x->re[x->nre], eb, sizeof(eb));
                sl_errf(err, SL_EINVAL, "ishard: EKM \"%s\": invalid regular expression \"%s\": %s", t,
                        json_string_value(p), eb);
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
    ekm_free(r, cnt);
    return -1;
}

static void ekm_free(struct ekm_rule *r, int n)
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
static const struct sl_plug *key_rule(const char *pattern, const char **config)
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

static int imsg_parse(const json_t *v, struct imsg *m, struct sl_err *err)
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
    if (parse_bck(sl_json_get(v, "src_bck"), "src_bck", &m->src, &m->prefix, err) < 0 ||
        parse_bck(sl_json_get(v, "dst_bck"), "dst_bck", &m->dst, NULL, err) < 0)
        return -1;
    const char *pfx = sl_json_str(v, "src_prefix", "");
    if (pfx[0]) {
        free(m->prefix);
        m->prefix = sl_xstrdup(pfx);
    }
    if (!strcmp(m->src, m->dst))
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
    const struct sl_plug *rule = key_rule(m->pattern, &cfg);
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
        struct ekm_rule *r;
        int n;
        if (ekm_compile(m->ekm, &r, &n, err) < 0)
            return -1;
        ekm_free(r, n);
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

static json_t *imsg_json(const struct imsg *m)
{
    json_t *o = json_object();
    json_object_set_new(o, "src_bck", json_string(m->src));
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

/* ------------------------------------------------------------------ */
/* a string -> index hash table                                       */
/* ------------------------------------------------------------------ */

struct strmap {
    const char **k;
    size_t *kl;
    int *v;
    size_t cap, n;
};

static void sm_free(struct strmap *m)
{
    free(m->k);
    free(m->kl);
    free(m->v);
    memset(m, 0, sizeof(*m));
}

static size_t sm_slot(const struct strmap *m, const char *k, size_t kl)
{
    size_t i = (size_t)sl_xxh64(k, kl, 0) & (m->cap - 1);
    while (m->k[i] && !(m->kl[i] == kl && !memcmp(m->k[i], k, kl)))
        i = (i + 1) & (m->cap - 1);
    return i;
}

/* value of k, or -1; the key memory is borrowed and must outlive the map */
static int sm_get(const struct strmap *m, const char *k, size_t kl)
{
    if (!m->cap)
        return -1;
    size_t i = sm_slot(m, k, kl);
    return m->k[i] ? m->v[i] : -1;
}

static void sm_put(struct strmap *m, const char *k, size_t kl, int v)
{
    if ((m->n + 1) * 2 > m->cap) {
        struct strmap o = *m;
        m->cap = o.cap ? o.cap * 2 : 1024;
        m->k = sl_xcalloc(m->cap, sizeof(*m->k));
        m->kl = sl_xcalloc(m->cap, sizeof(*m->kl));
        m->v = sl_xcalloc(m->cap, sizeof(*m->v));
        m->n = 0;
        for (size_t i = 0; i < o.cap; i++)
            if (o.k[i])
                sm_put(m, o.k[i], o.kl[i], o.v[i]);
        sm_free(&o);
    }
    size_t i = sm_slot(m, k, kl);
    if (!m->k[i]) {
        m->k[i] = k;
        m->kl[i] = kl;
        m->n++;
    }
    m->v[i] = v;
}

/* ------------------------------------------------------------------ */
/* planning (coordinator)                                             */
/* ------------------------------------------------------------------ */

struct pobj {
    char *name;
    size_t nlen;
    uint64_t size;
    size_t ext_off, ext_len;
};

struct psample {
    char *key;
    size_t klen, dirlen;
    int *m;                     /* object indexes */
    int nm, capm;
    uint64_t bytes;             /* estimated bytes in a tar */
    int family;
    bool drop, rename, incomplete;
};

struct pshard {
    char *name;
    int family;
    int first, count;           /* range of plan->order */
    uint64_t bytes;
    const struct sl_snode *owner;
};

struct family {
    char *tmpl;
    uint64_t next;              /* next template index */
    int *seq;                   /* samples in this family, in order */
    int nseq, capseq;
};

struct plan {
    struct imsg *m;
    struct sl_bck src, dst;
    bool have_src, have_dst;
    struct sl_smap *cmap;       /* the cluster map shard owners point into */
    struct sl_job *job;
    struct pobj *o;
    int no, capo;
    uint64_t listed_bytes;
    char listed_at[40];
    struct psample *s;
    int ns, caps;
    struct strmap smap;         /* key -> sample */
    int *order;                 /* packed sample order */
    int norder, caporder;
    struct pshard *sh;
    int nsh, capsh;
    struct family *fam;
    int nfam;
    /* report */
    json_t *warnings;
    uint64_t nwarn, skipped_noext, multidot, excluded, incomplete, ekm_unmatched, collisions, renamed, dropped;
    struct sl_err err;
};

static void plan_warn(struct plan *p, const char *fmt, ...) SL_PRINTF(2, 3);
static void plan_warn(struct plan *p, const char *fmt, ...)
{
    p->nwarn++;
    if (json_array_size(p->warnings) >= MAX_WARN)
        return;
    char buf[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    json_t *s = json_string(buf);
    json_array_append_new(p->warnings, s ? s : json_string("(warning not valid UTF-8)"));
}

static void plan_free(struct plan *p)
{
    if (p->have_src)
        sl_bck_release(&p->src);
    if (p->have_dst)
        sl_bck_release(&p->dst);
    if (p->cmap)
        sl_smap_put(p->cmap);
    for (int i = 0; i < p->no; i++)
        free(p->o[i].name);
    free(p->o);
    for (int i = 0; i < p->ns; i++) {
        free(p->s[i].key);
        free(p->s[i].m);
    }
    free(p->s);
    sm_free(&p->smap);
    free(p->order);
    for (int i = 0; i < p->nsh; i++)
        free(p->sh[i].name);
    free(p->sh);
    for (int i = 0; i < p->nfam; i++) {
        free(p->fam[i].tmpl);
        free(p->fam[i].seq);
    }
    free(p->fam);
    json_decref(p->warnings);
}

static uint64_t tar_bytes(size_t namelen, uint64_t size)
{
    return 512 + (namelen > 99 ? 1024 : 0) + (size + 511) / 512 * 512;
}

/* 1. the source listing */
static int plan_list(struct plan *p)
{
    struct sl_lsomsg lm;
    sl_lsomsg_names(&lm, p->m->prefix, true, 0, 10000);
    sl_format_gotime(sl_now_ns(), "2006-01-02T15:04:05Z07:00", p->listed_at, sizeof(p->listed_at));
    int rc = 0;
    for (int pages = 0; !sl_job_aborting(p->job); pages++) {
        struct sl_lspage pg;
        sl_lspage_init(&pg);
        if (sl_cluster_list_page(&p->src, &lm, &pg, &p->err) < 0) {
            sl_lspage_free(&pg);
            rc = -1;
            break;
        }
        for (int i = 0; i < pg.n; i++) {
            if (pg.ents[i].flags & SL_ENT_DIR)
                continue;
            if (p->no == p->capo) {
                p->capo = p->capo ? p->capo * 2 : 4096;
                p->o = sl_xrealloc(p->o, (size_t)p->capo * sizeof(*p->o));
            }
            struct pobj *o = &p->o[p->no++];
            memset(o, 0, sizeof(*o));
            o->name = sl_xstrndup(pg.ents[i].name, pg.ents[i].nlen);
            o->nlen = pg.ents[i].nlen;
            o->size = pg.ents[i].size;
            p->listed_bytes += o->size;
        }
        bool more = pg.token && pg.token[0];
        free(lm.token);
        lm.token = sl_xstrdup(more ? pg.token : "");
        sl_lspage_free(&pg);
        if (!more)
            break;
    }
    sl_lsomsg_free(&lm);
    if (rc == 0 && sl_job_aborting(p->job))
        rc = sl_errf(&p->err, SL_EINVAL, "aborted");
    if (rc == 0 && !p->no)
        rc = sl_errf(&p->err, SL_ENOENT, "ishard: the source ais://%s%s%s has no objects", p->src.name,
                     p->m->prefix[0] ? "/" : "", p->m->prefix);
    return rc;
}

static bool ext_eq(const char *a, size_t al, const char *b, size_t bl)
{
    return al == bl && !strncasecmp(a, b, al);
}

/* 2. samples by key */
static int plan_samples(struct plan *p)
{
    const char *cfg;
    const struct sl_plug *rule = key_rule(p->m->pattern, &cfg);
    struct sl_plug_key *k;
    if (!rule || sl_plug_key_new(rule, cfg, &k, &p->err) < 0)
        return -1;
    size_t cap = SL_MAX_OBJNAME + 2;
    char *kb = sl_xmalloc(cap);
    int rc = 0, nomatch = 0;
    for (int i = 0; i < p->no; i++) {
        struct pobj *o = &p->o[i];
        size_t kl, eo, el;
        uint32_t fl;
        if (sl_plug_key_apply(k, o->name, o->nlen, kb, cap, &kl, &eo, &el, &fl, &p->err) < 0) {
            rc = -1;
            break;
        }
        o->ext_off = eo;
        o->ext_len = el;
        struct sl_wds_split sp;
        sl_plugin_wds_split(o->name, o->nlen, &sp);
        if (fl & SL_KEY_F_NOMATCH)
            nomatch++;
        if ((fl & (SL_KEY_F_NOEXT | SL_KEY_F_NOSTEM)) || !kl) {
            p->skipped_noext++;
            plan_warn(p, "skipped %s: %s; WebDataset drops such files (give every file an extension)", o->name,
                      (fl & SL_KEY_F_NOSTEM) ? "its name starts with a dot" : !kl ? "its sample key is empty"
                                                                               : "it has no extension");
            continue;
        }
        if (memchr(o->name + sp.ext_off, '.', sp.ext_len)) {
            p->multidot++;
            const char *last = memrchr(o->name + sp.ext_off, '.', sp.ext_len);
            plan_warn(p, "%s: the extension starts at the first dot of the name: WebDataset reads key \"%.*s\" and "
                      "extension \"%.*s\" (not \"%s\")", o->name, (int)(sp.dir_len + sp.stem_len), o->name,
                      (int)sp.ext_len, o->name + sp.ext_off, last + 1);
        }
        int si = sm_get(&p->smap, kb, kl);
        if (si < 0) {
            if (p->ns == p->caps) {
                p->caps = p->caps ? p->caps * 2 : 4096;
                p->s = sl_xrealloc(p->s, (size_t)p->caps * sizeof(*p->s));
                /* the map borrows key memory: keys are separate allocations, still valid */
            }
            struct psample *s = &p->s[p->ns];
            memset(s, 0, sizeof(*s));
            s->key = sl_xstrndup(kb, kl);
            s->klen = kl;
            const char *sl = memrchr(s->key, '/', kl);
            s->dirlen = sl ? (size_t)(sl - s->key) : 0;
            si = p->ns++;
            sm_put(&p->smap, s->key, kl, si);
        }
        struct psample *s = &p->s[si];
        if (s->nm == s->capm) {
            s->capm = s->capm ? s->capm * 2 : 4;
            s->m = sl_xrealloc(s->m, (size_t)s->capm * sizeof(int));
        }
        s->m[s->nm++] = i;
    }
    free(kb);
    sl_plug_key_free(k);
    if (rc == 0 && nomatch) {
        bool word = strspn(p->m->pattern, "abcdefghijklmnopqrstuvwxyz_") == strlen(p->m->pattern);
        plan_warn(p, "the sample key pattern \"%s\" (a regular expression) matched %d of %d names; the others keep "
                  "their whole name (without extension) as their key%s", p->m->pattern, p->no - nomatch, p->no,
                  word ? ". Did you mean one of the built-in rules: base_name, full_name, collapse_all_dir?" : "");
    }
    return rc;
}

/* 3. extensions, collisions and member names */
static int plan_policy(struct plan *p)
{
    struct imsg *m = p->m;
    struct strmap used;             /* WebDataset keys of samples that keep their names */
    memset(&used, 0, sizeof(used));
    int rc = 0;
    for (int si = 0; si < p->ns && rc == 0; si++) {
        struct psample *s = &p->s[si];
        /* duplicate extensions (as WebDataset compares them: lower-cased) */
        for (int a = 0; a < s->nm && !s->drop; a++) {
            const struct pobj *oa = &p->o[s->m[a]];
            for (int b = a + 1; b < s->nm; b++) {
                const struct pobj *ob = &p->o[s->m[b]];
                if (!ext_eq(oa->name + oa->ext_off, oa->ext_len, ob->name + ob->ext_off, ob->ext_len))
                    continue;
                p->collisions++;
                if (m->collision == COL_ABORT && !m->dry_run) {
                    rc = sl_errf(&p->err, SL_EINVAL, "ishard: sample \"%s\" would hold two members with extension "
                                 "\"%.*s\" (%s and %s), which WebDataset cannot read back; nothing was written. "
                                 "Choose a sample key pattern that keeps them apart, or pass --ext-collision drop "
                                 "(skip such samples) or keep-first (API: ext_collision)", s->key, (int)oa->ext_len,
                                 oa->name + oa->ext_off, oa->name, ob->name);
                    break;
                }
                plan_warn(p, "sample \"%s\": %s and %s share the extension \"%.*s\"%s", s->key, oa->name, ob->name,
                          (int)oa->ext_len, oa->name + oa->ext_off,
                          m->collision == COL_DROP ? "; the sample is dropped"
                          : m->collision == COL_KEEP_FIRST ? "; only the first is kept"
                                                           : "; the real run refuses this unless --ext-collision is "
                                                             "drop or keep-first");
                if (m->collision == COL_DROP) {
                    s->drop = true;
                    p->dropped++;
                    break;
                }
                if (m->collision == COL_KEEP_FIRST) {
                    memmove(&s->m[b], &s->m[b + 1], (size_t)(s->nm - b - 1) * sizeof(int));
                    s->nm--;
                    b--;
                }
            }
        }
        if (rc || s->drop)
            continue;
        /* sample_exts */
        if (m->nexts) {
            for (int e = 0; e < m->nexts && !s->drop; e++) {
                bool have = false;
                for (int a = 0; a < s->nm; a++) {
                    const struct pobj *o = &p->o[s->m[a]];
                    if (ext_eq(o->name + o->ext_off, o->ext_len, m->exts[e], strlen(m->exts[e])))
                        have = true;
                }
                if (have)
                    continue;
                if (m->miss == MA_ABORT)
                    rc = sl_errf(&p->err, SL_EINVAL, "ishard: sample \"%s\" has no member with extension \".%s\" "
                                 "(missing_extension_action=abort; %s is one of its files)", s->key, m->exts[e],
                                 p->o[s->m[0]].name);
                else if (m->miss == MA_EXCLUDE)
                    s->drop = true;
                else if (m->miss == MA_WARN)
                    plan_warn(p, "sample \"%s\" has no \".%s\" member", s->key, m->exts[e]);
                if (!s->incomplete)
                    p->incomplete++;
                s->incomplete = true;
                if (rc)
                    break;
            }
            if (s->drop) {
                p->excluded++;
                continue;
            }
            for (int a = 0; a < s->nm && rc == 0; a++) {
                const struct pobj *o = &p->o[s->m[a]];
                bool want = false;
                for (int e = 0; e < m->nexts; e++)
                    if (ext_eq(o->name + o->ext_off, o->ext_len, m->exts[e], strlen(m->exts[e])))
                        want = true;
                if (want)
                    continue;
                if (m->miss == MA_ABORT) {
                    rc = sl_errf(&p->err, SL_EINVAL, "ishard: sample \"%s\" has an unexpected member %s (extension "
                                 "\"%.*s\" is not in sample_exts; missing_extension_action=abort)", s->key, o->name,
                                 (int)o->ext_len, o->name + o->ext_off);
                } else if (m->miss == MA_EXCLUDE) {
                    memmove(&s->m[a], &s->m[a + 1], (size_t)(s->nm - a - 1) * sizeof(int));
                    s->nm--;
                    a--;
                } else if (m->miss == MA_WARN) {
                    plan_warn(p, "sample \"%s\": %s has an extension not in sample_exts", s->key, o->name);
                }
            }
            if (rc)
                break;
            if (!s->nm) {
                s->drop = true;
                p->excluded++;
                continue;
            }
        }
        /* member names: their own when they already share one WebDataset key */
        struct sl_wds_split sp0;
        const struct pobj *o0 = &p->o[s->m[0]];
        sl_plugin_wds_split(o0->name, o0->nlen, &sp0);
        size_t wk = sp0.dir_len + sp0.stem_len;
        bool same = true;
        for (int a = 1; a < s->nm && same; a++) {
            const struct pobj *o = &p->o[s->m[a]];
            struct sl_wds_split sp;
            sl_plugin_wds_split(o->name, o->nlen, &sp);
            same = sp.dir_len + sp.stem_len == wk && !memcmp(o->name, o0->name, wk);
        }
        if (same && sm_get(&used, o0->name, wk) < 0) {
            sm_put(&used, o0->name, wk, si);
        } else {
            s->rename = true;
            p->renamed++;
            const char *base = s->dirlen ? s->key + s->dirlen + 1 : s->key;
            if (memchr(base, '.', s->klen - (size_t)(base - s->key)))
                plan_warn(p, "sample key \"%s\" has a dot in its last component: WebDataset will split the members' "
                          "names at it (use a sample_key_pattern without dots)", s->key);
        }
        uint64_t b = 0;
        for (int a = 0; a < s->nm; a++) {
            const struct pobj *o = &p->o[s->m[a]];
            b += tar_bytes(s->rename ? s->klen + 1 + o->ext_len : o->nlen, o->size);
        }
        s->bytes = b;
    }
    sm_free(&used);
    return rc;
}

/* fetch an object's bytes (EKM content), local or from its owner */
static int fetch_small(struct plan *p, const struct sl_smap *sm, const struct pobj *o, struct sl_buf *out)
{
    if (o->size > EKM_CONTENT_MAX)
        return sl_errf(&p->err, SL_ETOOBIG, "ishard: %s is %llu bytes, more than the %d an EKM may read", o->name,
                       (unsigned long long)o->size, EKM_CONTENT_MAX);
    const struct sl_snode *owner = NULL;
    if (G.role != SL_ROLE_STANDALONE) {
        struct sl_buf un;
        sl_buf_init(&un);
        sl_obj_uname(&un, p->src.provider, p->src.name, o->name, o->nlen);
        owner = sl_smap_hrw_target(sm, un.p, un.len);
        sl_buf_free(&un);
    }
    if (!owner || !strcmp(owner->id, G.id)) {
        int fd;
        struct sl_objmd md;
        if (sl_obj_open(&p->src, o->name, o->nlen, &fd, &md, NULL, &p->err) < 0)
            return -1;
        sl_buf_reserve(out, md.size + 1);
        ssize_t n = md.size ? pread(fd, out->p, md.size, 0) : 0;
        if (!out->p)
            sl_buf_adds(out, "");
        close(fd);
        sl_objmd_free(&md);
        if (n < 0)
            return sl_errf(&p->err, SL_EIO, "ishard: reading %s failed", o->name);
        out->len = (size_t)n;
        out->p[out->len] = 0;
        return 0;
    }
    char *enc = sl_url_encode_path(o->name, o->nlen);
    char *url = sl_xasprintf("%s/v1/objects/%s/%s?provider=ais", owner->data_url, p->src.name, enc);
    free(enc);
    struct sl_peer_resp r;
    int rc = sl_peer_call("GET", url, NULL, 0, NULL, 0, 0, &r);
    free(url);
    if (rc < 0 || r.status != 200) {
        sl_errf(&p->err, SL_EIO, "ishard: reading %s from t[%s]: %s", o->name, owner->id, r.err);
        sl_peer_resp_free(&r);
        return -1;
    }
    sl_buf_add(out, r.body.p ? r.body.p : "", r.body.len);
    sl_peer_resp_free(&r);
    return 0;
}

static int family_of(struct plan *p, const char *tmpl)
{
    for (int i = 0; i < p->nfam; i++)
        if (!strcmp(p->fam[i].tmpl, tmpl))
            return i;
    p->fam = sl_xrealloc(p->fam, (size_t)(p->nfam + 1) * sizeof(*p->fam));
    memset(&p->fam[p->nfam], 0, sizeof(*p->fam));
    p->fam[p->nfam].tmpl = sl_xstrdup(tmpl);
    return p->nfam++;
}

static void lua_log(void *ctx, const char *line, size_t len)
{
    (void)ctx;
    sl_logi("ishard EKM: %.*s", (int)SL_MIN(len, 500), line);
}

/* 4. EKM: sample -> family (shard template) */
static int plan_ekm(struct plan *p)
{
    struct imsg *m = p->m;
    if (!m->ekm && !m->ekm_lua) {
        family_of(p, m->tmpl);
        return 0;
    }
    struct ekm_rule *rules = NULL;
    int nr = 0;
    if (m->ekm && ekm_compile(m->ekm, &rules, &nr, &p->err) < 0)
        return -1;
    struct sl_smap *sm = sl_smap_get();
    struct sl_lua_limits lim;
    sl_lua_limits_default(&lim);
    int rc = 0;
    for (int si = 0; si < p->ns && rc == 0 && !sl_job_aborting(p->job); si++) {
        struct psample *s = &p->s[si];
        if (s->drop)
            continue;
        char *tmpl = NULL;
        if (rules) {
            int hit = -1;
            for (int r = 0; r < nr && rc == 0; r++)
                for (int k = 0; k < rules[r].nre; k++) {
                    if (regexec(&rules[r].re[k], s->key, 0, NULL, 0))
                        continue;
                    if (hit >= 0 && hit != r)
                        rc = sl_errf(&p->err, SL_EINVAL, "ishard: EKM: sample key \"%s\" matches rules of both \"%s\" "
                                     "and \"%s\"; each key must match one shard template", s->key, rules[hit].tmpl,
                                     rules[r].tmpl);
                    hit = r;
                    break;
                }
            if (hit >= 0)
                tmpl = sl_xstrdup(rules[hit].tmpl);
        } else {
            struct sl_lua_val smp = sl_lua_table();
            struct sl_buf *bodies = sl_xcalloc((size_t)s->nm, sizeof(struct sl_buf));
            sl_lua_table_adds(&smp, "__key__", sl_lua_str_ref(s->key, s->klen));
            uint64_t total = 0;
            for (int a = 0; a < s->nm && rc == 0; a++) {
                const struct pobj *o = &p->o[s->m[a]];
                total += o->size;
                bool content = false;
                for (int e = 0; e < m->nec; e++)
                    if (ext_eq(o->name + o->ext_off, o->ext_len, m->ekm_content[e], strlen(m->ekm_content[e])))
                        content = true;
                struct sl_lua_val key = sl_lua_str_ref(o->name + o->ext_off, o->ext_len);
                if (content) {
                    sl_buf_init(&bodies[a]);
                    if (fetch_small(p, sm, o, &bodies[a]) < 0)
                        rc = -1;
                    else
                        sl_lua_table_add(&smp, key, sl_lua_str_ref(bodies[a].p ? bodies[a].p : "", bodies[a].len));
                } else {
                    sl_lua_table_add(&smp, key, sl_lua_str_ref(o->name, o->nlen));
                }
            }
            sl_lua_table_adds(&smp, "__size__", sl_lua_num((double)total));
            struct sl_lua_val args[2] = { sl_lua_str_ref(s->key, s->klen), smp };
            struct sl_lua_val res = sl_lua_nil();
            if (rc == 0 && sl_lua_call("ekm", m->ekm_lua, strlen(m->ekm_lua), "shard_for", args, 2, &lim, lua_log,
                                       NULL, &res, &p->err) < 0) {
                sl_err_wrap(&p->err, "ishard: Lua EKM failed on sample \"%s\"", s->key);
                p->err.code = SL_EINVAL;
                rc = -1;
            } else if (rc == 0 && res.type == SL_LUA_STR && res.s.len) {
                tmpl = sl_xstrndup(res.s.p, res.s.len);
            } else if (rc == 0 && res.type != SL_LUA_NIL) {
                char d[64];
                rc = sl_errf(&p->err, SL_EINVAL, "ishard: Lua EKM: shard_for(\"%s\") returned %s; return a shard "
                             "template such as \"cats-%%04d\", or nil to skip the sample", s->key,
                             sl_lua_val_describe(&res, d, sizeof(d)));
            }
            sl_lua_val_free(&res);
            sl_lua_val_free(&smp);
            for (int a = 0; a < s->nm; a++)
                sl_buf_free(&bodies[a]);
            free(bodies);
            if (rc == 0 && tmpl) {
                struct sl_tmpl *tp;
                struct sl_err e2 = { 0 };
                if (sl_tmpl_parse(tmpl, &tp, &e2) < 0)
                    rc = sl_errf(&p->err, SL_EINVAL, "ishard: Lua EKM: shard_for(\"%s\") returned \"%s\": %s", s->key,
                                 tmpl, e2.msg);
                else if (!sl_tmpl_is_range(tp))
                    rc = sl_errf(&p->err, SL_EINVAL, "ishard: Lua EKM: shard_for(\"%s\") returned \"%s\", which has "
                                 "no counter (use e.g. \"%s-%%04d\")", s->key, tmpl, tmpl);
                if (rc == 0)
                    sl_tmpl_free(tp);
            }
        }
        if (rc) {
            free(tmpl);
            break;
        }
        if (!tmpl) {
            p->ekm_unmatched++;
            if (m->ekm_missing == MA_ABORT)
                rc = sl_errf(&p->err, SL_EINVAL, "ishard: EKM: sample key \"%s\" matches no rule "
                             "(ekm_missing_key=abort)", s->key);
            else if (m->ekm_missing == MA_WARN)
                plan_warn(p, "EKM: sample \"%s\" matches no rule; skipped", s->key);
            s->drop = true;
            continue;
        }
        s->family = family_of(p, tmpl);
        free(tmpl);
    }
    if (rc == 0 && sl_job_aborting(p->job))
        rc = sl_errf(&p->err, SL_EINVAL, "aborted");
    sl_smap_put(sm);
    ekm_free(rules, nr);
    sl_lua_thread_cleanup();
    return rc;
}

/* 5. order and pack */
static int key_cmp(const void *a, const void *b, void *arg)
{
    const struct plan *p = arg;
    const struct psample *x = &p->s[*(const int *)a], *y = &p->s[*(const int *)b];
    int c = memcmp(x->key, y->key, SL_MIN(x->klen, y->klen));
    if (!c)
        c = x->klen < y->klen ? -1 : x->klen > y->klen;
    return p->m->sort == SORT_DEC ? -c : c;
}

static uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static void emit_shard(struct plan *p, int family, int first, int count, uint64_t bytes)
{
    if (p->nsh == p->capsh) {
        p->capsh = p->capsh ? p->capsh * 2 : 256;
        p->sh = sl_xrealloc(p->sh, (size_t)p->capsh * sizeof(*p->sh));
    }
    struct pshard *h = &p->sh[p->nsh++];
    memset(h, 0, sizeof(*h));
    h->family = family;
    h->first = first;
    h->count = count;
    h->bytes = bytes + 1024; /* end-of-archive blocks */
}

static void order_push(struct plan *p, int si)
{
    if (p->norder == p->caporder) {
        p->caporder = p->caporder ? p->caporder * 2 : 4096;
        p->order = sl_xrealloc(p->order, (size_t)p->caporder * sizeof(int));
    }
    p->order[p->norder++] = si;
}

/* Pack v[0..n) (sample indexes) into shards; returns how many trailing
 * samples were left over (not emitted) when keep_rest, else 0. */
static int pack_seq(struct plan *p, int family, const int *v, int n, bool keep_rest)
{
    uint64_t acc = 0;
    int cnt = 0, start = p->norder;
    for (int i = 0; i < n; i++) {
        order_push(p, v[i]);
        acc += p->s[v[i]].bytes;
        cnt++;
        if (p->m->by_count ? (uint64_t)cnt >= p->m->shard_size : acc >= p->m->shard_size) {
            emit_shard(p, family, start, cnt, acc);
            start = p->norder;
            acc = 0;
            cnt = 0;
        }
    }
    if (cnt && !keep_rest) {
        emit_shard(p, family, start, cnt, acc);
        return 0;
    }
    p->norder -= cnt; /* the caller places the rest */
    return cnt;
}

/* directory tree for packing without EKM/sort */
struct dnode {
    const char *path;
    size_t plen;
    int *kids;
    int nkids, capk;
    int *smp;
    int nsmp, caps;
};

static int dir_node(struct plan *p, struct dnode **nodes, int *nn, int *cap, struct strmap *idx, const char *path,
                    size_t plen)
{
    int i = sm_get(idx, path, plen);
    if (i >= 0)
        return i;
    int parent = -1;
    if (plen) {
        const char *sl = memrchr(path, '/', plen);
        parent = dir_node(p, nodes, nn, cap, idx, path, sl ? (size_t)(sl - path) : 0);
    }
    if (*nn == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *nodes = sl_xrealloc(*nodes, (size_t)*cap * sizeof(**nodes));
    }
    struct dnode *d = &(*nodes)[*nn];
    memset(d, 0, sizeof(*d));
    d->path = path;
    d->plen = plen;
    i = (*nn)++;
    sm_put(idx, path, plen, i);
    if (parent >= 0) {
        struct dnode *pd = &(*nodes)[parent];
        if (pd->nkids == pd->capk) {
            pd->capk = pd->capk ? pd->capk * 2 : 4;
            pd->kids = sl_xrealloc(pd->kids, (size_t)pd->capk * sizeof(int));
        }
        pd->kids[pd->nkids++] = i;
    }
    return i;
}

static int dnode_cmp(const void *a, const void *b, void *arg)
{
    const struct dnode *n = arg;
    const struct dnode *x = &n[*(const int *)a], *y = &n[*(const int *)b];
    int c = memcmp(x->path, y->path, SL_MIN(x->plen, y->plen));
    return c ? c : x->plen < y->plen ? -1 : x->plen > y->plen;
}

/* Depth-first: a directory's own samples, then its subdirectories; with
 * collapse, what does not fill a shard moves up to the parent. Returns the
 * leftover samples (collapse) in *rest. */
static void pack_dir(struct plan *p, struct dnode *nodes, int i, int **rest, int *nrest)
{
    struct dnode *d = &nodes[i];
    if (d->nsmp)
        qsort_r(d->smp, (size_t)d->nsmp, sizeof(int), key_cmp, p);
    if (d->nkids)
        qsort_r(d->kids, (size_t)d->nkids, sizeof(int), dnode_cmp, nodes);
    int *items = sl_xmalloc(((size_t)d->nsmp + 1) * sizeof(int));
    int ni = d->nsmp;
    if (d->nsmp)
        memcpy(items, d->smp, (size_t)d->nsmp * sizeof(int));
    int left = pack_seq(p, 0, items, ni, p->m->collapse && i != 0);
    int *carry = sl_xmalloc(((size_t)left + 1) * sizeof(int));
    int nc = left;
    memcpy(carry, items + ni - left, (size_t)left * sizeof(int));
    free(items);
    for (int k = 0; k < d->nkids; k++) {
        int *r = NULL, nr = 0;
        pack_dir(p, nodes, d->kids[k], &r, &nr);
        if (nr) {
            carry = sl_xrealloc(carry, ((size_t)nc + (size_t)nr + 1) * sizeof(int));
            memcpy(carry + nc, r, (size_t)nr * sizeof(int));
            nc += nr;
        }
        free(r);
    }
    /* leftovers of this directory and its children, collapsed */
    int l2 = nc ? pack_seq(p, 0, carry, nc, i != 0) : 0;
    if (l2) {
        *rest = sl_xmalloc((size_t)l2 * sizeof(int));
        memcpy(*rest, carry + nc - l2, (size_t)l2 * sizeof(int));
        *nrest = l2;
    }
    free(carry);
}

static void plan_pack(struct plan *p)
{
    struct imsg *m = p->m;
    if (!m->ekm && !m->ekm_lua && m->sort == SORT_NONE) {
        struct dnode *nodes = NULL;
        int nn = 0, cap = 0;
        struct strmap idx;
        memset(&idx, 0, sizeof(idx));
        dir_node(p, &nodes, &nn, &cap, &idx, "", 0);
        for (int si = 0; si < p->ns; si++) {
            struct psample *s = &p->s[si];
            if (s->drop)
                continue;
            int di = dir_node(p, &nodes, &nn, &cap, &idx, s->key, s->dirlen);
            struct dnode *d = &nodes[di];
            if (d->nsmp == d->caps) {
                d->caps = d->caps ? d->caps * 2 : 16;
                d->smp = sl_xrealloc(d->smp, (size_t)d->caps * sizeof(int));
            }
            d->smp[d->nsmp++] = si;
        }
        int *rest = NULL, nr = 0;
        pack_dir(p, nodes, 0, &rest, &nr);
        free(rest);
        for (int i = 0; i < nn; i++) {
            free(nodes[i].kids);
            free(nodes[i].smp);
        }
        free(nodes);
        sm_free(&idx);
        return;
    }
    for (int si = 0; si < p->ns; si++) {
        if (p->s[si].drop)
            continue;
        struct family *f = &p->fam[p->s[si].family];
        if (f->nseq == f->capseq) {
            f->capseq = f->capseq ? f->capseq * 2 : 256;
            f->seq = sl_xrealloc(f->seq, (size_t)f->capseq * sizeof(int));
        }
        f->seq[f->nseq++] = si;
    }
    uint64_t rng = m->seed;
    for (int fi = 0; fi < p->nfam; fi++) {
        struct family *f = &p->fam[fi];
        if (m->sort == SORT_SHUFFLE) {
            for (int i = f->nseq - 1; i > 0; i--) {
                int j = (int)(splitmix(&rng) % (uint64_t)(i + 1));
                int t = f->seq[i];
                f->seq[i] = f->seq[j];
                f->seq[j] = t;
            }
        } else if (f->nseq) {
            qsort_r(f->seq, (size_t)f->nseq, sizeof(int), key_cmp, p);
        }
        pack_seq(p, fi, f->seq, f->nseq, false);
    }
}

/* 6. names and owners */
static int plan_names(struct plan *p)
{
    struct sl_tmpl **t = sl_xcalloc((size_t)p->nfam + 1, sizeof(*t));
    int rc = 0;
    for (int fi = 0; fi < p->nfam && rc == 0; fi++)
        if (sl_tmpl_parse(p->fam[fi].tmpl, &t[fi], &p->err) < 0)
            rc = -1;
    struct strmap seen;
    memset(&seen, 0, sizeof(seen));
    struct sl_smap *sm = sl_smap_get();
    struct sl_buf b, un;
    sl_buf_init(&b);
    sl_buf_init(&un);
    for (int i = 0; i < p->nsh && rc == 0; i++) {
        struct pshard *h = &p->sh[i];
        struct family *f = &p->fam[h->family];
        if (f->next >= sl_tmpl_count(t[h->family])) {
            rc = sl_errf(&p->err, SL_EINVAL, "ishard: shard template \"%s\" yields %llu names, fewer than the shards "
                         "this dataset needs; widen its range or raise shard_size", f->tmpl,
                         (unsigned long long)sl_tmpl_count(t[h->family]));
            break;
        }
        sl_tmpl_at(t[h->family], f->next++, &b);
        const struct sl_plug *fmt = sl_arch_format_by_name(b.p, b.len);
        if (!fmt || !(sl_plug_caps(fmt) & SL_FMT_CAP_WRITE))
            sl_buf_adds(&b, p->m->ext);
        h->name = sl_xstrndup(b.p, b.len);
        if (sm_get(&seen, h->name, b.len) >= 0) {
            rc = sl_errf(&p->err, SL_EINVAL, "ishard: two shards would be named \"%s\" (EKM templates overlap); give "
                         "each family its own template", h->name);
            break;
        }
        sm_put(&seen, h->name, b.len, i);
        if (G.role != SL_ROLE_STANDALONE) {
            sl_buf_reset(&un);
            sl_obj_uname(&un, p->dst.provider, p->dst.name, h->name, b.len);
            h->owner = sl_smap_hrw_target(sm, un.p, un.len);
            if (!h->owner)
                rc = sl_errf(&p->err, SL_EUNAVAIL, "ishard: the cluster has no active targets");
            else if (h->owner->flags & SL_SNF_OFFLINE)
                rc = sl_errf(&p->err, SL_EUNAVAIL, "ishard: t[%s], owner of shard %s, is not responding",
                             h->owner->id, h->name);
        }
    }
    sl_buf_free(&b);
    sl_buf_free(&un);
    sm_free(&seen);
    for (int fi = 0; fi < p->nfam; fi++)
        sl_tmpl_free(t[fi]);
    free(t);
    p->cmap = sm; /* owners point into it: released with the plan */
    return rc;
}

static json_t *plan_report(struct plan *p)
{
    json_t *r = json_object();
    char buf[64];
    json_object_set_new(r, "src", json_string(p->src.name));
    json_object_set_new(r, "src_prefix", json_string(p->m->prefix));
    json_object_set_new(r, "dst", json_string(p->dst.name));
    json_object_set_new(r, "listed", json_pack("{s:I,s:I,s:s}", "objects", (json_int_t)p->no, "bytes",
                                               (json_int_t)p->listed_bytes, "at", p->listed_at));
    int nsmp = 0;
    uint64_t bytes = 0;
    for (int i = 0; i < p->nsh; i++) {
        nsmp += p->sh[i].count;
        bytes += p->sh[i].bytes;
    }
    json_object_set_new(r, "samples", json_integer(nsmp));
    json_object_set_new(r, "shards", json_integer(p->nsh));
    json_object_set_new(r, "bytes", json_integer((json_int_t)bytes));
    json_object_set_new(r, "skipped", json_pack("{s:I,s:I,s:I,s:I}", "no_extension", (json_int_t)p->skipped_noext,
                                                "excluded_samples", (json_int_t)p->excluded, "ekm_unmatched",
                                                (json_int_t)p->ekm_unmatched, "collision_samples",
                                                (json_int_t)p->dropped));
    json_object_set_new(r, "incomplete_samples", json_integer((json_int_t)p->incomplete));
    json_object_set_new(r, "ext_collisions", json_integer((json_int_t)p->collisions));
    json_object_set_new(r, "multi_dot_names", json_integer((json_int_t)p->multidot));
    json_object_set_new(r, "renamed_samples", json_integer((json_int_t)p->renamed));
    json_object_set_new(r, "warnings", json_incref(p->warnings));
    json_object_set_new(r, "warnings_total", json_integer((json_int_t)p->nwarn));
    /* shard sizes: power-of-two buckets */
    json_t *h = json_array();
    uint64_t lo = 0;
    for (uint64_t le = 64 * 1024; lo < UINT64_MAX / 2; le *= 2) {
        int c = 0;
        for (int i = 0; i < p->nsh; i++)
            if (p->sh[i].bytes > lo && p->sh[i].bytes <= le)
                c++;
        if (c) {
            sl_format_size(le, buf, sizeof(buf));
            json_array_append_new(h, json_pack("{s:s,s:i}", "le", buf, "shards", c));
        }
        lo = le;
        if (le > bytes * 2 + 1)
            break;
    }
    json_object_set_new(r, "histogram", h);
    if (p->nfam > 1 || p->m->ekm || p->m->ekm_lua) {
        json_t *fo = json_object();
        for (int fi = 0; fi < p->nfam; fi++) {
            int ns = 0, nsamp = 0;
            for (int i = 0; i < p->nsh; i++)
                if (p->sh[i].family == fi) {
                    ns++;
                    nsamp += p->sh[i].count;
                }
            json_object_set_new(fo, p->fam[fi].tmpl, json_pack("{s:i,s:i}", "shards", ns, "samples", nsamp));
        }
        json_object_set_new(r, "families", fo);
    }
    json_object_set_new(r, "msg", imsg_json(p->m));
    if (p->m->dry_run) {
        json_t *pl = json_array();
        for (int i = 0; i < p->nsh && i < 100000; i++) {
            struct pshard *s = &p->sh[i];
            json_t *o = json_pack("{s:s,s:i,s:I}", "name", s->name ? s->name : "", "samples", s->count, "size",
                                  (json_int_t)s->bytes);
            if (s->owner)
                json_object_set_new(o, "target", json_string(s->owner->id));
            if (p->m->dry_run == 2) {
                json_t *k = json_array();
                for (int j = 0; j < s->count && j < MAX_PLAN_KEYS; j++) {
                    const struct psample *sm = &p->s[p->order[s->first + j]];
                    json_t *ks = json_stringn(sm->key, sm->klen);
                    json_array_append_new(k, ks ? ks : json_string("?"));
                }
                json_object_set_new(o, "keys", k);
            }
            json_array_append_new(pl, o);
        }
        json_object_set_new(r, "plan", pl);
    }
    return r;
}

/* the member list of one shard: [[object, member name], ...] */
static int ext_cmp(const void *a, const void *b, void *arg)
{
    const struct plan *p = arg;
    const struct pobj *x = &p->o[*(const int *)a], *y = &p->o[*(const int *)b];
    int c = memcmp(x->name + x->ext_off, y->name + y->ext_off, SL_MIN(x->ext_len, y->ext_len));
    return c ? c : x->ext_len < y->ext_len ? -1 : x->ext_len > y->ext_len;
}

static json_t *shard_members(const struct plan *p, const struct pshard *h)
{
    json_t *a = json_array();
    struct sl_buf b;
    sl_buf_init(&b);
    for (int j = 0; j < h->count; j++) {
        const struct psample *s = &p->s[p->order[h->first + j]];
        if (s->rename) /* as webdataset's writer: members in the order of their extensions */
            qsort_r(s->m, (size_t)s->nm, sizeof(int), ext_cmp, (void *)p);
        for (int k = 0; k < s->nm; k++) {
            const struct pobj *o = &p->o[s->m[k]];
            json_t *on = json_stringn(o->name, o->nlen);
            json_t *en;
            if (s->rename) {
                sl_buf_reset(&b);
                sl_buf_add(&b, s->key, s->klen);
                sl_buf_addc(&b, '.');
                sl_buf_add(&b, o->name + o->ext_off, o->ext_len);
                en = json_stringn(b.p, b.len);
            } else {
                en = json_incref(on);
            }
            json_array_append_new(a, json_pack("[ooI]", on, en, (json_int_t)o->size));
        }
    }
    sl_buf_free(&b);
    return a;
}

/* ------------------------------------------------------------------ */
/* building (every owner)                                             */
/* ------------------------------------------------------------------ */

struct bshard {
    char *name;
    json_t *members;
};

struct builder {
    struct sl_job *job;
    struct sl_bck src, dst;
    struct bshard *sh;
    int nsh;
    int next;                   /* next shard to build */
    char **done;                /* committed shard names (removed on failure/abort) */
    int ndone;
    json_t *vanished;
    uint64_t nvanished;
    pthread_mutex_t mu;
    char err[1024];
};

static void builder_free(struct builder *b)
{
    for (int i = 0; i < b->nsh; i++) {
        free(b->sh[i].name);
        json_decref(b->sh[i].members);
    }
    free(b->sh);
    free_strv(b->done, b->ndone);
    json_decref(b->vanished);
    sl_bck_release(&b->src);
    sl_bck_release(&b->dst);
    pthread_mutex_destroy(&b->mu);
    sl_job_put(b->job);
    free(b);
}

static int64_t put_write(void *ctx, const void *buf, size_t n)
{
    void **c = ctx;
    return sl_put_write(c[0], buf, n, c[1]) < 0 ? -1 : (int64_t)n;
}

static int build_one(struct builder *b, struct bshard *h, const struct sl_smap *sm, char *buf, struct sl_err *err)
{
    size_t nl = strlen(h->name);
    const struct sl_plug *fmt = sl_arch_format_by_name(h->name, nl);
    if (!fmt)
        return sl_errf(err, SL_EINVAL, "ishard: no format for %s", h->name);
    struct sl_put_opts o = { .client_cktype = -1, .expect_size = -1 };
    struct sl_put *put;
    if (sl_put_begin(&b->dst, h->name, nl, &o, &put, err) < 0)
        return -1;
    void *ctx[2] = { put, err };
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), &b->dst, h->name, nl);
    struct sl_io io = { SL_ABI_INIT(struct sl_io), .ctx = ctx, .write = put_write, .name = cn };
    struct sl_plug_writer *w;
    if (sl_plug_writer_open(fmt, &io, 0, &w, err) < 0) {
        sl_put_abort(put);
        return -1;
    }
    int rc = 0;
    size_t nm = json_array_size(h->members);
    struct sl_shard_fetch *pf = sl_xcalloc(PREFETCH, sizeof(*pf));
    int *slot = sl_xcalloc(PREFETCH, sizeof(int));
    for (size_t base = 0; base < nm && rc == 0; base += PREFETCH) {
        /* small members on other targets: fetched together, then written in order */
        size_t end = SL_MIN(nm, base + PREFETCH);
        int np = 0;
        for (size_t i = base; i < end; i++) {
            json_t *mb = json_array_get(h->members, i);
            slot[i - base] = -1;
            if (json_integer_value(json_array_get(mb, 2)) > PREFETCH_MAX)
                continue;
            pf[np].obj = json_string_value(json_array_get(mb, 0));
            pf[np].olen = json_string_length(json_array_get(mb, 0));
            sl_buf_init(&pf[np].body);
            slot[i - base] = np++;
        }
        sl_shard_prefetch(&b->src, pf, np, sm);
        for (size_t i = base; i < end && rc == 0; i++) {
            if (sl_job_aborting(b->job)) {
                rc = sl_errf(err, SL_EINVAL, "aborted");
                break;
            }
            json_t *mb = json_array_get(h->members, i);
            json_t *on = json_array_get(mb, 0), *en = json_array_get(mb, 1);
            struct sl_shard_fetch *x = slot[i - base] >= 0 ? &pf[slot[i - base]] : NULL;
            struct sl_err e2 = { 0 };
            int r2;
            if (x && x->remote && x->status == 200)
                r2 = sl_shard_add_bytes(w, json_string_value(en), json_string_length(en), x->body.p ? x->body.p : "",
                                        x->body.len, b->job, &e2);
            else if (x && x->remote && x->status == 404)
                r2 = sl_errf(&e2, SL_ENOOBJ, "%s does not exist", x->obj);
            else if (x && x->remote)
                r2 = sl_errf(&e2, SL_EIO, "fetching %s: %s", x->obj, x->err);
            else
                r2 = sl_shard_add_object(w, &b->src, json_string_value(on), json_string_length(on),
                                         json_string_value(en), json_string_length(en), sm, buf, CHUNK, b->job, &e2);
            if (r2 < 0 && e2.code == SL_ENOOBJ) {
                /* listed, gone since: the shard goes without it, the report says so */
                pthread_mutex_lock(&b->mu);
                b->nvanished++;
                if (json_array_size(b->vanished) < MAX_WARN)
                    json_array_append(b->vanished, on);
                pthread_mutex_unlock(&b->mu);
            } else if (r2 < 0) {
                *err = e2;
                rc = -1;
            }
        }
        for (int j = 0; j < np; j++)
            sl_buf_free(&pf[j].body);
    }
    free(pf);
    free(slot);
    if (rc == 0 && sl_plug_writer_finish(w, err) < 0)
        rc = -1;
    sl_plug_writer_close(w);
    uint64_t sz = sl_put_size(put);
    if (rc == 0 && sl_put_commit(put, NULL, err) < 0)
        return -1;
    if (rc < 0) {
        sl_put_abort(put);
        return -1;
    }
    sl_arch_after_put(&b->dst, h->name, nl);
    sl_job_add(&b->job->out_objs, 1);
    sl_job_add(&b->job->out_bytes, sz);
    pthread_mutex_lock(&b->mu);
    b->done = sl_xrealloc(b->done, (size_t)(b->ndone + 1) * sizeof(char *));
    b->done[b->ndone++] = sl_xstrdup(h->name);
    pthread_mutex_unlock(&b->mu);
    return 0;
}

static void *build_worker(void *arg)
{
    struct builder *b = arg;
    char *buf = sl_xmalloc(CHUNK);
    struct sl_smap *sm = sl_smap_get();
    for (;;) {
        pthread_mutex_lock(&b->mu);
        int i = b->err[0] || sl_job_aborting(b->job) ? b->nsh : b->next++;
        pthread_mutex_unlock(&b->mu);
        if (i >= b->nsh)
            break;
        struct sl_err err = { 0 };
        if (build_one(b, &b->sh[i], sm, buf, &err) < 0) {
            pthread_mutex_lock(&b->mu);
            bool first = !b->err[0];
            if (first && strcmp(err.msg, "aborted"))
                snprintf(b->err, sizeof(b->err), "ishard: shard %.200s: %.800s", b->sh[i].name, err.msg);
            pthread_mutex_unlock(&b->mu);
            if (first && strcmp(err.msg, "aborted")) {
                sl_job_abort(b->job->id, NULL);
                sl_cluster_abort_job(b->job->id);
            }
            break;
        }
    }
    sl_smap_put(sm);
    free(buf);
    return NULL;
}

/* Build every shard of b; on failure or abort remove the shards written.
 * Finishes the job (ext merged into what is there) and frees b. */
static void build_run(struct builder *b, json_t *ext)
{
    pthread_t th[BUILD_WORKERS];
    int n = 0;
    for (int i = 0; i < BUILD_WORKERS && i < b->nsh; i++)
        if (pthread_create(&th[n], NULL, build_worker, b) == 0)
            n++;
    if (!n && b->nsh)
        snprintf(b->err, sizeof(b->err), "ishard: cannot start worker threads");
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    bool failed = b->err[0] || sl_job_aborting(b->job);
    if (failed) {
        for (int i = 0; i < b->ndone; i++) {
            struct sl_err e2 = { 0 };
            sl_obj_delete(&b->dst, b->done[i], strlen(b->done[i]), &e2);
        }
        if (b->ndone)
            sl_logi("ishard %s: removed the %d shard(s) this target had written", b->job->id, b->ndone);
    }
    if (!ext)
        ext = json_object();
    json_object_set_new(ext, "build", json_pack("{s:i,s:i,s:I,s:O,s:i}", "shards", b->nsh, "written",
                                                failed ? 0 : b->ndone, "vanished", (json_int_t)b->nvanished,
                                                "vanished_objects", b->vanished, "removed", failed ? b->ndone : 0));
    sl_job_set_ext(b->job, ext);
    const char *msg = b->err[0] ? b->err : sl_job_aborting(b->job) ? "aborted" : NULL;
    sl_logi("ishard %s: %s (%d shard(s), %llu bytes%s)", b->job->id, msg ? msg : "built", failed ? 0 : b->ndone,
            (unsigned long long)b->job->out_bytes, b->nvanished ? ", some listed objects had vanished" : "");
    sl_job_finish(b->job, msg);
    builder_free(b);
}

static struct builder *builder_new(struct sl_job *job, const char *src, const char *dst, json_t *shards,
                                   struct sl_err *err)
{
    struct builder *b = sl_xcalloc(1, sizeof(*b));
    pthread_mutex_init(&b->mu, NULL);
    b->vanished = json_array();
    b->job = job;
    if (sl_bck_resolve(src, "ais", NULL, &b->src, err) < 0) {
        b->job = NULL;
        pthread_mutex_destroy(&b->mu);
        json_decref(b->vanished);
        free(b);
        return NULL;
    }
    if (sl_bck_resolve(dst, "ais", NULL, &b->dst, err) < 0) {
        sl_bck_release(&b->src);
        pthread_mutex_destroy(&b->mu);
        json_decref(b->vanished);
        free(b);
        return NULL;
    }
    b->sh = sl_xcalloc(json_array_size(shards) + 1, sizeof(*b->sh));
    size_t i;
    json_t *x;
    json_array_foreach(shards, i, x) {
        b->sh[b->nsh].name = sl_xstrdup(sl_json_str(x, "name", ""));
        b->sh[b->nsh].members = json_incref(json_object_get(x, "members"));
        b->nsh++;
    }
    return b;
}

static void *build_thread(void *arg)
{
    build_run(arg, NULL);
    return NULL;
}

/* target: POST /v1/internal/ishard/build {"id","src","dst","shards":[...]} */
static void internal_build_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    if (!json_is_object(j)) {
        json_decref(j);
        sl_resp_err(r, &err);
        return;
    }
    const char *id = sl_json_str(j, "id", "");
    struct sl_job *job = sl_job_start("ishard", id, sl_json_str(j, "src", ""), sl_json_str(j, "dst", ""));
    struct builder *b = builder_new(job, sl_json_str(j, "src", ""), sl_json_str(j, "dst", ""),
                                    json_object_get(j, "shards"), &err);
    if (!b) {
        sl_job_finish(job, err.msg);
        sl_job_put(job);
        sl_resp_err(r, &err);
    } else {
        pthread_t t;
        if (pthread_create(&t, NULL, build_thread, b) != 0) {
            snprintf(b->err, sizeof(b->err), "cannot start a thread");
            build_run(b, NULL);
            sl_resp_errf(r, SL_EINTERNAL, "ishard: cannot start a thread");
        } else {
            pthread_detach(t);
            sl_resp_empty(r, 200);
        }
    }
    json_decref(j);
}


/* ------------------------------------------------------------------ */
/* the coordinator                                                    */
/* ------------------------------------------------------------------ */

struct coord {
    struct imsg m;
    struct sl_job *job;
};

static int edit_create(struct sl_bmd *b, void *arg, struct sl_err *err)
{
    const char *name = arg;
    if (sl_bmd_find(b, "ais", name))
        return 0;
    return sl_bmd_add(b, "ais", name, NULL, err) ? 0 : -1;
}

/* Create the destination through the primary (or here, standalone). */
static int create_dst(const char *name, struct sl_err *err)
{
    if (G.role == SL_ROLE_STANDALONE)
        return sl_bmd_modify(edit_create, (void *)name, err);
    struct sl_smap *s = sl_smap_get();
    const struct sl_snode *pr = sl_smap_primary(s);
    int rc = 0;
    if (!pr) {
        rc = sl_errf(err, SL_EUNAVAIL, "ishard: no primary proxy to create ais://%s", name);
    } else {
        char *url = sl_xasprintf("%s/v1/buckets/%s?provider=ais", pr->ctrl_url, name);
        struct sl_peer_resp r;
        int prc = sl_peer_json("POST", url, json_pack("{s:s}", "action", "create-bck"), 0, &r);
        if (prc < 0 || (r.status != 200 && r.status != 409))
            rc = sl_errf(err, prc < 0 ? SL_EUNAVAIL : sl_code_from_status((int)r.status),
                         "ishard: creating the destination ais://%s: %s", name, r.err);
        sl_peer_resp_free(&r);
        free(url);
    }
    sl_smap_put(s);
    return rc;
}

/* Send every owner its shards; the coordinator's own share is returned. */
static int dispatch(struct plan *p, json_t **mine, struct sl_err *err)
{
    *mine = json_array();
    if (G.role == SL_ROLE_STANDALONE) {
        for (int i = 0; i < p->nsh; i++)
            json_array_append_new(*mine, json_pack("{s:s,s:o}", "name", p->sh[i].name, "members",
                                                   shard_members(p, &p->sh[i])));
        return 0;
    }
    struct sl_smap *s = sl_smap_get();
    int rc = 0;
    for (int t = 0; t < s->nnodes && rc == 0; t++) {
        const struct sl_snode *x = &s->nodes[t];
        if (x->type != SL_NODE_TARGET)
            continue;
        json_t *arr = !strcmp(x->id, G.id) ? *mine : json_array();
        for (int i = 0; i < p->nsh; i++)
            if (p->sh[i].owner && !strcmp(p->sh[i].owner->id, x->id))
                json_array_append_new(arr, json_pack("{s:s,s:o}", "name", p->sh[i].name, "members",
                                                     shard_members(p, &p->sh[i])));
        if (arr == *mine)
            continue;
        if (!json_array_size(arr)) {
            json_decref(arr);
            continue;
        }
        json_t *body = json_pack("{s:s,s:s,s:s,s:o}", "id", p->job->id, "src", p->src.name, "dst", p->dst.name,
                                 "shards", arr);
        char *url = sl_xasprintf("%s/v1/internal/ishard/build", x->ctrl_url);
        struct sl_peer_resp pr;
        int prc = sl_peer_json("POST", url, body, 0, &pr);
        if (prc < 0 || pr.status != 200)
            rc = sl_errf(err, prc < 0 ? SL_EUNAVAIL : sl_code_from_status((int)pr.status),
                         "ishard: handing shards to t[%s]: %s", x->id, pr.err);
        sl_peer_resp_free(&pr);
        free(url);
    }
    sl_smap_put(s);
    return rc;
}

static void *coord_main(void *arg)
{
    struct coord *c = arg;
    struct plan p;
    memset(&p, 0, sizeof(p));
    p.m = &c->m;
    p.job = c->job;
    p.warnings = json_array();
    int rc = sl_bck_resolve(c->m.src, "ais", NULL, &p.src, &p.err);
    bool need_create = false;
    p.have_src = rc == 0;
    if (rc == 0) {
        if (sl_bck_resolve(c->m.dst, "ais", NULL, &p.dst, &p.err) == 0) {
            p.have_dst = true;
        } else if (p.err.code == SL_ENOBCK) {
            /* created once there is something to write (never by a dry run
             * or a job that fails while planning) */
            sl_bck_copy(&p.dst, &p.src);
            snprintf(p.dst.name, sizeof(p.dst.name), "%s", c->m.dst);
            p.have_dst = true;
            need_create = true;
            p.err.msg[0] = 0;
        } else {
            rc = -1;
        }
    }
    int64_t t0 = sl_mono_ns();
    if (rc == 0)
        rc = plan_list(&p);
    const char *pause = getenv("SHALE_TEST_ISHARD_PAUSE_MS"); /* tests: change the source after the listing */
    if (rc == 0 && pause)
        sl_sleep_ms(atoi(pause));
    if (rc == 0 && c->m.dst_not_empty)
        plan_warn(&p, "the destination ais://%s is not empty: the real run is refused unless --overwrite is given",
                  c->m.dst);
    if (rc == 0)
        rc = plan_samples(&p);
    if (rc == 0)
        rc = plan_policy(&p);
    if (rc == 0)
        rc = plan_ekm(&p);
    if (rc == 0) {
        plan_pack(&p);
        rc = plan_names(&p);
    }
    if (rc == 0 && !p.nsh)
        rc = sl_errf(&p.err, SL_ENOENT, "ishard: no samples remain to be sharded (%llu skipped without extension, "
                     "%llu excluded, %llu unmatched by the EKM)", (unsigned long long)p.skipped_noext,
                     (unsigned long long)p.excluded, (unsigned long long)p.ekm_unmatched);
    json_t *ext = json_object();
    if (rc == 0 || p.no) {
        json_t *rep = plan_report(&p);
        json_object_set_new(rep, "plan_ms", json_integer((sl_mono_ns() - t0) / 1000000));
        json_object_set_new(ext, "report", rep);
    }
    json_object_set_new(ext, "coordinator", json_true());
    sl_job_set_ext(c->job, json_deep_copy(ext)); /* the report is visible while the shards are written */
    sl_logi("ishard %s: planned %d shard(s) from %d object(s) in %lld ms%s%s", c->job->id, p.nsh, p.no,
            (long long)((sl_mono_ns() - t0) / 1000000), rc ? ": " : "", rc ? p.err.msg : "");
    if (rc < 0 || c->m.dry_run) {
        sl_job_set_ext(c->job, ext);
        sl_job_finish(c->job, rc < 0 ? p.err.msg : NULL);
        sl_job_put(c->job);
        plan_free(&p);
    } else {
        json_t *mine = NULL;
        struct sl_err err = { 0 };
        char failed[1024] = "";
        if (need_create && create_dst(c->m.dst, &err) < 0) {
            snprintf(failed, sizeof(failed), "%s", err.msg);
            mine = json_array();
        } else if (dispatch(&p, &mine, &err) < 0) {
            /* owners that started are stopped and remove what they wrote */
            sl_job_abort(c->job->id, NULL);
            sl_cluster_abort_job(c->job->id);
            json_decref(mine);
            mine = json_array();
            snprintf(failed, sizeof(failed), "%s", err.msg);
        }
        plan_free(&p);
        struct builder *b = builder_new(c->job, c->m.src, c->m.dst, mine, &err);
        json_decref(mine);
        if (!b) {
            sl_job_set_ext(c->job, ext);
            sl_job_finish(c->job, err.msg);
            sl_job_put(c->job);
        } else {
            if (failed[0])
                snprintf(b->err, sizeof(b->err), "%s", failed);
            build_run(b, ext);
        }
    }
    imsg_free(&c->m);
    free(c);
    return NULL;
}

/* target: POST /v1/internal/ishard/plan {"id","msg"} */
static void internal_plan_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    struct coord *c = sl_xcalloc(1, sizeof(*c));
    if (!json_is_object(j) || imsg_parse(json_object_get(j, "msg"), &c->m, &err) < 0) {
        if (!err.msg[0])
            sl_errf(&err, SL_EINVAL, "internal ishard: bad body");
        imsg_free(&c->m);
        free(c);
        json_decref(j);
        sl_resp_err(r, &err);
        return;
    }
    c->job = sl_job_start("ishard", sl_json_str(j, "id", ""), c->m.src, c->m.dst);
    json_decref(j);
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 8 * SL_MIB); /* the Lua EKM runs here */
    if (pthread_create(&t, &a, coord_main, c) != 0) {
        sl_job_finish(c->job, "cannot start a thread");
        sl_job_put(c->job);
        imsg_free(&c->m);
        free(c);
        sl_resp_errf(r, SL_EINTERNAL, "ishard: cannot start a thread");
    } else {
        pthread_detach(t);
        sl_resp_empty(r, 200);
    }
    pthread_attr_destroy(&a);
}

bool sl_ishard_internal(struct sl_req *r)
{
    bool plan = !strcmp(r->path, "/v1/internal/ishard/plan"), build = !strcmp(r->path, "/v1/internal/ishard/build");
    if (!plan && !build)
        return false;
    if (r->method != SL_M_POST)
        sl_resp_method_not_allowed(r, "POST");
    else if (!sl_is_target())
        sl_resp_errf(r, SL_EINVAL, "%s is not a storage target", G.name);
    else
        sl_req_buffer_body(r, 1024 * SL_MIB, plan ? internal_plan_done : internal_build_done);
    return true;
}

/* ------------------------------------------------------------------ */
/* the gateway                                                        */
/* ------------------------------------------------------------------ */

/* 1 if the bucket holds at least one object, 0 if empty, -1 error */
static int has_objects(const struct sl_bck *b, const char *prefix, struct sl_err *err)
{
    struct sl_lsomsg lm;
    sl_lsomsg_names(&lm, prefix, false, 0, 1);
    struct sl_lspage pg;
    sl_lspage_init(&pg);
    int rc = sl_cluster_list_page(b, &lm, &pg, err) < 0 ? -1 : pg.n > 0;
    sl_lspage_free(&pg);
    sl_lsomsg_free(&lm);
    return rc;
}

static void start_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    struct imsg m;
    json_t *j = sl_req_body_json(r, &err);
    if (!j || imsg_parse(j, &m, &err) < 0) {
        if (j)
            imsg_free(&m);
        json_decref(j);
        sl_resp_err(r, &err);
        return;
    }
    json_decref(j);
    struct sl_bck sb, db;
    int rc = sl_bck_resolve(m.src, "ais", NULL, &sb, &err);
    if (rc == 0) {
        int ho = has_objects(&sb, m.prefix, &err);
        if (ho == 0)
            rc = sl_errf(&err, SL_EINVAL, "ishard: the source ais://%s%s%s has no objects", m.src,
                         m.prefix[0] ? "/" : "", m.prefix);
        else if (ho < 0)
            rc = -1;
        sl_bck_release(&sb);
    }
    if (rc == 0 && sl_bck_resolve(m.dst, "ais", NULL, &db, &err) == 0) {
        int ho = has_objects(&db, "", &err);
        sl_bck_release(&db);
        if (ho < 0)
            rc = -1;
        else if (ho && !m.overwrite && !m.dry_run)
            rc = sl_errf(&err, SL_EEXIST, "ishard: the destination ais://%s is not empty; use another bucket, "
                         "empty it, or allow it with --overwrite (API: \"overwrite\": true; shards with the same "
                         "names are replaced)", m.dst);
        else if (ho && !m.overwrite)
            m.dst_not_empty = true;
    } else if (rc == 0) {
        err.msg[0] = 0; /* missing: the coordinator creates it before writing */
    }
    if (rc < 0) {
        imsg_free(&m);
        sl_resp_err(r, &err);
        return;
    }
    char id[48];
    sl_job_id(id, sizeof(id), "ish-");
    json_t *body = json_pack("{s:s,s:o}", "id", id, "msg", imsg_json(&m));
    imsg_free(&m);
    if (G.role == SL_ROLE_STANDALONE) {
        /* same path as a target: through the internal handler's logic */
        struct coord *c = sl_xcalloc(1, sizeof(*c));
        imsg_parse(json_object_get(body, "msg"), &c->m, &err);
        c->job = sl_job_start("ishard", id, c->m.src, c->m.dst);
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setstacksize(&a, 8 * SL_MIB);
        if (pthread_create(&t, &a, coord_main, c) != 0) {
            sl_job_finish(c->job, "cannot start a thread");
            sl_job_put(c->job);
            imsg_free(&c->m);
            free(c);
            rc = sl_errf(&err, SL_EINTERNAL, "ishard: cannot start a thread");
        } else {
            pthread_detach(t);
        }
        pthread_attr_destroy(&a);
        json_decref(body);
    } else {
        struct sl_smap *s = sl_smap_get();
        char *un = sl_xasprintf("ishard/%s", id);
        const struct sl_snode *t = sl_smap_hrw_target(s, un, strlen(un));
        free(un);
        if (!t || (t->flags & SL_SNF_OFFLINE)) {
            rc = sl_errf(&err, SL_EUNAVAIL, "ishard: no target can coordinate the job (%s)",
                         t ? "the chosen one is not responding" : "no targets");
            json_decref(body);
        } else {
            char *url = sl_xasprintf("%s/v1/internal/ishard/plan", t->ctrl_url);
            struct sl_peer_resp pr;
            int prc = sl_peer_json("POST", url, body, 0, &pr);
            if (prc < 0 || pr.status != 200)
                rc = sl_errf(&err, prc < 0 ? SL_EUNAVAIL : sl_code_from_status((int)pr.status), "ishard: t[%s]: %s",
                             t->id, pr.err);
            sl_peer_resp_free(&pr);
            free(url);
        }
        sl_smap_put(s);
    }
    if (rc < 0) {
        sl_resp_err(r, &err);
        return;
    }
    sl_logi("ishard %s started", id);
    sl_resp_text(r, 200, id);
}

static void start_done(struct sl_req *r)
{
    sl_req_offload(r, start_run, NULL, NULL);
}


static void status_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    const char *id = r->path + strlen("/v1/ishard/");
    json_t *per = sl_cluster_job_snaps(id, NULL, false, &err);
    json_t *report = NULL;
    bool found = false, running = false, aborted = false;
    char emsg[1100] = "";
    json_int_t shards_total = 0, written = 0, bytes = 0, vanished = 0, members = 0;
    json_t *van = json_array();
    const char *tid;
    json_t *arr;
    json_object_foreach(per, tid, arr) {
        size_t i;
        json_t *sn;
        json_array_foreach(arr, i, sn) {
            if (strcmp(sl_json_str(sn, "id", ""), id))
                continue;
            found = true;
            json_t *ext = json_object_get(sn, "ext");
            if (json_object_get(ext, "report"))
                report = json_incref(json_object_get(ext, "report"));
            running |= sl_json_int(sn, "end_ns", 0) == 0;
            aborted |= sl_json_bool(sn, "aborted", false);
            const char *e = sl_json_str(sn, "err", "");
            if (e[0] && (!emsg[0] || !strncmp(emsg + strcspn(emsg, ":") + 2, "aborted", 7)))
                snprintf(emsg, sizeof(emsg), "t[%s]: %s", tid, e);
            json_t *st = json_object_get(sn, "stats");
            written += sl_json_int(st, "out-objs", 0);
            bytes += sl_json_int(st, "out-bytes", 0);
            members += sl_json_int(st, "loc-objs", 0) + sl_json_int(st, "in-objs", 0);
            json_t *b = json_object_get(ext, "build");
            shards_total += sl_json_int(b, "shards", 0);
            vanished += sl_json_int(b, "vanished", 0);
            size_t k;
            json_t *v;
            json_array_foreach(json_object_get(b, "vanished_objects"), k, v) json_array_append(van, v);
        }
    }
    json_decref(per);
    if (!found) {
        json_decref(van);
        if (err.msg[0])
            sl_resp_err(r, &err);
        else
            sl_resp_errf(r, SL_ENOENT, "ishard job %s not found on any target", id);
        return;
    }
    bool planning = running && !report;
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(id));
    /* an abort asked for (not caused by a failure elsewhere) reads "aborted" */
    bool generic = !emsg[0] || sl_has_suffix(emsg, ": aborted");
    json_object_set_new(o, "state", json_string(planning ? "planning" : running ? "running"
                                                : aborted && generic ? "aborted"
                                                : emsg[0] ? "failed" : "finished"));
    json_object_set_new(o, "err", json_string(emsg));
    json_object_set_new(o, "report", report ? report : json_null());
    if (report && !shards_total)
        shards_total = sl_json_int(report, "shards", 0);
    json_object_set_new(o, "progress", json_pack("{s:I,s:I,s:I,s:I,s:I,s:o}", "shards_total",
                                                 report ? sl_json_int(report, "shards", 0) : shards_total,
                                                 "shards_written", written, "bytes_written", bytes, "members_read",
                                                 members, "vanished", vanished, "vanished_objects", van));
    if (err.msg[0])
        json_object_set_new(o, "warning", json_string(err.msg));
    sl_resp_json_new(r, 200, o);
}

static void abort_run(struct sl_req *r, void *arg)
{
    (void)arg;
    const char *id = r->path + strlen("/v1/ishard/");
    int n = sl_job_abort(id, NULL);
    if (G.role != SL_ROLE_STANDALONE) {
        /* an id no target knows is a 404, as for GET; a known job that has
         * already ended answers 200 (nothing left to stop) */
        struct sl_err err = { 0 };
        bool found = sl_cluster_job_known(id, &err);
        if (!found && err.msg[0]) {
            sl_resp_err(r, &err);
            return;
        }
        if (!found) {
            sl_resp_errf(r, SL_ENOENT, "ishard job %s not found on any target (list jobs with `shale job show --all`)",
                         id);
            return;
        }
        sl_cluster_abort_job(id);
        n = 1;
    }
    if (!n)
        sl_resp_errf(r, SL_ENOENT, "ishard job %s is not running", id);
    else
        sl_resp_empty(r, 200);
}

void sl_ishard_route(struct sl_req *r)
{
    if (G.role == SL_ROLE_TARGET) {
        sl_resp_errf(r, SL_EINVAL, "%s is a storage target: send /v1/ishard requests to a gateway (proxy)", G.name);
        return;
    }
    bool root = !strcmp(r->path, "/v1/ishard") || !strcmp(r->path, "/v1/ishard/");
    if (root && r->method == SL_M_POST) {
        if (G.role == SL_ROLE_PROXY && !sl_is_primary())
            sl_forward_to_primary(r);
        else
            sl_req_buffer_body(r, 64 * SL_MIB, start_done);
    } else if (!root && r->method == SL_M_GET) {
        sl_req_offload(r, status_run, NULL, NULL);
    } else if (!root && r->method == SL_M_DELETE) {
        sl_req_offload(r, abort_run, NULL, NULL);
    } else {
        sl_resp_errf(r, SL_EINVAL, "unsupported request %s %s (ishard API: POST /v1/ishard, GET|DELETE "
                     "/v1/ishard/JOB_ID)", r->method_str, r->path);
    }
}
