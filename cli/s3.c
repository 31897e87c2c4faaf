/* SPDX-License-Identifier: MIT
 * s3.c: `shale s3 key add|ls|rm` and `shale s3 verify on|off`: the access
 * keys of the S3 front end and whether it verifies signatures
 * (server/api/s3auth.c).
 */
#include "cli.h"
#include "jsonx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int key_add(struct opts *o)
{
    if (o->argc != 1)
        return cli_usage("s3 key add");
    char secret[41];
    const char *s = opt_str(o, "secret");
    if (!s) { /* 40 characters from the kernel's random source, as AWS's secrets look */
        if (cli_random_text(secret, 40) < 0) {
            fprintf(stderr, "Error: cannot read /dev/urandom to make a secret; pass --secret\n");
            return 1;
        }
        s = secret;
    }
    json_t *b = json_pack("{s:s,s:s,s:s?}", "access_key", o->argv[0], "secret", s, "user", opt_str(o, "user"));
    char *body = json_dumps(b, JSON_COMPACT);
    json_decref(b);
    struct cli_resp r;
    cli_req("PUT", "/v1/s3/keys", "application/json", body, strlen(body), &r);
    free(body);
    int rc = 0;
    if (r.status != 200) {
        rc = cli_fail(&r, NULL);
    } else {
        printf("S3 access key %s added\n", o->argv[0]);
        if (!opt_str(o, "secret"))
            printf("secret: %s\n(shown once: keep it; `shale s3 key ls` lists access keys only)\n", s);
    }
    cli_resp_free(&r);
    return rc;
}

static int key_ls(struct opts *o)
{
    (void)o;
    json_t *j;
    int rc = cli_get_json("/v1/s3/keys", NULL, &j);
    if (rc)
        return rc;
    if (cli_json) {
        char *s = json_dumps(j, JSON_INDENT(2));
        printf("%s\n", s);
        free(s);
    } else {
        if (!cli_no_headers)
            printf("ACCESS KEY\tCREATED\tUSER\n");
        size_t i;
        json_t *k;
        json_array_foreach(json_object_get(j, "keys"), i, k)
            printf("%s\t%s\t%s\n", sl_json_str(k, "access_key", ""), sl_json_str(k, "created", ""),
                   *sl_json_str(k, "user", "") ? sl_json_str(k, "user", "") : "-");
        if (!cli_no_headers)
            printf("Signature verification: %s\n", json_is_true(json_object_get(j, "verify")) ? "on" : "off");
    }
    json_decref(j);
    return 0;
}

static int key_rm(struct opts *o)
{
    if (o->argc < 1)
        return cli_usage("s3 key rm");
    int rc = 0;
    for (int i = 0; i < o->argc; i++) {
        char *e = sl_url_encode_path(o->argv[i], strlen(o->argv[i]));
        char *pq = sl_xasprintf("/v1/s3/keys/%s", e);
        free(e);
        struct cli_resp r;
        cli_req("DELETE", pq, NULL, NULL, 0, &r);
        free(pq);
        if (r.status != 200)
            rc = cli_fail(&r, NULL);
        else
            printf("S3 access key %s removed\n", o->argv[i]);
        cli_resp_free(&r);
    }
    return rc;
}

static int verify(struct opts *o)
{
    if (o->argc != 1 || (strcmp(o->argv[0], "on") && strcmp(o->argv[0], "off"))) {
        fprintf(stderr, "Error: expected `shale s3 verify on` or `shale s3 verify off`\n");
        return 1;
    }
    bool on = !strcmp(o->argv[0], "on");
    const char *body = on ? "{\"verify\":true}" : "{\"verify\":false}";
    struct cli_resp r;
    cli_req("PUT", "/v1/s3/verify", "application/json", body, strlen(body), &r);
    int rc = 0;
    if (r.status != 200)
        rc = cli_fail(&r, NULL);
    else
        printf("S3 signature verification is %s\n", on ? "on: requests must be signed with a key of `shale s3 key "
               "ls`" : "off: any credentials are accepted");
    cli_resp_free(&r);
    return rc;
}

int cmd_s3(int argc, char **argv)
{
    static const struct cli_verb keys[] = { { "add", key_add, NULL }, { "ls", key_ls, NULL }, { "rm", key_rm, NULL } };
    static const struct cli_verb top[] = { { "verify", verify, NULL } };
    if (argc >= 1 && !strcmp(argv[0], "key"))
        return cli_run_verb("s3 key", keys, SL_ARRAY_SIZE(keys), argc - 1, argv + 1, false);
    if (argc >= 1 && strcmp(argv[0], "verify")) {
        fprintf(stderr, "Error: unknown command \"s3 %s\" (key, verify; `shale s3 --help`)\n", argv[0]);
        return 1;
    }
    return cli_run_verb("s3", top, SL_ARRAY_SIZE(top), argc, argv, false);
}
