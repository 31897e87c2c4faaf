/* SPDX-License-Identifier: MIT
 * playground.c: `shale playground start|stop|status|add-target`: a local
 * node or cluster on loopback, everything (config, data, logs, pids) under
 * one directory. Processes are stopped by the PIDs recorded there, never by
 * name.
 *
 * DIR/playground.json   topology: [{"name":"p0","role":"proxy","port":8080}, ...]; a node
 *                       the cluster decommissioned gets "decommissioned": true and is
 *                       never started again
 * DIR/<name>/shale.json node config;  DIR/<name>/shaled.pid;  DIR/<name>/log/
 * DIR/<name>/conf/      node metadata; DIR/<name>/mp<k>/ mountpaths
 */
#include "cli.h"
#include "jsonx.h"
#include "node.h"
#include "sec.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <netinet/in.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* shaled beside this program, else the first one on PATH */
static char *find_shaled(void)
{
    char *self = realpath("/proc/self/exe", NULL);
    char *slash = self ? strrchr(self, '/') : NULL;
    if (slash)
        *slash = 0;
    const char *path = getenv("PATH");
    char *dirs = sl_xasprintf("%s:%s", slash ? self : "", path ? path : "");
    free(self);
    char *found = NULL, *save = NULL;
    for (char *d = strtok_r(dirs, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        char *p = sl_xasprintf("%s/shaled", d);
        if (access(p, X_OK) == 0)
            found = p;
        else
            free(p);
    }
    free(dirs);
    return found;
}

static char *abs_dir(const char *d)
{
    char buf[PATH_MAX];
    if (sl_mkdir_p(d, 0755) < 0 || !realpath(d, buf))
        return NULL;
    return sl_xstrdup(buf);
}

static pid_t read_pid(const char *dir, const char *name)
{
    char *pf = sl_xasprintf("%s/%s/shaled.pid", dir, name);
    struct sl_buf b;
    sl_buf_init(&b);
    pid_t pid = 0;
    if (sl_read_file(pf, &b, 64) == 0 && b.len)
        pid = (pid_t)atoi(b.p);
    sl_buf_free(&b);
    free(pf);
    return pid;
}

/* Is pid alive and a shaled started for this directory? */
static bool pid_is_ours(pid_t pid, const char *dir)
{
    if (pid <= 0 || kill(pid, 0) < 0)
        return false;
    char *cf = sl_xasprintf("/proc/%d/cmdline", (int)pid);
    struct sl_buf b;
    sl_buf_init(&b);
    bool ok = false;
    if (sl_read_file(cf, &b, 65536) == 0) {
        for (size_t i = 0; i < b.len; i++)
            if (!b.p[i])
                b.p[i] = ' ';
        ok = strstr(b.p, "shaled") && strstr(b.p, dir);
    }
    sl_buf_free(&b);
    free(cf);
    return ok;
}

static const char *pg_scheme = "http";

/* --https: the playground's nodes serve HTTPS; this CLI trusts their CA */
static void use_https(const char *dir)
{
    pg_scheme = "https";
    char *ca = sl_xasprintf("%s/tls/ca.crt", dir);
    setenv("AIS_CLIENT_CA", ca, 0);
    free(ca);
}

static json_t *load_topology(const char *dir)
{
    char *f = sl_xasprintf("%s/playground.json", dir);
    json_error_t je;
    json_t *j = json_load_file(f, 0, &je);
    free(f);
    if (json_is_true(json_object_get(j, "https")))
        use_https(dir);
    char *tf = sl_xasprintf("%s/admin.token", dir); /* (--auth: the playground's own checks need it) */
    if (access(tf, R_OK) == 0)
        setenv("AIS_AUTHN_TOKEN_FILE", tf, 0);
    free(tf);
    return j;
}

/* ---- certificates for --https (OpenSSL): a CA, and one certificate for
 * every node (127.0.0.1, localhost) signed by it ---- */

static int write_pem(const char *path, X509 *crt, EVP_PKEY *key)
{
    FILE *f = NULL;
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, key ? 0600 : 0644);
    if (fd >= 0)
        f = fdopen(fd, "w");
    int ok = f && (crt ? PEM_write_X509(f, crt) : PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL));
    if (f)
        fclose(f);
    else if (fd >= 0)
        close(fd);
    if (!ok)
        fprintf(stderr, "Error: cannot write %s\n", path);
    return ok ? 0 : -1;
}

static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *ikey, bool ca, long serial)
{
    X509 *x = X509_new();
    X509_set_version(x, 2);
    ASN1_INTEGER_set(X509_get_serialNumber(x), serial);
    X509_gmtime_adj(X509_getm_notBefore(x), -3600);
    X509_gmtime_adj(X509_getm_notAfter(x), (long)(ca ? 10 : 2) * 365 * 24 * 3600);
    X509_set_pubkey(x, key);
    X509_NAME *n = X509_get_subject_name(x);
    X509_NAME_add_entry_by_txt(n, "O", MBSTRING_ASC, (const unsigned char *)"Shale playground", -1, -1, 0);
    X509_NAME_add_entry_by_txt(n, "CN", MBSTRING_ASC, (const unsigned char *)cn, -1, -1, 0);
    X509_set_issuer_name(x, issuer ? X509_get_subject_name(issuer) : n);
    X509V3_CTX ctx;
    X509V3_set_ctx(&ctx, issuer ? issuer : x, x, NULL, NULL, 0);
    const char *ext[][2] = { { "basicConstraints", ca ? "critical,CA:TRUE" : "CA:FALSE" },
                             { "keyUsage", ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature" },
                             { "subjectAltName", ca ? NULL : "IP:127.0.0.1,DNS:localhost" },
                             { "extendedKeyUsage", ca ? NULL : "serverAuth,clientAuth" } };
    for (size_t i = 0; i < SL_ARRAY_SIZE(ext); i++) {
        if (!ext[i][1])
            continue;
        X509_EXTENSION *e = X509V3_EXT_conf(NULL, &ctx, ext[i][0], ext[i][1]);
        if (e) {
            X509_add_ext(x, e, -1);
            X509_EXTENSION_free(e);
        }
    }
    if (!X509_sign(x, ikey ? ikey : key, EVP_sha256())) {
        X509_free(x);
        return NULL;
    }
    return x;
}

static int make_certs(const char *dir)
{
    char *td = sl_xasprintf("%s/tls", dir);
    sl_mkdir_p(td, 0700);
    EVP_PKEY *cak = EVP_EC_gen("P-256"), *nk = EVP_EC_gen("P-256");
    X509 *ca = cak ? make_cert(cak, "Shale playground CA", NULL, NULL, true, 1) : NULL;
    X509 *nc = ca && nk ? make_cert(nk, "shale-node", ca, cak, false, (long)time(NULL)) : NULL;
    int rc = -1;
    if (nc) {
        char *f1 = sl_xasprintf("%s/ca.crt", td), *f2 = sl_xasprintf("%s/ca.key", td);
        char *f3 = sl_xasprintf("%s/node.crt", td), *f4 = sl_xasprintf("%s/node.key", td);
        rc = write_pem(f1, ca, NULL) | write_pem(f2, NULL, cak) | write_pem(f3, nc, NULL) | write_pem(f4, NULL, nk);
        free(f1);
        free(f2);
        free(f3);
        free(f4);
    } else {
        fprintf(stderr, "Error: cannot make the playground's certificates (OpenSSL)\n");
    }
    X509_free(ca);
    X509_free(nc);
    EVP_PKEY_free(cak);
    EVP_PKEY_free(nk);
    free(td);
    return rc;
}

/* The HTTP poll loops each node of a playground runs: all its nodes share
 * this machine's CPUs, and a node's default (one loop per CPU, at least 2)
 * times four nodes on 2 CPUs cost a 1 KiB GET straight to a target a third
 * more CPU in context switches (bench/RESULTS.md §17.10). A standalone node
 * keeps the default (0). Recorded in playground.json, so added targets get
 * the same. */
static int playground_loops(int nnodes)
{
    if (nnodes <= 1)
        return 0;
    long n = sysconf(_SC_NPROCESSORS_ONLN) / nnodes; /* (0 where sysconf fails) */
    return n > 1 ? (int)n : 1;
}

static int write_node_config(const char *dir, json_t *node, const char *primary_url, int nmp, int loops)
{
    const char *name = json_string_value(json_object_get(node, "name"));
    const char *role = json_string_value(json_object_get(node, "role"));
    int port = (int)json_integer_value(json_object_get(node, "port"));
    char *nd = sl_xasprintf("%s/%s", dir, name);
    sl_mkdir_p(nd, 0755);
    json_t *c = json_object();
    char *conf = sl_xasprintf("%s/conf", nd), *logd = sl_xasprintf("%s/log", nd);
    json_object_set_new(c, "confdir", json_string(conf));
    json_object_set_new(c, "log_dir", json_string(logd));
    free(conf);
    free(logd);
    json_object_set_new(c, "host_net", json_pack("{s:s,s:i}", "hostname", "127.0.0.1", "port", port));
    if (strcmp(role, "proxy")) {
        json_t *fs = json_object();
        for (int k = 1; k <= nmp; k++) {
            char *mp = sl_xasprintf("%s/mp%d", nd, k);
            json_object_set_new(fs, mp, json_string(""));
            free(mp);
        }
        json_object_set_new(c, "fspaths", fs);
    }
    if (primary_url && strcmp(role, "standalone"))
        json_object_set_new(c, "proxy", json_pack("{s:s}", "primary_url", primary_url));
    /* short liveness timeouts suit a laptop cluster */
    json_object_set_new(c, "keepalivetracker",
                        json_pack("{s:{s:s},s:{s:s}}", "proxy", "interval", "2s", "target", "interval", "2s"));
    json_object_set_new(c, "log", json_pack("{s:i}", "level", 3));
    json_t *http = json_object(); /* net.http, when anything goes in it */
    if (!strcmp(pg_scheme, "https")) {
        char *crt = sl_xasprintf("%s/tls/node.crt", dir), *key = sl_xasprintf("%s/tls/node.key", dir);
        char *ca = sl_xasprintf("%s/tls/ca.crt", dir);
        json_object_set_new(http, "use_https", json_true());
        json_object_set_new(http, "server_crt", json_string(crt));
        json_object_set_new(http, "server_key", json_string(key));
        json_object_set_new(http, "client_ca_tls", json_string(ca));
        free(crt);
        free(key);
        free(ca);
    }
    if (loops > 0)
        json_object_set_new(http, "workers", json_integer(loops));
    if (json_object_size(http))
        json_object_set_new(c, "net", json_pack("{s:o}", "http", http));
    else
        json_decref(http);
    char *cf = sl_xasprintf("%s/shale.json", nd);
    int rc = json_dump_file(c, cf, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    free(cf);
    free(nd);
    json_decref(c);
    return rc;
}

static int spawn_node(const char *dir, const char *shaled, json_t *node)
{
    const char *name = json_string_value(json_object_get(node, "name"));
    const char *role = json_string_value(json_object_get(node, "role"));
    char *nd = sl_xasprintf("%s/%s", dir, name);
    char *cf = sl_xasprintf("%s/shale.json", nd);
    char *logd = sl_xasprintf("%s/log", nd);
    sl_mkdir_p(logd, 0755);
    char *outf = sl_xasprintf("%s/stdout.log", logd);
    /* a close-on-exec pipe tells the parent when exec has happened (EOF) or
     * failed (the child writes errno) */
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0) {
        fprintf(stderr, "Error: pipe: %s\n", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(stderr, "Error: fork: %s\n", strerror(errno));
        return -1;
    }
    if (pid == 0) {
        setsid();
        int in = open("/dev/null", O_RDONLY);
        int out = open(outf, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (in >= 0)
            dup2(in, 0);
        if (out >= 0) {
            dup2(out, 1);
            dup2(out, 2);
        }
        for (int fd = 3; fd < 1024; fd++)
            if (fd != pfd[1])
                close(fd);
        char *roleflag = sl_xasprintf("--role=%s", role);
        char *cfgflag = sl_xasprintf("--config=%s", cf);
        execl(shaled, "shaled", cfgflag, roleflag, "--bind", "127.0.0.1", (char *)NULL);
        int e = errno;
        fprintf(stderr, "exec %s: %s\n", shaled, strerror(e));
        if (write(pfd[1], &e, sizeof(e)) < 0)
            _exit(126);
        _exit(127);
    }
    close(pfd[1]);
    int ce = 0;
    ssize_t got;
    while ((got = read(pfd[0], &ce, sizeof(ce))) < 0 && errno == EINTR)
        ;
    close(pfd[0]);
    if (got > 0) {
        fprintf(stderr, "Error: cannot start %s: %s\n", shaled, strerror(ce));
        waitpid(pid, NULL, 0);
        return -1;
    }
    char *pf = sl_xasprintf("%s/shaled.pid", nd);
    char pids[32];
    snprintf(pids, sizeof(pids), "%d\n", (int)pid);
    sl_write_file(pf, pids, strlen(pids), false);
    free(pf);
    free(nd);
    free(cf);
    free(logd);
    free(outf);
    return 0;
}

/* GET pq (with header lines hd, or NULL) from the node on port; tmo_ms: a
 * limit on the request's time (0: none) */
static int node_get(int port, const char *pq, const char *const *hd, long tmo_ms, struct cli_resp *r)
{
    char ep[64];
    snprintf(ep, sizeof(ep), "%s://127.0.0.1:%d", pg_scheme, port);
    cli_set_req_timeout(tmo_ms);
    int rc = cli_get_at(ep, pq, hd, r);
    cli_set_req_timeout(0);
    return rc;
}

static bool health_ok(int port, const char *q)
{
    struct cli_resp r;
    char *pq = sl_xasprintf("/v1/health%s", q ? q : "");
    int rc = node_get(port, pq, NULL, 3000, &r); /* whatever else holds the port may never answer */
    free(pq);
    bool ok = rc == 0 && r.status == 200;
    cli_resp_free(&r);
    return ok;
}

/* The id the node wrote to its confdir at its first start
 * (DIR/<name>/conf/node_id), or "" if not yet. */
static void read_node_id(const char *dir, const char *name, char *out, size_t n)
{
    char *f = sl_xasprintf("%s/%s/conf/node_id", dir, name);
    struct sl_buf b;
    sl_buf_init(&b);
    out[0] = 0;
    if (sl_read_file(f, &b, 128) == 0 && b.len) {
        while (b.len && (b.p[b.len - 1] == '\n' || b.p[b.len - 1] == ' '))
            b.p[--b.len] = 0;
        snprintf(out, n, "%s", b.p);
    }
    sl_buf_free(&b);
    free(f);
}

enum { ANS_NONE = 0, ANS_SELF, ANS_OTHER };

/* Who answers on the node's port: nobody (yet), the node itself, or another
 * process (its id, if it says, in other). A healthy answer is not enough: a
 * node that could not bind the port exits, and whatever holds the port
 * answers in its place. */
static int node_answers(const char *dir, const char *name, int port, char *other, size_t n)
{
    other[0] = 0;
    if (!health_ok(port, NULL))
        return ANS_NONE;
    struct cli_resp r;
    char id[128];
    int ans = ANS_OTHER;
    read_node_id(dir, name, id, sizeof(id));
    /* signed as the cluster's nodes sign (a target with auth on takes
     * nothing else): the playground holds the cluster secret */
    char sig[SL_SEC_HDR_MAX] = "";
    char *sp = sl_xasprintf("%s/%s/cluster.secret", dir, name);
    struct sl_err se = { 0 };
    if (!G.id[0])
        snprintf(G.id, sizeof(G.id), "playground"); /* (the signer's name) */
    if (access(sp, R_OK) == 0 && (sl_sec_on() || sl_sec_init(sp, false, &se) == 0)) {
        char u[80]; /* (signed for the node at that address) */
        snprintf(u, sizeof(u), "http://127.0.0.1:%d/v1/daemon?what=snode", port);
        sl_sec_header("GET", u, NULL, sig, sizeof(sig));
    }
    free(sp);
    const char *hd[] = { sig[0] ? sig : NULL, NULL };
    int rc = node_get(port, "/v1/daemon?what=snode", hd, 3000, &r);
    if (rc == 0 && r.status == 200) {
        json_t *j = cli_resp_json(&r);
        const char *got = json_string_value(json_object_get(j, "daemon_id"));
        if (got) {
            snprintf(other, n, "%s", got);
            if (id[0] && !strcmp(got, id))
                ans = ANS_SELF;
        }
        json_decref(j);
    }
    cli_resp_free(&r);
    /* our id not written yet: our node cannot be the one answering */
    return ans;
}

static void print_log_tail(const char *dir, const char *name)
{
    const char *files[] = { "log/stdout.log", "log/shaled.log" };
    for (int i = 0; i < 2; i++) {
        char *f = sl_xasprintf("%s/%s/%s", dir, name, files[i]);
        struct sl_buf b;
        sl_buf_init(&b);
        if (sl_read_file(f, &b, 1 << 24) == 0 && b.len) {
            const char *p = b.p + b.len;
            int lines = 0;
            while (p > b.p && lines < 12)
                if (*--p == '\n')
                    lines++;
            fprintf(stderr, "--- %s (last lines) ---\n%s", f, p);
        }
        sl_buf_free(&b);
        free(f);
    }
}

static int stop_one(const char *dir, const char *name);

/* Another process answers on a node's port: say so and where to look. */
static int fail_port_taken(const char *dir, const char *name, int port, const char *other)
{
    fprintf(stderr, "Error: node %s did not start: another process answers on port %d%s%s%s (is another "
            "playground or shaled using it?)\n", name, port, other[0] ? " (node id " : "", other,
            other[0] ? ")" : "");
    /* it fails to bind and exits: wait for that, so its log says why */
    int64_t dl = sl_mono_ns() + 10 * 1000000000LL;
    while (pid_is_ours(read_pid(dir, name), dir) && sl_mono_ns() < dl) {
        waitpid(read_pid(dir, name), NULL, WNOHANG);
        sl_sleep_ms(50);
    }
    stop_one(dir, name);
    print_log_tail(dir, name);
    fprintf(stderr, "Node log: %s/%s/log/\n", dir, name);
    return 1;
}

static bool is_decommissioned(json_t *node)
{
    return json_is_true(json_object_get(node, "decommissioned"));
}

static json_t *fetch_smap(int port)
{
    struct cli_resp r;
    json_t *j = NULL;
    if (node_get(port, "/v1/daemon?what=smap", NULL, 0, &r) == 0 && r.status == 200)
        j = cli_resp_json(&r);
    cli_resp_free(&r);
    return j;
}

/* A stopped node that ran before (it has an id) but is absent from the
 * running primary's Smap was decommissioned: the cluster removed it, and
 * starting it again would bring it back under the same id. Remember that in
 * playground.json so later starts skip it too. */
static bool check_decommissioned(const char *dir, json_t *topo, json_t *node, json_t *smap)
{
    const char *name = json_string_value(json_object_get(node, "name"));
    char id[128];
    if (is_decommissioned(node)) {
        printf("Node %s (%s) was decommissioned; not starting it\n", name,
               sl_json_str(node, "id", "?"));
        return true;
    }
    read_node_id(dir, name, id, sizeof(id));
    if (!smap || !id[0] || json_object_get(json_object_get(smap, "pmap"), id) ||
        json_object_get(json_object_get(smap, "tmap"), id))
        return false;
    bool target = !strcmp(json_string_value(json_object_get(node, "role")), "target");
    char sid[160];
    snprintf(sid, sizeof(sid), "%c[%s]", target ? 't' : 'p', id);
    json_object_set_new(node, "decommissioned", json_true());
    json_object_set_new(node, "id", json_string(sid));
    char *tf = sl_xasprintf("%s/playground.json", dir);
    json_dump_file(topo, tf, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    free(tf);
    printf("Node %s (%s) was decommissioned (it is not in the cluster map); not starting it\n", name, sid);
    return true;
}

/* The cluster secret the primary (node 0) created at its first start, given
 * to node name (0600) unless it has one: what an operator does with scp. */
static int give_secret(const char *dir, json_t *topo, const char *name)
{
    const char *p0 = sl_json_str(json_array_get(json_object_get(topo, "nodes"), 0), "name", "");
    char *from = sl_xasprintf("%s/%s/cluster.secret", dir, p0), *to = sl_xasprintf("%s/%s/cluster.secret", dir, name);
    int rc = 0;
    struct sl_buf b;
    sl_buf_init(&b);
    if (access(to, F_OK) == 0) {
        /* has one */
    } else if (sl_read_file(from, &b, 4096) < 0) {
        fprintf(stderr, "Error: the primary's cluster secret %s is missing (%s): the primary creates it at its "
                "first start\n", from, strerror(errno));
        rc = -1;
    } else {
        rc = cli_write_private(to, b.p, b.len);
    }
    sl_buf_free(&b);
    free(from);
    free(to);
    return rc;
}

/* Start every node of the topology that is not running (and was not
 * decommissioned); wait until each answers as itself. *nstarted: how many
 * had to be started. */
static int start_nodes(const char *dir, json_t *topo, int timeout_s, int *nstarted)
{
    char *shaled = find_shaled();
    if (!shaled) {
        fprintf(stderr, "Error: cannot find the shaled binary next to shale or in PATH\n");
        return 1;
    }
    size_t i;
    json_t *n, *smap = NULL;
    int started = 0;
    bool cluster = strcmp(sl_json_str(json_array_get(json_object_get(topo, "nodes"), 0), "role", ""), "standalone");
    json_array_foreach(json_object_get(topo, "nodes"), i, n) {
        const char *name = json_string_value(json_object_get(n, "name"));
        pid_t pid = read_pid(dir, name);
        if (i == 1 && cluster) /* the primary (node 0) is up: what does the cluster know? */
            smap = fetch_smap((int)json_integer_value(json_object_get(json_array_get(json_object_get(topo, "nodes"),
                                                                                      0), "port")));
        if (pid_is_ours(pid, dir))
            continue;
        if (i > 0 && cluster && check_decommissioned(dir, topo, n, smap))
            continue;
        if ((i > 0 && cluster && give_secret(dir, topo, name) < 0) || spawn_node(dir, shaled, n) < 0) {
            json_decref(smap);
            free(shaled);
            return 1;
        }
        started++;
        /* proxies first: the primary must answer before others join */
        if (i == 0) {
            int port = (int)json_integer_value(json_object_get(n, "port"));
            int64_t dl = sl_mono_ns() + (int64_t)timeout_s * 1000000000LL;
            char other[128];
            int ans;
            while ((ans = node_answers(dir, name, port, other, sizeof(other))) == ANS_NONE && sl_mono_ns() < dl) {
                if (!pid_is_ours(read_pid(dir, name), dir))
                    break;
                sl_sleep_ms(100);
            }
            if (ans == ANS_OTHER) {
                free(shaled);
                json_decref(smap);
                return fail_port_taken(dir, name, port, other);
            }
        }
    }
    free(shaled);
    *nstarted = started;
    json_decref(smap);
    int64_t deadline = sl_mono_ns() + (int64_t)timeout_s * 1000000000LL;
    json_array_foreach(json_object_get(topo, "nodes"), i, n) {
        const char *name = json_string_value(json_object_get(n, "name"));
        int port = (int)json_integer_value(json_object_get(n, "port"));
        if (is_decommissioned(n))
            continue;
        for (;;) {
            char other[128];
            int ans = node_answers(dir, name, port, other, sizeof(other));
            if (ans == ANS_SELF)
                break;
            if (ans == ANS_OTHER)
                return fail_port_taken(dir, name, port, other);
            if (!pid_is_ours(read_pid(dir, name), dir)) {
                fprintf(stderr, "Error: node %s (port %d) exited during start-up\n", name, port);
                print_log_tail(dir, name);
                return 1;
            }
            if (sl_mono_ns() > deadline) {
                fprintf(stderr, "Error: node %s (port %d) did not become healthy within %ds\n", name, port,
                        timeout_s);
                print_log_tail(dir, name);
                return 1;
            }
            sl_sleep_ms(100);
        }
    }
    /* a cluster is ready when the primary says so */
    json_t *first = json_array_get(json_object_get(topo, "nodes"), 0);
    int pport = (int)json_integer_value(json_object_get(first, "port"));
    while (!health_ok(pport, "?prr=true") && sl_mono_ns() < deadline)
        sl_sleep_ms(100);
    return 0;
}

/* --auth: user admin (made once; its password in DIR/admin.password), a
 * token in DIR/admin.token, and auth.client_auth_required on */
static int turn_auth_on(const char *dir, int port)
{
    char ep[64];
    snprintf(ep, sizeof(ep), "%s://127.0.0.1:%d", pg_scheme, port);
    cli_set_endpoint(ep);
    char *pf = sl_xasprintf("%s/admin.password", dir), *tf = sl_xasprintf("%s/admin.token", dir);
    struct sl_buf pw;
    sl_buf_init(&pw);
    int rc = 1;
    struct cli_resp r;
    memset(&r, 0, sizeof(r));
    if (sl_read_file(pf, &pw, 1024) < 0) {
        char pwd[21];
        if (cli_random_text(pwd, 20) < 0) {
            fprintf(stderr, "Error: cannot read /dev/urandom to make the admin's password\n");
            goto out;
        }
        sl_buf_add(&pw, pwd, sizeof(pwd));
        json_t *b = json_pack("{s:s,s:s,s:[s]}", "id", "admin", "password", pw.p, "roles", "Admin");
        char *bs = json_dumps(b, JSON_COMPACT);
        json_decref(b);
        cli_req("POST", "/v1/users", "application/json", bs, strlen(bs), &r);
        free(bs);
        if (r.status != 200) {
            cli_fail(&r, "playground --auth: adding user admin");
            goto out;
        }
        cli_resp_free(&r);
        if (cli_write_private(pf, pw.p, strlen(pw.p)) < 0)
            goto out;
    } else {
        sl_buf_add(&pw, "", 1);
    }
    json_t *lb = json_pack("{s:s}", "password", pw.p);
    char *ls = json_dumps(lb, JSON_COMPACT);
    json_decref(lb);
    cli_req("POST", "/v1/users/admin", "application/json", ls, strlen(ls), &r);
    free(ls);
    if (r.status != 200) {
        cli_fail(&r, "playground --auth: logging in as admin");
        goto out;
    }
    json_t *j = cli_resp_json(&r);
    cli_resp_free(&r);
    const char *tok = json_string_value(json_object_get(j, "token"));
    int wrc = cli_save_token(tf, tok ? tok : "");
    char *ah = sl_xasprintf("Authorization: Bearer %s", tok ? tok : "");
    json_decref(j);
    if (wrc < 0) {
        free(ah);
        goto out;
    }
    const char *body = "{\"action\":\"set-config\",\"value\":{\"auth\":{\"client_auth_required\":true}}}";
    const char *hd[] = { "Content-Type: application/json", ah, NULL };
    cli_req_h("PUT", "/v1/cluster", hd, body, strlen(body), &r);
    free(ah);
    if (r.status != 200) {
        cli_fail(&r, "playground --auth: turning authentication on");
        goto out;
    }
    printf("Auth:     on; user admin, password in %s (0600)\n", pf);
    printf("          token for the CLI: export AIS_AUTHN_TOKEN_FILE=%s (or `shale auth login admin`)\n", tf);
    rc = 0;
out:
    cli_resp_free(&r);
    if (pw.p)
        memset(pw.p, 0, pw.len);
    sl_buf_free(&pw);
    free(pf);
    free(tf);
    return rc;
}

static int pg_start(struct opts *o)
{
    const char *d = opt_str(o, "dir");
    if (!d || !*d) {
        fprintf(stderr, "Usage: shale playground start --dir DIR [--port 8080] [--proxies P --targets T "
                        "--mountpaths M]\n");
        return 1;
    }
    char *dir = abs_dir(d);
    if (!dir) {
        fprintf(stderr, "Error: cannot create %s: %s\n", d, strerror(errno));
        return 1;
    }
    json_t *topo = load_topology(dir);
    int rc;
    bool existed = topo != NULL;
    if (!topo) {
        int port = (int)opt_int(o, "port", 8080);
        int nt = (int)opt_int(o, "targets", 0);
        /* --targets alone means a cluster with one gateway, as ais's playground */
        int np = (int)opt_int(o, "proxies", nt > 0 ? 1 : 0);
        int nmp = (int)opt_int(o, "mountpaths", 1);
        if (np < 0 || nt < 0 || nmp < 1 || np > 16 || nt > 64 || nmp > 16 || port <= 0 || port > 65000) {
            fprintf(stderr, "Error: invalid playground size (proxies 0-16, targets 0-64, mountpaths 1-16, port)\n");
            free(dir);
            return 1;
        }
        if ((np == 0) != (nt == 0)) {
            fprintf(stderr, "Error: a cluster needs at least one proxy and one target (or neither, for a "
                            "standalone node)\n");
            free(dir);
            return 1;
        }
        topo = json_object();
        if (opt_bool(o, "https")) {
            if (make_certs(dir) < 0) {
                json_decref(topo);
                free(dir);
                return 1;
            }
            json_object_set_new(topo, "https", json_true());
            use_https(dir);
        }
        json_t *nodes = json_array();
        if (np == 0) {
            json_array_append_new(nodes, json_pack("{s:s,s:s,s:i}", "name", "n0", "role", "standalone", "port", port));
        } else {
            for (int i = 0; i < np; i++) {
                char nm[16];
                snprintf(nm, sizeof(nm), "p%d", i);
                json_array_append_new(nodes, json_pack("{s:s,s:s,s:i}", "name", nm, "role", "proxy", "port",
                                                       port + i));
            }
            for (int i = 0; i < nt; i++) {
                char nm[16];
                snprintf(nm, sizeof(nm), "t%d", i);
                json_array_append_new(nodes, json_pack("{s:s,s:s,s:i}", "name", nm, "role", "target", "port",
                                                       port + np + i));
            }
        }
        json_object_set_new(topo, "nodes", nodes);
        json_object_set_new(topo, "mountpaths", json_integer(nmp));
        json_object_set_new(topo, "port", json_integer(port));
        int loops = playground_loops((int)json_array_size(nodes));
        json_object_set_new(topo, "http_loops", json_integer(loops));
        char *primary = sl_xasprintf("%s://127.0.0.1:%d", pg_scheme, port);
        size_t i;
        json_t *n;
        json_array_foreach(nodes, i, n) write_node_config(dir, n, primary, nmp, loops);
        free(primary);
        char *tf = sl_xasprintf("%s/playground.json", dir);
        json_dump_file(topo, tf, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        free(tf);
    }
    int started = 0;
    rc = start_nodes(dir, topo, (int)opt_int(o, "timeout", 60), &started);
    if (rc == 0) {
        json_t *nodes = json_object_get(topo, "nodes");
        int port = (int)json_integer_value(json_object_get(json_array_get(nodes, 0), "port"));
        size_t np = 0, nt = 0, i;
        json_t *n;
        json_array_foreach(nodes, i, n) {
            const char *role = json_string_value(json_object_get(n, "role"));
            if (is_decommissioned(n))
                continue;
            if (!strcmp(role, "proxy"))
                np++;
            else if (!strcmp(role, "target"))
                nt++;
        }
        const char *what = !existed ? "started" : started ? "restarted" : "already running";
        if (np)
            printf("Playground %s: %zu prox%s and %zu target%s in %s\n", what, np, np == 1 ? "y" : "ies", nt,
                   nt == 1 ? "" : "s", dir);
        else
            printf("Playground %s: 1 standalone node in %s\n", what, dir);
        printf("Endpoint: %s://127.0.0.1:%d\n", pg_scheme, port);
        printf("Use it:   export AIS_ENDPOINT=%s://127.0.0.1:%d\n", pg_scheme, port);
        if (!strcmp(pg_scheme, "https"))
            printf("          export AIS_CLIENT_CA=%s/tls/ca.crt   (the playground's CA)\n", dir);
        if (opt_bool(o, "auth"))
            rc = turn_auth_on(dir, port);
    }
    json_decref(topo);
    free(dir);
    return rc;
}

static int stop_one(const char *dir, const char *name)
{
    pid_t pid = read_pid(dir, name);
    char *pf = sl_xasprintf("%s/%s/shaled.pid", dir, name);
    if (!pid_is_ours(pid, dir)) {
        unlink(pf);
        free(pf);
        return 0;
    }
    kill(pid, SIGTERM);
    int64_t dl = sl_mono_ns() + 15 * 1000000000LL;
    while (kill(pid, 0) == 0 && sl_mono_ns() < dl) {
        waitpid(pid, NULL, WNOHANG);
        sl_sleep_ms(50);
    }
    if (kill(pid, 0) == 0) {
        fprintf(stderr, "Warning: node %s (pid %d) did not stop in 15s; killing it\n", name, (int)pid);
        kill(pid, SIGKILL);
    }
    unlink(pf);
    free(pf);
    return 1;
}

/* The playground of --dir: its topology (new), the directory's real path in
 * buf (PATH_MAX). NULL after printing "Usage: shale playground VERB --dir
 * DIR" (why: the reason a named directory cannot be resolved instead), or
 * that the directory holds no playground. */
static json_t *pg_open(const struct opts *o, const char *verb, bool why, char *buf)
{
    const char *d = opt_str(o, "dir");
    bool named = d && *d, ok = named && realpath(d, buf);
    if (!ok && named && why) {
        fprintf(stderr, "Error: %s: %s\n", d, strerror(errno));
        return NULL;
    }
    if (!ok) {
        fprintf(stderr, "Usage: shale playground %s --dir DIR\n", verb);
        return NULL;
    }
    json_t *topo = load_topology(buf);
    if (!topo)
        fprintf(stderr, "Error: %s is not a playground directory (no playground.json)\n", buf);
    return topo;
}

static int pg_stop(struct opts *o)
{
    char buf[PATH_MAX];
    json_t *topo = pg_open(o, "stop", true, buf);
    if (!topo)
        return 1;
    /* targets first, then proxies (primary last) */
    json_t *nodes = json_object_get(topo, "nodes");
    int stopped = 0;
    for (size_t i = json_array_size(nodes); i-- > 0;)
        stopped += stop_one(buf, json_string_value(json_object_get(json_array_get(nodes, i), "name")));
    printf("Playground in %s stopped (%d node%s)\n", buf, stopped, stopped == 1 ? "" : "s");
    json_decref(topo);
    return 0;
}

static int pg_status(struct opts *o)
{
    char buf[PATH_MAX];
    json_t *topo = pg_open(o, "status", false, buf);
    if (!topo)
        return 1;
    struct table *t = table_new(5, "NODE", "ROLE", "PORT", "PID", "STATUS");
    size_t i;
    json_t *n;
    int down = 0;
    json_array_foreach(json_object_get(topo, "nodes"), i, n) {
        const char *name = json_string_value(json_object_get(n, "name"));
        int port = (int)json_integer_value(json_object_get(n, "port"));
        pid_t pid = read_pid(buf, name);
        bool alive = pid_is_ours(pid, buf);
        char ps[16], pid_s[16];
        snprintf(ps, sizeof(ps), "%d", port);
        snprintf(pid_s, sizeof(pid_s), "%d", alive ? (int)pid : 0);
        const char *st = !alive && is_decommissioned(n) ? "decommissioned"
                         : !alive                       ? "stopped"
                         : health_ok(port, NULL)        ? "online"
                                                        : "not ready";
        if (strcmp(st, "online") && strcmp(st, "decommissioned"))
            down++;
        table_row(t, name, json_string_value(json_object_get(n, "role")), ps, alive ? pid_s : "-", st);
    }
    table_print(t, stdout, !cli_no_headers);
    table_free(t);
    json_decref(topo);
    return down ? 1 : 0;
}

/* Can a node bind 127.0.0.1:port right now? (Another playground or test may
 * hold the port after ours; the new node would exit at start-up.) */
static bool port_free(int port)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return false;
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    bool ok = bind(s, (struct sockaddr *)&a, sizeof(a)) == 0;
    close(s);
    return ok;
}

static int pg_add_target(struct opts *o)
{
    char buf[PATH_MAX];
    json_t *topo = pg_open(o, "add-target", false, buf);
    if (!topo)
        return 1;
    json_t *nodes = json_object_get(topo, "nodes");
    json_t *first = json_array_get(nodes, 0);
    if (!strcmp(json_string_value(json_object_get(first, "role")), "standalone")) {
        fprintf(stderr, "Error: this playground is a standalone node; start one with --proxies and --targets to "
                        "add targets\n");
        json_decref(topo);
        return 1;
    }
    int maxport = 0, nt = 0;
    size_t i;
    json_t *n;
    json_array_foreach(nodes, i, n) {
        int p = (int)json_integer_value(json_object_get(n, "port"));
        if (p > maxport)
            maxport = p;
        if (!strcmp(json_string_value(json_object_get(n, "role")), "target"))
            nt++;
    }
    int port = (int)opt_int(o, "port", 0);
    if (port < 0 || port > 65535) {
        fprintf(stderr, "Error: --port %d is not a TCP port (1-65535)\n", port);
        json_decref(topo);
        return 1;
    }
    if (port > 0 && !port_free(port)) {
        fprintf(stderr, "Error: port %d is in use on 127.0.0.1; pass another --port or leave it out\n", port);
        json_decref(topo);
        return 1;
    }
    if (port == 0) { /* the first free port above the playground's own */
        for (port = maxport + 1; port < maxport + 200 && port <= 65535 && !port_free(port); port++)
            ;
        if (port >= maxport + 200 || port > 65535) {
            fprintf(stderr, "Error: no free port in %d-%d for the new target; pass --port\n", maxport + 1,
                    maxport + 199);
            json_decref(topo);
            return 1;
        }
    }
    char nm[16];
    snprintf(nm, sizeof(nm), "t%d", nt);
    json_t *node = json_pack("{s:s,s:s,s:i}", "name", nm, "role", "target", "port", port);
    json_array_append_new(nodes, node);
    char *primary = sl_xasprintf("%s://127.0.0.1:%d", pg_scheme, (int)json_integer_value(json_object_get(first, "port")));
    write_node_config(buf, node, primary, (int)json_integer_value(json_object_get(topo, "mountpaths")),
                      (int)json_integer_value(json_object_get(topo, "http_loops")));
    free(primary);
    char *tf = sl_xasprintf("%s/playground.json", buf);
    json_dump_file(topo, tf, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    free(tf);
    int started = 0;
    int rc = start_nodes(buf, topo, 60, &started);
    if (rc == 0) {
        printf("Target %s added on port %d; it joined and rebalance follows\n", nm, port);
    } else { /* a node that never started is not part of the playground */
        json_array_remove(nodes, json_array_size(nodes) - 1);
        tf = sl_xasprintf("%s/playground.json", buf);
        json_dump_file(topo, tf, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        free(tf);
        fprintf(stderr, "Target %s was not added (its directory %s/%s is left for its logs)\n", nm, buf, nm);
    }
    json_decref(topo);
    return rc;
}

int cmd_playground(int argc, char **argv)
{
    static const struct cli_verb verbs[] = { { "start", pg_start, NULL }, { "stop", pg_stop, NULL },
                                             { "status", pg_status, NULL }, { "add-target", pg_add_target, NULL } };
    return cli_run_verb("playground", verbs, SL_ARRAY_SIZE(verbs), argc, argv, false);
}
