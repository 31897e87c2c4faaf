/* SPDX-License-Identifier: MIT
 * fwd_relay.c: what the forward's transports share: the rings, the
 * client's side (its body into the in ring, the answer out of the out
 * ring), the making of the answer, and a forward's life. See fwd_int.h.
 */
#include "fwd_int.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

volatile bool fwd_stopping;
static pthread_mutex_t act_mu = PTHREAD_MUTEX_INITIALIZER;
static int n_active;           /* forwards between sl_fwd and their end */

void fwd_ring_alloc(struct fwd_ring *g, size_t cap)
{
    g->b = sl_xmalloc(cap);
    g->cap = cap;
}

size_t fwd_ring_put(struct fwd_ring *g, const char *p, size_t n)
{
    size_t k = g->cap - g->len < n ? g->cap - g->len : n;
    size_t tail = (g->head + g->len) % g->cap;
    size_t a = g->cap - tail < k ? g->cap - tail : k;
    memcpy(g->b + tail, p, a);
    memcpy(g->b, p + a, k - a);
    g->len += k;
    return k;
}

size_t fwd_ring_get(struct fwd_ring *g, char *p, size_t n)
{
    size_t k = g->len < n ? g->len : n;
    if (!k)
        return 0;
    size_t a = g->cap - g->head < k ? g->cap - g->head : k;
    memcpy(p, g->b + g->head, a);
    memcpy(p + a, g->b, k - a);
    g->head = (g->head + k) % g->cap;
    g->len -= k;
    return k;
}

void fwd_grow(void *pp, int *cap, int need, size_t esz)
{
    if (need <= *cap)
        return;
    *cap = *cap ? *cap * 2 : 64;
    if (*cap < need)
        *cap = need;
    *(void **)pp = sl_xrealloc(*(void **)pp, (size_t)*cap * esz);
}

int fwd_loops_wanted(void)
{
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    return nc < 1 ? 1 : nc > FWD_MAX_LOOPS ? FWD_MAX_LOOPS : (int)nc;
}

/* Room in the out ring again for a transfer paused on it (f->mu held):
 * true when its loop must be kicked. */
static bool out_unpause(struct fwd *f)
{
    f->wr_paused = false;
    return f->ops->unpause(f);
}

static void kick(struct fwd *f)
{
    if (f->ops->kick)
        f->ops->kick(f);
}

void fwd_unref(struct fwd *f)
{
    pthread_mutex_lock(&f->mu);
    int left = --f->refs;
    pthread_mutex_unlock(&f->mu);
    if (left)
        return;
    sl_buf_free(&f->hdrs);
    curl_slist_free_all(f->hl);
    sl_buf_free(&f->req);
    sl_h1_free(&f->h1);
    free(f->url);
    free(f->in.b);
    free(f->out.b);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

bool fwd_hop_by_hop(const char *k)
{
    static const char *const skip[] = { "connection", "keep-alive", "transfer-encoding", "te", "upgrade",
                                        "proxy-connection", "proxy-authorization", "expect", "content-length",
                                        "trailer" };
    for (size_t i = 0; i < SL_ARRAY_SIZE(skip); i++)
        if (!strcasecmp(k, skip[i]))
            return true;
    return false;
}

/* ---- the response ---- */

static ssize_t out_read(void *ctx, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct fwd *f = ctx;
    pthread_mutex_lock(&f->mu);
    ssize_t n;
    bool k = false;
    if (f->out.len) {
        n = (ssize_t)fwd_ring_get(&f->out, buf, max);
        if (f->wr_paused && f->out.cap - f->out.len >= f->out.cap / 2)
            k = out_unpause(f);
    } else if (f->ops->pull && f->ops->pull(f, buf, max, &n)) {
        /* (the transport received them itself) */
    } else if (f->done) {
        n = f->failed ? -1 : 0;
    } else {
        sl_conn_suspend(f->r->conn);
        f->out_susp = true;
        n = SL_STREAM_WAIT;
    }
    pthread_mutex_unlock(&f->mu);
    if (k)
        kick(f);
    return n;
}

static void out_free(void *ctx)
{
    fwd_unref(ctx);
}

/* Produce the response (f->mu held; dropped around the sl_resp_* call). */
static void answer(struct fwd *f)
{
    struct sl_req *r = f->r;
    f->answered = true;
    if (!f->hdrs_done || (f->failed && f->wait_body)) { /* (a small answer cut short: none of it went out) */
        char msg[320];
        snprintf(msg, sizeof(msg), "%s", f->errmsg[0] ? f->errmsg : "the peer gave no answer");
        f->discard = true;
        pthread_mutex_unlock(&f->mu);
        if (f->err_fn)
            f->err_fn(r, f->bad ? 502 : 503, msg);
        else
            sl_resp_errf(r, SL_EUNAVAIL, "%s; retry", msg);
        pthread_mutex_lock(&f->mu);
        return;
    }
    const char *k = f->hdrs.p;
    for (int i = 0; i < f->nh; i++) {
        const char *v = k + strlen(k) + 1;
        if (!fwd_hop_by_hop(k) && strcasecmp(k, "Date") && strcasecmp(k, "X-Request-Id"))
            sl_hdr_add(r, k, v);
        k = v + strlen(v) + 1;
    }
    int status = (int)f->status;
    if (f->head || status == 204 || status == 304 || f->resp_len == 0) {
        f->discard = true;
        /* (a HEAD answered without a length, as chunked, is passed on so, not as 0 bytes) */
        uint64_t len = f->resp_len >= 0 ? (uint64_t)f->resp_len : f->head ? UINT64_MAX : 0;
        pthread_mutex_unlock(&f->mu);
        if (f->head && status != 204 && status != 304)
            sl_resp_head(r, status, len);
        else
            sl_resp_empty(r, status);
        pthread_mutex_lock(&f->mu);
        return;
    }
    if (f->resp_len > 0 && f->out.len == (size_t)f->resp_len) { /* all of it is here: no stream */
        size_t n = f->out.len;
        char *buf;
        if (!f->out.head && n == f->out.cap) { /* the ring is the body: it becomes the response's */
            buf = f->out.b;
            memset(&f->out, 0, sizeof(f->out));
        } else {
            buf = sl_xmalloc(n);
            fwd_ring_get(&f->out, buf, n);
        }
        f->discard = true;
        pthread_mutex_unlock(&f->mu);
        sl_resp_bytes_owned(r, status, NULL, buf, n);
        pthread_mutex_lock(&f->mu);
        return;
    }
    f->streaming = true;
    f->refs++;
    uint64_t len = f->resp_len >= 0 ? (uint64_t)f->resp_len : UINT64_MAX;
    pthread_mutex_unlock(&f->mu);
    sl_resp_stream(r, status, NULL, len, out_read, f, out_free);
    pthread_mutex_lock(&f->mu);
}

/* Answer a deferred request from the forward thread (f->mu held). */
static void answer_deferred(struct fwd *f)
{
    if (!f->want_answer || f->answered || !f->r)
        return;
    answer(f);
    struct sl_req *r = f->r;
    pthread_mutex_unlock(&f->mu);
    sl_req_deferred_done(r);
    pthread_mutex_lock(&f->mu);
}

/* ---- the client's body ---- */

ssize_t fwd_take(struct sl_req *r, const char *data, size_t n)
{
    struct fwd *f = r->ctx;
    pthread_mutex_lock(&f->mu);
    if (f->done || f->hdrs_done) { /* the peer answered already: what is left is not read */
        pthread_mutex_unlock(&f->mu);
        return (ssize_t)n;
    }
    size_t k = fwd_ring_put(&f->in, data, n);
    bool kk = false;
    if (k && f->rd_paused)
        kk = f->kick = true, f->rd_paused = false;
    if (k < n) {
        f->in_susp = true;
        sl_conn_suspend(r->conn);
    }
    pthread_mutex_unlock(&f->mu);
    if (kk)
        kick(f);
    return (ssize_t)k;
}

void fwd_body_done(struct sl_req *r)
{
    struct fwd *f = r->ctx;
    pthread_mutex_lock(&f->mu);
    f->in_end = true;
    bool k = false;
    if (f->rd_paused) /* the end of the body is news too */
        k = f->kick = true, f->rd_paused = false;
    if (f->hdrs_done || f->done) {
        answer(f);
    } else {
        f->want_answer = true;
        sl_req_defer(r);
    }
    pthread_mutex_unlock(&f->mu);
    if (k)
        kick(f);
}

void fwd_cleanup(struct sl_req *r, bool completed)
{
    (void)completed;
    struct fwd *f = r->ctx;
    pthread_mutex_lock(&f->mu);
    f->r = NULL;
    f->in_susp = f->out_susp = false; /* (nothing left to resume) */
    bool k = false;
    if (f->rd_paused || f->wr_paused) { /* unpaused, it sees the client gone and ends */
        f->rd_paused = false;
        k = out_unpause(f);
    } else if (f->ops->gone) {
        f->ops->gone(f);
    }
    pthread_mutex_unlock(&f->mu);
    r->ctx = NULL;
    if (k)
        kick(f);
    fwd_unref(f);
}

/* ---- what the transports report ---- */

/* The peer's status and headers are all in (f->mu held). */
void fwd_hdrs_complete(struct fwd *f)
{
    f->hdrs_done = true;
    if (!f->out.b && !f->head) { /* sized to the body when it is small: a 1 KiB GET needs no 512 KiB */
        size_t cap = FWD_RING_SZ;
        if (f->resp_len > 0 && f->resp_len <= FWD_SMALL_SZ)
            cap = (size_t)f->resp_len; /* whole, it becomes the response's body as it is */
        else if (f->resp_len >= 0 && (uint64_t)f->resp_len < FWD_RING_SZ)
            cap = f->resp_len < 4096 ? 4096 : (size_t)f->resp_len;
        fwd_ring_alloc(&f->out, cap);
    }
    if (f->head)
        f->discard = true;
    if (f->in_susp && f->r) { /* the rest of the client's body is not wanted */
        f->in_susp = false;
        sl_conn_resume(f->r->conn);
    }
    f->wait_body = !f->head && f->status != 204 && f->status != 304 && f->resp_len > 0 &&
                   f->resp_len <= FWD_SMALL_SZ;
    if (!f->wait_body)
        answer_deferred(f);
}

void fwd_peer_hdr(struct fwd *f, const char *k, size_t kl, const char *v, size_t vl)
{
    sl_buf_add(&f->hdrs, k, kl);
    sl_buf_addc(&f->hdrs, 0);
    sl_buf_add(&f->hdrs, v, vl);
    sl_buf_addc(&f->hdrs, 0);
    f->nh++;
}

void fwd_peer_hdrs_reset(struct fwd *f)
{
    sl_buf_reset(&f->hdrs);
    f->nh = 0;
    f->resp_len = -1;
}

/* Body bytes went into the out ring (f->mu held): a small answer is made
 * once it is whole, a stream waiting for data goes on. */
void fwd_body_in(struct fwd *f)
{
    if (f->wait_body && f->out.len == (size_t)f->resp_len) {
        f->wait_body = false;
        answer_deferred(f); /* the whole small body: one response */
    } else if (f->out_susp && f->r) {
        f->out_susp = false;
        sl_conn_resume(f->r->conn);
    }
}

/* ---- a forward's start and end ---- */

bool fwd_begin(struct fwd *f, pthread_once_t *once, void (*start)(void), const int *n)
{
    pthread_once(once, start);
    pthread_mutex_lock(&act_mu);
    n_active++;
    pthread_mutex_unlock(&act_mu);
    if (*n)
        return true;
    snprintf(f->errmsg, sizeof(f->errmsg), "this node cannot forward requests (no forward thread could start)");
    return false;
}

void fwd_finish(struct fwd *f, bool failed)
{
    pthread_mutex_lock(&f->mu);
    f->done = true;
    if (failed) {
        f->failed = true;
        sl_logw("%s", f->errmsg);
    }
    if (f->r && f->in_susp) {
        f->in_susp = false;
        sl_conn_resume(f->r->conn);
    }
    if (f->r && f->out_susp) {
        f->out_susp = false;
        sl_conn_resume(f->r->conn);
    }
    answer_deferred(f);
    pthread_mutex_unlock(&f->mu);
    fwd_unref(f);
    pthread_mutex_lock(&act_mu);
    n_active--;
    pthread_mutex_unlock(&act_mu);
}

int fwd_active(void)
{
    pthread_mutex_lock(&act_mu);
    int a = n_active;
    pthread_mutex_unlock(&act_mu);
    return a;
}
