/* SPDX-License-Identifier: MIT
 * s3obj.h: what S3's object files share (s3meta.c below s3obj.c, s3copy.c
 * and s3mpu.c); for them only, and for job lifecycle (tags, uploads).
 */
#ifndef SL_S3OBJ_H
#define SL_S3OBJ_H

#include "s3.h"
#include "md.h"
#include "lspage.h"
#include "meta.h"

#define S3_META_MAX 2048            /* bytes of user metadata a PUT may carry */

/* ---- s3meta.c ---- */
/* The object's S3 ETag: its custom "ETag", else its checksum (borrowed) */
const char *s3_obj_etag(const struct sl_objmd *md);
/* n bytes from 2n hex digits */
void s3_hex2bin(const char *hex, unsigned char *out, size_t n);
/* custom metadata being collected (owned strings) */
struct kvs {
    struct sl_kv *kv;
    int n;
    size_t bytes;
};

void s3_kv_add(struct kvs *k, const char *name, const char *v);
void s3_kv_free(struct kvs *k);
/* The metadata a PUT or CreateMultipartUpload carries, into m */
void s3_collect_meta(struct sl_req *r, struct kvs *m);
/* If-Match / If-None-Match / If-(Un)Modified-Since (headers prefixed pfx:
 * "" or "x-amz-copy-source-") against an object (exists) with etag and
 * mtime: 0 go on, 412, or 304 */
int s3_conditions(struct sl_req *r, const char *pfx, const char *etag, int64_t mtime_ns, bool exists);

/* ?partNumber=N of md: 1 a part of a multipart object (its
 * offset and length), 0 the whole object, -1 no such part, -2 sizes unknown */
int s3_part_range(const struct sl_objmd *md, const char *pn, uint64_t *off, uint64_t *len);

/* ---- s3attr.c ---- */
#define S3_XC_KEY "s3.xc"           /* the verified x-amz-checksum-ALG of a PUT: "ALG:BASE64"; of a multipart
                                     * upload its composite checksum, "ALG:BASE64-N" */
#define S3_XCP_KEY "s3.xcp"         /* a multipart upload's parts' checksums, "B64,B64,..." (when they fit) */
/* GET ?attributes of an object, on its target (GetObjectAttributes) */
void s3_obj_attributes(struct sl_req *r, const struct s3req *q, const struct sl_bck *b);

/* ---- an object's sub-resource worked on its target (s3util.c): ?tagging, ?acl ---- */
struct s3objref {
    struct sl_bck b;
    char *key;
    size_t klen;
};
struct s3objref *s3_objref_new(const struct sl_bck *b, const struct s3req *q);
void s3_objref_free(void *arg);                 /* (a cancel callback too) */
/* Its metadata into md: 1, or 0 answered (404 NoSuchKey, or the error) */
int s3_objref_stat(struct sl_req *r, const struct s3objref *o, struct sl_objmd *md);
/* An error of the object's metadata answered: 404 NoSuchKey when it is not there */
void s3_objref_err(struct sl_req *r, const struct sl_err *err);

/* ---- s3tag.c ---- */
#define S3_OBJ_TAGS_MAX 10
#define S3_BCK_TAGS_MAX 50
#define S3_TAG_PFX "s3.tag."        /* an object's tags: custom "s3.tag.N" = "KEY=VALUE" */
/* x-amz-tagging (k=v&k2=v2, URL-encoded) / a Tagging XML body into t (decoded),
 * within S3's limits for max tags: 0, or -1 with why (and the S3 code) */
int s3_tags_from_header(const char *h, int max, struct kvs *t, char *why, size_t wn);
int s3_tags_from_xml(const char *body, size_t n, int max, struct kvs *t, const char **code, char *why, size_t wn);
/* t as custom entries "s3.tag.N" (appended to custom) / back from an object's metadata */
void s3_tags_custom(const struct kvs *t, struct kvs *custom);
void s3_tags_of_md(const struct sl_objmd *md, struct kvs *t);
int s3_tags_count(const struct sl_objmd *md);
/* t as one string of pairs (a bucket's props "tags"), and back */
void s3_tags_join(const struct kvs *t, struct sl_buf *out);
void s3_tags_of_string(const char *s, struct kvs *t);
/* 200 <Tagging> of t */
void s3_tags_xml(struct sl_req *r, const struct kvs *t);
/* GET/PUT/DELETE ?tagging of an object, on its target */
/* name: the object holding the version (s3ver_sub_name) */
void s3_obj_tagging(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen);
/* A PUT's x-amz-tagging into custom: 0 (also when absent), -1 answered 400 */
int s3_tagging_hdr(struct sl_req *r, struct kvs *custom);

/* ---- s3policy.c ---- */
/* A PUT's x-amz-acl (checked against the bucket's public access block)
 * into custom "s3.acl": 0 (also when absent or private), -1 answered */
int s3_acl_hdr(struct sl_req *r, const struct sl_bck *b, struct kvs *custom);
bool s3_acl_md_key(const char *k);
/* GET/PUT ?acl of an object, on its target */
void s3_obj_acl(struct sl_req *r, const struct s3req *q, const struct sl_bck *b);
/* A GetObject marked by the gateway: the object's ACL grants it (md NULL:
 * none), else refuse (403) */
bool s3_obj_acl_grants(const struct sl_req *r, const struct sl_objmd *md);
void s3_obj_acl_refuse(struct sl_req *r);

/* ---- s3copy.c ---- */
/* PUT with x-amz-copy-source src: CopyObject (upload_id NULL) or
 * UploadPartCopy of part partno */
void s3_copy_object(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, const char *src,
                    const char *upload_id, int partno);

/* ---- s3mpu.c ---- */
bool s3_upload_known(const char *id);
/* the metadata upload id was created with (copies into out; nothing when unknown) */
void s3_upload_meta(const char *id, struct kvs *out);
/* part partno of upload id is in: its size, ETag (hex MD5) and x-amz-checksum-ALG (base64; "" or NULL none) */
void s3_upload_record_part(const char *id, int partno, uint64_t size, const char *etag, const char *xc);
/* what upload.c records of a part (sl_mpt_part_set_info): the caller frees it */
char *s3_part_info(const char *etag, const char *xc);
/* the upload's x-amz-checksum-algorithm (XC_*), 0 none or unknown */
int s3_upload_alg(const char *id);
void s3_create_upload(struct sl_req *r, const struct s3req *q, const struct sl_bck *b);
void s3_complete_upload(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, const char *id);
/* Abort this target's multipart uploads of b for which match(arg, key,
 * klen, initiated unix ns) says so (job lifecycle): how many went. */
int s3_uploads_expire(const struct sl_bck *b, bool (*match)(void *arg, const char *key, size_t klen, int64_t created),
                      void *arg);
void s3_abort_upload(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, const char *id);
void s3_list_parts(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, const char *id);

/* ---- s3ver.c: object versioning ---- */
/* x-amz-version-id of the object served or written as name (in a bucket
 * with S3 versioning, or an older version) */
void s3ver_hdr(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen, const struct sl_objmd *md);
/* A write of key may go on: 0, or -1 answered 400 (a reserved name, a key
 * too long for its versions) */
int s3ver_write_check(struct sl_req *r, const struct sl_bck *b, const char *key, size_t klen);
/* GET/HEAD: the name to read (?versionId: the version's) in name: 1, or 0
 * answered (no such version, a delete marker, a bad id) */
int s3ver_get_name(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, struct sl_buf *name);
/* A sub-resource of a version (?tagging): the object holding the version
 * ?versionId names (the key without one) in name, x-amz-version-id
 * answered: true; false answered (404/400/405 as GET for none, a bad id, a
 * delete marker) */
bool s3ver_sub_name(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, struct sl_buf *name);
/* A GET/HEAD that found no current object: the delete marker's headers */
void s3ver_miss(struct sl_req *r, const struct sl_bck *b, const char *key, size_t klen);
/* DELETE of an object with ?versionId or in a versioned bucket: true when
 * taken (answered off the HTTP thread) */
bool s3ver_obj_delete(struct sl_req *r, const struct s3req *q, const struct sl_bck *b);
/* DeleteObjects' call of it on t: its HTTP status (msg when not 2xx) */
int s3ver_remote_delete(const struct sl_snode *t, const struct sl_bck *b, const char *key, const char *vid,
                        bool bypass, bool *marker, char out_vid[24], char *msg, size_t msz);
/* ListObjectVersions (a pool thread; arg: a struct sl_bck copy, freed) */
void s3ver_list(struct sl_req *r, void *arg);
/* GET ?versioning */
void s3ver_config_xml(struct sl_req *r, const struct sl_bck *b);

/* ---- s3lock.c: object lock (s3.h has the delete check) ---- */
int s3_lock_check(const struct sl_objmd *md, bool bypass, struct sl_err *err);
/* x-amz-object-lock-* of a write (or b's default retention) into custom:
 * 0, or -1 answered 400 */
int s3_lock_hdrs(struct sl_req *r, const struct sl_bck *b, struct kvs *custom);
bool s3_lock_md_key(const char *k);        /* "s3.lock.*" */
void s3_lock_resp_hdrs(struct sl_req *r, const struct sl_objmd *md);
void s3_bck_object_lock(struct sl_req *r, const struct sl_bck *b);   /* ?object-lock (gateway) */
void s3_obj_lock(struct sl_req *r, const struct s3req *q, const struct sl_bck *b); /* ?retention, ?legal-hold */
/* CreateBucket's x-amz-bucket-object-lock-enabled: true as props, or NULL */
json_t *s3_lock_create_props(struct sl_req *r);

/* ---- s3util.c: listing entries (s3.c, s3ver.c) ---- */
/* <tag>v</tag>, URL-encoded first when url */
void s3_xel_key(struct sl_buf *b, const char *tag, const char *v, size_t n, bool url);
void s3_entry_etag(const struct sl_lsent *e, char *out, size_t n);

#endif
