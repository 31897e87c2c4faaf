/* SPDX-License-Identifier: MIT
 * bqueue.h: work on objects after their PUT, queued per bucket, done by one
 * worker thread, with one job per bucket while it has work: mirroring's
 * put-copies (mirror.c) and erasure coding's ec-put (cluster/ec.c).
 *
 * A bucket's job starts with its first queued object (again after it
 * ended or was aborted), is idle while the bucket has nothing queued and
 * ends after ops->idle_ns of that (or when aborted, or when the owner's
 * workers stop). With ops->burst, a bucket queues at most that many
 * objects: past it, the object is not queued and ops->rescan is called
 * once the queue has drained (the owner walks the whole bucket), so a
 * burst costs memory up to the burst and loses nothing. The worker runs
 * inside the owner's sl_workers (ops->wk), so quiescing the owner stops it.
 *
 * sl_bq_add never blocks on I/O; any thread.
 */
#ifndef SL_BQUEUE_H
#define SL_BQUEUE_H

#include "bg.h"
#include "meta.h"
#include "xact.h"

#include <pthread.h>

struct sl_bq_ops {
    const char *kind;                                   /* of the jobs: "ec-put" */
    int64_t idle_ns;
    struct sl_workers *wk;                              /* the owner's */
    /* one object (b: the bucket as last queued; job: its bucket's job) */
    void (*work)(const struct sl_bck *b, const char *name, size_t nlen, int op, struct sl_job *job);
    int (*burst)(const struct sl_bck *b);               /* NULL: no limit */
    void (*rescan)(const struct sl_bck *b, struct sl_job *job);
};

struct bq_item;
struct bq_bck;
struct sl_bq {
    const struct sl_bq_ops *ops;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    struct bq_item *head, *tail;
    struct bq_bck *bcks;
    int nbcks;
    bool running;
};
#define SL_BQ_INIT(OPS) { .ops = (OPS), .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER }

/* Queue name of b (op: the owner's, given back to work). */
void sl_bq_add(struct sl_bq *q, const struct sl_bck *b, const char *name, size_t nlen, int op);

#endif
