/* Node-pressure eviction's decisions (see eviction.h). */
#include "eviction.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cleanup.h"
#include "macro.h"
#include "quantity.h"
#include "string-util.h"

static const char *const signal_names[_EVICTION_SIGNAL_MAX] = {
        [EVICTION_SIGNAL_MEMORY_AVAILABLE] = "memory.available",
        [EVICTION_SIGNAL_NODEFS_AVAILABLE] = "nodefs.available",
        [EVICTION_SIGNAL_NODEFS_INODES_FREE] = "nodefs.inodesFree",
        [EVICTION_SIGNAL_IMAGEFS_AVAILABLE] = "imagefs.available",
        [EVICTION_SIGNAL_IMAGEFS_INODES_FREE] = "imagefs.inodesFree",
        [EVICTION_SIGNAL_PID_AVAILABLE] = "pid.available",
};

const char *eviction_signal_to_string(EvictionSignal s) {
        return s >= 0 && s < _EVICTION_SIGNAL_MAX ? signal_names[s] : NULL;
}

EvictionSignal eviction_signal_from_string(const char *s) {
        for (int i = 0; s && i < _EVICTION_SIGNAL_MAX; i++)
                if (streq(signal_names[i], s))
                        return (EvictionSignal)i;
        return _EVICTION_SIGNAL_INVALID;
}

static const char *const condition_names[_NODE_CONDITION_MAX] = {
        [NODE_CONDITION_MEMORY_PRESSURE] = "MemoryPressure",
        [NODE_CONDITION_DISK_PRESSURE] = "DiskPressure",
        [NODE_CONDITION_PID_PRESSURE] = "PIDPressure",
};

const char *node_condition_to_string(NodeCondition c) {
        return c >= 0 && c < _NODE_CONDITION_MAX ? condition_names[c] : NULL;
}

NodeCondition eviction_signal_condition(EvictionSignal s) {
        switch (s) {
        case EVICTION_SIGNAL_MEMORY_AVAILABLE:
                return NODE_CONDITION_MEMORY_PRESSURE;
        case EVICTION_SIGNAL_NODEFS_AVAILABLE:
        case EVICTION_SIGNAL_NODEFS_INODES_FREE:
        case EVICTION_SIGNAL_IMAGEFS_AVAILABLE:
        case EVICTION_SIGNAL_IMAGEFS_INODES_FREE:
                return NODE_CONDITION_DISK_PRESSURE;
        case EVICTION_SIGNAL_PID_AVAILABLE:
                return NODE_CONDITION_PID_PRESSURE;
        case _EVICTION_SIGNAL_MAX:
        case _EVICTION_SIGNAL_INVALID:
        default:
                return _NODE_CONDITION_INVALID;
        }
}

const char *eviction_signal_resource(EvictionSignal s) {
        switch (s) {
        case EVICTION_SIGNAL_MEMORY_AVAILABLE:
                return "memory";
        case EVICTION_SIGNAL_NODEFS_AVAILABLE:
        case EVICTION_SIGNAL_IMAGEFS_AVAILABLE:
                return "ephemeral-storage";
        case EVICTION_SIGNAL_NODEFS_INODES_FREE:
        case EVICTION_SIGNAL_IMAGEFS_INODES_FREE:
                return "inodes";
        case EVICTION_SIGNAL_PID_AVAILABLE:
                return "pids";
        case _EVICTION_SIGNAL_MAX:
        case _EVICTION_SIGNAL_INVALID:
        default:
                return NULL;
        }
}

void eviction_config_done(EvictionConfig *c) {
        free(c->thresholds);
        *c = (EvictionConfig){};
}

/* 1: a value; 0: "0%"/"100%", which kubelet reads as no threshold. */
static int parse_value(const char *signal, const char *s, EvictionValue *ret, Error *err) {
        size_t len = strlen(s);
        if (len > 0 && s[len - 1] == '%') {
                if (streq(s, "0%") || streq(s, "100%"))
                        return 0;
                char *end;
                double p = strtod(s, &end);
                if (end != s + len - 1 || end == s)
                        return error_set(err, -EINVAL,
                                         "eviction threshold %s: invalid percentage \"%s\"", signal,
                                         s);
                if (p < 0 || p > 100)
                        return error_set(
                                err, -EINVAL,
                                "eviction percentage threshold %s must be within 0%%..100%%: %s",
                                signal, s);
                *ret = (EvictionValue){ .percentage = p / 100 };
                return 1;
        }
        Quantity q;
        if (quantity_parse(s, &q) < 0)
                return error_set(err, -EINVAL, "eviction threshold %s: invalid quantity \"%s\"",
                                 signal, s);
        if (q.value <= 0)
                return error_set(err, -EINVAL, "eviction threshold %s must be positive: %s", signal,
                                 s);
        *ret = (EvictionValue){ .quantity = (uint64_t)q.value };
        return 1;
}

static EvictionThreshold *find(EvictionConfig *c, EvictionSignal s, bool soft) {
        for (size_t i = 0; i < c->n; i++)
                if (c->thresholds[i].signal == s && c->thresholds[i].soft == soft)
                        return &c->thresholds[i];
        return NULL;
}

/* "signal<value" (op '<') or "signal=value" (op '='): splits in place. */
static int split(char *s, char op, char **ret_value, EvictionSignal *ret_signal, Error *err) {
        char *p = strchr(s, op);
        if (!p)
                return error_set(err, -EINVAL, "\"%s\": expected signal%cvalue", s, op);
        *p = 0;
        EvictionSignal sig = eviction_signal_from_string(s);
        if (sig < 0)
                return error_set(err, -EINVAL, "unsupported eviction signal \"%s\"", s);
        *ret_signal = sig;
        *ret_value = p + 1;
        return 0;
}

/* One "signal<value" of the hard (soft false) or soft list. */
static int add_threshold(EvictionConfig *c, const char *entry, bool soft, Error *err) {
        _cleanup_free_ char *copy = strdup(entry);
        char *value;
        EvictionSignal sig;
        EvictionValue v;
        int r;
        if (!copy)
                return -ENOMEM;
        if ((r = split(copy, '<', &value, &sig, err)) < 0 ||
            (r = parse_value(copy, value, &v, err)) <= 0)
                return r;
        EvictionThreshold *t = find(c, sig, soft);
        if (!t) {
                t = reallocarray(c->thresholds, c->n + 1, sizeof *t);
                if (!t)
                        return -ENOMEM;
                c->thresholds = t;
                t = &c->thresholds[c->n++];
        }
        /* A later value for the same signal replaces the earlier one (a flag
         * after the config file's map). */
        *t = (EvictionThreshold){ .signal = sig, .value = v, .soft = soft };
        return 0;
}

/* One "signal=duration" of the soft thresholds' grace periods. */
static int add_grace_period(EvictionConfig *c, const char *entry, Error *err) {
        _cleanup_free_ char *copy = strdup(entry);
        char *value;
        EvictionSignal sig;
        usec_t u;
        int r;
        if (!copy)
                return -ENOMEM;
        if ((r = split(copy, '=', &value, &sig, err)) < 0)
                return r;
        if (go_duration_parse_usec(value, &u) < 0)
                return error_set(err, -EINVAL, "eviction grace period %s: invalid duration \"%s\"",
                                 copy, value);
        EvictionThreshold *t = find(c, sig, true);
        if (!t)
                return error_set(err, -EINVAL,
                                 "eviction grace period for %s without a soft threshold", copy);
        t->grace_period = u;
        return 0;
}

/* One "signal=value": the minimum reclaim of every threshold of the signal. */
static int add_min_reclaim(EvictionConfig *c, const char *entry, Error *err) {
        _cleanup_free_ char *copy = strdup(entry);
        char *value;
        EvictionSignal sig;
        EvictionValue v = {};
        int r;
        if (!copy)
                return -ENOMEM;
        if ((r = split(copy, '=', &value, &sig, err)) < 0 ||
            (r = parse_value(copy, value, &v, err)) < 0)
                return r;
        bool any = false;
        for (size_t i = 0; i < c->n; i++)
                if (c->thresholds[i].signal == sig) {
                        c->thresholds[i].min_reclaim = v;
                        any = true;
                }
        if (!any)
                return error_set(err, -EINVAL,
                                 "eviction minimum reclaim for %s without a threshold", copy);
        return 0;
}

int eviction_config_parse(char *const *hard, char *const *soft, char *const *grace_periods,
                          char *const *min_reclaims, usec_t transition_period, EvictionConfig *ret,
                          Error *err) {
        _cleanup_(eviction_config_done) EvictionConfig c = {
                .pressure_transition_period = transition_period,
        };
        int r;

        for (int pass = 0; pass < 2; pass++)
                for (char *const *l = pass ? soft : hard; l && *l; l++)
                        if ((r = add_threshold(&c, *l, pass, err)) < 0)
                                return r;
        for (char *const *l = grace_periods; l && *l; l++)
                if ((r = add_grace_period(&c, *l, err)) < 0)
                        return r;
        for (char *const *l = min_reclaims; l && *l; l++)
                if ((r = add_min_reclaim(&c, *l, err)) < 0)
                        return r;
        for (size_t i = 0; i < c.n; i++)
                if (c.thresholds[i].soft && c.thresholds[i].grace_period == 0)
                        return error_set(err, -EINVAL,
                                         "soft eviction threshold %s needs a grace period "
                                         "(--eviction-soft-grace-period)",
                                         eviction_signal_to_string(c.thresholds[i].signal));
        *ret = c;
        c = (EvictionConfig){}; /* handed over */
        return 0;
}

uint64_t eviction_value_resolve(const EvictionValue *v, uint64_t capacity) {
        if (v->quantity > 0)
                return v->quantity;
        return (uint64_t)((double)capacity * v->percentage);
}

bool eviction_threshold_met(const EvictionThreshold *t, const EvictionObservation *obs,
                            bool under_pressure) {
        const EvictionObservation *o = &obs[t->signal];
        if (!o->valid)
                return false;
        uint64_t v = eviction_value_resolve(&t->value, o->capacity);
        if (under_pressure)
                v += eviction_value_resolve(&t->min_reclaim, o->capacity);
        return o->available < v;
}

static int cmp_rank(const void *a, const void *b, void *userdata) {
        const EvictionCandidate *base = userdata;
        const EvictionCandidate *x = &base[*(const size_t *)a], *y = &base[*(const size_t *)b];
        bool xe = x->usage > x->requests, ye = y->usage > y->requests;
        if (xe != ye)
                return xe ? -1 : 1;
        if (x->priority != y->priority)
                return x->priority < y->priority ? -1 : 1;
        uint64_t xo = x->usage > x->requests ? x->usage - x->requests : 0;
        uint64_t yo = y->usage > y->requests ? y->usage - y->requests : 0;
        if (xo != yo)
                return xo > yo ? -1 : 1;
        return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static const char *const static_pod_eviction_names[_STATIC_POD_EVICTION_MAX] = {
        [STATIC_POD_EVICTION_NEVER] = "never",
        [STATIC_POD_EVICTION_EVICT_AND_READMIT] = "evict-and-readmit",
};

const char *static_pod_eviction_to_string(StaticPodEviction p) {
        return p >= 0 && p < _STATIC_POD_EVICTION_MAX ? static_pod_eviction_names[p] : NULL;
}

int32_t eviction_pod_priority(const char *priority_class_name, bool has_priority,
                              int64_t priority) {
        if (priority_class_name && streq(priority_class_name, "system-node-critical"))
                return 2000001000;
        if (priority_class_name && streq(priority_class_name, "system-cluster-critical"))
                return 2000000000;
        if (!has_priority || priority > EVICTION_HIGHEST_USER_PRIORITY || priority < INT32_MIN)
                return 0;
        return (int32_t)priority;
}

size_t eviction_rank(const EvictionCandidate *c, size_t n, StaticPodEviction policy, size_t *ret) {
        size_t k = 0;
        if (policy != STATIC_POD_EVICTION_EVICT_AND_READMIT)
                return 0;
        for (size_t i = 0; i < n; i++)
                if (c[i].priority < EVICTION_CRITICAL_PRIORITY)
                        ret[k++] = i;
        qsort_r(ret, k, sizeof *ret, cmp_rank, (void *)c);
        return k;
}

/* As resource.Quantity prints a BinarySI value: the largest binary suffix
 * that divides it. */
static void format_quantity(uint64_t v, char *buf, size_t size) {
        static const char *const suffixes[] = { "", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei" };
        size_t i = 0;
        while (v != 0 && v % 1024 == 0 && i + 1 < ELEMENTSOF(suffixes)) {
                v /= 1024;
                i++;
        }
        snprintf(buf, size, "%" PRIu64 "%s", v, suffixes[i]);
}

/* A count as resource.Quantity prints a DecimalSI value (pids): the
 * largest decimal suffix that divides it, "1k" for 1000. */
static void format_decimal(uint64_t v, char *buf, size_t size) {
        static const char *const suffixes[] = { "", "k", "M", "G", "T", "P", "E" };
        size_t i = 0;
        while (v != 0 && v % 1000 == 0 && i + 1 < ELEMENTSOF(suffixes)) {
                v /= 1000;
                i++;
        }
        snprintf(buf, size, "%" PRIu64 "%s", v, suffixes[i]);
}

char *eviction_message(EvictionSignal s, uint64_t threshold, uint64_t available) {
        char t[32], a[32];
        void (*format)(uint64_t, char *, size_t) =
                s == EVICTION_SIGNAL_PID_AVAILABLE ? format_decimal : format_quantity;
        format(threshold, t, sizeof t);
        format(available, a, sizeof a);
        return strprintf(
                "The node was low on resource: %s. Threshold quantity: %s, available: %s. ",
                strna(eviction_signal_resource(s)), t, a);
}
