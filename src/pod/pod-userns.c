/* Per-pod user namespace ranges (pod-userns.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cleanup.h"
#include "fileio.h"
#include "json-util.h"
#include "pod-userns.h"
#include "string-util.h"

/* Slots 1..65534: slot 65535 would hold 4294967295, which is no ID. */
#define MAX_SLOTS (UINT32_C(65536) - 2)

int pod_userns_allocator_init(PodUsernsAllocator *a, uint32_t n_slots) {
        if (n_slots == 0 || n_slots > MAX_SLOTS)
                n_slots = MAX_SLOTS;
        *a = (PodUsernsAllocator){ .n_slots = n_slots, .next = 1 };
        a->used = calloc((n_slots + 1 + 7) / 8, 1);
        return a->used ? 0 : -ENOMEM;
}

void pod_userns_allocator_done(PodUsernsAllocator *a) {
        free(a->used);
        *a = (PodUsernsAllocator){};
}

static bool slot_used(const PodUsernsAllocator *a, uint32_t slot) {
        return a->used[slot / 8] & (1u << (slot % 8));
}

static void slot_set(PodUsernsAllocator *a, uint32_t slot, bool on) {
        if (on)
                a->used[slot / 8] |= (uint8_t)(1u << (slot % 8));
        else
                a->used[slot / 8] &= (uint8_t) ~(1u << (slot % 8));
}

/* The slot of a range start, 0 if it is none that may be handed out. */
static uint32_t slot_of(const PodUsernsAllocator *a, uint32_t start) {
        if (start % POD_USERNS_RANGE_LEN != 0)
                return 0;
        uint32_t slot = start / POD_USERNS_RANGE_LEN;
        return slot >= 1 && slot <= a->n_slots ? slot : 0;
}

int pod_userns_allocate(PodUsernsAllocator *a, uint32_t *ret_start) {
        if (a->n_used >= a->n_slots)
                return -ENOSPC;
        for (uint32_t i = 0; i < a->n_slots; i++) {
                uint32_t slot = (a->next - 1 + i) % a->n_slots + 1;
                if (slot_used(a, slot))
                        continue;
                slot_set(a, slot, true);
                a->n_used++;
                a->next = slot % a->n_slots + 1;
                *ret_start = slot * POD_USERNS_RANGE_LEN;
                return 0;
        }
        return -ENOSPC;
}

int pod_userns_claim(PodUsernsAllocator *a, uint32_t start) {
        uint32_t slot = slot_of(a, start);
        if (slot == 0)
                return -EINVAL;
        if (slot_used(a, slot))
                return -EBUSY;
        slot_set(a, slot, true);
        a->n_used++;
        return 0;
}

void pod_userns_release(PodUsernsAllocator *a, uint32_t start) {
        uint32_t slot = slot_of(a, start);
        if (slot == 0 || !slot_used(a, slot))
                return;
        slot_set(a, slot, false);
        a->n_used--;
}

bool pod_userns_is_used(const PodUsernsAllocator *a, uint32_t start) {
        uint32_t slot = slot_of(a, start);
        return slot != 0 && slot_used(a, slot);
}

int pod_userns_record_read(const char *pod_dir, uint32_t *ret_start, Error *err) {
        _cleanup_free_ char *path = strprintf("%s/" POD_USERNS_RECORD, pod_dir);
        json_t *o = NULL;
        int r;

        if (!path)
                return -ENOMEM;
        r = json_state_load_at(AT_FDCWD, path, 4096, &o, err);
        if (r == -ENOENT || r == -ENOMEM)
                return r;
        if (r < 0)
                return -EINVAL;
        json_t *version = json_object_get(o, "version");
        json_t *host_id = json_object_get(o, "hostID");
        json_t *length = json_object_get(o, "length");
        if (!json_is_integer(version) || json_integer_value(version) != POD_USERNS_RECORD_VERSION)
                r = error_set(err, -EINVAL, "%s: version is not %d", path,
                              POD_USERNS_RECORD_VERSION);
        else if (!json_is_integer(length) || json_integer_value(length) != POD_USERNS_RANGE_LEN)
                r = error_set(err, -EINVAL, "%s: length is not %u", path,
                              (unsigned)POD_USERNS_RANGE_LEN);
        else if (!json_is_integer(host_id) || json_integer_value(host_id) <= 0 ||
                 json_integer_value(host_id) % POD_USERNS_RANGE_LEN != 0 ||
                 json_integer_value(host_id) > (json_int_t)MAX_SLOTS * POD_USERNS_RANGE_LEN)
                r = error_set(err, -EINVAL,
                              "%s: hostID is not a multiple of %u above the host's IDs", path,
                              (unsigned)POD_USERNS_RANGE_LEN);
        else
                *ret_start = (uint32_t)json_integer_value(host_id);
        json_decref(o);
        return r;
}

int pod_userns_record_write(const char *pod_dir, uint32_t start) {
        _cleanup_free_ char *path = strprintf("%s/" POD_USERNS_RECORD, pod_dir);
        _cleanup_free_ char *text = strprintf("{\"version\":%d,\"hostID\":%u,\"length\":%u}\n",
                                              POD_USERNS_RECORD_VERSION, (unsigned)start,
                                              (unsigned)POD_USERNS_RANGE_LEN);
        if (!path || !text)
                return -ENOMEM;
        return write_file_atomic(path, text, strlen(text), 0600);
}
