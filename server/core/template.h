/* SPDX-License-Identifier: MIT
 * template.h: AIStore object-name templates (spec §5): bash-style brace
 * ranges "pre-{0000..0099..2}-suf" (several groups allowed, zero padding
 * from the start token) and lists "{a,b,c}", at-style "pre-@00100"
 * (= {00000..00100}), and printf-style "pre-%06d" (an unbounded counter
 * starting at 0). A template without any range is a name prefix; "" or "*"
 * means the whole bucket.
 */
#ifndef SL_TEMPLATE_H
#define SL_TEMPLATE_H

#include "sl.h"

#define SL_TMPL_MAX 10000000ULL

struct sl_tmpl;

/* *out is new (sl_tmpl_free); s is copied. On error *out is untouched. */
int sl_tmpl_parse(const char *s, struct sl_tmpl **out, struct sl_err *err);
void sl_tmpl_free(struct sl_tmpl *t);
/* true when it has ranges/lists or a %d counter; false: a plain prefix */
bool sl_tmpl_is_range(const struct sl_tmpl *t);
/* the prefix for a non-range template ("" for the whole bucket); borrowed
 * from t, valid until sl_tmpl_free(t) */
const char *sl_tmpl_prefix(const struct sl_tmpl *t);
/* number of names (UINT64_MAX for an unbounded %d counter) */
uint64_t sl_tmpl_count(const struct sl_tmpl *t);
/* the i-th name (0-based) into out (the caller's; reset first); -1 past
 * the end */
int sl_tmpl_at(const struct sl_tmpl *t, uint64_t i, struct sl_buf *out);

/* A ListRange selection of a multi-object message (spec §5): "objnames"
 * (array of names) or "template" (string; "" = everything). *names is a
 * new NULL-terminated array (free with sl_strv_free) when the list was
 * given, *tmpl a new string (free()) otherwise (NULL when absent). Both
 * given, a name that is not a string, or (need_one) neither: 400, and
 * nothing to free. */
#include <jansson.h>
int sl_listrange_parse(const json_t *v, bool need_one, char ***names, size_t *n, char **tmpl, struct sl_err *err);
void sl_strv_free(char **v, size_t n);

#endif
