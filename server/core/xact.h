/* SPDX-License-Identifier: MIT
 * xact.h: jobs (AIStore "xactions") on one node: id, kind, counters, abort,
 * end state. Every long-running piece of work registers here; gateways
 * aggregate the snapshots of all targets (spec §10).
 *
 * Threads: any. The registry has its own lock; a job is shared by its
 * workers, who count with sl_job_add (atomic) and poll abort_req; ext is
 * changed and read under the job's lock (sl_job_set_ext, sl_job_ext_copy),
 * and a reference (sl_job_get) keeps the job valid however it ends.
 */
#ifndef SL_XACT_H
#define SL_XACT_H

#include "sl.h"
#include <jansson.h>

struct sl_job {
    char id[64];
    char kind[32];
    char bck[SL_MAX_BCKNAME + 1];
    char dst_bck[SL_MAX_BCKNAME + 1];
    int64_t start_ns;
    volatile int64_t end_ns;        /* 0 while running */
    volatile bool abort_req;        /* workers poll this */
    bool aborted;
    char err[1024];
    uint64_t loc_objs, loc_bytes, out_objs, out_bytes, in_objs, in_bytes, err_objs;
    volatile bool idle;             /* a demand job (get-batch) with nothing to do now: is_idle while running */
    json_t *ext;                    /* kind-specific details (owned, set before finish) */
    int refs;
};

/* Register a running job. id NULL = generate. Returns the caller's
 * reference (sl_job_put); the registry holds another, so the job stays
 * queryable after it ends, until it is older than the last 256 ended ones. */
struct sl_job *sl_job_start(const char *kind, const char *id, const char *bck, const char *dst_bck);
/* Mark finished (err NULL/"" = success). Does not drop the caller's ref. */
void sl_job_finish(struct sl_job *j, const char *err);
/* the job ends because of its own error (it stopped itself, and may have
 * asked its peers to abort): "failed", not "aborted" */
void sl_job_fail(struct sl_job *j, const char *err);
/* Drop a reference; the last one frees j and its ext. NULL is a no-op. */
void sl_job_put(struct sl_job *j);
/* new reference (sl_job_put) or NULL */
struct sl_job *sl_job_get(const char *id);
/* Forget the ended jobs with this id (their status can no longer be
 * queried): how many were removed, or -1 (nothing removed) when one is
 * still running. */
int sl_job_remove(const char *id);
/* Request abort of matching jobs; returns how many were running. */
int sl_job_abort(const char *id, const char *kind);
/* Counter helpers (atomic) */
void sl_job_add(uint64_t *ctr, uint64_t v);
bool sl_job_aborting(const struct sl_job *j);
/* Snapshots of matching jobs (id/kind may be NULL or ""), newest first: a
 * new array. */
json_t *sl_jobs_snaps(const char *id, const char *kind, bool only_running);
json_t *sl_job_snap(const struct sl_job *j);    /* new reference */
/* Set ext details under the job lock (takes ownership of ext; the previous
 * ext is released). */
void sl_job_set_ext(struct sl_job *j, json_t *ext);
/* A deep copy of the ext details taken under the job lock (new reference;
 * an empty object when there are none), to modify and set back. */
json_t *sl_job_ext_copy(struct sl_job *j);

/* Map AIStore display names to kinds ("copy-bucket" -> "copy-bck", ...):
 * a static string, or kind itself when it is no display name. */
const char *sl_job_kind_norm(const char *kind);
/* AIStore's job kinds and Shale's own (ishard, get-batch, ...): whether
 * kind (or its display name) is one; valid is ", "-separated (static). */
bool sl_job_kind_known(const char *kind);
const char *sl_job_kinds(void);

#endif
