#include "container-id.h"

#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "hash.h"
#include "string-util.h"

char *container_runtime_id(const char *uid, const char *name, unsigned attempt) {
        _cleanup_free_ char *key = strprintf("%s/%s/%u", uid, name, attempt);
        char hex[65];

        if (!key || sha256_hex(key, strlen(key), hex) < 0)
                return NULL;
        return strdup(hex);
}

char *container_legacy_id(const char *uid, const char *name, unsigned attempt) {
        return strprintf("%s-%s-%u", uid, name, attempt);
}
