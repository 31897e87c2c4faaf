/* SPDX-License-Identifier: MIT
 * fwd_int.h: what the files of the forward share. Included only by
 * server/node/fwd*.c; everyone else has fwd.h.
 *
 * The files, each calling only into those listed below it (no call cycle;
 * fwd_relay.c reaches a transport through f->ops only):
 *   fwd.c          sl_fwd (the request to the peer, the choice of
 *                  transport), sl_fwd_stop, and the libcurl transport: its
 *                  callbacks and multi loops
 *   fwd_direct.c   the direct transport: kept connections, the epoll
 *                  loops, the answer read with the parser of h1.h
 *   fwd_relay.c    what both transports share: the rings, the client's
 *                  side (its body in, the answer out), the answer's making,
 *                  a forward's life (references, the end)
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
 * instead (fwd_direct.c): the HTTP thread sends the request, an epoll loop
 * thread reads the answer (status, headers, body -> out ring) and
 * unpausing is watching the connection for input again; a streamed body
 * with a Content-Length is then received by out_read itself (ops->pull).
 * f lives until its last reference: the request (cleanup), the loop, and
 * the response stream.
 */
#ifndef SL_FWD_INT_H
#define SL_FWD_INT_H

#include "fwd.h"
#include "h1.h"

#include <curl/curl.h>
#include <netinet/in.h>
#include <pthread.h>

#define FWD_RING_SZ (512 * 1024)
#define FWD_SMALL_SZ (64 * 1024) /* answers up to this size go out whole, in one response */
#define FWD_MAX_HDRS 128
#define FWD_MAX_LOOPS 4
#define FWD_TICK_MS 200          /* how often paused transfers are checked for their idle limit */

struct fwd_ring {
    char *b;
    size_t cap, head, len;
};

struct fwd;

/* What the shared part asks of a forward's transport. */
struct fwd_ops {
    /* Room in the out ring again for a transfer paused on it (f->mu held):
     * true when kick must follow once f->mu is dropped. */
    bool (*unpause)(struct fwd *f);
    /* Wake the transfer's loop (f->mu not held); NULL: nothing to wake. */
    void (*kick)(struct fwd *f);
    /* out_read found the out ring empty (f->mu held): true when the
     * transport received body bytes itself (*n, as a stream callback's);
     * NULL: never. */
    bool (*pull)(struct fwd *f, char *buf, size_t max, ssize_t *n);
    /* The request ended while nothing was paused (f->mu held); NULL: nothing to do. */
    void (*gone)(struct fwd *f);
};

struct fwd {
    pthread_mutex_t mu;
    int refs;
    const struct fwd_ops *ops;
    struct sl_req *r;            /* NULL once the request ended */
    char *url;
    struct curl_slist *hl;
    char method[16];
    bool head, upload;
    int64_t clen;                /* client body length, -1 unknown */
    int64_t timeout_ms;
    sl_fwd_err_fn err_fn;

    struct fwd_ring in, out;
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

    /* the direct transport (fwd_direct.c): no libcurl, no loop (lp NULL) */
    struct h1conn *hc;           /* the connection it uses (cleared before it closes) */
    struct sockaddr_in peer;
    struct sl_buf req;           /* the request's bytes */
    size_t req_off;              /* how many of them went out */
    struct sl_h1 h1;             /* the answer's parser */
    bool bad;                    /* the peer's answer was malformed: 502, not 503 */
    bool idem;                   /* GET, HEAD or DELETE: may go twice (after a kept connection failed) */
    bool retried;                /* a kept connection failed under it: it went once more on a new one */
    int64_t last_io;             /* sl_mono_ns() of the last byte from the peer */
    bool pull;                   /* out_read receives the body itself (ops->pull) */
    int pull_end;                /* and has it all (FWD_H1_DONE) or saw it break (FWD_H1_FAIL) */
};

/* ---- fwd_relay.c ---- */

extern volatile bool fwd_stopping; /* sl_fwd_stop: every transfer ends now */

void fwd_ring_alloc(struct fwd_ring *g, size_t cap);
size_t fwd_ring_put(struct fwd_ring *g, const char *p, size_t n);
size_t fwd_ring_get(struct fwd_ring *g, char *p, size_t n);
/* grow *pp (an array of *cap elements of esz bytes) to hold need */
void fwd_grow(void *pp, int *cap, int need, size_t esz);
/* loop threads of a transport: one per core, up to FWD_MAX_LOOPS */
int fwd_loops_wanted(void);
bool fwd_hop_by_hop(const char *k);

/* The client's side of f, for sl_fwd (the HTTP thread). */
ssize_t fwd_take(struct sl_req *r, const char *data, size_t n);
void fwd_body_done(struct sl_req *r);
void fwd_cleanup(struct sl_req *r, bool completed);
/* Drop a reference (f->mu not held): the last frees f. */
void fwd_unref(struct fwd *f);

/* What a transport reports (f->mu held): a status line (resets the
 * fields), a header field, the header section's end, body bytes that went
 * into the out ring. */
void fwd_peer_hdrs_reset(struct fwd *f);
void fwd_peer_hdr(struct fwd *f, const char *k, size_t kl, const char *v, size_t vl);
void fwd_hdrs_complete(struct fwd *f);
void fwd_body_in(struct fwd *f);

/* A forward starts on a transport whose loops are started once: false
 * when none could start (f->errmsg says so; the caller finishes f). */
bool fwd_begin(struct fwd *f, pthread_once_t *once, void (*start)(void), const int *n);
/* The transfer ended (failed: f->errmsg says why), or was ended by its
 * loop: answer or cut the client, and drop the loop's reference (f->mu
 * not held). */
void fwd_finish(struct fwd *f, bool failed);
/* Forwards between sl_fwd and their end. */
int fwd_active(void);

/* ---- fwd_direct.c ---- */

enum { FWD_H1_MORE, FWD_H1_DONE, FWD_H1_FAIL, FWD_H1_RETRY };

extern const struct fwd_ops fwd_direct_ops;

/* "http://A.B.C.D:PORT/..." -> sa; anything else goes through libcurl */
bool fwd_direct_addr(const char *url, struct sockaddr_in *sa);
/* Start f on the direct transport (the HTTP thread; the request is
 * deferred already and f->req holds its bytes). */
void fwd_direct_submit(struct fwd *f);

#endif
