/* SPDX-License-Identifier: MIT
 * test_md.c: the LMDB metadata layer: key layout with long names sharing a
 * key, exact ordered iteration, prefix/after/seek, group commit under
 * concurrency, bucket deletion across transactions, node documents.
 */
#include "tap.h"
#include "md.h"

#include <pthread.h>
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
    int k = 0, ok = 1;
    while (sl_md_iter_next(it) == 1) {
        size_t l;
        const char *n = sl_md_iter_name(it, &l);
        if (k >= nn || l != strlen(names[k]) || memcmp(n, names[k], l))
            ok = 0;
        k++;
    }
    sl_md_iter_close(it);
    TAP_OK(ok && k == nn, "iteration is exact byte order across grouped long names (%d/%d)", k, nn);

    /* after = a long name inside a group */
    int idx = 4;
    TAP_OK(sl_md_iter_open(e, 1, "", 0, names[idx], strlen(names[idx]), &it, &err) == 0, "iter after");
    k = idx + 1;
    ok = 1;
    while (sl_md_iter_next(it) == 1) {
        size_t l;
        const char *n = sl_md_iter_name(it, &l);
        if (k >= nn || l != strlen(names[k]) || memcmp(n, names[k], l))
            ok = 0;
        k++;
    }
    sl_md_iter_close(it);
    TAP_OK(ok && k == nn, "start after a grouped name");

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

    /* group commit: concurrent writers */
    pthread_t th[8];
    struct thr ts[8];
    for (int i = 0; i < 8; i++) {
        ts[i].e = e;
        ts[i].id = i;
        pthread_create(&th[i], NULL, writer, &ts[i]);
    }
    for (int i = 0; i < 8; i++)
        pthread_join(th[i], NULL);
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

    for (int i = 0; i < nn; i++)
        free(names[i]);
    sl_rm_rf(dir);
    return tap_done();
}
