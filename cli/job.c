/* SPDX-License-Identifier: MIT
 * job.c: shale job show|wait|stop|start, and shale cluster
 * maintenance|decommission (node membership changes through the primary).
 */
#include "cli.h"
#include "jsonx.h"
#include "xact.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A job is named by id ("g4", "tco-...") or by kind ("rebalance"): every
 * kind the server runs and AIStore's display names of them (server/core/xact.c). */
static bool looks_like_kind(const char *s)
{
    return sl_job_kind_known(s);
}

static json_t *query(const char *what_id, bool active_only)
{
    json_t *q = json_object();
    if (what_id && *what_id)
        json_object_set_new(q, looks_like_kind(what_id) ? "Kind" : "ID", json_string(what_id));
    json_object_set_new(q, "show_active", json_boolean(active_only));
    return q;
}

/* fn(arg, TID, snap) for each job snapshot of a qryxstats answer: {"TID": [snap, ...], ...} */
static void each_snap(json_t *per_target, void (*fn)(void *arg, const char *tid, json_t *snap), void *arg)
{
    const char *tid;
    json_t *arr;
    json_object_foreach(per_target, tid, arr) {
        for (size_t i = 0; i < json_array_size(arr); i++)
            fn(arg, tid, json_array_get(arr, i));
    }
}

struct rows {
    struct table *t;
    int n;
};

/* one row of `job show` */
static void job_row(void *arg, const char *tid, json_t *sn)
{
    struct rows *rs = arg;
    rs->n++;
    char node[64], objs[32], bytes[32], st[32] = "", en[32] = "-";
    snprintf(node, sizeof(node), "t[%s]", tid);
    json_t *stats = json_object_get(sn, "stats");
    uint64_t no = strtoull(sl_json_str(stats, "out-objs", "0"), NULL, 10) +
                  strtoull(sl_json_str(stats, "in-objs", "0"), NULL, 10);
    uint64_t nb = strtoull(sl_json_str(stats, "out-bytes", "0"), NULL, 10) +
                  strtoull(sl_json_str(stats, "in-bytes", "0"), NULL, 10);
    snprintf(objs, sizeof(objs), "%llu", (unsigned long long)no);
    sl_format_size(nb, bytes, sizeof(bytes));
    int64_t s0 = sl_json_int(sn, "start_ns", 0), e0 = sl_json_int(sn, "end_ns", 0);
    sl_format_gotime(s0, "01-02 15:04:05", st, sizeof(st));
    if (e0)
        sl_format_gotime(e0, "01-02 15:04:05", en, sizeof(en));
    const char *state = !e0 ? "Running" : sl_json_bool(sn, "aborted", false) ? "Aborted"
                        : sl_json_str(sn, "err", "")[0]                   ? "Failed"
                                                                            : "Finished";
    const char *bck = json_string_value(json_object_get(json_object_get(sn, "bck"), "name"));
    char bb[80] = "-";
    if (bck && *bck)
        snprintf(bb, sizeof(bb), "ais://%s", bck);
    table_row(rs->t, node, sl_json_str(sn, "id", ""), sl_json_str(sn, "kind", ""), bb, objs, bytes, st, en,
              state);
}

static int job_show(struct opts *o)
{
    const char *sel = o->argc ? o->argv[0] : "";
    /* a job named by its id is shown whether it runs or has ended */
    bool by_id = sel[0] && !looks_like_kind(sel);
    struct cli_resp r;
    cli_query("qryxstats", query(sel, !opt_bool(o, "all") && !by_id), &r);
    if (r.status == 404 && cli_json) {
        printf("{}\n"); /* --json: JSON also when nothing matches */
        cli_resp_free(&r);
        return 0;
    }
    if (r.status == 404) {
        printf("No %sjobs%s%s\n", opt_bool(o, "all") || by_id ? "" : "running ", sel[0] ? " matching " : "", sel);
        cli_resp_free(&r);
        return 0;
    }
    if (r.status != 200) {
        int rc = cli_fail(&r, "show jobs");
        cli_resp_free(&r);
        return rc;
    }
    json_t *j = cli_resp_json(&r);
    cli_resp_free(&r);
    if (cli_json) {
        cli_print_json(j);
        json_decref(j);
        return 0;
    }
    struct rows rs = { table_new(9, "NODE", "ID", "KIND", "BUCKET", "OBJECTS", "BYTES", "START", "END", "STATE"), 0 };
    each_snap(j, job_row, &rs);
    if (rs.n)
        table_print(rs.t, stdout, !cli_no_headers);
    else /* a kind with no jobs: every target answered with none */
        printf("No %sjobs matching %s\n", opt_bool(o, "all") ? "" : "running ", sel);
    table_free(rs.t);
    json_decref(j);
    return 0;
}

/* a snapshot's work: what it sent and received (out + in), else what it did in place (loc) */
static void snap_work(json_t *stats, uint64_t *objs, uint64_t *bytes)
{
    uint64_t o = strtoull(sl_json_str(stats, "out-objs", "0"), NULL, 10) +
                 strtoull(sl_json_str(stats, "in-objs", "0"), NULL, 10);
    uint64_t b = strtoull(sl_json_str(stats, "out-bytes", "0"), NULL, 10) +
                 strtoull(sl_json_str(stats, "in-bytes", "0"), NULL, 10);
    if (!o && !b) {
        o = strtoull(sl_json_str(stats, "loc-objs", "0"), NULL, 10);
        b = strtoull(sl_json_str(stats, "loc-bytes", "0"), NULL, 10);
    }
    *objs += o;
    *bytes += b;
}

struct sums {
    uint64_t objs, bytes, errs;
    int nodes;
    struct table *t;            /* rows per node, when not NULL */
};

static void sum_snap(void *arg, const char *tid, json_t *sn)
{
    struct sums *s = arg;
    uint64_t o = 0, b = 0;
    json_t *stats = json_object_get(sn, "stats");
    snap_work(stats, &o, &b);
    uint64_t e = strtoull(sl_json_str(stats, "err-objs", "0"), NULL, 10);
    s->objs += o;
    s->bytes += b;
    s->errs += e;
    s->nodes++;
    if (s->t) {
        char node[64], oc[32], bc[32], ec[32];
        snprintf(node, sizeof(node), "t[%s]", tid);
        sl_format_count(o, oc, sizeof(oc));
        sl_format_size(b, bc, sizeof(bc));
        sl_format_count(e, ec, sizeof(ec));
        table_row(s->t, node, oc, bc, ec);
    }
}

/* the job's counters summed over the nodes (rows: per node too); 0 when they answered */
static int job_sums(const char *id, struct sums *s)
{
    struct cli_resp r;
    cli_query("qryxstats", query(id, false), &r);
    int rc = -1;
    if (r.status == 200) {
        json_t *j = cli_resp_json(&r);
        each_snap(j, sum_snap, s);
        json_decref(j);
        rc = 0;
    }
    cli_resp_free(&r);
    return rc;
}

/* one progress line: objects, bytes, their rates; redrawn in place on a terminal, a line every 2 s
 * otherwise */
struct jprog {
    int64_t t0, last;
    bool tty;
};

static void job_progress(const char *kind, const char *id, struct jprog *p, bool final)
{
    int64_t now = sl_mono_ns();
    if (!final && now - p->last < (p->tty ? 250000000LL : 2000000000LL))
        return;
    p->last = now;
    struct sums s = { 0 };
    if (job_sums(id, &s) < 0)
        return;
    double el = (double)(now - p->t0) / 1e9;
    char oc[32], bc[32], rate[32] = "-";
    sl_format_count(s.objs, oc, sizeof(oc));
    sl_format_size(s.bytes, bc, sizeof(bc));
    if (el > 0.5 && s.bytes)
        sl_format_size((uint64_t)((double)s.bytes / el), rate, sizeof(rate));
    char errs[48] = "";
    if (s.errs)
        snprintf(errs, sizeof(errs), "  errors: %llu", (unsigned long long)s.errs);
    fprintf(stderr, "%s%s[%s]  %s objects  %s  %s/s  %.1fs%s%s", p->tty ? "\r\033[K" : "", kind, id, oc, bc, rate, el,
            errs, p->tty && !final ? "" : "\n");
    fflush(stderr);
}

/* at the end: what each node did, and the total */
static void job_summary(const char *id)
{
    struct sums s = { 0 };
    s.t = table_new(4, "NODE", "OBJECTS", "BYTES", "ERRORS");
    if (job_sums(id, &s) == 0 && s.nodes > 0) {
        char oc[32], bc[32], ec[32];
        sl_format_count(s.objs, oc, sizeof(oc));
        sl_format_size(s.bytes, bc, sizeof(bc));
        sl_format_count(s.errs, ec, sizeof(ec));
        if (s.nodes > 1)
            table_row(s.t, "TOTAL", oc, bc, ec);
        table_print(s.t, stdout, !cli_no_headers);
    }
    table_free(s.t);
}

/* Poll until done; returns 0 finished, 1 failed/aborted/timeout. */
static int wait_job_until(const char *sel, int64_t timeout_ns, bool progress, bool summary);

int cli_job_wait(const char *sel, int64_t timeout_ns, bool progress)
{
    return wait_job_until(sel, timeout_ns, progress, true);
}

/* summary: the per-node table at the end (cli_job_report prints its own) */
static int wait_job_until(const char *sel, int64_t timeout_ns, bool progress, bool summary)
{
    int64_t deadline = sl_mono_ns() + timeout_ns;
    struct jprog jp = { sl_mono_ns(), 0, isatty(2) != 0 };
    progress = progress || jp.tty; /* (on a terminal: always) */
    char kind[64] = "", id[64] = "";
    json_t *q = query(sel, false);
    size_t len;
    char *body = sl_json_dump(q, 0, &len);
    json_decref(q);
    int rc = 1;
    int64_t first_404 = sl_mono_ns();
    for (;;) {
        struct cli_resp r;
        cli_req("GET", "/v1/cluster?what=status", "application/json", body, len, &r);
        if (r.status == 200) {
            json_t *j = cli_resp_json(&r);
            snprintf(kind, sizeof(kind), "%s", sl_json_str(j, "kind", ""));
            snprintf(id, sizeof(id), "%s", sl_json_str(j, "uuid", sel));
            if (sl_json_int(j, "end_time", 0)) {
                if (progress)
                    job_progress(kind, id, &jp, true);
                const char *err = sl_json_str(j, "err", "");
                if (sl_json_bool(j, "aborted", false))
                    fprintf(stderr, "Error: job %s was aborted%s%s\n", sl_json_str(j, "uuid", sel), err[0] ? ": " : "",
                            err);
                else if (err[0])
                    fprintf(stderr, "Error: job %s failed: %s\n", sl_json_str(j, "uuid", sel), err);
                else {
                    printf("Job %s[%s] finished in %.1fs\n", kind, id, (double)(sl_mono_ns() - jp.t0) / 1e9);
                    if (summary)
                        job_summary(id);
                    rc = 0;
                }
                json_decref(j);
                cli_resp_free(&r);
                break;
            }
            if (progress)
                job_progress(kind, id, &jp, false);
            json_decref(j);
        } else if (r.status == 404 && sl_mono_ns() > first_404 + 2000000000LL && !looks_like_kind(sel)) {
            /* a job that no target has heard of for 2 s will not appear */
            fprintf(stderr, "Error: no job \"%s\" on any node (list them with `shale job show --all`)\n", sel);
            cli_resp_free(&r);
            break;
        } else if (r.status != 404 || sl_mono_ns() > deadline) {
            cli_fail(&r, "wait");
            cli_resp_free(&r);
            break;
        }
        cli_resp_free(&r);
        if (sl_mono_ns() > deadline) {
            fprintf(stderr, "Error: timed out waiting for job %s\n", sel);
            break;
        }
        usleep(250000);
    }
    free(body);
    return rc;
}

/* totals of a job over the targets: objects and bytes written, objects
 * failed, and the recorded per-object errors */
struct totals {
    uint64_t objs, bytes, failed;
    json_t *errors;
};

static void add_totals(void *arg, const char *tid, json_t *s)
{
    struct totals *t = arg;
    (void)tid;
    json_t *st = json_object_get(s, "stats");
    t->objs += (uint64_t)sl_json_int(st, "out-objs", 0);
    t->bytes += (uint64_t)sl_json_int(st, "out-bytes", 0);
    t->failed += (uint64_t)sl_json_int(st, "err-objs", 0);
    size_t k;
    json_t *e;
    json_array_foreach(json_object_get(json_object_get(s, "ext"), "errors"), k, e)
        json_array_append(t->errors, e);
}

int cli_job_report(const char *id, int64_t tmo, bool progress, bool dry, const char *done, const char *where,
                   const char *would, uint64_t *failed, size_t *shown)
{
    int rc = wait_job_until(id, tmo, progress, false);
    struct totals t = { 0, 0, 0, json_array() };
    struct cli_resp r;
    cli_query("qryxstats", json_pack("{s:s}", "ID", id), &r);
    json_t *j = r.status == 200 ? cli_resp_json(&r) : NULL;
    cli_resp_free(&r);
    each_snap(j, add_totals, &t);
    json_decref(j);
    *failed = t.failed;
    char sz[32], cnt[32];
    sl_format_size(t.bytes, sz, sizeof(sz));
    sl_format_count(t.objs, cnt, sizeof(cnt));
    if (dry) {
        printf("[DRY RUN] No modifications on the cluster\n");
        printf("%s object%s (%s) would have been %s\n", cnt, t.objs == 1 ? "" : "s", sz, would);
    } else {
        printf("%s %s object%s (%s) %s\n", done, cnt, t.objs == 1 ? "" : "s", sz, where);
    }
    *shown = json_array_size(t.errors);
    if (*failed) {
        printf("%llu object(s) failed:\n", (unsigned long long)*failed);
        cli_print_obj_errors(t.errors, "obj");
    }
    json_decref(t.errors);
    return rc;
}

static int job_wait(struct opts *o)
{
    if (o->argc < 1)
        return cli_usage("job wait");
    int64_t tmo;
    if (cli_timeout(o, &tmo) < 0)
        return 1;
    return cli_job_wait(o->argv[0], tmo, opt_bool(o, "progress"));
}

static int job_stop(struct opts *o)
{
    if (o->argc < 1)
        return cli_usage("job stop");
    struct cli_resp r;
    /* a job that has ended: nothing to stop (the API answers 200 either way) */
    cli_query("status", query(o->argv[0], false), &r);
    if (r.status == 404) { /* no such job on any target: say so, do not claim it stopped */
        int rc = cli_fail(&r, NULL);
        cli_resp_free(&r);
        return rc;
    }
    if (r.status == 200) {
        json_t *st = cli_resp_json(&r);
        if (sl_json_int(st, "end_time", 0)) {
            printf("Job %s[%s] has already %s; nothing to stop\n", sl_json_str(st, "kind", ""),
                   sl_json_str(st, "uuid", o->argv[0]), sl_json_bool(st, "aborted", false) ? "been aborted" : "ended");
            json_decref(st);
            cli_resp_free(&r);
            return 0;
        }
        json_decref(st);
    }
    cli_resp_free(&r);
    cli_act("PUT", "/v1/cluster", "stop", "", query(o->argv[0], false), &r);
    int rc = 0;
    if (r.status != 200)
        rc = cli_fail(&r, NULL);
    else
        printf("Stopped %s\n", o->argv[0]);
    cli_resp_free(&r);
    return rc;
}

/* A job started: its id (NULL: it did not, the error printed) on stdout,
 * then with --wait the wait for it; id is freed */
static int started(const struct opts *o, char *id, int64_t tmo)
{
    if (!id)
        return 1;
    printf("%s\n", id);
    int rc = opt_bool(o, "wait") ? cli_job_wait(id, tmo, opt_bool(o, "progress")) : 0;
    free(id);
    return rc;
}

/* shale job start dsort [SRC] [DST] -f spec.json|yaml|- : the spec as
 * AIStore's CLI takes it; SRC and DST, when given, replace input_bck and
 * output_bck. Prints the job id (-v: the resolved spec first). */
static int dsort_start(struct opts *o)
{
    const char *file = opt_str(o, "file");
    if (!file) {
        fprintf(stderr, "Error: dsort needs its spec: -f SPEC.json|SPEC.yaml|- (`shale job start --help`)\n");
        return 1;
    }
    int64_t tmo;
    if (cli_timeout(o, &tmo) < 0)
        return 1;
    json_t *spec = cli_read_spec(file, "dsort spec");
    if (!spec)
        return 1;
    const char *keys[] = { "input_bck", "output_bck" };
    for (int k = 0; k < 2 && k + 1 < o->argc; k++) {
        struct uri u;
        if (uri_parse(o->argv[k + 1], &u, true) < 0) {
            json_decref(spec);
            return 1;
        }
        if (!k)
            json_object_del(spec, "bck");
        json_object_set_new(spec, keys[k], json_pack("{s:s,s:s}", "name", u.bucket, "provider", u.provider));
        uri_free(&u);
    }
    size_t blen;
    char *body = sl_json_dump(spec, opt_bool(o, "verbose") ? SL_JD_PRETTY : 0, &blen);
    json_decref(spec);
    if (opt_bool(o, "verbose"))
        fprintf(stderr, "%s\n", body);
    struct cli_resp r;
    cli_req("POST", "/v1/sort", "application/json", body, blen, &r);
    free(body);
    if (r.status != 200) {
        int rc = cli_fail(&r, "start dsort");
        cli_resp_free(&r);
        return rc;
    }
    char *id = sl_xstrndup(r.body.p ? r.body.p : "", r.body.len);
    cli_resp_free(&r);
    return started(o, id, tmo);
}

/* PUT /v1/cluster {"action": "start", "value": v} (v consumed): print the job id, then --wait for it */
static int cluster_start(const struct opts *o, json_t *v, const char *what)
{
    int64_t tmo;
    if (cli_timeout(o, &tmo) < 0) {
        json_decref(v);
        return 1;
    }
    return started(o, cli_act_id("PUT", "/v1/cluster", "start", v, what), tmo);
}

/* shale scrub [ais://B ...] [--wait]: job scrub of the buckets named, else of all */
/* v's "Buckets": the buckets o->argv[first..] name (-1: one did not parse, said, v freed) */
static int add_buckets(json_t *v, const struct opts *o, int first)
{
    json_t *bs = json_array();
    for (int i = first; i < o->argc; i++) {
        struct uri u;
        if (uri_parse(o->argv[i], &u, true) < 0) {
            json_decref(bs);
            json_decref(v);
            return -1;
        }
        json_array_append_new(bs, json_pack("{s:s,s:s}", "name", u.bucket, "provider", u.provider));
        uri_free(&u);
    }
    json_object_set_new(v, "Buckets", bs);
    return 0;
}

/* the damaged objects each target listed in its scrub's status (ext) */
struct scrub_rows {
    struct table *t;
    uint64_t damaged, fixed, listed;
    bool cut;
};

static void scrub_row(void *arg, const char *tid, json_t *sn)
{
    struct scrub_rows *sr = arg;
    (void)tid;
    json_t *ext = json_object_get(sn, "ext");
    sr->damaged += (uint64_t)sl_json_int(ext, "damaged_n", 0);
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(ext, "damaged"), i, e) {
        bool fx = json_is_true(json_object_get(e, "fixed"));
        sr->fixed += fx;
        sr->listed++;
        table_row(sr->t, sl_json_str(e, "obj", ""), sl_json_str(e, "problem", ""), fx ? "yes" : "no");
    }
    sr->cut |= (uint64_t)sl_json_int(ext, "damaged_n", 0) > json_array_size(json_object_get(ext, "damaged"));
}

/* after a scrub: OBJECT | PROBLEM | FIXED for what the targets found */
static int scrub_report(const char *id, bool fix)
{
    struct cli_resp r;
    cli_query("qryxstats", json_pack("{s:s}", "ID", id), &r);
    if (r.status != 200) {
        int rc = cli_fail(&r, "scrub status");
        cli_resp_free(&r);
        return rc;
    }
    json_t *j = cli_resp_json(&r);
    cli_resp_free(&r);
    struct scrub_rows sr = { table_new(3, "OBJECT", "PROBLEM", "FIXED"), 0, 0, 0, false };
    each_snap(j, scrub_row, &sr);
    json_decref(j);
    if (!sr.damaged) {
        printf("No damaged objects found\n");
    } else {
        table_print(sr.t, stdout, !cli_no_headers);
        printf("%llu damaged object(s)%s", (unsigned long long)sr.damaged, sr.cut ? " (each target lists the first "
               "1000)" : "");
        if (fix)
            printf(", %llu fixed\n", (unsigned long long)sr.fixed);
        else
            printf("; nothing was changed: `shale scrub --fix` repairs what it can\n");
    }
    table_free(sr.t);
    return 0;
}

/* shale scrub [ais://B ...] [--fix] [--wait]: detect-only unless --fix */
int cli_scrub_start(const struct opts *o)
{
    json_t *v = json_pack("{s:s}", "Kind", "scrub");
    bool fix = opt_bool(o, "fix");
    if (fix)
        json_object_set_new(v, "Fix", json_true());
    if (o->argc > 0) {
        if (add_buckets(v, o, 0) < 0)
            return 1;
    }
    int64_t tmo;
    if (cli_timeout(o, &tmo) < 0) {
        json_decref(v);
        return 1;
    }
    char *id = cli_act_id("PUT", "/v1/cluster", "start", v, "start scrub");
    if (!id)
        return 1;
    printf("%s\n", id);
    int rc = 0;
    if (opt_bool(o, "wait")) {
        rc = cli_job_wait(id, tmo, opt_bool(o, "progress"));
        if (scrub_report(id, fix))
            rc = 1;
    } else {
        fprintf(stderr, "(`shale scrub%s ... --wait` prints the damaged objects; `shale job show %s --json` has them "
                "in each target's ext)\n", fix ? " --fix" : "", id);
    }
    free(id);
    return rc;
}

/* shale job start lru [ais://B ...] [--force] */
static int lru_start(struct opts *o)
{
    json_t *v = json_pack("{s:s,s:b}", "Kind", "lru", "Force", opt_bool(o, "force"));
    if (o->argc > 1) {
        if (add_buckets(v, o, 1) < 0)
            return 1;
    }
    return cluster_start(o, v, "start lru");
}

/* shale job start lifecycle [ais://B ...]: the buckets' S3 lifecycle rules applied now */
static int lifecycle_start(struct opts *o)
{
    json_t *v = json_pack("{s:s}", "Kind", "lifecycle");
    if (o->argc > 1) {
        if (add_buckets(v, o, 1) < 0)
            return 1;
    }
    return cluster_start(o, v, "start lifecycle");
}

/* shale job start mirror ais://B --copies N: make-n-copies (AIStore's `ais start mirror`) */
static int mirror_start(struct opts *o)
{
    int64_t tmo;
    const char *cs = opt_str(o, "copies");
    char *end = NULL;
    long n = cs ? strtol(cs, &end, 10) : 0;
    if (o->argc != 2 || !cs || !*cs || *end || n < 1 || n > 32) {
        fprintf(stderr, "Error: `shale start mirror ais://BUCKET --copies N` (N: replicas of each object, the main "
                        "one included, 1-32; 1 removes the copies and turns mirroring off)\n");
        return 1;
    }
    if (cli_timeout(o, &tmo) < 0)
        return 1;
    struct uri u;
    if (uri_parse(o->argv[1], &u, true) < 0)
        return 1;
    if (u.obj && *u.obj) {
        fprintf(stderr, "Error: `shale start mirror` takes a bucket, not an object (\"%s\")\n", o->argv[1]);
        uri_free(&u);
        return 1;
    }
    char *pq = sl_xasprintf("/v1/buckets/%s%s", u.bucket, uri_query(&u));
    char *id = cli_act_id("POST", pq, "make-n-copies", json_integer(n), "start mirror");
    free(pq);
    uri_free(&u);
    return started(o, id, tmo);
}

static int job_start(struct opts *o)
{
    if (o->argc >= 1 && !strcmp(o->argv[0], "dsort"))
        return dsort_start(o);
    if (o->argc >= 1 && !strcmp(o->argv[0], "mirror"))
        return mirror_start(o);
    if (o->argc >= 1 && !strcmp(o->argv[0], "lru"))
        return lru_start(o);
    if (o->argc >= 1 && !strcmp(o->argv[0], "lifecycle"))
        return lifecycle_start(o);
    if (o->argc >= 1 && !strcmp(o->argv[0], "resilver")) {
        if (o->argc > 2) {
            fprintf(stderr, "Error: unexpected argument \"%s\": `shale job start resilver [TARGET]` names one "
                            "target at most\n", o->argv[2]);
            return 1;
        }
        return cli_resilver_start(o, o->argc > 1 ? o->argv[1] : NULL);
    }
    if (o->argc < 1 || strcmp(o->argv[0], "rebalance"))
        return cli_usage("job start");
    if (o->argc > 1) {
        fprintf(stderr, "Error: unexpected argument \"%s\": `shale job start rebalance` takes none\n", o->argv[1]);
        return 1;
    }
    return cluster_start(o, json_pack("{s:s}", "Kind", "rebalance"), NULL);
}

/* shale job rm [dsort] ID: forget a finished dsort job */
static int job_rm(struct opts *o)
{
    const char *id = o->argc > 1 && !strcmp(o->argv[0], "dsort") ? o->argv[1] : o->argc ? o->argv[0] : NULL;
    if (!id || !sl_has_prefix(id, "srt-")) {
        fprintf(stderr, "Error: `shale job rm [dsort] srt-ID` removes a finished dsort job; other kinds are kept "
                        "until they age out\n");
        return 1;
    }
    if (o->argc > (id == o->argv[0] ? 1 : 2)) {
        fprintf(stderr, "Error: unexpected argument \"%s\": `shale job rm` takes one job id\n", o->argv[o->argc - 1]);
        return 1;
    }
    char *q = sl_url_encode_query(id);
    char *path = sl_xasprintf("/v1/sort?uuid=%s", q);
    free(q);
    struct cli_resp r;
    cli_req("DELETE", path, NULL, NULL, 0, &r);
    free(path);
    int rc = 0;
    if (r.status != 200)
        rc = cli_fail(&r, "remove the job");
    else
        printf("Removed %s\n", id);
    cli_resp_free(&r);
    return rc;
}

int cmd_job(int argc, char **argv)
{
    static const struct cli_verb verbs[] = { { "show", job_show, NULL }, { "ls", job_show, NULL }, { "wait", job_wait, NULL },
                                             { "stop", job_stop, NULL }, { "start", job_start, NULL },
                                             { "rm", job_rm, NULL } };
    return cli_run_verb("job", verbs, SL_ARRAY_SIZE(verbs), argc, argv, false);
}

static char *strip_node(const char *s)
{
    /* accept "t[abc]" as well as "abc" */
    const char *b = strchr(s, '[');
    const char *e = b ? strchr(b, ']') : NULL;
    if (b && e)
        return sl_xstrndup(b + 1, (size_t)(e - b - 1));
    return sl_xstrdup(s);
}

/* shale storage resilver [TARGET], shale job start resilver [TARGET] */
int cli_resilver_start(const struct opts *o, const char *target)
{
    json_t *v = json_pack("{s:s}", "Kind", "resilver");
    if (target) {
        char *sid = strip_node(target);
        json_object_set_new(v, "DaemonID", json_string(sid));
        free(sid);
    }
    return cluster_start(o, v, "start resilver");
}

/* cluster remote-attach ALIAS=URL | remote-detach ALIAS */
static int remote_cluster(int argc, char **argv, bool attach)
{
    struct opts o;
    const char *path = attach ? "cluster remote-attach" : "cluster remote-detach";
    if (cli_opts_min(&o, path, argc, argv, 1))
        return 1;
    const char *eq = strchr(o.argv[0], '=');
    if (attach && (!eq || eq == o.argv[0] || !eq[1])) {
        fprintf(stderr, "Error: \"%s\": write the remote cluster as ALIAS=URL (e.g. lake=http://10.0.0.5:8080)\n",
                o.argv[0]);
        return 1;
    }
    char *alias = attach ? sl_xstrndup(o.argv[0], (size_t)(eq - o.argv[0])) : sl_xstrdup(o.argv[0]);
    char *ha = sl_xasprintf("Ais-Remote-Ais-Alias: %s", alias);
    char *hu = attach ? sl_xasprintf("Ais-Remote-Ais-Url: %s", eq + 1) : NULL;
    const char *hdrs[] = { ha, hu, NULL };
    struct cli_resp r;
    cli_req_h("PUT", attach ? "/v1/cluster/attach?what=remote" : "/v1/cluster/detach?what=remote", hdrs, NULL, 0,
              &r);
    int rc = r.status == 200 ? 0 : cli_fail(&r, NULL);
    if (!rc)
        printf(attach ? "Remote cluster \"%s\" attached (%s)\n" : "Remote cluster \"%s\" detached%s\n", alias,
               attach ? eq + 1 : "");
    cli_resp_free(&r);
    free(ha);
    free(hu);
    free(alias);
    return rc;
}

/* shale cluster lost [clear [NODE]]: objects lost with targets removed by force */
static int cluster_lost(int argc, char **argv)
{
    struct opts o;
    bool clear = argc >= 1 && !strcmp(argv[0], "clear");
    const char *path = clear ? "cluster lost clear" : "cluster lost";
    if (cli_opts(&o, path, argc - (clear ? 1 : 0), argv + (clear ? 1 : 0)) < 0)
        return 1;
    if (clear) {
        struct cli_resp r;
        char *sid = o.argc ? strip_node(o.argv[0]) : sl_xstrdup("");
        cli_act("PUT", "/v1/cluster", "clear-lost", "", json_pack("{s:s}", "sid", sid), &r);
        int rc = r.status == 200 ? 0 : cli_fail(&r, NULL);
        if (!rc)
            printf("Loss acknowledged: the record of %s%s%s is cleared; listings of its buckets work again\n",
                   sid[0] ? "t[" : "every target", sid, sid[0] ? "]" : "");
        cli_resp_free(&r);
        free(sid);
        return rc;
    }
    if (o.argc)
        return cli_usage(path);
    json_t *j;
    int rc = cli_get_json("/v1/cluster?what=lost", NULL, &j);
    if (rc)
        return rc;
    json_t *ts = json_object_get(json_object_get(j, "lostmd"), "targets");
    if (opt_bool(&o, "json")) {
        char *s = json_dumps(ts ? ts : json_object(), JSON_INDENT(2) | JSON_SORT_KEYS);
        printf("%s\n", s);
        free(s);
    } else if (!json_object_size(ts)) {
        printf("No objects are recorded as lost\n");
    } else {
        printf("TARGET\tREMOVED BY\tBUCKET\tOBJECTS\n");
        const char *tid, *bn;
        json_t *t, *c;
        json_object_foreach(ts, tid, t) {
            json_object_foreach(json_object_get(t, "buckets"), bn, c) {
                long long n = (long long)json_integer_value(json_object_get(c, "n"));
                char cnt[32];
                snprintf(cnt, sizeof(cnt), "%lld", n);
                printf("t[%s]\t%s\tais://%s\t%s\n", tid, json_string_value(json_object_get(t, "action")), bn,
                       n < 0 ? "unknown" : cnt);
            }
        }
    }
    json_decref(j);
    return 0;
}

int cmd_cluster(int argc, char **argv)
{
    if (argc < 1)
        return cli_usage("cluster");
    if (!strcmp(argv[0], "lost"))
        return cluster_lost(argc - 1, argv + 1);
    int more = cli_cluster_more(argv[0], argc - 1, argv + 1);
    if (more != -1)
        return more;
    if (!strcmp(argv[0], "set-primary")) {
        struct opts so;
        if (cli_opts_min(&so, "cluster set-primary", argc - 1, argv + 1, 1))
            return 1;
        char *sid = strip_node(so.argv[0]);
        char *pq = sl_xasprintf("/v1/cluster/proxy/%s", sid);
        struct cli_resp r;
        cli_req("PUT", pq, NULL, NULL, 0, &r);
        int rc = r.status == 200 ? 0 : cli_fail(&r, NULL);
        if (!rc)
            printf("p[%s] is the primary now\n", sid);
        cli_resp_free(&r);
        free(pq);
        free(sid);
        return rc;
    }
    if (!strcmp(argv[0], "remote-attach") || !strcmp(argv[0], "remote-detach"))
        return remote_cluster(argc - 1, argv + 1, !strcmp(argv[0], "remote-attach"));
    bool maint = !strcmp(argv[0], "maintenance");
    if (!maint && strcmp(argv[0], "decommission")) {
        fprintf(stderr, "Error: unknown command \"cluster %s\" (maintenance, decommission, lost, set-primary, "
                "remote-attach, "
                "remote-detach)\n", argv[0]);
        return 1;
    }
    struct opts o;
    const char *path = maint ? "cluster maintenance" : "cluster decommission";
    if (cli_opts(&o, path, argc - 1, argv + 1) < 0)
        return 1;
    const char *action = NULL;
    const char *node = NULL;
    if (maint && o.argc == 2) {
        action = !strcmp(o.argv[0], "start") ? "start-maintenance" : !strcmp(o.argv[0], "stop") ? "stop-maintenance"
                                                                                               : NULL;
        node = o.argv[1];
    } else if (!maint && o.argc == 1) {
        action = "decommission-node";
        node = o.argv[0];
    }
    if (!action)
        return cli_usage(path);
    char *sid = strip_node(node);
    json_t *v = json_pack("{s:s,s:b,s:b}", "sid", sid, "no_shutdown", opt_bool(&o, "no-shutdown"), "skip_rebalance",
                          opt_bool(&o, "skip-rebalance"));
    if (!maint && opt_bool(&o, "force"))
        json_object_set_new(v, "force", json_true());
    struct cli_resp r;
    cli_act("PUT", "/v1/cluster", action, "", v, &r);
    int rc = 0;
    if (r.status != 200) {
        rc = cli_fail(&r, NULL);
    } else {
        char *reb = sl_xstrndup(r.body.p ? r.body.p : "", r.body.len);
        printf("%s %s%s%s\n", action, sid, reb[0] ? ": rebalance " : "", reb);
        if (reb[0] && opt_bool(&o, "wait"))
            rc = cli_job_wait(reb, 3600LL * 1000000000LL, false);
        free(reb);
    }
    cli_resp_free(&r);
    free(sid);
    return rc;
}

/* shale start ... = shale job start ...; shale dsort ... = shale job start dsort ... */
int cmd_start(int argc, char **argv)
{
    char **v = sl_xcalloc((size_t)argc + 2, sizeof(char *));
    v[0] = "start";
    for (int i = 0; i < argc; i++)
        v[i + 1] = argv[i];
    int rc = cmd_job(argc + 1, v);
    free(v);
    return rc;
}

int cmd_dsort(int argc, char **argv)
{
    char **v = sl_xcalloc((size_t)argc + 3, sizeof(char *));
    v[0] = "start";
    v[1] = "dsort";
    for (int i = 0; i < argc; i++)
        v[i + 2] = argv[i];
    int rc = cmd_job(argc + 2, v);
    free(v);
    return rc;
}
