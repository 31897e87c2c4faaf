/* SPDX-License-Identifier: MIT
 * lspage.c: the list-objects message (LsoMsg) and page (entries, merging,
 * JSON and msgpack encodings). See lspage.h.
 */
#include "lspage.h"
#include "jsonx.h"
#include "log.h"

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
                                  "target", "inv_name" };
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
    m->inv_name = dupstr(v, "inv_name");
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
    m->inv_name = sl_xstrdup("");
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
    free(m->inv_name);
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
    if (m->inv_name && m->inv_name[0])
        json_object_set_new(o, "inv_name", json_string(m->inv_name));
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

int sl_lsname_cmp(const char *a, size_t an, const char *b, size_t bn)
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
    return sl_lsname_cmp(x->name, x->nlen, y->name, y->nlen);
}

char *sl_lsent_token(const struct sl_lsent *e)
{
    if ((e->flags & SL_ENT_IN_ARCH) && e->alen && e->alen < e->nlen)
        return sl_xasprintf("%.*s/./%llu/%.*s", (int)e->alen, e->name, (unsigned long long)e->aord,
                            (int)(e->nlen - e->alen - 1), e->name + e->alen + 1);
    return sl_xstrndup(e->name, e->nlen);
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
    int c = sl_lsname_cmp(a->name, al, b->name, bl);
    if (c)
        return c;
    bool am = al < a->nlen, bm = bl < b->nlen;
    return am == bm ? 0 : am ? 1 : -1;
}

static bool same_entry(const struct sl_lsent *a, const struct sl_lsent *b)
{
    return obj_len(a) == obj_len(b) && sl_lsname_cmp(a->name, a->nlen, b->name, b->nlen) == 0;
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
