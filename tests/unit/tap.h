/* SPDX-License-Identifier: MIT
 * tap.h: a minimal TAP producer for the C unit tests. Each test program
 * prints "ok N - name" / "not ok N - name" lines and exits non-zero when
 * anything failed.
 *
 *   TAP_OK(cond, "name %d", i);
 *   TAP_EQ_INT(got, want, "name");
 *   TAP_EQ_STR(got, want, "name");
 *   return tap_done();
 */
#ifndef SL_TAP_H
#define SL_TAP_H

#include <stdio.h>
#include <string.h>

static int tap_n, tap_fail;

#define TAP_OK(cond, ...)                                                                                          \
    do {                                                                                                           \
        int ok_ = !!(cond); /* evaluated once */                                                                   \
        tap_n++;                                                                                                   \
        if (ok_) {                                                                                                 \
            printf("ok %d - ", tap_n);                                                                             \
        } else {                                                                                                   \
            tap_fail++;                                                                                            \
            printf("not ok %d - ", tap_n);                                                                         \
        }                                                                                                          \
        printf(__VA_ARGS__);                                                                                       \
        printf("\n");                                                                                              \
        if (!ok_)                                                                                                  \
            printf("#   failed at %s:%d: %s\n", __FILE__, __LINE__, #cond);                                      \
    } while (0)

#define TAP_EQ_INT(got, want, ...)                                                                                 \
    do {                                                                                                           \
        long long g_ = (long long)(got), w_ = (long long)(want);                                                   \
        TAP_OK(g_ == w_, __VA_ARGS__);                                                                             \
        if (g_ != w_)                                                                                              \
            printf("#   got %lld, want %lld\n", g_, w_);                                                           \
    } while (0)

#define TAP_EQ_STR(got, want, ...)                                                                                 \
    do {                                                                                                           \
        const char *g_ = (got), *w_ = (want);                                                                      \
        int same_ = g_ && w_ && strcmp(g_, w_) == 0;                                                               \
        TAP_OK(same_, __VA_ARGS__);                                                                                \
        if (!same_)                                                                                                \
            printf("#   got \"%s\", want \"%s\"\n", g_ ? g_ : "(null)", w_ ? w_ : "(null)");                      \
    } while (0)

static inline int tap_done(void)
{
    printf("1..%d\n", tap_n);
    if (tap_fail)
        printf("# %d of %d failed\n", tap_fail, tap_n);
    return tap_fail ? 1 : 0;
}

#endif
