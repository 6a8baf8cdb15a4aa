/* Replays fuzz inputs without libFuzzer: runs LLVMFuzzerTestOneInput on every
 * file given on the command line, and on every regular file of every
 * directory given. Used as a regression test in normal (and sanitizer)
 * builds, so a corpus entry that once crashed keeps being checked. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(const char *path, unsigned *count) {
        FILE *f = fopen(path, "rbe");
        uint8_t *buf = NULL;
        size_t size = 0, cap = 0;

        if (!f) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                return -errno;
        }
        for (;;) {
                if (cap - size < 65536) {
                        uint8_t *t = realloc(buf, cap + 65536);
                        if (!t) {
                                free(buf);
                                fclose(f);
                                return -ENOMEM;
                        }
                        buf = t;
                        cap += 65536;
                }
                size_t k = fread(buf + size, 1, cap - size, f);
                size += k;
                if (k == 0)
                        break;
        }
        if (ferror(f)) {
                fprintf(stderr, "%s: read error\n", path);
                free(buf);
                fclose(f);
                return -EIO;
        }
        fclose(f);

        /* Exactly size bytes: no terminating NUL, as libFuzzer passes them. */
        uint8_t *exact = malloc(size ? size : 1);
        if (!exact) {
                free(buf);
                return -ENOMEM;
        }
        memcpy(exact, buf, size);
        free(buf);
        (void)LLVMFuzzerTestOneInput(exact, size);
        free(exact);
        (*count)++;
        return 0;
}

static int filter(const struct dirent *de) {
        return de->d_name[0] != '.';
}

static int run_path(const char *path, unsigned *count) {
        struct stat st;
        struct dirent **list;
        int n, r = 0;

        if (stat(path, &st) < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                return -errno;
        }
        if (!S_ISDIR(st.st_mode))
                return run_file(path, count);

        n = scandir(path, &list, filter, alphasort);
        if (n < 0) {
                fprintf(stderr, "%s: %s\n", path, strerror(errno));
                return -errno;
        }
        for (int i = 0; i < n; i++) {
                char *p;
                if (asprintf(&p, "%s/%s", path, list[i]->d_name) < 0)
                        r = -ENOMEM;
                else {
                        if (stat(p, &st) == 0 && S_ISREG(st.st_mode)) {
                                int k = run_file(p, count);
                                if (k < 0)
                                        r = k;
                        }
                        free(p);
                }
                free(list[i]);
        }
        free(list);
        return r;
}

int main(int argc, char *argv[]) {
        unsigned count = 0;
        int r = 0;

        if (argc < 2) {
                fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
                return 2;
        }
        for (int i = 1; i < argc; i++)
                if (run_path(argv[i], &count) < 0)
                        r = 1;
        printf("replayed %u input(s)\n", count);
        if (count == 0) {
                fprintf(stderr, "no inputs found\n");
                return 1;
        }
        return r;
}
