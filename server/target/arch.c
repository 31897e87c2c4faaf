/* SPDX-License-Identifier: MIT
 * arch.c: see arch.h.
 *
 * Member index of a plain tar, in the aux DB of the shard's mountpath:
 *   marker  P                      -> object mtime (8) | object size (8) | count (8)
 *   member  P 0x00 <name>          -> data offset (8) | size (8) | mtime (8)
 *   member  P 0x01 <sha256hex>     -> same | full name   (names over 400 bytes)
 * where P = sl_obj_aux_prefix(bid, shard name). The marker ties the index to
 * one version of the shard: any rewrite changes its mtime and the index is
 * rebuilt on next use; a DELETE drops every key under P.
 */
#include "arch.h"
#include "cksum.h"
#include "conf.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "plug.h"
#include "stats.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/sha.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define IDX_INLINE_NAME 400
#define IDX_KEY_MAX (SL_OBJ_AUX_PREFIX + 1 + IDX_INLINE_NAME + 64)
#define CHUNK (256 * 1024)
#define PRE_CHUNK (64 * 1024)

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

static bool is_plain_tar(const struct sl_plug *f)
{
    return f && (sl_plug_caps(f) & SL_FMT_CAP_INDEX);
}

/* A member whose name would be refused for writing (".." segments, absolute,
 * NUL, trailing '/') is never served in a selection, indexed or listed: it is
 * skipped with a warning (cn names the shard; NULL: skip quietly). */
static bool member_ok(const char *cn, const char *name, size_t len)
{
    struct sl_err err = { 0 };
    if (sl_plug_member_name_check(name, len, &err) == 0)
        return true;
    if (cn)
        sl_logw("%s: %s; skipped", cn, err.msg);
    return false;
}

static void limits(struct sl_fmt_limits *lim)
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
    limits(lim);
    lim->max_total_size = 0; /* for tar it would cap the archive size */
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
static bool index_current(struct sl_md_env *env, const unsigned char *pfx, int64_t mtime, uint64_t size)
{
    struct sl_buf v;
    sl_buf_init(&v);
    bool ok = sl_md_aux_get(env, (const char *)pfx, SL_OBJ_AUX_PREFIX, &v) == 1 && v.len == 24 &&
              get_u64((unsigned char *)v.p) == (uint64_t)mtime && get_u64((unsigned char *)v.p + 8) == size;
    sl_buf_free(&v);
    return ok;
}

static bool index_valid(struct sl_md_env *env, const unsigned char *pfx, const struct sl_objmd *md)
{
    return index_current(env, pfx, md->mtime, md->size);
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
    if (!member_ok(ib->cn, e->name, e->name_len))
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
    limits(&lim);
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

static int index_fd(const struct sl_plug *fmt, struct sl_md_env *env, const struct sl_bck *b, const char *name,
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
    if (waited && index_valid(env, ib.pfx, md)) {
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
    if (!is_plain_tar(fmt))
        return sl_errf(err, SL_EUNSUPP, "member indexes exist for plain .tar shards only");
    int fd;
    struct sl_objmd md;
    if (sl_obj_open(b, name, nlen, &fd, &md, NULL, err) < 0)
        return -1;
    int rc = index_fd(fmt, sl_obj_md_env(b, name, nlen), b, name, nlen, fd, &md, err);
    close(fd);
    sl_objmd_free(&md);
    return rc;
}

void sl_arch_after_put(const struct sl_bck *b, const char *name, size_t nlen)
{
    if (!is_plain_tar(sl_arch_format_by_name(name, nlen)))
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
static int index_lookup(struct sl_md_env *env, const struct sl_bck *b, const char *name, size_t nlen,
                        const struct sl_objmd *md, const char *member, size_t ml, uint64_t *off, uint64_t *size)
{
    unsigned char pfx[SL_OBJ_AUX_PREFIX];
    sl_obj_aux_prefix(b->bid, name, nlen, pfx);
    if (!index_valid(env, pfx, md))
        return -1;
    struct sl_fmt_limits lim;
    limits(&lim);
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
    return index_valid(env, pfx, md) ? ret : -1;
}

struct idx_iter {
    json_t *arr;               /* archindex JSON */
    struct sl_lspage *page;    /* listing */
    const char *shard;
    size_t slen;
    const char *mprefix;
    size_t mplen;
    uint64_t n;
    /* a page: up to max entries after the key skip[0..skiplen) */
    const unsigned char *skip;
    size_t skiplen;
    uint64_t max;
    bool more;
    unsigned char *last;       /* if set: the key of the last entry taken (IDX_KEY_MAX bytes) */
    size_t lastlen;
};

static int idx_foreach_cb(void *arg, const char *key, size_t klen, const char *val, size_t vlen)
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
    if (!member_ok(NULL, nm, nl)) /* an index written before such names were skipped */
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

/* Copy what out holds from *pos on into buf (at most max); 0 when it is
 * empty. Emptied once all was taken: it holds one step of a stream. */
static ssize_t out_drain(struct sl_buf *out, size_t *pos, char *buf, size_t max)
{
    size_t n = SL_MIN(out->len - *pos, max);
    memcpy(buf, out->p + *pos, n);
    *pos += n;
    if (*pos == out->len) {
        sl_buf_reset(out);
        *pos = 0;
    }
    return (ssize_t)n;
}

/* ---- GET ?archindex: the index as one JSON array, a page of keys at a time ---- */

#define INDEX_PAGE 1024

struct index_stream {
    struct sl_md_env *env;
    unsigned char pfx[SL_OBJ_AUX_PREFIX];
    int64_t mtime;             /* the version whose index is sent */
    uint64_t size;
    int jflags;                /* sl_json_dump's, as sl_resp_json would choose */
    unsigned char last[IDX_KEY_MAX]; /* the key of the last member sent */
    size_t lastlen;
    uint64_t n;                /* members sent */
    bool done;
    struct sl_buf out;
    size_t out_pos;
    char name[400];
};

/* The next INDEX_PAGE members (one read transaction) into s->out, as the
 * bytes sl_resp_json gives for the whole array: the page's array without
 * its brackets, after "[" or ",". */
static int index_page(struct index_stream *s, struct sl_err *err)
{
    unsigned char from[IDX_KEY_MAX];
    memcpy(from, s->last, s->lastlen);
    struct idx_iter it = { .arr = json_array(), .skip = from, .skiplen = s->lastlen, .max = INDEX_PAGE,
                           .last = s->last };
    int rc = sl_md_aux_foreach_from(s->env, (const char *)s->pfx, SL_OBJ_AUX_PREFIX, (const char *)from,
                                    s->lastlen, idx_foreach_cb, &it);
    if (rc < 0) {
        rc = sl_errf(err, SL_EIO, "%s: reading the member index failed", s->name);
    } else if (!index_current(s->env, s->pfx, s->mtime, s->size)) {
        /* (a rebuild drops the marker before it touches a member) */
        rc = sl_errf(err, SL_EBUSY, "%s was rewritten while its member index was being read; ask again", s->name);
    } else if (it.n) {
        size_t len;
        char *j = sl_json_dump(it.arr, s->jflags, &len);
        if (!j) {
            rc = sl_errf(err, SL_EINTERNAL, "%s: cannot encode the member index", s->name);
        } else {
            size_t close = s->jflags & SL_JD_PRETTY ? 2 : 1; /* "\n]" or "]" */
            sl_buf_add(&s->out, s->n ? "," : "[", 1);
            sl_buf_add(&s->out, j + 1, len - 1 - close);
            free(j);
            s->n += it.n;
            s->lastlen = it.lastlen;
        }
    }
    if (rc == 0 && !it.more) {
        sl_buf_adds(&s->out, !s->n ? "[]\n" : s->jflags & SL_JD_PRETTY ? "\n]\n" : "]\n");
        s->done = true;
    }
    json_decref(it.arr);
    return rc;
}

static ssize_t index_read(void *ctx, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct index_stream *s = ctx;
    while (s->out.len == s->out_pos && !s->done) {
        struct sl_err err;
        if (index_page(s, &err) < 0) {
            sl_logw("archindex: %s; the response was cut short", err.msg);
            return -1;
        }
    }
    return out_drain(&s->out, &s->out_pos, buf, max);
}

static void index_free(void *ctx)
{
    struct index_stream *s = ctx;
    sl_buf_free(&s->out);
    free(s);
}

/* Answer r with the (current) index of the shard: the first page is read
 * before the status is chosen, the others while the body goes out. */
static void index_get(struct sl_req *r, struct sl_md_env *env, const struct sl_bck *b, const char *name, size_t nlen,
                      const struct sl_objmd *md)
{
    struct index_stream *s = sl_xcalloc(1, sizeof(*s));
    s->env = env;
    sl_obj_aux_prefix(b->bid, name, nlen, s->pfx);
    s->mtime = md->mtime;
    s->size = md->size;
    s->jflags = sl_req_json_flags(r);
    sl_buf_init(&s->out);
    sl_obj_cname(s->name, sizeof(s->name), b, name, nlen);
    struct sl_err err;
    if (index_page(s, &err) < 0) {
        index_free(s);
        sl_resp_err(r, &err);
        return;
    }
    sl_resp_stream(r, 200, "application/json; charset=utf-8", UINT64_MAX, index_read, s, index_free);
}

/* ---- archmode matching ---- */

enum { M_REGEXP, M_PREFIX, M_SUFFIX, M_SUBSTR, M_WDSKEY };

struct sl_arch_match {
    int mode;
    char *pat;
    size_t plen;
    regex_t re;
};

int sl_arch_match_new(const char *mode, const char *pattern, struct sl_arch_match **out, struct sl_err *err)
{
    static const char *modes[] = { "regexp", "prefix", "suffix", "substr", "wdskey" };
    int m = -1;
    for (int i = 0; i < 5; i++)
        if (!strcmp(mode, modes[i]))
            m = i;
    if (m < 0)
        return sl_errf(err, SL_EINVAL, "invalid archmode \"%s\" (valid: regexp, prefix, suffix, substr, wdskey)", mode);
    struct sl_arch_match *x = sl_xcalloc(1, sizeof(*x));
    x->mode = m;
    x->pat = sl_xstrdup(pattern ? pattern : "");
    x->plen = strlen(x->pat);
    if (m == M_REGEXP) {
        int rc = regcomp(&x->re, x->pat, REG_EXTENDED | REG_NOSUB);
        if (rc) {
            char msg[256];
            regerror(rc, &x->re, msg, sizeof(msg));
            free(x->pat);
            free(x);
            return sl_errf(err, SL_EINVAL, "archregx \"%s\" is not a valid regular expression: %s", pattern, msg);
        }
    }
    *out = x;
    return 0;
}

bool sl_arch_match(const struct sl_arch_match *x, const char *name, size_t len)
{
    switch (x->mode) {
    case M_PREFIX:
        return len >= x->plen && !memcmp(name, x->pat, x->plen);
    case M_SUFFIX:
        return len >= x->plen && !memcmp(name + len - x->plen, x->pat, x->plen);
    case M_SUBSTR:
        return memmem(name, len, x->pat, x->plen) != NULL;
    case M_WDSKEY: {
        /* WebDataset key: the path up to the first dot of the basename */
        struct sl_wds_split sp;
        sl_plugin_wds_split(name, len, &sp);
        size_t kl = sp.dir_len + sp.stem_len;
        return sp.has_dot && kl == x->plen && !memcmp(name, x->pat, kl);
    }
    default: {
        char *tmp = sl_xstrndup(name, len);
        bool ok = regexec(&x->re, tmp, 0, NULL, 0) == 0;
        free(tmp);
        return ok;
    }
    }
}

void sl_arch_match_free(struct sl_arch_match *x)
{
    if (!x)
        return;
    if (x->mode == M_REGEXP)
        regfree(&x->re);
    free(x->pat);
    free(x);
}

/* ---- GET: one member streamed through a reader ---- */

struct member_stream {
    int fd;
    struct sl_plug_fdio fio;
    struct sl_plug_reader *rd;
    char *pre;                 /* the first chunk, read before the status was chosen */
    size_t npre, pre_pos;
    char name[400];
};

static ssize_t member_read(void *ctx, uint64_t pos, char *buf, size_t max)
{
    struct member_stream *s = ctx;
    if (s->pre_pos < s->npre) {
        size_t n = SL_MIN(max, s->npre - s->pre_pos);
        memcpy(buf, s->pre + s->pre_pos, n);
        s->pre_pos += n;
        return (ssize_t)n;
    }
    struct sl_err err;
    int64_t n = sl_plug_reader_read(s->rd, buf, max, &err);
    if (n < 0) {
        sl_logw("reading %s: %s", s->name, err.msg);
        return -1;
    }
    return (ssize_t)n;
}

static void member_free(void *ctx)
{
    struct member_stream *s = ctx;
    free(s->pre);
    sl_plug_reader_close(s->rd);
    close(s->fd);
    free(s);
}

/* ---- GET: several members as a tar stream ---- */

/* The selection is read in two passes, neither of which keeps the members
 * it saw: the first only counts the matches (and checks every header
 * against the limits), so that "no match" and the limits are answered
 * before the status; the second reads the shard again and writes each
 * match into the tar stream as the reader reaches it. */
struct tar_stream {
    int fd;
    bool plain;                    /* a plain tar: selected as its index would select */
    struct sl_plug_fdio fio;
    struct sl_plug_reader *rd;     /* the second pass */
    struct sl_arch_match *match;
    uint64_t cur_left;
    bool in_member, done, failed;
    struct sl_plug_writer *w;
    struct sl_io out_io;
    struct sl_buf out;
    size_t out_pos;
    char name[400];
    char *chunk;
};

static int64_t out_write(void *ctx, const void *buf, size_t n)
{
    struct tar_stream *s = ctx;
    return sl_buf_add(&s->out, buf, n) < 0 ? -1 : (int64_t)n;
}

/* Does the selection take the member? (The first pass warned about bad names.) */
static bool selected(const struct tar_stream *s, const struct sl_fmt_entry *e, const char *cn)
{
    /* the tar index leaves sparse members out: so does the first pass of a plain tar */
    if (s->plain && (e->flags & SL_FMT_E_SPARSE))
        return false;
    return sl_arch_match(s->match, e->name, e->name_len) && member_ok(cn, e->name, e->name_len);
}

static int tar_step(struct tar_stream *s)
{
    struct sl_err err;
    if (!s->in_member) {
        struct sl_fmt_entry e;
        for (;;) {
            int rc = sl_plug_reader_next(s->rd, &e, &err);
            if (rc == 1)
                goto finish;
            if (rc < 0)
                goto fail;
            if (selected(s, &e, NULL))
                break;
        }
        if (e.size < 0) { /* streamed zip member of unknown size: cannot write a tar header */
            sl_errf(&err, SL_EUNSUPP, "%s: member %s has no size in its header", s->name, e.name);
            goto fail;
        }
        if (sl_plug_writer_add(s->w, e.name, e.name_len, e.size, e.mtime, 0, &err) < 0)
            goto fail;
        s->cur_left = (uint64_t)e.size;
        s->in_member = true;
        return 0;
    }
    if (!s->cur_left) {
        s->in_member = false;
        return 0;
    }
    size_t want = s->cur_left < CHUNK ? (size_t)s->cur_left : CHUNK;
    int64_t n = sl_plug_reader_read(s->rd, s->chunk, want, &err);
    if (n < 0)
        goto fail;
    if (n == 0) {
        sl_errf(&err, SL_EIO, "%s: member ended early", s->name);
        goto fail;
    }
    s->cur_left -= (uint64_t)n;
    if (sl_plug_writer_write(s->w, s->chunk, (size_t)n, &err) < 0)
        goto fail;
    return 0;
finish:
    if (sl_plug_writer_finish(s->w, &err) < 0)
        goto fail;
    s->done = true;
    return 0;
fail:
    sl_logw("tar stream of %s: %s", s->name, err.msg);
    s->failed = true;
    return -1;
}

static ssize_t tar_read(void *ctx, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    struct tar_stream *s = ctx;
    while (s->out.len == s->out_pos && !s->done) {
        if (s->failed || tar_step(s) < 0)
            return -1;
    }
    return out_drain(&s->out, &s->out_pos, buf, max);
}

static void tar_free(void *ctx)
{
    struct tar_stream *s = ctx;
    sl_plug_writer_close(s->w);
    sl_plug_reader_close(s->rd);
    sl_arch_match_free(s->match);
    sl_buf_free(&s->out);
    free(s->chunk);
    close(s->fd);
    free(s);
}

struct count {
    struct tar_stream *s;
    uint64_t n;
};

static int count_cb(void *arg, const struct sl_fmt_entry *e)
{
    struct count *c = arg;
    if (selected(c->s, e, c->s->name))
        c->n++;
    return 0;
}

/* The first pass: how many members the selection takes. A plain tar's
 * headers are walked with seeks (the limits checked on each); other formats
 * are read, one byte of every match included: what the reader can tell
 * before inflating (a zip member's declared ratio) is refused now, not in
 * the middle of the 200. */
static int count_matches(struct tar_stream *s, const struct sl_plug *fmt, const struct sl_fmt_limits *lim,
                         uint64_t *n, struct sl_err *err)
{
    struct count c = { s, 0 };
    sl_plug_fdio_init(&s->fio, s->fd, 0, s->name);
    if (s->plain) {
        if (sl_plug_index(fmt, &s->fio.io, lim, count_cb, &c, err) < 0)
            return -1;
        *n = c.n;
        return 0;
    }
    struct sl_plug_reader *rd;
    struct sl_fmt_entry e;
    if (sl_plug_reader_open(fmt, &s->fio.io, lim, 0, &rd, err) < 0)
        return -1;
    int rc;
    while ((rc = sl_plug_reader_next(rd, &e, err)) == 0) {
        if (!selected(s, &e, s->name))
            continue;
        c.n++;
        char b1;
        if (sl_plug_reader_read(rd, &b1, 1, err) < 0) {
            rc = -1;
            break;
        }
    }
    sl_plug_reader_close(rd);
    *n = c.n;
    return rc < 0 ? -1 : 0;
}

static const char *q_nonempty(const struct sl_req *r, const char *k)
{
    const char *v = sl_req_query(r, k);
    return v && *v ? v : NULL;
}

bool sl_arch_wanted(const struct sl_req *r)
{
    return q_nonempty(r, "archpath") || q_nonempty(r, "archmode") || sl_req_query_bool(r, "archindex");
}

/* archregx + archmode: a tar stream of every match, 404 when none. Takes fd. */
static void select_get(struct sl_req *r, const struct sl_plug *fmt, int fd, const char *cn)
{
    const char *mode = q_nonempty(r, "archmode"), *regx = sl_req_query(r, "archregx");
    struct sl_err err = { 0 };
    struct tar_stream *s = sl_xcalloc(1, sizeof(*s));
    s->fd = fd;
    s->plain = is_plain_tar(fmt);
    snprintf(s->name, sizeof(s->name), "%s", cn);
    s->chunk = sl_xmalloc(CHUNK);
    sl_buf_init(&s->out);
    if (sl_arch_match_new(mode, regx, &s->match, &err) < 0)
        goto fail;
    const struct sl_plug *tar = sl_plug_find(reg, SL_PLUGIN_FORMAT, "tar");
    if (!tar) {
        sl_errf(&err, SL_EUNSUPP, "GET %s?archmode: the tar format plugin is not loaded", cn);
        goto fail;
    }
    struct sl_fmt_limits lim;
    limits(&lim);
    if (s->plain)
        lim.max_total_size = 0; /* for tar it would cap the archive size */
    uint64_t nmatch;
    if (count_matches(s, fmt, &lim, &nmatch, &err) < 0)
        goto fail;
    if (!nmatch) {
        sl_errf(&err, SL_ENOENT, "%s: no member matches %s \"%s\"", cn, mode, regx ? regx : "");
        goto fail;
    }
    sl_plug_fdio_init(&s->fio, fd, 0, s->name);
    if (sl_plug_reader_open(fmt, &s->fio.io, &lim, 0, &s->rd, &err) < 0)
        goto fail;
    s->out_io = (struct sl_io){ SL_ABI_INIT(struct sl_io), .ctx = s, .write = out_write, .name = s->name };
    if (sl_plug_writer_open(tar, &s->out_io, 0, &s->w, &err) < 0)
        goto fail;
    sl_resp_stream(r, 200, "application/x-tar", UINT64_MAX, tar_read, s, tar_free);
    return;
fail:
    tar_free(s);
    sl_resp_err(r, &err);
}

/* One member (archpath=). Takes fd and md. */
static void member_get(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen,
                       const struct sl_plug *fmt, struct sl_md_env *env, int fd, struct sl_objmd *md, const char *cn)
{
    struct sl_err err = { 0 };
    const char *archpath = q_nonempty(r, "archpath");
    /* leading '/' and a "<shard name>/" prefix are not part of the member name */
    while (*archpath == '/')
        archpath++;
    size_t al = strlen(archpath);
    if (al > nlen + 1 && !memcmp(archpath, name, nlen) && archpath[nlen] == '/') {
        archpath += nlen + 1;
        al -= nlen + 1;
    }
    if (sl_plug_member_name_check(archpath, al, &err) < 0) {
        sl_err_wrap(&err, "GET %s?archpath", cn);
        goto fail_fd;
    }
    if (is_plain_tar(fmt) && env) {
        uint64_t off, size;
        int rc = index_lookup(env, b, name, nlen, md, archpath, al, &off, &size);
        struct sl_fmt_limits lim;
        limits(&lim);
        if (rc == 1 && lim.max_member_size && size > lim.max_member_size) {
            /* the same answer a scan gives from the member's header */
            sl_errf(&err, SL_ETOOBIG, "%s: member \"%s\" is %llu bytes, over the limit of %llu bytes "
                    "(arch.max_member_size)", cn, archpath, (unsigned long long)size,
                    (unsigned long long)lim.max_member_size);
            goto fail_fd;
        }
        if (rc == 1) {
            sl_objmd_free(md);
            sl_resp_fd(r, 200, fd, off, size, "application/octet-stream");
            return;
        }
        if (rc == 0) {
            sl_errf(&err, SL_ENOENT, "%s: no member \"%s\" in the shard (list its members with "
                    "`shale archive ls %s`)", cn, archpath, cn);
            goto fail_fd;
        }
        /* no index (could not be stored): fall through to a scan */
    }
    sl_objmd_free(md);
    struct member_stream *s = sl_xcalloc(1, sizeof(*s));
    s->fd = fd;
    snprintf(s->name, sizeof(s->name), "%s", cn);
    sl_plug_fdio_init(&s->fio, fd, 0, s->name);
    struct sl_fmt_limits lim;
    limits(&lim);
    struct sl_fmt_entry e;
    int rc = sl_plug_reader_open(fmt, &s->fio.io, &lim, 0, &s->rd, &err);
    if (rc == 0)
        rc = sl_plug_reader_find(s->rd, archpath, &e, &err);
    if (rc == 0) {
        /* The first chunk is read before answering: whatever the reader
         * can tell up front (a zip member's declared ratio, a corrupt
         * start) is a 4xx/5xx, not a 200 cut short. */
        int64_t n = 1;
        s->pre = sl_xmalloc(PRE_CHUNK);
        while (s->npre < PRE_CHUNK &&
               (n = sl_plug_reader_read(s->rd, s->pre + s->npre, PRE_CHUNK - s->npre, &err)) > 0)
            s->npre += (size_t)n;
        if (n < 0)
            rc = -1;
    }
    if (rc != 0) {
        member_free(s);
        if (rc == 1)
            sl_errf(&err, SL_ENOENT, "%s: no member \"%s\" in the shard", cn, archpath);
        sl_resp_err(r, &err);
        return;
    }
    sl_resp_stream(r, 200, "application/octet-stream", e.size >= 0 ? (uint64_t)e.size : UINT64_MAX, member_read, s,
                   member_free);
    return;
fail_fd:
    close(fd);
    sl_objmd_free(md);
    sl_resp_err(r, &err);
}

/* The archive read r asks for, of the shard b/name open as fd with md
 * (both taken; checked: not archpath with archmode, no Range). stored: fd
 * is b/name's file here (else rebuilt for this read: no member index). */
static void arch_get(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, int fd,
                     struct sl_objmd *mdp, bool stored)
{
    const char *archpath = q_nonempty(r, "archpath"), *mime = q_nonempty(r, "archmime");
    struct sl_err err = { 0 };
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), b, name, nlen);
    struct sl_objmd md = *mdp;
    memset(mdp, 0, sizeof(*mdp));
    const struct sl_plug *fmt = sl_arch_format_of(name, nlen, mime, fd);
    struct sl_md_env *env = stored ? sl_obj_md_env(b, name, nlen) : NULL;
    if (!fmt) {
        sl_errf(&err, SL_EINVAL,
                "GET %s: not a shard this cluster can read (by %s); supported formats: %s; pass archmime= for "
                "non-standard extensions",
                cn, mime ? "archmime" : "extension or content", sl_arch_supported());
        goto fail;
    }
    if (is_plain_tar(fmt) && env) {
        unsigned char pfx[SL_OBJ_AUX_PREFIX];
        sl_obj_aux_prefix(b->bid, name, nlen, pfx);
        if (!index_valid(env, pfx, &md) && index_fd(fmt, env, b, name, nlen, fd, &md, &err) < 0)
            goto fail;
    }
    if (archpath) {
        member_get(r, b, name, nlen, fmt, env, fd, &md, cn);
        return;
    }
    if (sl_req_query_bool(r, "archindex")) {
        if (!is_plain_tar(fmt)) {
            sl_errf(&err, SL_EINVAL, "GET %s?archindex: member indexes exist for plain .tar shards only", cn);
            goto fail;
        }
        if (!env) {
            sl_errf(&err, SL_EUNAVAIL, "GET %s?archindex: the shard is being rebuilt from its erasure-coded slices "
                    "for this read and has no index here; retry when its target is back", cn);
            goto fail;
        }
        index_get(r, env, b, name, nlen, &md);
        close(fd);
        sl_objmd_free(&md);
        return;
    }
    sl_objmd_free(&md);
    select_get(r, fmt, fd, cn);
    return;
fail:
    close(fd);
    sl_objmd_free(&md);
    sl_resp_err(r, &err);
}

/* A selection or the index: the work is in proportion to the shard (its
 * index built, its headers walked), so it runs off the HTTP thread. */
struct arch_off {
    struct sl_bobj *o;
    int fd;
    struct sl_objmd md;
    bool stored;
};

static void arch_off_free(void *arg)
{
    struct arch_off *a = arg;
    sl_bobj_free(a->o);
    if (a->fd >= 0)
        close(a->fd);
    sl_objmd_free(&a->md);
    free(a);
}

static void arch_off_run(struct sl_req *r, void *arg)
{
    struct arch_off *a = arg;
    arch_get(r, &a->o->b, a->o->name, a->o->nlen, a->fd, &a->md, a->stored);
    a->fd = -1;
    arch_off_free(a);
}

bool sl_arch_refused(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen)
{
    const char *archpath = q_nonempty(r, "archpath"), *mode = q_nonempty(r, "archmode");
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), b, name, nlen);
    r->op = SL_OP_ARCH_GET;
    if (archpath && mode) {
        sl_resp_errf(r, SL_EINVAL, "GET %s: archpath and archmode cannot be combined (one member, or a selection)",
                     cn);
        return true;
    }
    if (sl_req_header(r, "Range")) {
        sl_resp_errf(r, SL_EINVAL, "GET %s: Range requests are not supported together with archpath/archmode", cn);
        return true;
    }
    return false;
}

void sl_arch_get(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, int fd,
                 struct sl_objmd *md, bool stored)
{
    r->op = SL_OP_ARCH_GET;
    if (q_nonempty(r, "archpath")) {
        arch_get(r, b, name, nlen, fd, md, stored);
        return;
    }
    struct arch_off *a = sl_xcalloc(1, sizeof(*a));
    a->o = sl_bobj_new(b, name, nlen);
    a->fd = fd;
    a->md = *md;
    memset(md, 0, sizeof(*md));
    a->stored = stored;
    sl_req_offload(r, arch_off_run, arch_off_free, a);
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
    if (is_plain_tar(fmt)) {
        /* the member index, from the resume point on: one page of keys */
        unsigned char pfx[SL_OBJ_AUX_PREFIX];
        sl_obj_aux_prefix(b->bid, name, nlen, pfx);
        if (!index_valid(env, pfx, &md))
            rc = index_fd(fmt, env, b, name, nlen, fd, &md, err);
        if (rc == 0) {
            unsigned char from[IDX_KEY_MAX];
            size_t flen = 0;
            if (pos && pos->nlen)
                flen = member_key(pfx, pos->name, pos->nlen, from);
            struct idx_iter it = { .page = out, .shard = name, .slen = nlen, .mprefix = mprefix, .mplen = mplen,
                                   .skip = from, .skiplen = flen, .max = (uint64_t)max };
            if (sl_md_aux_foreach_from(env, (const char *)pfx, SL_OBJ_AUX_PREFIX, (const char *)from, flen,
                                       idx_foreach_cb, &it) < 0)
                rc = sl_errf(err, SL_EIO, "%s: reading the member index failed", cn);
            else if (!index_valid(env, pfx, &md)) /* (a rebuild drops the marker first) */
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
        limits(&lim);
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
            if (!member_ok(skip ? NULL : cn, e.name, e.name_len))
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

/* ---- PUT with archpath ---- */

struct arch_put {
    struct sl_bck b;
    char *name;
    size_t nlen;
    char *member;
    size_t mlen;
    int pine;
    const struct sl_plug *fmt;
    char spool_path[PATH_MAX];
    int spool_fd;
    uint64_t got;
};

static void arch_put_free(struct arch_put *a)
{
    if (!a)
        return;
    if (a->spool_fd >= 0)
        close(a->spool_fd);
    if (a->spool_path[0])
        unlink(a->spool_path);
    sl_bck_release(&a->b);
    free(a->name);
    free(a->member);
    free(a);
}

static int spool_data(struct sl_req *r, const char *data, size_t n)
{
    struct arch_put *a = r->ctx;
    size_t off = 0;
    while (off < n) {
        ssize_t w = write(a->spool_fd, data + off, n - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return sl_errf(&r->err, errno == ENOSPC ? SL_ENOSPC : SL_EIO, "spooling the member: %s",
                           strerror(errno));
        }
        off += (size_t)w;
    }
    a->got += n;
    return 0;
}

struct put_io {
    struct sl_put *put;
    struct sl_err *err;
};

static int64_t put_io_write(void *ctx, const void *buf, size_t n)
{
    struct put_io *p = ctx;
    return sl_put_write(p->put, buf, n, p->err) < 0 ? -1 : (int64_t)n;
}

/* copy the spooled member into writer w */
static int add_spooled(struct arch_put *a, struct sl_plug_writer *w, struct sl_err *err)
{
    if (sl_plug_writer_add(w, a->member, a->mlen, (int64_t)a->got, sl_now_ns() / 1000000000LL, 0, err) < 0)
        return -1;
    char *buf = sl_xmalloc(CHUNK);
    uint64_t off = 0;
    int rc = 0;
    while (off < a->got) {
        ssize_t n = pread(a->spool_fd, buf, CHUNK, (off_t)off);
        if (n <= 0) {
            rc = sl_errf(err, SL_EIO, "reading the spooled member: %s", n < 0 ? strerror(errno) : "short");
            break;
        }
        if (sl_plug_writer_write(w, buf, (size_t)n, err) < 0) {
            rc = -1;
            break;
        }
        off += (uint64_t)n;
    }
    free(buf);
    return rc;
}

/* Write a new shard: optionally the members of the current one first (rebuild), then the new member. */
static int rebuild(struct arch_put *a, int oldfd, struct sl_err *err)
{
    struct sl_put *put;
    struct sl_put_opts o = { .client_cktype = -1, .expect_size = -1, .keep_custom = true };
    if (sl_put_begin(&a->b, a->name, a->nlen, &o, &put, err) < 0)
        return -1;
    struct put_io pio = { put, err };
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), &a->b, a->name, a->nlen);
    struct sl_io io = { SL_ABI_INIT(struct sl_io), .ctx = &pio, .write = put_io_write, .name = cn };
    struct sl_plug_writer *w;
    if (sl_plug_writer_open(a->fmt, &io, 0, &w, err) < 0) {
        sl_put_abort(put);
        return -1;
    }
    int rc = 0;
    if (oldfd >= 0) {
        struct sl_plug_fdio fio;
        sl_plug_fdio_init(&fio, oldfd, 0, cn);
        struct sl_fmt_limits lim;
        limits(&lim);
        struct sl_plug_reader *rd;
        struct sl_fmt_entry e;
        char *buf = sl_xmalloc(CHUNK);
        rc = sl_plug_reader_open(a->fmt, &fio.io, &lim, 0, &rd, err);
        while (rc == 0 && (rc = sl_plug_reader_next(rd, &e, err)) == 0) {
            if (e.name_len == a->mlen && !memcmp(e.name, a->member, a->mlen))
                continue; /* replaced by the new member */
            if (e.size < 0) {
                rc = sl_errf(err, SL_EUNSUPP, "%s: member %s has no size in its header; cannot rebuild", cn, e.name);
                break;
            }
            if ((rc = sl_plug_writer_add(w, e.name, e.name_len, e.size, e.mtime, e.mode, err)) < 0)
                break;
            int64_t n;
            while ((n = sl_plug_reader_read(rd, buf, CHUNK, err)) > 0)
                if ((rc = sl_plug_writer_write(w, buf, (size_t)n, err)) < 0)
                    break;
            if (n < 0)
                rc = -1;
            if (rc < 0)
                break;
        }
        if (rc == 1)
            rc = 0;
        sl_plug_reader_close(rd);
        free(buf);
    }
    if (rc == 0)
        rc = add_spooled(a, w, err);
    if (rc == 0)
        rc = sl_plug_writer_finish(w, err);
    sl_plug_writer_close(w);
    if (rc < 0) {
        sl_put_abort(put);
        return -1;
    }
    if (sl_put_commit(put, NULL, err) < 0)
        return -1;
    sl_arch_after_put(&a->b, a->name, a->nlen);
    return 0;
}

/* True append in place (plain tar). 1 = not possible (rebuild instead). */
static int append_in_place(struct arch_put *a, struct sl_err *err)
{
    struct sl_obj_edit ed;
    if (sl_obj_edit_begin(&a->b, a->name, a->nlen, &ed, err) < 0)
        return -1;
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), &a->b, a->name, a->nlen);
    struct sl_plug_append ap;
    struct stat st;
    fstat(ed.fd, &st);
    int64_t orig = st.st_size;
    if (sl_plug_append_begin(a->fmt, ed.fd, cn, &ap, err) < 0) {
        sl_obj_edit_abort(&ed);
        return err->code == SL_EUNSUPP ? 1 : -1;
    }
    if (sl_obj_edit_mark(&ed, ap.offset, orig, err) < 0)
        goto fail;
    if (add_spooled(a, ap.w, err) < 0)
        goto fail;
    sl_fault("append-before-commit");
    if (sl_plug_append_commit(&ap, err) < 0)
        goto fail;
    if (sl_obj_edit_commit(&ed, err) < 0)
        return -1;
    sl_arch_after_put(&a->b, a->name, a->nlen);
    return 0;
fail:
    sl_plug_append_abort(&ap); /* after a failed commit: restores again, as before */
    sl_obj_edit_abort(&ed);
    return -1;
}

static void arch_put_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct arch_put *a = r->ctx;
    struct sl_err err = { 0 };
    if (r->content_length >= 0 && a->got != (uint64_t)r->content_length) {
        sl_resp_errf(r, SL_EINVAL, "PUT archpath: received %llu bytes of %lld; nothing was changed",
                     (unsigned long long)a->got, (long long)r->content_length);
        return;
    }
    int fd = -1;
    struct sl_objmd md;
    int exists = sl_obj_stat(&a->b, a->name, a->nlen, &md, NULL, &err);
    if (exists < 0) {
        sl_resp_err(r, &err);
        return;
    }
    if (exists == 1)
        sl_objmd_free(&md);
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), &a->b, a->name, a->nlen);
    int rc;
    if (a->pine == 0 || (a->pine == 2 && !exists)) {
        rc = rebuild(a, -1, &err); /* create or overwrite with this one member */
    } else if (!exists) {
        sl_resp_errf(r, SL_ENOOBJ, "%s does not exist: cannot append to it (use Ais-Pine: 2 to append or create)",
                     cn);
        return;
    } else {
        rc = is_plain_tar(a->fmt) ? append_in_place(a, &err) : 1;
        if (rc == 1) { /* rebuild: old members + the new one */
            struct sl_objmd om;
            if (sl_obj_open(&a->b, a->name, a->nlen, &fd, &om, NULL, &err) < 0) {
                sl_resp_err(r, &err);
                return;
            }
            sl_objmd_free(&om);
            rc = rebuild(a, fd, &err);
            close(fd);
        }
    }
    if (rc < 0) {
        sl_resp_err(r, &err);
        return;
    }
    sl_resp_empty(r, 200);
}

/* an append in place or a rebuild of the whole shard: on a DISK pool thread */
static void arch_put_done(struct sl_req *r)
{
    sl_req_offload_disk(r, arch_put_run, NULL, NULL);
}

static void arch_put_cleanup(struct sl_req *r, bool completed)
{
    arch_put_free(r->ctx);
    r->ctx = NULL;
}

bool sl_arch_put(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen)
{
    const char *archpath = q_nonempty(r, "archpath");
    if (!archpath)
        return false;
    struct sl_err err = { 0 };
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), b, name, nlen);
    if (r->content_length < 0) {
        sl_resp_errf(r, SL_EINVAL, "PUT %s?archpath: Content-Length is required to add a member", cn);
        return true;
    }
    const char *pine_h = sl_req_header(r, "Ais-Pine");
    int pine = pine_h ? atoi(pine_h) : 0;
    if (pine < 0 || pine > 2) {
        sl_resp_errf(r, SL_EINVAL, "PUT %s: invalid Ais-Pine \"%s\" (0 create/overwrite, 1 append, 2 append or create)",
                     cn, pine_h);
        return true;
    }
    /* unlike GET, a leading '/' is not stripped: an absolute member name is refused */
    size_t al = strlen(archpath);
    if (sl_plug_member_name_check(archpath, al, &err) < 0) {
        sl_err_wrap(&err, "PUT %s?archpath", cn);
        sl_resp_err(r, &err);
        return true;
    }
    const char *mime = q_nonempty(r, "archmime");
    const struct sl_plug *fmt = mime ? sl_plug_format_by_mime(reg, mime) : sl_arch_format_by_name(name, nlen);
    if (!fmt || !(sl_plug_caps(fmt) & SL_FMT_CAP_WRITE)) {
        sl_resp_errf(r, SL_EINVAL, "PUT %s?archpath: %s is not a writable shard format; supported: %s", cn,
                     mime ? mime : "the name's extension", sl_arch_supported());
        return true;
    }
    struct arch_put *a = sl_xcalloc(1, sizeof(*a));
    a->spool_fd = -1;
    sl_bck_copy(&a->b, b);
    a->name = sl_xstrndup(name, nlen);
    a->nlen = nlen;
    a->member = sl_xstrndup(archpath, al);
    a->mlen = al;
    a->pine = pine;
    a->fmt = fmt;
    /* spool the member next to the shard (same mountpath, work directory) */
    struct sl_buf un;
    sl_buf_init(&un);
    sl_obj_uname(&un, b->provider, b->name, name, nlen);
    struct sl_mpath *mp = sl_store_pick(un.p, un.len);
    sl_buf_free(&un);
    char rid[20];
    sl_rand_id(rid, 12);
    snprintf(a->spool_path, sizeof(a->spool_path), "%s/@%s/%s/%%wk/spool-%s", mp->path, b->provider, b->name, rid);
    sl_mkdir_parents(a->spool_path, 0755);
    a->spool_fd = open(a->spool_path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (a->spool_fd < 0) {
        int e = errno;
        a->spool_path[0] = 0;
        arch_put_free(a);
        sl_resp_errf(r, e == ENOSPC ? SL_ENOSPC : SL_EIO, "PUT %s?archpath: cannot spool the member: %s", cn,
                     strerror(e));
        return true;
    }
    r->ctx = a;
    r->on_cleanup = arch_put_cleanup;
    sl_req_stream_body(r, spool_data, arch_put_done);
    return true;
}

/* ---- one member, for callers that copy it elsewhere (get-batch) ---- */

/* an fd shared by a shard and the members opened from it */
struct shared_fd {
    int fd;
    int refs;                  /* atomic */
};

static void sfd_put(struct shared_fd *f)
{
    if (f && __atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) == 0) {
        close(f->fd);
        free(f);
    }
}

struct sl_arch_member {
    int fd;                    /* sfd's, or the member's own */
    struct shared_fd *sfd;
    uint64_t off, size, pos;   /* indexed plain tar: [off, off + size) of fd */
    struct sl_plug_fdio fio;
    struct sl_plug_reader *rd; /* else: a reader positioned at the member */
    char name[400];
};

struct sl_arch_shard {
    const struct sl_bck *b;
    char *name;
    size_t nlen;
    int fd;
    struct shared_fd *sfd;
    struct sl_objmd md;
    const struct sl_plug *fmt;
    struct sl_md_env *env;
    bool indexed;              /* a plain tar with a valid member index */
    char cname[400];
};

int sl_arch_shard_open(const struct sl_bck *b, const char *name, size_t nlen, struct sl_arch_shard **out,
                       struct sl_err *err)
{
    int fd;
    struct sl_objmd md;
    *out = NULL;
    if (sl_obj_open(b, name, nlen, &fd, &md, NULL, err) < 0)
        return -1;
    return sl_arch_shard_open_fd(b, name, nlen, fd, &md, true, out, err);
}

int sl_arch_shard_open_fd(const struct sl_bck *b, const char *name, size_t nlen, int fd, struct sl_objmd *md,
                          bool stored, struct sl_arch_shard **out, struct sl_err *err)
{
    *out = NULL;
    struct sl_arch_shard *s = sl_xcalloc(1, sizeof(*s));
    s->b = b;
    s->name = sl_xstrndup(name, nlen);
    s->nlen = nlen;
    sl_obj_cname(s->cname, sizeof(s->cname), b, name, nlen);
    s->fd = fd;
    s->md = *md;
    memset(md, 0, sizeof(*md));
    s->sfd = sl_xmalloc(sizeof(*s->sfd));
    *s->sfd = (struct shared_fd){ s->fd, 1 };
    s->fmt = sl_arch_format_of(name, nlen, NULL, s->fd);
    if (!s->fmt) {
        sl_errf(err, SL_EINVAL, "%s: not a shard this cluster can read (supported formats: %s), so it has no "
                "members", s->cname, sl_arch_supported());
        sl_arch_shard_close(s);
        return -1;
    }
    if (is_plain_tar(s->fmt) && stored) {
        s->env = sl_obj_md_env(b, name, nlen);
        unsigned char pfx[SL_OBJ_AUX_PREFIX];
        sl_obj_aux_prefix(b->bid, name, nlen, pfx);
        if (!index_valid(s->env, pfx, &s->md) && index_fd(s->fmt, s->env, b, name, nlen, s->fd, &s->md, err) < 0) {
            sl_arch_shard_close(s);
            return -1;
        }
        s->indexed = true;
    }
    *out = s;
    return 0;
}

const char *sl_arch_shard_name(const struct sl_arch_shard *s)
{
    return s->name;
}

void sl_arch_shard_close(struct sl_arch_shard *s)
{
    if (!s)
        return;
    if (s->sfd)
        sfd_put(s->sfd);
    else if (s->fd >= 0)
        close(s->fd);
    sl_objmd_free(&s->md);
    free(s->name);
    free(s);
}

int sl_arch_shard_member(struct sl_arch_shard *s, const char *member, size_t ml, struct sl_arch_member **out,
                         int64_t *size, struct sl_err *err)
{
    *out = NULL;
    while (ml && *member == '/') {
        member++;
        ml--;
    }
    if (sl_plug_member_name_check(member, ml, err) < 0) {
        sl_err_wrap(err, "%s: archpath", s->cname);
        return -1;
    }
    struct sl_arch_member *m = sl_xcalloc(1, sizeof(*m));
    snprintf(m->name, sizeof(m->name), "%s", s->cname);
    m->fd = s->fd;
    m->sfd = s->sfd;
    __atomic_add_fetch(&m->sfd->refs, 1, __ATOMIC_ACQ_REL);
    int rc = -1;
    struct sl_fmt_limits lim;
    limits(&lim);
    if (s->indexed) {
        int f = index_lookup(s->env, s->b, s->name, s->nlen, &s->md, member, ml, &m->off, &m->size);
        if (f == 0) {
            sl_errf(err, SL_ENOENT, "%s: no member \"%.*s\" in the shard", s->cname, (int)SL_MIN(ml, 300), member);
            goto out;
        }
        if (f == 1) {
            if (lim.max_member_size && m->size > lim.max_member_size) {
                sl_errf(err, SL_ETOOBIG, "%s: member \"%.*s\" is %llu bytes, over the limit of %llu bytes "
                        "(arch.max_member_size)", s->cname, (int)SL_MIN(ml, 300), member,
                        (unsigned long long)m->size, (unsigned long long)lim.max_member_size);
                goto out;
            }
            *size = (int64_t)m->size;
            rc = 0;
            goto out;
        }
        /* no index: scan */
    }
    sl_plug_fdio_init(&m->fio, m->fd, 0, m->name);
    struct sl_fmt_entry e;
    char *mz = sl_xstrndup(member, ml);
    int f = sl_plug_reader_open(s->fmt, &m->fio.io, &lim, 0, &m->rd, err);
    if (f == 0)
        f = sl_plug_reader_find(m->rd, mz, &e, err);
    free(mz);
    if (f == 1)
        sl_errf(err, SL_ENOENT, "%s: no member \"%.*s\" in the shard", s->cname, (int)SL_MIN(ml, 300), member);
    if (f == 0) {
        *size = e.size;
        rc = 0;
    }
out:
    if (rc < 0)
        sl_arch_member_close(m);
    else
        *out = m;
    return rc;
}

int sl_arch_member_open(const struct sl_bck *b, const char *name, size_t nlen, const char *member, size_t ml,
                        struct sl_arch_member **out, int64_t *size, struct sl_err *err)
{
    struct sl_arch_shard *s;
    *out = NULL;
    if (sl_arch_shard_open(b, name, nlen, &s, err) < 0)
        return -1;
    int rc = sl_arch_shard_member(s, member, ml, out, size, err);
    sl_arch_shard_close(s);
    return rc;
}

int64_t sl_arch_member_read(struct sl_arch_member *m, void *buf, size_t n, struct sl_err *err)
{
    if (m->rd)
        return sl_plug_reader_read(m->rd, buf, n, err);
    if (m->pos >= m->size)
        return 0;
    n = (size_t)SL_MIN((uint64_t)n, m->size - m->pos);
    ssize_t r;
    do
        r = pread(m->fd, buf, n, (off_t)(m->off + m->pos));
    while (r < 0 && errno == EINTR);
    if (r <= 0)
        return sl_errf(err, SL_EIO, "%s: reading a member: %s", m->name, r < 0 ? strerror(errno) : "short file");
    m->pos += (uint64_t)r;
    return r;
}

void sl_arch_member_close(struct sl_arch_member *m)
{
    if (!m)
        return;
    sl_plug_reader_close(m->rd);
    if (m->sfd)
        sfd_put(m->sfd);
    else if (m->fd >= 0)
        close(m->fd);
    free(m);
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
    if (!fmt || !is_plain_tar(fmt))
        sl_errf(err, SL_EINVAL, "%s: member indexes exist for plain .tar shards only", cn);
    else if (index_valid(env, pfx, &md) || index_fd(fmt, env, b, name, nlen, fd, &md, err) == 0) {
        struct idx_iter it = { .arr = json_array(), .max = UINT64_MAX };
        sl_md_aux_foreach(env, (const char *)pfx, SL_OBJ_AUX_PREFIX, idx_foreach_cb, &it);
        arr = it.arr;
    }
    close(fd);
    sl_objmd_free(&md);
    return arr;
}
