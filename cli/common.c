/* SPDX-License-Identifier: MIT
 * common.c: option parsing, HTTP via libcurl, bucket URIs, tables and
 * progress bars for the shale CLI.
 */
#include "cli.h"
#include "jsonx.h"
#include "meta.h"
#include "yamlx.h"

#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

bool cli_json;
bool cli_no_headers;
const char *cli_cmd_path;
static char *endpoint;
void cli_cleanup(void);

char *cli_read_file(const char *path, size_t *len)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) {
        fprintf(stderr, "Error: cannot open %s: %s\n", path, strerror(errno));
        return NULL;
    }
    struct sl_buf b;
    sl_buf_init(&b);
    char tmp[65536];
    size_t n;
    while ((n = fread(tmp, 1, sizeof(tmp), f)) > 0)
        sl_buf_add(&b, tmp, n);
    if (f != stdin)
        fclose(f);
    if (len)
        *len = b.len;
    return b.p ? sl_buf_steal(&b) : sl_xstrdup("");
}

/* ---- options ---- */

static bool in_list(const char *list, const char *name)
{
    if (!list)
        return false;
    size_t n = strlen(name);
    const char *p = list;
    while (*p) {
        const char *c = strchr(p, ',');
        size_t l = c ? (size_t)(c - p) : strlen(p);
        if (l == n && !strncmp(p, name, n))
            return true;
        if (!c)
            break;
        p = c + 1;
    }
    return false;
}

/* what opts_parse allocates lives until exit (option structs are on the
 * callers' stacks); tracked here so sanitizer builds see no leaks */
static void **opt_allocs;
static size_t nopt_allocs, capopt_allocs;

static void *opt_keep(void *p)
{
    if (nopt_allocs == capopt_allocs) {
        capopt_allocs = capopt_allocs ? capopt_allocs * 2 : 64;
        opt_allocs = sl_xrealloc(opt_allocs, capopt_allocs * sizeof(void *));
    }
    opt_allocs[nopt_allocs++] = p;
    return p;
}

json_t *cli_list_page(const char *pq, json_t *msg, char **token, char **uuid)
{
    json_object_set_new(msg, "continuation_token", json_string(*token));
    json_object_set_new(msg, "uuid", json_string(*uuid));
    struct cli_resp r;
    cli_act("GET", pq, "list", "", msg, &r);
    if (r.status != 200) {
        cli_fail(&r, NULL);
        cli_resp_free(&r);
        return NULL;
    }
    json_t *j = cli_resp_json(&r);
    cli_resp_free(&r);
    free(*token);
    free(*uuid);
    *token = sl_xstrdup(sl_json_str(j, "continuation_token", ""));
    *uuid = sl_xstrdup(sl_json_str(j, "uuid", ""));
    return j;
}

int cli_list_each(const char *pq, const json_t *msg, int (*fn)(void *arg, const json_t *entry), void *arg)
{
    char *token = sl_xstrdup(""), *uuid = sl_xstrdup("");
    int rc = 0;
    for (int pages = 0; rc == 0 && pages < 10000000; pages++) {
        json_t *j = cli_list_page(pq, json_deep_copy(msg), &token, &uuid);
        if (!j) {
            rc = 1;
            break;
        }
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(j, "entries"), i, e) {
            if ((rc = fn(arg, e)) != 0)
                break;
        }
        json_decref(j);
        if (!token[0])
            break;
    }
    free(token);
    free(uuid);
    return rc;
}

json_t *cli_read_spec(const char *path, const char *what)
{
    size_t len;
    char *text = cli_read_file(path, &len);
    if (!text)
        return NULL;
    size_t i = 0;
    while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r'))
        i++;
    struct sl_err err = { 0 };
    json_t *j;
    const char *form;
    if (i < len && (text[i] == '{' || text[i] == '[')) {
        json_error_t je;
        form = "JSON";
        j = json_loadb(text, len, 0, &je);
        if (!j)
            snprintf(err.msg, sizeof(err.msg), "line %d: %s", je.line, je.text);
    } else {
        form = "YAML";
        j = sl_yaml_to_json(text, len, &err);
    }
    free(text);
    if (json_is_object(j))
        return j;
    if (!j && i >= len)
        snprintf(err.msg, sizeof(err.msg), "the file is empty");
    else if (j)
        snprintf(err.msg, sizeof(err.msg), "it holds a %s, not an object of fields",
                 json_is_array(j) ? "list" : json_is_string(j) ? "plain string" : "single value");
    json_decref(j);
    const char *why = sl_has_prefix(err.msg, "YAML: ") ? err.msg + 6 : err.msg;
    fprintf(stderr, "Error: %s: not a valid %s (read as %s: %s); write it as a JSON object {\"field\": ...} or a "
            "YAML mapping (field: value), in a file or on stdin (-)\n", path, what, form, why);
    return NULL;
}

json_t *cli_names(const char *list)
{
    json_t *a = json_array();
    char *cp = sl_xstrdup(list), *save = NULL;
    for (char *t = strtok_r(cp, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (*t)
            json_array_append_new(a, json_string(t));
    free(cp);
    return a;
}

int cli_timeout(const struct opts *o, int64_t *ns)
{
    *ns = 3600LL * 1000000000LL;
    const char *ts = opt_str(o, "timeout");
    if (ts && (sl_parse_duration(ts, ns) < 0 || *ns <= 0)) {
        fprintf(stderr, "Error: --timeout: invalid duration \"%s\" (e.g. 90s, 10m, 1h)\n", ts);
        return -1;
    }
    return 0;
}

void cli_job_started(const char *id)
{
    printf("%s\n", id);
    fflush(stdout);
    fprintf(stderr, "Job %s started: follow it with `shale job wait %s --progress` or `shale job show %s`\n", id, id,
            id);
}

int cli_query(const char *what, json_t *q, struct cli_resp *out)
{
    size_t len;
    char *body = sl_json_dump(q, 0, &len);
    json_decref(q);
    char pq[64];
    snprintf(pq, sizeof(pq), "/v1/cluster?what=%s", what);
    int rc = cli_req("GET", pq, "application/json", body, len, out);
    free(body);
    return rc;
}

char *cli_act_id(const char *method, const char *pq, const char *action, json_t *value, const char *what)
{
    struct cli_resp r;
    cli_act(method, pq, action, "", value, &r);
    char *id = NULL;
    if (r.status != 200)
        cli_fail(&r, what);
    else
        id = sl_xstrndup(r.body.p ? r.body.p : "", r.body.len);
    cli_resp_free(&r);
    return id;
}

json_t *cli_json_path(json_t *doc, const char *dotted)
{
    char *k = sl_xstrdup(dotted), *save = NULL;
    json_t *v = doc;
    for (char *t = strtok_r(k, ".", &save); t && v; t = strtok_r(NULL, ".", &save))
        v = json_object_get(v, t);
    free(k);
    return v;
}

char *cli_json_path_text(json_t *doc, const char *dotted)
{
    json_t *v = cli_json_path(doc, dotted);
    if (!v)
        return sl_xstrdup("");
    return json_is_string(v) ? sl_xstrdup(json_string_value(v)) : sl_json_dump(v, 0, NULL);
}

void cli_print_obj_errors(const json_t *errs, const char *objkey)
{
    struct table *t = table_new(3, "OBJECT", "ECODE", "ERROR");
    size_t i;
    json_t *e;
    json_array_foreach(errs, i, e) {
        char ec[16];
        snprintf(ec, sizeof(ec), "%lld", (long long)sl_json_int(e, "ecode", 0));
        char *msg = sl_xstrdup(sl_json_str(e, "msg", ""));
        char *nl = strchr(msg, '\n');
        if (nl)
            *nl = 0;
        table_row(t, sl_json_str(e, objkey, ""), ec, msg);
        free(msg);
    }
    table_print(t, stdout, !cli_no_headers);
    table_free(t);
}

void cli_cleanup(void)
{
    for (size_t i = 0; i < nopt_allocs; i++)
        free(opt_allocs[i]);
    free(opt_allocs);
    opt_allocs = NULL;
    nopt_allocs = capopt_allocs = 0;
    free(endpoint);
    endpoint = NULL;
}

int cli_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 40 || lb > 40)
        return 99;
    int d[41][41];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            c = SL_MIN(c, d[i - 1][j] + 1);
            d[i][j] = SL_MIN(c, d[i][j - 1] + 1);
        }
    return d[la][lb];
}

/* the known flag closest to a mistyped one (a few edits away, or one it
 * begins), into best; false when none is close */
static bool closest_flag(const char *typed, const char *valued, const char *booleans, char *best, size_t n)
{
    int bd = 99;
    const char *lists[2] = { valued, booleans };
    for (int k = 0; k < 2; k++) {
        for (const char *p = lists[k]; p && *p;) {
            size_t l = strcspn(p, ",");
            char name[64];
            snprintf(name, sizeof(name), "%.*s", (int)l, p);
            int d = cli_distance(typed, name);
            if (strlen(typed) >= 3 && !strncmp(name, typed, strlen(typed)))
                d = SL_MIN(d, 1);
            if (d < bd && d <= 2 && d <= (int)l / 2) {
                bd = d;
                snprintf(best, n, "%s%s", l == 1 ? "-" : "--", name);
            }
            p += l + (p[l] == ',');
        }
    }
    return bd < 99;
}

int opts_parse(struct opts *o, int argc, char **argv, const char *valued, const char *booleans)
{
    memset(o, 0, sizeof(*o));
    o->argv = opt_keep(sl_xcalloc((size_t)argc + 1, sizeof(char *)));
    bool only_pos = false;
    for (int i = 0; i < argc; i++) {
        char *a = argv[i];
        if (only_pos || a[0] != '-' || !a[1]) {
            o->argv[o->argc++] = a;
            continue;
        }
        if (!strcmp(a, "--")) {
            only_pos = true;
            continue;
        }
        const char *name = a[1] == '-' ? a + 2 : a + 1;
        char nb[64];
        const char *eq = strchr(name, '=');
        snprintf(nb, sizeof(nb), "%.*s", (int)(eq ? eq - name : (long)strlen(name)), name);
        /* short aliases */
        if (!strcmp(nb, "H"))
            snprintf(nb, sizeof(nb), "no-headers");
        else if (!strcmp(nb, "y"))
            snprintf(nb, sizeof(nb), "yes");
        else if (!strcmp(nb, "j"))
            snprintf(nb, sizeof(nb), "json");
        else if (!strcmp(nb, "r"))
            snprintf(nb, sizeof(nb), "recursive");
        else if (!strcmp(nb, "v"))
            snprintf(nb, sizeof(nb), "verbose");
        if (o->nflags >= 64) {
            fprintf(stderr, "Error: too many flags (at most 64)\n");
            return -1;
        }
        if (in_list(valued, nb)) {
            const char *v = eq ? eq + 1 : NULL;
            if (!v) {
                if (i + 1 >= argc) {
                    fprintf(stderr, "Error: flag %s needs a value (`shale %s --help` says which)\n", a,
                            cli_cmd_path ? cli_cmd_path : "COMMAND");
                    return -1;
                }
                v = argv[++i];
            }
            o->flags[o->nflags].name = opt_keep(sl_xstrdup(nb));
            o->flags[o->nflags].value = opt_keep(sl_xstrdup(v));
            o->nflags++;
        } else if (in_list(booleans, nb)) {
            o->flags[o->nflags].name = opt_keep(sl_xstrdup(nb));
            o->flags[o->nflags].value = eq ? opt_keep(sl_xstrdup(eq + 1)) : NULL;
            o->nflags++;
        } else {
            char near[80];
            const char *cmd = cli_cmd_path ? cli_cmd_path : "COMMAND";
            if (closest_flag(nb, valued, booleans, near, sizeof(near)))
                fprintf(stderr, "Error: unknown flag '%.*s' for `shale %s`: did you mean %s? (`shale %s --help` "
                        "lists its flags)\n", (int)(eq ? eq - a : (long)strlen(a)), a, cmd, near, cmd);
            else
                fprintf(stderr, "Error: unknown flag '%.*s' for `shale %s` (`shale %s --help` lists its flags)\n",
                        (int)(eq ? eq - a : (long)strlen(a)), a, cmd, cmd);
            return -1;
        }
    }
    cli_json = opt_bool(o, "json");
    cli_no_headers = opt_bool(o, "no-headers");
    return 0;
}

void opts_rename(struct opts *o, int i, const char *name)
{
    o->flags[i].name = opt_keep(sl_xstrdup(name));
}

const char *opt_str(const struct opts *o, const char *name)
{
    for (int i = 0; i < o->nflags; i++)
        if (!strcmp(o->flags[i].name, name))
            return o->flags[i].value ? o->flags[i].value : "";
    return NULL;
}

bool opt_bool(const struct opts *o, const char *name)
{
    const char *v = opt_str(o, name);
    return v && strcasecmp(v, "false") && strcmp(v, "0");
}

long long opt_int(const struct opts *o, const char *name, long long dflt)
{
    const char *v = opt_str(o, name);
    if (!v || !*v)
        return dflt;
    char *end;
    long long x = strtoll(v, &end, 10);
    if (*end) {
        fprintf(stderr, "Error: --%s expects an integer, got \"%s\"\n", name, v);
        exit(1);
    }
    return x;
}

/* ---- endpoint / HTTP ---- */

/* (first called from many download threads at once: set under a lock) */
static pthread_mutex_t endpoint_mu = PTHREAD_MUTEX_INITIALIZER;

const char *cli_endpoint(void)
{
    pthread_mutex_lock(&endpoint_mu);
    if (!endpoint) {
        const char *e = getenv("AIS_ENDPOINT");
        char *ep = e && *e ? sl_xstrdup(e) : cli_conf_endpoint(); /* then `shale config cli set endpoint=` */
        if (!ep)
            ep = sl_xstrdup("http://localhost:8080");
        size_t n = strlen(ep);
        while (n && ep[n - 1] == '/')
            ep[--n] = 0;
        endpoint = ep;
    }
    const char *r = endpoint;
    pthread_mutex_unlock(&endpoint_mu);
    return r;
}

void cli_set_endpoint(const char *url)
{
    pthread_mutex_lock(&endpoint_mu);
    free(endpoint);
    endpoint = sl_xstrdup(url);
    pthread_mutex_unlock(&endpoint_mu);
}

static size_t wr_buf(char *p, size_t sz, size_t n, void *ud)
{
    sl_buf_add(ud, p, sz * n);
    return sz * n;
}

static size_t wr_hdr(char *p, size_t sz, size_t n, void *ud)
{
    struct sl_buf *b = ud;
    /* keep only the last response's headers */
    if (sz * n > 5 && !strncmp(p, "HTTP/", 5))
        sl_buf_reset(b);
    sl_buf_add(b, p, sz * n);
    return sz * n;
}

static void extract_error(struct cli_resp *out)
{
    if (out->status < 400)
        return;
    json_error_t je;
    json_t *j = out->body.len ? json_loadb(out->body.p, out->body.len, 0, &je) : NULL;
    const char *m = j ? json_string_value(json_object_get(j, "message")) : NULL;
    if (m)
        snprintf(out->errmsg, sizeof(out->errmsg), "%s", m);
    else {
        char he[1024];
        if (cli_resp_header(out, "Hdr-Error", he, sizeof(he))) {
            json_t *h = json_loads(he, 0, &je);
            const char *hm = h ? json_string_value(json_object_get(h, "message")) : NULL;
            snprintf(out->errmsg, sizeof(out->errmsg), "%s", hm ? hm : he);
            json_decref(h);
        } else if (out->body.len) {
            snprintf(out->errmsg, sizeof(out->errmsg), "%.*s", (int)SL_MIN(out->body.len, 1000), out->body.p);
            size_t l = strlen(out->errmsg);
            while (l && out->errmsg[l - 1] == '\n')
                out->errmsg[--l] = 0;
        } else {
            snprintf(out->errmsg, sizeof(out->errmsg), "HTTP %ld", out->status);
        }
    }
    json_decref(j);
}

static long req_timeout_ms; /* 0: no limit (jobs may take long) */

void cli_set_req_timeout(long ms)
{
    req_timeout_ms = ms;
}

int cli_req(const char *method, const char *pq, const char *ctype, const void *body, size_t blen,
            struct cli_resp *out)
{
    char *ct = ctype ? sl_xasprintf("Content-Type: %s", ctype) : NULL;
    const char *hdrs[] = { ct, NULL };
    int rc = cli_req_h(method, pq, hdrs, body, blen, out);
    free(ct);
    return rc;
}

int cli_write_private(const char *path, const void *p, size_t n)
{
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    bool ok = fd >= 0 && write(fd, p, n) == (ssize_t)n;
    int e = errno;
    if (fd >= 0 && close(fd) < 0)
        ok = false;
    if (!ok)
        fprintf(stderr, "Error: cannot write %s: %s\n", path, strerror(e));
    return ok ? 0 : -1;
}

int cli_random_text(char *out, size_t n)
{
    static const char al[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    unsigned char rnd[256];
    if (n > sizeof(rnd))
        n = sizeof(rnd);
    int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
    bool ok = fd >= 0 && read(fd, rnd, n) == (ssize_t)n;
    if (fd >= 0)
        close(fd);
    if (!ok)
        return -1;
    for (size_t i = 0; i < n; i++)
        out[i] = al[rnd[i] % (sizeof(al) - 1)];
    out[n] = 0;
    return 0;
}

/* HTTPS: AIS_CLIENT_CA (the CA to trust), AIS_SKIP_VERIFY_CRT=true */
static void tls_opts(CURL *c)
{
    const char *ca = getenv("AIS_CLIENT_CA"), *skip = getenv("AIS_SKIP_VERIFY_CRT");
    if (skip && (!strcmp(skip, "true") || !strcmp(skip, "1"))) {
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
        curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
    } else if (ca && *ca) {
        curl_easy_setopt(c, CURLOPT_CAINFO, ca);
    }
}

char *cli_token_path(void)
{
    const char *f = getenv("AIS_AUTHN_TOKEN_FILE");
    if (f && *f)
        return sl_xstrdup(f);
    const char *home = getenv("HOME");
    return home && *home ? sl_xasprintf("%s/.config/shale/auth.token", home) : NULL;
}

char *cli_token(void)
{
    const char *t = getenv("AIS_AUTHN_TOKEN");
    if (t && *t)
        return sl_xstrdup(t);
    char *p = cli_token_path();
    struct sl_buf b;
    sl_buf_init(&b);
    char *out = NULL;
    if (p && sl_read_file(p, &b, 64 * 1024) == 0 && b.len) {
        sl_buf_add(&b, "", 1);
        if (b.p[0] == '{') {
            json_t *j = json_loads(b.p, 0, NULL);
            const char *s = json_string_value(json_object_get(j, "token"));
            out = s ? sl_xstrdup(s) : NULL;
            json_decref(j);
        } else {
            size_t n = strcspn(b.p, "\r\n ");
            out = sl_xasprintf("%.*s", (int)n, b.p);
        }
    }
    sl_buf_free(&b);
    free(p);
    return out;
}

void cli_curl_opts(CURL *c, const char *url)
{
    curl_easy_setopt(c, CURLOPT_URL, url);
    tls_opts(c);
    curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_USERAGENT, "shale-cli/" SL_VERSION);
}

struct curl_slist *cli_auth_hdr(struct curl_slist *h)
{
    char *tok = cli_token();
    if (tok) {
        char *a = sl_xasprintf("Authorization: Bearer %s", tok);
        h = curl_slist_append(h, a);
        free(a);
        free(tok);
    }
    return h;
}

/* one request to base (scheme://host:port) */
static int req_at(const char *base, const char *method, const char *pq, const char *const *hdrs, const void *body,
                  size_t blen, struct cli_resp *out)
{
    memset(out, 0, sizeof(*out));
    CURL *c = curl_easy_init();
    if (!c) {
        snprintf(out->errmsg, sizeof(out->errmsg), "cannot initialize libcurl");
        return -1;
    }
    char *url = sl_xasprintf("%s%s", base, pq);
    struct curl_slist *h = NULL;
    for (int i = 0; hdrs && hdrs[i]; i++)
        h = curl_slist_append(h, hdrs[i]);
    h = curl_slist_append(h, "Expect:");
    h = cli_auth_hdr(h);
    cli_curl_opts(c, url);
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
    if (!strcmp(method, "HEAD"))
        curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
    if (body) {
        curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
        curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)blen);
    }
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(c, CURLOPT_POSTREDIR, (long)CURL_REDIR_POST_ALL);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, wr_buf);
    curl_easy_setopt(c, CURLOPT_WRITEDATA, &out->body);
    curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, wr_hdr);
    curl_easy_setopt(c, CURLOPT_HEADERDATA, &out->hdrs);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT, 10L);
    if (req_timeout_ms > 0)
        curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, req_timeout_ms);
    CURLcode rc = curl_easy_perform(c);
    int ret = 0;
    if (rc == CURLE_SSL_CACERT_BADFILE) {
        const char *ca = getenv("AIS_CLIENT_CA");
        snprintf(out->errmsg, sizeof(out->errmsg), "%s %s: the CA certificate to trust cannot be read (AIS_CLIENT_CA=%s%s"
                 "): point AIS_CLIENT_CA at the cluster's CA file (a playground's: DIR/tls/ca.crt)", method, url,
                 ca ? ca : "", ca && access(ca, R_OK) < 0 ? ": no such readable file" : "");
        ret = -1;
    } else if (rc == CURLE_PEER_FAILED_VERIFICATION) {
        snprintf(out->errmsg, sizeof(out->errmsg), "%s %s: %s: the node's certificate is not trusted here (set "
                 "AIS_CLIENT_CA to the CA that signed it, or AIS_SKIP_VERIFY_CRT=true for a test cluster)", method,
                 url, curl_easy_strerror(rc));
        ret = -1;
    } else if (rc != CURLE_OK) {
        snprintf(out->errmsg, sizeof(out->errmsg), "%s %s: %s (is the cluster running? AIS_ENDPOINT=%s)", method, url,
                 curl_easy_strerror(rc), base);
        ret = -1;
    } else {
        curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &out->status);
        extract_error(out);
    }
    curl_slist_free_all(h);
    curl_easy_cleanup(c);
    free(url);
    return ret;
}

int cli_req_h(const char *method, const char *pq, const char *const *hdrs, const void *body, size_t blen,
              struct cli_resp *out)
{
    return req_at(cli_endpoint(), method, pq, hdrs, body, blen, out);
}

int cli_get_at(const char *url, const char *pq, const char *const *hdrs, struct cli_resp *out)
{
    return req_at(url, "GET", pq, hdrs, NULL, 0, out);
}

int cli_act(const char *method, const char *pq, const char *action, const char *name, json_t *value,
            struct cli_resp *out)
{
    json_t *m = json_object();
    json_object_set_new(m, "action", json_string(action));
    json_object_set_new(m, "name", json_string(name ? name : ""));
    json_object_set_new(m, "value", value ? value : json_null());
    size_t len;
    char *s = sl_json_dump(m, 0, &len);
    json_decref(m);
    int rc = cli_req(method, pq, "application/json", s, len, out);
    free(s);
    return rc;
}

void cli_resp_free(struct cli_resp *r)
{
    sl_buf_free(&r->body);
    sl_buf_free(&r->hdrs);
}

bool cli_resp_header(const struct cli_resp *r, const char *name, char *out, size_t n)
{
    if (!r->hdrs.p)
        return false;
    size_t nl = strlen(name);
    const char *p = r->hdrs.p;
    while (p && *p) {
        const char *e = strstr(p, "\r\n");
        size_t l = e ? (size_t)(e - p) : strlen(p);
        if (l > nl + 1 && !strncasecmp(p, name, nl) && p[nl] == ':') {
            const char *v = p + nl + 1;
            while (*v == ' ')
                v++;
            snprintf(out, n, "%.*s", (int)(l - (size_t)(v - p)), v);
            return true;
        }
        p = e ? e + 2 : NULL;
    }
    return false;
}

int cli_fail(const struct cli_resp *r, const char *what)
{
    size_t wl = what ? strlen(what) : 0;
    if (wl && !strncmp(r->errmsg, what, wl) && r->errmsg[wl] == ':') /* (the server named it already) */
        what = NULL;
    if (what && *what)
        fprintf(stderr, "Error: %s: %s\n", what, r->errmsg[0] ? r->errmsg : "failed");
    else
        fprintf(stderr, "Error: %s\n", r->errmsg[0] ? r->errmsg : "failed");
    return 1;
}

json_t *cli_resp_json(const struct cli_resp *r)
{
    json_error_t je;
    return r->body.len ? sl_json_loadb_u64(r->body.p, r->body.len, &je) : NULL;
}

int cli_get_json(const char *pq, const char *what, json_t **out)
{
    struct cli_resp r;
    cli_req("GET", pq, NULL, NULL, 0, &r);
    int rc = r.status == 200 ? 0 : cli_fail(&r, what);
    *out = rc ? NULL : cli_resp_json(&r);
    cli_resp_free(&r);
    return rc;
}

void cli_print_json(const json_t *j)
{
    char *s = sl_json_dump(j, SL_JD_PRETTY, NULL);
    printf("%s\n", s);
    free(s);
}

/* ---- URIs ---- */

int uri_parse(const char *s, struct uri *u, bool need_bucket)
{
    memset(u, 0, sizeof(*u));
    const char *p = strstr(s, "://");
    const char *prov = "ais";
    char pb[16];
    if (p) {
        snprintf(pb, sizeof(pb), "%.*s", (int)SL_MIN((size_t)(p - s), sizeof(pb) - 1), s);
        prov = sl_provider_norm(pb);
        if (!prov) {
            fprintf(stderr, "Error: invalid bucket URI \"%s\": unknown provider \"%s\" (use ais://, s3://, gs://, "
                            "az://)\n", s, pb);
            return -1;
        }
        p += 3;
    } else {
        p = s;
    }
    snprintf(u->provider, sizeof(u->provider), "%s", prov);
    const char *slash = strchr(p, '/');
    size_t bl = slash ? (size_t)(slash - p) : strlen(p);
    if (bl > SL_MAX_BCKNAME) {
        fprintf(stderr, "Error: bucket name in \"%s\" is too long\n", s);
        return -1;
    }
    snprintf(u->bucket, sizeof(u->bucket), "%.*s", (int)bl, p);
    if (need_bucket && !u->bucket[0]) {
        fprintf(stderr, "Error: \"%s\": missing bucket name (expected ais://BUCKET[/OBJECT])\n", s);
        return -1;
    }
    u->obj = sl_xstrdup(slash ? slash + 1 : "");
    u->trailing_slash = slash && s[strlen(s) - 1] == '/';
    return 0;
}

void uri_free(struct uri *u)
{
    free(u->obj);
    u->obj = NULL;
}

const char *uri_query(const struct uri *u)
{
    static __thread char q[32];
    snprintf(q, sizeof(q), "?provider=%s", u->provider);
    return q;
}

char *uri_obj_path(const struct uri *u, const char *obj)
{
    char *enc = sl_url_encode_path(obj, strlen(obj));
    char *p = sl_xasprintf("/v1/objects/%s/%s", u->bucket, enc);
    free(enc);
    return p;
}

/* ---- tables ---- */

struct table {
    int ncols, nrows, cap;
    char **cells; /* (nrows+1) * ncols, row 0 = header */
};

struct table *table_new(int ncols, ...)
{
    struct table *t = sl_xcalloc(1, sizeof(*t));
    t->ncols = ncols;
    t->cap = 16;
    t->cells = sl_xcalloc((size_t)(t->cap * ncols), sizeof(char *));
    va_list ap;
    va_start(ap, ncols);
    for (int i = 0; i < ncols; i++)
        t->cells[i] = sl_xstrdup(va_arg(ap, const char *));
    va_end(ap);
    t->nrows = 1;
    return t;
}

struct table *table_new_arr(int ncols, const char *const *hdrs)
{
    struct table *t = sl_xcalloc(1, sizeof(*t));
    t->ncols = ncols;
    t->cap = 16;
    t->cells = sl_xcalloc((size_t)(t->cap * ncols), sizeof(char *));
    for (int i = 0; i < ncols; i++)
        t->cells[i] = sl_xstrdup(hdrs[i]);
    t->nrows = 1;
    return t;
}

void table_row_arr(struct table *t, const char *const *cells)
{
    if (t->nrows == t->cap) {
        t->cap *= 2;
        t->cells = sl_xrealloc(t->cells, (size_t)(t->cap * t->ncols) * sizeof(char *));
    }
    for (int i = 0; i < t->ncols; i++)
        t->cells[t->nrows * t->ncols + i] = sl_xstrdup(cells[i] ? cells[i] : "");
    t->nrows++;
}

void table_row(struct table *t, ...)
{
    if (t->nrows == t->cap) {
        t->cap *= 2;
        t->cells = sl_xrealloc(t->cells, (size_t)(t->cap * t->ncols) * sizeof(char *));
    }
    va_list ap;
    va_start(ap, t);
    for (int i = 0; i < t->ncols; i++) {
        const char *s = va_arg(ap, const char *);
        t->cells[t->nrows * t->ncols + i] = sl_xstrdup(s ? s : "");
    }
    va_end(ap);
    t->nrows++;
}

static size_t disp_width(const char *s)
{
    size_t w = 0;
    for (; *s; s++)
        if (((unsigned char)*s & 0xC0) != 0x80)
            w++;
    return w;
}

void table_print(struct table *t, FILE *f, bool headers)
{
    size_t *w = sl_xcalloc((size_t)t->ncols, sizeof(size_t));
    for (int r = headers ? 0 : 1; r < t->nrows; r++)
        for (int c = 0; c < t->ncols; c++) {
            size_t l = disp_width(t->cells[r * t->ncols + c]);
            if (l > w[c])
                w[c] = l;
        }
    for (int r = headers ? 0 : 1; r < t->nrows; r++) {
        for (int c = 0; c < t->ncols; c++) {
            const char *s = t->cells[r * t->ncols + c];
            if (c == t->ncols - 1)
                fprintf(f, "%s", s);
            else
                fprintf(f, "%s%*s", s, (int)(w[c] - disp_width(s) + 2), "");
        }
        fputc('\n', f);
    }
    free(w);
}

void table_free(struct table *t)
{
    for (int i = 0; i < t->nrows * t->ncols; i++)
        free(t->cells[i]);
    free(t->cells);
    free(t);
}

/* ---- progress ---- */

struct progress {
    char label[32];
    uint64_t total, done;
    bool bytes;
    int64_t last_ns;
    bool tty;
};

struct progress *progress_new(const char *label, uint64_t total, bool bytes)
{
    struct progress *p = sl_xcalloc(1, sizeof(*p));
    snprintf(p->label, sizeof(p->label), "%s", label);
    p->total = total;
    p->bytes = bytes;
    p->tty = isatty(2);
    return p;
}

void progress_add(struct progress *p, uint64_t n)
{
    __atomic_add_fetch(&p->done, n, __ATOMIC_RELAXED);
}

void progress_draw(struct progress *p, bool final)
{
    int64_t now = sl_mono_ns();
    if (!final && (!p->tty || now - p->last_ns < 200000000LL))
        return;
    p->last_ns = now;
    uint64_t d = __atomic_load_n(&p->done, __ATOMIC_RELAXED);
    int pct = p->total ? (int)(d * 100 / p->total) : 100;
    int w = 30, fill = p->total ? (int)((double)d / (double)p->total * w) : w;
    char bar[40];
    for (int i = 0; i < w; i++)
        bar[i] = i < fill ? '=' : i == fill ? '>' : '-';
    bar[w] = 0;
    char a[32], b[32];
    if (p->bytes) {
        sl_format_size_sp(d, a, sizeof(a));
        sl_format_size_sp(p->total, b, sizeof(b));
    } else {
        snprintf(a, sizeof(a), "%llu", (unsigned long long)d);
        snprintf(b, sizeof(b), "%llu", (unsigned long long)p->total);
    }
    fprintf(stderr, "%s%s %s / %s [%s] %d %%%s", p->tty ? "\r" : "", p->label, a, b, bar, pct,
            p->tty && !final ? "" : "\n");
    fflush(stderr);
}

void progress_free(struct progress *p)
{
    free(p);
}

void cli_print_changes(json_t *before, json_t *after, char **kv, int n)
{
    for (int i = 0; i < n; i++) {
        char *k = sl_xstrndup(kv[i], (size_t)(strchr(kv[i], '=') - kv[i]));
        char *was = cli_json_path_text(before, k);
        char *now = after ? cli_json_path_text(after, k) : sl_xstrdup(strchr(kv[i], '=') + 1);
        printf("\"%s\" set to: \"%s\" (was: \"%s\")\n", k, now, was);
        free(k);
        free(was);
        free(now);
    }
}
