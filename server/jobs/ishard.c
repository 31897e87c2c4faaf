/* SPDX-License-Identifier: MIT
 * ishard.c: initial sharding (see ishard.h, docs/ishard.md).
 *
 *   gateway      POST /v1/ishard (IshardMsg) -> checks, creates the
 *                destination, picks the coordinator, answers the job id;
 *                GET /v1/ishard/ID -> report and progress; DELETE -> abort
 *   coordinator  POST /v1/internal/ishard/plan: list -> samples -> policy ->
 *                EKM -> order -> pack -> name -> dispatch (or dry-run report)
 *   owners       POST /v1/internal/ishard/build: write the shards they own
 *
 * The request is ishard_msg.c, the planner shard_plan.c; this file is the
 * job: the coordinator, the owners' builders and the HTTP surface.
 *
 * The WebDataset rule holds throughout: a member's key is its name up to the
 * first dot of the basename. Members of one sample are written adjacent
 * under one key: their own names when they already share it, else
 * "<sample key>.<extension>".
 */
#include "ishard.h"
#include "shard_plan.h"
#include "arch.h"
#include "backend.h"
#include "cluster.h"
#include "jsonx.h"
#include "log.h"
#include "lso.h"
#include "node.h"
#include "peer.h"
#include "plug.h"
#include "sandbox.h"
#include "shard.h"
#include "store.h"
#include "template.h"
#include "xact.h"

#include <ctype.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#define CHUNK (256 * 1024)
#define BUILD_WORKERS 4
#define PREFETCH 64                 /* members fetched from other targets at once */
#define PREFETCH_MAX (1024 * 1024)  /* members larger than this are streamed */
/* ------------------------------------------------------------------ */
/* building (every owner)                                             */
/* ------------------------------------------------------------------ */

/* a member: its object and member names, NUL-terminated in the shard's
 * arena (en == on when the member keeps the object's name) */
struct bmember {
    uint32_t on, ol, en, el;
    uint64_t size;
};

struct bshard {
    char *name;
    char *arena;
    struct bmember *m;
    size_t nm;
};

struct builder {
    struct sl_job *job;
    struct sl_bck src, dst;
    struct bshard *sh;
    int nsh;
    int next;                   /* next shard to build */
    char **done;                /* committed shard names (removed on failure/abort) */
    int ndone;
    json_t *vanished;
    uint64_t nvanished;
    pthread_mutex_t mu;
    char err[1024];
};

static void builder_free(struct builder *b)
{
    for (int i = 0; i < b->nsh; i++) {
        free(b->sh[i].name);
        free(b->sh[i].arena);
        free(b->sh[i].m);
    }
    free(b->sh);
    sl_strv_free(b->done, b->ndone);
    json_decref(b->vanished);
    sl_bck_release(&b->src);
    sl_bck_release(&b->dst);
    pthread_mutex_destroy(&b->mu);
    sl_job_put(b->job);
    free(b);
}

static int64_t put_write(void *ctx, const void *buf, size_t n)
{
    void **c = ctx;
    return sl_put_write(c[0], buf, n, c[1]) < 0 ? -1 : (int64_t)n;
}

static int build_one(struct builder *b, struct bshard *h, const struct sl_smap *sm, char *buf, struct sl_err *err)
{
    size_t nl = strlen(h->name);
    const struct sl_plug *fmt = sl_arch_format_by_name(h->name, nl);
    if (!fmt)
        return sl_errf(err, SL_EINVAL, "ishard: no format for %s", h->name);
    struct sl_put_opts o = { .client_cktype = -1, .expect_size = -1 };
    struct sl_put *put;
    if (sl_put_begin(&b->dst, h->name, nl, &o, &put, err) < 0)
        return -1;
    void *ctx[2] = { put, err };
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), &b->dst, h->name, nl);
    struct sl_io io = { SL_ABI_INIT(struct sl_io), .ctx = ctx, .write = put_write, .name = cn };
    struct sl_plug_writer *w;
    if (sl_plug_writer_open(fmt, &io, 0, &w, err) < 0) {
        sl_put_abort(put);
        return -1;
    }
    int rc = 0;
    size_t nm = h->nm;
    struct sl_shard_fetch *pf = sl_xcalloc(PREFETCH, sizeof(*pf));
    int *slot = sl_xcalloc(PREFETCH, sizeof(int));
    for (size_t base = 0; base < nm && rc == 0; base += PREFETCH) {
        /* small members on other targets: fetched together, then written in order */
        size_t end = SL_MIN(nm, base + PREFETCH);
        int np = 0;
        for (size_t i = base; i < end; i++) {
            const struct bmember *mb = &h->m[i];
            slot[i - base] = -1;
            if (mb->size > PREFETCH_MAX)
                continue;
            pf[np].obj = h->arena + mb->on;
            pf[np].olen = mb->ol;
            sl_buf_init(&pf[np].body);
            slot[i - base] = np++;
        }
        sl_shard_prefetch(&b->src, pf, np, sm);
        for (size_t i = base; i < end && rc == 0; i++) {
            if (sl_job_aborting(b->job)) {
                rc = sl_errf(err, SL_EINVAL, "aborted");
                break;
            }
            const struct bmember *mb = &h->m[i];
            const char *on = h->arena + mb->on, *en = h->arena + mb->en;
            struct sl_shard_fetch *x = slot[i - base] >= 0 ? &pf[slot[i - base]] : NULL;
            struct sl_err e2 = { 0 };
            int r2;
            if (x && x->remote && x->status == 200)
                r2 = sl_shard_add_bytes(w, en, mb->el, x->body.p ? x->body.p : "",
                                        x->body.len, b->job, &e2);
            else if (x && x->remote && x->status == 404)
                r2 = sl_errf(&e2, SL_ENOOBJ, "%s does not exist", x->obj);
            else if (x && x->remote)
                r2 = sl_errf(&e2, SL_EIO, "fetching %s: %s", x->obj, x->err);
            else
                r2 = sl_shard_add_object(w, &b->src, on, mb->ol, en, mb->el, sm, buf, CHUNK, b->job, &e2);
            if (r2 < 0 && e2.code == SL_ENOOBJ) {
                /* listed, gone since: the shard goes without it, the report says so */
                pthread_mutex_lock(&b->mu);
                b->nvanished++;
                if (json_array_size(b->vanished) < SL_PLAN_MAX_WARN)
                    json_array_append_new(b->vanished, json_stringn(on, mb->ol));
                pthread_mutex_unlock(&b->mu);
            } else if (r2 < 0) {
                *err = e2;
                rc = -1;
            }
        }
        for (int j = 0; j < np; j++)
            sl_buf_free(&pf[j].body);
    }
    free(pf);
    free(slot);
    if (rc == 0 && sl_plug_writer_finish(w, err) < 0)
        rc = -1;
    sl_plug_writer_close(w);
    uint64_t sz = sl_put_size(put);
    if (rc == 0 && sl_put_commit(put, NULL, err) < 0)
        return -1;
    if (rc < 0) {
        sl_put_abort(put);
        return -1;
    }
    sl_arch_after_put(&b->dst, h->name, nl);
    sl_job_add(&b->job->out_objs, 1);
    sl_job_add(&b->job->out_bytes, sz);
    pthread_mutex_lock(&b->mu);
    b->done = sl_xrealloc(b->done, (size_t)(b->ndone + 1) * sizeof(char *));
    b->done[b->ndone++] = sl_xstrdup(h->name);
    pthread_mutex_unlock(&b->mu);
    return 0;
}

static void *build_worker(void *arg)
{
    struct builder *b = arg;
    char *buf = sl_xmalloc(CHUNK);
    struct sl_smap *sm = sl_smap_get();
    for (;;) {
        pthread_mutex_lock(&b->mu);
        int i = b->err[0] || sl_job_aborting(b->job) ? b->nsh : b->next++;
        pthread_mutex_unlock(&b->mu);
        if (i >= b->nsh)
            break;
        struct sl_err err = { 0 };
        if (build_one(b, &b->sh[i], sm, buf, &err) < 0) {
            pthread_mutex_lock(&b->mu);
            bool first = !b->err[0];
            if (first && strcmp(err.msg, "aborted"))
                snprintf(b->err, sizeof(b->err), "ishard: shard %.200s: %.800s", b->sh[i].name, err.msg);
            pthread_mutex_unlock(&b->mu);
            if (first && strcmp(err.msg, "aborted")) {
                sl_job_abort(b->job->id, NULL);
                sl_cluster_abort_job(b->job->id);
            }
            break;
        }
    }
    sl_smap_put(sm);
    free(buf);
    return NULL;
}

/* Build every shard of b; on failure or abort remove the shards written.
 * Finishes the job (ext merged into what is there) and frees b. */
static void build_run(struct builder *b, json_t *ext)
{
    pthread_t th[BUILD_WORKERS];
    int n = 0;
    for (int i = 0; i < BUILD_WORKERS && i < b->nsh; i++)
        if (pthread_create(&th[n], NULL, build_worker, b) == 0)
            n++;
    if (!n && b->nsh)
        snprintf(b->err, sizeof(b->err), "ishard: cannot start worker threads");
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    bool failed = b->err[0] || sl_job_aborting(b->job);
    if (failed)
        sl_shard_remove_written("ishard", b->job->id, &b->dst, b->done, b->ndone);
    if (!ext)
        ext = json_object();
    json_object_set_new(ext, "build", json_pack("{s:i,s:i,s:I,s:O,s:i}", "shards", b->nsh, "written",
                                                failed ? 0 : b->ndone, "vanished", (json_int_t)b->nvanished,
                                                "vanished_objects", b->vanished, "removed", failed ? b->ndone : 0));
    sl_job_set_ext(b->job, ext);
    const char *msg = b->err[0] ? b->err : sl_job_aborting(b->job) ? "aborted" : NULL;
    sl_logi("ishard %s: %s (%d shard(s), %llu bytes%s)", b->job->id, msg ? msg : "built", failed ? 0 : b->ndone,
            (unsigned long long)b->job->out_bytes, b->nvanished ? ", some listed objects had vanished" : "");
    sl_job_finish(b->job, msg);
    builder_free(b);
}

static void member_add(struct bshard *h, size_t *cap, const struct bmember *m)
{
    if (h->nm == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        h->m = sl_xrealloc(h->m, *cap * sizeof(*h->m));
    }
    h->m[h->nm++] = *m;
}

/* a name into the arena, NUL-terminated: its offset */
static uint32_t arena_add(struct sl_buf *arena, const char *s, size_t n)
{
    uint32_t off = (uint32_t)arena->len;
    sl_buf_add(arena, s, n);
    sl_buf_addc(arena, 0);
    return off;
}

/* A shard's members from the build request's encoded list
 * (sl_plan_shard_encode), kept compact: the names in one arena */
static int members_decode(struct bshard *h, const json_t *v, struct sl_err *err)
{
    if (!json_is_string(v))
        return sl_errf(err, SL_EINVAL, "ishard: the build request's shard %s has no member list", h->name);
    struct sl_buf arena;
    sl_buf_init(&arena);
    size_t cap = 0;
    const char *s = json_string_value(v), *p = s, *end = s + json_string_length(v);
    while (p < end) {
        const char *at = p;
        struct sl_plan_member pm;
        if (sl_plan_member_next(&p, end, &pm) < 0) {
            sl_buf_free(&arena);
            return sl_errf(err, SL_EINVAL, "ishard: the build request's member list of shard %s is malformed at "
                           "byte %zu", h->name, (size_t)(at - s));
        }
        struct bmember m = { .ol = (uint32_t)pm.olen, .el = (uint32_t)pm.mlen, .size = pm.size };
        m.on = arena_add(&arena, pm.obj, pm.olen);
        m.en = pm.mem == pm.obj ? m.on : arena_add(&arena, pm.mem, pm.mlen);
        member_add(h, &cap, &m);
    }
    h->arena = sl_buf_steal(&arena);
    return 0;
}

static struct builder *builder_new(struct sl_job *job, const char *src, const char *sprov, const char *dst,
                                   json_t *shards, struct sl_err *err)
{
    struct builder *b = sl_xcalloc(1, sizeof(*b));
    pthread_mutex_init(&b->mu, NULL);
    b->vanished = json_array();
    b->job = job;
    if (sl_bck_resolve(src, sprov, NULL, &b->src, err) < 0 || sl_bck_resolve(dst, "ais", NULL, &b->dst, err) < 0)
        goto fail;
    b->sh = sl_xcalloc(json_array_size(shards) + 1, sizeof(*b->sh));
    size_t i;
    json_t *x;
    json_array_foreach(shards, i, x) {
        struct bshard *h = &b->sh[b->nsh++];
        h->name = sl_xstrdup(sl_json_str(x, "name", ""));
        if (members_decode(h, json_object_get(x, "members"), err) < 0) {
            b->job = NULL; /* (the caller's still) */
            builder_free(b);
            return NULL;
        }
    }
    return b;
fail:
    /* the job stays the caller's; b->src is zeroed when it did not resolve */
    sl_bck_release(&b->src);
    pthread_mutex_destroy(&b->mu);
    json_decref(b->vanished);
    free(b);
    return NULL;
}

static void *build_thread(void *arg)
{
    build_run(arg, NULL);
    return NULL;
}

/* target: POST /v1/internal/ishard/build {"id","src","dst","shards":[...]}
 * (off the HTTP threads: resolving a bucket may ask the primary) */
static void internal_build_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    if (!json_is_object(j)) {
        json_decref(j);
        sl_resp_err(r, &err);
        return;
    }
    const char *id = sl_json_str(j, "id", "");
    struct sl_job *job = sl_job_start("ishard", id, sl_json_str(j, "src", ""), sl_json_str(j, "dst", ""));
    struct builder *b = builder_new(job, sl_json_str(j, "src", ""), sl_json_str(j, "src_provider", "ais"),
                                    sl_json_str(j, "dst", ""), json_object_get(j, "shards"), &err);
    if (!b) {
        sl_job_finish(job, err.msg);
        sl_job_put(job);
        sl_resp_err(r, &err);
    } else {
        pthread_t t;
        if (pthread_create(&t, NULL, build_thread, b) != 0) {
            snprintf(b->err, sizeof(b->err), "cannot start a thread");
            build_run(b, NULL);
            sl_resp_errf(r, SL_EINTERNAL, "ishard: cannot start a thread");
        } else {
            pthread_detach(t);
            sl_resp_empty(r, 200);
        }
    }
    json_decref(j);
}


/* ------------------------------------------------------------------ */
/* the coordinator                                                    */
/* ------------------------------------------------------------------ */

struct coord {
    struct sl_ishard_msg m;
    struct sl_job *job;
};

/* {"name", "members": the encoded list} of shard i, appended to arr */
static int shard_add(struct sl_plan *p, int i, json_t *arr, struct sl_buf *enc, struct sl_err *err)
{
    sl_buf_reset(enc);
    sl_plan_shard_encode(p, &p->sh[i], enc);
    json_t *m = json_stringn(enc->p ? enc->p : "", enc->len);
    if (!m)
        return sl_errf(err, SL_EINVAL, "ishard: shard %s: a member's name is not valid UTF-8", p->sh[i].name);
    json_array_append_new(arr, json_pack("{s:s,s:o}", "name", p->sh[i].name, "members", m));
    return 0;
}

/* Send every owner its shards; the coordinator's own share is returned. */
static int dispatch(struct sl_plan *p, json_t **mine, struct sl_err *err)
{
    *mine = json_array();
    struct sl_buf enc;
    sl_buf_init(&enc);
    int rc = 0;
    if (G.role == SL_ROLE_STANDALONE) {
        for (int i = 0; i < p->nsh && rc == 0; i++)
            rc = shard_add(p, i, *mine, &enc, err);
        sl_buf_free(&enc);
        return rc;
    }
    struct sl_smap *s = sl_smap_get();
    for (int t = 0; t < s->nnodes && rc == 0; t++) {
        const struct sl_snode *x = &s->nodes[t];
        if (x->type != SL_NODE_TARGET)
            continue;
        json_t *arr = !strcmp(x->id, G.id) ? *mine : json_array();
        for (int i = 0; i < p->nsh && rc == 0; i++)
            if (p->sh[i].owner && !strcmp(p->sh[i].owner->id, x->id))
                rc = shard_add(p, i, arr, &enc, err);
        if (arr == *mine)
            continue;
        if (rc < 0 || !json_array_size(arr)) {
            json_decref(arr);
            continue;
        }
        json_t *body = json_pack("{s:s,s:s,s:s,s:s,s:o}", "id", p->job->id, "src", p->src.name, "src_provider",
                                 p->src.provider, "dst", p->dst.name,
                                 "shards", arr);
        char *url = sl_xasprintf("%s/v1/internal/ishard/build", x->ctrl_url);
        struct sl_peer_resp pr;
        int prc = sl_peer_json("POST", url, body, 0, &pr);
        if (prc < 0 || pr.status != 200)
            rc = sl_errf(err, prc < 0 ? SL_EUNAVAIL : sl_code_from_status((int)pr.status),
                         "ishard: handing shards to t[%s]: %s", x->id, pr.err);
        sl_peer_resp_free(&pr);
        free(url);
    }
    sl_smap_put(s);
    sl_buf_free(&enc);
    return rc;
}

static void *coord_main(void *arg)
{
    struct coord *c = arg;
    struct sl_plan p;
    memset(&p, 0, sizeof(p));
    p.m = &c->m;
    p.job = c->job;
    p.warnings = json_array();
    int rc = sl_bck_resolve(c->m.src, c->m.src_prov, NULL, &p.src, &p.err);
    bool need_create = false;
    p.have_src = rc == 0;
    if (rc == 0) {
        if (sl_bck_resolve(c->m.dst, "ais", NULL, &p.dst, &p.err) == 0) {
            p.have_dst = true;
        } else if (p.err.code == SL_ENOBCK) {
            /* created once there is something to write (never by a dry run
             * or a job that fails while planning) */
            sl_bck_copy(&p.dst, &p.src);
            snprintf(p.dst.name, sizeof(p.dst.name), "%s", c->m.dst);
            snprintf(p.dst.provider, sizeof(p.dst.provider), "ais"); /* (from a remote source too) */
            p.have_dst = true;
            need_create = true;
            p.err.msg[0] = 0;
        } else {
            rc = -1;
        }
    }
    int64_t t0 = sl_mono_ns();
    if (rc == 0)
        rc = sl_plan_list(&p);
    const char *pause = getenv("SHALE_TEST_ISHARD_PAUSE_MS"); /* tests: change the source after the listing */
    if (rc == 0 && pause)
        sl_sleep_ms(atoi(pause));
    if (rc == 0 && c->m.dst_not_empty)
        sl_plan_warn(&p, "the destination ais://%s is not empty: the real run is refused unless --overwrite is given",
                  c->m.dst);
    if (rc == 0)
        rc = sl_plan_samples(&p);
    if (rc == 0)
        rc = sl_plan_policy(&p);
    if (rc == 0)
        rc = sl_plan_ekm(&p);
    if (rc == 0) {
        sl_plan_pack(&p);
        rc = sl_plan_names(&p);
    }
    if (rc == 0 && !p.nsh)
        rc = sl_errf(&p.err, SL_ENOENT, "ishard: no samples remain to be sharded (%llu skipped without extension, "
                     "%llu excluded, %llu unmatched by the EKM)", (unsigned long long)p.skipped_noext,
                     (unsigned long long)p.excluded, (unsigned long long)p.ekm_unmatched);
    json_t *ext = json_object();
    if (rc == 0 || p.no) {
        json_t *rep = sl_plan_report(&p);
        json_object_set_new(rep, "plan_ms", json_integer((sl_mono_ns() - t0) / 1000000));
        json_object_set_new(ext, "report", rep);
    }
    json_object_set_new(ext, "coordinator", json_true());
    sl_job_set_ext(c->job, json_deep_copy(ext)); /* the report is visible while the shards are written */
    sl_logi("ishard %s: planned %d shard(s) from %d object(s) in %lld ms%s%s", c->job->id, p.nsh, p.no,
            (long long)((sl_mono_ns() - t0) / 1000000), rc ? ": " : "", rc ? p.err.msg : "");
    if (rc < 0 || c->m.dry_run) {
        sl_job_set_ext(c->job, ext);
        sl_job_finish(c->job, rc < 0 ? p.err.msg : NULL);
        sl_job_put(c->job);
        sl_plan_free(&p);
    } else {
        json_t *mine = NULL;
        struct sl_err err = { 0 };
        char failed[1024] = "";
        if (need_create && sl_cluster_bck_create(c->m.dst, &err) < 0) {
            snprintf(failed, sizeof(failed), "%s", err.msg);
            mine = json_array();
        } else if (dispatch(&p, &mine, &err) < 0) {
            /* owners that started are stopped and remove what they wrote */
            sl_job_abort(c->job->id, NULL);
            sl_cluster_abort_job(c->job->id);
            json_decref(mine);
            mine = json_array();
            snprintf(failed, sizeof(failed), "%s", err.msg);
        }
        sl_plan_free(&p);
        struct builder *b = builder_new(c->job, c->m.src, c->m.src_prov, c->m.dst, mine, &err);
        json_decref(mine);
        if (!b) {
            sl_job_set_ext(c->job, ext);
            sl_job_finish(c->job, err.msg);
            sl_job_put(c->job);
        } else {
            if (failed[0])
                snprintf(b->err, sizeof(b->err), "%s", failed);
            build_run(b, ext);
        }
    }
    sl_ishard_msg_free(&c->m);
    free(c);
    return NULL;
}

static void internal_build_done(struct sl_req *r)
{
    sl_req_offload(r, internal_build_run, NULL, NULL);
}

/* Parse msg (the Lua EKM compiles here) and run the coordinator of job id
 * on a thread of its own: 0, or -1 with err. */
static int coord_start(const char *id, const json_t *msg, struct sl_err *err)
{
    struct coord *c = sl_xcalloc(1, sizeof(*c));
    if (sl_ishard_msg_parse(msg, &c->m, err) < 0) {
        sl_ishard_msg_free(&c->m);
        free(c);
        return -1;
    }
    c->job = sl_job_start("ishard", id, c->m.src, c->m.dst);
    pthread_t t;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 8 * SL_MIB); /* the Lua EKM runs here */
    int rc = 0;
    if (pthread_create(&t, &a, coord_main, c) != 0) {
        sl_job_finish(c->job, "cannot start a thread");
        sl_job_put(c->job);
        sl_ishard_msg_free(&c->m);
        free(c);
        rc = sl_errf(err, SL_EINTERNAL, "ishard: cannot start a thread");
    } else {
        pthread_detach(t);
    }
    pthread_attr_destroy(&a);
    return rc;
}

/* from a start body {"id", "msg"}: a coordinating target's, and this
 * node's when standalone */
static int local_start(const char *id, const json_t *body, struct sl_err *err)
{
    return coord_start(id, json_object_get(body, "msg"), err);
}

/* target: POST /v1/internal/ishard/plan {"id","msg"} (off the HTTP threads:
 * compiling a Lua EKM is Lua work) */
static void internal_plan_run(struct sl_req *r, void *arg)
{
    (void)arg;
    sl_cluster_job_begun(r, local_start, "internal ishard");
}

static void internal_plan_done(struct sl_req *r)
{
    sl_req_offload(r, internal_plan_run, NULL, NULL);
}

bool sl_ishard_internal(struct sl_req *r)
{
    bool plan = !strcmp(r->path, "/v1/internal/ishard/plan"), build = !strcmp(r->path, "/v1/internal/ishard/build");
    if (!plan && !build)
        return false;
    if (r->method != SL_M_POST)
        sl_resp_method_not_allowed(r, "POST");
    else if (!sl_is_target())
        sl_resp_errf(r, SL_EINVAL, "%s is not a storage target", G.name);
    else
        sl_req_buffer_body(r, 1024 * SL_MIB, plan ? internal_plan_done : internal_build_done);
    return true;
}

/* ------------------------------------------------------------------ */
/* the gateway                                                        */
/* ------------------------------------------------------------------ */

/* 1 if the bucket holds at least one object, 0 if empty, -1 error */
static int has_objects(const struct sl_bck *b, const char *prefix, struct sl_err *err)
{
    struct sl_lsomsg lm;
    sl_lsomsg_names(&lm, prefix, false, 0, 1);
    struct sl_lspage pg;
    sl_lspage_init(&pg);
    int rc = (sl_bck_remote(b) ? sl_backend_lso_page : sl_cluster_list_page)(b, &lm, &pg, err) < 0 ? -1 : pg.n > 0;
    sl_lspage_free(&pg);
    sl_lsomsg_free(&lm);
    return rc;
}

static void start_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    struct sl_ishard_msg m;
    json_t *j = sl_req_body_json(r, &err);
    if (!j || sl_ishard_msg_parse(j, &m, &err) < 0) {
        if (j)
            sl_ishard_msg_free(&m);
        json_decref(j);
        sl_resp_err(r, &err);
        return;
    }
    json_decref(j);
    struct sl_bck sb, db;
    int rc = sl_bck_resolve_add(m.src, m.src_prov, &sb, &err); /* (a remote source seen first: added) */
    if (rc == 0) {
        int ho = has_objects(&sb, m.prefix, &err);
        if (ho == 0)
            rc = sl_errf(&err, SL_EINVAL, "ishard: the source %s://%s%s%s has no objects",
                         sl_provider_scheme(m.src_prov), m.src, m.prefix[0] ? "/" : "", m.prefix);
        else if (ho < 0)
            rc = -1;
        sl_bck_release(&sb);
    }
    if (rc == 0 && sl_bck_resolve(m.dst, "ais", NULL, &db, &err) == 0) {
        int ho = has_objects(&db, "", &err);
        sl_bck_release(&db);
        if (ho < 0)
            rc = -1;
        else if (ho && !m.overwrite && !m.dry_run)
            rc = sl_errf(&err, SL_EEXIST, "ishard: the destination ais://%s is not empty; use another bucket, "
                         "empty it, or allow it with --overwrite (API: \"overwrite\": true; shards with the same "
                         "names are replaced)", m.dst);
        else if (ho && !m.overwrite)
            m.dst_not_empty = true;
    } else if (rc == 0) {
        err.msg[0] = 0; /* missing: the coordinator creates it before writing */
    }
    if (rc < 0) {
        sl_ishard_msg_free(&m);
        sl_resp_err(r, &err);
        return;
    }
    char id[48];
    json_t *body = json_pack("{s:o}", "msg", sl_ishard_msg_json(&m));
    sl_ishard_msg_free(&m);
    if (sl_cluster_job_begin("ishard", "ish-", "/v1/internal/ishard/plan", body, local_start, id, sizeof(id), &err) <
        0) {
        sl_resp_err(r, &err);
        return;
    }
    sl_logi("ishard %s started", id);
    sl_resp_text(r, 200, id);
}

static void start_done(struct sl_req *r)
{
    sl_req_offload(r, start_run, NULL, NULL);
}


static void status_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    const char *id = r->path + strlen("/v1/ishard/");
    json_t *per = sl_cluster_job_snaps(id, NULL, false, &err);
    json_t *report = NULL;
    bool found = false, running = false, aborted = false;
    char emsg[1100] = "";
    json_int_t shards_total = 0, written = 0, bytes = 0, vanished = 0, members = 0;
    json_t *van = json_array();
    struct sl_snap_it it;
    for (sl_snaps_first(&it, per, id); it.sn; sl_snaps_next(&it)) {
        const char *tid = it.tid;
        json_t *sn = it.sn;
        found = true;
        json_t *ext = json_object_get(sn, "ext");
        if (json_object_get(ext, "report"))
            report = json_incref(json_object_get(ext, "report"));
        running |= sl_json_int(sn, "end_ns", 0) == 0;
        aborted |= sl_json_bool(sn, "aborted", false);
        const char *e = sl_json_str(sn, "err", "");
        if (e[0] && (!emsg[0] || !strncmp(emsg + strcspn(emsg, ":") + 2, "aborted", 7)))
            snprintf(emsg, sizeof(emsg), "t[%s]: %s", tid, e);
        json_t *st = json_object_get(sn, "stats");
        written += sl_json_int(st, "out-objs", 0);
        bytes += sl_json_int(st, "out-bytes", 0);
        members += sl_json_int(st, "loc-objs", 0) + sl_json_int(st, "in-objs", 0);
        json_t *b = json_object_get(ext, "build");
        shards_total += sl_json_int(b, "shards", 0);
        vanished += sl_json_int(b, "vanished", 0);
        size_t k;
        json_t *v;
        json_array_foreach(json_object_get(b, "vanished_objects"), k, v) json_array_append(van, v);
    }
    json_decref(per);
    if (!found) {
        json_decref(van);
        if (err.msg[0])
            sl_resp_err(r, &err);
        else
            sl_resp_errf(r, SL_ENOENT, "ishard job %s not found on any target", id);
        return;
    }
    bool planning = running && !report;
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(id));
    /* an abort asked for (not caused by a failure elsewhere) reads "aborted" */
    bool generic = !emsg[0] || sl_has_suffix(emsg, ": aborted");
    json_object_set_new(o, "state", json_string(planning ? "planning" : running ? "running"
                                                : aborted && generic ? "aborted"
                                                : emsg[0] ? "failed" : "finished"));
    json_object_set_new(o, "err", json_string(emsg));
    json_object_set_new(o, "report", report ? report : json_null());
    if (report && !shards_total)
        shards_total = sl_json_int(report, "shards", 0);
    json_object_set_new(o, "progress", json_pack("{s:I,s:I,s:I,s:I,s:I,s:o}", "shards_total",
                                                 report ? sl_json_int(report, "shards", 0) : shards_total,
                                                 "shards_written", written, "bytes_written", bytes, "members_read",
                                                 members, "vanished", vanished, "vanished_objects", van));
    if (err.msg[0])
        json_object_set_new(o, "warning", json_string(err.msg));
    sl_resp_json_new(r, 200, o);
}

static void abort_run(struct sl_req *r, void *arg)
{
    (void)arg;
    const char *id = r->path + strlen("/v1/ishard/");
    int n = sl_job_abort(id, NULL);
    if (G.role != SL_ROLE_STANDALONE) {
        /* an id no target knows is a 404, as for GET; a known job that has
         * already ended answers 200 (nothing left to stop) */
        struct sl_err err = { 0 };
        bool found = sl_cluster_job_known(id, &err);
        if (!found && err.msg[0]) {
            sl_resp_err(r, &err);
            return;
        }
        if (!found) {
            sl_resp_errf(r, SL_ENOENT, "ishard job %s not found on any target (list jobs with `shale job show --all`)",
                         id);
            return;
        }
        sl_cluster_abort_job(id);
        n = 1;
    }
    if (!n)
        sl_resp_errf(r, SL_ENOENT, "ishard job %s is not running", id);
    else
        sl_resp_empty(r, 200);
}

void sl_ishard_route(struct sl_req *r)
{
    if (G.role == SL_ROLE_TARGET) {
        sl_resp_errf(r, SL_EINVAL, "%s is a storage target: send /v1/ishard requests to a gateway (proxy)", G.name);
        return;
    }
    bool root = !strcmp(r->path, "/v1/ishard") || !strcmp(r->path, "/v1/ishard/");
    if (root && r->method == SL_M_POST) {
        if (G.role == SL_ROLE_PROXY && !sl_is_primary())
            sl_forward_to_primary(r);
        else
            sl_req_buffer_body(r, 64 * SL_MIB, start_done);
    } else if (!root && r->method == SL_M_GET) {
        sl_req_offload(r, status_run, NULL, NULL);
    } else if (!root && r->method == SL_M_DELETE) {
        sl_req_offload(r, abort_run, NULL, NULL);
    } else {
        sl_resp_errf(r, SL_EINVAL, "unsupported request %s %s (ishard API: POST /v1/ishard, GET|DELETE "
                     "/v1/ishard/JOB_ID)", r->method_str, r->path);
    }
}

static const char *const ishard_paths[] = { "/v1/ishard", NULL };

const struct sl_module sl_ishard_module = {
    .name = "ishard",
    .paths = ishard_paths,
    .route = sl_ishard_route,
    .internal = sl_ishard_internal,
};
