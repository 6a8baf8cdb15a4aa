/* Kubernetes' SetDefaults_* for the fields nanolet honours, applied after
 * decoding so that validation and the runtime see the same values the API
 * server would have stored. Seccomp is deliberately not defaulted here:
 * the runtime applies RuntimeDefault (docs/internals/runtime.md), and a
 * manifest's canonical form must not change with that policy. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pod-internal.h"
#include "string-util.h"

#define DEFAULT_MODE 0644

/* Kubernetes' parsers.ParseImageName: the tag is what follows the last ':'
 * after the last '/'; no tag and no digest means "latest". */
PullPolicy pull_policy_for_image(const char *image) {
        if (!image)
                return PULL_POLICY_IF_NOT_PRESENT;
        const char *at = strchr(image, '@');
        size_t len = at ? (size_t)(at - image) : strlen(image);
        const char *slash = memrchr(image, '/', len);
        const char *name = slash ? slash + 1 : image;
        const char *colon = memchr(name, ':', len - (size_t)(name - image));
        if (!colon)
                return at ? PULL_POLICY_IF_NOT_PRESENT : PULL_POLICY_ALWAYS;
        size_t tl = len - (size_t)(colon + 1 - image);
        return tl == 6 && strneq(colon + 1, "latest", 6) ? PULL_POLICY_ALWAYS
                                                         : PULL_POLICY_IF_NOT_PRESENT;
}

static int strdup_default(char **s, const char *v) {
        if (*s)
                return 0;
        *s = strdup(v);
        return *s ? 0 : -ENOMEM;
}

static void mode_default(OptionalInt *m) {
        if (!m->set)
                *m = (OptionalInt){ .value = DEFAULT_MODE, .set = true };
}

static int handler_defaults(Handler *h) {
        if (!h || !h->http_get)
                return 0;
        if (h->http_get->scheme < 0)
                h->http_get->scheme = URI_SCHEME_HTTP;
        return strdup_default(&h->http_get->path, "/");
}

static int probe_defaults(Probe *p) {
        if (!p)
                return 0;
        /* int32 fields in Kubernetes: 0 means "not set" there as well */
        if (p->timeout_seconds == 0)
                p->timeout_seconds = 1;
        if (p->period_seconds == 0)
                p->period_seconds = 10;
        if (p->success_threshold == 0)
                p->success_threshold = 1;
        if (p->failure_threshold == 0)
                p->failure_threshold = 3;
        return handler_defaults(&p->handler);
}

static void divisor_default(ResourceFieldSelector *r) {
        if (r && !r->divisor.set)
                r->divisor =
                        (OptionalQuantity){ .value = { .value = 1, .milli = 1000 }, .set = true };
}

static int container_defaults(const PodSpec *spec, Container *c) {
        int r;

        if (c->image_pull_policy < 0)
                c->image_pull_policy = pull_policy_for_image(c->image);
        r = strdup_default(&c->termination_message_path, "/dev/termination-log");
        if (r < 0)
                return r;
        if (c->termination_message_policy < 0)
                c->termination_message_policy = TERMINATION_MESSAGE_FILE;

        for (size_t i = 0; i < c->n_ports; i++) {
                ContainerPort *p = &c->ports[i];
                if (p->protocol < 0)
                        p->protocol = PROTOCOL_TCP;
                /* hostNetwork: the container listens on the host directly */
                if (spec->host_network && p->host_port == 0)
                        p->host_port = p->container_port;
        }
        for (size_t i = 0; i < c->n_volume_mounts; i++)
                if (c->volume_mounts[i].mount_propagation < 0)
                        c->volume_mounts[i].mount_propagation = MOUNT_PROPAGATION_NONE;
        for (size_t i = 0; i < c->n_env; i++) {
                EnvVarSource *s = c->env[i].value_from;
                if (s && s->field_ref && (r = strdup_default(&s->field_ref->api_version, "v1")) < 0)
                        return r;
                if (s)
                        divisor_default(s->resource_field_ref);
        }

        Probe *probes[] = { c->liveness_probe, c->readiness_probe, c->startup_probe };
        for (size_t i = 0; i < ELEMENTSOF(probes); i++)
                if ((r = probe_defaults(probes[i])) < 0)
                        return r;
        if (c->lifecycle) {
                if ((r = handler_defaults(c->lifecycle->post_start)) < 0 ||
                    (r = handler_defaults(c->lifecycle->pre_stop)) < 0)
                        return r;
        }
        return 0;
}

static int downward_defaults(DownwardAPIVolumeSource *d) {
        for (size_t i = 0; i < d->n_items; i++) {
                DownwardAPIVolumeFile *f = &d->items[i];
                int r;
                if (f->field_ref && (r = strdup_default(&f->field_ref->api_version, "v1")) < 0)
                        return r;
                divisor_default(f->resource_field_ref);
        }
        return 0;
}

static int volume_defaults(Volume *v) {
        int r;
        switch (v->type) {
        case VOLUME_HOST_PATH:
                if (v->host_path.type < 0)
                        v->host_path.type = HOST_PATH_UNSET;
                break;
        case VOLUME_EMPTY_DIR:
                if (v->empty_dir.medium < 0)
                        v->empty_dir.medium = STORAGE_MEDIUM_DEFAULT;
                break;
        case VOLUME_CONFIG_MAP:
        case VOLUME_SECRET:
                mode_default(&v->config_map.default_mode);
                break;
        case VOLUME_DOWNWARD_API:
                mode_default(&v->downward_api.default_mode);
                return downward_defaults(&v->downward_api);
        case VOLUME_PROJECTED:
                mode_default(&v->projected.default_mode);
                for (size_t i = 0; i < v->projected.n_sources; i++)
                        if (v->projected.sources[i].downward_api &&
                            (r = downward_defaults(v->projected.sources[i].downward_api)) < 0)
                                return r;
                break;
        case VOLUME_IMAGE:
                if (v->image.pull_policy < 0)
                        v->image.pull_policy = pull_policy_for_image(v->image.reference);
                break;
        case _VOLUME_TYPE_INVALID:
        case _VOLUME_TYPE_MAX:
        default:
                break;
        }
        return 0;
}

int pod_set_defaults(Pod *p) {
        PodSpec *s = &p->spec;
        int r;

        r = strdup_default(&p->metadata.namespace, "default");
        if (r < 0)
                return r;
        if (s->restart_policy < 0)
                s->restart_policy = RESTART_POLICY_ALWAYS;
        if (!s->termination_grace_period_seconds.set)
                s->termination_grace_period_seconds = (OptionalInt){ .value = 30, .set = true };
        if (s->dns_policy < 0)
                s->dns_policy = DNS_POLICY_CLUSTER_FIRST;
        if (!s->enable_service_links.set)
                s->enable_service_links = (OptionalBool){ .value = true, .set = true };
        /* The Priority admission plugin resolves the two built-in classes;
         * without an apiserver nanolet does it, so kubeadm's control-plane
         * pods get the priority (OOM score, eviction order) they expect. */
        if (!s->priority.set && s->priority_class_name) {
                if (streq(s->priority_class_name, "system-node-critical"))
                        s->priority = (OptionalInt){ PRIORITY_SYSTEM_NODE_CRITICAL, true };
                else if (streq(s->priority_class_name, "system-cluster-critical"))
                        s->priority = (OptionalInt){ PRIORITY_SYSTEM_CLUSTER_CRITICAL, true };
        }

        for (size_t i = 0; i < s->n_init_containers; i++)
                if ((r = container_defaults(s, &s->init_containers[i])) < 0)
                        return r;
        for (size_t i = 0; i < s->n_containers; i++)
                if ((r = container_defaults(s, &s->containers[i])) < 0)
                        return r;
        for (size_t i = 0; i < s->n_volumes; i++)
                if ((r = volume_defaults(&s->volumes[i])) < 0)
                        return r;
        return 0;
}
