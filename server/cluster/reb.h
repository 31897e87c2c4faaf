/* SPDX-License-Identifier: MIT
 * reb.h: rebalance on a target (move every local object whose HRW owner is
 * now another target, then drop the local copy), and get-from-neighbour
 * (a target asked for an object it does not have yet fetches it from its
 * previous owner) so reads keep working while data moves.
 */
#ifndef SL_REB_H
#define SL_REB_H

#include "meta.h"

/* Start (or restart) the rebalance with this id on this target. */
void sl_reb_start(const char *id);
/* "g3: running, 120 moved" / "-" */
void sl_reb_describe(char *out, size_t n);
bool sl_reb_active(void);
/* Remember the Smap before a membership change (for get-from-neighbour):
 * a Smap listener; keeps a private clone of old. */
void sl_reb_smap_changed(const struct sl_smap *old, const struct sl_smap *cur);
/* Try to fetch name from the other targets into the local store.
 * 0 = now present locally; -1 = not found anywhere (err set). */
int sl_reb_gfn(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err);
/* Is get-from-neighbour worth trying now (membership changed recently)? */
bool sl_reb_gfn_window(void);
void sl_reb_stop(void);
/* "g3: running, 120 moved" on a target, "-" elsewhere: a per-thread
 * buffer, valid until this thread's next call */
const char *sl_reb_state(void);
/* The cluster's hooks (cluster.h): a rebalance decided, a new Smap
 * (get-from-neighbour's window), start (the latest one missed while down)
 * and stop. main.c registers them. */
struct sl_cluster_hooks;
extern const struct sl_cluster_hooks sl_reb_hooks;

#endif
