/* SPDX-License-Identifier: MIT
 * arch.c: see arch.h (and arch_int.h for the files of the archive code).
 * This file: the plugin registry and format detection, the member index
 * of plain tars, and listing a shard's members.
 *
 * Member index of a plain tar, in the aux DB of the shard's mountpath:
 *   marker  P                      -> object mtime (8) | object size (8) | count (8)
 *   member  P 0x00 <name>          -> data offset (8) | size (8) | mtime (8)
 *   member  P 0x01 <sha256hex>     -> same | full name   (names over 400 bytes)
 * where P = sl_obj_aux_prefix(bid, shard name). The marker ties the index to
 * one version of the shard: any rewrite changes its mtime and the index is
 * rebuilt on next use; a DELETE drops every key under P.
 */
#include "arch_int.h"
#include "cksum.h"
#include "log.h"
#include "store.h"

#include <limits.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

static struct sl_plug_reg *reg;
static char supported[256];

/* ---- registry ---- */

static char *default_dir(void)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n > 0) {
        self[n] = 0;
        char *slash = strrchr(self, '/');
        if (slash) {
            *slash = 0;
            char *d = sl_xasprintf("%s/../lib/shale", self);
            struct stat st;
            if (stat(d, &st) == 0 && S_ISDIR(st.st_mode))
                return d;
            free(d);
        }
    }
    return sl_xstrdup(SL_PREFIX "/lib/shale");
}

int sl_arch_init(const char *dir, struct sl_err *err)
{
    char *d = dir && *dir ? sl_xstrdup(dir) : default_dir();
    int rc = sl_plug_reg_load(d, &reg, err);
    if (rc == 0) {
        size_t n = sl_plug_count(reg);
        struct sl_buf b;
        sl_buf_init(&b);
        for (size_t i = 0; i < n; i++) {
            const struct sl_plug *p = sl_plug_at(reg, i);
            if (sl_plug_kind(p) != SL_PLUGIN_FORMAT)
                continue;
            for (const char *const *e = sl_plug_exts(p); e && *e; e++)
                sl_buf_printf(&b, "%s%s", b.len ? ", " : "", *e);
        }
        snprintf(supported, sizeof(supported), "%s", b.len ? b.p : "(none: no format plugins loaded)");
        sl_buf_free(&b);
        sl_logi("plugins from %s: %zu loaded, %zu refused; shard formats: %s", d, n, sl_plug_refused_count(reg),
                supported);
    }
    free(d);
    return rc;
}

void sl_arch_fini(void)
{
    if (reg && sl_plug_reg_free(reg) == 0)
        reg = NULL;
}

const struct sl_plug_reg *sl_arch_reg(void)
{
    return reg;
}

json_t *sl_arch_plugins_json(void)
{
    return reg ? sl_plug_reg_json(reg) : json_array();
}

const char *sl_arch_supported(void)
{
    return supported[0] ? supported : "(none)";
}

const struct sl_plug *sl_arch_format_by_name(const char *name, size_t nlen)
{
    if (!reg)
        return NULL;
    char tmp[SL_MAX_OBJNAME + 1];
    if (nlen > SL_MAX_OBJNAME)
        return NULL;
    memcpy(tmp, name, nlen);
    tmp[nlen] = 0;
    return sl_plug_format_by_ext(reg, tmp);
}

const struct sl_plug *sl_arch_format_of(const char *name, size_t nlen, const char *archmime, int fd)
{
    if (!reg)
        return NULL;
    char tmp[SL_MAX_OBJNAME + 1];
    if (nlen > SL_MAX_OBJNAME)
        nlen = SL_MAX_OBJNAME;
    memcpy(tmp, name, nlen);
    tmp[nlen] = 0;
    unsigned char head[1024];
    ssize_t hn = fd >= 0 ? pread(fd, head, sizeof(head), 0) : 0;
    return sl_plug_format_for(reg, tmp, archmime && *archmime ? archmime : NULL, hn > 0 ? head : NULL,
                              hn > 0 ? (size_t)hn : 0);
}

bool arch_is_plain_tar(const struct sl_plug *f)
{
    return f && (sl_plug_caps(f) & SL_FMT_CAP_INDEX);
}

/* A member whose name would be refused for writing (".." segments, absolute,
 * NUL, trailing '/') is never served in a selection, indexed or listed: it is
 * skipped with a warning (cn names the shard; NULL: skip quietly). */
bool arch_member_ok(const char *cn, const char *name, size_t len)
{
    struct sl_err err = { 0 };
    if (sl_plug_member_name_check(name, len, &err) == 0)
        return true;
    if (cn)
        sl_logw("%s: %s; skipped", cn, err.msg);
    return false;
}

void arch_limits(struct sl_fmt_limits *lim)
{
    sl_plug_limits_default(lim);
    if (sl_conf->arch_max_members)
        lim->max_members = sl_conf->arch_max_members;
    if (sl_conf->arch_max_member_size)
        lim->max_member_size = sl_conf->arch_max_member_size;
    lim->max_ratio = (uint32_t)sl_conf->arch_max_ratio;
}

void sl_arch_limits(struct sl_fmt_limits *lim)
{
    arch_limits(lim);
    lim->max_total_size = 0; /* for tar it would cap the archive size */
}

const char *arch_q_nonempty(const struct sl_req *r, const char *k)
{
    const char *v = sl_req_query(r, k);
    return v && *v ? v : NULL;
}

/* ---- index ---- */

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (56 - 8 * i));
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
}

/* key for a member (into out, returns length) */
static size_t member_key(const unsigned char *pfx, const char *m, size_t ml, unsigned char *out)
{
    memcpy(out, pfx, SL_OBJ_AUX_PREFIX);
    if (ml <= IDX_INLINE_NAME) {
        out[SL_OBJ_AUX_PREFIX] = 0;
        memcpy(out + SL_OBJ_AUX_PREFIX + 1, m, ml);
        return SL_OBJ_AUX_PREFIX + 1 + ml;
    }
    unsigned char d[SHA256_DIGEST_LENGTH];
    sl_sha256(m, ml, d);
    out[SL_OBJ_AUX_PREFIX] = 1;
    sl_hex(d, sizeof(d), (char *)out + SL_OBJ_AUX_PREFIX + 1);
    return SL_OBJ_AUX_PREFIX + 1 + 64;
}

/* Is the stored index complete and current for this version (mtime, size)
 * of the object? Its marker is written last, by the build's last commit. */
bool arch_index_current(struct sl_md_env *env, const unsigned char *pfx, int64_t mtime, uint64_t size)
{
    struct sl_buf v;
    sl_buf_init(&v);
    bool ok = sl_md_aux_get(env, (const char *)pfx, SL_OBJ_AUX_PREFIX, &v) == 1 && v.len == 24 &&
              get_u64((unsigned char *)v.p) == (uint64_t)mtime && get_u64((unsigned char *)v.p + 8) == size;
    sl_buf_free(&v);
    return ok;
}

bool arch_index_valid(struct sl_md_env *env, const unsigned char *pfx, const struct sl_objmd *md)
{
    return arch_index_current(env, pfx, md->mtime, md->size);
}

/* An index is written in transactions of this many members, so that the
 * LMDB transaction (its dirty pages) and the pending keys stay bounded for
 * a shard of any size. For 200,000 members in random name order: 2048 per
 * transaction, +17 MiB of heap and 7-12 s; 4096, +27 MiB and 3 s; 8192,
 * +46 MiB and 1.9 s (one transaction: +141 MiB, 3.6 s). */
#define IDX_BATCH 4096

struct idx_build {
    const char *cn;
    struct sl_md_env *env;
    unsigned char pfx[SL_OBJ_AUX_PREFIX];
    struct sl_md_op *ops;      /* IDX_BATCH + 1 (the marker) */
    int nops;
    uint64_t count;
    struct sl_err *err;
    int rc;
};

static void idx_ops_free(struct idx_build *ib)
{
    for (int i = 0; i < ib->nops; i++) {
        free((void *)ib->ops[i].key);
        free((void *)ib->ops[i].val);
    }
    ib->nops = 0;
}

/* Commit the pending ops (the first commit also drops the old index,
 * marker included, so from then on the shard has no valid index until the
 * last commit puts the marker back). */
static int idx_flush(struct idx_build *ib)
{
    int rc = sl_md_commit(ib->env, ib->ops, ib->nops, true, ib->err);
    idx_ops_free(ib);
    return rc;
}

static int idx_cb(void *arg, const struct sl_fmt_entry *e)
{
    struct idx_build *ib = arg;
    if (!arch_member_ok(ib->cn, e->name, e->name_len))
        return 0;
    unsigned char kb[IDX_KEY_MAX];
    size_t kl = member_key(ib->pfx, e->name, e->name_len, kb);
    unsigned char *k = sl_xmalloc(kl);
    memcpy(k, kb, kl);
    bool hashed = e->name_len > IDX_INLINE_NAME;
    size_t vl = 24 + (hashed ? e->name_len : 0);
    unsigned char *v = sl_xmalloc(vl);
    put_u64(v, (uint64_t)e->data_offset);
    put_u64(v + 8, (uint64_t)e->size);
    put_u64(v + 16, (uint64_t)e->mtime);
    if (hashed)
        memcpy(v + 24, e->name, e->name_len);
    ib->ops[ib->nops++] = (struct sl_md_op){ .kind = SL_MD_PUT_AUX, .key = (char *)k, .klen = kl, .val = v,
                                             .vlen = vl };
    ib->count++;
    if (ib->nops < IDX_BATCH)
        return 0;
    if ((ib->rc = idx_flush(ib)) < 0)
        return 1; /* stop the walk */
    sl_fault("arch-index-batch");
    return 0;
}

/* Builds of one shard's index run one at a time: two at once would each
 * drop what the other wrote. The one that waited then finds the index
 * current and builds nothing. (This process is the only writer of its
 * mountpaths' LMDB.) */
struct idx_building {
    const struct sl_md_env *env;
    unsigned char pfx[SL_OBJ_AUX_PREFIX];
    struct idx_building *next;
};
static pthread_mutex_t building_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t building_cv = PTHREAD_COND_INITIALIZER;
static struct idx_building *building;

static bool is_building(const struct sl_md_env *env, const unsigned char *pfx)
{
    for (struct idx_building *x = building; x; x = x->next)
        if (x->env == env && !memcmp(x->pfx, pfx, SL_OBJ_AUX_PREFIX))
            return true;
    return false;
}

static int build(const struct sl_plug *fmt, struct idx_build *ib, int fd, const struct sl_objmd *md)
{
    /* slot 0: drop the old index; the marker last, alone in nothing but
     * the last commit */
    ib->ops = sl_xcalloc(IDX_BATCH + 1, sizeof(*ib->ops));
    ib->ops[ib->nops++] = (struct sl_md_op){ .kind = SL_MD_DEL_AUX_PREFIX,
                                             .key = sl_xstrndup((char *)ib->pfx, SL_OBJ_AUX_PREFIX),
                                             .klen = SL_OBJ_AUX_PREFIX };
    struct sl_plug_fdio fio;
    sl_plug_fdio_init(&fio, fd, 0, ib->cn);
    struct sl_fmt_limits lim;
    arch_limits(&lim);
    lim.max_total_size = 0; /* for tar it would cap the archive size */
    int rc = sl_plug_index(fmt, &fio.io, &lim, idx_cb, ib, ib->err);
    if (ib->rc < 0)
        rc = -1;
    if (rc == 0) {
        unsigned char *mv = sl_xmalloc(24);
        put_u64(mv, (uint64_t)md->mtime);
        put_u64(mv + 8, md->size);
        put_u64(mv + 16, ib->count);
        ib->ops[ib->nops++] = (struct sl_md_op){ .kind = SL_MD_PUT_AUX,
                                                 .key = sl_xstrndup((char *)ib->pfx, SL_OBJ_AUX_PREFIX),
                                                 .klen = SL_OBJ_AUX_PREFIX, .val = mv, .vlen = 24 };
        rc = idx_flush(ib);
    }
    if (rc < 0 && ib->count >= IDX_BATCH) {
        /* batches without a marker are never used; drop them now rather
         * than at the next build (best effort) */
        idx_ops_free(ib);
        struct sl_err e2;
        struct sl_md_op del = { .kind = SL_MD_DEL_AUX_PREFIX, .key = (char *)ib->pfx, .klen = SL_OBJ_AUX_PREFIX };
        sl_md_commit(ib->env, &del, 1, true, &e2);
    }
    idx_ops_free(ib);
    free(ib->ops);
    return rc;
}

int arch_index_fd(const struct sl_plug *fmt, struct sl_md_env *env, const struct sl_bck *b, const char *name,
                  size_t nlen, int fd, const struct sl_objmd *md, struct sl_err *err)
{
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), b, name, nlen);
    struct idx_build ib = { .cn = cn, .env = env, .err = err };
    sl_obj_aux_prefix(b->bid, name, nlen, ib.pfx);
    struct idx_building me = { .env = env };
    memcpy(me.pfx, ib.pfx, SL_OBJ_AUX_PREFIX);
    pthread_mutex_lock(&building_mu);
    bool waited = false;
    while (is_building(env, ib.pfx)) {
        pthread_cond_wait(&building_cv, &building_mu);
        waited = true;
    }
    if (waited && arch_index_valid(env, ib.pfx, md)) {
        pthread_mutex_unlock(&building_mu);
        return 0;
    }
    me.next = building;
    building = &me;
    pthread_mutex_unlock(&building_mu);

    int rc = build(fmt, &ib, fd, md);
    if (rc == 0)
        sl_logd("indexed %s: %llu member(s)", cn, (unsigned long long)ib.count);

    pthread_mutex_lock(&building_mu);
    for (struct idx_building **pp = &building; *pp; pp = &(*pp)->next)
        if (*pp == &me) {
            *pp = me.next;
            break;
        }
    pthread_cond_broadcast(&building_cv);
    pthread_mutex_unlock(&building_mu);
    return rc;
}

int sl_arch_index_build(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err)
{
    const struct sl_plug *fmt = sl_arch_format_by_name(name, nlen);
    if (!arch_is_plain_tar(fmt))
        return sl_errf(err, SL_EUNSUPP, "member indexes exist for plain .tar shards only");
    int fd;
    struct sl_objmd md;
    if (sl_obj_open(b, name, nlen, &fd, &md, NULL, err) < 0)
        return -1;
    int rc = arch_index_fd(fmt, sl_obj_md_env(b, name, nlen), b, name, nlen, fd, &md, err);
    close(fd);
    sl_objmd_free(&md);
    return rc;
}

void sl_arch_after_put(const struct sl_bck *b, const char *name, size_t nlen)
{
    if (!arch_is_plain_tar(sl_arch_format_by_name(name, nlen)))
        return;
    struct sl_err err;
    if (sl_arch_index_build(b, name, nlen, &err) < 0)
        sl_logd("not indexing %s/%.*s: %s", b->name, (int)SL_MIN(nlen, 200), name, err.msg);
}

/* Members recorded in the index marker (0 if unreadable). */
static uint64_t index_count(struct sl_md_env *env, const unsigned char *pfx)
{
    struct sl_buf v;
    sl_buf_init(&v);
    uint64_t n = sl_md_aux_get(env, (const char *)pfx, SL_OBJ_AUX_PREFIX, &v) == 1 && v.len == 24
                     ? get_u64((unsigned char *)v.p + 16)
                     : 0;
    sl_buf_free(&v);
    return n;
}

/* 1 found (off/size set), 0 not a member, -1 no usable index. An index of
 * more members than arch.max_members allows (written under an older, higher
 * limit) is not used: the scan then applies the limit as for any shard. */
int arch_index_lookup(struct sl_md_env *env, const struct sl_bck *b, const char *name, size_t nlen,
                      const struct sl_objmd *md, const char *member, size_t ml, uint64_t *off, uint64_t *size)
{
    unsigned char pfx[SL_OBJ_AUX_PREFIX];
    sl_obj_aux_prefix(b->bid, name, nlen, pfx);
    if (!arch_index_valid(env, pfx, md))
        return -1;
    struct sl_fmt_limits lim;
    arch_limits(&lim);
    if (lim.max_members && index_count(env, pfx) > lim.max_members)
        return -1;
    unsigned char k[IDX_KEY_MAX];
    size_t kl = member_key(pfx, member, ml, k);
    struct sl_buf v;
    sl_buf_init(&v);
    int rc = sl_md_aux_get(env, (const char *)k, kl, &v);
    int ret = 0;
    if (rc == 1 && v.len >= 24) {
        *off = get_u64((unsigned char *)v.p);
        *size = get_u64((unsigned char *)v.p + 8);
        ret = 1;
        if (ml > IDX_INLINE_NAME && (v.len != 24 + ml || memcmp(v.p + 24, member, ml)))
            ret = 0;
    }
    sl_buf_free(&v);
    /* still the index of this version: a rebuild for another one (it drops
     * the marker first) may have started since the check above */
    return arch_index_valid(env, pfx, md) ? ret : -1;
}

int arch_idx_foreach_cb(void *arg, const char *key, size_t klen, const char *val, size_t vlen)
{
    struct idx_iter *it = arg;
    if (klen <= SL_OBJ_AUX_PREFIX || klen > IDX_KEY_MAX || vlen < 24)
        return 0; /* the marker (or not a member key) */
    if (it->skiplen && klen == it->skiplen && !memcmp(key, it->skip, klen))
        return 0; /* the member the page resumes after */
    const char *nm;
    size_t nl;
    if (key[SL_OBJ_AUX_PREFIX] == 0) {
        nm = key + SL_OBJ_AUX_PREFIX + 1;
        nl = klen - SL_OBJ_AUX_PREFIX - 1;
    } else {
        nm = val + 24;
        nl = vlen - 24;
    }
    if (it->mplen && (nl < it->mplen || memcmp(nm, it->mprefix, it->mplen)))
        return 0;
    if (!arch_member_ok(NULL, nm, nl)) /* an index written before such names were skipped */
        return 0;
    if (it->n >= it->max) {
        it->more = true;
        return 1;
    }
    if (it->last) {
        memcpy(it->last, key, klen);
        it->lastlen = klen;
    }
    uint64_t off = get_u64((const unsigned char *)val), size = get_u64((const unsigned char *)val + 8);
    if (it->arr) {
        json_t *o = json_object();
        json_t *js = json_stringn(nm, nl);
        json_object_set_new(o, "name", js ? js : json_string("(not UTF-8)"));
        json_object_set_new(o, "offset", json_integer((json_int_t)off));
        json_object_set_new(o, "size", json_integer((json_int_t)size));
        json_array_append_new(it->arr, o);
    }
    if (it->page) {
        struct sl_lsent *e = sl_lspage_add(it->page);
        e->nlen = it->slen + 1 + nl;
        e->name = sl_xmalloc(e->nlen + 1);
        memcpy(e->name, it->shard, it->slen);
        e->name[it->slen] = '/';
        memcpy(e->name + it->slen + 1, nm, nl);
        e->name[e->nlen] = 0;
        e->size = size;
        e->flags = SL_ENT_CACHED | SL_ENT_IN_ARCH;
        e->alen = (uint32_t)it->slen;
    }
    it->n++;
    return 0;
}

/* ---- listing shard contents ---- */

/* A format's failure on a stored shard: 422 (SL_EBADDATA, from the plugin's
 * SL_PLUG_EFORMAT) with a message that names the shard and says what to do. */
static void bad_shard(struct sl_err *err, const char *cn)
{
    if (!strstr(err->msg, cn))
        sl_err_wrap(err, "%s", cn);
    if (err->code == SL_EBADDATA && !strstr(err->msg, "re-create") && !strstr(err->msg, "archmime"))
        snprintf(err->msg + strlen(err->msg), sizeof(err->msg) - strlen(err->msg),
                 " (the shard is corrupt or not in the format its name says; re-create or re-upload it)");
}

int sl_arch_list_members(const struct sl_bck *b, const char *name, size_t nlen, const char *mprefix, size_t mplen,
                         const struct sl_arch_pos *pos, int max, struct sl_lspage *out, bool *more,
                         struct sl_err *err)
{
    *more = false;
    const struct sl_plug *fmt = sl_arch_format_by_name(name, nlen);
    if (!fmt || max < 0)
        return 0;
    int fd;
    struct sl_objmd md;
    if (sl_obj_open(b, name, nlen, &fd, &md, NULL, err) < 0)
        return -1;
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), b, name, nlen);
    int rc = 0;
    struct sl_md_env *env = sl_obj_md_env(b, name, nlen);
    if (arch_is_plain_tar(fmt)) {
        /* the member index, from the resume point on: one page of keys */
        unsigned char pfx[SL_OBJ_AUX_PREFIX];
        sl_obj_aux_prefix(b->bid, name, nlen, pfx);
        if (!arch_index_valid(env, pfx, &md))
            rc = arch_index_fd(fmt, env, b, name, nlen, fd, &md, err);
        if (rc == 0) {
            unsigned char from[IDX_KEY_MAX];
            size_t flen = 0;
            if (pos && pos->nlen)
                flen = member_key(pfx, pos->name, pos->nlen, from);
            struct idx_iter it = { .page = out, .shard = name, .slen = nlen, .mprefix = mprefix, .mplen = mplen,
                                   .skip = from, .skiplen = flen, .max = (uint64_t)max };
            if (sl_md_aux_foreach_from(env, (const char *)pfx, SL_OBJ_AUX_PREFIX, (const char *)from, flen,
                                       arch_idx_foreach_cb, &it) < 0)
                rc = sl_errf(err, SL_EIO, "%s: reading the member index failed", cn);
            else if (!arch_index_valid(env, pfx, &md)) /* (a rebuild drops the marker first) */
                rc = sl_errf(err, SL_EBUSY, "%s was rewritten while its members were being listed; list again",
                             cn);
            *more = it.more;
        }
    } else {
        /* archive order: skip the members before the resume point (read,
         * not kept), then up to max, then one more to tell whether more
         * remain */
        struct sl_plug_fdio fio;
        sl_plug_fdio_init(&fio, fd, 0, cn);
        struct sl_fmt_limits lim;
        arch_limits(&lim);
        struct sl_plug_reader *rd = NULL;
        struct sl_fmt_entry e;
        uint64_t ord = 0, skip = pos ? pos->ord : 0;
        int n = 0;
        rc = sl_plug_reader_open(fmt, &fio.io, &lim, 0, &rd, err);
        while (rc == 0 && (rc = sl_plug_reader_next(rd, &e, err)) == 0) {
            if (++ord <= skip)
                continue;
            if (mplen && (e.name_len < mplen || memcmp(e.name, mprefix, mplen)))
                continue;
            if (!arch_member_ok(skip ? NULL : cn, e.name, e.name_len))
                continue;
            if (n >= max) {
                *more = true;
                break;
            }
            struct sl_lsent *le = sl_lspage_add(out);
            le->nlen = nlen + 1 + e.name_len;
            le->name = sl_xmalloc(le->nlen + 1);
            memcpy(le->name, name, nlen);
            le->name[nlen] = '/';
            memcpy(le->name + nlen + 1, e.name, e.name_len);
            le->name[le->nlen] = 0;
            le->size = e.size > 0 ? (uint64_t)e.size : 0;
            le->flags = SL_ENT_CACHED | SL_ENT_IN_ARCH;
            le->alen = (uint32_t)nlen;
            le->aord = ord;
            n++;
        }
        if (rc == 1)
            rc = 0;
        if (rd)
            sl_plug_reader_close(rd);
    }
    if (rc < 0)
        bad_shard(err, cn);
    close(fd);
    sl_objmd_free(&md);
    return rc < 0 ? -1 : 0;
}

json_t *sl_arch_index_json(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err)
{
    int fd;
    struct sl_objmd md;
    if (sl_obj_open(b, name, nlen, &fd, &md, NULL, err) < 0)
        return NULL;
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), b, name, nlen);
    json_t *arr = NULL;
    const struct sl_plug *fmt = sl_arch_format_of(name, nlen, NULL, fd);
    struct sl_md_env *env = sl_obj_md_env(b, name, nlen);
    unsigned char pfx[SL_OBJ_AUX_PREFIX];
    sl_obj_aux_prefix(b->bid, name, nlen, pfx);
    if (!fmt || !arch_is_plain_tar(fmt))
        sl_errf(err, SL_EINVAL, "%s: member indexes exist for plain .tar shards only", cn);
    else if (arch_index_valid(env, pfx, &md) || arch_index_fd(fmt, env, b, name, nlen, fd, &md, err) == 0) {
        struct idx_iter it = { .arr = json_array(), .max = UINT64_MAX };
        sl_md_aux_foreach(env, (const char *)pfx, SL_OBJ_AUX_PREFIX, arch_idx_foreach_cb, &it);
        arr = it.arr;
    }
    close(fd);
    sl_objmd_free(&md);
    return arr;
}

static bool is_zip(const char *ext)
{
    size_t n = ext ? strlen(ext) : 0;
    return n >= 4 && !strcasecmp(ext + n - 4, ".zip");
}

uint64_t sl_arch_member_bytes(const char *ext, size_t namelen, uint64_t size)
{
    if (is_zip(ext))
        return 30 + namelen + size + 16 + 46 + namelen;
    return 512 + (namelen > 99 ? 1024 : 0) + (size + 511) / 512 * 512;
}

uint64_t sl_arch_end_bytes(const char *ext)
{
    return is_zip(ext) ? 22 : 1024;
}
