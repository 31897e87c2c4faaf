/* SPDX-License-Identifier: MIT
 * common_tar.c: a header-only tar scanner, independent of libarchive, for
 * the two jobs that need exact byte positions: the member index (name, data
 * offset, size of every regular member, so the host can pread a member) and
 * the true-append offset (where the end-of-archive marker starts).
 *
 * Understands ustar (name + prefix), GNU ('L' long names, 'K' long link
 * names, old sparse 'S' with extension blocks, magic "ustar  "), pax ('x'
 * per-member records path/size/mtime and GNU.sparse.*, 'g' global headers,
 * which, like libarchive, it skips), v7 headers, octal and base-256 numbers,
 * and checksums (unsigned and signed sums). When the same member carries
 * both an 'L' and an 'x' name, the first one in the archive wins (as in
 * libarchive). Hard links, symlinks, directories, devices and sparse members
 * are not indexed; their data, if any, is skipped.
 *
 * Memory: one 512-byte block plus a buffer for long names / pax records,
 * capped at 1 MiB (libarchive's cap too). Data is skipped with io->seek when
 * available, otherwise read and discarded.
 *
 * Layering: calls only common_util.c (errors, io names, fmt_free); common_arch.c
 * calls fmt_tar_header_valid from here for detection, never the other way.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common_fmt.h"

#define TAR_BLOCK 512
#define TAR_EXT_MAX (1024 * 1024)

struct tscan {
    const struct fmt_state *st;
    const struct sl_io *io;
    const struct sl_fmt_limits *lim;
    char *err;
    size_t errlen;
    int64_t pos;            /* offset of the next block to read */
    int64_t size;           /* archive size when seekable, else -1 */
    uint64_t headers;
    bool pax_seen;          /* any 'x'/'g' header so far: hard links may carry data */
    unsigned char blk[TAR_BLOCK];
    char *ext;              /* body of the current 'L'/'x' header */
    size_t ext_cap;
    /* pending overrides for the next real header */
    char *name;             /* from 'L' or pax path (first wins) */
    size_t name_len;
    bool has_size, has_mtime, sparse;
    int64_t pax_size, pax_mtime;
};

static int ts_err(struct tscan *ts, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int ts_err(struct tscan *ts, int code, const char *fmt, ...)
{
    char what[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return fmt_errf(ts->err, ts->errlen, code, "%s %s: %s", ts->st->kind->label, fmt_ioname(ts->io), what);
}

static int64_t ts_read(struct tscan *ts, void *buf, size_t n)
{
    size_t got = 0;

    while (got < n) {
        int64_t r = ts->io->read(ts->io->ctx, (char *)buf + got, n - got);
        if (r < 0 || (size_t)r > n - got)
            return -1;
        if (r == 0)
            break;
        got += (size_t)r;
    }
    return (int64_t)got;
}

/* Skip n bytes of data (padded by the caller). */
static int ts_skip(struct tscan *ts, int64_t n, const char *what)
{
    if (n <= 0)
        return SL_PLUG_OK;
    if (ts->size >= 0) {
        if (n > ts->size - ts->pos)
            return ts_err(ts, SL_PLUG_EFORMAT,
                          "truncated: %s at offset %" PRId64 " needs %" PRId64 " bytes but the archive ends at %" PRId64
                          "; re-create or re-upload the shard", what, ts->pos, n, ts->size);
        if (ts->io->seek(ts->io->ctx, ts->pos + n, SL_SEEK_SET) != ts->pos + n)
            return ts_err(ts, SL_PLUG_EIO, "seek to offset %" PRId64 " failed; check the disk", ts->pos + n);
        ts->pos += n;
        return SL_PLUG_OK;
    }
    while (n > 0) {
        size_t chunk = n > 65536 ? 65536 : (size_t)n;
        char *buf = ts->st->host->scratch(chunk);
        int64_t r;
        if (buf == NULL)
            return ts_err(ts, SL_PLUG_ENOMEM, "out of memory");
        r = ts_read(ts, buf, chunk);
        if (r < 0)
            return ts_err(ts, SL_PLUG_EIO, "reading the shard failed at offset %" PRId64 "; check the disk", ts->pos);
        ts->pos += r;
        if ((size_t)r < chunk)
            return ts_err(ts, SL_PLUG_EFORMAT, "truncated: %s ends early at offset %" PRId64
                          "; re-create or re-upload the shard", what, ts->pos);
        n -= r;
    }
    return SL_PLUG_OK;
}

/* Numeric header field: octal (leading spaces allowed, stops at the first
 * non-digit) or base-256 (high bit of the first byte set). Returns -1 for
 * negative or overflowing values. */
static int64_t tar_num(const unsigned char *p, size_t n)
{
    uint64_t v = 0;
    size_t i = 0;

    if (p[0] & 0x80) {
        if (p[0] == 0xff)
            return -1; /* negative */
        v = p[0] & 0x3f;
        if (p[0] & 0x40)
            return -1;
        for (i = 1; i < n; i++) {
            if (v > (UINT64_C(1) << 55))
                return -1;
            v = (v << 8) | p[i];
        }
        return v > INT64_MAX ? -1 : (int64_t)v;
    }
    while (i < n && (p[i] == ' ' || p[i] == '\t'))
        i++;
    for (; i < n && p[i] >= '0' && p[i] <= '7'; i++) {
        if (v > (UINT64_C(1) << 60))
            return -1;
        v = (v << 3) | (uint64_t)(p[i] - '0');
    }
    return (int64_t)v;
}

static bool block_zero(const unsigned char *b)
{
    size_t i;

    for (i = 0; i < TAR_BLOCK; i++)
        if (b[i])
            return false;
    return true;
}

bool fmt_tar_header_valid(const unsigned char *b)
{
    uint64_t usum = 0;
    int64_t ssum = 0, want;
    size_t i;

    if (block_zero(b))
        return false;
    want = tar_num(b + 148, 8);
    if (want < 0)
        return false;
    for (i = 0; i < TAR_BLOCK; i++) {
        unsigned c = (i >= 148 && i < 156) ? ' ' : b[i];
        usum += c;
        ssum += (signed char)c;
    }
    return (int64_t)usum == want || ssum == want;
}

/* Read a header body (size bytes, padded) into ts->ext, NUL-terminated. */
static int ts_read_ext(struct tscan *ts, int64_t size, const char *what)
{
    int64_t padded = (size + TAR_BLOCK - 1) & ~(int64_t)(TAR_BLOCK - 1), r;

    if (size < 0 || size > TAR_EXT_MAX)
        return ts_err(ts, SL_PLUG_EFORMAT, "%s header at offset %" PRId64 " is %" PRId64 " bytes, over the 1 MiB "
                      "limit; the shard is corrupt or hostile", what, ts->pos - TAR_BLOCK, size);
    if ((size_t)size + 1 > ts->ext_cap) {
        size_t cap = (size_t)size + 1 < 4096 ? 4096 : (size_t)size + 1;
        char *p = ts->st->host->realloc(ts->ext, cap);
        if (p == NULL)
            return ts_err(ts, SL_PLUG_ENOMEM, "out of memory");
        ts->ext = p;
        ts->ext_cap = cap;
    }
    r = ts_read(ts, ts->ext, (size_t)size);
    if (r < 0)
        return ts_err(ts, SL_PLUG_EIO, "reading the shard failed at offset %" PRId64 "; check the disk", ts->pos);
    if (r < size)
        return ts_err(ts, SL_PLUG_EFORMAT, "truncated: %s header body at offset %" PRId64 " ends early; re-create "
                      "or re-upload the shard", what, ts->pos);
    ts->ext[size] = '\0';
    ts->pos += size;
    return ts_skip(ts, padded - size, what);
}

static int ts_set_name(struct tscan *ts, const char *s, size_t len)
{
    char *p;

    if (ts->name != NULL)
        return SL_PLUG_OK; /* the first extension header wins */
    p = ts->st->host->alloc(len + 1);
    if (p == NULL)
        return ts_err(ts, SL_PLUG_ENOMEM, "out of memory");
    memcpy(p, s, len);
    p[len] = '\0';
    ts->name = p;
    ts->name_len = len;
    return SL_PLUG_OK;
}

static int64_t dec(const char *s, size_t n)
{
    int64_t v = 0;
    size_t i;

    for (i = 0; i < n && s[i] >= '0' && s[i] <= '9'; i++) {
        if (v > INT64_MAX / 10 - 10)
            return -1;
        v = v * 10 + (s[i] - '0');
    }
    return i == 0 ? -1 : v;
}

/* Parse pax records "<len> <key>=<value>\n" in ts->ext[0..n). */
static int ts_pax(struct tscan *ts, size_t n, int64_t hdr_off)
{
    size_t at = 0;
    char *gname = NULL;
    size_t gname_len = 0;
    int rc;

    while (at < n) {
        const char *rec = ts->ext + at, *sp, *eq;
        int64_t len = dec(rec, n - at);
        if (len < 5 || (size_t)len > n - at || rec[len - 1] != '\n')
            return ts_err(ts, SL_PLUG_EFORMAT, "malformed pax record at offset %" PRId64 "; the shard is corrupt",
                          hdr_off);
        sp = memchr(rec, ' ', (size_t)len);
        eq = sp ? memchr(sp, '=', (size_t)(rec + len - sp)) : NULL;
        if (sp == NULL || eq == NULL || eq == sp + 1)
            return ts_err(ts, SL_PLUG_EFORMAT, "malformed pax record at offset %" PRId64 "; the shard is corrupt",
                          hdr_off);
        {
            const char *key = sp + 1, *val = eq + 1;
            size_t klen = (size_t)(eq - key), vlen = (size_t)(rec + len - 1 - val);
#define KEY_IS(k) (klen == sizeof(k) - 1 && memcmp(key, k, klen) == 0)
            if (KEY_IS("path")) {
                /* libarchive keeps the value up to its first NUL */
                const char *nul = memchr(val, '\0', vlen);
                rc = ts_set_name(ts, val, nul ? (size_t)(nul - val) : vlen);
                if (rc != SL_PLUG_OK)
                    return rc;
            } else if (KEY_IS("size")) {
                ts->pax_size = dec(val, vlen);
                if (ts->pax_size < 0)
                    return ts_err(ts, SL_PLUG_EFORMAT, "bad pax size at offset %" PRId64 "; the shard is corrupt",
                                  hdr_off);
                ts->has_size = true;
            } else if (KEY_IS("mtime")) {
                ts->pax_mtime = dec(val, vlen);
                ts->has_mtime = ts->pax_mtime >= 0;
            } else if (KEY_IS("GNU.sparse.name")) {
                gname = (char *)val;
                gname_len = vlen;
                ts->sparse = true;
            } else if (klen > 11 && memcmp(key, "GNU.sparse.", 11) == 0) {
                ts->sparse = true;
            }
#undef KEY_IS
        }
        at += (size_t)len;
    }
    if (gname != NULL) { /* the real name of a sparse member overrides path */
        if (ts->name != NULL) {
            ts->st->host->free(ts->name);
            ts->name = NULL;
        }
        return ts_set_name(ts, gname, gname_len);
    }
    return SL_PLUG_OK;
}

static void ts_clear_pending(struct tscan *ts)
{
    if (ts->name != NULL)
        ts->st->host->free(ts->name);
    ts->name = NULL;
    ts->name_len = 0;
    ts->has_size = ts->has_mtime = ts->sparse = false;
}

/* Walk the archive. cb (may be NULL) gets every regular contiguous member;
 * *end gets the offset of the end-of-archive marker. */
static int ts_run(struct tscan *ts, sl_fmt_index_cb cb, void *cbctx, int64_t *end)
{
    char namebuf[256 + 1 + 100 + 1];
    bool pending = false; /* extension headers seen since the last member */
    int rc;

    ts->size = -1;
    if (ts->io->seek != NULL) {
        ts->size = ts->io->seek(ts->io->ctx, 0, SL_SEEK_END);
        if (ts->size < 0 || ts->io->seek(ts->io->ctx, 0, SL_SEEK_SET) != 0)
            return ts_err(ts, SL_PLUG_EIO, "cannot seek in the shard; check the disk");
    }
    for (;;) {
        int64_t hdr_off = ts->pos, size, data, r;
        unsigned char type;
        r = ts_read(ts, ts->blk, TAR_BLOCK);
        if (r < 0)
            return ts_err(ts, SL_PLUG_EIO, "reading the shard failed at offset %" PRId64 "; check the disk", ts->pos);
        if (r == 0 || block_zero(ts->blk)) {
            if (r > 0 && r < TAR_BLOCK)
                goto short_hdr;
            if (pending)
                return ts_err(ts, SL_PLUG_EFORMAT, "the archive ends right after an extension header at offset "
                              "%" PRId64 "; re-create the shard", hdr_off);
            *end = hdr_off;
            return SL_PLUG_OK;
        }
        if (r < TAR_BLOCK) {
short_hdr:
            return ts_err(ts, SL_PLUG_EFORMAT, "truncated header at offset %" PRId64 " (%" PRId64 " of 512 bytes); "
                          "re-create or re-upload the shard", hdr_off, r);
        }
        ts->pos += TAR_BLOCK;
        if (!fmt_tar_header_valid(ts->blk))
            return ts_err(ts, SL_PLUG_EFORMAT, "damaged header at offset %" PRId64 " (bad checksum): not a tar "
                          "archive or corrupt; re-create or re-upload the shard", hdr_off);
        ts->headers++;
        if (ts->lim != NULL && ts->lim->max_members && ts->headers > ts->lim->max_members)
            return ts_err(ts, SL_PLUG_ELIMIT, "more than %" PRIu64 " headers (max_members); refusing the archive "
                          "(raise the limit if the shard is trusted)", ts->lim->max_members);
        type = ts->blk[156];
        size = tar_num(ts->blk + 124, 12);
        if (size < 0)
            return ts_err(ts, SL_PLUG_EFORMAT, "bad size field in the header at offset %" PRId64
                          "; the shard is corrupt", hdr_off);
        switch (type) {
        case 'L':
            pending = true;
            rc = ts_read_ext(ts, size, "GNU long name");
            if (rc == SL_PLUG_OK)
                rc = ts_set_name(ts, ts->ext, strlen(ts->ext));
            if (rc != SL_PLUG_OK)
                return rc;
            continue;
        case 'x':
        case 'X':
            pending = true;
            ts->pax_seen = true;
            rc = ts_read_ext(ts, size, "pax");
            if (rc == SL_PLUG_OK)
                rc = ts_pax(ts, (size_t)size, hdr_off);
            if (rc != SL_PLUG_OK)
                return rc;
            continue;
        case 'g':
            ts->pax_seen = true;
            /* fallthrough */
        case 'K':
        case 'A':
        case 'V':
            pending = type != 'g' ? true : pending;
            rc = ts_skip(ts, (size + TAR_BLOCK - 1) & ~(int64_t)(TAR_BLOCK - 1), "extension header body");
            if (rc != SL_PLUG_OK)
                return rc;
            continue;
        default:
            break;
        }
        /* A real member header. */
        pending = false;
        if (ts->has_size)
            size = ts->pax_size;
        switch (type) {
        case '1': data = ts->pax_seen ? size : 0; break;
        case '2': case '3': case '4': case '5': case '6': data = 0; break;
        default: data = size; break;
        }
        if (type == 'S') {
            ts->sparse = true;
            /* old GNU sparse: extension blocks follow while isextended is set */
            bool more = ts->blk[482] != 0;
            while (more) {
                r = ts_read(ts, ts->blk, TAR_BLOCK);
                if (r != TAR_BLOCK)
                    return ts_err(ts, r < 0 ? SL_PLUG_EIO : SL_PLUG_EFORMAT, "truncated GNU sparse header at "
                                  "offset %" PRId64 "; re-create the shard", ts->pos);
                ts->pos += TAR_BLOCK;
                more = ts->blk[504] != 0;
            }
        }
        if (ts->lim != NULL && ts->lim->max_total_size && (uint64_t)ts->pos + (uint64_t)data > ts->lim->max_total_size)
            return ts_err(ts, SL_PLUG_ELIMIT, "more than %" PRIu64 " bytes (max_total_size); refusing the archive",
                          ts->lim->max_total_size);
        if (cb != NULL && !ts->sparse &&
            (type == '0' || type == '\0' || type == '7' || strchr("123456DMNS", type) == NULL)) {
            struct sl_fmt_entry e;
            memset(&e, 0, sizeof(e));
            SL_ABI_SET(&e);
            if (ts->name != NULL) {
                e.name = ts->name;
                e.name_len = ts->name_len;
            } else {
                /* ustar: prefix "/" name; GNU and v7: name only */
                const char *hn = (const char *)ts->blk, *px = (const char *)ts->blk + 345;
                size_t hl = strnlen(hn, 100), pl = 0, nlen = 0;
                if (memcmp(ts->blk + 257, "ustar\0", 6) == 0)
                    pl = strnlen(px, 155);
                if (pl > 0) {
                    memcpy(namebuf, px, pl);
                    nlen = pl;
                    if (namebuf[nlen - 1] != '/')
                        namebuf[nlen++] = '/';
                }
                memcpy(namebuf + nlen, hn, hl);
                nlen += hl;
                namebuf[nlen] = '\0';
                e.name = namebuf;
                e.name_len = nlen;
            }
            /* A "regular" member whose name ends in '/' is a directory (old
             * tars; libarchive reads it so): not indexed, data skipped. */
            if (e.name_len > 0 && e.name[e.name_len - 1] == '/')
                goto not_indexed;
            e.size = data;
            e.mtime = ts->has_mtime ? ts->pax_mtime : tar_num(ts->blk + 136, 12);
            e.mode = (uint32_t)tar_num(ts->blk + 100, 8) & 07777;
            e.type = SL_FMT_T_REG;
            e.flags = SL_FMT_E_REGULAR;
            e.data_offset = ts->pos;
            e.ordinal = ts->headers - 1;
            if (ts->lim != NULL && ts->lim->max_member_size && (uint64_t)data > ts->lim->max_member_size)
                return ts_err(ts, SL_PLUG_ELIMIT, "member \"%.200s\" is %" PRId64 " bytes, over the limit of %"
                              PRIu64 " bytes (max_member_size)", e.name, data, ts->lim->max_member_size);
            /* Report a member only once its data is known to be there. */
            rc = ts_skip(ts, (data + TAR_BLOCK - 1) & ~(int64_t)(TAR_BLOCK - 1), "member data");
            if (rc != SL_PLUG_OK)
                return rc;
            rc = cb(cbctx, &e);
            ts_clear_pending(ts);
            if (rc != 0)
                return SL_PLUG_STOPPED;
            continue;
        }
not_indexed:
        ts_clear_pending(ts);
        rc = ts_skip(ts, (data + TAR_BLOCK - 1) & ~(int64_t)(TAR_BLOCK - 1), "member data");
        if (rc != SL_PLUG_OK)
            return rc;
    }
}

static int ts_go(void *state, const struct sl_io *io, const struct sl_fmt_limits *lim, sl_fmt_index_cb cb,
                 void *cbctx, int64_t *end, char *err, size_t errlen)
{
    struct fmt_state *st = state;
    struct tscan ts;
    int rc;

    if (st == NULL || io == NULL || io->read == NULL)
        return fmt_errf(err, errlen, SL_PLUG_EINVAL, "tar scan: needs an sl_io with a read callback");
    if (st->kind->filter != FMT_FILTER_NONE || st->kind->format != FMT_FORMAT_TAR)
        return fmt_errf(err, errlen, SL_PLUG_EUNSUPP, "%s %s: member offsets and true append need an uncompressed "
                        "tar; re-create the shard instead", st->kind->label, fmt_ioname(io));
    memset(&ts, 0, sizeof(ts));
    ts.st = st;
    ts.io = io;
    ts.lim = lim;
    ts.err = err;
    ts.errlen = errlen;
    rc = ts_run(&ts, cb, cbctx, end);
    ts_clear_pending(&ts);
    fmt_free(st, ts.ext);
    return rc;
}

int fmt_tar_index(void *state, const struct sl_io *io, const struct sl_fmt_limits *lim, sl_fmt_index_cb cb,
                  void *cbctx, char *err, size_t errlen)
{
    int64_t end;

    if (cb == NULL)
        return fmt_errf(err, errlen, SL_PLUG_EINVAL, "tar index: no callback");
    return ts_go(state, io, lim, cb, cbctx, &end, err, errlen);
}

int fmt_tar_append_offset(void *state, const struct sl_io *io, const struct sl_fmt_limits *lim, int64_t *off,
                          char *err, size_t errlen)
{
    int64_t end = -1;
    int rc;

    if (off == NULL)
        return fmt_errf(err, errlen, SL_PLUG_EINVAL, "tar append: no output offset");
    rc = ts_go(state, io, lim, NULL, NULL, &end, err, errlen);
    if (rc == SL_PLUG_OK)
        *off = end;
    return rc;
}
