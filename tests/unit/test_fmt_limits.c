/* SPDX-License-Identifier: MIT
 * test_fmt_limits.c: the readers' defences: member-count limits (including
 * the zip central-directory pre-check), member-size limits on declared and
 * actual sizes, total-size and ratio limits against zip/gzip/lz4 bombs,
 * also when members are skipped instead of read, and reader misuse.
 */
#include "test_plug_helpers.h"

static const char *fmt_names[] = { "tar", "tgz", "tar.lz4", "zip" };

static const char *ext_of(const char *fmt)
{
    return strcmp(fmt, "tar") == 0 ? ".tar" : strcmp(fmt, "tgz") == 0 ? ".tgz" : strcmp(fmt, "zip") == 0 ? ".zip"
                                                                                                    : ".tar.lz4";
}

/* An archive with n members; member i has size sizes[i % nsizes] (zeros). */
static char *make_archive(const struct sl_plug *p, const char *tag, size_t n, const size_t *sizes, size_t nsizes)
{
    char *path = tp_path("%s-%s%s", tag, sl_plug_name(p), ext_of(sl_plug_name(p)));
    struct tp_member *m = sl_xcalloc(n, sizeof(*m));
    struct sl_err err = { 0 };
    size_t i;

    for (i = 0; i < n; i++) {
        m[i].name = sl_xasprintf("m%06zu.bin", i);
        m[i].size = sizes[i % nsizes];
        m[i].data = sl_xcalloc(1, m[i].size + 1);
    }
    if (tp_write_archive(p, path, m, n, 0, &err) != 0)
        printf("# writing %s: %s\n", path, err.msg);
    tp_members_free(m, n);
    return path;
}

/* Read every member (read or skip), with limits; returns 0 or -1 and err. */
static int walk(const struct sl_plug *p, const char *path, const struct sl_fmt_limits *lim, bool seekable,
                bool skip, struct sl_err *err)
{
    struct sl_plug_reader *r = NULL;
    struct sl_plug_fdio fio;
    struct sl_fmt_entry e;
    char buf[65536];
    int fd = open(path, O_RDONLY), rc;

    sl_plug_fdio_init(&fio, fd, 0, path);
    if (!seekable)
        fio.io.seek = NULL;
    rc = sl_plug_reader_open(p, &fio.io, lim, 0, &r, err);
    while (rc == 0 && (rc = sl_plug_reader_next(r, &e, err)) == 0) {
        int64_t n;
        if (skip)
            continue; /* next skips the data */
        while ((n = sl_plug_reader_read(r, buf, sizeof(buf), err)) > 0)
            ;
        if (n < 0)
            rc = -1;
    }
    sl_plug_reader_close(r);
    close(fd);
    return rc == 1 ? 0 : -1;
}

static void lim_init(struct sl_fmt_limits *lim)
{
    memset(lim, 0, sizeof(*lim));
    SL_ABI_SET(lim);
}

static void test_members(struct sl_plug_reg *reg)
{
    static const size_t zero = 0;
    size_t i;

    for (i = 0; i < SL_ARRAY_SIZE(fmt_names); i++) {
        const struct sl_plug *p = sl_plug_find(reg, SL_PLUGIN_FORMAT, fmt_names[i]);
        char *a = make_archive(p, "many", 300, &zero, 1);
        struct sl_fmt_limits lim;
        struct sl_err err = { 0 };
        int seekable;

        lim_init(&lim);
        lim.max_members = 300;
        TAP_EQ_INT(walk(p, a, &lim, true, false, &err), 0, "%s: 300 members within a limit of 300", fmt_names[i]);
        lim.max_members = 100;
        for (seekable = 0; seekable < 2; seekable++) {
            TAP_EQ_INT(walk(p, a, &lim, seekable, true, &err), -1, "%s: 300 members over a limit of 100 (%s)",
                       fmt_names[i], seekable ? "seekable" : "stream");
            TAP_OK(err.code == SL_ETOOBIG && strstr(err.msg, "max_members") != NULL, "%s: %s", fmt_names[i],
                   err.msg);
        }
        if (strcmp(fmt_names[i], "zip") == 0) {
            walk(p, a, &lim, true, true, &err);
            TAP_OK(strstr(err.msg, "central directory declares 300 members") != NULL,
                   "zip: refused from the central directory before reading members");
        }
        free(a);
    }
}

static void test_member_size(struct sl_plug_reg *reg)
{
    static const size_t sizes[] = { 1000, 3 * 1024 * 1024 };
    size_t i;

    for (i = 0; i < SL_ARRAY_SIZE(fmt_names); i++) {
        const struct sl_plug *p = sl_plug_find(reg, SL_PLUGIN_FORMAT, fmt_names[i]);
        char *a = make_archive(p, "big", 2, sizes, 2);
        struct sl_fmt_limits lim;
        struct sl_err err = { 0 };
        int seekable;

        lim_init(&lim);
        lim.max_member_size = 3 * 1024 * 1024;
        TAP_EQ_INT(walk(p, a, &lim, true, false, &err), 0, "%s: member at the size limit", fmt_names[i]);
        lim.max_member_size = 1024 * 1024;
        for (seekable = 0; seekable < 2; seekable++) {
            TAP_EQ_INT(walk(p, a, &lim, seekable, false, &err), -1, "%s: 3 MiB member over 1 MiB (%s)", fmt_names[i],
                       seekable ? "seekable" : "stream");
            TAP_OK(err.code == SL_ETOOBIG && strstr(err.msg, "max_member_size") && strstr(err.msg, "m000001.bin"),
                   "%s: message names the member and the limit: %s", fmt_names[i], err.msg);
        }
        free(a);
    }
}

/* 64 MiB of zeros compresses 250-1000x: a small bomb. */
static void test_bombs(struct sl_plug_reg *reg)
{
    static const size_t bomb[] = { 64 * 1024 * 1024 };
    size_t i;

    for (i = 1; i < SL_ARRAY_SIZE(fmt_names); i++) {
        const struct sl_plug *p = sl_plug_find(reg, SL_PLUGIN_FORMAT, fmt_names[i]);
        char *a = make_archive(p, "bomb", 1, bomb, 1);
        struct sl_fmt_limits lim;
        struct sl_err err = { 0 };
        struct stat st;
        int skip, seekable;

        stat(a, &st);
        printf("# %s bomb: %lld bytes for 64 MiB\n", fmt_names[i], (long long)st.st_size);
        lim_init(&lim);
        lim.max_ratio = 20;
        for (skip = 0; skip < 2; skip++) {
            for (seekable = 0; seekable < 2; seekable++) {
                bool zip_seek_skip = strcmp(fmt_names[i], "zip") == 0 && skip && seekable;
                if (zip_seek_skip) {
                    /* a seekable zip skips compressed bytes without inflating: no work, no limit */
                    TAP_EQ_INT(walk(p, a, &lim, seekable, skip, &err), 0, "zip: skipping a bomb member costs "
                               "nothing when seekable");
                    continue;
                }
                TAP_EQ_INT(walk(p, a, &lim, seekable, skip, &err), -1, "%s: ratio limit 20:1 (%s, %s)", fmt_names[i],
                           skip ? "skipping" : "reading", seekable ? "seekable" : "stream");
                TAP_OK(err.code == SL_ETOOBIG && strstr(err.msg, "max_ratio") != NULL, "%s: %s", fmt_names[i],
                       err.msg);
            }
        }
        lim_init(&lim);
        lim.max_total_size = 16 * 1024 * 1024;
        for (skip = 0; skip < 2; skip++) {
            TAP_EQ_INT(walk(p, a, &lim, false, skip, &err), -1, "%s: total limit 16 MiB (%s)", fmt_names[i],
                       skip ? "skipping" : "reading");
            TAP_OK(err.code == SL_ETOOBIG && strstr(err.msg, "max_total_size") != NULL, "%s: %s", fmt_names[i],
                   err.msg);
        }
        lim_init(&lim);
        lim.max_ratio = 100000;
        lim.max_total_size = 128 * 1024 * 1024;
        TAP_EQ_INT(walk(p, a, &lim, true, false, &err), 0, "%s: within generous limits it reads", fmt_names[i]);
        free(a);
    }
}

/* 64 MiB of zeros deflates to 65238 bytes: a 1028:1 member. The ratio is
 * the member's own (uncompressed / its compressed size), not uncompressed /
 * everything read from the shard (directory, read-ahead), which let it
 * through at 1000:1. Seekable, the directory's sizes refuse it at the first
 * read, before any data is inflated. */
static void test_zip_member_ratio(struct sl_plug_reg *reg)
{
    static const size_t bomb[] = { 64 * 1024 * 1024 };
    const struct sl_plug *p = sl_plug_find(reg, SL_PLUGIN_FORMAT, "zip");
    char *a = make_archive(p, "ratio1028", 1, bomb, 1);
    struct sl_plug_reader *r = NULL;
    struct sl_plug_fdio fio;
    struct sl_fmt_limits lim;
    struct sl_fmt_entry e;
    struct sl_err err = { 0 };
    char buf[4096];
    int seekable, fd;

    lim_init(&lim);
    lim.max_ratio = 1000;
    for (seekable = 0; seekable < 2; seekable++) {
        TAP_EQ_INT(walk(p, a, &lim, seekable, false, &err), -1, "zip: a 1028:1 member is over 1000:1 (%s)",
                   seekable ? "seekable" : "stream");
        TAP_OK(err.code == SL_ETOOBIG && strstr(err.msg, "max_ratio") && strstr(err.msg, "m000000.bin"), "%s",
               err.msg);
    }
    fd = open(a, O_RDONLY);
    sl_plug_fdio_init(&fio, fd, 0, a);
    TAP_EQ_INT(sl_plug_reader_open(p, &fio.io, &lim, 0, &r, &err), 0, "open");
    TAP_EQ_INT(sl_plug_reader_next(r, &e, &err), 0, "the member's header is fine");
    TAP_EQ_INT(sl_plug_reader_read(r, buf, sizeof(buf), &err), -1, "its first read is refused");
    TAP_OK(strstr(err.msg, "central directory declares 67108864 bytes from 65") != NULL &&
           strstr(err.msg, "(1028:1)") != NULL, "from the directory's sizes: %s", err.msg);
    sl_plug_reader_close(r);
    close(fd);
    lim.max_ratio = 1100;
    for (seekable = 0; seekable < 2; seekable++)
        TAP_EQ_INT(walk(p, a, &lim, seekable, false, &err), 0, "zip: the same member reads at 1100:1 (%s) %s",
                   seekable ? "seekable" : "stream", err.msg);
    free(a);
}

static void test_plain_tar_ratio(struct sl_plug_reg *reg)
{
    static const size_t big[] = { 8 * 1024 * 1024 };
    const struct sl_plug *p = sl_plug_find(reg, SL_PLUGIN_FORMAT, "tar");
    char *a = make_archive(p, "plain", 3, big, 1);
    struct sl_fmt_limits lim;
    struct sl_err err = { 0 };

    lim_init(&lim);
    lim.max_ratio = 2;
    TAP_EQ_INT(walk(p, a, &lim, true, true, &err), 0, "tar: skipping by seek never trips the ratio limit %s",
               err.msg);
    lim.max_total_size = 10 * 1024 * 1024;
    TAP_EQ_INT(walk(p, a, &lim, true, true, &err), -1, "tar: total size counts skipped data");
    free(a);
}

static void test_misuse(struct sl_plug_reg *reg)
{
    static const size_t sz[] = { 10 };
    const struct sl_plug *p = sl_plug_find(reg, SL_PLUGIN_FORMAT, "tgz");
    char *a = make_archive(p, "misuse", 2, sz, 1);
    struct sl_plug_reader *r = NULL;
    struct sl_plug_fdio fio;
    struct sl_fmt_entry e;
    struct sl_err err = { 0 };
    char buf[32];
    int fd = open(a, O_RDONLY);

    sl_plug_fdio_init(&fio, fd, 0, a);
    sl_plug_reader_open(p, &fio.io, NULL, 0, &r, &err);
    TAP_EQ_INT(sl_plug_reader_read(r, buf, sizeof(buf), &err), -1, "read before next");
    TAP_OK(strstr(err.msg, "before reader_next") != NULL, "message: %s", err.msg);
    TAP_EQ_INT(sl_plug_reader_next(r, &e, &err), 0, "first member");
    TAP_EQ_INT(sl_plug_reader_read(r, buf, sizeof(buf), &err), 10, "its data");
    TAP_EQ_INT(sl_plug_reader_read(r, buf, sizeof(buf), &err), 0, "then end of member");
    TAP_EQ_INT(sl_plug_reader_skip(r, &err), 0, "skip at the end is a no-op");
    TAP_EQ_INT(sl_plug_reader_next(r, &e, &err), 0, "second member");
    TAP_EQ_INT(sl_plug_reader_next(r, &e, &err), 1, "end of archive");
    TAP_EQ_INT(sl_plug_reader_next(r, &e, &err), 1, "still the end");
    sl_plug_reader_close(r);
    close(fd);
    free(a);
    {
        /* a format that cannot index says so */
        struct sl_plug_memio mio;
        sl_plug_memio_init(&mio, "", 0, NULL, "x");
        TAP_EQ_INT(sl_plug_index(p, &mio.io, NULL, NULL, NULL, &err), -1, "tgz has no index");
        TAP_OK(err.code == SL_EUNSUPP, "unsupported: %s", err.msg);
    }
}

int main(void)
{
    struct sl_plug_reg *reg = tp_load_builtin();

    test_members(reg);
    test_member_size(reg);
    test_bombs(reg);
    test_zip_member_ratio(reg);
    test_plain_tar_ratio(reg);
    test_misuse(reg);
    sl_plug_reg_free(reg);
    tp_cleanup();
    return tap_done();
}
