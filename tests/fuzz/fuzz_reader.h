/* SPDX-License-Identifier: MIT
 * fuzz_reader.h: the body of every format fuzz harness (fuzz_<fmt>.c
 * defines FUZZ_FORMAT and includes this). The harness links one format
 * plugin's sources directly (formats/fmt_<fmt>.c + formats/common_*.c),
 * hands it a minimal host table, and feeds each input through the reader
 * twice (streamed, then seekable) with small limits, plus the tar index and
 * append-offset scanners when the format has them. Invariants that must
 * hold for any input are checked with __builtin_trap(); crashes, leaks and
 * undefined behaviour are caught by the sanitizers.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shale_plugin.h"

static void *h_alloc(size_t n)
{
    return malloc(n ? n : 1);
}

static void *h_calloc(size_t n, size_t m)
{
    return calloc(n ? n : 1, m ? m : 1);
}

static void *h_realloc(void *p, size_t n)
{
    return realloc(p, n ? n : 1);
}

static void h_free(void *p)
{
    free(p);
}

static void h_log(int level, const char *fmt, ...)
{
    (void)level;
    (void)fmt;
}

static int h_log_enabled(int level)
{
    (void)level;
    return 0;
}

static unsigned char *scratch_buf;
static size_t scratch_cap;

static void *h_scratch(size_t n)
{
    if (n > 16 * 1024 * 1024)
        return NULL;
    if (n > scratch_cap) {
        free(scratch_buf);
        scratch_buf = malloc(n);
        scratch_cap = scratch_buf ? n : 0;
    }
    return scratch_buf;
}

static const struct sl_host_api host = {
    SL_ABI_INIT(struct sl_host_api),
    .host_version = "fuzz",
    .alloc = h_alloc,
    .calloc = h_calloc,
    .realloc = h_realloc,
    .free = h_free,
    .log = h_log,
    .log_enabled = h_log_enabled,
    .scratch = h_scratch,
};

static const struct sl_plugin *plug;
static void *plug_state;

struct mem {
    const uint8_t *p;
    size_t n;
    int64_t pos;
};

static int64_t mem_read(void *ctx, void *buf, size_t n)
{
    struct mem *m = ctx;
    size_t left;

    if (m->pos >= (int64_t)m->n)
        return 0;
    left = m->n - (size_t)m->pos;
    if (n > left)
        n = left;
    /* short reads exercise the callers' loops */
    if (n > 1 && (m->pos & 7) == 3)
        n = n / 2;
    memcpy(buf, m->p + m->pos, n);
    m->pos += (int64_t)n;
    return (int64_t)n;
}

static int64_t mem_seek(void *ctx, int64_t off, int whence)
{
    struct mem *m = ctx;
    int64_t base = whence == SL_SEEK_SET ? 0 : whence == SL_SEEK_CUR ? m->pos : (int64_t)m->n;

    if (whence < SL_SEEK_SET || whence > SL_SEEK_END || off > INT64_MAX / 2 || off < -INT64_MAX / 2 || base + off < 0)
        return -1;
    m->pos = base + off;
    return m->pos;
}

static void io_init(struct sl_io *io, struct mem *m, const uint8_t *d, size_t n, int seekable)
{
    memset(io, 0, sizeof(*io));
    SL_ABI_SET(io);
    m->p = d;
    m->n = n;
    m->pos = 0;
    io->ctx = m;
    io->read = mem_read;
    io->seek = seekable ? mem_seek : NULL;
    io->name = "fuzz";
}

static void lim_init(struct sl_fmt_limits *lim)
{
    memset(lim, 0, sizeof(*lim));
    SL_ABI_SET(lim);
    lim->max_members = 64;
    lim->max_member_size = 1 << 20;
    lim->max_total_size = 4 << 20;
    lim->max_ratio = 100;
}

static int index_cb(void *ctx, const struct sl_fmt_entry *e)
{
    size_t n = *(size_t *)ctx;

    if (e->name == NULL || e->data_offset < 0 || e->size < 0 || (uint64_t)e->data_offset > n ||
        (uint64_t)e->size > n - (uint64_t)e->data_offset || strlen(e->name) != e->name_len)
        __builtin_trap();
    (void)sl_plugin_member_name_check(e->name, e->name_len);
    return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    char err[512];

    (void)argc;
    (void)argv;
    plug = sl_plugin_entry(&host, err, sizeof(err));
    if (plug == NULL || strcmp(plug->name, FUZZ_FORMAT) != 0 || plug->format == NULL)
        abort();
    if (plug->init != NULL && plug->init(&host, &plug_state, err, sizeof(err)) != SL_PLUG_OK)
        abort();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const struct sl_format_ops *f = plug->format;
    struct sl_fmt_limits lim;
    struct sl_io io;
    struct mem m;
    char err[512], buf[4099];
    int seekable;

    lim_init(&lim);
    (void)f->detect(plug_state, data, size);
    for (seekable = 0; seekable < 2; seekable++) {
        struct sl_fmt_entry e;
        void *rd = NULL;
        int rc, i;

        io_init(&io, &m, data, size, seekable);
        rc = f->reader_open(plug_state, &io, &lim, seekable ? SL_FMT_R_ALL : 0, &rd, err, sizeof(err));
        if (rc != SL_PLUG_OK) {
            if (rd != NULL || rc >= 0 || memchr(err, '\0', sizeof(err)) == NULL)
                __builtin_trap();
            continue;
        }
        for (i = 0; i < 100; i++) {
            memset(&e, 0, sizeof(e));
            SL_ABI_SET(&e);
            rc = f->reader_next(rd, &e, err, sizeof(err));
            if (rc != SL_PLUG_OK)
                break;
            if (e.name == NULL || strlen(e.name) != e.name_len)
                __builtin_trap();
            if (seekable && e.data_offset > (int64_t)size)
                __builtin_trap();
            (void)sl_plugin_member_name_check(e.name, e.name_len);
            if (i % 3 == 2) {
                (void)f->reader_skip(rd, err, sizeof(err));
                continue;
            }
            for (;;) {
                size_t want = 1 + (size_t)((i * 977 + (int)size) % (int)sizeof(buf));
                int64_t got = f->reader_read(rd, buf, want, err, sizeof(err));
                if (got > (int64_t)want)
                    __builtin_trap();
                if (got <= 0)
                    break;
            }
        }
        f->reader_close(rd);
    }
    if (f->index != NULL) {
        for (seekable = 0; seekable < 2; seekable++) {
            size_t n = size;
            int64_t off = -1;
            io_init(&io, &m, data, size, seekable);
            (void)f->index(plug_state, &io, &lim, index_cb, &n, err, sizeof(err));
            io_init(&io, &m, data, size, seekable);
            if (f->append_offset(plug_state, &io, &lim, &off, err, sizeof(err)) == SL_PLUG_OK &&
                (off < 0 || off > (int64_t)size || off % 512 != 0))
                __builtin_trap();
        }
    }
    return 0;
}
