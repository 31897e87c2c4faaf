/* SPDX-License-Identifier: MIT
 * lso.c: list-objects. See lso.h.
 */
#include "lso.h"
#include "jsonx.h"
#include "log.h"
#include "md.h"
#include "store.h"
#include "arch.h"
#include "xact.h"

#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    unsigned bit;
} prop_names[] = {
    { "name", SL_LP_NAME }, { "size", SL_LP_SIZE }, { "version", SL_LP_VERSION }, { "checksum", SL_LP_CKSUM },
    { "atime", SL_LP_ATIME }, { "cached", SL_LP_CACHED }, { "status", SL_LP_STATUS }, { "copies", SL_LP_COPIES },
    { "ec", SL_LP_EC }, { "custom", SL_LP_CUSTOM }, { "location", SL_LP_LOCATION }, { "chunked", SL_LP_CHUNKED },
    { "last-modified", SL_LP_LASTMOD }, { "etag", SL_LP_ETAG },
};

static char *dupstr(const json_t *o, const char *k)
{
    const char *s = sl_json_str(o, k, "");
    return sl_xstrdup(s);
}

int sl_lsomsg_parse(const json_t *v, struct sl_lsomsg *m, int default_pagesize, struct sl_err *err)
{
    memset(m, 0, sizeof(*m));
    if (v && !json_is_null(v) && !json_is_object(v))
        return sl_errf(err, SL_EINVAL, "list-objects: \"value\" must be an LsoMsg object");
    /* type checks on the fields clients send */
    static const char *strs[] = { "uuid", "props", "time_format", "prefix", "start_after", "continuation_token",
                                  "target" };
    for (size_t i = 0; v && i < SL_ARRAY_SIZE(strs); i++) {
        json_t *f = sl_json_get(v, strs[i]);
        if (f && !json_is_string(f) && !json_is_null(f))
            return sl_errf(err, SL_EINVAL, "list-objects: \"%s\" must be a string", strs[i]);
    }
    m->uuid = dupstr(v, "uuid");
    m->props_str = dupstr(v, "props");
    m->time_format = dupstr(v, "time_format");
    m->prefix = dupstr(v, "prefix");
    m->start_after = dupstr(v, "start_after");
    m->token = dupstr(v, "continuation_token");
    json_t *fl = sl_json_get(v, "flags");
    if (json_is_string(fl)) {
        char *end;
        m->flags = strtoull(json_string_value(fl), &end, 10);
        if (*end)
            return sl_errf(err, SL_EINVAL, "list-objects: \"flags\" must be an integer (as a string), got \"%s\"",
                           json_string_value(fl));
    } else if (json_is_integer(fl)) {
        m->flags = (uint64_t)json_integer_value(fl);
    } else if (fl && !json_is_null(fl)) {
        return sl_errf(err, SL_EINVAL, "list-objects: \"flags\" must be an integer");
    }
    json_t *ps = sl_json_get(v, "pagesize");
    if (ps && !json_is_null(ps) && !json_is_integer(ps))
        return sl_errf(err, SL_EINVAL, "list-objects: \"pagesize\" must be an integer");
    m->pagesize = ps ? (int)json_integer_value(ps) : 0;
    if (m->pagesize < 0)
        return sl_errf(err, SL_EINVAL, "list-objects: \"pagesize\" must not be negative");
    if (m->pagesize == 0 || m->pagesize > 100000)
        m->pagesize = m->pagesize ? 100000 : default_pagesize;

    /* props with AIStore's defaults */
    if (!m->props_str[0]) {
        m->props = SL_LP_NAME | SL_LP_SIZE | SL_LP_CACHED;
        if (m->flags & SL_LSO_CACHED)
            m->props = SL_LP_NAME | SL_LP_SIZE | SL_LP_CKSUM | SL_LP_ATIME;
    } else if (!strcmp(m->props_str, "all")) {
        m->props = ~0u;
    } else {
        char *cp = sl_xstrdup(m->props_str), *save = NULL;
        for (char *t = strtok_r(cp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            while (*t == ' ')
                t++;
            unsigned bit = 0;
            for (size_t i = 0; i < SL_ARRAY_SIZE(prop_names); i++)
                if (!strcmp(t, prop_names[i].name))
                    bit = prop_names[i].bit;
            if (!bit) {
                sl_errf(err, SL_EINVAL,
                        "list-objects: unknown property \"%s\" (valid: name, size, version, checksum, atime, cached, "
                        "status, copies, ec, custom, location, chunked, last-modified, etag)",
                        t);
                free(cp);
                return -1;
            }
            m->props |= bit;
        }
        free(cp);
        m->props |= SL_LP_NAME;
    }
    if (m->flags & SL_LSO_NAME_ONLY)
        m->props = SL_LP_NAME;
    return 0;
}

void sl_lsomsg_names(struct sl_lsomsg *m, const char *prefix, bool sizes, uint64_t extra_flags, int pagesize)
{
    memset(m, 0, sizeof(*m));
    m->uuid = sl_xstrdup("");
    m->props_str = sl_xstrdup(sizes ? "name,size" : "name");
    m->props = SL_LP_NAME | (sizes ? SL_LP_SIZE : 0);
    m->time_format = sl_xstrdup("");
    m->prefix = sl_xstrdup(prefix ? prefix : "");
    m->start_after = sl_xstrdup("");
    m->token = sl_xstrdup("");
    m->flags = (sizes ? SL_LSO_NAME_SIZE : SL_LSO_NAME_ONLY) | extra_flags;
    m->pagesize = pagesize;
}

void sl_lsomsg_free(struct sl_lsomsg *m)
{
    free(m->uuid);
    free(m->props_str);
    free(m->time_format);
    free(m->prefix);
    free(m->start_after);
    free(m->token);
    memset(m, 0, sizeof(*m));
}

json_t *sl_lsomsg_json(const struct sl_lsomsg *m)
{
    json_t *o = json_object();
    char fl[32];
    snprintf(fl, sizeof(fl), "%llu", (unsigned long long)m->flags);
    json_object_set_new(o, "uuid", json_string(m->uuid));
    json_object_set_new(o, "props", json_string(m->props_str));
    json_object_set_new(o, "time_format", json_string(m->time_format));
    json_object_set_new(o, "prefix", json_string(m->prefix));
    json_object_set_new(o, "start_after", json_string(m->start_after));
    json_object_set_new(o, "continuation_token", json_string(m->token));
    json_object_set_new(o, "flags", json_string(fl));
    json_object_set_new(o, "pagesize", json_integer(m->pagesize));
    return o;
}

/* ---- pages ---- */

void sl_lspage_init(struct sl_lspage *p)
{
    memset(p, 0, sizeof(*p));
}

static void ent_free(struct sl_lsent *e)
{
    free(e->name);
    free(e->cksum);
    free(e->atime);
    free(e->version);
    free(e->location);
    free(e->custom);
}

void sl_lspage_free(struct sl_lspage *p)
{
    for (int i = 0; i < p->n; i++)
        ent_free(&p->ents[i]);
    free(p->ents);
    free(p->uuid);
    free(p->token);
    memset(p, 0, sizeof(*p));
}

struct sl_lsent *sl_lspage_add(struct sl_lspage *p)
{
    if (p->n == p->cap) {
        p->cap = p->cap ? p->cap * 2 : 64;
        p->ents = sl_xrealloc(p->ents, (size_t)p->cap * sizeof(*p->ents));
    }
    struct sl_lsent *e = &p->ents[p->n++];
    memset(e, 0, sizeof(*e));
    return e;
}

static int name_cmp(const char *a, size_t an, const char *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    int c = memcmp(a, b, n);
    if (c)
        return c;
    return an < bn ? -1 : an > bn ? 1 : 0;
}

int sl_lsent_cmp(const void *a, const void *b)
{
    const struct sl_lsent *x = a, *y = b;
    return name_cmp(x->name, x->nlen, y->name, y->nlen);
}

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
        e->flags = SL_ENT_CACHED;
}

char *sl_lsent_token(const struct sl_lsent *e)
{
    if ((e->flags & SL_ENT_IN_ARCH) && e->alen && e->alen < e->nlen)
        return sl_xasprintf("%.*s/./%llu/%.*s", (int)e->alen, e->name, (unsigned long long)e->aord,
                            (int)(e->nlen - e->alen - 1), e->name + e->alen + 1);
    return sl_xstrndup(e->name, e->nlen);
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
    if (keep != best && !dup[keep])
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
            if (best < 0 || name_cmp(n, l, bn, bl) < 0) {
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

/* The object an entry belongs to: a member's shard, name[0..return) */
static size_t obj_len(const struct sl_lsent *e)
{
    return (e->flags & SL_ENT_IN_ARCH) && e->alen && e->alen < e->nlen ? e->alen : e->nlen;
}

/* Listing order of entries from different targets: by object name, a shard
 * before its members; two members of one shard (copies of it on two
 * targets) tie, and the earlier input goes first. */
static int ent_order(const struct sl_lsent *a, const struct sl_lsent *b)
{
    size_t al = obj_len(a), bl = obj_len(b);
    int c = name_cmp(a->name, al, b->name, bl);
    if (c)
        return c;
    bool am = al < a->nlen, bm = bl < b->nlen;
    return am == bm ? 0 : am ? 1 : -1;
}

static bool same_entry(const struct sl_lsent *a, const struct sl_lsent *b)
{
    return obj_len(a) == obj_len(b) && name_cmp(a->name, a->nlen, b->name, b->nlen) == 0;
}

void sl_lspage_merge(struct sl_lspage *in, int nin, int pagesize, struct sl_lspage *out)
{
    int *pos = sl_xcalloc((size_t)(nin ? nin : 1), sizeof(int));
    bool more = false;
    /* A target that returned a full page may hold entries beyond its last
     * one, so the merged page must stop at the first such last entry. */
    struct sl_lsent lim = { 0 };
    bool have_lim = false;
    for (int i = 0; i < nin; i++) {
        if (in[i].token && in[i].token[0] && in[i].n) {
            const struct sl_lsent *l = &in[i].ents[in[i].n - 1];
            if (!have_lim || ent_order(l, &lim) < 0) {
                lim = *l; /* name etc. borrowed: copied below before the entries move */
                have_lim = true;
            }
        }
    }
    if (have_lim) {
        lim.name = sl_xstrndup(lim.name, lim.nlen);
        lim.cksum = lim.atime = lim.version = lim.location = lim.custom = NULL;
    }
    for (;;) {
        int best = -1;
        for (int i = 0; i < nin; i++) {
            if (pos[i] >= in[i].n)
                continue;
            if (best < 0 || ent_order(&in[i].ents[pos[i]], &in[best].ents[pos[best]]) < 0)
                best = i;
        }
        if (best < 0)
            break;
        struct sl_lsent *src = &in[best].ents[pos[best]];
        if (out->n >= pagesize || (have_lim && ent_order(src, &lim) > 0)) {
            more = true;
            break;
        }
        struct sl_lsent *dst = sl_lspage_add(out);
        *dst = *src;
        memset(src, 0, sizeof(*src));
        pos[best]++;
        /* collapse duplicates (virtual directories reported by several
         * targets, copies of one object) */
        for (int i = 0; i < nin; i++) {
            while (i != best && pos[i] < in[i].n && same_entry(&in[i].ents[pos[i]], dst)) {
                ent_free(&in[i].ents[pos[i]]);
                memset(&in[i].ents[pos[i]], 0, sizeof(struct sl_lsent));
                pos[i]++;
            }
        }
    }
    if (have_lim)
        more = true;
    free(lim.name);
    free(out->token);
    out->token = more && out->n ? sl_lsent_token(&out->ents[out->n - 1]) : NULL;
    free(pos);
}

json_t *sl_lspage_json(const struct sl_lspage *p)
{
    json_t *o = json_object();
    json_object_set_new(o, "uuid", json_string(p->uuid ? p->uuid : ""));
    json_object_set_new(o, "continuation_token", json_string(p->token ? p->token : ""));
    json_t *arr = p->n ? json_array() : json_null();
    for (int i = 0; i < p->n; i++) {
        const struct sl_lsent *e = &p->ents[i];
        json_t *je = json_object();
        json_object_set_new(je, "name", json_stringn(e->name, e->nlen));
        if (e->cksum)
            json_object_set_new(je, "checksum", json_string(e->cksum));
        if (e->atime)
            json_object_set_new(je, "atime", json_string(e->atime));
        if (e->version)
            json_object_set_new(je, "version", json_string(e->version));
        if (e->location)
            json_object_set_new(je, "location", json_string(e->location));
        if (e->custom)
            json_object_set_new(je, "custom-md", json_string(e->custom));
        if (e->size) {
            char s[32];
            snprintf(s, sizeof(s), "%llu", (unsigned long long)e->size);
            json_object_set_new(je, "size", json_string(s));
        }
        if (e->copies)
            json_object_set_new(je, "copies", json_integer(e->copies));
        if (e->flags)
            json_object_set_new(je, "flags", json_integer(e->flags));
        json_array_append_new(arr, je);
    }
    json_object_set_new(o, "entries", arr);
    json_object_set_new(o, "flags", json_integer(p->flags));
    return o;
}

static int sb_write(void *data, const char *buf, size_t len)
{
    return sl_buf_add((struct sl_buf *)data, buf, len);
}

static void pk_str(msgpack_packer *pk, const char *s, size_t n)
{
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

static void pk_key(msgpack_packer *pk, const char *k)
{
    pk_str(pk, k, strlen(k));
}

static void lspage_msgpack(const struct sl_lspage *p, struct sl_buf *out, bool peer)
{
    msgpack_packer pk;
    msgpack_packer_init(&pk, out, sb_write);
    msgpack_pack_map(&pk, 4);
    pk_key(&pk, "UUID");
    pk_key(&pk, p->uuid ? p->uuid : "");
    pk_key(&pk, "ContinuationToken");
    pk_key(&pk, p->token ? p->token : "");
    pk_key(&pk, "Entries");
    if (!p->n) {
        msgpack_pack_nil(&pk);
    } else {
        msgpack_pack_array(&pk, (size_t)p->n);
        for (int i = 0; i < p->n; i++) {
            const struct sl_lsent *e = &p->ents[i];
            bool member = peer && e->alen;
            int nf = 1 + !!e->cksum + !!e->atime + !!e->version + !!e->location + !!e->custom + !!e->size +
                     !!e->copies + !!e->flags + (member ? 2 : 0);
            msgpack_pack_map(&pk, (size_t)nf);
            pk_key(&pk, "n");
            pk_str(&pk, e->name, e->nlen);
            if (e->cksum) {
                pk_key(&pk, "cs");
                pk_key(&pk, e->cksum);
            }
            if (e->atime) {
                pk_key(&pk, "a");
                pk_key(&pk, e->atime);
            }
            if (e->version) {
                pk_key(&pk, "v");
                pk_key(&pk, e->version);
            }
            if (e->location) {
                pk_key(&pk, "t");
                pk_key(&pk, e->location);
            }
            if (e->custom) {
                pk_key(&pk, "m");
                pk_key(&pk, e->custom);
            }
            if (e->size) {
                pk_key(&pk, "s");
                msgpack_pack_int64(&pk, (int64_t)e->size);
            }
            if (e->copies) {
                pk_key(&pk, "c");
                msgpack_pack_int16(&pk, (int16_t)e->copies);
            }
            if (e->flags) {
                pk_key(&pk, "f");
                msgpack_pack_uint16(&pk, (uint16_t)e->flags);
            }
            if (member) { /* node to node: where the shard's name ends, the member's ordinal */
                pk_key(&pk, "xa");
                msgpack_pack_uint32(&pk, e->alen);
                pk_key(&pk, "xo");
                msgpack_pack_uint64(&pk, e->aord);
            }
        }
    }
    pk_key(&pk, "Flags");
    msgpack_pack_uint32(&pk, p->flags);
}

void sl_lspage_msgpack(const struct sl_lspage *p, struct sl_buf *out)
{
    lspage_msgpack(p, out, false);
}

void sl_lspage_msgpack_peer(const struct sl_lspage *p, struct sl_buf *out)
{
    lspage_msgpack(p, out, true);
}

static char *mp_strdup(const msgpack_object *o)
{
    if (o->type == MSGPACK_OBJECT_STR)
        return sl_xstrndup(o->via.str.ptr, o->via.str.size);
    return NULL;
}

static bool mp_key(const msgpack_object *k, const char *s)
{
    return k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(s) && !memcmp(k->via.str.ptr, s, k->via.str.size);
}

int sl_lspage_from_msgpack(const char *data, size_t len, struct sl_lspage *out, struct sl_err *err)
{
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    if (msgpack_unpack_next(&up, data, len, &off) != MSGPACK_UNPACK_SUCCESS || up.data.type != MSGPACK_OBJECT_MAP) {
        msgpack_unpacked_destroy(&up);
        return sl_errf(err, SL_EIO, "list-objects: cannot decode msgpack page");
    }
    for (uint32_t i = 0; i < up.data.via.map.size; i++) {
        const msgpack_object_kv *kv = &up.data.via.map.ptr[i];
        if (mp_key(&kv->key, "UUID")) {
            out->uuid = mp_strdup(&kv->val);
        } else if (mp_key(&kv->key, "ContinuationToken")) {
            out->token = mp_strdup(&kv->val);
        } else if (mp_key(&kv->key, "Flags")) {
            out->flags = (uint32_t)kv->val.via.u64;
        } else if (mp_key(&kv->key, "Entries") && kv->val.type == MSGPACK_OBJECT_ARRAY) {
            for (uint32_t j = 0; j < kv->val.via.array.size; j++) {
                const msgpack_object *eo = &kv->val.via.array.ptr[j];
                if (eo->type != MSGPACK_OBJECT_MAP)
                    continue;
                struct sl_lsent *e = sl_lspage_add(out);
                for (uint32_t k = 0; k < eo->via.map.size; k++) {
                    const msgpack_object_kv *f = &eo->via.map.ptr[k];
                    if (mp_key(&f->key, "n") && f->val.type == MSGPACK_OBJECT_STR) {
                        e->name = sl_xstrndup(f->val.via.str.ptr, f->val.via.str.size);
                        e->nlen = f->val.via.str.size;
                    } else if (mp_key(&f->key, "cs")) {
                        e->cksum = mp_strdup(&f->val);
                    } else if (mp_key(&f->key, "a")) {
                        e->atime = mp_strdup(&f->val);
                    } else if (mp_key(&f->key, "v")) {
                        e->version = mp_strdup(&f->val);
                    } else if (mp_key(&f->key, "t")) {
                        e->location = mp_strdup(&f->val);
                    } else if (mp_key(&f->key, "m")) {
                        e->custom = mp_strdup(&f->val);
                    } else if (mp_key(&f->key, "s")) {
                        e->size = f->val.via.u64;
                    } else if (mp_key(&f->key, "c")) {
                        e->copies = (int)f->val.via.i64;
                    } else if (mp_key(&f->key, "f")) {
                        e->flags = (uint32_t)f->val.via.u64;
                    } else if (mp_key(&f->key, "xa") && f->val.type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
                        e->alen = (uint32_t)f->val.via.u64;
                    } else if (mp_key(&f->key, "xo") && f->val.type == MSGPACK_OBJECT_POSITIVE_INTEGER) {
                        e->aord = f->val.via.u64;
                    }
                }
                if (!e->name) {
                    e->name = sl_xstrdup("");
                    e->nlen = 0;
                }
                if (e->alen >= e->nlen)
                    e->alen = 0;
            }
        }
    }
    msgpack_unpacked_destroy(&up);
    return 0;
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
