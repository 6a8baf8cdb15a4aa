/* PodState: construction from a Pod and teardown. The fields themselves are
 * documented in pod-state.h; the worker owns their updates. */
#include "pod-state.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "strv.h"

static const char *const container_run_state_table[_CONTAINER_RUN_STATE_MAX] = {
        [CONTAINER_NONE] = "none",
        [CONTAINER_CREATED] = "created",
        [CONTAINER_RUNNING] = "running",
        [CONTAINER_EXITED] = "exited",
};

const char *container_run_state_to_string(ContainerRunState s) {
        if (s < 0 || s >= _CONTAINER_RUN_STATE_MAX)
                return NULL;
        return container_run_state_table[s];
}

static void container_state_setup(ContainerState *c, const Container *spec, bool is_init,
                                  unsigned index) {
        *c = (ContainerState){
                .spec = spec,
                .is_init = is_init,
                .index = index,
                .state = CONTAINER_NONE,
                /* -1: no attempt has exited yet, so no exit code is known. */
                .exit_code = -1,
                .last_exit_code = -1,
        };
}

static void container_state_done(ContainerState *c) {
        free(c->container_id);
        free(c->exit_reason);
        free(c->exit_message);
        free(c->last_exit_reason);
        free(c->last_container_id);
        free(c->kill_reason);
        free(c->waiting_reason);
        free(c->waiting_message);
        free(c->pull_image);
        free(c->image_id);
        free(c->image_digest);
}

static int container_states_new(const Container *specs, size_t n, bool is_init,
                                ContainerState **ret) {
        /* calloc(0) may return NULL; an empty list is simply NULL. */
        if (n == 0) {
                *ret = NULL;
                return 0;
        }
        ContainerState *a = calloc(n, sizeof(ContainerState));
        if (!a)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                container_state_setup(&a[i], &specs[i], is_init, (unsigned)i);
        *ret = a;
        return 0;
}

int pod_state_init(PodState *s, const Pod *pod, const char *uid) {
        assert(s);
        assert(pod);

        PodState n = { .pod = pod, .sandbox = SANDBOX_NONE };
        int r;

        if (uid) {
                n.uid = strdup(uid);
                if (!n.uid)
                        return -ENOMEM;
        }
        r = container_states_new(pod->spec.init_containers, pod->spec.n_init_containers, true,
                                 &n.init);
        if (r < 0)
                goto fail;
        n.n_init = pod->spec.n_init_containers;
        r = container_states_new(pod->spec.containers, pod->spec.n_containers, false, &n.app);
        if (r < 0)
                goto fail;
        n.n_app = pod->spec.n_containers;

        *s = n;
        return 0;
fail:
        pod_state_done(&n);
        return r;
}

void pod_state_done(PodState *s) {
        if (!s)
                return;
        for (size_t i = 0; i < s->n_init; i++)
                container_state_done(&s->init[i]);
        for (size_t i = 0; i < s->n_app; i++)
                container_state_done(&s->app[i]);
        free(s->init);
        free(s->app);
        free(s->uid);
        free(s->sandbox_message);
        free(s->wait_reason);
        free(s->wait_message);
        free(s->pod_ip);
        strv_free(s->pod_ips);
        free(s->host_ip);
        free(s->message);
        free(s->reason);
        *s = (PodState){};
}

ContainerState *pod_state_find_container(PodState *s, const char *name) {
        assert(s);
        if (!name)
                return NULL;
        /* Kubernetes validation makes names unique across both lists. */
        for (size_t i = 0; i < s->n_init; i++)
                if (s->init[i].spec && streq(s->init[i].spec->name, name))
                        return &s->init[i];
        for (size_t i = 0; i < s->n_app; i++)
                if (s->app[i].spec && streq(s->app[i].spec->name, name))
                        return &s->app[i];
        return NULL;
}
