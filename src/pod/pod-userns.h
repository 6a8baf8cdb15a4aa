/* User namespaces for pods with hostUsers: false, as kubelet's userns
 * manager (pkg/kubelet/userns) hands them out: each such pod gets 65,536
 * host IDs of its own, container IDs 0..65535 mapped to host IDs
 * start..start+65535, the same range for UIDs and GIDs.
 *
 * Ranges are whole slots of 65,536 above the host's own IDs: slot 0 (IDs
 * 0..65535, the host's users and nobody) is never handed out; slots 1..n
 * are, up to the last slot that ends below 4294967295 (the invalid ID -1).
 * Allocation is next-fit after the last range handed out, so a range a pod
 * just freed is not the next pod's at once (files it left on a hostPath
 * would be).
 *
 * The allocation of a pod is persisted in its pod directory,
 * <root-dir>/pods/<uid>/userns.json, written before the pod's first
 * container is created and removed with the directory: an agent restart
 * claims every recorded range again before it hands out new ones, so a
 * running pod keeps its range and no two pods share one. A record that is
 * missing reads as -ENOENT; one that is empty, not JSON, of another version,
 * a symlink (never followed), or names a range that is not a slot reads as
 * -EINVAL: the pod is refused rather than given a range its running
 * containers may not have. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "error.h"

#define POD_USERNS_RANGE_LEN UINT32_C(65536)
#define POD_USERNS_RECORD "userns.json"
#define POD_USERNS_RECORD_VERSION 1

typedef struct PodUsernsAllocator {
        uint32_t n_slots; /* slots 1..n_slots may be handed out */
        uint32_t next;    /* where next-fit starts looking */
        uint32_t n_used;
        uint8_t *used; /* bitmap over slots 1..n_slots */
} PodUsernsAllocator;

/* n_slots: how many ranges may be handed out at most, clamped to the
 * 65,534 that fit (0: all of them). -ENOMEM. */
int pod_userns_allocator_init(PodUsernsAllocator *a, uint32_t n_slots);
void pod_userns_allocator_done(PodUsernsAllocator *a);

/* A free range's first host ID in *ret_start; -ENOSPC when all are used. */
int pod_userns_allocate(PodUsernsAllocator *a, uint32_t *ret_start);
/* Records a range that is already in use (from a pod's record): -EINVAL if
 * start is not the first ID of a slot that may be handed out, -EBUSY if it
 * is taken. */
int pod_userns_claim(PodUsernsAllocator *a, uint32_t start);
/* Frees a range; one that is not allocated is ignored. */
void pod_userns_release(PodUsernsAllocator *a, uint32_t start);
bool pod_userns_is_used(const PodUsernsAllocator *a, uint32_t start);

/* <pod_dir>/userns.json: read (-ENOENT, or -EINVAL with err saying why) and
 * written atomically. */
int pod_userns_record_read(const char *pod_dir, uint32_t *ret_start, Error *err);
int pod_userns_record_write(const char *pod_dir, uint32_t start);
