/* SPDX-License-Identifier: MIT
 * lrit.c: list/range jobs on a bucket (spec native-gaps.md §3):
 *
 *   DELETE /v1/buckets/B {"action": "delete-listrange", "value": {"objnames": [...] | "template": "...",
 *                          "coer", "num-workers", "non-recurs"}}      -> job id (text)
 *   DELETE /v1/buckets/B {"action": "evict-listrange", ...}           -> job id; the copies here go, the
 *                                                                        remote keeps its objects
 *   POST   /v1/buckets/B {"action": "prefetch-listrange", ...}        -> job id; each object not held is
 *                                                                        fetched from the remote
 * (evict and prefetch: on buckets with a remote behind them only, else 400;
 * prefetch of a prefix or the whole bucket lists the remote)
 *
 * The gateway checks the message and hands the same job to every target
 * (POST /v1/internal/lrit/start); each deletes its own share (the HRW owner
 * of each name), so the work is spread and nothing crosses the network but
 * the message. Neither names nor template: the whole bucket. A template
 * without a range is a prefix. The job (kind delete-listrange) is followed
 * with GET /v1/cluster?what=status {"ID": id}, as AIStore's.
 */
#include "lrit.h"
#include "backend.h"
#include "cluster.h"
#include "ec.h"
#include "jsonx.h"
#include "log.h"
#include "lso.h"
#include "node.h"
#include "s3.h"
#include "store.h"
#include "template.h"
#include "xact.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_WORKERS 16
#define MAX_MISSING 10

enum { LR_DELETE, LR_EVICT, LR_PREFETCH };
static const char *const lr_kinds[] = { "delete-listrange", "evict-listrange", "prefetch-listrange" };

/* the checked message */
struct lr {
    int kind;                   /* LR_* */
    char id[40];
    char bck[SL_MAX_BCKNAME + 1];
    char prov[8];                   /* "ais", "aws" */
    json_t *names;              /* objnames, or NULL */
    char *tmpl;                 /* template, or NULL (with names NULL too: the whole bucket) */
    bool coer, non_recurs;
    bool latest;                /* prefetch: held copies are checked against the remote's version */
    bool add_first;             /* prefetch of a remote bucket not in the BMD yet: add it at the start */
    int workers;
    /* prefetch: an object of blob_threshold bytes or more (0: none) is fetched as a blob download, in
     * ranges of blob_chunk (0: backend.blob_chunk), blob_workers at a time (0: backend.blob_workers);
     * a smaller one in one stream */
    int64_t blob_threshold, blob_chunk;
    int blob_workers;
};

static void lr_free(struct lr *l)
{
    json_decref(l->names);
    free(l->tmpl);
    free(l);
}

static int lr_parse(const json_t *v, struct lr *l, struct sl_err *err)
{
    const char *what = lr_kinds[l->kind];
    if (v && !json_is_object(v) && !json_is_null(v))
        return sl_errf(err, SL_EINVAL, "%s: \"value\" must be an object {\"objnames\": [...]} or "
                       "{\"template\": \"obj-{000..099}\"} (neither: the whole bucket)", what);
    static const char *const known[] = { "objnames", "template", "coer", "num-workers", "non-recurs",
                                         "latest-ver", "blob-threshold", "blob-chunk-size", "blob-num-workers" };
    const char *k = sl_json_unknown_key_exact(v, known, SL_ARRAY_SIZE(known));
    if (k || (l->kind != LR_PREFETCH && (json_object_get(v, "blob-threshold") || json_object_get(v, "blob-chunk-size") ||
                                         json_object_get(v, "blob-num-workers"))))
        return sl_errf(err, SL_EINVAL, "%s: unknown field \"%s\" (valid: objnames, template, coer, "
                       "num-workers, non-recurs%s)", what, k ? k : "blob-*", l->kind == LR_PREFETCH ?
                       ", latest-ver, blob-threshold, blob-chunk-size, blob-num-workers" : "");
    json_t *bt = json_object_get(v, "blob-threshold"), *bc = json_object_get(v, "blob-chunk-size"),
           *bw = json_object_get(v, "blob-num-workers");
    if ((bt && !json_is_null(bt) && (!json_is_integer(bt) || json_integer_value(bt) < 0)) ||
        (bc && !json_is_null(bc) && (!json_is_integer(bc) || (json_integer_value(bc) &&
                                                             (json_integer_value(bc) < SL_BLOB_CHUNK_MIN ||
                                                              json_integer_value(bc) > SL_BLOB_CHUNK_MAX)))) ||
        (bw && !json_is_null(bw) && (!json_is_integer(bw) || json_integer_value(bw) < 0 ||
                                     json_integer_value(bw) > SL_BLOB_WORKERS_MAX)))
        return sl_errf(err, SL_EINVAL, "%s: \"blob-threshold\" is a number of bytes (0: no blob downloads), "
                       "\"blob-chunk-size\" 0 or 64KiB to 2GiB in bytes, \"blob-num-workers\" 0 to %d", what,
                       SL_BLOB_WORKERS_MAX);
    l->blob_threshold = bt ? json_integer_value(bt) : 0;
    l->blob_chunk = bc ? json_integer_value(bc) : 0;
    l->blob_workers = bw ? (int)json_integer_value(bw) : 0;
    json_t *lv = json_object_get(v, "latest-ver");
    if (lv && !json_is_null(lv) && (!json_is_boolean(lv) || (json_is_true(lv) && l->kind != LR_PREFETCH)))
        return sl_errf(err, SL_EINVAL, "%s: \"latest-ver\" is %s", what,
                       json_is_boolean(lv) ? "for prefetch-listrange only" : "true or false");
    l->latest = json_is_true(lv);
    json_t *names = json_object_get(v, "objnames"), *t = json_object_get(v, "template");
    if (names && !json_is_null(names)) {
        if (!json_is_array(names))
            return sl_errf(err, SL_EINVAL, "%s: \"objnames\" must be a list of object names", what);
        size_t i;
        json_t *x;
        json_array_foreach(names, i, x) {
            if (!json_is_string(x) || sl_objname_check(json_string_value(x), json_string_length(x), err) < 0) {
                if (!err->msg[0])
                    sl_errf(err, SL_EINVAL, "%s: objnames[%zu] is not a string", what, i);
                return -1;
            }
        }
        if (json_array_size(names))
            l->names = json_incref(names);
    }
    if (t && !json_is_null(t)) {
        if (!json_is_string(t))
            return sl_errf(err, SL_EINVAL, "%s: \"template\" must be a string", what);
        if (l->names && json_string_length(t))
            return sl_errf(err, SL_EINVAL, "%s: give \"objnames\" or \"template\", not both", what);
        if (json_string_length(t)) {
            struct sl_tmpl *tp;
            if (sl_tmpl_parse(json_string_value(t), &tp, err) < 0) {
                sl_err_wrap(err, "template");
                return -1;
            }
            sl_tmpl_free(tp);
            l->tmpl = sl_xstrdup(json_string_value(t));
        }
    }
    json_t *c = json_object_get(v, "coer"), *nr = json_object_get(v, "non-recurs"), *w = json_object_get(v,
                                                                                                       "num-workers");
    if ((c && !json_is_boolean(c) && !json_is_null(c)) || (nr && !json_is_boolean(nr) && !json_is_null(nr)))
        return sl_errf(err, SL_EINVAL, "%s: \"coer\" and \"non-recurs\" must be true or false", what);
    if (w && !json_is_null(w) && (!json_is_integer(w) || json_integer_value(w) < 0 ||
                                  json_integer_value(w) > MAX_WORKERS))
        return sl_errf(err, SL_EINVAL, "%s: \"num-workers\" must be 0 (default) to %d", what, MAX_WORKERS);
    l->coer = json_is_true(c);
    l->non_recurs = json_is_true(nr);
    l->workers = w && json_integer_value(w) > 0 ? (int)json_integer_value(w) : 2;
    return 0;
}

static json_t *lr_json(const struct lr *l)
{
    json_t *o = json_pack("{s:b,s:b,s:i,s:b}", "coer", l->coer, "non-recurs", l->non_recurs, "num-workers",
                          l->workers, "latest-ver", l->latest);
    if (l->blob_threshold) {
        json_object_set_new(o, "blob-threshold", json_integer(l->blob_threshold));
        json_object_set_new(o, "blob-chunk-size", json_integer(l->blob_chunk));
        json_object_set_new(o, "blob-num-workers", json_integer(l->blob_workers));
    }
    if (l->names)
        json_object_set(o, "objnames", l->names);
    if (l->tmpl)
        json_object_set_new(o, "template", json_string(l->tmpl));
    return o;
}

/* ------------------------------------------------------------------ */
/* a target's share                                                   */
/* ------------------------------------------------------------------ */

struct run {
    struct lr *l;
    struct sl_bck b;
    struct sl_job *job;
    char **names;               /* this target's share */
    size_t n, cap, next;
    pthread_mutex_t mu;
    json_t *missing;
    uint64_t nmissing;
    bool range;                 /* the names are a template's range: one the bucket lacks is skipped */
    uint64_t nskipped;          /* (of them, as AIStore's) */
    uint64_t nblob;             /* prefetch: objects fetched as blob downloads (blob_threshold) */
    char err[512];
};

static void add_name(struct run *u, const char *s, size_t len)
{
    if (u->n == u->cap) {
        u->cap = u->cap ? u->cap * 2 : 1024;
        u->names = sl_xrealloc(u->names, u->cap * sizeof(char *));
    }
    u->names[u->n++] = sl_xstrndup(s, len);
}

struct walk {
    struct run *u;
    size_t plen;
};

static int walk_ent(void *arg, const struct sl_lsent *e)
{
    struct walk *w = arg;
    if (w->u->l->non_recurs && memchr(e->name + w->plen, '/', e->nlen - w->plen))
        return 0;
    add_name(w->u, e->name, e->nlen);
    return sl_job_aborting(w->u->job) ? 1 : 0;
}

struct rwalk {
    struct run *u;
    struct sl_smap *sm;
    size_t plen;
};

static int remote_ent(void *ctx, const char *name, size_t len, const struct sl_backend_obj *o)
{
    (void)o;
    struct rwalk *w = ctx;
    if (w->u->l->non_recurs && len > w->plen && memchr(name + w->plen, '/', len - w->plen))
        return 0;
    if (sl_obj_owned_here(w->sm, &w->u->b, name, len))
        add_name(w->u, name, len);
    return 0;
}

static int local_page(const struct sl_bck *b, const struct sl_lsomsg *m, struct sl_lspage *out, struct sl_err *err)
{
    return sl_lso_local_page(b, m, G.id, out, err);
}

/* the names this target deletes */
static int share(struct run *u, struct sl_err *err)
{
    struct sl_smap *sm = sl_smap_get();
    int rc = 0;
    if (u->l->names) {
        size_t i;
        json_t *x;
        json_array_foreach(u->l->names, i, x)
            if (sl_obj_owned_here(sm, &u->b, json_string_value(x), json_string_length(x)))
                add_name(u, json_string_value(x), json_string_length(x));
    } else {
        struct sl_tmpl *t = NULL;
        if (u->l->tmpl && sl_tmpl_parse(u->l->tmpl, &t, err) < 0) {
            sl_smap_put(sm);
            return -1;
        }
        if (t && sl_tmpl_is_range(t)) {
            struct sl_buf nb;
            sl_buf_init(&nb);
            u->range = true;
            for (uint64_t i = 0; i < sl_tmpl_count(t); i++) {
                sl_tmpl_at(t, i, &nb);
                if (sl_obj_owned_here(sm, &u->b, nb.p, nb.len))
                    add_name(u, nb.p, nb.len);
            }
            sl_buf_free(&nb);
        } else if (u->l->kind == LR_PREFETCH) {
            /* a prefix, or the whole bucket: what the remote holds, this target's share of it */
            const char *prefix = t ? sl_tmpl_prefix(t) : "";
            struct rwalk rw = { u, sm, strlen(prefix) };
            char tok[4096] = "", next[4096];
            for (int pg = 0; pg < 1000000 && !sl_job_aborting(u->job); pg++) {
                if (sl_backend_list_page(&u->b, prefix, tok, 1000, remote_ent, &rw, next, sizeof(next), err) < 0) {
                    rc = -1;
                    break;
                }
                if (!next[0])
                    break;
                snprintf(tok, sizeof(tok), "%s", next);
            }
        } else {
            /* a prefix, or the whole bucket: what this target holds */
            const char *prefix = t ? sl_tmpl_prefix(t) : "";
            struct sl_lsomsg lm;
            sl_lsomsg_names(&lm, prefix, false, 0, 10000);
            struct walk w = { u, strlen(prefix) };
            rc = sl_lso_walk(local_page, &u->b, &lm, u->job, walk_ent, &w, err);
            sl_lsomsg_free(&lm);
        }
        sl_tmpl_free(t);
    }
    sl_smap_put(sm);
    return rc;
}

/* prefetch: name fetched, as a blob download when it is blob_threshold bytes or more */
static int prefetch_one(struct run *u, const char *nm, size_t nl, struct sl_err *err)
{
    if (!u->l->blob_threshold)
        return sl_backend_fetch(&u->b, nm, nl, err);
    struct sl_backend_obj o;
    if (sl_backend_head(&u->b, nm, nl, &o, err) < 0)
        return -1;
    struct sl_fetch_opts fo = { .workers = 1 };
    if (o.size >= u->l->blob_threshold) {
        fo.chunk = u->l->blob_chunk;
        fo.workers = u->l->blob_workers ? u->l->blob_workers : (sl_conf->blob_workers > 1 ? sl_conf->blob_workers : 4);
        pthread_mutex_lock(&u->mu);
        u->nblob++;
        pthread_mutex_unlock(&u->mu);
    }
    return sl_backend_fetch_opts(&u->b, nm, nl, &fo, err);
}

static void *worker(void *arg)
{
    struct run *u = arg;
    for (;;) {
        pthread_mutex_lock(&u->mu);
        size_t i = u->err[0] || sl_job_aborting(u->job) ? u->n : u->next++;
        pthread_mutex_unlock(&u->mu);
        if (i >= u->n)
            break;
        struct sl_err err = { 0 };
        const char *nm = u->names[i];
        size_t nl = strlen(nm);
        int rc;
        bool dm;
        char vid[24];
        if (u->l->kind == LR_PREFETCH && u->l->latest) { /* held or not: the remote's version */
            if (sl_backend_refresh(&u->b, nm, nl, &err) == 0) {
                sl_job_add(&u->job->loc_objs, 1);
                continue;
            }
        } else if (u->l->kind == LR_PREFETCH) { /* fetched unless held already (or being fetched: then waits) */
            struct sl_objmd md;
            rc = sl_obj_stat(&u->b, nm, nl, &md, NULL, &err);
            if (rc == 1)
                sl_objmd_free(&md);
            else if (rc == 0 && (rc = prefetch_one(u, nm, nl, &err)) == 0)
                rc = 1;
            if (rc == 1) {
                sl_job_add(&u->job->loc_objs, 1);
                continue;
            }
        } else if (s3_lock_check_name(&u->b, nm, nl, false, &err) < 0) { /* locked: stays (s3lock.c) */
            pthread_mutex_lock(&u->mu);
            u->nskipped++;
            pthread_mutex_unlock(&u->mu);
            sl_logi("%s %s: %s skipped: %s", lr_kinds[u->l->kind], u->l->id, nm, err.msg);
            continue;
        } else if (u->l->kind == LR_EVICT) { /* the remote keeps it; not held here is fine */
            sl_backend_wait_fetch(&u->b, nm, nl);
            if (sl_obj_delete(&u->b, nm, nl, &err) == 0 || err.code == SL_ENOOBJ) {
                sl_job_add(&u->job->loc_objs, 1);
                continue;
            }
        } else if (sl_bck_remote(&u->b)) { /* delete: at the remote (a fetch in flight ends first), then here */
            sl_backend_wait_fetch(&u->b, nm, nl);
            if (sl_backend_delete(&u->b, nm, nl, &err) == 0 &&
                (sl_obj_delete(&u->b, nm, nl, &err) == 0 || err.code == SL_ENOOBJ)) {
                sl_job_add(&u->job->loc_objs, 1);
                continue;
            }
        } else if (sl_obj_delete_cur(&u->b, nm, nl, -1, &dm, vid, &err) == 0) { /* (versioned: a marker) */
            sl_ec_after_delete(&u->b, nm, nl); /* erasure coded: its slices everywhere */
            sl_job_add(&u->job->loc_objs, 1);
            continue;
        }
        pthread_mutex_lock(&u->mu);
        if (err.code == SL_ENOOBJ && u->range) { /* a range may name more than the bucket has */
            u->nskipped++;
            pthread_mutex_unlock(&u->mu);
            sl_logd("%s %s: %s skipped: not in %s://%s", lr_kinds[u->l->kind], u->l->id, nm,
                    sl_provider_scheme(u->b.provider), u->b.name);
            continue;
        }
        if (err.code == SL_ENOOBJ) {
            u->nmissing++;
            if (json_array_size(u->missing) < MAX_MISSING)
                json_array_append_new(u->missing, json_string(nm));
        } else if (!u->err[0]) {
            snprintf(u->err, sizeof(u->err), "%.500s", err.msg);
        }
        pthread_mutex_unlock(&u->mu);
        sl_job_add(&u->job->err_objs, 1);
    }
    return NULL;
}

static void *run_thread(void *arg)
{
    struct run *u = arg;
    struct sl_err err = { 0 };
    if (share(u, &err) < 0) {
        snprintf(u->err, sizeof(u->err), "%.500s", err.msg);
    } else {
        pthread_t th[MAX_WORKERS];
        int n = 0;
        for (int i = 0; i < u->l->workers && (size_t)i < u->n; i++)
            if (pthread_create(&th[n], NULL, worker, u) == 0)
                n++;
        if (u->n && !n)
            worker(u);
        for (int i = 0; i < n; i++)
            pthread_join(th[i], NULL);
    }
    if (!u->err[0] && u->nmissing && !u->l->coer) {
        char *m = sl_json_dump(u->missing, 0, NULL);
        snprintf(u->err, sizeof(u->err), "%llu of the named objects did not exist on t[%s] (%.300s%s); set "
                 "\"coer\" to skip them", (unsigned long long)u->nmissing, G.id, m,
                 u->nmissing > MAX_MISSING ? ", ..." : "");
        free(m);
    }
    sl_logi("%s %s: %llu object(s) of %s done here, %llu name(s) of the range not in the bucket skipped%s%s",
            lr_kinds[u->l->kind], u->l->id, (unsigned long long)u->job->loc_objs, u->b.name,
            (unsigned long long)u->nskipped, u->err[0] ? ": " : "", u->err);
    if (u->range || u->l->blob_threshold) {
        json_t *ext = json_object();
        if (u->range)
            json_object_set_new(ext, "skipped_missing", json_integer((json_int_t)u->nskipped));
        if (u->l->blob_threshold)
            json_object_set_new(ext, "blob_downloads", json_integer((json_int_t)u->nblob));
        sl_job_set_ext(u->job, ext);
    }
    if (u->err[0])
        sl_job_fail(u->job, u->err);
    else
        sl_job_finish(u->job, sl_job_aborting(u->job) ? "aborted" : NULL);
    sl_job_put(u->job);
    for (size_t i = 0; i < u->n; i++)
        free(u->names[i]);
    free(u->names);
    json_decref(u->missing);
    sl_bck_release(&u->b);
    pthread_mutex_destroy(&u->mu);
    lr_free(u->l);
    free(u);
    return NULL;
}

/* start this target's share of l (takes l) */
static int start_here(struct lr *l, struct sl_err *err)
{
    struct run *u = sl_xcalloc(1, sizeof(*u));
    u->l = l;
    if (sl_bck_resolve(l->bck, l->prov[0] ? l->prov : "ais", NULL, &u->b, err) < 0) {
        lr_free(l);
        free(u);
        return -1;
    }
    pthread_mutex_init(&u->mu, NULL);
    u->missing = json_array();
    u->job = sl_job_start(lr_kinds[l->kind], l->id, l->bck, "");
    sl_run_detached(run_thread, u);
    return 0;
}

/* POST /v1/internal/lrit/start {lr} */
static void internal_start(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    struct lr *l = sl_xcalloc(1, sizeof(*l));
    const char *kind = sl_json_str(j, "kind", "delete-listrange"); /* (before the message: it depends on it) */
    for (int k = 0; k < (int)SL_ARRAY_SIZE(lr_kinds); k++)
        if (!strcmp(kind, lr_kinds[k]))
            l->kind = k;
    if (!json_is_object(j) || lr_parse(j ? json_object_get(j, "msg") : NULL, l, &err) < 0) {
        if (!err.msg[0])
            sl_errf(&err, SL_EINVAL, "lrit start: bad body");
        lr_free(l);
        json_decref(j);
        sl_resp_err(r, &err);
        return;
    }
    snprintf(l->id, sizeof(l->id), "%s", sl_json_str(j, "id", ""));
    snprintf(l->bck, sizeof(l->bck), "%s", sl_json_str(j, "bck", ""));
    snprintf(l->prov, sizeof(l->prov), "%s", sl_json_str(j, "provider", "ais"));
    json_decref(j);
    if (start_here(l, &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
}

static bool lrit_internal(struct sl_req *r)
{
    if (strcmp(r->path, "/v1/internal/lrit/start"))
        return false;
    sl_req_buffer_body(r, 64 * SL_MIB, internal_start);
    return true;
}

/* ------------------------------------------------------------------ */
/* the gateway                                                        */
/* ------------------------------------------------------------------ */

static void start_run(struct sl_req *r, void *arg)
{
    struct lr *l = arg;
    struct sl_err err = { 0 };
    if (l->add_first && sl_bck_add_remote(l->prov, l->bck, &err) < 0) {
        lr_free(l);
        sl_resp_err(r, &err);
        return;
    }
    if (G.role == SL_ROLE_STANDALONE) {
        char id[40];
        snprintf(id, sizeof(id), "%s", l->id);
        if (start_here(l, &err) < 0)
            sl_resp_err(r, &err);
        else
            sl_resp_text(r, 200, id);
        return;
    }
    json_t *body = json_pack("{s:s,s:s,s:s,s:s,s:o}", "id", l->id, "bck", l->bck, "provider", l->prov, "kind",
                             lr_kinds[l->kind], "msg", lr_json(l));
    if (sl_tfan_start_job(0, "/v1/internal/lrit/start", body, lr_kinds[l->kind], l->id, &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_text(r, 200, l->id);
    json_decref(body);
    lr_free(l);
}

/* Check m and start the job of kind on bucket (false: not this module's action). */
static bool start_kind(struct sl_req *r, const char *bucket, struct sl_actmsg *m, int kind)
{
    struct sl_err err = { 0 };
    struct lr *l = sl_xcalloc(1, sizeof(*l));
    l->kind = kind;
    struct sl_bck b;
    if (lr_parse(m->value, l, &err) < 0) {
        lr_free(l);
        sl_resp_err(r, &err);
        return true;
    }
    const char *pn = sl_provider_norm(sl_req_query(r, "provider"));
    if (sl_bck_resolve(bucket, sl_req_query(r, "provider"), NULL, &b, &err) < 0) {
        if (kind == LR_PREFETCH && err.code == SL_ENOBCK && pn && strcmp(pn, "ais") && sl_backend_loaded(pn)) {
            /* prefetch of a remote bucket the cluster has not seen: added first, off the HTTP thread */
            snprintf(l->bck, sizeof(l->bck), "%s", bucket);
            snprintf(l->prov, sizeof(l->prov), "%s", pn);
            l->add_first = true;
            sl_job_id(l->id, sizeof(l->id), "");
            sl_req_offload(r, start_run, (void (*)(void *))lr_free, l);
            return true;
        }
        lr_free(l);
        sl_resp_err(r, &err);
        return true;
    }
    bool remote = sl_bck_remote(&b);
    snprintf(l->bck, sizeof(l->bck), "%s", b.name);
    snprintf(l->prov, sizeof(l->prov), "%s", b.provider);
    sl_bck_release(&b);
    if (kind != LR_DELETE && !remote) {
        lr_free(l);
        sl_resp_errf(r, SL_EINVAL, "%s applies to buckets with a remote bucket behind them (backend_bck) and "
                     "ais://%s has none (%s); nothing was done", lr_kinds[kind], bucket,
                     kind == LR_EVICT ? "to remove objects, use delete-listrange" : "its objects are here already");
        return true;
    }
    sl_job_id(l->id, sizeof(l->id), "");
    sl_req_offload(r, start_run, (void (*)(void *))lr_free, l);
    return true;
}

static bool lrit_bucket_delete(struct sl_req *r, const char *bucket, struct sl_actmsg *m)
{
    if (!strcmp(m->action, "evict-listrange"))
        return start_kind(r, bucket, m, LR_EVICT);
    if (!strcmp(m->action, "delete-listrange"))
        return start_kind(r, bucket, m, LR_DELETE);
    if (!strcmp(m->action, "evict-remote-bck") && sl_req_query(r, "keep_bck_md")) {
        /* (the gateway hands it here only with keep_bck_md true, in Go's spellings: it checked the bucket and
         * the flag) AIStore's keep_bck_md: the bucket stays in the BMD with its props; every copy of it goes,
         * as an evict-listrange job of the whole bucket */
        m->value = NULL; /* (borrowed from m->root) */
        return start_kind(r, bucket, m, LR_EVICT);
    }
    return false;
}

static bool lrit_bucket_post(struct sl_req *r, const char *bucket, struct sl_actmsg *m)
{
    if (!strcmp(m->action, "prefetch-listrange"))
        return start_kind(r, bucket, m, LR_PREFETCH);
    return false;
}

const struct sl_module sl_lrit_module = {
    .name = "list-range",
    .internal = lrit_internal,
    .bucket_delete = lrit_bucket_delete,
    .delete_actions = ", delete-listrange, evict-listrange",
    .bucket_post = lrit_bucket_post,
    .post_actions = ", prefetch-listrange",
};
