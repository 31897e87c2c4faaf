/* SPDX-License-Identifier: MIT
 * copy.c: shale bucket cp | cp | object cp, as `ais bucket cp`: a whole
 * bucket or a prefix of it (copy-bck), the objects a list or a template
 * names (copy-listrange), or one object under a name of its own (PUT
 * ?object_to=). The destination bucket is created when missing.
 */
#include "cli.h"
#include "jsonx.h"
#include "meta.h"

#include <stdlib.h>
#include <string.h>

/* "ais://b" for messages */
static void bck_name(const struct uri *u, char *out, size_t n)
{
    snprintf(out, n, "%s://%s", sl_provider_scheme(u->provider), u->bucket);
}

/* HEAD the bucket; create it when it does not exist (as the copy jobs do) */
static int ensure_bucket(const struct uri *u)
{
    char *pq = sl_xasprintf("/v1/buckets/%s%s", u->bucket, uri_query(u));
    struct cli_resp r;
    cli_req("HEAD", pq, NULL, NULL, 0, &r);
    int rc = 0;
    if (r.status == 404) {
        cli_resp_free(&r);
        cli_act("POST", pq, "create-bck", "", NULL, &r);
        if (r.status != 200)
            rc = cli_fail(&r, "creating the destination bucket");
        else
            fprintf(stderr, "\"%s://%s\" bucket created\n", sl_provider_scheme(u->provider), u->bucket);
    } else if (r.status != 200) {
        rc = cli_fail(&r, NULL);
    }
    cli_resp_free(&r);
    free(pq);
    return rc;
}

/* one object, at once: PUT /v1/objects/SRC/OBJ?object_to=ais/@#/DST/NAME */
static int copy_object(const struct opts *o, const struct uri *s, const struct uri *d, const char *prepend)
{
    char sb[300], db[300];
    if (opt_bool(o, "latest") || opt_bool(o, "sync")) {
        fprintf(stderr, "Error: --%s applies to copying a bucket or a selection of it (a job); a single object is "
                        "copied at once from the cluster's copy: drop the flag, or select it with --list NAME\n",
                opt_bool(o, "latest") ? "latest" : "sync");
        return 1;
    }
    bck_name(s, sb, sizeof(sb));
    bck_name(d, db, sizeof(db));
    /* DST/NAME names the copy; DST/DIR/ (or --prepend) puts it under a prefix */
    char *name = d->obj[0] && !d->trailing_slash ? sl_xstrdup(d->obj)
                                                 : sl_xasprintf("%s%s%s", d->obj, prepend ? prepend : "", s->obj);
    char *p = uri_obj_path(s, s->obj);
    int rc = 0;
    struct cli_resp r;
    if (opt_bool(o, "dry-run")) {
        char *pq = sl_xasprintf("%s%s", p, uri_query(s));
        cli_req("HEAD", pq, NULL, NULL, 0, &r);
        free(pq);
        char cl[32] = "0", sz[32];
        if (r.status != 200) {
            rc = cli_fail(&r, NULL);
        } else {
            cli_resp_header(&r, "Content-Length", cl, sizeof(cl));
            sl_format_size(strtoull(cl, NULL, 10), sz, sizeof(sz));
            printf("[DRY RUN] No modifications on the cluster\n");
            printf("%s/%s (%s) would have been copied to %s/%s\n", sb, s->obj, sz, db, name);
        }
        cli_resp_free(&r);
    } else if ((rc = ensure_bucket(d)) == 0) {
        char *to = sl_xasprintf("%s/@#/%s/%s", d->provider, d->bucket, name);
        char *eto = sl_url_encode_query(to);
        char *pq = sl_xasprintf("%s%s&object_to=%s", p, uri_query(s), eto);
        cli_req("PUT", pq, NULL, "", 0, &r);
        if (r.status != 200)
            rc = cli_fail(&r, "copy");
        else
            printf("Copied %s/%s => %s/%s\n", sb, s->obj, db, name);
        cli_resp_free(&r);
        free(pq);
        free(eto);
        free(to);
    }
    free(p);
    free(name);
    return rc;
}

/* a copy-bck (whole bucket or a prefix) or copy-listrange (list, template) job */
static int copy_job(const struct opts *o, const struct uri *s, const struct uri *d, const char *list,
                    const char *tmpl, const char *prefix, const char *prepend)
{
    int64_t tmo;
    if (cli_timeout(o, &tmo) < 0)
        return 1;
    json_t *v = json_object();
    if (prepend && *prepend)
        json_object_set_new(v, "prepend", json_string(prepend));
    json_object_set_new(v, "dry_run", json_boolean(opt_bool(o, "dry-run")));
    json_object_set_new(v, "coer", json_boolean(opt_bool(o, "cont-on-err")));
    json_object_set_new(v, "non-recurs", json_boolean(opt_bool(o, "nr")));
    json_object_set_new(v, "num-workers", json_integer(opt_int(o, "num-workers", 0)));
    if (opt_bool(o, "latest"))
        json_object_set_new(v, "latest-ver", json_true());
    if (opt_bool(o, "sync"))
        json_object_set_new(v, "synchronize", json_true());
    const char *action;
    char *pq;
    if (list || tmpl) {
        action = "copy-listrange";
        if (list)
            json_object_set_new(v, "objnames", cli_names(list));
        else
            json_object_set_new(v, "template", json_string(tmpl));
        json_object_set_new(v, "tobck", json_pack("{s:s,s:s}", "name", d->bucket, "provider", d->provider));
        pq = sl_xasprintf("/v1/buckets/%s%s", s->bucket, uri_query(s));
    } else {
        action = "copy-bck";
        json_object_set_new(v, "prefix", json_string(prefix ? prefix : ""));
        pq = sl_xasprintf("/v1/buckets/%s%s&bck_to=%s/@%%23/%s/", s->bucket, uri_query(s), d->provider, d->bucket);
    }
    char *ids = cli_act_id("POST", pq, action, v, "copy");
    free(pq);
    if (!ids)
        return 1;
    char sb[400], db[400];
    bck_name(s, sb, sizeof(sb));
    bck_name(d, db, sizeof(db));
    if (list || tmpl || (prefix && *prefix))
        snprintf(sb + strlen(sb), sizeof(sb) - strlen(sb), " (%s %s)", list ? "list" : tmpl ? "template" : "prefix",
                 list ? list : tmpl ? tmpl : prefix);
    if (prepend && *prepend)
        snprintf(db + strlen(db), sizeof(db) - strlen(db), "/%s", prepend);
    int rc = 0;
    if (!opt_bool(o, "wait") && !opt_bool(o, "dry-run")) {
        fprintf(stderr, "Copying %s => %s\n", sb, db);
        cli_job_started(ids);
    } else {
        /* a copy may run as several jobs (comma-separated ids) */
        char *save = NULL;
        char where[900], would[900];
        snprintf(where, sizeof(where), "from %s to %s", sb, db);
        snprintf(would, sizeof(would), "copied from %s to %s", sb, db);
        for (char *id = strtok_r(ids, ",", &save); id; id = strtok_r(NULL, ",", &save)) {
            uint64_t failed;
            size_t shown;
            int r = cli_job_report(id, tmo, opt_bool(o, "progress"), opt_bool(o, "dry-run"), "Copied", where, would,
                                   &failed, &shown);
            rc |= r || (failed && !opt_bool(o, "cont-on-err"));
        }
    }
    free(ids);
    return rc;
}

static int copy_run(const struct opts *o, const char *path)
{
    if (o->argc != 2)
        return cli_usage(path);
    struct uri s, d;
    if (uri_parse(o->argv[0], &s, true) < 0)
        return 1;
    if (uri_parse(o->argv[1], &d, true) < 0) {
        uri_free(&s);
        return 1;
    }
    const char *list = opt_str(o, "list"), *tmpl = opt_str(o, "template"), *prefix = opt_str(o, "prefix");
    const char *prepend = opt_str(o, "prepend");
    int rc = 0, nsel = !!list + !!tmpl + !!prefix;
    bool embedded = s.obj[0] != 0;
    if (nsel > 1 || (nsel && embedded)) {
        fprintf(stderr, "Error: name the objects to copy one way: ais://SRC/OBJECT, a template in SRC, --list, "
                "--template or --prefix (`shale %s --help`)\n", path);
        rc = 1;
    } else if (prepend && d.obj[0]) {
        fprintf(stderr, "Error: \"%s\" already names where the copies go; drop --prepend or the destination's "
                "object part\n", o->argv[1]);
        rc = 1;
    } else if (strcmp(d.provider, "ais")) {
        fprintf(stderr, "Error: \"%s\": copies go into ais:// buckets only\n", o->argv[1]);
        rc = 1;
    } else if (embedded && strchr(s.obj, '{')) {
        rc = copy_job(o, &s, &d, NULL, s.obj, NULL, d.obj[0] ? d.obj : prepend);
    } else if (embedded && s.trailing_slash) {
        rc = copy_job(o, &s, &d, NULL, NULL, s.obj, d.obj[0] ? d.obj : prepend);
    } else if (embedded) {
        rc = copy_object(o, &s, &d, prepend);
    } else {
        rc = copy_job(o, &s, &d, list, tmpl, prefix, d.obj[0] ? d.obj : prepend);
    }
    uri_free(&s);
    uri_free(&d);
    return rc;
}

int cli_cp(const char *path, int argc, char **argv)
{
    struct opts o;
    if (cli_opts(&o, path, argc, argv) < 0)
        return 1;
    return copy_run(&o, path);
}

int cmd_cp(int argc, char **argv)
{
    return cli_cp("cp", argc, argv);
}
