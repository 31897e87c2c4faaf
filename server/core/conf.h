/* SPDX-License-Identifier: MIT
 * conf.h: node configuration. JSON with AIStore's section and key names;
 * every key is declared in one schema table (conf.c) with its type and
 * default, and anything else is rejected with a message naming the key.
 * The merged document is kept as JSON (for GET ?what=config and metasync)
 * and decoded into struct sl_config for fast access.
 */
#ifndef SL_CONF_H
#define SL_CONF_H

#include "sl.h"
#include <jansson.h>

enum sl_wpolicy { SL_WP_IMMEDIATE = 0, SL_WP_DELAYED, SL_WP_NEVER };

struct sl_config {
    json_t *root;             /* merged document, owned */

    /* local */
    char *confdir;
    char *log_dir;
    char *hostname;           /* advertised public host ("" = auto) */
    char *hostname_intra_control;
    char *hostname_intra_data;
    int port;
    int port_intra_control;
    int port_intra_data;
    char **fspaths;
    int nfspaths;

    /* cluster */
    char *uuid;
    int64_t config_version;
    int cksum_type;
    bool cksum_validate_warm_get;
    bool cksum_enable_read_range;
    bool versioning;
    int log_level;
    bool log_to_stderr;
    bool log_json;
    uint64_t log_max_size;
    int wp_data;              /* enum sl_wpolicy */
    int wp_md;
    int64_t cplane_timeout_ns;
    int64_t max_keepalive_ns;
    int64_t startup_time_ns;
    int64_t join_startup_time_ns;
    int64_t send_file_time_ns;
    int64_t keepalive_interval_ns;  /* keepalivetracker.target.interval */
    int keepalive_factor;
    char *primary_url;
    bool rebalance_enabled;
    int space_oos_pct;            /* space.out_of_space */
    int space_low_pct;            /* space.lowwm */
    int space_high_pct;           /* space.highwm */
    int64_t lru_capacity_upd_ns;  /* lru.capacity_upd_time */
    int64_t space_dont_cleanup_ns; /* space.dont_cleanup_time */
    int64_t scrub_interval_ns;    /* scrub.interval (0: off) */
    int64_t lifecycle_interval_ns; /* lifecycle.interval (0: off) */
    int lifecycle_days_offset;    /* lifecycle.debug_days_offset (tests: SHALE_TEST_CLOCK=1 only) */
    bool mirror_enabled;          /* mirror.*: the defaults of new buckets' mirror props */
    int mirror_copies;            /* (0 in the file: 2) */
    int mirror_burst;             /* (0 in the file: 512) */
    bool ec_enabled;              /* ec.*: the defaults of new buckets' ec props */
    int ec_data, ec_parity;       /* ec.data_slices, ec.parity_slices (1-32) */
    int64_t ec_objsize_limit;     /* ec.objsize_limit (bytes; 0 = slice everything) */
    int http_workers;             /* net.http.workers: 0 = auto */
    int http_conn_timeout_s;      /* net.http.idle_conn_time (seconds) */
    uint64_t http_max_header;     /* net.http.max_header_size */
    int http_header_timeout_s;    /* net.http.header_timeout (seconds) */
    int64_t http_max_conns_per_ip; /* net.http.max_conns_per_ip (0: no limit) */
    int64_t http_max_conns;       /* net.http.max_conns */
    uint64_t http_max_body_json;  /* net.http.max_json_body */
    char *plugins_dir;            /* plugins.dir */
    char *promote_dir;            /* promote.dir */
    char *s3_vhost_domain;        /* s3.vhost_domain ("" = path style only) */
    bool s3_root;                 /* s3.root: S3 at "/" as well as on /s3 */
    bool s3_sse_c_allow_http;     /* s3.sse_c_allow_http: SSE-C accepted without TLS (insecure) */
    char *s3_sse_key_file;        /* s3.sse_key_file: SSE-S3's master key ("" = no SSE-S3) */
    int64_t intra_ttl_ns;         /* auth.intra_cluster.ttl */
    bool use_https;               /* net.http.use_https */
    char *server_crt, *server_key;/* net.http.server_crt, server_key */
    char *client_ca_tls;          /* net.http.client_ca_tls: CA of peers */
    bool skip_verify;             /* net.http.skip_verify */
    bool non_electable;           /* proxy.non_electable */
    bool auth_required;           /* auth.client_auth_required */
    char *auth_method;            /* auth.signature.method */
    char *auth_key;               /* auth.signature.key */
    int64_t auth_token_ttl_ns;    /* auth.expiration_time */
    int auth_login_attempts;      /* auth.login_attempts */
    uint64_t arch_max_members;    /* arch.max_members */
    int moss_max_items;           /* get_batch.max_items */
    uint64_t moss_mem;            /* get_batch.mem */
    uint64_t arch_max_member_size;/* arch.max_member_size */
    uint64_t arch_max_ratio;      /* arch.max_compression_ratio */
    int lso_page_size;            /* lso.page_size default */
    uint64_t blob_chunk;          /* backend.blob_chunk: range size of a cold GET read in ranges */
    int blob_workers;             /* backend.blob_workers: ranges in flight (1 = one stream) */
    int etl_workers;              /* etl.workers: background pool size (0 = auto) */
    uint64_t etl_log_size;        /* etl.log_size */
    int etl_max_errors;           /* etl.max_errors */
    uint64_t etl_max_object_size; /* etl.max_object_size */
    char *fsck;                   /* shale.fsck: auto|quick|full */
    struct sl_config *retired;    /* older configs (kept alive, see sl_config_install) */
};

/* Build a config from optional files (cluster, local) plus key=value
 * overrides ("host_net.port=8081"). Returns NULL with err on any unknown key,
 * wrong type or bad value. The result is new: sl_config_free it, or hand
 * it to sl_config_install. */
struct sl_config *sl_config_load(const char *cluster_path, const char *local_path,
                                 const char **overrides, int noverrides, struct sl_err *err);
/* Build from an already-parsed document. On success the config owns the
 * caller's reference to doc (as c->root, not incref'd); on failure (NULL)
 * the caller still owns doc. */
struct sl_config *sl_config_from_json(json_t *doc, struct sl_err *err);
void sl_config_free(struct sl_config *c);
/* The test clock (lifecycle.debug_days_offset) may be set: this process
 * runs with SHALE_TEST_CLOCK=1 in its environment. */
bool sl_test_clock_allowed(void);

/* Apply a partial update ({"checksum":{"type":"md5"}} or flat "a.b" keys)
 * on top of c, producing a new config (as from load) with a document of its
 * own. Validation as for load; a change to a key nothing reads is refused.
 * The keys that changed but apply only after a restart are appended to
 * restart (an array; may be NULL). partial and c are only read. */
struct sl_config *sl_config_update(const struct sl_config *c, json_t *partial, json_t *restart, struct sl_err *err);
/* Set one dotted key from a string value in doc (type taken from the
 * schema); doc is edited in place and stays the caller's. */
int sl_config_set_kv(json_t *doc, const char *key, const char *value, struct sl_err *err);

/* c with its cluster keys back to what the node's files (and --set, as at
 * start) give: the runtime set-config changes dropped. Local and read-only
 * keys are c's; config_version is c's (+1 with bump). Keys read only at
 * start that differ are appended to restart (may be NULL). */
struct sl_config *sl_config_reset(const struct sl_config *c, bool bump, json_t *restart, struct sl_err *err);
/* The cluster part only (no local keys), new reference. */
json_t *sl_config_cluster_json(const struct sl_config *c);
/* Replace the cluster part of c with cluster (metasync), keeping local
 * keys. A new config as from sl_config_update; cluster is only read. */
struct sl_config *sl_config_with_cluster(const struct sl_config *c, json_t *cluster, struct sl_err *err);

/* A copy of a config document for display: secrets (auth.signature.key)
 * shown as "**********". New reference. */
/* The cluster keys c's files (and --set) give a value other than the
 * default, which the persisted cluster config `cluster` sets otherwise (and
 * so overrides at start): "key (file: V, in effect: W)" for each, joined
 * with "; " into out. Returns how many. */
int sl_config_overridden(const struct sl_config *c, json_t *cluster, struct sl_buf *out);
json_t *sl_config_redacted(const json_t *doc);

/* Current process-wide config. Replaced atomically; old ones are retired,
 * never freed while the process runs, so readers need no lock: a config
 * read from sl_conf, and every string and json_t in it, stays valid until
 * sl_config_free_all at exit. */
extern struct sl_config *volatile sl_conf;
/* Make c current; takes ownership of c. */
void sl_config_install(struct sl_config *c);
/* fn(old, now) after every install that replaces a config (one listener:
 * the process's; main.c reloads the TLS certificate when its files change) */
void sl_config_on_install(void (*fn)(const struct sl_config *old, const struct sl_config *now));
/* At exit: free the current config and every retired one. */
void sl_config_free_all(void);

#endif
