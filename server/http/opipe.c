/* SPDX-License-Identifier: MIT
 * opipe.c: producer-thread response bodies with back-pressure (opipe.h).
 */
#include "opipe.h"

#include <pthread.h>
#include <string.h>

/* A waiting connection is resumed once this much is queued (or at the
 * end): resuming it for every small write costs a thread switch each. */
#define WAKE_MIN (64 * 1024)

struct sl_opipe {
    pthread_mutex_t mu;
    pthread_cond_t room;
    void *conn;
    struct sl_buf buf;
    size_t off, high;
    int refs;
    bool waiting;              /* the connection is suspended for data */
    bool done, failed, gone;
};

static void unref(struct sl_opipe *p)
{
    pthread_mutex_lock(&p->mu);
    int left = --p->refs;
    pthread_mutex_unlock(&p->mu);
    if (left)
        return;
    sl_buf_free(&p->buf);
    pthread_cond_destroy(&p->room);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

static ssize_t op_read(void *ctx, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    struct sl_opipe *p = ctx;
    pthread_mutex_lock(&p->mu);
    size_t avail = p->buf.len - p->off;
    if (avail) {
        size_t n = SL_MIN(avail, max);
        memcpy(out, p->buf.p + p->off, n);
        p->off += n;
        if (p->off == p->buf.len) {
            sl_buf_reset(&p->buf);
            p->off = 0;
        }
        pthread_cond_signal(&p->room);
        pthread_mutex_unlock(&p->mu);
        return (ssize_t)n;
    }
    if (p->done) {
        bool f = p->failed;
        pthread_mutex_unlock(&p->mu);
        return f ? -1 : 0;
    }
    p->waiting = true;
    sl_conn_suspend(p->conn);
    pthread_mutex_unlock(&p->mu);
    return SL_STREAM_WAIT;
}

static void op_release(void *ctx)
{
    struct sl_opipe *p = ctx;
    pthread_mutex_lock(&p->mu);
    p->gone = true;
    pthread_cond_broadcast(&p->room);
    pthread_mutex_unlock(&p->mu);
    unref(p);
}

struct sl_opipe *sl_resp_opipe(struct sl_req *r, int status, const char *ctype, size_t high)
{
    struct sl_opipe *p = sl_xcalloc(1, sizeof(*p));
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->room, NULL);
    sl_buf_init(&p->buf);
    p->conn = r->conn;
    p->high = high ? high : 1024 * 1024;
    p->refs = 2; /* the response's and the producer's */
    sl_resp_stream(r, status, ctype, UINT64_MAX, op_read, p, op_release);
    return p;
}

static void wake(struct sl_opipe *p)
{
    if (p->waiting) {
        p->waiting = false;
        sl_conn_resume(p->conn);
    }
}

int sl_opipe_write(struct sl_opipe *p, const void *data, size_t n)
{
    pthread_mutex_lock(&p->mu);
    while (!p->gone && p->buf.len - p->off >= p->high)
        pthread_cond_wait(&p->room, &p->mu);
    if (p->gone) {
        pthread_mutex_unlock(&p->mu);
        return -1;
    }
    if (p->off && p->off == p->buf.len) {
        sl_buf_reset(&p->buf);
        p->off = 0;
    } else if (p->off > p->high) {
        memmove(p->buf.p, p->buf.p + p->off, p->buf.len - p->off);
        p->buf.len -= p->off;
        p->off = 0;
    }
    sl_buf_add(&p->buf, data, n);
    if (p->buf.len - p->off >= SL_MIN(WAKE_MIN, p->high))
        wake(p);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

void sl_opipe_close(struct sl_opipe *p, bool failed)
{
    pthread_mutex_lock(&p->mu);
    p->done = true;
    p->failed = failed;
    wake(p);
    pthread_mutex_unlock(&p->mu);
    unref(p);
}
