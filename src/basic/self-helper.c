/* See self-helper.h. */
#include "self-helper.h"

#include <errno.h>
#include <stdlib.h>

#include "child-env.h"
#include "cleanup.h"
#include "log.h"
#include "string-util.h"
#include "strv.h"

int self_helper_env(char ***ret) {
        _cleanup_strv_free_ char **extra = NULL;
        _cleanup_free_ char *level = strprintf("NANOLET_LOG_LEVEL=%d", log_get_max_level());
        const char *journal = getenv("JOURNAL_STREAM");
        _cleanup_free_ char *stream = journal ? strprintf("JOURNAL_STREAM=%s", journal) : NULL;
        if (!level || (journal && !stream))
                return -ENOMEM;
        int r = strv_extend(&extra, level);
        if (r >= 0 && stream)
                r = strv_extend(&extra, stream);
        /* a helper's log lines go to the agent's stderr: in its format */
        if (r >= 0 && log_get_format() == LOG_FORMAT_JSON)
                r = strv_extend(&extra, "NANOLET_LOG_FORMAT=json");
        if (r < 0)
                return r;
        return child_env_new(extra, ret);
}

const char *self_helper_exe(void) {
        const char *e = getenv(SELF_HELPER_EXE_ENV);
        return e && startswith(e, "/proc/") ? e : "/proc/self/exe";
}
