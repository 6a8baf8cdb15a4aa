/* Reference parsing and normalisation (docker distribution grammar, with
 * Kubernetes' defaulting: docker.io, library/, :latest). */
#include "image-ref.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "string-util.h"

#define NAME_MAX_LEN 255
#define TAG_MAX_LEN 128

static bool is_lower_alnum(char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

static bool is_hex_lower(char c) {
        return (c >= 'a' && c <= 'f') || (c >= '0' && c <= '9');
}

bool image_hex_is_valid(const char *hex) {
        if (!hex || strlen(hex) != 64)
                return false;
        for (const char *p = hex; *p; p++)
                if (!is_hex_lower(*p))
                        return false;
        return true;
}

bool image_digest_is_valid(const char *digest) {
        const char *hex = digest ? startswith(digest, "sha256:") : NULL;
        return hex && image_hex_is_valid(hex);
}

/* path-component := [a-z0-9]+ ( ( [._] | __ | -+ ) [a-z0-9]+ )* */
static bool path_component_valid(const char *s, size_t n) {
        size_t i = 0;
        if (n == 0 || !is_lower_alnum(s[0]))
                return false;
        while (i < n) {
                while (i < n && is_lower_alnum(s[i]))
                        i++;
                if (i == n)
                        return true;
                size_t sep = i;
                if (s[i] == '.')
                        i++;
                else if (s[i] == '_')
                        i += (i + 1 < n && s[i + 1] == '_') ? 2 : 1;
                else if (s[i] == '-')
                        while (i < n && s[i] == '-')
                                i++;
                else
                        return false;
                if (i == n || !is_lower_alnum(s[i]) || i == sep)
                        return false;
        }
        return true;
}

/* domain := host-component ('.' host-component)* [':' port] */
static bool domain_valid(const char *s) {
        const char *colon = strchr(s, ':');
        size_t hostlen = colon ? (size_t)(colon - s) : strlen(s);
        if (hostlen == 0)
                return false;
        size_t start = 0;
        for (size_t i = 0; i <= hostlen; i++) {
                if (i < hostlen && s[i] != '.')
                        continue;
                size_t len = i - start;
                if (len == 0 || !isalnum((unsigned char)s[start]) ||
                    !isalnum((unsigned char)s[i - 1]))
                        return false;
                for (size_t j = start; j < i; j++)
                        if (!isalnum((unsigned char)s[j]) && s[j] != '-')
                                return false;
                start = i + 1;
        }
        if (colon) {
                const char *port = colon + 1;
                if (!*port || strlen(port) > 5)
                        return false;
                for (const char *p = port; *p; p++)
                        if (!isdigit((unsigned char)*p))
                                return false;
        }
        return true;
}

static bool tag_valid(const char *t) {
        size_t n = strlen(t);
        if (n == 0 || n > TAG_MAX_LEN)
                return false;
        if (!isalnum((unsigned char)t[0]) && t[0] != '_')
                return false;
        for (size_t i = 1; i < n; i++)
                if (!isalnum((unsigned char)t[i]) && t[i] != '_' && t[i] != '.' && t[i] != '-')
                        return false;
        return true;
}

void image_ref_done(ImageRef *ref) {
        if (!ref)
                return;
        free(ref->domain);
        free(ref->path);
        free(ref->tag);
        free(ref->digest);
        *ref = (ImageRef){};
}

int image_ref_parse(const char *s, ImageRef *ret, Error *err) {
        _cleanup_free_ char *name = NULL, *tag = NULL, *digest = NULL, *domain = NULL, *path = NULL;

        if (isempty(s))
                return error_set(err, -EINVAL, "invalid reference: empty");
        if (strlen(s) > 4096)
                return error_set(err, -EINVAL, "invalid reference: too long");
        for (const char *p = s; *p; p++)
                if ((unsigned char)*p <= ' ' || (unsigned char)*p >= 0x7f)
                        return error_set(err, -EINVAL,
                                         "invalid reference \"%s\": contains whitespace or "
                                         "non-ASCII characters",
                                         s);

        const char *at = strchr(s, '@');
        name = at ? strndup_safe(s, (size_t)(at - s)) : strdup(s);
        if (!name)
                return -ENOMEM;
        if (at) {
                const char *d = at + 1;
                if (!startswith(d, "sha256:"))
                        return error_set(err, -EINVAL,
                                         "invalid reference \"%s\": unsupported digest "
                                         "algorithm (only sha256)",
                                         s);
                if (!image_digest_is_valid(d))
                        return error_set(err, -EINVAL,
                                         "invalid reference \"%s\": digest must be sha256: "
                                         "followed by 64 lowercase hex digits",
                                         s);
                digest = strdup(d);
                if (!digest)
                        return -ENOMEM;
        }

        char *colon = strrchr(name, ':'), *slash = strrchr(name, '/');
        if (colon && (!slash || colon > slash)) {
                *colon = 0;
                if (!tag_valid(colon + 1))
                        return error_set(err, -EINVAL,
                                         "invalid reference \"%s\": invalid tag \"%s\"", s,
                                         colon + 1);
                tag = strdup(colon + 1);
                if (!tag)
                        return -ENOMEM;
        }
        if (isempty(name))
                return error_set(err, -EINVAL, "invalid reference \"%s\": empty name", s);
        if (image_hex_is_valid(name))
                return error_set(err, -EINVAL,
                                 "invalid reference \"%s\": cannot specify 64-byte "
                                 "hexadecimal strings",
                                 s);

        char *first = strchr(name, '/');
        bool has_domain = false;
        if (first) {
                size_t n = (size_t)(first - name);
                bool upper = false;
                for (size_t i = 0; i < n; i++)
                        if (isupper((unsigned char)name[i]))
                                upper = true;
                has_domain = memchr(name, '.', n) || memchr(name, ':', n) ||
                             (n == 9 && strneq(name, "localhost", 9)) || upper;
        }
        if (has_domain) {
                domain = strndup_safe(name, (size_t)(first - name));
                path = strdup(first + 1);
        } else {
                domain = strdup("docker.io");
                path = strdup(name);
        }
        if (!domain || !path)
                return -ENOMEM;
        if (streq(domain, "index.docker.io")) {
                free(domain);
                domain = strdup("docker.io");
                if (!domain)
                        return -ENOMEM;
        }
        if (!domain_valid(domain))
                return error_set(err, -EINVAL,
                                 "invalid reference \"%s\": invalid registry host \"%s\"", s,
                                 domain);
        if (streq(domain, "docker.io") && !strchr(path, '/')) {
                char *p = strprintf("library/%s", path);
                if (!p)
                        return -ENOMEM;
                free(path);
                path = p;
        }
        for (const char *c = path;;) {
                const char *e = strchr(c, '/');
                size_t n = e ? (size_t)(e - c) : strlen(c);
                if (!path_component_valid(c, n)) {
                        for (size_t i = 0; i < n; i++)
                                if (isupper((unsigned char)c[i]))
                                        return error_set(err, -EINVAL,
                                                         "invalid reference \"%s\": "
                                                         "repository name must be "
                                                         "lowercase",
                                                         s);
                        return error_set(err, -EINVAL,
                                         "invalid reference \"%s\": invalid repository "
                                         "path component \"%.*s\"",
                                         s, (int)n, c);
                }
                if (!e)
                        break;
                c = e + 1;
        }
        if (strlen(domain) + 1 + strlen(path) > NAME_MAX_LEN)
                return error_set(err, -EINVAL,
                                 "invalid reference \"%s\": repository name must not be "
                                 "more than %d characters",
                                 s, NAME_MAX_LEN);
        if (!tag && !digest) {
                tag = strdup("latest");
                if (!tag)
                        return -ENOMEM;
        }

        *ret = (ImageRef){
                .domain = TAKE_PTR(domain),
                .path = TAKE_PTR(path),
                .tag = TAKE_PTR(tag),
                .digest = TAKE_PTR(digest),
        };
        return 0;
}

char *image_ref_repository(const ImageRef *ref) {
        return strprintf("%s/%s", ref->domain, ref->path);
}

char *image_ref_to_string(const ImageRef *ref) {
        return strprintf("%s/%s%s%s%s%s", ref->domain, ref->path, ref->tag ? ":" : "",
                         strempty(ref->tag), ref->digest ? "@" : "", strempty(ref->digest));
}

int image_ref_normalize(const char *s, char **ret, Error *err) {
        ImageRef ref = {};
        int r = image_ref_parse(s, &ref, err);
        if (r < 0)
                return r;
        char *out = image_ref_to_string(&ref);
        image_ref_done(&ref);
        if (!out)
                return -ENOMEM;
        *ret = out;
        return 0;
}
