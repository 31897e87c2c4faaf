/* SPDX-License-Identifier: MIT
 * test_plug_load.c: the plugin loader (plugins/plug_load.c): every refusal
 * path with real .so files (built from tests/plugins), a good plugin loading and
 * unloading, the registry lookups (name, extension, archmime, magic), the
 * JSON listing, the host API table and member-name validation.
 */
#include <jansson.h>

#include "test_plug_helpers.h"

static char *testplug(const char *name)
{
    return sl_xasprintf("%s/tests/plugins/%s.so", tp_build(), name);
}

/* Copy a built test plugin into dir under another file name. */
static void put(const char *dir, const char *plugin, const char *as, mode_t mode)
{
    char *src = testplug(plugin), *dst = sl_xasprintf("%s/%s", dir, as);

    if (tp_copy(src, dst, mode) != 0) {
        printf("# cannot copy %s to %s: %s\n", src, dst, strerror(errno));
        exit(2);
    }
    free(src);
    free(dst);
}

/* Path helpers that free their argument (keeps the tests leak-free under ASan). */
static void chmod_in(const char *dir, const char *file, mode_t mode)
{
    char *p = sl_xasprintf("%s/%s", dir, file);
    chmod(p, mode);
    free(p);
}

static void write_in(const char *dir, const char *file)
{
    char *p = sl_xasprintf("%s/%s", dir, file);
    sl_write_file(p, "x", 1, false);
    free(p);
}

/* The listing entry for file base name `file`, or NULL. */
static json_t *entry_for(json_t *list, const char *file)
{
    size_t i;
    json_t *o;

    json_array_foreach(list, i, o) {
        const char *f = json_string_value(json_object_get(o, "file"));
        if (f != NULL && strlen(f) >= strlen(file) && strcmp(f + strlen(f) - strlen(file), file) == 0)
            return o;
    }
    return NULL;
}

static void expect_refused(json_t *list, const char *file, const char *reason_part)
{
    json_t *o = entry_for(list, file);
    const char *st = o ? json_string_value(json_object_get(o, "status")) : NULL;
    const char *why = o ? json_string_value(json_object_get(o, "reason")) : NULL;

    TAP_OK(st && strcmp(st, "refused") == 0 && why && strstr(why, reason_part) != NULL, "%s refused (%s)", file,
           reason_part);
    if (why && !strstr(why, reason_part))
        printf("#   reason was: %s\n", why);
}

static void test_good_plugin(void)
{
    char *dir = tp_path("good");
    struct sl_plug_reg *reg = NULL;
    struct sl_plug_key *k = NULL;
    struct sl_err err = { 0 };
    const struct sl_plug *p;
    char key[64];
    size_t klen = 0, eo = 0, el = 0;
    uint32_t fl = 0;
    json_t *js, *o;

    mkdir(dir, 0755);
    put(dir, "good", "good.so", 0755);
    unsetenv("SL_TEST_GOOD_INIT");
    unsetenv("SL_TEST_GOOD_FINI");
    TAP_EQ_INT(sl_plug_reg_load(dir, &reg, &err), 0, "load a directory with one good plugin");
    TAP_EQ_INT(sl_plug_count(reg), 1, "one plugin loaded");
    TAP_EQ_INT(sl_plug_refused_count(reg), 0, "nothing refused");
    p = sl_plug_find(reg, SL_PLUGIN_SAMPLE_KEY, "test_good");
    TAP_OK(p != NULL, "found by kind and name");
    TAP_OK(sl_plug_find(reg, SL_PLUGIN_FORMAT, "test_good") == NULL, "not found under another kind");
    TAP_OK(sl_plug_find(reg, 0, "test_good") == p, "found under any kind");
    TAP_EQ_STR(getenv("SL_TEST_GOOD_INIT"), "test_good", "plugin init ran");
    TAP_EQ_STR(p ? sl_plug_version(p) : NULL, "0.0.1", "version");
    TAP_OK(p && strstr(sl_plug_file(p), "/good.so") != NULL, "file is the realpath of the .so");

    TAP_EQ_INT(sl_plug_key_new(p, NULL, &k, &err), 0, "key instance");
    TAP_EQ_INT(sl_plug_key_apply(k, "a/b.c", 5, key, sizeof(key), &klen, &eo, &el, &fl, &err), 0, "key applied");
    TAP_EQ_STR(key, "a/b.c", "test plugin's key is the whole name");
    TAP_EQ_INT(sl_plug_reg_free(reg), -1, "unloading refused while a key instance is open");
    TAP_OK(getenv("SL_TEST_GOOD_FINI") == NULL, "fini not called while in use");
    sl_plug_key_free(k);

    js = sl_plug_reg_json(reg);
    o = json_array_get(js, 0);
    TAP_OK(json_is_array(js) && json_array_size(js) == 1, "listing has one entry");
    TAP_EQ_STR(json_string_value(json_object_get(o, "name")), "test_good", "listing: name");
    TAP_EQ_STR(json_string_value(json_object_get(o, "kind")), "sample_key", "listing: kind");
    TAP_EQ_STR(json_string_value(json_object_get(o, "version")), "0.0.1", "listing: version");
    TAP_EQ_STR(json_string_value(json_object_get(o, "status")), "loaded", "listing: status");
    TAP_OK(json_is_array(json_object_get(o, "extensions")), "listing: extensions array");
    TAP_OK(json_is_string(json_object_get(o, "file")), "listing: file");
    json_decref(js);

    TAP_EQ_INT(sl_plug_reg_free(reg), 0, "unload");
    TAP_EQ_STR(getenv("SL_TEST_GOOD_FINI"), "test_good", "plugin fini ran at unload");
    free(dir);
}

static void test_refusals(void)
{
    char *dir = tp_path("bad"), *outside = tp_path("outside"), *link = NULL, *target = NULL;
    struct sl_plug_reg *reg = NULL;
    struct sl_err err = { 0 };
    bool root = geteuid() == 0;
    json_t *js;

    mkdir(dir, 0755);
    mkdir(outside, 0755);
    /* sorted load order: a_good first, so b_dup (same name) is the duplicate */
    put(dir, "good", "a_good.so", 0755);
    put(dir, "dup_name", "b_dup.so", 0755);
    put(dir, "bad_abi", "bad_abi.so", 0755);
    put(dir, "missing_fn", "missing_fn.so", 0755);
    put(dir, "backend_partial", "backend_partial.so", 0755);
    put(dir, "init_fail", "init_fail.so", 0755);
    put(dir, "no_entry", "no_entry.so", 0755);
    put(dir, "entry_null", "entry_null.so", 0755);
    put(dir, "good", "world_writable.so", 0755);
    chmod_in(dir, "world_writable.so", 0777);
    put(dir, "good", "group_writable.so", 0775);
    put(outside, "good", "elsewhere.so", 0755);
    link = sl_xasprintf("%s/link_out.so", dir);
    target = sl_xasprintf("%s/elsewhere.so", outside);
    TAP_EQ_INT(symlink(target, link), 0, "symlink to a plugin outside the directory");
    free(link);
    link = sl_xasprintf("%s/link_in.so", dir);
    TAP_EQ_INT(symlink("a_good.so", link), 0, "symlink to a plugin inside the directory");
    free(link);
    link = sl_xasprintf("%s/dangling.so", dir);
    TAP_EQ_INT(symlink("nowhere.so", link), 0, "dangling symlink");
    free(link);
    if (root) {
        put(dir, "good", "not_owned.so", 0755);
        char *no = sl_xasprintf("%s/not_owned.so", dir);
        TAP_EQ_INT(chown(no, 65534, 65534), 0, "chown a plugin to nobody");
        free(no);
    }
    /* files that are not plugins at all are ignored */
    write_in(dir, "README");
    write_in(dir, ".hidden.so");

    TAP_EQ_INT(sl_plug_reg_load(dir, &reg, &err), 0, "load a directory full of broken plugins");
    TAP_EQ_INT(sl_plug_count(reg), 1, "only the good plugin loaded");
    TAP_OK(sl_plug_find(reg, 0, "test_good") != NULL && strstr(sl_plug_file(sl_plug_at(reg, 0)), "a_good.so"),
           "first file with the name wins");
    js = sl_plug_reg_json(reg);
    /* each file refused, with a part of its reason */
    struct refusal {
        const char *file, *reason;
    };
    static const struct refusal refused[] = {
        { "b_dup.so", "already loaded" },
        { "link_in.so", "already loaded" },
        { "bad_abi.so", "ABI 99." },
        { "missing_fn.so", "missing required key operation" },
        { "backend_partial.so", "missing backend operation" },
        { "init_fail.so", "deliberately failing init" },
        { "no_entry.so", "no sl_plugin_entry symbol" },
        { "entry_null.so", "needs host ABI minor 7" },
        { "world_writable.so", "writable by everyone" },
        { "group_writable.so", "writable by its group" },
        { "link_out.so", "outside the plugin directory" },
        { "dangling.so", "realpath failed" },
    };
    for (size_t i = 0; i < SL_ARRAY_SIZE(refused); i++)
        expect_refused(js, refused[i].file, refused[i].reason);
    if (root)
        expect_refused(js, "not_owned.so", "owned by uid 65534");
    else
        TAP_OK(1, "# SKIP ownership check needs root");
    TAP_OK(entry_for(js, "README") == NULL && entry_for(js, ".hidden.so") == NULL, "non-plugin files ignored");
    TAP_EQ_INT(sl_plug_refused_count(reg), root ? 13 : 12, "refusal count");
    json_decref(js);
    TAP_EQ_INT(sl_plug_reg_free(reg), 0, "unload after refusals");

    TAP_EQ_INT(sl_plug_reg_load("/nonexistent/plugins", &reg, &err), -1, "missing directory is an error");
    TAP_OK(err.code == SL_EINVAL && strstr(err.msg, "plugins.dir") != NULL, "message says what to fix: %s", err.msg);
    TAP_EQ_INT(sl_plug_reg_load("", &reg, &err), 0, "empty directory setting: no plugins");
    TAP_EQ_INT(sl_plug_count(reg), 0, "empty registry");
    sl_plug_reg_free(reg);
    free(dir);
    free(outside);
    free(target);
}

static void test_ext_conflict(void)
{
    char *dir = tp_path("conflict"), *src = sl_xasprintf("%s/lib/shale/fmt_tar.so", tp_build());
    char *dst = sl_xasprintf("%s/a_fmt_tar.so", dir);
    struct sl_plug_reg *reg = NULL;
    struct sl_err err = { 0 };
    json_t *js;

    mkdir(dir, 0755);
    tp_copy(src, dst, 0755);
    put(dir, "fmt_conflict", "b_conflict.so", 0755);
    TAP_EQ_INT(sl_plug_reg_load(dir, &reg, &err), 0, "load tar and a plugin claiming .tar too");
    TAP_EQ_INT(sl_plug_count(reg), 1, "only the first owner of .tar loaded");
    js = sl_plug_reg_json(reg);
    expect_refused(js, "b_conflict.so", "extension \".tar\" already belongs to format \"tar\"");
    json_decref(js);
    sl_plug_reg_free(reg);

    unlink(dst);
    TAP_EQ_INT(sl_plug_reg_load(dir, &reg, &err), 0, "load the other plugin alone");
    TAP_OK(sl_plug_find(reg, SL_PLUGIN_FORMAT, "test_tarcopy") != NULL, "alone it loads");
    TAP_OK(sl_plug_format_by_ext(reg, "x.tar") == sl_plug_find(reg, 0, "test_tarcopy"), "and owns .tar");
    sl_plug_reg_free(reg);
    free(dir);
    free(src);
    free(dst);
}

static void test_builtin_lookup(void)
{
    struct sl_plug_reg *reg = tp_load_builtin();
    const struct sl_plug *tar = sl_plug_find(reg, SL_PLUGIN_FORMAT, "tar");
    const struct sl_plug *tgz = sl_plug_find(reg, SL_PLUGIN_FORMAT, "tgz");
    const struct sl_plug *lz4 = sl_plug_find(reg, SL_PLUGIN_FORMAT, "tar.lz4");
    const struct sl_plug *zip = sl_plug_find(reg, SL_PLUGIN_FORMAT, "zip");
    static const char *keys[] = { "base_name", "full_name", "collapse_all_dir", "regex" };
    unsigned char head[1024];
    json_t *js;
    size_t i;

    TAP_EQ_INT(sl_plug_count(reg), 11, "all built-in plugins load (4 formats, 4 key rules, 3 backends)");
    TAP_EQ_INT(sl_plug_refused_count(reg), 0, "none refused");
    TAP_OK(tar && tgz && lz4 && zip, "tar, tgz, tar.lz4, zip formats present");
    TAP_OK(sl_plug_backend(reg, "aws") != NULL && sl_plug_backend(reg, "gcp") == NULL,
           "backend for provider aws present, none for gcp");
    TAP_OK(sl_plug_backend(reg, "aws") == sl_plug_find(reg, SL_PLUGIN_BACKEND, "s3"), "aws backend is s3");
    TAP_OK(sl_plug_backend(reg, "ht") == sl_plug_find(reg, SL_PLUGIN_BACKEND, "http"), "ht backend is http");
    TAP_OK(sl_plug_backend(reg, "ais") == sl_plug_find(reg, SL_PLUGIN_BACKEND, "ais"), "remote clusters: ais");
    for (i = 0; i < SL_ARRAY_SIZE(keys); i++)
        TAP_OK(sl_plug_find(reg, SL_PLUGIN_SAMPLE_KEY, keys[i]) != NULL, "key rule %s present", keys[i]);
    TAP_OK(tar && (sl_plug_caps(tar) & (SL_FMT_CAP_APPEND | SL_FMT_CAP_INDEX | SL_FMT_CAP_OFFSETS)) ==
                      (SL_FMT_CAP_APPEND | SL_FMT_CAP_INDEX | SL_FMT_CAP_OFFSETS), "tar can append and index");
    TAP_OK(tgz && !(sl_plug_caps(tgz) & SL_FMT_CAP_APPEND), "tgz cannot append");
    TAP_EQ_STR(tar ? sl_plug_mime(tar) : NULL, "application/x-tar", "tar mime");

    TAP_OK(sl_plug_format_by_ext(reg, "shard-000001.tar") == tar, "by ext: .tar");
    TAP_OK(sl_plug_format_by_ext(reg, "a/b/s.tgz") == tgz, "by ext: .tgz");
    TAP_OK(sl_plug_format_by_ext(reg, "s.tar.gz") == tgz, "by ext: .tar.gz (longest match)");
    TAP_OK(sl_plug_format_by_ext(reg, "S.TAR.GZ") == tgz, "by ext: case-insensitive");
    TAP_OK(sl_plug_format_by_ext(reg, "s.tar.lz4") == lz4, "by ext: .tar.lz4 before .tar");
    TAP_OK(sl_plug_format_by_ext(reg, "s.zip") == zip, "by ext: .zip");
    TAP_OK(sl_plug_format_by_ext(reg, "s.gz") == NULL, "by ext: bare .gz is not a shard");
    TAP_OK(sl_plug_format_by_ext(reg, "s.lz4") == NULL, "by ext: bare .lz4 is not a shard");
    TAP_OK(sl_plug_format_by_ext(reg, "s.tar.zst") == NULL, "by ext: .tar.zst without its plugin");
    TAP_OK(sl_plug_format_by_ext(reg, ".tar") == NULL, "by ext: the extension alone is not a name");
    TAP_OK(sl_plug_format_by_ext(reg, "tarball") == NULL, "by ext: no dot");

    TAP_OK(sl_plug_format_by_mime(reg, "tar.gz") == tgz, "archmime tar.gz");
    TAP_OK(sl_plug_format_by_mime(reg, ".tgz") == tgz, "archmime .tgz");
    TAP_OK(sl_plug_format_by_mime(reg, "application/x-tar") == tar, "archmime application/x-tar");
    TAP_OK(sl_plug_format_by_mime(reg, "TAR") == tar, "archmime TAR");
    TAP_OK(sl_plug_format_by_mime(reg, "x-tar.lz4") == lz4, "archmime containing tar.lz4");
    TAP_OK(sl_plug_format_by_mime(reg, "application/zip") == zip, "archmime application/zip");
    TAP_OK(sl_plug_format_by_mime(reg, "rar") == NULL, "archmime unknown");
    TAP_OK(sl_plug_format_for(reg, "x.zip", "tar", NULL, 0) == tar, "archmime overrides the extension");

    /* magic bytes, no extension */
    memset(head, 0, sizeof(head));
    memcpy(head, "PK\x03\x04", 4);
    TAP_OK(sl_plug_format_by_magic(reg, head, 30) == zip, "magic: zip local header");
    memcpy(head, "PK\x05\x06", 4);
    TAP_OK(sl_plug_format_by_magic(reg, head, 22) == zip, "magic: empty zip");
    memset(head, 0, sizeof(head));
    memcpy(head, "\x1f\x8b\x08", 3);
    TAP_OK(sl_plug_format_by_magic(reg, head, 10) == tgz, "magic: gzip");
    memcpy(head, "\x04\x22\x4d\x18", 4);
    TAP_OK(sl_plug_format_by_magic(reg, head, 10) == lz4, "magic: lz4 frame");
    memset(head, 0, sizeof(head));
    memcpy(head + 257, "ustar", 5);
    TAP_OK(sl_plug_format_by_magic(reg, head, 300) == tar, "magic: ustar at 257 (short head)");
    memset(head, 0, sizeof(head));
    TAP_OK(sl_plug_format_by_magic(reg, head, 1024) == tar, "magic: all zeros is an empty tar");
    TAP_OK(sl_plug_format_by_magic(reg, "hello world", 11) == NULL, "magic: text is nothing");
    TAP_OK(sl_plug_format_for(reg, "noext", NULL, "PK\x03\x04", 4) == zip, "format_for falls back to magic");

    js = sl_plug_reg_json(reg);
    TAP_EQ_INT(json_array_size(js), 11, "listing has every plugin");
    for (i = 0; i < json_array_size(js); i++) {
        json_t *o = json_array_get(js, i);
        if (strcmp(json_string_value(json_object_get(o, "name")), "tgz") == 0) {
            json_t *ex = json_object_get(o, "extensions");
            TAP_OK(json_array_size(ex) == 2 && strcmp(json_string_value(json_array_get(ex, 1)), ".tar.gz") == 0,
                   "listing: tgz extensions");
            TAP_EQ_STR(json_string_value(json_object_get(o, "kind")), "format", "listing: tgz kind");
        }
    }
    json_decref(js);
    sl_plug_reg_free(reg);
}

static void test_example_plugin(void)
{
    char *dir = tp_path("withzst"), *p;
    struct sl_plug_reg *reg = NULL;
    struct sl_err err = { 0 };
    const char *names[] = { "fmt_tar.so", "fmt_tgz.so", NULL };
    size_t i;

    mkdir(dir, 0755);
    for (i = 0; names[i]; i++) {
        char *src = sl_xasprintf("%s/lib/shale/%s", tp_build(), names[i]);
        p = sl_xasprintf("%s/%s", dir, names[i]);
        tp_copy(src, p, 0755);
        free(src);
        free(p);
    }
    put(dir, "fmt_tarzst", "fmt_tarzst.so", 0755);
    TAP_EQ_INT(sl_plug_reg_load(dir, &reg, &err), 0, "load the out-of-tree tar.zst example beside tar and tgz");
    TAP_EQ_INT(sl_plug_count(reg), 3, "three formats");
    TAP_OK(sl_plug_format_by_ext(reg, "a.tar.zst") == sl_plug_find(reg, 0, "tar.zst"), "by ext: .tar.zst");
    TAP_OK(sl_plug_format_by_ext(reg, "a.tzst") == sl_plug_find(reg, 0, "tar.zst"), "by ext: .tzst");
    TAP_OK(sl_plug_format_by_ext(reg, "a.tar") == sl_plug_find(reg, 0, "tar"), "by ext: .tar still tar");
    TAP_OK(sl_plug_format_by_magic(reg, "\x28\xb5\x2f\xfd", 4) == sl_plug_find(reg, 0, "tar.zst"), "magic: zstd");
    sl_plug_reg_free(reg);
    free(dir);
}

static void test_host_api(void)
{
    const struct sl_host_api *h = sl_plug_host_api();
    char *a, *b;

    TAP_EQ_INT(h->abi_major, SL_PLUGIN_ABI_MAJOR, "host table: ABI major");
    TAP_EQ_INT(h->struct_size, sizeof(struct sl_host_api), "host table: struct size");
    a = h->scratch(100);
    b = h->scratch(50);
    TAP_OK(a != NULL && a == b, "scratch: reused per thread");
    b = h->scratch(1 << 20);
    TAP_OK(b != NULL, "scratch: grows");
    memset(b, 1, 1 << 20);
    TAP_OK(h->scratch(17 * 1024 * 1024) == NULL, "scratch: refuses over 16 MiB");
    a = h->alloc(10);
    a = h->realloc(a, 1000);
    TAP_OK(a != NULL, "alloc/realloc");
    h->free(a);
    h->log(SL_PLUG_LOG_DEBUG, "debug line from a test: %d", 42);
    TAP_OK(h->log_enabled(SL_PLUG_LOG_ERR), "errors are always logged");
}

static void test_member_names(void)
{
    static const struct {
        const char *name;
        bool ok;
    } cases[] = {
        { "a.jpg", true },         { "dir/a.seg.jpg", true }, { "./a.jpg", true },       { "a..b", true },
        { "..a/b", true },         { "a/..b", true },         { ".hidden", true },       { "", false },
        { "/etc/passwd", false },  { "../x", false },         { "a/../../x", false },    { "a/..", false },
        { "..", false },           { "dir/", false },
    };
    struct sl_err err = { 0 };
    char big[5000];
    size_t i;

    for (i = 0; i < SL_ARRAY_SIZE(cases); i++)
        TAP_EQ_INT(sl_plugin_member_name_check(cases[i].name, strlen(cases[i].name)) == NULL, cases[i].ok,
                   "member name \"%s\" %s", cases[i].name, cases[i].ok ? "accepted" : "rejected");
    TAP_OK(sl_plugin_member_name_check("a\0b", 3) != NULL, "embedded NUL rejected");
    memset(big, 'a', sizeof(big));
    TAP_OK(sl_plugin_member_name_check(big, sizeof(big)) != NULL, "over 4096 bytes rejected");
    TAP_EQ_INT(sl_plug_member_name_check(big, 2000, &err), -1, "host check: over the object-name limit");
    TAP_EQ_INT(sl_plug_member_name_check("../x", 4, &err), -1, "host check: dot-dot");
    TAP_OK(err.code == SL_EINVAL && strstr(err.msg, "'..'") != NULL, "host check message: %s", err.msg);
    TAP_EQ_INT(sl_plug_member_name_check("ok/name.txt", 11, &err), 0, "host check: fine name");
}

int main(void)
{
    test_good_plugin();
    test_refusals();
    test_ext_conflict();
    test_builtin_lookup();
    test_example_plugin();
    test_host_api();
    test_member_names();
    tp_cleanup();
    return tap_done();
}
