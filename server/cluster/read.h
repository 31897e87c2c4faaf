/* SPDX-License-Identifier: MIT
 * read.h: the one read path. Every reader of an object on a target — the
 * native GET/HEAD (api/tgt.c), S3's (api/s3obj.c), archive member reads,
 * inline ETL, get-batch items, job inputs — finds the object here, so that
 * a read the cluster can serve is served whichever API asked and whatever
 * state the cluster is in. The sources, in order:
 *
 *   1. this target's copy: the main replica, or for a mirrored bucket a
 *      healthy copy that restores the main (store.c, mirror.c); its file
 *      checked against the metadata's size, and its bytes against its
 *      checksum when asked (validate-checksum or the bucket's
 *      checksum.validate_warm_get). A damaged copy is never served: in an
 *      erasure-coded or remote-backed bucket it is dropped and made again
 *      below, else the read fails saying the object is damaged (counted,
 *      err_cksum_n) and the damage is recorded in its metadata
 *      (SL_DAMAGED_KEY): no later read serves it, checked or not
 *   2. during a membership change, the object's previous owner and the
 *      other targets (get-from-neighbour, reb.c): fetched and kept here
 *   3. an erasure-coded bucket: rebuilt from the slices or replicas the
 *      other targets hold (ec.c): kept when this target is the object's main
 *      one, else (a stand-in for a main target that is down) for this read
 *   4. a remote-backed bucket: fetched from the remote (backend.c) and kept;
 *      a HEAD asks the remote without fetching
 *
 * Encryption at rest (target/sse.h): an SSE-S3 object is decrypted here,
 * once, for every reader but those asking SL_READ_RAW (and a neighbour's
 * fetch, SL_READ_LOCAL, which carries the stored bytes): a streaming reader
 * (SL_READ_STREAM: the native GET, ranges) gets the decryptor in rd->dec,
 * the others (archive members, get-batch, ETL, job inputs) an fd that holds
 * the plaintext (decrypted into memory: memfd). Their metadata is the
 * plaintext's: no checksum (the store's covers the ciphertext), no
 * encryption entries (rd->sse names the mode). An SSE-C object is refused
 * (SL_EINVAL): its key is the client's, and only S3 requests carry it.
 *
 * A front end asks sl_read_req (or sl_read_try on its HTTP thread, then
 * sl_read_open on a pool thread) and only formats the answer: the open
 * object goes to its serve callback, an error to its fail callback.
 */
#ifndef SL_READ_H
#define SL_READ_H

#include "http.h"
#include "meta.h"
#include "md.h"
#include "sse.h"
#include "store.h"
#include "shale_plugin.h"

enum {
    SL_READ_VALIDATE = 1,   /* the data is checked against its checksum; a mismatch is never served */
    SL_READ_LOCAL = 2,      /* this target's copies only: a neighbour's own fetch (Ais-No-Gfn) */
    SL_READ_LATEST = 4,     /* remote-backed: the copy is made the remote's current version first */
    SL_READ_HEAD = 8,       /* metadata only: no fd (a remote object is HEADed there, not fetched) */
    SL_READ_RAW = 16,       /* the stored bytes as they are: ciphertext of an encrypted object (internal
                             * moves, checksum validation, S3's GET which decrypts with the request's key) */
    SL_READ_STREAM = 32,    /* an encrypted object: the reader decrypts as it sends (rd->dec), from any
                             * offset; else the fd handed over holds the plaintext */
};

enum { SL_READ_HERE = 0, SL_READ_REBUILT, SL_READ_REMOTE };

/* An object found for a read. The caller owns fd (closes it; -1 for a
 * HEAD) and md (sl_objmd_free), or hands both to sl_read_done. */
struct sl_read {
    int fd;
    struct sl_objmd md;             /* a REMOTE HEAD: size, mtime and the ETag (custom "ETag") the remote gave */
    struct sl_mpath *mp;            /* where it is stored here; NULL when it is not (REBUILT, REMOTE) */
    int from;                       /* SL_READ_HERE, _REBUILT (for this read only), _REMOTE (HEAD, not held) */
    char remote_version[80];        /* REMOTE: the remote's version, "" none */
    bool answered;                  /* a streamed cold GET answered the request itself (sl_read_req's tee) */
    bool checked;                   /* the file is the metadata's size (a pool thread's read checks it; the
                                     * HTTP thread's leaves it to the front end: sl_read_again) */
    bool repaired;                  /* the copy here was damaged, dropped and made again for this read */
    int sse;                        /* encrypted at rest: SL_SSE_S3 or _C (target/sse.h), 0 plain */
    struct sl_sse *dec;             /* SL_READ_STREAM of an SSE-S3 object: its decryptor (sl_read_done frees) */
};

void sl_read_done(struct sl_read *rd);

/* What request r asks of a read of b: SL_READ_VALIDATE for
 * ?validate-checksum or checksum.validate_warm_get, SL_READ_LATEST for
 * ?latest(-ver) or versioning.validate_warm_get of a remote-backed bucket,
 * SL_READ_LOCAL for a neighbour's fetch, SL_READ_HEAD for a HEAD. */
unsigned sl_read_flags(struct sl_req *r, const struct sl_bck *b);

/* The target that serves reads of b/name under s: its HRW owner, or when
 * that one is offline and b is erasure coded, the first target of the
 * object's EC list that is not (it rebuilds the object for the read).
 * NULL when s has no targets; an offline target when nothing better is up. */
const struct sl_snode *sl_read_target(const struct sl_smap *s, const struct sl_bck *b, const char *name,
                                      size_t nlen);
/* This target serves reads of b/name (its owner, or the EC stand-in). */
bool sl_read_here(const struct sl_smap *s, const struct sl_bck *b, const char *name, size_t nlen);

/* HTTP thread: 0 when the object is here, whole, and nothing more was
 * asked (rd filled); 1 when the read needs a pool thread (sl_read_open
 * there); -1 with err when nothing can serve it. Never blocks on a peer or
 * reads object data. */
int sl_read_try(const struct sl_bck *b, const char *name, size_t nlen, unsigned flags, struct sl_read *rd,
                struct sl_err *err);
/* Pool thread: every source in turn (see above). tee (NULL: none): a
 * whole-object native GET whose cold fetch streams to the client as the
 * bytes arrive; rd->answered then says it got its answer. 0 with rd
 * filled; -1 with err (SL_ENOOBJ: nothing holds it; SL_ECKSUM: damaged
 * and nothing to repair it from). */
int sl_read_open(const struct sl_bck *b, const char *name, size_t nlen, unsigned flags, struct sl_req *tee,
                 struct sl_read *rd, struct sl_err *err);

/* sl_read_open for a job's input (an ETL, copy, dsort or ishard source):
 * *fd and md the caller's; an encrypted one's plaintext. Pool and job
 * threads only. */
int sl_read_obj(const struct sl_bck *b, const char *name, size_t nlen, int *fd, struct sl_objmd *md,
                struct sl_err *err);
/* The same with flags (SL_READ_RAW: the stored bytes, as a copy that
 * carries the encryption with them) */
int sl_read_obj_ex(const struct sl_bck *b, const char *name, size_t nlen, unsigned flags, int *fd,
                   struct sl_objmd *md, struct sl_err *err);

/* What a front end does with the object (b and name borrowed for the call;
 * serve takes rd's fd and md). Called on the HTTP thread or a pool thread. */
struct sl_read_ops {
    void (*serve)(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, struct sl_read *rd);
    void (*fail)(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, const struct sl_err *err);
    bool tee;                       /* a whole-object cold GET may stream (the native answer's headers) */
    bool checks_size;               /* serve checks an unchecked rd's size itself (else sl_read_req does) */
};
/* Find b/name for r and call ops: at once when it is here, else on a pool
 * thread (the peer pool when peers or the remote may be asked). */
void sl_read_req(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, unsigned flags,
                 const struct sl_read_ops *ops);
/* A front end handed an object by the HTTP thread (rd->checked false)
 * found its file of another size than its metadata: the same read again on
 * a pool thread, where the copy is checked, and repaired or refused. */
void sl_read_again(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, unsigned flags,
                   const struct sl_read_ops *ops);

#endif
