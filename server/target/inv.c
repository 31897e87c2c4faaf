/* SPDX-License-Identifier: MIT
 * inv.c: see inv.h.
 */
#include "inv.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "store.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "md.h"

#define INV_BATCH 512

static struct sl_md_env *env_of(struct sl_err *err)
{
    if (sl_store_nmpaths() < 1) {
        sl_errf(err, SL_EUNAVAIL, "t[%s] has no mountpath to keep an inventory on", G.id);
        return NULL;
    }
    return sl_store_mpath(0)->md;
}

struct sl_inv_w {
    struct sl_md_env *env;
    uint64_t bid;
    struct sl_md_op ops[INV_BATCH];
    struct sl_buf keys[INV_BATCH];
    unsigned char vals[INV_BATCH][8];
    int n;
};

static int flush(struct sl_inv_w *w, struct sl_err *err)
{
    int rc = w->n ? sl_md_commit(w->env, w->ops, w->n, true, err) : 0;
    for (int i = 0; i < w->n; i++)
        sl_buf_free(&w->keys[i]);
    w->n = 0;
    return rc;
}

struct sl_inv_w *sl_inv_begin(const struct sl_bck *b, struct sl_err *err)
{
    struct sl_md_env *env = env_of(err);
    if (!env || sl_inv_drop(env, b->bid, err) < 0)
        return NULL;
    struct sl_inv_w *w = sl_xcalloc(1, sizeof(*w));
    w->env = env;
    w->bid = b->bid;
    return w;
}

int sl_inv_add(struct sl_inv_w *w, const char *name, size_t nlen, uint64_t size, struct sl_err *err)
{
    int i = w->n++;
    sl_buf_init(&w->keys[i]);
    char kb[SL_INV_KEY_BCK];
    sl_inv_key_bck(kb, 'b', w->bid);
    sl_buf_add(&w->keys[i], kb, SL_INV_KEY_BCK);
    sl_buf_add(&w->keys[i], name, nlen);
    for (int k = 0; k < 8; k++)
        w->vals[i][k] = (unsigned char)(size >> (56 - 8 * k));
    w->ops[i] = (struct sl_md_op){ .kind = SL_MD_PUT_AUX, .key = w->keys[i].p, .klen = w->keys[i].len,
                                   .val = w->vals[i], .vlen = 8 };
    return w->n == INV_BATCH ? flush(w, err) : 0;
}

int sl_inv_end(struct sl_inv_w *w, bool ok, json_t *meta, struct sl_err *err)
{
    int rc = ok ? flush(w, err) : 0;
    if (ok && rc == 0) {
        char km[SL_INV_KEY_BCK];
        sl_inv_key_bck(km, 'M', w->bid);
        char *s = json_dumps(meta, JSON_COMPACT);
        struct sl_md_op op = { .kind = SL_MD_PUT_AUX, .key = km, .klen = SL_INV_KEY_BCK, .val = s, .vlen = strlen(s) };
        rc = sl_md_commit(w->env, &op, 1, true, err);
        free(s);
    }
    if (!ok || rc < 0) {
        struct sl_err e2 = { 0 };
        flush(w, &e2);
        sl_inv_drop(w->env, w->bid, &e2);
    }
    json_decref(meta);
    free(w);
    return rc;
}

json_t *sl_inv_meta(const struct sl_bck *b)
{
    struct sl_err err = { 0 };
    struct sl_md_env *env = env_of(&err);
    if (!env)
        return NULL;
    char km[SL_INV_KEY_BCK];
    sl_inv_key_bck(km, 'M', b->bid);
    struct sl_buf v;
    sl_buf_init(&v);
    json_t *j = NULL;
    if (sl_md_aux_get(env, km, SL_INV_KEY_BCK, &v) == 1)
        j = json_loadb(v.p, v.len, 0, NULL);
    sl_buf_free(&v);
    return j;
}

int sl_inv_destroy(const struct sl_bck *b, struct sl_err *err)
{
    struct sl_md_env *env = env_of(err);
    return env ? sl_inv_drop(env, b->bid, err) : -1;
}

struct pg {
    const struct sl_bck *b;
    const struct sl_lsomsg *m;
    struct sl_lspage *out;
    const char *after;
    size_t alen;
};

static int page_cb(void *arg, const char *key, size_t klen, const char *val, size_t vlen)
{
    struct pg *g = arg;
    const char *name = key + SL_INV_KEY_BCK;
    size_t nlen = klen - SL_INV_KEY_BCK;
    if (g->alen && sl_lsname_cmp(name, nlen, g->after, g->alen) <= 0)
        return 0; /* (the token itself) */
    if (g->out->n >= g->m->pagesize) {
        free(g->out->token);
        g->out->token = sl_xstrndup(g->out->ents[g->out->n - 1].name, g->out->ents[g->out->n - 1].nlen);
        return 1;
    }
    uint64_t size = 0;
    for (size_t i = 0; i < 8 && vlen == 8; i++)
        size = size << 8 | (unsigned char)val[i];
    struct sl_lsent *e = sl_lspage_add(g->out);
    e->name = sl_xstrndup(name, nlen);
    e->nlen = nlen;
    if (g->m->props & SL_LP_SIZE)
        e->size = size;
    if (!(g->m->flags & SL_LSO_NAME_ONLY)) {
        struct sl_objmd md;
        struct sl_err e2 = { 0 };
        if (sl_obj_stat(g->b, name, nlen, &md, NULL, &e2) == 1) {
            e->flags |= SL_ENT_CACHED;
            sl_objmd_free(&md);
        }
    }
    return 0;
}

int sl_inv_page(const struct sl_bck *b, const struct sl_lsomsg *m, struct sl_lspage *out, struct sl_err *err)
{
    struct sl_md_env *env = env_of(err);
    if (!env)
        return -1;
    json_t *meta = sl_inv_meta(b);
    const char *nm = meta ? sl_json_str(meta, "name", "") : "";
    if (!meta || (m->inv_name && m->inv_name[0] && strcmp(m->inv_name, nm))) {
        sl_errf(err, SL_ENOENT, "%s://%s has no inventory%s%s%s on t[%s]: create one (create-inventory, `ais nbi create`)",
                sl_provider_scheme(b->provider), b->name, m->inv_name && m->inv_name[0] ? " named \"" : "",
                m->inv_name && m->inv_name[0] ? m->inv_name : "", m->inv_name && m->inv_name[0] ? "\"" : "", G.id);
        json_decref(meta);
        return -1;
    }
    json_decref(meta);
    char kb[SL_INV_KEY_BCK];
    sl_inv_key_bck(kb, 'b', b->bid);
    struct sl_buf pfx, from;
    sl_buf_init(&pfx);
    sl_buf_init(&from);
    sl_buf_add(&pfx, kb, SL_INV_KEY_BCK);
    sl_buf_adds(&pfx, m->prefix);
    sl_buf_add(&from, kb, SL_INV_KEY_BCK);
    const char *after = m->token[0] ? m->token : "";
    sl_buf_adds(&from, after[0] && strcmp(after, m->prefix) > 0 ? after : m->prefix);
    struct pg g = { b, m, out, after, strlen(after) };
    int rc = sl_md_aux_foreach_from(env, pfx.p, pfx.len, from.p, from.len, page_cb, &g);
    sl_buf_free(&pfx);
    sl_buf_free(&from);
    if (rc < 0)
        return sl_errf(err, SL_EIO, "t[%s]: reading the inventory of %s://%s failed", G.id,
                       sl_provider_scheme(b->provider), b->name);
    return 0;
}
