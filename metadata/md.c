/* SPDX-License-Identifier: MIT
 * md.c: LMDB environments for object metadata (per mountpath, with group
 * commit) and for node documents. See md.h for the key layout.
 */
#include "md.h"
#include "md_int.h"
#include "log.h"

#include <errno.h>
#include <lmdb.h>
#include <msgpack.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAPSIZE_OBJ (256ULL << 30)
#define MAPSIZE_NODE (4ULL << 30)
#define DEL_BATCH 50000
#define MD_LAZY_NS (50 * 1000000LL) /* sl_md_commit_lazy's longest wait for company */

struct md_req {
    struct sl_md_op *ops;
    int nops;
    bool wait, done, owned, lazy;
    int rc;
    char errmsg[256];
    struct md_req *next;
};

struct sl_md_env {
    MDB_env *env;
    MDB_dbi objs, pending, aux;
    char *dir;
    int sync;
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_done;
    struct md_req *head, *tail;
    bool urgent;                /* the queue holds more than lazy requests */
    bool running;               /* a list taken off the queue is being committed */
    bool sleeping;              /* the committer waits with no deadline */
    int64_t lazy_due;           /* when the queue's first lazy request must go in */
    pthread_t thr, syncthr;
    bool stop, has_syncthr;
};

static size_t make_key(unsigned char *key, uint64_t bid, const char *name, size_t nlen)
{
    for (int i = 0; i < 8; i++)
        key[i] = (unsigned char)(bid >> (56 - 8 * i));
    size_t kn = nlen < SL_MD_KEYNAME ? nlen : SL_MD_KEYNAME;
    memcpy(key + 8, name, kn);
    return 8 + kn;
}

static int suffix_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    int c = memcmp(a, b, n);
    if (c)
        return c;
    return an < bn ? -1 : an > bn ? 1 : 0;
}

/* ---- environment ---- */

static int mdb_fail(struct sl_err *err, int rc, const char *what, const char *dir)
{
    return sl_errf(err, rc == MDB_MAP_FULL || rc == ENOSPC ? SL_ENOSPC : SL_EIO, "metadata %s in %s: %s", what,
                   dir, mdb_strerror(rc));
}

/* ---- schema version ----
 *
 * Where each environment records it (see md.h for the format): an object
 * environment in the named DB "meta", key "schema"; the node environment in
 * its main DB under a key that starts with a NUL byte, which no caller can
 * name (node document keys are C strings) and sl_md_node_foreach skips.
 *
 * Opening settles the version in the open's own write transaction: run every
 * migration step from the recorded version up to SL_MD_SCHEMA_VERSION, then
 * record the new version. A crash before the commit leaves the old version
 * and the old layout, so the next open runs the steps again. A future step
 * too large for one transaction must commit in batches and be restartable.
 */
#define SCHEMA_DB "meta"
static const MDB_val obj_schema_key = { 6, (void *)"schema" };
static const MDB_val node_schema_key = { 7, (void *)"\0schema" };

/* One step: moves an environment from version `from` to from + 1. run gets
 * the open's write transaction and the environment being opened (struct
 * sl_md_env * or struct sl_md_node *, DB handles already open) and returns
 * 0 or an LMDB/errno code. */
struct md_migration {
    unsigned from;
    const char *what;   /* for the log line */
    int (*run)(MDB_txn *txn, void *env);
};

/* 0 -> 1: schema 0 is the layout written before versioning, which is
 * exactly schema 1's; the step only leads to recording the version. */
static int migrate_nothing(MDB_txn *txn, void *env)
{
    return 0;
}

static const struct md_migration obj_migrations[] = {
    { 0, "layout unchanged, version recorded", migrate_nothing },
};
static const struct md_migration node_migrations[] = {
    { 0, "layout unchanged, version recorded", migrate_nothing },
};
_Static_assert(sizeof(obj_migrations) / sizeof(obj_migrations[0]) == SL_MD_SCHEMA_VERSION,
               "one object-environment migration step per schema version");
_Static_assert(sizeof(node_migrations) / sizeof(node_migrations[0]) == SL_MD_SCHEMA_VERSION,
               "one node-environment migration step per schema version");

/* A recorded version: 1 to 9 ASCII digits, nothing else. */
static int parse_schema(const MDB_val *v, unsigned *out)
{
    const unsigned char *p = v->mv_data;
    if (v->mv_size < 1 || v->mv_size > 9)
        return -1;
    unsigned n = 0;
    for (size_t i = 0; i < v->mv_size; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        n = n * 10 + (unsigned)(p[i] - '0');
    }
    *out = n;
    return 0;
}

/* A stored value made printable for a message: "..." with \xNN escapes. */
static void show_bytes(const MDB_val *v, char *out, size_t n)
{
    const unsigned char *p = v->mv_data;
    size_t o = 0, max = v->mv_size < 32 ? v->mv_size : 32;
    o += (size_t)snprintf(out + o, n - o, "\"");
    for (size_t i = 0; i < max && o + 8 < n; i++) {
        if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '"' && p[i] != '\\')
            out[o++] = (char)p[i];
        else
            o += (size_t)snprintf(out + o, n - o, "\\x%02x", p[i]);
    }
    snprintf(out + o, n - o, "\"%s, %zu byte%s", v->mv_size > max ? "..." : "", v->mv_size,
             v->mv_size == 1 ? "" : "s");
}

/* Check, migrate and record the schema version inside txn (the caller
 * commits on 0, aborts on -1). fresh: the environment was empty before this
 * open, so there is nothing to migrate and nothing to log. kind + dir name
 * the environment in messages. */
static int schema_settle(MDB_txn *txn, MDB_dbi dbi, const MDB_val *key, bool fresh,
                         const struct md_migration *steps, size_t nsteps, void *env, const char *kind,
                         const char *dir, struct sl_err *err)
{
    MDB_val k = *key, v;
    unsigned ver = 0;
    int rc = mdb_get(txn, dbi, &k, &v);
    if (rc == 0) {
        if (parse_schema(&v, &ver) < 0) {
            char shown[160];
            show_bytes(&v, shown, sizeof(shown));
            return sl_errf(err, SL_EIO,
                           "%s metadata at %s has an unreadable schema version (%s; expected 1 to 9 decimal digits): "
                           "it is damaged or was not written by Shale; restore %s from a backup",
                           kind, dir, shown, dir);
        }
    } else if (rc != MDB_NOTFOUND) {
        return mdb_fail(err, rc, "schema version read", dir);
    }
    if (ver > SL_MD_SCHEMA_VERSION)
        return sl_errf(err, SL_EUNSUPP,
                       "%s metadata at %s was written by a newer Shale (schema %u; this build reads up to %u): "
                       "run a newer shaled, or restore %s from a backup taken before a newer shaled opened it",
                       kind, dir, ver, SL_MD_SCHEMA_VERSION, dir);
    if (ver == SL_MD_SCHEMA_VERSION)
        return 0;
    char done[256] = "";
    size_t dl = 0;
    for (unsigned from = ver; from < SL_MD_SCHEMA_VERSION && !fresh; from++) {
        const struct md_migration *m = NULL;
        for (size_t i = 0; i < nsteps && !m; i++)
            if (steps[i].from == from)
                m = &steps[i];
        if (!m)
            return sl_errf(err, SL_EINTERNAL, "%s metadata at %s: this build has no migration from schema %u",
                           kind, dir, from);
        rc = m->run(txn, env);
        if (rc) {
            mdb_fail(err, rc, "migration", dir);
            sl_err_wrap(err, "migrating %s metadata from schema %u to %u failed (nothing was changed)", kind,
                        from, from + 1);
            return -1;
        }
        if (dl < sizeof(done))
            dl += (size_t)snprintf(done + dl, sizeof(done) - dl, "%s%u->%u: %s", dl ? "; " : "", from, from + 1,
                                   m->what);
    }
    char num[16];
    int nl = snprintf(num, sizeof(num), "%u", (unsigned)SL_MD_SCHEMA_VERSION);
    v.mv_data = num;
    v.mv_size = (size_t)nl;
    k = *key;
    rc = mdb_put(txn, dbi, &k, &v, 0);
    if (rc)
        return mdb_fail(err, rc, "schema version write", dir);
    if (!fresh) {
        if (ver == 0)
            sl_logi("%s metadata at %s: no schema version recorded (written before versioning); migrated to "
                    "schema %u (%s)",
                    kind, dir, SL_MD_SCHEMA_VERSION, done);
        else
            sl_logi("%s metadata at %s: migrated from schema %u to %u (%s)", kind, dir, ver, SL_MD_SCHEMA_VERSION,
                    done);
    }
    return 0;
}

static void *committer(void *arg);
static void *syncer(void *arg);

int sl_md_open(const char *dir, int sync, struct sl_md_env **out, struct sl_err *err)
{
    if (sl_mkdir_p(dir, 0755) < 0)
        return sl_errf(err, SL_EIO, "cannot create metadata directory %s: %s", dir, strerror(errno));
    struct sl_md_env *e = sl_xcalloc(1, sizeof(*e));
    e->dir = sl_xstrdup(dir);
    e->sync = sync;
    int rc = mdb_env_create(&e->env);
    if (rc)
        goto fail;
    mdb_env_set_maxdbs(e->env, 8);
    mdb_env_set_maxreaders(e->env, 1024);
    mdb_env_set_mapsize(e->env, MAPSIZE_OBJ);
    unsigned flags = MDB_NOTLS | MDB_NORDAHEAD;
    if (sync != SL_MD_SYNC)
        flags |= MDB_NOSYNC;
    rc = mdb_env_open(e->env, dir, flags, 0644);
    if (rc)
        goto fail;
    int dead = 0;
    mdb_reader_check(e->env, &dead);
    if (dead)
        sl_logi("metadata %s: cleared %d stale reader slot(s) left by a previous process", dir, dead);
    MDB_txn *txn;
    rc = mdb_txn_begin(e->env, NULL, 0, &txn);
    if (rc)
        goto fail;
    /* fresh: no objects DB yet, so nothing was ever written here */
    rc = mdb_dbi_open(txn, "objs", 0, &e->objs);
    bool fresh = rc == MDB_NOTFOUND;
    MDB_dbi meta;
    if ((rc && !fresh) || (rc = mdb_dbi_open(txn, "objs", MDB_CREATE, &e->objs)) ||
        (rc = mdb_dbi_open(txn, "pending", MDB_CREATE, &e->pending)) ||
        (rc = mdb_dbi_open(txn, "aux", MDB_CREATE, &e->aux)) ||
        (rc = mdb_dbi_open(txn, SCHEMA_DB, MDB_CREATE, &meta))) {
        mdb_txn_abort(txn);
        goto fail;
    }
    if (schema_settle(txn, meta, &obj_schema_key, fresh, obj_migrations,
                      sizeof(obj_migrations) / sizeof(obj_migrations[0]), e, "object", dir, err) < 0) {
        mdb_txn_abort(txn);
        goto refused;
    }
    rc = mdb_txn_commit(txn);
    if (rc)
        goto fail;
    pthread_mutex_init(&e->mu, NULL);
    pthread_condattr_t ca; /* (the committer's deadlines are on the monotonic clock) */
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&e->cv_work, &ca);
    pthread_condattr_destroy(&ca);
    pthread_cond_init(&e->cv_done, NULL);
    pthread_create(&e->thr, NULL, committer, e);
    if (sync == SL_MD_ASYNC) {
        e->has_syncthr = true;
        pthread_create(&e->syncthr, NULL, syncer, e);
    }
    *out = e;
    return 0;
fail:
    mdb_fail(err, rc, "open", dir);
refused:
    if (e->env)
        mdb_env_close(e->env);
    free(e->dir);
    free(e);
    return -1;
}

void sl_md_close(struct sl_md_env *e)
{
    if (!e)
        return;
    pthread_mutex_lock(&e->mu);
    e->stop = true;
    pthread_cond_broadcast(&e->cv_work);
    pthread_mutex_unlock(&e->mu);
    pthread_join(e->thr, NULL);
    if (e->has_syncthr)
        pthread_join(e->syncthr, NULL);
    mdb_env_sync(e->env, 1);
    mdb_env_close(e->env);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv_work);
    pthread_cond_destroy(&e->cv_done);
    free(e->dir);
    free(e);
}

const char *sl_md_dir(struct sl_md_env *e)
{
    return e->dir;
}

static void *syncer(void *arg)
{
    struct sl_md_env *e = arg;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        bool stop = e->stop;
        pthread_mutex_unlock(&e->mu);
        if (stop)
            break;
        for (int i = 0; i < 10 && !e->stop; i++)
            sl_sleep_ms(100);
        mdb_env_sync(e->env, 1);
    }
    return NULL;
}

/* ---- reads ---- */

static int find_in_group(const MDB_val *v, const char *suffix, size_t slen, struct sl_objmd *out)
{
    /* On every GET: a zone whose first chunk (a group of one or two
     * records needs a few hundred bytes) comes from malloc's per-thread
     * cache, not the zone and 8 KiB chunk msgpack_unpack_next would make. */
    msgpack_zone z;
    msgpack_object o;
    if (!msgpack_zone_init(&z, 896))
        return -1;
    size_t off = 0;
    int found = 0;
    msgpack_unpack_return ur = msgpack_unpack(v->mv_data, v->mv_size, &off, &z, &o);
    if ((ur == MSGPACK_UNPACK_SUCCESS || ur == MSGPACK_UNPACK_EXTRA_BYTES) && o.type == MSGPACK_OBJECT_ARRAY) {
        for (uint32_t i = 0; i < o.via.array.size; i++) {
            const char *s;
            size_t sl;
            if (sl_md_unpack_rec(&o.via.array.ptr[i], &s, &sl, NULL) < 0)
                continue;
            if (sl == slen && memcmp(s, suffix, slen) == 0) {
                sl_md_unpack_rec(&o.via.array.ptr[i], &s, &sl, out);
                found = 1;
                break;
            }
        }
    } else {
        found = -1;
    }
    msgpack_zone_destroy(&z);
    return found;
}

int sl_md_obj_get(struct sl_md_env *e, uint64_t bid, const char *name, size_t nlen, struct sl_objmd *out,
                  struct sl_err *err)
{
    unsigned char kb[8 + SL_MD_KEYNAME];
    MDB_val k, v;
    k.mv_data = kb;
    k.mv_size = make_key(kb, bid, name, nlen);
    MDB_txn *txn;
    int rc = mdb_txn_begin(e->env, NULL, MDB_RDONLY, &txn);
    if (rc)
        return mdb_fail(err, rc, "read", e->dir);
    rc = mdb_get(txn, e->objs, &k, &v);
    int found = 0;
    if (rc == 0) {
        const char *suf = nlen > SL_MD_KEYNAME ? name + SL_MD_KEYNAME : "";
        size_t slen = nlen > SL_MD_KEYNAME ? nlen - SL_MD_KEYNAME : 0;
        found = find_in_group(&v, suf, slen, out);
        if (found < 0)
            sl_errf(err, SL_EIO, "metadata in %s: corrupt record for %.*s", e->dir, (int)SL_MIN(nlen, 200), name);
    } else if (rc != MDB_NOTFOUND) {
        mdb_fail(err, rc, "read", e->dir);
        found = -1;
    }
    mdb_txn_abort(txn);
    return found;
}

int sl_md_aux_get(struct sl_md_env *e, const char *key, size_t klen, struct sl_buf *out)
{
    MDB_txn *txn;
    MDB_val k = { klen, (void *)key }, v;
    if (mdb_txn_begin(e->env, NULL, MDB_RDONLY, &txn))
        return -1;
    int rc = mdb_get(txn, e->aux, &k, &v);
    int found = 0;
    if (rc == 0) {
        sl_buf_add(out, v.mv_data, v.mv_size);
        found = 1;
    } else if (rc != MDB_NOTFOUND) {
        found = -1;
    }
    mdb_txn_abort(txn);
    return found;
}

/* ---- writes ---- */

/* Rewrite the group stored under k with rec (suffix, md) inserted/replaced,
 * or removed when md is NULL. */
static int group_update(MDB_txn *txn, MDB_dbi dbi, MDB_val *k, const char *suffix, size_t slen,
                        const struct sl_objmd *md)
{
    MDB_val old;
    int rc = mdb_get(txn, dbi, k, &old);
    if (rc && rc != MDB_NOTFOUND)
        return rc;
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    const msgpack_object *recs = NULL;
    uint32_t nrec = 0;
    if (rc == 0) {
        size_t off = 0;
        if (msgpack_unpack_next(&up, old.mv_data, old.mv_size, &off) == MSGPACK_UNPACK_SUCCESS &&
            up.data.type == MSGPACK_OBJECT_ARRAY) {
            recs = up.data.via.array.ptr;
            nrec = up.data.via.array.size;
        }
    }
    /* count output records */
    uint32_t nout = 0;
    bool placed = false;
    for (uint32_t i = 0; i < nrec; i++) {
        const char *s;
        size_t sl;
        if (sl_md_unpack_rec(&recs[i], &s, &sl, NULL) < 0)
            continue;
        if (sl == slen && memcmp(s, suffix, slen) == 0)
            continue;
        nout++;
    }
    if (md)
        nout++;
    if (nout == 0) {
        msgpack_unpacked_destroy(&up);
        msgpack_sbuffer_destroy(&sb);
        rc = mdb_del(txn, dbi, k, NULL);
        return rc == MDB_NOTFOUND ? 0 : rc;
    }
    msgpack_pack_array(&pk, nout);
    for (uint32_t i = 0; i < nrec; i++) {
        const char *s;
        size_t sl;
        if (sl_md_unpack_rec(&recs[i], &s, &sl, NULL) < 0)
            continue;
        if (sl == slen && memcmp(s, suffix, slen) == 0)
            continue;
        if (md && !placed && suffix_cmp(suffix, slen, s, sl) < 0) {
            sl_md_pack_rec(&pk, suffix, slen, md);
            placed = true;
        }
        msgpack_pack_object(&pk, recs[i]);
    }
    if (md && !placed)
        sl_md_pack_rec(&pk, suffix, slen, md);
    MDB_val nv = { sb.size, sb.data };
    rc = mdb_put(txn, dbi, k, &nv, 0);
    msgpack_unpacked_destroy(&up);
    msgpack_sbuffer_destroy(&sb);
    return rc;
}

static int apply_op(struct sl_md_env *e, MDB_txn *txn, const struct sl_md_op *op, int *more)
{
    unsigned char kb[8 + SL_MD_KEYNAME];
    MDB_val k, v;
    int rc = 0;
    switch (op->kind) {
    case SL_MD_PUT_OBJ:
    case SL_MD_DEL_OBJ: {
        k.mv_data = kb;
        k.mv_size = make_key(kb, op->bid, op->name, op->nlen);
        const char *suf = op->nlen > SL_MD_KEYNAME ? op->name + SL_MD_KEYNAME : "";
        size_t slen = op->nlen > SL_MD_KEYNAME ? op->nlen - SL_MD_KEYNAME : 0;
        if (op->nlen < SL_MD_KEYNAME && op->kind == SL_MD_PUT_OBJ) {
            /* short names own their key: no read needed */
            msgpack_sbuffer sb;
            msgpack_sbuffer_init(&sb);
            msgpack_packer pk;
            msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
            msgpack_pack_array(&pk, 1);
            sl_md_pack_rec(&pk, "", 0, op->md);
            v.mv_data = sb.data;
            v.mv_size = sb.size;
            rc = mdb_put(txn, e->objs, &k, &v, 0);
            msgpack_sbuffer_destroy(&sb);
        } else if (op->nlen < SL_MD_KEYNAME) {
            rc = mdb_del(txn, e->objs, &k, NULL);
            if (rc == MDB_NOTFOUND)
                rc = 0;
        } else {
            rc = group_update(txn, e->objs, &k, suf, slen, op->kind == SL_MD_PUT_OBJ ? op->md : NULL);
        }
        break;
    }
    case SL_MD_PUT_PENDING:
    case SL_MD_PUT_AUX:
        k.mv_data = (void *)op->key;
        k.mv_size = op->klen;
        v.mv_data = (void *)op->val;
        v.mv_size = op->vlen;
        rc = mdb_put(txn, op->kind == SL_MD_PUT_AUX ? e->aux : e->pending, &k, &v, 0);
        break;
    case SL_MD_DEL_PENDING:
    case SL_MD_DEL_AUX:
        k.mv_data = (void *)op->key;
        k.mv_size = op->klen;
        rc = mdb_del(txn, op->kind == SL_MD_DEL_AUX ? e->aux : e->pending, &k, NULL);
        if (rc == MDB_NOTFOUND)
            rc = 0;
        break;
    case SL_MD_DEL_AUX_PREFIX: {
        MDB_cursor *c;
        rc = mdb_cursor_open(txn, e->aux, &c);
        if (rc)
            break;
        k.mv_data = (void *)op->key;
        k.mv_size = op->klen;
        int n = 0;
        rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
        while (rc == 0 && k.mv_size >= op->klen && memcmp(k.mv_data, op->key, op->klen) == 0) {
            if (n >= DEL_BATCH) {
                *more = 1;
                break;
            }
            rc = mdb_cursor_del(c, 0);
            if (rc)
                break;
            n++;
            rc = mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT);
            if (rc == EINVAL || rc == MDB_NOTFOUND)
                rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
        }
        if (rc == MDB_NOTFOUND)
            rc = 0;
        mdb_cursor_close(c);
        break;
    }
    case SL_MD_DEL_BUCKET: {
        MDB_cursor *c;
        rc = mdb_cursor_open(txn, e->objs, &c);
        if (rc)
            break;
        make_key(kb, op->bid, "", 0);
        k.mv_data = kb;
        k.mv_size = 8;
        int n = 0;
        rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
        while (rc == 0 && k.mv_size >= 8 && memcmp(k.mv_data, kb, 8) == 0) {
            if (n >= DEL_BATCH) {
                *more = 1;
                break;
            }
            rc = mdb_cursor_del(c, 0);
            if (rc)
                break;
            n++;
            rc = mdb_cursor_get(c, &k, &v, MDB_GET_CURRENT);
            if (rc == EINVAL || rc == MDB_NOTFOUND) /* past the end after delete */
                rc = mdb_cursor_get(c, &k, &v, MDB_SET_RANGE);
        }
        if (rc == MDB_NOTFOUND)
            rc = 0;
        mdb_cursor_close(c);
        break;
    }
    default:
        rc = EINVAL;
    }
    return rc;
}

/* Apply a list of requests in one transaction. A prefix deletion bigger than
 * one transaction (DEL_BATCH keys) commits what it deleted and goes on in the
 * next transaction from that very op: what came before it is in, what comes
 * after it waits. (Re-applying the whole list instead never ended when more
 * than DEL_BATCH keys under the prefix were put after the deletion: each
 * round deleted a batch of them and put them back.) */
static uint64_t obj_changes; /* committed transactions that changed objects' records, every env */

uint64_t sl_md_obj_changes(void)
{
    return __atomic_load_n(&obj_changes, __ATOMIC_ACQUIRE);
}

static int run_reqs(struct sl_md_env *e, struct md_req *list, bool single)
{
    struct md_req *r0 = list; /* where the next transaction starts */
    int i0 = 0;
    for (;;) {
        MDB_txn *txn;
        int more = 0;
        bool objs = false;
        int rc = mdb_txn_begin(e->env, NULL, 0, &txn);
        if (rc)
            return rc;
        int i = i0;
        for (struct md_req *r = r0; r && !rc && !more; r = single ? NULL : r->next, i = 0) {
            for (; i < r->nops && !rc && !more; i++) {
                int k = r->ops[i].kind;
                objs |= k == SL_MD_PUT_OBJ || k == SL_MD_DEL_OBJ || k == SL_MD_DEL_BUCKET;
                rc = apply_op(e, txn, &r->ops[i], &more);
                if (more) {
                    r0 = r;
                    i0 = i;
                }
            }
        }
        if (rc) {
            mdb_txn_abort(txn);
            return rc;
        }
        rc = mdb_txn_commit(txn);
        if (!rc && objs)
            __atomic_add_fetch(&obj_changes, 1, __ATOMIC_RELEASE); /* (after the commit: a reader sees it first) */
        if (rc || !more)
            return rc;
    }
}

static void free_req_ops(struct md_req *r)
{
    if (!r->owned)
        return;
    for (int i = 0; i < r->nops; i++) {
        free((void *)r->ops[i].name);
        free((void *)r->ops[i].key);
        free((void *)r->ops[i].val);
        if (r->ops[i].md) {
            sl_objmd_free((struct sl_objmd *)r->ops[i].md);
            free((void *)r->ops[i].md);
        }
    }
    free(r->ops);
}

/* Under e->mu: whether the committer has work now. Lazy requests alone
 * wait until they are due (a waited commit usually takes them first). */
static bool committer_turn(struct sl_md_env *e)
{
    return e->head && !e->running && (e->urgent || e->stop || sl_mono_ns() >= e->lazy_due);
}

/* Commit list (taken off the queue, e->running set) in one transaction; when
 * it fails, each request alone, so that only the bad one fails. Then, under
 * e->mu: waited requests are marked done, the others freed, e->running is
 * cleared and whoever waits is told. */
static void run_list(struct sl_md_env *e, struct md_req *list)
{
    int rc = run_reqs(e, list, false);
    if (rc) {
        for (struct md_req *r = list; r; r = r->next) {
            r->rc = run_reqs(e, r, true);
            if (r->rc)
                snprintf(r->errmsg, sizeof(r->errmsg), "%s", mdb_strerror(r->rc));
        }
    }
    pthread_mutex_lock(&e->mu);
    struct md_req *next;
    for (struct md_req *r = list; r; r = next) {
        next = r->next;
        if (r->wait) {
            r->done = true;
        } else {
            if (r->rc)
                sl_logw("metadata %s: background commit failed: %s", e->dir, r->errmsg);
            free_req_ops(r);
            free(r);
        }
    }
    e->running = false;
    /* queued meanwhile: the committer takes it, or times its lazy requests
     * from now on; one already waiting for a lazy deadline needs no wake-up
     * (with two inline committers that was one wake-up per PUT) */
    if (e->head && (e->urgent || e->sleeping))
        pthread_cond_signal(&e->cv_work);
    pthread_cond_broadcast(&e->cv_done);
    pthread_mutex_unlock(&e->mu);
}

/* Under e->mu: the queue, for whoever commits it next. */
static struct md_req *take_queue(struct sl_md_env *e)
{
    struct md_req *list = e->head;
    e->head = e->tail = NULL;
    e->urgent = false;
    e->running = true;
    return list;
}

/* Test hook: SHALE_TEST_MD_COMMIT_DELAY_MS=N makes every group commit wait N
 * ms first, as a slow disk would (tests check that no HTTP thread waits on one) */
#define COMMIT_DELAY_ENV "SHALE_TEST_MD_COMMIT_DELAY_MS"

static void *committer(void *arg)
{
    struct sl_md_env *e = arg;
    const char *d = getenv(COMMIT_DELAY_ENV);
    int delay_ms = d ? atoi(d) : 0;
    useconds_t delay_us = delay_ms > 0 && delay_ms < 60000 ? (useconds_t)delay_ms * 1000 : 0;
    for (;;) {
        pthread_mutex_lock(&e->mu);
        while (!committer_turn(e) && !(e->stop && !e->head && !e->running)) {
            if (e->head && !e->running) { /* lazy requests only: until due */
                struct timespec ts = { .tv_sec = e->lazy_due / 1000000000, .tv_nsec = e->lazy_due % 1000000000 };
                pthread_cond_timedwait(&e->cv_work, &e->mu, &ts);
            } else {
                e->sleeping = true;
                pthread_cond_wait(&e->cv_work, &e->mu);
                e->sleeping = false;
            }
        }
        if (!e->head) { /* stopping, all done */
            pthread_mutex_unlock(&e->mu);
            break;
        }
        struct md_req *list = take_queue(e);
        pthread_mutex_unlock(&e->mu);
        if (delay_us)
            usleep(delay_us);
        run_list(e, list);
    }
    return NULL;
}

/* A waited commit that no fsync follows (write_policy.md not "immediate"):
 * made on the caller's thread once no other list is being committed,
 * together with what is queued (lazy requests mostly), in one transaction.
 * Handing it to the committer and waiting for the answer cost two context
 * switches or more, and with no fsync there is nothing to group. The queue
 * goes first, so the order of commits stays the order of calls. 1: not
 * taken (queue it). */
static int commit_inline(struct sl_md_env *e, const struct sl_md_op *ops, int nops, struct sl_err *err)
{
    if (e->sync == SL_MD_SYNC)
        return 1;
    pthread_mutex_lock(&e->mu);
    while (e->running && !e->stop)
        pthread_cond_wait(&e->cv_done, &e->mu);
    if (e->stop) {
        pthread_mutex_unlock(&e->mu);
        return 1;
    }
    struct md_req r = { .ops = (struct sl_md_op *)ops, .nops = nops, .wait = true }, *tail = e->tail;
    struct md_req *list = take_queue(e);
    if (list)
        tail->next = &r;
    else
        list = &r;
    pthread_mutex_unlock(&e->mu);
    run_list(e, list);
    if (r.rc)
        mdb_fail(err, r.rc, "commit", e->dir);
    return r.rc ? -1 : 0;
}

/* Queue r for the committer; lazy: without waking it. */
static void enqueue(struct sl_md_env *e, struct md_req *r)
{
    if (e->tail)
        e->tail->next = r;
    else
        e->head = r;
    e->tail = r;
    if (!r->lazy)
        e->urgent = true;
    else if (e->head == r)
        e->lazy_due = sl_mono_ns() + MD_LAZY_NS;
    if (!r->lazy || e->sleeping)
        pthread_cond_signal(&e->cv_work);
}

static int submit(struct sl_md_env *e, const struct sl_md_op *ops, int nops, bool wait, bool lazy,
                  struct sl_err *err)
{
    int irc;
    if (wait && (irc = commit_inline(e, ops, nops, err)) <= 0)
        return irc;
    struct md_req *r = sl_xcalloc(1, sizeof(*r));
    r->wait = wait;
    r->lazy = lazy;
    r->nops = nops;
    if (wait) {
        r->ops = (struct sl_md_op *)ops;
    } else {
        r->owned = true;
        r->ops = sl_xcalloc((size_t)nops, sizeof(*ops));
        for (int i = 0; i < nops; i++) {
            r->ops[i] = ops[i];
            if (ops[i].name)
                r->ops[i].name = sl_xstrndup(ops[i].name, ops[i].nlen);
            if (ops[i].key)
                r->ops[i].key = sl_xstrndup(ops[i].key, ops[i].klen);
            if (ops[i].val)
                r->ops[i].val = sl_xstrndup(ops[i].val, ops[i].vlen);
            if (ops[i].md) {
                struct sl_objmd *m = sl_xmalloc(sizeof(*m));
                sl_objmd_copy(m, ops[i].md);
                r->ops[i].md = m;
            }
        }
    }
    pthread_mutex_lock(&e->mu);
    enqueue(e, r);
    if (!wait) {
        pthread_mutex_unlock(&e->mu);
        return 0;
    }
    while (!r->done)
        pthread_cond_wait(&e->cv_done, &e->mu);
    pthread_mutex_unlock(&e->mu);
    int rc = r->rc;
    if (rc)
        mdb_fail(err, rc, "commit", e->dir);
    free(r);
    return rc ? -1 : 0;
}

int sl_md_commit(struct sl_md_env *e, const struct sl_md_op *ops, int nops, bool wait, struct sl_err *err)
{
    return submit(e, ops, nops, wait, false, err);
}

void sl_md_commit_lazy(struct sl_md_env *e, const struct sl_md_op *ops, int nops)
{
    submit(e, ops, nops, false, true, NULL);
}

int sl_md_aux_foreach(struct sl_md_env *e, const char *prefix, size_t plen,
                      int (*cb)(void *arg, const char *key, size_t klen, const char *val, size_t vlen), void *arg)
{
    return sl_md_aux_foreach_from(e, prefix, plen, NULL, 0, cb, arg);
}

int sl_md_aux_foreach_from(struct sl_md_env *e, const char *prefix, size_t plen, const char *from, size_t flen,
                           int (*cb)(void *arg, const char *key, size_t klen, const char *val, size_t vlen), void *arg)
{
    MDB_txn *txn;
    MDB_cursor *c;
    MDB_val k = { plen, (void *)prefix }, v;
    if (flen) {
        k.mv_size = flen;
        k.mv_data = (void *)from;
    }
    if (mdb_txn_begin(e->env, NULL, MDB_RDONLY, &txn))
        return -1;
    if (mdb_cursor_open(txn, e->aux, &c)) {
        mdb_txn_abort(txn);
        return -1;
    }
    int rc = mdb_cursor_get(c, &k, &v, k.mv_size ? MDB_SET_RANGE : MDB_FIRST);
    while (rc == 0 && k.mv_size >= plen && memcmp(k.mv_data, prefix, plen) == 0) {
        if (cb(arg, k.mv_data, k.mv_size, v.mv_data, v.mv_size))
            break;
        rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(c);
    mdb_txn_abort(txn);
    return 0;
}

int sl_md_pending_foreach(struct sl_md_env *e,
                          int (*cb)(void *arg, const char *key, size_t klen, const char *val, size_t vlen), void *arg)
{
    MDB_txn *txn;
    MDB_cursor *c;
    MDB_val k, v;
    if (mdb_txn_begin(e->env, NULL, MDB_RDONLY, &txn))
        return -1;
    if (mdb_cursor_open(txn, e->pending, &c)) {
        mdb_txn_abort(txn);
        return -1;
    }
    int rc = mdb_cursor_get(c, &k, &v, MDB_FIRST);
    while (rc == 0) {
        if (cb(arg, k.mv_data, k.mv_size, v.mv_data, v.mv_size))
            break;
        rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(c);
    mdb_txn_abort(txn);
    return 0;
}

/* ---- iteration ---- */

struct grp_ent {
    const char *suffix;
    size_t slen;
    const msgpack_object *rec;
};

struct sl_md_iter {
    struct sl_md_env *e;
    MDB_txn *txn;
    MDB_cursor *cur;
    uint64_t bid;
    unsigned char bk[8];
    char *prefix;
    size_t plen;
    bool started, ended;
    /* current key's group */
    msgpack_unpacked up;
    struct grp_ent *ents;
    uint32_t nents, ei, cap;
    char keyname[SL_MD_KEYNAME];
    size_t keylen;
    /* current entry */
    char name[SL_MAX_OBJNAME + SL_MD_KEYNAME + 1];
    size_t namelen;
    struct sl_objmd md;
    bool have_md;
    /* lower bound applied to the first entries (exclusive or inclusive) */
    char *after;
    size_t alen;
    bool after_inclusive;
};

static int ent_cmp(const void *a, const void *b)
{
    const struct grp_ent *x = a, *y = b;
    return suffix_cmp(x->suffix, x->slen, y->suffix, y->slen);
}

static int load_group(struct sl_md_iter *it, MDB_val *k, MDB_val *v)
{
    msgpack_unpacked_destroy(&it->up);
    msgpack_unpacked_init(&it->up);
    it->nents = it->ei = 0;
    it->keylen = k->mv_size - 8;
    memcpy(it->keyname, (char *)k->mv_data + 8, it->keylen);
    size_t off = 0;
    if (msgpack_unpack_next(&it->up, v->mv_data, v->mv_size, &off) != MSGPACK_UNPACK_SUCCESS ||
        it->up.data.type != MSGPACK_OBJECT_ARRAY)
        return 0; /* corrupt: skip key */
    uint32_t n = it->up.data.via.array.size;
    if (n > it->cap) {
        it->ents = sl_xrealloc(it->ents, n * sizeof(*it->ents));
        it->cap = n;
    }
    for (uint32_t i = 0; i < n; i++) {
        const msgpack_object *r = &it->up.data.via.array.ptr[i];
        const char *s;
        size_t sl;
        if (sl_md_unpack_rec(r, &s, &sl, NULL) < 0)
            continue;
        it->ents[it->nents].suffix = s;
        it->ents[it->nents].slen = sl;
        it->ents[it->nents].rec = r;
        it->nents++;
    }
    if (it->nents > 1)
        qsort(it->ents, it->nents, sizeof(*it->ents), ent_cmp);
    return 0;
}

/* Does the key's name part still fall inside the prefix range? */
static bool key_in_prefix(struct sl_md_iter *it, const MDB_val *k)
{
    if (k->mv_size < 8 || memcmp(k->mv_data, it->bk, 8) != 0)
        return false;
    size_t cmpn = it->plen < SL_MD_KEYNAME ? it->plen : SL_MD_KEYNAME;
    if (k->mv_size - 8 < cmpn)
        return false;
    return memcmp((char *)k->mv_data + 8, it->prefix, cmpn) == 0;
}

static int position(struct sl_md_iter *it, const char *from, size_t flen, bool inclusive)
{
    unsigned char kb[8 + SL_MD_KEYNAME];
    MDB_val k, v;
    k.mv_data = kb;
    k.mv_size = make_key(kb, it->bid, from, flen);
    free(it->after);
    it->after = flen ? sl_xstrndup(from, flen) : NULL;
    it->alen = flen;
    it->after_inclusive = inclusive;
    it->nents = it->ei = 0;
    int rc = mdb_cursor_get(it->cur, &k, &v, MDB_SET_RANGE);
    if (rc == MDB_NOTFOUND) {
        it->ended = true;
        return 0;
    }
    if (rc)
        return -1;
    if (!key_in_prefix(it, &k)) {
        it->ended = true;
        return 0;
    }
    it->ended = false;
    load_group(it, &k, &v);
    it->started = true;
    return 0;
}

int sl_md_iter_open(struct sl_md_env *e, uint64_t bid, const char *prefix, size_t plen, const char *after,
                    size_t alen, struct sl_md_iter **out, struct sl_err *err)
{
    struct sl_md_iter *it = sl_xcalloc(1, sizeof(*it));
    it->e = e;
    it->bid = bid;
    make_key(it->bk, bid, "", 0);
    it->prefix = sl_xstrndup(prefix ? prefix : "", prefix ? plen : 0);
    it->plen = prefix ? plen : 0;
    msgpack_unpacked_init(&it->up);
    int rc = mdb_txn_begin(e->env, NULL, MDB_RDONLY, &it->txn);
    if (rc) {
        msgpack_unpacked_destroy(&it->up);
        free(it->prefix);
        free(it);
        return mdb_fail(err, rc, "read", e->dir);
    }
    rc = mdb_cursor_open(it->txn, e->objs, &it->cur);
    if (rc) {
        mdb_txn_abort(it->txn);
        msgpack_unpacked_destroy(&it->up);
        free(it->prefix);
        free(it);
        return mdb_fail(err, rc, "cursor", e->dir);
    }
    /* start from max(prefix, after) */
    const char *from = it->prefix;
    size_t flen = it->plen;
    bool incl = true;
    if (after && alen && suffix_cmp(after, alen, it->prefix, it->plen) >= 0) {
        from = after;
        flen = alen;
        incl = false;
    }
    if (position(it, from, flen, incl) < 0) {
        sl_md_iter_close(it);
        return sl_errf(err, SL_EIO, "metadata %s: cursor positioning failed", e->dir);
    }
    *out = it;
    return 0;
}

int sl_md_iter_next(struct sl_md_iter *it)
{
    if (it->have_md) {
        sl_objmd_free(&it->md);
        it->have_md = false;
    }
    for (;;) {
        if (it->ended)
            return 0;
        while (it->ei < it->nents) {
            struct grp_ent *g = &it->ents[it->ei++];
            size_t nl = it->keylen + g->slen;
            if (nl > sizeof(it->name) - 1)
                continue;
            memcpy(it->name, it->keyname, it->keylen);
            memcpy(it->name + it->keylen, g->suffix, g->slen);
            it->name[nl] = 0;
            it->namelen = nl;
            if (it->plen && (nl < it->plen || memcmp(it->name, it->prefix, it->plen) != 0))
                continue;
            if (it->after) {
                int c = suffix_cmp(it->name, nl, it->after, it->alen);
                if (c < 0 || (c == 0 && !it->after_inclusive))
                    continue;
            }
            const char *s;
            size_t sl;
            sl_md_unpack_rec(g->rec, &s, &sl, &it->md);
            it->have_md = true;
            return 1;
        }
        /* next key; the lower bound only matters for the first group */
        free(it->after);
        it->after = NULL;
        MDB_val k, v;
        int rc = mdb_cursor_get(it->cur, &k, &v, MDB_NEXT);
        if (rc == MDB_NOTFOUND || (rc == 0 && !key_in_prefix(it, &k))) {
            it->ended = true;
            return 0;
        }
        if (rc)
            return -1;
        load_group(it, &k, &v);
    }
}

const char *sl_md_iter_name(struct sl_md_iter *it, size_t *len)
{
    if (len)
        *len = it->namelen;
    return it->name;
}

const struct sl_objmd *sl_md_iter_md(struct sl_md_iter *it)
{
    return &it->md;
}

int sl_md_iter_seek(struct sl_md_iter *it, const char *name, size_t nlen)
{
    if (it->have_md) {
        sl_objmd_free(&it->md);
        it->have_md = false;
    }
    return position(it, name, nlen, true);
}

void sl_md_iter_close(struct sl_md_iter *it)
{
    if (!it)
        return;
    if (it->have_md)
        sl_objmd_free(&it->md);
    mdb_cursor_close(it->cur);
    mdb_txn_abort(it->txn);
    msgpack_unpacked_destroy(&it->up);
    free(it->ents);
    free(it->prefix);
    free(it->after);
    free(it);
}

int sl_md_bucket_stats(struct sl_md_env *e, uint64_t bid, uint64_t *count, uint64_t *bytes)
{
    struct sl_md_iter *it;
    struct sl_err err;
    *count = *bytes = 0;
    if (sl_md_iter_open(e, bid, "", 0, NULL, 0, &it, &err) < 0)
        return -1;
    int rc;
    while ((rc = sl_md_iter_next(it)) == 1) {
        (*count)++;
        *bytes += sl_md_iter_md(it)->size;
    }
    sl_md_iter_close(it);
    return rc < 0 ? -1 : 0;
}

/* ---- node environment ---- */

struct sl_md_node {
    MDB_env *env;
    MDB_dbi dbi;
    char *dir;
};

int sl_md_node_open(const char *dir, struct sl_md_node **out, struct sl_err *err)
{
    if (sl_mkdir_p(dir, 0755) < 0)
        return sl_errf(err, SL_EIO, "cannot create node metadata directory %s: %s", dir, strerror(errno));
    struct sl_md_node *n = sl_xcalloc(1, sizeof(*n));
    n->dir = sl_xstrdup(dir);
    int rc = mdb_env_create(&n->env);
    if (rc)
        goto fail;
    mdb_env_set_mapsize(n->env, MAPSIZE_NODE);
    mdb_env_set_maxreaders(n->env, 256);
    rc = mdb_env_open(n->env, dir, MDB_NOTLS, 0644);
    if (rc)
        goto fail;
    int dead = 0;
    mdb_reader_check(n->env, &dead);
    MDB_txn *txn;
    rc = mdb_txn_begin(n->env, NULL, 0, &txn);
    if (rc)
        goto fail;
    MDB_stat st;
    if ((rc = mdb_dbi_open(txn, NULL, 0, &n->dbi)) || (rc = mdb_stat(txn, n->dbi, &st))) {
        mdb_txn_abort(txn);
        goto fail;
    }
    /* fresh: no document yet, so nothing to migrate */
    if (schema_settle(txn, n->dbi, &node_schema_key, st.ms_entries == 0, node_migrations,
                      sizeof(node_migrations) / sizeof(node_migrations[0]), n, "node", dir, err) < 0) {
        mdb_txn_abort(txn);
        goto refused;
    }
    rc = mdb_txn_commit(txn);
    if (rc)
        goto fail;
    *out = n;
    return 0;
fail:
    mdb_fail(err, rc, "open", dir);
refused:
    if (n->env)
        mdb_env_close(n->env);
    free(n->dir);
    free(n);
    return -1;
}

void sl_md_node_close(struct sl_md_node *n)
{
    if (!n)
        return;
    mdb_env_close(n->env);
    free(n->dir);
    free(n);
}

int sl_md_node_get(struct sl_md_node *n, const char *key, struct sl_buf *out)
{
    MDB_txn *txn;
    MDB_val k = { strlen(key), (void *)key }, v;
    if (mdb_txn_begin(n->env, NULL, MDB_RDONLY, &txn))
        return -1;
    int rc = mdb_get(txn, n->dbi, &k, &v);
    int found = 0;
    if (rc == 0) {
        sl_buf_reset(out);
        sl_buf_add(out, v.mv_data, v.mv_size);
        found = 1;
    } else if (rc != MDB_NOTFOUND) {
        found = -1;
    }
    mdb_txn_abort(txn);
    return found;
}

int sl_md_node_put(struct sl_md_node *n, const char *key, const void *val, size_t len)
{
    MDB_txn *txn;
    MDB_val k = { strlen(key), (void *)key }, v = { len, (void *)val };
    int rc = mdb_txn_begin(n->env, NULL, 0, &txn);
    if (rc)
        return -1;
    rc = mdb_put(txn, n->dbi, &k, &v, 0);
    if (rc) {
        mdb_txn_abort(txn);
        return -1;
    }
    return mdb_txn_commit(txn) ? -1 : 0;
}

int sl_md_node_del(struct sl_md_node *n, const char *key)
{
    MDB_txn *txn;
    MDB_val k = { strlen(key), (void *)key };
    int rc = mdb_txn_begin(n->env, NULL, 0, &txn);
    if (rc)
        return -1;
    rc = mdb_del(txn, n->dbi, &k, NULL);
    if (rc && rc != MDB_NOTFOUND) {
        mdb_txn_abort(txn);
        return -1;
    }
    return mdb_txn_commit(txn) ? -1 : 0;
}

int sl_md_node_foreach(struct sl_md_node *n, const char *prefix,
                       int (*cb)(void *arg, const char *key, const char *val, size_t vlen), void *arg)
{
    MDB_txn *txn;
    MDB_cursor *c;
    size_t pl = strlen(prefix);
    MDB_val k = { pl, (void *)prefix }, v;
    if (mdb_txn_begin(n->env, NULL, MDB_RDONLY, &txn))
        return -1;
    if (mdb_cursor_open(txn, n->dbi, &c)) {
        mdb_txn_abort(txn);
        return -1;
    }
    int rc = pl ? mdb_cursor_get(c, &k, &v, MDB_SET_RANGE) : mdb_cursor_get(c, &k, &v, MDB_FIRST);
    while (rc == 0 && k.mv_size >= pl && memcmp(k.mv_data, prefix, pl) == 0) {
        if (k.mv_size && *(const char *)k.mv_data == 0) { /* reserved (schema version): not a document */
            rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
            continue;
        }
        char *key = sl_xstrndup(k.mv_data, k.mv_size);
        int stop = cb(arg, key, v.mv_data, v.mv_size);
        free(key);
        if (stop)
            break;
        rc = mdb_cursor_get(c, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(c);
    mdb_txn_abort(txn);
    return rc == 0 || rc == MDB_NOTFOUND ? 0 : -1;
}
