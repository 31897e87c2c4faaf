/* SPDX-License-Identifier: MIT
 * node.h: this process: its role, identity (stable id kept in confdir),
 * node-level metadata store, and the one place where cluster metadata
 * (Smap, BMD) is modified, versioned, persisted and installed.
 */
#ifndef SL_NODE_H
#define SL_NODE_H

#include "sl.h"
#include "md.h"
#include "meta.h"
#include "conf.h"

enum { SL_ROLE_STANDALONE = 0, SL_ROLE_PROXY, SL_ROLE_TARGET };

struct sl_node {
    int role;
    char id[48];
    char name[64];              /* "p[id]" / "t[id]" (standalone: "t[id]") */
    struct sl_snode self;       /* as advertised (type = proxy or target) */
    struct sl_md_node *md;      /* opened by sl_node_init, closed by sl_node_close */
    int64_t start_ns;
    int64_t start_mono;
    volatile bool ready;
    volatile bool stopping;
    char bind_addr[64];
    char config_path[1024];
    char local_config_path[1024];
};

extern struct sl_node G;

bool sl_is_target(void);        /* stores objects (target or standalone) */
bool sl_is_proxy(void);         /* serves the gateway API (proxy or standalone) */
const char *sl_role_name(int role);

/* Load or create the node id in confdir; open the node LMDB. */
int sl_node_init(const struct sl_config *c, int role, struct sl_err *err);
void sl_node_close(void);

/* Persist and load metadata documents (JSON text in the node LMDB). save
 * only reads doc; load returns a new reference, NULL when the document is
 * missing or corrupt. */
int sl_node_save_doc(const char *key, json_t *doc);
json_t *sl_node_load_doc(const char *key);

/* Modify the BMD: fn edits a private clone (valid during the call only);
 * on success the version is bumped, the result persisted and installed, and
 * listeners notified. One lock serialises every modify and receive of both
 * documents, listeners included. */
typedef int (*sl_bmd_edit_fn)(struct sl_bmd *b, void *arg, struct sl_err *err);
int sl_bmd_modify(sl_bmd_edit_fn fn, void *arg, struct sl_err *err);
/* Install a BMD received from the primary (no version bump). Returns 1 if
 * installed, 0 if older/equal (ignored). Takes the caller's reference to b
 * either way. */
int sl_bmd_receive(struct sl_bmd *b);
/* As for the BMD, but fn returns 1 for "nothing changed" (nothing is
 * installed, 0 is returned) besides 0 and -1. */
typedef int (*sl_smap_edit_fn)(struct sl_smap *s, void *arg, struct sl_err *err);
int sl_smap_modify(sl_smap_edit_fn fn, void *arg, struct sl_err *err);
int sl_smap_receive(struct sl_smap *s);     /* as sl_bmd_receive */

/* Called after a new BMD/Smap is installed (old may be NULL), under the
 * modify lock (a listener must not modify either document). old and cur are
 * valid during the call only: clone what must outlive it. */
typedef void (*sl_bmd_listener)(const struct sl_bmd *old, const struct sl_bmd *cur);
typedef void (*sl_smap_listener)(const struct sl_smap *old, const struct sl_smap *cur);
void sl_bmd_listen(sl_bmd_listener fn);
void sl_smap_listen(sl_smap_listener fn);

#endif
