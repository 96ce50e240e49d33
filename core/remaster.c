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
 *   windows of DLM_REMASTER_WINDOW operations.  A window's candidate is
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
 *      the old master in m_nodeid) or is missing; a DIR_MOVE from before
 *      a recovery (m_gen) is dropped, the rebuilt directory is right.
 *
 * Invariant: at every instant at most one node grants on R.  M grants
 * until it sends MIGRATE and never after (its copy is not master); N
 * grants only from the moment it installs MIGRATE.  Between the two,
 * nobody grants: requests bounce (below) until N installs.
 *
 * Races, and how each is closed:
 *   - Lookup vs. move.  D answers M until DIR_MOVE arrives.  A request
 *     that reaches M after the move is refused -EBADR with a hint
 *     (m_nodeid = N, what M's copy says); the requester tries N.  N, if
 *     it has not installed yet, refuses with its own view (M), and so
 *     the request bounces between the two until N installs MIGRATE,
 *     which is already on its way: it terminates.  A requester without
 *     a hint looks up again.  A REMOVE from N (R unused there later)
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
 *     held MIGRATE from a live member of the current generation, and so
 *     registers R in the rebuilt directory as its master; M masters
 *     nothing of R and registers nothing.  One master.  M's -EBADR
 *     replies to N's ops in flight are held at N and replayed at finish,
 *     when N is master: redone locally as in normal operation.  A
 *     MIGRATE of an older generation (it would be one only if the
 *     recovery install missed it, which it cannot) is dropped with a log.
 *   - Death of M mid-move: if N installed before the stop, N is master
 *     and registers R.  If not, MIGRATE is held at N from a departed
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
 * Off unless dlm_core_config.remaster_ticks is non-zero (the simulator
 * turns it on); DLM_FAULT_REMASTER_NO_FREEZE is the broken variant that
 * keeps M granting after it sent the state (tests/sim-broken.test).
 */
