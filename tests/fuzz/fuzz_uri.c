/* SPDX-License-Identifier: MIT
 * fuzz_uri.c: what a request's target goes through before any handler:
 * the engine's split and decoding of the path and query (server/http/
 * http.c parse_uri, on core/util.c sl_url_decode), the lookups handlers
 * make (sl_req_query, sl_req_path_is, sl_req_raw_seg_slash), the object
 * path of /v1/objects/BUCKET/NAME (api/tgt.c sl_req_obj_path) with the
 * checks its parts get (sl_bck_name_valid, sl_objname_check), and a Range
 * header (sl_range_parse). The request is built by hand, as uri_log_cb
 * does. Input, one field a line: the request target as libmicrohttpd hands
 * it over ("/path?query"), a Range value, then query keys to look up.
 */
#include "fuzz_node.h"
#include "http.c" /* parse_uri and free_req are the engine's own (static) */
#include "store.h"
#include "tgt.h"

#include <string.h>

static void check_query(const struct sl_req *r)
{
    for (int i = 0; i < r->nq; i++) {
        const char *v = sl_req_query(r, r->q[i].k);
        FZ_CHECK(v != NULL); /* (the first with that key) */
    }
}

static void check_obj_path(struct sl_req *r)
{
    char *bucket = NULL;
    const char *name = NULL;
    size_t nlen = 0;
    struct sl_err err = { 0 };
    if (sl_req_obj_path(r, &bucket, &name, &nlen, &err) < 0) {
        FZ_CHECK(!bucket && err.msg[0]);
        return;
    }
    FZ_CHECK(bucket && *bucket && nlen > 0 && name > r->path && name + nlen == r->path + r->path_len);
    FZ_CHECK(!strchr(bucket, '/'));
    (void)sl_bck_name_valid(bucket, &err);
    (void)sl_objname_check(name, nlen, &err);
    free(bucket);
}

static void check_range(const char *h)
{
    static const uint64_t sizes[] = { 0, 1, 10, 1000, UINT64_MAX - 1, UINT64_MAX };
    for (size_t i = 0; i < SL_ARRAY_SIZE(sizes); i++) {
        uint64_t off = 0, len = 0;
        int rc = sl_range_parse(h, sizes[i], &off, &len);
        FZ_CHECK(rc >= SL_RANGE_NONE && rc <= SL_RANGE_UNSAT);
        if (rc == SL_RANGE_OK)
            FZ_CHECK(len > 0 && off < sizes[i] && len <= sizes[i] - off);
    }
}

void fuzz_one(const uint8_t *data, size_t size)
{
    struct fz_in in = { data, size };
    size_t ul;
    char *uri = fz_line(&in, &ul), *range = fz_line(&in, NULL);
    struct sl_req *r = req_new();
    r->raw_uri = uri; /* (free_req's) */
    r->method = SL_M_GET;
    r->method_str = "GET";
    r->content_length = -1;
    parse_uri(r);
    FZ_CHECK(r->path && r->path_len <= strcspn(uri, "?") && r->path[r->path_len] == 0);
    FZ_CHECK(!memchr(r->path, 0, r->path_len) || r->path_bad);
    check_query(r);
    while (in.n) {
        char *k = fz_line(&in, NULL);
        const char *v = sl_req_query(r, k);
        FZ_CHECK(!v || strlen(v) < ul);
        (void)sl_req_query_bool(r, k);
        free(k);
    }
    for (int i = 0; i < 4; i++) {
        char *seg = sl_req_raw_seg_slash(r, i);
        FZ_CHECK(!seg || strlen(seg) < ul);
        free(seg);
    }
    if (sl_req_path_is(r, "/v1/objects") && !r->path_bad) /* (its callers refuse a NUL first) */
        check_obj_path(r);
    check_range(range);
    free(range);
    free_req(r);
}
