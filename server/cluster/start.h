/* SPDX-License-Identifier: MIT
 * start.h: bringing the node into its cluster (cluster.c).
 */
#ifndef SL_START_H
#define SL_START_H

#include "sl.h"

/* Load persisted metadata and build the initial Smap/BMD (before HTTP). */
int sl_start_cluster(struct sl_err *err);
/* After HTTP listens: join the primary (cluster roles). */
int sl_start_after_http(struct sl_err *err);
void sl_stop_cluster(void);

#endif
