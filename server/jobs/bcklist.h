/* SPDX-License-Identifier: MIT
 * bcklist.h: the buckets a cluster-wide job is started for (lru, scrub,
 * cleanup-store): {"Buckets": [Bck...]} or {"Bck": Bck} in its start
 * message, kept as "provider/name" strings that travel to the targets as
 * they are; and the starting of such a job on every target (sl_bljob).
 */
#ifndef SL_BCKLIST_H
#define SL_BCKLIST_H

#include "http.h"
#include "meta.h"
#include "xact.h"

#include <jansson.h>
#include <pthread.h>

/* The buckets v names, each resolved (a bucket that does not exist: -1
 * with err, 404): *out a new array of "provider/name", or NULL when v names
 * none (every bucket). what names the job in errors ("start lru"). */
int sl_bcklist_parse(const json_t *v, const char *what, json_t **out, struct sl_err *err);
/* Whether b is one of list (NULL: every bucket is); an older primary's
 * bare "NAME" is an ais:// bucket. */
bool sl_bcklist_has(const json_t *list, const struct sl_bck *b);

/* ---- a job every target runs over such a list, one at a time each ----
 * PUT /v1/cluster {"action": "start", "value": {"Kind": KIND, "Buckets" |
 * "Bck", "Force"?}} on a gateway: the id (text) once every target that is
 * not offline took POST <path> {"id", "buckets", "force"}; a standalone
 * node starts it itself. run does the work on a thread of its own, between
 * the job's registration and its end (aborted when asked to). */
struct sl_bljob;
struct sl_bljob_req {
    char id[40];
    json_t *bcks;               /* sl_bcklist_parse's, or NULL: every bucket */
    bool force;                 /* "Force" */
    bool fix;                   /* "Fix" (scrub: repair what it finds; else it only reports) */
    struct sl_bljob *j;
};
struct sl_bljob {
    const char *kind;           /* the job's kind ("scrub"), in errors as "start scrub" */
    const char *path;           /* the targets' start path ("/v1/internal/scrub/start") */
    const char *busy_hint;      /* after the 409's "running already" ("" or " (stop it ...)") */
    void (*run)(struct sl_job *job, const struct sl_bljob_req *q);
    pthread_mutex_t mu;
    bool running;
    int64_t last_start;         /* sl_mono_ns() of the last run started here */
};
#define SL_BLJOB_INIT(kind, path, hint, run) { kind, path, hint, run, PTHREAD_MUTEX_INITIALIZER, false, 0 }
/* Start a run here with id (NULL: a new one; out: it, when not NULL); 409
 * while one runs. */
int sl_bljob_start_here(struct sl_bljob *j, const char *id, const json_t *bcks, bool force, bool fix, char out[40],
                        struct sl_err *err);
/* Whether a run is going here; *last_start (if not NULL) the last's start. */
bool sl_bljob_running(struct sl_bljob *j, int64_t *last_start);
/* The module's .internal (POST <path>) and .cluster_start (kind KIND). */
bool sl_bljob_internal(struct sl_bljob *j, struct sl_req *r);
bool sl_bljob_cluster_start(struct sl_bljob *j, struct sl_req *r, const char *kind, const json_t *value);
/* On a target (else nothing): a thread that starts a run here whenever
 * interval() ns (<= 0: off) have passed since the last one began, the first
 * one interval after now; setting ("scrub.interval") names it in the log. */
void sl_bljob_every(struct sl_bljob *j, int64_t (*interval)(void), const char *setting);

#endif
