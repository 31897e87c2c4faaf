/* SPDX-License-Identifier: MIT
 * cli.h: the shale command-line client. Conventions follow AIStore's `ais`
 * (../shared/spec/cli.md): bucket URIs ais://b[/obj], AIS_ENDPOINT, tables
 * with upper-case headers, IEC sizes, one-line confirmations, progress bars,
 * non-zero exit on error.
 */
#ifndef SL_CLI_H
#define SL_CLI_H

#include "sl.h"
#include <jansson.h>
#include <curl/curl.h>
#include <stdio.h>

/* ---- options ---- */
struct opts {
    int argc;
    char **argv;           /* positional arguments */
    /* flags parsed generically: --name value or --name=value or --bool */
    int nflags;
    struct {
        char *name;
        char *value;       /* NULL for booleans */
    } flags[64];
};
/* Parse argv (after the command words). valued: comma list of flags that
 * take a value, e.g. "props,limit,page-size"; booleans: those that do not.
 * Returns -1 on an unknown flag, after printing one line with the closest
 * known flag. Commands use cli_opts, which takes the lists from help.c. */
int opts_parse(struct opts *o, int argc, char **argv, const char *valued, const char *booleans);
/* Parse the flags of command `path` ("get", "bucket cp") as its help entry
 * lists them (aliases such as -f become the entry's long name), and refuse
 * more positional arguments than the command takes, naming the first extra
 * one. Returns -1 after printing the error. */
int cli_opts(struct opts *o, const char *path, int argc, char **argv);
/* cli_opts, then the usage of path when there are fewer than min positional
 * arguments: 0, or 1 after printing the error */
int cli_opts_min(struct opts *o, const char *path, int argc, char **argv, int min);
/* "Usage: ..." of command path to stderr, with a pointer to its --help; returns 1 */
int cli_usage(const char *path);
/* the full help of path ("bucket cp") to f; -1 when there is none */
int cli_help(const char *path, FILE *f);
/* 1 when group (a command with subcommands: "bucket") has none named word
 * (near: the closest, or ""); 0 when it has, or is no group. */
int cli_help_unknown_sub(const char *group, const char *word, char *near, size_t n);
/* one line per command: "  name  description" (the commands of the top-level help) */
void cli_help_overview(FILE *f, const char *const *names, size_t n);
/* every command path of the help table ("bucket cp"), in table order, to fn */
void cli_help_paths(void (*fn)(void *arg, const char *path), void *arg);
/* every spelling of every flag path takes ("--prefix", "-f"), to fn; -1 when path has no entry */
int cli_help_flags(const char *path, void (*fn)(void *arg, const char *flag), void *arg);
/* `shale completion bash|zsh` (completion.c) */
int cmd_completion(int argc, char **argv);
/* `shale version` (completion.c) */
int cmd_version(int argc, char **argv);
/* edit distance of two short words (99 when either is over 40 characters) */
int cli_distance(const char *a, const char *b);
/* the command path the current flags belong to ("get"), for messages (set by cli_opts) */
extern const char *cli_cmd_path;
const char *opt_str(const struct opts *o, const char *name);    /* NULL if absent */
/* flag i of o is known as name from now on (an alias's canonical name) */
void opts_rename(struct opts *o, int i, const char *name);
/* free everything opts_parse allocated (called once at exit) */
void cli_cleanup(void);
bool opt_bool(const struct opts *o, const char *name);
long long opt_int(const struct opts *o, const char *name, long long dflt);

/* ---- endpoint and HTTP ---- */
const char *cli_endpoint(void);
void cli_set_endpoint(const char *url);

struct cli_resp {
    long status;
    struct sl_buf body;
    struct sl_buf hdrs;     /* raw response headers of the final response */
    char errmsg[1024];      /* transport error or server's "message" */
};

/* One request. body may be NULL. Follows redirects (301/307, method kept). */
/* A limit on each following request's whole time (0: none): for probes of
 * nodes that may hold a connection open without answering. */
void cli_set_req_timeout(long ms);
int cli_req(const char *method, const char *path_and_query, const char *ctype, const void *body, size_t blen,
            struct cli_resp *out);
/* The same with header lines ("Name: value"; NULL-terminated list). */
int cli_req_h(const char *method, const char *path_and_query, const char *const *hdrs, const void *body, size_t blen,
              struct cli_resp *out);
/* A GET (hdrs may be NULL) to the node at url (scheme://host:port) instead
 * of the endpoint, which stays as it is. */
int cli_get_at(const char *url, const char *path_and_query, const char *const *hdrs, struct cli_resp *out);
/* ActMsg request: {"action":action,"name":name,"value":value} (value consumed). */
int cli_act(const char *method, const char *path_and_query, const char *action, const char *name, json_t *value,
            struct cli_resp *out);
void cli_resp_free(struct cli_resp *r);
/* value of a response header (first), copied into out; false if absent */
bool cli_resp_header(const struct cli_resp *r, const char *name, char *out, size_t n);
/* print "Error: <message>" for a failed response and return 1 */
int cli_fail(const struct cli_resp *r, const char *what);
json_t *cli_resp_json(const struct cli_resp *r);
/* GET pq: 0 and *out its JSON body (new; NULL if it has none), or
 * cli_fail(what)'s 1 (*out NULL) when the answer is not 200 */
int cli_get_json(const char *pq, const char *what, json_t **out);
/* j as indented JSON and a newline on stdout (--json) */
void cli_print_json(const json_t *j);
/* One page of a listing (GET pq with "list"): msg (the LsoMsg; consumed)
 * gets *token and *uuid ("" for the first page), which are then replaced
 * by the next page's ("" token: this was the last). The page (new), or NULL
 * after printing the error. */
json_t *cli_list_page(const char *pq, json_t *msg, char **token, char **uuid);
/* Every entry of a listing (GET pq with "list"), page after page: fn(arg,
 * entry) for each; msg holds the LsoMsg fields (props, prefix, flags; only
 * read), the token and uuid are added. 0 at the end, fn's non-zero value
 * when it stops, or non-zero after printing the error. */
int cli_list_each(const char *pq, const json_t *msg, int (*fn)(void *arg, const json_t *entry), void *arg);

/* Read a whole file ("-" = stdin) into a new NUL-terminated buffer; NULL
 * after printing "Error: cannot open ..." */
char *cli_read_file(const char *path, size_t *len);
/* A spec file ("-" = stdin) in JSON or YAML, which must hold an object (a
 * mapping): a new reference, or NULL after printing one line that names
 * the file, what is wrong and the forms accepted. what: "dsort spec". */
json_t *cli_read_spec(const char *path, const char *what);

/* "a,b,c" -> a new JSON array of the non-empty names */
json_t *cli_names(const char *list);
/* --timeout (a duration such as 90s, 10m, 1h; default 1h) into *ns; -1
 * after printing the error */
int cli_timeout(const struct opts *o, int64_t *ns);
/* A job started: its id on stdout, how to follow it on stderr. */
void cli_job_started(const char *id);
/* GET /v1/cluster?what=WHAT (status, qryxstats) with a JSON query body (q consumed) */
int cli_query(const char *what, json_t *q, struct cli_resp *out);
/* An ActMsg request answered with a job id: the id (new), or NULL after
 * printing "Error: what: <message>" (value consumed) */
char *cli_act_id(const char *method, const char *pq, const char *action, json_t *value, const char *what);
/* Wait for job id (progress: dots), then say what it wrote: "<done> N objects
 * (SIZE) <where>", or for a dry run "[DRY RUN] No modifications on the
 * cluster" and "N objects (SIZE) would have been <would>"; then the objects
 * that failed as OBJECT ECODE ERROR rows (*failed of them, *shown listed).
 * Returns cli_job_wait's result. (job.c) */
int cli_job_report(const char *id, int64_t tmo, bool progress, bool dry, const char *done, const char *where,
                   const char *would, uint64_t *failed, size_t *shown);
/* OBJECT ECODE ERROR, one row per error (the first line of its message);
 * objkey names the object field ("obj" or "obj_name") */
void cli_print_obj_errors(const json_t *errs, const char *objkey);
/* The value at a dotted path ("checksum.type") of doc (borrowed), or NULL */
json_t *cli_json_path(json_t *doc, const char *dotted);
/* The same as text: strings bare, other values as JSON, "" when absent (new) */
char *cli_json_path_text(json_t *doc, const char *dotted);
/* For each "KEY=VALUE" of kv[0..n): "KEY" set to: "now" (was: "before"),
 * read from the documents before and after the change (after NULL: VALUE). */
void cli_print_changes(json_t *before, json_t *after, char **kv, int n);

/* A group's verbs: argv[0] names one; its flags are parsed as help.c lists
 * them for path (NULL: "GROUP VERB"); keep_verb leaves the verb as o.argv[0]. */
struct cli_verb {
    const char *verb;
    int (*fn)(struct opts *o);
    const char *path;
};
/* Run the verb argv[0] of group; an unknown one is one line naming the valid ones. (help.c) */
int cli_run_verb(const char *group, const struct cli_verb *verbs, size_t n, int argc, char **argv, bool keep_verb);

/* ---- bucket URIs ---- */
struct uri {
    char provider[8];       /* "ais", "aws", ... */
    char bucket[SL_MAX_BCKNAME + 1];
    char *obj;              /* object name or prefix (may be ""), owned */
    bool trailing_slash;
};
int uri_parse(const char *s, struct uri *u, bool need_bucket);
void uri_free(struct uri *u);
/* "?provider=ais" */
const char *uri_query(const struct uri *u);
/* "/v1/objects/<b>/<escaped obj>" */
char *uri_obj_path(const struct uri *u, const char *obj);

/* ---- output ---- */
struct table;
struct table *table_new(int ncols, ...);      /* header names */
void table_row(struct table *t, ...);         /* ncols strings */
struct table *table_new_arr(int ncols, const char *const *hdrs);
void table_row_arr(struct table *t, const char *const *cells);
void table_print(struct table *t, FILE *f, bool headers);
void table_free(struct table *t);

struct progress;
struct progress *progress_new(const char *label, uint64_t total, bool bytes);
void progress_add(struct progress *p, uint64_t n);
void progress_draw(struct progress *p, bool final);
void progress_free(struct progress *p);

extern bool cli_json;        /* --json */
extern bool cli_no_headers;  /* -H */

/* ---- commands ---- */
int cmd_bucket(int argc, char **argv);
int cmd_ls(int argc, char **argv);
int cmd_put(int argc, char **argv);
int cmd_get(int argc, char **argv);
int cmd_object(int argc, char **argv);
int cmd_blob_download(int argc, char **argv);
int cmd_nbi(int argc, char **argv);
/* show nbi s3://B [--inv-name N] [--json] (help entry: nbi show; for show.c's `show nbi`) */
int cli_show_nbi(int argc, char **argv);
int cmd_rmo(int argc, char **argv);
int cmd_prefetch(int argc, char **argv);
int cmd_evict(int argc, char **argv);
int cmd_download(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_performance(int argc, char **argv);
int cmd_playground(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_rmb(int argc, char **argv);
int cmd_job(int argc, char **argv);
int cmd_advanced(int argc, char **argv);
int cmd_start(int argc, char **argv);
int cmd_dsort(int argc, char **argv);
int cmd_archive(int argc, char **argv);
int cmd_cluster(int argc, char **argv);
int cmd_etl(int argc, char **argv);
int cmd_ishard(int argc, char **argv);
int cmd_ml(int argc, char **argv);
int cmd_cp(int argc, char **argv);
/* bucket cp, cp and object cp: path is the spelling used, for messages */
int cli_cp(const char *path, int argc, char **argv);
int cmd_storage(int argc, char **argv);
/* the node_status of target id (snode: its Smap entry), through the gateway; NULL when it does not answer (show.c) */
json_t *cli_node_status(const char *id, json_t *snode);
/* the targets arg (t[ID] or ID; NULL: every one) names, {id: snode} (new); NULL after the error, which
 * quotes usage ("performance disk [TARGET]") (show.c) */
json_t *cli_sel_targets(const char *arg, const char *usage);
/* performance latency|disk|capacity ARGS (perf.c) */
int cli_perf(const char *view, int argc, char **argv);
/* Each target's disks (targets: {id: snode}) over one interval of every ns: rows TARGET DISK READ ...
 * into t (cli_disk_table's columns) when not NULL, the mountpaths without a disk as lines into notes;
 * {"t[ID]": {"disks": {...}, "no_disk": {...}}} (new) (perf.c) */
json_t *cli_disk_rates(json_t *targets, int64_t every, struct table *t, struct sl_buf *notes);
struct table *cli_disk_table(void);
/* start job resilver on every target, or on target (t[ID] or ID); --wait as the other starts */
int cli_resilver_start(const struct opts *o, const char *target);
int cli_scrub_start(const struct opts *o);
int cmd_scrub(int argc, char **argv);
int cmd_config(int argc, char **argv);
int cmd_search(int argc, char **argv);
int cmd_s3(int argc, char **argv);
int cmd_auth(int argc, char **argv);
int cmd_tls(int argc, char **argv);
int cmd_log(int argc, char **argv);
/* PUT the file path ("-": stdin) as object obj of u, xq ("&k=v...") after the query; 0, or -1 with err
 * filled (object.c) */
int cli_put_one_q(CURL *c, const struct uri *u, const char *path, const char *obj, const char *xq,
                  struct progress *prog, char *err, size_t errn);
/* object promote PATH ais://B[/PREFIX] ... (more.c) */
int cli_object_promote(int argc, char **argv);
/* cluster reset-stats|download-logs|shutdown|reload-backend-creds ARGS (more.c); -1: not one of them */
int cli_cluster_more(const char *verb, int argc, char **argv);
/* log get NODE [FILE] [--all] (more.c) */
int cli_log_get(struct opts *o);
/* storage mountpath fshc TARGET MOUNTPATH (more.c) */
int cli_mpath_fshc(int argc, char **argv);
/* advanced random-node|random-mountpath (more.c) */
int cli_random_node(struct opts *o);
int cli_random_mountpath(struct opts *o);
/* bucket lru ais://B [--enable|--disable] (more.c) */
int cli_bucket_lru(int argc, char **argv);
/* object mpu VERB ... (mpu.c) */
int cli_object_mpu(int argc, char **argv);
/* cliconf.c: the CLI's settings file and aliases */
int cmd_alias(int argc, char **argv);
int cmd_config_cli(int argc, char **argv);
char *cli_conf_path(void);
json_t *cli_conf_load(void);
char *cli_conf_endpoint(void);
char **cli_alias_words(const char *name, int *n);
/* name is a top-level command (shale.c) */
bool cli_is_command(const char *name);
/* the token requests carry: AIS_AUTHN_TOKEN, else the file cli_token_path
 * names; NULL if none (free()) */
char *cli_token(void);
/* where the token is kept: AIS_AUTHN_TOKEN_FILE, else
 * ~/.config/shale/auth.token; NULL without either (free()) */
char *cli_token_path(void);
/* h plus "Authorization: Bearer TOKEN" when there is a token */
struct curl_slist *cli_auth_hdr(struct curl_slist *h);
/* Write a file only its owner may read (0600; an old one is replaced);
 * -1 after printing why */
int cli_write_private(const char *path, const void *p, size_t n);
/* Save a token where the CLI reads it: {"token": ...}, 0600 (auth.c) */
int cli_save_token(const char *path, const char *tok);
/* n characters [A-Za-z0-9] from the kernel's random source, NUL-terminated
 * (out holds n + 1; n at most 256); -1 if it cannot be read */
int cli_random_text(char *out, size_t n);
/* What every request of the CLI sets on its handle: the url, HTTPS
 * (AIS_CLIENT_CA: the CA to trust; AIS_SKIP_VERIFY_CRT=true), redirects
 * followed, no signals, the user agent shale-cli/VERSION */
void cli_curl_opts(CURL *c, const char *url);
/* poll a job (id or kind) until it ends; 0 = finished without errors */
int cli_job_wait(const char *sel, int64_t timeout_ns, bool progress);

#endif
