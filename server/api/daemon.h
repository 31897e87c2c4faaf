/* SPDX-License-Identifier: MIT
 * daemon.h: handlers every node serves, and cluster-state queries they use.
 */
#ifndef SL_DAEMON_H
#define SL_DAEMON_H

#include "http.h"
#include <jansson.h>

void sl_h_health(struct sl_req *r);
void sl_h_daemon_get(struct sl_req *r);
/* GET /v1/reverse/daemon?what=... with Ais-Node-Id: a gateway asks that node (AIStore's reverse path) */
void sl_h_reverse(struct sl_req *r);
void sl_h_metrics(struct sl_req *r);
json_t *sl_node_state_info(void);     /* new reference */
/* mpath_api.c: PUT|POST|DELETE /v1/daemon/mountpaths (false: not that path);
 * its reverse form on a gateway, to node id; GET ?what=mountpaths's body */
bool sl_mpath_route(struct sl_req *r);
void sl_mpath_reverse(struct sl_req *r, const char *id);
json_t *sl_mpath_list_json(void);

#endif
