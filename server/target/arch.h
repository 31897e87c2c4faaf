/* SPDX-License-Identifier: MIT
 * arch.h: shards on a target, through the format plugins (plugins/plug.h):
 * reading one member (?archpath=), several as a tar stream (?archregx=&
 * archmode=), the per-shard member index of plain tars (kept in the
 * mountpath's LMDB; one lookup = one seek), writing/appending a member
 * (PUT ?archpath= with Ais-Pine), and listing shard contents.
 *
 * Threads: the registry is read-only after sl_arch_init (any thread). A
 * struct sl_arch_shard and the members opened from it are one thread's;
 * the shard's file descriptor is shared by reference count, so members
 * outlive the shard. Building an index reads the whole shard: never on an
 * HTTP thread (sl_arch_get offloads what is in proportion to the shard).
 */
#ifndef SL_ARCH_H
#define SL_ARCH_H

#include "http.h"
#include "lspage.h"
#include "meta.h"
#include "md.h"
#include <jansson.h>

struct sl_plug;
struct sl_plug_reg;

/* Load the plugins (dir "" = <dir of shaled>/../lib/shale, else PREFIX/lib/shale).
 * The registry, and every plugin pointer handed out below, lives until
 * sl_arch_fini (which keeps it when plugin handles are still open). */
int sl_arch_init(const char *dir, struct sl_err *err);
void sl_arch_fini(void);
const struct sl_plug_reg *sl_arch_reg(void);    /* borrowed; NULL before init */
json_t *sl_arch_plugins_json(void);             /* new reference */
/* ".tar, .tgz, .tar.gz, .zip, .tar.lz4" as loaded (static storage) */
const char *sl_arch_supported(void);
/* Format by the object's name only (listing: "detected by extension"). */
const struct sl_plug *sl_arch_format_by_name(const char *name, size_t nlen);
/* Full detection: archmime, else extension, else magic bytes read from fd
 * (pread at offset 0; fd stays the caller's). */
const struct sl_plug *sl_arch_format_of(const char *name, size_t nlen, const char *archmime, int fd);

/* Reader limits from the configuration (arch.*) for reading a whole shard. */
struct sl_fmt_limits;
void sl_arch_limits(struct sl_fmt_limits *lim);
/* Bytes one member of namelen and size takes in a shard of extension ext
 * (".zip": local header, data descriptor and central entry; anything else:
 * a tar stream's header, a long name's extra headers, the padded data,
 * uncompressed for .tgz and .tar.lz4), and what a shard adds at its end.
 * What ishard and dsort count against a shard size. */
uint64_t sl_arch_member_bytes(const char *ext, size_t namelen, uint64_t size);
uint64_t sl_arch_end_bytes(const char *ext);

/* r asks for an archive read: archpath, archmode (+ archregx) or
 * archindex (archregx without archmode is ignored, spec §4.3). */
bool sl_arch_wanted(const struct sl_req *r);
/* An archive read r cannot be (archpath with archmode, a Range): answered
 * with the error, true. Here and below, b and name are borrowed for the
 * call. */
bool sl_arch_refused(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen);
/* Target GET with archpath/archmode/archindex of the shard b/name, open as
 * fd with md (both taken: the read path found it). stored: fd is the
 * object's file here (else it was rebuilt for this read, and the member
 * index is not used). */
void sl_arch_get(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, int fd,
                 struct sl_objmd *md, bool stored);
/* Target PUT with archpath (+ Ais-Pine): true when handled. */
bool sl_arch_put(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen);

/* (Re)build the member index of a plain-tar object; 0, or -1 (SL_EUNSUPP for
 * formats without an index). */
int sl_arch_index_build(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err);
/* After any write of an object: index it when it is a plain tar (best effort). */
void sl_arch_after_put(const struct sl_bck *b, const char *name, size_t nlen);

/* Where a listing resumes inside a shard: after the member `name` (plain
 * tars, through the member index, in name order) or after the first `ord`
 * members the reader returns (other formats, in archive order: a scan from
 * the start that keeps nothing). ord 0 and no name: from the first member. */
struct sl_arch_pos {
    uint64_t ord;
    const char *name;
    size_t nlen;
};
/* Append up to max "shard/member" entries (flags 64|128, alen/aord set) of
 * the shard name[0..nlen) to out (the caller's page), members whose name
 * starts with mprefix (may be ""), after pos (NULL: from the first). *more
 * is set when matching members remain after them. Memory is proportional to
 * max, not to the shard. 0, or -1 with err (SL_EBADDATA naming the shard
 * when it is corrupt); members appended before an error stay in out. */
int sl_arch_list_members(const struct sl_bck *b, const char *name, size_t nlen, const char *mprefix, size_t mplen,
                         const struct sl_arch_pos *pos, int max, struct sl_lspage *out, bool *more,
                         struct sl_err *err);

/* Match a member name for archmode regexp|prefix|suffix|substr|wdskey; -1 on a
 * bad mode or pattern (err). *out is new (sl_arch_match_free, NULL ok);
 * pattern is copied. */
struct sl_arch_match;
int sl_arch_match_new(const char *mode, const char *pattern, struct sl_arch_match **out, struct sl_err *err);
bool sl_arch_match(const struct sl_arch_match *m, const char *name, size_t len);
void sl_arch_match_free(struct sl_arch_match *m);

/* The member index of a plain-tar object (built if missing): a new array
 * of {"name","offset","size"} in name order, or NULL (err: 400 for other
 * formats, 404 for a missing object). The whole index in memory: for
 * callers that keep it (GET ?archindex streams it a page at a time). */
json_t *sl_arch_index_json(const struct sl_bck *b, const char *name, size_t nlen, struct sl_err *err);
/* One member of a shard, read sequentially: through the index of a plain
 * tar (one seek), else by a scan. *size is its size (-1 if the format does
 * not say). 404 for a missing member, 400 for an object that is not a shard.
 * sl_arch_member_close(NULL) is a no-op. */
struct sl_arch_member;
int sl_arch_member_open(const struct sl_bck *b, const char *name, size_t nlen, const char *member, size_t ml,
                        struct sl_arch_member **out, int64_t *size, struct sl_err *err);
int64_t sl_arch_member_read(struct sl_arch_member *m, void *buf, size_t n, struct sl_err *err);
/* The same for many members of one shard: open it (and index it) once.
 * Members opened from it stay valid after sl_arch_shard_close. b is
 * borrowed until then. */
struct sl_arch_shard;
int sl_arch_shard_open(const struct sl_bck *b, const char *name, size_t nlen, struct sl_arch_shard **out,
                       struct sl_err *err);
int sl_arch_shard_member(struct sl_arch_shard *s, const char *member, size_t ml, struct sl_arch_member **out,
                         int64_t *size, struct sl_err *err);
/* The same for a shard already open as fd with md (both taken, also on
 * failure); stored as for sl_arch_get. */
int sl_arch_shard_open_fd(const struct sl_bck *b, const char *name, size_t nlen, int fd, struct sl_objmd *md,
                          bool stored, struct sl_arch_shard **out, struct sl_err *err);
const char *sl_arch_shard_name(const struct sl_arch_shard *s);
void sl_arch_shard_close(struct sl_arch_shard *s);
void sl_arch_member_close(struct sl_arch_member *m);
#endif
