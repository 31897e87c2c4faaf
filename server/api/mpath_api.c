/* SPDX-License-Identifier: MIT
 * mpath_api.c: a target's mountpaths at run time (AIStore's
 * `ais storage mountpath attach|detach|enable|disable`).
 *
 *   PUT|POST|DELETE /v1/daemon/mountpaths {"action": "attach-mp"|"enable-mp"|"disable-mp"|"detach-mp",
 *                                          "value": "/path"}          (on the target)
 *   the same on a gateway as /v1/reverse/daemon/mountpaths with header Ais-Node-Id: forwarded to that target
 *   the same with {"action": "fshc", "value": "/path"}: AIStore's filesystem health check, on demand: the
 *   target checks the mountpath's .shale/daemon_id, writes, fsyncs, reads back and removes a probe file, and
 *   asks statvfs; 200 {"mountpath", "state", "healthy", "checks": {"daemon_id", "probe", "statvfs"}}
 *   GET /v1/daemon?what=mountpaths -> {"available": [...], "waiting_dd": [], "disabled": [...],
 *                                      "detaching": [...]}            (AIStore's MountpathList, + Shale's)
 *
 * AIStore's client sends attach and enable with PUT, disable with POST and
 * detach with DELETE; the action decides. The change itself (checks, an
 * attached one's LMDB environment, the record in the node metadata) and
 * the start of the resilver that follows run off the HTTP thread; the
 * answer is the resilver's job id (text; empty when nothing changed).
 * AIStore's dntres=true (do not resilver: leave the objects behind) and a
 * mountpath_label are refused with 400.
 * Admin-only under auth (access.c: any write to /v1/daemon and /v1/reverse).
 */
#include "daemon.h"
#include "cluster.h"
#include "conf.h"
#include "http.h"
#include "log.h"
#include "node.h"
#include "peer.h"
#include "resilver.h"
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <unistd.h>

json_t *sl_mpath_list_json(void)
{
    json_t *av = json_array(), *dis = json_array(), *ding = json_array();
    for (int i = 0; i < sl_store_nmpaths(); i++) {
        struct sl_mpath *mp = sl_store_mpath(i);
        if (sl_store_mpath_gone(mp))
            continue;
        json_array_append_new(sl_store_mpath_usable(mp) ? av : dis, json_string(mp->path));
        if (__atomic_load_n(&mp->detaching, __ATOMIC_ACQUIRE))
            json_array_append_new(ding, json_string(mp->path));
    }
    return json_pack("{s:o,s:[],s:o,s:o}", "available", av, "waiting_dd", "disabled", dis, "detaching", ding);
}

struct mreq {
    char action[16];
    char *path;
};

static void mreq_free(void *arg)
{
    struct mreq *q = arg;
    free(q->path);
    free(q);
}

/* one check's result: {"ok": true, ...} or {"ok": false, "error": why} */
static json_t *check_fail(json_t *o, const char *fmt, const char *a, int e)
{
    json_object_set_new(o, "ok", json_false());
    json_object_set_new(o, "error", json_sprintf(fmt, a, strerror(e)));
    return o;
}

#define FSHC_PROBE (64 * 1024)

/* FSHC of mountpath mp (a disk read and write: a pool thread's) */
static json_t *fshc(struct sl_mpath *mp)
{
    json_t *checks = json_object();
    /* the owner's id, as the target wrote it at start */
    json_t *id = json_object();
    char *idf = sl_xasprintf("%s/.shale/daemon_id", mp->path);
    struct sl_buf b;
    sl_buf_init(&b);
    if (sl_read_file(idf, &b, 256) < 0) {
        check_fail(id, "cannot read %s: %s", idf, errno);
        sl_store_mpath_check(); /* (a vanished one is marked and logged) */
    } else if (strcmp(b.p ? b.p : "", G.id)) {
        json_object_set_new(id, "ok", json_false());
        json_object_set_new(id, "error", json_sprintf("%s holds \"%s\", not this target's id %s", idf,
                                                      b.p ? b.p : "", G.id));
    } else {
        json_object_set_new(id, "ok", json_true());
    }
    sl_buf_free(&b);
    free(idf);
    json_object_set_new(checks, "daemon_id", id);
    /* a probe file: written, fsync'ed, read back, compared, removed */
    json_t *pr = json_object();
    char *pf = sl_xasprintf("%s/.shale/fshc.%d.%llx", mp->path, (int)getpid(), (unsigned long long)sl_now_ns());
    unsigned char *wb = sl_xmalloc(FSHC_PROBE), *rb = sl_xmalloc(FSHC_PROBE);
    for (size_t i = 0; i < FSHC_PROBE; i++)
        wb[i] = (unsigned char)(i * 131 + 7);
    int64_t t0 = sl_now_ns();
    int fd = open(pf, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) {
        check_fail(pr, "cannot create %s: %s", pf, errno);
    } else if (write(fd, wb, FSHC_PROBE) != FSHC_PROBE || fsync(fd) < 0) {
        check_fail(pr, "cannot write and fsync %s: %s", pf, errno ? errno : EIO);
        close(fd);
    } else if (close(fd) < 0 || (fd = open(pf, O_RDONLY | O_CLOEXEC)) < 0) {
        check_fail(pr, "cannot reopen %s: %s", pf, errno);
    } else {
        ssize_t n = pread(fd, rb, FSHC_PROBE, 0);
        int e = errno;
        close(fd);
        if (n != FSHC_PROBE)
            check_fail(pr, "cannot read back %s: %s", pf, n < 0 ? e : EIO);
        else if (memcmp(wb, rb, FSHC_PROBE)) {
            json_object_set_new(pr, "ok", json_false());
            json_object_set_new(pr, "error", json_sprintf("%s read back differs from what was written", pf));
        } else {
            json_object_set_new(pr, "ok", json_true());
            json_object_set_new(pr, "bytes", json_integer(FSHC_PROBE));
            json_object_set_new(pr, "ns", json_integer(sl_now_ns() - t0));
        }
    }
    unlink(pf);
    free(pf);
    free(wb);
    free(rb);
    json_object_set_new(checks, "probe", pr);
    /* the filesystem's answer */
    json_t *fs = json_object();
    struct statvfs sv;
    if (statvfs(mp->path, &sv) < 0) {
        check_fail(fs, "statvfs %s: %s", mp->path, errno);
    } else {
        json_object_set_new(fs, "ok", json_boolean(sv.f_blocks > 0));
        json_object_set_new(fs, "total", json_integer((json_int_t)(sv.f_blocks * sv.f_frsize)));
        json_object_set_new(fs, "avail", json_integer((json_int_t)(sv.f_bavail * sv.f_frsize)));
        json_object_set_new(fs, "read_only", json_boolean(sv.f_flag & ST_RDONLY));
        if (!sv.f_blocks)
            json_object_set_new(fs, "error", json_sprintf("statvfs %s: the filesystem reports no blocks", mp->path));
    }
    json_object_set_new(checks, "statvfs", fs);
    bool ok = true;
    const char *k;
    json_t *v;
    json_object_foreach(checks, k, v) ok = ok && json_is_true(json_object_get(v, "ok"));
    sl_logi("t[%s]: fshc of mountpath %s: %s", G.id, mp->path, ok ? "healthy" : "FAILED");
    return json_pack("{s:s,s:s,s:b,s:o}", "mountpath", mp->path, "state", sl_store_mpath_state(mp), "healthy", ok,
                     "checks", checks);
}

static void fshc_run(struct sl_req *r, struct mreq *q)
{
    struct sl_mpath *mp = NULL;
    struct sl_buf all;
    sl_buf_init(&all);
    for (int i = 0; i < sl_store_nmpaths(); i++) {
        struct sl_mpath *m = sl_store_mpath(i);
        if (!m || sl_store_mpath_gone(m))
            continue;
        sl_buf_printf(&all, "%s%s", all.len ? ", " : "", m->path);
        size_t n = strlen(m->path);
        if (!strcmp(m->path, q->path) || (!strncmp(m->path, q->path, n) && !strcmp(q->path + n, "/")))
            mp = m;
    }
    if (!mp)
        sl_resp_errf(r, SL_ENOENT, "fshc: t[%s] has no mountpath %s (its mountpaths: %s)", G.id, q->path,
                     all.len ? all.p : "none");
    else
        sl_resp_json_new(r, 200, fshc(mp));
    sl_buf_free(&all);
}

/* off the HTTP thread */
static void mpath_run(struct sl_req *r, void *arg)
{
    struct mreq *q = arg;
    struct sl_err err = { 0 };
    if (!strcmp(q->action, "fshc")) {
        fshc_run(r, q);
        mreq_free(q);
        return;
    }
    int rc = sl_store_mpath_admin(q->action, q->path, &err);
    if (rc < 0) {
        sl_resp_err(r, &err);
    } else if (rc == 0) {
        sl_resp_text(r, 200, ""); /* already so: nothing to move */
    } else {
        sl_store_resilver_mark();
        /* the PUTs that chose a mountpath before the change end first, so the resilver sees what they wrote */
        sl_store_mpath_drain(30LL * 1000000000LL);
        char id[64];
        sl_job_id(id, sizeof(id), "");
        if (sl_resilver_start(id, NULL, 0, &err) < 0) {
            sl_err_wrap(&err, "t[%s]: mountpath %s: %s done, but its resilver did not start (run `shale storage "
                        "resilver` when the target can)", G.id, q->path, q->action);
            sl_resp_err(r, &err);
        } else {
            sl_logi("t[%s]: mountpath %s: %s: resilver %s started", G.id, q->path, q->action, id);
            sl_resp_text(r, 200, id);
        }
    }
    mreq_free(q);
}

static void mpath_body_done(struct sl_req *r)
{
    struct sl_err err = { 0 };
    struct sl_actmsg m;
    if (sl_actmsg_parse(r, &m, &err) < 0) {
        sl_resp_err(r, &err);
        return;
    }
    static const char *const acts[][2] = {
        { "attach-mp", "attach" }, { "enable-mp", "enable" }, { "disable-mp", "disable" }, { "detach-mp", "detach" },
        { "fshc", "fshc" },
    };
    const char *a = NULL;
    for (size_t i = 0; i < SL_ARRAY_SIZE(acts); i++)
        if (!strcmp(m.action, acts[i][0]))
            a = acts[i][1];
    const char *dntres = sl_req_query(r, "dntres"), *label = sl_req_query(r, "mountpath_label");
    if (dntres && *dntres && strcmp(dntres, "false") && strcmp(dntres, "0")) {
        /* (AIStore's "do not resilver": the objects on the mountpath would be left behind) */
        sl_resp_errf(r, SL_EINVAL, "%s: dntres=%s is refused: Shale always moves the objects off a mountpath being "
                     "disabled or detached (nothing acknowledged may be lost); nothing was changed: send it without "
                     "dntres", m.action, dntres);
    } else if (label && *label) {
        sl_resp_errf(r, SL_EINVAL, "%s: mountpath_label=%s is refused: Shale does not label mountpaths; nothing was "
                     "changed: send it without mountpath_label", m.action, label);
    } else if (!a) {
        sl_resp_errf(r, SL_EINVAL, "%s /v1/daemon/mountpaths: invalid action \"%s\" (valid: attach-mp, enable-mp, "
                     "disable-mp, detach-mp, fshc, with the mountpath as \"value\")", r->method_str, m.action);
    } else if (!json_is_string(m.value) || !*json_string_value(m.value)) {
        sl_resp_errf(r, SL_EINVAL, "%s: \"value\" must be the mountpath (a directory, e.g. \"/data/disk3\")",
                     m.action);
    } else {
        struct mreq *q = sl_xcalloc(1, sizeof(*q));
        snprintf(q->action, sizeof(q->action), "%s", a);
        q->path = sl_xstrdup(json_string_value(m.value));
        sl_req_offload(r, mpath_run, mreq_free, q);
    }
    sl_actmsg_free(&m);
}

bool sl_mpath_route(struct sl_req *r)
{
    if (!sl_req_path_is(r, "/v1/daemon/mountpaths"))
        return false;
    if (r->method != SL_M_PUT && r->method != SL_M_POST && r->method != SL_M_DELETE)
        sl_resp_method_not_allowed(r, "PUT, POST, DELETE");
    else if (!sl_is_target())
        sl_resp_errf(r, SL_EINVAL, "%s is a gateway, which has no mountpaths: send it to the target, or to a gateway as "
                     "/v1/reverse/daemon/mountpaths with header Ais-Node-Id", G.name);
    else
        sl_req_buffer_body(r, 64 * 1024, mpath_body_done);
    return true;
}

/* ---- the gateway: /v1/reverse/daemon/mountpaths to target Ais-Node-Id ---- */

static void reverse_run(struct sl_req *r, void *arg)
{
    char *id = arg;
    struct sl_smap *sm = sl_smap_get();
    const struct sl_snode *n = sl_smap_find(sm, id);
    if (!n || n->type != SL_NODE_TARGET) {
        sl_resp_errf(r, n ? SL_EINVAL : SL_ENOENT, "%s %s: %s (see `shale show cluster target`)", r->method_str,
                     r->path, n ? "that node is a gateway, which has no mountpaths: name a target"
                                : "that node is not in the cluster map");
        sl_smap_put(sm);
        free(id);
        return;
    }
    const char *qs = strchr(r->raw_uri, '?');
    char *url = sl_xasprintf("%s/v1/daemon/mountpaths%s", n->ctrl_url, qs ? qs : ""); /* (dntres, mountpath_label) */
    sl_smap_put(sm);
    struct sl_peer_resp pr;
    /* (an attach opens an LMDB environment and waits up to 30 s for the PUTs in flight) */
    int rc = sl_peer_call(r->method_str, url, NULL, 0, r->body.p, r->body.len,
                          sl_conf->cplane_timeout_ns / 1000000 * 5 + 60000, &pr);
    if (rc < 0)
        sl_resp_errf(r, SL_EUNAVAIL, "target t[%s] did not answer: %s", id, pr.err);
    else
        sl_resp_bytes(r, (int)pr.status, pr.status >= 400 ? "application/json" : "text/plain; charset=utf-8",
                      pr.body.p ? pr.body.p : "", pr.body.len);
    sl_peer_resp_free(&pr);
    free(url);
    free(id);
}

static void reverse_body_done(struct sl_req *r)
{
    const char *id = sl_req_header(r, "Ais-Node-Id");
    if (!strcmp(id, G.id)) { /* (a standalone node, or a gateway named: its own) */
        mpath_body_done(r);
        return;
    }
    sl_req_offload(r, reverse_run, free, sl_xstrdup(id));
}

void sl_mpath_reverse(struct sl_req *r, const char *id)
{
    if (r->method != SL_M_PUT && r->method != SL_M_POST && r->method != SL_M_DELETE) {
        sl_resp_method_not_allowed(r, "PUT, POST, DELETE");
        return;
    }
    if (!strcmp(id, G.id) && !sl_is_target()) {
        sl_resp_errf(r, SL_EINVAL, "%s is a gateway, which has no mountpaths: name a target in Ais-Node-Id", G.name);
        return;
    }
    if (strcmp(id, G.id) && G.role != SL_ROLE_PROXY) {
        sl_resp_errf(r, SL_EINVAL, "%s is not a gateway: send /v1/reverse/daemon/mountpaths to a gateway, or "
                     "/v1/daemon/mountpaths to the target itself", G.name);
        return;
    }
    sl_req_buffer_body(r, 64 * 1024, reverse_body_done);
}
