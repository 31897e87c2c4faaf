/* SPDX-License-Identifier: MIT
 * store.c: object storage on a target. See store.h for the layout and the
 * PUT protocol, store_int.h for the files of the store and what they share.
 *
 * This file: the mountpaths (init, placement, capacity, close), objects'
 * names and files, the name locks, the write gate, each thread's open
 * bucket directories, the hooks, side-data keys, the last reads (LRU) and
 * temporary files.
 */
#include "store_int.h"
#include "cksum.h"
#include "log.h"
#include "node.h"
#include "stats.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
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

struct sl_mpath *store_mpaths;
int store_nmpaths;
char store_node[48];
static pthread_rwlock_t nlocks[NLOCKS];
int store_wp_data = SL_WP_IMMEDIATE;
static int wp_md = SL_WP_IMMEDIATE;

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
int store_write_enter(const struct sl_bck *b, bool rename_copy, struct sl_err *err)
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

void store_write_leave(uint64_t bid)
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

/* ---- helpers ---- */

static uint64_t name_hash(uint64_t bid, const char *name, size_t nlen)
{
    return sl_xxh64(name, nlen, bid);
}

pthread_rwlock_t *store_name_lock(const struct sl_bck *b, const char *name, size_t nlen)
{
    /* an object's S3 versions (meta.h) share its lock: changed together */
    return &nlocks[name_hash(b->bid, name, sl_objname_vkey(name, nlen)) & (NLOCKS - 1)];
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

void store_hashed_fname(const char *name, size_t nlen, char out[72])
{
    unsigned char d[SHA256_DIGEST_LENGTH];
    sl_sha256(name, nlen, d);
    out[0] = '.';
    out[1] = 'x';
    sl_hex(d, SHA256_DIGEST_LENGTH, out + 2);
}

/* A bucket's directory on a mountpath: @PROVIDER/NAME (AIStore's layout:
 * ais://b and s3://b live apart), then the content type ("%ob/", "%wk"). */
void store_bdir(struct sl_buf *out, const struct sl_mpath *mp, const struct sl_bck *b, const char *ct)
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
    store_bdir(out, mp, b, "%ob/");
    if (fname && fname[0])
        sl_buf_adds(out, fname);
    else
        sl_buf_add(out, name, nlen);
}

/* Decide the on-disk name of b/name on mp and make sure its parent
 * directory exists; *new_dirs: a directory was made for it. */
int store_place_fname(struct sl_mpath *mp, const struct sl_bck *b, const char *name, size_t nlen, char fname[72],
                      struct sl_buf *fqn, bool *new_dirs)
{
    fname[0] = 0;
    if (needs_hash(name, nlen))
        store_hashed_fname(name, nlen, fname);
    sl_obj_fqn(fqn, mp, b, name, nlen, fname);
    int rc = sl_mkdir_parents(fqn->p, 0755);
    if (rc < 0) {
        if (fname[0] || (errno != ENOTDIR && errno != EEXIST))
            return -1;
        /* "a/b" while an object "a" is a file: store under a hashed name */
        store_hashed_fname(name, nlen, fname);
        sl_obj_fqn(fqn, mp, b, name, nlen, fname);
        rc = sl_mkdir_parents(fqn->p, 0755);
        *new_dirs = rc > 0;
        return rc < 0 ? -1 : 0;
    }
    *new_dirs = rc > 0;
    struct stat st;
    if (!fname[0] && stat(fqn->p, &st) == 0 && S_ISDIR(st.st_mode)) {
        /* "a" while objects "a/..." exist */
        store_hashed_fname(name, nlen, fname);
        sl_obj_fqn(fqn, mp, b, name, nlen, fname);
    }
    return 0;
}

int store_fsync_dir_of(const char *path)
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

void store_dc_invalidate(void)
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
    store_bdir(&d, mp, b, "%ob");
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
int store_obj_open_rd(const struct sl_mpath *mp, const struct sl_bck *b, const char *name, size_t nlen,
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
    return store_name_lock(b, name, nlen);
}

void sl_obj_copy_fqn(struct sl_buf *out, const struct sl_mpath *mp, const struct sl_bck *b, const char *name,
                     size_t nlen)
{
    char fname[72];
    store_hashed_fname(name, nlen, fname);
    sl_obj_fqn(out, mp, b, name, nlen, fname);
}

char *sl_store_work_path(const struct sl_mpath *mp, const struct sl_bck *b)
{
    struct sl_buf d;
    sl_buf_init(&d);
    store_bdir(&d, mp, b, "%wk");
    sl_mkdir_p(d.p, 0755);
    char rid[24];
    sl_rand_id(rid, 16);
    sl_buf_printf(&d, "/%s", rid);
    return sl_buf_steal(&d);
}

bool sl_store_sync_data(void)
{
    return store_wp_data == SL_WP_IMMEDIATE;
}

bool sl_store_put_syncs(void)
{
    return store_wp_data == SL_WP_IMMEDIATE || wp_md == SL_WP_IMMEDIATE;
}

static int lock_cmp(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t)*(pthread_rwlock_t *const *)a, y = (uintptr_t)*(pthread_rwlock_t *const *)b;
    return x < y ? -1 : x > y;
}

/* Write-lock the name locks lks[0..k), each once, in address order (no
 * other writer holds more than one). Returns how many are held (the first
 * ones of lks, for store_unlock_all). */
int store_lock_all(pthread_rwlock_t **lks, int k)
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

void store_unlock_all(pthread_rwlock_t **lks, int u)
{
    for (int i = 0; i < u; i++)
        pthread_rwlock_unlock(lks[i]);
}

/* ---- init, placement ---- */

int sl_store_nmpaths(void)
{
    return __atomic_load_n(&store_nmpaths, __ATOMIC_ACQUIRE);
}

struct sl_mpath *sl_store_mpath(int i)
{
    return i >= 0 && i < sl_store_nmpaths() ? &store_mpaths[i] : NULL;
}

bool sl_store_mpath_usable(const struct sl_mpath *mp)
{
    return mp->idx >= 0 && !__atomic_load_n(&mp->disabled, __ATOMIC_ACQUIRE) &&
           !__atomic_load_n(&mp->detached, __ATOMIC_ACQUIRE);
}

bool sl_store_mpath_gone(const struct sl_mpath *mp)
{
    return __atomic_load_n(&mp->detached, __ATOMIC_ACQUIRE);
}

struct sl_mpath *sl_store_mpath_by_digest(uint64_t d)
{
    int n = sl_store_nmpaths();
    for (int i = 0; i < n; i++)
        if (store_mpaths[i].digest == d && !sl_store_mpath_gone(&store_mpaths[i]))
            return &store_mpaths[i];
    return NULL;
}

/* HRW over the mountpaths in placement (disabled and detached ones take no
 * new object; at least one is always in placement: the last one cannot be
 * disabled or detached) */
struct sl_mpath *sl_store_pick(const char *uname, size_t ulen)
{
    int n = sl_store_nmpaths();
    if (n == 1)
        return &store_mpaths[0];
    uint64_t d = sl_xxh64(uname, ulen, SL_MLCG32);
    struct sl_mpath *best = NULL;
    uint64_t bs = 0;
    for (int i = 0; i < n; i++) {
        if (!sl_store_mpath_usable(&store_mpaths[i]))
            continue;
        uint64_t s = sl_hrw_mix(store_mpaths[i].digest ^ d);
        if (!best || s > bs) {
            best = &store_mpaths[i];
            bs = s;
        }
    }
    return best ? best : &store_mpaths[0]; /* (none usable: never, see sl_store_mpath_admin) */
}

char *store_clean_path(const char *p)
{
    char *c = sl_xstrdup(p);
    size_t n = strlen(c);
    while (n > 1 && c[n - 1] == '/')
        c[--n] = 0;
    return c;
}

/* ---- the mountpath admin record ----
 * Node metadata doc "mpath_admin": {"attached": [paths added at run time,
 * not in fspaths], "disabled": [...], "detaching": [...], "detached":
 * [paths of fspaths forgotten by a detach]}. At start the mountpaths are
 * fspaths without the detached ones, then the attached ones. */
#define ADMIN_DOC "mpath_admin"

static char **cfg_paths;              /* fspaths, cleaned (start-up only) */
static int ncfg_paths;
static json_t *detached_before;       /* "detached" of the record: fspaths forgotten in earlier runs */
static int store_md_sync;             /* sl_md_open's mode, for a mountpath attached at run time */
static pthread_mutex_t admin_mu = PTHREAD_MUTEX_INITIALIZER; /* one change at a time; guards the record */

static bool in_list(const json_t *a, const char *p)
{
    size_t i;
    json_t *v;
    json_array_foreach(a, i, v)
        if (json_is_string(v) && !strcmp(json_string_value(v), p))
            return true;
    return false;
}

static bool in_config(const char *p)
{
    for (int i = 0; i < ncfg_paths; i++)
        if (!strcmp(cfg_paths[i], p))
            return true;
    return false;
}

/* Under admin_mu (or at start-up). */
static int admin_save(struct sl_err *err)
{
    json_t *att = json_array(), *dis = json_array(), *ding = json_array(), *ded = json_array(), *v;
    size_t i;
    json_array_foreach(detached_before, i, v)
        if (json_is_string(v))
            json_array_append(ded, v);
    for (int m = 0; m < store_nmpaths; m++) {
        struct sl_mpath *mp = &store_mpaths[m];
        if (mp->detached) {
            if (in_config(mp->path) && !in_list(ded, mp->path))
                json_array_append_new(ded, json_string(mp->path));
            continue;
        }
        if (!in_config(mp->path))
            json_array_append_new(att, json_string(mp->path));
        if (mp->detaching)
            json_array_append_new(ding, json_string(mp->path));
        else if (mp->disabled)
            json_array_append_new(dis, json_string(mp->path));
    }
    json_t *d = json_pack("{s:o,s:o,s:o,s:o}", "attached", att, "disabled", dis, "detaching", ding, "detached", ded);
    int rc = sl_node_save_doc(ADMIN_DOC, d);
    json_decref(d);
    if (rc < 0)
        return sl_errf(err, SL_EIO, "t[%s]: cannot record the mountpaths in the node metadata (confdir/meta): "
                       "the change is in effect but a restart would undo it; check that directory's disk", store_node);
    return 0;
}

/* Set slot mp up on path (its owner's id checked and written, its LMDB
 * environment opened). */
static int mpath_open(struct sl_mpath *mp, const char *path, int idx, struct sl_err *err)
{
    mp->path = store_clean_path(path);
    mp->idx = idx;
    mp->digest = sl_xxh64(mp->path, strlen(mp->path), SL_MLCG32);
    if (sl_mkdir_p(mp->path, 0755) < 0)
        return sl_errf(err, SL_EIO, "mountpath %s: cannot create: %s", mp->path, strerror(errno));
    if (access(mp->path, W_OK) < 0)
        return sl_errf(err, SL_EIO, "mountpath %s is not writable: %s", mp->path, strerror(errno));
    /* the owner's id, so a mountpath cannot be shared by two targets by accident */
    char *idf = sl_xasprintf("%s/.shale/daemon_id", mp->path);
    struct sl_buf b;
    sl_buf_init(&b);
    mp->fresh = access(idf, F_OK) != 0;
    if (sl_read_file(idf, &b, 256) == 0 && b.len && strcmp(b.p, store_node) != 0) {
        sl_errf(err, SL_EINVAL,
                "mountpath %s belongs to node %s (see %s), not to this node %s; use another directory or "
                "remove that file if the old node is gone for good",
                mp->path, b.p, idf, store_node);
        sl_buf_free(&b);
        free(idf);
        return -1;
    }
    sl_buf_free(&b);
    char *sd = sl_xasprintf("%s/.shale", mp->path);
    sl_mkdir_p(sd, 0755);
    free(sd);
    sl_write_file(idf, store_node, strlen(store_node), true);
    free(idf);
    char *mdd = sl_xasprintf("%s/.shale/md", mp->path);
    int rc = sl_md_open(mdd, store_md_sync, &mp->md, err);
    free(mdd);
    return rc;
}

int sl_store_init(const struct sl_config *c, const char *node_id, struct sl_err *err)
{
    for (int i = 0; i < NLOCKS; i++)
        pthread_rwlock_init(&nlocks[i], NULL);
    pthread_once(&dc_once, dc_init);
    snprintf(store_node, sizeof(store_node), "%s", node_id);
    store_wp_data = c->wp_data;
    wp_md = c->wp_md;
    if (c->nfspaths == 0)
        return sl_errf(err, SL_EINVAL,
                       "no mountpaths configured: set \"fspaths\" in the config (e.g. {\"/data/shale1\": \"\"}) or "
                       "pass --fspath DIR");
    store_mpaths = sl_xcalloc(SL_MAX_MPATHS, sizeof(*store_mpaths)); /* fixed: pointers to it live on */
    store_md_sync = c->wp_md == SL_WP_IMMEDIATE ? SL_MD_SYNC : c->wp_md == SL_WP_DELAYED ? SL_MD_ASYNC : SL_MD_NOSYNC;
    cfg_paths = sl_xcalloc((size_t)c->nfspaths, sizeof(char *));
    ncfg_paths = c->nfspaths;
    for (int i = 0; i < c->nfspaths; i++)
        cfg_paths[i] = store_clean_path(c->fspaths[i]);
    json_t *rec = sl_node_load_doc(ADMIN_DOC);
    json_t *att = json_object_get(rec, "attached"), *dis = json_object_get(rec, "disabled");
    json_t *ding = json_object_get(rec, "detaching");
    detached_before = json_array();
    /* fspaths but those detached at run time, then those attached at run time */
    int nall = c->nfspaths + (int)json_array_size(att);
    for (int i = 0; i < nall; i++) {
        const char *p = i < c->nfspaths ? cfg_paths[i] : json_string_value(json_array_get(att, (size_t)(i - c->nfspaths)));
        if (!p || (i >= c->nfspaths && in_config(p)))
            continue;
        if (in_list(json_object_get(rec, "detached"), p)) {
            sl_logw("t[%s]: mountpath %s of fspaths was detached (`shale storage mountpath detach`): not used; "
                    "attach it again to use it", store_node, p);
            json_array_append_new(detached_before, json_string(p));
            continue;
        }
        if (store_nmpaths == SL_MAX_MPATHS) {
            json_decref(rec);
            return sl_errf(err, SL_EINVAL, "more than %d mountpaths: a target takes at most %d", SL_MAX_MPATHS,
                           SL_MAX_MPATHS);
        }
        for (int j = 0; j < store_nmpaths; j++)
            if (!strcmp(store_mpaths[j].path, p)) {
                json_decref(rec);
                return sl_errf(err, SL_EINVAL, "mountpath %s is listed twice in fspaths", p);
            }
        struct sl_mpath *mp = &store_mpaths[store_nmpaths];
        if (mpath_open(mp, p, store_nmpaths, err) < 0) {
            json_decref(rec);
            return -1;
        }
        mp->detaching = in_list(ding, mp->path);
        mp->disabled = mp->detaching || in_list(dis, mp->path);
        if (mp->disabled)
            sl_logi("t[%s]: mountpath %s is %s (`shale storage mountpath enable` puts it back)", store_node, mp->path,
                    mp->detaching ? "being detached: its objects are moved off it" : "disabled");
        store_nmpaths++;
    }
    json_decref(rec);
    if (!store_nmpaths)
        return sl_errf(err, SL_EINVAL, "no mountpaths left: every one of fspaths was detached; attach one (or list a "
                       "new directory in fspaths)");
    bool any = false;
    for (int i = 0; i < store_nmpaths; i++)
        any |= !store_mpaths[i].disabled;
    if (!any) { /* (never recorded so; a record edited by hand) */
        sl_logw("t[%s]: every mountpath was disabled: %s is enabled again", store_node, store_mpaths[0].path);
        store_mpaths[0].disabled = store_mpaths[0].detaching = false;
    }
    return 0;
}

/* ---- mountpath admin at run time ---- */

/* The writes placed before a change: two generations of counters. A PUT
 * counts itself in the current one from its pick to its end; a change
 * moves the generation on and waits for the old one to empty. */
static pthread_mutex_t place_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t place_cv = PTHREAD_COND_INITIALIZER;
static unsigned place_gen;
static int place_n[2];

unsigned sl_store_place_enter(void)
{
    pthread_mutex_lock(&place_mu);
    unsigned g = place_gen;
    place_n[g & 1]++;
    pthread_mutex_unlock(&place_mu);
    return g;
}

void sl_store_place_leave(unsigned g)
{
    pthread_mutex_lock(&place_mu);
    if (--place_n[g & 1] == 0)
        pthread_cond_broadcast(&place_cv);
    pthread_mutex_unlock(&place_mu);
}

int sl_store_mpath_drain(int64_t timeout_ns)
{
    int64_t end = sl_now_ns() + timeout_ns;
    pthread_mutex_lock(&place_mu);
    unsigned old = place_gen++;
    while (place_n[old & 1] > 0 && sl_now_ns() < end) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        pthread_cond_timedwait(&place_cv, &place_mu, &ts);
    }
    int left = place_n[old & 1];
    pthread_mutex_unlock(&place_mu);
    if (left)
        sl_logw("t[%s]: %d PUT(s) placed before the mountpath change still going: the resilver that follows may "
                "miss them (a mountpath being detached is kept until nothing is left on it)", store_node, left);
    return left ? -1 : 0;
}

static int usable_count(void)
{
    int n = 0;
    for (int i = 0; i < store_nmpaths; i++)
        n += sl_store_mpath_usable(&store_mpaths[i]);
    return n;
}

static void mpaths_list(struct sl_buf *b)
{
    for (int i = 0; i < store_nmpaths; i++)
        if (!store_mpaths[i].detached)
            sl_buf_printf(b, "%s%s", b->len ? ", " : "", store_mpaths[i].path);
}

/* a or b is the other, or under it */
static bool nested(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > lb) {
        const char *t = a;
        a = b;
        b = t;
        size_t tl = la;
        la = lb;
        lb = tl;
    }
    return !strncmp(a, b, la) && (lb == la || b[la] == '/' || (la == 1 && a[0] == '/'));
}

static int mpath_attach(const char *p, struct sl_err *err)
{
    struct stat st;
    if (stat(p, &st) < 0)
        return sl_errf(err, errno == ENOENT ? SL_EINVAL : SL_EIO, "attach mountpath %s to t[%s]: %s; create the "
                       "directory (mount the disk there) first, then attach it", p, store_node, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return sl_errf(err, SL_EINVAL, "attach mountpath %s to t[%s]: not a directory; a mountpath is a directory "
                       "(a disk's filesystem mounted there)", p, store_node);
    if (access(p, W_OK) < 0)
        return sl_errf(err, SL_EINVAL, "attach mountpath %s to t[%s]: not writable by the target: %s", p, store_node,
                       strerror(errno));
    char real[PATH_MAX], other[PATH_MAX];
    if (!realpath(p, real))
        return sl_errf(err, SL_EIO, "attach mountpath %s to t[%s]: %s", p, store_node, strerror(errno));
    struct sl_mpath *again = NULL;
    for (int i = 0; i < store_nmpaths; i++) {
        struct sl_mpath *mp = &store_mpaths[i];
        if (!strcmp(mp->path, p) && mp->detached) {
            again = mp; /* detached in this run: its slot (and environment) serve again */
            continue;
        }
        if (mp->detached)
            continue;
        const char *o = realpath(mp->path, other) ? other : mp->path;
        if (!strcmp(o, real) || !strcmp(mp->path, p))
            return sl_errf(err, SL_EEXIST, "attach mountpath %s to t[%s]: it is one of its mountpaths already%s", p,
                           store_node, mp->disabled ? " (disabled: `shale storage mountpath enable` it)" : "");
        if (nested(o, real))
            return sl_errf(err, SL_EINVAL, "attach mountpath %s to t[%s]: it %s mountpath %s; mountpaths may not "
                           "nest: use a directory apart from the others", p, store_node,
                           strlen(real) > strlen(o) ? "is inside" : "contains", mp->path);
    }
    char *idf = sl_xasprintf("%s/.shale/daemon_id", p);
    struct sl_buf b;
    sl_buf_init(&b);
    int rc = 0;
    if (sl_read_file(idf, &b, 256) == 0 && b.len && strcmp(b.p, store_node) != 0)
        rc = sl_errf(err, SL_EEXIST, "attach mountpath %s to t[%s]: it belongs to node %s (see %s); use another "
                     "directory, or remove that file if that node is gone for good", p, store_node, b.p, idf);
    sl_buf_free(&b);
    free(idf);
    if (rc < 0)
        return -1;
    if (again) {
        char *idf2 = sl_xasprintf("%s/.shale/daemon_id", p);
        sl_mkdir_parents(idf2, 0755);
        sl_write_file(idf2, store_node, strlen(store_node), true);
        free(idf2);
        __atomic_store_n(&again->vanished, false, __ATOMIC_RELEASE);
        __atomic_store_n(&again->disabled, false, __ATOMIC_RELEASE);
        __atomic_store_n(&again->detaching, false, __ATOMIC_RELEASE);
        __atomic_store_n(&again->detached, false, __ATOMIC_RELEASE);
    } else {
        if (store_nmpaths == SL_MAX_MPATHS)
            return sl_errf(err, SL_EINVAL, "attach mountpath %s to t[%s]: it has %d mountpath slots already (the "
                           "most a target takes; a detached one frees its slot at the next restart)", p, store_node,
                           SL_MAX_MPATHS);
        struct sl_mpath *mp = &store_mpaths[store_nmpaths];
        if (mpath_open(mp, p, store_nmpaths, err) < 0) {
            free(mp->path);
            memset(mp, 0, sizeof(*mp));
            sl_err_wrap(err, "attach mountpath %s to t[%s]", p, store_node);
            return -1;
        }
        __atomic_store_n(&store_nmpaths, store_nmpaths + 1, __ATOMIC_RELEASE); /* (published whole) */
    }
    json_t *keep = json_array(), *v; /* (attached again: no longer a detached one of fspaths) */
    size_t i;
    json_array_foreach(detached_before, i, v)
        if (strcmp(json_string_value(v) ?: "", p))
            json_array_append(keep, v);
    json_decref(detached_before);
    detached_before = keep;
    sl_logi("t[%s]: mountpath %s attached: resilver moves objects to it", store_node, p);
    return 1;
}

int sl_store_mpath_admin(const char *action, const char *path, struct sl_err *err)
{
    if (!path || path[0] != '/')
        return sl_errf(err, SL_EINVAL, "%s mountpath: \"%s\" is not an absolute path (a mountpath is a directory "
                       "such as /data/disk3)", action, path ? path : "");
    char *p = store_clean_path(path);
    pthread_mutex_lock(&admin_mu);
    int rc;
    struct sl_mpath *mp = NULL;
    for (int i = 0; i < store_nmpaths; i++)
        if (!strcmp(store_mpaths[i].path, p) && !store_mpaths[i].detached)
            mp = &store_mpaths[i];
    if (!strcmp(action, "attach")) {
        rc = mpath_attach(p, err);
    } else if (!mp) {
        struct sl_buf b;
        sl_buf_init(&b);
        mpaths_list(&b);
        rc = sl_errf(err, SL_ENOENT, "%s mountpath %s: t[%s] has no such mountpath (its mountpaths: %s)", action, p,
                     store_node, b.p ? b.p : "");
        sl_buf_free(&b);
    } else if (!strcmp(action, "enable")) {
        rc = mp->disabled ? 1 : 0;
        __atomic_store_n(&mp->detaching, false, __ATOMIC_RELEASE);
        __atomic_store_n(&mp->disabled, false, __ATOMIC_RELEASE);
        if (rc)
            sl_logi("t[%s]: mountpath %s enabled: resilver moves objects to it", store_node, p);
    } else if (!strcmp(action, "disable") || !strcmp(action, "detach")) {
        bool detach = action[1] == 'e';
        if (sl_store_mpath_usable(mp) && usable_count() <= 1) {
            rc = sl_errf(err, SL_EEXIST, "%s mountpath %s: it is the last enabled mountpath of t[%s]: its objects "
                         "would have nowhere to go; attach (or enable) another one first", action, p, store_node);
        } else {
            rc = mp->disabled && mp->detaching >= detach ? 0 : 1;
            if (detach)
                __atomic_store_n(&mp->detaching, true, __ATOMIC_RELEASE);
            __atomic_store_n(&mp->disabled, true, __ATOMIC_RELEASE);
            if (rc)
                sl_logi("t[%s]: mountpath %s %s: resilver moves its objects to the other mountpaths%s", store_node,
                        p, detach ? "being detached" : "disabled", detach ? ", then it is forgotten" : "");
        }
    } else {
        rc = sl_errf(err, SL_EINVAL, "invalid mountpath action \"%s\" (valid: attach, enable, disable, detach)",
                     action);
    }
    if (rc > 0) {
        store_dc_invalidate();
        if (admin_save(err) < 0)
            rc = -1;
    }
    pthread_mutex_unlock(&admin_mu);
    free(p);
    return rc;
}

void sl_store_mpath_forget(struct sl_mpath *mp)
{
    pthread_mutex_lock(&admin_mu);
    if (mp->detaching && !mp->detached) {
        __atomic_store_n(&mp->detached, true, __ATOMIC_RELEASE);
        mp->detaching = false;
        store_dc_invalidate();
        admin_save(NULL);
        /* its disk may go to another target now */
        char *idf = sl_xasprintf("%s/.shale/daemon_id", mp->path);
        unlink(idf);
        free(idf);
        sl_logi("t[%s]: mountpath %s detached: nothing of this target is left on it (its LMDB files stay open "
                "until the target restarts)", store_node, mp->path);
    }
    pthread_mutex_unlock(&admin_mu);
}

struct sl_mpath *sl_store_locate(const struct sl_bck *b, const char *name, size_t nlen)
{
    struct sl_buf un;
    sl_buf_init(&un);
    sl_obj_uname(&un, b->provider, b->name, name, nlen);
    struct sl_mpath *mp = store_nmpaths ? sl_store_pick(un.p, un.len) : NULL;
    sl_buf_free(&un);
    return mp;
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

void store_after_put(const struct sl_bck *b, const char *name, size_t nlen, int why)
{
    for (int i = 0; i < nhooks; i++)
        if (hooks[i]->after_put)
            hooks[i]->after_put(b, name, nlen, why);
}

int store_restore_main(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err)
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
    for (int i = 0; i < store_nmpaths; i++) {
        sl_md_close(store_mpaths[i].md);
        if (clean) {
            char *f = sl_xasprintf("%s/.shale/clean", store_mpaths[i].path);
            sl_write_file(f, "1", 1, true);
            free(f);
        }
        free(store_mpaths[i].path);
    }
    free(store_mpaths);
    store_mpaths = NULL;
    store_nmpaths = 0;
    for (int i = 0; i < ncfg_paths; i++)
        free(cfg_paths[i]);
    free(cfg_paths);
    cfg_paths = NULL;
    ncfg_paths = 0;
    json_decref(detached_before);
    detached_before = NULL;
}

void sl_store_capacity(uint64_t *used, uint64_t *total)
{
    *used = *total = 0;
    unsigned long seen[64];
    int nseen = 0;
    for (int i = 0; i < store_nmpaths; i++) {
        struct stat st;
        uint64_t u, t;
        if (store_mpaths[i].detached || stat(store_mpaths[i].path, &st) < 0 || sl_store_mpath_usage(i, &u, &t) < 0)
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

int sl_store_mpath_check(void)
{
    int n = 0;
    for (int i = 0; i < store_nmpaths; i++) {
        struct sl_mpath *mp = &store_mpaths[i];
        if (sl_store_mpath_gone(mp))
            continue; /* (its disk may be pulled out now) */
        if (__atomic_load_n(&mp->vanished, __ATOMIC_RELAXED)) {
            n++;
            continue;
        }
        char *idf = sl_xasprintf("%s/.shale/daemon_id", mp->path);
        bool gone = access(idf, F_OK) != 0 && errno == ENOENT;
        free(idf);
        if (!gone)
            continue;
        __atomic_store_n(&mp->vanished, true, __ATOMIC_RELAXED);
        n++;
        sl_stats_add("mpath_vanished_n", 1);
        sl_loge("t[%s]: mountpath %s lost its contents while this target runs (.shale/daemon_id is gone: its disk "
                "failed or was replaced, or another filesystem was mounted over it); reads of its objects look on the "
                "other mountpaths' mirror copies where their bucket has them. Restart the target (with the new disk "
                "mounted): at start it finds the mountpath empty and resilvers", store_node, mp->path);
    }
    return n;
}

const char *sl_store_mpath_state(const struct sl_mpath *mp)
{
    return sl_store_mpath_gone(mp)                          ? "detached"
           : __atomic_load_n(&mp->detaching, __ATOMIC_RELAXED) ? "detaching"
           : __atomic_load_n(&mp->disabled, __ATOMIC_RELAXED)  ? "disabled"
           : __atomic_load_n(&mp->vanished, __ATOMIC_RELAXED)  ? "vanished"
           : mp->emptied                                       ? "emptied"
                                                               : "ok";
}

int sl_store_mpath_usage(int i, uint64_t *used, uint64_t *total)
{
    struct statvfs sv;
    if (i < 0 || i >= store_nmpaths || statvfs(store_mpaths[i].path, &sv) < 0)
        return -1;
    *total = (uint64_t)sv.f_blocks * sv.f_frsize;
    *used = *total - (uint64_t)sv.f_bavail * sv.f_frsize;
    return 0;
}

/* ---- side data ---- */

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

void sl_inv_key_bck(char out[SL_INV_KEY_BCK], char tag, uint64_t bid)
{
    out[0] = 'n';
    out[1] = tag;
    for (int i = 0; i < 8; i++)
        out[2 + i] = (char)(unsigned char)(bid >> (56 - 8 * i));
}

int sl_inv_drop(struct sl_md_env *env, uint64_t bid, struct sl_err *err)
{
    char kb[SL_INV_KEY_BCK], km[SL_INV_KEY_BCK];
    sl_inv_key_bck(kb, 'b', bid);
    sl_inv_key_bck(km, 'M', bid);
    struct sl_md_op ops[2] = {
        { .kind = SL_MD_DEL_AUX_PREFIX, .key = kb, .klen = SL_INV_KEY_BCK },
        { .kind = SL_MD_DEL_AUX, .key = km, .klen = SL_INV_KEY_BCK },
    };
    return sl_md_commit(env, ops, 2, true, err);
}

struct sl_md_env *sl_obj_md_env(const struct sl_bck *b, const char *name, size_t nlen)
{
    struct sl_mpath *mp = sl_store_locate(b, name, nlen);
    return mp ? mp->md : NULL;
}

int sl_store_tmpfd(struct sl_err *err)
{
    static unsigned turn;
    int n = sl_store_nmpaths();
    struct sl_mpath *mp = NULL;
    for (int k = 0; k < n && (!mp || !sl_store_mpath_usable(mp)); k++) /* (in placement only) */
        mp = sl_store_mpath((int)(__atomic_fetch_add(&turn, 1, __ATOMIC_RELAXED) % (unsigned)n));
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
