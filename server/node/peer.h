/* SPDX-License-Identifier: MIT
 * peer.h: node-to-node HTTP on libcurl. Each thread keeps one easy handle
 * per purpose, so connections to peers are reused (keep-alive); every call
 * has a connect and a total timeout.
 */
#ifndef SL_PEER_H
#define SL_PEER_H

#include "sl.h"
#include <jansson.h>

/* Filled by every call (which first clears it: free a previous body before
 * reusing one). The body is the caller's: sl_peer_resp_free, whatever the
 * call returned. */
struct sl_peer_resp {
    long status;
    struct sl_buf body;
    char err[512];          /* transport error, or the peer's error "message" */
};

struct sl_peer_hdr {
    const char *k, *v;
};

void sl_peer_global_init(void);
/* TLS settings of calls to peers (net.http.client_ca_tls, skip_verify) on
 * a CURL handle */
void sl_peer_tls_opts(void *curl);
void sl_peer_resp_free(struct sl_peer_resp *r);

/* The calls this thread makes from now on give up (transport error,
 * "Callback aborted") within about a second of *flag turning true; NULL: they
 * run to their timeouts again. For loops that wait on peers (the join, the
 * keepalive) so that a stop is prompt. */
void sl_peer_abort_on(const volatile bool *flag);

/* Buffered call. body may be NULL. timeout_ms 0 = cplane timeout. Returns 0
 * when a response arrived (any status), -1 on transport failure (r->err).
 * url, hdrs and body are only used during the call. */
int sl_peer_call(const char *method, const char *url, const struct sl_peer_hdr *hdrs, int nhdrs, const void *body,
                 size_t blen, int64_t timeout_ms, struct sl_peer_resp *r);
/* The same to a node of another cluster (a remote AIS): unsigned. */
int sl_peer_call_foreign(const char *method, const char *url, int64_t timeout_ms, struct sl_peer_resp *r);
/* The same with headers and a JSON body (may be NULL). */
int sl_peer_call_foreign_body(const char *method, const char *url, const struct sl_peer_hdr *hdrs, int nhdrs,
                              const char *json, int64_t timeout_ms, struct sl_peer_resp *r);
/* JSON body helper (consumes body: the caller's reference is released,
 * also on failure). */
int sl_peer_json(const char *method, const char *url, json_t *body, int64_t timeout_ms, struct sl_peer_resp *r);

/* Upload from a file descriptor range [0, len) (PUT); headers added. fd
 * stays the caller's: read with pread, never closed or moved. */
int sl_peer_put_fd(const char *url, const struct sl_peer_hdr *hdrs, int nhdrs, int fd, uint64_t len,
                   int64_t timeout_ms, struct sl_peer_resp *r);

/* Streaming download: sink is called with body chunks when status is 2xx;
 * returns -1 from sink to abort. Response headers can be captured via hcb.
 * The data, name and value passed to sink and hcb are valid during that
 * call only. An error status's body is collected in r->body.
 * sl_peer_get_stream_stall also gives up on a peer that sends nothing for
 * stall_s seconds (0: it waits for the timeout). */
typedef int (*sl_peer_sink)(void *ctx, const char *data, size_t n);
typedef void (*sl_peer_hdr_cb)(void *ctx, const char *name, const char *value);
int sl_peer_get_stream(const char *url, const struct sl_peer_hdr *hdrs, int nhdrs, sl_peer_sink sink,
                       sl_peer_hdr_cb hcb, void *ctx, int64_t timeout_ms, struct sl_peer_resp *r);
int sl_peer_get_stream_stall(const char *url, const struct sl_peer_hdr *hdrs, int nhdrs, sl_peer_sink sink,
                             sl_peer_hdr_cb hcb, void *ctx, int64_t timeout_ms, long stall_s, struct sl_peer_resp *r);
/* The same with any method and an optional JSON body (only used during the
 * call). */
int sl_peer_stream(const char *method, const char *url, const struct sl_peer_hdr *hdrs, int nhdrs, const void *body,
                   size_t blen, sl_peer_sink sink, sl_peer_hdr_cb hcb, void *ctx, int64_t timeout_ms,
                   struct sl_peer_resp *r);
/* The same from a short-lived thread: the handle (and its connections to
 * peers) comes from a shared pool instead of the thread's own. */
int sl_peer_stream_pooled(const char *method, const char *url, const void *body, size_t blen, sl_peer_sink sink,
                          void *ctx, int64_t timeout_ms, struct sl_peer_resp *r);

/* Append "pid=<self>&utm=<base36 ns>" (the marks of a gateway redirect) to
 * url */
void sl_peer_add_redirect_marks(struct sl_buf *url, const char *pid);
/* The marks and the cluster signature of a redirect a client follows with
 * method (sec.h): the last thing added to the URL. body (or NULL): the
 * body the sender checked, named in the signed part (bh=) so that the
 * target takes no other. */
void sl_peer_redirect_url(struct sl_buf *url, const char *pid, const char *method, const struct sl_buf *body);
/* Append NODE_URL/v1/objects/BUCKET/OBJ?provider=PROVIDER to out, the
 * bucket and object name path-encoded: object requests to another node. */
void sl_peer_obj_url(struct sl_buf *out, const char *node_url, const char *bck, const char *provider, const char *obj,
                     size_t olen);


/* Parallel requests to several peers (one thread, libcurl multi). Each
 * entry has its own URL/method/body; results land in .resp. Bounded by
 * timeout_ms overall per request. url, method, body and accept are the
 * caller's and only used until sl_peer_fanout returns;
 * sl_peer_fanout_free frees the .resp bodies and nothing else. */
struct sl_fan {
    const char *url;
    const char *method;
    const void *body;
    size_t blen;
    const char *accept;           /* optional Accept header */
    struct sl_peer_resp resp;     /* out */
    int ok;                       /* out: 1 if a response arrived */
};
void sl_peer_fanout(struct sl_fan *reqs, int n, int64_t timeout_ms);
void sl_peer_fanout_free(struct sl_fan *reqs, int n);
/* the same, and each .url too (for callers that allocated them) */
void sl_peer_fanout_free_urls(struct sl_fan *reqs, int n);

#endif
