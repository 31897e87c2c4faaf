/* SPDX-License-Identifier: MIT
 * ec.c: erasure coding across targets (see ec.h): encoding and sending
 * slices/replicas (ec-put job), rebuilding a missing object from them,
 * removing them with the object, the ec-encode walk, and the node-to-node
 * endpoints:
 *
 *   PUT    /v1/internal/ec/slice?provider=&bck=&obj=&meta=JSON   body: slice
 *   GET    /v1/internal/ec/slice?provider=&bck=&obj=   200: metafile JSON,
 *          "\n", the slice (or, from a target holding the object itself, the
 *          whole object as a replica); 404 none here
 *   DELETE /v1/internal/ec/slice?provider=&bck=&obj=
 *   POST   /v1/internal/ec/ensure?provider=&bck=&obj=[&reencode=1]
 *                                                    rebuild here if missing (and encode it again:
 *                                                    a slice of it elsewhere was damaged)
 *   POST   /v1/internal/ec/start {"id","provider","bck"}  job ec-encode here
 */
#include "ec.h"
#include "bqueue.h"
#include "bg.h"
#include "backend.h"
#include "cksum.h"
#include "cluster.h"
#include "conf.h"
#include "jsonx.h"
#include "log.h"
#include "md.h"
#include "node.h"
#include "peer.h"
#include "stats.h"
#include "xact.h"

#include <isa-l/erasure_code.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define EC_MAX_OBJ (1024ULL * 1024 * 1024)   /* encoded in memory: larger objects are refused (logged) */
#define EC_MAX_OBJ_ENV "SHALE_TEST_EC_MAX_OBJ"   /* lowers it: tests make an object too big without 1 GiB */
#define EC_IDLE_NS (5LL * 1000000000LL)      /* an ec-put job with nothing to do for this long ends */

static struct sl_workers wk; /* threads of this file at work, and the stop flag */

static void leave(void)
{
    sl_workers_leave(&wk);
}

void sl_ec_quiesce(int64_t timeout_ms)
{
    sl_workers_quiesce(&wk, timeout_ms, "erasure coding");
}

bool sl_ec_props(const struct sl_bck *b, int *d, int *p, int64_t *limit)
{
    json_t *ec = json_object_get(b->props, "ec");
    if (!json_is_true(json_object_get(ec, "enabled")))
        return false;
    *d = (int)json_integer_value(json_object_get(ec, "data_slices"));
    *p = (int)json_integer_value(json_object_get(ec, "parity_slices"));
    *limit = (int64_t)json_integer_value(json_object_get(ec, "objsize_limit"));
    return *d >= 1 && *p >= 1 && *d <= 32 && *p <= 32;
}

/* the largest object encoded: EC_MAX_OBJ, or less by EC_MAX_OBJ_ENV */
static uint64_t max_obj(void)
{
    const char *v = getenv(EC_MAX_OBJ_ENV);
    uint64_t n = v && *v ? strtoull(v, NULL, 10) : 0;
    return n && n < EC_MAX_OBJ ? n : EC_MAX_OBJ;
}

/* replicated (P extra full replicas) rather than sliced */
static bool replicated(uint64_t size, int64_t limit)
{
    return size == 0 || limit < 0 || (limit > 0 && size < (uint64_t)limit);
}

/* ---- local slices and metafiles ---- */

static void ec_paths_on(const struct sl_mpath *mp, const struct sl_bck *b, const char *h, struct sl_buf *data,
                        struct sl_buf *meta)
{
    if (data) {
        sl_buf_reset(data);
        sl_buf_printf(data, "%s/@%s/%s/%%ec/%s", mp ? mp->path : "/nonexistent", b->provider, b->name, h);
    }
    if (meta) {
        sl_buf_reset(meta);
        sl_buf_printf(meta, "%s/@%s/%s/%%mt/%s", mp ? mp->path : "/nonexistent", b->provider, b->name, h);
    }
}

/* where a slice and its metafile go: the object's HRW mountpath */
static void ec_paths(const struct sl_bck *b, const char *name, size_t nlen, struct sl_buf *data, struct sl_buf *meta)
{
    struct sl_mpath *mp = sl_store_locate(b, name, nlen);
    char h[SL_CKSUM_HEX_MAX];
    sl_cksum_buf(SL_CK_SHA256, name, nlen, h);
    ec_paths_on(mp, b, h, data, meta);
}

/* where they are: the HRW mountpath, or, after the mountpaths changed (the
 * resilver moves objects, not slices), the first other mountpath that has
 * the metafile */
static void ec_paths_found(const struct sl_bck *b, const char *name, size_t nlen, struct sl_buf *data,
                           struct sl_buf *meta)
{
    struct sl_buf m;
    sl_buf_init(&m);
    ec_paths(b, name, nlen, data, &m);
    if (access(m.p, F_OK) < 0 && errno == ENOENT) {
        char h[SL_CKSUM_HEX_MAX];
        sl_cksum_buf(SL_CK_SHA256, name, nlen, h);
        struct sl_buf d2, m2;
        sl_buf_init(&d2);
        sl_buf_init(&m2);
        for (int i = 0; i < sl_store_nmpaths(); i++) {
            if (sl_store_mpath_gone(sl_store_mpath(i)))
                continue;
            ec_paths_on(sl_store_mpath(i), b, h, &d2, &m2);
            if (access(m2.p, F_OK) == 0) {
                if (data)
                    ec_paths_on(sl_store_mpath(i), b, h, data, NULL);
                sl_buf_reset(&m);
                sl_buf_add(&m, m2.p, m2.len);
                break;
            }
        }
        sl_buf_free(&d2);
        sl_buf_free(&m2);
    }
    if (meta)
        sl_buf_add(meta, m.p, m.len);
    sl_buf_free(&m);
}

/* write path atomically (work file, fsync per write_policy.data, rename) */
static int write_atomic(const char *path, const void *p, size_t n)
{
    if (sl_mkdir_parents(path, 0755) < 0)
        return -1;
    char rid[12];
    sl_rand_id(rid, 8);
    char *tmp = sl_xasprintf("%s.%s.tmp", path, rid);
    int rc = sl_write_file(tmp, p, n, sl_store_sync_data());
    if (rc == 0 && rename(tmp, path) < 0)
        rc = -1;
    if (rc < 0)
        unlink(tmp);
    free(tmp);
    return rc;
}

static json_t *read_meta_file(const char *path)
{
    struct sl_buf mb;
    sl_buf_init(&mb);
    json_t *j = NULL;
    if (sl_read_file(path, &mb, 1 << 20) == 0) {
        json_error_t je;
        j = json_loadb(mb.p ? mb.p : "", mb.len, 0, &je);
    }
    sl_buf_free(&mb);
    if (j && !json_is_object(j)) {
        json_decref(j);
        j = NULL;
    }
    return j;
}

static json_t *local_meta(const struct sl_bck *b, const char *name, size_t nlen)
{
    struct sl_buf mp;
    sl_buf_init(&mp);
    ec_paths_found(b, name, nlen, NULL, &mp);
    json_t *j = read_meta_file(mp.p);
    sl_buf_free(&mp);
    return j;
}

bool sl_ec_unprotected(const struct sl_bck *b, const char *name, size_t nlen)
{
    struct sl_objmd md;
    struct sl_err err = { 0 };
    if (sl_obj_stat(b, name, nlen, &md, NULL, &err) != 1)
        return false; /* gone meanwhile: nothing here to lose */
    json_t *m = local_meta(b, name, nlen);
    /* a slice's metafile under the same name does not protect this copy */
    bool enc = json_is_true(json_object_get(m, "main")) && sl_json_int(m, "generation", 0) == md.mtime;
    json_decref(m);
    sl_objmd_free(&md);
    return !enc;
}

static void local_remove(const struct sl_bck *b, const char *name, size_t nlen)
{
    struct sl_buf dp, mp;
    sl_buf_init(&dp);
    sl_buf_init(&mp);
    char h[SL_CKSUM_HEX_MAX];
    sl_cksum_buf(SL_CK_SHA256, name, nlen, h);
    for (int i = 0; i < sl_store_nmpaths(); i++) { /* (on any mountpath: see ec_paths_found) */
        ec_paths_on(sl_store_mpath(i), b, h, &dp, &mp);
        unlink(mp.p); /* the metafile first: it never names a missing slice */
        unlink(dp.p);
    }
    sl_buf_free(&dp);
    sl_buf_free(&mp);
}

static int fsync_dir_of(const char *path)
{
    char *d = sl_xstrdup(path);
    char *sl = strrchr(d, '/');
    if (sl)
        *sl = 0;
    int rc = sl_fsync_dir(d);
    free(d);
    return rc;
}

/* A slice or metafile of b/name left on another mountpath before the
 * mountpaths changed: removed once the new one's entries (data: the slice,
 * NULL when none; meta) are on disk, else a power cut could keep the
 * unlinks and lose the renames. */
static void drop_older(const struct sl_bck *b, const char *name, size_t nlen, const char *data, const char *meta)
{
    char h[SL_CKSUM_HEX_MAX];
    sl_cksum_buf(SL_CK_SHA256, name, nlen, h);
    struct sl_buf od, om;
    sl_buf_init(&od);
    sl_buf_init(&om);
    bool synced = false;
    for (int i = 0; i < sl_store_nmpaths(); i++) {
        ec_paths_on(sl_store_mpath(i), b, h, &od, &om);
        if (!strcmp(om.p, meta) || (access(om.p, F_OK) < 0 && access(od.p, F_OK) < 0))
            continue;
        if (!synced && sl_store_sync_data() &&
            (fsync_dir_of(meta) < 0 || (data && fsync_dir_of(data) < 0)))
            break; /* (kept: found again by ec_paths_found only if the new one is lost) */
        synced = true;
        unlink(om.p);
        unlink(od.p);
    }
    sl_buf_free(&od);
    sl_buf_free(&om);
}

static int local_store(const struct sl_bck *b, const char *name, size_t nlen, const json_t *meta, const void *data,
                       size_t n, bool with_data, struct sl_err *err)
{
    struct sl_buf dp, mp;
    sl_buf_init(&dp);
    sl_buf_init(&mp);
    ec_paths(b, name, nlen, &dp, &mp);
    char *mj = json_dumps(meta, JSON_COMPACT);
    int rc = 0;
    if (with_data) {
        unlink(mp.p);
        rc = write_atomic(dp.p, data, n);
    } else {
        unlink(dp.p);
    }
    if (rc == 0)
        rc = write_atomic(mp.p, mj, strlen(mj));
    if (rc < 0) {
        sl_errf(err, SL_EIO, "t[%s]: cannot store an EC slice of %s/%.*s under %s: %s", G.id, b->name,
                (int)SL_MIN(nlen, 200), name, dp.p, strerror(errno));
    } else if (sl_store_nmpaths() > 1) {
        drop_older(b, name, nlen, with_data ? dp.p : NULL, mp.p);
    }
    free(mj);
    sl_buf_free(&dp);
    sl_buf_free(&mp);
    return rc;
}

/* ---- HRW placement ---- */

/* the first want targets for b/name; *n how many the map has */
static int placement(const struct sl_smap *s, const struct sl_bck *b, const char *name, size_t nlen,
                     const struct sl_snode **out, int want)
{
    struct sl_buf un;
    sl_buf_init(&un);
    sl_obj_uname(&un, b->provider, b->name, name, nlen);
    int n = sl_smap_hrw_list(s, un.p, un.len, out, want);
    sl_buf_free(&un);
    return n;
}

static char *slice_url(const char *node_url, const struct sl_bck *b, const char *name, size_t nlen, const char *extra)
{
    char *nm = sl_xstrndup(name, nlen);
    char *eo = sl_url_encode_query(nm), *eb = sl_url_encode_query(b->name);
    char *u = sl_xasprintf("%s/v1/internal/ec/slice?provider=%s&bck=%s&obj=%s%s", node_url, b->provider, eb, eo,
                           extra ? extra : "");
    free(nm);
    free(eo);
    free(eb);
    return u;
}

/* ---- encoding ---- */

/* Reed-Solomon over d data buffers of len bytes into p parity buffers */
static void rs_encode(int d, int p, size_t len, unsigned char **data, unsigned char **par)
{
    int m = d + p;
    unsigned char *a = sl_xmalloc((size_t)(m * d));
    unsigned char *tb = sl_xmalloc((size_t)(d * p * 32));
    gf_gen_cauchy1_matrix(a, m, d);
    ec_init_tables(d, p, &a[d * d], tb);
    if (len)
        ec_encode_data((int)len, d, p, tb, data, par);
    free(a);
    free(tb);
}

/* Rebuild the d data slices from d slices whose ids (1-based) are ids[] */
static int rs_decode(int d, int p, size_t len, const int *ids, unsigned char **src, unsigned char **out)
{
    int m = d + p;
    unsigned char *a = sl_xmalloc((size_t)(m * d)), *bm = sl_xmalloc((size_t)(d * d));
    unsigned char *inv = sl_xmalloc((size_t)(d * d)), *tb = sl_xmalloc((size_t)(d * d * 32));
    gf_gen_cauchy1_matrix(a, m, d);
    for (int i = 0; i < d; i++)
        memcpy(&bm[i * d], &a[(ids[i] - 1) * d], (size_t)d);
    int rc = gf_invert_matrix(bm, inv, d);
    if (rc == 0) {
        ec_init_tables(d, d, inv, tb);
        if (len)
            ec_encode_data((int)len, d, d, tb, src, out);
    }
    free(a);
    free(bm);
    free(inv);
    free(tb);
    return rc == 0 ? 0 : -1;
}

static json_t *meta_new(const struct sl_objmd *md, const char *name, size_t nlen, int d, int p, int slice_id,
                        bool copy, uint64_t slice_size)
{
    char *nm = sl_xstrndup(name, nlen);
    json_t *j = json_pack("{s:s,s:I,s:I,s:s,s:s,s:I,s:i,s:i,s:i,s:b,s:I,s:i}", "name", nm, "obj_size",
                          (json_int_t)md->size, "generation", (json_int_t)md->mtime, "obj_cksum", md->cksum,
                          "cksum_type", sl_cksum_name(md->cksum_type), "obj_version", (json_int_t)md->version,
                          "data_slices", d, "parity_slices", p, "slice_id", slice_id, "is_copy", copy, "slice_size",
                          (json_int_t)slice_size, "md_version", 1);
    free(nm);
    if (md->ncustom) { /* the object's custom metadata (S3's ETag, tags, encryption) comes back with it */
        json_t *c = json_object();
        for (int i = 0; i < md->ncustom; i++)
            json_object_set_new(c, md->custom[i].k, json_string(md->custom[i].v));
        json_object_set_new(j, "custom", c);
    }
    return j;
}

/* Encode b/name (held here as a main replica) and send its slices or
 * replicas to the targets the current map names; then record the
 * placement in the local (main) metafile. 0 done or nothing to do. */
static int encode_one(const struct sl_bck *b, const char *name, size_t nlen, struct sl_job *job, bool only_if_moved,
                      struct sl_err *err)
{
    int d, p;
    int64_t limit;
    if (!sl_ec_props(b, &d, &p, &limit))
        return 0;
    struct sl_smap *s = sl_smap_get();
    const struct sl_snode *list[65];
    int n = placement(s, b, name, nlen, list, d + p + 1);
    int rc = 0, fd = -1;
    unsigned char *buf = NULL, **sl = NULL;
    struct sl_fan *f = NULL;
    json_t *old = NULL, *nodes = NULL;
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), b, name, nlen);
    struct sl_objmd md;
    memset(&md, 0, sizeof(md));
    if (n == 0 || strcmp(list[0]->id, G.id)) {
        sl_smap_put(s);
        return 0; /* the main target encodes; here is not it (a rebuilt copy while it is away) */
    }
    if (sl_obj_open(b, name, nlen, &fd, &md, NULL, err) < 0) {
        sl_smap_put(s);
        return err->code == SL_ENOOBJ ? 0 : -1;
    }
    bool copy = replicated(md.size, limit);
    /* fewer targets than D+P+1 (P+1) (one was lost for good): as many slices
     * (replicas) as there are other targets; the main's full object plus D
     * slices still survive the loss of one more target. Fewer than D other
     * targets: replicas instead. */
    int slots = n - 1;
    if (!copy && slots < d)
        copy = true;
    int need = 1 + SL_MIN(copy ? p : d + p, slots);
    old = local_meta(b, name, nlen);
    nodes = json_object();
    json_object_set_new(nodes, G.id, json_integer(0));
    for (int i = 1; i < need; i++)
        json_object_set_new(nodes, list[i]->id, json_integer(copy ? 0 : i));
    if (only_if_moved && old && json_integer_value(json_object_get(old, "generation")) == md.mtime &&
        json_equal(json_object_get(old, "nodes"), nodes) && json_is_true(json_object_get(old, "is_copy")) == copy)
        goto out; /* encoded, and where the map wants it */
    if (need < 2) {
        rc = sl_errf(err, SL_EUNAVAIL, "%s: erasure coding (D = %d, P = %d) needs other targets to hold slices or "
                     "replicas, and the cluster has %d target(s)", cn, d, p, n);
        goto out;
    }
    if (need < (copy ? p + 1 : d + p + 1))
        sl_logd("%s: %d target(s): %d %s instead of %d", cn, n, need - 1, copy ? "replica(s)" : "slice(s)",
                copy ? p : d + p);
    if (md.size > max_obj()) {
        rc = sl_errf(err, SL_ETOOBIG, "%s: %llu bytes: erasure coding encodes in memory, up to %llu bytes per object",
                     cn, (unsigned long long)md.size, (unsigned long long)max_obj());
        goto out;
    }
    uint64_t ss = copy ? md.size : (md.size + (uint64_t)d - 1) / (uint64_t)d;
    size_t total = copy ? md.size : (size_t)(ss * (uint64_t)(d + p));
    buf = sl_xcalloc(1, total ? total : 1);
    size_t got = 0;
    while (got < md.size) {
        ssize_t r = pread(fd, buf + got, md.size - got, (off_t)got);
        if (r <= 0) {
            rc = sl_errf(err, SL_EIO, "%s: short read (%s)", cn, r < 0 ? strerror(errno) : "end of file");
            goto out;
        }
        got += (size_t)r;
    }
    int nsend = need - 1;
    sl = sl_xcalloc((size_t)(d + p), sizeof(*sl));
    if (!copy) {
        for (int i = 0; i < d + p; i++)
            sl[i] = buf + (size_t)ss * (size_t)i;
        rs_encode(d, p, ss, sl, sl + d);
    }
    f = sl_xcalloc((size_t)nsend, sizeof(*f));
    for (int i = 0; i < nsend; i++) {
        json_t *m = meta_new(&md, name, nlen, d, p, copy ? 0 : i + 1, copy, ss);
        json_object_set(m, "nodes", nodes);
        /* each slice's (replica's) own checksum: a rebuild leaves out one that rotted */
        char sck[17];
        snprintf(sck, sizeof(sck), "%016llx", (unsigned long long)sl_xxh64(copy ? buf : sl[i], (size_t)ss, 0));
        json_object_set_new(m, "slice_cksum", json_string(sck));
        char *mj = json_dumps(m, JSON_COMPACT), *emj = sl_url_encode_query(mj);
        char *extra = sl_xasprintf("&meta=%s", emj);
        f[i].url = slice_url(list[i + 1]->data_url, b, name, nlen, extra);
        f[i].method = "PUT";
        f[i].body = copy ? buf : sl[i];
        f[i].blen = (size_t)ss;
        if (!f[i].blen)
            f[i].body = "";
        free(extra);
        free(emj);
        free(mj);
        json_decref(m);
    }
    sl_peer_fanout(f, nsend, sl_conf->send_file_time_ns / 1000000);
    for (int i = 0; i < nsend; i++) {
        if (f[i].ok && f[i].resp.status == 200) {
            if (job) {
                sl_job_add(&job->out_objs, 1);
                sl_job_add(&job->out_bytes, ss);
            }
        } else if (rc == 0) {
            rc = sl_errf(err, SL_EUNAVAIL, "%s: sending %s %d to t[%s] failed: %s", cn, copy ? "replica" : "slice",
                         copy ? 0 : i + 1, list[i + 1]->id, f[i].ok ? f[i].resp.err : "no answer");
        }
    }
    if (rc == 0) {
        /* slices of an older placement that this one does not use */
        const char *tid;
        json_t *v;
        json_object_foreach(json_object_get(old, "nodes"), tid, v) {
            const struct sl_snode *t = sl_smap_find(s, tid);
            if (json_object_get(nodes, tid) || !t || (t->flags & SL_SNF_OFFLINE))
                continue;
            char *u = slice_url(t->ctrl_url, b, name, nlen, NULL);
            struct sl_peer_resp pr;
            sl_peer_call("DELETE", u, NULL, 0, NULL, 0, 0, &pr);
            sl_peer_resp_free(&pr);
            free(u);
        }
        json_t *m = meta_new(&md, name, nlen, d, p, 0, copy, ss);
        json_object_set(m, "nodes", nodes);
        json_object_set_new(m, "main", json_true());
        rc = local_store(b, name, nlen, m, NULL, 0, false, err);
        json_decref(m);
        if (rc == 0 && job) {
            sl_job_add(&job->loc_objs, 1);
            sl_job_add(&job->loc_bytes, md.size);
        }
    }
out:
    if (f)
        sl_peer_fanout_free_urls(f, need - 1);
    free(f);
    free(sl);
    free(buf);
    if (fd >= 0)
        close(fd);
    sl_objmd_free(&md);
    json_decref(old);
    json_decref(nodes);
    sl_smap_put(s);
    return rc;
}

/* every target's slices/replicas of b/name, and the local metafile */
static void delete_everywhere(const struct sl_bck *b, const char *name, size_t nlen)
{
    local_remove(b, name, nlen);
    char *nm = sl_xstrndup(name, nlen);
    char *eo = sl_url_encode_query(nm), *eb = sl_url_encode_query(b->name);
    struct sl_tfan t;
    sl_tfan_init(&t, SL_TF_SKIP_SELF | SL_TF_SKIP_OFFLINE, "DELETE", "/v1/internal/ec/slice?provider=%s&bck=%s&obj=%s",
                 b->provider, eb, eo);
    sl_tfan_run(&t, sl_conf->cplane_timeout_ns / 1000000);
    for (int i = 0; i < t.n; i++)
        if (!t.f[i].ok || (t.f[i].resp.status != 200 && t.f[i].resp.status != 404))
            sl_logw("ec: removing the slices of %s/%s on t[%s] failed: %s", b->name, nm, t.who[i]->id,
                    t.f[i].resp.err);
    sl_tfan_free(&t);
    free(nm);
    free(eo);
    free(eb);
}

/* ---- the ec-put job: a queue and one worker ---- */

enum { OP_PUT, OP_DEL };

static void q_work(const struct sl_bck *b, const char *name, size_t nlen, int op, struct sl_job *job)
{
    struct sl_err err = { 0 };
    if (op == OP_DEL) {
        delete_everywhere(b, name, nlen);
    } else if (encode_one(b, name, nlen, job, false, &err) < 0) {
        sl_logw("ec-put %s: %s", job->id, err.msg);
        sl_job_add(&job->err_objs, 1);
    }
}

static const struct sl_bq_ops q_ops = { .kind = "ec-put", .idle_ns = EC_IDLE_NS, .wk = &wk, .work = q_work };
static struct sl_bq ecq = SL_BQ_INIT(&q_ops);

void sl_ec_after_put(const struct sl_bck *b, const char *name, size_t nlen)
{
    int d, p;
    int64_t l;
    if (G.role != SL_ROLE_TARGET || !sl_ec_props(b, &d, &p, &l) || wk.stopping)
        return;
    sl_bq_add(&ecq, b, name, nlen, OP_PUT);
}

static void after_put(const struct sl_bck *b, const char *name, size_t nlen, int why)
{
    if (why == SL_STORE_NEW) /* (a main restored from a mirror copy keeps its slices) */
        sl_ec_after_put(b, name, nlen);
}

const struct sl_store_hooks sl_ec_hooks = {
    .name = "ec",
    .after_put = after_put,
    .quiesce = sl_ec_quiesce, /* (the ec-put worker reads objects) */
};

void sl_ec_after_delete(const struct sl_bck *b, const char *name, size_t nlen)
{
    int d, p;
    int64_t l;
    if (G.role != SL_ROLE_TARGET || !sl_ec_props(b, &d, &p, &l) || wk.stopping)
        return;
    sl_bq_add(&ecq, b, name, nlen, OP_DEL);
}

/* ---- restore ---- */

/* rebuilds in flight here (one per object at a time) */
static pthread_mutex_t rs_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t rs_cv = PTHREAD_COND_INITIALIZER;
static char **rs_names;
static int nrs;

static bool rs_enter(const char *key)
{
    pthread_mutex_lock(&rs_mu);
    bool waited = false;
    for (;;) {
        bool busy = false;
        for (int i = 0; i < nrs && !busy; i++)
            busy = !strcmp(rs_names[i], key);
        if (!busy)
            break;
        waited = true;
        pthread_cond_wait(&rs_cv, &rs_mu);
    }
    rs_names = sl_xrealloc(rs_names, (size_t)(nrs + 1) * sizeof(char *));
    rs_names[nrs++] = sl_xstrdup(key);
    pthread_mutex_unlock(&rs_mu);
    return waited;
}

static void rs_leave(const char *key)
{
    pthread_mutex_lock(&rs_mu);
    for (int i = 0; i < nrs; i++) {
        if (!strcmp(rs_names[i], key)) {
            free(rs_names[i]);
            rs_names[i] = rs_names[--nrs];
            break;
        }
    }
    pthread_cond_broadcast(&rs_cv);
    pthread_mutex_unlock(&rs_mu);
}

struct piece {
    json_t *meta;
    const unsigned char *data;
    size_t len;
    const char *from;            /* the target it came from */
};

/* A slice or replica whose own checksum (slice_cksum, in the metadata of
 * those encoded since it was added) does not match its bytes: logged and
 * left out of the rebuild. */
static bool piece_damaged(const struct piece *pc, const char *cn)
{
    const char *want = sl_json_str(pc->meta, "slice_cksum", "");
    if (!want[0])
        return false;
    char got[17];
    snprintf(got, sizeof(got), "%016llx", (unsigned long long)sl_xxh64(pc->data, pc->len, 0));
    if (!strcmp(got, want))
        return false;
    sl_logw("ec: %s: %s %lld on t[%s] is damaged (xxhash %s, its metadata says %s): left out of the rebuild", cn,
            sl_json_int(pc->meta, "slice_id", 0) ? "slice" : "replica", (long long)sl_json_int(pc->meta, "slice_id", 0),
            pc->from, got, want);
    sl_stats_add("err_cksum_n", 1);
    return true;
}

/* Next combination of k of n indexes (c[0] < ... < c[k-1]); false after the last. */
static bool next_combo(int *c, int k, int n)
{
    int i = k - 1;
    while (i >= 0 && c[i] == n - k + i)
        i--;
    if (i < 0)
        return false;
    c[i]++;
    for (int j = i + 1; j < k; j++)
        c[j] = c[j - 1] + 1;
    return true;
}

/* parse "JSON\nbytes" */
static bool piece_parse(const struct sl_buf *body, struct piece *pc)
{
    const char *p = body->p;
    const char *nl = p ? memchr(p, '\n', body->len) : NULL;
    if (!nl)
        return false;
    json_error_t je;
    pc->meta = json_loadb(p, (size_t)(nl - p), 0, &je);
    if (!json_is_object(pc->meta)) {
        json_decref(pc->meta);
        pc->meta = NULL;
        return false;
    }
    pc->data = (const unsigned char *)nl + 1;
    pc->len = body->len - (size_t)(nl + 1 - p);
    return true;
}

static int store_rebuilt(const struct sl_bck *b, const char *name, size_t nlen, const json_t *m,
                         const unsigned char *data, uint64_t size, struct sl_ec_tmp *tmp, struct sl_err *err)
{
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), b, name, nlen);
    int ct = sl_cksum_parse(sl_json_str(m, "cksum_type", "none"));
    const char *want = sl_json_str(m, "obj_cksum", "");
    if (ct > 0 && *want) {
        char got[SL_CKSUM_HEX_MAX];
        sl_cksum_buf(ct, data, size, got);
        if (strcmp(got, want))
            return sl_errf(err, SL_ECKSUM, "%s: the object rebuilt from its EC slices has %s checksum %s, expected "
                           "%s", cn, sl_cksum_name(ct), got, want);
    }
    struct sl_objmd md;
    memset(&md, 0, sizeof(md));
    md.version = (uint64_t)sl_json_int(m, "obj_version", 0);
    md.cksum_type = ct > 0 && ct == b->cksum_type ? ct : 0;
    snprintf(md.cksum, sizeof(md.cksum), "%s", ct > 0 && ct == b->cksum_type ? want : "");
    md.atime = sl_now_ns();
    const char *ck;
    json_t *cv;
    json_object_foreach(json_object_get(m, "custom"), ck, cv)
        if (json_is_string(cv))
            sl_objmd_set_custom(&md, ck, json_string_value(cv));
    if (tmp) { /* not stored: a temporary file for this read */
        int fd = sl_store_tmpfd(err);
        if (fd < 0)
            return -1;
        size_t off = 0;
        while (off < size) {
            ssize_t w = write(fd, data + off, size - off);
            if (w <= 0) {
                close(fd);
                return sl_errf(err, SL_EIO, "%s: writing the rebuilt object to a temporary file: %s", cn,
                               strerror(errno));
            }
            off += (size_t)w;
        }
        md.size = size;
        md.mtime = sl_json_int(m, "generation", 0);
        tmp->fd = fd;
        tmp->md = md;
        return 0;
    }
    struct sl_put_opts o = { .client_cktype = -1, .expect_size = (int64_t)size, .preserve = &md, .move = true };
    struct sl_put *put;
    int rc = sl_put_begin(b, name, nlen, &o, &put, err);
    if (rc == 0 && size)
        rc = sl_put_write(put, data, size, err);
    if (rc == 0)
        rc = sl_put_commit(put, NULL, err);
    else
        sl_put_abort(put);
    sl_objmd_free(&md);
    return rc;
}

int sl_ec_restore(const struct sl_bck *b, const char *name, size_t nlen, struct sl_ec_tmp *tmp, struct sl_err *err)
{
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), b, name, nlen);
    if (tmp) {
        /* stored only by the object's main target (by the current map) */
        tmp->fd = -1;
        struct sl_smap *s = sl_smap_get();
        const struct sl_snode *first[1];
        if (placement(s, b, name, nlen, first, 1) == 1 && !strcmp(first[0]->id, G.id))
            tmp = NULL;
        sl_smap_put(s);
    }
    char *key = sl_xasprintf("%llu/%s", (unsigned long long)b->bid, cn);
    rs_enter(key);
    int rc = -1;
    struct sl_objmd om;
    struct sl_err e2 = { 0 };
    int hfd = -1;
    if (sl_obj_open_ex(b, name, nlen, SL_OPEN_DEFER, &hfd, &om, NULL, &e2) == 0) {
        /* another rebuild (or a PUT) just brought it; not a stale record of a file gone or damaged */
        struct stat st;
        bool whole = fstat(hfd, &st) == 0 && (uint64_t)st.st_size == om.size;
        close(hfd);
        sl_objmd_free(&om);
        if (whole) {
            rs_leave(key);
            free(key);
            return 0;
        }
    }
    int64_t t0 = sl_mono_ns();
    char *nm = sl_xstrndup(name, nlen);
    char *eo = sl_url_encode_query(nm), *eb = sl_url_encode_query(b->name);
    struct sl_tfan t;
    sl_tfan_init(&t, SL_TF_SKIP_SELF | SL_TF_SKIP_OFFLINE, "GET", "/v1/internal/ec/slice?provider=%s&bck=%s&obj=%s",
                 b->provider, eb, eo);
    sl_tfan_run(&t, sl_conf->send_file_time_ns / 1000000);
    int np = 0, asked = t.n + 1;
    struct piece *pcs = sl_xcalloc((size_t)t.n + 1, sizeof(*pcs));
    for (int i = 0; i < t.n; i++)
        if (t.f[i].ok && t.f[i].resp.status == 200 && piece_parse(&t.f[i].resp.body, &pcs[np])) {
            pcs[np].from = t.who[i]->id;
            np++;
        }
    /* and a slice of it here */
    struct sl_buf lp, ld;
    sl_buf_init(&lp);
    sl_buf_init(&ld);
    ec_paths_found(b, name, nlen, &ld, &lp);
    json_t *lm = read_meta_file(lp.p);
    struct sl_buf lbody;
    sl_buf_init(&lbody);
    if (lm && !json_is_true(json_object_get(lm, "main")) && sl_read_file(ld.p, &lbody, EC_MAX_OBJ + 1) == 0) {
        pcs[np].meta = lm;
        pcs[np].data = (const unsigned char *)(lbody.p ? lbody.p : "");
        pcs[np].len = lbody.len;
        pcs[np].from = G.id;
        np++;
        lm = NULL;
    }
    json_decref(lm);
    /* the newest generation wins */
    int64_t gen = INT64_MIN;
    for (int i = 0; i < np; i++)
        gen = SL_MAX(gen, sl_json_int(pcs[i].meta, "generation", 0));
    const json_t *m0 = NULL;
    int d = 0, p = 0, have = 0, nrep = 0, bad = 0;
    bool from_rep = false;
    uint64_t size = 0, ss = 0;
    int ids[64];
    unsigned char *src[64];
    const struct piece *reps[65];
    bool seen[65] = { false };
    for (int i = 0; i < np; i++) {
        const json_t *m = pcs[i].meta;
        if (sl_json_int(m, "generation", 0) != gen)
            continue;
        if (!m0) {
            m0 = m;
            d = (int)sl_json_int(m, "data_slices", 0);
            p = (int)sl_json_int(m, "parity_slices", 0);
            size = (uint64_t)sl_json_int(m, "obj_size", 0);
            ss = (uint64_t)sl_json_int(m, "slice_size", 0);
        }
        if (strcmp(sl_json_str(m, "obj_cksum", ""), sl_json_str(m0, "obj_cksum", "")))
            continue;
        int id = (int)sl_json_int(m, "slice_id", -1);
        bool rep = id == 0 && pcs[i].len == size;
        bool sli = id >= 1 && id <= d + p && id <= 64 && !seen[id] && pcs[i].len == ss && have < 64;
        if ((rep || sli) && piece_damaged(&pcs[i], cn)) {
            bad++;
        } else if (rep && nrep < 65) {
            reps[nrep++] = &pcs[i];
        } else if (sli) {
            seen[id] = true;
            ids[have] = id;
            src[have++] = (unsigned char *)pcs[i].data;
        }
    }
    if (!m0) {
        rc = sl_errf(err, SL_ENOOBJ, "%s does not exist (no EC slices or replicas of it on the %d target(s) that "
                     "answered)", cn, asked);
    } else {
        /* a replica first, then D of the slices, every combination of D in turn (up to 256, 16 of an
         * object over 64 MiB) until one
         * rebuilds the object's checksum: a slice that rotted without a checksum of its own is left out so */
        bool tried = false;
        for (int i = 0; i < nrep && (!tried || err->code == SL_ECKSUM); i++) {
            memset(err, 0, sizeof(*err));
            tried = true;
            rc = store_rebuilt(b, name, nlen, m0, reps[i]->data, size, tmp, err);
            if (rc == 0) {
                from_rep = true;
                break;
            }
        }
        if (rc != 0 && (!tried || err->code == SL_ECKSUM) && d >= 1 && have >= d) {
            unsigned char *out = sl_xcalloc((size_t)d, (size_t)(ss ? ss : 1));
            for (int i = 1; i < have; i++) /* (slice ids in order: the data slices first) */
                for (int j = i; j > 0 && ids[j - 1] > ids[j]; j--) {
                    int ti = ids[j];
                    unsigned char *ts = src[j];
                    ids[j] = ids[j - 1];
                    src[j] = src[j - 1];
                    ids[j - 1] = ti;
                    src[j - 1] = ts;
                }
            unsigned char *optr[64], *csrc[64];
            int c[64], cids[64], tries = 0;
            for (int i = 0; i < d; i++) {
                optr[i] = out + (size_t)i * ss;
                c[i] = i;
            }
            do {
                for (int i = 0; i < d; i++) {
                    cids[i] = ids[c[i]];
                    csrc[i] = src[c[i]];
                }
                memset(err, 0, sizeof(*err));
                if (rs_decode(d, p, ss, cids, csrc, optr) < 0)
                    rc = sl_errf(err, SL_EINTERNAL, "%s: the EC decode matrix is singular (slices %d...)", cn,
                                 cids[0]);
                else
                    rc = store_rebuilt(b, name, nlen, m0, out, size, tmp, err);
                if (rc == 0 && tries > 0) {
                    char used[200] = "";
                    for (int i = 0, o = 0; i < d && o < (int)sizeof(used) - 8; i++)
                        o += snprintf(used + o, sizeof(used) - (size_t)o, "%s%d", i ? ", " : "", cids[i]);
                    sl_logw("ec: %s: rebuilt from slices %s, after %d set(s) of D = %d that did not rebuild it (a "
                            "slice without a checksum of its own is damaged)", cn, used, tries, d);
                }
                tries++;
            } while (rc != 0 && err->code == SL_ECKSUM && tries < (size > (64u << 20) ? 16 : 256) &&
                     next_combo(c, d, have)); /* (each try decodes the whole object in memory) */
            free(out);
            tried = true;
        }
        if (!tried)
            rc = sl_errf(err, SL_EIO, "%s is lost: it was erasure coded as D = %d data and P = %d parity slices, and "
                         "only %d slice(s) were found on the %d target(s) that answered (%d needed to rebuild it%s); "
                         "bring back the targets that are down", cn, d, p, have, asked, d,
                         bad ? ", some damaged ones left out" : "");
    }
    if (rc == 0) {
        sl_stats_add("ec_restore_objs", 1);
        sl_logi("ec: rebuilt %s (%llu bytes) from %s in %.1f ms%s", cn, (unsigned long long)size,
                from_rep ? "a replica" : "slices", (double)(sl_mono_ns() - t0) / 1e6,
                tmp ? " for one read (this target stands in for its main target, which is down: not stored)" : "");
    }
    for (int i = 0; i < np; i++)
        json_decref(pcs[i].meta);
    free(pcs);
    sl_buf_free(&lbody);
    sl_buf_free(&lp);
    sl_buf_free(&ld);
    sl_tfan_free(&t);
    free(nm);
    free(eo);
    free(eb);
    rs_leave(key);
    free(key);
    return rc;
}

/* ---- HEAD ---- */

void sl_ec_head_headers(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen)
{
    int d, p;
    int64_t l;
    if (!sl_ec_props(b, &d, &p, &l))
        return;
    json_t *m = local_meta(b, name, nlen);
    if (!m)
        return;
    sl_hdr_addf(r, "Ais-Ec-Generation", "%lld", (long long)sl_json_int(m, "generation", 0));
    sl_hdr_addf(r, "Ais-Ec-Data", "%lld", (long long)sl_json_int(m, "data_slices", 0));
    sl_hdr_addf(r, "Ais-Ec-Parity", "%lld", (long long)sl_json_int(m, "parity_slices", 0));
    sl_hdr_add(r, "Ais-Ec-Replicated", json_is_true(json_object_get(m, "is_copy")) ? "true" : "false");
    json_decref(m);
}

/* ---- ec-encode: a walk over a bucket ---- */

/* ask t to rebuild b/name (it is the object's main target), and with
 * reencode to encode it again: false when it did not */
static bool ensure_at_ex(const struct sl_snode *t, const struct sl_bck *b, const char *name, size_t nlen,
                         bool reencode)
{
    char *nm = sl_xstrndup(name, nlen);
    char *eo = sl_url_encode_query(nm), *eb = sl_url_encode_query(b->name);
    char *u = sl_xasprintf("%s/v1/internal/ec/ensure?provider=%s&bck=%s&obj=%s%s", t->ctrl_url, b->provider, eb, eo,
                           reencode ? "&reencode=1" : "");
    struct sl_peer_resp pr;
    bool ok = sl_peer_call("POST", u, NULL, 0, NULL, 0, sl_conf->send_file_time_ns / 1000000, &pr) == 0 &&
              pr.status == 200;
    if (!ok)
        sl_logw("ec: asking t[%s] to %s %s/%s failed: %s", t->id, reencode ? "encode again" : "rebuild", b->name, nm,
                pr.err);
    sl_peer_resp_free(&pr);
    free(u);
    free(nm);
    free(eo);
    free(eb);
    return ok;
}

static void ensure_at(const struct sl_snode *t, const struct sl_bck *b, const char *name, size_t nlen)
{
    ensure_at_ex(t, b, name, nlen, false);
}

/* Every slice's or replica's metafile of b held here (not the main's):
 * fn(arg, mp, h, meta) with the file name h (sha256 of the object's name)
 * and the parsed metafile (fn's to keep or release), until job is aborted. */
typedef void (*slice_visit_fn)(void *arg, struct sl_mpath *mp, const char *h, json_t *meta);
static void walk_slices(const struct sl_bck *b, struct sl_job *job, slice_visit_fn fn, void *arg)
{
    for (int m = 0; m < sl_store_nmpaths() && !sl_job_aborting(job) && !wk.stopping; m++) {
        struct sl_mpath *mp = sl_store_mpath(m);
        if (sl_store_mpath_gone(mp))
            continue;
        char *dir = sl_xasprintf("%s/@%s/%s/%%mt", mp->path, b->provider, b->name);
        DIR *dh = opendir(dir);
        struct dirent *de;
        while (dh && (de = readdir(dh)) && !sl_job_aborting(job) && !wk.stopping) {
            if (de->d_name[0] == '.' || strstr(de->d_name, ".tmp"))
                continue;
            char *path = sl_xasprintf("%s/%s", dir, de->d_name);
            json_t *mj = read_meta_file(path);
            free(path);
            if (mj && sl_json_str(mj, "name", NULL) && !json_is_true(json_object_get(mj, "main")))
                fn(arg, mp, de->d_name, mj);
            else
                json_decref(mj);
        }
        if (dh)
            closedir(dh);
        free(dir);
    }
}

struct scrub_ctx {
    const struct sl_bck *b;
    struct sl_job *job;
    int bad;
    bool fix;
    sl_ec_scrub_report_fn report;
    void *arg;
};

static void scrub_slice(void *arg, struct sl_mpath *mp, const char *h, json_t *mj)
{
    struct scrub_ctx *x = arg;
    const struct sl_bck *b = x->b;
    struct sl_job *job = x->job;
    const char *nm = sl_json_str(mj, "name", ""), *want = sl_json_str(mj, "slice_cksum", "");
    if (!want[0]) { /* (a slice from before slice checksums) */
        json_decref(mj);
        return;
    }
    char *dp = sl_xasprintf("%s/@%s/%s/%%ec/%s", mp->path, b->provider, b->name, h);
    struct sl_buf data;
    sl_buf_init(&data);
    int rrc = sl_read_file(dp, &data, EC_MAX_OBJ + 1);
    free(dp);
    char got[17] = "";
    if (rrc == 0)
        snprintf(got, sizeof(got), "%016llx", (unsigned long long)sl_xxh64(data.p ? data.p : "", data.len, 0));
    sl_buf_free(&data);
    sl_job_add(&job->out_objs, 1);
    if (rrc == 0 && !strcmp(got, want)) {
        json_decref(mj);
        return;
    }
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), b, nm, strlen(nm));
    x->bad++;
    sl_job_add(&job->err_objs, 1);
    sl_stats_add("err_cksum_n", 1);
    struct sl_smap *s = sl_smap_get();
    const struct sl_snode *list[1];
    int n = placement(s, b, nm, strlen(nm), list, 1);
    bool ask = n == 1 && strcmp(list[0]->id, G.id) && !(list[0]->flags & SL_SNF_OFFLINE);
    const char *what = sl_json_int(mj, "slice_id", 0) ? "slice" : "replica";
    long long sid = (long long)sl_json_int(mj, "slice_id", 0);
    sl_logw("ec: %s: %s %lld here is damaged (%s%s, its metadata says %s)%s", cn, what, sid,
            rrc ? "unreadable" : "xxhash ", got, want,
            !x->fix ? " (scrub without fix: left as it is)"
            : ask   ? ": its main target encodes it again"
                    : ": its main target is not up to encode it again");
    bool fixed = false;
    if (x->fix && ask && ensure_at_ex(list[0], b, nm, strlen(nm), true)) {
        sl_job_add(&job->in_objs, 1);
        fixed = true;
    }
    if (x->report) {
        char why[200];
        snprintf(why, sizeof(why), "EC %s %lld %s (xxhash %s, its metadata says %s)", what, sid,
                 rrc ? "missing or unreadable" : "corrupt", rrc ? "-" : got, want);
        x->report(x->arg, cn, why, fixed);
    }
    sl_smap_put(s);
    json_decref(mj);
}

int sl_ec_scrub_slices(const struct sl_bck *b, struct sl_job *job, bool fix, sl_ec_scrub_report_fn report,
                       void *arg)
{
    int d, p;
    int64_t l;
    if (!sl_ec_props(b, &d, &p, &l))
        return 0;
    struct scrub_ctx x = { b, job, 0, fix, report, arg };
    walk_slices(b, job, scrub_slice, &x);
    return x.bad;
}

struct walk_ctx {
    const struct sl_bck *b;
    struct sl_job *job;
};

static bool encode_visit(void *arg, const char *name, size_t nlen)
{
    struct walk_ctx *w = arg;
    if (sl_job_aborting(w->job) || wk.stopping)
        return true;
    struct sl_err e = { 0 };
    if (encode_one(w->b, name, nlen, w->job, true, &e) < 0) {
        sl_logw("%s %s: %s", w->job->kind, w->job->id, e.msg);
        sl_job_add(&w->job->err_objs, 1);
    }
    return false;
}

/* a slice held here: its object's main target (by the current map) gets
 * it rebuilt if it lacks it (this target, when it is the main one) */
static void ensure_main(void *arg, struct sl_mpath *mp, const char *h, json_t *mj)
{
    struct walk_ctx *w = arg;
    struct sl_job *job = w->job;
    const struct sl_bck *b = w->b;
    (void)mp;
    (void)h;
    const char *nm = sl_json_str(mj, "name", "");
    struct sl_smap *s = sl_smap_get();
    const struct sl_snode *list[1];
    int n = placement(s, b, nm, strlen(nm), list, 1);
    if (n == 1 && strcmp(list[0]->id, G.id)) {
        if (!(list[0]->flags & SL_SNF_OFFLINE))
            ensure_at(list[0], b, nm, strlen(nm));
    } else if (n == 1) {
        struct sl_objmd om;
        struct sl_err e = { 0 };
        if (sl_obj_stat(b, nm, strlen(nm), &om, NULL, &e) == 1)
            sl_objmd_free(&om);
        else if (sl_ec_restore(b, nm, strlen(nm), NULL, &e) < 0 && e.code != SL_ENOOBJ) {
            sl_logw("%s %s: %s", job->kind, job->id, e.msg);
            sl_job_add(&job->err_objs, 1);
        }
    }
    sl_smap_put(s);
    json_decref(mj);
}

static void walk_encode(const struct sl_bck *b, struct sl_job *job)
{
    /* 1. main replicas here: encoded where the current map wants them */
    struct walk_ctx w = { b, job };
    for (int m = 0; m < sl_store_nmpaths() && !sl_job_aborting(job) && !wk.stopping; m++) {
        struct sl_err err = { 0 };
        if (sl_store_walk(sl_store_mpath(m), b, NULL, encode_visit, &w, &err) < 0)
            sl_logw("%s %s: %s", job->kind, job->id, err.msg);
    }
    /* 2. slices here whose object's main target lacks the object */
    walk_slices(b, job, ensure_main, &w);
}

struct enc_arg {
    char prov[8];
    char bname[SL_MAX_BCKNAME + 1];
    struct sl_job *job;
};

static void *enc_thread(void *arg)
{
    struct enc_arg *q = arg;
    struct sl_job *job = q->job;
    if (!sl_workers_enter_job(&wk, job)) {
        free(q);
        return NULL;
    }
    struct sl_bck b;
    bool found = sl_bmd_copy(q->prov, q->bname, &b);
    int64_t t0 = sl_mono_ns();
    if (!found) {
        char why[300];
        snprintf(why, sizeof(why), "t[%s]: bucket %s://%s does not exist here", G.id, sl_provider_scheme(q->prov),
                 q->bname);
        sl_job_fail(job, why);
    } else {
        walk_encode(&b, job);
        sl_bck_release(&b);
        sl_logi("%s %s: %s done in %.1f s: %llu object(s) encoded, %llu slice(s)/replica(s) sent, %llu error(s)",
                job->kind, job->id, q->bname, (double)(sl_mono_ns() - t0) / 1e9, (unsigned long long)job->loc_objs,
                (unsigned long long)job->out_objs, (unsigned long long)job->err_objs);
        sl_job_finish(job, sl_job_aborting(job) || wk.stopping ? "aborted" : NULL);
    }
    sl_job_put(job);
    free(q);
    leave();
    return NULL;
}

int sl_ec_start(const char *id, const char *prov, const char *bname, struct sl_err *err)
{
    if (!sl_store_nmpaths())
        return sl_errf(err, SL_EUNAVAIL, "t[%s] has no mountpaths", G.id);
    struct enc_arg *q = sl_xcalloc(1, sizeof(*q));
    snprintf(q->prov, sizeof(q->prov), "%s", prov);
    snprintf(q->bname, sizeof(q->bname), "%s", bname);
    q->job = sl_job_start("ec-encode", id, bname, "");
    sl_run_detached(enc_thread, q);
    return 0;
}

void sl_ec_membership_changed(void)
{
    if (G.role != SL_ROLE_TARGET || wk.stopping)
        return;
    struct sl_bmd *bmd = sl_bmd_get();
    for (int i = 0; i < bmd->n; i++) {
        int d, p;
        int64_t l;
        if (!sl_ec_props(&bmd->bcks[i], &d, &p, &l))
            continue;
        struct sl_err err = { 0 };
        char id[64];
        sl_job_id(id, sizeof(id), "");
        sl_logi("ec: the cluster's targets changed: checking the slices of %s (ec-encode %s)", bmd->bcks[i].name, id);
        if (sl_ec_start(id, bmd->bcks[i].provider, bmd->bcks[i].name, &err) < 0)
            sl_logw("ec: %s", err.msg);
    }
    sl_bmd_put(bmd);
}

/* ---- endpoints ---- */

struct slice_req {
    struct sl_bck b;
    char *name;
    size_t nlen;
};

static void sreq_free(void *arg)
{
    struct slice_req *q = arg;
    sl_bck_release(&q->b);
    free(q->name);
    free(q);
}

static struct slice_req *sreq_new(struct sl_req *r, struct sl_err *err)
{
    const char *bck = sl_req_query(r, "bck"), *obj = sl_req_query(r, "obj");
    if (!bck || !*bck || !obj || !*obj) {
        sl_errf(err, SL_EINVAL, "ec slice: expected ?provider=&bck=&obj=");
        return NULL;
    }
    struct slice_req *q = sl_xcalloc(1, sizeof(*q));
    if (sl_bck_resolve(bck, sl_req_query(r, "provider"), NULL, &q->b, err) < 0) {
        free(q);
        return NULL;
    }
    q->name = sl_xstrdup(obj);
    q->nlen = strlen(obj);
    return q;
}

static void slice_put_run(struct sl_req *r, void *arg)
{
    struct slice_req *q = arg;
    struct sl_err err = { 0 };
    json_error_t je;
    const char *ms = sl_req_query(r, "meta");
    json_t *m = ms ? json_loads(ms, 0, &je) : NULL;
    if (!json_is_object(m))
        sl_resp_errf(r, SL_EINVAL, "ec slice PUT: ?meta= must be the slice's metafile (JSON)");
    else if (local_store(&q->b, q->name, q->nlen, m, r->body.p ? r->body.p : "", r->body.len, true, &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
    json_decref(m);
    sreq_free(q);
}

static void slice_put_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    struct slice_req *q = sreq_new(r, &err);
    if (!q)
        sl_resp_err(r, &err);
    else
        sl_req_offload(r, slice_put_run, sreq_free, q);
}

static void slice_get_run(struct sl_req *r, void *arg)
{
    struct slice_req *q = arg;
    struct sl_buf dp, mp, out;
    sl_buf_init(&dp);
    sl_buf_init(&mp);
    sl_buf_init(&out);
    ec_paths_found(&q->b, q->name, q->nlen, &dp, &mp);
    json_t *m = read_meta_file(mp.p);
    struct sl_err err = { 0 };
    int fd = -1;
    struct sl_objmd md;
    bool ok = false;
    int d, p;
    int64_t lim;
    if (sl_obj_open(&q->b, q->name, q->nlen, &fd, &md, NULL, &err) == 0) {
        /* the object itself: a replica */
        if (md.size <= EC_MAX_OBJ && sl_ec_props(&q->b, &d, &p, &lim)) {
            json_t *rm = meta_new(&md, q->name, q->nlen, d, p, 0, true, md.size);
            char *mj = json_dumps(rm, JSON_COMPACT);
            sl_buf_adds(&out, mj);
            sl_buf_adds(&out, "\n");
            size_t off = out.len;
            sl_buf_add(&out, NULL, 0);
            char *tmp = sl_xmalloc(md.size ? md.size : 1);
            ok = pread(fd, tmp, md.size, 0) == (ssize_t)md.size;
            if (ok)
                sl_buf_add(&out, tmp, md.size);
            (void)off;
            free(tmp);
            free(mj);
            json_decref(rm);
        }
        close(fd);
        sl_objmd_free(&md);
    }
    if (!ok && m && !json_is_true(json_object_get(m, "main"))) {
        out.len = 0;
        char *mj = json_dumps(m, JSON_COMPACT);
        sl_buf_adds(&out, mj);
        sl_buf_adds(&out, "\n");
        free(mj);
        ok = sl_read_file(dp.p, &out, EC_MAX_OBJ + 1) == 0;
    }
    if (ok) {
        size_t len = out.len;
        sl_resp_bytes_owned(r, 200, "application/octet-stream", sl_buf_steal(&out), len);
    } else {
        sl_resp_errf(r, SL_ENOOBJ, "t[%s]: no EC slice or replica of %s/%s here", G.id, q->b.name, q->name);
    }
    json_decref(m);
    sl_buf_free(&dp);
    sl_buf_free(&mp);
    sl_buf_free(&out);
    sreq_free(q);
}

static void slice_del_run(struct sl_req *r, void *arg)
{
    struct slice_req *q = arg;
    local_remove(&q->b, q->name, q->nlen);
    sl_resp_empty(r, 200);
    sreq_free(q);
}

static void ensure_run(struct sl_req *r, void *arg)
{
    struct slice_req *q = arg;
    struct sl_err err = { 0 };
    const char *re = sl_req_query(r, "reencode");
    if (sl_ec_restore(&q->b, q->name, q->nlen, NULL, &err) < 0 && err.code != SL_ENOOBJ)
        sl_resp_err(r, &err);
    else if (re && !strcmp(re, "1") && err.code != SL_ENOOBJ && encode_one(&q->b, q->name, q->nlen, NULL, false,
                                                                          &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
    sreq_free(q);
}

static void start_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    const char *id = sl_json_str(j, "id", ""), *bck = sl_json_str(j, "bck", "");
    const char *prov = sl_provider_norm(sl_json_str(j, "provider", "ais"));
    if (!json_is_object(j) || !*id || !*bck || !prov)
        sl_resp_errf(r, SL_EINVAL, "ec start: expected {\"id\", \"provider\", \"bck\"}");
    else if (sl_ec_start(id, prov, bck, &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
    json_decref(j);
}

bool sl_ec_internal(struct sl_req *r)
{
    if (strncmp(r->path, "/v1/internal/ec/", 16))
        return false;
    const char *what = r->path + 16;
    struct sl_err err = { 0 };
    if (!sl_is_target()) {
        sl_resp_errf(r, SL_EINVAL, "%s is a gateway: EC slices live on targets", G.id);
    } else if (!strcmp(what, "start")) {
        if (r->method != SL_M_POST)
            sl_resp_method_not_allowed(r, "POST");
        else
            sl_req_buffer_body(r, 64 * 1024, start_done);
    } else if (!strcmp(what, "slice") || !strcmp(what, "ensure")) {
        bool ensure = !strcmp(what, "ensure");
        if (r->method == SL_M_PUT && !ensure) {
            sl_req_buffer_body(r, EC_MAX_OBJ, slice_put_done);
            return true;
        }
        struct slice_req *q = sreq_new(r, &err);
        if (!q)
            sl_resp_err(r, &err);
        else if (ensure && r->method == SL_M_POST)
            sl_req_offload_peer(r, ensure_run, sreq_free, q);
        else if (!ensure && r->method == SL_M_GET)
            sl_req_offload(r, slice_get_run, sreq_free, q);
        else if (!ensure && r->method == SL_M_DELETE)
            sl_req_offload(r, slice_del_run, sreq_free, q);
        else {
            sreq_free(q);
            sl_resp_method_not_allowed(r, ensure ? "POST" : "GET, PUT, DELETE");
        }
    } else {
        sl_resp_errf(r, SL_ENOENT, "unknown EC endpoint %s", r->path);
    }
    return true;
}

