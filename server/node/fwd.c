/* SPDX-License-Identifier: MIT
 * fwd.c: see fwd.h; the files of the forward and who does what are
 * described in fwd_int.h. This file: sl_fwd (the request to the peer and
 * the choice of transport), sl_fwd_stop, and the libcurl transport: its
 * callbacks and its multi loops.
 */
#include "fwd_int.h"
#include "log.h"
#include "peer.h"
#include "sec.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define CURL_BUF (128 * 1024)  /* libcurl's receive buffer */

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
    n = fwd_ring_get(&f->in, buf, max);
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
        fwd_peer_hdrs_reset(f);
    } else if (len == 0) {
        if (f->status >= 200)
            fwd_hdrs_complete(f);
    } else {
        const char *colon = memchr(buf, ':', len);
        if (colon && f->nh < FWD_MAX_HDRS) {
            const char *v = colon + 1;
            while (v < buf + len && (*v == ' ' || *v == '\t'))
                v++;
            fwd_peer_hdr(f, buf, (size_t)(colon - buf), v, (size_t)(buf + len - v));
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
        fwd_ring_alloc(&f->out, FWD_RING_SZ);
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
    fwd_ring_put(&f->out, data, n);
    fwd_body_in(f);
    pthread_mutex_unlock(&f->mu);
    return n;
}

/* ---- the loops ---- */

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

static struct loop loops[FWD_MAX_LOOPS];
static int n_loops;
static pthread_once_t loops_once = PTHREAD_ONCE_INIT;
static unsigned rr;            /* round robin over the loops */

static void loop_kick(struct loop *L)
{
    if (!L) /* (none: the loops could not start) */
        return;
    pthread_mutex_lock(&L->mu);
    L->kicked = true;
    pthread_mutex_unlock(&L->mu);
    curl_multi_wakeup(L->m);
}

/* What the shared part asks of the transport: a paused transfer is
 * unpaused by its loop once woken. */
static bool c_unpause(struct fwd *f)
{
    return f->kick = true;
}

static void c_kick(struct fwd *f)
{
    loop_kick(f->lp);
}

static const struct fwd_ops curl_ops = { .unpause = c_unpause, .kick = c_kick };

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

static void curl_finish(struct fwd *f, CURLcode rc)
{
    if (rc != CURLE_OK && !f->errmsg[0]) /* (f->errmsg is written by the loop thread alone by now) */
        snprintf(f->errmsg, sizeof(f->errmsg), "forward to %.160s: %s", f->url, curl_easy_strerror(rc));
    fwd_finish(f, rc != CURLE_OK);
}

/* Take transfer i out of the loop (the loop thread, outside callbacks). */
static void retire(struct loop *L, int i, CURLcode rc)
{
    struct fwd *f = L->act[i];
    L->act[i] = L->act[--L->an];
    curl_multi_remove_handle(L->m, f->c);
    fwd_grow(&L->spare, &L->scap, L->sn + 1, sizeof(CURL *));
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
            fwd_grow(&L->act, &L->acap, L->an + 1, sizeof(*L->act));
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
        if (now >= next_tick || fwd_stopping) {
            next_tick = now + FWD_TICK_MS * 1000000LL;
            for (int i = L->an - 1; i >= 0; i--) {
                struct fwd *f = L->act[i];
                pthread_mutex_lock(&f->mu);
                bool end = fwd_stopping;
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
            curl_multi_poll(L->m, NULL, 0, FWD_TICK_MS, NULL);
    }
    return NULL;
}

static void loops_start(void)
{
    int want = fwd_loops_wanted();
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
    if (!fwd_begin(f, &loops_once, loops_start, &n_loops)) {
        curl_finish(f, CURLE_FAILED_INIT);
        return;
    }
    struct loop *L = &loops[__atomic_fetch_add(&rr, 1, __ATOMIC_RELAXED) % (unsigned)n_loops];
    f->lp = L;
    pthread_mutex_lock(&L->mu);
    fwd_grow(&L->q, &L->qcap, L->qn + 1, sizeof(*L->q));
    L->q[L->qn++] = f;
    pthread_mutex_unlock(&L->mu);
    curl_multi_wakeup(L->m);
}

struct hctx {
    struct curl_slist *hl;
    struct sl_buf *raw;          /* the direct transport: the request's bytes instead of hl */
    bool has_ct, has_host;
};

static void add_hdr(void *arg, const char *k, const char *v)
{
    struct hctx *h = arg;
    if (fwd_hop_by_hop(k) || !strcasecmp(k, SL_SEC_HDR) || !strcasecmp(k, SL_SEC_BODY_HDR))
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
    bool body = r->in_headers || o->prefix; /* a bodiless request is dispatched on its final call */
    f->upload = body || r->method == SL_M_PUT || r->method == SL_M_POST;
    f->clen = body ? r->content_length : 0;
    if (body && f->clen <= 0)
        f->clen = -1;
    if (body)
        fwd_ring_alloc(&f->in, FWD_RING_SZ);
    if (o->prefix)
        fwd_ring_put(&f->in, o->prefix, SL_MIN(o->prefix_len, (size_t)FWD_RING_SZ));
    bool direct = !body && fwd_direct_addr(f->url, &f->peer);
    f->ops = direct ? &fwd_direct_ops : &curl_ops;
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
    char sig[SL_SEC_HDR_MAX];
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
    r->on_cleanup = fwd_cleanup;
    if (body) {
        f->in_end = false;
        sl_req_stream_body_bp(r, fwd_take, fwd_body_done);
    } else {
        f->in_end = true;
        f->want_answer = true;
        sl_req_defer(r);
    }
    if (direct)
        fwd_direct_submit(f);
    else
        submit(f);
}

void sl_fwd_stop(int64_t timeout_ms)
{
    fwd_stopping = true;
    for (int i = 0; i < n_loops; i++)
        curl_multi_wakeup(loops[i].m);
    int64_t dl = sl_mono_ns() + timeout_ms * 1000000LL;
    for (;;) {
        int a = fwd_active();
        if (!a || sl_mono_ns() > dl) {
            if (a)
                sl_logw("forward: %d transfer(s) still running at shutdown", a);
            return;
        }
        sl_sleep_ms(20);
    }
}
