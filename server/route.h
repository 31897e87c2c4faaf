/* SPDX-License-Identifier: MIT
 * route.h: role-dependent routing implemented by the cluster module.
 */
#ifndef SL_ROUTE_H
#define SL_ROUTE_H

#include "http.h"

void sl_route_objects(struct sl_req *r);
void sl_route_buckets(struct sl_req *r);
void sl_route_daemon_other(struct sl_req *r);
void sl_route_cluster(struct sl_req *r);
/* other endpoints (etl, sort, internal); true if handled */
bool sl_route_ext(struct sl_req *r);
/* endpoints of job modules (ext.c); true if handled */
bool sl_route_ext_more(struct sl_req *r);

#endif
