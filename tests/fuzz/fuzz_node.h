/* SPDX-License-Identifier: MIT
 * fuzz_node.h: what the harnesses of the server's parsers share. A harness
 * is tests/fuzz/fuzz_<t>.c: it defines fuzz_one (and fuzz_init when it
 * needs set-up) and is linked by tests/fuzz/run.sh with fuzz_node.c (the
 * libFuzzer entry points, the server kept quiet) and the node's sources,
 * compiled for fuzzing into $SHALE_BUILD/fuzz/libnode.a.
 *
 * Invariants that must hold for any input are checked with FZ_CHECK (an
 * abort naming the condition); crashes, leaks and undefined behaviour are
 * caught by the sanitizers.
 */
#ifndef FUZZ_NODE_H
#define FUZZ_NODE_H

#include "arch.h"
#include "sl.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- what a harness defines ---- */

/* Once, before the first input; optional (a no-op otherwise). */
void fuzz_init(void);
/* One input; data is borrowed for the call. */
void fuzz_one(const uint8_t *data, size_t size);

/* ---- helpers ---- */

#define FZ_CHECK(cond) ((cond) ? (void)0 : fz_fail(#cond, __FILE__, __LINE__))
void fz_fail(const char *what, const char *file, int line) __attribute__((noreturn));

/* A cursor over the input, for harnesses that carve several fields out of
 * one input (text seeds stay readable: one field a line). */
struct fz_in {
    const uint8_t *p;
    size_t n;
};
/* The next byte (0 once the input is used up). */
uint8_t fz_byte(struct fz_in *in);
/* The bytes up to the next '\n' (or the end), without it: returns new,
 * NUL-terminated (free it); *len its length (NULs inside included). */
char *fz_line(struct fz_in *in, size_t *len);
/* The rest: returns new, NUL-terminated (free it). */
char *fz_rest(struct fz_in *in, size_t *len);

/* Feed p[0..n) to fn in pieces whose sizes seed picks (from 1 byte to all
 * that is left; seed 0: all at once). Stops at the first non-zero from fn
 * and returns it; 0 when all was fed (fn is called once, with n 0, for an
 * empty input). */
int fz_pieces(const char *p, size_t n, uint32_t seed, int (*fn)(void *arg, const char *p, size_t n), void *arg);

/* The harnesses of incremental parsers: an input is one byte of flags, then
 * a stream. run(r, flags, p, n, seed) starts r afresh and parses p[0..n)
 * into it through fz_pieces(p, n, seed, ...). fz_whole_and_pieces runs it
 * into a with the stream whole (seed 0) and into b in pieces (a seed from
 * the flags), for the harness to compare a and b; returns the flags, and
 * the stream's length in *n. */
typedef void (*fz_run_fn)(void *r, uint8_t flags, const char *p, size_t n, uint32_t seed);
uint8_t fz_whole_and_pieces(const uint8_t *data, size_t size, fz_run_fn run, void *a, void *b, size_t *n);
/* Two messages alike: both NULL, or the same text. */
bool fz_same_text(const char *a, const char *b);

/* The verdict of a request parser on one input, checked: s is the struct
 * of type T that parse (or its text form) filled and rc what it returned,
 * err its error. A refusal must say why; what was taken must come back out
 * (to_json) as a request that parses again, to itself. Then s is released.
 * parse(const json_t *, T *, struct sl_err *), to_json(const T *) and
 * release(T *) are the parser's functions. */
#define FZ_REQUEST(T, s, rc, err, parse, to_json, release)                                                         \
    do {                                                                                                           \
        FZ_CHECK((rc) == 0 || ((rc) == -1 && (err).msg[0] && (err).code != SL_OK));                                \
        if ((rc) == 0) {                                                                                           \
            T s2_;                                                                                                 \
            struct sl_err e2_ = { 0 };                                                                             \
            json_t *j_ = to_json(&(s)), *j2_;                                                                      \
            memset(&s2_, 0, sizeof(s2_));                                                                          \
            if (parse(j_, &s2_, &e2_) != 0)                                                                        \
                fz_fail(e2_.msg, __FILE__, __LINE__); /* the normalised form must parse */                         \
            j2_ = to_json(&s2_);                                                                                   \
            FZ_CHECK(json_equal(j_, j2_));                                                                         \
            json_decref(j2_);                                                                                      \
            json_decref(j_);                                                                                       \
            release(&s2_);                                                                                         \
        }                                                                                                          \
        release(&(s));                                                                                             \
    } while (0)


/* A digest of what a parser handed on, to compare two runs over the same
 * bytes (whole and in pieces). */
struct fz_digest {
    uint64_t h, n;
};
void fz_digest_add(struct fz_digest *d, const void *p, size_t n);
void fz_digest_int(struct fz_digest *d, int64_t v);
bool fz_digest_eq(const struct fz_digest *a, const struct fz_digest *b);

/* Load the build's format and sample-key plugins ($SHALE_BUILD/lib/shale,
 * else ./build/lib/shale), for parsers that check names against them.
 * (Inline: only the harnesses that call it link the archive registry.) */
static inline void fz_load_plugins(void)
{
    const char *b = getenv("SHALE_BUILD"), *pd = getenv("FUZZ_PLUGIN_DIR"); /* (run.sh builds them for fuzzing) */
    char dir[1024];
    struct sl_err err = { 0 };
    if (pd && *pd)
        snprintf(dir, sizeof(dir), "%s", pd);
    else
        snprintf(dir, sizeof(dir), "%s/lib/shale", b && *b ? b : "build");
    if (sl_arch_init(dir, &err) < 0 || !strncmp(sl_arch_supported(), "(none", 5)) {
        fprintf(stderr, "fuzz: no plugins from %s: %s\n", dir, err.msg);
        abort();
    }
}

#endif
