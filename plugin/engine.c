/*
 * plugin/engine.c - the glue between the lock engine (core/) and the
 * rest of the daemon: the engine's callbacks (struct dlm_core_ops) and
 * dlmd_flush(), which delivers what they queued.
 *
 * The engine must not be re-entered from its own callbacks, so the
 * callbacks only queue:
 *
 *   send      a message for another node (or for ourselves, when a
 *             resource's master is local) goes on d_msgs, copied;
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
 * This file sits below cluster.c and client.c (both call dlmd_flush) and
 * above comms.c; it never calls up by name: the AST sink and the
 * recovery reports are function pointers set once at start
 * (plugin/daemon.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/dlmd.h"

static void core_ast(void *ctx, const struct dlm_ast *ast)
{
	struct dlmd *d = ctx;
	struct dlmd_pending_ast *pa;

	if (d->d_nasts == d->d_asts_cap) {
		size_t cap = d->d_asts_cap ? d->d_asts_cap * 2 : 64;
		void *n = realloc(d->d_asts, cap * sizeof(*d->d_asts));

		if (!n) {
			log_err("out of memory queueing an AST for lock %x", ast->lkid);
			return;
		}
		d->d_asts = n;
		d->d_asts_cap = cap;
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

static void core_send(void *ctx, uint32_t to, const void *buf, size_t len)
{
	struct dlmd *d = ctx;
	struct dlmd_pending_msg *pm = malloc(sizeof(*pm) + len);

	if (!pm) {
		log_err("out of memory queueing a message for node %u", to);
		return;
	}
	pm->pm_next = NULL;
	pm->pm_to = to;
	pm->pm_len = len;
	memcpy(pm->pm_buf, buf, len);
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

int dlmd_engine_new(struct dlmd *d, const struct dlmd_engine_up *up)
{
	struct dlm_core_config ccfg;

	memset(&ccfg, 0, sizeof(ccfg));
	ccfg.our_nodeid = d->d_nodeid;
	ccfg.toss_ms = d->d_cfg.cf_toss_secs * 1000u;
	ccfg.audit_ms = d->d_cfg.cf_audit_secs * 1000u;
	d->d_engine_up = up;
	d->d_msgs_tail = &d->d_msgs;
	d->d_core = dlm_core_new(&ccfg, &engine_ops, d);
	return d->d_core ? 0 : -ENOMEM;
}

void dlmd_engine_free(struct dlmd *d)
{
	dlm_core_free(d->d_core);
	d->d_core = NULL;
	free(d->d_asts);
	d->d_asts = NULL;
	d->d_nasts = d->d_asts_cap = 0;
	while (d->d_msgs) {
		struct dlmd_pending_msg *pm = d->d_msgs;

		d->d_msgs = pm->pm_next;
		free(pm);
	}
	d->d_msgs_tail = &d->d_msgs;
}

void dlmd_flush(struct dlmd *d)
{
	/* Bounded: each round delivers what the previous produced; the
	 * engine answers a message with finitely many others. */
	while (d->d_nasts || d->d_msgs) {
		struct dlmd_pending_msg *pm = d->d_msgs;

		d->d_msgs = NULL;
		d->d_msgs_tail = &d->d_msgs;
		while (pm) {
			struct dlmd_pending_msg *next = pm->pm_next;

			if (pm->pm_to == d->d_nodeid)
				dlm_core_receive(d->d_core, d->d_nodeid, pm->pm_buf,
						 pm->pm_len);
			else
				dlmd_comms_send(d, pm->pm_to, pm->pm_buf, pm->pm_len);
			free(pm);
			pm = next;
		}
		for (size_t i = 0; i < d->d_nasts; i++)
			d->d_engine_up->eu_ast(d, &d->d_asts[i]);
		d->d_nasts = 0;
	}
	dlmd_comms_kick(d);
}
