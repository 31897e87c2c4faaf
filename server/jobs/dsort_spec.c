/* SPDX-License-Identifier: MIT
 * dsort_spec.c: see dsort_spec.h.
 */
#include "dsort_spec.h"
#include "arch.h"
#include "jsonx.h"
#include "meta.h"
#include "plug.h"
#include "sandbox.h"
#include "template.h"
#include "yamlx.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *const alg_names[] = { "alphanumeric", "shuffle", "content", "none", "md5", "lua" };
static const char *const ckey_names[] = { "int", "float", "string" };
static const char *const react_names[] = { "ignore", "warn", "abort" };

static const char *const spec_fields[] = {
    "input_bck", "input_format", "output_format", "output_shard_size", "input_extension", "output_extension",
    "output_bck", "description", "algorithm", "ekm_file", "ekm_file_sep", "ekm_lua", "max_mem_usage",
    "extract_concurrency_max_limit", "create_concurrency_max_limit", "dsorter_type", "dry_run", "Config",
    "overwrite",
    /* AIStore's WebDataset post, and the Python SDK's misspelling of ekm_file_sep */
    "bck", "extension", "ekm_sep",
};
static const char *const alg_fields[] = { "kind", "decreasing", "seed", "extension", "content_key_type", "script" };
static const char *const config_fields[] = { "duplicated_records", "missing_shards", "ekm_malformed_line",
                                             "ekm_missing_key" };

/* one of names, or a 400 listing them */
static int pick(const char *what, const char *v, const char *const *names, int n, int *out, struct sl_err *err)
{
    return sl_pick_name("dsort", what, v, names, n, out, err);
}

static int unknown(const json_t *o, const char *where, const char *const *known, size_t n, struct sl_err *err)
{
    const char *k = sl_json_unknown_key(o, known, n);
    if (!k)
        return 0;
    struct sl_buf b;
    sl_buf_init(&b);
    for (size_t i = 0; i < n; i++)
        sl_buf_printf(&b, "%s%s", i ? ", " : "", known[i]);
    sl_errf(err, SL_EINVAL, "dsort: unknown field \"%s\" in %s (valid: %s)", k, where, b.p);
    sl_buf_free(&b);
    return -1;
}

/* a string field, or absent (dflt); anything else is refused */
static int str_field(const json_t *o, const char *k, const char *dflt, const char **out, struct sl_err *err)
{
    json_t *v = sl_json_get(o, k);
    *out = dflt;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_string(v))
        return sl_errf(err, SL_EINVAL, "dsort: \"%s\" must be a string", k);
    *out = json_string_value(v);
    return 0;
}

/* {"name","provider","namespace"} or "ais://name" or "name" */
static int parse_bck(const json_t *v, const char *what, char *name, size_t nsz, char *prov_out, size_t psz,
                     struct sl_err *err)
{
    char prov[16] = "ais", nm[256] = "";
    const char *rest = "";
    if (json_is_object(v)) {
        const char *p = sl_json_str(v, "provider", "ais"), *ns = sl_json_str(v, "namespace", "");
        const char *pn = sl_provider_norm(p[0] ? p : "ais");
        if (!pn)
            return sl_errf(err, SL_EINVAL, "dsort: %s: invalid provider \"%s\"", what, p);
        snprintf(prov, sizeof(prov), "%s", pn);
        if (json_is_object(sl_json_get(v, "namespace")))
            ns = sl_json_str(sl_json_get(v, "namespace"), "name", "");
        if (ns[0])
            return sl_errf(err, SL_EUNSUPP, "dsort: %s: bucket namespaces are not supported (only the global one)",
                           what);
        snprintf(nm, sizeof(nm), "%s", sl_json_str(v, "name", ""));
    } else if (json_is_string(v)) {
        if (sl_bck_parse(json_string_value(v), 0, prov, sizeof(prov), nm, sizeof(nm), &rest, err) < 0)
            return -1;
        if (*rest)
            return sl_errf(err, SL_EINVAL, "dsort: %s \"%s\": a bucket takes no object path here", what,
                           json_string_value(v));
    } else {
        return sl_errf(err, SL_EINVAL, "dsort: \"%s\" is required: {\"name\": \"BUCKET\", \"provider\": \"ais\"} "
                       "or \"ais://BUCKET\"", what);
    }
    if (strcmp(prov, "ais") && !prov_out) /* (the input may be a remote bucket: its backend is checked later) */
        return sl_errf(err, SL_EUNSUPP, "dsort: %s %s://%s: only ais:// buckets are supported here (shards are "
                       "written into the cluster)", what, sl_provider_scheme(prov), nm);
    if (prov_out)
        snprintf(prov_out, psz, "%s", prov);
    if (sl_bck_name_valid(nm, err) < 0) {
        sl_err_wrap(err, "dsort: %s", what);
        return -1;
    }
    snprintf(name, nsz, "%s", nm);
    return 0;
}

/* ".tar" and friends: a loaded format plugin; write: it can also write */
static int check_ext(const char *what, const char *ext, bool write, char **out, struct sl_err *err)
{
    if (ext[0] != '.')
        return sl_errf(err, SL_EINVAL, "dsort: %s \"%s\" must start with a dot (e.g. \".tar\"; supported: %s)",
                       what, ext, sl_arch_supported());
    char *probe = sl_xasprintf("x%s", ext);
    const struct sl_plug *fmt = sl_arch_format_by_name(probe, strlen(probe));
    free(probe);
    if (!fmt || strlen(ext) < 2)
        return sl_errf(err, SL_EINVAL, "dsort: unknown %s \"%s\" (supported: %s)", what, ext, sl_arch_supported());
    if (write && !(sl_plug_caps(fmt) & SL_FMT_CAP_WRITE))
        return sl_errf(err, SL_EINVAL, "dsort: %s \"%s\": the %s plugin cannot write shards", what, ext,
                       sl_plug_name(fmt));
    *out = sl_xstrdup(ext);
    return 0;
}

/* the archive extension a template ends with ("shard-{0..9}.tar.gz" ->
 * ".tar.gz"), borrowed from t; NULL if it ends with none */
static const char *template_ext(const char *t)
{
    const char *slash = strrchr(t, '/');
    for (const char *d = strchr(slash ? slash + 1 : t, '.'); d; d = strchr(d + 1, '.')) {
        if (strpbrk(d, "{}%@"))
            continue;
        char *probe = sl_xasprintf("x%s", d);
        const struct sl_plug *fmt = sl_arch_format_by_name(probe, strlen(probe));
        free(probe);
        for (const char *const *e = fmt ? sl_plug_exts(fmt) : NULL; e && *e; e++)
            if (!strcmp(*e, d))
                return d;
    }
    return NULL;
}

static int parse_size(const json_t *v, const char *what, uint64_t *out, struct sl_err *err)
{
    if (json_is_integer(v) && json_integer_value(v) > 0) {
        *out = (uint64_t)json_integer_value(v);
        return 0;
    }
    const char *s = json_is_string(v) ? json_string_value(v) : NULL;
    /* (at most 2^63 - 1: the spec is written back as a JSON integer) */
    if (!s || sl_parse_size(s, out) < 0 || !*out || *out > (uint64_t)INT64_MAX)
        return sl_errf(err, SL_EINVAL, "dsort: invalid %s %s%s%s: give a positive size such as \"10MiB\", "
                       "\"500KB\" or \"1048576\" (at most 8 EiB)", what, s ? "\"" : "", s ? s : "(not a string)",
                       s ? "\"" : "");
    return 0;
}

static int parse_input(const json_t *v, struct sl_dsort_spec *s, struct sl_err *err)
{
    const char *t = NULL;
    if (!v || json_is_null(v)) {
        t = "";
    } else if (json_is_string(v)) {
        t = json_string_value(v); /* the blog post's spelling */
    } else if (json_is_object(v)) {
        static const char *const known[] = { "template", "objnames" };
        if (unknown(v, "input_format", known, 2, err) < 0)
            return -1;
        size_t n;
        if (sl_listrange_parse(v, false, &s->objnames, &n, &s->in_template, err) < 0) {
            sl_err_wrap(err, "dsort: input_format");
            return -1;
        }
        s->nobj = s->objnames ? n : 0;
        if (s->objnames && !s->nobj)
            return sl_errf(err, SL_EINVAL, "dsort: input_format.objnames is empty");
        if (s->objnames)
            return 0;
        t = s->in_template ? s->in_template : "";
    } else {
        return sl_errf(err, SL_EINVAL, "dsort: input_format must be a template string or {\"template\": ...} or "
                       "{\"objnames\": [...]}");
    }
    if (t != s->in_template) {
        free(s->in_template);
        s->in_template = sl_xstrdup(t);
    }
    struct sl_tmpl *tp;
    if (sl_tmpl_parse(s->in_template, &tp, err) < 0) {
        sl_err_wrap(err, "dsort: input_format");
        return -1;
    }
    bool empty = sl_tmpl_is_range(tp) && sl_tmpl_count(tp) == 0;
    bool unbounded = sl_tmpl_count(tp) == UINT64_MAX;
    sl_tmpl_free(tp);
    if (empty)
        return sl_errf(err, SL_EINVAL, "dsort: input_format \"%s\" expands to no names", s->in_template);
    if (unbounded)
        return sl_errf(err, SL_EINVAL, "dsort: input_format \"%s\" has no upper bound: give a range such as "
                       "\"shard-{0000..0099}\"", s->in_template);
    return 0;
}

static int parse_output(const json_t *v, struct sl_dsort_spec *s, struct sl_err *err)
{
    const char *f;
    if (str_field(v, "output_format", NULL, &f, err) < 0)
        return -1;
    if (!f || !f[0]) {
        if (s->ekm_file || s->ekm_lua)
            return 0;
        return sl_errf(err, SL_EINVAL, "dsort: output_format is required (a template such as "
                       "\"shuffled-{0000..0999}\" or \"shuffled-shard-%%d\") unless an EKM names the shards");
    }
    s->out_format = sl_xstrdup(f);
    struct sl_tmpl *tp;
    if (sl_tmpl_parse(f, &tp, err) < 0) {
        sl_err_wrap(err, "dsort: output_format");
        return -1;
    }
    bool range = sl_tmpl_is_range(tp);
    uint64_t count = sl_tmpl_count(tp);
    sl_tmpl_free(tp);
    if (!range)
        return sl_errf(err, SL_EINVAL, "dsort: output_format \"%s\" has no counter or range; use e.g. "
                       "\"shard-{0000..0999}\" or \"shard-%%d\"", f);
    if (count == 0)
        return sl_errf(err, SL_EINVAL, "dsort: output_format \"%s\" expands to no names", f);
    s->out_unbounded = count == UINT64_MAX;
    if (s->out_unbounded && !s->shard_size)
        return sl_errf(err, SL_EINVAL, "dsort: output_format \"%s\" is unbounded, so output_shard_size must say "
                       "how large each shard is", f);
    return 0;
}

static int parse_algorithm(const json_t *a, struct sl_dsort_spec *s, struct sl_err *err)
{
    if (!a || json_is_null(a))
        return 0;
    if (!json_is_object(a))
        return sl_errf(err, SL_EINVAL, "dsort: algorithm must be an object {\"kind\": ...}");
    if (unknown(a, "algorithm", alg_fields, SL_ARRAY_SIZE(alg_fields), err) < 0)
        return -1;
    const char *kind;
    if (str_field(a, "kind", "", &kind, err) < 0 || pick("algorithm.kind", kind[0] ? kind : "alphanumeric",
                                                         alg_names, SL_ARRAY_SIZE(alg_names), &s->alg, err) < 0)
        return -1;
    json_t *d = sl_json_get(a, "decreasing");
    if (d && !json_is_boolean(d) && !json_is_null(d))
        return sl_errf(err, SL_EINVAL, "dsort: algorithm.decreasing must be true or false");
    s->decreasing = json_is_true(d);
    json_t *seed = sl_json_get(a, "seed");
    const char *ss = json_is_string(seed) ? json_string_value(seed) : NULL;
    if (json_is_integer(seed) && json_integer_value(seed) >= 0) {
        s->seed = (uint64_t)json_integer_value(seed);
        s->seed_set = true;
    } else if (ss && ss[0]) {
        char *end;
        s->seed = strtoull(ss, &end, 10);
        if (*end || !isdigit((unsigned char)ss[0]))
            return sl_errf(err, SL_EINVAL, "dsort: algorithm.seed \"%s\" must be a non-negative integer", ss);
        s->seed_set = true;
    } else if (seed && !json_is_null(seed) && !ss) {
        return sl_errf(err, SL_EINVAL, "dsort: algorithm.seed must be a non-negative integer (or a string of one)");
    }
    if (s->alg == SL_DSORT_SHUFFLE && !s->seed_set)
        s->seed = (uint64_t)sl_now_ns(); /* reported in the normalised spec, so the run can be repeated */
    if (s->alg == SL_DSORT_CONTENT) {
        const char *ext, *kt;
        if (str_field(a, "extension", "", &ext, err) < 0 || str_field(a, "content_key_type", "", &kt, err) < 0)
            return -1;
        if (ext[0] != '.' || !ext[1])
            return sl_errf(err, SL_EINVAL, "dsort: algorithm \"content\" needs \"extension\": the member whose "
                           "bytes are the key, starting with a dot (e.g. \".cls\")");
        s->content_ext = sl_xstrdup(ext);
        if (!kt[0])
            return sl_errf(err, SL_EINVAL, "dsort: algorithm \"content\" needs \"content_key_type\" (valid: int, "
                           "float, string)");
        if (pick("algorithm.content_key_type", kt, ckey_names, SL_ARRAY_SIZE(ckey_names), &s->content_key_type,
                 err) < 0)
            return -1;
    }
    if (s->alg == SL_DSORT_LUA) {
        const char *src;
        if (str_field(a, "script", "", &src, err) < 0)
            return -1;
        if (!src[0])
            return sl_errf(err, SL_EINVAL, "dsort: algorithm \"lua\" needs \"script\": Lua source that defines "
                           "sort_key(record)");
        struct sl_lua_limits lim;
        sl_lua_limits_default(&lim);
        if (sl_lua_check_fn("dsort algorithm.script", src, strlen(src), "sort_key", &lim, err) < 0) {
            err->code = SL_EINVAL;
            return -1;
        }
        s->script = sl_xstrdup(src);
    }
    return 0;
}

static int parse_mem(const json_t *v, struct sl_dsort_spec *s, struct sl_err *err)
{
    if (!v || json_is_null(v))
        return 0;
    const char *m = json_is_string(v) ? json_string_value(v) : NULL;
    size_t l = m ? strlen(m) : 0;
    if (l > 1 && m[l - 1] == '%') {
        char *end;
        long p = strtol(m, &end, 10);
        if (end != m + l - 1 || p < 1 || p > 100)
            return sl_errf(err, SL_EINVAL, "dsort: max_mem_usage \"%s\": a percentage must be 1%% to 100%%", m);
        s->max_mem_pct = (int)p;
        return 0;
    }
    return parse_size(v, "max_mem_usage", &s->max_mem, err);
}

static int parse_conc(const json_t *o, const char *k, int *out, struct sl_err *err)
{
    json_t *v = sl_json_get(o, k);
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > 1024)
        return sl_errf(err, SL_EINVAL, "dsort: %s must be an integer from 0 (default) to 1024", k);
    *out = (int)json_integer_value(v);
    return 0;
}

static int parse_config(const json_t *c, struct sl_dsort_spec *s, struct sl_err *err)
{
    s->duplicated_records = SL_DSORT_ABORT;
    s->missing_shards = SL_DSORT_ABORT;
    s->ekm_malformed_line = SL_DSORT_ABORT;
    s->ekm_missing_key = SL_DSORT_ABORT;
    if (!c || json_is_null(c))
        return 0;
    if (!json_is_object(c))
        return sl_errf(err, SL_EINVAL, "dsort: Config must be an object");
    if (unknown(c, "Config (this build takes the reactions only)", config_fields, SL_ARRAY_SIZE(config_fields),
                err) < 0)
        return -1;
    int *dst[] = { &s->duplicated_records, &s->missing_shards, &s->ekm_malformed_line, &s->ekm_missing_key };
    for (size_t i = 0; i < SL_ARRAY_SIZE(config_fields); i++) {
        const char *v;
        if (str_field(c, config_fields[i], "", &v, err) < 0)
            return -1;
        if (v[0] && pick(config_fields[i], v, react_names, SL_ARRAY_SIZE(react_names), dst[i], err) < 0)
            return -1;
    }
    return 0;
}

int sl_dsort_spec_parse(const json_t *v, struct sl_dsort_spec *s, struct sl_err *err)
{
    memset(s, 0, sizeof(*s));
    if (!json_is_object(v))
        return sl_errf(err, SL_EINVAL, "dsort: the request spec must be a JSON (or YAML) object");
    if (unknown(v, "the request spec", spec_fields, SL_ARRAY_SIZE(spec_fields), err) < 0)
        return -1;
    json_t *ib = sl_json_get(v, "input_bck");
    if (!ib || json_is_null(ib))
        ib = sl_json_get(v, "bck");
    if (parse_bck(ib, "input_bck", s->in_bck, sizeof(s->in_bck), s->in_prov, sizeof(s->in_prov), err) < 0)
        return -1;
    json_t *ob = sl_json_get(v, "output_bck");
    if (ob && !json_is_null(ob) && !(json_is_object(ob) && !sl_json_str(ob, "name", "")[0])) {
        if (parse_bck(ob, "output_bck", s->out_bck, sizeof(s->out_bck), NULL, 0, err) < 0)
            return -1;
    } else if (strcmp(s->in_prov, "ais")) {
        return sl_errf(err, SL_EINVAL, "dsort: the input %s://%s is a remote bucket: name the ais:// bucket the "
                       "shards go to (output_bck)", sl_provider_scheme(s->in_prov), s->in_bck);
    } else {
        snprintf(s->out_bck, sizeof(s->out_bck), "%s", s->in_bck);
    }
    if (parse_input(sl_json_get(v, "input_format"), s, err) < 0)
        return -1;

    const char *ext, *oext, *desc, *ekm, *sep, *ekm_lua, *dt;
    if (str_field(v, "input_extension", NULL, &ext, err) < 0 || str_field(v, "extension", NULL, &oext, err) < 0)
        return -1;
    if (!ext || !ext[0])
        ext = oext && oext[0] ? oext : NULL;
    if (!ext && s->in_template)
        ext = template_ext(s->in_template);
    if (check_ext("input_extension", ext ? ext : ".tar", false, &s->in_ext, err) < 0)
        return -1;
    if (str_field(v, "output_extension", "", &oext, err) < 0 ||
        check_ext("output_extension", oext[0] ? oext : s->in_ext, true, &s->out_ext, err) < 0)
        return -1;

    json_t *sz = sl_json_get(v, "output_shard_size");
    if (sz && !json_is_null(sz) && !(json_is_string(sz) && !json_string_value(sz)[0]) &&
        parse_size(sz, "output_shard_size", &s->shard_size, err) < 0)
        return -1;

    if (str_field(v, "ekm_file", "", &ekm, err) < 0 || str_field(v, "ekm_file_sep", NULL, &sep, err) < 0 ||
        str_field(v, "ekm_lua", "", &ekm_lua, err) < 0)
        return -1;
    if (!sep && str_field(v, "ekm_sep", NULL, &sep, err) < 0) /* what the Python SDK sends */
        return -1;
    if (ekm[0] && ekm_lua[0])
        return sl_errf(err, SL_EINVAL, "dsort: give either ekm_file or ekm_lua, not both");
    if (ekm[0]) {
        if (!sl_has_prefix(ekm, "ais://") && !sl_has_prefix(ekm, "http://") && !sl_has_prefix(ekm, "https://"))
            return sl_errf(err, SL_EINVAL, "dsort: ekm_file \"%s\" must be an ais://BUCKET/OBJECT or an http(s) URL",
                           ekm);
        s->ekm_file = sl_xstrdup(ekm);
    }
    s->ekm_sep = sl_xstrdup(sep && sep[0] ? sep : "\t");
    if (ekm_lua[0]) {
        struct sl_lua_limits lim;
        sl_lua_limits_default(&lim);
        if (sl_lua_check_fn("dsort ekm_lua", ekm_lua, strlen(ekm_lua), "shard_for", &lim, err) < 0) {
            err->code = SL_EINVAL;
            return -1;
        }
        s->ekm_lua = sl_xstrdup(ekm_lua);
    }
    if ((s->ekm_file || s->ekm_lua) && !s->shard_size)
        return sl_errf(err, SL_EINVAL, "dsort: with an EKM, output_shard_size is required");
    if (parse_output(v, s, err) < 0)
        return -1;

    if (str_field(v, "description", "", &desc, err) < 0)
        return -1;
    s->description = sl_xstrdup(desc);
    if (parse_algorithm(sl_json_get(v, "algorithm"), s, err) < 0 || parse_mem(sl_json_get(v, "max_mem_usage"), s,
                                                                              err) < 0 ||
        parse_conc(v, "extract_concurrency_max_limit", &s->extract_conc, err) < 0 ||
        parse_conc(v, "create_concurrency_max_limit", &s->create_conc, err) < 0 ||
        parse_config(sl_json_get(v, "Config"), s, err) < 0)
        return -1;
    if (str_field(v, "dsorter_type", "", &dt, err) < 0)
        return -1;
    if (dt[0] && strcmp(dt, "dsorter_general"))
        return sl_errf(err, SL_EINVAL, "dsort: dsorter_type \"%s\": this build has one dsorter, "
                       "\"dsorter_general\" (extraction spills to disk past max_mem_usage)", dt);
    json_t *dr = sl_json_get(v, "dry_run"), *ow = sl_json_get(v, "overwrite");
    if ((dr && !json_is_boolean(dr) && !json_is_null(dr)) || (ow && !json_is_boolean(ow) && !json_is_null(ow)))
        return sl_errf(err, SL_EINVAL, "dsort: dry_run and overwrite must be true or false");
    s->dry_run = json_is_true(dr);
    s->overwrite = json_is_true(ow);
    return 0;
}

int sl_dsort_spec_parse_text(const char *buf, size_t n, struct sl_dsort_spec *s, struct sl_err *err)
{
    memset(s, 0, sizeof(*s));
    size_t i = 0;
    while (i < n && isspace((unsigned char)buf[i]))
        i++;
    json_t *v;
    if (i < n && buf[i] == '{') {
        json_error_t je;
        v = json_loadb(buf, n, 0, &je);
        if (!v)
            return sl_errf(err, SL_EINVAL, "dsort: the spec is not valid JSON: line %d, column %d: %s", je.line,
                           je.column, je.text);
    } else {
        v = sl_yaml_to_json(buf, n, err);
        if (!v) {
            sl_err_wrap(err, "dsort: the spec is neither JSON nor valid YAML");
            return -1;
        }
    }
    int rc = sl_dsort_spec_parse(v, s, err);
    json_decref(v);
    return rc;
}

void sl_dsort_spec_free(struct sl_dsort_spec *s)
{
    free(s->in_template);
    if (s->objnames)
        sl_strv_free(s->objnames, s->nobj);
    free(s->out_format);
    free(s->in_ext);
    free(s->out_ext);
    free(s->description);
    free(s->content_ext);
    free(s->script);
    free(s->ekm_file);
    free(s->ekm_sep);
    free(s->ekm_lua);
    memset(s, 0, sizeof(*s));
}

json_t *sl_dsort_spec_json(const struct sl_dsort_spec *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "input_bck", json_pack("{s:s,s:s}", "name", s->in_bck, "provider", s->in_prov));
    json_object_set_new(o, "output_bck", json_pack("{s:s,s:s}", "name", s->out_bck, "provider", "ais"));
    json_t *in = json_object();
    if (s->objnames) {
        json_t *a = json_array();
        for (size_t i = 0; i < s->nobj; i++)
            json_array_append_new(a, json_string(s->objnames[i]));
        json_object_set_new(in, "objnames", a);
    } else {
        json_object_set_new(in, "template", json_string(s->in_template ? s->in_template : ""));
    }
    json_object_set_new(o, "input_format", in);
    if (s->out_format)
        json_object_set_new(o, "output_format", json_string(s->out_format));
    if (s->shard_size)
        json_object_set_new(o, "output_shard_size", json_integer((json_int_t)s->shard_size));
    json_object_set_new(o, "input_extension", json_string(s->in_ext));
    json_object_set_new(o, "output_extension", json_string(s->out_ext));
    json_object_set_new(o, "description", json_string(s->description ? s->description : ""));
    json_t *a = json_pack("{s:s,s:b}", "kind", alg_names[s->alg], "decreasing", s->decreasing);
    if (s->alg == SL_DSORT_SHUFFLE) {
        char seed[32];
        snprintf(seed, sizeof(seed), "%llu", (unsigned long long)s->seed);
        json_object_set_new(a, "seed", json_string(seed));
    }
    if (s->content_ext) {
        json_object_set_new(a, "extension", json_string(s->content_ext));
        json_object_set_new(a, "content_key_type", json_string(ckey_names[s->content_key_type]));
    }
    if (s->script)
        json_object_set_new(a, "script", json_string(s->script));
    json_object_set_new(o, "algorithm", a);
    if (s->ekm_file) {
        json_object_set_new(o, "ekm_file", json_string(s->ekm_file));
        json_object_set_new(o, "ekm_file_sep", json_string(s->ekm_sep));
    }
    if (s->ekm_lua)
        json_object_set_new(o, "ekm_lua", json_string(s->ekm_lua));
    if (s->max_mem_pct) {
        char p[8];
        snprintf(p, sizeof(p), "%d%%", s->max_mem_pct);
        json_object_set_new(o, "max_mem_usage", json_string(p));
    } else if (s->max_mem) {
        json_object_set_new(o, "max_mem_usage", json_integer((json_int_t)s->max_mem));
    }
    if (s->extract_conc)
        json_object_set_new(o, "extract_concurrency_max_limit", json_integer(s->extract_conc));
    if (s->create_conc)
        json_object_set_new(o, "create_concurrency_max_limit", json_integer(s->create_conc));
    json_object_set_new(o, "dry_run", json_boolean(s->dry_run));
    if (s->overwrite)
        json_object_set_new(o, "overwrite", json_true());
    json_object_set_new(o, "Config", json_pack("{s:s,s:s,s:s,s:s}", "duplicated_records",
                                               react_names[s->duplicated_records], "missing_shards",
                                               react_names[s->missing_shards], "ekm_malformed_line",
                                               react_names[s->ekm_malformed_line], "ekm_missing_key",
                                               react_names[s->ekm_missing_key]));
    return o;
}

/* max_mem_usage in bytes (a percentage of this machine's memory); 0: none */
uint64_t sl_dsort_spec_max_mem(const struct sl_dsort_spec *s)
{
    if (s->max_mem)
        return s->max_mem;
    if (!s->max_mem_pct)
        return 0;
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    return pages > 0 && psz > 0 ? (uint64_t)pages * (uint64_t)psz / 100 * (uint64_t)s->max_mem_pct : 0;
}
