/* container_config_build(): Kubernetes' rules for argv, env, user, namespaces,
 * mounts, security and resources, checked on the RuntimeContainerConfig built
 * from real manifests and a fake rootfs in a temporary directory. subPath
 * bind mounts are made for real, in a mount namespace of the test's own (a
 * user namespace too when not root); without one those tests are skipped. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "container-config.h"
#include "json-util.h"
#include "fileio.h"
#include "manifest.h"
#include "string-util.h"
#include "strv.h"

typedef struct Fixture {
        ManifestObject **objs;
        size_t n;
        const Pod *pod;
        char dir[64];
        char *rootfs;
        char *attempt_dir;
        ImageConfig img;
        PodNodeInfo node;
        PodObjectLookup lookup;
        PodVolumes vols;
        ContainerBuildContext ctx;
        RuntimeContainerConfig c;
        Error err;
        char **warnings;
} Fixture;

static const ConfigMap *fx_cm(void *u, const char *ns, const char *name) {
        Fixture *f = u;
        for (size_t i = 0; i < f->n; i++)
                if (f->objs[i]->kind == MANIFEST_KIND_CONFIGMAP &&
                    streq(f->objs[i]->namespace, ns) && streq(f->objs[i]->name, name))
                        return f->objs[i]->configmap;
        return NULL;
}

static const Secret *fx_secret(void *u, const char *ns, const char *name) {
        Fixture *f = u;
        for (size_t i = 0; i < f->n; i++)
                if (f->objs[i]->kind == MANIFEST_KIND_SECRET && streq(f->objs[i]->namespace, ns) &&
                    streq(f->objs[i]->name, name))
                        return f->objs[i]->secret;
        return NULL;
}

static void write_file(const char *dir, const char *name, const char *content) {
        char *p = strprintf("%s/%s", dir, name);
        assert_non_null(p);
        assert_int_equal(write_file_atomic(p, content, strlen(content), 0644), 0);
        free(p);
}

static char *pathj(const char *a, const char *b) {
        char *p = strprintf("%s/%s", a, b);
        assert_non_null(p);
        return p;
}

static void fx_init(Fixture *f, const char *yaml) {
        *f = (Fixture){};
        ManifestParseOptions o = {
                .filename = "t.yaml",
                .node_name = "node1",
                .source_id = "file:/x",
                .config_source = "file",
        };
        Diagnostics d;
        diagnostics_init(&d);
        int r = manifest_parse_buffer(yaml, strlen(yaml), &o, &f->objs, &f->n, &d);
        for (size_t i = 0; r < 0 && i < d.n; i++) {
                char *s = diag_to_string(&d.items[i]);
                fprintf(stderr, "%s\n", s);
                free(s);
        }
        diagnostics_deinit(&d);
        assert_int_equal(r, 0);
        const char *uid = NULL;
        for (size_t i = 0; i < f->n; i++)
                if (f->objs[i]->kind == MANIFEST_KIND_POD) {
                        f->pod = f->objs[i]->pod;
                        uid = f->objs[i]->uid;
                }
        assert_non_null(f->pod);

        strcpy(f->dir, "/tmp/test-ccfg-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        f->rootfs = pathj(f->dir, "rootfs");
        f->attempt_dir = pathj(f->dir, "attempt");
        char *etc = pathj(f->rootfs, "etc");
        assert_int_equal(mkdir_p(etc, 0755), 0);
        write_file(etc, "passwd",
                   "root:x:0:0:root:/root:/bin/sh\n"
                   "app:x:1000:1000::/home/app:/bin/sh\n"
                   "www:x:33:33::/var/www:/bin/sh\n");
        write_file(etc, "group",
                   "root:x:0:\n"
                   "app:x:1000:app\n"
                   "www-data:x:33:\n"
                   "video:x:44:app,www\n"
                   "audio:x:29:app\n");
        free(etc);

        f->node = (PodNodeInfo){ .node_name = "node1",
                                 .pod_uid = uid,
                                 .cpu_count = 4,
                                 .memory_bytes = 8ULL << 30,
                                 .ephemeral_storage_bytes = 100ULL << 30 };
        f->lookup = (PodObjectLookup){ fx_cm, fx_secret, f };
        f->ctx = (ContainerBuildContext){
                .pod = f->pod,
                .container = &f->pod->spec.containers[0],
                .image = &f->img,
                .node = &f->node,
                .lookup = &f->lookup,
                .container_id = "uid1-c-0",
                .attempt = 0,
                .rootfs = f->rootfs,
                .attempt_dir = f->attempt_dir,
                .volumes = &f->vols,
                .ns_net = "/run/nanolet/ns/u/net",
                .ns_ipc = "/run/nanolet/ns/u/ipc",
                .ns_uts = "/run/nanolet/ns/u/uts",
                .ns_pid = "/run/nanolet/ns/u/pid",
                .node_hostname = "node1",
                .seccomp_dir = "/var/lib/nanolet/seccomp",
                .warnings = &f->warnings,
        };
}

static void rm_rf(const char *p) {
        char *cmd = strprintf("rm -rf '%s'", p);
        assert_int_equal(system(cmd), 0);
        free(cmd);
}

static void fx_done(Fixture *f) {
        runtime_container_config_done(&f->c);
        image_config_done(&f->img);
        pod_volumes_done(&f->vols);
        strv_free(f->warnings);
        manifest_objects_free(f->objs, f->n);
        assert_true(container_subpaths_release(f->attempt_dir) >= 0);
        rm_rf(f->dir);
        free(f->rootfs);
        free(f->attempt_dir);
}

static int fx_build(Fixture *f) {
        runtime_container_config_done(&f->c);
        f->c = (RuntimeContainerConfig){};
        f->err = (Error){};
        return container_config_build(&f->ctx, &f->c, &f->err);
}

static void fx_build_ok(Fixture *f) {
        int r = fx_build(f);
        if (r < 0)
                fprintf(stderr, "error: %s\n", f->err.message);
        assert_int_equal(r, 0);
}

static char **strv_make(const char *first, ...) {
        char **l = NULL;
        va_list ap;
        va_start(ap, first);
        for (const char *s = first; s; s = va_arg(ap, const char *))
                assert_int_equal(strv_extend(&l, s), 0);
        va_end(ap);
        return l;
}

static void assert_strv(char **got, const char *first, ...) {
        va_list ap;
        va_start(ap, first);
        size_t i = 0;
        for (const char *s = first; s; s = va_arg(ap, const char *), i++) {
                assert_non_null(got);
                assert_non_null(got[i]);
                assert_string_equal(got[i], s);
        }
        va_end(ap);
        assert_true(!got || !got[i]);
}

static const char *env_get(const RuntimeContainerConfig *c, const char *name) {
        size_t l = strlen(name);
        STRV_FOREACH(e, c->env)
                if (strneq(*e, name, l) && (*e)[l] == '=')
                        return *e + l + 1;
        return NULL;
}

static const RuntimeMount *mount_at(const RuntimeContainerConfig *c, const char *dest) {
        for (size_t i = 0; i < c->n_mounts; i++)
                if (streq(c->mounts[i].destination, dest))
                        return &c->mounts[i];
        return NULL;
}

#define POD_HEAD                                                                                   \
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: prod\n"                   \
        "  labels: {app: web}\n  annotations: {team: blue}\nspec:\n"

/* ---- argv ---- */

static void run_argv(const char *container, char **ep, char **cmd, const char *first, ...) {
        Fixture f;
        char *yaml =
                strprintf(POD_HEAD "  containers:\n  - name: c\n    image: busybox\n%s", container);
        fx_init(&f, yaml);
        f.img.entrypoint = ep;
        f.img.cmd = cmd;
        fx_build_ok(&f);
        va_list ap;
        va_start(ap, first);
        size_t i = 0;
        for (const char *s = first; s; s = va_arg(ap, const char *), i++)
                assert_string_equal(f.c.args[i], s);
        va_end(ap);
        assert_null(f.c.args[i]);
        fx_done(&f);
        free(yaml);
}

static void test_argv_precedence(void **state) {
        (void)state;
        /* neither: Entrypoint + Cmd */
        run_argv("", strv_make("/ep", "e1", NULL), strv_make("c1", NULL), "/ep", "e1", "c1", NULL);
        /* command only: Cmd ignored */
        run_argv("    command: [/bin/x]\n", strv_make("/ep", NULL), strv_make("c1", NULL), "/bin/x",
                 NULL);
        /* args only: Entrypoint + args */
        run_argv("    args: [a1, a2]\n", strv_make("/ep", NULL), strv_make("c1", NULL), "/ep", "a1",
                 "a2", NULL);
        /* both */
        run_argv("    command: [/bin/x]\n    args: [a1]\n", strv_make("/ep", NULL),
                 strv_make("c1", NULL), "/bin/x", "a1", NULL);
}

static void test_argv_none(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f, POD_HEAD "  containers:\n  - name: c\n    image: busybox\n");
        assert_int_equal(fx_build(&f), -EINVAL);
        assert_string_equal(f.err.message, "no command specified");
        fx_done(&f);
}

/* ---- env ---- */

static void test_env_order_expansion(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f, POD_HEAD "  containers:\n  - name: c\n    image: busybox\n"
                             "    command: [sh, -c, 'echo $(A) $(B) $$(A) $(NOPE) $(PATH)']\n"
                             "    args: ['$(C)']\n"
                             "    env:\n"
                             "    - {name: A, value: one}\n"
                             "    - {name: B, value: '$(A)-two'}\n"
                             "    - {name: C, value: '$(D)x$$y'}\n"
                             "    - {name: D, value: late}\n"
                             "    - {name: HOME, value: /h}\n"
                             "    - {name: A, value: again}\n");
        f.img.env = strv_make("PATH=/usr/bin", "HOME=/root", NULL);
        fx_build_ok(&f);
        /* image env first, container values replace in place, order kept */
        assert_strv(f.c.env, "PATH=/usr/bin", "HOME=/h", "A=again", "B=one-two", "C=$(D)x$y",
                    "D=late", NULL);
        /* command/args see the final container env, not the image's */
        assert_string_equal(f.c.args[2], "echo again one-two $(A) $(NOPE) $(PATH)");
        assert_string_equal(f.c.args[3], "$(D)x$y");
        fx_done(&f);
}

static const char *lookup_v(const char *name, void *userdata) {
        (void)userdata;
        return streq(name, "V") ? "val" : NULL;
}

static void test_expand_edge_cases(void **state) {
        (void)state;
        char *out;
        assert_int_equal(kube_expand("$(unterminated", lookup_v, NULL, EXPANSION_MAX_VALUE, &out),
                         0);
        assert_string_equal(out, "$(unterminated");
        free(out);
        assert_int_equal(kube_expand("a$", lookup_v, NULL, EXPANSION_MAX_VALUE, &out), 0);
        assert_string_equal(out, "a$");
        free(out);
        assert_int_equal(kube_expand("$x$$$$(V)$(V)$()", lookup_v, NULL, EXPANSION_MAX_VALUE, &out),
                         0);
        assert_string_equal(out, "$x$$(V)val$()");
        free(out);
}

/* The manifest alone cannot size a value built from a ConfigMap's: the
 * bound is applied again when the container is created. */
static void test_expand_bounded(void **state) {
        (void)state;
        Fixture f;
        char *out = NULL;

        assert_int_equal(kube_expand("$(V)$(V)", lookup_v, NULL, 6, &out), 0);
        assert_string_equal(out, "valval");
        free(out);
        out = NULL;
        assert_int_equal(kube_expand("$(V)$(V)", lookup_v, NULL, 5, &out), -E2BIG);
        assert_null(out);
        assert_int_equal(kube_expand("abcdef", lookup_v, NULL, 5, &out), -E2BIG);

        /* 1000 bytes from the ConfigMap, 256 times: 256,000 bytes */
        char big[1001];
        memset(big, 'x', 1000);
        big[1000] = 0;
        char refs[256 * 4 + 1] = "";
        for (size_t i = 0; i < 256; i++)
                strcat(refs, "$(A)");
        char *yaml = strprintf(
                POD_HEAD
                "  containers:\n  - name: c\n    image: busybox\n    command: [x]\n"
                "    env:\n"
                "    - {name: A, valueFrom: {configMapKeyRef: {name: big, key: k}}}\n"
                "    - {name: B, value: '%s'}\n"
                "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, namespace: prod}\n"
                "data: {k: %s}\n",
                refs, big);
        fx_init(&f, yaml);
        assert_int_equal(fx_build(&f), -E2BIG);
        assert_string_equal(f.err.message, "container \"c\": env \"B\" expands to more than "
                                           "131071 bytes (the kernel's limit for one environment "
                                           "string)");
        fx_done(&f);
        free(yaml);

        /* the same in args */
        yaml = strprintf(
                POD_HEAD
                "  containers:\n  - name: c\n    image: busybox\n    command: [x]\n"
                "    args: [a, '%s']\n"
                "    env:\n"
                "    - {name: A, valueFrom: {configMapKeyRef: {name: big, key: k}}}\n"
                "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, namespace: prod}\n"
                "data: {k: %s}\n",
                refs, big);
        fx_init(&f, yaml);
        assert_int_equal(fx_build(&f), -E2BIG);
        assert_string_equal(f.err.message, "container \"c\": args[1] expands to more than "
                                           "131071 bytes (the kernel's limit for one argument)");
        fx_done(&f);
        free(yaml);

        /* each value fits, all of them together do not: 20 x 128,000 bytes */
        char *env = strdup("");
        for (size_t i = 0; i < 20; i++) {
                char *e = strprintf("%s    - {name: B%zu, value: '%.512s'}\n", env, i, refs);
                free(env);
                env = e;
        }
        yaml = strprintf(
                POD_HEAD
                "  containers:\n  - name: c\n    image: busybox\n    command: [x]\n"
                "    env:\n"
                "    - {name: A, valueFrom: {configMapKeyRef: {name: big, key: k}}}\n"
                "%s"
                "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: big, namespace: prod}\n"
                "data: {k: %s}\n",
                env, big);
        fx_init(&f, yaml);
        assert_int_equal(fx_build(&f), -E2BIG);
        assert_non_null(strstr(f.err.message, "container \"c\": env, command and args expand to "));
        assert_non_null(strstr(f.err.message, "more than 2097152 (the kernel's limit for them "
                                              "together)"));
        fx_done(&f);
        free(yaml);
        free(env);
}

static void test_env_field_refs(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f, POD_HEAD
                "  containers:\n  - name: c\n    image: busybox\n    command: [x]\n"
                "    resources: {limits: {memory: 256Mi}, requests: {cpu: 250m}}\n"
                "    env:\n"
                "    - {name: NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}\n"
                "    - {name: NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}\n"
                "    - {name: U, valueFrom: {fieldRef: {fieldPath: metadata.uid}}}\n"
                "    - {name: L, valueFrom: {fieldRef: {fieldPath: \"metadata.labels['app']\"}}}\n"
                "    - {name: AN, valueFrom: {fieldRef: {fieldPath: "
                "\"metadata.annotations['team']\"}}}\n"
                "    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}\n"
                "    - {name: IP, valueFrom: {fieldRef: {fieldPath: status.podIP}}}\n"
                "    - {name: IPS, valueFrom: {fieldRef: {fieldPath: status.podIPs}}}\n"
                "    - {name: HIP, valueFrom: {fieldRef: {fieldPath: status.hostIP}}}\n"
                "    - {name: MEM, valueFrom: {resourceFieldRef: {resource: limits.memory, "
                "divisor: 1Mi}}}\n"
                "    - {name: CPU, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}\n"
                "    - {name: RCPU, valueFrom: {resourceFieldRef: {resource: requests.cpu, "
                "divisor: 1m}}}\n");
        char *ips[] = { "10.86.0.5", "fd00::5", NULL };
        char *hips[] = { "192.168.1.2", NULL };
        f.node.pod_ips = ips;
        f.node.host_ips = hips;
        fx_build_ok(&f);
        assert_string_equal(env_get(&f.c, "NAME"), "web-node1");
        assert_string_equal(env_get(&f.c, "NS"), "prod");
        assert_string_equal(env_get(&f.c, "U"), f.node.pod_uid);
        assert_string_equal(env_get(&f.c, "L"), "web");
        assert_string_equal(env_get(&f.c, "AN"), "blue");
        assert_string_equal(env_get(&f.c, "NODE"), "node1");
        assert_string_equal(env_get(&f.c, "IP"), "10.86.0.5");
        assert_string_equal(env_get(&f.c, "IPS"), "10.86.0.5,fd00::5");
        assert_string_equal(env_get(&f.c, "HIP"), "192.168.1.2");
        assert_string_equal(env_get(&f.c, "MEM"), "256");
        assert_string_equal(env_get(&f.c, "CPU"), "4"); /* no limit: node allocatable */
        assert_string_equal(env_get(&f.c, "RCPU"), "250");
        fx_done(&f);
}

#define CM_SECRET                                                                                  \
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: prod}\n"           \
        "data: {level: debug, '1st': one, mode: fast}\n"                                           \
        "---\napiVersion: v1\nkind: Secret\nmetadata: {name: sec, namespace: prod}\n"              \
        "stringData: {password: hunter2, token: abc}\n"

static void test_env_configmap_secret(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f, POD_HEAD
                "  containers:\n  - name: c\n    image: busybox\n    command: [x]\n"
                "    envFrom:\n"
                "    - {configMapRef: {name: cfg}, prefix: CFG_}\n"
                "    - {secretRef: {name: sec}}\n"
                "    - {configMapRef: {name: absent, optional: true}}\n"
                "    - {configMapRef: {name: cfg}}\n"
                "    env:\n"
                "    - {name: LVL, valueFrom: {configMapKeyRef: {name: cfg, key: level}}}\n"
                "    - {name: PW, valueFrom: {secretKeyRef: {name: sec, key: password}}}\n"
                "    - {name: OPT, valueFrom: {secretKeyRef: {name: sec, key: nokey, optional: "
                "true}}}\n"
                "    - {name: OPT2, valueFrom: {configMapKeyRef: {name: absent, key: k, optional: "
                "true}}}\n"
                "    - {name: X, value: '$(CFG_mode)/$(token)'}\n" CM_SECRET);
        fx_build_ok(&f);
        assert_string_equal(env_get(&f.c, "CFG_level"), "debug");
        assert_string_equal(env_get(&f.c, "CFG_1st"), "one");
        assert_string_equal(env_get(&f.c, "level"), "debug");
        assert_null(env_get(&f.c, "1st"));
        assert_string_equal(env_get(&f.c, "password"), "hunter2");
        assert_string_equal(env_get(&f.c, "LVL"), "debug");
        assert_string_equal(env_get(&f.c, "PW"), "hunter2");
        assert_null(env_get(&f.c, "OPT"));
        assert_null(env_get(&f.c, "OPT2"));
        assert_string_equal(env_get(&f.c, "X"), "fast/abc");
        assert_non_null(f.warnings);
        assert_string_equal(f.warnings[0], "Keys [1st] from the EnvFrom configMap prod/cfg "
                                           "were skipped since they are considered invalid "
                                           "environment variable names.");
        fx_done(&f);
}

static void run_env_error(const char *env, int error, const char *msg) {
        Fixture f;
        char *yaml = strprintf(POD_HEAD "  containers:\n  - name: c\n    image: busybox\n"
                                        "    command: [x]\n%s" CM_SECRET,
                               env);
        fx_init(&f, yaml);
        assert_int_equal(fx_build(&f), error);
        assert_string_equal(f.err.message, msg);
        fx_done(&f);
        free(yaml);
}

static void test_env_missing_refs(void **state) {
        (void)state;
        run_env_error(
                "    env:\n    - {name: A, valueFrom: {configMapKeyRef: {name: nope, key: k}}}\n",
                -ENOENT, "configmap \"nope\" not found");
        run_env_error(
                "    env:\n    - {name: A, valueFrom: {secretKeyRef: {name: nope, key: k}}}\n",
                -ENOENT, "secret \"nope\" not found");
        run_env_error(
                "    env:\n    - {name: A, valueFrom: {configMapKeyRef: {name: cfg, key: k}}}\n",
                -ENOENT, "couldn't find key k in ConfigMap prod/cfg");
        run_env_error("    env:\n    - {name: A, valueFrom: {secretKeyRef: {name: sec, key: k}}}\n",
                      -ENOENT, "couldn't find key k in Secret prod/sec");
        run_env_error("    envFrom:\n    - {secretRef: {name: gone}}\n", -ENOENT,
                      "secret \"gone\" not found");
}

/* ---- workingDir, user ---- */

static void test_working_dir(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f, POD_HEAD "  containers:\n  - {name: c, image: b, command: [x]}\n"
                             "  - {name: d, image: b, command: [x], workingDir: /srv}\n");
        fx_build_ok(&f);
        assert_string_equal(f.c.cwd, "/");
        f.img.working_dir = strdup("/app");
        fx_build_ok(&f);
        assert_string_equal(f.c.cwd, "/app");
        f.ctx.container = &f.pod->spec.containers[1];
        fx_build_ok(&f);
        assert_string_equal(f.c.cwd, "/srv");
        fx_done(&f);
}

static void test_user_from_image(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f, POD_HEAD "  securityContext: {supplementalGroups: [5000], fsGroup: 2000}\n"
                             "  containers:\n  - {name: c, image: b, command: [x]}\n");
        f.img.user = strdup("app:www-data");
        fx_build_ok(&f);
        assert_int_equal(f.c.uid, 1000);
        assert_int_equal(f.c.gid, 33);
        /* primary gid, app's groups from /etc/group, fsGroup, supplementalGroups */
        assert_int_equal(f.c.n_additional_gids, 5);
        gid_t want[] = { 33, 44, 29, 2000, 5000 };
        for (size_t i = 0; i < 5; i++)
                assert_int_equal(f.c.additional_gids[i], want[i]);

        free(f.img.user);
        f.img.user = strdup("www");
        fx_build_ok(&f);
        assert_int_equal(f.c.uid, 33);
        assert_int_equal(f.c.gid, 33);

        free(f.img.user);
        f.img.user = strdup("1234:44");
        fx_build_ok(&f);
        assert_int_equal(f.c.uid, 1234);
        assert_int_equal(f.c.gid, 44);

        free(f.img.user);
        f.img.user = strdup("nobody");
        assert_int_equal(fx_build(&f), -ENOENT);
        assert_string_equal(f.err.message,
                            "unable to find user nobody: no matching entries in passwd file");
        fx_done(&f);
}

static void test_user_run_as(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f, POD_HEAD "  securityContext: {runAsUser: 1000, runAsGroup: 7}\n"
                             "  containers:\n  - {name: c, image: b, command: [x]}\n"
                             "  - name: d\n    image: b\n    command: [x]\n"
                             "    securityContext: {runAsUser: 33}\n");
        f.img.user = strdup("root");
        fx_build_ok(&f);
        assert_int_equal(f.c.uid, 1000);
        assert_int_equal(f.c.gid, 7);
        f.ctx.container = &f.pod->spec.containers[1];
        fx_build_ok(&f);
        assert_int_equal(f.c.uid, 33);
        assert_int_equal(f.c.gid, 7);
        fx_done(&f);
}

static void test_run_as_non_root(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f, POD_HEAD "  securityContext: {runAsNonRoot: true}\n"
                             "  containers:\n  - {name: c, image: b, command: [x]}\n"
                             "  - name: d\n    image: b\n    command: [x]\n"
                             "    securityContext: {runAsUser: 0}\n");
        assert_int_equal(fx_build(&f), -EPERM);
        char *want = strprintf("container has runAsNonRoot and image will run as root "
                               "(pod: \"web-node1_prod(%s)\", container: c)",
                               f.node.pod_uid);
        assert_string_equal(f.err.message, want);
        free(want);
        f.img.user = strdup("app");
        assert_int_equal(fx_build(&f), -EPERM);
        assert_non_null(strstr(f.err.message, "image has non-numeric user (app)"));
        free(f.img.user);
        f.img.user = strdup("1000");
        fx_build_ok(&f);
        f.ctx.container = &f.pod->spec.containers[1];
        assert_int_equal(fx_build(&f), -EPERM);
        assert_non_null(strstr(f.err.message, "container's runAsUser breaks non-root policy"));
        fx_done(&f);
}

/* ---- namespaces ---- */

static void test_user_namespace(void **state) {
        (void)state;
        Fixture f;
        /* the host's by default, and with hostUsers: true */
        fx_init(&f, POD_HEAD
                "  hostUsers: true\n  containers:\n  - {name: c, image: b, command: [x]}\n");
        f.ctx.userns_host_id = 131072;
        fx_build_ok(&f);
        assert_int_equal(f.c.userns_length, 0);
        fx_done(&f);

        fx_init(&f, POD_HEAD
                "  hostUsers: false\n  containers:\n  - {name: c, image: b, command: [x]}\n");
        /* never the host's namespace in place of the pod's own */
        assert_int_equal(fx_build(&f), -EINVAL);
        assert_non_null(strstr(f.err.message, "no ID range"));
        f.ctx.userns_host_id = 131072;
        fx_build_ok(&f);
        assert_int_equal(f.c.userns_host_id, 131072);
        assert_int_equal(f.c.userns_length, 65536);
        /* the sandbox's UTS namespace has it; root of the pod's user
         * namespace could not set it */
        assert_null(f.c.hostname);
        fx_done(&f);
}

static void test_namespaces(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f, POD_HEAD "  containers:\n  - {name: c, image: b, command: [x]}\n");
        fx_build_ok(&f);
        assert_int_equal(f.c.net.mode, RUNTIME_NS_PATH);
        assert_string_equal(f.c.net.path, "/run/nanolet/ns/u/net");
        assert_int_equal(f.c.ipc.mode, RUNTIME_NS_PATH);
        assert_int_equal(f.c.uts.mode, RUNTIME_NS_PATH);
        assert_int_equal(f.c.pid.mode, RUNTIME_NS_NEW);
        assert_string_equal(f.c.hostname, "web-node1");
        fx_done(&f);

        fx_init(&f, POD_HEAD "  hostNetwork: true\n  hostPID: true\n  hostIPC: true\n"
                             "  containers:\n  - {name: c, image: b, command: [x]}\n");
        fx_build_ok(&f);
        assert_int_equal(f.c.net.mode, RUNTIME_NS_HOST);
        assert_int_equal(f.c.uts.mode, RUNTIME_NS_HOST);
        assert_int_equal(f.c.ipc.mode, RUNTIME_NS_HOST);
        assert_int_equal(f.c.pid.mode, RUNTIME_NS_HOST);
        assert_null(f.c.hostname);
        /* hostIPC: the host's /dev/shm */
        assert_string_equal(mount_at(&f.c, "/dev/shm")->source, "/dev/shm");
        fx_done(&f);

        /* hostNetwork with one container: runc makes its IPC namespace
         * (no pin); with a second container (or an init container) the
         * pod's pinned one is shared. */
        fx_init(&f, POD_HEAD "  hostNetwork: true\n"
                             "  containers:\n  - {name: c, image: b, command: [x]}\n");
        fx_build_ok(&f);
        assert_true(pod_ipc_per_container(f.pod));
        assert_int_equal(f.c.net.mode, RUNTIME_NS_HOST);
        assert_int_equal(f.c.ipc.mode, RUNTIME_NS_NEW);
        assert_null(f.c.ipc.path);
        fx_done(&f);
        fx_init(&f, POD_HEAD "  hostNetwork: true\n"
                             "  containers:\n  - {name: c, image: b, command: [x]}\n"
                             "  - {name: d, image: b, command: [x]}\n");
        fx_build_ok(&f);
        assert_false(pod_ipc_per_container(f.pod));
        assert_int_equal(f.c.ipc.mode, RUNTIME_NS_PATH);
        assert_string_equal(f.c.ipc.path, "/run/nanolet/ns/u/ipc");
        fx_done(&f);
        fx_init(&f, POD_HEAD "  hostNetwork: true\n"
                             "  initContainers:\n  - {name: i, image: b, command: [x]}\n"
                             "  containers:\n  - {name: c, image: b, command: [x]}\n");
        fx_build_ok(&f);
        assert_false(pod_ipc_per_container(f.pod));
        assert_int_equal(f.c.ipc.mode, RUNTIME_NS_PATH);
        fx_done(&f);

        fx_init(&f, POD_HEAD "  shareProcessNamespace: true\n  hostname: h1\n"
                             "  containers:\n  - {name: c, image: b, command: [x]}\n");
        fx_build_ok(&f);
        assert_int_equal(f.c.pid.mode, RUNTIME_NS_PATH);
        assert_string_equal(f.c.pid.path, "/run/nanolet/ns/u/pid");
        assert_string_equal(f.c.hostname, "h1");
        fx_done(&f);
}

/* ---- mounts ---- */

static void add_volume(Fixture *f, const char *name, const char *path, bool ro) {
        PodVolumes *v = &f->vols;
        v->items = realloc(v->items, (v->n_items + 1) * sizeof(*v->items));
        assert_non_null(v->items);
        v->items[v->n_items++] =
                (PodVolumePath){ .name = strdup(name), .host_path = strdup(path), .read_only = ro };
}

static void add_image_volume(Fixture *f, const char *name) {
        PodVolumes *v = &f->vols;
        v->items = realloc(v->items, (v->n_items + 1) * sizeof(*v->items));
        assert_non_null(v->items);
        v->items[v->n_items++] =
                (PodVolumePath){ .name = strdup(name), .image = true, .read_only = true };
}

/* A subPath is mounted from <attempt>/subpaths/<index>, a bind mount of
 * the very inode the subPath named when the config was built. */
static void assert_subpath_mount(const Fixture *f, const RuntimeMount *m, size_t index,
                                 const char *want) {
        assert_non_null(m);
        char *p = strprintf("%s/subpaths/%zu", f->attempt_dir, index);
        assert_string_equal(m->source, p);
        struct stat got, exp;
        assert_int_equal(lstat(p, &got), 0);
        assert_int_equal(lstat(want, &exp), 0);
        assert_true(got.st_dev == exp.st_dev && got.st_ino == exp.st_ino);
        free(p);
}

static bool write_proc(const char *path, const char *content) {
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return false;
        bool ok = write(fd, content, strlen(content)) == (ssize_t)strlen(content);
        close(fd);
        return ok;
}

/* Group setup: a private mount namespace, so subPath bind mounts stay in
 * the test (and die with it); *state says whether one could be had. */
static int enter_mount_namespace(void **state) {
        static bool ok;
        uid_t uid = geteuid();
        gid_t gid = getegid();
        char map[64];

        *state = &ok;
        if (unshare(uid == 0 ? CLONE_NEWNS : CLONE_NEWNS | CLONE_NEWUSER) < 0)
                return 0;
        if (uid != 0) {
                /* created files need both ids mapped */
                snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
                if (!write_proc("/proc/self/uid_map", map) ||
                    !write_proc("/proc/self/setgroups", "deny"))
                        return 0;
                snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
                if (!write_proc("/proc/self/gid_map", map))
                        return 0;
        }
        ok = mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == 0;
        return 0;
}

static void skip_without_mounts(void **state) {
        if (!*(bool *)*state)
                skip();
}

static void assert_options(const RuntimeMount *m, const char *a, const char *b, const char *c) {
        assert_non_null(m);
        assert_string_equal(m->type, "bind");
        assert_strv(m->options, a, b, c, NULL);
}

static void test_mounts(void **state) {
        skip_without_mounts(state);
        Fixture f;
        fx_init(&f, POD_HEAD
                "  volumes:\n  - {name: data, emptyDir: {}}\n"
                "  - {name: cfg, configMap: {name: x}}\n"
                "  - {name: host, hostPath: {path: /tmp}}\n"
                "  containers:\n  - name: c\n    image: b\n    command: [x]\n"
                "    env: [{name: SUB, value: logs}]\n"
                "    volumeMounts:\n"
                "    - {name: data, mountPath: /data}\n"
                "    - {name: cfg, mountPath: /etc/cfg}\n"
                "    - {name: host, mountPath: /h, readOnly: true, mountPropagation: "
                "HostToContainer}\n"
                "    - {name: data, mountPath: /sub, subPath: a/b}\n"
                "    - {name: data, mountPath: /expr, subPathExpr: '$(SUB)/x'}\n"
                "    - {name: data, mountPath: /etc/resolv.conf, subPath: resolv}\n"
                "    - {name: data, mountPath: /etc/file, subPath: file, readOnly: true}\n");
        char *data = pathj(f.dir, "data"), *shm = pathj(f.dir, "shm");
        assert_int_equal(mkdir(data, 0750), 0);
        write_file(data, "file", "x");
        add_volume(&f, "data", data, false);
        add_volume(&f, "cfg", "/nonexistent/cfg", true);
        add_volume(&f, "host", "/tmp", false);
        f.vols.shm_path = strdup(shm);
        f.ctx.etc_hosts_path = "/p/etc-hosts";
        f.ctx.etc_hostname_path = "/p/hostname";
        f.ctx.resolv_conf_path = "/p/resolv.conf";
        char *tlog = pathj(f.dir, "containers/c/abcd");
        f.ctx.termination_log_path = tlog;
        fx_build_ok(&f);

        const RuntimeMount *m = mount_at(&f.c, "/data");
        assert_options(m, "rbind", "rprivate", "rw");
        assert_string_equal(m->source, data);
        assert_options(mount_at(&f.c, "/etc/cfg"), "rbind", "rprivate",
                       "ro"); /* configMap: always ro */
        assert_options(mount_at(&f.c, "/h"), "rbind", "rslave", "ro");
        m = mount_at(&f.c, "/sub");
        assert_options(m, "rbind", "rprivate", "rw");
        char *sub = pathj(data, "a/b");
        assert_subpath_mount(&f, m, 3, sub);
        struct stat st;
        assert_int_equal(stat(sub, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0750); /* the volume's mode, as kubelet */
        free(sub);
        sub = pathj(data, "logs/x");
        assert_subpath_mount(&f, mount_at(&f.c, "/expr"), 4, sub);
        free(sub);
        /* a file is mounted on a file; readOnly is the runtime's remount */
        sub = pathj(data, "file");
        m = mount_at(&f.c, "/etc/file");
        assert_subpath_mount(&f, m, 6, sub);
        assert_options(m, "rbind", "rprivate", "ro");
        assert_int_equal(lstat(m->source, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        free(sub);

        assert_options(mount_at(&f.c, "/etc/hosts"), "rbind", "rprivate", "rw");
        assert_string_equal(mount_at(&f.c, "/etc/hosts")->source, "/p/etc-hosts");
        assert_string_equal(mount_at(&f.c, "/etc/hostname")->source, "/p/hostname");
        /* the container mounts its own resolv.conf: ours is skipped */
        sub = pathj(data, "resolv");
        assert_subpath_mount(&f, mount_at(&f.c, "/etc/resolv.conf"), 5, sub);
        free(sub);
        m = mount_at(&f.c, "/dev/termination-log");
        assert_options(m, "rbind", "rprivate", "rw");
        assert_int_equal(stat(tlog, &st), 0);
        assert_int_equal(st.st_mode & 0777, 0666);
        assert_string_equal(mount_at(&f.c, "/dev/shm")->source, shm);
        /* parents before children: sorted by depth */
        assert_string_equal(f.c.mounts[0].destination, "/data");

        free(data);
        free(shm);
        free(tlog);
        fx_done(&f);
}

static void test_subpath_escape(void **state) {
        skip_without_mounts(state);
        Fixture f;
        fx_init(&f, POD_HEAD
                "  volumes:\n  - {name: data, emptyDir: {}}\n"
                "  containers:\n  - name: c\n    image: b\n    command: [x]\n"
                "    volumeMounts:\n    - {name: data, mountPath: /x, subPath: evil/passwd}\n"
                "  - name: d\n    image: b\n    command: [x]\n"
                "    volumeMounts:\n    - {name: data, mountPath: /x, subPath: abs}\n"
                "  - name: e\n    image: b\n    command: [x]\n"
                "    volumeMounts:\n    - {name: data, mountPath: /x, subPath: inside}\n");
        char *data = pathj(f.dir, "data");
        assert_int_equal(mkdir(data, 0777), 0);
        char *evil = pathj(data, "evil"), *abs = pathj(data, "abs"),
             *inside = pathj(data, "inside");
        assert_int_equal(symlink("../../../../../../etc", evil), 0);
        assert_int_equal(symlink("/etc", abs), 0);
        char *realdir = pathj(data, "real");
        assert_int_equal(mkdir(realdir, 0755), 0);
        free(realdir);
        assert_int_equal(symlink("real", inside), 0);
        add_volume(&f, "data", data, false);

        assert_int_equal(fx_build(&f), -EXDEV);
        assert_string_equal(f.err.message, "failed to prepare subPath for volumeMount \"data\" of "
                                           "container \"c\": the subPath leaves the volume");
        f.ctx.container = &f.pod->spec.containers[1];
        assert_int_equal(fx_build(&f), -EXDEV);
        /* a symlink that stays inside is fine and resolved */
        f.ctx.container = &f.pod->spec.containers[2];
        fx_build_ok(&f);
        char *real = pathj(data, "real");
        assert_subpath_mount(&f, mount_at(&f.c, "/x"), 0, real);
        free(real);
        free(evil);
        free(abs);
        free(inside);
        free(data);
        fx_done(&f);
}

/* An image volume is mounted from the attempt's own mount point of the
 * image (image-volumes.h), read-only and noexec also when the mount says
 * readOnly: false; a subPath must exist in the image (nothing is created
 * in it) and cannot leave it, through "..", an absolute symlink or a
 * relative one. */
static void test_image_volume(void **state) {
        skip_without_mounts(state);
        Fixture f;
        fx_init(&f, POD_HEAD
                "  volumes:\n  - {name: img, image: {reference: tools}}\n"
                "  containers:\n  - name: c\n    image: b\n    command: [x]\n"
                "    volumeMounts:\n    - {name: img, mountPath: /img, readOnly: false}\n"
                "    - {name: img, mountPath: /sub, subPath: data}\n"
                "  - name: d\n    image: b\n    command: [x]\n"
                "    volumeMounts:\n    - {name: img, mountPath: /x, subPath: nope}\n"
                "  - name: e\n    image: b\n    command: [x]\n"
                "    volumeMounts:\n    - {name: img, mountPath: /x, subPath: escape}\n"
                "  - name: g\n    image: b\n    command: [x]\n"
                "    volumeMounts:\n    - {name: img, mountPath: /x, subPath: abs}\n"
                "  - name: h\n    image: b\n    command: [x]\n"
                "    env: [{name: UP, value: data/../../..}]\n"
                "    volumeMounts:\n    - {name: img, mountPath: /x, subPathExpr: '$(UP)'}\n");
        char *subpaths = pathj(f.attempt_dir, "subpaths");
        char *root = pathj(subpaths, "image-img");
        char *data = pathj(root, "data");
        assert_int_equal(mkdir_p(data, 0755), 0);
        write_file(data, "hello", "hi");
        char *escape = pathj(root, "escape"), *abs = pathj(root, "abs");
        assert_int_equal(symlink("../../../../../../etc", escape), 0);
        assert_int_equal(symlink("/etc", abs), 0);
        add_image_volume(&f, "img");

        fx_build_ok(&f);
        const RuntimeMount *m = mount_at(&f.c, "/img");
        assert_non_null(m);
        assert_string_equal(m->source, root);
        assert_strv(m->options, "rbind", "rprivate", "ro", "nosuid", "nodev", "noexec", NULL);
        m = mount_at(&f.c, "/sub");
        assert_subpath_mount(&f, m, 1, data);
        assert_strv(m->options, "rbind", "rprivate", "ro", "nosuid", "nodev", "noexec", NULL);

        f.ctx.container = &f.pod->spec.containers[1];
        assert_int_equal(fx_build(&f), -ENOENT);
        assert_string_equal(f.err.message,
                            "failed to prepare subPath for volumeMount \"img\" of container "
                            "\"d\": subPath \"nope\" does not exist in the image");
        char *nope = pathj(root, "nope");
        assert_int_equal(access(nope, F_OK), -1);
        for (size_t i = 2; i <= 3; i++) {
                f.ctx.container = &f.pod->spec.containers[i];
                assert_int_equal(fx_build(&f), -EXDEV);
                assert_non_null(strstr(f.err.message, "the subPath leaves the volume"));
        }
        f.ctx.container = &f.pod->spec.containers[4];
        assert_int_equal(fx_build(&f), -EINVAL);
        assert_non_null(strstr(f.err.message, "must not contain '..'"));

        (void)container_subpaths_release(f.attempt_dir);
        free(nope);
        free(escape);
        free(abs);
        free(data);
        free(root);
        free(subpaths);
        fx_done(&f);
}

/* Swapping the subPath for a symlink after the config is built cannot
 * redirect it: the mount point holds the inode, not the path. Releasing the
 * attempt's subPaths unmounts and removes them, and again finds nothing. */
static bool mounted_below(const char *dir) {
        FILE *f = fopen("/proc/self/mountinfo", "re");
        char line[8192];
        bool found = false;
        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
                if (strstr(line, dir))
                        found = true;
        fclose(f);
        return found;
}

static void test_subpath_swap(void **state) {
        skip_without_mounts(state);
        Fixture f;
        fx_init(&f, POD_HEAD "  volumes:\n  - {name: data, emptyDir: {}}\n"
                             "  containers:\n  - name: c\n    image: b\n    command: [x]\n"
                             "    volumeMounts:\n    - {name: data, mountPath: /x, subPath: d}\n");
        char *data = pathj(f.dir, "data"), *d = pathj(data, "d"), *old = pathj(data, "old");
        char *outside = pathj(f.dir, "outside");
        assert_int_equal(mkdir(data, 0755), 0);
        assert_int_equal(mkdir(d, 0755), 0);
        write_file(d, "inside", "1");
        assert_int_equal(mkdir(outside, 0755), 0);
        write_file(outside, "MARKER", "1");
        add_volume(&f, "data", data, false);
        fx_build_ok(&f);

        assert_int_equal(rename(d, old), 0);
        assert_int_equal(symlink(outside, d), 0);
        const RuntimeMount *m = mount_at(&f.c, "/x");
        assert_subpath_mount(&f, m, 0, old);
        char *marker = pathj(m->source, "MARKER"), *inside = pathj(m->source, "inside");
        assert_int_equal(access(marker, F_OK), -1);
        assert_int_equal(access(inside, F_OK), 0);

        char *subpaths = pathj(f.attempt_dir, "subpaths");
        assert_true(mounted_below(subpaths));
        assert_int_equal(container_subpaths_release(f.attempt_dir), 1);
        assert_false(mounted_below(subpaths));
        assert_int_equal(access(subpaths, F_OK), -1);
        assert_int_equal(container_subpaths_release(f.attempt_dir), 0);
        /* built now, it is refused; back in place, it builds once: a
         * second build of the same attempt finds its mount point taken */
        assert_int_equal(fx_build(&f), -EXDEV);
        assert_int_equal(unlink(d), 0);
        assert_int_equal(rename(old, d), 0);
        fx_build_ok(&f);
        assert_int_equal(fx_build(&f), -EEXIST);

        free(marker);
        free(inside);
        free(subpaths);
        free(data);
        free(d);
        free(old);
        free(outside);
        fx_done(&f);
}

/* ---- security ---- */

static void test_security_defaults(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f, POD_HEAD
                "  securityContext:\n    sysctls: [{name: net.ipv4.ip_forward, value: '1'}]\n"
                "    seccompProfile: {type: Unconfined}\n"
                "  containers:\n  - {name: c, image: b, command: [x], tty: true}\n"
                "  - name: d\n    image: b\n    command: [x]\n"
                "    securityContext:\n      allowPrivilegeEscalation: false\n"
                "      readOnlyRootFilesystem: true\n      procMount: Unmasked\n"
                "      capabilities: {add: [NET_ADMIN], drop: [ALL]}\n"
                "      seccompProfile: {type: Localhost, localhostProfile: prof/a.json}\n"
                "  - name: e\n    image: b\n    command: [x]\n"
                "    securityContext: {privileged: true}\n");
        fx_build_ok(&f);
        assert_true(f.c.terminal);
        assert_false(f.c.no_new_privileges);
        assert_false(f.c.readonly_rootfs);
        assert_int_equal(f.c.seccomp, RUNTIME_SECCOMP_UNCONFINED);
        assert_strv(f.c.sysctls, "net.ipv4.ip_forward=1", NULL);
        assert_null(f.c.cap_add);

        f.ctx.container = &f.pod->spec.containers[1];
        fx_build_ok(&f);
        assert_true(f.c.no_new_privileges);
        assert_true(f.c.readonly_rootfs);
        assert_true(f.c.unmasked_proc);
        assert_strv(f.c.cap_add, "NET_ADMIN", NULL);
        assert_strv(f.c.cap_drop, "ALL", NULL);
        assert_int_equal(f.c.seccomp, RUNTIME_SECCOMP_LOCALHOST);
        assert_string_equal(f.c.seccomp_profile_path, "/var/lib/nanolet/seccomp/prof/a.json");

        f.ctx.container = &f.pod->spec.containers[2];
        fx_build_ok(&f);
        assert_true(f.c.privileged);
        assert_int_equal(f.c.seccomp, RUNTIME_SECCOMP_UNCONFINED);
        fx_done(&f);

        fx_init(&f, POD_HEAD "  containers:\n  - {name: c, image: b, command: [x]}\n");
        fx_build_ok(&f);
        /* seccompDefault (docs/internals/runtime.md) */
        assert_int_equal(f.c.seccomp, RUNTIME_SECCOMP_RUNTIME_DEFAULT);
        char *uid_ann = strprintf("io.kubernetes.pod.uid=%s", f.node.pod_uid);
        assert_strv(f.c.annotations, "io.kubernetes.pod.name=web-node1",
                    "io.kubernetes.pod.namespace=prod", uid_ann, "io.kubernetes.container.name=c",
                    "nanolet.io/attempt=0", NULL);
        free(uid_ann);
        fx_done(&f);
}

/* AppArmor: kubelet's choice (container field, then the annotation, then
 * the pod's field) and what the runtime makes of it (containerd's rules:
 * no profile named is RuntimeDefault, privileged gets none, a host without
 * AppArmor none either; Localhost must be loaded). */
#define AA_POD                                                                                     \
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  annotations:\n"                      \
        "    container.apparmor.security.beta.kubernetes.io/field-wins: unconfined\n"              \
        "spec:\n  securityContext:\n    appArmorProfile: {type: Localhost, localhostProfile: "     \
        "pod-p}\n"                                                                                 \
        "  containers:\n"                                                                          \
        "  - {name: pod-level, image: b}\n"                                                        \
        "  - name: field-wins\n    image: b\n"                                                     \
        "    securityContext: {appArmorProfile: {type: Unconfined}}\n"                             \
        "  - name: own\n    image: b\n"                                                            \
        "    securityContext: {appArmorProfile: {type: RuntimeDefault}}\n"                         \
        "  - name: priv\n    image: b\n"                                                           \
        "    securityContext: {privileged: true, appArmorProfile: {type: RuntimeDefault}}\n"
#define AA_ANNO_POD                                                                                \
        "apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  annotations:\n"                      \
        "    container.apparmor.security.beta.kubernetes.io/anno-local: localhost/from-anno\n"     \
        "    container.apparmor.security.beta.kubernetes.io/anno-unconf: unconfined\n"             \
        "spec:\n  containers:\n"                                                                   \
        "  - {name: anno-local, image: b}\n"                                                       \
        "  - {name: anno-unconf, image: b}\n"                                                      \
        "  - {name: plain, image: b}\n"

static void test_apparmor_resolution(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f, AA_POD);
        const Pod *p = f.pod;
        const Container *c = p->spec.containers;
        const char *name = NULL;

        /* the pod's field for a container with neither field nor annotation */
        assert_int_equal(container_apparmor(p, &c[0], true, &name), CONTAINER_APPARMOR_LOCALHOST);
        assert_string_equal(name, "pod-p");
        /* the container's own field over the pod's */
        assert_int_equal(container_apparmor(p, &c[1], true, NULL), CONTAINER_APPARMOR_NONE);
        assert_int_equal(container_apparmor(p, &c[2], true, NULL), CONTAINER_APPARMOR_DEFAULT);
        /* RuntimeDefault on a host without AppArmor, or privileged: none */
        assert_int_equal(container_apparmor(p, &c[2], false, NULL), CONTAINER_APPARMOR_NONE);
        assert_int_equal(container_apparmor(p, &c[3], true, NULL), CONTAINER_APPARMOR_NONE);
        /* Localhost stays Localhost without AppArmor: admission refuses it */
        assert_int_equal(container_apparmor(p, &c[0], false, &name), CONTAINER_APPARMOR_LOCALHOST);

        char *msg = NULL;
        assert_int_equal(container_apparmor_admit(p, true, &msg), 0);
        assert_null(msg);
        assert_int_equal(container_apparmor_admit(p, false, &msg), -EPERM);
        assert_string_equal(msg, "Cannot enforce AppArmor: AppArmor is not enabled on the host "
                                 "(container \"pod-level\" asks for the Localhost profile "
                                 "\"pod-p\")");
        free(msg);
        fx_done(&f);

        fx_init(&f, AA_ANNO_POD);
        p = f.pod;
        c = p->spec.containers;
        assert_int_equal(container_apparmor(p, &c[0], true, &name), CONTAINER_APPARMOR_LOCALHOST);
        assert_string_equal(name, "from-anno");
        assert_int_equal(container_apparmor(p, &c[1], true, NULL), CONTAINER_APPARMOR_NONE);
        assert_int_equal(container_apparmor(p, &c[2], true, NULL), CONTAINER_APPARMOR_DEFAULT);
        /* kubelet's GetProfile: the annotation before the pod's field (which
         * validation makes agree with it; set here after it) */
        AppArmorProfile unconf = { .type = APPARMOR_PROFILE_UNCONFINED };
        PodSecurityContext psc = { .apparmor_profile = &unconf };
        ((Pod *)p)->spec.security_context = &psc;
        assert_int_equal(container_apparmor(p, &c[0], true, &name), CONTAINER_APPARMOR_LOCALHOST);
        assert_int_equal(container_apparmor(p, &c[2], true, NULL), CONTAINER_APPARMOR_NONE);
        ((Pod *)p)->spec.security_context = NULL;
        assert_int_equal(container_apparmor_admit(p, false, &msg), -EPERM);
        assert_non_null(strstr(msg, "container \"anno-local\" asks for the Localhost profile "
                                    "\"from-anno\""));
        free(msg);
        fx_done(&f);

        /* nothing named anywhere: RuntimeDefault, which a host without
         * AppArmor runs unconfined; Unconfined alone needs no AppArmor */
        fx_init(&f, POD_HEAD "  containers:\n  - {name: c, image: b, command: [x]}\n"
                             "  - name: u\n    image: b\n    command: [x]\n"
                             "    securityContext: {appArmorProfile: {type: Unconfined}}\n");
        msg = NULL;
        assert_int_equal(container_apparmor_admit(f.pod, false, &msg), 0);
        fx_build_ok(&f);
        assert_null(f.c.apparmor_profile);
        f.ctx.apparmor_enabled = true;
        fx_build_ok(&f); /* AppArmor, but no apparmor_parser: no default profile */
        assert_null(f.c.apparmor_profile);
        f.ctx.apparmor_default = true;
        fx_build_ok(&f);
        assert_string_equal(f.c.apparmor_profile, CONTAINER_APPARMOR_DEFAULT_PROFILE);
        f.ctx.container = &f.pod->spec.containers[1];
        fx_build_ok(&f);
        assert_null(f.c.apparmor_profile);
        fx_done(&f);
}

static void test_apparmor_localhost_loaded(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f, POD_HEAD "  containers:\n  - name: c\n    image: b\n    command: [x]\n"
                             "    securityContext:\n      appArmorProfile: {type: Localhost, "
                             "localhostProfile: \"my prof\"}\n");
        char *list = pathj(f.dir, "profiles");
        f.ctx.apparmor_enabled = true;
        f.ctx.apparmor_profiles_path = list;

        write_file(f.dir, "profiles",
                   "nanolet-default (enforce)\nmy prof-x (enforce)\nmy (complain)\n");
        assert_int_equal(fx_build(&f), -ENOENT);
        assert_string_equal(f.err.message,
                            "container \"c\": AppArmor profile \"my prof\" is not loaded on the "
                            "host (Localhost profiles must be loaded with apparmor_parser first)");

        write_file(f.dir, "profiles", "nanolet-default (enforce)\nmy prof (complain)\n");
        fx_build_ok(&f);
        assert_string_equal(f.c.apparmor_profile, "my prof");

        /* the host lost AppArmor (admission refuses such a pod; the build
         * does too) */
        f.ctx.apparmor_enabled = false;
        assert_int_equal(fx_build(&f), -EPERM);
        assert_non_null(strstr(f.err.message, "AppArmor is not enabled on the host"));
        free(list);
        fx_done(&f);
}

static void test_apparmor_listed(void **state) {
        (void)state;
        const char *l = "docker-default (enforce)\n/usr/bin/man (enforce)\nnanolet-default "
                        "(complain)\nlast (enforce)";
        assert_true(container_apparmor_listed(l, "nanolet-default"));
        assert_true(container_apparmor_listed(l, "/usr/bin/man"));
        assert_true(container_apparmor_listed(l, "last"));
        assert_false(container_apparmor_listed(l, "docker"));
        assert_false(container_apparmor_listed(l, "nanolet-default (complain)"));
        assert_false(container_apparmor_listed(l, "enforce"));
        assert_false(container_apparmor_listed("", "x"));
}

/* seccompDefault as config.json shows it: with it (nanolet's default) a
 * container without a profile gets the RuntimeDefault filter, without it
 * (kubelet's default) none; an explicit profile wins either way. */
static bool json_has_seccomp(Fixture *f) {
        json_t *spec = NULL;
        Error err = {};
        assert_int_equal(runtime_config_to_json(&f->c, &spec, &err), 0);
        json_t *s = json_object_get(json_object_get(spec, "linux"), "seccomp");
        bool has = s != NULL;
        if (has)
                assert_string_equal(json_string_value(json_object_get(s, "defaultAction")),
                                    "SCMP_ACT_ERRNO");
        json_decref(spec);
        return has;
}

static void test_seccomp_default(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f, POD_HEAD "  containers:\n  - {name: c, image: b, command: [x]}\n"
                             "  - name: d\n    image: b\n    command: [x]\n"
                             "    securityContext:\n"
                             "      seccompProfile: {type: RuntimeDefault}\n");
        fx_build_ok(&f);
        assert_int_equal(f.c.seccomp, RUNTIME_SECCOMP_RUNTIME_DEFAULT);
        assert_true(json_has_seccomp(&f));

        f.ctx.no_seccomp_default = true;
        fx_build_ok(&f);
        assert_int_equal(f.c.seccomp, RUNTIME_SECCOMP_UNCONFINED);
        assert_false(json_has_seccomp(&f));

        f.ctx.container = &f.pod->spec.containers[1];
        fx_build_ok(&f);
        assert_int_equal(f.c.seccomp, RUNTIME_SECCOMP_RUNTIME_DEFAULT);
        assert_true(json_has_seccomp(&f));
        fx_done(&f);

        /* A pod-level profile is not "no profile". */
        fx_init(&f, POD_HEAD "  securityContext:\n    seccompProfile: {type: RuntimeDefault}\n"
                             "  containers:\n  - {name: c, image: b, command: [x]}\n");
        f.ctx.no_seccomp_default = true;
        fx_build_ok(&f);
        assert_true(json_has_seccomp(&f));
        fx_done(&f);
}

/* ---- resources ---- */

static void test_resources(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f, POD_HEAD "  containers:\n  - name: c\n    image: b\n    command: [x]\n"
                             "    resources:\n      requests: {cpu: 250m, memory: 1Gi}\n"
                             "      limits: {cpu: 500m, memory: 2Gi, hugepages-2Mi: 4Mi}\n");
        fx_build_ok(&f);
        char *want = strprintf("/kubepods/burstable/pod%s/uid1-c-0", f.node.pod_uid);
        assert_string_equal(f.c.cgroups_path, want);
        free(want);
        assert_int_equal(f.c.resources.cpu_shares, 256);
        assert_int_equal(f.c.resources.cpu_period, 100000);
        assert_int_equal(f.c.resources.cpu_quota, 50000);
        assert_int_equal(f.c.resources.memory_limit, 2LL << 30);
        assert_int_equal(f.c.resources.pids_limit, 0); /* the pod's, not the container's */
        assert_int_equal(f.c.resources.n_hugepages, 1);
        assert_string_equal(f.c.resources.hugepages[0].page_size, "2MB");
        assert_int_equal(f.c.resources.hugepages[0].limit, 4 << 20);
        /* Burstable: 1000 - 1000 * 1Gi / 8Gi = 875 */
        assert_true(f.c.oom_score_adj_set);
        assert_int_equal(f.c.oom_score_adj, 875);
        assert_int_equal(pod_qos_class(f.pod), POD_QOS_BURSTABLE);
        fx_done(&f);

        assert_int_equal(container_milli_cpu_to_shares(0), 2);
        assert_int_equal(container_milli_cpu_to_shares(1), 2);
        assert_int_equal(container_milli_cpu_to_shares(1000), 1024);
        assert_int_equal(container_milli_cpu_to_quota(1, 100000), 1000);
}

/* Large amounts saturate instead of overflowing: shares at 262144, the
 * quota at the kernel's maximum (2^44-1 µs, MAX_BW), never below the
 * minimum or negative. */
static void test_cpu_saturation(void **state) {
        (void)state;
        const int64_t quota_max = (INT64_C(1) << 44) - 1;

        assert_int_equal(container_milli_cpu_to_shares(256000), 262144);
        assert_int_equal(container_milli_cpu_to_shares(256001), 262144);
        assert_int_equal(container_milli_cpu_to_shares(INT64_C(1000000000000000000)), 262144);
        assert_int_equal(container_milli_cpu_to_shares(INT64_MAX), 262144);
        assert_int_equal(container_milli_cpu_to_shares(-5), 2);

        assert_int_equal(container_milli_cpu_to_quota(2500, 100000), 250000);
        assert_int_equal(container_milli_cpu_to_quota(INT64_C(175921860444), 100000),
                         INT64_C(17592186044400));
        assert_int_equal(container_milli_cpu_to_quota(INT64_C(175921860445), 100000), quota_max);
        assert_int_equal(container_milli_cpu_to_quota(INT64_C(1000000000000000000), 100000),
                         quota_max);
        assert_int_equal(container_milli_cpu_to_quota(INT64_MAX, 100000), quota_max);
        assert_int_equal(container_milli_cpu_to_quota(INT64_MAX, 1000000), quota_max);
        assert_int_equal(container_milli_cpu_to_quota(1000, UINT64_MAX), quota_max);
        assert_int_equal(container_milli_cpu_to_quota(-1, 100000), 0);
}

static void run_oom(const char *spec, PodQOSClass qos, int adj) {
        Fixture f;
        char *yaml = strprintf(POD_HEAD "%s", spec);
        fx_init(&f, yaml);
        assert_int_equal(pod_qos_class(f.pod), qos);
        fx_build_ok(&f);
        assert_int_equal(f.c.oom_score_adj, adj);
        fx_done(&f);
        free(yaml);
}

static void test_oom_score_adj(void **state) {
        (void)state;
        run_oom("  containers:\n  - {name: c, image: b, command: [x]}\n", POD_QOS_BEST_EFFORT,
                1000);
        /* limits only: requests default to them -> Guaranteed */
        run_oom("  containers:\n  - name: c\n    image: b\n    command: [x]\n"
                "    resources: {limits: {cpu: '1', memory: 1Gi}}\n",
                POD_QOS_GUARANTEED, -997);
        /* tiny request: 1000 - 0 rounds to 1000 -> 999 */
        run_oom("  containers:\n  - name: c\n    image: b\n    command: [x]\n"
                "    resources: {requests: {memory: 1Ki}}\n",
                POD_QOS_BURSTABLE, 999);
        /* request above the machine: clamped to 3 */
        run_oom("  containers:\n  - name: c\n    image: b\n    command: [x]\n"
                "    resources: {requests: {memory: 16Gi}}\n",
                POD_QOS_BURSTABLE, 3);
        run_oom("  priorityClassName: system-node-critical\n"
                "  containers:\n  - {name: c, image: b, command: [x]}\n",
                POD_QOS_BEST_EFFORT, -997);
}

/* ---- the pod cgroup (kubelet's ResourceConfigForPod) ---- */

static void pod_res(const char *spec, bool cfs, int64_t pids, CgroupResources *ret,
                    PodQOSClass qos) {
        Fixture f;
        char *yaml = strprintf(POD_HEAD "%s", spec);
        fx_init(&f, yaml);
        assert_int_equal(pod_qos_class(f.pod), qos);
        assert_int_equal(pod_cgroup_qos(f.pod), qos == POD_QOS_GUARANTEED ? CGROUP_QOS_GUARANTEED
                                                : qos == POD_QOS_BURSTABLE
                                                        ? CGROUP_QOS_BURSTABLE
                                                        : CGROUP_QOS_BEST_EFFORT);
        assert_int_equal(pod_cgroup_resources(f.pod, cfs, pids, ret), 0);
        fx_done(&f);
        free(yaml);
}

#define CT(name, res) "  - {name: " name ", image: b, command: [x], resources: " res "}\n"

/* kubelet's QoS container manager: the burstable level's shares are the
 * burstable pods' cpu requests; Guaranteed and BestEffort pods do not
 * count; no burstable pod (or no cpu request) gives the minimum 2. */
static void test_qos_burstable_shares(void **state) {
        (void)state;
        Fixture f[4];
        const char *specs[] = {
                /* Burstable: 100m + 250m (a limit alone is the request) */
                "  containers:\n" CT("a", "{requests: {cpu: 100m}, limits: {cpu: 500m}}")
                        CT("b", "{limits: {cpu: 250m}}"),
                /* Burstable, an init container's larger request wins: 1 cpu */
                "  initContainers:\n" CT("i", "{requests: {cpu: '1'}}") "  containers:\n" CT(
                        "a", "{requests: {cpu: 200m, memory: 1Mi}}"),
                /* Guaranteed: not counted */
                "  containers:\n" CT("a", "{limits: {cpu: '2', memory: 64Mi}}"),
                /* BestEffort: not counted */
                "  containers:\n" CT("a", "{}"),
        };
        const Pod *pods[5];
        for (size_t i = 0; i < 4; i++) {
                char *yaml = strprintf(POD_HEAD "%s", specs[i]);
                fx_init(&f[i], yaml);
                free(yaml);
                pods[i] = f[i].pod;
        }
        pods[4] = NULL; /* a worker without a pod yet */
        assert_int_equal(qos_burstable_milli_cpu(pods, 5), 350 + 1000);
        assert_int_equal(qos_burstable_cpu_shares(qos_burstable_milli_cpu(pods, 5)),
                         1350 * 1024 / 1000);
        /* only the Guaranteed and BestEffort pods: kubelet's minimum */
        assert_int_equal(qos_burstable_milli_cpu(pods + 2, 2), 0);
        assert_int_equal(qos_burstable_cpu_shares(0), 2);
        assert_int_equal(qos_burstable_cpu_shares(qos_burstable_milli_cpu(NULL, 0)), 2);
        /* a burstable pod requesting memory only: 0 cpu, 2 shares */
        Fixture g;
        char *yaml =
                strprintf(POD_HEAD "%s", "  containers:\n" CT("a", "{requests: {memory: 1Mi}}"));
        fx_init(&g, yaml);
        free(yaml);
        const Pod *one[] = { g.pod };
        assert_int_equal(pod_qos_class(g.pod), POD_QOS_BURSTABLE);
        assert_int_equal(qos_burstable_cpu_shares(qos_burstable_milli_cpu(one, 1)), 2);
        /* 1m: kubelet's MilliCPUToShares gives 1, the minimum wins */
        assert_int_equal(qos_burstable_cpu_shares(1), 2);
        /* huge sums clamp at kubelet's maximum */
        assert_int_equal(qos_burstable_cpu_shares(1000000000), 262144);
        fx_done(&g);
        for (size_t i = 0; i < 4; i++)
                fx_done(&f[i]);
}

static void test_pod_cgroup_resources(void **state) {
        (void)state;
        CgroupResources r;

        /* Guaranteed: sums of the limits (= requests) */
        pod_res("  containers:\n" CT("a", "{limits: {cpu: 200m, memory: 64Mi}}")
                        CT("b", "{limits: {cpu: 300m, memory: 32Mi}}"),
                true, 100, &r, POD_QOS_GUARANTEED);
        assert_int_equal(r.cpu_shares, 512);
        assert_int_equal(r.cpu_period, 100000);
        assert_int_equal(r.cpu_quota, 50000);
        assert_int_equal(r.memory_limit, 96 << 20);
        assert_int_equal(r.pids_limit, 100);
        assert_int_equal(r.n_hugepages, 0);
        pod_cgroup_resources_done(&r);

        /* Burstable, one container without a memory limit: no pod memory
         * limit; every container limits cpu: the quota is set */
        pod_res("  containers:\n" CT("a", "{requests: {cpu: 100m}, limits: {cpu: 500m, memory: "
                                          "64Mi}}") CT("b", "{limits: {cpu: 250m}}"),
                true, 0, &r, POD_QOS_BURSTABLE);
        assert_int_equal(r.cpu_shares, 358); /* (100m + 250m) * 1024 / 1000 */
        assert_int_equal(r.cpu_quota, 75000);
        assert_int_equal(r.memory_limit, 0);
        assert_int_equal(r.pids_limit, 0);
        pod_cgroup_resources_done(&r);

        /* Burstable without any cpu limit: no quota, shares from requests */
        pod_res("  containers:\n" CT("a", "{requests: {cpu: '1', memory: 1Gi}, limits: {memory: "
                                          "2Gi}}"),
                true, 0, &r, POD_QOS_BURSTABLE);
        assert_int_equal(r.cpu_shares, 1024);
        assert_int_equal(r.cpu_quota, 0);
        assert_int_equal(r.memory_limit, 2LL << 30);
        pod_cgroup_resources_done(&r);

        /* an init container larger than the sum wins (PodLimits/PodRequests) */
        pod_res("  initContainers:\n" CT(
                        "i",
                        "{limits: {cpu: '2', memory: 1Gi}}") "  containers:\n" CT("a",
                                                                                  "{limits: {cpu: "
                                                                                  "500m, memory: "
                                                                                  "128Mi}}")
                        CT("b", "{limits: {cpu: 500m, memory: 128Mi}}"),
                true, 0, &r, POD_QOS_GUARANTEED);
        assert_int_equal(r.cpu_shares, 2048);
        assert_int_equal(r.cpu_quota, 200000);
        assert_int_equal(r.memory_limit, 1LL << 30);
        pod_cgroup_resources_done(&r);
        /* ... and a smaller one does not count */
        pod_res("  initContainers:\n" CT(
                        "i",
                        "{limits: {cpu: 100m, memory: 16Mi}}") "  containers:\n" CT("a",
                                                                                    "{limits: "
                                                                                    "{cpu: 500m, "
                                                                                    "memory: "
                                                                                    "128Mi}}")
                        CT("b", "{limits: {cpu: 500m, memory: 128Mi}}"),
                true, 0, &r, POD_QOS_GUARANTEED);
        assert_int_equal(r.cpu_quota, 100000);
        assert_int_equal(r.memory_limit, 256 << 20);
        pod_cgroup_resources_done(&r);

        /* a sidecar adds to the sum, and to what later init containers need */
        pod_res("  initContainers:\n"
                "  - {name: s, image: b, command: [x], restartPolicy: Always, resources: "
                "{limits: {cpu: 100m, memory: 16Mi}}}\n" CT(
                        "i",
                        "{limits: {cpu: 2, memory: 1Gi}}") "  containers:\n" CT("a",
                                                                                "{limits: {cpu: "
                                                                                "500m, memory: "
                                                                                "128Mi}}"),
                true, 0, &r, POD_QOS_GUARANTEED);
        assert_int_equal(r.cpu_quota, 210000); /* max(100m + 500m, 2 + 100m) */
        assert_int_equal(r.memory_limit, (1LL << 30) + (16 << 20));
        pod_cgroup_resources_done(&r);
        pod_res("  initContainers:\n"
                "  - {name: s, image: b, command: [x], restartPolicy: Always, resources: "
                "{limits: {cpu: 100m, memory: 16Mi}}}\n"
                "  containers:\n" CT("a", "{limits: {cpu: 500m, memory: 128Mi}}"),
                true, 0, &r, POD_QOS_GUARANTEED);
        assert_int_equal(r.cpu_quota, 60000);
        assert_int_equal(r.memory_limit, 144 << 20);
        pod_cgroup_resources_done(&r);

        /* --cpu-cfs-quota=false: unlimited */
        pod_res("  containers:\n" CT("a", "{limits: {cpu: 200m, memory: 64Mi}}"), false, 0, &r,
                POD_QOS_GUARANTEED);
        assert_int_equal(r.cpu_quota, -1);
        assert_int_equal(r.memory_limit, 64 << 20);
        pod_cgroup_resources_done(&r);

        /* BestEffort: minimum shares only, the pids limit still applies */
        pod_res("  containers:\n  - {name: a, image: b, command: [x]}\n", true, 42, &r,
                POD_QOS_BEST_EFFORT);
        assert_int_equal(r.cpu_shares, 2);
        assert_int_equal(r.cpu_quota, 0);
        assert_int_equal(r.memory_limit, 0);
        assert_int_equal(r.pids_limit, 42);
        pod_cgroup_resources_done(&r);

        /* hugepages summed by size */
        pod_res("  containers:\n" CT("a", "{limits: {cpu: 1, memory: 1Gi, hugepages-2Mi: 4Mi}}")
                        CT("b", "{limits: {cpu: 1, memory: 1Gi, hugepages-2Mi: 6Mi, "
                                "hugepages-1Gi: 1Gi}}"),
                true, 0, &r, POD_QOS_GUARANTEED);
        assert_int_equal(r.n_hugepages, 2);
        assert_string_equal(r.hugepages[0].page_size, "2MB");
        assert_int_equal(r.hugepages[0].limit, 10 << 20);
        assert_string_equal(r.hugepages[1].page_size, "1GB");
        assert_int_equal(r.hugepages[1].limit, 1LL << 30);
        pod_cgroup_resources_done(&r);
}

/* The container's cgroupsPath follows the pod's QoS level and the layout;
 * --cpu-cfs-quota=false drops the container's quota too. */
static void test_cgroups_path(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f, POD_HEAD "  containers:\n" CT("c", "{limits: {cpu: 200m, memory: 64Mi}}"));
        CgroupLayout l = { .driver = CGROUP_DRIVER_CGROUPFS, .root = "/edge" };
        f.ctx.cgroups = &l;
        f.ctx.no_cpu_quota = true;
        fx_build_ok(&f);
        char *want = strprintf("/edge/kubepods/pod%s/uid1-c-0", f.node.pod_uid);
        assert_string_equal(f.c.cgroups_path, want);
        free(want);
        assert_int_equal(f.c.resources.cpu_quota, 0);
        assert_int_equal(f.c.resources.memory_limit, 64 << 20);
        fx_done(&f);

        fx_init(&f, POD_HEAD "  containers:\n  - {name: c, image: b, command: [x]}\n");
        CgroupLayout sd = { .driver = CGROUP_DRIVER_SYSTEMD, .root = "/" };
        f.ctx.cgroups = &sd;
        fx_build_ok(&f);
        want = strprintf("kubepods-besteffort-pod%s.slice:nanolet:uid1-c-0", f.node.pod_uid);
        for (char *p = strstr(want, "-pod") + 4; *p != '.'; p++)
                if (*p == '-')
                        *p = '_';
        assert_string_equal(f.c.cgroups_path, want);
        free(want);
        fx_done(&f);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_argv_precedence),
                cmocka_unit_test(test_argv_none),
                cmocka_unit_test(test_env_order_expansion),
                cmocka_unit_test(test_expand_edge_cases),
                cmocka_unit_test(test_expand_bounded),
                cmocka_unit_test(test_cpu_saturation),
                cmocka_unit_test(test_env_field_refs),
                cmocka_unit_test(test_env_configmap_secret),
                cmocka_unit_test(test_env_missing_refs),
                cmocka_unit_test(test_working_dir),
                cmocka_unit_test(test_user_from_image),
                cmocka_unit_test(test_user_run_as),
                cmocka_unit_test(test_run_as_non_root),
                cmocka_unit_test(test_namespaces),
                cmocka_unit_test(test_user_namespace),
                cmocka_unit_test(test_mounts),
                cmocka_unit_test(test_subpath_escape),
                cmocka_unit_test(test_subpath_swap),
                cmocka_unit_test(test_image_volume),
                cmocka_unit_test(test_security_defaults),
                cmocka_unit_test(test_apparmor_resolution),
                cmocka_unit_test(test_apparmor_localhost_loaded),
                cmocka_unit_test(test_apparmor_listed),
                cmocka_unit_test(test_seccomp_default),
                cmocka_unit_test(test_resources),
                cmocka_unit_test(test_oom_score_adj),
                cmocka_unit_test(test_pod_cgroup_resources),
                cmocka_unit_test(test_qos_burstable_shares),
                cmocka_unit_test(test_cgroups_path),
        };
        return cmocka_run_group_tests(tests, enter_mount_namespace, NULL);
}
