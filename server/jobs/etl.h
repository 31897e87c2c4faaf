/* SPDX-License-Identifier: MIT
 * etl.h: Lua ETL. A transform is a sandboxed Lua script (lua/sandbox.h)
 * registered cluster-wide in EtlMD (cluster.h) and run by the targets, next
 * to the data:
 *   object mode  transform(data, ctx) -> bytes           (whole object)
 *   sample mode  transform_sample(sample, ctx) -> sample  (one WebDataset
 *                sample at a time; the shard is streamed through the format
 *                plugins and written back in the same format)
 * etl.c owns EtlMD, the /v1/etl API (init, list, details, logs, health,
 * metrics, stop, start, delete) and the per-target registry with counters,
 * logs and object errors; etl_run.c runs transforms: inline GET
 * (?etl_name=) and the building blocks the offline jobs (tcb.c) use.
 * docs/etl.md is the user's contract.
 */
#ifndef SL_ETL_H
#define SL_ETL_H

#include "http.h"
#include "module.h"
#include "meta.h"
#include "sandbox.h"

#include <pthread.h>

struct sl_plug;
struct sl_io;

enum { SL_ETL_OBJECT = 0, SL_ETL_SAMPLE = 1 };

#define SL_ETL_MAX_CODE (1024 * 1024)    /* bytes of Lua source */
#define SL_ETL_MAX_PIPELINE 8

struct sl_etl_err {
    char *obj;          /* "ais://b/o" */
    char *msg;
    char *job;          /* offline job id, or "" for inline */
    int ecode;          /* HTTP-style status */
    int64_t t;
};

/* One initialised ETL as a target (or standalone node) knows it. Entries
 * are refcounted: a transform in flight keeps its entry alive after the
 * ETL is stopped or deleted. Immutable fields after creation: name, code,
 * mode, lim, xid, init_msg. */
struct sl_etl {
    int refs;
    char name[40];
    char *code;
    size_t code_len;
    int mode;                       /* SL_ETL_OBJECT / SL_ETL_SAMPLE */
    struct sl_lua_limits lim;       /* obj_timeout, mem_limit, max_output */
    char xid[48];                   /* "etl-..." from init */
    json_t *init_msg;               /* normalised, as stored in EtlMD */
    volatile bool running;          /* stage Running (false: Aborted/stopped) */
    volatile bool removed;          /* deleted from EtlMD */
    volatile bool slow;             /* a call outgrew the inline budget: always run on the pool */

    /* counters (relaxed atomics) */
    uint64_t obj_count, in_bytes, out_bytes, err_count, cpu_ns, calls;
    uint64_t sample_count;          /* sample mode: samples transformed (obj_count: shards done) */

    pthread_mutex_t mu;             /* log and errs */
    struct sl_buf log;              /* recent script output, oldest dropped */
    struct sl_etl_err *errs;        /* ring of recent object errors */
    int nerrs, errs_head;
};

/* ---- etl.c ---- */
void sl_etl_init(void);             /* after the cluster module has loaded EtlMD */
void sl_etl_fini(void);

/* /v1/etl[/...] on any node */
void sl_etl_route(struct sl_req *r);
/* /v1/internal/etl/... on targets; true when handled */
bool sl_etl_internal(struct sl_req *r);

/* A running ETL by name, new reference (sl_etl_release); NULL with a 404
 * error naming it when unknown or stopped ("etl job NAME does not exist" /
 * "... is not running"). */
struct sl_etl *sl_etl_acquire(const char *name, struct sl_err *err);
void sl_etl_release(struct sl_etl *e);     /* the last reference frees e; NULL ok */
/* Comma list "a,b" -> references in out[0..*n) (all running, same mode;
 * out has room for SL_ETL_MAX_PIPELINE), released with sl_etl_release_list.
 * On error none is held and *n is 0. */
int sl_etl_acquire_list(const char *first, const char *pipeline, struct sl_etl **out, int *n, struct sl_err *err);
void sl_etl_release_list(struct sl_etl **v, int n);
/* Still initialised and running (offline jobs check between objects). */
bool sl_etl_usable(const struct sl_etl *e);

/* Remember a failed object (ecode: HTTP-style status) and log it. */
void sl_etl_record_error(struct sl_etl *e, const char *job, const char *obj, int ecode, const char *msg);
/* Sandbox log sink: ctx is a struct sl_etl_logctx. */
struct sl_etl_logctx {
    struct sl_etl *e;
    const char *obj;
};
void sl_etl_log_sink(void *ctx, const char *line, size_t len);
/* HTTP-style status for a failed transform (timeout 504, else 500) */
int sl_etl_ecode(const struct sl_err *err);

/* ---- etl_run.c ---- */

/* ctx.args from the request's etl_args: a JSON object/array when it parses
 * as one, else the string. *out is nil for NULL/"", and new either way
 * (sl_lua_val_free). */
void sl_etl_args_val(const char *etl_args, struct sl_lua_val *out);

/* Object mode: run the pipeline over data[0..len). On success *out is
 * malloc'd (free()) with *olen bytes. Errors name the ETL, object and line
 * and are recorded for `etl show errors` under job (NULL: inline). */
int sl_etl_run_bytes(struct sl_etl **v, int n, const struct sl_bck *b, const char *name, size_t nlen,
                     const struct sl_lua_val *args, const char *job, const char *data, size_t len, char **out,
                     size_t *olen, struct sl_err *err);

/* Largest object an object-mode pipeline accepts: a third of the smallest
 * mem_limit (input, output and copies live at once), capped by
 * etl.max_object_size. */
uint64_t sl_etl_max_input(struct sl_etl **v, int n);
/* Read size bytes of fd from offset 0 (pread; fd stays the caller's) into
 * *out, new (free()) and NUL-terminated. On error nothing to free. */
int sl_etl_read_all(int fd, uint64_t size, char **out, struct sl_err *err);

/* Sample mode: read the shard from `in` with format fmt, write the
 * transformed shard (same format) to `out`. Streaming, one sample in
 * memory at a time. *pp is new (sl_etl_pipe_close, NULL ok). The pipe
 * borrows v[0..n) (the caller's references and array), in and out: they
 * must outlive it. b, name, args and job are copied. */
struct sl_etl_pipe;
int sl_etl_pipe_open(struct sl_etl **v, int n, const struct sl_bck *b, const char *name, size_t nlen,
                     const struct sl_lua_val *args, const char *job, const struct sl_plug *fmt,
                     const struct sl_io *in, const struct sl_io *out, struct sl_etl_pipe **pp, struct sl_err *err);
/* 1: one sample (or pass-through member) processed; 0: the end (output
 * finished); -1: error (err). */
int sl_etl_pipe_step(struct sl_etl_pipe *p, struct sl_err *err);
void sl_etl_pipe_close(struct sl_etl_pipe *p);
uint64_t sl_etl_pipe_samples(const struct sl_etl_pipe *p);   /* samples given to the script */
uint64_t sl_etl_pipe_dropped(const struct sl_etl_pipe *p);   /* samples the script dropped */

/* Target GET with etl_name of the object the read path found (rd: taken
 * when handled): true when handled (a response was produced or the work
 * was offloaded). */
bool sl_etl_get(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, struct sl_read *rd);

/* The ETL module: /v1/etl, /v1/internal/etl/..., GET ?etl_name= */
extern const struct sl_module sl_etl_module;

#endif
