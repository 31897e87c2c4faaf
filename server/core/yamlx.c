/* SPDX-License-Identifier: MIT
 * yamlx.c: see yamlx.h.
 */
#include "yamlx.h"

#include <errno.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define MAX_DEPTH 64
#define MAX_NODES 100000

struct conv {
    yaml_document_t *doc;
    long nodes;
    struct sl_err *err;
};

static bool all_match(const char *s, const char *re_src)
{
    regex_t re;
    if (regcomp(&re, re_src, REG_EXTENDED | REG_NOSUB))
        return false;
    bool ok = regexec(&re, s, 0, NULL, 0) == 0;
    regfree(&re);
    return ok;
}

/* YAML 1.2 core schema for plain scalars */
static json_t *plain_scalar(const char *s)
{
    if (!*s || !strcmp(s, "~") || !strcmp(s, "null") || !strcmp(s, "Null") || !strcmp(s, "NULL"))
        return json_null();
    if (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE"))
        return json_true();
    if (!strcmp(s, "false") || !strcmp(s, "False") || !strcmp(s, "FALSE"))
        return json_false();
    if (all_match(s, "^[-+]?[0-9]+$")) {
        errno = 0;
        long long v = strtoll(s, NULL, 10);
        if (errno == 0)
            return json_integer(v);
        return json_string(s); /* beyond int64: keep the digits */
    }
    if (all_match(s, "^[-+]?(\\.[0-9]+|[0-9]+(\\.[0-9]*)?)([eE][-+]?[0-9]+)?$"))
        return json_real(strtod(s, NULL));
    return json_string(s);
}

static json_t *conv_node(struct conv *c, yaml_node_t *n, int depth)
{
    if (!n) {
        sl_errf(c->err, SL_EINVAL, "YAML: a reference to a missing node");
        return NULL;
    }
    if (depth > MAX_DEPTH || ++c->nodes > MAX_NODES) {
        sl_errf(c->err, SL_EINVAL, "YAML: the document nests deeper than %d or expands to more than %d nodes "
                "(line %lu)", MAX_DEPTH, MAX_NODES, (unsigned long)n->start_mark.line + 1);
        return NULL;
    }
    switch (n->type) {
    case YAML_SCALAR_NODE: {
        const char *s = (const char *)n->data.scalar.value;
        json_t *j = n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? plain_scalar(s) : json_string(s);
        if (!j)
            sl_errf(c->err, SL_EINVAL, "YAML: line %lu: the value is not valid UTF-8",
                    (unsigned long)n->start_mark.line + 1);
        return j;
    }
    case YAML_SEQUENCE_NODE: {
        json_t *a = json_array();
        for (yaml_node_item_t *i = n->data.sequence.items.start; i < n->data.sequence.items.top; i++) {
            json_t *v = conv_node(c, yaml_document_get_node(c->doc, *i), depth + 1);
            if (!v) {
                json_decref(a);
                return NULL;
            }
            json_array_append_new(a, v);
        }
        return a;
    }
    case YAML_MAPPING_NODE: {
        json_t *o = json_object();
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start; p < n->data.mapping.pairs.top; p++) {
            yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
            if (!k || k->type != YAML_SCALAR_NODE) {
                sl_errf(c->err, SL_EINVAL, "YAML: line %lu: a mapping key must be a plain value",
                        (unsigned long)(k ? k->start_mark.line : n->start_mark.line) + 1);
                json_decref(o);
                return NULL;
            }
            json_t *v = conv_node(c, yaml_document_get_node(c->doc, p->value), depth + 1);
            if (!v || json_object_set_new(o, (const char *)k->data.scalar.value, v) < 0) {
                if (!c->err->msg[0])
                    sl_errf(c->err, SL_EINVAL, "YAML: line %lu: the key is not valid UTF-8",
                            (unsigned long)k->start_mark.line + 1);
                json_decref(o);
                return NULL;
            }
        }
        return o;
    }
    default:
        sl_errf(c->err, SL_EINVAL, "YAML: line %lu: empty node", (unsigned long)n->start_mark.line + 1);
        return NULL;
    }
}

json_t *sl_yaml_to_json(const char *buf, size_t n, struct sl_err *err)
{
    yaml_parser_t p;
    yaml_document_t doc;
    json_t *out = NULL;
    if (!yaml_parser_initialize(&p)) {
        sl_errf(err, SL_EINTERNAL, "YAML: cannot initialise the parser");
        return NULL;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)buf, n);
    if (!yaml_parser_load(&p, &doc)) {
        sl_errf(err, SL_EINVAL, "YAML: line %lu, column %lu: %s%s%s", (unsigned long)p.problem_mark.line + 1,
                (unsigned long)p.problem_mark.column + 1, p.problem ? p.problem : "parse error",
                p.context ? " " : "", p.context ? p.context : "");
        yaml_parser_delete(&p);
        return NULL;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    if (!root) {
        sl_errf(err, SL_EINVAL, "YAML: the document is empty");
        goto out;
    }
    struct conv c = { &doc, 0, err };
    out = conv_node(&c, root, 0);
out:
    yaml_document_delete(&doc);
    yaml_parser_delete(&p);
    return out;
}
