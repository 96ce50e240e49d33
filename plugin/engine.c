/*
 * plugin/engine.c - the glue between the lock engine (core/) and the
 * rest of the daemon: the engine's callbacks (struct dlm_core_ops) and
 * dlmd_flush(), which delivers what they queued.
 *
 * The engine must not be re-entered from its own callbacks, so the
 * callbacks only queue:
 *
 *   send      a message for another node goes to comms.c at once
 *             (dlmd_comms_send only queues: lowcomms copies it into its
 *             send queue, the one copy it gets), or on d_held, copied, when
 *             comms.c refuses it or holds one for that node before it; a
 *             message for ourselves (a resource's master is local) goes
 *             on d_msgs, copied;
 *   ast       a completion or blocking AST goes on d_asts;
 *   log       a line goes to the daemon's log at once (no re-entry);
 *   recovery_done / recovery_failed
 *             are handed to cluster.c through the table the daemon was
 *             wired with (d_engine_up), which only records them and moves
 *             the lockspace on from its own job.
 *
 * dlmd_flush() runs after every entry point into the engine (a client
 * request, a message from a node, a recovery step, a timer): it hands
 * each queued message to comms.c (dlm_core_receive for our own) and each
 * AST to client.c, round after round until neither queue has anything
 * (the engine answers a message with finitely many others), and then
 * asks comms.c to write what it queued.
 *
 * Nothing is dropped.  The callbacks cannot report a failure to the
 * engine (it has no retransmission and no way back from a half-sent
 * operation), so the glue keeps everything it is given:
 *
 *   - a message whose copy cannot be allocated takes one of MSG_RESERVE
 *     preallocated ones (returned when sent);
 *   - the AST queue grows while AST_HEADROOM slots are still free, so a
 *     failed growth leaves room;
 *   - a message comms.c cannot take (it is out of memory for its
 *     backlog) is held on d_held, with every later one for that node
 *     behind it, and offered first at the next flush (a timer of
 *     HELD_RETRY_MS makes one);
 *   - only when the reserve or the headroom is used up as well does
 *     dlmd stop (dlmd_cannot_hold: logged, exit status 1): the others
 *     recover its lockspaces without it (after fencing its node when
 *     its clients held or waited for locks: client.c dlmd_client_fini),
 *     instead of it running on with a lost grant or request;
 *   - a message the engine did not take (dlm_core_receive's -ENOMEM: it
 *     could not even keep it, nothing changed, and it must be offered
 *     again before any later one from that node) is held, not lost and
 *     not a reason to stop.  One of ours is already a copy on d_msgs: it
 *     moves to d_self_held, every later one of ours goes behind it, and
 *     each flush (after every entry point into the engine, and the
 *     HELD_RETRY_MS timer) offers them again first, in order.  A peer's
 *     is held by comms.c and lowcomms (comms.c, HOLD), at no cost in
 *     memory here.  Order across senders is not part of the engine's
 *     protocol (core.h: a simulator delivers in any order it likes;
 *     dlm-sim's links are FIFO per pair and nothing more, and requeue a
 *     message not taken exactly so), so ours and each peer's are held
 *     apart and the others go on meanwhile.
 *
 * This file sits below cluster.c and client.c (both call dlmd_flush) and
 * above comms.c; it never calls up by name: the AST sink and the
 * recovery reports are function pointers set once at start
 * (plugin/daemon.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/wire.h"
#include "plugin/dlmd.h"

/* ASTs the queue holds beyond what it has grown for: it grows when fewer
 * slots than this are free, so a failed growth still leaves them. */
#define AST_HEADROOM		64
#define MSG_RESERVE		64	/* preallocated messages */
#define MSG_RESERVE_LEN		DLM_WIRE_MAX_LEN
#define HELD_RETRY_MS		20	/* comms.c refused: try again after */
#define NS_PER_MS		1000000ULL

/* Out of memory and the reserve used up: an AST or a message would be
 * lost, and with it the agreement between the nodes' copies of a lock.
 * dlmd stops instead: its clients see their connection end, and the
 * others recover without it, fencing its node first if a client of it
 * held or waited for a lock (it may go on believing it holds it). */
void dlmd_cannot_hold(struct dlmd *d, const char *what, uint32_t arg)
{
	if (!d->d_cannot_hold)
		log_err("out of memory: cannot hold %s %u; dlmd stops rather "
			"than lose it", what, arg);
	d->d_cannot_hold = true;
	d->d_exit_code = 1;
	if (d->d_loop)
		qb_loop_stop(d->d_loop);
}

static bool test_alloc_fails(void);

static int asts_grow(struct dlmd *d, size_t cap)
{
	void *n = test_alloc_fails() ? NULL :
		realloc(d->d_asts, cap * sizeof(*d->d_asts));

	if (!n)
		return -ENOMEM;
	d->d_asts = n;
	d->d_asts_cap = cap;
	return 0;
}

static void core_ast(void *ctx, const struct dlm_ast *ast)
{
	struct dlmd *d = ctx;
	struct dlmd_pending_ast *pa;

	if (d->d_nasts + AST_HEADROOM >= d->d_asts_cap &&
	    asts_grow(d, d->d_asts_cap * 2) && d->d_nasts == d->d_asts_cap) {
		dlmd_cannot_hold(d, "(the reserve used up) an AST for lock",
				 ast->lkid);
		return;
	}
	pa = &d->d_asts[d->d_nasts++];
	memset(pa, 0, sizeof(*pa));
	pa->pa_owner = ast->owner;
	pa->pa_lkid = ast->lkid;
	pa->pa_type = (uint8_t)ast->type;
	pa->pa_grmode = (int8_t)ast->grmode;
	pa->pa_bastmode = (int8_t)ast->bastmode;
	pa->pa_sbflags = (uint8_t)ast->sbflags;
	pa->pa_status = ast->status;
	if (ast->lvb) {
		pa->pa_has_lvb = true;
		memcpy(pa->pa_lvb, ast->lvb, DLM_LVB_LEN);
	}
}

static void msg_free(struct dlmd *d, struct dlmd_pending_msg *pm)
{
	if (pm->pm_reserve) {
		pm->pm_next = d->d_msg_reserve;
		d->d_msg_reserve = pm;
	} else {
		free(pm);
	}
}

static bool held_for(const struct dlmd *d, uint32_t to)
{
	for (const struct dlmd_pending_msg *pm = d->d_held; pm; pm = pm->pm_next)
		if (pm->pm_to == to)
			return true;
	return false;
}

static void core_send(void *ctx, uint32_t to, const void *buf, size_t len)
{
	struct dlmd *d = ctx;
	struct dlmd_pending_msg *pm;

	/* Straight to comms.c, which copies it into lowcomms' queue (it
	 * calls nothing that re-enters the engine), unless one is held for
	 * that node: no allocation or copy of our own. */
	if (to != d->d_nodeid && !held_for(d, to) &&
	    dlmd_comms_send(d, to, buf, len) != -ENOMEM)
		return;
	pm = malloc(sizeof(*pm) + len);

	if (pm) {
		pm->pm_reserve = false;
	} else if (d->d_msg_reserve && len <= MSG_RESERVE_LEN) {
		pm = d->d_msg_reserve;
		d->d_msg_reserve = pm->pm_next;
	} else {
		dlmd_cannot_hold(d, "(the reserve used up) a message for node", to);
		return;
	}
	pm->pm_next = NULL;
	pm->pm_to = to;
	pm->pm_len = len;
	memcpy(pm->pm_buf, buf, len);
	if (to != d->d_nodeid) {
		/* refused: behind whatever is held for it, in order */
		*d->d_held_tail = pm;
		d->d_held_tail = &pm->pm_next;
		return;
	}
	*d->d_msgs_tail = pm;
	d->d_msgs_tail = &pm->pm_next;
}

/* The engine escapes the names it prints (core/dump.c); escaping the
 * whole line again here costs little and keeps any byte from elsewhere
 * from ending a log line. */
static void core_log(void *ctx, enum dlm_log_level level, const char *line)
{
	char safe[DLMD_ESCAPED_SIZE(512)];	/* core/ls.c LOG_LINE_MAX */

	qb_log((int)level, "core: %s", dlmd_escape(line, safe, sizeof(safe)));
}

static void core_recovery_done(void *ctx, struct dlm_ls *ls, uint32_t event)
{
	struct dlmd *d = ctx;

	d->d_engine_up->eu_recovery_done(d, ls, event);
}

static void core_recovery_failed(void *ctx, struct dlm_ls *ls, uint32_t event,
				 int error)
{
	struct dlmd *d = ctx;

	d->d_engine_up->eu_recovery_failed(d, ls, event, error);
}

static const struct dlm_core_ops engine_ops = {
	.send = core_send,
	.ast = core_ast,
	.log = core_log,
	.recovery_done = core_recovery_done,
	.recovery_failed = core_recovery_failed,
};

/*
 * Tests only, and only in a build with AddressSanitizer, whose allocator
 * a preloaded failing malloc (tests/malloc-fail.c) cannot replace:
 * tests/test-cluster-malloc.sh then fails the engine's allocations
 * through its hook (dlm_core_set_alloc_hook) instead.  With
 * DLMD_TEST_ALLOC_FAIL_ALL_FILE every engine allocation fails while that
 * file exists; with DLMD_TEST_ALLOC_FAIL_FILE and
 * DLMD_TEST_ALLOC_FAIL_EVERY=N, one in N while that one exists.  The
 * growth of the AST queue (asts_grow) fails the same way, so that a test
 * can make dlmd stop for an AST it cannot hold (test-cluster-stopgrant
 * step 3).  A build without the sanitizer ignores both.
 */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DLMD_TEST_ALLOC_HOOK 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define DLMD_TEST_ALLOC_HOOK 1
#endif
#ifdef DLMD_TEST_ALLOC_HOOK
#include <sys/stat.h>

struct test_alloc_fail {
	const char	*ta_all;
	const char	*ta_some;
	unsigned long	ta_every;
	unsigned long	ta_seen;
};

static struct test_alloc_fail test_alloc;

static int test_alloc_hook(void *arg)
{
	struct test_alloc_fail *ta = arg;
	struct stat st;

	if (ta->ta_all && stat(ta->ta_all, &st) == 0)
		return 1;
	if (ta->ta_some && ta->ta_every && stat(ta->ta_some, &st) == 0)
		return ++ta->ta_seen % ta->ta_every == 0;
	return 0;
}

static bool test_alloc_fails(void)
{
	return (test_alloc.ta_all || test_alloc.ta_some) &&
	       test_alloc_hook(&test_alloc);
}

static void test_alloc_setup(struct dlm_core *core)
{
	const char *every = getenv("DLMD_TEST_ALLOC_FAIL_EVERY");

	test_alloc.ta_all = getenv("DLMD_TEST_ALLOC_FAIL_ALL_FILE");
	test_alloc.ta_some = getenv("DLMD_TEST_ALLOC_FAIL_FILE");
	test_alloc.ta_every = every ? strtoul(every, NULL, 10) : 0;
	if (test_alloc.ta_all || test_alloc.ta_some)
		dlm_core_set_alloc_hook(core, test_alloc_hook, &test_alloc);
}
#else
static bool test_alloc_fails(void)
{
	return false;
}

static void test_alloc_setup(struct dlm_core *core)
{
	(void)core;
}
#endif

int dlmd_engine_new(struct dlmd *d, const struct dlmd_engine_up *up)
{
	struct dlm_core_config ccfg;
	uint32_t scan;

	memset(&ccfg, 0, sizeof(ccfg));
	ccfg.our_nodeid = d->d_nodeid;
	ccfg.toss_ms = d->d_cfg.cf_toss_secs * 1000u;
	ccfg.max_tossed = d->d_cfg.cf_max_tossed;
	ccfg.audit_ms = d->d_cfg.cf_audit_secs * 1000u;
	ccfg.deadlock_ms = d->d_cfg.cf_deadlock_secs * 1000u;
	/* the engine counts residence in dlm_core_tick() calls, which
	 * main.c makes every scan_secs (at least 1; a config not read by
	 * config.c, as a test's, may leave it 0): round up to whole ticks */
	scan = d->d_cfg.cf_scan_secs ? d->d_cfg.cf_scan_secs : 1;
	ccfg.remaster_ticks = (d->d_cfg.cf_remaster_secs + scan - 1) / scan;
	ccfg.remaster_window = d->d_cfg.cf_remaster_window;
	ccfg.remaster_shared = d->d_cfg.cf_remaster_shared;
	ccfg.fold = d->d_cfg.cf_fold;
	d->d_engine_up = up;
	d->d_msgs_tail = &d->d_msgs;
	d->d_held_tail = &d->d_held;
	d->d_self_held_tail = &d->d_self_held;
	if (asts_grow(d, 4 * AST_HEADROOM))
		return -ENOMEM;
	for (unsigned int i = 0; i < MSG_RESERVE; i++) {
		struct dlmd_pending_msg *pm = malloc(sizeof(*pm) + MSG_RESERVE_LEN);

		if (!pm)
			return -ENOMEM;
		pm->pm_reserve = true;
		pm->pm_next = d->d_msg_reserve;
		d->d_msg_reserve = pm;
	}
	d->d_core = dlm_core_new(&ccfg, &engine_ops, d);
	if (!d->d_core)
		return -ENOMEM;
	test_alloc_setup(d->d_core);
	return 0;
}

static void msgs_free_all(struct dlmd_pending_msg **head)
{
	while (*head) {
		struct dlmd_pending_msg *pm = *head;

		*head = pm->pm_next;
		free(pm);
	}
}

void dlmd_engine_free(struct dlmd *d)
{
	dlm_core_free(d->d_core);
	d->d_core = NULL;
	free(d->d_asts);
	d->d_asts = NULL;
	d->d_nasts = d->d_asts_cap = 0;
	if (d->d_held_armed)
		qb_loop_timer_del(d->d_loop, d->d_held_timer);
	d->d_held_armed = false;
	/* reserve entries in the queues are freed with them */
	msgs_free_all(&d->d_msgs);
	msgs_free_all(&d->d_held);
	msgs_free_all(&d->d_self_held);
	msgs_free_all(&d->d_msg_reserve);
	d->d_msgs_tail = &d->d_msgs;
	d->d_held_tail = &d->d_held;
	d->d_self_held_tail = &d->d_self_held;
	d->d_self_nheld = 0;
	d->d_self_held_since = 0;
}

/* The engine did not take one of our own messages: it waits, with every
 * later one of ours, on d_self_held. */
static void self_hold(struct dlmd *d, struct dlmd_pending_msg *pm)
{
	if (!d->d_self_held) {
		d->d_self_held_since = dlmd_now_ms();
		log_info("the engine could not take a message of ours (out of "
			 "memory): it is held, with the ones after it, and "
			 "offered again");
	}
	*d->d_self_held_tail = pm;
	d->d_self_held_tail = &pm->pm_next;
	d->d_self_nheld++;
}

/* Offer our held messages again, in order, until one is not taken. */
static void self_offer(struct dlmd *d)
{
	while (d->d_self_held && !d->d_cannot_hold) {
		struct dlmd_pending_msg *pm = d->d_self_held;

		if (dlm_core_receive(d->d_core, d->d_nodeid, pm->pm_buf,
				     pm->pm_len) == -ENOMEM) {
			d->d_self_not_taken++;
			return;
		}
		d->d_self_held = pm->pm_next;
		d->d_self_nheld--;
		msg_free(d, pm);
	}
	if (d->d_self_held)
		return;
	d->d_self_held_tail = &d->d_self_held;
	if (d->d_self_held_since)
		log_info("our held messages were taken after %llu ms",
			 (unsigned long long)(dlmd_now_ms() -
					      d->d_self_held_since));
	d->d_self_held_since = 0;
}

unsigned int dlmd_held(const struct dlmd *d, uint32_t *nodeid,
		       uint64_t *since_ms)
{
	uint32_t node = 0;
	uint64_t since = 0;
	unsigned int n = dlmd_comms_held(d, &node, &since);

	if (d->d_self_held && (!n || d->d_self_held_since < since)) {
		node = d->d_nodeid;
		since = d->d_self_held_since;
	}
	n += d->d_self_nheld;
	if (nodeid)
		*nodeid = node;
	if (since_ms)
		*since_ms = since;
	return n;
}

static void held_timer(void *data)
{
	struct dlmd *d = data;

	d->d_held_armed = false;
	dlmd_flush(d);
}

static bool id_listed(const uint32_t *ids, unsigned int n, uint32_t id)
{
	for (unsigned int i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/* Hand each message of the list to comms.c in order, or keep it on
 * d_held: a message for a node that comms.c refused now (out of memory),
 * or that has one held before it (its order is kept). */
static void send_or_hold(struct dlmd *d, struct dlmd_pending_msg *pm,
			 uint32_t *blocked, unsigned int *nblocked)
{
	while (pm) {
		struct dlmd_pending_msg *next = pm->pm_next;

		pm->pm_next = NULL;
		if (pm->pm_to == d->d_nodeid) {
			/* behind those held, or not taken (-ENOMEM: offered
			 * again before any later one) */
			if (d->d_cannot_hold) {
				msg_free(d, pm);
			} else if (d->d_self_held) {
				self_hold(d, pm);
			} else if (dlm_core_receive(d->d_core, d->d_nodeid,
						    pm->pm_buf,
						    pm->pm_len) == -ENOMEM) {
				d->d_self_not_taken++;
				self_hold(d, pm);
			} else {
				msg_free(d, pm);
			}
		} else if (id_listed(blocked, *nblocked, pm->pm_to) ||
			   dlmd_comms_send(d, pm->pm_to, pm->pm_buf,
					   pm->pm_len) == -ENOMEM) {
			if (!id_listed(blocked, *nblocked, pm->pm_to) &&
			    *nblocked < DLM_MAX_NODES)
				blocked[(*nblocked)++] = pm->pm_to;
			*d->d_held_tail = pm;
			d->d_held_tail = &pm->pm_next;
		} else {
			msg_free(d, pm);
		}
		pm = next;
	}
}

void dlmd_flush(struct dlmd *d)
{
	uint32_t blocked[DLM_MAX_NODES];
	unsigned int nblocked = 0;
	struct dlmd_pending_msg *held = d->d_held;

	/* what comms.c refused before goes first, in order */
	d->d_held = NULL;
	d->d_held_tail = &d->d_held;
	send_or_hold(d, held, blocked, &nblocked);
	/* ours the engine did not take before, in order, before any new */
	self_offer(d);
	/* Bounded: each round delivers what the previous produced; the
	 * engine answers a message with finitely many others. */
	while (d->d_nasts || d->d_msgs) {
		struct dlmd_pending_msg *pm = d->d_msgs;

		d->d_msgs = NULL;
		d->d_msgs_tail = &d->d_msgs;
		send_or_hold(d, pm, blocked, &nblocked);
		for (size_t i = 0; i < d->d_nasts; i++)
			d->d_engine_up->eu_ast(d, &d->d_asts[i]);
		d->d_nasts = 0;
	}
	if ((d->d_held || d->d_self_held) && !d->d_held_armed && d->d_loop &&
	    qb_loop_timer_add(d->d_loop, QB_LOOP_HIGH,
			      HELD_RETRY_MS * NS_PER_MS, d, held_timer,
			      &d->d_held_timer) == 0)
		d->d_held_armed = true;
	dlmd_comms_kick(d);
}
