/* Bench-only: what compiling a seccomp profile costs runc (docs/internals/design-decisions.md,
 * "The seccomp profile stays the default"). Not installed, not a test.
 *
 *   bench-seccomp profile            the RuntimeDefault linux.seccomp object a
 *                                    default container gets (containerd's
 *                                    default capabilities), as JSON
 *   bench-seccomp compile FILE [ROUNDS [OPTIMIZE]]
 *                                    replays, in-process, the libseccomp calls
 *                                    runc 1.1 makes in `runc init` for the
 *                                    linux.seccomp object in FILE, and prints
 *                                    the median CPU time of the rule adds and
 *                                    of the BPF export, and the program's size
 *   bench-seccomp pfc FILE           the same filter as libseccomp's pseudo
 *                                    filter code, to compare two profiles
 *
 * The replay follows runc v1.1.5's libcontainer/seccomp/seccomp_linux.go
 * (read, not copied): seccomp_init() with the default action, one
 * seccomp_arch_add() per listed architecture, NNP off, then per syscall
 * *name* (runc splits every names[] entry into one rule): the name resolved
 * for the native architecture (unknown names skipped), rules whose action is
 * the default one skipped, one seccomp_rule_add_array() with the args, or
 * one per arg when two args share an index (runc's OR fallback). runc then
 * exports the BPF, prepends its ENOSYS stub and loads it; the stub and the
 * load are not replayed. OPTIMIZE 2 sets SCMP_FLTATR_CTL_OPTIMIZE as runc
 * >= 1.2 does for profiles of more than 32 rules. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <seccomp.h>

#include "runtime-config.h"

#define MAX_ROUNDS 200

static double cpu_ms(void) {
        struct timespec t;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
        return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;
        return (x > y) - (x < y);
}

static int print_profile(void) {
        RuntimeContainerConfig c = {
                .rootfs = (char *)"/nonexistent",
                .args = (char *[]){ (char *)"true", NULL },
        };
        Error err = {};
        json_t *j = NULL;
        int r = runtime_config_to_json(&c, &j, &err);

        if (r < 0) {
                fprintf(stderr, "bench-seccomp: %s\n", err.message);
                return 1;
        }
        r = json_dumpf(json_object_get(json_object_get(j, "linux"), "seccomp"), stdout,
                       JSON_INDENT(1));
        json_decref(j);
        printf("\n");
        return r == 0 ? 0 : 1;
}

/* "SCMP_ACT_ERRNO" + errnoRet (EPERM when absent, as runc) -> libseccomp. */
static int action(json_t *o, const char *action_key, const char *errno_key, uint32_t *ret) {
        const char *a = json_string_value(json_object_get(o, action_key));
        json_t *e = json_object_get(o, errno_key);

        if (!a)
                return -EINVAL;
        if (strcmp(a, "SCMP_ACT_ALLOW") == 0)
                *ret = SCMP_ACT_ALLOW;
        else if (strcmp(a, "SCMP_ACT_ERRNO") == 0)
                *ret = SCMP_ACT_ERRNO(e ? (uint16_t)json_integer_value(e) : EPERM);
        else if (strcmp(a, "SCMP_ACT_KILL") == 0)
                *ret = SCMP_ACT_KILL_THREAD;
        else if (strcmp(a, "SCMP_ACT_LOG") == 0)
                *ret = SCMP_ACT_LOG;
        else
                return -EINVAL;
        return 0;
}

static int compare_op(const char *s, enum scmp_compare *ret) {
        static const char *const ops[] = {
                [SCMP_CMP_NE] = "SCMP_CMP_NE",
                [SCMP_CMP_LT] = "SCMP_CMP_LT",
                [SCMP_CMP_LE] = "SCMP_CMP_LE",
                [SCMP_CMP_EQ] = "SCMP_CMP_EQ",
                [SCMP_CMP_GE] = "SCMP_CMP_GE",
                [SCMP_CMP_GT] = "SCMP_CMP_GT",
                [SCMP_CMP_MASKED_EQ] = "SCMP_CMP_MASKED_EQ",
        };

        for (size_t i = SCMP_CMP_NE; s && i <= SCMP_CMP_MASKED_EQ; i++)
                if (strcmp(s, ops[i]) == 0) {
                        *ret = (enum scmp_compare)i;
                        return 0;
                }
        return -EINVAL;
}

/* "SCMP_ARCH_X86_64" -> libseccomp's token, as libseccomp-golang maps it. */
static uint32_t arch_token(const char *oci) {
        char name[32];
        size_t i;

        if (!oci || strncmp(oci, "SCMP_ARCH_", 10) != 0)
                return 0;
        oci += 10;
        for (i = 0; oci[i] && i < sizeof(name) - 1; i++)
                name[i] = (char)(oci[i] >= 'A' && oci[i] <= 'Z' ? oci[i] + 32 : oci[i]);
        name[i] = 0;
        return seccomp_arch_resolve_name(name);
}

static int add_name(scmp_filter_ctx ctx, const char *name, uint32_t act, json_t *args) {
        struct scmp_arg_cmp cmp[6];
        unsigned per_index[6] = {};
        bool shared_index = false;
        size_t n = 0, i;
        json_t *a;
        int nr = seccomp_syscall_resolve_name(name);

        if (nr == __NR_SCMP_ERROR)
                return 0; /* runc: "unknown seccomp syscall ignored" */
        json_array_foreach(args, i, a) {
                json_int_t index = json_integer_value(json_object_get(a, "index"));

                if (n == 6 || index < 0 || index > 5 ||
                    compare_op(json_string_value(json_object_get(a, "op")), &cmp[n].op) < 0)
                        return -EINVAL;
                cmp[n].arg = (unsigned)index;
                /* JSON integers above INT64_MAX arrive as doubles in jansson;
                 * none of nanolet's profile's are. */
                cmp[n].datum_a = (scmp_datum_t)json_integer_value(json_object_get(a, "value"));
                cmp[n].datum_b = (scmp_datum_t)json_integer_value(json_object_get(a, "valueTwo"));
                if (++per_index[index] > 1)
                        shared_index = true;
                n++;
        }
        if (!shared_index)
                return seccomp_rule_add_array(ctx, act, nr, (unsigned)n, n ? cmp : NULL);
        for (i = 0; i < n; i++) {
                int r = seccomp_rule_add_array(ctx, act, nr, 1, &cmp[i]);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The filter runc 1.1 builds for profile; NULL on an error (printed). */
static scmp_filter_ctx build(json_t *profile, int optimize) {
        uint32_t def, act;
        scmp_filter_ctx ctx;
        json_t *v, *s, *n;
        size_t i, j;

        if (action(profile, "defaultAction", "defaultErrnoRet", &def) < 0) {
                fprintf(stderr, "bench-seccomp: bad defaultAction\n");
                return NULL;
        }
        ctx = seccomp_init(def);
        if (!ctx)
                return NULL;
        json_array_foreach(json_object_get(profile, "architectures"), i, v) {
                uint32_t t = arch_token(json_string_value(v));
                int r = t ? seccomp_arch_add(ctx, t) : -EINVAL;

                if (r < 0 && r != -EEXIST) { /* the native one is there already */
                        fprintf(stderr, "bench-seccomp: architecture %s: %s\n",
                                json_string_value(v), strerror(-r));
                        goto fail;
                }
        }
        if (seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) < 0)
                goto fail;
        if (optimize && seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, (uint32_t)optimize) < 0) {
                fprintf(stderr, "bench-seccomp: this libseccomp has no OPTIMIZE attribute\n");
                goto fail;
        }
        json_array_foreach(json_object_get(profile, "syscalls"), i, s) {
                if (action(s, "action", "errnoRet", &act) < 0) {
                        fprintf(stderr, "bench-seccomp: syscalls[%zu]: bad action\n", i);
                        goto fail;
                }
                if (act == def)
                        continue; /* runc skips these */
                json_array_foreach(json_object_get(s, "names"), j, n) {
                        int r = add_name(ctx, json_string_value(n), act,
                                         json_object_get(s, "args"));
                        if (r < 0) {
                                fprintf(stderr, "bench-seccomp: %s: %s\n", json_string_value(n),
                                        strerror(-r));
                                goto fail;
                        }
                }
        }
        return ctx;
fail:
        seccomp_release(ctx);
        return NULL;
}

static int compile(const char *file, int rounds, int optimize) {
        double add[MAX_ROUNDS], export[MAX_ROUNDS];
        json_error_t jerr;
        json_t *doc = json_load_file(file, 0, &jerr), *profile;
        long insns = -1;
        int rc = 1;

        if (!doc) {
                fprintf(stderr, "bench-seccomp: %s: %s\n", file, jerr.text);
                return 1;
        }
        /* A whole config.json or the linux.seccomp object alone. */
        profile = json_object_get(json_object_get(doc, "linux"), "seccomp");
        if (!profile)
                profile = doc;
        for (int i = 0; i < rounds; i++) {
                double t0 = cpu_ms(), t1, t2;
                scmp_filter_ctx ctx = build(profile, optimize);
                char path[] = "/tmp/bench-seccomp.XXXXXX";
                int fd;
                struct stat st;

                if (!ctx)
                        goto out;
                t1 = cpu_ms();
                fd = mkstemp(path);
                if (fd < 0 || seccomp_export_bpf(ctx, fd) < 0 || fstat(fd, &st) < 0) {
                        fprintf(stderr, "bench-seccomp: export failed\n");
                        if (fd >= 0) {
                                (void)unlink(path);
                                close(fd);
                        }
                        seccomp_release(ctx);
                        goto out;
                }
                t2 = cpu_ms();
                insns = (long)st.st_size / 8; /* sizeof(struct sock_filter) */
                (void)unlink(path);
                close(fd);
                seccomp_release(ctx);
                add[i] = t1 - t0;
                export[i] = t2 - t1;
        }
        qsort(add, (size_t)rounds, sizeof(double), cmp_double);
        qsort(export, (size_t)rounds, sizeof(double), cmp_double);
        printf("{\"file\": \"%s\", \"optimize\": %d, \"rounds\": %d, \"rule_add_ms\": %.3f, "
               "\"export_ms\": %.3f, \"bpf_instructions\": %ld}\n",
               file, optimize, rounds, add[rounds / 2], export[rounds / 2], insns);
        rc = 0;
out:
        json_decref(doc);
        return rc;
}

static int pfc(const char *file) {
        json_error_t jerr;
        json_t *doc = json_load_file(file, 0, &jerr), *profile;
        scmp_filter_ctx ctx;
        int r;

        if (!doc) {
                fprintf(stderr, "bench-seccomp: %s: %s\n", file, jerr.text);
                return 1;
        }
        profile = json_object_get(json_object_get(doc, "linux"), "seccomp");
        ctx = build(profile ? profile : doc, 0);
        json_decref(doc);
        if (!ctx)
                return 1;
        fflush(stdout);
        r = seccomp_export_pfc(ctx, STDOUT_FILENO);
        seccomp_release(ctx);
        return r < 0 ? 1 : 0;
}

int main(int argc, char **argv) {
        if (argc == 2 && strcmp(argv[1], "profile") == 0)
                return print_profile();
        if (argc >= 3 && argc <= 5 && strcmp(argv[1], "compile") == 0) {
                int rounds = argc > 3 ? atoi(argv[3]) : 20;
                int optimize = argc > 4 ? atoi(argv[4]) : 0;

                if (rounds < 1 || rounds > MAX_ROUNDS) {
                        fprintf(stderr, "bench-seccomp: ROUNDS is 1..%d\n", MAX_ROUNDS);
                        return 2;
                }
                return compile(argv[2], rounds, optimize);
        }
        if (argc == 3 && strcmp(argv[1], "pfc") == 0)
                return pfc(argv[2]);
        fprintf(stderr, "usage: bench-seccomp profile | compile FILE [ROUNDS [OPTIMIZE]] | pfc "
                        "FILE\n");
        return 2;
}
