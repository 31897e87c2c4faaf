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
 * A bodiless request to a plain-HTTP peer takes the direct transport
 * instead (h1_*, below): the HTTP thread sends the request, an epoll loop
 * thread reads the answer (h1_read: status, headers, body -> out ring) and
 * unpausing is watching the connection for input again; a streamed body
 * with a Content-Length is then received by out_read itself (h1_pull).
 * f lives until its last reference: the request (cleanup), the loop, and
 * the response stream.
 */
#include "fwd.h"
#include "log.h"
#include "peer.h"
#include "sec.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
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
    struct sl_buf hdrs;          /* the peer's header fields: nh times "name\0value\0" */
    bool hdrs_done;
    int64_t resp_len;            /* -1 unknown */
    bool done, failed;
    char errmsg[256];

    struct loop *lp;             /* the loop that runs the transfer */
    CURL *c;
    bool kick;                   /* room or data for a paused transfer: unpause it */
    bool rd_paused, wr_paused;
    int64_t paused_at;           /* sl_mono_ns() when it paused */

    /* the direct transport (h1_*): no libcurl, no loop (lp NULL) */
    bool direct;
    struct h1conn *hc;           /* the connection it uses (cleared before it closes) */
    struct sockaddr_in peer;
    struct sl_buf req;           /* the request's bytes */
    size_t req_off;              /* how many of them went out */
    struct sl_buf hb;            /* the answer's status line and headers so far */
    bool bad;                    /* the peer's answer was malformed: 502, not 503 */
    bool idem;                   /* GET, HEAD or DELETE: may go twice (h1_may_retry) */
    bool retried;                /* a kept connection failed under it: it went once more on a new one */
    bool keep;                   /* the connection may serve another request afterwards */
    bool to_eof;                 /* no Content-Length and not chunked: the body ends at the close */
    bool chunked;
    int interim;                 /* 1xx answers skipped */
    int ck_state;                /* chunked decoding (CK_*) */
    uint64_t ck_left;            /* see h1_chunked */
    size_t ck_line;
    int64_t got;                 /* body bytes received (decoded) */
    int64_t last_io;             /* sl_mono_ns() of the last byte from the peer */
    bool pull;                   /* out_read receives the body itself (h1_pull) */
    int pull_end;                /* and has it all (H1_DONE) or saw it break (H1_FAIL) */
};

static void loop_kick(struct loop *L);
static void h1_want(struct h1conn *c, uint32_t ev);
static void h1_also(struct h1conn *c, uint32_t ev);
static ssize_t h1_pull(struct fwd *f, char *buf, size_t max);

/* Room in the out ring again for a transfer paused on it (f->mu held):
 * true when its libcurl loop must be kicked (the direct transport's
 * connection is simply watched for input again, if the loop has not
 * ended the forward and let the connection go already). */
static bool out_unpause(struct fwd *f)
{
    f->wr_paused = false;
    if (f->direct) {
        if (f->hc) {
            f->last_io = sl_mono_ns(); /* (the peer's silence is timed from here) */
            h1_want(f->hc, EPOLLIN);
        }
        return false;
    }
    return f->kick = true;
}

static void unref(struct fwd *f)
{
    pthread_mutex_lock(&f->mu);
    int left = --f->refs;
    pthread_mutex_unlock(&f->mu);
    if (left)
        return;
    sl_buf_free(&f->hdrs);
    curl_slist_free_all(f->hl);
    sl_buf_free(&f->req);
    sl_buf_free(&f->hb);
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
            kick = out_unpause(f);
    } else if (f->pull && !f->pull_end && f->hc && !f->done) {
        n = h1_pull(f, buf, max);
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
        if (!hop_by_hop(k) && strcasecmp(k, "Date") && strcasecmp(k, "X-Request-Id"))
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
            ring_get(&f->out, buf, n);
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
    f->in_susp = f->out_susp = false; /* (nothing left to resume) */
    bool kick = false;
    if (f->rd_paused || f->wr_paused) { /* unpaused, it sees the client gone and ends */
        f->rd_paused = false;
        kick = out_unpause(f);
    } else if (f->pull && f->hc) { /* (the rest of the body is there or coming: an event) */
        h1_also(f->hc, EPOLLIN); /* not narrowed: the EPOLLOUT of a pull_end wakes the loop */
    }
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

/* The peer's status and headers are all in (f->mu held). */
static void hdrs_complete(struct fwd *f)
{
    f->hdrs_done = true;
    if (!f->out.b && !f->head) { /* sized to the body when it is small: a 1 KiB GET needs no 512 KiB */
        size_t cap = RING_SZ;
        if (f->resp_len > 0 && f->resp_len <= SMALL_SZ)
            cap = (size_t)f->resp_len; /* whole, it becomes the response's body as it is */
        else if (f->resp_len >= 0 && (uint64_t)f->resp_len < RING_SZ)
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

static void peer_hdr(struct fwd *f, const char *k, size_t kl, const char *v, size_t vl)
{
    sl_buf_add(&f->hdrs, k, kl);
    sl_buf_addc(&f->hdrs, 0);
    sl_buf_add(&f->hdrs, v, vl);
    sl_buf_addc(&f->hdrs, 0);
    f->nh++;
}

static void peer_hdrs_reset(struct fwd *f)
{
    sl_buf_reset(&f->hdrs);
    f->nh = 0;
    f->resp_len = -1;
}

/* Body bytes went into the out ring (f->mu held): a small answer is made
 * once it is whole, a stream waiting for data goes on. */
static void body_in(struct fwd *f)
{
    if (f->wait_body && f->out.len == (size_t)f->resp_len) {
        f->wait_body = false;
        answer_deferred(f); /* the whole small body: one response */
    } else if (f->out_susp && f->r) {
        f->out_susp = false;
        sl_conn_resume(f->r->conn);
    }
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
        peer_hdrs_reset(f);
    } else if (len == 0) {
        if (f->status >= 200)
            hdrs_complete(f);
    } else {
        const char *colon = memchr(buf, ':', len);
        if (colon && f->nh < MAX_HDRS) {
            const char *v = colon + 1;
            while (v < buf + len && (*v == ' ' || *v == '\t'))
                v++;
            peer_hdr(f, buf, (size_t)(colon - buf), v, (size_t)(buf + len - v));
            if (colon - buf == 14 && !strncasecmp(buf, "Content-Length", 14))
                f->resp_len = strtoll(v, NULL, 10);
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
    body_in(f);
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
    if (!L) /* (a direct forward has none) */
        return;
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

/* The transfer ended (failed: f->errmsg says why), or was ended by its
 * loop: answer or cut the client, and drop the loop's reference. */
static void finish(struct fwd *f, bool failed)
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
    unref(f);
    pthread_mutex_lock(&act_mu);
    n_active--;
    pthread_mutex_unlock(&act_mu);
}

static void curl_finish(struct fwd *f, CURLcode rc)
{
    if (rc != CURLE_OK && !f->errmsg[0]) /* (f->errmsg is written by the loop thread alone by now) */
        snprintf(f->errmsg, sizeof(f->errmsg), "forward to %.160s: %s", f->url, curl_easy_strerror(rc));
    finish(f, rc != CURLE_OK);
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
    curl_finish(f, rc);
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
                curl_finish(f, CURLE_OUT_OF_MEMORY);
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

/* loop threads of a transport: one per core, up to MAX_LOOPS */
static int loops_wanted(void)
{
    long nc = sysconf(_SC_NPROCESSORS_ONLN);
    return nc < 1 ? 1 : nc > MAX_LOOPS ? MAX_LOOPS : (int)nc;
}

static void loops_start(void)
{
    int want = loops_wanted();
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

/* A forward starts on a transport whose loops are started once: false
 * when none could start (f->errmsg says so; the caller finishes f). */
static bool begin(struct fwd *f, pthread_once_t *once, void (*start)(void), const int *n)
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

static void submit(struct fwd *f)
{
    if (!begin(f, &loops_once, loops_start, &n_loops)) {
        curl_finish(f, CURLE_FAILED_INIT);
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

/* ---- the direct transport ----
 * A bodiless request (GET, HEAD, DELETE) to a plain-HTTP peer named by its
 * IPv4 address skips libcurl: per request libcurl resets and sets up an
 * easy handle, checks a kept connection with a poll, and its loop is woken
 * by the HTTP thread; that was more than half of the gateway's CPU for a
 * 1 KiB GET (perf, 32 clients). Here the HTTP thread writes the request on
 * a kept connection itself (a non-blocking send of a few hundred bytes),
 * and a loop thread (epoll, one per core up to 4) reads the answer into the
 * out ring and resumes the client once: one hand-over instead of three.
 * The answer is parsed strictly and within bounds (H1_HDR_MAX of headers,
 * MAX_HDRS fields, Content-Length or chunked or up to the close): anything
 * else ends the forward with a 502 that says what the peer sent. The parser
 * is our own on purpose: the one Debian 12 packages (nodejs http-parser
 * 2.9.4; llhttp is not packaged) is unmaintained since 2020 and built
 * lenient, and a version of this file on it passed the first bytes of a
 * chunk longer than its size to the client as the body, and a chunked body
 * with its framing when "chunked" was followed by a tab (test_s3_forward
 * test_framing_edges), and the glue around it was as long as this parser.
 * Connections belong to one loop, which alone closes and frees them; a
 * connection is idle (in its peer's list, c->f NULL) or serves one forward
 * (c->f, f->hc), both changed under h1_mu. */

#define H1_HDR_MAX (32 * 1024)    /* the peer's status line and header fields */
#define H1_IDLE_MAX 64            /* kept connections per peer */
#define H1_SCRATCH (128 * 1024)   /* what one recv reads at most */
#define H1_LINE_MAX 1024          /* a chunk-size line; a trailer is held to H1_HDR_MAX */
#define H1_CONNECT_MS 5000
#define H1_INTERIM_MAX 8          /* 1xx answers before the final one */

enum { CK_SIZE, CK_EXT, CK_SIZE_LF, CK_DATA, CK_DATA_CR, CK_DATA_LF, CK_TRAILER, CK_TRAILER_LF, CK_DONE };

struct h1peer {
    struct sockaddr_in sa;
    struct h1conn *idle[H1_IDLE_MAX];
    int ni;
    struct h1peer *next;
};

struct h1loop {
    int ep;
    pthread_mutex_t mu;           /* c, n */
    struct h1conn **c;            /* every connection of this loop */
    int n, cap;
    char *scratch;
};

struct h1conn {
    int fd;
    struct h1loop *lp;
    struct h1peer *p;
    struct fwd *f;
    bool connecting;              /* connect() in progress */
    bool reused;                  /* served an answer before: the peer may have closed it meanwhile */
    bool closed;                  /* freed at the end of the loop's batch of events */
    uint32_t ev;                  /* the events epoll watches for */
    int64_t t0;                   /* when it was opened */
};

static pthread_mutex_t h1_mu = PTHREAD_MUTEX_INITIALIZER;
static struct h1peer *h1_peers;
static struct h1loop h1_loops[MAX_LOOPS];
static int n_h1;
static pthread_once_t h1_once = PTHREAD_ONCE_INIT;
static unsigned h1_rr;

/* "http://A.B.C.D:PORT/..." -> sa; anything else goes through libcurl */
static bool h1_addr(const char *url, struct sockaddr_in *sa)
{
    if (strncmp(url, "http://", 7))
        return false;
    const char *h = url + 7, *colon = strchr(h, ':');
    char ip[INET_ADDRSTRLEN];
    if (!colon || (size_t)(colon - h) >= sizeof(ip))
        return false;
    memcpy(ip, h, (size_t)(colon - h));
    ip[colon - h] = 0;
    char *end;
    long port = strtol(colon + 1, &end, 10);
    memset(sa, 0, sizeof(*sa));
    sa->sin_family = AF_INET;
    sa->sin_port = htons((uint16_t)port);
    return *end == '/' && port > 0 && port < 65536 && inet_pton(AF_INET, ip, &sa->sin_addr) == 1;
}

static void h1_want(struct h1conn *c, uint32_t ev)
{
    if (c->ev == ev)
        return;
    c->ev = ev;
    struct epoll_event e = { .events = ev ? ev | EPOLLRDHUP : 0, .data.ptr = c }; /* 0: paused */
    epoll_ctl(c->lp->ep, EPOLL_CTL_MOD, c->fd, &e);
}

/* Watch for ev as well as for what c waits for already. */
static void h1_also(struct h1conn *c, uint32_t ev)
{
    h1_want(c, c->ev | ev);
}

/* The loop thread, with h1_mu held or c unreachable from other threads. */
static void h1_close(struct h1conn *c)
{
    struct h1loop *L = c->lp;
    epoll_ctl(L->ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    c->closed = true;
}

/* An idle connection to f's peer, or a new one (connect in progress);
 * c->f = f. NULL with f->errmsg set. Any thread. */
static struct h1conn *h1_take(struct fwd *f)
{
    pthread_mutex_lock(&h1_mu);
    struct h1peer *p = h1_peers;
    while (p && (p->sa.sin_addr.s_addr != f->peer.sin_addr.s_addr || p->sa.sin_port != f->peer.sin_port))
        p = p->next;
    if (!p) {
        p = sl_xcalloc(1, sizeof(*p));
        p->sa = f->peer;
        p->next = h1_peers;
        h1_peers = p;
    }
    while (p->ni) {
        struct h1conn *c = p->idle[--p->ni];
        char b;
        if (recv(c->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) < 0 && errno == EAGAIN) {
            c->f = f;
            pthread_mutex_unlock(&h1_mu);
            return c;
        }
        /* Bytes nobody asked for (a body after a HEAD's headers, more than
         * a Content-Length), a close or an error the loop has not seen yet:
         * they would be read as f's answer. Off the idle list, c->f NULL:
         * the loop's pending event for them closes it (h1_event). */
    }
    pthread_mutex_unlock(&h1_mu);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0 || (connect(fd, (struct sockaddr *)&f->peer, sizeof(f->peer)) < 0 && errno != EINPROGRESS)) {
        snprintf(f->errmsg, sizeof(f->errmsg), "forward to %.160s: cannot connect: %s", f->url, strerror(errno));
        if (fd >= 0)
            close(fd);
        return NULL;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    struct h1conn *c = sl_xcalloc(1, sizeof(*c));
    c->fd = fd;
    c->p = p;
    c->f = f;
    c->connecting = true;
    c->t0 = sl_mono_ns();
    c->lp = &h1_loops[__atomic_fetch_add(&h1_rr, 1, __ATOMIC_RELAXED) % (unsigned)n_h1];
    pthread_mutex_lock(&c->lp->mu);
    grow(&c->lp->c, &c->lp->cap, c->lp->n + 1, sizeof(*c->lp->c));
    c->lp->c[c->lp->n++] = c;
    pthread_mutex_unlock(&c->lp->mu);
    c->ev = EPOLLIN | EPOLLOUT;
    struct epoll_event e = { .events = c->ev | EPOLLRDHUP, .data.ptr = c };
    epoll_ctl(c->lp->ep, EPOLL_CTL_ADD, fd, &e);
    return c;
}

/* Send what is left of the request (f->mu held; any thread): the rest
 * waits for the socket to take it. */
static void h1_send(struct fwd *f)
{
    struct h1conn *c = f->hc;
    while (!c->connecting && f->req_off < f->req.len) {
        ssize_t n = send(c->fd, f->req.p + f->req_off, f->req.len - f->req_off, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n <= 0)
            break; /* EAGAIN, or an error the loop sees as EPOLLERR/EPOLLHUP */
        f->req_off += (size_t)n;
    }
    if (f->req_off < f->req.len && !c->connecting)
        h1_want(c, EPOLLIN | EPOLLOUT);
}

/* Attach a connection and send (f->mu held). false: none (f->errmsg). */
static bool h1_go(struct fwd *f)
{
    struct h1conn *c = h1_take(f);
    if (!c)
        return false;
    f->hc = c;
    f->req_off = 0;
    f->last_io = sl_mono_ns();
    h1_send(f);
    return true;
}

static int h1_bad(struct fwd *f, const char *what)
{
    f->bad = true;
    snprintf(f->errmsg, sizeof(f->errmsg), "forward to %.160s: the peer's answer is malformed (%s)", f->url, what);
    return -1;
}

static bool tchar(int ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
           (ch && strchr("!#$%&'*+-.^_`|~", ch));
}

/* A Connection value (a token list: "keep-alive, close") names close. */
static bool h1_has_close(const char *p, size_t n)
{
    const char *e = p + n;
    while (p < e) {
        while (p < e && (*p == ',' || *p == ' ' || *p == '\t'))
            p++;
        const char *t = p;
        while (p < e && *p != ',' && *p != ' ' && *p != '\t')
            p++;
        if (p - t == 5 && !strncasecmp(t, "close", 5))
            return true;
    }
    return false;
}

/* One header field line [p, e) (no CRLF). */
static int h1_field(struct fwd *f, const char *p, const char *e, bool *te_seen)
{
    const char *k = p;
    while (p < e && tchar((unsigned char)*p))
        p++;
    if (p == k || p == e || *p != ':')
        return h1_bad(f, "a header line that is not \"Name: value\"");
    size_t kl = (size_t)(p - k);
    p++;
    while (p < e && (*p == ' ' || *p == '\t'))
        p++;
    while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
        e--;
    for (const char *q = p; q < e; q++)
        if ((unsigned char)*q < 0x20 && *q != '\t')
            return h1_bad(f, "a control character in a header value");
    if (f->nh == MAX_HDRS)
        return h1_bad(f, "more than 128 header fields");
    size_t vl = (size_t)(e - p);
    if (kl == 14 && !strncasecmp(k, "Content-Length", kl)) {
        uint64_t v = 0;
        size_t i = 0;
        while (i < vl && i < 18 && isdigit((unsigned char)p[i]))
            v = v * 10 + (uint64_t)(p[i++] - '0');
        if (!vl || i != vl || (f->resp_len >= 0 && (uint64_t)f->resp_len != v))
            return h1_bad(f, "a Content-Length that is not one decimal number");
        f->resp_len = (int64_t)v;
    } else if (kl == 17 && !strncasecmp(k, "Transfer-Encoding", kl)) {
        if (*te_seen || vl != 7 || strncasecmp(p, "chunked", 7))
            return h1_bad(f, "a Transfer-Encoding other than chunked");
        *te_seen = true;
    } else if (kl == 10 && !strncasecmp(k, "Connection", kl) && h1_has_close(p, vl)) {
        f->keep = false;
    }
    peer_hdr(f, k, kl, p, vl);
    return 0;
}

/* The status line and header fields in f->hb, up to the blank line at
 * hend. 0, 1 for an interim (1xx) answer to skip, -1 malformed. */
static int h1_head(struct fwd *f, const char *hend)
{
    const char *p = f->hb.p, *e = memchr(p, '\r', (size_t)(hend - p));
    if (!e || e[1] != '\n' || e - p < 12 || strncmp(p, "HTTP/1.", 7) || (p[7] != '0' && p[7] != '1') ||
        p[8] != ' ' || !isdigit((unsigned char)p[9]) || !isdigit((unsigned char)p[10]) ||
        !isdigit((unsigned char)p[11]) || (e - p > 12 && p[12] != ' '))
        return h1_bad(f, "no \"HTTP/1.x NNN\" status line");
    f->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    if (f->status < 100)
        return h1_bad(f, "a status under 100");
    if (f->status == 101) /* (nobody asked it to switch) */
        return h1_bad(f, "a 101 switch of protocols");
    f->keep = p[7] == '1';
    peer_hdrs_reset(f);
    bool te = false;
    for (p = e + 2; p < hend; p = e + 2) {
        e = memchr(p, '\r', (size_t)(hend - p));
        if (!e || e[1] != '\n')
            return h1_bad(f, "a header line not ended by CRLF");
        if (h1_field(f, p, e, &te) < 0)
            return -1;
    }
    if (f->status < 200) /* (each refreshes last_io: bounded, or a peer could hold f forever) */
        return ++f->interim > H1_INTERIM_MAX ? h1_bad(f, "more than 8 interim (1xx) answers") : 1;
    if (te && f->resp_len >= 0)
        return h1_bad(f, "both Content-Length and Transfer-Encoding");
    bool none = f->head || f->status == 204 || f->status == 304;
    f->chunked = te && !none;
    f->ck_state = CK_SIZE;
    f->ck_left = f->ck_line = 0;
    f->to_eof = !none && !te && f->resp_len < 0;
    if (f->to_eof)
        f->keep = false;
    if (none)
        f->resp_len = f->head ? f->resp_len : 0;
    return 0;
}

/* Decoded body bytes: into the out ring (room was checked; p NULL: recv
 * put them at its tail already), or dropped. */
static int h1_data(struct fwd *f, const char *p, size_t n)
{
    if (f->resp_len >= 0 && !f->chunked && !f->head && (uint64_t)(f->got + (int64_t)n) > (uint64_t)f->resp_len)
        return h1_bad(f, "more body than its Content-Length");
    f->got += (int64_t)n;
    if (!f->discard && n) {
        if (p)
            ring_put(&f->out, p, n);
        else
            f->out.len += n;
        body_in(f);
    }
    return 0;
}

/* Chunked framing around the data (RFC 9112 §7.1), with bounded lines:
 * ck_line counts the bytes of an extension or trailer line, ck_left those
 * left in a chunk and then those of the whole trailer. */
static int h1_chunked(struct fwd *f, const char *p, size_t n)
{
    const char *e = p + n;
    while (p < e && f->ck_state != CK_DONE) {
        char ch = *p;
        switch (f->ck_state) {
        case CK_SIZE:
            if (isxdigit((unsigned char)ch) && f->ck_left < (UINT64_C(1) << 59)) {
                f->ck_left = f->ck_left * 16 + (uint64_t)(isdigit((unsigned char)ch) ? ch - '0' : (ch | 0x20) - 'a' + 10);
                f->ck_line++; /* (digits: a size line needs one) */
                break;
            }
            if ((ch != ';' && ch != '\r') || !f->ck_line)
                return h1_bad(f, "a chunk size that is not hexadecimal");
            f->ck_state = ch == ';' ? CK_EXT : CK_SIZE_LF;
            f->ck_line = 0;
            break;
        case CK_EXT:
            if (ch == '\r')
                f->ck_state = CK_SIZE_LF;
            else if (++f->ck_line > H1_LINE_MAX)
                return h1_bad(f, "a chunk extension over 1 KiB");
            break;
        case CK_SIZE_LF:
            if (ch != '\n')
                return h1_bad(f, "a chunk size line not ended by CRLF");
            f->ck_state = f->ck_left ? CK_DATA : CK_TRAILER;
            f->ck_line = 0;
            break;
        case CK_DATA: {
            size_t k = (size_t)(e - p) < f->ck_left ? (size_t)(e - p) : (size_t)f->ck_left;
            if (h1_data(f, p, k) < 0)
                return -1;
            p += k;
            f->ck_left -= k;
            if (!f->ck_left)
                f->ck_state = CK_DATA_CR;
            continue;
        }
        case CK_DATA_CR:
        case CK_DATA_LF:
            if (ch != (f->ck_state == CK_DATA_CR ? '\r' : '\n'))
                return h1_bad(f, "a chunk not followed by CRLF");
            f->ck_state = f->ck_state == CK_DATA_CR ? CK_DATA_LF : CK_SIZE;
            break;
        case CK_TRAILER: /* trailer fields are dropped */
            if (ch == '\r')
                f->ck_state = CK_TRAILER_LF;
            else if (++f->ck_left > H1_HDR_MAX)
                return h1_bad(f, "trailer fields over 32 KiB");
            else
                f->ck_line++;
            break;
        case CK_TRAILER_LF:
            if (ch != '\n')
                return h1_bad(f, "a trailer line not ended by CRLF");
            f->ck_state = f->ck_line ? CK_TRAILER : CK_DONE;
            f->ck_line = 0;
            break;
        }
        p++;
    }
    if (p < e)
        return h1_bad(f, "bytes after the last chunk");
    return 0;
}

static bool h1_complete(const struct fwd *f)
{
    if (!f->hdrs_done || f->to_eof)
        return false;
    return f->chunked ? f->ck_state == CK_DONE : f->head || f->got == f->resp_len;
}

/* Bytes from the peer. 0 or -1 (malformed). */
static int h1_in(struct fwd *f, const char *p, size_t n)
{
    while (!f->hdrs_done && n) {
        size_t old = f->hb.len;
        sl_buf_add(&f->hb, p, n);
        const char *from = f->hb.p + (old > 3 ? old - 3 : 0);
        const char *end = memmem(from, f->hb.len - (size_t)(from - f->hb.p), "\r\n\r\n", 4);
        if (!end)
            return f->hb.len > H1_HDR_MAX ? h1_bad(f, "header fields over 32 KiB") : 0;
        size_t hl = (size_t)(end - f->hb.p) + 4;
        if (hl > H1_HDR_MAX)
            return h1_bad(f, "header fields over 32 KiB");
        int rc = h1_head(f, end + 2);
        if (rc < 0)
            return -1;
        size_t used = hl - old; /* of p */
        p += used;
        n -= used;
        f->hb.len = 0;
        if (rc == 0)
            hdrs_complete(f);
    }
    if (!n)
        return 0;
    if (f->head || (!f->chunked && !f->to_eof && f->resp_len == 0))
        return h1_bad(f, "a body where none belongs");
    return f->chunked ? h1_chunked(f, p, n) : h1_data(f, p, n);
}

enum { H1_MORE, H1_DONE, H1_FAIL, H1_RETRY };

/* A kept connection failed f before its answer's headers were in: the
 * peer closed it as the request went out, or bytes of an earlier answer
 * came late (a body after a HEAD's headers) and spoiled this one. f goes
 * once more on a new connection, if it may go twice. */
static bool h1_may_retry(const struct fwd *f, const struct h1conn *c)
{
    return c->reused && !f->retried && !f->hdrs_done && f->idem;
}

/* Read what the socket has (f->mu held, the loop thread). */
static int h1_read(struct fwd *f, char *buf)
{
    struct h1conn *c = f->hc;
    for (;;) {
        if (!f->r)
            return snprintf(f->errmsg, sizeof(f->errmsg), "forward to %.160s: the client went away", f->url),
                   H1_FAIL;
        if (!f->pull && f->streaming && !f->chunked && f->resp_len > 0) {
            /* Only now, with what came along with the headers in the ring
             * and f->mu held since: out_read may have run while answer()
             * had f->mu dropped, and must not receive ahead of the ring. */
            f->pull = true;
            f->paused_at = sl_mono_ns();
        }
        if (f->pull) { /* out_read receives the body: wake it if it waits */
            if (f->out_susp && f->r) {
                f->out_susp = false;
                sl_conn_resume(f->r->conn);
            }
            h1_want(c, 0);
            return H1_MORE;
        }
        size_t max = H1_SCRATCH;
        char *dst = buf;
        if (f->hdrs_done && !f->discard) {
            max = f->out.cap - f->out.len;
            if (!max) { /* the client reads slower than the peer sends: wait for out_read */
                f->wr_paused = true;
                f->paused_at = sl_mono_ns();
                h1_want(c, 0);
                return H1_MORE;
            }
            if (!f->chunked) { /* straight into the ring, one copy fewer */
                size_t tail = (f->out.head + f->out.len) % f->out.cap;
                dst = f->out.b + tail;
                max = max < f->out.cap - tail ? max : f->out.cap - tail;
            } else if (max > H1_SCRATCH) {
                max = H1_SCRATCH;
            }
        }
        ssize_t n = recv(c->fd, dst, max, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return H1_MORE;
        if (n <= 0) {
            bool none = !f->hdrs_done && !f->hb.len;
            if (n == 0 && f->to_eof && f->hdrs_done)
                return H1_DONE;
            if (none && h1_may_retry(f, c))
                return H1_RETRY; /* the peer closed a kept connection as the request went out */
            if (!f->errmsg[0])
                snprintf(f->errmsg, sizeof(f->errmsg), "forward to %.160s: the peer %s %s", f->url,
                         n == 0 ? "closed the connection" : strerror(errno),
                         none ? "before answering" : f->hdrs_done ? "in the middle of the body" : "mid-header");
            f->bad = !none;
            return H1_FAIL;
        }
        f->last_io = sl_mono_ns();
        if ((dst == buf ? h1_in(f, buf, (size_t)n) : h1_data(f, NULL, (size_t)n)) < 0) {
            if (!h1_may_retry(f, c))
                return H1_FAIL;
            sl_logw("%s on a kept connection: the request goes once more on a new one", f->errmsg);
            return H1_RETRY; /* bytes of an earlier answer came late, ahead of this one */
        }
        if (h1_complete(f))
            return H1_DONE;
    }
}

/* A streamed body with a Content-Length is received by out_read (the HTTP
 * thread, f->mu held) straight into libmicrohttpd's buffer: no ring, no
 * copy, no hand-over per piece. When the socket is empty it suspends the
 * client's connection and the loop resumes it on the next byte (h1_read).
 * Once the body is in or broken, the loop is woken to end f (h1_event):
 * only the loop lets connections go and drops its reference. */
static ssize_t h1_pull(struct fwd *f, char *buf, size_t max)
{
    struct h1conn *c = f->hc;
    uint64_t left = (uint64_t)(f->resp_len - f->got);
    ssize_t n = recv(c->fd, buf, max < left ? max : (size_t)left, MSG_DONTWAIT);
    f->paused_at = sl_mono_ns(); /* (the client is reading: its idle time starts here) */
    if (n > 0) {
        f->got += n;
        f->last_io = f->paused_at;
        if (f->got == f->resp_len) {
            f->pull_end = H1_DONE;
            h1_want(c, EPOLLIN | EPOLLOUT); /* (writable: an event at once) */
        }
        return n;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
        sl_conn_suspend(f->r->conn);
        f->out_susp = true;
        h1_want(c, EPOLLIN);
        return SL_STREAM_WAIT;
    }
    snprintf(f->errmsg, sizeof(f->errmsg), "forward to %.160s: the peer %s in the middle of the body", f->url,
             n == 0 ? "closed the connection" : strerror(errno));
    f->bad = true;
    f->pull_end = H1_FAIL;
    h1_want(c, EPOLLIN | EPOLLOUT);
    return -1;
}

/* Detach f from its connection and keep the connection for the next
 * forward to its peer, or close it (the loop thread; f->mu not held). */
static void h1_release(struct fwd *f, bool keep)
{
    pthread_mutex_lock(&f->mu);
    struct h1conn *c = f->hc;
    f->hc = NULL;
    f->wr_paused = false; /* nothing to unpause any more */
    pthread_mutex_unlock(&f->mu);
    pthread_mutex_lock(&h1_mu);
    c->f = NULL;
    if (keep && c->p->ni < H1_IDLE_MAX) {
        c->reused = true;
        h1_want(c, EPOLLIN);
        c->p->idle[c->p->ni++] = c;
    } else {
        h1_close(c);
    }
    pthread_mutex_unlock(&h1_mu);
}

static void h1_end(struct fwd *f, int how)
{
    bool keep = how == H1_DONE && f->keep && !f->failed;
    h1_release(f, keep);
    if (how == H1_RETRY) {
        pthread_mutex_lock(&f->mu);
        f->retried = true;
        f->req_off = 0;
        f->hb.len = 0;
        f->bad = false;
        f->errmsg[0] = 0;
        f->interim = 0;
        bool ok = h1_go(f);
        pthread_mutex_unlock(&f->mu);
        if (ok)
            return;
        how = H1_FAIL;
    }
    finish(f, how == H1_FAIL);
}

static void h1_event(struct h1loop *L, struct h1conn *c, uint32_t ev)
{
    if (c->closed)
        return;
    pthread_mutex_lock(&h1_mu);
    struct fwd *f = c->f;
    if (!f) { /* idle: the peer closed it (or sent what nobody asked for) */
        for (int i = 0; i < c->p->ni; i++)
            if (c->p->idle[i] == c) {
                c->p->idle[i] = c->p->idle[--c->p->ni];
                break;
            }
        h1_close(c);
        pthread_mutex_unlock(&h1_mu);
        return;
    }
    pthread_mutex_unlock(&h1_mu);
    pthread_mutex_lock(&f->mu);
    int how = H1_MORE;
    if (f->pull_end) /* out_read has the whole body, or a broken one: the loop ends f */
        how = f->pull_end;
    else if (c->connecting) {
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (err) {
            snprintf(f->errmsg, sizeof(f->errmsg), "forward to %.160s: cannot connect: %s", f->url, strerror(err));
            how = H1_FAIL;
        } else {
            c->connecting = false;
        }
    }
    if (how == H1_MORE && f->req_off < f->req.len) {
        h1_send(f);
        if (f->req_off == f->req.len)
            h1_want(c, EPOLLIN);
    }
    if (how == H1_MORE && (f->wr_paused || f->pull) && (ev & (EPOLLHUP | EPOLLERR))) { /* (even when paused) */
        snprintf(f->errmsg, sizeof(f->errmsg), "forward to %.160s: the connection failed mid-body", f->url);
        how = H1_FAIL;
    } else if (how == H1_MORE && (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
        how = h1_read(f, L->scratch);
    }
    pthread_mutex_unlock(&f->mu);
    if (how != H1_MORE)
        h1_end(f, how);
}

/* Forwards idle past their limit, connects past theirs, or all of them
 * when stopping (the loop thread). */
static void h1_tick(struct h1loop *L, int64_t now)
{
    pthread_mutex_lock(&L->mu);
    int n = L->n;
    struct h1conn **cs = sl_xmalloc((size_t)(n ? n : 1) * sizeof(*cs));
    if (n) /* (L->c is NULL before the first connection) */
        memcpy(cs, L->c, (size_t)n * sizeof(*cs));
    pthread_mutex_unlock(&L->mu);
    for (int i = 0; i < n; i++) {
        struct h1conn *c = cs[i];
        pthread_mutex_lock(&h1_mu);
        struct fwd *f = c->closed ? NULL : c->f;
        pthread_mutex_unlock(&h1_mu);
        if (!f)
            continue;
        pthread_mutex_lock(&f->mu);
        int64_t lim = f->timeout_ms * 1000000LL;
        bool end = true, client_wait = f->wr_paused || (f->pull && !f->out_susp);
        if (stopping)
            snprintf(f->errmsg, sizeof(f->errmsg), "forward to %.160s: this node is shutting down", f->url);
        else if (c->connecting && now - c->t0 > H1_CONNECT_MS * 1000000LL)
            snprintf(f->errmsg, sizeof(f->errmsg), "forward to %.160s: cannot connect within %d ms", f->url,
                     H1_CONNECT_MS);
        else if (client_wait && now - f->paused_at > lim)
            snprintf(f->errmsg, sizeof(f->errmsg), "the client read nothing for %lld ms", (long long)f->timeout_ms);
        else if (!client_wait && now - f->last_io > lim)
            snprintf(f->errmsg, sizeof(f->errmsg), "forward to %.160s: the peer sent nothing for %lld ms", f->url,
                     (long long)f->timeout_ms);
        else
            end = false;
        pthread_mutex_unlock(&f->mu);
        if (end)
            h1_end(f, H1_FAIL);
    }
    free(cs);
}

/* Free the connections closed in this batch (their events are past). */
static void h1_reap(struct h1loop *L)
{
    pthread_mutex_lock(&L->mu);
    for (int i = L->n - 1; i >= 0; i--)
        if (L->c[i]->closed) {
            free(L->c[i]);
            L->c[i] = L->c[--L->n];
        }
    pthread_mutex_unlock(&L->mu);
}

static void *h1_main(void *arg)
{
    struct h1loop *L = arg;
    struct epoll_event ev[64];
    int64_t next_tick = 0;
    for (;;) {
        int n = epoll_wait(L->ep, ev, (int)SL_ARRAY_SIZE(ev), TICK_MS);
        for (int i = 0; i < n; i++)
            h1_event(L, ev[i].data.ptr, ev[i].events);
        int64_t now = sl_mono_ns();
        if (now >= next_tick || stopping) {
            next_tick = now + TICK_MS * 1000000LL;
            h1_tick(L, now);
        }
        h1_reap(L);
    }
    return NULL;
}

static void h1_start_loops(void)
{
    int want = loops_wanted();
    for (int i = 0; i < want; i++) {
        struct h1loop *L = &h1_loops[n_h1];
        pthread_t th;
        pthread_mutex_init(&L->mu, NULL);
        L->ep = epoll_create1(EPOLL_CLOEXEC);
        L->scratch = sl_xmalloc(H1_SCRATCH);
        if (L->ep < 0 || pthread_create(&th, NULL, h1_main, L) != 0) {
            sl_loge("forward: cannot start a loop thread: %s", strerror(errno));
            if (L->ep >= 0)
                close(L->ep);
            free(L->scratch);
            break;
        }
        pthread_detach(th);
        n_h1++;
    }
}

/* Start f on the direct transport (the HTTP thread; the request is
 * deferred already). */
static void h1_submit(struct fwd *f)
{
    bool ok = begin(f, &h1_once, h1_start_loops, &n_h1);
    if (ok) {
        pthread_mutex_lock(&f->mu);
        ok = h1_go(f);
        pthread_mutex_unlock(&f->mu);
    }
    if (!ok)
        finish(f, true);
}

struct hctx {
    struct curl_slist *hl;
    struct sl_buf *raw;          /* the direct transport: the request's bytes instead of hl */
    bool has_ct, has_host;
};

static void add_hdr(void *arg, const char *k, const char *v)
{
    struct hctx *h = arg;
    if (hop_by_hop(k) || !strcasecmp(k, SL_SEC_HDR) || !strcasecmp(k, SL_SEC_BODY_HDR))
        return;
    if (!strcasecmp(k, "Content-Type"))
        h->has_ct = true;
    if (!strcasecmp(k, "Host"))
        h->has_host = true;
    if (h->raw) {
        sl_buf_printf(h->raw, "%s: %s\r\n", k, v);
        return;
    }
    char *line = *v ? sl_xasprintf("%s: %s", k, v) : sl_xasprintf("%s;", k); /* "Name;" sends an empty value */
    h->hl = curl_slist_append(h->hl, line);
    free(line);
}

/* A "Name: value" line of ours */
static void add_line(struct hctx *h, const char *line)
{
    if (h->raw)
        sl_buf_printf(h->raw, "%s\r\n", line);
    else
        h->hl = curl_slist_append(h->hl, line);
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
    f->idem = r->method == SL_M_GET || r->method == SL_M_HEAD || r->method == SL_M_DELETE;
    f->resp_len = -1;
    bool body = r->in_headers; /* a bodiless request is dispatched on its final call */
    f->upload = body || r->method == SL_M_PUT || r->method == SL_M_POST;
    f->clen = body ? r->content_length : 0;
    if (body && f->clen <= 0)
        f->clen = -1;
    if (body)
        ring_alloc(&f->in, RING_SZ);
    bool direct = !body && h1_addr(f->url, &f->peer);
    f->direct = direct;
    struct hctx h = { NULL, direct ? &f->req : NULL, false, false };
    if (direct) {
        const char *host = f->url + 7, *path = strchr(host, '/');
        sl_buf_printf(&f->req, "%s %s HTTP/1.1\r\n", f->method, path);
        sl_req_headers_each(r, add_hdr, &h);
        if (!h.has_host)
            sl_buf_printf(&f->req, "Host: %.*s\r\n", (int)(path - host), host);
        if (f->upload) /* a PUT or POST with an empty body */
            sl_buf_adds(&f->req, "Content-Length: 0\r\n");
    } else {
        sl_req_headers_each(r, add_hdr, &h);
    }
    char sig[256];
    sl_sec_header(f->method, f->url, NULL, sig, sizeof(sig)); /* (a streamed body: not bound) */
    for (int i = 0; o->hdrs && o->hdrs[i]; i++)
        add_line(&h, o->hdrs[i]);
    if (sig[0])
        add_line(&h, sig);
    if (!direct) {
        h.hl = curl_slist_append(h.hl, "Expect:");
        if (!h.has_ct)
            h.hl = curl_slist_append(h.hl, "Content-Type:"); /* no libcurl default for a POST */
        if (f->upload && f->clen < 0)
            h.hl = curl_slist_append(h.hl, "Transfer-Encoding: chunked");
    }
    if (direct)
        sl_buf_adds(&f->req, "\r\n");
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
    if (direct)
        h1_submit(f);
    else
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
