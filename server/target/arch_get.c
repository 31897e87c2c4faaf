/* SPDX-License-Identifier: MIT
 * arch_get.c: reading shards on a target: GET ?archpath= (one member),
 * ?archmode=&archregx= (a selection, as a tar stream) and ?archindex (the
 * member index as JSON), streamed; and the shard and member readers for
 * callers that copy members elsewhere (sl_arch_shard_*, sl_arch_member_*).
 */
#include "arch_int.h"
#include "rxguard.h"
#include "jsonx.h"
#include "log.h"
#include "stats.h"
#include "store.h"

#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PRE_CHUNK (64 * 1024)

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
                                    s->lastlen, arch_idx_foreach_cb, &it);
    if (rc < 0) {
        rc = sl_errf(err, SL_EIO, "%s: reading the member index failed", s->name);
    } else if (!arch_index_current(s->env, s->pfx, s->mtime, s->size)) {
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
        if (sl_regcomp(&x->re, x->pat, REG_EXTENDED | REG_NOSUB, "archregx", err) < 0) {
            free(x->pat);
            free(x);
            return -1;
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
    return sl_arch_match(s->match, e->name, e->name_len) && arch_member_ok(cn, e->name, e->name_len);
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

bool sl_arch_wanted(const struct sl_req *r)
{
    return arch_q_nonempty(r, "archpath") || arch_q_nonempty(r, "archmode") || sl_req_query_bool(r, "archindex");
}

/* archregx + archmode: a tar stream of every match, 404 when none. Takes fd. */
static void select_get(struct sl_req *r, const struct sl_plug *fmt, int fd, const char *cn)
{
    const char *mode = arch_q_nonempty(r, "archmode"), *regx = sl_req_query(r, "archregx");
    struct sl_err err = { 0 };
    struct tar_stream *s = sl_xcalloc(1, sizeof(*s));
    s->fd = fd;
    s->plain = arch_is_plain_tar(fmt);
    snprintf(s->name, sizeof(s->name), "%s", cn);
    s->chunk = sl_xmalloc(CHUNK);
    sl_buf_init(&s->out);
    if (sl_arch_match_new(mode, regx, &s->match, &err) < 0)
        goto fail;
    const struct sl_plug *tar = sl_plug_find(sl_arch_reg(), SL_PLUGIN_FORMAT, "tar");
    if (!tar) {
        sl_errf(&err, SL_EUNSUPP, "GET %s?archmode: the tar format plugin is not loaded", cn);
        goto fail;
    }
    struct sl_fmt_limits lim;
    arch_limits(&lim);
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
    const char *archpath = arch_q_nonempty(r, "archpath");
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
    if (arch_is_plain_tar(fmt) && env) {
        uint64_t off, size;
        int rc = arch_index_lookup(env, b, name, nlen, md, archpath, al, &off, &size);
        struct sl_fmt_limits lim;
        arch_limits(&lim);
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
    arch_limits(&lim);
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
    const char *archpath = arch_q_nonempty(r, "archpath"), *mime = arch_q_nonempty(r, "archmime");
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
    if (arch_is_plain_tar(fmt) && env) {
        unsigned char pfx[SL_OBJ_AUX_PREFIX];
        sl_obj_aux_prefix(b->bid, name, nlen, pfx);
        if (!arch_index_valid(env, pfx, &md) && arch_index_fd(fmt, env, b, name, nlen, fd, &md, &err) < 0)
            goto fail;
    }
    if (archpath) {
        member_get(r, b, name, nlen, fmt, env, fd, &md, cn);
        return;
    }
    if (sl_req_query_bool(r, "archindex")) {
        if (!arch_is_plain_tar(fmt)) {
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
    const char *archpath = arch_q_nonempty(r, "archpath"), *mode = arch_q_nonempty(r, "archmode");
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
    if (arch_q_nonempty(r, "archpath")) {
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
    if (arch_is_plain_tar(s->fmt) && stored) {
        s->env = sl_obj_md_env(b, name, nlen);
        unsigned char pfx[SL_OBJ_AUX_PREFIX];
        sl_obj_aux_prefix(b->bid, name, nlen, pfx);
        if (!arch_index_valid(s->env, pfx, &s->md) &&
            arch_index_fd(s->fmt, s->env, b, name, nlen, s->fd, &s->md, err) < 0) {
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
    arch_limits(&lim);
    if (s->indexed) {
        int f = arch_index_lookup(s->env, s->b, s->name, s->nlen, &s->md, member, ml, &m->off, &m->size);
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
