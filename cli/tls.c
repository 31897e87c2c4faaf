/* SPDX-License-Identifier: MIT
 * tls.c: shale tls load-certificate|show [NODE] (ais tls ..., ais show tls):
 * every node (or NODE) reads its certificate files again and serves the
 * new certificate to the next connections (PUT /v1/cluster/load-x509[/ID]),
 * and what each node's certificate says (GET /v1/cluster?what=tls_certificate).
 */
#include "cli.h"
#include "jsonx.h"

#include <stdlib.h>
#include <string.h>

/* NODE as p[ID], t[ID] or ID -> ID (new) */
static char *tls_node_id(const char *s)
{
    if ((s[0] == 'p' || s[0] == 't') && s[1] == '[') {
        size_t n = strcspn(s + 2, "]");
        return sl_xasprintf("%.*s", (int)n, s + 2);
    }
    return sl_xstrdup(s);
}

/* the keys in the order an operator reads them (any others after) */
static const char *const order[] = { "subject", "issuer", "serial-number", "serial-number-hex", "not-before",
                                     "not-after", "subject-alt-names", "public-key-algorithm", "public-key-bits",
                                     "signature-algorithm", "sha256-fingerprint", "certificate-file", "key-file",
                                     "loaded", "warning", "error" };

static bool ordered(const char *k)
{
    for (size_t i = 0; i < SL_ARRAY_SIZE(order); i++)
        if (!strcmp(order[i], k))
            return true;
    return false;
}

static void print_info(const char *id, json_t *info)
{
    printf("%s:\n", id);
    for (size_t i = 0; i < SL_ARRAY_SIZE(order); i++) {
        const char *v = sl_json_str(info, order[i], NULL);
        if (v)
            printf("  %-22s %s\n", order[i], v);
    }
    const char *k;
    json_t *v;
    json_object_foreach(info, k, v) if (!ordered(k) && json_is_string(v)) printf("  %-22s %s\n", k,
                                                                               json_string_value(v));
}

static int tls_show(struct opts *o)
{
    char *id = o->argc ? tls_node_id(o->argv[0]) : NULL;
    char *pq = id ? sl_xasprintf("/v1/cluster?what=tls_certificate&sid=%s", id)
                  : sl_xstrdup("/v1/cluster?what=tls_certificate");
    struct cli_resp r;
    cli_req("GET", pq, NULL, NULL, 0, &r);
    free(pq);
    free(id);
    if (r.status != 200) {
        int rc = cli_fail(&r, "tls show");
        cli_resp_free(&r);
        return rc;
    }
    json_t *j = cli_resp_json(&r);
    cli_resp_free(&r);
    if (!j) {
        fprintf(stderr, "Error: tls show: the gateway's answer is not JSON\n");
        return 1;
    }
    int rc = 0;
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v) if (sl_json_str(v, "error", NULL) && !sl_json_str(v, "serial-number", NULL)) rc = 1;
    if (cli_json) {
        cli_print_json(j);
    } else {
        bool first = true;
        json_object_foreach(j, k, v) {
            if (!first)
                printf("\n");
            first = false;
            if (rc && sl_json_str(v, "error", NULL) && !sl_json_str(v, "serial-number", NULL))
                printf("%s: %s\n", k, sl_json_str(v, "error", ""));
            else
                print_info(k, v);
        }
    }
    json_decref(j);
    return rc;
}

static int tls_load(struct opts *o)
{
    char *id = o->argc ? tls_node_id(o->argv[0]) : NULL;
    char *pq = id ? sl_xasprintf("/v1/cluster/load-x509/%s", id) : sl_xstrdup("/v1/cluster/load-x509");
    struct cli_resp r;
    cli_req("PUT", pq, NULL, NULL, 0, &r);
    free(pq);
    free(id);
    if (r.status != 200) {
        int rc = cli_fail(&r, "tls load-certificate");
        cli_resp_free(&r);
        return rc;
    }
    json_t *j = cli_resp_json(&r);
    cli_resp_free(&r);
    if (cli_json) {
        cli_print_json(j);
    } else {
        const char *k;
        json_t *v;
        json_object_foreach(j, k, v) printf("%s: loaded %s (serial %s, valid until %s)\n", k,
                                            sl_json_str(v, "certificate-file", "?"),
                                            sl_json_str(v, "serial-number", "?"), sl_json_str(v, "not-after", "?"));
    }
    json_decref(j);
    return 0;
}

/* tls validate-certificates: every node's certificate (GET /v1/cluster?what=tls_certificate): valid now and
 * not about to expire (the node's own error and warning), and whether they are one certificate, or at least have
 * one issuer. 1 when a node has none that is valid, or the issuers differ. */
static int tls_validate(struct opts *o)
{
    (void)o;
    struct cli_resp r;
    cli_req("GET", "/v1/cluster?what=tls_certificate", NULL, NULL, 0, &r);
    if (r.status != 200) {
        int rc = cli_fail(&r, "tls validate-certificates");
        cli_resp_free(&r);
        return rc;
    }
    json_t *j = cli_resp_json(&r);
    cli_resp_free(&r);
    if (!json_is_object(j)) {
        fprintf(stderr, "Error: tls validate-certificates: the gateway's answer is not JSON\n");
        json_decref(j);
        return 1;
    }
    int bad = 0, n = 0;
    const char *issuer = NULL, *fp = NULL;
    bool same_issuer = true, same_cert = true;
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v) {
        n++;
        const char *err = sl_json_str(v, "error", NULL), *warn = sl_json_str(v, "warning", NULL);
        if (err) {
            printf("%s: ERROR: %s\n", k, err);
            bad++;
            continue;
        }
        printf("%s: %s: valid until %s (issuer %s)\n", k, warn ? "WARNING" : "OK", sl_json_str(v, "not-after", "?"),
               sl_json_str(v, "issuer", "?"));
        if (warn)
            printf("%s: WARNING: %s\n", k, warn);
        const char *is = sl_json_str(v, "issuer", ""), *f = sl_json_str(v, "sha256-fingerprint", "");
        if (issuer && strcmp(issuer, is))
            same_issuer = false;
        if (fp && strcmp(fp, f))
            same_cert = false;
        if (!issuer)
            issuer = is;
        if (!fp)
            fp = f;
    }
    if (bad)
        printf("%d of %d nodes have no valid certificate: see `shale tls show NODE`, fix the files, then `shale tls "
               "load-certificate NODE`\n", bad, n);
    else if (!same_issuer)
        printf("The %d nodes' certificates have different issuers: clients that trust one CA cannot reach every "
               "node\n", n);
    else
        printf("All %d nodes have valid certificates, %s, issued by %s\n", n,
               same_cert ? "the same certificate" : "each its own", issuer ? issuer : "?");
    json_decref(j);
    return bad || !same_issuer ? 1 : 0;
}

int cmd_tls(int argc, char **argv)
{
    static const struct cli_verb verbs[] = { { "load-certificate", tls_load, NULL }, { "show", tls_show, NULL },
                                             { "validate-certificates", tls_validate, NULL } };
    return cli_run_verb("tls", verbs, SL_ARRAY_SIZE(verbs), argc, argv, false);
}
