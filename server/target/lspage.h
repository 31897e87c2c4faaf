/* SPDX-License-Identifier: MIT
 * lspage.h: list-objects (spec §4.6) as data: the LsoMsg, a page of
 * entries, merging pages from several targets, and the JSON / msgpack
 * encodings clients expect (msgpack keys UUID/ContinuationToken/Entries/
 * Flags, entry keys n,cs,a,v,t,m,s,c,f). What makes a page is lso.h's.
 *
 * Threads: pure data; a message or page is one thread's at a time.
 */
#ifndef SL_LSPAGE_H
#define SL_LSPAGE_H

#include "sl.h"
#include <jansson.h>

/* LsoMsg flags */
#define SL_LSO_CACHED 1
#define SL_LSO_MISSING 2
#define SL_LSO_DELETED 4
#define SL_LSO_ARCH_DIR 8
#define SL_LSO_NAME_ONLY 16
#define SL_LSO_NAME_SIZE 32
#define SL_LSO_NO_RECURSION 2048
#define SL_LSO_NO_DIRS 8192
#define SL_LSO_NBI 32768            /* from the bucket's inventory (inv.h) */
#define SL_LSO_VERSIONS (1ULL << 40) /* Shale's own: S3's older versions and delete markers too (meta.h) */

/* entry flags */
#define SL_ENT_CACHED 64
#define SL_ENT_IN_ARCH 128
#define SL_ENT_DIR 256
#define SL_ENT_IS_ARCH 512
#define SL_ENT_CHUNKED 8192

/* props bits */
enum {
    SL_LP_NAME = 1 << 0, SL_LP_SIZE = 1 << 1, SL_LP_VERSION = 1 << 2, SL_LP_CKSUM = 1 << 3, SL_LP_ATIME = 1 << 4,
    SL_LP_CACHED = 1 << 5, SL_LP_STATUS = 1 << 6, SL_LP_COPIES = 1 << 7, SL_LP_EC = 1 << 8, SL_LP_CUSTOM = 1 << 9,
    SL_LP_LOCATION = 1 << 10, SL_LP_CHUNKED = 1 << 11, SL_LP_LASTMOD = 1 << 12, SL_LP_ETAG = 1 << 13,
};

/* Every string is owned by the message: sl_lsomsg_free. */
struct sl_lsomsg {
    char *uuid;
    char *props_str;
    unsigned props;
    char *time_format;
    char *prefix;
    char *start_after;
    char *token;
    char *inv_name;                 /* with SL_LSO_NBI: the inventory's (Ais-Inv-Name); "" any */
    uint64_t flags;
    int pagesize;
};

struct sl_lsent {
    char *name;
    size_t nlen;
    uint64_t size;
    char *cksum;
    char *atime;
    char *version;
    char *location;
    char *custom;
    int copies;
    uint32_t flags;
    /* a shard member (flag 128): the length of the shard's name in name
     * ("shard/member"), and its ordinal in the shard for formats read in
     * archive order (0: resumed by name through the member index). Not
     * shown to clients; carried between nodes (sl_lspage_msgpack_peer). */
    uint32_t alen;
    uint64_t aord;
};

/* A page owns its entries and every string in them and in itself:
 * sl_lspage_free. */
struct sl_lspage {
    struct sl_lsent *ents;
    int n, cap;
    char *uuid;
    char *token;
    uint32_t flags;
};

/* value: the ActMsg "value" (object or null), only read. Applies defaults.
 * m is the caller's to sl_lsomsg_free, also after an error (it may then
 * hold some strings). */
int sl_lsomsg_parse(const json_t *value, struct sl_lsomsg *m, int default_pagesize, struct sl_err *err);
void sl_lsomsg_free(struct sl_lsomsg *m);
/* A message for walking names (with sizes when sizes) under prefix, from the
 * start, pagesize per page, plus extra flags (e.g. SL_LSO_NO_RECURSION).
 * prefix is copied; free m with sl_lsomsg_free. */
void sl_lsomsg_names(struct sl_lsomsg *m, const char *prefix, bool sizes, uint64_t extra_flags, int pagesize);
json_t *sl_lsomsg_json(const struct sl_lsomsg *m);     /* new reference */

void sl_lspage_init(struct sl_lspage *p);
void sl_lspage_free(struct sl_lspage *p);
/* A new zeroed entry at the end of p; the strings put in it must be
 * malloc'd and become p's. The pointer is valid until the next
 * sl_lspage_add (which may move the array) or sl_lspage_free. */
struct sl_lsent *sl_lspage_add(struct sl_lspage *p);
/* Byte order of two entries' names (shorter first on a tie): the order of
 * every page; for qsort and bsearch over struct sl_lsent. */
int sl_lsent_cmp(const void *a, const void *b);
/* The same order of two names */
int sl_lsname_cmp(const char *a, size_t an, const char *b, size_t bn);

/* Merge several pages in listing order (objects by name, a shard's members
 * after it) into one page of at most pagesize entries (duplicates by name
 * collapse); sets token (sl_lsent_token of the last entry) when more may
 * follow. Takes the entries out of the inputs; the inputs are still the
 * caller's to sl_lspage_free. */
void sl_lspage_merge(struct sl_lspage *in, int nin, int pagesize, struct sl_lspage *out);
/* The continuation token of a page that ends with e (new string): its name,
 * or for a shard member "<shard>/./<ordinal>/<member>" -- a "." segment is
 * never in an object name, so a token inside a shard cannot be mistaken for
 * an object's. */
char *sl_lsent_token(const struct sl_lsent *e);

json_t *sl_lspage_json(const struct sl_lspage *p);    /* new reference */
/* msgpack encoding appended to out: for clients, and between nodes (with
 * the members' alen/aord) */
void sl_lspage_msgpack(const struct sl_lspage *p, struct sl_buf *out);
void sl_lspage_msgpack_peer(const struct sl_lspage *p, struct sl_buf *out);
/* decode our own msgpack page (node-to-node) into out (copies; data is
 * only read) */
int sl_lspage_from_msgpack(const char *data, size_t len, struct sl_lspage *out, struct sl_err *err);

#endif
