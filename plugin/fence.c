/*
 * plugin/fence.c - making sure a failed node is dead before its locks are
 * given away.
 *
 * When corosync reports that a node FAILED (a CPG confchg with reason
 * node-down, as opposed to a clean leave or a daemon exit), recovery of
 * every lockspace that had it as a member waits until the node is known
 * fenced: otherwise a node that is merely cut off could still be writing
 * under locks the survivors are about to grant to others.
 *
 * Per node the table keeps the time of the latest failure and the time of
 * the latest successful fencing; a node is "fenced" when the second is not
 * older than the first.  How a node gets fenced is chosen at every attempt
 * (fence-policy.c holds the rule and its tests):
 *
 *   enable_fencing = 0      never waits (tests; a cluster whose storage
 *                           needs no protection): marked fenced at once.
 *   pacemaker               fence_pacemaker = yes, or auto (the default)
 *                           while dlmd is connected to pacemaker's fencer
 *                           (pacemaker-fenced, libstonithd): pacemaker
 *                           itself fences a node lost uncleanly; dlmd
 *                           waits until the fencer's history for the node
 *                           (asked by corosync node id) holds a successful
 *                           fencing ("off" or "reboot": an unfencing,
 *                           "on", kills nothing) newer than the latest one
 *                           it held at the failure: the fencer's times are
 *                           compared with each other, never with this
 *                           node's clock, which may have been stepped
 *                           (date -s, NTP's first step) or differ from
 *                           the fencer's node's by an hour.  Only if the
 *                           history could not be read at the failure
 *                           (fencer unreachable) does a fencing count
 *                           when it completed at or after the failure by
 *                           this node's clock (tests/test-fence-pcmk).
 *                           A fencing pacemaker did before the node-down
 *                           reached us (it often is first: both follow
 *                           the same membership change; or a member's
 *                           stop failure, stonith_admin) is in that
 *                           history and does not count.  (A base read at
 *                           the node's join would count it, but a
 *                           synchronous read there hung the loop when
 *                           the fencer did not answer, and an "off"
 *                           undone by a later "on" would count: two
 *                           holders with fence_scsi.)  So for a node lost
 *                           to the cluster dlmd lets pacemaker's policy
 *                           fence it for fence_pacemaker_wait_secs after
 *                           the failure, and then, with no newer fencing
 *                           and none under way in the history, asks the
 *                           fencer itself (pcmk_should_ask): a second
 *                           fencing of a node already fenced costs a
 *                           reboot, never safety, where not asking was a
 *                           wait for ever.  For a member (pacemaker
 *                           fences none by itself) it asks at once
 *                           (DLMD_FAIL_DAEMON and DLMD_FAIL_RESTARTED
 *                           below, or any failure fenced in the view
 *                           whose node the view still lists).  Either
 *                           way one survivor asks (ONE FENCER), once per
 *                           failure, never while a fencing of the node
 *                           is under way (it waits for that one), and
 *                           again when what it asked for failed or never
 *                           showed in the history.
 *                           The history is read at the failure, at every
 *                           st_notify_fence notification (the fencer's
 *                           connection fd is in the main loop) and every
 *                           FENCE_RETRY_MS as a backstop.
 *   fence_command = CMD     run "CMD NODEID" through /bin/sh; exit 0
 *                           means the node is fenced.  Anything else (a
 *                           non-zero exit, death by a signal, /bin/sh
 *                           that cannot be spawned, no process to be
 *                           had, a command still running after
 *                           fence_timeout_secs) is a failed attempt:
 *                           logged at err
 *                           (rate-limited), counted, the claim handed on
 *                           (FAILED), retried every FENCE_RETRY_MS; the
 *                           node stays unfenced (tests/test-fence-run).
 *                           One survivor runs it (ONE FENCER below) and
 *                           tells the others the result.
 *   neither                 nothing can fence: recovery waits until an
 *                           operator runs "dlmctl fence_ack NODEID".
 *
 * With fence_pacemaker = auto, losing the fencer moves pending nodes to
 * fence_command (or fence_ack) at their next attempt; the connection is
 * retried every FENCE_RETRY_MS while a node waits.  dlmd built without
 * pacemaker-dev (configure: "pacemaker's fencing API: no") has no
 * pacemaker method and rejects fence_pacemaker = yes.  The history query
 * is a synchronous call to the local fencer, made on a thread of its own
 * (THE HISTORY READER): a fencer that does not answer delays the
 * fencing it is asked about, never the loop.
 *
 * Only a quorate node runs the command, and only once the quorum view no
 * longer lists the victim (corosync reports the CPG change before the
 * quorum change, so quorum state at the moment of a failure is stale): a
 * node cut off alone would otherwise fence the majority.  Two kinds of
 * failure may be fenced while the victim is still in the view
 * (dlmd_fence_node_failed's 'how'):
 *   DLMD_FAIL_DAEMON    the victim's dlmd died with lockspaces (it left
 *                       the daemon group with proc-down) while its node
 *                       stayed up: the node is in the view and stays
 *                       there; its clients may hold locks.  With
 *                       pacemaker's fencer, dlmd asks the fencer to
 *                       fence it (pacemaker itself would not: the node
 *                       is not lost to it).
 *   DLMD_FAIL_REMOVED   messages between it and us were lost for good;
 *                       we asked corosync to remove it from the cluster
 *                       and fence it without waiting for that.
 *   DLMD_FAIL_MAJORITY  we saw the failure from a side of the daemon
 *                       group holding a strict majority of the configured
 *                       nodes: after a split that merges back before it
 *                       is fenced, the victim is in the view again
 *                       (plugin/cluster.c, SPLIT AND MERGE); the minority
 *                       side never has this mark, so it never fences the
 *                       majority.
 *   DLMD_FAIL_RESTARTED the failure was seen from a minority side, and
 *                       the node then came back afresh: its dlmd joined
 *                       our daemon group (CPG reason join), which a
 *                       merge never shows (its daemons come back with
 *                       reason node-up), or it merged back with a
 *                       dlmd other than the one that failed (it
 *                       restarted while apart: plugin/cluster.c,
 *                       RESTARTED WHILE APART).  The incarnation we lost is
 *                       gone, so this is no majority we were cut off
 *                       from; but its clients may have outlived it, and
 *                       the new incarnation itself waits to see its
 *                       failure fenced: without this mark both would
 *                       wait for ever (a node alone after two failures,
 *                       both restarted: cluster-soak's "recovery" kind).
 *                       The node is a member again: with pacemaker's
 *                       fencer, dlmd asks the fencer to fence it, as
 *                       for DLMD_FAIL_DAEMON.
 * A failure seen from the half of an even split without the tie-breaker
 * node (DLMD_FAIL_EVEN_LOSER; plugin/cluster.c, SPLIT AND MERGE) runs the
 * fence command only EVEN_SPLIT_FENCE_DELAY_MS after the failure: in a
 * two_node cluster both halves stay quorate, and without the delay a
 * blip would have each shoot the other; with it, the tie-breaker half
 * fences (or, after a merge, removes) the other first.
 * "dlmctl fence_ack" is refused for a node in the current view: it is
 * alive, and so may be its clients.
 * The command runs in a child process; its exit is noticed through
 * SIGCHLD, delivered by the libqb loop (so no handler runs inside other
 * code).  At most one command per node runs at a time.  The child is made
 * with posix_spawn(), not fork(): glibc spawns with CLONE_VM|CLONE_VFORK,
 * which copies no page tables.  After a fork() every page of dlmd's heap
 * is copy-on-write, and the recovery that follows the fencing writes
 * them all: with a million locks (gigabytes of heap) that was about 3 s
 * of page faults on the fencing node, more than the rest of its recovery
 * (bench/scale, issue 18).
 *
 * A command that never ends (an agent waiting on a switch that does not
 * answer) would hold the claim, and every lockspace the node was in,
 * for ever.  So it runs in a process group of its own, and
 * fence_timeout_secs (default 60; there is no "never") after its start
 * the group gets SIGTERM, FENCE_KILL_GRACE_MS later SIGKILL; once the
 * shell has ended, whatever of its group is left gets SIGKILL before the
 * shell is reaped (a zombie still holds the group's id, so no other
 * process can be hit).  The attempt then fails as any other ("fence
 * command for node N timed out after S s, killed"), whatever the
 * shell's status: the claim is handed on and the command retried.  A
 * command whose exit is already waiting to be reaped when its time is
 * up has not timed out (command_timer looks first).
 *
 * STUCK COMMANDS.  A fence agent in uninterruptible sleep (a hung NFS
 * mount, a dead iSCSI path) does not die on SIGKILL until the kernel
 * lets it go, which may be never.  While it ran, fn_pid held the node:
 * no new attempt started (attempt() returns while a command runs) and
 * our claim was never handed on (its result is sent when the command is
 * reaped), so the other survivors waited too, and with them every
 * lockspace the victim was in.  So FENCE_STUCK_GRACE_MS after the
 * SIGKILL a command still not ended is given up on: logged once at err
 * ("fence command pid P for node N did not exit after SIGKILL; treating
 * as failed"), counted as a failed run and a timeout, the claim handed
 * on (FAILED) and the command retried as after any failure.  This is
 * safe against fencing twice: the SIGKILL is pending, so the agent dies
 * as soon as the kernel lets it go, before it runs another instruction
 * of its own (the next attempt, ours or another survivor's, may fence
 * the victim meanwhile).  Its pid goes to a table of commands given up on (fe_stuck) and is reaped by
 * on_sigchld whenever it finally ends, after SIGKILL to what is left of
 * its group (its zombie still holds the group's id, as above).  The
 * table holds FENCE_STUCK_MAX: with it full (less the commands
 * running), no command is started, each attempt is a failed one handed
 * on to the next survivor, so a fence agent that hangs every time does
 * not fill the process table.  dlmctl status and the metrics show the
 * timeouts and the commands not reaped yet; dlmctl's description of a
 * node whose command timed out says it is being terminated.
 *
 * ONE FENCER.  A fence agent power-cycles a machine: two survivors that
 * both run it reboot the victim twice, the second time perhaps while it
 * rejoins.  So one survivor fences, and the others wait for its result.
 * The choice is made over the daemon group (plugin/cluster.c), whose
 * totally ordered stream of messages and confchgs every member sees
 * alike; fence-policy.c keeps, per failed node, the "turn" that stream
 * defines, and its rules are the only ones that matter for safety:
 *
 *   - a survivor that would fence V (the method needs an action: the
 *     fence command, or asking pacemaker's fencer to fence a node whose
 *     dlmd alone died) and passes the gates above (quorate, V out of the
 *     view or marked otherwise, the even-split delay) multicasts
 *     FENCE_CLAIM(V) instead, and acts only when its own claim is
 *     delivered while nobody else's holds.  Every member accepts the
 *     same first claim, so at most one survivor acts on V at a time,
 *     whatever each thought of the others when it claimed;
 *   - the claimer multicasts FENCE_RESULT(V): DONE once V is fenced (the
 *     command exited 0, or the fencer's history shows it), FAILED when
 *     its attempt failed (the turn passes to the next candidate), or
 *     RELEASED when it gives the claim back without a verdict (an
 *     operator's fence_ack here, or a command that started before V's
 *     latest failure: it is claimed and run again);
 *   - a claimer that leaves the daemon group (it died, or its node) loses
 *     its claim at that confchg, on every member: the next survivor
 *     takes over.  A second failure during fencing is just that: each
 *     failed node has its own turn, and the claims of the dead end.
 *
 * Who claims first is only a matter of time, not of safety: the
 * candidates are the daemon group's members but the failed nodes, lowest
 * id first, rotated to begin after the last one whose attempt failed;
 * the first candidate claims at once, the k-th only k * CLAIM_STAGGER_MS
 * after the turn became free (a failure, the end of a claim; after a
 * FAILED result, FENCE_RETRY_MS later), so a candidate that says nothing
 * (hung, or a dlmd that does not know these messages) delays fencing but
 * never blocks it.
 *
 * A survivor that learns the result from another logs "node V fenced by
 * node X" and counts it only if the claim it answers was accepted after
 * its own record of V's failure (a fencing that began before the failure
 * may have missed it): a failure recorded at a daemon group confchg is
 * recorded by every member at the same point, before any claim for it.
 * A member that joined later has not seen the claims made before its
 * join.  So at the start of every sync (a confchg that adds a member;
 * cluster.c, State transfer) a claimer multicasts its claims again,
 * before its ANNOUNCE: by the end of the sync every member holds the
 * same turns (a repeated claim of the holder changes nothing for the
 * others).  Until its first sync has ended a daemon claims nothing, and
 * a failure it learned from another's FAILED record (cluster.c,
 * Recorded failures) it does not claim while a sync runs; it counts any
 * DONE delivered after that record.
 *
 * Pacemaker: a node lost to the cluster is fenced by pacemaker's own
 * policy, which dlmd does not duplicate while it may still come (for
 * fence_pacemaker_wait_secs) or is under way; every dlmd reads the
 * fencer's history for itself (the history is cluster-wide).  Only the
 * request dlmd makes itself (a member, or a lost node no newer fencing
 * answered in the wait) follows the claim, so one survivor asks; a DONE
 * from it also counts.  fence_ack stays an
 * operator's word to one dlmd, as before: it is not multicast.
 *
 * Mixed versions.  FENCE_CLAIM and FENCE_RESULT are types 6 and 7 of CPG
 * protocol version 2, added without a version change, and we fall back
 * rather than refuse: a version-2 dlmd that does not know them ignores
 * them (cluster.c drops every type it does not know) and runs the fence
 * command itself, as every dlmd did before.  Recovery stays safe: each
 * dlmd still goes on only after a fencing it ran, or one it was told of
 * that began after the failure.  Such a peer never claims, so where it
 * is the first candidate the next one claims CLAIM_STAGGER_MS later; a
 * mixed cluster fences a failed node once per old dlmd plus once, and
 * once the upgrade is complete exactly once.  Refusing the mix would
 * instead hold every lockspace's membership changes (a version mismatch
 * stops the daemon group's sync), which would make a rolling upgrade
 * impossible.
 *
 * FORGIVEN.  After a split that merges back, cluster.c may establish,
 * the same way on every member, that nobody acted on a node's failure
 * and that the node is back as the same process (cluster.c, FORGIVING A
 * SPLIT); it then drops the pending failure unfenced
 * (dlmd_fence_forgive): logged at info with what and why (cluster.c
 * says once per merge, at warning, which failures it forgave), counted in
 * status fence_forgiven, the node marked as fenced by no method that
 * stops it (as fence_ack does), so its next failure is a new one.  What
 * cluster.c's FAILED records need to know of a pending failure is
 * dlmd_fence_marks(): FENCING (a claim or result for it was delivered
 * since the failure, our claim is on its way, our command runs, or
 * pacemaker's fencer has a fencing of it under way) and
 * FIRM (a dlmd failure, one seen from a majority or the tie-breaker half,
 * the other half of an even split, a removal, a restart).
 *
 * Limits.
 *  - After a merge the two sides' claims meet: a node both sides claimed
 *    (one they both lost) may be fenced by each.
 *  - A claimer whose dlmd hangs without leaving the daemon group holds
 *    the claim until it leaves.  Its fence agent hanging does not:
 *    fence_timeout_secs kills it.
 *  - A fence agent stuck where SIGKILL does not reach it (uninterruptible
 *    sleep in the kernel, on a hung NFS mount or a dead iSCSI path) is
 *    not waited for: see STUCK COMMANDS.  Each one is a process (and a
 *    process group) dlmd holds until it ends, FENCE_STUCK_MAX at most.
 *  - A claimer's dlmd that dies while its node lives leaves its fence
 *    agent running (a child of a dead process): if that agent still
 *    succeeds, the survivor that took over fences the victim a second
 *    time.  A node that dies takes its agent with it.
 *  - A node removed for lost frames (DLMD_FAIL_REMOVED) is fenced at
 *    once by the remover, before the others record its failure: they do
 *    not count that fencing and fence it once more.  A node fenced
 *    while its dlmd is still in the group, which leaves it after the
 *    fencing ends, is not fenced again by the fencer or by those that
 *    counted its DONE: its incarnation (the time of its latest join,
 *    or of our own join for one in the group before us: cluster.c
 *    reports those too) was the one the claim was taken against
 *    (fn_fenced_joined_at).
 *    A daemon that only learned of the failure (fn_learned), or a
 *    fencing by pacemaker or fence_ack, does not know which incarnation
 *    it stopped and records the leave as a new failure.
 *  - Without a daemon group (membership = none) a daemon fences by
 *    itself.
 */
#include <errno.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <time.h>

#ifdef HAVE_PACEMAKER_FENCING
#include <crm/stonith-ng.h>
#endif

#include "plugin/dlmd.h"

/* the k-th candidate claims k * this after the turn became free */
#define CLAIM_STAGGER_MS	2000
#define EVEN_SPLIT_FENCE_DELAY_MS 5000	/* DLMD_FAIL_EVEN_LOSER */
#define PCMK_CLIENT_NAME	"dlmd"
/* the timeout given to libstonithd's history(); libstonithd itself
 * waits up to 1000 * (this + 60) ms for the answer (its IPC timeout):
 * a read of a fencer that does not answer takes 70 s, and the reads of
 * every node waiting are made one after the other (THE HISTORY READER) */
#define PCMK_HISTORY_TIMEOUT_S	10
/* tries of one read: a failed one (not the fencer's silence) is made
 * again once on a new connection (THE HISTORY READER) */
#define PCMK_READ_TRIES		2
#define PCMK_FENCE_TIMEOUT_S	120
#define FENCE_LOG_INTERVAL_MS	10000
#define FENCE_CMD_MAX		1024
/* Timings a test may shorten (tests/test-fence-run builds this file
 * with smaller ones; the logic is the same) */
#ifndef FENCE_RETRY_MS
#define FENCE_RETRY_MS		2000
#endif
/* SIGTERM to SIGKILL of a fence command that timed out */
#ifndef FENCE_KILL_GRACE_MS
#define FENCE_KILL_GRACE_MS	3000
#endif
/* SIGKILL to giving up on it (STUCK COMMANDS) */
#ifndef FENCE_STUCK_GRACE_MS
#define FENCE_STUCK_GRACE_MS	3000
#endif
/* commands given up on, not reaped yet, that dlmd keeps track of */
#ifndef FENCE_STUCK_MAX
#define FENCE_STUCK_MAX		8
#endif
#define NS_PER_MS		1000000ULL

struct fence_node {
	struct dlmd_fence *fn_fe;	/* the table; the retry timer's argument */
	uint32_t	fn_nodeid;
	uint64_t	fn_failed_at;	/* ms; 0 = never failed */
	/* the fencer's history at the failure (read by the failure's
	 * first attempt, if it can be: fn_pcmk_base_wanted meanwhile) */
	struct dlmd_fence_pcmk_mark fn_pcmk_since;
	bool		fn_pcmk_base_wanted;
	enum dlmd_fence_method fn_method;	/* of the latest attempt */
	bool		fn_pcmk_pending;	/* the fencer has an operation on it */
	bool		fn_pcmk_asked;	/* we asked the fencer to fence it */
	uint64_t	fn_pcmk_asked_at;	/* ms, when */
	int		fn_pcmk_call;	/* its call id (OUR OWN RESULT); 0: none */
	struct dlmd_fence_pcmk_mark fn_pcmk_ask;	/* the history then */
	/* the latest read of its history: whether it worked, and the
	 * latest successful and failed fencing in it (ns) */
	bool		fn_pcmk_read_ok;
	int64_t		fn_pcmk_last_done;
	int64_t		fn_pcmk_last_failed;
	int64_t		fn_pcmk_last_done_s;	/* the same, seconds */
	int64_t		fn_pcmk_last_failed_s;
	/* THE HISTORY READER: our read of its history in flight (its
	 * number), another wanted after it, and the first read whose
	 * reply is the history at the failure (fn_pcmk_base_wanted) */
	bool		fn_pcmk_inflight;
	bool		fn_pcmk_again;
	uint32_t	fn_pcmk_seq;
	uint32_t	fn_pcmk_base_seq;
	uint64_t	fn_fenced_at;	/* ms; 0 = never fenced */
	pid_t		fn_pid;		/* running command (and its process
					 * group), or 0 */
	uint64_t	fn_started_at;	/* when the running command began */
	/* fence_timeout_secs after the start, then FENCE_KILL_GRACE_MS
	 * after the SIGTERM (command_timer) */
	bool		fn_cmd_timer_armed;
	qb_loop_timer_handle fn_cmd_timer;
	bool		fn_timed_out;	/* the running command was; SIGTERM sent */
	bool		fn_sigkilled;	/* and then SIGKILL */
	uint64_t	fn_last_log;
	uint64_t	fn_last_fail_log;	/* of a failed command */
	unsigned int	fn_attempts;
	/* The victim may be fenced while the quorum view still lists it:
	 * its daemon died with its node up (DLMD_FAIL_DAEMON), or its
	 * failure was seen from a side holding a majority of the nodes
	 * (DLMD_FAIL_MAJORITY).  Otherwise only once the view drops it. */
	bool		fn_in_view_ok;
	bool		fn_daemon;	/* the latest failure was dlmd's alone */
	/* the node is a cluster member while its failure waits (its dlmd
	 * died with the node up, or it came back: DLMD_FAIL_RESTARTED):
	 * pacemaker does not fence a member by itself, dlmd asks it */
	bool		fn_member;
	bool		fn_killed;	/* fenced by a method that stops it (not
					 * fence_ack, not enable_fencing = 0) */
	bool		fn_retry_armed;
	qb_loop_timer_handle fn_retry;
	/* the fence command not before this (ms; DLMD_FAIL_EVEN_LOSER) */
	uint64_t	fn_not_before;
	/* Its incarnations, by the time (ms) we saw its dlmd join our daemon
	 * group (0: before us): the latest one, the one the running command
	 * was started against, and the one the last successful command
	 * fenced.  A node that leaves when no join came since our command
	 * fenced it is that fenced incarnation going: nothing to fence. */
	uint64_t	fn_joined_at;
	uint64_t	fn_cmd_joined_at;
	uint64_t	fn_fenced_joined_at;
	uint64_t	fn_claim_joined_at;	/* fn_joined_at when the
						 * current claim was taken:
						 * what its DONE fenced */
	/* ONE FENCER: the claim on fencing it, the same on every member */
	struct dlmd_fence_turn fn_turn;
	uint32_t	fn_claims;	/* claims accepted so far */
	uint32_t	fn_failed_claims; /* fn_claims at the latest failure */
	uint64_t	fn_turn_at;	/* ms: the turn is free from then on */
	bool		fn_claim_sent;	/* our FENCE_CLAIM is on its way */
	bool		fn_result_sent;	/* our FENCE_RESULT is: not ours now */
	bool		fn_learned;	/* from another's record, not seen */
	/* a FENCE_CLAIM or FENCE_RESULT for it was delivered since its
	 * latest failure (dlmd_fence_marks) */
	bool		fn_fencing_seen;
	uint32_t	fn_fenced_by;	/* the peer whose DONE counted; 0: us */
};

/* A fence command that did not exit after SIGKILL (STUCK COMMANDS). */
struct fence_stuck {
	pid_t		fs_pid;		/* and its process group */
	uint32_t	fs_nodeid;
	uint64_t	fs_since;	/* ms: given up on then */
};

struct dlmd_fence {
	struct dlmd		*fe_d;
	const struct dlmd_fence_up *fe_up;	/* cluster.c's */
	struct fence_node	fe_nodes[DLM_MAX_NODES];
	unsigned int		fe_nnodes;
	struct fence_stuck	fe_stuck[FENCE_STUCK_MAX];
	unsigned int		fe_nstuck;
	bool			fe_sigchld;
	bool			fe_pcmk_connected;
	uint64_t		fe_pcmk_last_try;	/* ms of the last connect */
#ifdef HAVE_PACEMAKER_FENCING
	stonith_t		*fe_st;
	int			fe_st_fd;
	/* THE HISTORY READER: its thread, and our ends of its pipes */
	bool			fe_rd_running;
	pthread_t		fe_rd_thread;
	int			fe_rd_req;	/* requests, written */
	int			fe_rd_rep;	/* replies, read (in the loop) */
#endif
};

static struct fence_node *fnode(struct dlmd_fence *fe, uint32_t nodeid,
				bool create)
{
	for (unsigned int i = 0; i < fe->fe_nnodes; i++)
		if (fe->fe_nodes[i].fn_nodeid == nodeid)
			return &fe->fe_nodes[i];
	if (!create || fe->fe_nnodes >= DLM_MAX_NODES)
		return NULL;
	memset(&fe->fe_nodes[fe->fe_nnodes], 0, sizeof(fe->fe_nodes[0]));
	fe->fe_nodes[fe->fe_nnodes].fn_fe = fe;
	fe->fe_nodes[fe->fe_nnodes].fn_nodeid = nodeid;
	return &fe->fe_nodes[fe->fe_nnodes++];
}

static bool is_fenced(const struct fence_node *fn)
{
	return !fn->fn_failed_at || fn->fn_fenced_at >= fn->fn_failed_at;
}

static void run_command(struct dlmd_fence *fe, struct fence_node *fn);
static void attempt(struct dlmd_fence *fe, struct fence_node *fn);

/* Are claims made over the daemon group (we are in it)? */
static bool claims_on(const struct dlmd_fence *fe)
{
	return fe->fe_up->fu_in_group(fe->fe_d);
}

/* Does our claim on fencing fn hold (and is it not being given back)? */
static bool we_hold(const struct dlmd_fence *fe, const struct fence_node *fn)
{
	return claims_on(fe) && fn->fn_turn.ft_claimer == fe->fe_d->d_nodeid &&
	       !fn->fn_result_sent;
}

/* End our claim with a result (nothing if we hold none). */
static void send_result(struct dlmd_fence *fe, struct fence_node *fn,
			enum dlmd_fence_status st)
{
	int rv;

	if (!we_hold(fe, fn))
		return;
	rv = fe->fe_up->fu_send(fe->fe_d, false, fn->fn_nodeid, st);
	if (rv) {
		log_err("fencing: cannot tell the others about node %u: %s",
			fn->fn_nodeid, strerror(-rv));
		return;
	}
	fn->fn_result_sent = true;
	log_info("fencing: node %u: our claim ends (%s)", fn->fn_nodeid,
		 st == DLMD_FENCE_DONE ? "fenced" : st == DLMD_FENCE_FAILED ?
		 "our attempt failed: the next survivor takes over" :
		 "given back");
}

static void fenced(struct dlmd_fence *fe, struct fence_node *fn, const char *how,
		   bool killed)
{
	/* the others learn it from us if the claim is ours; an operator's
	 * word is ours alone: the claim goes back without a verdict */
	bool was_waiting = !is_fenced(fn);

	send_result(fe, fn, killed ? DLMD_FENCE_DONE : DLMD_FENCE_RELEASED);
	fn->fn_killed = killed;
	fn->fn_fenced_joined_at = 0;	/* the command path sets it after */
	fn->fn_fenced_at = dlmd_now_ms();
	if (fn->fn_fenced_at < fn->fn_failed_at)
		fn->fn_fenced_at = fn->fn_failed_at;
	if (was_waiting)
		fe->fe_d->d_metrics.m_fence_wait_ns +=
			(fn->fn_fenced_at - fn->fn_failed_at) * NS_PER_MS;
	log_notice("fencing: node %u is fenced (%s)", fn->fn_nodeid, how);
	fe->fe_up->fu_changed(fe->fe_d);
}

/* The retry timer's argument is the node's entry itself: entries never
 * move (a fixed array, only appended to), so nothing is allocated for it
 * and dlmd_fence_fini() only has to delete an armed timer. */
static void retry_timer(void *data)
{
	struct fence_node *fn = data;

	fn->fn_retry_armed = false;
	if (!is_fenced(fn) && !fn->fn_pid)
		attempt(fn->fn_fe, fn);
}

static void schedule_retry_in(struct dlmd_fence *fe, struct fence_node *fn,
			      uint64_t ms)
{
	if (fn->fn_retry_armed)
		return;
	if (qb_loop_timer_add(fe->fe_d->d_loop, QB_LOOP_LOW, ms * NS_PER_MS, fn,
			      retry_timer, &fn->fn_retry) == 0)
		fn->fn_retry_armed = true;
}

static void schedule_retry(struct dlmd_fence *fe, struct fence_node *fn)
{
	schedule_retry_in(fe, fn, FENCE_RETRY_MS);
}

/* May a fencing of fn be started by this node now (or claimed)?  If
 * not, says why (rate-limited) and retries later. */
static bool gate(struct dlmd_fence *fe, struct fence_node *fn)
{
	uint64_t now = dlmd_now_ms();

	/* Only a quorate partition fences (dlm_controld's
	 * enable_quorum_fencing): a node cut off alone must not shoot the
	 * majority.  Retried until quorum comes or the node is fenced. */
	if (!fe->fe_up->fu_quorate(fe->fe_d) ||
	    (fe->fe_up->fu_quorum_has(fe->fe_d, fn->fn_nodeid) &&
	     !fn->fn_in_view_ok)) {
		if (now - fn->fn_last_log >= FENCE_LOG_INTERVAL_MS) {
			log_notice("fencing: node %u waits for a quorate view "
				   "without it%s", fn->fn_nodeid,
				   fe->fe_up->fu_quorate(fe->fe_d) ? " (its failure "
				   "was seen from a minority side)" : "");
			fn->fn_last_log = now;
		}
		schedule_retry(fe, fn);
		return false;
	}
	/* The half of an even split without the tie-breaker gives the other
	 * half time to fence us first (as pcmk_delay_base on one node of a
	 * two_node cluster): a blip that merges back within it is then
	 * resolved by the tie-breaker half removing us, not by both halves
	 * shooting each other. */
	if (now < fn->fn_not_before) {
		if (now - fn->fn_last_log >= FENCE_LOG_INTERVAL_MS) {
			log_notice("fencing: node %u in %llu ms (we are the half of "
				   "an even split without the tie-breaker node)",
				   fn->fn_nodeid,
				   (unsigned long long)(fn->fn_not_before - now));
			fn->fn_last_log = now;
		}
		schedule_retry(fe, fn);
		return false;
	}
	return true;
}

extern char **environ;

/* Start "/bin/sh -c LINE" with no signal blocked (the loop blocks some);
 * 0 or an errno. */
static int spawn_sh(const char *line, pid_t *pid)
{
	char *argv[] = { "sh", "-c", (char *)line, NULL };
	posix_spawnattr_t attr;
	sigset_t none;
	int rv;

	rv = posix_spawnattr_init(&attr);
	if (rv)
		return rv;
	sigemptyset(&none);
	rv = posix_spawnattr_setsigmask(&attr, &none);
	/* a process group of its own (its id is the child's pid): what
	 * the shell starts is killed with it when it times out */
	if (!rv)
		rv = posix_spawnattr_setpgroup(&attr, 0);
	if (!rv)
		rv = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK |
					      POSIX_SPAWN_SETPGROUP);
	if (!rv)
		rv = posix_spawn(pid, "/bin/sh", NULL, &attr, argv, environ);
	posix_spawnattr_destroy(&attr);
	return rv;
}

/* Our attempt with the fence command failed ('what', 'detail'): said at
 * err, the first time after the failure and then at most every
 * FENCE_LOG_INTERVAL_MS; the claim goes to the next survivor and we try
 * again FENCE_RETRY_MS later.  The node stays unfenced: recovery waits. */
static void command_failed(struct dlmd_fence *fe, struct fence_node *fn,
			   const char *what, const char *detail)
{
	uint64_t now = dlmd_now_ms();

	if (fn->fn_attempts <= 1 || now - fn->fn_last_fail_log >= FENCE_LOG_INTERVAL_MS) {
		log_err("fencing: node %u not fenced: %s (%s), attempt %u; "
			"retrying in %d ms", fn->fn_nodeid, what, detail,
			fn->fn_attempts, FENCE_RETRY_MS);
		fn->fn_last_fail_log = now;
	} else {
		log_debug("fencing: node %u not fenced: %s (%s), attempt %u",
			  fn->fn_nodeid, what, detail, fn->fn_attempts);
	}
	send_result(fe, fn, DLMD_FENCE_FAILED);
	schedule_retry(fe, fn);
}

/* Has the child pid ended (not reaped yet: its process group id cannot
 * be reused while it is a zombie)? */
static bool has_exited(pid_t pid)
{
	siginfo_t si;

	si.si_pid = 0;
	return waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
	       si.si_pid == pid;
}

static void stop_cmd_timer(struct dlmd_fence *fe, struct fence_node *fn)
{
	if (fn->fn_cmd_timer_armed) {
		qb_loop_timer_del(fe->fe_d->d_loop, fn->fn_cmd_timer);
		fn->fn_cmd_timer_armed = false;
	}
}

static void arm_cmd_timer(struct dlmd_fence *fe, struct fence_node *fn,
			  uint64_t ms);

/* Fence commands running now. */
static unsigned int commands_running(const struct dlmd_fence *fe)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < fe->fe_nnodes; i++)
		n += fe->fe_nodes[i].fn_pid != 0;
	return n;
}

/* The running command did not end FENCE_STUCK_GRACE_MS after SIGKILL
 * (STUCK COMMANDS): a failed attempt, handed on and retried; its pid is
 * kept to be reaped when it ends.  run_command starts no command
 * without room for it in fe_stuck, so there is room. */
static void command_stuck(struct dlmd_fence *fe, struct fence_node *fn)
{
	struct fence_stuck *fs;

	if (fe->fe_nstuck >= FENCE_STUCK_MAX) {
		/* cannot happen (run_command); if it did, wait for it */
		log_err("fencing: fence command pid %d for node %u did not exit "
			"after SIGKILL; no room to give up on it", (int)fn->fn_pid,
			fn->fn_nodeid);
		return;
	}
	fs = &fe->fe_stuck[fe->fe_nstuck++];

	fs->fs_pid = fn->fn_pid;
	fs->fs_nodeid = fn->fn_nodeid;
	fs->fs_since = dlmd_now_ms();
	fn->fn_pid = 0;
	fe->fe_d->d_metrics.m_fence_runs_failed++;
	fe->fe_d->d_metrics.m_fence_timeouts++;
	log_err("fencing: fence command pid %d for node %u did not exit after "
		"SIGKILL; treating as failed", (int)fs->fs_pid, fn->fn_nodeid);
	command_failed(fe, fn, "fence_command timed out",
		       "it did not exit after SIGKILL");
}

/*
 * The running command's time is up (fence_timeout_secs): its process
 * group gets SIGTERM, and FENCE_KILL_GRACE_MS later SIGKILL; the attempt
 * fails when the command is reaped (on_sigchld), whatever its status.  A
 * command that ended just now, its SIGCHLD not yet handled, is left to
 * on_sigchld: it did not time out.
 */
static void command_timer(void *data)
{
	struct fence_node *fn = data;
	struct dlmd_fence *fe = fn->fn_fe;

	fn->fn_cmd_timer_armed = false;
	if (!fn->fn_pid || has_exited(fn->fn_pid))
		return;
	if (!fn->fn_timed_out) {
		log_warn("fencing: fence command for node %u still running after "
			 "%u s: terminating it", fn->fn_nodeid,
			 fe->fe_d->d_cfg.cf_fence_timeout_secs);
		fn->fn_timed_out = true;
		kill(-fn->fn_pid, SIGTERM);
		arm_cmd_timer(fe, fn, FENCE_KILL_GRACE_MS);
		return;
	}
	if (!fn->fn_sigkilled) {
		log_warn("fencing: fence command for node %u ignored SIGTERM for "
			 "%d ms: killing it", fn->fn_nodeid, FENCE_KILL_GRACE_MS);
		fn->fn_sigkilled = true;
		kill(-fn->fn_pid, SIGKILL);
		arm_cmd_timer(fe, fn, FENCE_STUCK_GRACE_MS);
		return;
	}
	command_stuck(fe, fn);
}

static void arm_cmd_timer(struct dlmd_fence *fe, struct fence_node *fn,
			  uint64_t ms)
{
	if (qb_loop_timer_add(fe->fe_d->d_loop, QB_LOOP_LOW, ms * NS_PER_MS, fn,
			      command_timer, &fn->fn_cmd_timer) == 0)
		fn->fn_cmd_timer_armed = true;
	else
		log_err("fencing: cannot time the fence command for node %u",
			fn->fn_nodeid);
}

/* At exit: a running command's process group gets SIGTERM, SIGKILL
 * after FENCE_KILL_GRACE_MS, and the command is reaped if it ends
 * within FENCE_STUCK_GRACE_MS (one that does not would hold dlmd's exit
 * for ever: STUCK COMMANDS). */
static void stop_group(pid_t pid)
{
	struct timespec tick = { 0, 10 * (long)NS_PER_MS };

	kill(-pid, SIGTERM);
	for (int i = 0; i < FENCE_KILL_GRACE_MS / 10 && !has_exited(pid); i++)
		nanosleep(&tick, NULL);
	kill(-pid, SIGKILL);
	for (int i = 0; i < FENCE_STUCK_GRACE_MS / 10 && !has_exited(pid); i++)
		nanosleep(&tick, NULL);
	if (waitpid(pid, NULL, WNOHANG) != pid)
		log_err("fencing: fence command pid %d did not exit after "
			"SIGKILL; dlmd exits without it", (int)pid);
}

static void run_command(struct dlmd_fence *fe, struct fence_node *fn)
{
	const char *cmd = fe->fe_d->d_cfg.cf_fence_command;
	char line[FENCE_CMD_MAX + 16];
	uint64_t now = dlmd_now_ms();
	pid_t pid;
	int rv;

	if (!gate(fe, fn))
		return;
	/* room in fe_stuck for every command running, this one too */
	if (fe->fe_nstuck + commands_running(fe) >= FENCE_STUCK_MAX) {
		char detail[96];

		fn->fn_attempts++;
		fe->fe_d->d_metrics.m_fence_runs_failed++;
		snprintf(detail, sizeof(detail), "%u fence commands did not exit "
			 "after SIGKILL", fe->fe_nstuck);
		command_failed(fe, fn, "not started", detail);
		return;
	}
	snprintf(line, sizeof(line), "%s %u", cmd, fn->fn_nodeid);
	rv = spawn_sh(line, &pid);
	if (rv) {
		/* /bin/sh could not be run (posix_spawn says so itself where
		 * a forked child exited 127), or no process could be made
		 * (ENOMEM, EAGAIN: as a fork that failed): a failed attempt,
		 * retried, and the turn goes to the next survivor, which may
		 * have the resources we lack */
		fn->fn_attempts++;
		fe->fe_d->d_metrics.m_fence_runs_failed++;
		command_failed(fe, fn, "cannot run /bin/sh", strerror(rv));
		return;
	}
	fn->fn_pid = pid;
	fn->fn_started_at = now;
	fn->fn_timed_out = false;
	fn->fn_sigkilled = false;
	arm_cmd_timer(fe, fn, (uint64_t)fe->fe_d->d_cfg.cf_fence_timeout_secs *
		      1000);
	fn->fn_cmd_joined_at = fn->fn_joined_at;
	fn->fn_attempts++;
	if (fn->fn_attempts == 1 || now - fn->fn_last_log >= FENCE_LOG_INTERVAL_MS) {
		log_notice("fencing: running '%s' (attempt %u)", line,
			   fn->fn_attempts);
		fn->fn_last_log = now;
	}
}

/* Reap the commands given up on that have ended at last (STUCK
 * COMMANDS), after SIGKILL to what is left of their groups. */
static void reap_stuck(struct dlmd_fence *fe)
{
	uint64_t now = dlmd_now_ms();

	for (unsigned int i = 0; i < fe->fe_nstuck;) {
		struct fence_stuck *fs = &fe->fe_stuck[i];

		if (!has_exited(fs->fs_pid)) {
			i++;
			continue;
		}
		kill(-fs->fs_pid, SIGKILL);
		waitpid(fs->fs_pid, NULL, WNOHANG);
		log_notice("fencing: fence command pid %d for node %u ended %llu "
			   "ms after it was given up on: reaped", (int)fs->fs_pid,
			   fs->fs_nodeid, (unsigned long long)(now - fs->fs_since));
		*fs = fe->fe_stuck[--fe->fe_nstuck];
	}
}

static int32_t on_sigchld(int32_t sig, void *data)
{
	struct dlmd_fence *fe = data;

	reap_stuck(fe);
	for (unsigned int i = 0; i < fe->fe_nnodes; i++) {
		struct fence_node *fn = &fe->fe_nodes[i];
		int status;
		pid_t p;

		if (!fn->fn_pid)
			continue;
		/* what the shell of a timed-out command left running dies
		 * with it (the zombie still holds the group's id) */
		if (fn->fn_timed_out && has_exited(fn->fn_pid))
			kill(-fn->fn_pid, SIGKILL);
		p = waitpid(fn->fn_pid, &status, WNOHANG);
		if (p != fn->fn_pid)
			continue;
		fn->fn_pid = 0;
		stop_cmd_timer(fe, fn);
		if (fn->fn_timed_out) {
			/* failed, even if it exited 0 on the SIGTERM */
			fe->fe_d->d_metrics.m_fence_runs_failed++;
			fe->fe_d->d_metrics.m_fence_timeouts++;
			log_err("fencing: fence command for node %u timed out "
				"after %u s, killed", fn->fn_nodeid,
				fe->fe_d->d_cfg.cf_fence_timeout_secs);
			command_failed(fe, fn, "fence_command timed out",
				       WIFSIGNALED(status) &&
				       WTERMSIG(status) == SIGKILL ?
				       "it ignored SIGTERM" : "it ended on SIGTERM");
			continue;
		}
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			fe->fe_d->d_metrics.m_fence_runs_ok++;
		else
			fe->fe_d->d_metrics.m_fence_runs_failed++;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			/* only a command started after the failure counts */
			if (fn->fn_started_at >= fn->fn_failed_at) {
				fn->fn_attempts = 0;
				fenced(fe, fn, "fence_command exit 0", true);
				fn->fn_fenced_joined_at = fn->fn_cmd_joined_at;
			} else {
				/* claimed again: the others count only a
				 * claim made after the failure */
				send_result(fe, fn, DLMD_FENCE_RELEASED);
				attempt(fe, fn);
			}
		} else {
			char how[32];

			if (WIFSIGNALED(status))
				snprintf(how, sizeof(how), "killed by signal %d",
					 WTERMSIG(status));
			else
				snprintf(how, sizeof(how), "exit status %d",
					 WEXITSTATUS(status));
			command_failed(fe, fn, "fence_command failed", how);
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* pacemaker's fencer                                                   */
/* ------------------------------------------------------------------ */

#ifdef HAVE_PACEMAKER_FENCING
/* libstonithd's notification callback has no user pointer: the one
 * fencing table of this process (one daemon per process). */
static struct dlmd_fence *pcmk_fence;

static void pcmk_disconnect(struct dlmd_fence *fe, bool in_dispatch)
{
	if (!fe->fe_st)
		return;
	if (!in_dispatch && fe->fe_st_fd >= 0)
		qb_loop_poll_del(fe->fe_d->d_loop, fe->fe_st_fd);
	stonith_api_delete(fe->fe_st);
	fe->fe_st = NULL;
	fe->fe_st_fd = -1;
	fe->fe_pcmk_connected = false;
	pcmk_fence = NULL;
}

/* A fencing that stops the node: "off" or "reboot".  An unfencing ("on":
 * fence_scsi, fence_mpath give a starting node its storage back) kills
 * nothing; counted, it would let recovery go on while the node's
 * clients live (tests/test-fence-pcmk). */
static bool pcmk_kills(const stonith_history_t *h)
{
	return h->action && (!strcmp(h->action, "off") ||
			     !strcmp(h->action, "reboot"));
}

/*
 * THE HISTORY READER.  The fencer's history is read with a synchronous
 * call (libstonithd's history() has no asynchronous form: its callback
 * would carry only a return code), which waits up to
 * PCMK_HISTORY_TIMEOUT_S + 60 s (70 s: libstonithd adds its own IPC
 * wait) for a fencer that does not answer (stopped, deadlocked,
 * swapping).  Made on dlmd's only loop thread, every read
 * stalled all locking for that long, per waiting node, every
 * FENCE_RETRY_MS.  So the reads are made by a thread of their own, with
 * a stonith connection of its own that nothing else touches: the loop
 * writes a request (node id, number) to a pipe and goes on; the thread
 * reads that node's history, sums it up (pcmk_sum: the latest successful
 * and failed fencing, one under way) and writes the sum back on another
 * pipe, whose read end is in the loop (pcmk_replies, pcmk_apply).  Both
 * are fixed-size structs between two threads of one process, each
 * written whole (less than PIPE_BUF: atomic), never a wire format.
 *
 * Why a thread and not the asynchronous calls on the loop's connection:
 * there is none for the history.  Why a thread and not a helper
 * process: the process would need a binary of its own (or a fork() of
 * dlmd's heap, which a million locks make gigabytes: see run_command),
 * and a wire format for what it hands back.  The thread shares nothing
 * with the loop but the two pipes: libstonithd keeps its state per
 * connection, the loop's connection (notifications, our fence requests,
 * connected first so that libxml2 is set up before the thread runs) is
 * never used by the thread nor the thread's by the loop, and what the
 * pacemaker libraries log from the thread goes through log.c's sinks,
 * which serialize their writers (libqb itself does not: a line logged
 * by both threads at once may be lost, log.c says how).  The thread
 * blocks every signal (they go to the loop's thread, as libqb's signal
 * handling expects) and logs nothing itself: its errors come back in
 * the reply.
 *
 * One read per node is in flight at a time (fn_pcmk_inflight); a read
 * wanted meanwhile (a notification, the retry) is made when its reply
 * comes (fn_pcmk_again), so that no fencing ended during a read goes
 * unseen.  Nothing watches the thread's connection (the loop's is
 * watched: pcmk_ready): after the fencer restarted, the thread's next
 * read finds it closed (-ENOTCONN).  So a read that fails drops the
 * connection and, unless the fencer was silent (a timeout: trying again
 * would only double the wait), is made once more on a new one, within
 * the same request (PCMK_READ_TRIES).  A reply is the history at the
 * failure only if its request was made after the failure
 * (fn_pcmk_base_seq); a failed one is not, while the loop is connected
 * to the fencer: the base is read again (the retry), a later history
 * being the cautious side (it only makes fewer fencings count).  Only a
 * fencer that the loop cannot reach either leaves the base unknown, and
 * this node's clock decides, as when the fencer was unreachable at the
 * failure (pcmk_apply).  Reads are made one after another: a fencer
 * that does not answer delays the read of every waiting node by 70 s
 * each.  The thread lives from the first
 * connection to the fencer until dlmd_fence_fini, which closes the
 * request pipe (the thread ends after its current read) and waits for
 * it a moment only: a read of a hung fencer does not hold dlmd's exit.
 */
struct pcmk_req {
	uint32_t	pq_nodeid;
	uint32_t	pq_seq;
};

struct pcmk_reply {
	uint32_t	pr_nodeid;
	uint32_t	pr_seq;
	int32_t		pr_rc;		/* 0, or a negative errno */
	uint32_t	pr_pending;	/* a fencing of it is under way */
	int64_t		pr_done_ns;	/* the latest successful fencing */
	int64_t		pr_failed_ns;	/* the latest failed one */
	int64_t		pr_done_s;	/* the same, in seconds */
	int64_t		pr_failed_s;
};

/* The thread's ends of the pipes (it frees this). */
struct pcmk_reader_arg {
	int		ra_req;
	int		ra_rep;
};

/* The latest successful and failed fencing of the node in its history,
 * and whether one is under way. */
static void pcmk_sum(const stonith_history_t *hist, struct pcmk_reply *r)
{
	for (const stonith_history_t *h = hist; h; h = h->next) {
		int64_t ns = (int64_t)h->completed * 1000000000LL +
			     h->completed_nsec;

		if (!pcmk_kills(h))
			continue;
		if (h->state == st_done) {
			if (ns > r->pr_done_ns) {
				r->pr_done_ns = ns;
				r->pr_done_s = (int64_t)h->completed;
			}
		} else if (h->state == st_failed) {
			if (ns > r->pr_failed_ns) {
				r->pr_failed_ns = ns;
				r->pr_failed_s = (int64_t)h->completed;
			}
		} else {
			r->pr_pending = 1;
		}
	}
}

/* Read or write all of len bytes (the ends block); false at EOF or on an
 * error. */
static bool pipe_full(int fd, void *buf, size_t len, bool writing)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = writing ? write(fd, (char *)buf + done, len - done) :
				      read(fd, (char *)buf + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return false;
		done += (size_t)n;
	}
	return true;
}

static void *pcmk_reader(void *data)
{
	struct pcmk_reader_arg a = *(struct pcmk_reader_arg *)data;
	stonith_t *st = NULL;
	struct pcmk_req q;

	free(data);
	while (pipe_full(a.ra_req, &q, sizeof(q), false)) {
		struct pcmk_reply r = { .pr_nodeid = q.pq_nodeid,
					.pr_seq = q.pq_seq };
		stonith_history_t *hist = NULL;
		char target[16];
		int fd = -1;

		/* a read that fails for any reason but the fencer's
		 * silence (a connection the fencer's restart closed:
		 * -ENOTCONN, -ECOMM, ...) is made again once, on a new
		 * connection, within this request */
		for (int tries = 0; tries < PCMK_READ_TRIES; tries++) {
			r.pr_rc = 0;
			if (!st) {
				st = stonith_api_new();
				r.pr_rc = st ? st->cmds->connect(st,
						PCMK_CLIENT_NAME "-history",
						&fd) : -ENOMEM;
				if (r.pr_rc >= 0)
					r.pr_rc = 0;
			}
			if (!r.pr_rc) {
				snprintf(target, sizeof(target), "%u",
					 q.pq_nodeid);
				hist = NULL;
				r.pr_rc = st->cmds->history(st,
						st_opt_sync_call |
						st_opt_cs_nodeid, target,
						&hist, PCMK_HISTORY_TIMEOUT_S);
				if (r.pr_rc >= 0) {
					r.pr_rc = 0;
					pcmk_sum(hist, &r);
				}
				stonith_history_free(hist);
			}
			if (r.pr_rc < 0 && st) {	/* a new connection */
				stonith_api_delete(st);
				st = NULL;
			}
			if (r.pr_rc >= 0 || r.pr_rc == -ETIME ||
			    r.pr_rc == -ETIMEDOUT)
				break;
		}
		if (!pipe_full(a.ra_rep, &r, sizeof(r), true))
			break;
	}
	if (st)
		stonith_api_delete(st);
	close(a.ra_req);
	close(a.ra_rep);
	return NULL;
}

static int pcmk_replies(int32_t fd, int32_t revents, void *data);

/* Start the reader (once, connected to the fencer: see above); 0 or an
 * errno. */
static int pcmk_reader_start(struct dlmd_fence *fe)
{
	struct pcmk_reader_arg *a;
	int req[2] = { -1, -1 }, rep[2] = { -1, -1 }, rv;
	sigset_t all, old;

	if (fe->fe_rd_running)
		return 0;
	a = malloc(sizeof(*a));
	if (!a)
		return ENOMEM;
	if (pipe2(req, O_CLOEXEC) || pipe2(rep, O_CLOEXEC)) {
		rv = errno;
		goto fail;
	}
	/* the loop's ends never wait: one request per node at most is
	 * ever queued, far less than a pipe holds */
	if (fcntl(req[1], F_SETFL, O_NONBLOCK) ||
	    fcntl(rep[0], F_SETFL, O_NONBLOCK)) {
		rv = errno;
		goto fail;
	}
	if (qb_loop_poll_add(fe->fe_d->d_loop, QB_LOOP_HIGH, rep[0], POLLIN, fe,
			     pcmk_replies)) {
		rv = EINVAL;
		goto fail;
	}
	a->ra_req = req[0];
	a->ra_rep = rep[1];
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rv = pthread_create(&fe->fe_rd_thread, NULL, pcmk_reader, a);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rv) {
		qb_loop_poll_del(fe->fe_d->d_loop, rep[0]);
		goto fail;
	}
	fe->fe_rd_running = true;
	fe->fe_rd_req = req[1];
	fe->fe_rd_rep = rep[0];
	return 0;
fail:
	for (int i = 0; i < 2; i++) {
		if (req[i] >= 0)
			close(req[i]);
		if (rep[i] >= 0)
			close(rep[i]);
	}
	free(a);
	return rv;
}

/* At exit: the reader ends after its current read; waited for a moment
 * (a read of a hung fencer may take 70 s, PCMK_HISTORY_TIMEOUT_S: then it is
 * left to end with the process). */
static void pcmk_reader_stop(struct dlmd_fence *fe)
{
	struct timespec until;

	if (!fe->fe_rd_running)
		return;
	qb_loop_poll_del(fe->fe_d->d_loop, fe->fe_rd_rep);
	close(fe->fe_rd_req);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 1;
	if (pthread_timedjoin_np(fe->fe_rd_thread, NULL, &until)) {
		log_warn("fencing: the fencer's history reader is still in a "
			 "read; dlmd exits without waiting for it");
		pthread_detach(fe->fe_rd_thread);
	}
	close(fe->fe_rd_rep);	/* a late reply finds EPIPE */
	fe->fe_rd_running = false;
	fe->fe_rd_req = fe->fe_rd_rep = -1;
}

/* Ask the reader for a fresh read of the node's history (its reply:
 * pcmk_apply), or for one more after the read in flight. */
static void pcmk_request(struct dlmd_fence *fe, struct fence_node *fn)
{
	struct pcmk_req q;

	if (!fe->fe_st || !fe->fe_rd_running)
		return;
	if (fn->fn_pcmk_inflight) {
		fn->fn_pcmk_again = true;
		return;
	}
	q.pq_nodeid = fn->fn_nodeid;
	q.pq_seq = fn->fn_pcmk_seq + 1;
	if (write(fe->fe_rd_req, &q, sizeof(q)) != (ssize_t)sizeof(q)) {
		log_err("fencing: cannot ask for the fencer's history of node "
			"%u: %s", fn->fn_nodeid, strerror(errno));
		return;
	}
	fn->fn_pcmk_seq = q.pq_seq;
	fn->fn_pcmk_inflight = true;
	fn->fn_pcmk_again = false;
}

/* The fencer's history as last read (pcmk_apply): true if the node is
 * now fenced.  Nothing is decided while the history at the failure is
 * still to come. */
static bool pcmk_eval(struct dlmd_fence *fe, struct fence_node *fn)
{
	int64_t done = fn->fn_pcmk_last_done_s, failed = fn->fn_pcmk_last_failed_s;
	int64_t done_ns = fn->fn_pcmk_last_done;
	int64_t failed_ns = fn->fn_pcmk_last_failed;
	bool pending = fn->fn_pcmk_pending;

	if (!fn->fn_pcmk_read_ok || fn->fn_pcmk_base_wanted)
		return false;
	/* what we asked for failed, and nothing else is under way: the
	 * turn passes (ONE FENCER), and we may ask again on ours.  So too
	 * when our request never showed (nothing under way, no result, long
	 * after its timeout: the fencer restarted meanwhile, say). */
	if (fn->fn_pcmk_asked &&
	    dlmd_fence_pcmk_ask_failed(&fn->fn_pcmk_ask, pending, failed,
				       failed_ns, done, done_ns)) {
		log_notice("fencing: pacemaker's fencer could not fence node %u",
			   fn->fn_nodeid);
		fn->fn_pcmk_asked = false;
		send_result(fe, fn, DLMD_FENCE_FAILED);
	} else if (fn->fn_pcmk_asked && !pending &&
		   dlmd_now_ms() - fn->fn_pcmk_asked_at >
		   (PCMK_FENCE_TIMEOUT_S + PCMK_HISTORY_TIMEOUT_S) * 1000ULL &&
		   !dlmd_fence_pcmk_counts(&fn->fn_pcmk_since, done > 0, done,
					   done_ns)) {
		log_notice("fencing: pacemaker's fencer shows nothing of our "
			   "request to fence node %u %d s on: asking again",
			   fn->fn_nodeid, PCMK_FENCE_TIMEOUT_S +
			   PCMK_HISTORY_TIMEOUT_S);
		fn->fn_pcmk_asked = false;
		send_result(fe, fn, DLMD_FENCE_FAILED);
	}
	if (dlmd_fence_pcmk_counts(&fn->fn_pcmk_since, done > 0, done, done_ns)) {
		char how[128];

		if (fn->fn_pcmk_since.pm_known)
			snprintf(how, sizeof(how), "pacemaker's fencer: a fencing "
				 "newer than its history at the failure%s",
				 fn->fn_pcmk_asked ? ", which we asked for" : "");
		else
			snprintf(how, sizeof(how), "pacemaker's fencer: fenced "
				 "%lld s after the failure (this node's clock)",
				 (long long)(done - fn->fn_pcmk_since.pm_wall_s));
		fenced(fe, fn, how, true);
		return true;
	}
	return false;
}

static bool pcmk_should_ask(struct dlmd_fence *fe, struct fence_node *fn);
static void pcmk_ask(struct dlmd_fence *fe, struct fence_node *fn);
static bool may_act(struct dlmd_fence *fe, struct fence_node *fn);

/* A reply of the reader: the node's history now. */
static void pcmk_apply(struct dlmd_fence *fe, const struct pcmk_reply *r)
{
	struct fence_node *fn = fnode(fe, r->pr_nodeid, false);

	if (!fn || !fn->fn_pcmk_inflight || r->pr_seq != fn->fn_pcmk_seq)
		return;		/* cannot be: one in flight per node */
	fn->fn_pcmk_inflight = false;
	fn->fn_pcmk_read_ok = !r->pr_rc;
	if (r->pr_rc) {
		log_warn("fencing: pacemaker's fencer history of node %u: %s",
			 fn->fn_nodeid, strerror(-r->pr_rc));
	} else {
		fn->fn_pcmk_pending = r->pr_pending;
		fn->fn_pcmk_last_done = r->pr_done_ns;
		fn->fn_pcmk_last_failed = r->pr_failed_ns;
		fn->fn_pcmk_last_done_s = r->pr_done_s;
		fn->fn_pcmk_last_failed_s = r->pr_failed_s;
	}
	if (fn->fn_pcmk_base_wanted && r->pr_seq >= fn->fn_pcmk_base_seq &&
	    fn->fn_pcmk_read_ok) {
		/* the history at the failure: what counts must be newer */
		fn->fn_pcmk_base_wanted = false;
		fn->fn_pcmk_since.pm_known = true;
		fn->fn_pcmk_since.pm_done_ns = fn->fn_pcmk_last_done;
		fn->fn_pcmk_since.pm_failed_ns = fn->fn_pcmk_last_failed;
	} else if (fn->fn_pcmk_base_wanted && r->pr_seq >= fn->fn_pcmk_base_seq &&
		   !fe->fe_st) {
		/* unread, and the loop lost the fencer too: unknown */
		fn->fn_pcmk_base_wanted = false;
		fn->fn_pcmk_since.pm_known = false;
		log_notice("fencing: node %u: pacemaker's fencer is not "
			   "reachable: its history at the failure is unknown, "
			   "this node's clock decides which fencing counts",
			   fn->fn_nodeid);
	} else if (fn->fn_pcmk_base_wanted && r->pr_seq >= fn->fn_pcmk_base_seq) {
		/* unread, the fencer reachable: read again on the retry
		 * (THE HISTORY READER); nothing counts meanwhile */
		log_info("fencing: node %u: its history at the failure could "
			 "not be read; reading it again", fn->fn_nodeid);
	}
	if (fn->fn_pcmk_again)
		pcmk_request(fe, fn);
	if (is_fenced(fn) || fn->fn_method != DLMD_FENCE_PACEMAKER ||
	    fn->fn_pid || pcmk_eval(fe, fn) || !fn->fn_pcmk_read_ok)
		return;
	/* what dlmd asks of the fencer, one survivor asks, once per
	 * failure (again after a failure of it), never while a fencing of
	 * the node is under way (pcmk_should_ask): decided on a history
	 * just read */
	if (fe->fe_st && !fn->fn_pcmk_asked && pcmk_should_ask(fe, fn) &&
	    may_act(fe, fn))
		pcmk_ask(fe, fn);
}

static int pcmk_replies(int32_t fd, int32_t revents, void *data)
{
	struct dlmd_fence *fe = data;
	struct pcmk_reply r;
	ssize_t n;

	while ((n = read(fd, &r, sizeof(r))) == (ssize_t)sizeof(r))
		pcmk_apply(fe, &r);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	/* EOF (the thread ended: it never does while we hold its
	 * request pipe) or a torn reply (writes are whole): no more */
	log_err("fencing: the fencer's history reader stopped answering (%s); "
		"the history is no longer read", n < 0 ? strerror(errno) :
		n == 0 ? "it ended" : "a torn reply");
	fe->fe_rd_running = false;
	close(fe->fe_rd_req);
	pthread_detach(fe->fe_rd_thread);
	fe->fe_rd_req = -1;
	fe->fe_rd_rep = -1;
	close(fd);
	return -1;	/* libqb drops the fd */
}

/* st_notify_fence: some fencing ended; look at every node we wait for. */
static void pcmk_on_fence(stonith_t *st, stonith_event_t *e)
{
	struct dlmd_fence *fe = pcmk_fence;

	if (!fe)
		return;
	log_info("fencing: pacemaker's fencer: %s of %s by %s: %s",
		 e->action ? e->action : "?", e->target ? e->target : "?",
		 e->executioner ? e->executioner : "?",
		 e->result == 0 ? "ok" : "failed");
	for (unsigned int i = 0; i < fe->fe_nnodes && fe->fe_st; i++) {
		struct fence_node *fn = &fe->fe_nodes[i];

		if (!is_fenced(fn) && fn->fn_method == DLMD_FENCE_PACEMAKER)
			pcmk_request(fe, fn);
	}
}

static int pcmk_ready(int32_t fd, int32_t revents, void *data)
{
	struct dlmd_fence *fe = data;

	if ((revents & (POLLHUP | POLLERR)) || !stonith_dispatch(fe->fe_st)) {
		log_warn("fencing: lost the connection to pacemaker's fencer");
		pcmk_disconnect(fe, true);
		return -1;	/* libqb drops the fd */
	}
	return 0;
}

/*
 * Does dlmd ask the fencer to fence fn now (ONE FENCER permitting)?
 *
 * Never while the fencer's history shows a fencing of the node under way
 * (fn_pcmk_pending, just read): whoever asked for it, pacemaker's own
 * policy, an operator's stonith_admin or another survivor, dlmd waits for
 * it; asked again, the fencer would run a second one after it (a second
 * reboot, perhaps of the node rejoining).  If that one fails, the next
 * look sees no pending operation and dlmd asks.
 *
 * Pacemaker fences a node it lost, by its own policy, never a cluster
 * member: a node whose dlmd alone died, one that came back before its
 * failure was fenced (DLMD_FAIL_RESTARTED: its dlmd restarted or died
 * while apart, or a new dlmd joined), or any whose failure may be fenced
 * in the view and that the quorum view still lists FENCE_RETRY_MS after
 * the failure (the view lags the CPG change a moment; after that it is
 * a member, not lost): dlmd asks for those at once.  Without asking,
 * every survivor would wait for ever for a fencing nobody does, and
 * fence_ack is refused for a node in the view.
 *
 * A node lost to the cluster (out of a quorate view) pacemaker fences by
 * itself, and dlmd waits fence_pacemaker_wait_secs for a fencing newer
 * than the fencer's history at the failure.  If pacemaker fenced the
 * node before the node-down reached dlmd (both follow the same corosync
 * membership change, and pacemaker is often first), that fencing is in
 * the history at the failure and no newer one ever comes: without the
 * ask, every lockspace the node was in waited for ever (the known stall
 * of session 18).  So when the wait is over with nothing newer and
 * nothing under way, dlmd asks for a fencing of its own.  A second
 * fencing of a node already fenced costs a reboot, never safety; a
 * base read earlier (at the node's join) would have counted the first
 * one, but it cannot be read without blocking at every join and it
 * would count an "off" undone by a later "on" (see node_failed).
 */
/* How long since the failure (ms).  fn_failed_at may be a millisecond
 * ahead of now (node_failed: a failure in the millisecond of the last
 * fencing): unsigned, that read as an endless wait, and dlmd asked at
 * once (seen by test_old_result_does_not_count). */
static uint64_t pcmk_waited(const struct fence_node *fn)
{
	uint64_t now = dlmd_now_ms();

	return now > fn->fn_failed_at ? now - fn->fn_failed_at : 0;
}

static bool pcmk_should_ask(struct dlmd_fence *fe, struct fence_node *fn)
{
	struct dlmd *d = fe->fe_d;
	uint64_t waited = pcmk_waited(fn);
	bool in_view = fe->fe_up->fu_quorum_has(d, fn->fn_nodeid);

	if (fn->fn_pcmk_pending)
		return false;
	if (fn->fn_member)
		return true;
	if (fn->fn_in_view_ok && in_view)
		return waited >= FENCE_RETRY_MS;
	return !in_view && fe->fe_up->fu_quorate(d) &&
	       waited >= (uint64_t)d->d_cfg.cf_fence_pcmk_wait_secs * 1000;
}

/* How long until pcmk_should_ask's wait for a lost node is over (ms; 0:
 * it is). */
static uint64_t pcmk_wait_left(const struct dlmd_fence *fe,
			       const struct fence_node *fn)
{
	uint64_t waited = pcmk_waited(fn);
	uint64_t wait = (uint64_t)fe->fe_d->d_cfg.cf_fence_pcmk_wait_secs * 1000;

	return waited >= wait ? 0 : wait - waited;
}

/*
 * OUR OWN RESULT.  The fencer's history carries the completion times of
 * the node that ran each fencing, by its own clock: a fencing dlmd asked
 * for, run by a node whose clock is behind the one that ran the fencing
 * in the history at the failure, looks older than that base and never
 * counts (and dlmd asks again, and again: review fence3).  So the
 * result of our own request is learned from the fencer itself, by its
 * call id, on the loop's connection: a success of a request made for
 * this failure (fn_pcmk_asked, the same call id: a new failure clears
 * both) is a fencing after the failure, whatever the clocks say.  A
 * result that is not a success changes nothing: the history decides
 * then, as before.  Lost with the loop's connection (its callbacks go
 * with it): the history still decides, with the limit above.
 */
static void pcmk_on_result(stonith_t *st, stonith_callback_data_t *data)
{
	struct dlmd_fence *fe = pcmk_fence;
	struct fence_node *fn;

	(void)st;
	if (!fe || !data)
		return;
	fn = fnode(fe, (uint32_t)(uintptr_t)data->userdata, false);
	if (!fn || is_fenced(fn) || !fn->fn_pcmk_asked || fn->fn_pid ||
	    fn->fn_method != DLMD_FENCE_PACEMAKER ||
	    data->call_id != fn->fn_pcmk_call)
		return;
	if (data->rc != 0) {
		log_info("fencing: pacemaker's fencer: our request to fence "
			 "node %u ended: %s", fn->fn_nodeid,
			 strerror(data->rc < 0 ? -data->rc : data->rc));
		return;
	}
	fenced(fe, fn, "pacemaker's fencer: the fencing we asked for "
	       "succeeded", true);
}

static void pcmk_ask(struct dlmd_fence *fe, struct fence_node *fn)
{
	const char *action = fe->fe_d->d_cfg.cf_fence_pcmk_off ? "off" : "reboot";
	char target[16];
	int rc;

	if (!fe->fe_st || fn->fn_pcmk_asked)
		return;
	snprintf(target, sizeof(target), "%u", fn->fn_nodeid);
	rc = fe->fe_st->cmds->fence(fe->fe_st, st_opt_cs_nodeid, target, action,
				    PCMK_FENCE_TIMEOUT_S, 0);
	if (rc < 0) {
		log_warn("fencing: asking pacemaker's fencer to fence node %u: %s",
			 fn->fn_nodeid, strerror(-rc));
		return;
	}
	fn->fn_pcmk_asked = true;
	fn->fn_pcmk_asked_at = dlmd_now_ms();
	fn->fn_pcmk_call = rc;
	if (rc > 0 &&
	    fe->fe_st->cmds->register_callback(fe->fe_st, rc,
					       2 * PCMK_FENCE_TIMEOUT_S, 0,
					       (void *)(uintptr_t)fn->fn_nodeid,
					       "dlmd-fence-result",
					       pcmk_on_result) != 1)
		fn->fn_pcmk_call = 0;	/* the history alone decides */
	/* the history just read (pcmk_apply, then us) */
	fn->fn_pcmk_ask.pm_known = fn->fn_pcmk_read_ok;
	fn->fn_pcmk_ask.pm_done_ns = fn->fn_pcmk_last_done;
	fn->fn_pcmk_ask.pm_failed_ns = fn->fn_pcmk_last_failed;
	fn->fn_pcmk_ask.pm_wall_s = (int64_t)time(NULL);
	log_notice("fencing: asked pacemaker's fencer to fence node %u (%s: "
		   "%s)", fn->fn_nodeid, action,
		   fn->fn_daemon ? "its dlmd died with lockspaces" :
		   fn->fn_member || fe->fe_up->fu_quorum_has(fe->fe_d, fn->fn_nodeid) ?
		   "it is a cluster member: pacemaker does not fence it by "
		   "itself" : "no fencing newer than the fencer's history at "
		   "the failure, and none under way, after "
		   "fence_pacemaker_wait_secs");
}

/* On the loop's thread, at most once per FENCE_RETRY_MS while not
 * connected.  NOT bounded: libqb's connect polls for the fencer's answer
 * without a time limit, and register_notification is a synchronous call
 * (up to 60 s): a fencer that accepts the connection but never answers
 * holds the loop, and all locking, here (dlm.conf.5, README say so).
 * Moving it to the reader's thread, handing the connection over, is
 * what would end that. */
static void pcmk_connect(struct dlmd_fence *fe)
{
	struct dlmd *d = fe->fe_d;
	uint64_t now = dlmd_now_ms();
	stonith_t *st;
	int rc, fd = -1;

	if (fe->fe_st || !d->d_cfg.cf_enable_fencing ||
	    d->d_cfg.cf_fence_pcmk == DLMD_FENCE_PCMK_NO ||
	    (fe->fe_pcmk_last_try && now - fe->fe_pcmk_last_try < FENCE_RETRY_MS))
		return;
	fe->fe_pcmk_last_try = now;
	st = stonith_api_new();
	if (!st)
		return;
	rc = st->cmds->connect(st, PCMK_CLIENT_NAME, &fd);
	if (rc < 0 || fd < 0) {
		log_debug("fencing: pacemaker's fencer not reachable: %s",
			  strerror(rc < 0 ? -rc : ENOTCONN));
		stonith_api_delete(st);
		return;
	}
	rc = st->cmds->register_notification(st, T_STONITH_NOTIFY_FENCE,
					     pcmk_on_fence);
	if (rc < 0 || qb_loop_poll_add(d->d_loop, QB_LOOP_HIGH, fd, POLLIN, fe,
				       pcmk_ready)) {
		log_warn("fencing: cannot follow pacemaker's fencer: %s",
			 strerror(rc < 0 ? -rc : EINVAL));
		stonith_api_delete(st);
		return;
	}
	/* after the first connection (THE HISTORY READER) */
	rc = pcmk_reader_start(fe);
	if (rc) {
		log_err("fencing: cannot start the fencer's history reader: %s",
			strerror(rc));
		qb_loop_poll_del(d->d_loop, fd);
		stonith_api_delete(st);
		return;
	}
	fe->fe_st = st;
	fe->fe_st_fd = fd;
	fe->fe_pcmk_connected = true;
	pcmk_fence = fe;
	log_notice("fencing: connected to pacemaker's fencer");
}
#else
static void pcmk_connect(struct dlmd_fence *fe)
{
}

static void pcmk_request(struct dlmd_fence *fe, struct fence_node *fn)
{
}

static uint64_t pcmk_wait_left(const struct dlmd_fence *fe,
			       const struct fence_node *fn)
{
	return 0;
}

#endif

/*
 * ONE FENCER: may this node act on fn now?  True when our claim holds,
 * or without a daemon group.  Otherwise false, having claimed when it is
 * our turn (the claim's delivery calls attempt() again), or arranged to
 * look again when it may become ours.
 */
static bool may_act(struct dlmd_fence *fe, struct fence_node *fn)
{
	struct dlmd *d = fe->fe_d;
	uint32_t members[DLM_MAX_NODES], skip[DLM_MAX_NODES];
	unsigned int n, nskip = 0;
	uint64_t now = dlmd_now_ms(), at;
	int rank, rv;

	if (!claims_on(fe))
		return true;
	if (fn->fn_turn.ft_claimer == d->d_nodeid)
		return !fn->fn_result_sent;
	if (fn->fn_turn.ft_claimer || fn->fn_claim_sent || fn->fn_result_sent)
		return false;	/* a delivery moves us on */
	/* our view of the turns is complete (the end of a sync kicks us) */
	if (!fe->fe_up->fu_may_claim(d, fn->fn_learned))
		return false;
	if (!gate(fe, fn))
		return false;
	n = fe->fe_up->fu_members(d, members, DLM_MAX_NODES);
	for (unsigned int i = 0; i < fe->fe_nnodes && nskip < DLM_MAX_NODES; i++)
		if (!is_fenced(&fe->fe_nodes[i]))
			skip[nskip++] = fe->fe_nodes[i].fn_nodeid;
	rank = dlmd_fence_turn_rank(&fn->fn_turn, members, n, skip, nskip,
				    d->d_nodeid);
	if (rank < 0)
		return false;
	at = fn->fn_turn_at + (uint64_t)rank * CLAIM_STAGGER_MS;
	if (now < at) {
		schedule_retry_in(fe, fn, at - now);
		return false;
	}
	rv = fe->fe_up->fu_send(d, true, fn->fn_nodeid, DLMD_FENCE_DONE);
	if (rv) {
		log_err("fencing: cannot claim node %u's fencing: %s",
			fn->fn_nodeid, strerror(-rv));
		schedule_retry(fe, fn);
		return false;
	}
	fn->fn_claim_sent = true;
	log_info("fencing: node %u: we claim its fencing (candidate %d)",
		 fn->fn_nodeid, rank + 1);
	return false;
}

/* One step towards fencing the node, by the method that applies now. */
static void attempt(struct dlmd_fence *fe, struct fence_node *fn)
{
	struct dlmd *d = fe->fe_d;
	enum dlmd_fence_method m;
	uint64_t now = dlmd_now_ms();
	bool log_now;

	if (is_fenced(fn) || fn->fn_pid)
		return;
	pcmk_connect(fe);
	m = dlmd_fence_choose(&d->d_cfg, fe->fe_pcmk_connected);
	log_now = m != fn->fn_method || !fn->fn_last_log ||
		  now - fn->fn_last_log >= FENCE_LOG_INTERVAL_MS;
	fn->fn_method = m;
	switch (m) {
	case DLMD_FENCE_OFF:
		fenced(fe, fn, "fencing disabled", false);
		return;
	case DLMD_FENCE_PACEMAKER:
		/* a fresh read of its history: the reply decides, and
		 * asks the fencer if need be (pcmk_apply) */
		pcmk_request(fe, fn);
		if (log_now) {
			log_notice("fencing: node %u: waiting for pacemaker's "
				   "fencer to fence it (%s)", fn->fn_nodeid,
				   !fe->fe_pcmk_connected ? "fencer not reachable" :
				   fn->fn_pcmk_pending ? "fencing in progress: "
				   "we wait for it rather than ask" :
				   fn->fn_pcmk_asked ? "we asked for it" :
				   "no fencing since the failure yet");
			fn->fn_last_log = now;
		}
		/* the end of the wait for a lost node, on time */
		if (!fn->fn_pcmk_asked && pcmk_wait_left(fe, fn) &&
		    pcmk_wait_left(fe, fn) < FENCE_RETRY_MS)
			schedule_retry_in(fe, fn, pcmk_wait_left(fe, fn));
		schedule_retry(fe, fn);
		return;
	case DLMD_FENCE_COMMAND:
		if (may_act(fe, fn))
			run_command(fe, fn);
		return;
	case DLMD_FENCE_MANUAL:
		if (log_now) {
			log_notice("fencing: node %u: nothing can fence it; "
				   "waiting for 'dlmctl fence_ack %u'%s",
				   fn->fn_nodeid, fn->fn_nodeid,
				   fe->fe_up->fu_quorum_has(d, fn->fn_nodeid) ?
				   " (refused while it is in the cluster view: "
				   "stop it first)" : "");
			fn->fn_last_log = now;
		}
		/* the fencer may appear (fence_pacemaker = auto) */
		if (dlmd_fence_pcmk_built() &&
		    d->d_cfg.cf_fence_pcmk != DLMD_FENCE_PCMK_NO)
			schedule_retry(fe, fn);
		return;
	}
}

int dlmd_fence_init(struct dlmd *d, const struct dlmd_fence_up *up)
{
	struct dlmd_fence *fe = calloc(1, sizeof(*fe));

	if (!fe)
		return -ENOMEM;
	fe->fe_d = d;
	fe->fe_up = up;
	d->d_fence = fe;
	if (d->d_cfg.cf_enable_fencing && d->d_cfg.cf_fence_command[0]) {
		if (qb_loop_signal_add(d->d_loop, QB_LOOP_HIGH, SIGCHLD, fe,
				       on_sigchld, NULL) == 0)
			fe->fe_sigchld = true;
	}
#ifdef HAVE_PACEMAKER_FENCING
	fe->fe_st_fd = -1;
	fe->fe_rd_req = fe->fe_rd_rep = -1;
#endif
	pcmk_connect(fe);
	if (!d->d_cfg.cf_enable_fencing)
		log_notice("fencing disabled (enable_fencing = 0): failed nodes' "
			   "locks are released without fencing them");
	else if (!dlmd_fence_pcmk_built())
		log_notice("fencing: built without pacemaker's fencing API; "
			   "failed nodes are fenced by %s",
			   d->d_cfg.cf_fence_command[0] ? "fence_command" :
			   "an operator ('dlmctl fence_ack NODEID')");
	else
		log_notice("fencing: fence_pacemaker = %s, pacemaker's fencer %s; "
			   "otherwise %s",
			   d->d_cfg.cf_fence_pcmk == DLMD_FENCE_PCMK_YES ? "yes" :
			   d->d_cfg.cf_fence_pcmk == DLMD_FENCE_PCMK_NO ? "no" : "auto",
			   fe->fe_pcmk_connected ? "connected" : "not reachable",
			   d->d_cfg.cf_fence_pcmk == DLMD_FENCE_PCMK_YES ?
			   "recovery waits for the fencer" :
			   d->d_cfg.cf_fence_command[0] ? "fence_command" :
			   "'dlmctl fence_ack NODEID'");
	return 0;
}

void dlmd_fence_fini(struct dlmd *d)
{
	struct dlmd_fence *fe = d->d_fence;

	if (!fe)
		return;
	for (unsigned int i = 0; i < fe->fe_nnodes; i++) {
		struct fence_node *fn = &fe->fe_nodes[i];

		if (fn->fn_pid)
			stop_group(fn->fn_pid);
		stop_cmd_timer(fe, fn);
		if (fn->fn_retry_armed) {
			qb_loop_timer_del(d->d_loop, fn->fn_retry);
			fn->fn_retry_armed = false;
		}
	}
	/* those given up on: a last SIGKILL, reaped if they ended */
	for (unsigned int i = 0; i < fe->fe_nstuck; i++) {
		kill(-fe->fe_stuck[i].fs_pid, SIGKILL);
		waitpid(fe->fe_stuck[i].fs_pid, NULL, WNOHANG);
	}
#ifdef HAVE_PACEMAKER_FENCING
	pcmk_disconnect(fe, false);
	pcmk_reader_stop(fe);
#endif
	free(fe);
	d->d_fence = NULL;
}

/* Record a failure of nodeid ('learned': from 'from's record). */
static void node_failed(struct dlmd *d, uint32_t nodeid, unsigned int how,
			uint32_t from)
{
	struct dlmd_fence *fe = d->d_fence;
	struct fence_node *fn;
	uint64_t now = dlmd_now_ms();
	bool in_view_ok = how & (DLMD_FAIL_DAEMON | DLMD_FAIL_MAJORITY |
				 DLMD_FAIL_REMOVED | DLMD_FAIL_RESTARTED);

	if (!fe || nodeid == d->d_nodeid)
		return;
	fn = fnode(fe, nodeid, true);
	if (!fn) {
		log_err("fencing: node table full; node %u not recorded", nodeid);
		return;
	}
	/* the incarnation our fence command killed, leaving: fencing it
	 * again would only shoot the next one (a loop while it restarts) */
	if (is_fenced(fn) && fn->fn_killed && fn->fn_joined_at &&
	    fn->fn_fenced_joined_at == fn->fn_joined_at) {
		log_notice("fencing: node %u left after we fenced it (it has not "
			   "joined since): nothing more to fence", nodeid);
		return;
	}
	/* one failure may be reported by several groups: keep the first
	 * report of an unfenced failure, with what the others add */
	if (!is_fenced(fn)) {
		bool member = how & (DLMD_FAIL_DAEMON | DLMD_FAIL_RESTARTED);

		if ((in_view_ok && !fn->fn_in_view_ok) ||
		    (member && !fn->fn_member)) {
			if (how & DLMD_FAIL_RESTARTED)
				log_notice("fencing: node %u came back afresh (a new "
					   "dlmd) before it was fenced: "
					   "it is fenced while in the view", nodeid);
			fn->fn_in_view_ok |= in_view_ok;
			fn->fn_member |= member;
			if (!fn->fn_pid)
				attempt(fe, fn);
		}
		return;
	}
	/* strictly after the fencing (or forgiving) of its last failure,
	 * or this new one counted as fenced already: a forgiven node failing
	 * again in the same millisecond (the confchg right after the sync's
	 * end, in one dispatch) was never fenced */
	fn->fn_failed_at = now > fn->fn_fenced_at ? now : fn->fn_fenced_at + 1;
	/* What counts is a fencing newer than the fencer's history at the
	 * failure, asked for by the attempt below if it can be (THE
	 * HISTORY READER: the first reply to a request made from now on);
	 * else this node's clock decides.  (A base read at the node's join
	 * was tried and withdrawn: a synchronous read at every join hung
	 * dlmd's loop for the history timeout when the fencer did not
	 * answer, and an "off" undone by a later unfencing "on" would have
	 * counted.  So a fencing pacemaker did before the node-down reached
	 * us does not count; after fence_pacemaker_wait_secs with nothing
	 * newer, dlmd asks for one itself: pcmk_should_ask.) */
	memset(&fn->fn_pcmk_since, 0, sizeof(fn->fn_pcmk_since));
	fn->fn_pcmk_since.pm_wall_s = (int64_t)time(NULL);
	fn->fn_pcmk_base_wanted = true;
	fn->fn_pcmk_base_seq = fn->fn_pcmk_seq + 1;
	d->d_metrics.m_fence_waits++;
	fn->fn_attempts = 0;
	fn->fn_last_log = 0;
	fn->fn_pcmk_pending = false;
	fn->fn_pcmk_asked = false;
	fn->fn_pcmk_call = 0;
	fn->fn_in_view_ok = in_view_ok;
	fn->fn_daemon = how & DLMD_FAIL_DAEMON;
	fn->fn_member = how & (DLMD_FAIL_DAEMON | DLMD_FAIL_RESTARTED);
	fn->fn_not_before = how & DLMD_FAIL_EVEN_LOSER ?
			    fn->fn_failed_at + EVEN_SPLIT_FENCE_DELAY_MS : 0;
	/* only a claim accepted from now on fences this failure */
	fn->fn_failed_claims = fn->fn_claims;
	fn->fn_turn_at = fn->fn_failed_at;
	fn->fn_fenced_by = 0;
	fn->fn_learned = from != 0;
	fn->fn_fencing_seen = false;
	log_notice("fencing: node %u failed%s", nodeid,
		   how & DLMD_FAIL_DAEMON ? " (its dlmd died while it had "
		   "lockspaces; the node itself is up)" :
		   how & DLMD_FAIL_REMOVED ? " (removed from the cluster: "
		   "messages between us were lost)" : "");
	attempt(fe, fn);
	/* its reply brings the history at the failure; with no read
	 * asked for (the fencer not reachable), it is unknown */
	fn->fn_pcmk_base_wanted = fn->fn_pcmk_inflight &&
				  (fn->fn_pcmk_again ||
				   fn->fn_pcmk_seq >= fn->fn_pcmk_base_seq);
}

void dlmd_fence_node_joined(struct dlmd *d, uint32_t nodeid)
{
	struct dlmd_fence *fe = d->d_fence;
	struct fence_node *fn;
	uint64_t now = dlmd_now_ms();

	if (!fe || nodeid == d->d_nodeid)
		return;
	fn = fnode(fe, nodeid, true);
	if (!fn)
		return;
	/* strictly later than any earlier join, never 0 */
	fn->fn_joined_at = now > fn->fn_joined_at ? now : fn->fn_joined_at + 1;
}

void dlmd_fence_node_failed(struct dlmd *d, uint32_t nodeid, unsigned int how)
{
	node_failed(d, nodeid, how, 0);
}

void dlmd_fence_node_learned(struct dlmd *d, uint32_t nodeid, unsigned int how,
			     uint32_t from)
{
	node_failed(d, nodeid, how, from);
}

void dlmd_fence_resend_claims(struct dlmd *d)
{
	struct dlmd_fence *fe = d->d_fence;

	for (unsigned int i = 0; fe && i < fe->fe_nnodes; i++) {
		struct fence_node *fn = &fe->fe_nodes[i];

		if (!we_hold(fe, fn))
			continue;
		if (fe->fe_up->fu_send(d, true, fn->fn_nodeid,
					    DLMD_FENCE_DONE))
			log_err("fencing: cannot repeat our claim on node %u for "
				"the daemons that join", fn->fn_nodeid);
	}
}

void dlmd_fence_claim_delivered(struct dlmd *d, uint32_t from, uint32_t nodeid)
{
	struct dlmd_fence *fe = d->d_fence;
	struct fence_node *fn = fe ? fnode(fe, nodeid, true) : NULL;
	bool ours = from == d->d_nodeid;
	uint32_t had;

	if (!fn)
		return;
	if (ours)
		fn->fn_claim_sent = false;
	fn->fn_fencing_seen = true;
	had = fn->fn_turn.ft_claimer;
	if (!dlmd_fence_turn_claim(&fn->fn_turn, from)) {
		log_info("fencing: node %u claims node %u's fencing while node "
			 "%u's claim holds: ignored", from, nodeid, had);
		return;
	}
	if (had == from)
		return;
	fn->fn_claims++;
	fn->fn_claim_joined_at = fn->fn_joined_at;
	if (!ours) {
		if (!is_fenced(fn))
			log_notice("fencing: node %u fences node %u; we wait for "
				   "its result", from, nodeid);
		return;
	}
	fn->fn_result_sent = false;
	if (is_fenced(fn)) {
		send_result(fe, fn, DLMD_FENCE_RELEASED);
		return;
	}
	log_notice("fencing: node %u is ours to fence (our claim came first)",
		   nodeid);
	attempt(fe, fn);
}

void dlmd_fence_result_delivered(struct dlmd *d, uint32_t from, uint32_t nodeid,
				 enum dlmd_fence_status st)
{
	struct dlmd_fence *fe = d->d_fence;
	struct fence_node *fn = fe ? fnode(fe, nodeid, true) : NULL;
	bool ours = from == d->d_nodeid, current, ended;

	if (!fn)
		return;
	fn->fn_fencing_seen = true;
	/* a claim accepted after our record of the failure */
	current = fn->fn_turn.ft_claimer == from &&
		  fn->fn_claims > fn->fn_failed_claims;
	ended = dlmd_fence_turn_result(&fn->fn_turn, from, st);
	if (ours)
		fn->fn_result_sent = false;
	switch (st) {
	case DLMD_FENCE_DONE:
		if (ours || is_fenced(fn))
			break;
		if (current || fn->fn_learned) {
			char how[48];

			log_notice("fencing: node %u fenced by node %u", nodeid, from);
			snprintf(how, sizeof(how), "fenced by node %u", from);
			fn->fn_fenced_by = from;
			fenced(fe, fn, how, true);
			/* the incarnation there when the claim was taken
			 * (the claimer's command started after that) */
			if (current)
				fn->fn_fenced_joined_at = fn->fn_claim_joined_at;
		} else {
			log_notice("fencing: node %u reports node %u fenced, by a "
				   "claim older than its failure here: not counted; "
				   "it is fenced again", from, nodeid);
		}
		break;
	case DLMD_FENCE_FAILED:
		if (!ended)
			break;
		if (!ours && !is_fenced(fn))
			log_notice("fencing: node %u could not fence node %u; the "
				   "next survivor takes over", from, nodeid);
		fn->fn_turn_at = dlmd_now_ms() + FENCE_RETRY_MS;
		break;
	case DLMD_FENCE_RELEASED:
		if (ended)
			fn->fn_turn_at = dlmd_now_ms();
		break;
	}
	if (!fn->fn_turn.ft_claimer && !is_fenced(fn) && !fn->fn_pid)
		attempt(fe, fn);
}

void dlmd_fence_member_left(struct dlmd *d, uint32_t id)
{
	struct dlmd_fence *fe = d->d_fence;

	if (!fe || id == d->d_nodeid)
		return;
	for (unsigned int i = 0; i < fe->fe_nnodes; i++) {
		struct fence_node *fn = &fe->fe_nodes[i];
		bool again = false;

		if (dlmd_fence_turn_left(&fn->fn_turn, id)) {
			if (!is_fenced(fn))
				log_notice("fencing: node %u, which was fencing node "
					   "%u, left; the next survivor takes over",
					   id, fn->fn_nodeid);
			fn->fn_turn_at = dlmd_now_ms();
			again = true;
		}
		if (again && !is_fenced(fn) && !fn->fn_pid)
			attempt(fe, fn);
	}
}

unsigned int dlmd_fence_marks(const struct dlmd *d, uint32_t nodeid)
{
	const struct dlmd_fence *fe = d->d_fence;
	const struct fence_node *fn = NULL;
	struct dlmd_fence_pending p;

	for (unsigned int i = 0; fe && i < fe->fe_nnodes; i++)
		if (fe->fe_nodes[i].fn_nodeid == nodeid)
			fn = &fe->fe_nodes[i];
	if (!fn || is_fenced(fn))
		return 0;
	p = (struct dlmd_fence_pending){
		.fp_seen = fn->fn_fencing_seen,
		.fp_claim_sent = fn->fn_claim_sent,
		.fp_running = fn->fn_pid != 0,
		.fp_pcmk_asked = fn->fn_pcmk_asked,
		.fp_pcmk_pending = fn->fn_pcmk_pending,
		.fp_claimed = fn->fn_turn.ft_claimer ||
			      fn->fn_claims > fn->fn_failed_claims,
		.fp_in_view_ok = fn->fn_in_view_ok,
		.fp_daemon = fn->fn_daemon,
		.fp_even_loser = fn->fn_not_before != 0,
	};
	return dlmd_fence_marks_of(&p);
}

bool dlmd_fence_forgive(struct dlmd *d, uint32_t nodeid, const char *why)
{
	struct dlmd_fence *fe = d->d_fence;
	struct fence_node *fn = fe ? fnode(fe, nodeid, false) : NULL;
	uint64_t now = dlmd_now_ms();

	if (!fn || is_fenced(fn))
		return false;
	/* as if fenced by no method that stops it (fence_ack's way): a
	 * later failure of it is a new one, fenced as any */
	fn->fn_killed = false;
	fn->fn_fenced_joined_at = 0;
	fn->fn_fenced_by = 0;
	fn->fn_fenced_at = now > fn->fn_failed_at ? now : fn->fn_failed_at;
	d->d_nfence_forgiven++;
	/* at info: a merge may forgive many nodes, and cluster.c says
	 * once per merge, at warning, which (forgive_split) */
	log_info("fencing: node %u's failure is forgiven, not fenced (%s)",
		 nodeid, why);
	return true;
}

void dlmd_fence_kick(struct dlmd *d)
{
	struct dlmd_fence *fe = d->d_fence;

	if (!fe || !d->d_cfg.cf_enable_fencing)
		return;
	for (unsigned int i = 0; i < fe->fe_nnodes; i++) {
		struct fence_node *fn = &fe->fe_nodes[i];

		if (!is_fenced(fn) && !fn->fn_pid)
			attempt(fe, fn);
	}
}

void dlmd_fence_describe(const struct dlmd *d, uint32_t nodeid, char *buf,
			 size_t size)
{
	const struct dlmd_fence *fe = d->d_fence;
	const struct fence_node *fn = NULL;

	for (unsigned int i = 0; fe && i < fe->fe_nnodes; i++)
		if (fe->fe_nodes[i].fn_nodeid == nodeid)
			fn = &fe->fe_nodes[i];
	if (!fn) {
		snprintf(buf, size, "node %u", nodeid);
		return;
	}
	switch (fn->fn_method) {
	case DLMD_FENCE_PACEMAKER:
		snprintf(buf, size, "node %u (pacemaker: %s)", nodeid,
			 !fe->fe_pcmk_connected ? "fencer not reachable" :
			 fn->fn_pcmk_pending ? "in progress" : "not fenced yet");
		break;
	case DLMD_FENCE_COMMAND:
		if (fn->fn_turn.ft_claimer && fn->fn_turn.ft_claimer != d->d_nodeid)
			snprintf(buf, size, "node %u (fence_command by node %u)",
				 nodeid, fn->fn_turn.ft_claimer);
		else if (fn->fn_pid && fn->fn_timed_out)
			snprintf(buf, size, "node %u (fence_command, attempt %u, "
				 "timed out: terminating pid %d)", nodeid,
				 fn->fn_attempts, (int)fn->fn_pid);
		else
			snprintf(buf, size, "node %u (fence_command, attempt %u)",
				 nodeid, fn->fn_attempts);
		break;
	case DLMD_FENCE_MANUAL:
		snprintf(buf, size, "node %u (dlmctl fence_ack)", nodeid);
		break;
	default:
		snprintf(buf, size, "node %u", nodeid);
		break;
	}
}

unsigned int dlmd_fence_waiting(const struct dlmd *d)
{
	const struct dlmd_fence *fe = d->d_fence;
	unsigned int n = 0;

	for (unsigned int i = 0; fe && i < fe->fe_nnodes; i++)
		if (!is_fenced(&fe->fe_nodes[i]))
			n++;
	return n;
}

bool dlmd_fence_pcmk_reading(const struct dlmd *d)
{
	const struct dlmd_fence *fe = d->d_fence;

	for (unsigned int i = 0; fe && i < fe->fe_nnodes; i++)
		if (fe->fe_nodes[i].fn_pcmk_inflight)
			return true;
	return false;
}

unsigned int dlmd_fence_unreaped(const struct dlmd *d)
{
	return d->d_fence ? d->d_fence->fe_nstuck : 0;
}

void dlmd_fence_status(const struct dlmd *d, char *buf, size_t size)
{
	const struct dlmd_fence *fe = d->d_fence;
	size_t n;

	n = (size_t)snprintf(buf, size, "%s (fence_pacemaker %s, fencer %s, "
			     "fence_command %s)",
		 dlmd_fence_method_str(dlmd_fence_choose(&d->d_cfg,
							 fe && fe->fe_pcmk_connected)),
		 !dlmd_fence_pcmk_built() ? "not built" :
		 d->d_cfg.cf_fence_pcmk == DLMD_FENCE_PCMK_YES ? "yes" :
		 d->d_cfg.cf_fence_pcmk == DLMD_FENCE_PCMK_NO ? "no" : "auto",
		 fe && fe->fe_pcmk_connected ? "connected" : "not connected",
		 d->d_cfg.cf_fence_command[0] ? "set" : "none");
	/* a command past its timeout, and those given up on (STUCK
	 * COMMANDS): what dlmd is doing about them */
	for (unsigned int i = 0; fe && i < fe->fe_nnodes && n < size; i++)
		if (fe->fe_nodes[i].fn_pid && fe->fe_nodes[i].fn_timed_out)
			n += (size_t)snprintf(buf + n, size - n, "; node %u's "
					      "command timed out: terminating "
					      "pid %d", fe->fe_nodes[i].fn_nodeid,
					      (int)fe->fe_nodes[i].fn_pid);
	if (fe && fe->fe_nstuck && n < size)
		snprintf(buf + n, size - n, "; %u command%s given up on after "
			 "SIGKILL, not ended", fe->fe_nstuck,
			 fe->fe_nstuck > 1 ? "s" : "");
}

bool dlmd_fence_is_done(const struct dlmd *d, uint32_t nodeid)
{
	struct dlmd_fence *fe = d->d_fence;
	struct fence_node *fn;

	if (!fe)
		return true;
	fn = fnode(fe, nodeid, false);
	return !fn || is_fenced(fn);
}

bool dlmd_fence_killed(const struct dlmd *d, uint32_t nodeid)
{
	struct dlmd_fence *fe = d->d_fence;
	struct fence_node *fn = fe ? fnode(fe, nodeid, false) : NULL;

	return fn && fn->fn_failed_at && is_fenced(fn) && fn->fn_killed;
}

int dlmd_fence_ack(struct dlmd *d, uint32_t nodeid, char *why, size_t size)
{
	struct dlmd_fence *fe = d->d_fence;
	struct fence_node *fn = fe ? fnode(fe, nodeid, false) : NULL;

	if (!fn || is_fenced(fn)) {
		snprintf(why, size, "node %u is not waiting to be fenced", nodeid);
		return -ENOENT;
	}
	/* A node in the current view is alive: its corosync runs, and so
	 * may its clients, inside the locks we would give away. */
	if (fe->fe_up->fu_quorum_has(d, nodeid)) {
		snprintf(why, size, "node %u is a member of the current cluster "
			 "view (it is alive): refused; fence it, or stop its "
			 "cluster stack, first", nodeid);
		log_warn("fencing: fence_ack of node %u refused: it is a member "
			 "of the current cluster view", nodeid);
		return -EBUSY;
	}
	fenced(fe, fn, "acknowledged by an operator", false);
	return 0;
}
