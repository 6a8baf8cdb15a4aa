/* The registry behind /metrics. Series are found by a linear search: a
 * static-pod node has tens of pods, and the busiest family (probe results)
 * is updated a few times a second at most. */
#include "metrics.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "fileio.h"
#include "string-util.h"
#include "strv.h"

const double metrics_buckets_default[11] = { .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10 };
/* ExponentialBuckets(.005, 2.5, 14), as kubelet_runtime_operations_duration_seconds. */
const double metrics_buckets_operation[14] = {
        0.005,
        0.0125,
        0.03125,
        0.078125,
        0.1953125,
        0.48828125,
        1.220703125,
        3.0517578125,
        7.62939453125,
        19.073486328125,
        47.6837158203125,
        119.20928955078125,
        298.0232238769531,
        745.0580596923828,
};
const double metrics_buckets_pod_start[25] = { 0.5, 1,   2,   3,    4,    5,    6,   8,   10,
                                               20,  30,  45,  60,   120,  180,  240, 300, 360,
                                               480, 600, 900, 1200, 1800, 2700, 3600 };

typedef struct MetricSeries {
        char **values; /* one per label name */
        double value;  /* counter, gauge; histogram: the sum */
        uint64_t count;
        uint64_t *buckets; /* histogram: per bound, not cumulative */
        usec_t timestamp;  /* CLOCK_REALTIME of the value; 0: none written */
} MetricSeries;

struct MetricFamily {
        MetricType type;
        char *name;
        char *help;
        char **label_names;
        size_t n_labels;
        double *bounds;
        size_t n_bounds;
        MetricSeries **series;
        size_t n_series;
};

typedef struct MetricsCollector {
        metrics_collect_t collect;
        void *userdata;
} MetricsCollector;

struct Metrics {
        MetricFamily **families;
        size_t n_families;
        MetricsCollector *collectors;
        size_t n_collectors;
        void *process; /* metrics_add_process_collector()'s state */
};

int metrics_new(Metrics **ret) {
        Metrics *m = calloc(1, sizeof *m);
        if (!m)
                return -ENOMEM;
        *ret = m;
        return 0;
}

static MetricSeries *series_free(MetricSeries *s) {
        if (!s)
                return NULL;
        strv_free(s->values);
        free(s->buckets);
        free(s);
        return NULL;
}

static MetricFamily *family_free(MetricFamily *f) {
        if (!f)
                return NULL;
        metric_clear(f);
        free(f->series);
        free(f->name);
        free(f->help);
        strv_free(f->label_names);
        free(f->bounds);
        free(f);
        return NULL;
}
DEFINE_TRIVIAL_CLEANUP_FUNC(MetricFamily *, family_free)

Metrics *metrics_free(Metrics *m) {
        if (!m)
                return NULL;
        for (size_t i = 0; i < m->n_families; i++)
                family_free(m->families[i]);
        free(m->families);
        free(m->collectors);
        free(m->process);
        free(m);
        return NULL;
}

static bool same_labels(const MetricFamily *f, const char *const *label_names) {
        size_t n = 0;
        for (const char *const *l = label_names; l && *l; l++, n++)
                if (n >= f->n_labels || !streq(f->label_names[n], *l))
                        return false;
        return n == f->n_labels;
}

int metrics_register(Metrics *m, MetricFamily **ret, MetricType type, const char *name,
                     const char *help, const char *const *label_names, const double *bounds,
                     size_t n_bounds) {
        if (!m) {
                *ret = NULL;
                return 0;
        }
        for (size_t i = 0; i < m->n_families; i++) {
                MetricFamily *f = m->families[i];
                if (!streq(f->name, name))
                        continue;
                if (f->type != type || !same_labels(f, label_names))
                        return -EEXIST;
                *ret = f;
                return 0;
        }

        _cleanup_(family_freep) MetricFamily *f = calloc(1, sizeof *f);
        if (!f)
                return -ENOMEM;
        f->type = type;
        f->name = strdup(name);
        f->help = strdup(help);
        if (!f->name || !f->help)
                return -ENOMEM;
        for (const char *const *l = label_names; l && *l; l++) {
                if (strv_extend(&f->label_names, *l) < 0)
                        return -ENOMEM;
                f->n_labels++;
        }
        if (type == METRIC_HISTOGRAM && n_bounds > 0) {
                f->bounds = malloc(sizeof(double) * n_bounds);
                if (!f->bounds)
                        return -ENOMEM;
                memcpy(f->bounds, bounds, sizeof(double) * n_bounds);
                f->n_bounds = n_bounds;
        }
        MetricFamily **n = realloc(m->families, sizeof(MetricFamily *) * (m->n_families + 1));
        if (!n)
                return -ENOMEM;
        m->families = n;
        m->families[m->n_families++] = f;
        *ret = TAKE_PTR(f);
        return 0;
}

static bool series_matches(const MetricFamily *f, const MetricSeries *s,
                           const char *const *label_values) {
        for (size_t i = 0; i < f->n_labels; i++)
                if (!streq(s->values[i], label_values && label_values[i] ? label_values[i] : ""))
                        return false;
        return true;
}

/* The series for these values, made when missing; NULL on ENOMEM. */
static MetricSeries *family_series(MetricFamily *f, const char *const *label_values) {
        for (size_t i = 0; i < f->n_series; i++)
                if (series_matches(f, f->series[i], label_values))
                        return f->series[i];

        MetricSeries *s = calloc(1, sizeof *s);
        if (!s)
                return NULL;
        s->values = calloc(f->n_labels + 1, sizeof(char *));
        if (!s->values)
                return series_free(s);
        bool more = label_values != NULL;
        for (size_t i = 0; i < f->n_labels; i++) {
                const char *v = more && label_values[i] ? label_values[i] : "";
                more = more && label_values[i];
                s->values[i] = strdup(v);
                if (!s->values[i])
                        return series_free(s);
        }
        if (f->n_bounds > 0) {
                s->buckets = calloc(f->n_bounds, sizeof(uint64_t));
                if (!s->buckets)
                        return series_free(s);
        }
        MetricSeries **n = realloc(f->series, sizeof(MetricSeries *) * (f->n_series + 1));
        if (!n)
                return series_free(s);
        f->series = n;
        f->series[f->n_series++] = s;
        return s;
}

void metric_add(MetricFamily *f, const char *const *label_values, double delta) {
        if (!f || f->type == METRIC_HISTOGRAM || (f->type == METRIC_COUNTER && !(delta >= 0)))
                return;
        MetricSeries *s = family_series(f, label_values);
        if (s)
                s->value += delta;
}

void metric_set(MetricFamily *f, const char *const *label_values, double value) {
        if (!f || f->type == METRIC_HISTOGRAM)
                return;
        MetricSeries *s = family_series(f, label_values);
        if (s) {
                s->value = value;
                s->timestamp = 0;
        }
}

void metric_set_at(MetricFamily *f, const char *const *label_values, double value,
                   usec_t timestamp) {
        if (!f || f->type == METRIC_HISTOGRAM)
                return;
        MetricSeries *s = family_series(f, label_values);
        if (s) {
                s->value = value;
                s->timestamp = timestamp;
        }
}

void metric_observe(MetricFamily *f, const char *const *label_values, double value) {
        if (!f || f->type != METRIC_HISTOGRAM || isnan(value))
                return;
        MetricSeries *s = family_series(f, label_values);
        if (!s)
                return;
        s->value += value;
        s->count++;
        for (size_t i = 0; i < f->n_bounds; i++)
                if (value <= f->bounds[i]) {
                        s->buckets[i]++;
                        break;
                }
}

void metric_remove_where(MetricFamily *f, const char *label_name, const char *value) {
        if (!f)
                return;
        size_t label = 0;
        while (label < f->n_labels && !streq(f->label_names[label], label_name))
                label++;
        if (label == f->n_labels)
                return;
        size_t kept = 0;
        for (size_t i = 0; i < f->n_series; i++) {
                if (streq(f->series[i]->values[label], value))
                        series_free(f->series[i]);
                else
                        f->series[kept++] = f->series[i];
        }
        f->n_series = kept;
}

void metric_clear(MetricFamily *f) {
        if (!f)
                return;
        for (size_t i = 0; i < f->n_series; i++)
                series_free(f->series[i]);
        f->n_series = 0;
}

int metrics_add_collector(Metrics *m, metrics_collect_t collect, void *userdata) {
        MetricsCollector *n =
                realloc(m->collectors, sizeof(MetricsCollector) * (m->n_collectors + 1));
        if (!n)
                return -ENOMEM;
        m->collectors = n;
        m->collectors[m->n_collectors++] = (MetricsCollector){ collect, userdata };
        return 0;
}

/* ---- the text format ---- */

typedef struct Out {
        char *buf;
        size_t len, cap;
        bool failed;
} Out;

static void out_add(Out *o, const char *s, size_t n) {
        if (!o->failed && strbuf_append(&o->buf, &o->len, &o->cap, s, n) < 0)
                o->failed = true;
}

static void out_str(Out *o, const char *s) {
        out_add(o, s, strlen(s));
}

/* HELP escapes \ and newline; label values also ". Bytes that are not
 * UTF-8 become U+FFFD: Prometheus rejects a whole scrape over one label
 * value that is not valid UTF-8, and label values come from manifests. */
static void out_escaped(Out *o, const char *s, bool quote) {
        const char *end = s + strlen(s);
        while (s < end) {
                size_t n = utf8_sequence_length(s, (size_t)(end - s));
                if (n == 0) {
                        out_str(o, "\xef\xbf\xbd");
                        s++;
                        continue;
                }
                if (*s == '\\')
                        out_str(o, "\\\\");
                else if (*s == '\n')
                        out_str(o, "\\n");
                else if (quote && *s == '"')
                        out_str(o, "\\\"");
                else
                        out_add(o, s, n);
                s += n;
        }
}

/* Go's strconv.FormatFloat(v, 'g', -1, 64), which Prometheus' own clients
 * use: the fewest digits that read back the same (0.1, not
 * 0.10000000000000001), in exponent form below 1e-4 and from 1e6 on, as
 * Go decides for the shortest form (so 3600, but 1e+06). */
static void format_shortest(char *b, size_t size, double v) {
        int digits = 17;

        if (isinf(v)) {
                snprintf(b, size, "%s", v > 0 ? "+Inf" : "-Inf");
                return;
        }
        if (isnan(v)) {
                snprintf(b, size, "NaN");
                return;
        }
        for (int p = 1; p <= 17; p++) {
                snprintf(b, size, "%.*e", p - 1, v);
                if (strtod(b, NULL) == v) {
                        digits = p;
                        break;
                }
        }
        snprintf(b, size, "%.*e", digits - 1, v);
        int exponent = v == 0 ? 0 : atoi(strchr(b, 'e') + 1);
        if (exponent < -4 || exponent >= 6)
                return; /* already "1.5e+06", as Go writes it */
        int decimals = digits - 1 - exponent;
        snprintf(b, size, "%.*f", decimals > 0 ? decimals : 0, v);
}

static void out_double(Out *o, double v) {
        char b[40];
        format_shortest(b, sizeof b, v);
        out_str(o, b);
}

static void out_u64(Out *o, uint64_t v) {
        char b[24];
        snprintf(b, sizeof b, "%llu", (unsigned long long)v);
        out_str(o, b);
}

/* name{l1="v1",...,extra="value"} */
static void out_series_name(Out *o, const MetricFamily *f, const MetricSeries *s,
                            const char *suffix, const char *extra, const char *extra_value) {
        out_str(o, f->name);
        out_str(o, suffix);
        if (f->n_labels == 0 && !extra)
                return;
        out_str(o, "{");
        for (size_t i = 0; i < f->n_labels; i++) {
                if (i > 0)
                        out_str(o, ",");
                out_str(o, f->label_names[i]);
                out_str(o, "=\"");
                out_escaped(o, s->values[i], true);
                out_str(o, "\"");
        }
        if (extra) {
                if (f->n_labels > 0)
                        out_str(o, ",");
                out_str(o, extra);
                out_str(o, "=\"");
                out_str(o, extra_value);
                out_str(o, "\"");
        }
        out_str(o, "}");
}

static void out_family(Out *o, MetricFamily *f) {
        static const char *const type_names[] = {
                [METRIC_COUNTER] = "counter",
                [METRIC_GAUGE] = "gauge",
                [METRIC_HISTOGRAM] = "histogram",
        };

        /* A family without labels has one series whether or not anything
         * was counted: a counter that never moved reads 0. */
        if (f->n_labels == 0 && f->n_series == 0)
                (void)family_series(f, NULL);
        if (f->n_series == 0)
                return;
        out_str(o, "# HELP ");
        out_str(o, f->name);
        out_str(o, " ");
        out_escaped(o, f->help, false);
        out_str(o, "\n# TYPE ");
        out_str(o, f->name);
        out_str(o, " ");
        out_str(o, type_names[f->type]);
        out_str(o, "\n");
        for (size_t i = 0; i < f->n_series; i++) {
                const MetricSeries *s = f->series[i];
                if (f->type != METRIC_HISTOGRAM) {
                        out_series_name(o, f, s, "", NULL, NULL);
                        out_str(o, " ");
                        out_double(o, s->value);
                        if (s->timestamp > 0) {
                                out_str(o, " ");
                                out_u64(o, s->timestamp / USEC_PER_MSEC);
                        }
                        out_str(o, "\n");
                        continue;
                }
                uint64_t cumulative = 0;
                for (size_t b = 0; b < f->n_bounds; b++) {
                        char le[40];
                        cumulative += s->buckets[b];
                        format_shortest(le, sizeof le, f->bounds[b]);
                        out_series_name(o, f, s, "_bucket", "le", le);
                        out_str(o, " ");
                        out_u64(o, cumulative);
                        out_str(o, "\n");
                }
                out_series_name(o, f, s, "_bucket", "le", "+Inf");
                out_str(o, " ");
                out_u64(o, s->count);
                out_str(o, "\n");
                out_series_name(o, f, s, "_sum", NULL, NULL);
                out_str(o, " ");
                out_double(o, s->value);
                out_str(o, "\n");
                out_series_name(o, f, s, "_count", NULL, NULL);
                out_str(o, " ");
                out_u64(o, s->count);
                out_str(o, "\n");
        }
}

int metrics_format(Metrics *m, char **ret, size_t *ret_size) {
        Out o = {};
        int r;

        for (size_t i = 0; i < m->n_collectors; i++) {
                r = m->collectors[i].collect(m, m->collectors[i].userdata);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < m->n_families; i++)
                out_family(&o, m->families[i]);
        if (!o.failed && !o.buf)
                out_add(&o, "", 0);
        if (o.failed || !o.buf) {
                free(o.buf);
                return -ENOMEM;
        }
        *ret = o.buf;
        if (ret_size)
                *ret_size = o.len;
        return 0;
}

/* ---- process_* ---- */

typedef struct ProcessMetrics {
        MetricFamily *cpu, *resident, *virtual, *open_fds, *max_fds, *start_time;
} ProcessMetrics;

static unsigned count_fds(void) {
        _cleanup_closedir_ DIR *d = opendir("/proc/self/fd");
        unsigned n = 0;
        if (!d)
                return 0;
        for (struct dirent *de; (de = readdir(d));)
                if (de->d_name[0] != '.')
                        n++;
        return n > 0 ? n - 1 : 0; /* opendir's own fd */
}

static int collect_process(Metrics *m, void *userdata) {
        ProcessMetrics *p = userdata;
        _cleanup_free_ char *stat = NULL, *pstat = NULL;
        struct rlimit rl;

        metric_set(p->open_fds, NULL, count_fds());
        if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
                metric_set(p->max_fds, NULL,
                           rl.rlim_cur == RLIM_INFINITY ? INFINITY : (double)rl.rlim_cur);

        if (read_full_file_at(AT_FDCWD, "/proc/self/stat", 4096, &stat, NULL) < 0)
                return 0;
        /* The command name may hold spaces and parentheses: fields start
         * after the last ")". Field 14 is utime, 22 starttime, 23 vsize,
         * 24 rss (numbered from 1, pid first). */
        const char *p2 = strrchr(stat, ')');
        if (!p2)
                return 0;
        unsigned long long utime, stime, starttime, vsize;
        long long rss;
        if (sscanf(p2 + 2,
                   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d "
                   "%*d %llu %llu %lld",
                   &utime, &stime, &starttime, &vsize, &rss) != 5)
                return 0;
        double ticks = (double)sysconf(_SC_CLK_TCK);
        long page = sysconf(_SC_PAGESIZE);
        metric_set(p->cpu, NULL, (double)(utime + stime) / ticks);
        metric_set(p->resident, NULL, (double)rss * (double)page);
        metric_set(p->virtual, NULL, (double)vsize);

        if (read_full_file_at(AT_FDCWD, "/proc/stat", 1 << 20, &pstat, NULL) < 0)
                return 0;
        const char *btime = strstr(pstat, "\nbtime ");
        if (btime)
                metric_set(p->start_time, NULL,
                           (double)strtoull(btime + 7, NULL, 10) + (double)starttime / ticks);
        return 0;
}

int metrics_add_process_collector(Metrics *m) {
        ProcessMetrics *p = calloc(1, sizeof *p);
        int r;

        if (!p || m->process)
                return p ? (free(p), -EEXIST) : -ENOMEM;
        if ((r = metrics_register(m, &p->cpu, METRIC_COUNTER, "process_cpu_seconds_total",
                                  "Total user and system CPU time spent in seconds.", NULL, NULL,
                                  0)) < 0 ||
            (r = metrics_register(m, &p->resident, METRIC_GAUGE, "process_resident_memory_bytes",
                                  "Resident memory size in bytes.", NULL, NULL, 0)) < 0 ||
            (r = metrics_register(m, &p->virtual, METRIC_GAUGE, "process_virtual_memory_bytes",
                                  "Virtual memory size in bytes.", NULL, NULL, 0)) < 0 ||
            (r = metrics_register(m, &p->open_fds, METRIC_GAUGE, "process_open_fds",
                                  "Number of open file descriptors.", NULL, NULL, 0)) < 0 ||
            (r = metrics_register(m, &p->max_fds, METRIC_GAUGE, "process_max_fds",
                                  "Maximum number of open file descriptors.", NULL, NULL, 0)) < 0 ||
            (r = metrics_register(m, &p->start_time, METRIC_GAUGE, "process_start_time_seconds",
                                  "Start time of the process since unix epoch in seconds.", NULL,
                                  NULL, 0)) < 0 ||
            (r = metrics_add_collector(m, collect_process, p)) < 0) {
                free(p);
                return r;
        }
        m->process = p;
        return 0;
}
