/* Pod-level cgroups. runc creates and removes each container's own cgroup
 * (cgroupsPath "/nanolet/pod<uid>/<id>"); the pod's parent cgroup is
 * nanolet's to remove once the pod is gone, in every hierarchy: each cgroup
 * v1 controller, or the single v2 tree. */
#pragma once

/* The pod's cgroup path below each hierarchy root: "/nanolet/pod<uid>". */
char *runtime_pod_cgroup_path(const char *uid);

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
