/* SPDX-License-Identifier: MIT
 * test_dsort_spec.c: dsort's RequestSpec parser (server/jobs/dsort_spec.c)
 * and the YAML reader under it (server/core/yamlx.c): AIStore's JSON, the
 * WebDataset blog post's older spelling, YAML, and every refusal naming
 * its field.
 */
#include "tap.h"
#include "test_arch_helpers.h"
#include "dsort_spec.h"
#include "yamlx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int parse(const char *text, struct sl_dsort_spec *s, struct sl_err *err)
{
    memset(err, 0, sizeof(*err));
    return sl_dsort_spec_parse_text(text, strlen(text), s, err);
}

/* refused with code, and the message contains want */
static void refused(const char *text, int code, const char *want, const char *what)
{
    struct sl_dsort_spec s;
    struct sl_err err;
    int rc = parse(text, &s, &err);
    TAP_OK(rc < 0 && err.code == code && strstr(err.msg, want), "%s: %s", what, err.msg);
    sl_dsort_spec_free(&s);
}

static void test_aistore_json(void)
{
    struct sl_dsort_spec s;
    struct sl_err err;
    int rc = parse("{\"input_bck\": {\"name\": \"src\", \"provider\": \"ais\"},"
                   " \"input_format\": {\"template\": \"shard-{0..9}\"}, \"input_extension\": \".tar\","
                   " \"output_bck\": {\"name\": \"dst\"}, \"output_format\": \"out-{00..99}\","
                   " \"output_extension\": \".tgz\", \"output_shard_size\": \"10MiB\", \"description\": \"d\","
                   " \"algorithm\": {\"kind\": \"shuffle\", \"seed\": \"42\"}, \"max_mem_usage\": \"60%\","
                   " \"Config\": {\"missing_shards\": \"warn\"}}",
                   &s, &err);
    TAP_OK(rc == 0, "AIStore's JSON spec: %s", err.msg);
    TAP_EQ_STR(s.in_bck, "src", "input bucket");
    TAP_EQ_STR(s.out_bck, "dst", "output bucket");
    TAP_EQ_STR(s.in_template, "shard-{0..9}", "input template");
    TAP_EQ_STR(s.in_ext, ".tar", "input extension");
    TAP_EQ_STR(s.out_ext, ".tgz", "output extension may differ");
    TAP_OK(s.shard_size == 10 * SL_MIB, "output_shard_size");
    TAP_OK(s.alg == SL_DSORT_SHUFFLE && s.seed_set && s.seed == 42, "shuffle with seed 42");
    TAP_EQ_INT(s.max_mem_pct, 60, "max_mem_usage as a percentage");
    TAP_EQ_INT(s.missing_shards, SL_DSORT_WARN, "Config reaction");
    TAP_EQ_INT(s.duplicated_records, SL_DSORT_ABORT, "reactions default to abort");
    json_t *j = sl_dsort_spec_json(&s);
    TAP_EQ_STR(json_string_value(json_object_get(json_object_get(j, "algorithm"), "seed")), "42",
               "the normalised spec carries the seed");
    json_decref(j);
    sl_dsort_spec_free(&s);

    rc = parse("{\"input_bck\": \"ais://src\", \"input_format\": {\"objnames\": [\"a.tar\", \"b.tar\"]},"
               " \"output_format\": \"o-%d\", \"output_shard_size\": 1048576, \"algorithm\": {\"kind\": \"shuffle\"}}",
               &s, &err);
    TAP_OK(rc == 0 && s.nobj == 2 && !strcmp(s.objnames[1], "b.tar"), "objnames: %s", err.msg);
    TAP_OK(s.out_unbounded, "a %%d output format is unbounded");
    TAP_EQ_STR(s.out_bck, "src", "the output bucket defaults to the input");
    TAP_OK(!s.seed_set && s.seed != 0, "no seed: one is drawn");
    j = sl_dsort_spec_json(&s);
    char want[32];
    snprintf(want, sizeof(want), "%llu", (unsigned long long)s.seed);
    TAP_EQ_STR(json_string_value(json_object_get(json_object_get(j, "algorithm"), "seed")), want,
               "and reported so the run can be repeated");
    json_decref(j);
    sl_dsort_spec_free(&s);

    rc = parse("{\"input_bck\": {\"name\": \"src\"}, \"input_format\": \"s-{0..3}.tar.gz\","
               " \"output_format\": \"o-{0..3}\"}", &s, &err);
    TAP_OK(rc == 0, "template with an extension: %s", err.msg);
    TAP_EQ_STR(s.in_ext, ".tar.gz", "the input extension is read from the template");
    TAP_EQ_INT(s.alg, SL_DSORT_ALPHANUMERIC, "no algorithm: alphanumeric");
    sl_dsort_spec_free(&s);
}

static void test_blog_spelling(void)
{
    /* the spec from AIStore's WebDataset blog post, as users copy it */
    struct sl_dsort_spec s;
    struct sl_err err;
    int rc = parse("{\n"
                   "    \"extension\": \".tar\",\n"
                   "    \"bck\": {\"name\": \"images\"},\n"
                   "    \"input_format\": \"samples-{00..18}\",\n"
                   "    \"output_format\": \"shuffled-shard-%d\",\n"
                   "    \"output_shard_size\": \"10KB\",\n"
                   "    \"description\": \"shuffle image samples\",\n"
                   "    \"algorithm\": {\"kind\": \"shuffle\", \"seed\": \"1234\"}\n"
                   "}\n",
                   &s, &err);
    TAP_OK(rc == 0, "the blog post's spec: %s", err.msg);
    TAP_EQ_STR(s.in_bck, "images", "\"bck\" is the input bucket");
    TAP_EQ_STR(s.in_ext, ".tar", "\"extension\" is the input extension");
    TAP_EQ_STR(s.in_template, "samples-{00..18}", "input_format as a plain string");
    TAP_OK(s.out_unbounded && s.shard_size == 10000, "printf output format, 10KB shards");
    sl_dsort_spec_free(&s);
}

static void test_yaml(void)
{
    struct sl_dsort_spec s;
    struct sl_err err;
    int rc = parse("# a dsort spec in YAML\n"
                   "input_bck:\n"
                   "  name: src\n"
                   "  provider: ais\n"
                   "input_format:\n"
                   "  template: shard-{0..9}\n"
                   "output_format: out-{000..999}\n"
                   "output_shard_size: 1MiB\n"
                   "algorithm:\n"
                   "  kind: alphanumeric\n"
                   "  decreasing: true\n"
                   "dry_run: true\n",
                   &s, &err);
    TAP_OK(rc == 0, "YAML spec: %s", err.msg);
    TAP_OK(s.decreasing && s.dry_run, "YAML booleans");
    TAP_OK(s.shard_size == SL_MIB, "YAML size string");
    sl_dsort_spec_free(&s);

    rc = parse("input_bck: src\noutput_format: o-{0..9}\nalgorithm:\n  kind: shuffle\n  seed: 7\n", &s, &err);
    TAP_OK(rc == 0 && s.seed == 7 && s.seed_set, "a YAML integer seed: %s", err.msg);
    sl_dsort_spec_free(&s);

    refused("input_bck: [unclosed\n", SL_EINVAL, "line", "broken YAML names the line");
    refused("a: &x [*x, *x]\n", SL_EINVAL, "", "a self-referencing alias is refused, not expanded forever");

    struct sl_err e2 = { 0 };
    const char *bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n"
                       "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
                       "c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b, *b]\n"
                       "d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c, *c]\n"
                       "e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d, *d]\n"
                       "f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e, *e]\n";
    json_t *j = sl_yaml_to_json(bomb, strlen(bomb), &e2);
    TAP_OK(!j && strstr(e2.msg, "100000"), "alias expansion is bounded: %s", e2.msg);
    json_decref(j);
    j = sl_yaml_to_json("k: 'quoted 12'\nn: 12\nf: 1.5\nz: ~\ns: yes\n", 40, &e2);
    TAP_OK(j && json_is_string(json_object_get(j, "k")) && json_integer_value(json_object_get(j, "n")) == 12 &&
               json_is_real(json_object_get(j, "f")) && json_is_null(json_object_get(j, "z")) &&
               json_is_string(json_object_get(j, "s")),
           "YAML 1.2 core scalars (quoted stays a string, yes is a string)");
    json_decref(j);
}

static void test_refusals(void)
{
    refused("{\"input_bck\": \"src\", \"output_format\": \"o-{0..9}\", \"algorithm\": {\"kind\": \"random\"}}",
            SL_EINVAL, "valid: alphanumeric, shuffle, content, none, md5, lua", "unknown algorithm lists the valid");
    refused("{\"input_bck\": \"src\", \"output_format\": \"o-{0..9}\", \"input_extension\": \".rar\"}", SL_EINVAL,
            "supported: ", "unknown extension lists the supported ones");
    refused("{\"input_bck\": \"src\", \"output_format\": \"o-{0..9}\", \"output_shard_size\": \"100XB\"}", SL_EINVAL,
            "100XB", "a size like 100XB");
    /* past 2^63 - 1 it could not be written back as the JSON integer it is stored as (fuzz/dsort_spec) */
    refused("{\"input_bck\": \"src\", \"output_format\": \"o-{0..9}\", \"output_shard_size\": "
            "\"16397105843297379214\"}", SL_EINVAL, "at most 8 EiB", "a size past 2^63");
    refused("{\"input_bck\": \"src\", \"output_format\": \"o-%d\"}", SL_EINVAL, "output_shard_size",
            "an unbounded output format needs a shard size");
    refused("{\"input_bck\": \"src\", \"output_format\": \"fixed\"}", SL_EINVAL, "no counter or range",
            "an output format without a range");
    refused("{\"input_bck\": \"src\", \"input_format\": \"s-%d\", \"output_format\": \"o-{0..9}\"}", SL_EINVAL,
            "no upper bound", "an unbounded input template");
    refused("{\"input_bck\": \"src\", \"output_format\": \"o-{0..9}\", \"output_bck\": \"s3://x\"}", SL_EUNSUPP,
            "only ais://", "a bucket of another provider (501)");
    refused("{\"output_format\": \"o-{0..9}\"}", SL_EINVAL, "input_bck", "the input bucket is required");
    refused("{\"input_bck\": \"src\", \"output_format\": \"o-{0..9}\", \"shard_sise\": 1}", SL_EINVAL,
            "unknown field \"shard_sise\"", "an unknown field is named");
    refused("{\"input_bck\": \"src\", \"output_format\": \"o-{0..9}\", \"algorithm\": {\"kind\": \"content\"}}",
            SL_EINVAL, "extension", "content needs the member extension");
    refused("{\"input_bck\": \"src\", \"output_format\": \"o-{0..9}\", \"algorithm\": {\"kind\": \"content\","
            " \"extension\": \".cls\", \"content_key_type\": \"date\"}}",
            SL_EINVAL, "valid: int, float, string", "content_key_type");
    refused("{\"input_bck\": \"src\", \"output_format\": \"o-{0..9}\", \"algorithm\": {\"kind\": \"lua\","
            " \"script\": \"function sort_key(r)\\n  return r.key +\\nend\"}}",
            SL_EINVAL, "line 3", "a Lua ordering that does not compile names the line");
    refused("{\"input_bck\": \"src\", \"output_format\": \"o-{0..9}\", \"algorithm\": {\"kind\": \"lua\","
            " \"script\": \"function other(r) return 1 end\"}}",
            SL_EINVAL, "sort_key", "a Lua ordering without sort_key (400)");
    refused("{\"input_bck\": \"src\", \"output_format\": \"o-{0..9}\", \"ekm_file\": \"ais://b/ekm.json\","
            " \"ekm_lua\": \"function shard_for(k, r) return 'x' end\", \"output_shard_size\": \"1MiB\"}",
            SL_EINVAL, "either ekm_file or ekm_lua", "two EKMs");
    refused("{\"input_bck\": \"src\", \"ekm_file\": \"ftp://x/ekm\", \"output_shard_size\": \"1MiB\"}", SL_EINVAL,
            "ekm_file", "an EKM at an unsupported URL");
    refused("{\"input_bck\": \"src\", \"output_format\": \"o-{0..9}\", \"max_mem_usage\": \"150%\"}", SL_EINVAL,
            "1% to 100%", "max_mem_usage over 100%");
    refused("{\"input_bck\": \"src\", \"output_format\": \"o-{0..9}\", \"Config\": {\"call_timeout\": \"1m\"}}",
            SL_EINVAL, "call_timeout", "a Config key this build does not honour is refused, not ignored");
    refused("{\"input_bck\": \"src\", \"output_format\": \"o-{0..9}\", \"dsorter_type\": \"dsorter_mem\"}",
            SL_EINVAL, "dsorter_general", "a dsorter this build does not have");
    refused("[1, 2]", SL_EINVAL, "object", "not an object");
}

int main(void)
{
    tp_arch_load();
    test_aistore_json();
    test_blog_spelling();
    test_yaml();
    test_refusals();
    sl_arch_fini();
    return tap_done();
}
