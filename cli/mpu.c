/* SPDX-License-Identifier: MIT
 * mpu.c: `shale object mpu create|put-part|complete|abort`, the native multipart upload as ais's verbs.
 */
#include "cli.h"

#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

/* ---- object mpu create|put-part|complete|abort: the native multipart upload, as ais's verbs ---- */

static int mpu_target(const char *arg, struct uri *u)
{
    if (uri_parse(arg, u, true) < 0)
        return -1;
    if (!u->obj[0] || u->trailing_slash) {
        fprintf(stderr, "Error: \"%s\": name one object as ais://BUCKET/OBJECT\n", arg);
        uri_free(u);
        return -1;
    }
    return 0;
}

static bool upload_id_ok(const char *id)
{
    if (!*id || strlen(id) > 128)
        return false;
    for (const char *p = id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') || *p == '-' ||
              *p == '_' || *p == '.'))
            return false;
    return true;
}

static int mpu_create(int argc, char **argv)
{
    struct opts o;
    if (cli_opts_min(&o, "object mpu create", argc, argv, 1))
        return 1;
    struct uri u;
    if (mpu_target(o.argv[0], &u) < 0)
        return 1;
    char *op = uri_obj_path(&u, u.obj);
    char *pq = sl_xasprintf("%s%s", op, uri_query(&u));
    struct cli_resp r;
    cli_act("POST", pq, "mpt-upload", NULL, NULL, &r);
    int rc = 0;
    if (r.status != 200) {
        rc = cli_fail(&r, "object mpu create");
    } else {
        sl_buf_addc(&r.body, 0);
        printf("%s\n", r.body.p);
        fprintf(stderr, "Upload %s of %s started: `shale object mpu put-part %s %s 1 FILE`, then `complete`\n",
                r.body.p, o.argv[0], o.argv[0], r.body.p);
    }
    cli_resp_free(&r);
    free(pq);
    free(op);
    uri_free(&u);
    return rc;
}

static int mpu_put(int argc, char **argv)
{
    struct opts o;
    if (cli_opts_min(&o, "object mpu put-part", argc, argv, 4))
        return 1;
    struct uri u;
    if (mpu_target(o.argv[0], &u) < 0)
        return 1;
    int rc = 1;
    char *e;
    long pn = strtol(o.argv[2], &e, 10);
    if (!upload_id_ok(o.argv[1]))
        fprintf(stderr, "Error: \"%s\" is not an upload id (`shale object mpu create` prints one)\n", o.argv[1]);
    else if (!strcmp(o.argv[3], "-"))
        fprintf(stderr, "Error: a part is sent with its length: name a file, not standard input (\"-\")\n");
    else if (!*o.argv[2] || *e || pn < 1 || pn > 10000)
        fprintf(stderr, "Error: part number \"%s\": a whole number from 1 to 10000\n", o.argv[2]);
    else {
        char *xq = sl_xasprintf("&uploadId=%s&partNumber=%ld", o.argv[1], pn);
        char err[1024] = "";
        CURL *c = curl_easy_init();
        if (cli_put_one_q(c, &u, o.argv[3], u.obj, xq, NULL, err, sizeof(err)) < 0) {
            fprintf(stderr, "Error: object mpu put-part %s part %ld: %s\n", o.argv[0], pn, err);
        } else {
            printf("Part %ld of upload %s stored\n", pn, o.argv[1]);
            rc = 0;
        }
        curl_easy_cleanup(c);
        free(xq);
    }
    uri_free(&u);
    return rc;
}

/* "1,2,5-7" -> the part numbers, ascending and once each (n; -1 when malformed) */
static int parse_parts(const char *s, long **out)
{
    long *v = NULL;
    int n = 0;
    const char *p = s;
    while (*p) {
        char *e;
        long a = strtol(p, &e, 10), b = a;
        if (e == p || a < 1 || a > 10000)
            goto bad;
        if (*e == '-') {
            const char *q = e + 1;
            b = strtol(q, &e, 10);
            if (e == q || b < a || b > 10000)
                goto bad;
        }
        for (long x = a; x <= b; x++) {
            for (int i = 0; i < n; i++)
                if (v[i] == x)
                    goto bad;
            v = sl_xrealloc(v, (size_t)(n + 1) * sizeof(*v));
            v[n++] = x;
        }
        if (*e == ',')
            e++;
        else if (*e)
            goto bad;
        p = e;
    }
    if (!n)
        goto bad;
    *out = v;
    return n;
bad:
    free(v);
    return -1;
}

static int mpu_complete(int argc, char **argv)
{
    struct opts o;
    if (cli_opts_min(&o, "object mpu complete", argc, argv, 3))
        return 1;
    struct uri u;
    if (mpu_target(o.argv[0], &u) < 0)
        return 1;
    long *parts = NULL;
    int n = parse_parts(o.argv[2], &parts), rc = 1;
    if (!upload_id_ok(o.argv[1])) {
        fprintf(stderr, "Error: \"%s\" is not an upload id (`shale object mpu create` prints one)\n", o.argv[1]);
    } else if (n < 0) {
        fprintf(stderr, "Error: parts \"%s\": part numbers from 1 to 10000, each once, as 1,2,3 or 1-3\n",
                o.argv[2]);
    } else {
        json_t *arr = json_array();
        for (int i = 0; i < n; i++)
            json_array_append_new(arr, json_pack("{s:I,s:s}", "part-number", (json_int_t)parts[i], "etag", ""));
        char *op = uri_obj_path(&u, u.obj);
        char *pq = sl_xasprintf("%s%s&uploadId=%s", op, uri_query(&u), o.argv[1]);
        struct cli_resp r;
        cli_act("POST", pq, "mpt-complete", NULL, arr, &r);
        if (r.status != 200) {
            rc = cli_fail(&r, "object mpu complete");
        } else {
            printf("%s stored from %d part%s of upload %s\n", o.argv[0], n, n == 1 ? "" : "s", o.argv[1]);
            rc = 0;
        }
        cli_resp_free(&r);
        free(pq);
        free(op);
    }
    free(parts);
    uri_free(&u);
    return rc;
}

static int mpu_abort(int argc, char **argv)
{
    struct opts o;
    if (cli_opts_min(&o, "object mpu abort", argc, argv, 2))
        return 1;
    struct uri u;
    if (mpu_target(o.argv[0], &u) < 0)
        return 1;
    int rc = 1;
    if (!upload_id_ok(o.argv[1])) {
        fprintf(stderr, "Error: \"%s\" is not an upload id (`shale object mpu create` prints one)\n", o.argv[1]);
    } else {
        char *op = uri_obj_path(&u, u.obj);
        char *pq = sl_xasprintf("%s%s&uploadId=%s", op, uri_query(&u), o.argv[1]);
        struct cli_resp r;
        cli_act("DELETE", pq, "mpt-abort", NULL, NULL, &r);
        if (r.status != 200) {
            rc = cli_fail(&r, "object mpu abort");
        } else {
            printf("Upload %s of %s aborted (its parts are gone)\n", o.argv[1], o.argv[0]);
            rc = 0;
        }
        cli_resp_free(&r);
        free(pq);
        free(op);
    }
    uri_free(&u);
    return rc;
}

int cli_object_mpu(int argc, char **argv)
{
    if (argc < 1)
        return cli_usage("object mpu");
    if (!strcmp(argv[0], "create"))
        return mpu_create(argc - 1, argv + 1);
    if (!strcmp(argv[0], "put-part") || !strcmp(argv[0], "put"))
        return mpu_put(argc - 1, argv + 1);
    if (!strcmp(argv[0], "complete"))
        return mpu_complete(argc - 1, argv + 1);
    if (!strcmp(argv[0], "abort"))
        return mpu_abort(argc - 1, argv + 1);
    fprintf(stderr, "Error: unknown command \"object mpu %s\" (create, put-part, complete, abort)\n", argv[0]);
    return 1;
}
