/* SPDX-License-Identifier: MIT
 * backend.h: buckets with a remote bucket behind them (bucket property
 * backend_bck, as AIStore's), through the backend plugin of the remote's
 * provider (plugins/backend_s3.c for "aws"):
 *
 *   GET     an object not held here is fetched from the remote, stored
 *           (the ordinary crash-safe PUT) and then served; concurrent GETs
 *           of the same object fetch it once
 *   HEAD    an object not held here is HEADed at the remote
 *   PUT     the body lands in a work file, goes to the remote, and is
 *           published here only once the remote took it
 *   DELETE  at the remote, then here; evict-listrange: here only
 *
 * Every call blocks on the network: call from pool threads only.
 * Errors name the remote bucket and object: 404 when the remote says so,
 * 503 when it cannot be reached, its own 4xx otherwise (403 names the
 * credentials used).
 */
#ifndef SL_BACKEND_H
#define SL_BACKEND_H

#include "sl.h"
#include "meta.h"
#include "md.h"
#include "shale_plugin.h"

/* b has a remote bucket behind it: b is s3://NAME itself (provider aws,
 * its own remote), or ais://NAME with backend_bck set. */
bool sl_bck_remote(const struct sl_bck *b);
/* How a backend_bck ais://@ALIAS/NAME finds the remote cluster's URL
 * (cluster/remais.c's sl_remais_url, set at start). */
typedef int (*sl_backend_alias_fn)(const char *key, char *url, size_t n, struct sl_err *err);
void sl_backend_set_alias_resolver(sl_backend_alias_fn fn);
/* A backend plugin for provider ("aws") is loaded here. */
bool sl_backend_loaded(const char *provider);
/* AIStore's enable-bend/disable-bend on this target: provider (normalized,
 * a cloud one: aws, gcp, azure, oci) on or off; begin only checks. A disabled
 * provider's buckets fail at once (503 naming it and how to enable it). */
int sl_backend_set_enabled(const char *provider, bool on, bool commit, struct sl_err *err);
bool sl_backend_disabled(const char *provider);
/* HEAD the remote bucket of b (b may be a stand-in built from a name and
 * props, not yet in the BMD): 0, or -1 with SL_ENOBCK when the remote says
 * it does not exist, or the remote's error. */
int sl_backend_head_bucket(const struct sl_bck *b, struct sl_err *err);

/* Check a backend_bck property before it is set: the provider has a
 * backend plugin loaded here. 0 ok (also when props set none). */
int sl_backend_check_props(const json_t *props, struct sl_err *err);

/* Fetch object name of b from its remote into the store (cold GET). */
int sl_backend_fetch(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err);
/* How a fetch goes: AIStore's blob download (its chunk-size and
 * num-workers), and the bytes fetched so far, for a job's stats. */
struct sl_fetch_opts {
    int64_t chunk;              /* bytes a range; 0: backend.blob_chunk */
    int workers;                /* ranges at a time; 0: backend.blob_workers; 1: one stream, no ranges */
    uint64_t *progress;         /* not NULL: the bytes written here are added to it as they come */
};
#define SL_BLOB_CHUNK_MIN (64 * 1024LL)
#define SL_BLOB_CHUNK_MAX (2048 * 1024 * 1024LL)
#define SL_BLOB_WORKERS_MAX 64
int sl_backend_fetch_opts(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_fetch_opts *o,
                          struct sl_err *err);
/* The options a request's Ais-Blob-Download: true, Ais-Blob-Chunk (a size)
 * and Ais-Blob-Workers ask for; 0 with o zeroed when it asks for none, -1
 * with err (400) for a bad value. */
struct sl_req;
int sl_backend_blob_headers(struct sl_req *r, struct sl_fetch_opts *o, struct sl_err *err);
/* The same, answering r (a whole-object GET) as the bytes arrive: the
 * client does not wait for the whole fetch. *answered says whether r got
 * its answer (then a failure after the first byte cut it off); when not,
 * the caller answers (from the store, or with err). r's blob headers
 * (sl_backend_blob_headers) are taken. */
int sl_backend_fetch_tee(const struct sl_bck *b, const char *name, size_t nlen, struct sl_req *r, bool *answered,
                         struct sl_err *err);
/* Wait until a fetch of name in flight (if any) has ended: a streaming
 * cold GET's client may be done before the copy is committed, and what it
 * does next (HEAD, DELETE, evict) must see the copy. */
void sl_backend_wait_fetch(const struct sl_bck *b, const char *name, size_t nlen);
int sl_backend_head(const struct sl_bck *b, const char *name, size_t nlen, struct sl_backend_obj *o,
                    struct sl_err *err);
/* Write bytes [0, size) of fd to the remote as name; o gets its answer. */
int sl_backend_put(const struct sl_bck *b, const char *name, size_t nlen, int fd, int64_t size,
                   struct sl_backend_obj *o, struct sl_err *err);
struct sl_put;
/* A PUT's write-through: the bytes p holds to the remote as name (after a
 * cold GET's fetch of it in flight, if any), and the remote's answer into
 * p's custom metadata (sl_backend_custom_put); p is left to the caller. */
int sl_backend_put_through(const struct sl_bck *b, const char *name, size_t nlen, struct sl_put *p,
                           struct sl_err *err);
/* The custom metadata of sl_backend_custom, set on p */
void sl_backend_custom_put(const struct sl_bck *b, const struct sl_backend_obj *o, struct sl_put *p);
/* Delete at the remote; a remote 404 is success. */
int sl_backend_delete(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err);
/* One page of the remote's names under prefix (token "" first; next gets
 * the next page's token, "" after the last), each to cb. */
int sl_backend_list_page(const struct sl_bck *b, const char *prefix, const char *token, int max,
                         sl_backend_list_fn cb, void *ctx, char *next, size_t next_len, struct sl_err *err);
/* Make the copy of name the remote's current version (validate_warm_get,
 * latest-ver): HEAD the remote, fetch again when its ETag differs from the
 * copy's (or nothing is held). Gone at the remote: -1 with SL_ENOOBJ (and,
 * with versioning.synchronize, the copy deleted too). */
int sl_backend_refresh(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err);
/* One page of a remote-backed bucket's names as a list page (m: prefix,
 * token, pagesize; out->token: the next page's), for sl_lso_walk; no
 * cached flags. A non-recursive listing is refused (501). */
struct sl_lsomsg;
struct sl_lspage;
int sl_backend_lso_page(const struct sl_bck *b, const struct sl_lsomsg *m, struct sl_lspage *out, struct sl_err *err);
/* The custom metadata a copy of a remote object of b carries (source: the
 * remote's provider, ETag, ...). */
void sl_backend_custom(const struct sl_bck *b, const struct sl_backend_obj *o, struct sl_kv **kv, int *n);

#endif
