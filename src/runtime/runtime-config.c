/* RuntimeContainerConfig -> OCI config.json (runtime-spec 1.0.2 as runc 1.1
 * and crun 1.8 read it), with the defaults containerd's CRI plugin applies:
 * facts taken from containerd v2.3.4 pkg/oci/spec.go (populateDefaultUnixSpec:
 * capabilities, masked and read-only paths), pkg/oci/mounts.go (default
 * mounts, minus /run as CRI's WithoutRunMount), internal/cri/opts/
 * spec_linux_opts.go (the /sys/fs/cgroup mount, caller mounts replacing
 * defaults), pkg/oci/spec_opts.go (WithDefaultUnixDevices, WithPrivileged)
 * and internal/cri/server/container_create.go (cgroup namespace only on v2
 * and not privileged; no ambient capabilities). */
#include <assert.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "fileio.h"
#include "json-util.h"
#include "macro.h"
#include "runtime-config.h"
#include "seccomp-default.h"
#include "string-util.h"
#include "strv.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

static void mount_done(RuntimeMount *m) {
        free(m->destination);
        free(m->source);
        free(m->type);
        strv_free(m->options);
}

void runtime_container_config_done(RuntimeContainerConfig *c) {
        if (!c)
                return;
        free(c->rootfs);
        strv_free(c->args);
        strv_free(c->env);
        free(c->cwd);
        free(c->additional_gids);
        free(c->hostname);
        free(c->net.path);
        free(c->ipc.path);
        free(c->uts.path);
        free(c->pid.path);
        for (size_t i = 0; i < c->n_mounts; i++)
                mount_done(&c->mounts[i]);
        free(c->mounts);
        strv_free(c->cap_add);
        strv_free(c->cap_drop);
        free(c->seccomp_profile_path);
        free(c->apparmor_profile);
        strv_free(c->sysctls);
        free(c->cgroups_path);
        for (size_t i = 0; i < c->resources.n_hugepages; i++)
                free(c->resources.hugepages[i].page_size);
        free(c->resources.hugepages);
        strv_free(c->annotations);
        for (size_t i = 0; i < c->n_rlimits; i++)
                free(c->rlimits[i].type);
        free(c->rlimits);
        /* Zeroed again, so a second call (or a reuse) is harmless. */
        *c = (RuntimeContainerConfig){};
}

/* ---- capabilities ---- */

const char *const runtime_default_capabilities[] = {
        "CAP_CHOWN",
        "CAP_DAC_OVERRIDE",
        "CAP_FSETID",
        "CAP_FOWNER",
        "CAP_MKNOD",
        "CAP_NET_RAW",
        "CAP_SETGID",
        "CAP_SETUID",
        "CAP_SETFCAP",
        "CAP_SETPCAP",
        "CAP_NET_BIND_SERVICE",
        "CAP_SYS_CHROOT",
        "CAP_KILL",
        "CAP_AUDIT_WRITE",
        NULL,
};

/* Indexed by capability number (linux/capability.h). */
static const char *const cap_names[RUNTIME_CAP_MAX + 1] = {
        "CAP_CHOWN",
        "CAP_DAC_OVERRIDE",
        "CAP_DAC_READ_SEARCH",
        "CAP_FOWNER",
        "CAP_FSETID",
        "CAP_KILL",
        "CAP_SETGID",
        "CAP_SETUID",
        "CAP_SETPCAP",
        "CAP_LINUX_IMMUTABLE",
        "CAP_NET_BIND_SERVICE",
        "CAP_NET_BROADCAST",
        "CAP_NET_ADMIN",
        "CAP_NET_RAW",
        "CAP_IPC_LOCK",
        "CAP_IPC_OWNER",
        "CAP_SYS_MODULE",
        "CAP_SYS_RAWIO",
        "CAP_SYS_CHROOT",
        "CAP_SYS_PTRACE",
        "CAP_SYS_PACCT",
        "CAP_SYS_ADMIN",
        "CAP_SYS_BOOT",
        "CAP_SYS_NICE",
        "CAP_SYS_RESOURCE",
        "CAP_SYS_TIME",
        "CAP_SYS_TTY_CONFIG",
        "CAP_MKNOD",
        "CAP_LEASE",
        "CAP_AUDIT_WRITE",
        "CAP_AUDIT_CONTROL",
        "CAP_SETFCAP",
        "CAP_MAC_OVERRIDE",
        "CAP_MAC_ADMIN",
        "CAP_SYSLOG",
        "CAP_WAKE_ALARM",
        "CAP_BLOCK_SUSPEND",
        "CAP_AUDIT_READ",
        "CAP_PERFMON",
        "CAP_BPF",
        "CAP_CHECKPOINT_RESTORE",
};

const char *runtime_capability_to_string(int cap) {
        if (cap < 0 || cap > RUNTIME_CAP_MAX)
                return NULL;
        return cap_names[cap];
}

int runtime_capability_from_string(const char *name) {
        if (!name)
                return -EINVAL;
        /* Kubernetes writes "NET_ADMIN", runtime-spec "CAP_NET_ADMIN"; both,
         * in any case. */
        if (strncasecmp(name, "CAP_", 4) == 0)
                name += 4;
        for (int i = 0; i <= RUNTIME_CAP_MAX; i++)
                if (strcasecmp(cap_names[i] + 4, name) == 0)
                        return i;
        return -EINVAL;
}

static uint64_t caps_mask_upto(int last) {
        if (last < 0)
                return 0;
        if (last >= 63)
                return UINT64_MAX;
        return (UINT64_C(1) << (last + 1)) - 1;
}

uint64_t runtime_capabilities_all(void) {
        _cleanup_free_ char *data = NULL;
        int last = RUNTIME_CAP_MAX;
        uint64_t held = UINT64_MAX;

        if (read_full_file_at(AT_FDCWD, "/proc/sys/kernel/cap_last_cap", 64, &data, NULL) >= 0) {
                int v = atoi(data);
                if (v > 0)
                        last = v;
        }
        free(data);
        data = NULL;
        if (read_full_file_at(AT_FDCWD, "/proc/self/status", 64 * 1024, &data, NULL) >= 0) {
                const char *p = strstr(data, "\nCapEff:");
                unsigned long long v;

                if (p && sscanf(p + strlen("\nCapEff:"), "%llx", &v) == 1)
                        held = v;
        }
        /* Capabilities above the last one with a name cannot be written in
         * config.json; a kernel newer than this table loses them, as runc
         * would not know them either. */
        return caps_mask_upto(MIN(last, RUNTIME_CAP_MAX)) & held;
}

static uint64_t default_caps_mask(void) {
        uint64_t m = 0;

        STRV_FOREACH(s, (char **)runtime_default_capabilities)
                m |= RUNTIME_CAP_BIT(runtime_capability_from_string(*s));
        return m;
}

static int caps_parse_list(char **l, const char *field, uint64_t *mask, bool *all, Error *err) {
        size_t i = 0;

        STRV_FOREACH(s, l) {
                int cap;

                if (strcasecmp(*s, "ALL") == 0)
                        *all = true;
                else {
                        cap = runtime_capability_from_string(*s);
                        if (cap < 0)
                                return error_set(err, -EINVAL,
                                                 "capabilities.%s[%zu]: unknown capability \"%s\"",
                                                 field, i, *s);
                        *mask |= RUNTIME_CAP_BIT(cap);
                }
                i++;
        }
        return 0;
}

int runtime_capabilities_resolve(const RuntimeContainerConfig *c, uint64_t *ret, Error *err) {
        uint64_t add = 0, drop = 0, set = default_caps_mask();
        bool add_all = false, drop_all = false;
        int r;

        assert(c);
        assert(ret);

        /* Names are checked even for privileged containers, where they do
         * not matter: a typo should not wait until privileged is removed. */
        r = caps_parse_list(c->cap_add, "add", &add, &add_all, err);
        if (r < 0)
                return r;
        r = caps_parse_list(c->cap_drop, "drop", &drop, &drop_all, err);
        if (r < 0)
                return r;

        if (c->privileged) {
                *ret = runtime_capabilities_all();
                return 0;
        }
        /* containerd's CRI order: add ALL, drop ALL, then the named adds,
         * then the named drops -- so "drop ALL, add X" leaves X and
         * "add ALL, drop X" leaves everything but X. */
        if (add_all)
                set = runtime_capabilities_all();
        if (drop_all)
                set = 0;
        set |= add;
        set &= ~drop;
        *ret = set;
        return 0;
}

static json_t *caps_to_json(uint64_t mask) {
        _cleanup_json_ json_t *a = json_array();

        if (!a)
                return NULL;
        for (int i = 0; i <= RUNTIME_CAP_MAX; i++)
                if ((mask & RUNTIME_CAP_BIT(i)) &&
                    json_array_append_new(a, json_string(cap_names[i])) < 0)
                        return NULL;
        return TAKE_PTR(a);
}

/* ---- small JSON helpers: they take v in every case, and fail with
 * -ENOMEM when v is NULL (an allocation failed while building it) ---- */

static int obj_set(json_t *o, const char *k, json_t *v) {
        return v && json_object_set_new(o, k, v) == 0 ? 0 : -ENOMEM;
}

static int arr_add(json_t *a, json_t *v) {
        return v && json_array_append_new(a, v) == 0 ? 0 : -ENOMEM;
}

static json_t *strv_to_json(char *const *l) {
        _cleanup_json_ json_t *a = json_array();

        if (!a)
                return NULL;
        STRV_FOREACH(s, l)
                if (arr_add(a, json_string(*s)) < 0)
                        return NULL;
        return TAKE_PTR(a);
}

static int oom(Error *err) {
        return error_set(err, -ENOMEM, "out of memory while building config.json");
}

/* ---- process ---- */

/* containerd's defaultUnixEnv; runc looks args[0] up in the container's
 * own PATH, so without one a bare "sh" would not be found. */
#define DEFAULT_PATH_ENV "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

static const char *const rlimit_types[] = {
        "RLIMIT_AS",
        "RLIMIT_CORE",
        "RLIMIT_CPU",
        "RLIMIT_DATA",
        "RLIMIT_FSIZE",
        "RLIMIT_LOCKS",
        "RLIMIT_MEMLOCK",
        "RLIMIT_MSGQUEUE",
        "RLIMIT_NICE",
        "RLIMIT_NOFILE",
        "RLIMIT_NPROC",
        "RLIMIT_RSS",
        "RLIMIT_RTPRIO",
        "RLIMIT_RTTIME",
        "RLIMIT_SIGPENDING",
        "RLIMIT_STACK",
        NULL,
};

static int build_process(const RuntimeContainerConfig *c, uint64_t caps, json_t *spec, Error *err) {
        _cleanup_json_ json_t *p = json_object(), *user = json_object(), *env = NULL,
                              *capo = json_object();
        bool has_path = false;

        if (!p || !user || !capo)
                return oom(err);

        if (strv_length(c->args) == 0 || isempty(c->args[0]))
                return error_set(err, -EINVAL, "args: empty command");
        if (c->cwd && c->cwd[0] != '/')
                return error_set(err, -EINVAL, "cwd: \"%s\" is not an absolute path", c->cwd);

        if (obj_set(p, "terminal", json_boolean(c->terminal)) < 0)
                return oom(err);

        if (obj_set(user, "uid", json_integer(c->uid)) < 0 ||
            obj_set(user, "gid", json_integer(c->gid)) < 0)
                return oom(err);
        if (c->n_additional_gids > 0) {
                _cleanup_json_ json_t *g = json_array();
                if (!g)
                        return oom(err);
                for (size_t i = 0; i < c->n_additional_gids; i++)
                        if (arr_add(g, json_integer(c->additional_gids[i])) < 0)
                                return oom(err);
                if (obj_set(user, "additionalGids", TAKE_PTR(g)) < 0)
                        return oom(err);
        }
        if (obj_set(p, "user", TAKE_PTR(user)) < 0)
                return oom(err);

        if (obj_set(p, "args", strv_to_json(c->args)) < 0)
                return oom(err);

        STRV_FOREACH(e, c->env) {
                if (!strchr(*e, '='))
                        return error_set(err, -EINVAL, "env[%zu]: \"%s\" is not KEY=VALUE",
                                         (size_t)(e - c->env), *e);
                if (startswith(*e, "PATH="))
                        has_path = true;
        }
        env = strv_to_json(c->env);
        if (!env || (!has_path && arr_add(env, json_string(DEFAULT_PATH_ENV)) < 0))
                return oom(err);
        if (obj_set(p, "env", TAKE_PTR(env)) < 0)
                return oom(err);

        if (obj_set(p, "cwd", json_string(c->cwd ? c->cwd : "/")) < 0)
                return oom(err);

        /* Bounding, effective and permitted alike, inheritable and ambient
         * empty, as containerd >= 1.7. For a non-root uid containerd writes
         * the same sets; the kernel then clears effective and permitted at
         * execve (no ambient, no file capabilities), so a non-root process
         * ends up with none while its bounding set still limits setuid
         * binaries. Kubernetes leaves "non-root + capabilities" undefined
         * (kubernetes#56374); nanolet does what containerd does. */
        if (obj_set(capo, "bounding", caps_to_json(caps)) < 0 ||
            obj_set(capo, "effective", caps_to_json(caps)) < 0 ||
            obj_set(capo, "permitted", caps_to_json(caps)) < 0 ||
            obj_set(p, "capabilities", TAKE_PTR(capo)) < 0)
                return oom(err);

        if (c->n_rlimits > 0) {
                _cleanup_json_ json_t *rl = json_array();
                if (!rl)
                        return oom(err);
                for (size_t i = 0; i < c->n_rlimits; i++) {
                        const RuntimeRlimit *l = &c->rlimits[i];

                        if (!l->type || !strv_contains((char **)rlimit_types, l->type))
                                return error_set(err, -EINVAL,
                                                 "rlimits[%zu].type: unknown limit \"%s\"", i,
                                                 strempty(l->type));
                        if (l->soft > l->hard)
                                return error_set(err, -EINVAL,
                                                 "rlimits[%zu]: soft limit above hard limit", i);
                        if (arr_add(rl,
                                    json_pack("{s:s, s:I, s:I}", "type", l->type, "hard",
                                              (json_int_t)MIN(l->hard, (uint64_t)INT64_MAX), "soft",
                                              (json_int_t)MIN(l->soft, (uint64_t)INT64_MAX))) < 0)
                                return oom(err);
                }
                if (obj_set(p, "rlimits", TAKE_PTR(rl)) < 0)
                        return oom(err);
        }

        if (c->apparmor_profile) {
                if (isempty(c->apparmor_profile) || strlen(c->apparmor_profile) > 4095)
                        return error_set(err, -EINVAL, "apparmorProfile: invalid profile name");
                if (obj_set(p, "apparmorProfile", json_string(c->apparmor_profile)) < 0)
                        return oom(err);
        }
        if (obj_set(p, "noNewPrivileges", json_boolean(c->no_new_privileges)) < 0)
                return oom(err);
        if (c->oom_score_adj_set) {
                if (c->oom_score_adj < -1000 || c->oom_score_adj > 1000)
                        return error_set(err, -EINVAL, "oom_score_adj: %d is outside -1000..1000",
                                         c->oom_score_adj);
                if (obj_set(p, "oomScoreAdj", json_integer(c->oom_score_adj)) < 0)
                        return oom(err);
        }

        return obj_set(spec, "process", TAKE_PTR(p)) < 0 ? oom(err) : 0;
}

/* ---- mounts ---- */

typedef struct DefaultMount {
        const char *destination, *type, *source;
        const char *const options[8];
} DefaultMount;

static const DefaultMount default_mounts[] = {
        { "/proc", "proc", "proc", { "nosuid", "noexec", "nodev" } },
        { "/dev", "tmpfs", "tmpfs", { "nosuid", "strictatime", "mode=755", "size=65536k" } },
        { "/dev/pts",
          "devpts",
          "devpts",
          { "nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5" } },
        { "/dev/shm", "tmpfs", "shm", { "nosuid", "noexec", "nodev", "mode=1777", "size=65536k" } },
        { "/dev/mqueue", "mqueue", "mqueue", { "nosuid", "noexec", "nodev" } },
        { "/sys", "sysfs", "sysfs", { "nosuid", "noexec", "nodev", "ro" } },
        { "/sys/fs/cgroup", "cgroup", "cgroup", { "nosuid", "noexec", "nodev", "relatime", "ro" } },
};

/* Compares two absolute paths ignoring repeated and trailing slashes, so
 * a caller's "/dev/shm/" replaces the default "/dev/shm". */
static bool path_equal(const char *a, const char *b) {
        for (;;) {
                while (a[0] == '/' && (a[1] == '/' || a[1] == 0))
                        a++;
                while (b[0] == '/' && (b[1] == '/' || b[1] == 0))
                        b++;
                if (*a != *b)
                        return false;
                if (*a == 0)
                        return true;
                a++, b++;
        }
}

/* true when path is strictly below dir ("/dev/pts" below "/dev"). */
static bool path_below(const char *path, const char *dir) {
        size_t n = strlen(dir);

        while (n > 0 && dir[n - 1] == '/')
                n--;
        return strncmp(path, dir, n) == 0 && path[n] == '/' && path[n + 1] != 0;
}

static bool caller_has_mount(const RuntimeContainerConfig *c, const char *dest) {
        for (size_t i = 0; i < c->n_mounts; i++)
                if (path_equal(c->mounts[i].destination, dest))
                        return true;
        return false;
}

static int build_mounts(const RuntimeContainerConfig *c, json_t *spec, Error *err) {
        _cleanup_json_ json_t *ms = json_array();
        bool caller_dev = false;

        if (!ms)
                return oom(err);

        for (size_t i = 0; i < c->n_mounts; i++) {
                const RuntimeMount *m = &c->mounts[i];

                if (isempty(m->destination) || m->destination[0] != '/')
                        return error_set(err, -EINVAL,
                                         "mounts[%zu].destination: \"%s\" is not an absolute path",
                                         i, strempty(m->destination));
                if (isempty(m->source) && !isempty(m->type) &&
                    (streq(m->type, "bind") || streq(m->type, "rbind")))
                        return error_set(err, -EINVAL,
                                         "mounts[%zu].source: a bind mount needs a source", i);
                if (path_equal(m->destination, "/dev"))
                        caller_dev = true;
        }

        for (size_t i = 0; i < ELEMENTSOF(default_mounts); i++) {
                const DefaultMount *d = &default_mounts[i];
                _cleanup_json_ json_t *o = NULL, *opts = json_array();

                /* A caller mount at the same place replaces the default (the
                 * pod worker passes the pod's shared /dev/shm this way); a
                 * caller /dev replaces everything under it, as containerd. */
                if (caller_has_mount(c, d->destination) ||
                    (caller_dev && path_below(d->destination, "/dev")))
                        continue;
                /* An mqueue filesystem belongs to the IPC namespace of its
                 * mounter and needs CAP_SYS_ADMIN over that namespace's
                 * owner: a container in a user namespace of its own that
                 * joins an IPC namespace the host's user namespace owns
                 * (the pod's pin) cannot mount it (runc 1.1 fails with
                 * EPERM). POSIX message queues work without it (mq_open(3)
                 * is a system call); only the view in /dev/mqueue goes. */
                if (c->userns_length > 0 && c->ipc.mode == RUNTIME_NS_PATH &&
                    streq(d->type, "mqueue"))
                        continue;
                /* sysfs likewise needs the network namespace's owner: in
                 * the pod's pinned one the host's /sys is bound read-only
                 * instead, as runc does for rootless containers. */
                if (c->userns_length > 0 && c->net.mode == RUNTIME_NS_PATH &&
                    streq(d->type, "sysfs")) {
                        o = json_pack("{s:s, s:s, s:s, s:[s,s,s,s,s]}", "destination", "/sys",
                                      "type", "none", "source", "/sys", "options", "rbind",
                                      "nosuid", "noexec", "nodev", "ro");
                        if (arr_add(ms, TAKE_PTR(o)) < 0)
                                return oom(err);
                        continue;
                }
                if (!opts)
                        return oom(err);
                for (size_t j = 0; j < ELEMENTSOF(d->options) && d->options[j]; j++) {
                        const char *opt = d->options[j];

                        /* Privileged containers get writable sysfs and
                         * cgroupfs (containerd's WithWriteableSysfs and
                         * WithWriteableCgroupfs). */
                        if (c->privileged && streq(opt, "ro") &&
                            (streq(d->type, "sysfs") || streq(d->type, "cgroup")))
                                opt = "rw";
                        if (arr_add(opts, json_string(opt)) < 0)
                                return oom(err);
                }
                o = json_pack("{s:s, s:s, s:s, s:o}", "destination", d->destination, "type",
                              d->type, "source", d->source, "options", TAKE_PTR(opts));
                if (arr_add(ms, TAKE_PTR(o)) < 0)
                        return oom(err);
        }

        for (size_t i = 0; i < c->n_mounts; i++) {
                const RuntimeMount *m = &c->mounts[i];
                _cleanup_json_ json_t *o = json_object();

                if (!o || obj_set(o, "destination", json_string(m->destination)) < 0)
                        return oom(err);
                if (m->type && obj_set(o, "type", json_string(m->type)) < 0)
                        return oom(err);
                if (m->source && obj_set(o, "source", json_string(m->source)) < 0)
                        return oom(err);
                if (m->options && obj_set(o, "options", strv_to_json(m->options)) < 0)
                        return oom(err);
                if (arr_add(ms, TAKE_PTR(o)) < 0)
                        return oom(err);
        }

        return obj_set(spec, "mounts", TAKE_PTR(ms)) < 0 ? oom(err) : 0;
}

/* ---- linux ---- */

bool runtime_cgroup_unified(void) {
        struct statfs fs;

        return statfs("/sys/fs/cgroup", &fs) == 0 &&
               (unsigned long)fs.f_type == CGROUP2_SUPER_MAGIC;
}

static int add_namespace(json_t *a, const char *type, const RuntimeNamespace *ns, const char *field,
                         Error *err) {
        switch (ns ? ns->mode : RUNTIME_NS_NEW) {
        case RUNTIME_NS_NEW:
                return arr_add(a, json_pack("{s:s}", "type", type)) < 0 ? oom(err) : 0;
        case RUNTIME_NS_PATH:
                if (isempty(ns->path) || ns->path[0] != '/')
                        return error_set(err, -EINVAL, "%s.path: \"%s\" is not an absolute path",
                                         field, strempty(ns->path));
                return arr_add(a, json_pack("{s:s, s:s}", "type", type, "path", ns->path)) < 0
                               ? oom(err)
                               : 0;
        case RUNTIME_NS_HOST:
                return 0; /* no entry: the runtime's own namespace */
        }
        return error_set(err, -EINVAL, "%s: unknown namespace mode %d", field, (int)ns->mode);
}

static int build_namespaces(const RuntimeContainerConfig *c, json_t *linux_, Error *err) {
        _cleanup_json_ json_t *a = json_array();
        int r;

        if (!a)
                return oom(err);
        if ((r = add_namespace(a, "pid", &c->pid, "pid", err)) < 0 ||
            (r = add_namespace(a, "network", &c->net, "net", err)) < 0 ||
            (r = add_namespace(a, "ipc", &c->ipc, "ipc", err)) < 0 ||
            (r = add_namespace(a, "uts", &c->uts, "uts", err)) < 0 ||
            (r = add_namespace(a, "mount", NULL, "mount", err)) < 0)
                return r;
        if (c->userns_length > 0) {
                if ((uint64_t)c->userns_host_id + c->userns_length - 1 >= UINT32_MAX)
                        return error_set(err, -EINVAL,
                                         "user namespace: host IDs %u+%u out of range",
                                         (unsigned)c->userns_host_id, (unsigned)c->userns_length);
                if ((r = add_namespace(a, "user", NULL, "user", err)) < 0)
                        return r;
                for (int i = 0; i < 2; i++) {
                        json_t *m = json_pack("[{s:I, s:I, s:I}]", "containerID", (json_int_t)0,
                                              "hostID", (json_int_t)c->userns_host_id, "size",
                                              (json_int_t)c->userns_length);
                        if (obj_set(linux_, i == 0 ? "uidMappings" : "gidMappings", m) < 0)
                                return oom(err);
                }
        }
        /* A cgroup namespace hides the host's cgroup tree; containerd uses
         * one only on cgroup v2 (on v1 runc bind-mounts the container's own
         * hierarchies instead) and never for privileged containers, which
         * may need the whole tree. */
        if (runtime_cgroup_unified() && !c->privileged) {
                r = add_namespace(a, "cgroup", NULL, "cgroup", err);
                if (r < 0)
                        return r;
        }
        return obj_set(linux_, "namespaces", TAKE_PTR(a)) < 0 ? oom(err) : 0;
}

static const char *const masked_paths[] = {
        "/proc/acpi",          "/proc/asound",
        "/proc/kcore",         "/proc/keys",
        "/proc/latency_stats", "/proc/timer_list",
        "/proc/timer_stats",   "/proc/sched_debug",
        "/sys/firmware",       "/sys/devices/virtual/powercap",
        "/proc/scsi",          NULL,
};

static const char *const readonly_paths[] = {
        "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger", NULL,
};

/* The device cgroup: deny everything, then the nodes a container's /dev
 * holds (containerd's WithDefaultUnixDevices). major, minor -1 = any. */
static const struct {
        int major, minor;
} default_devices[] = {
        { 1, 3 },    /* /dev/null */
        { 1, 8 },    /* /dev/random */
        { 1, 7 },    /* /dev/full */
        { 5, 0 },    /* /dev/tty */
        { 1, 5 },    /* /dev/zero */
        { 1, 9 },    /* /dev/urandom */
        { 5, 1 },    /* /dev/console */
        { 136, -1 }, /* /dev/pts/N */
        { 5, 2 },    /* /dev/ptmx */
};

/* containerd's getDevices() leaves these out: pseudo-terminals, shared
 * memory and message queues are the container's own, fd is a link. */
static bool host_device_skipped_dir(const char *name) {
        return streq(name, "pts") || streq(name, "shm") || streq(name, "fd") ||
               streq(name, "mqueue") || streq(name, ".lxc") || streq(name, ".lxd-mounts") ||
               streq(name, ".udev");
}

static int host_devices_walk(int dirfd, const char *rel, json_t *devs, unsigned depth, size_t *n) {
        _cleanup_closedir_ DIR *d = fdopendir(dirfd);
        if (!d) {
                int r = -errno;
                close(dirfd);
                return r;
        }
        for (struct dirent *de; (de = readdir(d));) {
                struct stat st;
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                if (fstatat(dirfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                        continue; /* gone meanwhile: udev renames nodes */
                _cleanup_free_ char *path = strprintf("%s/%s", rel, de->d_name);
                if (!path)
                        return -ENOMEM;
                if (S_ISDIR(st.st_mode)) {
                        if ((depth == 0 && host_device_skipped_dir(de->d_name)) || depth >= 8)
                                continue;
                        int fd = openat(dirfd, de->d_name,
                                        O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (fd < 0)
                                continue;
                        int r = host_devices_walk(fd, path, devs, depth + 1, n);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (!S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode))
                        continue;
                if (depth == 0 && streq(de->d_name, "console"))
                        continue;
                if (*n >= RUNTIME_HOST_DEVICES_MAX)
                        return 0;
                json_t *e = json_pack("{s:s, s:s, s:I, s:I, s:i, s:I, s:I}", "path", path, "type",
                                      S_ISCHR(st.st_mode) ? "c" : "b", "major",
                                      (json_int_t)major(st.st_rdev), "minor",
                                      (json_int_t)minor(st.st_rdev), "fileMode",
                                      (int)(st.st_mode & 07777), "uid", (json_int_t)st.st_uid,
                                      "gid", (json_int_t)st.st_gid);
                if (arr_add(devs, e) < 0)
                        return -ENOMEM;
                (*n)++;
        }
        return 0;
}

int runtime_host_devices(const char *dir, json_t *devs) {
        size_t n = 0;
        int fd;

        assert(dir);
        assert(devs);
        fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        int r = host_devices_walk(fd, "/dev", devs, 0, &n);
        return r < 0 ? r : (int)n;
}

static bool page_size_valid(const char *s) {
        size_t n = 0;

        while (s[n] >= '0' && s[n] <= '9')
                n++;
        return n > 0 && (streq(s + n, "KB") || streq(s + n, "MB") || streq(s + n, "GB"));
}

static int build_resources(const RuntimeContainerConfig *c, json_t *linux_, Error *err) {
        const RuntimeResources *res = &c->resources;
        _cleanup_json_ json_t *o = json_object(), *devs = json_array();

        if (!o || !devs)
                return oom(err);

        if (c->privileged) {
                /* All devices allowed in the cgroup; the nodes themselves
                 * are linux.devices (build_linux()). */
                if (arr_add(devs, json_pack("{s:b, s:s}", "allow", 1, "access", "rwm")) < 0)
                        return oom(err);
        } else {
                if (arr_add(devs, json_pack("{s:b, s:s}", "allow", 0, "access", "rwm")) < 0)
                        return oom(err);
                for (size_t i = 0; i < ELEMENTSOF(default_devices); i++) {
                        json_t *d = json_pack("{s:b, s:s, s:i}", "allow", 1, "type", "c", "major",
                                              default_devices[i].major);
                        if (d && default_devices[i].minor >= 0 &&
                            obj_set(d, "minor", json_integer(default_devices[i].minor)) < 0) {
                                json_decref(d);
                                return oom(err);
                        }
                        if (d && obj_set(d, "access", json_string("rwm")) < 0) {
                                json_decref(d);
                                return oom(err);
                        }
                        if (arr_add(devs, d) < 0)
                                return oom(err);
                }
        }
        if (obj_set(o, "devices", TAKE_PTR(devs)) < 0)
                return oom(err);

        if (res->cpu_shares || res->cpu_quota || res->cpu_period) {
                _cleanup_json_ json_t *cpu = json_object();

                if (!cpu)
                        return oom(err);
                if (res->cpu_shares > (uint64_t)INT64_MAX)
                        return error_set(err, -ERANGE, "resources.cpu_shares: too large");
                if (res->cpu_quota < -1)
                        return error_set(err, -EINVAL, "resources.cpu_quota: %lld is negative",
                                         (long long)res->cpu_quota);
                if (res->cpu_period > (uint64_t)INT64_MAX)
                        return error_set(err, -ERANGE, "resources.cpu_period: too large");
                if (res->cpu_shares &&
                    obj_set(cpu, "shares", json_integer((json_int_t)res->cpu_shares)) < 0)
                        return oom(err);
                if (res->cpu_quota && obj_set(cpu, "quota", json_integer(res->cpu_quota)) < 0)
                        return oom(err);
                if (res->cpu_period &&
                    obj_set(cpu, "period", json_integer((json_int_t)res->cpu_period)) < 0)
                        return oom(err);
                if (obj_set(o, "cpu", TAKE_PTR(cpu)) < 0)
                        return oom(err);
        }
        if (res->memory_limit < 0)
                return error_set(err, -EINVAL, "resources.memory_limit: %lld is negative",
                                 (long long)res->memory_limit);
        if (res->memory_limit > 0 &&
            obj_set(o, "memory", json_pack("{s:I}", "limit", (json_int_t)res->memory_limit)) < 0)
                return oom(err);
        /* -1 is "unlimited" to runc; other negatives are mistakes. */
        if (res->pids_limit < -1)
                return error_set(err, -EINVAL, "resources.pids_limit: %lld is negative",
                                 (long long)res->pids_limit);
        if (res->pids_limit != 0 &&
            obj_set(o, "pids", json_pack("{s:I}", "limit", (json_int_t)res->pids_limit)) < 0)
                return oom(err);
        if (res->n_hugepages > 0) {
                _cleanup_json_ json_t *h = json_array();

                if (!h)
                        return oom(err);
                for (size_t i = 0; i < res->n_hugepages; i++) {
                        const char *ps = res->hugepages[i].page_size;

                        if (isempty(ps) || !page_size_valid(ps))
                                return error_set(err, -EINVAL,
                                                 "resources.hugepages[%zu].page_size: "
                                                 "\"%s\" is not like \"2MB\"",
                                                 i, strempty(ps));
                        if (res->hugepages[i].limit > (uint64_t)INT64_MAX)
                                return error_set(err, -ERANGE,
                                                 "resources.hugepages[%zu].limit: too large", i);
                        if (arr_add(h, json_pack("{s:s, s:I}", "pageSize", ps, "limit",
                                                 (json_int_t)res->hugepages[i].limit)) < 0)
                                return oom(err);
                }
                if (obj_set(o, "hugepageLimits", TAKE_PTR(h)) < 0)
                        return oom(err);
        }

        return obj_set(linux_, "resources", TAKE_PTR(o)) < 0 ? oom(err) : 0;
}

/* Which sysctls a pod may set is decided before anything is created, by
 * kubelet's admission (safe set plus allowedUnsafeSysctls, src/pod/
 * pod-sysctls.h). This is the runtime's own last check, as containerd and
 * runc make one: a sysctl that no namespace of the container isolates, or
 * one whose namespace the container shares with the host, would change the
 * node, and is refused whatever the admission said. */
typedef enum SysctlNs {
        SYSCTL_NS_NONE,
        SYSCTL_NS_IPC,
        SYSCTL_NS_NET,
} SysctlNs;

/* Which namespace isolates a sysctl (Kubernetes' list of namespaced
 * sysctls); SYSCTL_NS_NONE ones would change the whole node. */
static SysctlNs sysctl_namespace(const char *key) {
        if (startswith(key, "kernel.shm") || startswith(key, "kernel.msg") ||
            streq(key, "kernel.sem") || startswith(key, "fs.mqueue."))
                return SYSCTL_NS_IPC;
        if (startswith(key, "net."))
                return SYSCTL_NS_NET;
        return SYSCTL_NS_NONE;
}

static int build_sysctls(const RuntimeContainerConfig *c, json_t *linux_, Error *err) {
        _cleanup_json_ json_t *o = NULL;
        size_t i = 0;

        if (strv_length(c->sysctls) == 0)
                return 0;
        o = json_object();
        if (!o)
                return oom(err);

        STRV_FOREACH(s, c->sysctls) {
                const char *eq = strchr(*s, '=');
                _cleanup_free_ char *key = NULL;

                if (!eq || eq == *s)
                        return error_set(err, -EINVAL, "sysctls[%zu]: \"%s\" is not key=value", i,
                                         *s);
                key = strndup_safe(*s, (size_t)(eq - *s));
                if (!key)
                        return oom(err);
                /* Kubernetes accepts "net/ipv4/ip_forward" too; when the first
                 * separator is a slash, slashes and dots swap roles. */
                if (key[strcspn(key, "./")] == '/')
                        for (char *p = key; *p; p++)
                                *p = *p == '/' ? '.' : *p == '.' ? '/' : *p;

                switch (sysctl_namespace(key)) {
                case SYSCTL_NS_NONE:
                        return error_set(err, -EINVAL,
                                         "sysctls[%zu]: \"%s\" is not a namespaced sysctl "
                                         "and would change the whole node",
                                         i, key);
                case SYSCTL_NS_IPC:
                        if (c->ipc.mode == RUNTIME_NS_HOST)
                                return error_set(err, -EINVAL,
                                                 "sysctls[%zu]: \"%s\" needs the pod's own "
                                                 "IPC namespace, but it uses the host's",
                                                 i, key);
                        break;
                case SYSCTL_NS_NET:
                        if (c->net.mode == RUNTIME_NS_HOST)
                                return error_set(err, -EINVAL,
                                                 "sysctls[%zu]: \"%s\" needs the pod's own network "
                                                 "namespace, but it uses the host's",
                                                 i, key);
                        break;
                }
                if (obj_set(o, key, json_string(eq + 1)) < 0)
                        return oom(err);
                i++;
        }
        return obj_set(linux_, "sysctl", TAKE_PTR(o)) < 0 ? oom(err) : 0;
}

void runtime_seccomp_cache_done(RuntimeSeccompCache *c) {
        if (!c)
                return;
        for (size_t i = 0; i < c->n; i++)
                json_decref(c->profile[i]);
        *c = (RuntimeSeccompCache){};
}

/* The profile for caps, from the cache when it has it: building it is some
 * 300 small JSON objects per container start otherwise. The returned
 * reference is the caller's; the tree is shared and never modified. */
static int seccomp_default_cached(RuntimeSeccompCache *cache, uint64_t caps, json_t **ret) {
        if (cache)
                for (size_t i = 0; i < cache->n; i++)
                        if (cache->caps[i] == caps) {
                                *ret = json_incref(cache->profile[i]);
                                return 0;
                        }
        json_t *p = NULL;
        int r = seccomp_default_profile(caps, &p);
        if (r < 0)
                return r;
        if (cache && cache->n < RUNTIME_SECCOMP_CACHE_MAX) {
                cache->caps[cache->n] = caps;
                cache->profile[cache->n++] = json_incref(p);
        }
        *ret = p;
        return 0;
}

static int build_seccomp(const RuntimeContainerConfig *c, uint64_t caps, json_t *linux_,
                         Error *err) {
        json_t *p = NULL;
        int r;

        /* Privileged means unconfined, as containerd's WithPrivileged. */
        if (c->privileged)
                return 0;

        switch (c->seccomp) {
        case RUNTIME_SECCOMP_UNCONFINED:
                return 0;
        case RUNTIME_SECCOMP_RUNTIME_DEFAULT:
                /* The extra syscalls follow the bounding set, as containerd
                 * decides them from process.capabilities.bounding. */
                r = seccomp_default_cached(c->seccomp_cache, caps, &p);
                if (r < 0)
                        return oom(err);
                break;
        case RUNTIME_SECCOMP_LOCALHOST:
                r = seccomp_profile_load(c->seccomp_profile_path, &p, err);
                if (r < 0)
                        return r;
                break;
        default:
                return error_set(err, -EINVAL, "seccompProfile: unknown mode %d", (int)c->seccomp);
        }
        return obj_set(linux_, "seccomp", p) < 0 ? oom(err) : 0;
}

static int build_linux(const RuntimeContainerConfig *c, uint64_t caps, json_t *spec, Error *err) {
        _cleanup_json_ json_t *l = json_object();
        int r;

        if (!l)
                return oom(err);
        r = build_resources(c, l, err);
        if (r < 0)
                return r;
        if (c->cgroups_path && obj_set(l, "cgroupsPath", json_string(c->cgroups_path)) < 0)
                return oom(err);
        r = build_namespaces(c, l, err);
        if (r < 0)
                return r;
        /* Both lists are empty for privileged containers and procMount:
         * Unmasked, and then left out of the file. */
        if (!c->privileged && !c->unmasked_proc) {
                if (obj_set(l, "maskedPaths", strv_to_json((char **)masked_paths)) < 0 ||
                    obj_set(l, "readonlyPaths", strv_to_json((char **)readonly_paths)) < 0)
                        return oom(err);
        }
        if (c->privileged) {
                const char *dir = c->host_dev_dir ?: "/dev";
                _cleanup_json_ json_t *devs = json_array();
                if (!devs)
                        return oom(err);
                r = runtime_host_devices(dir, devs);
                if (r == -ENOMEM)
                        return oom(err);
                if (r < 0)
                        return error_set(err, r,
                                         "privileged: cannot list the host's devices in %s: %s",
                                         dir, strerror(-r));
                if (json_array_size(devs) > 0 && obj_set(l, "devices", TAKE_PTR(devs)) < 0)
                        return oom(err);
        }
        r = build_sysctls(c, l, err);
        if (r < 0)
                return r;
        r = build_seccomp(c, caps, l, err);
        if (r < 0)
                return r;
        return obj_set(spec, "linux", TAKE_PTR(l)) < 0 ? oom(err) : 0;
}

static int build_annotations(const RuntimeContainerConfig *c, json_t *spec, Error *err) {
        _cleanup_json_ json_t *o = NULL;
        size_t i = 0;

        if (strv_length(c->annotations) == 0)
                return 0;
        o = json_object();
        if (!o)
                return oom(err);
        STRV_FOREACH(s, c->annotations) {
                const char *eq = strchr(*s, '=');
                _cleanup_free_ char *key = NULL;

                if (!eq || eq == *s)
                        return error_set(err, -EINVAL, "annotations[%zu]: \"%s\" is not key=value",
                                         i, *s);
                key = strndup_safe(*s, (size_t)(eq - *s));
                if (!key || obj_set(o, key, json_string(eq + 1)) < 0)
                        return oom(err);
                i++;
        }
        return obj_set(spec, "annotations", TAKE_PTR(o)) < 0 ? oom(err) : 0;
}

int runtime_config_to_json(const RuntimeContainerConfig *c, json_t **ret, Error *err) {
        _cleanup_json_ json_t *spec = NULL;
        uint64_t caps;
        int r;

        assert(c);
        assert(ret);

        if (isempty(c->rootfs) || c->rootfs[0] != '/')
                return error_set(err, -EINVAL, "rootfs: \"%s\" is not an absolute path",
                                 strempty(c->rootfs));
        /* runc refuses a hostname it cannot set without changing the
         * host's; say so here with the field's name. */
        if (c->hostname && c->uts.mode == RUNTIME_NS_HOST)
                return error_set(err, -EINVAL,
                                 "hostname: cannot be set when the host's UTS namespace is used");

        r = runtime_capabilities_resolve(c, &caps, err);
        if (r < 0)
                return r;

        spec = json_object();
        if (!spec || obj_set(spec, "ociVersion", json_string("1.0.2")) < 0)
                return oom(err);
        r = build_process(c, caps, spec, err);
        if (r < 0)
                return r;
        if (obj_set(spec, "root",
                    json_pack("{s:s, s:b}", "path", c->rootfs, "readonly",
                              (int)c->readonly_rootfs)) < 0)
                return oom(err);
        if (c->hostname && obj_set(spec, "hostname", json_string(c->hostname)) < 0)
                return oom(err);
        r = build_mounts(c, spec, err);
        if (r < 0)
                return r;
        r = build_annotations(c, spec, err);
        if (r < 0)
                return r;
        r = build_linux(c, caps, spec, err);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(spec);
        return 0;
}

int runtime_bundle_write(const char *bundle_dir, const RuntimeContainerConfig *c, Error *err) {
        _cleanup_json_ json_t *spec = NULL;
        _cleanup_free_ char *text = NULL, *path = NULL;
        size_t len;
        int r;

        assert(bundle_dir);
        assert(c);

        r = runtime_config_to_json(c, &spec, err);
        if (r < 0)
                return r;
        /* Indented: config.json is what an operator reads when a container
         * does not start. */
        text = json_dumps(spec, JSON_INDENT(2));
        if (!text)
                return oom(err);
        len = strlen(text);
        /* json_dumps() allocates exactly; add the final newline by hand. */
        {
                char *t = realloc(text, len + 2);
                if (!t)
                        return oom(err);
                text = t;
                text[len++] = '\n';
                text[len] = 0;
        }

        r = mkdir_p(bundle_dir, 0700);
        if (r < 0)
                return error_set(err, r, "cannot create bundle directory \"%s\": %s", bundle_dir,
                                 strerror(-r));
        path = strprintf("%s/config.json", bundle_dir);
        if (!path)
                return oom(err);
        /* No fsync: runc create reads the file at once, and after a crash
         * the attempt is created again (or adopted from runc's own state,
         * which holds its copy of the config). */
        r = write_file_replace(path, text, len, 0600);
        if (r < 0)
                return error_set(err, r, "cannot write \"%s\": %s", path, strerror(-r));
        return 0;
}
