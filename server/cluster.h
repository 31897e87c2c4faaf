/* SPDX-License-Identifier: MIT
 * cluster.h: what the gateway needs from the cluster: listing pages from
 * every target, and (in cluster mode) membership, metasync, redirects.
 */
#ifndef SL_CLUSTER_H
#define SL_CLUSTER_H

#include "lso.h"
#include "meta.h"

/* One exact, merged page across all targets. Fails naming a target that did
 * not answer. */
int sl_cluster_list_page(const struct sl_bck *b, const struct sl_lsomsg *m, struct sl_lspage *out,
                         struct sl_err *err);

#endif
