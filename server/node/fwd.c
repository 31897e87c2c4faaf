/* SPDX-License-Identifier: MIT
 * fwd.c: see fwd.h.
 *
 * Who does what, all under f->mu:
 *   HTTP thread  take()     client body -> in ring (suspends the client when full)
 *                body_done()/start: the answer now, or deferred to the forward thread
 *                out_read() out ring -> client (suspends the response when empty)
 *                cleanup()  the request is gone: f->r = NULL
 *   fwd thread   rd_cb()    in ring -> peer (resumes the client)
 *                hdr_cb()   the peer's status and headers; answers a deferred request
 *                wr_cb()    peer body -> out ring (resumes the response)
 * f lives until its last reference: the request (cleanup), the forward
 * thread, and the response stream.
 */
#include "fwd.h"
#include "log.h"

#include <curl/curl.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#define RING_SZ (512 * 1024)
#define SMALL_SZ (64 * 1024)   /* answers up to this size go out whole, in one response */

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
    pthread_cond_t cv;
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
};

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
    pthread_cond_destroy(&f->cv);
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
    if (f->out.len) {
        n = (ssize_t)ring_get(&f->out, buf, max);
        pthread_cond_broadcast(&f->cv);
    } else if (f->done) {
        n = f->failed ? -1 : 0;
    } else {
        sl_conn_suspend(f->r->conn);
        f->out_susp = true;
        n = SL_STREAM_WAIT;
    }
    pthread_mutex_unlock(&f->mu);
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
    if (k)
        pthread_cond_broadcast(&f->cv);
    if (k < n) {
        f->in_susp = true;
        sl_conn_suspend(r->conn);
    }
    pthread_mutex_unlock(&f->mu);
    return (ssize_t)k;
}

static void body_done(struct sl_req *r)
{
    struct fwd *f = r->ctx;
    pthread_mutex_lock(&f->mu);
    f->in_end = true;
    pthread_cond_broadcast(&f->cv);
    if (f->hdrs_done || f->done) {
        answer(f);
    } else {
        f->want_answer = true;
        sl_req_defer(r);
    }
    pthread_mutex_unlock(&f->mu);
}

static void cleanup(struct sl_req *r, bool completed)
{
    (void)completed;
    struct fwd *f = r->ctx;
    pthread_mutex_lock(&f->mu);
    f->r = NULL;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    r->ctx = NULL;
    unref(f);
}

/* ---- the forward thread ---- */

/* Wait on f->cv (f->mu held) up to the idle timeout: false when it ran out. */
static bool wait_idle(struct fwd *f, int64_t *deadline)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
    if (!*deadline)
        *deadline = now + f->timeout_ms * 1000000LL;
    if (now >= *deadline || stopping)
        return false;
    int64_t until = now + 200000000LL < *deadline ? now + 200000000LL : *deadline;
    ts.tv_sec = until / 1000000000LL;
    ts.tv_nsec = until % 1000000000LL;
    pthread_cond_timedwait(&f->cv, &f->mu, &ts);
    return true;
}

static size_t rd_cb(char *buf, size_t size, size_t nitems, void *ud)
{
    struct fwd *f = ud;
    size_t max = size * nitems;
    int64_t dl = 0;
    pthread_mutex_lock(&f->mu);
    while (!f->in.len && !f->in_end && f->r) {
        if (!wait_idle(f, &dl)) {
            snprintf(f->errmsg, sizeof(f->errmsg), "the client sent no data for %lld ms",
                     (long long)f->timeout_ms);
            pthread_mutex_unlock(&f->mu);
            return CURL_READFUNC_ABORT;
        }
    }
    size_t n = 0;
    if (f->in.len) {
        n = ring_get(&f->in, buf, max);
        if (f->in_susp && f->r && f->in.cap - f->in.len >= f->in.cap / 2) {
            f->in_susp = false;
            sl_conn_resume(f->r->conn);
        }
    } else if (!f->in_end) {
        pthread_mutex_unlock(&f->mu);
        return CURL_READFUNC_ABORT; /* the client went away mid-body */
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
            pthread_cond_broadcast(&f->cv);
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

static size_t wr_cb(char *data, size_t size, size_t nmemb, void *ud)
{
    struct fwd *f = ud;
    size_t n = size * nmemb, off = 0;
    int64_t dl = 0;
    pthread_mutex_lock(&f->mu);
    if (!f->out.b)
        ring_alloc(&f->out, RING_SZ);
    while (off < n) {
        if (!f->r || f->discard) {
            off = f->r ? n : 0; /* no body wanted: drop it; no client: stop */
            break;
        }
        size_t k = ring_put(&f->out, data + off, n - off);
        if (k) {
            off += k;
            dl = 0;
            if (f->wait_body && f->out.len == (size_t)f->resp_len) {
                f->wait_body = false;
                answer_deferred(f); /* the whole small body: one response */
                continue;
            }
            if (f->out_susp) {
                f->out_susp = false;
                sl_conn_resume(f->r->conn);
            }
            continue;
        }
        if (!wait_idle(f, &dl)) {
            snprintf(f->errmsg, sizeof(f->errmsg), "the client read nothing for %lld ms",
                     (long long)f->timeout_ms);
            break;
        }
    }
    pthread_mutex_unlock(&f->mu);
    return off;
}

static int xfer_cb(void *ud, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un)
{
    (void)ud, (void)dt, (void)dn, (void)ut, (void)un;
    return stopping ? 1 : 0;
}

static void run(struct fwd *f, CURL *c)
{
    CURLcode rc = CURLE_FAILED_INIT;
    if (c) {
        curl_easy_reset(c); /* keeps its connections to the peers */
        curl_easy_setopt(c, CURLOPT_URL, f->url);
        curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 5000L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_LIMIT, 1L);
        curl_easy_setopt(c, CURLOPT_LOW_SPEED_TIME, (long)(f->timeout_ms / 1000 + 1));
        curl_easy_setopt(c, CURLOPT_HTTPHEADER, f->hl);
        curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, hdr_cb);
        curl_easy_setopt(c, CURLOPT_HEADERDATA, f);
        curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wr_cb);
        curl_easy_setopt(c, CURLOPT_WRITEDATA, f);
        curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, xfer_cb);
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
        rc = curl_easy_perform(c);
    }
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
    pthread_cond_broadcast(&f->cv);
    answer_deferred(f);
    pthread_mutex_unlock(&f->mu);
    unref(f);
}

/* The forward threads: started when none is idle (up to MAX_WORKERS; past
 * that, requests wait in line), each with one libcurl handle whose
 * connections to peers stay open between requests; idle for IDLE_S, a
 * thread ends. */
#define MAX_WORKERS 512
#define IDLE_S 30

struct qent {
    struct fwd *f;
    struct qent *next;
};

static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static int n_active;           /* forwards between sl_fwd and the end of run() */
static pthread_cond_t pool_cv = PTHREAD_COND_INITIALIZER;
static struct qent *q_head, *q_tail;
static int n_workers, n_idle;

static void *worker(void *arg)
{
    (void)arg;
    CURL *c = curl_easy_init();
    pthread_mutex_lock(&pool_mu);
    for (;;) {
        while (!q_head) {
            n_idle++;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += IDLE_S;
            int w = pthread_cond_timedwait(&pool_cv, &pool_mu, &ts);
            n_idle--;
            if (w == ETIMEDOUT && !q_head) {
                n_workers--;
                pthread_mutex_unlock(&pool_mu);
                if (c)
                    curl_easy_cleanup(c);
                return NULL;
            }
        }
        struct qent *e = q_head;
        q_head = e->next;
        if (!q_head)
            q_tail = NULL;
        pthread_mutex_unlock(&pool_mu);
        run(e->f, c);
        free(e);
        pthread_mutex_lock(&pool_mu);
        n_active--;
    }
}

static void submit(struct fwd *f)
{
    struct qent *e = sl_xmalloc(sizeof(*e));
    e->f = f;
    e->next = NULL;
    pthread_mutex_lock(&pool_mu);
    if (q_tail)
        q_tail->next = e;
    else
        q_head = e;
    q_tail = e;
    n_active++;
    bool spawn = n_idle == 0 && n_workers < MAX_WORKERS;
    if (spawn)
        n_workers++;
    pthread_cond_signal(&pool_cv);
    pthread_mutex_unlock(&pool_mu);
    if (spawn) {
        pthread_t t;
        pthread_attr_t at;
        pthread_attr_init(&at);
        pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &at, worker, NULL) != 0) {
            pthread_mutex_lock(&pool_mu);
            n_workers--;
            pthread_mutex_unlock(&pool_mu);
            sl_logw("forward: cannot start a thread; the request waits for a busy one");
        }
        pthread_attr_destroy(&at);
    }
}

struct hctx {
    struct curl_slist *hl;
    bool has_ct;
};

static void add_hdr(void *arg, const char *k, const char *v)
{
    struct hctx *h = arg;
    if (hop_by_hop(k))
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
    pthread_cond_init(&f->cv, NULL);
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
    int64_t dl = sl_mono_ns() + timeout_ms * 1000000LL;
    for (;;) {
        pthread_mutex_lock(&pool_mu);
        int a = n_active;
        pthread_mutex_unlock(&pool_mu);
        if (!a || sl_mono_ns() > dl) {
            if (a)
                sl_logw("forward: %d transfer(s) still running at shutdown", a);
            return;
        }
        sl_sleep_ms(20);
    }
}
