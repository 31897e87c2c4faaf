/* SPDX-License-Identifier: MIT
 * lost.h: no silent loss. The primary keeps each target's inventory (how
 * many objects of which ais:// bucket it holds, refreshed in the
 * background), refuses to let a target go while objects exist only there,
 * and, when an operator forces it, records what went with it in the
 * cluster document "lostmd" (metasynced to every node) so that listings of
 * those buckets say so instead of coming back short.
 *
 * lostmd: {"version": N, "targets": {TID: {"url", "time" (unix ns), "action",
 *          "inventory_time" (unix ns, 0 = none), "unknown": bool,
 *          "buckets": {NAME: {"bid", "n", "bytes"[, "ec"]}}}},
 *          "gone": {TID: {"rmd", "time"}}}
 * ("unknown": the primary had no inventory of that target; every ais://
 * bucket without a backend is then listed, with n = -1. "ec": why objects
 * of an erasure-coded bucket count. "gone": targets removed without a
 * rebalance, at RMD version "rmd": their EC slices and replicas are gone
 * until the next rebalance re-encodes what they held.)
 *
 * Erasure-coded buckets: a target's objects there count when they are not
 * encoded (the target reports "unprotected_n", bsumm.h), or all of them
 * when more of the other targets are gone (offline, or "gone") than the
 * bucket's objects survive (P, fewer in a map of fewer than D+P+1 targets).
 */
#ifndef SL_LOST_H
#define SL_LOST_H

#include "http.h"
#include <jansson.h>

/* Primary, from the keepalive loop: refresh inventories when due (every
 * 10 keepalive intervals, at least 20 s apart), in the background. */
void sl_lost_tick(void);

/* Primary: what only target tid holds (ais:// buckets without a backend;
 * erasure-coded ones as above):
 * asked now when the target answers (ask_now), else the last inventory —
 * unless the target's keepalive answers said its objects changed after
 * that inventory was counted (*stale set; stale may be NULL). Returns the
 * number of such objects, -1 when unknown (no inventory, or a stale one);
 * *detail (new reference) is the "buckets" object, *inv_time its time. */
int64_t sl_lost_holdings(const char *tid, const char *ctrl_url, bool ask_now, json_t **detail, int64_t *inv_time,
                         bool *stale);

/* A target: its holdings token, "RUN.CHANGES" (this process's start time,
 * its committed object changes, md.h): sent in its keepalive answers
 * (health ?cii, "holdings") and with its inventory (bsumm ?seq=1), taken
 * before the count. An inventory holds while the keepalives' token is the
 * same. */
void sl_lost_token(char *buf, size_t n);

/* "3 objects (1.2 KiB) in ais://a, 5 objects (...) in ais://b" */
char *sl_lost_describe(const json_t *detail);

/* Primary: record (forced removal) or forget (sid NULL: all) a target's lost
 * objects; both push lostmd. */
void sl_lost_record(const char *tid, const char *url, const char *action, const json_t *detail, int64_t inv_time,
                    bool unknown);
int sl_lost_clear(const char *sid, struct sl_err *err);
/* Primary: target tid is being removed without a rebalance: note it in
 * "gone" (and forget the entries a rebalance has made stale); pushes lostmd. */
void sl_lost_gone(const char *tid);
/* Primary: target tid (re)joined: the buckets whose recorded objects it
 * holds again (by its inventory, asked now) leave the record. */
void sl_lost_rejoined(const char *tid, const char *ctrl_url);

/* Any node: 0, or -1 with err (409) when objects of bucket b were lost with
 * a target removed by force (what: "list-objects" ...). */
int sl_lost_check_bucket(const char *what, const char *provider, const char *name, uint64_t bid, struct sl_err *err);

/* GET /v1/cluster?what=lost: lostmd, and on the primary the inventories. */
json_t *sl_lost_report(void);

/* The cluster's hooks (cluster.h): the primary's tick (inventories), a
 * target that rejoined, a target leaving without its data, listings of
 * buckets that lost objects. main.c registers them. */
struct sl_cluster_hooks;
extern const struct sl_cluster_hooks sl_lost_hooks;

#endif
