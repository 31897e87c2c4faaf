/* SPDX-License-Identifier: MIT
 * test_plug_helpers.h: helpers shared by the plugin and format unit tests
 * (test_plug_*.c, test_fmt_*.c): locating the build, temporary directories,
 * file helpers, and writing/reading whole archives through the plug.h API.
 * Everything is static: each test program includes this once.
 */
#ifndef SL_TEST_PLUG_HELPERS_H
#define SL_TEST_PLUG_HELPERS_H

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plug.h"
#include "sl.h"
#include "tap.h"

/* The build directory: $SHALE_BUILD (set by tests/run.sh), else ./build. */
static inline const char *tp_build(void)
{
    const char *b = getenv("SHALE_BUILD");
    return b && *b ? b : "build";
}

static char tp_tmp_root[256];

/* A fresh temporary directory for this test program (removed by tp_cleanup). */
static inline const char *tp_tmpdir(void)
{
    if (tp_tmp_root[0] == '\0') {
        snprintf(tp_tmp_root, sizeof(tp_tmp_root), "/tmp/shale-plugtest-XXXXXX");
        if (mkdtemp(tp_tmp_root) == NULL) {
            perror("mkdtemp");
            exit(2);
        }
    }
    return tp_tmp_root;
}

static inline void tp_cleanup(void)
{
    if (tp_tmp_root[0] != '\0' && getenv("SHALE_KEEP_TMP") == NULL)
        sl_rm_rf(tp_tmp_root);
}

/* "<tmp>/<fmt...>", returns new. */
static inline char *tp_path(const char *fmt, ...) SL_PRINTF(1, 2);
static inline char *tp_path(const char *fmt, ...)
{
    char rel[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(rel, sizeof(rel), fmt, ap);
    va_end(ap);
    return sl_xasprintf("%s/%s", tp_tmpdir(), rel);
}

static inline int tp_sh(const char *fmt, ...) SL_PRINTF(1, 2);
/* Run a shell command; returns its exit status (or -1). */
static inline int tp_sh(const char *fmt, ...)
{
    char cmd[4096];
    va_list ap;
    int st;

    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    st = system(cmd);
    if (st == -1 || !WIFEXITED(st))
        return -1;
    return WEXITSTATUS(st);
}

static inline bool tp_have(const char *tool)
{
    return tp_sh("command -v %s >/dev/null 2>&1", tool) == 0;
}

static inline int tp_copy(const char *src, const char *dst, mode_t mode)
{
    struct sl_buf b;
    int rc;

    sl_buf_init(&b);
    rc = sl_read_file(src, &b, 1ULL << 30);
    if (rc == 0) {
        unlink(dst);
        rc = sl_write_file(dst, b.p, b.len, false);
    }
    sl_buf_free(&b);
    if (rc == 0)
        rc = chmod(dst, mode);
    return rc;
}

static inline int tp_read_file(const char *path, struct sl_buf *b)
{
    sl_buf_init(b);
    return sl_read_file(path, b, 1ULL << 31);
}

/* Deterministic pseudo-random bytes. */
static inline void tp_fill(unsigned char *p, size_t n, uint32_t seed)
{
    uint32_t x = seed * 2654435761u + 1;
    size_t i;

    for (i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        p[i] = (unsigned char)x;
    }
}

/* One member of a test archive. */
struct tp_member {
    char *name;
    unsigned char *data;
    size_t size;
};

static inline void tp_members_free(struct tp_member *m, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        free(m[i].name);
        free(m[i].data);
    }
    free(m);
}

/* Write members to path with format fmt (writer flags wflags). 0 or -1. */
static inline int tp_write_archive(const struct sl_plug *fmt, const char *path, const struct tp_member *m, size_t n,
                            uint32_t wflags, struct sl_err *err)
{
    struct sl_plug_fdio fio;
    struct sl_plug_writer *w = NULL;
    size_t i;
    int fd, rc = -1;

    fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return sl_errf(err, SL_EIO, "open %s: %s", path, strerror(errno));
    sl_plug_fdio_init(&fio, fd, 0, path);
    if (sl_plug_writer_open(fmt, &fio.io, wflags, &w, err) != 0)
        goto out;
    for (i = 0; i < n; i++) {
        size_t off = 0;
        if (sl_plug_writer_add(w, m[i].name, strlen(m[i].name), (int64_t)m[i].size, 1700000000 + (int64_t)i, 0640,
                               err) != 0)
            goto out;
        /* uneven chunks exercise the writer's buffering */
        while (off < m[i].size) {
            size_t chunk = SL_MIN(m[i].size - off, (size_t)(7919 + i * 13));
            if (sl_plug_writer_write(w, m[i].data + off, chunk, err) != 0)
                goto out;
            off += chunk;
        }
    }
    rc = sl_plug_writer_finish(w, err);
out:
    sl_plug_writer_close(w);
    close(fd);
    return rc;
}

/* Read every regular member of an archive (returns new array in *out). */
static inline int tp_read_archive(const struct sl_plug *fmt, const struct sl_io *io, const struct sl_fmt_limits *lim,
                           struct tp_member **out, size_t *nout, struct sl_err *err)
{
    struct sl_plug_reader *r = NULL;
    struct tp_member *m = NULL;
    struct sl_fmt_entry e;
    size_t n = 0;
    int rc;

    *out = NULL;
    *nout = 0;
    if (sl_plug_reader_open(fmt, io, lim, 0, &r, err) != 0)
        return -1;
    while ((rc = sl_plug_reader_next(r, &e, err)) == 0) {
        struct sl_buf b;
        char buf[9000];
        int64_t got;
        sl_buf_init(&b);
        while ((got = sl_plug_reader_read(r, buf, sizeof(buf) - (n % 100), err)) > 0)
            sl_buf_add(&b, buf, (size_t)got);
        if (got < 0) {
            sl_buf_free(&b);
            rc = -1;
            break;
        }
        m = sl_xrealloc(m, (n + 1) * sizeof(*m));
        m[n].name = sl_xstrdup(e.name);
        m[n].size = b.len;
        m[n].data = (unsigned char *)sl_buf_steal(&b);
        if (m[n].data == NULL)
            m[n].data = (unsigned char *)sl_xstrdup("");
        n++;
    }
    sl_plug_reader_close(r);
    *out = m;
    *nout = n;
    return rc == 1 ? 0 : -1;
}

/* Compare two member lists; prints the first difference. */
static inline bool tp_same(const struct tp_member *a, size_t na, const struct tp_member *b, size_t nb)
{
    size_t i;

    if (na != nb) {
        printf("#   member count %zu vs %zu\n", na, nb);
        return false;
    }
    for (i = 0; i < na; i++) {
        if (strcmp(a[i].name, b[i].name) != 0) {
            printf("#   member %zu name \"%s\" vs \"%s\"\n", i, a[i].name, b[i].name);
            return false;
        }
        if (a[i].size != b[i].size || (a[i].size && memcmp(a[i].data, b[i].data, a[i].size) != 0)) {
            printf("#   member %zu (%s) data differs (%zu vs %zu bytes)\n", i, a[i].name, a[i].size, b[i].size);
            return false;
        }
    }
    return true;
}

/* A non-seekable reading view of a memory buffer (seek callback removed). */
static inline void tp_memio_stream(struct sl_plug_memio *m, const void *p, size_t n, const char *name)
{
    sl_plug_memio_init(m, p, n, NULL, name);
    m->io.seek = NULL;
}

static inline struct sl_plug_reg *tp_load_builtin(void)
{
    struct sl_plug_reg *reg = NULL;
    struct sl_err err = { 0 };
    char *dir = sl_xasprintf("%s/lib/shale", tp_build());

    if (sl_plug_reg_load(dir, &reg, &err) != 0) {
        printf("# cannot load plugins from %s: %s\n", dir, err.msg);
        exit(2);
    }
    free(dir);
    return reg;
}

#endif
