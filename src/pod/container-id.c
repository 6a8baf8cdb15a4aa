#include "container-id.h"

#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "hash.h"
#include "string-util.h"

#define ATTEMPT_DIGITS 48
#define POD_DIGITS 16

static int pod_mark(const char *uid, char ret[static 65]) {
        return sha256_hex(uid, strlen(uid), ret);
}

char *container_runtime_id(const char *uid, const char *name, unsigned attempt) {
        _cleanup_free_ char *key = strprintf("%s/%s/%u", uid, name, attempt);
        char attempt_hex[65], pod_hex[65];

        if (!key || sha256_hex(key, strlen(key), attempt_hex) < 0 || pod_mark(uid, pod_hex) < 0)
                return NULL;
        return strprintf("%.*s%.*s", ATTEMPT_DIGITS, attempt_hex, POD_DIGITS, pod_hex);
}

char *container_legacy_id(const char *uid, const char *name, unsigned attempt) {
        return strprintf("%s-%s-%u", uid, name, attempt);
}

bool container_id_of_pod(const char *id, const char *uid) {
        char pod_hex[65];
        size_t n = strlen(uid);

        if (strncmp(id, uid, n) == 0 && id[n] == '-')
                return true;
        if (strlen(id) != ATTEMPT_DIGITS + POD_DIGITS || pod_mark(uid, pod_hex) < 0)
                return false;
        return strncmp(id + ATTEMPT_DIGITS, pod_hex, POD_DIGITS) == 0;
}
