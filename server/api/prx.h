/* SPDX-License-Identifier: MIT
 * prx.h: the gateway's bucket handlers (create, destroy, HEAD, properties,
 * list buckets, list objects) and its GET /v1/cluster queries (prx.c).
 */
#ifndef SL_PRX_H
#define SL_PRX_H

#include "http.h"
#include "daemon.h"
#include <jansson.h>

void sl_prx_buckets(struct sl_req *r);
void sl_prx_cluster_get(struct sl_req *r);
/* First access to a remote bucket (?provider=aws) the BMD does not have
 * yet, on a gateway (or standalone): takes r, adds the bucket off the HTTP
 * thread and routes r again (sl_req_offload_reroute). False: not such a
 * request, route it as usual. */
bool sl_prx_first_access(struct sl_req *r);


#endif
