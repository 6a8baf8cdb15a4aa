/* Image GC's decision: kubelet's thresholds and its least-recently-used
 * order, as pure functions (see image-gc.h). */
#include "image-gc.h"

#include <stdlib.h>
#include <string.h>

#include "string-util.h"

uint64_t image_gc_bytes_to_free(const ImageGcPolicy *p, uint64_t capacity, uint64_t available) {
        if (p->high_percent >= 100 || capacity == 0)
                return 0;
        if (available > capacity)
                available = capacity;
        /* kubelet: usagePercent := 100 - int(available*100/capacity), in
         * integer arithmetic (done in 128 bits: no overflow on big disks). */
        unsigned usage = 100 - (unsigned)((unsigned __int128)available * 100 / capacity);
        if (usage <= p->high_percent)
                return 0;
        uint64_t target = (uint64_t)((unsigned __int128)capacity * (100 - p->low_percent) / 100);
        return target > available ? target - available : 0;
}

static int cmp_lru(const void *a, const void *b, void *userdata) {
        const ImageGcCandidate *base = userdata;
        const ImageGcCandidate *x = &base[*(const size_t *)a], *y = &base[*(const size_t *)b];
        if (x->last_used != y->last_used)
                return x->last_used < y->last_used ? -1 : 1;
        if (x->first_seen != y->first_seen)
                return x->first_seen < y->first_seen ? -1 : 1;
        return strcmp(strempty(x->digest), strempty(y->digest));
}

size_t image_gc_select(const ImageGcPolicy *p, const ImageGcCandidate *c, size_t n, usec_t now,
                       uint64_t bytes_to_free, size_t *ret) {
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
                if (c[i].in_use || c[i].pinned)
                        continue;
                /* Too new: a pull or load whose pod has not created its
                 * container yet must not lose its image. */
                if (c[i].first_seen > now || now - c[i].first_seen < p->min_age)
                        continue;
                ret[k++] = i;
        }
        qsort_r(ret, k, sizeof *ret, cmp_lru, (void *)c);
        uint64_t sum = 0;
        for (size_t i = 0; i < k; i++) {
                if (sum >= bytes_to_free)
                        return i;
                sum += c[ret[i]].size;
        }
        return k;
}

size_t image_gc_select_expired(const ImageGcPolicy *p, const ImageGcCandidate *c, size_t n,
                               usec_t now, size_t *ret) {
        size_t k = 0;
        if (p->max_age == 0)
                return 0;
        for (size_t i = 0; i < n; i++) {
                if (c[i].in_use || c[i].pinned)
                        continue;
                usec_t since = c[i].last_used ?: c[i].first_seen;
                if (since > now || now - since <= p->max_age)
                        continue;
                ret[k++] = i;
        }
        qsort_r(ret, k, sizeof *ret, cmp_lru, (void *)c);
        return k;
}

bool image_gc_labels_pinned(char *const *labels) {
        for (size_t i = 0; labels && labels[i] && labels[i + 1]; i += 2) {
                if (streq(labels[i], IMAGE_GC_LABEL_CONTAINERD) &&
                    (streq(labels[i + 1], "pinned") || streq(labels[i + 1], "true")))
                        return true;
                if (streq(labels[i], IMAGE_GC_LABEL_NANOLET) && streq(labels[i + 1], "true"))
                        return true;
        }
        return false;
}
