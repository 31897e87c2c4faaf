/* SPDX-License-Identifier: MIT
 * dsort.c: distributed shuffle and re-shard, the targets' side (see
 * dsort.h, docs/dsort.md; the gateway's /v1/sort is dsort_api.c).
 *
 *   coordinator  POST /v1/internal/dsort/start: input names -> every holder
 *                extracts the records of its shards -> order -> pack ->
 *                names -> each output owner gets its shards (or, dry run,
 *                the layout is the report)
 *   holders      POST /v1/internal/dsort/extract: records of local shards;
 *                POST /v1/internal/dsort/pull: the members of some records
 *                of one shard, as one tar, read in one sequential pass
 *   owners       POST /v1/internal/dsort/build: pull, write, commit
 *
 * A record (every member of one input shard that shares a WebDataset key)
 * is never split and keeps its members' order. The order is computed in one
 * place from the records sorted by (input shard, position), so the same
 * spec and seed give the same output on any number of targets.
 */
#include "dsort.h"
#include "read.h"
#include "arch.h"
#include "backend.h"
#include "cluster.h"
#include "dsort_ekm.h"
#include "dsort_mem.h"
#include "dsort_rec.h"
#include "dsort_spec.h"
#include "jsonx.h"
#include "log.h"
#include "lso.h"
#include "node.h"
#include "peer.h"
#include "plug.h"
#include "shard.h"
#include "shard_plan.h"
#include "spool.h"
#include "store.h"
#include "template.h"
#include "xact.h"

#include <errno.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define BUILD_WORKERS 2
#define MAX_WARN 100
#define CHUNK (256 * 1024)
#define INTERNAL_BODY_MAX (1024 * SL_MIB)

/* ------------------------------------------------------------------ */
/* small helpers                                                      */
/* ------------------------------------------------------------------ */

static const struct sl_plug *tar_fmt(void)
{
    return sl_arch_format_by_name("x.tar", 5);
}

static int64_t peer_timeout_ms(void)
{
    return sl_conf->send_file_time_ns / 1000000 * 4;
}

static void phase_set(struct sl_job *j, const char *phase, const char *field, json_t *v)
{
    json_t *ext = sl_job_ext_copy(j);
    json_t *p = json_object_get(ext, phase);
    if (!p) {
        p = json_object();
        json_object_set_new(ext, phase, p);
    }
    json_object_set_new(p, field, v);
    sl_job_set_ext(j, ext);
}

static void job_warn(struct sl_job *j, json_t *warnings, const char *fmt, ...) SL_PRINTF(3, 4);
static void job_warn(struct sl_job *j, json_t *warnings, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    sl_logw("dsort %s: %s", j->id, buf);
    if (json_array_size(warnings) < MAX_WARN)
        json_array_append_new(warnings, json_string(buf));
}

/* the target that holds object name of bucket b */
static const struct sl_snode *owner_of(const struct sl_smap *s, const char *prov, const char *b, const char *name)
{
    struct sl_buf un;
    sl_buf_init(&un);
    sl_obj_uname(&un, prov, b, name, strlen(name));
    const struct sl_snode *t = sl_smap_hrw_target(s, un.p, un.len);
    sl_buf_free(&un);
    return t;
}

/* ------------------------------------------------------------------ */
/* holders: extraction and pulls                                      */
/* ------------------------------------------------------------------ */

static int open_shard(const struct sl_bck *b, const char *name, int *fd, struct sl_err *err)
{
    struct sl_objmd md;
    if (sl_read_obj(b, name, strlen(name), fd, &md, err) < 0) /* (a remote input's: fetched, kept) */
        return -1;
    sl_objmd_free(&md);
    return 0;
}

static json_t *recs_json(const struct sl_dsort_recs *r)
{
    json_t *a = json_array();
    for (size_t i = 0; i < r->n; i++) {
        const struct sl_dsort_rec *x = &r->v[i];
        json_t *m = json_array();
        for (int j = 0; j < x->nm; j++)
            json_array_append_new(m, json_pack("[s,I]", x->m[j].name, (json_int_t)x->m[j].size));
        json_t *ck = !x->has_ckey ? json_null() : x->ckey_s ? json_string(x->ckey_s) : json_real(x->ckey_n);
        json_array_append_new(a, json_pack("[i,i,s,I,o,o,s?]", x->shard, x->seq, x->key, (json_int_t)x->bytes, m, ck,
                                           x->family));
    }
    return a;
}

/* POST /v1/internal/dsort/extract {"spec","shards":[[i,name],...]} ->
 * {"recs":[...],"missing":[names],"bytes":N} */
static void extract_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    struct sl_dsort_spec s;
    struct sl_dsort_recs recs = { 0 };
    struct sl_bck b;
    bool have_b = false;
    json_t *missing = json_array();
    uint64_t bytes = 0;
    json_t *j = sl_req_body_json(r, &err);
    if (!json_is_object(j) || sl_dsort_spec_parse(json_object_get(j, "spec"), &s, &err) < 0)
        goto out;
    if (sl_bck_resolve(s.in_bck, s.in_prov, NULL, &b, &err) < 0)
        goto out;
    have_b = true;
    size_t i;
    json_t *x;
    json_array_foreach(json_object_get(j, "shards"), i, x) {
        int idx = (int)json_integer_value(json_array_get(x, 0));
        const char *name = json_string_value(json_array_get(x, 1));
        int fd = -1;
        if (!name || open_shard(&b, name, &fd, &err) < 0) {
            if (err.code == SL_ENOOBJ) {
                json_array_append_new(missing, json_string(name ? name : ""));
                err.msg[0] = 0;
                err.code = 0;
                continue;
            }
            goto out;
        }
        const struct sl_plug *fmt = sl_arch_format_by_name(name, strlen(name));
        char cn[400];
        snprintf(cn, sizeof(cn), "ais://%s/%s", b.name, name);
        struct sl_plug_fdio io;
        sl_plug_fdio_init(&io, fd, 0, cn);
        int rc = fmt ? sl_dsort_read_shard(fmt, &io.io, cn, idx, &s, &recs, &err)
                     : sl_errf(&err, SL_EINVAL, "dsort: %s: no shard format for its name (supported: %s)", cn,
                               sl_arch_supported());
        struct stat st;
        if (rc == 0 && fstat(fd, &st) == 0)
            bytes += (uint64_t)st.st_size;
        close(fd);
        if (rc < 0)
            goto out;
    }
out:
    if (err.msg[0] || !json_is_object(j)) {
        if (!err.msg[0])
            sl_errf(&err, SL_EINVAL, "dsort extract: bad body");
        sl_resp_err(r, &err);
    } else {
        sl_resp_json_new(r, 200, json_pack("{s:o,s:O,s:I}", "recs", recs_json(&recs), "missing", missing,
                                           "bytes", (json_int_t)bytes));
    }
    json_decref(missing);
    sl_dsort_recs_free(&recs);
    if (have_b)
        sl_bck_release(&b);
    if (json_is_object(j))
        sl_dsort_spec_free(&s);
    json_decref(j);
}

/* What this target's dsort work holds in memory: records staged by pulls
 * on the holders and pulled for output shards on the owners, counted
 * together. Its limit is the running job's max_mem_usage; past it spools go
 * to disk (spool.h). */
static struct sl_spool_budget mem_budget;

static void mem_limit(uint64_t limit)
{
    __atomic_store_n(&mem_budget.limit, limit, __ATOMIC_RELAXED);
}

/* one member staged in a spool, waiting for its turn */
struct staged {
    char *name;
    uint64_t off, len;
    int64_t mtime;
    uint32_t mode;
};

/* a member with its original time and mode, so that the same input gives
 * the same bytes */
static int add_member(struct sl_plug_writer *w, const char *name, size_t nlen, int64_t mtime, uint32_t mode,
                      const void *data, size_t len, struct sl_err *err)
{
    if (sl_plug_writer_add(w, name, nlen, (int64_t)len, mtime, mode, err) < 0 ||
        (len && sl_plug_writer_write(w, data, len, err) < 0))
        return -1;
    return 0;
}

/* copy len bytes at off of spool sp into w's current member */
static int copy_staged(struct sl_plug_writer *w, const struct sl_spool *sp, const struct staged *m, char *chunk,
                       size_t csz, struct sl_err *err)
{
    if (sl_plug_writer_add(w, m->name, strlen(m->name), (int64_t)m->len, m->mtime, m->mode, err) < 0)
        return -1;
    for (uint64_t done = 0; done < m->len;) {
        int64_t r = sl_spool_pread(sp, chunk, (size_t)SL_MIN((uint64_t)csz, m->len - done), m->off + done);
        if (r <= 0)
            return sl_errf(err, SL_EIO, "dsort: reading back a staged member %s: %s", m->name,
                           r < 0 ? strerror(errno) : "short file");
        if (sl_plug_writer_write(w, chunk, (size_t)r, err) < 0)
            return -1;
        done += (uint64_t)r;
    }
    return 0;
}

/* The members of the records keys[0..n) of shard name (a local object of
 * b), as a tar in keys' order (members in shard order), appended to out.
 * The shard is read once, front to back; members wait in a spool (memory,
 * or disk past the budget) until their record's turn. */
static int pull_local(const struct sl_bck *b, const char *name, const char *const *keys, size_t n,
                      struct sl_spool *out, struct sl_err *err)
{
    int fd = -1, rc = 0;
    struct sl_plug_reader *rd = NULL;
    struct sl_plug_writer *w = NULL;
    struct sl_strmap want;
    memset(&want, 0, sizeof(want));
    struct staged **got = sl_xcalloc(n + 1, sizeof(*got));
    int *ngot = sl_xcalloc(n + 1, sizeof(int));
    struct sl_spool stage;
    sl_spool_init(&stage, &mem_budget);
    char *chunk = sl_xmalloc(CHUNK);
    for (size_t i = 0; i < n; i++)
        sl_strmap_put(&want, keys[i], strlen(keys[i]), (int)i);
    char cn[400];
    snprintf(cn, sizeof(cn), "ais://%s/%s", b->name, name);
    const struct sl_plug *fmt = sl_arch_format_by_name(name, strlen(name));
    if (!fmt) {
        rc = sl_errf(err, SL_EINVAL, "dsort: %s: no shard format for its name", cn);
        goto out;
    }
    if (open_shard(b, name, &fd, err) < 0) {
        rc = -1;
        goto out;
    }
    struct sl_plug_fdio io;
    sl_plug_fdio_init(&io, fd, 0, cn);
    if (sl_plug_reader_open(fmt, &io.io, NULL, 0, &rd, err) < 0) {
        rc = -1;
        goto out;
    }
    for (;;) {
        struct sl_fmt_entry e;
        memset(&e, 0, sizeof(e));
        int nr = sl_plug_reader_next(rd, &e, err);
        if (nr == 1)
            break;
        if (nr < 0) {
            rc = -1;
            goto out;
        }
        if (e.type != SL_FMT_T_REG)
            continue;
        struct sl_wds_split sp;
        sl_plugin_wds_split(e.name, e.name_len, &sp);
        int k = sl_strmap_get(&want, e.name, sp.dir_len + sp.stem_len);
        if (k < 0)
            continue;
        struct staged m = { sl_xstrndup(e.name, e.name_len), stage.len, 0, e.mtime, e.mode };
        got[k] = sl_xrealloc(got[k], (size_t)(ngot[k] + 1) * sizeof(**got));
        got[k][ngot[k]++] = m;
        int64_t r;
        while ((r = sl_plug_reader_read(rd, chunk, CHUNK, err)) > 0) {
            if (sl_spool_add(&stage, chunk, (size_t)r, err) < 0) {
                rc = -1;
                goto out;
            }
        }
        if (r < 0) {
            rc = -1;
            goto out;
        }
        got[k][ngot[k] - 1].len = stage.len - m.off;
    }
    for (size_t i = 0; i < n; i++)
        if (!ngot[i]) {
            rc = sl_errf(err, SL_ENOENT, "dsort: %s no longer holds record %s (the shard changed during the job)",
                         cn, keys[i]);
            goto out;
        }
    struct sl_spool_io sio;
    sl_spool_io_init(&sio, out, "dsort pull", err);
    if (sl_plug_writer_open(tar_fmt(), &sio.io, 0, &w, err) < 0) {
        rc = -1;
        goto out;
    }
    for (size_t i = 0; i < n && rc == 0; i++)
        for (int k = 0; k < ngot[i] && rc == 0; k++)
            rc = copy_staged(w, &stage, &got[i][k], chunk, CHUNK, err);
    if (rc == 0)
        rc = sl_plug_writer_finish(w, err);
out:
    sl_plug_writer_close(w);
    sl_plug_reader_close(rd);
    if (fd >= 0)
        close(fd);
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < ngot[i]; k++)
            free(got[i][k].name);
        free(got[i]);
    }
    free(got);
    free(ngot);
    free(chunk);
    sl_spool_free(&stage);
    sl_strmap_free(&want);
    return rc;
}

static const char **keys_of(const json_t *a, size_t *n)
{
    *n = json_array_size(a);
    const char **k = sl_xcalloc(*n + 1, sizeof(*k));
    for (size_t i = 0; i < *n; i++)
        k[i] = json_string_value(json_array_get(a, i)) ? json_string_value(json_array_get(a, i)) : "";
    return k;
}

/* POST /v1/internal/dsort/pull {"bck","shard","keys":[...],"max_mem"} ->
 * tar (from memory, or from its spill file) */
static void pull_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    struct sl_bck b;
    if (!json_is_object(j) ||
        sl_bck_resolve(sl_json_str(j, "bck", ""), sl_json_str(j, "provider", "ais"), NULL, &b, &err) < 0) {
        if (!err.msg[0])
            sl_errf(&err, SL_EINVAL, "dsort pull: bad body");
        json_decref(j);
        sl_resp_err(r, &err);
        return;
    }
    if (sl_json_int(j, "max_mem", 0) > 0)
        mem_limit((uint64_t)sl_json_int(j, "max_mem", 0));
    size_t n;
    const char **keys = keys_of(json_object_get(j, "keys"), &n);
    struct sl_spool tar;
    sl_spool_init(&tar, &mem_budget);
    if (pull_local(&b, sl_json_str(j, "shard", ""), keys, n, &tar, &err) < 0) {
        sl_resp_err(r, &err);
    } else if (sl_spool_on_disk(&tar)) {
        int fd = tar.fd;
        tar.fd = -1; /* the response's now */
        sl_resp_fd(r, 200, fd, 0, tar.len, "application/x-tar");
    } else {
        size_t len = tar.mem.len;
        sl_resp_bytes_owned(r, 200, "application/x-tar", sl_buf_steal(&tar.mem), len);
    }
    sl_spool_free(&tar);
    free(keys);
    sl_bck_release(&b);
    json_decref(j);
}

/* ------------------------------------------------------------------ */
/* owners: building output shards                                     */
/* ------------------------------------------------------------------ */

struct bout {
    uint64_t bytes;             /* record bytes: what building it holds in memory */
    char *name;
    json_t *recs;               /* [[shard, key], ...] in output order */
};

struct builder {
    int workers;                /* create_concurrency_max_limit */
    uint64_t max_mem;           /* max_mem_usage in bytes, 0: none */
    uint64_t spilled_cnt, spilled_bytes; /* pulls that went to disk */
    struct sl_job *job;
    struct sl_bck src, dst;
    struct bout *o;
    int n, next;
    char **done;
    int ndone;
    pthread_mutex_t mu;
    char err[1024];
};

static void builder_free(struct builder *b)
{
    for (int i = 0; i < b->n; i++) {
        free(b->o[i].name);
        json_decref(b->o[i].recs);
    }
    free(b->o);
    sl_strv_free(b->done, (size_t)b->ndone);
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

/* the records of one input shard that one output shard needs */
struct need {
    const char *shard;
    const char **keys;
    size_t n, cap;
    struct sl_spool tar;        /* pulled: memory, or disk past the budget */
};

static int to_spool(void *ctx, const char *data, size_t n)
{
    void **c = ctx;
    return sl_spool_add(c[0], data, n, c[1]);
}

static int pull(struct builder *b, struct need *nd, const struct sl_smap *sm, struct sl_err *err)
{
    const struct sl_snode *h = owner_of(sm, b->src.provider, b->src.name, nd->shard);
    if (!h || !strcmp(h->id, G.id) || G.role == SL_ROLE_STANDALONE)
        return pull_local(&b->src, nd->shard, nd->keys, nd->n, &nd->tar, err);
    json_t *keys = json_array();
    for (size_t i = 0; i < nd->n; i++)
        json_array_append_new(keys, json_string(nd->keys[i]));
    char *url = sl_xasprintf("%s/v1/internal/dsort/pull", h->data_url);
    json_t *body = json_pack("{s:s,s:s,s:s,s:o,s:I}", "bck", b->src.name, "provider", b->src.provider, "shard",
                             nd->shard, "keys", keys, "max_mem",
                             (json_int_t)b->max_mem);
    size_t blen;
    char *bs = sl_json_dump(body, 0, &blen);
    json_decref(body);
    struct sl_peer_resp pr;
    struct sl_err serr = { 0 };
    void *ctx[2] = { &nd->tar, &serr };
    int rc = sl_peer_stream("POST", url, NULL, 0, bs, blen, to_spool, NULL, ctx, peer_timeout_ms(), &pr);
    free(bs);
    free(url);
    if (serr.msg[0]) {
        rc = sl_errf(err, serr.code, "dsort: pulling records of %s from t[%s]: %s", nd->shard, h->id, serr.msg);
    } else if (rc < 0 || pr.status != 200) {
        rc = sl_errf(err, rc < 0 ? SL_EUNAVAIL : sl_code_from_status((int)pr.status),
                     "dsort: pulling records of %s from t[%s]: %s", nd->shard, h->id, pr.err);
    } else {
        sl_job_add(&b->job->in_objs, 1);
        sl_job_add(&b->job->in_bytes, nd->tar.len);
    }
    sl_peer_resp_free(&pr);
    return rc;
}

/* the current member of rd into w, streamed when its size is known */
static int copy_member(struct sl_plug_writer *w, struct sl_plug_reader *rd, const struct sl_fmt_entry *e,
                       struct sl_buf *data, char *chunk, struct sl_err *err)
{
    int64_t m;
    if (e->size >= 0) {
        if (sl_plug_writer_add(w, e->name, e->name_len, e->size, e->mtime, e->mode, err) < 0)
            return -1;
        while ((m = sl_plug_reader_read(rd, chunk, CHUNK, err)) > 0)
            if (sl_plug_writer_write(w, chunk, (size_t)m, err) < 0)
                return -1;
        return m < 0 ? -1 : 0;
    }
    sl_buf_reset(data);
    while ((m = sl_plug_reader_read(rd, chunk, CHUNK, err)) > 0)
        sl_buf_add(data, chunk, (size_t)m);
    if (m < 0)
        return -1;
    return add_member(w, e->name, e->name_len, e->mtime, e->mode, data->p ? data->p : "", data->len, err);
}

static int build_one(struct builder *b, struct bout *o, const struct sl_smap *sm, struct sl_err *err)
{
    size_t nr = json_array_size(o->recs);
    struct need *nd = NULL;
    size_t nn = 0;
    struct sl_strmap idx;
    memset(&idx, 0, sizeof(idx));
    int *which = sl_xcalloc(nr + 1, sizeof(int));
    int rc = 0;
    struct sl_put *put = NULL;
    struct sl_plug_writer *w = NULL;
    struct sl_plug_reader **rds = NULL;
    for (size_t i = 0; i < nr; i++) {
        json_t *x = json_array_get(o->recs, i);
        const char *sh = json_string_value(json_array_get(x, 0));
        const char *key = json_string_value(json_array_get(x, 1));
        if (!sh || !key) {
            rc = sl_errf(err, SL_EINVAL, "dsort: bad record list for %s", o->name);
            goto out;
        }
        int k = sl_strmap_get(&idx, sh, strlen(sh));
        if (k < 0) {
            nd = sl_xrealloc(nd, (nn + 1) * sizeof(*nd));
            memset(&nd[nn], 0, sizeof(*nd));
            nd[nn].shard = sh;
            sl_spool_init(&nd[nn].tar, &mem_budget);
            k = (int)nn++;
            sl_strmap_put(&idx, sh, strlen(sh), k);
        }
        struct need *d = &nd[k];
        if (d->n == d->cap) {
            d->cap = d->cap ? d->cap * 2 : 16;
            d->keys = sl_xrealloc(d->keys, d->cap * sizeof(*d->keys));
        }
        d->keys[d->n++] = key;
        which[i] = k;
    }
    for (size_t k = 0; k < nn && rc == 0; k++) {
        if (sl_job_aborting(b->job))
            rc = sl_errf(err, SL_EINVAL, "aborted");
        else
            rc = pull(b, &nd[k], sm, err);
    }
    if (rc < 0)
        goto out;
    /* every pulled tar holds its records in the order this shard needs
     * them: walk the output order, taking the next record from its tar */
    rds = sl_xcalloc(nn + 1, sizeof(*rds));
    struct sl_spool_io *mio = sl_xcalloc(nn + 1, sizeof(*mio));
    for (size_t k = 0; k < nn && rc == 0; k++) {
        if (sl_spool_on_disk(&nd[k].tar)) {
            sl_job_add(&b->spilled_cnt, 1);
            sl_job_add(&b->spilled_bytes, nd[k].tar.len);
        }
        sl_spool_io_init(&mio[k], &nd[k].tar, nd[k].shard, err);
        rc = sl_plug_reader_open(tar_fmt(), &mio[k].io, NULL, 0, &rds[k], err);
    }
    const struct sl_plug *ofmt = sl_arch_format_by_name(o->name, strlen(o->name));
    if (rc == 0 && !ofmt)
        rc = sl_errf(err, SL_EINVAL, "dsort: no format writes %s", o->name);
    struct sl_put_opts po = { .client_cktype = -1, .expect_size = -1 };
    if (rc == 0)
        rc = sl_put_begin(&b->dst, o->name, strlen(o->name), &po, &put, err);
    void *ctx[2] = { put, err };
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), &b->dst, o->name, strlen(o->name));
    struct sl_io io = { SL_ABI_INIT(struct sl_io), .ctx = ctx, .write = put_write, .name = cn };
    if (rc == 0)
        rc = sl_plug_writer_open(ofmt, &io, 0, &w, err);
    /* the next member of each tar, read ahead by one */
    struct sl_fmt_entry *cur = sl_xcalloc(nn + 1, sizeof(*cur));
    int *state = sl_xcalloc(nn + 1, sizeof(int)); /* 0: need next, 1: have cur, 2: end */
    struct sl_buf data;
    sl_buf_init(&data);
    char *chunk = sl_xmalloc(CHUNK);
    for (size_t i = 0; i < nr && rc == 0; i++) {
        int k = which[i];
        const char *key = json_string_value(json_array_get(json_array_get(o->recs, i), 1));
        size_t kl = strlen(key);
        int members = 0;
        for (;;) {
            if (state[k] == 0) {
                memset(&cur[k], 0, sizeof(cur[k]));
                int r2 = sl_plug_reader_next(rds[k], &cur[k], err);
                if (r2 < 0) {
                    rc = -1;
                    break;
                }
                state[k] = r2 == 1 ? 2 : 1;
            }
            if (state[k] == 2)
                break;
            struct sl_wds_split sp;
            sl_plugin_wds_split(cur[k].name, cur[k].name_len, &sp);
            if (sp.dir_len + sp.stem_len != kl || memcmp(cur[k].name, key, kl))
                break; /* the next record's first member */
            rc = copy_member(w, rds[k], &cur[k], &data, chunk, err);
            sl_job_add(&b->job->loc_objs, 1);
            sl_job_add(&b->job->loc_bytes, (uint64_t)SL_MAX(cur[k].size, 0));
            state[k] = 0;
            members++;
            if (rc < 0)
                break;
        }
        if (rc == 0 && !members)
            rc = sl_errf(err, SL_EIO, "dsort: record %s of %s did not arrive", key, nd[k].shard);
    }
    sl_buf_free(&data);
    free(chunk);
    free(cur);
    free(state);
    if (rc == 0)
        rc = sl_plug_writer_finish(w, err);
    for (size_t k = 0; k < nn; k++)
        sl_plug_reader_close(rds[k]);
    free(mio);
    sl_plug_writer_close(w);
    w = NULL;
    if (rc == 0) {
        uint64_t sz = sl_put_size(put);
        struct sl_put *p = put;
        put = NULL;
        rc = sl_put_commit(p, NULL, err);
        if (rc == 0) {
            sl_arch_after_put(&b->dst, o->name, strlen(o->name));
            sl_job_add(&b->job->out_objs, 1);
            sl_job_add(&b->job->out_bytes, sz);
            pthread_mutex_lock(&b->mu);
            b->done = sl_xrealloc(b->done, (size_t)(b->ndone + 1) * sizeof(char *));
            b->done[b->ndone++] = sl_xstrdup(o->name);
            pthread_mutex_unlock(&b->mu);
        }
    }
out:
    sl_plug_writer_close(w);
    sl_put_abort(put);
    free(rds);
    for (size_t k = 0; k < nn; k++) {
        free(nd[k].keys);
        sl_spool_free(&nd[k].tar);
    }
    free(nd);
    free(which);
    sl_strmap_free(&idx);
    return rc;
}

/* Remove what this target's ended run of job id created (the job was
 * aborted or failed somewhere else after this target had finished); a run
 * still going is asked to abort and removes its own output. */
static int cleanup_local(const char *id)
{
    sl_job_abort(id, NULL);
    struct sl_job *j = sl_job_get(id);
    if (!j) {
        /* not started here yet: remember the abort, so that a build that
         * arrives later does not start (job_here) */
        j = sl_job_start("dsort", id, "", "");
        sl_job_abort(id, NULL);
        sl_job_finish(j, "aborted");
        sl_job_put(j);
        return 0;
    }
    int n = 0;
    json_t *ext = j->end_ns ? sl_job_ext_copy(j) : NULL;
    json_t *created = json_object_get(json_object_get(ext, "creation"), "created");
    struct sl_bck dst;
    struct sl_err err = { 0 };
    if (json_array_size(created) && sl_bck_resolve(j->dst_bck, "ais", NULL, &dst, &err) == 0) {
        size_t i;
        json_t *x;
        json_array_foreach(created, i, x) {
            struct sl_err e2 = { 0 };
            if (sl_obj_delete(&dst, json_string_value(x), json_string_length(x), &e2) == 0)
                n++;
        }
        sl_bck_release(&dst);
        sl_logi("dsort %s: the job was aborted elsewhere; removed the %d shard(s) this target had created", id, n);
    }
    if (ext) {
        json_object_set_new(json_object_get(ext, "creation"), "created", json_array());
        json_object_set_new(ext, "cleaned", json_true());
        sl_job_set_ext(j, ext);
    }
    sl_job_put(j);
    return n;
}

/* Abort job id on every target and remove every output shard it created,
 * also on targets that had already finished: an aborted or failed dsort
 * leaves no partial output. Call off the HTTP threads. */
void sl_dsort_abort_everywhere(const char *id)
{
    cleanup_local(id);
    if (G.role == SL_ROLE_STANDALONE)
        return;
    char *q = sl_url_encode_query(id);
    struct sl_tfan t;
    sl_tfan_init(&t, SL_TF_SKIP_OFFLINE | SL_TF_SKIP_SELF, "POST", "/v1/internal/dsort/cleanup?uuid=%s", q);
    free(q);
    sl_tfan_run(&t, peer_timeout_ms());
    sl_tfan_free(&t);
}

static void cleanup_run(struct sl_req *r, void *arg)
{
    (void)arg;
    const char *id = sl_req_query(r, "uuid");
    int n = id && *id ? cleanup_local(id) : 0;
    sl_resp_json_new(r, 200, json_pack("{s:i}", "removed", n));
}

static void *build_worker(void *arg)
{
    struct builder *b = arg;
    struct sl_smap *sm = sl_smap_get();
    for (;;) {
        pthread_mutex_lock(&b->mu);
        int i = b->err[0] || sl_job_aborting(b->job) ? b->n : b->next++;
        pthread_mutex_unlock(&b->mu);
        if (i >= b->n)
            break;
        struct sl_err err = { 0 };
        if (build_one(b, &b->o[i], sm, &err) < 0) {
            pthread_mutex_lock(&b->mu);
            bool first = !b->err[0] && strcmp(err.msg, "aborted");
            if (first)
                snprintf(b->err, sizeof(b->err), "dsort: output shard %.200s: %.800s", b->o[i].name, err.msg);
            pthread_mutex_unlock(&b->mu);
            if (first)
                sl_dsort_abort_everywhere(b->job->id);
            break;
        }
    }
    sl_smap_put(sm);
    return NULL;
}

static void build_run(struct builder *b)
{
    phase_set(b->job, "creation", "started_ns", json_integer(sl_now_ns()));
    phase_set(b->job, "creation", "to_create", json_integer(b->n));
    pthread_t th[64];
    int n = 0;
    for (int i = 0; i < b->workers && i < 64 && i < b->n; i++)
        if (pthread_create(&th[n], NULL, build_worker, b) == 0)
            n++;
    if (!n && b->n)
        snprintf(b->err, sizeof(b->err), "dsort: cannot start worker threads");
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    bool failed = b->err[0] || sl_job_aborting(b->job);
    if (failed)
        sl_shard_remove_written("dsort", b->job->id, &b->dst, b->done, b->ndone);
    json_t *created = json_array();
    for (int i = 0; !failed && i < b->ndone; i++)
        json_array_append_new(created, json_string(b->done[i]));
    phase_set(b->job, "creation", "created", created);
    phase_set(b->job, "creation", "spilled_cnt", json_integer((json_int_t)b->spilled_cnt));
    phase_set(b->job, "creation", "spilled_size", json_integer((json_int_t)b->spilled_bytes));
    phase_set(b->job, "creation", "mem_peak", json_integer((json_int_t)__atomic_load_n(&mem_budget.peak,
                                                                                          __ATOMIC_RELAXED)));
    phase_set(b->job, "creation", "end_ns", json_integer(sl_now_ns()));
    const char *msg = b->err[0] ? b->err : sl_job_aborting(b->job) ? "aborted" : NULL;
    sl_logi("dsort %s: %s (%d shard(s), %llu bytes)", b->job->id, msg ? msg : "shards created",
            failed ? 0 : b->ndone, (unsigned long long)b->job->out_bytes);
    if (b->err[0])
        sl_job_fail(b->job, b->err);
    else
        sl_job_finish(b->job, msg);
    builder_free(b);
}

static void *build_thread(void *arg)
{
    build_run(arg);
    return NULL;
}

/* the target's job for id: the coordinator's own, or a new one */
static struct sl_job *job_here(const char *id, const char *src, const char *dst)
{
    struct sl_job *j = sl_job_get(id);
    if (j && !j->end_ns)
        return j;
    bool aborted = j && j->aborted;
    sl_job_put(j);
    return aborted ? NULL : sl_job_start("dsort", id, src, dst); /* NULL: aborted before it got here */
}

/* POST /v1/internal/dsort/build {"id","src","dst","desc","outs":[...],"extraction":{...}} */
static void build_start(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    if (!json_is_object(j)) {
        json_decref(j);
        sl_resp_err(r, &err);
        return;
    }
    const char *delay = getenv("SHALE_TEST_DSORT_BUILD_DELAY_MS"); /* tests: a late build on a non-coordinator */
    struct sl_job *known = delay ? sl_job_get(sl_json_str(j, "id", "")) : NULL;
    if (delay && !known)
        sl_sleep_ms(atoi(delay));
    sl_job_put(known);
    struct sl_job *job = job_here(sl_json_str(j, "id", ""), sl_json_str(j, "src", ""), sl_json_str(j, "dst", ""));
    if (!job) {
        sl_logi("dsort %s: aborted before its shards came here; nothing to build", sl_json_str(j, "id", ""));
        json_decref(j);
        sl_resp_empty(r, 200);
        return;
    }
    struct builder *b = sl_xcalloc(1, sizeof(*b));
    pthread_mutex_init(&b->mu, NULL);
    b->job = job;
    json_t *ex = json_object_get(j, "extraction");
    json_t *cur = sl_job_ext_copy(b->job);
    if (ex && !json_object_get(cur, "coordinator")) {
        json_object_set(cur, "extraction", ex);
        json_object_set_new(cur, "description", json_string(sl_json_str(j, "desc", "")));
        sl_job_set_ext(b->job, cur);
    } else {
        json_decref(cur);
    }
    if (sl_bck_resolve(sl_json_str(j, "src", ""), sl_json_str(j, "src_provider", "ais"), NULL, &b->src, &err) < 0 ||
        sl_bck_resolve(sl_json_str(j, "dst", ""), "ais", NULL, &b->dst, &err) < 0) {
        snprintf(b->err, sizeof(b->err), "%s", err.msg);
    } else {
        json_t *outs = json_object_get(j, "outs");
        b->o = sl_xcalloc(json_array_size(outs) + 1, sizeof(*b->o));
        size_t i;
        json_t *x;
        uint64_t biggest = 0;
        json_array_foreach(outs, i, x) {
            b->o[b->n].name = sl_xstrdup(sl_json_str(x, "name", ""));
            b->o[b->n].recs = json_incref(json_object_get(x, "recs"));
            b->o[b->n].bytes = (uint64_t)sl_json_int(x, "bytes", 0);
            biggest = SL_MAX(biggest, b->o[b->n].bytes);
            b->n++;
        }
        /* max_mem_usage bounds what this target's dsort work holds in
         * memory; past it pulled records go to disk (mem_budget) */
        b->max_mem = (uint64_t)sl_json_int(j, "max_mem", 0);
        mem_limit(b->max_mem);
        __atomic_store_n(&mem_budget.peak, __atomic_load_n(&mem_budget.used, __ATOMIC_RELAXED), __ATOMIC_RELAXED);
        int want = (int)sl_json_int(j, "workers", 0);
        b->workers = want > 0 ? want : BUILD_WORKERS;
    }
    json_decref(j);
    pthread_t t;
    if (pthread_create(&t, NULL, build_thread, b) != 0) {
        snprintf(b->err, sizeof(b->err), "dsort: cannot start a thread");
        build_run(b);
        sl_resp_errf(r, SL_EINTERNAL, "dsort: cannot start a thread");
        return;
    }
    pthread_detach(t);
    sl_resp_empty(r, 200);
}

/* ------------------------------------------------------------------ */
/* the coordinator                                                    */
/* ------------------------------------------------------------------ */

struct coord {
    struct sl_dsort_spec s;
    json_t *spec;               /* normalised, sent to the holders */
    struct sl_job *job;
    json_t *warnings;
};

struct names {
    char **v;
    size_t n, cap;
};

static void names_add(struct names *ns, char *s)
{
    if (ns->n == ns->cap) {
        ns->cap = ns->cap ? ns->cap * 2 : 256;
        ns->v = sl_xrealloc(ns->v, ns->cap * sizeof(char *));
    }
    ns->v[ns->n++] = s;
}

struct list_arg {
    struct names *ns;
    const char *ext;
};

static int list_ent(void *arg, const struct sl_lsent *e)
{
    struct list_arg *a = arg;
    char *nm = sl_xstrndup(e->name, e->nlen);
    if (sl_has_suffix(nm, a->ext))
        names_add(a->ns, nm);
    else
        free(nm);
    return 0;
}

/* the input shards: objnames, a template's names (+ the input extension
 * where a name lacks it), or every shard under a prefix */
static int input_names(struct coord *c, const struct sl_bck *b, struct names *ns, struct sl_err *err)
{
    const struct sl_dsort_spec *s = &c->s;
    if (s->objnames) {
        for (size_t i = 0; i < s->nobj; i++)
            names_add(ns, sl_xstrdup(s->objnames[i]));
        return 0;
    }
    struct sl_tmpl *t;
    if (sl_tmpl_parse(s->in_template, &t, err) < 0)
        return -1;
    int rc = 0;
    if (sl_tmpl_is_range(t)) {
        struct sl_buf nb;
        sl_buf_init(&nb);
        for (uint64_t i = 0; i < sl_tmpl_count(t); i++) {
            sl_tmpl_at(t, i, &nb);
            if (!sl_has_suffix(nb.p, s->in_ext))
                sl_buf_adds(&nb, s->in_ext);
            names_add(ns, sl_xstrdup(nb.p));
        }
        sl_buf_free(&nb);
    } else {
        struct sl_lsomsg lm;
        sl_lsomsg_names(&lm, sl_tmpl_prefix(t), false, 0, 10000);
        struct list_arg la = { ns, s->in_ext };
        rc = sl_lso_walk(sl_bck_remote(b) ? sl_backend_lso_page : sl_cluster_list_page, b, &lm, c->job, list_ent,
                         &la, err); /* (a remote input: the remote's names) */
        sl_lsomsg_free(&lm);
        if (rc == 0 && !ns->n)
            rc = sl_errf(err, SL_ENOENT, "dsort: %s://%s has no %s shards under \"%s\"",
                         sl_provider_scheme(b->provider), b->name, s->in_ext, sl_tmpl_prefix(t));
    }
    sl_tmpl_free(t);
    return rc;
}

static void coord_fail(struct coord *c, const char *msg)
{
    json_t *ext = sl_job_ext_copy(c->job);
    json_object_set(ext, "warnings", c->warnings);
    sl_job_set_ext(c->job, ext);
    sl_logw("dsort %s: %s", c->job->id, msg);
    sl_job_fail(c->job, msg);
    sl_dsort_abort_everywhere(c->job->id);
}

static void coord_free(struct coord *c)
{
    sl_dsort_spec_free(&c->s);
    json_decref(c->spec);
    json_decref(c->warnings);
    sl_job_put(c->job);
    free(c);
}

/* Every holder's records of its input shards into recs, in rounds of a
 * batch of shards per holder, so that no answer is larger than the limit
 * allows (the answers are counted in the arena while read) */
static int extract_all(struct coord *c, struct names *ns, struct sl_dsort_recs *recs, json_t *per_target,
                       struct sl_err *err)
{
    struct sl_smap *sm = sl_smap_get();
    struct sl_tfan t;
    sl_tfan_init(&t, 0, "POST", "/v1/internal/dsort/extract");
    /* each holder's shards (indexes into ns): mine[i] .. mine[i] + nmine[i] of one array */
    size_t *all = sl_xcalloc(ns->n + 1, sizeof(size_t)), **mine = sl_xcalloc((size_t)t.n + 1, sizeof(size_t *));
    size_t *nmine = sl_xcalloc((size_t)t.n + 1, sizeof(size_t)), *done = sl_xcalloc((size_t)t.n + 1, sizeof(size_t));
    int *holder = sl_xcalloc(ns->n + 1, sizeof(int));
    uint64_t *st = sl_xcalloc((size_t)t.n * 3 + 1, sizeof(uint64_t)); /* records, bytes, shard bytes per holder */
    struct sl_fan *f = sl_xcalloc((size_t)t.n + 1, sizeof(*f));
    char **bodies = sl_xcalloc((size_t)t.n + 1, sizeof(char *));
    int *fi = sl_xcalloc((size_t)t.n + 1, sizeof(int));
    size_t *sent = sl_xcalloc((size_t)t.n + 1, sizeof(size_t));
    uint64_t limit = recs->arena->limit, ans_bytes = 0;
    size_t ans_shards = 0;
    int rc = 0;
    for (size_t k = 0; k < ns->n && rc == 0; k++) {
        const struct sl_snode *h = owner_of(sm, c->s.in_prov, c->s.in_bck, ns->v[k]);
        int ti = -1;
        for (int i = 0; h && i < t.n; i++)
            if (!strcmp(t.who[i]->id, h->id))
                ti = i;
        if (ti < 0 || (t.who[ti]->flags & SL_SNF_OFFLINE))
            rc = sl_errf(err, SL_EUNAVAIL, "dsort: t[%s], holder of %s, is not responding", h ? h->id : "?",
                         ns->v[k]);
        else
            holder[k] = ti, nmine[ti]++;
    }
    for (int i = 0, off = 0; i < t.n; off += (int)nmine[i], i++)
        mine[i] = all + off;
    for (size_t k = 0; k < ns->n && rc == 0; k++)
        mine[holder[k]][done[holder[k]]++] = k;
    memset(done, 0, ((size_t)t.n + 1) * sizeof(size_t));
    while (rc == 0 && !sl_job_aborting(c->job)) {
        size_t batch = sl_dsort_batch_of(limit, t.n, ans_bytes, ans_shards);
        int nf = 0;
        for (int i = 0; i < t.n; i++) {
            if (done[i] == nmine[i])
                continue;
            json_t *sh = json_array();
            size_t end = nmine[i] - done[i] > batch ? done[i] + batch : nmine[i];
            for (size_t q = done[i]; q < end; q++)
                json_array_append_new(sh, json_pack("[I,s]", (json_int_t)mine[i][q], ns->v[mine[i][q]]));
            json_t *body = json_pack("{s:O,s:o}", "spec", c->spec, "shards", sh);
            size_t blen;
            bodies[nf] = sl_json_dump(body, 0, &blen);
            json_decref(body);
            f[nf] = (struct sl_fan){ .url = t.f[i].url, .method = t.f[i].method, .body = bodies[nf], .blen = blen };
            sent[nf] = end - done[i];
            fi[nf++] = i;
            done[i] = end;
        }
        if (!nf)
            break;
        sl_peer_fanout(f, nf, peer_timeout_ms());
        uint64_t got = 0;
        for (int q = 0; q < nf; q++)
            got += f[q].resp.body.len;
        sl_dsort_arena_charge(recs->arena, (int64_t)got);
        ans_bytes = got, ans_shards = 0;
        for (int q = 0; q < nf && rc == 0; q++) {
            int i = fi[q];
            json_error_t je;
            json_t *ans = f[q].ok && f[q].resp.status == 200 ? json_loadb(f[q].resp.body.p, f[q].resp.body.len, 0,
                                                                          &je) : NULL;
            if (!ans) {
                rc = sl_errf(err, f[q].ok ? sl_code_from_status((int)f[q].resp.status) : SL_EUNAVAIL,
                             "dsort: extraction on t[%s]: %s", t.who[i]->id, f[q].ok ? f[q].resp.err : "no answer");
                break;
            }
            size_t before = recs->n;
            rc = sl_dsort_recs_from_json(json_object_get(ans, "recs"), ns->n, recs, err);
            size_t mi;
            json_t *mv;
            json_array_foreach(json_object_get(ans, "missing"), mi, mv) {
                if (c->s.missing_shards == SL_DSORT_ABORT && rc == 0)
                    rc = sl_errf(err, SL_ENOENT, "dsort: input shard ais://%s/%s does not exist (Config.missing_shards:"
                                 " abort; \"warn\" or \"ignore\" go on without it)", c->s.in_bck,
                                 json_string_value(mv));
                else if (c->s.missing_shards == SL_DSORT_WARN)
                    job_warn(c->job, c->warnings, "input shard ais://%s/%s does not exist", c->s.in_bck,
                             json_string_value(mv));
            }
            st[i * 3] += recs->n - before;
            for (size_t k = before; k < recs->n; k++)
                st[i * 3 + 1] += recs->v[k].bytes;
            st[i * 3 + 2] += (uint64_t)sl_json_int(ans, "bytes", 0);
            json_decref(ans);
        }
        for (int q = 0; q < nf; q++) {
            ans_shards += sent[q];
            free(bodies[q]);
        }
        sl_dsort_arena_charge(recs->arena, -(int64_t)got);
        sl_peer_fanout_free(f, nf);
    }
    for (int i = 0; i < t.n && rc == 0; i++)
        json_object_set_new(per_target, t.who[i]->id,
                            json_pack("{s:I,s:I,s:I,s:I}", "shards", (json_int_t)nmine[i], "records",
                                      (json_int_t)st[i * 3], "bytes", (json_int_t)st[i * 3 + 1], "shard_bytes",
                                      (json_int_t)st[i * 3 + 2]));
    free(all);
    free(mine);
    free(holder);
    free(sent);
    free(nmine);
    free(done);
    free(st);
    free(f);
    free(bodies);
    free(fi);
    sl_tfan_free(&t);
    sl_smap_put(sm);
    return rc;
}

static int check_duplicates(struct coord *c, const struct sl_dsort_recs *r, const struct names *ns,
                            struct sl_err *err)
{
    struct sl_dsort_dup *d;
    size_t nd;
    if (sl_dsort_dups(r, &d, &nd, err) < 0)
        return -1;
    int rc = 0;
    for (size_t q = 0; q < nd && rc == 0; q++) {
        const struct sl_dsort_rec *x = &r->v[d[q].later];
        const char *a = ns->v[r->v[d[q].first].shard], *b = ns->v[x->shard];
        if (c->s.duplicated_records == SL_DSORT_ABORT)
            rc = sl_errf(err, SL_EINVAL, "dsort: record %s is in both %s and %s (Config.duplicated_records: abort; "
                         "\"warn\" or \"ignore\" keep both)", x->key, a, b);
        else if (c->s.duplicated_records == SL_DSORT_WARN)
            job_warn(c->job, c->warnings, "record %s is in both %s and %s", x->key, a, b);
    }
    free(d);
    return rc;
}

/* the EKM file's text: from an ais:// object (through its target) or an http(s) URL */
static int ekm_fetch(const char *where, struct sl_buf *out, struct sl_err *err)
{
    char *url = NULL;
    if (sl_has_prefix(where, "ais://")) {
        char prov[16], b[256];
        const char *obj;
        if (sl_bck_parse(where, 0, prov, sizeof(prov), b, sizeof(b), &obj, err) < 0)
            return -1;
        if (!*obj)
            return sl_errf(err, SL_EINVAL, "dsort: ekm_file %s names no object", where);
        struct sl_smap *sm = sl_smap_get();
        const struct sl_snode *t = G.role == SL_ROLE_STANDALONE ? NULL : owner_of(sm, "ais", b, obj);
        struct sl_buf ub;
        sl_buf_init(&ub);
        sl_peer_obj_url(&ub, t ? t->url : G.self.url, b, "ais", obj, strlen(obj));
        url = sl_buf_steal(&ub);
        sl_smap_put(sm);
    } else {
        url = sl_xstrdup(where);
    }
    struct sl_peer_resp pr;
    int rc = sl_peer_call("GET", url, NULL, 0, NULL, 0, peer_timeout_ms(), &pr);
    if (rc < 0 || pr.status != 200)
        rc = sl_errf(err, rc < 0 ? SL_EUNAVAIL : sl_code_from_status((int)pr.status),
                     "dsort: fetching ekm_file %s: %s%s", where, rc < 0 ? "" : "HTTP status ", pr.err[0] ? pr.err :
                     "no answer");
    else
        sl_buf_add(out, pr.body.p ? pr.body.p : "", pr.body.len);
    sl_peer_resp_free(&pr);
    free(url);
    return rc < 0 ? -1 : 0;
}

/* every record's family from the EKM; records without one follow ekm_missing_key */
static int apply_ekm(struct coord *c, struct sl_dsort_recs *recs, struct sl_err *err)
{
    struct sl_dsort_ekm e = { 0 };
    if (c->s.ekm_file) {
        struct sl_buf text;
        sl_buf_init(&text);
        int rc = ekm_fetch(c->s.ekm_file, &text, err);
        if (rc == 0)
            rc = sl_dsort_ekm_parse(text.p ? text.p : "", text.len, c->s.ekm_file, c->s.ekm_sep,
                                    c->s.ekm_malformed_line, c->warnings, &e, err);
        sl_buf_free(&text);
        if (rc < 0)
            return -1;
    }
    int rc = 0;
    for (size_t i = 0; i < recs->n && rc == 0; i++) {
        struct sl_dsort_rec *x = &recs->v[i];
        if (c->s.ekm_file) {
            const char *t;
            if ((rc = sl_dsort_ekm_match(&e, x->key, &t, err)) < 0)
                break;
            x->family = t ? sl_dsort_arena_strdup(recs->arena, t, err) : NULL; /* (the arena's) */
            if (t && !x->family)
                rc = -1;
        }
        if (x->family || rc < 0)
            continue;
        x->drop = true;
        if (c->s.ekm_missing_key == SL_DSORT_ABORT)
            rc = sl_errf(err, SL_EINVAL, "dsort: record %s has no shard in the EKM (Config.ekm_missing_key: abort; "
                         "\"warn\" or \"ignore\" leave such records out)", x->key);
        else if (c->s.ekm_missing_key == SL_DSORT_WARN)
            job_warn(c->job, c->warnings, "record %s has no shard in the EKM: left out", x->key);
    }
    sl_dsort_ekm_free(&e);
    return rc;
}

static void *coord_main(void *arg)
{
    struct coord *c = arg;
    struct sl_err err = { 0 };
    struct names ns = { 0 };
    struct sl_dsort_arena mem; /* the record list: in memory up to max_mem_usage, then mapped from a file */
    sl_dsort_arena_init(&mem, sl_dsort_spec_max_mem(&c->s));
    struct sl_dsort_recs recs = { .arena = &mem };
    struct sl_dsort_body *bb = NULL;
    int *order = NULL;
    struct sl_dsort_out *outs = NULL;
    size_t nout = 0;
    json_t *per_target = json_object();
    struct sl_bck in;
    bool have_in = false;
    struct sl_smap *sm = NULL;
    int nt = 0;

    phase_set(c->job, "extraction", "started_ns", json_integer(sl_now_ns()));
    if (sl_bck_resolve_add(c->s.in_bck, c->s.in_prov, &in, &err) < 0) /* (a remote input seen first: added) */
        goto fail;
    have_in = true;
    if (input_names(c, &in, &ns, &err) < 0 || extract_all(c, &ns, &recs, per_target, &err) < 0)
        goto fail;
    phase_set(c->job, "extraction", "end_ns", json_integer(sl_now_ns()));
    phase_set(c->job, "extraction", "targets", json_incref(per_target));
    if (sl_job_aborting(c->job)) {
        sl_errf(&err, SL_EINVAL, "aborted");
        goto fail;
    }
    phase_set(c->job, "sorting", "started_ns", json_integer(sl_now_ns()));
    if (!recs.n) {
        sl_errf(&err, SL_ENOENT, "dsort: the input shards hold no records");
        goto fail;
    }
    if (((c->s.ekm_file || c->s.ekm_lua) && apply_ekm(c, &recs, &err) < 0) ||
        check_duplicates(c, &recs, &ns, &err) < 0 || sl_dsort_order(&recs, &c->s, &order, &err) < 0 ||
        sl_dsort_pack(&recs, order, &c->s, &outs, &nout, &err) < 0)
        goto fail;
    if (!strcmp(c->s.in_bck, c->s.out_bck) && !c->s.overwrite) { /* (a map of the input names: linear) */
        struct sl_strmap in_names;
        memset(&in_names, 0, sizeof(in_names));
        for (size_t k = 0; k < ns.n; k++)
            sl_strmap_put(&in_names, ns.v[k], strlen(ns.v[k]), (int)k);
        size_t i = 0;
        while (i < nout && sl_strmap_get(&in_names, outs[i].name, strlen(outs[i].name)) < 0)
            i++;
        sl_strmap_free(&in_names);
        if (i < nout) {
            sl_errf(&err, SL_EEXIST, "dsort: output shard %s would overwrite an input shard of the same bucket; "
                    "choose another output_format or output_bck, or set \"overwrite\": true", outs[i].name);
            goto fail;
        }
    }
    phase_set(c->job, "sorting", "end_ns", json_integer(sl_now_ns()));
    { /* before any builder (one may run here) updates the ext */
        json_t *ext = sl_job_ext_copy(c->job);
        json_object_set(ext, "warnings", c->warnings);
        sl_job_set_ext(c->job, ext);
    }
    sm = sl_smap_get();
    if (c->s.dry_run) {
        json_t *layout = json_array();
        for (size_t i = 0; i < nout; i++) {
            const struct sl_snode *o = owner_of(sm, "ais", c->s.out_bck, outs[i].name);
            json_array_append_new(layout, json_pack("{s:s,s:I,s:I,s:s}", "name", outs[i].name, "records",
                                                    (json_int_t)outs[i].count, "bytes", (json_int_t)outs[i].bytes,
                                                    "target", o ? o->id : G.id));
        }
        phase_set(c->job, "dry_run", "shards", layout);
        sl_job_finish(c->job, NULL);
        goto out;
    }
    {
        struct sl_bck ob;
        if (sl_bck_resolve(c->s.out_bck, "ais", NULL, &ob, &err) == 0)
            sl_bck_release(&ob);
        else if (err.code != SL_ENOBCK || (err.msg[0] = 0, sl_cluster_bck_create(c->s.out_bck, &err) < 0))
            goto fail;
    }
    /* hand every target its output shards (an empty list too, so that
     * every target's job ends with the shard creation) */
    struct sl_tfan t;
    sl_tfan_init(&t, 0, "POST", "/v1/internal/dsort/build");
    nt = t.n;
    /* each target's body written as a stream (past max_mem_usage into a
     * mapped file): {"id",...,"outs":[{"name","recs":[[shard,key]...],"bytes"}...]} */
    bb = sl_xcalloc((size_t)nt + 1, sizeof(*bb));
    for (int i = 0; i < nt; i++)
        bb[i].fd = -1;
    for (int i = 0; i < nt; i++) {
        if (sl_dsort_body_open(&bb[i], mem.limit > 0, &err) < 0) {
            sl_tfan_free(&t);
            goto fail;
        }
        json_t *hd = json_pack("{s:s,s:s,s:s,s:s,s:s,s:O,s:I,s:i}", "id", c->job->id, "src", c->s.in_bck,
                               "src_provider", c->s.in_prov, "dst", c->s.out_bck, "desc", c->s.description,
                               "extraction", json_object_get(per_target, t.who[i]->id) ?: json_null(), "max_mem",
                               (json_int_t)sl_dsort_spec_max_mem(&c->s), "workers", c->s.create_conc);
        char *h = json_dumps(hd, JSON_COMPACT);
        h[strlen(h) - 1] = 0; /* (the object left open for "outs") */
        fprintf(bb[i].f, "%s,\"outs\":[", h);
        free(h);
        json_decref(hd);
    }
    int *cnt = sl_xcalloc((size_t)nt + 1, sizeof(int));
    for (size_t i = 0; i < nout; i++) {
        const struct sl_snode *o =
            G.role == SL_ROLE_STANDALONE ? NULL : owner_of(sm, "ais", c->s.out_bck, outs[i].name);
        int ti = 0;
        for (int k = 0; o && k < nt; k++)
            if (!strcmp(t.who[k]->id, o->id))
                ti = k;
        json_t *rl = json_array();
        for (size_t r = 0; r < outs[i].count; r++) {
            const struct sl_dsort_rec *x = &recs.v[outs[i].rec[r]];
            json_array_append_new(rl, json_pack("[s,s]", ns.v[x->shard], x->key));
        }
        json_t *o1 = json_pack("{s:s,s:o,s:I}", "name", outs[i].name, "recs", rl, "bytes", (json_int_t)outs[i].bytes);
        fputs(cnt[ti]++ ? "," : "", bb[ti].f);
        json_dumpf(o1, bb[ti].f, JSON_COMPACT);
        json_decref(o1);
    }
    free(cnt);
    for (int i = 0; i < nt; i++) {
        fputs("]}", bb[i].f);
        if (sl_dsort_body_done(&bb[i], &t.f[i].body, &t.f[i].blen, &err) < 0) {
            sl_tfan_free(&t);
            goto fail;
        }
    }
    phase_set(c->job, "sorting", "coordinator", json_pack("{s:I,s:I,s:I,s:I}", "mem_limit", (json_int_t)mem.limit,
                                                          "mem_peak", (json_int_t)mem.peak, "records_bytes",
                                                          (json_int_t)mem.total, "spilled_bytes",
                                                          (json_int_t)mem.spilled));
    /* the other targets first, this one last: a target's job exists once
     * its build answered, and this (the coordinator's) job ends with its own
     * build, so while any target could still lack the job, the
     * coordinator's shows creation running (GET /v1/sort?uuid= is never
     * "all finished" with an owner's shards still to come) */
    int self = -1;
    for (int i = 0; i < nt; i++)
        if (!strcmp(t.who[i]->id, G.id))
            self = i;
    if (self >= 0 && nt > 1) {
        struct sl_fan f = t.f[self];
        const struct sl_snode *w = t.who[self];
        t.f[self] = t.f[nt - 1], t.who[self] = t.who[nt - 1];
        t.f[nt - 1] = f, t.who[nt - 1] = w;
        sl_peer_fanout(t.f, nt - 1, peer_timeout_ms());
        sl_peer_fanout(&t.f[nt - 1], 1, peer_timeout_ms());
    } else {
        sl_tfan_run(&t, peer_timeout_ms());
    }
    int bad = -1;
    for (int i = 0; i < nt; i++)
        if (!t.f[i].ok || t.f[i].resp.status != 200)
            bad = i;
    if (bad >= 0)
        sl_errf(&err, SL_EUNAVAIL, "dsort: handing output shards to t[%s]: %s", t.who[bad]->id,
                t.f[bad].ok ? t.f[bad].resp.err : "no answer");
    sl_tfan_free(&t);
    if (bad >= 0)
        goto fail;
    sl_logi("dsort %s: %zu record(s) from %zu shard(s) into %zu output shard(s)", c->job->id, recs.n, ns.n, nout);
    goto out;
fail:
    coord_fail(c, err.msg);
out:
    for (int i = 0; bb && i < nt; i++)
        sl_dsort_body_free(&bb[i]);
    free(bb);
    if (sm)
        sl_smap_put(sm);
    json_decref(per_target);
    sl_dsort_outs_free(outs, nout);
    free(order);
    sl_dsort_recs_free(&recs);
    sl_dsort_arena_free(&mem);
    sl_strv_free(ns.v, ns.n);
    if (have_in)
        sl_bck_release(&in);
    coord_free(c);
    return NULL;
}

int sl_dsort_coord_start(const char *id, json_t *spec, struct sl_err *err)
{
    struct coord *c = sl_xcalloc(1, sizeof(*c));
    c->warnings = json_array();
    if (sl_dsort_spec_parse(spec, &c->s, err) < 0) {
        sl_dsort_spec_free(&c->s);
        json_decref(c->warnings);
        free(c);
        return -1;
    }
    c->spec = json_incref(spec);
    c->job = sl_job_start("dsort", id, c->s.in_bck, c->s.out_bck);
    sl_job_set_ext(c->job, json_pack("{s:b,s:s,s:O}", "coordinator", 1, "description", c->s.description, "spec",
                                     spec));
    pthread_t t;
    if (pthread_create(&t, NULL, coord_main, c) != 0) {
        sl_job_fail(c->job, "cannot start a thread");
        coord_free(c);
        return sl_errf(err, SL_EINTERNAL, "dsort: cannot start a thread");
    }
    pthread_detach(t);
    return 0;
}

int sl_dsort_start_body(const char *id, const json_t *body, struct sl_err *err)
{
    return sl_dsort_coord_start(id, json_object_get(body, "spec"), err);
}

/* POST /v1/internal/dsort/start {"id","spec"} */
static void start_internal(struct sl_req *r)
{
    sl_cluster_job_begun(r, sl_dsort_start_body, "dsort start");
}

static void internal_remove(struct sl_req *r)
{
    int n = sl_job_remove(sl_req_query(r, "uuid") ? sl_req_query(r, "uuid") : "");
    if (n < 0)
        sl_resp_errf(r, SL_EINVAL, "dsort job %s is still in progress and cannot be removed", sl_req_query(r, "uuid"));
    else
        sl_resp_json_new(r, 200, json_pack("{s:i}", "removed", n));
}

static void extract_done(struct sl_req *r)
{
    sl_req_offload(r, extract_run, NULL, NULL);
}

static void pull_done(struct sl_req *r)
{
    sl_req_offload(r, pull_run, NULL, NULL);
}

static void build_run_req(struct sl_req *r, void *arg)
{
    (void)arg;
    build_start(r);
}

static void build_done(struct sl_req *r)
{
    sl_req_offload(r, build_run_req, NULL, NULL);
}

static void start_internal_run(struct sl_req *r, void *arg)
{
    (void)arg;
    start_internal(r);
}

static void start_internal_done(struct sl_req *r)
{
    sl_req_offload(r, start_internal_run, NULL, NULL);
}

bool sl_dsort_internal(struct sl_req *r)
{
    if (!sl_has_prefix(r->path, "/v1/internal/dsort/"))
        return false;
    const char *what = r->path + strlen("/v1/internal/dsort/");
    static const struct {
        const char *what;
        sl_body_done_fn done;
    } eps[] = { { "start", start_internal_done }, { "extract", extract_done }, { "pull", pull_done },
                { "build", build_done } };
    if (!sl_is_target()) {
        sl_resp_errf(r, SL_EINVAL, "%s is not a storage target", G.name);
        return true;
    }
    if (!strcmp(what, "cleanup")) {
        if (r->method == SL_M_POST)
            sl_req_offload(r, cleanup_run, NULL, NULL);
        else
            sl_resp_method_not_allowed(r, "POST");
        return true;
    }
    if (!strcmp(what, "job")) {
        if (r->method == SL_M_DELETE)
            internal_remove(r);
        else
            sl_resp_method_not_allowed(r, "DELETE");
        return true;
    }
    for (size_t i = 0; i < SL_ARRAY_SIZE(eps); i++) {
        if (strcmp(what, eps[i].what))
            continue;
        if (r->method != SL_M_POST)
            sl_resp_method_not_allowed(r, "POST");
        else
            sl_req_buffer_body(r, INTERNAL_BODY_MAX, eps[i].done);
        return true;
    }
    sl_resp_errf(r, SL_ENOENT, "no such endpoint: %s %s", r->method_str, r->path);
    return true;
}
