/* SPDX-License-Identifier: MIT
 * store.c: object storage on a target. See store.h for the layout and the
 * PUT protocol.
 */
#include "store.h"
#include "cksum.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "stats.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>
#include <xxhash.h>

#define NLOCKS 4096

static struct sl_mpath *mpaths;
static int nmpaths;
static char store_node[48];
static pthread_rwlock_t nlocks[NLOCKS];
static int wp_data = SL_WP_IMMEDIATE;
static int wp_md = SL_WP_IMMEDIATE;

struct sl_put {
    struct sl_bck bck;
    char *name;
    size_t nlen;
    struct sl_mpath *mp;
    char *work_rel;          /* "@ais/b/%wk/xxxx" (@PROVIDER) */
    char *work_abs;
    int fd;
    uint64_t size;
    struct sl_cksum ck, cck;  /* bucket type; client type (if different) */
    bool have_cck;
    int client_type;
    char *client_val;
    struct sl_kv *custom;
    int ncustom;
    struct sl_objmd preserve;
    bool have_preserve, keep_custom;
    char *wbuf;              /* small writes gather here (PUT_WBUF bytes) */
    size_t wlen;
    bool gated;              /* counted in the bucket's writes in flight */
    bool new_dirs;           /* choose_fname created the object's directory */
};

/* ---- the write gate ----
 * Writes in flight per bucket, and the buckets that take none (sealed:
 * being renamed). A sealed bucket refuses a write before it starts; a
 * drain waits until the ones already started are done, so a copy that
 * starts after the drain sees every write the bucket ever acknowledged. */
struct gate {
    uint64_t bid;
    int inflight;
    bool sealed;
};
static pthread_mutex_t gate_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cv = PTHREAD_COND_INITIALIZER;
static struct gate *gates;
static int ngates, capgates;

static struct gate *gate_find(uint64_t bid, bool add)
{
    for (int i = 0; i < ngates; i++)
        if (gates[i].bid == bid)
            return &gates[i];
    if (!add)
        return NULL;
    if (ngates == capgates) {
        capgates = capgates ? capgates * 2 : 16;
        gates = sl_xrealloc(gates, (size_t)capgates * sizeof(*gates));
    }
    gates[ngates] = (struct gate){ bid, 0, false };
    return &gates[ngates++];
}

static void gate_gc(struct gate *g)
{
    if (!g->inflight && !g->sealed)
        *g = gates[--ngates];
}

/* rename_copy: the copy of a rename into its new name (the one write the
 * new name takes meanwhile) */
static int write_enter(const struct sl_bck *b, bool rename_copy, struct sl_err *err)
{
    const char *to = json_string_value(json_object_get(b->props, "renamed"));
    const char *from = json_string_value(json_object_get(b->props, "renaming_from"));
    pthread_mutex_lock(&gate_mu);
    struct gate *g = gate_find(b->bid, true);
    if (g->sealed || to || (from && !rename_copy)) {
        gate_gc(g);
        pthread_mutex_unlock(&gate_mu);
        if (from)
            return sl_errf(err, SL_EBUSY, "ais://%s is being renamed from ais://%s: neither name takes writes until "
                           "the rename ends (reads work); nothing was written, retry when it is done", b->name, from);
        return sl_errf(err, SL_EBUSY, "ais://%s is being renamed%s%s: neither name takes writes until the rename ends "
                       "(reads work); nothing was written, retry when it is done", b->name, to ? " to ais://" : "",
                       to ? to : "");
    }
    g->inflight++;
    pthread_mutex_unlock(&gate_mu);
    return 0;
}

static void write_leave(uint64_t bid)
{
    pthread_mutex_lock(&gate_mu);
    struct gate *g = gate_find(bid, false);
    if (g && --g->inflight == 0) {
        pthread_cond_broadcast(&gate_cv);
        gate_gc(g);
    }
    pthread_mutex_unlock(&gate_mu);
}

void sl_store_seal(uint64_t bid, bool on)
{
    pthread_mutex_lock(&gate_mu);
    struct gate *g = gate_find(bid, on);
    if (g) {
        g->sealed = on;
        gate_gc(g);
    }
    pthread_mutex_unlock(&gate_mu);
}

int sl_store_drain(uint64_t bid, int64_t timeout_ns, struct sl_err *err)
{
    int64_t end = sl_now_ns() + timeout_ns;
    pthread_mutex_lock(&gate_mu);
    struct gate *g = gate_find(bid, true);
    g->sealed = true;
    while (g->inflight > 0 && sl_now_ns() < end) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&gate_cv, &gate_mu, &ts);
        g = gate_find(bid, true); /* the table may have moved */
    }
    int left = g->inflight;
    pthread_mutex_unlock(&gate_mu);
    if (left)
        return sl_errf(err, SL_ETIMEOUT, "t[%s]: %d write(s) to the bucket were still in flight after %lld s (a long "
                       "upload?); nothing was renamed: retry when they are done", store_node, left,
                       (long long)(timeout_ns / 1000000000LL));
    return 0;
}

/* Request bodies arrive in pieces no larger than the HTTP connection's
 * buffer (~32 KiB): gather them, so a 10 MiB PUT is 40 writes, not 320. */
#define PUT_WBUF (256 * 1024)

/* Gather buffers kept for the next PUTs. malloc hands a freed 256 KiB block
 * back to the kernel (munmap or trim), and the next PUT faulted it in again
 * page by page: 2-3 % of a 128 KiB PUT's CPU. At most WBUF_SPARES *
 * PUT_WBUF (2 MiB) stay kept. */
#define WBUF_SPARES 8
static pthread_mutex_t wbuf_mu = PTHREAD_MUTEX_INITIALIZER;
static char *wbuf_spare[WBUF_SPARES];
static int nwbuf_spare;

static char *wbuf_get(void)
{
    char *b = NULL;
    pthread_mutex_lock(&wbuf_mu);
    if (nwbuf_spare)
        b = wbuf_spare[--nwbuf_spare];
    pthread_mutex_unlock(&wbuf_mu);
    return b ? b : sl_xmalloc(PUT_WBUF);
}

static void wbuf_put(char *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&wbuf_mu);
    if (nwbuf_spare < WBUF_SPARES) {
        wbuf_spare[nwbuf_spare++] = b;
        b = NULL;
    }
    pthread_mutex_unlock(&wbuf_mu);
    free(b);
}

/* ---- helpers ---- */

static uint64_t name_hash(uint64_t bid, const char *name, size_t nlen)
{
    return sl_xxh64(name, nlen, bid);
}

static pthread_rwlock_t *name_lock(const struct sl_bck *b, const char *name, size_t nlen)
{
    return &nlocks[name_hash(b->bid, name, nlen) & (NLOCKS - 1)];
}

void sl_obj_cname(char *out, size_t sz, const struct sl_bck *b, const char *name, size_t nlen)
{
    int n = sl_utf8_cut(name, nlen, 300);
    snprintf(out, sz, "%s://%s/%.*s%s", sl_provider_scheme(b->provider), b->name, n, name, nlen > 300 ? "..." : "");
}

int sl_objname_check(const char *name, size_t nlen, struct sl_err *err)
{
    if (nlen == 0)
        return sl_errf(err, SL_EINVAL, "object name is empty: use /v1/objects/BUCKET/OBJECT_NAME");
    if (nlen > SL_MAX_OBJNAME)
        return sl_errf(err, SL_EINVAL, "object name is too long (%zu bytes, the limit is %d)", nlen, SL_MAX_OBJNAME);
    if (memchr(name, 0, nlen))
        return sl_errf(err, SL_EINVAL, "object name contains a NUL byte");
    if (!sl_utf8_valid(name, nlen))
        return sl_errf(err, SL_EINVAL, "object name is not valid UTF-8");
    const char *p = name, *end = name + nlen;
    while (p <= end) {
        const char *s = memchr(p, '/', (size_t)(end - p));
        size_t l = s ? (size_t)(s - p) : (size_t)(end - p);
        if ((l == 1 && p[0] == '.') || (l == 2 && p[0] == '.' && p[1] == '.'))
            return sl_errf(err, SL_EINVAL,
                           "object name \"%.*s\" contains a \"%.*s\" path segment; names may not contain \".\" or "
                           "\"..\" segments",
                           (int)SL_MIN(nlen, 200), name, (int)l, p);
        if (!s)
            break;
        p = s + 1;
    }
    return 0;
}

static bool needs_hash(const char *name, size_t nlen)
{
    if (nlen > 3000 || name[0] == '/' || name[nlen - 1] == '/')
        return true;
    size_t seg = 0;
    for (size_t i = 0; i < nlen; i++) {
        if (name[i] == '/') {
            if (seg == 0)
                return true;
            seg = 0;
        } else if (++seg > 255) {
            return true;
        }
    }
    if (nlen == 66 && name[0] == '.' && name[1] == 'x')
        return true;
    return false;
}

static void hashed_fname(const char *name, size_t nlen, char out[72])
{
    unsigned char d[SHA256_DIGEST_LENGTH];
    sl_sha256(name, nlen, d);
    out[0] = '.';
    out[1] = 'x';
    sl_hex(d, SHA256_DIGEST_LENGTH, out + 2);
}

/* A bucket's directory on a mountpath: @PROVIDER/NAME (AIStore's layout:
 * ais://b and s3://b live apart), then the content type ("%ob/", "%wk"). */
static void bdir(struct sl_buf *out, const struct sl_mpath *mp, const struct sl_bck *b, const char *ct)
{
    sl_buf_reset(out); /* "MPATH/@PROVIDER/BUCKET/CT", on every object access: no printf */
    sl_buf_adds(out, mp->path);
    sl_buf_adds(out, "/@");
    sl_buf_adds(out, b->provider);
    sl_buf_addc(out, '/');
    sl_buf_adds(out, b->name);
    sl_buf_addc(out, '/');
    sl_buf_adds(out, ct);
}

void sl_obj_fqn(struct sl_buf *out, const struct sl_mpath *mp, const struct sl_bck *b, const char *name, size_t nlen,
                const char *fname)
{
    bdir(out, mp, b, "%ob/");
    if (fname && fname[0])
        sl_buf_adds(out, fname);
    else
        sl_buf_add(out, name, nlen);
}

/* Each thread's open bucket directories ("MPATH/@PROVIDER/BUCKET/%ob" of
 * the store's mountpaths, O_PATH), so that a GET opens its file relative to
 * one: the walk from / down to the bucket is done once per thread, bucket
 * and mountpath, not per object (it was a fifth of the open). A hint only:
 * keyed by the bucket's id, which a re-created bucket does not share, and
 * a directory removed and made again (fsck prunes empty ones) fails the
 * open, which then takes the full path. Destroying a bucket or pruning
 * directories moves dc_gen on, and each thread lets its directories go at
 * its next open. Only the owning thread touches its cache, so no fd is
 * closed under another thread's feet. */
#define DC_SLOTS 16
struct dircache {
    unsigned gen, next;
    struct {
        uint64_t bid;
        int mp, fd;
    } e[DC_SLOTS];
};
static pthread_key_t dc_key;
static pthread_once_t dc_once = PTHREAD_ONCE_INIT;
static unsigned dc_gen;
static int dc_open, dc_max; /* fds the caches hold, all threads (atomic); at most an eighth of the fd limit */

static void dc_close(int *fd)
{
    if (*fd < 0)
        return;
    close(*fd);
    *fd = -1;
    __atomic_sub_fetch(&dc_open, 1, __ATOMIC_RELAXED);
}

static void dc_clear(struct dircache *dc)
{
    for (int i = 0; i < DC_SLOTS; i++)
        dc_close(&dc->e[i].fd);
}

static void dc_free(void *p)
{
    dc_clear(p);
    free(p);
}

static void dc_init(void)
{
    pthread_key_create(&dc_key, dc_free);
    struct rlimit rl;
    dc_max = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ? (int)SL_MIN(rl.rlim_cur / 8, 4096)
                                                                                 : 4096;
}

static void dc_invalidate(void)
{
    __atomic_add_fetch(&dc_gen, 1, __ATOMIC_SEQ_CST);
}

/* The thread's directory fd for b's objects on mp, or -1 */
static int dc_dir(const struct sl_mpath *mp, const struct sl_bck *b, int *slot)
{
    if (mp->idx < 0)
        return -1; /* (a detached mountpath of a resilver: not the store's) */
    struct dircache *dc = pthread_getspecific(dc_key);
    if (!dc) {
        dc = sl_xcalloc(1, sizeof(*dc));
        for (int i = 0; i < DC_SLOTS; i++)
            dc->e[i].fd = -1;
        dc->gen = __atomic_load_n(&dc_gen, __ATOMIC_SEQ_CST);
        pthread_setspecific(dc_key, dc);
    }
    unsigned g = __atomic_load_n(&dc_gen, __ATOMIC_SEQ_CST);
    if (dc->gen != g) {
        dc_clear(dc);
        dc->gen = g;
    }
    for (int i = 0; i < DC_SLOTS; i++)
        if (dc->e[i].fd >= 0 && dc->e[i].bid == b->bid && dc->e[i].mp == mp->idx) {
            *slot = i;
            return dc->e[i].fd;
        }
    int i = (int)(dc->next % DC_SLOTS);
    if (dc->e[i].fd < 0 && __atomic_load_n(&dc_open, __ATOMIC_RELAXED) >= dc_max)
        return -1; /* (no fd taken from the node's connections and files) */
    struct sl_buf d;
    sl_buf_init(&d);
    bdir(&d, mp, b, "%ob");
    int fd = open(d.p, O_PATH | O_DIRECTORY | O_CLOEXEC);
    sl_buf_free(&d);
    if (fd < 0)
        return -1;
    dc->next++;
    dc_close(&dc->e[i].fd); /* (the slot's older directory, if any) */
    __atomic_add_fetch(&dc_open, 1, __ATOMIC_RELAXED);
    dc->e[i].bid = b->bid;
    dc->e[i].mp = mp->idx;
    dc->e[i].fd = fd;
    *slot = i;
    return fd;
}

/* Open an object's file for reading (sl_obj_fqn's file), relative to the
 * thread's bucket directory when it can; else by its full path, which is
 * left in fqn (also for the caller's messages when both fail). */
static int obj_open_rd(const struct sl_mpath *mp, const struct sl_bck *b, const char *name, size_t nlen,
                       const char *fname, struct sl_buf *fqn)
{
    int slot;
    int dfd = nlen <= SL_MAX_OBJNAME ? dc_dir(mp, b, &slot) : -1;
    if (dfd >= 0) {
        char rel[SL_MAX_OBJNAME + 1];
        const char *rp = fname && fname[0] ? fname : rel;
        if (rp == rel) {
            memcpy(rel, name, nlen);
            rel[nlen] = 0;
        }
        int fd = openat(dfd, rp, O_RDONLY | O_CLOEXEC);
        if (fd >= 0)
            return fd;
        /* the directory may be one removed since: let it go, and the full path says */
        dc_close(&((struct dircache *)pthread_getspecific(dc_key))->e[slot].fd);
    }
    sl_obj_fqn(fqn, mp, b, name, nlen, fname);
    return open(fqn->p, O_RDONLY | O_CLOEXEC);
}

pthread_rwlock_t *sl_obj_lock(const struct sl_bck *b, const char *name, size_t nlen)
{
    return name_lock(b, name, nlen);
}

void sl_obj_copy_fqn(struct sl_buf *out, const struct sl_mpath *mp, const struct sl_bck *b, const char *name,
                     size_t nlen)
{
    char fname[72];
    hashed_fname(name, nlen, fname);
    sl_obj_fqn(out, mp, b, name, nlen, fname);
}

char *sl_store_work_path(const struct sl_mpath *mp, const struct sl_bck *b)
{
    struct sl_buf d;
    sl_buf_init(&d);
    bdir(&d, mp, b, "%wk");
    sl_mkdir_p(d.p, 0755);
    char rid[24];
    sl_rand_id(rid, 16);
    sl_buf_printf(&d, "/%s", rid);
    return sl_buf_steal(&d);
}

bool sl_store_sync_data(void)
{
    return wp_data == SL_WP_IMMEDIATE;
}

bool sl_store_put_syncs(void)
{
    return wp_data == SL_WP_IMMEDIATE || wp_md == SL_WP_IMMEDIATE;
}

/* ---- copying an object's bytes to a work file (mirror copies, promotion, moves) ---- */

#define STORE_COPY_BUF (1024 * 1024)

int sl_store_copy_work(int src, const struct sl_objmd *md, const struct sl_mpath *mp, const struct sl_bck *b,
                       const volatile bool *stop, char **work, struct sl_err *err)
{
    char *path = sl_store_work_path(mp, b);
    int out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (out < 0) {
        int e = errno;
        sl_errf(err, e == ENOSPC ? SL_ENOSPC : SL_EIO, "cannot create a work file on mountpath %s: %s", mp->path,
                strerror(e));
        free(path);
        return -1;
    }
    struct sl_cksum ck;
    bool check = md->cksum_type != SL_CK_NONE && md->cksum[0];
    if (check)
        sl_cksum_init(&ck, md->cksum_type);
    char *buf = sl_xmalloc(STORE_COPY_BUF);
    uint64_t off = 0;
    int rc = 0;
    while (off < md->size && rc == 0) {
        if (stop && *stop) {
            rc = sl_errf(err, SL_EUNAVAIL, "t[%s] is shutting down", G.id);
            break;
        }
        ssize_t r = pread(src, buf, (size_t)SL_MIN((uint64_t)STORE_COPY_BUF, md->size - off), (off_t)off);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            rc = sl_errf(err, SL_EIO, "reading the object: %s", r < 0 ? strerror(errno) : "shorter than its metadata");
            break;
        }
        if (check)
            sl_cksum_update(&ck, buf, (size_t)r);
        for (ssize_t w = 0; w < r;) {
            ssize_t n = write(out, buf + w, (size_t)(r - w));
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0) {
                int e = errno;
                rc = sl_errf(err, e == ENOSPC || e == EDQUOT ? SL_ENOSPC : SL_EIO, "writing a copy on %s: %s",
                             mp->path, strerror(e));
                break;
            }
            w += n;
        }
        off += (uint64_t)r;
    }
    free(buf);
    if (check) {
        char got[SL_CKSUM_HEX_MAX];
        sl_cksum_final(&ck, got);
        if (rc == 0 && strcmp(got, md->cksum) != 0)
            rc = sl_errf(err, SL_ECKSUM, "BAD DATA CHECKSUM: stored %s(%s), data hashes to %s",
                         sl_cksum_name(md->cksum_type), md->cksum, got);
    }
    if (rc == 0 && sl_store_sync_data() && fsync(out) < 0)
        rc = sl_errf(err, SL_EIO, "fsync of a copy on %s: %s", mp->path, strerror(errno));
    close(out);
    if (rc == 0)
        sl_fault("mirror-before-rename");
    if (rc < 0) {
        unlink(path);
        free(path);
        return -1;
    }
    *work = path;
    return 0;
}

/* ---- the record beside a mirror copy ----
 * A copy's mountpath keeps the object's metadata too, in its aux DB under
 * "mc" + bid + sha256(name), so that the copy can become the main replica
 * when the main's mountpath is lost with its metadata (sl_store_promote).
 * Written once the copy file is in place, removed before the file goes:
 * a record never names a copy that is not complete. */
#define COPY_KEY 42
#define COPY_KEY_BCK 10 /* "mc" + bid: the prefix of a bucket's records */

static void copy_key(uint64_t bid, const char *name, size_t nlen, unsigned char out[COPY_KEY])
{
    out[0] = 'm';
    out[1] = 'c';
    for (int i = 0; i < 8; i++)
        out[2 + i] = (unsigned char)(bid >> (56 - 8 * i));
    sl_sha256(name, nlen, out + COPY_KEY_BCK);
}

int sl_obj_copy_record(struct sl_mpath *cm, const struct sl_bck *b, const char *name, size_t nlen,
                       const struct sl_objmd *md, bool wait, struct sl_err *err)
{
    unsigned char k[COPY_KEY];
    copy_key(b->bid, name, nlen, k);
    struct sl_buf v;
    sl_buf_init(&v);
    sl_objmd_pack(md, name, nlen, &v);
    struct sl_md_op op = { .kind = SL_MD_PUT_AUX, .key = (const char *)k, .klen = sizeof(k), .val = v.p,
                           .vlen = v.len };
    int rc = sl_md_commit(cm->md, &op, 1, wait, err);
    sl_buf_free(&v);
    return rc;
}

/* The record beside the copy of b/name on mp: 1 (md the caller's), 0 none. */
static int copy_record_get(struct sl_mpath *mp, const struct sl_bck *b, const char *name, size_t nlen,
                           struct sl_objmd *md)
{
    unsigned char k[COPY_KEY];
    copy_key(b->bid, name, nlen, k);
    struct sl_buf v;
    sl_buf_init(&v);
    char *rn = NULL;
    size_t rl = 0;
    int rc = sl_md_aux_get(mp->md, (const char *)k, sizeof(k), &v) == 1 &&
             sl_objmd_unpack(v.p, v.len, &rn, &rl, md) == 0;
    if (rc && (rl != nlen || memcmp(rn, name, nlen) != 0)) { /* (another name with the same hash) */
        sl_objmd_free(md);
        rc = 0;
    }
    free(rn);
    sl_buf_free(&v);
    return rc;
}

/* Remove the record of b/name's copy on cm (wait: durable on return). */
static int copy_record_del(struct sl_mpath *cm, const struct sl_bck *b, const char *name, size_t nlen, bool wait,
                           struct sl_err *err)
{
    unsigned char k[COPY_KEY];
    copy_key(b->bid, name, nlen, k);
    struct sl_md_op op = { .kind = SL_MD_DEL_AUX, .key = (const char *)k, .klen = sizeof(k) };
    return sl_md_commit(cm->md, &op, 1, wait, err);
}

/* Remove a copy's file (its record gone first: a record never names a missing file for long). */
static void copy_file_unlink(const char *path)
{
    if (unlink(path) < 0 && errno != ENOENT)
        sl_logw("cannot remove mirror copy %s: %s", path, strerror(errno));
}

void sl_obj_copy_drop(struct sl_mpath *cm, const struct sl_bck *b, const char *name, size_t nlen)
{
    copy_record_del(cm, b, name, nlen, false, NULL); /* (a record left by a crash names no file: never promoted) */
    struct sl_buf f;
    sl_buf_init(&f);
    sl_obj_copy_fqn(&f, cm, b, name, nlen);
    copy_file_unlink(f.p);
    sl_buf_free(&f);
}

/* The copies' records say what md says now (its custom metadata changed). */
static void copies_rerecord(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_objmd *md)
{
    for (int i = 0; i < md->ncopies; i++) {
        struct sl_mpath *cm = sl_store_mpath_by_digest(md->copies[i]);
        if (cm) /* (waited: after a crash a promotion never brings back what the change replaced) */
            sl_obj_copy_record(cm, b, name, nlen, md, true, NULL);
    }
}

/* Remove md's mirror copies, records and files (the metadata is the caller's). */
static void unlink_copies(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_objmd *md)
{
    for (int i = 0; i < md->ncopies; i++) {
        struct sl_mpath *mp = sl_store_mpath_by_digest(md->copies[i]);
        if (mp)
            sl_obj_copy_drop(mp, b, name, nlen);
    }
}

/* ---- init, placement ---- */

int sl_store_nmpaths(void)
{
    return nmpaths;
}

struct sl_mpath *sl_store_mpath(int i)
{
    return i >= 0 && i < nmpaths ? &mpaths[i] : NULL;
}

struct sl_mpath *sl_store_mpath_by_digest(uint64_t d)
{
    for (int i = 0; i < nmpaths; i++)
        if (mpaths[i].digest == d)
            return &mpaths[i];
    return NULL;
}

struct sl_mpath *sl_store_pick(const char *uname, size_t ulen)
{
    if (nmpaths == 1)
        return &mpaths[0];
    uint64_t d = sl_xxh64(uname, ulen, SL_MLCG32);
    struct sl_mpath *best = NULL;
    uint64_t bs = 0;
    for (int i = 0; i < nmpaths; i++) {
        uint64_t s = sl_hrw_mix(mpaths[i].digest ^ d);
        if (!best || s > bs) {
            best = &mpaths[i];
            bs = s;
        }
    }
    return best;
}

static char *clean_path(const char *p)
{
    char *c = sl_xstrdup(p);
    size_t n = strlen(c);
    while (n > 1 && c[n - 1] == '/')
        c[--n] = 0;
    return c;
}

int sl_store_init(const struct sl_config *c, const char *node_id, struct sl_err *err)
{
    for (int i = 0; i < NLOCKS; i++)
        pthread_rwlock_init(&nlocks[i], NULL);
    pthread_once(&dc_once, dc_init);
    snprintf(store_node, sizeof(store_node), "%s", node_id);
    wp_data = c->wp_data;
    wp_md = c->wp_md;
    if (c->nfspaths == 0)
        return sl_errf(err, SL_EINVAL,
                       "no mountpaths configured: set \"fspaths\" in the config (e.g. {\"/data/shale1\": \"\"}) or "
                       "pass --fspath DIR");
    mpaths = sl_xcalloc((size_t)c->nfspaths, sizeof(*mpaths));
    int sync = c->wp_md == SL_WP_IMMEDIATE ? SL_MD_SYNC : c->wp_md == SL_WP_DELAYED ? SL_MD_ASYNC : SL_MD_NOSYNC;
    for (int i = 0; i < c->nfspaths; i++) {
        struct sl_mpath *mp = &mpaths[i];
        mp->path = clean_path(c->fspaths[i]);
        mp->idx = i;
        for (int j = 0; j < i; j++)
            if (!strcmp(mpaths[j].path, mp->path))
                return sl_errf(err, SL_EINVAL, "mountpath %s is listed twice in fspaths", mp->path);
        mp->digest = sl_xxh64(mp->path, strlen(mp->path), SL_MLCG32);
        if (sl_mkdir_p(mp->path, 0755) < 0)
            return sl_errf(err, SL_EIO, "mountpath %s: cannot create: %s", mp->path, strerror(errno));
        if (access(mp->path, W_OK) < 0)
            return sl_errf(err, SL_EIO, "mountpath %s is not writable: %s", mp->path, strerror(errno));
        /* the owner's id, so a mountpath cannot be shared by two targets by accident */
        char *idf = sl_xasprintf("%s/.shale/daemon_id", mp->path);
        struct sl_buf b;
        sl_buf_init(&b);
        if (sl_read_file(idf, &b, 256) == 0 && b.len && strcmp(b.p, node_id) != 0) {
            sl_errf(err, SL_EINVAL,
                    "mountpath %s belongs to node %s (see %s), not to this node %s; use another directory or "
                    "remove that file if the old node is gone for good",
                    mp->path, b.p, idf, node_id);
            sl_buf_free(&b);
            free(idf);
            return -1;
        }
        sl_buf_free(&b);
        sl_mkdir_p(mp->path, 0755);
        char *sd = sl_xasprintf("%s/.shale", mp->path);
        sl_mkdir_p(sd, 0755);
        free(sd);
        sl_write_file(idf, node_id, strlen(node_id), true);
        free(idf);
        char *mdd = sl_xasprintf("%s/.shale/md", mp->path);
        int rc = sl_md_open(mdd, sync, &mp->md, err);
        free(mdd);
        if (rc < 0)
            return -1;
        nmpaths++;
    }
    return 0;
}

/* ---- hooks ---- */

#define MAX_HOOKS 8
static const struct sl_store_hooks *hooks[MAX_HOOKS];
static int nhooks;

void sl_store_hook(const struct sl_store_hooks *h)
{
    if (nhooks < MAX_HOOKS)
        hooks[nhooks++] = h;
    else
        sl_loge("store: more than %d hooks; %s not registered", MAX_HOOKS, h->name);
}

static void after_put(const struct sl_bck *b, const char *name, size_t nlen, int why)
{
    for (int i = 0; i < nhooks; i++)
        if (hooks[i]->after_put)
            hooks[i]->after_put(b, name, nlen, why);
}

static int restore_main(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err)
{
    for (int i = 0; i < nhooks; i++)
        if (hooks[i]->restore)
            return hooks[i]->restore(b, name, nlen, err);
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), b, name, nlen);
    return sl_errf(err, SL_EIO, "%s: its main replica is damaged and nothing here restores it", cn);
}

void sl_store_close(bool clean)
{
    for (int i = 0; i < nhooks; i++) /* (background work that reads or moves objects) */
        if (hooks[i]->quiesce)
            hooks[i]->quiesce(10000);
    for (int i = 0; i < nmpaths; i++) {
        sl_md_close(mpaths[i].md);
        if (clean) {
            char *f = sl_xasprintf("%s/.shale/clean", mpaths[i].path);
            sl_write_file(f, "1", 1, true);
            free(f);
        }
        free(mpaths[i].path);
    }
    free(mpaths);
    mpaths = NULL;
    nmpaths = 0;
}

void sl_store_capacity(uint64_t *used, uint64_t *total)
{
    *used = *total = 0;
    unsigned long seen[64];
    int nseen = 0;
    for (int i = 0; i < nmpaths; i++) {
        struct stat st;
        uint64_t u, t;
        if (stat(mpaths[i].path, &st) < 0 || sl_store_mpath_usage(i, &u, &t) < 0)
            continue;
        bool dup = false;
        for (int j = 0; j < nseen; j++)
            if (seen[j] == (unsigned long)st.st_dev)
                dup = true;
        if (dup)
            continue; /* one filesystem counts once */
        if (nseen < 64)
            seen[nseen++] = (unsigned long)st.st_dev;
        *total += t;
        *used += u;
    }
}

static int obj_delete(const struct sl_bck *b, const char *name, size_t nlen, const int64_t *want_mtime,
                      struct sl_err *err);

int sl_obj_delete(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err)
{
    return obj_delete(b, name, nlen, NULL, err);
}

int sl_obj_delete_if(const struct sl_bck *b, const char *name, size_t nlen, int64_t mtime, struct sl_err *err)
{
    return obj_delete(b, name, nlen, &mtime, err);
}

/* ---- reads, for LRU ----
 * The last read of an object is kept in memory, not in its metadata (a
 * metadata write per GET would cost more than the GET): a fixed table of
 * 2^18 (hash, time) slots indexed by a hash of (bucket id, name). A read
 * of another object that lands in the same slot replaces the entry, and
 * that object falls back to its last write time: more reads than slots
 * within dont_evict_time make LRU approximate, never stuck. */
#define TOUCH_SLOTS (1 << 18)
static struct {
    uint64_t tag;               /* the rest of the hash: whose time this is */
    int64_t ns;
} touched[TOUCH_SLOTS];

void sl_store_touch(uint64_t bid, const char *name, size_t nlen)
{
    uint64_t h = XXH64(name, nlen, bid);
    size_t i = (size_t)(h & (TOUCH_SLOTS - 1));
    __atomic_store_n(&touched[i].tag, h, __ATOMIC_RELAXED);
    __atomic_store_n(&touched[i].ns, sl_now_ns(), __ATOMIC_RELAXED);
}

int64_t sl_store_last_read(uint64_t bid, const char *name, size_t nlen)
{
    uint64_t h = XXH64(name, nlen, bid);
    size_t i = (size_t)(h & (TOUCH_SLOTS - 1));
    int64_t ns = __atomic_load_n(&touched[i].ns, __ATOMIC_RELAXED);
    return __atomic_load_n(&touched[i].tag, __ATOMIC_RELAXED) == h ? ns : 0;
}

int sl_store_mpath_usage(int i, uint64_t *used, uint64_t *total)
{
    struct statvfs sv;
    if (i < 0 || i >= nmpaths || statvfs(mpaths[i].path, &sv) < 0)
        return -1;
    *total = (uint64_t)sv.f_blocks * sv.f_frsize;
    *used = *total - (uint64_t)sv.f_bavail * sv.f_frsize;
    return 0;
}

/* ---- misplaced objects ----
 * After the mountpaths change (fspaths edited, restart), an object's file
 * and metadata stay on the mountpath HRW chose before until the resilver
 * job moves them (sl_store_move). Meanwhile reads that miss on the HRW
 * mountpath look on the others, and while a resilver is pending a write
 * removes what an older version left on another mountpath, so that it can
 * never come back. */

static volatile bool misplaced; /* a resilver is pending (the record in the node metadata) */

static int drop_copy_records(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_mpath *lmp,
                             const struct sl_objmd *live, bool wait, struct sl_err *err);
static int orphan_copy(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath **mp,
                       struct sl_objmd *md);

/* The mountpath other than hrw whose metadata has b/name (md filled: the
 * caller's), or NULL. */
static struct sl_mpath *find_misplaced(const struct sl_bck *b, const char *name, size_t nlen,
                                       const struct sl_mpath *hrw, struct sl_objmd *md)
{
    for (int i = 0; i < nmpaths; i++) {
        struct sl_err e;
        if (&mpaths[i] != hrw && sl_md_obj_get(mpaths[i].md, b->bid, name, nlen, md, &e) == 1)
            return &mpaths[i];
    }
    return NULL;
}

/* sl_md_obj_get on *mp (the HRW mountpath), then, on a miss, on the other
 * mountpaths: *mp becomes the one that has it. */
static int md_get_any(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath **mp,
                      struct sl_objmd *md, struct sl_err *err)
{
    int rc = sl_md_obj_get((*mp)->md, b->bid, name, nlen, md, err);
    struct sl_mpath *o;
    if (rc == 0 && nmpaths > 1 && (o = find_misplaced(b, name, nlen, *mp, md)) != NULL) {
        *mp = o;
        rc = 1;
    }
    return rc;
}

bool sl_objmd_same(const struct sl_objmd *a, const struct sl_objmd *b)
{
    return a->mtime == b->mtime && a->size == b->size && !strcmp(a->cksum, b->cksum) && !strcmp(a->fname, b->fname);
}

/* Whether path is one of the files of live (its main on lmp, its copies). */
static bool live_file(const char *path, const struct sl_bck *b, const char *name, size_t nlen,
                      const struct sl_mpath *lmp, const struct sl_objmd *live)
{
    if (!live)
        return false;
    struct sl_buf f;
    sl_buf_init(&f);
    sl_obj_fqn(&f, lmp, b, name, nlen, live->fname);
    bool same = !strcmp(f.p, path);
    for (int i = 0; i < live->ncopies && !same; i++) {
        struct sl_mpath *cm = sl_store_mpath_by_digest(live->copies[i]);
        if (cm) {
            sl_obj_copy_fqn(&f, cm, b, name, nlen);
            same = !strcmp(f.p, path);
        }
    }
    sl_buf_free(&f);
    return same;
}

/* Remove the record of b/name on smp (md: what it says) and its files,
 * except those that belong to live (the record on lmp, NULL: none). The
 * caller holds the object's write lock. */
static void drop_stale(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath *smp,
                       const struct sl_objmd *md, const struct sl_mpath *lmp, const struct sl_objmd *live)
{
    struct sl_buf f;
    sl_buf_init(&f);
    sl_obj_fqn(&f, smp, b, name, nlen, md->fname);
    if (!live_file(f.p, b, name, nlen, lmp, live))
        unlink(f.p);
    for (int i = 0; i < md->ncopies; i++) {
        struct sl_mpath *cm = sl_store_mpath_by_digest(md->copies[i]);
        if (!cm)
            continue;
        sl_obj_copy_fqn(&f, cm, b, name, nlen);
        if (!live_file(f.p, b, name, nlen, lmp, live))
            sl_obj_copy_drop(cm, b, name, nlen);
    }
    sl_buf_free(&f);
    unsigned char ak[SL_OBJ_AUX_PREFIX];
    sl_obj_aux_prefix(b->bid, name, nlen, ak);
    struct sl_md_op ops[2] = {
        { .kind = SL_MD_DEL_OBJ, .bid = b->bid, .name = name, .nlen = nlen },
        { .kind = SL_MD_DEL_AUX_PREFIX, .key = (const char *)ak, .klen = sizeof(ak) },
    };
    struct sl_err e = { 0 };
    if (sl_md_commit(smp->md, ops, 2, true, &e) < 0)
        sl_logw("%s: cannot remove an older record of %s/%.*s: %s", smp->path, b->name, (int)SL_MIN(nlen, 200), name,
                e.msg);
}

/* While a resilver is pending: b/name was just written to (or deleted
 * from) lmp, whose record is live (NULL: none): what other mountpaths
 * still hold of an older version goes. Under the object's write lock. */
static void drop_misplaced(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_mpath *lmp,
                           const struct sl_objmd *live)
{
    if (!misplaced || nmpaths < 2)
        return;
    for (int i = 0; i < nmpaths; i++) {
        struct sl_objmd md;
        struct sl_err e;
        if (&mpaths[i] == lmp || sl_md_obj_get(mpaths[i].md, b->bid, name, nlen, &md, &e) != 1)
            continue;
        drop_stale(b, name, nlen, &mpaths[i], &md, lmp, live);
        sl_objmd_free(&md);
    }
    drop_copy_records(b, name, nlen, lmp, live, false, NULL); /* (of a version whose main was lost, unpromoted) */
}

/* ---- PUT ---- */

static int space_check(struct sl_mpath *mp, int64_t need, struct sl_err *err)
{
    struct statvfs sv;
    if (statvfs(mp->path, &sv) < 0)
        return 0;
    uint64_t total = (uint64_t)sv.f_blocks * sv.f_frsize;
    uint64_t avail = (uint64_t)sv.f_bavail * sv.f_frsize;
    if (need > 0 && (uint64_t)need > avail)
        return sl_errf(err, SL_ENOSPC, "out of space on mountpath %s: %llu bytes needed, %llu available", mp->path,
                       (unsigned long long)need, (unsigned long long)avail);
    /* read at each PUT: set-config changes it at run time */
    int oos_pct = sl_conf ? sl_conf->space_oos_pct : 95;
    if (total && (total - avail) * 100 / total >= (uint64_t)oos_pct && oos_pct < 100)
        return sl_errf(err, SL_ENOSPC,
                       "out of space on mountpath %s: %llu%% used, at or above space.out_of_space=%d%%; free space "
                       "or add mountpaths",
                       mp->path, (unsigned long long)((total - avail) * 100 / total), oos_pct);
    return 0;
}

int sl_put_begin(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_put_opts *o,
                 struct sl_put **out, struct sl_err *err)
{
    if (sl_objname_check(name, nlen, err) < 0)
        return -1;
    if (!nmpaths)
        return sl_errf(err, SL_EUNAVAIL, "this node has no mountpaths (it is not a storage target)");
    struct sl_buf un;
    sl_buf_init(&un);
    sl_obj_uname(&un, b->provider, b->name, name, nlen);
    struct sl_mpath *mp = sl_store_pick(un.p, un.len);
    sl_buf_free(&un);
    if (space_check(mp, o ? o->expect_size : -1, err) < 0 || write_enter(b, o && o->rename_copy, err) < 0)
        return -1;

    struct sl_put *p = sl_xcalloc(1, sizeof(*p));
    p->gated = true;
    sl_bck_copy(&p->bck, b);
    p->name = sl_xstrndup(name, nlen);
    p->nlen = nlen;
    p->mp = mp;
    p->fd = -1;
    p->client_type = -1;
    char rid[24];
    sl_rand_id(rid, 16);
    p->work_rel = sl_xasprintf("@%s/%s/%%wk/%s", b->provider, b->name, rid);
    p->work_abs = sl_xasprintf("%s/%s", mp->path, p->work_rel);
    p->fd = open(p->work_abs, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (p->fd < 0 && errno == ENOENT) {
        struct sl_buf d;
        sl_buf_init(&d);
        bdir(&d, mp, b, "%wk");
        sl_mkdir_p(d.p, 0755);
        sl_buf_free(&d);
        p->fd = open(p->work_abs, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    }
    if (p->fd < 0) {
        int e = errno;
        sl_put_abort(p);
        return sl_errf(err, e == ENOSPC ? SL_ENOSPC : SL_EIO, "cannot create work file on mountpath %s: %s",
                       mp->path, strerror(e));
    }
    sl_cksum_init(&p->ck, b->cksum_type);
    if (o) {
        if (o->client_cktype > SL_CK_NONE && o->client_ckval && o->client_ckval[0]) {
            p->client_type = o->client_cktype;
            p->client_val = sl_xstrdup(o->client_ckval);
            if (o->client_cktype != b->cksum_type) {
                sl_cksum_init(&p->cck, o->client_cktype);
                p->have_cck = true;
            }
        }
        if (o->ncustom) {
            p->custom = sl_xcalloc((size_t)o->ncustom, sizeof(struct sl_kv));
            for (int i = 0; i < o->ncustom; i++) {
                p->custom[i].k = sl_xstrdup(o->custom[i].k);
                p->custom[i].v = sl_xstrdup(o->custom[i].v);
            }
            p->ncustom = o->ncustom;
        }
        if (o->preserve) {
            sl_objmd_copy(&p->preserve, o->preserve);
            p->have_preserve = true;
        }
        p->keep_custom = o->keep_custom;
    }
    *out = p;
    return 0;
}

static int put_flush(struct sl_put *p, struct sl_err *err);

int sl_put_fd(struct sl_put *p)
{
    struct sl_err err = { 0 };
    if (put_flush(p, &err) < 0)
        sl_logw("%s", err.msg); /* the same error comes back at commit */
    return p->fd;
}

void sl_put_set_custom(struct sl_put *p, const char *k, const char *v)
{
    sl_kv_set(&p->custom, &p->ncustom, k, v);
}

uint64_t sl_put_size(const struct sl_put *p)
{
    return p->size;
}

static int write_all(struct sl_put *p, const char *c, size_t n, struct sl_err *err)
{
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(p->fd, c + off, n - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            int e = errno;
            return sl_errf(err, e == ENOSPC || e == EDQUOT ? SL_ENOSPC : SL_EIO, "writing %s on mountpath %s: %s",
                           p->name, p->mp->path, strerror(e));
        }
        off += (size_t)w;
    }
    return 0;
}

static int put_flush(struct sl_put *p, struct sl_err *err)
{
    if (!p->wlen)
        return 0;
    int rc = write_all(p, p->wbuf, p->wlen, err);
    p->wlen = 0;
    return rc;
}

int sl_put_write(struct sl_put *p, const void *data, size_t n, struct sl_err *err)
{
    sl_cksum_update(&p->ck, data, n);
    if (p->have_cck)
        sl_cksum_update(&p->cck, data, n);
    p->size += n;
    if (p->wlen + n > PUT_WBUF && put_flush(p, err) < 0)
        return -1;
    if (n >= PUT_WBUF)
        return write_all(p, data, n, err);
    if (!p->wbuf)
        p->wbuf = wbuf_get();
    memcpy(p->wbuf + p->wlen, data, n);
    p->wlen += n;
    return 0;
}

void sl_put_sum(struct sl_put *p, const void *data, size_t n)
{
    sl_cksum_update(&p->ck, data, n);
    if (p->have_cck)
        sl_cksum_update(&p->cck, data, n);
}

int sl_put_adopt_summed(struct sl_put *p, uint64_t size, struct sl_err *err)
{
    if (put_flush(p, err) < 0)
        return -1;
    if (ftruncate(p->fd, (off_t)size) < 0)
        return sl_errf(err, SL_EIO, "%s: %s", p->work_abs, strerror(errno));
    p->size = size;
    return 0;
}

int sl_put_adopt(struct sl_put *p, uint64_t size, struct sl_err *err)
{
    if (put_flush(p, err) < 0)
        return -1;
    if (ftruncate(p->fd, (off_t)size) < 0)
        return sl_errf(err, SL_EIO, "%s: %s", p->work_abs, strerror(errno));
    /* the file is the truth: whatever was summed before does not count */
    sl_cksum_free(&p->ck);
    sl_cksum_init(&p->ck, p->bck.cksum_type);
    if (p->have_cck) {
        sl_cksum_free(&p->cck);
        sl_cksum_init(&p->cck, p->client_type);
    }
    char *buf = sl_xmalloc(1024 * 1024);
    uint64_t off = 0;
    while (off < size) {
        ssize_t r = pread(p->fd, buf, (size_t)SL_MIN((uint64_t)1024 * 1024, size - off), (off_t)off);
        if (r <= 0) {
            free(buf);
            return sl_errf(err, SL_EIO, "reading back %s: %s", p->work_abs, r < 0 ? strerror(errno) : "short file");
        }
        sl_cksum_update(&p->ck, buf, (size_t)r);
        if (p->have_cck)
            sl_cksum_update(&p->cck, buf, (size_t)r);
        off += (uint64_t)r;
    }
    free(buf);
    p->size = size;
    return 0;
}

void sl_put_abort(struct sl_put *p)
{
    if (!p)
        return;
    if (p->gated)
        write_leave(p->bck.bid);
    if (p->fd >= 0)
        close(p->fd);
    if (p->work_abs)
        unlink(p->work_abs);
    sl_cksum_free(&p->ck);
    sl_cksum_free(&p->cck);
    sl_bck_release(&p->bck);
    for (int i = 0; i < p->ncustom; i++) {
        free(p->custom[i].k);
        free(p->custom[i].v);
    }
    free(p->custom);
    if (p->have_preserve)
        sl_objmd_free(&p->preserve);
    free(p->client_val);
    free(p->name);
    free(p->work_rel);
    free(p->work_abs);
    wbuf_put(p->wbuf);
    free(p);
}

static int fsync_dir_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        return 0;
    char *dir = sl_xstrndup(path, (size_t)(slash - path));
    int rc = sl_fsync_dir(dir);
    int e = errno;
    free(dir);
    errno = e;
    return rc;
}

/* Decide the on-disk name of b/name on mp and make sure its parent
 * directory exists; *new_dirs: a directory was made for it. */
static int place_fname(struct sl_mpath *mp, const struct sl_bck *b, const char *name, size_t nlen, char fname[72],
                       struct sl_buf *fqn, bool *new_dirs)
{
    fname[0] = 0;
    if (needs_hash(name, nlen))
        hashed_fname(name, nlen, fname);
    sl_obj_fqn(fqn, mp, b, name, nlen, fname);
    int rc = sl_mkdir_parents(fqn->p, 0755);
    if (rc < 0) {
        if (fname[0] || (errno != ENOTDIR && errno != EEXIST))
            return -1;
        /* "a/b" while an object "a" is a file: store under a hashed name */
        hashed_fname(name, nlen, fname);
        sl_obj_fqn(fqn, mp, b, name, nlen, fname);
        rc = sl_mkdir_parents(fqn->p, 0755);
        *new_dirs = rc > 0;
        return rc < 0 ? -1 : 0;
    }
    *new_dirs = rc > 0;
    struct stat st;
    if (!fname[0] && stat(fqn->p, &st) == 0 && S_ISDIR(st.st_mode)) {
        /* "a" while objects "a/..." exist */
        hashed_fname(name, nlen, fname);
        sl_obj_fqn(fqn, mp, b, name, nlen, fname);
    }
    return 0;
}

static int choose_fname(struct sl_put *p, char fname[72], struct sl_buf *fqn)
{
    return place_fname(p->mp, &p->bck, p->name, p->nlen, fname, fqn, &p->new_dirs);
}

/* The checks of a body that is all in: the client's checksum and the one
 * that travelled with a moved object; then its last bytes to the work file.
 * cks receives the checksum of the bucket's type. */
static int put_check(struct sl_put *p, const char *cn, char cks[SL_CKSUM_HEX_MAX], struct sl_err *err)
{
    char ccks[SL_CKSUM_HEX_MAX];
    sl_cksum_final(&p->ck, cks);
    if (p->client_type >= 0) {
        const char *got = cks;
        if (p->have_cck) {
            sl_cksum_final(&p->cck, ccks);
            p->have_cck = false;
            got = ccks;
        }
        if (strcasecmp(got, p->client_val) != 0)
            return sl_errf(err, SL_ECKSUM, "BAD DATA CHECKSUM: %s: %s(%s) != %s(%s) computed over %llu bytes received",
                           cn, sl_cksum_name(p->client_type), p->client_val, sl_cksum_name(p->client_type), got,
                           (unsigned long long)p->size);
    }
    if (p->have_preserve && p->preserve.cksum[0] && p->preserve.cksum_type == p->bck.cksum_type &&
        strcmp(p->preserve.cksum, cks) != 0)
        return sl_errf(err, SL_ECKSUM, "BAD DATA CHECKSUM: %s: expected %s, received data hashes to %s", cn,
                       p->preserve.cksum, cks);
    int rc = put_flush(p, err);
    wbuf_put(p->wbuf); /* the body is all written: the next PUT may have it */
    p->wbuf = NULL;
    return rc;
}

/* The metadata p publishes; had == 1: old is the object it replaces. */
static void put_new_md(struct sl_put *p, int had, const struct sl_objmd *old, const char *cks, const char *fname,
                       struct sl_objmd *md)
{
    int64_t now = sl_now_ns();
    md->size = p->size;
    md->cksum_type = p->bck.cksum_type;
    snprintf(md->cksum, sizeof(md->cksum), "%s", cks);
    md->atime = md->mtime = now;
    snprintf(md->fname, sizeof(md->fname), "%s", fname);
    if (p->have_preserve) {
        md->version = p->preserve.version;
        md->atime = p->preserve.atime ? p->preserve.atime : now;
        md->mtime = p->preserve.mtime ? p->preserve.mtime : now;
        for (int i = 0; i < p->preserve.ncustom; i++)
            sl_objmd_set_custom(md, p->preserve.custom[i].k, p->preserve.custom[i].v);
    } else {
        md->version = p->bck.versioning ? (had == 1 ? old->version + 1 : 1) : 0;
        if (had == 1 && p->keep_custom)
            for (int i = 0; i < old->ncustom; i++)
                sl_objmd_set_custom(md, old->custom[i].k, old->custom[i].v);
    }
    for (int i = 0; i < p->ncustom; i++)
        sl_objmd_set_custom(md, p->custom[i].k, p->custom[i].v);
}

/* Move the work file onto fqn once ops (the metadata, the pending marker)
 * are committed. Losing a race with a directory of the same name sends it
 * to its hashed name; any other failure undoes the metadata (the old
 * object stays). Under the name lock. */
static int put_rename(struct sl_put *p, struct sl_buf *fqn, char fname[72], struct sl_objmd *md,
                      const struct sl_md_op ops[2], int had, const struct sl_objmd *old, const char *cn,
                      struct sl_err *err)
{
    if (rename(p->work_abs, fqn->p) == 0)
        return 0;
    int e = errno;
    if (!fname[0] && (e == EISDIR || e == ENOTDIR || e == ENOTEMPTY)) {
        hashed_fname(p->name, p->nlen, fname);
        sl_obj_fqn(fqn, p->mp, &p->bck, p->name, p->nlen, fname);
        snprintf(md->fname, sizeof(md->fname), "%s", fname);
        if (rename(p->work_abs, fqn->p) == 0 && sl_md_commit(p->mp->md, ops, 1, true, err) == 0)
            return 0;
    }
    struct sl_md_op undo[2];
    int nu = 0;
    if (had == 1)
        undo[nu++] = (struct sl_md_op){ .kind = SL_MD_PUT_OBJ, .bid = p->bck.bid, .name = p->name,
                                        .nlen = p->nlen, .md = old };
    else
        undo[nu++] = (struct sl_md_op){ .kind = SL_MD_DEL_OBJ, .bid = p->bck.bid, .name = p->name,
                                        .nlen = p->nlen };
    undo[nu++] = ops[1];
    undo[nu - 1].kind = SL_MD_DEL_PENDING;
    sl_md_commit(p->mp->md, undo, nu, true, NULL);
    return sl_errf(err, SL_EIO, "PUT %s: cannot move work file into place on %s: %s", cn, p->mp->path, strerror(e));
}

/* The rename done, under the lock: the old object's mirror copies go (the
 * new metadata names none of them; under the lock so that a copy of the new
 * object made meanwhile is never the one unlinked), or, while a resilver is
 * pending, what other mountpaths hold of an older version. */
static void put_replaced(struct sl_put *p, int had, const struct sl_objmd *old, const struct sl_objmd *md)
{
    if (had == 1)
        unlink_copies(&p->bck, p->name, p->nlen, old);
    else
        drop_misplaced(&p->bck, p->name, p->nlen, p->mp, md);
}

/* The rename is durable (its pending marker dropped or being dropped): the
 * replaced object's file under another name goes, the mirror and EC hooks
 * run, and p is freed. */
static void put_published(struct sl_put *p, int had, const struct sl_objmd *old, const char *fname)
{
    if (had == 1 && strcmp(old->fname, fname) != 0) {
        struct sl_buf ofq;
        sl_buf_init(&ofq);
        sl_obj_fqn(&ofq, p->mp, &p->bck, p->name, p->nlen, old->fname);
        unlink(ofq.p);
        sl_buf_free(&ofq);
    }
    after_put(&p->bck, p->name, p->nlen, SL_STORE_NEW);
    free(p->work_abs);
    p->work_abs = NULL; /* nothing to unlink */
    sl_put_abort(p);
}

static int put_io_err(struct sl_err *err, int e, const char *what, const char *cn, const char *mpath)
{
    return sl_errf(err, e == ENOSPC ? SL_ENOSPC : SL_EIO, "%s %s on %s failed: %s", what, cn, mpath, strerror(e));
}

int sl_put_commit(struct sl_put *p, struct sl_objmd *out, struct sl_err *err)
{
    char cks[SL_CKSUM_HEX_MAX];
    char cn[400];
    /* released at fail: whatever of these is set by then, and p */
    struct sl_buf fqn;
    struct sl_objmd old, md;
    int had = 0;
    char *final_rel = NULL;
    sl_buf_init(&fqn);
    memset(&md, 0, sizeof(md));
    sl_obj_cname(cn, sizeof(cn), &p->bck, p->name, p->nlen);
    if (put_check(p, cn, cks, err) < 0)
        goto fail;
    if (wp_data == SL_WP_IMMEDIATE && fsync(p->fd) < 0) {
        put_io_err(err, errno, "fsync of", cn, p->mp->path);
        goto fail;
    }
    close(p->fd);
    p->fd = -1;
    sl_fault("put-after-write");

    char fname[72];
    if (choose_fname(p, fname, &fqn) < 0) {
        put_io_err(err, errno, "creating the directories of", cn, p->mp->path);
        goto fail;
    }

    pthread_rwlock_t *lk = name_lock(&p->bck, p->name, p->nlen);
    pthread_rwlock_wrlock(lk);
    struct sl_err e2;
    had = sl_md_obj_get(p->mp->md, p->bck.bid, p->name, p->nlen, &old, &e2);
    put_new_md(p, had, &old, cks, fname, &md);

    final_rel = sl_xstrdup(fqn.p + strlen(p->mp->path) + 1);
    struct sl_md_op ops[2] = {
        { .kind = SL_MD_PUT_OBJ, .bid = p->bck.bid, .name = p->name, .nlen = p->nlen, .md = &md },
        { .kind = SL_MD_PUT_PENDING, .key = p->work_rel, .klen = strlen(p->work_rel), .val = final_rel,
          .vlen = strlen(final_rel) },
    };
    if (sl_md_commit(p->mp->md, ops, 2, true, err) < 0) {
        pthread_rwlock_unlock(lk);
        sl_err_wrap(err, "PUT %s", cn);
        goto fail;
    }
    sl_fault("put-after-commit");
    if (put_rename(p, &fqn, fname, &md, ops, had, &old, cn, err) < 0) {
        pthread_rwlock_unlock(lk);
        goto fail;
    }
    put_replaced(p, had, &old, &md);
    pthread_rwlock_unlock(lk);
    /* the rename (and any directory made for it) must survive a power cut
     * before the PUT is acknowledged; the pending marker stays until then */
    if (wp_data == SL_WP_IMMEDIATE &&
        (p->new_dirs ? sl_fsync_parents(fqn.p, p->mp->path) : fsync_dir_of(fqn.p)) < 0) {
        put_io_err(err, errno, "fsync of the directory of", cn, p->mp->path);
        free(p->work_abs);
        p->work_abs = NULL; /* in place already: the fsck of a restart keeps it */
        goto fail;
    }
    {
        struct sl_md_op clr = { .kind = SL_MD_DEL_PENDING, .key = p->work_rel, .klen = strlen(p->work_rel) };
        sl_md_commit_lazy(p->mp->md, &clr, 1); /* (fsck drops it if a crash loses this) */
    }
    put_published(p, had, &old, fname);
    if (had == 1)
        sl_objmd_free(&old);
    free(final_rel);
    sl_buf_free(&fqn);
    if (out)
        *out = md;
    else
        sl_objmd_free(&md);
    return 0;
fail:
    if (had == 1)
        sl_objmd_free(&old);
    sl_objmd_free(&md);
    free(final_rel);
    sl_buf_free(&fqn);
    sl_put_abort(p);
    return -1;
}

/* ---- PUT of many small objects at once (sl_put_commit_batch) ----
 * The same protocol as sl_put_commit, each step taken for the whole batch:
 * one syncfs per filesystem instead of an fsync per work file (then a
 * wait on each, to see its earlier writeback errors), one LMDB transaction
 * per mountpath and group of PUT_GROUP objects for their metadata and
 * pending markers, the renames, one syncfs again instead of an fsync per
 * directory, the markers dropped lazily (as a PUT's). A crash in between
 * leaves each object old or new, as for one PUT. */
struct bput {
    struct sl_put *p;        /* NULL once done with (rc set) */
    char cn[400];
    char cks[SL_CKSUM_HEX_MAX];
    char fname[72];
    struct sl_buf fqn;
    char *final_rel;
    int had;
    struct sl_objmd old, md;
    struct sl_md_op ops[2];
};

static void bput_fail(struct bput *x, int *rc)
{
    *rc = -1;
    sl_put_abort(x->p);
    x->p = NULL;
}

/* Make what the batch wrote so far durable: syncfs once per filesystem that
 * holds one of its mountpaths. An object whose filesystem failed fails; one
 * in place already is published all the same (its mirror and EC hooks run:
 * its metadata is committed), only answered failed. */
static void bput_sync(struct bput *v, int n, int *rc, struct sl_err *errs, const char *what)
{
    if (wp_data != SL_WP_IMMEDIATE)
        return;
    int *res = sl_xcalloc((size_t)nmpaths, sizeof(int));   /* per mountpath: 0, errno, or -1 not used */
    dev_t *dev = sl_xcalloc((size_t)nmpaths, sizeof(dev_t));
    for (int m = 0; m < nmpaths; m++)
        res[m] = -1;
    for (int i = 0; i < n; i++)
        if (v[i].p)
            res[v[i].p->mp->idx] = 0;
    for (int m = 0; m < nmpaths; m++) {
        if (res[m] < 0)
            continue;
        struct stat st;
        int fd = open(mpaths[m].path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0 || fstat(fd, &st) < 0) {
            res[m] = errno;
        } else {
            dev[m] = st.st_dev;
            int same = -1;
            for (int k = 0; k < m && same < 0; k++)
                if (res[k] >= 0 && dev[k] == st.st_dev)
                    same = k;
            res[m] = same >= 0 ? res[same] : syncfs(fd) < 0 ? errno : 0;
        }
        if (fd >= 0)
            close(fd);
    }
    for (int i = 0; i < n; i++) {
        if (!v[i].p || !res[v[i].p->mp->idx])
            continue;
        put_io_err(&errs[i], res[v[i].p->mp->idx], what, v[i].cn, v[i].p->mp->path);
        if (v[i].final_rel) { /* in place already: the fsck of a restart keeps it */
            put_published(v[i].p, v[i].had, &v[i].old, v[i].fname);
            v[i].p = NULL;
            rc[i] = -1;
        } else {
            bput_fail(&v[i], &rc[i]);
        }
    }
    free(res);
    free(dev);
}

static int lock_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(pthread_rwlock_t *const *)a, y = (uintptr_t)*(pthread_rwlock_t *const *)b;
    return x < y ? -1 : x > y;
}

/* Write-lock the name locks lks[0..k), each once, in address order (no
 * other writer holds more than one). Returns how many are held (the first
 * ones of lks, for unlock_all). */
static int lock_all(pthread_rwlock_t **lks, int k)
{
    qsort(lks, (size_t)k, sizeof(*lks), lock_cmp);
    int u = 0;
    for (int i = 0; i < k; i++)
        if (!u || lks[u - 1] != lks[i])
            lks[u++] = lks[i];
    for (int i = 0; i < u; i++)
        pthread_rwlock_wrlock(lks[i]);
    return u;
}

static void unlock_all(pthread_rwlock_t **lks, int u)
{
    for (int i = 0; i < u; i++)
        pthread_rwlock_unlock(lks[i]);
}

/* Under the locks: the metadata of every object (an object already here is
 * kept with keep_existing), then one transaction per mountpath. */
static void bput_commit_md(struct bput *v, int n, bool keep_existing, int *rc, struct sl_err *errs)
{
    struct sl_md_op *ops = sl_xcalloc((size_t)n * 2, sizeof(*ops));
    for (int i = 0; i < n; i++) {
        struct bput *x = &v[i];
        if (!x->p)
            continue;
        struct sl_err e2;
        struct sl_mpath *at = x->p->mp;
        x->had = md_get_any(&x->p->bck, x->p->name, x->p->nlen, &at, &x->old, &e2);
        if (x->had == 1 && keep_existing) { /* (also one on another mountpath, until resilver moves it) */
            bput_fail(x, &rc[i]);
            rc[i] = 1;
            continue;
        }
        if (x->had == 1 && at != x->p->mp) { /* an older version elsewhere: put_replaced drops it */
            sl_objmd_free(&x->old);
            x->had = 0;
        }
        put_new_md(x->p, x->had, &x->old, x->cks, x->fname, &x->md);
        x->final_rel = sl_xstrdup(x->fqn.p + strlen(x->p->mp->path) + 1);
        x->ops[0] = (struct sl_md_op){ .kind = SL_MD_PUT_OBJ, .bid = x->p->bck.bid, .name = x->p->name,
                                       .nlen = x->p->nlen, .md = &x->md };
        x->ops[1] = (struct sl_md_op){ .kind = SL_MD_PUT_PENDING, .key = x->p->work_rel,
                                       .klen = strlen(x->p->work_rel), .val = x->final_rel,
                                       .vlen = strlen(x->final_rel) };
    }
    for (int m = 0; m < nmpaths; m++) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (v[i].p && v[i].p->mp->idx == m) {
                ops[k++] = v[i].ops[0];
                ops[k++] = v[i].ops[1];
            }
        struct sl_err e = { 0 };
        if (!k || sl_md_commit(mpaths[m].md, ops, k, true, &e) == 0)
            continue;
        for (int i = 0; i < n; i++)
            if (v[i].p && v[i].p->mp->idx == m) {
                errs[i] = e;
                sl_err_wrap(&errs[i], "PUT %s", v[i].cn);
                bput_fail(&v[i], &rc[i]);
            }
    }
    free(ops);
}

/* The renames are durable: the markers go, lazily as a single PUT's (a
 * crash that loses their removal leaves markers whose work is done, which
 * the restart's fsck drops). */
static void bput_clear_markers(struct bput *v, int n)
{
    struct sl_md_op *ops = sl_xcalloc((size_t)n, sizeof(*ops));
    for (int m = 0; m < nmpaths; m++) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (v[i].p && v[i].p->mp->idx == m)
                ops[k++] = (struct sl_md_op){ .kind = SL_MD_DEL_PENDING, .key = v[i].p->work_rel,
                                              .klen = strlen(v[i].p->work_rel) };
        if (k)
            sl_md_commit_lazy(mpaths[m].md, ops, k);
    }
    free(ops);
}

/* Of a batch: up to PUT_GROUP objects under their name locks, their
 * metadata committed (one transaction per mountpath) and their files
 * renamed. Small groups, as delete_group: a GET or HEAD waits on its HTTP
 * thread for the stripe it shares with one of them, one group's commit at
 * most, never the whole batch's. */
#define PUT_GROUP 32
static void bput_group(struct bput *v, int n, bool keep_existing, int *rc, struct sl_err *errs)
{
    pthread_rwlock_t *lks[PUT_GROUP];
    int nl = 0;
    for (int i = 0; i < n; i++)
        if (v[i].p)
            lks[nl++] = name_lock(&v[i].p->bck, v[i].p->name, v[i].p->nlen);
    nl = lock_all(lks, nl);
    bput_commit_md(v, n, keep_existing, rc, errs);
    sl_fault("putb-after-commit");
    for (int i = 0; i < n; i++) {
        struct bput *x = &v[i];
        if (!x->p)
            continue;
        if (put_rename(x->p, &x->fqn, x->fname, &x->md, x->ops, x->had, &x->old, x->cn, &errs[i]) < 0)
            bput_fail(x, &rc[i]);
        else
            put_replaced(x->p, x->had, &x->old, &x->md);
    }
    unlock_all(lks, nl);
}

void sl_put_commit_batch(struct sl_put **ps, int n, bool keep_existing, int *rc, struct sl_err *errs)
{
    struct bput *v = sl_xcalloc((size_t)n, sizeof(*v));
    for (int i = 0; i < n; i++) {
        struct bput *x = &v[i];
        x->p = ps[i];
        rc[i] = 0;
        sl_buf_init(&x->fqn);
        sl_obj_cname(x->cn, sizeof(x->cn), &x->p->bck, x->p->name, x->p->nlen);
        if (put_check(x->p, x->cn, x->cks, &errs[i]) < 0)
            bput_fail(x, &rc[i]);
    }
    bput_sync(v, n, rc, errs, "syncfs (data) for");
    for (int i = 0; i < n; i++) {
        struct bput *x = &v[i];
        if (!x->p)
            continue;
        /* syncfs reports only the writeback errors since its directory's
         * open: one of an earlier writeback of this file shows here. Not
         * fsync: on ext4 each would flush the device's cache again; this
         * waits on its (clean) pages and reports the file's error */
        if (wp_data == SL_WP_IMMEDIATE &&
            sync_file_range(x->p->fd, 0, 0,
                            SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) < 0) {
            put_io_err(&errs[i], errno, "writeback of", x->cn, x->p->mp->path);
            bput_fail(x, &rc[i]);
            continue;
        }
        close(x->p->fd);
        x->p->fd = -1;
        if (choose_fname(x->p, x->fname, &x->fqn) < 0) {
            put_io_err(&errs[i], errno, "creating the directories of", x->cn, x->p->mp->path);
            bput_fail(x, &rc[i]);
        }
    }
    sl_fault("putb-after-write");
    for (int i = 0; i < n; i += PUT_GROUP)
        bput_group(v + i, SL_MIN(n - i, PUT_GROUP), keep_existing, rc + i, errs + i);
    bput_sync(v, n, rc, errs, "syncfs (renames) for");
    bput_clear_markers(v, n);
    for (int i = 0; i < n; i++) {
        struct bput *x = &v[i];
        if (x->p)
            put_published(x->p, x->had, &x->old, x->fname);
        if (x->had == 1)
            sl_objmd_free(&x->old);
        sl_objmd_free(&x->md);
        free(x->final_rel);
        sl_buf_free(&x->fqn);
    }
    free(v);
}

/* ---- reads ---- */

static struct sl_mpath *locate(const struct sl_bck *b, const char *name, size_t nlen)
{
    struct sl_buf un;
    sl_buf_init(&un);
    sl_obj_uname(&un, b->provider, b->name, name, nlen);
    struct sl_mpath *mp = nmpaths ? sl_store_pick(un.p, un.len) : NULL;
    sl_buf_free(&un);
    return mp;
}

int sl_obj_stat(const struct sl_bck *b, const char *name, size_t nlen, struct sl_objmd *md, struct sl_mpath **mpo,
                struct sl_err *err)
{
    struct sl_mpath *mp = locate(b, name, nlen);
    char cn[400];
    if (!mp)
        return sl_errf(err, SL_EUNAVAIL, "this node has no mountpaths");
    int rc = md_get_any(b, name, nlen, &mp, md, err);
    if (rc == 0)
        rc = orphan_copy(b, name, nlen, &mp, md); /* (what its copy's record says, until it is promoted) */
    if (rc == 0) {
        sl_obj_cname(cn, sizeof(cn), b, name, nlen);
        sl_errf(err, SL_ENOOBJ, "t[%s]: %s does not exist", store_node, cn);
    }
    if (mpo)
        *mpo = mp;
    return rc;
}

int sl_obj_open(const struct sl_bck *b, const char *name, size_t nlen, int *fd, struct sl_objmd *md,
                struct sl_mpath **mpo, struct sl_err *err)
{
    return sl_obj_open_ex(b, name, nlen, 0, fd, md, mpo, err);
}

/* Whether the open main replica of a mirrored object is damaged: the wrong
 * size, or (validate) the wrong checksum. */
static bool main_damaged(int fd, const struct sl_objmd *md, bool validate)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || (uint64_t)st.st_size != md->size)
        return true;
    if (!validate || md->cksum_type == SL_CK_NONE || !md->cksum[0])
        return false;
    char ck[SL_CKSUM_HEX_MAX];
    return sl_cksum_fd(md->cksum_type, fd, ck) < 0 || strcmp(ck, md->cksum) != 0;
}

int sl_obj_open_ex(const struct sl_bck *b, const char *name, size_t nlen, unsigned flags, int *fd,
                   struct sl_objmd *md, struct sl_mpath **mpo, struct sl_err *err)
{
    struct sl_mpath *hrw = locate(b, name, nlen), *mp;
    char cn[400];
    if (!hrw)
        return sl_errf(err, SL_EUNAVAIL, "this node has no mountpaths");
    pthread_rwlock_t *lk = name_lock(b, name, nlen);
    for (int attempt = 0;; attempt++) {
        pthread_rwlock_rdlock(lk);
        mp = hrw;
        int rc = md_get_any(b, name, nlen, &mp, md, err);
        if (rc == 0 && attempt == 0 && orphan_copy(b, name, nlen, &mp, md)) {
            /* only a mirror copy is left of it: promoted to main replica (off the caller's thread), then opened */
            pthread_rwlock_unlock(lk);
            sl_objmd_free(md);
            if (flags & SL_OPEN_DEFER)
                return 1;
            if (sl_store_promote(b, name, nlen, NULL, err) < 0)
                return -1;
            continue;
        }
        if (rc <= 0) {
            pthread_rwlock_unlock(lk);
            if (rc == 0) {
                sl_obj_cname(cn, sizeof(cn), b, name, nlen);
                sl_errf(err, SL_ENOOBJ, "t[%s]: %s does not exist", store_node, cn);
            }
            return -1;
        }
        struct sl_buf fqn;
        sl_buf_init(&fqn);
        *fd = obj_open_rd(mp, b, name, nlen, md->fname, &fqn);
        int e = errno;
        pthread_rwlock_unlock(lk);
        bool mirrored = md->ncopies > 0 && attempt == 0 && mp == hrw; /* (a misplaced one waits for resilver) */
        if (*fd >= 0 && (!mirrored || !main_damaged(*fd, md, flags & SL_OPEN_VALIDATE))) {
            sl_buf_free(&fqn);
            if (mpo)
                *mpo = mp;
            return 0;
        }
        if (mirrored && (*fd >= 0 || e == ENOENT)) {
            /* the main replica is missing or damaged: a copy serves, and restores it */
            if (*fd >= 0)
                close(*fd);
            *fd = -1;
            sl_buf_free(&fqn);
            sl_objmd_free(md);
            if (flags & SL_OPEN_DEFER)
                return 1;
            if (restore_main(b, name, nlen, err) < 0)
                return -1;
            continue; /* open the restored main (once) */
        }
        if (*fd >= 0) { /* (restored, and damaged again: let the caller's checks say so) */
            sl_buf_free(&fqn);
            if (mpo)
                *mpo = mp;
            return 0;
        }
        sl_obj_cname(cn, sizeof(cn), b, name, nlen);
        if (e == ENOENT) {
            /* metadata without a file (a DELETE interrupted by a crash): heal */
            sl_logw("%s: metadata present but file %s is missing; removing the stale metadata", cn, fqn.p);
            struct sl_md_op op = { .kind = SL_MD_DEL_OBJ, .bid = b->bid, .name = name, .nlen = nlen };
            sl_md_commit(mp->md, &op, 1, false, NULL);
            sl_errf(err, SL_ENOOBJ, "t[%s]: %s does not exist", store_node, cn);
        } else {
            sl_errf(err, SL_EIO, "t[%s]: %s: cannot open %s: %s", store_node, cn, fqn.p, strerror(e));
        }
        sl_buf_free(&fqn);
        sl_objmd_free(md);
        return -1;
    }
}

/* One object's part of a delete, under its name lock: its copies and file
 * go, and ops (2, ak their key room) receive the metadata changes to commit
 * on *mp (the HRW mountpath, or the one a misplaced object is on). 0, 1
 * kept (written again since want_mtime), 2 deleted already (only its
 * copies' records were left: dropped), -1 err. */
static int delete_files(struct sl_mpath **mp, const struct sl_bck *b, const char *name, size_t nlen,
                        const int64_t *want_mtime, struct sl_md_op ops[2], unsigned char ak[SL_OBJ_AUX_PREFIX],
                        struct sl_err *err)
{
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), b, name, nlen);
    struct sl_objmd md;
    int rc = md_get_any(b, name, nlen, mp, &md, err);
    if (rc == 0 && !want_mtime && (rc = drop_copy_records(b, name, nlen, NULL, NULL, true, err)) != 0)
        return rc < 0 ? -1 : 2; /* only mirror copies were left of it (its main's mountpath lost): gone now */
    if (rc <= 0)
        return rc == 0 ? sl_errf(err, SL_ENOOBJ, "%s doesn't exist", cn) : -1;
    struct sl_buf fqn;
    sl_buf_init(&fqn);
    rc = 0;
    if (want_mtime && md.mtime != *want_mtime) {
        rc = 1; /* written again since: kept */
        goto out;
    }
    sl_obj_fqn(&fqn, *mp, b, name, nlen, md.fname);
    /* mirror copies first, then the file, then metadata: a crash in between
     * leaves metadata without a file (or without some copies), which reads
     * heal; never a resurrected object (a GET restores a missing main from
     * a copy, so the copies must be gone before the main is). Every copy
     * record goes, durably, not only those md lists (a crash between a
     * copy's record and its listing leaves one a resilver would promote);
     * a listed copy always has a record (written before it is listed). */
    if (drop_copy_records(b, name, nlen, NULL, NULL, true, err) < 0) {
        rc = -1;
        goto out;
    }
    if (unlink(fqn.p) < 0 && errno != ENOENT) {
        rc = sl_errf(err, SL_EIO, "DELETE %s: %s", cn, strerror(errno));
        goto out;
    }
    sl_fault("delete-after-unlink");
    sl_obj_aux_prefix(b->bid, name, nlen, ak);
    ops[0] = (struct sl_md_op){ .kind = SL_MD_DEL_OBJ, .bid = b->bid, .name = name, .nlen = nlen };
    ops[1] = (struct sl_md_op){ .kind = SL_MD_DEL_AUX_PREFIX, .key = (const char *)ak, .klen = SL_OBJ_AUX_PREFIX };
out:
    sl_buf_free(&fqn);
    sl_objmd_free(&md);
    return rc;
}

/* A change to an existing object begins: its mountpath, a write counted in
 * the bucket's gate, and its name lock held until write_unlock. NULL with
 * err when it cannot. */
static pthread_rwlock_t *write_lock(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath **mp,
                                    struct sl_err *err)
{
    *mp = locate(b, name, nlen);
    if (!*mp) {
        sl_errf(err, SL_EUNAVAIL, "this node has no mountpaths");
        return NULL;
    }
    if (write_enter(b, false, err) < 0)
        return NULL;
    pthread_rwlock_t *lk = name_lock(b, name, nlen);
    pthread_rwlock_wrlock(lk);
    return lk;
}

static void write_unlock(const struct sl_bck *b, pthread_rwlock_t *lk)
{
    pthread_rwlock_unlock(lk);
    write_leave(b->bid);
}

static int obj_delete(const struct sl_bck *b, const char *name, size_t nlen, const int64_t *want_mtime,
                      struct sl_err *err)
{
    struct sl_mpath *mp;
    pthread_rwlock_t *lk = write_lock(b, name, nlen, &mp, err);
    if (!lk)
        return -1;
    struct sl_md_op ops[2];
    unsigned char ak[SL_OBJ_AUX_PREFIX];
    int rc = delete_files(&mp, b, name, nlen, want_mtime, ops, ak, err);
    if (rc == 0)
        rc = sl_md_commit(mp->md, ops, 2, true, err);
    if (rc == 0)
        drop_misplaced(b, name, nlen, mp, NULL);
    write_unlock(b, lk);
    return rc == 2 ? 0 : rc;
}

/* Of a batch delete: up to DEL_GROUP objects under their locks, one
 * transaction per mountpath. Small groups: every name lock is held until
 * the commit, and a few senders delete at once. */
#define DEL_GROUP 32
static void delete_group(const struct sl_bck *b, char *const *names, const size_t *nlens, const int64_t *mtimes,
                         int n, int *rc, struct sl_err *errs)
{
    pthread_rwlock_t *lks[DEL_GROUP];
    struct sl_mpath *mps[DEL_GROUP];
    struct sl_md_op ops[2 * DEL_GROUP], mops[2 * DEL_GROUP];
    unsigned char ak[DEL_GROUP][SL_OBJ_AUX_PREFIX];
    for (int i = 0; i < n; i++)
        lks[i] = name_lock(b, names[i], nlens[i]);
    int nl = lock_all(lks, n);
    bool commit[DEL_GROUP];
    for (int i = 0; i < n; i++) {
        mps[i] = locate(b, names[i], nlens[i]);
        rc[i] = delete_files(&mps[i], b, names[i], nlens[i], mtimes ? &mtimes[i] : NULL, &ops[2 * i], ak[i],
                             &errs[i]);
        commit[i] = rc[i] == 0;
        if (rc[i] == 2)
            rc[i] = 0;
    }
    for (int m = 0; m < nmpaths; m++) {
        int k = 0;
        for (int i = 0; i < n; i++)
            if (commit[i] && mps[i] == &mpaths[m]) {
                mops[k++] = ops[2 * i];
                mops[k++] = ops[2 * i + 1];
            }
        struct sl_err e = { 0 };
        if (!k || sl_md_commit(mpaths[m].md, mops, k, true, &e) == 0)
            continue;
        for (int i = 0; i < n; i++)
            if (commit[i] && mps[i] == &mpaths[m]) {
                rc[i] = -1;
                commit[i] = false;
                errs[i] = e;
            }
    }
    for (int i = 0; i < n; i++)
        if (commit[i])
            drop_misplaced(b, names[i], nlens[i], mps[i], NULL);
    unlock_all(lks, nl);
}

void sl_obj_delete_batch(const struct sl_bck *b, char *const *names, const size_t *nlens, const int64_t *mtimes,
                         int n, int *rc, struct sl_err *errs)
{
    struct sl_err e = { 0 };
    if (!nmpaths)
        sl_errf(&e, SL_EUNAVAIL, "this node has no mountpaths");
    if (!nmpaths || write_enter(b, false, &e) < 0) {
        for (int i = 0; i < n; i++) {
            rc[i] = -1;
            errs[i] = e;
        }
        return;
    }
    for (int i = 0; i < n; i += DEL_GROUP)
        delete_group(b, names + i, nlens + i, mtimes ? mtimes + i : NULL, SL_MIN(n - i, DEL_GROUP), rc + i,
                     errs + i);
    write_leave(b->bid);
}

int sl_obj_set_custom(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_kv *kv, int n,
                      bool replace, struct sl_err *err)
{
    struct sl_mpath *mp;
    char cn[400];
    pthread_rwlock_t *lk = write_lock(b, name, nlen, &mp, err);
    if (!lk)
        return -1;
    struct sl_objmd md;
    int rc = md_get_any(b, name, nlen, &mp, &md, err);
    if (rc <= 0) {
        write_unlock(b, lk);
        if (rc == 0) {
            sl_obj_cname(cn, sizeof(cn), b, name, nlen);
            sl_errf(err, SL_ENOOBJ, "t[%s]: %s does not exist", store_node, cn);
        }
        return -1;
    }
    if (replace) {
        struct sl_objmd empty = md;
        empty.custom = NULL;
        empty.ncustom = 0;
        sl_objmd_free(&md);
        md = empty;
    }
    for (int i = 0; i < n; i++)
        sl_objmd_set_custom(&md, kv[i].k, kv[i].v);
    /* merged with what the object has: still within the limits */
    rc = sl_custom_md_check(md.custom, md.ncustom, "PATCH object (merged with the object's custom metadata)", err);
    struct sl_md_op op = { .kind = SL_MD_PUT_OBJ, .bid = b->bid, .name = name, .nlen = nlen, .md = &md };
    if (rc == 0)
        rc = sl_md_commit(mp->md, &op, 1, true, err);
    if (rc == 0)
        copies_rerecord(b, name, nlen, &md);
    write_unlock(b, lk);
    sl_objmd_free(&md);
    return rc;
}

/* ---- side data and in-place edits ---- */

void sl_obj_aux_prefix(uint64_t bid, const char *name, size_t nlen, unsigned char out[SL_OBJ_AUX_PREFIX])
{
    unsigned char d[SHA256_DIGEST_LENGTH];
    sl_sha256(name, nlen, d);
    out[0] = 'i';
    out[1] = 'x';
    for (int i = 0; i < 8; i++)
        out[2 + i] = (unsigned char)(bid >> (56 - 8 * i));
    memcpy(out + 10, d, 16);
}

struct sl_md_env *sl_obj_md_env(const struct sl_bck *b, const char *name, size_t nlen)
{
    struct sl_mpath *mp = locate(b, name, nlen);
    return mp ? mp->md : NULL;
}

int sl_obj_edit_begin(const struct sl_bck *b, const char *name, size_t nlen, struct sl_obj_edit *e,
                      struct sl_err *err)
{
    memset(e, 0, sizeof(*e));
    e->fd = -1;
    e->mp = locate(b, name, nlen);
    if (!e->mp)
        return sl_errf(err, SL_EUNAVAIL, "this node has no mountpaths");
    if (write_enter(b, false, err) < 0)
        return -1;
    pthread_rwlock_t *lk = name_lock(b, name, nlen);
    pthread_rwlock_wrlock(lk);
    int rc = md_get_any(b, name, nlen, &e->mp, &e->md, err);
    if (rc <= 0) {
        pthread_rwlock_unlock(lk);
        write_leave(b->bid);
        if (rc == 0) {
            char cn[400];
            sl_obj_cname(cn, sizeof(cn), b, name, nlen);
            sl_errf(err, SL_ENOOBJ, "t[%s]: %s does not exist", store_node, cn);
        }
        return -1;
    }
    struct sl_buf fqn;
    sl_buf_init(&fqn);
    sl_obj_fqn(&fqn, e->mp, b, name, nlen, e->md.fname);
    e->fd = open(fqn.p, O_RDWR | O_CLOEXEC);
    if (e->fd < 0) {
        sl_errf(err, SL_EIO, "cannot open %s for writing: %s", fqn.p, strerror(errno));
        pthread_rwlock_unlock(lk);
        write_leave(b->bid);
        sl_objmd_free(&e->md);
        sl_buf_free(&fqn);
        return -1;
    }
    e->lk = lk;
    e->fqn = sl_buf_steal(&fqn);
    sl_bck_copy(&e->b, b);
    e->name = sl_xstrndup(name, nlen);
    e->nlen = nlen;
    return 0;
}

int sl_obj_edit_mark(struct sl_obj_edit *e, int64_t off, int64_t orig_size, struct sl_err *err)
{
    char val[64];
    snprintf(val, sizeof(val), "%lld %lld", (long long)off, (long long)orig_size);
    e->mark = sl_xasprintf("A:%s", e->fqn + strlen(e->mp->path) + 1);
    struct sl_md_op op = { .kind = SL_MD_PUT_PENDING, .key = e->mark, .klen = strlen(e->mark), .val = val,
                           .vlen = strlen(val) };
    return sl_md_commit(e->mp->md, &op, 1, true, err);
}

static void edit_release(struct sl_obj_edit *e)
{
    if (e->mark) {
        struct sl_md_op op = { .kind = SL_MD_DEL_PENDING, .key = e->mark, .klen = strlen(e->mark) };
        sl_md_commit(e->mp->md, &op, 1, true, NULL);
    }
    if (e->fd >= 0)
        close(e->fd);
    if (e->lk) {
        pthread_rwlock_unlock((pthread_rwlock_t *)e->lk);
        write_leave(e->b.bid);
    }
    sl_objmd_free(&e->md);
    sl_bck_release(&e->b);
    free(e->name);
    free(e->fqn);
    free(e->mark);
    memset(e, 0, sizeof(*e));
    e->fd = -1;
}

int sl_obj_edit_commit(struct sl_obj_edit *e, struct sl_err *err)
{
    struct stat st;
    if ((wp_data == SL_WP_IMMEDIATE && fsync(e->fd) < 0) || fstat(e->fd, &st) < 0) {
        sl_errf(err, SL_EIO, "%s: %s", e->fqn, strerror(errno));
        edit_release(e);
        return -1;
    }
    struct sl_objmd md = e->md;
    md.custom = NULL;
    md.ncustom = 0;
    for (int i = 0; i < e->md.ncustom; i++)
        sl_objmd_set_custom(&md, e->md.custom[i].k, e->md.custom[i].v);
    md.size = (uint64_t)st.st_size;
    if (md.cksum_type != SL_CK_NONE && sl_cksum_fd(md.cksum_type, e->fd, md.cksum) < 0) {
        sl_objmd_free(&md);
        sl_errf(err, SL_EIO, "%s: cannot checksum after the append: %s", e->fqn, strerror(errno));
        edit_release(e);
        return -1;
    }
    if (e->b.versioning)
        md.version++;
    md.mtime = md.atime = sl_now_ns();
    md.ncopies = 0; /* the copies hold the old bytes: dropped below, made again by put-copies */
    struct sl_md_op ops[2] = {
        { .kind = SL_MD_PUT_OBJ, .bid = e->b.bid, .name = e->name, .nlen = e->nlen, .md = &md },
        { .kind = SL_MD_DEL_PENDING, .key = e->mark, .klen = e->mark ? strlen(e->mark) : 0 },
    };
    int rc = sl_md_commit(e->mp->md, ops, e->mark ? 2 : 1, true, err);
    if (rc == 0)
        unlink_copies(&e->b, e->name, e->nlen, &e->md);
    sl_objmd_free(&md);
    free(e->mark);
    e->mark = NULL; /* cleared in the same transaction */
    struct sl_bck b;
    sl_bck_copy(&b, &e->b);
    char *name = e->name;
    size_t nlen = e->nlen;
    e->name = NULL;
    edit_release(e);
    if (rc == 0) {
        after_put(&b, name, nlen, SL_STORE_NEW);
    }
    sl_bck_release(&b);
    free(name);
    return rc;
}

void sl_obj_edit_abort(struct sl_obj_edit *e)
{
    edit_release(e);
}

/* ---- bucket removal ---- */

static void *rm_bg(void *arg)
{
    char *path = arg;
    if (sl_rm_rf(path) < 0)
        sl_logw("could not remove %s completely: %s", path, strerror(errno));
    free(path);
    return NULL;
}

int sl_store_destroy_bucket(const struct sl_bck *b, struct sl_err *err)
{
    int rc = 0;
    dc_invalidate(); /* (the threads' open directories of it go) */
    for (int i = 0; i < nmpaths; i++) {
        struct sl_mpath *mp = &mpaths[i];
        unsigned char ck[COPY_KEY];
        copy_key(b->bid, "", 0, ck);
        struct sl_md_op ops[2] = {
            { .kind = SL_MD_DEL_BUCKET, .bid = b->bid },
            { .kind = SL_MD_DEL_AUX_PREFIX, .key = (const char *)ck, .klen = COPY_KEY_BCK }, /* copies' records */
        };
        if (sl_md_commit(mp->md, ops, 2, true, err) < 0)
            rc = -1;
        char *dir = sl_xasprintf("%s/@%s/%s", mp->path, b->provider, b->name);
        char rid[16];
        sl_rand_id(rid, 8);
        char *trash = sl_xasprintf("%s/.shale/trash/%s.%s", mp->path, b->name, rid);
        sl_mkdir_parents(trash, 0755);
        if (rename(dir, trash) == 0) {
            pthread_t t;
            if (pthread_create(&t, NULL, rm_bg, trash) == 0)
                pthread_detach(t);
            else
                free(trash);
        } else {
            free(trash);
        }
        free(dir);
    }
    return rc;
}

/* ---- resilver: the mountpaths of the last run, moving objects ----
 * The node metadata keeps the set of mountpaths the objects were placed on
 * ("mountpaths": {"paths": [...], "pending": bool}). A start with another
 * set, or a full fsck that finds misplaced files, marks a resilver pending
 * until one completes (sl_store_resilvered): a run cut short by a crash or
 * an abort is run again at the next start. */

#define MPATHS_DOC "mountpaths"

static json_t *mpath_set(void)
{
    json_t *a = json_array();
    for (int i = 0; i < nmpaths; i++)
        json_array_append_new(a, json_string(mpaths[i].path));
    size_t n = json_array_size(a);
    for (size_t i = 1; i < n; i++) /* sorted: the order of fspaths does not matter */
        for (size_t j = i; j > 0 && strcmp(json_string_value(json_array_get(a, j - 1)),
                                           json_string_value(json_array_get(a, j))) > 0; j--) {
            json_t *x = json_incref(json_array_get(a, j));
            json_array_set(a, j, json_array_get(a, j - 1));
            json_array_set_new(a, j - 1, x);
        }
    return a;
}

/* removed: mountpaths of earlier runs that are no longer configured (their
 * objects are moved off them while their directories can be read) */
static void resilver_record(bool pending, json_t *removed)
{
    json_t *d = json_pack("{s:o,s:b,s:o}", "paths", mpath_set(), "pending", pending, "removed",
                          removed ? removed : json_array());
    if (sl_node_save_doc(MPATHS_DOC, d) < 0)
        sl_logw("cannot record the mountpaths in the node metadata: a resilver may run again at the next start");
    json_decref(d);
}

/* what was removed before (and is not back), and what of was is gone now */
static json_t *removed_paths(const json_t *rec, const json_t *was)
{
    json_t *out = json_array(), *v;
    size_t i;
    const json_t *lists[2] = { json_object_get(rec, "removed"), was };
    for (int l = 0; l < 2; l++)
        json_array_foreach(lists[l], i, v) {
            const char *p = json_string_value(v);
            bool here = false;
            for (int m = 0; m < nmpaths && p; m++)
                here |= !strcmp(mpaths[m].path, p);
            size_t j;
            json_t *o;
            json_array_foreach(out, j, o)
                here |= json_equal(o, v);
            if (p && !here)
                json_array_append(out, v);
        }
    return out;
}

static void resilver_check(int nmis)
{
    json_t *now = mpath_set(), *rec = sl_node_load_doc(MPATHS_DOC);
    json_t *was = json_object_get(rec, "paths");
    bool changed = was && !json_equal(was, now);
    bool pending = json_is_true(json_object_get(rec, "pending")) || changed || nmis > 0;
    if (changed) {
        char *w = sl_json_dump(was, 0, NULL), *n = sl_json_dump(now, 0, NULL);
        sl_logi("t[%s]: the mountpaths changed since the last run (were %s, now %s): resilver moves the objects to "
                "their mountpaths", store_node, w, n);
        free(w);
        free(n);
    } else if (nmis) {
        sl_logi("t[%s]: fsck found %d object file(s) on a mountpath other than their own: resilver moves them",
                store_node, nmis);
    } else if (pending) {
        sl_logi("t[%s]: the last resilver did not complete: it runs again", store_node);
    }
    if (!rec || changed || nmis)
        resilver_record(pending, removed_paths(rec, was));
    misplaced = pending;
    json_decref(now);
    json_decref(rec);
}

bool sl_store_resilver_pending(void)
{
    return misplaced;
}

void sl_store_resilvered(void)
{
    resilver_record(false, NULL);
    misplaced = false;
}

json_t *sl_store_resilver_removed(void)
{
    json_t *rec = sl_node_load_doc(MPATHS_DOC);
    json_t *r = json_incref(json_object_get(rec, "removed"));
    json_decref(rec);
    return r ? r : json_array();
}

struct sl_mpath *sl_store_detached_open(const char *path, struct sl_err *err)
{
    char *mdd = sl_xasprintf("%s/.shale/md", path);
    struct sl_mpath *mp = sl_xcalloc(1, sizeof(*mp));
    mp->path = clean_path(path);
    mp->digest = sl_xxh64(mp->path, strlen(mp->path), SL_MLCG32);
    mp->idx = -1;
    int rc = access(mdd, R_OK | W_OK) < 0 ? sl_errf(err, SL_ENOENT, "%s: %s", mdd, strerror(errno))
                                          : sl_md_open(mdd, SL_MD_SYNC, &mp->md, err);
    free(mdd);
    if (rc < 0) {
        free(mp->path);
        free(mp);
        return NULL;
    }
    return mp;
}

void sl_store_detached_close(struct sl_mpath *mp)
{
    if (!mp)
        return;
    sl_md_close(mp->md);
    free(mp->path);
    free(mp);
}

/* A file that may hold an object's bytes (md says which). */
struct replica {
    char *path;
    const struct sl_objmd *md;
};

/* Copy into a work file on dst from the first of reps[0..n) that is
 * intact: its index and *work, or -1 with err (SL_ENOOBJ: none of them has
 * a file left). */
static int work_from_first(const struct replica *reps, int n, struct sl_mpath *dst, const struct sl_bck *b,
                           char **work, struct sl_err *err)
{
    int nfiles = 0;
    for (int i = 0; i < n; i++) {
        int fd = open(reps[i].path, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            if (errno != ENOENT) {
                sl_errf(err, SL_EIO, "cannot open %s: %s", reps[i].path, strerror(errno));
                nfiles++;
            }
            continue;
        }
        nfiles++;
        struct sl_err e = { 0 };
        int rc = sl_store_copy_work(fd, reps[i].md, dst, b, NULL, work, &e);
        close(fd);
        if (rc == 0)
            return i;
        *err = e;
        sl_err_wrap(err, "copying %s to %s", reps[i].path, dst->path);
        if (e.code != SL_ECKSUM && e.code != SL_EIO)
            return -1; /* out of space, shutting down: no other replica helps */
    }
    if (!nfiles)
        sl_errf(err, SL_ENOOBJ, "no replica has a file left");
    return -1;
}

static void replicas_free(struct replica *reps, int n)
{
    for (int i = 0; i < n; i++)
        free(reps[i].path);
    free(reps);
}

/* Copy md's bytes into a work file on dst from the first replica that is
 * intact (the main on src, else a mirror copy): 0 and *work, 1 when no
 * replica has a file left, -1 err. */
static int move_copy(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath *src,
                     const struct sl_objmd *md, struct sl_mpath *dst, char **work, struct sl_err *err)
{
    struct replica *reps = sl_xcalloc((size_t)md->ncopies + 1, sizeof(*reps));
    int n = 0;
    struct sl_buf f;
    sl_buf_init(&f);
    for (int i = -1; i < md->ncopies; i++) {
        struct sl_mpath *cm = i < 0 ? src : sl_store_mpath_by_digest(md->copies[i]);
        if (!cm)
            continue;
        if (i < 0)
            sl_obj_fqn(&f, cm, b, name, nlen, md->fname);
        else
            sl_obj_copy_fqn(&f, cm, b, name, nlen);
        reps[n].path = sl_xstrdup(f.p);
        reps[n++].md = md;
    }
    sl_buf_free(&f);
    struct sl_err e = { 0 };
    int rc = work_from_first(reps, n, dst, b, work, &e) >= 0 ? 0 : e.code == SL_ENOOBJ ? 1 : -1;
    if (rc < 0)
        *err = e;
    replicas_free(reps, n);
    return rc;
}

/* Publish the work file (on dst) as the main replica of b/name on dst,
 * described by nm, as a PUT does: metadata and a pending marker first, then
 * the rename, the directory fsynced (write_policy.data), the marker
 * dropped. There was no record of b/name on dst. 0, or -1 with err: the
 * metadata undone, or, when the directory fsync failed, the main in place
 * but maybe not durable (the caller keeps the replica it came from; the
 * marker stays, as a failed PUT's does). Under the object's write lock. */
static int install_main(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath *dst,
                        const struct sl_objmd *nm, const char *work, const char *fqn, bool new_dirs,
                        const char *fault, struct sl_err *err)
{
    const char *wrel = work + strlen(dst->path) + 1, *frel = fqn + strlen(dst->path) + 1;
    struct sl_md_op ops[2] = {
        { .kind = SL_MD_PUT_OBJ, .bid = b->bid, .name = name, .nlen = nlen, .md = nm },
        { .kind = SL_MD_PUT_PENDING, .key = wrel, .klen = strlen(wrel), .val = frel, .vlen = strlen(frel) },
    };
    if (sl_md_commit(dst->md, ops, 2, true, err) < 0)
        return -1;
    if (rename(work, fqn) < 0) {
        sl_errf(err, SL_EIO, "cannot move %s into place on %s: %s", fqn, dst->path, strerror(errno));
        ops[0].kind = SL_MD_DEL_OBJ;
        ops[1].kind = SL_MD_DEL_PENDING;
        sl_md_commit(dst->md, ops, 2, true, NULL);
        return -1;
    }
    sl_fault(fault);
    if (wp_data == SL_WP_IMMEDIATE && (new_dirs ? sl_fsync_parents(fqn, dst->path) : fsync_dir_of(fqn)) < 0)
        return sl_errf(err, SL_EIO, "fsync of the directory of %s on %s: %s; the replica it came from is kept", fqn,
                       dst->path, strerror(errno));
    ops[1].kind = SL_MD_DEL_PENDING;
    sl_md_commit(dst->md, &ops[1], 1, false, NULL);
    return 0;
}

/* Publish the copy (work, on dst) as b/name on its HRW mountpath dst and
 * remove the object from src, under its write lock, if it is still the
 * object md describes: 1 moved, 0 not (changed or gone meanwhile), -1 err.
 * As a PUT: metadata and a pending marker first, then the rename, so that
 * a crash leaves the object on src, or complete on dst (and the record on
 * src an older duplicate, which the next run removes). */
static int move_publish(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath *src,
                        const struct sl_objmd *md, struct sl_mpath *dst, const char *work, struct sl_err *err)
{
    char fname[72];
    bool new_dirs = false;
    struct sl_buf fqn;
    sl_buf_init(&fqn);
    if (place_fname(dst, b, name, nlen, fname, &fqn, &new_dirs) < 0) {
        sl_errf(err, SL_EIO, "cannot create directories for %s on %s: %s", name, dst->path, strerror(errno));
        sl_buf_free(&fqn);
        return -1;
    }
    pthread_rwlock_t *lk = name_lock(b, name, nlen);
    pthread_rwlock_wrlock(lk);
    struct sl_objmd cur, live;
    struct sl_err e2;
    int cr = sl_md_obj_get(src->md, b->bid, name, nlen, &cur, err);
    int lr = sl_md_obj_get(dst->md, b->bid, name, nlen, &live, &e2);
    int rc = 0;
    if (lr == 1) {
        if (cr == 1) /* written to its mountpath meanwhile: what src has is older */
            drop_stale(b, name, nlen, src, &cur, dst, &live);
    } else if (work && cr == 1 && sl_objmd_same(&cur, md)) {
        struct sl_objmd nm;
        sl_objmd_copy(&nm, &cur);
        snprintf(nm.fname, sizeof(nm.fname), "%s", fname);
        nm.ncopies = 0;
        for (int i = 0; i < cur.ncopies; i++)
            if (cur.copies[i] != dst->digest) /* (the main is there now) */
                nm.copies[nm.ncopies++] = cur.copies[i];
        if (install_main(b, name, nlen, dst, &nm, work, fqn.p, new_dirs, "resilver-after-rename", err) < 0) {
            rc = -1; /* (the object stays on src) */
        } else {
            drop_stale(b, name, nlen, src, &cur, dst, &nm);
            rc = 1;
        }
        sl_objmd_free(&nm);
    }
    pthread_rwlock_unlock(lk);
    if (cr == 1)
        sl_objmd_free(&cur);
    if (lr == 1)
        sl_objmd_free(&live);
    sl_buf_free(&fqn);
    return rc;
}

int sl_store_move(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath *src, uint64_t *bytes,
                  struct sl_err *err)
{
    struct sl_mpath *dst = locate(b, name, nlen);
    if (!dst || dst == src)
        return 0;
    struct sl_objmd md;
    pthread_rwlock_t *lk = name_lock(b, name, nlen);
    pthread_rwlock_rdlock(lk);
    int rc = sl_md_obj_get(src->md, b->bid, name, nlen, &md, err);
    pthread_rwlock_unlock(lk);
    if (rc <= 0)
        return rc; /* gone meanwhile */
    char *work = NULL;
    struct sl_objmd live;
    if (sl_md_obj_get(dst->md, b->bid, name, nlen, &live, err) == 1) {
        sl_objmd_free(&live); /* an older duplicate: nothing to copy, the publish step drops it */
        rc = 0;
    } else
        rc = move_copy(b, name, nlen, src, &md, dst, &work, err);
    if (rc == 1) {
        /* no file left of it (a DELETE cut short by a crash): the record goes, as a read would drop it */
        sl_logw("resilver: %s/%.*s has metadata on %s but no file; removing the stale metadata", b->name,
                (int)SL_MIN(nlen, 200), name, src->path);
        pthread_rwlock_wrlock(lk);
        struct sl_objmd cur;
        if (sl_md_obj_get(src->md, b->bid, name, nlen, &cur, err) == 1) {
            if (sl_objmd_same(&cur, &md))
                drop_stale(b, name, nlen, src, &cur, NULL, NULL);
            sl_objmd_free(&cur);
        }
        pthread_rwlock_unlock(lk);
        rc = 0;
    } else if (rc == 0 && write_enter(b, false, err) < 0) {
        rc = -1;
    } else if (rc == 0) {
        rc = move_publish(b, name, nlen, src, &md, dst, work, err);
        write_leave(b->bid);
        if (rc == 1 && bytes)
            *bytes = md.size;
    }
    if (work) {
        unlink(work); /* (gone when published) */
        free(work);
    }
    sl_objmd_free(&md);
    return rc;
}
#define WALK_BATCH 1024

int sl_store_walk(struct sl_mpath *mp, const struct sl_bck *b, sl_store_pick_fn pick, sl_store_visit_fn fn,
                  void *arg, struct sl_err *err)
{
    char **names = sl_xcalloc(WALK_BATCH, sizeof(char *));
    size_t *lens = sl_xcalloc(WALK_BATCH, sizeof(size_t));
    char *after = NULL;
    size_t alen = 0;
    int rc = 0;
    for (bool stop = false; !stop;) {
        struct sl_md_iter *it;
        if (sl_md_iter_open(mp->md, b->bid, "", 0, after, alen, &it, err) < 0) {
            rc = -1;
            break;
        }
        int n = 0;
        while (n < WALK_BATCH && sl_md_iter_next(it) == 1) {
            size_t nl;
            const char *nm = sl_md_iter_name(it, &nl);
            if (pick && !pick(arg, sl_md_iter_md(it)))
                continue;
            names[n] = sl_xstrndup(nm, nl);
            lens[n++] = nl;
        }
        sl_md_iter_close(it);
        for (int i = 0; i < n; i++) {
            if (!stop && fn(arg, names[i], lens[i]))
                stop = true;
            if (i == n - 1) {
                free(after);
                after = names[i];
                alen = lens[i];
            } else {
                free(names[i]);
            }
        }
        if (n < WALK_BATCH)
            break;
    }
    free(after);
    free(names);
    free(lens);
    return rc;
}

/* ---- promoting a mirror copy ----
 * The mountpath of an object's main replica was lost with its metadata (a
 * dead disk removed from fspaths): what is left is the copies and the
 * records beside them. The newest intact copy becomes the main replica on
 * the object's HRW mountpath, the way a resilver moves an object. */

struct crec {
    struct sl_mpath *mp;
    struct sl_objmd md;
};

/* The same version of an object (the file name is the main's business). */
static bool same_version(const struct sl_objmd *a, const struct sl_objmd *b)
{
    return a->mtime == b->mtime && a->size == b->size && !strcmp(a->cksum, b->cksum);
}

/* Metadata of b/name on some mountpath (or unreadable: never promote then). */
static bool main_known(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath *hrw)
{
    struct sl_objmd md;
    struct sl_err e;
    int rc = md_get_any(b, name, nlen, &hrw, &md, &e);
    if (rc == 1)
        sl_objmd_free(&md);
    return rc != 0;
}

/* The records of b/name's copies on every mountpath, newest first: n of
 * recs[0..nmpaths), each md the caller's. */
static int crecs_get(const struct sl_bck *b, const char *name, size_t nlen, struct crec *recs)
{
    int n = 0;
    for (int i = 0; i < nmpaths; i++) {
        if (copy_record_get(&mpaths[i], b, name, nlen, &recs[n].md) != 1)
            continue;
        recs[n].mp = &mpaths[i];
        for (int j = n++; j > 0 && recs[j].md.mtime > recs[j - 1].md.mtime; j--) {
            struct crec t = recs[j];
            recs[j] = recs[j - 1];
            recs[j - 1] = t;
        }
    }
    return n;
}

/* Remove the copies of b/name (records, then files) that live, the record
 * on lmp, does not list (NULL: all; wait: each record's removal durable
 * before its file goes): how many there were, -1 err. A hashed name's main
 * file has the path of its copy on lmp: of that one only the record goes.
 * Under the object's write lock. */
static int drop_copy_records(const struct sl_bck *b, const char *name, size_t nlen, const struct sl_mpath *lmp,
                             const struct sl_objmd *live, bool wait, struct sl_err *err)
{
    int n = 0;
    struct sl_buf f;
    sl_buf_init(&f);
    for (int i = 0; i < nmpaths; i++) {
        struct sl_objmd md;
        bool listed = false;
        for (int j = 0; live && j < live->ncopies; j++)
            listed |= live->copies[j] == mpaths[i].digest;
        if (listed || copy_record_get(&mpaths[i], b, name, nlen, &md) != 1)
            continue;
        sl_objmd_free(&md);
        if (copy_record_del(&mpaths[i], b, name, nlen, wait, err) < 0) {
            n = -1;
            break;
        }
        sl_obj_copy_fqn(&f, &mpaths[i], b, name, nlen);
        if (!live_file(f.p, b, name, nlen, lmp, live))
            copy_file_unlink(f.p);
        n++;
    }
    sl_buf_free(&f);
    return n;
}

/* While a resilver is pending, a read that finds no metadata of b/name
 * anywhere looks for a copy's record: 1 (md and *mp, the record and its
 * mountpath) or 0. */
static int orphan_copy(const struct sl_bck *b, const char *name, size_t nlen, struct sl_mpath **mp,
                       struct sl_objmd *md)
{
    for (int i = 0; misplaced && i < nmpaths; i++)
        if (copy_record_get(&mpaths[i], b, name, nlen, md) == 1) {
            *mp = &mpaths[i];
            int k = 0; /* (this copy stands for the main: the others are its copies) */
            for (int j = 0; j < md->ncopies; j++)
                if (md->copies[j] != mpaths[i].digest)
                    md->copies[k++] = md->copies[j];
            md->ncopies = k;
            return 1;
        }
    return 0;
}

/* Under the object's write lock, if b/name still has no metadata and the
 * record of recs[src] is unchanged: publish work as its main replica on
 * dst (install_main), listing as copies the others of the same version;
 * the rest of the copies go (and all of them when src < 0: records
 * without files). 1 promoted, 0 not (settled meanwhile), -1 err. */
static int promote_publish(const struct sl_bck *b, const char *name, size_t nlen, const struct crec *recs, int n,
                           int src, struct sl_mpath *dst, const char *work, uint64_t *ncopies, struct sl_err *err)
{
    char fname[72];
    bool new_dirs = false;
    struct sl_buf fqn;
    sl_buf_init(&fqn);
    if (src >= 0 && place_fname(dst, b, name, nlen, fname, &fqn, &new_dirs) < 0) {
        sl_errf(err, SL_EIO, "cannot create directories for %s on %s: %s", name, dst->path, strerror(errno));
        sl_buf_free(&fqn);
        return -1;
    }
    pthread_rwlock_t *lk = name_lock(b, name, nlen);
    pthread_rwlock_wrlock(lk);
    struct sl_objmd cur;
    int rc = 0;
    if (main_known(b, name, nlen, dst)) {
        rc = 0; /* written, or promoted by a read, meanwhile */
    } else if (src < 0) {
        drop_copy_records(b, name, nlen, NULL, NULL, false, NULL);
    } else if (copy_record_get(recs[src].mp, b, name, nlen, &cur) == 1) {
        struct sl_objmd nm = cur;
        snprintf(nm.fname, sizeof(nm.fname), "%s", fname);
        nm.ncopies = 0;
        struct sl_buf f;
        sl_buf_init(&f);
        for (int i = 0; i < n; i++) {
            struct stat st;
            sl_obj_copy_fqn(&f, recs[i].mp, b, name, nlen);
            if (recs[i].mp != dst && same_version(&recs[i].md, &cur) && stat(f.p, &st) == 0 &&
                (uint64_t)st.st_size == cur.size && nm.ncopies < SL_OBJ_MAX_COPIES)
                nm.copies[nm.ncopies++] = recs[i].mp->digest;
        }
        sl_buf_free(&f);
        if (!same_version(&cur, &recs[src].md)) {
            rc = 0; /* (changed meanwhile: the next run sees the new one) */
        } else if (install_main(b, name, nlen, dst, &nm, work, fqn.p, new_dirs, "promote-after-rename", err) < 0) {
            rc = -1;
        } else {
            drop_copy_records(b, name, nlen, dst, &nm, false, NULL); /* (the one on dst, if any, and older versions) */
            copies_rerecord(b, name, nlen, &nm);
            *ncopies = (uint64_t)nm.ncopies;
            rc = 1;
        }
        sl_objmd_free(&cur);
    }
    pthread_rwlock_unlock(lk);
    sl_buf_free(&fqn);
    return rc;
}

int sl_store_promote(const struct sl_bck *b, const char *name, size_t nlen, uint64_t *bytes, struct sl_err *err)
{
    struct sl_mpath *dst = locate(b, name, nlen);
    if (!dst)
        return 0;
    struct crec *recs = sl_xcalloc((size_t)nmpaths, sizeof(*recs));
    pthread_rwlock_t *lk = name_lock(b, name, nlen);
    pthread_rwlock_rdlock(lk);
    int n = main_known(b, name, nlen, dst) ? 0 : crecs_get(b, name, nlen, recs);
    pthread_rwlock_unlock(lk);
    struct replica *reps = sl_xcalloc((size_t)n + 1, sizeof(*reps));
    struct sl_buf f;
    sl_buf_init(&f);
    for (int i = 0; i < n; i++) {
        sl_obj_copy_fqn(&f, recs[i].mp, b, name, nlen);
        reps[i].path = sl_xstrdup(f.p);
        reps[i].md = &recs[i].md;
    }
    sl_buf_free(&f);
    char *work = NULL;
    struct sl_err e = { 0 };
    int src = n ? work_from_first(reps, n, dst, b, &work, &e) : -1, rc = 0;
    uint64_t nc = 0;
    if (src < 0 && n && e.code != SL_ENOOBJ) {
        *err = e;
        rc = -1;
    } else if (n && write_enter(b, false, err) < 0) {
        rc = -1;
    } else if (n) {
        /* src < 0: records whose files are gone (a DELETE cut short): they go */
        rc = promote_publish(b, name, nlen, recs, n, src, dst, work, &nc, err);
        write_leave(b->bid);
    }
    if (rc == 1) {
        char cn[400];
        sl_obj_cname(cn, sizeof(cn), b, name, nlen);
        sl_logw("%s: no metadata of it is left (its main replica's mountpath is gone): the mirror copy on %s is "
                "its main replica on %s now, with %llu other cop%s", cn, recs[src].mp->path, dst->path,
                (unsigned long long)nc, nc == 1 ? "y" : "ies");
        sl_stats_add("mirror_promote_n", 1);
        if (bytes)
            *bytes = recs[src].md.size;
    }
    if (work) {
        unlink(work); /* (gone when published) */
        free(work);
    }
    replicas_free(reps, n);
    for (int i = 0; i < n; i++)
        sl_objmd_free(&recs[i].md);
    free(recs);
    if (rc == 1) /* the mirror makes up the copies it had (when fewer than the bucket wants) */
        after_put(b, name, nlen, SL_STORE_RESTORED);
    return rc;
}

struct cwalk {
    char **names;
    size_t *lens;
    int n;
    unsigned char last[COPY_KEY + 1];
};

static int cwalk_cb(void *arg, const char *key, size_t klen, const char *val, size_t vlen)
{
    struct cwalk *w = arg;
    if (w->n >= WALK_BATCH)
        return 1;
    if (klen == COPY_KEY)
        memcpy(w->last, key, COPY_KEY);
    struct sl_objmd md;
    if (sl_objmd_unpack(val, vlen, &w->names[w->n], &w->lens[w->n], &md) == 0) {
        sl_objmd_free(&md);
        w->n++;
    }
    return 0;
}

int sl_store_walk_copies(struct sl_mpath *mp, const struct sl_bck *b, sl_store_visit_fn fn, void *arg,
                         struct sl_err *err)
{
    struct cwalk w = { .names = sl_xcalloc(WALK_BATCH, sizeof(char *)),
                       .lens = sl_xcalloc(WALK_BATCH, sizeof(size_t)) };
    unsigned char pfx[COPY_KEY];
    copy_key(b->bid, "", 0, pfx);
    size_t flen = 0;
    int rc = 0;
    for (bool stop = false; !stop;) {
        w.n = 0;
        if (sl_md_aux_foreach_from(mp->md, (const char *)pfx, COPY_KEY_BCK, (const char *)w.last, flen, cwalk_cb,
                                   &w) < 0) {
            rc = sl_errf(err, SL_EIO, "cannot read the mirror copies' records on %s", mp->path);
            break;
        }
        for (int i = 0; i < w.n; i++) {
            if (!stop && fn(arg, w.names[i], w.lens[i]))
                stop = true;
            free(w.names[i]);
        }
        if (w.n < WALK_BATCH)
            break;
        w.last[COPY_KEY] = 0; /* the next key after the last one seen */
        flen = COPY_KEY + 1;
    }
    free(w.names);
    free(w.lens);
    return rc;
}

/* ---- startup reconcile ---- */

struct fsck_ctx {
    struct sl_mpath *mp;
    int recovered, dropped;
};

/* An in-place append that did not commit: restore the old bytes. */
static void undo_append(struct fsck_ctx *fc, const char *key, size_t klen, const char *val, size_t vlen)
{
    char *path = sl_xasprintf("%s/%.*s", fc->mp->path, (int)(klen - 2), key + 2);
    char v[64];
    snprintf(v, sizeof(v), "%.*s", (int)SL_MIN(vlen, 63), val);
    long long off = 0, size = 0;
    if (sscanf(v, "%lld %lld", &off, &size) == 2 && off >= 0 && size >= off) {
        int fd = open(path, O_RDWR);
        if (fd >= 0) {
            int ok = ftruncate(fd, (off_t)size) == 0;
            static const char zeros[4096];
            for (long long p = off; ok && p < size;) {
                size_t n = (size_t)SL_MIN(size - p, (long long)sizeof(zeros));
                if (pwrite(fd, zeros, n, (off_t)p) != (ssize_t)n)
                    ok = 0;
                p += (long long)n;
            }
            fsync(fd);
            close(fd);
            fc->recovered++;
            sl_logi("fsck %s: rolled back an interrupted append to %s (back to %lld bytes)", fc->mp->path, path,
                    size);
        }
    }
    free(path);
}

static int pending_cb(void *arg, const char *key, size_t klen, const char *val, size_t vlen)
{
    struct fsck_ctx *fc = arg;
    if (klen > 2 && key[0] == 'A' && key[1] == ':') {
        undo_append(fc, key, klen, val, vlen);
        struct sl_md_op op = { .kind = SL_MD_DEL_PENDING, .key = key, .klen = klen };
        sl_md_commit(fc->mp->md, &op, 1, true, NULL);
        return 0;
    }
    char *work = sl_xasprintf("%s/%.*s", fc->mp->path, (int)klen, key);
    char *fin = sl_xasprintf("%s/%.*s", fc->mp->path, (int)vlen, val);
    struct stat st;
    if (stat(work, &st) == 0) {
        int made = sl_mkdir_parents(fin, 0755);
        if (rename(work, fin) == 0) {
            /* durable before the marker goes */
            if ((made > 0 ? sl_fsync_parents(fin, fc->mp->path) : fsync_dir_of(fin)) < 0)
                sl_logw("fsck %s: fsync of the directory of %s: %s", fc->mp->path, fin, strerror(errno));
            fc->recovered++;
            sl_logi("fsck %s: completed interrupted PUT: %s -> %s", fc->mp->path, work, fin);
        } else {
            sl_logw("fsck %s: cannot complete interrupted PUT %s -> %s: %s", fc->mp->path, work, fin,
                    strerror(errno));
        }
    }
    struct sl_md_op op = { .kind = SL_MD_DEL_PENDING, .key = key, .klen = klen };
    sl_md_commit(fc->mp->md, &op, 1, true, NULL);
    free(work);
    free(fin);
    return 0;
}

/* remove every file left in the %wk directories of one provider's buckets */
static int wipe_work_dirs_in(const char *root)
{
    int n = 0;
    DIR *d = opendir(root);
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char *wk = sl_xasprintf("%s/%s/%%wk", root, de->d_name);
        DIR *w = opendir(wk);
        if (w) {
            struct dirent *we;
            while ((we = readdir(w))) {
                if (we->d_name[0] == '.')
                    continue;
                char *f = sl_xasprintf("%s/%s", wk, we->d_name);
                if (unlink(f) == 0)
                    n++;
                free(f);
            }
            closedir(w);
        }
        free(wk);
    }
    closedir(d);
    return n;
}

/* ... of every provider (@ais, @aws, ...) */
static int wipe_work_dirs(struct sl_mpath *mp)
{
    int n = 0;
    DIR *d = opendir(mp->path);
    if (!d)
        return 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] != '@')
            continue;
        char *root = sl_xasprintf("%s/%s", mp->path, de->d_name);
        n += wipe_work_dirs_in(root);
        free(root);
    }
    closedir(d);
    return n;
}

struct walk_ctx {
    struct sl_mpath *mp;
    const struct sl_bck *b;
    size_t base_len;
    int adopted, removed, misplaced;
};

static void walk_files(struct walk_ctx *wc, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char *path = sl_xasprintf("%s/%s", dir, de->d_name);
        struct stat st;
        if (lstat(path, &st) < 0) {
            free(path);
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            walk_files(wc, path);
            if (rmdir(path) == 0) /* prune empty directories; fails harmlessly otherwise */
                dc_invalidate();
            free(path);
            continue;
        }
        const char *rel = path + wc->base_len;
        size_t rlen = strlen(rel);
        bool hashed = strchr(rel, '/') == NULL && rlen == 66 && rel[0] == '.' && rel[1] == 'x';
        if (!S_ISREG(st.st_mode)) {
            unlink(path);
            wc->removed++;
            free(path);
            continue;
        }
        struct sl_objmd md;
        struct sl_err e;
        int found = 0;
        if (!hashed) {
            struct sl_buf un;
            sl_buf_init(&un);
            sl_obj_uname(&un, wc->b->provider, wc->b->name, rel, rlen);
            struct sl_mpath *own = sl_store_pick(un.p, un.len);
            sl_buf_free(&un);
            found = sl_md_obj_get(wc->mp->md, wc->b->bid, rel, rlen, &md, &e);
            if (own != wc->mp)
                wc->misplaced++; /* (adopted here if need be) resilver moves it */
            if (found == 1) {
                sl_objmd_free(&md);
            } else if (found == 0 && sl_objname_check(rel, rlen, &e) == 0) {
                /* a file without metadata: adopt it */
                int fd = open(path, O_RDONLY);
                if (fd >= 0) {
                    memset(&md, 0, sizeof(md));
                    md.size = (uint64_t)st.st_size;
                    md.cksum_type = wc->b->cksum_type;
                    sl_cksum_fd(md.cksum_type, fd, md.cksum);
                    close(fd);
                    md.version = wc->b->versioning ? 1 : 0;
                    md.atime = md.mtime = (int64_t)st.st_mtime * 1000000000LL;
                    struct sl_md_op op = { .kind = SL_MD_PUT_OBJ, .bid = wc->b->bid, .name = rel, .nlen = rlen,
                                           .md = &md };
                    if (sl_md_commit(wc->mp->md, &op, 1, true, NULL) == 0)
                        wc->adopted++;
                }
            }
        } else {
            /* hashed names can only be matched from metadata: check by scan below */
            found = 1;
        }
        free(path);
    }
    closedir(d);
}

/* A mirrored object's copies: those missing or of the wrong size are
 * dropped from its metadata; a missing main is restored from a copy. True
 * when something was fixed (the record is then settled). */
static bool fsck_copies(struct sl_mpath *mp, const struct sl_bck *b, const char *name, size_t nlen,
                        const struct sl_objmd *md, bool main_there)
{
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), b, name, nlen);
    if (!main_there) {
        struct sl_err e = { 0 };
        if (restore_main(b, name, nlen, &e) == 0)
            sl_logw("fsck %s: %s: main replica missing; restored from a mirror copy", mp->path, cn);
        else
            sl_logw("fsck %s: %s: main replica missing and not restored: %s", mp->path, cn, e.msg);
        return true;
    }
    struct sl_objmd nm;
    sl_objmd_copy(&nm, md);
    nm.ncopies = 0;
    struct sl_buf f;
    sl_buf_init(&f);
    for (int i = 0; i < md->ncopies; i++) {
        struct sl_mpath *cm = sl_store_mpath_by_digest(md->copies[i]);
        struct stat st;
        if (cm && cm != mp) {
            sl_obj_copy_fqn(&f, cm, b, name, nlen);
            if (stat(f.p, &st) == 0 && (uint64_t)st.st_size == md->size) {
                nm.copies[nm.ncopies++] = md->copies[i];
                continue;
            }
            sl_obj_copy_drop(cm, b, name, nlen);
        }
        sl_logw("fsck %s: %s: mirror copy on %s is missing or damaged; dropped (make-n-copies re-creates it)",
                mp->path, cn, cm ? cm->path : "a mountpath no longer configured");
    }
    sl_buf_free(&f);
    bool changed = nm.ncopies != md->ncopies;
    if (changed) {
        struct sl_md_op op = { .kind = SL_MD_PUT_OBJ, .bid = b->bid, .name = name, .nlen = nlen, .md = &nm };
        sl_md_commit(mp->md, &op, 1, true, NULL);
    }
    sl_objmd_free(&nm);
    return changed;
}

static void fsck_full(struct sl_mpath *mp, const struct sl_bmd *bmd, int *fixed_md, int *adopted, int *misplaced_n)
{
    for (int i = 0; i < bmd->n; i++) {
        const struct sl_bck *b = &bmd->bcks[i];
        /* 1. metadata without files, sizes that disagree */
        struct sl_md_iter *it;
        struct sl_err e;
        if (sl_md_iter_open(mp->md, b->bid, "", 0, NULL, 0, &it, &e) < 0)
            continue;
        struct sl_buf fqn;
        sl_buf_init(&fqn);
        while (sl_md_iter_next(it) == 1) {
            size_t nlen;
            const char *name = sl_md_iter_name(it, &nlen);
            const struct sl_objmd *md = sl_md_iter_md(it);
            sl_obj_fqn(&fqn, mp, b, name, nlen, md->fname);
            struct stat st;
            if (md->ncopies > 0 && fsck_copies(mp, b, name, nlen, md, stat(fqn.p, &st) == 0)) {
                (*fixed_md)++;
            } else if (stat(fqn.p, &st) < 0) {
                sl_logw("fsck %s: %s://%s/%.*s has metadata but no file; removing the metadata", mp->path,
                        sl_provider_scheme(b->provider), b->name, (int)SL_MIN(nlen, 200), name);
                struct sl_md_op op = { .kind = SL_MD_DEL_OBJ, .bid = b->bid, .name = name, .nlen = nlen };
                sl_md_commit(mp->md, &op, 1, false, NULL);
                (*fixed_md)++;
            } else if ((uint64_t)st.st_size != md->size) {
                struct sl_objmd nm;
                sl_objmd_copy(&nm, md);
                nm.size = (uint64_t)st.st_size;
                int fd = open(fqn.p, O_RDONLY);
                if (fd >= 0) {
                    sl_cksum_fd(nm.cksum_type, fd, nm.cksum);
                    close(fd);
                }
                sl_logw("fsck %s: %s://%s/%.*s: size %llu in metadata, %llu on disk; metadata updated", mp->path,
                        sl_provider_scheme(b->provider), b->name, (int)SL_MIN(nlen, 200), name,
                        (unsigned long long)md->size, (unsigned long long)st.st_size);
                struct sl_md_op op = { .kind = SL_MD_PUT_OBJ, .bid = b->bid, .name = name, .nlen = nlen, .md = &nm };
                sl_md_commit(mp->md, &op, 1, true, NULL);
                sl_objmd_free(&nm);
                (*fixed_md)++;
            }
        }
        sl_buf_free(&fqn);
        sl_md_iter_close(it);
        /* 2. files without metadata */
        char *ob = sl_xasprintf("%s/@%s/%s/%%ob", mp->path, b->provider, b->name);
        struct walk_ctx wc = { .mp = mp, .b = b, .base_len = strlen(ob) + 1 };
        walk_files(&wc, ob);
        free(ob);
        *adopted += wc.adopted;
        *misplaced_n += wc.misplaced;
        if (wc.adopted)
            sl_logi("fsck %s: adopted %d file(s) without metadata in %s://%s", mp->path, wc.adopted,
                    sl_provider_scheme(b->provider), b->name);
    }
}

int sl_store_fsck(const char *mode)
{
    struct sl_bmd *bmd = sl_bmd_get();
    int nmis = 0;
    for (int i = 0; i < nmpaths; i++) {
        struct sl_mpath *mp = &mpaths[i];
        struct fsck_ctx fc = { .mp = mp };
        sl_md_pending_foreach(mp->md, pending_cb, &fc);
        int wiped = wipe_work_dirs(mp);
        char *clean = sl_xasprintf("%s/.shale/clean", mp->path);
        bool was_clean = access(clean, F_OK) == 0;
        unlink(clean);
        free(clean);
        bool full = !strcmp(mode, "full") || (!strcmp(mode, "auto") && !was_clean);
        int fixed = 0, adopted = 0;
        int64_t t0 = sl_mono_ns();
        if (full)
            fsck_full(mp, bmd, &fixed, &adopted, &nmis);
        sl_logi("fsck %s (%s%s): completed %d interrupted PUT(s), removed %d abandoned work file(s), fixed %d "
                "metadata record(s), adopted %d file(s) in %.1f ms",
                mp->path, full ? "full" : "quick", was_clean ? "" : ", previous run did not stop cleanly",
                fc.recovered, wiped, fixed, adopted, (double)(sl_mono_ns() - t0) / 1e6);
        /* empty the trash of destroyed buckets */
        char *trash = sl_xasprintf("%s/.shale/trash", mp->path);
        sl_rm_rf(trash);
        free(trash);
    }
    sl_bmd_put(bmd);
    resilver_check(nmis);
    return 0;
}

int sl_store_tmpfd(struct sl_err *err)
{
    static unsigned turn;
    int n = sl_store_nmpaths();
    struct sl_mpath *mp = n > 0 ? sl_store_mpath((int)(__atomic_fetch_add(&turn, 1, __ATOMIC_RELAXED) % (unsigned)n))
                                : NULL;
    if (!mp)
        return sl_errf(err, SL_EINTERNAL, "no mountpath for a temporary file");
    char *dir = sl_xasprintf("%s/.shale/tmp", mp->path);
    sl_mkdir_p(dir, 0755);
    int fd = open(dir, O_TMPFILE | O_RDWR, 0600);
    if (fd < 0) {
        char *path = sl_xasprintf("%s/tmp-XXXXXX", dir);
        fd = mkstemp(path);
        if (fd >= 0)
            unlink(path);
        free(path);
    }
    if (fd < 0)
        sl_errf(err, SL_EIO, "cannot create a temporary file under %s: %s (check the mountpath's space and "
                "permissions)", dir, strerror(errno));
    free(dir);
    return fd;
}
