/* Kubernetes' $(VAR) expansion; see expansion.h. */
#include "expansion.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "string-util.h"

typedef struct Output {
        char *buf;
        size_t len, cap, max;
} Output;

static int output_append(Output *o, const char *s, size_t n) {
        if (n > o->max || o->len > o->max - n)
                return -E2BIG;
        return strbuf_append(&o->buf, &o->len, &o->cap, s, n);
}

int kube_expand(const char *in, expand_lookup_t lookup, void *userdata, size_t max, char **ret) {
        Output o = { .max = max };
        size_t n = strlen(in), checkpoint = 0;
        int r = output_append(&o, "", 0);

        for (size_t cur = 0; r >= 0 && cur < n; cur++) {
                if (in[cur] != '$' || cur + 1 >= n)
                        continue;
                r = output_append(&o, in + checkpoint, cur - checkpoint);
                const char *rest = in + cur + 1;
                size_t advance = 1;
                if (r >= 0 && rest[0] == '$') {
                        r = output_append(&o, "$", 1); /* "$$" escapes */
                } else if (r >= 0 && rest[0] == '(') {
                        const char *close = strchr(rest + 1, ')');
                        if (!close) {
                                r = output_append(&o, "$(", 2);
                        } else {
                                _cleanup_free_ char *name =
                                        strndup(rest + 1, (size_t)(close - rest - 1));
                                if (!name) {
                                        r = -ENOMEM;
                                        break;
                                }
                                const char *v = lookup(name, userdata);
                                if (v)
                                        r = output_append(&o, v, strlen(v));
                                else /* undefined: kept as written */
                                        r = output_append(&o, in + cur,
                                                          (size_t)(close - in) - cur + 1);
                                advance = (size_t)(close - rest) + 1;
                        }
                } else if (r >= 0) {
                        r = output_append(&o, in + cur, 2);
                }
                cur += advance;
                checkpoint = cur + 1;
        }
        if (r >= 0 && checkpoint < n)
                r = output_append(&o, in + checkpoint, n - checkpoint);
        if (r < 0) {
                free(o.buf);
                return r;
        }
        *ret = o.buf;
        return 0;
}
