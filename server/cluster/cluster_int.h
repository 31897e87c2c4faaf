/* SPDX-License-Identifier: MIT
 * cluster_int.h: what the cluster's own files share (docs.c, members.c,
 * primary.c, cluster.c), as SQLite's sqliteInt.h: not for the rest of the
 * floor, nor above it.
 *
 * docs.c holds the documents and who is primary; members.c the membership
 * edits; primary.c the primary's role and keepalive; cluster.c the start
 * and stop. The lower of them never calls the higher: docs.c <- members.c
 * <- primary.c <- cluster.c.
 */
#ifndef SL_CLUSTER_INT_H
#define SL_CLUSTER_INT_H

#include "cluster.h"
#include "conf.h"
#include "meta.h"
#include <pthread.h>

/* ---- docs.c ---- */
/* held while a document (RMD, module documents) is read or replaced */
extern pthread_mutex_t sl_cl_mu;
bool sl_cl_primary(void);              /* this gateway acts as the primary (not standalone) */
void sl_cl_set_primary(bool on);
int64_t sl_cl_doc_version(const json_t *d);
/* every document: uuid, smap, bmd, config, rmd and the modules' (new) */
json_t *sl_cl_all_docs(void);
json_t *sl_cl_config_doc(void);
/* push docs (only read) to every node but this one and the offline ones */
void sl_cl_push(json_t *docs);
void sl_cl_push_one(const char *name, json_t *doc); /* takes doc */
/* every document to the node at ctrl_url */
void sl_cl_push_to(const char *ctrl_url);
/* GET ctrl_url/v1/daemon?what=WHAT: the document (new reference) or NULL */
json_t *sl_cl_fetch_doc(const char *ctrl_url, const char *what);
/* take the Smap (and the BMD: buckets made meanwhile) of the node at ctrl_url */
void sl_cl_adopt_smap_from(const char *ctrl_url);
void sl_cl_set_rmd(json_t *d);
/* install nc (taken) as this node's config, its log level, and keep it */
void sl_cl_config_install(struct sl_config *nc);
/* received documents, applied one set at a time: -1 with err on a foreign cluster */
int sl_cl_apply_docs(json_t *docs, struct sl_err *err);
void sl_cl_docs_load(void);            /* what the node kept, at start */
void sl_cl_docs_free(void);
void sl_cl_on_bmd(const struct sl_bmd *old, const struct sl_bmd *cur);  /* (a BMD listener: pushes) */
/* the hooks (cluster.h), for the other files */
void sl_cl_serving(void);
void sl_cl_stopping(void);
void sl_cl_smap_changed(const struct sl_smap *old, const struct sl_smap *cur);
void sl_cl_primary_tick(void);
void sl_cl_joined(const struct sl_snode *n);
void sl_cl_alive(const struct sl_snode *n, const json_t *cii);
int sl_cl_leaving(const char *action, const struct sl_snode *n, bool no_rebalance, bool force, struct sl_err *err);

/* ---- members.c ---- */
struct flag_arg {
    const char *id;
    uint64_t set, clear;
    bool remove;
};
/* an sl_smap_modify edit: set/clear flags of node id, or remove it */
int sl_cl_edit_flags(struct sl_smap *s, void *arg, struct sl_err *err);
/* a copy of node id's entry in the current Smap; false when it has none */
bool sl_cl_find_node(const char *id, struct sl_snode *out);
/* the nodes waiting for their rebalance to end (maintenance, decommission) */
void sl_cl_finish_pending(void);

/* ---- primary.c ---- */
void sl_cl_on_smap(const struct sl_smap *old, const struct sl_smap *cur);  /* (an Smap listener) */
void sl_cl_start_keepalive(void);
void sl_cl_stop_keepalive(void);
void sl_cl_become_primary(void *arg);
/* a gateway configured as the primary that restarts after another took
 * over: the new primary's ctrl URL (malloc'd) when a node knows it */
char *sl_cl_primary_elsewhere(void);

#endif
