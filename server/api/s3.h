/* SPDX-License-Identifier: MIT
 * s3.h: the S3 front end (spec s3.md), path style on /s3/BUCKET/KEY of every
 * node. Buckets are ordinary ais:// buckets. A gateway answers bucket
 * requests itself and forwards object requests to the object's target
 * (fwd.h: streamed, no redirect); a target answers the objects it owns
 * and forwards the others the same way.
 *
 * Object metadata kept for S3 (custom metadata of the object, so native
 * readers see it too): "ETag" (hex MD5 of the content, computed while the
 * body streams in), "s3.ct" Content-Type, "s3.ce" Content-Encoding,
 * "s3.cd" Content-Disposition, "s3.cl" Content-Language, "s3.cc"
 * Cache-Control, "s3.ex" Expires, "s3.mp" part count of a multipart
 * object, "s3.xc" the verified x-amz-checksum-ALG of a PUT ("ALG:BASE64"),
 * "x-amz-meta-NAME" user metadata; "s3.sse*" an encrypted object's
 * (s3sse.h).
 */
#ifndef SL_S3_H
#define SL_S3_H

#include "http.h"
#include "meta.h"
#include "s3sig.h"

/* The route for /s3, and the administration of keys and modes (/v1/s3). */
void sl_s3_route(struct sl_req *r);
void sl_s3_admin(struct sl_req *r);

/* A request's credentials, once verified (s3auth.c). */
struct s3auth {
    bool on;                       /* verification is on: a and secret are set */
    struct sl_s3_auth a;
    char secret[129];
    char payload[80];              /* x-amz-content-sha256 as signed */
    char user[128];                /* the AuthN user the access key belongs to, "" none */
    bool anonymous;                /* unsigned, with verification on (auth on: the policy decides) */
    int acl_need;                  /* GetObject left to the object's ACL: 1 anonymous, 2 a user (s3policy.c) */
};
/* Authenticate: 0 the request may go on (au filled), -1 answered with the
 * S3 error. Before anything else looks at the request (authorisation
 * takes au->user: sl_access_s3). */
int s3_auth(struct sl_req *r, struct s3auth *au);
/* The verification mode, and access key ak's secret and user: 0, or -1 no
 * such key (s3auth.c) */
int s3_key_secret(const char *ak, bool *verify, char *secret, size_t sn, char *user, size_t un);
/* POST /s3/BUCKET with a multipart/form-data body: a browser's form upload
 * (s3post.c). A gateway reads the fields, checks them, and forwards the
 * whole body to the object's target, which writes the file. */
bool s3_is_post_object(const struct sl_req *r);
void s3_post_object(struct sl_req *r, const char *bucket);
/* /v1/s3/keys and /v1/s3/verify (s3auth.c) */
void s3_keys_admin(struct sl_req *r);
/* A body read whole, against the integrity headers it came with
 * (x-amz-content-sha256 when a hash, Content-MD5, x-amz-checksum-*). 0, or
 * -1 answered (s3sum.c). */
int s3_body_check(struct sl_req *r, const void *body, size_t n);
/* From a body-done callback: the body read whole (r->body) checked as
 * above, then fn(r, r->ctx) on a pool thread; the job (r->ctx) goes to fn,
 * or to cancel (also when the check answered). r->ctx is NULL after. */
void s3_body_offload(struct sl_req *r, sl_offload_fn fn, void (*cancel)(void *));

/* x-amz-checksum-ALG, streamed (s3sum.c) */
enum { XC_NONE = 0, XC_CRC32, XC_CRC32C, XC_SHA1, XC_SHA256, XC_CRC64NVME };
struct s3xc {
    int alg;
    uint32_t crc;
    uint64_t crc64;
    void *md;                      /* EVP_MD_CTX */
};
int s3_xc_alg(const char *name);   /* -1 when not one of them */
void s3_xc_init(struct s3xc *x, int alg);
void s3_xc_update(struct s3xc *x, const void *p, size_t n);
void s3_xc_final(struct s3xc *x, char *out);   /* base64, as S3 sends it; out[160] */
void s3_xc_free(struct s3xc *x);
/* base64 of at most max bytes -> bytes, or -1 */
int s3_b64dec(const char *in, unsigned char *out, size_t max);

/* ---- shared by s3.c (bucket requests) and s3obj.c (objects) ---- */
struct s3req {
    char bucket[SL_MAX_BCKNAME + 1];   /* "" for the service (ListBuckets) */
    const char *key;                    /* into r->path; NULL when none */
    size_t klen;
};

/* An S3 XML error: status, code ("NoSuchKey"), message. HEAD answers
 * carry no body. */
void s3_err(struct sl_req *r, int status, const char *code, const char *fmt, ...) SL_PRINTF(4, 5);
/* A Shale error mapped to its S3 code. */
void s3_err_sl(struct sl_req *r, const struct sl_err *e);
/* 200 application/xml from a buffer that starts after the XML declaration */
void s3_xml(struct sl_req *r, int status, struct sl_buf *body);
void s3_xml_esc(struct sl_buf *b, const char *s, size_t n);
/* <tag>escaped v</tag> */
void s3_xel(struct sl_buf *b, const char *tag, const char *v);
/* The one owner (ListBuckets, ACLs) */
void s3_owner_xml(struct sl_buf *b);
#define XMLNS "http://s3.amazonaws.com/doc/2006-03-01/"
/* "2006-01-02T15:04:05.000Z" / RFC 1123 */
void s3_iso_time(int64_t ns, char *out, size_t n);
void s3_http_time(int64_t ns, char *out, size_t n);
/* RFC 1123 / 850 / asctime -> unix seconds; -1 when unparsable */
int64_t s3_parse_http_time(const char *s);

/* Parse an XML body: on_end gets every element's end, with its parent's
 * local name and its text. -1 when malformed. */
int s3_xml_parse(const char *body, size_t n, void (*on_end)(void *, const char *, const char *, const char *),
                 void *arg);

/* Send msg (stolen) to the primary gateway's /v1/buckets/NAME; answer
 * ok_status, or its error as S3's (pool threads: it waits on the peer). */
void s3_primary_bck_call(struct sl_req *r, const char *method, const char *bucket, json_t *msg, int ok_status);
/* ?lifecycle of a bucket: GET, PUT, DELETE (s3life.c) */
void s3_bck_lifecycle(struct sl_req *r, const struct sl_bck *b);
/* Set the bucket's props prop to value through the primary gateway (a pool
 * thread): answered ok_status, or the primary's error (s3util.c) */
void s3_bck_prop_set(struct sl_req *r, const char *bucket, const char *prop, const char *value, int ok_status);
/* CORS (s3cors.c): ?cors of a bucket; a preflight OPTIONS (answered from
 * the bucket's props, without credentials); the Access-Control-* headers
 * of an actual request whose Origin the bucket's rules allow */
void s3_bck_cors(struct sl_req *r, const struct sl_bck *b);
void s3_cors_preflight(struct sl_req *r, const char *bucket);
void s3_cors_actual(struct sl_req *r, const struct sl_bck *b);
/* ---- access control (s3policy.c) ---- */
/* Authorise a request once authenticated (auth on): its bucket's policy,
 * its canned ACL, then the user's roles (sl_access_s3). 0 go on (au->acl_need
 * set when the object's own ACL must grant it), -1 answered 403. */
int s3_authorize(struct sl_req *r, const struct s3req *q, struct s3auth *au);
/* The policy language alone (unit tests): text as bucket's policy, for user
 * (NULL anonymous) from ip doing action on resource: 0 no statement
 * applies, 1 allowed, 2 denied; -1 malformed (why) */
int s3_policy_eval_text(const char *text, const char *bucket, const char *user, const char *ip, const char *action,
                        const char *resource, char *why, size_t wn);
/* x-amz-acl, when sent, a canned ACL: 0, or -1 answered */
int s3_acl_check_hdr(struct sl_req *r);
/* CreateBucket's x-amz-acl into the new bucket's props */
int s3_acl_after_create(const char *bucket, struct sl_req *r, struct sl_err *err);
/* GET/PUT ?acl, ?policy, ?policyStatus, ?publicAccessBlock of a bucket:
 * true when it was one of them (answered) */
bool s3_bucket_access_op(struct sl_req *r, const struct sl_bck *b);
/* The header a gateway adds forwarding a GetObject left to the object's
 * ACL (NULL none), and what a target makes of it */
const char *s3_acl_need_hdr(const struct s3auth *au);
int s3_acl_need(const struct sl_req *r);

/* Target side (s3obj.c): an object request for a key of an existing bucket. */
void s3_obj(struct sl_req *r, const struct s3req *q, const struct sl_bck *b, const struct s3auth *au);
/* The target's side of DeleteObjects in a bucket with S3 versioning (s3ver.c):
 * native DELETE ?s3_delete=true[&versionId=], on a pool thread; answers
 * {"delete_marker": bool, "version_id": ""}. */
void s3ver_native_delete(struct sl_req *r, const struct sl_bck *b, const char *name, size_t nlen);
/* S3 Object Lock (s3lock.c): 0 when the object (or version) name of b may
 * be deleted, else -1 with err SL_EFORBIDDEN (a legal hold, or a retention
 * in force; bypass lets GOVERNANCE go) */
int s3_lock_check_name(const struct sl_bck *b, const char *name, size_t nlen, bool bypass, struct sl_err *err);
bool s3_lock_enabled(const struct sl_bck *b);
bool s3_lock_bypass(struct sl_req *r);
/* destroy-bck of a bucket with object lock: refused (-1, err) while it holds any version (a pool thread) */
int s3_lock_destroy_check(const char *name, const char *provider, struct sl_err *err);
/* This target's multipart uploads in flight for a bucket:
 * [{"key","id","initiated"(unix ns)}] (ListMultipartUploads gathers them). */
json_t *s3_local_uploads(uint64_t bid);
/* At start-up, after sl_mpt_recover (upload.h): the S3 multipart uploads of
 * the last run back (s3mpu.c). How many. */
int s3_uploads_recover(void);

#endif
