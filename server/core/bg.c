/* SPDX-License-Identifier: MIT
 * bg.c: see bg.h. One mutex, one condition variable, a FIFO of tasks.
 */
#include "bg.h"
#include "log.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

struct task {
    sl_bg_fn fn;
    void *arg;
    struct task *next;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;      /* work queued / exit */
static struct task *head, *tail;
static pthread_t *threads;
static int nthreads;
static int inflight;
static bool running, stopping, exiting;

static void *worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!head && !exiting)
            pthread_cond_wait(&cv, &mu);
        if (!head && exiting)
            break;
        struct task *t = head;
        head = t->next;
        if (!head)
            tail = NULL;
        pthread_mutex_unlock(&mu);
        t->fn(t->arg);
        free(t);
        pthread_mutex_lock(&mu);
        inflight--;
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}

int sl_bg_start(int n, struct sl_err *err)
{
    if (n <= 0) {
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        n = c > 2 ? (int)c : 2;
    }
    threads = sl_xcalloc((size_t)n, sizeof(*threads));
    pthread_attr_t a;
    pthread_attr_init(&a);
    /* Lua calls want about 1.5 MiB of C stack; give them room */
    pthread_attr_setstacksize(&a, 8 * SL_MIB);
    for (int i = 0; i < n; i++) {
        if (pthread_create(&threads[i], &a, worker, NULL) != 0) {
            pthread_attr_destroy(&a);
            sl_bg_stop();
            return sl_errf(err, SL_EINTERNAL, "cannot start background thread %d of %d", i + 1, n);
        }
        nthreads++;
    }
    pthread_attr_destroy(&a);
    pthread_mutex_lock(&mu);
    running = true;
    pthread_mutex_unlock(&mu);
    return 0;
}

void sl_bg_submit(sl_bg_fn fn, void *arg)
{
    pthread_mutex_lock(&mu);
    if (!running) {
        pthread_mutex_unlock(&mu);
        fn(arg);
        return;
    }
    struct task *t = sl_xmalloc(sizeof(*t));
    t->fn = fn;
    t->arg = arg;
    t->next = NULL;
    if (tail)
        tail->next = t;
    else
        head = t;
    tail = t;
    inflight++;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
}

bool sl_bg_stopping(void)
{
    return __atomic_load_n(&stopping, __ATOMIC_RELAXED);
}

int sl_bg_quiesce(int64_t timeout_ms)
{
    __atomic_store_n(&stopping, true, __ATOMIC_RELAXED);
    int64_t end = sl_mono_ns() + timeout_ms * 1000000;
    pthread_mutex_lock(&mu);
    while (inflight > 0 && sl_mono_ns() < end) {
        pthread_mutex_unlock(&mu);
        sl_sleep_ms(20);
        pthread_mutex_lock(&mu);
    }
    int n = inflight;
    pthread_mutex_unlock(&mu);
    if (n)
        sl_logw("background pool: %d task(s) still running after %lld ms", n, (long long)timeout_ms);
    return n;
}

void sl_bg_stop(void)
{
    pthread_mutex_lock(&mu);
    exiting = true;
    running = false;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    for (int i = 0; i < nthreads; i++)
        pthread_join(threads[i], NULL);
    free(threads);
    threads = NULL;
    nthreads = 0;
}

int sl_bg_threads(void)
{
    return nthreads;
}

int sl_bg_inflight(void)
{
    pthread_mutex_lock(&mu);
    int n = inflight;
    pthread_mutex_unlock(&mu);
    return n;
}
