/* SPDX-License-Identifier: MIT
 * stats.h: per-operation counters and latency histograms, rendered in
 * Prometheus text format at /metrics with AIStore's metric names
 * (ais_target_get_count, ais_target_get_ns_total, ...) plus _seconds
 * histograms. Lock-free: relaxed atomic adds.
 */
#ifndef SL_STATS_H
#define SL_STATS_H

#include "sl.h"

#include <jansson.h>

enum {
    SL_OP_NONE = 0, SL_OP_GET, SL_OP_PUT, SL_OP_HEAD, SL_OP_DELETE, SL_OP_LIST, SL_OP_APPEND, SL_OP_ARCH_GET,
    SL_OP_ETL_GET, SL_OP_REDIRECT, SL_OP_MAX
};

void sl_stats_request(int op, int method, int status, uint64_t in_bytes, uint64_t out_bytes, int64_t ns, bool ok);
void sl_stats_add(const char *name, uint64_t v);   /* free-form counters ("rebalance_objs") */
/* the same for a hot path: look the name up once, then add without a lock */
int sl_stats_handle(const char *name);
void sl_stats_add_h(int h, uint64_t v);
/* One call to a remote store (op "get", "head", "put", "delete") by the
 * backend of provider ("aws", "ht"), as AIStore counts them: node status
 * aws.get.n, aws.get.ns.total, aws.get.size (get and put); Prometheus
 * remote_get_count, remote_get_ns_total, remote_get_bytes_total with label
 * backend="aws". */
void sl_stats_backend(const char *provider, const char *op, uint64_t bytes, int64_t ns);
/* Append Prometheus text to out (the caller's); prefix "ais_target" or
 * "ais_proxy". */
void sl_stats_render(struct sl_buf *out, const char *prefix, const char *node_id);
uint64_t sl_stats_get(int op, const char *what);   /* "count", "bytes", "errors" */
/* AIStore's reset-stats: every counter (and histogram bucket) back to 0, or
 * only the error counters. Prometheus takes a counter that goes down as a
 * reset (rate() and increase() start again from 0). */
void sl_stats_reset(bool errors_only);
/* The counters as AIStore's node_status "tracker": {"get.n": {"v": "12"},
 * "err.get.n": ..., "get.size": ..., "get.ns.total": ..., <free-form>: ...};
 * returns new. */
json_t *sl_stats_tracker_json(void);

#endif
