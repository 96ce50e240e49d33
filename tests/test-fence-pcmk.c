/*
 * tests/test-fence-pcmk.c - plugin/fence.c waiting for pacemaker's
 * fencer, with libstonithd faked (-Wl,--wrap of stonith_api_new and
 * the other entry points fence.c calls) and this node's wall clock
 * injected (-Wl,--wrap=time): a node's real-time clock stepped an hour
 * back or forward (an administrator's date -s, NTP's first step on a
 * node that booted with a bad RTC), or an hour apart from the clock of
 * the node whose fencer wrote the history, must neither count a fencing
 * from before the failure (an earlier incident in the fencer's
 * history: recovery would go on with the failed node perhaps alive) nor
 * keep a fencing done after the failure from counting (a wait for
 * ever).  The fencer's history carries its own wall-clock times
 * (stonith_history_t.completed); fence.c compares them with each other,
 * not with this node's clock, whenever it could read the history at the
 * failure.  When it could not (the fencer unreachable then), the
 * failure's wall-clock time is all there is: the control case.
 *
 * No cluster, no pacemaker: the failed node is reported straight to
 * fence.c, whose daemon group is faked (one member, no claims).  Built
 * only with pacemaker's fencing API (HAVE_PACEMAKER_FENCING); skipped
 * (77) otherwise.
 */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "plugin/dlmd.h"

#ifdef HAVE_PACEMAKER_FENCING
#include <crm/stonith-ng.h>

#define OUR_NODE	1
#define VICTIM		2
#define HOUR		3600

/* ---- this node's wall clock ------------------------------------------ */

static time_t wall_offset;	/* added to the real time(): a step */

time_t __real_time(time_t *t);
time_t __wrap_time(time_t *t);

time_t __wrap_time(time_t *t)
{
	time_t now = __real_time(NULL) + wall_offset;

	if (t)
		*t = now;
	return now;
}

/* ---- this node's monotonic clock (dlmd_now_ms), moved on by a test ---- */

static uint64_t mono_offset_ms;

uint64_t __real_dlmd_now_ms(void);
uint64_t __wrap_dlmd_now_ms(void);

uint64_t __wrap_dlmd_now_ms(void)
{
	return __real_dlmd_now_ms() + mono_offset_ms;
}

/* ---- the fake fencer ------------------------------------------------- */

#define MAX_HIST	8
static struct {
	bool		reachable;	/* connect succeeds */
	int		pipe[2];	/* its fd: never readable */
	unsigned int	nhist;
	struct {
		int	state;		/* st_done, st_failed, st_exec */
		time_t	completed;	/* the fencer's wall clock */
		const char *action;	/* "reboot", "off", "on" */
	} hist[MAX_HIST];
	void		(*notify)(stonith_t *st, stonith_event_t *e);
	/* the result callback of the latest fence() (its call id) */
	void		(*result_cb)(stonith_t *st, stonith_callback_data_t *r);
	void		*result_data;
	int		call_id;
	unsigned int	asked;		/* fence() calls */
	char		action[16];	/* of the latest */
	unsigned int	history_reads;
} fencer;

static stonith_api_operations_t fake_ops;
static stonith_t fake_st = { .cmds = &fake_ops };

static int fake_connect(stonith_t *st, const char *name, int *fd)
{
	(void)st;
	(void)name;
	if (!fencer.reachable)
		return -ENOTCONN;
	if (fencer.pipe[0] < 0)
		assert_int_equal(pipe(fencer.pipe), 0);
	*fd = fencer.pipe[0];
	return 0;
}

static int fake_register(stonith_t *st, const char *event,
			 void (*cb)(stonith_t *st, stonith_event_t *e))
{
	(void)st;
	(void)event;
	fencer.notify = cb;
	return 0;
}

/*
 * The history is read by fence.c's reader thread (THE HISTORY READER),
 * not the test's: what it reads is under fmu, and what it finds wrong
 * is told to the test's thread (bad_target), which asserts.  A connected
 * fencer that stops answering (fencer_hangs: SIGSTOP, a deadlock) holds
 * the read until the test lets it go, or for HANG_MAX_MS at most (so
 * that a read made on the test's own thread, as dlmd's loop made it
 * before the reader, ends, and the test fails rather than hangs).
 */
#define HANG_MAX_MS	1000
static pthread_mutex_t fmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fcond = PTHREAD_COND_INITIALIZER;
static pthread_t test_thread;
static bool fencer_hangs;
static unsigned int hung_reads;		/* reads that found it hanging */
static unsigned int reads_on_test_thread;	/* dlmd's loop would wait */
static bool bad_target;
/* a read takes its snapshot of the history, then waits until the test
 * lets it go (HANG_MAX_MS at most): a reply that describes the history
 * as it was when its request was made, answered later */
static bool fencer_holds;
static unsigned int held_reads;
static unsigned int reads_fail;	/* REVIEW: the next reads fail (ENOTCONN) */
#define PCMK_TRIES_SEEN	2	/* fence.c's PCMK_READ_TRIES */

static int fake_history(stonith_t *st, int opts, const char *node,
			stonith_history_t **out, int timeout)
{
	stonith_history_t *list = NULL;
	int rc = 0;

	(void)st;
	(void)opts;
	(void)timeout;
	pthread_mutex_lock(&fmu);
	if (strcmp(node, "2"))
		bad_target = true;
	fencer.history_reads++;
	if (pthread_equal(pthread_self(), test_thread))
		reads_on_test_thread++;
	if (reads_fail) {
		reads_fail--;
		pthread_mutex_unlock(&fmu);
		*out = NULL;
		return -ENOTCONN;
	}
	if (fencer_hangs) {	/* a fencer that does not answer */
		struct timespec until;

		hung_reads++;
		pthread_cond_broadcast(&fcond);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += HANG_MAX_MS / 1000;
		while (fencer_hangs &&
		       pthread_cond_timedwait(&fcond, &fmu, &until) == 0)
			;
		rc = -ETIME;
	}
	for (unsigned int i = 0; !rc && i < fencer.nhist; i++) {
		stonith_history_t *h = calloc(1, sizeof(*h));

		if (!h)
			abort();
		h->state = fencer.hist[i].state;
		h->completed = fencer.hist[i].completed;
		h->action = (char *)fencer.hist[i].action;
		h->next = list;
		list = h;
	}
	if (fencer_holds) {
		struct timespec until;

		held_reads++;
		pthread_cond_broadcast(&fcond);
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += HANG_MAX_MS / 1000;
		while (fencer_holds &&
		       pthread_cond_timedwait(&fcond, &fmu, &until) == 0)
			;
	}
	pthread_mutex_unlock(&fmu);
	*out = list;
	return rc;
}

static int fake_fence(stonith_t *st, int opts, const char *node,
		      const char *action, int timeout, int tolerance)
{
	(void)st;
	(void)opts;
	(void)node;
	(void)timeout;
	(void)tolerance;
	fencer.asked++;
	snprintf(fencer.action, sizeof(fencer.action), "%s", action);
	return ++fencer.call_id;	/* asynchronous: a call id */
}

static int fake_register_callback(stonith_t *st, int call_id, int timeout,
				  int options, void *user_data,
				  const char *name,
				  void (*cb)(stonith_t *st,
					     stonith_callback_data_t *r))
{
	(void)st;
	(void)timeout;
	(void)options;
	(void)name;
	assert_int_equal(call_id, fencer.call_id);
	fencer.result_cb = cb;
	fencer.result_data = user_data;
	return 1;
}

/* The fencer answers the latest fence() request: 'rc' (0: done). */
static void fencer_result(int rc)
{
	stonith_callback_data_t r = { .rc = rc, .call_id = fencer.call_id,
				      .userdata = fencer.result_data };

	assert_non_null(fencer.result_cb);
	fencer.result_cb(&fake_st, &r);
}

stonith_t *__wrap_stonith_api_new(void);
void __wrap_stonith_api_delete(stonith_t *st);
bool __wrap_stonith_dispatch(stonith_t *st);
void __wrap_stonith_history_free(stonith_history_t *h);

stonith_t *__wrap_stonith_api_new(void)
{
	fake_ops.connect = fake_connect;
	fake_ops.register_notification = fake_register;
	fake_ops.history = fake_history;
	fake_ops.fence = fake_fence;
	fake_ops.register_callback = fake_register_callback;
	return &fake_st;
}

void __wrap_stonith_api_delete(stonith_t *st)
{
	(void)st;
}

bool __wrap_stonith_dispatch(stonith_t *st)
{
	(void)st;
	return true;
}

void __wrap_stonith_history_free(stonith_history_t *h)
{
	while (h) {
		stonith_history_t *next = h->next;

		free(h);
		h = next;
	}
}

static struct dlmd *cur_d;
static void settle(struct dlmd *d);

/* The fencer's history of the victim gets an entry of 'action' (its
 * clock: the real time plus 'at'); a finished one is announced as the
 * fencer does. */
static void fencer_add_action(int state, time_t at, const char *action)
{
	stonith_event_t e = { .result = state == st_done ? 0 : -1,
			      .action = (char *)action,
			      .target = (char *)"2",
			      .executioner = (char *)"n3" };

	assert_true(fencer.nhist < MAX_HIST);
	pthread_mutex_lock(&fmu);
	fencer.hist[fencer.nhist].state = state;
	fencer.hist[fencer.nhist].completed = __real_time(NULL) + at;
	fencer.hist[fencer.nhist].action = action;
	fencer.nhist++;
	pthread_mutex_unlock(&fmu);
	if (state != st_exec && fencer.notify)
		fencer.notify(&fake_st, &e);
	settle(cur_d);
}

/* The daemon of the test running (cur_d), and its loop run until no
 * read of the history is in flight (their replies handled: fence.c, THE
 * HISTORY READER).  Each turn runs the loop 1 ms; reads take
 * microseconds. */
static void stop_loop(void *data)
{
	qb_loop_stop(data);
}

static void settle(struct dlmd *d)
{
	for (int i = 0; d && i < 10000 && dlmd_fence_pcmk_reading(d); i++) {
		qb_loop_timer_handle t;

		assert_int_equal(qb_loop_timer_add(d->d_loop, QB_LOOP_HIGH,
						   1000000, d->d_loop, stop_loop,
						   &t), 0);
		qb_loop_run(d->d_loop);
	}
	assert_false(d && dlmd_fence_pcmk_reading(d));
	assert_false(bad_target);
}

/* Entry i of the history (a pending one) ends: 'state', 'at' (as above). */
static void fencer_set_state(unsigned int i, int state, time_t at)
{
	stonith_event_t e = { .result = state == st_done ? 0 : -1,
			      .action = (char *)fencer.hist[i].action,
			      .target = (char *)"2",
			      .executioner = (char *)"n3" };

	assert_true(i < fencer.nhist);
	pthread_mutex_lock(&fmu);
	fencer.hist[i].state = state;
	fencer.hist[i].completed = __real_time(NULL) + at;
	pthread_mutex_unlock(&fmu);
	if (fencer.notify)
		fencer.notify(&fake_st, &e);
	settle(cur_d);
}

/* A fencing (reboot) */
static void fencer_add(int state, time_t at)
{
	fencer_add_action(state, at, "reboot");
}

/* ---- the fake daemon group: one member, no claims ------------------- */

/* the quorum view lists the victim (it is a cluster member) */
static bool victim_in_view;

static bool up_in_group(const struct dlmd *d)
{
	(void)d;
	return false;
}

static bool up_may_claim(const struct dlmd *d, bool learned)
{
	(void)d;
	(void)learned;
	return true;
}

static unsigned int up_members(const struct dlmd *d, uint32_t *ids,
			       unsigned int max)
{
	(void)d;
	if (max < 1)
		return 0;
	ids[0] = OUR_NODE;
	return 1;
}

static bool up_quorate(const struct dlmd *d)
{
	(void)d;
	return true;
}

static bool up_quorum_has(const struct dlmd *d, uint32_t nodeid)
{
	(void)d;
	return nodeid == OUR_NODE || (victim_in_view && nodeid == VICTIM);
}

static int up_send(struct dlmd *d, bool claim, uint32_t nodeid,
		   enum dlmd_fence_status st)
{
	(void)d;
	(void)claim;
	(void)nodeid;
	(void)st;
	return 0;
}

static void up_changed(struct dlmd *d)
{
	(void)d;
}

static const struct dlmd_fence_up fake_up = {
	.fu_in_group = up_in_group,
	.fu_may_claim = up_may_claim,
	.fu_members = up_members,
	.fu_quorate = up_quorate,
	.fu_quorum_has = up_quorum_has,
	.fu_send = up_send,
	.fu_changed = up_changed,
};

/* A daemon whose fencing is pacemaker's fencer, which is 'reachable';
 * its history of the victim empty. */
static struct dlmd *daemon_pcmk(bool reachable)
{
	struct dlmd *d = calloc(1, sizeof(*d));

	assert_non_null(d);
	fencer.reachable = reachable;
	fencer.nhist = 0;
	fencer.notify = NULL;
	fencer.asked = 0;
	fencer.result_cb = NULL;
	fencer.result_data = NULL;
	fencer.action[0] = '\0';
	fencer.history_reads = 0;
	pthread_mutex_lock(&fmu);
	fencer_hangs = false;	/* a test that failed may have left it */
	hung_reads = 0;
	fencer_holds = false;
	held_reads = 0;
	reads_fail = 0;
	reads_on_test_thread = 0;
	pthread_mutex_unlock(&fmu);
	victim_in_view = false;
	dlmd_config_defaults(&d->d_cfg);
	d->d_cfg.cf_enable_fencing = true;
	d->d_cfg.cf_fence_pcmk = DLMD_FENCE_PCMK_YES;
	d->d_cfg.cf_fence_command[0] = '\0';
	d->d_nodeid = OUR_NODE;
	d->d_loop = qb_loop_create();
	assert_non_null(d->d_loop);
	assert_int_equal(dlmd_fence_init(d, &fake_up), 0);
	cur_d = d;
	return d;
}

/* Look again, as the retry timer does (past pcmk_connect's rate limit:
 * FENCE_RETRY_MS, 50 ms in this build). */
static void look_again(struct dlmd *d)
{
	usleep(100 * 1000);
	dlmd_fence_kick(d);
	settle(d);
}

static void daemon_free(struct dlmd *d)
{
	settle(d);
	dlmd_fence_fini(d);
	cur_d = NULL;
	qb_loop_destroy(d->d_loop);
	free(d);
	wall_offset = 0;
	mono_offset_ms = 0;
}

/* Node 2's dlmd joins ours, then node 2 fails (how), and the failure's
 * history read settles. */
static void victim_fails(struct dlmd *d, unsigned int how)
{
	dlmd_fence_node_joined(d, VICTIM);
	dlmd_fence_node_failed(d, VICTIM, how);
	settle(d);
}

/* victim_fails(), the fencer's history holding a fencing of node 2 in
 * state at real + at before the failure. */
static void victim_fails_after(struct dlmd *d, int state, time_t at,
			       unsigned int how)
{
	dlmd_fence_node_joined(d, VICTIM);
	fencer_add(state, at);
	dlmd_fence_node_failed(d, VICTIM, how);
	settle(d);
}

/* The fencer answers again: *flag (fencer_hangs, fencer_holds) cleared
 * and the waiting reads woken. */
static void fencer_wake(bool *flag)
{
	pthread_mutex_lock(&fmu);
	*flag = false;
	pthread_cond_broadcast(&fcond);
	pthread_mutex_unlock(&fmu);
}

/* Node 2 fails (a node-down) with this node's clock at real + offset,
 * the fencer's history of it holding an old fencing (real - 30 min: an
 * earlier incident, the node fenced, rebooted, back in the cluster: its
 * dlmd joined ours since). */
static struct dlmd *fail_with_clock(time_t offset)
{
	struct dlmd *d = daemon_pcmk(true);

	fencer_add(st_done, -HOUR / 2);
	dlmd_fence_node_joined(d, VICTIM);
	wall_offset = offset;
	dlmd_fence_node_failed(d, VICTIM, DLMD_FAIL_NODE);
	settle(d);
	assert_true(fencer.history_reads > 0);
	return d;
}

/* The control: no step.  The old fencing does not count, a new one does. */
static void test_clock_steady(void **state)
{
	struct dlmd *d;

	(void)state;
	d = fail_with_clock(0);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	fencer_add(st_done, 2);
	assert_true(dlmd_fence_is_done(d, VICTIM));
	daemon_free(d);
}

/* This node's clock an hour back (stepped, or behind the fencer's node):
 * the fencing from 30 minutes ago is still from before the failure. */
static void test_clock_back(void **state)
{
	struct dlmd *d;

	(void)state;
	d = fail_with_clock(-HOUR);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	/* a failed fencing, then a pending one: still not fenced */
	fencer_add(st_failed, 1);
	fencer_add(st_exec, 0);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	fencer_add(st_done, 2);
	assert_true(dlmd_fence_is_done(d, VICTIM));
	daemon_free(d);
}

/* This node's clock an hour forward: the fencing done a few seconds
 * after the failure (by the fencer's clock) counts. */
static void test_clock_forward(void **state)
{
	struct dlmd *d;

	(void)state;
	d = fail_with_clock(HOUR);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	fencer_add(st_done, 2);
	assert_true(dlmd_fence_is_done(d, VICTIM));
	daemon_free(d);
}

/* The clock steps after the failure, before the fencing: either way the
 * fencing counts, and only it. */
static void test_clock_steps_while_waiting(void **state)
{
	struct dlmd *d;

	(void)state;
	d = fail_with_clock(0);
	wall_offset = -HOUR;
	fencer_add(st_failed, 1);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	wall_offset = HOUR;
	fencer_add(st_done, 2);
	assert_true(dlmd_fence_is_done(d, VICTIM));
	daemon_free(d);
}

/* The fencer unreachable at the failure: nothing read then, so the
 * failure's wall-clock time decides (what remains clock-dependent): a
 * fencing from before it does not count, one after it does. */
static void test_unreachable_at_failure(void **state)
{
	struct dlmd *d = daemon_pcmk(false);

	(void)state;
	fencer.hist[0].state = st_done;
	fencer.hist[0].completed = __real_time(NULL) - HOUR / 2;
	fencer.hist[0].action = "reboot";
	fencer.nhist = 1;
	dlmd_fence_node_failed(d, VICTIM, DLMD_FAIL_NODE);
	settle(d);
	assert_int_equal(fencer.history_reads, 0);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	fencer.reachable = true;
	/* the retry connects and reads: the old one still does not count */
	look_again(d);
	assert_true(fencer.history_reads > 0);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	fencer_add(st_done, 2);
	assert_true(dlmd_fence_is_done(d, VICTIM));
	daemon_free(d);
}

/* dlmd asks the fencer (its dlmd alone died): the failure of our own
 * request passes the turn (we ask again) though this node's clock is an
 * hour ahead of the fencer's; a failure from before our request, with
 * this node's clock an hour behind, does not. */
static void test_asked_fails_clock_forward(void **state)
{
	struct dlmd *d = daemon_pcmk(true);

	(void)state;
	fencer_add(st_failed, -HOUR / 2);	/* an old failed attempt */
	wall_offset = HOUR;
	dlmd_fence_node_failed(d, VICTIM, DLMD_FAIL_DAEMON);
	settle(d);
	assert_int_equal(fencer.asked, 1);
	fencer_add(st_failed, 5);
	/* the turn passed: asked again on the retry */
	look_again(d);
	assert_int_equal(fencer.asked, 2);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	daemon_free(d);
}

static void test_asked_old_failure_clock_back(void **state)
{
	struct dlmd *d = daemon_pcmk(true);

	(void)state;
	fencer_add(st_failed, -HOUR / 2);	/* an old failed attempt */
	wall_offset = -HOUR;
	dlmd_fence_node_failed(d, VICTIM, DLMD_FAIL_DAEMON);
	settle(d);
	assert_int_equal(fencer.asked, 1);
	/* a look at the history meanwhile: ours is still on */
	look_again(d);
	assert_int_equal(fencer.asked, 1);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	fencer_add(st_done, 3);
	assert_true(dlmd_fence_is_done(d, VICTIM));
	daemon_free(d);
}

/* RESTARTED WHILE APART (plugin/cluster.c): node 2's node-down failure,
 * then it merges back with another dlmd (DLMD_FAIL_RESTARTED): it is a
 * cluster member, which pacemaker never fences by itself; dlmd asks the
 * fencer, once, and the fencing it asked for counts.  (Not asked, every
 * survivor waited for ever, fence_ack refused: the node is in the view.) */
static void test_restarted_asks_fencer(void **state)
{
	struct dlmd *d = daemon_pcmk(true);

	(void)state;
	victim_fails(d, DLMD_FAIL_NODE);
	assert_int_equal(fencer.asked, 0);	/* a node lost: pacemaker's */
	victim_in_view = true;
	dlmd_fence_node_failed(d, VICTIM, DLMD_FAIL_RESTARTED);
	settle(d);
	look_again(d);
	look_again(d);
	assert_int_equal(fencer.asked, 1);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	fencer_add(st_done, 2);
	assert_true(dlmd_fence_is_done(d, VICTIM));
	daemon_free(d);
}

/* A failure fenced in the view (here seen from a majority side): while
 * the quorum view no longer lists the node, pacemaker fences it by its
 * own policy and dlmd asks nothing; once the view lists it again (it
 * merged back before it was fenced: a member), dlmd asks. */
static void test_in_view_failure_asks_fencer(void **state)
{
	struct dlmd *d = daemon_pcmk(true);

	(void)state;
	victim_fails(d, DLMD_FAIL_MAJORITY);
	look_again(d);
	look_again(d);
	assert_int_equal(fencer.asked, 0);
	victim_in_view = true;
	look_again(d);
	assert_int_equal(fencer.asked, 1);
	look_again(d);
	assert_int_equal(fencer.asked, 1);	/* once */
	fencer_add(st_done, 2);
	assert_true(dlmd_fence_is_done(d, VICTIM));
	daemon_free(d);
}

/* An unfencing ("on": fence_scsi or fence_mpath giving a starting node
 * its storage back) after the failure kills nothing: it does not count,
 * nor does a failed or pending one of it; an "off" does. */
static void test_unfencing_does_not_count(void **state)
{
	struct dlmd *d = daemon_pcmk(true);

	(void)state;
	victim_fails(d, DLMD_FAIL_NODE);
	fencer_add_action(st_done, 2, "on");
	look_again(d);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	fencer_add_action(st_exec, 3, "on");
	look_again(d);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	fencer_add_action(st_done, 4, "off");
	assert_true(dlmd_fence_is_done(d, VICTIM));
	daemon_free(d);
}

/* dlmd's own request: an unfencing that failed meanwhile is no failure
 * of it (the turn does not pass: asked once). */
static void test_asked_unfencing_failure_ignored(void **state)
{
	struct dlmd *d = daemon_pcmk(true);

	(void)state;
	victim_fails(d, DLMD_FAIL_DAEMON);
	assert_int_equal(fencer.asked, 1);
	fencer_add_action(st_failed, 2, "on");
	look_again(d);
	assert_int_equal(fencer.asked, 1);
	fencer_add(st_done, 3);
	assert_true(dlmd_fence_is_done(d, VICTIM));
	daemon_free(d);
}

/* A connected fencer that stops answering (SIGSTOP, a deadlock): a
 * node's join must not read its history (a synchronous read there held
 * dlmd's loop for the history timeout at every join, with no failure
 * waiting: seen so in review, 30 s for three joins). */
static void test_join_reads_no_history(void **state)
{
	struct dlmd *d = daemon_pcmk(true);

	(void)state;
	dlmd_fence_node_joined(d, VICTIM);
	fencer_hangs = true;
	for (int i = 0; i < 3; i++)
		dlmd_fence_node_joined(d, VICTIM);
	pthread_mutex_lock(&fmu);
	fencer_hangs = false;
	pthread_mutex_unlock(&fmu);
	assert_int_equal(fencer.history_reads, 0);
	daemon_free(d);
}

/* A timer of the loop's: it ran. */
static void timer_ran(void *data)
{
	*(bool *)data = true;
	qb_loop_stop(cur_d->d_loop);
}

/* A connected fencer that stops answering while a node waits: each read
 * of its history waits for it (up to its timeout, 10 s).  Made on dlmd's
 * loop thread, that stalled all locking for the timeout, per read, every
 * retry (seen failing so before THE HISTORY READER: the read was made on
 * the test's thread, which waited HANG_MAX_MS).  Now the reader's thread
 * waits; the failure is recorded at once and the loop keeps serving (a
 * timer of its runs) while the read hangs; once the fencer answers again, its fencing counts. */
static void test_hung_fencer_loop_serves(void **state)
{
	struct dlmd *d = daemon_pcmk(true);
	bool ran = false;
	qb_loop_timer_handle t;

	(void)state;
	dlmd_fence_node_joined(d, VICTIM);
	fencer_hangs = true;
	dlmd_fence_node_failed(d, VICTIM, DLMD_FAIL_NODE);
	assert_int_equal(reads_on_test_thread, 0);
	/* the reader is in the hung read */
	pthread_mutex_lock(&fmu);
	while (!hung_reads)
		pthread_cond_wait(&fcond, &fmu);
	pthread_mutex_unlock(&fmu);
	assert_true(dlmd_fence_pcmk_reading(d));
	/* the loop serves meanwhile */
	assert_int_equal(qb_loop_timer_add(d->d_loop, QB_LOOP_HIGH, 1000000,
					   &ran, timer_ran, &t), 0);
	qb_loop_run(d->d_loop);
	assert_true(ran);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	assert_int_equal(reads_on_test_thread, 0);
	/* the fencer answers again: the hung read fails, the base is
	 * still wanted (the fencer is reachable: never this node's clock),
	 * the retry reads it, and a fencing after that counts */
	fencer_wake(&fencer_hangs);
	settle(d);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	look_again(d);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	fencer_add(st_done, 2);
	assert_true(dlmd_fence_is_done(d, VICTIM));
	assert_int_equal(reads_on_test_thread, 0);
	daemon_free(d);
}

/* fence_scsi cut a member off ("off"), pacemaker unfenced it again
 * ("on"), then its dlmd dies: the old "off" does not count, the node
 * has its storage back (review: a base read at the join counted it, two
 * holders). */
static void test_off_undone_by_on_does_not_count(void **state)
{
	struct dlmd *d = daemon_pcmk(true);

	(void)state;
	dlmd_fence_node_joined(d, VICTIM);
	fencer_add_action(st_done, 2, "off");
	fencer_add_action(st_done, 3, "on");
	dlmd_fence_node_failed(d, VICTIM, DLMD_FAIL_DAEMON);
	settle(d);
	look_again(d);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	daemon_free(d);
}

/* THE KNOWN STALL (session 18): pacemaker fenced node 2 before its
 * node-down reached dlmd (both follow the same membership change): that
 * fencing is in the history read at the failure, and nothing newer ever
 * comes.  Before fence_pacemaker_wait_secs dlmd asks nothing (pacemaker
 * may still be about to fence it); after it, with nothing newer and
 * nothing under way, it asks once, "reboot", and the fencing it asked
 * for counts.  (Seen failing before the fix: never asked, never fenced.) */
static void test_fenced_before_failure_asks(void **state)
{
	struct dlmd *d = daemon_pcmk(true);

	(void)state;
	/* pacemaker was first */
	victim_fails_after(d, st_done, -1, DLMD_FAIL_NODE);
	look_again(d);
	assert_int_equal(fencer.asked, 0);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	mono_offset_ms += d->d_cfg.cf_fence_pcmk_wait_secs * 1000ULL;
	look_again(d);
	assert_int_equal(fencer.asked, 1);
	assert_string_equal(fencer.action, "reboot");
	look_again(d);
	assert_int_equal(fencer.asked, 1);	/* once while it is on */
	assert_false(dlmd_fence_is_done(d, VICTIM));
	fencer_add(st_done, 2);
	assert_true(dlmd_fence_is_done(d, VICTIM));
	daemon_free(d);
}

/* What dlmd asked for failed (the device did not answer): asked again;
 * a request the fencer never shows (no result, nothing under way, long
 * past its timeout) is asked again too.  fence_pacemaker_action = off is
 * what is asked. */
static void test_stall_ask_retried(void **state)
{
	struct dlmd *d = daemon_pcmk(true);

	(void)state;
	d->d_cfg.cf_fence_pcmk_off = true;
	victim_fails(d, DLMD_FAIL_NODE);
	mono_offset_ms += d->d_cfg.cf_fence_pcmk_wait_secs * 1000ULL;
	look_again(d);
	assert_int_equal(fencer.asked, 1);
	assert_string_equal(fencer.action, "off");
	fencer_add(st_failed, 2);
	look_again(d);
	assert_int_equal(fencer.asked, 2);
	/* the second request never shows in the history */
	look_again(d);
	assert_int_equal(fencer.asked, 2);
	mono_offset_ms += 200 * 1000ULL;
	look_again(d);
	assert_int_equal(fencer.asked, 3);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	fencer_add_action(st_done, 4, "off");
	assert_true(dlmd_fence_is_done(d, VICTIM));
	daemon_free(d);
}

/* The fencer's history shows a fencing of the node under way (pacemaker's
 * own, an operator's stonith_admin): dlmd waits for it rather than ask
 * for a second (a double reboot).  A member (its dlmd alone died) is
 * asked for at once, but not while one is under way; if that one fails,
 * dlmd asks.  (Seen failing before the fix: asked at once.) */
static void test_pending_member_not_asked(void **state)
{
	struct dlmd *d = daemon_pcmk(true);

	(void)state;
	victim_in_view = true;
	victim_fails_after(d, st_exec, 0, DLMD_FAIL_DAEMON);
	look_again(d);
	assert_int_equal(fencer.asked, 0);
	/* it fails: nothing under way now, so dlmd asks */
	fencer_set_state(0, st_failed, 1);
	look_again(d);
	assert_int_equal(fencer.asked, 1);
	fencer_add(st_done, 2);
	assert_true(dlmd_fence_is_done(d, VICTIM));
	daemon_free(d);
}

/* A node lost, pacemaker's own fencing of it still under way when
 * fence_pacemaker_wait_secs is over (a slow power switch): dlmd does not
 * ask; that fencing counts when it ends. */
static void test_pending_lost_node_not_asked(void **state)
{
	struct dlmd *d = daemon_pcmk(true);

	(void)state;
	victim_fails(d, DLMD_FAIL_NODE);
	fencer_add(st_exec, 0);
	mono_offset_ms += d->d_cfg.cf_fence_pcmk_wait_secs * 1000ULL;
	look_again(d);
	look_again(d);
	assert_int_equal(fencer.asked, 0);
	fencer_set_state(0, st_done, 1);
	look_again(d);
	assert_true(dlmd_fence_is_done(d, VICTIM));
	assert_int_equal(fencer.asked, 0);
	daemon_free(d);
}

/* REVIEW: pacemaker fenced node 2 first (the known stall), its fencing
 * timestamped by the originating node's clock, 30 s ahead of the node
 * that then asks.  The fencing dlmd asked for completes, but its
 * completion time (the asker's clock) is older than the base's latest:
 * it never counts, and dlmd asks again 130 s on, and again. */
static void test_rev_skewed_originator(void **state)
{
	struct dlmd *d = daemon_pcmk(true);

	(void)state;
	/* the DC's fencing, its clock +30 s */
	victim_fails_after(d, st_done, 30, DLMD_FAIL_NODE);
	mono_offset_ms += d->d_cfg.cf_fence_pcmk_wait_secs * 1000ULL;
	look_again(d);
	assert_int_equal(fencer.asked, 1);
	fencer_add(st_done, 2);		/* ours, done: the asker's clock */
	fencer_result(0);		/* the fencer's answer to our call */
	look_again(d);
	for (int i = 0; i < 3 && !dlmd_fence_is_done(d, VICTIM); i++) {
		mono_offset_ms += 131 * 1000ULL;
		look_again(d);
		look_again(d);
		if (fencer.asked > 1 + (unsigned)i)
			fencer_add(st_done, 2 + 131 * (i + 1));	/* each done, later */
	}
	assert_int_equal(fencer.asked, 1);	
	daemon_free(d);
}

/* OUR OWN RESULT is that of this failure's request only: the success of
 * a request made for the node's previous failure (acknowledged by an
 * operator meanwhile) never counts for the next one. */
static void test_old_result_does_not_count(void **state)
{
	struct dlmd *d = daemon_pcmk(true);
	char why[128];

	(void)state;
	victim_in_view = true;		/* a member: asked for at once */
	victim_fails(d, DLMD_FAIL_DAEMON);
	look_again(d);
	assert_int_equal(fencer.asked, 1);
	victim_in_view = false;
	assert_int_equal(dlmd_fence_ack(d, VICTIM, why, sizeof(why)), 0);
	victim_fails(d, DLMD_FAIL_NODE);
	assert_int_equal(fencer.asked, 1);	/* nothing asked for it yet */
	fencer_result(0);		/* the old request's success */
	assert_false(dlmd_fence_is_done(d, VICTIM));
	daemon_free(d);
}

/* REVIEW: the reader's own connection is not watched (the loop's is):
 * after pacemaker-fenced restarts, the reader's first read fails
 * (ENOTCONN) and only then does it reconnect.  If that first read is the
 * base read of a failure, the base is unknown and this node's wall clock
 * decides: a fencing of the node's previous incarnation, done before the
 * failure but stamped by an originator whose clock is ahead of ours,
 * counts. */
static void test_rev_stale_reader_base(void **state)
{
	struct dlmd *d = daemon_pcmk(true);

	(void)state;
	dlmd_fence_node_joined(d, VICTIM);
	/* fenced 20 s before the failure, by a clock 30 s ahead of ours */
	fencer_add(st_done, 10);
	reads_fail = 1;		/* the fencer restarted since the last read */
	dlmd_fence_node_failed(d, VICTIM, DLMD_FAIL_NODE);
	settle(d);
	look_again(d);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	daemon_free(d);
}

/* The same, the read failing on the new connection too (the fencer
 * restarting still), while the loop is connected: the base is not
 * given up for this node's clock; it is read again on the retry, and
 * only a fencing newer than that counts. */
static void test_failed_base_read_again(void **state)
{
	struct dlmd *d = daemon_pcmk(true);

	(void)state;
	dlmd_fence_node_joined(d, VICTIM);
	fencer_add(st_done, 10);	/* before the failure, a clock ahead */
	pthread_mutex_lock(&fmu);
	reads_fail = PCMK_TRIES_SEEN;	/* every try of the first read */
	pthread_mutex_unlock(&fmu);
	dlmd_fence_node_failed(d, VICTIM, DLMD_FAIL_NODE);
	settle(d);
	assert_int_equal(reads_fail, 0);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	look_again(d);			/* the base, read */
	assert_false(dlmd_fence_is_done(d, VICTIM));
	fencer_add(st_done, 20);	/* a fencing after it */
	assert_true(dlmd_fence_is_done(d, VICTIM));
	daemon_free(d);
}

/* A read asked for before the failure, answered after it, is never the
 * history at the failure (fn_pcmk_base_seq): its history is older, and
 * a fencing between the two (here: of the node's previous failure,
 * which an operator acknowledged meanwhile) would count for the new
 * failure. */
static void test_read_before_failure_not_base(void **state)
{
	struct dlmd *d = daemon_pcmk(true);
	char why[128];

	(void)state;
	dlmd_fence_node_joined(d, VICTIM);
	pthread_mutex_lock(&fmu);
	fencer_holds = true;
	pthread_mutex_unlock(&fmu);
	dlmd_fence_node_failed(d, VICTIM, DLMD_FAIL_NODE);
	/* the read of the first failure took its (empty) snapshot */
	pthread_mutex_lock(&fmu);
	while (!held_reads)
		pthread_cond_wait(&fcond, &fmu);
	/* the fencer fences the node: no notification yet */
	fencer.hist[fencer.nhist].state = st_done;
	fencer.hist[fencer.nhist].completed = __real_time(NULL) + 1;
	fencer.hist[fencer.nhist].action = "reboot";
	fencer.nhist++;
	pthread_mutex_unlock(&fmu);
	assert_int_equal(dlmd_fence_ack(d, VICTIM, why, sizeof(why)), 0);
	dlmd_fence_node_joined(d, VICTIM);
	dlmd_fence_node_failed(d, VICTIM, DLMD_FAIL_NODE);
	assert_true(dlmd_fence_pcmk_reading(d));
	/* the old read answers now, then the new failure's */
	fencer_wake(&fencer_holds);
	settle(d);
	look_again(d);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	daemon_free(d);
}

/* The same, the reader's read fine: the old fencing does not count. */
static void test_rev_fresh_reader_base(void **state)
{
	struct dlmd *d = daemon_pcmk(true);

	(void)state;
	victim_fails_after(d, st_done, 10, DLMD_FAIL_NODE);
	look_again(d);
	assert_false(dlmd_fence_is_done(d, VICTIM));
	daemon_free(d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_clock_steady),
		cmocka_unit_test(test_clock_back),
		cmocka_unit_test(test_clock_forward),
		cmocka_unit_test(test_clock_steps_while_waiting),
		cmocka_unit_test(test_unreachable_at_failure),
		cmocka_unit_test(test_asked_fails_clock_forward),
		cmocka_unit_test(test_asked_old_failure_clock_back),
		cmocka_unit_test(test_restarted_asks_fencer),
		cmocka_unit_test(test_in_view_failure_asks_fencer),
		cmocka_unit_test(test_unfencing_does_not_count),
		cmocka_unit_test(test_asked_unfencing_failure_ignored),
		cmocka_unit_test(test_join_reads_no_history),
		cmocka_unit_test(test_hung_fencer_loop_serves),
		cmocka_unit_test(test_off_undone_by_on_does_not_count),
		cmocka_unit_test(test_fenced_before_failure_asks),
		cmocka_unit_test(test_stall_ask_retried),
		cmocka_unit_test(test_pending_member_not_asked),
		cmocka_unit_test(test_pending_lost_node_not_asked),
		cmocka_unit_test(test_rev_skewed_originator),
		cmocka_unit_test(test_old_result_does_not_count),
		cmocka_unit_test(test_rev_stale_reader_base),
		cmocka_unit_test(test_rev_fresh_reader_base),
		cmocka_unit_test(test_failed_base_read_again),
		cmocka_unit_test(test_read_before_failure_not_base),
	};
	struct dlmd_config cf;
	int rv;

	fencer.pipe[0] = fencer.pipe[1] = -1;
	test_thread = pthread_self();
	dlmd_config_defaults(&cf);
	if (dlmd_log_init(&cf, getenv("TFP_LOG") != NULL))
		return 1;
	rv = cmocka_run_group_tests(tests, NULL, NULL);
	dlmd_log_fini();
	return rv;
}
#else
int main(void)
{
	return 77;	/* built without pacemaker's fencing API */
}
#endif
