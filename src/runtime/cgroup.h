/* Pod-level cgroups: kubelet's QoS hierarchy and the pod cgroup below it.
 *
 * Layout (cgroupfs driver), relative to each hierarchy root (every cgroup
 * v1 controller, or the single v2 tree), under --cgroup-root (default "/"):
 *   <root>/kubepods/pod<uid>              Guaranteed pods
 *   <root>/kubepods/burstable/pod<uid>    Burstable pods
 *   <root>/kubepods/besteffort/pod<uid>   BestEffort pods
 *   .../pod<uid>/<container id>           each container (runc creates it)
 * systemd driver (only where systemd is PID 1): the same levels as slices,
 * kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice
 * (dashes in the UID become '_'), and the container as runc's scope
 * nanolet-<id>.scope (cgroupsPath "<pod slice>:nanolet:<id>").
 *
 * nanolet creates and configures the pod cgroup before the first container
 * starts (runtime_cgroup_create()) and removes it once the pod is gone
 * (runtime_cgroup_remove()); the QoS levels stay. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

typedef enum CgroupDriver {
        CGROUP_DRIVER_CGROUPFS,
        CGROUP_DRIVER_SYSTEMD,
        _CGROUP_DRIVER_MAX,
        _CGROUP_DRIVER_INVALID = -EINVAL,
} CgroupDriver;

/* The QoS level a pod's cgroup is placed in (the pod layer maps its
 * PodQOSClass onto it). */
typedef enum CgroupQos {
        CGROUP_QOS_GUARANTEED,
        CGROUP_QOS_BURSTABLE,
        CGROUP_QOS_BEST_EFFORT,
        _CGROUP_QOS_MAX,
        _CGROUP_QOS_INVALID = -EINVAL,
} CgroupQos;

typedef struct CgroupLayout {
        CgroupDriver driver;
        /* --cgroup-root: "/" (default) or a cgroup path ("/nodes/a"); with
         * the systemd driver a slice path such as "/edge.slice". NULL = "/". */
        const char *root;
} CgroupLayout;

/* "cgroupfs"/"systemd" <-> CgroupDriver. */
CgroupDriver cgroup_driver_from_string(const char *s);
const char *cgroup_driver_to_string(CgroupDriver d);

/* The pod's cgroup directory below each hierarchy root, e.g.
 * "/kubepods/burstable/pod<uid>" or, with systemd,
 * "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice".
 * qos_level: the QoS level alone ("/kubepods/burstable"). NULL on ENOMEM. */
char *runtime_pod_cgroup_path(const CgroupLayout *l, CgroupQos qos, const char *uid);
char *runtime_qos_cgroup_path(const CgroupLayout *l, CgroupQos qos);
/* The cgroupsPath runc gets for container id of the pod, and the directory
 * runc makes of it (for stats). */
char *runtime_container_cgroups_path(const CgroupLayout *l, CgroupQos qos, const char *uid,
                                     const char *id);
char *runtime_container_cgroup_path(const CgroupLayout *l, CgroupQos qos, const char *uid,
                                    const char *id);

/* The systemd driver drives runc's systemd cgroup manager, which talks to
 * systemd as PID 1. sysroot is "/" normally, a fixture tree in tests: true
 * when <sysroot>/run/systemd/system is a directory (sd_booted()) and
 * <sysroot>/proc/1/comm says "systemd". Otherwise false with err naming
 * what PID 1 is. */
bool runtime_systemd_is_init(const char *sysroot, Error *err);

/* Limits of one cgroup. 0 leaves a value at the kernel's default. */
typedef struct CgroupHugepageLimit {
        const char *page_size; /* the hugetlb name: "2MB", "1GB" */
        uint64_t limit;        /* bytes */
} CgroupHugepageLimit;

typedef struct CgroupResources {
        uint64_t cpu_shares; /* v1 cpu.shares; v2 cpu.weight from it (kubelet's mapping) */
        int64_t cpu_quota;   /* µs per cpu_period; -1 = unlimited ("max") */
        uint64_t cpu_period; /* µs; used with cpu_quota */
        uint64_t memory_limit;
        int64_t pids_limit;
        const CgroupHugepageLimit *hugepages;
        size_t n_hugepages;
} CgroupResources;

/* kubelet's CpuSharesToCpuWeight: shares 2..262144 -> weight 1..10000. */
uint64_t cgroup_cpu_shares_to_weight(uint64_t shares);

/* ---- the systemd driver's slices ----
 * Under systemd, a slice's limits belong to systemd: a value written into
 * its cgroupfs files is reset whenever systemd re-applies the unit's own
 * (on a daemon-reload, or when the slice is realized after the write). So
 * the pod slice (and the QoS slices) are made the way kubelet's
 * libcontainer makes them, as transient slice units whose properties carry
 * the limits: org.freedesktop.systemd1.Manager.StartTransientUnit, called
 * through busctl(1) (part of systemd, so present wherever the driver is
 * allowed; no D-Bus library in the agent), and SetUnitProperties when the
 * unit exists already (an agent restart, a second pod in a QoS slice).
 * Hugepage limits have no systemd property: they are written into the
 * hugetlb files after the start, as libcontainer does (systemd does not
 * manage hugetlb). */

typedef enum SystemdSliceCall {
        SYSTEMD_SLICE_START, /* StartTransientUnit: create with the properties */
        SYSTEMD_SLICE_SET,   /* SetUnitProperties (runtime): update an existing one */
        SYSTEMD_SLICE_STOP,  /* StopUnit: the pod is gone */
        _SYSTEMD_SLICE_CALL_MAX,
        _SYSTEMD_SLICE_CALL_INVALID = -EINVAL,
} SystemdSliceCall;

/* The slice unit of a systemd-driver cgroup path: its last component
 * ("/kubepods.slice/kubepods-burstable.slice" -> "kubepods-burstable.slice");
 * NULL when path does not end in a ".slice" component. Borrowed from path. */
const char *runtime_systemd_slice_unit(const char *path);

/* The busctl command line (argv[0] = busctl, e.g. "busctl") for call on
 * the slice at path, with res as unit properties (START, SET), libcontainer's
 * names: v1 CPUShares / MemoryLimit, v2 CPUWeight (from the shares, kubelet's
 * mapping) / MemoryMax; CPUQuotaPerSecUSec (quota per second, rounded up to
 * 10 ms as systemd keeps it; UINT64_MAX = unlimited) with
 * CPUQuotaPeriodUSec; TasksMax; the CPU, memory and tasks accounting on (so
 * that systemd realizes the slice in those controllers), and
 * DefaultDependencies off (a pod slice is not stopped for shutdown
 * ordering). A zero value is left out (systemd's default). STOP takes no
 * properties (res may be NULL). -EINVAL when path is not a slice. */
int runtime_systemd_slice_argv(const char *busctl, SystemdSliceCall call, const char *path,
                               const CgroupResources *res, bool v2, char ***ret);

/* Whether busctl's error output says the unit exists already (START is then
 * retried as SET). */
bool runtime_systemd_unit_exists_error(const char *stderr_text);

/* Whether the hierarchy under cgroup_root (normally "/sys/fs/cgroup") is
 * cgroup v2 (cgroup_root/cgroup.controllers exists). */
bool runtime_cgroup_is_v2(const char *cgroup_root);

/* Creates the cgroup at path (absolute, relative to each hierarchy, as
 * runtime_pod_cgroup_path() returns) below cgroup_root (normally
 * "/sys/fs/cgroup"; cgroup v2 when cgroup_root/cgroup.controllers exists)
 * with its parents, and writes res into it. v1: in the cpu, cpuacct,
 * memory and pids controllers (and hugetlb when limited); v2: the
 * controllers are enabled in each parent's cgroup.subtree_control. An
 * existing cgroup is updated. Idempotent; 0 or a negative errno with err
 * naming the file. */
int runtime_cgroup_create(const char *cgroup_root, const char *path, const CgroupResources *res,
                          Error *err);

/* Removes the cgroup at path (relative to each hierarchy) and any child
 * cgroups left behind, depth first, under cgroup_root (normally
 * "/sys/fs/cgroup"). A hierarchy where path does not exist is skipped; a
 * cgroup that still has processes makes it return -EBUSY after trying the
 * others. */
int runtime_cgroup_remove(const char *cgroup_root, const char *path);

/* The lowest oom_score_adj a container started by this process can get:
 * -1000 with CAP_SYS_RESOURCE, else this process's own value (lowering it
 * needs the capability; runc would fail the container). */
int runtime_oom_score_adj_floor(void);
