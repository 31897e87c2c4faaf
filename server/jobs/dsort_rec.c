/* SPDX-License-Identifier: MIT
 * dsort_rec.c: see dsort_rec.h.
 */
#include "dsort_rec.h"
#include "arch.h"
#include "sandbox.h"
#include "shard_plan.h"
#include "template.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CKEY_MAX (64 * 1024)
#define LUA_MEMBER_MAX (64 * 1024) /* record:read(ext) gives members up to this size */

/* Appended to the user's script (so its line numbers stay its own): the
 * record gets its read method, then the user's sort_key runs. */
static const char lua_wrap[] =
    "\nlocal function __shale_read(self, ext)\n"
    "  if type(ext) ~= 'string' then error('record:read(ext): ext must be a string such as \\'.cls\\'', 2) end\n"
    "  if ext:sub(1, 1) == '.' then ext = ext:sub(2) end\n"
    "  for _, m in ipairs(self.members) do if m.ext == ext then return m.data end end\n"
    "  return nil\n"
    "end\n"
    "function __shale_sort_key(rec)\n"
    "  rec.read = __shale_read\n"
    "  local k = sort_key(rec)\n"
    "  if type(k) ~= 'string' and type(k) ~= 'number' then\n"
    "    error('sort_key must return a string or a number, not ' .. type(k), 0)\n"
    "  end\n"
    "  return k\n"
    "end\n";

static const char ekm_wrap[] =
    "\nlocal function __shale_read(self, ext)\n"
    "  if type(ext) ~= 'string' then error('record:read(ext): ext must be a string such as \\'.cls\\'', 2) end\n"
    "  if ext:sub(1, 1) == '.' then ext = ext:sub(2) end\n"
    "  for _, m in ipairs(self.members) do if m.ext == ext then return m.data end end\n"
    "  return nil\n"
    "end\n"
    "function __shale_shard_for(rec)\n"
    "  rec.read = __shale_read\n"
    "  local t = shard_for(rec.key, rec)\n"
    "  if t ~= nil and type(t) ~= 'string' then\n"
    "    error('shard_for must return a shard name template (a string) or nil, not ' .. type(t), 0)\n"
    "  end\n"
    "  return t\n"
    "end\n";

/* The Lua ordering: the member bytes of the record being read (members up
 * to LUA_MEMBER_MAX), handed to sort_key once the record is complete. */
struct lua_rec {
    char *src;                  /* sort_key, or NULL */
    size_t srclen;
    char *ekm;                  /* shard_for, or NULL */
    size_t ekmlen;
    int ri;                     /* record being collected, -1 none */
    struct sl_buf *data;        /* per member of that record */
    int ndata, capdata;
};

static void lua_rec_reset(struct lua_rec *L)
{
    for (int i = 0; i < L->ndata; i++)
        sl_buf_free(&L->data[i]);
    L->ndata = 0;
    L->ri = -1;
}

/* run the scripts on record x (its members' bytes in L->data) */
static int lua_key(struct lua_rec *L, struct sl_dsort_rec *x, const char *shard_name, struct sl_err *err)
{
    struct sl_lua_val rec = sl_lua_table(), members = sl_lua_table();
    for (int i = 0; i < x->nm; i++) {
        struct sl_wds_split sp;
        const char *nm = x->m[i].name;
        sl_plugin_wds_split(nm, strlen(nm), &sp);
        struct sl_lua_val m = sl_lua_table();
        sl_lua_table_adds(&m, "name", sl_lua_cstr_ref(nm));
        sl_lua_table_adds(&m, "ext", sl_lua_str_ref(nm + sp.ext_off, sp.ext_len));
        sl_lua_table_adds(&m, "size", sl_lua_num((double)x->m[i].size));
        if (i < L->ndata && x->m[i].size <= LUA_MEMBER_MAX)
            sl_lua_table_adds(&m, "data", sl_lua_str_ref(L->data[i].p ? L->data[i].p : "", L->data[i].len));
        sl_lua_table_addi(&members, i + 1, m);
    }
    sl_lua_table_adds(&rec, "key", sl_lua_cstr_ref(x->key));
    sl_lua_table_adds(&rec, "shard", sl_lua_cstr_ref(shard_name));
    sl_lua_table_adds(&rec, "members", members);
    struct sl_lua_limits lim;
    sl_lua_limits_default(&lim);
    struct sl_lua_val res = sl_lua_nil();
    int rc = 0;
    if (L->src) {
        rc = sl_lua_call("dsort algorithm.script", L->src, L->srclen, "__shale_sort_key", &rec, 1, &lim, NULL, NULL,
                         &res, err);
        if (rc < 0) {
            sl_err_wrap(err, "dsort: %s, record %s: sort_key", shard_name, x->key);
        } else {
            if (res.type == SL_LUA_STR)
                x->ckey_s = sl_xstrndup(res.s.p, res.s.len);
            else
                x->ckey_n = res.n;
            x->has_ckey = true;
        }
        sl_lua_val_free(&res);
    }
    if (rc == 0 && L->ekm) {
        rc = sl_lua_call("dsort ekm_lua", L->ekm, L->ekmlen, "__shale_shard_for", &rec, 1, &lim, NULL, NULL, &res,
                         err);
        if (rc < 0)
            sl_err_wrap(err, "dsort: %s, record %s: shard_for", shard_name, x->key);
        else if (res.type == SL_LUA_STR && res.s.len)
            x->family = sl_xstrndup(res.s.p, res.s.len);
        sl_lua_val_free(&res);
    }
    sl_lua_val_free(&rec);
    return rc;
}

void sl_dsort_recs_free(struct sl_dsort_recs *r)
{
    if (r->arena) { /* (its records are the arena's, freed with it) */
        memset(r, 0, sizeof(*r));
        return;
    }
    for (size_t i = 0; i < r->n; i++) {
        struct sl_dsort_rec *x = &r->v[i];
        for (int j = 0; j < x->nm; j++)
            free(x->m[j].name);
        free(x->m);
        free(x->key);
        free(x->ckey_s);
        free(x->family);
    }
    free(r->v);
    memset(r, 0, sizeof(*r));
}

static struct sl_dsort_rec *rec_new(struct sl_dsort_recs *r, const char *key, size_t kl, int shard, int seq)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 256;
        r->v = sl_xrealloc(r->v, r->cap * sizeof(*r->v));
    }
    struct sl_dsort_rec *x = &r->v[r->n++];
    memset(x, 0, sizeof(*x));
    x->key = sl_xstrndup(key, kl);
    x->shard = shard;
    x->seq = seq;
    return x;
}

/* the content key from the member's bytes */
static int parse_ckey(struct sl_dsort_rec *x, const struct sl_dsort_spec *s, const char *buf, size_t n,
                      const char *shard_name, struct sl_err *err)
{
    char *t = sl_xstrndup(buf, n);
    size_t l = strlen(t);
    while (l && (t[l - 1] == '\n' || t[l - 1] == '\r' || t[l - 1] == ' ' || t[l - 1] == '\t'))
        t[--l] = 0;
    int rc = 0;
    if (s->content_key_type == SL_DSORT_CKEY_STRING) {
        x->ckey_s = t;
        x->has_ckey = true;
        return 0;
    }
    char *end;
    errno = 0;
    double v = s->content_key_type == SL_DSORT_CKEY_INT ? (double)strtoll(t, &end, 10) : strtod(t, &end);
    if (!l || *end || errno || !isfinite(v))
        rc = sl_errf(err, SL_EINVAL, "dsort: %s, record %s: the content of its %s member (\"%.40s\") is not %s "
                     "(algorithm.content_key_type)", shard_name, x->key, s->content_ext, t,
                     s->content_key_type == SL_DSORT_CKEY_INT ? "an integer" : "a number");
    x->ckey_n = v;
    x->has_ckey = rc == 0;
    free(t);
    return rc;
}

int sl_dsort_read_shard(const struct sl_plug *fmt, const struct sl_io *io, const char *shard_name, int shard,
                        const struct sl_dsort_spec *s, struct sl_dsort_recs *out, struct sl_err *err)
{
    struct sl_plug_reader *rd = NULL;
    struct sl_strmap idx;
    memset(&idx, 0, sizeof(idx));
    size_t first = out->n;
    char *buf = NULL;
    struct lua_rec L = { .ri = -1 };
    if (s->alg == SL_DSORT_LUA) {
        L.src = sl_xasprintf("%s%s", s->script, lua_wrap);
        L.srclen = strlen(L.src);
    }
    if (s->ekm_lua) {
        L.ekm = sl_xasprintf("%s%s", s->ekm_lua, ekm_wrap);
        L.ekmlen = strlen(L.ekm);
    }
    bool lua = L.src || L.ekm;
    int rc = sl_plug_reader_open(fmt, io, NULL, 0, &rd, err);
    while (rc == 0) {
        struct sl_fmt_entry e;
        memset(&e, 0, sizeof(e));
        int r = sl_plug_reader_next(rd, &e, err);
        if (r == 1)
            break;
        if (r < 0) {
            rc = -1;
            break;
        }
        if (e.type != SL_FMT_T_REG)
            continue;
        struct sl_wds_split sp;
        sl_plugin_wds_split(e.name, e.name_len, &sp);
        size_t kl = sp.dir_len + sp.stem_len;
        /* the map borrows the record's own key string, which stays put
         * when out->v grows; values are indexes into out->v */
        int ri = sl_strmap_get(&idx, e.name, kl);
        struct sl_dsort_rec *x;
        if (lua && ri != L.ri && L.ri >= 0) {
            /* the record being collected is complete */
            if (lua_key(&L, &out->v[L.ri], shard_name, err) < 0) {
                rc = -1;
                break;
            }
            lua_rec_reset(&L);
        }
        if (lua && ri >= 0 && ri != L.ri) {
            rc = sl_errf(err, SL_EINVAL, "dsort: %s: the members of record %.*s are not adjacent; the lua ordering "
                         "and ekm_lua need each record's members together (as WebDataset writers keep them)",
                         shard_name, (int)kl, e.name);
            break;
        }
        if (ri < 0) {
            x = rec_new(out, e.name, kl, shard, (int)(out->n - first));
            ri = (int)(out->n - 1);
            sl_strmap_put(&idx, x->key, kl, ri);
        }
        x = &out->v[ri];
        if (lua) {
            L.ri = ri;
            if (L.ndata == L.capdata) {
                L.capdata = L.capdata ? L.capdata * 2 : 8;
                L.data = sl_xrealloc(L.data, (size_t)L.capdata * sizeof(*L.data));
            }
            struct sl_buf *d = &L.data[L.ndata++];
            sl_buf_init(d);
            if (e.size >= 0 && e.size <= LUA_MEMBER_MAX) {
                char chunk[16384];
                int64_t n;
                while ((n = sl_plug_reader_read(rd, chunk, sizeof(chunk), err)) > 0)
                    sl_buf_add(d, chunk, (size_t)n);
                if (n < 0) {
                    rc = -1;
                    break;
                }
            }
        }
        if (x->nm == x->capm) {
            x->capm = x->capm ? x->capm * 2 : 4;
            x->m = sl_xrealloc(x->m, (size_t)x->capm * sizeof(*x->m));
        }
        x->m[x->nm].name = sl_xstrndup(e.name, e.name_len);
        x->m[x->nm].size = e.size > 0 ? (uint64_t)e.size : 0;
        x->nm++;
        x->bytes += e.size > 0 ? (uint64_t)e.size : 0;
        bool ckey = s->alg == SL_DSORT_CONTENT && sp.ext_len && sp.ext_len + 1 == strlen(s->content_ext) &&
                    !memcmp(e.name + sp.ext_off, s->content_ext + 1, sp.ext_len);
        if (!ckey)
            continue;
        if (e.size > CKEY_MAX) {
            rc = sl_errf(err, SL_EINVAL, "dsort: %s, record %s: its %s member is %lld bytes; a content key is at "
                         "most %d", shard_name, x->key, s->content_ext, (long long)e.size, CKEY_MAX);
            break;
        }
        if (!buf)
            buf = sl_xmalloc(CKEY_MAX);
        size_t got = 0;
        int64_t n;
        while (got < CKEY_MAX && (n = sl_plug_reader_read(rd, buf + got, CKEY_MAX - got, err)) > 0)
            got += (size_t)n;
        if (n < 0 || parse_ckey(x, s, buf, got, shard_name, err) < 0)
            rc = -1;
    }
    if (rc == 0 && lua && L.ri >= 0)
        rc = lua_key(&L, &out->v[L.ri], shard_name, err);
    lua_rec_reset(&L);
    free(L.data);
    free(L.src);
    free(L.ekm);
    if (rc == 0 && s->alg == SL_DSORT_CONTENT) {
        for (size_t i = first; i < out->n; i++) {
            if (!out->v[i].has_ckey) {
                rc = sl_errf(err, SL_EINVAL, "dsort: %s, record %s has no %s member to read its key from "
                             "(algorithm \"content\")", shard_name, out->v[i].key, s->content_ext);
                break;
            }
        }
    }
    free(buf);
    sl_strmap_free(&idx);
    sl_plug_reader_close(rd);
    return rc;
}

struct cmp_ctx {
    const struct sl_dsort_recs *r;
    const struct sl_dsort_spec *s;
};

static int input_cmp(const void *a, const void *b, void *arg)
{
    const struct sl_dsort_rec *v = ((const struct cmp_ctx *)arg)->r->v;
    const struct sl_dsort_rec *x = &v[*(const int *)a], *y = &v[*(const int *)b];
    if (x->shard != y->shard)
        return x->shard < y->shard ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static int key_cmp(const void *a, const void *b, void *arg)
{
    const struct cmp_ctx *c = arg;
    const struct sl_dsort_rec *x = &c->r->v[*(const int *)a], *y = &c->r->v[*(const int *)b];
    int d;
    bool by_ckey = c->s->alg == SL_DSORT_CONTENT || c->s->alg == SL_DSORT_LUA;
    if (by_ckey && !x->ckey_s)
        d = x->ckey_n < y->ckey_n ? -1 : x->ckey_n > y->ckey_n;
    else if (by_ckey)
        d = strcmp(x->ckey_s, y->ckey_s);
    else
        d = strcmp(x->key, y->key);
    if (c->s->decreasing)
        d = -d;
    return d ? d : input_cmp(a, b, arg); /* ties keep the input order: stable on any cluster */
}

int sl_dsort_order(const struct sl_dsort_recs *r, const struct sl_dsort_spec *s, int **order, struct sl_err *err)
{
    int *o = sl_xmalloc((r->n ? r->n : 1) * sizeof(int));
    for (size_t i = 0; i < r->n; i++)
        o[i] = (int)i;
    struct cmp_ctx c = { r, s };
    switch (s->alg) {
    case SL_DSORT_NONE:
        qsort_r(o, r->n, sizeof(int), input_cmp, &c);
        break;
    case SL_DSORT_SHUFFLE: {
        qsort_r(o, r->n, sizeof(int), input_cmp, &c);
        sl_shuffle(o, r->n, s->seed);
        break;
    }
    case SL_DSORT_LUA:
        for (size_t i = 1; i < r->n; i++) {
            if (!r->v[i].ckey_s != !r->v[0].ckey_s) {
                const struct sl_dsort_rec *sx = r->v[i].ckey_s ? &r->v[i] : &r->v[0];
                const struct sl_dsort_rec *nx = r->v[i].ckey_s ? &r->v[0] : &r->v[i];
                free(o);
                return sl_errf(err, SL_EINVAL, "dsort: sort_key returned a string for record %s and a number for "
                               "record %s; return one type for every record", sx->key, nx->key);
            }
        }
        qsort_r(o, r->n, sizeof(int), key_cmp, &c);
        break;
    default: /* alphanumeric, md5 (AIStore's md5 is effectively name order, spec §7), content */
        qsort_r(o, r->n, sizeof(int), key_cmp, &c);
        break;
    }
    *order = o;
    return 0;
}

/* What a record takes in an output shard of extension ext: its members'
 * headers and padding with their data, as ishard counts (so that
 * output_shard_size is the size of the shards written, not of the data
 * in them). */
static uint64_t rec_cost(const struct sl_dsort_rec *x, const char *ext)
{
    uint64_t c = 0;
    for (int i = 0; i < x->nm; i++)
        c += sl_arch_member_bytes(ext, strlen(x->m[i].name), x->m[i].size);
    return c;
}

/* pack the records idx[0..n) (in order) under template tmpl, appending to *o */
static int pack_family(const struct sl_dsort_recs *r, const int *idx, size_t n, const char *tmpl, uint64_t limit,
                       const struct sl_dsort_spec *s, struct sl_dsort_out **o, size_t *no, size_t *cap,
                       struct sl_strmap *names, struct sl_err *err)
{
    struct sl_tmpl *t;
    if (sl_tmpl_parse(tmpl, &t, err) < 0)
        return -1;
    uint64_t count = sl_tmpl_count(t), used = 0;
    if (!limit) { /* spread evenly over the names */
        uint64_t total = 0;
        for (size_t i = 0; i < n; i++)
            total += rec_cost(&r->v[idx[i]], s->out_ext);
        limit = count && count != UINT64_MAX ? (total + count - 1) / count : total;
        limit = (limit ? limit : 1) + sl_arch_end_bytes(s->out_ext);   /* (each shard starts with its end's) */
    }
    struct sl_buf b;
    sl_buf_init(&b);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0;) {
        if (used == count) {
            rc = sl_errf(err, SL_EINVAL, "dsort: output_format \"%s\" yields %llu names, fewer than the shards "
                         "this output needs; widen its range or raise output_shard_size", tmpl,
                         (unsigned long long)count);
            break;
        }
        if (*no == *cap) {
            *cap = *cap ? *cap * 2 : 64;
            *o = sl_xrealloc(*o, *cap * sizeof(**o));
        }
        struct sl_dsort_out *h = &(*o)[(*no)++];
        memset(h, 0, sizeof(*h));
        size_t first = i;
        h->bytes = sl_arch_end_bytes(s->out_ext);
        do      /* at least one record, however large */
            h->bytes += rec_cost(&r->v[idx[i++]], s->out_ext);
        while (i < n && h->bytes < limit);
        h->count = i - first;
        h->rec = sl_xmalloc(h->count * sizeof(int));
        memcpy(h->rec, idx + first, h->count * sizeof(int));
        sl_buf_reset(&b);
        sl_tmpl_at(t, used++, &b);
        if (!sl_has_suffix(b.p, s->out_ext))
            sl_buf_adds(&b, s->out_ext);
        h->name = sl_xstrdup(b.p);
        if (sl_strmap_get(names, h->name, strlen(h->name)) >= 0)
            rc = sl_errf(err, SL_EINVAL, "dsort: two output shards would be named %s (the EKM's templates "
                         "overlap); give each its own", h->name);
        else
            sl_strmap_put(names, h->name, strlen(h->name), (int)(*no - 1));
    }
    sl_buf_free(&b);
    sl_tmpl_free(t);
    return rc;
}

int sl_dsort_pack(const struct sl_dsort_recs *r, const int *order, const struct sl_dsort_spec *s,
                  struct sl_dsort_out **out, size_t *nout, struct sl_err *err)
{
    *out = NULL;
    *nout = 0;
    struct sl_dsort_out *o = NULL;
    size_t n = 0, cap = 0;
    struct sl_strmap names;
    memset(&names, 0, sizeof(names));
    int *idx = sl_xmalloc((r->n ? r->n : 1) * sizeof(int));
    int rc = 0;
    bool ekm = false;
    for (size_t i = 0; i < r->n; i++)
        ekm |= r->v[i].family != NULL;
    if (!ekm) {
        if (!s->out_format)
            rc = sl_errf(err, SL_EINVAL, "dsort: no output_format to name the shards");
        else
            rc = pack_family(r, order, r->n, s->out_format, s->shard_size, s, &o, &n, &cap, &names, err);
    } else {
        /* each family in the order its first record comes */
        struct sl_strmap fams;
        memset(&fams, 0, sizeof(fams));
        for (size_t i = 0; i < r->n && rc == 0; i++) {
            const struct sl_dsort_rec *x = &r->v[order[i]];
            if (x->drop || !x->family || sl_strmap_get(&fams, x->family, strlen(x->family)) >= 0)
                continue;
            sl_strmap_put(&fams, x->family, strlen(x->family), 1);
            size_t k = 0;
            for (size_t j = i; j < r->n; j++) {
                const struct sl_dsort_rec *y = &r->v[order[j]];
                if (!y->drop && y->family && !strcmp(y->family, x->family))
                    idx[k++] = order[j];
            }
            rc = pack_family(r, idx, k, x->family, s->shard_size, s, &o, &n, &cap, &names, err);
        }
        sl_strmap_free(&fams);
    }
    free(idx);
    sl_strmap_free(&names);
    if (rc < 0) {
        sl_dsort_outs_free(o, n);
        return -1;
    }
    *out = o;
    *nout = n;
    return 0;
}

void sl_dsort_outs_free(struct sl_dsort_out *o, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(o[i].name);
        free(o[i].rec);
    }
    free(o);
}
