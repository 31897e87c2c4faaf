/* SPDX-License-Identifier: MIT
 * prx.h: gateway handlers and the ActMsg control message.
 */
#ifndef SL_PRX_H
#define SL_PRX_H

#include "http.h"
#include "daemon.h"
#include <jansson.h>

void sl_prx_buckets(struct sl_req *r);
void sl_prx_cluster_get(struct sl_req *r);


#endif
