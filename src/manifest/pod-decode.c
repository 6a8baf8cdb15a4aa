/* YAML node tree -> typed Pod, driven by field tables. Decoding only checks
 * types (as Kubernetes' JSON decoder does); value rules live in
 * pod-validate.c. Type errors are errors; unknown fields are warnings, as
 * kubectl's field validation "Warn" mode does, so a manifest written for a
 * newer Kubernetes still runs. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "pod-internal.h"
#include "quantity.h"
#include "string-util.h"
#include "strv.h"

#define PATH_BUF 1024

/* Paths are for messages: a truncated one is still useful. */
char *path_join(char *buf, size_t size, const char *parent, const char *name) {
        int r = isempty(parent) ? snprintf(buf, size, "%s", name)
                                : snprintf(buf, size, "%s.%s", parent, name);
        if (r < 0)
                buf[0] = 0;
        return buf;
}

char *path_key(char *buf, size_t size, const char *parent, const char *key) {
        if (snprintf(buf, size, "%s[%s]", parent, key) < 0)
                buf[0] = 0;
        return buf;
}

static char *path_index(char *buf, size_t size, const char *parent, size_t i) {
        if (snprintf(buf, size, "%s[%zu]", parent, i) < 0)
                buf[0] = 0;
        return buf;
}

_printf_(5, 0) static void decode_vadd(DecodeContext *c, DiagLevel level, const YamlNode *n,
                                       const char *path, const char *fmt, va_list ap) {
        _cleanup_free_ char *m = strvprintf(fmt, ap);
        diagnostics_add(c->diag, level, c->file, n ? n->line : 0, n ? n->column : 0, path, "%s",
                        m ?: "out of memory");
        if (level == DIAG_ERROR && path)
                (void)strv_extend(&c->error_paths, path);
}

void decode_error(DecodeContext *c, const YamlNode *n, const char *path, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        decode_vadd(c, DIAG_ERROR, n, path, fmt, ap);
        va_end(ap);
}

void decode_warning(DecodeContext *c, const YamlNode *n, const char *path, const char *fmt, ...) {
        va_list ap;
        va_start(ap, fmt);
        decode_vadd(c, DIAG_WARNING, n, path, fmt, ap);
        va_end(ap);
}

/* ---- scalars ---- */

/* A scalar where a string belongs: YAML 1.1, as Kubernetes reads
 * manifests, types yes/no/on/off/y/n and true/false as booleans and
 * numbers as numbers, which kubelet refuses for a string field too; the
 * message says how to write the string. */
static void not_a_string(DecodeContext *c, const YamlNode *n, const char *path) {
        static const char *const kind[] = {
                [YAML_NODE_NULL] = "null",
                [YAML_NODE_BOOL] = "a boolean",
                [YAML_NODE_INT] = "a number",
                [YAML_NODE_FLOAT] = "a number",
        };
        if (n->type <= YAML_NODE_FLOAT && n->str && !isempty(n->str) && n->str_len <= 64)
                decode_error(c, n, path, "must be a string: %s is %s in YAML, quote it (\"%s\")",
                             n->str, kind[n->type], n->str);
        else
                decode_error(c, n, path, "must be a string");
}

static int decode_string(DecodeContext *c, const YamlNode *n, const char *path, char **ret) {
        if (n->type != YAML_NODE_STRING) {
                not_a_string(c, n, path);
                return 0;
        }
        if (memchr(n->str, 0, n->str_len)) {
                decode_error(c, n, path, "must not contain NUL characters");
                return 0;
        }
        char *s = strdup(n->str);
        if (!s)
                return -ENOMEM;
        free(*ret);
        *ret = s;
        return 0;
}

/* 1 when an integer was stored, 0 after an error was reported. */
static int decode_int(DecodeContext *c, const YamlNode *n, const char *path, bool is32,
                      int64_t *ret) {
        if (n->type != YAML_NODE_INT) {
                decode_error(c, n, path, "must be an integer");
                return 0;
        }
        if (is32 && (n->i < INT32_MIN || n->i > INT32_MAX)) {
                decode_error(c, n, path, "must be a 32-bit integer");
                return 0;
        }
        *ret = n->i;
        return 1;
}

/* "0644" is octal here as in Kubernetes (YAML 1.1 integers, which the
 * parser implements), so modes need no special reading beyond the range. */
static int decode_mode(DecodeContext *c, const YamlNode *n, const char *path, OptionalInt *ret) {
        int64_t v;
        if (decode_int(c, n, path, true, &v) > 0)
                *ret = (OptionalInt){ .value = v, .set = true };
        return 0;
}

static int decode_enum(DecodeContext *c, const YamlNode *n, const char *path, const EnumInfo *e,
                       int *ret) {
        if (n->type != YAML_NODE_STRING) {
                not_a_string(c, n, path);
                return 0;
        }
        for (int i = 0; i < e->n; i++)
                if (e->names[i] && streq(e->names[i], n->str)) {
                        *ret = i;
                        return 0;
                }

        char list[512] = "";
        size_t l = 0;
        for (int i = 0; i < e->n; i++)
                if (e->names[i] && l < sizeof(list))
                        l += snprintf(list + l, sizeof(list) - l, "%s\"%s\"", l ? ", " : "",
                                      e->names[i]);
        decode_error(c, n, path, "unsupported value \"%s\": supported values: %s", n->str, list);
        return 0;
}

static int decode_quantity(DecodeContext *c, const YamlNode *n, const char *path,
                           OptionalQuantity *ret) {
        /* Kubernetes accepts "500m" and bare numbers alike. */
        if (n->type != YAML_NODE_INT && n->type != YAML_NODE_FLOAT && n->type != YAML_NODE_STRING) {
                decode_error(c, n, path, "must be a quantity");
                return 0;
        }
        Quantity q;
        int r = quantity_parse(n->str, &q);
        if (r < 0) {
                decode_error(c, n, path, "%s \"%s\" is not a valid quantity",
                             r == -ERANGE ? "too large:" : "invalid value:", n->str);
                return 0;
        }
        *ret = (OptionalQuantity){ .value = q, .set = true };
        return 0;
}

static int decode_int_or_string(DecodeContext *c, const YamlNode *n, const char *path,
                                IntOrString *ret) {
        if (n->type == YAML_NODE_INT) {
                if (n->i < INT32_MIN || n->i > INT32_MAX) {
                        decode_error(c, n, path, "must be a 32-bit integer");
                        return 0;
                }
                ret->str = mfree(ret->str);
                ret->num = n->i;
                ret->set = true;
                return 0;
        }
        if (n->type != YAML_NODE_STRING) {
                decode_error(c, n, path, "must be an integer or a string");
                return 0;
        }
        char *s = strdup(n->str);
        if (!s)
                return -ENOMEM;
        free(ret->str);
        ret->str = s;
        ret->num = 0;
        ret->set = true;
        return 0;
}

static int decode_strv(DecodeContext *c, const YamlNode *n, const char *path, char ***ret) {
        if (n->type != YAML_NODE_SEQ) {
                decode_error(c, n, path, "must be a list of strings");
                return 0;
        }
        _cleanup_strv_free_ char **l = calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n->n; i++) {
                char p[PATH_BUF];
                path_index(p, sizeof(p), path, i);
                _cleanup_free_ char *s = NULL;
                int r = decode_string(c, n->items[i], p, &s);
                if (r < 0)
                        return r;
                if (!s)
                        continue;
                r = strv_consume(&l, TAKE_PTR(s));
                if (r < 0)
                        return r;
        }
        strv_free(*ret);
        *ret = TAKE_PTR(l);
        return 0;
}

static int decode_int64_array(DecodeContext *c, const YamlNode *n, const char *path, int64_t **ret,
                              size_t *ret_n) {
        if (n->type != YAML_NODE_SEQ) {
                decode_error(c, n, path, "must be a list of integers");
                return 0;
        }
        _cleanup_free_ int64_t *a = calloc(n->n ?: 1, sizeof(int64_t));
        if (!a)
                return -ENOMEM;
        size_t k = 0;
        for (size_t i = 0; i < n->n; i++) {
                char p[PATH_BUF];
                path_index(p, sizeof(p), path, i);
                if (decode_int(c, n->items[i], p, false, &a[k]) > 0)
                        k++;
        }
        free(*ret);
        *ret = TAKE_PTR(a);
        *ret_n = k;
        return 0;
}

static int decode_map(DecodeContext *c, const YamlNode *n, const char *path, StringMap *m) {
        if (n->type != YAML_NODE_MAP) {
                decode_error(c, n, path, "must be a map of strings");
                return 0;
        }
        for (size_t i = 0; i < n->n; i++) {
                const YamlNode *k = n->pairs[i].key, *v = n->pairs[i].value;
                char p[PATH_BUF];
                path_key(p, sizeof(p), path, k->str);
                if (v->type == YAML_NODE_NULL)
                        continue; /* JSON null in a map[string]string is "" in Go; omit */
                if (v->type != YAML_NODE_STRING) {
                        not_a_string(c, v, p);
                        continue;
                }
                int r = string_map_set(m, k->str, v->str, v->str_len);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* ---- structs ---- */

void struct_init(const StructType *t, void *base) {
        if (!t->fields)
                return;
        for (const Field *f = t->fields; f->name; f++) {
                void *p = (uint8_t *)base + f->offset;
                if (f->alias)
                        continue;
                if (f->kind == FIELD_ENUM)
                        *(int *)p = -EINVAL;
                else if (f->kind == FIELD_STRUCT)
                        struct_init(f->arg, p);
        }
}

void struct_done(const StructType *t, void *base) {
        if (!base)
                return;
        if (t->free) {
                t->free(base);
                return;
        }
        for (const Field *f = t->fields; f->name; f++) {
                void *p = (uint8_t *)base + f->offset;
                if (f->alias)
                        continue;
                switch (f->kind) {
                case FIELD_STRING:
                        free(*(char **)p);
                        break;
                case FIELD_STRV:
                        strv_free(*(char ***)p);
                        break;
                case FIELD_INT64_ARRAY:
                        free(*(int64_t **)p);
                        break;
                case FIELD_MAP:
                        string_map_done(p);
                        break;
                case FIELD_INT_OR_STRING:
                        free(((IntOrString *)p)->str);
                        break;
                case FIELD_STRUCT:
                        struct_done(f->arg, p);
                        break;
                case FIELD_STRUCT_PTR: {
                        void *q = *(void **)p;
                        if (q) {
                                struct_done(f->arg, q);
                                free(q);
                        }
                        break;
                }
                case FIELD_ARRAY: {
                        const StructType *et = f->arg;
                        uint8_t *items = *(uint8_t **)p;
                        size_t n = *(size_t *)((uint8_t *)base + f->offset_n);
                        for (size_t i = 0; items && i < n; i++)
                                struct_done(et, items + i * et->size);
                        free(items);
                        break;
                }
                case FIELD_BOOL:
                case FIELD_ENUM:
                case FIELD_IGNORED:
                case FIELD_INT32:
                case FIELD_INT64:
                case FIELD_MODE:
                case FIELD_OPT_BOOL:
                case FIELD_OPT_INT32:
                case FIELD_OPT_INT64:
                case FIELD_QUANTITY:
                case FIELD_REJECTED:
                case FIELD_SILENT:
                default:
                        break;
                }
        }
}

static int decode_array(DecodeContext *c, const YamlNode *n, const char *path, const StructType *et,
                        void **items, size_t *n_items) {
        if (n->type != YAML_NODE_SEQ) {
                decode_error(c, n, path, "must be a list");
                return 0;
        }
        if (*items) {
                /* a duplicate key: the last one wins, as in Go's decoder */
                for (size_t i = 0; i < *n_items; i++)
                        struct_done(et, (uint8_t *)*items + i * et->size);
                *items = mfree(*items);
                *n_items = 0;
        }
        if (n->n == 0)
                return 0;
        uint8_t *a = calloc(n->n, et->size);
        if (!a)
                return -ENOMEM;
        /* Every element gets a slot, even a broken one, so indexes in the
         * model are the indexes in the document (validation relies on it). */
        *items = a;
        for (size_t i = 0; i < n->n; i++) {
                char p[PATH_BUF];
                path_index(p, sizeof(p), path, i);
                struct_init(et, a + i * et->size);
                *n_items = i + 1;
                int r = struct_decode(c, n->items[i], p, et, a + i * et->size);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int decode_field(DecodeContext *c, const Field *f, const YamlNode *v, const char *path,
                        void *base) {
        void *p = (uint8_t *)base + f->offset;

        /* Kubernetes treats an explicit null like an absent field. */
        if (v->type == YAML_NODE_NULL)
                return 0;

        switch (f->kind) {
        case FIELD_STRING:
                return decode_string(c, v, path, p);
        case FIELD_BOOL:
        case FIELD_OPT_BOOL:
                if (v->type != YAML_NODE_BOOL) {
                        decode_error(c, v, path, "must be a boolean");
                        return 0;
                }
                if (f->kind == FIELD_BOOL)
                        *(bool *)p = v->b;
                else
                        *(OptionalBool *)p = (OptionalBool){ .value = v->b, .set = true };
                return 0;
        case FIELD_INT32:
        case FIELD_INT64:
                (void)decode_int(c, v, path, f->kind == FIELD_INT32, p);
                return 0;
        case FIELD_OPT_INT32:
        case FIELD_OPT_INT64: {
                int64_t i;
                if (decode_int(c, v, path, f->kind == FIELD_OPT_INT32, &i) > 0)
                        *(OptionalInt *)p = (OptionalInt){ .value = i, .set = true };
                return 0;
        }
        case FIELD_MODE:
                return decode_mode(c, v, path, p);
        case FIELD_ENUM:
                return decode_enum(c, v, path, f->arg, p);
        case FIELD_STRV:
                return decode_strv(c, v, path, p);
        case FIELD_INT64_ARRAY:
                return decode_int64_array(c, v, path, p, (size_t *)((uint8_t *)base + f->offset_n));
        case FIELD_MAP:
                return decode_map(c, v, path, p);
        case FIELD_QUANTITY:
                return decode_quantity(c, v, path, p);
        case FIELD_INT_OR_STRING:
                return decode_int_or_string(c, v, path, p);
        case FIELD_STRUCT:
                return struct_decode(c, v, path, f->arg, p);
        case FIELD_STRUCT_PTR: {
                const StructType *t = f->arg;
                void **pp = p;
                if (!*pp) {
                        *pp = calloc(1, t->size);
                        if (!*pp)
                                return -ENOMEM;
                        struct_init(t, *pp);
                }
                return struct_decode(c, v, path, t, *pp);
        }
        case FIELD_ARRAY:
                return decode_array(c, v, path, f->arg, p,
                                    (size_t *)((uint8_t *)base + f->offset_n));
        case FIELD_IGNORED:
                decode_warning(c, v, path, "is ignored by nanolet");
                return 0;
        case FIELD_SILENT:
                return 0;
        case FIELD_REJECTED:
                decode_error(c, v, path, "%s", (const char *)f->arg);
                return 0;
        }
        return 0;
}

int struct_decode(DecodeContext *c, const YamlNode *n, const char *path, const StructType *t,
                  void *base) {
        if (t->decode)
                return t->decode(c, n, path, base);
        if (n->type == YAML_NODE_NULL)
                return 0;
        if (n->type != YAML_NODE_MAP) {
                decode_error(c, n, path, "must be an object");
                return 0;
        }
        for (size_t i = 0; i < n->n; i++) {
                const YamlNode *k = n->pairs[i].key, *v = n->pairs[i].value;
                char p[PATH_BUF];
                path_join(p, sizeof(p), path, k->str);

                const Field *f;
                for (f = t->fields; f->name; f++)
                        if (streq(f->name, k->str))
                                break;
                if (!f->name) {
                        decode_warning(c, k, p, "unknown field \"%s\"", p);
                        continue;
                }
                int r = decode_field(c, f, v, p, base);
                if (r < 0)
                        return r;
                /* The object lost a member it needed: no "must specify
                 * one of" from validation on top of the rejection. */
                if (f->kind == FIELD_REJECTED && v->type != YAML_NODE_NULL)
                        (void)strv_extend(&c->error_paths, path);
        }
        return 0;
}

/* ---- resource lists ---- */

static void resource_list_free(void *base) {
        ResourceList *l = base;
        for (size_t i = 0; i < l->n_hugepages; i++)
                free(l->hugepages[i].page_size);
        free(l->hugepages);
}

static int resource_list_decode(DecodeContext *c, const YamlNode *n, const char *path, void *base) {
        ResourceList *l = base;
        if (n->type == YAML_NODE_NULL)
                return 0;
        if (n->type != YAML_NODE_MAP) {
                decode_error(c, n, path, "must be a map of resource names to quantities");
                return 0;
        }
        for (size_t i = 0; i < n->n; i++) {
                const YamlNode *k = n->pairs[i].key, *v = n->pairs[i].value;
                char p[PATH_BUF];
                path_key(p, sizeof(p), path, k->str);
                OptionalQuantity q = {};
                const char *size;
                int r;

                if (streq(k->str, "cpu"))
                        r = decode_quantity(c, v, p, &l->cpu);
                else if (streq(k->str, "memory"))
                        r = decode_quantity(c, v, p, &l->memory);
                else if (streq(k->str, "ephemeral-storage"))
                        r = decode_quantity(c, v, p, &l->ephemeral_storage);
                else if ((size = startswith(k->str, "hugepages-"))) {
                        Quantity page;
                        if (quantity_parse(size, &page) < 0 || page.value <= 0) {
                                decode_error(c, k, p, "invalid hugepage size \"%s\"", size);
                                continue;
                        }
                        r = decode_quantity(c, v, p, &q);
                        if (r < 0 || !q.set)
                                continue;
                        HugePageQuantity *a = reallocarray(l->hugepages, l->n_hugepages + 1,
                                                           sizeof(HugePageQuantity));
                        if (!a)
                                return -ENOMEM;
                        l->hugepages = a;
                        char *s = strdup(size);
                        if (!s)
                                return -ENOMEM;
                        l->hugepages[l->n_hugepages++] = (HugePageQuantity){ s, q.value };
                } else {
                        decode_error(c, k, p,
                                     "resource \"%s\" is not supported by nanolet (extended "
                                     "resources need device plugins and an apiserver)",
                                     k->str);
                        continue;
                }
                if (r < 0)
                        return r;
        }
        return 0;
}

static const StructType resource_list_type = {
        .size = sizeof(ResourceList),
        .decode = resource_list_decode,
        .free = resource_list_free,
};

/* ---- tables ---- */

#define F(json, kind_, type, member, ...)                                                          \
        { .name = json, .kind = kind_, .offset = offsetof(type, member), __VA_ARGS__ }
#define FA(json, type, member, nmember, et)                                                        \
        {                                                                                          \
                .name = json, .kind = FIELD_ARRAY, .offset = offsetof(type, member),               \
                .offset_n = offsetof(type, nmember), .arg = &(et)                                  \
        }
#define FIGN(json)                                                                                 \
        { .name = json, .kind = FIELD_IGNORED }
#define FSILENT(json)                                                                              \
        { .name = json, .kind = FIELD_SILENT }
#define FREJ(json, why)                                                                            \
        { .name = json, .kind = FIELD_REJECTED, .arg = (why) }
#define STRUCT_TYPE(var, type, ...)                                                                \
        static const Field var##_fields[] = { __VA_ARGS__, {} };                                   \
        static const StructType var = { .size = sizeof(type), .fields = var##_fields }

STRUCT_TYPE(exec_type, ExecAction, F("command", FIELD_STRV, ExecAction, command));
STRUCT_TYPE(http_header_type, HTTPHeader, F("name", FIELD_STRING, HTTPHeader, name),
            F("value", FIELD_STRING, HTTPHeader, value));
STRUCT_TYPE(http_get_type, HTTPGetAction, F("path", FIELD_STRING, HTTPGetAction, path),
            F("port", FIELD_INT_OR_STRING, HTTPGetAction, port),
            F("host", FIELD_STRING, HTTPGetAction, host),
            F("scheme", FIELD_ENUM, HTTPGetAction, scheme, .arg = &uri_scheme_info),
            FA("httpHeaders", HTTPGetAction, http_headers, n_http_headers, http_header_type));
STRUCT_TYPE(tcp_socket_type, TCPSocketAction, F("port", FIELD_INT_OR_STRING, TCPSocketAction, port),
            F("host", FIELD_STRING, TCPSocketAction, host));
STRUCT_TYPE(grpc_type, GRPCAction, F("port", FIELD_INT32, GRPCAction, port),
            F("service", FIELD_STRING, GRPCAction, service));
STRUCT_TYPE(sleep_type, SleepAction, F("seconds", FIELD_INT64, SleepAction, seconds));

STRUCT_TYPE(probe_type, Probe, F("exec", FIELD_STRUCT_PTR, Probe, handler.exec, .arg = &exec_type),
            F("httpGet", FIELD_STRUCT_PTR, Probe, handler.http_get, .arg = &http_get_type),
            F("tcpSocket", FIELD_STRUCT_PTR, Probe, handler.tcp_socket, .arg = &tcp_socket_type),
            F("grpc", FIELD_STRUCT_PTR, Probe, handler.grpc, .arg = &grpc_type),
            F("initialDelaySeconds", FIELD_INT32, Probe, initial_delay_seconds),
            F("timeoutSeconds", FIELD_INT32, Probe, timeout_seconds),
            F("periodSeconds", FIELD_INT32, Probe, period_seconds),
            F("successThreshold", FIELD_INT32, Probe, success_threshold),
            F("failureThreshold", FIELD_INT32, Probe, failure_threshold),
            F("terminationGracePeriodSeconds", FIELD_OPT_INT64, Probe,
              termination_grace_period_seconds));

STRUCT_TYPE(lifecycle_handler_type, Handler,
            F("exec", FIELD_STRUCT_PTR, Handler, exec, .arg = &exec_type),
            F("httpGet", FIELD_STRUCT_PTR, Handler, http_get, .arg = &http_get_type),
            F("tcpSocket", FIELD_STRUCT_PTR, Handler, tcp_socket, .arg = &tcp_socket_type),
            F("sleep", FIELD_STRUCT_PTR, Handler, sleep, .arg = &sleep_type));
STRUCT_TYPE(lifecycle_type, Lifecycle,
            F("postStart", FIELD_STRUCT_PTR, Lifecycle, post_start, .arg = &lifecycle_handler_type),
            F("preStop", FIELD_STRUCT_PTR, Lifecycle, pre_stop, .arg = &lifecycle_handler_type),
            FIGN("stopSignal"));

STRUCT_TYPE(field_selector_type, ObjectFieldSelector,
            F("apiVersion", FIELD_STRING, ObjectFieldSelector, api_version),
            F("fieldPath", FIELD_STRING, ObjectFieldSelector, field_path));
STRUCT_TYPE(resource_selector_type, ResourceFieldSelector,
            F("containerName", FIELD_STRING, ResourceFieldSelector, container_name),
            F("resource", FIELD_STRING, ResourceFieldSelector, resource),
            F("divisor", FIELD_QUANTITY, ResourceFieldSelector, divisor));
STRUCT_TYPE(key_selector_type, KeySelector, F("name", FIELD_STRING, KeySelector, name),
            F("key", FIELD_STRING, KeySelector, key),
            F("optional", FIELD_BOOL, KeySelector, optional));
STRUCT_TYPE(env_source_type, EnvVarSource,
            F("fieldRef", FIELD_STRUCT_PTR, EnvVarSource, field_ref, .arg = &field_selector_type),
            F("resourceFieldRef", FIELD_STRUCT_PTR, EnvVarSource, resource_field_ref,
              .arg = &resource_selector_type),
            F("configMapKeyRef", FIELD_STRUCT_PTR, EnvVarSource, config_map_key_ref,
              .arg = &key_selector_type),
            F("secretKeyRef", FIELD_STRUCT_PTR, EnvVarSource, secret_key_ref,
              .arg = &key_selector_type),
            FREJ("fileKeyRef", "is not supported by nanolet"));
STRUCT_TYPE(env_type, EnvVar, F("name", FIELD_STRING, EnvVar, name),
            F("value", FIELD_STRING, EnvVar, value),
            F("valueFrom", FIELD_STRUCT_PTR, EnvVar, value_from, .arg = &env_source_type));
STRUCT_TYPE(local_ref_type, LocalObjectReference,
            F("name", FIELD_STRING, LocalObjectReference, name),
            F("optional", FIELD_BOOL, LocalObjectReference, optional));
STRUCT_TYPE(env_from_type, EnvFromSource, F("prefix", FIELD_STRING, EnvFromSource, prefix),
            F("configMapRef", FIELD_STRUCT_PTR, EnvFromSource, config_map_ref,
              .arg = &local_ref_type),
            F("secretRef", FIELD_STRUCT_PTR, EnvFromSource, secret_ref, .arg = &local_ref_type));

STRUCT_TYPE(port_type, ContainerPort, F("name", FIELD_STRING, ContainerPort, name),
            F("hostPort", FIELD_INT32, ContainerPort, host_port),
            F("containerPort", FIELD_INT32, ContainerPort, container_port),
            F("protocol", FIELD_ENUM, ContainerPort, protocol, .arg = &protocol_info),
            F("hostIP", FIELD_STRING, ContainerPort, host_ip));

STRUCT_TYPE(resources_type, ResourceRequirements,
            F("requests", FIELD_STRUCT, ResourceRequirements, requests, .arg = &resource_list_type),
            F("limits", FIELD_STRUCT, ResourceRequirements, limits, .arg = &resource_list_type),
            FREJ("claims", "needs an apiserver (dynamic resource allocation)"));

STRUCT_TYPE(volume_mount_type, VolumeMount, F("name", FIELD_STRING, VolumeMount, name),
            F("readOnly", FIELD_BOOL, VolumeMount, read_only),
            F("mountPath", FIELD_STRING, VolumeMount, mount_path),
            F("subPath", FIELD_STRING, VolumeMount, sub_path),
            F("subPathExpr", FIELD_STRING, VolumeMount, sub_path_expr),
            F("mountPropagation", FIELD_ENUM, VolumeMount, mount_propagation,
              .arg = &mount_propagation_info),
            FIGN("recursiveReadOnly"));

STRUCT_TYPE(capabilities_type, Capabilities, F("add", FIELD_STRV, Capabilities, add),
            F("drop", FIELD_STRV, Capabilities, drop));
STRUCT_TYPE(seccomp_type, SeccompProfile,
            F("type", FIELD_ENUM, SeccompProfile, type, .arg = &seccomp_profile_type_info),
            F("localhostProfile", FIELD_STRING, SeccompProfile, localhost_profile));
STRUCT_TYPE(apparmor_type, AppArmorProfile,
            F("type", FIELD_ENUM, AppArmorProfile, type, .arg = &apparmor_profile_type_info),
            F("localhostProfile", FIELD_STRING, AppArmorProfile, localhost_profile));
STRUCT_TYPE(sysctl_type, Sysctl, F("name", FIELD_STRING, Sysctl, name),
            F("value", FIELD_STRING, Sysctl, value));
STRUCT_TYPE(security_context_type, SecurityContext,
            F("capabilities", FIELD_STRUCT_PTR, SecurityContext, capabilities,
              .arg = &capabilities_type),
            F("privileged", FIELD_OPT_BOOL, SecurityContext, privileged),
            F("runAsUser", FIELD_OPT_INT64, SecurityContext, run_as_user),
            F("runAsGroup", FIELD_OPT_INT64, SecurityContext, run_as_group),
            F("runAsNonRoot", FIELD_OPT_BOOL, SecurityContext, run_as_non_root),
            F("readOnlyRootFilesystem", FIELD_OPT_BOOL, SecurityContext, read_only_root_filesystem),
            F("allowPrivilegeEscalation", FIELD_OPT_BOOL, SecurityContext,
              allow_privilege_escalation),
            F("procMount", FIELD_ENUM, SecurityContext, proc_mount, .arg = &proc_mount_type_info),
            F("seccompProfile", FIELD_STRUCT_PTR, SecurityContext, seccomp_profile,
              .arg = &seccomp_type),
            F("appArmorProfile", FIELD_STRUCT_PTR, SecurityContext, apparmor_profile,
              .arg = &apparmor_type),
            FIGN("seLinuxOptions"), FIGN("windowsOptions"));
STRUCT_TYPE(pod_security_context_type, PodSecurityContext,
            F("runAsUser", FIELD_OPT_INT64, PodSecurityContext, run_as_user),
            F("runAsGroup", FIELD_OPT_INT64, PodSecurityContext, run_as_group),
            F("runAsNonRoot", FIELD_OPT_BOOL, PodSecurityContext, run_as_non_root),
            { .name = "supplementalGroups",
              .kind = FIELD_INT64_ARRAY,
              .offset = offsetof(PodSecurityContext, supplemental_groups),
              .offset_n = offsetof(PodSecurityContext, n_supplemental_groups) },
            F("fsGroup", FIELD_OPT_INT64, PodSecurityContext, fs_group),
            FA("sysctls", PodSecurityContext, sysctls, n_sysctls, sysctl_type),
            F("seccompProfile", FIELD_STRUCT_PTR, PodSecurityContext, seccomp_profile,
              .arg = &seccomp_type),
            F("appArmorProfile", FIELD_STRUCT_PTR, PodSecurityContext, apparmor_profile,
              .arg = &apparmor_type),
            FIGN("seLinuxOptions"), FIGN("windowsOptions"), FIGN("fsGroupChangePolicy"),
            FIGN("supplementalGroupsPolicy"), FIGN("seLinuxChangePolicy"));

STRUCT_TYPE(container_type, Container, F("name", FIELD_STRING, Container, name),
            F("image", FIELD_STRING, Container, image),
            F("imagePullPolicy", FIELD_ENUM, Container, image_pull_policy,
              .arg = &pull_policy_info),
            F("command", FIELD_STRV, Container, command), F("args", FIELD_STRV, Container, args),
            F("workingDir", FIELD_STRING, Container, working_dir),
            FA("ports", Container, ports, n_ports, port_type),
            FA("envFrom", Container, env_from, n_env_from, env_from_type),
            FA("env", Container, env, n_env, env_type),
            F("resources", FIELD_STRUCT, Container, resources, .arg = &resources_type),
            F("restartPolicy", FIELD_ENUM, Container, restart_policy, .arg = &restart_policy_info),
            FA("volumeMounts", Container, volume_mounts, n_volume_mounts, volume_mount_type),
            F("livenessProbe", FIELD_STRUCT_PTR, Container, liveness_probe, .arg = &probe_type),
            F("readinessProbe", FIELD_STRUCT_PTR, Container, readiness_probe, .arg = &probe_type),
            F("startupProbe", FIELD_STRUCT_PTR, Container, startup_probe, .arg = &probe_type),
            F("lifecycle", FIELD_STRUCT_PTR, Container, lifecycle, .arg = &lifecycle_type),
            F("terminationMessagePath", FIELD_STRING, Container, termination_message_path),
            F("terminationMessagePolicy", FIELD_ENUM, Container, termination_message_policy,
              .arg = &termination_message_policy_info),
            F("securityContext", FIELD_STRUCT_PTR, Container, security_context,
              .arg = &security_context_type),
            F("stdin", FIELD_BOOL, Container, stdin_open),
            F("stdinOnce", FIELD_BOOL, Container, stdin_once), F("tty", FIELD_BOOL, Container, tty),
            FIGN("resizePolicy"), FIGN("restartPolicyRules"),
            FREJ("volumeDevices", "needs persistent volume claims, which need an apiserver"));

/* volumes */

STRUCT_TYPE(key_to_path_type, KeyToPath, F("key", FIELD_STRING, KeyToPath, key),
            F("path", FIELD_STRING, KeyToPath, path), F("mode", FIELD_MODE, KeyToPath, mode));
STRUCT_TYPE(host_path_type, HostPathVolumeSource,
            F("path", FIELD_STRING, HostPathVolumeSource, path),
            F("type", FIELD_ENUM, HostPathVolumeSource, type, .arg = &host_path_type_info));
STRUCT_TYPE(empty_dir_type, EmptyDirVolumeSource,
            F("medium", FIELD_ENUM, EmptyDirVolumeSource, medium, .arg = &storage_medium_info),
            F("sizeLimit", FIELD_QUANTITY, EmptyDirVolumeSource, size_limit));
STRUCT_TYPE(config_map_volume_type, ConfigMapVolumeSource,
            F("name", FIELD_STRING, ConfigMapVolumeSource, name),
            FA("items", ConfigMapVolumeSource, items, n_items, key_to_path_type),
            F("defaultMode", FIELD_MODE, ConfigMapVolumeSource, default_mode),
            F("optional", FIELD_BOOL, ConfigMapVolumeSource, optional));
STRUCT_TYPE(secret_volume_type, SecretVolumeSource,
            F("secretName", FIELD_STRING, SecretVolumeSource, name),
            FA("items", SecretVolumeSource, items, n_items, key_to_path_type),
            F("defaultMode", FIELD_MODE, SecretVolumeSource, default_mode),
            F("optional", FIELD_BOOL, SecretVolumeSource, optional));
STRUCT_TYPE(config_map_projection_type, ConfigMapVolumeSource,
            F("name", FIELD_STRING, ConfigMapVolumeSource, name),
            FA("items", ConfigMapVolumeSource, items, n_items, key_to_path_type),
            F("optional", FIELD_BOOL, ConfigMapVolumeSource, optional));
STRUCT_TYPE(downward_file_type, DownwardAPIVolumeFile,
            F("path", FIELD_STRING, DownwardAPIVolumeFile, path),
            F("fieldRef", FIELD_STRUCT_PTR, DownwardAPIVolumeFile, field_ref,
              .arg = &field_selector_type),
            F("resourceFieldRef", FIELD_STRUCT_PTR, DownwardAPIVolumeFile, resource_field_ref,
              .arg = &resource_selector_type),
            F("mode", FIELD_MODE, DownwardAPIVolumeFile, mode));
STRUCT_TYPE(downward_api_type, DownwardAPIVolumeSource,
            FA("items", DownwardAPIVolumeSource, items, n_items, downward_file_type),
            F("defaultMode", FIELD_MODE, DownwardAPIVolumeSource, default_mode));
STRUCT_TYPE(downward_api_projection_type, DownwardAPIVolumeSource,
            FA("items", DownwardAPIVolumeSource, items, n_items, downward_file_type));
STRUCT_TYPE(projection_type, VolumeProjection,
            F("configMap", FIELD_STRUCT_PTR, VolumeProjection, config_map,
              .arg = &config_map_projection_type),
            F("secret", FIELD_STRUCT_PTR, VolumeProjection, secret,
              .arg = &config_map_projection_type),
            F("downwardAPI", FIELD_STRUCT_PTR, VolumeProjection, downward_api,
              .arg = &downward_api_projection_type),
            FREJ("serviceAccountToken",
                 "service account tokens need an apiserver: use a local Secret"),
            FREJ("clusterTrustBundle", "cluster trust bundles need an apiserver: use a local "
                                       "ConfigMap or Secret"),
            FREJ("podCertificate", "pod certificates need an apiserver"));
STRUCT_TYPE(projected_type, ProjectedVolumeSource,
            FA("sources", ProjectedVolumeSource, sources, n_sources, projection_type),
            F("defaultMode", FIELD_MODE, ProjectedVolumeSource, default_mode));
STRUCT_TYPE(image_volume_type, ImageVolumeSource,
            F("reference", FIELD_STRING, ImageVolumeSource, reference),
            F("pullPolicy", FIELD_ENUM, ImageVolumeSource, pull_policy, .arg = &pull_policy_info));

static const struct {
        const char *name;
        VolumeType type;
        const StructType *t;
} volume_sources[] = {
        { "hostPath", VOLUME_HOST_PATH, &host_path_type },
        { "emptyDir", VOLUME_EMPTY_DIR, &empty_dir_type },
        { "configMap", VOLUME_CONFIG_MAP, &config_map_volume_type },
        { "secret", VOLUME_SECRET, &secret_volume_type },
        { "downwardAPI", VOLUME_DOWNWARD_API, &downward_api_type },
        { "projected", VOLUME_PROJECTED, &projected_type },
        { "image", VOLUME_IMAGE, &image_volume_type },
};

static const char *const apiserver_volumes[] = {
        "persistentVolumeClaim",
        "ephemeral",
        "csi",
};
static const char *const unsupported_volumes[] = {
        "nfs",
        "iscsi",
        "gcePersistentDisk",
        "awsElasticBlockStore",
        "gitRepo",
        "glusterfs",
        "rbd",
        "flexVolume",
        "cinder",
        "cephfs",
        "flocker",
        "fc",
        "azureFile",
        "vsphereVolume",
        "quobyte",
        "azureDisk",
        "photonPersistentDisk",
        "portworxVolume",
        "scaleIO",
        "storageos",
};

static const StructType *volume_source_type(VolumeType t) {
        for (size_t i = 0; i < ELEMENTSOF(volume_sources); i++)
                if (volume_sources[i].type == t)
                        return volume_sources[i].t;
        return NULL;
}

static void volume_free(void *base) {
        Volume *v = base;
        free(v->name);
        const StructType *t = volume_source_type(v->type);
        if (t)
                struct_done(t, &v->host_path);
}

static bool name_in(const char *s, const char *const *l, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (streq(s, l[i]))
                        return true;
        return false;
}

static int volume_decode(DecodeContext *c, const YamlNode *n, const char *path, void *base) {
        Volume *v = base;
        v->type = _VOLUME_TYPE_INVALID;
        if (n->type == YAML_NODE_NULL)
                return 0;
        if (n->type != YAML_NODE_MAP) {
                decode_error(c, n, path, "must be an object");
                return 0;
        }
        for (size_t i = 0; i < n->n; i++) {
                const YamlNode *k = n->pairs[i].key, *val = n->pairs[i].value;
                char p[PATH_BUF];
                path_join(p, sizeof(p), path, k->str);
                int r;

                if (streq(k->str, "name")) {
                        if (val->type != YAML_NODE_NULL &&
                            (r = decode_string(c, val, p, &v->name)) < 0)
                                return r;
                        continue;
                }
                if (name_in(k->str, apiserver_volumes, ELEMENTSOF(apiserver_volumes))) {
                        decode_error(c, k, p, "volume type \"%s\" needs an apiserver: use hostPath",
                                     k->str);
                        (void)strv_extend(&c->error_paths, path);
                        continue;
                }
                if (name_in(k->str, unsupported_volumes, ELEMENTSOF(unsupported_volumes))) {
                        decode_error(c, k, p,
                                     "volume type \"%s\" is not supported by nanolet: use hostPath "
                                     "(mounted by the host)",
                                     k->str);
                        (void)strv_extend(&c->error_paths, path);
                        continue;
                }
                size_t j;
                for (j = 0; j < ELEMENTSOF(volume_sources); j++)
                        if (streq(k->str, volume_sources[j].name))
                                break;
                if (j >= ELEMENTSOF(volume_sources)) {
                        decode_warning(c, k, p, "unknown field \"%s\"", p);
                        continue;
                }
                if (val->type == YAML_NODE_NULL)
                        continue;
                if (v->type >= 0) {
                        decode_error(c, k, p, "may not specify more than 1 volume type");
                        continue;
                }
                v->type = volume_sources[j].type;
                struct_init(volume_sources[j].t, &v->host_path);
                r = struct_decode(c, val, p, volume_sources[j].t, &v->host_path);
                if (r < 0)
                        return r;
        }
        return 0;
}

static const StructType volume_type = {
        .size = sizeof(Volume),
        .decode = volume_decode,
        .free = volume_free,
};

/* pod */

STRUCT_TYPE(host_alias_type, HostAlias, F("ip", FIELD_STRING, HostAlias, ip),
            F("hostnames", FIELD_STRV, HostAlias, hostnames));
STRUCT_TYPE(dns_option_type, PodDNSConfigOption, F("name", FIELD_STRING, PodDNSConfigOption, name),
            F("value", FIELD_STRING, PodDNSConfigOption, value));
STRUCT_TYPE(dns_config_type, PodDNSConfig, F("nameservers", FIELD_STRV, PodDNSConfig, nameservers),
            F("searches", FIELD_STRV, PodDNSConfig, searches),
            FA("options", PodDNSConfig, options, n_options, dns_option_type));

/* imagePullSecrets is a list of {name}; the model keeps just the names. */
static void pull_secrets_free(void *base) {
        strv_free(*(char ***)base);
}

static int pull_secrets_decode(DecodeContext *c, const YamlNode *n, const char *path, void *base) {
        char ***l = base;
        if (n->type == YAML_NODE_NULL)
                return 0;
        if (n->type != YAML_NODE_SEQ) {
                decode_error(c, n, path, "must be a list");
                return 0;
        }
        for (size_t i = 0; i < n->n; i++) {
                char p[PATH_BUF], q[PATH_BUF];
                path_index(p, sizeof(p), path, i);
                const YamlNode *item = n->items[i];
                if (item->type != YAML_NODE_MAP) {
                        decode_error(c, item, p, "must be an object");
                        continue;
                }
                for (size_t j = 0; j < item->n; j++) {
                        const YamlNode *k = item->pairs[j].key;
                        path_join(q, sizeof(q), p, k->str);
                        if (!streq(k->str, "name")) {
                                decode_warning(c, k, q, "unknown field \"%s\"", q);
                                continue;
                        }
                        _cleanup_free_ char *s = NULL;
                        int r = decode_string(c, item->pairs[j].value, q, &s);
                        if (r < 0)
                                return r;
                        if (s && (r = strv_consume(l, TAKE_PTR(s))) < 0)
                                return r;
                }
        }
        return 0;
}

static const StructType pull_secrets_type = {
        .size = sizeof(char **),
        .decode = pull_secrets_decode,
        .free = pull_secrets_free,
};

STRUCT_TYPE(os_type, PodOS, F("name", FIELD_ENUM, PodOS, name, .arg = &os_name_info));

STRUCT_TYPE(pod_spec_type, PodSpec, FA("volumes", PodSpec, volumes, n_volumes, volume_type),
            FA("initContainers", PodSpec, init_containers, n_init_containers, container_type),
            FA("containers", PodSpec, containers, n_containers, container_type),
            F("restartPolicy", FIELD_ENUM, PodSpec, restart_policy, .arg = &restart_policy_info),
            F("terminationGracePeriodSeconds", FIELD_OPT_INT64, PodSpec,
              termination_grace_period_seconds),
            F("activeDeadlineSeconds", FIELD_OPT_INT64, PodSpec, active_deadline_seconds),
            F("dnsPolicy", FIELD_ENUM, PodSpec, dns_policy, .arg = &dns_policy_info),
            F("nodeSelector", FIELD_MAP, PodSpec, node_selector),
            F("serviceAccountName", FIELD_STRING, PodSpec, service_account_name),
            F("serviceAccount", FIELD_STRING, PodSpec, service_account_name, .alias = true),
            F("nodeName", FIELD_STRING, PodSpec, node_name),
            F("hostNetwork", FIELD_BOOL, PodSpec, host_network),
            F("hostPID", FIELD_BOOL, PodSpec, host_pid),
            F("hostIPC", FIELD_BOOL, PodSpec, host_ipc),
            F("shareProcessNamespace", FIELD_BOOL, PodSpec, share_process_namespace),
            F("hostUsers", FIELD_OPT_BOOL, PodSpec, host_users),
            F("securityContext", FIELD_STRUCT_PTR, PodSpec, security_context,
              .arg = &pod_security_context_type),
            F("imagePullSecrets", FIELD_STRUCT, PodSpec, image_pull_secrets,
              .arg = &pull_secrets_type),
            F("hostname", FIELD_STRING, PodSpec, hostname),
            F("subdomain", FIELD_STRING, PodSpec, subdomain),
            FA("hostAliases", PodSpec, host_aliases, n_host_aliases, host_alias_type),
            F("priorityClassName", FIELD_STRING, PodSpec, priority_class_name),
            F("priority", FIELD_OPT_INT32, PodSpec, priority),
            F("dnsConfig", FIELD_STRUCT_PTR, PodSpec, dns_config, .arg = &dns_config_type),
            F("enableServiceLinks", FIELD_OPT_BOOL, PodSpec, enable_service_links),
            F("os", FIELD_STRUCT, PodSpec, os, .arg = &os_type), FSILENT("tolerations"),
            FIGN("automountServiceAccountToken"), FIGN("affinity"), FIGN("schedulerName"),
            FIGN("preemptionPolicy"), FIGN("topologySpreadConstraints"), FIGN("readinessGates"),
            FIGN("runtimeClassName"), FIGN("overhead"), FIGN("setHostnameAsFQDN"),
            FIGN("schedulingGates"), FIGN("resources"), FIGN("hostnameOverride"),
            FREJ("ephemeralContainers", "is not supported by nanolet (it needs an apiserver)"),
            FREJ("resourceClaims", "needs an apiserver (dynamic resource allocation)"));

/* Fields the API server sets: harmless in a manifest (kubeadm writes
 * creationTimestamp: null), so they are dropped silently. */
static const Field object_meta_fields[] = {
        F("name", FIELD_STRING, ObjectMeta, name),
        F("namespace", FIELD_STRING, ObjectMeta, namespace),
        F("uid", FIELD_STRING, ObjectMeta, uid),
        F("labels", FIELD_MAP, ObjectMeta, labels),
        F("annotations", FIELD_MAP, ObjectMeta, annotations),
        FSILENT("creationTimestamp"),
        FSILENT("resourceVersion"),
        FSILENT("generation"),
        FSILENT("selfLink"),
        FSILENT("managedFields"),
        FIGN("generateName"),
        FIGN("ownerReferences"),
        FIGN("finalizers"),
        FIGN("deletionTimestamp"),
        FIGN("deletionGracePeriodSeconds"),
        {},
};
const StructType object_meta_type = { .size = sizeof(ObjectMeta), .fields = object_meta_fields };

/* apiVersion/kind were checked by the caller (manifest.c dispatches on them). */
static const Field pod_fields[] = {
        FSILENT("apiVersion"),
        FSILENT("kind"),
        FSILENT("status"),
        F("metadata", FIELD_STRUCT, Pod, metadata, .arg = &object_meta_type),
        F("spec", FIELD_STRUCT, Pod, spec, .arg = &pod_spec_type),
        {},
};
const StructType pod_type = { .size = sizeof(Pod), .fields = pod_fields };

/* ---- ConfigMap and Secret ---- */

static int decode_base64_map(DecodeContext *c, const YamlNode *n, const char *path, StringMap *m) {
        if (n->type == YAML_NODE_NULL)
                return 0;
        if (n->type != YAML_NODE_MAP) {
                decode_error(c, n, path, "must be a map of base64 strings");
                return 0;
        }
        for (size_t i = 0; i < n->n; i++) {
                const YamlNode *k = n->pairs[i].key, *v = n->pairs[i].value;
                char p[PATH_BUF];
                path_key(p, sizeof(p), path, k->str);
                if (v->type == YAML_NODE_NULL)
                        continue;
                if (v->type != YAML_NODE_STRING) {
                        decode_error(c, v, p, "must be a base64 string");
                        continue;
                }
                /* as Go's StdEncoding reads []byte fields */
                _cleanup_free_ uint8_t *data = NULL;
                size_t len;
                int r = base64_decode_strict(v->str, v->str_len, BASE64_LINE_BREAKS, &data, &len);
                if (r == -ENOMEM)
                        return r;
                if (r < 0) {
                        decode_error(c, v, p, "illegal base64 data");
                        continue;
                }
                r = string_map_set(m, k->str, (const char *)data, len);
                if (r < 0)
                        return r;
        }
        return 0;
}

static void check_meta(DecodeContext *c, const YamlNode *doc, ObjectMeta *m) {
        const YamlNode *meta = yaml_map_get(doc, "metadata") ?: doc;
        const YamlNode *name = yaml_map_get(meta, "name") ?: meta;
        const YamlNode *ns = yaml_map_get(meta, "namespace") ?: meta;

        if (isempty(m->name))
                decode_error(c, name, "metadata.name", "name is required");
        else if (strlen(m->name) > 253 || !is_dns1123_subdomain(m->name))
                decode_error(c, name, "metadata.name",
                             "invalid value \"%s\": must be a lowercase RFC 1123 subdomain "
                             "(at most 253 characters)",
                             m->name);
        if (m->namespace && !is_dns1123_label(m->namespace))
                decode_error(c, ns, "metadata.namespace",
                             "invalid value \"%s\": must be a lowercase RFC 1123 label",
                             m->namespace);
}

static void check_keys(DecodeContext *c, const YamlNode *doc, const char *field, const StringMap *m,
                       const StringMap *other, const char *other_field) {
        const YamlNode *map = yaml_map_get(doc, field) ?: doc;
        for (size_t i = 0; i < m->n; i++) {
                const char *k = m->items[i].key;
                char p[PATH_BUF];
                path_key(p, sizeof(p), field, k);
                const YamlNode *kn = map;
                for (size_t j = 0; map->type == YAML_NODE_MAP && j < map->n; j++)
                        if (streq(map->pairs[j].key->str, k))
                                kn = map->pairs[j].key;
                if (config_key_dot_problem(k))
                        decode_error(c, kn, p, "invalid key \"%s\": %s", k,
                                     config_key_dot_problem(k));
                else if (!is_config_key(k))
                        decode_error(c, kn, p,
                                     "invalid key \"%s\": must consist of alphanumeric "
                                     "characters, '-', '_' or '.'",
                                     k);
                if (other && string_map_get(other, k))
                        decode_error(c, kn, p, "duplicate of key present in %s", other_field);
        }
}

static size_t map_size(const StringMap *m) {
        size_t s = 0;
        for (size_t i = 0; i < m->n; i++)
                s += strlen(m->items[i].key) + m->items[i].value_len;
        return s;
}

#define CONFIG_MAX_SIZE (1024 * 1024) /* Kubernetes' limit for ConfigMap and Secret */

static int namespace_default(ObjectMeta *m) {
        if (m->namespace)
                return 0;
        m->namespace = strdup("default");
        return m->namespace ? 0 : -ENOMEM;
}

int configmap_decode(const YamlNode *doc, const PodDecodeOptions *o, ConfigMap **ret,
                     Diagnostics *diag) {
        _cleanup_(configmap_freep) ConfigMap *cm = NULL;
        DecodeContext c = { .file = o ? o->file : NULL, .diag = diag };
        size_t errors = diag->n_errors;
        int r = 0;

        cm = calloc(1, sizeof(ConfigMap));
        if (!cm)
                return -ENOMEM;
        if (doc->type != YAML_NODE_MAP) {
                decode_error(&c, doc, "", "must be an object");
                goto finish;
        }
        for (size_t i = 0; i < doc->n && r >= 0; i++) {
                const YamlNode *k = doc->pairs[i].key, *v = doc->pairs[i].value;
                if (streq(k->str, "apiVersion") || streq(k->str, "kind"))
                        continue;
                if (streq(k->str, "metadata"))
                        r = struct_decode(&c, v, "metadata", &object_meta_type, &cm->metadata);
                else if (streq(k->str, "data"))
                        r = v->type == YAML_NODE_NULL ? 0 : decode_map(&c, v, "data", &cm->data);
                else if (streq(k->str, "binaryData"))
                        r = decode_base64_map(&c, v, "binaryData", &cm->binary_data);
                else if (streq(k->str, "immutable")) {
                        if (v->type == YAML_NODE_BOOL)
                                cm->immutable = v->b;
                        else if (v->type != YAML_NODE_NULL)
                                decode_error(&c, v, "immutable", "must be a boolean");
                } else
                        decode_warning(&c, k, k->str, "unknown field \"%s\"", k->str);
        }
        if (r < 0)
                goto finish;
        r = namespace_default(&cm->metadata);
        if (r < 0)
                goto finish;
        check_meta(&c, doc, &cm->metadata);
        check_keys(&c, doc, "data", &cm->data, NULL, NULL);
        check_keys(&c, doc, "binaryData", &cm->binary_data, &cm->data, "data");
        if (map_size(&cm->data) + map_size(&cm->binary_data) > CONFIG_MAX_SIZE)
                decode_error(&c, doc, "data", "too long: must have at most %d bytes",
                             CONFIG_MAX_SIZE);
finish:
        strv_free(c.error_paths);
        if (r < 0)
                return r;
        if (diag->n_errors > errors)
                return -EINVAL;
        *ret = TAKE_PTR(cm);
        return 0;
}

/* Keys each typed Secret must carry, as Kubernetes validates them. */
static const struct {
        SecretType type;
        const char *key;
} secret_required_keys[] = {
        { SECRET_TYPE_DOCKER_CONFIG_JSON, ".dockerconfigjson" },
        { SECRET_TYPE_DOCKERCFG, ".dockercfg" },
        { SECRET_TYPE_TLS, "tls.crt" },
        { SECRET_TYPE_TLS, "tls.key" },
        { SECRET_TYPE_SSH_AUTH, "ssh-privatekey" },
};

int secret_decode(const YamlNode *doc, const PodDecodeOptions *o, Secret **ret, Diagnostics *diag) {
        _cleanup_(secret_freep) Secret *s = NULL;
        _cleanup_(string_map_done) StringMap string_data = {};
        DecodeContext c = { .file = o ? o->file : NULL, .diag = diag };
        const YamlNode *type_node = doc;
        size_t errors = diag->n_errors;
        int r = 0;

        s = calloc(1, sizeof(Secret));
        if (!s)
                return -ENOMEM;
        if (doc->type != YAML_NODE_MAP) {
                decode_error(&c, doc, "", "must be an object");
                goto finish;
        }
        for (size_t i = 0; i < doc->n && r >= 0; i++) {
                const YamlNode *k = doc->pairs[i].key, *v = doc->pairs[i].value;
                if (streq(k->str, "apiVersion") || streq(k->str, "kind"))
                        continue;
                if (streq(k->str, "metadata"))
                        r = struct_decode(&c, v, "metadata", &object_meta_type, &s->metadata);
                else if (streq(k->str, "data"))
                        r = decode_base64_map(&c, v, "data", &s->data);
                else if (streq(k->str, "stringData"))
                        r = v->type == YAML_NODE_NULL
                                    ? 0
                                    : decode_map(&c, v, "stringData", &string_data);
                else if (streq(k->str, "type")) {
                        type_node = v;
                        if (v->type != YAML_NODE_NULL)
                                r = decode_string(&c, v, "type", &s->type_string);
                } else if (streq(k->str, "immutable")) {
                        if (v->type == YAML_NODE_BOOL)
                                s->immutable = v->b;
                        else if (v->type != YAML_NODE_NULL)
                                decode_error(&c, v, "immutable", "must be a boolean");
                } else
                        decode_warning(&c, k, k->str, "unknown field \"%s\"", k->str);
        }
        if (r < 0)
                goto finish;

        /* stringData is a write-only convenience: the API server merges it
         * over data, so a key in both takes the stringData value. */
        for (size_t i = 0; i < string_data.n; i++) {
                r = string_map_set(&s->data, string_data.items[i].key, string_data.items[i].value,
                                   string_data.items[i].value_len);
                if (r < 0)
                        goto finish;
        }

        if (isempty(s->type_string)) {
                free(s->type_string);
                s->type_string = strdup("Opaque");
                if (!s->type_string) {
                        r = -ENOMEM;
                        goto finish;
                }
        }
        s->type = secret_type_from_string(s->type_string);
        if (s->type < 0)
                s->type = SECRET_TYPE_OTHER;
        r = namespace_default(&s->metadata);
        if (r < 0)
                goto finish;

        check_meta(&c, doc, &s->metadata);
        check_keys(&c, doc, "data", &s->data, NULL, NULL);
        for (size_t i = 0; i < ELEMENTSOF(secret_required_keys); i++)
                if (s->type == secret_required_keys[i].type &&
                    !string_map_get(&s->data, secret_required_keys[i].key))
                        decode_error(&c, type_node, "data",
                                     "a Secret of type \"%s\" needs the key \"%s\"", s->type_string,
                                     secret_required_keys[i].key);
        if (map_size(&s->data) > CONFIG_MAX_SIZE)
                decode_error(&c, doc, "data", "too long: must have at most %d bytes",
                             CONFIG_MAX_SIZE);
finish:
        strv_free(c.error_paths);
        if (r < 0)
                return r;
        if (diag->n_errors > errors)
                return -EINVAL;
        *ret = TAKE_PTR(s);
        return 0;
}
