/* SPDX-License-Identifier: MIT
 * arch_job.c: the "archive" job (spec §5.2): PUT /v1/buckets/SRC with
 * {"action":"archive","value":ArchiveMsg} builds one shard from objects.
 * The gateway validates the message, picks the shard's HRW owner and starts
 * the job there; the owner streams every member from whichever target owns
 * it (local ones from disk) straight into the format writer, which writes
 * into a crash-safe PUT of the shard (or appends in place to a tar with aate).
 */
#include "arch.h"
#include "arch_job.h"
#include "cluster.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "peer.h"
#include "plug.h"
#include "shard.h"
#include "prx.h"
#include "store.h"
#include "template.h"
#include "xact.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define CHUNK (256 * 1024)

struct amsg {
    char *src, *dst, *archname, *mime, *template_;
    char **objnames;
    size_t nobj;
    bool isbn, bnonly, aate, coer, nonrecurs, has_list;
};

static void amsg_free(struct amsg *m)
{
    free(m->src);
    free(m->dst);
    free(m->archname);
    free(m->mime);
    free(m->template_);
    for (size_t i = 0; i < m->nobj; i++)
        free(m->objnames[i]);
    free(m->objnames);
    memset(m, 0, sizeof(*m));
}

/* Parse and check an ArchiveMsg against the BMD and the loaded formats. */
/* check_dst: the destination bucket must exist (else it is the caller's
 * to create) */
static int amsg_parse(const char *src, const json_t *v, struct amsg *m, bool check_dst, struct sl_err *err)
{
    memset(m, 0, sizeof(*m));
    if (!json_is_object(v))
        return sl_errf(err, SL_EINVAL, "archive: \"value\" must be an ArchiveMsg object (archname, objnames or "
                                       "template, tobck, ...)");
    m->src = sl_xstrdup(src);
    json_t *tb = sl_json_get(v, "tobck");
    const char *dst = json_is_object(tb) ? sl_json_str(tb, "name", "") : "";
    m->dst = sl_xstrdup(dst[0] ? dst : src);
    const char *an = sl_json_str(v, "archname", "");
    if (!an[0])
        return sl_errf(err, SL_EINVAL, "archive: \"archname\" (the shard's name, e.g. \"shard-0001.tar\") is required");
    m->archname = sl_xstrdup(an);
    m->mime = sl_xstrdup(sl_json_str(v, "mime", ""));
    m->isbn = sl_json_bool(v, "isbn", false);
    m->bnonly = sl_json_bool(v, "bnonly", false);
    m->aate = sl_json_bool(v, "aate", false);
    m->coer = sl_json_bool(v, "coer", false);
    m->nonrecurs = sl_json_bool(v, "non-recurs", false);
    char *tmpl;
    if (sl_listrange_parse(v, false, &m->objnames, &m->nobj, &tmpl, err) < 0) {
        sl_err_wrap(err, "archive");
        return -1;
    }
    m->has_list = m->objnames != NULL;
    m->template_ = tmpl ? tmpl : sl_xstrdup("");
    if (sl_objname_check(m->archname, strlen(m->archname), err) < 0)
        return -1;
    const struct sl_plug *fmt = sl_arch_format_by_name(m->archname, strlen(m->archname));
    if (!fmt || !(sl_plug_caps(fmt) & SL_FMT_CAP_WRITE))
        return sl_errf(err, SL_EINVAL, "archive: \"%s\" must end with one of the supported extensions: %s",
                       m->archname, sl_arch_supported());
    if (m->mime[0]) {
        bool ok = false;
        for (const char *const *e = sl_plug_exts(fmt); e && *e; e++)
            if (!strcmp(*e, m->mime) && sl_has_suffix(m->archname, *e))
                ok = true;
        if (!ok)
            return sl_errf(err, SL_EINVAL, "archive: mime mismatch: \"%s\" vs the extension of \"%s\" (give the "
                           "exact extension, e.g. \".tar\", or omit it)", m->mime, m->archname);
    }
    struct sl_bck b;
    if (sl_bck_resolve(m->src, "ais", NULL, &b, err) < 0)
        return -1;
    sl_bck_release(&b);
    if (!check_dst)
        return 0;
    if (sl_bck_resolve(m->dst, json_is_object(tb) ? sl_json_str(tb, "provider", "ais") : "ais", NULL, &b, err) < 0)
        return -1;
    sl_bck_release(&b);
    return 0;
}

static json_t *amsg_json(const struct amsg *m)
{
    json_t *o = json_object();
    json_object_set_new(o, "archname", json_string(m->archname));
    json_object_set_new(o, "mime", json_string(m->mime));
    json_object_set_new(o, "tobck", json_pack("{s:s,s:s}", "name", m->dst, "provider", "ais"));
    if (m->has_list) {
        json_t *a = json_array();
        for (size_t i = 0; i < m->nobj; i++)
            json_array_append_new(a, json_string(m->objnames[i]));
        json_object_set_new(o, "objnames", a);
    }
    json_object_set_new(o, "template", json_string(m->template_));
    json_object_set_new(o, "isbn", json_boolean(m->isbn));
    json_object_set_new(o, "bnonly", json_boolean(m->bnonly));
    json_object_set_new(o, "aate", json_boolean(m->aate));
    json_object_set_new(o, "coer", json_boolean(m->coer));
    json_object_set_new(o, "non-recurs", json_boolean(m->nonrecurs));
    return o;
}

/* ---- the job on the shard's owner ---- */

struct ajob {
    struct amsg m;
    struct sl_job *job;
    struct sl_bck src, dst;
    const struct sl_plug *fmt;
    struct sl_plug_writer *w;
    struct sl_put *put;             /* new shard */
    struct sl_obj_edit edit;        /* or in-place append */
    struct sl_plug_append ap;
    bool appending;
    struct sl_err err;
    char *buf;
};

/* Also a partly built one: what is not set yet (zeroed) releases nothing. */
static void ajob_free(struct ajob *a)
{
    sl_job_put(a->job);
    sl_bck_release(&a->src);
    sl_bck_release(&a->dst);
    amsg_free(&a->m);
    free(a->buf);
    free(a);
}

static int64_t put_write(void *ctx, const void *buf, size_t n)
{
    struct ajob *a = ctx;
    if (sl_put_write(a->put, buf, n, &a->err) < 0)
        return -1;
    sl_job_add(&a->job->out_bytes, n);
    return (int64_t)n;
}

struct names {
    char **v;
    size_t n, cap;
};

static void names_add(struct names *ns, char *name)
{
    if (ns->n == ns->cap) {
        ns->cap = ns->cap ? ns->cap * 2 : 256;
        ns->v = sl_xrealloc(ns->v, ns->cap * sizeof(char *));
    }
    ns->v[ns->n++] = name;
}

static int names_add_ent(void *arg, const struct sl_lsent *e)
{
    names_add(arg, sl_xstrndup(e->name, e->nlen));
    return 0;
}

/* Names to archive: the list, a template range, or a prefix listing. */
static int names_of(struct ajob *a, char ***out, size_t *n)
{
    struct amsg *m = &a->m;
    if (m->has_list) {
        *out = m->objnames;
        *n = m->nobj;
        return 0;
    }
    struct sl_tmpl *t;
    if (sl_tmpl_parse(m->template_, &t, &a->err) < 0)
        return -1;
    struct names ns = { 0 };
    int rc = 0;
    if (sl_tmpl_is_range(t)) {
        if (sl_tmpl_count(t) == UINT64_MAX) {
            rc = sl_errf(&a->err, SL_EINVAL, "archive: template \"%s\" has no upper bound", m->template_);
            goto out;
        }
        struct sl_buf b;
        sl_buf_init(&b);
        for (uint64_t i = 0; i < sl_tmpl_count(t); i++) {
            sl_tmpl_at(t, i, &b);
            names_add(&ns, sl_xstrdup(b.p));
        }
        sl_buf_free(&b);
    } else {
        /* a prefix: list the source bucket across the cluster */
        struct sl_lsomsg lm;
        sl_lsomsg_names(&lm, sl_tmpl_prefix(t), false, m->nonrecurs ? SL_LSO_NO_RECURSION | SL_LSO_NO_DIRS : 0,
                        10000);
        rc = sl_lso_walk(sl_cluster_list_page, &a->src, &lm, NULL, names_add_ent, &ns, &a->err);
        sl_lsomsg_free(&lm);
    }
out:
    sl_tmpl_free(t);
    if (rc < 0) {
        for (size_t i = 0; i < ns.n; i++)
            free(ns.v[i]);
        free(ns.v);
        return -1;
    }
    *out = ns.v;
    *n = ns.n;
    return 0;
}

static void entry_name(const struct ajob *a, const char *obj, struct sl_buf *out)
{
    sl_buf_reset(out);
    if (a->m.bnonly) {
        const char *s = strrchr(obj, '/');
        sl_buf_adds(out, s ? s + 1 : obj);
    } else if (a->m.isbn) {
        sl_buf_printf(out, "%s/%s", a->src.name, obj);
    } else {
        sl_buf_adds(out, obj);
    }
}

/* One member; 0 ok, 1 skipped (missing, coer), -1 failure */
static int add_member(struct ajob *a, const char *obj, const struct sl_smap *smap)
{
    struct sl_buf en;
    sl_buf_init(&en);
    entry_name(a, obj, &en);
    struct sl_err e2 = { 0 };
    int rc = 0;
    if (sl_shard_add_object(a->w, &a->src, obj, strlen(obj), en.p, en.len, smap, a->buf, CHUNK, a->job, &e2) < 0) {
        if (e2.code == SL_ENOOBJ && a->m.coer) {
            sl_logw("archive %s: skipping %s: %s", a->job->id, obj, e2.msg);
            rc = 1;
        } else {
            a->err = e2;
            sl_err_wrap(&a->err, "archive");
            rc = -1;
        }
    }
    sl_buf_free(&en);
    return rc;
}

static void *ajob_main(void *arg)
{
    struct ajob *a = arg;
    char cn[400];
    sl_obj_cname(cn, sizeof(cn), &a->dst, a->m.archname, strlen(a->m.archname));
    char **names = NULL;
    size_t n = 0;
    struct sl_smap *smap = sl_smap_get();
    int rc = names_of(a, &names, &n);
    if (rc == 0 && !n)
        rc = sl_errf(&a->err, SL_ENOENT, "archive %s: nothing to archive (no objects match the selection)", cn);
    struct sl_objmd md;
    struct sl_err e2;
    bool exists = rc == 0 && sl_obj_stat(&a->dst, a->m.archname, strlen(a->m.archname), &md, NULL, &e2) == 1;
    if (exists)
        sl_objmd_free(&md);
    struct sl_io io = { SL_ABI_INIT(struct sl_io), .ctx = a, .write = put_write, .name = cn };
    int oldfd = -1;
    if (rc == 0 && exists && a->m.aate && (sl_plug_caps(a->fmt) & SL_FMT_CAP_APPEND)) {
        /* true append in place */
        if (sl_obj_edit_begin(&a->dst, a->m.archname, strlen(a->m.archname), &a->edit, &a->err) < 0) {
            rc = -1;
        } else {
            struct stat st;
            fstat(a->edit.fd, &st);
            if (sl_plug_append_begin(a->fmt, a->edit.fd, cn, &a->ap, &a->err) < 0 ||
                sl_obj_edit_mark(&a->edit, a->ap.offset, st.st_size, &a->err) < 0) {
                sl_obj_edit_abort(&a->edit);
                rc = -1;
            } else {
                a->appending = true;
                a->w = a->ap.w;
            }
        }
    } else if (rc == 0) {
        struct sl_put_opts o = { .client_cktype = -1, .expect_size = -1 };
        if (sl_put_begin(&a->dst, a->m.archname, strlen(a->m.archname), &o, &a->put, &a->err) < 0 ||
            sl_plug_writer_open(a->fmt, &io, 0, &a->w, &a->err) < 0) {
            rc = -1;
        } else if (exists && a->m.aate) {
            /* append to a format without true append: copy the old members first */
            struct sl_objmd om;
            if (sl_obj_open(&a->dst, a->m.archname, strlen(a->m.archname), &oldfd, &om, NULL, &a->err) < 0) {
                rc = -1;
            } else {
                sl_objmd_free(&om);
                struct sl_plug_fdio fio;
                sl_plug_fdio_init(&fio, oldfd, 0, cn);
                struct sl_plug_reader *rd;
                struct sl_fmt_entry e;
                struct sl_fmt_limits lim;
                sl_plug_limits_default(&lim);
                rc = sl_plug_reader_open(a->fmt, &fio.io, &lim, 0, &rd, &a->err);
                while (rc == 0 && (rc = sl_plug_reader_next(rd, &e, &a->err)) == 0) {
                    if (e.size < 0 || sl_plug_writer_add(a->w, e.name, e.name_len, e.size, e.mtime, e.mode, &a->err) < 0) {
                        rc = -1;
                        break;
                    }
                    int64_t k;
                    while ((k = sl_plug_reader_read(rd, a->buf, CHUNK, &a->err)) > 0)
                        if (sl_plug_writer_write(a->w, a->buf, (size_t)k, &a->err) < 0)
                            break;
                    if (k < 0 || a->err.msg[0]) {
                        rc = -1;
                        break;
                    }
                }
                if (rc == 1)
                    rc = 0;
                sl_plug_reader_close(rd);
            }
        }
    }
    for (size_t i = 0; rc == 0 && i < n; i++) {
        if (sl_job_aborting(a->job)) {
            rc = sl_errf(&a->err, SL_EINVAL, "aborted");
            break;
        }
        int r = add_member(a, names[i], smap);
        if (r < 0)
            rc = -1;
        else if (r == 1)
            sl_job_add(&a->job->err_objs, 1);
    }
    if (rc == 0) {
        if (a->appending) {
            /* commit closes the writer (and aborts on failure) */
            if (sl_plug_append_commit(&a->ap, &a->err) < 0) {
                sl_obj_edit_abort(&a->edit);
                rc = -1;
            } else if (sl_obj_edit_commit(&a->edit, &a->err) < 0) {
                rc = -1;
            }
            a->appending = false;
            a->w = NULL;
        } else if (sl_plug_writer_finish(a->w, &a->err) < 0) {
            rc = -1;
        } else {
            sl_plug_writer_close(a->w);
            a->w = NULL;
            struct sl_put *p = a->put;
            a->put = NULL;
            rc = sl_put_commit(p, NULL, &a->err);
        }
        if (rc == 0)
            sl_arch_after_put(&a->dst, a->m.archname, strlen(a->m.archname));
    }
    if (a->appending) {
        sl_plug_append_abort(&a->ap); /* closes the writer */
        sl_obj_edit_abort(&a->edit);
        a->w = NULL;
    } else {
        sl_plug_writer_close(a->w);
        if (a->put)
            sl_put_abort(a->put);
    }
    if (oldfd >= 0)
        close(oldfd);
    char msg[1200] = "";
    if (rc < 0)
        snprintf(msg, sizeof(msg), "%s", a->err.msg);
    else if (a->job->err_objs)
        snprintf(msg, sizeof(msg), "%llu object(s) missing, skipped (coer)", (unsigned long long)a->job->err_objs);
    sl_logi("archive %s -> %s: %s (%llu local, %llu remote member(s))", a->job->id, cn, rc < 0 ? msg : "done",
            (unsigned long long)a->job->loc_objs, (unsigned long long)a->job->in_objs);
    json_t *ext = json_pack("{s:s,s:I}", "archname", a->m.archname, "members",
                            (json_int_t)(a->job->loc_objs + a->job->in_objs));
    if (rc == 0 && a->job->err_objs) {
        /* coer: the job did what was asked; the skipped ones are counted, not an error */
        json_object_set_new(ext, "skipped", json_integer((json_int_t)a->job->err_objs));
        json_object_set_new(ext, "warning", json_string(msg));
    }
    sl_job_set_ext(a->job, ext);
    sl_job_finish(a->job, rc < 0 ? msg : NULL);
    if (names != a->m.objnames) {
        for (size_t i = 0; i < n; i++)
            free(names[i]);
        free(names);
    }
    sl_smap_put(smap);
    ajob_free(a);
    return NULL;
}

/* Start the job on this node (the shard's owner). */
static int start_local(const char *id, const char *src, const json_t *msg, struct sl_err *err)
{
    struct ajob *a = sl_xcalloc(1, sizeof(*a));
    if (amsg_parse(src, msg, &a->m, true, err) < 0 || sl_bck_resolve(a->m.src, "ais", NULL, &a->src, err) < 0)
        goto fail;
    if (sl_bck_resolve(a->m.dst, "ais", NULL, &a->dst, err) < 0)
        goto fail;
    a->fmt = sl_arch_format_by_name(a->m.archname, strlen(a->m.archname));
    a->buf = sl_xmalloc(CHUNK);
    a->job = sl_job_start("archive", id, a->m.src, a->m.dst);
    pthread_t t;
    if (pthread_create(&t, NULL, ajob_main, a) != 0) {
        sl_job_finish(a->job, "cannot start a thread");
        sl_errf(err, SL_EINTERNAL, "archive: cannot start a thread");
        goto fail;
    }
    pthread_detach(t);
    return 0;
fail:
    ajob_free(a);
    return -1;
}

/* target: POST /v1/internal/archive {"id","src","msg"} */
static void internal_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    json_t *j = sl_req_body_json(r, &err);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        sl_resp_errf(r, SL_EINVAL, "internal archive: bad body");
        return;
    }
    if (start_local(sl_json_str(j, "id", ""), sl_json_str(j, "src", ""), json_object_get(j, "msg"), &err) < 0)
        sl_resp_err(r, &err);
    else
        sl_resp_empty(r, 200);
    json_decref(j);
}

void sl_arch_job_internal(struct sl_req *r)
{
    if (r->method != SL_M_POST) {
        sl_resp_method_not_allowed(r, "POST");
        return;
    }
    sl_req_buffer_body(r, sl_conf->http_max_body_json, internal_done);
}

/* gateway: PUT /v1/buckets/SRC {"action":"archive",...} */
/* Off the HTTP thread: it may create the destination bucket and asks the
 * shard's target to start. */
static void put_bucket_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    struct sl_actmsg am;
    const char *p = r->path + strlen("/v1/buckets/");
    char *src = sl_xstrndup(p, strcspn(p, "/"));
    if (sl_actmsg_parse(r, &am, &err) < 0) {
        free(src);
        sl_resp_err(r, &err);
        return;
    }
    if (strcmp(am.action, "archive")) {
        sl_resp_errf(r, SL_EINVAL, "invalid action \"%s\" for PUT /v1/buckets/%s (valid: archive)", am.action, src);
        goto out;
    }
    struct amsg m;
    if (amsg_parse(src, am.value, &m, false, &err) < 0) {
        amsg_free(&m);
        sl_resp_err(r, &err);
        goto out;
    }
    /* the message is good: a missing ais:// destination is created, as
     * ishard and etl bucket do */
    json_t *tb = sl_json_get(am.value, "tobck");
    const char *dprov = json_is_object(tb) ? sl_json_str(tb, "provider", "ais") : "ais";
    struct sl_bck db;
    if (sl_bck_resolve(m.dst, dprov, NULL, &db, &err) == 0) {
        sl_bck_release(&db);
    } else if (err.code == SL_ENOBCK && (!dprov[0] || !strcmp(dprov, "ais")) && strcmp(m.dst, src)) {
        err = (struct sl_err){ 0 };
        if (sl_cluster_bck_create(m.dst, &err) < 0 && err.code != SL_EBCKEXIST) {
            sl_err_wrap(&err, "archive: creating the destination ais://%s", m.dst);
            amsg_free(&m);
            sl_resp_err(r, &err);
            goto out;
        }
        err = (struct sl_err){ 0 };
    } else {
        amsg_free(&m);
        sl_resp_err(r, &err);
        goto out;
    }
    char id[32];
    sl_job_id(id, sizeof(id), "");
    json_t *norm = amsg_json(&m);
    if (G.role == SL_ROLE_STANDALONE) {
        if (start_local(id, src, norm, &err) < 0)
            sl_resp_err(r, &err);
        else
            sl_resp_text(r, 200, id);
    } else {
        struct sl_smap *s = sl_smap_get();
        struct sl_buf un;
        sl_buf_init(&un);
        sl_obj_uname(&un, "ais", m.dst, m.archname, strlen(m.archname));
        const struct sl_snode *t = sl_smap_hrw_target(s, un.p, un.len);
        sl_buf_free(&un);
        if (!t || (t->flags & SL_SNF_OFFLINE)) {
            sl_resp_errf(r, SL_EUNAVAIL, "archive: the target that owns %s/%s is %s", m.dst, m.archname,
                         t ? "offline" : "missing (no targets)");
        } else {
            char *url = sl_xasprintf("%s/v1/internal/archive", t->ctrl_url);
            struct sl_peer_resp pr;
            sl_peer_json("POST", url, json_pack("{s:s,s:s,s:O}", "id", id, "src", src, "msg", norm), 0, &pr);
            if (pr.status == 200)
                sl_resp_text(r, 200, id);
            else
                sl_resp_errf(r, pr.status ? sl_code_from_status((int)pr.status) : SL_EUNAVAIL, "%s", pr.err);
            sl_peer_resp_free(&pr);
            free(url);
        }
        sl_smap_put(s);
    }
    json_decref(norm);
    amsg_free(&m);
out:
    sl_actmsg_free(&am);
    free(src);
}

static void put_bucket_done(struct sl_req *r)
{
    sl_req_offload(r, put_bucket_run, NULL, NULL);
}

bool sl_arch_job_put_begin(struct sl_req *r)
{
    sl_req_buffer_body(r, sl_conf->http_max_body_json, put_bucket_done);
    return true;
}

static bool arch_job_internal(struct sl_req *r)
{
    if (strcmp(r->path, "/v1/internal/archive"))
        return false;
    sl_arch_job_internal(r);
    return true;
}

static bool arch_job_bucket_put(struct sl_req *r, const char *bucket)
{
    (void)bucket;
    return sl_arch_job_put_begin(r);
}

const struct sl_module sl_arch_job_module = {
    .name = "archive",
    .internal = arch_job_internal,
    .bucket_put = arch_job_bucket_put,
};
