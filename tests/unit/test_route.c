/* SPDX-License-Identifier: MIT
 * test_route.c: the pieces of routing that are reachable now that they sit
 * in their own floors: the module list (api/module.c) that replaced the
 * hand-written ext.c table, the path matcher it uses (http/), and the
 * bucket-string parser shared by the copy/transform job and ishard
 * (node/meta.c). Requests are built by hand; no handler here responds.
 */
#include "tap.h"
#include "meta.h"
#include "module.h"

#include <stdlib.h>
#include <string.h>

static char hit[64];

static struct sl_req *req(const char *path, const char *qk, const char *qv)
{
    static struct sl_req r;
    static struct sl_qp q;
    memset(&r, 0, sizeof(r));
    r.path = (char *)path;
    r.path_len = strlen(path);
    if (qk) {
        q.k = (char *)qk;
        q.v = (char *)qv;
        r.q = &q;
        r.nq = 1;
    }
    hit[0] = 0;
    return &r;
}

static void a_route(struct sl_req *r)
{
    (void)r;
    strcpy(hit, "a.route");
}

static bool a_internal(struct sl_req *r)
{
    if (strcmp(r->path, "/v1/internal/a"))
        return false;
    strcpy(hit, "a.internal");
    return true;
}

static bool a_post(struct sl_req *r, const char *bucket, struct sl_actmsg *m)
{
    (void)r, (void)bucket;
    if (strcmp(m->action, "a-act"))
        return false;
    strcpy(hit, "a.post");
    return true;
}

static bool b_post(struct sl_req *r, const char *bucket, struct sl_actmsg *m)
{
    (void)r, (void)bucket;
    if (strcmp(m->action, "b-act") && strcmp(m->action, "a-act"))
        return false;
    strcpy(hit, "b.post");
    return true;
}

static bool b_get(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, struct sl_read *rd)
{
    (void)r, (void)b, (void)name, (void)nlen, (void)rd;
    strcpy(hit, "b.get");
    return true;
}

static bool b_put(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen)
{
    (void)r, (void)b;
    if (nlen != 3 || memcmp(name, "mine", 3))
        return false;
    strcpy(hit, "b.put");
    return true;
}

static const char *const a_paths[] = { "/v1/a", "/v1/aa", NULL };
static const struct sl_module mod_a = {
    .name = "a",
    .paths = a_paths,
    .route = a_route,
    .internal = a_internal,
    .bucket_post = a_post,
    .post_actions = ", a-act",
};
static const struct sl_module mod_b = {
    .name = "b",
    .bucket_post = b_post,
    .post_actions = ", b-act",
    .get_query = "b_name",
    .obj_get = b_get,
    .obj_put = b_put,
};
static const struct sl_module *const mods[] = { &mod_a, &mod_b, NULL };

static void test_modules(void)
{
    TAP_OK(!sl_modules_route(req("/v1/a", NULL, NULL)), "nothing routes before the list is installed");
    sl_modules_install(mods);
    TAP_EQ_STR(sl_modules_post_actions(), ", a-act, b-act", "the valid actions are every module's, in order");

    TAP_OK(sl_modules_route(req("/v1/a", NULL, NULL)) && !strcmp(hit, "a.route"), "a path of a module");
    TAP_OK(sl_modules_route(req("/v1/a/x/y", NULL, NULL)) && !strcmp(hit, "a.route"), "and below it");
    TAP_OK(sl_modules_route(req("/v1/aa", NULL, NULL)) && !strcmp(hit, "a.route"), "its second path");
    TAP_OK(!sl_modules_route(req("/v1/ab", NULL, NULL)) && !hit[0], "/v1/ab is not below /v1/a");
    TAP_OK(!sl_modules_route(req("/v1/", NULL, NULL)), "a shorter path is not");
    TAP_OK(sl_modules_route(req("/v1/internal/a", NULL, NULL)) && !strcmp(hit, "a.internal"), "an internal one");
    TAP_OK(!sl_modules_route(req("/v1/internal/a/more", NULL, NULL)), "the module decides its internal paths");

    struct sl_actmsg m = { .action = "a-act", .name = "" };
    TAP_OK(sl_modules_bucket_post(req("/v1/buckets/x", NULL, NULL), "x", &m) && !strcmp(hit, "a.post"),
           "a bucket action goes to the first module that claims it");
    m.action = "b-act";
    TAP_OK(sl_modules_bucket_post(req("/v1/buckets/x", NULL, NULL), "x", &m) && !strcmp(hit, "b.post"),
           "and falls through to the next");
    m.action = "c-act";
    TAP_OK(!sl_modules_bucket_post(req("/v1/buckets/x", NULL, NULL), "x", &m), "an action nobody claims");
    TAP_OK(!sl_modules_bucket_put(req("/v1/buckets/x", NULL, NULL), "x"), "no module takes bucket PUT");

    TAP_OK(sl_modules_get_owner(req("/v1/objects/x/o", "b_name", "t1")) == &mod_b, "a GET with ?b_name= is b's");
    TAP_OK(sl_modules_get_owner(req("/v1/objects/x/o", "b_name", "")) == NULL, "an empty value is nobody's");
    TAP_OK(sl_modules_get_owner(req("/v1/objects/x/o", "other", "1")) == NULL, "another query is nobody's");
    struct sl_bck b;
    memset(&b, 0, sizeof(b));
    TAP_OK(sl_modules_obj_put(req("/v1/objects/x/min", NULL, NULL), &b, "mine", 3) && !strcmp(hit, "b.put"),
           "a PUT a module claims");
    TAP_OK(!sl_modules_obj_put(req("/v1/objects/x/o", NULL, NULL), &b, "other", 5), "and one it does not");
}

static void parse(const char *s, unsigned flags, int want_rc, const char *want_prov, const char *want_name,
                  const char *want_rest)
{
    char prov[16] = "", name[70] = "";
    const char *rest = NULL;
    struct sl_err err = { 0 };
    int rc = sl_bck_parse(s, flags, prov, sizeof(prov), name, sizeof(name), &rest, &err);
    if (want_rc < 0) {
        TAP_OK(rc < 0 && err.msg[0], "\"%s\" refused: %s", s, err.msg);
        return;
    }
    TAP_OK(rc == 0 && !strcmp(prov, want_prov) && !strcmp(name, want_name) && rest && !strcmp(rest, want_rest),
           "\"%s\" -> %s / %s / \"%s\" (got %s / %s / \"%s\"%s%s)", s, want_prov, want_name, want_rest, prov, name,
           rest ? rest : "(null)", err.msg[0] ? ": " : "", err.msg);
}

static void test_bck_parse(void)
{
    parse("raw", 0, 0, "ais", "raw", "");
    parse("ais://raw", 0, 0, "ais", "raw", "");
    parse("ais://raw/pre/fix", 0, 0, "ais", "raw", "pre/fix");
    parse("raw/pre", 0, 0, "ais", "raw", "pre");
    parse("s3://raw/x", 0, 0, "aws", "raw", "x");
    parse("gs://raw", 0, 0, "gcp", "raw", "");
    parse("ais/@#/dst/", SL_BCK_UNAME, 0, "ais", "dst", "");
    parse("ais/@#/dst/a/b.jpg", SL_BCK_UNAME, 0, "ais", "dst", "a/b.jpg");
    parse("ais/dst/a.jpg", SL_BCK_UNAME, 0, "ais", "dst", "a.jpg");
    parse("ais://dst/a.jpg", SL_BCK_UNAME, 0, "ais", "dst", "a.jpg");
    parse("ais/@ns/dst/", SL_BCK_UNAME, -1, NULL, NULL, NULL);
    parse("ais/@#", SL_BCK_UNAME, -1, NULL, NULL, NULL);
    parse("nope://raw", 0, -1, NULL, NULL, NULL);
    char longname[200];
    memset(longname, 'a', sizeof(longname) - 1);
    longname[sizeof(longname) - 1] = 0;
    parse(longname, 0, -1, NULL, NULL, NULL);
}

int main(void)
{
    test_modules();
    test_bck_parse();
    return tap_done();
}
