/* The children's environment: see child-env.h. */
#include "child-env.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "macro.h"
#include "string-util.h"
#include "strv.h"

static const char *const child_env_allowed[] = { "PATH", "TZ" };

static bool env_same_name(const char *a, const char *b) {
        size_t n = strcspn(a, "=");
        return strncmp(a, b, n) == 0 && b[n] == '=';
}

int child_env_new(char *const *extra, char ***ret) {
        _cleanup_strv_free_ char **env = NULL;

        for (size_t i = 0; i < ELEMENTSOF(child_env_allowed); i++) {
                const char *name = child_env_allowed[i];
                const char *value = getenv(name);
                if (streq(name, "PATH") && isempty(value))
                        value = CHILD_ENV_DEFAULT_PATH;
                if (!value)
                        continue;
                char *s = strprintf("%s=%s", name, value);
                if (!s || strv_consume(&env, s) < 0) {
                        free(s);
                        return -ENOMEM;
                }
        }
        for (char *const *e = extra; e && *e; e++) {
                if (!strchr(*e, '=') || **e == '=')
                        return -EINVAL;
                bool replaced = false;
                for (char **o = env; o && *o; o++)
                        if (env_same_name(*e, *o)) {
                                char *s = strdup(*e);
                                if (!s)
                                        return -ENOMEM;
                                free(*o);
                                *o = s;
                                replaced = true;
                                break;
                        }
                if (!replaced && strv_extend(&env, *e) < 0)
                        return -ENOMEM;
        }
        if (!env) {
                env = calloc(1, sizeof(char *));
                if (!env)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(env);
        return 0;
}
