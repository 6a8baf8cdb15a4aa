/* Plugin results and error objects: untrusted input, so everything is
 * bounded (size, counts, string lengths) and every address is checked. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "cni-internal.h"
#include "string-util.h"
#include "strv.h"

#define LIST_MAX 256U
#define STRING_MAX 1024U

CniResult *cni_result_free(CniResult *r) {
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n_interfaces; i++) {
                free(r->interfaces[i].name);
                free(r->interfaces[i].mac);
                free(r->interfaces[i].sandbox);
        }
        free(r->interfaces);
        for (size_t i = 0; i < r->n_ips; i++) {
                free(r->ips[i].address);
                free(r->ips[i].gateway);
        }
        free(r->ips);
        for (size_t i = 0; i < r->n_routes; i++) {
                free(r->routes[i].dst);
                free(r->routes[i].gw);
        }
        free(r->routes);
        strv_free(r->dns.nameservers);
        free(r->dns.domain);
        strv_free(r->dns.search);
        strv_free(r->dns.options);
        free(r->cni_version);
        free(r->json);
        free(r);
        return NULL;
}

/* An address, optionally with /prefix; returns the family or -EINVAL. */
static int parse_address(const char *s, bool want_prefix) {
        char addr[INET6_ADDRSTRLEN + 1];
        unsigned char buf[sizeof(struct in6_addr)];
        const char *slash = strchr(s, '/');
        size_t n = slash ? (size_t)(slash - s) : strlen(s);

        if ((slash != NULL) != want_prefix || n == 0 || n >= sizeof(addr))
                return -EINVAL;
        memcpy(addr, s, n);
        addr[n] = 0;
        int family = strchr(addr, ':') ? AF_INET6 : AF_INET;
        if (inet_pton(family, addr, buf) != 1)
                return -EINVAL;
        if (slash) {
                const char *p = slash + 1;
                unsigned len = 0;
                if (!*p || strlen(p) > 3)
                        return -EINVAL;
                for (; *p; p++) {
                        if (*p < '0' || *p > '9')
                                return -EINVAL;
                        len = len * 10 + (unsigned)(*p - '0');
                }
                if (len > (family == AF_INET ? 32U : 128U))
                        return -EINVAL;
        }
        return family;
}

static int bad(CniError *err, const char *fmt, ...) _printf_(2, 3);
static int bad(CniError *err, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        int r = cni_error_setv(err, -EBADMSG, NULL, fmt, ap);
        va_end(ap);
        return r;
}

/* Optional string member: 0 and *ret (NULL when absent), or -EBADMSG. */
static int get_string(json_t *o, const char *key, const char *where, char **ret, CniError *err) {
        json_t *v = json_object_get(o, key);
        *ret = NULL;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_string(v) || json_string_length(v) > STRING_MAX ||
            strlen(json_string_value(v)) != json_string_length(v))
                return bad(err, "invalid result: %s\"%s\" must be a string", where, key);
        *ret = strdup(json_string_value(v));
        return *ret ? 0 : -ENOMEM;
}

static int get_array(json_t *o, const char *key, const char *where, json_t **ret, CniError *err) {
        json_t *v = json_object_get(o, key);
        *ret = NULL;
        if (!v || json_is_null(v))
                return 0;
        if (!json_is_array(v) || json_array_size(v) > LIST_MAX)
                return bad(err, "invalid result: %s\"%s\" must be an array of at most %u", where,
                           key, LIST_MAX);
        *ret = v;
        return 0;
}

static int get_strv(json_t *o, const char *key, char ***ret, CniError *err) {
        json_t *a, *v;
        size_t i;
        int r = get_array(o, key, "dns: ", &a, err);
        if (r < 0)
                return r;
        json_array_foreach(a, i, v) {
                if (!json_is_string(v) || json_string_length(v) > STRING_MAX ||
                    strlen(json_string_value(v)) != json_string_length(v))
                        return bad(err, "invalid result: dns: \"%s\"[%zu] must be a string", key,
                                   i);
                r = strv_extend(ret, json_string_value(v));
                if (r < 0)
                        return r;
        }
        return 0;
}

static int parse_interfaces(json_t *doc, CniResult *res, CniError *err) {
        json_t *a, *v;
        size_t i;
        int r = get_array(doc, "interfaces", "", &a, err);
        if (r < 0 || !a)
                return r;
        res->interfaces = calloc(json_array_size(a) + 1, sizeof(CniInterface));
        if (!res->interfaces)
                return -ENOMEM;
        json_array_foreach(a, i, v) {
                char where[48];
                snprintf(where, sizeof(where), "interfaces[%zu]: ", i);
                if (!json_is_object(v))
                        return bad(err, "invalid result: %smust be an object", where);
                CniInterface *f = &res->interfaces[res->n_interfaces++];
                if ((r = get_string(v, "name", where, &f->name, err)) < 0 ||
                    (r = get_string(v, "mac", where, &f->mac, err)) < 0 ||
                    (r = get_string(v, "sandbox", where, &f->sandbox, err)) < 0)
                        return r;
                if (isempty(f->name))
                        return bad(err, "invalid result: %smissing \"name\"", where);
        }
        return 0;
}

static int parse_ips(json_t *doc, CniResult *res, bool v1, CniError *err) {
        json_t *a, *v;
        size_t i;
        int r = get_array(doc, "ips", "", &a, err);
        if (r < 0 || !a)
                return r;
        res->ips = calloc(json_array_size(a) + 1, sizeof(CniIP));
        if (!res->ips)
                return -ENOMEM;
        json_array_foreach(a, i, v) {
                char where[32];
                snprintf(where, sizeof(where), "ips[%zu]: ", i);
                if (!json_is_object(v))
                        return bad(err, "invalid result: %smust be an object", where);
                CniIP *ip = &res->ips[res->n_ips++];
                ip->interface = -1;
                if ((r = get_string(v, "address", where, &ip->address, err)) < 0 ||
                    (r = get_string(v, "gateway", where, &ip->gateway, err)) < 0)
                        return r;
                if (!ip->address)
                        return bad(err, "invalid result: %smissing \"address\"", where);
                ip->family = parse_address(ip->address, true);
                if (ip->family < 0)
                        return bad(err, "invalid result: %s\"address\" is not an address/prefix",
                                   where);
                if (ip->gateway && parse_address(ip->gateway, false) != ip->family)
                        return bad(err,
                                   "invalid result: %s\"gateway\" is not an address of the "
                                   "same family",
                                   where);
                json_t *ver = json_object_get(v, "version");
                if (!v1 && ver) {
                        const char *s = json_string_value(ver);
                        if (!s || !streq(s, ip->family == AF_INET ? "4" : "6"))
                                return bad(err,
                                           "invalid result: %s\"version\" does not match "
                                           "the address",
                                           where);
                }
                json_t *idx = json_object_get(v, "interface");
                if (idx && !json_is_null(idx)) {
                        if (!json_is_integer(idx) || json_integer_value(idx) < 0 ||
                            (size_t)json_integer_value(idx) >= res->n_interfaces)
                                return bad(err,
                                           "invalid result: %s\"interface\" is not an "
                                           "index into \"interfaces\"",
                                           where);
                        ip->interface = (int)json_integer_value(idx);
                }
        }
        return 0;
}

static int parse_routes(json_t *doc, CniResult *res, CniError *err) {
        json_t *a, *v;
        size_t i;
        int r = get_array(doc, "routes", "", &a, err);
        if (r < 0 || !a)
                return r;
        res->routes = calloc(json_array_size(a) + 1, sizeof(CniRoute));
        if (!res->routes)
                return -ENOMEM;
        json_array_foreach(a, i, v) {
                char where[32];
                snprintf(where, sizeof(where), "routes[%zu]: ", i);
                if (!json_is_object(v))
                        return bad(err, "invalid result: %smust be an object", where);
                CniRoute *rt = &res->routes[res->n_routes++];
                if ((r = get_string(v, "dst", where, &rt->dst, err)) < 0 ||
                    (r = get_string(v, "gw", where, &rt->gw, err)) < 0)
                        return r;
                int family = rt->dst ? parse_address(rt->dst, true) : -EINVAL;
                if (family < 0)
                        return bad(err, "invalid result: %s\"dst\" is not an address/prefix",
                                   where);
                if (rt->gw && parse_address(rt->gw, false) != family)
                        return bad(err,
                                   "invalid result: %s\"gw\" is not an address of the "
                                   "same family",
                                   where);
        }
        return 0;
}

int cni_result_parse(const char *data, size_t size, CniResult **ret, CniError *err) {
        json_error_t je;
        int r;

        if (size > CNI_OUTPUT_MAX)
                return bad(err, "invalid result: larger than %u bytes", CNI_OUTPUT_MAX);
        _cleanup_json_ json_t *doc = json_loadb(data, size, JSON_REJECT_DUPLICATES, &je);
        if (!doc)
                return bad(err, "invalid result: %d:%d: %s", je.line, je.column, je.text);
        if (!json_is_object(doc))
                return bad(err, "invalid result: not a JSON object");

        _cleanup_cni_result_free_ CniResult *res = calloc(1, sizeof(*res));
        if (!res)
                return -ENOMEM;
        r = get_string(doc, "cniVersion", "", &res->cni_version, err);
        if (r < 0)
                return r;
        if (!res->cni_version)
                return bad(err, "invalid result: missing \"cniVersion\"");
        if (!cni_version_supported(res->cni_version))
                return bad(err, "invalid result: unsupported \"cniVersion\" \"%s\"",
                           res->cni_version);
        if (json_object_get(doc, "ip4") || json_object_get(doc, "ip6"))
                return bad(err, "invalid result: 0.2.0-style \"ip4\"/\"ip6\" fields");

        if ((r = parse_interfaces(doc, res, err)) < 0 ||
            (r = parse_ips(doc, res, streq(res->cni_version, "1.0.0"), err)) < 0 ||
            (r = parse_routes(doc, res, err)) < 0)
                return r;

        json_t *dns = json_object_get(doc, "dns");
        if (dns && !json_is_null(dns)) {
                if (!json_is_object(dns))
                        return bad(err, "invalid result: \"dns\" must be an object");
                if ((r = get_strv(dns, "nameservers", &res->dns.nameservers, err)) < 0 ||
                    (r = get_string(dns, "domain", "dns: ", &res->dns.domain, err)) < 0 ||
                    (r = get_strv(dns, "search", &res->dns.search, err)) < 0 ||
                    (r = get_strv(dns, "options", &res->dns.options, err)) < 0)
                        return r;
                STRV_FOREACH(ns, res->dns.nameservers)
                        if (parse_address(*ns, false) < 0)
                                return bad(err,
                                           "invalid result: dns: nameserver \"%s\" is not "
                                           "an address",
                                           *ns);
        }

        res->json = json_dumps(doc, JSON_COMPACT);
        if (!res->json)
                return -ENOMEM;
        *ret = TAKE_PTR(res);
        return 0;
}

int cni_error_parse(const char *data, size_t size, CniError *err) {
        _cleanup_json_ json_t *doc = NULL;

        if (size == 0 || size > CNI_OUTPUT_MAX)
                return -EBADMSG;
        doc = json_loadb(data, size, 0, NULL);
        json_t *code = json_object_get(doc, "code");
        json_t *msg = json_object_get(doc, "msg");
        json_t *details = json_object_get(doc, "details");
        if (!json_is_integer(code) || json_integer_value(code) < 0 ||
            json_integer_value(code) > 0xffffffffLL || (msg && !json_is_string(msg)) ||
            (details && !json_is_string(details)))
                return -EBADMSG;
        if (!err)
                return 0;
        cni_error_done(err);
        err->base.error = -EIO;
        err->code = (unsigned)json_integer_value(code);
        (void)snprintf(err->base.message, sizeof(err->base.message), "%s",
                       msg ? json_string_value(msg) : "");
        err->details = details ? strndup_safe(json_string_value(details), STRING_MAX * 4) : NULL;
        if (details && !err->details)
                return -ENOMEM;
        return 0;
}

int cni_result_pod_ips(const CniResult *r, char ***ret) {
        _cleanup_strv_free_ char **ips = NULL;
        bool have4 = false, have6 = false;

        for (size_t i = 0; r && i < r->n_ips; i++) {
                const CniIP *ip = &r->ips[i];
                if (ip->interface >= 0 && (size_t)ip->interface < r->n_interfaces &&
                    isempty(r->interfaces[ip->interface].sandbox))
                        continue; /* a host-side interface (bridge, veth peer) */
                bool *have = ip->family == AF_INET ? &have4 : &have6;
                if (*have)
                        continue;
                const char *slash = strchr(ip->address, '/');
                char *a = strndup_safe(ip->address,
                                       slash ? (size_t)(slash - ip->address) : strlen(ip->address));
                if (!a || strv_consume(&ips, a) < 0) {
                        free(a);
                        return -ENOMEM;
                }
                *have = true;
        }
        if (!ips) {
                ips = calloc(1, sizeof(char *));
                if (!ips)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(ips);
        return 0;
}
