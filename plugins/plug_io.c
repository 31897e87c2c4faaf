/* SPDX-License-Identifier: MIT
 * plug_io.c: the server's side of plugin operations: sl_io adapters over a
 * file descriptor and over memory, wrappers that drive format readers and
 * writers and sample-key rules with struct sl_err errors, the tar index and
 * the in-place tar append protocol.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "plug.h"

#define PERR_LEN 1024

int sl_plug_code(int rc)
{
    switch (rc) {
    case SL_PLUG_OK: return SL_OK;
    case SL_PLUG_EINVAL: return SL_EINVAL;
    case SL_PLUG_EFORMAT: return SL_EBADDATA; /* a corrupt shard: 422, not a server fault */
    case SL_PLUG_ELIMIT: return SL_ETOOBIG;
    case SL_PLUG_EUNSUPP: return SL_EUNSUPP;
    case SL_PLUG_EIO: return SL_EIO;
    default: return SL_EINTERNAL;
    }
}

/* Turn a plugin failure into struct sl_err; always returns -1. */
static int plug_fail(struct sl_err *err, const struct sl_plug *p, const char *op, int rc, const char *msg,
                     const struct sl_io *io)
{
    const char *ioname = io != NULL && io->name != NULL ? io->name : "(unnamed)";

    if (msg != NULL && msg[0] != '\0')
        return sl_errf(err, sl_plug_code(rc), "%s", msg);
    return sl_errf(err, sl_plug_code(rc), "format \"%s\": %s on %s failed with code %d and no message (a plugin bug; "
                   "report it to the plugin's author)", sl_plug_name(p), op, ioname, rc);
}

void sl_plug_limits_default(struct sl_fmt_limits *lim)
{
    memset(lim, 0, sizeof(*lim));
    SL_ABI_SET(lim);
    lim->max_members = 1000000;
    lim->max_member_size = 16 * SL_GIB;
    lim->max_total_size = 256 * SL_GIB;
    lim->max_ratio = 0;
}

int sl_plug_member_name_check(const char *name, size_t len, struct sl_err *err)
{
    const char *why = sl_plugin_member_name_check(name, len);

    if (why == NULL && len > SL_MAX_OBJNAME)
        why = "longer than the server's object-name limit";
    if (why != NULL)
        return sl_errf(err, SL_EINVAL, "archive member name \"%.*s\" refused: %s", (int)(len > 200 ? 200 : len),
                       name ? name : "", why);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* sl_io adapters                                                           */
/* ------------------------------------------------------------------------ */

static int64_t fd_read(void *ctx, void *buf, size_t n)
{
    struct sl_plug_fdio *f = ctx;
    ssize_t r;

    do {
        r = pread(f->fd, buf, n, (off_t)f->pos);
    } while (r < 0 && errno == EINTR);
    if (r < 0) {
        f->err_no = errno;
        return -1;
    }
    f->pos += r;
    return r;
}

static int64_t fd_seek(void *ctx, int64_t off, int whence)
{
    struct sl_plug_fdio *f = ctx;
    int64_t base;
    struct stat st;

    switch (whence) {
    case SL_SEEK_SET: base = 0; break;
    case SL_SEEK_CUR: base = f->pos; break;
    case SL_SEEK_END:
        if (fstat(f->fd, &st) != 0) {
            f->err_no = errno;
            return -1;
        }
        base = st.st_size;
        break;
    default: f->err_no = EINVAL; return -1;
    }
    if ((off > 0 && base > INT64_MAX - off) || base + off < 0) {
        f->err_no = EINVAL;
        return -1;
    }
    f->pos = base + off;
    return f->pos;
}

static int64_t fd_write(void *ctx, const void *buf, size_t n)
{
    struct sl_plug_fdio *f = ctx;
    const char *p = buf;
    size_t left = n;

    while (left > 0) {
        ssize_t r = pwrite(f->fd, p, left, (off_t)f->pos);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            f->err_no = r < 0 ? errno : ENOSPC;
            return -1;
        }
        p += r;
        left -= (size_t)r;
        f->pos += r;
    }
    return (int64_t)n;
}

void sl_plug_fdio_init(struct sl_plug_fdio *f, int fd, int64_t pos, const char *name)
{
    memset(f, 0, sizeof(*f));
    SL_ABI_SET(&f->io);
    f->io.ctx = f;
    f->io.read = fd_read;
    f->io.seek = fd_seek;
    f->io.write = fd_write;
    f->io.name = name;
    f->fd = fd;
    f->pos = pos;
}

static int64_t mem_read(void *ctx, void *buf, size_t n)
{
    struct sl_plug_memio *m = ctx;
    size_t left;

    if (m->pos >= (int64_t)m->rlen)
        return 0;
    left = m->rlen - (size_t)m->pos;
    if (n > left)
        n = left;
    memcpy(buf, m->rbuf + m->pos, n);
    m->pos += (int64_t)n;
    return (int64_t)n;
}

static int64_t mem_seek(void *ctx, int64_t off, int whence)
{
    struct sl_plug_memio *m = ctx;
    int64_t base = whence == SL_SEEK_SET ? 0 : whence == SL_SEEK_CUR ? m->pos : (int64_t)m->rlen;

    if (whence < SL_SEEK_SET || whence > SL_SEEK_END || base + off < 0)
        return -1;
    m->pos = base + off;
    return m->pos;
}

static int64_t mem_write(void *ctx, const void *buf, size_t n)
{
    struct sl_plug_memio *m = ctx;

    if (m->wbuf == NULL || sl_buf_add(m->wbuf, buf, n) != 0)
        return -1;
    return (int64_t)n;
}

void sl_plug_memio_init(struct sl_plug_memio *m, const void *rbuf, size_t rlen, struct sl_buf *wbuf,
                        const char *name)
{
    memset(m, 0, sizeof(*m));
    SL_ABI_SET(&m->io);
    m->io.ctx = m;
    m->io.read = mem_read;
    m->io.seek = mem_seek;
    m->io.write = mem_write;
    m->io.name = name;
    m->rbuf = rbuf;
    m->rlen = rlen;
    m->wbuf = wbuf;
}

/* ------------------------------------------------------------------------ */
/* Readers                                                                  */
/* ------------------------------------------------------------------------ */

struct sl_plug_reader {
    const struct sl_plug *p;
    const struct sl_format_ops *ops;
    const struct sl_io *io;
    void *h;
};

static const struct sl_format_ops *fmt_ops(const struct sl_plug *p, struct sl_err *err)
{
    if (p == NULL || sl_plug_kind(p) != SL_PLUGIN_FORMAT) {
        sl_errf(err, SL_EINVAL, "plugin \"%s\" is not a shard format", p ? sl_plug_name(p) : "(null)");
        return NULL;
    }
    return sl_plug_desc(p)->format;
}

int sl_plug_reader_open(const struct sl_plug *fmt, const struct sl_io *io, const struct sl_fmt_limits *lim,
                        uint32_t flags, struct sl_plug_reader **out, struct sl_err *err)
{
    const struct sl_format_ops *ops = fmt_ops(fmt, err);
    struct sl_fmt_limits def;
    char perr[PERR_LEN] = "";
    struct sl_plug_reader *r;
    void *h = NULL;
    int rc;

    *out = NULL;
    if (ops == NULL)
        return -1;
    if (lim == NULL) {
        sl_plug_limits_default(&def);
        lim = &def;
    }
    rc = ops->reader_open(sl_plug_state(fmt), io, lim, flags, &h, perr, sizeof(perr));
    if (rc != SL_PLUG_OK) {
        if (h != NULL)
            ops->reader_close(h);
        return plug_fail(err, fmt, "reader_open", rc, perr, io);
    }
    r = sl_xcalloc(1, sizeof(*r));
    r->p = fmt;
    r->ops = ops;
    r->io = io;
    r->h = h;
    sl_plug_ref(fmt, +1);
    *out = r;
    return 0;
}

int sl_plug_reader_next(struct sl_plug_reader *r, struct sl_fmt_entry *e, struct sl_err *err)
{
    char perr[PERR_LEN] = "";
    int rc;

    memset(e, 0, sizeof(*e));
    SL_ABI_SET(e);
    e->data_offset = -1;
    rc = r->ops->reader_next(r->h, e, perr, sizeof(perr));
    if (rc == SL_PLUG_EOF)
        return 1;
    if (rc != SL_PLUG_OK)
        return plug_fail(err, r->p, "reader_next", rc, perr, r->io);
    if (e->name == NULL) /* a plugin bug; never hand NULL names on */
        return sl_errf(err, SL_EINTERNAL, "format \"%s\": reader_next returned a member without a name (a plugin "
                       "bug)", sl_plug_name(r->p));
    return 0;
}

int64_t sl_plug_reader_read(struct sl_plug_reader *r, void *buf, size_t n, struct sl_err *err)
{
    char perr[PERR_LEN] = "";
    int64_t got = r->ops->reader_read(r->h, buf, n, perr, sizeof(perr));

    if (got < 0)
        return plug_fail(err, r->p, "reader_read", (int)got, perr, r->io);
    if ((uint64_t)got > n)
        return sl_errf(err, SL_EINTERNAL, "format \"%s\": reader_read returned %" PRId64 " bytes for a %zu-byte "
                       "buffer (a plugin bug)", sl_plug_name(r->p), got, n);
    return got;
}

int sl_plug_reader_skip(struct sl_plug_reader *r, struct sl_err *err)
{
    char perr[PERR_LEN] = "";
    int rc = r->ops->reader_skip(r->h, perr, sizeof(perr));

    return rc == SL_PLUG_OK ? 0 : plug_fail(err, r->p, "reader_skip", rc, perr, r->io);
}

void sl_plug_reader_close(struct sl_plug_reader *r)
{
    if (r == NULL)
        return;
    r->ops->reader_close(r->h);
    sl_plug_ref(r->p, -1);
    free(r);
}

int sl_plug_reader_find(struct sl_plug_reader *r, const char *name, struct sl_fmt_entry *e, struct sl_err *err)
{
    size_t len = strlen(name);
    int rc;

    for (;;) {
        rc = sl_plug_reader_next(r, e, err);
        if (rc != 0)
            break;
        if (!(e->flags & SL_FMT_E_REGULAR))
            continue;
        if ((e->name_len == len && memcmp(e->name, name, len) == 0) ||
            (e->name_len == len + 2 && e->name[0] == '.' && e->name[1] == '/' && memcmp(e->name + 2, name, len) == 0))
            return 0;
    }
    if (rc == 1)
        sl_errf(err, SL_ENOENT, "%s: no member \"%s\" in the shard (names are compared exactly; list the shard "
                "to see its members)", r->io && r->io->name ? r->io->name : "(unnamed)", name);
    return rc;
}

/* ------------------------------------------------------------------------ */
/* Writers                                                                  */
/* ------------------------------------------------------------------------ */

struct sl_plug_writer {
    const struct sl_plug *p;
    const struct sl_format_ops *ops;
    const struct sl_io *io;
    void *h;
};

int sl_plug_writer_open(const struct sl_plug *fmt, const struct sl_io *io, uint32_t flags,
                        struct sl_plug_writer **out, struct sl_err *err)
{
    const struct sl_format_ops *ops = fmt_ops(fmt, err);
    char perr[PERR_LEN] = "";
    struct sl_plug_writer *w;
    void *h = NULL;
    int rc;

    *out = NULL;
    if (ops == NULL)
        return -1;
    if (!(ops->caps & SL_FMT_CAP_WRITE))
        return sl_errf(err, SL_EUNSUPP, "format \"%s\" cannot write shards", sl_plug_name(fmt));
    rc = ops->writer_open(sl_plug_state(fmt), io, flags, &h, perr, sizeof(perr));
    if (rc != SL_PLUG_OK) {
        if (h != NULL)
            ops->writer_close(h);
        return plug_fail(err, fmt, "writer_open", rc, perr, io);
    }
    w = sl_xcalloc(1, sizeof(*w));
    w->p = fmt;
    w->ops = ops;
    w->io = io;
    w->h = h;
    sl_plug_ref(fmt, +1);
    *out = w;
    return 0;
}

int sl_plug_writer_add(struct sl_plug_writer *w, const char *name, size_t len, int64_t size, int64_t mtime,
                       uint32_t mode, struct sl_err *err)
{
    char perr[PERR_LEN] = "";
    struct sl_fmt_entry e;
    int rc;

    memset(&e, 0, sizeof(e));
    SL_ABI_SET(&e);
    e.name = name;
    e.name_len = len;
    e.size = size;
    e.mtime = mtime;
    e.mode = mode;
    e.type = SL_FMT_T_REG;
    e.flags = SL_FMT_E_REGULAR;
    e.data_offset = -1;
    rc = w->ops->writer_add(w->h, &e, perr, sizeof(perr));
    return rc == SL_PLUG_OK ? 0 : plug_fail(err, w->p, "writer_add", rc, perr, w->io);
}

int sl_plug_writer_write(struct sl_plug_writer *w, const void *buf, size_t n, struct sl_err *err)
{
    char perr[PERR_LEN] = "";
    int rc = w->ops->writer_write(w->h, buf, n, perr, sizeof(perr));

    return rc == SL_PLUG_OK ? 0 : plug_fail(err, w->p, "writer_write", rc, perr, w->io);
}

int sl_plug_writer_finish(struct sl_plug_writer *w, struct sl_err *err)
{
    char perr[PERR_LEN] = "";
    int rc = w->ops->writer_finish(w->h, perr, sizeof(perr));

    return rc == SL_PLUG_OK ? 0 : plug_fail(err, w->p, "writer_finish", rc, perr, w->io);
}

void sl_plug_writer_close(struct sl_plug_writer *w)
{
    if (w == NULL)
        return;
    w->ops->writer_close(w->h);
    sl_plug_ref(w->p, -1);
    free(w);
}

/* ------------------------------------------------------------------------ */
/* Index and append                                                         */
/* ------------------------------------------------------------------------ */

int sl_plug_index(const struct sl_plug *fmt, const struct sl_io *io, const struct sl_fmt_limits *lim,
                  sl_fmt_index_cb cb, void *cbctx, struct sl_err *err)
{
    const struct sl_format_ops *ops = fmt_ops(fmt, err);
    struct sl_fmt_limits def;
    char perr[PERR_LEN] = "";
    int rc;

    if (ops == NULL)
        return -1;
    if (!(ops->caps & SL_FMT_CAP_INDEX) || ops->index == NULL)
        return sl_errf(err, SL_EUNSUPP, "format \"%s\" has no member index (only plain tar does); read the shard "
                       "sequentially instead", sl_plug_name(fmt));
    if (lim == NULL) {
        sl_plug_limits_default(&def);
        lim = &def;
    }
    sl_plug_ref(fmt, +1);
    rc = ops->index(sl_plug_state(fmt), io, lim, cb, cbctx, perr, sizeof(perr));
    sl_plug_ref(fmt, -1);
    if (rc == SL_PLUG_OK || rc == SL_PLUG_STOPPED)
        return 0;
    return plug_fail(err, fmt, "index", rc, perr, io);
}

int sl_plug_append_offset(const struct sl_plug *fmt, const struct sl_io *io, int64_t *off, struct sl_err *err)
{
    const struct sl_format_ops *ops = fmt_ops(fmt, err);
    struct sl_fmt_limits lim;
    char perr[PERR_LEN] = "";
    int rc;

    if (ops == NULL)
        return -1;
    if (!(ops->caps & SL_FMT_CAP_APPEND) || ops->append_offset == NULL)
        return sl_errf(err, SL_EUNSUPP, "%s: %s shards cannot be appended to in place; re-create the shard with the "
                       "new member", io && io->name ? io->name : "(unnamed)", sl_plug_name(fmt));
    sl_plug_limits_default(&lim);
    sl_plug_ref(fmt, +1);
    rc = ops->append_offset(sl_plug_state(fmt), io, &lim, off, perr, sizeof(perr));
    sl_plug_ref(fmt, -1);
    return rc == SL_PLUG_OK ? 0 : plug_fail(err, fmt, "append_offset", rc, perr, io);
}

int sl_plug_append_begin(const struct sl_plug *fmt, int fd, const char *name, struct sl_plug_append *ap,
                         struct sl_err *err)
{
    struct stat st;
    int64_t off = -1;

    memset(ap, 0, sizeof(*ap));
    ap->fd = fd;
    if (fstat(fd, &st) != 0)
        return sl_errf(err, SL_EIO, "%s: fstat: %s", name ? name : "(unnamed)", strerror(errno));
    ap->orig_size = st.st_size;
    sl_plug_fdio_init(&ap->fio, fd, 0, name);
    if (sl_plug_append_offset(fmt, &ap->fio.io, &off, err) != 0)
        return -1;
    if (off < 0 || off > ap->orig_size)
        return sl_errf(err, SL_EINTERNAL, "%s: format \"%s\" returned append offset %" PRId64 " for a %" PRId64
                       "-byte shard (a plugin bug)", name ? name : "(unnamed)", sl_plug_name(fmt), off, ap->orig_size);
    ap->offset = off;
    sl_plug_fdio_init(&ap->fio, fd, off, name);
    if (sl_plug_writer_open(fmt, &ap->fio.io, SL_FMT_W_APPEND, &ap->w, err) != 0)
        return -1;
    return 0;
}

int sl_plug_append_commit(struct sl_plug_append *ap, struct sl_err *err)
{
    if (ap->w == NULL)
        return sl_errf(err, SL_EINTERNAL, "append: commit without a successful begin");
    if (sl_plug_writer_finish(ap->w, err) != 0) {
        sl_plug_append_abort(ap);
        return -1;
    }
    sl_plug_writer_close(ap->w);
    ap->w = NULL;
    ap->new_size = ap->fio.pos;
    if (ftruncate(ap->fd, (off_t)ap->new_size) != 0) {
        int e = errno;
        sl_plug_append_abort(ap);
        return sl_errf(err, e == ENOSPC ? SL_ENOSPC : SL_EIO, "%s: truncating after the append: %s",
                       ap->fio.io.name ? ap->fio.io.name : "(unnamed)", strerror(e));
    }
    return 0;
}

void sl_plug_append_abort(struct sl_plug_append *ap)
{
    sl_plug_writer_close(ap->w);
    ap->w = NULL;
    if (ap->offset <= 0 && ap->orig_size == 0)
        return;
    /* Everything from the append offset on was the end marker and zero
     * padding: cutting there and growing back restores an equivalent
     * archive (bytes past the marker come back as zeros). */
    if (ftruncate(ap->fd, (off_t)ap->offset) != 0 || ftruncate(ap->fd, (off_t)ap->orig_size) != 0)
        sl_logw("%s: could not restore the shard after a failed append: %s; the shard may be damaged, re-create it",
                ap->fio.io.name ? ap->fio.io.name : "(unnamed)", strerror(errno));
}

/* ------------------------------------------------------------------------ */
/* Sample keys                                                              */
/* ------------------------------------------------------------------------ */

struct sl_plug_key {
    const struct sl_plug *p;
    const struct sl_key_ops *ops;
    void *inst;
};

int sl_plug_key_new(const struct sl_plug *rule, const char *config, struct sl_plug_key **out, struct sl_err *err)
{
    const struct sl_key_ops *ops;
    char perr[PERR_LEN] = "";
    struct sl_plug_key *k;
    void *inst = NULL;
    int rc;

    *out = NULL;
    if (rule == NULL || sl_plug_kind(rule) != SL_PLUGIN_SAMPLE_KEY)
        return sl_errf(err, SL_EINVAL, "plugin \"%s\" is not a sample-key rule", rule ? sl_plug_name(rule) : "(null)");
    ops = sl_plug_desc(rule)->key;
    rc = ops->init(sl_plug_state(rule), config, &inst, perr, sizeof(perr));
    if (rc != SL_PLUG_OK) {
        if (perr[0] == '\0')
            return sl_errf(err, sl_plug_code(rc), "sample-key rule \"%s\": init failed with code %d",
                           sl_plug_name(rule), rc);
        return sl_errf(err, sl_plug_code(rc), "%s", perr);
    }
    k = sl_xcalloc(1, sizeof(*k));
    k->p = rule;
    k->ops = ops;
    k->inst = inst;
    sl_plug_ref(rule, +1);
    *out = k;
    return 0;
}

void sl_plug_key_free(struct sl_plug_key *k)
{
    if (k == NULL)
        return;
    k->ops->fini(k->inst);
    sl_plug_ref(k->p, -1);
    free(k);
}

int sl_plug_key_apply(const struct sl_plug_key *k, const char *name, size_t len, char *key_buf, size_t key_cap,
                      size_t *key_len, size_t *ext_off, size_t *ext_len, uint32_t *flags, struct sl_err *err)
{
    char perr[PERR_LEN] = "";
    struct sl_key_out o;
    int rc;

    memset(&o, 0, sizeof(o));
    SL_ABI_SET(&o);
    o.key = key_buf;
    o.key_cap = key_cap;
    rc = k->ops->key(k->inst, name, len, &o, perr, sizeof(perr));
    if (rc == SL_PLUG_ERANGE)
        return sl_errf(err, SL_EINTERNAL, "sample-key rule \"%s\": the key of \"%.*s\" needs %zu bytes, the buffer "
                       "has %zu", sl_plug_name(k->p), (int)(len > 200 ? 200 : len), name, o.key_len + 1, key_cap);
    if (rc != SL_PLUG_OK) {
        if (perr[0] == '\0')
            return sl_errf(err, sl_plug_code(rc), "sample-key rule \"%s\" failed with code %d", sl_plug_name(k->p),
                           rc);
        return sl_errf(err, sl_plug_code(rc), "%s", perr);
    }
    if (o.ext_off > len || o.ext_len > len - o.ext_off || o.key_len >= key_cap)
        return sl_errf(err, SL_EINTERNAL, "sample-key rule \"%s\" returned out-of-range offsets (a plugin bug)",
                       sl_plug_name(k->p));
    if (key_len)
        *key_len = o.key_len;
    if (ext_off)
        *ext_off = o.ext_off;
    if (ext_len)
        *ext_len = o.ext_len;
    if (flags)
        *flags = o.flags;
    return 0;
}
