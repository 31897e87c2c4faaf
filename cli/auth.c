/* SPDX-License-Identifier: MIT
 * auth.c: `shale auth ...` (users, roles, tokens of the cluster's AuthN,
 * server/api/authn.c), as `ais auth` does. `shale auth login` writes the
 * token every request of this CLI carries (read by cli_token in common.c)
 * to cli_token_path(), 0600, {"token": "..."} as AIStore's CLI writes it.
 */
#include "cli.h"
#include "jsonx.h"
#include "b64.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int cli_save_token(const char *path, const char *tok)
{
    char *dir = sl_xstrdup(path);
    char *sl = strrchr(dir, '/');
    if (sl && sl != dir) {
        *sl = 0;
        sl_mkdir_p(dir, 0700);
    }
    free(dir);
    json_t *j = json_pack("{s:s}", "token", tok);
    char *s = json_dumps(j, JSON_COMPACT);
    json_decref(j);
    int rc = cli_write_private(path, s, strlen(s));
    free(s);
    return rc;
}

/* the password: --password, else one line of standard input (a prompt on a terminal) */
static char *password(struct opts *o, const char *who)
{
    const char *p = opt_str(o, "password");
    if (p)
        return sl_xstrdup(p);
    if (isatty(0)) {
        fprintf(stderr, "Password for %s: ", who);
        fflush(stderr);
    }
    char line[1024];
    if (!fgets(line, sizeof(line), stdin)) {
        fprintf(stderr, "Error: no password (pass --password or give it on standard input)\n");
        return NULL;
    }
    line[strcspn(line, "\r\n")] = 0;
    return sl_xstrdup(line);
}

static int send_json(const char *method, const char *path, json_t *body, struct cli_resp *r)
{
    char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
    json_decref(body);
    int rc = cli_req(method, path, s ? "application/json" : NULL, s, s ? strlen(s) : 0, r);
    free(s);
    return rc;
}

static int done(struct cli_resp *r, const char *ok)
{
    int rc = 0;
    if (r->status != 200)
        rc = cli_fail(r, NULL);
    else if (ok)
        printf("%s\n", ok);
    cli_resp_free(r);
    return rc;
}

static int64_t duration(const char *s, int64_t dflt)
{
    int64_t ns;
    if (!s)
        return dflt;
    if (sl_parse_duration(s, &ns) < 0) {
        fprintf(stderr, "Error: invalid duration \"%s\" (e.g. 30m, 24h)\n", s);
        return -1;
    }
    return ns;
}

static int login(struct opts *o)
{
    if (o->argc != 1)
        return cli_usage("auth login");
    int64_t exp = duration(opt_str(o, "expire"), 0);
    if (exp < 0)
        return 1;
    char *pass = password(o, o->argv[0]);
    if (!pass)
        return 1;
    char *e = sl_url_encode_path(o->argv[0], strlen(o->argv[0]));
    char *path = sl_xasprintf("/v1/users/%s", e);
    free(e);
    struct cli_resp r;
    /* (expires_in null: the default, as AIStore's CLI sends it) */
    send_json("POST", path, json_pack("{s:s,s:o}", "password", pass, "expires_in",
                                      exp ? json_integer((json_int_t)exp) : json_null()), &r);
    free(path);
    free(pass);
    if (r.status != 200)
        return done(&r, NULL);
    json_t *j = cli_resp_json(&r);
    cli_resp_free(&r);
    const char *tok = json_string_value(json_object_get(j, "token"));
    const char *f = opt_str(o, "file");
    char *tp = f ? sl_xstrdup(f) : cli_token_path();
    int rc = 1;
    if (tok && tp && cli_save_token(tp, tok) == 0) {
        printf("Logged in as %s; token saved to %s\n", o->argv[0], tp);
        rc = 0;
    }
    free(tp);
    json_decref(j);
    return rc;
}

static int logout(struct opts *o)
{
    (void)o;
    char *tok = cli_token();
    char *tp = cli_token_path();
    int rc = 0;
    if (!tok) {
        printf("Not logged in\n");
    } else {
        struct cli_resp r;
        send_json("DELETE", "/v1/tokens", json_pack("{s:s}", "token", tok), &r);
        if (r.status != 200 && r.status != 401)
            rc = cli_fail(&r, NULL);
        cli_resp_free(&r);
        if (tp && !getenv("AIS_AUTHN_TOKEN"))
            unlink(tp);
        if (!rc)
            printf("Logged out (the token is revoked)\n");
    }
    free(tok);
    free(tp);
    return rc;
}

static json_t *str_array(char **v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_string(v[i]));
    return a;
}

static int user_set(struct opts *o, bool add)
{
    if (o->argc < 1)
        return cli_usage(add ? "auth add user" : "auth update user");
    json_t *b = json_object();
    if (add || opt_str(o, "password")) {
        char *pass = password(o, o->argv[0]);
        if (!pass) {
            json_decref(b);
            return 1;
        }
        json_object_set_new(b, "pass", json_string(pass)); /* (AIStore's key) */
        free(pass);
    }
    if (add || o->argc > 1)
        json_object_set_new(b, "roles", str_array(o->argv + 1, o->argc - 1));
    struct cli_resp r;
    char msg[256];
    if (add) {
        json_object_set_new(b, "id", json_string(o->argv[0]));
        send_json("POST", "/v1/users", b, &r);
        snprintf(msg, sizeof(msg), "User %s added", o->argv[0]);
    } else {
        char *e = sl_url_encode_path(o->argv[0], strlen(o->argv[0]));
        char *path = sl_xasprintf("/v1/users/%s", e);
        send_json("PUT", path, b, &r);
        free(e);
        free(path);
        snprintf(msg, sizeof(msg), "User %s updated", o->argv[0]);
    }
    return done(&r, msg);
}

static int add_user(struct opts *o)
{
    return user_set(o, true);
}

static int update_user(struct opts *o)
{
    return user_set(o, false);
}

static int rm_named(struct opts *o, const char *what, const char *usage)
{
    if (o->argc < 1)
        return cli_usage(usage);
    int rc = 0;
    for (int i = 0; i < o->argc; i++) {
        char *e = sl_url_encode_path(o->argv[i], strlen(o->argv[i]));
        char *path = sl_xasprintf("/v1/%ss/%s", what, e);
        free(e);
        struct cli_resp r;
        cli_req("DELETE", path, NULL, NULL, 0, &r);
        free(path);
        char msg[200];
        snprintf(msg, sizeof(msg), "%c%s %s removed", what[0] - 32, what + 1, o->argv[i]);
        rc |= done(&r, msg);
    }
    return rc;
}

static int rm_user(struct opts *o)
{
    return rm_named(o, "user", "auth rm user");
}

static int rm_role(struct opts *o)
{
    return rm_named(o, "role", "auth rm role");
}

/* auth add role ROLE PERM... / auth update role ROLE [PERM...] [--desc]: POST /v1/roles, or PUT
 * /v1/roles/ROLE (AuthN merges: the description when given, the permissions on the bucket or cluster named) */
static int role_set(struct opts *o, bool add)
{
    if (o->argc < (add ? 2 : 1))
        return cli_usage(add ? "auth add role" : "auth update role");
    if (!add && o->argc < 2 && !opt_str(o, "desc")) {
        fprintf(stderr, "Error: `shale auth update role %s` changes nothing: give PERMISSION... and/or --desc TEXT\n",
                o->argv[0]);
        return 1;
    }
    struct sl_buf perms;
    sl_buf_init(&perms);
    for (int i = 1; i < o->argc; i++)
        sl_buf_printf(&perms, "%s%s", i > 1 ? "," : "", o->argv[i]);
    json_t *b = json_pack("{s:s,s:s}", "name", o->argv[0], "desc", opt_str(o, "desc") ? opt_str(o, "desc") : "");
    const char *bck = opt_str(o, "bucket");
    if (o->argc < 2) {
        /* the description only */
    } else if (bck) {
        struct uri u;
        if (uri_parse(bck, &u, true) < 0) {
            json_decref(b);
            sl_buf_free(&perms);
            return 1;
        }
        json_object_set_new(b, "buckets", json_pack("[{s:{s:s,s:s},s:s}]", "bck", "name", u.bucket, "provider",
                                                    u.provider, "perm", perms.p));
        uri_free(&u);
    } else {
        const char *c = opt_str(o, "cluster");
        json_object_set_new(b, "clusters", json_pack("[{s:s,s:s}]", "id", c ? c : "", "perm", perms.p));
    }
    sl_buf_free(&perms);
    struct cli_resp r;
    char msg[200];
    if (add) {
        send_json("POST", "/v1/roles", b, &r);
        snprintf(msg, sizeof(msg), "Role %s added", o->argv[0]);
    } else {
        char *e = sl_url_encode_path(o->argv[0], strlen(o->argv[0]));
        char *path = sl_xasprintf("/v1/roles/%s", e);
        send_json("PUT", path, b, &r);
        free(e);
        free(path);
        snprintf(msg, sizeof(msg), "Role %s updated", o->argv[0]);
    }
    return done(&r, msg);
}

static int add_role(struct opts *o)
{
    return role_set(o, true);
}

static int update_role(struct opts *o)
{
    return role_set(o, false);
}

static int show(struct opts *o, bool users)
{
    const char *what = users ? "users" : "roles";
    char *path;
    if (o->argc) {
        char *e = sl_url_encode_path(o->argv[0], strlen(o->argv[0]));
        path = sl_xasprintf("/v1/%s/%s", what, e);
        free(e);
    } else {
        path = sl_xasprintf("/v1/%s", what);
    }
    struct cli_resp r;
    cli_req("GET", path, NULL, NULL, 0, &r);
    free(path);
    if (r.status != 200)
        return done(&r, NULL);
    json_t *j = cli_resp_json(&r);
    cli_resp_free(&r);
    if (cli_json) {
        char *s = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
        printf("%s\n", s);
        free(s);
        json_decref(j);
        return 0;
    }
    /* users: {NAME: {"id", "roles": [role objects]}} (one: the user);
     * roles: a list (one: the role), as AIStore's AuthN sends them */
    json_t *all = json_object();
    if (users && o->argc)
        json_object_set(all, o->argv[0], j);
    else if (users)
        json_object_update(all, j);
    else if (o->argc)
        json_object_set(all, o->argv[0], j);
    else {
        size_t i;
        json_t *x;
        json_array_foreach(j, i, x)
            json_object_set(all, sl_json_str(x, "name", "?"), x);
    }
    if (!cli_no_headers)
        printf(users ? "NAME\tROLES\n" : "ROLE\tDESCRIPTION\tADMIN\n");
    const char *k;
    json_t *v;
    json_object_foreach(all, k, v) {
        if (users) {
            printf("%s\t", k);
            size_t i;
            json_t *rn;
            json_array_foreach(json_object_get(v, "roles"), i, rn) {
                const char *n = json_is_string(rn) ? json_string_value(rn) : sl_json_str(rn, "name", "?");
                printf("%s%s", i ? "," : "", n);
            }
            printf("\n");
        } else {
            printf("%s\t%s\t%s\n", k, sl_json_str(v, "desc", ""),
                   json_is_true(json_object_get(v, "admin")) ? "yes" : "no");
        }
    }
    json_decref(all);
    json_decref(j);
    return 0;
}

static int show_user(struct opts *o)
{
    return show(o, true);
}

static int show_role(struct opts *o)
{
    return show(o, false);
}

static int rm_token(struct opts *o)
{
    if (o->argc != 1)
        return cli_usage("auth rm token");
    struct cli_resp r;
    send_json("DELETE", "/v1/tokens", json_pack("{s:s}", "token", o->argv[0]), &r);
    return done(&r, "Token revoked");
}

/* `auth whoami`: the saved (or AIS_AUTHN_TOKEN) token's claims, decoded
 * here (the signature is the cluster's to check): user, admin, the
 * clusters/buckets it is good for, expiry */
static int whoami(struct opts *o)
{
    char *tok = cli_token();
    if (!tok) {
        char *tp = cli_token_path();
        fprintf(stderr, "Error: not logged in: no token in AIS_AUTHN_TOKEN nor in %s (log in: shale auth login USER)\n",
                tp ? tp : "~/.config/shale/auth.token");
        free(tp);
        return 1;
    }
    const char *d1 = strchr(tok, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
    json_t *c = NULL;
    if (d2) {
        size_t n = (size_t)(d2 - d1 - 1);
        char *raw = sl_xmalloc(sl_b64_decoded_max(n) + 1);
        ssize_t k = sl_b64_decode(d1 + 1, n, SL_B64_URL, raw, NULL, 0);
        if (k >= 0)
            c = json_loadb(raw, (size_t)k, 0, NULL);
        free(raw);
    }
    free(tok);
    if (!json_is_object(c)) {
        json_decref(c);
        fprintf(stderr, "Error: the saved token is not a JWT (header.claims.signature): log in again with "
                        "shale auth login USER\n");
        return 1;
    }
    (void)o;
    if (cli_json) {
        cli_print_json(c);
        json_decref(c);
        return 0;
    }
    json_int_t exp = json_integer_value(json_object_get(c, "exp"));
    time_t now = time(NULL);
    char when[64] = "never";
    if (exp > 0) {
        struct tm tm;
        time_t t = (time_t)exp;
        gmtime_r(&t, &tm);
        strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
    printf("USER\t%s\n", sl_json_str(c, "sub", sl_json_str(c, "username", "")));
    printf("ADMIN\t%s\n", json_is_true(json_object_get(c, "admin")) ? "yes" : "no");
    json_t *cl = json_object_get(c, "clusters"), *bk = json_object_get(c, "buckets"), *e;
    size_t i;
    json_array_foreach(cl, i, e)
        printf("CLUSTER\t%s\t%s\n", sl_json_str(e, "id", ""), json_is_integer(json_object_get(e, "perm")) ?
               "" : sl_json_str(e, "perm", ""));
    json_array_foreach(bk, i, e)
        printf("BUCKET\t%s\n", sl_json_str(json_object_get(e, "bck"), "name", ""));
    printf("EXPIRES\t%s%s\n", when, exp > 0 && exp <= now ? " (expired: log in again)" : "");
    json_decref(c);
    return exp > 0 && exp <= now ? 1 : 0;
}

/* auth add cluster [ALIAS] URL [URL ...]: register a cluster with this AuthN (its uuid asked from the first URL) */
static int add_cluster(struct opts *o)
{
    int first = o->argc > 0 && strncmp(o->argv[0], "http://", 7) && strncmp(o->argv[0], "https://", 8) ? 1 : 0;
    const char *alias = first ? o->argv[0] : NULL;
    if (o->argc <= first)
        return cli_usage("auth add cluster");
    for (int i = first; i < o->argc; i++)
        if (strncmp(o->argv[i], "http://", 7) && strncmp(o->argv[i], "https://", 8)) {
            fprintf(stderr, "Error: \"%s\" is not a cluster URL (http://HOST:PORT or https://...)\n", o->argv[i]);
            return 1;
        }
    struct cli_resp r;
    cli_get_at(o->argv[first], "/v1/daemon?what=smap", NULL, &r);
    json_t *smap = r.status == 200 ? cli_resp_json(&r) : NULL;
    const char *uuid = json_string_value(json_object_get(smap, "uuid"));
    if (!uuid || !*uuid) {
        fprintf(stderr, "Error: cannot read the cluster's id from %s/v1/daemon?what=smap: %s\n", o->argv[first],
                r.status == 200 ? "no \"uuid\" in its map" : r.errmsg[0] ? r.errmsg : "failed");
        json_decref(smap);
        cli_resp_free(&r);
        return 1;
    }
    cli_resp_free(&r);
    json_t *urls = json_array();
    for (int i = first; i < o->argc; i++)
        json_array_append_new(urls, json_string(o->argv[i]));
    json_t *b = json_pack("{s:s,s:s,s:o}", "id", uuid, "alias", alias ? alias : "", "urls", urls);
    char msg[256];
    snprintf(msg, sizeof(msg), "Cluster %s%s%s%s registered", uuid, alias ? " (" : "", alias ? alias : "",
             alias ? ")" : "");
    json_decref(smap);
    send_json("POST", "/v1/clusters", b, &r);
    return done(&r, msg);
}

/* auth update cluster ID|ALIAS [NEW_ALIAS] URL... [--alias A]: PUT /v1/clusters/ID with the new URLs (and alias) */
static int update_cluster(struct opts *o)
{
    if (o->argc < 2)
        return cli_usage("auth update cluster");
    int first = 1;
    const char *alias = opt_str(o, "alias");
    if (!strstr(o->argv[1], "://") && !alias) {
        alias = o->argv[1]; /* ais's positional alias */
        first = 2;
    }
    if (o->argc <= first)
        return cli_usage("auth update cluster");
    for (int i = first; i < o->argc; i++)
        if (strncmp(o->argv[i], "http://", 7) && strncmp(o->argv[i], "https://", 8)) {
            fprintf(stderr, "Error: \"%s\" is not a cluster URL (http://HOST:PORT or https://...)\n", o->argv[i]);
            return 1;
        }
    /* the id of ID|ALIAS */
    char *e = sl_url_encode_path(o->argv[0], strlen(o->argv[0]));
    char *path = sl_xasprintf("/v1/clusters/%s", e);
    free(e);
    struct cli_resp r;
    cli_req("GET", path, NULL, NULL, 0, &r);
    free(path);
    if (r.status != 200)
        return done(&r, NULL);
    json_t *j = cli_resp_json(&r);
    cli_resp_free(&r);
    void *it = json_object_iter(json_object_get(j, "clusters"));
    if (!it) {
        fprintf(stderr, "Error: cluster \"%s\" is not registered (`shale auth show cluster` lists them)\n",
                o->argv[0]);
        json_decref(j);
        return 1;
    }
    char *id = sl_xstrdup(json_object_iter_key(it));
    json_decref(j);
    json_t *urls = json_array();
    for (int i = first; i < o->argc; i++)
        json_array_append_new(urls, json_string(o->argv[i]));
    json_t *b = json_pack("{s:s,s:s,s:o}", "id", id, "alias", alias ? alias : "", "urls", urls);
    e = sl_url_encode_path(id, strlen(id));
    path = sl_xasprintf("/v1/clusters/%s", e);
    free(e);
    send_json("PUT", path, b, &r);
    free(path);
    char msg[256];
    snprintf(msg, sizeof(msg), "Cluster %s updated", id);
    free(id);
    return done(&r, msg);
}

static int show_cluster(struct opts *o)
{
    char *path;
    if (o->argc) {
        char *e = sl_url_encode_path(o->argv[0], strlen(o->argv[0]));
        path = sl_xasprintf("/v1/clusters/%s", e);
        free(e);
    } else {
        path = sl_xstrdup("/v1/clusters");
    }
    struct cli_resp r;
    cli_req("GET", path, NULL, NULL, 0, &r);
    free(path);
    if (r.status != 200)
        return done(&r, NULL);
    json_t *j = cli_resp_json(&r);
    cli_resp_free(&r);
    if (cli_json) {
        char *s = json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS);
        printf("%s\n", s);
        free(s);
    } else {
        if (!cli_no_headers)
            printf("ID\tALIAS\tURLS\n");
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(j, "clusters"), k, v) {
            printf("%s\t%s\t", k, sl_json_str(v, "alias", ""));
            size_t i;
            json_t *u;
            json_array_foreach(json_object_get(v, "urls"), i, u) printf("%s%s", i ? "," : "", json_string_value(u));
            printf("\n");
        }
    }
    json_decref(j);
    return 0;
}

static int rm_cluster(struct opts *o)
{
    return rm_named(o, "cluster", "auth rm cluster");
}

/* ---- AuthN's configuration (GET/PUT /v1/daemon on AuthN's API) ---- */

static void flat_print(json_t *j, const char *prefix, const char *want)
{
    const char *k;
    json_t *v;
    json_object_foreach(j, k, v) {
        char *path = *prefix ? sl_xasprintf("%s.%s", prefix, k) : sl_xstrdup(k);
        if (json_is_object(v)) {
            flat_print(v, path, want);
        } else if (!want || sl_has_prefix(path, want)) {
            char *s = json_is_string(v) ? NULL : json_dumps(v, JSON_ENCODE_ANY);
            printf("%-24s %s\n", path, s ? s : json_string_value(v));
            free(s);
        }
        free(path);
    }
}

static int show_config(struct opts *o)
{
    struct cli_resp r;
    cli_req("GET", "/v1/daemon", NULL, NULL, 0, &r);
    if (r.status != 200)
        return done(&r, NULL);
    json_t *j = cli_resp_json(&r);
    cli_resp_free(&r);
    if (cli_json) {
        cli_print_json(j);
    } else {
        if (!cli_no_headers)
            printf("%-24s %s\n", "KEY", "VALUE");
        flat_print(j, "", o->argc ? o->argv[0] : NULL);
    }
    json_decref(j);
    return 0;
}

/* auth set config KEY=VALUE ... (or KEY VALUE): auth.secret, auth.expiration_time, log.level */
static int set_config(struct opts *o)
{
    if (o->argc < 1)
        return cli_usage("auth set config");
    json_t *body = json_object();
    for (int i = 0; i < o->argc; i++) {
        const char *a = o->argv[i], *eq = strchr(a, '=');
        char *key, *val;
        if (eq) {
            key = sl_xstrndup(a, (size_t)(eq - a));
            val = sl_xstrdup(eq + 1);
        } else if (i + 1 < o->argc && !strchr(o->argv[i + 1], '=')) {
            key = sl_xstrdup(a);
            val = sl_xstrdup(o->argv[++i]);
        } else {
            fprintf(stderr, "Error: \"%s\": give KEY=VALUE (e.g. expiration_time=30m)\n", a);
            json_decref(body);
            return 1;
        }
        const char *k = key, *sec = NULL;
        if (!strcmp(k, "secret") || !strcmp(k, "auth.secret"))
            sec = "auth", k = "secret";
        else if (!strcmp(k, "expiration_time") || !strcmp(k, "auth.expiration_time"))
            sec = "auth", k = "expiration_time";
        else if (!strcmp(k, "log.level") || !strcmp(k, "log_level"))
            sec = "log", k = "level";
        if (!sec) {
            fprintf(stderr, "Error: unknown AuthN config key \"%s\" (settable: auth.secret, auth.expiration_time, "
                    "log.level); nothing was changed\n", key);
            free(key);
            free(val);
            json_decref(body);
            return 1;
        }
        if (!strcmp(k, "expiration_time") && duration(val, 0) < 0) {
            free(key);
            free(val);
            json_decref(body);
            return 1;
        }
        json_t *s = json_object_get(body, sec);
        if (!s)
            json_object_set_new(body, sec, s = json_object());
        json_object_set_new(s, k, json_string(val));
        free(key);
        free(val);
    }
    struct cli_resp r;
    send_json("PUT", "/v1/daemon", body, &r);
    return done(&r, "AuthN config updated");
}

int cmd_auth(int argc, char **argv)
{
    static const struct cli_verb top[] = { { "login", login, NULL }, { "logout", logout, NULL },
                                           { "whoami", whoami, "auth whoami" } };
    static const struct cli_verb add[] = { { "user", add_user, "auth add user" }, { "role", add_role, "auth add role" },
                                           { "cluster", add_cluster, "auth add cluster" } };
    static const struct cli_verb upd[] = { { "user", update_user, "auth update user" },
                                           { "role", update_role, "auth update role" },
                                           { "cluster", update_cluster, "auth update cluster" } };
    static const struct cli_verb rm[] = { { "user", rm_user, "auth rm user" }, { "role", rm_role, "auth rm role" },
                                          { "token", rm_token, "auth rm token" },
                                          { "cluster", rm_cluster, "auth rm cluster" } };
    static const struct cli_verb sh[] = { { "user", show_user, "auth show user" },
                                          { "role", show_role, "auth show role" },
                                          { "cluster", show_cluster, "auth show cluster" },
                                          { "config", show_config, "auth show config" } };
    static const struct cli_verb set[] = { { "config", set_config, "auth set config" } };
    if (argc >= 1 && !strcmp(argv[0], "add"))
        return cli_run_verb("auth add", add, SL_ARRAY_SIZE(add), argc - 1, argv + 1, false);
    if (argc >= 1 && !strcmp(argv[0], "update"))
        return cli_run_verb("auth update", upd, SL_ARRAY_SIZE(upd), argc - 1, argv + 1, false);
    if (argc >= 1 && !strcmp(argv[0], "rm"))
        return cli_run_verb("auth rm", rm, SL_ARRAY_SIZE(rm), argc - 1, argv + 1, false);
    if (argc >= 1 && !strcmp(argv[0], "set"))
        return cli_run_verb("auth set", set, SL_ARRAY_SIZE(set), argc - 1, argv + 1, false);
    if (argc >= 1 && !strcmp(argv[0], "show"))
        return cli_run_verb("auth show", sh, SL_ARRAY_SIZE(sh), argc - 1, argv + 1, false);
    return cli_run_verb("auth", top, SL_ARRAY_SIZE(top), argc, argv, false);
}
