/* Volumes of a pod on the node (see pod-volumes.h). Layout and rules are
 * kubelet's volume plugins': pkg/volume/{emptydir,hostpath,configmap,secret,
 * downwardapi,projected} and pkg/volume/util/atomic_writer.go. */
#include "pod-volumes.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/magic.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "dirent-util.h"
#include "fileio.h"
#include "macro.h"
#include "string-util.h"
#include "strv.h"

#define DEFAULT_SHM_SIZE (64ULL * 1024 * 1024)
#define PLUGIN_EMPTY_DIR "kubernetes.io~empty-dir"
#define PLUGIN_CONFIG_MAP "kubernetes.io~configmap"
#define PLUGIN_SECRET "kubernetes.io~secret"
#define PLUGIN_DOWNWARD_API "kubernetes.io~downward-api"
#define PLUGIN_PROJECTED "kubernetes.io~projected"
#define DATA_DIR_NAME "..data"
#define DATA_DIR_TMP_NAME "..data_tmp"

/* ---- lookups and node facts ---- */

const ConfigMap *pod_lookup_configmap(const PodObjectLookup *l, const char *ns, const char *name) {
        return l && l->configmap ? l->configmap(l->userdata, ns, name) : NULL;
}

const Secret *pod_lookup_secret(const PodObjectLookup *l, const char *ns, const char *name) {
        return l && l->secret ? l->secret(l->userdata, ns, name) : NULL;
}

uint64_t pod_node_cpu_count(const PodNodeInfo *n) {
        if (n && n->cpu_count > 0)
                return n->cpu_count;
        long c = sysconf(_SC_NPROCESSORS_ONLN);
        return c > 0 ? (uint64_t)c : 1;
}

uint64_t pod_node_memory_bytes(const PodNodeInfo *n) {
        if (n && n->memory_bytes > 0)
                return n->memory_bytes;
        long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGESIZE);
        return pages > 0 && size > 0 ? (uint64_t)pages * (uint64_t)size : 0;
}

static uint64_t pod_node_ephemeral_bytes(const PodNodeInfo *n) {
        if (n && n->ephemeral_storage_bytes > 0)
                return n->ephemeral_storage_bytes;
        struct statvfs sv;
        if (statvfs("/", &sv) < 0)
                return 0;
        return (uint64_t)sv.f_blocks * sv.f_frsize;
}

static int strv_join(char *const *l, const char *sep, char **ret) {
        char *s = NULL;
        size_t len = 0, cap = 0;
        int r = strbuf_append(&s, &len, &cap, "", 0);
        for (char *const *p = l; r >= 0 && p && *p; p++) {
                if (p != l)
                        r = strbuf_append(&s, &len, &cap, sep, strlen(sep));
                if (r >= 0)
                        r = strbuf_append(&s, &len, &cap, *p, strlen(*p));
        }
        if (r < 0) {
                free(s);
                return r;
        }
        *ret = s;
        return 0;
}

/* Go's %q for the values of fieldpath.FormatMap (enough for UTF-8 text). */
static int append_go_quoted(char **s, size_t *len, size_t *cap, const char *v) {
        int r = strbuf_append(s, len, cap, "\"", 1);
        for (const unsigned char *p = (const unsigned char *)v; r >= 0 && *p; p++) {
                char esc[8];
                const char *e = NULL;
                switch (*p) {
                case '"':
                        e = "\\\"";
                        break;
                case '\\':
                        e = "\\\\";
                        break;
                case '\n':
                        e = "\\n";
                        break;
                case '\t':
                        e = "\\t";
                        break;
                case '\r':
                        e = "\\r";
                        break;
                default:
                        if (*p < 0x20 || *p == 0x7f) {
                                snprintf(esc, sizeof(esc), "\\x%02x", *p);
                                e = esc;
                        }
                }
                r = e ? strbuf_append(s, len, cap, e, strlen(e))
                      : strbuf_append(s, len, cap, (const char *)p, 1);
        }
        return r < 0 ? r : strbuf_append(s, len, cap, "\"", 1);
}

static int cmp_kv(const void *a, const void *b) {
        return strcmp((*(const KeyValue *const *)a)->key, (*(const KeyValue *const *)b)->key);
}

/* fieldpath.FormatMap: sorted key="quoted value" lines without a final newline. */
static int format_map(const StringMap *m, char **ret) {
        _cleanup_free_ const KeyValue **sorted = calloc(m->n + 1, sizeof(*sorted));
        if (!sorted)
                return -ENOMEM;
        for (size_t i = 0; i < m->n; i++)
                sorted[i] = &m->items[i];
        qsort(sorted, m->n, sizeof(*sorted), cmp_kv);
        char *s = NULL;
        size_t len = 0, cap = 0;
        int r = strbuf_append(&s, &len, &cap, "", 0);
        for (size_t i = 0; r >= 0 && i < m->n; i++) {
                if (i > 0)
                        r = strbuf_append(&s, &len, &cap, "\n", 1);
                if (r >= 0)
                        r = strbuf_append(&s, &len, &cap, sorted[i]->key, strlen(sorted[i]->key));
                if (r >= 0)
                        r = strbuf_append(&s, &len, &cap, "=", 1);
                if (r >= 0)
                        r = append_go_quoted(&s, &len, &cap, sorted[i]->value);
        }
        if (r < 0) {
                free(s);
                return r;
        }
        *ret = s;
        return 0;
}

/* metadata.labels['key'] -> the key, or NULL if path is not of that form. */
static char *subscript_key(const char *path, const char *prefix) {
        const char *rest = startswith(path, prefix);
        if (!rest || !endswith(rest, "']") || strlen(rest) < 2)
                return NULL;
        return strndup(rest, strlen(rest) - 2);
}

static int dup_ret(const char *v, char **ret) {
        char *s = strdup(strempty(v));
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int pod_field_ref_value(const Pod *pod, const PodNodeInfo *node, const char *path, char **ret) {
        const ObjectMeta *m = &pod->metadata;
        char *const *pod_ips = node ? node->pod_ips : NULL;
        char *const *host_ips = node ? node->host_ips : NULL;

        if (streq(path, "metadata.name"))
                return dup_ret(m->name, ret);
        if (streq(path, "metadata.namespace"))
                return dup_ret(m->namespace, ret);
        if (streq(path, "metadata.uid"))
                return dup_ret(m->uid ?: (node ? node->pod_uid : NULL), ret);
        if (streq(path, "spec.nodeName"))
                return dup_ret(node ? node->node_name : NULL, ret);
        if (streq(path, "spec.serviceAccountName"))
                return dup_ret(pod->spec.service_account_name, ret);
        if (streq(path, "status.podIP"))
                return dup_ret(pod_ips ? pod_ips[0] : NULL, ret);
        if (streq(path, "status.hostIP"))
                return dup_ret(host_ips ? host_ips[0] : NULL, ret);
        if (streq(path, "status.podIPs"))
                return strv_join(pod_ips, ",", ret);
        if (streq(path, "status.hostIPs"))
                return strv_join(host_ips, ",", ret);
        if (streq(path, "metadata.labels"))
                return format_map(&m->labels, ret);
        if (streq(path, "metadata.annotations"))
                return format_map(&m->annotations, ret);

        const StringMap *map = &m->labels;
        _cleanup_free_ char *key = subscript_key(path, "metadata.labels['");
        if (!key) {
                key = subscript_key(path, "metadata.annotations['");
                map = &m->annotations;
        }
        if (!key)
                return -EINVAL;
        const KeyValue *kv = string_map_get(map, key);
        return dup_ret(kv ? kv->value : NULL, ret);
}

static const HugePageQuantity *find_hugepages(const ResourceList *l, const char *size) {
        for (size_t i = 0; i < l->n_hugepages; i++)
                if (streq(l->hugepages[i].page_size, size))
                        return &l->hugepages[i];
        return NULL;
}

/* ceil(a / b) for non-negative a and positive b, as kubelet's math.Ceil. */
static int64_t div_ceil(int64_t a, int64_t b) {
        if (b <= 0)
                b = 1;
        if (a <= 0)
                return 0;
        return a / b + (a % b != 0);
}

int pod_resource_field_ref_value(const Pod *pod, const Container *c, const PodNodeInfo *node,
                                 const ResourceFieldSelector *sel, char **ret) {
        if (!isempty(sel->container_name)) {
                c = pod_find_container(pod, sel->container_name);
                if (!c)
                        return -ENOENT;
        }
        if (!c)
                return -EINVAL;

        Quantity divisor = sel->divisor.set ? sel->divisor.value : (Quantity){ 1, 1000 };
        const char *res = sel->resource;
        bool limits = startswith(res, "limits.") != NULL;
        const char *name = startswith(res, "limits.") ?: startswith(res, "requests.");
        if (!name)
                return -EINVAL;
        const ResourceList *own = limits ? &c->resources.limits : &c->resources.requests;
        /* API defaulting: an unset request equals the limit */
        const ResourceList *alt = limits ? NULL : &c->resources.limits;
        int64_t v;

        if (streq(name, "cpu")) {
                const OptionalQuantity *q = own->cpu.set          ? &own->cpu
                                            : alt && alt->cpu.set ? &alt->cpu
                                                                  : NULL;
                int64_t milli = q        ? q->value.milli
                                : limits ? (int64_t)pod_node_cpu_count(node) * 1000
                                         : 0;
                v = div_ceil(milli, divisor.milli > 0 ? divisor.milli : 1);
        } else if (streq(name, "memory") || streq(name, "ephemeral-storage")) {
                bool mem = streq(name, "memory");
                const OptionalQuantity *oq = mem ? &own->memory : &own->ephemeral_storage;
                const OptionalQuantity *aq =
                        alt ? (mem ? &alt->memory : &alt->ephemeral_storage) : NULL;
                const OptionalQuantity *q = oq->set ? oq : aq && aq->set ? aq : NULL;
                int64_t bytes = q         ? q->value.value
                                : !limits ? 0
                                : mem     ? (int64_t)pod_node_memory_bytes(node)
                                          : (int64_t)pod_node_ephemeral_bytes(node);
                v = div_ceil(bytes, divisor.value);
        } else if (startswith(name, "hugepages-")) {
                const char *size = startswith(name, "hugepages-");
                const HugePageQuantity *h = find_hugepages(own, size);
                if (!h && alt)
                        h = find_hugepages(alt, size);
                v = div_ceil(h ? h->value.value : 0, divisor.value);
        } else
                return -EINVAL;

        char *s = strprintf("%" PRId64, v);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/* ---- safe path resolution ---- */

static int openat2_raw(int dir_fd, const char *path, int flags, uint64_t resolve) {
        struct open_how how = {
                .flags = (uint64_t)(flags | O_CLOEXEC),
                .mode = 0,
                .resolve = resolve,
        };
        long fd = syscall(SYS_openat2, dir_fd, path, &how, sizeof(how));
        return fd < 0 ? -errno : (int)fd;
}

int pod_open_beneath(int dir_fd, const char *path, int flags, uint64_t extra_resolve) {
        return openat2_raw(dir_fd, path, flags,
                           RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS | extra_resolve);
}

int pod_open_in_root(int dir_fd, const char *path, int flags) {
        return openat2_raw(dir_fd, path, flags, RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
}

/* ---- hostPath ---- */

static int host_path_create_file(const char *path) {
        /* kubelet's makeFile: O_CREAT without O_EXCL, so a file appearing
         * meanwhile is fine; the parent directory must exist */
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOCTTY, 0644);
        if (fd < 0)
                return errno == EISDIR ? 0 : -errno;
        (void)close(fd);
        return 0;
}

int pod_host_path_check(const HostPathVolumeSource *hp, Error *err) {
        struct stat st;
        const char *p = hp->path;
        bool exists = stat(p, &st) >= 0;
        int r;

        switch (hp->type) {
        case HOST_PATH_UNSET:
                return 0;
        case HOST_PATH_DIRECTORY_OR_CREATE:
                if (!exists) {
                        if ((r = mkdir_p(p, 0755)) < 0)
                                return error_set(err, r, "failed to create hostPath \"%s\": %s", p,
                                                 strerror(-r));
                        return 0;
                }
                __attribute__((fallthrough));
        case HOST_PATH_DIRECTORY:
                if (!exists || !S_ISDIR(st.st_mode))
                        return error_set(err, -ENOTDIR,
                                         "hostPath type check failed: %s is not a directory", p);
                return 0;
        case HOST_PATH_FILE_OR_CREATE:
                if (!exists) {
                        if ((r = host_path_create_file(p)) < 0)
                                return error_set(err, r, "failed to create hostPath \"%s\": %s", p,
                                                 strerror(-r));
                        return 0;
                }
                __attribute__((fallthrough));
        case HOST_PATH_FILE:
                /* kubelet's IsFile is "exists and is not a directory" */
                if (!exists || S_ISDIR(st.st_mode))
                        return error_set(err, -EINVAL,
                                         "hostPath type check failed: %s is not a file", p);
                return 0;
        case HOST_PATH_SOCKET:
                if (!exists || !S_ISSOCK(st.st_mode))
                        return error_set(err, -EINVAL,
                                         "hostPath type check failed: %s is not a socket file", p);
                return 0;
        case HOST_PATH_CHAR_DEVICE:
                if (!exists || !S_ISCHR(st.st_mode))
                        return error_set(err, -EINVAL,
                                         "hostPath type check failed: %s is not a character device",
                                         p);
                return 0;
        case HOST_PATH_BLOCK_DEVICE:
                if (!exists || !S_ISBLK(st.st_mode))
                        return error_set(err, -EINVAL,
                                         "hostPath type check failed: %s is not a block device", p);
                return 0;
        case _HOST_PATH_TYPE_INVALID:
        case _HOST_PATH_TYPE_MAX:
        default:
                return error_set(err, -EINVAL, "%d is an invalid volume type", (int)hp->type);
        }
}

/* ---- removal that never leaves its file system ---- */

static int rm_rf_children(int fd, dev_t dev);

static int rm_rf_at(int dir_fd, const char *name, dev_t dev) {
        struct stat st;
        if (fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (S_ISDIR(st.st_mode)) {
                /* a mount point (another device) is never entered: that is how
                 * a bind mount of a host directory left behind stays intact */
                if (st.st_dev != dev)
                        return -EBUSY;
                int fd = openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                if (fd < 0)
                        return -errno;
                int r = rm_rf_children(fd, dev);
                if (r < 0)
                        return r;
                if (unlinkat(dir_fd, name, AT_REMOVEDIR) < 0)
                        return errno == ENOENT ? 0 : -errno;
                return 0;
        }
        if (unlinkat(dir_fd, name, 0) < 0)
                return errno == ENOENT ? 0 : -errno;
        return 0;
}

/* Takes ownership of fd. */
static int rm_rf_children(int fd, dev_t dev) {
        _cleanup_close_ int owned_fd = fd;
        _cleanup_closedir_ DIR *d = NULL;
        int ret = opendir_fd(owned_fd, NULL, 0, &d);
        if (ret < 0)
                return ret;
        FOREACH_DIRENT(de, d) {
                int r = rm_rf_at(dirfd(d), de->d_name, dev);
                if (r < 0 && ret == 0)
                        ret = r;
        }
        return ret;
}

static int rm_rf_path(const char *path) {
        struct stat st;
        if (lstat(path, &st) < 0)
                return errno == ENOENT ? 0 : -errno;
        if (!S_ISDIR(st.st_mode))
                return unlink(path) < 0 && errno != ENOENT ? -errno : 0;
        _cleanup_free_ char *copy = strdup(path);
        if (!copy)
                return -ENOMEM;
        char *slash = strrchr(copy, '/');
        const char *name = path;
        _cleanup_close_ int pfd = -EBADF;
        if (slash) {
                *slash = 0;
                name = slash + 1;
                pfd = open(copy[0] ? copy : "/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        } else
                pfd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (pfd < 0)
                return -errno;
        return rm_rf_at(pfd, name, st.st_dev);
}

/* ---- atomic writer ---- */

static bool volume_file_path_valid(const char *p) {
        if (isempty(p) || p[0] == '/' || startswith(p, ".."))
                return false;
        for (const char *s = p; s;) {
                const char *slash = strchr(s, '/');
                size_t n = slash ? (size_t)(slash - s) : strlen(s);
                if (n == 0 || (n == 2 && strneq(s, "..", 2)))
                        return false;
                s = slash ? slash + 1 : NULL;
        }
        return true;
}

/* mkdir -p of the directories of rel inside dir_fd (never following symlinks). */
static int mkdir_parents_at(int dir_fd, const char *rel) {
        _cleanup_free_ char *copy = strdup(rel);
        if (!copy)
                return -ENOMEM;
        for (char *s = strchr(copy, '/'); s; s = strchr(s + 1, '/')) {
                *s = 0;
                if (mkdirat(dir_fd, copy, 0755) < 0 && errno != EEXIST)
                        return -errno;
                *s = '/';
        }
        return 0;
}

static int write_file_at(int dir_fd, const PodVolumeFile *f, int64_t fs_group) {
        int r = mkdir_parents_at(dir_fd, f->path);
        if (r < 0)
                return r;
        /* dir_fd is the fresh timestamped directory we created: nothing in it
         * can be a symlink planted by someone else */
        _cleanup_close_ int fd =
                openat(dir_fd, f->path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        if (fd < 0)
                return -errno;
        r = write_all(fd, f->data, f->size);
        if (r < 0)
                return r;
        if (fs_group >= 0 && fchown(fd, (uid_t)-1, (gid_t)fs_group) < 0)
                return -errno;
        /* explicit chmod: the mode must not depend on the agent's umask */
        if (fchmod(fd, f->mode & 07777) < 0)
                return -errno;
        return 0;
}

/* The "..<timestamp>.<random>" directory, made relative to dir_fd (never
 * through a path that could be swapped under us). */
static int make_ts_dir(int dir_fd, char **ret_name) {
        struct timespec ts;
        struct tm tm;
        (void)clock_gettime(CLOCK_REALTIME, &ts);
        (void)gmtime_r(&ts.tv_sec, &tm);
        char stamp[64];
        strftime(stamp, sizeof(stamp), "..%Y_%m_%d_%H_%M_%S.", &tm);
        for (unsigned tries = 0; tries < 16; tries++) {
                uint32_t rnd;
                if (getrandom(&rnd, sizeof rnd, 0) != sizeof rnd)
                        rnd = (uint32_t)ts.tv_nsec ^ (tries * 2654435761u);
                _cleanup_free_ char *name = strprintf("%s%09ld%08" PRIx32, stamp, ts.tv_nsec, rnd);
                if (!name)
                        return -ENOMEM;
                if (mkdirat(dir_fd, name, 0700) < 0) {
                        if (errno == EEXIST)
                                continue;
                        return -errno;
                }
                /* explicit chmod: not the agent's umask */
                if (fchmodat(dir_fd, name, 0755, 0) < 0)
                        return -errno;
                *ret_name = TAKE_PTR(name);
                return 0;
        }
        return -EEXIST;
}

static char *top_component(const char *p) {
        const char *slash = strchr(p, '/');
        return slash ? strndup(p, (size_t)(slash - p)) : strdup(p);
}

static bool files_have_top(const PodVolumeFile *files, size_t n, const char *top) {
        size_t l = strlen(top);
        for (size_t i = 0; i < n; i++)
                if (strneq(files[i].path, top, l) &&
                    (files[i].path[l] == 0 || files[i].path[l] == '/'))
                        return true;
        return false;
}

static int atomic_write_symlinks(int dfd, const PodVolumeFile *files, size_t n_files) {
        for (size_t i = 0; i < n_files; i++) {
                _cleanup_free_ char *top = top_component(files[i].path);
                _cleanup_free_ char *target = top ? strprintf(DATA_DIR_NAME "/%s", top) : NULL;
                if (!target)
                        return -ENOMEM;
                if (symlinkat(target, dfd, top) < 0 && errno != EEXIST)
                        return -errno;
        }
        return 0;
}

/* Removes user-visible entries that are no longer in the payload: only
 * symlinks into ..data (what we created), never anything else. */
static int atomic_write_prune(int dfd, const PodVolumeFile *files, size_t n_files) {
        _cleanup_closedir_ DIR *d = NULL;
        int r = opendir_fd(dfd, NULL, 0, &d);
        if (r < 0)
                return r;
        FOREACH_DIRENT(de, d) {
                if (startswith(de->d_name, "..")) /* ..data and its versions */
                        continue;
                if (files_have_top(files, n_files, de->d_name))
                        continue;
                char target[PATH_MAX];
                ssize_t l = readlinkat(dfd, de->d_name, target, sizeof(target) - 1);
                if (l < 0)
                        continue;
                target[l] = 0;
                if (startswith(target, DATA_DIR_NAME "/"))
                        (void)unlinkat(dfd, de->d_name, 0);
        }
        return 0;
}

int pod_atomic_write(const char *dir, const PodVolumeFile *files, size_t n_files,
                     int64_t fs_group) {
        int r;
        for (size_t i = 0; i < n_files; i++)
                if (!volume_file_path_valid(files[i].path))
                        return -EINVAL;
        if ((r = mkdir_p(dir, 0755)) < 0)
                return r;
        _cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (dfd < 0)
                return -errno;

        char old[PATH_MAX];
        ssize_t ol = readlinkat(dfd, DATA_DIR_NAME, old, sizeof(old) - 1);
        old[ol > 0 ? ol : 0] = 0;

        _cleanup_free_ char *ts = NULL;
        if ((r = make_ts_dir(dfd, &ts)) < 0)
                return r;
        _cleanup_close_ int tfd = openat(dfd, ts, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (tfd < 0)
                return -errno;
        for (size_t i = 0; i < n_files; i++)
                if ((r = write_file_at(tfd, &files[i], fs_group)) < 0)
                        goto fail;
        if (fsync(tfd) < 0) {
                r = -errno;
                goto fail;
        }

        /* the swap: readers see either the old or the new set, never a mix */
        (void)unlinkat(dfd, DATA_DIR_TMP_NAME, 0);
        if (symlinkat(ts, dfd, DATA_DIR_TMP_NAME) < 0 ||
            renameat(dfd, DATA_DIR_TMP_NAME, dfd, DATA_DIR_NAME) < 0) {
                r = -errno;
                goto fail;
        }
        if ((r = atomic_write_symlinks(dfd, files, n_files)) < 0)
                return r;
        if (old[0] && startswith(old, "..") && !strchr(old, '/') && !streq(old, ts)) {
                struct stat st;
                if (fstat(dfd, &st) >= 0)
                        (void)rm_rf_at(dfd, old, st.st_dev);
        }
        (void)atomic_write_prune(dfd, files, n_files);
        (void)fsync(dfd);
        return 0;
fail : {
        struct stat st;
        if (fstat(dfd, &st) >= 0)
                (void)rm_rf_at(dfd, ts, st.st_dev);
        return r;
}
}

/* ---- payloads (kubelet's MakePayload per plugin) ---- */

typedef struct Payload {
        PodVolumeFile *files;
        size_t n;
} Payload;

static void payload_done(Payload *p) {
        for (size_t i = 0; i < p->n; i++) {
                free(p->files[i].path);
                free(p->files[i].data);
        }
        free(p->files);
        *p = (Payload){};
}

/* Adds or replaces (a later projection source wins for the same path). */
static int payload_add(Payload *p, const char *path, const char *data, size_t size, mode_t mode) {
        char *d = malloc(size + 1);
        if (!d)
                return -ENOMEM;
        memcpy(d, data, size);
        d[size] = 0;
        for (size_t i = 0; i < p->n; i++)
                if (streq(p->files[i].path, path)) {
                        free(p->files[i].data);
                        p->files[i].data = d;
                        p->files[i].size = size;
                        p->files[i].mode = mode;
                        return 0;
                }
        PodVolumeFile *nf = realloc(p->files, (p->n + 1) * sizeof(*nf));
        if (!nf) {
                free(d);
                return -ENOMEM;
        }
        p->files = nf;
        char *pp = strdup(path);
        if (!pp) {
                free(d);
                return -ENOMEM;
        }
        p->files[p->n++] = (PodVolumeFile){ .path = pp, .data = d, .size = size, .mode = mode };
        return 0;
}

static mode_t item_mode(const OptionalInt *item, mode_t def) {
        return item && item->set ? (mode_t)item->value : def;
}

/* Keys of one object: a ConfigMap's data and binaryData, or a Secret's data. */
typedef struct KeySource {
        const StringMap *maps[2];
        bool secret; /* for kubelet's messages */
} KeySource;

static const KeyValue *key_source_get(const KeySource *ks, const char *key) {
        for (size_t i = 0; i < ELEMENTSOF(ks->maps); i++) {
                const KeyValue *kv = ks->maps[i] ? string_map_get(ks->maps[i], key) : NULL;
                if (kv)
                        return kv;
        }
        return NULL;
}

static int payload_from_keys(Payload *p, const KeySource *ks, const ConfigMapVolumeSource *src,
                             mode_t def, Error *err) {
        int r;
        if (src->n_items == 0) {
                for (size_t m = 0; m < ELEMENTSOF(ks->maps); m++)
                        for (size_t i = 0; ks->maps[m] && i < ks->maps[m]->n; i++) {
                                const KeyValue *kv = &ks->maps[m]->items[i];
                                if ((r = payload_add(p, kv->key, kv->value, kv->value_len, def)) <
                                    0)
                                        return r;
                        }
                return 0;
        }
        for (size_t i = 0; i < src->n_items; i++) {
                const KeyToPath *k = &src->items[i];
                const KeyValue *kv = key_source_get(ks, k->key);
                if (!kv) {
                        if (src->optional)
                                continue;
                        return ks->secret
                                       ? error_set(err, -ENOENT,
                                                   "references non-existent secret key: %s", k->key)
                                       : error_set(
                                                 err, -ENOENT,
                                                 "configmap references non-existent config key: %s",
                                                 k->key);
                }
                r = payload_add(p, k->path, kv->value, kv->value_len, item_mode(&k->mode, def));
                if (r < 0)
                        return r;
        }
        return 0;
}

static int payload_configmap(Payload *p, const Pod *pod, const PodVolumesOptions *o,
                             const ConfigMapVolumeSource *src, mode_t def, Error *err) {
        const ConfigMap *cm = pod_lookup_configmap(o->lookup, pod->metadata.namespace, src->name);
        if (!cm) {
                if (src->optional)
                        return 0;
                return error_set(err, -ENOENT, "configmap \"%s\" not found", src->name);
        }
        KeySource ks = { { &cm->data, &cm->binary_data }, false };
        return payload_from_keys(p, &ks, src, def, err);
}

static int payload_secret(Payload *p, const Pod *pod, const PodVolumesOptions *o,
                          const SecretVolumeSource *src, mode_t def, Error *err) {
        const Secret *s = pod_lookup_secret(o->lookup, pod->metadata.namespace, src->name);
        if (!s) {
                if (src->optional)
                        return 0;
                return error_set(err, -ENOENT, "secret \"%s\" not found", src->name);
        }
        KeySource ks = { { &s->data, NULL }, true };
        return payload_from_keys(p, &ks, src, def, err);
}

static int payload_downward(Payload *p, const Pod *pod, const PodVolumesOptions *o,
                            const DownwardAPIVolumeSource *src, mode_t def, Error *err) {
        int r;
        for (size_t i = 0; i < src->n_items; i++) {
                const DownwardAPIVolumeFile *f = &src->items[i];
                _cleanup_free_ char *v = NULL;
                if (f->field_ref)
                        r = pod_field_ref_value(pod, o->node, f->field_ref->field_path, &v);
                else if (f->resource_field_ref)
                        r = pod_resource_field_ref_value(pod, NULL, o->node, f->resource_field_ref,
                                                         &v);
                else
                        r = -EINVAL;
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return error_set(err, r, "unable to get value for downwardAPI file \"%s\"",
                                         f->path);
                if ((r = payload_add(p, f->path, v, strlen(v), item_mode(&f->mode, def))) < 0)
                        return r;
        }
        return 0;
}

static int payload_projected(Payload *p, const Pod *pod, const PodVolumesOptions *o,
                             const ProjectedVolumeSource *src, Error *err) {
        mode_t def = (mode_t)src->default_mode.value;
        int r = 0;
        for (size_t i = 0; i < src->n_sources && r >= 0; i++) {
                const VolumeProjection *s = &src->sources[i];
                if (s->config_map)
                        r = payload_configmap(p, pod, o, s->config_map, def, err);
                else if (s->secret)
                        r = payload_secret(p, pod, o, s->secret, def, err);
                else if (s->downward_api)
                        r = payload_downward(p, pod, o, s->downward_api, def, err);
        }
        return r;
}

/* ---- tmpfs ---- */

static bool is_our_tmpfs(const char *path) {
        struct statfs sf;
        struct stat st, pst;
        _cleanup_free_ char *parent = strprintf("%s/..", path);
        if (!parent || statfs(path, &sf) < 0 || stat(path, &st) < 0 || stat(parent, &pst) < 0)
                return false;
        return sf.f_type == TMPFS_MAGIC && st.st_dev != pst.st_dev;
}

static int mount_tmpfs(const char *path, uint64_t size, const char *extra, Error *err) {
        int r = mkdir_p(path, 0755);
        if (r < 0)
                return error_set(err, r, "failed to create \"%s\": %s", path, strerror(-r));
        if (is_our_tmpfs(path))
                return 0; /* prepared before (agent restart, or an update) */
        _cleanup_free_ char *opts = size > 0 ? strprintf("size=%" PRIu64 "%s%s", size,
                                                         extra ? "," : "", strempty(extra))
                                             : strdup(strempty(extra));
        if (!opts)
                return -ENOMEM;
        if (mount("tmpfs", path, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                return error_set(err, -errno, "failed to mount tmpfs on \"%s\": %s", path,
                                 strerror(errno));
        return 0;
}

/* kubelet's calculateEmptyDirMemorySize: the smallest of node allocatable,
 * the pod's memory limit (when every container has one) and sizeLimit. */
static uint64_t memory_volume_size(const Pod *pod, const PodVolumesOptions *o,
                                   const OptionalQuantity *size_limit) {
        uint64_t size = pod_node_memory_bytes(o->node);
        uint64_t pod_limit = 0;
        bool all = pod->spec.n_containers > 0;
        for (size_t i = 0; i < pod->spec.n_containers; i++) {
                const OptionalQuantity *m = &pod->spec.containers[i].resources.limits.memory;
                if (!m->set || m->value.value <= 0)
                        all = false;
                else
                        pod_limit += (uint64_t)m->value.value;
        }
        if (all && pod_limit > 0 && (size == 0 || pod_limit < size))
                size = pod_limit;
        if (size_limit && size_limit->set && size_limit->value.value > 0 &&
            (size == 0 || (uint64_t)size_limit->value.value < size))
                size = (uint64_t)size_limit->value.value;
        return size;
}

/* ---- per volume ---- */

static int volume_dir(const PodVolumesOptions *o, const char *plugin, const char *name,
                      char **ret) {
        char *s = strprintf("%s/volumes/%s/%s", o->pod_dir, plugin, name);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static int64_t pod_fs_group(const Pod *pod) {
        const PodSecurityContext *sc = pod->spec.security_context;
        return sc && sc->fs_group.set ? sc->fs_group.value : -1;
}

static int prepare_empty_dir(const Pod *pod, const Volume *v, const PodVolumesOptions *o,
                             const char *path, Error *err) {
        int r;
        if (v->empty_dir.medium == STORAGE_MEDIUM_HUGEPAGES)
                return error_set(err, -EOPNOTSUPP,
                                 "volume \"%s\": emptyDir medium HugePages is not supported",
                                 v->name);
        if (v->empty_dir.medium == STORAGE_MEDIUM_MEMORY && !o->no_mounts)
                return mount_tmpfs(path, memory_volume_size(pod, o, &v->empty_dir.size_limit), NULL,
                                   err);
        if ((r = mkdir_p(path, 0777)) < 0)
                return error_set(err, r, "failed to create \"%s\": %s", path, strerror(-r));
        /* kubelet: 0777 whatever the umask, so any container user can write */
        if (chmod(path, 0777) < 0)
                return error_set(err, -errno, "failed to chmod \"%s\": %s", path, strerror(errno));
        int64_t g = pod_fs_group(pod);
        if (g >= 0 && (chown(path, (uid_t)-1, (gid_t)g) < 0 || chmod(path, 02777) < 0))
                return error_set(err, -errno, "failed to apply fsGroup to \"%s\": %s", path,
                                 strerror(errno));
        return 0;
}

static int prepare_projection(const Pod *pod, const Volume *v, const PodVolumesOptions *o,
                              const char *path, bool on_tmpfs, Error *err) {
        _cleanup_(payload_done) Payload p = {};
        int r;
        switch (v->type) {
        case VOLUME_CONFIG_MAP:
                r = payload_configmap(&p, pod, o, &v->config_map,
                                      (mode_t)v->config_map.default_mode.value, err);
                break;
        case VOLUME_SECRET:
                r = payload_secret(&p, pod, o, &v->secret, (mode_t)v->secret.default_mode.value,
                                   err);
                break;
        case VOLUME_DOWNWARD_API:
                r = payload_downward(&p, pod, o, &v->downward_api,
                                     (mode_t)v->downward_api.default_mode.value, err);
                break;
        case VOLUME_PROJECTED:
                r = payload_projected(&p, pod, o, &v->projected, err);
                break;
        case VOLUME_EMPTY_DIR:
        case VOLUME_HOST_PATH:
        case VOLUME_IMAGE:
        case _VOLUME_TYPE_INVALID:
        case _VOLUME_TYPE_MAX:
        default:
                r = -EINVAL;
        }
        if (r < 0)
                return r;
        /* secrets never touch a disk (kubelet wraps them in a Memory emptyDir) */
        if (on_tmpfs && !o->no_mounts &&
            (r = mount_tmpfs(path, memory_volume_size(pod, o, NULL), NULL, err)) < 0)
                return r;
        r = pod_atomic_write(path, p.files, p.n, pod_fs_group(pod));
        if (r < 0)
                return error_set(err, r, "failed to write volume \"%s\": %s", v->name,
                                 strerror(-r));
        return 0;
}

static int prepare_one(const Pod *pod, const Volume *v, const PodVolumesOptions *o,
                       PodVolumePath *ret, Error *err) {
        _cleanup_free_ char *path = NULL;
        const char *plugin = NULL;
        bool ro = true, tmpfs = false, image = false;
        int r;

        switch (v->type) {
        case VOLUME_HOST_PATH:
                if ((r = pod_host_path_check(&v->host_path, err)) < 0)
                        return r;
                if (!(path = strdup(v->host_path.path)))
                        return -ENOMEM;
                ro = false;
                break;
        case VOLUME_EMPTY_DIR:
                if ((r = volume_dir(o, PLUGIN_EMPTY_DIR, v->name, &path)) < 0)
                        return r;
                if ((r = prepare_empty_dir(pod, v, o, path, err)) < 0)
                        return r;
                ro = false;
                break;
        case VOLUME_CONFIG_MAP:
                plugin = PLUGIN_CONFIG_MAP;
                break;
        case VOLUME_SECRET:
                plugin = PLUGIN_SECRET;
                tmpfs = true;
                break;
        case VOLUME_DOWNWARD_API:
                plugin = PLUGIN_DOWNWARD_API;
                break;
        case VOLUME_PROJECTED:
                plugin = PLUGIN_PROJECTED;
                tmpfs = true;
                break;
        case VOLUME_IMAGE:
                /* pulled and mounted per container attempt (image-volumes.h) */
                image = true;
                break;
        case _VOLUME_TYPE_INVALID:
        case _VOLUME_TYPE_MAX:
        default:
                return error_set(err, -EINVAL, "volume \"%s\": unsupported volume type", v->name);
        }
        if (plugin) {
                if ((r = volume_dir(o, plugin, v->name, &path)) < 0)
                        return r;
                if ((r = prepare_projection(pod, v, o, path, tmpfs, err)) < 0)
                        return r;
        }
        char *name = strdup(v->name);
        if (!name)
                return -ENOMEM;
        *ret = (PodVolumePath){
                .name = name, .host_path = TAKE_PTR(path), .image = image, .read_only = ro
        };
        return 0;
}

static int prepare_shm(const Pod *pod, const PodVolumesOptions *o, char **ret, Error *err) {
        _cleanup_free_ char *path = strprintf("%s/shm", o->pod_dir);
        if (!path)
                return -ENOMEM;
        int r;
        if (o->no_mounts) {
                if ((r = mkdir_p(path, 01777)) < 0)
                        return error_set(err, r, "failed to create \"%s\": %s", path, strerror(-r));
        } else {
                /* containerd's sandbox shm: nosuid,nodev,noexec,mode=1777,size=65536k */
                uint64_t size = o->shm_size ? o->shm_size : DEFAULT_SHM_SIZE;
                if ((r = mkdir_p(path, 0755)) < 0)
                        return error_set(err, r, "failed to create \"%s\": %s", path, strerror(-r));
                if (!is_our_tmpfs(path)) {
                        _cleanup_free_ char *opts = strprintf("mode=1777,size=%" PRIu64, size);
                        if (!opts)
                                return -ENOMEM;
                        if (mount("shm", path, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, opts) < 0)
                                return error_set(err, -errno,
                                                 "failed to mount /dev/shm for the pod: %s",
                                                 strerror(errno));
                }
        }
        *ret = TAKE_PTR(path);
        (void)pod;
        return 0;
}

bool pod_volumes_project(const Pod *pod, bool secret, const char *name) {
        for (size_t i = 0; i < pod->spec.n_volumes; i++) {
                const Volume *v = &pod->spec.volumes[i];
                if (v->type == (secret ? VOLUME_SECRET : VOLUME_CONFIG_MAP) &&
                    (secret ? v->secret.name : v->config_map.name) &&
                    streq(secret ? v->secret.name : v->config_map.name, name))
                        return true;
                if (v->type != VOLUME_PROJECTED)
                        continue;
                for (size_t j = 0; j < v->projected.n_sources; j++) {
                        const VolumeProjection *p = &v->projected.sources[j];
                        const ConfigMapVolumeSource *src = secret ? p->secret : p->config_map;
                        if (src && src->name && streq(src->name, name))
                                return true;
                }
        }
        return false;
}

void pod_volumes_done(PodVolumes *v) {
        for (size_t i = 0; i < v->n_items; i++) {
                free(v->items[i].name);
                free(v->items[i].host_path);
        }
        free(v->items);
        free(v->shm_path);
        *v = (PodVolumes){};
}

const char *pod_volumes_get(const PodVolumes *v, const char *name) {
        for (size_t i = 0; v && i < v->n_items; i++)
                if (streq(v->items[i].name, name))
                        return v->items[i].host_path;
        return NULL;
}

bool pod_volumes_is_image(const PodVolumes *v, const char *name) {
        for (size_t i = 0; v && i < v->n_items; i++)
                if (streq(v->items[i].name, name))
                        return v->items[i].image;
        return false;
}

int pod_volumes_prepare(const Pod *pod, const PodVolumesOptions *o, PodVolumes *ret, Error *err) {
        _cleanup_(pod_volumes_done) PodVolumes v = {};
        int r;

        if (isempty(o->pod_dir))
                return -EINVAL;
        if ((r = mkdir_p(o->pod_dir, 0750)) < 0)
                return error_set(err, r, "failed to create \"%s\": %s", o->pod_dir, strerror(-r));
        v.items = calloc(pod->spec.n_volumes + 1, sizeof(*v.items));
        if (!v.items)
                return -ENOMEM;
        for (size_t i = 0; i < pod->spec.n_volumes; i++) {
                if ((r = prepare_one(pod, &pod->spec.volumes[i], o, &v.items[i], err)) < 0)
                        return r;
                v.n_items++;
        }
        if (!pod->spec.host_ipc && (r = prepare_shm(pod, o, &v.shm_path, err)) < 0)
                return r;
        *ret = v;
        v = (PodVolumes){};
        return 0;
}

/* ---- cleanup ---- */

static void umount_all(const char *path) {
        /* stacked mounts (a tmpfs mounted twice after a crash) come off one by one */
        for (int i = 0; i < 16; i++)
                if (umount2(path, MNT_DETACH | UMOUNT_NOFOLLOW) < 0)
                        break;
}

static int cleanup_plugin_dir(const char *plugin_dir) {
        _cleanup_closedir_ DIR *d = opendir(plugin_dir);
        if (!d)
                return errno == ENOENT ? 0 : -errno;
        int ret = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                _cleanup_free_ char *p = strprintf("%s/%s", plugin_dir, de->d_name);
                if (!p)
                        return -ENOMEM;
                struct stat st;
                if (lstat(p, &st) < 0 || !S_ISDIR(st.st_mode))
                        continue;
                if (is_our_tmpfs(p))
                        umount_all(p);
        }
        return ret;
}

int pod_volumes_cleanup(const char *pod_dir, Error *err) {
        _cleanup_free_ char *vols = strprintf("%s/volumes", pod_dir);
        _cleanup_free_ char *shm = strprintf("%s/shm", pod_dir);
        if (!vols || !shm)
                return -ENOMEM;
        int r;

        _cleanup_closedir_ DIR *d = opendir(vols);
        if (!d && errno != ENOENT)
                return error_set(err, -errno, "failed to open \"%s\": %s", vols, strerror(errno));
        struct dirent *de;
        while (d && (de = readdir(d))) {
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;
                _cleanup_free_ char *pd = strprintf("%s/%s", vols, de->d_name);
                if (!pd)
                        return -ENOMEM;
                if ((r = cleanup_plugin_dir(pd)) < 0)
                        return error_set(err, r, "failed to clean \"%s\": %s", pd, strerror(-r));
        }
        if (is_our_tmpfs(shm))
                umount_all(shm);

        if ((r = rm_rf_path(vols)) < 0)
                return error_set(err, r,
                                 "failed to remove \"%s\": %s "
                                 "(something is still mounted inside?)",
                                 vols, strerror(-r));
        if ((r = rm_rf_path(shm)) < 0)
                return error_set(err, r, "failed to remove \"%s\": %s", shm, strerror(-r));
        return 0;
}
