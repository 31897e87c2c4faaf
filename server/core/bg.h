/* SPDX-License-Identifier: MIT
 * bg.h: the background pool: a fixed set of threads that run work which may
 * block or take long (Lua transforms, calls to peers) so that the HTTP
 * threads never wait on it. Tasks run in submission order; a task owns its
 * argument. See sl_req_offload() in http.h for the request-side API.
 */
#ifndef SL_BG_H
#define SL_BG_H

#include "sl.h"

typedef void (*sl_bg_fn)(void *arg);

/* The pools: MAIN for work that computes (Lua, archives, listings), PEER
 * for work that mostly waits on another node (get-from-neighbour), so that
 * a slow or dead peer cannot hold up the rest, DISK for a request's waits
 * on its own disk (a PUT's fsyncs and metadata commit, a DELETE), so that
 * these neither hold a poll loop nor queue behind Lua. */
enum { SL_POOL_MAIN = 0, SL_POOL_PEER, SL_POOL_DISK, SL_POOL_COUNT };
#define SL_POOL_PEER_THREADS 32
#define SL_POOL_DISK_THREADS 16

/* Start nthreads threads in MAIN (<= 0: number of cores, at least 2),
 * SL_POOL_PEER_THREADS in PEER and SL_POOL_DISK_THREADS in DISK. */
int sl_bg_start(int nthreads, struct sl_err *err);
/* Queue a task. Always succeeds (the queue is unbounded; callers bound
 * their own concurrency). Before sl_bg_start or after sl_bg_stop the task
 * runs on the calling thread. */
void sl_bg_submit(sl_bg_fn fn, void *arg);          /* to MAIN */
void sl_bg_submit_to(int pool, sl_bg_fn fn, void *arg);
/* Stop accepting new work (sl_bg_stopping() turns true), wait up to
 * timeout_ms for queued and running tasks to finish. Returns the number
 * still in flight (0 = drained). */
int sl_bg_quiesce(int64_t timeout_ms);
bool sl_bg_stopping(void);
/* Join the threads (after sl_bg_quiesce). */
void sl_bg_stop(void);
/* Threads in MAIN; tasks queued or running in all pools. */
int sl_bg_threads(void);
int sl_bg_inflight(void);

/* The threads of a module at work, and the flag that sends them home before
 * what they use goes away (the store closes): a thread calls
 * sl_workers_enter before it starts (false: stopping, do not start) and
 * sl_workers_leave when done; loops check w->stopping. */
struct sl_workers {
    int active;
    volatile bool stopping;
};
bool sl_workers_enter(struct sl_workers *w);
/* The same for the thread of a job: when stopping, job finishes "aborted:
 * the target is shutting down" and the caller's reference to it goes. */
struct sl_job;
bool sl_workers_enter_job(struct sl_workers *w, struct sl_job *job);
void sl_workers_leave(struct sl_workers *w);
/* Set stopping, wait up to timeout_ms for the active ones; logs (what:
 * "mirror") when some are still at work. */
void sl_workers_quiesce(struct sl_workers *w, int64_t timeout_ms, const char *what);

#endif
