/* SPDX-License-Identifier: MIT
 * moss_int.h: what the files of get-batch share. Included only by
 * server/jobs/moss*.c; everyone else has moss.h.
 *
 * The files, each calling only into those listed above it (no call cycle):
 *   moss_item.c   the request (MossReq) and its items; opening and reading
 *                 the items a node holds (fetching cold ones first)
 *   moss_pull.c   a holder's side: POST /v1/internal/moss/pull, sl_moss_pull
 *   moss_dt.c     the designated target: pulls from the holders, the
 *                 archive in request order, sl_moss_serve
 *   moss.c        the gateway, the routes, the module
 *
 * Threads: the items of one request (struct moss, its struct src) are
 * parsed, opened and read by one thread at a time (an object's shared
 * descriptor counts its references without atomics). moss_open_local
 * fetches cold items on threads of its own meanwhile, which share m under
 * a mutex (moss_bck_of grows m's bucket cache). moss_dt_run is an offload
 * fn (off the HTTP threads); moss_pull_done runs on the HTTP thread and
 * hands the pull to a thread of its own.
 */
#ifndef SL_MOSS_INT_H
#define SL_MOSS_INT_H

#include "moss.h"
#include "arch.h"

#define CHUNK (256 * 1024)
#define PIPE_HIGH (4 * SL_MIB)

/* ---- moss_item.c: the request ---- */

struct item {
    char *bck, *prov, *obj, *arch, *opaque;
    char *as;                   /* the entry's name, when the caller chose it (epoch plans) */
    char *rawhdr;               /* raw: the range is a tar fragment whose first header names this member */
    int64_t start, length;
    int owner;                  /* index into moss.peers; -1: this node */
    /* outcome */
    int code;                   /* enum sl_code; 0: ok */
    char *err;
    int64_t size;               /* bytes delivered */
};

struct bcache {
    char *name, *prov;
    struct sl_bck b;
};

struct moss {
    struct item *it;
    int n;
    const struct sl_plug *fmt;
    const char *mime;           /* canonical: .tar .tgz .tar.lz4 .zip */
    bool coer, onob, strm;
    bool fixed_mtime;           /* entries dated 0: the same request gives the same bytes */
    bool raw;                   /* every item is a tar fragment (rawhdr): the answer is their concatenation */
    int coloc;
    struct bcache **bc;
    int nbc;
};

const char *moss_ctype_of(const char *canon);
void moss_free(struct moss *m);
/* MossReq -> m. path_bck: the default bucket from the path (may be NULL). */
int moss_parse(const json_t *j, const char *path_bck, const char *path_prov, struct moss *m, struct sl_err *err);
int moss_allow(struct sl_req *r, const struct moss *m, struct sl_err *err);
const struct sl_bck *moss_bck_of(struct moss *m, const struct item *x, struct sl_err *err);
/* m: items (copied), a streamed tar dated 0 */
void moss_of_items(struct moss *m, const struct sl_moss_item *items, int n);

/* ---- moss_item.c: one item on the node that holds it ---- */

struct ofd;
struct src {
    int fd;                     /* its own, or shared->fd */
    struct ofd *shared;
    uint64_t off, left;
    struct sl_arch_member *am;
    char *pre;                  /* the first bytes, read ahead (tar runs) */
    size_t npre, ppre;
    bool open;
};


/* Size every item of idx[0..n) held here, into srcs[0..n) */
void moss_open_local(struct moss *m, const int *idx, int n, struct src *srcs);
int moss_src_ready(struct moss *m, struct item *x, struct src *s, struct sl_err *err);
int64_t moss_src_read(struct src *s, char *buf, size_t n, struct sl_err *err);
void moss_src_close(struct src *s);

/* ---- moss_pull.c, moss_dt.c: the routes' handlers ---- */

void moss_pull_done(struct sl_req *r);
void moss_dt_run(struct sl_req *r, void *arg);
/* The module's start: the watcher that finishes an idle get-batch job. */
void moss_watch_start(void);

#endif
