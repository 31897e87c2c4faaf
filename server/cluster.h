/* SPDX-License-Identifier: MIT
 * cluster.h: what the gateway needs from the cluster: listing pages from
 * every target, and (in cluster mode) membership, metasync, redirects.
 */
#ifndef SL_CLUSTER_H
#define SL_CLUSTER_H

#include "lso.h"
#include "meta.h"
#include <jansson.h>

/* One exact, merged page across all targets. Fails naming a target that did
 * not answer. */
int sl_cluster_list_page(const struct sl_bck *b, const struct sl_lsomsg *m, struct sl_lspage *out,
                         struct sl_err *err);

/* Job snapshots from every target: {tid: [snap, ...]} (standalone: this
 * node). A target that does not answer is skipped and named in err (when
 * err is not NULL). */
json_t *sl_cluster_job_snaps(const char *id, const char *kind, bool active, struct sl_err *err);
/* Whether any target knows job id (running or ended); false with err set
 * when a target did not answer and no other knew it. */
bool sl_cluster_job_known(const char *id, struct sl_err *err);
/* Ask every other target to abort job id (best effort). */
void sl_cluster_abort_job(const char *id);

/* Target: fetch the BMD from the primary; 1 if a newer one was installed. */
int sl_cluster_refresh_bmd(void);

/* true on the primary proxy and in standalone mode */
bool sl_is_primary(void);

/* Cluster-wide documents beyond Smap/BMD/config ("rmd", "etlmd"): a new
 * reference or NULL. */
json_t *sl_cluster_doc(const char *name);
typedef void (*sl_doc_listener)(const json_t *doc);
/* Called when a new EtlMD is installed (received or set locally). */
void sl_cluster_doc_listen(sl_doc_listener fn);
/* Non-primary gateway: relay the request (body and all) to the primary and
 * its answer back. */
struct sl_req;
void sl_forward_to_primary(struct sl_req *r);

/* Primary: bump the EtlMD version, persist, install and push (takes ownership). */
int sl_cluster_set_etlmd(json_t *doc);

#endif
