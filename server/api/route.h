/* SPDX-License-Identifier: MIT
 * route.h: the node's router (route.c), handed to the HTTP engine at start,
 * and the role-dependent handlers it dispatches to (cluster_api.c).
 */
#ifndef SL_ROUTE_H
#define SL_ROUTE_H

#include "http.h"

/* The sl_router_fn of this node: URL -> handler, by role. */
void sl_route(struct sl_req *r);

/* cluster_api.c: what a gateway, a target or a standalone node does with
 * each group of endpoints */
void sl_route_objects(struct sl_req *r);
/* The gateway's 307 of r (its query, and its body when read) to the owner
 * of bucket/name, at its object URL (bucket-level POSTs that name their
 * object in the body: blob-download). */
void sl_route_redirect_obj(struct sl_req *r, const char *bucket, const char *name, size_t nlen);
void sl_route_buckets(struct sl_req *r);
void sl_route_daemon_other(struct sl_req *r);
void sl_route_cluster(struct sl_req *r);
/* the certificate routes (tls.c): load-x509, what=tls_certificate; false: not one */
bool sl_tls_route(struct sl_req *r);
/* metasync, per-target listing, job fan-out; true if handled */
bool sl_route_cluster_internal(struct sl_req *r);

#endif
