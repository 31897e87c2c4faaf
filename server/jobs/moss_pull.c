/* SPDX-License-Identifier: MIT
 * moss_pull.c: get-batch on a holder (see moss.c): the items a designated
 * target pulls from this node, sent back as a header and their bytes.
 */
#include "moss_int.h"
#include "jsonx.h"
#include "log.h"
#include "opipe.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------ */
/* holders: POST /v1/internal/moss/pull                               */
/* ------------------------------------------------------------------ */

struct pull {
    struct moss m;
    int *idx;
    struct src *srcs;
    struct sl_opipe *p;
    /* an item list to parse on the pull's thread */
    char *body;
    size_t blen;
    /* sl_moss_pull: the items, worked out on the pull's thread */
    sl_moss_items_fn build;
    void (*free_arg)(void *);
    void *arg;
};

static void pull_free(struct pull *pl)
{
    if (pl->free_arg)
        pl->free_arg(pl->arg);
    free(pl->body);
    for (int k = 0; pl->srcs && k < pl->m.n; k++)
        moss_src_close(&pl->srcs[k]);
    free(pl->srcs);
    free(pl->idx);
    moss_free(&pl->m);
    free(pl);
}

/* a pull's header h (taken): its length (8 bytes, little-endian), then
 * the JSON; false when the designated target went away */
static bool pull_header(struct pull *pl, json_t *h)
{
    size_t hl;
    char *hs = sl_json_dump(h, 0, &hl);
    json_decref(h);
    unsigned char len8[8];
    for (int i = 0; i < 8; i++)
        len8[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    bool ok = sl_opipe_write(pl->p, len8, 8) >= 0 && sl_opipe_write(pl->p, hs, hl) >= 0;
    free(hs);
    return ok;
}

/* the header of a pull that has no items to send: {"error": msg} */
static void pull_fail(struct pull *pl, const char *msg)
{
    bool ok = pull_header(pl, json_pack("{s:s}", "error", msg));
    sl_opipe_close(pl->p, !ok);
    pull_free(pl);
}

static int pull_parse(struct pull *pl, struct sl_err *err);

static void *pull_send(void *arg)
{
    struct pull *pl = arg;
    if (pl->body) {
        struct sl_err err = { 0 };
        if (pull_parse(pl, &err) < 0) {
            pull_fail(pl, err.msg);
            return NULL;
        }
    } else if (pl->build) {
        struct sl_moss_item *items = NULL;
        int n = 0;
        struct sl_err err = { 0 };
        if (pl->build(pl->arg, &items, &n, &err) < 0) {
            free(items);
            pull_fail(pl, err.msg);
            return NULL;
        }
        moss_of_items(&pl->m, items, n);
        free(items);
    }
    pl->idx = sl_xcalloc((size_t)pl->m.n, sizeof(int));
    for (int k = 0; k < pl->m.n; k++)
        pl->idx[k] = k;
    pl->srcs = sl_xcalloc((size_t)pl->m.n, sizeof(*pl->srcs));
    moss_open_local(&pl->m, pl->idx, pl->m.n, pl->srcs);
    json_t *hdr = json_array();
    for (int k = 0; k < pl->m.n; k++) {
        const struct item *x = &pl->m.it[k];
        json_array_append_new(hdr, json_pack("[i,I,s]", x->code, (json_int_t)x->size, x->err ? x->err : ""));
    }
    bool failed = !pull_header(pl, hdr);
    char *buf = sl_xmalloc(CHUNK);
    for (int k = 0; k < pl->m.n && !failed; k++) {
        struct item *x = &pl->m.it[k];
        struct sl_err err = { 0 };
        if (x->code)
            continue;
        if (moss_src_ready(&pl->m, x, &pl->srcs[k], &err) < 0) {
            sl_logw("get-batch: %s", err.msg);
            failed = true;
            break;
        }
        int64_t r;
        while ((r = moss_src_read(&pl->srcs[k], buf, CHUNK, &err)) > 0)
            if (sl_opipe_write(pl->p, buf, (size_t)r) < 0) {
                failed = true;
                break;
            }
        if (r < 0) {
            sl_logw("get-batch: %s/%s: %s", x->bck, x->obj, err.msg);
            failed = true;
        }
        moss_src_close(&pl->srcs[k]);
    }
    free(buf);
    sl_opipe_close(pl->p, failed);
    pull_free(pl);
    return NULL;
}

/* answer r with pl, sent from a thread of its own */
static void pull_start(struct sl_req *r, struct pull *pl)
{
    pl->p = sl_resp_opipe(r, 200, "application/octet-stream", PIPE_HIGH);
    pthread_t t;
    if (pthread_create(&t, NULL, pull_send, pl) != 0) {
        sl_opipe_close(pl->p, true);
        pull_free(pl);
        return;
    }
    pthread_detach(t);
}

/* On the HTTP thread: the request is parsed here (no I/O) and everything
 * else (opening the items, sending them) runs on a thread of its own. Not
 * on the background pool: a designated target waits on that pool for the
 * answers of the other targets, and a pull that needed the pool could wait
 * behind it, on every target at once. */
/* the item list a designated target sent: [[bck, provider, obj, archpath,
 * start, length, rawhdr], ...] (on the pull's thread) */
static int pull_parse(struct pull *pl, struct sl_err *err)
{
    json_error_t je;
    json_t *j = json_loadb(pl->body, pl->blen, 0, &je);
    if (!j)
        return sl_errf(err, SL_EINVAL, "get-batch pull: the item list is not JSON: %s", je.text);
    json_t *in = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(j, "items"), i, e) {
        json_t *o = json_pack("{s:s?,s:s?,s:s?,s:s?,s:I,s:I}", "bucket", json_string_value(json_array_get(e, 0)),
                              "provider", json_string_value(json_array_get(e, 1)), "objname",
                              json_string_value(json_array_get(e, 2)), "archpath",
                              json_string_value(json_array_get(e, 3)), "start",
                              json_integer_value(json_array_get(e, 4)), "length",
                              json_integer_value(json_array_get(e, 5)));
        json_array_append_new(in, o ? o : json_object());
    }
    json_t *req = json_pack("{s:o,s:s}", "in", in, "mime", ".tar");
    int rc = moss_parse(req, NULL, NULL, &pl->m, err);
    json_decref(req);
    for (int k = 0; rc == 0 && k < pl->m.n; k++) {
        const char *h = json_string_value(json_array_get(json_array_get(json_object_get(j, "items"), (size_t)k), 6));
        pl->m.it[k].rawhdr = h ? sl_xstrdup(h) : NULL;
    }
    json_decref(j);
    return rc;
}

/* On the HTTP thread only the body is copied; it is parsed on the pull's
 * thread, and an error goes back in the pull's header. */
void moss_pull_done(struct sl_req *r)
{
    struct pull *pl = sl_xcalloc(1, sizeof(*pl));
    pl->blen = r->body.len;
    pl->body = sl_xmalloc(pl->blen + 1);
    memcpy(pl->body, r->body.p ? r->body.p : "", pl->blen);
    pull_start(r, pl);
}

void sl_moss_pull(struct sl_req *r, sl_moss_items_fn build, void (*free_arg)(void *), void *arg)
{
    struct pull *pl = sl_xcalloc(1, sizeof(*pl));
    pl->build = build;
    pl->free_arg = free_arg;
    pl->arg = arg;
    pull_start(r, pl);
}
