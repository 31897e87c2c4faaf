/* SPDX-License-Identifier: MIT
 * cluster.h: the cluster floor, the contract between the handlers and jobs
 * above it (api/, jobs/) and the nodes below: the documents and metasync
 * (docs.c), membership (members.c), the primary's role and keepalive
 * (primary.c), start and stop (cluster.c), what is asked of every target
 * at once (fanout.c), bucket resolution (bck.c), and the hooks through
 * which rebalance (reb.h), the record of lost objects (lost.h) and
 * elections (vote.h) watch the cluster. Objects are read through read.h,
 * erasure coded through ec.h, sent to their owners in batches through
 * putb.h.
 *
 * Threads: everything here may be called from any thread but an HTTP one
 * when it says it waits on peers (sl_tfan_run, sl_cluster_list_page, the
 * job fan-outs, the admin actions); the hooks run on the thread of the
 * event (a keepalive round, a metasync, a join).
 *
 * Ownership: a json_t returned here is a new reference the caller
 * decrefs; strings returned as char * are the caller's to free(). A
 * struct sl_tfan holds a reference to the Smap it was made from, so its
 * who[] pointers stay valid until sl_tfan_free().
 */
#ifndef SL_CLUSTER_H
#define SL_CLUSTER_H

#include "http.h"
#include "lso.h"
#include "meta.h"
#include "peer.h"
#include "xact.h"
#include <jansson.h>

/* ---- bucket resolution (bck.c) ----
 * Resolve a bucket from a request's name + provider (+ namespace). On
 * success dst is a copy the caller releases with sl_bck_release(). Errors:
 * 400 invalid provider/name, 404 missing bucket, 501 a provider that has no
 * backend (the seam where backends plug in). A target that does not know a
 * bucket yet asks the primary for the BMD once before the 404. */
int sl_bck_resolve(const char *name, const char *provider, const char *ns, struct sl_bck *dst, struct sl_err *err);
/* Create ais://name if it does not exist (through the primary; here when
 * standalone), as a job does for its destination. 0, or -1 with err. */
int sl_cluster_bck_create(const char *name, struct sl_err *err);
/* First access to a remote bucket (s3://name) not in the BMD: HEAD it at
 * the remote, then add it (through the primary) with default props. 0 also
 * when it is known already. Blocks on the network: pool threads only. */
int sl_bck_add_remote(const char *provider, const char *name, struct sl_err *err);
/* sl_bck_resolve (global namespace), and a remote bucket the BMD does not
 * have yet is added first (sl_bck_add_remote): what jobs do at their start.
 * Pool and job threads only. */
int sl_bck_resolve_add(const char *name, const char *provider, struct sl_bck *dst, struct sl_err *err);
/* This node owns object name of b under Smap s (HRW; always in standalone
 * mode). */
bool sl_obj_owned_here(const struct sl_smap *s, const struct sl_bck *b, const char *name, size_t nlen);

/* ---- one request to each target (fanout.c) ----
 * sl_tfan_init takes the current Smap and prepares one request to each
 * target (minus this node with SL_TF_SKIP_SELF, minus offline ones with
 * SL_TF_SKIP_OFFLINE): url = the target's control URL + the formatted path
 * (already URL-encoded by the caller). Set f[i].body/accept before running
 * if needed (they stay the caller's, needed until sl_tfan_run returns);
 * f[i].resp and f[i].ok are filled by sl_tfan_run. sl_tfan_free frees the
 * urls, the responses and the arrays and drops the Smap. */
enum { SL_TF_SKIP_SELF = 1, SL_TF_SKIP_OFFLINE = 2 };
struct sl_tfan {
    struct sl_fan *f;               /* n requests; urls owned */
    const struct sl_snode **who;    /* who[i] is f[i]'s target, inside s */
    int n;
    struct sl_smap *s;              /* held until sl_tfan_free */
};
void sl_tfan_init(struct sl_tfan *t, unsigned flags, const char *method, const char *path_fmt, ...) SL_PRINTF(4, 5);
void sl_tfan_run(struct sl_tfan *t, int64_t timeout_ms);
void sl_tfan_free(struct sl_tfan *t);
/* Start job id on every target (flags as above): POST path with body to
 * each. 0, or -1 with err naming the first target that refused or did not
 * answer ("what: t[X]: ... (targets that did start go on; follow job
 * id)"); the job is then aborted where it started. */
int sl_tfan_start_job(unsigned flags, const char *path, const json_t *body, const char *what, const char *id,
                      struct sl_err *err);
/* The same on target tid only. */
int sl_tfan_start_job_at(const char *tid, unsigned flags, const char *path, const json_t *body, const char *what,
                         const char *id, struct sl_err *err);

/* One exact, merged page across all targets, added to out (the caller's:
 * sl_lspage_free, also after an error). Fails naming a target that did not
 * answer. */
int sl_cluster_list_page(const struct sl_bck *b, const struct sl_lsomsg *m, struct sl_lspage *out,
                         struct sl_err *err);

/* Job snapshots from every target: {tid: [snap, ...]} (standalone: this
 * node). A target that does not answer is skipped and named in err (when
 * err is not NULL). */
json_t *sl_cluster_job_snaps(const char *id, const char *kind, bool active, struct sl_err *err);
/* Whether any target knows job id (running or ended); false with err set
 * when a target did not answer and no other knew it. */
bool sl_cluster_job_known(const char *id, struct sl_err *err);
/* Hand a new cluster job to its coordinator, the target chosen by HRW of
 * "kind/id": POST body (consumed) to that target's path. 503 when it is
 * offline or there is none; the target's error otherwise. */
int sl_cluster_to_coordinator(const char *kind, const char *id, const char *path, json_t *body, struct sl_err *err);
/* Ask every other target to abort job id (best effort). */
void sl_cluster_abort_job(const char *id);
/* Abort job id and/or kind here and on every other target; the number of
 * running instances asked to stop. */
int sl_cluster_stop_jobs(const char *id, const char *kind);
/* AIStore's nl.Status for job id aggregated over {tid: [snap...]} (as
 * returned by sl_cluster_job_snaps; per is only read); NULL if no target
 * knows the id. */
json_t *sl_cluster_job_status(json_t *per, const char *id);
/* Every snapshot of per ({tid: [snap, ...]}, as sl_cluster_job_snaps
 * returns it; only read) of job id (NULL: all), with its target's id:
 *     struct sl_snap_it it;
 *     for (sl_snaps_first(&it, per, id); it.sn; sl_snaps_next(&it))
 *         ... it.tid, it.sn ...
 * The pointers are per's, valid while per is. */
struct sl_snap_it {
    json_t *per;
    void *oi;
    const char *id;
    const char *tid;
    json_t *arr;
    size_t i;
    json_t *sn;
};
void sl_snaps_first(struct sl_snap_it *it, json_t *per, const char *id);
void sl_snaps_next(struct sl_snap_it *it);
/* Start a cluster job of kind: a new id (prefix "srt-"; into id), put in
 * body (taken) as "id", then its coordinator starts it: this node when
 * standalone (local(id, body)), else the target HRW picks for "kind/id"
 * (POST body to its path). 0, or -1 with err. */
int sl_cluster_job_begin(const char *kind, const char *prefix, const char *path, json_t *body,
                         int (*local)(const char *id, const json_t *body, struct sl_err *err), char *id, size_t idlen,
                         struct sl_err *err);
/* The coordinator's side of it (the POST to path): r's body {"id", ...}
 * to local(id, body), answered 200 or with its error (what: "dsort start"
 * names a body that is not an object). */
void sl_cluster_job_begun(struct sl_req *r, int (*local)(const char *id, const json_t *body, struct sl_err *err),
                          const char *what);

/* Target: fetch the BMD from the primary; 1 if a newer one was installed.
 * On an HTTP thread it only starts the fetch in the background (0). */
int sl_cluster_refresh_bmd(void);

/* true on the primary proxy and in standalone mode */
bool sl_is_primary(void);

/* Cluster-wide documents beyond Smap/BMD/config: "rmd" (the rebalance),
 * and the modules' "etlmd", "planmd", "s3md", "remais", "authmd" and
 * "lostmd" (docs.c's table): a new reference or NULL. */
json_t *sl_cluster_doc(const char *name);
typedef void (*sl_doc_listener)(const json_t *doc);
/* fn is called when a new version of module document name is installed
 * (received or set locally); doc is borrowed for the call (json_incref to
 * keep it). */
void sl_cluster_doc_listen(const char *name, sl_doc_listener fn);
/* Non-primary gateway: relay the request (body and all) to the primary and
 * its answer back (off the HTTP thread). */
void sl_forward_to_primary(struct sl_req *r);
/* the same for a request whose body is buffered already */
void sl_forward_buffered_to_primary(struct sl_req *r);

/* ---- state the daemon handlers report ---- */
int64_t sl_cluster_uptime_ns(void);
bool sl_cluster_ready(void);

/* ---- admin actions (the HTTP side is api/cluster_api.c) ---- */
/* Merge partial (the caller's, only read) into the cluster config,
 * install, persist and (primary) push it. Keys that apply only after a
 * restart are appended to restart (may be NULL). */
int sl_cluster_set_config(json_t *partial, json_t *restart, struct sl_err *err);
/* reset-config: the cluster keys back to the node's configuration files
 * (sl_config_reset). cluster_wide on the primary: a new version, sent to
 * every node (the primary's files speak for the cluster); otherwise this
 * node only, at its version. */
int sl_cluster_reset_config(bool cluster_wide, json_t *restart, struct sl_err *err);
/* start-maintenance, stop-maintenance, decommission-node, shutdown-node of
 * node sid. *reb_out is the id of the rebalance it started (free()) or
 * NULL. */
int sl_cluster_member_action(const char *action, const char *sid, bool skip_reb, bool no_shutdown, bool force,
                             char **reb_out, struct sl_err *err);
/* Primary: make gateway id the primary (PUT /v1/cluster/proxy/ID): the
 * Smap names it, every node gets it, this one steps down. */
int sl_cluster_set_primary(const char *id, struct sl_err *err);
/* This gateway won the election for term after primary old (vote.c): the
 * Smap names it primary, flags old offline and carries term, pushed to
 * every node. */
void sl_cluster_take_over(const char *old, int64_t term);
/* The Smap names this gateway primary but it does not act as one (a
 * set-primary whose push it missed): take the role. */
void sl_cluster_assume_primary(void);
/* Primary, before it changes cluster metadata: asks every other gateway of
 * the map for its Smap term and version. If one has a newer map naming
 * another primary (this one was paused or cut off and was replaced), adopts
 * it (steps down) and returns -1 (503); if fewer than a majority of the
 * map's gateways (this one counted) answer, returns -1 (503: a change
 * needs a majority, and this primary may be cut off from it). 0 otherwise,
 * and on every other node. */
int sl_cluster_fence(struct sl_err *err);
/* Sleep one keepalive interval (keepalivetracker.target.interval, at least
 * 200 ms), less when *stop turns true; returns the interval in ms. */
int64_t sl_keepalive_wait(const volatile bool *stop);
/* Primary: start a global rebalance; its id (free()) or NULL when
 * rebalance.enabled is false. */
char *sl_cluster_rebalance(const char *why);
/* Stop this process as if signalled (SIGTERM to self). */
void sl_cluster_shutdown_self(const char *why);
/* PUT /v1/cluster rm-unsafe (AIStore's `advanced remove-from-smap`), on the
 * primary: node sid leaves the cluster map at once, no rebalance; it keeps
 * running, outside the cluster, until it joins again (a restart) */
int sl_cluster_rm_unsafe(const char *sid, struct sl_err *err);
/* on the node being removed so (PUT /v1/daemon rm-unsafe): a map without it
 * does not shut it down */
void sl_cluster_removed_unsafe(void);
/* Body-done handlers of the cluster's own endpoints (PUT /v1/metasync,
 * POST /v1/cluster/join): the route table in api/ hands bodies to them. */
void sl_cluster_metasync_done(struct sl_req *r);
void sl_cluster_join_done(struct sl_req *r);

/* ---- what hangs on the cluster ----
 * The cluster's own files (metadata and metasync, membership, keepalive,
 * start-up) call the work that watches them through these hooks: the
 * rebalance (reb.c), the record of lost objects (lost.c) and primary
 * elections (vote.c) register them (main.c, before sl_start_cluster).
 * Every registered hook that has the member is called, in registration
 * order; any member may be NULL. */
struct sl_cluster_hooks {
    const char *name;
    /* the node has joined (or is the primary) and serves */
    void (*serving)(void);
    /* the node stops (before the keepalive and the documents go) */
    void (*stopping)(void);
    /* a new Smap was installed (node.h's listener: the modify lock is held) */
    void (*smap_changed)(const struct sl_smap *old, const struct sl_smap *cur);
    /* a target that is in the map: rebalance id was decided (RMD received) */
    void (*rebalance)(const char *id);
    /* the primary, after each keepalive round */
    void (*primary_tick)(void);
    /* the primary: target n joined, or joined again */
    void (*joined)(const struct sl_snode *n);
    /* the primary: node n answered a keepalive with cii (its health ?cii
     * JSON, only read during the call) */
    void (*alive)(const struct sl_snode *n, const json_t *cii);
    /* the primary: target n is to leave (action) although its objects will
     * not move away (it is offline, or no rebalance runs): 0 it may, -1
     * with err it may not; with force it may, and what is lost is recorded */
    int (*leaving)(const char *action, const struct sl_snode *n, bool no_rebalance, bool force, struct sl_err *err);
    /* a listing of b is about to be merged from the targets: 0 go on, -1
     * with err to refuse it */
    int (*listing)(const struct sl_bck *b, struct sl_err *err);
};
/* h is static storage; at most 8; before sl_start_cluster. */
void sl_cluster_hook(const struct sl_cluster_hooks *h);

/* Run the listing hooks for b (fanout.c, before it merges a listing) */
int sl_cluster_listing_check(const struct sl_bck *b, struct sl_err *err);

/* Primary: bump the version of module document name ("etlmd", "planmd";
 * set in doc), persist, install and push (takes ownership of the caller's
 * reference; do not modify doc after). -1 for an unknown name. */
int sl_cluster_set_doc(const char *name, json_t *doc);

#endif
