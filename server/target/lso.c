/* SPDX-License-Identifier: MIT
 * lso.c: one target's listing page and the walk over a whole listing. See
 * lso.h.
 */
#include "lso.h"
#include "jsonx.h"
#include "log.h"
#include "md.h"
#include "store.h"
#include "arch.h"
#include "inv.h"
#include "xact.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char *custom_str(const struct sl_objmd *md)
{
    if (!md->ncustom)
        return NULL;
    static const char *first[] = { "source", "ETag", "LastModified", "Last-Modified", "crc32c", "md5", "version" };
    struct sl_buf b;
    sl_buf_init(&b);
    sl_buf_addc(&b, '[');
    int n = 0;
    for (size_t i = 0; i < SL_ARRAY_SIZE(first); i++) {
        const char *v = sl_objmd_get_custom(md, first[i]);
        if (v) {
            sl_buf_printf(&b, "%s%s:%s", n++ ? " " : "", first[i], v);
        }
    }
    for (int i = 0; i < md->ncustom; i++) {
        bool std = false;
        for (size_t j = 0; j < SL_ARRAY_SIZE(first); j++)
            if (!strcmp(md->custom[i].k, first[j]))
                std = true;
        if (std || !strcmp(md->custom[i].k, "orig_fntl"))
            continue;
        sl_buf_printf(&b, "%s%s:%s", n++ ? " " : "", md->custom[i].k, md->custom[i].v);
    }
    sl_buf_addc(&b, ']');
    return sl_buf_steal(&b);
}

static void fill_entry(struct sl_lsent *e, const char *name, size_t nlen, const struct sl_objmd *md,
                       const struct sl_lsomsg *m, const char *node_id, const char *mpath)
{
    e->name = sl_xstrndup(name, nlen);
    e->nlen = nlen;
    unsigned p = m->props;
    if (p & SL_LP_SIZE)
        e->size = md->size;
    if ((p & SL_LP_CKSUM) && md->cksum[0])
        e->cksum = sl_xstrdup(md->cksum);
    if (p & SL_LP_ATIME) {
        char t[80];
        sl_format_gotime(md->atime, m->time_format, t, sizeof(t));
        e->atime = sl_xstrdup(t);
    }
    if ((p & SL_LP_VERSION) && md->version)
        e->version = sl_xasprintf("%llu", (unsigned long long)md->version);
    if (p & SL_LP_LOCATION)
        e->location = sl_xasprintf("t[%s]:%s", node_id, mpath);
    if (p & SL_LP_CUSTOM)
        e->custom = custom_str(md);
    if (p & SL_LP_COPIES)
        e->copies = 1 + md->ncopies;
    if (!(m->flags & SL_LSO_NAME_ONLY))
        e->flags = SL_ENT_CACHED | (md->nchunks ? SL_ENT_CHUNKED : 0);
}

/* A token inside a shard (sl_lsent_token): "<shard>/./<ordinal>/<member>".
 * An object name has no "." segment, so the first "/./" ends the shard's
 * name. */
struct mtok {
    size_t slen;
    struct sl_arch_pos pos;
};

static bool member_token(const char *t, struct mtok *o)
{
    const char *p = strstr(t, "/./");
    if (!p || p == t || p[3] < '0' || p[3] > '9')
        return false;
    char *end;
    unsigned long long ord = strtoull(p + 3, &end, 10);
    if (*end != '/')
        return false;
    o->slen = (size_t)(p - t);
    o->pos.ord = ord;
    o->pos.name = end + 1;
    o->pos.nlen = strlen(end + 1);
    return true;
}

/* The members of the shard name[0..nlen) (present here) that fit in the page
 * after pos; the token when the page ends inside the shard. Returns 1 when it
 * does (the page is complete), 0 when the shard's members are done, -1 on
 * an error (err). */
static int add_members(const struct sl_bck *b, const char *name, size_t nlen, const char *mprefix, size_t mplen,
                       const struct sl_arch_pos *pos, const struct sl_lsomsg *m, struct sl_lspage *out,
                       struct sl_err *err)
{
    bool more = false;
    int room = m->pagesize - out->n;
    if (sl_arch_list_members(b, name, nlen, mprefix, mplen, pos, room < 0 ? 0 : room, out, &more, err) < 0)
        return -1;
    if (!more)
        return 0;
    free(out->token);
    out->token = sl_lsent_token(&out->ents[out->n - 1]);
    return 1;
}

/* The name its[best] is at may be recorded on other mountpaths too (an
 * object resilver is moving, or what a crash in the middle left): it is
 * listed once, from its HRW mountpath when that has it. Returns the
 * iterator to list it from; the others are moved past the name. */
static int one_of_dups(const struct sl_bck *b, struct sl_md_iter **its, int *have, int nmp, int best)
{
    size_t bl, l;
    const char *bn = sl_md_iter_name(its[best], &bl);
    bool dup[nmp];
    int ndup = 0;
    for (int i = 0; i < nmp; i++) {
        const char *n = i != best && have[i] == 1 ? sl_md_iter_name(its[i], &l) : NULL;
        dup[i] = n && l == bl && !memcmp(n, bn, bl);
        ndup += dup[i];
    }
    if (!ndup)
        return best;
    struct sl_buf un;
    sl_buf_init(&un);
    sl_obj_uname(&un, b->provider, b->name, bn, bl);
    int keep = sl_store_pick(un.p, un.len)->idx;
    sl_buf_free(&un);
    if (keep >= nmp || (keep != best && !dup[keep])) /* (keep >= nmp: attached since the listing began) */
        keep = best;
    dup[best] = keep != best;
    for (int i = 0; i < nmp; i++)
        if (dup[i] && i != keep)
            have[i] = sl_md_iter_next(its[i]);
    return keep;
}

int sl_lso_local_page(const struct sl_bck *b, const struct sl_lsomsg *m, const char *node_id, struct sl_lspage *out,
                      struct sl_err *err)
{
    if (m->flags & SL_LSO_NBI)
        return sl_inv_page(b, m, out, err);
    int nmp = sl_store_nmpaths();
    struct sl_md_iter **its = sl_xcalloc((size_t)(nmp ? nmp : 1), sizeof(*its));
    int *have = sl_xcalloc((size_t)(nmp ? nmp : 1), sizeof(int));
    const char *after = m->token[0] ? m->token : m->start_after;
    size_t afterlen = strlen(after);
    size_t plen = strlen(m->prefix);
    bool norec = (m->flags & SL_LSO_NO_RECURSION) != 0;
    bool archdir = (m->flags & SL_LSO_ARCH_DIR) != 0;
    /* a page that ended inside a shard: the objects go on after the shard */
    struct mtok mt;
    bool in_shard = archdir && m->token[0] && member_token(m->token, &mt);
    if (in_shard)
        afterlen = mt.slen;
    int rc = 0;
    for (int i = 0; i < nmp; i++) {
        if (sl_md_iter_open(sl_store_mpath(i)->md, b->bid, m->prefix, plen, after, afterlen, &its[i], err) < 0) {
            rc = -1;
            goto done;
        }
        have[i] = sl_md_iter_next(its[i]);
        if (have[i] < 0) {
            rc = sl_errf(err, SL_EIO, "listing %s: metadata read failed", b->name);
            goto done;
        }
    }
    char lastdir[SL_MAX_OBJNAME + 2];
    size_t lastdir_len = 0;
    if (archdir && plen) {
        /* a prefix that reaches into a shard ("a/b.tar/dir/"): that shard's
         * entry (on the first page) and its members, nothing else */
        for (size_t i = plen; i > 0; i--) {
            if (m->prefix[i - 1] != '/' || i < 2)
                continue;
            size_t sl = i - 1;
            if (!sl_arch_format_by_name(m->prefix, sl))
                continue;
            struct sl_objmd md;
            struct sl_mpath *mp;
            struct sl_err e2;
            if (sl_obj_stat(b, m->prefix, sl, &md, &mp, &e2) != 1)
                continue;
            bool resume = in_shard && mt.slen == sl && !memcmp(m->token, m->prefix, sl);
            bool after_entry = !in_shard && strlen(m->token) == sl && !memcmp(m->token, m->prefix, sl);
            if (!m->token[0]) {
                struct sl_lsent *e = sl_lspage_add(out);
                fill_entry(e, m->prefix, sl, &md, m, node_id, mp->path);
                e->flags |= SL_ENT_IS_ARCH;
            }
            sl_objmd_free(&md);
            if ((!m->token[0] || resume || after_entry) &&
                add_members(b, m->prefix, sl, m->prefix + i, plen - i, resume ? &mt.pos : NULL, m, out, err) < 0)
                rc = -1;
            goto done;
        }
    }
    if (archdir && m->token[0]) {
        /* the page before ended inside a shard, or with its entry: its
         * (remaining) members first -- on the target that holds it */
        size_t sl = in_shard ? mt.slen : strlen(m->token);
        struct sl_objmd md;
        struct sl_mpath *mp;
        struct sl_err e2;
        if (sl >= plen && !memcmp(m->token, m->prefix, plen) && sl_arch_format_by_name(m->token, sl) &&
            sl_obj_stat(b, m->token, sl, &md, &mp, &e2) == 1) {
            sl_objmd_free(&md);
            char *nm = sl_xstrndup(m->token, sl);
            int r2 = add_members(b, nm, sl, "", 0, in_shard ? &mt.pos : NULL, m, out, &e2);
            if (r2 < 0 && sl == plen) { /* the listing is of this shard */
                *err = e2;
                rc = -1;
            } else if (r2 < 0) {
                sl_logw("listing members of %s/%s: %s", b->name, nm, e2.msg);
            }
            free(nm);
            if (rc < 0 || r2 == 1)
                goto done;
        }
    }
    for (;;) {
        int best = -1;
        const char *bn = NULL;
        size_t bl = 0;
        for (int i = 0; i < nmp; i++) {
            if (have[i] != 1)
                continue;
            size_t l;
            const char *n = sl_md_iter_name(its[i], &l);
            if (best < 0 || sl_lsname_cmp(n, l, bn, bl) < 0) {
                best = i;
                bn = n;
                bl = l;
            }
        }
        if (best < 0)
            break; /* exhausted */
        if (nmp > 1) {
            best = one_of_dups(b, its, have, nmp, best);
            bn = sl_md_iter_name(its[best], &bl);
        }
        if (!(m->flags & SL_LSO_VERSIONS) && sl_objname_vkey(bn, bl) != bl) {
            /* an older S3 version or a delete marker: not an object of its own to list */
            have[best] = sl_md_iter_next(its[best]);
            if (have[best] < 0) {
                rc = sl_errf(err, SL_EIO, "listing %s: metadata read failed", b->name);
                goto done;
            }
            continue;
        }
        if (out->n >= m->pagesize) {
            /* more remain: continuation token = the last entry returned */
            if (out->n) {
                free(out->token);
                out->token = sl_lsent_token(&out->ents[out->n - 1]);
            }
            break;
        }
        if (norec) {
            const char *slash = memchr(bn + plen, '/', bl - plen);
            if (slash) {
                size_t dl = (size_t)(slash - bn) + 1; /* "prefix/seg/" */
                if (!(m->flags & SL_LSO_NO_DIRS) && !(lastdir_len == dl && !memcmp(lastdir, bn, dl))) {
                    struct sl_lsent *e = sl_lspage_add(out);
                    e->name = sl_xstrndup(bn, dl);
                    e->nlen = dl;
                    e->flags = SL_ENT_DIR;
                    memcpy(lastdir, bn, dl);
                    lastdir_len = dl;
                }
                /* skip the whole virtual directory: seek past "prefix/seg/" */
                char *seek = sl_xstrndup(bn, dl);
                seek[dl - 1] = '0'; /* '/' + 1 */
                for (int i = 0; i < nmp; i++) {
                    if (have[i] != 1)
                        continue;
                    sl_md_iter_seek(its[i], seek, dl);
                    have[i] = sl_md_iter_next(its[i]);
                }
                free(seek);
                continue;
            }
        }
        struct sl_lsent *e = sl_lspage_add(out);
        fill_entry(e, bn, bl, sl_md_iter_md(its[best]), m, node_id, sl_store_mpath(best)->path);
        if (archdir && sl_arch_format_by_name(bn, bl)) {
            e->flags |= SL_ENT_IS_ARCH;
            char *nm = sl_xstrndup(bn, bl); /* the iterator's buffer moves on below */
            struct sl_err e2;
            int r2 = add_members(b, nm, bl, "", 0, NULL, m, out, &e2);
            if (r2 < 0 && bl == plen) { /* the listing is of this shard: say it is corrupt */
                *err = e2;
                rc = -1;
            } else if (r2 < 0) {
                /* one bad shard does not make the bucket unlistable */
                sl_logw("listing members of %s/%s: %s", b->name, nm, e2.msg);
            }
            free(nm);
            if (rc < 0)
                goto done;
            if (r2 == 1)
                break; /* the page ends inside the shard */
        }
        have[best] = sl_md_iter_next(its[best]);
        if (have[best] < 0) {
            rc = sl_errf(err, SL_EIO, "listing %s: metadata read failed", b->name);
            goto done;
        }
    }
done:
    for (int i = 0; i < nmp; i++)
        sl_md_iter_close(its[i]);
    free(its);
    free(have);
    return rc;
}

int sl_lso_walk(sl_lso_page_fn page, const struct sl_bck *b, struct sl_lsomsg *m, const struct sl_job *job,
                sl_lsent_fn fn, void *arg, struct sl_err *err)
{
    int rc = 0;
    while (!(job && sl_job_aborting(job))) {
        struct sl_lspage pg;
        sl_lspage_init(&pg);
        if (page(b, m, &pg, err) < 0) {
            sl_lspage_free(&pg);
            return -1;
        }
        for (int i = 0; i < pg.n && rc == 0; i++)
            if (!(pg.ents[i].flags & SL_ENT_DIR))
                rc = fn(arg, &pg.ents[i]);
        bool more = rc == 0 && pg.token && pg.token[0];
        free(m->token);
        m->token = sl_xstrdup(more ? pg.token : "");
        sl_lspage_free(&pg);
        if (rc < 0)
            return -1;
        if (!more)
            break;
    }
    return 0;
}
