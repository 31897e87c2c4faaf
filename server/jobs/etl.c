/* SPDX-License-Identifier: MIT
 * etl.c: ETL definitions and their API (see etl.h, docs/etl.md).
 *
 * EtlMD = {"version": N, "etls": {NAME: InitMsg, ...}}, owned by the primary
 * and pushed to every node by metasync (cluster.c). InitMsg is the
 * normalised init request plus "xaction_id" and "stage".
 *
 * Init compiles the script on every target (POST /v1/internal/etl/check)
 * before the ETL is added, so a syntax error is a 400 with its line and no
 * target ever holds a script that does not compile. Targets keep, per ETL,
 * counters, a bounded log of the script's output and a bounded ring of
 * object errors; the gateway aggregates them for list/details/logs.
 */
#include "etl.h"
#include "b64.h"
#include "bg.h"
#include "cluster.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "peer.h"
#include "prx.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_OBJ_TIMEOUT "45s"
#define DEFAULT_MEM_LIMIT "64MiB"
#define MAX_OBJ_TIMEOUT_NS (3600LL * 1000000000LL)
#define MIN_MEM_LIMIT (1024 * 1024)
#define MAX_MEM_LIMIT (4ULL * 1024 * 1024 * 1024)

/* ---- the registry (targets and standalone) ---- */

static pthread_mutex_t regmu = PTHREAD_MUTEX_INITIALIZER;
static struct sl_etl **reg;
static int nreg;
static int64_t reg_version = -1;

/* serialises EtlMD edits on the primary */
static pthread_mutex_t mdmu = PTHREAD_MUTEX_INITIALIZER;

static void etl_free(struct sl_etl *e)
{
    free(e->code);
    json_decref(e->init_msg);
    sl_buf_free(&e->log);
    for (int i = 0; i < e->nerrs; i++) {
        free(e->errs[i].obj);
        free(e->errs[i].msg);
        free(e->errs[i].job);
    }
    free(e->errs);
    pthread_mutex_destroy(&e->mu);
    free(e);
}

void sl_etl_release(struct sl_etl *e)
{
    if (e && __atomic_sub_fetch(&e->refs, 1, __ATOMIC_ACQ_REL) == 0)
        etl_free(e);
}

static struct sl_etl *etl_ref(struct sl_etl *e)
{
    __atomic_add_fetch(&e->refs, 1, __ATOMIC_RELAXED);
    return e;
}

bool sl_etl_usable(const struct sl_etl *e)
{
    return e->running && !e->removed;
}

/* ---- the init message ---- */

static bool name_valid(const char *n)
{
    size_t l = strlen(n);
    if (l < 6 || l > 32)
        return false;
    for (size_t i = 0; i < l; i++)
        if (!(islower((unsigned char)n[i]) || isdigit((unsigned char)n[i]) || n[i] == '-'))
            return false;
    return n[0] != '-' && n[l - 1] != '-';
}

/* Limits from a (normalised or user) init message. */
static int limits_of(const json_t *m, struct sl_lua_limits *lim, struct sl_err *err)
{
    sl_lua_limits_default(lim);
    const char *to = sl_json_str(m, "obj_timeout", DEFAULT_OBJ_TIMEOUT);
    int64_t ns;
    if (!to[0])
        to = DEFAULT_OBJ_TIMEOUT;
    if (sl_parse_duration(to, &ns) < 0 || ns <= 0 || ns > MAX_OBJ_TIMEOUT_NS)
        return sl_errf(err, SL_EINVAL, "invalid \"obj_timeout\" \"%s\": give a duration such as \"45s\" or \"2m\" "
                       "(at most 1h)", to);
    lim->timeout_ns = ns;
    const char *ml = sl_json_str(m, "mem_limit", DEFAULT_MEM_LIMIT);
    uint64_t sz;
    if (!ml[0])
        ml = DEFAULT_MEM_LIMIT;
    if (sl_parse_size(ml, &sz) < 0 || sz < MIN_MEM_LIMIT || sz > MAX_MEM_LIMIT)
        return sl_errf(err, SL_EINVAL, "invalid \"mem_limit\" \"%s\": give a size such as \"64MiB\" (1MiB to 4GiB)",
                       ml);
    lim->mem_limit = (size_t)sz;
    const char *mo = sl_json_str(m, "max_output", "");
    if (mo[0]) {
        if (sl_parse_size(mo, &sz) < 0 || sz == 0 || sz > MAX_MEM_LIMIT)
            return sl_errf(err, SL_EINVAL, "invalid \"max_output\" \"%s\": give a size such as \"64MiB\"", mo);
        lim->max_output = (size_t)sz;
    } else {
        lim->max_output = lim->mem_limit;
    }
    /* the base of every call's random seed (etl_run.c mixes in the
     * sample's key and the request's etl_args) */
    json_t *sd = json_object_get(m, "seed");
    if (sd && !json_is_null(sd)) {
        if (!json_is_integer(sd) || json_integer_value(sd) < 0)
            return sl_errf(err, SL_EINVAL, "invalid \"seed\": give a whole number >= 0 (the random operations of "
                           "shale.image and math.random draw from it, mixed with each sample's key and etl_args)");
        lim->seed = (uint64_t)json_integer_value(sd);
    } else {
        lim->seed = 0;
    }
    return 0;
}

static int mode_of(const json_t *m, int *mode, struct sl_err *err)
{
    const char *s = sl_json_str(m, "mode", "object");
    if (!s[0] || !strcmp(s, "object"))
        *mode = SL_ETL_OBJECT;
    else if (!strcmp(s, "sample"))
        *mode = SL_ETL_SAMPLE;
    else
        return sl_errf(err, SL_EINVAL, "invalid \"mode\" \"%s\" (valid: object, sample)", s);
    return 0;
}

static const char *entry_fn(int mode)
{
    return mode == SL_ETL_SAMPLE ? "transform_sample" : "transform";
}

/* Validate a user's init message; returns the normalised InitMsg (new). */
static json_t *init_msg_parse(const json_t *in, struct sl_err *err)
{
    if (!json_is_object(in)) {
        sl_errf(err, SL_EINVAL, "ETL init: the body must be a JSON object {\"name\", \"runtime\": \"lua\", \"code\", "
                "\"mode\", \"obj_timeout\", \"mem_limit\"}");
        return NULL;
    }
    json_t *rt = sl_json_get(in, "runtime");
    if (json_is_object(rt) || sl_json_get(in, "spec")) {
        sl_errf(err, SL_EINVAL, "ETL init: Shale runs transforms as sandboxed Lua on the targets, not as containers "
                "(no Kubernetes needed): send {\"name\": \"...\", \"runtime\": \"lua\", \"code\": \"<Lua source "
                "defining transform(data, ctx)>\"}; see docs/etl.md");
        return NULL;
    }
    if (rt && !(json_is_string(rt) && (!strcmp(json_string_value(rt), "lua") || !json_string_value(rt)[0]))) {
        sl_errf(err, SL_EINVAL, "ETL init: unsupported \"runtime\" %s (valid: \"lua\")",
                json_is_string(rt) ? json_string_value(rt) : "(not a string)");
        return NULL;
    }
    /* our fields, plus AIStore's ETLSpecMsg ones that clients send and that
     * mean nothing for Lua (accepted and ignored) */
    static const char *const known[] = { "name", "runtime", "code", "mode", "obj_timeout", "mem_limit", "max_output",
                                         "seed",
                                         "communication", "init_timeout", "support_direct_put", "env",
                                         "resources", "arg_type", "dependencies", "transform_url", "id" };
    const char *key = sl_json_unknown_key(in, known, SL_ARRAY_SIZE(known));
    if (key) {
        sl_errf(err, SL_EINVAL, "ETL init: unknown field \"%s\" (Shale's are name, runtime, code, mode, "
                "obj_timeout, mem_limit, max_output, seed)", key);
        return NULL;
    }
    json_t *nm = sl_json_get(in, "name");
    if (!json_is_string(nm)) {
        sl_errf(err, SL_EINVAL, "ETL init: \"name\" is required (6-32 characters: a-z, 0-9, '-')");
        return NULL;
    }
    const char *name = json_string_value(nm);
    if (!name_valid(name)) {
        sl_errf(err, SL_EINVAL, "ETL init: invalid name \"%s\": use 6-32 characters of a-z, 0-9 and '-', starting "
                "and ending with a letter or digit", name);
        return NULL;
    }
    json_t *code = sl_json_get(in, "code");
    if (!json_is_string(code) || !json_string_length(code)) {
        sl_errf(err, SL_EINVAL, "ETL init %s: \"code\" (the Lua source text) is required", name);
        return NULL;
    }
    if (json_string_length(code) > SL_ETL_MAX_CODE) {
        sl_errf(err, SL_EINVAL, "ETL init %s: \"code\" is %zu bytes, more than the %d allowed", name,
                json_string_length(code), SL_ETL_MAX_CODE);
        return NULL;
    }
    int mode;
    struct sl_lua_limits lim;
    if (mode_of(in, &mode, err) < 0 || limits_of(in, &lim, err) < 0) {
        sl_err_wrap(err, "ETL init %s", name);
        return NULL;
    }
    char to[32], ml[32], mo[32];
    sl_format_duration(lim.timeout_ns, to, sizeof(to));
    sl_format_size(lim.mem_limit, ml, sizeof(ml));
    sl_format_size(lim.max_output, mo, sizeof(mo));
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(name));
    json_object_set_new(o, "runtime", json_string("lua"));
    json_object_set(o, "code", code);
    json_object_set_new(o, "mode", json_string(mode == SL_ETL_SAMPLE ? "sample" : "object"));
    json_object_set_new(o, "obj_timeout", json_string(to));
    json_object_set_new(o, "mem_limit", json_string(ml));
    json_object_set_new(o, "max_output", json_string(mo));
    json_object_set_new(o, "seed", json_integer((json_int_t)lim.seed));
    return o;
}

/* ---- registry maintenance ---- */

static struct sl_etl *etl_new(const char *name, const json_t *spec)
{
    struct sl_err err = { 0 };
    struct sl_etl *e = sl_xcalloc(1, sizeof(*e));
    e->refs = 1;
    snprintf(e->name, sizeof(e->name), "%s", name);
    json_t *code = json_object_get(spec, "code");
    e->code_len = json_string_length(code);
    e->code = sl_xstrndup(json_string_value(code) ? json_string_value(code) : "", e->code_len);
    if (mode_of(spec, &e->mode, &err) < 0 || limits_of(spec, &e->lim, &err) < 0)
        sl_logw("etl %s: %s (using defaults)", name, err.msg);
    snprintf(e->xid, sizeof(e->xid), "%s", sl_json_str(spec, "xaction_id", ""));
    e->init_msg = json_deep_copy(spec);
    e->running = !strcmp(sl_json_str(spec, "stage", "Running"), "Running");
    pthread_mutex_init(&e->mu, NULL);
    sl_buf_init(&e->log);
    return e;
}

static void on_etlmd(const json_t *doc)
{
    int64_t v = sl_json_int(doc, "version", 0);
    json_t *etls = json_object_get(doc, "etls");
    pthread_mutex_lock(&regmu);
    if (v <= reg_version) {
        pthread_mutex_unlock(&regmu);
        return;
    }
    reg_version = v;
    size_t cap = json_is_object(etls) ? json_object_size(etls) : 0;
    struct sl_etl **nr = sl_xcalloc(cap + 1, sizeof(*nr));
    int n = 0;
    const char *name;
    json_t *spec;
    if (json_is_object(etls)) {
        json_object_foreach(etls, name, spec) {
            const char *xid = sl_json_str(spec, "xaction_id", "");
            struct sl_etl *e = NULL;
            for (int i = 0; i < nreg; i++) {
                if (reg[i] && !strcmp(reg[i]->name, name) && !strcmp(reg[i]->xid, xid)) {
                    e = reg[i];
                    reg[i] = NULL;  /* moved */
                    break;
                }
            }
            bool run = !strcmp(sl_json_str(spec, "stage", "Running"), "Running");
            if (e) {
                if (e->running != run)
                    sl_logi("etl %s: %s", name, run ? "started" : "stopped");
                e->running = run;
            } else {
                e = etl_new(name, spec);
                sl_logi("etl %s: initialised (%s mode, %s)", name, e->mode == SL_ETL_SAMPLE ? "sample" : "object",
                        e->running ? "running" : "stopped");
            }
            nr[n++] = e;
        }
    }
    for (int i = 0; i < nreg; i++) {
        if (!reg[i])
            continue;
        reg[i]->removed = true;
        reg[i]->running = false;
        sl_logi("etl %s: removed", reg[i]->name);
        sl_etl_release(reg[i]);
    }
    free(reg);
    reg = nr;
    nreg = n;
    pthread_mutex_unlock(&regmu);
}

void sl_etl_init(void)
{
    sl_cluster_doc_listen("etlmd", on_etlmd);
    json_t *d = sl_cluster_doc("etlmd");
    if (d) {
        on_etlmd(d);
        json_decref(d);
    }
}

void sl_etl_fini(void)
{
    pthread_mutex_lock(&regmu);
    for (int i = 0; i < nreg; i++)
        sl_etl_release(reg[i]);
    free(reg);
    reg = NULL;
    nreg = 0;
    pthread_mutex_unlock(&regmu);
}

static struct sl_etl *find_ref(const char *name)
{
    struct sl_etl *e = NULL;
    pthread_mutex_lock(&regmu);
    for (int i = 0; i < nreg; i++)
        if (!strcmp(reg[i]->name, name)) {
            e = etl_ref(reg[i]);
            break;
        }
    pthread_mutex_unlock(&regmu);
    return e;
}

struct sl_etl *sl_etl_acquire(const char *name, struct sl_err *err)
{
    struct sl_etl *e = find_ref(name);
    if (!e) {
        sl_errf(err, SL_ENOENT, "%s: etl job %s does not exist (list them with `shale etl show`)", G.name, name);
        return NULL;
    }
    if (!e->running) {
        sl_etl_release(e);
        sl_errf(err, SL_ENOENT, "%s: etl job %s is not running (it was stopped; start it with `shale etl start %s`)",
                G.name, name, name);
        return NULL;
    }
    return e;
}

int sl_etl_acquire_list(const char *first, const char *pipeline, struct sl_etl **out, int *n, struct sl_err *err)
{
    *n = 0;
    char *all = sl_xasprintf("%s%s%s", first ? first : "", pipeline && *pipeline ? "," : "",
                             pipeline ? pipeline : "");
    char *save = NULL;
    int rc = 0;
    for (char *t = strtok_r(all, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        while (*t == ' ')
            t++;
        if (!*t)
            continue;
        if (*n == SL_ETL_MAX_PIPELINE) {
            rc = sl_errf(err, SL_EINVAL, "an ETL pipeline may have at most %d stages", SL_ETL_MAX_PIPELINE);
            break;
        }
        struct sl_etl *e = sl_etl_acquire(t, err);
        if (!e) {
            rc = -1;
            break;
        }
        out[(*n)++] = e;
        if (out[0]->mode != e->mode) {
            rc = sl_errf(err, SL_EINVAL, "ETL pipeline %s: etl %s is a %s-mode transform and %s a %s-mode one; a "
                         "pipeline's stages must all be of one mode", all, out[0]->name,
                         out[0]->mode == SL_ETL_SAMPLE ? "sample" : "object", e->name,
                         e->mode == SL_ETL_SAMPLE ? "sample" : "object");
            break;
        }
    }
    if (rc == 0 && *n == 0)
        rc = sl_errf(err, SL_EINVAL, "no ETL named (etl_name is empty)");
    free(all);
    if (rc < 0) {
        sl_etl_release_list(out, *n);
        *n = 0;
    }
    return rc;
}

void sl_etl_release_list(struct sl_etl **v, int n)
{
    for (int i = 0; i < n; i++)
        sl_etl_release(v[i]);
}

/* ---- logs, errors, counters ---- */

static void log_append(struct sl_etl *e, const char *obj, const char *line, size_t len)
{
    uint64_t cap = sl_conf ? sl_conf->etl_log_size : 256 * 1024;
    if (cap < 1024)
        cap = 1024;
    char ts[40];
    sl_format_gotime(sl_now_ns(), "2006-01-02T15:04:05.000Z07:00", ts, sizeof(ts));
    pthread_mutex_lock(&e->mu);
    sl_buf_printf(&e->log, "%s %s: ", ts, obj ? obj : "-");
    sl_buf_add(&e->log, line, len > cap / 2 ? cap / 2 : len);
    sl_buf_addc(&e->log, '\n');
    if (e->log.len > cap) {
        /* drop the oldest lines: keep about half */
        size_t cut = e->log.len - cap / 2;
        const char *nl = memchr(e->log.p + cut, '\n', e->log.len - cut);
        cut = nl ? (size_t)(nl - e->log.p) + 1 : e->log.len;
        memmove(e->log.p, e->log.p + cut, e->log.len - cut);
        e->log.len -= cut;
        e->log.p[e->log.len] = 0;
    }
    pthread_mutex_unlock(&e->mu);
}

void sl_etl_log_sink(void *ctx, const char *line, size_t len)
{
    struct sl_etl_logctx *lc = ctx;
    log_append(lc->e, lc->obj, line, len);
}

int sl_etl_ecode(const struct sl_err *err)
{
    return err->code == SL_ETIMEOUT ? 504 : 500;
}

void sl_etl_record_error(struct sl_etl *e, const char *job, const char *obj, int ecode, const char *msg)
{
    int cap = sl_conf && sl_conf->etl_max_errors > 0 ? sl_conf->etl_max_errors : 1000;
    __atomic_add_fetch(&e->err_count, 1, __ATOMIC_RELAXED);
    pthread_mutex_lock(&e->mu);
    if (!e->errs)
        e->errs = sl_xcalloc((size_t)cap, sizeof(*e->errs));
    struct sl_etl_err *x;
    if (e->nerrs < cap) {
        x = &e->errs[(e->errs_head + e->nerrs) % cap];
        e->nerrs++;
    } else {
        x = &e->errs[e->errs_head];
        e->errs_head = (e->errs_head + 1) % cap;
        free(x->obj);
        free(x->msg);
        free(x->job);
    }
    x->obj = sl_xstrdup(obj);
    x->msg = sl_xstrdup(msg);
    x->job = sl_xstrdup(job ? job : "");
    x->ecode = ecode;
    x->t = sl_now_ns();
    pthread_mutex_unlock(&e->mu);
    char line[1400];
    int n = snprintf(line, sizeof(line), "ERROR %d: %s", ecode, msg);
    log_append(e, obj, line, (size_t)(n < (int)sizeof(line) ? n : (int)sizeof(line) - 1));
}

static json_t *errors_json(struct sl_etl *e, const char *job)
{
    json_t *a = json_array();
    int cap = sl_conf && sl_conf->etl_max_errors > 0 ? sl_conf->etl_max_errors : 1000;
    pthread_mutex_lock(&e->mu);
    for (int i = 0; i < e->nerrs; i++) {
        const struct sl_etl_err *x = &e->errs[(e->errs_head + i) % cap];
        if (job && *job && strcmp(x->job, job))
            continue;
        json_t *o = json_object();
        json_object_set_new(o, "obj_name", json_string(x->obj));
        json_t *m = json_string(x->msg);
        json_object_set_new(o, "msg", m ? m : json_string("(message not valid UTF-8)"));
        json_object_set_new(o, "ecode", json_integer(x->ecode));
        if (x->job[0])
            json_object_set_new(o, "job", json_string(x->job));
        json_array_append_new(a, o);
    }
    pthread_mutex_unlock(&e->mu);
    return a;
}

static json_t *stats_json(const struct sl_etl *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "obj_count", json_integer((json_int_t)__atomic_load_n(&e->obj_count, __ATOMIC_RELAXED)));
    if (e->mode == SL_ETL_SAMPLE)
        json_object_set_new(o, "sample_count",
                            json_integer((json_int_t)__atomic_load_n(&e->sample_count, __ATOMIC_RELAXED)));
    json_object_set_new(o, "in_bytes", json_integer((json_int_t)__atomic_load_n(&e->in_bytes, __ATOMIC_RELAXED)));
    json_object_set_new(o, "out_bytes", json_integer((json_int_t)__atomic_load_n(&e->out_bytes, __ATOMIC_RELAXED)));
    json_object_set_new(o, "err_count", json_integer((json_int_t)__atomic_load_n(&e->err_count, __ATOMIC_RELAXED)));
    json_object_set_new(o, "cpu_ns", json_integer((json_int_t)__atomic_load_n(&e->cpu_ns, __ATOMIC_RELAXED)));
    json_object_set_new(o, "calls", json_integer((json_int_t)__atomic_load_n(&e->calls, __ATOMIC_RELAXED)));
    json_object_set_new(o, "mem_limit", json_integer((json_int_t)e->lim.mem_limit));
    json_object_set_new(o, "seed", json_integer((json_int_t)e->lim.seed));
    json_object_set_new(o, "stage", json_string(e->running ? "Running" : "Aborted"));
    return o;
}

/* ---- target-side internal endpoints ---- */

static void check_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    json_t *m = j ? init_msg_parse(j, &err) : NULL;
    if (m) {
        int mode;
        struct sl_lua_limits lim;
        mode_of(m, &mode, &err);
        limits_of(m, &lim, &err);
        const char *name = sl_json_str(m, "name", "");
        json_t *code = json_object_get(m, "code");
        if (sl_lua_check_fn(name, json_string_value(code), json_string_length(code), entry_fn(mode), &lim,
                            &err) < 0) {
            if (err.code == SL_ENOENT)
                sl_errf(&err, SL_EINVAL, "ETL init %s: the script defines no function %s(%s, ctx), which %s-mode "
                        "transforms need%s", name, entry_fn(mode), mode == SL_ETL_SAMPLE ? "sample" : "data",
                        mode == SL_ETL_SAMPLE ? "sample" : "object",
                        mode == SL_ETL_SAMPLE ? "" : " (use \"mode\": \"sample\" for transform_sample)");
            else
                sl_err_wrap(&err, "ETL init %s: %s", name, G.name);
            if (err.code != SL_EINTERNAL)
                err.code = SL_EINVAL;
            sl_resp_err(r, &err);
        } else {
            sl_resp_empty(r, 200);
        }
    } else {
        sl_resp_err(r, &err);
    }
    json_decref(m);
    json_decref(j);
}

static void internal_check_done(struct sl_req *r)
{
    sl_req_offload(r, check_run, NULL, NULL);
}

static void internal_get(struct sl_req *r, const char *what)
{
    const char *name = sl_req_query(r, "name");
    if (!strcmp(what, "stats")) {
        json_t *o = json_object();
        pthread_mutex_lock(&regmu);
        for (int i = 0; i < nreg; i++)
            json_object_set_new(o, reg[i]->name, stats_json(reg[i]));
        pthread_mutex_unlock(&regmu);
        sl_resp_json_new(r, 200, o);
        return;
    }
    struct sl_etl *e = name ? find_ref(name) : NULL;
    if (!e) {
        sl_resp_errf(r, SL_ENOENT, "%s: etl job %s does not exist", G.name, name ? name : "");
        return;
    }
    if (!strcmp(what, "errors")) {
        sl_resp_json_new(r, 200, errors_json(e, sl_req_query(r, "uuid")));
    } else if (!strcmp(what, "logs")) {
        pthread_mutex_lock(&e->mu);
        sl_resp_bytes(r, 200, "text/plain; charset=utf-8", e->log.p ? e->log.p : "", e->log.len);
        pthread_mutex_unlock(&e->mu);
    } else if (!strcmp(what, "health")) {
        sl_resp_json_new(r, 200, stats_json(e));
    } else {
        sl_resp_errf(r, SL_ENOENT, "no such endpoint: /v1/internal/etl/%s", what);
    }
    sl_etl_release(e);
}

bool sl_etl_internal(struct sl_req *r)
{
    if (!sl_has_prefix(r->path, "/v1/internal/etl/"))
        return false;
    const char *what = r->path + strlen("/v1/internal/etl/");
    if (!sl_is_target()) {
        sl_resp_errf(r, SL_EINVAL, "%s is not a storage target", G.name);
    } else if (!strcmp(what, "check")) {
        if (r->method != SL_M_POST)
            sl_resp_method_not_allowed(r, "POST");
        else
            sl_req_buffer_body(r, SL_ETL_MAX_CODE * 8 + 65536, internal_check_done);
    } else if (r->method != SL_M_GET) {
        sl_resp_method_not_allowed(r, "GET");
    } else {
        internal_get(r, what);
    }
    return true;
}

/* ---- gateway: fan-out to targets ---- */

struct fan {
    int n;
    struct sl_fan *f;
    char **tid;
};

static void fan_free(struct fan *x)
{
    for (int i = 0; i < x->n; i++) {
        free((char *)x->f[i].url);
        free(x->tid[i]);
    }
    sl_peer_fanout_free(x->f, x->n);
    free(x->f);
    free(x->tid);
    memset(x, 0, sizeof(*x));
}

/* Ask every target (offline ones fail the call, naming them). only: a
 * target id to ask alone, or NULL. */
static int fan_targets(const char *method, const char *pathq, const char *body, size_t blen, int64_t timeout_ms,
                       const char *only, struct fan *x, struct sl_err *err)
{
    memset(x, 0, sizeof(*x));
    struct sl_smap *s = sl_smap_get();
    x->f = sl_xcalloc((size_t)s->nnodes + 1, sizeof(*x->f));
    x->tid = sl_xcalloc((size_t)s->nnodes + 1, sizeof(char *));
    int rc = 0;
    for (int i = 0; i < s->nnodes; i++) {
        const struct sl_snode *t = &s->nodes[i];
        if (t->type != SL_NODE_TARGET || (only && strcmp(only, t->id)))
            continue;
        if (t->flags & SL_SNF_OFFLINE) {
            rc = sl_errf(err, SL_EUNAVAIL, "target t[%s] (%s) is not responding; retry when it is back or after it "
                         "is decommissioned", t->id, t->url);
            break;
        }
        x->f[x->n].url = sl_xasprintf("%s%s", t->ctrl_url, pathq);
        x->f[x->n].method = method;
        x->f[x->n].body = body;
        x->f[x->n].blen = blen;
        x->tid[x->n] = sl_xstrdup(t->id);
        x->n++;
    }
    sl_smap_put(s);
    if (rc == 0 && only && !x->n)
        rc = sl_errf(err, SL_ENOENT, "no target t[%s] in the cluster map", only);
    if (rc == 0 && !x->n && G.role != SL_ROLE_STANDALONE)
        rc = sl_errf(err, SL_EUNAVAIL, "the cluster has no targets yet");
    if (rc < 0) {
        fan_free(x);
        return -1;
    }
    sl_peer_fanout(x->f, x->n, timeout_ms);
    for (int i = 0; i < x->n; i++) {
        if (!x->f[i].ok || x->f[i].resp.status >= 300) {
            int code = x->f[i].ok ? sl_code_from_status((int)x->f[i].resp.status) : SL_EUNAVAIL;
            if (x->f[i].ok && x->f[i].resp.status == 400)
                sl_errf(err, code, "%s", x->f[i].resp.err);
            else
                sl_errf(err, code, "t[%s]: %s", x->tid[i], x->f[i].resp.err);
            fan_free(x);
            return -1;
        }
    }
    return 0;
}

/* ---- gateway: EtlMD edits (primary) ---- */

static json_t *etlmd_copy(void)
{
    json_t *d = sl_cluster_doc("etlmd");
    json_t *c = d ? json_deep_copy(d) : json_object();
    json_decref(d);
    if (!json_is_object(json_object_get(c, "etls")))
        json_object_set_new(c, "etls", json_object());
    return c;
}

/* spec of NAME in the current EtlMD (new reference) or NULL */
static json_t *etlmd_get(const char *name)
{
    json_t *d = sl_cluster_doc("etlmd");
    json_t *s = d ? json_object_get(json_object_get(d, "etls"), name) : NULL;
    if (s)
        json_incref(s);
    json_decref(d);
    return s;
}

static void init_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    if (sl_cluster_fence(&err) < 0) { /* (a primary cut off from the majority changes nothing) */
        sl_resp_err(r, &err);
        return;
    }
    json_t *j = sl_req_body_json(r, &err);
    json_t *m = j ? init_msg_parse(j, &err) : NULL;
    json_decref(j);
    if (!m) {
        sl_resp_err(r, &err);
        return;
    }
    const char *name = sl_json_str(m, "name", "");
    pthread_mutex_lock(&mdmu);
    json_t *old = etlmd_get(name);
    if (old) {
        json_decref(old);
        sl_resp_errf(r, SL_EEXIST, "%s: etl job %s already exists (remove it first with `shale etl rm %s`)", G.name,
                     name, name);
        goto out;
    }
    /* compile (and run the top level) on every target first */
    size_t blen;
    char *body = sl_json_dump(m, 0, &blen);
    struct sl_lua_limits lim;
    limits_of(m, &lim, &err);
    int64_t tmo = lim.timeout_ns / 1000000 + 5000;
    int rc;
    if (G.role == SL_ROLE_STANDALONE) {
        int mode;
        mode_of(m, &mode, &err);
        json_t *code = json_object_get(m, "code");
        rc = sl_lua_check_fn(name, json_string_value(code), json_string_length(code), entry_fn(mode), &lim, &err);
        if (rc < 0 && err.code == SL_ENOENT)
            sl_errf(&err, SL_EINVAL, "ETL init %s: the script defines no function %s(%s, ctx), which %s-mode "
                    "transforms need", name, entry_fn(mode), mode == SL_ETL_SAMPLE ? "sample" : "data",
                    mode == SL_ETL_SAMPLE ? "sample" : "object");
        else if (rc < 0) {
            sl_err_wrap(&err, "ETL init %s", name);
            if (err.code != SL_EINTERNAL)
                err.code = SL_EINVAL;
        }
    } else {
        struct fan x;
        rc = fan_targets("POST", "/v1/internal/etl/check", body, blen, tmo, NULL, &x, &err);
        if (rc == 0)
            fan_free(&x);
        else if (err.code != SL_EINVAL)
            sl_err_wrap(&err, "ETL init %s: the script must compile on every target", name);
    }
    free(body);
    if (rc < 0) {
        sl_resp_err(r, &err);
        goto out;
    }
    char xid[32];
    sl_job_id(xid, sizeof(xid), "etl-");
    json_object_set_new(m, "xaction_id", json_string(xid));
    json_object_set_new(m, "stage", json_string("Running"));
    char ts[40];
    sl_format_gotime(sl_now_ns(), "2006-01-02T15:04:05Z07:00", ts, sizeof(ts));
    json_object_set_new(m, "created", json_string(ts));
    json_t *doc = etlmd_copy();
    json_object_set(json_object_get(doc, "etls"), name, m);
    sl_cluster_set_doc("etlmd", doc);
    sl_logi("etl %s: initialised as %s", name, xid);
    sl_resp_text(r, 200, xid);
out:
    pthread_mutex_unlock(&mdmu);
    json_decref(m);
}

/* stop / start / delete */
static void edit_run(struct sl_req *r, void *arg)
{
    const char *op = arg;
    struct sl_err ferr = { 0 };
    if (sl_cluster_fence(&ferr) < 0) { /* (a primary cut off from the majority changes nothing) */
        sl_resp_err(r, &ferr);
        return;
    }
    const char *p = r->path + strlen("/v1/etl/");
    char *name = sl_xstrndup(p, strcspn(p, "/"));
    pthread_mutex_lock(&mdmu);
    json_t *doc = etlmd_copy();
    json_t *etls = json_object_get(doc, "etls");
    json_t *spec = json_object_get(etls, name);
    if (!spec) {
        sl_resp_errf(r, SL_ENOENT, "%s: etl job %s does not exist", G.name, name);
        json_decref(doc);
        goto out;
    }
    const char *stage = sl_json_str(spec, "stage", "Running");
    if (!strcmp(op, "delete")) {
        json_object_del(etls, name);
    } else if (!strcmp(op, "stop")) {
        json_object_set_new(spec, "stage", json_string("Aborted"));
    } else if (strcmp(stage, "Aborted")) {
        sl_resp_errf(r, SL_EINVAL, "%s: etl job %s is already running (start applies to stopped ETLs)", G.name, name);
        json_decref(doc);
        goto out;
    } else {
        json_object_set_new(spec, "stage", json_string("Running"));
    }
    sl_cluster_set_doc("etlmd", doc);
    sl_logi("etl %s: %s", name, op);
    sl_resp_empty(r, 200);
out:
    pthread_mutex_unlock(&mdmu);
    free(name);
}

/* ---- gateway: reads ---- */

static json_t *sum_stats(struct fan *x, const char *name)
{
    json_t *tot = json_object();
    json_int_t oc = 0, ib = 0, ob = 0, ec = 0, sc = 0;
    bool samples = false;
    for (int i = 0; i < x->n; i++) {
        json_t *j = json_loadb(x->f[i].resp.body.p ? x->f[i].resp.body.p : "{}", x->f[i].resp.body.len, 0, NULL);
        json_t *s = json_object_get(j, name);
        oc += sl_json_int(s, "obj_count", 0);
        sc += sl_json_int(s, "sample_count", 0);
        samples |= json_object_get(s, "sample_count") != NULL;
        ib += sl_json_int(s, "in_bytes", 0);
        ob += sl_json_int(s, "out_bytes", 0);
        ec += sl_json_int(s, "err_count", 0);
        json_decref(j);
    }
    json_object_set_new(tot, "obj_count", json_integer(oc));
    if (samples)
        json_object_set_new(tot, "sample_count", json_integer(sc));
    json_object_set_new(tot, "in_bytes", json_integer(ib));
    json_object_set_new(tot, "out_bytes", json_integer(ob));
    json_object_set_new(tot, "err_count", json_integer(ec));
    return tot;
}

/* in standalone mode, fan_targets asks nobody: answer from the registry */
static void local_fan(struct fan *x, const char *what, const char *name, const char *uuid)
{
    x->n = 1;
    x->f = sl_xcalloc(1, sizeof(*x->f));
    x->tid = sl_xcalloc(1, sizeof(char *));
    x->tid[0] = sl_xstrdup(G.id);
    x->f[0].url = sl_xstrdup("local");
    x->f[0].ok = 1;
    x->f[0].resp.status = 200;
    json_t *j = NULL;
    if (!strcmp(what, "stats")) {
        j = json_object();
        pthread_mutex_lock(&regmu);
        for (int i = 0; i < nreg; i++)
            json_object_set_new(j, reg[i]->name, stats_json(reg[i]));
        pthread_mutex_unlock(&regmu);
    } else {
        struct sl_etl *e = find_ref(name);
        if (!e) {
            x->f[0].resp.status = 404;
            return;
        }
        if (!strcmp(what, "errors"))
            j = errors_json(e, uuid);
        else if (!strcmp(what, "health"))
            j = stats_json(e);
        else {
            pthread_mutex_lock(&e->mu);
            sl_buf_add(&x->f[0].resp.body, e->log.p ? e->log.p : "", e->log.len);
            pthread_mutex_unlock(&e->mu);
        }
        sl_etl_release(e);
    }
    if (j) {
        size_t len;
        char *s = sl_json_dump(j, 0, &len);
        sl_buf_add(&x->f[0].resp.body, s, len);
        free(s);
        json_decref(j);
    }
}

static int ask(const char *what, const char *name, const char *uuid, const char *only, struct fan *x,
               struct sl_err *err)
{
    if (G.role == SL_ROLE_STANDALONE) {
        local_fan(x, what, name, uuid);
        return 0;
    }
    char *qn = sl_url_encode_query(name ? name : ""), *qu = sl_url_encode_query(uuid ? uuid : "");
    char *pq = sl_xasprintf("/v1/internal/etl/%s?name=%s&uuid=%s", what, qn, qu);
    free(qn);
    free(qu);
    int rc = fan_targets("GET", pq, NULL, 0, 0, only, x, err);
    free(pq);
    return rc;
}

static char *b64(const char *p, size_t n)
{
    char *out = sl_xmalloc(sl_b64_encoded_len(n, 0) + 1);
    sl_b64_encode(p, n, 0, out);
    return out;
}

static void list_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    json_t *d = sl_cluster_doc("etlmd");
    json_t *etls = d ? json_object_get(d, "etls") : NULL;
    json_t *out = json_array();
    struct fan x = { 0 };
    if (json_object_size(etls) && ask("stats", "", "", NULL, &x, &err) < 0) {
        json_decref(d);
        json_decref(out);
        sl_resp_err(r, &err);
        return;
    }
    const char *name;
    json_t *spec;
    json_object_foreach(etls, name, spec) {
        json_t *o = sum_stats(&x, name);
        json_object_set_new(o, "id", json_string(name));
        json_object_set_new(o, "stage", json_string(sl_json_str(spec, "stage", "Running")));
        json_object_set_new(o, "xaction_id", json_string(sl_json_str(spec, "xaction_id", "")));
        json_object_set_new(o, "mode", json_string(sl_json_str(spec, "mode", "object")));
        json_object_set_new(o, "runtime", json_string("lua"));
        json_array_append_new(out, o);
    }
    fan_free(&x);
    json_decref(d);
    sl_resp_json_new(r, 200, out);
}

static void details_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    const char *p = r->path + strlen("/v1/etl/");
    char *name = sl_xstrndup(p, strcspn(p, "/"));
    const char *rest = p + strlen(name);
    while (*rest == '/')
        rest++;
    struct fan x;
    json_t *spec = etlmd_get(name);
    if (!spec) {
        sl_resp_errf(r, SL_ENOENT, "%s: etl job %s does not exist", G.name, name);
        goto out;
    }
    /* rest: "", "logs[/TID]", "health", "metrics" */
    const char *what = !*rest ? "errors" : sl_has_prefix(rest, "logs") ? "logs" : "health";
    const char *only = NULL;
    if (sl_has_prefix(rest, "logs/") && rest[5])
        only = rest + 5;
    if (*rest && strcmp(rest, "health") && strcmp(rest, "metrics") && !sl_has_prefix(rest, "logs")) {
        sl_resp_errf(r, SL_ENOENT, "no such endpoint: GET /v1/etl/%s/%s (valid: logs[/TARGET_ID], health, metrics)",
                     name, rest);
        goto out;
    }
    if (ask(what, name, sl_req_query(r, "uuid"), only, &x, &err) < 0) {
        sl_resp_err(r, &err);
        goto out;
    }
    if (!*rest) {
        json_t *errs = json_array();
        for (int i = 0; i < x.n; i++) {
            json_t *a = json_loadb(x.f[i].resp.body.p ? x.f[i].resp.body.p : "[]", x.f[i].resp.body.len, 0, NULL);
            size_t k;
            json_t *e;
            json_array_foreach(a, k, e) json_array_append(errs, e);
            json_decref(a);
        }
        json_t *o = json_object();
        json_t *im = json_deep_copy(spec);
        /* what AIStore's SDK parses (ETLDetails): code as base64, a
         * communication string (native-gaps.md §8) */
        json_t *code = json_object_get(spec, "code");
        char *enc = b64(json_string_value(code) ? json_string_value(code) : "", json_string_length(code));
        json_object_set_new(im, "code", json_string(enc));
        free(enc);
        if (!json_is_string(json_object_get(im, "communication")))
            json_object_set_new(im, "communication", json_string("hpush://"));
        json_object_set_new(o, "init_msg", im);
        json_object_set_new(o, "obj_errors", errs);
        sl_resp_json_new(r, 200, o);
    } else {
        json_t *a = json_array();
        for (int i = 0; i < x.n; i++) {
            json_t *o = json_object();
            json_object_set_new(o, "target_id", json_string(x.tid[i]));
            if (!strcmp(what, "logs")) {
                char *enc = b64(x.f[i].resp.body.p ? x.f[i].resp.body.p : "", x.f[i].resp.body.len);
                json_object_set_new(o, "logs", json_string(enc));
                free(enc);
            } else {
                json_t *s = json_loadb(x.f[i].resp.body.p ? x.f[i].resp.body.p : "{}", x.f[i].resp.body.len, 0, NULL);
                if (!strcmp(rest, "health")) {
                    json_object_set_new(o, "health_status", json_string(sl_json_str(s, "stage", "Unknown")));
                } else {
                    json_object_set_new(o, "cpu", json_real((double)sl_json_int(s, "cpu_ns", 0) / 1e9));
                    json_object_set_new(o, "mem", json_integer(sl_json_int(s, "mem_limit", 0)));
                    json_object_set_new(o, "calls", json_integer(sl_json_int(s, "calls", 0)));
                    json_object_set_new(o, "obj_count", json_integer(sl_json_int(s, "obj_count", 0)));
                }
                json_decref(s);
            }
            json_array_append_new(a, o);
        }
        sl_resp_json_new(r, 200, a);
    }
    fan_free(&x);
out:
    json_decref(spec); /* NULL when it does not exist */
    free(name);
}

static void init_done(struct sl_req *r)
{
    sl_req_offload(r, init_run, NULL, NULL);
}

static void edit_done(struct sl_req *r)
{
    const char *p = r->path + strlen("/v1/etl/");
    const char *slash = strchr(p, '/');
    const char *op = r->method == SL_M_DELETE ? "delete" : slash && !strcmp(slash, "/stop") ? "stop" : "start";
    sl_req_offload(r, edit_run, NULL, (void *)op); /* (the change goes to every node) */
}

void sl_etl_route(struct sl_req *r)
{
    if (G.role == SL_ROLE_TARGET) {
        sl_resp_errf(r, SL_EINVAL, "%s is a storage target: send /v1/etl requests to a gateway (proxy)", G.name);
        return;
    }
    bool root = !strcmp(r->path, "/v1/etl") || !strcmp(r->path, "/v1/etl/");
    bool write = r->method != SL_M_GET && r->method != SL_M_HEAD;
    if (write && G.role == SL_ROLE_PROXY && !sl_is_primary()) {
        sl_forward_to_primary(r);
        return;
    }
    if (root) {
        if (r->method == SL_M_PUT)
            sl_req_buffer_body(r, SL_ETL_MAX_CODE * 8 + 65536, init_done);
        else if (r->method == SL_M_GET)
            sl_req_offload(r, list_run, NULL, NULL);
        else
            sl_resp_method_not_allowed(r, "GET, PUT");
        return;
    }
    const char *p = r->path + strlen("/v1/etl/");
    const char *slash = strchr(p, '/');
    if (r->method == SL_M_GET) {
        sl_req_offload(r, details_run, NULL, NULL);
    } else if (r->method == SL_M_DELETE && !slash) {
        sl_req_buffer_body(r, sl_conf->http_max_body_json, edit_done);
    } else if (r->method == SL_M_POST && slash && (!strcmp(slash, "/stop") || !strcmp(slash, "/start"))) {
        sl_req_buffer_body(r, sl_conf->http_max_body_json, edit_done);
    } else {
        sl_resp_errf(r, SL_EINVAL, "unsupported request %s %s (ETL API: PUT /v1/etl, GET /v1/etl[/NAME[/logs|health|"
                     "metrics]], POST /v1/etl/NAME/stop|start, DELETE /v1/etl/NAME)", r->method_str, r->path);
    }
}
