/* SPDX-License-Identifier: MIT
 * meta.h: cluster metadata documents (Smap, BMD) as immutable, refcounted
 * snapshots, plus HRW placement exactly as AIStore computes it
 * (spec §13.2). Readers take a reference (sl_smap_get) and see one
 * consistent version; writers build a new snapshot and install it.
 *
 * Ownership: a snapshot from _get, _new, _clone or _from_json is a counted
 * reference the caller releases with sl_smap_put / sl_bmd_put; _install
 * takes the caller's reference over. A pointer into a snapshot (an
 * sl_snode, an sl_bck) is valid while the reference is held, and on a
 * snapshot being edited (a clone not yet installed) only until the next
 * _add or _remove, which may move the array. A json_t returned is a new
 * reference.
 */
#ifndef SL_META_H
#define SL_META_H

#include "sl.h"
#include <jansson.h>

/* ---- HRW ---- */
uint64_t sl_hrw_mix(uint64_t x);
uint64_t sl_id_digest(const char *id);
/* uname: "ais/@#/bucket/object" */
void sl_obj_uname(struct sl_buf *out, const char *provider, const char *bucket, const char *obj, size_t olen);
/* S3 versioning (server/api/s3ver.c): an older version or a delete marker of
 * object KEY is an object of its own named KEY "\x01" SUFFIX, SUFFIX 16 hex
 * digits of ~(its time in unix ns) then 4 more hex digits (its version id is
 * the whole SUFFIX) or "null" (the null version). Such a name is placed, on
 * targets and mountpaths, and locked, by KEY: sl_obj_uname drops the suffix.
 * The length of KEY in such a name, else nlen. */
#define SL_VER_SEP '\x01'
#define SL_VER_SUFFIX 21              /* the separator and 20 characters */
size_t sl_objname_vkey(const char *name, size_t nlen);

/* ---- Smap ---- */
enum { SL_NODE_PROXY = 1, SL_NODE_TARGET = 2 };
#define SL_SNF_NONELECTABLE 1
#define SL_SNF_IC 2
#define SL_SNF_MAINT 4
#define SL_SNF_DECOMM 8
#define SL_SNF_MAINT_POSTREB 16
#define SL_SNF_OFFLINE (1 << 16)     /* Shale: stopped answering keepalives */

struct sl_snode {
    char id[48];
    int type;
    char pub_host[256];
    int pub_port;
    char ctrl_host[256];
    int ctrl_port;
    char data_host[256];
    int data_port;
    uint64_t flags;
    uint64_t digest;
    char url[300];      /* public direct_url */
    char ctrl_url[300];
    char data_url[300];
};

struct sl_smap {
    int refs;
    int64_t version;
    int64_t term;                /* raised only by an election a majority of gateways won */
    char uuid[48];
    char primary[48];
    char creation_time[32];
    int nnodes;
    struct sl_snode *nodes;
};

/* new reference to the current Smap (before the first install, to a new
 * empty one) */
struct sl_smap *sl_smap_get(void);
/* Whether a cluster document of (term, version) replaces one of (cterm,
 * cversion): a newer term always does (the majority elected its primary;
 * what the other side made meanwhile was never committed), else a newer
 * version of the same term. */
static inline bool sl_md_newer(int64_t term, int64_t version, int64_t cterm, int64_t cversion)
{
    return term != cterm ? term > cterm : version > cversion;
}
void sl_smap_put(struct sl_smap *s);          /* the last put frees s; NULL ok */
struct sl_smap *sl_smap_clone(const struct sl_smap *s);   /* refs = 1 */
struct sl_smap *sl_smap_new(void);                        /* empty, refs = 1 */
/* takes ownership of one reference; the registry's reference to the
 * previous Smap is dropped (holders of their own keep it alive) */
void sl_smap_install(struct sl_smap *s);
const struct sl_snode *sl_smap_find(const struct sl_smap *s, const char *id);
const struct sl_snode *sl_smap_primary(const struct sl_smap *s);
int sl_smap_count(const struct sl_smap *s, int type, bool active_only);
void sl_smap_add(struct sl_smap *s, const struct sl_snode *n);   /* replace if same id */
void sl_smap_remove(struct sl_smap *s, const char *id);
json_t *sl_snode_json(const struct sl_snode *n);
int sl_snode_from_json(json_t *j, struct sl_snode *n, struct sl_err *err);
json_t *sl_smap_json(const struct sl_smap *s);
/* j is only read; a new Smap, refs = 1 */
struct sl_smap *sl_smap_from_json(json_t *j, struct sl_err *err);
void sl_snode_set_urls(struct sl_snode *n);
/* HRW owner among active targets (not in maintenance); NULL if none. */
const struct sl_snode *sl_smap_hrw_target(const struct sl_smap *s, const char *uname, size_t ulen);
/* The first (up to) max active targets by HRW score for uname, best first
 * (out[0] is sl_smap_hrw_target's): EC placement. Returns how many. */
int sl_smap_hrw_list(const struct sl_smap *s, const char *uname, size_t ulen, const struct sl_snode **out, int max);
/* Same, but over all targets including those in maintenance. */
const struct sl_snode *sl_smap_hrw_target_all(const struct sl_smap *s, const char *uname, size_t ulen);
/* Node "name" as AIStore prints it: p[id] / t[id]. */
void sl_snode_name(const struct sl_snode *n, char *out, size_t sz);

/* ---- BMD ---- */
/* bucket props mirror.* (spec ha-durability.md §2) */
#define SL_MIRROR_COPIES_DFLT 2
#define SL_MIRROR_COPIES_MAX 32
#define SL_EC_SLICES_MAX 32
#define SL_MIRROR_BURST_DFLT 512
#define SL_MIRROR_BURST_MAX 10000

struct sl_bck {
    char name[SL_MAX_BCKNAME + 1];
    char provider[8];          /* "ais" */
    uint64_t bid;
    int64_t created;           /* unix ns */
    int cksum_type;
    bool versioning;
    int s3ver;                 /* props "s3_versioning": SL_S3VER_* */
    unsigned rflags;           /* SL_BCK_*: what every read asks of props, decoded once */
    json_t *props;             /* full Bprops, immutable */
};
enum { SL_S3VER_OFF = 0,        /* "": never turned on: one copy per object, version "null" */
       SL_S3VER_ON = 1,         /* "Enabled": every write a new version, the older kept */
       SL_S3VER_SUSPENDED = 2 };/* "Suspended": writes make the null version, older versions kept */
enum { SL_BCK_VALIDATE_GET = 1,  /* checksum.validate_warm_get */
       SL_BCK_LATEST_GET = 2 };  /* versioning.validate_warm_get */

struct sl_bmd {
    int refs;
    int64_t version;
    int64_t term;                /* the term of the primary that made this version */
    char uuid[48];
    int n;
    struct sl_bck *bcks;
};

/* As for the Smap: new reference (an empty BMD before the first install),
 * the last put frees (NULL ok), clone and new give refs = 1 (a clone shares
 * the buckets' props, which are immutable), install takes one reference. */
struct sl_bmd *sl_bmd_get(void);
void sl_bmd_put(struct sl_bmd *b);
struct sl_bmd *sl_bmd_clone(const struct sl_bmd *b);
struct sl_bmd *sl_bmd_new(void);
void sl_bmd_install(struct sl_bmd *b);
const struct sl_bck *sl_bmd_find(const struct sl_bmd *b, const char *provider, const char *name);
/* provider://name of the current BMD, copied into out (sl_bck_release):
 * false when it has none */
bool sl_bmd_copy(const char *provider, const char *name, struct sl_bck *out);
/* Add a bucket built from props (NULL = defaults from config); returns the
 * added entry (inside b), or NULL with err. props_to_set stays the
 * caller's. */
const struct sl_bck *sl_bmd_add(struct sl_bmd *b, const char *provider, const char *name, json_t *props_to_set,
                                struct sl_err *err);
void sl_bmd_remove(struct sl_bmd *b, const char *provider, const char *name);
/* Merge a partial Bprops into the bucket's props (validated): the bucket
 * gets a new props object; partial stays the caller's. */
int sl_bmd_set_props(struct sl_bmd *b, const char *provider, const char *name, json_t *partial, bool reset,
                     struct sl_err *err);
/* New reference; its bucket props are b's own objects (shared, not
 * copied): do not modify them. */
json_t *sl_bmd_json(const struct sl_bmd *b);
/* A new BMD, refs = 1, that takes references to j's bucket props objects
 * (shared with j, not copied). */
struct sl_bmd *sl_bmd_from_json(json_t *j, struct sl_err *err);

/* Copy of a bucket entry that outlives the BMD snapshot (props referenced):
 * release with sl_bck_release. */
void sl_bck_copy(struct sl_bck *dst, const struct sl_bck *src);
void sl_bck_release(struct sl_bck *b);

/* An object of a bucket handed to another thread (work offloaded to a
 * pool): the bucket (sl_bck_copy) and the name, copied. sl_bobj_free takes
 * a void * so that it can be an offload's cancel. */
struct sl_bobj {
    struct sl_bck b;
    char *name;
    size_t nlen;
};
struct sl_bobj *sl_bobj_new(const struct sl_bck *b, const char *name, size_t nlen);
void sl_bobj_free(void *o);

/* Validation and naming */
/* A bucket as users write it, "ais://NAME[/REST]" or "NAME[/REST]"; with
 * SL_BCK_UNAME also AIStore's "PROVIDER/@#/NAME/[REST]" (then a bare
 * "A/B" reads as provider A, bucket B). On success prov holds the
 * normalised provider ("ais" when none is written), name the bucket
 * (not validated: see sl_bck_name_valid) and *rest points into s just
 * past "NAME/" (or at its end). 400 on a malformed string, 501 on a
 * namespace other than the global one. */
enum { SL_BCK_UNAME = 1 };
int sl_bck_parse(const char *s, unsigned flags, char *prov, size_t psz, char *name, size_t nsz, const char **rest,
                 struct sl_err *err);
int sl_bck_name_valid(const char *name, struct sl_err *err);
/* "" / "ais" -> "ais", "s3" -> "aws", ... (static); NULL if unknown */
const char *sl_provider_norm(const char *p);
/* "ais" -> "ais", "aws" -> "s3", "gcp" -> "gs", "azure" -> "az", "oci" -> "oc"
 * (static) */
const char *sl_provider_scheme(const char *p);

#endif
