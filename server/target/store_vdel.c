/* SPDX-License-Identifier: MIT
 * store_vdel.c: the delete of a current object, as S3's DeleteObject
 * without a version id (store.h sl_obj_delete_cur), for every API and job
 * that deletes one. In a bucket with S3 versioning nothing goes: a delete
 * marker is written on top (a PUT of KEY "\x01" SUFFIX, whose commit
 * archives the current object: store_ver.c), so the data stays an older
 * version until a delete by version id or a lifecycle's
 * NoncurrentVersionExpiration removes it. (A file of its own: it sits on
 * the PUT, which sits on store_ver.c and store_obj.c.)
 */
#include "store_int.h"

#include <stdio.h>
#include <string.h>

int sl_obj_delete_cur(const struct sl_bck *b, const char *key, size_t klen, int64_t if_mtime, bool *marker,
                      char vid[24], struct sl_err *err)
{
    *marker = false;
    vid[0] = 0;
    if (b->s3ver == SL_S3VER_OFF) {
        if (if_mtime > 0)
            return sl_obj_delete_if(b, key, klen, if_mtime, err);
        return sl_obj_delete(b, key, klen, err);
    }
    if (sl_objname_vkey(key, klen) != klen)
        return sl_errf(err, SL_EINVAL, "%.*s names an older version of an object (\\x01 and a version id): delete "
                       "it by its key and version id (S3 DeleteObject with versionId, docs/s3.md); nothing was "
                       "deleted", (int)SL_MIN(klen, 200), key);
    if (klen > SL_MAX_OBJNAME - SL_VER_SUFFIX)
        return sl_errf(err, SL_EINVAL, "the key is too long for a delete marker (at most %d bytes in a bucket with "
                       "versioning); nothing was deleted", SL_MAX_OBJNAME - SL_VER_SUFFIX);
    char sfx[21];
    sl_ver_new_id(sfx);
    if (b->s3ver == SL_S3VER_SUSPENDED) {
        memcpy(sfx + 16, "null", 4); /* the null version: an older null one goes (store_ver.c) */
        snprintf(vid, 24, "null");
    } else {
        snprintf(vid, 24, "%s", sfx);
    }
    struct sl_buf n;
    sl_buf_init(&n);
    sl_ver_name(&n, key, klen, sfx);
    struct sl_kv dm = { (char *)"s3.dm", (char *)"1" };
    struct sl_put_opts o = { .client_cktype = -1, .custom = &dm, .ncustom = 1, .expect_size = 0,
                             .if_mtime = if_mtime };
    struct sl_put *p;
    int rc = sl_put_begin(b, n.p, n.len, &o, &p, err);
    if (rc == 0)
        rc = sl_put_commit(p, NULL, err);
    sl_buf_free(&n);
    if (rc < 0) {
        vid[0] = 0;
        return err->code == SL_EEXIST && if_mtime > 0 ? 1 : -1;
    }
    *marker = true;
    return 0;
}
