/* SPDX-License-Identifier: MIT
 * test_md.c: the LMDB metadata layer: key layout with long names sharing a
 * key, exact ordered iteration, prefix/after/seek, group commit under
 * concurrency, bucket deletion across transactions, node documents, and the
 * schema version of both kinds of environment (recorded, migrated from
 * pre-versioning, newer and garbage refused). The schema record is read and
 * written here with LMDB directly, independently of md.c, at the place md.h
 * documents.
 */
#include "tap.h"
#include "md.h"
#include "log.h"

#include <lmdb.h>
#include <pthread.h>
#include <sys/stat.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static struct sl_objmd mk(uint64_t size)
{
    struct sl_objmd m;
    memset(&m, 0, sizeof(m));
    m.size = size;
    m.cksum_type = 2;
    snprintf(m.cksum, sizeof(m.cksum), "%016llx", (unsigned long long)size);
    m.version = 1;
    return m;
}

static int put(struct sl_md_env *e, uint64_t bid, const char *name, uint64_t size)
{
    struct sl_objmd m = mk(size);
    struct sl_md_op op = { .kind = SL_MD_PUT_OBJ, .bid = bid, .name = name, .nlen = strlen(name), .md = &m };
    struct sl_err err;
    return sl_md_commit(e, &op, 1, true, &err);
}

struct thr {
    struct sl_md_env *e;
    int id;
};

static void *writer(void *arg)
{
    struct thr *t = arg;
    for (int i = 0; i < 200; i++) {
        char n[64];
        snprintf(n, sizeof(n), "thr%d/%04d", t->id, i);
        put(t->e, 7, n, (uint64_t)i);
    }
    return NULL;
}

/* fn on 8 threads at once (ids 0-7), until all are done */
static void run_writers(struct sl_md_env *e, void *(*fn)(void *))
{
    pthread_t th[8];
    struct thr ts[8];
    for (int i = 0; i < 8; i++) {
        ts[i].e = e;
        ts[i].id = i;
        pthread_create(&th[i], NULL, fn, &ts[i]);
    }
    for (int i = 0; i < 8; i++)
        pthread_join(th[i], NULL);
}

/* A waited write, an async one of the same name, a waited one again, from
 * 8 threads: the last must win (a waited commit must not overtake what its
 * caller queued before it, whatever path it takes). */
static void *mixed_writer(void *arg)
{
    struct thr *t = arg;
    struct sl_err err;
    for (int i = 0; i < 200; i++) {
        char n[64];
        snprintf(n, sizeof(n), "mix%d/%04d", t->id, i);
        put(t->e, 8, n, (uint64_t)i);
        struct sl_objmd m = mk((uint64_t)i + 1000);
        struct sl_md_op op = { .kind = SL_MD_PUT_OBJ, .bid = 8, .name = n, .nlen = strlen(n), .md = &m };
        sl_md_commit(t->e, &op, 1, false, &err);
        put(t->e, 8, n, (uint64_t)i + 2000);
    }
    return NULL;
}

static void test_mixed_async(const char *dir)
{
    char adir[300];
    snprintf(adir, sizeof(adir), "%s/mixed", dir);
    mkdir(adir, 0755);
    struct sl_md_env *e;
    struct sl_err err;
    TAP_OK(sl_md_open(adir, SL_MD_ASYNC, &e, &err) == 0, "async env for mixed writers");
    run_writers(e, mixed_writer);
    int bad = 0;
    for (int t = 0; t < 8; t++)
        for (int i = 0; i < 200; i++) {
            char n[64];
            struct sl_objmd m;
            snprintf(n, sizeof(n), "mix%d/%04d", t, i);
            if (sl_md_obj_get(e, 8, n, strlen(n), &m, &err) != 1 || m.size != (uint64_t)i + 2000)
                bad++;
            else
                sl_objmd_free(&m);
        }
    TAP_EQ_INT(bad, 0, "a waited commit after a queued one of the same name lands after it");
    sl_md_close(e);
}

static void lazy_put(struct sl_md_env *e, const char *n, uint64_t size)
{
    struct sl_objmd m = mk(size);
    struct sl_md_op op = { .kind = SL_MD_PUT_OBJ, .bid = 9, .name = n, .nlen = strlen(n), .md = &m };
    sl_md_commit_lazy(e, &op, 1);
}

static bool has(struct sl_md_env *e, const char *n)
{
    struct sl_objmd m;
    struct sl_err err;
    if (sl_md_obj_get(e, 9, n, strlen(n), &m, &err) != 1)
        return false;
    sl_objmd_free(&m);
    return true;
}

/* sl_md_commit_lazy: in with the next waited commit (before it), on its own
 * when none comes, and at close; under both sync policies (a waited commit
 * is made on the caller's thread without fsync, by the committer with). */
static void test_lazy(const char *dir, int sync, const char *what)
{
    char ldir[300];
    snprintf(ldir, sizeof(ldir), "%s/lazy%d", dir, sync);
    mkdir(ldir, 0755);
    struct sl_md_env *e;
    struct sl_err err;
    TAP_OK(sl_md_open(ldir, sync, &e, &err) == 0, "%s env for lazy commits", what);
    lazy_put(e, "lz/alone", 1);
    bool seen = false;
    for (int i = 0; i < 400 && !(seen = has(e, "lz/alone")); i++) /* bounded: 4 s */
        usleep(10000);
    TAP_OK(seen, "%s: a lazy commit lands on its own when no other comes", what);
    lazy_put(e, "lz/first", 1);
    put(e, 9, "lz/next", 2);
    TAP_OK(has(e, "lz/first"), "%s: a lazy commit is in once a later waited commit returns", what);
    lazy_put(e, "lz/at-close", 1);
    sl_md_close(e);
    TAP_OK(sl_md_open(ldir, sync, &e, &err) == 0 && has(e, "lz/at-close"), "%s: a lazy commit is in after close",
           what);
    sl_md_close(e);
}

/* ---- raw access to a closed environment (no md.c) ---- */

#define OBJ_SCHEMA_DB "meta"
#define OBJ_SCHEMA_KEY "schema", 6
#define NODE_SCHEMA_KEY "\0schema", 7

static int raw_begin(const char *dir, const char *db, unsigned flags, MDB_env **env, MDB_txn **txn, MDB_dbi *dbi)
{
    if (mdb_env_create(env))
        return -1;
    mdb_env_set_maxdbs(*env, 8);
    if (mdb_env_open(*env, dir, MDB_NOTLS, 0644) || mdb_txn_begin(*env, NULL, flags, txn)) {
        mdb_env_close(*env);
        return -1;
    }
    if (mdb_dbi_open(*txn, db, 0, dbi)) {
        mdb_txn_abort(*txn);
        mdb_env_close(*env);
        return -1;
    }
    return 0;
}

/* The value under key in db (NULL: main DB) into out as a C string:
 * 1 found, 0 not found (or no such db), -1 error. */
static int raw_get(const char *dir, const char *db, const char *key, size_t klen, char *out, size_t n)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    out[0] = 0;
    if (raw_begin(dir, db, MDB_RDONLY, &env, &txn, &dbi) < 0)
        return db ? 0 : -1;
    MDB_val k = { klen, (void *)key }, v;
    int rc = mdb_get(txn, dbi, &k, &v), found = rc == 0 ? 1 : rc == MDB_NOTFOUND ? 0 : -1;
    if (found == 1)
        snprintf(out, n, "%.*s", (int)v.mv_size, (const char *)v.mv_data);
    mdb_txn_abort(txn);
    mdb_env_close(env);
    return found;
}

/* Put val (vlen bytes) under key; val NULL: delete the key; key NULL: drop
 * the whole db. 0 ok, -1 error. */
static int raw_set(const char *dir, const char *db, const char *key, size_t klen, const char *val, size_t vlen)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    if (raw_begin(dir, db, 0, &env, &txn, &dbi) < 0)
        return -1;
    MDB_val k = { klen, (void *)key }, v = { vlen, (void *)val };
    int rc = !key ? mdb_drop(txn, dbi, 1) : val ? mdb_put(txn, dbi, &k, &v, 0) : mdb_del(txn, dbi, &k, NULL);
    if (rc) {
        mdb_txn_abort(txn);
        mdb_env_close(env);
        return -1;
    }
    rc = mdb_txn_commit(txn);
    mdb_env_close(env);
    return rc ? -1 : 0;
}

/* How many times s occurs in the file at path. */
static int count_in_file(const char *path, const char *s)
{
    struct sl_buf b;
    sl_buf_init(&b);
    int n = 0;
    if (sl_read_file(path, &b, 1 << 20) == 0 && b.p)
        for (const char *p = strstr(b.p, s); p; p = strstr(p + 1, s))
            n++;
    sl_buf_free(&b);
    return n;
}

static int count_docs(void *arg, const char *key, const char *val, size_t vlen)
{
    (*(int *)arg)++;
    return 0;
}

/* Every error message of a refused open names the directory and says what to do. */
static void check_refusal(int rc, const struct sl_err *err, const char *dir, const char *what, const char *label)
{
    TAP_OK(rc == -1, "%s: open refused", label);
    TAP_OK(strstr(err->msg, dir) != NULL, "%s: message names the path (%s)", label, err->msg);
    TAP_OK(strstr(err->msg, what) != NULL, "%s: message says \"%s\"", label, what);
    TAP_OK(strstr(err->msg, "restore") != NULL, "%s: message says what to do", label);
}

static void test_schema(const char *top)
{
    char odir[300], ndir[300], logf[300], got[64], exp[16];
    snprintf(odir, sizeof(odir), "%s/schema-obj", top);
    snprintf(ndir, sizeof(ndir), "%s/schema-node", top);
    snprintf(logf, sizeof(logf), "%s/schema.log", top);
    snprintf(exp, sizeof(exp), "%d", SL_MD_SCHEMA_VERSION);
    struct sl_log_conf lc = { .level = 3, .path = logf };
    TAP_OK(sl_log_open(&lc) == 0, "log to a file");
    const char *migrated = "no schema version recorded (written before versioning); migrated to schema";
    struct sl_md_env *e;
    struct sl_md_node *nd;
    struct sl_err err;
    struct sl_objmd m;
    struct sl_buf b;
    sl_buf_init(&b);
    TAP_EQ_INT(SL_MD_SCHEMA_VERSION, 1, "current schema version");

    /* a new environment records the current version */
    TAP_OK(sl_md_open(odir, SL_MD_SYNC, &e, &err) == 0, "new object env");
    TAP_OK(put(e, 1, "keep", 42) == 0, "put into it");
    sl_md_close(e);
    TAP_EQ_INT(raw_get(odir, OBJ_SCHEMA_DB, OBJ_SCHEMA_KEY, got, sizeof(got)), 1, "object env: version recorded");
    TAP_EQ_STR(got, exp, "object env: current version");
    TAP_OK(sl_md_node_open(ndir, &nd, &err) == 0, "new node env");
    TAP_OK(sl_md_node_put(nd, "smap", "S", 1) == 0 && sl_md_node_put(nd, "bmd", "B", 1) == 0, "node docs");
    int ndocs = 0;
    TAP_OK(sl_md_node_foreach(nd, "", count_docs, &ndocs) == 0 && ndocs == 2,
           "node foreach shows documents only, not the schema record (%d)", ndocs);
    sl_md_node_close(nd);
    TAP_EQ_INT(raw_get(ndir, NULL, NODE_SCHEMA_KEY, got, sizeof(got)), 1, "node env: version recorded");
    TAP_EQ_STR(got, exp, "node env: current version");
    TAP_EQ_INT(count_in_file(logf, migrated), 0, "a new environment logs no migration");

    /* current version: opens as is, logs nothing */
    TAP_OK(sl_md_open(odir, SL_MD_SYNC, &e, &err) == 0, "reopen object env at the current version");
    sl_md_close(e);
    TAP_OK(sl_md_node_open(ndir, &nd, &err) == 0, "reopen node env at the current version");
    sl_md_node_close(nd);
    TAP_EQ_INT(count_in_file(logf, migrated), 0, "no migration at the current version");

    /* pre-versioning, as today's code left it: no "meta" DB / no node record */
    TAP_OK(raw_set(odir, OBJ_SCHEMA_DB, NULL, 0, NULL, 0) == 0, "drop the object env's meta DB");
    TAP_EQ_INT(raw_get(odir, OBJ_SCHEMA_DB, OBJ_SCHEMA_KEY, got, sizeof(got)), 0, "object env: no version");
    TAP_OK(raw_set(ndir, NULL, NODE_SCHEMA_KEY, NULL, 0) == 0, "delete the node env's schema record");
    TAP_EQ_INT(raw_get(ndir, NULL, NODE_SCHEMA_KEY, got, sizeof(got)), 0, "node env: no version");
    int rc = sl_md_open(odir, SL_MD_SYNC, &e, &err);
    TAP_OK(rc == 0, "pre-versioning object env opens (%s)", rc ? err.msg : "ok");
    if (rc == 0) {
        TAP_OK(sl_md_obj_get(e, 1, "keep", 4, &m, &err) == 1 && m.size == 42, "object env keeps its data");
        sl_objmd_free(&m);
        sl_md_close(e);
    }
    TAP_EQ_INT(raw_get(odir, OBJ_SCHEMA_DB, OBJ_SCHEMA_KEY, got, sizeof(got)), 1, "object env: version recorded");
    TAP_EQ_STR(got, exp, "object env: migrated to the current version");
    rc = sl_md_node_open(ndir, &nd, &err);
    TAP_OK(rc == 0, "pre-versioning node env opens (%s)", rc ? err.msg : "ok");
    if (rc == 0) {
        TAP_OK(sl_md_node_get(nd, "smap", &b) == 1 && !strcmp(b.p, "S"), "node env keeps its data");
        sl_md_node_close(nd);
    }
    TAP_EQ_INT(raw_get(ndir, NULL, NODE_SCHEMA_KEY, got, sizeof(got)), 1, "node env: version recorded");
    TAP_EQ_STR(got, exp, "node env: migrated to the current version");
    TAP_EQ_INT(count_in_file(logf, migrated), 2, "one log line per migrated environment");
    TAP_EQ_INT(count_in_file(logf, odir), 1, "the object env's line names its path");
    TAP_EQ_INT(count_in_file(logf, ndir), 1, "the node env's line names its path");

    /* newer and garbage versions are refused, and left as they were */
    struct {
        const char *val;
        size_t len;
        const char *what;
    } bad[] = {
        { "3", 1, "was written by a newer Shale (schema 3; this build reads up to 1)" },
        { "4000000", 7, "(schema 4000000; this build reads up to 1)" },
        { "x1", 2, "unreadable schema version (\"x1\", 2 bytes" },
        { "", 0, "unreadable schema version (\"\", 0 bytes" },
        { "-1", 2, "unreadable schema version" },
        { "1\0", 2, "unreadable schema version (\"1\\x00\"" },
        { "9999999999", 10, "unreadable schema version" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char label[64];
        TAP_OK(raw_set(odir, OBJ_SCHEMA_DB, OBJ_SCHEMA_KEY, bad[i].val, bad[i].len) == 0, "object env: record bad[%zu]",
               i);
        snprintf(label, sizeof(label), "object env, bad[%zu]", i);
        e = NULL;
        rc = sl_md_open(odir, SL_MD_SYNC, &e, &err);
        check_refusal(rc, &err, odir, bad[i].what, label);
        if (rc == 0)
            sl_md_close(e);
        TAP_EQ_INT(raw_get(odir, OBJ_SCHEMA_DB, OBJ_SCHEMA_KEY, got, sizeof(got)), 1, "object env: record kept");
        TAP_OK(strlen(got) == strlen(bad[i].val) && !memcmp(got, bad[i].val, strlen(got)),
               "object env: refused record left as it was (%s)", got);

        TAP_OK(raw_set(ndir, NULL, NODE_SCHEMA_KEY, bad[i].val, bad[i].len) == 0, "node env: record bad[%zu]", i);
        snprintf(label, sizeof(label), "node env, bad[%zu]", i);
        nd = NULL;
        rc = sl_md_node_open(ndir, &nd, &err);
        check_refusal(rc, &err, ndir, bad[i].what, label);
        if (rc == 0)
            sl_md_node_close(nd);
        TAP_EQ_INT(raw_get(ndir, NULL, NODE_SCHEMA_KEY, got, sizeof(got)), 1, "node env: record kept");
        TAP_OK(strlen(got) == strlen(bad[i].val) && !memcmp(got, bad[i].val, strlen(got)),
               "node env: refused record left as it was (%s)", got);
    }
    TAP_OK(strstr(err.msg, "node metadata at ") != NULL, "node env message says which kind (%s)", err.msg);

    /* restoring the current version opens both with their data */
    TAP_OK(raw_set(odir, OBJ_SCHEMA_DB, OBJ_SCHEMA_KEY, exp, strlen(exp)) == 0, "object env: restore record");
    TAP_OK(raw_set(ndir, NULL, NODE_SCHEMA_KEY, exp, strlen(exp)) == 0, "node env: restore record");
    rc = sl_md_open(odir, SL_MD_SYNC, &e, &err);
    TAP_OK(rc == 0, "restored object env opens (%s)", rc ? err.msg : "ok");
    if (rc == 0) {
        TAP_OK(sl_md_obj_get(e, 1, "keep", 4, &m, &err) == 1 && m.size == 42, "restored object env has its data");
        sl_objmd_free(&m);
        sl_md_close(e);
    }
    rc = sl_md_node_open(ndir, &nd, &err);
    TAP_OK(rc == 0, "restored node env opens (%s)", rc ? err.msg : "ok");
    if (rc == 0) {
        TAP_OK(sl_md_node_get(nd, "bmd", &b) == 1 && !strcmp(b.p, "B"), "restored node env has its data");
        sl_md_node_close(nd);
    }
    TAP_EQ_INT(count_in_file(logf, migrated), 2, "no further migration");
    sl_buf_free(&b);
    sl_log_close();
}

/* Walk it to its end and close it: the index past the last name when its names are names[k..nn) in that order,
 * else -1. */
static int iter_walk(struct sl_md_iter *it, char **names, int k, int nn)
{
    int ok = 1;
    while (sl_md_iter_next(it) == 1) {
        size_t l;
        const char *n = sl_md_iter_name(it, &l);
        if (k >= nn || l != strlen(names[k]) || memcmp(n, names[k], l))
            ok = 0;
        k++;
    }
    sl_md_iter_close(it);
    return ok ? k : -1;
}

int main(void)
{
    char dir[] = "/tmp/shale-md-XXXXXX";
    if (!mkdtemp(dir))
        return 1;
    struct sl_md_env *e;
    struct sl_err err;
    TAP_OK(sl_md_open(dir, SL_MD_SYNC, &e, &err) == 0, "open env");

    /* names: short, exactly KEYNAME, longer sharing the same first KEYNAME bytes */
    char base[SL_MD_KEYNAME + 1];
    memset(base, 'k', SL_MD_KEYNAME);
    base[SL_MD_KEYNAME] = 0;
    char *names[12];
    int nn = 0;
    names[nn++] = sl_xstrdup("a");
    names[nn++] = sl_xstrdup("b/c");
    names[nn++] = sl_xstrdup(base);                       /* exactly KEYNAME */
    names[nn++] = sl_xasprintf("%s%s", base, "z");
    names[nn++] = sl_xasprintf("%s%s", base, "a/long/tail");
    names[nn++] = sl_xasprintf("%s%s", base, "a");
    names[nn++] = sl_xasprintf("%.*s%s", SL_MD_KEYNAME - 1, base, "l-then-more");
    names[nn++] = sl_xstrdup("zzz");
    for (int i = 0; i < nn; i++)
        TAP_OK(put(e, 1, names[i], (uint64_t)i + 1) == 0, "put %zu-byte name", strlen(names[i]));
    qsort(names, (size_t)nn, sizeof(char *), cmp);

    struct sl_objmd m;
    for (int i = 0; i < nn; i++) {
        int rc = sl_md_obj_get(e, 1, names[i], strlen(names[i]), &m, &err);
        TAP_OK(rc == 1, "get %d", i);
        sl_objmd_free(&m);
    }
    TAP_EQ_INT(sl_md_obj_get(e, 1, "nope", 4, &m, &err), 0, "missing name");
    TAP_EQ_INT(sl_md_obj_get(e, 2, "a", 1, &m, &err), 0, "other bucket id isolates");

    struct sl_md_iter *it;
    TAP_OK(sl_md_iter_open(e, 1, "", 0, NULL, 0, &it, &err) == 0, "iter open");
    int k = iter_walk(it, names, 0, nn);
    TAP_OK(k == nn, "iteration is exact byte order across grouped long names (%d/%d)", k, nn);

    /* after = a long name inside a group */
    int idx = 4;
    TAP_OK(sl_md_iter_open(e, 1, "", 0, names[idx], strlen(names[idx]), &it, &err) == 0, "iter after");
    TAP_OK(iter_walk(it, names, idx + 1, nn) == nn, "start after a grouped name");

    /* prefix longer than KEYNAME */
    char *pfx = sl_xasprintf("%s%s", base, "a");
    TAP_OK(sl_md_iter_open(e, 1, pfx, strlen(pfx), NULL, 0, &it, &err) == 0, "iter long prefix");
    k = 0;
    while (sl_md_iter_next(it) == 1)
        k++;
    sl_md_iter_close(it);
    TAP_EQ_INT(k, 2, "long prefix matches exactly its names");
    free(pfx);

    /* seek */
    TAP_OK(sl_md_iter_open(e, 1, "", 0, NULL, 0, &it, &err) == 0, "iter for seek");
    sl_md_iter_next(it);
    sl_md_iter_seek(it, "zz", 2);
    int sr = sl_md_iter_next(it);
    TAP_OK(sr == 1 && !strcmp(sl_md_iter_name(it, NULL), "zzz"), "seek (rc %d, name %s)", sr,
           sr == 1 ? sl_md_iter_name(it, NULL) : "-");
    TAP_EQ_INT(sl_md_iter_next(it), 0, "end");
    sl_md_iter_close(it);

    /* delete inside a group keeps the others */
    struct sl_md_op del = { .kind = SL_MD_DEL_OBJ, .bid = 1, .name = names[4], .nlen = strlen(names[4]) };
    TAP_OK(sl_md_commit(e, &del, 1, true, &err) == 0, "delete grouped");
    TAP_EQ_INT(sl_md_obj_get(e, 1, names[4], strlen(names[4]), &m, &err), 0, "deleted is gone");
    TAP_EQ_INT(sl_md_obj_get(e, 1, names[5], strlen(names[5]), &m, &err), 1, "sibling stays");
    sl_objmd_free(&m);

    /* custom metadata round trip */
    struct sl_objmd cm = mk(5);
    sl_objmd_set_custom(&cm, "k1", "v1");
    sl_objmd_set_custom(&cm, "ETag", "\"abc\"");
    sl_objmd_set_custom(&cm, "k1", "v2");
    struct sl_md_op op = { .kind = SL_MD_PUT_OBJ, .bid = 3, .name = "cm", .nlen = 2, .md = &cm };
    sl_md_commit(e, &op, 1, true, &err);
    sl_objmd_free(&cm);
    TAP_OK(sl_md_obj_get(e, 3, "cm", 2, &m, &err) == 1 && m.ncustom == 2 &&
               !strcmp(sl_objmd_get_custom(&m, "k1"), "v2"),
           "custom metadata replaced and persisted");
    sl_objmd_free(&m);

    /* mirror copies: an 11th element only when there are copies; a record without them reads ncopies 0,
     * also in a long-name group and through an iterator */
    struct sl_objmd mc = mk(6);
    mc.ncopies = 2;
    mc.copies[0] = 0x1122334455667788ULL;
    mc.copies[1] = 42;
    struct sl_md_op mo = { .kind = SL_MD_PUT_OBJ, .bid = 4, .name = "mc", .nlen = 2, .md = &mc };
    sl_md_commit(e, &mo, 1, true, &err);
    TAP_OK(sl_md_obj_get(e, 4, "mc", 2, &m, &err) == 1 && m.ncopies == 2 && m.copies[0] == 0x1122334455667788ULL &&
               m.copies[1] == 42 && m.size == 6,
           "mirror copies round trip");
    sl_objmd_free(&m);
    TAP_OK(sl_md_obj_get(e, 3, "cm", 2, &m, &err) == 1 && m.ncopies == 0, "a record without copies reads none");
    sl_objmd_free(&m);
    mc.ncopies = 0;
    sl_md_commit(e, &mo, 1, true, &err);
    TAP_OK(sl_md_obj_get(e, 4, "mc", 2, &m, &err) == 1 && m.ncopies == 0 && m.size == 6, "copies dropped");
    sl_objmd_free(&m);
    /* a multipart upload's chunks: a 12th element (the 11th then an empty copies array) */
    mc.nchunks = 3;
    mc.chunk_max = 70004;
    sl_md_commit(e, &mo, 1, true, &err);
    TAP_OK(sl_md_obj_get(e, 4, "mc", 2, &m, &err) == 1 && m.nchunks == 3 && m.chunk_max == 70004 &&
               m.ncopies == 0 && m.size == 6,
           "chunks round trip without copies");
    sl_objmd_free(&m);
    mc.ncopies = 1;
    sl_md_commit(e, &mo, 1, true, &err);
    TAP_OK(sl_md_obj_get(e, 4, "mc", 2, &m, &err) == 1 && m.nchunks == 3 && m.ncopies == 1 &&
               m.copies[0] == 0x1122334455667788ULL,
           "chunks round trip with copies");
    sl_objmd_free(&m);
    mc.ncopies = 0;
    mc.nchunks = 0;
    sl_md_commit(e, &mo, 1, true, &err);
    TAP_OK(sl_md_obj_get(e, 4, "mc", 2, &m, &err) == 1 && m.nchunks == 0 && m.chunk_max == 0, "chunks dropped");
    sl_objmd_free(&m);

    /* group commit: concurrent writers */
    run_writers(e, writer);
    uint64_t cnt, bytes;
    sl_md_bucket_stats(e, 7, &cnt, &bytes);
    TAP_EQ_INT(cnt, 1600, "all concurrent writes committed");

    /* async (fire-and-forget) commit then bucket deletion larger than one transaction */
    for (int i = 0; i < 120; i++) {
        char n[32];
        snprintf(n, sizeof(n), "bulk/%05d", i);
        struct sl_objmd bm = mk(1);
        struct sl_md_op bo = { .kind = SL_MD_PUT_OBJ, .bid = 9, .name = n, .nlen = strlen(n), .md = &bm };
        sl_md_commit(e, &bo, 1, i == 119, &err); /* FIFO: the last one waits */
    }
    sl_md_bucket_stats(e, 9, &cnt, &bytes);
    TAP_EQ_INT(cnt, 120, "bulk bucket filled");
    struct sl_md_op db = { .kind = SL_MD_DEL_BUCKET, .bid = 9 };
    TAP_OK(sl_md_commit(e, &db, 1, true, &err) == 0, "delete bucket");
    sl_md_bucket_stats(e, 9, &cnt, &bytes);
    TAP_EQ_INT(cnt, 0, "bucket empty");
    sl_md_bucket_stats(e, 7, &cnt, &bytes);
    TAP_EQ_INT(cnt, 1600, "other buckets untouched");

    /* a prefix deletion bigger than a transaction, then more puts under the
     * prefix than a transaction deletes, in one request: it must end (it
     * looped forever) with exactly the new keys */
    {
        enum { NK = 60000 }; /* > DEL_BATCH */
        struct sl_md_op *ops = sl_xcalloc(NK + 1, sizeof(*ops));
        char (*keys)[16] = sl_xcalloc(NK, sizeof(*keys));
        for (int i = 0; i < NK; i++) {
            snprintf(keys[i], sizeof(keys[i]), "ix/%06d", i);
            ops[i + 1] = (struct sl_md_op){ .kind = SL_MD_PUT_AUX, .key = keys[i], .klen = strlen(keys[i]),
                                            .val = "old", .vlen = 3 };
        }
        TAP_OK(sl_md_commit(e, ops + 1, NK, true, &err) == 0, "aux: %d keys under a prefix", NK);
        ops[0] = (struct sl_md_op){ .kind = SL_MD_DEL_AUX_PREFIX, .key = "ix/", .klen = 3 };
        for (int i = 0; i < NK; i++)
            ops[i + 1].val = "new";
        TAP_OK(sl_md_commit(e, ops, NK + 1, true, &err) == 0, "aux: prefix deleted and put again in one request");
        struct sl_buf v;
        sl_buf_init(&v);
        int fine = 0;
        for (int i = 0; i < NK; i += 997, sl_buf_reset(&v))
            fine += sl_md_aux_get(e, keys[i], strlen(keys[i]), &v) == 1 && v.len == 3 && !memcmp(v.p, "new", 3);
        TAP_EQ_INT(fine, (NK + 996) / 997, "aux: every key holds the new value");
        sl_buf_free(&v);
        free(keys);
        free(ops);
    }

    /* pending markers */
    struct sl_md_op pm = { .kind = SL_MD_PUT_PENDING, .key = "wk1", .klen = 3, .val = "final", .vlen = 5 };
    sl_md_commit(e, &pm, 1, true, &err);
    sl_md_close(e);
    TAP_OK(sl_md_open(dir, SL_MD_ASYNC, &e, &err) == 0, "reopen (async sync policy)");
    TAP_EQ_INT(sl_md_obj_get(e, 1, names[0], strlen(names[0]), &m, &err), 1, "data persisted");
    sl_objmd_free(&m);
    sl_md_close(e);

    /* node documents */
    char ndir[300];
    snprintf(ndir, sizeof(ndir), "%s/node", dir);
    struct sl_md_node *nd;
    TAP_OK(sl_md_node_open(ndir, &nd, &err) == 0, "node env");
    sl_md_node_put(nd, "smap", "{\"v\":1}", 7);
    sl_md_node_put(nd, "job/1", "a", 1);
    sl_md_node_put(nd, "job/2", "b", 1);
    struct sl_buf b;
    sl_buf_init(&b);
    TAP_OK(sl_md_node_get(nd, "smap", &b) == 1 && !strcmp(b.p, "{\"v\":1}"), "node get");
    sl_md_node_del(nd, "smap");
    TAP_EQ_INT(sl_md_node_get(nd, "smap", &b), 0, "node del");
    sl_buf_free(&b);
    sl_md_node_close(nd);

    test_schema(dir);
    test_mixed_async(dir);
    test_lazy(dir, SL_MD_ASYNC, "async");
    test_lazy(dir, SL_MD_SYNC, "sync");

    for (int i = 0; i < nn; i++)
        free(names[i]);
    sl_rm_rf(dir);
    return tap_done();
}
