/*
 * core/remaster.c - remastering: a resource used mostly by one node moves
 * its master there (issue 18, "Remastering").
 *
 * Why.  A root resource is mastered where it was first looked up, and its
 * whole tree with it (resource.c).  When another node N then takes most
 * of its locks, every one of N's operations pays a round trip to the
 * master M that a master on N would not.  The OpenVMS lock manager moves
 * such a resource to its user; so does this file.
 *
 * What moves, and when (the rule M applies, remaster_consider()).
 *
 *   M counts, per root resource it masters, the lock operations that
 *   reach it (requests and conversions, its own clients' included) in
 *   windows of DLM_REMASTER_WINDOW (32) operations (remaster_window).  A window's candidate is
 *   the node of its first operation; the window counts the candidate's
 *   share.  When a window closes with the candidate N != M holding at
 *   least 3/4 of it, and the resource has not moved (to or from this
 *   node) within remaster_ticks dlm_core_tick() calls, and the resource
 *   is movable (below), M moves it to N.  Hysteresis: a resource that
 *   just moved to N can only leave it when another node makes 3/4 of a
 *   whole window there, which N's own use (more than 1/4) forbids; and
 *   never within remaster_ticks ticks of its last move whatever the
 *   load, so two nodes sharing a resource half and half never move it,
 *   and a load that shifts moves it at most once per remaster_ticks.
 *   The engine has no clock: the window is counted in operations, the
 *   residence time in ticks (each node counts its own).
 *
 *   Movable: a root resource (sub-resources are mastered with their root
 *   and have no record of their own), with no child resource here, every
 *   lock on its queues a master copy of N's (granted, converting or
 *   waiting; none persistent or orphaned), no lookup in flight, and the
 *   lockspace running.  So the move needs no third node: N already has a
 *   process copy of every lock, in the state M last told it, and M's
 *   queues are exactly N's locks.  A resource also locked by a third node,
 *   or by M's own clients, stays where it is (the lock protocol would
 *   have to re-point each foreign process copy at N, which this version
 *   does not do), and a tree moves only once its children are gone.
 *   Only operations on the root fill its window (a sub-resource has no
 *   window of its own).  So a workload whose roots always have children
 *   never moves them: in the simulator, trees deeper than 4 hardly
 *   moved until dlm-sim --hot-trees (tests/sim-hot-trees.test), where
 *   the old user's tree is torn down, the root moves on bare locks, and
 *   the new master grows its tree again, down to --depth, under the
 *   root that moved.
 *
 * The move (one message, MIGRATE, M -> N):
 *
 *   M: in one step (the engine is single-threaded, so nothing on R runs
 *      in between) sends N the resource's master state: its LVB, the
 *      LVB's sequence number and validity, the number of locks M holds
 *      for N on it, and (in every message's header) M's token clock;
 *      then frees its master copies and keeps R as a copy mastered by N
 *      (res_nodeid = N), unused, so it leaves by the toss list like any
 *      copy, with no REMOVE (only a master sends one).  From this
 *      instant M grants nothing on R: M is frozen and forgotten at once.
 *   N: on MIGRATE (from the node it believes masters R) becomes master:
 *      res_nodeid = N, LVB and sequence installed, and every one of its
 *      process copies on R becomes a lock on its own master's queues, in
 *      the state N knew (granted mode and range, converting, waiting:
 *      all that M had told it, for every reply and GRANT M sent before
 *      MIGRATE arrived first on the FIFO link).  Its queues are rebuilt
 *      in order, deadlock and audit bookkeeping follow (a local queued
 *      lock is on ls_dlwait but never on ls_blocked), then N grants what
 *      it can (nothing, normally: M's queues were settled) and tells the
 *      directory node D: DIR_MOVE(R, from M to N).
 *   D: on DIR_MOVE records N if the record names M (the sender's view of
 *      the old master in m_nodeid) or is missing, and answers N (a
 *      DIR_MOVE with DLM_MF_DIR_ACK); a DIR_MOVE from before a recovery
 *      (m_gen) is dropped, the rebuilt directory is right.  Until the
 *      answer N does not move R on (movable(), RESF_DIR_UNACKED; "As
 *      built", the directory).
 *
 * Invariant: at every instant at most one node grants on R.  M grants
 * until it sends MIGRATE and never after (its copy is not master); N
 * grants only from the moment it installs MIGRATE.  Between the two,
 * nobody grants: requests bounce (below) until N installs.
 *
 * Races, and how each is closed:
 *   - Lookup vs. move.  D answers M until DIR_MOVE arrives (to all
 *     but M itself, whose lookup waits for it: "As built" below).  A request
 *     that reaches M after the move is refused -EBADR with a hint
 *     (m_nodeid = N, what M's copy says); the requester tries N.  N, if
 *     it has not installed yet, refuses with its own view (M), and so
 *     the request bounces between the two until N installs MIGRATE,
 *     which is already on its way: it terminates.  A requester without
 *     a hint looks up again.  Bounded: a delayed MIGRATE (the M -> N
 *     link down while X <-> N is up) would make this one message per
 *     round trip, thousands a second for one request, until the MIGRATE
 *     lands or a node is declared gone.  So a request refused
 *     DLM_BOUNCES_MAX (4) times in a row is not sent again at once but
 *     parked on R's lookup queue, no lookup in flight (lock.c
 *     request_bounced), until news of R's master: a MOVED or REPOINT
 *     about R, a LOOKUP_REPLY for a sibling request or a REQUEST_REPLY
 *     that grants or queues one (test_sibling_reply_wakes_parked), a
 *     recovery's finish, or else the next dlm_core_tick, which visits
 *     the requests parked since the last (ls_parked, lock.c
 *     dlm_redo_parked: no walk of every resource; test_tick_sends_parked);
 *     then it gets 4 more.  At most 5 REQUESTs per request per tick, no clock
 *     in the core (test-core-remaster test_bounce_bounded: 1,001 in
 *     1,000 round trips without it, 5 with).
 *   - A refusal that crossed news.  A refusal from a node other than
 *     the master the requester learned since it sent the request
 *     (a reply that granted or queued a sibling, a MOVED) says nothing:
 *     the request goes to the known master and the refuser's hint, its
 *     old view, is ignored (lock.c receive_request_reply; taken as news
 *     it pointed R away from the node holding our locks: test-core-
 *     remaster test_stale_refusal, R moved 1 -> 2 -> 4 and node 1's late
 *     refusal naming 2).  A REMOVE from N (R unused there later)
 *     follows its DIR_MOVE on the N -> D link, so D never keeps a stale
 *     record naming N.
 *   - Requests in flight to M from N itself: refused -EBADR after the
 *     move; the reply reaches N after MIGRATE (FIFO), N is then master
 *     and runs the request locally.
 *   - Conversions, unlocks and cancels in flight from N to M: M no
 *     longer has the master copy, and with remastering on it answers an
 *     operation on a lock it does not know -EBADR (not master) instead
 *     of dropping it with a log as before.  N receives the
 *     refusal after MIGRATE, finds itself master, and redoes the
 *     operation locally on the state it installed, which does not include
 *     the operation: M handled it after nothing, so it is done exactly
 *     once.  Other nodes have no lock on R (movable rule), hence nothing
 *     in flight but new requests.
 *   - Deadlock probes and audits about N's locks in flight to M: M
 *     answers as for a lock it does not know (a probe ends, an audit
 *     reply says -ENOENT, which N ignores for a lock no longer waiting
 *     at a remote master: installed locks left ls_blocked).  The next
 *     probe round starts at N, locally.
 *   - Tokens.  Fencing tokens are minted from the master's token clock.
 *     MIGRATE carries M's clock (every message does, core/token.c) and N
 *     advances its clock to it before installing, so every token N
 *     mints for R is above every token M minted for it: monotonic across
 *     the move, and across recovery as token.c argues already.
 *   - LVBs.  The value, its sequence and its validity travel in MIGRATE.
 *     Writes in flight (a conversion down from PW/EX, an unlock with
 *     VALBLK) are redone at N on the installed value, as above.
 *
 * Recovery (a stop at any point of a move).  Lock messages are held while
 * a lockspace is stopped and replayed at finish; a departed node's are
 * dropped.  Migration state lives in exactly one place at any time: in
 * M's queues before the send, in the MIGRATE message in flight (or held
 * at N), in N's queues after the install.  No node keeps a "migrating"
 * flag a recovery could find in two places.
 *   - Stop before N handles MIGRATE, both alive: by the NODES barrier the
 *     message has reached N (M sent it before its NODES status; FIFO) and
 *     is held there.  At the start of the directory step N installs every
 *     held MIGRATE from a live member, and so registers R in the rebuilt
 *     directory as its master.  What M told N about R before the MIGRATE
 *     (replies, grants, basts, held too) is handled first, in order, so
 *     that N installs the state M moved (the rest stays held); M masters
 *     nothing of R and registers nothing.  One master.  M's -EBADR
 *     replies to N's ops in flight are held at N and replayed at finish,
 *     when N is master: redone locally as in normal operation.  A
 *     MIGRATE of an older generation (it would be one only if the
 *     recovery install missed it, which it cannot) is dropped with a log.
 *   - Death of M mid-move: if N installed before the stop, N is master
 *     and registers R; its ops still in flight to M (which M would have
 *     refused) are redone at finish on its own queues, not settled as if
 *     M had answered them (lock.c dlm_recover_waiter).  If not, MIGRATE is held at N from a departed
 *     node and dropped at the NODES step; N's copies of R point to a
 *     departed master, are marked for a new master, and the usual lookup
 *     and lock resend make one (N itself, the first to ask).  The LVB,
 *     lost with M's message, is marked not valid as for any master death.
 *   - Death of N mid-move: its locks are the only locks on R and are
 *     gone with it; nobody masters R, which comes back fresh at the next
 *     lookup: the same as a resource unused and tossed (resource.c: a
 *     value lives only while some node keeps the resource).  M's copy is
 *     an unused copy, dropped at the NODES step.
 *   - Death of D mid-move: DIR_MOVE is lost or dropped (older m_gen); the
 *     rebuilt directory has N from N's own registration.
 *   - A move started during recovery: never; remaster_consider() runs
 *     only while the lockspace runs, and MIGRATE is handled only while
 *     running or at the directory step, as above.
 *   - Bounce after recovery: the residence clock is per node and
 *     survives recovery, so a resource recovered onto a new master may
 *     move once the rule holds again, never sooner than remaster_ticks
 *     after the last move this node took part in.
 *
 * Moving a resource that other nodes lock too (the re-point protocol;
 * built, off unless dlm_core_config.remaster_shared is set).
 * The rule above keeps a resource where it is as soon as a third node T,
 * or M's own clients, hold or wait for a lock on it: each such lock has a
 * process copy whose lkb_remid names M's master copy, and nothing would
 * tell it about N.  This is the protocol that lifts the rule.  It is
 * proven by the simulator (dlm-sim --repoint: third nodes and M's clients
 * on the hot roots; --faults: deaths of M, N, a third node, the REPOINT's
 * owner and the directory node mid-move; the broken variants below) and
 * by tests/test-core-remaster.c, and run on a cluster by
 * tests/test-cluster-repoint*.sh (short fault runs): it stays off by
 * default, and with remaster_shared 0 movable() is the rule above,
 * unchanged.  "As built" at the end of this section says where the code
 * departs from the design, and why.  Names: M old master, N new master, X any owner node of a lock on
 * R other than N (a third node T, or M itself for its own clients' locks).
 *
 *   Messages (wire version 5; each one fixed message of today's layout,
 *   so the header and the decoder's length checks are unchanged; the
 *   decoder gains a check per new type: a key present, modes and queue
 *   number in range, a non-zero owner node; tests/corpus re-encoded for
 *   the version, and a seed of each new type):
 *     MIGRATE_LOCK  M -> N, one per lock on R in queue order (m_status:
 *                   queue, m_nodeid: owner node X or N, m_remid: the
 *                   owner's lock id, modes, ranges, exflags, flags,
 *                   owner, token); N keeps them on its copy of R, inert
 *                   (nothing is granted from them), until MIGRATE;
 *     MIGRATE       M -> N after them: the resource state as today, and
 *                   the number of records sent, which N checks;
 *     MOVED         M -> each owner node X != N: "R is N's now", after
 *                   every reply, GRANT and BAST that M sent X about R
 *                   (all on the M -> X link, FIFO);
 *     REPOINT       N -> X, one per lock of X: X's lock id, N's new
 *                   master lock id, the state N installed (queue, modes);
 *     REPOINT_REPLY X -> N: the lock is re-pointed.
 *
 *   M, in one step: sends the records, MIGRATE, and MOVED to each other
 *   owner; destroys every master copy on R; turns each of its own local
 *   locks on R into a process copy awaiting a re-point (lkb_remid 0, a
 *   flag); res_nodeid = N.  From here M grants nothing on R, and its
 *   clients' operations on those locks are parked on the lock until the
 *   re-point comes.
 *   N, on MIGRATE: installs the resource as today and, for every record,
 *   its own process copy (owner N) or a new master copy (owner X, remid =
 *   X's id), in M's queue order; only then it is master.  It sends DIR_MOVE
 *   to D, a REPOINT for every master copy of another node, and only then
 *   grants what it can (normally nothing): so on the N -> X link every
 *   REPOINT precedes any GRANT or BAST of N's about that lock.
 *   X, on MOVED: its copy of R names N; its locks on R await a re-point;
 *   operations on them are parked.  On REPOINT: if MOVED from M has not
 *   arrived yet (its copy still names M), X holds the REPOINT and every
 *   later message from N about R on R until MOVED arrives, then replays
 *   them in order; so X has handled every message of M's about R before
 *   N's first.  Applying a REPOINT sets lkb_remid, sends REPOINT_REPLY
 *   and sends the parked operation, if any, to N.
 *   Crossing operations: X's conversion, unlock or cancel that reached M
 *   before the move is in the state moved (its reply precedes MOVED on
 *   the M -> X link); one that reaches M after the move is refused -EBADR
 *   (not master), a refusal that follows MOVED on that link, so X parks
 *   the operation and sends it to N once re-pointed: it never took effect
 *   at M, and takes effect at N once.  A new request from X bounces
 *   between M and N with hints until N installs, as today, its immediate
 *   re-sends bounded ("Races", lock.c request_bounced); N's REPOINT, news
 *   that N installed, sends a parked one at once.  Probes and
 *   audits about X's locks crossing the move end as for N's today.
 *   Another move of R from N waits until every REPOINT is acknowledged
 *   (movable() counts the unacknowledged ones), so no lock is re-pointed
 *   by two moves at once.
 *
 *   Invariant.  One node grants: M until its move step, N from its install,
 *   X never.  Every lock exists exactly once as a master copy once the move
 *   settles: M destroys all of them in the step in which it sends their
 *   records, the records live only in flight (or held) to N until N makes
 *   one master copy of each, and nobody else creates a master copy of R's
 *   locks (new requests are new locks, and wait for N).  No request is
 *   lost: one on M before the move is in the moved state and answered by
 *   M before MOVED; one after is refused after MOVED and redone at N;
 *   one made at X meanwhile is parked until the re-point.
 *
 *   Recovery (stop at any point; no node keeps a "moving" record that a
 *   recovery could find twice: the state is in M's queues, in the records
 *   and MIGRATE in flight or held at N, or in N's queues).  At the NODES
 *   step every node first handles what live senders told it about a
 *   resource up to a held MOVED (as install_held does for N), so its copy
 *   names N.  Then any node with a lock on R awaiting a re-point, or whose
 *   copy names a departed node, marks R for a new master, and recovery's
 *   masters and locks steps re-point it: the lookup finds N (which, alive,
 *   installed any held MIGRATE at the directory step and registered R,
 *   creating no master copy for a record of a departed owner), and the
 *   lock's RC_LOCK matches the master copy N made from its record (the
 *   same node and lock id, which recovery already recognises: no second
 *   copy).  Held REPOINTs are dropped: RC_LOCK replaces them.
 *     - M dies: if N installed, N is master and every X resends to it;
 *       if not, the records and MIGRATE from a departed node are dropped,
 *       every X's copy names M or N (neither masters R), so R is marked,
 *       the first to look it up masters it, and every X's lock is resent
 *       (M's own locks die with M; the LVB is marked not valid as for any
 *       master death).
 *     - N dies: every X (M included, whose locks are process copies now)
 *       finds its copy naming N, departed: marked, looked up, resent to
 *       a new master; N's locks die with N.  The state in flight or held
 *       at N is lost with it; the process copies carry all of it but the
 *       LVB, marked not valid.
 *     - X dies: N purges the master copies of X's locks, or skips their
 *       records if it installs later; REPOINTs to X are lost with it.
 *       Either way what waited behind X's locks may fit now: a purge
 *       marks R for recovery's grant step, and so does an install at the
 *       directory step (as built: it grants nothing itself, the
 *       lockspace is stopped; seed 2732 waited for ever without it).
 *       A skipped record of X's PW or EX marks R's value not valid, as
 *       the purge of that lock would (recover.c purge_departed).
 *     - N with no copy of R at the stop (its locks all gone before the
 *       move, its unused copy dropped at the NODES step) installs the
 *       held MIGRATE on an rsb it creates at the directory step; the
 *       steps then look at it too (dlm_recover_track_rsb), so N
 *       registers R and takes the RC_LOCKs; without that, nobody
 *       registered R, the directory gave it to the first X to look it
 *       up, and N and X both mastered it (test-core-remaster,
 *       test_new_master_without_copy).
 *     - D dies: as today.
 *   Broken variants for tests/sim-broken.test: N skips one REPOINT (the
 *   lock's owner parks its next operation for ever: the simulator's
 *   liveness check), and N grants from the first record on instead of
 *   after MIGRATE (two masters grant: the safety check).
 *
 *   As built (what building it showed; each found or checked by the
 *   simulator):
 *     - Out of memory (dlm-sim --alloc-faults): a MIGRATE_LOCK record or
 *       a held REPOINT N has no memory to keep is refused (dlm_core_receive
 *       -ENOMEM: nothing changed, the transport offers it again, in
 *       order); at MIGRATE, N makes every master copy its records need
 *       before it changes anything (make_records), else refuses the
 *       MIGRATE likewise, or at the directory step of a recovery fails
 *       the step (the recovery runs again).  A record dropped, or a copy
 *       missing from the queues, let N grant against a lock it did not
 *       know: two holders (seeds 490, 534, 735 with --repoint).
 *     - Movable, either way: no lock whose conversion deadlock demoted
 *       it to NL (DLM_SBF_DEMOTED) before its owner was told (with the
 *       conversion's completion): N installs its own locks from its
 *       process copies, which still held the mode, and granted a PR
 *       beside the PW it thought granted (--remaster --rehot 4 --ops
 *       1500 --nodes 5 seed 799, without the protocol).
 *     - Movable, with the protocol: any node's master copy, and M's own
 *       local lock only while no operation of it is pending (no wait,
 *       resend, park, overlap, held grant or deadlock cancel); no lock
 *       whose REPOINT is unacknowledged (LKBF_REPOINT on a master copy).
 *       MIGRATE's count is res_nlkbs, which is then the number of records.
 *     - N keeps the records as received (ls_rm_records) and builds its
 *       queues from them at MIGRATE, in their order, its own process
 *       copies included; none for a departed owner.
 *     - X holds not "every later message from N about R" but those about
 *       a lock whose REPOINT it holds (LKBF_RP_HELD): only they can depend
 *       on the REPOINT; a reply to a new request X sent N does not.
 *     - A refused request on R (a child's too) while a lock of X's on R
 *       awaits its re-point goes to the master MOVED named again, however
 *       the refusal's hint reads: N refuses with M as its hint until it
 *       installs, and taking that hint would point the whole resource
 *       back at M, where the GRANTs N sends later would not be
 *       recognised.  Likewise a request reply that grants or queues
 *       names the master, and a sibling's lookup reply, from a directory
 *       that may not have the DIR_MOVE yet, does not overwrite it
 *       (lock.c; dlm-sim --faults --repoint seed 212 before the fix).
 *     - Recovery: the held MOVEDs (with what their sender said about R
 *       before them) are handled at the directory step, not at NODES:
 *       like a held MIGRATE, a MOVED is sure to have arrived only by the
 *       NODES barrier.  Then each process copy still awaiting its
 *       re-point marks R (RESF_RECOVER_MASTER) and its parked operation
 *       is kept for finish.  That mark comes after the node's NODES
 *       status, so with the protocol on no node says it has nothing to
 *       recover (recover.c QUIET STEPS): the skipped masters and locks
 *       steps let the survivor that took R from a dead N grant over
 *       locks never resent to it (seed 783, --rehot 4 --ops 1500
 *       --nodes 5).  RC_LOCK looks for an existing master copy
 *       only on a resource that took locks in an aborted attempt of the
 *       same recovery, so N marks a resource whose master copies came
 *       from records and may still be unacknowledged (RESF_REPOINTED),
 *       and the search runs there too; a matched copy is acknowledged.
 *       Its owner may have converted it since M sent the record, so the
 *       RC_LOCK changes its modes and ranges in place with R's counts
 *       (dlm_lkb_count; dlm-sim --faults --remaster --repoint
 *       --daemon-deaths seed 1901: a PW counted for ever, nobody holding
 *       it, kept a CW conversion waiting).
 *       Such a resent lock is marked (LKBF_RP_RESENT) until finish: a
 *       GRANT of N's about it held then, which came before N's
 *       RC_LOCK_REPLY, is dropped with that reply, as N's master copy now
 *       has the state the RC_LOCK gave it (seed 2341: N's GRANT in CW,
 *       sent at install, granted the lock that N then had waiting in
 *       EX).  Not by its generation: N's messages carry the last event
 *       N finished, so a GRANT N sends after the RC_LOCK but before its
 *       own finish looks as old (seed 628).
 *       A REPOINT for a lock that RC_LOCK re-pointed already, or a MOVED
 *       for a copy that names the new master already, is answered or
 *       ignored quietly when it is replayed at finish.
 *     - The directory: M, if it is R's directory node too, keeps its
 *       unused copy (not tossed) while the copy is the record naming M,
 *       until N's DIR_MOVE moves the record (resource.c
 *       dlm_toss_expire).  Tossed, the record outlived it naming M, and
 *       M's next request made M master again beside N (dlm-sim --faults
 *       --repoint seed 1176, --nodes 6; the rule without the protocol
 *       had the same race).  Moving the record to N at the move instead
 *       made N, looking R up before the MIGRATE came, master of a fresh
 *       R (seeds 374, 715, 1245 of --repoint --nodes 7 --ops 2000).
 *       M not the directory node: its copy tossed before N's DIR_MOVE
 *       reaches D, M's own lookup was answered "M" from the record, and
 *       M mastered a fresh R beside N (--rehot 4 --ops 1500 --nodes 4
 *       seed 182; with the protocol or without).  Now D holds a LOOKUP
 *       from the very node its record names (resource.c
 *       dlm_dir_hold_lookup) and answers it when a DIR_MOVE moves the
 *       record.  The dump lists each held lookup (dirheld "name" node
 *       M, dump.c), and dlm_core_ls_verify checks that its record names
 *       its requester, once per requester (resource.c
 *       dlm_dir_held_verify; broken variant remaster-dir-keep-held).
 *       Only a move makes that case: a node never looks up a
 *       name it masters (it has the copy), and a master that drops its
 *       copy sends REMOVE, which reaches D before any later lookup of its
 *       own (FIFO); so the record naming the asker is M's record after
 *       M moved R, and N's DIR_MOVE is already sent (N installed) or
 *       will be (MIGRATE on its way to N).  No wire change: the answer
 *       is the LOOKUP_REPLY, later.  Why not the alternatives: D cannot
 *       answer "ask N", it does not know N before the DIR_MOVE; "retry"
 *       makes M and D ping-pong (or needs a timer) for as long as N is
 *       slow, SIGSTOPped say; M keeping its copy as a forwarding stub
 *       until the DIR_MOVE is acknowledged needs a new message from D.
 *       Deaths and recoveries while D holds it (the lookup is forgotten
 *       at D's step_start, and M, whose rsb had RESF_LOOKUP, looks up
 *       again at finish in the rebuilt directory, as for any lookup in
 *       flight at a stop; with remastering on the rebuild is full):
 *         - M dies: its lookup goes with it; the record naming M is not
 *           confirmed and swept; N registers R.
 *         - N dies before its DIR_MOVE: R is lost with N's locks, as in
 *           "Death of N mid-move"; nobody registers R, and M's lookup
 *           at finish makes M master of a fresh R: one master.
 *         - D dies: the held lookup is lost with D; the new directory
 *           node has R from N's registration (N installed the MIGRATE by
 *           the directory step at the latest).
 *         - A recovery, all alive: the same, N registers R; the DIR_MOVE
 *           sent before it is dropped as stale.
 *       Left: a third node X that D answers "M" (the record) meanwhile
 *       sends its request to M, which, with no copy, refuses it without
 *       a hint; X looks up again, and bounces so until the DIR_MOVE
 *       lands (no safety matter: nobody grants; as before; 4 immediate
 *       re-sends, then once per tick or news, "Races").
 *       Two DIR_MOVEs of successive moves (M to N, then N to P) travel
 *       on two links, N to D and P to D, and may reach D out of order:
 *       P's first, refused (the record names M, not N), then N's, taken,
 *       left a record naming N while P mastered R (dlm-sim --remaster
 *       --repoint --rehot 4 --ops 600 --dir-lag 500 seed 3: "moved from
 *       5 to 4, but its master is 6").  Then P's REMOVE is ignored, the
 *       record outlives R, and N's own later lookup waits for ever in
 *       dlm_dir_hold_lookup (the record names N).  The residence time
 *       made it unlikely, never impossible: a DIR_MOVE may wait on a slow
 *       link for longer than remaster_ticks.  Now D answers each DIR_MOVE
 *       it takes (DLM_MF_DIR_ACK, to the new master), and N keeps
 *       RESF_DIR_UNACKED, which movable() refuses, until that answer: so
 *       D has taken N's DIR_MOVE before P can exist, and P's comes after
 *       it.  One DIR_MOVE per resource is in flight at any time.  A
 *       recovery forgets the mark (repoint_recover): N's DIR_MOVE or the
 *       answer was dropped as stale, and the rebuild, whole after any
 *       remastering message (recover.c, PARTIAL DIRECTORY), has R from
 *       N's registration.  No wire change but the flag: an engine
 *       without it would refuse the answer (-EINVAL, logged) and never
 *       send one, so N would not move R on again; mixed engines are not
 *       supported anyway (wire.h).  Broken variant remaster-dir-unacked
 *       (moves on without the answer) in sim-broken.test.
 *     - The queues N builds from the records are in M's order exactly:
 *       a lock's HEADQUE is not honoured again (seed 3172, --nodes 6:
 *       two conversions swapped waited for each other for ever).
 *     - An operation in flight to M when MOVED came reached M after the
 *       move, so M's death does not settle it as "maybe done": it is
 *       redone at N at finish (seed 2144); and a -EBADR refusal names the
 *       master copy the operation named, so that one from a node that a
 *       recovery made our master again is redone too (seed 2776).
 *       An unlock or cancel to a dead M whose lock N's held REPOINT
 *       names (its MOVED lost with M) is redone at N likewise: had M
 *       done it before the move, the lock would have had no record
 *       (test-core-remaster, test_unlock_to_dead_old_master).
 *     - A request's -EBADR held over a recovery (sent before it: m_gen
 *       older) is no news of the master: the recovery settled it since
 *       (N installed at the directory step, or a dead N's resources went
 *       to a survivor, the refusing M maybe); the request goes again to
 *       the master known now (lock.c receive_request_reply).  Taken as
 *       news, it failed a child request at its parent's master (seed 97,
 *       --rehot 4 --ops 1500 --nodes 6) and zeroed a root's settled
 *       master, a redone cancel then sent to node 0 (seed 583,
 *       --daemon-deaths --rehot 4 --nodes 6).
 *     - A held MIGRATE installed at the directory step takes the records
 *       held before it, even when N has no copy of R (seed 4115).
 *     - N, re-pointed by RC_LOCKs at a recovery, is no new master for
 *       the value: it keeps the one MIGRATE brought (recover.c
 *       step_grant; seed 2480 lost a valid value to the locks' copies).
 *     - The audit does not judge a lock awaiting its re-point (its
 *       lkb_remid is 0 until then); a deadlock probe about one ends at N
 *       as for an unknown lock, and the next round finds it re-pointed.
 *     - A third node bouncing (dying or cut off, and joining again) while
 *       a move is under way (dlm-sim --bounce, with --dir-lag to keep the
 *       DIR_MOVE on its way longer) showed what the move left behind:
 *       . An op of X's on its way to M when MOVED came, then N's REPOINT,
 *         both before M's refusal, which died with M: the lock names N,
 *         not the node the op went to, so the op never took effect and is
 *         redone at N (lock.c dlm_recover_waiter; seed 546).
 *       . A request of X's that M queued and moved, its reply and MOVED
 *         lost with M: X does not know the lock is queued and redoes the
 *         request at finish (or drops it, its client gone), so N's copy
 *         from the record is unknown to its owner.  Record copies keep
 *         LKBF_REPOINT through a recovery until their REPOINT_REPLY (held
 *         ones are taken at the masters step: an owner sends one at its
 *         directory step too, when a held MOVED lets it take a held
 *         REPOINT) or their RC_LOCK; at the grant step those left go
 *         (dlm_remaster_unmatched; seeds 556, 96).
 *       . A resource X resends for one lock awaiting its re-point is not
 *         resent whole: a lock re-pointed already, at a master that stays,
 *         has its copy there ahead of X's (an unlock done, a conversion
 *         granted, the answers held at X); resent, the unlock's lock was
 *         made anew and the conversion went back (recover.c resend_queue,
 *         receive_rc_lock; seeds 934, 531).
 *       . A REPOINT from before a recovery is dropped as stale, not held
 *         for its MOVED (which died with M); and the held REPOINTs a
 *         recovery drops unmark their locks (seed 321: a second master
 *         copy at the next recovery).
 *       . Out of memory at the directory step: a held record the install
 *         cannot keep fails the step, it is not dropped (seed 1575 of
 *         --alloc-faults 20); and N makes room for the value before the
 *         MIGRATE changes anything, not marking it not valid for want of
 *         memory (seed 1958).
 *
 * Off unless dlm_core_config.remaster_ticks is non-zero (dlm-sim turns it
 * on with --remaster, tests/test-core-remaster too); dlmd sets it from
 * dlm.conf's remaster_secs (plugin/engine.c), off by default.  The
 * re-point protocol also needs remaster_shared (dlm-sim --repoint; dlmd
 * sets it from dlm.conf's remaster_shared, off by default).
 * DLM_FAULT_REMASTER_SKIP_REPOINT and DLM_FAULT_REMASTER_EARLY_GRANT are
 * its two broken variants.  DLM_FAULT_REMASTER_NO_FREEZE is the broken
 * variant that keeps M granting after it sent the state,
 * DLM_FAULT_REMASTER_ANY_OWNER
 * the one that moves a resource other nodes lock too, forgetting their
 * master copies (tests/sim-broken.test).
 */
#include <assert.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

/* Operations per window (unless remaster_window says), and the share (in
 * quarters) of one node that moves the resource to it. */
#define DLM_REMASTER_WINDOW	32
#define DLM_REMASTER_QUARTERS	3

static uint32_t window(const struct dlm_ls *ls)
{
	uint32_t w = ls->ls_core->core_cfg.remaster_window;

	return w && w < UINT16_MAX ? w : DLM_REMASTER_WINDOW;
}

static const struct dlm_list *const_queue(const struct dlm_rsb *r, int i)
{
	return i == 0 ? &r->res_grantq : i == 1 ? &r->res_convertq :
	       &r->res_waitq;
}

/* Every lock on r's queues, grant, convert, wait, each in its order ('i'
 * and 'pos' the caller's cursors; queued(pos) is the lock). */
#define for_each_queued(r, i, pos) \
	for ((i) = 0; (i) < 3; (i)++) \
		dlm_list_for_each(pos, (struct dlm_list *)const_queue(r, i))

static struct dlm_lkb *queued(const struct dlm_list *pos)
{
	return dlm_container_of(pos, struct dlm_lkb, lkb_statequeue);
}

static bool key_is_root(const unsigned char *key, unsigned int keylen)
{
	return key[0] != DLM_KEY_DIGEST_MARK && 1u + key[0] == keylen;
}

static bool is_root_rsb(const struct dlm_rsb *r)
{
	return !r->res_parent && r->res_key[0] != DLM_KEY_DIGEST_MARK &&
	       1u + r->res_key[0] == r->res_keylen;
}

static uint32_t ticks_now(const struct dlm_ls *ls)
{
	return (uint32_t)ls->ls_core->core_ticks;
}

/* One lock operation on r, which we master, by 'nodeid'. */
void dlm_remaster_count(struct dlm_ls *ls, struct dlm_rsb *r, uint32_t nodeid)
{
	if (!dlm_remaster_on(ls) || r->res_parent)
		return;
	if (dlm_ls_running(ls))
		r->res_flags &= ~RESF_REPOINTED;	/* its recovery is over */
	if (r->res_rm_ops >= window(ls))
		r->res_rm_ops = 0;	/* a full window nobody looked at */
	if (r->res_rm_ops == 0) {
		r->res_rm_node = nodeid;
		r->res_rm_hits = 0;
	}
	r->res_rm_ops++;
	if (nodeid == r->res_rm_node)
		r->res_rm_hits++;
}

/* The re-point protocol is on (dlm_core_config.remaster_shared). */
static bool shared(const struct dlm_ls *ls)
{
	return ls->ls_core->core_cfg.remaster_shared != 0;
}

/* With the re-point protocol, any node's lock moves but one still being
 * re-pointed from the last move (its REPOINT unacknowledged), and a local
 * lock of ours only while no operation of it is pending.  Persistent and
 * orphaned locks too, unlike the rule without it: an orphan is its owner
 * node's business (LKBF_ORPHAN and ls_orphans live on the process copy or
 * the local lock; a master copy knows nothing of it), so for the move it
 * is a lock like any other, re-pointed like any other; its adoption is
 * local, and its purge an unlock that waits for the re-point like any
 * operation (test-core-remaster test_orphan_moves_adopted, _purged). */
static bool shared_ok(const struct dlm_lkb *lkb)
{
	if (lkb->lkb_flags & LKBF_REPOINT)
		return false;
	return is_master_copy(lkb) ||
	       (lkb->lkb_wait_type == DLM_WAIT_NONE &&
		!(lkb->lkb_flags & (LKBF_RESEND | LKBF_PARKED |
				    LKBF_OVERLAP_CANCEL | LKBF_OVERLAP_UNLOCK |
				    LKBF_GRANT_HELD | LKBF_DEADLK)));
}

/* Only 'node' holds locks on r (or, with the re-point protocol, any node
 * does), none of them special, and nothing else refers to r here: see
 * "Movable" above. */
static bool movable(struct dlm_ls *ls, struct dlm_rsb *r, uint32_t node)
{
	uint32_t n = 0;
	int i;

	if (!dlm_ls_running(ls) || !is_root_rsb(r) || !is_master(ls, r) ||
	    (r->res_flags & RESF_LOOKUP) || !dlm_list_empty(&r->res_lookupq) ||
	    node == dlm_our_nodeid(ls) || !dlm_ls_is_member(ls, node))
		return false;
	/* our DIR_MOVE not taken yet: a move now would send a second one
	 * that may reach the directory node first ("The directory") */
	if ((r->res_flags & RESF_DIR_UNACKED) &&
	    ls->ls_core->core_fault != DLM_FAULT_REMASTER_DIR_UNACKED)
		return false;
	for (i = 0; i < 3; i++) {
		const struct dlm_list *pos;

		dlm_list_for_each(pos, const_queue(r, i)) {
			const struct dlm_lkb *lkb =
				dlm_container_of(pos, struct dlm_lkb,
						 lkb_statequeue);

			/* a demoted lock whose owner is not told yet stays,
			 * either way ("As built"): its owner's copy still
			 * holds the old mode, which N installs for its own
			 * lock and which a REPOINT's owner keeps.  This
			 * check once sat inside the ?: below's third operand
			 * (|| binds tighter), so with the re-point protocol
			 * a demoted lock moved: n6 installed its own CR->CW
			 * as CR, beside its NL->EX, and the two waited for
			 * each other for ever (dlm-sim --alloc-faults 20
			 * --faults --remaster --repoint --rehot 8 --ops 1000
			 * --bounce --nodes 5 seed 3284).  The other checks
			 * there stay the rule without the protocol only,
			 * as they have been run since the protocol came */
			if ((lkb->lkb_sbflags & DLM_SBF_DEMOTED) ||
			    (shared(ls) ? !shared_ok(lkb) :
			     (!is_master_copy(lkb) ||
			      (lkb->lkb_nodeid != node &&
			       ls->ls_core->core_fault !=
			       DLM_FAULT_REMASTER_ANY_OWNER) ||
			      lkb->lkb_nchildren ||
			      (lkb->lkb_flags & LKBF_ORPHAN) ||
			      (lkb->lkb_exflags & DLM_LKF_PERSISTENT))))
				return false;
			n++;
		}
	}
	/* res_nlkbs counts child resources too: none may be left */
	return n > 0 && r->res_nlkbs == n;
}

/* The re-point protocol, M's part: one MIGRATE_LOCK record per lock on
 * r, in queue order, to the new master 'node'. */
static void send_records(struct dlm_ls *ls, struct dlm_rsb *r, uint32_t node)
{
	uint32_t us = dlm_our_nodeid(ls);
	struct dlm_list *pos;
	int i;

	for_each_queued(r, i, pos) {
		const struct dlm_lkb *lkb = queued(pos);
		struct dlm_msg m;

		dlm_lkb_to_msg(&m, DLM_MSG_MIGRATE_LOCK, lkb, lkb->lkb_status);
		m.m_key = r->res_key;
		m.m_keylen = r->res_keylen;
		m.m_nodeid = is_master_copy(lkb) ? lkb->lkb_nodeid : us;
		m.m_remid = is_master_copy(lkb) ? lkb->lkb_remid : lkb->lkb_id;
		m.m_lkid = lkb->lkb_id;
		m.m_bastmode = DLM_LOCK_IV;
		if (!dlm_token_mode(m.m_grmode))
			m.m_token = 0;
		dlm_send_msg(ls, &m, node);
	}
}

/* MOVED to every other node with a lock on r: after every reply, GRANT
 * and BAST we sent it about r (one FIFO link). */
static void send_moved(struct dlm_ls *ls, struct dlm_rsb *r, uint32_t node)
{
	uint32_t sent[DLM_MAX_NODES];
	unsigned int nsent = 0, k;
	struct dlm_list *pos;
	int i;

	for_each_queued(r, i, pos) {
		const struct dlm_lkb *lkb = queued(pos);
		uint32_t x = lkb->lkb_nodeid;
		struct dlm_msg m;

		if (!is_master_copy(lkb) || x == node)
			continue;
		for (k = 0; k < nsent && sent[k] != x; k++)
			;
		if (k < nsent || nsent == DLM_MAX_NODES)
			continue;
		sent[nsent++] = x;
		dlm_msg_init(&m, DLM_MSG_MOVED);
		m.m_key = r->res_key;
		m.m_keylen = r->res_keylen;
		m.m_nodeid = node;
		m.m_grmode = DLM_LOCK_IV;
		m.m_rqmode = DLM_LOCK_IV;
		m.m_bastmode = DLM_LOCK_IV;
		dlm_send_msg(ls, &m, x);
	}
}

/* Send r's master state to 'node' and stop mastering r, in one step. */
static void migrate(struct dlm_ls *ls, struct dlm_rsb *r, uint32_t node)
{
	char name[DLM_KEY_TEXT_LEN];
	struct dlm_list *pos;
	struct dlm_msg m;
	int i;

	if (shared(ls))
		send_records(ls, r, node);
	dlm_msg_init(&m, DLM_MSG_MIGRATE);
	m.m_key = r->res_key;
	m.m_keylen = r->res_keylen;
	m.m_nodeid = r->res_nlkbs;
	m.m_lvbseq = r->res_lvbseq;
	m.m_lvb = dlm_res_lvb(r);
	m.m_lvblen = DLM_LVB_LEN;
	m.m_flags = (r->res_flags & RESF_VALNOTVALID) ? DLM_MF_VALNOTVALID : 0;
	m.m_grmode = DLM_LOCK_IV;
	m.m_rqmode = DLM_LOCK_IV;
	m.m_bastmode = DLM_LOCK_IV;
	dlm_send_msg(ls, &m, node);
	dlm_key_format(r->res_key, r->res_keylen, name, sizeof(name));
	log_ls(ls, DLM_LOG_DEBUG, "remaster: \"%s\" moves to node %u (%u locks)",
	       name, node, r->res_nlkbs);
	ls->ls_remasters++;
	r->res_flags |= RESF_MOVED;
	r->res_rm_tick = ticks_now(ls);
	r->res_rm_ops = 0;
	if (ls->ls_core->core_fault == DLM_FAULT_REMASTER_NO_FREEZE)
		return;		/* broken: both of us master r now */
	dlm_rsb_hold(ls, r);
	if (shared(ls))
		send_moved(ls, r, node);
	for (i = 0; i < 3; i++) {
		struct dlm_list *q = (struct dlm_list *)const_queue(r, i);
		struct dlm_list *tmp;

		dlm_list_for_each_safe(pos, tmp, q) {
			struct dlm_lkb *lkb = dlm_container_of(pos,
							       struct dlm_lkb,
							       lkb_statequeue);

			if (is_master_copy(lkb) || !shared(ls)) {
				dlm_destroy_lkb(ls, lkb);
				continue;
			}
			/* our client's lock: a process copy now, which the
			 * new master's REPOINT names.  The basts sent for it
			 * here (lkb_highbast) are this master's record: the
			 * new one keeps its own; kept here, should r come
			 * back, a lock granted at the other master meanwhile
			 * would get no bast for a mode it was sent before
			 * (dlm-sim --alloc-faults 50 --faults --remaster
			 * --repoint --rehot 8 --ops 1000 --bounce
			 * --max-tossed 1 --partitions --daemon-deaths
			 * --dir-lag 300 seed 893: two conversions to EX
			 * waited for ever behind a CR told nothing) */
			lkb->lkb_remid = 0;
			lkb->lkb_highbast = DLM_LOCK_IV;
			lkb->lkb_flags |= LKBF_REPOINT;
		}
	}
	r->res_nodeid = node;
	for_each_queued(r, i, pos) {
		/* queued at a remote master now */
		dlm_audit_queued(ls, queued(pos));
		dlm_deadlock_queued(ls, queued(pos));
	}
	r->res_flags |= RESF_MOVED_AWAY;
	r->res_flags &= ~RESF_VALNOTVALID;
	free(r->res_lvb);
	r->res_lvb = NULL;
	dlm_rsb_release(ls, r);	/* unused now: to the toss list */
}

/* After an operation of another node on r, which we master: has a
 * window closed that moves r there? */
void dlm_remaster_consider(struct dlm_ls *ls, struct dlm_rsb *r)
{
	uint32_t node = r->res_rm_node, hits = r->res_rm_hits;

	if (!dlm_remaster_on(ls) || r->res_rm_ops < window(ls))
		return;
	r->res_rm_ops = 0;
	if (hits * 4 < window(ls) * DLM_REMASTER_QUARTERS)
		return;
	if ((r->res_flags & RESF_MOVED) &&
	    ticks_now(ls) - r->res_rm_tick < ls->ls_core->core_cfg.remaster_ticks)
		return;		/* moved lately: stay put (hysteresis) */
	if (movable(ls, r, node))
		migrate(ls, r, node);
}

/* The directory record of key moved from 'old' to 'master': 0, or
 * -ENOMEM with nothing changed. */
static int dir_move(struct dlm_ls *ls, const unsigned char *key,
		    unsigned int keylen, uint32_t hash, uint32_t old,
		    uint32_t master)
{
	char name[DLM_KEY_TEXT_LEN];
	uint32_t cur;
	int rv = dlm_dir_move(ls, key, keylen, hash, old, master, &cur);

	if (rv)
		return rv < 0 ? rv : 0;
	dlm_key_format(key, keylen, name, sizeof(name));
	log_ls(ls, DLM_LOG_WARNING,
	       "directory: \"%s\" moved from %u to %u, but its master is %u",
	       name, old, master, cur);
	return 0;
}

/* Is held message h a record of r from 'from'?  Decoded into *m. */
static bool record_of(const struct dlm_held *h, uint32_t from,
		      const struct dlm_rsb *r, struct dlm_msg *m)
{
	return h->h_from == from && !dlm_msg_decode(h->h_buf, h->h_len, m, NULL) &&
	       m->m_type == DLM_MSG_MIGRATE_LOCK && m->m_keylen == r->res_keylen &&
	       !memcmp(m->m_key, r->res_key, r->res_keylen);
}

static bool records_of(struct dlm_ls *ls, uint32_t from,
		       const struct dlm_rsb *r)
{
	const struct dlm_list *pos;
	struct dlm_msg m;

	dlm_list_for_each(pos, &ls->ls_rm_records)
		if (record_of(dlm_container_of(pos, struct dlm_held, h_list),
			      from, r, &m))
			return true;
	return false;
}

/* lkb (record_make) from record m goes on r's queues. */
static void record_place(struct dlm_ls *ls, struct dlm_rsb *r,
			 const struct dlm_msg *m,
			 struct dlm_lkb *lkb)
{
	if (m->m_exflags & DLM_LKF_VALBLK)
		lkb->lkb_flags |= LKBF_VALBLK;
	lkb->lkb_nodeid = m->m_nodeid;
	dlm_mstcpy_link(ls, lkb);
	lkb->lkb_remid = m->m_remid;
	lkb->lkb_ownerid = m->m_owner;
	lkb->lkb_exflags = m->m_exflags;
	lkb->lkb_sbflags = (uint8_t)m->m_sbflags;
	lkb->lkb_grmode = m->m_status == DLM_LKSTS_WAITING ? DLM_LOCK_IV :
			  m->m_grmode;
	lkb->lkb_rqmode = m->m_rqmode;
	lkb->lkb_highbast = DLM_LOCK_IV;
	lkb->lkb_last_bast = DLM_LOCK_IV;
	lkb->lkb_lvbseq = m->m_lvbseq;
	lkb->lkb_token = m->m_token;
	lkb->lkb_rsb = r;
	dlm_rsb_hold(ls, r);
	dlm_queue_lkb_tail(ls, r, lkb, m->m_status);	/* in M's order */
	/* until REPOINT_REPLY, or while stopped until its owner's RC_LOCK
	 * (dlm_remaster_unmatched) */
	lkb->lkb_flags |= LKBF_REPOINT;
	if (!dlm_ls_running(ls))
		r->res_flags |= RESF_REPOINTED;	/* its owner sends RC_LOCK */
}

/* A new master copy from record m, the lock of node m_nodeid, not yet
 * on r's queues (record_place), or NULL for want of memory. */
static struct dlm_lkb *record_make(struct dlm_ls *ls, const struct dlm_msg *m)
{
	struct dlm_lkb *lkb = dlm_lkb_create(ls, 0);

	if (!lkb)
		return NULL;
	lkb->lkb_flags = LKBF_MSTCPY | LKBF_WANT_BAST;
	if (!dlm_lkb_set_range(ls, lkb, DLM_LKB_GR, &m->m_grrange) ||
	    !dlm_lkb_set_range(ls, lkb, DLM_LKB_RQ, &m->m_rqrange) ||
	    (m->m_lvb && !dlm_lvb_store(ls, &lkb->lkb_lvb, m->m_lvb))) {
		dlm_lkb_free(ls, lkb);
		return NULL;
	}
	return lkb;
}

/* A new master copy on r from record m: the lock of node m_nodeid. */
static int record_mstcpy(struct dlm_ls *ls, struct dlm_rsb *r,
			 const struct dlm_msg *m)
{
	struct dlm_lkb *lkb = record_make(ls, m);

	if (!lkb)
		return -ENOMEM;
	record_place(ls, r, m, lkb);
	return 0;
}

/* Does record m (of r, from its old master) make a master copy here? */
static bool record_needs_copy(struct dlm_ls *ls, const struct dlm_msg *m)
{
	return m->m_nodeid != dlm_our_nodeid(ls) &&
	       dlm_ls_is_member(ls, m->m_nodeid);
}

/* Before a MIGRATE changes anything: the master copies its records will
 * need, made now (on 'made', through their lkb_statequeue, in record
 * order), so that installing them cannot fail half-way and leave a lock
 * out of r's queues (the new master would grant against it).  0, or
 * -ENOMEM with nothing made: the MIGRATE is refused, to come again. */
static int make_records(struct dlm_ls *ls, uint32_t from, struct dlm_rsb *r,
			struct dlm_list *made)
{
	struct dlm_list *pos;

	dlm_list_init(made);
	dlm_list_for_each(pos, &ls->ls_rm_records) {
		struct dlm_held *h = dlm_container_of(pos, struct dlm_held,
						      h_list);
		struct dlm_lkb *lkb;
		struct dlm_msg m;

		if (!record_of(h, from, r, &m) || !record_needs_copy(ls, &m))
			continue;
		lkb = record_make(ls, &m);
		if (!lkb) {
			while (!dlm_list_empty(made)) {
				lkb = dlm_list_first(made, struct dlm_lkb,
						     lkb_statequeue);
				dlm_list_del(&lkb->lkb_statequeue);
				dlm_lkb_free(ls, lkb);
			}
			return -ENOMEM;
		}
		dlm_list_add_tail(&lkb->lkb_statequeue, made);
	}
	return 0;
}

/* The records of r from 'from' become r's queues, in their order: our
 * own process copies where they name ours, new master copies for other
 * nodes' locks (none for a departed node's: *stale is set if one of them
 * held PW or EX, whose value may be newer than r's, as purge_departed in
 * recover.c judges).  Returns the records. */
static uint32_t install_records(struct dlm_ls *ls, uint32_t from,
				struct dlm_rsb *r, bool *stale,
				struct dlm_list *made)
{
	uint32_t us = dlm_our_nodeid(ls), n = 0;
	struct dlm_list *pos, *tmp;

	dlm_list_for_each_safe(pos, tmp, &ls->ls_rm_records) {
		struct dlm_held *h = dlm_container_of(pos, struct dlm_held,
						      h_list);
		struct dlm_lkb *lkb;
		struct dlm_msg m;

		if (!record_of(h, from, r, &m))
			continue;
		n++;
		if (m.m_nodeid != us) {
			if (!dlm_ls_is_member(ls, m.m_nodeid)) {
				if (m.m_status != DLM_LKSTS_WAITING &&
				    m.m_grmode >= DLM_LOCK_PW)
					*stale = true;
			} else if (!dlm_list_empty(made)) {
				lkb = dlm_list_first(made, struct dlm_lkb,
						     lkb_statequeue);
				dlm_list_del(&lkb->lkb_statequeue);
				record_place(ls, r, &m, lkb);
			} else {
				log_ls(ls, DLM_LOG_ERR,
				       "remaster: no copy made for node %u's "
				       "lock %08x", m.m_nodeid, m.m_remid);
			}
		} else {
			lkb = dlm_lkb_find(ls, m.m_remid);
			if (lkb && !is_master_copy(lkb) && lkb->lkb_rsb == r &&
			    lkb->lkb_status == m.m_status)
				dlm_queue_lkb_tail(ls, r, lkb, lkb->lkb_status);
			else
				log_ls(ls, DLM_LOG_WARNING,
				       "remaster: record of our lock %08x: unknown or in another state",
				       m.m_remid);
		}
		dlm_list_del(&h->h_list);
		free(h);
	}
	return n;
}

/* REPOINT to the owner of every master copy installed from a record,
 * before anything we grant (FIFO). */
static void send_repoints(struct dlm_ls *ls, struct dlm_rsb *r)
{
	bool skip = ls->ls_core->core_fault == DLM_FAULT_REMASTER_SKIP_REPOINT;
	struct dlm_list *pos;
	int i;

	for_each_queued(r, i, pos) {
		const struct dlm_lkb *lkb = queued(pos);
		struct dlm_msg m;

		if (!is_master_copy(lkb) || !(lkb->lkb_flags & LKBF_REPOINT))
			continue;
		if (skip) {
			skip = false;	/* broken: its owner waits */
			continue;
		}
		dlm_msg_init(&m, DLM_MSG_REPOINT);
		m.m_key = r->res_key;
		m.m_keylen = r->res_keylen;
		m.m_nodeid = lkb->lkb_nodeid;
		m.m_remid = lkb->lkb_remid;
		m.m_lkid = lkb->lkb_id;
		m.m_status = lkb->lkb_status;
		m.m_grmode = lkb->lkb_grmode;
		m.m_rqmode = lkb->lkb_rqmode;
		m.m_bastmode = DLM_LOCK_IV;
		dlm_send_msg(ls, &m, lkb->lkb_nodeid);
	}
}

/* MIGRATE: we master m_key from now on.  While running, or at the
 * directory step of a recovery (dlm_remaster_recover). */
static int install(struct dlm_ls *ls, const struct dlm_msg *m)
{
	uint32_t hash = dlm_hash_bytes(m->m_key, m->m_keylen);
	uint32_t us = dlm_our_nodeid(ls), n = 0;
	struct dlm_rsb *r = dlm_rsb_find(ls, m->m_key, m->m_keylen, hash);
	char name[DLM_KEY_TEXT_LEN], *lvb = NULL;
	struct dlm_list made;
	bool stale = false;
	int i;

	dlm_key_format(m->m_key, m->m_keylen, name, sizeof(name));
	/* at a recovery's directory step r may be no step's yet (made
	 * below, or while stopped): room on the steps' list first, before
	 * anything changes, or the MIGRATE stays held and the step fails,
	 * to run again.  Taken with no room to track it, r was never
	 * registered: another node became its master too (test-core-remaster
	 * test_new_masters_without_copy_no_memory) */
	if (!dlm_ls_running(ls) && dlm_recover_track_room(ls)) {
		log_ls(ls, DLM_LOG_WARNING, "remaster: no memory to recover "
		       "\"%s\" from node %u: again later", name, m->m_from);
		return -ENOMEM;
	}
	if (shared(ls) && key_is_root(m->m_key, m->m_keylen) &&
	    (!r || (!r->res_nodeid && !r->res_parent))) {
		/* with the re-point protocol we need no lock on it to be
		 * its destination: no copy here (we let it go, or never
		 * had one), or one whose master we are looking up (the
		 * lookup's reply then keeps us, lock.c) */
		if (!r)
			r = dlm_rsb_create(ls, m->m_key, m->m_keylen, hash);
		if (!r) {
			log_ls(ls, DLM_LOG_ERR, "remaster: no memory for \"%s\"",
			       name);
			return -ENOMEM;
		}
		r->res_nodeid = m->m_from;
	}
	if (!r || is_master(ls, r) || r->res_nodeid != m->m_from ||
	    r->res_parent) {
		log_ls(ls, DLM_LOG_WARNING,
		       "remaster: node %u moves \"%s\" here, which it does not master",
		       m->m_from, name);
		return -ENOENT;
	}
	/* the value's room too, before anything changes: marked not valid
	 * for want of memory, a value written under a lock of the old
	 * master's was lost (dlm-sim --alloc-faults 20 --faults --remaster
	 * --repoint --rehot 4 --ops 600 seed 1958: "grant carries v0
	 * VALNOTVALID, the latest write is v24") */
	if ((!r->res_lvb && !dlm_lvb_store(ls, &lvb, m->m_lvb)) ||
	    (records_of(ls, m->m_from, r) &&
	     make_records(ls, m->m_from, r, &made))) {
		log_ls(ls, DLM_LOG_WARNING, "remaster: no memory to install "
		       "\"%s\" from node %u: again later", name, m->m_from);
		free(lvb);
		if (dlm_rsb_unused(r))
			/* onto the toss list */
			dlm_rsb_hold(ls, r), dlm_rsb_release(ls, r);
		return -ENOMEM;
	}
	dlm_rsb_hold(ls, r);	/* tossed at the end if nothing is on it */
	if (records_of(ls, m->m_from, r)) {
		n = install_records(ls, m->m_from, r, &stale, &made);
	} else {
		for (i = 0; i < 3; i++) {
			const struct dlm_list *pos;

			dlm_list_for_each(pos, const_queue(r, i))
				n++;
		}
	}
	if (n != m->m_nodeid)
		log_ls(ls, DLM_LOG_WARNING,
		       "remaster: \"%s\" from node %u with %u locks, %u here",
		       name, m->m_from, m->m_nodeid, n);
	r->res_nodeid = us;
	r->res_flags &= ~(RESF_MOVED_AWAY | RESF_VALNOTVALID);
	r->res_flags |= RESF_MOVED;
	r->res_rm_tick = ticks_now(ls);
	r->res_rm_ops = 0;
	r->res_lvbseq = m->m_lvbseq;
	if (lvb)
		r->res_lvb = lvb;
	else if (!dlm_lvb_store(ls, &r->res_lvb, m->m_lvb))
		r->res_flags |= RESF_VALNOTVALID;	/* never: room above */
	if ((m->m_flags & DLM_MF_VALNOTVALID) || stale)
		r->res_flags |= RESF_VALNOTVALID;
	/* our process copies are locks on our own queues now: in the same
	 * order, no longer waiting at a remote master */
	for (i = 0; i < 3; i++) {
		struct dlm_list *pos;

		dlm_list_for_each(pos, (struct dlm_list *)const_queue(r, i)) {
			struct dlm_lkb *lkb =
				dlm_container_of(pos, struct dlm_lkb,
						 lkb_statequeue);

			if (is_master_copy(lkb))
				continue;	/* from a record */
			lkb->lkb_remid = 0;
			/* no bast sent by this master yet (the old one's
			 * record is not ours; see remaster_shared) */
			lkb->lkb_highbast = DLM_LOCK_IV;
			dlm_audit_queued(ls, lkb);
			dlm_deadlock_queued(ls, lkb);
		}
	}
	log_ls(ls, DLM_LOG_DEBUG, "remaster: \"%s\" moved here from node %u",
	       name, m->m_from);
	if (!dlm_ls_running(ls)) {
		/* recovery registers it, and grants at its last step what
		 * the install leaves grantable: a departed owner's record
		 * made no master copy, so what waited behind its lock may
		 * fit now, as after a purge (seed 2732); an rsb the steps
		 * do not know yet (made here, or while stopped) is added */
		if (dlm_recover_track_rsb(ls, r))	/* never: room above */
			log_ls(ls, DLM_LOG_ERR,
			       "remaster: no memory to recover \"%s\"", name);
		r->res_flags |= RESF_RECOVER_GRANT;
		dlm_rsb_release(ls, r);
		return 0;
	}
	if (dlm_dir_nodeid(ls, hash) == us) {
		if (dir_move(ls, m->m_key, m->m_keylen, hash, m->m_from, us))
			log_ls(ls, DLM_LOG_ERR, "remaster: no memory to move "
			       "\"%s\"'s directory record here", name);
	} else {
		struct dlm_msg d;

		dlm_msg_init(&d, DLM_MSG_DIR_MOVE);
		d.m_key = r->res_key;
		d.m_keylen = r->res_keylen;
		d.m_nodeid = m->m_from;
		dlm_send_msg(ls, &d, dlm_dir_nodeid(ls, hash));
		r->res_flags |= RESF_DIR_UNACKED;	/* until the answer */
	}
	send_repoints(ls, r);
	dlm_grant_pending(ls, r);
	dlm_rsb_release(ls, r);
	return 0;
}

/* Keep message m (re-encoded) on q: 0, or -ENOMEM (not kept: the caller
 * has changed nothing and refuses the message, which its sender's
 * transport offers again, core.h dlm_core_receive). */
static int keep(struct dlm_ls *ls, struct dlm_list *q, const struct dlm_msg *m)
{
	unsigned char buf[DLM_WIRE_MAX_LEN];
	int len = dlm_msg_encode(m, buf, sizeof(buf));

	if (len < 0) {
		log_ls(ls, DLM_LOG_ERR, "remaster: cannot keep %s from node %u",
		       dlm_msg_type_str(m->m_type), m->m_from);
		return 0;
	}
	return dlm_held_add(ls, q, m->m_from, buf, (size_t)len);
}

/* MIGRATE_LOCK: kept, inert, until its MIGRATE (broken variant: taken
 * at once, and we master r from the first record on). */
static int receive_record(struct dlm_ls *ls, const struct dlm_msg *m)
{
	struct dlm_rsb *r = dlm_rsb_find(ls, m->m_key, m->m_keylen,
					 dlm_hash_bytes(m->m_key, m->m_keylen));

	if (ls->ls_core->core_fault == DLM_FAULT_REMASTER_EARLY_GRANT && r &&
	    !r->res_parent &&
	    (is_master(ls, r) || r->res_nodeid == m->m_from) &&
	    m->m_nodeid != dlm_our_nodeid(ls)) {
		r->res_nodeid = dlm_our_nodeid(ls);
		(void)record_mstcpy(ls, r, m);
		/* broken: on a part of the queues */
		dlm_grant_pending(ls, r);
		return 0;
	}
	return keep(ls, &ls->ls_rm_records, m);
}

/* MOVED from r's old master: r is m_nodeid's now, and each of our locks
 * on r awaits its REPOINT; REPOINTs (and what followed them) that came
 * first from the new master are handled now, in order. */
static int receive_moved(struct dlm_ls *ls, const struct dlm_msg *m)
{
	struct dlm_rsb *r = dlm_rsb_find(ls, m->m_key, m->m_keylen,
					 dlm_hash_bytes(m->m_key, m->m_keylen));
	struct dlm_list *pos, *tmp, todo;
	int i;

	if (r && r->res_nodeid == m->m_nodeid)
		return 0;	/* a recovery re-pointed our locks already */
	if (!r || r->res_nodeid != m->m_from || r->res_parent) {
		log_ls(ls, DLM_LOG_WARNING,
		       "remaster: MOVED from node %u, which we do not know as master",
		       m->m_from);
		return -ENOENT;
	}
	r->res_nodeid = m->m_nodeid;
	for_each_queued(r, i, pos) {
		struct dlm_lkb *lkb = queued(pos);

		lkb->lkb_flags |= LKBF_REPOINT;
		lkb->lkb_flags &= ~LKBF_RP_HELD;
		lkb->lkb_remid = 0;
		dlm_audit_queued(ls, lkb);
	}
	/* what the new master sent about r before this, in its order */
	dlm_list_init(&todo);
	dlm_list_for_each_safe(pos, tmp, &ls->ls_rm_held) {
		struct dlm_held *h = dlm_container_of(pos, struct dlm_held,
						      h_list);
		struct dlm_lkb *lkb;
		struct dlm_msg hm;

		if (h->h_from != m->m_nodeid ||
		    dlm_msg_decode(h->h_buf, h->h_len, &hm, NULL))
			continue;
		lkb = dlm_lkb_find(ls, hm.m_remid);
		if (!lkb || is_master_copy(lkb) || lkb->lkb_rsb != r)
			continue;
		dlm_list_del(&h->h_list);
		dlm_list_add_tail(&h->h_list, &todo);
	}
	/* Nothing of these is lost for want of memory: each is a REPOINT
	 * or a REQUEST_REPLY..BAST from r's new master about a process copy
	 * on r (dlm_remaster_hold), and none is refused -ENOMEM now.  r is
	 * an rsb, so no lone lock of its name needs unfolding
	 * (dlm_solo_unfold_msg: a name is folded only while it has no rsb);
	 * r's master is now their sender, so dlm_remaster_hold holds none
	 * again (it keeps, and can fail to, only messages from a node that
	 * is not the lock's master); and receive_repoint, receive_reply,
	 * receive_grant and receive_bast return 0, -ENOENT, -EPROTO or
	 * -EBADMSG, never -ENOMEM (what they cannot allocate they settle
	 * themselves, as when such a message comes straight in).  A future
	 * handler that can refuse here needs the ls_held treatment (ls.c
	 * dlm_held_replay_ls).  Probed:
	 * dlm-sim --faults --remaster --repoint --alloc-faults 20..100,
	 * 9,500 seeds, 46 such messages replayed, none refused. */
	/* news of r's master: requests parked after refusals go there
	 * (lock.c request_bounced), before r may go with the replies */
	dlm_redo_lookups(ls, r);
	dlm_held_replay(ls, &todo, dlm_lock_receive);
	return 0;
}

/* REPOINT from r's new master: our lock's master copy is m_lkid there. */
static int receive_repoint(struct dlm_ls *ls, const struct dlm_msg *m)
{
	struct dlm_lkb *lkb = dlm_lkb_find(ls, m->m_remid);
	struct dlm_msg rp;

	if (lkb && !is_master_copy(lkb) && !(lkb->lkb_flags & LKBF_REPOINT) &&
	    lkb->lkb_rsb->res_nodeid == m->m_from && lkb->lkb_remid == m->m_lkid)
		goto reply;	/* a recovery re-pointed it already (RC_LOCK) */
	if (!lkb || is_master_copy(lkb) ||
	    lkb->lkb_rsb->res_nodeid != m->m_from ||
	    !(lkb->lkb_flags & LKBF_REPOINT) ||
	    lkb->lkb_rsb->res_keylen != m->m_keylen ||
	    memcmp(lkb->lkb_rsb->res_key, m->m_key, m->m_keylen)) {
		log_ls(ls, DLM_LOG_WARNING,
		       "remaster: REPOINT from node %u for unknown lock %08x",
		       m->m_from, m->m_remid);
		return -ENOENT;
	}
	if (lkb->lkb_status != m->m_status)
		log_ls(ls, DLM_LOG_WARNING,
		       "remaster: lock %08x re-pointed in state %d, here %d",
		       lkb->lkb_id, m->m_status, lkb->lkb_status);
	lkb->lkb_remid = m->m_lkid;
	lkb->lkb_flags &= ~LKBF_REPOINT;
	dlm_audit_queued(ls, lkb);
reply:
	dlm_msg_init(&rp, DLM_MSG_REPOINT_REPLY);
	rp.m_key = m->m_key;
	rp.m_keylen = m->m_keylen;
	rp.m_nodeid = dlm_our_nodeid(ls);
	rp.m_lkid = lkb->lkb_id;
	rp.m_remid = m->m_lkid;
	rp.m_grmode = DLM_LOCK_IV;
	rp.m_rqmode = DLM_LOCK_IV;
	rp.m_bastmode = DLM_LOCK_IV;
	dlm_send_msg(ls, &rp, m->m_from);
	/* news of r's master (it installed): requests parked after
	 * refusals (lock.c request_bounced) go there now */
	dlm_redo_lookups(ls, lkb->lkb_rsb);
	if (lkb->lkb_flags & LKBF_PARKED) {
		/* the operation its client asked for meanwhile */
		lkb->lkb_flags &= ~LKBF_PARKED;
		dlm_redo_op(ls, lkb);
	}
	return 0;
}

static int receive_repoint_reply(struct dlm_ls *ls, const struct dlm_msg *m)
{
	struct dlm_lkb *lkb = dlm_lkb_find(ls, m->m_remid);

	if (!lkb || !is_master_copy(lkb) || lkb->lkb_nodeid != m->m_from ||
	    lkb->lkb_remid != m->m_lkid)
		return -ENOENT;	/* unlocked meanwhile */
	lkb->lkb_flags &= ~LKBF_REPOINT;
	return 0;
}

/* Before any lock message: one from a new master about a lock whose
 * REPOINT is held waits behind it; a REPOINT that came before its old
 * master's MOVED waits for it (essay: "X, on REPOINT").  1: held; 0: not
 * to be held; -ENOMEM: to be held, but no memory to keep it (nothing
 * changed: the message is refused, to come again). */
int dlm_remaster_hold(struct dlm_ls *ls, const struct dlm_msg *m)
{
	uint32_t flags;
	struct dlm_lkb *lkb;

	if (!dlm_remaster_on(ls) ||
	    (m->m_type != DLM_MSG_REPOINT &&
	     (m->m_type < DLM_MSG_REQUEST_REPLY || m->m_type > DLM_MSG_BAST)))
		return 0;
	if (m->m_type == DLM_MSG_REPOINT && m->m_gen != ls->ls_generation)
		return 0;	/* from before a recovery: dropped as stale, not
				 * held (its lock marked for a MOVED that never
				 * comes: dlm-sim --faults --remaster --repoint
				 * --nodes 7 --rehot 8 --ops 2000 --partitions
				 * --bounce seed 321) */
	lkb = dlm_lkb_find(ls, m->m_remid);
	if (!lkb || is_master_copy(lkb) || lkb->lkb_rsb->res_nodeid == m->m_from)
		return 0;
	flags = lkb->lkb_flags;
	if (m->m_type == DLM_MSG_REPOINT) {
		if (lkb->lkb_flags & LKBF_REPOINT)
			return 0;	/* MOVED came: taken now, or refused */
		lkb->lkb_flags |= LKBF_RP_HELD;
	} else if (!(lkb->lkb_flags & LKBF_RP_HELD)) {
		return 0;
	}
	if (keep(ls, &ls->ls_rm_held, m)) {
		lkb->lkb_flags = flags;
		return -ENOMEM;
	}
	return 1;
}

/* Does a lock of ours on r await its re-point?  (Then r's master is the
 * one MOVED named, whatever a refused request is told.) */
bool dlm_remaster_awaits(struct dlm_ls *ls, const struct dlm_rsb *r)
{
	struct dlm_list *pos;
	int i;

	if (!dlm_remaster_on(ls) || is_master(ls, r))
		return false;
	for_each_queued(r, i, pos)
		if (queued(pos)->lkb_flags & LKBF_REPOINT)
			return true;
	return false;
}

void dlm_remaster_free_ls(struct dlm_ls *ls)
{
	dlm_held_drop(&ls->ls_rm_records, ls, NULL);
	dlm_held_drop(&ls->ls_rm_held, ls, NULL);
}

/* The directory node took DIR_MOVE m: tell its sender, the new master,
 * which may move the resource on from now ("The directory"). */
static void dir_ack(struct dlm_ls *ls, const struct dlm_msg *m)
{
	struct dlm_msg a;

	dlm_msg_init(&a, DLM_MSG_DIR_MOVE);
	a.m_key = m->m_key;
	a.m_keylen = m->m_keylen;
	a.m_nodeid = m->m_from;
	a.m_flags = DLM_MF_DIR_ACK;
	dlm_send_msg(ls, &a, m->m_from);
}

/* The directory node's answer to our DIR_MOVE. */
static int dir_acked(struct dlm_ls *ls, const struct dlm_msg *m,
		     uint32_t hash)
{
	struct dlm_rsb *r = dlm_rsb_find(ls, m->m_key, m->m_keylen, hash);

	if (m->m_nodeid != dlm_our_nodeid(ls) ||
	    m->m_from != dlm_dir_nodeid(ls, hash))
		return -EINVAL;
	if (r)
		r->res_flags &= ~RESF_DIR_UNACKED;
	return 0;
}

int dlm_remaster_receive(struct dlm_ls *ls, const struct dlm_msg *m)
{
	uint32_t hash = dlm_hash_bytes(m->m_key, m->m_keylen);
	int rv;

	/* a move's halves may reach the directory and the new master apart:
	 * only a full rebuild repairs that (recover.c, PARTIAL DIRECTORY) */
	ls->ls_rm_seen = true;
	if (m->m_gen != ls->ls_generation) {
		/* from before a recovery: the MIGRATE was installed at its
		 * directory step (it cannot be otherwise), the directory
		 * rebuilt with the new master */
		log_ls(ls, DLM_LOG_WARNING, "stale %s from node %u dropped",
		       dlm_msg_type_str(m->m_type), m->m_from);
		return 0;
	}
	switch (m->m_type) {
	case DLM_MSG_MIGRATE:
		return install(ls, m);
	case DLM_MSG_MIGRATE_LOCK:
		return receive_record(ls, m);
	case DLM_MSG_MOVED:
		return receive_moved(ls, m);
	case DLM_MSG_REPOINT:
		return receive_repoint(ls, m);
	case DLM_MSG_REPOINT_REPLY:
		return receive_repoint_reply(ls, m);
	default:
		break;
	}
	if (m->m_flags & DLM_MF_DIR_ACK)
		return dir_acked(ls, m, hash);
	if (dlm_dir_nodeid(ls, hash) != dlm_our_nodeid(ls) ||
	    m->m_key[0] == DLM_KEY_DIGEST_MARK || 1u + m->m_key[0] != m->m_keylen)
		return -EINVAL;
	/* -ENOMEM: not taken, offered again (core.h) */
	rv = dir_move(ls, m->m_key, m->m_keylen, hash, m->m_nodeid, m->m_from);
	if (!rv)
		dir_ack(ls, m);
	return rv;
}

/* Is held message m a record of the resource MIGRATE or MOVED mm moves,
 * or does it answer one of our locks on r, our copy of it (NULL: none)? */
static bool about_rsb(struct dlm_ls *ls, const struct dlm_msg *m,
		      const struct dlm_msg *mm, const struct dlm_rsb *r)
{
	struct dlm_lkb *lkb;

	if (m->m_type == DLM_MSG_MIGRATE_LOCK)
		return m->m_keylen == mm->m_keylen &&
		       !memcmp(m->m_key, mm->m_key, mm->m_keylen);
	if (!r || m->m_type < DLM_MSG_REQUEST_REPLY || m->m_type > DLM_MSG_BAST)
		return false;
	lkb = dlm_lkb_find(ls, m->m_remid);
	return lkb && !is_master_copy(lkb) && lkb->lkb_rsb == r;
}

/* Held MIGRATE h for r: first what its sender told us about r before it
 * (records, replies, grants, basts ahead of it on the FIFO link), so that
 * our copies are in the state the sender moved, then the move itself.
 * The records too when we have no copy of r (install makes one): those
 * that came while we were stopped were left held, and the install made
 * no master copy of their locks (dlm-sim --seed 4115 --nodes 6 --faults
 * --repoint --daemon-deaths: "from node 1 with 3 locks, 1 here").
 * -ENOMEM: the move could not be installed (it stays held). */
static int install_held(struct dlm_ls *ls, struct dlm_held *mig,
			const struct dlm_msg *mm)
{
	struct dlm_rsb *r = dlm_rsb_find(ls, mm->m_key, mm->m_keylen,
					 dlm_hash_bytes(mm->m_key,
							mm->m_keylen));
	struct dlm_list *pos = ls->ls_held.next;

	while (pos != &mig->h_list) {
		struct dlm_held *h = dlm_container_of(pos, struct dlm_held,
						      h_list);
		struct dlm_msg m;

		pos = pos->next;
		if (h->h_from != mig->h_from ||
		    dlm_msg_decode(h->h_buf, h->h_len, &m, NULL) ||
		    !about_rsb(ls, &m, mm, r))
			continue;
		dlm_list_del(&h->h_list);
		if (dlm_lock_receive(ls, &m) == -ENOMEM) {
			/* not taken (a record with no memory to keep it):
			 * it stays held, in its place, and the step fails,
			 * to run again; dropped, the new master installed
			 * fewer locks than were moved (dlm-sim --alloc-faults
			 * 20 --faults --remaster --repoint --rehot 4 --ops
			 * 600 seed 1575: "8 locks, 6 here") */
			dlm_list_add_tail(&h->h_list, pos);
			return -ENOMEM;
		}
		free(h);
	}
	if (mm->m_type == DLM_MSG_MOVED)
		/* 0 or -ENOENT (not our master's word), never -ENOMEM:
		 * nothing of it to keep (receive_moved) */
		(void)receive_moved(ls, mm);
	else if (install(ls, mm) == -ENOMEM)
		return -ENOMEM;
	return 0;
}

/* The held REPOINTs go (their MOVED never comes): a lock one of them
 * named that is on no queue here (a request on its way to the old master,
 * which queued it and moved it, and died with the answer: redone at
 * finish) holds no more of the new master's messages.  Left marked, the
 * lock's RC_LOCK at a later recovery made a second master copy of it
 * (dlm-sim --faults --remaster --repoint --nodes 7 --rehot 8 --ops 2000
 * --partitions --bounce seed 321), and its new master's answers would be
 * held for ever. */
static void held_repoints_drop(struct dlm_ls *ls)
{
	struct dlm_list *pos;

	dlm_list_for_each(pos, &ls->ls_rm_held) {
		const struct dlm_held *h = dlm_container_of(pos,
						struct dlm_held, h_list);
		struct dlm_lkb *lkb;
		struct dlm_msg m;

		if (dlm_msg_decode(h->h_buf, h->h_len, &m, NULL) ||
		    m.m_type != DLM_MSG_REPOINT)
			continue;
		lkb = dlm_lkb_find(ls, m.m_remid);
		if (lkb && !is_master_copy(lkb))
			lkb->lkb_flags &= ~LKBF_RP_HELD;
	}
	dlm_held_drop(&ls->ls_rm_held, ls, NULL);
}

/* Recovery, directory step, after the held MIGRATEs and MOVEDs: a lock
 * still awaiting its re-point marks its resource for a new master, so
 * that the masters and locks steps resend it (to the new master, whose
 * master copy from the record it matches: RESF_REPOINTED); its parked
 * operation is redone at finish.  A master copy's REPOINT is acknowledged
 * by that RC_LOCK, or was applied already.  REPOINTs held for a MOVED
 * that never comes, and records whose MIGRATE never comes, go. */
static void repoint_recover(struct dlm_ls *ls)
{
	size_t i;

	for (i = 0; i < ls->ls_rec_nrsbs; i++) {
		struct dlm_rsb *r = ls->ls_rec_rsbs[i];
		struct dlm_list *pos;
		int k;

		/* our DIR_MOVE lost or dropped as stale: the directory is
		 * rebuilt whole (a remastering message was handled since
		 * the last rebuild), from our registration */
		r->res_flags &= ~RESF_DIR_UNACKED;
		for_each_queued(r, k, pos) {
			struct dlm_lkb *lkb = queued(pos);

			if (is_master_copy(lkb)) {
				/* its owner's RC_LOCK matches it, or it goes
				 * at the grant step (dlm_remaster_unmatched) */
				if (lkb->lkb_flags & LKBF_REPOINT)
					r->res_flags |= RESF_REPOINTED;
				continue;
			}
			if (!(lkb->lkb_flags & (LKBF_REPOINT | LKBF_RP_HELD)))
				continue;
			lkb->lkb_flags &= ~(LKBF_REPOINT | LKBF_RP_HELD);
			lkb->lkb_flags |= LKBF_RP_RESENT;
			if (!is_master(ls, r)) {
				r->res_flags |= RESF_RECOVER_MASTER;
				r->res_new_nodeid = 0;
			}
			if (lkb->lkb_flags & LKBF_PARKED) {
				lkb->lkb_flags &= ~LKBF_PARKED;
				dlm_resend_later(ls, lkb);
			}
		}
	}
	held_repoints_drop(ls);
	dlm_held_drop(&ls->ls_rm_records, ls, NULL);
}

/* Recovery's walks of ls_held for the messages of some types from live
 * members (the masters and directory steps): *pos starts at
 * ls->ls_held.next; each call decodes the next such message into *m and
 * returns it, *pos already past it, so that the caller may take it off
 * the list and free it, or take off messages ahead of it (install_held);
 * NULL at the end.  types: HELD_TYPE() bits, or'ed. */
#define HELD_TYPE(t)	((uint64_t)1 << (t))
static_assert(DLM_MSG_MAX < 64, "HELD_TYPE: a message type per bit");

static struct dlm_held *held_next(struct dlm_ls *ls, struct dlm_list **pos,
				  uint64_t types, struct dlm_msg *m)
{
	while (*pos != &ls->ls_held) {
		struct dlm_held *h = dlm_container_of(*pos, struct dlm_held,
						      h_list);

		*pos = (*pos)->next;
		if (!dlm_msg_decode(h->h_buf, h->h_len, m, NULL) &&
		    m->m_type < 64 && (types & HELD_TYPE(m->m_type)) &&
		    dlm_ls_is_member(ls, h->h_from))
			return h;
	}
	return NULL;
}

/* Recovery: the master 'from' took our RC_LOCK for lkb.  If lkb awaited
 * its re-point, that master may have granted its master copy (from the
 * record) before: a GRANT of its about lkb held here (ls_held) came
 * before this reply (one link, in order), and the RC_LOCK has since set
 * that master copy to what we know: it is void, and replayed at finish
 * would grant what the master now has queued (it grants it again when it
 * can).  A BAST is kept: the master does not send it again, and the
 * holder it asks to let go still holds (seed 248 of --nodes 3 hung when
 * it went too). */
void dlm_remaster_rc_reply(struct dlm_ls *ls, struct dlm_lkb *lkb,
			   uint32_t from)
{
	struct dlm_list *pos = ls->ls_held.next;

	if (!(lkb->lkb_flags & LKBF_RP_RESENT))
		return;
	while (pos != &ls->ls_held) {
		struct dlm_held *h = dlm_container_of(pos, struct dlm_held,
						      h_list);
		struct dlm_msg m;

		pos = pos->next;
		if (h->h_from != from ||
		    dlm_msg_decode(h->h_buf, h->h_len, &m, NULL) ||
		    m.m_type != DLM_MSG_GRANT || m.m_remid != lkb->lkb_id)
			continue;
		log_ls(ls, DLM_LOG_WARNING, "%s from node %u before our "
		       "recovery's resend dropped", dlm_msg_type_str(m.m_type),
		       from);
		dlm_list_del(&h->h_list);
		free(h);
	}
}

/* Recovery, finish: no resend is pending any more. */
void dlm_remaster_finish(struct dlm_ls *ls)
{
	size_t i;

	for (i = 0; i < ls->ls_rec_nrsbs; i++) {
		struct dlm_rsb *r = ls->ls_rec_rsbs[i];
		struct dlm_list *pos;
		int k;

		for_each_queued(r, k, pos)
			queued(pos)->lkb_flags &= ~LKBF_RP_RESENT;
	}
}

/* Held REPOINT_REPLYs from live members: their locks are re-pointed;
 * their owners resend them only along with another lock of the resource
 * that awaits its re-point, and our copy stays as it is (recover.c
 * receive_rc_lock), or not at all (dlm_remaster_unmatched).  By the
 * masters step every one has come: an owner sends it while running
 * (before its NODES status) or at its directory step, when a held MOVED
 * lets it take a held REPOINT (before its DIR status); one link, in
 * order.  Taken at the masters step, before any RC_LOCK can come, and
 * again at the grant step. */
void dlm_remaster_held_replies(struct dlm_ls *ls)
{
	struct dlm_list *pos = ls->ls_held.next;
	struct dlm_held *h;
	struct dlm_msg m;

	while ((h = held_next(ls, &pos, HELD_TYPE(DLM_MSG_REPOINT_REPLY),
			      &m))) {
		/* 0, or -ENOENT for a lock unlocked meanwhile: nothing
		 * to keep either way */
		(void)receive_repoint_reply(ls, &m);
		dlm_list_del(&h->h_list);
		free(h);
	}
}

/* Recovery, grant step (every RC_LOCK is in): a master copy made here
 * from a moved resource's record, its REPOINT unacknowledged (its
 * REPOINT_REPLYs held at the stop were taken at the directory step), that
 * its owner did not resend, is a lock its owner does not know is queued:
 * a request it sent the old master, which queued it and moved it with
 * the resource, but whose reply and MOVED were lost with that master.
 * Every other lock its owner has on r awaits its re-point, or names a
 * departed master, and is resent.  The owner redoes that request here at
 * finish (lock.c dlm_recover_waiter), or drops it if its client went
 * meanwhile: kept, the copy would be a second one of the lock, or one
 * nobody unlocks (dlm-sim --faults --remaster --repoint --rehot 8 --ops
 * 1500 --bounce --partitions --daemon-deaths --dir-lag 200 seed 556).
 * It goes, and what waited behind it may be granted.  Never granted to
 * its owner, it wrote no value. */
void dlm_remaster_unmatched(struct dlm_ls *ls)
{
	size_t k, n = 0;

	dlm_remaster_held_replies(ls);
	for (k = 0; k < ls->ls_rec_nrsbs; k++) {
		struct dlm_rsb *r = ls->ls_rec_rsbs[k];
		struct dlm_list *pos, *tmp;
		int i;

		if (!(r->res_flags & RESF_REPOINTED) || !is_master(ls, r))
			continue;
		for (i = 0; i < 3; i++) {
			struct dlm_list *q = (struct dlm_list *)const_queue(r, i);

			dlm_list_for_each_safe(pos, tmp, q) {
				struct dlm_lkb *lkb = queued(pos);

				if (!is_master_copy(lkb) ||
				    !(lkb->lkb_flags & LKBF_REPOINT))
					continue;
				dlm_destroy_lkb(ls, lkb);
				r->res_flags |= RESF_RECOVER_GRANT;
				n++;
			}
		}
	}
	if (n)
		log_ls(ls, DLM_LOG_INFO, "recovery %u: %zu moved locks their "
		       "owners did not resend dropped", ls->ls_event, n);
}

/* Recovery, directory step: a MIGRATE that a live member sent before the
 * stop has arrived by the NODES barrier and waits on ls_held; install it
 * now, so that we register the resource as its master (essay above). */
int dlm_remaster_recover(struct dlm_ls *ls)
{
	struct dlm_list *pos = ls->ls_held.next;
	struct dlm_held *h;
	struct dlm_msg m;

	while ((h = held_next(ls, &pos, HELD_TYPE(DLM_MSG_MIGRATE) |
			      HELD_TYPE(DLM_MSG_MOVED), &m))) {
		if (install_held(ls, h, &m))
			return -ENOMEM;	/* the step fails: recovery reruns */
		dlm_list_del(&h->h_list);
		free(h);
	}
	repoint_recover(ls);
	return 0;
}
