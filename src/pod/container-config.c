/* Pod spec + image config -> RuntimeContainerConfig. What kubelet computes
 * (kuberuntime_container.go generateContainerConfig, kubelet_pods.go
 * makeEnvironmentVariables/makeMounts, security_context.go, qos/policy.go,
 * cm/helpers_linux.go) plus what containerd's CRI layer adds on top
 * (Entrypoint/Cmd merge, image env under container env, user and groups
 * from the image's /etc/passwd and /etc/group, /etc/hostname,
 * /etc/resolv.conf and /dev/shm mounts). */
#include "container-config.h"
#include "pod-userns.h"

#include <assert.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "dirent-util.h"
#include "fileio.h"
#include "image-volumes.h"
#include "macro.h"
#include "pod-etc-files.h"
#include "rm-rf.h"
#include "string-util.h"
#include "strv.h"

#define GUARANTEED_OOM_SCORE_ADJ (-997)
#define BEST_EFFORT_OOM_SCORE_ADJ 1000
#define MIN_SHARES 2
#define MAX_SHARES 262144
#define SHARES_PER_CPU 1024
#define MIN_QUOTA_PERIOD 1000
#define QUOTA_PERIOD 100000
#define ETC_FILE_MAX (4U * 1024U * 1024U)

/* ---- an ordered environment (later definitions replace in place) ---- */

typedef struct EnvEntry {
        char *name;
        char *value;
} EnvEntry;

typedef struct EnvList {
        EnvEntry *items;
        size_t n;
} EnvList;

static void env_list_done(EnvList *l) {
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].name);
                free(l->items[i].value);
        }
        free(l->items);
        *l = (EnvList){};
}

static const char *env_list_get(const char *name, void *userdata) {
        const EnvList *l = userdata;
        for (size_t i = 0; i < l->n; i++)
                if (streq(l->items[i].name, name))
                        return l->items[i].value;
        return NULL;
}

/* Takes value. */
static int env_list_set(EnvList *l, const char *name, char *value) {
        for (size_t i = 0; i < l->n; i++)
                if (streq(l->items[i].name, name)) {
                        free(l->items[i].value);
                        l->items[i].value = value;
                        return 0;
                }
        EnvEntry *ni = realloc(l->items, (l->n + 1) * sizeof(*ni));
        if (!ni) {
                free(value);
                return -ENOMEM;
        }
        l->items = ni;
        char *nm = strdup(name);
        if (!nm) {
                free(value);
                return -ENOMEM;
        }
        l->items[l->n++] = (EnvEntry){ nm, value };
        return 0;
}

static int env_list_set_copy(EnvList *l, const char *name, const char *value) {
        char *v = strdup(value);
        return v ? env_list_set(l, name, v) : -ENOMEM;
}

/* validation.IsEnvVarName: [-._a-zA-Z][-._a-zA-Z0-9]* */
static bool is_env_var_name(const char *s) {
        if (isempty(s) || isdigit((unsigned char)s[0]))
                return false;
        for (const char *p = s; *p; p++)
                if (!isalnum((unsigned char)*p) && !strchr("-._", *p))
                        return false;
        return true;
}

static int add_warning(const ContainerBuildContext *ctx, char *msg) {
        if (!msg)
                return -ENOMEM;
        if (!ctx->warnings) {
                free(msg);
                return 0;
        }
        int r = strv_consume(ctx->warnings, msg);
        if (r < 0)
                free(msg);
        return r;
}

static const char *pod_ns(const ContainerBuildContext *ctx) {
        return ctx->pod->metadata.namespace;
}

static const char *pod_uid(const ContainerBuildContext *ctx) {
        return ctx->pod->metadata.uid ?: ctx->node ? ctx->node->pod_uid : NULL;
}

/* envFrom: every key of the ConfigMap/Secret, prefixed; invalid names are
 * skipped and reported once per source, as kubelet's warning event. */
static int env_from_map(const ContainerBuildContext *ctx, EnvList *env, const StringMap *m,
                        const char *prefix, const char *what, const char *name) {
        _cleanup_free_ char *invalid = NULL;
        size_t ilen = 0, icap = 0;
        int r;
        for (size_t i = 0; m && i < m->n; i++) {
                _cleanup_free_ char *k = strprintf("%s%s", strempty(prefix), m->items[i].key);
                if (!k)
                        return -ENOMEM;
                if (!is_env_var_name(k)) {
                        if ((ilen > 0 &&
                             (r = strbuf_append(&invalid, &ilen, &icap, ", ", 2)) < 0) ||
                            (r = strbuf_append(&invalid, &ilen, &icap, k, strlen(k))) < 0)
                                return r;
                        continue;
                }
                if ((r = env_list_set_copy(env, k, m->items[i].value)) < 0)
                        return r;
        }
        if (invalid)
                return add_warning(ctx,
                                   strprintf("Keys [%s] from the EnvFrom %s %s/%s were skipped "
                                             "since they are considered invalid environment "
                                             "variable names.",
                                             invalid, what, pod_ns(ctx), name));
        return 0;
}

static int env_from_sources(const ContainerBuildContext *ctx, EnvList *env, Error *err) {
        const Container *c = ctx->container;
        int r;
        for (size_t i = 0; i < c->n_env_from; i++) {
                const EnvFromSource *s = &c->env_from[i];
                if (s->config_map_ref) {
                        const ConfigMap *cm = pod_lookup_configmap(ctx->lookup, pod_ns(ctx),
                                                                   s->config_map_ref->name);
                        if (!cm) {
                                if (s->config_map_ref->optional)
                                        continue;
                                return error_set(err, -ENOENT, "configmap \"%s\" not found",
                                                 s->config_map_ref->name);
                        }
                        r = env_from_map(ctx, env, &cm->data, s->prefix, "configMap",
                                         s->config_map_ref->name);
                } else if (s->secret_ref) {
                        const Secret *sec =
                                pod_lookup_secret(ctx->lookup, pod_ns(ctx), s->secret_ref->name);
                        if (!sec) {
                                if (s->secret_ref->optional)
                                        continue;
                                return error_set(err, -ENOENT, "secret \"%s\" not found",
                                                 s->secret_ref->name);
                        }
                        r = env_from_map(ctx, env, &sec->data, s->prefix, "secret",
                                         s->secret_ref->name);
                } else
                        r = 0;
                if (r < 0)
                        return r;
        }
        return 0;
}

/* 1 with *ret set, 0 when an optional reference is missing (the variable is
 * then not defined at all, as kubelet does), or a negative errno. */
static int env_key_ref(const ContainerBuildContext *ctx, const KeySelector *k, bool secret,
                       char **ret, Error *err) {
        const StringMap *maps[2] = {};
        if (secret) {
                const Secret *s = pod_lookup_secret(ctx->lookup, pod_ns(ctx), k->name);
                if (!s)
                        return k->optional ? 0
                                           : error_set(err, -ENOENT, "secret \"%s\" not found",
                                                       k->name);
                maps[0] = &s->data;
        } else {
                const ConfigMap *cm = pod_lookup_configmap(ctx->lookup, pod_ns(ctx), k->name);
                if (!cm)
                        return k->optional ? 0
                                           : error_set(err, -ENOENT, "configmap \"%s\" not found",
                                                       k->name);
                maps[0] = &cm->data;
                maps[1] = &cm->binary_data;
        }
        for (size_t i = 0; i < ELEMENTSOF(maps); i++) {
                const KeyValue *kv = maps[i] ? string_map_get(maps[i], k->key) : NULL;
                if (kv) {
                        char *v = strdup(kv->value);
                        if (!v)
                                return -ENOMEM;
                        *ret = v;
                        return 1;
                }
        }
        if (k->optional)
                return 0;
        return error_set(err, -ENOENT, "couldn't find key %s in %s %s/%s", k->key,
                         secret ? "Secret" : "ConfigMap", pod_ns(ctx), k->name);
}

static int env_value_from(const ContainerBuildContext *ctx, const EnvVar *e, char **ret,
                          Error *err) {
        const EnvVarSource *s = e->value_from;
        int r;
        if (s->field_ref) {
                r = pod_field_ref_value(ctx->pod, ctx->node, s->field_ref->field_path, ret);
                if (r == -EINVAL)
                        return error_set(err, r, "env \"%s\": unsupported fieldPath \"%s\"",
                                         e->name, s->field_ref->field_path);
                return r < 0 ? r : 1;
        }
        if (s->resource_field_ref) {
                r = pod_resource_field_ref_value(ctx->pod, ctx->container, ctx->node,
                                                 s->resource_field_ref, ret);
                if (r < 0 && r != -ENOMEM)
                        return error_set(err, r, "env \"%s\": unable to resolve resource \"%s\"",
                                         e->name, s->resource_field_ref->resource);
                return r < 0 ? r : 1;
        }
        if (s->config_map_key_ref)
                return env_key_ref(ctx, s->config_map_key_ref, false, ret, err);
        if (s->secret_key_ref)
                return env_key_ref(ctx, s->secret_key_ref, true, ret, err);
        return 0;
}

/* kubelet's makeEnvironmentVariables: envFrom first, then env in order; a
 * value may reference variables defined before it. The image's env is not
 * visible to $(VAR) (kubelet never sees it); it is merged underneath later. */
static int build_container_env(const ContainerBuildContext *ctx, EnvList *env, Error *err) {
        const Container *c = ctx->container;
        int r;
        if ((r = env_from_sources(ctx, env, err)) < 0)
                return r;
        for (size_t i = 0; i < c->n_env; i++) {
                const EnvVar *e = &c->env[i];
                char *v = NULL;
                if (!isempty(e->value)) {
                        r = kube_expand(e->value, env_list_get, env, EXPANSION_MAX_VALUE, &v);
                        if (r == -E2BIG)
                                return error_set(
                                        err, r,
                                        "container \"%s\": env \"%s\" expands to more than %u "
                                        "bytes (the kernel's limit for one environment string)",
                                        c->name, e->name, EXPANSION_MAX_VALUE);
                        if (r < 0)
                                return r;
                } else if (e->value_from) {
                        r = env_value_from(ctx, e, &v, err);
                        if (r < 0)
                                return r;
                        if (r == 0)
                                continue;
                } else if (!(v = strdup(""))) {
                        return -ENOMEM;
                }
                if ((r = env_list_set(env, e->name, v)) < 0)
                        return r;
        }
        return 0;
}

/* containerd: image env first, container env replacing same names in place. */
static int merge_env(const ImageConfig *img, const EnvList *env, char ***ret) {
        /* Declared before the first goto: jumping past a _cleanup_ variable
         * would free an uninitialised pointer (gcc accepts it, clang refuses). */
        _cleanup_strv_free_ char **l = NULL;
        EnvList all = {};
        int r = 0;
        STRV_FOREACH(kv, img ? img->env : NULL) {
                const char *eq = strchr(*kv, '=');
                _cleanup_free_ char *k = eq ? strndup(*kv, (size_t)(eq - *kv)) : strdup(*kv);
                if (!k || (r = env_list_set_copy(&all, k, eq ? eq + 1 : "")) < 0) {
                        r = r < 0 ? r : -ENOMEM;
                        goto out;
                }
        }
        for (size_t i = 0; i < env->n; i++)
                if ((r = env_list_set_copy(&all, env->items[i].name, env->items[i].value)) < 0)
                        goto out;
        for (size_t i = 0; i < all.n; i++) {
                char *s = strprintf("%s=%s", all.items[i].name, all.items[i].value);
                if (!s || (r = strv_consume(&l, s)) < 0) {
                        free(s);
                        r = -ENOMEM;
                        goto out;
                }
        }
        if (!l && !(l = calloc(1, sizeof(char *)))) {
                r = -ENOMEM;
                goto out;
        }
        *ret = TAKE_PTR(l);
out:
        env_list_done(&all);
        return r;
}

/* ---- argv ---- */

static int expand_strv(const ContainerBuildContext *ctx, const char *field, char *const *in,
                       const EnvList *env, char ***out, Error *err) {
        size_t i = 0;
        int r;
        STRV_FOREACH(s, in) {
                char *v = NULL;
                r = kube_expand(*s, env_list_get, (void *)env, EXPANSION_MAX_VALUE, &v);
                if (r == -E2BIG)
                        return error_set(err, r,
                                         "container \"%s\": %s[%zu] expands to more than "
                                         "%u bytes (the kernel's limit for one argument)",
                                         ctx->container->name, field, i, EXPANSION_MAX_VALUE);
                if (r < 0)
                        return r;
                i++;
                if ((r = strv_consume(out, v)) < 0) {
                        free(v);
                        return r;
                }
        }
        return 0;
}

/* kubelet expands command/args; containerd then merges with the image:
 * command replaces Entrypoint (and drops Cmd), args replace Cmd. */
static int build_args(const ContainerBuildContext *ctx, const EnvList *env, char ***ret,
                      Error *err) {
        const Container *c = ctx->container;
        const ImageConfig *img = ctx->image;
        _cleanup_strv_free_ char **argv = NULL;
        int r;
        bool has_cmd = c->command && c->command[0], has_args = c->args && c->args[0];

        if (has_cmd) {
                if ((r = expand_strv(ctx, "command", c->command, env, &argv, err)) < 0)
                        return r;
        } else if (img) {
                /* an Entrypoint of [""] means "none" (docker's reset) */
                bool reset = strv_length(img->entrypoint) == 1 && isempty(img->entrypoint[0]);
                if (!reset)
                        STRV_FOREACH(s, img->entrypoint)
                                if ((r = strv_extend(&argv, *s)) < 0)
                                        return r;
        }
        if (has_args) {
                if ((r = expand_strv(ctx, "args", c->args, env, &argv, err)) < 0)
                        return r;
        } else if (!has_cmd && img) {
                STRV_FOREACH(s, img->cmd)
                        if ((r = strv_extend(&argv, *s)) < 0)
                                return r;
        }
        if (!argv || !argv[0])
                return error_set(err, -EINVAL, "no command specified");
        *ret = TAKE_PTR(argv);
        return 0;
}

/* ---- user and groups, read from the rootfs ---- */

typedef struct IdEntry {
        char *name;
        unsigned long id;
        unsigned long gid; /* passwd: primary group */
        char **members;    /* group: members */
} IdEntry;

static void id_entry_done(IdEntry *e) {
        free(e->name);
        strv_free(e->members);
        *e = (IdEntry){};
}

static bool parse_id(const char *s, unsigned long *ret) {
        if (isempty(s) || !isdigit((unsigned char)s[0]))
                return false;
        char *end;
        errno = 0;
        unsigned long v = strtoul(s, &end, 10);
        if (errno || *end || v > UINT32_MAX)
                return false;
        *ret = v;
        return true;
}

/* Reads /etc/passwd or /etc/group of the rootfs, resolving symlinks as if
 * the rootfs were "/" (a hostile image cannot point us at the host's). */
static int read_rootfs_file(const char *rootfs, const char *path, char **ret) {
        if (!rootfs)
                return -ENOENT;
        _cleanup_close_ int rfd = open(rootfs, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (rfd < 0)
                return -errno;
        _cleanup_close_ int fd = pod_open_in_root(rfd, path, O_RDONLY | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return fd;
        struct stat st;
        if (fstat(fd, &st) < 0)
                return -errno;
        if (!S_ISREG(st.st_mode))
                return -EBADFD;
        return read_full_fd(fd, ETC_FILE_MAX, ret, NULL);
}

/* Finds the passwd (is_group=false) or group entry whose name equals name
 * (name != NULL) or whose id equals id. 1 found, 0 not found. */
static int find_id_entry(const char *data, bool is_group, const char *name, unsigned long id,
                         IdEntry *ret) {
        _cleanup_free_ char *copy = strdup(data ?: "");
        if (!copy)
                return -ENOMEM;
        char *save = NULL;
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *f[7] = {};
                size_t nf = 0;
                for (char *p = line; nf < ELEMENTSOF(f);) {
                        f[nf++] = p;
                        p = strchr(p, ':');
                        if (!p)
                                break;
                        *p++ = 0;
                }
                unsigned long eid, egid = 0;
                if (nf < 3 || !parse_id(f[2], &eid))
                        continue;
                if (!is_group && (nf < 4 || !parse_id(f[3], &egid)))
                        continue;
                if (name ? !streq(f[0], name) : eid != id)
                        continue;
                IdEntry e = { .id = eid, .gid = egid, .name = strdup(f[0]) };
                if (!e.name)
                        return -ENOMEM;
                if (is_group && nf >= 4) {
                        char *ms = NULL;
                        for (char *m = strtok_r(f[3], ",", &ms); m; m = strtok_r(NULL, ",", &ms))
                                if (strv_extend(&e.members, m) < 0) {
                                        id_entry_done(&e);
                                        return -ENOMEM;
                                }
                }
                *ret = e;
                return 1;
        }
        return 0;
}

/* Groups listing username as a member (not its own same-named group): what
 * containerd's WithAdditionalGIDs adds. */
static int member_groups(const char *group_data, const char *username, gid_t **gids, size_t *n) {
        if (!group_data || !username)
                return 0;
        _cleanup_free_ char *copy = strdup(group_data);
        if (!copy)
                return -ENOMEM;
        char *save = NULL;
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
                char *f[4] = {};
                size_t nf = 0;
                for (char *p = line; nf < 4;) {
                        f[nf++] = p;
                        p = strchr(p, ':');
                        if (!p)
                                break;
                        *p++ = 0;
                }
                unsigned long gid;
                if (nf < 4 || !parse_id(f[2], &gid) || streq(f[0], username))
                        continue;
                char *ms = NULL;
                for (char *m = strtok_r(f[3], ",", &ms); m; m = strtok_r(NULL, ",", &ms))
                        if (streq(m, username)) {
                                gid_t *ng = realloc(*gids, (*n + 1) * sizeof(gid_t));
                                if (!ng)
                                        return -ENOMEM;
                                *gids = ng;
                                (*gids)[(*n)++] = (gid_t)gid;
                                break;
                        }
        }
        return 0;
}

static int add_gid(gid_t **gids, size_t *n, gid_t g) {
        for (size_t i = 0; i < *n; i++)
                if ((*gids)[i] == g)
                        return 0;
        gid_t *ng = realloc(*gids, (*n + 1) * sizeof(gid_t));
        if (!ng)
                return -ENOMEM;
        *gids = ng;
        (*gids)[(*n)++] = g;
        return 0;
}

static const OptionalInt *sc_run_as_user(const ContainerBuildContext *ctx) {
        const SecurityContext *c = ctx->container->security_context;
        const PodSecurityContext *p = ctx->pod->spec.security_context;
        if (c && c->run_as_user.set)
                return &c->run_as_user;
        return p && p->run_as_user.set ? &p->run_as_user : NULL;
}

static const OptionalInt *sc_run_as_group(const ContainerBuildContext *ctx) {
        const SecurityContext *c = ctx->container->security_context;
        const PodSecurityContext *p = ctx->pod->spec.security_context;
        if (c && c->run_as_group.set)
                return &c->run_as_group;
        return p && p->run_as_group.set ? &p->run_as_group : NULL;
}

static bool sc_run_as_non_root(const ContainerBuildContext *ctx) {
        const SecurityContext *c = ctx->container->security_context;
        const PodSecurityContext *p = ctx->pod->spec.security_context;
        if (c && c->run_as_non_root.set)
                return c->run_as_non_root.value;
        return p && p->run_as_non_root.set && p->run_as_non_root.value;
}

/* kubelet's verifyRunAsNonRoot, with its messages; format.Pod is
 * "<name>_<namespace>(<uid>)". */
static int verify_run_as_non_root(const ContainerBuildContext *ctx, Error *err) {
        if (!sc_run_as_non_root(ctx))
                return 0;
        const Pod *pod = ctx->pod;
        const char *cn = ctx->container->name;
        _cleanup_free_ char *fp = strprintf("%s_%s(%s)", pod->metadata.name,
                                            pod->metadata.namespace, strempty(pod_uid(ctx)));
        if (!fp)
                return -ENOMEM;
        const OptionalInt *u = sc_run_as_user(ctx);
        if (u)
                return u->value == 0 ? error_set(err, -EPERM,
                                                 "container's runAsUser breaks non-root "
                                                 "policy (pod: \"%s\", container: %s)",
                                                 fp, cn)
                                     : 0;
        const char *user = ctx->image ? ctx->image->user : NULL;
        _cleanup_free_ char *name = strndup(strempty(user), strcspn(strempty(user), ":"));
        if (!name)
                return -ENOMEM;
        unsigned long uid = 0;
        if (!isempty(name) && !parse_id(name, &uid))
                return error_set(err, -EPERM,
                                 "container has runAsNonRoot and image has non-numeric user "
                                 "(%s), cannot verify user is non-root (pod: \"%s\", "
                                 "container: %s)",
                                 name, fp, cn);
        if (uid == 0)
                return error_set(err, -EPERM,
                                 "container has runAsNonRoot and image will run as root "
                                 "(pod: \"%s\", container: %s)",
                                 fp, cn);
        return 0;
}

static int resolve_user(const ContainerBuildContext *ctx, RuntimeContainerConfig *c, Error *err) {
        _cleanup_free_ char *passwd = NULL, *group = NULL;
        _cleanup_(id_entry_done) IdEntry pw = {};
        int r;

        r = read_rootfs_file(ctx->rootfs, "/etc/passwd", &passwd);
        if (r == -ENOMEM)
                return r;
        r = read_rootfs_file(ctx->rootfs, "/etc/group", &group);
        if (r == -ENOMEM)
                return r;

        const OptionalInt *su = sc_run_as_user(ctx), *sg = sc_run_as_group(ctx);
        const char *user = ctx->image && !isempty(ctx->image->user) ? ctx->image->user : NULL;
        _cleanup_free_ char *uname = NULL, *gname = NULL;
        if (!su && user) {
                const char *colon = strchr(user, ':');
                uname = colon ? strndup(user, (size_t)(colon - user)) : strdup(user);
                gname = colon ? strdup(colon + 1) : NULL;
                if (!uname || (colon && !gname))
                        return -ENOMEM;
        }

        unsigned long uid = 0, gid = 0;
        bool have_pw;
        if (su) {
                uid = (unsigned long)su->value;
                r = find_id_entry(passwd, false, NULL, uid, &pw);
        } else if (uname && !parse_id(uname, &uid)) {
                r = find_id_entry(passwd, false, uname, 0, &pw);
                if (r == 0)
                        return error_set(err, -ENOENT,
                                         "unable to find user %s: no matching entries in "
                                         "passwd file",
                                         uname);
        } else
                r = find_id_entry(passwd, false, NULL, uid, &pw);
        if (r < 0)
                return r;
        have_pw = r > 0;
        if (have_pw) {
                uid = pw.id;
                gid = pw.gid;
        }

        if (sg)
                gid = (unsigned long)sg->value;
        else if (!isempty(gname) && !parse_id(gname, &gid)) {
                _cleanup_(id_entry_done) IdEntry gr = {};
                r = find_id_entry(group, true, gname, 0, &gr);
                if (r < 0)
                        return r;
                if (r == 0)
                        return error_set(err, -ENOENT,
                                         "unable to find group %s: no matching entries in "
                                         "group file",
                                         gname);
                gid = gr.id;
        }

        c->uid = (uid_t)uid;
        c->gid = (gid_t)gid;

        /* primary gid, the user's groups from the image, then fsGroup and
         * supplementalGroups (kubelet's order) */
        if ((r = add_gid(&c->additional_gids, &c->n_additional_gids, c->gid)) < 0)
                return r;
        _cleanup_free_ gid_t *mg = NULL;
        size_t nmg = 0;
        if ((r = member_groups(group, have_pw ? pw.name : NULL, &mg, &nmg)) < 0)
                return r;
        for (size_t i = 0; i < nmg; i++)
                if ((r = add_gid(&c->additional_gids, &c->n_additional_gids, mg[i])) < 0)
                        return r;
        const PodSecurityContext *psc = ctx->pod->spec.security_context;
        if (psc && psc->fs_group.set &&
            (r = add_gid(&c->additional_gids, &c->n_additional_gids, (gid_t)psc->fs_group.value)) <
                    0)
                return r;
        for (size_t i = 0; psc && i < psc->n_supplemental_groups; i++)
                if ((r = add_gid(&c->additional_gids, &c->n_additional_gids,
                                 (gid_t)psc->supplemental_groups[i])) < 0)
                        return r;
        return 0;
}

/* ---- namespaces ---- */

static int ns_path(RuntimeNamespace *ns, const char *path, const char *what, Error *err) {
        if (isempty(path))
                return error_set(err, -EINVAL, "no pinned %s namespace for the pod", what);
        char *p = strdup(path);
        if (!p)
                return -ENOMEM;
        *ns = (RuntimeNamespace){ RUNTIME_NS_PATH, p };
        return 0;
}

bool container_config_needs_network(const Container *c) {
        for (size_t i = 0; i < c->n_env; i++) {
                const EnvVarSource *src = c->env[i].value_from;
                if (src && src->field_ref && src->field_ref->field_path &&
                    startswith(src->field_ref->field_path, "status.podIP"))
                        return true;
        }
        for (size_t i = 0; i < c->n_volume_mounts; i++)
                if (!isempty(c->volume_mounts[i].sub_path) ||
                    !isempty(c->volume_mounts[i].sub_path_expr))
                        return true;
        return false;
}

bool pod_ipc_per_container(const Pod *pod) {
        const PodSpec *s = &pod->spec;
        return s->host_network && !s->host_ipc && !s->share_process_namespace &&
               s->n_init_containers == 0 && s->n_containers == 1;
}

static int build_namespaces(const ContainerBuildContext *ctx, RuntimeContainerConfig *c,
                            Error *err) {
        const PodSpec *s = &ctx->pod->spec;
        int r;
        /* UTS follows the network: hostNetwork pods see the node's hostname */
        if (s->host_network) {
                c->net.mode = c->uts.mode = RUNTIME_NS_HOST;
        } else if ((r = ns_path(&c->net, ctx->ns_net, "network", err)) < 0 ||
                   (r = ns_path(&c->uts, ctx->ns_uts, "UTS", err)) < 0)
                return r;
        if (s->host_ipc)
                c->ipc.mode = RUNTIME_NS_HOST;
        else if (pod_ipc_per_container(ctx->pod))
                c->ipc.mode = RUNTIME_NS_NEW;
        else if ((r = ns_path(&c->ipc, ctx->ns_ipc, "IPC", err)) < 0)
                return r;
        if (s->host_pid)
                c->pid.mode = RUNTIME_NS_HOST;
        else if (s->share_process_namespace) {
                if ((r = ns_path(&c->pid, ctx->ns_pid, "PID", err)) < 0)
                        return r;
        } else
                c->pid.mode = RUNTIME_NS_NEW;
        if (s->host_users.set && !s->host_users.value) {
                if (ctx->userns_host_id == 0)
                        return error_set(err, -EINVAL,
                                         "hostUsers is false but the pod has no ID range");
                c->userns_host_id = ctx->userns_host_id;
                c->userns_length = POD_USERNS_RANGE_LEN;
        }

        /* In its own user namespace the container's root may not set the
         * hostname of the pod's UTS namespace (the host's user namespace
         * owns it); the sandbox set it when it made it. */
        if (!s->host_network && c->userns_length == 0) {
                if ((r = pod_hostname(ctx->pod, ctx->node_hostname, &c->hostname)) < 0)
                        return error_set(err, r, "pod has no usable hostname");
        }
        return 0;
}

/* ---- mounts ---- */

typedef struct MountList {
        RuntimeMount *items;
        size_t n;
} MountList;

static void mount_list_done(MountList *l) {
        for (size_t i = 0; i < l->n; i++) {
                free(l->items[i].destination);
                free(l->items[i].source);
                free(l->items[i].type);
                strv_free(l->items[i].options);
        }
        free(l->items);
        *l = (MountList){};
}

static int strv_extend_all(char ***l, char *const *extra) {
        for (char *const *e = extra; e && *e; e++) {
                int r = strv_extend(l, *e);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int mount_list_add_bind_opts(MountList *l, const char *dest, const char *src, bool ro,
                                    const char *propagation, char *const *extra) {
        RuntimeMount *ni = realloc(l->items, (l->n + 1) * sizeof(*ni));
        if (!ni)
                return -ENOMEM;
        l->items = ni;
        RuntimeMount m = {
                .destination = strdup(dest),
                .source = strdup(src),
                .type = strdup("bind"),
        };
        int r = 0;
        if (!m.destination || !m.source || !m.type || (r = strv_extend(&m.options, "rbind")) < 0 ||
            (r = strv_extend(&m.options, propagation)) < 0 ||
            (r = strv_extend(&m.options, ro ? "ro" : "rw")) < 0 ||
            (r = strv_extend_all(&m.options, extra)) < 0) {
                free(m.destination);
                free(m.source);
                free(m.type);
                strv_free(m.options);
                return r < 0 ? r : -ENOMEM;
        }
        l->items[l->n++] = m;
        return 0;
}

static int mount_list_add_bind(MountList *l, const char *dest, const char *src, bool ro,
                               const char *propagation) {
        return mount_list_add_bind_opts(l, dest, src, ro, propagation, NULL);
}

/* "/etc/hosts/" and "/etc//hosts" are "/etc/hosts" (containerd compares
 * cleaned paths). */
static bool same_path(const char *a, const char *b) {
        for (;;) {
                while (*a == '/' && a[1] == '/')
                        a++;
                while (*b == '/' && b[1] == '/')
                        b++;
                if (*a == '/' && a[1] == 0 && *b == 0)
                        return true;
                if (*b == '/' && b[1] == 0 && *a == 0)
                        return true;
                if (*a != *b)
                        return false;
                if (*a == 0)
                        return true;
                a++, b++;
        }
}

static bool container_mounts_at(const Container *c, const char *path) {
        for (size_t i = 0; i < c->n_volume_mounts; i++)
                if (same_path(c->volume_mounts[i].mount_path, path))
                        return true;
        return false;
}

static bool path_has_backsteps(const char *p) {
        for (const char *s = p; s;) {
                const char *slash = strchr(s, '/');
                size_t n = slash ? (size_t)(slash - s) : strlen(s);
                if (n == 2 && strneq(s, "..", 2))
                        return true;
                s = slash ? slash + 1 : NULL;
        }
        return false;
}

/* kubelet's SafeMakeDir: creates the missing components of sub beneath
 * vol_fd, each opened without following symlinks, with the volume's mode. */
static int subpath_mkdir(int vol_fd, const char *sub, mode_t mode) {
        _cleanup_free_ char *copy = strdup(sub);
        if (!copy)
                return -ENOMEM;
        _cleanup_close_ int cur = fcntl(vol_fd, F_DUPFD_CLOEXEC, 3);
        if (cur < 0)
                return -errno;
        char *save = NULL;
        for (char *comp = strtok_r(copy, "/", &save); comp; comp = strtok_r(NULL, "/", &save)) {
                if (streq(comp, "."))
                        continue;
                if (mkdirat(cur, comp, mode) >= 0) {
                        int nfd =
                                openat(cur, comp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (nfd < 0)
                                return -errno;
                        (void)fchmod(nfd, mode); /* not subject to the agent's umask */
                        safe_close(cur);
                        cur = nfd;
                        continue;
                }
                if (errno != EEXIST)
                        return -errno;
                /* an existing component: follow it only if it stays inside */
                int nfd = pod_open_beneath(cur, comp, O_PATH | O_DIRECTORY, 0);
                if (nfd < 0)
                        return nfd;
                safe_close(cur);
                cur = nfd;
        }
        return 0;
}

/* Opens vol/sub without leaving vol (symlinks inside it are followed,
 * anything leading out is refused) and returns an O_PATH fd. Missing
 * directories are created as kubelet does. */
static int subpath_open(const char *vol, const char *sub, bool create, int *ret_fd) {
        _cleanup_close_ int vfd = open(vol, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (vfd < 0)
                return -errno;
        int fd = pod_open_beneath(vfd, sub, O_PATH, 0);
        if (fd == -ENOENT && create) {
                struct stat st;
                if (fstat(vfd, &st) < 0)
                        return -errno;
                int r = subpath_mkdir(vfd, sub, st.st_mode & 07777);
                if (r < 0)
                        return r;
                fd = pod_open_beneath(vfd, sub, O_PATH, 0);
        }
        if (fd < 0)
                return fd;
        *ret_fd = fd;
        return 0;
}

/* The fix for kubelet's CVE-2021-25741 class: the runtime must never get
 * the subPath as a path string, because it resolves that string again,
 * later, and a container sharing the volume can swap a component for a
 * symlink in between. The inode the fd pinned is bind-mounted (through its
 * /proc/self/fd magic link, which no rename or symlink can redirect) onto a
 * mount point in the attempt's own directory, which no container can
 * write, and that mount point is what the runtime mounts. The propagation
 * is the source mount's, so HostToContainer still sees mounts made below the
 * subPath on the host, and lazily unmounting it unmounts its copies. */
static int subpath_bind(int fd, const char *attempt_dir, size_t index, char **ret) {
        _cleanup_free_ char *dir = strprintf("%s/" CONTAINER_SUBPATHS_DIR, attempt_dir);
        _cleanup_free_ char *target =
                strprintf("%s/" CONTAINER_SUBPATHS_DIR "/%zu", attempt_dir, index);
        char name[32], src[64], dst[64];
        struct stat st;
        int r;

        if (!dir || !target)
                return -ENOMEM;
        if (fstat(fd, &st) < 0)
                return -errno;
        r = mkdir_p(dir, 0700);
        if (r < 0)
                return r;
        _cleanup_close_ int dfd = open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return -errno;
        /* a directory needs a directory to be mounted on, anything else a file */
        snprintf(name, sizeof(name), "%zu", index);
        if (S_ISDIR(st.st_mode)) {
                if (mkdirat(dfd, name, 0700) < 0)
                        return -errno;
        } else {
                _cleanup_close_ int f = openat(
                        dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
                if (f < 0)
                        return -errno;
        }
        _cleanup_close_ int tfd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        if (tfd < 0)
                return -errno;
        snprintf(src, sizeof(src), "/proc/self/fd/%d", fd);
        snprintf(dst, sizeof(dst), "/proc/self/fd/%d", tfd);
        /* recursive, as the runtime's own rbind of the volume would be */
        if (mount(src, dst, NULL, MS_BIND | MS_REC, NULL) < 0)
                return -errno;
        *ret = TAKE_PTR(target);
        return 0;
}

int container_subpaths_release(const char *attempt_dir) {
        _cleanup_free_ char *dir = strprintf("%s/" CONTAINER_SUBPATHS_DIR, attempt_dir);
        if (!dir)
                return -ENOMEM;
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return errno == ENOENT ? 0 : -errno;
        _cleanup_closedir_ DIR *d = NULL;
        int r = opendir_fd(dfd, NULL, 0, &d);
        if (r < 0)
                return r;
        int n = 0;
        FOREACH_DIRENT(de, d) {
                _cleanup_free_ char *p = strprintf("%s/%s", dir, de->d_name);
                if (!p)
                        return -ENOMEM;
                /* lazily, never through a symlink; a mount stacked on it
                 * (an earlier run's at the same attempt) goes too */
                while (umount2(p, MNT_DETACH | UMOUNT_NOFOLLOW) == 0)
                        n++;
                if (errno != EINVAL && errno != ENOENT && r == 0)
                        r = -errno;
                /* refuses (-EBUSY) rather than empties what is still mounted */
                int q = rm_rf_at(dfd, de->d_name);
                if (q < 0 && r == 0)
                        r = q;
        }
        if (r < 0)
                return r;
        if (rmdir(dir) < 0 && errno != ENOENT)
                return -errno;
        return n;
}

static const char *propagation_option(MountPropagation p) {
        switch (p) {
        case MOUNT_PROPAGATION_HOST_TO_CONTAINER:
                return "rslave";
        case MOUNT_PROPAGATION_BIDIRECTIONAL:
                return "rshared";
        case MOUNT_PROPAGATION_NONE:
        case _MOUNT_PROPAGATION_INVALID:
        case _MOUNT_PROPAGATION_MAX:
        default:
                return "rprivate";
        }
}

static bool is_privileged(const ContainerBuildContext *ctx) {
        const SecurityContext *sc = ctx->container->security_context;
        return sc && sc->privileged.set && sc->privileged.value;
}

static bool volume_read_only(const PodVolumes *v, const char *name) {
        for (size_t i = 0; v && i < v->n_items; i++)
                if (streq(v->items[i].name, name))
                        return v->items[i].read_only;
        return false;
}

typedef struct ExpandCheck {
        const EnvList *env;
        char *missing; /* first missing name */
} ExpandCheck;

static const char *expand_check_get(const char *name, void *userdata) {
        ExpandCheck *c = userdata;
        const char *v = env_list_get(name, (void *)c->env);
        if (isempty(v)) {
                if (!c->missing)
                        c->missing = strdup(name);
                return "";
        }
        return v;
}

static int volume_mount_one(const ContainerBuildContext *ctx, const EnvList *env, size_t index,
                            const VolumeMount *m, MountList *l, Error *err) {
        const char *cn = ctx->container->name;
        const char *vol = pod_volumes_get(ctx->volumes, m->name);
        bool image = pod_volumes_is_image(ctx->volumes, m->name);
        _cleanup_free_ char *image_target = NULL;
        int r;
        if (image) {
                /* mounted by the start before the bundle (image-volumes.h) */
                if (!ctx->attempt_dir)
                        return error_set(err, -EINVAL,
                                         "no attempt directory for image volume \"%s\"", m->name);
                r = image_volume_paths(ctx->attempt_dir, m->name, &image_target, NULL, NULL);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return error_set(err, r, "invalid image volume name \"%s\"", m->name);
                vol = image_target;
        }
        if (!vol)
                return error_set(err, -ENOENT,
                                 "cannot find volume \"%s\" to mount into container \"%s\"",
                                 m->name, cn);
        if (m->mount_propagation == MOUNT_PROPAGATION_BIDIRECTIONAL && !is_privileged(ctx))
                return error_set(err, -EPERM,
                                 "Bidirectional mount propagation is available only to "
                                 "privileged containers");

        _cleanup_free_ char *sub = NULL, *src = NULL;
        if (!isempty(m->sub_path_expr)) {
                /* kubelet's ExpandContainerVolumeMounts: an undefined or empty
                 * variable is an error, not a silent "" */
                ExpandCheck chk = { .env = env };
                r = kube_expand(m->sub_path_expr, expand_check_get, &chk, EXPANSION_MAX_VALUE,
                                &sub);
                _cleanup_free_ char *missing = chk.missing;
                if (r < 0)
                        return r;
                if (missing)
                        return error_set(err, -EINVAL, "missing value for %s", missing);
        } else if (!isempty(m->sub_path) && !(sub = strdup(m->sub_path)))
                return -ENOMEM;

        if (!isempty(sub)) {
                if (sub[0] == '/')
                        return error_set(err, -EINVAL,
                                         "error SubPath `%s` must not be an absolute path", sub);
                if (path_has_backsteps(sub))
                        return error_set(err, -EINVAL, "error SubPath `%s` must not contain '..'",
                                         sub);
                if (!ctx->attempt_dir)
                        return error_set(
                                err, -EINVAL,
                                "no attempt directory for the subPath of volumeMount \"%s\"",
                                m->name);
                _cleanup_close_ int fd = -EBADF;
                /* an image is read-only: a missing subPath is not created
                 * (kubelet: the runtime refuses it) */
                r = subpath_open(vol, sub, !image, &fd);
                if (r >= 0)
                        r = subpath_bind(fd, ctx->attempt_dir, index, &src);
                if (r == -ENOMEM)
                        return r;
                if (r == -ENOENT && image)
                        return error_set(err, r,
                                         "failed to prepare subPath for volumeMount \"%s\" "
                                         "of container \"%s\": subPath \"%s\" does not exist "
                                         "in the image",
                                         m->name, cn, sub);
                if (r < 0)
                        return error_set(err, r,
                                         "failed to prepare subPath for volumeMount \"%s\" "
                                         "of container \"%s\": %s",
                                         m->name, cn,
                                         r == -EXDEV || r == -ELOOP
                                                 ? "the subPath leaves the volume"
                                                 : strerror(-r));
        } else if (!(src = strdup(vol)))
                return -ENOMEM;

        bool ro = m->read_only || volume_read_only(ctx->volumes, m->name);
        /* as the image volume's own mount point is sealed (image-volumes.h):
         * the runtime's remount of the bind would otherwise clear them */
        static char *const image_opts[] = { "nosuid", "nodev", "noexec", NULL };
        return mount_list_add_bind_opts(l, m->mount_path, src, ro,
                                        propagation_option(m->mount_propagation),
                                        image ? image_opts : NULL);
}

static int termination_log_file(const char *path) {
        _cleanup_free_ char *dir = strdup(path);
        if (!dir)
                return -ENOMEM;
        char *slash = strrchr(dir, '/');
        if (slash && slash != dir) {
                *slash = 0;
                int r = mkdir_p(dir, 0750);
                if (r < 0)
                        return r;
        }
        _cleanup_close_ int fd =
                open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0666);
        if (fd < 0)
                return -errno;
        /* kubelet makes it 0666 so a non-root container user can write it */
        return fchmod(fd, 0666) < 0 ? -errno : 0;
}

static size_t path_depth(const char *p) {
        size_t d = 0;
        for (; *p; p++)
                if (*p == '/' && p[1] && p[1] != '/')
                        d++;
        return d;
}

/* containerd sorts mounts by depth so a parent is mounted before what is
 * mounted inside it; a stable insertion sort keeps equal depths in order. */
static void sort_mounts(MountList *l) {
        for (size_t i = 1; i < l->n; i++) {
                RuntimeMount m = l->items[i];
                size_t d = path_depth(m.destination), j = i;
                while (j > 0 && path_depth(l->items[j - 1].destination) > d) {
                        l->items[j] = l->items[j - 1];
                        j--;
                }
                l->items[j] = m;
        }
}

static int build_mounts(const ContainerBuildContext *ctx, const EnvList *env,
                        RuntimeContainerConfig *c, Error *err) {
        const Container *ct = ctx->container;
        const PodSpec *s = &ctx->pod->spec;
        bool ro_root = ct->security_context &&
                       ct->security_context->read_only_root_filesystem.set &&
                       ct->security_context->read_only_root_filesystem.value;
        _cleanup_(mount_list_done) MountList l = {};
        int r;

        for (size_t i = 0; i < ct->n_volume_mounts; i++)
                if ((r = volume_mount_one(ctx, env, i, &ct->volume_mounts[i], &l, err)) < 0)
                        return r;

        /* kubelet's /etc/hosts is read-write; containerd's hostname and
         * resolv.conf are read-only with a read-only rootfs */
        if (ctx->etc_hosts_path && !container_mounts_at(ct, "/etc/hosts") &&
            (r = mount_list_add_bind(&l, "/etc/hosts", ctx->etc_hosts_path, false, "rprivate")) < 0)
                return r;
        if (ctx->etc_hostname_path && !container_mounts_at(ct, "/etc/hostname") &&
            (r = mount_list_add_bind(&l, "/etc/hostname", ctx->etc_hostname_path, ro_root,
                                     "rprivate")) < 0)
                return r;
        if (ctx->resolv_conf_path && !container_mounts_at(ct, "/etc/resolv.conf") &&
            (r = mount_list_add_bind(&l, "/etc/resolv.conf", ctx->resolv_conf_path, ro_root,
                                     "rprivate")) < 0)
                return r;

        if (ctx->termination_log_path && !isempty(ct->termination_message_path)) {
                if ((r = termination_log_file(ctx->termination_log_path)) < 0)
                        return error_set(err, r, "failed to create termination log \"%s\": %s",
                                         ctx->termination_log_path, strerror(-r));
                r = mount_list_add_bind(&l, ct->termination_message_path, ctx->termination_log_path,
                                        false, "rprivate");
                if (r < 0)
                        return r;
        }

        /* /dev/shm: the pod's tmpfs, or the host's with hostIPC (containerd) */
        const char *shm = s->host_ipc ? "/dev/shm" : ctx->volumes ? ctx->volumes->shm_path : NULL;
        if (shm && !container_mounts_at(ct, "/dev/shm") &&
            (r = mount_list_add_bind(&l, "/dev/shm", shm, false, "rprivate")) < 0)
                return r;

        sort_mounts(&l);
        c->mounts = TAKE_PTR(l.items);
        c->n_mounts = l.n;
        l.n = 0;
        return 0;
}

/* ---- security ---- */

static const SeccompProfile *effective_seccomp(const ContainerBuildContext *ctx) {
        const SecurityContext *c = ctx->container->security_context;
        const PodSecurityContext *p = ctx->pod->spec.security_context;
        if (c && c->seccomp_profile && c->seccomp_profile->type >= 0)
                return c->seccomp_profile;
        if (p && p->seccomp_profile && p->seccomp_profile->type >= 0)
                return p->seccomp_profile;
        return NULL;
}

static int build_seccomp(const ContainerBuildContext *ctx, RuntimeContainerConfig *c, Error *err) {
        const SeccompProfile *sp = effective_seccomp(ctx);
        /* containerd applies no seccomp filter to privileged containers */
        if (c->privileged) {
                c->seccomp = RUNTIME_SECCOMP_UNCONFINED;
                return 0;
        }
        /* No profile: kubelet's seccompDefault decides. nanolet's default
         * is RuntimeDefault (docs/internals/runtime.md), kubelet's Unconfined. */
        if (!sp) {
                c->seccomp = ctx->no_seccomp_default ? RUNTIME_SECCOMP_UNCONFINED
                                                     : RUNTIME_SECCOMP_RUNTIME_DEFAULT;
                return 0;
        }
        if (sp->type == SECCOMP_PROFILE_RUNTIME_DEFAULT) {
                c->seccomp = RUNTIME_SECCOMP_RUNTIME_DEFAULT;
                return 0;
        }
        if (sp->type == SECCOMP_PROFILE_UNCONFINED) {
                c->seccomp = RUNTIME_SECCOMP_UNCONFINED;
                return 0;
        }
        const char *name = sp->localhost_profile;
        if (isempty(name) || name[0] == '/' || path_has_backsteps(name))
                return error_set(err, -EINVAL,
                                 "localhostProfile \"%s\" must be a relative path inside "
                                 "the seccomp profile directory",
                                 strempty(name));
        if (isempty(ctx->seccomp_dir))
                return error_set(err, -EINVAL, "no seccomp profile directory configured");
        if (!(c->seccomp_profile_path = strprintf("%s/%s", ctx->seccomp_dir, name)))
                return -ENOMEM;
        c->seccomp = RUNTIME_SECCOMP_LOCALHOST;
        return 0;
}

ContainerAppArmor container_apparmor(const Pod *pod, const Container *c, bool default_available,
                                     const char **ret_name) {
        AppArmorProfile p;
        bool privileged = c->security_context && c->security_context->privileged.set &&
                          c->security_context->privileged.value;

        if (!pod_container_apparmor(pod, c, &p))
                p = (AppArmorProfile){ .type = APPARMOR_PROFILE_RUNTIME_DEFAULT };
        switch (p.type) {
        case APPARMOR_PROFILE_LOCALHOST:
                if (ret_name)
                        *ret_name = p.localhost_profile;
                return CONTAINER_APPARMOR_LOCALHOST;
        case APPARMOR_PROFILE_RUNTIME_DEFAULT:
                return default_available && !privileged ? CONTAINER_APPARMOR_DEFAULT
                                                        : CONTAINER_APPARMOR_NONE;
        case APPARMOR_PROFILE_UNCONFINED:
        case _APPARMOR_PROFILE_TYPE_MAX:
        case _APPARMOR_PROFILE_TYPE_INVALID:
        default:
                return CONTAINER_APPARMOR_NONE;
        }
}

static int apparmor_admit_one(const Pod *pod, const Container *c, bool host_enabled,
                              char **ret_message) {
        const char *name = NULL;
        if (host_enabled ||
            container_apparmor(pod, c, false, &name) != CONTAINER_APPARMOR_LOCALHOST)
                return 0;
        *ret_message = strprintf("Cannot enforce AppArmor: AppArmor is not enabled on the host "
                                 "(container \"%s\" asks for the Localhost profile \"%s\")",
                                 strempty(c->name), strempty(name));
        return *ret_message ? -EPERM : -ENOMEM;
}

int container_apparmor_admit(const Pod *pod, bool host_enabled, char **ret_message) {
        const PodSpec *s = &pod->spec;
        int r;

        assert(ret_message);
        for (size_t i = 0; i < s->n_init_containers; i++)
                if ((r = apparmor_admit_one(pod, &s->init_containers[i], host_enabled,
                                            ret_message)) < 0)
                        return r;
        for (size_t i = 0; i < s->n_containers; i++)
                if ((r = apparmor_admit_one(pod, &s->containers[i], host_enabled, ret_message)) < 0)
                        return r;
        return 0;
}

bool container_apparmor_listed(const char *profiles, const char *name) {
        size_t l = strlen(name);

        for (const char *line = profiles; line && *line;) {
                const char *end = strchrnul(line, '\n');
                /* "name (enforce)"; a name may itself hold spaces */
                if ((size_t)(end - line) > l + 1 && strncmp(line, name, l) == 0 && line[l] == ' ' &&
                    line[l + 1] == '(')
                        return true;
                line = *end ? end + 1 : end;
        }
        return false;
}

static int build_apparmor(const ContainerBuildContext *ctx, RuntimeContainerConfig *c, Error *err) {
        const char *name = NULL;
        const char *cname = strempty(ctx->container->name);

        switch (container_apparmor(ctx->pod, ctx->container, ctx->apparmor_default, &name)) {
        case CONTAINER_APPARMOR_NONE:
                return 0;
        case CONTAINER_APPARMOR_DEFAULT:
                name = CONTAINER_APPARMOR_DEFAULT_PROFILE;
                break;
        case CONTAINER_APPARMOR_LOCALHOST:
                if (!ctx->apparmor_enabled)
                        return error_set(err, -EPERM,
                                         "container \"%s\": AppArmor is not enabled on the host, "
                                         "cannot apply the Localhost profile \"%s\"",
                                         cname, strempty(name));
                if (ctx->apparmor_profiles_path) {
                        _cleanup_free_ char *list = NULL;
                        int r = read_full_file_at(AT_FDCWD, ctx->apparmor_profiles_path,
                                                  CONTAINER_APPARMOR_PROFILES_MAX, &list, NULL);
                        if (r < 0)
                                return error_set(
                                        err, r,
                                        "container \"%s\": cannot read the loaded AppArmor "
                                        "profiles (%s): %s",
                                        cname, ctx->apparmor_profiles_path, strerror(-r));
                        if (!container_apparmor_listed(list, name))
                                return error_set(err, -ENOENT,
                                                 "container \"%s\": AppArmor profile \"%s\" is "
                                                 "not loaded on the host (Localhost profiles must "
                                                 "be loaded with apparmor_parser first)",
                                                 cname, name);
                }
                break;
        }
        if (!(c->apparmor_profile = strdup(name)))
                return -ENOMEM;
        return 0;
}

static int build_security(const ContainerBuildContext *ctx, RuntimeContainerConfig *c, Error *err) {
        const SecurityContext *sc = ctx->container->security_context;
        const PodSecurityContext *psc = ctx->pod->spec.security_context;
        int r;

        c->privileged = is_privileged(ctx);
        c->terminal = ctx->container->tty;
        if (sc) {
                c->readonly_rootfs =
                        sc->read_only_root_filesystem.set && sc->read_only_root_filesystem.value;
                /* kubelet's AddNoNewPrivileges: only an explicit false sets it */
                c->no_new_privileges =
                        sc->allow_privilege_escalation.set && !sc->allow_privilege_escalation.value;
                c->unmasked_proc = sc->proc_mount == PROC_MOUNT_UNMASKED;
                if (sc->capabilities) {
                        if (sc->capabilities->add &&
                            !(c->cap_add = strv_copy(sc->capabilities->add)))
                                return -ENOMEM;
                        if (sc->capabilities->drop &&
                            !(c->cap_drop = strv_copy(sc->capabilities->drop)))
                                return -ENOMEM;
                }
        }
        for (size_t i = 0; psc && i < psc->n_sysctls; i++) {
                char *s = strprintf("%s=%s", psc->sysctls[i].name, psc->sysctls[i].value);
                if (!s || (r = strv_consume(&c->sysctls, s)) < 0) {
                        free(s);
                        return -ENOMEM;
                }
        }
        r = build_apparmor(ctx, c, err);
        if (r < 0)
                return r;
        return build_seccomp(ctx, c, err);
}

/* ---- resources ---- */

uint64_t container_milli_cpu_to_shares(int64_t milli) {
        if (milli <= 0)
                return MIN_SHARES;
        /* kubelet's product overflows for absurd amounts; clamp first */
        if (milli > (int64_t)MAX_SHARES * 1000 / SHARES_PER_CPU)
                return MAX_SHARES;
        int64_t shares = milli * SHARES_PER_CPU / 1000;
        if (shares < MIN_SHARES)
                return MIN_SHARES;
        return shares > MAX_SHARES ? MAX_SHARES : (uint64_t)shares;
}

int64_t container_milli_cpu_to_quota(int64_t milli, uint64_t period) {
        if (milli <= 0)
                return 0;
        /* the kernel refuses a quota above POD_CPU_QUOTA_MAX_USEC (and the
         * product would overflow long before int64 does) */
        if (period > 0 && (uint64_t)milli > (uint64_t)POD_CPU_QUOTA_MAX_USEC * 1000 / period)
                return POD_CPU_QUOTA_MAX_USEC;
        int64_t quota = (int64_t)((uint64_t)milli * period / 1000);
        return quota < MIN_QUOTA_PERIOD ? MIN_QUOTA_PERIOD : quota;
}

/* API defaulting that static pods get too: an unset request equals the limit. */
static const OptionalQuantity *request_of(const ResourceRequirements *r, bool cpu) {
        const OptionalQuantity *q = cpu ? &r->requests.cpu : &r->requests.memory;
        const OptionalQuantity *l = cpu ? &r->limits.cpu : &r->limits.memory;
        return q->set ? q : l->set ? l : NULL;
}

static void qos_add(const Container *c, int64_t req[2], int64_t lim[2], bool set_req[2],
                    bool set_lim[2], bool *guaranteed) {
        for (int i = 0; i < 2; i++) {
                const OptionalQuantity *rq = request_of(&c->resources, i == 0);
                const OptionalQuantity *lq =
                        i == 0 ? &c->resources.limits.cpu : &c->resources.limits.memory;
                int64_t rv = rq ? (i == 0 ? rq->value.milli : rq->value.value) : 0;
                int64_t lv = lq->set ? (i == 0 ? lq->value.milli : lq->value.value) : 0;
                if (rv > 0) {
                        req[i] += rv;
                        set_req[i] = true;
                }
                if (lv > 0) {
                        lim[i] += lv;
                        set_lim[i] = true;
                } else
                        *guaranteed = false; /* limits must include cpu and memory */
        }
}

PodQOSClass pod_qos_class(const Pod *pod) {
        int64_t req[2] = {}, lim[2] = {};
        bool set_req[2] = {}, set_lim[2] = {}, guaranteed = true;
        const PodSpec *s = &pod->spec;
        for (size_t i = 0; i < s->n_init_containers; i++)
                qos_add(&s->init_containers[i], req, lim, set_req, set_lim, &guaranteed);
        for (size_t i = 0; i < s->n_containers; i++)
                qos_add(&s->containers[i], req, lim, set_req, set_lim, &guaranteed);
        if (!set_req[0] && !set_req[1] && !set_lim[0] && !set_lim[1])
                return POD_QOS_BEST_EFFORT;
        for (int i = 0; guaranteed && i < 2; i++)
                if (set_req[i] && (!set_lim[i] || lim[i] != req[i]))
                        guaranteed = false;
        if (guaranteed && set_req[0] == set_lim[0] && set_req[1] == set_lim[1])
                return POD_QOS_GUARANTEED;
        return POD_QOS_BURSTABLE;
}

const char *pod_qos_class_to_string(PodQOSClass q) {
        switch (q) {
        case POD_QOS_GUARANTEED:
                return "Guaranteed";
        case POD_QOS_BURSTABLE:
                return "Burstable";
        case POD_QOS_BEST_EFFORT:
                return "BestEffort";
        case _POD_QOS_CLASS_INVALID:
        case _POD_QOS_CLASS_MAX:
        default:
                return NULL;
        }
}

int container_oom_score_adj(const Pod *pod, const Container *c, uint64_t memory_capacity) {
        /* static pods are critical; node-critical ones get the Guaranteed score */
        if (pod->spec.priority_class_name &&
            streq(pod->spec.priority_class_name, "system-node-critical"))
                return GUARANTEED_OOM_SCORE_ADJ;
        switch (pod_qos_class(pod)) {
        case POD_QOS_GUARANTEED:
                return GUARANTEED_OOM_SCORE_ADJ;
        case POD_QOS_BEST_EFFORT:
                return BEST_EFFORT_OOM_SCORE_ADJ;
        case POD_QOS_BURSTABLE:
        case _POD_QOS_CLASS_INVALID:
        case _POD_QOS_CLASS_MAX:
        default:
                break;
        }
        const OptionalQuantity *mr = request_of(&c->resources, false);
        int64_t req = mr ? mr->value.value : 0;
        int64_t adj = memory_capacity > 0
                              ? 1000 - (int64_t)((__int128)1000 * req / (int64_t)memory_capacity)
                              : 1000;
        if (adj < 1000 + GUARANTEED_OOM_SCORE_ADJ)
                return 1000 + GUARANTEED_OOM_SCORE_ADJ;
        if (adj >= BEST_EFFORT_OOM_SCORE_ADJ)
                return BEST_EFFORT_OOM_SCORE_ADJ - 1;
        return (int)adj;
}

/* "2Mi" -> "2MB", "1Gi" -> "1GB": the names the hugetlb cgroup uses. */
int container_hugepage_cgroup_name(const char *page_size, char **ret) {
        Quantity q;
        if (quantity_parse(page_size, &q) < 0 || q.value <= 0)
                return -EINVAL;
        static const char *const units[] = { "B", "KB", "MB", "GB", "TB", "PB" };
        uint64_t v = (uint64_t)q.value;
        size_t u = 0;
        while (v >= 1024 && v % 1024 == 0 && u + 1 < ELEMENTSOF(units)) {
                v /= 1024;
                u++;
        }
        char *s = strprintf("%" PRIu64 "%s", v, units[u]);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

CgroupQos pod_cgroup_qos(const Pod *pod) {
        switch (pod_qos_class(pod)) {
        case POD_QOS_GUARANTEED:
                return CGROUP_QOS_GUARANTEED;
        case POD_QOS_BEST_EFFORT:
                return CGROUP_QOS_BEST_EFFORT;
        case POD_QOS_BURSTABLE:
        case _POD_QOS_CLASS_MAX:
        case _POD_QOS_CLASS_INVALID:
        default:
                return CGROUP_QOS_BURSTABLE;
        }
}

/* kubelet's PodRequests/PodLimits without overhead (static pods have
 * none): the app containers' sum, sidecars (init containers with
 * restartPolicy Always) added to it, then the maximum with each other init
 * container plus the sidecars started before it. */
typedef struct PodSums {
        int64_t v[3]; /* cpu request (milli), cpu limit (milli), memory limit */
        bool cpu_lim_all, mem_lim_all;
} PodSums;

static void container_amounts(const Container *c, int64_t v[3], PodSums *s) {
        const OptionalQuantity *rq = request_of(&c->resources, true);
        const ResourceList *l = &c->resources.limits;
        v[0] = rq ? MAX(rq->value.milli, 0) : 0;
        v[1] = l->cpu.set ? MAX(l->cpu.value.milli, 0) : 0;
        v[2] = l->memory.set ? MAX(l->memory.value.value, 0) : 0;
        if (v[1] == 0)
                s->cpu_lim_all = false;
        if (v[2] == 0)
                s->mem_lim_all = false;
}

static void pod_sums(const Pod *pod, PodSums *s) {
        const PodSpec *sp = &pod->spec;
        int64_t side[3] = {}, init_max[3] = {}, v[3];

        *s = (PodSums){ .cpu_lim_all = true, .mem_lim_all = true };
        for (size_t i = 0; i < sp->n_containers; i++) {
                container_amounts(&sp->containers[i], v, s);
                for (int k = 0; k < 3; k++)
                        s->v[k] += v[k];
        }
        for (size_t i = 0; i < sp->n_init_containers; i++) {
                const Container *c = &sp->init_containers[i];
                bool sidecar = c->restart_policy == RESTART_POLICY_ALWAYS;
                container_amounts(c, v, s);
                for (int k = 0; k < 3; k++) {
                        if (sidecar) {
                                s->v[k] += v[k];
                                side[k] += v[k];
                        }
                        int64_t need = sidecar ? side[k] : v[k] + side[k];
                        init_max[k] = MAX(init_max[k], need);
                }
        }
        for (int k = 0; k < 3; k++)
                s->v[k] = MAX(s->v[k], init_max[k]);
}

int64_t qos_burstable_milli_cpu(const Pod *const *pods, size_t n) {
        int64_t sum = 0;
        for (size_t i = 0; i < n; i++) {
                if (!pods[i] || pod_qos_class(pods[i]) != POD_QOS_BURSTABLE)
                        continue;
                PodSums s;
                pod_sums(pods[i], &s);
                sum += s.v[0];
        }
        return sum;
}

uint64_t qos_burstable_cpu_shares(int64_t milli) {
        return container_milli_cpu_to_shares(milli);
}

static int add_hugepages(CgroupResources *res, const Container *c, bool init) {
        const ResourceList *l = &c->resources.limits;
        for (size_t i = 0; i < l->n_hugepages; i++) {
                _cleanup_free_ char *name = NULL;
                int r = container_hugepage_cgroup_name(l->hugepages[i].page_size, &name);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        continue; /* the container's own config reports it */
                uint64_t v = (uint64_t)MAX(l->hugepages[i].value.value, 0);
                CgroupHugepageLimit *hp = (CgroupHugepageLimit *)res->hugepages;
                size_t k;
                for (k = 0; k < res->n_hugepages; k++)
                        if (streq(hp[k].page_size, name))
                                break;
                if (k == res->n_hugepages) {
                        hp = realloc(hp, (res->n_hugepages + 1) * sizeof *hp);
                        if (!hp)
                                return -ENOMEM;
                        res->hugepages = hp;
                        hp[res->n_hugepages++] = (CgroupHugepageLimit){ TAKE_PTR(name), 0 };
                }
                hp[k].limit = init ? MAX(hp[k].limit, v) : hp[k].limit + v;
        }
        return 0;
}

void pod_cgroup_resources_done(CgroupResources *res) {
        for (size_t i = 0; i < res->n_hugepages; i++)
                free((char *)res->hugepages[i].page_size);
        free((CgroupHugepageLimit *)res->hugepages);
        *res = (CgroupResources){};
}

int pod_cgroup_resources(const Pod *pod, bool cpu_cfs_quota, int64_t pids_limit,
                         CgroupResources *ret) {
        CgroupResources res = { .pids_limit = pids_limit > 0 ? pids_limit : 0 };
        PodSums s;
        int r;

        pod_sums(pod, &s);
        switch (pod_qos_class(pod)) {
        case POD_QOS_BEST_EFFORT:
                res.cpu_shares = MIN_SHARES;
                break;
        case POD_QOS_GUARANTEED:
        case POD_QOS_BURSTABLE:
        case _POD_QOS_CLASS_MAX:
        case _POD_QOS_CLASS_INVALID:
        default:
                res.cpu_shares = container_milli_cpu_to_shares(s.v[0]);
                if (s.cpu_lim_all) {
                        res.cpu_period = QUOTA_PERIOD;
                        res.cpu_quota = cpu_cfs_quota
                                                ? container_milli_cpu_to_quota(s.v[1], QUOTA_PERIOD)
                                                : -1;
                }
                if (s.mem_lim_all)
                        res.memory_limit = (uint64_t)s.v[2];
                break;
        }
        /* unlike cpu and memory, hugepages are limited whatever the class */
        const PodSpec *sp = &pod->spec;
        for (size_t i = 0; i < sp->n_containers; i++)
                if ((r = add_hugepages(&res, &sp->containers[i], false)) < 0)
                        goto fail;
        for (size_t i = 0; i < sp->n_init_containers; i++)
                if ((r = add_hugepages(&res, &sp->init_containers[i], true)) < 0)
                        goto fail;
        *ret = res;
        return 0;
fail:
        pod_cgroup_resources_done(&res);
        return r;
}

static int build_resources(const ContainerBuildContext *ctx, RuntimeContainerConfig *c,
                           Error *err) {
        const Container *ct = ctx->container;
        const ResourceList *lim = &ct->resources.limits;
        RuntimeResources *res = &c->resources;
        const char *uid = pod_uid(ctx);
        int r;

        if (isempty(uid) || isempty(ctx->container_id))
                return error_set(err, -EINVAL, "pod UID and container ID are required");
        const CgroupLayout def = { .driver = CGROUP_DRIVER_CGROUPFS, .root = "/" };
        c->cgroups_path = runtime_container_cgroups_path(
                ctx->cgroups ?: &def, pod_cgroup_qos(ctx->pod), uid, ctx->container_id);
        if (!c->cgroups_path)
                return -ENOMEM;

        const OptionalQuantity *cpu_req = request_of(&ct->resources, true);
        res->cpu_shares = container_milli_cpu_to_shares(cpu_req ? cpu_req->value.milli : 0);
        if (lim->cpu.set && lim->cpu.value.milli > 0 && !ctx->no_cpu_quota) {
                res->cpu_period = QUOTA_PERIOD;
                res->cpu_quota = container_milli_cpu_to_quota(lim->cpu.value.milli, QUOTA_PERIOD);
        }
        if (lim->memory.set && lim->memory.value.value > 0)
                res->memory_limit = lim->memory.value.value;

        if (lim->n_hugepages > 0) {
                res->hugepages = calloc(lim->n_hugepages, sizeof(*res->hugepages));
                if (!res->hugepages)
                        return -ENOMEM;
                for (size_t i = 0; i < lim->n_hugepages; i++) {
                        r = container_hugepage_cgroup_name(lim->hugepages[i].page_size,
                                                           &res->hugepages[i].page_size);
                        if (r == -ENOMEM)
                                return r;
                        if (r < 0)
                                return error_set(err, r, "invalid hugepages size \"%s\"",
                                                 lim->hugepages[i].page_size);
                        res->hugepages[i].limit = (uint64_t)MAX(lim->hugepages[i].value.value, 0);
                        res->n_hugepages++;
                }
        }
        c->oom_score_adj = container_oom_score_adj(ctx->pod, ct, pod_node_memory_bytes(ctx->node));
        c->oom_score_adj_set = true;
        return 0;
}

/* ---- annotations ---- */

static int add_annotation(char ***l, const char *k, const char *v) {
        char *s = strprintf("%s=%s", k, strempty(v));
        if (!s)
                return -ENOMEM;
        int r = strv_consume(l, s);
        if (r < 0)
                free(s);
        return r;
}

static int build_annotations(const ContainerBuildContext *ctx, RuntimeContainerConfig *c) {
        char attempt[32];
        snprintf(attempt, sizeof(attempt), "%u", ctx->attempt);
        int r;
        if ((r = add_annotation(&c->annotations, "io.kubernetes.pod.name",
                                ctx->pod->metadata.name)) < 0 ||
            (r = add_annotation(&c->annotations, "io.kubernetes.pod.namespace",
                                ctx->pod->metadata.namespace)) < 0 ||
            (r = add_annotation(&c->annotations, "io.kubernetes.pod.uid", pod_uid(ctx))) < 0 ||
            (r = add_annotation(&c->annotations, "io.kubernetes.container.name",
                                ctx->container->name)) < 0 ||
            (r = add_annotation(&c->annotations, "nanolet.io/attempt", attempt)) < 0)
                return r;
        return 0;
}

/* ---- the whole ---- */

/* Each value is bounded as it is expanded; many of them together can still
 * be more than execve() takes. */
static int check_exec_size(const ContainerBuildContext *ctx, const RuntimeContainerConfig *c,
                           Error *err) {
        size_t total = 0;
        STRV_FOREACH(s, c->env)
                total += strlen(*s) + 1;
        STRV_FOREACH(s, c->args)
                total += strlen(*s) + 1;
        if (total > EXPANSION_MAX_TOTAL)
                return error_set(err, -E2BIG,
                                 "container \"%s\": env, command and args expand to %zu "
                                 "bytes, more than %u (the kernel's limit for them "
                                 "together)",
                                 ctx->container->name, total, EXPANSION_MAX_TOTAL);
        return 0;
}

int container_config_build(const ContainerBuildContext *ctx, RuntimeContainerConfig *ret,
                           Error *err) {
        _cleanup_(runtime_container_config_done) RuntimeContainerConfig c = {};
        _cleanup_(env_list_done) EnvList env = {};
        int r;

        assert(ctx && ctx->pod && ctx->container && ret);

        if (isempty(ctx->rootfs) || ctx->rootfs[0] != '/')
                return error_set(err, -EINVAL, "container rootfs must be an absolute path");
        if (!(c.rootfs = strdup(ctx->rootfs)))
                return -ENOMEM;

        if ((r = verify_run_as_non_root(ctx, err)) < 0 ||
            (r = build_container_env(ctx, &env, err)) < 0 ||
            (r = merge_env(ctx->image, &env, &c.env)) < 0 ||
            (r = build_args(ctx, &env, &c.args, err)) < 0 ||
            (r = check_exec_size(ctx, &c, err)) < 0)
                return r;

        const char *cwd = !isempty(ctx->container->working_dir) ? ctx->container->working_dir
                          : ctx->image && !isempty(ctx->image->working_dir)
                                  ? ctx->image->working_dir
                                  : "/";
        if (!(c.cwd = strdup(cwd)))
                return -ENOMEM;

        if ((r = resolve_user(ctx, &c, err)) < 0 || (r = build_namespaces(ctx, &c, err)) < 0 ||
            (r = build_security(ctx, &c, err)) < 0 || (r = build_mounts(ctx, &env, &c, err)) < 0 ||
            (r = build_resources(ctx, &c, err)) < 0 || (r = build_annotations(ctx, &c)) < 0)
                return r;

        *ret = c;
        c = (RuntimeContainerConfig){};
        return 0;
}
