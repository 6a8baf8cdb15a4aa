/* WWW-Authenticate parsing and docker credential documents; see registry-auth.h. */
#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cleanup.h"
#include "json-util.h"
#include "registry-auth.h"
#include "string-util.h"

#define MAX_HEADER 8192
#define MAX_CHALLENGES 16
#define MAX_PARAMS 32
#define MAX_AUTH_DOC (1024U * 1024U)

void registry_challenges_free(RegistryChallenge *c, size_t n) {
        for (size_t i = 0; i < n; i++) {
                free(c[i].scheme);
                free(c[i].realm);
                free(c[i].service);
                free(c[i].scope);
                free(c[i].error);
        }
        free(c);
}

/* RFC 7230 tchar. */
static bool is_tchar(char c) {
        return isalnum((unsigned char)c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static void skip_ows(const char **p, const char *end) {
        while (*p < end && (**p == ' ' || **p == '\t'))
                (*p)++;
}

static char *read_token(const char **p, const char *end) {
        const char *s = *p;
        while (*p < end && is_tchar(**p))
                (*p)++;
        return *p > s ? strndup_safe(s, (size_t)(*p - s)) : NULL;
}

/* quoted-string with quoted-pair; *p at the opening quote. */
static int read_quoted(const char **p, const char *end, char **ret) {
        _cleanup_free_ char *out = malloc((size_t)(end - *p) + 1);
        size_t n = 0;
        if (!out)
                return -ENOMEM;
        (*p)++;
        while (*p < end) {
                char c = *(*p)++;
                if (c == '"') {
                        out[n] = 0;
                        *ret = TAKE_PTR(out);
                        return 0;
                }
                if (c == '\\') {
                        if (*p >= end)
                                break;
                        c = *(*p)++;
                }
                if (c == 0 || c == '\r' || c == '\n')
                        return -EBADMSG;
                out[n++] = c;
        }
        return -EBADMSG; /* unterminated */
}

static int set_param(RegistryChallenge *c, const char *name, char *value) {
        char **slot = strcasecmp(name, "realm") == 0     ? &c->realm
                      : strcasecmp(name, "service") == 0 ? &c->service
                      : strcasecmp(name, "scope") == 0   ? &c->scope
                      : strcasecmp(name, "error") == 0   ? &c->error
                                                         : NULL;
        if (!slot) {
                free(value);
                return 0;
        }
        free(*slot); /* the last one wins, as in docker's client */
        *slot = value;
        return 0;
}

int registry_challenges_parse(const char *value, size_t size, RegistryChallenge **ret,
                              size_t *ret_n, Error *err) {
        RegistryChallenge *cs = NULL;
        size_t n = 0;
        const char *p = value, *end = value + size;
        int r = 0;

        if (size > MAX_HEADER)
                return error_set(err, -E2BIG, "WWW-Authenticate header longer than %d bytes",
                                 MAX_HEADER);
        for (;;) {
                while (p < end && (*p == ' ' || *p == '\t' || *p == ','))
                        p++;
                if (p >= end)
                        break;
                _cleanup_free_ char *scheme = read_token(&p, end);
                if (!scheme) {
                        r = error_set(err, -EBADMSG,
                                      "WWW-Authenticate: expected an auth scheme at offset %zu",
                                      (size_t)(p - value));
                        goto fail;
                }
                if (n >= MAX_CHALLENGES) {
                        r = error_set(err, -E2BIG, "WWW-Authenticate: too many challenges");
                        goto fail;
                }
                RegistryChallenge *nc = reallocarray(cs, n + 1, sizeof(*cs));
                if (!nc) {
                        r = -ENOMEM;
                        goto fail;
                }
                cs = nc;
                RegistryChallenge *c = &cs[n++];
                *c = (RegistryChallenge){ .scheme = TAKE_PTR(scheme) };
                for (char *s = c->scheme; *s; s++)
                        *s = (char)tolower((unsigned char)*s);
                /* auth-params, or a token68, until the next challenge's scheme. */
                unsigned params = 0;
                for (;;) {
                        skip_ows(&p, end);
                        while (p < end && *p == ',') {
                                p++;
                                skip_ows(&p, end);
                        }
                        if (p >= end)
                                break;
                        const char *mark = p;
                        _cleanup_free_ char *name = read_token(&p, end);
                        if (!name) {
                                /* token68 characters outside tchar: '/' and '=' */
                                while (p < end &&
                                       (isalnum((unsigned char)*p) || strchr("-._~+/=", *p)))
                                        p++;
                                if (p == mark) {
                                        r = error_set(err, -EBADMSG,
                                                      "WWW-Authenticate: unexpected character "
                                                      "at offset %zu",
                                                      (size_t)(p - value));
                                        goto fail;
                                }
                                continue;
                        }
                        skip_ows(&p, end);
                        if (p >= end || *p != '=') {
                                /* A bare token: the next challenge's scheme. */
                                p = mark;
                                break;
                        }
                        p++;
                        skip_ows(&p, end);
                        if (p < end && (*p == '=' || *p == ',')) {
                                /* token68 with padding ("abc==") */
                                while (p < end && *p == '=')
                                        p++;
                                continue;
                        }
                        char *v = NULL;
                        if (p < end && *p == '"') {
                                if (read_quoted(&p, end, &v) < 0) {
                                        r = error_set(err, -EBADMSG,
                                                      "WWW-Authenticate: bad quoted string for "
                                                      "\"%s\"",
                                                      name);
                                        goto fail;
                                }
                        } else {
                                v = read_token(&p, end);
                                if (!v) {
                                        if (p >= end)
                                                v = strdup("");
                                        else {
                                                r = error_set(err, -EBADMSG,
                                                              "WWW-Authenticate: parameter "
                                                              "\"%s\" has no value",
                                                              name);
                                                goto fail;
                                        }
                                }
                        }
                        if (!v) {
                                r = -ENOMEM;
                                goto fail;
                        }
                        if (++params > MAX_PARAMS) {
                                free(v);
                                r = error_set(err, -E2BIG, "WWW-Authenticate: too many parameters");
                                goto fail;
                        }
                        (void)set_param(c, name, v);
                }
        }
        *ret = cs;
        *ret_n = n;
        return 0;
fail:
        registry_challenges_free(cs, n);
        return r;
}

const RegistryChallenge *registry_challenge_find(const RegistryChallenge *c, size_t n,
                                                 const char *scheme) {
        for (size_t i = 0; i < n; i++)
                if (streq(c[i].scheme, scheme))
                        return &c[i];
        return NULL;
}

static int b64_value(char c) {
        if (c >= 'A' && c <= 'Z')
                return c - 'A';
        if (c >= 'a' && c <= 'z')
                return c - 'a' + 26;
        if (c >= '0' && c <= '9')
                return c - '0' + 52;
        if (c == '+' || c == '-')
                return 62;
        if (c == '/' || c == '_')
                return 63;
        return -1;
}

int registry_base64_decode(const char *s, size_t len, char **ret, size_t *ret_len) {
        while (len > 0 && (s[len - 1] == '=' || s[len - 1] == '\n'))
                len--;
        _cleanup_free_ char *out = malloc(len / 4 * 3 + 4);
        size_t n = 0;
        unsigned acc = 0, bits = 0;
        if (!out)
                return -ENOMEM;
        for (size_t i = 0; i < len; i++) {
                int v = b64_value(s[i]);
                if (v < 0)
                        return -EBADMSG;
                acc = (acc << 6) | (unsigned)v;
                bits += 6;
                if (bits >= 8) {
                        bits -= 8;
                        out[n++] = (char)((acc >> bits) & 0xff);
                }
        }
        if (bits >= 6) /* one lone character cannot encode a byte */
                return -EBADMSG;
        out[n] = 0;
        *ret = TAKE_PTR(out);
        if (ret_len)
                *ret_len = n;
        return 0;
}

char *registry_auth_key_host(const char *key) {
        const char *s = key, *v;
        if ((v = startswith(s, "https://")) || (v = startswith(s, "http://")))
                s = v;
        size_t n = strcspn(s, "/");
        return strndup_safe(s, n);
}

static bool is_docker_hub(const char *host) {
        return streq(host, "docker.io") || streq(host, "index.docker.io") ||
               streq(host, "registry-1.docker.io");
}

static bool host_matches(const char *key, const char *host) {
        _cleanup_free_ char *k = registry_auth_key_host(key);
        if (!k)
                return false;
        for (char *c = k; *c; c++)
                *c = (char)tolower((unsigned char)*c);
        if (strcasecmp(k, host) == 0)
                return true;
        return is_docker_hub(k) && is_docker_hub(host);
}

static int entry_credentials(json_t *e, const char *key, char **ret_user, char **ret_password,
                             Error *err) {
        if (!json_is_object(e))
                return error_set(err, -EBADMSG, "credentials for \"%s\" are not an object", key);
        const char *auth = json_string_value(json_object_get(e, "auth"));
        const char *user = json_string_value(json_object_get(e, "username"));
        const char *pass = json_string_value(json_object_get(e, "password"));
        _cleanup_free_ char *u = NULL, *p = NULL;
        if (auth && *auth) {
                _cleanup_free_ char *dec = NULL;
                size_t len;
                if (registry_base64_decode(auth, strlen(auth), &dec, &len) < 0 ||
                    strlen(dec) != len)
                        return error_set(err, -EBADMSG,
                                         "credentials for \"%s\": \"auth\" is not valid base64",
                                         key);
                char *colon = strchr(dec, ':');
                if (!colon)
                        return error_set(err, -EBADMSG,
                                         "credentials for \"%s\": \"auth\" does not decode to "
                                         "user:password",
                                         key);
                u = strndup_safe(dec, (size_t)(colon - dec));
                p = strdup(colon + 1);
        } else if (user && pass) {
                u = strdup(user);
                p = strdup(pass);
        } else
                return error_set(err, -EBADMSG,
                                 "credentials for \"%s\" have neither \"auth\" nor "
                                 "\"username\" and \"password\"",
                                 key);
        if (!u || !p)
                return -ENOMEM;
        *ret_user = TAKE_PTR(u);
        *ret_password = TAKE_PTR(p);
        return 1;
}

int registry_auth_lookup(const char *json, size_t size, const char *host, char **ret_user,
                         char **ret_password, Error *err) {
        json_error_t je;
        if (size > MAX_AUTH_DOC)
                return error_set(err, -E2BIG, "credential document is larger than %u bytes",
                                 MAX_AUTH_DOC);
        _cleanup_json_ json_t *j = json_loadb(json, size, 0, &je);
        if (!j)
                return error_set(err, -EBADMSG, "credential document is not JSON: line %d: %s",
                                 je.line, je.text);
        if (!json_is_object(j))
                return error_set(err, -EBADMSG, "credential document is not a JSON object");
        json_t *auths = json_object_get(j, "auths");
        if (!auths)
                return 0;
        if (!json_is_object(auths))
                return error_set(err, -EBADMSG, "credential document: \"auths\" is not an object");
        const char *key;
        json_t *e;
        /* An exact key first, then the equivalent spellings. */
        json_object_foreach(auths, key, e) {
                if (streq(key, host))
                        return entry_credentials(e, key, ret_user, ret_password, err);
        }
        json_object_foreach(auths, key, e) {
                if (host_matches(key, host))
                        return entry_credentials(e, key, ret_user, ret_password, err);
        }
        return 0;
}

int registry_secret_to_config(const char *type, const char *data, size_t size, char **ret_json,
                              Error *err) {
        json_error_t je;
        bool legacy;
        if (streq(type, "kubernetes.io/dockerconfigjson"))
                legacy = false;
        else if (streq(type, "kubernetes.io/dockercfg"))
                legacy = true;
        else
                return error_set(err, -EMEDIUMTYPE,
                                 "Secret type \"%s\" holds no registry credentials (expected "
                                 "kubernetes.io/dockerconfigjson or kubernetes.io/dockercfg)",
                                 type);
        const char *field = legacy ? ".dockercfg" : ".dockerconfigjson";
        if (size > MAX_AUTH_DOC)
                return error_set(err, -E2BIG, "%s is larger than %u bytes", field, MAX_AUTH_DOC);
        _cleanup_json_ json_t *j = json_loadb(data, size, 0, &je);
        if (!j)
                return error_set(err, -EBADMSG, "%s is not JSON: line %d: %s", field, je.line,
                                 je.text);
        if (!json_is_object(j))
                return error_set(err, -EBADMSG, "%s is not a JSON object", field);
        json_t *auths = legacy ? j : json_object_get(j, "auths");
        if (!json_is_object(auths))
                return error_set(err, -EBADMSG, "%s has no \"auths\" object", field);
        const char *key;
        json_t *e;
        json_object_foreach(auths, key, e) {
                if (!json_is_object(e))
                        return error_set(err, -EBADMSG, "%s: entry \"%s\" is not an object", field,
                                         key);
        }
        _cleanup_json_ json_t *out = json_pack("{s:O}", "auths", auths);
        char *s = out ? json_dumps(out, JSON_COMPACT) : NULL;
        if (!s)
                return -ENOMEM;
        *ret_json = s;
        return 0;
}

/* "2026-11-26T15:00:00Z", "…T15:00:00.123456789+01:00": seconds since the
 * epoch, or -1. */
static long long rfc3339_seconds(const char *s) {
        struct tm tm = {};
        int n = 0;
        if (!s ||
            sscanf(s, "%4d-%2d-%2dT%2d:%2d:%2d%n", &tm.tm_year, &tm.tm_mon, &tm.tm_mday,
                   &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6 ||
            n != 19)
                return -1;
        const char *p = s + n;
        if (*p == '.') {
                do
                        p++;
                while (isdigit((unsigned char)*p));
        }
        long off = 0;
        if (*p == 'Z' || *p == 'z')
                p++;
        else if (*p == '+' || *p == '-') {
                int h, m, k = 0;
                if (sscanf(p + 1, "%2d:%2d%n", &h, &m, &k) != 2 || k != 5 || h > 23 || m > 59)
                        return -1;
                off = (*p == '-' ? -1 : 1) * (h * 3600L + m * 60L);
                p += 6;
        } else
                return -1;
        if (*p || tm.tm_mon < 1 || tm.tm_mon > 12 || tm.tm_mday < 1 || tm.tm_mday > 31 ||
            tm.tm_hour > 23 || tm.tm_min > 59 || tm.tm_sec > 60 || tm.tm_year < 1970)
                return -1;
        tm.tm_year -= 1900;
        tm.tm_mon -= 1;
        time_t t = timegm(&tm);
        if (t == (time_t)-1)
                return -1;
        return (long long)t - off;
}

uint64_t registry_token_lifetime(long long expires_in, const char *issued_at,
                                 uint64_t sent_realtime) {
        const uint64_t usec = 1000000ULL;
        if (expires_in < 60 || expires_in > 366LL * 24 * 3600)
                expires_in = expires_in < 60 ? 60 : 366LL * 24 * 3600;
        uint64_t start = sent_realtime;
        long long issued = rfc3339_seconds(issued_at);
        if (issued >= 0 && (uint64_t)issued * usec < sent_realtime)
                start = (uint64_t)issued * usec;
        uint64_t end = start + (uint64_t)expires_in * usec - usec;
        /* Dead on arrival is the server's clock behind ours, not a token
         * to fetch again before every request. */
        if (end <= sent_realtime)
                end = sent_realtime + (uint64_t)expires_in * usec - usec;
        return end - sent_realtime;
}
