/* SPDX-License-Identifier: MIT
 * fwd_direct.c: the forward's direct transport (see fwd_int.h): a
 * bodiless request written by the HTTP thread on a kept connection, and
 * the answer read by an epoll loop with the parser of h1.h.
 */
#include "fwd_int.h"
#include "log.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- the direct transport ----
 * A bodiless request (GET, HEAD, DELETE) to a plain-HTTP peer named by its
 * IPv4 address skips libcurl: per request libcurl resets and sets up an
 * easy handle, checks a kept connection with a poll, and its loop is woken
 * by the HTTP thread; that was more than half of the gateway's CPU for a
 * 1 KiB GET (perf, 32 clients). Here the HTTP thread writes the request on
 * a kept connection itself (a non-blocking send of a few hundred bytes),
 * and a loop thread (epoll, one per core up to 4) reads the answer into the
 * out ring and resumes the client once: one hand-over instead of three.
 * The answer is parsed strictly and within bounds (h1.h: SL_H1_HDR_MAX of
 * headers, SL_H1_FIELDS_MAX fields, Content-Length or chunked or up to the
 * close): anything else ends the forward with a 502 that says what the peer
 * sent. The parser is our own on purpose: the one Debian 12 packages (nodejs http-parser
 * 2.9.4; llhttp is not packaged) is unmaintained since 2020 and built
 * lenient, and a version of this file on it passed the first bytes of a
 * chunk longer than its size to the client as the body, and a chunked body
 * with its framing when "chunked" was followed by a tab (test_s3_forward
 * test_framing_edges), and the glue around it was as long as this parser.
 * Connections belong to one loop, which alone closes and frees them; a
 * connection is idle (in its peer's list, c->f NULL) or serves one forward
 * (c->f, f->hc), both changed under h1_mu. */

#define H1_IDLE_MAX 64            /* kept connections per peer */
#define H1_SCRATCH (128 * 1024)   /* what one recv reads at most */
#define H1_CONNECT_MS 5000

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
static struct h1loop h1_loops[FWD_MAX_LOOPS];
static int n_h1;
static pthread_once_t h1_once = PTHREAD_ONCE_INIT;
static unsigned h1_rr;

bool fwd_direct_addr(const char *url, struct sockaddr_in *sa)
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
    fwd_grow(&c->lp->c, &c->lp->cap, c->lp->n + 1, sizeof(*c->lp->c));
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
    snprintf(f->errmsg, sizeof(f->errmsg), "forward to %.160s: the peer's answer is malformed (%s)", f->url,
             what ? what : "refused while read");
    return -1;
}

static int on_status(void *arg, int status)
{
    struct fwd *f = arg;
    f->status = status;
    fwd_peer_hdrs_reset(f);
    return 0;
}

static int on_field(void *arg, const char *k, size_t kl, const char *v, size_t vl)
{
    fwd_peer_hdr(arg, k, kl, v, vl);
    return 0;
}

static int on_head(void *arg, const struct sl_h1 *h)
{
    struct fwd *f = arg;
    f->resp_len = h->clen;
    fwd_hdrs_complete(f);
    return 0;
}

/* Decoded body bytes: into the out ring (room was checked; p NULL: recv
 * put them at its tail already), or dropped. */
static void body_put(struct fwd *f, const char *p, size_t n)
{
    if (!f->discard && n) {
        if (p)
            fwd_ring_put(&f->out, p, n);
        else
            f->out.len += n;
        fwd_body_in(f);
    }
}

static int on_body(void *arg, const char *p, size_t n)
{
    body_put(arg, p, n);
    return 0;
}

/* Bytes from the peer (p NULL: n bytes of a body with a length or up to
 * the close, which recv put at the out ring's tail). 0 or -1 (malformed). */
static int h1_in(struct fwd *f, const char *p, size_t n)
{
    const char *why;
    if (!p) {
        if (sl_h1_take(&f->h1, n, &why) < 0)
            return h1_bad(f, why);
        body_put(f, NULL, n);
        return 0;
    }
    const struct sl_h1_cb cb = { f, on_status, on_field, on_head, on_body };
    return sl_h1_feed(&f->h1, p, n, &cb, &why) < 0 ? h1_bad(f, why) : 0;
}

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
                   FWD_H1_FAIL;
        if (!f->pull && f->streaming && !f->h1.chunked && f->resp_len > 0) {
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
            return FWD_H1_MORE;
        }
        size_t max = H1_SCRATCH;
        char *dst = buf;
        if (f->hdrs_done && !f->discard) {
            max = f->out.cap - f->out.len;
            if (!max) { /* the client reads slower than the peer sends: wait for out_read */
                f->wr_paused = true;
                f->paused_at = sl_mono_ns();
                h1_want(c, 0);
                return FWD_H1_MORE;
            }
            if (!f->h1.chunked) { /* straight into the ring, one copy fewer */
                size_t tail = (f->out.head + f->out.len) % f->out.cap;
                dst = f->out.b + tail;
                max = max < f->out.cap - tail ? max : f->out.cap - tail;
            } else if (max > H1_SCRATCH) {
                max = H1_SCRATCH;
            }
        }
        ssize_t n = recv(c->fd, dst, max, 0);
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            return FWD_H1_MORE;
        if (n <= 0) {
            bool none = sl_h1_idle(&f->h1);
            if (n == 0 && sl_h1_eof(&f->h1))
                return FWD_H1_DONE;
            if (none && h1_may_retry(f, c))
                return FWD_H1_RETRY; /* the peer closed a kept connection as the request went out */
            if (!f->errmsg[0])
                snprintf(f->errmsg, sizeof(f->errmsg), "forward to %.160s: the peer %s %s", f->url,
                         n == 0 ? "closed the connection" : strerror(errno),
                         none ? "before answering" : f->hdrs_done ? "in the middle of the body" : "mid-header");
            f->bad = !none;
            return FWD_H1_FAIL;
        }
        f->last_io = sl_mono_ns();
        if (h1_in(f, dst == buf ? buf : NULL, (size_t)n) < 0) {
            if (!h1_may_retry(f, c))
                return FWD_H1_FAIL;
            sl_logw("%s on a kept connection: the request goes once more on a new one", f->errmsg);
            return FWD_H1_RETRY; /* bytes of an earlier answer came late, ahead of this one */
        }
        if (sl_h1_done(&f->h1))
            return FWD_H1_DONE;
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
    uint64_t left = (uint64_t)f->resp_len - f->h1.got;
    ssize_t n = recv(c->fd, buf, max < left ? max : (size_t)left, MSG_DONTWAIT);
    f->paused_at = sl_mono_ns(); /* (the client is reading: its idle time starts here) */
    if (n > 0) {
        const char *why;
        (void)sl_h1_take(&f->h1, (size_t)n, &why); /* (at most what is left: it fits) */
        f->last_io = f->paused_at;
        if (sl_h1_done(&f->h1)) {
            f->pull_end = FWD_H1_DONE;
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
    f->pull_end = FWD_H1_FAIL;
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
    bool keep = how == FWD_H1_DONE && f->h1.keep && !f->failed;
    h1_release(f, keep);
    if (how == FWD_H1_RETRY) {
        pthread_mutex_lock(&f->mu);
        f->retried = true;
        f->req_off = 0;
        sl_h1_free(&f->h1);
        sl_h1_init(&f->h1, f->head);
        f->bad = false;
        f->errmsg[0] = 0;
        bool ok = h1_go(f);
        pthread_mutex_unlock(&f->mu);
        if (ok)
            return;
        how = FWD_H1_FAIL;
    }
    fwd_finish(f, how == FWD_H1_FAIL);
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
    int how = FWD_H1_MORE;
    if (f->pull_end) /* out_read has the whole body, or a broken one: the loop ends f */
        how = f->pull_end;
    else if (c->connecting) {
        int err = 0;
        socklen_t len = sizeof(err);
        if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
            err = errno;
        if (err) {
            snprintf(f->errmsg, sizeof(f->errmsg), "forward to %.160s: cannot connect: %s", f->url, strerror(err));
            how = FWD_H1_FAIL;
        } else {
            c->connecting = false;
        }
    }
    if (how == FWD_H1_MORE && f->req_off < f->req.len) {
        h1_send(f);
        if (f->req_off == f->req.len)
            h1_want(c, EPOLLIN);
    }
    if (how == FWD_H1_MORE && (f->wr_paused || f->pull) && (ev & (EPOLLHUP | EPOLLERR))) { /* (even when paused) */
        snprintf(f->errmsg, sizeof(f->errmsg), "forward to %.160s: the connection failed mid-body", f->url);
        how = FWD_H1_FAIL;
    } else if (how == FWD_H1_MORE && (ev & (EPOLLIN | EPOLLRDHUP | EPOLLHUP | EPOLLERR))) {
        how = h1_read(f, L->scratch);
    }
    pthread_mutex_unlock(&f->mu);
    if (how != FWD_H1_MORE)
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
        if (fwd_stopping)
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
            h1_end(f, FWD_H1_FAIL);
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
        int n = epoll_wait(L->ep, ev, (int)SL_ARRAY_SIZE(ev), FWD_TICK_MS);
        for (int i = 0; i < n; i++)
            h1_event(L, ev[i].data.ptr, ev[i].events);
        int64_t now = sl_mono_ns();
        if (now >= next_tick || fwd_stopping) {
            next_tick = now + FWD_TICK_MS * 1000000LL;
            h1_tick(L, now);
        }
        h1_reap(L);
    }
    return NULL;
}

static void h1_start_loops(void)
{
    int want = fwd_loops_wanted();
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

void fwd_direct_submit(struct fwd *f)
{
    sl_h1_init(&f->h1, f->head);
    bool ok = fwd_begin(f, &h1_once, h1_start_loops, &n_h1);
    if (ok) {
        pthread_mutex_lock(&f->mu);
        ok = h1_go(f);
        pthread_mutex_unlock(&f->mu);
    }
    if (!ok)
        fwd_finish(f, true);
}


/* ---- what the shared part asks of the transport (f->mu held) ---- */

/* The connection is simply watched for input again, if the loop has not
 * ended the forward and let the connection go already. */
static bool d_unpause(struct fwd *f)
{
    if (f->hc) {
        f->last_io = sl_mono_ns(); /* (the peer's silence is timed from here) */
        h1_want(f->hc, EPOLLIN);
    }
    return false;
}

static bool d_pull(struct fwd *f, char *buf, size_t max, ssize_t *n)
{
    if (!f->pull || f->pull_end || !f->hc || f->done)
        return false;
    *n = h1_pull(f, buf, max);
    return true;
}

static void d_gone(struct fwd *f)
{
    if (f->pull && f->hc) /* (the rest of the body is there or coming: an event) */
        h1_also(f->hc, EPOLLIN); /* not narrowed: the EPOLLOUT of a pull_end wakes the loop */
}

const struct fwd_ops fwd_direct_ops = { .unpause = d_unpause, .pull = d_pull, .gone = d_gone };
