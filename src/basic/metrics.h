/* Prometheus metrics (docs/api.md): counters, gauges and histograms with
 * labels, kept in memory and written in the text exposition format 0.0.4,
 * which `promtool check metrics` accepts.
 *
 * A registry (Metrics) holds families; a family has a fixed list of label
 * names and one series per distinct list of label values, made on first use.
 * Every update takes a NULL family and does nothing, so a module can count
 * without knowing whether anybody scrapes (unit tests pass no registry).
 * Updates never fail loudly: a series that cannot be allocated is not
 * counted (a metric must not take down what it measures).
 *
 * Gauges that describe the present (running pods, open fds) are computed
 * when scraped, by collectors the registry calls before it formats. */
#pragma once

#include <stddef.h>

#include "cleanup.h"
#include "time-util.h"

typedef enum MetricType {
        METRIC_COUNTER,
        METRIC_GAUGE,
        METRIC_HISTOGRAM,
} MetricType;

typedef struct Metrics Metrics;
typedef struct MetricFamily MetricFamily;

int metrics_new(Metrics **ret);
Metrics *metrics_free(Metrics *m);
DEFINE_TRIVIAL_CLEANUP_FUNC(Metrics *, metrics_free)

/* Registers a family. label_names is NULL-terminated (NULL: no labels);
 * bounds are a histogram's ascending bucket upper bounds (+Inf is implied).
 * The name, labels and help are copied. A name registered twice with the
 * same type and labels returns the first family (two modules may share
 * one); otherwise -EEXIST. m NULL: *ret = NULL and 0. */
int metrics_register(Metrics *m, MetricFamily **ret, MetricType type, const char *name,
                     const char *help, const char *const *label_names, const double *bounds,
                     size_t n_bounds);

/* Label values, one per label name, in order: METRIC_LABELS("a", "b"). */
#define METRIC_LABELS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* Counter (delta ≥ 0) or gauge: adds delta. */
void metric_add(MetricFamily *f, const char *const *label_values, double delta);
static inline void metric_inc(MetricFamily *f, const char *const *label_values) {
        metric_add(f, label_values, 1);
}
/* Gauge: sets the value. Counter: mirrors a count kept elsewhere (a
 * collector's), which must never go down. */
void metric_set(MetricFamily *f, const char *const *label_values, double value);
/* Gauge or counter: sets the value read at timestamp (CLOCK_REALTIME),
 * which is written after it as the sample's time, as kubelet does for
 * figures it reads from cgroups. */
void metric_set_at(MetricFamily *f, const char *const *label_values, double value,
                   usec_t timestamp);
/* Histogram: counts one observation. */
void metric_observe(MetricFamily *f, const char *const *label_values, double value);
/* Drops every series whose label label_name has the value value (the
 * series of a pod that is gone). */
void metric_remove_where(MetricFamily *f, const char *label_name, const char *value);
/* Drops every series (a gauge a collector rebuilds on each scrape). */
void metric_clear(MetricFamily *f);

/* Called by metrics_format() before it writes anything; a negative errno
 * fails the scrape. */
typedef int (*metrics_collect_t)(Metrics *m, void *userdata);
int metrics_add_collector(Metrics *m, metrics_collect_t collect, void *userdata);

/* The process_* metrics the Prometheus Go client exposes (CPU seconds,
 * resident and virtual memory, open and maximum fds, start time), read from
 * /proc/self when scraped. */
int metrics_add_process_collector(Metrics *m);

/* Runs the collectors and writes every family with at least one series (a
 * family without labels always has its one series), in registration
 * order. *ret is malloc'd and NUL-terminated. 0 or a negative errno. */
int metrics_format(Metrics *m, char **ret, size_t *ret_size);

/* Bucket bounds kubelet uses, for metrics_register(). */
extern const double metrics_buckets_default[11];   /* Prometheus' DefBuckets: 5 ms … 10 s */
extern const double metrics_buckets_operation[14]; /* 5 ms ×2.5 …: runtime operations */
extern const double metrics_buckets_pod_start[25]; /* 0.5 s … 1 h: pod start */
