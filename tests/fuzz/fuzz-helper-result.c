/* libFuzzer target: a helper's stdout (helper.h) is not to be believed
 * blindly, and its command line is parsed by the same code for every mode.
 * The result parser must stay in the errno range and never report success
 * without a result object; the argument parser must keep every value it
 * accepts in the table's bounds. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "helper.h"
#include "macro.h"
#include "strv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct FuzzArgs {
        const char *name;
        uint64_t size;
        int64_t delta;
        char *const *items;
} FuzzArgs;

static const HelperArg fuzz_args[] = {
        HELPER_ARG_STRING(FuzzArgs, name, "name", true),
        HELPER_ARG_U64(FuzzArgs, size, "size", false),
        HELPER_ARG_I64(FuzzArgs, delta, "delta", false),
        HELPER_ARG_STRV(FuzzArgs, items, "item", false),
};

static const HelperMode fuzz_mode = HELPER_MODE_INIT("fuzz", FuzzArgs, fuzz_args);

static void fuzz_result(const char *s, size_t size, bool truncated, int code) {
        json_t *j = NULL;
        Error err = {};
        int r = helper_result_parse("fuzz", s, size, truncated, code, 1, &j, &err);
        if (r < -4095)
                abort();
        if (r < 0 && (err.error != r || memchr(err.message, 0, sizeof err.message) == NULL))
                abort();
        if (r >= 0 && (!json_is_object(j) || err.error != 0))
                abort();
        if (j && !json_is_integer(json_object_get(j, "result")))
                abort();
        json_decref(j);
}

/* The input as a command line: one argument per line. */
static void fuzz_args_parse(const char *s, size_t size) {
        char *copy = strndup(s, size);
        char **argv = NULL;
        if (!copy)
                return;
        for (char *save = NULL, *a = strtok_r(copy, "\n", &save); a;
             a = strtok_r(NULL, "\n", &save))
                if (strv_extend(&argv, a) < 0)
                        break;
        FuzzArgs args = {};
        Error err = {};
        if (helper_args_parse(&fuzz_mode, (int)strv_length(argv), argv, &args, &err) >= 0) {
                if (!args.name)
                        abort();
                /* What was parsed builds a command line that parses again
                 * to the same values. */
                char **again = NULL;
                FuzzArgs back = {};
                if (helper_argv_new(&fuzz_mode, &args, &again) < 0 ||
                    helper_args_parse(&fuzz_mode, (int)strv_length(again) - 3, again + 3, &back,
                                      NULL) < 0 ||
                    !streq(back.name, args.name) || back.size != args.size ||
                    back.delta != args.delta || strv_length(back.items) != strv_length(args.items))
                        abort();
                helper_args_done(&fuzz_mode, &back);
                strv_free(again);
                helper_args_done(&fuzz_mode, &args);
        } else if (err.error != -EINVAL && err.error != -ENOMEM)
                abort();
        strv_free(argv);
        free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *s = (const char *)data;
        fuzz_result(s, size, false, CLD_EXITED);
        fuzz_result(s, size, true, CLD_EXITED);
        fuzz_result(s, size, false, CLD_KILLED);
        fuzz_args_parse(s, size);
        return 0;
}
