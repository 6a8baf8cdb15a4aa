/* See op-queue.h. */
#include "op-queue.h"

#include <assert.h>
#include <errno.h>
#include <stdlib.h>

#include "list.h"

struct OpQueue {
        Event *event;
        const OpQueueOps *ops;
        unsigned max_parallel;
        OpQueueItem *waiting_head, *waiting_tail;
        /* The last urgent op waiting: urgent ops are the head of the
         * waiting list, in the order they were queued. NULL: none. */
        OpQueueItem *last_urgent;
        OpQueueItem *running;
        unsigned n_running, n_waiting;
        EventSource *kick;
        /* Set while the kick runs: a start() whose callback frees the queue
         * sets it, so the kick stops touching freed memory. */
        bool *freed_flag;
};

static void waiting_remove(OpQueue *q, OpQueueItem *it) {
        if (it == q->last_urgent)
                q->last_urgent = it->prev; /* urgent too, or NULL: they lead */
        LIST_REMOVE_TAIL(q->waiting_head, q->waiting_tail, it);
        q->n_waiting--;
}

static int on_kick(EventSource *s, usec_t now, void *userdata) {
        OpQueue *q = userdata;
        bool freed = false;

        q->freed_flag = &freed;
        while (q->waiting_head && q->n_running < q->max_parallel) {
                OpQueueItem *it = q->waiting_head;
                waiting_remove(q, it);
                LIST_PREPEND(q->running, it);
                it->running = true;
                q->n_running++;
                q->ops->start(it); /* may complete it, or free q */
                if (freed)
                        return 0;
        }
        q->freed_flag = NULL;
        return 0;
}

int op_queue_new(Event *e, unsigned max_parallel, const OpQueueOps *ops, const char *description,
                 OpQueue **ret) {
        int r;

        if (!e || !ops || !ops->start || !ops->free || !ret)
                return -EINVAL;
        OpQueue *q = calloc(1, sizeof(*q));
        if (!q)
                return -ENOMEM;
        q->event = e;
        q->ops = ops;
        q->max_parallel = max_parallel > 0 ? max_parallel : 1;
        r = event_add_defer(e, &q->kick, on_kick, q);
        if (r < 0) {
                free(q);
                return r;
        }
        (void)event_source_set_enabled(q->kick, false);
        /* Urgent: an op queued while the loop works through many callbacks
         * (100 pods dropped at once each prepare their container in turn)
         * starts in a free slot right after the callback that queued it,
         * not after all of them, so the runtime's slots fill while the loop
         * prepares the other pods. The kick still never runs inside the
         * call that queued the op. */
        r = event_source_set_defer_urgent(q->kick, true);
        if (r < 0) {
                q->kick = event_source_free(q->kick);
                free(q);
                return r;
        }
        if (description)
                (void)event_source_set_description(q->kick, description);
        *ret = q;
        return 0;
}

OpQueue *op_queue_free(OpQueue *q) {
        if (!q)
                return NULL;
        assert(!q->running);
        if (q->freed_flag)
                *q->freed_flag = true;
        while (q->waiting_head) {
                OpQueueItem *it = q->waiting_head;
                waiting_remove(q, it);
                it->queue = NULL;
                q->ops->free(it);
        }
        q->kick = event_source_free(q->kick);
        free(q);
        return NULL;
}

void op_queue_add(OpQueue *q, OpQueueItem *item) {
        *item = (OpQueueItem){ .queue = q };
        LIST_APPEND(q->waiting_head, q->waiting_tail, item);
        q->n_waiting++;
        (void)event_source_set_enabled(q->kick, true);
}

void op_queue_add_urgent(OpQueue *q, OpQueueItem *item) {
        OpQueueItem *after = q->last_urgent;

        *item = (OpQueueItem){ .queue = q, .urgent = true };
        if (!after) {
                LIST_PREPEND(q->waiting_head, item);
                if (!q->waiting_tail)
                        q->waiting_tail = item;
        } else {
                item->prev = after;
                item->next = after->next;
                if (item->next)
                        item->next->prev = item;
                else
                        q->waiting_tail = item;
                after->next = item;
        }
        q->last_urgent = item;
        q->n_waiting++;
        (void)event_source_set_enabled(q->kick, true);
}

void op_queue_complete(OpQueueItem *item) {
        OpQueue *q = item->queue;

        assert(item->running);
        LIST_REMOVE(q->running, item);
        item->running = false;
        q->n_running--;
        if (q->waiting_head)
                (void)event_source_set_enabled(q->kick, true);
        q->ops->free(item);
}

void op_queue_cancel(OpQueueItem *item) {
        OpQueue *q;

        if (!item)
                return;
        q = item->queue;
        if (!item->running) {
                waiting_remove(q, item);
                q->ops->free(item);
                return;
        }
        if (item->cancelled)
                return;
        item->cancelled = true;
        if (q->ops->stop)
                q->ops->stop(item);
}

OpQueueItem *op_queue_detach_running(OpQueue *q) {
        OpQueueItem *it = q ? q->running : NULL;

        if (!it)
                return NULL;
        LIST_REMOVE(q->running, it);
        it->running = false;
        q->n_running--;
        return it;
}

bool op_queue_item_cancelled(const OpQueueItem *item) {
        return item->cancelled;
}

unsigned op_queue_n_running(const OpQueue *q) {
        return q->n_running;
}

unsigned op_queue_n_waiting(const OpQueue *q) {
        return q->n_waiting;
}
