/* YamlNode parser: scalar typing, documents, aliases, limits, errors; and
 * the diagnostics formatting every error goes through. */
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "diag.h"
#include "yaml-node.h"

typedef struct Parsed {
        YamlNode **docs;
        size_t n;
        Diagnostics diag;
        int r;
} Parsed;

static void parse_with(Parsed *p, const char *text, size_t len, const YamlLimits *l) {
        *p = (Parsed){};
        diagnostics_init(&p->diag);
        p->r = yaml_parse_documents(text, len, "t.yaml", l, &p->docs, &p->n, &p->diag);
}

static void parse(Parsed *p, const char *text) {
        parse_with(p, text, strlen(text), NULL);
}

static void parsed_done(Parsed *p) {
        if (p->r >= 0)
                yaml_documents_free(p->docs, p->n);
        diagnostics_deinit(&p->diag);
}

/* The first diagnostic as printed. */
static char *first_diag(const Parsed *p) {
        assert_true(p->diag.n > 0);
        return diag_to_string(&p->diag.items[0]);
}

static void assert_error(const char *text, int want_r, unsigned want_line, const char *want_sub) {
        Parsed p;
        parse(&p, text);
        assert_int_equal(p.r, want_r);
        assert_true(p.diag.n_errors >= 1);
        char *s = first_diag(&p);
        if (!strstr(s, want_sub))
                fail_msg("diagnostic \"%s\" lacks \"%s\"", s, want_sub);
        if (want_line > 0)
                assert_int_equal(p.diag.items[0].line, want_line);
        free(s);
        parsed_done(&p);
}

/* ---- diag ---- */

static void test_diag_format(void **state) {
        Diagnostics d;
        diagnostics_init(&d);
        diagnostics_add(&d, DIAG_ERROR, "pod.yaml", 12, 3, "spec.containers[0].image", "must be %s",
                        "set");
        diagnostics_add(&d, DIAG_WARNING, "pod.yaml", 4, 0, "spec.foo", "unknown field");
        diagnostics_add(&d, DIAG_ERROR, NULL, 0, 0, NULL, "bad");
        diagnostics_add(&d, DIAG_ERROR, "x.json", 0, 0, "kind", "is missing");
        assert_int_equal(d.n_errors, 3);
        assert_int_equal(d.n_warnings, 1);
        const char *want[] = {
                "pod.yaml:12: spec.containers[0].image: must be set",
                "pod.yaml:4: spec.foo: warning: unknown field",
                "<input>: bad",
                "x.json: kind: is missing",
        };
        for (size_t i = 0; i < 4; i++) {
                char *s = diag_to_string(&d.items[i]);
                assert_string_equal(s, want[i]);
                free(s);
        }

        Diagnostics m;
        diagnostics_init(&m);
        diagnostics_merge(&m, &d);
        assert_int_equal(m.n, 4);
        assert_int_equal(m.n_errors, 3);
        assert_int_equal(m.n_warnings, 1);
        assert_string_equal(m.items[1].path, "spec.foo");
        diagnostics_deinit(&m);
        diagnostics_deinit(&d);
}

static void test_diag_max_items(void **state) {
        Diagnostics d;
        diagnostics_init(&d);
        d.max_items = 3;
        for (int i = 0; i < 10; i++)
                diagnostics_add(&d, DIAG_ERROR, "f", i + 1, 0, NULL, "e%d", i);
        assert_int_equal(d.n, 3);
        assert_int_equal(d.n_errors, 10);
        assert_true(diagnostics_has_errors(&d));
        diagnostics_deinit(&d);
}

/* ---- scalars ---- */

typedef struct ScalarCase {
        const char *text;
        YamlNodeType type;
        int64_t i; /* int value, or bool */
        double f;
} ScalarCase;

static void test_scalar_typing(void **state) {
        static const ScalarCase cases[] = {
                { "true", YAML_NODE_BOOL, 1, 0 },
                { "True", YAML_NODE_BOOL, 1, 0 },
                { "TRUE", YAML_NODE_BOOL, 1, 0 },
                { "yes", YAML_NODE_BOOL, 1, 0 },
                { "Yes", YAML_NODE_BOOL, 1, 0 },
                { "on", YAML_NODE_BOOL, 1, 0 },
                { "ON", YAML_NODE_BOOL, 1, 0 },
                { "y", YAML_NODE_BOOL, 1, 0 },
                { "false", YAML_NODE_BOOL, 0, 0 },
                { "no", YAML_NODE_BOOL, 0, 0 },
                { "NO", YAML_NODE_BOOL, 0, 0 },
                { "off", YAML_NODE_BOOL, 0, 0 },
                { "n", YAML_NODE_BOOL, 0, 0 },
                { "tRue", YAML_NODE_STRING, 0, 0 },
                { "yES", YAML_NODE_STRING, 0, 0 },
                { "null", YAML_NODE_NULL, 0, 0 },
                { "Null", YAML_NODE_NULL, 0, 0 },
                { "NULL", YAML_NODE_NULL, 0, 0 },
                { "~", YAML_NODE_NULL, 0, 0 },
                { "", YAML_NODE_NULL, 0, 0 },
                { "nULL", YAML_NODE_STRING, 0, 0 },
                { "42", YAML_NODE_INT, 42, 0 },
                { "-17", YAML_NODE_INT, -17, 0 },
                { "+5", YAML_NODE_INT, 5, 0 },
                { "0", YAML_NODE_INT, 0, 0 },
                { "0x1F", YAML_NODE_INT, 31, 0 },
                { "0o17", YAML_NODE_INT, 15, 0 },
                { "0755", YAML_NODE_INT, 493, 0 },
                { "0b101", YAML_NODE_INT, 5, 0 },
                { "1_000", YAML_NODE_INT, 1000, 0 },
                { "9223372036854775807", YAML_NODE_INT, INT64_MAX, 0 },
                { "-9223372036854775808", YAML_NODE_INT, INT64_MIN, 0 },
                { "9223372036854775808", YAML_NODE_FLOAT, 0, 9223372036854775808.0 },
                { "08", YAML_NODE_FLOAT, 0, 8.0 },
                { "1.5", YAML_NODE_FLOAT, 0, 1.5 },
                { "1.", YAML_NODE_FLOAT, 0, 1.0 },
                { ".5", YAML_NODE_FLOAT, 0, 0.5 },
                { "1e3", YAML_NODE_FLOAT, 0, 1000.0 },
                { "-2.5E-1", YAML_NODE_FLOAT, 0, -0.25 },
                { ".inf", YAML_NODE_FLOAT, 0, INFINITY },
                { "-.Inf", YAML_NODE_FLOAT, 0, -INFINITY },
                { "1.2.3", YAML_NODE_STRING, 0, 0 },
                { "0x", YAML_NODE_STRING, 0, 0 },
                { "+", YAML_NODE_STRING, 0, 0 },
                { "12:30", YAML_NODE_STRING, 0, 0 },
                { "2024-01-01", YAML_NODE_STRING, 0, 0 },
                { "nginx:1.25", YAML_NODE_STRING, 0, 0 },
                { "\"true\"", YAML_NODE_STRING, 0, 0 },
                { "'42'", YAML_NODE_STRING, 0, 0 },
                { "\"\"", YAML_NODE_STRING, 0, 0 },
                { "|\n  42", YAML_NODE_STRING, 0, 0 },
                { "!!str 42", YAML_NODE_STRING, 0, 0 },
                { "!!int \"42\"", YAML_NODE_INT, 42, 0 },
                { "!!float 1", YAML_NODE_FLOAT, 0, 1.0 },
                { "!!bool \"yes\"", YAML_NODE_BOOL, 1, 0 },
                { "!!null ~", YAML_NODE_NULL, 0, 0 },
                { "! 42", YAML_NODE_STRING, 0, 0 },
        };
        for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
                const ScalarCase *c = &cases[k];
                char text[128];
                Parsed p;
                snprintf(text, sizeof(text), "v: %s\n", c->text);
                parse(&p, text);
                if (p.r < 0)
                        fail_msg("%s: parse failed", c->text);
                assert_int_equal(p.n, 1);
                const YamlNode *v = yaml_map_get(p.docs[0], "v");
                assert_non_null(v);
                if (v->type != c->type)
                        fail_msg("%s: type %s, want %s", c->text, yaml_node_type_to_string(v->type),
                                 yaml_node_type_to_string(c->type));
                if (c->type == YAML_NODE_INT)
                        assert_true(v->i == c->i);
                else if (c->type == YAML_NODE_BOOL)
                        assert_int_equal(v->b, c->i);
                else if (c->type == YAML_NODE_FLOAT)
                        assert_true(v->f == c->f);
                parsed_done(&p);
        }
}

static void test_scalar_text_kept(void **state) {
        Parsed p;
        parse(&p, "mode: 0755\nver: 1.10\ns: 'it''s'\nnan: .nan\n");
        assert_int_equal(p.r, 0);
        const YamlNode *m = yaml_map_get(p.docs[0], "mode");
        assert_string_equal(m->str, "0755");
        assert_false(m->quoted);
        assert_string_equal(yaml_map_get(p.docs[0], "ver")->str, "1.10");
        const YamlNode *s = yaml_map_get(p.docs[0], "s");
        assert_string_equal(s->str, "it's");
        assert_true(s->quoted);
        assert_true(isnan(yaml_map_get(p.docs[0], "nan")->f));
        assert_int_equal(m->line, 1);
        assert_int_equal(yaml_map_get(p.docs[0], "s")->line, 3);
        assert_int_equal(yaml_map_get(p.docs[0], "s")->column, 4);
        parsed_done(&p);
}

static void test_keys_normalized(void **state) {
        Parsed p;
        /* go-yaml v2 reads a plain "y" as true too: the classic YAML 1.1 gotcha. */
        parse(&p, "y: 1\n0x10: 2\n~: 3\n\"no\": 4\n1.50: 5\n");
        assert_int_equal(p.r, 0);
        const YamlNode *d = p.docs[0];
        assert_int_equal(d->n, 5);
        assert_string_equal(d->pairs[0].key->str, "true");
        assert_string_equal(d->pairs[1].key->str, "16");
        assert_string_equal(d->pairs[2].key->str, "null");
        assert_string_equal(d->pairs[3].key->str, "no");
        assert_string_equal(d->pairs[4].key->str, "1.5");
        assert_int_equal(d->pairs[0].key->type, YAML_NODE_STRING);
        assert_int_equal(yaml_map_get(d, "16")->i, 2);
        parsed_done(&p);
}

/* ---- documents ---- */

static void test_multi_documents(void **state) {
        Parsed p;
        parse(&p, "# leading comment\n---\na: 1\n---\n# only a comment\n---\n- x\n---\n...\n");
        assert_int_equal(p.r, 0);
        assert_int_equal(p.n, 2);
        assert_int_equal(p.docs[0]->type, YAML_NODE_MAP);
        assert_int_equal(p.docs[1]->type, YAML_NODE_SEQ);
        assert_int_equal(p.docs[1]->line, 7);
        parsed_done(&p);

        parse(&p, "");
        assert_int_equal(p.r, 0);
        assert_int_equal(p.n, 0);
        parsed_done(&p);

        parse(&p, "# nothing\n\n");
        assert_int_equal(p.r, 0);
        assert_int_equal(p.n, 0);
        parsed_done(&p);

        /* A document with an explicit null is not empty. */
        parse(&p, "---\nnull\n");
        assert_int_equal(p.r, 0);
        assert_int_equal(p.n, 1);
        assert_int_equal(p.docs[0]->type, YAML_NODE_NULL);
        parsed_done(&p);
}

/* ---- anchors, aliases, merge keys ---- */

static void test_alias_shares(void **state) {
        Parsed p;
        parse(&p, "base: &b {x: 1, l: [1, 2]}\nuse: *b\nuse2: *b\ns: &s hello\nt: *s\n");
        assert_int_equal(p.r, 0);
        const YamlNode *d = p.docs[0];
        const YamlNode *b = yaml_map_get(d, "base");
        assert_ptr_equal(b, yaml_map_get(d, "use"));
        assert_ptr_equal(b, yaml_map_get(d, "use2"));
        assert_int_equal(b->refs, 3);
        assert_string_equal(yaml_map_get(d, "t")->str, "hello");
        /* base: map(1) + x + 1 + l + seq(1) + 2 items = 7 nodes */
        assert_int_equal(b->expanded, 7);
        assert_int_equal(b->height, 2);
        /* root 1 + 5 keys + 3*7 + 2 scalars */
        assert_int_equal(d->expanded, 1 + 5 + 21 + 2);
        parsed_done(&p);
}

static void test_merge_keys(void **state) {
        Parsed p;
        parse(&p, "base: &b {x: 1, w: 2}\n"
                  "other: &o {w: 20, z: 30}\n"
                  "m:\n  <<: *b\n  w: 3\n"
                  "l:\n  <<: [*o, *b]\n"
                  "q:\n  \"<<\": 5\n");
        assert_int_equal(p.r, 0);
        const YamlNode *d = p.docs[0];
        const YamlNode *m = yaml_map_get(d, "m");
        assert_int_equal(m->n, 2);
        assert_int_equal(yaml_map_get(m, "x")->i, 1);
        assert_int_equal(yaml_map_get(m, "w")->i, 3); /* own keys win */
        assert_null(yaml_map_get(m, "<<"));
        const YamlNode *l = yaml_map_get(d, "l");
        assert_int_equal(l->n, 3);
        assert_int_equal(yaml_map_get(l, "w")->i, 20); /* first source wins */
        assert_int_equal(yaml_map_get(l, "z")->i, 30);
        assert_int_equal(yaml_map_get(l, "x")->i, 1);
        const YamlNode *q = yaml_map_get(d, "q");
        assert_int_equal(yaml_map_get(q, "<<")->i, 5); /* quoted: an ordinary key */
        parsed_done(&p);

        assert_error("a: &a 5\nb:\n  <<: *a\n", -EINVAL, 3,
                     "merge key (<<) must be a map or a list of maps, not a integer");
}

static void test_alias_errors(void **state) {
        assert_error("a: *nope\n", -EINVAL, 1, "unknown anchor \"nope\"");
        assert_error("a: &x [1, *x]\n", -EINVAL, 1, "refers to a node that contains it");
        assert_error("? [1, 2]\n: x\n", -EINVAL, 1, "a map key must be a scalar, not a list");
}

/* ---- duplicates, tags, syntax ---- */

static void test_duplicate_keys(void **state) {
        assert_error("a: 1\nb: 2\na: 3\n", -EINVAL, 3,
                     "t.yaml:3: column 1: duplicate key \"a\" in map (first at line 1)");
        assert_error("m:\n  1: a\n  \"1\": b\n", -EINVAL, 3, "duplicate key \"1\"");
        assert_error("{\"a\": 1, \"a\": 2}", -EINVAL, 1, "duplicate key \"a\"");

        /* All duplicates of the map are reported. */
        Parsed p;
        parse(&p, "a: 1\nb: 2\na: 3\nb: 4\n");
        assert_int_equal(p.r, -EINVAL);
        assert_int_equal(p.diag.n_errors, 2);
        parsed_done(&p);
}

static void test_tags(void **state) {
        assert_error("a: !!python/object:os.system echo\n", -EINVAL, 1,
                     "unknown tag \"!!python/object:os.system\"");
        assert_error("a: !foo bar\n", -EINVAL, 1, "unknown tag \"!foo\"");
        assert_error("a: !!map bar\n", -EINVAL, 1, "tag \"!!map\" cannot be used on a scalar");
        assert_error("a: !!str {b: 1}\n", -EINVAL, 1, "tag \"!!str\" cannot be used on a map");
        assert_error("a: !!int abc\n", -EINVAL, 1, "cannot read \"abc\" as !!int");
        assert_error("a: !!binary aGVsbG8=\n", -EINVAL, 1, "unknown tag \"!!binary\"");
        assert_error("a: !!python/object:x {b: 1}\n", -EINVAL, 1, "unknown tag");
}

static void test_syntax_errors(void **state) {
        assert_error("a: 1\nb: 2\n  c: 3\n", -EINVAL, 3,
                     "t.yaml:3: column 4: mapping values are not allowed in this context");
        assert_error("a: [1, 2\nb: 3\n", -EINVAL, 2, "column");
        assert_error("a: \"unterminated\n", -EINVAL, 0, "found unexpected end of stream");
        /* invalid UTF-8 */
        assert_error("a: \xff\xfe\xfd\n", -EINVAL, 0, "invalid input");
}

/* ---- JSON ---- */

static void check_json_doc(const YamlNode *d) {
        assert_int_equal(d->type, YAML_NODE_MAP);
        assert_int_equal(yaml_map_get(d, "a")->type, YAML_NODE_INT);
        assert_int_equal(yaml_map_get(d, "a")->i, 1);
        const YamlNode *b = yaml_map_get(d, "b");
        assert_int_equal(b->type, YAML_NODE_SEQ);
        assert_int_equal(b->n, 2);
        assert_int_equal(b->items[1]->i, 2);
        assert_int_equal(yaml_map_get(d, "c")->type, YAML_NODE_STRING);
        assert_string_equal(yaml_map_get(d, "c")->str, "x/y\xc3\xa9");
        assert_int_equal(yaml_map_get(d, "t")->type, YAML_NODE_BOOL);
        assert_int_equal(yaml_map_get(d, "n")->type, YAML_NODE_NULL);
        assert_int_equal(yaml_map_get(d, "f")->type, YAML_NODE_FLOAT);
        assert_true(yaml_map_get(d, "f")->f == -1500.0);
        assert_int_equal(yaml_map_get(d, "s")->type, YAML_NODE_STRING);
}

static void test_json(void **state) {
        const char *inputs[] = {
                "{\"a\":1,\"b\":[1,2],\"c\":\"x\\/y\\u00e9\",\"t\":true,\"n\":null,\"f\":-1.5e3,"
                "\"s\":\"1\"}",
                "\t{\n\t\"a\":\t1,\n\t\"b\":\t[1,\t2],\n\t\"c\": \"x\\/y\\u00e9\",\n\t\"t\": true,"
                "\n\t\"n\": null,\n\t\"f\": -1.5e3,\n\t\"s\": \"1\"\n}\n\t\n",
                "{\n  \"a\": 1, \"b\": [1, 2], \"c\": \"x\\/y\\u00e9\",\r\n \"t\": true, \"n\": "
                "null, \"f\": -1.5e3, \"s\": \"1\"}\n",
        };
        for (size_t i = 0; i < 3; i++) {
                Parsed p;
                parse(&p, inputs[i]);
                if (p.r < 0) {
                        char *s = first_diag(&p);
                        fail_msg("input %zu: %s", i, s);
                }
                assert_int_equal(p.n, 1);
                check_json_doc(p.docs[0]);
                parsed_done(&p);
        }
        /* JSON that is broken either way is an error. */
        assert_error("\t{\"a\": 1,}", -EINVAL, 0, "t.yaml");
}

/* ---- limits ---- */

static void test_limits(void **state) {
        YamlLimits l;
        Parsed p;
        char *s;

        yaml_limits_default(&l);
        assert_int_equal(l.max_input, 10 * 1024 * 1024);
        assert_int_equal(l.max_depth, 64);
        assert_int_equal(l.max_scalar, 1024 * 1024);
        assert_int_equal(l.max_nodes, 1000000);
        assert_int_equal(l.max_documents, 1000);

        l = (YamlLimits){ .max_input = 10 };
        parse_with(&p, "a: 12345678901", 14, &l);
        assert_int_equal(p.r, -E2BIG);
        s = first_diag(&p);
        assert_string_equal(s, "t.yaml: input is 14 bytes, more than the limit of 10 bytes");
        free(s);
        parsed_done(&p);

        l = (YamlLimits){ .max_depth = 3 };
        parse_with(&p, "a: {b: {c: 1}}", 14, &l);
        assert_int_equal(p.r, 0);
        parsed_done(&p);
        parse_with(&p, "a:\n  b: {c: {d: 1}}\n", 20, &l);
        assert_int_equal(p.r, -E2BIG);
        s = first_diag(&p);
        assert_string_equal(s, "t.yaml:2: column 10: nesting is deeper than 3 levels");
        free(s);
        parsed_done(&p);
        /* an alias counts as deep as what it names */
        const char *deep_alias = "a: &x {b: {c: 1}}\nd: {e: *x}\n";
        parse_with(&p, deep_alias, strlen(deep_alias), &l);
        assert_int_equal(p.r, -E2BIG);
        s = first_diag(&p);
        assert_non_null(strstr(s, "alias \"x\" makes nesting deeper than 3 levels"));
        free(s);
        parsed_done(&p);

        l = (YamlLimits){ .max_scalar = 5 };
        parse_with(&p, "a: 12345\nb: \"123456\"\n", 21, &l);
        assert_int_equal(p.r, -E2BIG);
        s = first_diag(&p);
        assert_string_equal(s, "t.yaml:2: column 4: scalar of 6 bytes is longer than the limit "
                               "of 5 bytes");
        free(s);
        parsed_done(&p);

        l = (YamlLimits){ .max_documents = 2 };
        parse_with(&p, "a: 1\n---\nb: 2\n", 14, &l);
        assert_int_equal(p.r, 0);
        assert_int_equal(p.n, 2);
        parsed_done(&p);
        parse_with(&p, "a: 1\n---\nb: 2\n---\nc: 3\n", 23, &l);
        assert_int_equal(p.r, -E2BIG);
        s = first_diag(&p);
        assert_string_equal(s, "t.yaml:4: more than 2 documents");
        free(s);
        parsed_done(&p);

        /* map + 3 keys + 3 values = 7 */
        l = (YamlLimits){ .max_nodes = 7 };
        parse_with(&p, "a: 1\nb: 2\nc: 3\n", 15, &l);
        assert_int_equal(p.r, 0);
        parsed_done(&p);
        parse_with(&p, "a: 1\nb: 2\nc: [3]\n", 17, &l);
        assert_int_equal(p.r, -E2BIG);
        parsed_done(&p);
        /* aliases count expanded: 1 + (1 + 6) + (1 + 1 + 6 + 6) = 22 */
        const char *al = "a: &a [1, 2, 3, 4, 5]\nb: [*a, *a]\n";
        l = (YamlLimits){ .max_nodes = 22 };
        parse_with(&p, al, strlen(al), &l);
        assert_int_equal(p.r, 0);
        parsed_done(&p);
        l = (YamlLimits){ .max_nodes = 21 };
        parse_with(&p, al, strlen(al), &l);
        assert_int_equal(p.r, -E2BIG);
        s = first_diag(&p);
        assert_string_equal(s, "t.yaml:2: column 9: document has more than 21 nodes with "
                               "aliases expanded (alias bomb?)");
        free(s);
        parsed_done(&p);
        /* the count is per document */
        const char *two = "[1, 2, 3]\n---\n[1, 2, 3]\n";
        l = (YamlLimits){ .max_nodes = 4 };
        parse_with(&p, two, strlen(two), &l);
        assert_int_equal(p.r, 0);
        parsed_done(&p);
}

static void test_billion_laughs(void **state) {
        /* One-byte leaves, so the node limit trips before the text limit. */
        const char *lol = "a: &a [l,l,l,l,l,l,l,l,l]\n"
                          "b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\n"
                          "c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n"
                          "d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\n"
                          "e: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n"
                          "f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\n"
                          "g: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n"
                          "h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\n"
                          "i: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
        struct timespec t0, t1;
        Parsed p;

        clock_gettime(CLOCK_MONOTONIC, &t0);
        parse(&p, lol);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        assert_int_equal(p.r, -E2BIG);
        double secs = (t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
        assert_true(secs < 1.0);
        char *s = first_diag(&p);
        assert_non_null(strstr(s, "document has more than 1000000 nodes with aliases expanded"));
        /* refused at the first alias crossing the limit: 10^6 > 1 + 9 * 10^5 ... on line 7 */
        assert_int_equal(p.diag.items[0].line, 7);
        free(s);
        parsed_done(&p);
}

static void test_alias_bytes(void **state) {
        YamlLimits l;
        Parsed p;
        char *s;

        yaml_limits_default(&l);
        assert_int_equal(l.max_expanded_ratio, 10);
        assert_int_equal(l.min_expanded_bytes, 1024 * 1024);
        assert_int_equal(l.max_expanded_bytes, 64 * 1024 * 1024);

        /* scalar text: "a" + 10 + "b" + 10 per alias */
        const char *al = "a: &a xxxxxxxxxx\nb: [*a, *a, *a]\n";
        l = (YamlLimits){ .min_expanded_bytes = 42, .max_expanded_bytes = 42 };
        parse_with(&p, al, strlen(al), &l);
        assert_int_equal(p.r, 0);
        parsed_done(&p);
        l = (YamlLimits){ .min_expanded_bytes = 41, .max_expanded_bytes = 41 };
        parse_with(&p, al, strlen(al), &l);
        assert_int_equal(p.r, -E2BIG);
        s = first_diag(&p);
        assert_string_equal(s, "t.yaml:2: column 13: aliases expand the input to more than 41 "
                               "bytes of text (limit: 10 times the input's 33 bytes, at least "
                               "41, at most 41)");
        free(s);
        parsed_done(&p);
        /* the ratio applies between the floor and the cap */
        l = (YamlLimits){ .max_expanded_ratio = 1, .min_expanded_bytes = 1 };
        parse_with(&p, al, strlen(al), &l);
        assert_int_equal(p.r, -E2BIG);
        assert_non_null(strstr(p.diag.items[0].message, "more than 33 bytes"));
        parsed_done(&p);
        /* the count is per input, not per document */
        const char *two = "a: &a xxxxxxxxxx\nb: *a\n---\na: &a xxxxxxxxxx\nb: *a\n";
        l = (YamlLimits){ .min_expanded_bytes = 43, .max_expanded_bytes = 43 };
        parse_with(&p, two, strlen(two), &l);
        assert_int_equal(p.r, -E2BIG);
        assert_int_equal(p.diag.items[0].line, 5);
        parsed_done(&p);

        /* One scalar just under the scalar limit behind 2000 aliases: few
         * nodes, but gigabytes of text once copied. Refused at the alias that
         * crosses 10 times the input size. */
        size_t big = 1024 * 1024 - 16, n_aliases = 2000;
        size_t cap = big + 64 + n_aliases * 16;
        char *buf = malloc(cap), *w = buf;
        assert_non_null(buf);
        w += sprintf(w, "a: &big ");
        memset(w, 'x', big);
        w += big;
        *w++ = '\n';
        for (size_t i = 0; i < n_aliases; i++)
                w += sprintf(w, "b%zu: *big\n", i);
        size_t len = (size_t)(w - buf);
        parse_with(&p, buf, len, NULL);
        assert_int_equal(p.r, -E2BIG);
        s = first_diag(&p);
        char *want = NULL;
        assert_true(asprintf(&want,
                             "t.yaml:11: column 5: aliases expand the input to more than %zu "
                             "bytes of text (limit: 10 times the input's %zu bytes, at least "
                             "1048576, at most 67108864)",
                             10 * len, len) > 0);
        assert_string_equal(s, want);
        free(want);
        free(s);
        parsed_done(&p);
        free(buf);
}

static void test_deep_nesting(void **state) {
        size_t n = 10000;
        char *buf = malloc(2 * n + 1);
        struct timespec t0, t1;
        Parsed p;

        assert_non_null(buf);
        memset(buf, '[', n);
        buf[n] = 0;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        parse(&p, buf);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        assert_int_equal(p.r, -E2BIG);
        char *s = first_diag(&p);
        assert_string_equal(s, "t.yaml:1: column 65: nesting is deeper than 64 levels");
        free(s);
        parsed_done(&p);
        assert_true((t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9 < 1.0);

        memset(buf + n, ']', n);
        buf[2 * n] = 0;
        parse(&p, buf);
        assert_int_equal(p.r, -E2BIG);
        parsed_done(&p);

        /* JSON fallback enforces depth too */
        buf[0] = '\t';
        parse(&p, buf);
        assert_int_not_equal(p.r, 0);
        parsed_done(&p);

        /* 64 levels are fine */
        memset(buf, '[', 64);
        memset(buf + 64, ']', 64);
        buf[128] = 0;
        parse(&p, buf);
        assert_int_equal(p.r, 0);
        assert_int_equal(p.docs[0]->height, 64);
        parsed_done(&p);
        free(buf);
}

static void test_helpers(void **state) {
        char buf[32];
        assert_string_equal(yaml_format_float(0.1, buf), "0.1");
        assert_string_equal(yaml_format_float(1.5, buf), "1.5");
        assert_string_equal(yaml_format_float(1e30, buf), "1e+30");
        assert_string_equal(yaml_format_float(-INFINITY, buf), "-.inf");
        assert_string_equal(yaml_format_float(NAN, buf), ".nan");
        assert_string_equal(yaml_node_type_to_string(YAML_NODE_MAP), "map");
        assert_null(yaml_map_get(NULL, "a"));
        assert_null(yaml_node_unref(NULL));
        assert_false(yaml_node_is_scalar(NULL));
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_diag_format),
                cmocka_unit_test(test_diag_max_items),
                cmocka_unit_test(test_scalar_typing),
                cmocka_unit_test(test_scalar_text_kept),
                cmocka_unit_test(test_keys_normalized),
                cmocka_unit_test(test_multi_documents),
                cmocka_unit_test(test_alias_shares),
                cmocka_unit_test(test_merge_keys),
                cmocka_unit_test(test_alias_errors),
                cmocka_unit_test(test_duplicate_keys),
                cmocka_unit_test(test_tags),
                cmocka_unit_test(test_syntax_errors),
                cmocka_unit_test(test_json),
                cmocka_unit_test(test_limits),
                cmocka_unit_test(test_billion_laughs),
                cmocka_unit_test(test_alias_bytes),
                cmocka_unit_test(test_deep_nesting),
                cmocka_unit_test(test_helpers),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
