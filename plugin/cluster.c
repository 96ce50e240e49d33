/*
 * plugin/cluster.c - the daemon's glue to the cluster stack (corosync):
 * node list, quorum, and the CPG protocol that drives each lockspace's
 * recovery.
 *
 * What comes from where:
 *
 *   our node id      corosync_cfg_local_get() (cfg); cross-checked with
 *                    cmap's nodelist.local_node_pos entry
 *   node list        cmap nodelist.node.<idx>.nodeid and .ring<N>_addr
 *                    (idx is not the id); every node with its addresses is
 *                    given to lowcomms (plugin/comms.c).  The nodelist is
 *                    tracked: a node added later is added to lowcomms.
 *   quorum           libquorum: quorate flag, ring sequence, node view
 *   daemon group     CPG "dlmd:daemon": every dlmd joins it.  A node that
 *                    leaves it (its daemon stopped, or the node failed) has
 *                    its lowcomms state dropped, so that the next daemon
 *                    there starts a new transport epoch (one lost from a
 *                    minority side only once fenced: FORGIVING A SPLIT);
 *                    a node that failed
 *                    (reason node-down) is handed to fencing (fence.c),
 *                    saying whether our side of the group held a strict
 *                    majority of the configured nodes then (see SPLIT AND
 *                    MERGE below).
 *   fencing turn     FENCE_CLAIM / FENCE_RESULT in the daemon group too:
 *                    one survivor fences a failed node (fence.c, ONE
 *                    FENCER); this file only carries them
 *   lockspaces       carried over the daemon group too (ONE GROUP FOR ALL
 *                    LOCKSPACES below): a lockspace costs corosync
 *                    nothing but its messages, where a CPG connection of
 *                    its own cost it megabytes of IPC buffers.
 *
 * Calls back up.  This file calls client.c and view.c, which stand above
 * it (plugin/dlmd.h), only through struct dlmd_cluster_up (daemon.c
 * fills it): a lockspace's held LS_CREATE answers, the release of a
 * stale instance, the configfs view.  The files below report to it
 * through tables: fence.c through struct dlmd_fence_up and comms.c
 * through struct dlmd_comms_up, both filled by dlmd_cluster_init()
 * below; engine.c's recovery reports (dlmd_cluster_recovery_done and
 * _failed) through struct dlmd_engine_up.  So a node death that goes
 * cluster.c -> fence.c -> cluster.c (READING.md) comes back through
 * fu_send and fu_changed, never by name.
 *
 * ONE GROUP FOR ALL LOCKSPACES.  CPG gives the daemon group one total
 * order of messages and configuration changes (confchg), the same on
 * every member (totem's agreed order, extended virtual synchrony: a
 * member that sees two events sees them in the same order as every other
 * member that sees both; the messages of one sender arrive in the order
 * it sent them; a member sees no message of a process after its leave).
 * A lockspace's membership is not a CPG group of its own any more: every
 * dlmd derives it, identically, from that one ordered stream:
 *
 *   JOIN(L) from X      X is a member of L from this point on
 *   LEAVE(L) from X     X left L cleanly here (its instance is released)
 *   confchg, X left     X left every lockspace it was in, at this point,
 *                       with the confchg's reason: node-down (its node
 *                       failed) and proc-down (its dlmd died) are
 *                       failures to be fenced; a clean leave of the daemon
 *                       group comes only from a dlmd that released all its
 *                       lockspaces first (its LEAVEs are sent before, so
 *                       delivered before)
 *
 * Every dlmd keeps the resulting table, "which daemon is in which
 * lockspace", for every lockspace of the cluster, not only its own (a
 * few bytes per lockspace and member).  A point of the stream at which
 * the members of a lockspace change is, for each member, what a confchg
 * of the lockspace's own group was before: the protocol below (START,
 * decide, recover) runs unchanged on these derived changes, its STARTs
 * carried in the daemon group with the lockspace's name.  As every member
 * of L applies the same rule to the same stream, they see the same
 * changes of L at the same points, which is all the protocol needs.
 *
 * State transfer.  A daemon that joins the daemon group (a fresh dlmd,
 * or the other side of a split that merges) does not know the table: it
 * saw none of the messages before its join.  So after every confchg that
 * adds a member, every member (old and new) sends ANNOUNCE: the list of
 * lockspaces it is in.  Its content is the sender's membership at the
 * point the ANNOUNCE is delivered: a daemon's membership changes only
 * by its own JOIN/LEAVE messages, it queues the ANNOUNCE after every
 * JOIN/LEAVE it queued before and before any later one (one FIFO of
 * outgoing messages), and CPG delivers one sender's messages in order;
 * so at the ANNOUNCE's delivery exactly the JOIN/LEAVEs it reflects have
 * been delivered.  (A long list goes out as several ANNOUNCEs, FIRST ..
 * LAST; only a complete one counts.  Before it go the sender's FAILED
 * records: Recorded failures, below.)  Only an ANNOUNCE sent after the
 * confchg that started the sync counts: each carries the configuration
 * it answers (a hash of the members' node ids and pids, the same on
 * every member), and one answering an older confchg, or the rest of one
 * begun before it, is ignored alike by every member; a joiner never saw
 * them, or their first parts.  One daemon's ANNOUNCE holds at most
 * CS_ANN_TOTAL_MAX names: a longer one is dropped (logged), and the sync
 * waits as for a daemon that never announces.  Until X's ANNOUNCE arrives, X is
 * "unknown" to the members that did not know it: they ignore X's JOIN,
 * LEAVE and START (the ANNOUNCE includes what they did).  From the
 * confchg that adds a member until every current member's ANNOUNCE has
 * been delivered after it, the daemon group is SYNCING.  The end of the
 * sync is the delivery of the last of those ANNOUNCEs: the same point for
 * every member (a member that leaves before it has sent one is no
 * longer waited for; a newer confchg that adds a member starts it over).
 * While syncing:
 *   - no START is sent and no lockspace decides (a START delivered then
 *     is counted, the decision waits): a newcomer's table is incomplete,
 *     and deciding needs the same data everywhere;
 *   - everything else goes on: changes that known daemons cause are
 *     applied at once (a failure stops its lockspaces at once and is
 *     recorded for fencing), and running lockspaces keep running: a
 *     fresh dlmd joining the cluster stops nothing.
 * At the end of the sync every member knows the whole table; a
 * lockspace L of ours then takes a new change iff its members differ
 * from the change it had, or one of its members was unknown to us in
 * the sync (J: the joiners, and for a newcomer every old member), or our
 * own JOIN was delivered during it.  That test gives the same answer on
 * every member of L: members that knew each other before the sync saw
 * the same stream for each other, so they have the same J; two members
 * that did not know each other (the two sides of a merge) both find the
 * other in J.  A lockspace of old members only changes nothing.  A
 * lockspace that takes no change decides now if every START is in.
 *
 * Incarnations.  Each daemon is known by node id and process id, as CPG
 * reports them.  A message from a process that is not a current member
 * is dropped (logged); a dlmd that restarts is a new process: its old
 * process left (proc-down: its lockspaces failed with it) before the new
 * one joined, and the new one starts unknown, with no lockspace, until
 * its ANNOUNCE.  Nothing of the old incarnation can be taken for the
 * new one.
 *
 * Races.  A lockspace join racing a node failure: the JOIN is either
 * delivered before the failure's confchg (the node is a member, then
 * fails out of the lockspace with it: fenced before recovery) or not at
 * all (it never was a member); every daemon sees the same one.  A
 * failure while syncing is applied at once by the daemons that know the
 * failed daemon's lockspaces, and starts the sync over (as a join does):
 * a member that did not know the failed daemon (a newcomer) learns from
 * the others' FAILED records, sent before their ANNOUNCEs, which
 * lockspaces it failed out of, before the sync ends.
 *
 * Recorded failures.  A daemon that failed with lockspaces is recorded
 * against each of them in the table, with whether only its dlmd died
 * (until it is fenced), also by daemons that are not in the lockspace:
 * a daemon that joins such a lockspace later waits for that fencing too,
 * even if the failed daemon was the lockspace's last member (its clients
 * may still hold the locks).  The record is state a newcomer cannot have
 * seen, so it is part of the state transfer: with every ANNOUNCE a
 * daemon first sends FAILED(L, ids) for every lockspace L with unfenced
 * failures it recorded.  A member takes such a record (into the table,
 * and its fencing) when it could not have seen the failure itself: the
 * sender was unknown to it, or the failed daemon was unknown to it when
 * it failed in this sync; never for a daemon it has known all along.  A
 * record that lists our own node means that a previous dlmd of ours died
 * in L, perhaps with clients that still hold its locks (logged at err),
 * or, when it names this very process, that its sender lost us at a
 * split (logged at info: the sync's end decides, FORGIVING A SPLIT, and
 * says so once at notice); fencing
 * ourselves is no answer (dlmd_fence_is_done() of our own id is always
 * true), so we take no part in L (no START: "fencing of us" in dlmctl ls)
 * until every such sender has seen our node fenced - it then sends its
 * record again without us - or has left the daemon group, or the sync
 * forgives our failure.  As the table
 * says which lockspaces a dlmd that died was in, every daemon fences a
 * node whose dlmd died with lockspaces (DAEMON FAILURE), not only the
 * lockspaces' members.
 *
 * Versions.  The messages carry a protocol version (plugin/cpgmsg.h; 2
 * since lockspaces moved into the daemon group, 3 since they are
 * sealed, 4 since an ANNOUNCE vouches and FAILED records carry what
 * FORGIVING A SPLIT needs).  A message of another
 * version is refused and the sender logged, once; as such a daemon
 * never sends an ANNOUNCE we understand, the daemon group stays syncing
 * while it is a member: no lockspace changes membership (dlmctl ls says
 * what it waits for).  A version-1 dlmd runs its lockspaces in groups of
 * their own that version 2 never joins: the two must not share a
 * cluster (no rolling upgrade between them).  Versions 2, 3 and 4 do
 * share the group, and 4 refuses 2 and 3 as above (2 carries no seal;
 * 3's seal verifies, so a version-3 dlmd counts as a dlmd that never
 * announces; its FAILED records have another layout): stop every dlmd
 * to upgrade.
 *
 * SEALED MESSAGES.  corosync admits to CPG the users and groups of its
 * uidgid, not only root, and CPG names their processes by their host's
 * node id: such a process could send what a dlmd sends, as its node.  So
 * every message we send is sealed (plugin/cpgmsg.h: a MAC under a key
 * derived from the cluster key, over the message, our CPG node id and
 * pid, our random incarnation and a sequence).  The seal is checked
 * before anything else (seal_ok): with the same key, bytes and CPG
 * sender on every member, every member drops the same messages.  A
 * process's first verified message fixes its incarnation; later ones
 * must carry it and a greater sequence; a process that leaves has its
 * incarnation retired (the last CS_RETIRED_MAX), so one that gets its
 * CPG pid later cannot replay its messages.  One that leaves with
 * node-down (a split) and comes back with node-up, same node id and
 * pid, is the same process: its incarnation and sequence, kept, are its
 * again, and the merge starts a sync (merge_keep()).  One that merges
 * back whose seal we did not keep (we joined while apart, or it started
 * on the other side) may have sealed there: we wait for it as for one
 * that was there before our join, and vouch for nobody until its
 * message verifies; one we saw join and leave with node-down before it
 * sealed comes back pending (merge_pending()).  A message that
 * does not verify is dropped, counted (status cpg_unverified) and said,
 * rate-limited: whoever sent it has not the cluster key.
 *
 * PID REUSE.  A kept (node id, pid) is not always the same process: a
 * dlmd started as pid 1 of a container, or under a low fixed pid, gets
 * the same pid again when it restarts while its node is cut off, or when
 * the whole node restarts and its corosync, with the new dlmd in it,
 * merges back (node-up).  Its messages verify under the cluster key but
 * carry another incarnation than the one kept.  Only the process that
 * holds a pid can send under it (the seal covers CPG's node id and pid),
 * but another incarnation is no proof of a new process: a message sealed
 * by an EARLIER dlmd of the node that had the same pid verifies as well,
 * and the retired list holds only what this receiver saw leave (the last
 * CS_RETIRED_MAX, none from before our own start).  Such a message
 * replayed under the live process's pid (an injection at the CPG layer),
 * taken for a restart, retired the live incarnation: every later real
 * message refused, the cluster syncing for ever (test-cpg-proto,
 * test_rev_replay_*).  So another incarnation is taken for a new dlmd
 * only where a restart is possible and not yet disproved: a process that
 * merged back with node-up under the seal we kept (merge_take) and whose
 * message is the first to verify since (dm_may_restart, cleared at it).
 * Then it is a new dlmd of that node: the one kept is gone, exactly as
 * at a restart under another pid (reincarnated(): its incarnation
 * retired, its lowcomms state dropped, the new one unknown until its
 * ANNOUNCE, an unfenced failure of the node marked DLMD_FAIL_RESTARTED).
 * Anywhere else another incarnation is a replay, dropped as before; a
 * process whose join we saw takes the incarnation of its first message
 * (as before).  The window that stays open: between such a merge and the
 * process's first message, a replayed message of an earlier dlmd under
 * that pid is taken for the restart (the node fenced or decided as at a
 * restart, the live process's messages refused until UNREACHABLE PEERS
 * removes it).  A retired incarnation stays refused (a replay).  Dropping them as replays, as
 * before, lost the new dlmd's ANNOUNCE, and the merge's sync waited on
 * it until UNREACHABLE PEERS removed the node, or for ever.  Whether a
 * side that held a majority saw the restart is decided as under another
 * pid (RESTARTED WHILE APART: apart_defer at the merge, ap_inc), except
 * that a vouch for the node's process counts as seeing it only with
 * another incarnation than the one that failed: a member of our side
 * that kept the old seal vouches for the old one, and proves nothing.
 *
 * Nor is such a process a dlmd.  A process's first sealed message
 * (sequence 1) is its join for our purposes: every member sees it at
 * the same point, it too, and a sync starts there (dlmd_joined), with a
 * number mixing the process into the members' (the same everywhere).
 * A CPG join we see starts nothing; until its first sealed message the
 * process is pending(): no sync waits for its ANNOUNCE, its leave or
 * death is nobody's (daemon_confchg_ls), and lockspace members are
 * dlmds of the table, so no START waits for it either: a stranger's
 * presence changes nothing there.  A process beside a dlmd of its node
 * id that never sealed a message takes nothing of that dlmd's
 * (second_of_node), and its leave starts no sync again.  Nor does it
 * count as its node (dmembers_update: majority, UNREACHABLE PEERS,
 * fencing turns).
 *
 * VOUCHING.  A dlmd cannot tell a process that was there before its
 * own join from a dlmd that has not spoken yet.  The dlmds that can
 * tell every member (each they saw join, or verified a message of)
 * vouch in their ANNOUNCE's FIRST part for every process that has
 * sealed a message (node id, CPG pid, incarnation); at its delivery the
 * newcomer takes a process that it lists for a dlmd (with that
 * incarnation) and one it does not list, whose message the newcomer has
 * not verified either, for nobody (pending from then on, as it is to
 * those that saw it join: vouch_apply says why nothing sealed can be
 * missed).  Every member awaits the same processes from there, so the
 * sync ends at the same point for all, the stranger still there.  A
 * dlmd that starts where another process of its node id is in the group
 * goes by the same test (ONE DLMD PER NODE ID): not listed, it is not
 * waited for, but if it seals a message after all, the order of the two
 * first sealed messages says which of the two stops.  What stays: with no dlmd
 * able to vouch (the first dlmd of a cluster starting beside such a
 * process, or every dlmd of the cluster started after it, none of which
 * could tell it) the dlmds wait for it as for a dlmd that has not
 * spoken, their sync and the lockspaces they join, until it leaves:
 * taking it for nobody after a time would take a dlmd that is slow or
 * stopped (SIGSTOP) for nobody too, and run its lockspaces without it.
 * Before the first vouching ANNOUNCE is delivered the newcomer counts
 * only the processes whose messages it verified (cs_dmembers), and such
 * a process that dies then is a failure to it alone (its sync starts
 * over).  A dlmd of version 2 that joins after us is
 * pending alike; it cannot read our ANNOUNCEs, so it never ends a sync
 * and runs no lockspace.  crypto = none seals with 32 zero bytes: a key
 * known to all, so the seal proves nothing and the rules above the seal
 * (second_of_node) are what holds.
 *
 * THE LOCKSPACE PROTOCOL.  Every member applies the same deterministic
 * rule to the same sequence of events (the derived changes above, and
 * the STARTs), so every member takes the same decisions at the same
 * point of the sequence, with no further agreement round.
 *
 *  1. change.  On every change of the lockspace's members (a join, a
 *     clean leave, a daemon exit, a node failure) each member at once
 *     stops the lockspace in the engine (dlm_core_ls_stop: requests and
 *     lock messages are held), and forgets whatever it had collected for
 *     the previous change.  Nodes that left with reason node-down, and
 *     nodes whose dlmd left without a clean leave (reason proc-down: it
 *     died or was killed while its node stayed up), are recorded as
 *     failed: they must be fenced before recovery.  Only a clean leave
 *     (the lockspace was released, or dlmd stopped cleanly, which
 *     releases every lockspace first) needs no fencing.
 *
 *  2. wait conditions, each member for itself:
 *       quorum   the cluster is quorate, the quorum's node view contains
 *                every member, and it already reflects the change (after
 *                a node failure corosync reports CPG confchg, totem ring,
 *                then quorum; quorum state from before the failure must
 *                not count, or an isolated node would believe itself
 *                quorate and recover alone): either the quorum view no
 *                longer lists the failed nodes or its ring is newer than
 *                the one seen at the change;
 *       fencing  every node that failed out of the lockspace since its
 *                last completed recovery is fenced (fence.c);
 *       sync     the daemon group is not syncing.
 *
 *  3. START.  When its conditions hold, each member multicasts START (in
 *     the daemon group, agreed order, with the lockspace's name): the
 *     member list of the change it answers, the last event it took part
 *     in (0: it has never run the lockspace, "fresh"), and the members
 *     of that event.
 *
 *  4. decision.  A START counts for the current change when it is
 *     delivered after that change, comes from a member, and carries the
 *     member list of that change (a START answering an older change that
 *     is delivered late carries another list and is ignored).  When every
 *     member's START has been counted (and the group is not syncing),
 *     every member decides, at the same point of the sequence and on the
 *     same data:
 *       - stateful merge: members that ran the lockspace ("has state") but
 *         whose last event is older than the newest one reported were cut
 *         off while the others recovered without them (a healed
 *         partition).  Their locks may conflict with what was granted
 *         since: they are LOSERS.  A loser drops its instance of the
 *         lockspace (forced release: its clients lose their locks) and
 *         leaves it; the others decide nothing and wait for the change
 *         that its LEAVE causes;
 *       - otherwise the event number is E = (newest last event) + 1: it is
 *         larger than every member's previous event (the engine requires
 *         increasing events), the same on every member, and a fresh
 *         joiner learns it from the others' STARTs.
 *     Each member then starts recovery in the engine,
 *     dlm_core_ls_start(E, members), once it is quorate.  The engines run
 *     the recovery steps and their barriers among themselves over
 *     lowcomms (core/recover.c).
 *
 *  5. finish.  The engine's recovery_done(E) means its last barrier was
 *     passed by every member.  If still quorate the member calls
 *     dlm_core_ls_finish(E) and locking resumes; held LS_CREATE replies
 *     of a joining lockspace are sent then.
 *
 *  A newer change at any point goes back to 1: the engine aborts a
 *  recovery in progress on stop, and the newer event restarts it.
 *
 * EQUAL SETTINGS.  The engines of a lockspace must agree on remastering
 * (dlm.conf remaster_secs on or off, and with it on, remaster_shared):
 * an engine with it off answers an operation on a lock that moved with
 * no refusal, and holds no re-point, so with the re-point protocol on
 * the others a lock's operation never completes (dlm-sim --mixed N
 * --remaster --repoint: within 200 seeds whichever node is off; with the
 * rule alone 1,000s of seeds passed, but no argument says it always
 * would).  Switching every engine to the safe value at run time would
 * need one agreed point with moves, held re-points and MIGRATE records
 * in flight, which the engine has none of; so a joiner with other
 * settings is refused instead, and a lockspace never runs mixed.  Every
 * START carries its sender's settings (cpgmsg.h, version 5), and at step
 * 4 every member computes, from the same STARTs, the same set of
 * refused members: a fresh member (last event 0) whose settings differ
 * from the reference, those of the members that ran the lockspace (they
 * agree), or, if none did, those of the fresh member with the lowest
 * node id.  A fresh member is held to the reference alone: one that
 * agrees with it is not refused for differing from another fresh member
 * (nodes 1 off, 2 on, 3 off: only 2 is refused).
 * Every member logs each refusal at error with both settings; if any,
 * the decision is not taken (as for a stateful merge's losers): the
 * refused ones drop their instance (their clients' create fails with
 * EPROTO) and leave, and the others decide at the change that causes.
 * remaster_window and remaster_secs' value (both on) need not agree:
 * each master decides alone (a warning); fold_lone_locks only changes a
 * node's memory (core/solo.c) and is carried for the log.
 * deadlock_secs is not carried.  Its value need not agree: a request
 * probes on its own node's clock, and a probe is judged at home against
 * that node's own rounds (core/deadlock.c, recent_round); a probe's hops
 * elsewhere do not look at the period.  Only on against off matters, and
 * only for liveness: an engine with it off (0) starts no probe and
 * drops every probe it gets, so a cycle of waits through one of its
 * locks, or whose youngest request is its own, is never broken (as if
 * every engine had it off), and nothing is ever granted twice either
 * way.  Carrying it would take a protocol bump (a v5 decoder refuses an
 * undefined settings flag), which refuses every v5 dlmd beside it: a
 * price larger than a liveness gap that only a dlm.conf differing
 * between nodes opens; dlm.conf(5) says to keep it on or off alike.
 * audit_secs is local alike (a master answers an AUDIT whatever its own).
 *
 *  Our instance's place in these steps is one value, cl_state (joining,
 *  stopped, started, decided, recovering, running, or stale for a loser),
 *  changed only by set_state(), which logs each transition; dlmctl ls
 *  says what it waits for from it (dlmd_cluster_ls_describe).
 *
 * Joining and leaving.  A lockspace created on this node (libdlm, dlmctl
 * join) is created in the engine with this node alone and stopped at
 * once, then its JOIN is sent; the JOIN's delivery is a membership change
 * like any other, and the client's create request is answered when the
 * first recovery finishes.  An instance knows its own JOIN by the
 * header's sequence number: a lockspace released and created again
 * before its first JOIN is delivered has JOIN, LEAVE, JOIN in the queue,
 * and only the second JOIN binds the new instance (the others see the
 * same three changes of the table; we take part from the second).  Releasing a lockspace sends LEAVE (a clean
 * leave for the others: no fencing).  A dlmd killed, or crashed, is a
 * daemon failure (reason proc-down): its node is fenced (DAEMON FAILURE).
 * Outgoing messages wait in one FIFO while corosync says "try again"
 * (they keep their order); dlmd's clean stop sends what is queued before
 * it leaves the daemon group.
 *
 * DAEMON FAILURE.  A dlmd that dies while its node stays up leaves the
 * daemon group with reason proc-down.  Its clients may still be alive,
 * inside their critical sections, and learn of it only at their next
 * libdlm call: their locks must not be given away before the node is
 * fenced, exactly as for a node failure (the established DLM fences a
 * node whose control daemon fails with lockspaces).  So a proc-down of a
 * dlmd that the table shows in a lockspace counts as a failure of the
 * node, for every daemon; as corosync on that node is up, the node stays
 * in the quorum view, and fencing does not wait for a view without it
 * (fence.c: DLMD_FAIL_DAEMON).  A proc-down of a dlmd without lockspaces
 * needs nothing.
 *
 * ONE DLMD PER NODE ID.  A second dlmd on a host (a second dlm.conf with
 * sockets of its own, which the single-instance lock of main.c does not
 * see) gets the host's node id from corosync.  On dlmd's port it cannot
 * listen and stops; on a port of its own it would join the daemon group
 * beside the first, and its JOINs, START and lock traffic under the same
 * node id stopped every lockspace and got the node fenced (seen in
 * tests/test-cluster-dupid.sh).  But a process of our node id in the
 * group need not be a dlmd (SEALED MESSAGES: corosync lets more than
 * root use CPG).  So the daemon group's first confchg of a dlmd takes
 * note (dup_node_id()): another process of our node id that was a member
 * before us, or that joined with us with a lower CPG pid, is a suspect.
 * We send our join.  Of two dlmds of one node id, the node's dlmd is
 * the one whose first sealed message is delivered first (every member
 * sees the two in the same order, and second_of_node on the others
 * keeps that one); the later one stops itself (exit 1, at err, sending
 * nothing more: dup_first()).  So we stop at the first message of the
 * suspect that verifies if it is not its first (it sealed before our
 * join; it has the key; one of version 3 too: its seal verifies, while
 * a version-2 header proves nothing, as it needs no key), at its first
 * if ours is not delivered yet, at a dlmd's ANNOUNCE that vouches for
 * it, and at the first sealed message of any other process of our node
 * id delivered before ours.  A dlmd's ANNOUNCE that can tell everybody
 * and does not vouch for it makes it nobody to wait for and we stay, as
 * we do when it leaves (VOUCHING); it stays a suspect all the same: a
 * real dlmd whose first message was held up (load, "try again") seals
 * it later, after ours, and stops itself then, at that same point.  A
 * process that never seals (a stranger) stops nobody.  A
 * real second dlmd is answered at once by the node's first (the sync
 * our join starts), so it stops within a round trip; while it runs its
 * messages are dropped by every member (second_of_node), and its sync
 * cannot end before the answer that stops it.  With nobody to vouch we
 * neither stop nor stop waiting for it.  The dlmd that stays, and every
 * other member, logs the second one at err.  Its join starts a sync as
 * any join does (which it never answers: lockspaces change no members
 * until it leaves, as with a process of another protocol version), but its
 * node id does not count as unknown in it while the node's first dlmd,
 * known, is still a member (daemon_confchg_ls), so its coming and going
 * restarts no lockspace's recovery; its leave is no failure of the node
 * (that dlmd is still there), and nothing of it is in a lockspace.
 *
 * SPLIT AND MERGE.  A network blip shorter than it takes to fence can
 * still make totem split the ring and merge it again: each side sees the
 * other leave with reason node-down, then come back with reason node-up
 * (a merge: the same daemons, with the state they kept while apart).
 * Fencing that waits for "a quorate view without the victim" then waits
 * forever, as the victim is back in the view.  The rule:
 *  - every member learns of a failure from its own daemon group confchg.
 *    CPG delivers it in the same order on every member of a side, and a
 *    side's membership at that point is what that member records: the
 *    failure was "seen from a majority" iff that side held a strict
 *    majority of the configured nodes (2 * members > nodes, or half with the tie-breaker: below), counted in
 *    the daemon group or, if not there, in the totem ring that corosync
 *    delivers right after (nodes whose corosync runs without a dlmd
 *    count there; daemon_totem_confchg()).  Two disjoint sides never both
 *    hold one, whatever the timing of quorum notifications (which come
 *    after the confchg and, in a fast split-merge, may not come at all).
 *  - a member that saw a node fail from a majority side, and then sees it
 *    merge back (reason node-up) without having fenced it since by a
 *    method that stops nodes (a fence_ack, or enable_fencing = 0, does
 *    not count: such a node may be alive with stale state), removes
 *    it from the cluster (corosync_cfg_kill_node): its corosync exits, its
 *    dlmd with it; it leaves with node-down, is fenced, and can come back
 *    only as a fresh node, with no lockspace state.  It may also be fenced
 *    while still in the view (fence.c: DLMD_FAIL_MAJORITY).
 *  - the formerly isolated side saw the majority fail from a minority
 *    side: after the merge it is quorate again and sees them in the view,
 *    but never removes or fences them (its failures carry no majority
 *    mark, so its fencing waits for a view without them, which never
 *    comes); it is removed instead.  CPG delivers one side's confchgs
 *    identically to every member of that side, so all members of a side
 *    decide alike; at most one side holds a majority, so exactly the
 *    minority side goes.
 *  - a node whose failure was seen from a minority side may instead
 *    come back afresh (it really died, and restarted): its new dlmd
 *    joins the daemon group with reason join, which a merge never
 *    shows.  The incarnation we lost is gone, so no majority is shot by
 *    fencing it, and it must be fenced (its clients may have outlived
 *    it; the new dlmd itself waits for that): once quorate we fence it
 *    while it is in the view (fence.c: DLMD_FAIL_RESTARTED).  Without
 *    this, a node left alone by two failures, both restarted, waited
 *    for a view without the node it had to fence, for ever.
 *  - nothing recovers in between: lockspaces stopped at the split, and
 *    START waits for the failed node to be fenced on every member.
 * An even split (2 + 2 of 4, or 1 + 1 in a two_node cluster) counts the
 *    half holding the tie-breaker node as the majority: votequorum's
 *    auto_tie_breaker_node where auto_tie_breaker is on (the half it
 *    keeps quorate), else the lowest configured node id (read_tiebreak).
 *    Exactly one of two disjoint halves holds it, so the rule stays
 *    symmetric-safe, and a two_node cluster's blip that merges back
 *    resolves by itself: node 1 (say) removes and fences node 2.  A half
 *    that is not quorate still fences nobody (fence.c), so in a 2 + 2
 *    split without auto_tie_breaker the winning half removes the others
 *    and then waits for quorum, i.e. for them to come back fresh.  The
 *    half without the tie-breaker delays its fence command (fence.c,
 *    DLMD_FAIL_EVEN_LOSER), so in a two_node cluster the halves of a
 *    real partition do not shoot each other: the tie-breaker's wins.
 *
 * CONFIGURATION CHANGES.  What a majority is counted against (the
 *    configured nodes, the tie-breaker node) is read from corosync's
 *    cmap at start, and again whenever nodelist.node.* changes (cmap
 *    tracking; corosync-cfgtool -R after an edit of corosync.conf).
 *    quorum.auto_tie_breaker(_node) is fixed at start, as votequorum
 *    fixes it, while what votequorum runs (runtime.votequorum.atb_type,
 *    off while the node count is odd without wait_for_all) is tracked
 *    and followed (read_tiebreak, TIE-BREAKER FIXED AT START); with the
 *    nodelist, the lowest or highest configured id it names can still
 *    change.
 *    The reloads of the nodes' corosyncs do not happen at one point of
 *    the daemon group's stream, and members of one side that counted a
 *    split against different pairs would not decide alike (worse, two
 *    halves could each count themselves the tie-breaker's).  So a dlmd
 *    whose reading differs from the pair it decides with says so to the
 *    group (CONFIG), and every member decides with the pair of the last
 *    CONFIG delivered (the same at every point of the stream on every
 *    member), with its own reading until one is: a dlmd started after a
 *    change reads the changed configuration (the same, as long as
 *    corosync.conf is the same on every node).  Once a CONFIG was
 *    delivered, the lowest known member sends the group's pair again at
 *    each sync's start (config_resend), so a dlmd that joins later
 *    decides with the group's pair from that CONFIG on, before its sync
 *    ends, even where its own reading differs (a partial reload, a
 *    corosync.conf that differs).  A reading that did not reach the
 *    nodelist's end (read_nodelist: an error mid-walk) is not taken and
 *    sends no CONFIG: the last complete one stays and the read is
 *    retried.
 *
 * FORGIVING A SPLIT.  A split into sides none of which holds a majority
 * (three singletons of three nodes, after a bad network on one node)
 * that merges back left every side waiting to fence the others: nobody
 * may fence (no majority mark, and the victims are in the view again),
 * nobody is removed, and each member's FAILED records hold the others'
 * lockspaces ("fencing of us").  Yet nothing was given away: a lock of X
 * moves to another node only through a recovery of a lockspace without
 * X; every member stops a lockspace at the confchg that shows X gone,
 * before anything later is delivered, and grants nothing while stopped;
 * a recovery needs every remaining member's START for the same change,
 * and a START needs X fenced on its sender.  Whether a side recovered L
 * without X shows in L's last event: that side's is newer than X's.  So
 * at the end of the sync that follows a merge (every FAILED record and
 * ANNOUNCE delivered, the same stream on every member) every member
 * applies forgive_split(): a FAILED record (each daemon sends one at
 * a sync's start of every lockspace it holds, with no failures listed
 * too, and of every other one it recorded failures in) carries its
 * sender's last event of the lockspace and, per failed node, the CPG
 * pid and incarnation it failed with (cs_failpid, taken at its leave)
 * and flags FENCING (the sender saw a FENCE_CLAIM or FENCE_RESULT for it since
 * the failure, or has one of its own on the way, or a command runs, or
 * pacemaker's fencer has a fencing of it under way) and
 * FIRM (the failure is no node-down seen from a minority: a dlmd
 * failure, a majority's or the tie-breaker half's, the other half of an
 * even split, a removal, a restart).  X's failure is dropped (le_failed,
 * the claims of our own failure when X is us, fence.c's pending fencing
 * through dlmd_fence_forgive(), logged with the reason, status
 * fence_forgiven) iff every record of this sync that lists X names the
 * same (pid, incarnation), which is the member X now (known, its seal's
 * incarnation); none of them carries DAEMON, FENCING or FIRM; no claim
 * or result for X was delivered in the sync itself; and in every
 * lockspace a record lists X in, X is a member now and every member
 * (X included) sent a record of it in this sync with one and the same
 * last event, or X is no member of it any more: X, the same process,
 * left it on its side (its LEAVE, seen there only; or it dropped it as
 * a loser), so none of its locks is X's and the others' events do not
 * matter for X (before, X stayed failed there and the lockspace waited
 * for a fencing that never came: test_split3_left_apart).  Then the sync's end changes the lockspaces (their members
 * differ from the change each side had) and a full recovery runs with
 * every member, equal events deciding a START (member-policy.c).  The
 * engine messages in flight across the split must not be lost: that
 * recovery has no departed node, and core/recover.c redoes only the
 * operations in flight to a departed one (a request or reply dropped
 * between two members that both stay waits for ever).  So the lowcomms
 * state of a node lost node-down from a minority side (no majority or
 * even-split mark, not fenced at once) is not dropped at its leave, as
 * any other leaver's is, but kept (cs_reset_later) until it is fenced
 * and gone, or joins as another process (a restart: another pid, or
 * reason join); merged back as the same process it reconnects with the
 * epoch we know and the unacknowledged frames are resent, exactly once
 * and in order (lowcomms.c), as after any reconnect; forgiven, it keeps
 * it.  Otherwise X stays failed, to be fenced or removed as before.
 *
 * Why forgiving cannot give two holders.  Forgiving X changes one thing:
 * a lockspace L that X was in recovers with X as a member, its locks
 * its own, instead of after X's fencing without it.  That is wrong only
 * if some lock X holds was granted to another node meanwhile, which
 * takes a recovery of L without X somewhere (above), which moves that
 * side's last event of L past X's.  Every member of L sends its event
 * in its record, and nobody is forgiven in a lockspace with a member
 * that sent none, so a side that recovered is seen as long as one of its
 * dlmds is still a member of L; one that released L since holds none of
 * its locks.  A
 * recovery in progress across the merge (decided, not finished) shows
 * too: the event is the decided one.  X itself is the same process
 * (pid and incarnation: a restarted dlmd is a new incarnation, and its
 * old clients may hold locks while the table thinks them gone), and it
 * failed by node-down only: its dlmd never died, and it never dropped
 * its lockspaces (a loser drops its instance and sends LEAVE).  A
 * fencing begun anywhere (FENCING, or a claim in the merged stream) may
 * be about to kill X; forgiving it then would only be overtaken by a new
 * failure, but a minority never claims, so where one exists a majority
 * saw the failure and the rule stays out of its way.  All of this comes
 * from CPG-ordered messages and confchgs (a claim seen on one side only
 * travels in that side's records), never from a local clock, quorum
 * notification, fence_ack or lowcomms state, so every member whose sync
 * ends at the same point decides alike.  Where two members still decide
 * differently (below), one keeps X failed: it sends no START for a
 * lockspace with X until X is fenced, and nothing recovers without its
 * START, so the difference can only stall, never grant.  Quorum is not
 * relied on for any of it.
 *
 * What it assumes: a completed fencing killed its node.  "One that
 * released L since holds none of its locks" is safe only because the
 * X that side recovered L without is dead: a restarted X is another
 * process and never forgiven.  A fencing that leaves X running breaks
 * it: 'dlmctl fence_ack' of a node that was only cut off, or storage
 * fencing (fence_scsi, fence_mpath) that a later unfencing undoes.  Say
 * five nodes split into { 1 2 3 }, { 4 }, { 5 }: the majority fences 4
 * and 5 that way, recovers L without them, grants their locks to others
 * and leaves L; 4 and 5, still L's only members with one and the same
 * event, merge back and forgive each other, and both sides' holders
 * hold the same locks.  That is the hazard fence_ack of a live node and
 * enable_fencing = 0 carry anyway (README, What fencing protects;
 * dlmctl.8 fence_ack); forgiving adds the storage-fencing case, where a
 * node so fenced must not merge back with its old dlmd (reboot it, as
 * the unfencing of fence_scsi expects).
 *
 * FENCED ALIVE.  A fence agent can also lie: it exits 0 without fencing
 * (misconfigured, a "true" agent in a lab, an IPMI that reports off and
 * did nothing).  The node is counted fenced (fence.c: killed, a method
 * that stops nodes), its locks recovered and granted again elsewhere;
 * when its network comes back, its OLD dlmd process merges back (node-up,
 * the incarnation that failed) and its clients still believe they hold
 * their locks: two holders.  dlmd cannot undo that, but it no longer
 * takes the node in as a fresh incarnation ("back after it was fenced",
 * at info):
 *  - every survivor that kept the returning process's seal, and counted
 *    its node killed since, knows it at the process's first message
 *    after the merge: the same incarnation (fenced_alive()).  It logs at
 *    crit the node, the agent and what happened, counts it (status
 *    fence_lied, metric dlmd_fence_lied_total) and marks the node failed
 *    again (fenced while in the view); the lowest of them (the lowest
 *    member other than the node) removes it from the cluster: one
 *    removal, as a second one may reach the node's corosync restarted
 *    after its fencing (a lowest member that joined while the node was
 *    apart kept no seal and does nothing: the fencing alone stops the
 *    node then);
 *  - the returning process learns it was declared dead at its sync's
 *    end (declared_dead()): a record of a lockspace it ran, from a
 *    member of its own instance of it, carries a newer event than its
 *    own, which a side reaches only by a recovery without it, after its
 *    fencing (or a fence_ack of it).  It logs at
 *    crit, counts it, and drops every lockspace it ran (a loser's forced
 *    release: its clients lose their locks and learn it at their next
 *    call) instead of keeping them stopped, its clients believing, until
 *    the removal.  The stateful-merge rule of decide() would have done
 *    that only at a START, which it never sends while it waits for the
 *    others' fencing (their failures, seen from its minority side, are
 *    not forgiven: the events differ).
 * dlm_controld does the like on a "stateful merge": it refuses the
 * merged node's lockspace state and has the node killed.  A process that
 * merges back and never speaks again is removed by UNREACHABLE PEERS.
 *
 * RESTARTED WHILE APART.  X's dlmd may restart while X is cut off (an
 * admin or pacemaker restarts it, or it crashed and systemd did): the
 * new process joins X's one-node ring, and at the merge CPG shows it
 * with node-up like any merged-back member, under another pid (or, pid
 * reused, another incarnation: SEALED MESSAGES).  Can X's failure be
 * let go without fencing?  What X's old process held: a minority ring
 * stops every lockspace at the confchg that splits it (no quorum, and
 * its START waits for the others' fencing), so it granted nothing
 * afterwards; its locks are exactly those it held at the split.  No
 * other side recovered without X either (no majority), so none of them
 * was granted elsewhere: the table is right that nobody else holds them.
 * But they are not gone: they were granted to X's clients, which learn
 * of their dlmd's death only at their next libdlm call and may be inside
 * their critical sections now, writing shared storage under a lock the
 * new dlmd knows nothing of (it starts with no lockspace).  The new
 * process proves the old one dead (one dlmd per host: main.c's lock),
 * never its clients; the old process did not release its lockspaces
 * where anyone saw it.  So X is fenced, as a dlmd that dies with
 * lockspaces is (DAEMON FAILURE) and as a restart that joins with
 * reason join is (SPLIT AND MERGE: DLMD_FAIL_RESTARTED), and as the
 * established DLM does (a node whose control daemon died with
 * lockspaces must be fenced: its lockspaces are uncontrolled): the
 * fencing kills the new dlmd too, and X comes back fresh.  Before, it
 * waited for a view without X, which never comes while X is back: every
 * lockspace X was in stopped for good.  So at the merge confchg, a node
 * that comes back node-up while its failure (a minority's node-down, no
 * FIRM mark, not fenced) names a process that is no member of the
 * merged group is marked DLMD_FAIL_RESTARTED (restarted_apart()),
 * logged at notice; its FAILED records then carry FIRM, so nobody
 * forgives it in the sync either (its process differs anyway).  Every
 * member of a side sees the same confchg, so all of them mark it; a
 * member that only learns the failure from a record leaves the fencing
 * to those (ONE FENCER).  A dlmd that died while apart and is not back
 * at the merge goes the same way: no process of X merges, and the totem
 * ring that corosync delivers after the group's confchg of the merge has
 * X again; the group has every member of X's side by then, so the
 * process that failed left it there (died_apart(), in
 * daemon_totem_confchg).  Both only when the side that came back (the
 * node-up joiners; the ring's newcomers) is no majority.  When it holds
 * one, it may have been a majority side on which X's dlmd stopped and
 * started in plain sight (handled there; it removes us, stale): marking
 * X there would have the minority fence a healthy node of the majority.
 * Or it was several minority sides at once (the three-way split), which
 * X must be fenced for.  The merge's sync tells them apart: a member
 * whose ANNOUNCE vouches for X's new process verified it before the
 * merge, on X's side; if those and X hold a majority, nothing is marked;
 * else X is marked at the sync's end (apart_defer).  A dlmd that died
 * leaves nobody to vouch for: marked at the sync's end.  That a majority
 * side removes us before it is no rule: its kill is sent before its
 * ANNOUNCE, but through corosync's cfg service, not CPG, and our
 * corosync may deliver the rest of the sync before it exits.  So the
 * sync's end does not rest on that order (apart_stale_us): a record of
 * this sync that names this very process failed with FIRM comes from a
 * side that saw us fail from a majority (a minority's node-down is never
 * FIRM), which removes us and marks what it must itself: we mark nothing.
 * And a deferred X is marked only if it failed out of a lockspace (our
 * table or a record of the sync): a dlmd in none had no locks, and needs
 * no fencing, as a dlmd that dies without lockspaces does not (DAEMON
 * FAILURE).  Where the majority side holds no lockspace it sends no
 * record, and its removed dlmd had none either: nothing is marked.  A restart that reuses the pid
 * shows only at the new process's first message, by its incarnation
 * (PID REUSE).
 *
 * LOST FRAMES.  lowcomms delivers engine messages in order and exactly
 * once while both nodes keep each other; a peer resuming past what we got
 * (ops_frames_lost) means messages between two live members are gone for
 * good, and the engines (which have no retransmission of their own) would
 * hang on them.  dlmd_cluster_frames_lost() then removes the higher id of
 * the two from the cluster (both ends, if both notice, pick the same
 * node; corosync_cfg_kill_node, retried for up to a second) and, when
 * that is the peer, fences it at once (DLMD_FAIL_REMOVED: also while it
 * is still in the view); the others recover without it.  It acts once
 * per incarnation of the peer (until it leaves the daemon group).
 *
 * UNREACHABLE PEERS.  Corosync (totem over knet/UDP) and lowcomms (our
 * own TCP or SCTP port) are separate paths.  A firewall rule on our port,
 * a full conntrack table, a broken MTU or a half-dead NIC can cut
 * lowcomms between two nodes that corosync keeps in the membership:
 * lowcomms then keeps the frames queued and reconnects for ever, and
 * every lock whose master or directory lies across the cut waits for
 * ever (the kernel DLM hangs the same way).  The stall watchdog only
 * reports it.  GPFS "expels" one of the two nodes; so do we:
 *  - detection: lowcomms says how long the oldest frame queued for a
 *    peer has waited without an ack that advances (lc_node_wait_ms;
 *    lowcomms.c, PEER UNREACHABLE).  A live peer acks within
 *    milliseconds; a wait of peer_unreachable_secs (dlm.conf, default
 *    20 s: well above corosync's token, which takes a dead node out of
 *    the view long before, and above a reconnect backoff or two) means
 *    the path is cut, not slow.  Never less than corosync's token +
 *    consensus, whatever the setting (unreach_limit): a whole node
 *    paused for less than the token stays in corosync's view and must
 *    stay in ours (tests/test-cluster-vmpause.sh).  A member that has nothing queued for a
 *    peer needs nothing from it and reports nothing.  A new lowcomms
 *    epoch of the peer that lowcomms has paused while the life we knew
 *    is not connected counts as the same wait (lc_node_paused_ms;
 *    lowcomms.c, PEER RESTARTED; plugin/comms.c, RESTARTED PEER): a
 *    restart whose old daemon's leave never comes (below: not while
 *    another dlmd of the node is a member) is resolved by a removal,
 *    never by dropping frames between live daemons.
 *  - report: every STALL_TICK_MS, a daemon with such peers multicasts
 *    UNREACH, the whole set of members it cannot reach (plugin/cpgmsg.h),
 *    again every tick while the set is not empty, and once, empty, when
 *    it heals.
 *  - decision: every member keeps each member's last set and counts the
 *    reports of each cut pair; all of it starts over at every confchg
 *    (a joiner saw none of the earlier reports, and every member of the
 *    new configuration sees the same reports after it: CPG's extended
 *    virtual synchrony).  A pair reported twice decides: both ends
 *    reported it, or one end again a tick later, by which time the
 *    reports of a wider cut are in.  Of its two ends the one cut off
 *    from more members goes (a node whose NIC is dead to everyone, not
 *    the peer that noticed first).  On a tie, when only one end reports
 *    the pair, the silent end goes, once the other has reported it
 *    CUT_ONE_SIDED_SEEN times (room for the silent end's report, were
 *    it merely late): the reporter proves its dlmd runs, and the silent
 *    one may be a dlmd that does not (SIGSTOP, a hung host), which
 *    reports nothing.  The higher id went here before: with the hung
 *    dlmd on the lower id and one peer waiting on it, the peer was
 *    removed and fenced, the hung dlmd stayed, and the next member to
 *    wait on it went the same way, until the cluster lost quorum
 *    (tests/test-cluster-linkcut.sh step 3).  A one-sided cut between
 *    two live dlmds loses one node either way.  When both ends report
 *    it, the higher node id goes.  Pairs
 *    are taken in ascending order and a pair with an end already chosen
 *    decides nothing more.  As every member applies this to the same
 *    sequence, all choose the same node at the same point, with no
 *    further round; a node reported cut by a majority is cut off from
 *    more members than any of its peers, so it is the one that goes.
 *  - removal: exactly as for LOST FRAMES: every member records the node
 *    as failed with DLMD_FAIL_REMOVED (fenced also while corosync still
 *    lists it), and the lowest other member removes it from the cluster
 *    (corosync_cfg_kill_node): it leaves the daemon group with node-down,
 *    its lockspaces stop and recover only after it is fenced, so its
 *    clients' locks are never granted twice.  Logged at err on every
 *    member with both ends, the counts and the rule that chose.
 *  - a cut shorter than peer_unreachable_secs changes nothing: the first
 *    ack after it resets the wait, nothing is reported.  A cut that heals
 *    after one report (the empty set follows) is forgotten.
 *  peer_unreachable_secs = 0 turns all of this off (the old behaviour:
 *  a stall until an operator acts).  Limits: a node with nothing queued
 *  for a cut peer never reports it, so a cut nobody sends across stays
 *  (harmless: nothing waits on it); a cut with a third side (the
 *  lowest other member itself cut off) still removes through corosync,
 *  whose path is not the cut one; and if corosync cannot remove the
 *  node, fencing it (it is fenced while still in the view) does.  The
 *  choice is only as good as the reports in when a pair decides: a node
 *  cut off from everyone whose peers notice at different times (one had
 *  nothing queued for it yet) may lose a tie to a peer first, and be
 *  removed by the next pair: a second removal, never a stall and never
 *  two holders.  lowcomms acks what it receives, not what the engine has
 *  handled, so a dlmd that is alive but does not run for the limit
 *  (SIGSTOP, a hung host) counts as unreachable too, and is removed: its
 *  locks were stalling everyone meanwhile.  So does a member whose START
 *  a lockspace change has waited for as long (start_wait_ms): a change
 *  needs nothing from it through lowcomms, so without this the change
 *  (a third node's join, leave or failure) waited for ever on a hung
 *  dlmd that nobody reported.  While the daemons sync (a daemon joined)
 *  nobody sends a START, so a START wait then says nothing about a
 *  member (a healthy one blocked in the sync would be reported with the
 *  hung one, and could lose the tie); what a sync waits for is each
 *  daemon's ANNOUNCE, and the daemons that have not announced are the
 *  same on every member (CPG-ordered): those are reported once the sync
 *  has waited as long (sync_wait_ms).
 *
 * STALLS.  A running lockspace whose operations wait for a remote reply
 * while nothing at all arrives for STALL_MS is shown as "stalled", never
 * "running" (dlmctl ls), and logged; see watchdog_timer().  So is every
 * running lockspace while a message the engine could not take for lack
 * of memory has waited STALL_MS to be taken (comms.c, HOLD: nothing
 * later from its sender reaches any lockspace meanwhile).  So is one in
 * which the engine's audit (core/audit.c, every audit_secs) found a lock
 * whose copies disagree (a lost grant or reply) or whose master does not
 * answer, however much other traffic flows.
 *
 * Known limits.
 *  - Every dlmd keeps the table of every lockspace of the cluster (a
 *    name and its member ids each), and after every confchg that adds a
 *    daemon every daemon multicasts its list of lockspaces (CM_ANN_MAX
 *    names a message); while that sync lasts no lockspace changes
 *    members.  A daemon that never announces (another version) holds
 *    lockspace changes until it leaves; that is logged after
 *    SYNC_LOG_MS.  A daemon's leave costs the lockspaces it was in (a
 *    list per node id), an engine's recovery_done a hash lookup; but
 *    every kick still walks all of our own lockspaces, and a LEAVE looks
 *    its entry up in its node's list.
 *  - A FAILED record is taken by a member that cannot tell whether it
 *    saw that failure; it then leaves the fencing to the members that
 *    recorded it while they are in the group (fence.c, ONE FENCER) and
 *    takes a fencing they report after the record; a claim of our own
 *    failure is dropped when its sender leaves, fenced or not.
 *  - A version-1 dlmd (a CPG group per lockspace) and this one cannot
 *    share a cluster: stop every dlmd to upgrade.
 *  - A START answering an older change whose member list equals the
 *    current one (A -> B -> A within one member's reaction time) is
 *    counted for the current change.  The decision is still the same on
 *    every member; only the reported "last event" of that member may be
 *    one change old, which at worst delays the start by one more change.
 *  - A loser's clients are disconnected from the lockspace; they must
 *    open it again.
 *  - A split into three or more sides none of which holds a majority
 *    (or half with the tie-breaker) that merges back is resolved by
 *    FORGIVING A SPLIT only when nobody acted on the failures; it
 *    stalled every lockspace before (50 % loss both ways on node 2 of 3
 *    for 5 s, tests/test-cluster-lossy.sh with LOSSY_LOSS_A=20
 *    LOSSY_LOSS_C=50 LOSSY_RATE=64kbit: three singletons, "wait fencing
 *    of us" for over 10 minutes; tests/test-cpg-proto.c test_split3_*).
 *    What it still leaves waiting, as before: a failure with a fencing
 *    claim anywhere that no fencing ends (it was claimed: a side was
 *    quorate); a lockspace that a member left and joined again while
 *    apart (its new instance never ran, event 0: every member's event
 *    differs from it, so every failure in it is kept "to be fenced",
 *    and it stays stopped on every side, test-cpg-proto
 *    test_split3_left_rejoined_apart_limit).  Forgiving there is not
 *    safe as it stands: the merge's change keeps that member (members
 *    [1 2 3] before and after), so the engine's recovery would keep the
 *    old instance's locks and masters the others know of while the new
 *    instance knows none of them; it would take a change that makes it
 *    depart and join again.  Releasing it again on that side before
 *    the merge (test_split3_left_apart) avoids it; and more records
 *    than a sync keeps
 *    (CS_FEV_MAX failures per lockspace, or records naming more than
 *    DLM_MAX_NODES failed nodes: said at err when it happens and at the
 *    sync's end, with the failures that stay, never silently).  An
 *    operator stopping one side ends those (fence_ack is refused while
 *    the node is in the view).  A kept lowcomms queue ages through the
 *    split: one that merges back after more than peer_unreachable_secs
 *    may be reported unreachable at the first tick, before lowcomms has
 *    reconnected, and a node removed (UNREACHABLE PEERS): a removal, not
 *    a stall.
 *    Members decide at the end of their sync, which is one point
 *    of the stream except where SEALED MESSAGES' blind spot moves it: a
 *    process that started on the other side while apart is pending to
 *    us (we never saw its first message), so our sync ends without its
 *    ANNOUNCE and theirs after it; the two may then decide differently,
 *    which stalls (above), never grants.
 *  - The majority is counted in configured nodes, one vote each: a
 *    votequorum with unequal votes or a quorum device is not modelled.
 *  - A stuck lock is reported (state "stalled", the log), not repaired:
 *    which of two disagreeing copies is right is not known.  Lost
 *    messages themselves are handled (LOST FRAMES).
 *
 * Losing corosync (POLLHUP on any of its fds, or a dispatch error) stops
 * the daemon with exit code 1: locks cannot be trusted without
 * membership.
 *
 * membership = none (dlm.conf) replaces all of this with a fixed
 * one-node cluster whose node id is the config's nodeid; it exists for
 * tests and fuzzing, never for production.
 */
#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <sys/random.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <corosync/cfg.h>
#include <corosync/cmap.h>
#include <corosync/corotypes.h>
#include <corosync/cpg.h>
#include <corosync/quorum.h>

#include "lowcomms/lowcomms.h"
#include "plugin/cpgmsg.h"
#include "plugin/dlmd.h"

#define DAEMON_GROUP		"dlmd:daemon"
#define CS_RETRIES		50	/* CS_ERR_TRY_AGAIN retries (1 s) */
#define CS_RETRY_US		20000
/* At start-up corosync may still be settling (its IPC not listening yet
 * right after it was started, or TRY_AGAIN during the sync that follows
 * a membership change): connecting is retried for this long, logged. */
#define CS_STARTUP_RETRIES	500	/* x CS_RETRY_US = 10 s */
#define NODELIST_MAX_KEYS	4096	/* bound on a cmap iteration */
#define MAX_RINGS		8	/* ring0_addr .. ring7_addr */
#define MCAST_RETRY_MS		50	/* after CS_ERR_TRY_AGAIN on a send */
#define OUT_NOMEM_LOG_MS	10000	/* out_queue's "no memory", at most */
#define UNVERIFIED_LOG_MS	10000	/* "does not verify", at most */
#define CS_RETIRED_MAX		64	/* incarnations of processes gone */
#define CS_PEND_KEPT_MAX	16	/* pending processes gone node-down */
#define NS_PER_MS		1000000ULL
#define STALL_TICK_MS		2000	/* the stall watchdog's period */
#define STALL_MS		10000	/* running, waiters, nothing received */
#define SYNC_LOG_MS		10000	/* log a sync that waits this long */
#define CS_ATB_WARN_LEN		256	/* read_tiebreak's warning */
#define CS_ATB_HOW_LEN		1024	/* auto_tie_breaker_node kept */
#define LS_HASH			256	/* buckets of the lockspace table */
#define CS_CUT_MAX		256	/* cut pairs followed at once */
/* reports of a cut pair by one end alone, the other silent, that decide
 * a tie (UNREACHABLE PEERS): 2 ticks after the first, room for the other
 * end's report when both ends are cut */
#define CUT_ONE_SIDED_SEEN	3
#define BLOCKER_LEN		128	/* start_blocker()'s text: 116 at most */
/* Names in one daemon's ANNOUNCE (its lockspaces), at most: a peer that
 * sends FIRST and never LAST cannot grow it beyond (about 4 MB). */
#ifndef CS_ANN_TOTAL_MAX
#define CS_ANN_TOTAL_MAX	65536
#endif

/* The messages themselves (header, START, JOIN, LEAVE, ANNOUNCE) and
 * their codec are in plugin/cpgmsg.[ch]. */

/* ------------------------------------------------------------------ */
/* state                                                               */
/* ------------------------------------------------------------------ */

struct cs_node {
	uint32_t	n_id;
	unsigned int	n_naddrs;
	char		n_addrs[LC_MAX_ADDRS][DLMD_ADDR_LEN];
};

/* A member (a process) of the daemon group. */
struct cs_daemon {
	uint32_t	dm_id;
	uint32_t	dm_pid;
	bool		dm_known;	/* we know its lockspaces */
	bool		dm_announced;	/* its ANNOUNCE came in this sync */
	bool		dm_refused;	/* another version: logged once */
	bool		dm_second;	/* dropped as a second process of
					 * its node id: logged once */
	/* SEALED MESSAGES: the incarnation and last sequence of its
	 * messages (0: none verified yet) */
	uint64_t	dm_inc;
	uint64_t	dm_seq;
	/* we saw it join (after our own first confchg): until a message of
	 * it verifies it is no dlmd to us (pending(): not waited for) */
	bool		dm_witnessed;
	/* FENCED ALIVE: it merged back with the seal we kept after its
	 * node was counted fenced by a method that stops nodes; a message
	 * of that same incarnation says the fencing did not stop it */
	bool		dm_fenced_back;
	/* PID REUSE: it merged back with the seal we kept (merge_take) and
	 * no message of it verified since: its first one may carry another
	 * incarnation (a new dlmd under the pid); cleared at that message,
	 * after which another incarnation is a replay, as for any member */
	bool		dm_may_restart;
	/* it joined (reason join) after our own first confchg: in CPG's
	 * order of joins, after us (ANOTHER VERSION: it stops, not we);
	 * that said once */
	bool		dm_later;
	bool		dm_later_said;
	/* an ANNOUNCE being received (FIRST .. LAST) */
	bool		dm_ann_open;
	struct cm_name	*dm_ann;
	unsigned int	dm_nann;
	unsigned int	dm_cann;
};

/* The table: a lockspace some daemon is in (or that failed with one). */
struct cs_lsent {
	struct cs_lsent	*le_next;	/* hash chain */
	char		le_name[DLM_LOCKSPACE_LEN + 1];
	uint32_t	*le_members;	/* known daemons in it, sorted */
	unsigned int	le_nmembers;
	unsigned int	le_cmembers;
	uint32_t	*le_failed;	/* failed out of it; until fenced */
	unsigned int	le_nfailed;
	unsigned int	le_cfailed;
	uint32_t	*le_dfailed;	/* those of them whose dlmd alone died */
	unsigned int	le_ndfailed;
	unsigned int	le_cdfailed;
	/* daemons whose FAILED record of it lists our own node: a previous
	 * dlmd of ours died in it, and they have not seen us fenced */
	uint32_t	*le_claim;
	unsigned int	le_nclaim;
	unsigned int	le_cclaim;
	bool		le_mark;	/* scratch (an ANNOUNCE's set) */
	struct dlmd_cluster_ls *le_cl;	/* our instance, if any */
	/* FORGIVING A SPLIT: the FAILED records of it delivered in this
	 * sync, ours included: each sender's last event, and every failure
	 * they list */
	struct cs_rep {
		uint32_t	rp_from;
		uint32_t	rp_event;
		bool		rp_conflict;	/* two records, two events */
	}		*le_rep;
	unsigned int	le_nrep;
	unsigned int	le_crep;
	struct cs_fev {
		uint32_t	fv_from;
		uint32_t	fv_id;
		uint32_t	fv_pid;
		uint32_t	fv_flags;	/* CM_FAILED_* */
		uint64_t	fv_inc;
	}		*le_fev;
	unsigned int	le_nfev;
	unsigned int	le_cfev;
};

/* The lockspaces of the table a node's daemon is in: the reverse of
 * le_members, so that a daemon's leave costs its own lockspaces, not a
 * scan of the whole table. */
struct cs_byid {
	uint32_t	bi_id;
	struct cs_lsent	**bi_ls;
	unsigned int	bi_n;
	unsigned int	bi_cap;
};

/* An outgoing CPG message, waiting while corosync says "try again". */
struct cs_out {
	struct cs_out	*o_next;
	size_t		o_len;		/* with the seal once sealed */
	bool		o_sealed;
	unsigned char	o_buf[];	/* o_len + CM_SEAL_LEN bytes */
};

/* A member's last UNREACH: the members it cannot reach (UNREACHABLE
 * PEERS). */
struct cs_unr {
	uint32_t	ur_from;
	uint32_t	ur_ids[DLM_MAX_NODES];
	unsigned int	ur_n;
};

/* A cut pair (a < b), and how many UNREACHes named it since the last
 * confchg (from either end). */
struct cs_cut {
	uint32_t	cu_a;
	uint32_t	cu_b;
	unsigned int	cu_seen;
};

struct dlmd_cluster {
	struct dlmd		*cs_d;
	const struct dlmd_cluster_up *cs_up;	/* client.c and view.c */
	bool			cs_corosync;
	cpg_handle_t		cs_daemon_cpg;
	int			cs_daemon_fd;
	quorum_handle_t		cs_quorum;
	int			cs_quorum_fd;
	bool			cs_quorate;
	uint64_t		cs_ring_seq;		/* of the quorum view */
	uint32_t		cs_qview[DLM_MAX_NODES];
	unsigned int		cs_nqview;
	cmap_handle_t		cs_cmap;
	cmap_track_handle_t	cs_cmap_track;
	int			cs_cmap_fd;
	/* corosync's runtime.config.totem.token and .consensus (ms; 0:
	 * not known), followed through a config reload (UNREACHABLE PEERS:
	 * the wait is never shorter than their sum) */
	cmap_track_handle_t	cs_totem_track;
	uint32_t		cs_totem_token;
	uint32_t		cs_totem_consensus;
	uint64_t		cs_unreach_said;	/* the limit last logged */
	bool			cs_nodelist_changed;
	struct cs_node		cs_nodes[DLM_MAX_NODES];
	unsigned int		cs_nnodes;
	uint32_t		cs_tiebreak;	/* wins an even split; 0: none */
	cmap_track_handle_t	cs_cmap_track_atb;	/* quorum.auto_tie_breaker* */
	cmap_track_handle_t	cs_cmap_track_atb_type;	/* runtime.votequorum */
	/* the node ids given to lowcomms (nodes_to_comms), and whether one
	 * of them may have left the nodelist (NODES LEAVING THE NODELIST) */
	uint32_t		cs_comms_ids[DLM_MAX_NODES];
	unsigned int		cs_ncomms_ids;
	bool			cs_comms_stale;
	/* the pair majorities are counted against, from the last CONFIG
	 * delivered (CONFIGURATION CHANGES); until one is, our reading */
	bool			cs_conf_set;
	unsigned int		cs_conf_nnodes;
	uint32_t		cs_conf_tiebreak;
	/* a CONFIG was delivered to us: the group's pair may differ from a
	 * joiner's reading, so the lowest member sends it at each sync;
	 * and one not sent at a sync was, since this sync's start */
	bool			cs_conf_heard;
	bool			cs_conf_new;
	/* read_nodelist failed (logged once until a read succeeds) */
	bool			cs_nodelist_bad;
	/* the tie-breaker keys' mistake last warned of ("": none) */
	char			cs_atb_warn[CS_ATB_WARN_LEN];
	/* TIE-BREAKER FIXED AT START: the keys as they read at our first
	 * complete reading (cs_atb_fixed), and whether a later change of
	 * them (not followed) was said (cs_atb_moved) */
	bool			cs_atb_fixed;
	bool			cs_atb_moved;
	bool			cs_atb_key_on;
	char			cs_atb_key_how[CS_ATB_HOW_LEN];
	/* the daemon group now, and the nodes we lost (node-down) while
	 * our side of the daemon group held a strict majority of the
	 * configured nodes: if one of them merges back, we remove it */
	uint32_t		cs_dmembers[DLM_MAX_NODES];
	unsigned int		cs_ndmembers;
	uint32_t		cs_lost[DLM_MAX_NODES];
	unsigned int		cs_nlost;
	/* lost (node-down) while our daemon group side was no majority:
	 * the totem ring that follows may still show a majority side (nodes
	 * whose corosync runs without a dlmd count there) */
	uint32_t		cs_down[DLM_MAX_NODES];
	unsigned int		cs_ndown;
	/* peers whose lost frames were already acted on (until they leave) */
	uint32_t		cs_gap[DLM_MAX_NODES];
	unsigned int		cs_ngap;
	/* UNREACHABLE PEERS: what we reported last, every member's last
	 * report since the last confchg, the cut pairs and how often they
	 * were reported, and the nodes chosen for removal */
	uint32_t		cs_unr_mine[DLM_MAX_NODES];
	unsigned int		cs_nunr_mine;
	struct cs_unr		cs_unr[DLM_MAX_NODES];
	unsigned int		cs_nunr;
	struct cs_cut		cs_cut[CS_CUT_MAX];
	unsigned int		cs_ncut;
	uint32_t		cs_unr_out[DLM_MAX_NODES];
	unsigned int		cs_nunr_out;
	/* the daemon group's processes, and the state transfer */
	struct cs_daemon	cs_dm[DLM_MAX_NODES];
	unsigned int		cs_ndm;
	bool			cs_syncing;
	bool			cs_synced;	/* a sync ended since we joined */
	uint32_t		cs_view;	/* the confchg the sync answers */
	uint64_t		cs_sync_since;	/* ms */
	bool			cs_sync_logged;
	uint32_t		cs_sync_j[DLM_MAX_NODES];	/* unknown to us in it */
	unsigned int		cs_nsync_j;
	/* daemons unknown to us that failed in this sync: the others'
	 * FAILED records say which lockspaces they failed out of */
	uint32_t		cs_unseen[DLM_MAX_NODES];
	unsigned int		cs_nunseen;
	uint32_t		cs_seq;		/* messages sent, for logs */
	uint32_t		cs_self_pid;	/* ours, as CPG reports it */
	/* SEALED MESSAGES: the CPG key (zeros with crypto = none), our
	 * incarnation and last sequence; the incarnations of processes
	 * that left (a ring); messages that did not verify, since said */
#ifndef DLMD_TEST_CPG_KEY_INLINE
	unsigned char		*cs_cpg_key;	/* CM_KEY_LEN, lc_secret_alloc:
						 * out of core dumps */
#else	/* tests/test-cpg-proto.c: sets it in a struct of its own making */
	unsigned char		cs_cpg_key[CM_KEY_LEN];
#endif
	uint64_t		cs_inc;
	uint64_t		cs_seal_seq;
	uint64_t		cs_retired[CS_RETIRED_MAX];
	unsigned int		cs_nretired;
	/* processes that left with node-down, for their node-up merge
	 * (SEALED MESSAGES: a merge); one per node id */
	struct cs_kept {
		uint32_t	ct_id, ct_pid;
		uint64_t	ct_inc, ct_seq;
	}			cs_kept[DLM_MAX_NODES];
	unsigned int		cs_nkept;
	/* ... and those that left with node-down before sealing a message
	 * that we saw join (pending()): back with node-up, they are pending
	 * again, not waited for (the last CS_PEND_KEPT_MAX; merge_take) */
	struct cs_pend_kept {
		uint32_t	pk_id, pk_pid;
	}			cs_pend_kept[CS_PEND_KEPT_MAX];
	unsigned int		cs_npend_kept;
	/* FORGIVING A SPLIT: the process (CPG pid, incarnation) each node
	 * failed with last (its FAILED records carry it), one per node id;
	 * the nodes a FENCE_CLAIM or FENCE_RESULT named in this sync; and
	 * whether a record of this sync could not be kept (no memory: we
	 * forgive nothing in it; forgive_split says why that is safe) */
	struct cs_failpid {
		uint32_t	fp_id, fp_pid;
		uint64_t	fp_inc;
	}			cs_failpid[DLM_MAX_NODES];
	unsigned int		cs_nfailpid;
	uint32_t		cs_sync_fencing[DLM_MAX_NODES];
	unsigned int		cs_nsync_fencing;
	/* nodes lost node-down from a minority side whose lowcomms state is
	 * kept until they are fenced or come back as another process (their
	 * frames in flight are resent if they merge back and are forgiven) */
	uint32_t		cs_reset_later[DLM_MAX_NODES];
	unsigned int		cs_nreset_later;
	/* RESTARTED WHILE APART, undecided (the side that came back holds
	 * a majority): node, the process back (0: none, died_apart), the
	 * view whose ANNOUNCEs may vouch for it; and who vouched (node,
	 * witness); decided at the sync's end (apart_decide).  ap_inc: the
	 * process back has the pid of the one that failed, whose
	 * incarnation this is (PID REUSE: a restart only if a message of
	 * another one verifies); ap_held: a majority side vouched for the
	 * new process, nothing is marked */
	struct cs_apart {
		uint32_t	ap_id, ap_pid, ap_view;
		uint64_t	ap_inc;
		bool		ap_held;
	}			cs_apart[DLM_MAX_NODES];
	unsigned int		cs_napart;
	struct cs_apwit {
		uint32_t	aw_id, aw_wit;
	}			cs_apwit[DLM_MAX_NODES];
	unsigned int		cs_napwit;
	/* the last totem ring of the daemon group's connection */
	uint32_t		cs_ring[DLM_MAX_NODES];
	unsigned int		cs_nring;
	bool			cs_ev_lost;
	char			cs_ev_lost_why[200];	/* the first loss */
	uint64_t		cs_unverified;
	uint64_t		cs_unverified_log_at;
	bool			cs_dup_stop;	/* ONE DLMD PER NODE ID (or a
						 * newcomer among dlmds of another
						 * version): we stop, sending
						 * nothing more */
	/* ONE DLMD PER NODE ID: processes of our node id there before us
	 * (or joined with us, lower pid) not yet found dlmd or nobody */
	uint32_t		cs_dup_pids[DLM_MAX_NODES];
	unsigned int		cs_ndup;
	/* the table: every lockspace of the cluster and its members */
	struct cs_lsent		*cs_ls[LS_HASH];
	unsigned int		cs_nls;
	struct cs_byid		cs_byid[DLM_MAX_NODES];
	unsigned int		cs_nbyid;
	unsigned int		cs_nclaims;	/* le_claim entries, all */
	/* outgoing messages, in order */
	struct cs_out		*cs_out;
	struct cs_out		**cs_out_tail;
	unsigned int		cs_nout;
	uint64_t		cs_out_nomem;		/* refused, since said */
	uint64_t		cs_out_nomem_log_at;	/* ms: say it again then */
	bool			cs_kick_queued;
	qb_loop_timer_handle	cs_kick_timer;
	bool			cs_wd_armed;
	qb_loop_timer_handle	cs_wd;
	/* the watchdog saw a message the engine has not taken for STALL_MS
	 * (out of memory; engine.c, comms.c HOLD): running lockspaces show
	 * "stalled"; the sender and since when (ms) */
	bool			cs_held_stall;
	uint32_t		cs_held_node;
	uint64_t		cs_held_since;
	bool			cs_retry_armed;
	qb_loop_timer_handle	cs_retry;
};

/* Where our instance of a lockspace is in the protocol above (steps 1 to
 * 5); set_state() is the one place that changes it, and logs it. */
enum cl_state {
	CL_JOINING,	/* our JOIN is not delivered yet (or we sync) */
	CL_STOPPED,	/* 1. a change stopped it; 2. START waits for
			 * quorum, fencing, the end of a sync */
	CL_STARTED,	/* 3. our START is sent; 4. we wait for the others' */
	CL_DECIDED,	/* 4. members and event decided; the engine's start
			 * waits for quorum */
	CL_RECOVERING,	/* the engine recovers (cl_recovered == cl_last_event:
			 * done, 5. the finish waits for quorum) */
	CL_FAILED,	/* the engine's recovery failed here: a RESTART is
			 * sent at cl_restart_at (RECOVERY RETRY) */
	CL_RUNNING,	/* 5. finished: locking runs */
	CL_STALE,	/* 4. a loser of a stateful merge: dropped at the
			 * next kick */
};

static const char *const cl_state_names[] = {
	[CL_JOINING] = "joining",
	[CL_STOPPED] = "stopped",
	[CL_STARTED] = "started",
	[CL_DECIDED] = "decided",
	[CL_RECOVERING] = "recovering",
	[CL_FAILED] = "failed",
	[CL_RUNNING] = "running",
	[CL_STALE] = "stale",
};

struct dlmd_cluster_ls {
	struct dlmd		*cl_d;
	struct dlmd_ls		*cl_dl;
	enum cl_state		cl_state;
	uint32_t		cl_join_seq;	/* h_seq of this instance's JOIN */
	bool			cl_join_delivered; /* it was (maybe while syncing) */
	uint32_t		cl_lsid;
	struct cs_lsent		*cl_le;		/* its table entry (kept while bound) */
	/* the current change */
	uint32_t		cl_members[DLM_MAX_NODES];	/* sorted */
	unsigned int		cl_nmembers;
	uint32_t		cl_change_seq;
	uint32_t		cl_change_down[DLM_MAX_NODES];	/* node-down at it */
	unsigned int		cl_nchange_down;
	uint64_t		cl_change_ring;	/* quorum ring when it came */
	bool			cl_got[DLM_MAX_NODES];	/* per cl_members[i] */
	uint64_t		cl_started_ms;	/* ms: it became CL_STARTED */
	uint32_t		cl_start_event[DLM_MAX_NODES];	/* their last events */
	struct cm_settings	cl_start_set[DLM_MAX_NODES];	/* their settings */
	bool			cl_refused;	/* CL_STALE: EQUAL SETTINGS */
	/* failed since the last finished recovery: must be fenced */
	uint32_t		cl_failed[DLM_MAX_NODES];
	unsigned int		cl_nfailed;
	/* decisions */
	uint32_t		cl_last_event;	/* last decided event, 0 = fresh */
	uint32_t		cl_prev[DLM_MAX_NODES];	/* its members */
	unsigned int		cl_nprev;
	uint32_t		cl_recovered;	/* recovery_done(E) seen, or 0 */
	bool			cl_ever_ran;	/* a recovery has finished */
	/* the stall watchdog (running, yet no reply arrives) */
	uint64_t		cl_wd_rx;	/* messages received at 'since' */
	uint64_t		cl_wd_since;	/* ms; 0 = not watching */
	uint64_t		cl_wd_waiters;
	bool			cl_stalled;
	/* RECOVERY RETRY (CL_FAILED) */
	uint32_t		cl_restart_attempt;	/* failures in a row */
	int			cl_restart_error;
	char			cl_restart_step[32];	/* where it failed */
	uint64_t		cl_restart_at;		/* ms: send the RESTART */
	bool			cl_restart_armed;
	unsigned int		cl_start_fails;	/* START not queued (memory),
						 * in a row: logged once */
	qb_loop_timer_handle	cl_restart_timer;
};

static void set_state(struct dlmd_cluster_ls *cl, enum cl_state to,
		      const char *why)
{
	if (cl->cl_state == to)
		return;
	log_info("lockspace %s: %s -> %s (%s)", cl->cl_dl->dl_name,
		 cl_state_names[cl->cl_state], cl_state_names[to], why);
	cl->cl_state = to;
	if (to == CL_STARTED)
		cl->cl_started_ms = dlmd_now_ms();
}

/* Are STARTs still counted for the current change (nothing decided)? */
static bool cl_deciding(const struct dlmd_cluster_ls *cl)
{
	return cl->cl_state == CL_STOPPED || cl->cl_state == CL_STARTED;
}

static const char *cs_str(cs_error_t e)
{
	static char buf[32];

	switch (e) {
	case CS_OK: return "ok";
	case CS_ERR_LIBRARY: return "cannot connect to corosync";
	case CS_ERR_TRY_AGAIN: return "try again";
	case CS_ERR_BAD_HANDLE: return "bad handle";
	case CS_ERR_ACCESS: return "access denied";
	case CS_ERR_EXIST: return "already exists";
	case CS_ERR_NOT_EXIST: return "does not exist";
	default:
		snprintf(buf, sizeof(buf), "corosync error %d", (int)e);
		return buf;
	}
}

static void lost_corosync(struct dlmd *d, const char *what)
{
	log_err("lost connection to corosync (%s); stopping", what);
	d->d_exit_code = 1;
	qb_loop_stop(d->d_loop);
}

static bool id_in(const uint32_t *ids, unsigned int n, uint32_t id)
{
	for (unsigned int i = 0; i < n; i++)
		if (ids[i] == id)
			return true;
	return false;
}

/* fmt_ids() of DLM_MAX_NODES ids: 10 digits and a space each, the NUL. */
#define IDS_TEXT_LEN	(DLM_MAX_NODES * 11 + 1)

static void fmt_ids(char *buf, size_t size, const uint32_t *ids, unsigned int n)
{
	size_t off = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < n && off + 12 < size; i++)
		off += (size_t)snprintf(buf + off, size - off, "%s%u",
					i ? " " : "", ids[i]);
}

static void kick(struct dlmd_cluster *cs);
static void id_remove(uint32_t *ids, unsigned int *n, uint32_t id);

/* ------------------------------------------------------------------ */
/* node list                                                           */
/* ------------------------------------------------------------------ */

static const struct cs_node *find_node(const struct dlmd_cluster *cs,
				       uint32_t id)
{
	for (unsigned int i = 0; i < cs->cs_nnodes; i++)
		if (cs->cs_nodes[i].n_id == id)
			return &cs->cs_nodes[i];
	return NULL;
}

/* What a majority is counted against (CONFIGURATION CHANGES). */
static unsigned int conf_nnodes(const struct dlmd_cluster *cs)
{
	return cs->cs_conf_set ? cs->cs_conf_nnodes : cs->cs_nnodes;
}

static uint32_t conf_tiebreak(const struct dlmd_cluster *cs)
{
	return cs->cs_conf_set ? cs->cs_conf_tiebreak : cs->cs_tiebreak;
}

/*
 * The node whose half wins an even split (SPLIT AND MERGE): votequorum's
 * quorum.auto_tie_breaker_node where auto_tie_breaker is on ("lowest",
 * "highest", or a list of ids whose first configured one counts), else
 * the lowest configured id, so a two_node cluster or a 2 + 2 split that
 * merges back resolves by itself.  With auto_tie_breaker this is the
 * half votequorum keeps quorate.
 *
 * Read as votequorum reads them, so that a key corosync accepts never
 * keeps dlmd from starting: a key of another type than votequorum's
 * (corosync.conf cannot give one, but a program writing cmap can: cmap's
 * typed getter then answers CS_ERR_INVALID_PARAM) is one votequorum
 * ignores (auto_tie_breaker off; auto_tie_breaker_node "lowest"), and a
 * string it does not take turns its auto_tie_breaker off; we do the
 * same, and *warn says so (empty when the keys are as votequorum wants
 * them).  Any other error (IPC, a reload) is -EAGAIN: the reading is
 * not taken.
 *
 * TIE-BREAKER FIXED AT START.  votequorum reads the two keys only when
 * corosync starts (votequorum(5): they cannot be changed by a config
 * reload): after corosync-cfgtool -R with a new auto_tie_breaker_node
 * runtime.votequorum.atb_type stays as it was, and a dlmd that followed
 * the keys (as one did) counted even splits against another node than
 * votequorum keeps quorate; in a 2 + 2 split the halves disagreed about
 * who wins (each side waits for corosync quorum before fencing, so a
 * liveness loss).  So the keys are taken as they read at our first
 * complete reading (cs_atb_fixed), and a later change of them (a
 * reload: they are still tracked) is said once, at warning: it takes
 * effect only when corosync and dlmd restart.  What votequorum runs,
 * where corosync shows it, decides at every reading:
 * runtime.votequorum.atb_type (0 off, 1 lowest, 2 highest, 3 a list).
 * It does change at runtime: votequorum turns auto_tie_breaker off in a
 * cluster of an odd node count without wait_for_all, and on again (as
 * at its start) when a reload makes the count even; it is tracked like
 * the nodelist, and a change reaches every dlmd as a CONFIG (CPG-
 * ordered, CONFIGURATION CHANGES).  It also wins over keys changed
 * between corosync's start and ours.  A list votequorum keeps to itself:
 * the key's list as at our start is taken (a list changed before our
 * start but after corosync's is not seen: the CONFIG a joiner receives
 * carries the group's node).  Without that key (an older corosync), the
 * keys as at our start.
 *
 * Where this differs from votequorum (documented, not changed): its
 * lowest and highest are the lowest and highest member id when it was
 * last quorate, ours the lowest and highest configured id; its list
 * counts the first listed node present in this partition (quorum denied
 * while an earlier listed node was in the last quorate partition), ours
 * the first listed configured node.  They agree whenever every
 * configured node was a member when corosync was last quorate.  When
 * they differ (a configured node down since), our node may be one no
 * half holds: then neither half counts as the majority (it waits for
 * corosync's quorum, as without a tie-breaker); two disjoint halves
 * never both hold one node, so it is never unsafe.
 */
/* Keep at most size - 1 bytes of a tie-breaker string, cut after its
 * last whole id if it is longer (a cut id would name another node). */
static void atb_keep(char *dst, size_t size, const char *src)
{
	size_t len = strlen(src);

	if (len >= size) {
		len = size - 1;
		while (len && !isspace((unsigned char)src[len]))
			len--;
	}
	memcpy(dst, src, len);
	dst[len] = '\0';
}

static int read_tiebreak(struct dlmd_cluster *cs, cmap_handle_t cmap,
			 const struct cs_node *nodes, unsigned int n,
			 uint32_t *tb, bool *on, char *how_out, size_t hsize,
			 char *warn, size_t wsize)
{
	uint32_t ids[DLM_MAX_NODES], type = 0;
	uint8_t atb = 0;
	char *how = NULL;
	const char *use, *key_how;
	bool use_on, key_on;
	cs_error_t e;

	warn[0] = '\0';
	for (unsigned int i = 0; i < n; i++)
		ids[i] = nodes[i].n_id;
	e = cmap_get_uint8(cmap, "quorum.auto_tie_breaker", &atb);
	if (e == CS_ERR_INVALID_PARAM) {
		snprintf(warn, wsize, "quorum.auto_tie_breaker is not a uint8 "
			 "(set with another type?): votequorum ignores it (off), "
			 "and so do we");
		atb = 0;
	} else if (e == CS_ERR_NOT_EXIST) {
		atb = 0;
	} else if (e != CS_OK) {
		return -EAGAIN;
	}
	if (atb) {
		e = cmap_get_string(cmap, "quorum.auto_tie_breaker_node", &how);
		if (e == CS_ERR_INVALID_PARAM) {
			snprintf(warn, wsize, "quorum.auto_tie_breaker_node is not "
				 "a string (set with another type?): votequorum "
				 "ignores it (\"lowest\"), and so do we");
			how = NULL;
		} else if (e == CS_ERR_NOT_EXIST) {
			how = NULL;
		} else if (e != CS_OK) {
			return -EAGAIN;
		}
	}
	if (how && !dlmd_tiebreak_valid(how))
		snprintf(warn, wsize, "quorum.auto_tie_breaker_node \"%.32s\" is "
			 "not \"lowest\", \"highest\" or a list of node ids: "
			 "votequorum turns auto_tie_breaker off, and so do we "
			 "(the lowest configured id breaks even splits)", how);
	atb_keep(how_out, hsize, how ? how : "");
	if (cs->cs_atb_fixed) {
		/* the keys as at our start: a change is said, not taken */
		if (!cs->cs_atb_moved &&
		    ((bool)atb != cs->cs_atb_key_on ||
		     strcmp(how_out, cs->cs_atb_key_how))) {
			cs->cs_atb_moved = true;
			log_warn("cmap: quorum.auto_tie_breaker or "
				 "auto_tie_breaker_node changed (now %u, "
				 "\"%.32s\"): votequorum reads them only when "
				 "corosync starts, and dlmd only when it starts: "
				 "the change takes effect when corosync and dlmd "
				 "restart", atb, how_out);
		}
		key_on = cs->cs_atb_key_on;
		key_how = cs->cs_atb_key_how;
	} else {
		key_on = atb;
		key_how = how_out;
	}
	/* the keys (as at our start) as votequorum takes them */
	use_on = key_on && (!key_how[0] || dlmd_tiebreak_valid(key_how));
	use = !use_on ? "" : key_how[0] ? key_how : "lowest";
	/* what votequorum runs now, where corosync shows it */
	e = cmap_get_uint32(cmap, "runtime.votequorum.atb_type", &type);
	if (e == CS_OK && type == 0) {
		use = "";
	} else if (e == CS_OK && type == 1) {
		use = "lowest";
	} else if (e == CS_OK && type == 2) {
		use = "highest";
	} else if (e == CS_OK && (!use_on || !strcmp(use, "lowest") ||
				  !strcmp(use, "highest"))) {
		/* a list votequorum keeps to itself, the key no list */
		snprintf(warn, wsize, "votequorum runs with an "
			 "auto_tie_breaker_node list (runtime.votequorum."
			 "atb_type %u) the keys as at our start do not show: "
			 "the lowest configured id breaks even splits", type);
		use = "";
	} else if (e != CS_OK && e != CS_ERR_NOT_EXIST) {
		free(how);
		return -EAGAIN;
	}
	use_on = use[0] != '\0';
	*tb = dlmd_tiebreak_pick(ids, n, use_on, use_on ? use : NULL);
	*on = atb;
	free(how);
	return 0;
}

/*
 * Read nodelist.node.* into cs_nodes (all rings) and the tie-breaker.
 * 0, -ENOTCONN, or -EAGAIN: the walk did not reach the list's end
 * (CS_ERR_NO_SECTIONS) or a key it listed could not be read (cmap
 * changing under a reload, an IPC error).  A partial list is never
 * taken: cs_nodes and cs_tiebreak keep the last complete reading (a
 * count of 2 of 5 sent as CONFIG would let a 2-node and a 3-node side
 * both count a majority).
 */
static int read_nodelist(struct dlmd_cluster *cs, cmap_handle_t cmap)
{
	cmap_iter_handle_t iter;
	char key[CMAP_KEYNAME_MAXLEN + 1];
	size_t vlen;
	cmap_value_types_t type;
	struct cs_node *nodes;
	unsigned int n = 0, k;
	uint32_t tb = 0;
	cs_error_t e = CS_OK;
	const char *why = NULL;
	char warn[CS_ATB_WARN_LEN], key_how[CS_ATB_HOW_LEN];
	bool key_on = false;
	int rv = 0;

	nodes = calloc(DLM_MAX_NODES, sizeof(*nodes));
	if (!nodes)
		return -EAGAIN;
	if (cmap_iter_init(cmap, "nodelist.node.", &iter) != CS_OK) {
		free(nodes);
		return -ENOTCONN;
	}
	for (k = 0; k < NODELIST_MAX_KEYS; k++) {
		size_t kl;
		struct cs_node *nd;
		unsigned int idx;
		uint32_t id;

		e = cmap_iter_next(cmap, iter, key, &vlen, &type);
		if (e != CS_OK)
			break;
		kl = strlen(key);
		if (kl < 7 || strcmp(key + kl - 7, ".nodeid") ||
		    sscanf(key, "nodelist.node.%u.", &idx) != 1)
			continue;
		e = cmap_get_uint32(cmap, key, &id);
		if (e != CS_OK) {
			why = cs_str(e);	/* listed, then not readable */
			rv = -EAGAIN;
			break;
		}
		if (!id || n >= DLM_MAX_NODES)
			continue;
		nd = &nodes[n++];
		nd->n_id = id;
		for (unsigned int r = 0; r < MAX_RINGS &&
		     nd->n_naddrs < LC_MAX_ADDRS; r++) {
			char akey[CMAP_KEYNAME_MAXLEN + 1], *addr = NULL;

			snprintf(akey, sizeof(akey), "nodelist.node.%u.ring%u_addr",
				 idx, r);
			if (cmap_get_string(cmap, akey, &addr) != CS_OK || !addr)
				continue;
			snprintf(nd->n_addrs[nd->n_naddrs++], DLMD_ADDR_LEN, "%s",
				 addr);
			free(addr);
		}
	}
	cmap_iter_finalize(cmap, iter);
	if (!rv && (k == NODELIST_MAX_KEYS || e != CS_ERR_NO_SECTIONS)) {
		why = k == NODELIST_MAX_KEYS ? "too many keys" : cs_str(e);
		rv = -EAGAIN;	/* not the list's end */
	}
	if (!rv && read_tiebreak(cs, cmap, nodes, n, &tb, &key_on, key_how,
				 sizeof(key_how), warn, sizeof(warn))) {
		why = "quorum.auto_tie_breaker unreadable";
		rv = -EAGAIN;
	}
	if (rv) {
		if (!cs->cs_nodelist_bad)
			log_warn("cmap: the nodelist could not be read to its end "
				 "(%s); the last complete reading (%u configured "
				 "nodes, tie-breaker node %u) stays, retrying",
				 why, cs->cs_nnodes, cs->cs_tiebreak);
		cs->cs_nodelist_bad = true;
		free(nodes);
		return rv;
	}
	if (cs->cs_nodelist_bad)
		log_notice("cmap: the nodelist is read again: %u configured "
			   "node%s", n, n == 1 ? "" : "s");
	cs->cs_nodelist_bad = false;
	/* once per mistake: again only after a reading without it */
	if (warn[0] && strcmp(warn, cs->cs_atb_warn))
		log_warn("cmap: %s", warn);
	snprintf(cs->cs_atb_warn, sizeof(cs->cs_atb_warn), "%s", warn);
	memcpy(cs->cs_nodes, nodes, n * sizeof(*nodes));
	cs->cs_nnodes = n;
	cs->cs_tiebreak = tb;
	if (!cs->cs_atb_fixed) {	/* TIE-BREAKER FIXED AT START */
		cs->cs_atb_fixed = true;
		cs->cs_atb_key_on = key_on;
		memcpy(cs->cs_atb_key_how, key_how, sizeof(key_how));
	}
	free(nodes);
	return 0;
}

static int read_local_id(struct dlmd_cluster *cs, cmap_handle_t cmap)
{
	corosync_cfg_handle_t cfg;
	corosync_cfg_callbacks_t cfg_cb;
	unsigned int local = 0;
	char key[CMAP_KEYNAME_MAXLEN + 1];
	cs_error_t e;

	memset(&cfg_cb, 0, sizeof(cfg_cb));
	e = corosync_cfg_initialize(&cfg, &cfg_cb);
	if (e == CS_OK) {
		e = corosync_cfg_local_get(cfg, &local);
		corosync_cfg_finalize(cfg);
	}
	if (e != CS_OK || !local) {
		uint32_t pos;

		/* Fall back to the nodelist entry corosync marks as ours. */
		if (cmap_get_uint32(cmap, "nodelist.local_node_pos", &pos) == CS_OK) {
			snprintf(key, sizeof(key), "nodelist.node.%u.nodeid", pos);
			if (cmap_get_uint32(cmap, key, &local) != CS_OK)
				local = 0;
		}
	}
	if (!local) {
		log_err("cannot find our node id in corosync (cfg, cmap nodelist)");
		return -ENOENT;
	}
	cs->cs_d->d_nodeid = local;
	return 0;
}

static const char *const *node_addr_ptrs(const struct cs_node *nd,
					 const char **out)
{
	for (unsigned int i = 0; i < nd->n_naddrs; i++)
		out[i] = nd->n_addrs[i];
	return out;
}

/* Give lowcomms every node it does not know yet. */
static void nodes_to_comms(struct dlmd_cluster *cs)
{
	struct dlmd *d = cs->cs_d;

	for (unsigned int i = 0; i < cs->cs_nnodes; i++) {
		const struct cs_node *nd = &cs->cs_nodes[i];
		const char *p[LC_MAX_ADDRS];

		if (nd->n_id == d->d_nodeid || !nd->n_naddrs)
			continue;
		if (dlmd_comms_node_add(d, nd->n_id, node_addr_ptrs(nd, p),
					nd->n_naddrs) == 0 &&
		    !id_in(cs->cs_comms_ids, cs->cs_ncomms_ids, nd->n_id) &&
		    cs->cs_ncomms_ids < DLM_MAX_NODES)
			cs->cs_comms_ids[cs->cs_ncomms_ids++] = nd->n_id;
	}
}

/*
 * UNREACHABLE PEERS' wait: peer_unreachable_secs, but never less than
 * corosync's token + consensus (dlmd_unreach_limit_ms).  A whole node
 * paused for less than the token (a VM frozen for a live migration: why
 * cloud guides set totem.token to 30 s) stays in corosync's membership;
 * with the default 20 s dlmd removed and fenced it.  Said once at start
 * and at each change (corosync-cfgtool -R).
 */
static uint64_t unreach_limit(struct dlmd_cluster *cs)
{
	const struct dlmd_config *cf = &cs->cs_d->d_cfg;
	uint64_t limit = dlmd_unreach_limit_ms(cf->cf_peer_unreachable_secs,
					       cs->cs_totem_token,
					       cs->cs_totem_consensus);

	if (limit != cs->cs_unreach_said) {
		cs->cs_unreach_said = limit;
		if (limit > (uint64_t)cf->cf_peer_unreachable_secs * 1000)
			log_warn("peer_unreachable_secs %u is below corosync's "
				 "token (%u ms) + consensus (%u ms): a node "
				 "paused that long stays in corosync's "
				 "membership; dlmd reports an unreachable "
				 "member after %llu ms instead",
				 cf->cf_peer_unreachable_secs,
				 cs->cs_totem_token, cs->cs_totem_consensus ?
				 cs->cs_totem_consensus :
				 (uint32_t)((uint64_t)cs->cs_totem_token * 6 / 5),
				 (unsigned long long)limit);
	}
	return limit;
}

static void totem_notify(cmap_handle_t h, cmap_track_handle_t t,
			 int32_t event, const char *key,
			 struct cmap_notify_value nv,
			 struct cmap_notify_value ov, void *data)
{
	struct dlmd_cluster *cs = data;
	uint32_t v = 0;

	if (event == CMAP_TRACK_DELETE || nv.type != CMAP_VALUETYPE_UINT32 ||
	    nv.len != sizeof(v) || !nv.data)
		return;
	memcpy(&v, nv.data, sizeof(v));
	if (!strcmp(key, "runtime.config.totem.token"))
		cs->cs_totem_token = v;
	else if (!strcmp(key, "runtime.config.totem.consensus"))
		cs->cs_totem_consensus = v;
	else
		return;
	unreach_limit(cs);
}

/* Read corosync's token and consensus, and follow them. */
static void totem_follow(struct dlmd_cluster *cs)
{
	cs_error_t e;

	if (cmap_get_uint32(cs->cs_cmap, "runtime.config.totem.token",
			    &cs->cs_totem_token) != CS_OK)
		cs->cs_totem_token = 0;
	if (cmap_get_uint32(cs->cs_cmap, "runtime.config.totem.consensus",
			    &cs->cs_totem_consensus) != CS_OK)
		cs->cs_totem_consensus = 0;
	e = cmap_track_add(cs->cs_cmap, "runtime.config.totem.",
			   CMAP_TRACK_ADD | CMAP_TRACK_MODIFY | CMAP_TRACK_PREFIX,
			   totem_notify, cs, &cs->cs_totem_track);
	if (e != CS_OK)
		log_warn("cmap: cannot follow corosync's token (%s); a change "
			 "needs a dlmd restart", cs_str(e));
	unreach_limit(cs);
}

/*
 * NODES LEAVING THE NODELIST.  A node removed from corosync's nodelist
 * (a reload) kept its lowcomms entry and metrics for the daemon's life:
 * memory per node ever configured, and a stale peer in the metrics.  It
 * is dropped (dlmd_comms_node_remove) once nothing needs it: no process
 * of it in the daemon group, no failure of it waiting to be fenced (its
 * FAILED records need its state until then), and not kept for a merge
 * (cs_reset_later: a node lost from a minority side keeps its state until
 * it is fenced or merges back, FORGIVING A SPLIT).  (cs_lost and cs_down
 * keep a failed node's id until it comes back; fenced, it needs no
 * transport state.)  Until then it stays, looked at again at every kick.  If
 * its id comes back (the same host, or another machine given that id),
 * lowcomms adds it afresh: a new epoch, no queue, no sequence of the
 * node that had the id.
 */
static bool node_needed(const struct dlmd_cluster *cs, uint32_t id)
{
	for (unsigned int i = 0; i < cs->cs_ndm; i++)
		if (cs->cs_dm[i].dm_id == id)
			return true;
	return id_in(cs->cs_dmembers, cs->cs_ndmembers, id) ||
	       id_in(cs->cs_reset_later, cs->cs_nreset_later, id) ||
	       !dlmd_fence_is_done(cs->cs_d, id);
}

static void comms_sweep(struct dlmd_cluster *cs)
{
	bool stale = false;

	if (!cs->cs_comms_stale)
		return;
	for (unsigned int i = 0; i < cs->cs_ncomms_ids;) {
		uint32_t id = cs->cs_comms_ids[i];

		if (find_node(cs, id)) {
			i++;
			continue;
		}
		if (node_needed(cs, id)) {
			stale = true;	/* again at the next kick */
			i++;
			continue;
		}
		if (dlmd_comms_node_remove(cs->cs_d, id)) {
			/* not removed (-EBUSY: inside a lowcomms callback):
			 * the id stays for the next sweep */
			stale = true;
			dlmd_cluster_retry_later(cs->cs_d);
			i++;
			continue;
		}
		log_notice("comms: node %u is out of the nodelist, the daemon "
			   "group and fencing: it left the node table", id);
		cs->cs_comms_ids[i] = cs->cs_comms_ids[--cs->cs_ncomms_ids];
	}
	cs->cs_comms_stale = stale;
}

static void nodelist_notify(cmap_handle_t h, cmap_track_handle_t t,
			    int32_t event, const char *key,
			    struct cmap_notify_value nv,
			    struct cmap_notify_value ov, void *data)
{
	struct dlmd_cluster *cs = data;

	cs->cs_nodelist_changed = true;
	kick(cs);
}

static int cmap_ready(int32_t fd, int32_t revents, void *data)
{
	struct dlmd_cluster *cs = data;

	if ((revents & (POLLHUP | POLLERR)) ||
	    cmap_dispatch(cs->cs_cmap, CS_DISPATCH_ALL) != CS_OK)
		lost_corosync(cs->cs_d, "cmap");
	return 0;
}

/* ------------------------------------------------------------------ */
/* quorum                                                              */
/* ------------------------------------------------------------------ */

static void quorum_notify(quorum_handle_t h, uint32_t quorate, uint64_t ring_seq,
			  uint32_t n, uint32_t *view)
{
	void *ctx = NULL;
	struct dlmd_cluster *cs;

	if (quorum_context_get(h, (const void **)&ctx) != CS_OK || !ctx)
		return;
	cs = ctx;
	if (cs->cs_quorate != !!quorate)
		log_notice("cluster is %squorate (ring %llu, %u node%s)",
			   quorate ? "" : "not ", (unsigned long long)ring_seq, n,
			   n == 1 ? "" : "s");
	cs->cs_quorate = quorate;
	cs->cs_ring_seq = ring_seq;
	cs->cs_nqview = 0;
	for (uint32_t i = 0; i < n && i < DLM_MAX_NODES; i++)
		cs->cs_qview[cs->cs_nqview++] = view[i];
	cs->cs_up->cu_view_nodes_changed(cs->cs_d);
	dlmd_fence_kick(cs->cs_d);
	kick(cs);
}

static int quorum_ready(int32_t fd, int32_t revents, void *data)
{
	struct dlmd_cluster *cs = data;

	if ((revents & (POLLHUP | POLLERR)) ||
	    quorum_dispatch(cs->cs_quorum, CS_DISPATCH_ALL) != CS_OK)
		lost_corosync(cs->cs_d, "quorum");
	return 0;
}

static int quorum_start(struct dlmd_cluster *cs)
{
	quorum_callbacks_t cb = { .quorum_notify_fn = quorum_notify };
	uint32_t type;
	cs_error_t e = CS_ERR_TRY_AGAIN;

	for (int i = 0; i < CS_STARTUP_RETRIES; i++) {
		e = quorum_initialize(&cs->cs_quorum, &cb, &type);
		if (e != CS_ERR_TRY_AGAIN)
			break;
		usleep(CS_RETRY_US);
	}
	if (e != CS_OK) {
		log_err("quorum: %s", cs_str(e));
		return -ENOTCONN;
	}
	quorum_context_set(cs->cs_quorum, cs);
	for (int i = 0; i < CS_STARTUP_RETRIES; i++) {
		e = quorum_trackstart(cs->cs_quorum,
				      CS_TRACK_CHANGES | CS_TRACK_CURRENT);
		if (e != CS_ERR_TRY_AGAIN)
			break;
		usleep(CS_RETRY_US);
	}
	if (e != CS_OK || quorum_fd_get(cs->cs_quorum, &cs->cs_quorum_fd) != CS_OK) {
		log_err("quorum tracking: %s", cs_str(e));
		quorum_finalize(cs->cs_quorum);
		cs->cs_quorum_fd = -1;
		return -ENOTCONN;
	}
	return qb_loop_poll_add(cs->cs_d->d_loop, QB_LOOP_HIGH, cs->cs_quorum_fd,
				POLLIN, cs, quorum_ready);
}

/* ------------------------------------------------------------------ */
/* the lockspace protocol                                              */
/* ------------------------------------------------------------------ */

static int member_index(const struct dlmd_cluster_ls *cl, uint32_t id)
{
	for (unsigned int i = 0; i < cl->cl_nmembers; i++)
		if (cl->cl_members[i] == id)
			return (int)i;
	return -1;
}

/* ---- the daemons of the daemon group ----------------------------- */

static struct cs_daemon *dm_find(struct dlmd_cluster *cs, uint32_t id,
				 uint32_t pid)
{
	for (unsigned int i = 0; i < cs->cs_ndm; i++)
		if (cs->cs_dm[i].dm_id == id && cs->cs_dm[i].dm_pid == pid)
			return &cs->cs_dm[i];
	return NULL;
}

/* Does node id run a dlmd whose CPG protocol we refused (ANOTHER
 * VERSION)? */
static bool refused_of(const struct dlmd_cluster *cs, uint32_t id)
{
	for (unsigned int i = 0; i < cs->cs_ndm; i++)
		if (cs->cs_dm[i].dm_id == id && cs->cs_dm[i].dm_refused)
			return true;
	return false;
}

/* The daemons not yet announced in this sync, as "1 2 3". */
static void fmt_unannounced(const struct dlmd_cluster *cs, char *buf,
			    size_t size)
{
	uint32_t ids[DLM_MAX_NODES];
	unsigned int n = 0;

	for (unsigned int i = 0; i < cs->cs_ndm; i++)
		if (!cs->cs_dm[i].dm_announced)
			ids[n++] = cs->cs_dm[i].dm_id;
	fmt_ids(buf, size, ids, n);
}

/* ---- outgoing messages ------------------------------------------- */

/* Seal o as the next message of ours (SEALED MESSAGES), once: its
 * sequence follows the send order, which is the queue's. */
static void out_seal(struct dlmd_cluster *cs, struct cs_out *o)
{
	struct cm_seal se = { cs->cs_inc, ++cs->cs_seal_seq };

	if (o->o_sealed)
		return;
	o->o_len = dlmd_cm_seal(o->o_buf, o->o_len, cs->cs_cpg_key,
				cs->cs_d->d_nodeid, cs->cs_self_pid, &se);
	o->o_sealed = true;
}

static void out_flush(struct dlmd_cluster *cs)
{
	/* the seal binds our CPG pid, known from our first confchg (which
	 * comes before anything we send can be delivered): until then
	 * messages wait here (daemon_confchg flushes) */
	if (!cs->cs_self_pid || cs->cs_dup_stop)
		return;
	while (cs->cs_out) {
		struct cs_out *o = cs->cs_out;
		struct iovec iov = { .iov_base = o->o_buf };
		cs_error_t e;

		out_seal(cs, o);
		iov.iov_len = o->o_len;
		e = cpg_mcast_joined(cs->cs_daemon_cpg, CPG_TYPE_AGREED, &iov, 1);

		if (e == CS_ERR_TRY_AGAIN) {
			dlmd_cluster_retry_later(cs->cs_d);
			return;
		}
		if (e != CS_OK) {
			log_err("daemon group: cannot send a message of %zu bytes: %s",
				o->o_len, cs_str(e));
			lost_corosync(cs->cs_d, "daemon group send");
			return;
		}
		cs->cs_out = o->o_next;
		if (!cs->cs_out)
			cs->cs_out_tail = &cs->cs_out;
		cs->cs_nout--;
		free(o);
	}
}

/* Queue a message (sent in queue order).  0 or -ENOMEM. */
static int out_queue(struct dlmd_cluster *cs, const unsigned char *buf,
		     size_t len)
{
	struct cs_out *o;

	if (cs->cs_dup_stop)
		return 0;	/* another dlmd has our node id: nothing of ours */
	o = malloc(sizeof(*o) + len + CM_SEAL_LEN);
	if (!o) {
		uint64_t now = dlmd_now_ms();

		/* its callers retry (a START every MCAST_RETRY_MS): said
		 * once per OUT_NOMEM_LOG_MS */
		cs->cs_out_nomem++;
		if (now >= cs->cs_out_nomem_log_at) {
			log_err("daemon group: no memory for an outgoing message "
				"(%llu time%s since this line was last logged)",
				(unsigned long long)cs->cs_out_nomem,
				cs->cs_out_nomem == 1 ? "" : "s");
			cs->cs_out_nomem = 0;
			cs->cs_out_nomem_log_at = now + OUT_NOMEM_LOG_MS;
		}
		return -ENOMEM;
	}
	o->o_next = NULL;
	o->o_len = len;
	o->o_sealed = false;
	memcpy(o->o_buf, buf, len);
	*cs->cs_out_tail = o;
	cs->cs_out_tail = &o->o_next;
	cs->cs_nout++;
	out_flush(cs);
	return 0;
}

static struct cm_hdr out_hdr(struct dlmd_cluster *cs, uint32_t lsid)
{
	struct cm_hdr h = {
		.h_sender = cs->cs_d->d_nodeid,
		.h_lsid = lsid,
		.h_seq = ++cs->cs_seq,
	};

	return h;
}

/* JOIN or LEAVE of lockspace 'name'. */
static int send_ls(struct dlmd_cluster *cs, uint16_t type, const char *name)
{
	unsigned char buf[CM_MAX_LEN];
	struct cm_hdr h = out_hdr(cs, dlm_core_ls_name_to_id(name));
	size_t len = dlmd_cm_ls_encode(buf, &h, type, name);

	if (!len) {
		log_err("lockspace %s: its name cannot be sent", name);
		return -EINVAL;
	}
	return out_queue(cs, buf, len);
}

/* VOUCHING: can we tell every process of the group, dlmd or nobody?
 * Each is ourselves, sealed a message we verified, or we saw it join
 * (and know whether it has sealed one since). */
static bool vouch_whole(const struct dlmd_cluster *cs)
{
	for (unsigned int i = 0; i < cs->cs_ndm; i++) {
		const struct cs_daemon *dm = &cs->cs_dm[i];

		if (!dm->dm_inc && !dm->dm_witnessed && !dm->dm_known)
			return false;
	}
	return true;
}

/* VOUCHING: the processes we vouch for (every one that has sealed, we
 * ourselves too) into a FIRST part, if we can tell them all. */
static void vouch_fill(const struct dlmd_cluster *cs, struct cm_announce *an)
{
	if (!vouch_whole(cs))
		return;
	an->an_flags |= CM_ANN_VOUCH;
	an->an_vouch[an->an_nvouch++] = (struct cm_vouch){
		cs->cs_d->d_nodeid, cs->cs_self_pid, cs->cs_inc };
	for (unsigned int i = 0; i < cs->cs_ndm; i++) {
		const struct cs_daemon *dm = &cs->cs_dm[i];

		if (!dm->dm_inc || an->an_nvouch >= DLM_MAX_NODES ||
		    (dm->dm_id == cs->cs_d->d_nodeid &&
		     dm->dm_pid == cs->cs_self_pid))
			continue;
		an->an_vouch[an->an_nvouch++] = (struct cm_vouch){
			dm->dm_id, dm->dm_pid, dm->dm_inc };
	}
}

/* ANNOUNCE: the lockspaces we are in, as of our queued JOIN/LEAVEs (our
 * local instances: each queued a JOIN when created and queues a LEAVE
 * when released); its FIRST part vouches (VOUCHING). */
static void send_announce(struct dlmd_cluster *cs)
{
	static struct cm_announce an;
	unsigned char buf[CM_MAX_LEN];
	struct dlmd_ls *dl = cs->cs_d->d_lockspaces;
	unsigned int total = 0;
	bool first = true;

	do {
		struct cm_hdr h = out_hdr(cs, 0);
		size_t len;

		memset(&an, 0, sizeof(an));
		for (; dl && an.an_count < CM_ANN_MAX; dl = dl->dl_next) {
			if (!dl->dl_cluster)
				continue;
			snprintf(an.an_ls[an.an_count++].n_name,
				 sizeof(an.an_ls[0].n_name), "%s", dl->dl_name);
		}
		while (dl && !dl->dl_cluster)
			dl = dl->dl_next;
		an.an_flags = (first ? CM_ANN_FIRST : 0) | (dl ? 0 : CM_ANN_LAST);
		an.an_view = cs->cs_view;
		if (first)
			vouch_fill(cs, &an);
		total += an.an_count;
		len = dlmd_cm_announce_encode(buf, &h, &an);
		if (!len || out_queue(cs, buf, len)) {
			log_err("daemon group: cannot send our lockspaces");
			return;
		}
		first = false;
	} while (dl);
	log_debug("daemon group: announced our %u lockspace%s", total,
		  total == 1 ? "" : "s");
}

/* ---- the table ----------------------------------------------------- */

static unsigned int le_bucket(const char *name)
{
	return dlm_core_ls_name_to_id(name) % LS_HASH;
}

static struct cs_lsent *le_find(struct dlmd_cluster *cs, const char *name,
				bool create)
{
	unsigned int b = le_bucket(name);
	struct cs_lsent *le;

	for (le = cs->cs_ls[b]; le; le = le->le_next)
		if (!strcmp(le->le_name, name))
			return le;
	if (!create)
		return NULL;
	le = calloc(1, sizeof(*le));
	if (!le) {
		log_err("lockspace %s: no memory for its table entry", name);
		return NULL;
	}
	snprintf(le->le_name, sizeof(le->le_name), "%s", name);
	le->le_next = cs->cs_ls[b];
	cs->cs_ls[b] = le;
	cs->cs_nls++;
	return le;
}

static bool le_has(const struct cs_lsent *le, uint32_t id)
{
	return le && id_in(le->le_members, le->le_nmembers, id);
}

/* Add id to a growing array; false on no memory. */
static bool ids_add(uint32_t **ids, unsigned int *n, unsigned int *cap,
		    uint32_t id, bool sorted)
{
	unsigned int i;

	if (id_in(*ids, *n, id))
		return true;
	if (*n == *cap) {
		unsigned int nc = *cap ? 2 * *cap : 4;
		uint32_t *p = realloc(*ids, nc * sizeof(*p));

		if (!p)
			return false;
		*ids = p;
		*cap = nc;
	}
	i = *n;
	if (sorted)
		for (; i > 0 && (*ids)[i - 1] > id; i--)
			(*ids)[i] = (*ids)[i - 1];
	(*ids)[i] = id;
	(*n)++;
	return true;
}

static bool ids_del(uint32_t *ids, unsigned int *n, uint32_t id)
{
	for (unsigned int i = 0; i < *n; i++) {
		if (ids[i] == id) {
			memmove(&ids[i], &ids[i + 1], (*n - i - 1) * sizeof(*ids));
			(*n)--;
			return true;
		}
	}
	return false;
}

static struct cs_byid *byid(struct dlmd_cluster *cs, uint32_t id, bool create)
{
	for (unsigned int i = 0; i < cs->cs_nbyid; i++)
		if (cs->cs_byid[i].bi_id == id)
			return &cs->cs_byid[i];
	if (!create || cs->cs_nbyid >= DLM_MAX_NODES)
		return NULL;
	memset(&cs->cs_byid[cs->cs_nbyid], 0, sizeof(cs->cs_byid[0]));
	cs->cs_byid[cs->cs_nbyid].bi_id = id;
	return &cs->cs_byid[cs->cs_nbyid++];
}

/* Room for n ids in *ids without a realloc later. */
static bool ids_reserve(uint32_t **ids, unsigned int *cap, unsigned int n)
{
	unsigned int nc = *cap ? *cap : 4;
	uint32_t *p;

	if (n <= *cap)
		return true;
	while (nc < n)
		nc *= 2;
	p = realloc(*ids, nc * sizeof(*p));
	if (!p)
		return false;
	*ids = p;
	*cap = nc;
	return true;
}

static bool le_add(struct dlmd_cluster *cs, struct cs_lsent *le, uint32_t id)
{
	struct cs_byid *bi = byid(cs, id, true);

	if (bi && bi->bi_n == bi->bi_cap) {
		unsigned int nc = bi->bi_cap ? 2 * bi->bi_cap : 16;
		struct cs_lsent **p = realloc(bi->bi_ls, nc * sizeof(*p));

		if (p) {
			bi->bi_ls = p;
			bi->bi_cap = nc;
		}
	}
	if (!bi || bi->bi_n == bi->bi_cap || le->le_nmembers >= DLM_MAX_NODES ||
	    !ids_add(&le->le_members, &le->le_nmembers, &le->le_cmembers, id,
		     true)) {
		log_err("lockspace %s: cannot add node %u to its table entry",
			le->le_name, id);
		return false;
	}
	bi->bi_ls[bi->bi_n++] = le;
	/* a member's failure is recorded when memory may be short (a
	 * confchg under memory pressure: le_failed_add failed there, seen
	 * in tests/test-cluster-recfaults.sh): room for it now */
	if (!ids_reserve(&le->le_failed, &le->le_cfailed,
			 le->le_nmembers + le->le_nfailed) ||
	    !ids_reserve(&le->le_dfailed, &le->le_cdfailed,
			 le->le_nmembers + le->le_nfailed))
		log_warn("lockspace %s: no room reserved for its members' "
			 "failures (out of memory)", le->le_name);
	return true;
}

/* id is no member of le any more (a LEAVE). */
static void le_del(struct dlmd_cluster *cs, struct cs_lsent *le, uint32_t id)
{
	struct cs_byid *bi = byid(cs, id, false);

	ids_del(le->le_members, &le->le_nmembers, id);
	for (unsigned int i = bi ? bi->bi_n : 0; i-- > 0;) {
		if (bi->bi_ls[i] == le) {
			bi->bi_ls[i] = bi->bi_ls[--bi->bi_n];
			break;
		}
	}
}

static bool claim_add(struct dlmd_cluster *cs, struct cs_lsent *le, uint32_t id)
{
	if (!ids_add(&le->le_claim, &le->le_nclaim, &le->le_cclaim, id, false))
		return false;
	cs->cs_nclaims++;
	return true;
}

static bool claim_del(struct dlmd_cluster *cs, struct cs_lsent *le, uint32_t id)
{
	if (!ids_del(le->le_claim, &le->le_nclaim, id))
		return false;
	cs->cs_nclaims--;
	return true;
}

/* Record id's failure out of le ('daemon': its dlmd alone died). */
static void le_failed_add(struct cs_lsent *le, uint32_t id, bool daemon)
{
	if (le->le_nfailed >= DLM_MAX_NODES ||
	    !ids_add(&le->le_failed, &le->le_nfailed, &le->le_cfailed, id, false) ||
	    (daemon && !ids_add(&le->le_dfailed, &le->le_ndfailed,
				&le->le_cdfailed, id, false)))
		log_err("lockspace %s: cannot record node %u's failure",
			le->le_name, id);
}

/* Drop the failures that are fenced now; how many. */
static unsigned int le_drop_fenced(struct dlmd_cluster *cs, struct cs_lsent *le)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < le->le_nfailed;) {
		uint32_t id = le->le_failed[i];

		if (dlmd_fence_is_done(cs->cs_d, id)) {
			ids_del(le->le_failed, &le->le_nfailed, id);
			ids_del(le->le_dfailed, &le->le_ndfailed, id);
			n++;
		} else {
			i++;
		}
	}
	return n;
}

static void le_free(struct cs_lsent *le)
{
	free(le->le_rep);
	free(le->le_fev);
	free(le->le_members);
	free(le->le_failed);
	free(le->le_dfailed);
	free(le->le_claim);
	free(le);
}

/* Drop the fenced failures; free an entry nobody needs any more. */
static void le_tidy(struct dlmd_cluster *cs, struct cs_lsent *le)
{
	struct cs_lsent **pp;

	le_drop_fenced(cs, le);
	if (le->le_nmembers || le->le_nfailed || le->le_nclaim || le->le_cl ||
	    le->le_nrep)
		return;
	for (pp = &cs->cs_ls[le_bucket(le->le_name)]; *pp; pp = &(*pp)->le_next) {
		if (*pp == le) {
			*pp = le->le_next;
			break;
		}
	}
	cs->cs_nls--;
	le_free(le);
}

/* FORGIVING A SPLIT: the process node 'id' failed with last. */
static const struct cs_failpid *failpid(const struct dlmd_cluster *cs,
					uint32_t id)
{
	for (unsigned int i = 0; i < cs->cs_nfailpid; i++)
		if (cs->cs_failpid[i].fp_id == id)
			return &cs->cs_failpid[i];
	return NULL;
}

/* Node 'id' failed as process (pid, inc) (0, 0: not known).  'learned':
 * from another's record, which does not replace what we saw. */
static void failpid_set(struct dlmd_cluster *cs, uint32_t id, uint32_t pid,
			uint64_t inc, bool learned)
{
	struct cs_failpid *fp = (struct cs_failpid *)failpid(cs, id);

	if (fp && learned)
		return;
	if (!fp) {
		if (cs->cs_nfailpid == DLM_MAX_NODES)
			return;		/* not known: never forgiven */
		fp = &cs->cs_failpid[cs->cs_nfailpid++];
	}
	fp->fp_id = id;
	fp->fp_pid = pid;
	fp->fp_inc = inc;
}

/* FAILED: every failure out of le we recorded and have not seen fenced
 * (none: count 0), each with the process that failed and what we know
 * of its fencing, and our last event of le.  A daemon that joins later
 * learns them so; a merge's sync decides on them (FORGIVING A SPLIT). */
static void send_failed(struct dlmd_cluster *cs, struct cs_lsent *le)
{
	static struct cm_failed fl;
	unsigned char buf[CM_MAX_LEN];
	struct cm_hdr h = out_hdr(cs, dlm_core_ls_name_to_id(le->le_name));
	size_t len;

	memset(&fl, 0, sizeof(fl));
	snprintf(fl.fl_ls.n_name, sizeof(fl.fl_ls.n_name), "%s", le->le_name);
	fl.fl_event = le->le_cl ? le->le_cl->cl_last_event : 0;
	for (unsigned int i = 0; i < le->le_nfailed && i < DLM_MAX_NODES; i++) {
		uint32_t id = le->le_failed[i];
		const struct cs_failpid *fp = failpid(cs, id);
		unsigned int mk = dlmd_fence_marks(cs->cs_d, id);
		uint32_t f = 0;

		if (id_in(le->le_dfailed, le->le_ndfailed, id))
			f |= CM_FAILED_DAEMON | CM_FAILED_FIRM;
		if (mk & DLMD_FENCE_MARK_FENCING)
			f |= CM_FAILED_FENCING;
		if (mk & DLMD_FENCE_MARK_FIRM)
			f |= CM_FAILED_FIRM;
		fl.fl_ids[fl.fl_count] = id;
		fl.fl_pids[fl.fl_count] = fp ? fp->fp_pid : 0;
		fl.fl_incs[fl.fl_count] = fp ? fp->fp_inc : 0;
		fl.fl_flags[fl.fl_count++] = f;
	}
	len = dlmd_cm_failed_encode(buf, &h, &fl);
	if (!len || out_queue(cs, buf, len))
		log_err("lockspace %s: cannot send its recorded failures",
			le->le_name);
}

/*
 * At the start of a sync: every lockspace's unfenced failures, and a
 * record without failures (count 0: its last event) of every other
 * lockspace we hold an instance of.  forgive_split needs a record of
 * each lockspace X failed out of from every member, X too, and every
 * daemon records X's failure in each lockspace X is in, also in those
 * where X itself lost nobody (X alone in one, as lvmlockd's per-VG
 * lockspaces often leave it): without X's record there, nobody was
 * forgiven.  Volume: one small message per lockspace held per sync,
 * the order of the STARTs a merge's changes cost anyway.
 */
static void send_failed_all(struct dlmd_cluster *cs)
{
	unsigned int n = 0, nnone = 0;

	for (unsigned int b = 0; b < LS_HASH; b++) {
		for (struct cs_lsent *le = cs->cs_ls[b]; le; le = le->le_next) {
			le_drop_fenced(cs, le);
			if (!le->le_nfailed && !le->le_cl)
				continue;
			send_failed(cs, le);
			if (le->le_nfailed)
				n++;
			else
				nnone++;
		}
	}
	if (n || nnone)
		log_info("daemon group: sent the unfenced failures of %u "
			 "lockspace%s (and %u record%s of none)", n,
			 n == 1 ? "" : "s", nnone, nnone == 1 ? "" : "s");
}

/* ---- the lockspace protocol on the derived changes ----------------- */

/* NULL when this node may send its START for the current change, else
 * what it waits for. */
static const char *start_blocker(const struct dlmd_cluster_ls *cl,
				 char *buf, size_t size)
{
	const struct dlmd_cluster *cs = cl->cl_d->d_cluster;
	bool view_current = cs->cs_ring_seq > cl->cl_change_ring;

	if (!cs->cs_quorate)
		return "quorum";
	for (unsigned int i = 0; i < cl->cl_nchange_down; i++)
		if (id_in(cs->cs_qview, cs->cs_nqview, cl->cl_change_down[i]) &&
		    !view_current)
			return "quorum (view older than the change)";
	for (unsigned int i = 0; i < cl->cl_nmembers; i++)
		if (!id_in(cs->cs_qview, cs->cs_nqview, cl->cl_members[i]))
			return "quorum (member not in the quorum view)";
	if (cl->cl_le && cl->cl_le->le_nclaim) {
		char ids[64];

		fmt_ids(ids, sizeof(ids), cl->cl_le->le_claim,
			cl->cl_le->le_nclaim);
		snprintf(buf, size, "fencing of us (node%s %s record%s our own "
			 "failure in it)", cl->cl_le->le_nclaim > 1 ? "s" : "",
			 ids, cl->cl_le->le_nclaim > 1 ? "" : "s");
		return buf;
	}
	for (unsigned int i = 0; i < cl->cl_nfailed; i++) {
		if (!dlmd_fence_is_done(cl->cl_d, cl->cl_failed[i])) {
			char what[80];

			dlmd_fence_describe(cl->cl_d, cl->cl_failed[i], what,
					    sizeof(what));
			snprintf(buf, size, "fencing %s", what);
			return buf;
		}
	}
	if (cs->cs_syncing) {
		char ids[64];

		fmt_unannounced(cs, ids, sizeof(ids));
		snprintf(buf, size, "sync (lockspaces of daemon%s %s)",
			 strchr(ids, ' ') ? "s" : "", ids);
		return buf;
	}
	return NULL;
}

/* Our engine settings, as a START carries them (EQUAL SETTINGS). */
static void our_settings(const struct dlmd *d, struct cm_settings *es)
{
	es->es_remaster_secs = d->d_cfg.cf_remaster_secs;
	es->es_remaster_window = d->d_cfg.cf_remaster_window ?
				 d->d_cfg.cf_remaster_window : DLMD_REMASTER_WINDOW;
	es->es_flags = (d->d_cfg.cf_remaster_shared ? CM_ES_SHARED : 0) |
		       (d->d_cfg.cf_fold ? CM_ES_FOLD : 0);
}

static int send_start(struct dlmd_cluster_ls *cl)
{
	struct dlmd_cluster *cs = cl->cl_d->d_cluster;
	unsigned char buf[CM_MAX_LEN];
	struct cm_hdr h = out_hdr(cs, cl->cl_lsid);
	struct cm_start st;
	size_t len;

	h.h_seq = cl->cl_change_seq;
	memset(&st, 0, sizeof(st));
	snprintf(st.st_ls.n_name, sizeof(st.st_ls.n_name), "%s",
		 cl->cl_dl->dl_name);
	st.st_last_event = cl->cl_last_event;
	our_settings(cl->cl_d, &st.st_set);
	st.st_nmembers = cl->cl_nmembers;
	memcpy(st.st_members, cl->cl_members, cl->cl_nmembers * sizeof(uint32_t));
	st.st_nprev = cl->cl_nprev;
	memcpy(st.st_prev, cl->cl_prev, cl->cl_nprev * sizeof(uint32_t));
	len = dlmd_cm_start_encode(buf, &h, &st);
	if (!len || out_queue(cs, buf, len)) {
		/* retried every MCAST_RETRY_MS: said once, not each time */
		if (!cl->cl_start_fails++)
			log_err("lockspace %s: cannot send START; trying again "
				"every %u ms", cl->cl_dl->dl_name, MCAST_RETRY_MS);
		return -ENOMEM;
	}
	if (cl->cl_start_fails) {
		log_notice("lockspace %s: START sent after %u attempts",
			   cl->cl_dl->dl_name, cl->cl_start_fails + 1);
		cl->cl_start_fails = 0;
	}
	log_debug("lockspace %s: START sent for change %u (last event %u)",
		  cl->cl_dl->dl_name, cl->cl_change_seq, cl->cl_last_event);
	return 0;
}

/* Every member's START is in: decide, the same way on every member
 * (member-policy.c). */
/* Can engines with settings a and b run one lockspace (EQUAL SETTINGS)? */
static bool settings_agree(const struct cm_settings *a,
			   const struct cm_settings *b)
{
	if (!a->es_remaster_secs != !b->es_remaster_secs)
		return false;
	return !a->es_remaster_secs ||
	       !((a->es_flags ^ b->es_flags) & CM_ES_SHARED);
}

static void fmt_settings(char *buf, size_t size, const struct cm_settings *es)
{
	snprintf(buf, size, "remaster_secs %u remaster_window %u "
		 "remaster_shared %u fold_lone_locks %u", es->es_remaster_secs,
		 es->es_remaster_window, !!(es->es_flags & CM_ES_SHARED),
		 !!(es->es_flags & CM_ES_FOLD));
}

/* EQUAL SETTINGS: is member j's a reference setting, one a fresh member
 * must agree with?  Those of every member that ran the lockspace (they
 * ran it together: they agree), or, if none did, that of the fresh
 * member with the lowest node id.  Never that of a member refused
 * itself: each fresh member is held to the reference alone, not to the
 * other fresh ones.  The same on every member (the same STARTs). */
static bool settings_ref(const struct dlmd_cluster_ls *cl, unsigned int j)
{
	bool ran = false;

	for (unsigned int k = 0; k < cl->cl_nmembers; k++)
		ran |= cl->cl_start_event[k] != 0;
	if (ran)
		return cl->cl_start_event[j] != 0;
	for (unsigned int k = 0; k < cl->cl_nmembers; k++)
		if (cl->cl_members[k] < cl->cl_members[j])
			return false;
	return true;
}

/* EQUAL SETTINGS: warn of settings that may differ (each master decides
 * alone) when ours are not those of member j. */
static void settings_warn(const struct dlmd_cluster_ls *cl, unsigned int self,
			  unsigned int j)
{
	const struct cm_settings *es = &cl->cl_start_set[self];
	const struct cm_settings *ej = &cl->cl_start_set[j];
	char a[128], b[128];

	if (!settings_agree(es, ej) || !memcmp(es, ej, sizeof(*es)) ||
	    (es->es_remaster_secs == ej->es_remaster_secs &&
	     es->es_remaster_window == ej->es_remaster_window))
		return;
	fmt_settings(a, sizeof(a), es);
	fmt_settings(b, sizeof(b), ej);
	log_warn("lockspace %s: node %u has %s, we have %s (allowed: each "
		 "master decides alone)", cl->cl_dl->dl_name,
		 cl->cl_members[j], b, a);
}

/* EQUAL SETTINGS: the members refused at this decision, each logged with
 * the reference settings it conflicts with (settings_ref; the same on
 * every member: the same STARTs); *us: we are one.  Returns how many. */
static unsigned int settings_refusals(struct dlmd_cluster_ls *cl, bool *us)
{
	uint32_t self = cl->cl_d->d_nodeid;
	unsigned int n = 0;
	char a[128], b[128];

	*us = false;
	for (unsigned int i = 0; i < cl->cl_nmembers; i++) {
		const struct cm_settings *ei = &cl->cl_start_set[i];

		for (unsigned int j = 0; j < cl->cl_nmembers; j++)
			if (j != i && cl->cl_members[i] == self)
				settings_warn(cl, i, j);
		if (cl->cl_start_event[i] || settings_ref(cl, i))
			continue;	/* it ran it, or it is the reference */
		for (unsigned int j = 0; j < cl->cl_nmembers; j++) {
			const struct cm_settings *ej = &cl->cl_start_set[j];

			if (j == i || !settings_ref(cl, j) ||
			    settings_agree(ei, ej))
				continue;
			fmt_settings(a, sizeof(a), ei);
			fmt_settings(b, sizeof(b), ej);
			log_err("lockspace %s: node %u refused: it joins with %s, "
				"node %u %s it with %s (the members of a lockspace "
				"must agree on remastering: on or off, and "
				"remaster_shared)", cl->cl_dl->dl_name,
				cl->cl_members[i], a, cl->cl_members[j],
				cl->cl_start_event[j] ? "runs" : "joins", b);
			if (cl->cl_members[i] == self)
				*us = true;
			n++;
			break;
		}
	}
	return n;
}

static void decide(struct dlmd_cluster_ls *cl)
{
	struct dlmd *d = cl->cl_d;
	struct dlmd_decision dc;
	char m[IDS_TEXT_LEN];
	bool refused;

	dlmd_decide(cl->cl_members, cl->cl_start_event, cl->cl_nmembers, &dc);
	switch (dc.dc_kind) {
	case DLMD_DECIDE_LOSERS:
		fmt_ids(m, sizeof(m), dc.dc_losers, dc.dc_nlosers);
		log_err("lockspace %s: stateful merge: node(s) %s ran it with an "
			"event older than %u (cut off while the others recovered); "
			"they drop their instance", cl->cl_dl->dl_name, m,
			dc.dc_newest);
		if (id_in(dc.dc_losers, dc.dc_nlosers, d->d_nodeid)) {
			set_state(cl, CL_STALE, "a loser of a stateful merge");
			kick(d->d_cluster);
		}
		return;
	case DLMD_DECIDE_EXHAUSTED:
		log_err("lockspace %s: event numbers exhausted", cl->cl_dl->dl_name);
		return;
	case DLMD_DECIDE_START:
		break;
	}
	if (settings_refusals(cl, &refused)) {
		/* as for losers: no decision; the others wait for the
		 * change our LEAVE causes */
		if (refused) {
			cl->cl_refused = true;
			set_state(cl, CL_STALE, "its settings differ (EQUAL "
				  "SETTINGS)");
			kick(d->d_cluster);
		}
		return;
	}
	set_state(cl, CL_DECIDED, "every START is in");
	cl->cl_last_event = dc.dc_event;
	memcpy(cl->cl_prev, cl->cl_members, cl->cl_nmembers * sizeof(uint32_t));
	cl->cl_nprev = cl->cl_nmembers;
	fmt_ids(m, sizeof(m), cl->cl_members, cl->cl_nmembers);
	log_notice("lockspace %s: members [%s] agreed, event %u",
		   cl->cl_dl->dl_name, m, cl->cl_last_event);
}

/*
 * RECOVERY RETRY.  When the engine's recovery of event E fails here (a
 * step ran out of memory: eu_recovery_failed), or the engine refuses to
 * start it, the lockspace stays stopped, and the other members wait at
 * the step's barrier for a status we never send.  A retry must therefore
 * be cluster-wide: after a back-off (member-policy.c: 1 s, doubling to
 * 30 s, attempt after attempt until a recovery finishes) we multicast
 * LS_RESTART {name, E}.  Its delivery is, on every member whose last
 * decided event is E and that has decided (decided, recovering or
 * failed), a change of the same members: step 1 again (stop, START,
 * decision), so E+1 is decided and recovered by all.  A member for which
 * a newer change is already under way ignores it: that change restarts
 * recovery anyway.  dlmctl ls shows "recovery failed, retry in N s
 * (attempt K)".
 */
static void restart_timer(void *data);

static void restart_disarm(struct dlmd_cluster_ls *cl)
{
	if (cl->cl_restart_armed)
		qb_loop_timer_del(cl->cl_d->d_loop, cl->cl_restart_timer);
	cl->cl_restart_armed = false;
}

/* Send the RESTART after the back-off of the current attempt. */
static void restart_arm(struct dlmd_cluster_ls *cl)
{
	uint32_t delay = dlmd_restart_delay_ms(cl->cl_restart_attempt);

	restart_disarm(cl);
	cl->cl_restart_at = dlmd_now_ms() + delay;
	if (qb_loop_timer_add(cl->cl_d->d_loop, QB_LOOP_LOW,
			      (uint64_t)delay * NS_PER_MS, cl, restart_timer,
			      &cl->cl_restart_timer) == 0)
		cl->cl_restart_armed = true;
	else
		log_err("lockspace %s: cannot arm the restart timer: recovery "
			"restarts at the next membership change",
			cl->cl_dl->dl_name);
}

static void restart_timer(void *data)
{
	struct dlmd_cluster_ls *cl = data;
	struct dlmd_cluster *cs = cl->cl_d->d_cluster;
	unsigned char buf[CM_MAX_LEN];
	struct cm_hdr h = out_hdr(cs, cl->cl_lsid);
	struct cm_restart rs;
	size_t len;

	cl->cl_restart_armed = false;
	if (cl->cl_state != CL_FAILED)
		return;
	memset(&rs, 0, sizeof(rs));
	snprintf(rs.rs_ls.n_name, sizeof(rs.rs_ls.n_name), "%s",
		 cl->cl_dl->dl_name);
	rs.rs_event = cl->cl_last_event;
	len = dlmd_cm_restart_encode(buf, &h, &rs);
	if (!len || out_queue(cs, buf, len)) {
		log_err("lockspace %s: cannot send LS_RESTART; trying again",
			cl->cl_dl->dl_name);
		restart_arm(cl);
		return;
	}
	log_notice("lockspace %s: LS_RESTART of event %u sent (attempt %u)",
		   cl->cl_dl->dl_name, cl->cl_last_event, cl->cl_restart_attempt);
}

/* Our recovery of cl_last_event failed (error, in step 'step'). */
static void recovery_failed_here(struct dlmd_cluster_ls *cl, int error,
				 const char *step)
{
	cl->cl_restart_attempt++;
	cl->cl_restart_error = error;
	snprintf(cl->cl_restart_step, sizeof(cl->cl_restart_step), "%s", step);
	set_state(cl, CL_FAILED, "the engine's recovery failed here");
	log_err("lockspace %s: recovery %u failed here in step %s: %s; the "
		"other members wait for us: restarting it everywhere in %u s "
		"(attempt %u)", cl->cl_dl->dl_name, cl->cl_last_event, step,
		strerror(-error),
		dlmd_restart_delay_ms(cl->cl_restart_attempt) / 1000,
		cl->cl_restart_attempt);
	restart_arm(cl);
}

/* Move the lockspace on as far as the conditions allow.  Never called
 * from inside an engine callback. */
static void ls_progress(struct dlmd_cluster_ls *cl)
{
	struct dlmd *d = cl->cl_d;
	struct dlmd_ls *dl = cl->cl_dl;
	char buf[BLOCKER_LEN];
	int rv;

	if (cl->cl_state == CL_STOPPED) {
		if (start_blocker(cl, buf, sizeof(buf)))
			return;
		if (send_start(cl)) {
			/* no memory for it: nothing else would move this
			 * lockspace on, and the others wait for our START */
			dlmd_cluster_retry_later(d);
			return;
		}
		set_state(cl, CL_STARTED, "START sent");
	}
	if (cl->cl_state == CL_DECIDED) {
		if (!d->d_cluster->cs_quorate)
			return;
		/* before the call: its first steps run inside it, and may
		 * report done or failed (recovery_failed_here) at once */
		set_state(cl, CL_RECOVERING, "the engine's recovery starts");
		rv = dlm_core_ls_start(dl->dl_core, cl->cl_last_event,
				       cl->cl_members, cl->cl_nmembers);
		if (rv) {
			recovery_failed_here(cl, rv, "start");
			return;
		}
		dlmd_metrics_recovery_started(&dl->dl_metrics);
		memcpy(dl->dl_members, cl->cl_members,
		       cl->cl_nmembers * sizeof(uint32_t));
		dl->dl_nmembers = cl->cl_nmembers;
		d->d_cluster->cs_up->cu_view_ls_changed(d, dl);
		dlmd_flush(d);
	}
	if (cl->cl_state == CL_RECOVERING &&
	    cl->cl_recovered == cl->cl_last_event) {
		if (!d->d_cluster->cs_quorate)
			return;
		rv = dlm_core_ls_finish(dl->dl_core, cl->cl_last_event);
		if (rv) {
			log_err("lockspace %s: finish of event %u refused: %s",
				dl->dl_name, cl->cl_last_event, strerror(-rv));
			return;
		}
		set_state(cl, CL_RUNNING, "recovery finished");
		cl->cl_nfailed = 0;
		cl->cl_restart_attempt = 0;
		dlmd_metrics_recovery_done(&dl->dl_metrics);
		log_notice("lockspace %s: recovery %u finished, locking resumed "
			   "(%u member%s)", dl->dl_name, cl->cl_last_event,
			   cl->cl_nmembers, cl->cl_nmembers == 1 ? "" : "s");
		if (!cl->cl_ever_ran) {
			cl->cl_ever_ran = true;
			/* the held LS_CREATE replies (client.c) */
			d->d_cluster->cs_up->cu_ls_join_done(d, dl, 0);
		}
		dlmd_flush(d);
	}
}

static void ls_drop_as_loser(struct dlmd_cluster_ls *cl)
{
	struct dlmd *d = cl->cl_d;
	struct dlmd_ls *dl = cl->cl_dl;

	if (cl->cl_refused) {
		/* EQUAL SETTINGS: the create request fails, clearly */
		log_err("lockspace %s: not joined: our remastering settings "
			"differ from its members' (see above); releasing it",
			dl->dl_name);
		d->d_cluster->cs_up->cu_ls_join_done(d, dl, -EPROTO);
	} else {
		log_err("lockspace %s: our instance is stale; releasing it (its "
			"clients lose their locks)", dl->dl_name);
	}
	if (d->d_cluster->cs_up->cu_ls_drop(d, dl))
		log_err("lockspace %s: cannot release it", dl->dl_name);
}

/* A CONFIG with this pair, to every member (deliver_config); flags
 * CM_CONFIG_SYNC: sent again at the sync of view. */
static void config_send(struct dlmd_cluster *cs, uint32_t flags,
			unsigned int nnodes, uint32_t tiebreak, uint32_t view)
{
	struct cm_config cg = { flags, nnodes, tiebreak, view };
	unsigned char buf[CM_CONFIG_SYNC_LEN];
	struct cm_hdr h;
	size_t len;

	h = out_hdr(cs, 0);
	len = dlmd_cm_config_encode(buf, &h, &cg);
	if (len)
		out_queue(cs, buf, len);
}

/* CONFIGURATION CHANGES: our reading of the configuration (re-read
 * just now) differs from the pair we decide with: tell the group, which
 * applies it in order (deliver_config). */
static void config_check(struct dlmd_cluster *cs)
{
	/* (no pair yet: a dlmd that did not read one at start) */
	if (cs->cs_conf_set && cs->cs_nnodes == cs->cs_conf_nnodes &&
	    cs->cs_tiebreak == cs->cs_conf_tiebreak)
		return;
	log_notice("corosync: the configuration changed: %u configured node%s "
		   "(was %u); node %u breaks even splits (was %u); every dlmd "
		   "counts majorities against it from its CONFIG on",
		   cs->cs_nnodes, cs->cs_nnodes == 1 ? "" : "s",
		   conf_nnodes(cs), cs->cs_tiebreak, conf_tiebreak(cs));
	config_send(cs, 0, cs->cs_nnodes, cs->cs_tiebreak, 0);
}

/* CONFIGURATION CHANGES: at a sync's start, once a CONFIG was delivered
 * to us, the lowest known member sends the pair it decides with again
 * (CM_CONFIG_SYNC, with the sync's view), so a joiner (its own reading
 * may differ) decides with the group's from that CONFIG's delivery on,
 * before the sync's end (queued before our ANNOUNCE), and every member
 * takes it at that one point of the stream.  The known members agree on
 * who is the lowest (the table is the same on every one of them at the
 * sync's start); each side of a merge sends its own, and the last one
 * delivered wins on every member alike.  deliver_config takes it only
 * in the sync it was sent at, and only if no CONFIG of a change came
 * since that sync's start (the resent pair may be older than that). */
static void config_resend(struct dlmd_cluster *cs)
{
	uint32_t self = cs->cs_d->d_nodeid;
	const struct cs_daemon *me = dm_find(cs, self, cs->cs_self_pid);

	if (!cs->cs_conf_heard || !cs->cs_conf_set || !me || !me->dm_known)
		return;
	for (unsigned int i = 0; i < cs->cs_ndm; i++)
		if (cs->cs_dm[i].dm_known && cs->cs_dm[i].dm_id < self)
			return;
	log_debug("daemon group: sync: the group's configuration sent again "
		  "(%u configured nodes, tie-breaker node %u)",
		  cs->cs_conf_nnodes, cs->cs_conf_tiebreak);
	config_send(cs, CM_CONFIG_SYNC, cs->cs_conf_nnodes,
		    cs->cs_conf_tiebreak, cs->cs_view);
}

static void kick_job(void *data)
{
	struct dlmd_cluster *cs = data;
	struct dlmd *d = cs->cs_d;
	bool again = true;

	cs->cs_kick_queued = false;
	out_flush(cs);
	if (cs->cs_nodelist_changed) {
		cs->cs_nodelist_changed = false;
		if (!cs->cs_cmap || read_nodelist(cs, cs->cs_cmap) == 0) {
			if (cs->cs_cmap)
				nodes_to_comms(cs);
			config_check(cs);
			cs->cs_comms_stale = true;
		} else {
			/* no CONFIG of a partial read: the old pair stays,
			 * the read is tried again (retry_timer) */
			cs->cs_nodelist_changed = true;
			dlmd_cluster_retry_later(d);
		}
	}
	comms_sweep(cs);
	/* a loser's release changes the list: start over after one */
	for (unsigned int pass = 0; again && pass < DLM_MAX_NODES; pass++) {
		again = false;
		for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next) {
			struct dlmd_cluster_ls *cl = dl->dl_cluster;

			if (!cl)
				continue;
			if (cl->cl_state == CL_STALE) {
				ls_drop_as_loser(cl);
				again = true;
				break;
			}
			ls_progress(cl);
		}
	}
}

static void kick(struct dlmd_cluster *cs)
{
	if (cs->cs_kick_queued)
		return;
	/* A timer due at once, not a job: libqb counts the jobs due when a
	 * loop turn starts, and one added while that turn dispatches (from
	 * a CPG or fencer callback) waits for the next wake-up of the poll,
	 * which an idle daemon may not have for a long while (45 ms between
	 * "node 3 is fenced" and the START it allowed, measured).  A due
	 * timer makes the poll return at once. */
	if (qb_loop_timer_add(cs->cs_d->d_loop, QB_LOOP_HIGH, 0, cs, kick_job,
			      &cs->cs_kick_timer) == 0)
		cs->cs_kick_queued = true;
}

static void retry_timer(void *data)
{
	struct dlmd_cluster *cs = data;

	cs->cs_retry_armed = false;
	kick(cs);
}

static void unreach_tick(struct dlmd_cluster *cs);

/* A message not taken for STALL_MS: every running lockspace is stalled
 * (its sender's later messages, whatever their lockspace, wait behind). */
static void held_tick(struct dlmd_cluster *cs, uint64_t now)
{
	uint64_t since = 0;
	uint32_t node = 0;
	bool stall = dlmd_held(cs->cs_d, &node, &since) && since &&
		     now - since >= STALL_MS;

	if (stall && !cs->cs_held_stall)
		log_err("stalled: a message from node %u has not been taken by "
			"the engine for %llu s (out of memory); nothing later "
			"from that node is taken before it", node,
			(unsigned long long)((now - since) / 1000));
	else if (!stall && cs->cs_held_stall)
		log_notice("no longer stalled: the message held since %llu s "
			   "ago was taken or dropped",
			   (unsigned long long)((now - cs->cs_held_since) / 1000));
	cs->cs_held_stall = stall;
	cs->cs_held_node = node;
	if (stall)
		cs->cs_held_since = since;
}

/* The stall watchdog: a running lockspace with operations waiting for a
 * remote reply that receives nothing at all for STALL_MS cannot make
 * progress (a reply every request gets at once from a live master was
 * lost, or the peer hangs).  It is then shown as "stalled", not
 * "running", and logged; it is "running" again when a message arrives or
 * nothing waits any more. */
static void watchdog_timer(void *data)
{
	struct dlmd_cluster *cs = data;
	struct dlmd *d = cs->cs_d;
	uint64_t now = dlmd_now_ms();

	cs->cs_wd_armed = false;
	if (cs->cs_syncing && !cs->cs_sync_logged &&
	    now - cs->cs_sync_since >= SYNC_LOG_MS) {
		char ids[64];

		cs->cs_sync_logged = true;
		fmt_unannounced(cs, ids, sizeof(ids));
		log_err("daemon group: no lockspace can change members: for %llu s "
			"we wait for the lockspaces of daemon(s) %s (another "
			"version of dlmd, which speaks no CPG protocol %u, or "
			"a process that is no dlmd: see status cpg_unverified?)",
			(unsigned long long)((now - cs->cs_sync_since) / 1000), ids,
			CM_VERSION);
	}
	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next) {
		struct dlmd_cluster_ls *cl = dl->dl_cluster;
		struct dlm_ls_stats st;

		if (!cl)
			continue;
		dlm_core_ls_stats(dl->dl_core, &st);
		if (cl->cl_state != CL_RUNNING || !st.ls_waiters ||
		    st.ls_msgs_received != cl->cl_wd_rx || !cl->cl_wd_since) {
			if (cl->cl_stalled)
				log_notice("lockspace %s: no longer stalled (%s)",
					   dl->dl_name, cl->cl_state != CL_RUNNING ?
					   "stopped" :
					   !st.ls_waiters ? "nothing waits" :
					   "a message arrived");
			cl->cl_stalled = false;
			cl->cl_wd_rx = st.ls_msgs_received;
			cl->cl_wd_since = now;
			continue;
		}
		cl->cl_wd_waiters = st.ls_waiters;
		if (!cl->cl_stalled && now - cl->cl_wd_since >= STALL_MS) {
			cl->cl_stalled = true;
			log_err("lockspace %s: stalled: %llu operation%s wait for a "
				"remote reply and nothing arrived for %llu s",
				dl->dl_name, (unsigned long long)st.ls_waiters,
				st.ls_waiters == 1 ? "" : "s",
				(unsigned long long)((now - cl->cl_wd_since) / 1000));
		}
	}
	held_tick(cs, now);
	unreach_tick(cs);
	if (qb_loop_timer_add(d->d_loop, QB_LOOP_LOW, STALL_TICK_MS * NS_PER_MS, cs,
			      watchdog_timer, &cs->cs_wd) == 0)
		cs->cs_wd_armed = true;
}

void dlmd_cluster_retry_later(struct dlmd *d)
{
	struct dlmd_cluster *cs = d->d_cluster;

	if (cs->cs_retry_armed)
		return;
	if (qb_loop_timer_add(d->d_loop, QB_LOOP_HIGH, MCAST_RETRY_MS * NS_PER_MS,
			      cs, retry_timer, &cs->cs_retry) == 0)
		cs->cs_retry_armed = true;
}

/* Drop node id's lowcomms state now (its daemon left: the next one
 * starts a new transport epoch). */
static void comms_reset(struct dlmd_cluster *cs, uint32_t id)
{
	const struct cs_node *nd = find_node(cs, id);
	const char *p[LC_MAX_ADDRS];

	id_remove(cs->cs_reset_later, &cs->cs_nreset_later, id);
	if (nd)
		dlmd_comms_node_reset(cs->cs_d, id, node_addr_ptrs(nd, p),
				      nd->n_naddrs);
}

/* A fencing finished: a daemon of the fenced node in the group now (a
 * dlmd restarted there) waits for our record of it to clear: send the
 * records that shrank. */
void dlmd_cluster_fencing_changed(struct dlmd *d)
{
	struct dlmd_cluster *cs = d->d_cluster;

	if (!cs)
		return;
	/* a node whose lowcomms state we kept (FORGIVING A SPLIT) is dead
	 * now, unless it is a member again (then its leave resets it) */
	for (unsigned int i = cs->cs_nreset_later; i-- > 0;) {
		uint32_t id = cs->cs_reset_later[i];

		if (dlmd_fence_is_done(d, id) &&
		    !id_in(cs->cs_dmembers, cs->cs_ndmembers, id))
			comms_reset(cs, id);
	}
	for (unsigned int b = 0; cs->cs_corosync && b < LS_HASH; b++) {
		for (struct cs_lsent *le = cs->cs_ls[b], *next; le; le = next) {
			uint32_t was[DLM_MAX_NODES];
			unsigned int nwas = le->le_nfailed;
			bool tell = false;

			next = le->le_next;
			if (!nwas || nwas > DLM_MAX_NODES)
				continue;
			memcpy(was, le->le_failed, nwas * sizeof(was[0]));
			if (!le_drop_fenced(cs, le))
				continue;
			for (unsigned int i = 0; i < nwas; i++)
				if (!id_in(le->le_failed, le->le_nfailed, was[i]) &&
				    id_in(cs->cs_dmembers, cs->cs_ndmembers, was[i]))
					tell = true;
			if (tell)
				send_failed(cs, le);
			le_tidy(cs, le);
		}
	}
	kick(cs);
}

void dlmd_cluster_recovery_done(struct dlmd *d, struct dlm_ls *ls, uint32_t event)
{
	struct dlmd_cluster *cs = d->d_cluster;

	if (cs && cs->cs_corosync) {
		/* by the table's hash: a mass recovery is no n^2 scan */
		struct cs_lsent *le = le_find(cs, dlm_core_ls_name(ls), false);

		if (le && le->le_cl && le->le_cl->cl_dl->dl_core == ls) {
			le->le_cl->cl_recovered = event;
			kick(cs);
		}
		return;
	}
	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next) {
		if (dl->dl_core != ls || !dl->dl_cluster)
			continue;
		dl->dl_cluster->cl_recovered = event;
		kick(d->d_cluster);
	}
}

/* The engine's recovery of 'event' failed here (out of memory): the
 * lockspace stays stopped and the other members wait at the step's
 * barrier; we restart it everywhere (RECOVERY RETRY). */
void dlmd_cluster_recovery_failed(struct dlmd *d, struct dlm_ls *ls,
				  uint32_t event, int error)
{
	struct dlmd_cluster *cs = d->d_cluster;
	const char *step = "?";

	(void)dlm_core_ls_recovery_error(ls, &step);
	for (struct dlmd_ls *dl = d->d_lockspaces; cs && dl; dl = dl->dl_next) {
		struct dlmd_cluster_ls *cl = dl->dl_cluster;

		if (dl->dl_core != ls || !cl)
			continue;
		if (cl->cl_state == CL_RECOVERING && cl->cl_last_event == event) {
			recovery_failed_here(cl, error, step ? step : "?");
			return;
		}
	}
	log_err("lockspace %s: recovery %u failed here in step %s: %s (not "
		"the recovery we run: ignored)", dlm_core_ls_name(ls), event,
		step ? step : "?", strerror(-error));
}

/* Every START is in and the daemon group is not syncing. */
static bool all_got(const struct dlmd_cluster_ls *cl)
{
	for (unsigned int i = 0; i < cl->cl_nmembers; i++)
		if (!cl->cl_got[i])
			return false;
	return cl->cl_nmembers > 0;
}

/* A START from 'from' for lockspace cl. */
static void receive_start(struct dlmd_cluster_ls *cl, uint32_t from,
			  const struct cm_start *st)
{
	int idx = member_index(cl, from);
	bool same;

	if (cl->cl_state == CL_JOINING || idx < 0)
		return;
	same = st->st_nmembers == cl->cl_nmembers &&
	       !memcmp(st->st_members, cl->cl_members, cl->cl_nmembers * 4);
	if (!same) {
		log_debug("lockspace %s: START from node %u answers an older "
			  "change; ignored", cl->cl_dl->dl_name, from);
		return;
	}
	if (cl->cl_got[idx] || !cl_deciding(cl))
		return;
	cl->cl_got[idx] = true;
	cl->cl_start_event[idx] = st->st_last_event;
	cl->cl_start_set[idx] = st->st_set;
	if (!all_got(cl) || cl->cl_d->d_cluster->cs_syncing)
		return;		/* a sync's end decides then */
	decide(cl);
	ls_progress(cl);
}

struct ls_left {
	uint32_t	id;
	uint32_t	reason;		/* CPG_REASON_* */
};

/*
 * A change of lockspace cl's members, derived from the daemon group's
 * stream (ONE GROUP FOR ALL LOCKSPACES): 'ids' (sorted) are its members
 * from here on; 'left' says who left and why.  Step 1 of the protocol.
 */
static void ls_change(struct dlmd_cluster_ls *cl, const uint32_t *ids,
		      unsigned int n, const struct ls_left *left,
		      unsigned int nleft, const char *why)
{
	struct dlmd *d = cl->cl_d;
	struct dlmd_ls *dl = cl->cl_dl;
	char m[IDS_TEXT_LEN], j[IDS_TEXT_LEN],
	     l[IDS_TEXT_LEN];
	uint32_t a[DLM_MAX_NODES], b[DLM_MAX_NODES];
	unsigned int na = 0, nb = 0, ndaemon_down = 0;

	for (unsigned int i = 0; i < n; i++)
		if (!id_in(cl->cl_members, cl->cl_nmembers, ids[i]))
			a[na++] = ids[i];
	for (unsigned int i = 0; i < nleft; i++)
		b[nb++] = left[i].id;
	if (n)
		memcpy(cl->cl_members, ids, n * sizeof(ids[0]));
	cl->cl_nmembers = n;
	cl->cl_change_seq++;
	cl->cl_change_ring = d->d_cluster->cs_ring_seq;
	cl->cl_nchange_down = 0;
	for (unsigned int i = 0; i < nleft; i++) {
		uint32_t id = left[i].id;

		if (id == d->d_nodeid)
			continue;
		if (left[i].reason == CPG_REASON_NODEDOWN) {
			/* the daemon group's report of it (just before)
			 * says from which side it was seen */
			cl->cl_change_down[cl->cl_nchange_down++] = id;
		} else if (left[i].reason == CPG_REASON_PROCDOWN) {
			/* its dlmd died without leaving: its clients may
			 * still run inside their locks */
			ndaemon_down++;
		} else {
			continue;	/* a clean leave: nothing to fence */
		}
		if (!id_in(cl->cl_failed, cl->cl_nfailed, id) &&
		    cl->cl_nfailed < DLM_MAX_NODES)
			cl->cl_failed[cl->cl_nfailed++] = id;
	}
	/* 1. stop at once, forget the previous change's STARTs */
	dlm_core_ls_stop(dl->dl_core);
	dlmd_metrics_ls_stopped(&dl->dl_metrics);
	if (cl->cl_state != CL_STALE)
		set_state(cl, CL_STOPPED, "a membership change");
	restart_disarm(cl);
	cl->cl_recovered = 0;
	memset(cl->cl_got, 0, sizeof(cl->cl_got));
	fmt_ids(m, sizeof(m), ids, n);
	fmt_ids(j, sizeof(j), a, na);
	fmt_ids(l, sizeof(l), b, nb);
	log_notice("lockspace %s: change %u: members [%s] joined [%s] left [%s]%s%s; "
		   "stopped", dl->dl_name, cl->cl_change_seq, m, j, l,
		   cl->cl_nchange_down ? " (node failure)" :
		   ndaemon_down ? " (dlmd failure: to be fenced)" : "", why);
	kick(d->d_cluster);
}

/* Our own JOIN of cl's lockspace is delivered (and we are not syncing):
 * we are a member from here on. */
static void ls_our_join(struct dlmd_cluster *cs, struct cs_lsent *le,
			const char *why)
{
	struct dlmd_cluster_ls *cl = le->le_cl;

	/* a failure recorded against the lockspace before we joined it is
	 * fenced before we take part in its recovery */
	le_tidy(cs, le);
	for (unsigned int i = 0; i < le->le_nfailed; i++)
		if (!id_in(cl->cl_failed, cl->cl_nfailed, le->le_failed[i]) &&
		    cl->cl_nfailed < DLM_MAX_NODES)
			cl->cl_failed[cl->cl_nfailed++] = le->le_failed[i];
	ls_change(cl, le->le_members, le->le_nmembers, NULL, 0, why);
}

/* Daemon 'id' joins lockspace 'name' at this point of the stream; 'seq'
 * is the JOIN's h_seq (0: no JOIN message). */
static void table_join(struct dlmd_cluster *cs, uint32_t id, const char *name,
		       uint32_t seq)
{
	struct cs_lsent *le = le_find(cs, name, true);
	struct dlmd_cluster_ls *cl;

	if (!le)
		return;
	if (le_has(le, id)) {
		log_warn("lockspace %s: node %u joins it twice; ignored", name, id);
		return;
	}
	if (!le_add(cs, le, id))
		return;
	cl = le->le_cl;
	if (!cl)
		return;
	if (id == cs->cs_d->d_nodeid) {
		/* Our JOIN of an instance released since (its LEAVE comes
		 * next) is not the JOIN of the one we have now. */
		if (cl->cl_join_delivered || seq != cl->cl_join_seq) {
			log_debug("lockspace %s: our JOIN %u is of an instance "
				  "released since (ours is JOIN %u)", name, seq,
				  cl->cl_join_seq);
			return;
		}
		cl->cl_join_delivered = true;
		if (cl->cl_state == CL_JOINING && !cs->cs_syncing)
			ls_our_join(cs, le, "");
		/* while syncing: at its end */
	} else if (cl->cl_state != CL_JOINING) {
		ls_change(cl, le->le_members, le->le_nmembers, NULL, 0, "");
	}
}

/* Daemon 'id' leaves lockspace 'name' cleanly at this point. */
static void table_leave(struct dlmd_cluster *cs, uint32_t id, const char *name)
{
	struct cs_lsent *le = le_find(cs, name, false);
	struct ls_left lf = { id, CPG_REASON_LEAVE };
	struct dlmd_cluster_ls *cl;

	if (!le_has(le, id)) {
		log_debug("lockspace %s: node %u leaves it but is no member; "
			  "ignored", name, id);
		return;
	}
	le_del(cs, le, id);
	cl = le->le_cl;
	/* our own LEAVE: that instance is gone already (a newer one of
	 * ours, if any, has its JOIN still to come) */
	if (cl && cl->cl_state != CL_JOINING && id != cs->cs_d->d_nodeid)
		ls_change(cl, le->le_members, le->le_nmembers, &lf, 1, "");
	le_tidy(cs, le);
}

/* Our own daemon's START for lockspace cl, or another's. */
static void deliver_start(struct dlmd_cluster *cs, uint32_t from,
			  const unsigned char *body, size_t len)
{
	static struct cm_start st;
	struct cs_lsent *le;
	const char *why = NULL;

	if (dlmd_cm_start_decode(body, len, &st, &why)) {
		log_warn("daemon group: malformed START from node %u dropped: %s",
			 from, why);
		return;
	}
	le = le_find(cs, st.st_ls.n_name, false);
	if (le && le->le_cl)
		receive_start(le->le_cl, from, &st);
}

/* LS_RESTART from 'from' (RECOVERY RETRY). */
static void deliver_restart(struct dlmd_cluster *cs, uint32_t from,
			    const unsigned char *body, size_t len)
{
	struct cm_restart rs;
	struct cs_lsent *le;
	struct dlmd_cluster_ls *cl;
	const char *why = NULL;
	char reason[64];

	if (dlmd_cm_restart_decode(body, len, &rs, &why)) {
		log_warn("daemon group: malformed LS_RESTART from node %u dropped: "
			 "%s", from, why);
		return;
	}
	le = le_find(cs, rs.rs_ls.n_name, false);
	cl = le ? le->le_cl : NULL;
	if (!cl || member_index(cl, from) < 0)
		return;
	if (cl->cl_last_event != rs.rs_event ||
	    (cl->cl_state != CL_DECIDED && cl->cl_state != CL_RECOVERING &&
	     cl->cl_state != CL_FAILED)) {
		log_info("lockspace %s: LS_RESTART of event %u from node %u "
			 "ignored (we are %s at event %u)", cl->cl_dl->dl_name,
			 rs.rs_event, from, cl_state_names[cl->cl_state],
			 cl->cl_last_event);
		return;
	}
	restart_disarm(cl);
	snprintf(reason, sizeof(reason), " (restart: recovery %u failed on "
		 "node %u)", rs.rs_event, from);
	ls_change(cl, le->le_members, le->le_nmembers, NULL, 0, reason);
}

/* ---- FORGIVING A SPLIT (the essay above) ------------------------- */

/* Records of one lockspace in one sync, at most (failures listed): a
 * bound on what a sync keeps; past it nothing is forgiven in the sync. */
#define CS_FEV_MAX	(8 * DLM_MAX_NODES)

/* A record of this sync, or part of it, cannot be kept: nothing is
 * forgiven at its end (forgive_split).  Said at once, at err, the
 * first time in a sync, with what was lost; never silent. */
static void ev_lost(struct dlmd_cluster *cs, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void ev_lost(struct dlmd_cluster *cs, const char *fmt, ...)
{
	va_list ap;

	if (cs->cs_ev_lost)
		return;
	cs->cs_ev_lost = true;
	va_start(ap, fmt);
	vsnprintf(cs->cs_ev_lost_why, sizeof(cs->cs_ev_lost_why), fmt, ap);
	va_end(ap);
	log_err("daemon group: %s: no failure will be forgiven at this "
		"sync's end (FORGIVING A SPLIT)", cs->cs_ev_lost_why);
}

/* Keep what a FAILED record delivered while syncing says (ours too):
 * its sender's last event of le, and each failure it lists. */
static void ev_record(struct dlmd_cluster *cs, struct cs_lsent *le,
		      uint32_t from, const struct cm_failed *fl)
{
	unsigned int i;

	if (!cs->cs_syncing)
		return;
	for (i = 0; i < le->le_nrep; i++)
		if (le->le_rep[i].rp_from == from)
			break;
	if (i < le->le_nrep) {
		if (le->le_rep[i].rp_event != fl->fl_event)
			le->le_rep[i].rp_conflict = true;
	} else {
		if (le->le_nrep == le->le_crep) {
			unsigned int nc = le->le_crep ? 2 * le->le_crep : 4;
			struct cs_rep *p = nc <= 2 * DLM_MAX_NODES ?
				realloc(le->le_rep, nc * sizeof(*p)) : NULL;

			if (!p) {
				ev_lost(cs, "lockspace %s: %s for the record of "
					"node %u (%u daemons sent one in this "
					"sync)", le->le_name, nc <= 2 * DLM_MAX_NODES ?
					"no memory" : "no room", from, le->le_nrep);
				return;
			}
			le->le_rep = p;
			le->le_crep = nc;
		}
		le->le_rep[le->le_nrep++] = (struct cs_rep){ from, fl->fl_event,
							     false };
	}
	if (!fl->fl_count)
		return;
	if (le->le_nfev + fl->fl_count > le->le_cfev) {
		unsigned int nc = le->le_cfev ? le->le_cfev : 8;
		struct cs_fev *p;

		while (nc < le->le_nfev + fl->fl_count)
			nc *= 2;
		p = nc <= CS_FEV_MAX ? realloc(le->le_fev, nc * sizeof(*p)) :
				       NULL;
		if (!p) {
			if (nc <= CS_FEV_MAX)
				ev_lost(cs, "lockspace %s: no memory for node "
					"%u's record of %u failures", le->le_name,
					from, fl->fl_count);
			else
				ev_lost(cs, "lockspace %s: more than %u failures "
					"recorded in this sync (%u kept, node %u's "
					"record of %u more not)", le->le_name,
					CS_FEV_MAX, le->le_nfev, from,
					fl->fl_count);
			return;
		}
		le->le_fev = p;
		le->le_cfev = nc;
	}
	for (uint32_t k = 0; k < fl->fl_count; k++)
		le->le_fev[le->le_nfev++] = (struct cs_fev){
			.fv_from = from, .fv_id = fl->fl_ids[k],
			.fv_pid = fl->fl_pids[k], .fv_flags = fl->fl_flags[k],
			.fv_inc = fl->fl_incs[k] };
}

/* Forget the records of the sync (one starts, or ended). */
static void ev_clear(struct dlmd_cluster *cs)
{
	for (unsigned int b = 0; b < LS_HASH; b++) {
		for (struct cs_lsent *le = cs->cs_ls[b], *next; le; le = next) {
			next = le->le_next;
			if (!le->le_nrep && !le->le_nfev)
				continue;
			free(le->le_rep);
			free(le->le_fev);
			le->le_rep = NULL;
			le->le_fev = NULL;
			le->le_nrep = le->le_crep = 0;
			le->le_nfev = le->le_cfev = 0;
			le_tidy(cs, le);
		}
	}
	cs->cs_nsync_fencing = 0;
	cs->cs_ev_lost = false;
	cs->cs_ev_lost_why[0] = '\0';
}

static const struct cs_rep *ev_rep(const struct cs_lsent *le, uint32_t from)
{
	for (unsigned int i = 0; i < le->le_nrep; i++)
		if (le->le_rep[i].rp_from == from)
			return &le->le_rep[i];
	return NULL;
}

/* NULL if this listed failure may be forgiven as far as le goes, else
 * why not: a failure other than a minority's node-down, a fencing
 * begun, X no member of le now, or a member of le whose event differs
 * from X's (or that sent no record of le in this sync). */
static const char *ev_blocks(const struct cs_lsent *le, const struct cs_fev *f)
{
	const struct cs_rep *x, *r;

	if (f->fv_flags & CM_FAILED_DAEMON)
		return "its dlmd died (proc-down)";
	if (f->fv_flags & CM_FAILED_FENCING)
		return "a fencing claim or result for it was seen";
	if (f->fv_flags & CM_FAILED_FIRM)
		return "its failure was seen from a majority or removed it, or "
		       "it restarted";
	if (!f->fv_pid || !f->fv_inc)
		return "the process that failed is not known";
	/* no member now: the process (forgive_split checks it is the one
	 * that failed) left le on its side (its LEAVE, or dropped as a
	 * loser), so it holds none of le's locks: nothing to fence it for
	 * here, whatever the others' events (before, it stayed failed and
	 * le waited for a fencing that never came: test_split3_left_apart) */
	if (!le_has(le, f->fv_id))
		return NULL;
	x = ev_rep(le, f->fv_id);
	if (!x || x->rp_conflict)
		return "it sent no record of a lockspace it failed out of";
	for (unsigned int i = 0; i < le->le_nmembers; i++) {
		r = ev_rep(le, le->le_members[i]);
		if (!r || r->rp_conflict)
			return "a member of one of its lockspaces sent no "
			       "record of its last event";
		if (r->rp_event != x->rp_event)
			return "a member of one of its lockspaces has another "
			       "last event (it recovered without it)";
	}
	return NULL;
}

/* Drop X's failure everywhere here (every member does so at this point
 * of the stream).  'why' says what and why, for fence.c's log. */
static void forgive_one(struct dlmd_cluster *cs, uint32_t x, const char *why)
{
	struct dlmd *d = cs->cs_d;
	unsigned int n = 0, nclaims = 0;

	for (unsigned int b = 0; b < LS_HASH; b++) {
		for (struct cs_lsent *le = cs->cs_ls[b], *next; le; le = next) {
			next = le->le_next;
			if (ids_del(le->le_failed, &le->le_nfailed, x)) {
				ids_del(le->le_dfailed, &le->le_ndfailed, x);
				n++;
			}
			while (x == d->d_nodeid && le->le_nclaim &&
			       claim_del(cs, le, le->le_claim[0]))
				nclaims++;
		}
	}
	/* its lowcomms state, kept since its leave, is the live one's */
	id_remove(cs->cs_reset_later, &cs->cs_nreset_later, x);
	if (x == d->d_nodeid) {
		d->d_nfence_forgiven++;
		log_info("daemon group: our own failure, which the others "
			 "recorded at a split (%u record%s of a lockspace), is "
			 "forgiven: %s", nclaims, nclaims == 1 ? "" : "s", why);
	} else {
		dlmd_fence_forgive(d, x, why);
		log_info("daemon group: node %u's failure dropped from %u "
			 "lockspace%s here", x, n, n == 1 ? "" : "s");
	}
}

/* forgive_split's summary: append "node N's" ("our own" for ours) for
 * every candidate whose verdict is 'no' (NULL: forgiven), then 'tail'. */
static void sum_put(const struct dlmd_cluster *cs, char *buf, size_t size,
		    const uint32_t *ids, const char *const *nos, unsigned int n,
		    const char *no, const char *tail)
{
	size_t l = strlen(buf);
	bool any = false;

	for (unsigned int k = 0; k < n; k++) {
		if (nos[k] != no)
			continue;
		l = strlen(buf);
		if (ids[k] == cs->cs_d->d_nodeid)
			snprintf(buf + l, size - l, "%sour own", any ? ", " : "");
		else
			snprintf(buf + l, size - l, "%snode %u's", any ? ", " : "",
				 ids[k]);
		any = true;
	}
	l = strlen(buf);
	if (any)
		snprintf(buf + l, size - l, "%s", tail);
}

/* forgive_split refuses the whole sync: said at err, with the failures
 * that stay (to be fenced: one back in the view waits for an operator,
 * as before FORGIVING A SPLIT). */
static void ev_refused(const struct dlmd_cluster *cs, const char *why)
{
	uint32_t ids[DLM_MAX_NODES];
	unsigned int n = 0;
	bool self = false;
	char list[200];

	for (unsigned int b = 0; b < LS_HASH; b++) {
		for (const struct cs_lsent *le = cs->cs_ls[b]; le; le = le->le_next) {
			for (unsigned int i = 0; i < le->le_nfailed; i++)
				if (n < DLM_MAX_NODES &&
				    !id_in(ids, n, le->le_failed[i]))
					ids[n++] = le->le_failed[i];
			if (le->le_nclaim)
				self = true;
		}
	}
	fmt_ids(list, sizeof(list), ids, n);
	log_err("daemon group: no failure is forgiven at this sync's end "
		"(FORGIVING A SPLIT): %s; the failures recorded here (nodes "
		"[%s]%s) stay to be fenced, and one whose node is back in the "
		"view waits for an operator (stop corosync on that node, or "
		"reboot it)", why, list,
		self ? ", and ours in the others' records" : "");
}

/*
 * At the end of a sync, on every member alike: the node-down failures
 * that every FAILED record of the sync shows nobody acted on, of a
 * process that is back (FORGIVING A SPLIT in the essay above).  Inputs:
 * the records of the sync (ours too), the claims and results delivered
 * in it, the table and the members: the same on every member.
 */
static void forgive_split(struct dlmd_cluster *cs)
{
	struct cand {
		uint32_t	id, pid;
		uint64_t	inc;
		unsigned int	nls;
		const struct cs_lsent *last;
		const char	*no;		/* why not, or NULL */
	} c[DLM_MAX_NODES];
	unsigned int nc = 0;
	bool full = false;

	if (cs->cs_ev_lost) {
		ev_refused(cs, cs->cs_ev_lost_why);
		return;
	}
	for (unsigned int b = 0; b < LS_HASH; b++) {
		for (struct cs_lsent *le = cs->cs_ls[b]; le; le = le->le_next) {
			for (unsigned int i = 0; i < le->le_nfev; i++) {
				const struct cs_fev *f = &le->le_fev[i];
				unsigned int k;

				for (k = 0; k < nc; k++)
					if (c[k].id == f->fv_id)
						break;
				if (k == nc) {
					if (nc == DLM_MAX_NODES) {
						full = true;
						continue;
					}
					c[nc++] = (struct cand){
						f->fv_id, f->fv_pid, f->fv_inc,
						0, NULL, NULL };
				}
				if (c[k].last != le) {
					c[k].last = le;
					c[k].nls++;
				}
				if (c[k].no)
					continue;
				if (f->fv_pid != c[k].pid || f->fv_inc != c[k].inc)
					c[k].no = "the records name different "
						  "processes";
				else
					c[k].no = ev_blocks(le, f);
			}
		}
	}
	if (full) {		/* more failed nodes than any lockspace has */
		char why[80];

		snprintf(why, sizeof(why), "the records name more than %u "
			 "failed nodes", DLM_MAX_NODES);
		ev_refused(cs, why);
		return;
	}
	for (unsigned int k = 0; k < nc; k++) {
		const struct cs_daemon *dm = dm_find(cs, c[k].id, c[k].pid);
		char why[320];

		if (!c[k].no && (!dm || !dm->dm_known || dm->dm_inc != c[k].inc))
			c[k].no = "it is not a member now as the process that "
				  "failed (it restarted, or is gone)";
		if (!c[k].no && id_in(cs->cs_sync_fencing, cs->cs_nsync_fencing,
				      c[k].id))
			c[k].no = "a fencing claim or result for it came in this "
				  "sync";
		if (c[k].no) {
			log_info("daemon group: node %u's failure is not forgiven "
				 "(it stays to be fenced): %s", c[k].id, c[k].no);
			continue;
		}
		snprintf(why, sizeof(why), "node %u (CPG pid %u) failed node-down, "
			 "seen from minority sides only, and merged back as the "
			 "same process; no member saw a fencing claim or result "
			 "for it; in %s %u lockspace%s every member reports the "
			 "same last event, so none recovered without it and its "
			 "locks are its own", c[k].id, c[k].pid,
			 c[k].nls == 1 ? "its" : "each of its", c[k].nls,
			 c[k].nls == 1 ? "" : "s");
		forgive_one(cs, c[k].id, why);
	}
	if (nc) {
		uint32_t ids[DLM_MAX_NODES];
		const char *nos[DLM_MAX_NODES];
		char line[400] = "";
		bool forgave = false;

		for (unsigned int k = 0; k < nc; k++) {
			ids[k] = c[k].id;
			nos[k] = c[k].no;
			forgave |= !nos[k];
		}
		/* once per sync, at notice: forgiven, then kept by reason */
		sum_put(cs, line, sizeof(line), ids, nos, nc, NULL,
			" forgiven (merged back as the same process; nobody "
			"acted on the failure)");
		for (unsigned int k = 0; k < nc; k++) {
			bool first = true;

			for (unsigned int e = 0; e < k; e++)
				if (nos[e] == nos[k])
					first = false;
			if (!nos[k] || !first)
				continue;
			if (line[0])
				snprintf(line + strlen(line),
					 sizeof(line) - strlen(line), "; ");
			sum_put(cs, line, sizeof(line), ids, nos, nc, nos[k],
				" kept to be fenced (");
			snprintf(line + strlen(line), sizeof(line) - strlen(line),
				 "%s)", nos[k]);
		}
		/* at warning if it forgave any: nodes NOT fenced (fence.c
		 * says each at info, with why) */
		if (forgave)
			log_warn("daemon group: unfenced failures at the sync's "
				 "end: %s", line);
		else
			log_notice("daemon group: unfenced failures at the sync's "
				   "end: %s", line);
	}
}

static void apart_decide(struct dlmd_cluster *cs);
static void apart_vouched(struct dlmd_cluster *cs, uint32_t from, uint32_t view,
			  const struct cm_vouch *vouch, uint32_t n);

/*
 * FENCED ALIVE, the returning side.  At the end of a sync, a record of
 * one of our lockspaces (FORGIVING A SPLIT: every daemon sends one of each
 * lockspace it holds) whose sender reports a newer last event than ours
 * says that a side recovered it without us, which it does only once our
 * node is fenced there (or acked: 'dlmctl fence_ack' of a live node):
 * this process was counted dead while it ran, and locks of ours may be
 * granted to others now.  The stateful-merge rule (decide: an older
 * event loses) would drop such a lockspace only at a START, which we
 * never send while we wait for the others' fencing (their failures, seen
 * from our minority side, are not forgiven: the events differ): the
 * instance stayed, stopped, its clients believing they held its locks.
 * Now every lockspace of ours that ran (its last event not 0) is dropped
 * at once, a loser's forced release (its clients lose their locks and
 * learn it at their next call), logged at crit and counted (fence_lied);
 * the others fence us again and remove us (fenced_alive).  A lockspace
 * created afterwards joins afresh, with no state to conflict.  Members
 * that stayed connected report equal events, so only a side that was
 * cut off while the others recovered without it comes here.  Only a
 * sender that shared our instance counts (a member of our last change
 * or of our last decided event): events of different instances of a
 * lockspace are not comparable.  A lockspace that ran only on us, which
 * another node created afresh while we were apart, carries there an
 * event of its own, higher or lower; taken for proof, it made a healthy
 * node with a fresh instance of a lower event "counted dead", dropping
 * every lockspace and its clients' locks (test-cpg-proto,
 * test_rev_fence_lied_fresh_ls).  A returning process whose lockspaces
 * no survivor shared does not learn it here: the survivors' side
 * (fenced_alive: crit, counted, fenced again, removed) is the remedy.
 */
static void declared_dead(struct dlmd_cluster *cs)
{
	struct dlmd *d = cs->cs_d;
	const struct cs_rep *newer = NULL;
	const char *ls = NULL;
	uint32_t ours = 0;

	for (struct dlmd_ls *dl = d->d_lockspaces; dl && !newer; dl = dl->dl_next) {
		struct dlmd_cluster_ls *cl = dl->dl_cluster;
		const struct cs_lsent *le;

		if (!cl || !cl->cl_last_event || cl->cl_state == CL_JOINING ||
		    cl->cl_state == CL_STALE)
			continue;
		le = le_find(cs, dl->dl_name, false);
		if (!le || le->le_cl != cl)
			continue;
		for (unsigned int i = 0; i < le->le_nrep; i++) {
			const struct cs_rep *r = &le->le_rep[i];

			if (r->rp_from != d->d_nodeid && !r->rp_conflict &&
			    r->rp_event > cl->cl_last_event &&
			    (id_in(cl->cl_members, cl->cl_nmembers, r->rp_from) ||
			     id_in(cl->cl_prev, cl->cl_nprev, r->rp_from))) {
				newer = r;
				ls = dl->dl_name;
				ours = cl->cl_last_event;
				break;
			}
		}
	}
	if (!newer)
		return;
	d->d_nfence_lied++;
	log_crit("this dlmd was counted dead while it ran: node %u's record of "
		 "lockspace %s carries event %u, ours is %u: a side recovered it "
		 "without us, which it does only once this node is fenced (a "
		 "fence agent that exits 0 without fencing, or a fence_ack of "
		 "this live node); our clients' locks may be held by others now: "
		 "every lockspace we ran is dropped (their clients lose their "
		 "locks), and the others fence this node again", newer->rp_from,
		 ls, newer->rp_event, ours);
	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next) {
		struct dlmd_cluster_ls *cl = dl->dl_cluster;

		if (cl && cl->cl_last_event && cl->cl_state != CL_JOINING)
			set_state(cl, CL_STALE, "this dlmd was counted dead "
				  "(FENCED ALIVE)");
	}
	kick(cs);
}

/* The end of a sync: every member's lockspaces are known. */
static void sync_end(struct dlmd_cluster *cs)
{
	struct dlmd *d = cs->cs_d;

	cs->cs_syncing = false;
	log_info("daemon group: every daemon's lockspaces are known (%u "
		 "lockspace%s in the cluster)", cs->cs_nls,
		 cs->cs_nls == 1 ? "" : "s");
	apart_decide(cs);	/* RESTARTED WHILE APART, undecided */
	forgive_split(cs);
	declared_dead(cs);
	ev_clear(cs);
	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next) {
		struct dlmd_cluster_ls *cl = dl->dl_cluster;
		struct cs_lsent *le;
		bool differs, unknown = false;

		if (!cl)
			continue;
		le = le_find(cs, dl->dl_name, false);
		if (!le || le->le_cl != cl)
			continue;
		if (cl->cl_state == CL_JOINING) {
			if (cl->cl_join_delivered)
				ls_our_join(cs, le, " (after the daemons' sync)");
			continue;
		}
		differs = le->le_nmembers != cl->cl_nmembers ||
			  memcmp(le->le_members, cl->cl_members,
				 le->le_nmembers * sizeof(uint32_t));
		for (unsigned int i = 0; i < le->le_nmembers; i++)
			if (id_in(cs->cs_sync_j, cs->cs_nsync_j, le->le_members[i]))
				unknown = true;
		if (differs || unknown) {
			struct ls_left lf[DLM_MAX_NODES];
			unsigned int nl = 0;

			for (unsigned int i = 0; i < cl->cl_nmembers; i++)
				if (!le_has(le, cl->cl_members[i]))
					lf[nl++] = (struct ls_left){ cl->cl_members[i],
								     CPG_REASON_LEAVE };
			ls_change(cl, le->le_members, le->le_nmembers, lf, nl,
				  " (after the daemons' sync)");
		} else if (cl_deciding(cl) && all_got(cl)) {
			decide(cl);
		}
	}
	cs->cs_nsync_j = 0;
	cs->cs_nunseen = 0;
	cs->cs_synced = true;
	dlmd_fence_kick(d);	/* claims wait for the end of a sync */
	kick(cs);
}

/* SEALED MESSAGES: a process we saw join that has sent nothing that
 * verifies.  It starts no sync, none waits for it, its leave is none
 * of ours; its first sealed message is its join (daemon_deliver). */
static bool pending(const struct cs_daemon *dm)
{
	return dm->dm_witnessed && !dm->dm_inc;
}

/* SEALED MESSAGES: the node ids that count as the daemon group's
 * (majority, UNREACHABLE PEERS, fencing turns): those of a process
 * that has sealed a message (we verified it, or a dlmd vouched for
 * it), or that we know (ourselves).  A stranger is not one of them. */
static void dmembers_update(struct dlmd_cluster *cs)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < cs->cs_ndm; i++) {
		const struct cs_daemon *dm = &cs->cs_dm[i];

		if ((dm->dm_inc || dm->dm_known) &&
		    !id_in(cs->cs_dmembers, n, dm->dm_id))
			cs->cs_dmembers[n++] = dm->dm_id;
	}
	cs->cs_ndmembers = n;
}

/* ONE DLMD PER NODE ID: is dm a process of our node id that we could
 * not tell from a dlmd when we joined (dup_node_id)? */
static bool dup_suspect(const struct dlmd_cluster *cs,
			const struct cs_daemon *dm)
{
	return dm && dm->dm_id == cs->cs_d->d_nodeid &&
	       id_in(cs->cs_dup_pids, cs->cs_ndup, dm->dm_pid);
}

/* ONE DLMD PER NODE ID: that process is a dlmd (why): we stop at once,
 * sending nothing more. */
static void dup_found(struct dlmd_cluster *cs, uint32_t pid, const char *why)
{
	if (cs->cs_dup_stop)
		return;
	log_err("daemon group: node %u already has a dlmd (CPG pid %u: %s) in "
		"the daemon group: two dlmds with one node id (a second "
		"dlm.conf on this host?); this one (CPG pid %u) stops",
		cs->cs_d->d_nodeid, pid, why, cs->cs_self_pid);
	cs->cs_dup_stop = true;
	cs->cs_d->d_exit_code = 1;
	qb_loop_stop(cs->cs_d->d_loop);
}

/*
 * ANOTHER VERSION.  A message whose seal verifies (its sender holds the
 * cluster key: a dlmd) but whose CPG protocol is not ours is dropped,
 * and no lockspace changes members while its sender is in the group
 * (daemon_deliver).  A dlmd that meets one before its first sync ended
 * (a rolling upgrade: the first node upgraded joining the old ones, or
 * an old one joining upgraded ones) runs nothing yet: it stops, naming
 * both versions, rather than stall every lockspace change of the
 * cluster until the others' watchdog finds it silent, removes its node
 * and fences it (measured with a version-3 dlmd: 20 s, then fenced,
 * either way round; tests/test-cluster-upgrade.sh).  One that ran
 * before keeps running; the newcomer stops if it is of this version or
 * later.  Of two that have not finished their first sync, the one that
 * joined later in CPG's order stops if it knows to: one we saw join
 * (reason join) after our own first confchg (dm_later), of a version
 * that has this rule (CM_VERSION_SELF_STOP or later), stops itself,
 * and we stay, our first sync waiting until it is gone (before, we
 * stopped too: a dlmd that joined first cannot end its sync while the
 * other is in the group).  One of an older version (4 and before) has
 * no such rule and never stops; we still stay and wait when
 * peer_unreachable_secs is above 0: the dlmds that ran before remove
 * its node when it has not announced for that long (below) and fence
 * it, and then our first sync ends.  Stopping at once instead (as for
 * a while we did) made a new dlmd beside an old later joiner exit 1,
 * and with Restart=on-failure loop, where waiting at most
 * peer_unreachable_secs then syncing was enough.  Only with
 * peer_unreachable_secs 0 (nobody removes it: we would wait for ever)
 * do we stop, though we joined first, in one err line naming both
 * versions.  What the old one does meanwhile, which cannot be changed: its
 * own first sync waits for every member's ANNOUNCE, and it refuses
 * ours (another version) as we refuse its; so while any dlmd of this
 * version is in the group its sync never ends, it sends no START and
 * decides no lockspace, its engine runs none, and it grants nothing,
 * to anyone (its clients' create requests wait).  We ran nothing
 * either (our first sync never ended), so when we are gone there is
 * nothing of ours its grants could conflict with; the dlmds of ours
 * that ran before stay (the joiner rule above does not apply to them)
 * and hold their lockspace changes until it leaves or is removed
 * (UNREACHABLE PEERS: its ANNOUNCE never comes).  An unverified header
 * of another version (version 2 needs no key) stops nobody: any
 * process in the group could send one.
 *
 * Why an old dlmd among ours is still waited for, removed and fenced,
 * rather than left out of every lockspace (never a member, never waited
 * for: nothing stalled, nothing fenced).  Left out, it would be safe
 * only while it grants nothing, and that holds only while a dlmd of
 * ours that sealed a message is in the group: it waits for that one's
 * ANNOUNCE, refuses it, and its sync never ends.  When the last of ours
 * leaves its view uncleanly (every dlmd of ours dies, proc-down, while
 * its nodes and their clients live; or a partition leaves it on a
 * quorate side alone, two_node), its sync ends: it never learned which
 * lockspaces ours were in, so it records no failure in any of them (a
 * node-down it hands to fencing, a proc-down not even that), no
 * lockspace of it waits for their fencing, and it runs lockspace L
 * alone, granting what their clients may still hold in L.  It cannot
 * be changed to act otherwise.  Left out without a bound, that window
 * would be the rest of its life; waited for, it is
 * peer_unreachable_secs (20 s by default), after which its node is
 * removed and fenced.  Its fencing is not what makes it safe (it
 * granted nothing, above); it comes with the removal (a node-down).
 * The stall of lockspace changes in those seconds is the price
 * (running lockspaces keep running meanwhile).  Not waiting for it but
 * still removing it at the bound would end even that stall; it needs a
 * timer of its own (sync_wait_ms sees only a sync that waits), and is
 * not done.
 */
static void version_stop(struct dlmd_cluster *cs, uint32_t nodeid,
			 uint32_t pid, unsigned int version)
{
	struct cs_daemon *dm = dm_find(cs, nodeid, pid);

	if (cs->cs_dup_stop || cs->cs_synced)
		return;
	if (dm && dm->dm_later && version < CM_VERSION_SELF_STOP &&
	    cs->cs_d->d_cfg.cf_peer_unreachable_secs == 0) {
		log_err("daemon group: node %u (pid %u) joined after us with CPG "
			"protocol version %u, older than ours (%u): it has no "
			"rule to stop itself, and with peer_unreachable_secs 0 "
			"nobody removes it, so our first sync could never end; "
			"this dlmd, which runs no lockspace yet, stops instead; "
			"run one version on every node (stop every dlmd to "
			"change it)", nodeid, pid, version, CM_VERSION);
		cs->cs_dup_stop = true;
		cs->cs_d->d_exit_code = 1;
		qb_loop_stop(cs->cs_d->d_loop);
		return;
	}
	if (dm && dm->dm_later) {
		/* it joined after us (CPG's order of joins): it is the one
		 * that joined last.  Of a version that stops by this same
		 * rule it stops itself; an older one does not, but the
		 * dlmds that ran before remove its node once it has not
		 * announced for peer_unreachable_secs (not 0 here).  Until
		 * it is gone, our first sync waits for it */
		if (!dm->dm_later_said) {
			dm->dm_later_said = true;
			if (version < CM_VERSION_SELF_STOP)
				log_err("daemon group: node %u (pid %u), of CPG "
					"protocol version %u (ours %u), joined "
					"after us: it has no rule to stop itself; "
					"we stay (our sync waits until it leaves "
					"or is removed, peer_unreachable_secs %u)",
					nodeid, pid, version, CM_VERSION,
					cs->cs_d->d_cfg.cf_peer_unreachable_secs);
			else
				log_err("daemon group: node %u (pid %u), of CPG "
					"protocol version %u, joined after us: it "
					"stops itself; we stay (our sync waits "
					"until it leaves)", nodeid, pid, version);
		}
		return;
	}
	log_err("daemon group: node %u (pid %u) runs dlmd with CPG protocol "
		"version %u, we speak %u: mixing versions is refused, and this "
		"dlmd, which joined last and runs no lockspace yet, stops; run "
		"one version on every node (stop every dlmd to change it)",
		nodeid, pid, version, CM_VERSION);
	cs->cs_dup_stop = true;
	cs->cs_d->d_exit_code = 1;
	qb_loop_stop(cs->cs_d->d_loop);
}

static void dup_drop(struct dlmd_cluster *cs, uint32_t pid)
{
	for (unsigned int i = 0; i < cs->cs_ndup; i++) {
		if (cs->cs_dup_pids[i] == pid) {
			cs->cs_dup_pids[i] = cs->cs_dup_pids[--cs->cs_ndup];
			return;
		}
	}
}

/*
 * ONE DLMD PER NODE ID: the first message of process dm that verifies
 * was just delivered ('first': its sequence 1).  Of two dlmds of one node
 * id, the node's dlmd is the one whose first sealed message is delivered
 * first (the others' second_of_node keeps it, and drops the other); the
 * later one stops itself.  Each of the two is a member at both
 * deliveries, or the one that joined later sees the earlier one as a
 * suspect (dup_node_id) that sealed before its join, so both take the
 * same decision on the same order:
 *  - dm is of our node id, not us, and our own first sealed message
 *    is not delivered yet (our dm_inc is 0): dm came first, we stop;
 *  - dm is a suspect whose first message here is not its sequence 1:
 *    it sealed before our join, so before us: we stop;
 *  - dm is of our node id and ours came first: dm stops itself; a
 *    suspect is one no longer (its messages are dropped, second_of_node).
 * True if we stop.  A process that seals nothing (a stranger) never
 * comes here: it stops nobody.
 */
static bool dup_first(struct dlmd_cluster *cs, const struct cs_daemon *dm,
		      bool first)
{
	const struct cs_daemon *self;

	if (dm->dm_id != cs->cs_d->d_nodeid || dm->dm_pid == cs->cs_self_pid)
		return false;
	self = dm_find(cs, cs->cs_d->d_nodeid, cs->cs_self_pid);
	if (!self || !self->dm_inc) {
		dup_found(cs, dm->dm_pid,
			  "its first sealed message came before ours");
		return true;
	}
	if (dup_suspect(cs, dm) && !first) {
		dup_found(cs, dm->dm_pid, "its messages verify, sealed before "
			  "our join");
		return true;
	}
	if (dup_suspect(cs, dm))
		dup_drop(cs, dm->dm_pid);
	log_err("daemon group: a second dlmd of node %u (CPG pid %u) sealed "
		"its first message after ours: it must stop, we stay",
		dm->dm_id, dm->dm_pid);
	return false;
}

/*
 * VOUCHING.  An ANNOUNCE's FIRST part from 'from' vouches, if its sender
 * can tell every process of the group (vouch_fill), for those that have
 * sealed a message: at its delivery, a process that it does not list
 * and whose message we have not verified has never sealed one (what was
 * delivered before the sender wrote it, the sender saw; what came after
 * it, which was after our own join, we saw).  It is nobody, as to the
 * dlmds that saw it join: pending() from here on, not waited for; its
 * first sealed message, if it ever sends one, is its join as for any
 * process.  A process listed takes the incarnation vouched for (its
 * messages must carry it).  Only an ANNOUNCE of the current sync counts
 * (its view); every member applies the same one at the same point, and
 * those that can tell everybody change nothing by it.
 */
static bool retired(const struct dlmd_cluster *cs, uint64_t inc);

static void vouch_apply(struct dlmd_cluster *cs, const struct cs_daemon *from,
			const struct cm_announce *an)
{
	for (unsigned int i = 0; i < cs->cs_ndm; i++) {
		struct cs_daemon *dm = &cs->cs_dm[i];
		const struct cm_vouch *v = NULL;

		if (dm->dm_known || pending(dm))
			continue;	/* ourselves, or told apart already */
		for (uint32_t k = 0; k < an->an_nvouch; k++)
			if (an->an_vouch[k].v_id == dm->dm_id &&
			    an->an_vouch[k].v_pid == dm->dm_pid)
				v = &an->an_vouch[k];
		if (v && dup_suspect(cs, dm)) {
			char why[64];

			snprintf(why, sizeof(why), "node %u's dlmd vouches for it",
				 from->dm_id);
			dup_found(cs, dm->dm_pid, why);
			return;
		}
		if (v && !dm->dm_inc && !retired(cs, v->v_inc)) {
			dm->dm_inc = v->v_inc;
			log_debug("daemon group: node %u vouches for node %u pid %u",
				  from->dm_id, dm->dm_id, dm->dm_pid);
			continue;
		}
		if (v || dm->dm_inc)
			continue;
		dm->dm_witnessed = true;
		log_notice("daemon group: node %u pid %u was in the daemon group "
			   "before us and has sealed no message; node %u's dlmd "
			   "does not vouch for it: no dlmd, not waited for", dm->dm_id,
			   dm->dm_pid, from->dm_id);
		if (dup_suspect(cs, dm))
			log_notice("daemon group: that process of our "
				   "node id has sealed no message before "
				   "ours, so it is no dlmd: we stay (if it "
				   "seals one, it came second and stops "
				   "itself: dup_first)");
	}
	dmembers_update(cs);
}

static void sync_check(struct dlmd_cluster *cs)
{
	if (!cs->cs_syncing)
		return;
	for (unsigned int i = 0; i < cs->cs_ndm; i++)
		if (!cs->cs_dm[i].dm_announced && !pending(&cs->cs_dm[i]))
			return;
	sync_end(cs);
}

/* A complete ANNOUNCE from dm: its set of lockspaces at this point. */
static void announce_apply(struct dlmd_cluster *cs, struct cs_daemon *dm)
{
	uint32_t id = dm->dm_id;

	for (unsigned int b = 0; b < LS_HASH; b++)
		for (struct cs_lsent *le = cs->cs_ls[b]; le; le = le->le_next)
			le->le_mark = false;
	for (unsigned int i = 0; i < dm->dm_nann; i++) {
		struct cs_lsent *le = le_find(cs, dm->dm_ann[i].n_name, true);

		if (!le)
			continue;
		le->le_mark = true;
		if (le_has(le, id))
			continue;
		if (dm->dm_known) {
			/* a known daemon's ANNOUNCE says what we derived */
			log_warn("lockspace %s: node %u announces it, but its JOIN "
				 "was not seen; taken as a join here", le->le_name, id);
			table_join(cs, id, le->le_name, 0);
		} else {
			le_add(cs, le, id);	/* its changes: at the sync's end */
		}
	}
	if (dm->dm_known) {
		for (unsigned int b = 0; b < LS_HASH; b++) {
			for (struct cs_lsent *le = cs->cs_ls[b], *next; le; le = next) {
				next = le->le_next;
				if (le->le_mark || !le_has(le, id))
					continue;
				log_warn("lockspace %s: node %u no longer announces "
					 "it; taken as a leave here", le->le_name, id);
				table_leave(cs, id, le->le_name);
			}
		}
	}
	dm->dm_known = true;
	dm->dm_announced = true;
	log_debug("daemon group: node %u announced %u lockspace%s", id,
		  dm->dm_nann, dm->dm_nann == 1 ? "" : "s");
	dm->dm_nann = 0;
	sync_check(cs);
}

static void deliver_announce(struct dlmd_cluster *cs, struct cs_daemon *dm,
			     const unsigned char *body, size_t len)
{
	static struct cm_announce an;
	const char *why = NULL;

	if (dlmd_cm_announce_decode(body, len, &an, &why)) {
		log_warn("daemon group: malformed ANNOUNCE from node %u dropped: %s",
			 dm->dm_id, why);
		dm->dm_ann_open = false;
		return;
	}
	if (an.an_flags & CM_ANN_VOUCH)
		apart_vouched(cs, dm->dm_id, an.an_view, an.an_vouch,
			      an.an_nvouch);
	if (an.an_view != cs->cs_view) {
		/* sent before the confchg that started this sync: its
		 * sender's ANNOUNCE for this one comes after it */
		log_debug("daemon group: an ANNOUNCE of node %u answers an older "
			  "configuration; ignored", dm->dm_id);
		return;
	}
	if (an.an_flags & CM_ANN_VOUCH) {
		vouch_apply(cs, dm, &an);
		if (cs->cs_dup_stop)
			return;
	}
	if (an.an_flags & CM_ANN_FIRST) {
		dm->dm_ann_open = true;
		dm->dm_nann = 0;
	}
	if (!dm->dm_ann_open)
		return;		/* the rest of one begun before our join */
	if (dm->dm_nann + an.an_count > CS_ANN_TOTAL_MAX) {
		log_err("daemon group: node %u's ANNOUNCE is too long (more than "
			"%u lockspaces); dropped (no lockspace changes members "
			"until it announces again or leaves)", dm->dm_id,
			CS_ANN_TOTAL_MAX);
		dm->dm_ann_open = false;
		dm->dm_nann = 0;
		return;
	}
	if (dm->dm_nann + an.an_count > dm->dm_cann) {
		unsigned int nc = dm->dm_cann ? 2 * dm->dm_cann : CM_ANN_MAX;
		struct cm_name *p;

		while (nc < dm->dm_nann + an.an_count)
			nc *= 2;
		p = realloc(dm->dm_ann, nc * sizeof(*p));
		if (!p) {
			log_err("daemon group: no memory for node %u's ANNOUNCE",
				dm->dm_id);
			dm->dm_ann_open = false;
			return;
		}
		dm->dm_ann = p;
		dm->dm_cann = nc;
	}
	if (an.an_count) {
		memcpy(dm->dm_ann + dm->dm_nann, an.an_ls,
		       an.an_count * sizeof(an.an_ls[0]));
		dm->dm_nann += an.an_count;
	}
	if (an.an_flags & CM_ANN_LAST) {
		dm->dm_ann_open = false;
		announce_apply(cs, dm);
	}
}

/* Do we take dm's record of id's failure out of le (deliver_failed)? */
static bool failed_take(struct dlmd_cluster *cs, const struct cs_daemon *dm,
			const struct cs_lsent *le, uint32_t id)
{
	if (id_in(le->le_failed, le->le_nfailed, id))
		return false;
	if (dm->dm_known && !id_in(cs->cs_unseen, cs->cs_nunseen, id))
		return false;
	if (id_in(cs->cs_dmembers, cs->cs_ndmembers, id) &&
	    !id_in(cs->cs_sync_j, cs->cs_nsync_j, id)) {
		log_info("lockspace %s: node %u records node %u as failed out of "
			 "it, but we have known node %u's dlmd all along; not "
			 "taken", le->le_name, dm->dm_id, id, id);
		return false;
	}
	return true;
}

/*
 * What a record of our own failure means, said once per sender and
 * lockspace: the scary line only when it is true.  A record naming
 * another process of our node (or a dlmd failure) is a previous dlmd of
 * ours that died there, whose clients may still hold its locks.  One
 * naming this process is the sender's view of a split we were on the
 * other side of: at a merge of minority sides the sync's end decides
 * (FORGIVING A SPLIT, said at notice there); with FIRM or FENCING our
 * node is to be fenced or removed.
 */
static void self_failed_log(const struct dlmd_cluster *cs,
			    const struct cs_lsent *le, uint32_t from,
			    uint32_t pid, uint64_t inc, uint32_t flags)
{
	if ((flags & CM_FAILED_DAEMON) || pid != cs->cs_self_pid ||
	    inc != cs->cs_inc)
		log_err("lockspace %s: node %u records our own failure in it (a "
			"previous dlmd of ours died in it; its clients may still "
			"hold its locks): we take no part in it until node %u has "
			"seen our node fenced", le->le_name, from, from);
	else if (flags & (CM_FAILED_FIRM | CM_FAILED_FENCING))
		log_notice("lockspace %s: node %u recorded this dlmd as failed "
			   "out of it at a split, %s: we take no part in it "
			   "until node %u has seen our node fenced, or leaves",
			   le->le_name, from, flags & CM_FAILED_FENCING ?
			   "and saw a fencing of us begin" :
			   "seen from a majority or removed", from);
	else
		log_info("lockspace %s: node %u recorded this dlmd as failed out "
			 "of it at a split seen from a minority side: the end of "
			 "the sync decides whether that is forgiven (until then, "
			 "or until node %u has seen our node fenced, we take no "
			 "part in it)", le->le_name, from, from);
}

/*
 * A FAILED record from dm: the failures out of a lockspace dm has
 * recorded and not seen fenced.  We take a failure from it when we
 * cannot have seen it ourselves: dm is unknown to us (we joined after,
 * or dm is from the other side of a merge), or the failed daemon was
 * unknown to us when it failed in this sync; not for a daemon we have
 * known all along (it did not fail, or we saw it).  A record listing our
 * own node means a previous dlmd of ours died in the lockspace, or that
 * dm lost this one at a split (self_failed_log): we take no part in it
 * until dm's record no longer lists us (dm saw us fenced), dm leaves or
 * the sync forgives it (FORGIVING A SPLIT); fencing ourselves is no
 * answer.
 */
static void deliver_failed(struct dlmd_cluster *cs, struct cs_daemon *dm,
			   const unsigned char *body, size_t len)
{
	static struct cm_failed fl;
	struct dlmd *d = cs->cs_d;
	struct cs_lsent *le;
	const char *why = NULL;
	bool self = false;
	uint32_t self_pid = 0, self_flags = 0;
	uint64_t self_inc = 0;

	if (dlmd_cm_failed_decode(body, len, &fl, &why)) {
		log_warn("daemon group: malformed FAILED from node %u dropped: %s",
			 dm->dm_id, why);
		return;
	}
	le = le_find(cs, fl.fl_ls.n_name, true);
	if (!le)
		return;
	ev_record(cs, le, dm->dm_id, &fl);
	if (dm->dm_id == d->d_nodeid) {
		le_tidy(cs, le);
		return;		/* our own record: for forgive_split only */
	}
	for (uint32_t i = 0; i < fl.fl_count; i++) {
		uint32_t id = fl.fl_ids[i];
		bool daemon = fl.fl_flags[i] & CM_FAILED_DAEMON;

		if (id == d->d_nodeid) {
			self = true;
			self_pid = fl.fl_pids[i];
			self_inc = fl.fl_incs[i];
			self_flags = fl.fl_flags[i];
			continue;
		}
		if (failed_take(cs, dm, le, id)) {
			log_notice("lockspace %s: node %u recorded node %u as failed "
				   "out of it%s and not yet fenced: it is fenced "
				   "before we take part in the lockspace", le->le_name,
				   dm->dm_id, id, daemon ? " (its dlmd died)" : "");
			le_failed_add(le, id, daemon);
			failpid_set(cs, id, fl.fl_pids[i], fl.fl_incs[i], true);
			dlmd_fence_node_learned(d, id, daemon ? DLMD_FAIL_DAEMON :
						DLMD_FAIL_NODE, dm->dm_id);
		}
	}
	if (self && !id_in(le->le_claim, le->le_nclaim, dm->dm_id)) {
		if (!claim_add(cs, le, dm->dm_id))
			log_err("lockspace %s: no memory for node %u's record",
				le->le_name, dm->dm_id);
		self_failed_log(cs, le, dm->dm_id, self_pid, self_inc,
				self_flags);
	} else if (!self && claim_del(cs, le, dm->dm_id)) {
		log_notice("lockspace %s: node %u has seen our node fenced; "
			   "we may take part in it", le->le_name, dm->dm_id);
	}
	le_tidy(cs, le);
	kick(cs);
}

static void deliver_fence(struct dlmd_cluster *cs, uint32_t from, uint16_t type,
			  const unsigned char *body, size_t len)
{
	struct cm_fence fc;
	const char *why = NULL;

	if (dlmd_cm_fence_decode(body, len, type, &fc, &why)) {
		log_warn("daemon group: malformed %s from node %u dropped: %s",
			 type == CM_FENCE_CLAIM ? "FENCE_CLAIM" : "FENCE_RESULT",
			 from, why);
		return;
	}
	/* FORGIVING A SPLIT: a node being fenced is not forgiven */
	if (cs->cs_syncing && cs->cs_nsync_fencing < DLM_MAX_NODES &&
	    !id_in(cs->cs_sync_fencing, cs->cs_nsync_fencing, fc.fc_nodeid))
		cs->cs_sync_fencing[cs->cs_nsync_fencing++] = fc.fc_nodeid;
	else if (cs->cs_syncing && cs->cs_nsync_fencing == DLM_MAX_NODES &&
		 !id_in(cs->cs_sync_fencing, cs->cs_nsync_fencing, fc.fc_nodeid))
		ev_lost(cs, "fencing claims or results for more than %u nodes "
			"in this sync", DLM_MAX_NODES);
	if (type == CM_FENCE_CLAIM)
		dlmd_fence_claim_delivered(cs->cs_d, from, fc.fc_nodeid);
	else
		dlmd_fence_result_delivered(cs->cs_d, from, fc.fc_nodeid,
					    (enum dlmd_fence_status)fc.fc_status);
}

static void deliver_unreach(struct dlmd_cluster *cs, uint32_t from,
			    const unsigned char *body, size_t len);

/*
 * ONE DLMD PER NODE ID, against a process that is no dlmd.  CPG names
 * every process of a host by the host's node id, and corosync lets more
 * than root use CPG (the users and groups of its uidgid: pacemaker adds
 * its haclient group at start).  Such a process can join the daemon
 * group and send what a dlmd sends; were that taken, it spoke for its
 * node: a FENCE_RESULT of a failed node (the others gave that node's
 * locks away unfenced), an ANNOUNCE then a LEAVE (the others had the
 * node out of a lockspace its dlmd holds locks in), FAILED and UNREACH
 * records.  So while a node id has two processes in the group, a
 * message of one is taken only if we know it (its ANNOUNCE came while it
 * was the only one of its node id, or it is ourselves) and do not know
 * the other: the node's dlmd, which the second one joined beside.
 * Messages of a node id whose processes we cannot tell apart (we joined
 * when both were there) are dropped, all of them: we stay in our sync,
 * deciding nothing, until one of them leaves, and that leave starts a
 * sync again (daemon_confchg_ls), which every member answers anew.  A
 * second dlmd sends nothing (it stops at its first confchg), so nothing
 * real is lost to this but what the node's dlmd sent meanwhile, and the
 * sync its leave starts sends that state again.  Such a process on a
 * node whose dlmd is not in the group is the only one of its node id:
 * what keeps it from speaking for its node is the seal (SEALED
 * MESSAGES), and a dlmd that starts beside it tells it apart by the
 * others' vouches (VOUCHING).
 */
static bool second_of_node(const struct dlmd_cluster *cs,
			   const struct cs_daemon *dm)
{
	for (unsigned int i = 0; i < cs->cs_ndm; i++) {
		const struct cs_daemon *o = &cs->cs_dm[i];

		if (o == dm || o->dm_id != dm->dm_id)
			continue;
		/* one that never sealed a message is no dlmd (dm has:
		 * seal_ok() came first), SEALED MESSAGES */
		if (!o->dm_inc && !o->dm_known)
			continue;
		if (!dm->dm_known || o->dm_known)
			return true;
	}
	return false;
}

static void dlmd_joined(struct dlmd_cluster *cs, struct cs_daemon *dm);

/* SEALED MESSAGES: a message that does not verify is dropped, counted
 * and said, at most once per UNVERIFIED_LOG_MS. */
static void unverified(struct dlmd_cluster *cs, uint32_t nodeid, uint32_t pid,
		       size_t len, const char *why)
{
	uint64_t now = dlmd_now_ms();

	cs->cs_d->d_ncpg_unverified++;
	cs->cs_unverified++;
	if (now < cs->cs_unverified_log_at)
		return;
	log_err("daemon group: %llu message%s that did not verify dropped (the "
		"last: %zu bytes from node %u pid %u: %s); a process that is "
		"no dlmd of this cluster's key is in the daemon group",
		(unsigned long long)cs->cs_unverified,
		cs->cs_unverified == 1 ? "" : "s", len, nodeid, pid, why);
	cs->cs_unverified = 0;
	cs->cs_unverified_log_at = now + UNVERIFIED_LOG_MS;
}

static bool retired(const struct dlmd_cluster *cs, uint64_t inc)
{
	unsigned int n = cs->cs_nretired < CS_RETIRED_MAX ? cs->cs_nretired :
			 CS_RETIRED_MAX;

	for (unsigned int i = 0; i < n; i++)
		if (cs->cs_retired[i] == inc)
			return true;
	return false;
}

/* Process dm leaves the group: its incarnation is never taken again. */
static void retire(struct dlmd_cluster *cs, const struct cs_daemon *dm)
{
	if (dm && dm->dm_inc)
		cs->cs_retired[cs->cs_nretired++ % CS_RETIRED_MAX] = dm->dm_inc;
}

/*
 * SEALED MESSAGES: a merge.  A process that leaves with node-down (a
 * split) may come back with node-up under the same node id and CPG pid:
 * the same process, which kept its incarnation and sequence (a restart
 * joins with reason join, never node-up).  Its incarnation is retired all
 * the same (nothing else may take it), and kept here with its last
 * sequence, one entry per node id: its node-up join takes them back, so
 * its later messages verify and what it sent before does not (the
 * sequence must grow).  Retired alone, it was never heard again after a
 * merge: every message a "replay", no sync, and two sides each ran a
 * lockspace created there alone, two instances of it (test-cpg-proto,
 * test_split3_heard).
 */
static void merge_keep(struct dlmd_cluster *cs, const struct cs_daemon *dm)
{
	unsigned int i;

	for (i = 0; i < cs->cs_nkept; i++)
		if (cs->cs_kept[i].ct_id == dm->dm_id)
			break;
	if (i == cs->cs_nkept) {
		if (cs->cs_nkept == DLM_MAX_NODES)
			return;
		cs->cs_nkept++;
	}
	cs->cs_kept[i].ct_id = dm->dm_id;
	cs->cs_kept[i].ct_pid = dm->dm_pid;
	cs->cs_kept[i].ct_inc = dm->dm_inc;
	cs->cs_kept[i].ct_seq = dm->dm_seq;
}

/* Member m joined with node-up and is a process we kept: fill ndm. */
static bool merge_take(struct dlmd_cluster *cs,
		       const struct cpg_address *joined, size_t njoined,
		       const struct cpg_address *m, struct cs_daemon *ndm)
{
	bool nodeup = false;

	for (size_t j = 0; j < njoined; j++)
		if (joined[j].nodeid == m->nodeid && joined[j].pid == m->pid &&
		    joined[j].reason == CPG_REASON_NODEUP)
			nodeup = true;
	if (!nodeup)
		return false;
	for (unsigned int i = 0; i < cs->cs_nkept; i++) {
		const struct cs_kept *ct = &cs->cs_kept[i];

		if (ct->ct_id != m->nodeid || ct->ct_pid != m->pid)
			continue;
		memset(ndm, 0, sizeof(*ndm));
		ndm->dm_id = m->nodeid;
		ndm->dm_pid = m->pid;
		ndm->dm_inc = ct->ct_inc;
		ndm->dm_seq = ct->ct_seq;
		ndm->dm_witnessed = true;
		ndm->dm_fenced_back = dlmd_fence_killed(cs->cs_d, m->nodeid);
		ndm->dm_may_restart = true;	/* PID REUSE */
		cs->cs_kept[i] = cs->cs_kept[--cs->cs_nkept];
		log_info("daemon group: node %u pid %u merged back: its seal is "
			 "known, its lockspaces are not until its ANNOUNCE",
			 m->nodeid, m->pid);
		return true;
	}
	return false;
}

/* ... a pending process that leaves with node-down (merge_pending) */
static void pend_keep(struct dlmd_cluster *cs, const struct cs_daemon *dm)
{
	struct cs_pend_kept *pk;

	pk = &cs->cs_pend_kept[cs->cs_npend_kept++ % CS_PEND_KEPT_MAX];
	pk->pk_id = dm->dm_id;
	pk->pk_pid = dm->dm_pid;
}

/*
 * SEALED MESSAGES: a merge, where we did not keep the joiner's seal.  A
 * process that comes back with node-up and that we did not know as a
 * sealer may have sealed on the other side while apart (a dlmd that
 * started there, or one that had sealed only there): to take it for
 * pending, as a joiner we saw join, made us end the merge's sync
 * without its ANNOUNCE while those that kept its seal waited for it,
 * and its lockspaces' joins came after our sync, never applied (one of
 * them ran alone at us, stopped for ever at it: test_merge_unkept); and
 * our ANNOUNCE vouched for it as for one that never sealed.  So we wait
 * for it as for a process that was there before our join, unless we saw
 * it join and leave with node-down without sealing (cs_pend_kept): then
 * it is pending again, as before the split.  False: wait for m.
 */
static bool merge_pending(struct dlmd_cluster *cs,
			  const struct cpg_address *joined, size_t njoined,
			  const struct cpg_address *m)
{
	unsigned int n = cs->cs_npend_kept < CS_PEND_KEPT_MAX ?
			 cs->cs_npend_kept : CS_PEND_KEPT_MAX;

	for (size_t j = 0; j < njoined; j++) {
		if (joined[j].nodeid != m->nodeid || joined[j].pid != m->pid)
			continue;
		if (joined[j].reason != CPG_REASON_NODEUP)
			return true;
		for (unsigned int i = 0; i < n; i++)
			if (cs->cs_pend_kept[i].pk_id == m->nodeid &&
			    cs->cs_pend_kept[i].pk_pid == m->pid)
				return true;
		return false;
	}
	return true;
}

static const struct cs_apart *apart_find(const struct dlmd_cluster *cs,
					  uint32_t id);

/*
 * PID REUSE (SEALED MESSAGES).  A message of member dm verifies under the
 * cluster key with an incarnation that is neither the one we keep for it
 * nor a retired one.  Only the process that holds dm's CPG pid on its
 * node can send under it (the seal covers CPG's node id and pid, which
 * corosync gives), so the process whose incarnation we kept is gone and
 * a new dlmd got its pid: a dlmd started as pid 1 of a container, or
 * under a low fixed pid, restarted while its node was cut off (or the
 * whole node restarted and its corosync merged back with it), and came
 * back with node-up under the same node id and pid, which merge_take()
 * took for the process that left.  Only there (dm_may_restart: the first
 * message to verify since that merge; see SEALED MESSAGES for why not
 * anywhere else).  Dropped as a replay, every message of
 * it was lost, its ANNOUNCE with them, and the sync waited on it until
 * UNREACHABLE PEERS removed the node, or for ever.  It is a restart as
 * under another pid: the old incarnation is retired (its messages stay
 * refused), the lowcomms state kept for the old process goes, the new
 * one is unknown until its ANNOUNCE, and a failure of the node not
 * fenced yet is marked DLMD_FAIL_RESTARTED (fenced while in the view,
 * never forgiven: its records name the old incarnation, which is no
 * member's), as restarted_apart() marks one under another pid; unless
 * the merge's sync decides it (apart_defer: the side that came back
 * holds a majority, which may have seen the restart).  The process is
 * never known here: a kept seal is known only from an ANNOUNCE, which the
 * new process sends after (or as) its first message, under its own
 * incarnation.  Every member that kept the old incarnation sees the same
 * message at the same point; one that did not (it joined while apart)
 * takes the new one as the process's first, as for a new pid.
 */
static void reincarnated(struct dlmd_cluster *cs, struct cs_daemon *dm,
			 uint64_t inc)
{
	const struct cs_apart *ap = apart_find(cs, dm->dm_id);
	uint32_t id = dm->dm_id;

	log_notice("daemon group: node %u pid %u is a new dlmd under the pid of "
		   "the one we kept (a message of another incarnation verifies: "
		   "a restart that reused the pid); the one we kept is gone, as "
		   "at a restart under another pid", id, dm->dm_pid);
	retire(cs, dm);
	if (id_in(cs->cs_reset_later, cs->cs_nreset_later, id))
		comms_reset(cs, id);
	free(dm->dm_ann);
	dm->dm_ann = NULL;
	dm->dm_ann_open = false;
	dm->dm_nann = 0;
	dm->dm_known = false;
	dm->dm_announced = false;
	dm->dm_inc = inc;
	dm->dm_seq = 0;
	dm->dm_fenced_back = false;	/* a new process: the fencing held */
	if (dlmd_fence_is_done(cs->cs_d, id)) {
		/* the failure of the one we kept is fenced: a new dlmd */
	} else if (ap && ap->ap_held) {
		log_notice("node %u: its dlmd restarted on a side that held a "
			   "majority, which saw the new process: not fenced by us "
			   "(PID REUSE)", id);
	} else if (ap) {
		log_notice("node %u: whether a side that held a majority saw its "
			   "dlmd restart is decided at this sync's end (PID "
			   "REUSE)", id);
	} else {
		log_notice("node %u: the dlmd that failed is gone, and its old "
			   "clients may hold its locks: it is fenced, while in the "
			   "view (PID REUSE)", id);
		dlmd_fence_node_failed(cs->cs_d, id, DLMD_FAIL_RESTARTED);
	}
	dmembers_update(cs);
}

static void remove_node(struct dlmd_cluster *cs, uint32_t id, const char *why);

/* The fence agent that this node is configured with, for FENCED ALIVE's
 * log (the survivor that fenced may have been another; the cluster's
 * dlm.conf is meant to be the same everywhere). */
static void fence_agent(const struct dlmd *d, char *buf, size_t size)
{
	const struct dlmd_config *cf = &d->d_cfg;

	if (cf->cf_fence_pcmk != DLMD_FENCE_PCMK_NO && dlmd_fence_pcmk_built())
		snprintf(buf, size, "pacemaker's fencer%s%s%s",
			 cf->cf_fence_command[0] ? " or fence_command '" : "",
			 cf->cf_fence_command, cf->cf_fence_command[0] ? "'" : "");
	else if (cf->cf_fence_command[0])
		snprintf(buf, size, "fence_command '%s'", cf->cf_fence_command);
	else
		snprintf(buf, size, "no agent configured");
}

/*
 * FENCED ALIVE.  A node counted fenced by a method that stops nodes (a
 * fence agent or pacemaker's fencer said done) whose very dlmd process,
 * the incarnation that failed, speaks again after a merge: the fencing
 * did not stop it.  An agent that exits 0 without fencing (misconfigured,
 * a "true" agent in a lab, an IPMI that lied) does that.  Its locks were
 * recovered here and may be granted to others while its clients believe
 * they still hold them: two holders, which dlmd cannot undo.  What it
 * can do: say so at crit with the node and the agent, count it (status
 * fence_lied), mark the node failed again (fenced while in the view, as
 * a restart is) and have the lowest other member remove it from the
 * cluster (its corosync exits, its dlmd with it).  The returning dlmd learns for itself that it was
 * declared dead, at its sync's end (declared_dead()), and drops its
 * lockspaces.  Every member that kept the seal and saw the fencing acts
 * at the same message; the others (which joined since) have nothing
 * kept, and leave it to those.  dlm_controld's "stateful merge" does
 * the like: it refuses the merged node and wants it killed.
 */
static void fenced_alive(struct dlmd_cluster *cs, struct cs_daemon *dm)
{
	struct dlmd *d = cs->cs_d;
	char agent[sizeof(d->d_cfg.cf_fence_command) + 64], why[128];
	uint32_t lowest = 0;

	dm->dm_fenced_back = false;
	d->d_nfence_lied++;
	fence_agent(d, agent, sizeof(agent));
	log_crit("node %u was counted fenced (agent: %s), yet the same dlmd "
		 "process (pid %u, the incarnation that failed) is back after "
		 "the split: the fencing did not stop the node (an agent that "
		 "exits 0 without fencing, or that lied); its locks were "
		 "recovered and may be held by others now while its clients "
		 "believe they hold them: two holders are possible; node %u is "
		 "fenced again and removed from the cluster: check the fence "
		 "agent", dm->dm_id, agent, dm->dm_pid, dm->dm_id);
	dlmd_fence_node_failed(d, dm->dm_id, DLMD_FAIL_RESTARTED);
	/* One remover, the lowest other member, as for UNREACHABLE PEERS:
	 * corosync delivers a removal in agreed order, and the node's
	 * corosync exits at the first; a second one, sent by another
	 * survivor at the same moment, was delivered in the next ring, to
	 * the node's corosync restarted after its (real) fencing, and took
	 * that down too (seen so: tests/test-cluster-fence-lied.sh). */
	for (unsigned int i = 0; i < cs->cs_ndmembers; i++) {
		uint32_t id = cs->cs_dmembers[i];

		if (id != dm->dm_id && (!lowest || id < lowest))
			lowest = id;
	}
	if (lowest != d->d_nodeid) {
		log_notice("node %u: node %u removes it from the cluster",
			   dm->dm_id, lowest);
		return;
	}
	snprintf(why, sizeof(why), "dlmd: node %u was fenced, yet its dlmd still "
		 "runs (the fence agent did not stop it)", dm->dm_id);
	remove_node(cs, dm->dm_id, why);
}

/* The seal of a message of (nodeid, pid), member dm (or NULL): true if
 * it verifies and is new; *inner is then the length of header and body.
 * A message of another version is refused here, said once per process. */
static bool seal_ok(struct dlmd_cluster *cs, struct cs_daemon *dm,
		    uint32_t nodeid, uint32_t pid, const unsigned char *p,
		    size_t len, size_t *inner, bool *first)
{
	struct cm_seal se;
	struct cm_hdr hd;
	const char *why = NULL, *hwhy = NULL;

	if (dlmd_cm_open(p, len, cs->cs_cpg_key, nodeid, pid, &se, inner,
			 &why)) {
		/* an older dlmd's: no seal, and the version says so */
		if (dlmd_cm_hdr_decode(p, len, &hd, &hwhy) == -EPROTONOSUPPORT) {
			if (dm && !dm->dm_refused) {
				dm->dm_refused = true;
				log_err("daemon group: node %u (pid %u) speaks CPG "
					"protocol version %u, we speak %u: mixing "
					"versions is refused; its messages are "
					"dropped, and no lockspace changes members "
					"while it is in the group", nodeid, pid,
					hd.h_version, CM_VERSION);
			}
			/* no proof of a dlmd: a version-2 header needs no
			 * key, and a version-3 dlmd's seal verifies */
			return false;
		}
		unverified(cs, nodeid, pid, len, why);
		return false;
	}
	*first = false;
	if (!dm)
		return true;	/* not a member: daemon_deliver says so */
	if (!dm->dm_inc) {
		if (retired(cs, se.se_inc)) {
			unverified(cs, nodeid, pid, len, "the incarnation of a "
				   "process that left (a replay)");
			return false;
		}
		dm->dm_inc = se.se_inc;
		dmembers_update(cs);
	} else if (se.se_inc != dm->dm_inc && retired(cs, se.se_inc)) {
		unverified(cs, nodeid, pid, len, "the incarnation of a process "
			   "that left (a replay)");
		return false;
	} else if (se.se_inc != dm->dm_inc && !dm->dm_may_restart) {
		/* a process that spoke under its incarnation since we took
		 * it in holds its pid: it did not restart, an old seal's
		 * message is a replay (PID REUSE) */
		unverified(cs, nodeid, pid, len, "another incarnation than the "
			   "process's (a replay)");
		return false;
	} else if (se.se_inc != dm->dm_inc) {
		reincarnated(cs, dm, se.se_inc);	/* PID REUSE */
	} else if (se.se_seq <= dm->dm_seq) {
		unverified(cs, nodeid, pid, len, "a sequence already seen (a "
			   "replay)");
		return false;
	}
	dm->dm_seq = se.se_seq;
	dm->dm_may_restart = false;	/* it spoke: its incarnation holds */
	*first = se.se_seq == 1;
	return true;
}

/* CONFIGURATION CHANGES: from this point of the stream every member
 * counts majorities against the pair a CONFIG carries. */
static void deliver_config(struct dlmd_cluster *cs, uint32_t from,
			   const unsigned char *body, size_t len)
{
	struct cm_config cg;
	const char *why = NULL;

	if (dlmd_cm_config_decode(body, len, &cg, &why)) {
		log_warn("daemon group: malformed CONFIG from node %u dropped: %s",
			 from, why);
		return;
	}
	if (cg.cg_flags & CM_CONFIG_SYNC) {
		/* the group's pair sent again for a joiner (config_resend):
		 * of this sync, and older than no CONFIG of a change */
		if (!cs->cs_syncing || cg.cg_view != cs->cs_view ||
		    cs->cs_conf_new) {
			log_debug("daemon group: node %u's configuration sent "
				  "again at sync %08x not taken (%s)", from,
				  cg.cg_view, cs->cs_conf_new ? "a change came "
				  "since" : "another sync");
			return;
		}
	} else {
		cs->cs_conf_new = true;
	}
	if (cg.cg_nnodes != conf_nnodes(cs) || cg.cg_tiebreak != conf_tiebreak(cs))
		log_notice("daemon group: node %u's configuration applies from "
			   "here on: %u configured node%s (was %u); node %u breaks "
			   "even splits (was %u)", from, cg.cg_nnodes,
			   cg.cg_nnodes == 1 ? "" : "s", conf_nnodes(cs),
			   cg.cg_tiebreak, conf_tiebreak(cs));
	if (cg.cg_nnodes != cs->cs_nnodes || cg.cg_tiebreak != cs->cs_tiebreak)
		log_info("daemon group: our own reading is %u configured nodes, "
			 "tie-breaker node %u (a reload not seen here yet, or a "
			 "corosync.conf that differs)", cs->cs_nnodes,
			 cs->cs_tiebreak);
	cs->cs_conf_set = true;
	cs->cs_conf_heard = true;
	cs->cs_conf_nnodes = cg.cg_nnodes;
	cs->cs_conf_tiebreak = cg.cg_tiebreak;
}

static void daemon_deliver(cpg_handle_t h, const struct cpg_name *group,
			   uint32_t nodeid, uint32_t pid, void *msg, size_t len)
{
	struct dlmd_cluster *cs = NULL;
	const unsigned char *p = msg;
	struct cs_daemon *dm;
	struct cm_hdr hd;
	struct cm_name nm;
	const char *why = NULL;
	bool first, fresh;
	int rv;

	if (cpg_context_get(h, (void **)&cs) != CS_OK || !cs)
		return;
	if (cs->cs_dup_stop)
		return;		/* we stop (ONE DLMD PER NODE ID) */
	dm = dm_find(cs, nodeid, pid);
	fresh = dm && !dm->dm_inc;
	if (!seal_ok(cs, dm, nodeid, pid, p, len, &len, &first))
		return;
	if (fresh && dup_first(cs, dm, first))
		return;
	if (dm && dm->dm_fenced_back)
		fenced_alive(cs, dm);
	if (first && dm)
		dlmd_joined(cs, dm);
	rv = dlmd_cm_hdr_decode(p, len, &hd, &why);
	if (rv == -EPROTONOSUPPORT) {
		if (dm && !dm->dm_refused) {
			dm->dm_refused = true;
			log_err("daemon group: node %u (pid %u) speaks CPG protocol "
				"version %u, we speak %u: mixing versions is refused; "
				"its messages are dropped, and no lockspace changes "
				"members while it is in the group", nodeid, pid,
				hd.h_version, CM_VERSION);
		}
		/* its seal verified: a dlmd of another version */
		version_stop(cs, nodeid, pid, hd.h_version);
		return;
	}
	if (rv) {
		log_warn("daemon group: message of %zu bytes from node %u dropped: "
			 "%s", len, nodeid, why);
		return;
	}
	if (hd.h_sender != nodeid) {
		log_warn("daemon group: message from node %u says it is from node "
			 "%u: dropped", nodeid, hd.h_sender);
		return;
	}
	if (!dm) {
		log_warn("daemon group: message from node %u pid %u, which is not "
			 "a member (an old incarnation?): dropped", nodeid, pid);
		return;
	}
	if (second_of_node(cs, dm)) {
		if (!dm->dm_second)
			log_err("daemon group: a second dlmd of node %u (CPG pid "
				"%u) sealed a message: messages of node %u pid %u "
				"dropped while another process of node %u is in the "
				"group: not the node's dlmd, or not one we can tell "
				"from it (type %u now; more not logged)", nodeid,
				pid, nodeid, pid, nodeid, hd.h_type);
		dm->dm_second = true;
		return;
	}
	if (hd.h_target && hd.h_type >= CM_START && hd.h_type <= CM_CONFIG) {
		/* every member must apply these alike: none is for one */
		log_warn("daemon group: message type %u from node %u with target "
			 "node %u dropped (it is for every member)", hd.h_type,
			 nodeid, hd.h_target);
		return;
	}
	if (hd.h_target && hd.h_target != cs->cs_d->d_nodeid)
		return;		/* a type of a later version, for another */
	if (hd.h_type == CM_ANNOUNCE) {
		deliver_announce(cs, dm, p + CM_HDR_LEN, len - CM_HDR_LEN);
		return;
	}
	if (hd.h_type == CM_FAILED) {
		/* state, not membership: taken from an unknown daemon too */
		deliver_failed(cs, dm, p + CM_HDR_LEN, len - CM_HDR_LEN);
		return;
	}
	if (hd.h_type == CM_FENCE_CLAIM || hd.h_type == CM_FENCE_RESULT) {
		/* the fencing turn: followed from every member, known or
		 * not, in the order delivered (fence.c, ONE FENCER) */
		deliver_fence(cs, nodeid, hd.h_type, p + CM_HDR_LEN,
			      len - CM_HDR_LEN);
		return;
	}
	if (hd.h_type == CM_UNREACH) {
		/* reachability, not membership: from every member */
		deliver_unreach(cs, nodeid, p + CM_HDR_LEN, len - CM_HDR_LEN);
		return;
	}
	if (hd.h_type == CM_CONFIG) {
		/* configuration, not membership: from every member */
		deliver_config(cs, nodeid, p + CM_HDR_LEN, len - CM_HDR_LEN);
		return;
	}
	if (!dm->dm_known) {
		/* what it did before its ANNOUNCE, the ANNOUNCE says */
		log_debug("daemon group: message type %u from node %u before its "
			  "announcement; its announcement covers it", hd.h_type,
			  nodeid);
		return;
	}
	switch (hd.h_type) {
	case CM_START:
		deliver_start(cs, nodeid, p + CM_HDR_LEN, len - CM_HDR_LEN);
		break;
	case CM_RESTART:
		deliver_restart(cs, nodeid, p + CM_HDR_LEN, len - CM_HDR_LEN);
		break;
	case CM_JOIN:
	case CM_LEAVE:
		if (dlmd_cm_ls_decode(p + CM_HDR_LEN, len - CM_HDR_LEN, &nm, &why)) {
			log_warn("daemon group: malformed %s from node %u dropped: %s",
				 hd.h_type == CM_JOIN ? "JOIN" : "LEAVE", nodeid, why);
			break;
		}
		if (hd.h_type == CM_JOIN)
			table_join(cs, nodeid, nm.n_name, hd.h_seq);
		else
			table_leave(cs, nodeid, nm.n_name);
		break;
	default:
		log_debug("daemon group: message of unknown type %u from node %u "
			  "ignored", hd.h_type, nodeid);
		break;
	}
}

/* A daemon group configuration as a number, the same on every member:
 * FNV-1a of its (node id, pid) pairs in ascending order. */
static uint32_t view_of(const struct cpg_address *m, size_t n)
{
	uint32_t h = 2166136261u;
	uint64_t prev = 0;

	for (size_t k = 0; k < n; k++) {
		uint64_t next = UINT64_MAX;

		for (size_t i = 0; i < n; i++) {
			uint64_t v = (uint64_t)m[i].nodeid << 32 | m[i].pid;

			if ((k == 0 || v > prev) && v < next)
				next = v;
		}
		if (next == UINT64_MAX && k)
			break;
		for (int b = 0; b < 8; b++) {
			h ^= (uint8_t)(next >> (8 * b));
			h *= 16777619u;
		}
		prev = next;
	}
	return h;
}

/* Does a process of node id 'id' that we knew before this confchg stay
 * a member in it?  (A process of 'id' that leaves meanwhile was its
 * second dlmd; a new one joining in the same confchg does not count.) */
static bool first_stays(struct dlmd_cluster *cs,
			const struct cpg_address *members, size_t nmembers,
			const struct cpg_address *joined, size_t njoined,
			uint32_t id)
{
	for (size_t k = 0; k < nmembers; k++) {
		const struct cs_daemon *dm;
		bool new = false;

		if (members[k].nodeid != id)
			continue;
		for (size_t j = 0; j < njoined; j++)
			if (joined[j].nodeid == id && joined[j].pid == members[k].pid)
				new = true;
		dm = new ? NULL : dm_find(cs, id, members[k].pid);
		if (dm && dm->dm_known)
			return true;
	}
	return false;
}

/* ONE DLMD PER NODE ID: is another process of m's node id, one we know
 * (or ourselves), still a member?  Then m is a second dlmd of the node,
 * and the node's lockspaces are known all the same. */
static bool first_known(const struct dlmd_cluster *cs,
			const struct cpg_address *members, size_t nmembers,
			const struct cpg_address *m)
{
	for (unsigned int i = 0; i < cs->cs_ndm; i++) {
		const struct cs_daemon *dm = &cs->cs_dm[i];

		if (dm->dm_id != m->nodeid || dm->dm_pid == m->pid || !dm->dm_known)
			continue;
		for (size_t k = 0; k < nmembers; k++)
			if (members[k].nodeid == dm->dm_id &&
			    members[k].pid == dm->dm_pid)
				return true;
	}
	return false;
}

/* A member added (or a failure while syncing): everybody announces,
 * nobody decides until every member's ANNOUNCE is in.  A failure while
 * syncing starts it over: a member that did not know the failed daemon
 * learns from the others' FAILED records which lockspaces it failed out
 * of before the sync ends. */
static void sync_start(struct dlmd_cluster *cs, uint32_t view)
{
	if (!cs->cs_syncing) {
		cs->cs_syncing = true;
		cs->cs_sync_since = dlmd_now_ms();
		cs->cs_sync_logged = false;
	}
	/* Only ANNOUNCEs sent after this point count, the same on every
	 * member: a joiner never saw those sent before it (or their first
	 * parts).  They carry the configuration they answer; one in
	 * progress is dropped. */
	cs->cs_view = view;
	cs->cs_conf_new = false;	/* CONFIGURATION CHANGES */
	for (unsigned int i = 0; i < cs->cs_ndm; i++) {
		cs->cs_dm[i].dm_announced = false;
		cs->cs_dm[i].dm_ann_open = false;
		cs->cs_dm[i].dm_nann = 0;
	}
	/* FORGIVING A SPLIT: only the records sent from here on count */
	ev_clear(cs);
	send_failed_all(cs);
	/* the fencing turns we hold, for those who join (fence.c, ONE
	 * FENCER): before our ANNOUNCE, so in by the sync's end */
	dlmd_fence_resend_claims(cs->cs_d);
	config_resend(cs);
	send_announce(cs);
}

/* SEALED MESSAGES: the first message of a dlmd process (sequence 1)
 * is delivered: every member, it too, sees it at this point, and here
 * it joins for dlmd's purposes (a sync starts; a process that never
 * seals one never does).  Our own first message too: the others start
 * their sync here, so we start ours again.  The sync's number mixes
 * the process into the members' (the same on every member). */
static void dlmd_joined(struct dlmd_cluster *cs, struct cs_daemon *dm)
{
	struct cpg_address m[DLM_MAX_NODES] = { { 0 } };
	bool self = dm->dm_id == cs->cs_d->d_nodeid &&
		    dm->dm_pid == cs->cs_self_pid;
	bool second = false;
	uint32_t view;

	for (unsigned int i = 0; i < cs->cs_ndm; i++) {
		const struct cs_daemon *o = &cs->cs_dm[i];

		m[i].nodeid = o->dm_id;
		m[i].pid = o->dm_pid;
		m[i].reason = 0;
		if (o != dm && o->dm_id == dm->dm_id && o->dm_known)
			second = true;
	}
	view = view_of(m, cs->cs_ndm);
	view = (view ^ dm->dm_id) * 16777619u;
	view = (view ^ dm->dm_pid) * 16777619u;
	if (!self && !second && !dm->dm_known && cs->cs_nsync_j < DLM_MAX_NODES &&
	    !id_in(cs->cs_sync_j, cs->cs_nsync_j, dm->dm_id))
		cs->cs_sync_j[cs->cs_nsync_j++] = dm->dm_id;
	log_debug("daemon group: node %u pid %u sealed its first message: it "
		  "joins (sync %08x)", dm->dm_id, dm->dm_pid, view);
	sync_start(cs, view);
}

/*
 * The lockspace side of a daemon group confchg (after the daemon group's
 * own rules in daemon_confchg): daemons that left leave every lockspace
 * at this point; a member added starts a sync.
 */
static void daemon_confchg_ls(struct dlmd_cluster *cs,
			      const struct cpg_address *members, size_t nmembers,
			      const struct cpg_address *left, size_t nleft,
			      const struct cpg_address *joined, size_t njoined)
{
	struct dlmd *d = cs->cs_d;
	struct cs_daemon ndm[DLM_MAX_NODES];
	unsigned int nn = 0;
	bool we_joined = false, failed = false, second_left = false;
	bool merged = false;

	/* a process of a node id that still has one in the group left:
	 * what we dropped of that node id meanwhile (second_of_node) is
	 * sent again in a sync, as for a join; the same on every member */
	for (size_t i = 0; i < nleft; i++) {
		struct cs_daemon *ldm = dm_find(cs, left[i].nodeid, left[i].pid);

		retire(cs, ldm);
		if (ldm && ldm->dm_inc && left[i].reason == CPG_REASON_NODEDOWN)
			merge_keep(cs, ldm);
		else if (ldm && pending(ldm) &&
			 left[i].reason == CPG_REASON_NODEDOWN)
			pend_keep(cs, ldm);
		if (dup_suspect(cs, ldm)) {
			dup_drop(cs, ldm->dm_pid);
			log_notice("daemon group: the other process of our node id "
				   "(CPG pid %u) left: we stay", ldm->dm_pid);
		}
		/* one that never sealed a message: nothing of another was
		 * dropped for it (second_of_node), the same on every member */
		if (ldm && !ldm->dm_inc && !ldm->dm_known)
			continue;
		for (size_t k = 0; k < nmembers; k++)
			if (members[k].nodeid == left[i].nodeid)
				second_left = true;
	}
	/* who left, and the lockspaces they leave */
	for (size_t i = 0; i < nleft; i++) {
		struct cs_daemon *dm = dm_find(cs, left[i].nodeid, left[i].pid);
		uint32_t id = left[i].nodeid;
		struct cs_lsent **own;
		struct cs_byid *bi;
		unsigned int nown;
		bool had;

		/* (a second dlmd of a node whose first is still a member,
		 * ours included: no failure, nothing of it in a lockspace;
		 * every member skips it alike, ONE DLMD PER NODE ID; and a
		 * process that never sealed a message since we saw it join:
		 * no dlmd, SEALED MESSAGES) */
		if (!dm || id == d->d_nodeid || pending(dm) ||
		    first_stays(cs, members, nmembers, joined, njoined, id))
			continue;
		/* its records of our own failure go with it */
		for (unsigned int b = 0; cs->cs_nclaims && b < LS_HASH; b++) {
			for (struct cs_lsent *le = cs->cs_ls[b], *next; le; le = next) {
				next = le->le_next;
				if (!claim_del(cs, le, id))
					continue;
				log_warn("lockspace %s: node %u, which recorded our "
					 "own failure in it, left the daemon group; "
					 "nobody waits for our fencing in it any more",
					 le->le_name, id);
				le_tidy(cs, le);
			}
		}
		if (left[i].reason != CPG_REASON_LEAVE)
			failed = true;
		/* the process that failed, for its FAILED records */
		if (left[i].reason != CPG_REASON_LEAVE && dm->dm_inc)
			failpid_set(cs, id, left[i].pid, dm->dm_inc, false);
		if (!dm->dm_known) {
			/* nothing of it is in our table; those who knew it
			 * send their records of its failures (below) */
			if (left[i].reason != CPG_REASON_LEAVE &&
			    cs->cs_nunseen < DLM_MAX_NODES &&
			    !id_in(cs->cs_unseen, cs->cs_nunseen, id))
				cs->cs_unseen[cs->cs_nunseen++] = id;
			continue;
		}
		/* a dlmd that died with lockspaces: its node is fenced; its
		 * failure is recorded (below) before the entries are tidied,
		 * or they would drop it as "fenced" (never failed) */
		bi = byid(cs, id, false);
		had = bi && bi->bi_n;
		if (had && left[i].reason == CPG_REASON_PROCDOWN)
			dlmd_fence_node_failed(d, id, DLMD_FAIL_DAEMON);
		/* it leaves all of them: its list goes at once */
		own = bi ? bi->bi_ls : NULL;
		nown = bi ? bi->bi_n : 0;
		if (bi) {
			bi->bi_ls = NULL;
			bi->bi_n = bi->bi_cap = 0;
		}
		for (unsigned int k = 0; k < nown; k++) {
			struct cs_lsent *le = own[k];
			struct ls_left lf = { id, left[i].reason };
			struct dlmd_cluster_ls *cl = le->le_cl;

			ids_del(le->le_members, &le->le_nmembers, id);
			if (left[i].reason != CPG_REASON_LEAVE)
				le_failed_add(le, id, left[i].reason ==
					      CPG_REASON_PROCDOWN);
			if (cl && cl->cl_state != CL_JOINING)
				ls_change(cl, le->le_members, le->le_nmembers,
					  &lf, 1, "");
			le_tidy(cs, le);
		}
		free(own);
		if (had && left[i].reason == CPG_REASON_LEAVE)
			log_warn("node %u's dlmd left the daemon group cleanly while "
				 "still in lockspaces (its LEAVEs were not sent); "
				 "taken as clean leaves", id);
	}
	/* The first confchg we get is our own join: our process is the one
	 * of our node id it adds (CPG's pid may be of another pid namespace
	 * than getpid(); if two of our node id join at once, getpid()'s). */
	if (!cs->cs_self_pid) {
		for (size_t i = 0; i < njoined; i++) {
			if (joined[i].nodeid != d->d_nodeid)
				continue;
			if (!cs->cs_self_pid || joined[i].pid == (uint32_t)getpid())
				cs->cs_self_pid = joined[i].pid;
		}
		we_joined = cs->cs_self_pid != 0;
	}
	/* a merge (a joiner with node-up) starts a sync here, on every
	 * member alike, whether or not we kept the joiner's seal (a member
	 * that joined our side while apart never knew it): its first
	 * message, which starts one for a fresh dlmd, was long ago */
	for (size_t i = 0; !we_joined && cs->cs_self_pid && i < njoined; i++) {
		if (joined[i].reason != CPG_REASON_NODEUP ||
		    joined[i].nodeid == d->d_nodeid)
			continue;
		merged = true;
		if (cs->cs_nsync_j < DLM_MAX_NODES &&
		    !id_in(cs->cs_sync_j, cs->cs_nsync_j, joined[i].nodeid))
			cs->cs_sync_j[cs->cs_nsync_j++] = joined[i].nodeid;
	}
	/* the new list of processes; those that joined are unknown */
	for (size_t i = 0; i < nmembers && nn < DLM_MAX_NODES; i++) {
		struct cs_daemon *old = dm_find(cs, members[i].nodeid,
						members[i].pid);
		bool self = members[i].nodeid == d->d_nodeid &&
			    members[i].pid == cs->cs_self_pid;

		if (old && !we_joined) {
			ndm[nn] = *old;
			old->dm_ann = NULL;	/* moved */
		} else if (!we_joined && !self &&
			   merge_take(cs, joined, njoined, &members[i], &ndm[nn])) {
			/* the same process merged back: known again by its
			 * seal, unknown in the table until its ANNOUNCE */
		} else {
			memset(&ndm[nn], 0, sizeof(ndm[nn]));
			ndm[nn].dm_id = members[i].nodeid;
			ndm[nn].dm_pid = members[i].pid;
			ndm[nn].dm_known = self;
			/* a joiner we see join is no dlmd to us until its
			 * first sealed message (daemon_deliver); those there
			 * before us we cannot tell: we wait for them, and so
			 * for one that merged back (node-up) whose seal we did
			 * not keep: it may have sealed on the other side
			 * (merge_pending) */
			ndm[nn].dm_witnessed = !we_joined && !self &&
				merge_pending(cs, joined, njoined, &members[i]);
			for (size_t j = 0; !we_joined && !self && j < njoined; j++)
				if (joined[j].nodeid == members[i].nodeid &&
				    joined[j].pid == members[i].pid &&
				    joined[j].reason == CPG_REASON_JOIN)
					ndm[nn].dm_later = true;
			if (!self && !ndm[nn].dm_witnessed &&
			    cs->cs_nsync_j < DLM_MAX_NODES &&
			    !id_in(cs->cs_sync_j, cs->cs_nsync_j, members[i].nodeid) &&
			    !first_known(cs, members, nmembers, &members[i]))
				cs->cs_sync_j[cs->cs_nsync_j++] = members[i].nodeid;
		}
		nn++;
	}
	for (unsigned int i = 0; i < cs->cs_ndm; i++)
		free(cs->cs_dm[i].dm_ann);
	memcpy(cs->cs_dm, ndm, nn * sizeof(ndm[0]));
	cs->cs_ndm = nn;
	dmembers_update(cs);
	/* a member added: our own join here; another's is its first
	 * sealed message (dlmd_joined) */
	if (we_joined || second_left || merged || (failed && cs->cs_syncing))
		sync_start(cs, view_of(members, nmembers));
	sync_check(cs);
	kick(cs);
}

static void id_remove(uint32_t *ids, unsigned int *n, uint32_t id)
{
	for (unsigned int i = 0; i < *n; i++) {
		if (ids[i] == id) {
			ids[i] = ids[--*n];
			return;
		}
	}
}

/* Make node 'id' leave the cluster: its corosync exits (and with it its
 * dlmd, which cannot run without corosync), so that it drops out of the
 * view, gets fenced and can only come back as a fresh node. */
static void remove_node(struct dlmd_cluster *cs, uint32_t id, const char *why)
{
	corosync_cfg_handle_t cfg;
	corosync_cfg_callbacks_t cb;
	cs_error_t e;

	memset(&cb, 0, sizeof(cb));
	e = corosync_cfg_initialize(&cfg, &cb);
	if (e == CS_OK) {
		for (int i = 0; i < CS_RETRIES; i++) {
			e = corosync_cfg_kill_node(cfg, id, why);
			if (e != CS_ERR_TRY_AGAIN)
				break;
			usleep(CS_RETRY_US);	/* bounded: 1 s */
		}
		corosync_cfg_finalize(cfg);
	}
	if (e != CS_OK)
		log_err("cannot remove node %u from the cluster (%s): %s", id,
			why, cs_str(e));
	else
		log_err("removing node %u from the cluster (corosync_cfg_kill_node): "
			"%s", id, why);
}

/* Does our side (IDS, the daemon group's or the ring's) hold a strict
 * majority of the configured nodes, or exactly half of them with the
 * tie-breaker node?  Two disjoint sides never both do. */
static bool majority_side(const struct dlmd_cluster *cs, const uint32_t *ids,
			  unsigned int n)
{
	return dlmd_majority_side(conf_nnodes(cs), conf_tiebreak(cs), ids, n);
}

/* Was process (id, pid) in the daemon group before this confchg? */
static bool was_member(const struct cpg_address *joined, size_t njoined,
		       uint32_t id, uint32_t pid)
{
	for (size_t j = 0; j < njoined; j++)
		if (joined[j].nodeid == id && joined[j].pid == pid)
			return false;
	return true;
}

/* Does member m of a confchg count (dmembers_update)?  Ourselves; one
 * there before that has sealed a message or that we know; a joiner
 * that merged back with the seal we kept (merge_take). */
static bool member_counts(const struct dlmd_cluster *cs,
			  const struct cpg_address *m,
			  const struct cpg_address *joined, size_t njoined)
{
	const struct cs_daemon *dm;

	if (m->nodeid == cs->cs_d->d_nodeid)
		return true;
	if (!was_member(joined, njoined, m->nodeid, m->pid)) {
		for (size_t j = 0; j < njoined; j++)
			if (joined[j].nodeid == m->nodeid &&
			    joined[j].pid == m->pid &&
			    joined[j].reason != CPG_REASON_NODEUP)
				return false;
		for (unsigned int i = 0; i < cs->cs_nkept; i++)
			if (cs->cs_kept[i].ct_id == m->nodeid &&
			    cs->cs_kept[i].ct_pid == m->pid)
				return true;
		return false;
	}
	dm = dm_find((struct dlmd_cluster *)cs, m->nodeid, m->pid);
	return dm && (dm->dm_inc || dm->dm_known);
}

/*
 * RESTARTED WHILE APART (FORGIVING A SPLIT in the essay): node id, whose
 * node-down failure seen from a minority side is not fenced yet, merges
 * back (node-up) while the process it failed as is no member of the
 * merged group: its dlmd restarted (or died) on its side.  Then it is a
 * restart as one that joins with reason join is (DLMD_FAIL_RESTARTED):
 * fenced, while in the view.  A failure already marked so (a dlmd
 * failure, a majority's, a removal) needs nothing more; one whose
 * process is not known is left as it was.
 */
static bool restarted_apart(const struct dlmd_cluster *cs, uint32_t id,
			    const struct cpg_address *members, size_t nmembers)
{
	const struct cs_failpid *fp = failpid(cs, id);

	if (!fp || !fp->fp_pid || dlmd_fence_is_done(cs->cs_d, id) ||
	    (dlmd_fence_marks(cs->cs_d, id) & DLMD_FENCE_MARK_FIRM))
		return false;
	for (size_t k = 0; k < nmembers; k++)
		if (members[k].nodeid == id && members[k].pid == fp->fp_pid)
			return false;
	return true;
}

/* PID REUSE: node id merged back (node-up) under the CPG pid of the
 * process its failure (a minority's node-down, not FIRM, not fenced)
 * names: the same process, or a new one that got its pid (reincarnated
 * tells when it speaks). */
static bool back_same_pid(const struct dlmd_cluster *cs, uint32_t id,
			  uint32_t pid)
{
	const struct cs_failpid *fp = failpid(cs, id);

	return fp && fp->fp_pid == pid && fp->fp_inc &&
	       !dlmd_fence_is_done(cs->cs_d, id) &&
	       !(dlmd_fence_marks(cs->cs_d, id) & DLMD_FENCE_MARK_FIRM);
}

/*
 * RESTARTED WHILE APART, whose side?  The nodes that came back may have
 * been one side holding a majority, on which node id's dlmd stopped (or
 * died) and started again in plain sight: that side handled it (a clean
 * stop needs nothing; a death with lockspaces is a dlmd failure there)
 * and removes us at this merge (our state is stale to it): we must not
 * mark a healthy node of the majority to be fenced.  Or several
 * minority sides came back at once (the three-way split), none of which
 * saw the old process go: then it must be fenced, or every lockspace it
 * was in waits for ever.  Our own view cannot tell the two apart (we saw
 * every one of them leave at once).  So when the side that came back
 * holds a majority the decision waits for the sync of this merge
 * (apart_defer): each member's ANNOUNCE of it vouches for the processes
 * its sender verified before the merge (VOUCHING); those that vouch for
 * the new process of id shared its side.  If they and id hold a majority,
 * that side removes us (its corosync_cfg_kill_node is ordered before its
 * ANNOUNCE): nothing is marked; else, at the sync's end, id is marked as
 * before (apart_decide).  A dlmd that died while apart has no process
 * anyone can vouch for: it is marked at the sync's end, which a majority
 * side that removes us comes before.
 */
static const struct cs_apart *apart_find(const struct dlmd_cluster *cs,
					  uint32_t id)
{
	for (unsigned int i = 0; i < cs->cs_napart; i++)
		if (cs->cs_apart[i].ap_id == id)
			return &cs->cs_apart[i];
	return NULL;
}

static bool apart_deferred(const struct dlmd_cluster *cs, uint32_t id)
{
	return apart_find(cs, id) != NULL;
}

static void apart_defer(struct dlmd_cluster *cs, uint32_t id, uint32_t pid,
			uint32_t view, uint64_t inc)
{
	if (apart_deferred(cs, id))
		return;
	if (cs->cs_napart == DLM_MAX_NODES) {
		/* (never: one per node) marked now, as before; a process
		 * back under its old pid is the same one until a message of
		 * another incarnation says otherwise (reincarnated) */
		if (!inc)
			dlmd_fence_node_failed(cs->cs_d, id, DLMD_FAIL_RESTARTED);
		return;
	}
	cs->cs_apart[cs->cs_napart++] = (struct cs_apart){ id, pid, view, inc,
							   false };
	if (inc) {
		log_debug("node %u is back after a split under the pid it failed "
			  "with (%u), with a side that holds a majority: if another "
			  "dlmd speaks under it, whether that side saw the restart "
			  "is decided at this sync's end (PID REUSE)", id, pid);
		return;
	}
	log_notice("node %u is back after a split without the dlmd that failed "
		   "(pid %u), with a side that holds a majority: whether that "
		   "side saw its dlmd go (and removes us) or it must be fenced "
		   "is decided at this sync's end (RESTARTED WHILE APART)", id,
		   failpid(cs, id) ? failpid(cs, id)->fp_pid : 0);
}

static void apart_drop(struct dlmd_cluster *cs, unsigned int i)
{
	uint32_t id = cs->cs_apart[i].ap_id;

	cs->cs_apart[i] = cs->cs_apart[--cs->cs_napart];
	for (unsigned int k = 0; k < cs->cs_napwit;)
		if (cs->cs_apwit[k].aw_id == id)
			cs->cs_apwit[k] = cs->cs_apwit[--cs->cs_napwit];
		else
			k++;
}

/* An ANNOUNCE of view 'view' from node 'from' vouches for vouch[0..n). */
static void apart_vouched(struct dlmd_cluster *cs, uint32_t from, uint32_t view,
			  const struct cm_vouch *vouch, uint32_t n)
{
	for (unsigned int i = 0; i < cs->cs_napart;) {
		const struct cs_apart *ap = &cs->cs_apart[i];
		uint32_t side[DLM_MAX_NODES];
		unsigned int ns = 0;
		bool listed = false;

		/* (under the old pid: only a voucher that verified another
		 * incarnation than the one that failed saw a restart) */
		for (uint32_t k = 0; k < n; k++)
			if (vouch[k].v_id == ap->ap_id && vouch[k].v_pid == ap->ap_pid &&
			    (!ap->ap_inc || vouch[k].v_inc != ap->ap_inc))
				listed = true;
		if (!ap->ap_pid || ap->ap_view != view || from == ap->ap_id ||
		    !listed || ap->ap_held || cs->cs_napwit == DLM_MAX_NODES) {
			i++;
			continue;
		}
		cs->cs_apwit[cs->cs_napwit++] = (struct cs_apwit){ ap->ap_id, from };
		side[ns++] = ap->ap_id;
		for (unsigned int k = 0; k < cs->cs_napwit; k++)
			if (cs->cs_apwit[k].aw_id == ap->ap_id &&
			    !id_in(side, ns, cs->cs_apwit[k].aw_wit))
				side[ns++] = cs->cs_apwit[k].aw_wit;
		if (!majority_side(cs, side, ns)) {
			i++;
			continue;
		}
		log_notice("node %u's dlmd restarted on a side that held a "
			   "majority (node %u saw its new process before the "
			   "merge): that side handled it and removes us; not "
			   "fenced by us (RESTARTED WHILE APART)", ap->ap_id, from);
		cs->cs_apart[i].ap_held = true;	/* (PID REUSE: reincarnated) */
		i++;
	}
}

/*
 * RESTARTED WHILE APART, the order of the removal.  A deferral rests on
 * the majority side removing us before our sync ends; but its
 * corosync_cfg_kill_node is no CPG message, and our corosync may still
 * deliver the rest of the sync (its ANNOUNCEs) before it exits: our sync
 * then ends first, and we, the stale side, marked a node of the majority
 * whose dlmd stopped there in plain sight.  What the sync itself shows:
 * a member of that side that holds a lockspace sends a record of it
 * (FORGIVING A SPLIT), which lists this very process (our pid and
 * incarnation) as failed with FIRM: a failure seen from a majority (or
 * the tie-breaker half), a removal.  Then that side saw us fail; it
 * removes or fences us, and marks for itself whatever its view needs:
 * ours is stale, and we mark nothing.  A minority never sends FIRM for a
 * node-down (several minority sides merging, the case a deferral must
 * still mark, send none).  True: such a record came; *by, its sender,
 * *ls its lockspace.
 */
static bool apart_stale_us(const struct dlmd_cluster *cs, uint32_t *by,
			   const char **ls)
{
	for (unsigned int b = 0; b < LS_HASH; b++) {
		for (const struct cs_lsent *le = cs->cs_ls[b]; le; le = le->le_next) {
			for (unsigned int i = 0; i < le->le_nfev; i++) {
				const struct cs_fev *f = &le->le_fev[i];

				if (f->fv_id != cs->cs_d->d_nodeid ||
				    f->fv_pid != cs->cs_self_pid ||
				    f->fv_inc != cs->cs_inc ||
				    !(f->fv_flags & CM_FAILED_FIRM) ||
				    f->fv_from == cs->cs_d->d_nodeid)
					continue;
				*by = f->fv_from;
				*ls = le->le_name;
				return true;
			}
		}
	}
	return false;
}

/* Node id failed out of a lockspace of the table, or a record of this
 * sync lists it: its dlmd had locks that fencing protects.  One that was
 * in none needs nothing (DAEMON FAILURE: a dlmd without lockspaces). */
static bool failed_with_ls(const struct dlmd_cluster *cs, uint32_t id)
{
	for (unsigned int b = 0; b < LS_HASH; b++) {
		for (const struct cs_lsent *le = cs->cs_ls[b]; le; le = le->le_next) {
			if (id_in(le->le_failed, le->le_nfailed, id))
				return true;
			for (unsigned int i = 0; i < le->le_nfev; i++)
				if (le->le_fev[i].fv_id == id)
					return true;
		}
	}
	return false;
}

/* The sync's end: what no majority side answered for is marked. */
static void apart_decide(struct dlmd_cluster *cs)
{
	const char *ls = NULL;
	uint32_t by = 0;

	if (cs->cs_napart && apart_stale_us(cs, &by, &ls)) {
		log_notice("node %u's record of lockspace %s names this dlmd "
			   "failed, seen from a side that held a majority (or a "
			   "removal): that side removes us and decides what the "
			   "nodes back without their dlmd need; we mark none of "
			   "them (RESTARTED WHILE APART)", by, ls);
		while (cs->cs_napart)
			apart_drop(cs, 0);
		return;
	}
	while (cs->cs_napart) {
		struct cs_apart ap = cs->cs_apart[0];
		uint32_t id = ap.ap_id;
		const struct cs_failpid *fp = failpid(cs, id);
		const struct cs_daemon *dm = dm_find(cs, id, ap.ap_pid);

		apart_drop(cs, 0);
		if (ap.ap_held || !fp || !fp->fp_pid ||
		    dlmd_fence_is_done(cs->cs_d, id) ||
		    (dlmd_fence_marks(cs->cs_d, id) & DLMD_FENCE_MARK_FIRM))
			continue;
		/* PID REUSE: the process back under the old pid is the one
		 * that failed (its incarnation), or no longer a member */
		if (ap.ap_inc && (!dm || !dm->dm_inc || dm->dm_inc == ap.ap_inc))
			continue;
		if (!failed_with_ls(cs, id)) {
			log_notice("node %u is back without the dlmd that failed "
				   "(pid %u), which was in no lockspace: nothing to "
				   "fence it for (RESTARTED WHILE APART)", id,
				   fp->fp_pid);
			continue;
		}
		log_notice("node %u: no side that held a majority saw its dlmd "
			   "(pid %u) go while apart, and its old clients may hold "
			   "its locks: it is fenced, while in the view "
			   "(RESTARTED WHILE APART)", id, fp->fp_pid);
		dlmd_fence_node_failed(cs->cs_d, id, DLMD_FAIL_RESTARTED);
	}
}

/* ONE DLMD PER NODE ID.  At our first confchg, another process of our
 * node id that was a member before us, or joined with us and has the
 * lower pid, is a suspect (cs_dup_pids): a dlmd, and we stop, as soon as
 * a message of it verifies or a dlmd vouches for it; no dlmd, and we
 * stay, when a dlmd that can tell everybody does not (VOUCHING).  Every
 * second process of a node id that joins (one of that id was a member
 * before it, or joined with it with a lower pid) is logged.  False:
 * nothing stops us here any more (kept for the caller's shape). */
static bool dup_node_id(struct dlmd_cluster *cs, const struct cpg_address *members,
			size_t nmembers, const struct cpg_address *joined,
			size_t njoined)
{
	uint32_t me = cs->cs_d->d_nodeid, self = cs->cs_self_pid;

	if (!self) {
		/* our first confchg: our join is in it (see daemon_confchg_ls) */
		for (size_t i = 0; i < njoined; i++)
			if (joined[i].nodeid == me &&
			    (!self || joined[i].pid == (uint32_t)getpid()))
				self = joined[i].pid;
		for (size_t i = 0; self && i < nmembers; i++) {
			if (members[i].nodeid != me || members[i].pid == self ||
			    (!was_member(joined, njoined, me, members[i].pid) &&
			     members[i].pid > self))
				continue;
			log_warn("daemon group: another process of node %u (CPG "
				 "pid %u) is in the daemon group: a second dlmd of "
				 "this node, or a process that is no dlmd; we stop "
				 "if it is a dlmd (its message verifies, or a dlmd "
				 "vouches for it) and stay if a dlmd does not vouch "
				 "for it; until then we wait for it", me,
				 members[i].pid);
			if (cs->cs_ndup < DLM_MAX_NODES)
				cs->cs_dup_pids[cs->cs_ndup++] = members[i].pid;
		}
	}
	for (size_t i = 0; i < njoined; i++) {
		uint32_t id = joined[i].nodeid, pid = joined[i].pid;

		if (id == me && pid == self)
			continue;
		for (size_t k = 0; k < nmembers; k++) {
			if (members[k].nodeid != id || members[k].pid == pid ||
			    (!was_member(joined, njoined, id, members[k].pid) &&
			     members[k].pid > pid))
				continue;
			/* it has sealed nothing: a second dlmd or a process
			 * that is no dlmd (a stranger); a real second dlmd is
			 * logged at err once a message of it verifies
			 * (dup_first, deliver) */
			log_warn("daemon group: a process of node %u (CPG pid %u) "
				 "that has not identified itself joined beside %s "
				 "(CPG pid %u): a second dlmd of the node (it stops "
				 "at its first sealed message) or a process that is "
				 "no dlmd", id, pid,
				 id == me ? "ours" : "the node's first",
				 members[k].pid);
			break;
		}
	}
	return false;
}

static void daemon_confchg(cpg_handle_t h, const struct cpg_name *group,
			   const struct cpg_address *members, size_t nmembers,
			   const struct cpg_address *left, size_t nleft,
			   const struct cpg_address *joined, size_t njoined)
{
	struct dlmd_cluster *cs = NULL;
	uint32_t ids[DLM_MAX_NODES] = { 0 };	/* (gcc: maybe uninitialized) */
	uint32_t back[DLM_MAX_NODES];
	unsigned int n = 0, nback = 0;
	char m[IDS_TEXT_LEN];
	bool majority;

	if (cpg_context_get(h, (void **)&cs) != CS_OK || !cs || cs->cs_dup_stop)
		return;
	/* the nodes that came back (RESTARTED WHILE APART: their side) */
	for (size_t i = 0; i < njoined && nback < DLM_MAX_NODES; i++)
		if (joined[i].reason == CPG_REASON_NODEUP &&
		    joined[i].nodeid != cs->cs_d->d_nodeid &&
		    !id_in(back, nback, joined[i].nodeid))
			back[nback++] = joined[i].nodeid;
	if (dup_node_id(cs, members, nmembers, joined, njoined)) {
		cs->cs_dup_stop = true;
		cs->cs_d->d_exit_code = 1;
		qb_loop_stop(cs->cs_d->d_loop);
		return;
	}
	/* the node ids of the processes that count (dmembers_update): a
	 * joiner has sealed nothing yet, unless it merged back with the
	 * seal we kept */
	for (size_t i = 0; i < nmembers && n < DLM_MAX_NODES; i++)
		if (!id_in(ids, n, members[i].nodeid) &&
		    member_counts(cs, &members[i], joined, njoined))
			ids[n++] = members[i].nodeid;
	memcpy(cs->cs_dmembers, ids, n * sizeof(ids[0]));
	cs->cs_ndmembers = n;
	/* UNREACHABLE PEERS: reports start over in every configuration */
	cs->cs_nunr = 0;
	cs->cs_ncut = 0;
	cs->cs_nunr_out = 0;
	majority = majority_side(cs, ids, n);
	fmt_ids(m, sizeof(m), ids, n);
	log_info("daemon group members [%s]", m);
	/* our first confchg: the daemons there before us are incarnations
	 * fencing sees join here (fence.c: one that our fence command
	 * killed, leaving afterwards, is not fenced again) */
	if (!cs->cs_self_pid)
		for (size_t i = 0; i < nmembers; i++)
			dlmd_fence_node_joined(cs->cs_d, members[i].nodeid);
	for (size_t i = 0; i < njoined; i++) {
		uint32_t id = joined[i].nodeid;
		char why[128];

		if (id == cs->cs_d->d_nodeid)
			continue;
		/* a node whose lowcomms state we kept: another process (a
		 * restart) starts afresh; the same one merging back keeps it */
		if (id_in(cs->cs_reset_later, cs->cs_nreset_later, id) &&
		    (joined[i].reason != CPG_REASON_NODEUP || !failpid(cs, id) ||
		     failpid(cs, id)->fp_pid != joined[i].pid))
			comms_reset(cs, id);
		dlmd_fence_node_joined(cs->cs_d, id);
		if (joined[i].reason == CPG_REASON_NODEUP &&
		    id_in(cs->cs_lost, cs->cs_nlost, id) &&
		    dlmd_fence_killed(cs->cs_d, id)) {
			/* fenced for real since: a new incarnation whose
			 * corosync merged with ours */
			log_info("node %u is back after it was fenced", id);
		} else if (joined[i].reason == CPG_REASON_NODEUP &&
			   id_in(cs->cs_lost, cs->cs_nlost, id)) {
			/* A split healed: the node we lost comes back with
			 * the state it kept while cut off (its locks, its
			 * transport sequence); it never merges. */
			snprintf(why, sizeof(why), "dlmd: node %u merged back after "
				 "a split; its state is stale", id);
			remove_node(cs, id, why);
			/* its failure carries DLMD_FAIL_MAJORITY: it is fenced
			 * even while still in the view */
		} else if (joined[i].reason == CPG_REASON_NODEUP &&
			   restarted_apart(cs, id, members, nmembers) &&
			   majority_side(cs, back, nback)) {
			/* ... unless the side that came back held a majority
			 * and saw it restart (apart_vouched) */
			apart_defer(cs, id, joined[i].pid,
				    view_of(members, nmembers), 0);
		} else if (joined[i].reason == CPG_REASON_NODEUP &&
			   restarted_apart(cs, id, members, nmembers)) {
			/* RESTARTED WHILE APART (essay): the process that
			 * failed is gone, its clients may not be */
			log_notice("node %u merged back after a split with another "
				   "dlmd than the one that failed (pid %u is gone: "
				   "its dlmd restarted or died while apart, and its "
				   "old clients may hold its locks): it is fenced, "
				   "while in the view", id, failpid(cs, id)->fp_pid);
			dlmd_fence_node_failed(cs->cs_d, id, DLMD_FAIL_RESTARTED);
		} else if (joined[i].reason == CPG_REASON_NODEUP &&
			   back_same_pid(cs, id, joined[i].pid) &&
			   majority_side(cs, back, nback)) {
			/* PID REUSE: the same process, or a new one whose
			 * restart a majority side may have seen */
			apart_defer(cs, id, joined[i].pid,
				    view_of(members, nmembers),
				    failpid(cs, id)->fp_inc);
			log_info("node %u merged back after a split that we saw "
				 "from a minority side: a majority side removes "
				 "it, or the sync decides (FORGIVING A SPLIT)", id);
		} else if (joined[i].reason == CPG_REASON_NODEUP) {
			log_info("node %u merged back after a split that we saw "
				 "from a minority side: a majority side removes "
				 "it, or the sync decides (FORGIVING A SPLIT)", id);
		} else if (joined[i].reason == CPG_REASON_JOIN &&
			   !dlmd_fence_is_done(cs->cs_d, id)) {
			/* a new dlmd of a node whose failure is not fenced
			 * yet: not a merge (fence.c, DLMD_FAIL_RESTARTED) */
			dlmd_fence_node_failed(cs->cs_d, id, DLMD_FAIL_RESTARTED);
		}
		id_remove(cs->cs_lost, &cs->cs_nlost, id);
		id_remove(cs->cs_down, &cs->cs_ndown, id);
		id_remove(cs->cs_gap, &cs->cs_ngap, id);
	}
	/* RESTARTED WHILE APART: a node whose last failure is done, and
	 * whose processes that fail now never sealed a message (a dlmd that
	 * has not spoken yet, or no dlmd), failed with no process we know:
	 * the pid kept from its earlier dlmd is not the one that failed
	 * (daemon_confchg_ls keeps only a sealed one's), and a merge back
	 * of the same process must not take it for a restart */
	for (size_t i = 0; i < nleft; i++) {
		uint32_t id = left[i].nodeid;
		bool unsealed = true;

		if (id == cs->cs_d->d_nodeid ||
		    left[i].reason != CPG_REASON_NODEDOWN || !failpid(cs, id) ||
		    !failpid(cs, id)->fp_pid || !dlmd_fence_is_done(cs->cs_d, id))
			continue;
		for (size_t k = 0; k < nleft; k++) {
			const struct cs_daemon *o = dm_find(cs, left[k].nodeid,
							    left[k].pid);

			if (left[k].nodeid == id && (!o || !pending(o)))
				unsealed = false;
		}
		if (unsealed) {
			log_debug("node %u failed with no process that sealed a "
				  "message (pid %u was an earlier one)", id,
				  failpid(cs, id)->fp_pid);
			failpid_set(cs, id, 0, 0, false);
		}
	}
	for (size_t i = 0; i < nleft; i++) {
		uint32_t id = left[i].nodeid;
		const struct cs_node *nd = find_node(cs, id);
		const char *p[LC_MAX_ADDRS];
		bool still;

		if (id == cs->cs_d->d_nodeid)
			continue;
		id_remove(cs->cs_gap, &cs->cs_ngap, id);
		if (left[i].reason == CPG_REASON_NODEDOWN) {
			dlmd_fence_node_failed(cs->cs_d, id, majority ?
					       DLMD_FAIL_MAJORITY :
					       2 * n == conf_nnodes(cs) ?
					       DLMD_FAIL_EVEN_LOSER : DLMD_FAIL_NODE);
			if (majority && !id_in(cs->cs_lost, cs->cs_nlost, id) &&
			    cs->cs_nlost < DLM_MAX_NODES)
				cs->cs_lost[cs->cs_nlost++] = id;
			else if (!majority && !id_in(cs->cs_down, cs->cs_ndown, id) &&
				 cs->cs_ndown < DLM_MAX_NODES)
				cs->cs_down[cs->cs_ndown++] = id;
		}
		/* a node still in the group (another dlmd of it) keeps it:
		 * lowcomms cannot tell which dlmd its known epoch is, and a
		 * reset of the live one's would lose frames; a paused new
		 * epoch then ends through UNREACHABLE PEERS */
		still = false;
		for (size_t k = 0; k < nmembers; k++) {
			const struct cs_daemon *o;

			if (members[k].nodeid != id)
				continue;
			o = dm_find(cs, id, members[k].pid);
			if (!o || !pending(o))
				still = true;	/* not one we know is nobody */
		}
		if (!still && nd && left[i].reason == CPG_REASON_NODEDOWN &&
		    !dlmd_fence_is_done(cs->cs_d, id) &&
		    !dlmd_fence_marks(cs->cs_d, id)) {
			/* seen from a minority side: it may merge back as the
			 * same process and be forgiven (FORGIVING A SPLIT), and
			 * then the frames in flight with it must not be lost;
			 * kept until it is fenced or comes back as another */
			if (!id_in(cs->cs_reset_later, cs->cs_nreset_later, id) &&
			    cs->cs_nreset_later < DLM_MAX_NODES)
				cs->cs_reset_later[cs->cs_nreset_later++] = id;
			log_info("comms: node %u left node-down, seen from a "
				 "minority side: its connection state is kept until "
				 "it is fenced or merges back", id);
		} else if (!still && nd) {
			id_remove(cs->cs_reset_later, &cs->cs_nreset_later, id);
			dlmd_comms_node_reset(cs->cs_d, id, node_addr_ptrs(nd, p),
					      nd->n_naddrs);
		}
		/* a claim on fencing it held ends here, for every member */
		if (!still)
			dlmd_fence_member_left(cs->cs_d, id);
	}
	daemon_confchg_ls(cs, members, nmembers, left, nleft, joined, njoined);
	out_flush(cs);	/* what waited for our first confchg (out_flush) */
	kick(cs);
}

/*
 * RESTARTED WHILE APART, its dlmd not back yet: node id, whose failure
 * (a minority's node-down, not FIRM, not fenced) names a process, is in
 * the totem ring again while no process of it is in the daemon group.
 * The ring comes after the group's confchg of the same change (above),
 * which brought back every member of the other side: the process that
 * failed left the group on its side, dead or gone, and its clients may
 * hold its locks.
 */
static bool died_apart(const struct dlmd_cluster *cs, uint32_t id)
{
	const struct cs_failpid *fp = failpid(cs, id);

	if (!fp || !fp->fp_pid || dlmd_fence_is_done(cs->cs_d, id) ||
	    (dlmd_fence_marks(cs->cs_d, id) & DLMD_FENCE_MARK_FIRM))
		return false;
	for (unsigned int i = 0; i < cs->cs_ndm; i++)
		if (cs->cs_dm[i].dm_id == id && !pending(&cs->cs_dm[i]))
			return false;
	return true;
}

/*
 * The totem ring of the daemon group's connection: corosync delivers it
 * after the group's confchg of the same change.  A node lost while our
 * side of the daemon group was no majority may still have been lost from
 * a majority ring (nodes whose corosync runs without a dlmd count there):
 * if this ring no longer has it and holds a strict majority of the
 * configured nodes, the failure is marked as seen from a majority.  A
 * ring that has it again (a fast merge) decides nothing.  Rings and
 * daemon groups of two disjoint sides are disjoint, so this keeps the
 * rule symmetric-safe (SPLIT AND MERGE).
 */
static void daemon_totem_confchg(cpg_handle_t h, struct cpg_ring_id ring,
				 uint32_t n, const uint32_t *list)
{
	struct dlmd_cluster *cs = NULL;
	uint32_t back[DLM_MAX_NODES];
	unsigned int nback = 0;

	if (cpg_context_get(h, (void **)&cs) != CS_OK || !cs)
		return;
	/* the nodes that came back: in this ring, not in the last one */
	for (uint32_t i = 0; i < n && nback < DLM_MAX_NODES; i++)
		if (list[i] != cs->cs_d->d_nodeid &&
		    !id_in(cs->cs_ring, cs->cs_nring, list[i]))
			back[nback++] = list[i];
	cs->cs_nring = 0;
	for (uint32_t i = 0; i < n && cs->cs_nring < DLM_MAX_NODES; i++)
		cs->cs_ring[cs->cs_nring++] = list[i];
	for (unsigned int i = 0; i < cs->cs_ndown;) {
		uint32_t id = cs->cs_down[i];

		if (id_in(list, n, id)) {
			id_remove(cs->cs_down, &cs->cs_ndown, id);
			if (died_apart(cs, id) && cs->cs_syncing &&
			    majority_side(cs, back, nback)) {
				/* the side that came back held a majority: it
				 * may have seen the dlmd go, and removes us */
				apart_defer(cs, id, 0, cs->cs_view, 0);
			} else if (died_apart(cs, id)) {
				log_notice("node %u is back in the ring after a "
					   "split without the dlmd that failed (pid "
					   "%u; no dlmd of it merged back: it died "
					   "while apart, and its clients may hold its "
					   "locks): it is fenced, while in the view",
					   id, failpid(cs, id)->fp_pid);
				dlmd_fence_node_failed(cs->cs_d, id,
						       DLMD_FAIL_RESTARTED);
			}
			continue;
		}
		if (!majority_side(cs, list, n)) {
			i++;
			continue;
		}
		log_notice("node %u was lost from a ring of %u of %u nodes: a "
			   "majority side%s", id, n, conf_nnodes(cs),
			   2 * n == conf_nnodes(cs) ? " (the half with the "
			   "tie-breaker node)" : "");
		if (!dlmd_fence_is_done(cs->cs_d, id))
			dlmd_fence_node_failed(cs->cs_d, id, DLMD_FAIL_MAJORITY);
		if (!id_in(cs->cs_lost, cs->cs_nlost, id) &&
		    cs->cs_nlost < DLM_MAX_NODES)
			cs->cs_lost[cs->cs_nlost++] = id;
		id_remove(cs->cs_down, &cs->cs_ndown, id);
	}
}

void dlmd_cluster_frames_lost(struct dlmd *d, uint32_t peer)
{
	struct dlmd_cluster *cs = d->d_cluster;
	uint32_t victim;
	char why[128];

	if (!cs || !cs->cs_corosync || peer == d->d_nodeid)
		return;
	if (!id_in(cs->cs_dmembers, cs->cs_ndmembers, peer)) {
		log_warn("comms: frames from node %u lost, but its daemon is not "
			 "in the cluster (its transport state is reset when it "
			 "comes back)", peer);
		return;
	}
	if (id_in(cs->cs_gap, cs->cs_ngap, peer))
		return;		/* acted on already */
	if (cs->cs_ngap < DLM_MAX_NODES)
		cs->cs_gap[cs->cs_ngap++] = peer;
	/* Both ends may notice; both pick the same node: the higher id. */
	victim = peer > d->d_nodeid ? peer : d->d_nodeid;
	log_err("comms: frames between node %u and us were lost while both are "
		"members: the lock state between us cannot be trusted; node %u "
		"(the higher id) leaves the cluster, is fenced, and the others "
		"recover", peer, victim);
	snprintf(why, sizeof(why), "dlmd: frames lost between nodes %u and %u",
		 d->d_nodeid, peer);
	remove_node(cs, victim, why);
	/* and fence it at once, without waiting for it to leave the view */
	if (victim != d->d_nodeid)
		dlmd_fence_node_failed(d, victim, DLMD_FAIL_REMOVED);
}

/* ------------------------------------------------------------------ */
/* UNREACHABLE PEERS                                                   */
/* ------------------------------------------------------------------ */

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* How long a lockspace change has waited for member id's START: the
 * longest over our lockspaces that sent theirs (CL_STARTED) and lack its
 * (0: none).  A dlmd that does not run sends none, and a change needs
 * nothing else from it: lowcomms has nothing queued for it, so the wait
 * below saw nothing, and the change waited for ever ("wait members
 * (start from 1)": a clean stop or a failure of a third node while
 * node 1's dlmd was SIGSTOPped; tests/test-cluster-linkcut.sh step 4). */
static uint64_t start_wait_ms(struct dlmd *d, uint32_t id, uint64_t now)
{
	uint64_t w = 0;

	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next) {
		struct dlmd_cluster_ls *cl = dl->dl_cluster;
		int idx;

		if (!cl || cl->cl_state != CL_STARTED || !cl->cl_started_ms ||
		    now < cl->cl_started_ms)
			continue;
		idx = member_index(cl, id);
		if (idx >= 0 && !cl->cl_got[idx] && now - cl->cl_started_ms > w)
			w = now - cl->cl_started_ms;
	}
	return w;
}

/* How long the daemons' sync has waited for daemon id's ANNOUNCE (0: it
 * has announced, or no sync runs). */
static uint64_t sync_wait_ms(struct dlmd_cluster *cs, uint32_t id, uint64_t now)
{
	if (!cs->cs_syncing || now < cs->cs_sync_since)
		return 0;
	for (unsigned int i = 0; i < cs->cs_ndm; i++)
		if (cs->cs_dm[i].dm_id == id)
			return cs->cs_dm[i].dm_announced ? 0 : now - cs->cs_sync_since;
	return 0;
}

/* Every STALL_TICK_MS: the members our frames have not got through to
 * for peer_unreachable_secs, and those whose START a lockspace change
 * has waited for as long (start_wait_ms).  A set that is not empty goes out every
 * tick (a repeat is what lets one end's report decide: below); one that
 * became empty goes out once. */
static void unreach_tick(struct dlmd_cluster *cs)
{
	struct dlmd *d = cs->cs_d;
	uint64_t limit = unreach_limit(cs);
	static struct cm_unreach ur;
	unsigned char buf[CM_MAX_LEN];
	struct cm_hdr h;
	size_t len;
	bool same;

	if (!cs->cs_corosync || !limit)
		return;
	memset(&ur, 0, sizeof(ur));
	for (unsigned int i = 0; i < cs->cs_ndmembers; i++) {
		uint32_t id = cs->cs_dmembers[i];
		uint64_t w, sw;

		if (id == d->d_nodeid)
			continue;
		w = dlmd_comms_wait_ms(d, id);
		sw = cs->cs_syncing ? sync_wait_ms(cs, id, dlmd_now_ms())
				    : start_wait_ms(d, id, dlmd_now_ms());
		if (w < limit && sw < limit)
			continue;
		ur.ur_ids[ur.ur_count++] = id;
		if (id_in(cs->cs_unr_mine, cs->cs_nunr_mine, id))
			continue;
		if (w >= limit)
			log_err("comms: nothing we sent node %u has been acknowledged "
				"(or its new epoch has been paused) for %llu s "
				"while corosync keeps it a member: its dlmd is "
				"unreachable from here (reported to the daemon "
				"group)", id, (unsigned long long)(w / 1000));
		else
			log_err("daemon group: node %u has not sent its %s for "
				"%llu s while corosync keeps it a member: its dlmd "
				"%s (reported to the daemon group)", id,
				cs->cs_syncing ? "ANNOUNCE of the daemons' sync"
					       : "START of a lockspace change",
				(unsigned long long)(sw / 1000),
				refused_of(cs, id) ? "speaks another CPG protocol "
				"(refused above)" : "does not run");
	}
	qsort(ur.ur_ids, ur.ur_count, sizeof(ur.ur_ids[0]), cmp_u32);
	for (unsigned int i = 0; i < cs->cs_nunr_mine; i++) {
		uint32_t id = cs->cs_unr_mine[i];

		if (id_in(ur.ur_ids, ur.ur_count, id))
			continue;
		if (id_in(cs->cs_dmembers, cs->cs_ndmembers, id))
			log_notice("comms: node %u is reachable again", id);
		else
			log_info("comms: node %u, which we could not reach, "
				 "left the daemon group", id);
	}
	same = ur.ur_count == cs->cs_nunr_mine &&
	       !memcmp(ur.ur_ids, cs->cs_unr_mine, ur.ur_count * sizeof(uint32_t));
	memcpy(cs->cs_unr_mine, ur.ur_ids, ur.ur_count * sizeof(uint32_t));
	cs->cs_nunr_mine = ur.ur_count;
	if (same && !ur.ur_count)
		return;
	h = out_hdr(cs, 0);
	len = dlmd_cm_unreach_encode(buf, &h, &ur);
	if (len)
		out_queue(cs, buf, len);
}

static struct cs_unr *unr_of(struct dlmd_cluster *cs, uint32_t id)
{
	for (unsigned int i = 0; i < cs->cs_nunr; i++)
		if (cs->cs_unr[i].ur_from == id)
			return &cs->cs_unr[i];
	return NULL;
}

/* Is the link between a and b reported cut (by either end)? */
static bool unr_cut(struct dlmd_cluster *cs, uint32_t a, uint32_t b)
{
	const struct cs_unr *u = unr_of(cs, a), *v = unr_of(cs, b);

	return (u && id_in(u->ur_ids, u->ur_n, b)) ||
	       (v && id_in(v->ur_ids, v->ur_n, a));
}

/* The members node x is reported cut from, either way. */
static unsigned int unr_degree(struct dlmd_cluster *cs, uint32_t x)
{
	unsigned int n = 0;

	for (unsigned int i = 0; i < cs->cs_ndmembers; i++)
		if (cs->cs_dmembers[i] != x && unr_cut(cs, x, cs->cs_dmembers[i]))
			n++;
	return n;
}

/* Node v is chosen: every member logs it and has it fenced (as removed:
 * also while corosync still lists it); the lowest other member removes
 * it from the cluster. */
static void unreach_remove(struct dlmd_cluster *cs, const struct cs_cut *cu,
			   uint32_t v, unsigned int dv, unsigned int dother,
			   const char *rule)
{
	struct dlmd *d = cs->cs_d;
	uint32_t other = v == cu->cu_a ? cu->cu_b : cu->cu_a, lowest = 0;
	char why[128];

	cs->cs_unr_out[cs->cs_nunr_out++] = v;
	log_err("daemon group: dlmd on nodes %u and %u cannot reach each other "
		"(reported %u time%s, peer_unreachable_secs %u) while corosync "
		"keeps both: node %u (cut off from %u member%s, node %u from %u%s) "
		"leaves the cluster, is fenced, and the others recover",
		cu->cu_a, cu->cu_b, cu->cu_seen, cu->cu_seen == 1 ? "" : "s",
		d->d_cfg.cf_peer_unreachable_secs, v, dv, dv == 1 ? "" : "s",
		other, dother, rule);
	if (v != d->d_nodeid)
		dlmd_fence_node_failed(d, v, DLMD_FAIL_REMOVED);
	for (unsigned int i = 0; i < cs->cs_ndmembers; i++) {
		uint32_t id = cs->cs_dmembers[i];

		if (id != v && (!lowest || id < lowest))
			lowest = id;
	}
	if (lowest != d->d_nodeid)
		return;
	snprintf(why, sizeof(why), "dlmd: nodes %u and %u cannot reach each "
		 "other", cu->cu_a, cu->cu_b);
	remove_node(cs, v, why);
}

/* Does member a's last report name b? */
static bool unr_says(struct dlmd_cluster *cs, uint32_t a, uint32_t b)
{
	const struct cs_unr *u = unr_of(cs, a);

	return u && id_in(u->ur_ids, u->ur_n, b);
}

/* Cut pair c decides now: the node that goes in *v, the rule that chose
 * it in *rule (for the log).  Seen twice, and the ends' degrees differ
 * or both ends report it; with one end silent on a tie, only once the
 * other has reported it CUT_ONE_SIDED_SEEN times (UNREACHABLE PEERS). */
static bool cut_decides(struct dlmd_cluster *cs, const struct cs_cut *c,
			uint32_t *v, const char **rule)
{
	unsigned int da, db;
	bool ra, rb;

	if (c->cu_seen < 2)
		return false;
	da = unr_degree(cs, c->cu_a);
	db = unr_degree(cs, c->cu_b);
	if (da != db) {
		*v = da > db ? c->cu_a : c->cu_b;
		*rule = "";
		return true;
	}
	ra = unr_says(cs, c->cu_a, c->cu_b);
	rb = unr_says(cs, c->cu_b, c->cu_a);
	if (ra == rb) {
		*v = c->cu_b;
		*rule = "; the higher id";
		return true;
	}
	if (c->cu_seen < CUT_ONE_SIDED_SEEN)
		return false;
	*v = ra ? c->cu_b : c->cu_a;
	*rule = "; the end that reports nothing";
	return true;
}

/*
 * UNREACH from member 'from': its whole set replaces the one it sent
 * before; every pair it names is counted.  A pair seen twice (both ends
 * reported it, or one end repeated it a tick later, so that reports of
 * a wider cut have come in) whose ends are both still here decides
 * (cut_decides): the end cut off from more members goes; on a tie the
 * silent end if only one reports it (after CUT_ONE_SIDED_SEEN reports),
 * else the higher id.  Every
 * member sees the same reports in the same order since the same confchg
 * (and none before it: the table starts over at each), so every member
 * picks the same nodes at the same point.
 */
static void deliver_unreach(struct dlmd_cluster *cs, uint32_t from,
			    const unsigned char *body, size_t len)
{
	static struct cm_unreach ur;
	const char *why = NULL;
	struct cs_unr *u;

	if (dlmd_cm_unreach_decode(body, len, &ur, &why)) {
		log_warn("daemon group: malformed UNREACH from node %u dropped: %s",
			 from, why);
		return;
	}
	u = unr_of(cs, from);
	if (!u) {
		if (cs->cs_nunr >= DLM_MAX_NODES)
			return;
		u = &cs->cs_unr[cs->cs_nunr++];
		u->ur_from = from;
	}
	u->ur_n = 0;
	for (uint32_t i = 0; i < ur.ur_count; i++) {
		uint32_t id = ur.ur_ids[i];
		uint32_t a = id < from ? id : from, b = id < from ? from : id;
		unsigned int k;

		if (id == from || !id_in(cs->cs_dmembers, cs->cs_ndmembers, id))
			continue;
		u->ur_ids[u->ur_n++] = id;
		for (k = 0; k < cs->cs_ncut; k++)
			if (cs->cs_cut[k].cu_a == a && cs->cs_cut[k].cu_b == b)
				break;
		if (k == cs->cs_ncut) {
			if (cs->cs_ncut >= CS_CUT_MAX)
				continue;
			cs->cs_cut[cs->cs_ncut++] = (struct cs_cut){ a, b, 0 };
		}
		cs->cs_cut[k].cu_seen++;
	}
	log_info("daemon group: node %u reports %u member%s unreachable", from,
		 u->ur_n, u->ur_n == 1 ? "" : "s");
	/* healed pairs are forgotten: a later cut counts from 0 again */
	for (unsigned int k = 0; k < cs->cs_ncut;) {
		if (!unr_cut(cs, cs->cs_cut[k].cu_a, cs->cs_cut[k].cu_b))
			cs->cs_cut[k] = cs->cs_cut[--cs->cs_ncut];
		else
			k++;
	}
	/* pairs in ascending order, for the same choices everywhere */
	for (;;) {
		struct cs_cut *best = NULL;
		const char *rule = "", *r;
		uint32_t v = 0, w;

		for (unsigned int k = 0; k < cs->cs_ncut; k++) {
			struct cs_cut *c = &cs->cs_cut[k];

			if (id_in(cs->cs_unr_out, cs->cs_nunr_out, c->cu_a) ||
			    id_in(cs->cs_unr_out, cs->cs_nunr_out, c->cu_b) ||
			    !cut_decides(cs, c, &w, &r))
				continue;
			if (!best || c->cu_a < best->cu_a ||
			    (c->cu_a == best->cu_a && c->cu_b < best->cu_b)) {
				best = c;
				v = w;
				rule = r;
			}
		}
		if (!best || cs->cs_nunr_out >= DLM_MAX_NODES)
			break;
		unreach_remove(cs, best, v, unr_degree(cs, v),
			       unr_degree(cs, v == best->cu_a ? best->cu_b :
					  best->cu_a), rule);
	}
}

static int daemon_cpg_ready(int32_t fd, int32_t revents, void *data)
{
	struct dlmd_cluster *cs = data;

	if ((revents & (POLLHUP | POLLERR)) ||
	    cpg_dispatch(cs->cs_daemon_cpg, CS_DISPATCH_ALL) != CS_OK)
		lost_corosync(cs->cs_d, "daemon group");
	return 0;
}

/* Connect a CPG handle, join 'name'.  0 or -ENOTCONN. */
static int cpg_open(const char *name, cpg_deliver_fn_t deliver,
		    cpg_confchg_fn_t confchg, cpg_totem_confchg_fn_t totem,
		    void *ctx, int retries, cpg_handle_t *h, int *fd)
{
	cpg_model_v1_data_t model;
	struct cpg_name gn;
	cs_error_t e = CS_ERR_TRY_AGAIN;

	memset(&model, 0, sizeof(model));
	model.model = CPG_MODEL_V1;
	model.cpg_deliver_fn = deliver;
	model.cpg_confchg_fn = confchg;
	model.cpg_totem_confchg_fn = totem;
	model.flags = CPG_MODEL_V1_DELIVER_INITIAL_TOTEM_CONF;
	for (int i = 0; i < retries; i++) {
		e = cpg_model_initialize(h, CPG_MODEL_V1,
					 (cpg_model_data_t *)&model, ctx);
		if (e != CS_ERR_TRY_AGAIN)
			break;
		usleep(CS_RETRY_US);
	}
	if (e != CS_OK) {
		log_err("cpg for %s: %s", name, cs_str(e));
		return -ENOTCONN;
	}
	memset(&gn, 0, sizeof(gn));
	gn.length = (uint32_t)snprintf(gn.value, sizeof(gn.value), "%s", name);
	for (int i = 0; i < retries; i++) {
		e = cpg_join(*h, &gn);
		if (e != CS_ERR_TRY_AGAIN)
			break;
		if (i == CS_RETRIES)
			log_notice("cpg join %s: corosync still says try again; "
				   "retrying", name);
		usleep(CS_RETRY_US);	/* bounded; corosync asks us to retry */
	}
	if (e != CS_OK || cpg_fd_get(*h, fd) != CS_OK) {
		log_err("cpg join %s: %s", name, cs_str(e));
		cpg_finalize(*h);
		return -ENOTCONN;
	}
	return 0;
}

/* dlmd stops: send what is queued (the LEAVEs of the lockspaces just
 * released) before the daemon group is left, so that the others see
 * clean leaves.  Bounded: 1 s of "try again". */
static void out_drain(struct dlmd_cluster *cs)
{
	for (int i = 0; cs->cs_out && cs->cs_self_pid && i < CS_RETRIES; i++) {
		struct cs_out *o = cs->cs_out;
		struct iovec iov = { .iov_base = o->o_buf };
		cs_error_t e;

		out_seal(cs, o);
		iov.iov_len = o->o_len;
		e = cpg_mcast_joined(cs->cs_daemon_cpg, CPG_TYPE_AGREED, &iov, 1);

		if (e == CS_ERR_TRY_AGAIN) {
			usleep(CS_RETRY_US);	/* bounded; at stop only */
			continue;
		}
		if (e != CS_OK)
			break;
		cs->cs_out = o->o_next;
		cs->cs_nout--;
		free(o);
		i = 0;
	}
	if (cs->cs_out)
		log_warn("daemon group: %u message%s not sent at stop", cs->cs_nout,
			 cs->cs_nout == 1 ? "" : "s");
}

static void cpg_close(const char *name, cpg_handle_t h)
{
	struct cpg_name gn;
	cs_error_t e;

	memset(&gn, 0, sizeof(gn));
	gn.length = (uint32_t)snprintf(gn.value, sizeof(gn.value), "%s", name);
	for (int i = 0; i < CS_RETRIES; i++) {
		e = cpg_leave(h, &gn);
		if (e != CS_ERR_TRY_AGAIN)
			break;
		usleep(CS_RETRY_US);
	}
	cpg_finalize(h);
}

/* ------------------------------------------------------------------ */
/* interface                                                           */
/* ------------------------------------------------------------------ */

static int cmap_start(struct dlmd_cluster *cs)
{
	cs_error_t e = CS_ERR_TRY_AGAIN;
	int rv;

	for (int i = 0; i < CS_STARTUP_RETRIES; i++) {
		e = cmap_initialize(&cs->cs_cmap);
		if (e != CS_ERR_LIBRARY && e != CS_ERR_TRY_AGAIN)
			break;
		if (i == 0)
			log_notice("cmap: %s; retrying for up to %d s", cs_str(e),
				   CS_STARTUP_RETRIES * CS_RETRY_US / 1000000);
		usleep(CS_RETRY_US);	/* bounded; before the loop runs */
	}
	if (e != CS_OK) {
		log_err("cmap: %s (is corosync running?)", cs_str(e));
		cs->cs_cmap = 0;
		return -ENOTCONN;
	}
	/* a walk cut short (a reload under way): again, bounded (1 s) */
	for (int i = 0; i < 50; i++) {
		rv = read_nodelist(cs, cs->cs_cmap);
		if (rv != -EAGAIN)
			break;
		usleep(CS_RETRY_US);	/* bounded; before the loop runs */
	}
	if (rv == -EAGAIN)
		rv = -ENOTCONN;
	if (!rv)
		rv = read_local_id(cs, cs->cs_cmap);
	if (rv)
		return rv;
	totem_follow(cs);
	/* the pair we decide with until a CONFIG is delivered */
	cs->cs_conf_set = true;
	cs->cs_conf_nnodes = cs->cs_nnodes;
	cs->cs_conf_tiebreak = cs->cs_tiebreak;
	e = cmap_track_add(cs->cs_cmap, "nodelist.node.",
			   CMAP_TRACK_ADD | CMAP_TRACK_DELETE | CMAP_TRACK_MODIFY |
			   CMAP_TRACK_PREFIX, nodelist_notify, cs, &cs->cs_cmap_track);
	if (e != CS_OK || cmap_fd_get(cs->cs_cmap, &cs->cs_cmap_fd) != CS_OK) {
		log_warn("cmap: cannot track the nodelist (%s); nodes added later "
			 "need a dlmd restart", cs_str(e));
		cs->cs_cmap_fd = -1;
		return 0;
	}
	/* quorum.auto_tie_breaker and _node too, only to say that a change
	 * of them is not followed (TIE-BREAKER FIXED AT START) */
	e = cmap_track_add(cs->cs_cmap, "quorum.auto_tie_breaker",
			   CMAP_TRACK_ADD | CMAP_TRACK_DELETE | CMAP_TRACK_MODIFY |
			   CMAP_TRACK_PREFIX, nodelist_notify, cs,
			   &cs->cs_cmap_track_atb);
	if (e != CS_OK)
		log_warn("cmap: cannot track quorum.auto_tie_breaker (%s); a "
			 "change of it (which takes effect only when corosync "
			 "and dlmd restart) is not said", cs_str(e));
	/* what votequorum runs (TIE-BREAKER FIXED AT START) */
	e = cmap_track_add(cs->cs_cmap, "runtime.votequorum.atb_type",
			   CMAP_TRACK_ADD | CMAP_TRACK_DELETE | CMAP_TRACK_MODIFY,
			   nodelist_notify, cs, &cs->cs_cmap_track_atb_type);
	if (e != CS_OK)
		log_warn("cmap: cannot track runtime.votequorum.atb_type (%s); "
			 "it is read again with the nodelist", cs_str(e));
	return qb_loop_poll_add(cs->cs_d->d_loop, QB_LOOP_LOW, cs->cs_cmap_fd,
				POLLIN, cs, cmap_ready);
}

/* What fencing asks of the daemon group and the quorum (fence.c sits
 * below this file). */
static const struct dlmd_fence_up fence_up = {
	.fu_in_group = dlmd_cluster_in_daemon_group,
	.fu_may_claim = dlmd_cluster_may_claim,
	.fu_members = dlmd_cluster_daemon_members,
	.fu_quorate = dlmd_cluster_quorate,
	.fu_quorum_has = dlmd_cluster_quorum_has,
	.fu_send = dlmd_cluster_fence_send,
	.fu_changed = dlmd_cluster_fencing_changed,
};

/* What the transport reports (comms.c sits below this file). */
static const struct dlmd_comms_up comms_up = {
	.cu_flush = dlmd_flush,
	.cu_frames_lost = dlmd_cluster_frames_lost,
	.cu_cannot_hold = dlmd_cannot_hold,
};

/* SEALED MESSAGES: the CPG key, which comms.c derived from the cluster
 * key it read (the one read of key_file: plugin/comms.c, THE CLUSTER
 * KEY), and our incarnation. */
static int seal_init(struct dlmd_cluster *cs)
{
	const struct dlmd_config *cf = &cs->cs_d->d_cfg;
	unsigned char *key;

	for (int i = 0; !cs->cs_inc && i < 8; i++)
		if (getrandom(&cs->cs_inc, sizeof(cs->cs_inc), 0) !=
		    sizeof(cs->cs_inc))
			cs->cs_inc = 0;
	if (!cs->cs_inc) {
		log_err("daemon group: no random incarnation: %s; not starting",
			strerror(errno));
		return -EIO;
	}
	key = dlmd_comms_take_cpg_key(cs->cs_d);
	if (!key) {
		log_err("daemon group: no CPG key from comms; not starting");
		return -EINVAL;
	}
#ifndef DLMD_TEST_CPG_KEY_INLINE
	cs->cs_cpg_key = key;
#else
	memcpy(cs->cs_cpg_key, key, CM_KEY_LEN);
	lc_secret_free(key);
#endif
	if (cf->cf_crypto_none)
		log_warn("daemon group: crypto = none: its messages are sealed "
			 "with a key everyone knows; any process corosync lets "
			 "use CPG can speak for a node (README, threat model)");
	return 0;
}

int dlmd_cluster_init(struct dlmd *d, const struct dlmd_cluster_up *up)
{
	struct dlmd_cluster *cs = calloc(1, sizeof(*cs));
	const struct cs_node *self;
	const char *p[LC_MAX_ADDRS];
	int rv;

	if (!cs)
		return -ENOMEM;
	cs->cs_d = d;
	cs->cs_up = up;
	cs->cs_daemon_fd = -1;
	cs->cs_quorum_fd = -1;
	cs->cs_cmap_fd = -1;
	cs->cs_out_tail = &cs->cs_out;
	d->d_cluster = cs;
	if (d->d_cfg.cf_membership == DLMD_MEMBERSHIP_NONE) {
		d->d_nodeid = d->d_cfg.cf_nodeid;
		cs->cs_nodes[0].n_id = d->d_nodeid;
		cs->cs_nodes[0].n_naddrs = 1;
		snprintf(cs->cs_nodes[0].n_addrs[0], DLMD_ADDR_LEN, "127.0.0.1");
		cs->cs_nnodes = 1;
		cs->cs_quorate = true;
		log_notice("membership none: a one-node cluster, node id %u",
			   d->d_nodeid);
		return dlmd_fence_init(d, &fence_up);
	}
	cs->cs_corosync = true;
	rv = cmap_start(cs);
	if (rv)
		return rv;
	rv = dlmd_fence_init(d, &fence_up);
	if (rv)
		return rv;
	self = find_node(cs, d->d_nodeid);
	rv = dlmd_comms_init(d, self ? node_addr_ptrs(self, p) : NULL,
			     self ? self->n_naddrs : 0, &comms_up);
	if (rv)
		return rv;
	rv = seal_init(cs);
	if (rv)
		return rv;
	nodes_to_comms(cs);
	rv = quorum_start(cs);
	if (rv)
		return rv;
	rv = cpg_open(DAEMON_GROUP, daemon_deliver, daemon_confchg,
		      daemon_totem_confchg, cs,
		      CS_STARTUP_RETRIES, &cs->cs_daemon_cpg, &cs->cs_daemon_fd);
	if (rv) {
		cs->cs_daemon_fd = -1;
		return rv;
	}
	rv = qb_loop_poll_add(d->d_loop, QB_LOOP_HIGH, cs->cs_daemon_fd, POLLIN,
			      cs, daemon_cpg_ready);
	if (rv)
		return rv;
	if (qb_loop_timer_add(d->d_loop, QB_LOOP_LOW, STALL_TICK_MS * NS_PER_MS, cs,
			      watchdog_timer, &cs->cs_wd) == 0)
		cs->cs_wd_armed = true;
	log_notice("corosync: we are node %u of %u configured node%s; node %u "
		   "breaks even splits", d->d_nodeid, cs->cs_nnodes,
		   cs->cs_nnodes == 1 ? "" : "s", cs->cs_tiebreak);
	for (unsigned int i = 0; i < cs->cs_nnodes; i++)
		log_info("node %u address %s%s", cs->cs_nodes[i].n_id,
			 cs->cs_nodes[i].n_naddrs ? cs->cs_nodes[i].n_addrs[0] : "(none)",
			 cs->cs_nodes[i].n_naddrs > 1 ? " (and more rings)" : "");
	return 0;
}

void dlmd_cluster_fini(struct dlmd *d)
{
	struct dlmd_cluster *cs = d->d_cluster;

	if (!cs)
		return;
	if (cs->cs_kick_queued)
		qb_loop_timer_del(d->d_loop, cs->cs_kick_timer);
	if (cs->cs_retry_armed)
		qb_loop_timer_del(d->d_loop, cs->cs_retry);
	if (cs->cs_wd_armed)
		qb_loop_timer_del(d->d_loop, cs->cs_wd);
	if (cs->cs_corosync) {
		if (cs->cs_daemon_fd >= 0) {
			qb_loop_poll_del(d->d_loop, cs->cs_daemon_fd);
			out_drain(cs);
			/* stopping under clients with locks: no cpg_leave,
			 * so corosync tells the others our process went down
			 * (PROCDOWN), as if dlmd died: they fence this node
			 * before recovering its locks */
			if (d->d_stop_unclean)
				cpg_finalize(cs->cs_daemon_cpg);
			else
				cpg_close(DAEMON_GROUP, cs->cs_daemon_cpg);
		}
		if (cs->cs_quorum_fd >= 0) {
			qb_loop_poll_del(d->d_loop, cs->cs_quorum_fd);
			quorum_trackstop(cs->cs_quorum);
			quorum_finalize(cs->cs_quorum);
		}
		if (cs->cs_cmap_fd >= 0)
			qb_loop_poll_del(d->d_loop, cs->cs_cmap_fd);
		if (cs->cs_cmap)
			cmap_finalize(cs->cs_cmap);
	}
	dlmd_comms_fini(d);
	dlmd_fence_fini(d);
	while (cs->cs_out) {
		struct cs_out *o = cs->cs_out;

		cs->cs_out = o->o_next;
		free(o);
	}
	for (unsigned int b = 0; b < LS_HASH; b++) {
		while (cs->cs_ls[b]) {
			struct cs_lsent *le = cs->cs_ls[b];

			cs->cs_ls[b] = le->le_next;
			le_free(le);
		}
	}
	for (unsigned int i = 0; i < cs->cs_ndm; i++)
		free(cs->cs_dm[i].dm_ann);
	for (unsigned int i = 0; i < cs->cs_nbyid; i++)
		free(cs->cs_byid[i].bi_ls);
#ifndef DLMD_TEST_CPG_KEY_INLINE
	lc_secret_free(cs->cs_cpg_key);
#else
	explicit_bzero(cs->cs_cpg_key, sizeof(cs->cs_cpg_key));
#endif
	free(cs);
	d->d_cluster = NULL;
}

int dlmd_cluster_ls_join(struct dlmd *d, struct dlmd_ls *dl)
{
	struct dlmd_cluster *cs = d->d_cluster;
	struct dlmd_cluster_ls *cl = calloc(1, sizeof(*cl));
	struct cs_lsent *le;
	int rv;

	if (!cl)
		return -ENOMEM;
	cl->cl_d = d;
	cl->cl_dl = dl;
	cl->cl_lsid = dlm_core_ls_name_to_id(dl->dl_name);
	dl->dl_members[0] = d->d_nodeid;
	dl->dl_nmembers = 1;
	dl->dl_cluster = cl;
	if (!cs->cs_corosync) {
		/* one node: the lockspace runs as created */
		set_state(cl, CL_RUNNING, "one node: runs as created");
		cl->cl_ever_ran = true;
		return 0;
	}
	le = le_find(cs, dl->dl_name, true);
	if (!le) {
		rv = -ENOMEM;
		goto fail;
	}
	rv = send_ls(cs, CM_JOIN, dl->dl_name);
	if (rv) {
		le_tidy(cs, le);
		goto fail;
	}
	cl->cl_join_seq = cs->cs_seq;	/* send_ls's header took it */
	le->le_cl = cl;
	cl->cl_le = le;
	return 0;
fail:
	dl->dl_cluster = NULL;
	free(cl);
	return rv;
}

void dlmd_cluster_ls_created(struct dlmd *d, struct dlmd_ls *dl)
{
	struct dlmd_cluster_ls *cl = dl->dl_cluster;

	/* held until the first membership is agreed and recovered */
	if (cl && cl->cl_state != CL_RUNNING) {
		dlm_core_ls_stop(dl->dl_core);
		dlmd_metrics_ls_stopped(&dl->dl_metrics);
	}
}

bool dlmd_cluster_ls_ready(const struct dlmd *d, const struct dlmd_ls *dl)
{
	return dl->dl_cluster && dl->dl_cluster->cl_ever_ran;
}

void dlmd_cluster_ls_leave(struct dlmd *d, struct dlmd_ls *dl)
{
	struct dlmd_cluster *cs = d->d_cluster;
	struct dlmd_cluster_ls *cl = dl->dl_cluster;

	if (!cl)
		return;
	if (cs->cs_corosync) {
		struct cs_lsent *le = le_find(cs, dl->dl_name, false);

		if (le && le->le_cl == cl) {
			le->le_cl = NULL;
			le_tidy(cs, le);
		}
		/* a clean leave for the others, after our JOIN (FIFO);
		 * none when dlmd stops under clients with locks: the others
		 * must fence us first (client.c dlmd_client_fini) */
		if (!d->d_stop_unclean && send_ls(cs, CM_LEAVE, dl->dl_name))
			log_err("lockspace %s: its LEAVE cannot be sent; the others "
				"see us leave only when our dlmd leaves", dl->dl_name);
	}
	restart_disarm(cl);
	free(cl);
	dl->dl_cluster = NULL;
}

bool dlmd_cluster_in_daemon_group(const struct dlmd *d)
{
	const struct dlmd_cluster *cs = d->d_cluster;

	return cs && cs->cs_corosync && cs->cs_self_pid;
}

bool dlmd_cluster_may_claim(const struct dlmd *d, bool learned)
{
	const struct dlmd_cluster *cs = d->d_cluster;

	return dlmd_cluster_in_daemon_group(d) && cs->cs_synced &&
	       !(learned && cs->cs_syncing);
}

unsigned int dlmd_cluster_daemon_members(const struct dlmd *d, uint32_t *ids,
					 unsigned int max)
{
	const struct dlmd_cluster *cs = d->d_cluster;
	unsigned int n = 0;

	for (; cs && n < cs->cs_ndmembers && n < max; n++)
		ids[n] = cs->cs_dmembers[n];
	return n;
}

int dlmd_cluster_fence_send(struct dlmd *d, bool claim, uint32_t nodeid,
			    enum dlmd_fence_status st)
{
	struct dlmd_cluster *cs = d->d_cluster;
	unsigned char buf[CM_MAX_LEN];
	struct cm_hdr h;
	struct cm_fence fc = { .fc_nodeid = nodeid,
			       .fc_status = claim ? 0 : (uint32_t)st };
	size_t len;

	if (!dlmd_cluster_in_daemon_group(d))
		return -ENOTCONN;
	h = out_hdr(cs, 0);
	len = dlmd_cm_fence_encode(buf, &h, claim ? CM_FENCE_CLAIM :
				   CM_FENCE_RESULT, &fc);
	if (!len)
		return -EINVAL;
	return out_queue(cs, buf, len);
}

bool dlmd_cluster_quorum_has(const struct dlmd *d, uint32_t nodeid)
{
	const struct dlmd_cluster *cs = d->d_cluster;

	return cs && cs->cs_corosync && id_in(cs->cs_qview, cs->cs_nqview, nodeid);
}

bool dlmd_cluster_quorate(const struct dlmd *d)
{
	return d->d_cluster && d->d_cluster->cs_quorate;
}

const char *dlmd_cluster_source_str(const struct dlmd *d)
{
	return d->d_cfg.cf_membership == DLMD_MEMBERSHIP_NONE ? "none" : "corosync";
}

const char *dlmd_cluster_node_addr(const struct dlmd *d, uint32_t nodeid)
{
	const struct cs_node *nd = d->d_cluster ? find_node(d->d_cluster, nodeid) : NULL;

	return nd && nd->n_naddrs ? nd->n_addrs[0] : "";
}

unsigned int dlmd_cluster_unreachable(const struct dlmd *d, uint32_t *ids,
				      unsigned int max)
{
	const struct dlmd_cluster *cs = d->d_cluster;
	unsigned int n = 0;

	for (; cs && n < cs->cs_nunr_mine && n < max; n++)
		ids[n] = cs->cs_unr_mine[n];
	return n;
}

unsigned int dlmd_cluster_nodes(const struct dlmd *d, uint32_t *ids, unsigned int max)
{
	const struct dlmd_cluster *cs = d->d_cluster;
	unsigned int n = 0;

	for (; cs && n < cs->cs_nnodes && n < max; n++)
		ids[n] = cs->cs_nodes[n].n_id;
	return n;
}

void dlmd_cluster_ls_describe(const struct dlmd *d, const struct dlmd_ls *dl,
			      struct dlmd_ls_view *v)
{
	const struct dlmd_cluster_ls *cl = dl->dl_cluster;
	struct dlm_ls_stats stats;
	const char *step = "", *failed_step = "";
	uint32_t ev = 0;
	enum dlm_ls_state st = dlm_core_ls_state(dl->dl_core, &ev, &step);

	memset(v, 0, sizeof(*v));
	v->lv_state = dlm_ls_state_str(st);
	v->lv_event = ev;
	if (!cl) {
		snprintf(v->lv_wait, sizeof(v->lv_wait), "-");
		return;
	}
	memcpy(v->lv_group, cl->cl_members, cl->cl_nmembers * sizeof(uint32_t));
	v->lv_ngroup = cl->cl_nmembers;
	dlm_core_ls_stats(dl->dl_core, &stats);
	/* (with membership none it runs from its creation) */
	switch (cl->cl_state) {
	case CL_JOINING:
		if (d->d_cluster->cs_syncing) {
			char ids[64];

			fmt_unannounced(d->d_cluster, ids, sizeof(ids));
			snprintf(v->lv_wait, sizeof(v->lv_wait), "join (sync: "
				 "lockspaces of daemon(s) %s)", ids);
		} else {
			snprintf(v->lv_wait, sizeof(v->lv_wait), "join (group)");
		}
		break;
	case CL_STOPPED: {
		char buf[BLOCKER_LEN];
		const char *why = start_blocker(cl, buf, sizeof(buf));

		snprintf(v->lv_wait, sizeof(v->lv_wait), "%s",
			 why ? why : "start (sending)");
		break;
	}
	case CL_STARTED: {
		size_t off = (size_t)snprintf(v->lv_wait, sizeof(v->lv_wait),
					      "members (start from");

		for (unsigned int i = 0; i < cl->cl_nmembers &&
		     off + 12 < sizeof(v->lv_wait); i++)
			if (!cl->cl_got[i])
				off += (size_t)snprintf(v->lv_wait + off,
							sizeof(v->lv_wait) - off,
							" %u", cl->cl_members[i]);
		snprintf(v->lv_wait + off, sizeof(v->lv_wait) - off, ")");
		break;
	}
	case CL_DECIDED:
		snprintf(v->lv_wait, sizeof(v->lv_wait), "quorum (to start)");
		break;
	case CL_RECOVERING:
		if (cl->cl_recovered == cl->cl_last_event)
			snprintf(v->lv_wait, sizeof(v->lv_wait), "quorum (to finish)");
		else if (dlm_core_ls_recovery_error(dl->dl_core, &failed_step))
			snprintf(v->lv_wait, sizeof(v->lv_wait), "recovery %u "
				 "failed here in step %s: %s (the others wait; see "
				 "the log)", cl->cl_last_event, failed_step,
				 strerror(-dlm_core_ls_recovery_error(dl->dl_core,
								      NULL)));
		else
			snprintf(v->lv_wait, sizeof(v->lv_wait), "recovery step %s",
				 step);
		break;
	case CL_FAILED: {
		uint64_t now = dlmd_now_ms();

		snprintf(v->lv_wait, sizeof(v->lv_wait), "recovery failed, retry "
			 "in %llu s (attempt %u): event %u, step %s: %s",
			 (unsigned long long)(cl->cl_restart_at > now ?
					      (cl->cl_restart_at - now + 999) / 1000 : 0),
			 cl->cl_restart_attempt, cl->cl_last_event,
			 cl->cl_restart_step, strerror(-cl->cl_restart_error));
		break;
	}
	case CL_RUNNING:
		if (stats.ls_stuck) {
			/* core/audit.c found locks whose two copies disagree */
			v->lv_state = "stalled";
			snprintf(v->lv_wait, sizeof(v->lv_wait), "audit (%llu lock%s "
				 "stuck: a grant or reply was lost or a node does not "
				 "answer; see the log)",
				 (unsigned long long)stats.ls_stuck,
				 stats.ls_stuck == 1 ? "" : "s");
		} else if (d->d_cluster->cs_held_stall) {
			v->lv_state = "stalled";
			snprintf(v->lv_wait, sizeof(v->lv_wait), "memory (a "
				 "message from node %u not taken by the engine "
				 "for %llu s: out of memory)",
				 d->d_cluster->cs_held_node,
				 (unsigned long long)((dlmd_now_ms() -
						       d->d_cluster->cs_held_since)
						      / 1000));
		} else if (cl->cl_stalled) {
			v->lv_state = "stalled";
			snprintf(v->lv_wait, sizeof(v->lv_wait), "reply (%llu "
				 "operation%s wait for a remote reply; nothing "
				 "received for %llu s)",
				 (unsigned long long)cl->cl_wd_waiters,
				 cl->cl_wd_waiters == 1 ? "" : "s",
				 (unsigned long long)((dlmd_now_ms() -
						       cl->cl_wd_since) / 1000));
		} else {
			snprintf(v->lv_wait, sizeof(v->lv_wait), "none");
		}
		break;
	case CL_STALE:
		snprintf(v->lv_wait, sizeof(v->lv_wait), cl->cl_refused ?
			 "release (refused: its settings differ)" :
			 "release (a stale instance: a loser of a stateful merge)");
		break;
	}
}
