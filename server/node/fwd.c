/* SPDX-License-Identifier: MIT
 * fwd.c: see fwd.h.
 *
 * Who does what, all under f->mu:
 *   HTTP thread  take()     client body -> in ring (suspends the client when full)
 *                body_done()/start: the answer now, or deferred to the forward loop
 *                out_read() out ring -> client (suspends the response when empty)
 *                cleanup()  the request is gone: f->r = NULL
 *   loop thread  rd_cb()    in ring -> peer (pauses the transfer when empty)
 *                hdr_cb()   the peer's status and headers; answers a deferred request
 *                wr_cb()    peer body -> out ring (pauses the transfer when full)
 * A side that makes room or data for a paused transfer sets f->kick and
 * wakes its loop, which unpauses it. The loops are libcurl multi handles
 * (curl_multi_poll): one thread runs many transfers, no thread per request,
 * and connections to the peers stay open in the multi's cache.
 * f lives until its last reference: the request (cleanup), the loop, and
 * the response stream.
 */
#include "fwd.h"
#include "log.h"
#include "peer.h"
#include "sec.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define RING_SZ (512 * 1024)
#define SMALL_SZ (64 * 1024)
#define CURL_BUF (128 * 1024)  /* libcurl's receive buffer */   /* answers up to this size go out whole, in one response */

static volatile bool stopping; /* sl_fwd_stop: every transfer ends now */
#define MAX_HDRS 128

struct ring {
    char *b;
    size_t cap, head, len;
};

static void ring_alloc(struct ring *g, size_t cap)
{
    g->b = sl_xmalloc(cap);
    g->cap = cap;
}

static size_t ring_put(struct ring *g, const char *p, size_t n)
{
    size_t k = g->cap - g->len < n ? g->cap - g->len : n;
    size_t tail = (g->head + g->len) % g->cap;
    size_t a = g->cap - tail < k ? g->cap - tail : k;
    memcpy(g->b + tail, p, a);
    memcpy(g->b, p + a, k - a);
    g->len += k;
    return k;
}

static size_t ring_get(struct ring *g, char *p, size_t n)
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

struct fwd {
    pthread_mutex_t mu;
    int refs;
    struct sl_req *r;            /* NULL once the request ended */
    char *url;
    struct curl_slist *hl;
    char method[16];
    bool head, upload;
    int64_t clen;                /* client body length, -1 unknown */
    int64_t timeout_ms;
    sl_fwd_err_fn err_fn;

    struct ring in, out;
    bool in_end, in_susp;        /* client body complete; client suspended for room */
    bool want_answer, answered;  /* deferred: the forward thread answers */
    bool streaming;              /* a response stream reads the out ring */
    bool discard;                /* the answer has no body: drop the peer's */
    bool out_susp;
    bool wait_body;              /* a small answer: made once its whole body is in */

    long status;
    int nh;
    char *hk[MAX_HDRS], *hv[MAX_HDRS];
    bool hdrs_done;
    int64_t resp_len;            /* -1 unknown */
    bool done, failed;
    char errmsg[256];

    struct loop *lp;             /* the loop that runs the transfer */
    CURL *c;
    bool kick;                   /* room or data for a paused transfer: unpause it */
    bool rd_paused, wr_paused;
    int64_t paused_at;           /* sl_mono_ns() when it paused */
};

static void loop_kick(struct loop *L);

static void unref(struct fwd *f)
{
    pthread_mutex_lock(&f->mu);
    int left = --f->refs;
    pthread_mutex_unlock(&f->mu);
    if (left)
        return;
    for (int i = 0; i < f->nh; i++) {
        free(f->hk[i]);
        free(f->hv[i]);
    }
    curl_slist_free_all(f->hl);
    free(f->url);
    free(f->in.b);
    free(f->out.b);
    pthread_mutex_destroy(&f->mu);
    free(f);
}

static bool hop_by_hop(const char *k)
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
    bool kick = false;
    if (f->out.len) {
        n = (ssize_t)ring_get(&f->out, buf, max);
        if (f->wr_paused && f->out.cap - f->out.len >= f->out.cap / 2)
            kick = f->kick = true, f->wr_paused = false;
    } else if (f->done) {
        n = f->failed ? -1 : 0;
    } else {
        sl_conn_suspend(f->r->conn);
        f->out_susp = true;
        n = SL_STREAM_WAIT;
    }
    pthread_mutex_unlock(&f->mu);
    if (kick)
        loop_kick(f->lp);
    return n;
}

static void out_free(void *ctx)
{
    unref(ctx);
}

/* Produce the response (f->mu held; dropped around the sl_resp_* call). */
static void answer(struct fwd *f)
{
    struct sl_req *r = f->r;
    f->answered = true;
    if (!f->hdrs_done) {
        char msg[320];
        snprintf(msg, sizeof(msg), "%s", f->errmsg[0] ? f->errmsg : "the peer gave no answer");
        f->discard = true;
        pthread_mutex_unlock(&f->mu);
        if (f->err_fn)
            f->err_fn(r, 502, msg);
        else
            sl_resp_errf(r, SL_EUNAVAIL, "%s; retry", msg);
        pthread_mutex_lock(&f->mu);
        return;
    }
    for (int i = 0; i < f->nh; i++)
        if (!hop_by_hop(f->hk[i]) && strcasecmp(f->hk[i], "Date") && strcasecmp(f->hk[i], "X-Request-Id"))
            sl_hdr_add(r, f->hk[i], f->hv[i]);
    int status = (int)f->status;
    if (f->head || status == 204 || status == 304 || f->resp_len == 0) {
        f->discard = true;
        uint64_t len = f->resp_len > 0 ? (uint64_t)f->resp_len : 0;
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
        char *buf = sl_xmalloc(n);
        ring_get(&f->out, buf, n);
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

static ssize_t take(struct sl_req *r, const char *data, size_t n)
{
    struct fwd *f = r->ctx;
    pthread_mutex_lock(&f->mu);
    if (f->done || f->hdrs_done) { /* the peer answered already: what is left is not read */
        pthread_mutex_unlock(&f->mu);
        return (ssize_t)n;
    }
    size_t k = ring_put(&f->in, data, n);
    bool kick = false;
    if (k && f->rd_paused)
        kick = f->kick = true, f->rd_paused = false;
    if (k < n) {
        f->in_susp = true;
        sl_conn_suspend(r->conn);
    }
    pthread_mutex_unlock(&f->mu);
    if (kick)
        loop_kick(f->lp);
    return (ssize_t)k;
}

static void body_done(struct sl_req *r)
{
    struct fwd *f = r->ctx;
    pthread_mutex_lock(&f->mu);
    f->in_end = true;
    bool kick = false;
    if (f->rd_paused) /* the end of the body is news too */
        kick = f->kick = true, f->rd_paused = false;
    if (f->hdrs_done || f->done) {
        answer(f);
    } else {
        f->want_answer = true;
        sl_req_defer(r);
    }
    pthread_mutex_unlock(&f->mu);
    if (kick)
        loop_kick(f->lp);
}

static void cleanup(struct sl_req *r, bool completed)
{
    (void)completed;
    struct fwd *f = r->ctx;
    pthread_mutex_lock(&f->mu);
    f->r = NULL;
    bool kick = false;
    if (f->rd_paused || f->wr_paused) /* unpaused, it sees the client gone and ends */
        kick = f->kick = true, f->rd_paused = f->wr_paused = false;
    pthread_mutex_unlock(&f->mu);
    r->ctx = NULL;
    if (kick)
        loop_kick(f->lp);
    unref(f);
}

/* ---- the loop thread: libcurl callbacks (never block) ---- */

static size_t rd_cb(char *buf, size_t size, size_t nitems, void *ud)
{
    struct fwd *f = ud;
    size_t max = size * nitems, n = 0;
    pthread_mutex_lock(&f->mu);
    if (!f->r) {
        pthread_mutex_unlock(&f->mu);
        return CURL_READFUNC_ABORT; /* the client went away mid-body */
    }
    if (!f->in.len && !f->in_end) {
        f->rd_paused = true;
        f->paused_at = sl_mono_ns();
        pthread_mutex_unlock(&f->mu);
        return CURL_READFUNC_PAUSE;
    }
    n = ring_get(&f->in, buf, max);
    if (f->in_susp && f->in.cap - f->in.len >= f->in.cap / 2) {
        f->in_susp = false;
        sl_conn_resume(f->r->conn);
    }
    pthread_mutex_unlock(&f->mu);
    return n;
}

static size_t hdr_cb(char *buf, size_t size, size_t nitems, void *ud)
{
    struct fwd *f = ud;
    size_t n = size * nitems, len = n;
    while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
        len--;
    pthread_mutex_lock(&f->mu);
    if (len >= 5 && !strncmp(buf, "HTTP/", 5)) {
        const char *sp = memchr(buf, ' ', len);
        f->status = sp ? strtol(sp + 1, NULL, 10) : 0;
        for (int i = 0; i < f->nh; i++) {
            free(f->hk[i]);
            free(f->hv[i]);
        }
        f->nh = 0;
        f->resp_len = -1;
    } else if (len == 0) {
        if (f->status >= 200) {
            f->hdrs_done = true;
            if (!f->out.b) { /* sized to the body when it is small: a 1 KiB GET needs no 512 KiB */
                size_t cap = RING_SZ;
                if (f->resp_len >= 0 && (uint64_t)f->resp_len < RING_SZ)
                    cap = f->resp_len < 4096 ? 4096 : (size_t)f->resp_len;
                ring_alloc(&f->out, cap);
            }
            if (f->head)
                f->discard = true;
            if (f->in_susp && f->r) { /* the rest of the client's body is not wanted */
                f->in_susp = false;
                sl_conn_resume(f->r->conn);
            }
            f->wait_body = !f->head && f->status != 204 && f->status != 304 && f->resp_len > 0 &&
                           f->resp_len <= SMALL_SZ;
            if (!f->wait_body)
                answer_deferred(f);
        }
    } else {
        const char *colon = memchr(buf, ':', len);
        if (colon && f->nh < MAX_HDRS) {
            const char *v = colon + 1;
            while (v < buf + len && (*v == ' ' || *v == '\t'))
                v++;
            f->hk[f->nh] = sl_xstrndup(buf, (size_t)(colon - buf));
            f->hv[f->nh] = sl_xstrndup(v, (size_t)(buf + len - v));
            if (!strcasecmp(f->hk[f->nh], "Content-Length"))
                f->resp_len = strtoll(f->hv[f->nh], NULL, 10);
            f->nh++;
        }
    }
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* All of the peer's bytes or none: libcurl keeps a paused write and hands
 * it over again once the transfer is unpaused. */
static size_t wr_cb(char *data, size_t size, size_t nmemb, void *ud)
{
    struct fwd *f = ud;
    size_t n = size * nmemb;
    pthread_mutex_lock(&f->mu);
    if (!f->r || f->discard) { /* no client: stop; no body wanted: drop it */
        size_t rc = f->r ? n : 0;
        pthread_mutex_unlock(&f->mu);
        return rc;
    }
    if (!f->out.b)
        ring_alloc(&f->out, RING_SZ);
    if (n > f->out.cap) { /* more than the peer's Content-Length said */
        snprintf(f->errmsg, sizeof(f->errmsg), "the peer sent more than its Content-Length");
        pthread_mutex_unlock(&f->mu);
        return 0;
    }
    if (f->out.cap - f->out.len < n) {
        f->wr_paused = true;
        f->paused_at = sl_mono_ns();
        pthread_mutex_unlock(&f->mu);
        return CURL_WRITEFUNC_PAUSE;
    }
    ring_put(&f->out, data, n);
    if (f->wait_body && f->out.len == (size_t)f->resp_len) {
        f->wait_body = false;
        answer_deferred(f); /* the whole small body: one response */
    } else if (f->out_susp) {
        f->out_susp = false;
        sl_conn_resume(f->r->conn);
    }
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* ---- the loops ---- */

#define MAX_LOOPS 4
#define TICK_MS 200 /* how often paused transfers are checked for their idle limit */

struct loop {
    pthread_t th;
    CURLM *m;
    pthread_mutex_t mu;        /* q and kicked */
    struct fwd **q;            /* new transfers */
    int qn, qcap;
    bool kicked;
    struct fwd **act;          /* running: the loop thread's own */
    int an, acap;
    CURL **spare;              /* easy handles to reuse */
    int sn, scap;
};

static struct loop loops[MAX_LOOPS];
static int n_loops;
static pthread_once_t loops_once = PTHREAD_ONCE_INIT;
static unsigned rr;            /* round robin over the loops */
static pthread_mutex_t act_mu = PTHREAD_MUTEX_INITIALIZER;
static int n_active;           /* forwards between sl_fwd and their end */

static void loop_kick(struct loop *L)
{
    pthread_mutex_lock(&L->mu);
    L->kicked = true;
    pthread_mutex_unlock(&L->mu);
    curl_multi_wakeup(L->m);
}

static void grow(void *pp, int *cap, int need, size_t esz)
{
    if (need <= *cap)
        return;
    *cap = *cap ? *cap * 2 : 64;
    if (*cap < need)
        *cap = need;
    *(void **)pp = sl_xrealloc(*(void **)pp, (size_t)*cap * esz);
}

static void setup(struct fwd *f, CURL *c)
{
    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_PRIVATE, f);
    curl_easy_setopt(c, CURLOPT_URL, f->url);
    curl_easy_setopt(c, CURLOPT_PATH_AS_IS, 1L); /* the request target as signed */
    sl_peer_tls_opts(c);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L); /* a paused transfer is not judged by it */
    curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)(f->timeout_ms / 1000 + 1));
    curl_easy_setopt(c, CURLOPT_BUFFERSIZE, (long)CURL_BUF); /* fewer, larger hand-overs to and from the rings */
    curl_easy_setopt(c, CURLOPT_UPLOAD_BUFFERSIZE, (long)CURL_BUF);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, f->hl);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, hdr_cb);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, f);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wr_cb);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
    if (f->head) {
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    } else if (f->upload) {
        curl_easy_setopt(c, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(c, CURLOPT_READFUNCTION, rd_cb);
        curl_easy_setopt(c, CURLOPT_READDATA, f);
        if (f->clen >= 0)
            curl_easy_setopt(c, CURLOPT_INFILESIZE_LARGE, (curl_off_t)f->clen);
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, f->method);
    } else {
        curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, f->method);
    }
}

/* The transfer ended (rc), or was ended by the loop: answer or cut the
 * client, and drop the loop's reference. */
static void finish(struct fwd *f, CURLcode rc)
{
    pthread_mutex_lock(&f->mu);
    f->done = true;
    if (rc != CURLE_OK) {
        f->failed = true;
        if (!f->errmsg[0])
            snprintf(f->errmsg, sizeof(f->errmsg), "forward to %.160s: %s", f->url, curl_easy_strerror(rc));
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
    unref(f);
    pthread_mutex_lock(&act_mu);
    n_active--;
    pthread_mutex_unlock(&act_mu);
}

/* Take transfer i out of the loop (the loop thread, outside callbacks). */
static void retire(struct loop *L, int i, CURLcode rc)
{
    struct fwd *f = L->act[i];
    L->act[i] = L->act[--L->an];
    curl_multi_remove_handle(L->m, f->c);
    grow(&L->spare, &L->scap, L->sn + 1, sizeof(CURL *));
    L->spare[L->sn++] = f->c;
    f->c = NULL;
    finish(f, rc);
}

static void *loop_main(void *arg)
{
    struct loop *L = arg;
    int64_t next_tick = 0;
    for (;;) {
        pthread_mutex_lock(&L->mu);
        int qn = L->qn;
        struct fwd *nq[64];
        if (qn > (int)SL_ARRAY_SIZE(nq))
            qn = (int)SL_ARRAY_SIZE(nq);
        if (qn) {
            memcpy(nq, L->q, (size_t)qn * sizeof(*nq));
            memmove(L->q, L->q + qn, (size_t)(L->qn - qn) * sizeof(*nq));
            L->qn -= qn;
        }
        bool more = L->qn > 0, kicked = L->kicked;
        L->kicked = false;
        pthread_mutex_unlock(&L->mu);

        for (int i = 0; i < qn; i++) {
            struct fwd *f = nq[i];
            CURL *c = L->sn ? L->spare[--L->sn] : curl_easy_init();
            if (!c) {
                finish(f, CURLE_OUT_OF_MEMORY);
                continue;
            }
            f->c = c;
            setup(f, c);
            grow(&L->act, &L->acap, L->an + 1, sizeof(*L->act));
            L->act[L->an++] = f;
            curl_multi_add_handle(L->m, c);
        }
        if (kicked) {
            for (int i = 0; i < L->an; i++) {
                struct fwd *f = L->act[i];
                pthread_mutex_lock(&f->mu);
                bool k = f->kick;
                f->kick = false;
                pthread_mutex_unlock(&f->mu);
                if (k) /* may call the callbacks at once: f->mu is not held */
                    curl_easy_pause(f->c, CURLPAUSE_CONT);
            }
        }
        int running = 0;
        curl_multi_perform(L->m, &running);
        CURLMsg *msg;
        int left;
        while ((msg = curl_multi_info_read(L->m, &left))) {
            if (msg->msg != CURLMSG_DONE)
                continue;
            for (int i = 0; i < L->an; i++)
                if (L->act[i]->c == msg->easy_handle) {
                    retire(L, i, msg->data.result);
                    break;
                }
        }
        int64_t now = sl_mono_ns();
        if (now >= next_tick || stopping) {
            next_tick = now + TICK_MS * 1000000LL;
            for (int i = L->an - 1; i >= 0; i--) {
                struct fwd *f = L->act[i];
                pthread_mutex_lock(&f->mu);
                bool end = stopping;
                if (!end && (f->rd_paused || f->wr_paused) && now - f->paused_at > f->timeout_ms * 1000000LL) {
                    snprintf(f->errmsg, sizeof(f->errmsg), "the client %s for %lld ms",
                             f->rd_paused ? "sent no data" : "read nothing", (long long)f->timeout_ms);
                    end = true;
                }
                pthread_mutex_unlock(&f->mu);
                if (end)
                    retire(L, i, CURLE_ABORTED_BY_CALLBACK);
            }
        }
        if (!more)
            curl_multi_poll(L->m, NULL, 0, TICK_MS, NULL);
    }
    return NULL;
}

static void loops_start(void)
{
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    int want = nc < 1 ? 1 : nc > MAX_LOOPS ? MAX_LOOPS : (int)nc;
    for (int i = 0; i < want; i++) {
        struct loop *L = &loops[n_loops];
        pthread_mutex_init(&L->mu, NULL);
        L->m = curl_multi_init();
        if (!L->m) {
            sl_loge("forward: curl_multi_init failed");
            break;
        }
        curl_multi_setopt(L->m, CURLMOPT_MAXCONNECTS, 1024L);
        if (pthread_create(&L->th, NULL, loop_main, L) != 0) {
            sl_loge("forward: cannot start a loop thread: %s", strerror(errno));
            curl_multi_cleanup(L->m);
            break;
        }
        pthread_detach(L->th);
        n_loops++;
    }
}

static void submit(struct fwd *f)
{
    pthread_once(&loops_once, loops_start);
    pthread_mutex_lock(&act_mu);
    n_active++;
    pthread_mutex_unlock(&act_mu);
    if (!n_loops) {
        snprintf(f->errmsg, sizeof(f->errmsg), "this node cannot forward requests (no forward thread could start)");
        finish(f, CURLE_FAILED_INIT);
        return;
    }
    struct loop *L = &loops[__atomic_fetch_add(&rr, 1, __ATOMIC_RELAXED) % (unsigned)n_loops];
    f->lp = L;
    pthread_mutex_lock(&L->mu);
    grow(&L->q, &L->qcap, L->qn + 1, sizeof(*L->q));
    L->q[L->qn++] = f;
    pthread_mutex_unlock(&L->mu);
    curl_multi_wakeup(L->m);
}

struct hctx {
    struct curl_slist *hl;
    bool has_ct;
};

static void add_hdr(void *arg, const char *k, const char *v)
{
    struct hctx *h = arg;
    if (hop_by_hop(k) || !strcasecmp(k, SL_SEC_HDR) || !strcasecmp(k, SL_SEC_BODY_HDR))
        return;
    if (!strcasecmp(k, "Content-Type"))
        h->has_ct = true;
    char *line = *v ? sl_xasprintf("%s: %s", k, v) : sl_xasprintf("%s;", k); /* "Name;" sends an empty value */
    h->hl = curl_slist_append(h->hl, line);
    free(line);
}

void sl_fwd(struct sl_req *r, const struct sl_fwd_opts *o, sl_fwd_err_fn err_fn)
{
    struct fwd *f = sl_xcalloc(1, sizeof(*f));
    pthread_mutex_init(&f->mu, NULL);
    f->refs = 2; /* the request and the forward thread */
    f->r = r;
    f->url = sl_xstrdup(o->url);
    f->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 120000;
    f->err_fn = err_fn;
    snprintf(f->method, sizeof(f->method), "%s", r->method_str);
    f->head = r->method == SL_M_HEAD;
    f->resp_len = -1;
    bool body = r->in_headers; /* a bodiless request is dispatched on its final call */
    f->upload = body || r->method == SL_M_PUT || r->method == SL_M_POST;
    f->clen = body ? r->content_length : 0;
    if (body && f->clen <= 0)
        f->clen = -1;
    if (body)
        ring_alloc(&f->in, RING_SZ);
    struct hctx h = { NULL, false };
    sl_req_headers_each(r, add_hdr, &h);
    for (int i = 0; o->hdrs && o->hdrs[i]; i++)
        h.hl = curl_slist_append(h.hl, o->hdrs[i]);
    char sig[256];
    sl_sec_header(f->method, f->url, NULL, sig, sizeof(sig)); /* (a streamed body: not bound) */
    if (sig[0])
        h.hl = curl_slist_append(h.hl, sig);
    h.hl = curl_slist_append(h.hl, "Expect:");
    if (!h.has_ct)
        h.hl = curl_slist_append(h.hl, "Content-Type:"); /* no libcurl default for a POST */
    if (f->upload && f->clen < 0)
        h.hl = curl_slist_append(h.hl, "Transfer-Encoding: chunked");
    f->hl = h.hl;
    r->ctx = f;
    r->on_cleanup = cleanup;
    if (body) {
        f->in_end = false;
        sl_req_stream_body_bp(r, take, body_done);
    } else {
        f->in_end = true;
        f->want_answer = true;
        sl_req_defer(r);
    }
    submit(f);
}

void sl_fwd_stop(int64_t timeout_ms)
{
    stopping = true;
    for (int i = 0; i < n_loops; i++)
        curl_multi_wakeup(loops[i].m);
    int64_t dl = sl_mono_ns() + timeout_ms * 1000000LL;
    for (;;) {
        pthread_mutex_lock(&act_mu);
        int a = n_active;
        pthread_mutex_unlock(&act_mu);
        if (!a || sl_mono_ns() > dl) {
            if (a)
                sl_logw("forward: %d transfer(s) still running at shutdown", a);
            return;
        }
        sl_sleep_ms(20);
    }
}
