/* SPDX-License-Identifier: MIT
 * test_plug_key.c: the sample-key rules (plugins/key_*.c) through the
 * host wrappers: keys, extensions (first dot of the basename, the WebDataset
 * rule), flags for names without an extension, the regex rule's capture
 * group / whole match / no match, bad patterns, small buffers.
 */
#include "test_plug_helpers.h"

struct kcase {
    const char *name, *key, *ext;
    uint32_t flags;
};

/* each rule (with its config) and its cases, up to the first without a name */
static const struct krule {
    const char *rule, *config;
    struct kcase c[9];
} rules[] = {
    { "base_name", NULL, {
        { "train/n01/x.seg.jpg", "x", "seg.jpg", 0 },
        { "x.jpg", "x", "jpg", 0 },
        { "a.b/c.d.e", "c", "d.e", 0 },
        { "2023-01-01T10.00.00.jpg", "2023-01-01T10", "00.00.jpg", 0 },
        { "dir/noext", "noext", "", SL_KEY_F_NOEXT },
        { "dir/.hidden", "", "hidden", SL_KEY_F_NOSTEM },
        { "dir/x.", "x", "", SL_KEY_F_NOEXT },
        { "IMG_1.JPG", "IMG_1", "JPG", 0 },
    } },
    /* full_name (WebDataset's own key) */
    { "full_name", NULL, {
        { "train/n01/x.seg.jpg", "train/n01/x", "seg.jpg", 0 },
        { "a/b/c.tar.gz", "a/b/c", "tar.gz", 0 },
        { "a.b/c.d.e", "a.b/c", "d.e", 0 },
        { "x.jpg", "x", "jpg", 0 },
        { "dir/noext", "dir/noext", "", SL_KEY_F_NOEXT },
        { ".hidden", "", "hidden", SL_KEY_F_NOSTEM },
    } },
    /* collapse_all_dir: full_name key with every '/' removed */
    { "collapse_all_dir", NULL, {
        { "train/n01/x.seg.jpg", "trainn01x", "seg.jpg", 0 },
        { "/a//b/c.jpg", "abc", "jpg", 0 },
        { "a.b/c.d", "a.bc", "d", 0 },
        { "x.jpg", "x", "jpg", 0 },
        { "d/e/noext", "denoext", "", SL_KEY_F_NOEXT },
    } },
    /* regex: applied to the name without extension */
    { "regex", "^[^/]+/(.*)$", { { "train/n01/x.seg.jpg", "n01/x", "seg.jpg", 0 } } },
    { "regex", "[0-9]+", { { "shard/img_0042.jpg", "0042", "jpg", 0 } } },
    /* group 1 did not take part: whole match */
    { "regex", "(a)|(b)", { { "xb.jpg", "b", "jpg", 0 } } },
    { "regex", "^zzz(.*)", { { "train/x.jpg", "train/x", "jpg", SL_KEY_F_NOMATCH } } },
    /* ishard's base_file_name */
    { "regex", ".*/([^/]+)$", { { "Annotations/n1/x.xml", "x", "xml", 0 } } },
    /* anchored at the subject's end, not the name's */
    { "regex", "x$", { { "a/x.jpg", "x", "jpg", 0 } } },
    /* the extension is not part of the subject */
    { "regex", "jpg", { { "a/x.jpg", "a/x", "jpg", SL_KEY_F_NOMATCH } } },
};

/* one case of rule r (plugin p, NULL when it is not loaded): a TAP line */
static void test_case(const struct sl_plug *p, const struct krule *r, const struct kcase *c)
{
    struct sl_plug_key *k = NULL;
    struct sl_err err = { 0 };
    char key[256] = "";
    size_t klen = 99, eo = 0, el = 0, n = strlen(c->name);
    uint32_t fl = 99;
    int rc;

    if (p == NULL || sl_plug_key_new(p, r->config, &k, &err) != 0) {
        TAP_OK(0, "%s: instance for \"%s\": %s", r->rule, r->config ? r->config : "", err.msg);
        return;
    }
    rc = sl_plug_key_apply(k, c->name, n, key, sizeof(key), &klen, &eo, &el, &fl, &err);
    TAP_OK(rc == 0 && strcmp(key, c->key) == 0 && klen == strlen(c->key) && el == strlen(c->ext) &&
               strncmp(c->name + eo, c->ext, el) == 0 && fl == c->flags,
           "%s%s%s: \"%s\" -> key \"%s\" ext \"%s\" flags %u", r->rule, r->config ? " " : "",
           r->config ? r->config : "", c->name, c->key, c->ext, c->flags);
    if (!(rc == 0 && strcmp(key, c->key) == 0 && el == strlen(c->ext) && fl == c->flags))
        printf("#   got rc %d key \"%s\" ext \"%.*s\" flags %u (%s)\n", rc, key, (int)el, c->name + eo, fl,
               err.msg);
    sl_plug_key_free(k);
}

static void test_cases(struct sl_plug_reg *reg)
{
    for (size_t r = 0; r < SL_ARRAY_SIZE(rules); r++) {
        const struct sl_plug *p = sl_plug_find(reg, SL_PLUGIN_SAMPLE_KEY, rules[r].rule);
        for (const struct kcase *c = rules[r].c; c->name; c++)
            test_case(p, &rules[r], c);
    }
}

static void test_errors(struct sl_plug_reg *reg)
{
    const struct sl_plug *rx = sl_plug_find(reg, SL_PLUGIN_SAMPLE_KEY, "regex");
    const struct sl_plug *full = sl_plug_find(reg, SL_PLUGIN_SAMPLE_KEY, "full_name");
    const struct sl_plug *tar = sl_plug_find(reg, SL_PLUGIN_FORMAT, "tar");
    struct sl_plug_key *k = NULL;
    struct sl_err err = { 0 };
    char small[4];
    size_t klen, eo, el;
    uint32_t fl;

    TAP_EQ_INT(sl_plug_key_new(rx, NULL, &k, &err), -1, "regex without a pattern refused");
    TAP_OK(err.code == SL_EINVAL && strstr(err.msg, "needs a POSIX extended regular expression"), "message: %s",
           err.msg);
    TAP_EQ_INT(sl_plug_key_new(rx, "(unclosed", &k, &err), -1, "bad pattern refused");
    TAP_OK(err.code == SL_EINVAL && strstr(err.msg, "bad pattern \"(unclosed\"") != NULL, "message: %s", err.msg);
    TAP_EQ_INT(sl_plug_key_new(tar, NULL, &k, &err), -1, "a format is not a key rule");

    TAP_EQ_INT(sl_plug_key_new(full, NULL, &k, &err), 0, "full_name instance");
    TAP_EQ_INT(sl_plug_key_apply(k, "abcdef/x.jpg", 12, small, sizeof(small), &klen, &eo, &el, &fl, &err), -1,
               "key longer than the buffer");
    TAP_OK(strstr(err.msg, "needs 9 bytes") != NULL, "message gives the size: %s", err.msg);
    TAP_EQ_INT(sl_plug_key_apply(k, "a\0b.jpg", 7, small, sizeof(small), &klen, &eo, &el, &fl, &err), -1,
               "embedded NUL refused");
    {
        char big[16];
        TAP_EQ_INT(sl_plug_key_apply(k, "dir/x.jpg", 5, big, sizeof(big), &klen, &eo, &el, &fl, &err), 0,
                   "only name_len bytes are looked at");
        TAP_EQ_STR(big, "dir/x", "prefix of the buffer used as the name");
        TAP_EQ_INT(fl, SL_KEY_F_NOEXT, "and it has no extension");
    }
    sl_plug_key_free(k);

    /* one instance, two patterns: instances are independent */
    {
        struct sl_plug_key *a = NULL, *b = NULL;
        char ka[64], kb[64];
        sl_plug_key_new(rx, "^([^/]*)/", &a, &err);
        sl_plug_key_new(rx, "([^/]*)$", &b, &err);
        sl_plug_key_apply(a, "p/q/r.jpg", 9, ka, sizeof(ka), &klen, &eo, &el, &fl, &err);
        sl_plug_key_apply(b, "p/q/r.jpg", 9, kb, sizeof(kb), &klen, &eo, &el, &fl, &err);
        TAP_OK(strcmp(ka, "p") == 0 && strcmp(kb, "r") == 0, "two regex instances keep their own pattern (%s, %s)",
               ka, kb);
        sl_plug_key_free(a);
        sl_plug_key_free(b);
    }
}

int main(void)
{
    struct sl_plug_reg *reg = tp_load_builtin();

    test_cases(reg);
    test_errors(reg);
    TAP_EQ_INT(sl_plug_reg_free(reg), 0, "all instances freed: unload succeeds");
    return tap_done();
}
