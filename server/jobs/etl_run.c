/* SPDX-License-Identifier: MIT
 * etl_run.c: running transforms (see etl.h): object mode over bytes, sample
 * mode as a streaming pipe from a shard reader to a shard writer, and the
 * inline GET (?etl_name=) that uses them. Lua runs on the background pool
 * (bg.h), never on the HTTP threads: a script that loops until its timeout
 * holds one pool thread, not a connection loop.
 */
#include "etl.h"
#include "arch.h"
#include "bg.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "plug.h"
#include "stats.h"
#include "store.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <xxhash.h>

#define CHUNK (256 * 1024)
#define STREAM_HIGH (2 * 1024 * 1024)   /* produce ahead at most this much */
#define STREAM_LOW (512 * 1024)         /* resume producing below this */

/* ---- etl_args ---- */

static int json_to_val(json_t *j, struct sl_lua_val *out, int depth)
{
    *out = sl_lua_nil();
    if (depth > 32)
        return -1;
    if (json_is_string(j))
        return sl_lua_str_dup(out, json_string_value(j), json_string_length(j));
    if (json_is_integer(j)) {
        *out = sl_lua_num((double)json_integer_value(j));
        return 0;
    }
    if (json_is_real(j)) {
        *out = sl_lua_num(json_real_value(j));
        return 0;
    }
    if (json_is_boolean(j)) {
        *out = sl_lua_bool(json_is_true(j));
        return 0;
    }
    if (json_is_array(j)) {
        *out = sl_lua_table();
        size_t i;
        json_t *x;
        json_array_foreach(j, i, x) {
            struct sl_lua_val v;
            if (json_is_null(x))
                continue;
            if (json_to_val(x, &v, depth + 1) < 0 || sl_lua_table_addi(out, (int64_t)i + 1, v) < 0) {
                sl_lua_val_free(out);
                return -1;
            }
        }
        return 0;
    }
    if (json_is_object(j)) {
        *out = sl_lua_table();
        const char *k;
        json_t *x;
        json_object_foreach(j, k, x) {
            struct sl_lua_val v;
            if (json_is_null(x))
                continue;
            if (json_to_val(x, &v, depth + 1) < 0 || sl_lua_table_adds(out, k, v) < 0) {
                sl_lua_val_free(out);
                return -1;
            }
        }
        return 0;
    }
    return 0; /* null */
}

void sl_etl_args_val(const char *a, struct sl_lua_val *out)
{
    *out = sl_lua_nil();
    if (!a || !*a)
        return;
    if (a[0] == '{' || a[0] == '[') {
        json_t *j = json_loads(a, JSON_DECODE_ANY, NULL);
        if (j && json_to_val(j, out, 0) == 0) {
            json_decref(j);
            return;
        }
        json_decref(j);
    }
    sl_lua_str_dup(out, a, strlen(a));
}

/* ---- one call: its seed ---- */

/* A hash of a value's content (type tags, bytes, table entries in order). */
static uint64_t val_hash(const struct sl_lua_val *v, uint64_t h, int depth)
{
    unsigned char t = (unsigned char)v->type;
    h = XXH64(&t, 1, h);
    switch (v->type) {
    case SL_LUA_STR:
        return XXH64(v->s.p, v->s.len, h);
    case SL_LUA_NUM:
        return XXH64(&v->n, sizeof(v->n), h);
    case SL_LUA_BOOL:
        t = v->b ? 1 : 0;
        return XXH64(&t, 1, h);
    case SL_LUA_TABLE:
        for (size_t i = 0; i < v->t.n && depth < 32; i++)
            h = val_hash(&v->t.kv[i].v, val_hash(&v->t.kv[i].k, h, depth + 1), depth + 1);
        return h;
    default:
        return h;
    }
}

/* The seed of one call: the ETL's seed, the object's name or the sample's
 * key, and the request's etl_args. The same epoch (etl_args) gives the same
 * random crops on any target and any rerun; another epoch, other crops. */
static uint64_t call_seed(const char *key, size_t klen, const struct sl_lua_val *ctx)
{
    const struct sl_lua_val *a = ctx ? sl_lua_table_get(ctx, "args") : NULL;
    uint64_t h = XXH64(key, klen, 0x5348414c45ULL);
    return a ? val_hash(a, h, 0) : h;
}

/* budget_ns > 0: a shorter wall-time budget than the ETL's own (inline try) */
static int call_budget(struct sl_etl *e, const char *cname, const struct sl_lua_val *args, int nargs,
                       int64_t budget_ns, uint64_t seed, struct sl_lua_val *res, struct sl_err *err)
{
    struct sl_etl_logctx lc = { e, cname };
    struct sl_lua_limits lim = e->lim;
    lim.seed = XXH64(&seed, sizeof(seed), e->lim.seed);
    if (budget_ns > 0 && budget_ns < lim.timeout_ns)
        lim.timeout_ns = budget_ns;
    int64_t c0 = sl_mono_ns(); /* busy time (vDSO); a CPU clock costs a system call */
    int rc = sl_lua_call(e->name, e->code, e->code_len, e->mode == SL_ETL_SAMPLE ? "transform_sample" : "transform",
                         args, nargs, &lim, sl_etl_log_sink, &lc, res, err);
    __atomic_add_fetch(&e->cpu_ns, (uint64_t)(sl_mono_ns() - c0), __ATOMIC_RELAXED);
    __atomic_add_fetch(&e->calls, 1, __ATOMIC_RELAXED);
    if (rc < 0 && err->code == SL_ETOOBIG) {
        char ml[32], mo[32];
        sl_format_size(e->lim.mem_limit, ml, sizeof(ml));
        sl_format_size(e->lim.max_output, mo, sizeof(mo));
        size_t l = strlen(err->msg);
        snprintf(err->msg + l, sizeof(err->msg) - l, " (etl %s has mem_limit %s, max_output %s: re-create it with "
                 "larger ones if this object needs them)", e->name, ml, mo);
    }
    return rc;
}

static int call(struct sl_etl *e, const char *cname, const struct sl_lua_val *args, int nargs, uint64_t seed,
                struct sl_lua_val *res, struct sl_err *err)
{
    return call_budget(e, cname, args, nargs, 0, seed, res, err);
}

/* Owned deep copy of a value (args are small: depth and size bounded by
 * the request's URL). */
static struct sl_lua_val val_dup(const struct sl_lua_val *v)
{
    struct sl_lua_val out = sl_lua_nil();
    switch (v->type) {
    case SL_LUA_STR:
        sl_lua_str_dup(&out, v->s.p, v->s.len);
        break;
    case SL_LUA_TABLE:
        out = sl_lua_table();
        for (size_t i = 0; i < v->t.n; i++)
            sl_lua_table_add(&out, val_dup(&v->t.kv[i].k), val_dup(&v->t.kv[i].v));
        break;
    default:
        out = *v;
        out.borrowed = false;
        break;
    }
    return out;
}

/* ctx = {bucket=, name=, provider=, args=, index=0} (args copied) */
static void make_ctx(struct sl_lua_val *ctx, const struct sl_bck *b, const char *name, size_t nlen,
                     const struct sl_lua_val *args)
{
    *ctx = sl_lua_table();
    struct sl_lua_val v;
    sl_lua_str_dup(&v, b->name, strlen(b->name));
    sl_lua_table_adds(ctx, "bucket", v);
    sl_lua_str_dup(&v, name, nlen);
    sl_lua_table_adds(ctx, "name", v);
    sl_lua_str_dup(&v, b->provider, strlen(b->provider));
    sl_lua_table_adds(ctx, "provider", v);
    if (args && args->type != SL_LUA_NIL)
        sl_lua_table_adds(ctx, "args", val_dup(args));
    sl_lua_table_adds(ctx, "index", sl_lua_num(0));
}

static void cname_of(char *out, size_t sz, const struct sl_bck *b, const char *name, size_t nlen)
{
    sl_obj_cname(out, sz, b, name, nlen);
}

/* ---- object mode ---- */

uint64_t sl_etl_max_input(struct sl_etl **v, int n)
{
    uint64_t cap = UINT64_MAX;
    for (int i = 0; i < n; i++)
        if (v[i]->lim.mem_limit / 3 < cap)
            cap = v[i]->lim.mem_limit / 3;
    if (sl_conf->etl_max_object_size && cap > sl_conf->etl_max_object_size)
        cap = sl_conf->etl_max_object_size;
    return cap;
}

/* budget_ns > 0: an inline try on an HTTP thread; a timeout then marks the
 * ETL slow, is not recorded, and returns 1 so the caller re-runs it on the
 * background pool with the full budget (transforms are pure functions of
 * their input, so running one again is safe). */
static int run_bytes(struct sl_etl **v, int n, const struct sl_bck *b, const char *name, size_t nlen,
                     const struct sl_lua_val *args, const char *job, const char *data, size_t len,
                     int64_t budget_ns, char **out, size_t *olen, struct sl_err *err)
{
    char cn[400];
    cname_of(cn, sizeof(cn), b, name, nlen);
    struct sl_lua_val ctx;
    make_ctx(&ctx, b, name, nlen, args);
    const char *cur = data;
    size_t curlen = len;
    char *owned = NULL;
    int rc = 0;
    uint64_t seed = call_seed(name, nlen, &ctx);   /* (each stage mixes in its own ETL's seed) */
    for (int i = 0; i < n; i++) {
        struct sl_etl *e = v[i];
        struct sl_lua_val a[2] = { sl_lua_str_ref(cur, curlen), ctx };
        struct sl_lua_val res = sl_lua_nil();
        if (call_budget(e, cn, a, 2, budget_ns, seed, &res, err) < 0) {
            if (budget_ns > 0 && err->code == SL_ETIMEOUT && budget_ns < e->lim.timeout_ns) {
                e->slow = true;
                rc = 1;
                break;
            }
            sl_err_wrap(err, "etl %s: %s", e->name, cn);
            sl_etl_record_error(e, job, cn, sl_etl_ecode(err), err->msg);
            rc = -1;
            break;
        }
        if (res.type != SL_LUA_STR) {
            char d[64];
            sl_errf(err, SL_EINVAL, "etl %s: %s: transform returned %s; it must return the new object's bytes as a "
                    "string", e->name, cn, sl_lua_val_describe(&res, d, sizeof(d)));
            sl_lua_val_free(&res);
            sl_etl_record_error(e, job, cn, 500, err->msg);
            rc = -1;
            break;
        }
        __atomic_add_fetch(&e->obj_count, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&e->in_bytes, curlen, __ATOMIC_RELAXED);
        __atomic_add_fetch(&e->out_bytes, res.s.len, __ATOMIC_RELAXED);
        free(owned);
        /* returned strings are malloc'd and owned: take the buffer */
        owned = (char *)res.s.p;
        cur = owned;
        curlen = res.s.len;
    }
    sl_lua_val_free(&ctx);
    if (rc == 1) {
        free(owned);
        return 1;
    }
    if (rc < 0) {
        free(owned);
        err->code = err->code == SL_ETIMEOUT ? SL_ETIMEOUT : SL_EINTERNAL;
        return -1;
    }
    if (!owned) {
        owned = sl_xmalloc(len + 1);
        memcpy(owned, data, len);
    }
    *out = owned;
    *olen = curlen;
    return 0;
}

int sl_etl_run_bytes(struct sl_etl **v, int n, const struct sl_bck *b, const char *name, size_t nlen,
                     const struct sl_lua_val *args, const char *job, const char *data, size_t len, char **out,
                     size_t *olen, struct sl_err *err)
{
    return run_bytes(v, n, b, name, nlen, args, job, data, len, 0, out, olen, err);
}

/* ---- sample mode: the pipe ---- */

struct member {
    char *ext;
    size_t elen;
    char *data;
    size_t len;
};

struct sl_etl_pipe {
    struct sl_etl **v;
    int n;
    char *job;
    char cn[400];
    struct sl_lua_val ctx;
    struct sl_plug_reader *rd;
    struct sl_plug_writer *w;
    /* the entry read ahead: its header is known, its data not read yet */
    bool have_pending;
    char *pname;
    size_t plen;
    int64_t psize, pmtime;
    /* the sample being collected */
    char *key;
    size_t klen;
    int64_t mtime;
    struct member *m;
    int nm, capm;
    size_t bytes;
    size_t max_sample;
    uint64_t samples, dropped, index;
    bool eof, finished;
    bool recorded;              /* the current failure is already an object error */
    char *lastkey;              /* key of the last sample written */
    size_t lastlen;
    char *buf;
};

static void sample_clear(struct sl_etl_pipe *p)
{
    for (int i = 0; i < p->nm; i++) {
        free(p->m[i].ext);
        free(p->m[i].data);
    }
    p->nm = 0;
    p->bytes = 0;
    free(p->key);
    p->key = NULL;
    p->klen = 0;
}

int sl_etl_pipe_open(struct sl_etl **v, int n, const struct sl_bck *b, const char *name, size_t nlen,
                     const struct sl_lua_val *args, const char *job, const struct sl_plug *fmt,
                     const struct sl_io *in, const struct sl_io *out, struct sl_etl_pipe **pp, struct sl_err *err)
{
    struct sl_etl_pipe *p = sl_xcalloc(1, sizeof(*p));
    p->v = v;
    p->n = n;
    p->job = job ? sl_xstrdup(job) : NULL;
    cname_of(p->cn, sizeof(p->cn), b, name, nlen);
    make_ctx(&p->ctx, b, name, nlen, args);
    p->buf = sl_xmalloc(CHUNK);
    size_t minmem = SIZE_MAX;
    for (int i = 0; i < n; i++)
        if (v[i]->lim.mem_limit < minmem)
            minmem = v[i]->lim.mem_limit;
    p->max_sample = minmem / 3;
    struct sl_fmt_limits lim;
    sl_arch_limits(&lim);
    if (sl_plug_reader_open(fmt, in, &lim, 0, &p->rd, err) < 0 || sl_plug_writer_open(fmt, out, 0, &p->w, err) < 0) {
        sl_err_wrap(err, "etl %s: %s", v[0]->name, p->cn);
        sl_etl_pipe_close(p);
        return -1;
    }
    *pp = p;
    return 0;
}

uint64_t sl_etl_pipe_samples(const struct sl_etl_pipe *p)
{
    return p->samples;
}

uint64_t sl_etl_pipe_dropped(const struct sl_etl_pipe *p)
{
    return p->dropped;
}

void sl_etl_pipe_close(struct sl_etl_pipe *p)
{
    if (!p)
        return;
    sample_clear(p);
    free(p->m);
    free(p->pname);
    sl_plug_reader_close(p->rd);
    sl_plug_writer_close(p->w);
    sl_lua_val_free(&p->ctx);
    free(p->buf);
    free(p->job);
    free(p->lastkey);
    free(p);
}

/* WebDataset skips top-level "__x__" and "__x__/..." (metadata) */
static bool is_meta(const char *name, size_t len)
{
    if (len < 4 || name[0] != '_' || name[1] != '_')
        return false;
    const char *slash = memchr(name, '/', len);
    size_t first = slash ? (size_t)(slash - name) : len;
    return first >= 4 && name[first - 1] == '_' && name[first - 2] == '_';
}

/* Copy the pending member through unchanged. */
static int passthrough(struct sl_etl_pipe *p, struct sl_err *err)
{
    if (p->psize < 0) {
        /* unknown size: buffer it */
        struct sl_buf b;
        sl_buf_init(&b);
        int64_t k;
        while ((k = sl_plug_reader_read(p->rd, p->buf, CHUNK, err)) > 0) {
            if (b.len + (size_t)k > p->max_sample) {
                sl_buf_free(&b);
                return sl_errf(err, SL_ETOOBIG, "%s: member \"%.*s\" is larger than the ETL's memory allows", p->cn,
                               (int)SL_MIN(p->plen, 200), p->pname);
            }
            sl_buf_add(&b, p->buf, (size_t)k);
        }
        int rc = k < 0 ? -1 : 0;
        if (rc == 0 && (sl_plug_writer_add(p->w, p->pname, p->plen, (int64_t)b.len, p->pmtime, 0, err) < 0 ||
                        (b.len && sl_plug_writer_write(p->w, b.p, b.len, err) < 0)))
            rc = -1;
        sl_buf_free(&b);
        return rc;
    }
    if (sl_plug_writer_add(p->w, p->pname, p->plen, p->psize, p->pmtime, 0, err) < 0)
        return -1;
    int64_t k;
    while ((k = sl_plug_reader_read(p->rd, p->buf, CHUNK, err)) > 0)
        if (sl_plug_writer_write(p->w, p->buf, (size_t)k, err) < 0)
            return -1;
    return k < 0 ? -1 : 0;
}

/* Read the pending member's data into the current sample. */
static int collect(struct sl_etl_pipe *p, size_t kl, size_t ext_off, struct sl_err *err)
{
    const char *ext = p->pname + ext_off;
    size_t elen = p->plen - ext_off;
    if (!p->nm) {
        free(p->key);
        p->key = sl_xstrndup(p->pname, kl);
        p->klen = kl;
        p->mtime = p->pmtime;
    }
    for (int i = 0; i < p->nm; i++)
        if (p->m[i].elen == elen && !memcmp(p->m[i].ext, ext, elen))
            return sl_errf(err, SL_EINVAL, "%s: sample \"%.*s\" has two members with extension \"%.*s\" (\"%.*s\"); "
                           "a WebDataset reader rejects such a shard too", p->cn, (int)SL_MIN(kl, 200), p->key,
                           (int)SL_MIN(elen, 100), ext, (int)SL_MIN(p->plen, 200), p->pname);
    struct sl_buf b;
    sl_buf_init(&b);
    if (p->psize > 0)
        sl_buf_reserve(&b, (size_t)SL_MIN((uint64_t)p->psize, (uint64_t)p->max_sample + 1));
    int64_t k;
    while ((k = sl_plug_reader_read(p->rd, p->buf, CHUNK, err)) > 0) {
        if (p->bytes + b.len + (size_t)k > p->max_sample) {
            sl_buf_free(&b);
            char lim[32];
            sl_format_size(p->max_sample * 3, lim, sizeof(lim));
            return sl_errf(err, SL_ETOOBIG, "%s: sample \"%.*s\" is larger than %zu bytes: a sample-mode ETL holds "
                           "one sample in memory and its mem_limit of %s allows about a third of that; raise "
                           "mem_limit", p->cn, (int)SL_MIN(kl, 200), p->key, p->max_sample, lim);
        }
        sl_buf_add(&b, p->buf, (size_t)k);
    }
    if (k < 0) {
        sl_buf_free(&b);
        return -1;
    }
    if (p->nm == p->capm) {
        p->capm = p->capm ? p->capm * 2 : 8;
        p->m = sl_xrealloc(p->m, (size_t)p->capm * sizeof(*p->m));
    }
    struct member *m = &p->m[p->nm++];
    m->ext = sl_xstrndup(ext, elen);
    m->elen = elen;
    m->len = b.len;
    m->data = b.p ? sl_buf_steal(&b) : sl_xstrdup("");
    p->bytes += m->len;
    return 0;
}

/* Write one output field; value strings or numbers. */
static int write_field(struct sl_etl_pipe *p, struct sl_etl *e, const char *key, size_t klen,
                       const struct sl_lua_kv *kv, struct sl_err *err)
{
    if (kv->k.type != SL_LUA_STR)
        return sl_errf(err, SL_EINVAL, "etl %s: %s: sample \"%.*s\": transform_sample returned a field with a number "
                       "key; fields are named by extension (sample.jpg, sample[\"seg.png\"])", e->name, p->cn,
                       (int)SL_MIN(klen, 200), key);
    const char *f = kv->k.s.p;
    size_t fl = kv->k.s.len;
    if (fl >= 2 && f[0] == '_' && f[1] == '_')
        return 0; /* __key__, __url__, ... are not members */
    if (!fl || memchr(f, '/', fl))
        return sl_errf(err, SL_EINVAL, "etl %s: %s: sample \"%.*s\": field \"%.*s\" cannot name a member (an "
                       "extension is not empty and has no '/')", e->name, p->cn, (int)SL_MIN(klen, 200), key,
                       (int)SL_MIN(fl, 100), f);
    char num[64];
    const char *data;
    size_t dlen;
    if (kv->v.type == SL_LUA_STR) {
        data = kv->v.s.p;
        dlen = kv->v.s.len;
    } else if (kv->v.type == SL_LUA_NUM) {
        double d = kv->v.n;
        if (d == (double)(int64_t)d)
            snprintf(num, sizeof(num), "%lld", (long long)(int64_t)d);
        else
            snprintf(num, sizeof(num), "%.17g", d);
        data = num;
        dlen = strlen(num);
    } else {
        char d[64];
        return sl_errf(err, SL_EINVAL, "etl %s: %s: sample \"%.*s\": field \"%.*s\" is %s; member values must be "
                       "strings (bytes) or numbers", e->name, p->cn, (int)SL_MIN(klen, 200), key,
                       (int)SL_MIN(fl, 100), f, sl_lua_val_describe(&kv->v, d, sizeof(d)));
    }
    struct sl_buf nm;
    sl_buf_init(&nm);
    sl_buf_add(&nm, key, klen);
    sl_buf_addc(&nm, '.');
    sl_buf_add(&nm, f, fl);
    int rc = 1;
    if (sl_plug_member_name_check(nm.p, nm.len, err) < 0) {
        sl_err_wrap(err, "etl %s: %s: output", e->name, p->cn);
        rc = -1;
    } else if (sl_plug_writer_add(p->w, nm.p, nm.len, (int64_t)dlen, p->mtime, 0, err) < 0 ||
               (dlen && sl_plug_writer_write(p->w, data, dlen, err) < 0)) {
        rc = -1;
    }
    sl_buf_free(&nm);
    return rc;
}

/* A decoder's error (shale.image / shale.audio) ends with "(the N-byte
 * input)": when exactly one member of the sample has N bytes, name it, so
 * that the error says which file of which shard is bad. */
static void name_member(const struct sl_etl_pipe *p, struct sl_err *err)
{
    const char *t = strstr(err->msg, "-byte input)");
    const char *d = strstr(err->msg, ".decode: ");
    if (!t || !d)
        return;
    const char *q = t;
    while (q > err->msg && q[-1] >= '0' && q[-1] <= '9')
        q--;
    if (q == t || q - err->msg < 5 || strncmp(q - 5, "(the ", 5))
        return;
    size_t n = strtoull(q, NULL, 10);
    int hit = -1;
    for (int i = 0; i < p->nm; i++) {
        if (p->m[i].len != n)
            continue;
        if (hit >= 0)
            return;     /* two members of that size: do not guess */
        hit = i;
    }
    if (hit < 0)
        return;
    char head[320];
    int hl = snprintf(head, sizeof(head), "member \"%.*s.%.*s\": ", (int)SL_MIN(p->klen, 200), p->key,
                      (int)SL_MIN(p->m[hit].elen, 100), p->m[hit].ext);
    size_t ml = strlen(err->msg), room = sizeof(err->msg) - 1;
    if (hl <= 0 || (size_t)hl >= room)
        return;
    if (ml > room - (size_t)hl)
        ml = room - (size_t)hl;
    memmove(err->msg + hl, err->msg, ml);
    memcpy(err->msg, head, (size_t)hl);
    err->msg[hl + ml] = 0;
}

/* Run the pipeline on the collected sample and write the result. */
static int process(struct sl_etl_pipe *p, struct sl_err *err)
{
    struct sl_lua_val s = sl_lua_table();
    sl_lua_table_adds(&s, "__key__", sl_lua_str_ref(p->key, p->klen));
    for (int i = 0; i < p->nm; i++)
        sl_lua_table_add(&s, sl_lua_str_ref(p->m[i].ext, p->m[i].elen), sl_lua_str_ref(p->m[i].data, p->m[i].len));
    /* ctx.index = position of the sample in the shard */
    struct sl_lua_val *idx = (struct sl_lua_val *)sl_lua_table_get(&p->ctx, "index");
    if (idx)
        *idx = sl_lua_num((double)p->index);
    p->index++;
    char objn[600];
    snprintf(objn, sizeof(objn), "%s [sample %.*s]", p->cn, (int)SL_MIN(p->klen, 150), p->key);
    int rc = 0;
    size_t inbytes = p->bytes;
    uint64_t seed = call_seed(p->key, p->klen, &p->ctx);
    for (int i = 0; i < p->n && s.type == SL_LUA_TABLE; i++) {
        struct sl_etl *e = p->v[i];
        struct sl_lua_val a[2] = { s, p->ctx };
        struct sl_lua_val res = sl_lua_nil();
        if (call(e, objn, a, 2, seed, &res, err) < 0) {
            if (i == 0)
                name_member(p, err);
            sl_err_wrap(err, "etl %s: %s: sample \"%.*s\"", e->name, p->cn, (int)SL_MIN(p->klen, 200), p->key);
            sl_etl_record_error(e, p->job, p->cn, sl_etl_ecode(err), err->msg);
            p->recorded = true;
            rc = -1;
            break;
        }
        if (res.type != SL_LUA_NIL && res.type != SL_LUA_TABLE) {
            char d[64];
            sl_errf(err, SL_EINVAL, "etl %s: %s: sample \"%.*s\": transform_sample returned %s; it must return a "
                    "sample table or nil (to drop the sample)", e->name, p->cn, (int)SL_MIN(p->klen, 200), p->key,
                    sl_lua_val_describe(&res, d, sizeof(d)));
            sl_lua_val_free(&res);
            sl_etl_record_error(e, p->job, p->cn, 500, err->msg);
            p->recorded = true;
            rc = -1;
            break;
        }
        __atomic_add_fetch(&e->sample_count, 1, __ATOMIC_RELAXED);
        __atomic_add_fetch(&e->in_bytes, inbytes, __ATOMIC_RELAXED);
        sl_lua_val_free(&s);  /* borrowed refs (first stage) or the previous stage's output */
        s = res;
        inbytes = 0;
        if (s.type == SL_LUA_TABLE)
            for (size_t k = 0; k < s.t.n; k++)
                if (s.t.kv[k].v.type == SL_LUA_STR)
                    inbytes += s.t.kv[k].v.s.len;
        __atomic_add_fetch(&e->out_bytes, s.type == SL_LUA_TABLE ? inbytes : 0, __ATOMIC_RELAXED);
    }
    p->samples++;
    if (rc == 0 && s.type != SL_LUA_TABLE) {
        p->dropped++;
    } else if (rc == 0) {
        const char *key = p->key;
        size_t klen = p->klen;
        struct sl_etl *last = p->v[p->n - 1];
        const struct sl_lua_val *k = sl_lua_table_get(&s, "__key__");
        if (k && (k->type != SL_LUA_STR || !k->s.len)) {
            char d[64];
            rc = sl_errf(err, SL_EINVAL, "etl %s: %s: sample \"%.*s\": transform_sample returned __key__ = %s; it "
                         "must be a non-empty string (or leave it as it was)", last->name, p->cn,
                         (int)SL_MIN(p->klen, 200), p->key, sl_lua_val_describe(k, d, sizeof(d)));
        } else if (k) {
            key = k->s.p;
            klen = k->s.len;
        }
        if (rc == 0 && k) {
            /* the members must read back as this key: no dot in its last component */
            struct sl_wds_split sp;
            sl_plugin_wds_split(key, klen, &sp);
            if (sp.has_dot || !sp.stem_len)
                rc = sl_errf(err, SL_EINVAL, "etl %s: %s: sample \"%.*s\": the new __key__ \"%.*s\" %s, so its "
                             "members would not read back as one sample (WebDataset's key ends at the first dot of "
                             "the basename)", last->name, p->cn, (int)SL_MIN(p->klen, 200), p->key,
                             (int)SL_MIN(klen, 200), key, sp.has_dot ? "has a dot in its last component"
                                                                     : "ends with '/'");
        }
        if (rc == 0 && p->lastkey && p->lastlen == klen && !memcmp(p->lastkey, key, klen))
            rc = sl_errf(err, SL_EINVAL, "etl %s: %s: sample \"%.*s\": the new __key__ \"%.*s\" is the key of the "
                         "sample written just before it; WebDataset would read the two as one sample with duplicate "
                         "members", last->name, p->cn, (int)SL_MIN(p->klen, 200), p->key, (int)SL_MIN(klen, 200),
                         key);
        if (rc < 0) {
            sl_etl_record_error(last, p->job, p->cn, 500, err->msg);
            p->recorded = true;
            sl_lua_val_free(&s);
            sample_clear(p);
            return -1;
        }
        int wrote = 0;
        for (size_t i = 0; i < s.t.n && rc == 0; i++) {
            int w = write_field(p, last, key, klen, &s.t.kv[i], err);
            if (w < 0) {
                rc = -1;
                sl_etl_record_error(last, p->job, p->cn, err->code == SL_EINVAL ? 500 : sl_err_status(err->code),
                                    err->msg);
                p->recorded = true;
            }
            wrote += w > 0;
        }
        if (rc == 0 && !wrote)
            p->dropped++;
        if (rc == 0 && wrote) {
            free(p->lastkey);
            p->lastkey = sl_xstrndup(key, klen);
            p->lastlen = klen;
        }
    }
    sl_lua_val_free(&s);
    sample_clear(p);
    return rc;
}

static int pipe_step(struct sl_etl_pipe *p, struct sl_err *err);

/* Every failure becomes an object error of the (first) ETL, once. */
int sl_etl_pipe_step(struct sl_etl_pipe *p, struct sl_err *err)
{
    p->recorded = false;
    int rc = pipe_step(p, err);
    if (rc < 0 && !p->recorded)
        sl_etl_record_error(p->v[0], p->job, p->cn, sl_err_status(err->code), err->msg);
    return rc;
}

static int pipe_step(struct sl_etl_pipe *p, struct sl_err *err)
{
    if (p->finished)
        return 0;
    for (;;) {
        if (!p->have_pending && !p->eof) {
            struct sl_fmt_entry e;
            int rc = sl_plug_reader_next(p->rd, &e, err);
            if (rc < 0)
                return -1;
            if (rc == 1) {
                p->eof = true;
            } else {
                free(p->pname);
                p->pname = sl_xstrndup(e.name, e.name_len);
                p->plen = e.name_len;
                p->psize = e.size;
                p->pmtime = e.mtime;
                p->have_pending = true;
            }
        }
        if (!p->have_pending) {
            if (p->nm)
                return process(p, err) < 0 ? -1 : 1;
            if (sl_plug_writer_finish(p->w, err) < 0)
                return -1;
            p->finished = true;
            for (int i = 0; i < p->n; i++) /* (a shard: one object; its samples are counted as they go) */
                __atomic_add_fetch(&p->v[i]->obj_count, 1, __ATOMIC_RELAXED);
            return 0;
        }
        struct sl_wds_split sp;
        sl_plugin_wds_split(p->pname, p->plen, &sp);
        size_t kl = sp.dir_len + sp.stem_len;
        bool keyless = !sp.has_dot || !sp.stem_len || !sp.ext_len || is_meta(p->pname, p->plen);
        if (p->nm && (keyless || kl != p->klen || memcmp(p->pname, p->key, kl)))
            return process(p, err) < 0 ? -1 : 1; /* the pending member starts something new */
        if (keyless) {
            p->have_pending = false;
            return passthrough(p, err) < 0 ? -1 : 1;
        }
        p->have_pending = false;
        if (collect(p, kl, sp.ext_off, err) < 0)
            return -1;
    }
}

/* ---- inline GET ---- */

struct iget {
    struct sl_etl *v[SL_ETL_MAX_PIPELINE];
    int n;
    struct sl_bck b;
    char *name;
    size_t nlen;
    int fd;
    struct sl_objmd md;
    struct sl_lua_val args;
    const struct sl_plug *fmt;
};

static void iget_free(struct iget *g)
{
    sl_etl_release_list(g->v, g->n);
    sl_bck_release(&g->b);
    free(g->name);
    if (g->fd >= 0)
        close(g->fd);
    sl_objmd_free(&g->md);
    sl_lua_val_free(&g->args);
    free(g);
}

static void iget_cancel(void *arg)
{
    iget_free(arg);
}

int sl_etl_read_all(int fd, uint64_t size, char **out, struct sl_err *err)
{
    char *p = sl_xmalloc(size + 1);
    uint64_t off = 0;
    while (off < size) {
        ssize_t k = pread(fd, p + off, size - off, (off_t)off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0) {
            free(p);
            return sl_errf(err, SL_EIO, "reading the object: %s", k < 0 ? strerror(errno) : "unexpected end of file");
        }
        off += (uint64_t)k;
    }
    p[size] = 0;
    *out = p;
    return 0;
}

static void object_run(struct sl_req *r, void *arg)
{
    struct iget *g = arg;
    struct sl_err err = { 0 };
    char *data = NULL, *out = NULL;
    size_t olen;
    if (sl_etl_read_all(g->fd, g->md.size, &data, &err) < 0 ||
        sl_etl_run_bytes(g->v, g->n, &g->b, g->name, g->nlen, &g->args, NULL, data, g->md.size, &out, &olen,
                         &err) < 0) {
        sl_resp_err(r, &err);
    } else {
        sl_resp_bytes_owned(r, 200, "application/octet-stream", out, olen);
    }
    free(data);
    iget_free(g);
}

/* sample mode: a stream fed by pool tasks */
struct sstream {
    pthread_mutex_t mu;
    int refs;
    void *conn;
    struct iget *g;
    struct sl_etl_pipe *pipe;
    struct sl_plug_fdio in;
    struct sl_io outio;
    struct sl_buf pbuf;          /* producer's private output */
    struct sl_buf out;           /* produced, not yet sent */
    size_t off;
    bool producing, waiting, done, failed, closed;
};

static void ss_unref(struct sstream *s)
{
    pthread_mutex_lock(&s->mu);
    int r = --s->refs;
    pthread_mutex_unlock(&s->mu);
    if (r)
        return;
    sl_etl_pipe_close(s->pipe);
    iget_free(s->g);
    sl_buf_free(&s->pbuf);
    sl_buf_free(&s->out);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

static int64_t pbuf_write(void *ctx, const void *buf, size_t n)
{
    struct sstream *s = ctx;
    if (sl_buf_add(&s->pbuf, buf, n) < 0)
        return -1;
    return (int64_t)n;
}

/* Produce until enough is buffered or the end. Runs on a pool thread. */
static void ss_produce(void *arg)
{
    struct sstream *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        bool stop = s->closed || s->out.len - s->off >= STREAM_HIGH || sl_bg_stopping();
        if (stop) {
            if (sl_bg_stopping() && !s->closed) {
                s->done = s->failed = true;
            }
            s->producing = false;
            if (s->waiting) {
                s->waiting = false;
                sl_conn_resume(s->conn);
            }
            pthread_mutex_unlock(&s->mu);
            break;
        }
        pthread_mutex_unlock(&s->mu);
        struct sl_err err = { 0 };
        int rc = sl_etl_pipe_step(s->pipe, &err);
        if (rc < 0)
            sl_logw("%s: sample-mode ETL aborted the response: %s", s->g->name, err.msg);
        pthread_mutex_lock(&s->mu);
        if (s->pbuf.len) {
            sl_buf_add(&s->out, s->pbuf.p, s->pbuf.len);
            sl_buf_reset(&s->pbuf);
        }
        if (rc <= 0) {
            s->done = true;
            s->failed = rc < 0;
        }
        bool end = rc <= 0;
        if (s->waiting && (end || s->out.len > s->off)) {
            s->waiting = false;
            sl_conn_resume(s->conn);
        }
        if (end)
            s->producing = false;
        pthread_mutex_unlock(&s->mu);
        if (end)
            break;
    }
    ss_unref(s);
}

/* with s->mu held */
static void ss_kick(struct sstream *s)
{
    if (s->producing || s->done)
        return;
    s->producing = true;
    s->refs++;
    sl_bg_submit(ss_produce, s);
}

static ssize_t ss_read(void *ctx, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct sstream *s = ctx;
    pthread_mutex_lock(&s->mu);
    size_t avail = s->out.len - s->off;
    if (avail) {
        size_t n = SL_MIN(avail, max);
        memcpy(buf, s->out.p + s->off, n);
        s->off += n;
        if (s->off == s->out.len) {
            sl_buf_reset(&s->out);
            s->off = 0;
        } else if (s->off > 4 * 1024 * 1024) {
            memmove(s->out.p, s->out.p + s->off, s->out.len - s->off);
            s->out.len -= s->off;
            s->off = 0;
        }
        if (s->out.len - s->off < STREAM_LOW)
            ss_kick(s);
        pthread_mutex_unlock(&s->mu);
        return (ssize_t)n;
    }
    if (s->done) {
        bool f = s->failed;
        pthread_mutex_unlock(&s->mu);
        return f ? -1 : 0;
    }
    ss_kick(s);
    s->waiting = true;
    sl_conn_suspend(s->conn);
    pthread_mutex_unlock(&s->mu);
    return SL_STREAM_WAIT;
}

static void ss_release(void *ctx)
{
    struct sstream *s = ctx;
    pthread_mutex_lock(&s->mu);
    s->closed = true;
    pthread_mutex_unlock(&s->mu);
    ss_unref(s);
}

static void sample_run(struct sl_req *r, void *arg)
{
    struct iget *g = arg;
    struct sl_err err = { 0 };
    struct sstream *s = sl_xcalloc(1, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    s->refs = 1;
    s->conn = r->conn;
    s->g = g;
    sl_buf_init(&s->pbuf);
    sl_buf_init(&s->out);
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), &g->b, g->name, g->nlen);
    sl_plug_fdio_init(&s->in, g->fd, 0, cn);
    s->outio = (struct sl_io){ SL_ABI_INIT(struct sl_io), .ctx = s, .write = pbuf_write, .name = cn };
    if (sl_etl_pipe_open(g->v, g->n, &g->b, g->name, g->nlen, &g->args, NULL, g->fmt, &s->in.io, &s->outio,
                         &s->pipe, &err) < 0) {
        sl_resp_err(r, &err);
        ss_unref(s);
        return;
    }
    /* the first sample before the headers: a script that fails at once gets
     * a proper error response, not a cut-off 200 */
    int rc = sl_etl_pipe_step(s->pipe, &err);
    if (rc < 0) {
        if (err.code == SL_EINVAL)
            err.code = SL_EINTERNAL;
        sl_resp_err(r, &err);
        ss_unref(s);
        return;
    }
    sl_buf_add(&s->out, s->pbuf.p ? s->pbuf.p : "", s->pbuf.len);
    sl_buf_reset(&s->pbuf);
    s->done = rc == 0;
    const char *mime = sl_plug_mime(g->fmt);
    sl_resp_stream(r, 200, mime && *mime ? mime : "application/octet-stream", UINT64_MAX, ss_read, s, ss_release);
}

/* Inline tries: objects up to INLINE_MAX bytes through ETLs that have never
 * needed more than INLINE_BUDGET_NS run on the HTTP thread (no hand-off);
 * everything else, and every ETL once it has been slow, on the pool. */
#define INLINE_MAX (256 * 1024)
#define INLINE_BUDGET_NS (20LL * 1000000)

static bool inline_ok(const struct iget *g)
{
    if (g->md.size > INLINE_MAX)
        return false;
    for (int i = 0; i < g->n; i++)
        if (g->v[i]->slow)
            return false;
    return true;
}

bool sl_etl_get(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, struct sl_read *rd)
{
    struct sl_err err = { 0 };
    if (r->method != SL_M_GET)
        return false;
    r->op = SL_OP_ETL_GET;
    if (sl_req_header(r, "Range")) {
        sl_read_done(rd);
        sl_resp_errf(r, SL_EINVAL, "GET with etl_name: a Range request cannot be combined with a transform (the "
                     "output's size is not known in advance); read the whole transformed object");
        return true;
    }
    const char *ap = sl_req_query(r, "archpath"), *am = sl_req_query(r, "archmode");
    if ((ap && *ap) || (am && *am)) {
        sl_read_done(rd);
        sl_resp_errf(r, SL_EINVAL, "GET with etl_name cannot be combined with archpath/archregx: transform the whole "
                     "shard (sample-mode ETL) or read the member without a transform");
        return true;
    }
    struct iget *g = sl_xcalloc(1, sizeof(*g));
    sl_bck_copy(&g->b, b);
    g->name = sl_xstrndup(name, nlen);
    g->nlen = nlen;
    g->fd = rd->fd; /* the object the read path found: g's now */
    g->md = rd->md;
    rd->fd = -1;
    memset(&rd->md, 0, sizeof(rd->md));
    if (sl_etl_acquire_list(sl_req_query(r, "etl_name"), sl_req_query(r, "etl_pipeline"), g->v, &g->n, &err) < 0) {
        iget_free(g);
        sl_resp_err(r, &err);
        return true;
    }
    sl_etl_args_val(sl_req_query(r, "etl_args"), &g->args);
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), b, name, nlen);
    if (g->v[0]->mode == SL_ETL_OBJECT) {
        uint64_t cap = sl_etl_max_input(g->v, g->n);
        if (g->md.size > cap) {
            char sz[32], ml[32];
            sl_format_size(g->md.size, sz, sizeof(sz));
            sl_format_size(g->v[0]->lim.mem_limit, ml, sizeof(ml));
            sl_errf(&err, SL_ETOOBIG, "etl %s: %s is %s: an object-mode transform holds the whole object in memory, "
                    "and with mem_limit %s it accepts up to %llu bytes (etl.max_object_size caps it too); raise "
                    "mem_limit, or use a sample-mode ETL for shards", g->v[0]->name, cn, sz, ml,
                    (unsigned long long)cap);
            sl_etl_record_error(g->v[0], NULL, cn, 413, err.msg);
            sl_resp_err(r, &err);
            iget_free(g);
            return true;
        }
        if (inline_ok(g)) {
            /* small object, ETL known to be quick: try on this thread */
            char *data = NULL, *out = NULL;
            size_t olen;
            int rc = sl_etl_read_all(g->fd, g->md.size, &data, &err);
            if (rc == 0)
                rc = run_bytes(g->v, g->n, &g->b, g->name, g->nlen, &g->args, NULL, data, g->md.size,
                               INLINE_BUDGET_NS, &out, &olen, &err);
            free(data);
            if (rc != 1) {
                if (rc < 0)
                    sl_resp_err(r, &err);
                else
                    sl_resp_bytes_owned(r, 200, "application/octet-stream", out, olen);
                iget_free(g);
                return true;
            }
            /* too slow for an HTTP thread: run it again on the pool */
        }
        sl_req_offload(r, object_run, iget_cancel, g);
        return true;
    }
    g->fmt = sl_arch_format_of(name, nlen, sl_req_query(r, "archmime"), g->fd);
    if (!g->fmt) {
        sl_resp_errf(r, SL_EINVAL, "etl %s: %s is not a shard of a supported format (%s); a sample-mode ETL reads "
                     "WebDataset shards (give archmime= for unusual names)", g->v[0]->name, cn, sl_arch_supported());
        iget_free(g);
        return true;
    }
    sl_req_offload(r, sample_run, iget_cancel, g);
    return true;
}

/* the module: etl.c's API and the inline GET here (defined on this side, so
 * that etl.c does not refer back to the runner that calls it) */
static const char *const etl_paths[] = { "/v1/etl", NULL };

const struct sl_module sl_etl_module = {
    .name = "etl",
    .paths = etl_paths,
    .route = sl_etl_route,
    .internal = sl_etl_internal,
    .get_query = "etl_name",
    .obj_get = sl_etl_get,
};
