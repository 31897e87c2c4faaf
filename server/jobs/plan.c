/* SPDX-License-Identifier: MIT
 * plan.c: epoch plans (docs/get-batch.md §6). A plan fixes, for every
 * epoch, one global order of the WebDataset samples of a set of plain-tar
 * shards; batch I of epoch E is served as one tar of its samples in that
 * order, assembled across targets by get-batch (moss.c).
 *
 *   PUT    /v1/ml/plan                       {"name","bck","template"|"prefix","seed",
 *                                             "batch_size","drop_last","shuffle_block"}
 *   GET    /v1/ml/plan[/NAME]                the plans, or one
 *   DELETE /v1/ml/plan/NAME
 *   GET    /v1/ml/plan/NAME/batch?epoch=E&index=I
 *
 * PlanMD = {"version", "plans": {NAME: {..., "shards": [names], "counts":
 * [samples per shard]}}} is a cluster document (metasync, persisted on
 * every node), so plans survive restarts and any node can serve a batch.
 *
 * The order of epoch E depends on (seed, E) and the shard list only:
 *   1. the shards are shuffled with mix(seed, E, ~0);
 *   2. consecutive runs of shuffle_block shards form blocks;
 *   3. the samples of block k (its shards in that order, each shard's
 *      samples in shard order) are shuffled with mix(seed, E, k);
 *   4. the epoch is block 0's samples, then block 1's, ...
 * Reading stays within a few shards at a time, and no node count enters.
 */
#include "plan.h"
#include "auth.h"
#include "arch.h"
#include "cluster.h"
#include "jsonx.h"
#include "log.h"
#include "lso.h"
#include "moss.h"
#include "node.h"
#include "peer.h"
#include "shard_plan.h"
#include "template.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#define DEFAULT_BLOCK 4
#define MAX_SHARDS 1000000
#define CACHE_SHARDS 256

/* ------------------------------------------------------------------ */
/* the samples of one shard                                           */
/* ------------------------------------------------------------------ */

struct member {
    char *name;
    uint64_t off, size;         /* of its data in the shard */
};

struct samples {
    char *key;                  /* "bck\n" "shard": the cache's */
    int n;                      /* samples */
    int *start;                 /* sample i = members [start[i], start[i + 1]) */
    struct member *m;
    int nm;
};

static void samples_free(struct samples *s)
{
    if (!s)
        return;
    for (int i = 0; i < s->nm; i++)
        free(s->m[i].name);
    free(s->m);
    free(s->start);
    free(s->key);
    free(s);
}

static int off_cmp(const void *a, const void *b)
{
    const struct member *x = a, *y = b;
    return x->off < y->off ? -1 : x->off > y->off;
}

/* a shard's member index -> its samples, in shard order */
static struct samples *samples_from_index(const json_t *idx)
{
    struct samples *s = sl_xcalloc(1, sizeof(*s));
    s->nm = (int)json_array_size(idx);
    s->m = sl_xcalloc((size_t)s->nm + 1, sizeof(*s->m));
    for (int i = 0; i < s->nm; i++) {
        json_t *e = json_array_get(idx, (size_t)i);
        s->m[i].name = sl_xstrdup(sl_json_str(e, "name", ""));
        s->m[i].off = (uint64_t)sl_json_int(e, "offset", 0);
        s->m[i].size = (uint64_t)sl_json_int(e, "size", 0);
    }
    qsort(s->m, (size_t)s->nm, sizeof(*s->m), off_cmp);
    /* a sample = the members that share a WebDataset key, wherever they
     * are; samples in the order of their first member, members in shard
     * order */
    struct sl_strmap keys;
    memset(&keys, 0, sizeof(keys));
    int *of = sl_xcalloc((size_t)s->nm + 1, sizeof(int)), nk = 0;
    int *cnt = sl_xcalloc((size_t)s->nm + 1, sizeof(int));
    for (int i = 0; i < s->nm; i++) {
        struct sl_wds_split sp;
        sl_plugin_wds_split(s->m[i].name, strlen(s->m[i].name), &sp);
        size_t kl = sp.dir_len + sp.stem_len;
        int k = sl_strmap_get(&keys, s->m[i].name, kl);
        if (k < 0) {
            k = nk++;
            sl_strmap_put(&keys, s->m[i].name, kl, k);
        }
        of[i] = k;
        cnt[k]++;
    }
    s->n = nk;
    s->start = sl_xcalloc((size_t)nk + 1, sizeof(int));
    for (int k = 0; k < nk; k++)
        s->start[k + 1] = s->start[k] + cnt[k];
    struct member *sorted = sl_xcalloc((size_t)s->nm + 1, sizeof(*sorted));
    memset(cnt, 0, (size_t)(nk + 1) * sizeof(int));
    for (int i = 0; i < s->nm; i++)
        sorted[s->start[of[i]] + cnt[of[i]]++] = s->m[i];
    free(s->m);
    s->m = sorted;
    sl_strmap_free(&keys);
    free(of);
    free(cnt);
    return s;
}

/* the member index of shard of bucket bck, from the target that holds it */
static json_t *shard_index(const char *bck, const char *shard, struct sl_err *err)
{
    struct sl_bck b;
    if (sl_bck_resolve(bck, "ais", NULL, &b, err) < 0)
        return NULL;
    json_t *idx = NULL;
    const struct sl_snode *t = NULL;
    struct sl_smap *sm = sl_smap_get();
    if (G.role != SL_ROLE_STANDALONE) {
        struct sl_buf un;
        sl_buf_init(&un);
        sl_obj_uname(&un, b.provider, b.name, shard, strlen(shard));
        t = sl_smap_hrw_target(sm, un.p, un.len);
        sl_buf_free(&un);
    }
    if (G.role == SL_ROLE_STANDALONE || (t && !strcmp(t->id, G.id))) {
        idx = sl_arch_index_json(&b, shard, strlen(shard), err);
    } else if (!t) {
        sl_errf(err, SL_EUNAVAIL, "the cluster has no active targets");
    } else {
        char *eb = sl_url_encode_path(b.name, strlen(b.name));
        char *eo = sl_url_encode_path(shard, strlen(shard));
        char *url = sl_xasprintf("%s/v1/objects/%s/%s?archindex=true", t->url, eb, eo);
        struct sl_peer_resp pr;
        int rc = sl_peer_call("GET", url, NULL, 0, NULL, 0, 0, &pr);
        if (rc < 0 || pr.status != 200) {
            sl_errf(err, rc < 0 ? SL_EUNAVAIL : sl_code_from_status((int)pr.status), "ais://%s/%s on t[%s]: %s",
                    b.name, shard, t->id, pr.err);
        } else {
            json_error_t je;
            idx = json_loadb(pr.body.p, pr.body.len, 0, &je);
            if (!json_is_array(idx)) {
                json_decref(idx);
                idx = NULL;
                sl_errf(err, SL_EINTERNAL, "ais://%s/%s: t[%s] sent a bad member index", b.name, shard, t->id);
            }
        }
        sl_peer_resp_free(&pr);
        free(url);
        free(eb);
        free(eo);
    }
    sl_smap_put(sm);
    sl_bck_release(&b);
    return idx;
}

/* ---- a plan's sample counts: every shard's member index, COUNT_WORKERS
 * asked at a time (one serial GET each made 10^5 shards take 6 minutes) ---- */

#define COUNT_WORKERS 16

struct count_run {
    const char *bck;
    json_t *shards;
    int64_t *n;                 /* by shard: its samples */
    size_t next;                /* the next shard to ask for (atomic) */
    int failed;                 /* (atomic) a failure: shards after it are not asked */
    size_t fail_i;              /* the failed shard first in order (under mu) */
    pthread_mutex_t mu;
    struct sl_err err;          /* the first failure */
};

static void *count_worker(void *arg)
{
    struct count_run *c = arg;
    size_t ns = json_array_size(c->shards);
    for (;;) {
        size_t i = __atomic_fetch_add(&c->next, 1, __ATOMIC_RELAXED);
        if (i >= ns || (__atomic_load_n(&c->failed, __ATOMIC_RELAXED) && i > c->fail_i))
            break;
        struct sl_err err = { 0 };
        json_t *idx = shard_index(c->bck, json_string_value(json_array_get(c->shards, i)), &err);
        if (!idx) {
            pthread_mutex_lock(&c->mu);
            if (!c->failed || i < c->fail_i) { /* the first shard in order that fails is named */
                c->err = err;
                c->fail_i = i;
            }
            c->failed = 1;
            pthread_mutex_unlock(&c->mu);
            continue;
        }
        struct samples *s = samples_from_index(idx);
        json_decref(idx);
        c->n[i] = s->n;
        samples_free(s);
    }
    return NULL;
}

/* the samples of each shard (a JSON array in shards' order) and their sum,
 * or NULL with err: the first shard that failed */
static json_t *count_samples(const struct sl_bck *b, json_t *shards, int64_t *total, struct sl_err *err)
{
    size_t ns = json_array_size(shards);
    struct count_run c = { .bck = b->name, .shards = shards, .n = sl_xcalloc(ns ? ns : 1, sizeof(int64_t)) };
    pthread_mutex_init(&c.mu, NULL);
    int nw = ns < COUNT_WORKERS ? (int)ns : COUNT_WORKERS, started = 0;
    pthread_t th[COUNT_WORKERS];
    for (int w = 1; w < nw; w++) /* (this thread is the first worker) */
        if (pthread_create(&th[started], NULL, count_worker, &c) == 0)
            started++;
    count_worker(&c);
    for (int w = 0; w < started; w++)
        pthread_join(th[w], NULL);
    pthread_mutex_destroy(&c.mu);
    json_t *counts = NULL;
    if (c.failed) {
        *err = c.err;
    } else {
        counts = json_array();
        *total = 0;
        for (size_t i = 0; i < ns; i++) {
            json_array_append_new(counts, json_integer(c.n[i]));
            *total += c.n[i];
        }
    }
    free(c.n);
    return counts;
}

/* A small cache of shard samples for serving batches: the shards of one
 * block are read for many batches in a row. */
static pthread_mutex_t cmu = PTHREAD_MUTEX_INITIALIZER;
static struct samples *cache[CACHE_SHARDS];
static int cache_next;

/* The samples of shard, which must number expect: taken out of the cache
 * (or fetched from the shard's target); cache_put gives them back. */
static struct samples *shard_samples(const char *bck, const char *shard, int expect, struct sl_err *err)
{
    char *key = sl_xasprintf("%s\n%s", bck, shard);
    pthread_mutex_lock(&cmu);
    for (int i = 0; i < CACHE_SHARDS; i++)
        if (cache[i] && !strcmp(cache[i]->key, key)) {
            struct samples *s = cache[i];
            cache[i] = NULL; /* the caller's now; put back by cache_put */
            pthread_mutex_unlock(&cmu);
            free(key);
            if (s->n == expect)
                return s;
            samples_free(s);
            pthread_mutex_lock(&cmu);
            break;
        }
    pthread_mutex_unlock(&cmu);
    json_t *idx = shard_index(bck, shard, err);
    if (!idx) {
        free(key);
        return NULL;
    }
    struct samples *s = samples_from_index(idx);
    json_decref(idx);
    s->key = key;
    if (s->n != expect) {
        sl_errf(err, SL_EEXIST, "ais://%s/%s now holds %d samples, not the %d it held when the plan was made: "
                "the shard changed; delete the plan and create it again", bck, shard, s->n, expect);
        samples_free(s);
        return NULL;
    }
    return s;
}

static void cache_put(struct samples *s)
{
    pthread_mutex_lock(&cmu);
    samples_free(cache[cache_next]);
    cache[cache_next] = s;
    cache_next = (cache_next + 1) % CACHE_SHARDS;
    pthread_mutex_unlock(&cmu);
}

/* ------------------------------------------------------------------ */
/* the order                                                          */
/* ------------------------------------------------------------------ */

static uint64_t mix1(uint64_t z)
{
    z += 0x9e3779b97f4a7c15ULL;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static uint64_t mix(uint64_t seed, uint64_t epoch, uint64_t k)
{
    return mix1(mix1(mix1(seed) ^ epoch) ^ k);
}

struct pick {
    int shard;                  /* index into the plan's shard list (in a part: into its shards) */
    int sample;                 /* within the shard */
};

/* The order of one epoch of a plan: the shards' permutation and where each
 * block's samples start. It takes O(shards) to make, so the last few asked
 * are kept (a plan's batches come epoch by epoch): a batch then costs its
 * samples and its blocks', not the plan's shards, and an epoch's batches
 * (or its routes, GET .../targets) cost the epoch once, not once a batch. */
struct eorder {
    json_t *counts;             /* held: the plan's (a changed PlanMD is a new array) */
    uint64_t seed, epoch;
    int block, nb;
    int *perm;                  /* the shards in epoch order */
    int64_t *start;             /* start[k]: block k's first sample; start[nb]: every sample */
};

#define EORDERS 4
static pthread_mutex_t emu = PTHREAD_MUTEX_INITIALIZER;
static struct eorder *eorders[EORDERS];
static int enext;

static void eorder_free(struct eorder *o)
{
    if (!o)
        return;
    json_decref(o->counts);
    free(o->perm);
    free(o->start);
    free(o);
}

/* (under emu) */
static const struct eorder *eorder_get(json_t *counts, uint64_t seed, uint64_t epoch, int block)
{
    for (int i = 0; i < EORDERS; i++) {
        const struct eorder *o = eorders[i];
        if (o && o->counts == counts && o->seed == seed && o->epoch == epoch && o->block == block)
            return o;
    }
    int ns = (int)json_array_size(counts);
    struct eorder *o = sl_xcalloc(1, sizeof(*o));
    o->counts = json_incref(counts);
    o->seed = seed, o->epoch = epoch, o->block = block;
    o->nb = (ns + block - 1) / block;
    o->perm = sl_xcalloc((size_t)ns + 1, sizeof(int));
    o->start = sl_xcalloc((size_t)o->nb + 1, sizeof(int64_t));
    for (int i = 0; i < ns; i++)
        o->perm[i] = i;
    sl_shuffle(o->perm, (size_t)ns, mix(seed, epoch, UINT64_MAX));
    int64_t pos = 0;
    for (int k = 0; k < o->nb; k++) {
        o->start[k] = pos;
        for (int i = k * block; i < ns && i < (k + 1) * block; i++)
            pos += json_integer_value(json_array_get(counts, (size_t)o->perm[i]));
    }
    o->start[o->nb] = pos;
    eorder_free(eorders[enext]);
    eorders[enext] = o;
    enext = (enext + 1) % EORDERS;
    return o;
}

/* the samples of batch index of epoch, in order */
static int batch_picks(const json_t *p, uint64_t epoch, int64_t index, struct pick **out, int *nout,
                       struct sl_err *err)
{
    json_t *counts = json_object_get(p, "counts");
    int ns = (int)json_array_size(counts);
    int block = (int)sl_json_int(p, "shuffle_block", DEFAULT_BLOCK);
    int64_t bs = sl_json_int(p, "batch_size", 1), total = sl_json_int(p, "samples", 0);
    int64_t batches = sl_json_int(p, "batches", 0);
    uint64_t seed = (uint64_t)sl_json_int(p, "seed", 0);
    if (index < 0 || index >= batches)
        return sl_errf(err, SL_ENOENT, "plan %s: batch %lld does not exist: the plan has %lld batches (0..%lld)",
                       sl_json_str(p, "name", ""), (long long)index, (long long)batches, (long long)batches - 1);
    int64_t lo = index * bs, hi = SL_MIN(lo + bs, total);
    *out = sl_xcalloc((size_t)(hi - lo) + 1, sizeof(**out));
    *nout = 0;
    pthread_mutex_lock(&emu);
    const struct eorder *o = eorder_get(counts, seed, epoch, block);
    int a = 0, b = o->nb; /* the first block that ends past lo */
    while (a < b) {
        int m = (a + b) / 2;
        if (o->start[m + 1] <= lo)
            a = m + 1;
        else
            b = m;
    }
    for (int k = a; k < o->nb && o->start[k] < hi; k++) {
        int64_t n = o->start[k + 1] - o->start[k], pos = o->start[k];
        struct pick *all = sl_xcalloc((size_t)n + 1, sizeof(*all));
        int *ord = sl_xcalloc((size_t)n + 1, sizeof(int));
        int64_t m = 0;
        for (int i = k * block; i < ns && i < (k + 1) * block; i++) {
            int c = (int)json_integer_value(json_array_get(counts, (size_t)o->perm[i]));
            for (int j = 0; j < c; j++, m++) {
                all[m] = (struct pick){ o->perm[i], j };
                ord[m] = (int)m;
            }
        }
        sl_shuffle(ord, (size_t)n, mix(seed, epoch, (uint64_t)k));
        for (int64_t q = SL_MAX(lo - pos, 0); q < n && pos + q < hi; q++)
            (*out)[(*nout)++] = all[ord[q]];
        free(all);
        free(ord);
    }
    pthread_mutex_unlock(&emu);
    return 0;
}

/* The distinct shards of n picks, sorted, into *glob (new, *nglob of
 * them), and each pick's shard made an index into it: a batch's arrays are
 * then the size of its shards, not of the plan's. */
static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

static void picks_local(struct pick *pk, int n, int **glob, int *nglob)
{
    int *g = sl_xcalloc((size_t)n + 1, sizeof(int)), m = 0;
    for (int k = 0; k < n; k++)
        g[k] = pk[k].shard;
    qsort(g, (size_t)n, sizeof(int), int_cmp);
    for (int k = 0; k < n; k++)
        if (!m || g[m - 1] != g[k])
            g[m++] = g[k];
    for (int k = 0; k < n; k++)
        pk[k].shard = (int)((int *)bsearch(&pk[k].shard, g, (size_t)m, sizeof(int), int_cmp) - g);
    *glob = g;
    *nglob = m;
}

/* ------------------------------------------------------------------ */
/* PlanMD                                                             */
/* ------------------------------------------------------------------ */

static json_t *plan_get(const char *name)
{
    json_t *d = sl_cluster_doc("planmd");
    json_t *p = json_object_get(json_object_get(d, "plans"), name);
    if (p)
        json_incref(p);
    json_decref(d);
    return p;
}

/* what GET shows: the plan without its shard list */
static json_t *plan_summary(const json_t *p)
{
    /* every field but the per-shard lists, which may hold a million entries: not copied */
    json_t *o = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)p, k, v)
        if (strcmp(k, "shards") && strcmp(k, "counts"))
            json_object_set(o, k, v);
    json_object_set_new(o, "shards", json_integer((json_int_t)json_array_size(json_object_get(p, "shards"))));
    return o;
}

static bool name_ok(const char *n)
{
    size_t l = strlen(n);
    if (!l || l > 64)
        return false;
    for (size_t i = 0; i < l; i++)
        if (!(n[i] == '-' || n[i] == '_' || n[i] == '.' || (n[i] >= '0' && n[i] <= '9') ||
              (n[i] >= 'a' && n[i] <= 'z') || (n[i] >= 'A' && n[i] <= 'Z')))
            return false;
    return true;
}

struct names {
    json_t *arr;
};

static int list_ent(void *arg, const struct sl_lsent *e)
{
    struct names *n = arg;
    if (e->nlen > 4 && !memcmp(e->name + e->nlen - 4, ".tar", 4))
        json_array_append_new(n->arr, json_stringn(e->name, e->nlen));
    return json_array_size(n->arr) > MAX_SHARDS ? 1 : 0;
}

/* the shard names of the spec */
static json_t *shard_names(const struct sl_bck *b, const char *tmpl, const char *prefix, struct sl_err *err)
{
    struct names n = { json_array() };
    if (tmpl) {
        struct sl_tmpl *t;
        if (sl_tmpl_parse(tmpl, &t, err) < 0) {
            sl_err_wrap(err, "plan: template");
            json_decref(n.arr);
            return NULL;
        }
        if (!sl_tmpl_is_range(t) || sl_tmpl_count(t) > MAX_SHARDS) {
            sl_tmpl_free(t);
            json_decref(n.arr);
            sl_errf(err, SL_EINVAL, "plan: template \"%s\" must name 1 to %d shards with a range "
                    "(shard-{0000..0999}.tar)", tmpl, MAX_SHARDS);
            return NULL;
        }
        struct sl_buf nb;
        sl_buf_init(&nb);
        for (uint64_t i = 0; i < sl_tmpl_count(t); i++) {
            sl_tmpl_at(t, i, &nb);
            json_array_append_new(n.arr, json_string(nb.p));
        }
        sl_buf_free(&nb);
        sl_tmpl_free(t);
        return n.arr;
    }
    struct sl_lsomsg lm;
    sl_lsomsg_names(&lm, prefix, false, 0, 10000);
    int rc = sl_lso_walk(sl_cluster_list_page, b, &lm, NULL, list_ent, &n, err);
    sl_lsomsg_free(&lm);
    if (rc < 0) {
        json_decref(n.arr);
        return NULL;
    }
    if (!json_array_size(n.arr)) {
        json_decref(n.arr);
        sl_errf(err, SL_ENOENT, "plan: ais://%s has no .tar shards under the prefix \"%s\"", b->name, prefix);
        return NULL;
    }
    return n.arr;
}

static int int_field(const json_t *j, const char *k, int64_t dflt, int64_t lo, int64_t hi, int64_t *out,
                     struct sl_err *err)
{
    json_t *v = json_object_get(j, k);
    if (!v || json_is_null(v)) {
        *out = dflt;
        return 0;
    }
    if (json_is_string(v)) {
        char *end;
        long long x = strtoll(json_string_value(v), &end, 10);
        if (*json_string_value(v) && !*end) {
            *out = x;
            goto range;
        }
    }
    if (!json_is_integer(v))
        return sl_errf(err, SL_EINVAL, "plan: \"%s\" must be an integer", k);
    *out = (int64_t)json_integer_value(v);
range:
    if (*out < lo || *out > hi)
        return sl_errf(err, SL_EINVAL, "plan: \"%s\" must be %lld to %lld", k, (long long)lo, (long long)hi);
    return 0;
}

static void create_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    if (sl_cluster_fence(&err) < 0) { /* (a primary cut off from the majority changes nothing) */
        sl_resp_err(r, &err);
        return;
    }
    json_t *j = sl_req_body_json(r, &err), *shards = NULL, *counts = NULL, *old = NULL;
    struct sl_bck b;
    bool have_b = false;
    int64_t seed, bs, block;
    const char *name = sl_json_str(j, "name", ""), *bck = sl_json_str(j, "bck", "");
    const char *tmpl = json_string_value(json_object_get(j, "template"));
    const char *prefix = json_string_value(json_object_get(j, "prefix"));
    json_t *dl = json_object_get(j, "drop_last");
    if (!json_is_object(j)) {
        if (!err.msg[0])
            sl_errf(&err, SL_EINVAL, "plan: the body must be a JSON object");
        goto out;
    }
    static const char *const known[] = { "name", "bck", "template", "prefix", "seed", "batch_size", "drop_last",
                                         "shuffle_block" };
    const char *k = sl_json_unknown_key_exact(j, known, SL_ARRAY_SIZE(known));
    if (k) {
        sl_errf(&err, SL_EINVAL, "plan: unknown field \"%s\" (valid: name, bck, template, prefix, seed, "
                "batch_size, drop_last, shuffle_block)", k);
        goto out;
    }
    if (!name_ok(name)) {
        sl_errf(&err, SL_EINVAL, "plan: \"name\" must be 1-64 letters, digits, '-', '_' or '.' (got \"%s\")", name);
        goto out;
    }
    if (!tmpl == !prefix) {
        sl_errf(&err, SL_EINVAL, "plan: give exactly one of \"template\" (shard-{000..099}.tar) and \"prefix\"");
        goto out;
    }
    if (dl && !json_is_boolean(dl)) {
        sl_errf(&err, SL_EINVAL, "plan: \"drop_last\" must be true or false");
        goto out;
    }
    if (int_field(j, "batch_size", 0, 1, 1 << 20, &bs, &err) < 0 ||
        int_field(j, "shuffle_block", DEFAULT_BLOCK, 1, 1 << 20, &block, &err) < 0)
        goto out;
    if (!json_object_get(j, "batch_size")) {
        sl_errf(&err, SL_EINVAL, "plan: \"batch_size\" is required");
        goto out;
    }
    uint64_t drawn = (uint64_t)sl_now_ns();
    if (getrandom(&drawn, sizeof(drawn), 0) != (ssize_t)sizeof(drawn))
        drawn ^= (uint64_t)sl_mono_ns();
    if (int_field(j, "seed", (int64_t)(drawn >> 12), 0, INT64_MAX, &seed, &err) < 0)
        goto out;
    if (!strncmp(bck, "ais://", 6))
        bck += 6;
    if (sl_bck_resolve(bck, "ais", NULL, &b, &err) < 0)
        goto out;
    have_b = true;
    if ((old = plan_get(name))) {
        sl_errf(&err, SL_EEXIST, "plan \"%s\" exists (over ais://%s): delete it first (DELETE /v1/ml/plan/%s) or "
                "choose another name", name, sl_json_str(old, "bck", ""), name);
        goto out;
    }
    if (!(shards = shard_names(&b, tmpl, prefix, &err)))
        goto out;
    int64_t total = 0;
    if (!(counts = count_samples(&b, shards, &total, &err))) {
        sl_err_wrap(&err, "plan %s", name);
        goto out;
    }
    if (!total) {
        sl_errf(&err, SL_EINVAL, "plan %s: the %zu shard(s) hold no samples", name, json_array_size(shards));
        goto out;
    }
    int64_t batches = json_is_true(dl) ? total / bs : (total + bs - 1) / bs;
    if (!batches) {
        sl_errf(&err, SL_EINVAL, "plan %s: %lld samples make no full batch of %lld (drop_last)", name,
                (long long)total, (long long)bs);
        goto out;
    }
    json_t *p = json_pack("{s:s,s:s,s:I,s:I,s:b,s:I,s:O,s:O,s:I,s:I,s:I}", "name", name, "bck", b.name, "seed",
                          (json_int_t)seed, "batch_size", (json_int_t)bs, "drop_last", json_is_true(dl),
                          "shuffle_block", (json_int_t)block, "shards", shards, "counts", counts, "samples",
                          (json_int_t)total, "batches", (json_int_t)batches, "created",
                          (json_int_t)(sl_now_ns() / 1000000000));
    json_object_set_new(p, tmpl ? "template" : "prefix", json_string(tmpl ? tmpl : prefix));
    json_t *doc = sl_cluster_doc("planmd");
    json_t *nd = doc ? json_deep_copy(doc) : json_object();
    json_decref(doc);
    if (!json_object_get(nd, "plans"))
        json_object_set_new(nd, "plans", json_object());
    json_object_set(json_object_get(nd, "plans"), name, p);
    sl_cluster_set_doc("planmd", nd);
    sl_logi("plan %s: %lld samples of %zu shards of ais://%s, %lld batches of %lld", name, (long long)total,
            json_array_size(shards), b.name, (long long)batches, (long long)bs);
    sl_resp_json_new(r, 200, plan_summary(p));
    json_decref(p);
out:
    if (err.msg[0])
        sl_resp_err(r, &err);
    json_decref(old);
    json_decref(shards);
    json_decref(counts);
    if (have_b)
        sl_bck_release(&b);
    json_decref(j);
}

static void delete_run(struct sl_req *r, void *arg)
{
    char *name = arg;
    struct sl_err ferr = { 0 };
    if (sl_cluster_fence(&ferr) < 0) { /* (a primary cut off from the majority changes nothing) */
        sl_resp_err(r, &ferr);
        free(name);
        return;
    }
    json_t *doc = sl_cluster_doc("planmd");
    if (!json_object_get(json_object_get(doc, "plans"), name)) {
        sl_resp_errf(r, SL_ENOENT, "plan \"%s\" does not exist (list them with GET /v1/ml/plan)", name);
    } else {
        json_t *nd = json_deep_copy(doc);
        json_object_del(json_object_get(nd, "plans"), name);
        sl_cluster_set_doc("planmd", nd);
        sl_resp_empty(r, 200);
    }
    json_decref(doc);
    free(name);
}

/* ------------------------------------------------------------------ */
/* batches                                                            */
/* ------------------------------------------------------------------ */

struct batch_req {
    char *name;
    uint64_t epoch;
    int64_t index;
};

static int batch_query(struct sl_req *r, struct batch_req *q, struct sl_err *err)
{
    const char *e = sl_req_query(r, "epoch"), *i = sl_req_query(r, "index");
    char *end;
    if (!e || !*e || !i || !*i)
        return sl_errf(err, SL_EINVAL, "plan batch: give ?epoch=E&index=I (non-negative integers)");
    unsigned long long ev = strtoull(e, &end, 10);
    if (*end || *e == '-')
        return sl_errf(err, SL_EINVAL, "plan batch: epoch \"%s\" is not a non-negative integer", e);
    long long iv = strtoll(i, &end, 10);
    if (*end || iv < 0)
        return sl_errf(err, SL_EINVAL, "plan batch: index \"%s\" is not a non-negative integer", i);
    q->epoch = ev;
    q->index = iv;
    return 0;
}

/* the target that holds shard of the plan's bucket under sm */
static const struct sl_snode *shard_owner(const struct sl_smap *sm, const json_t *p, const char *shard,
                                          struct sl_buf *un)
{
    sl_buf_reset(un);
    sl_obj_uname(un, "ais", sl_json_str(p, "bck", ""), shard, strlen(shard));
    return sl_smap_hrw_target(sm, un->p, un->len);
}

/* What one node works out of a batch: the picks, who holds each shard,
 * and (for the shards held here) their samples, from the cache. */
struct part {
    json_t *p;
    struct pick *pk;
    int n;
    const char **names;         /* by shard index: its name */
    const struct sl_snode **own;
    struct samples **held;
    int ns;                     /* the batch's shards (pk[].shard indexes them) */
};

static void part_free(struct part *pt)
{
    for (int i = 0; pt->held && i < pt->ns; i++)
        if (pt->held[i])
            cache_put(pt->held[i]);
    free(pt->held);
    free(pt->own);
    free(pt->names);
    free(pt->pk);
    json_decref(pt->p);
    memset(pt, 0, sizeof(*pt));
}

/* the picks of batch q, their shards' owners under sm; the samples of
 * every shard held here, or (all) of every shard */
static int part_init(struct part *pt, const char *name, uint64_t epoch, int64_t index, const struct sl_smap *sm,
                     bool all, struct sl_err *err)
{
    memset(pt, 0, sizeof(*pt));
    if (!(pt->p = plan_get(name)))
        return sl_errf(err, SL_ENOENT, "plan \"%s\" does not exist (list them with GET /v1/ml/plan)", name);
    if (batch_picks(pt->p, epoch, index, &pt->pk, &pt->n, err) < 0)
        return -1;
    json_t *shards = json_object_get(pt->p, "shards"), *counts = json_object_get(pt->p, "counts");
    const char *bck = sl_json_str(pt->p, "bck", "");
    int *glob;
    picks_local(pt->pk, pt->n, &glob, &pt->ns); /* (pk[].shard: an index into glob from here on) */
    pt->names = sl_xcalloc((size_t)pt->ns + 1, sizeof(*pt->names));
    pt->own = sl_xcalloc((size_t)pt->ns + 1, sizeof(*pt->own));
    pt->held = sl_xcalloc((size_t)pt->ns + 1, sizeof(*pt->held));
    struct sl_buf un;
    sl_buf_init(&un);
    int rc = 0;
    for (int k = 0; k < pt->n && rc == 0; k++) {
        int si = pt->pk[k].shard;
        if (pt->names[si])
            continue;
        pt->names[si] = json_string_value(json_array_get(shards, (size_t)glob[si]));
        if (G.role != SL_ROLE_STANDALONE && !(pt->own[si] = shard_owner(sm, pt->p, pt->names[si], &un))) {
            rc = sl_errf(err, SL_EUNAVAIL, "plan batch: the cluster has no active targets");
            break;
        }
        bool here = G.role == SL_ROLE_STANDALONE || !strcmp(pt->own[si]->id, G.id);
        if ((all || here) &&
            !(pt->held[si] = shard_samples(bck, pt->names[si],
                                           (int)json_integer_value(json_array_get(counts, (size_t)glob[si])), err)))
            rc = -1;
    }
    free(glob);
    sl_buf_free(&un);
    return rc;
}

/* Pick k as one tar run of its shard: its members one after the other,
 * each behind a single 512-byte header. length -1: they are not (a pax
 * header, say), and the batch goes member by member. */
static struct sl_moss_item pick_run(const struct part *pt, int k)
{
    int si = pt->pk[k].shard;
    const struct samples *s = pt->held[si];
    int m0 = s->start[pt->pk[k].sample], m1 = s->start[pt->pk[k].sample + 1];
    bool run = s->m[m0].off >= 512;
    for (int m = m0; run && m + 1 < m1; m++)
        run = s->m[m + 1].off == s->m[m].off + (s->m[m].size + 511) / 512 * 512 + 512;
    uint64_t a = s->m[m0].off - 512, b = s->m[m1 - 1].off + (s->m[m1 - 1].size + 511) / 512 * 512;
    return (struct sl_moss_item){ sl_json_str(pt->p, "bck", ""), pt->names[si], NULL, NULL, s->m[m0].name,
                                  run ? a : 0, run ? (int64_t)(b - a) : -1 };
}

struct pull_req {
    char *name;
    uint64_t epoch;
    int64_t index, smap;
    struct part pt;
};

static void pull_req_free(void *arg)
{
    struct pull_req *q = arg;
    part_free(&q->pt);
    free(q->name);
    free(q);
}

/* a holder's part of a batch: the runs of the picks of shards held here,
 * in batch order (on the pull's thread) */
static int pull_build(void *arg, struct sl_moss_item **items, int *n, struct sl_err *err)
{
    struct pull_req *q = arg;
    struct sl_smap *sm = sl_smap_get();
    int rc = 0;
    if (sm->version != q->smap)
        rc = sl_errf(err, SL_EUNAVAIL, "t[%s] has cluster map v%lld, the designated target v%lld (a target joined "
                     "or left): retry the batch", G.id, (long long)sm->version, (long long)q->smap);
    else
        rc = part_init(&q->pt, q->name, q->epoch, q->index, sm, false, err);
    sl_smap_put(sm);
    if (rc < 0)
        return -1;
    *items = sl_xcalloc((size_t)q->pt.n + 1, sizeof(**items));
    *n = 0;
    for (int k = 0; k < q->pt.n; k++)
        if (q->pt.held[q->pt.pk[k].shard])
            (*items)[(*n)++] = pick_run(&q->pt, k);
    return 0;
}

/* Serve batch q: the picks held here as tar runs, the others' from their
 * holders (who work out their part from the plan), or, if a shard's layout
 * is not plain, every sample member by member. */
static void batch_run(struct sl_req *r, void *arg)
{
    struct batch_req *q = arg;
    struct sl_err err = { 0 };
    struct part pt;
    struct sl_smap *sm = sl_smap_get();
    int64_t ver = sm->version;
    int rc = part_init(&pt, q->name, q->epoch, q->index, sm, false, &err);
    sl_smap_put(sm);
    struct sl_moss_item *items = NULL;
    int ni = 0, cap = 0;
    if (rc == 0) {
        items = sl_xcalloc((size_t)pt.n + 1, sizeof(*items));
        for (int k = 0; k < pt.n; k++) {
            int si = pt.pk[k].shard;
            items[k] = pt.held[si] ? pick_run(&pt, k)
                                   : (struct sl_moss_item){ sl_json_str(pt.p, "bck", ""), pt.names[si], NULL, NULL,
                                                            "", 0, 0 };
        }
        char *uri = sl_xasprintf("/v1/internal/plan/pull?plan=%s&epoch=%llu&index=%lld&smap=%lld", q->name,
                                 (unsigned long long)q->epoch, (long long)q->index, (long long)ver);
        rc = sl_moss_serve(r, items, pt.n, uri, ver); /* copies what it keeps */
        free(uri);
        free(items);
        items = NULL;
        if (rc == 1) {
            /* member by member: every shard's samples */
            part_free(&pt);
            sm = sl_smap_get();
            rc = part_init(&pt, q->name, q->epoch, q->index, sm, true, &err);
            sl_smap_put(sm);
            for (int k = 0; rc == 0 && k < pt.n; k++) {
                const struct samples *s = pt.held[pt.pk[k].shard];
                for (int m = s->start[pt.pk[k].sample]; m < s->start[pt.pk[k].sample + 1]; m++) {
                    if (ni == cap) {
                        cap = cap ? cap * 2 : 256;
                        items = sl_xrealloc(items, (size_t)cap * sizeof(*items));
                    }
                    const char *shard = pt.names[pt.pk[k].shard];
                    items[ni++] = (struct sl_moss_item){ sl_json_str(pt.p, "bck", ""), shard, s->m[m].name,
                                                         s->m[m].name, NULL, 0, 0 };
                }
            }
            if (rc == 0)
                sl_moss_serve(r, items, ni, NULL, 0);
        }
    }
    if (rc < 0)
        sl_resp_err(r, &err);
    part_free(&pt);
    free(items);
    free(q->name);
    free(q);
}

static void batch_cancel(void *arg)
{
    struct batch_req *q = arg;
    free(q->name);
    free(q);
}

/* ------------------------------------------------------------------ */
/* routes                                                             */
/* ------------------------------------------------------------------ */

static void create_done(struct sl_req *r)
{
    sl_req_offload(r, create_run, NULL, NULL);
}

static void list_plans(struct sl_req *r, const char *name)
{
    json_t *doc = sl_cluster_doc("planmd");
    json_t *plans = json_object_get(doc, "plans");
    if (name) {
        json_t *p = json_object_get(plans, name);
        if (p)
            sl_resp_json_new(r, 200, plan_summary(p));
        else
            sl_resp_errf(r, SL_ENOENT, "plan \"%s\" does not exist (list them with GET /v1/ml/plan)", name);
    } else {
        json_t *a = json_array();
        const char *k;
        json_t *v;
        json_object_foreach(plans, k, v)
            json_array_append_new(a, plan_summary(v));
        sl_resp_json_new(r, 200, a);
    }
    json_decref(doc);
}

/* The target that holds the most samples of batch index of epoch (the
 * fewest bytes between targets); ties go to the first of them in batch
 * order. NULL: no active target. */
static const struct sl_snode *batch_target(const struct sl_smap *sm, const json_t *p, const struct batch_req *q)
{
    struct pick *pk = NULL;
    int n = 0;
    struct sl_err err = { 0 };
    if (batch_picks(p, q->epoch, q->index, &pk, &n, &err) < 0)
        return NULL;
    json_t *shards = json_object_get(p, "shards");
    int *glob, ng;
    picks_local(pk, n, &glob, &ng);
    const struct sl_snode **own = sl_xcalloc((size_t)ng + 1, sizeof(*own));
    const struct sl_snode *best = NULL;
    int *cnt = sl_xcalloc((size_t)sm->nnodes + 1, sizeof(int)), most = 0;
    struct sl_buf un;
    sl_buf_init(&un);
    for (int k = 0; k < n; k++) {
        int si = pk[k].shard;
        if (!own[si] &&
            !(own[si] = shard_owner(sm, p, json_string_value(json_array_get(shards, (size_t)glob[si])), &un)))
            break;
        int ni = (int)(own[si] - sm->nodes);
        if (ni >= 0 && ni < sm->nnodes && ++cnt[ni] > most) {
            most = cnt[ni];
            best = own[si];
        }
    }
    sl_buf_free(&un);
    free(cnt);
    free(own);
    free(glob);
    free(pk);
    return best;
}

/* The gateway: a batch is served by the target that holds most of its
 * samples, so that the fewest cross between targets. */
static void batch_redirect(struct sl_req *r, const struct batch_req *q)
{
    json_t *p = plan_get(q->name);
    if (!p) {
        sl_resp_errf(r, SL_ENOENT, "plan \"%s\" does not exist (list them with GET /v1/ml/plan)", q->name);
        return;
    }
    struct sl_err aerr = { 0 };
    if (sl_req_allow(r, SL_ACCESS_GET, sl_json_str(p, "provider", "ais"), sl_json_str(p, "bck", ""), &aerr) < 0) {
        json_decref(p); /* (a batch is the plan's bucket's objects: GET on it) */
        sl_resp_err(r, &aerr);
        return;
    }
    int64_t batches = sl_json_int(p, "batches", 0);
    if (q->index >= batches) {
        sl_resp_errf(r, SL_ENOENT, "plan %s: batch %lld does not exist: the plan has %lld batches (0..%lld)",
                     q->name, (long long)q->index, (long long)batches, (long long)batches - 1);
        json_decref(p);
        return;
    }
    struct sl_smap *sm = sl_smap_get();
    const struct sl_snode *t = batch_target(sm, p, q);
    json_decref(p);
    if (!t) {
        sl_resp_errf(r, SL_EUNAVAIL, "plan batch: the cluster has no active targets");
    } else {
        struct sl_buf url;
        sl_buf_init(&url);
        sl_buf_printf(&url, "%s%s", t->url, r->raw_uri);
        sl_peer_redirect_url(&url, G.id, r->method_str, NULL);
        sl_resp_redirect(r, 307, url.p);
        sl_buf_free(&url);
    }
    sl_smap_put(sm);
}

/* GET /v1/ml/plan/NAME/targets?epoch=E[&from=I][&count=N]: the target
 * each batch of epoch E goes to (the one a gateway redirects it to), so
 * that readers can ask it directly and save the redirect. Any target
 * serves any batch correctly; this only saves work. */
#define MAX_ROUTES 100000

static void targets_run(struct sl_req *r, void *arg)
{
    struct batch_req *q = arg;
    json_t *p = plan_get(q->name);
    const char *c = sl_req_query(r, "count");
    int64_t count = c && *c ? strtoll(c, NULL, 10) : MAX_ROUTES;
    if (!p) {
        sl_resp_errf(r, SL_ENOENT, "plan \"%s\" does not exist (list them with GET /v1/ml/plan)", q->name);
        goto out;
    }
    int64_t batches = sl_json_int(p, "batches", 0), from = q->index;
    if (count <= 0 || count > MAX_ROUTES)
        count = MAX_ROUTES;
    if (from > batches)
        from = batches;
    int64_t to = SL_MIN(batches, from + count);
    struct sl_smap *sm = sl_smap_get();
    json_t *urls = json_object(), *list = json_array();
    for (int64_t i = from; i < to; i++) {
        const struct sl_snode *t = NULL;
        if (G.role != SL_ROLE_STANDALONE) {
            struct batch_req b = { q->name, q->epoch, i };
            t = batch_target(sm, p, &b);
        }
        const char *id = t ? t->id : G.id;
        if (!json_object_get(urls, id))
            json_object_set_new(urls, id, json_string(t ? t->url : G.self.url));
        json_array_append_new(list, json_string(id));
    }
    sl_resp_json_new(r, 200, json_pack("{s:I,s:I,s:I,s:I,s:o,s:o}", "epoch", (json_int_t)q->epoch, "from",
                                       (json_int_t)from, "batches", (json_int_t)batches, "smap_version",
                                       (json_int_t)sm->version, "targets", urls, "route", list));
    sl_smap_put(sm);
out:
    json_decref(p);
    free(q->name);
    free(q);
}

static void plan_route(struct sl_req *r)
{
    const char *rest = r->path + strlen("/v1/ml/plan");
    while (*rest == '/')
        rest++;
    char name[128] = "";
    const char *slash = strchr(rest, '/');
    size_t nl = slash ? (size_t)(slash - rest) : strlen(rest);
    if (nl >= sizeof(name)) {
        sl_resp_errf(r, SL_EINVAL, "plan: name too long");
        return;
    }
    memcpy(name, rest, nl);
    name[nl] = 0;
    const char *sub = slash ? slash + 1 : "";
    bool gw = G.role == SL_ROLE_PROXY;
    if (!name[0] && r->method == SL_M_PUT) {
        if (G.role == SL_ROLE_TARGET)
            sl_resp_errf(r, SL_EINVAL, "%s is a storage target: create plans through a gateway", G.name);
        else if (gw && !sl_is_primary())
            sl_forward_to_primary(r);
        else
            sl_req_buffer_body(r, 1024 * 1024, create_done);
    } else if (r->method == SL_M_GET && !strcmp(sub, "batch") && name[0]) {
        struct sl_err err = { 0 };
        struct batch_req q = { name, 0, 0 };
        if (batch_query(r, &q, &err) < 0) {
            sl_resp_err(r, &err);
        } else if (gw) {
            batch_redirect(r, &q);
        } else {
            struct batch_req *a = sl_xmalloc(sizeof(*a));
            *a = q;
            a->name = sl_xstrdup(name);
            sl_req_offload(r, batch_run, batch_cancel, a);
        }
    } else if (r->method == SL_M_GET && !strcmp(sub, "targets") && name[0]) {
        const char *e = sl_req_query(r, "epoch"), *f = sl_req_query(r, "from");
        char *end = NULL;
        unsigned long long ev = e && *e && *e != '-' ? strtoull(e, &end, 10) : 0;
        long long fv = f && *f ? strtoll(f, NULL, 10) : 0;
        if (!e || !*e || *e == '-' || *end || fv < 0) {
            sl_resp_errf(r, SL_EINVAL, "plan targets: give ?epoch=E[&from=I][&count=N] (non-negative integers)");
        } else {
            struct batch_req *a = sl_xmalloc(sizeof(*a));
            *a = (struct batch_req){ sl_xstrdup(name), ev, fv };
            sl_req_offload(r, targets_run, batch_cancel, a);
        }
    } else if (r->method == SL_M_GET && !sub[0]) {
        list_plans(r, name[0] ? name : NULL);
    } else if (r->method == SL_M_DELETE && name[0] && !sub[0]) {
        if (G.role == SL_ROLE_TARGET)
            sl_resp_errf(r, SL_EINVAL, "%s is a storage target: delete plans through a gateway", G.name);
        else if (gw && !sl_is_primary())
            sl_forward_to_primary(r);
        else
            sl_req_offload(r, delete_run, free, sl_xstrdup(name));
    } else {
        sl_resp_errf(r, SL_EINVAL, "unsupported request %s %s (plans: PUT /v1/ml/plan, GET /v1/ml/plan[/NAME], "
                     "DELETE /v1/ml/plan/NAME, GET /v1/ml/plan/NAME/batch?epoch=E&index=I, GET "
                     "/v1/ml/plan/NAME/targets?epoch=E)", r->method_str, r->path);
    }
}

/* GET /v1/internal/plan/pull?plan=&epoch=&index=&smap=: a holder's part
 * of a batch (sl_moss_serve's pull_uri) */
static bool plan_internal_route(struct sl_req *r)
{
    if (strcmp(r->path, "/v1/internal/plan/pull"))
        return false;
    if (r->method != SL_M_GET) {
        sl_resp_method_not_allowed(r, "GET");
        return true;
    }
    struct sl_err err = { 0 };
    struct batch_req b = { (char *)sl_req_query(r, "plan"), 0, 0 };
    const char *v = sl_req_query(r, "smap");
    if (!b.name || !v || batch_query(r, &b, &err) < 0) {
        sl_resp_errf(r, SL_EINVAL, "plan pull: give ?plan=&epoch=&index=&smap=%s%s", err.msg[0] ? ": " : "",
                     err.msg);
        return true;
    }
    struct pull_req *q = sl_xcalloc(1, sizeof(*q));
    q->name = sl_xstrdup(b.name);
    q->epoch = b.epoch;
    q->index = b.index;
    q->smap = strtoll(v, NULL, 10);
    sl_moss_pull(r, pull_build, pull_req_free, q);
    return true;
}

static const char *const plan_paths[] = { "/v1/ml/plan", NULL };

const struct sl_module sl_plan_module = {
    .name = "plan",
    .paths = plan_paths,
    .route = plan_route,
    .internal = plan_internal_route,
};
