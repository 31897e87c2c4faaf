/* SPDX-License-Identifier: MIT
 * rxguard.h: POSIX extended regular expressions from clients (EKM rules,
 * archregx, sample-key patterns, listing filters), compiled only when
 * their size is bounded. glibc's regcomp copies a sub-expression once per
 * repetition it may take, so stacked repetition ("a++++") grows
 * exponentially and nested bounds ("(a{0,1000}){0,1000}") multiply: a
 * pattern of a few bytes takes gigabytes and minutes. The guard refuses a
 * repetition of a repetition, a bound over SL_REGEX_DUP_MAX, and a pattern
 * whose expanded size (each atom counted once per copy its enclosing
 * repetitions make) is over SL_REGEX_SIZE_MAX. Any thread.
 */
#ifndef SL_RXGUARD_H
#define SL_RXGUARD_H

#include "sl.h"
#include <regex.h>

#define SL_REGEX_LEN_MAX 1024
#define SL_REGEX_DUP_MAX 255
#define SL_REGEX_SIZE_MAX 20000

/* 0 when pat is safe to compile, else -1 with err (400) saying why; what
 * names the pattern in the message ("archregx") */
int sl_regex_guard(const char *pat, const char *what, struct sl_err *err);
/* sl_regex_guard, then regcomp(re, pat, cflags): 0, or -1 with err (400:
 * refused, or regcomp's own message); re is to regfree only after 0. */
int sl_regcomp(regex_t *re, const char *pat, int cflags, const char *what, struct sl_err *err);

#endif
