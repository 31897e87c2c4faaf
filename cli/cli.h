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
/* Parse argv (after the command words). spec: comma list of flags that take
 * a value, e.g. "props,limit,page-size". Returns -1 on unknown flag. */
int opts_parse(struct opts *o, int argc, char **argv, const char *valued, const char *booleans);
const char *opt_str(const struct opts *o, const char *name);    /* NULL if absent */
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
int cli_req(const char *method, const char *path_and_query, const char *ctype, const void *body, size_t blen,
            struct cli_resp *out);
/* ActMsg request: {"action":action,"name":name,"value":value} (value consumed). */
int cli_act(const char *method, const char *path_and_query, const char *action, const char *name, json_t *value,
            struct cli_resp *out);
void cli_resp_free(struct cli_resp *r);
/* value of a response header (first), copied into out; false if absent */
bool cli_resp_header(const struct cli_resp *r, const char *name, char *out, size_t n);
/* print "Error: <message>" for a failed response and return 1 */
int cli_fail(const struct cli_resp *r, const char *what);
json_t *cli_resp_json(const struct cli_resp *r);
/* Every entry of a listing (GET pq with "list"), page after page: fn(arg,
 * entry) for each; msg holds the LsoMsg fields (props, prefix, flags; only
 * read), the token and uuid are added. 0 at the end, fn's non-zero value
 * when it stops, or non-zero after printing the error. */
int cli_list_each(const char *pq, const json_t *msg, int (*fn)(void *arg, const json_t *entry), void *arg);

/* Read a whole file ("-" = stdin) into a new NUL-terminated buffer; NULL
 * after printing "Error: cannot open ..." */
char *cli_read_file(const char *path, size_t *len);
/* The same, parsed as JSON: a new reference, or NULL after printing
 * "Error: PATH: invalid JSON: ... (line N)" */
json_t *cli_read_json(const char *path);

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
int cmd_rmo(int argc, char **argv);
int cmd_show(int argc, char **argv);
int cmd_playground(int argc, char **argv);
int cmd_create(int argc, char **argv);
int cmd_rmb(int argc, char **argv);
int cmd_job(int argc, char **argv);
int cmd_start(int argc, char **argv);
int cmd_dsort(int argc, char **argv);
int cmd_archive(int argc, char **argv);
int cmd_cluster(int argc, char **argv);
int cmd_etl(int argc, char **argv);
int cmd_ishard(int argc, char **argv);
int cmd_ml(int argc, char **argv);
/* poll a job (id or kind) until it ends; 0 = finished without errors */
int cli_job_wait(const char *sel, int64_t timeout_ns, bool progress);

#endif
