#include "cgroup.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <stdio.h>
#include <unistd.h>

#include "cleanup.h"
#include "dirent-util.h"
#include "fileio.h"
#include "macro.h"
#include "string-util.h"
#include "strv.h"

CgroupDriver cgroup_driver_from_string(const char *s) {
        if (streq_ptr(s, "cgroupfs"))
                return CGROUP_DRIVER_CGROUPFS;
        if (streq_ptr(s, "systemd"))
                return CGROUP_DRIVER_SYSTEMD;
        return _CGROUP_DRIVER_INVALID;
}

const char *cgroup_driver_to_string(CgroupDriver d) {
        switch (d) {
        case CGROUP_DRIVER_CGROUPFS:
                return "cgroupfs";
        case CGROUP_DRIVER_SYSTEMD:
                return "systemd";
        case _CGROUP_DRIVER_MAX:
        case _CGROUP_DRIVER_INVALID:
        default:
                return NULL;
        }
}

static const char *qos_level_name(CgroupQos qos) {
        switch (qos) {
        case CGROUP_QOS_BURSTABLE:
                return "burstable";
        case CGROUP_QOS_BEST_EFFORT:
                return "besteffort";
        case CGROUP_QOS_GUARANTEED:
        case _CGROUP_QOS_MAX:
        case _CGROUP_QOS_INVALID:
        default:
                return NULL; /* directly under kubepods */
        }
}

/* The root as cgroup name components: "/a/b" -> a, b. A systemd slice path
 * ("/edge.slice/edge-x.slice") is parsed as kubelet's
 * ParseSystemdToCgroupName does: each slice's own last dash-separated part. */
static int root_components(const CgroupLayout *l, char ***ret) {
        _cleanup_free_ char *copy = strdup(l->root ? l->root : "/");
        _cleanup_strv_free_ char **parts = NULL;
        char *save = NULL;
        if (!copy)
                return -ENOMEM;
        for (char *e = strtok_r(copy, "/", &save); e; e = strtok_r(NULL, "/", &save)) {
                if (l->driver == CGROUP_DRIVER_SYSTEMD) {
                        if (endswith(e, ".slice"))
                                e[strlen(e) - strlen(".slice")] = 0;
                        char *dash = strrchr(e, '-');
                        if (dash)
                                e = dash + 1;
                }
                if (isempty(e))
                        continue;
                int r = strv_extend(&parts, e);
                if (r < 0)
                        return r;
        }
        *ret = TAKE_PTR(parts);
        return 0;
}

/* components -> "/a/b/c" (cgroupfs) or "/a.slice/a-b.slice/a-b-c.slice"
 * (systemd, '-' inside a component escaped as '_' like kubelet). */
static char *join_components(const CgroupLayout *l, char *const *comps) {
        _cleanup_free_ char *buf = NULL, *prefix = NULL;
        size_t len = 0, cap = 0, plen = 0, pcap = 0;
        if (!comps || !comps[0])
                return strdup("/");
        STRV_FOREACH(c, comps) {
                if (l->driver != CGROUP_DRIVER_SYSTEMD) {
                        if (strbuf_append(&buf, &len, &cap, "/", 1) < 0 ||
                            strbuf_append(&buf, &len, &cap, *c, strlen(*c)) < 0)
                                return NULL;
                        continue;
                }
                _cleanup_free_ char *esc = strdup(*c);
                if (!esc)
                        return NULL;
                for (char *p = esc; *p; p++)
                        if (*p == '-')
                                *p = '_';
                if ((plen > 0 && strbuf_append(&prefix, &plen, &pcap, "-", 1) < 0) ||
                    strbuf_append(&prefix, &plen, &pcap, esc, strlen(esc)) < 0 ||
                    strbuf_append(&buf, &len, &cap, "/", 1) < 0 ||
                    strbuf_append(&buf, &len, &cap, prefix, plen) < 0 ||
                    strbuf_append(&buf, &len, &cap, ".slice", 6) < 0)
                        return NULL;
        }
        return TAKE_PTR(buf);
}

static char *level_path(const CgroupLayout *l, CgroupQos qos, const char *uid) {
        _cleanup_strv_free_ char **comps = NULL;
        if (root_components(l, &comps) < 0 || strv_extend(&comps, "kubepods") < 0)
                return NULL;
        const char *q = qos_level_name(qos);
        if (q && strv_extend(&comps, q) < 0)
                return NULL;
        if (uid) {
                char *pod = strprintf("pod%s", uid);
                if (!pod || strv_consume(&comps, pod) < 0) {
                        free(pod);
                        return NULL;
                }
        }
        return join_components(l, comps);
}

char *runtime_qos_cgroup_path(const CgroupLayout *l, CgroupQos qos) {
        return level_path(l, qos, NULL);
}

char *runtime_pod_cgroup_path(const CgroupLayout *l, CgroupQos qos, const char *uid) {
        if (isempty(uid) || strchr(uid, '/'))
                return NULL;
        return level_path(l, qos, uid);
}

char *runtime_container_cgroups_path(const CgroupLayout *l, CgroupQos qos, const char *uid,
                                     const char *id) {
        _cleanup_free_ char *pod = runtime_pod_cgroup_path(l, qos, uid);
        if (!pod)
                return NULL;
        if (l->driver == CGROUP_DRIVER_SYSTEMD)
                /* runc's systemd form: "slice:prefix:name" */
                return strprintf("%s:nanolet:%s", strrchr(pod, '/') + 1, id);
        return strprintf("%s/%s", pod, id);
}

char *runtime_container_cgroup_path(const CgroupLayout *l, CgroupQos qos, const char *uid,
                                    const char *id) {
        _cleanup_free_ char *pod = runtime_pod_cgroup_path(l, qos, uid);
        if (!pod)
                return NULL;
        if (l->driver == CGROUP_DRIVER_SYSTEMD)
                return strprintf("%s/nanolet-%s.scope", pod, id);
        return strprintf("%s/%s", pod, id);
}

bool runtime_systemd_is_init(const char *sysroot, Error *err) {
        _cleanup_free_ char *run = strprintf("%s/run/systemd/system", sysroot);
        _cleanup_free_ char *comm_path = strprintf("%s/proc/1/comm", sysroot);
        _cleanup_free_ char *comm = NULL;
        struct stat st;
        size_t size;

        if (!run || !comm_path) {
                error_set(err, -ENOMEM, "out of memory");
                return false;
        }
        if (read_full_file_at(AT_FDCWD, comm_path, 4096, &comm, &size) < 0)
                comm = NULL;
        else
                comm[strcspn(comm, "\n")] = 0;
        bool booted = lstat(run, &st) == 0 && S_ISDIR(st.st_mode);
        if (booted && comm && streq(comm, "systemd"))
                return true;
        error_set(err, -EOPNOTSUPP,
                  "--cgroup-driver systemd needs systemd as PID 1, but PID 1 is \"%s\"%s; use "
                  "--cgroup-driver cgroupfs",
                  comm ? comm : "unknown", booted ? "" : " and /run/systemd/system does not exist");
        return false;
}

uint64_t cgroup_cpu_shares_to_weight(uint64_t shares) {
        if (shares < 2)
                shares = 2;
        if (shares > 262144)
                shares = 262144;
        return 1 + ((shares - 2) * 9999) / 262142;
}

/* ---- the systemd driver's slices ---- */

const char *runtime_systemd_slice_unit(const char *path) {
        const char *slash = path ? strrchr(path, '/') : NULL;
        const char *name = slash ? slash + 1 : path;
        if (isempty(name) || !endswith(name, ".slice") || streq(name, ".slice"))
                return NULL;
        return name;
}

static int prop_add(char ***l, size_t *n, const char *name, const char *type, const char *value) {
        if (strv_extend(l, name) < 0 || strv_extend(l, type) < 0 || strv_extend(l, value) < 0)
                return -ENOMEM;
        (*n)++;
        return 0;
}

static int prop_add_u64(char ***l, size_t *n, const char *name, uint64_t v) {
        char buf[32];
        snprintf(buf, sizeof buf, "%" PRIu64, v);
        return prop_add(l, n, name, "t", buf);
}

/* The limits as unit properties (libcontainer's names and conversions). */
static int slice_properties(const CgroupResources *res, bool v2, char ***l, size_t *n) {
        int r = 0;
        if (!res)
                return 0;
        if (res->cpu_shares > 0)
                r = v2 ? prop_add_u64(l, n, "CPUWeight",
                                      cgroup_cpu_shares_to_weight(res->cpu_shares))
                       : prop_add_u64(l, n, "CPUShares", res->cpu_shares);
        if (r >= 0 && res->cpu_quota != 0) {
                uint64_t period = res->cpu_period > 0 ? res->cpu_period : 100000;
                uint64_t per_sec = UINT64_MAX; /* systemd's infinity */
                if (res->cpu_quota > 0) {
                        per_sec = (uint64_t)res->cpu_quota * 1000000 / period;
                        /* systemd keeps the quota as a percentage: 10 ms steps;
                         * rounding up never gives less than asked */
                        if (per_sec % 10000 != 0)
                                per_sec = (per_sec / 10000 + 1) * 10000;
                }
                r = prop_add_u64(l, n, "CPUQuotaPerSecUSec", per_sec);
                if (r >= 0)
                        r = prop_add_u64(l, n, "CPUQuotaPeriodUSec", period);
        }
        if (r >= 0 && res->memory_limit > 0)
                r = prop_add_u64(l, n, v2 ? "MemoryMax" : "MemoryLimit", res->memory_limit);
        if (r >= 0 && res->pids_limit > 0)
                r = prop_add_u64(l, n, "TasksMax", (uint64_t)res->pids_limit);
        return r;
}

int runtime_systemd_slice_argv(const char *busctl, SystemdSliceCall call, const char *path,
                               const CgroupResources *res, bool v2, char ***ret) {
        static const char *const methods[_SYSTEMD_SLICE_CALL_MAX][2] = {
                [SYSTEMD_SLICE_START] = { "StartTransientUnit", "ssa(sv)a(sa(sv))" },
                [SYSTEMD_SLICE_SET] = { "SetUnitProperties", "sba(sv)" },
                [SYSTEMD_SLICE_STOP] = { "StopUnit", "ss" },
        };
        const char *unit = runtime_systemd_slice_unit(path);
        _cleanup_strv_free_ char **argv = NULL, **props = NULL;
        size_t n = 0;
        int r;

        if (!unit || call < 0 || call >= _SYSTEMD_SLICE_CALL_MAX)
                return -EINVAL;
        const char *head[] = { busctl ?: "busctl",
                               "call",
                               "--quiet",
                               "org.freedesktop.systemd1",
                               "/org/freedesktop/systemd1",
                               "org.freedesktop.systemd1.Manager",
                               methods[call][0],
                               methods[call][1],
                               unit };
        for (size_t i = 0; i < ELEMENTSOF(head); i++)
                if (strv_extend(&argv, head[i]) < 0)
                        return -ENOMEM;
        if (call == SYSTEMD_SLICE_STOP) {
                if (strv_extend(&argv, "replace") < 0)
                        return -ENOMEM;
                *ret = TAKE_PTR(argv);
                return 0;
        }
        if (call == SYSTEMD_SLICE_START) {
                /* Transient-only properties: a SET on a loaded unit refuses them. */
                _cleanup_free_ char *desc = strprintf("nanolet %s", unit);
                if (!desc || prop_add(&props, &n, "Description", "s", desc) < 0 ||
                    prop_add(&props, &n, "DefaultDependencies", "b", "false") < 0)
                        return -ENOMEM;
        }
        if (prop_add(&props, &n, "CPUAccounting", "b", "true") < 0 ||
            prop_add(&props, &n, "MemoryAccounting", "b", "true") < 0 ||
            prop_add(&props, &n, "TasksAccounting", "b", "true") < 0)
                return -ENOMEM;
        if ((r = slice_properties(res, v2, &props, &n)) < 0)
                return r;
        char count[32];
        snprintf(count, sizeof count, "%zu", n);
        if (strv_extend(&argv, call == SYSTEMD_SLICE_START ? "replace" : "true") < 0 ||
            strv_extend(&argv, count) < 0)
                return -ENOMEM;
        STRV_FOREACH(p, props)
                if (strv_extend(&argv, *p) < 0)
                        return -ENOMEM;
        /* StartTransientUnit's auxiliary units: none */
        if (call == SYSTEMD_SLICE_START && strv_extend(&argv, "0") < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(argv);
        return 0;
}

/* busctl prints the error's message, not its name (UnitExists); systemd's
 * message for it is "Unit X was already loaded or has a fragment file.",
 * older releases' "Unit X already exists." */
bool runtime_systemd_unit_exists_error(const char *stderr_text) {
        return stderr_text && (strstr(stderr_text, "already exists") ||
                               strstr(stderr_text, "was already loaded or has a fragment file") ||
                               strstr(stderr_text, "org.freedesktop.systemd1.UnitExists"));
}

bool runtime_cgroup_is_v2(const char *cgroup_root) {
        _cleanup_free_ char *controllers = strprintf("%s/cgroup.controllers", cgroup_root);
        return controllers && access(controllers, F_OK) == 0;
}

/* ---- creation ---- */

static bool is_cgroupfs(int dir_fd) {
        struct statfs sf;
        return fstatfs(dir_fd, &sf) == 0 &&
               (sf.f_type == CGROUP_SUPER_MAGIC || sf.f_type == CGROUP2_SUPER_MAGIC);
}

/* Control files exist in a real cgroup; a fixture tree of plain
 * directories (tests) gets them created. */
static int cg_write(const char *dir, const char *file, const char *value, Error *err) {
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return error_set(err, -errno, "cannot open %s: %s", dir, strerror(errno));
        int flags = O_WRONLY | O_TRUNC | O_CLOEXEC | O_NOFOLLOW;
        _cleanup_close_ int fd = openat(dfd, file, flags);
        if (fd < 0 && errno == ENOENT && !is_cgroupfs(dfd))
                fd = openat(dfd, file, flags | O_CREAT, 0644);
        if (fd < 0)
                return error_set(err, -errno, "cannot open %s/%s: %s", dir, file, strerror(errno));
        size_t n = strlen(value);
        ssize_t k = write(fd, value, n);
        if (k < 0 || (size_t)k != n)
                return error_set(err, k < 0 ? -errno : -EIO, "cannot write \"%s\" to %s/%s: %s",
                                 value, dir, file, strerror(k < 0 ? errno : EIO));
        return 0;
}

static int cg_write_u64(const char *dir, const char *file, uint64_t v, Error *err) {
        char buf[32];
        snprintf(buf, sizeof buf, "%" PRIu64, v);
        return cg_write(dir, file, buf, err);
}

static int cg_mkdir(const char *dir, Error *err) {
        int r = mkdir_p(dir, 0755);
        return r < 0 ? error_set(err, r, "cannot create cgroup %s: %s", dir, strerror(-r)) : 0;
}

static int create_v1(const char *cgroup_root, const char *path, const CgroupResources *res,
                     Error *err) {
        /* cpu and cpuacct may be one mount ("cpu,cpuacct", with symlinks)
         * or two; writing through either name works. */
        static const char *const controllers[] = { "cpu", "cpuacct", "memory", "pids", "hugetlb" };
        int r;

        for (size_t i = 0; i < ELEMENTSOF(controllers); i++) {
                const char *c = controllers[i];
                if (streq(c, "hugetlb") && res->n_hugepages == 0)
                        continue;
                _cleanup_free_ char *h = strprintf("%s/%s", cgroup_root, c);
                _cleanup_free_ char *dir = strprintf("%s/%s%s", cgroup_root, c, path);
                if (!h || !dir)
                        return -ENOMEM;
                if (access(h, F_OK) < 0) {
                        if (streq(c, "cpuacct"))
                                continue; /* stats only */
                        return error_set(err, -ENOENT,
                                         "the cgroup v1 controller %s is not mounted at %s", c, h);
                }
                if ((r = cg_mkdir(dir, err)) < 0)
                        return r;
                if (streq(c, "cpu")) {
                        if (res->cpu_shares > 0 &&
                            (r = cg_write_u64(dir, "cpu.shares", res->cpu_shares, err)) < 0)
                                return r;
                        if (res->cpu_quota != 0) {
                                /* the period first: a quota below the old
                                 * period's minimum would be refused */
                                if (res->cpu_period > 0 &&
                                    (r = cg_write_u64(dir, "cpu.cfs_period_us", res->cpu_period,
                                                      err)) < 0)
                                        return r;
                                char q[32];
                                snprintf(q, sizeof q, "%" PRId64,
                                         res->cpu_quota < 0 ? (int64_t)-1 : res->cpu_quota);
                                if ((r = cg_write(dir, "cpu.cfs_quota_us", q, err)) < 0)
                                        return r;
                        }
                } else if (streq(c, "memory")) {
                        if (res->memory_limit > 0 && (r = cg_write_u64(dir, "memory.limit_in_bytes",
                                                                       res->memory_limit, err)) < 0)
                                return r;
                } else if (streq(c, "pids")) {
                        if (res->pids_limit > 0 &&
                            (r = cg_write_u64(dir, "pids.max", (uint64_t)res->pids_limit, err)) < 0)
                                return r;
                } else if (streq(c, "hugetlb")) {
                        for (size_t k = 0; k < res->n_hugepages; k++) {
                                _cleanup_free_ char *f = strprintf("hugetlb.%s.limit_in_bytes",
                                                                   res->hugepages[k].page_size);
                                if (!f)
                                        return -ENOMEM;
                                if ((r = cg_write_u64(dir, f, res->hugepages[k].limit, err)) < 0)
                                        return r;
                        }
                }
        }
        return 0;
}

static bool word_in(const char *list, const char *word) {
        size_t n = strlen(word);
        for (const char *p = list; (p = strstr(p, word)); p += n)
                if ((p == list || strchr(" \n", p[-1])) && (p[n] == 0 || strchr(" \n", p[n])))
                        return true;
        return false;
}

/* Enables the wanted controllers (those the parent has) in parent's
 * cgroup.subtree_control, so that the child gets their files. */
static int enable_v2(const char *parent, bool hugetlb, Error *err) {
        _cleanup_free_ char *have = NULL, *ctl = strprintf("%s/cgroup.controllers", parent);
        size_t size;
        if (!ctl)
                return -ENOMEM;
        int r = read_full_file_at(AT_FDCWD, ctl, 4096, &have, &size);
        if (r < 0 && r != -ENOENT)
                return error_set(err, r, "cannot read %s: %s", ctl, strerror(-r));
        static const char *const want[] = { "cpu", "memory", "pids", "hugetlb" };
        char buf[64] = "";
        for (size_t i = 0; i < ELEMENTSOF(want); i++) {
                if (streq(want[i], "hugetlb") && !hugetlb)
                        continue;
                if (have && !word_in(have, want[i]))
                        continue;
                if (buf[0])
                        strcat(buf, " ");
                strcat(buf, "+");
                strcat(buf, want[i]);
        }
        return buf[0] ? cg_write(parent, "cgroup.subtree_control", buf, err) : 0;
}

static int create_v2(const char *cgroup_root, const char *path, const CgroupResources *res,
                     Error *err) {
        _cleanup_free_ char *dir = strprintf("%s%s", cgroup_root, path);
        _cleanup_free_ char *walk = strdup(cgroup_root);
        size_t wlen, wcap;
        int r;

        if (!dir || !walk)
                return -ENOMEM;
        wlen = wcap = strlen(walk);
        /* every level from the root down to the cgroup's parent */
        const char *p = path;
        while (*p == '/') {
                const char *next = strchr(p + 1, '/');
                if (!next)
                        break;
                if ((r = enable_v2(walk, res->n_hugepages > 0, err)) < 0)
                        return r;
                if (strbuf_append(&walk, &wlen, &wcap, p, (size_t)(next - p)) < 0)
                        return -ENOMEM;
                if ((r = cg_mkdir(walk, err)) < 0)
                        return r;
                p = next;
        }
        if ((r = enable_v2(walk, res->n_hugepages > 0, err)) < 0 || (r = cg_mkdir(dir, err)) < 0)
                return r;
        if (res->cpu_shares > 0 &&
            (r = cg_write_u64(dir, "cpu.weight", cgroup_cpu_shares_to_weight(res->cpu_shares),
                              err)) < 0)
                return r;
        if (res->cpu_quota != 0) {
                char q[64];
                uint64_t period = res->cpu_period > 0 ? res->cpu_period : 100000;
                if (res->cpu_quota < 0)
                        snprintf(q, sizeof q, "max %" PRIu64, period);
                else
                        snprintf(q, sizeof q, "%" PRId64 " %" PRIu64, res->cpu_quota, period);
                if ((r = cg_write(dir, "cpu.max", q, err)) < 0)
                        return r;
        }
        if (res->memory_limit > 0 &&
            (r = cg_write_u64(dir, "memory.max", res->memory_limit, err)) < 0)
                return r;
        if (res->pids_limit > 0 &&
            (r = cg_write_u64(dir, "pids.max", (uint64_t)res->pids_limit, err)) < 0)
                return r;
        for (size_t k = 0; k < res->n_hugepages; k++) {
                _cleanup_free_ char *f = strprintf("hugetlb.%s.max", res->hugepages[k].page_size);
                if (!f)
                        return -ENOMEM;
                if ((r = cg_write_u64(dir, f, res->hugepages[k].limit, err)) < 0)
                        return r;
        }
        return 0;
}

int runtime_cgroup_create(const char *cgroup_root, const char *path, const CgroupResources *res,
                          Error *err) {
        if (isempty(path) || path[0] != '/' || streq(path, "/") || strstr(path, ".."))
                return error_set(err, -EINVAL, "invalid cgroup path \"%s\"", strempty(path));
        _cleanup_free_ char *controllers = strprintf("%s/cgroup.controllers", cgroup_root);
        if (!controllers)
                return -ENOMEM;
        if (access(controllers, F_OK) == 0)
                return create_v2(cgroup_root, path, res, err);
        return create_v1(cgroup_root, path, res, err);
}

/* rmdir of a cgroup removes its control files with it; child cgroups
 * must go first. Regular files are never unlinked (cgroupfs refuses it and
 * a fake tree in tests has none). */
static int cgroup_rmdir_tree(int parent_fd, const char *name) {
        _cleanup_close_ int fd =
                openat(parent_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
                return errno == ENOENT ? 0 : -errno;
        _cleanup_closedir_ DIR *d = NULL;
        int r = opendir_fd(fd, NULL, 0, &d);
        if (r < 0)
                return r;
        FOREACH_DIRENT(de, d) {
                if (de->d_type != DT_DIR)
                        continue;
                int q = cgroup_rmdir_tree(fd, de->d_name);
                if (q < 0 && r == 0)
                        r = q;
        }
        if (unlinkat(parent_fd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
                return r < 0 ? r : -errno;
        return r;
}

static int remove_in_hierarchy(const char *hierarchy, const char *path) {
        _cleanup_free_ char *full = strprintf("%s%s", hierarchy, path);
        if (!full)
                return -ENOMEM;
        char *slash = strrchr(full, '/');
        if (!slash || slash == full)
                return -EINVAL;
        *slash = 0;
        _cleanup_close_ int parent = open(full, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (parent < 0)
                return errno == ENOENT ? 0 : -errno;
        return cgroup_rmdir_tree(parent, slash + 1);
}

int runtime_cgroup_remove(const char *cgroup_root, const char *path) {
        int r = 0, q;

        if (isempty(path) || path[0] != '/' || strstr(path, ".."))
                return -EINVAL;
        _cleanup_free_ char *controllers = strprintf("%s/cgroup.controllers", cgroup_root);
        if (!controllers)
                return -ENOMEM;
        if (access(controllers, F_OK) == 0) /* cgroup v2: one tree */
                return remove_in_hierarchy(cgroup_root, path);

        /* cgroup v1: every controller directory (symlinks such as cpu,cpuacct
         * point at one of them and are skipped). */
        _cleanup_closedir_ DIR *d = opendir(cgroup_root);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        for (struct dirent *de; (de = readdir(d));) {
                if (de->d_type != DT_DIR || de->d_name[0] == '.')
                        continue;
                _cleanup_free_ char *h = strprintf("%s/%s", cgroup_root, de->d_name);
                if (!h)
                        return -ENOMEM;
                q = remove_in_hierarchy(h, path);
                if (q < 0 && r == 0)
                        r = q;
        }
        return r;
}

int runtime_oom_score_adj_floor(void) {
        _cleanup_fclose_ FILE *f = fopen("/proc/self/status", "re");
        char line[256];
        unsigned long long eff = 0;

        while (f && fgets(line, sizeof line, f))
                if (sscanf(line, "CapEff: %llx", &eff) == 1)
                        break;
        if (eff & (1ULL << 24 /* CAP_SYS_RESOURCE */))
                return -1000;
        _cleanup_fclose_ FILE *o = fopen("/proc/self/oom_score_adj", "re");
        int own = 0;
        if (!o || fscanf(o, "%d", &own) != 1)
                own = 0;
        return own;
}
