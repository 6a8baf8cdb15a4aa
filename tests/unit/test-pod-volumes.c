/* Pod volumes: hostPath type checks, emptyDir, configMap/secret/downwardAPI/
 * projected with AtomicWriter's "..data" layout, tmpfs-backed volumes (as
 * root; skipped otherwise unless NANOLET_TEST_STRICT=1), and a cleanup that
 * unmounts everything and never deletes inside a hostPath. */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "fileio.h"
#include "manifest.h"
#include "pod-volumes.h"
#include "string-util.h"
#include "strv.h"

typedef struct Fixture {
        ManifestObject **objs;
        size_t n;
        const Pod *pod;
        char dir[64];
        char *pod_dir;
        PodNodeInfo node;
        PodObjectLookup lookup;
        PodVolumesOptions o;
        PodVolumes v;
        Error err;
} Fixture;

static const ConfigMap *fx_cm(void *u, const char *ns, const char *name) {
        Fixture *f = u;
        for (size_t i = 0; i < f->n; i++)
                if (f->objs[i]->kind == MANIFEST_KIND_CONFIGMAP && streq(f->objs[i]->name, name) &&
                    streq(f->objs[i]->namespace, ns))
                        return f->objs[i]->configmap;
        return NULL;
}

static const Secret *fx_secret(void *u, const char *ns, const char *name) {
        Fixture *f = u;
        for (size_t i = 0; i < f->n; i++)
                if (f->objs[i]->kind == MANIFEST_KIND_SECRET && streq(f->objs[i]->name, name) &&
                    streq(f->objs[i]->namespace, ns))
                        return f->objs[i]->secret;
        return NULL;
}

static void fx_parse(Fixture *f, const char *yaml) {
        if (f->objs)
                manifest_objects_free(f->objs, f->n);
        ManifestParseOptions po = { .filename = "t.yaml",
                                    .node_name = "node1",
                                    .source_id = "file:/x",
                                    .config_source = "file" };
        Diagnostics d;
        diagnostics_init(&d);
        int r = manifest_parse_buffer(yaml, strlen(yaml), &po, &f->objs, &f->n, &d);
        for (size_t i = 0; r < 0 && i < d.n; i++) {
                char *s = diag_to_string(&d.items[i]);
                fprintf(stderr, "%s\n", s);
                free(s);
        }
        diagnostics_deinit(&d);
        assert_int_equal(r, 0);
        for (size_t i = 0; i < f->n; i++)
                if (f->objs[i]->kind == MANIFEST_KIND_POD) {
                        f->pod = f->objs[i]->pod;
                        f->node.pod_uid = f->objs[i]->uid;
                }
}

static void fx_init(Fixture *f, const char *yaml, bool mounts) {
        *f = (Fixture){};
        strcpy(f->dir, "/tmp/test-vol-XXXXXX");
        assert_non_null(mkdtemp(f->dir));
        f->pod_dir = strprintf("%s/pods/uid1", f->dir);
        f->node = (PodNodeInfo){ .node_name = "node1", .cpu_count = 2, .memory_bytes = 1ULL << 30 };
        f->lookup = (PodObjectLookup){ fx_cm, fx_secret, f };
        f->o = (PodVolumesOptions){
                .pod_dir = f->pod_dir, .node = &f->node, .lookup = &f->lookup, .no_mounts = !mounts
        };
        fx_parse(f, yaml);
}

static void fx_done(Fixture *f) {
        Error err = {};
        assert_int_equal(pod_volumes_cleanup(f->pod_dir, &err), 0);
        pod_volumes_done(&f->v);
        char *cmd = strprintf("rm -rf '%s'", f->dir);
        assert_int_equal(system(cmd), 0);
        free(cmd);
        free(f->pod_dir);
        manifest_objects_free(f->objs, f->n);
}

static int fx_prepare(Fixture *f) {
        pod_volumes_done(&f->v);
        f->err = (Error){};
        int r = pod_volumes_prepare(f->pod, &f->o, &f->v, &f->err);
        if (r < 0)
                fprintf(stderr, "prepare: %s\n", f->err.message);
        return r;
}

static bool need_root(void) {
        if (geteuid() == 0)
                return true;
        const char *s = getenv("NANOLET_TEST_STRICT");
        if (s && streq(s, "1"))
                fail_msg("root required (NANOLET_TEST_STRICT=1)");
        return false;
}

static char *read_file(const char *dir, const char *name) {
        char *p = strprintf("%s/%s", dir, name), *data = NULL;
        int r = read_full_file_at(AT_FDCWD, p, 1 << 20, &data, NULL);
        free(p);
        return r < 0 ? NULL : data;
}

static mode_t mode_of(const char *dir, const char *name) {
        char *p = strprintf("%s/%s", dir, name);
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        free(p);
        return st.st_mode & 07777;
}

static char *link_of(const char *dir, const char *name) {
        char *p = strprintf("%s/%s", dir, name), buf[4096];
        ssize_t n = readlink(p, buf, sizeof(buf) - 1);
        free(p);
        if (n < 0)
                return NULL;
        buf[n] = 0;
        return strdup(buf);
}

#define POD                                                                                        \
        "apiVersion: v1\nkind: Pod\nmetadata: {name: web, namespace: prod, labels: {b: '2', a: "   \
        "'1'}}\nspec:\n"
#define CONTAINERS "  containers: [{name: c, image: b, resources: {limits: {memory: 64Mi}}}]\n"

/* ---- hostPath ---- */

static void check_host_path(HostPathType t, const char *path, int want, const char *what) {
        HostPathVolumeSource hp = { (char *)path, t };
        Error err = {};
        assert_int_equal(pod_host_path_check(&hp, &err), want);
        if (what) {
                char *m = strprintf("hostPath type check failed: %s is not %s", path, what);
                assert_string_equal(err.message, m);
                free(m);
        }
}

static void test_host_path_types(void **state) {
        (void)state;
        char dir[] = "/tmp/test-hp-XXXXXX";
        assert_non_null(mkdtemp(dir));
        char *file = strprintf("%s/file", dir), *sock = strprintf("%s/sock", dir);
        char *missing = strprintf("%s/missing", dir);
        assert_int_equal(write_file_atomic(file, "x", 1, 0600), 0);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        strncpy(sa.sun_path, sock, sizeof(sa.sun_path) - 1);
        assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);

        check_host_path(HOST_PATH_DIRECTORY, dir, 0, NULL);
        check_host_path(HOST_PATH_DIRECTORY, file, -ENOTDIR, "a directory");
        check_host_path(HOST_PATH_DIRECTORY, missing, -ENOTDIR, "a directory");
        check_host_path(HOST_PATH_FILE, file, 0, NULL);
        check_host_path(HOST_PATH_FILE, dir, -EINVAL, "a file");
        check_host_path(HOST_PATH_SOCKET, sock, 0, NULL);
        check_host_path(HOST_PATH_SOCKET, file, -EINVAL, "a socket file");
        check_host_path(HOST_PATH_CHAR_DEVICE, "/dev/null", 0, NULL);
        check_host_path(HOST_PATH_CHAR_DEVICE, file, -EINVAL, "a character device");
        check_host_path(HOST_PATH_BLOCK_DEVICE, "/dev/null", -EINVAL, "a block device");
        check_host_path(HOST_PATH_UNSET, missing, 0, NULL);
        check_host_path(HOST_PATH_DIRECTORY_OR_CREATE, file, -ENOTDIR, "a directory");
        check_host_path(HOST_PATH_FILE_OR_CREATE, dir, -EINVAL, "a file");

        /* DirectoryOrCreate: mkdir -p 0755 */
        char *deep = strprintf("%s/a/b/c", dir);
        check_host_path(HOST_PATH_DIRECTORY_OR_CREATE, deep, 0, NULL);
        struct stat st;
        assert_int_equal(stat(deep, &st), 0);
        assert_true(S_ISDIR(st.st_mode));
        assert_int_equal(st.st_mode & 0777, 0755 & ~(mode_t)0);
        /* FileOrCreate: empty 0644 file; the parent must exist (kubelet's makeFile) */
        char *nf = strprintf("%s/new.conf", dir), *nested = strprintf("%s/x/y.conf", dir);
        check_host_path(HOST_PATH_FILE_OR_CREATE, nf, 0, NULL);
        assert_int_equal(stat(nf, &st), 0);
        assert_true(S_ISREG(st.st_mode));
        assert_int_equal(st.st_size, 0);
        check_host_path(HOST_PATH_FILE_OR_CREATE, nested, -ENOENT, NULL);

        close(fd);
        char *cmd = strprintf("rm -rf '%s'", dir);
        assert_int_equal(system(cmd), 0);
        free(cmd);
        free(file), free(sock), free(missing), free(deep), free(nf), free(nested);
}

/* ---- projections ---- */

#define CM                                                                                         \
        "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: prod}\n"           \
        "data: {a.conf: alpha, b.conf: beta, c: gamma}\n"                                          \
        "---\napiVersion: v1\nkind: Secret\nmetadata: {name: sec, namespace: prod}\n"              \
        "stringData: {user: admin, pass: hunter2}\n"

static void test_configmap_layout(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f,
                POD "  volumes:\n"
                    "  - name: all\n    configMap: {name: cfg}\n"
                    "  - name: some\n    configMap:\n      name: cfg\n      defaultMode: 0600\n"
                    "      items: [{key: a.conf, path: sub/dir/a}, {key: c, path: c, mode: "
                    "0400}]\n" CONTAINERS CM,
                false);
        assert_int_equal(fx_prepare(&f), 0);
        char *all = strdup(pod_volumes_get(&f.v, "all"));
        char *want = strprintf("%s/volumes/kubernetes.io~configmap/all", f.pod_dir);
        assert_string_equal(all, want);
        free(want);
        assert_true(f.v.items[0].read_only);

        char *s = read_file(all, "a.conf");
        assert_string_equal(s, "alpha");
        free(s);
        assert_int_equal(mode_of(all, "b.conf"), 0644);
        /* layout: a.conf -> ..data/a.conf, ..data -> ..<timestamp> */
        char *l = link_of(all, "a.conf");
        assert_string_equal(l, "..data/a.conf");
        free(l);
        char *data1 = link_of(all, "..data");
        assert_non_null(data1);
        assert_true(startswith(data1, ".."));
        assert_int_equal(mode_of(all, "..data"), 0755);

        char *some = strdup(pod_volumes_get(&f.v, "some"));
        s = read_file(some, "sub/dir/a");
        assert_string_equal(s, "alpha");
        free(s);
        assert_int_equal(mode_of(some, "sub/dir/a"), 0600);
        assert_int_equal(mode_of(some, "c"), 0400);
        l = link_of(some, "sub");
        assert_string_equal(l, "..data/sub");
        free(l);
        assert_null(link_of(some, "b.conf"));

        /* an update swaps ..data atomically, drops stale entries and the old dir */
        fx_parse(&f, POD
                 "  volumes:\n  - name: all\n    configMap: {name: cfg}\n"
                 "  - name: some\n    configMap: {name: cfg, items: [{key: c, path: "
                 "c}]}\n" CONTAINERS
                 "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: prod}\n"
                 "data: {a.conf: ALPHA, c: gamma}\n");
        assert_int_equal(fx_prepare(&f), 0);
        s = read_file(all, "a.conf");
        assert_string_equal(s, "ALPHA");
        free(s);
        assert_null(link_of(all, "b.conf"));
        char *data2 = link_of(all, "..data");
        assert_string_not_equal(data1, data2);
        char *old = strprintf("%s/%s", all, data1);
        assert_int_equal(access(old, F_OK), -1);
        free(old);
        assert_null(link_of(some, "sub"));
        free(all);
        free(some);
        free(data1);
        free(data2);
        fx_done(&f);
}

static void test_configmap_errors(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f, POD "  volumes: [{name: v, configMap: {name: nope}}]\n" CONTAINERS, false);
        assert_int_equal(fx_prepare(&f), -ENOENT);
        assert_string_equal(f.err.message, "configmap \"nope\" not found");
        fx_done(&f);

        fx_init(&f,
                POD "  volumes: [{name: v, configMap: {name: nope, optional: true}}]\n" CONTAINERS,
                false);
        assert_int_equal(fx_prepare(&f), 0);
        fx_done(&f);

        fx_init(&f,
                POD "  volumes: [{name: v, configMap: {name: cfg, items: [{key: zz, path: "
                    "z}]}}]\n" CONTAINERS CM,
                false);
        assert_int_equal(fx_prepare(&f), -ENOENT);
        assert_string_equal(f.err.message, "configmap references non-existent config key: zz");
        fx_done(&f);
}

/* An image volume has no pod-level directory: each container attempt
 * mounts its image (image-volumes.h), read-only. */
static void test_image_volume(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f,
                POD "  volumes: [{name: v, image: {reference: 'quay.io/x:1'}}, {name: e, "
                    "emptyDir: {}}]\n" CONTAINERS,
                false);
        assert_int_equal(fx_prepare(&f), 0);
        assert_null(pod_volumes_get(&f.v, "v"));
        assert_true(pod_volumes_is_image(&f.v, "v"));
        assert_true(f.v.items[0].read_only);
        assert_false(pod_volumes_is_image(&f.v, "e"));
        assert_non_null(pod_volumes_get(&f.v, "e"));
        assert_false(pod_volumes_is_image(&f.v, "missing"));
        fx_done(&f);
}

static void test_downward_and_projected(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f,
                POD "  volumes:\n"
                    "  - name: dw\n    downwardAPI:\n      items:\n"
                    "      - {path: name, fieldRef: {fieldPath: metadata.name}}\n"
                    "      - {path: labels, fieldRef: {fieldPath: metadata.labels}}\n"
                    "      - {path: mem, resourceFieldRef: {containerName: c, resource: "
                    "limits.memory, divisor: 1Mi}}\n"
                    "  - name: pj\n    projected:\n      defaultMode: 0440\n      sources:\n"
                    "      - configMap: {name: cfg, items: [{key: c, path: cfg/c}]}\n"
                    "      - secret: {name: sec}\n"
                    "      - downwardAPI: {items: [{path: ns, fieldRef: {fieldPath: "
                    "metadata.namespace}}]}\n" CONTAINERS CM,
                false);
        assert_int_equal(fx_prepare(&f), 0);
        const char *dw = pod_volumes_get(&f.v, "dw");
        char *s = read_file(dw, "name");
        assert_string_equal(s, "web-node1");
        free(s);
        s = read_file(dw, "labels");
        assert_string_equal(s, "a=\"1\"\nb=\"2\"");
        free(s);
        s = read_file(dw, "mem");
        assert_string_equal(s, "64");
        free(s);
        const char *pj = pod_volumes_get(&f.v, "pj");
        assert_non_null(strstr(pj, "kubernetes.io~projected"));
        s = read_file(pj, "cfg/c");
        assert_string_equal(s, "gamma");
        free(s);
        s = read_file(pj, "pass");
        assert_string_equal(s, "hunter2");
        free(s);
        assert_int_equal(mode_of(pj, "ns"), 0440);
        fx_done(&f);
}

static void test_empty_dir(void **state) {
        (void)state;
        Fixture f;
        fx_init(&f, POD "  volumes: [{name: scratch, emptyDir: {}}]\n" CONTAINERS, false);
        assert_int_equal(fx_prepare(&f), 0);
        const char *p = pod_volumes_get(&f.v, "scratch");
        char *want = strprintf("%s/volumes/kubernetes.io~empty-dir/scratch", f.pod_dir);
        assert_string_equal(p, want);
        free(want);
        assert_false(f.v.items[0].read_only);
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0777);
        assert_non_null(f.v.shm_path);
        fx_done(&f);
}

/* ---- as root: tmpfs and cleanup ---- */

static bool is_tmpfs(const char *p) {
        struct statfs sf;
        return statfs(p, &sf) == 0 && sf.f_type == TMPFS_MAGIC;
}

static bool mounted_under(const char *prefix) {
        FILE *m = fopen("/proc/self/mountinfo", "re");
        assert_non_null(m);
        char line[4096];
        bool found = false;
        while (fgets(line, sizeof(line), m))
                if (strstr(line, prefix))
                        found = true;
        fclose(m);
        return found;
}

static void test_tmpfs_and_cleanup(void **state) {
        (void)state;
        if (!need_root()) {
                skip();
                return;
        }
        Fixture f;
        char hp[] = "/tmp/test-hostpath-XXXXXX";
        assert_non_null(mkdtemp(hp));
        char *keep = strprintf("%s/keep", hp);
        assert_int_equal(write_file_atomic(keep, "x", 1, 0644), 0);
        char *yaml = strprintf(
                POD "  volumes:\n"
                    "  - {name: mem, emptyDir: {medium: Memory, sizeLimit: 16Mi}}\n"
                    "  - {name: s, secret: {secretName: sec}}\n"
                    "  - {name: h, hostPath: {path: '%s', type: Directory}}\n" CONTAINERS CM,
                hp);
        fx_init(&f, yaml, true);
        assert_int_equal(fx_prepare(&f), 0);
        assert_true(is_tmpfs(pod_volumes_get(&f.v, "mem")));
        assert_true(is_tmpfs(pod_volumes_get(&f.v, "s")));
        assert_true(is_tmpfs(f.v.shm_path));
        char *s = read_file(pod_volumes_get(&f.v, "s"), "user");
        assert_string_equal(s, "admin");
        free(s);
        assert_string_equal(pod_volumes_get(&f.v, "h"), hp);
        /* idempotent: a second prepare reuses the mounts */
        assert_int_equal(fx_prepare(&f), 0);

        /* a bind of the hostPath left inside an emptyDir must survive cleanup */
        char *inner = strprintf("%s/bound", pod_volumes_get(&f.v, "mem"));
        assert_int_equal(mkdir(inner, 0755), 0);
        char *cmd = strprintf("mount --bind '%s' '%s'", hp, inner);
        assert_int_equal(system(cmd), 0);
        free(cmd);

        Error err = {};
        assert_int_equal(pod_volumes_cleanup(f.pod_dir, &err), 0);
        assert_false(mounted_under(f.pod_dir));
        assert_int_equal(access(keep, F_OK), 0); /* the hostPath is intact */
        char *vols = strprintf("%s/volumes", f.pod_dir);
        assert_int_equal(access(vols, F_OK), -1);
        free(vols);
        free(inner);
        fx_done(&f);

        cmd = strprintf("rm -rf '%s'", hp);
        assert_int_equal(system(cmd), 0);
        free(cmd);
        free(keep);
        free(yaml);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_host_path_types),
                cmocka_unit_test(test_configmap_layout),
                cmocka_unit_test(test_configmap_errors),
                cmocka_unit_test(test_image_volume),
                cmocka_unit_test(test_downward_and_projected),
                cmocka_unit_test(test_empty_dir),
                cmocka_unit_test(test_tmpfs_and_cleanup),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
