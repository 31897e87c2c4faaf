/* SPDX-License-Identifier: MIT
 * fwd.h: answer a request by forwarding it to a peer and relaying the
 * peer's answer, streaming both ways: no client-visible redirect, and no
 * whole body held in memory in either direction (a ring of a few hundred
 * KiB each way, with back-pressure on the client's connection).
 *
 * The transfers run on a few loop threads (libcurl multi, one per core up
 * to 4, connections to peers kept open); the HTTP threads only copy between
 * the rings and the connection and never wait. A bodiless request to a
 * plain-HTTP peer skips libcurl: the HTTP thread writes it on a kept
 * connection (non-blocking) and an epoll loop reads the answer. A client
 * that stops sending or reading, or a peer that stops answering, for
 * timeout_ms ends its transfer.
 * The S3 front end uses it to reach an object's target (clients such as
 * boto3 and awscli do not follow a 307).
 */
#ifndef SL_FWD_H
#define SL_FWD_H

#include "http.h"

struct sl_fwd_opts {
    const char *url;            /* full URL on the peer (path and query included) */
    const char *const *hdrs;    /* extra "Name: value" lines, NULL-terminated (may be NULL) */
    int64_t timeout_ms;         /* with no byte moving in either direction; 0 = 120 s */
    /* the body's first bytes, read already by the handler (from its body
     * callback, which sl_fwd then replaces): sent first, the rest of the
     * client's body after them; at most 512 KiB */
    const void *prefix;
    size_t prefix_len;
};

/* Call from a handler (or where a response is allowed) on the HTTP thread:
 * takes the request over, body included (none for GET/HEAD/DELETE). The
 * client's headers go along except hop-by-hop ones; the peer's status,
 * headers and body come back as they are. A peer that cannot be reached
 * or goes silent gives 503, one whose answer is malformed 502 (err_fn, when
 * not NULL, formats that answer instead; status is 503 or 502). */
typedef void (*sl_fwd_err_fn)(struct sl_req *r, int status, const char *msg);
void sl_fwd(struct sl_req *r, const struct sl_fwd_opts *o, sl_fwd_err_fn err_fn);

/* Shutting down: every forward in flight ends now (its client sees a cut
 * answer or a 502); waits up to timeout_ms for them. Before sl_http_stop. */
void sl_fwd_stop(int64_t timeout_ms);

#endif
