/* SPDX-License-Identifier: MIT
 * bsumm.c: bucket summaries (spec native-gaps.md §4): every target counts
 * its objects of a bucket (under a prefix) from its metadata, the gateway
 * adds the counts up in the background, and the client polls by id.
 */
#include "bsumm.h"
#include "backend.h"
#include "cluster.h"
#include "ec.h"
#include "jsonx.h"
#include "log.h"
#include "lost.h"
#include "lso.h"
#include "node.h"
#include "store.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KEEP 64                 /* finished summaries kept for polls */

/* ---- a target's share ---- */

struct count {
    uint64_t n, bytes, min, max;
};

/* a target's count of one bucket */
struct here {
    struct count c;
    const struct sl_bck *ec;    /* erasure coded, and asked: count the unprotected too */
    uint64_t un, ubytes;
};

static int count_ent(void *arg, const struct sl_lsent *e)
{
    struct here *h = arg;
    struct count *c = &h->c;
    c->n++;
    c->bytes += e->size;
    c->min = c->n == 1 || e->size < c->min ? e->size : c->min;
    c->max = e->size > c->max ? e->size : c->max;
    if (h->ec && sl_ec_unprotected(h->ec, e->name, e->nlen)) {
        h->un++;
        h->ubytes += e->size;
    }
    return 0;
}

static int local_page(const struct sl_bck *b, const struct sl_lsomsg *m, struct sl_lspage *out, struct sl_err *err)
{
    return sl_lso_local_page(b, m, G.id, out, err);
}

/* with ec: an erasure-coded bucket's counts have "unprotected_n" and
 * "unprotected_bytes" too (sl_ec_unprotected: one metafile read per object) */
static json_t *count_here(const char *bucket, const char *prov, const char *prefix, bool ec, struct sl_err *err)
{
    struct sl_bck b;
    if (sl_bck_resolve(bucket, prov && *prov ? prov : "ais", NULL, &b, err) < 0)
        return NULL;
    struct here h = { 0 };
    int d, p;
    int64_t lim;
    if (ec && sl_ec_props(&b, &d, &p, &lim))
        h.ec = &b;
    struct sl_lsomsg lm;
    sl_lsomsg_names(&lm, prefix, true, 0, 10000);
    int rc = sl_lso_walk(local_page, &b, &lm, NULL, count_ent, &h, err);
    sl_lsomsg_free(&lm);
    sl_bck_release(&b);
    if (rc < 0)
        return NULL;
    json_t *j = json_pack("{s:I,s:I,s:I,s:I}", "n", (json_int_t)h.c.n, "bytes", (json_int_t)h.c.bytes, "min",
                          (json_int_t)h.c.min, "max", (json_int_t)h.c.max);
    if (h.ec) {
        json_object_set_new(j, "unprotected_n", json_integer((json_int_t)h.un));
        json_object_set_new(j, "unprotected_bytes", json_integer((json_int_t)h.ubytes));
    }
    return j;
}

/* every ais:// bucket: {NAME: counts} */
static json_t *count_all(const char *prefix, bool ec, struct sl_err *err)
{
    struct sl_bmd *bmd = sl_bmd_get();
    json_t *all = json_object();
    for (int i = 0; i < bmd->n && all; i++) {
        if (strcmp(bmd->bcks[i].provider, "ais"))
            continue;
        json_t *j = count_here(bmd->bcks[i].name, "ais", prefix, ec, err);
        if (!j && err->code == SL_ENOBCK) {
            err->msg[0] = 0; /* destroyed meanwhile */
            err->code = 0;
            continue;
        }
        if (!j) {
            json_decref(all);
            all = NULL;
            break;
        }
        json_object_set_new(all, bmd->bcks[i].name, j);
    }
    sl_bmd_put(bmd);
    return all;
}

static void internal_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    const char *b = sl_req_query(r, "bck"), *p = sl_req_query(r, "prefix"), *ec = sl_req_query(r, "ec");
    const char *prov = sl_req_query(r, "provider");
    bool wec = ec && !strcmp(ec, "1"), wseq = sl_req_query_bool(r, "seq");
    char tok[64];
    sl_lost_token(tok, sizeof(tok)); /* (before the count: a change during it makes the token older) */
    json_t *j = b && *b ? count_here(b, prov, p ? p : "", wec, &err) : count_all(p ? p : "", wec, &err);
    if (j && wseq)
        j = json_pack("{s:s,s:o}", "seq", tok, "buckets", j);
    if (j)
        sl_resp_json_new(r, 200, j);
    else
        sl_resp_err(r, &err);
}

void sl_bsumm_internal(struct sl_req *r)
{
    sl_req_offload(r, internal_run, NULL, NULL);
}

/* ---- the gateway ---- */

struct summ {
    char id[32];
    char bck[SL_MAX_BCKNAME + 1];   /* "": every bucket */
    char prov[8];               /* bck's provider: "ais", "aws", ... */
    bool cached;                /* a remote-backed bck: only what the cluster holds (else the remote is listed) */
    char *prefix;
    bool done;
    json_t *result;             /* [BsummResult...], one per bucket, when done */
    char err[600];
    int code;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct summ *summs[KEEP];
static int next_slot;

/* what a listing of the remote found (summ.cached false): every object,
 * and how many of them the cluster holds */
struct remote_count {
    bool listed;
    struct count all;
};

static json_t *result_json(const char *bck, const char *prov, const struct count *c, const struct remote_count *rc)
{
    uint64_t used = 0, total = 0;
    if (G.role == SL_ROLE_STANDALONE)
        sl_store_capacity(&used, &total);
    char n[24], b[24], t[24], rn[24], rb[24];
    snprintf(n, sizeof(n), "%llu", (unsigned long long)c->n);
    snprintf(b, sizeof(b), "%llu", (unsigned long long)c->bytes);
    snprintf(t, sizeof(t), "%llu", (unsigned long long)total);
    snprintf(rn, sizeof(rn), "%llu", (unsigned long long)(rc && rc->listed ? rc->all.n : 0));
    snprintf(rb, sizeof(rb), "%llu", (unsigned long long)(rc && rc->listed ? rc->all.bytes : 0));
    /* object sizes: of what was counted, the remote's objects when it was listed (as AIStore's) */
    const struct count *sz = rc && rc->listed ? &rc->all : c;
    return json_pack("{s:s,s:s,s:{s:s,s:s},s:{s:s,s:s},s:{s:I,s:I,s:I},s:{s:s,s:s,s:s,s:s},s:I,s:b}",
                     "name", bck, "provider", prov, "namespace", "uuid", "", "name", "", "ObjCount",
                     "obj_count_present", n, "obj_count_remote", rn, "ObjSize",
                     "obj_min_size", (json_int_t)sz->min, "obj_avg_size", (json_int_t)(sz->n ? sz->bytes / sz->n : 0),
                     "obj_max_size", (json_int_t)sz->max, "TotalSize", "size_on_disk", b, "size_all_present_objs", b,
                     "size_all_remote_objs", rb, "total_disks_size", t, "used_pct",
                     (json_int_t)(total ? c->bytes * 100 / total : 0), "is_present", true);
}

static void add(struct count *c, const json_t *j)
{
    uint64_t n = (uint64_t)sl_json_int(j, "n", 0);
    if (!n)
        return;
    uint64_t mn = (uint64_t)sl_json_int(j, "min", 0), mx = (uint64_t)sl_json_int(j, "max", 0);
    c->min = !c->n || mn < c->min ? mn : c->min;
    c->max = mx > c->max ? mx : c->max;
    c->n += n;
    c->bytes += (uint64_t)sl_json_int(j, "bytes", 0);
}

/* counts per bucket, as the targets' answers come in */
struct tally {
    struct bcount {
        char *name;
        struct count c;
    } *v;
    size_t n, cap;
};

static struct count *tally_get(struct tally *t, const char *name)
{
    for (size_t i = 0; i < t->n; i++)
        if (!strcmp(t->v[i].name, name))
            return &t->v[i].c;
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->v = sl_xrealloc(t->v, t->cap * sizeof(*t->v));
    }
    t->v[t->n] = (struct bcount){ sl_xstrdup(name), { 0 } };
    return &t->v[t->n++].c;
}

static int bcount_cmp(const void *a, const void *b)
{
    return strcmp(((const struct bcount *)a)->name, ((const struct bcount *)b)->name);
}

/* one answer: one bucket's counts (s->bck), or {NAME: counts} */
static void tally_add(struct tally *t, const struct summ *s, const json_t *j)
{
    if (s->bck[0]) {
        add(tally_get(t, s->bck), j);
        return;
    }
    const char *name;
    json_t *v;
    json_object_foreach((json_t *)j, name, v)
        add(tally_get(t, name), v);
}

static int remote_ent(void *arg, const struct sl_lsent *e)
{
    struct count *c = arg;
    c->n++;
    c->bytes += e->size;
    c->min = c->n == 1 || e->size < c->min ? e->size : c->min;
    c->max = e->size > c->max ? e->size : c->max;
    return 0;
}

/* a remote-backed bucket, not cached only: list the remote (from here, the
 * gateway, a page at a time) and count what it holds */
static int count_remote(const struct summ *s, struct remote_count *rc, struct sl_err *err)
{
    struct sl_bck b;
    if (sl_bck_resolve(s->bck, s->prov, NULL, &b, err) < 0)
        return -1;
    int r = 0;
    if (sl_bck_remote(&b)) {
        struct sl_lsomsg lm;
        sl_lsomsg_names(&lm, s->prefix, true, 0, 1000);
        r = sl_lso_walk(sl_backend_lso_page, &b, &lm, NULL, remote_ent, &rc->all, err);
        sl_lsomsg_free(&lm);
        rc->listed = r == 0;
    }
    sl_bck_release(&b);
    return r;
}

static void *run(void *arg)
{
    struct summ *s = arg;
    struct sl_err err = { 0 };
    struct tally tl = { 0 };
    struct remote_count rc = { 0 };
    if (s->bck[0])
        tally_get(&tl, s->bck); /* there even when empty */
    if (G.role == SL_ROLE_STANDALONE) {
        json_t *j = s->bck[0] ? count_here(s->bck, s->prov, s->prefix, false, &err)
                               : count_all(s->prefix, false, &err);
        if (j)
            tally_add(&tl, s, j);
        json_decref(j);
    } else {
        char *eb = sl_url_encode_query(s->bck), *ep = sl_url_encode_query(s->prefix);
        struct sl_tfan t;
        sl_tfan_init(&t, 0, "GET", "/v1/internal/bsumm?bck=%s&provider=%s&prefix=%s", eb, s->prov, ep);
        free(eb);
        free(ep);
        sl_tfan_run(&t, sl_conf->send_file_time_ns / 1000000);
        for (int i = 0; i < t.n && !err.msg[0]; i++) {
            if (!t.f[i].ok || t.f[i].resp.status != 200) {
                sl_errf(&err, t.f[i].ok ? sl_code_from_status((int)t.f[i].resp.status) : SL_EUNAVAIL,
                        "summary of %s%s%s: t[%s]: %s", s->bck[0] ? sl_provider_scheme(s->prov) : "every bucket",
                        s->bck[0] ? "://" : "", s->bck, t.who[i]->id,
                        t.f[i].ok ? t.f[i].resp.err : "no answer");
                break;
            }
            json_error_t je;
            json_t *j = json_loadb(t.f[i].resp.body.p, t.f[i].resp.body.len, 0, &je);
            if (j)
                tally_add(&tl, s, j);
            json_decref(j);
        }
        sl_tfan_free(&t);
    }
    if (!err.msg[0] && s->bck[0] && !s->cached)
        count_remote(s, &rc, &err);
    pthread_mutex_lock(&mu);
    if (err.msg[0]) {
        snprintf(s->err, sizeof(s->err), "%.590s", err.msg);
        s->code = err.code ? err.code : SL_EINTERNAL;
    } else {
        s->result = json_array();
        if (tl.n)
            qsort(tl.v, tl.n, sizeof(*tl.v), bcount_cmp);
        for (size_t i = 0; i < tl.n; i++)
            json_array_append_new(s->result, result_json(tl.v[i].name, s->bck[0] ? s->prov : "ais", &tl.v[i].c,
                                                          s->bck[0] ? &rc : NULL));
    }
    s->done = true;
    bool kept = false;
    for (int i = 0; i < KEEP; i++)
        kept = kept || summs[i] == s;
    pthread_mutex_unlock(&mu);
    for (size_t i = 0; i < tl.n; i++)
        free(tl.v[i].name);
    free(tl.v);
    if (!kept) { /* forgotten while it ran: nobody can poll it */
        json_decref(s->result);
        free(s->prefix);
        free(s);
    }
    return NULL;
}

int sl_bsumm_start(const char *bck, const char *prov, const char *prefix, bool cached, char *id, size_t n,
                   struct sl_err *err)
{
    struct summ *s = sl_xcalloc(1, sizeof(*s));
    sl_job_id(s->id, sizeof(s->id), "");
    snprintf(s->bck, sizeof(s->bck), "%s", bck);
    snprintf(s->prov, sizeof(s->prov), "%s", prov && *prov ? prov : "ais");
    s->cached = cached;
    s->prefix = sl_xstrdup(prefix ? prefix : "");
    pthread_mutex_lock(&mu);
    struct summ *old = summs[next_slot];
    summs[next_slot] = s;
    next_slot = (next_slot + 1) % KEEP;
    /* the oldest is forgotten; one still running frees itself when it ends */
    bool free_old = old && old->done;
    pthread_mutex_unlock(&mu);
    if (free_old) {
        json_decref(old->result);
        free(old->prefix);
        free(old);
    }
    pthread_t t;
    if (pthread_create(&t, NULL, run, s) != 0)
        return sl_errf(err, SL_EINTERNAL, "summary: cannot start a thread");
    pthread_detach(t);
    snprintf(id, n, "%s", s->id);
    return 0;
}

int sl_bsumm_poll(const char *id, json_t **result, struct sl_err *err)
{
    *result = NULL;
    int rc = -1;
    pthread_mutex_lock(&mu);
    for (int i = 0; i < KEEP; i++) {
        struct summ *s = summs[i];
        if (!s || strcmp(s->id, id))
            continue;
        if (!s->done) {
            rc = 0;
        } else if (s->err[0]) {
            sl_errf(err, s->code, "%s", s->err);
            rc = -1;
        } else {
            *result = json_incref(s->result);
            rc = 1;
        }
        pthread_mutex_unlock(&mu);
        return rc;
    }
    pthread_mutex_unlock(&mu);
    return sl_errf(err, SL_ENOENT, "summary \"%s\" not found (finished long ago, or started on another gateway)",
                   id);
}
