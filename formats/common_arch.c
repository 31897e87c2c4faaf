/* SPDX-License-Identifier: MIT
 * common_arch.c: the libarchive-backed reader and writer shared by the tar,
 * tgz, tar.lz4 and zip plugins: callback plumbing, limits (zip-bomb
 * defence), error messages, format detection. Streaming only: memory per
 * handle is constant (a 64 KiB input buffer plus libarchive's own state).
 * Calls down into common_tar.c (fmt_tar_header_valid, for detection) and
 * common_util.c (errors, io names, allocation); neither calls back.
 *
 * Locale: libarchive converts member names between the archive's charset
 * (UTF-8 in pax and in zip with the UTF-8 flag) and the current locale. The
 * server runs in the "C" locale, where that conversion fails for any
 * non-ASCII name (zip names come back NULL, written zip names get mangled).
 * Every operation therefore switches the calling thread to a UTF-8 LC_CTYPE
 * with uselocale() for its duration and switches back before returning; the
 * process locale is never touched.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <inttypes.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common_fmt.h"

#define FMT_INBUF (64 * 1024)
#define FMT_RATIO_MIN (1024 * 1024) /* ratio checks start past 1 MiB uncompressed */

/* ------------------------------------------------------------------------ */
/* Plugin state, host check, locale                                         */
/* ------------------------------------------------------------------------ */

bool fmt_host_ok(const struct sl_host_api *host, const char *name, char *err, size_t errlen)
{
    if (host == NULL || host->abi_major != SL_PLUGIN_ABI_MAJOR || !SL_ABI_HAS(host, struct sl_host_api, scratch) ||
        host->alloc == NULL || host->calloc == NULL || host->realloc == NULL || host->free == NULL ||
        host->log == NULL || host->scratch == NULL) {
        fmt_errf(err, errlen, SL_PLUG_EINVAL, "%s plugin: the server's host API is too old or incomplete "
                 "(ABI %u.%u); upgrade the server or rebuild the plugin", name, host ? host->abi_major : 0,
                 host ? host->abi_minor : 0);
        return false;
    }
    return true;
}

int fmt_init_kind(const struct sl_host_api *host, const struct fmt_kind *kind, void **state, char *err,
                  size_t errlen)
{
    static const char *const utf8_locales[] = { "C.UTF-8", "C.utf8", "en_US.UTF-8", "en_US.utf8", NULL };
    struct fmt_state *st;
    locale_t loc = (locale_t)0;
    int i;

    st = host->calloc(1, sizeof(*st));
    if (st == NULL)
        return fmt_errf(err, errlen, SL_PLUG_ENOMEM, "%s plugin: out of memory at init", kind->name);
    st->host = host;
    st->kind = kind;
    for (i = 0; utf8_locales[i] != NULL && loc == (locale_t)0; i++)
        loc = newlocale(LC_CTYPE_MASK, utf8_locales[i], (locale_t)0);
    st->locale = (void *)loc;
    if (loc == (locale_t)0)
        host->log(SL_PLUG_LOG_WARN, "%s plugin: no UTF-8 locale (C.UTF-8) on this system; non-ASCII member names "
                  "in zip and pax archives may not be read or written correctly (install locales)", kind->name);
    *state = st;
    return SL_PLUG_OK;
}

void fmt_fini(void *state)
{
    struct fmt_state *st = state;

    if (st == NULL)
        return;
    if (st->locale != NULL)
        freelocale((locale_t)st->locale);
    st->host->free(st);
}

void *fmt_locale_enter(const struct fmt_state *st)
{
    if (st == NULL || st->locale == NULL)
        return NULL;
    return (void *)uselocale((locale_t)st->locale);
}

void fmt_locale_leave(void *saved)
{
    if (saved != NULL)
        uselocale((locale_t)saved);
}

static bool utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t i = 0;

    while (i < n) {
        unsigned c = p[i];
        size_t k;
        uint32_t cp;
        if (c < 0x80) {
            i++;
            continue;
        }
        if (c >= 0xc2 && c <= 0xdf) {
            k = 1;
            cp = c & 0x1f;
        } else if (c >= 0xe0 && c <= 0xef) {
            k = 2;
            cp = c & 0x0f;
        } else if (c >= 0xf0 && c <= 0xf4) {
            k = 3;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (i + k >= n)
            return false;
        for (size_t j = 1; j <= k; j++) {
            if ((p[i + j] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (p[i + j] & 0x3f);
        }
        if ((k == 2 && cp < 0x800) || (k == 3 && (cp < 0x10000 || cp > 0x10ffff)) || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += k + 1;
    }
    return true;
}

/* ------------------------------------------------------------------------ */
/* Reader                                                                   */
/* ------------------------------------------------------------------------ */

struct zip_cd {
    uint64_t members;
    int64_t off, size;            /* -1: not found */
};

struct fmt_reader;
static int zip_locate_cd(const struct fmt_state *st, const struct sl_io *io, const struct sl_fmt_limits *lim,
                         struct zip_cd *cd, char *err, size_t errlen);
static void zip_cd_sizes(struct fmt_reader *rd);

struct fmt_reader {
    const struct fmt_state *st;
    struct sl_io io;
    struct sl_fmt_limits lim;
    uint32_t flags;
    struct archive *a;
    struct archive_entry *ae;     /* current entry, owned by libarchive */
    unsigned char *inbuf;
    bool seekable;
    bool io_failed;               /* an sl_io callback failed */
    int failed;                   /* sticky error code, 0 = healthy */
    bool in_entry, entry_done;
    bool at_eof;                  /* libarchive refuses next_header after EOF */
    uint64_t members;             /* headers seen */
    uint64_t member_read;         /* data bytes of the current member read so far */
    uint64_t data_bytes;          /* data bytes read or discarded through us (zip) */
    uint64_t raw_in;              /* bytes delivered by io->read */
    /* zip read through the central directory (seekable): where it is, and a
     * cursor for finding each member's record (normally the next one) */
    int64_t cd_off, cd_size, cd_next;
    bool cd_usable;
    int64_t csize;                /* zip: current member's compressed size from the directory, -1 unknown */
    int64_t usize;                /* zip: its declared uncompressed size, -1 unknown */
    int64_t in0;                  /* compressed position where the current member's data starts */
    char *cur_name;               /* copy of the current name for messages */
    char errmsg[1024];            /* first failure, repeated on later calls */
};

static la_ssize_t rd_read_cb(struct archive *a, void *ud, const void **buf)
{
    struct fmt_reader *rd = ud;
    int64_t n = rd->io.read(rd->io.ctx, rd->inbuf, FMT_INBUF);

    if (n < 0 || n > FMT_INBUF) {
        rd->io_failed = true;
        archive_set_error(a, EIO, "read callback failed");
        return -1;
    }
    rd->raw_in += (uint64_t)n;
    *buf = rd->inbuf;
    return (la_ssize_t)n;
}

static la_int64_t rd_seek_cb(struct archive *a, void *ud, la_int64_t off, int whence)
{
    struct fmt_reader *rd = ud;
    int w = whence == SEEK_SET ? SL_SEEK_SET : whence == SEEK_CUR ? SL_SEEK_CUR : SL_SEEK_END;
    int64_t r = rd->io.seek(rd->io.ctx, off, w);

    if (r < 0) {
        rd->io_failed = true;
        archive_set_error(a, EIO, "seek callback failed");
        return ARCHIVE_FATAL;
    }
    return r;
}

static la_int64_t rd_skip_cb(struct archive *a, void *ud, la_int64_t request)
{
    struct fmt_reader *rd = ud;
    int64_t cur, end;

    if (request <= 0)
        return 0;
    cur = rd->io.seek(rd->io.ctx, 0, SL_SEEK_CUR);
    if (cur < 0)
        return 0; /* libarchive falls back to reading */
    end = rd->io.seek(rd->io.ctx, request, SL_SEEK_CUR);
    if (end < 0) {
        rd->io_failed = true;
        archive_set_error(a, EIO, "seek callback failed");
        return ARCHIVE_FATAL;
    }
    return end - cur;
}

/* Record a failure: the message names the shard, the member and a remedy. */
static int rd_fail(struct fmt_reader *rd, int code, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int rd_fail(struct fmt_reader *rd, int code, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    char what[384];

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (rd->cur_name != NULL)
        snprintf(rd->errmsg, sizeof(rd->errmsg), "%s %s: member \"%.200s\" (#%" PRIu64 "): %s", rd->st->kind->label,
                 fmt_ioname(&rd->io), rd->cur_name, rd->members, what);
    else
        snprintf(rd->errmsg, sizeof(rd->errmsg), "%s %s: %s", rd->st->kind->label, fmt_ioname(&rd->io), what);
    rd->failed = code;
    return fmt_errf(err, errlen, code, "%s", rd->errmsg);
}

/* Map a libarchive failure to a code and message. */
static int rd_fail_arch(struct fmt_reader *rd, const char *doing, char *err, size_t errlen)
{
    const char *msg = archive_error_string(rd->a);

    if (msg == NULL)
        msg = "unknown error";
    if (rd->io_failed)
        return rd_fail(rd, SL_PLUG_EIO, err, errlen, "%s: reading the shard failed (%s); check the disk or retry",
                       doing, msg);
    if (archive_errno(rd->a) == ENOMEM)
        return rd_fail(rd, SL_PLUG_ENOMEM, err, errlen, "%s: out of memory (%s)", doing, msg);
    return rd_fail(rd, SL_PLUG_EFORMAT, err, errlen,
                   "%s: corrupt or truncated archive (libarchive: %s); re-create or re-upload the shard", doing, msg);
}

/* Compressed bytes the decoder has consumed so far: the position of the
 * bottom (client) filter, which advances only by what was used, unlike
 * raw_in, which also counts read-ahead and (zip) the central directory. */
static uint64_t rd_consumed(struct fmt_reader *rd)
{
    int64_t c = archive_filter_bytes(rd->a, -1);

    return c > 0 ? (uint64_t)c : rd->raw_in;
}

/* Enforce max_total_size and max_ratio on what was decompressed so far.
 * Compressed tar: the whole stream's ratio (members cannot be told apart in
 * it). Zip: each member's own ratio, against its compressed size from the
 * central directory when known, else the compressed bytes it consumed. */
static int rd_check_totals(struct fmt_reader *rd, char *err, size_t errlen)
{
    const struct fmt_kind *k = rd->st->kind;
    uint64_t out = rd->data_bytes, in;
    int64_t pos = archive_filter_bytes(rd->a, 0);

    if (pos > 0 && (uint64_t)pos > out && k->format == FMT_FORMAT_TAR)
        out = (uint64_t)pos;
    if (rd->lim.max_total_size && out > rd->lim.max_total_size)
        return rd_fail(rd, SL_PLUG_ELIMIT, err, errlen,
                       "%" PRIu64 " bytes unpacked, over the limit of %" PRIu64 " bytes (max_total_size); "
                       "refusing what looks like an archive bomb (raise the limit if the shard is trusted)",
                       out, rd->lim.max_total_size);
    if (!rd->lim.max_ratio)
        return SL_PLUG_OK;
    if (k->format == FMT_FORMAT_ZIP) {
        out = rd->member_read;
        if (rd->csize > 0) {
            in = (uint64_t)rd->csize;
        } else {
            uint64_t c = rd_consumed(rd);
            in = rd->in0 >= 0 && c > (uint64_t)rd->in0 ? c - (uint64_t)rd->in0 : 0;
        }
    } else if (k->filter != FMT_FILTER_NONE) {
        in = rd_consumed(rd);
    } else {
        return SL_PLUG_OK; /* plain tar is not compressed: its ratio is 1 however much is skipped */
    }
    if (out > FMT_RATIO_MIN && out / (in ? in : 1) > rd->lim.max_ratio)
        return rd_fail(rd, SL_PLUG_ELIMIT, err, errlen,
                       "%" PRIu64 " bytes unpacked from %" PRIu64 " compressed bytes, over the ratio limit of %u:1 "
                       "(max_ratio); refusing what looks like an archive bomb", out, in, rd->lim.max_ratio);
    return SL_PLUG_OK;
}

/* Zip, before the first byte of a member is inflated: refuse a member whose
 * central-directory sizes already exceed the ratio limit, so that the caller
 * learns it before it starts answering (a 413, not a cut-off body). */
static int rd_check_declared(struct fmt_reader *rd, char *err, size_t errlen)
{
    uint64_t u, c;

    if (!rd->lim.max_ratio || rd->csize < 0 || rd->usize < 0)
        return SL_PLUG_OK;
    u = (uint64_t)rd->usize;
    c = rd->csize > 0 ? (uint64_t)rd->csize : 1;
    if (u > FMT_RATIO_MIN && u / c > rd->lim.max_ratio)
        return rd_fail(rd, SL_PLUG_ELIMIT, err, errlen,
                       "the central directory declares %" PRIu64 " bytes from %" PRIu64 " compressed bytes (%" PRIu64
                       ":1), over the ratio limit of %u:1 (max_ratio); refusing what looks like an archive bomb",
                       u, (uint64_t)rd->csize, u / c, rd->lim.max_ratio);
    return SL_PLUG_OK;
}

int fmt_reader_open(void *state, const struct sl_io *io, const struct sl_fmt_limits *lim, uint32_t flags,
                    void **out, char *err, size_t errlen)
{
    struct fmt_state *st = state;
    const struct fmt_kind *k = st->kind;
    struct fmt_reader *rd;
    void *loc;
    int r, rc = SL_PLUG_OK;

    *out = NULL;
    if (io == NULL || io->read == NULL || io->struct_size < offsetof(struct sl_io, reserved))
        return fmt_errf(err, errlen, SL_PLUG_EINVAL, "%s %s: reader needs an sl_io with a read callback", k->label,
                        fmt_ioname(io));
    struct zip_cd cd = { 0, -1, -1 };
    if (k->format == FMT_FORMAT_ZIP && io->seek != NULL) {
        rc = zip_locate_cd(st, io, lim, &cd, err, errlen);
        if (rc != SL_PLUG_OK)
            return rc;
    }
    rd = fmt_alloc(st, sizeof(*rd));
    if (rd == NULL)
        return fmt_errf(err, errlen, SL_PLUG_ENOMEM, "%s %s: out of memory", k->label, fmt_ioname(io));
    rd->st = st;
    rd->cd_off = rd->cd_next = cd.off;
    rd->cd_size = cd.size;
    rd->cd_usable = cd.off >= 0 && cd.size > 0;
    rd->csize = rd->usize = rd->in0 = -1;
    memcpy(&rd->io, io, io->struct_size < sizeof(rd->io) ? io->struct_size : sizeof(rd->io));
    if (lim != NULL)
        memcpy(&rd->lim, lim, lim->struct_size < sizeof(rd->lim) ? lim->struct_size : sizeof(rd->lim));
    rd->flags = flags;
    rd->seekable = io->seek != NULL;
    rd->inbuf = st->host->alloc(FMT_INBUF);
    loc = fmt_locale_enter(st);
    rd->a = archive_read_new();
    if (rd->inbuf == NULL || rd->a == NULL) {
        rc = fmt_errf(err, errlen, SL_PLUG_ENOMEM, "%s %s: out of memory", k->label, fmt_ioname(io));
        goto fail;
    }
    if (k->format == FMT_FORMAT_ZIP && cd.members == 0 && cd.off == 0 && cd.size == 0) {
        /* an empty zip, only the end record (22 bytes): what a writer makes
         * of zero members, and libarchive does not recognise it */
        rd->at_eof = true;
        fmt_locale_leave(loc);
        *out = rd;
        return SL_PLUG_OK;
    }
    switch (k->filter) {
    case FMT_FILTER_GZIP: archive_read_support_filter_gzip(rd->a); break;
    case FMT_FILTER_LZ4: archive_read_support_filter_lz4(rd->a); break;
    case FMT_FILTER_NONE: break;
    }
    if (k->format == FMT_FORMAT_TAR) {
        archive_read_support_format_tar(rd->a);
        archive_read_support_format_empty(rd->a);
    } else if (rd->seekable) {
        archive_read_support_format_zip_seekable(rd->a);
    } else {
        archive_read_support_format_zip_streamable(rd->a);
    }
    archive_read_set_callback_data(rd->a, rd);
    archive_read_set_read_callback(rd->a, rd_read_cb);
    if (rd->seekable) {
        archive_read_set_seek_callback(rd->a, rd_seek_cb);
        if (k->filter == FMT_FILTER_NONE)
            archive_read_set_skip_callback(rd->a, rd_skip_cb);
    }
    r = archive_read_open1(rd->a);
    if (r != ARCHIVE_OK) {
        rc = rd_fail_arch(rd, "opening", err, errlen);
        if (rc == SL_PLUG_EFORMAT)
            rc = rd_fail(rd, SL_PLUG_EFORMAT, err, errlen,
                         "not a readable %s (libarchive: %s); check the object's extension or pass archmime", k->label,
                         archive_error_string(rd->a) ? archive_error_string(rd->a) : "unknown error");
        goto fail;
    }
    /* A registered filter that did not bid leaves the data unfiltered: make
     * sure the compressed formats really are compressed. */
    if (k->filter != FMT_FILTER_NONE) {
        int want = k->filter == FMT_FILTER_GZIP ? ARCHIVE_FILTER_GZIP : ARCHIVE_FILTER_LZ4;
        if (archive_filter_code(rd->a, 0) != want) {
            rc = rd_fail(rd, SL_PLUG_EFORMAT, err, errlen, "not %s-compressed; check the object's extension or pass "
                         "archmime", k->filter == FMT_FILTER_GZIP ? "gzip" : "lz4");
            goto fail;
        }
    }
    fmt_locale_leave(loc);
    *out = rd;
    return SL_PLUG_OK;
fail:
    fmt_locale_leave(loc);
    fmt_reader_close(rd);
    return rc;
}

/* Read and throw away the rest of the current member through the counting
 * path, so that limits apply to what a skip decompresses. */
static int rd_discard(struct fmt_reader *rd, char *err, size_t errlen)
{
    char *buf = rd->st->host->scratch(FMT_INBUF);
    int64_t n;

    if (buf == NULL)
        return rd_fail(rd, SL_PLUG_ENOMEM, err, errlen, "out of memory skipping data");
    do {
        n = fmt_reader_read(rd, buf, FMT_INBUF, err, errlen);
    } while (n > 0);
    return n < 0 ? (int)n : SL_PLUG_OK;
}

static int rd_skip_current(struct fmt_reader *rd, char *err, size_t errlen)
{
    const struct fmt_kind *k = rd->st->kind;
    bool cheap;

    if (!rd->in_entry || rd->entry_done)
        return SL_PLUG_OK;
    /* Cheap skips: plain tar (seek), zip member with a known compressed size
     * (libarchive skips compressed bytes without inflating). Everything
     * else is decompressed under our limits. */
    cheap = (k->format == FMT_FORMAT_TAR && k->filter == FMT_FILTER_NONE) ||
            (k->format == FMT_FORMAT_ZIP && archive_entry_size_is_set(rd->ae) && rd->seekable);
    if (cheap) {
        if (archive_read_data_skip(rd->a) != ARCHIVE_OK)
            return rd_fail_arch(rd, "skipping member data", err, errlen);
        rd->entry_done = true;
        return rd_check_totals(rd, err, errlen);
    }
    return rd_discard(rd, err, errlen);
}

static uint32_t ae_type(struct archive_entry *ae)
{
    /* A pax hard link may carry data and then looks like a regular file;
     * it is still a link (the tar index skips it too). */
    if (archive_entry_hardlink(ae) != NULL)
        return SL_FMT_T_HARDLINK;
    switch (archive_entry_filetype(ae)) {
    case AE_IFREG: return SL_FMT_T_REG;
    case AE_IFDIR: return SL_FMT_T_DIR;
    case AE_IFLNK: return SL_FMT_T_SYMLINK;
    default: return SL_FMT_T_OTHER;
    }
}

int fmt_reader_next(void *h, struct sl_fmt_entry *e, char *err, size_t errlen)
{
    struct fmt_reader *rd = h;
    const struct fmt_kind *k;
    const char *name;
    void *loc;
    int r, rc = SL_PLUG_OK;

    if (rd == NULL || e == NULL || !SL_ABI_HAS(e, struct sl_fmt_entry, ordinal))
        return fmt_errf(err, errlen, SL_PLUG_EINVAL, "reader_next: bad arguments (entry not initialised with "
                        "SL_ABI_SET?)");
    if (rd->failed)
        return fmt_errf(err, errlen, SL_PLUG_ESTATE, "%s (reader already failed)", rd->errmsg);
    if (rd->at_eof)
        return SL_PLUG_EOF;
    k = rd->st->kind;
    loc = fmt_locale_enter(rd->st);
    rc = rd_skip_current(rd, err, errlen);
    if (rc != SL_PLUG_OK)
        goto out;
    for (;;) {
        uint32_t type;
        rd->in_entry = rd->entry_done = false;
        rd->member_read = 0;
        rd->csize = rd->usize = rd->in0 = -1;
        fmt_free(rd->st, rd->cur_name);
        rd->cur_name = NULL;
        r = archive_read_next_header(rd->a, &rd->ae);
        if (r == ARCHIVE_EOF) {
            rd->at_eof = true;
            rc = SL_PLUG_EOF;
            goto out;
        }
        if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
            rc = rd_fail_arch(rd, rd->members ? "reading the next member header" : "reading the first header",
                              err, errlen);
            goto out;
        }
        rd->members++;
        name = archive_entry_pathname(rd->ae);
        if (name == NULL)
            name = archive_entry_pathname_utf8(rd->ae);
        if (name != NULL) {
            size_t len = strlen(name);
            rd->cur_name = rd->st->host->alloc(len + 1);
            if (rd->cur_name == NULL) {
                rc = rd_fail(rd, SL_PLUG_ENOMEM, err, errlen, "out of memory");
                goto out;
            }
            memcpy(rd->cur_name, name, len + 1);
        }
        if (rd->lim.max_members && rd->members > rd->lim.max_members) {
            rc = rd_fail(rd, SL_PLUG_ELIMIT, err, errlen,
                         "more than %" PRIu64 " members (max_members); refusing the archive (raise the limit if the "
                         "shard is trusted)", rd->lim.max_members);
            goto out;
        }
        rc = rd_check_totals(rd, err, errlen);
        if (rc != SL_PLUG_OK)
            goto out;
        if (rd->cur_name == NULL) {
            rc = rd_fail(rd, SL_PLUG_EFORMAT, err, errlen, "member has no readable name; re-create the shard");
            goto out;
        }
        rd->in_entry = true;
        type = ae_type(rd->ae);
        if (type != SL_FMT_T_REG && !(rd->flags & SL_FMT_R_ALL)) {
            rc = rd_skip_current(rd, err, errlen);
            if (rc != SL_PLUG_OK)
                goto out;
            continue;
        }
        e->name = rd->cur_name;
        e->name_len = strlen(rd->cur_name);
        e->type = type;
        e->flags = type == SL_FMT_T_REG ? SL_FMT_E_REGULAR : 0;
        e->mode = (uint32_t)archive_entry_perm(rd->ae) & 07777;
        e->mtime = (int64_t)archive_entry_mtime(rd->ae);
        e->ordinal = rd->members - 1;
        e->data_offset = -1;
        if (archive_entry_size_is_set(rd->ae)) {
            e->size = (int64_t)archive_entry_size(rd->ae);
        } else {
            e->size = -1;
            e->flags |= SL_FMT_E_SIZE_UNKNOWN;
        }
        if (archive_entry_sparse_count(rd->ae) > 0)
            e->flags |= SL_FMT_E_SPARSE;
        else if (k->format == FMT_FORMAT_TAR && k->filter == FMT_FILTER_NONE)
            e->data_offset = (int64_t)archive_filter_bytes(rd->a, 0);
        if (k->format == FMT_FORMAT_ZIP) {
            int64_t c = archive_filter_bytes(rd->a, -1);
            rd->in0 = c >= 0 ? c : -1;
            if (rd->cd_usable && type == SL_FMT_T_REG)
                zip_cd_sizes(rd);
        }
        if (rd->lim.max_member_size && e->size > 0 && (uint64_t)e->size > rd->lim.max_member_size) {
            rc = rd_fail(rd, SL_PLUG_ELIMIT, err, errlen,
                         "declared size %" PRId64 " bytes is over the limit of %" PRIu64 " bytes (max_member_size)",
                         e->size, rd->lim.max_member_size);
            goto out;
        }
        break;
    }
out:
    fmt_locale_leave(loc);
    return rc;
}

int64_t fmt_reader_read(void *h, void *buf, size_t n, char *err, size_t errlen)
{
    struct fmt_reader *rd = h;
    la_ssize_t got;
    void *loc;
    int rc;

    if (rd == NULL || (buf == NULL && n > 0))
        return fmt_errf(err, errlen, SL_PLUG_EINVAL, "reader_read: bad arguments");
    if (rd->failed)
        return fmt_errf(err, errlen, SL_PLUG_ESTATE, "%s (reader already failed)", rd->errmsg);
    if (!rd->in_entry)
        return fmt_errf(err, errlen, SL_PLUG_ESTATE, "%s %s: reader_read before reader_next", rd->st->kind->label,
                        fmt_ioname(&rd->io));
    if (rd->entry_done || n == 0)
        return 0;
    if (rd->member_read == 0 && rd->st->kind->format == FMT_FORMAT_ZIP) {
        rc = rd_check_declared(rd, err, errlen);
        if (rc != SL_PLUG_OK)
            return rc;
    }
    loc = fmt_locale_enter(rd->st);
    got = archive_read_data(rd->a, buf, n);
    if (got < 0) {
        rc = rd_fail_arch(rd, "reading member data", err, errlen);
        fmt_locale_leave(loc);
        return rc;
    }
    fmt_locale_leave(loc);
    if ((size_t)got > n)
        return rd_fail(rd, SL_PLUG_EINTERNAL, err, errlen, "libarchive returned more data than asked for");
    if (got == 0) {
        rd->entry_done = true;
        return 0;
    }
    rd->member_read += (uint64_t)got;
    rd->data_bytes += (uint64_t)got;
    if (rd->lim.max_member_size && rd->member_read > rd->lim.max_member_size)
        return rd_fail(rd, SL_PLUG_ELIMIT, err, errlen,
                       "more than %" PRIu64 " bytes of data (max_member_size); refusing what looks like an archive "
                       "bomb", rd->lim.max_member_size);
    rc = rd_check_totals(rd, err, errlen);
    if (rc != SL_PLUG_OK)
        return rc;
    return (int64_t)got;
}

int fmt_reader_skip(void *h, char *err, size_t errlen)
{
    struct fmt_reader *rd = h;
    void *loc;
    int rc;

    if (rd == NULL)
        return fmt_errf(err, errlen, SL_PLUG_EINVAL, "reader_skip: bad arguments");
    if (rd->failed)
        return fmt_errf(err, errlen, SL_PLUG_ESTATE, "%s (reader already failed)", rd->errmsg);
    loc = fmt_locale_enter(rd->st);
    rc = rd_skip_current(rd, err, errlen);
    fmt_locale_leave(loc);
    return rc;
}

void fmt_reader_close(void *h)
{
    struct fmt_reader *rd = h;
    void *loc;

    if (rd == NULL)
        return;
    loc = fmt_locale_enter(rd->st);
    if (rd->a != NULL)
        archive_read_free(rd->a);
    fmt_locale_leave(loc);
    fmt_free(rd->st, rd->inbuf);
    fmt_free(rd->st, rd->cur_name);
    fmt_free(rd->st, rd);
}

/* ------------------------------------------------------------------------ */
/* Writer                                                                   */
/* ------------------------------------------------------------------------ */

struct fmt_writer {
    const struct fmt_state *st;
    struct sl_io io;
    uint32_t flags;
    struct archive *a;
    struct archive_entry *ae;
    bool io_failed, abandoned, finished;
    int failed;
    bool in_entry;
    int64_t declared, written;
    uint64_t members;
    char *cur_name;
    char errmsg[1024];
};

static la_ssize_t wr_write_cb(struct archive *a, void *ud, const void *buf, size_t n)
{
    struct fmt_writer *w = ud;
    int64_t r;

    if (w->abandoned)
        return (la_ssize_t)n;
    r = w->io.write(w->io.ctx, buf, n);
    if (r != (int64_t)n) {
        w->io_failed = true;
        archive_set_error(a, EIO, "write callback failed");
        return -1;
    }
    return (la_ssize_t)n;
}

static int wr_fail(struct fmt_writer *w, int code, char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int wr_fail(struct fmt_writer *w, int code, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    char what[384];

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (w->cur_name != NULL)
        snprintf(w->errmsg, sizeof(w->errmsg), "writing %s %s: member \"%.200s\": %s", w->st->kind->label,
                 fmt_ioname(&w->io), w->cur_name, what);
    else
        snprintf(w->errmsg, sizeof(w->errmsg), "writing %s %s: %s", w->st->kind->label, fmt_ioname(&w->io), what);
    w->failed = code;
    return fmt_errf(err, errlen, code, "%s", w->errmsg);
}

static int wr_fail_arch(struct fmt_writer *w, const char *doing, char *err, size_t errlen)
{
    const char *msg = archive_error_string(w->a);

    if (msg == NULL)
        msg = "unknown error";
    if (w->io_failed)
        return wr_fail(w, SL_PLUG_EIO, err, errlen, "%s: the output stream failed (%s); check space and retry",
                       doing, msg);
    return wr_fail(w, SL_PLUG_EINTERNAL, err, errlen, "%s: libarchive: %s", doing, msg);
}

int fmt_writer_open(void *state, const struct sl_io *io, uint32_t flags, void **out, char *err, size_t errlen)
{
    struct fmt_state *st = state;
    const struct fmt_kind *k = st->kind;
    struct fmt_writer *w;
    void *loc;
    int rc = SL_PLUG_OK;

    *out = NULL;
    if (io == NULL || io->write == NULL || io->struct_size < offsetof(struct sl_io, reserved))
        return fmt_errf(err, errlen, SL_PLUG_EINVAL, "writing %s %s: writer needs an sl_io with a write callback",
                        k->label, fmt_ioname(io));
    if ((flags & SL_FMT_W_APPEND) && !(k->format == FMT_FORMAT_TAR && k->filter == FMT_FILTER_NONE))
        return fmt_errf(err, errlen, SL_PLUG_EUNSUPP, "writing %s %s: this format cannot be appended to in place; "
                        "re-create the shard", k->label, fmt_ioname(io));
    w = fmt_alloc(st, sizeof(*w));
    if (w == NULL)
        return fmt_errf(err, errlen, SL_PLUG_ENOMEM, "writing %s %s: out of memory", k->label, fmt_ioname(io));
    w->st = st;
    memcpy(&w->io, io, io->struct_size < sizeof(w->io) ? io->struct_size : sizeof(w->io));
    w->flags = flags;
    loc = fmt_locale_enter(st);
    w->a = archive_write_new();
    w->ae = archive_entry_new();
    if (w->a == NULL || w->ae == NULL) {
        rc = wr_fail(w, SL_PLUG_ENOMEM, err, errlen, "out of memory");
        goto fail;
    }
    switch (k->filter) {
    case FMT_FILTER_GZIP:
        if (archive_write_add_filter_gzip(w->a) != ARCHIVE_OK)
            goto arch_fail;
        /* reproducible output: no timestamp in the gzip header */
        (void)archive_write_set_filter_option(w->a, "gzip", "timestamp", NULL);
        break;
    case FMT_FILTER_LZ4:
        if (archive_write_add_filter_lz4(w->a) != ARCHIVE_OK)
            goto arch_fail;
        /* 256 KiB blocks keep the compressor's memory small; the lz4 CLI reads
         * any block size. */
        (void)archive_write_set_filter_option(w->a, "lz4", "block-size", "5");
        break;
    case FMT_FILTER_NONE:
        break;
    }
    if (k->format == FMT_FORMAT_TAR) {
        if (archive_write_set_format_pax_restricted(w->a) != ARCHIVE_OK)
            goto arch_fail;
    } else {
        if (archive_write_set_format_zip(w->a) != ARCHIVE_OK)
            goto arch_fail;
        if (archive_write_set_format_option(w->a, "zip", "compression",
                                            (flags & SL_FMT_W_STORE) ? "store" : "deflate") != ARCHIVE_OK)
            goto arch_fail;
    }
    /* Pad the end only to the 512-byte block for compressed output and for
     * appends; a fresh plain tar keeps the customary 10 KiB record. */
    if (k->filter != FMT_FILTER_NONE || (flags & SL_FMT_W_APPEND) || k->format == FMT_FORMAT_ZIP)
        archive_write_set_bytes_in_last_block(w->a, 1);
    if (archive_write_open(w->a, w, NULL, wr_write_cb, NULL) != ARCHIVE_OK)
        goto arch_fail;
    fmt_locale_leave(loc);
    *out = w;
    return SL_PLUG_OK;
arch_fail:
    rc = wr_fail_arch(w, "starting the archive", err, errlen);
fail:
    fmt_locale_leave(loc);
    fmt_writer_close(w);
    return rc;
}

static int wr_end_member(struct fmt_writer *w, char *err, size_t errlen)
{
    if (!w->in_entry)
        return SL_PLUG_OK;
    if (w->written != w->declared)
        return wr_fail(w, SL_PLUG_EINVAL, err, errlen,
                       "only %" PRId64 " of the declared %" PRId64 " bytes were written; write the rest before "
                       "adding the next member or finishing", w->written, w->declared);
    if (archive_write_finish_entry(w->a) != ARCHIVE_OK)
        return wr_fail_arch(w, "finishing the member", err, errlen);
    w->in_entry = false;
    return SL_PLUG_OK;
}

int fmt_writer_add(void *h, const struct sl_fmt_entry *e, char *err, size_t errlen)
{
    struct fmt_writer *w = h;
    const char *why;
    void *loc;
    int r, rc;

    if (w == NULL || e == NULL || !SL_ABI_HAS(e, struct sl_fmt_entry, mode))
        return fmt_errf(err, errlen, SL_PLUG_EINVAL, "writer_add: bad arguments (entry not initialised with "
                        "SL_ABI_SET?)");
    if (w->failed || w->finished)
        return fmt_errf(err, errlen, SL_PLUG_ESTATE, "%s", w->failed ? w->errmsg : "writer_add after writer_finish");
    loc = fmt_locale_enter(w->st);
    rc = wr_end_member(w, err, errlen);
    if (rc != SL_PLUG_OK)
        goto out;
    fmt_free(w->st, w->cur_name);
    w->cur_name = NULL;
    why = sl_plugin_member_name_check(e->name, e->name_len);
    if (why != NULL) {
        rc = wr_fail(w, SL_PLUG_EINVAL, err, errlen, "refusing member name \"%.*s\": %s",
                     (int)(e->name_len > 200 ? 200 : e->name_len), e->name ? e->name : "", why);
        goto out;
    }
    w->cur_name = w->st->host->alloc(e->name_len + 1);
    if (w->cur_name == NULL) {
        rc = wr_fail(w, SL_PLUG_ENOMEM, err, errlen, "out of memory");
        goto out;
    }
    memcpy(w->cur_name, e->name, e->name_len);
    w->cur_name[e->name_len] = '\0';
    if (w->st->kind->format == FMT_FORMAT_ZIP && !utf8_valid(e->name, e->name_len)) {
        rc = wr_fail(w, SL_PLUG_EINVAL, err, errlen, "zip member names must be valid UTF-8; rename the object");
        goto out;
    }
    if (e->size < 0) {
        rc = wr_fail(w, SL_PLUG_EINVAL, err, errlen, "size %" PRId64 " is invalid: the size must be known up front",
                     e->size);
        goto out;
    }
    archive_entry_clear(w->ae);
    archive_entry_copy_pathname(w->ae, w->cur_name);
    archive_entry_set_filetype(w->ae, AE_IFREG);
    archive_entry_set_perm(w->ae, (e->mode & 07777) ? (e->mode & 07777) : 0644);
    archive_entry_set_size(w->ae, e->size);
    archive_entry_set_mtime(w->ae, (time_t)e->mtime, 0);
    r = archive_write_header(w->a, w->ae);
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
        rc = wr_fail_arch(w, "writing the member header", err, errlen);
        goto out;
    }
    w->in_entry = true;
    w->declared = e->size;
    w->written = 0;
    w->members++;
out:
    fmt_locale_leave(loc);
    return rc;
}

int fmt_writer_write(void *h, const void *buf, size_t n, char *err, size_t errlen)
{
    struct fmt_writer *w = h;
    const char *p = buf;
    void *loc;
    int rc = SL_PLUG_OK;

    if (w == NULL || (buf == NULL && n > 0))
        return fmt_errf(err, errlen, SL_PLUG_EINVAL, "writer_write: bad arguments");
    if (w->failed || w->finished)
        return fmt_errf(err, errlen, SL_PLUG_ESTATE, "%s", w->failed ? w->errmsg : "writer_write after writer_finish");
    if (!w->in_entry)
        return wr_fail(w, SL_PLUG_ESTATE, err, errlen, "writer_write before writer_add");
    if ((uint64_t)n > (uint64_t)(w->declared - w->written))
        return wr_fail(w, SL_PLUG_EINVAL, err, errlen,
                       "%zu more bytes would exceed the declared size of %" PRId64 " bytes (%" PRId64 " written)",
                       n, w->declared, w->written);
    loc = fmt_locale_enter(w->st);
    while (n > 0) {
        la_ssize_t r = archive_write_data(w->a, p, n);
        if (r <= 0) {
            rc = wr_fail_arch(w, "writing member data", err, errlen);
            break;
        }
        p += r;
        n -= (size_t)r;
        w->written += r;
    }
    fmt_locale_leave(loc);
    return rc;
}

int fmt_writer_finish(void *h, char *err, size_t errlen)
{
    struct fmt_writer *w = h;
    void *loc;
    int rc;

    if (w == NULL)
        return fmt_errf(err, errlen, SL_PLUG_EINVAL, "writer_finish: bad arguments");
    if (w->failed || w->finished)
        return fmt_errf(err, errlen, SL_PLUG_ESTATE, "%s", w->failed ? w->errmsg : "writer_finish called twice");
    loc = fmt_locale_enter(w->st);
    rc = wr_end_member(w, err, errlen);
    if (rc == SL_PLUG_OK) {
        fmt_free(w->st, w->cur_name);
        w->cur_name = NULL;
        if (archive_write_close(w->a) != ARCHIVE_OK)
            rc = wr_fail_arch(w, "finishing the archive", err, errlen);
        else
            w->finished = true;
    }
    fmt_locale_leave(loc);
    return rc;
}

void fmt_writer_close(void *h)
{
    struct fmt_writer *w = h;
    void *loc;

    if (w == NULL)
        return;
    /* Without a successful finish, libarchive's implicit close must not
     * append a trailer to a half-written archive. */
    if (!w->finished)
        w->abandoned = true;
    loc = fmt_locale_enter(w->st);
    if (w->a != NULL)
        archive_write_free(w->a);
    if (w->ae != NULL)
        archive_entry_free(w->ae);
    fmt_locale_leave(loc);
    fmt_free(w->st, w->cur_name);
    fmt_free(w->st, w);
}

/* ------------------------------------------------------------------------ */
/* Detection                                                                */
/* ------------------------------------------------------------------------ */

int fmt_detect_tar(const void *head, size_t n)
{
    const unsigned char *p = head;
    size_t i;

    if (n >= 512 && fmt_tar_header_valid(p))
        return memcmp(p + 257, "ustar", 5) == 0 ? 100 : 60;
    if (n >= 262 && n < 512 && memcmp(p + 257, "ustar", 5) == 0)
        return 90;
    if (n >= 1024) { /* an empty archive: nothing but the end marker */
        for (i = 0; i < 1024 && p[i] == 0; i++)
            ;
        if (i == 1024)
            return 20;
    }
    return 0;
}

int fmt_detect_zip(const void *head, size_t n)
{
    const unsigned char *p = head;

    if (n < 4 || p[0] != 'P' || p[1] != 'K')
        return 0;
    if ((p[2] == 3 && p[3] == 4) || (p[2] == 5 && p[3] == 6))
        return 90;
    if (p[2] == 7 && p[3] == 8) /* spanned-archive marker before the first local header */
        return 70;
    return 0;
}

/* A compressed tar: magic first, then a trial decode of the head to see
 * whether a tar header follows (95), else the magic alone (60). */
int fmt_detect_compressed_tar(const struct fmt_state *st, const void *head, size_t n)
{
    const unsigned char *p = head;
    struct archive *a;
    struct archive_entry *ae;
    int conf = 0, r;
    void *loc;

    if (st->kind->filter == FMT_FILTER_GZIP && n >= 3 && p[0] == 0x1f && p[1] == 0x8b && p[2] == 8)
        conf = 60;
    else if (st->kind->filter == FMT_FILTER_LZ4 && n >= 4 && p[0] == 0x04 && p[1] == 0x22 && p[2] == 0x4d &&
             p[3] == 0x18)
        conf = 60;
    if (conf == 0)
        return 0;
    loc = fmt_locale_enter(st);
    a = archive_read_new();
    if (a != NULL) {
        if (st->kind->filter == FMT_FILTER_GZIP)
            archive_read_support_filter_gzip(a);
        else
            archive_read_support_filter_lz4(a);
        archive_read_support_format_tar(a);
        if (archive_read_open_memory(a, head, n) == ARCHIVE_OK) {
            r = archive_read_next_header(a, &ae);
            if (r == ARCHIVE_OK || r == ARCHIVE_WARN)
                conf = 95;
        }
        archive_read_free(a);
    }
    fmt_locale_leave(loc);
    return conf;
}

int fmt_detect(void *state, const void *head, size_t n)
{
    const struct fmt_state *st = state;

    if (st == NULL || head == NULL)
        return 0;
    if (st->kind->format == FMT_FORMAT_ZIP)
        return fmt_detect_zip(head, n);
    if (st->kind->filter == FMT_FILTER_NONE)
        return fmt_detect_tar(head, n);
    return fmt_detect_compressed_tar(st, head, n);
}

/* ------------------------------------------------------------------------ */
/* Zip central-directory pre-check                                          */
/* ------------------------------------------------------------------------ */

static uint64_t le(const unsigned char *p, int n)
{
    uint64_t v = 0;

    while (n-- > 0)
        v = (v << 8) | p[n];
    return v;
}

static int read_at(const struct sl_io *io, int64_t off, unsigned char *buf, size_t n)
{
    size_t got = 0;

    if (io->seek(io->ctx, off, SL_SEEK_SET) != off)
        return -1;
    while (got < n) {
        int64_t r = io->read(io->ctx, buf + got, n - got);
        if (r <= 0)
            return r == 0 ? (int)got : -1;
        got += (size_t)r;
    }
    return (int)got;
}

/* Find the end-of-central-directory record (zip64 too): the number of
 * members, the directory's offset and size (-1 when not found: libarchive
 * then reports what is wrong). Refuses more members than lim->max_members
 * before libarchive loads the directory into memory. Leaves io at 0. */
static int zip_locate_cd(const struct fmt_state *st, const struct sl_io *io, const struct sl_fmt_limits *lim,
                         struct zip_cd *cd, char *err, size_t errlen)
{
    enum { EOCD = 22, TAIL = 65535 + EOCD };
    unsigned char *buf, z64[56];
    int64_t size, start;
    int n, i, rc = SL_PLUG_OK;

    cd->members = 0;
    cd->off = cd->size = -1;
    size = io->seek(io->ctx, 0, SL_SEEK_END);
    if (size < 0)
        return fmt_errf(err, errlen, SL_PLUG_EIO, "%s %s: cannot seek to the end of the shard; check the disk",
                        st->kind->label, fmt_ioname(io));
    if (size < EOCD)
        goto rewind;
    start = size > TAIL ? size - TAIL : 0;
    buf = st->host->scratch((size_t)(size - start));
    if (buf == NULL)
        return fmt_errf(err, errlen, SL_PLUG_ENOMEM, "%s %s: out of memory", st->kind->label, fmt_ioname(io));
    n = read_at(io, start, buf, (size_t)(size - start));
    if (n < 0)
        return fmt_errf(err, errlen, SL_PLUG_EIO, "%s %s: reading the end of the shard failed; check the disk",
                        st->kind->label, fmt_ioname(io));
    for (i = n - EOCD; i >= 0; i--) {
        if (buf[i] == 'P' && buf[i + 1] == 'K' && buf[i + 2] == 5 && buf[i + 3] == 6)
            break;
    }
    if (i < 0)
        goto rewind;
    cd->members = le(buf + i + 10, 2);
    cd->size = (int64_t)le(buf + i + 12, 4);
    cd->off = (int64_t)le(buf + i + 16, 4);
    if (cd->members == 0xffff || (uint64_t)cd->size == 0xffffffffu || (uint64_t)cd->off == 0xffffffffu) {
        /* zip64: the locator sits right before the EOCD record */
        if (i >= 20 && buf[i - 20] == 'P' && buf[i - 19] == 'K' && buf[i - 18] == 6 && buf[i - 17] == 7) {
            int64_t z64off = (int64_t)le(buf + i - 20 + 8, 8);
            if (z64off >= 0 && z64off < size && read_at(io, z64off, z64, sizeof(z64)) == (int)sizeof(z64) &&
                z64[0] == 'P' && z64[1] == 'K' && z64[2] == 6 && z64[3] == 6) {
                cd->members = le(z64 + 32, 8);
                cd->size = (int64_t)le(z64 + 40, 8);
                cd->off = (int64_t)le(z64 + 48, 8);
            }
        }
    }
    if (cd->off < 0 || cd->size < 0 || cd->off > size || cd->size > size - cd->off)
        cd->off = cd->size = -1; /* implausible: do not use it */
    if (lim != NULL && lim->max_members && cd->members > lim->max_members)
        rc = fmt_errf(err, errlen, SL_PLUG_ELIMIT,
                      "%s %s: the central directory declares %" PRIu64 " members, more than the limit of %" PRIu64
                      " (max_members); refusing the archive (raise the limit if the shard is trusted)",
                      st->kind->label, fmt_ioname(io), cd->members, lim->max_members);
rewind:
    if (rc == SL_PLUG_OK && io->seek(io->ctx, 0, SL_SEEK_SET) != 0)
        rc = fmt_errf(err, errlen, SL_PLUG_EIO, "%s %s: cannot seek back to the start of the shard",
                      st->kind->label, fmt_ioname(io));
    return rc;
}

int fmt_zip_precheck(const struct fmt_state *st, const struct sl_io *io, const struct sl_fmt_limits *lim,
                     char *err, size_t errlen)
{
    struct zip_cd cd;

    if (lim == NULL || lim->max_members == 0)
        return SL_PLUG_OK;
    return zip_locate_cd(st, io, lim, &cd, err, errlen);
}

/* Parse the central-directory record at off (into the scratch buffer):
 * its total length, or -1 when it is not one. */
static int64_t zip_cd_record(struct fmt_reader *rd, int64_t off, const unsigned char **rec, size_t *nlen,
                             uint64_t *csize, uint64_t *usize)
{
    enum { CDH = 46 };
    unsigned char hdr[CDH], *buf;
    size_t n, elen, clen;
    const unsigned char *x, *end;

    if (off < rd->cd_off || off + CDH > rd->cd_off + rd->cd_size || read_at(&rd->io, off, hdr, CDH) != CDH ||
        le(hdr, 4) != 0x02014b50u)
        return -1;
    n = (size_t)le(hdr + 28, 2);
    elen = (size_t)le(hdr + 30, 2);
    clen = (size_t)le(hdr + 32, 2);
    if (off + CDH + (int64_t)(n + elen) > rd->cd_off + rd->cd_size)
        return -1;
    buf = rd->st->host->scratch(n + elen + 1);
    if (buf == NULL || read_at(&rd->io, off + CDH, buf, n + elen) != (int)(n + elen))
        return -1;
    *csize = le(hdr + 20, 4);
    *usize = le(hdr + 24, 4);
    /* zip64 extra field (0x0001): 8-byte sizes for the ones saturated above */
    for (x = buf + n, end = buf + n + elen; x + 4 <= end;) {
        size_t id = (size_t)le(x, 2), sz = (size_t)le(x + 2, 2);
        const unsigned char *v = x + 4;
        if (v + sz > end)
            break;
        if (id == 1) {
            if (*usize == 0xffffffffu && v + 8 <= x + 4 + sz) {
                *usize = le(v, 8);
                v += 8;
            }
            if (*csize == 0xffffffffu && v + 8 <= x + 4 + sz)
                *csize = le(v, 8);
            break;
        }
        x = v + sz;
    }
    *rec = buf;
    *nlen = n;
    return CDH + (int64_t)(n + elen + clen);
}

/* The current member's sizes from the central directory: its record is
 * normally the next one (libarchive returns members in directory order when
 * it is sorted by offset, as writers make it); otherwise the directory is
 * searched once, and a miss there stops the lookups for this archive (the
 * consumed-bytes measure still bounds the ratio). The io position libarchive
 * left is restored. */
static void zip_cd_sizes(struct fmt_reader *rd)
{
    size_t want = strlen(rd->cur_name), nlen;
    const unsigned char *rec;
    uint64_t cs, us;
    int64_t len, off, pos = rd->io.seek(rd->io.ctx, 0, SL_SEEK_CUR);
    bool found = false;

    if (pos < 0) {
        rd->cd_usable = false;
        return;
    }
    len = zip_cd_record(rd, rd->cd_next, &rec, &nlen, &cs, &us);
    if (len > 0 && nlen == want && memcmp(rec, rd->cur_name, want) == 0) {
        found = true;
        rd->cd_next += len;
    }
    for (off = rd->cd_off; !found && (len = zip_cd_record(rd, off, &rec, &nlen, &cs, &us)) > 0; off += len) {
        if (nlen == want && memcmp(rec, rd->cur_name, want) == 0) {
            found = true;
            rd->cd_next = off + len;
        }
    }
    if (found) {
        rd->csize = (int64_t)cs;
        rd->usize = (int64_t)us;
    } else {
        rd->cd_usable = false;
    }
    if (rd->io.seek(rd->io.ctx, pos, SL_SEEK_SET) != pos)
        rd->io_failed = true;
}
