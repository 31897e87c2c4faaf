/* SPDX-License-Identifier: MIT
 * mvo.c: rename-obj, POST /v1/objects/B/O {"action": "rename-obj", "name": NEW}
 * on the object's owner (the gateway redirects it there, as AIStore's).
 *
 * AIStore's rename (ais buckets only, not EC): the old name's owner copies
 * the object into the new name (on the new name's owner, which may be
 * another target: tcb.c's copy) and, once that write is committed and
 * readable, deletes the old name (only if it was not written again
 * meanwhile). A new name that exists is overwritten, as AIStore's copy
 * does. A failed copy leaves the old object as it was.
 */
#include "mvo.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "s3.h"
#include "store.h"
#include "tcb_int.h"

#include <stdlib.h>
#include <string.h>

struct mvo {
    struct sl_bck b;
    char *name, *dname;
};

static void mvo_free(void *arg)
{
    struct mvo *o = arg;
    sl_bck_release(&o->b);
    free(o->name);
    free(o->dname);
    free(o);
}

static void mvo_run(struct sl_req *r, void *arg)
{
    struct mvo *o = arg;
    struct sl_err err = { 0 };
    size_t nlen = strlen(o->name);
    struct sl_objmd md;
    int64_t mtime = 0;
    if (s3_lock_check_name(&o->b, o->name, nlen, false, &err) < 0) { /* the old name would go (s3lock.c) */
        sl_resp_err(r, &err);
        goto out;
    }
    int st = sl_obj_stat(&o->b, o->name, nlen, &md, NULL, &err);
    if (st == 1) {
        mtime = md.mtime;
        sl_objmd_free(&md);
    }
    struct copier c = { .src = &o->b, .dst = &o->b, .buf = sl_xmalloc(SL_TCB_CHUNK) };
    int rc = st == 1 ? sl_tcb_copy_one(&c, o->name, nlen, o->dname, strlen(o->dname), &err) : -1;
    free(c.buf);
    if (rc < 0) {
        sl_resp_err(r, &err);
        goto out;
    }
    /* the old name goes only if it is still the version copied (S3-versioned: a delete marker on top) */
    bool dm;
    char vid[24];
    rc = sl_obj_delete_cur(&o->b, o->name, nlen, mtime, &dm, vid, &err);
    if (rc < 0 && err.code != SL_ENOOBJ) {
        sl_resp_errf(r, err.code, "rename-obj: ais://%s/%s was copied to %s but the old name could not be removed "
                     "(%s): remove it with `shale object rm ais://%s/%s`", o->b.name, o->name, o->dname, err.msg,
                     o->b.name, o->name);
    } else if (rc == 1) {
        sl_resp_errf(r, SL_EBUSY, "rename-obj: ais://%s/%s was copied to %s, but it was written again meanwhile: "
                     "the new version stays under the old name (rename it again, or remove it)", o->b.name, o->name,
                     o->dname);
    } else {
        sl_logi("rename-obj: ais://%s/%s -> %s", o->b.name, o->name, o->dname);
        sl_resp_empty(r, 200);
    }
out:
    mvo_free(o);
}

static bool mvo_object_post(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen,
                            struct sl_actmsg *m)
{
    if (strcmp(m->action, "rename-obj"))
        return false;
    struct sl_err err = { 0 };
    size_t dlen = strlen(m->name);
    json_t *ec = json_object_get(b->props, "ec");
    if (strcmp(b->provider, "ais"))
        sl_errf(&err, SL_EINVAL, "rename-obj: %s://%s is a remote bucket: only ais:// buckets rename objects (copy "
                "it with `shale object cp`, then remove the old one)", sl_provider_scheme(b->provider), b->name);
    else if (json_is_true(json_object_get(ec, "enabled")))
        sl_errf(&err, SL_EINVAL, "rename-obj: ais://%s has erasure coding on (ec.enabled): its objects are not "
                "renamed (copy with `shale object cp`, then remove the old one)", b->name);
    else if (!dlen)
        sl_errf(&err, SL_EINVAL, "rename-obj: the new object name goes in \"name\" (it is empty)");
    else if (sl_objname_check(m->name, dlen, &err) < 0)
        ;
    else if (dlen == nlen && !memcmp(m->name, name, nlen))
        sl_errf(&err, SL_EINVAL, "rename-obj: ais://%s/%.*s: the new name is the old one", b->name, (int)nlen, name);
    if (err.msg[0]) {
        sl_resp_err(r, &err);
        return true;
    }
    struct mvo *o = sl_xcalloc(1, sizeof(*o));
    sl_bck_copy(&o->b, b);
    o->name = sl_xstrndup(name, nlen);
    o->dname = sl_xstrdup(m->name);
    sl_req_offload(r, mvo_run, mvo_free, o);
    return true;
}

const struct sl_module sl_mvo_module = {
    .name = "rename-obj",
    .object_post = mvo_object_post,
};
