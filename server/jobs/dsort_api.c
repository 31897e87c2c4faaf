/* SPDX-License-Identifier: MIT
 * dsort_api.c: the gateway's /v1/sort (spec §7): POST checks the spec and
 * hands the job to its coordinator (HRW of the job id), GET answers with
 * AIStore's JobInfo per target or the job list, DELETE aborts or removes.
 * The work itself is dsort.c.
 */
#include "dsort.h"
#include "rxguard.h"
#include "cluster.h"
#include "dsort_spec.h"
#include "jsonx.h"
#include "log.h"
#include "node.h"
#include "peer.h"
#include "xact.h"

#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void t_str(int64_t ns, char *out, size_t n)
{
    if (ns)
        sl_format_gotime(ns, "2006-01-02T15:04:05.000000000Z07:00", out, n);
    else
        snprintf(out, n, "0001-01-01T00:00:00Z");
}

static json_t *phase(const json_t *p, bool job_ended)
{
    int64_t st = sl_json_int(p, "started_ns", 0), en = sl_json_int(p, "end_ns", 0);
    char a[64], b[64];
    t_str(st, a, sizeof(a));
    t_str(en, b, sizeof(b));
    int64_t el = st ? (en ? en : sl_now_ns()) - st : 0;
    return json_pack("{s:s,s:s,s:I,s:b,s:b}", "started_time", a, "end_time", b, "elapsed", (json_int_t)el, "running",
                     st && !en && !job_ended, "finished", en != 0);
}

static json_t *ctr_str(uint64_t v)
{
    char b[32];
    snprintf(b, sizeof(b), "%llu", (unsigned long long)v);
    return json_string(b);
}

/* AIStore's JobInfo of one target, from its job snapshot */
static json_t *job_info(const json_t *sn)
{
    const json_t *ext = json_object_get(sn, "ext"), *st = json_object_get(sn, "stats");
    const json_t *ex = json_object_get(ext, "extraction"), *so = json_object_get(ext, "sorting"),
                 *cr = json_object_get(ext, "creation");
    bool ended = sl_json_int(sn, "end_ns", 0) != 0;
    const char *err = sl_json_str(sn, "err", "");
    bool aborted = sl_json_bool(sn, "aborted", false) || (ended && err[0]) ||
                   json_is_true(json_object_get(ext, "cleaned"));
    json_t *le = phase(ex, ended), *ms = phase(so, ended), *sc = phase(cr, ended);
    /* a target's own extraction figures come with the build; the
     * coordinator sums every target's */
    uint64_t shards = 0, records = 0, bytes = 0;
    json_t *targets = json_object_get(ex, "targets");
    if (targets) {
        const char *k;
        json_t *v;
        json_object_foreach(targets, k, v) {
            shards += (uint64_t)sl_json_int(v, "shards", 0);
            records += (uint64_t)sl_json_int(v, "records", 0);
            bytes += (uint64_t)sl_json_int(v, "shard_bytes", 0);
        }
    } else {
        shards = (uint64_t)sl_json_int(ex, "shards", 0);
        records = (uint64_t)sl_json_int(ex, "records", 0);
        bytes = (uint64_t)sl_json_int(ex, "shard_bytes", 0);
        if (json_is_object(ex))
            json_object_set_new(le, "finished", json_true());
    }
    json_object_set_new(le, "total_count", ctr_str(shards));
    json_object_set_new(le, "extracted_count", ctr_str(shards));
    json_object_set_new(le, "extracted_size", ctr_str(bytes));
    json_object_set_new(le, "extracted_record_count", ctr_str(records));
    /* records held on disk past max_mem_usage (dsort.c spools) */
    json_object_set_new(le, "extracted_to_disk_count", ctr_str((uint64_t)sl_json_int(cr, "spilled_cnt", 0)));
    json_object_set_new(le, "extracted_to_disk_size", ctr_str((uint64_t)sl_json_int(cr, "spilled_size", 0)));
    /* a Shale addition, on the coordinator only: its record list against max_mem_usage (dsort_mem.h) */
    if (json_object_get(so, "coordinator"))
        json_object_set(ms, "coordinator", json_object_get(so, "coordinator"));
    json_object_set_new(ms, "sent_stats", json_null());
    json_object_set_new(ms, "recv_stats", json_null());
    json_object_set_new(sc, "to_create", ctr_str((uint64_t)sl_json_int(cr, "to_create", 0)));
    json_object_set_new(sc, "created_count", ctr_str((uint64_t)sl_json_int(st, "out-objs", 0)));
    json_object_set_new(sc, "moved_shard_count", ctr_str(0));
    json_object_set_new(sc, "mem_peak", ctr_str((uint64_t)sl_json_int(cr, "mem_peak", 0)));
    json_object_set_new(sc, "req_stats", json_null());
    json_object_set_new(sc, "resp_stats", json_null());
    if (ended && !aborted) /* a dry run, or a target with nothing to create */
        json_object_set_new(sc, "finished", json_true());
    json_t *errs = json_array();
    if (err[0])
        json_array_append_new(errs, json_string(err));
    json_t *warn = json_object_get(ext, "warnings");
    json_t *m = json_pack("{s:o,s:o,s:o,s:s,s:o,s:o,s:b,s:b}", "local_extraction", le, "meta_sorting", ms,
                          "shard_creation", sc, "description", sl_json_str(ext, "description", ""), "warnings",
                          warn ? json_incref(warn) : json_array(), "errors", errs, "aborted", aborted, "archived",
                          false);
    char a[64], b[64];
    t_str(sl_json_int(sn, "start_ns", 0), a, sizeof(a));
    t_str(sl_json_int(sn, "end_ns", 0), b, sizeof(b));
    /* AIStore's JobInfo names the three phases' durations oddly
     * (ExtractedDuration is "started_meta_sorting", ...) and sends them as
     * integer nanoseconds (Go's time.Duration): the SDK parses them so */
    json_int_t d_ex = sl_json_int(le, "elapsed", 0), d_so = sl_json_int(ms, "elapsed", 0),
               d_cr = sl_json_int(sc, "elapsed", 0);
    json_t *o = json_pack("{s:s,s:O,s:O,s:s,s:s,s:I,s:I,s:I,s:o,s:o,s:o,s:b,s:b}", "id", sl_json_str(sn, "id", ""),
                          "src-bck", json_object_get(sn, "src-bck"), "dst-bck", json_object_get(sn, "dst-bck"),
                          "started_time", a, "finish_time", b, "started_meta_sorting", d_ex, "started_shard_creation",
                          d_so, "finished_shard_creation", d_cr, "loc-objs",
                          ctr_str((uint64_t)sl_json_int(st, "out-objs", 0)),
                          "loc-bytes", ctr_str((uint64_t)sl_json_int(st, "out-bytes", 0)), "Metrics", m, "aborted",
                          aborted, "archived", false);
    if (json_object_get(ext, "dry_run"))
        json_object_set(o, "dry_run", json_object_get(json_object_get(ext, "dry_run"), "shards"));
    json_object_set_new(o, "state", json_string(!ended ? "running" : aborted ? (err[0] && strcmp(err, "aborted")
                                                                                     ? "failed" : "aborted")
                                                                             : "finished"));
    return o;
}

static void start_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    struct sl_dsort_spec s;
    if (sl_dsort_spec_parse_text(r->body.p ? r->body.p : "", r->body.len, &s, &err) < 0) {
        sl_dsort_spec_free(&s);
        sl_resp_err(r, &err);
        return;
    }
    struct sl_bck b;
    int rc = sl_bck_resolve_add(s.in_bck, s.in_prov, &b, &err); /* (a remote input seen first: added) */
    if (rc < 0) {
        sl_dsort_spec_free(&s);
        sl_resp_err(r, &err);
        return;
    }
    sl_bck_release(&b);
    json_t *body = json_pack("{s:o}", "spec", sl_dsort_spec_json(&s));
    sl_dsort_spec_free(&s);
    char id[48];
    if (sl_cluster_job_begin("dsort", "srt-", "/v1/internal/dsort/start", body, sl_dsort_start_body, id, sizeof(id), &err) <
        0) {
        sl_resp_err(r, &err);
        return;
    }
    sl_logi("dsort %s started", id);
    sl_resp_text(r, 200, id);
}

static void start_done(struct sl_req *r)
{
    sl_req_offload(r, start_run, NULL, NULL);
}

static void get_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    const char *uuid = sl_req_query(r, "uuid");
    json_t *per = sl_cluster_job_snaps(uuid && *uuid ? uuid : NULL, "dsort", false, &err);
    if (uuid && *uuid) {
        json_t *out = json_object();
        struct sl_snap_it it;
        for (sl_snaps_first(&it, per, uuid); it.sn; sl_snaps_next(&it))
            json_object_set_new(out, it.tid, job_info(it.sn));
        json_decref(per);
        if (err.msg[0]) { /* a partial answer could read "all finished" with a target's shards still to come */
            json_decref(out);
            sl_resp_errf(r, SL_EUNAVAIL, "dsort job %s: %s; without it the status would be partial, retry shortly",
                         uuid, err.msg);
            return;
        }
        if (!json_object_size(out)) {
            json_decref(out);
            sl_resp_errf(r, SL_ENOENT, "dsort job %s not found on any target (list them with GET /v1/sort)", uuid);
            return;
        }
        sl_resp_json_new(r, 200, out);
        return;
    }
    /* the list: one JobInfo per job, from the coordinator's view (or the
     * first target's), running if any target still is */
    const char *re_s = sl_req_query(r, "regex");
    bool only_active = sl_req_query_bool(r, "only_active");
    regex_t re;
    bool have_re = re_s && *re_s;
    struct sl_err rerr = { 0 };
    if (have_re && sl_regcomp(&re, re_s, REG_EXTENDED | REG_NOSUB, "GET /v1/sort?regex", &rerr) < 0) {
        json_decref(per);
        sl_resp_err(r, &rerr);
        return;
    }
    json_t *byid = json_object();
    struct sl_snap_it it;
    for (sl_snaps_first(&it, per, NULL); it.sn; sl_snaps_next(&it)) {
        const char *id = sl_json_str(it.sn, "id", "");
        json_t *cur = json_object_get(byid, id);
        bool coord = json_is_true(json_object_get(json_object_get(it.sn, "ext"), "coordinator"));
        bool running = sl_json_int(it.sn, "end_ns", 0) == 0;
        if (!cur || coord) {
            json_t *ji = job_info(it.sn);
            if (cur && json_is_true(json_object_get(cur, "_running")))
                running = true;
            json_object_set_new(ji, "_running", json_boolean(running));
            json_object_set_new(byid, id, ji);
        } else if (running) {
            json_object_set_new(cur, "_running", json_true());
        }
    }
    json_decref(per);
    json_t *out = json_array();
    const char *id;
    json_t *ji;
    json_object_foreach(byid, id, ji) {
        bool running = json_is_true(json_object_get(ji, "_running"));
        json_object_del(ji, "_running");
        if (only_active && !running)
            continue;
        if (have_re && regexec(&re, sl_json_str(json_object_get(ji, "Metrics"), "description", ""), 0, NULL, 0))
            continue;
        json_array_append(out, ji);
    }
    json_decref(byid);
    if (have_re)
        regfree(&re);
    sl_resp_json_new(r, 200, out);
}

static void abort_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    const char *uuid = sl_req_query(r, "uuid");
    if (!uuid || !*uuid) {
        sl_resp_errf(r, SL_EINVAL, "DELETE /v1/sort/abort needs ?uuid=JOB_ID");
        return;
    }
    if (!sl_cluster_job_known(uuid, &err)) {
        if (err.msg[0])
            sl_resp_err(r, &err);
        else
            sl_resp_errf(r, SL_ENOENT, "dsort job %s not found on any target", uuid);
        return;
    }
    sl_dsort_abort_everywhere(uuid);
    sl_resp_empty(r, 200);
}

static void remove_run(struct sl_req *r, void *arg)
{
    (void)arg;
    struct sl_err err = { 0 };
    const char *uuid = sl_req_query(r, "uuid");
    if (!uuid || !*uuid) {
        sl_resp_errf(r, SL_EINVAL, "DELETE /v1/sort needs ?uuid=JOB_ID (abort a running one with "
                     "DELETE /v1/sort/abort?uuid=)");
        return;
    }
    json_t *per = sl_cluster_job_snaps(uuid, NULL, false, &err);
    json_t *st = sl_cluster_job_status(per, uuid);
    json_decref(per);
    if (!st) {
        if (err.msg[0])
            sl_resp_err(r, &err);
        else
            sl_resp_errf(r, SL_ENOENT, "dsort job %s not found on any target", uuid);
        return;
    }
    bool idle = json_is_true(json_object_get(st, "is_idle"));
    json_decref(st);
    if (!idle) {
        sl_resp_errf(r, SL_EINVAL, "dsort job %s is still in progress and cannot be removed (abort it first: "
                     "DELETE /v1/sort/abort?uuid=%s)", uuid, uuid);
        return;
    }
    if (G.role == SL_ROLE_STANDALONE) {
        sl_job_remove(uuid);
    } else {
        char *q = sl_url_encode_query(uuid);
        struct sl_tfan t;
        sl_tfan_init(&t, SL_TF_SKIP_OFFLINE, "DELETE", "/v1/internal/dsort/job?uuid=%s", q);
        free(q);
        sl_tfan_run(&t, 0);
        sl_tfan_free(&t);
    }
    sl_resp_empty(r, 200);
}

static void dsort_route(struct sl_req *r)
{
    if (G.role == SL_ROLE_TARGET) {
        sl_resp_errf(r, SL_EINVAL, "%s is a storage target: send /v1/sort requests to a gateway (proxy)", G.name);
        return;
    }
    bool root = !strcmp(r->path, "/v1/sort") || !strcmp(r->path, "/v1/sort/");
    bool ab = !strcmp(r->path, "/v1/sort/abort");
    if (root && r->method == SL_M_POST) {
        if (G.role == SL_ROLE_PROXY && !sl_is_primary())
            sl_forward_to_primary(r);
        else
            sl_req_buffer_body(r, 16 * SL_MIB, start_done);
    } else if (root && r->method == SL_M_GET) {
        sl_req_offload(r, get_run, NULL, NULL);
    } else if (ab && r->method == SL_M_DELETE) {
        sl_req_offload(r, abort_run, NULL, NULL);
    } else if (root && r->method == SL_M_DELETE) {
        sl_req_offload(r, remove_run, NULL, NULL);
    } else {
        sl_resp_errf(r, SL_EINVAL, "unsupported request %s %s (dsort API: POST /v1/sort, GET /v1/sort[?uuid=], "
                     "DELETE /v1/sort/abort?uuid=, DELETE /v1/sort?uuid=)", r->method_str, r->path);
    }
}

static const char *const dsort_paths[] = { "/v1/sort", NULL };

const struct sl_module sl_dsort_module = {
    .name = "dsort",
    .paths = dsort_paths,
    .route = dsort_route,
    .internal = sl_dsort_internal,
};
