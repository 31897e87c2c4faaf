/* SPDX-License-Identifier: MIT
 * reb.c: see reb.h.
 *
 * A rebalance walks every bucket on every mountpath in name order, in
 * batches (one short LMDB read transaction per batch), and hands objects
 * whose owner changed to a few sender threads. A sender moves small objects
 * (up to SL_PUTB_OBJ_MAX) many in one request to their new owner (putb.h),
 * which makes them durable with a few syncs for all of them, and PUTs a
 * large one on its own (redirect marks + Ais-Rebalance header). Checksum,
 * version, atime and custom metadata travel along, the receiver verifies
 * the checksum, and the sender deletes the local copy once the owner
 * acknowledged it. The receiver keeps what it already has: an object PUT
 * by a client to the new owner is at least as new as the copy being moved.
 */
#include "reb.h"
#include "cksum.h"
#include "cluster.h"
#include "jsonx.h"
#include "ec.h"
#include "log.h"
#include "md.h"
#include "node.h"
#include "peer.h"
#include "putb.h"
#include "stats.h"
#include "store.h"
#include "xact.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define BATCH 512                /* names per LMDB read transaction of the walk */
#define ITEMS (4 * BATCH)        /* objects to move handed to the senders at once */
#define SENDERS 4
#define GFN_WINDOW_NS (300LL * 1000000000LL)
#define DELQ_MAX (2 * ITEMS)     /* objects queued for deletion before the senders wait */

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct sl_job *cur_job;
static pthread_t cur_thr;
static bool thr_live;
static struct sl_smap *prev_smap;
static int64_t smap_changed_mono;

struct item {
    struct sl_bck b;
    char *name;
    size_t nlen;
    uint64_t size;           /* at the walk */
    const struct sl_snode *owner;
};

/* What one sender takes at a time: a large object, or up to SL_PUTB_OBJS
 * small ones for one owner (one request, sl_putb). */
struct unit {
    int first, n;
};

/* Local copies to delete: the objects of one batch the owner took, each
 * only as sent (mtimes). */
struct dels {
    struct dels *next;
    struct sl_bck b;
    char **names;
    size_t *nlens;
    int64_t *mtimes;
    int n;
};

/* The senders queue what the owners took and go back to sending; one
 * thread deletes it, a batch per metadata transaction (per mountpath and
 * 32 objects), so that a sender's unlinks never hold up its next request.
 * Objects stay in the queue only while the owner has them durably: a crash
 * leaves a copy on both (as a crash between the answer and the delete
 * always did), which the next rebalance moves (the owner keeps its own)
 * and deletes. */
struct delq {
    pthread_mutex_t mu;
    pthread_cond_t cv;       /* queued, drained, or stop */
    struct dels *head, *tail;
    int nobj;                /* queued or being deleted */
    bool stop;
    bool live;               /* the thread runs (else the senders delete) */
    pthread_t thr;
};

struct batch {
    struct item *items;
    int n;
    struct unit *units;
    int nunits;
    int next;
    pthread_mutex_t mu;
    struct sl_job *job;
    struct sl_smap *smap;
    struct delq dq;
    char first_err[1024];
};

static void not_moved(struct batch *bt, const struct item *it, const char *why)
{
    sl_job_add(&bt->job->err_objs, 1);
    pthread_mutex_lock(&bt->mu);
    if (!bt->first_err[0])
        snprintf(bt->first_err, sizeof(bt->first_err), "%s/%.*s -> t[%s]: %s", it->b.name,
                 sl_utf8_cut(it->name, it->nlen, 200), it->name, it->owner->id, why[0] ? why : "failed");
    pthread_mutex_unlock(&bt->mu);
}

/* The owner acknowledged the object: count it. */
static void moved(struct batch *bt, uint64_t size)
{
    sl_job_add(&bt->job->out_objs, 1);
    sl_job_add(&bt->job->out_bytes, size);
    sl_stats_add("rebalance_out_objs", 1);
}

/* May the local copy of a moved object go? Not when the map changed
 * meanwhile and makes this target the owner again (the object may have
 * come back by a newer rebalance while this one sent it: deleting would
 * lose it); a copy kept on both is moved or dropped by the next run */
static bool mine_again(struct batch *bt, const struct item *it)
{
    struct sl_buf un;
    sl_buf_init(&un);
    sl_obj_uname(&un, it->b.provider, it->b.name, it->name, it->nlen);
    struct sl_smap *cur = sl_smap_get();
    const struct sl_snode *own = sl_smap_hrw_target(cur, un.p, un.len);
    bool mine = own && !strcmp(own->id, G.id);
    sl_smap_put(cur);
    sl_buf_free(&un);
    if (mine)
        sl_logi("rebalance %s: %s/%.*s belongs here again (the cluster map changed): kept", bt->job->id,
                it->b.name, (int)SL_MIN(it->nlen, 200), it->name);
    return mine;
}

static void not_deleted(struct batch *bt, const struct item *it, const char *why)
{
    sl_logw("rebalance %s: moved %s/%.*s but could not delete the local copy: %s", bt->job->id, it->b.name,
            (int)SL_MIN(it->nlen, 200), it->name, why);
}

static void send_one(struct batch *bt, struct item *it)
{
    struct sl_err err = { 0 };
    int fd;
    struct sl_objmd md;
    if (sl_obj_open(&it->b, it->name, it->nlen, &fd, &md, NULL, &err) < 0)
        return; /* gone meanwhile (deleted, or fetched by the owner): nothing to move */
    struct sl_buf url;
    sl_buf_init(&url);
    sl_peer_obj_url(&url, it->owner->data_url, it->b.name, it->b.provider, it->name, it->nlen);
    sl_peer_add_redirect_marks(&url, G.id);
    struct sl_peer_hdr h[8 + SL_CUSTOM_MD_MAX_N];
    int nh = 0;
    char ver[32], at[32], nch[16], chm[32];
    h[nh++] = (struct sl_peer_hdr){ "Ais-Rebalance", bt->job->id };
    if (md.cksum_type != SL_CK_NONE && md.cksum[0]) {
        h[nh++] = (struct sl_peer_hdr){ "Ais-Checksum-Type", sl_cksum_name(md.cksum_type) };
        h[nh++] = (struct sl_peer_hdr){ "Ais-Checksum-Value", md.cksum };
    }
    snprintf(ver, sizeof(ver), "%llu", (unsigned long long)md.version);
    snprintf(at, sizeof(at), "%lld", (long long)md.atime);
    h[nh++] = (struct sl_peer_hdr){ "Ais-Version", ver };
    h[nh++] = (struct sl_peer_hdr){ "Ais-Atime", at };
    if (md.nchunks) {
        snprintf(nch, sizeof(nch), "%u", md.nchunks);
        snprintf(chm, sizeof(chm), "%llu", (unsigned long long)md.chunk_max);
        h[nh++] = (struct sl_peer_hdr){ "Ais-Chunks-Count", nch };
        h[nh++] = (struct sl_peer_hdr){ "Ais-Chunks-Max-Chunk-Size", chm };
    }
    char *kvs[SL_CUSTOM_MD_MAX_N];
    int nkv = 0;
    for (int i = 0; i < md.ncustom && nkv < SL_CUSTOM_MD_MAX_N; i++) {
        kvs[nkv] = sl_xasprintf("%s=%s", md.custom[i].k, md.custom[i].v);
        h[nh++] = (struct sl_peer_hdr){ "Ais-Custom-Md", kvs[nkv] };
        nkv++;
    }
    struct sl_peer_resp r;
    int64_t tmo = sl_conf->send_file_time_ns / 1000000;
    int rc = sl_peer_put_fd(url.p, h, nh, fd, md.size, tmo, &r);
    close(fd);
    if (rc == 0 && r.status == 200) {
        /* only the version sent: one written since stays */
        moved(bt, md.size);
        if (!mine_again(bt, it) && sl_obj_delete_if(&it->b, it->name, it->nlen, md.mtime, &err) < 0)
            not_deleted(bt, it, err.msg);
    } else {
        not_moved(bt, it, r.err);
    }
    for (int i = 0; i < nkv; i++)
        free(kvs[i]);
    sl_peer_resp_free(&r);
    sl_buf_free(&url);
    sl_objmd_free(&md);
}

static void dels_free(struct dels *d)
{
    for (int i = 0; i < d->n; i++)
        free(d->names[i]);
    free(d->names);
    free(d->nlens);
    free(d->mtimes);
    sl_bck_release(&d->b);
    free(d);
}

/* Delete d's objects; the map may have changed since the owner took them:
 * what belongs here again stays (mine_again) */
static void dels_run(struct batch *bt, struct dels *d)
{
    int k = 0;
    for (int j = 0; j < d->n; j++) {
        struct item it = { .b = d->b, .name = d->names[j], .nlen = d->nlens[j] };
        if (!mine_again(bt, &it)) {
            char *t = d->names[k];
            d->names[k] = d->names[j];
            d->names[j] = t;
            d->nlens[k] = d->nlens[j];
            d->mtimes[k++] = d->mtimes[j];
        }
    }
    sl_fault("reb-before-delete");
    int *rc = sl_xcalloc((size_t)d->n, sizeof(int));
    struct sl_err *errs = sl_xcalloc((size_t)d->n, sizeof(*errs));
    sl_obj_delete_batch(&d->b, d->names, d->nlens, d->mtimes, k, rc, errs);
    for (int j = 0; j < k; j++)
        if (rc[j] < 0) {
            struct item it = { .b = d->b, .name = d->names[j], .nlen = d->nlens[j] };
            not_deleted(bt, &it, errs[j].msg);
        }
    free(errs);
    free(rc);
}

static void *deleter(void *arg)
{
    struct batch *bt = arg;
    struct delq *q = &bt->dq;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (!q->head && !q->stop)
            pthread_cond_wait(&q->cv, &q->mu);
        struct dels *d = q->head;
        if (!d)
            break;
        q->head = d->next;
        if (!q->head)
            q->tail = NULL;
        pthread_mutex_unlock(&q->mu);
        dels_run(bt, d);
        pthread_mutex_lock(&q->mu);
        q->nobj -= d->n;
        pthread_cond_broadcast(&q->cv);
        dels_free(d);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/* Queue d; waits while the deleter is DELQ_MAX objects behind. */
static void delq_add(struct batch *bt, struct dels *d)
{
    struct delq *q = &bt->dq;
    if (!q->live) {
        dels_run(bt, d);
        dels_free(d);
        return;
    }
    pthread_mutex_lock(&q->mu);
    while (q->nobj >= DELQ_MAX)
        pthread_cond_wait(&q->cv, &q->mu);
    if (q->tail)
        q->tail->next = d;
    else
        q->head = d;
    q->tail = d;
    q->nobj += d->n;
    pthread_cond_broadcast(&q->cv);
    pthread_mutex_unlock(&q->mu);
}

/* Until everything queued is deleted (before a pass walks again: an object
 * still queued would be sent again). */
static void delq_drain(struct delq *q)
{
    pthread_mutex_lock(&q->mu);
    while (q->nobj)
        pthread_cond_wait(&q->cv, &q->mu);
    pthread_mutex_unlock(&q->mu);
}

static void delq_start(struct batch *bt)
{
    pthread_mutex_init(&bt->dq.mu, NULL);
    pthread_cond_init(&bt->dq.cv, NULL);
    bt->dq.live = pthread_create(&bt->dq.thr, NULL, deleter, bt) == 0;
}

static void delq_stop(struct batch *bt)
{
    pthread_mutex_lock(&bt->dq.mu);
    bt->dq.stop = true;
    pthread_cond_broadcast(&bt->dq.cv);
    pthread_mutex_unlock(&bt->dq.mu);
    if (bt->dq.live)
        pthread_join(bt->dq.thr, NULL);
    pthread_cond_destroy(&bt->dq.cv);
    pthread_mutex_destroy(&bt->dq.mu);
}

/* The answer to a batch: the objects the owner took are queued for
 * deletion here, each only as sent (mtime[j]): one written again since
 * stays. */
static void sent_many(struct batch *bt, struct item *its, const struct sl_putb *pb, const int *idx,
                      const uint64_t *size, const int64_t *mtime)
{
    struct sl_err *errs = sl_xcalloc((size_t)pb->n, sizeof(*errs));
    sl_putb_send(pb, its[0].owner->data_url, bt->job->id, errs, NULL);
    struct dels *d = sl_xcalloc(1, sizeof(*d));
    sl_bck_copy(&d->b, &its[0].b);
    d->names = sl_xcalloc((size_t)pb->n, sizeof(*d->names));
    d->nlens = sl_xcalloc((size_t)pb->n, sizeof(*d->nlens));
    d->mtimes = sl_xcalloc((size_t)pb->n, sizeof(*d->mtimes));
    for (int j = 0; j < pb->n; j++) {
        struct item *it = &its[idx[j]];
        if (errs[j].code) {
            not_moved(bt, it, errs[j].msg);
        } else {
            moved(bt, size[j]);
            d->names[d->n] = sl_xstrndup(it->name, it->nlen);
            d->nlens[d->n] = it->nlen;
            d->mtimes[d->n++] = mtime[j];
        }
    }
    if (d->n)
        delq_add(bt, d);
    else
        dels_free(d);
    free(errs);
}

/* Small objects for one owner, in one request. An object that grew past
 * SL_PUTB_OBJ_MAX since the walk goes on its own. */
static void send_many(struct batch *bt, struct item *its, int n)
{
    struct sl_putb pb;
    sl_putb_init(&pb, &its[0].b);
    int *idx = sl_xcalloc((size_t)n, sizeof(int));
    uint64_t *size = sl_xcalloc((size_t)n, sizeof(uint64_t));
    int64_t *mtime = sl_xcalloc((size_t)n, sizeof(int64_t));
    for (int i = 0; i < n; i++) {
        struct sl_err err = { 0 };
        int fd;
        struct sl_objmd md;
        if (sl_obj_open(&its[i].b, its[i].name, its[i].nlen, &fd, &md, NULL, &err) < 0)
            continue; /* gone meanwhile */
        if (md.size > SL_PUTB_OBJ_MAX)
            send_one(bt, &its[i]);
        else if (sl_putb_add(&pb, its[i].name, its[i].nlen, fd, &md, &err) < 0)
            not_moved(bt, &its[i], err.msg);
        else {
            size[pb.n - 1] = md.size;
            mtime[pb.n - 1] = md.mtime;
            idx[pb.n - 1] = i;
        }
        close(fd);
        sl_objmd_free(&md);
    }
    if (pb.n)
        sent_many(bt, its, &pb, idx, size, mtime);
    free(mtime);
    free(size);
    free(idx);
    sl_putb_free(&pb);
}

static void *sender(void *arg)
{
    struct batch *bt = arg;
    for (;;) {
        pthread_mutex_lock(&bt->mu);
        int i = bt->next < bt->nunits ? bt->next++ : -1;
        pthread_mutex_unlock(&bt->mu);
        if (i < 0 || sl_job_aborting(bt->job))
            break;
        struct unit *u = &bt->units[i];
        if (bt->items[u->first].size > SL_PUTB_OBJ_MAX)
            send_one(bt, &bt->items[u->first]);
        else
            send_many(bt, &bt->items[u->first], u->n);
    }
    return NULL;
}

/* small ones first, grouped by bucket and owner */
static int item_cmp(const void *a, const void *b)
{
    const struct item *x = a, *y = b;
    bool lx = x->size > SL_PUTB_OBJ_MAX, ly = y->size > SL_PUTB_OBJ_MAX;
    if (lx != ly)
        return lx - ly;
    if (x->b.bid != y->b.bid)
        return x->b.bid < y->b.bid ? -1 : 1;
    return x->owner < y->owner ? -1 : x->owner > y->owner;
}

static bool same_unit(const struct item *x, const struct item *y)
{
    return x->owner == y->owner && x->b.bid == y->b.bid && y->size <= SL_PUTB_OBJ_MAX;
}

/* Cut the items into units: small ones of one owner up to SL_PUTB_OBJS and
 * SL_PUTB_BYTES a unit, but no more than a fair share of the items per
 * sender, so that every sender has work; each large one alone. */
static void make_units(struct batch *bt)
{
    qsort(bt->items, (size_t)bt->n, sizeof(*bt->items), item_cmp);
    int share = SL_MAX((bt->n + SENDERS - 1) / SENDERS, 1);
    bt->nunits = 0;
    for (int i = 0; i < bt->n;) {
        struct unit *u = &bt->units[bt->nunits++];
        u->first = i;
        uint64_t bytes = bt->items[i].size;
        int k = 1;
        if (bt->items[i].size <= SL_PUTB_OBJ_MAX)
            while (i + k < bt->n && k < SL_MIN(SL_PUTB_OBJS, share) && same_unit(&bt->items[i], &bt->items[i + k]) &&
                   bytes + bt->items[i + k].size <= SL_PUTB_BYTES)
                bytes += bt->items[i + k++].size;
        u->n = k;
        i += k;
    }
}

static void run_batch(struct batch *bt)
{
    if (!bt->n)
        return;
    make_units(bt);
    pthread_t th[SENDERS];
    int nt = bt->nunits < SENDERS ? bt->nunits : SENDERS;
    bt->next = 0;
    for (int i = 0; i < nt; i++)
        pthread_create(&th[i], NULL, sender, bt);
    for (int i = 0; i < nt; i++)
        pthread_join(th[i], NULL);
    for (int i = 0; i < bt->n; i++) {
        free(bt->items[i].name);
        sl_bck_release(&bt->items[i].b);
    }
    bt->n = 0;
}

/* One walk over every local object; returns the number that could not be moved. */
static uint64_t reb_pass(struct sl_job *job, struct batch *bt, uint64_t *scanned, uint64_t *scanned_bytes)
{
    struct sl_bmd *bmd = sl_bmd_get();
    uint64_t errs0 = job->err_objs;
    bt->first_err[0] = 0;
    for (int bi = 0; bi < bmd->n && !sl_job_aborting(job); bi++) {
        const struct sl_bck *b = &bmd->bcks[bi];
        for (int m = 0; m < sl_store_nmpaths() && !sl_job_aborting(job); m++) {
            struct sl_mpath *mp = sl_store_mpath(m);
            if (sl_store_mpath_gone(mp))
                continue; /* (detached: nothing of this target there) */
            char *after = NULL;
            size_t alen = 0;
            for (;;) {
                struct sl_md_iter *it;
                struct sl_err err;
                if (sl_md_iter_open(mp->md, b->bid, "", 0, after, alen, &it, &err) < 0)
                    break;
                int got = 0;
                while (got < BATCH && sl_md_iter_next(it) == 1) {
                    size_t nl;
                    const char *n = sl_md_iter_name(it, &nl);
                    free(after);
                    after = sl_xstrndup(n, nl);
                    alen = nl;
                    got++;
                    (*scanned)++;
                    *scanned_bytes += sl_md_iter_md(it)->size;
                    struct sl_buf un;
                    sl_buf_init(&un);
                    sl_obj_uname(&un, b->provider, b->name, n, nl);
                    const struct sl_snode *owner = sl_smap_hrw_target(bt->smap, un.p, un.len);
                    sl_buf_free(&un);
                    if (!owner || !strcmp(owner->id, G.id))
                        continue;
                    if (owner->flags & SL_SNF_OFFLINE) {
                        sl_job_add(&job->err_objs, 1);
                        if (!bt->first_err[0])
                            snprintf(bt->first_err, sizeof(bt->first_err), "new owner t[%s] is offline", owner->id);
                        continue;
                    }
                    struct item *x = &bt->items[bt->n++];
                    sl_bck_copy(&x->b, b);
                    x->name = sl_xstrndup(n, nl);
                    x->nlen = nl;
                    x->size = sl_md_iter_md(it)->size;
                    x->owner = owner;
                }
                sl_md_iter_close(it);
                if (bt->n > ITEMS - BATCH)
                    run_batch(bt);
                if (got < BATCH || sl_job_aborting(job))
                    break;
            }
            free(after);
        }
    }
    run_batch(bt);
    delq_drain(&bt->dq);
    sl_bmd_put(bmd);
    return job->err_objs - errs0;
}

static void *reb_main(void *arg)
{
    struct sl_job *job = arg;
    struct batch bt;
    memset(&bt, 0, sizeof(bt));
    pthread_mutex_init(&bt.mu, NULL);
    bt.job = job;
    bt.items = sl_xcalloc(ITEMS, sizeof(struct item));
    bt.units = sl_xcalloc(ITEMS, sizeof(struct unit));
    bt.smap = sl_smap_get();
    delq_start(&bt);
    int64_t t0 = sl_mono_ns();
    uint64_t scanned = 0, scanned_bytes = 0, failed = 0;
    /* objects that could not be moved (an owner briefly busy, a bucket it has
     * not learned yet) are retried in later passes */
    for (int pass = 1; pass <= 5 && !sl_job_aborting(job); pass++) {
        uint64_t sc = 0, sb = 0;
        failed = reb_pass(job, &bt, &sc, &sb);
        if (pass == 1) {
            scanned = sc;
            scanned_bytes = sb;
        }
        if (!failed)
            break;
        sl_logw("rebalance %s pass %d: %llu object(s) not moved yet (%s); retrying", job->id, pass,
                (unsigned long long)failed, bt.first_err);
        for (int i = 0; i < 20 && !sl_job_aborting(job); i++)
            sl_sleep_ms(100);
    }
    delq_stop(&bt);
    sl_job_add(&job->loc_objs, scanned);
    sl_job_add(&job->loc_bytes, scanned_bytes);
    char err[1200] = "";
    if (failed)
        snprintf(err, sizeof(err), "%llu object(s) could not be moved (first: %s)", (unsigned long long)failed,
                 bt.first_err);
    sl_logi("rebalance %s %s: scanned %llu, moved %llu object(s) (%llu bytes) in %.1f s%s%s", job->id,
            sl_job_aborting(job) ? "aborted" : "finished", (unsigned long long)scanned,
            (unsigned long long)job->out_objs, (unsigned long long)job->out_bytes,
            (double)(sl_mono_ns() - t0) / 1e9, err[0] ? "; " : "", err);
    sl_job_finish(job, err);
    if (!sl_job_aborting(job))
        sl_ec_membership_changed(); /* erasure-coded buckets: slices where the new map wants them */
    sl_smap_put(bt.smap);
    free(bt.items);
    free(bt.units);
    pthread_mutex_destroy(&bt.mu);
    return NULL;
}

void sl_reb_start(const char *id)
{
    pthread_mutex_lock(&mu);
    if (cur_job) {
        if (!strcmp(cur_job->id, id)) { /* already running or done */
            pthread_mutex_unlock(&mu);
            return;
        }
        cur_job->abort_req = true;
    }
    if (thr_live) {
        pthread_t t = cur_thr;
        pthread_mutex_unlock(&mu);
        pthread_join(t, NULL);
        pthread_mutex_lock(&mu);
        thr_live = false;
    }
    if (cur_job)
        sl_job_put(cur_job);
    cur_job = sl_job_start("rebalance", id, "", "");
    sl_logi("rebalance %s started", id);
    if (pthread_create(&cur_thr, NULL, reb_main, cur_job) == 0)
        thr_live = true;
    pthread_mutex_unlock(&mu);
}

void sl_reb_stop(void)
{
    pthread_mutex_lock(&mu);
    if (cur_job)
        cur_job->abort_req = true;
    bool live = thr_live;
    pthread_t t = cur_thr;
    thr_live = false;
    pthread_mutex_unlock(&mu);
    if (live)
        pthread_join(t, NULL);
    pthread_mutex_lock(&mu);
    if (cur_job)
        sl_job_put(cur_job);
    cur_job = NULL;
    if (prev_smap)
        sl_smap_put(prev_smap);
    prev_smap = NULL;
    pthread_mutex_unlock(&mu);
}

bool sl_reb_active(void)
{
    pthread_mutex_lock(&mu);
    bool a = cur_job && !cur_job->end_ns;
    pthread_mutex_unlock(&mu);
    return a;
}

void sl_reb_describe(char *out, size_t n)
{
    pthread_mutex_lock(&mu);
    if (!cur_job)
        snprintf(out, n, "-");
    else
        snprintf(out, n, "%s: %s, %llu moved%s", cur_job->id,
                 !cur_job->end_ns ? "running" : cur_job->aborted ? "aborted" : "finished",
                 (unsigned long long)cur_job->out_objs, cur_job->err[0] ? ", errors" : "");
    pthread_mutex_unlock(&mu);
}

static bool same_targets(const struct sl_smap *a, const struct sl_smap *b)
{
    if (sl_smap_count(a, SL_NODE_TARGET, true) != sl_smap_count(b, SL_NODE_TARGET, true))
        return false;
    for (int i = 0; i < a->nnodes; i++) {
        const struct sl_snode *x = &a->nodes[i];
        if (x->type != SL_NODE_TARGET || (x->flags & (SL_SNF_MAINT | SL_SNF_DECOMM)))
            continue;
        const struct sl_snode *y = sl_smap_find(b, x->id);
        if (!y || (y->flags & (SL_SNF_MAINT | SL_SNF_DECOMM)))
            return false;
    }
    return true;
}

void sl_reb_smap_changed(const struct sl_smap *old, const struct sl_smap *cur)
{
    if (!old || same_targets(old, cur))
        return;
    pthread_mutex_lock(&mu);
    if (prev_smap)
        sl_smap_put(prev_smap);
    prev_smap = sl_smap_clone(old);
    smap_changed_mono = sl_mono_ns();
    pthread_mutex_unlock(&mu);
}

bool sl_reb_gfn_window(void)
{
    pthread_mutex_lock(&mu);
    bool w = (cur_job && !cur_job->end_ns) || (prev_smap && sl_mono_ns() - smap_changed_mono < GFN_WINDOW_NS);
    pthread_mutex_unlock(&mu);
    return w;
}

/* ---- get from neighbour ---- */

struct gfn_ctx {
    struct sl_put *put;
    struct sl_bck b;
    const char *name;
    size_t nlen;
    struct sl_objmd md;
    int cktype;
    char ckval[SL_CKSUM_HEX_MAX];
    bool started;
    struct sl_err err;
};

static void gfn_hdr(void *arg, const char *k, const char *v)
{
    struct gfn_ctx *g = arg;
    if (!strcasecmp(k, "Ais-Checksum-Type"))
        g->cktype = sl_cksum_parse(v);
    else if (!strcasecmp(k, "Ais-Checksum-Value"))
        snprintf(g->ckval, sizeof(g->ckval), "%s", v);
    else if (!strcasecmp(k, "Ais-Version"))
        g->md.version = strtoull(v, NULL, 10);
    else if (!strcasecmp(k, "Ais-Atime"))
        g->md.atime = strtoll(v, NULL, 10);
    else if (!strcasecmp(k, "Ais-Custom-Md")) {
        const char *eq = strchr(v, '=');
        if (eq) {
            char *key = sl_xstrndup(v, (size_t)(eq - v));
            sl_objmd_set_custom(&g->md, key, eq + 1);
            free(key);
        }
    }
}

static int gfn_sink(void *arg, const char *data, size_t n)
{
    struct gfn_ctx *g = arg;
    if (!g->started) {
        g->started = true;
        g->md.cksum_type = g->cktype > 0 ? g->cktype : 0;
        snprintf(g->md.cksum, sizeof(g->md.cksum), "%s", g->ckval);
        struct sl_put_opts o = { .client_cktype = -1, .expect_size = -1, .preserve = &g->md,
                                 .move = true };
        if (g->cktype != g->b.cksum_type)
            g->md.cksum[0] = 0; /* different algorithm: the receiver computes its own */
        if (sl_put_begin(&g->b, g->name, g->nlen, &o, &g->put, &g->err) < 0)
            return -1;
    }
    return sl_put_write(g->put, data, n, &g->err);
}

static int gfn_from(const struct sl_snode *t, const struct sl_bck *b, const char *name, size_t nlen, int *status)
{
    struct gfn_ctx g;
    memset(&g, 0, sizeof(g));
    g.b = *b;
    g.name = name;
    g.nlen = nlen;
    g.cktype = -1;
    struct sl_buf url;
    sl_buf_init(&url);
    sl_peer_obj_url(&url, t->data_url, b->name, b->provider, name, nlen);
    struct sl_peer_hdr h[] = { { "Ais-No-Gfn", "true" } };
    struct sl_peer_resp r;
    /* a neighbour that sends nothing for 5 x cplane_operation is stuck: the next one is asked */
    long stall_s = (long)(sl_conf->cplane_timeout_ns / 1000000000 * 5);
    int rc = sl_peer_get_stream_stall(url.p, h, 1, gfn_sink, gfn_hdr, &g, sl_conf->send_file_time_ns / 1000000,
                                      stall_s > 0 ? stall_s : 1, &r);
    *status = (int)r.status;
    int ret = -1;
    if (rc == 0 && r.status == 200) {
        if (!g.started) { /* empty object */
            gfn_sink(&g, "", 0);
        }
        if (g.put && sl_put_commit(g.put, NULL, &g.err) == 0)
            ret = 0;
        g.put = NULL;
    }
    if (g.put)
        sl_put_abort(g.put);
    sl_objmd_free(&g.md);
    sl_peer_resp_free(&r);
    sl_buf_free(&url);
    return ret;
}

int sl_reb_gfn(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err)
{
    struct sl_smap *cur = sl_smap_get();
    pthread_mutex_lock(&mu);
    struct sl_smap *prev = prev_smap ? sl_smap_clone(prev_smap) : NULL;
    pthread_mutex_unlock(&mu);
    struct sl_buf un;
    sl_buf_init(&un);
    sl_obj_uname(&un, b->provider, b->name, name, nlen);
    const struct sl_snode *first = prev ? sl_smap_hrw_target(prev, un.p, un.len) : NULL;
    int rc = -1, status = 0;
    /* the previous owner first, then every other target that is up */
    if (first && strcmp(first->id, G.id)) {
        const struct sl_snode *fc = sl_smap_find(cur, first->id);
        if (!fc || !(fc->flags & SL_SNF_OFFLINE))
            rc = gfn_from(first, b, name, nlen, &status);
    }
    for (int i = 0; rc < 0 && i < cur->nnodes; i++) {
        const struct sl_snode *t = &cur->nodes[i];
        if (t->type != SL_NODE_TARGET || !strcmp(t->id, G.id) || (t->flags & SL_SNF_OFFLINE) ||
            (first && !strcmp(first->id, t->id)))
            continue;
        rc = gfn_from(t, b, name, nlen, &status);
    }
    if (rc == 0) {
        sl_stats_add("gfn_objs", 1);
        sl_logd("get-from-neighbour: fetched %s/%.*s", b->name, (int)SL_MIN(nlen, 200), name);
    } else {
        char cn[400];
        sl_obj_cname(cn, sizeof(cn), b, name, nlen);
        sl_errf(err, SL_ENOOBJ, "t[%s]: %s does not exist", G.id, cn);
    }
    sl_buf_free(&un);
    if (prev)
        sl_smap_put(prev);
    sl_smap_put(cur);
    return rc;
}

const char *sl_reb_state(void)
{
    static __thread char buf[128];
    if (G.role != SL_ROLE_TARGET)
        return "-";
    sl_reb_describe(buf, sizeof(buf));
    return buf;
}

/* ---- the cluster's hooks ---- */

static void serving(void)
{
    /* a target that missed a rebalance while down runs the latest one */
    if (G.role != SL_ROLE_TARGET)
        return;
    json_t *d = sl_cluster_doc("rmd");
    if (d && sl_json_int(d, "version", 0) > 0)
        sl_reb_start(sl_json_str(d, "id", "g0"));
    json_decref(d);
}

static void stopping(void)
{
    if (G.role == SL_ROLE_TARGET)
        sl_reb_stop();
}

static void smap_changed(const struct sl_smap *old, const struct sl_smap *cur)
{
    if (G.role == SL_ROLE_TARGET)
        sl_reb_smap_changed(old, cur);
}

const struct sl_cluster_hooks sl_reb_hooks = {
    .name = "rebalance",
    .serving = serving,
    .stopping = stopping,
    .smap_changed = smap_changed,
    .rebalance = sl_reb_start,
};
