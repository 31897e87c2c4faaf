/* SPDX-License-Identifier: MIT
 * config.c: the configuration schema, loading, validation and decoding.
 */
#include "conf.h"
#include "cksum.h"
#include "log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { T_STR, T_INT, T_BOOL, T_DUR, T_SIZE, T_FSPATHS, T_PCT };

#define F_LOCAL 1   /* per-node key: not part of the cluster config */
#define F_RO 2      /* set by the system (uuid, config_version) */
#define F_NOOP 4    /* kept for AIStore's config files; nothing reads it: set-config refuses a change */
#define F_RESTART 8 /* read at start: set-config stores it and says a restart applies it */
#define F_SECRET 16 /* its value is never shown (sl_config_redacted, sl_config_overridden) */

struct key {
    const char *path;
    int type;
    const char *dflt;      /* textual default; NULL = absent */
    int flags;
    const char *choices;   /* for T_STR: "a|b|c" */
    const char *help;
};

/* The schema. AIStore names where the feature exists; Shale additions are
 * marked in docs/configuration.md. Append here to add a key. */
static const struct key schema[] = {
    { "confdir", T_STR, "", F_LOCAL, NULL, "node metadata directory (node id, Smap, BMD)" },
    { "log_dir", T_STR, "", F_LOCAL, NULL, "log directory" },
    { "host_net.hostname", T_STR, "", F_LOCAL, NULL, "advertised public host or IP" },
    { "host_net.hostname_intra_control", T_STR, "", F_LOCAL, NULL, NULL },
    { "host_net.hostname_intra_data", T_STR, "", F_LOCAL, NULL, NULL },
    { "host_net.port", T_INT, "8080", F_LOCAL, NULL, "public HTTP port" },
    { "host_net.port_intra_control", T_INT, "0", F_LOCAL, NULL, NULL },
    { "host_net.port_intra_data", T_INT, "0", F_LOCAL, NULL, NULL },
    { "fspaths", T_FSPATHS, NULL, F_LOCAL, NULL, "mountpaths: {\"/data1\": \"\", ...} or [\"/data1\", ...]" },

    { "uuid", T_STR, "", F_RO, NULL, "cluster uuid" },
    { "config_version", T_INT, "1", F_RO, NULL, NULL },
    { "lastupdate_time", T_STR, "", F_RO, NULL, NULL },

    { "checksum.type", T_STR, "xxhash2", 0, "none|xxhash|xxhash2|md5|crc32c|sha256|sha512", NULL },
    { "checksum.validate_cold_get", T_BOOL, "true", F_NOOP, NULL, NULL },
    { "checksum.validate_warm_get", T_BOOL, "false", 0, NULL, NULL },
    { "checksum.validate_obj_move", T_BOOL, "false", F_NOOP, NULL, NULL },
    { "checksum.enable_read_range", T_BOOL, "false", 0, NULL, NULL },

    { "versioning.enabled", T_BOOL, "true", 0, NULL, NULL },
    { "versioning.validate_warm_get", T_BOOL, "false", F_NOOP, NULL, NULL },
    { "versioning.synchronize", T_BOOL, "false", F_NOOP, NULL, NULL },

    { "log.level", T_INT, "3", 0, NULL, "verbosity 0-5" },
    { "log.to_stderr", T_BOOL, "false", F_RESTART, NULL, NULL },
    { "log.format", T_STR, "text", F_RESTART, "text|json", NULL },
    { "log.max_size", T_SIZE, "64MiB", F_RESTART, NULL, NULL },
    { "log.max_total", T_SIZE, "512MiB", F_NOOP, NULL, NULL },

    { "write_policy.data", T_STR, "immediate", 0, "immediate|never", "fsync object data before commit" },
    { "write_policy.md", T_STR, "immediate", 0, "immediate|delayed|never", "sync metadata on commit" },

    { "timeout.cplane_operation", T_DUR, "2s", 0, NULL, NULL },
    { "timeout.max_keepalive", T_DUR, "4s", 0, NULL, NULL },
    { "timeout.max_host_busy", T_DUR, "20s", F_NOOP, NULL, NULL },
    { "timeout.startup_time", T_DUR, "1m", F_NOOP, NULL, NULL },
    { "timeout.join_startup_time", T_DUR, "3m", F_RESTART, NULL, NULL },
    { "timeout.send_file_time", T_DUR, "5m", 0, NULL, NULL },

    { "keepalivetracker.proxy.interval", T_DUR, "10s", F_NOOP, NULL, NULL },
    { "keepalivetracker.proxy.name", T_STR, "heartbeat", F_NOOP, "heartbeat|average", NULL },
    { "keepalivetracker.proxy.factor", T_INT, "3", F_NOOP, NULL, NULL },
    { "keepalivetracker.target.interval", T_DUR, "10s", 0, NULL, NULL },
    { "keepalivetracker.target.name", T_STR, "heartbeat", F_NOOP, "heartbeat|average", NULL },
    { "keepalivetracker.target.factor", T_INT, "3", 0, NULL, NULL },
    { "keepalivetracker.retry_factor", T_INT, "4", F_NOOP, NULL, NULL },

    { "proxy.primary_url", T_STR, "", F_RESTART, NULL, NULL },
    { "proxy.original_url", T_STR, "", F_NOOP, NULL, NULL },
    { "proxy.discovery_url", T_STR, "", F_NOOP, NULL, NULL },
    { "proxy.non_electable", T_BOOL, "false", F_RESTART, NULL,
      "this gateway never becomes the primary by election (read by each gateway at start)" },

    { "rebalance.enabled", T_BOOL, "true", 0, NULL, NULL },

    { "mirror.enabled", T_BOOL, "false", 0, NULL, "new buckets are n-way mirrors (their props' mirror.enabled)" },
    { "mirror.copies", T_INT, "2", 0, NULL,
      "replicas of each object in new buckets, the main one included: 2-32 (0 = 2); 1 only when disabled" },
    { "mirror.burst_buffer", T_INT, "512", 0, NULL,
      "objects a target queues for put-copies per bucket before it walks the bucket instead: 1-10000 (0 = 512)" },

    { "ec.enabled", T_BOOL, "false", 0, NULL,
      "new buckets are erasure coded (their props' ec.enabled; needs ec.data_slices+ec.parity_slices+1 targets)" },
    { "ec.data_slices", T_INT, "2", 0, NULL, "data slices of new buckets' erasure coding: 1-32" },
    { "ec.parity_slices", T_INT, "2", 0, NULL,
      "parity slices (or extra full replicas of small objects) of new buckets' erasure coding: 1-32" },
    { "ec.objsize_limit", T_INT, "262144", 0, NULL,
      "new buckets: objects smaller than this many bytes are replicated instead of sliced (0 = slice everything)" },
    { "ec.compression", T_STR, "never", F_NOOP, NULL, NULL },
    { "ec.bundle_multiplier", T_INT, "2", F_NOOP, NULL, NULL },
    { "ec.burst_buffer", T_INT, "512", F_NOOP, NULL, NULL },
    { "ec.disk_only", T_BOOL, "false", F_NOOP, NULL, NULL },

    { "space.cleanupwm", T_PCT, "65", F_NOOP, NULL, NULL },
    { "space.lowwm", T_PCT, "75", 0, NULL, "LRU eviction frees space down to this percent of a mountpath" },
    { "space.highwm", T_PCT, "90", 0, NULL, "above this percent of a mountpath, LRU eviction starts by itself" },
    { "lru.capacity_upd_time", T_DUR, "10m", 0, NULL, "how often a target checks its mountpaths against space.highwm" },
    { "space.dont_cleanup_time", T_DUR, "30m", 0, NULL,
      "job cleanup-store removes a work file only when nobody wrote it for this long (and none holds it open)" },
    { "scrub.interval", T_DUR, "0s", 0, NULL,
      "how often each target checks every object's bytes against its checksum (job scrub); 0s: only when started" },
    { "lifecycle.interval", T_DUR, "1h", 0, NULL,
      "how often each target applies its buckets' S3 lifecycle rules (job lifecycle); 0s: only when started, else at "
      "least 1s" },
    { "lifecycle.debug_days_offset", T_INT, "0", 0, NULL,
      "tests only: job lifecycle takes \"now\" as this many days later; refused unless every node runs with "
      "SHALE_TEST_CLOCK=1 in its environment" },
    { "space.out_of_space", T_PCT, "95", 0, NULL, NULL },

    { "net.http.use_https", T_BOOL, "false", F_RESTART, NULL,
      "serve HTTPS (libmicrohttpd over GnuTLS) and call peers over HTTPS; one switch for the whole cluster" },
    { "net.http.server_crt", T_STR, "", 0, NULL,
      "the node's certificate (PEM, chain allowed); read again on SIGHUP" },
    { "net.http.server_key", T_STR, "", 0, NULL, "its private key (PEM)" },
    { "net.http.client_ca_tls", T_STR, "", 0, NULL,
      "CA bundle (PEM) that peers' certificates are verified against (\"\" = the system's)" },
    { "net.http.skip_verify", T_BOOL, "false", 0, NULL,
      "do not verify peers' certificates (testing only: anyone on the path can pose as a node)" },
    { "net.http.chunked_transfer", T_BOOL, "true", F_NOOP, NULL, NULL },
    { "net.http.idle_conn_time", T_DUR, "60s", F_RESTART, NULL, NULL },
    { "net.http.header_timeout", T_DUR, "10s", F_RESTART, NULL,
      "a connection that sends nothing for this long before its request header is complete is closed (idle or "
      "stalled clients that never finish a request); once a header is in, net.http.idle_conn_time applies" },
    { "net.http.max_conns_per_ip", T_INT, "1024", F_RESTART, NULL,
      "connections one client address may hold open at once; more are closed at once (0 = no limit; the nodes of "
      "a cluster on one host share 127.0.0.1 with their clients)" },
    { "net.http.max_conns", T_INT, "8192", F_RESTART, NULL,
      "connections the node holds open at once; at the limit the one that waited the longest (for its first "
      "request, or between requests) is closed to make room, and a new one is refused only when every one is in "
      "a request" },
    { "net.http.idle_conns", T_INT, "256", F_NOOP, NULL, NULL },
    { "net.http.workers", T_INT, "0", F_RESTART, NULL, "HTTP poll loops, one thread each (0 = one per core, at least 2; at most 256)" },
    { "net.http.max_header_size", T_SIZE, "16KiB", F_RESTART, NULL, NULL },
    { "net.http.max_json_body", T_SIZE, "16MiB", 0, NULL, NULL },

    { "lso.page_size", T_INT, "10000", 0, NULL, "default list-objects page size" },
    { "s3.vhost_domain", T_STR, "", 0, NULL,
      "virtual-hosted S3: a request for Host BUCKET.<this domain> is an S3 request on BUCKET (\"\" = path style "
      "only, on /s3)" },
    { "s3.sse_key_file", T_STR, "", 0, NULL,
      "SSE-S3 (server-side encryption, docs/s3.md): the file holding the cluster's 256-bit master key, 64 hex "
      "digits or 44 base64 characters; the same file on every node (\"\" = SSE-S3 and bucket default encryption "
      "are refused; SSE-C needs no key file)" },
    { "s3.sse_c_allow_http", T_BOOL, "false", 0, NULL,
      "INSECURE: accept SSE-C (a customer's key in the request's headers) over plain HTTP; false = such a request "
      "is refused with 400 InvalidRequest unless it came over TLS, as AWS does" },
    { "s3.root", T_BOOL, "false", 0, NULL,
      "serve S3 at the root path as well as on /s3 (AIStore's S3-API-via-Root): a request whose path is not one of "
      "Shale's own (/v1/..., /s3, /ais, /gs, /az, /metrics) is an S3 request; for clients that cannot put a path in "
      "their endpoint" },

    { "auth.intra_cluster.ttl", T_DUR, "60s", 0, NULL,
      "how long a cluster signature (peer call, redirect) is valid; nodes' clocks must agree this closely" },
    { "auth.client_auth_required", T_BOOL, "false", 0, NULL,
      "require a JWT (Authorization: Bearer) on client requests; gateways check it, targets take only signed "
      "redirects" },
    { "auth.signature.method", T_STR, "HS256", 0, "HS256|HS384|HS512|RS256|RS384|RS512",
      "algorithm of the tokens this cluster accepts" },
    { "auth.signature.key", T_STR, "", F_SECRET, NULL,
      "HMAC secret (HS*) or RSA public key, PEM (RS*) of the token issuer; \"\" = the cluster's own AuthN "
      "(HS* only)" },
    { "auth.expiration_time", T_DUR, "24h", 0, NULL, "lifetime of tokens the cluster's AuthN issues" },
    { "auth.login_attempts", T_INT, "5", 0, NULL,
      "failed logins a user or address may make per minute before the AuthN answers 429" },

    { "arch.max_members", T_INT, "1000000", 0, NULL, "refuse archives with more members" },
    { "arch.max_member_size", T_SIZE, "16GiB", 0, NULL, NULL },
    { "arch.max_compression_ratio", T_INT, "1000", 0, NULL, "zip-bomb guard" },
    { "get_batch.max_items", T_INT, "10000", 0, NULL, "items one get-batch request may name (more: 400; 0: the default)" },
    { "get_batch.mem", T_SIZE, "256MiB", 0, NULL,
      "memory a target holds for get-batch items received from other targets; past it they wait on disk (0: no "
      "limit)" },

    { "backend.blob_chunk", T_SIZE, "8MiB", 0, NULL,
      "a cold GET of a remote object bigger than this reads it in ranges of this size, backend.blob_workers at a "
      "time (1MiB to 256MiB)" },
    { "backend.blob_workers", T_INT, "4", 0, NULL,
      "range reads of one cold object in flight at once (1: one stream, no ranges; at most 32)" },

    { "plugins.dir", T_STR, "", F_RESTART, NULL, "directory of format/sample-key plugins" },
    { "promote.dir", T_STR, "/var/lib/shale/promote", 0, NULL,
      "the directory promote reads files from, on every target (absolute; empty: promote is off)" },

    { "etl.workers", T_INT, "0", F_LOCAL, NULL,
      "threads that run Lua transforms and other long request work (0 = cores, at least 2)" },
    { "etl.log_size", T_SIZE, "256KiB", 0, NULL, "script log kept per ETL on each target (oldest lines dropped)" },
    { "etl.max_errors", T_INT, "1000", 0, NULL, "object errors kept per ETL on each target (oldest dropped)" },
    { "etl.max_object_size", T_SIZE, "1GiB", 0, NULL, "largest object an object-mode transform accepts" },

    { "features", T_STR, "0", F_NOOP, NULL, NULL },

    { "shale.fsck", T_STR, "auto", F_LOCAL, "auto|quick|full", "startup reconcile of files and metadata" },
};

struct sl_config *volatile sl_conf;

static void (*on_install)(const struct sl_config *old, const struct sl_config *now);

void sl_config_on_install(void (*fn)(const struct sl_config *old, const struct sl_config *now))
{
    on_install = fn;
}

void sl_config_install(struct sl_config *c)
{
    /* readers hold plain pointers without locks, so the old config is
     * retired (chained to the new one), not freed */
    c->retired = sl_conf;
    __atomic_store_n(&sl_conf, c, __ATOMIC_RELEASE);
    if (on_install && c->retired)
        on_install(c->retired, c);
}

static void origin_free(void);

void sl_config_free_all(void)
{
    origin_free();
    struct sl_config *c = sl_conf;
    sl_conf = NULL;
    while (c) {
        struct sl_config *next = c->retired;
        sl_config_free(c);
        c = next;
    }
}

static const struct key *find_key(const char *path)
{
    for (size_t i = 0; i < SL_ARRAY_SIZE(schema); i++)
        if (strcmp(schema[i].path, path) == 0)
            return &schema[i];
    return NULL;
}

static bool is_section(const char *path)
{
    size_t n = strlen(path);
    for (size_t i = 0; i < SL_ARRAY_SIZE(schema); i++)
        if (strncmp(schema[i].path, path, n) == 0 && schema[i].path[n] == '.')
            return true;
    return false;
}

/* The names directly under section ("" = top level): keys and sub-sections,
 * or only sub-sections. */
static void section_keys(const char *section, bool sections_only, struct sl_buf *b)
{
    size_t n = strlen(section);
    for (size_t i = 0; i < SL_ARRAY_SIZE(schema); i++) {
        const char *p = schema[i].path;
        if (n == 0 || (strncmp(p, section, n) == 0 && p[n] == '.')) {
            const char *rest = n ? p + n + 1 : p;
            const char *dot = strchr(rest, '.');
            if (sections_only && !dot)
                continue;
            size_t l = dot ? (size_t)(dot - rest) : strlen(rest);
            /* skip duplicates of sub-sections */
            char tmp[128];
            snprintf(tmp, sizeof(tmp), "%.*s", (int)l, rest);
            char needle[140];
            snprintf(needle, sizeof(needle), ", %s,", tmp);
            char *hay = sl_xasprintf(", %s,", b->p ? b->p : "");
            bool dup = strstr(hay, needle) != NULL;
            free(hay);
            if (dup)
                continue;
            if (b->len)
                sl_buf_adds(b, ", ");
            sl_buf_adds(b, tmp);
        }
    }
}

static int unknown_key(const char *path, const char *where, struct sl_err *err)
{
    char section[256];
    snprintf(section, sizeof(section), "%s", path);
    char *dot = strrchr(section, '.');
    if (dot)
        *dot = 0;
    else
        section[0] = 0;
    struct sl_buf b;
    sl_buf_init(&b);
    section_keys(section, false, &b);
    if (section[0] && !b.len) {
        /* the section itself is unknown: say so, and list those of its parent */
        char parent[256];
        snprintf(parent, sizeof(parent), "%s", section);
        char *pd = strrchr(parent, '.');
        if (pd)
            *pd = 0;
        else
            parent[0] = 0;
        section_keys(parent, true, &b);
        sl_errf(err, SL_EINVAL, "unknown configuration key \"%s\"%s%s: section \"%s\" does not exist; valid "
                "sections%s%s%s: %s", path, where ? " in " : "", where ? where : "", section,
                parent[0] ? " in \"" : "", parent, parent[0] ? "\"" : "", b.p ? b.p : "");
        sl_buf_free(&b);
        return -1;
    }
    sl_errf(err, SL_EINVAL, "unknown configuration key \"%s\"%s%s; valid keys %s%s%s: %s", path,
            where ? " in " : "", where ? where : "", section[0] ? "in section \"" : "at top level",
            section, section[0] ? "\"" : "", b.p ? b.p : "");
    sl_buf_free(&b);
    return -1;
}

/* Normalize one value against its schema entry, returning a new reference. */
static json_t *norm_value(const struct key *k, json_t *v, struct sl_err *err)
{
    char tmp[64];
    switch (k->type) {
    case T_STR:
        if (!json_is_string(v)) {
            if (json_is_integer(v) && k->choices == NULL) {
                snprintf(tmp, sizeof(tmp), "%lld", (long long)json_integer_value(v));
                return json_string(tmp);
            }
            sl_errf(err, SL_EINVAL, "configuration key \"%s\" must be a string", k->path);
            return NULL;
        }
        if (k->choices) {
            const char *s = json_string_value(v);
            char *ch = sl_xstrdup(k->choices), *save = NULL;
            bool ok = false;
            for (char *t = strtok_r(ch, "|", &save); t; t = strtok_r(NULL, "|", &save))
                if (strcmp(t, s) == 0)
                    ok = true;
            free(ch);
            if (!ok) {
                sl_errf(err, SL_EINVAL, "configuration key \"%s\": invalid value \"%s\" (valid: %s)", k->path, s,
                        k->choices);
                return NULL;
            }
        }
        return json_incref(v);
    case T_INT:
    case T_PCT: {
        long long x;
        if (json_is_integer(v)) {
            x = json_integer_value(v);
        } else if (json_is_string(v)) {
            char *end;
            x = strtoll(json_string_value(v), &end, 10);
            if (*end || end == json_string_value(v)) {
                sl_errf(err, SL_EINVAL, "configuration key \"%s\" must be an integer, got \"%s\"", k->path,
                        json_string_value(v));
                return NULL;
            }
        } else {
            sl_errf(err, SL_EINVAL, "configuration key \"%s\" must be an integer", k->path);
            return NULL;
        }
        if (x < 0 || (k->type == T_PCT && x > 100)) {
            sl_errf(err, SL_EINVAL, "configuration key \"%s\": value %lld out of range", k->path, x);
            return NULL;
        }
        return json_integer(x);
    }
    case T_BOOL:
        if (json_is_boolean(v))
            return json_incref(v);
        if (json_is_string(v) && (!strcmp(json_string_value(v), "true") || !strcmp(json_string_value(v), "false")))
            return json_boolean(!strcmp(json_string_value(v), "true"));
        sl_errf(err, SL_EINVAL, "configuration key \"%s\" must be true or false", k->path);
        return NULL;
    case T_DUR: {
        int64_t ns;
        if (json_is_integer(v)) {
            /* Go encodes durations as strings; an integer is taken as seconds */
            sl_format_duration((int64_t)json_integer_value(v) * 1000000000LL, tmp, sizeof(tmp));
            return json_string(tmp);
        }
        if (!json_is_string(v) || sl_parse_duration(json_string_value(v), &ns) < 0) {
            sl_errf(err, SL_EINVAL, "configuration key \"%s\" must be a duration such as \"10s\" or \"2m\"",
                    k->path);
            return NULL;
        }
        return json_incref(v);
    }
    case T_SIZE: {
        uint64_t n;
        if (json_is_integer(v) && json_integer_value(v) >= 0)
            return json_incref(v);
        if (!json_is_string(v) || sl_parse_size(json_string_value(v), &n) < 0) {
            sl_errf(err, SL_EINVAL, "configuration key \"%s\" must be a size such as \"64MiB\" or 1048576", k->path);
            return NULL;
        }
        return json_incref(v);
    }
    case T_FSPATHS: {
        json_t *out = json_object();
        if (json_is_object(v)) {
            const char *p;
            json_t *lbl;
            json_object_foreach(v, p, lbl) {
                if (p[0] != '/') {
                    json_decref(out);
                    sl_errf(err, SL_EINVAL, "fspaths: \"%s\" is not an absolute path", p);
                    return NULL;
                }
                json_object_set_new(out, p, json_is_string(lbl) ? json_incref(lbl) : json_string(""));
            }
        } else if (json_is_array(v)) {
            size_t i;
            json_t *e;
            json_array_foreach(v, i, e) {
                if (!json_is_string(e) || json_string_value(e)[0] != '/') {
                    json_decref(out);
                    sl_errf(err, SL_EINVAL, "fspaths: entry %zu is not an absolute path", i);
                    return NULL;
                }
                json_object_set_new(out, json_string_value(e), json_string(""));
            }
        } else {
            json_decref(out);
            sl_errf(err, SL_EINVAL, "fspaths must be an object {\"/path\": \"\"} or an array of paths");
            return NULL;
        }
        return out;
    }
    }
    return NULL;
}

static int set_path(json_t *doc, const char *path, json_t *val)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", path);
    json_t *cur = doc;
    char *save = NULL, *tok = strtok_r(buf, ".", &save);
    while (tok) {
        char *next = strtok_r(NULL, ".", &save);
        if (!next) {
            json_object_set_new(cur, tok, val);
            return 0;
        }
        json_t *sub = json_object_get(cur, tok);
        if (!json_is_object(sub)) {
            sub = json_object();
            json_object_set_new(cur, tok, sub);
        }
        cur = sub;
        tok = next;
    }
    json_decref(val);
    return -1;
}

static json_t *get_path(json_t *doc, const char *path)
{
    char buf[256];
    snprintf(buf, sizeof(buf), "%s", path);
    json_t *cur = doc;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ".", &save); tok && cur; tok = strtok_r(NULL, ".", &save))
        cur = json_object_get(cur, tok);
    return cur;
}

/* Walk src, validating every key against the schema, writing normalized
 * values into dst. */
static int merge_validated(json_t *dst, json_t *src, const char *prefix, const char *where, struct sl_err *err)
{
    const char *k;
    json_t *v;
    if (!json_is_object(src))
        return sl_errf(err, SL_EINVAL, "configuration%s%s must be a JSON object", where ? " in " : "",
                       where ? where : "");
    json_object_foreach(src, k, v) {
        char path[256];
        if (strchr(k, '.') && !prefix[0]) {
            /* flat "a.b": value form */
            snprintf(path, sizeof(path), "%s", k);
        } else {
            snprintf(path, sizeof(path), "%s%s%s", prefix, prefix[0] ? "." : "", k);
        }
        const struct key *ks = find_key(path);
        if (ks) {
            json_t *nv = norm_value(ks, v, err);
            if (!nv) {
                if (where)
                    sl_err_wrap(err, "%s", where);
                return -1;
            }
            set_path(dst, path, nv);
            continue;
        }
        if (json_is_object(v) && is_section(path)) {
            if (merge_validated(dst, v, path, where, err) < 0)
                return -1;
            continue;
        }
        if (json_is_object(v) && json_object_size(v) == 0 && !is_section(path))
            return unknown_key(path, where, err);
        return unknown_key(path, where, err);
    }
    return 0;
}

static json_t *defaults(void)
{
    json_t *d = json_object();
    for (size_t i = 0; i < SL_ARRAY_SIZE(schema); i++) {
        const struct key *k = &schema[i];
        if (!k->dflt)
            continue;
        json_t *v;
        switch (k->type) {
        case T_INT:
        case T_PCT:
            v = json_integer(strtoll(k->dflt, NULL, 10));
            break;
        case T_BOOL:
            v = json_boolean(strcmp(k->dflt, "true") == 0);
            break;
        default:
            v = json_string(k->dflt);
            break;
        }
        set_path(d, k->path, v);
    }
    return d;
}

bool sl_test_clock_allowed(void)
{
    const char *e = getenv("SHALE_TEST_CLOCK");
    return e && !strcmp(e, "1");
}

static const char *gs(json_t *doc, const char *path)
{
    json_t *v = get_path(doc, path);
    return json_is_string(v) ? json_string_value(v) : "";
}

static long long gi(json_t *doc, const char *path)
{
    json_t *v = get_path(doc, path);
    return json_is_integer(v) ? json_integer_value(v) : 0;
}

static bool gb(json_t *doc, const char *path)
{
    return json_is_true(get_path(doc, path));
}

static int64_t gd(json_t *doc, const char *path)
{
    int64_t ns = 0;
    sl_parse_duration(gs(doc, path), &ns);
    return ns;
}

static uint64_t gz(json_t *doc, const char *path)
{
    json_t *v = get_path(doc, path);
    uint64_t n = 0;
    if (json_is_integer(v))
        return (uint64_t)json_integer_value(v);
    sl_parse_size(json_string_value(v), &n);
    return n;
}

static int wpolicy(const char *s)
{
    return !strcmp(s, "never") ? SL_WP_NEVER : !strcmp(s, "delayed") ? SL_WP_DELAYED : SL_WP_IMMEDIATE;
}

struct sl_config *sl_config_from_json(json_t *doc, struct sl_err *err)
{
    struct sl_config *c = sl_xcalloc(1, sizeof(*c));
    c->root = doc;
    c->confdir = sl_xstrdup(gs(doc, "confdir"));
    c->log_dir = sl_xstrdup(gs(doc, "log_dir"));
    c->hostname = sl_xstrdup(gs(doc, "host_net.hostname"));
    c->hostname_intra_control = sl_xstrdup(gs(doc, "host_net.hostname_intra_control"));
    c->hostname_intra_data = sl_xstrdup(gs(doc, "host_net.hostname_intra_data"));
    c->port = (int)gi(doc, "host_net.port");
    c->port_intra_control = (int)gi(doc, "host_net.port_intra_control");
    c->port_intra_data = (int)gi(doc, "host_net.port_intra_data");
    if (c->port <= 0 || c->port > 65535) {
        sl_errf(err, SL_EINVAL, "host_net.port %d is not a valid TCP port", c->port);
        c->root = NULL;
        sl_config_free(c);
        return NULL;
    }
    json_t *fs = json_object_get(doc, "fspaths");
    if (json_is_object(fs)) {
        c->fspaths = sl_xcalloc(json_object_size(fs) + 1, sizeof(char *));
        const char *p;
        json_t *v;
        json_object_foreach(fs, p, v) c->fspaths[c->nfspaths++] = sl_xstrdup(p);
    }
    c->uuid = sl_xstrdup(gs(doc, "uuid"));
    c->config_version = gi(doc, "config_version");
    c->cksum_type = sl_cksum_parse(gs(doc, "checksum.type"));
    c->cksum_validate_warm_get = gb(doc, "checksum.validate_warm_get");
    c->cksum_enable_read_range = gb(doc, "checksum.enable_read_range");
    c->versioning = gb(doc, "versioning.enabled");
    c->log_level = (int)gi(doc, "log.level");
    c->log_to_stderr = gb(doc, "log.to_stderr");
    c->log_json = strcmp(gs(doc, "log.format"), "json") == 0;
    c->log_max_size = gz(doc, "log.max_size");
    c->wp_data = wpolicy(gs(doc, "write_policy.data"));
    c->wp_md = wpolicy(gs(doc, "write_policy.md"));
    c->cplane_timeout_ns = gd(doc, "timeout.cplane_operation");
    c->max_keepalive_ns = gd(doc, "timeout.max_keepalive");
    c->startup_time_ns = gd(doc, "timeout.startup_time");
    c->join_startup_time_ns = gd(doc, "timeout.join_startup_time");
    c->send_file_time_ns = gd(doc, "timeout.send_file_time");
    c->keepalive_interval_ns = gd(doc, "keepalivetracker.target.interval");
    c->keepalive_factor = (int)gi(doc, "keepalivetracker.target.factor");
    c->primary_url = sl_xstrdup(gs(doc, "proxy.primary_url"));
    c->rebalance_enabled = gb(doc, "rebalance.enabled");
    c->space_oos_pct = (int)gi(doc, "space.out_of_space");
    c->space_low_pct = (int)gi(doc, "space.lowwm");
    c->space_high_pct = (int)gi(doc, "space.highwm");
    c->lru_capacity_upd_ns = gd(doc, "lru.capacity_upd_time");
    c->space_dont_cleanup_ns = gd(doc, "space.dont_cleanup_time");
    c->scrub_interval_ns = gd(doc, "scrub.interval");
    c->lifecycle_interval_ns = gd(doc, "lifecycle.interval");
    long long lco = gi(doc, "lifecycle.debug_days_offset");
    c->lifecycle_days_offset = (int)lco;
    c->mirror_enabled = gb(doc, "mirror.enabled");
    long long mc = gi(doc, "mirror.copies"), mb = gi(doc, "mirror.burst_buffer");
    c->mirror_copies = mc == 0 ? 2 : mc < 0 || mc > 32 ? -1 : (int)mc;
    c->mirror_burst = mb == 0 ? 512 : mb < 0 || mb > 10000 ? -1 : (int)mb;
    c->ec_enabled = gb(doc, "ec.enabled");
    long long ecd = gi(doc, "ec.data_slices"), ecp = gi(doc, "ec.parity_slices"), ecl = gi(doc, "ec.objsize_limit");
    c->ec_data = (int)ecd;
    c->ec_parity = (int)ecp;
    c->ec_objsize_limit = (int64_t)ecl;
    c->http_workers = (int)gi(doc, "net.http.workers");
    c->http_conn_timeout_s = (int)(gd(doc, "net.http.idle_conn_time") / 1000000000LL);
    c->http_max_header = gz(doc, "net.http.max_header_size");
    int64_t hto = gd(doc, "net.http.header_timeout"), ito = gd(doc, "net.http.idle_conn_time");
    c->http_header_timeout_s = (int)(hto / 1000000000LL);
    c->http_max_conns_per_ip = gi(doc, "net.http.max_conns_per_ip");
    c->http_max_conns = gi(doc, "net.http.max_conns");
    c->http_max_body_json = gz(doc, "net.http.max_json_body");
    c->plugins_dir = sl_xstrdup(gs(doc, "plugins.dir"));
    c->promote_dir = sl_xstrdup(gs(doc, "promote.dir"));
    c->s3_vhost_domain = sl_xstrdup(gs(doc, "s3.vhost_domain"));
    c->s3_root = gb(doc, "s3.root");
    c->s3_sse_c_allow_http = gb(doc, "s3.sse_c_allow_http");
    c->s3_sse_key_file = sl_xstrdup(gs(doc, "s3.sse_key_file"));
    c->intra_ttl_ns = gd(doc, "auth.intra_cluster.ttl");
    c->auth_required = gb(doc, "auth.client_auth_required");
    c->auth_method = sl_xstrdup(gs(doc, "auth.signature.method"));
    c->auth_key = sl_xstrdup(gs(doc, "auth.signature.key"));
    c->auth_token_ttl_ns = gd(doc, "auth.expiration_time");
    c->auth_login_attempts = (int)gi(doc, "auth.login_attempts");
    c->arch_max_members = (uint64_t)gi(doc, "arch.max_members");
    c->arch_max_member_size = gz(doc, "arch.max_member_size");
    c->arch_max_ratio = (uint64_t)gi(doc, "arch.max_compression_ratio");
    c->moss_max_items = (int)gi(doc, "get_batch.max_items");
    c->moss_mem = gz(doc, "get_batch.mem");
    c->lso_page_size = (int)gi(doc, "lso.page_size");
    c->blob_chunk = gz(doc, "backend.blob_chunk");
    c->blob_workers = (int)gi(doc, "backend.blob_workers");
    c->etl_workers = (int)gi(doc, "etl.workers");
    c->etl_log_size = gz(doc, "etl.log_size");
    c->etl_max_errors = (int)gi(doc, "etl.max_errors");
    c->etl_max_object_size = gz(doc, "etl.max_object_size");
    c->fsck = sl_xstrdup(gs(doc, "shale.fsck"));
    c->use_https = gb(doc, "net.http.use_https");
    c->server_crt = sl_xstrdup(gs(doc, "net.http.server_crt"));
    c->server_key = sl_xstrdup(gs(doc, "net.http.server_key"));
    c->client_ca_tls = sl_xstrdup(gs(doc, "net.http.client_ca_tls"));
    c->skip_verify = gb(doc, "net.http.skip_verify");
    c->non_electable = gb(doc, "proxy.non_electable");
    if (c->use_https && (!c->server_crt[0] || !c->server_key[0])) {
        sl_errf(err, SL_EINVAL, "net.http.use_https needs net.http.server_crt and net.http.server_key (PEM files)");
        c->root = NULL;
        sl_config_free(c);
        return NULL;
    }
    if (!(0 < c->space_low_pct && c->space_low_pct <= c->space_high_pct && c->space_high_pct <= c->space_oos_pct &&
          c->space_oos_pct <= 100)) {
        sl_errf(err, SL_EINVAL, "invalid space config: lowwm %d, highwm %d, out_of_space %d (expecting: 0 < lowwm <= "
                "highwm <= out_of_space <= 100; set them together)", c->space_low_pct, c->space_high_pct,
                c->space_oos_pct);
        c->root = NULL;
        sl_config_free(c);
        return NULL;
    }
    if (c->mirror_copies < 0 || (c->mirror_enabled && c->mirror_copies == 1) || c->mirror_burst < 0) {
        sl_errf(err, SL_EINVAL, "invalid mirror config: copies %lld, burst_buffer %lld, enabled %s (copies: 2-32 when "
                "enabled, 0 = 2, 1 only when disabled; burst_buffer: 1-10000, 0 = 512)", mc, mb,
                c->mirror_enabled ? "true" : "false");
        c->root = NULL;
        sl_config_free(c);
        return NULL;
    }
    if (ecd < 1 || ecd > 32 || ecp < 1 || ecp > 32 || ecl < 0) {
        sl_errf(err, SL_EINVAL, "invalid ec config: data_slices %lld, parity_slices %lld, objsize_limit %lld "
                "(data_slices and parity_slices: 1-32; objsize_limit: bytes, 0 or more)", ecd, ecp, ecl);
        c->root = NULL;
        sl_config_free(c);
        return NULL;
    }
    if (c->scrub_interval_ns != 0 && c->scrub_interval_ns < 1000000000LL) {
        sl_errf(err, SL_EINVAL, "scrub.interval must be 0s (off) or at least 1s");
        c->root = NULL;
        sl_config_free(c);
        return NULL;
    }
    if (c->lifecycle_interval_ns != 0 && c->lifecycle_interval_ns < 1000000000LL) {
        sl_errf(err, SL_EINVAL, "lifecycle.interval must be 0s (off: the job runs only when started) or at least 1s");
        c->root = NULL;
        sl_config_free(c);
        return NULL;
    }
    if (lco < 0 || lco > 36500) {
        sl_errf(err, SL_EINVAL, "lifecycle.debug_days_offset must be 0 to 36500 (days; a test clock, leave it 0)");
        c->root = NULL;
        sl_config_free(c);
        return NULL;
    }
    if (c->lru_capacity_upd_ns < 1000000000LL) {
        sl_errf(err, SL_EINVAL, "lru.capacity_upd_time must be at least 1s");
        c->root = NULL;
        sl_config_free(c);
        return NULL;
    }
    for (const char *d = c->s3_vhost_domain; *d; d++)
        if (!((*d >= 'a' && *d <= 'z') || (*d >= '0' && *d <= '9') || *d == '.' || *d == '-')) {
            sl_errf(err, SL_EINVAL, "s3.vhost_domain \"%s\" is not a domain name (lower-case letters, digits, '.' "
                    "and '-')", c->s3_vhost_domain);
            c->root = NULL;
            sl_config_free(c);
            return NULL;
        }
    if (c->blob_chunk < 1024 * 1024 || c->blob_chunk > 256 * 1024 * 1024 || c->blob_workers < 1 ||
        c->blob_workers > 32) {
        sl_errf(err, SL_EINVAL, "backend.blob_chunk must be 1MiB to 256MiB and backend.blob_workers 1 to 32 (got "
                "%llu bytes and %d)", (unsigned long long)c->blob_chunk, c->blob_workers);
        c->root = NULL;
        sl_config_free(c);
        return NULL;
    }
    if (c->promote_dir[0] != 0 && (c->promote_dir[0] != '/' || !strcmp(c->promote_dir, "/"))) {
        sl_errf(err, SL_EINVAL, "promote.dir \"%s\" must be an absolute path other than / (or empty: promote off)",
                c->promote_dir);
        c->root = NULL;
        sl_config_free(c);
        return NULL;
    }
    if (c->intra_ttl_ns < 1000000000LL || c->intra_ttl_ns > 3600000000000LL) {
        sl_errf(err, SL_EINVAL, "auth.intra_cluster.ttl must be 1s to 1h (a signed redirect or peer call is valid "
                "that long)");
        c->root = NULL;
        sl_config_free(c);
        return NULL;
    }
    if (c->auth_token_ttl_ns < 60000000000LL || c->auth_login_attempts < 1) {
        sl_errf(err, SL_EINVAL, "auth.expiration_time must be at least 1m and auth.login_attempts at least 1");
        c->root = NULL;
        sl_config_free(c);
        return NULL;
    }
    if (c->auth_method[0] == 'R' && !c->auth_key[0]) {
        sl_errf(err, SL_EINVAL, "auth.signature.method %s needs auth.signature.key: the issuer's RSA public key "
                "(PEM)", c->auth_method);
        c->root = NULL;
        sl_config_free(c);
        return NULL;
    }
    if (hto < 1000000000LL || hto > 3600000000000LL || ito < 1000000000LL || ito > 86400000000000LL) {
        sl_errf(err, SL_EINVAL, "net.http.header_timeout must be 1s to 1h and net.http.idle_conn_time 1s to 24h (got "
                "%.3fs and %.3fs; libmicrohttpd counts whole seconds)", (double)hto / 1e9, (double)ito / 1e9);
        c->root = NULL;
        sl_config_free(c);
        return NULL;
    }
    if (c->http_max_conns < 16 || c->http_max_conns > 65536) {
        sl_errf(err, SL_EINVAL, "net.http.max_conns must be 16 to 65536 (got %lld)", (long long)c->http_max_conns);
        c->root = NULL;
        sl_config_free(c);
        return NULL;
    }
    if (c->http_max_conns_per_ip < 0 || c->http_max_conns_per_ip > 65536) {
        sl_errf(err, SL_EINVAL, "net.http.max_conns_per_ip must be 0 (no limit) to 65536 (net.http.max_conns, the "
                "node's limit, is reached first when lower; got %lld)", (long long)c->http_max_conns_per_ip);
        c->root = NULL;
        sl_config_free(c);
        return NULL;
    }
    if (gi(doc, "net.http.workers") < 0 || gi(doc, "net.http.workers") > 256) {
        sl_errf(err, SL_EINVAL, "net.http.workers must be 0 (one per core) to 256 poll loops (got %lld)",
                (long long)gi(doc, "net.http.workers"));
        c->root = NULL;
        sl_config_free(c);
        return NULL;
    }
    if (c->keepalive_factor <= 0)
        c->keepalive_factor = 3;
    if (c->lso_page_size <= 0)
        c->lso_page_size = 10000;
    return c;
}

static json_t *load_file(const char *path, struct sl_err *err)
{
    json_error_t je;
    json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
    if (!doc) {
        sl_errf(err, SL_EINVAL, "configuration file %s: %s (line %d, column %d)", path, je.text, je.line, je.column);
        return NULL;
    }
    return doc;
}

int sl_config_set_kv(json_t *doc, const char *key, const char *value, struct sl_err *err)
{
    const struct key *k = find_key(key);
    if (!k)
        return unknown_key(key, NULL, err);
    json_t *raw;
    if (k->type == T_FSPATHS) {
        raw = json_array();
        char *cp = sl_xstrdup(value), *save = NULL;
        for (char *t = strtok_r(cp, ",", &save); t; t = strtok_r(NULL, ",", &save))
            json_array_append_new(raw, json_string(t));
        free(cp);
    } else {
        raw = json_string(value);
    }
    json_t *nv = norm_value(k, raw, err);
    json_decref(raw);
    if (!nv)
        return -1;
    set_path(doc, key, nv);
    return 0;
}

/* what the node's configuration came from (the first sl_config_load), for sl_config_reset */
static struct {
    bool set;
    char *files[2];
    char **ov;
    int nov;
} origin;

static void origin_free(void)
{
    if (!origin.set)
        return;
    free(origin.files[0]);
    free(origin.files[1]);
    for (int i = 0; i < origin.nov; i++)
        free(origin.ov[i]);
    free(origin.ov);
    memset(&origin, 0, sizeof(origin));
}

static void origin_keep(const char *cluster_path, const char *local_path, const char **overrides, int noverrides)
{
    if (origin.set)
        return;
    origin.set = true;
    origin.files[0] = cluster_path ? sl_xstrdup(cluster_path) : NULL;
    origin.files[1] = local_path ? sl_xstrdup(local_path) : NULL;
    origin.ov = sl_xcalloc((size_t)noverrides + 1, sizeof(char *));
    for (int i = 0; i < noverrides; i++)
        origin.ov[i] = sl_xstrdup(overrides[i]);
    origin.nov = noverrides;
}

struct sl_config *sl_config_load(const char *cluster_path, const char *local_path, const char **overrides,
                                 int noverrides, struct sl_err *err)
{
    origin_keep(cluster_path, local_path, overrides, noverrides);
    json_t *doc = defaults();
    const char *files[2] = { cluster_path, local_path };
    for (int i = 0; i < 2; i++) {
        if (!files[i])
            continue;
        json_t *f = load_file(files[i], err);
        int rc = f ? merge_validated(doc, f, "", files[i], err) : -1;
        json_decref(f);
        if (rc < 0)
            goto fail;
    }
    for (int i = 0; i < noverrides; i++) {
        const char *eq = strchr(overrides[i], '=');
        if (!eq) {
            sl_errf(err, SL_EINVAL, "override \"%s\" must look like key=value", overrides[i]);
            goto fail;
        }
        char *key = sl_xstrndup(overrides[i], (size_t)(eq - overrides[i]));
        int rc = sl_config_set_kv(doc, key, eq + 1, err);
        free(key);
        if (rc < 0)
            goto fail;
    }
    struct sl_config *c = sl_config_from_json(doc, err);
    if (!c)
        goto fail;
    return c;
fail:
    json_decref(doc);
    return NULL;
}

void sl_config_free(struct sl_config *c)
{
    if (!c)
        return;
    json_decref(c->root);
    free(c->confdir);
    free(c->log_dir);
    free(c->hostname);
    free(c->hostname_intra_control);
    free(c->hostname_intra_data);
    for (int i = 0; i < c->nfspaths; i++)
        free(c->fspaths[i]);
    free(c->fspaths);
    free(c->uuid);
    free(c->primary_url);
    free(c->plugins_dir);
    free(c->promote_dir);
    free(c->s3_vhost_domain);
    free(c->s3_sse_key_file);
    free(c->auth_method);
    free(c->auth_key);
    free(c->server_crt);
    free(c->server_key);
    free(c->client_ca_tls);
    free(c->fsck);
    free(c);
}

struct sl_config *sl_config_update(const struct sl_config *c, json_t *partial, json_t *restart, struct sl_err *err)
{
    json_t *doc = json_deep_copy(c->root);
    json_t *tmp = json_object();
    if (merge_validated(tmp, partial, "", NULL, err) < 0)
        goto fail;
    /* refuse local keys and read-only keys in a cluster-wide update */
    for (size_t i = 0; i < SL_ARRAY_SIZE(schema); i++) {
        json_t *v = get_path(tmp, schema[i].path);
        if (!v)
            continue;
        if (schema[i].flags & (F_LOCAL | F_RO)) {
            sl_errf(err, SL_EINVAL, "configuration key \"%s\" is %s and cannot be set cluster-wide",
                    schema[i].path, schema[i].flags & F_RO ? "read-only" : "per-node");
            goto fail;
        }
        json_t *cur = get_path(c->root, schema[i].path);
        bool changed = !cur || !json_equal(cur, v);
        if (changed && (schema[i].flags & F_NOOP)) {
            char *was = cur ? json_dumps(cur, JSON_ENCODE_ANY) : NULL;
            sl_errf(err, SL_EINVAL, "configuration key \"%s\" is accepted in config files for AIStore's sake but "
                    "has no effect in this build, so it cannot be changed (it stays %s); nothing was changed",
                    schema[i].path, was ? was : "unset");
            free(was);
            goto fail;
        }
        if (changed && !strcmp(schema[i].path, "lifecycle.debug_days_offset") && !sl_test_clock_allowed() &&
            !(json_is_integer(v) && json_integer_value(v) == 0)) {
            sl_errf(err, SL_EINVAL, "lifecycle.debug_days_offset is a test clock (days added to job lifecycle's "
                    "\"now\"): it can be set only on a cluster whose nodes run with SHALE_TEST_CLOCK=1 in their "
                    "environment, and this one does not; nothing was changed");
            goto fail;
        }
        if (changed && (schema[i].flags & F_RESTART) && restart)
            json_array_append_new(restart, json_string(schema[i].path));
        set_path(doc, schema[i].path, json_incref(v));
    }
    json_decref(tmp);
    tmp = NULL;
    set_path(doc, "config_version", json_integer(c->config_version + 1));
    struct sl_config *nc = sl_config_from_json(doc, err);
    if (!nc)
        goto fail;
    return nc;
fail:
    json_decref(tmp);
    json_decref(doc);
    return NULL;
}

struct sl_config *sl_config_reset(const struct sl_config *c, bool bump, json_t *restart, struct sl_err *err)
{
    if (!origin.set) {
        sl_errf(err, SL_EINTERNAL, "reset-config: the node's configuration files are not known");
        return NULL;
    }
    struct sl_config *f = sl_config_load(origin.files[0], origin.files[1], (const char **)origin.ov, origin.nov, err);
    if (!f) {
        sl_errf(err, SL_EINVAL, "reset-config: %s; nothing was changed (fix the file, then reset again)", err->msg);
        return NULL;
    }
    json_t *doc = json_deep_copy(c->root);
    for (size_t i = 0; i < SL_ARRAY_SIZE(schema); i++) {
        if (schema[i].flags & (F_LOCAL | F_RO))
            continue; /* (local keys cannot change at run time; uuid and version are the cluster's) */
        json_t *fv = get_path(f->root, schema[i].path), *cur = get_path(c->root, schema[i].path);
        if (!fv)
            continue;
        if ((schema[i].flags & F_RESTART) && restart && (!cur || !json_equal(cur, fv)))
            json_array_append_new(restart, json_string(schema[i].path));
        set_path(doc, schema[i].path, json_incref(fv));
    }
    sl_config_free(f);
    if (bump)
        set_path(doc, "config_version", json_integer(c->config_version + 1));
    struct sl_config *nc = sl_config_from_json(doc, err);
    if (!nc)
        json_decref(doc);
    return nc;
}

json_t *sl_config_cluster_json(const struct sl_config *c)
{
    json_t *out = json_object();
    for (size_t i = 0; i < SL_ARRAY_SIZE(schema); i++) {
        if (schema[i].flags & F_LOCAL)
            continue;
        json_t *v = get_path(c->root, schema[i].path);
        if (v)
            set_path(out, schema[i].path, json_incref(v));
    }
    return out;
}

struct sl_config *sl_config_with_cluster(const struct sl_config *c, json_t *cluster, struct sl_err *err)
{
    json_t *doc = json_deep_copy(c->root);
    json_t *tmp = json_object();
    if (merge_validated(tmp, cluster, "", "cluster config", err) < 0) {
        json_decref(tmp);
        json_decref(doc);
        return NULL;
    }
    for (size_t i = 0; i < SL_ARRAY_SIZE(schema); i++) {
        if (schema[i].flags & F_LOCAL)
            continue;
        json_t *v = get_path(tmp, schema[i].path);
        if (v)
            set_path(doc, schema[i].path, json_incref(v));
    }
    json_decref(tmp);
    struct sl_config *nc = sl_config_from_json(doc, err);
    if (!nc)
        json_decref(doc);
    return nc;
}

int sl_config_overridden(const struct sl_config *c, json_t *cluster, struct sl_buf *out)
{
    json_t *def = defaults();
    int n = 0;
    for (size_t i = 0; i < SL_ARRAY_SIZE(schema); i++) {
        if (schema[i].flags & (F_LOCAL | F_RO))
            continue;
        json_t *fv = get_path(c->root, schema[i].path), *pv = get_path(cluster, schema[i].path);
        if (!fv || !pv || json_equal(fv, get_path(def, schema[i].path)) || json_equal(fv, pv))
            continue;
        bool secret = schema[i].flags & F_SECRET;
        char *a = secret ? NULL : json_dumps(fv, JSON_ENCODE_ANY | JSON_COMPACT);
        char *b = secret ? NULL : json_dumps(pv, JSON_ENCODE_ANY | JSON_COMPACT);
        sl_buf_printf(out, "%s%s (file: %s, in effect: %s)", n ? "; " : "", schema[i].path, a ? a : "**********",
                      b ? b : "**********");
        free(a);
        free(b);
        n++;
    }
    json_decref(def);
    return n;
}

json_t *sl_config_redacted(const json_t *doc)
{
    json_t *c = json_deep_copy(doc);
    for (size_t i = 0; i < SL_ARRAY_SIZE(schema); i++) {
        const char *v = (schema[i].flags & F_SECRET) ? json_string_value(get_path(c, schema[i].path)) : NULL;
        if (v && *v)
            set_path(c, schema[i].path, json_string("**********"));
    }
    return c;
}
