/* SPDX-License-Identifier: MIT
 * main.c: shaled, the Shale node. Parses flags, loads the configuration,
 * brings up metadata and storage, starts HTTP, waits for a signal, and
 * shuts down cleanly (a clean shutdown lets the next start skip the full
 * reconcile).
 */
#include "access.h"
#include "arch.h"
#include "bg.h"
#include "etl.h"
#include "cluster.h"
#include "fwd.h"
#include "conf.h"
#include "http.h"
#include "jsonx.h"
#include "log.h"
#include "module.h"
#include "backend.h"
#include "modules.h"
#include "remais.h"
#include "node.h"
#include "store.h"
#include "mirror.h"
#include "resilver.h"
#include "ec.h"
#include "route.h"
#include "tgt.h"
#include "sandbox.h"
#include "start.h"
#include "reb.h"
#include "lost.h"
#include "vote.h"
#include "s3.h"
#include "s3sse.h"
#include "upload.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void usage(FILE *f)
{
    fprintf(f,
            "Usage: shaled [options]\n"
            "\n"
            "  --config FILE          cluster configuration (JSON, AIStore section/key names)\n"
            "  --local-config FILE    per-node configuration (confdir, log_dir, host_net, fspaths)\n"
            "  --role ROLE            standalone (default), proxy or target\n"
            "  --port N               host_net.port\n"
            "  --fspath DIR           add a mountpath (repeatable; overrides fspaths)\n"
            "  --confdir DIR          node metadata directory\n"
            "  --log-dir DIR          log directory (default: stderr)\n"
            "  --bind ADDR            listen on this IPv4 address only (default: the advertised address;\n"
            "                         0.0.0.0 = all interfaces)\n"
            "  --hostname HOST        address to advertise to clients and peers\n"
            "  --primary URL          primary proxy to join (proxy.primary_url)\n"
            "  --set KEY=VALUE        set any configuration key (repeatable)\n"
            "  --check-config         validate the configuration and exit\n"
            "  --version, --help\n"
            "\n"
            "AIStore-style single-dash forms are accepted too: -config=FILE -local_config=FILE -role=target.\n");
}

/* The local address used to reach the primary: the one it can reach us on. */
static char *host_towards(const char *url)
{
    if (!url || (strncmp(url, "http://", 7) && strncmp(url, "https://", 8)))
        return NULL;
    const char *h = strstr(url, "://") + 3;
    const char *end = strpbrk(h, ":/");
    char host[256];
    snprintf(host, sizeof(host), "%.*s", (int)(end ? end - h : (long)strlen(h)), h);
    struct sockaddr_in dst = { .sin_family = AF_INET, .sin_port = htons(9) };
    if (inet_pton(AF_INET, host, &dst.sin_addr) != 1)
        return NULL;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0)
        return NULL;
    char *out = NULL;
    struct sockaddr_in me;
    socklen_t ml = sizeof(me);
    if (connect(fd, (struct sockaddr *)&dst, sizeof(dst)) == 0 && getsockname(fd, (struct sockaddr *)&me, &ml) == 0) {
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &me.sin_addr, ip, sizeof(ip));
        out = sl_xstrdup(ip);
    }
    close(fd);
    return out;
}

static char *detect_host(void)
{
    struct ifaddrs *ifa, *i;
    char ip[INET_ADDRSTRLEN] = "127.0.0.1";
    if (getifaddrs(&ifa) == 0) {
        for (i = ifa; i; i = i->ifa_next) {
            if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_LOOPBACK) ||
                !(i->ifa_flags & IFF_UP))
                continue;
            inet_ntop(AF_INET, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, ip, sizeof(ip));
            break;
        }
        freeifaddrs(ifa);
    }
    return sl_xstrdup(ip);
}

/* new certificate files named by set-config: serve them at once */
static void config_changed(const struct sl_config *old, const struct sl_config *now)
{
    static bool https_started;
    if (!old->use_https && !https_started)
        return; /* (use_https applies at restart) */
    https_started = true;
    if (!strcmp(old->server_crt, now->server_crt) && !strcmp(old->server_key, now->server_key))
        return;
    struct sl_err e = { 0 };
    if (sl_http_tls_load(now->server_crt, now->server_key, &e) < 0)
        sl_loge("TLS certificate not changed (the old one stays): %s", e.msg);
    else
        sl_logi("TLS certificate %s loaded (net.http.server_crt changed)", now->server_crt);
}

/* Signals are taken by one thread from the start, so a stop is seen whatever
 * the main thread is doing: a target waiting for a dead primary to let it
 * join used to ignore SIGTERM for up to timeout.join_startup_time. */
static sigset_t sig_set;
static struct sl_log_conf *sig_lc;
static pthread_mutex_t sig_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t sig_cv = PTHREAD_COND_INITIALIZER;
static int stop_sig;

static void *sig_thread(void *arg)
{
    (void)arg;
    for (;;) {
        int sig = 0;
        if (sigwait(&sig_set, &sig) != 0)
            continue;
        if (sig == SIGHUP) {
            sl_logi("SIGHUP: reopening log%s", sl_conf->use_https && G.ready ? ", reloading the TLS certificate" : "");
            sl_log_open(sig_lc);
            struct sl_err te = { 0 };
            if (!sl_conf->use_https || !G.ready) /* (at start the certificate is being loaded anyway) */
                continue;
            if (sl_http_tls_load(sl_conf->server_crt, sl_conf->server_key, &te) < 0)
                sl_loge("TLS certificate not reloaded (the old one stays): %s", te.msg);
            else
                sl_logi("TLS certificate %s loaded", sl_conf->server_crt);
            continue;
        }
        pthread_mutex_lock(&sig_mu);
        stop_sig = sig;
        G.stopping = true; /* start-up steps that wait (the join) give up */
        pthread_cond_signal(&sig_cv);
        pthread_mutex_unlock(&sig_mu);
        return NULL;
    }
}

int main(int argc, char **argv)
{
    const char *cfg = NULL, *lcfg = NULL, *role_s = "standalone", *bind = NULL;
    const char **ov = sl_xcalloc((size_t)argc * 2 + 8, sizeof(char *));
    int nov = 0;
    char *fspaths = NULL;
    bool check_only = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = NULL;
        char key[64];
        if (a[0] == '-' && a[1] != '-' && a[1])
            a++; /* -config=... -> -config */
        if (a[0] == '-' && a[1] == '-')
            a += 2;
        else if (a[0] == '-')
            a += 1;
        const char *eq = strchr(a, '=');
        if (eq) {
            snprintf(key, sizeof(key), "%.*s", (int)(eq - a), a);
            v = eq + 1;
        } else {
            snprintf(key, sizeof(key), "%s", a);
        }
#define NEEDV()                                                                                                     \
    do {                                                                                                            \
        if (!v) {                                                                                                   \
            if (i + 1 >= argc) {                                                                                    \
                fprintf(stderr, "shaled: option --%s needs a value (see shaled --help)\n", key);                    \
                return 2;                                                                                           \
            }                                                                                                       \
            v = argv[++i];                                                                                          \
        }                                                                                                           \
    } while (0)
        if (!strcmp(key, "help") || !strcmp(key, "h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(key, "version")) {
            printf("shaled %s (%s)\n", SL_VERSION, SL_GITREV);
            return 0;
        } else if (!strcmp(key, "check-config")) {
            check_only = true;
        } else if (!strcmp(key, "config")) {
            NEEDV();
            cfg = v;
        } else if (!strcmp(key, "local-config") || !strcmp(key, "local_config")) {
            NEEDV();
            lcfg = v;
        } else if (!strcmp(key, "role")) {
            NEEDV();
            role_s = v;
        } else if (!strcmp(key, "port")) {
            NEEDV();
            ov[nov++] = sl_xasprintf("host_net.port=%s", v);
        } else if (!strcmp(key, "fspath")) {
            NEEDV();
            char *n = fspaths ? sl_xasprintf("%s,%s", fspaths, v) : sl_xstrdup(v);
            free(fspaths);
            fspaths = n;
        } else if (!strcmp(key, "confdir")) {
            NEEDV();
            ov[nov++] = sl_xasprintf("confdir=%s", v);
        } else if (!strcmp(key, "log-dir") || !strcmp(key, "log_dir")) {
            NEEDV();
            ov[nov++] = sl_xasprintf("log_dir=%s", v);
        } else if (!strcmp(key, "hostname")) {
            NEEDV();
            ov[nov++] = sl_xasprintf("host_net.hostname=%s", v);
        } else if (!strcmp(key, "primary")) {
            NEEDV();
            ov[nov++] = sl_xasprintf("proxy.primary_url=%s", v);
        } else if (!strcmp(key, "bind")) {
            NEEDV();
            bind = v;
        } else if (!strcmp(key, "set")) {
            NEEDV();
            ov[nov++] = sl_xstrdup(v);
        } else if (!strcmp(key, "ntargets")) {
            NEEDV(); /* accepted for aisnode compatibility */
        } else {
            fprintf(stderr, "shaled: unknown option '%s' (see shaled --help)\n", argv[i]);
            return 2;
        }
    }
    if (fspaths)
        ov[nov++] = sl_xasprintf("fspaths=%s", fspaths);
    free(fspaths);

    int role;
    if (!strcmp(role_s, "standalone"))
        role = SL_ROLE_STANDALONE;
    else if (!strcmp(role_s, "proxy"))
        role = SL_ROLE_PROXY;
    else if (!strcmp(role_s, "target"))
        role = SL_ROLE_TARGET;
    else {
        fprintf(stderr, "shaled: invalid role '%s' (valid: standalone, proxy, target)\n", role_s);
        return 2;
    }

    struct sl_err err = { 0 };
    struct sl_config *c = sl_config_load(cfg, lcfg, ov, nov, &err);
    for (int i = 0; i < nov; i++)
        free((void *)ov[i]);
    free(ov);
    if (!c) {
        fprintf(stderr, "shaled: %s\n", err.msg);
        return 2;
    }
    if (role != SL_ROLE_PROXY && c->nfspaths == 0) {
        fprintf(stderr, "shaled: no mountpaths: set \"fspaths\" in the config or pass --fspath DIR\n");
        sl_config_free(c);
        return 2;
    }
    if (check_only && c->use_https && sl_http_tls_load(c->server_crt, c->server_key, &err) < 0) {
        /* (what the start would find: the files, PEM, and the key the certificate's) */
        fprintf(stderr, "shaled: %s\n", err.msg);
        sl_config_free(c);
        return 2;
    }
    if (check_only && c->client_ca_tls[0] && access(c->client_ca_tls, R_OK) < 0) {
        fprintf(stderr, "shaled: cannot read %s (net.http.client_ca_tls): %s\n", c->client_ca_tls, strerror(errno));
        sl_config_free(c);
        return 2;
    }
    if (check_only && c->s3_sse_key_file[0] && sl_sse_key_check(c->s3_sse_key_file, &err) < 0) {
        fprintf(stderr, "shaled: %s\n", err.msg);
        sl_config_free(c);
        return 2;
    }
    if (check_only) {
        printf("configuration OK\n");
        sl_config_free(c);
        return 0;
    }
    sl_config_install(c);
    sl_config_on_install(config_changed);

    struct sl_log_conf lc = { .level = c->log_level, .to_stderr = c->log_to_stderr, .json = c->log_json,
                              .max_size = c->log_max_size };
    char *logpath = NULL;
    if (c->log_dir[0]) {
        if (sl_mkdir_p(c->log_dir, 0755) < 0) {
            fprintf(stderr, "shaled: cannot create log_dir %s: %s\n", c->log_dir, strerror(errno));
            return 1;
        }
        logpath = sl_xasprintf("%s/shaled.log", c->log_dir);
        lc.path = logpath;
    }
    if (sl_log_open(&lc) < 0)
        return 1;

    sl_fault_init();
    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&sig_set);
    sigaddset(&sig_set, SIGINT);
    sigaddset(&sig_set, SIGTERM);
    sigaddset(&sig_set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sig_set, NULL); /* in every thread: only sig_thread takes them */
    sig_lc = &lc;
    pthread_t sig_thr;
    if (pthread_create(&sig_thr, NULL, sig_thread, NULL) != 0) {
        fprintf(stderr, "shaled: cannot start the signal thread: %s\n", strerror(errno));
        return 1;
    }
    pthread_detach(sig_thr);

    if (sl_node_init(c, role, &err) < 0) {
        goto fail;
    }
    sl_log_set_node(G.name);
    snprintf(G.config_path, sizeof(G.config_path), "%s", cfg ? cfg : "");
    snprintf(G.local_config_path, sizeof(G.local_config_path), "%s", lcfg ? lcfg : "");
    sl_http_set_node(G.name);

    /* advertised address */
    memset(&G.self, 0, sizeof(G.self));
    snprintf(G.self.id, sizeof(G.self.id), "%s", G.id);
    G.self.type = role == SL_ROLE_PROXY ? SL_NODE_PROXY : SL_NODE_TARGET;
    if (role == SL_ROLE_PROXY && c->non_electable)
        G.self.flags |= SL_SNF_NONELECTABLE;
    char *host = c->hostname[0] ? sl_xstrdup(c->hostname)
                 : bind && *bind && strcmp(bind, "0.0.0.0") ? sl_xstrdup(bind)
                                                             : NULL;
    if (!host && role != SL_ROLE_STANDALONE)
        host = host_towards(c->primary_url);
    if (!host)
        host = detect_host();
    snprintf(G.self.pub_host, sizeof(G.self.pub_host), "%s", host);
    free(host);
    G.self.pub_port = c->port;
    /* listen where we advertise, not on every interface, unless told */
    char bind_auto[INET_ADDRSTRLEN] = "";
    if (!bind || !*bind) {
        bool split = (c->hostname_intra_control[0] && strcmp(c->hostname_intra_control, G.self.pub_host) &&
                      !c->port_intra_control) ||
                     (c->hostname_intra_data[0] && strcmp(c->hostname_intra_data, G.self.pub_host) &&
                      !c->port_intra_data);
        struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM }, *ai = NULL;
        if (split) {
            sl_logw("listening on all interfaces: the control or data network has its own host name on the public "
                    "port; pass --bind ADDR to listen on one");
        } else if (getaddrinfo(G.self.pub_host, NULL, &hints, &ai) == 0 && ai) {
            inet_ntop(AF_INET, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, bind_auto, sizeof(bind_auto));
            bind = bind_auto;
        } else {
            sl_errf(&err, SL_EINVAL, "cannot resolve the advertised host \"%s\" to an IPv4 address to listen on: "
                    "set host_net.hostname, or pass --bind ADDR (--bind 0.0.0.0 for all interfaces)",
                    G.self.pub_host);
            goto fail;
        }
        if (ai)
            freeaddrinfo(ai);
    }
    snprintf(G.bind_addr, sizeof(G.bind_addr), "%s", bind ? bind : "");
    snprintf(G.self.ctrl_host, sizeof(G.self.ctrl_host), "%s", c->hostname_intra_control);
    snprintf(G.self.data_host, sizeof(G.self.data_host), "%s", c->hostname_intra_data);
    G.self.ctrl_port = c->port_intra_control;
    G.self.data_port = c->port_intra_data;
    sl_snode_set_urls(&G.self);

    sl_logi("shaled %s (%s) starting: role %s, id %s, port %d, %d mountpath(s), config v%lld", SL_VERSION, SL_GITREV,
            sl_role_name(role), G.id, c->port, c->nfspaths, (long long)c->config_version);

    if (sl_is_target() && sl_store_init(c, G.id, &err) < 0) {
        goto fail;
    }
    /* what hangs on the store (quiesced in this order when it closes) */
    sl_store_hook(&sl_resilver_hooks);
    sl_store_hook(&sl_mirror_hooks);
    sl_store_hook(&sl_ec_hooks);
    sl_bmd_listen(sl_tgt_bmd_changed);
    sl_backend_set_alias_resolver(sl_remais_url); /* backend_bck ais://@ALIAS/NAME */
    if (sl_arch_init(sl_conf->plugins_dir, &err) < 0) {
        goto fail;
    }

    /* what watches the cluster */
    sl_cluster_hook(&sl_reb_hooks);
    sl_cluster_hook(&sl_lost_hooks);
    sl_cluster_hook(&sl_vote_hooks);
    if (sl_start_cluster(&err) < 0) {
        goto fail;
    }
    if (sl_is_target()) {
        sl_store_fsck(sl_conf->fsck);
        sl_mpt_recover(); /* the multipart uploads in flight at the last stop (upload.h), then S3's view of them */
        s3_uploads_recover();
    }
    sl_etl_init();

    int workers = sl_conf->http_workers;
    if (workers <= 0) {
        /* one poll loop per core, as nginx's "worker_processes auto":
         * nothing slow runs on them. More loops won ~10% req/s on a shared
         * 2-CPU machine by taking CPU from other processes, and cost ~20%
         * more CPU per request in context switches (bench/RESULTS.md §17) */
        long n = sysconf(_SC_NPROCESSORS_ONLN);
        workers = (int)(n > 256 ? 256 : n > 2 ? n : 2); /* (256: net.http.workers' limit) */
    }
    if (sl_bg_start(sl_conf->etl_workers, &err) < 0) {
        goto fail;
    }
    sl_modules_install(sl_modules);
    sl_access_init();
    if (sl_conf->use_https && sl_http_tls_load(sl_conf->server_crt, sl_conf->server_key, &err) < 0)
        goto fail;
    if (G.stopping) /* a stop came during the start: stop, cleanly */
        goto stop;
    if (sl_http_start(sl_route, bind, c->port, workers, sl_conf->http_conn_timeout_s,
                      sl_conf->http_header_timeout_s, (unsigned)sl_conf->http_max_conns,
                      (unsigned)sl_conf->http_max_conns_per_ip,
                      (size_t)sl_conf->http_max_header, &err) < 0) {
        goto fail;
    }
    if (sl_start_after_http(&err) < 0) {
        if (G.stopping) {
            sl_logi("start-up given up: %s", err.msg);
            goto stop;
        }
        sl_http_stop();
        goto fail;
    }
    G.ready = true;
    sl_modules_start();
    sl_logi("%s ready: %s (%d HTTP workers)", G.name, G.self.url, workers);

stop:
    pthread_mutex_lock(&sig_mu);
    while (!stop_sig)
        pthread_cond_wait(&sig_cv, &sig_mu);
    int sig = stop_sig;
    pthread_mutex_unlock(&sig_mu);
    sl_logi("signal %d: shutting down", sig);
    G.stopping = true;
    sl_lua_cancel_all();
    sl_stop_cluster();
    sl_fwd_stop(5000);
    sl_http_stop();
    sl_bg_stop();
    if (sl_is_target())
        sl_store_close(true);
    sl_arch_fini();
    sl_etl_fini();
    sl_node_close();
    sl_logi("%s stopped", G.name);
    sl_log_close();
    free(logpath);
    sl_smap_install(NULL);
    sl_bmd_install(NULL);
    sl_config_free_all();
    return 0;

fail:
    sl_loge("%s", err.msg);
    fprintf(stderr, "shaled: %s\n", err.msg);
    sl_log_close();
    free(logpath);
    return 1;
}
