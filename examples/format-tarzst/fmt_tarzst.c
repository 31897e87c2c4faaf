/* SPDX-License-Identifier: MIT
 * fmt_tarzst.c: an out-of-tree Shale shard-format plugin for zstd-compressed
 * tar (".tar.zst", ".tzst"), built only against the installed
 * <shale/plugin.h> and libarchive. Copy this directory to start a new
 * format: change the names, the extensions and the libarchive filter/format
 * calls, keep the structure.
 *
 * What a format plugin must get right (see docs/plugins.md):
 *  - export exactly one symbol, sl_plugin_entry (SL_PLUGIN_EXPORT, and
 *    -fvisibility=hidden for the rest);
 *  - allocate with host->alloc/calloc/free only;
 *  - stream: never hold a whole member or archive in memory;
 *  - enforce the struct sl_fmt_limits it is given (zip-bomb defence);
 *  - write an actionable message into err on every failure;
 *  - refuse unsafe member names when writing (sl_plugin_member_name_check).
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <shale/plugin.h>

#define INBUF (64 * 1024)
#define LABEL "tar.zst shard"

static const struct sl_host_api *host;

/* Plugin state: a UTF-8 LC_CTYPE used around libarchive calls so that
 * non-ASCII member names survive in a server running in the "C" locale. */
struct zst_state {
    locale_t utf8;
};

static int errf(char *err, size_t errlen, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int errf(char *err, size_t errlen, int code, const char *fmt, ...)
{
    va_list ap;

    if (err != NULL && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return code;
}

static const char *ioname(const struct sl_io *io)
{
    return io != NULL && io->name != NULL ? io->name : "(unnamed)";
}

static locale_t enter(const struct zst_state *st)
{
    return st->utf8 != (locale_t)0 ? uselocale(st->utf8) : (locale_t)0;
}

static void leave(locale_t saved)
{
    if (saved != (locale_t)0)
        uselocale(saved);
}

/* ---------------------------------------------------------------- reader */

struct zst_reader {
    struct zst_state *st;
    struct sl_io io;
    struct sl_fmt_limits lim;
    uint32_t flags;
    struct archive *a;
    struct archive_entry *ae;
    unsigned char *buf;
    uint64_t members, member_read, raw_in;
    bool in_entry, failed;
    char name[64]; /* archive name for messages (truncated copy) */
};

static la_ssize_t read_cb(struct archive *a, void *ud, const void **out)
{
    struct zst_reader *r = ud;
    int64_t n = r->io.read(r->io.ctx, r->buf, INBUF);

    if (n < 0) {
        archive_set_error(a, EIO, "read callback failed");
        return -1;
    }
    r->raw_in += (uint64_t)n;
    *out = r->buf;
    return (la_ssize_t)n;
}

static void reader_close(void *h)
{
    struct zst_reader *r = h;

    if (r == NULL)
        return;
    if (r->a != NULL)
        archive_read_free(r->a);
    host->free(r->buf);
    host->free(r);
}

static int reader_open(void *state, const struct sl_io *io, const struct sl_fmt_limits *lim, uint32_t flags,
                       void **out, char *err, size_t errlen)
{
    struct zst_reader *r;
    locale_t saved;
    int rc = SL_PLUG_OK;

    *out = NULL;
    if (io == NULL || io->read == NULL)
        return errf(err, errlen, SL_PLUG_EINVAL, "%s: reader needs an sl_io with read", LABEL);
    r = host->calloc(1, sizeof(*r));
    if (r == NULL)
        return errf(err, errlen, SL_PLUG_ENOMEM, "%s %s: out of memory", LABEL, ioname(io));
    r->st = state;
    memcpy(&r->io, io, io->struct_size < sizeof(r->io) ? io->struct_size : sizeof(r->io));
    if (lim != NULL)
        memcpy(&r->lim, lim, lim->struct_size < sizeof(r->lim) ? lim->struct_size : sizeof(r->lim));
    r->flags = flags;
    snprintf(r->name, sizeof(r->name), "%s", ioname(io));
    r->buf = host->alloc(INBUF);
    saved = enter(r->st);
    r->a = archive_read_new();
    if (r->buf == NULL || r->a == NULL) {
        rc = errf(err, errlen, SL_PLUG_ENOMEM, "%s %s: out of memory", LABEL, r->name);
        goto out;
    }
    archive_read_support_filter_zstd(r->a);
    archive_read_support_format_tar(r->a);
    if (archive_read_open(r->a, r, NULL, read_cb, NULL) != ARCHIVE_OK) {
        rc = errf(err, errlen, SL_PLUG_EFORMAT, "%s %s: not a readable zstd tar (%s); check the extension",
                  LABEL, r->name, archive_error_string(r->a));
        goto out;
    }
    if (archive_filter_code(r->a, 0) != ARCHIVE_FILTER_ZSTD) {
        rc = errf(err, errlen, SL_PLUG_EFORMAT, "%s %s: not zstd-compressed; check the extension", LABEL, r->name);
        goto out;
    }
out:
    leave(saved);
    if (rc != SL_PLUG_OK)
        reader_close(r);
    else
        *out = r;
    return rc;
}

/* Enforce the totals: bytes unpacked (the position in the decompressed
 * stream) and the compression ratio. */
static int check_totals(struct zst_reader *r, char *err, size_t errlen)
{
    uint64_t out = (uint64_t)archive_filter_bytes(r->a, 0);

    if (r->lim.max_total_size && out > r->lim.max_total_size) {
        r->failed = true;
        return errf(err, errlen, SL_PLUG_ELIMIT, "%s %s: more than %" PRIu64 " bytes unpacked (max_total_size); "
                    "refusing what looks like an archive bomb", LABEL, r->name, r->lim.max_total_size);
    }
    if (r->lim.max_ratio && out > (1u << 20) && out / (r->raw_in ? r->raw_in : 1) > r->lim.max_ratio) {
        r->failed = true;
        return errf(err, errlen, SL_PLUG_ELIMIT, "%s %s: compression ratio over %u:1 (max_ratio); refusing what "
                    "looks like an archive bomb", LABEL, r->name, r->lim.max_ratio);
    }
    return SL_PLUG_OK;
}

static int64_t reader_read(void *h, void *buf, size_t n, char *err, size_t errlen)
{
    struct zst_reader *r = h;
    la_ssize_t got;
    locale_t saved;
    int rc;

    if (r->failed || !r->in_entry)
        return errf(err, errlen, SL_PLUG_ESTATE, "%s %s: read without a current member", LABEL, r->name);
    saved = enter(r->st);
    got = archive_read_data(r->a, buf, n);
    leave(saved);
    if (got < 0) {
        r->failed = true;
        return errf(err, errlen, SL_PLUG_EFORMAT, "%s %s: member #%" PRIu64 ": corrupt or truncated (%s); "
                    "re-create the shard", LABEL, r->name, r->members, archive_error_string(r->a));
    }
    r->member_read += (uint64_t)got;
    if (r->lim.max_member_size && r->member_read > r->lim.max_member_size) {
        r->failed = true;
        return errf(err, errlen, SL_PLUG_ELIMIT, "%s %s: member #%" PRIu64 " is over %" PRIu64 " bytes "
                    "(max_member_size)", LABEL, r->name, r->members, r->lim.max_member_size);
    }
    rc = check_totals(r, err, errlen);
    return rc != SL_PLUG_OK ? rc : (int64_t)got;
}

/* Skipping a compressed member means decompressing it: do it through
 * reader_read so that the limits apply. */
static int reader_skip(void *h, char *err, size_t errlen)
{
    struct zst_reader *r = h;
    char *scratch;
    int64_t n;

    if (!r->in_entry)
        return SL_PLUG_OK;
    scratch = host->scratch(INBUF);
    if (scratch == NULL)
        return errf(err, errlen, SL_PLUG_ENOMEM, "%s %s: out of memory", LABEL, r->name);
    while ((n = reader_read(r, scratch, INBUF, err, errlen)) > 0)
        ;
    r->in_entry = false;
    return n < 0 ? (int)n : SL_PLUG_OK;
}

static int reader_next(void *h, struct sl_fmt_entry *e, char *err, size_t errlen)
{
    struct zst_reader *r = h;
    locale_t saved;
    int rc, ar;

    if (r->failed)
        return errf(err, errlen, SL_PLUG_ESTATE, "%s %s: reader already failed", LABEL, r->name);
    for (;;) {
        rc = reader_skip(r, err, errlen);
        if (rc != SL_PLUG_OK)
            return rc;
        saved = enter(r->st);
        ar = archive_read_next_header(r->a, &r->ae);
        leave(saved);
        if (ar == ARCHIVE_EOF)
            return SL_PLUG_EOF;
        if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN) {
            r->failed = true;
            return errf(err, errlen, SL_PLUG_EFORMAT, "%s %s: bad header after member #%" PRIu64 " (%s); re-create "
                        "the shard", LABEL, r->name, r->members, archive_error_string(r->a));
        }
        r->in_entry = true;
        r->member_read = 0;
        if (r->lim.max_members && ++r->members > r->lim.max_members) {
            r->failed = true;
            return errf(err, errlen, SL_PLUG_ELIMIT, "%s %s: more than %" PRIu64 " members (max_members)", LABEL,
                        r->name, r->lim.max_members);
        }
        rc = check_totals(r, err, errlen);
        if (rc != SL_PLUG_OK)
            return rc;
        if (archive_entry_filetype(r->ae) == AE_IFREG || (r->flags & SL_FMT_R_ALL))
            break;
    }
    e->name = archive_entry_pathname(r->ae);
    if (e->name == NULL) {
        r->failed = true;
        return errf(err, errlen, SL_PLUG_EFORMAT, "%s %s: member without a readable name", LABEL, r->name);
    }
    e->name_len = strlen(e->name);
    e->size = archive_entry_size_is_set(r->ae) ? (int64_t)archive_entry_size(r->ae) : -1;
    e->mtime = (int64_t)archive_entry_mtime(r->ae);
    e->mode = (uint32_t)archive_entry_perm(r->ae) & 07777;
    e->type = archive_entry_filetype(r->ae) == AE_IFREG ? SL_FMT_T_REG : SL_FMT_T_OTHER;
    e->flags = e->type == SL_FMT_T_REG ? SL_FMT_E_REGULAR : 0;
    e->data_offset = -1; /* compressed: no byte offsets */
    e->ordinal = r->members ? r->members - 1 : 0;
    if (r->lim.max_member_size && e->size > 0 && (uint64_t)e->size > r->lim.max_member_size) {
        r->failed = true;
        return errf(err, errlen, SL_PLUG_ELIMIT, "%s %s: member \"%.200s\" declares %" PRId64 " bytes, over the "
                    "limit of %" PRIu64 " (max_member_size)", LABEL, r->name, e->name, e->size,
                    r->lim.max_member_size);
    }
    return SL_PLUG_OK;
}

/* ---------------------------------------------------------------- writer */

struct zst_writer {
    struct zst_state *st;
    struct sl_io io;
    struct archive *a;
    struct archive_entry *ae;
    int64_t declared, written;
    bool in_entry, finished, abandoned, failed;
};

static la_ssize_t write_cb(struct archive *a, void *ud, const void *buf, size_t n)
{
    struct zst_writer *w = ud;

    if (w->abandoned)
        return (la_ssize_t)n; /* closing without finish: drop the trailer */
    if (w->io.write(w->io.ctx, buf, n) != (int64_t)n) {
        archive_set_error(a, EIO, "write callback failed");
        return -1;
    }
    return (la_ssize_t)n;
}

static void writer_close(void *h)
{
    struct zst_writer *w = h;

    if (w == NULL)
        return;
    w->abandoned = !w->finished;
    if (w->a != NULL)
        archive_write_free(w->a);
    if (w->ae != NULL)
        archive_entry_free(w->ae);
    host->free(w);
}

static int writer_open(void *state, const struct sl_io *io, uint32_t flags, void **out, char *err, size_t errlen)
{
    struct zst_writer *w;
    locale_t saved;
    int rc = SL_PLUG_OK;

    *out = NULL;
    if (io == NULL || io->write == NULL)
        return errf(err, errlen, SL_PLUG_EINVAL, "%s: writer needs an sl_io with write", LABEL);
    if (flags & SL_FMT_W_APPEND)
        return errf(err, errlen, SL_PLUG_EUNSUPP, "%s %s: cannot append in place; re-create the shard", LABEL,
                    ioname(io));
    w = host->calloc(1, sizeof(*w));
    if (w == NULL)
        return errf(err, errlen, SL_PLUG_ENOMEM, "%s: out of memory", LABEL);
    w->st = state;
    memcpy(&w->io, io, io->struct_size < sizeof(w->io) ? io->struct_size : sizeof(w->io));
    saved = enter(w->st);
    w->a = archive_write_new();
    w->ae = archive_entry_new();
    if (w->a == NULL || w->ae == NULL || archive_write_add_filter_zstd(w->a) != ARCHIVE_OK ||
        archive_write_set_format_pax_restricted(w->a) != ARCHIVE_OK ||
        archive_write_set_bytes_in_last_block(w->a, 1) != ARCHIVE_OK ||
        archive_write_open(w->a, w, NULL, write_cb, NULL) != ARCHIVE_OK)
        rc = errf(err, errlen, SL_PLUG_EINTERNAL, "%s %s: cannot start the archive (%s)", LABEL, ioname(io),
                  w->a ? archive_error_string(w->a) : "out of memory");
    leave(saved);
    if (rc != SL_PLUG_OK)
        writer_close(w);
    else
        *out = w;
    return rc;
}

static int end_member(struct zst_writer *w, char *err, size_t errlen)
{
    if (!w->in_entry)
        return SL_PLUG_OK;
    if (w->written != w->declared) {
        w->failed = true;
        return errf(err, errlen, SL_PLUG_EINVAL, "%s %s: member has only %" PRId64 " of the declared %" PRId64
                    " bytes; write the rest first", LABEL, ioname(&w->io), w->written, w->declared);
    }
    w->in_entry = false;
    return archive_write_finish_entry(w->a) == ARCHIVE_OK ? SL_PLUG_OK : SL_PLUG_EIO;
}

static int writer_add(void *h, const struct sl_fmt_entry *e, char *err, size_t errlen)
{
    struct zst_writer *w = h;
    const char *why = sl_plugin_member_name_check(e->name, e->name_len);
    char *name;
    locale_t saved;
    int rc, ar;

    if (w->failed || w->finished)
        return errf(err, errlen, SL_PLUG_ESTATE, "%s %s: writer is finished or failed", LABEL, ioname(&w->io));
    if (why != NULL || e->size < 0)
        return errf(err, errlen, SL_PLUG_EINVAL, "%s %s: refusing member \"%.*s\": %s", LABEL, ioname(&w->io),
                    (int)(e->name_len > 200 ? 200 : e->name_len), e->name ? e->name : "",
                    why ? why : "size must be known");
    rc = end_member(w, err, errlen);
    if (rc != SL_PLUG_OK)
        return rc;
    name = host->alloc(e->name_len + 1);
    if (name == NULL)
        return errf(err, errlen, SL_PLUG_ENOMEM, "%s: out of memory", LABEL);
    memcpy(name, e->name, e->name_len);
    name[e->name_len] = '\0';
    saved = enter(w->st);
    archive_entry_clear(w->ae);
    archive_entry_copy_pathname(w->ae, name);
    archive_entry_set_filetype(w->ae, AE_IFREG);
    archive_entry_set_perm(w->ae, (e->mode & 07777) ? (e->mode & 07777) : 0644);
    archive_entry_set_size(w->ae, e->size);
    archive_entry_set_mtime(w->ae, (time_t)e->mtime, 0);
    ar = archive_write_header(w->a, w->ae);
    leave(saved);
    host->free(name);
    if (ar != ARCHIVE_OK && ar != ARCHIVE_WARN) {
        w->failed = true;
        return errf(err, errlen, SL_PLUG_EIO, "%s %s: writing a header failed (%s)", LABEL, ioname(&w->io),
                    archive_error_string(w->a));
    }
    w->in_entry = true;
    w->declared = e->size;
    w->written = 0;
    return SL_PLUG_OK;
}

static int writer_write(void *h, const void *buf, size_t n, char *err, size_t errlen)
{
    struct zst_writer *w = h;
    const char *p = buf;

    if (!w->in_entry || w->failed || (uint64_t)n > (uint64_t)(w->declared - w->written))
        return errf(err, errlen, SL_PLUG_EINVAL, "%s %s: write outside a member or past its declared size", LABEL,
                    ioname(&w->io));
    while (n > 0) {
        la_ssize_t r = archive_write_data(w->a, p, n);
        if (r <= 0) {
            w->failed = true;
            return errf(err, errlen, SL_PLUG_EIO, "%s %s: writing data failed (%s)", LABEL, ioname(&w->io),
                        archive_error_string(w->a));
        }
        p += r;
        n -= (size_t)r;
        w->written += r;
    }
    return SL_PLUG_OK;
}

static int writer_finish(void *h, char *err, size_t errlen)
{
    struct zst_writer *w = h;
    int rc;

    if (w->failed || w->finished)
        return errf(err, errlen, SL_PLUG_ESTATE, "%s %s: writer is finished or failed", LABEL, ioname(&w->io));
    rc = end_member(w, err, errlen);
    if (rc != SL_PLUG_OK)
        return rc;
    if (archive_write_close(w->a) != ARCHIVE_OK) {
        w->failed = true;
        return errf(err, errlen, SL_PLUG_EIO, "%s %s: finishing the archive failed (%s)", LABEL, ioname(&w->io),
                    archive_error_string(w->a));
    }
    w->finished = true;
    return SL_PLUG_OK;
}

/* ------------------------------------------------------------- detection */

static int detect(void *state, const void *head, size_t n)
{
    const unsigned char *p = head;

    (void)state;
    /* zstd frame magic 28 b5 2f fd */
    return n >= 4 && p[0] == 0x28 && p[1] == 0xb5 && p[2] == 0x2f && p[3] == 0xfd ? 60 : 0;
}

/* ------------------------------------------------------------ descriptor */

static int plug_init(const struct sl_host_api *h, void **state, char *err, size_t errlen)
{
    struct zst_state *st = h->calloc(1, sizeof(*st));

    if (st == NULL)
        return errf(err, errlen, SL_PLUG_ENOMEM, "tar.zst plugin: out of memory");
    st->utf8 = newlocale(LC_CTYPE_MASK, "C.UTF-8", (locale_t)0);
    *state = st;
    return SL_PLUG_OK;
}

static void plug_fini(void *state)
{
    struct zst_state *st = state;

    if (st->utf8 != (locale_t)0)
        freelocale(st->utf8);
    host->free(st);
}

static const char *const extensions[] = { ".tar.zst", ".tzst", NULL };

static const struct sl_format_ops ops = {
    SL_ABI_INIT(struct sl_format_ops),
    .extensions = extensions,
    .mime = "application/zstd",
    .caps = SL_FMT_CAP_READ | SL_FMT_CAP_WRITE,
    .detect = detect,
    .reader_open = reader_open,
    .reader_next = reader_next,
    .reader_read = reader_read,
    .reader_skip = reader_skip,
    .reader_close = reader_close,
    .writer_open = writer_open,
    .writer_add = writer_add,
    .writer_write = writer_write,
    .writer_finish = writer_finish,
    .writer_close = writer_close,
    /* no append_offset / index: a compressed tar cannot be appended in
     * place and has no byte offsets */
};

static const struct sl_plugin plugin = {
    SL_ABI_INIT(struct sl_plugin),
    .kind = SL_PLUGIN_FORMAT,
    .name = "tar.zst",
    .version = "1.0.0",
    .description = "zstd-compressed tar (example out-of-tree plugin)",
    .init = plug_init,
    .fini = plug_fini,
    .format = &ops,
};

SL_PLUGIN_EXPORT const struct sl_plugin *sl_plugin_entry(const struct sl_host_api *h, char *err, size_t errlen)
{
    if (h == NULL || h->abi_major != SL_PLUGIN_ABI_MAJOR || !SL_ABI_HAS(h, struct sl_host_api, scratch)) {
        errf(err, errlen, SL_PLUG_EINVAL, "tar.zst plugin: the server's host API is too old; upgrade the server");
        return NULL;
    }
    host = h;
    return &plugin;
}
