/* SPDX-License-Identifier: MIT
 * common_curl.h: what the backend plugins over libcurl share (compiled into
 * each backend_*.so, as formats/common_*.c are into the format plugins):
 * one curl handle per thread, the plugin's init/fini around it, and one
 * request with its tries (sl_cc_perform).
 */
#ifndef SL_COMMON_CURL_H
#define SL_COMMON_CURL_H

#include "shale_plugin.h"

#include <stddef.h>
#include <curl/curl.h>

/* The host's table (set by sl_plugin_entry of SL_CC_BACKEND_DEFINE). */
extern const struct sl_host_api *sl_cc_host;

/* vsnprintf into err[errlen] (nothing when errlen is 0) */
void sl_cc_errf(char *err, size_t errlen, const char *fmt, ...) SL_PLUGIN_PRINTF(3, 4);
/* This thread's handle (made on first use, kept with its connections until
 * the thread ends), or NULL. */
CURL *sl_cc_handle(void);
/* For a plugin's init and fini: curl_global_init and the per-thread key;
 * min_version (0x074b00 = 7.75.0; 0 = any) refuses an older libcurl. */
int sl_cc_init(unsigned min_version, const char *why, char *err, size_t errlen);
void sl_cc_fini(void);

/* One header line of an answer (a CURLOPT_HEADERFUNCTION's buf[0..n)): the
 * status line sets *status and gives 1. A "Name: value" line gives 0 with
 * the name in k[0..kl) and the trimmed value in v[0..vl), after filling o
 * (NULL: nothing) with what every backend reads the same way: ETag (quotes
 * and W/ dropped), the object's size (Content-Length of a 200, the total of
 * a Content-Range) and Last-Modified. Header lines of a redirect (3xx) fill
 * nothing. Anything else gives -1. */
int sl_cc_header(const char *buf, size_t n, long *status, struct sl_backend_obj *o, const char **k, size_t *kl,
                 const char **v, size_t *vl);

/* An upload body: bytes [base, base + size) of fd, read with pread, and
 * rewound for a retry or a redirect. Set CURLOPT_READFUNCTION sl_cc_read,
 * CURLOPT_SEEKFUNCTION sl_cc_seek, their data a struct sl_cc_src. */
struct sl_cc_src {
    int fd;
    int64_t base, size, pos;
};
size_t sl_cc_read(char *buf, size_t size, size_t nitems, void *src);
int sl_cc_seek(void *src, curl_off_t off, int origin);

/* After a failed attempt (cc, the HTTP status; sunk: bytes were handed on
 * already): whether to try again (5xx and 429, or a broken transfer, of a
 * remote that answers), after a pause of 0.2 s, 0.4 s, ... */
int sl_cc_again(CURLcode cc, long status, int sunk, int attempt, int tries);

/* Append s[0..n) to *p, *len bytes of *cap, kept NUL-terminated and grown
 * through the host's realloc (sl_cc_host): 0, or -1 out of memory. */
int sl_cc_append(char **p, size_t *len, size_t *cap, const char *s, size_t n);

/* o's fields after the ABI header start unknown (size -1): before a call,
 * and again before each try (nothing of a failed one carries over). */
void sl_cc_obj_init(struct sl_backend_obj *o);

#define SL_CC_TRIES 3

/* One request. The plugin fills what to send and how messages name things;
 * sl_cc_perform fills the answer. Strings are borrowed for the call. */
struct sl_cc_call {
    const char *method;           /* HEAD GET PUT POST DELETE, or another (sent as is) */
    const char *url;
    const char *desc;             /* messages start "DESC: " ("s3://BUCKET/KEY") */
    const char *peer;             /* the far side in messages: "the remote", ... */
    int peer_url;                 /* messages add " (URL)" after peer */
    int follow;                   /* follow redirects (5 at the most) */
    int64_t off, n;               /* GET range (n < 0: to the end); off 0 and n < 0: no Range */
    struct sl_cc_src src;         /* PUT body (sent again after a redirect) */
    const char *mem;              /* a body from memory (memlen bytes): POST, or another method with one */
    size_t memlen;
    sl_backend_sink_fn sink;      /* where a 2xx answer's body goes (NULL: see keep) */
    void *sink_ctx;
    int whole_ok;                 /* a 200 with the whole object to a Range request goes to sink as it is (else
                                   * the call fails, sink_failed 2) */
    size_t keep, errkeep;         /* bytes kept in body of a 2xx answer without a sink, of a non-2xx answer */
    struct sl_backend_obj *o;     /* filled from the answer's headers (sl_cc_header); NULL: nothing */
    /* At every try, after the common options: the plugin's own options and
     * state; returns the request headers to add (freed after the try), or NULL. */
    struct curl_slist *(*prepare)(struct sl_cc_call *c, CURL *h);
    /* Every "Name: value" header line (a redirect's too: see status). */
    void (*header)(struct sl_cc_call *c, const char *k, size_t kl, const char *v, size_t vl);
    /* The far side answered, but not with what was asked (status not 2xx, or
     * sink_failed 2): the message into err. */
    void (*explain)(struct sl_cc_call *c, char *err, size_t errlen);
    void *ud;                     /* the plugin's, for the hooks */
    /* the answer (of the last try) */
    long status;
    int sunk;                     /* bytes went to sink: no retry */
    int sink_failed;              /* 1: sink said stop; 2: see whole_ok */
    char *body;                   /* what keep/errkeep kept, NUL-terminated; NULL: nothing */
    size_t blen, bcap;
};

/* Run c on this thread's handle, tried again as sl_cc_again says:
 * SL_PLUG_OK on 2xx, else the error in err (*status: the HTTP status, 0
 * when no answer came). Free c->body with sl_cc_free after reading it. */
int sl_cc_perform(struct sl_cc_call *c, int *status, char *err, size_t errlen);
void sl_cc_free(struct sl_cc_call *c);

/* Turns a backend_<name>.c into a plugin: the sl_backend_ops for PROVIDER
 * from PREFIX_head_bucket, PREFIX_head_object, PREFIX_get_object,
 * PREFIX_put_object, PREFIX_delete_object and PREFIX_list_page (defined
 * before), the descriptor (init: sl_cc_init with MIN_CURL and WHY; fini:
 * sl_cc_fini; no state) and the exported sl_plugin_entry, which keeps the
 * host's table in sl_cc_host. Use once, followed by a semicolon. */
#define SL_CC_BACKEND_DEFINE(PREFIX, PROVIDER, NAME, VERSION, DESCRIPTION, MIN_CURL, WHY)                         \
    static const struct sl_backend_ops sl_cc_ops_ = {                                                              \
        SL_ABI_INIT(struct sl_backend_ops),                                                                        \
        .provider = PROVIDER,                                                                                      \
        .head_bucket = PREFIX##_head_bucket,                                                                       \
        .head_object = PREFIX##_head_object,                                                                       \
        .get_object = PREFIX##_get_object,                                                                         \
        .put_object = PREFIX##_put_object,                                                                         \
        .delete_object = PREFIX##_delete_object,                                                                   \
        .list_page = PREFIX##_list_page,                                                                           \
    };                                                                                                             \
    static int sl_cc_init_(const struct sl_host_api *host, void **state, char *err, size_t errlen)                 \
    {                                                                                                              \
        (void)host;                                                                                                \
        *state = NULL;                                                                                             \
        return sl_cc_init(MIN_CURL, WHY, err, errlen);                                                             \
    }                                                                                                              \
    static void sl_cc_fini_(void *state)                                                                           \
    {                                                                                                              \
        (void)state;                                                                                               \
        sl_cc_fini();                                                                                              \
    }                                                                                                              \
    static const struct sl_plugin sl_cc_plugin_ = {                                                                \
        SL_ABI_INIT(struct sl_plugin),                                                                             \
        .kind = SL_PLUGIN_BACKEND,                                                                                 \
        .name = NAME,                                                                                              \
        .version = VERSION,                                                                                        \
        .description = DESCRIPTION,                                                                                \
        .init = sl_cc_init_,                                                                                       \
        .fini = sl_cc_fini_,                                                                                       \
        .backend = &sl_cc_ops_,                                                                                    \
    };                                                                                                             \
    SL_PLUGIN_EXPORT const struct sl_plugin *sl_plugin_entry(const struct sl_host_api *host, char *err,            \
                                                             size_t errlen)                                        \
    {                                                                                                              \
        (void)err, (void)errlen;                                                                                   \
        sl_cc_host = host;                                                                                         \
        return &sl_cc_plugin_;                                                                                     \
    }                                                                                                              \
    struct sl_cc_backend_define_ends_with_a_semicolon

#endif
