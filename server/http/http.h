/* SPDX-License-Identifier: MIT
 * http.h: the node's HTTP front end on libmicrohttpd (thread pool + epoll).
 *
 * A request is dispatched once its headers are in (route.c). The handler
 * either responds at once (errors, redirects, reads) or asks for the body:
 * buffered (JSON control messages, capped by net.http.max_json_body) or
 * streamed chunk by chunk (object PUT, constant memory). Headers for the
 * response are collected with sl_hdr_add() and attached by whichever
 * sl_resp_*() call produces the response. Handlers never touch MHD.
 *
 * Memory: struct sl_req and all it points to (path, query, body, headers)
 * belong to the engine, which frees them when the request completes, after
 * on_cleanup. A handler's pointers into the request (r->path, r->body,
 * sl_req_query, sl_req_header) are valid until then; work that outlives
 * the request copies what it needs.
 */
#ifndef SL_HTTP_H
#define SL_HTTP_H

#include "sl.h"
#include "cksum.h"
#include <jansson.h>

enum { SL_M_OTHER = 0, SL_M_GET, SL_M_HEAD, SL_M_PUT, SL_M_POST, SL_M_DELETE, SL_M_PATCH };

struct sl_qp {
    char *k, *v;
};

struct sl_hdr {
    char *k, *v;
    struct sl_hdr *next;
};

struct sl_req;
typedef void (*sl_body_done_fn)(struct sl_req *r);
/* return 0 to continue, -1 to fail the request (r->err set): the rest of
 * the body is discarded and the error is the response */
typedef int (*sl_body_data_fn)(struct sl_req *r, const char *data, size_t n);
typedef ssize_t (*sl_body_take_fn)(struct sl_req *r, const char *data, size_t n);
/* called once when the request ends (completed: the response went out in
 * full), before the engine frees r: where a handler frees its r->ctx */
typedef void (*sl_req_cleanup_fn)(struct sl_req *r, bool completed);
/* streaming response producer: fill buf up to max, return bytes, 0 = end,
 * -1 = abort the connection */
typedef ssize_t (*sl_stream_fn)(void *ctx, uint64_t pos, char *buf, size_t max);

struct sl_req {
    void *conn;                 /* struct MHD_Connection */
    int method;
    const char *method_str;
    char *raw_uri;
    const char *uri_wire;       /* where MHD had the request target (its read buffer): only compared, never read */
    char *path;                 /* decoded; may contain any byte but NUL (see path_bad) */
    size_t path_len;
    bool path_bad;              /* decoded path contained NUL or was malformed */
    struct sl_qp *q;
    int nq;
    char reqid[24];
    char remote[64];            /* sl_req_remote() */
    int64_t t0;
    int64_t content_length;     /* -1 when unknown (chunked) */

    /* body handling */
    int body_mode;
    struct sl_buf body;
    uint64_t body_limit;
    uint64_t body_seen;
    sl_body_data_fn on_data;
    sl_body_take_fn on_take;    /* SL_BODY_STREAM with back-pressure */
    sl_body_done_fn on_done;
    sl_req_cleanup_fn on_cleanup;
    void *ctx;
    bool failed;                /* err holds the response */
    bool deferred;              /* bodiless: routed on the final call */
    bool in_headers;            /* routing on the first call, body not read yet */
    bool body_coming;           /* sl_req_body_coming(): bytes of the body arrived (or are buffered) */
    struct sl_err err;

    /* work handed to the background pool (sl_req_offload) */
    int offload;                /* OFFLOAD_* in http.c, accessed atomically */
    void *pending;              /* struct MHD_Response produced off the HTTP thread */
    int pending_status;
    bool reroute;               /* sl_req_offload_reroute: route again after fn (unless fn answered) */
    bool reroute_hdrs;          /* ... from the headers call (the body is not read yet) */
    bool rerouted;              /* routed a second time: no more reroutes */

    /* response */
    struct sl_hdr *hdrs;
    bool responded;
    int status;
    uint64_t resp_len;
    int op;                     /* SL_OP_* for stats */

    /* who sent it (node/sec.c, node/auth.c) */
    int trust;                  /* SL_TRUST_*: signed by a peer or a redirect */
    bool client_fwd;            /* a peer relays a client's request: check the client */
    char want_bh[65];           /* a signed body hash (bh=, Ais-Cluster-Body): the body must match */
    struct sl_cksum bh_ck;      /* SHA-256 of the body as it arrives (type 0: not started) */
    json_t *user;               /* the claims of a verified token (auth on), owned */
};

enum { SL_BODY_NONE = 0, SL_BODY_BUFFER, SL_BODY_STREAM, SL_BODY_DISCARD };

/* The router: called once per request when its headers are in (or, for a
 * bodiless request deferred by the engine, on the final call). It must
 * produce a response or ask for the body. The engine knows no handler; the
 * node hands it its route table here (api/route.c, sl_route). */
typedef void (*sl_router_fn)(struct sl_req *r);

/* Start listening. bind_addr NULL/"" = all interfaces. Requests whose
 * request line and header fields exceed max_header bytes get 431 (0 = no
 * limit beyond libmicrohttpd's connection pool). */
/* conn_timeout_s: a connection idle this long after a request header came,
 * or between requests however it trickles, is closed; header_timeout_s: one
 * whose first header is not in by this long after the accept; max_conns:
 * connections the node holds at once (at the limit the one that waited the
 * longest makes room, accept.h); max_per_ip: connections one address may
 * have (0: no limit). */
int sl_http_start(sl_router_fn router, const char *bind_addr, int port, int workers, int conn_timeout_s,
                  int header_timeout_s, unsigned max_conns, unsigned max_per_ip, size_t max_header,
                  struct sl_err *err);
void sl_http_stop(void);
/* Serve HTTPS with this certificate (chain) and key, PEM files: before
 * sl_http_start to turn TLS on, and again at any time to replace them (the
 * next handshakes use the new ones). -1 with err, the old ones kept. */
int sl_http_tls_load(const char *crt, const char *key, struct sl_err *err);
/* The certificate served now: the chain's first, DER, appended to der; the
 * files it was loaded from and when (unix seconds). -1: plain HTTP. */
int sl_http_tls_cert(struct sl_buf *der, char *crt, size_t crt_n, char *key, size_t key_n, int64_t *loaded);
/* What that certificate says, as AIStore's GET /v1/daemon?what=tls_certificate
 * (all string values: subject, issuer, validity, serial, SANs, key), plus
 * the files; NULL when the node serves plain HTTP. (tlsinfo.c) */
json_t *sl_http_tls_info(void);

/* Node identity for error bodies: "t[abc]" or "p[abc]" */
void sl_http_set_node(const char *node_name);   /* copied */

/* ---- request accessors ----
 * Returned strings belong to r: valid until the request completes. */
const char *sl_req_query(const struct sl_req *r, const char *key);     /* NULL if absent */
bool sl_req_query_bool(const struct sl_req *r, const char *key);
/* The decoded path is p or below it: "/v1/etl" matches "/v1/etl" and
 * "/v1/etl/...", not "/v1/etlx". */
bool sl_req_path_is(const struct sl_req *r, const char *p);
/* Segments 0..n of the path as sent (split at the literal '/', empty ones
 * skipped, before percent-decoding): the first that holds an encoded '/'
 * (%2F), decoded (free it), or NULL. A bucket name must not: decoded first,
 * "/v1/buckets/a%2Fb" would name bucket "a" and more. */
char *sl_req_raw_seg_slash(const struct sl_req *r, int n);

/* A Range header (RFC 9110 §14.1.2) against an object of size bytes. One
 * parser for every front end, which then answers as its reference does. */
enum {
    SL_RANGE_NONE = 0,   /* no header */
    SL_RANGE_OK,         /* one satisfiable range: [*off, *off + *len) */
    SL_RANGE_INVALID,    /* not a valid "bytes=" range set: another unit, junk, "--5", "5-3", spaces */
    SL_RANGE_MULTI,      /* a valid set of several ranges (not served) */
    SL_RANGE_UNSAT,      /* valid, but not one byte of it is in the object ("bytes=-0", first >= size) */
};
int sl_range_parse(const char *h, uint64_t size, uint64_t *off, uint64_t *len);
const char *sl_req_header(const struct sl_req *r, const char *name);  /* case-insensitive */
const char *sl_req_remote(const struct sl_req *r);                  /* "ip:port" of the client */
/* iterate all values of a (possibly repeated) header */
int sl_req_header_all(const struct sl_req *r, const char *name, void (*cb)(void *arg, const char *v), void *arg);

/* every request header, in order: cb(arg, name, value) */
void sl_req_headers_each(const struct sl_req *r, void (*cb)(void *arg, const char *k, const char *v), void *arg);

/* ---- body ---- */
void sl_req_buffer_body(struct sl_req *r, uint64_t limit, sl_body_done_fn done);
void sl_req_stream_body(struct sl_req *r, sl_body_data_fn data, sl_body_done_fn done);
/* Streaming with back-pressure: data returns how many of the n bytes it
 * took (0..n), or -1 to fail the request. Taking fewer than n, it must have
 * suspended the connection (sl_conn_suspend, under the lock its consumer
 * holds when it later calls sl_conn_resume): the engine keeps the rest and
 * hands it over again, first, once the connection resumes. */
void sl_req_stream_body_bp(struct sl_req *r, sl_body_take_fn take, sl_body_done_fn done);
/* Parse the buffered body as JSON (NULL body -> JSON null); 400 error on
 * failure. Returns a new reference (json_decref). */
json_t *sl_req_body_json(struct sl_req *r, struct sl_err *err);

/* ---- responses (each may be called once) ----
 * Arguments are copied unless said otherwise. */
void sl_hdr_add(struct sl_req *r, const char *k, const char *v);
void sl_hdr_del(struct sl_req *r, const char *k);    /* every one named k (case-insensitive) */
void sl_hdr_add_u64(struct sl_req *r, const char *k, uint64_t v); /* decimal, no printf */
void sl_hdr_addf(struct sl_req *r, const char *k, const char *fmt, ...) SL_PRINTF(3, 4);
void sl_resp_empty(struct sl_req *r, int status);
void sl_resp_bytes(struct sl_req *r, int status, const char *ctype, const void *data, size_t len);
/* takes ownership of data (free()) */
void sl_resp_bytes_owned(struct sl_req *r, int status, const char *ctype, char *data, size_t len);
void sl_resp_text(struct sl_req *r, int status, const char *text);
void sl_resp_json(struct sl_req *r, int status, const json_t *j);   /* j stays the caller's */
/* The sl_json_dump flags sl_resp_json uses for r (pretty for a browser):
 * for a JSON body written in pieces that must read the same. */
int sl_req_json_flags(const struct sl_req *r);
/* j is consumed (the caller's reference is released) */
void sl_resp_json_new(struct sl_req *r, int status, json_t *j);
void sl_resp_err(struct sl_req *r, const struct sl_err *e);
void sl_resp_errf(struct sl_req *r, int code, const char *fmt, ...) SL_PRINTF(3, 4);
void sl_resp_redirect(struct sl_req *r, int status, const char *location);
/* sendfile from fd [off, off+len); takes ownership of fd (closed by the
 * engine, also when the response cannot be created) */
void sl_resp_fd(struct sl_req *r, int status, int fd, uint64_t off, uint64_t len, const char *ctype);
/* For HEAD: headers with Content-Length = len (UINT64_MAX: none, chunked) and no body */
void sl_resp_head(struct sl_req *r, int status, uint64_t len);
/* streaming body (len = UINT64_MAX for unknown -> chunked). Takes ctx:
 * free_ctx(ctx) (may be NULL) runs once the response is done with, whether
 * it was sent, failed or never queued; fn is not called after that. */
void sl_resp_stream(struct sl_req *r, int status, const char *ctype, uint64_t len, sl_stream_fn fn, void *ctx,
                    void (*free_ctx)(void *));
void sl_resp_method_not_allowed(struct sl_req *r, const char *allow);

/* ---- work off the HTTP threads ----
 * A handler whose work may block or run long (a Lua transform, a call to a
 * peer) hands it to the background pool (bg.h): the connection is
 * suspended, fn(r, arg) runs on a pool thread and answers with the usual
 * sl_resp_* calls, then the connection is resumed and the answer sent. The
 * HTTP threads never wait. Call it from a handler or a body-done callback,
 * and produce no response on the HTTP thread afterwards. Called from work
 * already offloaded, fn simply runs there and then. When the node is
 * shutting down fn is not run: cancel(arg) is (may be NULL) and the client
 * gets a 503. The engine never frees arg: whichever of fn and cancel runs
 * owns it (with cancel NULL, an arg that needs freeing leaks at shutdown). */
typedef void (*sl_offload_fn)(struct sl_req *r, void *arg);
void sl_req_offload(struct sl_req *r, sl_offload_fn fn, void (*cancel)(void *arg), void *arg);
/* The same for work that must come before the request's handler (adding a
 * remote bucket on first access): when fn gives no answer, the request is
 * routed again, from the start and on an HTTP thread, once fn is done. A
 * request is rerouted once at most (r->rerouted says it was). */
void sl_req_offload_reroute(struct sl_req *r, sl_offload_fn fn, void (*cancel)(void *arg), void *arg);
/* Both, on the pool for work that waits on a peer (bg.h SL_POOL_PEER). */
void sl_req_offload_peer(struct sl_req *r, sl_offload_fn fn, void (*cancel)(void *arg), void *arg);
/* On the pool for a request's waits on the local disk (bg.h SL_POOL_DISK). */
void sl_req_offload_disk(struct sl_req *r, sl_offload_fn fn, void (*cancel)(void *arg), void *arg);
void sl_req_offload_peer_reroute(struct sl_req *r, sl_offload_fn fn, void (*cancel)(void *arg), void *arg);
/* Whether the client is sending the body of a request routed at its headers:
 * bytes wait on its socket now, or arrive within wait_ms. Blocks up to
 * wait_ms (call it off the HTTP threads, e.g. in an offloaded fn, with
 * wait_ms 0 on them). Sets r->body_coming when it returns true. A client
 * that sent "Content-Length: N" and waits for an answer before sending
 * (as AIStore's Python SDK does over TLS) gives false. */
bool sl_req_body_coming(struct sl_req *r, int wait_ms);
/* The request arrived over TLS (HTTPS) */
bool sl_req_tls(const struct sl_req *r);
/* true on the HTTP threads, where nothing may wait on a peer or a disk-heavy task */
bool sl_http_thread(void);

/* The answer comes from a thread of the handler's own (a forward to a
 * peer): sl_req_defer (HTTP thread, where a response is allowed) suspends
 * the connection; that thread later makes one sl_resp_* call and then
 * sl_req_deferred_done, which hands the response to the engine. */
void sl_req_defer(struct sl_req *r);
void sl_req_deferred_done(struct sl_req *r);

/* Streams whose bytes are produced on another thread: the stream function,
 * having nothing to send yet, calls sl_conn_suspend(r->conn) while holding
 * the lock under which the producer later calls sl_conn_resume(conn), and
 * returns SL_STREAM_WAIT. */
#define SL_STREAM_WAIT (-2)
void sl_conn_suspend(void *conn);
void sl_conn_resume(void *conn);

/* ---- ActMsg: the {"action","name","value"} control body ---- */
struct sl_actmsg {
    json_t *root;         /* owned */
    const char *action;   /* "" if absent */
    const char *name;     /* "" if absent */
    json_t *value;        /* borrowed from root; NULL if absent or null */
};

/* Parse the buffered body as an ActMsg (a null/empty body gives empty
 * action and name). On success m->root is owned by m and the strings and
 * value borrow from it: they live until sl_actmsg_free(m). On error (400)
 * m holds nothing. */
int sl_actmsg_parse(struct sl_req *r, struct sl_actmsg *m, struct sl_err *err);
void sl_actmsg_free(struct sl_actmsg *m);

/* Access hooks (api/access.c installs them): the permission an action
 * message needs, checked inside sl_actmsg_parse (-1 with err refuses it);
 * and any other permission a handler finds it needs (sl_req_allow). */
typedef int (*sl_action_hook_fn)(struct sl_req *r, const struct sl_actmsg *m, struct sl_err *err);
typedef int (*sl_perm_hook_fn)(struct sl_req *r, uint64_t perm, const char *provider, const char *bck,
                               struct sl_err *err);
void sl_http_set_access_hooks(sl_action_hook_fn action, sl_perm_hook_fn perm);
/* 0 if r may do perm (auth.h's SL_ACCESS_* bits) on bucket provider://bck
 * (NULL: cluster-wide); -1 with err (401/403) */
int sl_req_allow(struct sl_req *r, uint64_t perm, const char *provider, const char *bck, struct sl_err *err);


#endif
