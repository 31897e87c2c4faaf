/* SPDX-License-Identifier: MIT
 * lso.h: list-objects on a target: its local page (a k-way merge of
 * per-mountpath LMDB cursors, exact and sorted) and the walk over every page
 * of a listing. The message and page types are lspage.h's.
 *
 * Threads: any but an HTTP one for sl_lso_walk over the cluster's pages
 * (it waits on peers); a local page reads LMDB only. A message or page is
 * one thread's at a time.
 */
#ifndef SL_LSO_H
#define SL_LSO_H

#include "lspage.h"
#include "meta.h"
#include "xact.h"

/* Local page of up to m->pagesize entries after m->token (or start_after),
 * added to out (the caller's: sl_lspage_free, also after an error). With
 * SL_LSO_ARCH_DIR a shard's members follow its entry and count toward the
 * page like any entry; a page may end inside a shard (see sl_lsent_token). */
int sl_lso_local_page(const struct sl_bck *b, const struct sl_lsomsg *m, const char *node_id,
                      struct sl_lspage *out, struct sl_err *err);

/* A page source: sl_lso_local_page of this target (with its id bound) or
 * the cluster's merged page (cluster.h, sl_cluster_list_page). */
typedef int (*sl_lso_page_fn)(const struct sl_bck *b, const struct sl_lsomsg *m, struct sl_lspage *out,
                              struct sl_err *err);
/* Called for each entry in listing order; the entry lives only during the
 * call. Return 0 to go on, > 0 to stop early, < 0 to fail (err set by the
 * callee). */
typedef int (*sl_lsent_fn)(void *arg, const struct sl_lsent *e);
/* Walk every page of a listing: page() page after page, fn for each entry
 * but directories (SL_ENT_DIR). m->token is advanced (m stays the caller's).
 * With a job, stops quietly (0) between pages once it is aborting: the
 * caller tells an abort apart. 0 done or stopped, -1 error. */
int sl_lso_walk(sl_lso_page_fn page, const struct sl_bck *b, struct sl_lsomsg *m, const struct sl_job *job,
                sl_lsent_fn fn, void *arg, struct sl_err *err);

#endif
