/*
 * core/ls.c - engine instances and lockspaces: creation, release, time,
 * message intake, statistics.
 *
 * A lockspace exists independently on every member node; instances find
 * each other's messages by the global lockspace id, a hash of the name
 * that every node computes the same way.  Membership is the sorted list
 * of member node ids given at creation; it decides which node is the
 * directory node of each resource name (resource.c).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

#define DEFAULT_TOSS_MS	10000
#define LOG_LINE_MAX	512

void dlm_core_log(struct dlm_core *core, enum dlm_log_level level,
		  const char *fmt, ...)
{
	char line[LOG_LINE_MAX];
	va_list ap;

	if (!core->core_ops.log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	core->core_ops.log(core->core_ctx, level, line);
}

struct dlm_core *dlm_core_new(const struct dlm_core_config *cfg,
			      const struct dlm_core_ops *ops, void *ctx)
{
	struct dlm_core *core;

	if (!cfg || !ops || !cfg->our_nodeid || !ops->send || !ops->ast)
		return NULL;
	core = calloc(1, sizeof(*core));
	if (!core)
		return NULL;
	core->core_cfg = *cfg;
	if (!core->core_cfg.toss_ms)
		core->core_cfg.toss_ms = DEFAULT_TOSS_MS;
	core->core_ops = *ops;
	core->core_ctx = ctx;
	dlm_list_init(&core->core_lockspaces);
	return core;
}

/* The lockspace's own memory: its tables (empty, or never filled) and
 * arrays, and the struct.  What the tables pointed to is gone already. */
static void ls_free_mem(struct dlm_ls *ls)
{
	dlm_htab_destroy(&ls->ls_rsbtbl);
	dlm_htab_destroy(&ls->ls_lkbtbl);
	dlm_htab_destroy(&ls->ls_dirtbl);
	dlm_htab_destroy(&ls->ls_ownertbl);
	dlm_htab_destroy(&ls->ls_solotbl);
	dlm_htab_destroy(&ls->ls_soloids);
	free(ls->ls_idblocks);
	free(ls->ls_members);
	free(ls->ls_parked);
	free(ls);
}

static void ls_free(struct dlm_ls *ls)
{
	dlm_recover_free_ls(ls);
	dlm_remaster_free_ls(ls);
	dlm_lock_drop_all(ls);
	dlm_list_del(&ls->ls_list);
	ls_free_mem(ls);
}

void dlm_core_free(struct dlm_core *core)
{
	if (!core)
		return;
	while (!dlm_list_empty(&core->core_lockspaces))
		ls_free(dlm_container_of(core->core_lockspaces.next,
					 struct dlm_ls, ls_list));
	dlm_objcache_drain(&core->core_lkbs);
	dlm_objcache_drain(&core->core_qwaits);
	free(core);
}

uint32_t dlm_core_nodeid(const struct dlm_core *core)
{
	return core->core_cfg.our_nodeid;
}

void dlm_core_set_fault(struct dlm_core *core, enum dlm_core_fault fault)
{
	core->core_fault = fault;
	if (fault != DLM_FAULT_NONE)
		dlm_core_log(core, DLM_LOG_WARNING,
			     "test fault %d switched on: this engine is broken on purpose",
			     (int)fault);
}

void dlm_core_tick(struct dlm_core *core, uint64_t now_ms)
{
	struct dlm_list *pos;

	if (now_ms > core->core_now)
		core->core_now = now_ms;
	core->core_ticks++;
	dlm_list_for_each(pos, &core->core_lockspaces) {
		struct dlm_ls *ls = dlm_container_of(pos, struct dlm_ls, ls_list);

		if (dlm_ls_running(ls)) {
			/* held messages finish could not take: again */
			if (!dlm_list_empty(&ls->ls_held))
				(void)dlm_held_replay_ls(ls);
			dlm_recover_redo_lookups(ls);
			dlm_redo_parked(ls);
			dlm_toss_expire(ls, core->core_now, false);
			dlm_toss_trim(ls);
			dlm_audit_tick(ls);
			dlm_deadlock_tick(ls);
		}
	}
}

uint32_t dlm_core_ls_name_to_id(const char *name)
{
	uint32_t id = dlm_hash_bytes(name, strlen(name));

	return id ? id : 1;	/* 0 means "no lockspace" on the wire */
}

bool dlm_ls_is_member(const struct dlm_ls *ls, uint32_t nodeid)
{
	unsigned int lo = 0, hi = ls->ls_nmembers;

	while (lo < hi) {
		unsigned int mid = (lo + hi) / 2;

		if (ls->ls_members[mid] == nodeid)
			return true;
		if (ls->ls_members[mid] < nodeid)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

uint32_t dlm_our_nodeid(const struct dlm_ls *ls)
{
	return ls->ls_core->core_cfg.our_nodeid;
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

int dlm_ls_set_members(struct dlm_ls *ls, const uint32_t *members,
		       unsigned int n)
{
	uint32_t *m;
	unsigned int i;

	if (n == 0 || n > DLM_MAX_NODES)
		return -EINVAL;
	m = dlm_malloc(ls->ls_core, n * sizeof(*m));
	if (!m)
		return -ENOMEM;
	memcpy(m, members, n * sizeof(*m));
	qsort(m, n, sizeof(*m), cmp_u32);
	for (i = 0; i < n; i++) {
		if (m[i] == 0 || (i && m[i] == m[i - 1])) {
			free(m);
			return -EINVAL;
		}
	}
	free(ls->ls_members);
	ls->ls_members = m;
	ls->ls_nmembers = n;
	if (!dlm_ls_is_member(ls, dlm_our_nodeid(ls)))
		return -EINVAL;
	return 0;
}

int dlm_core_ls_create(struct dlm_core *core, const char *name,
		       const uint32_t *members, unsigned int nmembers,
		       void *ls_ctx, struct dlm_ls **out)
{
	struct dlm_ls *ls;
	size_t len;
	int rv;

	if (!name || !members)
		return -EINVAL;
	len = strnlen(name, DLM_LOCKSPACE_LEN + 1);
	if (len == 0 || len > DLM_LOCKSPACE_LEN)
		return -EINVAL;
	if (dlm_core_ls_find(core, name))
		return -EEXIST;
	if (dlm_core_ls_find_id(core, dlm_core_ls_name_to_id(name))) {
		dlm_core_log(core, DLM_LOG_ERR,
			     "lockspace %s: id collides with an existing lockspace",
			     name);
		return -EEXIST;
	}
	ls = dlm_calloc(core, 1, sizeof(*ls));
	if (!ls)
		return -ENOMEM;
	ls->ls_core = core;
	ls->ls_ctx = ls_ctx;
	memcpy(ls->ls_name, name, len);
	ls->ls_id = dlm_core_ls_name_to_id(ls->ls_name);
	ls->ls_next_lkid = 1;
	dlm_list_init(&ls->ls_list);
	dlm_list_init(&ls->ls_toss);
	dlm_list_init(&ls->ls_solo_toss);
	dlm_list_init(&ls->ls_waiters);
	dlm_list_init(&ls->ls_blocked);
	dlm_list_init(&ls->ls_dlwait);
	dlm_list_init(&ls->ls_orphans);
	dlm_list_init(&ls->ls_unlock_lvbs);
	dlm_list_init(&ls->ls_rm_records);
	dlm_list_init(&ls->ls_rm_held);
	dlm_list_init(&ls->ls_dir_held);
	dlm_recover_init_ls(ls);
	rv = dlm_ls_set_members(ls, members, nmembers);
	if (rv)
		goto fail;
	rv = -ENOMEM;
	if (dlm_htab_init(&ls->ls_rsbtbl) || dlm_htab_init(&ls->ls_lkbtbl) ||
	    dlm_htab_init(&ls->ls_dirtbl) || dlm_htab_init(&ls->ls_ownertbl) ||
	    dlm_htab_init(&ls->ls_solotbl) || dlm_htab_init(&ls->ls_soloids))
		goto fail;
	dlm_list_add_tail(&ls->ls_list, &core->core_lockspaces);
	log_ls(ls, DLM_LOG_INFO, "lockspace created, id %08x, %u members",
	       ls->ls_id, ls->ls_nmembers);
	if (out)
		*out = ls;
	return 0;
fail:
	ls_free_mem(ls);
	return rv;
}

int dlm_core_ls_release(struct dlm_ls *ls, int force)
{
	size_t nlocks = ls->ls_lkbtbl.ht_count + dlm_solo_count(ls);

	if (nlocks && !force)
		return -EBUSY;
	log_ls(ls, DLM_LOG_INFO, "lockspace released%s",
	       nlocks ? " (forced, locks dropped)" : "");
	ls_free(ls);
	return 0;
}

struct dlm_ls *dlm_core_ls_find(struct dlm_core *core, const char *name)
{
	struct dlm_list *pos;

	dlm_list_for_each(pos, &core->core_lockspaces) {
		struct dlm_ls *ls = dlm_container_of(pos, struct dlm_ls, ls_list);

		if (!strcmp(ls->ls_name, name))
			return ls;
	}
	return NULL;
}

struct dlm_ls *dlm_core_ls_find_id(struct dlm_core *core, uint32_t lsid)
{
	struct dlm_list *pos;

	dlm_list_for_each(pos, &core->core_lockspaces) {
		struct dlm_ls *ls = dlm_container_of(pos, struct dlm_ls, ls_list);

		if (ls->ls_id == lsid)
			return ls;
	}
	return NULL;
}

uint32_t dlm_core_ls_id(const struct dlm_ls *ls)
{
	return ls->ls_id;
}

const char *dlm_core_ls_name(const struct dlm_ls *ls)
{
	return ls->ls_name;
}

void dlm_core_ls_stats(const struct dlm_ls *ls, struct dlm_ls_stats *st)
{
	memset(st, 0, sizeof(*st));
	/* a lone lock folded with its resource (solo.c) is a lock, a
	 * resource and its directory record; unlocked, a resource tossed
	 * and its record; one folded after its lookup has its record on
	 * the node that directs its name (counted there; here if a death
	 * made this node its directory, not: see solo.c) */
	st->ls_resources = ls->ls_rsbtbl.ht_count + ls->ls_solotbl.ht_count;
	st->ls_locks = ls->ls_lkbtbl.ht_count + dlm_solo_count(ls);
	st->ls_dir_entries = ls->ls_dirtbl.ht_count + ls->ls_ndirself +
			     ls->ls_solotbl.ht_count - ls->ls_nsolo_remote;
	/* a lookup in flight waits for a reply as much as an operation:
	 * a directory node that stops answering stalls its requesters */
	st->ls_waiters = ls->ls_nwaiters + ls->ls_nlookups;
	st->ls_orphans = ls->ls_norphans;
	st->ls_msgs_sent = ls->ls_msgs_sent;
	st->ls_msgs_received = ls->ls_msgs_received;
	st->ls_clock_rejected = ls->ls_clock_rejected;
	st->ls_stuck = ls->ls_audit_gen == ls->ls_generation ? ls->ls_nstuck : 0;
	st->ls_audits_sent = ls->ls_audits_sent;
	st->ls_deadlocks = ls->ls_deadlocks;
	st->ls_last_victim = ls->ls_last_victim;
	st->ls_probes_sent = ls->ls_probes_sent;
	st->ls_remasters = ls->ls_remasters;
	st->ls_tossed = ls->ls_ntossed + ls->ls_nsolo_tossed;
	st->ls_toss_evicted = ls->ls_toss_evicted;
	st->ls_folded = dlm_solo_count(ls);
	st->ls_folds_shared = ls->ls_folds_shared;
	st->ls_unfolds_msg = ls->ls_unfolds_msg;
	st->ls_unfolds_rec = ls->ls_unfolds_rec;
	st->ls_folds_kept_rec = ls->ls_folds_kept_rec;
	st->ls_folds_remote = ls->ls_folds_remote;
}

static int receive_ls(struct dlm_ls *ls, const struct dlm_msg *m,
		      uint32_t from, const void *buf, size_t len)
{
	int rv;

	/* a recovery message naming resources (one from a new member may
	 * come before the stop) is not taken while a lone lock is folded
	 * with one of them (solo.c, "Recovery"), once the lockspace stops;
	 * -ENOMEM offers it again.  While it runs, one is ignored or,
	 * RC_STATUS, only noted (recover.c dlm_recover_receive).  A lock
	 * message unfolds the one resource it names, if any (solo.c,
	 * "Shared lockspaces"): in dlm_lock_receive while the lockspace
	 * runs (from a member: one from a non-member is dropped below);
	 * here, before it is held, while it does not: then -ENOMEM offers
	 * it again now, and its replay at finish needs no memory for the
	 * unfold (before finish kept what it could not take, the replay
	 * lost such a message: dlm-sim --fold --faults --remaster
	 * --repoint --bounce --alloc-faults 50 --ops 300 seed 1516, a held
	 * LOOKUP never answered).  So no lock message, a stray's or a
	 * member's, costs the memory of unfolding every lone lock. */
	if (dlm_msg_is_recovery(m->m_type) && !dlm_ls_running(ls)) {
		rv = dlm_solo_unfold_rc(ls, m);
		if (rv)
			return rv;
	}
	/* what a member has minted or heard of orders our next fencing
	 * tokens (token.c), whenever we handle the message; a clock no
	 * member can have drops the message (hearing it again when it is
	 * offered again changes nothing: the highest is kept) */
	if (dlm_ls_is_member(ls, from)) {
		rv = dlm_token_heard(ls, m);
		if (rv)
			return rv;
	}
	if (dlm_msg_is_recovery(m->m_type))
		return dlm_recover_receive(ls, m, buf, len);
	if (!dlm_ls_running(ls)) {
		/* held, it finds the resource it names unfolded at its
		 * replay (nothing folds while stopped; a name folded after
		 * finish, before a held message is taken, unfolds in
		 * dlm_lock_receive as for any message) */
		rv = dlm_solo_unfold_msg(ls, m);
		if (rv)
			return rv;
		return dlm_held_add(ls, &ls->ls_held, from, buf, len);
	}
	if (!dlm_list_empty(&ls->ls_held)) {
		/* what finish could not take for want of memory goes first,
		 * in arrival order (dlm_held_replay) */
		rv = dlm_held_add(ls, &ls->ls_held, from, buf, len);
		if (rv)
			return rv;
		(void)dlm_held_replay_ls(ls);
		dlm_toss_trim(ls);
		return 0;
	}
	rv = dlm_dispatch_msg(ls, m);
	if (!rv)	/* a message not taken changes nothing */
		dlm_toss_trim(ls);
	return rv;
}

int dlm_core_receive(struct dlm_core *core, uint32_t from,
		     const void *buf, size_t len)
{
	const char *why = NULL;
	struct dlm_msg m;
	struct dlm_ls *ls;
	int rv;

	rv = dlm_msg_decode(buf, len, &m, &why);
	if (rv) {
		dlm_core_log(core, DLM_LOG_WARNING,
			     "dropped message from node %u (%zu bytes): %s",
			     from, len, why);
		return rv;
	}
	if (m.m_from != from || m.m_to != core->core_cfg.our_nodeid) {
		dlm_core_log(core, DLM_LOG_WARNING,
			     "dropped %s from node %u: header says from %u to %u",
			     dlm_msg_type_str(m.m_type), from, m.m_from, m.m_to);
		return -EBADMSG;
	}
	ls = dlm_core_ls_find_id(core, m.m_lsid);
	if (!ls) {
		dlm_core_log(core, DLM_LOG_WARNING,
			     "dropped %s from node %u: unknown lockspace %08x",
			     dlm_msg_type_str(m.m_type), from, m.m_lsid);
		return -ENOENT;
	}
	rv = receive_ls(ls, &m, from, buf, len);
	/* a message not taken (-ENOMEM: offered again later) changes
	 * nothing, not even the count: a re-offer is not a second message,
	 * and a node whose messages are all refused receives nothing */
	if (rv != -ENOMEM)
		ls->ls_msgs_received++;
	return rv;
}

/* A lock message for a running lockspace. */
int dlm_dispatch_msg(struct dlm_ls *ls, const struct dlm_msg *m)
{
	if (!dlm_ls_is_member(ls, m->m_from)) {
		log_ls(ls, DLM_LOG_WARNING,
		       "dropped %s from node %u: not a member",
		       dlm_msg_type_str(m->m_type), m->m_from);
		return -EPERM;
	}
	return dlm_lock_receive(ls, m);
}

/*
 * Messages held for later.  A message that cannot be handled yet (a lock
 * message while the lockspace is stopped, a recovery lookup before our
 * directory is complete) is kept as it arrived, bytes and all, on a list
 * in arrival order; dlm_held_replay() later decodes each again and hands
 * it to the handler it was held from.  The one way to hold, for every
 * kind of message.
 */
int dlm_held_add(struct dlm_ls *ls, struct dlm_list *q, uint32_t from,
		 const void *buf, size_t len)
{
	struct dlm_held *h = dlm_malloc(ls->ls_core, sizeof(*h) + len);

	if (!h)
		return -ENOMEM;
	h->h_from = from;
	h->h_len = len;
	memcpy(h->h_buf, buf, len);
	dlm_list_add_tail(&h->h_list, q);
	return 0;
}

/* Replay q's messages to 'handle', each once, the result ignored: only
 * for handlers that never refuse a message -ENOMEM ("not taken"), or it
 * would be lost.  Its callers (recover.c step_masters, remaster.c
 * receive_moved) say why theirs do not; a lock message held while
 * stopped can be refused, and goes through dlm_held_replay_ls. */
void dlm_held_replay(struct dlm_ls *ls, struct dlm_list *q,
		     int (*handle)(struct dlm_ls *ls, const struct dlm_msg *m))
{
	struct dlm_list todo;

	/* taken off q first: a handler may hold again */
	dlm_list_init(&todo);
	while (!dlm_list_empty(q)) {
		struct dlm_list *n = q->next;

		dlm_list_del(n);
		dlm_list_add_tail(n, &todo);
	}
	while (!dlm_list_empty(&todo)) {
		struct dlm_held *h = dlm_list_first(&todo, struct dlm_held, h_list);
		struct dlm_msg m;

		dlm_list_del(&h->h_list);
		if (!dlm_msg_decode(h->h_buf, h->h_len, &m, NULL))
			(void)handle(ls, &m);
		free(h);
	}
}

/* The lock messages held while the lockspace did not run (ls_held), at
 * finish, in arrival order.  A handler's -ENOMEM means "not taken,
 * nothing changed" (core.h), as the transport would offer it again: that
 * message and every one after it stay held, in order, offered again at
 * each tick and before each new message while ls_held is not empty
 * (receive_ls), and -ENOMEM is returned.  Dropped, a held MIGRATE_LOCK
 * replayed at finish left its lock out of the queues the MIGRATE after
 * it installed (dlm-sim --seed 92259 --ops 8000 --nodes 3 --faults
 * --remaster --repoint --rehot 64 --dir-lag 300 --bounce --partitions
 * --link-drops --alloc-faults 50: "from node 3 with 4 locks, 3 here"). */
int dlm_held_replay_ls(struct dlm_ls *ls)
{
	while (!dlm_list_empty(&ls->ls_held)) {
		struct dlm_held *h = dlm_list_first(&ls->ls_held,
						    struct dlm_held, h_list);
		struct dlm_msg m;

		/* off the list while handled (nothing holds onto ls_held
		 * while we run); back at its head if refused */
		dlm_list_del(&h->h_list);
		if (!dlm_msg_decode(h->h_buf, h->h_len, &m, NULL) &&
		    dlm_dispatch_msg(ls, &m) == -ENOMEM) {
			dlm_list_add_head(&h->h_list, &ls->ls_held);
			return -ENOMEM;
		}
		free(h);
	}
	return 0;
}

/* Forget held messages; with 'keep', only those from nodes it refuses. */
void dlm_held_drop(struct dlm_list *q, const struct dlm_ls *ls,
		   bool (*keep)(const struct dlm_ls *ls, uint32_t from))
{
	struct dlm_list *pos, *tmp;

	dlm_list_for_each_safe(pos, tmp, q) {
		struct dlm_held *h = dlm_container_of(pos, struct dlm_held, h_list);

		if (!keep || !keep(ls, h->h_from)) {
			dlm_list_del(&h->h_list);
			free(h);
		}
	}
}
