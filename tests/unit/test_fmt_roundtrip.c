/* SPDX-License-Identifier: MIT
 * test_fmt_roundtrip.c: every shard format (tar, tgz, tar.lz4, zip deflate
 * and stored, and the out-of-tree tar.zst example): write members (empty,
 * tiny, block-sized, long and unicode names, several MiB) and read them back
 * seekable and streamed; detection by magic; interoperability with GNU tar,
 * the lz4/zstd CLIs and Python's zipfile in both directions; truncated,
 * corrupt and foreign input failing cleanly; find by name; writer misuse.
 */
#include "test_plug_helpers.h"

struct fmt_case {
    const char *plugin;  /* plugin name */
    const char *ext;     /* file extension */
    uint32_t wflags;
    const char *extract; /* shell command extracting "$A" into "$D", or NULL */
    const char *create;  /* shell command creating "$A" from files listed in "$L" under "$S" */
};

static const struct fmt_case fmts[] = {
    { "tar", ".tar", 0, "tar -xf \"$A\" -C \"$D\"", "tar -cf \"$A\" -C \"$S\" -T \"$L\"" },
    { "tgz", ".tgz", 0, "tar -xzf \"$A\" -C \"$D\"", "tar -czf \"$A\" -C \"$S\" -T \"$L\"" },
    { "tar.lz4", ".tar.lz4", 0, "lz4 -dc -q \"$A\" | tar -xf - -C \"$D\"",
      "tar -cf - -C \"$S\" -T \"$L\" | lz4 -q -BD -BX > \"$A\"" },
    { "zip", ".zip", 0,
      "python3 -c 'import sys,zipfile; zipfile.ZipFile(sys.argv[1]).extractall(sys.argv[2])' \"$A\" \"$D\"",
      "python3 -c 'import sys,zipfile,io\n"
      "class U(io.RawIOBase):\n"
      "  def writable(s): return True\n"
      "  def write(s, b): return sys.stdout.buffer.write(b)\n"
      "with zipfile.ZipFile(U(), \"w\") as z:\n"
      "  for i, n in enumerate(open(sys.argv[2], encoding=\"utf-8\").read().split(chr(10))):\n"
      "    if n: z.write(sys.argv[1] + \"/\" + n, n, zipfile.ZIP_DEFLATED if i % 2 else zipfile.ZIP_STORED)\n"
      "' \"$S\" \"$L\" > \"$A\"" },
    { "zip", ".zip", SL_FMT_W_STORE, NULL, NULL },
    { "tar.zst", ".tar.zst", 0, "zstd -dc -q \"$A\" | tar -xf - -C \"$D\"",
      "tar -cf - -C \"$S\" -T \"$L\" | zstd -q > \"$A\"" },
};

static struct tp_member *members;
static size_t nmembers;

static void add_member(const char *name, size_t size, int pattern)
{
    struct tp_member *m;

    members = sl_xrealloc(members, (nmembers + 1) * sizeof(*members));
    m = &members[nmembers++];
    m->name = sl_xstrdup(name);
    m->size = size;
    m->data = sl_xcalloc(1, size + 1);
    if (pattern)
        tp_fill(m->data, size, (uint32_t)nmembers * 7919u);
}

static void make_members(void)
{
    char longname[320];

    /* 305 bytes: > 255 (no ustar split possible), every component < NAME_MAX */
    memset(longname, 0, sizeof(longname));
    for (int k = 0; k < 5; k++)
        memset(longname + k * 60, 'a' + k, 59), longname[k * 60 + 59] = '/';
    memcpy(longname + 300, "x.dat", 5);
    add_member("empty.txt", 0, 1);
    add_member("one.bin", 1, 1);
    add_member("a/b/c.seg.jpg", 511, 1);
    add_member("block.bin", 512, 1);
    add_member("block1.bin", 513, 1);
    add_member(longname, 1000, 1);
    add_member("ünïcödé/ファイル.json", 77, 1);
    add_member("big.bin", 3 * 1024 * 1024 + 17, 1);
    add_member("zeros.bin", 2 * 1024 * 1024, 0);
    add_member("last.cls", 2, 1);
}

/* Write the members as files under dir (for the CLI tools). */
static void members_to_files(const char *dir, const char *listfile)
{
    FILE *l = fopen(listfile, "w");
    size_t i;

    for (i = 0; i < nmembers; i++) {
        char *p = sl_xasprintf("%s/%s", dir, members[i].name);
        sl_mkdir_parents(p, 0755);
        sl_write_file(p, members[i].data, members[i].size, false);
        fprintf(l, "%s\n", members[i].name);
        free(p);
    }
    fclose(l);
}

/* Compare extracted files under dir with the members. */
static bool files_match(const char *dir)
{
    size_t i;

    for (i = 0; i < nmembers; i++) {
        char *p = sl_xasprintf("%s/%s", dir, members[i].name);
        struct sl_buf b;
        bool same = tp_read_file(p, &b) == 0 && b.len == members[i].size &&
                    (b.len == 0 || memcmp(b.p, members[i].data, b.len) == 0);
        if (!same)
            printf("#   extracted %s differs or is missing\n", p);
        sl_buf_free(&b);
        free(p);
        if (!same)
            return false;
    }
    return true;
}

static int run_tool(const char *tmpl, const char *a, const char *d, const char *s, const char *l)
{
    return tp_sh("A='%s' D='%s' S='%s' L='%s'; ( %s ) >/dev/null 2>&1", a, d ? d : "", s ? s : "", l ? l : "", tmpl);
}

static const struct sl_plug *find_fmt(struct sl_plug_reg *reg, struct sl_plug_reg *ex, const char *name)
{
    const struct sl_plug *p = sl_plug_find(reg, SL_PLUGIN_FORMAT, name);
    return p ? p : sl_plug_find(ex, SL_PLUGIN_FORMAT, name);
}

static void read_both_ways(const struct sl_plug *p, const char *path, const char *what)
{
    struct sl_plug_fdio fio;
    struct sl_plug_memio mio;
    struct tp_member *got = NULL;
    struct sl_err err = { 0 };
    struct sl_buf b;
    size_t n = 0;
    int fd = open(path, O_RDONLY);

    sl_plug_fdio_init(&fio, fd, 0, path);
    TAP_OK(tp_read_archive(p, &fio.io, NULL, &got, &n, &err) == 0 && tp_same(members, nmembers, got, n),
           "%s: %s read back (seekable fd) %s", sl_plug_name(p), what, err.msg);
    tp_members_free(got, n);
    close(fd);
    tp_read_file(path, &b);
    tp_memio_stream(&mio, b.p, b.len, path);
    TAP_OK(tp_read_archive(p, &mio.io, NULL, &got, &n, &err) == 0 && tp_same(members, nmembers, got, n),
           "%s: %s read back (non-seekable stream) %s", sl_plug_name(p), what, err.msg);
    tp_members_free(got, n);
    sl_buf_free(&b);
}

/* Entry metadata, data offsets for plain tar, find by name. */
static void check_entries(const struct sl_plug *p, const char *path)
{
    struct sl_plug_reader *r = NULL;
    struct sl_plug_fdio fio;
    struct sl_fmt_entry e;
    struct sl_err err = { 0 };
    bool meta_ok = true, off_ok = true;
    size_t i = 0;
    int fd = open(path, O_RDONLY);
    bool plain_tar = strcmp(sl_plug_name(p), "tar") == 0;

    sl_plug_fdio_init(&fio, fd, 0, path);
    if (sl_plug_reader_open(p, &fio.io, NULL, 0, &r, &err) != 0) {
        TAP_OK(0, "%s: open for metadata: %s", sl_plug_name(p), err.msg);
        close(fd);
        return;
    }
    while (sl_plug_reader_next(r, &e, &err) == 0 && i < nmembers) {
        int64_t dt = e.mtime - (1700000000 + (int64_t)i);
        if (e.size != (int64_t)members[i].size && !(e.flags & SL_FMT_E_SIZE_UNKNOWN))
            meta_ok = false;
        if (dt < -2 || dt > 2 || e.mode != 0640 || e.type != SL_FMT_T_REG || !(e.flags & SL_FMT_E_REGULAR))
            meta_ok = false;
        if (plain_tar) {
            unsigned char *buf = malloc(members[i].size + 1);
            if (e.data_offset < 0 || pread(fd, buf, members[i].size, e.data_offset) != (ssize_t)members[i].size ||
                memcmp(buf, members[i].data, members[i].size) != 0)
                off_ok = false;
            free(buf);
        } else if (e.data_offset != -1) {
            off_ok = false;
        }
        i++;
    }
    TAP_OK(meta_ok && i == nmembers, "%s: sizes, mtimes, modes, types", sl_plug_name(p));
    TAP_OK(off_ok, "%s: %s", sl_plug_name(p), plain_tar ? "pread at data_offset gives each member's bytes"
                                                          : "no data offsets for a compressed format");
    sl_plug_reader_close(r);

    fio.pos = 0;
    TAP_EQ_INT(sl_plug_reader_open(p, &fio.io, NULL, 0, &r, &err), 0, "%s: reopen", sl_plug_name(p));
    TAP_EQ_INT(sl_plug_reader_find(r, "block1.bin", &e, &err), 0, "%s: find block1.bin", sl_plug_name(p));
    {
        char buf[600];
        int64_t n = sl_plug_reader_read(r, buf, sizeof(buf), &err);
        TAP_OK(n == 513 && memcmp(buf, members[4].data, 513) == 0, "%s: found member's data", sl_plug_name(p));
    }
    TAP_EQ_INT(sl_plug_reader_find(r, "a/b/c.seg.jpg", &e, &err), 1, "%s: members before the position are not "
               "found again", sl_plug_name(p));
    TAP_OK(err.code == SL_ENOENT && strstr(err.msg, "no member \"a/b/c.seg.jpg\""), "%s: not-found message: %s",
           sl_plug_name(p), err.msg);
    sl_plug_reader_close(r);
    close(fd);
}

static void check_detect(struct sl_plug_reg *reg, const struct sl_plug *p, const char *path)
{
    unsigned char head[4096];
    int fd = open(path, O_RDONLY);
    ssize_t n = read(fd, head, sizeof(head));

    close(fd);
    TAP_OK(n > 0 && sl_plug_format_by_magic(reg, head, (size_t)n) == p, "%s: detected by magic bytes",
           sl_plug_name(p));
}

/* Truncated and corrupted copies must fail cleanly (never crash). */
static void check_damage(const struct sl_plug *p, const char *path)
{
    struct tp_member *got = NULL;
    struct sl_plug_memio mio;
    struct sl_err err = { 0 };
    struct sl_buf b;
    size_t n = 0, cut, i;
    bool all_failed = true;
    int seekable;

    tp_read_file(path, &b);
    for (seekable = 0; seekable < 2; seekable++) {
        static const int pct[] = { 1, 10, 30, 50, 70, 90 };
        for (i = 0; i < SL_ARRAY_SIZE(pct); i++) {
            cut = b.len * (size_t)pct[i] / 100;
            if (seekable)
                sl_plug_memio_init(&mio, b.p, cut, NULL, "truncated");
            else
                tp_memio_stream(&mio, b.p, cut, "truncated");
            if (tp_read_archive(p, &mio.io, NULL, &got, &n, &err) == 0) {
                all_failed = false;
                printf("#   %s truncated to %d%% (%s) read without error\n", sl_plug_name(p), pct[i],
                       seekable ? "seekable" : "stream");
            } else if (strstr(err.msg, "truncated") == NULL && strstr(err.msg, "corrupt") == NULL &&
                       strstr(err.msg, "not") == NULL) {
                printf("#   unexpected message: %s\n", err.msg);
            }
            tp_members_free(got, n);
        }
    }
    TAP_OK(all_failed, "%s: truncated copies fail with an error", sl_plug_name(p));
    TAP_OK(strstr(err.msg, "truncated") != NULL, "%s: message names the problem and the shard: %s",
           sl_plug_name(p), err.msg);

    /* random corruption: any result is fine except a crash or a hang */
    for (i = 0; i < 40; i++) {
        unsigned char *c = malloc(b.len);
        uint32_t x = (uint32_t)i * 2654435761u + 7;
        size_t k;
        memcpy(c, b.p, b.len);
        for (k = 0; k < 1 + i % 8; k++) {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            c[(i < 20 ? x % SL_MIN(b.len, (size_t)4096) : x % b.len)] ^= (unsigned char)(1 + (x >> 24));
        }
        if (i % 2)
            sl_plug_memio_init(&mio, c, b.len, NULL, "corrupt");
        else
            tp_memio_stream(&mio, c, b.len, "corrupt");
        tp_read_archive(p, &mio.io, NULL, &got, &n, &err);
        tp_members_free(got, n);
        free(c);
    }
    TAP_OK(1, "%s: 40 corrupted copies read without crashing", sl_plug_name(p));
    sl_buf_free(&b);
}

static void check_foreign(const struct sl_plug *p)
{
    unsigned char junk[3000];
    struct tp_member *got = NULL;
    struct sl_plug_memio mio;
    struct sl_err err = { 0 };
    size_t n = 0;
    int rc;

    tp_fill(junk, sizeof(junk), 99);
    sl_plug_memio_init(&mio, junk, sizeof(junk), NULL, "ais://b/junk");
    TAP_EQ_INT(tp_read_archive(p, &mio.io, NULL, &got, &n, &err), -1, "%s: random bytes refused", sl_plug_name(p));
    TAP_OK(strstr(err.msg, "ais://b/junk") != NULL, "%s: message names the object: %s", sl_plug_name(p), err.msg);
    tp_members_free(got, n);
    sl_plug_memio_init(&mio, junk, 0, NULL, "empty");
    rc = tp_read_archive(p, &mio.io, NULL, &got, &n, &err);
    tp_members_free(got, n);
    if (strcmp(sl_plug_name(p), "tar") == 0)
        TAP_OK(rc == 0 && n == 0, "tar: a 0-byte object is an empty archive");
    else
        TAP_EQ_INT(rc, -1, "%s: a 0-byte object is refused", sl_plug_name(p));
}

static void check_writer_misuse(const struct sl_plug *p)
{
    struct sl_plug_writer *w = NULL;
    struct sl_plug_memio mio;
    struct sl_err err = { 0 };
    struct sl_buf out;
    static const char *bad[] = { "../x", "/abs", "a/../../b", "", "dir/", NULL };
    size_t i;

    sl_buf_init(&out);
    sl_plug_memio_init(&mio, NULL, 0, &out, "misuse");
    for (i = 0; bad[i]; i++) {
        TAP_EQ_INT(sl_plug_writer_open(p, &mio.io, 0, &w, &err), 0, "%s: writer", sl_plug_name(p));
        TAP_EQ_INT(sl_plug_writer_add(w, bad[i], strlen(bad[i]), 1, 0, 0, &err), -1, "%s: member name \"%s\" refused",
                   sl_plug_name(p), bad[i]);
        TAP_OK(err.code == SL_EINVAL, "%s: %s", sl_plug_name(p), err.msg);
        sl_plug_writer_close(w);
    }
    sl_plug_writer_open(p, &mio.io, 0, &w, &err);
    sl_plug_writer_add(w, "a.txt", 5, 10, 0, 0, &err);
    sl_plug_writer_write(w, "12345", 5, &err);
    TAP_EQ_INT(sl_plug_writer_add(w, "b.txt", 5, 1, 0, 0, &err), -1, "%s: next member before the data is complete",
               sl_plug_name(p));
    TAP_OK(strstr(err.msg, "of the declared 10 bytes") != NULL, "%s: %s", sl_plug_name(p), err.msg);
    sl_plug_writer_close(w);
    sl_plug_writer_open(p, &mio.io, 0, &w, &err);
    sl_plug_writer_add(w, "a.txt", 5, 3, 0, 0, &err);
    TAP_EQ_INT(sl_plug_writer_write(w, "12345", 5, &err), -1, "%s: more data than declared", sl_plug_name(p));
    sl_plug_writer_close(w);
    sl_plug_writer_open(p, &mio.io, 0, &w, &err);
    TAP_EQ_INT(sl_plug_writer_add(w, "a.txt", 5, -1, 0, 0, &err), -1, "%s: unknown size refused", sl_plug_name(p));
    sl_plug_writer_close(w);
    if (strcmp(sl_plug_name(p), "zip") == 0) {
        sl_plug_writer_open(p, &mio.io, 0, &w, &err);
        TAP_EQ_INT(sl_plug_writer_add(w, "bad\xff\xfe.txt", 9, 1, 0, 0, &err), -1, "zip: non-UTF-8 name refused");
        sl_plug_writer_close(w);
    }
    if (!(sl_plug_caps(p) & SL_FMT_CAP_APPEND)) {
        TAP_EQ_INT(sl_plug_writer_open(p, &mio.io, SL_FMT_W_APPEND, &w, &err), -1, "%s: append writer refused",
                   sl_plug_name(p));
        TAP_OK(err.code == SL_EUNSUPP, "%s: %s", sl_plug_name(p), err.msg);
    }

    /* closing without finish abandons: no trailer is written */
    {
        size_t before;
        sl_buf_reset(&out);
        sl_plug_writer_open(p, &mio.io, 0, &w, &err);
        sl_plug_writer_add(w, "a.txt", 5, 3, 0, 0, &err);
        sl_plug_writer_write(w, "123", 3, &err);
        before = out.len;
        sl_plug_writer_close(w);
        TAP_EQ_INT(out.len, before, "%s: close without finish writes nothing more", sl_plug_name(p));
    }
    sl_buf_free(&out);
}

/* tar keeps names that are not UTF-8 as raw bytes */
static void check_raw_name(const struct sl_plug *tar)
{
    struct tp_member m = { .name = (char *)"dir/raw\xff\xfe.bin", .size = 3, .data = (unsigned char *)"abc" };
    struct tp_member *got = NULL;
    struct sl_plug_memio mio;
    struct sl_err err = { 0 };
    struct sl_buf b;
    char *a = tp_path("raw.tar");
    size_t n = 0;

    TAP_EQ_INT(tp_write_archive(tar, a, &m, 1, 0, &err), 0, "tar: write a non-UTF-8 name %s", err.msg);
    tp_read_file(a, &b);
    sl_plug_memio_init(&mio, b.p, b.len, NULL, a);
    TAP_OK(tp_read_archive(tar, &mio.io, NULL, &got, &n, &err) == 0 && tp_same(&m, 1, got, n),
           "tar: non-UTF-8 name read back byte for byte");
    tp_members_free(got, n);
    sl_buf_free(&b);
    free(a);
}

int main(void)
{
    struct sl_plug_reg *reg = tp_load_builtin(), *ex = NULL;
    char *exdir = tp_path("ex"), *src = tp_path("src"), *list = tp_path("list.txt");
    struct sl_err err = { 0 };
    size_t i;

    mkdir(exdir, 0755);
    {
        char *from = sl_xasprintf("%s/tests/plugins/fmt_tarzst.so", tp_build());
        char *to = sl_xasprintf("%s/fmt_tarzst.so", exdir);
        tp_copy(from, to, 0755);
        free(from);
        free(to);
    }
    sl_plug_reg_load(exdir, &ex, &err);
    make_members();
    mkdir(src, 0755);
    members_to_files(src, list);

    for (i = 0; i < SL_ARRAY_SIZE(fmts); i++) {
        const struct fmt_case *f = &fmts[i];
        const struct sl_plug *p = find_fmt(reg, ex, f->plugin);
        char *a = tp_path("ours%zu%s", i, f->ext), *d = tp_path("x%zu", i), *b = tp_path("theirs%zu%s", i, f->ext);
        const char *tool = f->extract ? (strstr(f->extract, "lz4") ? "lz4" : strstr(f->extract, "zstd") ? "zstd"
                                         : strstr(f->extract, "python3") ? "python3" : "tar") : NULL;

        if (p == NULL) {
            TAP_OK(0, "plugin %s loaded", f->plugin);
            continue;
        }
        printf("# format %s%s\n", f->plugin, f->wflags & SL_FMT_W_STORE ? " (stored)" : "");
        TAP_EQ_INT(tp_write_archive(p, a, members, nmembers, f->wflags, &err), 0, "%s: write %zu members %s",
                   f->plugin, nmembers, err.msg);
        read_both_ways(p, a, "our archive");
        check_entries(p, a);
        check_detect(p == find_fmt(reg, NULL, f->plugin) ? reg : ex, p, a);
        if (f->extract && tp_have(tool) && tp_have("tar")) {
            mkdir(d, 0755);
            TAP_EQ_INT(run_tool(f->extract, a, d, NULL, NULL), 0, "%s: %s extracts our archive", f->plugin, tool);
            TAP_OK(files_match(d), "%s: extracted files equal the members", f->plugin);
        } else if (f->extract) {
            TAP_OK(1, "# SKIP %s not installed", tool);
        }
        if (f->create && tp_have(tool)) {
            TAP_EQ_INT(run_tool(f->create, b, NULL, src, list), 0, "%s: %s creates an archive", f->plugin, tool);
            read_both_ways(p, b, "archive made by the CLI tool");
        }
        if (!(f->wflags & SL_FMT_W_STORE)) {
            check_damage(p, a);
            check_foreign(p);
            check_writer_misuse(p);
        }
        free(a);
        free(b);
        free(d);
    }
    check_raw_name(sl_plug_find(reg, SL_PLUGIN_FORMAT, "tar"));
    tp_members_free(members, nmembers);
    sl_plug_reg_free(ex);
    sl_plug_reg_free(reg);
    free(exdir);
    free(src);
    free(list);
    tp_cleanup();
    return tap_done();
}
