/* SPDX-License-Identifier: MIT
 * bg.c: see bg.h. Per pool: one mutex, one condition variable, a FIFO of
 * tasks.
 */
#include "bg.h"
#include "log.h"
#include "xact.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

struct task {
    sl_bg_fn fn;
    void *arg;
    struct task *next;
};

static struct pool {
    const char *name;
    pthread_mutex_t mu;
    pthread_cond_t cv;          /* work queued / exit */
    struct task *head, *tail;
    pthread_t *threads;
    int nthreads;
    int inflight;
    bool running, exiting;
} pools[SL_POOL_COUNT] = {
    [SL_POOL_MAIN] = { "background", PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER },
    [SL_POOL_PEER] = { "peer-fetch", PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER },
    [SL_POOL_DISK] = { "disk-wait", PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER },
};
static bool stopping;

static void *worker(void *arg)
{
    struct pool *p = arg;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->head && !p->exiting)
            pthread_cond_wait(&p->cv, &p->mu);
        if (!p->head && p->exiting)
            break;
        struct task *t = p->head;
        p->head = t->next;
        if (!p->head)
            p->tail = NULL;
        pthread_mutex_unlock(&p->mu);
        t->fn(t->arg);
        free(t);
        pthread_mutex_lock(&p->mu);
        p->inflight--;
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void pool_stop(struct pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->exiting = true;
    p->running = false;
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    p->threads = NULL;
    p->nthreads = 0;
}

static int pool_start(struct pool *p, int n, size_t stack, struct sl_err *err)
{
    p->threads = sl_xcalloc((size_t)n, sizeof(*p->threads));
    p->exiting = false;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, stack);
    for (int i = 0; i < n; i++) {
        if (pthread_create(&p->threads[i], &a, worker, p) != 0) {
            pthread_attr_destroy(&a);
            pool_stop(p);
            return sl_errf(err, SL_EINTERNAL, "cannot start %s thread %d of %d", p->name, i + 1, n);
        }
        p->nthreads++;
    }
    pthread_attr_destroy(&a);
    pthread_mutex_lock(&p->mu);
    p->running = true;
    pthread_mutex_unlock(&p->mu);
    return 0;
}

int sl_bg_start(int n, struct sl_err *err)
{
    if (n <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c > 2 ? (int)c : 2;
    }
    /* Lua calls want about 1.5 MiB of C stack; give them room */
    if (pool_start(&pools[SL_POOL_MAIN], n, 8 * SL_MIB, err) < 0)
        return -1;
    /* waits on peers: many threads, little stack, so that one slow peer
     * holds up only the requests that wait for it */
    if (pool_start(&pools[SL_POOL_PEER], SL_POOL_PEER_THREADS, 512 * 1024, err) < 0) {
        pool_stop(&pools[SL_POOL_MAIN]);
        return -1;
    }
    /* waits on fsync: enough threads for the file system to group them */
    if (pool_start(&pools[SL_POOL_DISK], SL_POOL_DISK_THREADS, SL_MIB, err) < 0) {
        pool_stop(&pools[SL_POOL_PEER]);
        pool_stop(&pools[SL_POOL_MAIN]);
        return -1;
    }
    return 0;
}

void sl_bg_submit_to(int pool, sl_bg_fn fn, void *arg)
{
    struct pool *p = &pools[pool];
    pthread_mutex_lock(&p->mu);
    if (!p->running) {
        pthread_mutex_unlock(&p->mu);
        fn(arg);
        return;
    }
    struct task *t = sl_xmalloc(sizeof(*t));
    t->fn = fn;
    t->arg = arg;
    t->next = NULL;
    if (p->tail)
        p->tail->next = t;
    else
        p->head = t;
    p->tail = t;
    p->inflight++;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
}

void sl_bg_submit(sl_bg_fn fn, void *arg)
{
    sl_bg_submit_to(SL_POOL_MAIN, fn, arg);
}

bool sl_bg_stopping(void)
{
    return __atomic_load_n(&stopping, __ATOMIC_RELAXED);
}

static int inflight_all(void)
{
    int n = 0;
    for (int i = 0; i < SL_POOL_COUNT; i++) {
        pthread_mutex_lock(&pools[i].mu);
        n += pools[i].inflight;
        pthread_mutex_unlock(&pools[i].mu);
    }
    return n;
}

int sl_bg_quiesce(int64_t timeout_ms)
{
    __atomic_store_n(&stopping, true, __ATOMIC_RELAXED);
    int64_t end = sl_mono_ns() + timeout_ms * 1000000;
    int n;
    while ((n = inflight_all()) > 0 && sl_mono_ns() < end)
        sl_sleep_ms(20);
    if (n)
        sl_logw("background pools: %d task(s) still running after %lld ms", n, (long long)timeout_ms);
    return n;
}

void sl_bg_stop(void)
{
    for (int i = 0; i < SL_POOL_COUNT; i++)
        pool_stop(&pools[i]);
}

int sl_bg_threads(void)
{
    return pools[SL_POOL_MAIN].nthreads;
}

int sl_bg_inflight(void)
{
    return inflight_all();
}

bool sl_workers_enter(struct sl_workers *w)
{
    __atomic_add_fetch(&w->active, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&w->stopping, __ATOMIC_SEQ_CST)) {
        __atomic_sub_fetch(&w->active, 1, __ATOMIC_SEQ_CST);
        return false;
    }
    return true;
}

bool sl_workers_enter_job(struct sl_workers *w, struct sl_job *job)
{
    if (sl_workers_enter(w))
        return true;
    sl_job_finish(job, "aborted: the target is shutting down");
    sl_job_put(job);
    return false;
}

void sl_workers_leave(struct sl_workers *w)
{
    __atomic_sub_fetch(&w->active, 1, __ATOMIC_SEQ_CST);
}

void sl_workers_quiesce(struct sl_workers *w, int64_t timeout_ms, const char *what)
{
    __atomic_store_n(&w->stopping, true, __ATOMIC_SEQ_CST);
    int64_t end = sl_mono_ns() + timeout_ms * 1000000;
    while (__atomic_load_n(&w->active, __ATOMIC_SEQ_CST) > 0 && sl_mono_ns() < end)
        sl_sleep_ms(10);
    int n = __atomic_load_n(&w->active, __ATOMIC_SEQ_CST);
    if (n > 0)
        sl_logw("%s: %d thread(s) still at work after %lld ms; going on without them", what, n,
                (long long)timeout_ms);
}
