/* SPDX-License-Identifier: MIT
 * rxguard.c: a size guard before regcomp. See rxguard.h.
 */
#include "rxguard.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEPTH_MAX 64

/* the bound a {m,n} at p applies (its upper one, or m for {m} and {m,}),
 * with *end just past '}'; -1 when p does not start a bound (glibc then
 * takes '{' as a literal) */
static long bound_at(const char *p, const char **end)
{
    if (*p != '{')
        return -1;
    char *e;
    long m = strtol(p + 1, &e, 10); /* (saturates: a bound that large is refused anyway) */
    if (e == p + 1 && p[1] == ',') /* {,n}: glibc reads it as {0,n} */
        m = 0;
    else if (e == p + 1 || m < 0)
        return -1;
    long n = m;
    if (*e == ',') {
        char *e2;
        long v = strtol(e + 1, &e2, 10);
        n = e2 != e + 1 ? v : m < LONG_MAX ? m + 1 : m; /* {m,}: m copies and a star */
        e = e2;
    }
    if (*e != '}')
        return -1;
    *end = e + 1;
    return n > m ? n : m;
}

int sl_regex_guard(const char *pat, const char *what, struct sl_err *err)
{
    size_t len = strlen(pat);
    if (len > SL_REGEX_LEN_MAX)
        return sl_errf(err, SL_EINVAL, "%s: the regular expression is %zu bytes (at most %d)", what, len,
                       SL_REGEX_LEN_MAX);
    /* per open group: the expanded size of what it holds so far, and of its last element */
    double sum[DEPTH_MAX + 1] = { 0 }, last[DEPTH_MAX + 1] = { 0 };
    int d = 0;
    bool after_rep = false, have_elem = false;
    for (const char *p = pat; *p;) {
        char c = *p;
        if (c == '*' || c == '+' || c == '?' || (c == '{' && bound_at(p, &(const char *){ NULL }) >= 0)) {
            double f = 1;
            const char *next = p + 1;
            if (c == '{') {
                long n = bound_at(p, &next);
                if (n > SL_REGEX_DUP_MAX)
                    return sl_errf(err, SL_EINVAL, "%s: a repetition bound of %ld in \"%.100s\" (at most %d)", what, n,
                                   pat, SL_REGEX_DUP_MAX);
                f = n < 1 ? 1 : (double)n;
            } else if (c == '+') {
                f = 2;
            }
            if (after_rep)
                return sl_errf(err, SL_EINVAL, "%s: \"%.100s\" repeats a repetition (as in a++ or a*{2}), which can "
                               "take gigabytes to compile; write one repetition", what, pat);
            if (have_elem) { /* (a leading '*' is a literal) */
                sum[d] += last[d] * (f - 1);
                last[d] *= f;
            }
            after_rep = have_elem;
            p = next;
        } else if (c == '(') {
            if (d == DEPTH_MAX)
                return sl_errf(err, SL_EINVAL, "%s: \"%.100s\" nests groups more than %d deep", what, pat, DEPTH_MAX);
            d++;
            sum[d] = last[d] = 0;
            after_rep = have_elem = false;
            p++;
        } else if (c == ')' && d > 0) {
            double g = sum[d] > 0 ? sum[d] : 1;
            d--;
            sum[d] += g;
            last[d] = g;
            after_rep = false;
            have_elem = true;
            p++;
        } else if (c == '|') {
            after_rep = have_elem = false;
            p++;
        } else {
            /* one atom: an escape, a bracket expression, or a character */
            const char *q = p + 1;
            if (c == '\\' && *q) {
                q++;
            } else if (c == '[') {
                if (*q == '^')
                    q++;
                if (*q == ']')
                    q++;
                while (*q && *q != ']') {
                    if (*q == '[' && (q[1] == ':' || q[1] == '.' || q[1] == '=')) { /* [:alpha:] and its kin */
                        const char *e = strstr(q + 2, q[1] == ':' ? ":]" : q[1] == '.' ? ".]" : "=]");
                        q = e ? e + 2 : q + 1;
                    } else {
                        q++;
                    }
                }
                if (*q == ']')
                    q++;
            }
            sum[d] += 1;
            last[d] = 1;
            after_rep = false;
            have_elem = true;
            p = q;
        }
        if (sum[d] > SL_REGEX_SIZE_MAX)
            break;
    }
    double total = 0;
    for (int i = 0; i <= d; i++)
        total += sum[i];
    if (total > SL_REGEX_SIZE_MAX)
        return sl_errf(err, SL_EINVAL, "%s: \"%.100s\" expands to more than %d atoms with its repetitions (nested "
                       "bounds multiply); write it with smaller or fewer bounds", what, pat, SL_REGEX_SIZE_MAX);
    return 0;
}

int sl_regcomp(regex_t *re, const char *pat, int cflags, const char *what, struct sl_err *err)
{
    if (sl_regex_guard(pat, what, err) < 0)
        return -1;
    int rc = regcomp(re, pat, cflags);
    if (rc) {
        char msg[256];
        regerror(rc, re, msg, sizeof(msg));
        return sl_errf(err, SL_EINVAL, "%s: \"%.200s\" is not a valid regular expression: %s", what, pat, msg);
    }
    return 0;
}
