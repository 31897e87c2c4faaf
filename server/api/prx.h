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
/* The fewest mountpaths a target has (asking every target not offline;
 * standalone: this node's), and which target (who). 0, or -1 with err when
 * a target does not answer. Calls peers: never on an HTTP thread. */
int sl_prx_min_mountpaths(int *min, char *who, size_t wsz, struct sl_err *err);


#endif
