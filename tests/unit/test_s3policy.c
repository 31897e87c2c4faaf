/* SPDX-License-Identifier: MIT
 * test_s3policy.c: the bucket policy language of api/s3policy.c — what
 * compiles (MalformedPolicy's reasons), and how statements decide: Deny
 * over Allow, wildcards in actions and resources, NotAction/NotResource,
 * principals, and the condition operators with their absent-key rules.
 */
#include "tap.h"
#include "s3.h"

#include <stdio.h>
#include <string.h>

enum { NONE = 0, ALLOW = 1, DENY = 2, BAD = -1 };

static int ev(const char *stmts, const char *user, const char *ip, const char *action, const char *res)
{
    char doc[4096], why[300] = "";
    snprintf(doc, sizeof(doc), "{\"Version\":\"2012-10-17\",\"Statement\":[%s]}", stmts);
    int rc = s3_policy_eval_text(doc, "b", user, ip, action, res, why, sizeof(why));
    if (rc < 0)
        printf("# malformed: %s\n", why);
    return rc;
}

static const char *why_of(const char *doc)
{
    static char why[300];
    why[0] = 0;
    if (s3_policy_eval_text(doc, "b", "u", "127.0.0.1", "s3:GetObject", "arn:aws:s3:::b/k", why, sizeof(why)) >= 0)
        return "";
    return why;
}

#define ALLOW_GET_IN "\"Effect\":\"Allow\",\"Principal\":{\"AWS\":\"alice\"},\"Action\":\"s3:Get*\"," \
                     "\"Resource\":\"arn:aws:s3:::b/data/*\"}"
#define ALLOW_GET "{" ALLOW_GET_IN
#define DENY_ALL "{\"Effect\":\"Deny\",\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"arn:aws:s3:::b/*\"}"
#define OBJ "arn:aws:s3:::b/data/x"

#define DATE_C(op, v) "{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"*\"," \
                          "\"Condition\":{\"" op "\":{\"aws:CurrentTime\":\"" v "\"}}}"
#define DATE_E(op, v) "{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"*\"," \
                          "\"Condition\":{\"" op "\":{\"aws:EpochTime\":\"" v "\"}}}"
#define NOTP(eff) "{\"Effect\":\"" eff "\",\"NotPrincipal\":{\"AWS\":[\"alice\",\"arn:aws:iam::shale:user/carol\"]}," \
                      "\"Action\":\"s3:*\",\"Resource\":\"*\"}"

static void dates_and_notprincipal(void)
{
    /* Date*: now is after 2020 and before 2200, in ISO 8601 (with offsets, fractions, a bare date) or epoch */
    TAP_EQ_INT(ev(DATE_C("DateGreaterThan", "2020-01-01T00:00:00Z"), NULL, "1.2.3.4", "s3:GetObject", OBJ), ALLOW,
               "DateGreaterThan a past date");
    TAP_EQ_INT(ev(DATE_C("DateLessThan", "2020-01-01"), NULL, "1.2.3.4", "s3:GetObject", OBJ), NONE,
               "DateLessThan a past date: not now");
    TAP_EQ_INT(ev(DATE_C("DateLessThan", "2200-01-01T00:00:00.5+02:00"), NULL, "1.2.3.4", "s3:GetObject", OBJ), ALLOW,
               "DateLessThan a future date (fraction, offset)");
    TAP_EQ_INT(ev(DATE_C("DateGreaterThanEquals", "2200-01-01T00:00:00Z"), NULL, "1.2.3.4", "s3:GetObject", OBJ),
               NONE, "DateGreaterThanEquals a future date: not now");
    TAP_EQ_INT(ev(DATE_C("DateNotEquals", "2020-01-01T00:00:00Z"), NULL, "1.2.3.4", "s3:GetObject", OBJ), ALLOW,
               "DateNotEquals");
    TAP_EQ_INT(ev(DATE_E("DateGreaterThan", "1577836800"), NULL, "1.2.3.4", "s3:GetObject", OBJ), ALLOW,
               "aws:EpochTime against epoch seconds");
    TAP_EQ_INT(ev(DATE_E("DateLessThan", "2020-01-01T00:00:00Z"), NULL, "1.2.3.4", "s3:GetObject", OBJ), NONE,
               "aws:EpochTime against an ISO date");
    TAP_EQ_INT(ev(DATE_C("DateLessThanIfExists", "2020-01-01"), NULL, "1.2.3.4", "s3:GetObject", OBJ), NONE,
               "IfExists on a present key still compares");
    /* NotPrincipal: everybody but those named, anonymous included */
    TAP_EQ_INT(ev(NOTP("Deny"), "bob", "1.2.3.4", "s3:GetObject", OBJ), DENY, "NotPrincipal Deny: another user");
    TAP_EQ_INT(ev(NOTP("Deny"), NULL, "1.2.3.4", "s3:GetObject", OBJ), DENY, "NotPrincipal Deny: anonymous");
    TAP_EQ_INT(ev(NOTP("Deny"), "alice", "1.2.3.4", "s3:GetObject", OBJ), NONE, "NotPrincipal Deny: a name excepted");
    TAP_EQ_INT(ev(NOTP("Deny"), "carol", "1.2.3.4", "s3:GetObject", OBJ), NONE, "... by ARN");
    TAP_EQ_INT(ev(NOTP("Allow"), "bob", "1.2.3.4", "s3:GetObject", OBJ), ALLOW, "NotPrincipal Allow");
}

int main(void)
{
    dates_and_notprincipal();
    /* principals, actions, resources */
    TAP_EQ_INT(ev(ALLOW_GET, "alice", "1.2.3.4", "s3:GetObject", OBJ), ALLOW, "Allow by name and wildcard");
    TAP_EQ_INT(ev(ALLOW_GET, "alice", "1.2.3.4", "S3:getobject", OBJ), ALLOW, "actions match case-insensitively");
    TAP_EQ_INT(ev(ALLOW_GET, "bob", "1.2.3.4", "s3:GetObject", OBJ), NONE, "another user: no statement");
    TAP_EQ_INT(ev(ALLOW_GET, NULL, "1.2.3.4", "s3:GetObject", OBJ), NONE, "anonymous: no statement");
    TAP_EQ_INT(ev(ALLOW_GET, "alice", "1.2.3.4", "s3:PutObject", OBJ), NONE, "another action");
    TAP_EQ_INT(ev(ALLOW_GET, "alice", "1.2.3.4", "s3:GetObject", "arn:aws:s3:::b/other/x"), NONE, "other prefix");
    TAP_EQ_INT(ev(ALLOW_GET "," DENY_ALL, "alice", "1.2.3.4", "s3:GetObject", OBJ), DENY, "Deny beats Allow");
    TAP_EQ_INT(ev(DENY_ALL "," ALLOW_GET, "alice", "1.2.3.4", "s3:GetObject", OBJ), DENY, "in either order");
    TAP_EQ_INT(ev("{\"Effect\":\"Allow\",\"Principal\":{\"AWS\":[\"arn:aws:iam::shale:user/alice\"]},"
                  "\"Action\":\"s3:GetObject\",\"Resource\":\"arn:aws:s3:::b/d?ta/*\"}",
                  "alice", "1.2.3.4", "s3:GetObject", OBJ), ALLOW, "ARN principal, '?' in a resource");
    TAP_EQ_INT(ev("{\"Effect\":\"Deny\",\"Principal\":\"*\",\"NotAction\":\"s3:Get*\",\"Resource\":\"*\"}",
                  "alice", "1.2.3.4", "s3:DeleteObject", OBJ), DENY, "NotAction denies what it does not name");
    TAP_EQ_INT(ev("{\"Effect\":\"Deny\",\"Principal\":\"*\",\"NotAction\":\"s3:Get*\",\"Resource\":\"*\"}",
                  "alice", "1.2.3.4", "s3:GetObject", OBJ), NONE, "... and not what it names");
    TAP_EQ_INT(ev("{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"*\","
                  "\"NotResource\":\"arn:aws:s3:::b/secret/*\"}", NULL, "1.2.3.4", "s3:GetObject",
                  "arn:aws:s3:::b/secret/k"), NONE, "NotResource");
    /* conditions */
#define C(op, key, v) "{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"*\"," \
                      "\"Condition\":{\"" op "\":{\"" key "\":" v "}}}"
    TAP_EQ_INT(ev(C("IpAddress", "aws:SourceIp", "\"10.0.0.0/8\""), "u", "10.9.8.7", "s3:GetObject", OBJ), ALLOW,
               "IpAddress in");
    TAP_EQ_INT(ev(C("IpAddress", "aws:SourceIp", "\"10.0.0.0/8\""), "u", "11.0.0.1", "s3:GetObject", OBJ), NONE,
               "IpAddress out");
    TAP_EQ_INT(ev(C("IpAddress", "aws:SourceIp", "[\"192.168.1.0/25\",\"127.0.0.1\"]"), "u", "127.0.0.1",
                  "s3:GetObject", OBJ), ALLOW, "IpAddress: any of a list, a bare address");
    TAP_EQ_INT(ev(C("IpAddress", "aws:SourceIp", "\"192.168.1.0/25\""), "u", "192.168.1.200", "s3:GetObject", OBJ),
               NONE, "a /25 boundary");
    TAP_EQ_INT(ev(C("NotIpAddress", "aws:SourceIp", "\"10.0.0.0/8\""), "u", "11.0.0.1", "s3:GetObject", OBJ), ALLOW,
               "NotIpAddress");
    TAP_EQ_INT(ev(C("IpAddress", "aws:SourceIp", "\"2001:db8::/32\""), "u", "2001:db8:1::5", "s3:GetObject", OBJ),
               ALLOW, "IPv6 CIDR");
    TAP_EQ_INT(ev(C("IpAddress", "aws:SourceIp", "\"2001:db8::/32\""), "u", "10.0.0.1", "s3:GetObject", OBJ), NONE,
               "IPv4 against an IPv6 block");
    TAP_EQ_INT(ev(C("StringEquals", "aws:username", "\"alice\""), "alice", "1.1.1.1", "s3:GetObject", OBJ), ALLOW,
               "StringEquals aws:username");
    TAP_EQ_INT(ev(C("StringEquals", "aws:username", "\"alice\""), NULL, "1.1.1.1", "s3:GetObject", OBJ), NONE,
               "an absent key matches no positive operator");
    TAP_EQ_INT(ev(C("StringNotEquals", "aws:username", "\"alice\""), NULL, "1.1.1.1", "s3:GetObject", OBJ), ALLOW,
               "... and every negated one");
    TAP_EQ_INT(ev(C("StringEqualsIfExists", "aws:username", "\"alice\""), NULL, "1.1.1.1", "s3:GetObject", OBJ),
               ALLOW, "IfExists: absent is true");
    TAP_EQ_INT(ev(C("StringEqualsIfExists", "aws:username", "\"alice\""), "bob", "1.1.1.1", "s3:GetObject", OBJ),
               NONE, "IfExists: present is compared");
    TAP_EQ_INT(ev(C("StringLike", "aws:username", "\"al*\""), "alice", "1.1.1.1", "s3:GetObject", OBJ), ALLOW,
               "StringLike");
    TAP_EQ_INT(ev(C("StringNotLike", "aws:username", "\"al*\""), "alice", "1.1.1.1", "s3:GetObject", OBJ), NONE,
               "StringNotLike");
    TAP_EQ_INT(ev(C("StringEqualsIgnoreCase", "aws:username", "\"ALICE\""), "alice", "1.1.1.1", "s3:GetObject", OBJ),
               ALLOW, "StringEqualsIgnoreCase");
    TAP_EQ_INT(ev(C("Null", "aws:username", "\"true\""), NULL, "1.1.1.1", "s3:GetObject", OBJ), ALLOW,
               "Null true: absent");
    TAP_EQ_INT(ev(C("Null", "aws:username", "\"true\""), "u", "1.1.1.1", "s3:GetObject", OBJ), NONE,
               "Null true: present");
    TAP_EQ_INT(ev(C("Bool", "aws:SecureTransport", "false"), "u", "1.1.1.1", "s3:GetObject", OBJ), ALLOW,
               "Bool aws:SecureTransport (plain HTTP here), a JSON boolean");
    TAP_EQ_INT(ev(C("StringEquals", "aws:PrincipalType", "\"Anonymous\""), NULL, "1.1.1.1", "s3:GetObject", OBJ),
               ALLOW, "aws:PrincipalType");
    /* what does not compile */
    static const struct {
        const char *doc, *why;
    } bad[] = {
        { "{", "valid JSON" },
        { "[]", "JSON object" },
        { "{\"Version\":\"2012-10-17\"}", "Statement" },
        { "{\"Version\":\"2013-01-01\",\"Statement\":[" ALLOW_GET "]}", "Version" },
        { "{\"Statement\":[{\"Effect\":\"Maybe\",\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"*\"}]}",
          "Effect" },
        { "{\"Statement\":[{\"Effect\":\"Allow\",\"Action\":\"s3:*\",\"Resource\":\"*\"}]}", "Principal" },
        { "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"iam:*\",\"Resource\":\"*\"}]}",
          "invalid action" },
        { "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\","
          "\"Resource\":\"arn:aws:s3:::other/*\"}]}", "its own bucket" },
        { "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"*\","
          "\"Condition\":{\"DateAfter\":{\"aws:CurrentTime\":\"2020-01-01\"}}}]}", "operator" },
        { "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"*\","
          "\"Condition\":{\"DateLessThan\":{\"aws:CurrentTime\":\"2020-13-01\"}}}]}", "not a date" },
        { "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"*\","
          "\"Condition\":{\"DateLessThan\":{\"aws:CurrentTime\":\"yesterday\"}}}]}", "not a date" },
        { "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"*\","
          "\"Condition\":{\"StringEquals\":{\"ec2:Region\":\"x\"}}}]}", "condition key" },
        { "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"*\","
          "\"Condition\":{\"IpAddress\":{\"aws:SourceIp\":\"10.0.0.0/33\"}}}]}", "CIDR" },
        { "{\"Statement\":[{\"Effect\":\"Deny\",\"NotPrincipal\":{\"AWS\":\"*\"},\"Action\":\"s3:*\","
          "\"Resource\":\"*\"}]}", "matches nobody" },
        { "{\"Statement\":[{\"Effect\":\"Deny\",\"Principal\":\"*\",\"NotPrincipal\":{\"AWS\":\"x\"},"
          "\"Action\":\"s3:*\",\"Resource\":\"*\"}]}", "both" },
        { "{\"Statement\":[{\"Sid\":\"a\"," ALLOW_GET_IN ",{\"Sid\":\"a\"," ALLOW_GET_IN "]}", "unique" },
        { "{\"Statement\":[{\"Effect\":\"Allow\",\"Principal\":\"*\",\"Action\":\"s3:*\",\"Resource\":\"*\","
          "\"Extra\":1}]}", "unknown element" },
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *w = why_of(bad[i].doc);
        TAP_OK(*w && strstr(w, bad[i].why), "malformed %zu names \"%s\": %s", i, bad[i].why, w);
    }
    return tap_done();
}
