/* src/runtime config.json generation: containerd's defaults (mounts, masked
 * paths, capabilities, devices, RuntimeDefault seccomp), namespaces,
 * capability add/drop, sysctl rules, Localhost seccomp validation, and --
 * as root -- one real `runc run` of a generated bundle, so the JSON is known
 * to be what runc accepts. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "fileio.h"
#include "runtime-config.h"
#include "string-util.h"
#include "strv.h"

static char tmpdir[256];

static char **strv_new_va(const char *first, ...) {
        char **l = NULL;
        va_list ap;

        va_start(ap, first);
        for (const char *s = first; s; s = va_arg(ap, const char *))
                assert_int_equal(strv_extend(&l, s), 0);
        va_end(ap);
        return l;
}
#define STRV(...) strv_new_va(__VA_ARGS__, NULL)

static void cfg_init(RuntimeContainerConfig *c) {
        *c = (RuntimeContainerConfig){};
        c->rootfs = strdup("/var/lib/nanolet/rootfs/x");
        c->args = STRV("sh", "-c", "true");
        c->env = STRV("HOME=/root");
        assert_non_null(c->rootfs);
}

static json_t *gen(const RuntimeContainerConfig *c) {
        Error err = {};
        json_t *j = NULL;
        int r = runtime_config_to_json(c, &j, &err);

        if (r < 0)
                fail_msg("runtime_config_to_json: %d %s", r, err.message);
        assert_non_null(j);
        return j;
}

/* Expects failure and returns the message (static buffer). */
static const char *gen_err(const RuntimeContainerConfig *c) {
        static Error err;
        json_t *j = NULL;

        err = (Error){};
        assert_true(runtime_config_to_json(c, &j, &err) < 0);
        assert_null(j);
        assert_true(err.error < 0);
        return err.message;
}

static bool arr_has(json_t *a, const char *s) {
        size_t i;
        json_t *v;

        json_array_foreach(a, i,
                           v) if (json_is_string(v) && streq(json_string_value(v), s)) return true;
        return false;
}

static json_t *path(json_t *j, const char *p) {
        char buf[256];
        char *save = NULL;

        snprintf(buf, sizeof(buf), "%s", p);
        for (char *k = strtok_r(buf, ".", &save); k && j; k = strtok_r(NULL, ".", &save))
                j = json_object_get(j, k);
        return j;
}

static json_t *find_mount(json_t *spec, const char *dest, size_t *ret_index) {
        size_t i;
        json_t *m;

        json_array_foreach(
                json_object_get(spec, "mounts"), i,
                m) if (streq(json_string_value(json_object_get(m, "destination")), dest)) {
                if (ret_index)
                        *ret_index = i;
                return m;
        }
        return NULL;
}

static size_t count_mounts(json_t *spec, const char *dest) {
        size_t i, n = 0;
        json_t *m;

        json_array_foreach(json_object_get(spec, "mounts"), i,
                           m) if (streq(json_string_value(json_object_get(m, "destination")), dest))
                n++;
        return n;
}

static json_t *find_ns(json_t *spec, const char *type) {
        size_t i;
        json_t *n;

        json_array_foreach(
                path(spec, "linux.namespaces"), i,
                n) if (streq(json_string_value(json_object_get(n, "type")), type)) return n;
        return NULL;
}

static uint64_t caps_of(json_t *a) {
        uint64_t m = 0;
        size_t i;
        json_t *v;

        json_array_foreach(a, i, v) {
                int cap = runtime_capability_from_string(json_string_value(v));
                assert_true(cap >= 0);
                assert_false(m & (UINT64_C(1) << cap)); /* no duplicates */
                m |= UINT64_C(1) << cap;
        }
        return m;
}

static uint64_t default_mask(void) {
        uint64_t m = 0;
        for (size_t i = 0; runtime_default_capabilities[i]; i++)
                m |= UINT64_C(1) << runtime_capability_from_string(runtime_default_capabilities[i]);
        return m;
}

/* bounding = effective = permitted, no inheritable or ambient. */
static uint64_t spec_caps(json_t *spec) {
        json_t *caps = path(spec, "process.capabilities");
        uint64_t b = caps_of(json_object_get(caps, "bounding"));

        assert_int_equal(b, caps_of(json_object_get(caps, "effective")));
        assert_int_equal(b, caps_of(json_object_get(caps, "permitted")));
        assert_null(json_object_get(caps, "inheritable"));
        assert_null(json_object_get(caps, "ambient"));
        return b;
}

/* Whether the seccomp profile allows name unconditionally. */
static bool seccomp_allows(json_t *spec, const char *name) {
        size_t i;
        json_t *r;

        json_array_foreach(
                path(spec, "linux.seccomp.syscalls"), i,
                r) if (streq(json_string_value(json_object_get(r, "action")), "SCMP_ACT_ALLOW") &&
                       json_array_size(json_object_get(r, "args")) == 0 &&
                       arr_has(json_object_get(r, "names"), name)) return true;
        return false;
}

static bool seccomp_mentions(json_t *spec, const char *name) {
        size_t i;
        json_t *r;

        json_array_foreach(path(spec, "linux.seccomp.syscalls"), i,
                           r) if (arr_has(json_object_get(r, "names"), name)) return true;
        return false;
}

static int setup(void **state) {
        snprintf(tmpdir, sizeof(tmpdir), "/tmp/test-runtime-config-XXXXXX");
        assert_non_null(mkdtemp(tmpdir));
        return 0;
}

static int rm_cb(const char *p, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(p);
}

static int teardown(void **state) {
        (void)nftw(tmpdir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
        return 0;
}

static void write_text(const char *name, const char *text, char *ret_path, size_t n) {
        snprintf(ret_path, n, "%s/%s", tmpdir, name);
        assert_int_equal(write_file_atomic(ret_path, text, strlen(text), 0644), 0);
}

/* ---- tests ---- */

static void test_config_done(void **state) {
        RuntimeContainerConfig c = {};

        runtime_container_config_done(&c);
        runtime_container_config_done(NULL);

        cfg_init(&c);
        c.cwd = strdup("/w");
        c.hostname = strdup("h");
        c.net.path = strdup("/run/ns/net");
        c.mounts = calloc(1, sizeof(RuntimeMount));
        c.n_mounts = 1;
        c.mounts[0].destination = strdup("/d");
        c.mounts[0].options = STRV("rbind");
        c.resources.hugepages = calloc(1, sizeof(*c.resources.hugepages));
        c.resources.n_hugepages = 1;
        c.resources.hugepages[0].page_size = strdup("2MB");
        c.rlimits = calloc(1, sizeof(RuntimeRlimit));
        c.n_rlimits = 1;
        c.rlimits[0].type = strdup("RLIMIT_NOFILE");
        c.additional_gids = calloc(2, sizeof(gid_t));
        c.sysctls = STRV("a=b");
        c.annotations = STRV("a=b");
        c.cap_add = STRV("ALL");
        c.cap_drop = STRV("ALL");
        runtime_container_config_done(&c);
        assert_null(c.rootfs);
        assert_int_equal(c.n_mounts, 0);
        runtime_container_config_done(&c); /* twice is harmless */
}

static void test_defaults(void **state) {
        static const char *const mounts[] = {
                "/proc", "/dev", "/dev/pts", "/dev/shm", "/dev/mqueue", "/sys", "/sys/fs/cgroup",
        };
        static const char *const masked[] = {
                "/proc/acpi",          "/proc/asound",
                "/proc/kcore",         "/proc/keys",
                "/proc/latency_stats", "/proc/timer_list",
                "/proc/timer_stats",   "/proc/sched_debug",
                "/sys/firmware",       "/sys/devices/virtual/powercap",
                "/proc/scsi",
        };
        static const char *const ro[] = {
                "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger",
        };
        RuntimeContainerConfig c;
        json_t *j, *m, *devs;

        cfg_init(&c);
        j = gen(&c);

        assert_string_equal(json_string_value(json_object_get(j, "ociVersion")), "1.0.2");
        assert_string_equal(json_string_value(path(j, "root.path")), "/var/lib/nanolet/rootfs/x");
        assert_true(json_is_false(path(j, "root.readonly")));
        assert_null(json_object_get(j, "hostname"));
        assert_null(json_object_get(j, "annotations"));

        /* process */
        assert_true(json_is_false(path(j, "process.terminal")));
        assert_int_equal(json_integer_value(path(j, "process.user.uid")), 0);
        assert_int_equal(json_integer_value(path(j, "process.user.gid")), 0);
        assert_null(path(j, "process.user.additionalGids"));
        assert_string_equal(json_string_value(path(j, "process.cwd")), "/");
        assert_int_equal(json_array_size(path(j, "process.args")), 3);
        assert_true(arr_has(path(j, "process.env"), "HOME=/root"));
        assert_true(arr_has(path(j, "process.env"),
                            "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"));
        assert_true(json_is_false(path(j, "process.noNewPrivileges")));
        assert_null(path(j, "process.oomScoreAdj"));
        assert_null(path(j, "process.rlimits"));
        assert_int_equal(spec_caps(j), default_mask());
        assert_int_equal(default_mask(), UINT64_C(0xa80425fb)); /* Docker's well-known CapEff */
        assert_int_equal(json_array_size(path(j, "process.capabilities.bounding")), 14);

        /* mounts: the defaults, in order */
        assert_int_equal(json_array_size(json_object_get(j, "mounts")), ELEMENTSOF(mounts));
        for (size_t i = 0; i < ELEMENTSOF(mounts); i++) {
                size_t idx = 99;
                assert_non_null(find_mount(j, mounts[i], &idx));
                assert_int_equal(idx, i);
        }
        m = find_mount(j, "/dev/shm", NULL);
        assert_string_equal(json_string_value(json_object_get(m, "type")), "tmpfs");
        assert_true(arr_has(json_object_get(m, "options"), "mode=1777"));
        assert_true(arr_has(json_object_get(m, "options"), "size=65536k"));
        m = find_mount(j, "/dev/pts", NULL);
        assert_true(arr_has(json_object_get(m, "options"), "ptmxmode=0666"));
        assert_true(arr_has(json_object_get(m, "options"), "gid=5"));
        assert_true(arr_has(json_object_get(find_mount(j, "/sys", NULL), "options"), "ro"));
        assert_true(
                arr_has(json_object_get(find_mount(j, "/sys/fs/cgroup", NULL), "options"), "ro"));
        assert_null(find_mount(j, "/run", NULL)); /* CRI drops containerd's /run tmpfs */

        /* masked and read-only paths: exactly containerd's */
        assert_int_equal(json_array_size(path(j, "linux.maskedPaths")), ELEMENTSOF(masked));
        for (size_t i = 0; i < ELEMENTSOF(masked); i++)
                assert_string_equal(
                        json_string_value(json_array_get(path(j, "linux.maskedPaths"), i)),
                        masked[i]);
        assert_int_equal(json_array_size(path(j, "linux.readonlyPaths")), ELEMENTSOF(ro));
        for (size_t i = 0; i < ELEMENTSOF(ro); i++)
                assert_string_equal(
                        json_string_value(json_array_get(path(j, "linux.readonlyPaths"), i)),
                        ro[i]);

        /* namespaces: all new by default, cgroup only on v2 */
        assert_non_null(find_ns(j, "pid"));
        assert_non_null(find_ns(j, "network"));
        assert_non_null(find_ns(j, "ipc"));
        assert_non_null(find_ns(j, "uts"));
        assert_non_null(find_ns(j, "mount"));
        assert_null(json_object_get(find_ns(j, "network"), "path"));
        assert_int_equal(find_ns(j, "cgroup") != NULL, runtime_cgroup_unified());

        /* devices: deny all, then the usual character devices */
        devs = path(j, "linux.resources.devices");
        assert_true(json_array_size(devs) >= 2);
        assert_true(json_is_false(json_object_get(json_array_get(devs, 0), "allow")));
        assert_string_equal(json_string_value(json_object_get(json_array_get(devs, 0), "access")),
                            "rwm");
        {
                bool null_ok = false, pts_ok = false;
                size_t i;
                json_t *d;
                json_array_foreach(devs, i, d) {
                        long long maj = json_integer_value(json_object_get(d, "major"));
                        json_t *min = json_object_get(d, "minor");
                        if (maj == 1 && json_integer_value(min) == 3 &&
                            json_is_true(json_object_get(d, "allow")))
                                null_ok = true;
                        if (maj == 136 && !min)
                                pts_ok = true;
                }
                assert_true(null_ok);
                assert_true(pts_ok);
        }
        assert_null(path(j, "linux.resources.cpu"));
        assert_null(path(j, "linux.resources.memory"));
        assert_null(path(j, "linux.cgroupsPath"));
        assert_null(path(j, "linux.sysctl"));

        /* RuntimeDefault seccomp is the default */
        assert_string_equal(json_string_value(path(j, "linux.seccomp.defaultAction")),
                            "SCMP_ACT_ERRNO");

        json_decref(j);
        runtime_container_config_done(&c);
}

static void test_namespaces(void **state) {
        RuntimeContainerConfig c;
        json_t *j;

        cfg_init(&c);
        c.net = (RuntimeNamespace){ RUNTIME_NS_PATH, strdup("/run/nanolet/ns/u1/net") };
        c.ipc = (RuntimeNamespace){ RUNTIME_NS_PATH, strdup("/run/nanolet/ns/u1/ipc") };
        c.uts = (RuntimeNamespace){ RUNTIME_NS_HOST, NULL };
        c.pid = (RuntimeNamespace){ RUNTIME_NS_HOST, NULL };
        j = gen(&c);
        assert_string_equal(json_string_value(json_object_get(find_ns(j, "network"), "path")),
                            "/run/nanolet/ns/u1/net");
        assert_string_equal(json_string_value(json_object_get(find_ns(j, "ipc"), "path")),
                            "/run/nanolet/ns/u1/ipc");
        assert_null(find_ns(j, "uts"));
        assert_null(find_ns(j, "pid"));
        assert_non_null(find_ns(j, "mount"));
        assert_null(json_object_get(find_ns(j, "mount"), "path"));
        json_decref(j);

        /* hostname needs a UTS namespace of its own */
        c.hostname = strdup("web-0");
        assert_non_null(strstr(gen_err(&c), "hostname:"));
        c.uts.mode = RUNTIME_NS_NEW;
        j = gen(&c);
        assert_string_equal(json_string_value(json_object_get(j, "hostname")), "web-0");
        json_decref(j);

        free(c.net.path);
        c.net.path = strdup("relative/net");
        assert_string_equal(gen_err(&c), "net.path: \"relative/net\" is not an absolute path");
        runtime_container_config_done(&c);
}

static void test_user_namespace(void **state) {
        RuntimeContainerConfig c;
        json_t *j;
        (void)state;

        cfg_init(&c);
        j = gen(&c);
        assert_null(find_ns(j, "user"));
        assert_null(json_object_get(json_object_get(j, "linux"), "uidMappings"));
        json_decref(j);

        c.userns_host_id = 131072;
        c.userns_length = 65536;
        j = gen(&c);
        assert_non_null(find_ns(j, "user"));
        assert_null(json_object_get(find_ns(j, "user"), "path"));
        for (int i = 0; i < 2; i++) {
                json_t *m = json_object_get(json_object_get(j, "linux"),
                                            i == 0 ? "uidMappings" : "gidMappings");
                assert_int_equal(json_array_size(m), 1);
                json_t *e = json_array_get(m, 0);
                assert_int_equal(json_integer_value(json_object_get(e, "containerID")), 0);
                assert_int_equal(json_integer_value(json_object_get(e, "hostID")), 131072);
                assert_int_equal(json_integer_value(json_object_get(e, "size")), 65536);
        }

        /* Joining the pod's pinned IPC namespace: no /dev/mqueue (the
         * container's root could not mount it); with its own IPC
         * namespace it has one. */
        assert_non_null(find_mount(j, "/dev/mqueue", NULL));
        json_decref(j);
        c.ipc = (RuntimeNamespace){ RUNTIME_NS_PATH, strdup("/run/nanolet/ns/u1/ipc") };
        j = gen(&c);
        assert_null(find_mount(j, "/dev/mqueue", NULL));
        assert_string_equal(json_string_value(json_object_get(find_mount(j, "/sys", NULL), "type")),
                            "sysfs");
        json_decref(j);
        /* and in the pod's pinned network namespace, /sys is the host's, bound
         * read-only (a sysfs mount needs the namespace's owner) */
        c.net = (RuntimeNamespace){ RUNTIME_NS_PATH, strdup("/run/nanolet/ns/u1/net") };
        j = gen(&c);
        json_t *sys = find_mount(j, "/sys", NULL);
        assert_string_equal(json_string_value(json_object_get(sys, "source")), "/sys");
        assert_string_equal(json_string_value(json_array_get(json_object_get(sys, "options"), 0)),
                            "rbind");
        json_decref(j);

        /* A range reaching ID 4294967295 (-1) is refused. */
        c.userns_host_id = 4294901760u;
        assert_non_null(strstr(gen_err(&c), "user namespace:"));
        runtime_container_config_done(&c);
}

static void add_mount(RuntimeContainerConfig *c, const char *dest, const char *src,
                      const char *type, char **opts) {
        c->mounts = realloc(c->mounts, (c->n_mounts + 1) * sizeof(RuntimeMount));
        assert_non_null(c->mounts);
        c->mounts[c->n_mounts++] = (RuntimeMount){
                .destination = strdup(dest),
                .source = src ? strdup(src) : NULL,
                .type = type ? strdup(type) : NULL,
                .options = opts,
        };
}

static void test_mounts_replace(void **state) {
        RuntimeContainerConfig c;
        json_t *j, *m;
        size_t idx, n;

        cfg_init(&c);
        add_mount(&c, "/etc/hosts", "/run/nanolet/pods/u1/hosts", "bind", STRV("rbind", "ro"));
        add_mount(&c, "/dev/shm/", "/run/nanolet/pods/u1/shm", "bind", STRV("rbind", "rprivate"));
        j = gen(&c);
        assert_int_equal(count_mounts(j, "/dev/shm/") + count_mounts(j, "/dev/shm"), 1);
        m = find_mount(j, "/dev/shm/", &idx);
        assert_non_null(m);
        assert_string_equal(json_string_value(json_object_get(m, "source")),
                            "/run/nanolet/pods/u1/shm");
        n = json_array_size(json_object_get(j, "mounts"));
        assert_int_equal(idx, n - 1); /* the caller's mounts come last, in order */
        assert_non_null(find_mount(j, "/etc/hosts", &idx));
        assert_int_equal(idx, n - 2);
        assert_int_equal(n, 6 + 2);
        assert_non_null(find_mount(j, "/dev/mqueue", NULL));
        json_decref(j);

        /* a caller /dev replaces every default under /dev */
        add_mount(&c, "/dev", "/srv/dev", "bind", STRV("rbind"));
        j = gen(&c);
        assert_int_equal(count_mounts(j, "/dev"), 1);
        assert_null(find_mount(j, "/dev/pts", NULL));
        assert_null(find_mount(j, "/dev/mqueue", NULL));
        assert_non_null(find_mount(j, "/proc", NULL));
        json_decref(j);

        add_mount(&c, "data", "/srv/data", "bind", STRV("rbind"));
        assert_string_equal(gen_err(&c), "mounts[3].destination: \"data\" is not an absolute path");
        runtime_container_config_done(&c);
}

static void test_privileged(void **state) {
        RuntimeContainerConfig c;
        json_t *j, *devs;

        cfg_init(&c);
        c.privileged = true;
        c.cap_drop = STRV("ALL");
        j = gen(&c);
        assert_int_equal(spec_caps(j), runtime_capabilities_all());
        assert_null(path(j, "linux.maskedPaths"));
        assert_null(path(j, "linux.readonlyPaths"));
        assert_null(path(j, "linux.seccomp"));
        assert_null(find_ns(j, "cgroup"));
        devs = path(j, "linux.resources.devices");
        assert_int_equal(json_array_size(devs), 1);
        assert_true(json_is_true(json_object_get(json_array_get(devs, 0), "allow")));
        assert_false(arr_has(json_object_get(find_mount(j, "/sys", NULL), "options"), "ro"));
        assert_true(arr_has(json_object_get(find_mount(j, "/sys", NULL), "options"), "rw"));
        json_decref(j);
        /* every host device node, as containerd gives a privileged container */
        j = gen(&c);
        devs = path(j, "linux.devices");
        assert_non_null(devs);
        bool has_null = false;
        for (size_t i = 0; i < json_array_size(devs); i++) {
                json_t *d = json_array_get(devs, i);
                const char *p = json_string_value(json_object_get(d, "path"));
                assert_non_null(p);
                assert_non_null(startswith(p, "/dev/"));
                assert_null(startswith(p, "/dev/pts/"));
                assert_string_not_equal(p, "/dev/console");
                if (streq(p, "/dev/null")) {
                        has_null = true;
                        assert_string_equal(json_string_value(json_object_get(d, "type")), "c");
                        assert_int_equal(json_integer_value(json_object_get(d, "major")), 1);
                        assert_int_equal(json_integer_value(json_object_get(d, "minor")), 3);
                        assert_int_equal(json_integer_value(json_object_get(d, "fileMode")), 0666);
                }
        }
        assert_true(has_null);
        json_decref(j);

        /* unknown names are errors even when privileged makes them moot */
        strv_free(c.cap_drop);
        c.cap_drop = STRV("NOPE");
        assert_string_equal(gen_err(&c), "capabilities.drop[0]: unknown capability \"NOPE\"");
        runtime_container_config_done(&c);

        /* not privileged: only the default nodes runc makes itself */
        cfg_init(&c);
        j = gen(&c);
        assert_null(path(j, "linux.devices"));
        json_decref(j);
        runtime_container_config_done(&c);

        cfg_init(&c);
        c.unmasked_proc = true;
        j = gen(&c);
        assert_null(path(j, "linux.maskedPaths"));
        assert_null(path(j, "linux.readonlyPaths"));
        assert_non_null(path(j, "linux.seccomp"));
        json_decref(j);
        runtime_container_config_done(&c);
}

/* The walk of a /dev: nodes (also in subdirectories) with their numbers,
 * mode and owner; links, files, and pts, shm, mqueue, console skipped. */
static void test_host_devices(void **state) {
        char dir[] = "/tmp/test-devs-XXXXXX";
        char p[128];
        json_t *devs = json_array();

        assert_non_null(mkdtemp(dir));
        if (geteuid() != 0) {
                (void)rmdir(dir);
                json_decref(devs);
                skip();
        }
        const char *dirs[] = { "pts", "shm", "mqueue", "net", "net/deep" };
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                snprintf(p, sizeof p, "%s/%s", dir, dirs[i]);
                assert_int_equal(mkdir(p, 0755), 0);
        }
        const struct {
                const char *name;
                mode_t mode;
                dev_t dev;
        } nodes[] = {
                { "null", S_IFCHR | 0666, makedev(1, 3) },
                { "sda", S_IFBLK | 0660, makedev(8, 0) },
                { "net/tun", S_IFCHR | 0600, makedev(10, 200) },
                { "net/deep/x", S_IFCHR | 0600, makedev(10, 201) },
                { "pts/0", S_IFCHR | 0620, makedev(136, 0) },
                { "shm/x", S_IFCHR | 0600, makedev(1, 3) },
                { "console", S_IFCHR | 0600, makedev(5, 1) },
        };
        for (size_t i = 0; i < ELEMENTSOF(nodes); i++) {
                snprintf(p, sizeof p, "%s/%s", dir, nodes[i].name);
                assert_int_equal(mknod(p, nodes[i].mode, nodes[i].dev), 0);
                assert_int_equal(chmod(p, nodes[i].mode & 07777), 0);
        }
        snprintf(p, sizeof p, "%s/sda", dir);
        assert_int_equal(chown(p, 0, 6), 0);
        snprintf(p, sizeof p, "%s/stdin", dir);
        assert_int_equal(symlink("/proc/self/fd/0", p), 0);
        snprintf(p, sizeof p, "%s/file", dir);
        assert_int_equal(write_file_atomic(p, "x", 1, 0644), 0);

        assert_int_equal(runtime_host_devices(dir, devs), 4);
        char *text = json_dumps(devs, JSON_SORT_KEYS | JSON_COMPACT);
        assert_non_null(text);
        assert_non_null(strstr(text, "{\"fileMode\":438,\"gid\":0,\"major\":1,\"minor\":3,"
                                     "\"path\":\"/dev/null\",\"type\":\"c\",\"uid\":0}"));
        assert_non_null(strstr(text, "{\"fileMode\":432,\"gid\":6,\"major\":8,\"minor\":0,"
                                     "\"path\":\"/dev/sda\",\"type\":\"b\",\"uid\":0}"));
        assert_non_null(strstr(text, "\"path\":\"/dev/net/tun\""));
        assert_non_null(strstr(text, "\"path\":\"/dev/net/deep/x\""));
        free(text);
        json_decref(devs);

        devs = json_array();
        assert_int_equal(runtime_host_devices("/nonexistent-dev", devs), -ENOENT);
        json_decref(devs);
        snprintf(p, sizeof p, "rm -rf '%s'", dir);
        assert_int_equal(system(p), 0);
}

static uint64_t caps_with(char **add, char **drop) {
        RuntimeContainerConfig c;
        json_t *j;
        uint64_t m;

        cfg_init(&c);
        c.cap_add = add;
        c.cap_drop = drop;
        j = gen(&c);
        m = spec_caps(j);
        json_decref(j);
        runtime_container_config_done(&c);
        return m;
}

#define B(n) (UINT64_C(1) << (n))

static void test_capabilities(void **state) {
        uint64_t def = default_mask();

        assert_int_equal(runtime_capability_from_string("net_admin"), 12);
        assert_int_equal(runtime_capability_from_string("CAP_NET_ADMIN"), 12);
        assert_int_equal(runtime_capability_from_string("Cap_Net_Admin"), 12);
        assert_int_equal(runtime_capability_from_string("CHECKPOINT_RESTORE"), 40);
        assert_int_equal(runtime_capability_from_string("ALL"), -EINVAL);
        assert_int_equal(runtime_capability_from_string("CAP_"), -EINVAL);
        assert_string_equal(runtime_capability_to_string(21), "CAP_SYS_ADMIN");
        assert_null(runtime_capability_to_string(41));

        /* NET_ADMIN 12, SYS_TIME 25, SYS_PTRACE 19; CHOWN 0, KILL 5 */
        assert_int_equal(caps_with(STRV("net_admin", "CAP_SYS_TIME", "Sys_Ptrace"),
                                   STRV("cap_chown", "KILL")),
                         (def | B(12) | B(25) | B(19)) & ~(B(0) | B(5)));
        assert_int_equal(caps_with(STRV("NET_BIND_SERVICE"), STRV("all")), B(10));
        assert_int_equal(caps_with(STRV("ALL"), STRV("CHOWN")), runtime_capabilities_all() & ~B(0));
        assert_int_equal(caps_with(STRV("NET_ADMIN"), STRV("NET_ADMIN")), def);
        assert_int_equal(caps_with(NULL, STRV("ALL")), 0);
        assert_int_equal(caps_with(STRV("All"), NULL), runtime_capabilities_all());
}

static void test_capability_errors(void **state) {
        RuntimeContainerConfig c;

        cfg_init(&c);
        c.cap_add = STRV("CHOWN", "NET_ADMN");
        assert_string_equal(gen_err(&c), "capabilities.add[1]: unknown capability \"NET_ADMN\"");
        strv_free(c.cap_add);
        c.cap_add = NULL;
        c.cap_drop = STRV("CAP_ALL");
        assert_string_equal(gen_err(&c), "capabilities.drop[0]: unknown capability \"CAP_ALL\"");
        runtime_container_config_done(&c);
}

static void test_process_fields(void **state) {
        RuntimeContainerConfig c;
        json_t *j, *g;

        cfg_init(&c);
        c.uid = 1000;
        c.gid = 2000;
        c.additional_gids = calloc(2, sizeof(gid_t));
        c.additional_gids[0] = 10;
        c.additional_gids[1] = 20;
        c.n_additional_gids = 2;
        c.no_new_privileges = true;
        c.apparmor_profile = strdup("nanolet-default");
        c.oom_score_adj = -997;
        c.oom_score_adj_set = true;
        c.terminal = true;
        c.cwd = strdup("/work");
        c.readonly_rootfs = true;
        strv_free(c.env);
        c.env = STRV("PATH=/opt/bin", "A=1");
        c.annotations = STRV("io.kubernetes.pod.name=web", "x=a=b");
        c.rlimits = calloc(1, sizeof(RuntimeRlimit));
        c.rlimits[0] = (RuntimeRlimit){ strdup("RLIMIT_NOFILE"), 1024, 4096 };
        c.n_rlimits = 1;
        c.cgroups_path = strdup("/nanolet/podu1/c1");
        j = gen(&c);
        assert_int_equal(json_integer_value(path(j, "process.user.uid")), 1000);
        assert_int_equal(json_integer_value(path(j, "process.user.gid")), 2000);
        g = path(j, "process.user.additionalGids");
        assert_int_equal(json_array_size(g), 2);
        assert_int_equal(json_integer_value(json_array_get(g, 0)), 10);
        assert_int_equal(json_integer_value(json_array_get(g, 1)), 20);
        assert_true(json_is_true(path(j, "process.noNewPrivileges")));
        assert_string_equal(json_string_value(path(j, "process.apparmorProfile")),
                            "nanolet-default");
        assert_int_equal(json_integer_value(path(j, "process.oomScoreAdj")), -997);
        assert_true(json_is_true(path(j, "process.terminal")));
        assert_string_equal(json_string_value(path(j, "process.cwd")), "/work");
        assert_true(json_is_true(path(j, "root.readonly")));
        /* the caller's PATH wins; no default added */
        assert_int_equal(json_array_size(path(j, "process.env")), 2);
        assert_string_equal(json_string_value(json_object_get(json_object_get(j, "annotations"),
                                                              "io.kubernetes.pod.name")),
                            "web");
        assert_string_equal(
                json_string_value(json_object_get(json_object_get(j, "annotations"), "x")), "a=b");
        assert_string_equal(json_string_value(json_object_get(
                                    json_array_get(path(j, "process.rlimits"), 0), "type")),
                            "RLIMIT_NOFILE");
        assert_int_equal(json_integer_value(json_object_get(
                                 json_array_get(path(j, "process.rlimits"), 0), "hard")),
                         4096);
        assert_string_equal(json_string_value(path(j, "linux.cgroupsPath")), "/nanolet/podu1/c1");
        /* non-root: the same sets as root, as containerd */
        assert_int_equal(spec_caps(j), default_mask());
        json_decref(j);

        c.rlimits[0].soft = 5000;
        assert_string_equal(gen_err(&c), "rlimits[0]: soft limit above hard limit");
        c.rlimits[0].soft = 1;
        c.oom_score_adj = 1001;
        assert_non_null(strstr(gen_err(&c), "oom_score_adj:"));
        c.oom_score_adj = 0;
        free(c.cwd);
        c.cwd = strdup("work");
        assert_string_equal(gen_err(&c), "cwd: \"work\" is not an absolute path");
        free(c.cwd);
        c.cwd = NULL;
        strv_free(c.args);
        c.args = NULL;
        assert_string_equal(gen_err(&c), "args: empty command");
        c.args = STRV("x");
        free(c.rootfs);
        c.rootfs = strdup("rootfs");
        assert_non_null(strstr(gen_err(&c), "rootfs:"));
        runtime_container_config_done(&c);
}

static void test_resources(void **state) {
        RuntimeContainerConfig c;
        json_t *j;

        cfg_init(&c);
        c.resources.cpu_shares = 512;
        c.resources.cpu_quota = 50000;
        c.resources.cpu_period = 100000;
        c.resources.memory_limit = INT64_C(64) << 20;
        c.resources.pids_limit = 100;
        c.resources.hugepages = calloc(1, sizeof(*c.resources.hugepages));
        c.resources.hugepages[0].page_size = strdup("2MB");
        c.resources.hugepages[0].limit = UINT64_C(4) << 21;
        c.resources.n_hugepages = 1;
        j = gen(&c);
        assert_true(json_is_integer(path(j, "linux.resources.cpu.shares")));
        assert_int_equal(json_integer_value(path(j, "linux.resources.cpu.shares")), 512);
        assert_int_equal(json_integer_value(path(j, "linux.resources.cpu.quota")), 50000);
        assert_int_equal(json_integer_value(path(j, "linux.resources.cpu.period")), 100000);
        assert_true(json_is_integer(path(j, "linux.resources.memory.limit")));
        assert_int_equal(json_integer_value(path(j, "linux.resources.memory.limit")), 67108864);
        assert_int_equal(json_integer_value(path(j, "linux.resources.pids.limit")), 100);
        {
                json_t *h = json_array_get(path(j, "linux.resources.hugepageLimits"), 0);
                assert_string_equal(json_string_value(json_object_get(h, "pageSize")), "2MB");
                assert_int_equal(json_integer_value(json_object_get(h, "limit")), 8388608);
        }
        json_decref(j);

        free(c.resources.hugepages[0].page_size);
        c.resources.hugepages[0].page_size = strdup("2M");
        assert_string_equal(gen_err(&c),
                            "resources.hugepages[0].page_size: \"2M\" is not like \"2MB\"");
        c.resources.n_hugepages = 1;
        free(c.resources.hugepages[0].page_size);
        c.resources.hugepages[0].page_size = strdup("1GB");
        c.resources.memory_limit = -5;
        assert_non_null(strstr(gen_err(&c), "resources.memory_limit"));
        runtime_container_config_done(&c);
}

static const char *sysctl_err(RuntimeNamespaceMode net, RuntimeNamespaceMode ipc, const char *s) {
        RuntimeContainerConfig c;
        static char msg[1024];
        json_t *j = NULL;
        Error err = {};

        cfg_init(&c);
        c.net.mode = net;
        c.ipc.mode = ipc;
        c.sysctls = STRV(s);
        if (runtime_config_to_json(&c, &j, &err) < 0)
                snprintf(msg, sizeof(msg), "%s", err.message);
        else
                msg[0] = 0;
        json_decref(j);
        runtime_container_config_done(&c);
        return msg;
}

static void test_sysctls(void **state) {
        RuntimeContainerConfig c;
        json_t *j, *o;

        cfg_init(&c);
        c.sysctls = STRV("kernel.shm_rmid_forced=1", "net.ipv4.ip_local_port_range=1024 65000",
                         "net/ipv4/tcp_syncookies=1", "fs.mqueue.msg_max=20", "kernel.sem=1 2 3 4",
                         "net.core.somaxconn=1024");
        c.net = (RuntimeNamespace){ RUNTIME_NS_PATH, strdup("/run/nanolet/ns/u1/net") };
        j = gen(&c);
        o = path(j, "linux.sysctl");
        assert_int_equal(json_object_size(o), 6);
        assert_string_equal(json_string_value(json_object_get(o, "net.ipv4.ip_local_port_range")),
                            "1024 65000");
        assert_string_equal(json_string_value(json_object_get(o, "net.ipv4.tcp_syncookies")), "1");
        assert_string_equal(json_string_value(json_object_get(o, "kernel.sem")), "1 2 3 4");
        json_decref(j);
        runtime_container_config_done(&c);

        /* the safe set in the pod's own namespaces */
        assert_string_equal(
                sysctl_err(RUNTIME_NS_NEW, RUNTIME_NS_NEW, "net.ipv4.ping_group_range=0 1"), "");
        assert_string_equal(sysctl_err(RUNTIME_NS_HOST, RUNTIME_NS_NEW, "kernel.shm_rmid_forced=1"),
                            "");
        /* namespaced, but the namespace is the host's */
        assert_string_equal(sysctl_err(RUNTIME_NS_HOST, RUNTIME_NS_NEW, "net.ipv4.ip_forward=1"),
                            "sysctls[0]: \"net.ipv4.ip_forward\" needs the pod's own network "
                            "namespace, but it uses the host's");
        assert_string_equal(
                sysctl_err(RUNTIME_NS_HOST, RUNTIME_NS_NEW, "net.ipv4.tcp_syncookies=1"),
                "sysctls[0]: \"net.ipv4.tcp_syncookies\" needs the pod's own network namespace, "
                "but it uses the host's");
        assert_non_null(
                strstr(sysctl_err(RUNTIME_NS_NEW, RUNTIME_NS_HOST, "fs.mqueue.queues_max=4"),
                       "IPC namespace"));
        /* not namespaced at all */
        assert_string_equal(sysctl_err(RUNTIME_NS_NEW, RUNTIME_NS_NEW, "kernel.foo=1"),
                            "sysctls[0]: \"kernel.foo\" is not a namespaced sysctl and would "
                            "change the whole node");
        assert_non_null(strstr(sysctl_err(RUNTIME_NS_NEW, RUNTIME_NS_NEW, "vm.swappiness=1"),
                               "\"vm.swappiness\""));
        assert_string_equal(sysctl_err(RUNTIME_NS_NEW, RUNTIME_NS_NEW, "net.ipv4.ip_forward"),
                            "sysctls[0]: \"net.ipv4.ip_forward\" is not key=value");
}

static void test_seccomp_default(void **state) {
        RuntimeContainerConfig c;
        json_t *j, *sc;
        size_t i;
        json_t *r;
        bool clone_rule = false, clone3_enosys = false;

        cfg_init(&c);
        j = gen(&c);
        sc = path(j, "linux.seccomp");
        assert_non_null(sc);
        assert_string_equal(json_string_value(json_object_get(sc, "defaultAction")),
                            "SCMP_ACT_ERRNO");
        assert_int_equal(json_integer_value(json_object_get(sc, "defaultErrnoRet")), EPERM);
#if defined(__x86_64__)
        assert_true(arr_has(json_object_get(sc, "architectures"), "SCMP_ARCH_X86_64"));
        assert_true(arr_has(json_object_get(sc, "architectures"), "SCMP_ARCH_X86"));
        /* containerd's three: the 32-bit ABIs make up two thirds of the
         * filter runc compiles (docs/internals/design-decisions.md, "The
         * seccomp profile stays the default"), but dropping one changes
         * what 32-bit and x32 processes may do, so the list stays whole. */
        assert_true(arr_has(json_object_get(sc, "architectures"), "SCMP_ARCH_X32"));
        assert_int_equal(json_array_size(json_object_get(sc, "architectures")), 3);
        assert_true(seccomp_allows(j, "arch_prctl"));
#elif defined(__aarch64__)
        assert_true(arr_has(json_object_get(sc, "architectures"), "SCMP_ARCH_AARCH64"));
#endif
        assert_true(seccomp_allows(j, "read"));
        assert_true(seccomp_allows(j, "execve"));
        assert_true(seccomp_allows(j, "chroot")); /* CAP_SYS_CHROOT is a default capability */
        assert_false(seccomp_mentions(j, "kexec_load"));
        assert_false(seccomp_mentions(j, "mount"));
        assert_false(seccomp_mentions(j, "bpf"));
        assert_false(seccomp_allows(j, "socket")); /* only with argument rules */
        assert_false(seccomp_allows(j, "personality"));
        json_array_foreach(json_object_get(sc, "syscalls"), i, r) {
                json_t *names = json_object_get(r, "names");
                if (arr_has(names, "clone")) {
                        json_t *a = json_array_get(json_object_get(r, "args"), 0);
                        assert_non_null(a);
                        assert_string_equal(json_string_value(json_object_get(a, "op")),
                                            "SCMP_CMP_MASKED_EQ");
                        assert_int_equal(json_integer_value(json_object_get(a, "value")),
                                         0x7E020000);
                        clone_rule = true;
                }
                if (arr_has(names, "clone3") &&
                    streq(json_string_value(json_object_get(r, "action")), "SCMP_ACT_ERRNO") &&
                    json_integer_value(json_object_get(r, "errnoRet")) == ENOSYS)
                        clone3_enosys = true;
                /* every rule is well-formed */
                assert_true(json_array_size(names) > 0);
                assert_non_null(json_string_value(json_object_get(r, "action")));
        }
        assert_true(clone_rule);
        assert_true(clone3_enosys);
        json_decref(j);

        /* CAP_SYS_ADMIN brings mount & co. and lifts the clone restriction */
        c.cap_add = STRV("SYS_ADMIN", "SYS_PTRACE");
        j = gen(&c);
        assert_true(seccomp_allows(j, "mount"));
        assert_true(seccomp_allows(j, "unshare"));
        assert_true(seccomp_allows(j, "clone"));
        assert_true(seccomp_allows(j, "clone3"));
        assert_true(seccomp_allows(j, "ptrace"));
        assert_true(seccomp_allows(j, "kcmp"));
        assert_false(seccomp_mentions(j, "kexec_load"));
        json_decref(j);

        /* dropping SYS_CHROOT takes chroot away */
        strv_free(c.cap_add);
        c.cap_add = NULL;
        c.cap_drop = STRV("SYS_CHROOT");
        j = gen(&c);
        assert_false(seccomp_mentions(j, "chroot"));
        json_decref(j);

        c.seccomp = RUNTIME_SECCOMP_UNCONFINED;
        j = gen(&c);
        assert_null(path(j, "linux.seccomp"));
        assert_non_null(path(j, "linux"));
        json_decref(j);
        runtime_container_config_done(&c);
}

static const char *localhost(const char *profile, json_t **ret) {
        static char p[512];
        RuntimeContainerConfig c;

        write_text("profile.json", profile, p, sizeof(p));
        cfg_init(&c);
        c.seccomp = RUNTIME_SECCOMP_LOCALHOST;
        c.seccomp_profile_path = strdup(p);
        if (ret)
                *ret = gen(&c);
        else {
                static char msg[1024];
                snprintf(msg, sizeof(msg), "%s", gen_err(&c));
                runtime_container_config_done(&c);
                return msg;
        }
        runtime_container_config_done(&c);
        return NULL;
}

/* Whether this process maps a file whose name contains what. */
static bool mapped(const char *what) {
        char line[4096];
        bool found = false;
        FILE *f = fopen("/proc/self/maps", "re");
        assert_non_null(f);
        while (fgets(line, sizeof line, f))
                if (strstr(line, what))
                        found = true;
        fclose(f);
        return found;
}

static void test_seccomp_localhost(void **state) {
        char expect[1024], p[512];
        json_t *j, *sc;
        const char *msg;

        localhost(
                "{ \"comment\": \"dropped\",\n"
                "  \"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 1,\n"
                "  \"architectures\": [\"SCMP_ARCH_X86_64\", \"SCMP_ARCH_AARCH64\"],\n"
                "  \"syscalls\": [\n"
                "    { \"names\": [\"read\", \"write\", \"chown32\"], \"action\": "
                "\"SCMP_ACT_ALLOW\" },\n"
                "    { \"names\": [\"personality\"], \"action\": \"SCMP_ACT_ALLOW\",\n"
                "      \"args\": [ { \"index\": 0, \"value\": 8, \"op\": \"SCMP_CMP_EQ\" } ] },\n"
                "    { \"names\": [\"mkdir\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 13 }\n"
                "  ] }\n",
                &j);
        sc = path(j, "linux.seccomp");
        assert_non_null(sc);
        /* libseccomp was loaded for the check and closed after it: nothing
         * else maps it (neither this test nor the agent links it). */
        assert_false(mapped("libseccomp"));
        assert_null(json_object_get(sc, "comment"));
        assert_string_equal(json_string_value(json_object_get(sc, "defaultAction")),
                            "SCMP_ACT_ERRNO");
        assert_int_equal(json_array_size(json_object_get(sc, "syscalls")), 3);
        assert_true(seccomp_allows(j, "read"));
        assert_int_equal(json_integer_value(json_object_get(
                                 json_array_get(json_object_get(sc, "syscalls"), 2), "errnoRet")),
                         13);
        json_decref(j);

        snprintf(p, sizeof(p), "%s/profile.json", tmpdir);

        msg = localhost("{ \"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": ["
                        "{ \"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\" },"
                        "{ \"names\": [\"frobnicate\"], \"action\": \"SCMP_ACT_ALLOW\" } ] }",
                        NULL);
        snprintf(expect, sizeof(expect),
                 "seccomp profile \"%s\": syscalls[1].names[0]: unknown syscall \"frobnicate\"", p);
        assert_string_equal(msg, expect);

        msg = localhost("{ \"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": ["
                        "{ \"names\": [\"read\"], \"action\": \"SCMP_ACT_MAYBE\" } ] }",
                        NULL);
        snprintf(expect, sizeof(expect),
                 "seccomp profile \"%s\": syscalls[0].action: unknown action \"SCMP_ACT_MAYBE\"",
                 p);
        assert_string_equal(msg, expect);

        msg = localhost("{ \"defaultAction\": \"SCMP_ACT_DENY\" }", NULL);
        assert_non_null(strstr(msg, "defaultAction: unknown action \"SCMP_ACT_DENY\""));
        msg = localhost("{ \"syscalls\": [] }", NULL);
        assert_non_null(strstr(msg, "defaultAction: missing"));
        msg = localhost(
                "{ \"defaultAction\": \"SCMP_ACT_ALLOW\", \"architectures\": [\"SCMP_ARCH_VAX\"] }",
                NULL);
        assert_non_null(strstr(msg, "architectures[0]: unknown architecture \"SCMP_ARCH_VAX\""));
        msg = localhost(
                "{ \"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": ["
                "{ \"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\","
                "  \"args\": [ { \"index\": 0, \"value\": 1, \"op\": \"SCMP_CMP_ABOUT\" } ] } ] }",
                NULL);
        assert_non_null(strstr(msg, "syscalls[0].args[0].op: unknown operator \"SCMP_CMP_ABOUT\""));
        msg = localhost(
                "{ \"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": ["
                "{ \"names\": [\"read\"], \"action\": \"SCMP_ACT_ALLOW\","
                "  \"args\": [ { \"index\": 6, \"value\": 1, \"op\": \"SCMP_CMP_EQ\" } ] } ] }",
                NULL);
        assert_non_null(strstr(msg, "syscalls[0].args[0].index"));
        msg = localhost("{ \"defaultAction\": \"SCMP_ACT_ERRNO\", \"syscalls\": [ { \"action\": "
                        "\"SCMP_ACT_ALLOW\" } ] }",
                        NULL);
        assert_non_null(strstr(msg, "syscalls[0].names: missing or empty"));
        msg = localhost("{ \"defaultAction\": ", NULL);
        assert_non_null(strstr(msg, "line 1"));
        msg = localhost("[]", NULL);
        assert_non_null(strstr(msg, "not a JSON object"));

        {
                RuntimeContainerConfig c;
                cfg_init(&c);
                c.seccomp = RUNTIME_SECCOMP_LOCALHOST;
                c.seccomp_profile_path = strdup("/nonexistent/profile.json");
                assert_string_equal(gen_err(&c), "seccomp profile \"/nonexistent/profile.json\": "
                                                 "cannot read: No such file or directory");
                free(c.seccomp_profile_path);
                c.seccomp_profile_path = NULL;
                assert_non_null(strstr(gen_err(&c), "seccompProfile:"));
                runtime_container_config_done(&c);
        }

        /* more than 1 MiB is refused before parsing */
        {
                size_t n = 1024 * 1024 + 16;
                char *big = malloc(n + 1);
                assert_non_null(big);
                memset(big, ' ', n);
                big[0] = '{';
                big[n - 1] = '}';
                big[n] = 0;
                msg = localhost(big, NULL);
                free(big);
                assert_non_null(strstr(msg, "larger than"));
        }
}

static void test_bundle_write(void **state) {
        RuntimeContainerConfig c;
        Error err = {};
        char bundle[512], file[600];
        struct stat st;
        json_t *j, *want;
        json_error_t jerr;
        _cleanup_free_ char *data = NULL;
        size_t size;

        cfg_init(&c);
        snprintf(bundle, sizeof(bundle), "%s/bundles/c1/attempt-0", tmpdir);
        assert_int_equal(runtime_bundle_write(bundle, &c, &err), 0);
        assert_int_equal(stat(bundle, &st), 0);
        assert_int_equal(st.st_mode & 07777, 0700);
        snprintf(file, sizeof(file), "%s/config.json", bundle);
        assert_int_equal(read_full_file_at(AT_FDCWD, file, 1 << 20, &data, &size), 0);
        assert_non_null(strstr(data, "\n  \"ociVersion\"")); /* indented */
        assert_true(size > 0 && data[size - 1] == '\n');
        j = json_loadb(data, size, 0, &jerr);
        assert_non_null(j);
        want = gen(&c);
        assert_true(json_equal(j, want));
        json_decref(j);
        json_decref(want);

        /* an invalid config writes nothing */
        c.cap_add = STRV("NOPE");
        snprintf(bundle, sizeof(bundle), "%s/bundles/c2", tmpdir);
        assert_true(runtime_bundle_write(bundle, &c, &err) < 0);
        assert_non_null(strstr(err.message, "capabilities.add[0]"));
        assert_int_equal(stat(bundle, &st), -1);
        runtime_container_config_done(&c);
}

/* ---- root: the generated bundle really runs under runc ---- */

static bool strict(void) {
        const char *s = getenv("NANOLET_TEST_STRICT");
        return s && streq(s, "1");
}

static const char *find_in_path(const char *name) {
        static char buf[512];
        const char *p = getenv("PATH");
        _cleanup_free_ char *copy = strdup(p ? p : "/usr/sbin:/usr/bin:/sbin:/bin");
        char *save = NULL;

        for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
                snprintf(buf, sizeof(buf), "%s/%s", d, name);
                if (access(buf, X_OK) == 0)
                        return buf;
        }
        return NULL;
}

/* Runs argv, returns its exit status; stdout (and stderr) into out. */
static int run(char *const argv[], char *out, size_t n) {
        int p[2];
        pid_t pid;
        size_t used = 0;
        int status;

        assert_int_equal(pipe2(p, O_CLOEXEC), 0);
        pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
                int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
                (void)dup2(null, 0);
                (void)dup2(p[1], 1);
                (void)dup2(p[1], 2);
                execv(argv[0], argv);
                _exit(127);
        }
        close(p[1]);
        for (;;) {
                ssize_t k = read(p[0], out + used, n - 1 - used);
                if (k <= 0)
                        break;
                used += (size_t)k;
                if (used == n - 1)
                        break;
        }
        out[used] = 0;
        close(p[0]);
        assert_int_equal(waitpid(pid, &status, 0), pid);
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int copy_file(const char *from, const char *to, mode_t mode) {
        _cleanup_free_ char *data = NULL;
        size_t size;
        int r = read_full_file_at(AT_FDCWD, from, 64 << 20, &data, &size);
        if (r < 0)
                return r;
        return write_file_atomic(to, data, size, mode);
}

static void test_runc_run(void **state) {
        static const char *const applets[] = { "sh", "cat", "grep" };
        const char *runc_path, *busybox;
        char runc[512], root[512], rootfs[512], bundle[512], p[600], id[64], out[8192];
        RuntimeContainerConfig c;
        Error err = {};
        uint64_t want, capeff = 0;
        unsigned nnp = 9, seccomp = 9;
        const char *s;
        int rc;

        if (geteuid() != 0) {
                if (strict())
                        fail_msg("test_runc_run needs root (NANOLET_TEST_STRICT=1)");
                skip();
        }
        runc_path = find_in_path("runc");
        busybox = access("/bin/busybox", X_OK) == 0 ? "/bin/busybox" : find_in_path("busybox");
        if (!runc_path || !busybox) {
                if (strict())
                        fail_msg("runc or busybox missing");
                skip();
        }
        snprintf(runc, sizeof(runc), "%s", runc_path);

        /* rootfs: busybox and the applets the command uses */
        snprintf(rootfs, sizeof(rootfs), "%s/rootfs", tmpdir);
        snprintf(p, sizeof(p), "%s/bin", rootfs);
        assert_int_equal(mkdir_p(p, 0755), 0);
        snprintf(p, sizeof(p), "%s/bin/busybox", rootfs);
        assert_int_equal(copy_file(busybox, p, 0755), 0);
        for (size_t i = 0; i < ELEMENTSOF(applets); i++) {
                snprintf(p, sizeof(p), "%s/bin/%s", rootfs, applets[i]);
                assert_int_equal(symlink("busybox", p), 0);
        }

        cfg_init(&c);
        free(c.rootfs);
        c.rootfs = strdup(rootfs);
        strv_free(c.args);
        c.args =
                STRV("sh", "-c", "cat /proc/self/status | grep -E '^(CapEff|NoNewPrivs|Seccomp):'");
        c.no_new_privileges = true;
        c.hostname = strdup("rtcfg");
        c.resources.pids_limit = 64;
        c.sysctls = STRV("net.ipv4.ping_group_range=0 0");
        assert_int_equal(runtime_capabilities_resolve(&c, &want, &err), 0);

        snprintf(bundle, sizeof(bundle), "%s/bundle", tmpdir);
        assert_int_equal(runtime_bundle_write(bundle, &c, &err), 0);
        runtime_container_config_done(&c);

        snprintf(root, sizeof(root), "%s/runc", tmpdir);
        snprintf(id, sizeof(id), "nanolet-rtcfg-%d", (int)getpid());
        rc = run((char *const[]){ runc, "--root", root, "run", "--bundle", bundle, id, NULL }, out,
                 sizeof(out));
        /* cleanup first, so a failed assertion leaves nothing behind */
        {
                char ignored[4096];
                (void)run((char *const[]){ runc, "--root", root, "delete", "--force", id, NULL },
                          ignored, sizeof(ignored));
        }
        if (rc != 0)
                fail_msg("runc run exited %d:\n%s", rc, out);
        print_message("runc run printed:\n%s", out);

        s = strstr(out, "CapEff:");
        assert_non_null(s);
        assert_int_equal(sscanf(s, "CapEff: %" SCNx64, &capeff), 1);
        s = strstr(out, "NoNewPrivs:");
        assert_non_null(s);
        assert_int_equal(sscanf(s, "NoNewPrivs: %u", &nnp), 1);
        s = strstr(out, "Seccomp:");
        assert_non_null(s);
        assert_int_equal(sscanf(s, "Seccomp: %u", &seccomp), 1);

        assert_int_equal(capeff, want);
        assert_int_equal(capeff, UINT64_C(0xa80425fb));
        assert_int_equal(nnp, 1);
        assert_int_equal(seccomp, 2); /* SECCOMP_MODE_FILTER */
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_config_done),
                cmocka_unit_test(test_defaults),
                cmocka_unit_test(test_namespaces),
                cmocka_unit_test(test_user_namespace),
                cmocka_unit_test(test_mounts_replace),
                cmocka_unit_test(test_privileged),
                cmocka_unit_test(test_host_devices),
                cmocka_unit_test(test_capabilities),
                cmocka_unit_test(test_capability_errors),
                cmocka_unit_test(test_process_fields),
                cmocka_unit_test(test_resources),
                cmocka_unit_test(test_sysctls),
                cmocka_unit_test(test_seccomp_default),
                cmocka_unit_test_setup_teardown(test_seccomp_localhost, setup, teardown),
                cmocka_unit_test_setup_teardown(test_bundle_write, setup, teardown),
                cmocka_unit_test_setup_teardown(test_runc_run, setup, teardown),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
