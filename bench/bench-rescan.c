/* Bench-only: the CPU cost of the manifest directory source's scans over a
 * directory of many manifests, measured in-process around the public entry
 * points (no agent, no containers). Not installed, not a test.
 *
 *   bench-rescan DIR [ROUNDS [all|unchanged|touched]]
 *
 * Prints one JSON object: for the first scan (every file parsed), a rescan
 * with nothing changed (the periodic safety net: readdir + fstatat per file)
 * and a rescan after every file's mtime changed (every file re-read and
 * re-parsed, nothing to commit), the median CPU time and, where the kernel
 * lets us count them, instructions. */
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <syslog.h>

#define MAX_ROUNDS 100

#include "event.h"
#include "log.h"
#include "source.h"

typedef struct Sample {
        double cpu_ms;
        long long instructions; /* -1 when not countable */
} Sample;

static int counter_open(void) {
        struct perf_event_attr attr = {
                .type = PERF_TYPE_HARDWARE,
                .size = sizeof(attr),
                .config = PERF_COUNT_HW_INSTRUCTIONS,
                .disabled = 1,
                .exclude_hv = 1,
        };
        return (int)syscall(SYS_perf_event_open, &attr, 0, -1, -1, 0);
}

static double cpu_ms_now(void) {
        struct timespec ts;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static unsigned long n_events;

static void on_event(const SourceEvent *ev, void *userdata) {
        n_events++;
}

typedef int (*scan_fn)(DirSource *s);

static Sample measure(int counter, scan_fn fn, DirSource *s) {
        Sample out = {.instructions = -1};
        if (counter >= 0) {
                ioctl(counter, PERF_EVENT_IOC_RESET, 0);
                ioctl(counter, PERF_EVENT_IOC_ENABLE, 0);
        }
        double t0 = cpu_ms_now();
        int r = fn(s);
        out.cpu_ms = cpu_ms_now() - t0;
        if (counter >= 0) {
                ioctl(counter, PERF_EVENT_IOC_DISABLE, 0);
                long long v;
                if (read(counter, &v, sizeof(v)) == (ssize_t)sizeof(v))
                        out.instructions = v;
        }
        if (r < 0)
                fprintf(stderr, "scan failed: %s\n", strerror(-r));
        return out;
}

static int cmp_sample(const void *a, const void *b) {
        double x = ((const Sample *)a)->cpu_ms, y = ((const Sample *)b)->cpu_ms;
        return (x > y) - (x < y);
}

static int cmp_ll(const void *a, const void *b) {
        long long x = *(const long long *)a, y = *(const long long *)b;
        return (x > y) - (x < y);
}

static void print_stats(const char *name, Sample *v, int n, bool last) {
        long long ins[MAX_ROUNDS];
        for (int i = 0; i < n; i++)
                ins[i] = v[i].instructions;
        qsort(v, n, sizeof(*v), cmp_sample);
        qsort(ins, n, sizeof(*ins), cmp_ll);
        printf("  \"%s\": {\"runs\": %d, \"cpu_ms_median\": %.3f, \"cpu_ms_min\": %.3f, "
               "\"cpu_ms_max\": %.3f, \"instructions_median\": %lld}%s\n",
               name, n, v[n / 2].cpu_ms, v[0].cpu_ms, v[n - 1].cpu_ms, ins[n / 2], last ? "" : ",");
}

/* Changes every manifest's mtime so the next rescan re-reads them all. */
static void touch_all(const char *dir, long step) {
        DIR *d = opendir(dir);
        if (!d)
                return;
        struct dirent *de;
        struct timespec ts[2] = {{.tv_sec = 1000000000 + step}, {.tv_sec = 1000000000 + step}};
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        (void)utimensat(dirfd(d), de->d_name, ts, 0);
        closedir(d);
}

int main(int argc, char **argv) {
        if (argc < 2) {
                fprintf(stderr, "usage: %s DIR [ROUNDS]\n", argv[0]);
                return 2;
        }
        int rounds = argc > 2 ? atoi(argv[2]) : 10;
        if (rounds < 1 || rounds > MAX_ROUNDS)
                rounds = 10;
        const char *mode = argc > 3 ? argv[3] : "all";
        bool do_unchanged = strcmp(mode, "touched") != 0, do_touched = strcmp(mode, "unchanged") != 0;
        log_set_max_level(LOG_ERR); /* errors only: logging is not what is measured */

        int counter = counter_open();
        Sample first, unchanged[MAX_ROUNDS], changed[MAX_ROUNDS];

        Event *e = NULL;
        PodConfig *pc = NULL;
        DirSource *s = NULL;
        if (event_new(&e) < 0 || pod_config_new(&pc, on_event, NULL) < 0)
                return 1;
        DirSourceOptions o = {
                .path = argv[1],
                .node_name = "bench",
                .check_frequency = 3600 * USEC_PER_SEC,
                .allow_insecure = true,
        };
        if (dir_source_new(&s, e, pc, &o) < 0)
                return 1;
        first = measure(counter, dir_source_start, s);
        unsigned long first_events = n_events;
        for (int i = 0; do_unchanged && i < rounds; i++)
                unchanged[i] = measure(counter, dir_source_rescan, s);
        for (int i = 0; do_touched && i < rounds; i++) {
                touch_all(argv[1], i + 1);
                changed[i] = measure(counter, dir_source_rescan, s);
        }

        printf("{\n  \"pods_added\": %lu,\n  \"events_after_first_scan\": %lu,\n", first_events,
               n_events - first_events);
        print_stats("first_scan", &first, 1, false);
        if (do_unchanged)
                print_stats("rescan_unchanged", unchanged, rounds, !do_touched);
        if (do_touched)
                print_stats("rescan_all_touched", changed, rounds, true);
        printf("}\n");

        dir_source_free(s);
        pod_config_free(pc);
        event_free(e);
        if (counter >= 0)
                close(counter);
        return 0;
}
