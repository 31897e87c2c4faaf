/* SPDX-License-Identifier: MIT
 * vote.h: primary failover (spec ha-durability.md §1). Every node notes when
 * the primary last called it (its keepalive probes); every other gateway
 * also watches the primary. When the primary stops answering, the electable
 * gateway with the highest id digest (the HRW candidate) asks every node for
 * its vote in a new term, and with the yes of a majority of the map's
 * gateways tells them the result and takes over (primary.c
 * sl_cluster_take_over). Voters say yes only when they too have not heard
 * from the primary lately, the candidate is their own choice (every gateway
 * ranked above it is down), the term is above their map's, and they have
 * not voted for another in that term.
 */
#ifndef SL_VOTE_H
#define SL_VOTE_H

#include "http.h"

/* Start/stop the watcher (gateways of a cluster). */
void sl_vote_start(void);
void sl_vote_stop(void);

/* A verified peer call from node sender arrived (access.c). */
void sl_vote_heard(const char *sender);

/* GET /v1/vote/proxy (a vote) and PUT /v1/vote/result: true when r was one. */
bool sl_vote_route(struct sl_req *r);

/* An election is running on this node (health ?cii flags). */
bool sl_vote_in_progress(void);

/* The cluster's hooks (cluster.h): elections run while the node serves.
 * main.c registers them. */
struct sl_cluster_hooks;
extern const struct sl_cluster_hooks sl_vote_hooks;

#endif
