/* Tests for the shared op queue: limit, kick, cancel, completion order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdlib.h>

#include "event.h"
#include "macro.h"
#include "op-queue.h"

typedef struct Harness Harness;

typedef struct TestOp {
        OpQueueItem item; /* first: the hooks cast back */
        Harness *h;
        int id;
        bool complete_at_start;
} TestOp;

struct Harness {
        Event *event;
        OpQueue *queue;
        unsigned started, stopped, freed, callbacks;
        unsigned max_running_seen;
        int order[16];
        unsigned n_order;
        bool in_add; /* set while op_queue_add() runs */
        bool started_in_add;
        bool free_queue_in_callback;
        bool queue_more_in_callback;
        unsigned running_at_callback;
        unsigned freed_at_callback;
        TestOp *last_started;
};

static void op_start_hook(OpQueueItem *it);

static void op_stop_hook(OpQueueItem *it) {
        ((TestOp *)it)->h->stopped++;
}

static void op_free_hook(OpQueueItem *it) {
        TestOp *op = (TestOp *)it;
        op->h->freed++;
        free(op);
}

static const OpQueueOps test_ops = {
        .start = op_start_hook,
        .stop = op_stop_hook,
        .free = op_free_hook,
};

static TestOp *queue_op(Harness *h, int id) {
        TestOp *op = calloc(1, sizeof(*op));
        assert_non_null(op);
        op->h = h;
        op->id = id;
        h->in_add = true;
        op_queue_add(h->queue, &op->item);
        h->in_add = false;
        return op;
}

/* The owner's completion: free the op through the queue, then call back. */
static void complete(TestOp *op) {
        Harness *h = op->h;
        bool cancelled = op_queue_item_cancelled(&op->item);
        int id = op->id;

        op_queue_complete(&op->item);
        if (cancelled)
                return;
        h->callbacks++;
        h->running_at_callback = op_queue_n_running(h->queue);
        h->freed_at_callback = h->freed;
        if (h->queue_more_in_callback) {
                h->queue_more_in_callback = false;
                queue_op(h, 100 + id);
        }
        if (h->free_queue_in_callback)
                h->queue = op_queue_free(h->queue);
}

static void op_start_hook(OpQueueItem *it) {
        TestOp *op = (TestOp *)it;
        Harness *h = op->h;

        if (h->in_add)
                h->started_in_add = true;
        h->started++;
        if (h->n_order < ELEMENTSOF(h->order))
                h->order[h->n_order++] = op->id;
        h->last_started = op;
        h->max_running_seen = MAX(h->max_running_seen, op_queue_n_running(h->queue));
        if (op->complete_at_start)
                complete(op);
}

static void harness_init(Harness *h, unsigned max) {
        *h = (Harness){};
        assert_int_equal(event_new(&h->event), 0);
        assert_int_equal(op_queue_new(h->event, max, &test_ops, "test-kick", &h->queue), 0);
}

static void harness_done(Harness *h) {
        h->queue = op_queue_free(h->queue);
        h->event = event_free(h->event);
}

/* Every op the queue still runs, freed as the owner would. */
static void complete_all_running(Harness *h, TestOp **ops, size_t n) {
        for (size_t i = 0; i < n; i++)
                if (ops[i] && ops[i]->item.running) {
                        complete(ops[i]);
                        ops[i] = NULL;
                }
}

/* Two callbacks of one busy iteration (two pods preparing their
 * containers): an op the first queues starts before the second runs, so the
 * queue's slots fill while the loop still works through the others. */
typedef struct PrepState {
        Harness *h;
        unsigned started_seen;
        bool started_in_first;
} PrepState;

static int on_prep_first(EventSource *s, usec_t now, void *userdata) {
        PrepState *ps = userdata;
        queue_op(ps->h, 1);
        ps->started_in_first = ps->h->started > 0;
        return 0;
}

static int on_prep_second(EventSource *s, usec_t now, void *userdata) {
        PrepState *ps = userdata;
        ps->started_seen = ps->h->started;
        return 0;
}

static void test_kick_right_after_the_queuing_callback(void **state) {
        Harness h;
        PrepState ps = { .h = &h };
        EventSource *first = NULL, *second = NULL;

        harness_init(&h, 2);
        assert_int_equal(event_add_defer(h.event, &first, on_prep_first, &ps), 0);
        assert_int_equal(event_add_defer(h.event, &second, on_prep_second, &ps), 0);
        assert_int_equal(event_run(h.event, 0), 0);
        assert_false(ps.started_in_first); /* never inside the call that queued it */
        assert_int_equal(ps.started_seen, 1);
        assert_int_equal(h.started, 1);
        complete(h.last_started);
        first = event_source_free(first);
        second = event_source_free(second);
        harness_done(&h);
}

static void test_limit_and_kick_fills_every_slot(void **state) {
        Harness h;
        TestOp *ops[5];

        harness_init(&h, 3);
        for (int i = 0; i < 5; i++)
                ops[i] = queue_op(&h, i);
        assert_int_equal(h.started, 0);
        assert_false(h.started_in_add);
        assert_int_equal(op_queue_n_waiting(h.queue), 5);

        /* One iteration: one kick fills all three slots, in FIFO order. */
        assert_int_equal(event_run(h.event, 0), 0);
        assert_int_equal(h.started, 3);
        assert_int_equal(op_queue_n_running(h.queue), 3);
        assert_int_equal(h.max_running_seen, 3);
        assert_int_equal(h.order[0], 0);
        assert_int_equal(h.order[1], 1);
        assert_int_equal(h.order[2], 2);

        /* Nothing more starts while the slots are taken. */
        assert_int_equal(event_run(h.event, 0), 0);
        assert_int_equal(h.started, 3);

        /* Two complete: the next kick fills both. */
        complete(ops[0]);
        ops[0] = NULL;
        complete(ops[1]);
        ops[1] = NULL;
        assert_int_equal(h.started, 3);
        assert_int_equal(event_run(h.event, 0), 0);
        assert_int_equal(h.started, 5);
        assert_int_equal(h.max_running_seen, 3);
        assert_int_equal(h.order[3], 3);
        assert_int_equal(h.order[4], 4);

        complete_all_running(&h, ops, ELEMENTSOF(ops));
        assert_int_equal(h.freed, 5);
        assert_int_equal(h.callbacks, 5);
        harness_done(&h);
}

static void test_cancel_queued(void **state) {
        Harness h;

        harness_init(&h, 1);
        TestOp *a = queue_op(&h, 0);
        TestOp *b = queue_op(&h, 1);
        TestOp *c = queue_op(&h, 2);
        op_queue_cancel(&b->item);
        assert_int_equal(h.freed, 1);
        assert_int_equal(op_queue_n_waiting(h.queue), 2);

        assert_int_equal(event_run(h.event, 0), 0);
        assert_int_equal(h.started, 1);
        complete(a);
        assert_int_equal(event_run(h.event, 0), 0);
        assert_int_equal(h.started, 2);
        assert_int_equal(h.order[1], 2); /* b never started */
        complete(c);
        assert_int_equal(h.stopped, 0);
        assert_int_equal(h.callbacks, 2);
        assert_int_equal(h.freed, 3);
        harness_done(&h);
}

static TestOp *queue_urgent(Harness *h, int id) {
        TestOp *op = calloc(1, sizeof(*op));
        assert_non_null(op);
        op->h = h;
        op->id = id;
        op_queue_add_urgent(h->queue, &op->item);
        return op;
}

/* With one slot: completes the running op, lets the next start, until
 * the queue is empty; h->order is then the start order. */
static void drain_one_by_one(Harness *h) {
        while (op_queue_n_running(h->queue) > 0) {
                complete(h->last_started);
                assert_int_equal(event_run(h->event, 0), 0);
        }
        assert_int_equal(op_queue_n_waiting(h->queue), 0);
}

static void test_urgent_ahead_in_order(void **state) {
        Harness h;

        harness_init(&h, 1);
        TestOp *first = queue_op(&h, 0);
        assert_int_equal(event_run(h.event, 0), 0); /* 0 takes the one slot */
        assert_true(first->item.running);
        (void)queue_op(&h, 1);
        (void)queue_op(&h, 2);
        (void)queue_urgent(&h, 10);
        (void)queue_op(&h, 3);
        (void)queue_urgent(&h, 11);
        TestOp *u12 = queue_urgent(&h, 12);
        assert_int_equal(op_queue_n_waiting(h.queue), 6);
        /* Cancelling the last urgent op: the next urgent one still goes
         * behind the earlier ones. */
        op_queue_cancel(&u12->item);
        (void)queue_urgent(&h, 13);
        assert_int_equal(op_queue_n_waiting(h.queue), 6);

        drain_one_by_one(&h);
        const int want[] = { 0, 10, 11, 13, 1, 2, 3 };
        assert_int_equal(h.n_order, ELEMENTSOF(want));
        for (size_t i = 0; i < ELEMENTSOF(want); i++)
                assert_int_equal(h.order[i], want[i]);
        harness_done(&h);
}

static void test_urgent_cancel_last_then_add(void **state) {
        Harness h;

        harness_init(&h, 1);
        TestOp *first = queue_op(&h, 0);
        assert_int_equal(event_run(h.event, 0), 0);
        assert_true(first->item.running);
        (void)queue_op(&h, 1);
        TestOp *u = queue_urgent(&h, 10);
        op_queue_cancel(&u->item); /* the only urgent one: none left */
        (void)queue_urgent(&h, 11);
        (void)queue_op(&h, 2);

        drain_one_by_one(&h);
        const int want[] = { 0, 11, 1, 2 };
        assert_int_equal(h.n_order, ELEMENTSOF(want));
        for (size_t i = 0; i < ELEMENTSOF(want); i++)
                assert_int_equal(h.order[i], want[i]);
        harness_done(&h);
}

static void test_cancel_running(void **state) {
        Harness h;

        harness_init(&h, 1);
        TestOp *a = queue_op(&h, 0);
        TestOp *b = queue_op(&h, 1);
        assert_int_equal(event_run(h.event, 0), 0);
        assert_true(a->item.running);

        op_queue_cancel(&a->item);
        assert_int_equal(h.stopped, 1);
        assert_int_equal(h.freed, 0);
        /* The slot stays taken until the op completes. */
        assert_int_equal(op_queue_n_running(h.queue), 1);
        assert_int_equal(event_run(h.event, 0), 0);
        assert_int_equal(h.started, 1);

        complete(a);
        assert_int_equal(h.callbacks, 0); /* cancelled: no callback */
        assert_int_equal(h.freed, 1);
        assert_int_equal(event_run(h.event, 0), 0);
        assert_int_equal(h.started, 2);
        complete(b);
        assert_int_equal(h.callbacks, 1);
        harness_done(&h);
}

static void op_free_hook_then_callback(void **state) {
        Harness h;

        harness_init(&h, 1);
        TestOp *a = queue_op(&h, 7);
        assert_int_equal(event_run(h.event, 0), 0);
        h.queue_more_in_callback = true;
        complete(a);
        /* At callback time the op was freed and its slot released... */
        assert_int_equal(h.freed_at_callback, 1);
        assert_int_equal(h.running_at_callback, 0);
        /* ...and what the callback queued starts from the loop. */
        assert_int_equal(h.started, 1);
        assert_int_equal(event_run(h.event, 0), 0);
        assert_int_equal(h.started, 2);
        assert_int_equal(h.order[1], 107);
        assert_int_equal(op_queue_n_running(h.queue), 1);
        OpQueueItem *it = op_queue_detach_running(h.queue);
        assert_non_null(it);
        op_free_hook(it);
        harness_done(&h);
}

static void test_complete_at_start_and_free_queue(void **state) {
        Harness h;

        harness_init(&h, 2);
        TestOp *a = queue_op(&h, 0);
        a->complete_at_start = true;
        TestOp *b = queue_op(&h, 1);
        b->complete_at_start = true;
        (void)queue_op(&h, 2);
        (void)queue_op(&h, 3);
        /* The first completion's callback frees the queue (and the ops
         * still waiting): the kick must stop there. */
        h.free_queue_in_callback = true;
        assert_int_equal(event_run(h.event, 0), 0);
        assert_null(h.queue);
        assert_int_equal(h.started, 1);
        assert_int_equal(h.callbacks, 1);
        assert_int_equal(h.freed, 4);
        harness_done(&h);
}

static void test_complete_at_start_keeps_filling(void **state) {
        Harness h;
        TestOp *ops[4];

        harness_init(&h, 2);
        for (int i = 0; i < 4; i++)
                ops[i] = queue_op(&h, i);
        ops[0]->complete_at_start = true;
        ops[0] = NULL;
        assert_int_equal(event_run(h.event, 0), 0);
        /* op 0 finished inside start: its slot went to ops 1 and 2. */
        assert_int_equal(h.started, 3);
        assert_int_equal(op_queue_n_running(h.queue), 2);
        assert_int_equal(h.max_running_seen, 2);
        complete_all_running(&h, ops, ELEMENTSOF(ops));
        assert_int_equal(event_run(h.event, 0), 0);
        assert_int_equal(h.started, 4);
        complete_all_running(&h, ops, ELEMENTSOF(ops));
        assert_int_equal(h.freed, 4);
        harness_done(&h);
}

int main(void) {
        const struct CMUnitTest tests[] = {
                cmocka_unit_test(test_limit_and_kick_fills_every_slot),
                cmocka_unit_test(test_kick_right_after_the_queuing_callback),
                cmocka_unit_test(test_cancel_queued),
                cmocka_unit_test(test_cancel_running),
                cmocka_unit_test(test_urgent_ahead_in_order),
                cmocka_unit_test(test_urgent_cancel_last_then_add),
                cmocka_unit_test(op_free_hook_then_callback),
                cmocka_unit_test(test_complete_at_start_and_free_queue),
                cmocka_unit_test(test_complete_at_start_keeps_filling),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
