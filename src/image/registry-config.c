/* registries.conf parsing and matching; see registry-config.h. The TOML
 * subset: comments, [table] and [[array-of-tables]] headers, key = value
 * with basic/literal strings, booleans, integers and (multi-line) arrays of
 * strings. Inline tables and multi-line strings are refused with file:line. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "registry-config.h"
#include "string-util.h"
#include "strv.h"

#define MAX_CONF (1024U * 1024U)
#define MAX_ENTRIES 1024
#define MAX_MIRRORS 64

typedef enum Section {
        SECTION_TOP,
        SECTION_REGISTRY,
        SECTION_MIRROR,
        SECTION_V1_INSECURE,
        SECTION_V1_BLOCK,
        SECTION_OTHER,
} Section;

typedef struct Value {
        enum {
                V_STRING,
                V_BOOL,
                V_INT,
                V_ARRAY
        } type;
        char *s;
        bool b;
        char **a;
} Value;

static void value_done(Value *v) {
        free(v->s);
        strv_free(v->a);
        *v = (Value){};
}

typedef struct Parser {
        const char *p, *end;
        const char *file;
        unsigned line;
        Error *err;
} Parser;

_printf_(2, 3) static int perr(Parser *ps, const char *fmt, ...) {
        char buf[512];
        va_list ap;
        va_start(ap, fmt);
        (void)vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        return error_set(ps->err, -EBADMSG, "%s:%u: %s", ps->file, ps->line, buf);
}

static void skip_ws(Parser *ps) {
        while (ps->p < ps->end && (*ps->p == ' ' || *ps->p == '\t'))
                ps->p++;
}

/* Whitespace, newlines and comments (inside arrays). */
static void skip_ws_nl(Parser *ps) {
        for (;;) {
                skip_ws(ps);
                if (ps->p < ps->end && *ps->p == '#')
                        while (ps->p < ps->end && *ps->p != '\n')
                                ps->p++;
                if (ps->p < ps->end && (*ps->p == '\n' || *ps->p == '\r')) {
                        if (*ps->p == '\n')
                                ps->line++;
                        ps->p++;
                        continue;
                }
                return;
        }
}

/* The rest of the line must be blank or a comment. */
static int expect_eol(Parser *ps) {
        skip_ws(ps);
        if (ps->p < ps->end && *ps->p == '#')
                while (ps->p < ps->end && *ps->p != '\n')
                        ps->p++;
        if (ps->p < ps->end && *ps->p == '\r')
                ps->p++;
        if (ps->p < ps->end && *ps->p != '\n')
                return perr(ps, "unexpected \"%.1s\" after the value", ps->p);
        return 0;
}

static int append_utf8(char *out, size_t *n, unsigned cp) {
        if (cp == 0 || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
                return -EBADMSG;
        if (cp < 0x80)
                out[(*n)++] = (char)cp;
        else if (cp < 0x800) {
                out[(*n)++] = (char)(0xC0 | (cp >> 6));
                out[(*n)++] = (char)(0x80 | (cp & 0x3F));
        } else if (cp < 0x10000) {
                out[(*n)++] = (char)(0xE0 | (cp >> 12));
                out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                out[(*n)++] = (char)(0x80 | (cp & 0x3F));
        } else {
                out[(*n)++] = (char)(0xF0 | (cp >> 18));
                out[(*n)++] = (char)(0x80 | ((cp >> 12) & 0x3F));
                out[(*n)++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                out[(*n)++] = (char)(0x80 | (cp & 0x3F));
        }
        return 0;
}

static int parse_string(Parser *ps, char **ret) {
        char q = *ps->p++;
        if (ps->end - ps->p >= 2 && ps->p[0] == q && ps->p[1] == q)
                return perr(ps, "multi-line strings are not supported");
        /* 4 output bytes per input byte at most (\uXXXX is 6 -> 3, \UXXXXXXXX 10 -> 4) */
        _cleanup_free_ char *out = malloc((size_t)(ps->end - ps->p) * 4 + 1);
        size_t n = 0;
        if (!out)
                return -ENOMEM;
        while (ps->p < ps->end && *ps->p != q) {
                char c = *ps->p++;
                if (c == '\n' || c == 0)
                        return perr(ps, "unterminated string");
                if (c != '\\' || q == '\'') {
                        out[n++] = c;
                        continue;
                }
                if (ps->p >= ps->end)
                        break;
                c = *ps->p++;
                switch (c) {
                case 'n':
                        out[n++] = '\n';
                        break;
                case 't':
                        out[n++] = '\t';
                        break;
                case 'r':
                        out[n++] = '\r';
                        break;
                case 'b':
                        out[n++] = '\b';
                        break;
                case 'f':
                        out[n++] = '\f';
                        break;
                case '"':
                case '\\':
                        out[n++] = c;
                        break;
                case 'u':
                case 'U': {
                        int len = c == 'u' ? 4 : 8;
                        unsigned cp = 0;
                        if (ps->end - ps->p < len)
                                return perr(ps, "bad \\%c escape", c);
                        for (int i = 0; i < len; i++) {
                                char h = *ps->p++;
                                if (!isxdigit((unsigned char)h))
                                        return perr(ps, "bad unicode escape");
                                cp = cp * 16 +
                                     (unsigned)(isdigit((unsigned char)h)
                                                        ? h - '0'
                                                        : tolower((unsigned char)h) - 'a' + 10);
                                if (cp > 0x10FFFF)
                                        return perr(ps, "bad unicode escape");
                        }
                        if (append_utf8(out, &n, cp) < 0)
                                return perr(ps, "bad unicode escape");
                        break;
                }
                default:
                        return perr(ps, "unknown escape \"\\%.1s\"", ps->p - 1);
                }
        }
        if (ps->p >= ps->end)
                return perr(ps, "unterminated string");
        ps->p++;
        out[n] = 0;
        *ret = TAKE_PTR(out);
        return 0;
}

static int parse_value(Parser *ps, Value *v) {
        int r;
        skip_ws(ps);
        if (ps->p >= ps->end)
                return perr(ps, "missing value");
        char c = *ps->p;
        if (c == '"' || c == '\'') {
                v->type = V_STRING;
                return parse_string(ps, &v->s);
        }
        if (c == '[') {
                v->type = V_ARRAY;
                v->a = calloc(1, sizeof(char *));
                if (!v->a)
                        return -ENOMEM;
                ps->p++;
                for (;;) {
                        skip_ws_nl(ps);
                        if (ps->p >= ps->end)
                                return perr(ps, "unterminated array");
                        if (*ps->p == ']') {
                                ps->p++;
                                return 0;
                        }
                        if (*ps->p != '"' && *ps->p != '\'')
                                return perr(ps, "only arrays of strings are supported");
                        char *s = NULL;
                        if ((r = parse_string(ps, &s)) < 0)
                                return r;
                        if (strv_length(v->a) >= 1024) {
                                free(s);
                                return perr(ps, "array too long");
                        }
                        if ((r = strv_consume(&v->a, s)) < 0)
                                return r;
                        skip_ws_nl(ps);
                        if (ps->p < ps->end && *ps->p == ',')
                                ps->p++;
                        else if (ps->p < ps->end && *ps->p != ']')
                                return perr(ps, "expected \",\" or \"]\" in array");
                }
        }
        if (c == '{')
                return perr(ps, "inline tables are not supported");
        const char *s = ps->p;
        while (ps->p < ps->end && (isalnum((unsigned char)*ps->p) || strchr("+-_.:", *ps->p)))
                ps->p++;
        size_t len = (size_t)(ps->p - s);
        if (len == 4 && strneq(s, "true", 4)) {
                v->type = V_BOOL;
                v->b = true;
                return 0;
        }
        if (len == 5 && strneq(s, "false", 5)) {
                v->type = V_BOOL;
                v->b = false;
                return 0;
        }
        if (len > 0 && (isdigit((unsigned char)s[0]) || s[0] == '+' || s[0] == '-')) {
                v->type = V_INT; /* numbers and dates: no key nanolet reads has them */
                return 0;
        }
        return perr(ps, "unsupported value (expected a string, boolean or array)");
}

/* A bare or quoted key, possibly dotted; returned joined with '.'. */
static int parse_key(Parser *ps, char stop, char **ret) {
        _cleanup_free_ char *key = NULL;
        size_t len = 0, cap = 0;
        int r;
        for (;;) {
                skip_ws(ps);
                if (ps->p >= ps->end)
                        return perr(ps, "unexpected end of file in a key");
                _cleanup_free_ char *part = NULL;
                if (*ps->p == '"' || *ps->p == '\'') {
                        if ((r = parse_string(ps, &part)) < 0)
                                return r;
                } else {
                        const char *s = ps->p;
                        while (ps->p < ps->end &&
                               (isalnum((unsigned char)*ps->p) || *ps->p == '-' || *ps->p == '_'))
                                ps->p++;
                        if (ps->p == s)
                                return perr(ps, "expected a key, found \"%.1s\"", ps->p);
                        part = strndup_safe(s, (size_t)(ps->p - s));
                        if (!part)
                                return -ENOMEM;
                }
                if (len > 0 && (r = strbuf_append(&key, &len, &cap, ".", 1)) < 0)
                        return r;
                if ((r = strbuf_append(&key, &len, &cap, part, strlen(part))) < 0)
                        return r;
                skip_ws(ps);
                if (ps->p < ps->end && *ps->p == '.') {
                        ps->p++;
                        continue;
                }
                if (ps->p >= ps->end || *ps->p != stop)
                        return perr(ps, "expected \"%.1s\" after the key", &stop);
                ps->p++;
                *ret = TAKE_PTR(key);
                return 0;
        }
}

void registry_config_done(RegistryConfig *c) {
        for (size_t i = 0; i < c->n_entries; i++) {
                RegistryEntry *e = &c->entries[i];
                free(e->prefix);
                free(e->location);
                for (size_t m = 0; m < e->n_mirrors; m++)
                        free(e->mirrors[m].location);
                free(e->mirrors);
        }
        free(c->entries);
        strv_free(c->notes);
        *c = (RegistryConfig){};
}

static RegistryEntry *entry_new(RegistryConfig *c, unsigned line) {
        if (c->n_entries >= MAX_ENTRIES)
                return NULL;
        RegistryEntry *n = reallocarray(c->entries, c->n_entries + 1, sizeof(RegistryEntry));
        if (!n)
                return NULL;
        c->entries = n;
        n[c->n_entries] = (RegistryEntry){ .line = line };
        return &n[c->n_entries++];
}

static bool location_valid(const char *s) {
        if (isempty(s) || strstr(s, "://") || strlen(s) > 1024)
                return false;
        for (const char *p = s; *p; p++)
                if (isspace((unsigned char)*p) || (unsigned char)*p < 0x20)
                        return false;
        return true;
}

static int want_string(Parser *ps, const Value *v, const char *key) {
        if (v->type != V_STRING)
                return perr(ps, "\"%s\" must be a string", key);
        return 0;
}
static int want_bool(Parser *ps, const Value *v, const char *key) {
        if (v->type != V_BOOL)
                return perr(ps, "\"%s\" must be true or false", key);
        return 0;
}

static int v1_list(Parser *ps, RegistryConfig *c, const Value *v, bool block) {
        if (v->type != V_ARRAY)
                return perr(ps, "\"registries\" must be an array of strings");
        STRV_FOREACH(h, v->a) {
                if (!location_valid(*h))
                        return perr(ps, "invalid registry \"%s\"", *h);
                RegistryEntry *e = entry_new(c, ps->line);
                if (!e)
                        return perr(ps, "too many registries");
                e->prefix = strdup(*h);
                if (!e->prefix)
                        return -ENOMEM;
                if (block)
                        e->blocked = true;
                else
                        e->insecure = true;
        }
        return 0;
}

static int assign(Parser *ps, RegistryConfig *c, Section sec, const char *key, Value *v) {
        RegistryEntry *e = c->n_entries > 0 ? &c->entries[c->n_entries - 1] : NULL;
        int r;
        switch (sec) {
        case SECTION_TOP:
                if (streq(key, "unqualified-search-registries")) {
                        if (v->type != V_ARRAY)
                                return perr(ps, "\"%s\" must be an array of strings", key);
                        _cleanup_free_ char *note = strprintf(
                                "%s:%u: unqualified-search-registries ignored: short names "
                                "are normalised to docker.io, as Kubernetes does",
                                ps->file, ps->line);
                        if (!note)
                                return -ENOMEM;
                        return strv_consume(&c->notes, TAKE_PTR(note));
                }
                return 0; /* short-name-mode, credential-helpers, ...: not ours */
        case SECTION_REGISTRY:
                if (streq(key, "prefix") || streq(key, "location")) {
                        if ((r = want_string(ps, v, key)) < 0)
                                return r;
                        if (!location_valid(v->s) && !(streq(key, "prefix") && v->s[0] == '*'))
                                return perr(ps,
                                            "invalid registry \"%s\" (host[:port][/path], no "
                                            "scheme)",
                                            v->s);
                        char **slot = streq(key, "prefix") ? &e->prefix : &e->location;
                        free(*slot);
                        *slot = TAKE_PTR(v->s);
                } else if (streq(key, "insecure") || streq(key, "blocked") ||
                           streq(key, "mirror-by-digest-only")) {
                        if ((r = want_bool(ps, v, key)) < 0)
                                return r;
                        if (streq(key, "insecure"))
                                e->insecure = v->b;
                        else if (streq(key, "blocked"))
                                e->blocked = v->b;
                        else
                                e->mirror_by_digest_only = v->b;
                }
                return 0;
        case SECTION_MIRROR: {
                RegistryMirror *m = &e->mirrors[e->n_mirrors - 1];
                if (streq(key, "location")) {
                        if ((r = want_string(ps, v, key)) < 0)
                                return r;
                        if (!location_valid(v->s))
                                return perr(ps, "invalid mirror location \"%s\"", v->s);
                        free(m->location);
                        m->location = TAKE_PTR(v->s);
                } else if (streq(key, "insecure")) {
                        if ((r = want_bool(ps, v, key)) < 0)
                                return r;
                        m->insecure = v->b;
                } else if (streq(key, "pull-from-mirror")) {
                        if ((r = want_string(ps, v, key)) < 0)
                                return r;
                        if (streq(v->s, "all"))
                                m->pull_from = REGISTRY_PULL_FROM_ALL;
                        else if (streq(v->s, "digest-only"))
                                m->pull_from = REGISTRY_PULL_FROM_DIGEST_ONLY;
                        else if (streq(v->s, "tag-only"))
                                m->pull_from = REGISTRY_PULL_FROM_TAG_ONLY;
                        else
                                return perr(ps,
                                            "pull-from-mirror must be all, digest-only or "
                                            "tag-only, not \"%s\"",
                                            v->s);
                }
                return 0;
        }
        case SECTION_V1_INSECURE:
        case SECTION_V1_BLOCK:
                if (streq(key, "registries"))
                        return v1_list(ps, c, v, sec == SECTION_V1_BLOCK);
                return 0;
        case SECTION_OTHER:
                return 0;
        }
        return 0;
}

/* Checks the [[registry]] that just ended. */
static int entry_check(const char *file, RegistryEntry *e, Error *err) {
        if (!e->prefix && !e->location)
                return error_set(err, -EBADMSG, "%s:%u: [[registry]] needs a location or a prefix",
                                 file, e->line);
        if (!e->prefix) {
                e->prefix = strdup(e->location);
                if (!e->prefix)
                        return -ENOMEM;
        }
        if (e->prefix[0] == '*' && (!startswith(e->prefix, "*.") || strchr(e->prefix, '/')))
                return error_set(err, -EBADMSG,
                                 "%s:%u: wildcard prefix \"%s\" must look like *.example.com", file,
                                 e->line, e->prefix);
        if (e->prefix[0] == '*' && e->location)
                return error_set(err, -EBADMSG, "%s:%u: a wildcard prefix cannot have a location",
                                 file, e->line);
        for (size_t m = 0; m < e->n_mirrors; m++)
                if (!e->mirrors[m].location)
                        return error_set(err, -EBADMSG,
                                         "%s:%u: [[registry.mirror]] needs a location", file,
                                         e->line);
        return 0;
}

int registry_config_parse(const char *data, size_t size, const char *filename, RegistryConfig *ret,
                          Error *err) {
        _cleanup_(registry_config_done) RegistryConfig c = {};
        Parser ps = { .p = data,
                      .end = data + size,
                      .file = filename ? filename : "registries.conf",
                      .line = 1,
                      .err = err };
        Section sec = SECTION_TOP;
        size_t v2_start = 0; /* entries before the v2 ones come from v1 tables */
        int r;

        if (size > MAX_CONF)
                return error_set(err, -E2BIG, "%s: larger than %u bytes", ps.file, MAX_CONF);
        if (memchr(data, 0, size))
                return error_set(err, -EBADMSG, "%s: contains a NUL byte", ps.file);
        (void)v2_start;
        for (;;) {
                skip_ws_nl(&ps);
                if (ps.p >= ps.end)
                        break;
                if (*ps.p == '[') {
                        bool array = ps.end - ps.p >= 2 && ps.p[1] == '[';
                        _cleanup_free_ char *name = NULL;
                        ps.p += array ? 2 : 1;
                        if ((r = parse_key(&ps, ']', &name)) < 0)
                                return r;
                        if (array) {
                                if (ps.p >= ps.end || *ps.p != ']')
                                        return perr(&ps, "expected \"]]\" after [[%s", name);
                                ps.p++;
                        }
                        if ((r = expect_eol(&ps)) < 0)
                                return r;
                        if (sec == SECTION_REGISTRY || sec == SECTION_MIRROR) {
                                /* a mirror table continues its registry */
                        }
                        if (array && streq(name, "registry")) {
                                if (c.n_entries > 0 &&
                                    (r = entry_check(ps.file, &c.entries[c.n_entries - 1], err)) <
                                            0)
                                        return r;
                                if (!entry_new(&c, ps.line))
                                        return perr(&ps, "too many [[registry]] tables");
                                sec = SECTION_REGISTRY;
                        } else if (array && streq(name, "registry.mirror")) {
                                if (c.n_entries == 0 ||
                                    (sec != SECTION_REGISTRY && sec != SECTION_MIRROR))
                                        return perr(&ps, "[[registry.mirror]] outside a "
                                                         "[[registry]]");
                                RegistryEntry *e = &c.entries[c.n_entries - 1];
                                if (e->n_mirrors >= MAX_MIRRORS)
                                        return perr(&ps, "too many mirrors");
                                RegistryMirror *m = reallocarray(e->mirrors, e->n_mirrors + 1,
                                                                 sizeof(RegistryMirror));
                                if (!m)
                                        return -ENOMEM;
                                e->mirrors = m;
                                m[e->n_mirrors++] = (RegistryMirror){};
                                sec = SECTION_MIRROR;
                        } else if (!array && streq(name, "registries.insecure"))
                                sec = SECTION_V1_INSECURE;
                        else if (!array && streq(name, "registries.block"))
                                sec = SECTION_V1_BLOCK;
                        else if (!array && streq(name, "registries.search"))
                                sec = SECTION_OTHER;
                        else if (streq(name, "registry") || streq(name, "registry.mirror"))
                                return perr(&ps, "\"%s\" must be an array of tables ([[...]])",
                                            name);
                        else
                                sec = SECTION_OTHER;
                        continue;
                }
                _cleanup_free_ char *key = NULL;
                Value v = {};
                if ((r = parse_key(&ps, '=', &key)) < 0)
                        return r;
                r = parse_value(&ps, &v);
                if (r >= 0)
                        r = expect_eol(&ps);
                if (r >= 0)
                        r = assign(&ps, &c, sec, key, &v);
                value_done(&v);
                if (r < 0)
                        return r;
        }
        if (c.n_entries > 0 && (r = entry_check(ps.file, &c.entries[c.n_entries - 1], err)) < 0)
                return r;
        /* v1 entries have prefixes too: check them all (cheap, idempotent). */
        for (size_t i = 0; i < c.n_entries; i++)
                if ((r = entry_check(ps.file, &c.entries[i], err)) < 0)
                        return r;
        *ret = c;
        c = (RegistryConfig){};
        return 0;
}

int registry_config_add_insecure(RegistryConfig *c, const char *host) {
        for (size_t i = 0; i < c->n_entries; i++)
                if (streq(c->entries[i].prefix, host)) {
                        c->entries[i].insecure = true;
                        return 0;
                }
        if (!location_valid(host))
                return -EINVAL;
        RegistryEntry *e = entry_new(c, 0);
        if (!e)
                return -ENOMEM;
        e->prefix = strdup(host);
        e->insecure = true;
        return e->prefix ? 0 : -ENOMEM;
}

/* How many characters of repository the prefix matches, 0 if it does not. */
static size_t prefix_match(const char *prefix, const char *repository) {
        if (startswith(prefix, "*.")) {
                size_t hl = strcspn(repository, "/");
                size_t sl = strlen(prefix + 1); /* ".example.com" */
                if (hl > sl && strneq(repository + hl - sl, prefix + 1, sl))
                        return sl; /* shorter than any exact host match of that host */
                return 0;
        }
        const char *rest = startswith(repository, prefix);
        if (!rest || (*rest && *rest != '/' && *rest != ':' && *rest != '@'))
                return 0;
        return strlen(prefix) + 1; /* exact prefixes beat wildcards of the same length */
}

const RegistryEntry *registry_config_match(const RegistryConfig *c, const char *repository) {
        const RegistryEntry *best = NULL;
        size_t best_len = 0;
        for (size_t i = 0; i < c->n_entries; i++) {
                size_t l = prefix_match(c->entries[i].prefix, repository);
                if (l > best_len) {
                        best = &c->entries[i];
                        best_len = l;
                }
        }
        return best;
}

void registry_endpoints_free(RegistryEndpoint *e, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(e[i].host);
                free(e[i].path);
        }
        free(e);
}

static int endpoint_add(RegistryEndpoint **es, size_t *n, const char *location, const char *prefix,
                        const char *repository, bool insecure, bool mirror) {
        _cleanup_free_ char *full = NULL;
        if (prefix && !startswith(prefix, "*.")) {
                const char *rest = startswith(repository, prefix);
                full = strprintf("%s%s", location, rest ? rest : "");
        } else
                full = strdup(location ? location : repository);
        if (!full)
                return -ENOMEM;
        const char *slash = strchr(full, '/');
        if (!slash || !slash[1])
                return -EINVAL;
        RegistryEndpoint *ne = reallocarray(*es, *n + 1, sizeof(RegistryEndpoint));
        if (!ne)
                return -ENOMEM;
        *es = ne;
        ne[*n] = (RegistryEndpoint){ .host = strndup_safe(full, (size_t)(slash - full)),
                                     .path = strdup(slash + 1),
                                     .insecure = insecure,
                                     .mirror = mirror };
        (*n)++;
        return ne[*n - 1].host && ne[*n - 1].path ? 0 : -ENOMEM;
}

int registry_config_endpoints(const RegistryConfig *c, const char *repository, bool by_digest,
                              RegistryEndpoint **ret, size_t *ret_n, Error *err) {
        RegistryEndpoint *es = NULL;
        size_t n = 0;
        int r = 0;
        const RegistryEntry *e = c ? registry_config_match(c, repository) : NULL;

        if (e && e->blocked)
                return error_set(err, -EACCES,
                                 "registry \"%s\" is blocked by the registries configuration "
                                 "(prefix \"%s\")",
                                 repository, e->prefix);
        if (e) {
                for (size_t i = 0; r >= 0 && i < e->n_mirrors; i++) {
                        const RegistryMirror *m = &e->mirrors[i];
                        if (e->mirror_by_digest_only && !by_digest)
                                continue;
                        if ((m->pull_from == REGISTRY_PULL_FROM_DIGEST_ONLY && !by_digest) ||
                            (m->pull_from == REGISTRY_PULL_FROM_TAG_ONLY && by_digest))
                                continue;
                        r = endpoint_add(&es, &n, m->location, e->prefix, repository, m->insecure,
                                         true);
                }
                if (r >= 0)
                        r = endpoint_add(&es, &n, e->location ? e->location : NULL,
                                         e->location ? e->prefix : NULL, repository, e->insecure,
                                         false);
        } else
                r = endpoint_add(&es, &n, NULL, NULL, repository, false, false);
        if (r < 0) {
                registry_endpoints_free(es, n);
                if (r == -EINVAL)
                        return error_set(err, r, "cannot derive a registry location for \"%s\"",
                                         repository);
                return r;
        }
        *ret = es;
        *ret_n = n;
        return 0;
}
