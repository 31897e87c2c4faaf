/* SPDX-License-Identifier: MIT
 * resilver.h: job resilver on one target (spec ha-durability.md §4): after
 * the target's mountpaths changed, every object goes to its HRW mountpath
 * and the objects of mirrored buckets get their copies back, as far as the
 * mountpaths allow. The moves themselves are store.c's (sl_store_move), the
 * copies mirror.c's (sl_mirror_fix).
 */
#ifndef SL_RESILVER_H
#define SL_RESILVER_H

#include "sl.h"
#include "store.h"

/* Start job resilver here (id NULL or "": a new one; its id is copied to
 * out, NULL ok). A run still going is preempted: asked to abort, and the
 * new one starts walking when it has ended. 0, or -1 with err. */
int sl_resilver_start(const char *id, char *out, size_t osz, struct sl_err *err);

/* Stop the job's thread and wait (up to timeout_ms) until it is out of the
 * store: before the store closes. Later runs are refused. */
void sl_resilver_quiesce(int64_t timeout_ms);
/* The store's hook for it (quiesce): main.c registers it with sl_store_hook. */
extern const struct sl_store_hooks sl_resilver_hooks;

#endif
