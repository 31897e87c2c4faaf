/* SPDX-License-Identifier: MIT
 * test_fmt_tar.c: plain-tar specifics: the member index against archives
 * made by GNU tar (gnu, pax, ustar and v7 formats, long and unicode names,
 * links, sparse files, a pax global header) and by our own writer, checked
 * by pread at the reported offsets and against the reader's offsets; a
 * hand-made base-256 size field; damaged input; true append in place
 * (GNU tar and our archives, twice, empty file, no end marker, abort,
 * truncated input, compressed formats refused).
 */
#include "test_plug_helpers.h"

struct ient {
    char *name;
    int64_t off, size;
};

struct ilist {
    struct ient *v;
    size_t n;
};

static int collect(void *ctx, const struct sl_fmt_entry *e)
{
    struct ilist *l = ctx;

    l->v = sl_xrealloc(l->v, (l->n + 1) * sizeof(*l->v));
    l->v[l->n].name = sl_xstrndup(e->name, e->name_len);
    l->v[l->n].off = e->data_offset;
    l->v[l->n].size = e->size;
    l->n++;
    return 0;
}

static void ilist_free(struct ilist *l)
{
    size_t i;

    for (i = 0; i < l->n; i++)
        free(l->v[i].name);
    free(l->v);
    l->v = NULL;
    l->n = 0;
}

static int index_file(const struct sl_plug *tar, const char *path, bool seekable, struct ilist *l, struct sl_err *err)
{
    struct sl_plug_fdio fio;
    int fd = open(path, O_RDONLY), rc;

    sl_plug_fdio_init(&fio, fd, 0, path);
    if (!seekable)
        fio.io.seek = NULL;
    rc = sl_plug_index(tar, &fio.io, NULL, collect, l, err);
    close(fd);
    return rc;
}

/* The reader's view: regular, non-sparse members with their offsets. */
static int reader_list(const struct sl_plug *tar, const char *path, struct ilist *l, size_t *nsparse,
                       struct sl_err *err)
{
    struct sl_plug_reader *r = NULL;
    struct sl_plug_fdio fio;
    struct sl_fmt_entry e;
    int fd = open(path, O_RDONLY), rc;

    *nsparse = 0;
    sl_plug_fdio_init(&fio, fd, 0, path);
    rc = sl_plug_reader_open(tar, &fio.io, NULL, 0, &r, err);
    while (rc == 0 && (rc = sl_plug_reader_next(r, &e, err)) == 0) {
        if (e.flags & SL_FMT_E_SPARSE) {
            (*nsparse)++;
            continue;
        }
        collect(l, &e);
    }
    sl_plug_reader_close(r);
    close(fd);
    return rc == 1 ? 0 : -1;
}

/* Source tree: expected regular files (name relative to src). */
static const char *const files[] = {
    "short.txt", "empty", "exact512.bin", "big.bin", NULL, NULL, NULL, "ünï/ファイル.json", "x.seg.jpg",
};
static char name100[128], name200[256], name310[400];
static size_t nfiles = SL_ARRAY_SIZE(files);

static const char *file_at(size_t i)
{
    return i == 4 ? name100 : i == 5 ? name200 : i == 6 ? name310 : files[i];
}

static size_t file_size(size_t i)
{
    static const size_t sizes[] = { 10, 0, 512, 1024 * 1024 + 3, 100, 2000, 777, 33, 4095 };
    return sizes[i];
}

static void make_tree(const char *src)
{
    size_t i, k;

    memset(name100, 0, sizeof(name100));
    memcpy(name100, "d/", 2);
    memset(name100 + 2, 'a', 94);
    memcpy(name100 + 96, ".txt", 4); /* exactly 100 bytes: no NUL in the header field */
    memset(name200, 0, sizeof(name200));
    for (k = 0; k < 3; k++)
        memset(name200 + k * 60, 'p' + (int)k, 59), name200[k * 60 + 59] = '/';
    memcpy(name200 + 180, "twohundred.bin", 14);
    memset(name310, 0, sizeof(name310));
    for (k = 0; k < 5; k++)
        memset(name310 + k * 60, 'a' + (int)k, 59), name310[k * 60 + 59] = '/';
    memcpy(name310 + 300, "x.seg.dat", 9);
    for (i = 0; i < nfiles; i++) {
        char *p = sl_xasprintf("%s/%s", src, file_at(i));
        unsigned char *d = malloc(file_size(i) + 1);
        tp_fill(d, file_size(i), (uint32_t)i + 1);
        sl_mkdir_parents(p, 0755);
        sl_write_file(p, d, file_size(i), false);
        free(d);
        free(p);
    }
    tp_sh("cd '%s' && ln -sf short.txt link && ln -f short.txt hard && mkdir -p emptydir", src);
    /* a sparse file: 1 MiB hole, 4 KiB of data, hole */
    tp_sh("cd '%s' && truncate -s 3M sparse.bin && printf 'DATA%%.0s' $(seq 1024) | dd of=sparse.bin bs=4096 "
          "seek=256 conv=notrunc status=none", src);
}

/* Check an index against the source tree: every entry's bytes at its
 * offset equal the file; returns the number of entries matched. */
static size_t check_index_bytes(const char *archive, const char *src, const struct ilist *l, bool *all_ok)
{
    int fd = open(archive, O_RDONLY);
    size_t i, ok = 0;

    *all_ok = true;
    for (i = 0; i < l->n; i++) {
        const char *n = l->v[i].name;
        char *p;
        struct sl_buf want;
        unsigned char *got;
        if (strncmp(n, "./", 2) == 0)
            n += 2;
        p = sl_xasprintf("%s/%s", src, n);
        if (tp_read_file(p, &want) != 0) { /* e.g. appended members: checked elsewhere */
            *all_ok = false;
            free(p);
            continue;
        }
        got = malloc(want.len + 1);
        if (l->v[i].size != (int64_t)want.len || pread(fd, got, want.len, l->v[i].off) != (ssize_t)want.len ||
            (want.len && memcmp(got, want.p, want.len) != 0)) {
            printf("#   %s: %lld bytes at %lld differ from the file (%zu bytes)\n", l->v[i].name,
                   (long long)l->v[i].size, (long long)l->v[i].off, want.len);
            *all_ok = false;
        } else {
            ok++;
        }
        free(got);
        sl_buf_free(&want);
        free(p);
    }
    close(fd);
    return ok;
}

static bool ilist_equal(const struct ilist *a, const struct ilist *b)
{
    size_t i;

    if (a->n != b->n) {
        printf("#   %zu vs %zu entries\n", a->n, b->n);
        return false;
    }
    for (i = 0; i < a->n; i++) {
        if (strcmp(a->v[i].name, b->v[i].name) != 0 || a->v[i].off != b->v[i].off || a->v[i].size != b->v[i].size) {
            printf("#   entry %zu: %s@%lld+%lld vs %s@%lld+%lld\n", i, a->v[i].name, (long long)a->v[i].off,
                   (long long)a->v[i].size, b->v[i].name, (long long)b->v[i].off, (long long)b->v[i].size);
            return false;
        }
    }
    return true;
}

static bool ilist_has(const struct ilist *l, const char *suffix)
{
    size_t i, sl = strlen(suffix);

    for (i = 0; i < l->n; i++) {
        size_t n = strlen(l->v[i].name);
        if (n >= sl && strcmp(l->v[i].name + n - sl, suffix) == 0)
            return true;
    }
    return false;
}

static void test_gnu_tar(const struct sl_plug *tar, const char *src)
{
    static const struct {
        const char *label, *opts;
        size_t expect; /* regular files expected in the index */
        bool sparse_member;
    } variants[] = {
        { "gnu", "--format=gnu --sparse", 9, true },
        { "pax", "--format=pax --sparse", 9, true },
        { "pax+global", "--format=pax --pax-option=comment=hello,mtime:=1700000000", 10, false },
        { "ustar", "--format=ustar", 9, false },  /* the 310-byte name cannot be stored: 8 + sparse.bin */
        { "v7", "--format=v7", 6, false },        /* no names over 99 bytes, no unicode trouble: see below */
        { "oldgnu", "--format=oldgnu --sparse", 9, true },
    };
    size_t i;

    if (!tp_have("tar")) {
        TAP_OK(1, "# SKIP GNU tar not installed");
        return;
    }
    for (i = 0; i < SL_ARRAY_SIZE(variants); i++) {
        char *a = tp_path("gnu-%s.tar", variants[i].label);
        struct ilist idx = { 0 }, rd = { 0 }, idx2 = { 0 };
        struct sl_err err = { 0 };
        size_t nsparse = 0, matched;
        bool ok;

        tp_sh("tar %s -cf '%s' -C '%s' . 2>/dev/null", variants[i].opts, a, src);
        TAP_EQ_INT(index_file(tar, a, true, &idx, &err), 0, "%s: index %s", variants[i].label, err.msg);
        matched = check_index_bytes(a, src, &idx, &ok);
        TAP_OK(ok && matched == idx.n, "%s: pread at every indexed offset returns the file's bytes (%zu members)",
               variants[i].label, matched);
        if (strcmp(variants[i].label, "v7") != 0)
            TAP_EQ_INT(idx.n, variants[i].expect, "%s: every regular file indexed, links/dirs%s not",
                       variants[i].label, variants[i].sparse_member ? "/sparse" : "");
        else
            TAP_OK(idx.n >= variants[i].expect, "v7: short-named regular files indexed (%zu)", idx.n);
        TAP_OK(!ilist_has(&idx, "/link") && !ilist_has(&idx, "/hard") && !ilist_has(&idx, "emptydir"),
               "%s: symlink, hard link and directory not indexed", variants[i].label);
        if (variants[i].sparse_member)
            TAP_OK(!ilist_has(&idx, "sparse.bin"), "%s: sparse member not indexed", variants[i].label);
        if (strcmp(variants[i].label, "gnu") == 0 || strcmp(variants[i].label, "pax") == 0) {
            TAP_OK(ilist_has(&idx, name310) && ilist_has(&idx, name200) && ilist_has(&idx, name100) &&
                       ilist_has(&idx, "ünï/ファイル.json"),
                   "%s: 100-, 200- and 310-byte and unicode names indexed", variants[i].label);
        }
        TAP_EQ_INT(reader_list(tar, a, &rd, &nsparse, &err), 0, "%s: reader %s", variants[i].label, err.msg);
        TAP_OK(ilist_equal(&idx, &rd), "%s: index and reader agree on names, offsets and sizes", variants[i].label);
        TAP_EQ_INT(nsparse, variants[i].sparse_member ? 1 : 0, "%s: reader flags the sparse member",
                   variants[i].label);
        TAP_EQ_INT(index_file(tar, a, false, &idx2, &err), 0, "%s: index without seek", variants[i].label);
        TAP_OK(ilist_equal(&idx, &idx2), "%s: same index when streamed", variants[i].label);
        ilist_free(&idx);
        ilist_free(&idx2);
        ilist_free(&rd);
        free(a);
    }
}

/* Our own writer, then the index. */
static void test_own_archive(const struct sl_plug *tar, const char *src)
{
    struct tp_member m[SL_ARRAY_SIZE(files)];
    char *a = tp_path("own.tar");
    struct ilist idx = { 0 }, rd = { 0 };
    struct sl_err err = { 0 };
    size_t i, nsparse, matched;
    bool ok;

    for (i = 0; i < nfiles; i++) {
        char *p = sl_xasprintf("%s/%s", src, file_at(i));
        struct sl_buf b;
        tp_read_file(p, &b);
        m[i].name = sl_xstrdup(file_at(i));
        m[i].size = b.len;
        m[i].data = (unsigned char *)(b.p ? b.p : sl_xstrdup(""));
        free(p);
    }
    TAP_EQ_INT(tp_write_archive(tar, a, m, nfiles, 0, &err), 0, "own: write %s", err.msg);
    for (i = 0; i < nfiles; i++) {
        free(m[i].name);
        free(m[i].data);
    }
    TAP_EQ_INT(index_file(tar, a, true, &idx, &err), 0, "own: index %s", err.msg);
    matched = check_index_bytes(a, src, &idx, &ok);
    TAP_OK(ok && matched == nfiles, "own: every member indexed with exact offsets (%zu)", matched);
    reader_list(tar, a, &rd, &nsparse, &err);
    TAP_OK(ilist_equal(&idx, &rd), "own: index and reader agree");
    if (tp_have("tar"))
        TAP_EQ_INT(tp_sh("tar -tf '%s' | grep -qx '%s'", a, name310), 0, "own: GNU tar lists the 310-byte name");
    ilist_free(&idx);
    ilist_free(&rd);
    free(a);
}

static void put_octal_checksum(unsigned char *h)
{
    unsigned sum = 0;
    size_t i;

    memset(h + 148, ' ', 8);
    for (i = 0; i < 512; i++)
        sum += h[i];
    snprintf((char *)h + 148, 8, "%06o", sum);
    h[155] = ' ';
}

static void test_base256(const struct sl_plug *tar)
{
    struct tp_member m = { .name = (char *)"b256.bin", .size = 1000 };
    char *a = tp_path("b256.tar");
    unsigned char data[1000], hdr[512];
    struct ilist idx = { 0 }, rd = { 0 };
    struct sl_err err = { 0 };
    size_t nsparse;
    int fd;

    tp_fill(data, sizeof(data), 5);
    m.data = data;
    tp_write_archive(tar, a, &m, 1, 0, &err);
    fd = open(a, O_RDWR);
    pread(fd, hdr, 512, 0);
    memset(hdr + 124, 0, 12);
    hdr[124] = 0x80;
    hdr[134] = 1000 >> 8;
    hdr[135] = 1000 & 0xff;
    put_octal_checksum(hdr);
    pwrite(fd, hdr, 512, 0);
    close(fd);
    TAP_EQ_INT(index_file(tar, a, true, &idx, &err), 0, "base-256 size: index %s", err.msg);
    TAP_OK(idx.n == 1 && idx.v[0].size == 1000 && idx.v[0].off == 512, "base-256 size decoded");
    reader_list(tar, a, &rd, &nsparse, &err);
    TAP_OK(ilist_equal(&idx, &rd), "base-256 size: reader agrees");
    if (tp_have("tar"))
        TAP_EQ_INT(tp_sh("tar -tvf '%s' | grep -q ' 1000 '", a), 0, "base-256 size: GNU tar agrees");
    ilist_free(&idx);
    ilist_free(&rd);
    free(a);
}

static void test_damaged(const struct sl_plug *tar, const char *src)
{
    char *a = tp_path("gnu-gnu.tar"), *t = tp_path("damaged.tar");
    struct ilist idx = { 0 };
    struct sl_err err = { 0 };
    struct sl_fmt_limits lim;
    struct sl_plug_memio mio;
    struct sl_buf b;
    unsigned char junk[4096];

    tp_read_file(a, &b);
    sl_write_file(t, b.p, b.len / 2, false);
    TAP_EQ_INT(index_file(tar, t, true, &idx, &err), -1, "index of a truncated tar fails");
    TAP_OK(strstr(err.msg, "truncated") != NULL && strstr(err.msg, "damaged.tar") != NULL, "message: %s", err.msg);
    ilist_free(&idx);
    TAP_EQ_INT(index_file(tar, t, false, &idx, &err), -1, "streamed index of a truncated tar fails");
    ilist_free(&idx);
    b.p[512 + 100] ^= 0x55; /* inside the second header block (or data): checksum or structure breaks */
    b.p[0] ^= 0x55;
    sl_write_file(t, b.p, b.len, false);
    TAP_EQ_INT(index_file(tar, t, true, &idx, &err), -1, "index of a tar with a damaged header fails");
    TAP_OK(strstr(err.msg, "bad checksum") != NULL, "message: %s", err.msg);
    ilist_free(&idx);
    tp_fill(junk, sizeof(junk), 3);
    sl_plug_memio_init(&mio, junk, sizeof(junk), NULL, "junk");
    TAP_EQ_INT(sl_plug_index(tar, &mio.io, NULL, collect, &idx, &err), -1, "index of random bytes fails");
    ilist_free(&idx);
    memset(&lim, 0, sizeof(lim));
    SL_ABI_SET(&lim);
    lim.max_members = 3;
    sl_buf_free(&b);
    tp_read_file(a, &b);
    sl_plug_memio_init(&mio, b.p, b.len, NULL, "limited");
    TAP_EQ_INT(sl_plug_index(tar, &mio.io, &lim, collect, &idx, &err), -1, "index stops at max_members");
    TAP_OK(err.code == SL_ETOOBIG, "limit message: %s", err.msg);
    ilist_free(&idx);
    sl_buf_free(&b);
    (void)src;
    free(a);
    free(t);
}

/* Append members to the tar at path; returns 0/-1. */
static int append(const struct sl_plug *tar, const char *path, const struct tp_member *m, size_t n, bool abort_it,
                  int64_t *off, struct sl_err *err)
{
    struct sl_plug_append ap;
    size_t i;
    int fd = open(path, O_RDWR), rc = -1;

    if (sl_plug_append_begin(tar, fd, path, &ap, err) != 0)
        goto out;
    *off = ap.offset;
    for (i = 0; i < n; i++) {
        if (sl_plug_writer_add(ap.w, m[i].name, strlen(m[i].name), (int64_t)m[i].size, 1700000000, 0644, err) != 0)
            goto fail;
        if (abort_it) { /* half the data, then give up */
            sl_plug_writer_write(ap.w, m[i].data, m[i].size / 2, err);
            break;
        }
        if (m[i].size && sl_plug_writer_write(ap.w, m[i].data, m[i].size, err) != 0)
            goto fail;
    }
    if (abort_it) {
        sl_plug_append_abort(&ap);
        rc = 0;
        goto out;
    }
    rc = sl_plug_append_commit(&ap, err);
    goto out;
fail:
    sl_plug_append_abort(&ap);
out:
    close(fd);
    return rc;
}

static struct tp_member *new_members(size_t *n, int round)
{
    struct tp_member *m = sl_xcalloc(3, sizeof(*m));
    size_t i;

    m[0].name = sl_xasprintf("new%d/first.txt", round);
    m[0].size = 5;
    m[1].name = sl_xasprintf("new%d/%s", round, name310);
    m[1].size = 2000;
    m[2].name = sl_xasprintf("new%d/empty.bin", round);
    m[2].size = 0;
    for (i = 0; i < 3; i++) {
        m[i].data = malloc(m[i].size + 1);
        tp_fill(m[i].data, m[i].size, (uint32_t)(round * 10 + (int)i));
    }
    *n = 3;
    return m;
}

/* All members readable, the appended ones with the right bytes. */
static bool verify_after_append(const struct sl_plug *tar, const char *path, size_t want_total,
                                const struct tp_member *added, size_t nadded)
{
    struct tp_member *got = NULL;
    struct sl_plug_fdio fio;
    struct sl_err err = { 0 };
    size_t n = 0, i, j, found = 0;
    int fd = open(path, O_RDONLY);
    bool ok;

    sl_plug_fdio_init(&fio, fd, 0, path);
    ok = tp_read_archive(tar, &fio.io, NULL, &got, &n, &err) == 0 && n == want_total;
    if (!ok)
        printf("#   read %zu members (want %zu): %s\n", n, want_total, err.msg);
    for (i = 0; i < nadded; i++)
        for (j = 0; j < n; j++)
            if (strcmp(got[j].name, added[i].name) == 0 && got[j].size == added[i].size &&
                memcmp(got[j].data, added[i].data, added[i].size) == 0)
                found++;
    tp_members_free(got, n);
    close(fd);
    return ok && found == nadded;
}

static size_t count_regular(const struct sl_plug *tar, const char *path)
{
    struct ilist l = { 0 };
    struct sl_err err = { 0 };
    size_t n, ns;

    reader_list(tar, path, &l, &ns, &err);
    n = l.n + ns;
    ilist_free(&l);
    return n;
}

static void test_append(struct sl_plug_reg *reg, const struct sl_plug *tar, const char *src)
{
    char *g = tp_path("gnu-gnu.tar"), *a = tp_path("append-gnu.tar"), *o = tp_path("own.tar");
    char *b = tp_path("append-own.tar"), *e = tp_path("append-empty.tar"), *nm = tp_path("append-nomarker.tar");
    struct tp_member *m1, *m2;
    struct sl_err err = { 0 };
    struct ilist idx = { 0 };
    size_t n1, n2, before, matched;
    struct stat st;
    struct sl_buf buf;
    int64_t off = -1;
    bool ok;

    m1 = new_members(&n1, 1);
    m2 = new_members(&n2, 2);

    /* GNU tar archive, appended twice */
    tp_copy(g, a, 0644);
    before = count_regular(tar, a);
    stat(a, &st);
    TAP_EQ_INT(append(tar, a, m1, n1, false, &off, &err), 0, "append to a GNU tar archive %s", err.msg);
    TAP_OK(off > 0 && off < st.st_size && off % 512 == 0, "append offset %lld is the end marker (file %lld bytes)",
           (long long)off, (long long)st.st_size);
    TAP_OK(verify_after_append(tar, a, before + n1, m1, n1), "old and new members read back");
    TAP_EQ_INT(append(tar, a, m2, n2, false, &off, &err), 0, "append again %s", err.msg);
    TAP_OK(verify_after_append(tar, a, before + n1 + n2, m2, n2), "second append reads back");
    if (tp_have("tar")) {
        TAP_EQ_INT(tp_sh("tar -tf '%s' >/dev/null 2>&1", a), 0, "GNU tar reads the appended archive cleanly");
        TAP_EQ_INT(tp_sh("tar -xOf '%s' new2/first.txt | cmp -s - /dev/stdin < /dev/null; "
                         "[ \"$(tar -xOf '%s' new1/first.txt | wc -c)\" -eq 5 ]", a, a), 0,
                   "GNU tar extracts an appended member");
        TAP_EQ_INT(tp_sh("[ \"$(tar -tf '%s' | grep -c '^new')\" -eq 6 ]", a), 0, "GNU tar lists all 6 new members");
    }
    TAP_EQ_INT(index_file(tar, a, true, &idx, &err), 0, "index after append");
    TAP_OK(ilist_has(&idx, "new2/first.txt") && ilist_has(&idx, "x.seg.dat"), "index has old and new members");
    ilist_free(&idx);

    /* our own (10 KiB-padded) archive */
    tp_copy(o, b, 0644);
    before = count_regular(tar, b);
    TAP_EQ_INT(append(tar, b, m1, n1, false, &off, &err), 0, "append to our own archive %s", err.msg);
    TAP_OK(verify_after_append(tar, b, before + n1, m1, n1), "reads back");
    TAP_EQ_INT(index_file(tar, b, true, &idx, &err), 0, "index after append to our archive");
    matched = check_index_bytes(b, src, &idx, &ok);
    TAP_EQ_INT(matched, nfiles, "old members keep their offsets");
    ilist_free(&idx);

    /* empty file */
    sl_write_file(e, "", 0, false);
    TAP_EQ_INT(append(tar, e, m1, n1, false, &off, &err), 0, "append to an empty file %s", err.msg);
    TAP_EQ_INT(off, 0, "offset 0");
    TAP_OK(verify_after_append(tar, e, n1, m1, n1), "a valid archive with just the new members");

    /* no end-of-archive marker: cut right after the last member's data */
    tp_read_file(o, &buf);
    {
        struct sl_plug_memio mio;
        int64_t end = -1;
        sl_plug_memio_init(&mio, buf.p, buf.len, NULL, "own");
        TAP_EQ_INT(sl_plug_append_offset(tar, &mio.io, &end, &err), 0, "append offset of our archive");
        TAP_OK(end > 0 && end + 1024 <= (int64_t)buf.len, "before the end marker and padding");
        sl_write_file(nm, buf.p, (size_t)end, false);
        sl_plug_memio_init(&mio, buf.p, (size_t)end, NULL, "cut");
        TAP_EQ_INT(sl_plug_append_offset(tar, &mio.io, &off, &err), 0, "append offset without a marker");
        TAP_EQ_INT(off, end, "is the end of the file");
    }
    before = count_regular(tar, nm);
    TAP_EQ_INT(append(tar, nm, m1, n1, false, &off, &err), 0, "append to a tar without end marker %s", err.msg);
    TAP_OK(verify_after_append(tar, nm, before + n1, m1, n1), "reads back");
    sl_buf_free(&buf);

    /* abort restores */
    tp_copy(g, a, 0644);
    stat(a, &st);
    before = count_regular(tar, a);
    TAP_EQ_INT(append(tar, a, m1, n1, true, &off, &err), 0, "append aborted half-way");
    {
        struct stat st2;
        stat(a, &st2);
        TAP_EQ_INT(st2.st_size, st.st_size, "size restored after abort");
        TAP_EQ_INT(count_regular(tar, a), before, "members unchanged after abort");
        if (tp_have("tar"))
            TAP_EQ_INT(tp_sh("tar -tf '%s' >/dev/null 2>&1", a), 0, "GNU tar still reads it");
    }

    /* truncated: refused */
    tp_read_file(g, &buf);
    sl_write_file(a, buf.p, buf.len / 2 + 100, false);
    TAP_EQ_INT(append(tar, a, m1, n1, false, &off, &err), -1, "append to a truncated tar refused");
    TAP_OK(strstr(err.msg, "truncated") != NULL, "message: %s", err.msg);
    sl_buf_free(&buf);

    /* compressed formats cannot */
    {
        const struct sl_plug *tgz = sl_plug_find(reg, SL_PLUGIN_FORMAT, "tgz");
        struct sl_plug_append ap;
        int fd = open(g, O_RDONLY);
        TAP_EQ_INT(sl_plug_append_begin(tgz, fd, "x.tgz", &ap, &err), -1, "tgz: true append refused");
        TAP_OK(err.code == SL_EUNSUPP && strstr(err.msg, "re-create"), "message: %s", err.msg);
        close(fd);
    }
    tp_members_free(m1, n1);
    tp_members_free(m2, n2);
    free(g);
    free(a);
    free(o);
    free(b);
    free(e);
    free(nm);
}

int main(void)
{
    struct sl_plug_reg *reg = tp_load_builtin();
    const struct sl_plug *tar = sl_plug_find(reg, SL_PLUGIN_FORMAT, "tar");
    char *src = tp_path("src");

    mkdir(src, 0755);
    make_tree(src);
    test_gnu_tar(tar, src);
    test_own_archive(tar, src);
    test_base256(tar);
    test_damaged(tar, src);
    test_append(reg, tar, src);
    sl_plug_reg_free(reg);
    free(src);
    tp_cleanup();
    return tap_done();
}
