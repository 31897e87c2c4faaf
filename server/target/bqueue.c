/* SPDX-License-Identifier: MIT
 * bqueue.c: per-bucket work queues with one worker. See bqueue.h.
 */
#include "bqueue.h"
#include "log.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

struct bq_item {
    struct bq_item *next;
    uint64_t bid;
    char *name;
    size_t nlen;
    int op;
};

struct bq_bck {
    struct sl_bck b;            /* copy (props referenced): the latest queued */
    struct sl_job *job;
    int queued;
    bool rescan;                /* the burst overflowed: walk the bucket */
    int64_t idle_since;         /* mono ns; 0 while busy */
};

static struct bq_bck *find(struct sl_bq *q, uint64_t bid) /* q->mu held */
{
    for (int i = 0; i < q->nbcks; i++)
        if (q->bcks[i].b.bid == bid)
            return &q->bcks[i];
    return NULL;
}

static void *worker(void *arg);

void sl_bq_add(struct sl_bq *q, const struct sl_bck *b, const char *name, size_t nlen, int op)
{
    pthread_mutex_lock(&q->mu);
    struct bq_bck *k = find(q, b->bid);
    if (!k) {
        q->bcks = sl_xrealloc(q->bcks, (size_t)(q->nbcks + 1) * sizeof(*q->bcks));
        k = &q->bcks[q->nbcks++];
        memset(k, 0, sizeof(*k));
        sl_bck_copy(&k->b, b);
    } else if (k->b.props != b->props) { /* newer props */
        sl_bck_release(&k->b);
        sl_bck_copy(&k->b, b);
    }
    if (!k->job || k->job->end_ns || sl_job_aborting(k->job)) {
        /* (an aborted one ends here; the objects it had queued are skipped) */
        if (k->job && !k->job->end_ns)
            sl_job_finish(k->job, "aborted");
        sl_job_put(k->job);
        k->job = sl_job_start(q->ops->kind, NULL, b->name, "");
    }
    k->job->idle = false;
    k->idle_since = 0;
    if (q->ops->burst && k->queued >= q->ops->burst(b)) {
        k->rescan = true;
    } else {
        struct bq_item *it = sl_xcalloc(1, sizeof(*it));
        it->bid = b->bid;
        it->name = sl_xstrndup(name, nlen);
        it->nlen = nlen;
        it->op = op;
        if (q->tail)
            q->tail->next = it;
        else
            q->head = it;
        q->tail = it;
        k->queued++;
    }
    bool start = !q->running;
    q->running = true;
    pthread_cond_signal(&q->cv);
    pthread_mutex_unlock(&q->mu);
    if (start)
        sl_run_detached(worker, q);
}

/* (q->mu held) end the jobs idle for long enough; true when none is left */
static bool reap(struct sl_bq *q, int64_t now)
{
    for (int i = 0; i < q->nbcks;) {
        struct bq_bck *k = &q->bcks[i];
        if (!k->queued && !k->rescan) {
            k->job->idle = true;
            if (!k->idle_since)
                k->idle_since = now;
            if (now - k->idle_since >= q->ops->idle_ns || q->ops->wk->stopping || sl_job_aborting(k->job)) {
                if (!k->job->end_ns)
                    sl_job_finish(k->job, sl_job_aborting(k->job) ? "aborted" : NULL);
                sl_job_put(k->job);
                sl_bck_release(&k->b);
                q->bcks[i] = q->bcks[--q->nbcks];
                continue;
            }
        }
        i++;
    }
    return q->nbcks == 0;
}

/* (q->mu held, released during the work) bucket k's job and a copy of it, or false */
static bool take(struct bq_bck *k, struct sl_bck *b, struct sl_job **job)
{
    if (!k || !(*job = sl_job_get(k->job->id)))
        return false;
    sl_bck_copy(b, &k->b);
    return true;
}

static void *worker(void *arg)
{
    struct sl_bq *q = arg;
    const struct sl_bq_ops *ops = q->ops;
    bool in = sl_workers_enter(ops->wk);
    pthread_mutex_lock(&q->mu);
    for (; in;) {
        struct bq_item *it = q->head;
        struct sl_bck b;
        struct sl_job *job;
        if (it) {
            q->head = it->next;
            if (!q->head)
                q->tail = NULL;
            bool have = take(find(q, it->bid), &b, &job);
            pthread_mutex_unlock(&q->mu);
            if (have && !sl_job_aborting(job) && !ops->wk->stopping)
                ops->work(&b, it->name, it->nlen, it->op, job);
            if (have) {
                sl_bck_release(&b);
                sl_job_put(job);
            }
            pthread_mutex_lock(&q->mu);
            struct bq_bck *k = find(q, it->bid);
            if (k)
                k->queued--;
            free(it->name);
            free(it);
            continue;
        }
        /* the queue is empty: a bucket whose burst overflowed is walked */
        struct bq_bck *k = NULL;
        for (int i = 0; i < q->nbcks && !k; i++)
            if (q->bcks[i].rescan)
                k = &q->bcks[i];
        if (k) {
            k->rescan = false;
            if (!take(k, &b, &job))
                continue;
            pthread_mutex_unlock(&q->mu);
            ops->rescan(&b, job);
            sl_bck_release(&b);
            sl_job_put(job);
            pthread_mutex_lock(&q->mu);
            continue;
        }
        if (reap(q, sl_mono_ns()) || ops->wk->stopping)
            break;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 1;
        pthread_cond_timedwait(&q->cv, &q->mu, &ts);
    }
    q->running = false;
    pthread_mutex_unlock(&q->mu);
    if (in)
        sl_workers_leave(ops->wk);
    return NULL;
}
