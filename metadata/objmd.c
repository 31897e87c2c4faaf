/* SPDX-License-Identifier: MIT
 * objmd.c: an object's metadata record (struct sl_objmd): its custom keys
 * and their limits, and its msgpack form as md.c stores it (the record of
 * a name in its key's group). No LMDB here. See md.h.
 */
#include "md.h"
#include "md_int.h"

#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- object metadata records ---- */

void sl_objmd_free(struct sl_objmd *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->ncustom; i++) {
        free(m->custom[i].k);
        free(m->custom[i].v);
    }
    free(m->custom);
    m->custom = NULL;
    m->ncustom = 0;
}

void sl_objmd_copy(struct sl_objmd *dst, const struct sl_objmd *src)
{
    *dst = *src;
    dst->custom = NULL;
    dst->ncustom = 0;
    if (src->ncustom) {
        dst->custom = sl_xcalloc((size_t)src->ncustom, sizeof(struct sl_kv));
        for (int i = 0; i < src->ncustom; i++) {
            dst->custom[i].k = sl_xstrdup(src->custom[i].k);
            dst->custom[i].v = sl_xstrdup(src->custom[i].v);
        }
        dst->ncustom = src->ncustom;
    }
}

void sl_kv_set(struct sl_kv **kv, int *n, const char *k, const char *v)
{
    for (int i = 0; i < *n; i++) {
        if (strcmp((*kv)[i].k, k) == 0) {
            free((*kv)[i].v);
            (*kv)[i].v = sl_xstrdup(v);
            return;
        }
    }
    *kv = sl_xrealloc(*kv, (size_t)(*n + 1) * sizeof(struct sl_kv));
    (*kv)[*n].k = sl_xstrdup(k);
    (*kv)[*n].v = sl_xstrdup(v);
    (*n)++;
}

void sl_objmd_set_custom(struct sl_objmd *m, const char *k, const char *v)
{
    sl_kv_set(&m->custom, &m->ncustom, k, v);
}

const char *sl_objmd_get_custom(const struct sl_objmd *m, const char *k)
{
    for (int i = 0; i < m->ncustom; i++)
        if (strcmp(m->custom[i].k, k) == 0)
            return m->custom[i].v;
    return NULL;
}

static bool has_ctl(const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return true;
    return false;
}

bool sl_custom_key_own(const char *k)
{
    return !strncmp(k, "s3.sse", 6) || !strcmp(k, "s3.vid") || !strcmp(k, "s3.dm") || !strncmp(k, "s3.lock.", 8);
}

int sl_custom_md_check(const struct sl_kv *kv, int n, const char *what, struct sl_err *err)
{
    if (n > SL_CUSTOM_MD_MAX_N)
        return sl_errf(err, SL_EINVAL, "%s: %d custom metadata entries, at most %d are allowed; nothing was stored",
                       what, n, SL_CUSTOM_MD_MAX_N);
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        size_t kl = strlen(kv[i].k), vl = strlen(kv[i].v);
        if (!kl || strchr(kv[i].k, '='))
            return sl_errf(err, SL_EINVAL, "%s: custom metadata key \"%.64s\" is invalid: a key is not empty and has "
                           "no '='; nothing was stored", what, kv[i].k);
        if (kl > SL_CUSTOM_MD_MAX_KEY)
            return sl_errf(err, SL_EINVAL, "%s: custom metadata key \"%.32s...\" has %zu bytes, at most %d are "
                           "allowed; nothing was stored", what, kv[i].k, kl, SL_CUSTOM_MD_MAX_KEY);
        if (vl > SL_CUSTOM_MD_MAX_VALUE)
            return sl_errf(err, SL_EINVAL, "%s: the value of custom metadata key \"%.64s\" has %zu bytes, at most %d "
                           "are allowed; nothing was stored", what, kv[i].k, vl, SL_CUSTOM_MD_MAX_VALUE);
        if (has_ctl(kv[i].k) || has_ctl(kv[i].v))
            return sl_errf(err, SL_EINVAL, "%s: custom metadata key \"%.64s\": keys and values may not hold control "
                           "characters (CR, LF, TAB, ...); nothing was stored", what, kv[i].k);
        total += kl + vl;
    }
    if (total > SL_CUSTOM_MD_MAX)
        return sl_errf(err, SL_EINVAL, "%s: custom metadata of %zu bytes (keys and values), at most %d are allowed; "
                       "nothing was stored", what, total, SL_CUSTOM_MD_MAX);
    return 0;
}

static void pack_str(msgpack_packer *pk, const char *s)
{
    size_t n = strlen(s);
    msgpack_pack_str(pk, n);
    msgpack_pack_str_body(pk, s, n);
}

void sl_md_pack_rec(msgpack_packer *pk, const char *suffix, size_t slen, const struct sl_objmd *m)
{
    msgpack_pack_array(pk, m->nchunks > 0 ? 12 : m->ncopies > 0 ? 11 : 10);
    msgpack_pack_bin(pk, slen);
    msgpack_pack_bin_body(pk, suffix, slen);
    msgpack_pack_uint64(pk, m->size);
    msgpack_pack_int(pk, m->cksum_type);
    pack_str(pk, m->cksum);
    msgpack_pack_uint64(pk, m->version);
    msgpack_pack_int64(pk, m->atime);
    msgpack_pack_int64(pk, m->mtime);
    pack_str(pk, m->fname);
    msgpack_pack_uint32(pk, m->flags);
    msgpack_pack_map(pk, (size_t)m->ncustom);
    for (int i = 0; i < m->ncustom; i++) {
        pack_str(pk, m->custom[i].k);
        pack_str(pk, m->custom[i].v);
    }
    if (m->ncopies > 0 || m->nchunks > 0) {
        int n = m->ncopies < SL_OBJ_MAX_COPIES ? m->ncopies : SL_OBJ_MAX_COPIES;
        msgpack_pack_array(pk, (size_t)n);
        for (int i = 0; i < n; i++)
            msgpack_pack_uint64(pk, m->copies[i]);
    }
    if (m->nchunks > 0) {
        msgpack_pack_array(pk, 2);
        msgpack_pack_uint32(pk, m->nchunks);
        msgpack_pack_uint64(pk, m->chunk_max);
    }
}

static uint64_t obj_u64(const msgpack_object *o)
{
    if (o->type == MSGPACK_OBJECT_POSITIVE_INTEGER)
        return o->via.u64;
    if (o->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
        return (uint64_t)o->via.i64;
    return 0;
}

static void obj_str(const msgpack_object *o, char *out, size_t n)
{
    out[0] = 0;
    if (o->type == MSGPACK_OBJECT_STR) {
        size_t l = o->via.str.size < n - 1 ? o->via.str.size : n - 1;
        memcpy(out, o->via.str.ptr, l);
        out[l] = 0;
    }
}

static char *obj_strdup(const msgpack_object *o)
{
    if (o->type == MSGPACK_OBJECT_STR)
        return sl_xstrndup(o->via.str.ptr, o->via.str.size);
    return sl_xstrdup("");
}

/* Decode one record; suffix points into the msgpack buffer. */
int sl_md_unpack_rec(const msgpack_object *r, const char **suffix, size_t *slen, struct sl_objmd *m)
{
    if (r->type != MSGPACK_OBJECT_ARRAY || r->via.array.size < 10)
        return -1;
    const msgpack_object *a = r->via.array.ptr;
    if (a[0].type != MSGPACK_OBJECT_BIN)
        return -1;
    *suffix = a[0].via.bin.ptr;
    *slen = a[0].via.bin.size;
    if (!m)
        return 0;
    memset(m, 0, sizeof(*m));
    m->size = obj_u64(&a[1]);
    m->cksum_type = (int)obj_u64(&a[2]);
    obj_str(&a[3], m->cksum, sizeof(m->cksum));
    m->version = obj_u64(&a[4]);
    m->atime = (int64_t)obj_u64(&a[5]);
    m->mtime = (int64_t)obj_u64(&a[6]);
    obj_str(&a[7], m->fname, sizeof(m->fname));
    m->flags = (uint32_t)obj_u64(&a[8]);
    if (a[9].type == MSGPACK_OBJECT_MAP && a[9].via.map.size) {
        uint32_t n = a[9].via.map.size;
        m->custom = sl_xcalloc(n, sizeof(struct sl_kv));
        for (uint32_t i = 0; i < n; i++) {
            m->custom[i].k = obj_strdup(&a[9].via.map.ptr[i].key);
            m->custom[i].v = obj_strdup(&a[9].via.map.ptr[i].val);
        }
        m->ncustom = (int)n;
    }
    if (r->via.array.size > 10 && a[10].type == MSGPACK_OBJECT_ARRAY) {
        uint32_t n = a[10].via.array.size;
        for (uint32_t i = 0; i < n && m->ncopies < SL_OBJ_MAX_COPIES; i++)
            m->copies[m->ncopies++] = obj_u64(&a[10].via.array.ptr[i]);
    }
    if (r->via.array.size > 11 && a[11].type == MSGPACK_OBJECT_ARRAY && a[11].via.array.size >= 2) {
        m->nchunks = (uint32_t)obj_u64(&a[11].via.array.ptr[0]);
        m->chunk_max = obj_u64(&a[11].via.array.ptr[1]);
    }
    return 0;
}

void sl_objmd_pack(const struct sl_objmd *m, const char *name, size_t nlen, struct sl_buf *out)
{
    msgpack_sbuffer sb;
    msgpack_sbuffer_init(&sb);
    msgpack_packer pk;
    msgpack_packer_init(&pk, &sb, msgpack_sbuffer_write);
    sl_md_pack_rec(&pk, name, nlen, m);
    sl_buf_add(out, sb.data, sb.size);
    msgpack_sbuffer_destroy(&sb);
}

int sl_objmd_unpack(const void *buf, size_t len, char **name, size_t *nlen, struct sl_objmd *m)
{
    msgpack_unpacked up;
    msgpack_unpacked_init(&up);
    size_t off = 0;
    const char *s;
    int rc = -1;
    if (msgpack_unpack_next(&up, buf, len, &off) == MSGPACK_UNPACK_SUCCESS &&
        sl_md_unpack_rec(&up.data, &s, nlen, m) == 0) {
        *name = sl_xstrndup(s, *nlen);
        rc = 0;
    }
    msgpack_unpacked_destroy(&up);
    return rc;
}
