/*
 * libdlm/dlmd_proto.h - the client protocol between libdlm and dlmd.
 *
 * Shared by the daemon (plugin/client.c) and the library (libdlm/libdlm.c);
 * installed nowhere.  It plays the role of the kernel DLM's misc devices
 * (/dev/misc/dlm-control and /dev/misc/dlm_<ls>).
 *
 * Transport.  A unix socket of type SOCK_SEQPACKET at the daemon's socket
 * path (dlm.conf socket_path, default DLMD_DEFAULT_SOCKET, or $DLMD_SOCKET
 * on the client side).  SEQPACKET keeps message boundaries, so one request
 * is exactly one packet and one reply is exactly one packet; nothing is
 * ever parsed across packets.  Every message starts with a fixed 16-byte
 * little-endian header:
 *
 *    offset  size  field
 *         0     4  magic     DLMP_MAGIC
 *         4     2  version   DLMP_VERSION (a request in another version
 *                            is answered -EPROTONOSUPPORT: see Versions)
 *         6     2  type      enum dlmp_type
 *         8     4  length    total bytes, header included; must equal the
 *                            packet length
 *        12     4  reqid     chosen by the client, echoed in the reply
 *
 * followed by a fixed body per type, then (for some types) a name whose
 * length is a field of the body.  All multi-byte fields are little-endian
 * and read with explicit byte loads (dlmp_get*), never by casting.  The
 * body sizes are pinned below with static_assert.
 *
 * Conversation.  A connection is first a "control" connection: it may ask
 * for the version (VERSION), create or remove a lockspace (LS_CREATE,
 * LS_RELEASE, privileged), and bind itself to one lockspace (LS_OPEN).
 * LS_OPEN carries, as SCM_RIGHTS ancillary data, one end of a SEQPACKET
 * socketpair the client made: the "AST socket" (anything else is
 * refused: not a socket -ENOTSOCK, another kind of socket or one never
 * connected -EINVAL, one whose peer is another user's -EPERM, unless the
 * client is an admin).  From then on the daemon
 * writes each completion and blocking AST as one DLMP_AST packet to that
 * socket, and the client polls the other end (dlm_ls_get_fd()).  Keeping
 * ASTs off the request connection means a thread waiting for a reply never
 * swallows an AST another thread is polling for.  On the bound connection
 * the client sends LOCK, UNLOCK, PURGE, DEADLOCK and TOKEN; each gets one
 * REPLY (or COMP_REPLY, below).
 *
 * Pipelining.  A client may send many requests without waiting for their
 * replies; each answer carries the request's reqid, and answers may come
 * in any order (a held one, below, comes when its lock operation ends).
 * libdlm lets any thread send (one packet is one request, written whole)
 * and hands each reply to the thread waiting for that reqid.  A client
 * that floods requests without reading the replies is disconnected, not
 * waited for (a reply that cannot be written at once breaks it).
 *
 * Completion in the reply.  A LOCK or UNLOCK with DLMP_LK_SYNC in its
 * bits (libdlm's _wait forms) asks the daemon to hold the answer until
 * the operation completes and to send, instead of the DLMP_AST
 * completion, one COMP_REPLY on the request connection: the completion's
 * status (0 or -errno as in an AST: -DLM_ECANCEL, -DLM_EUNLOCK, -EAGAIN
 * for NOQUEUE, ...), the lock id, the sb_flags and the LVB when the lock
 * has one.  No DLMP_AST is written for that completion; blocking ASTs
 * still go to the AST socket.  So a synchronous call is one packet each
 * way.  When a new lock cannot be granted at once, the daemon first sends
 * a REPLY with value = the lock id and value2 = DLMP_REPLY_HELD (the
 * COMP_REPLY follows later), so that the caller's lksb shows the lock id
 * while it waits and another thread can cancel it; not for a lock whose
 * id the client chose (DLMP_LK_NEWID, below), whose lksb shows it already.  A request refused at
 * once (bad lock id, -EBUSY, ...) gets a plain REPLY with the error, and
 * so does a cancel with nothing to cancel (value DLMP_UNLOCK_NOTHING).
 * If one cancel or unlock with DLMP_LK_SYNC ends a lock on which a LOCK
 * is also held, both get the COMP_REPLY; a cancel without it (or a
 * DEADLOCK) of a held LOCK is answered by a plain REPLY, and its
 * completion (-DLM_ECANCEL, -EDEADLK) is the held LOCK's COMP_REPLY, with
 * no DLMP_AST either.  A connection holds at most
 * DLMP_MAX_HELD answers: a DLMP_LK_SYNC request past that is refused at
 * once with -ENOBUFS and not performed (libdlm never has more than
 * DLMP_MAX_HELD requests in flight on a handle).  Held answers whose lock
 * goes without a completion are given one: a purge of the caller's own
 * locks answers each with status -DLM_ECANCEL (a held unlock:
 * -DLM_EUNLOCK), a lockspace release that unbinds the connection answers
 * each with a REPLY -ENOTCONN; a closed connection needs no answers.
 *
 * The daemon keeps, per lock, the opaque 64-bit values a LOCK carries
 * (completion AST address and argument, blocking AST address and argument,
 * lksb address) and hands them back in every DLMP_AST for that lock, like
 * the kernel device does; the daemon never interprets them.  An UNLOCK
 * replaces the completion argument and lksb, and the completion AST
 * address when it gives one (the kernel device always keeps it, which is
 * why the established libdlm needs dlm_unlock_wait() for locks taken with
 * dlm_lock_wait(); here any mix works).
 *
 * Lock ids chosen by the client (version 3).  An async dlm_ls_lock()
 * returns the new lock's id in sb_lkid; to do so without waiting for the
 * daemon, libdlm picks the id itself from a block of DLMP_IDS_BLOCK ids
 * the daemon reserved for the connection in the lockspace's engine (no
 * id of it in use, none of it handed to anyone else while reserved: see
 * core.h dlm_core_ids_reserve).  LS_OPEN's REPLY gives the first block:
 * value2 = its first id, value3 = its length (0: none could be reserved;
 * the client then waits for each LOCK's REPLY as before).  When a block
 * runs out the client sends IDS (pair a = the block it is done with, or
 * 0) and gets a REPLY with the next block in value and value2; the
 * daemon gives the old block back.  A LOCK with DLMP_LK_NEWID (a new
 * lock, without CONVERT or ORPHAN) carries the chosen id in lk_lkid;
 * without DLMP_LK_SYNC it gets no REPLY at all: its outcome is its completion AST,
 * and a request the daemon or engine refuses (-EINVAL, -ENOENT for an
 * unknown parent, -ENOMEM, an id not from the connection's blocks, ...)
 * is answered by a completion DLMP_AST with that status for that lock id.
 * The client sends every LOCK with an id from a block before the IDS that
 * gives the block back (libdlm picks and sends under one mutex), and the
 * daemon handles a connection's requests in order, so a LOCK never finds
 * its block released.  A connection's blocks are given back when it
 * unbinds or closes; the ids in use stay with their locks.  When the
 * lockspace is released under a bound connection that has a block, the
 * daemon sends it a REPLY with reqid 0 and -ENOTCONN (as a refusal, and
 * the connection is no more use): the client, which waits for no REPLY
 * to its async LOCKs, reads it before its next one.  A NEWID LOCK that
 * was on its way meanwhile reaches an unbound connection: it gets the
 * usual REPLY -ENOTCONN (which the client, not waiting for it, ignores)
 * and no AST, since the daemon closed its end of the AST socket at the
 * release.  So the client completes it itself: an AST socket at its end
 * means no completion will come, and libdlm then runs, with -ENOTCONN,
 * the completion of every NEWID LOCK it sent that had none yet (every
 * AST the daemon wrote is read before the end, so none comes twice).
 * libdlm takes the
 * fast way only for a request the daemon can refuse for want of memory
 * alone (no parent, flags and range valid for any new lock); others wait
 * for their REPLY as before, so that their errors stay the call's.
 * A synchronous LOCK (DLMP_LK_SYNC, version 6) may carry DLMP_LK_NEWID
 * too: the client knows the id, so a lock that has to wait gets no
 * DLMP_REPLY_HELD, and the one answer is its COMP_REPLY, or a REPLY with
 * the refusal (as for any synchronous LOCK; no DLMP_AST).
 *
 * Unlocks without a REPLY (version 4).  An async dlm_ls_unlock() of a
 * lock that libdlm knows is granted and idle (a NEWID lock whose
 * successful completion AST it read, with no other request on it since)
 * carries DLMP_UL_NOREPLY and gets no REPLY: its outcome is its
 * completion AST (-DLM_EUNLOCK), as for a NEWID LOCK.  A refusal (the
 * engine's -EINVAL, -EBUSY, ...) is a completion DLMP_AST with that
 * status; so is DLMP_UL_NOREPLY together with DLMP_LK_SYNC or
 * DLM_LKF_CANCEL, which is refused -EINVAL.  Such an unlock that reaches
 * a connection the lockspace was released from gets the usual REPLY
 * -ENOTCONN, which the client ignores, and the client completes it with
 * -ENOTCONN when its AST socket ends, as it does NEWID LOCKs.  Any other
 * unlock (unknown to libdlm, waiting, converting, a cancel) waits for its
 * REPLY as before, so that its refusal stays the call's return value.
 *
 * The request ring (version 5).  After LS_OPEN a client may hand the
 * daemon a shared-memory ring for its requests: RING (pair a =
 * DLMP_RING_ATTACH, b = 0) carrying, as SCM_RIGHTS, a memfd of exactly
 * DLMP_RING_BYTES, sealed against shrinking (F_SEAL_SHRINK; else the
 * daemon, which maps it, could be killed by SIGBUS when the client
 * truncates it) and growing (F_SEAL_GROW: the last release of a huge
 * memfd, at the daemon's munmap, would free it all in the daemon's
 * thread) and on shmem (not MFD_HUGETLB: a hole punched in it, its
 * huge pages taken, and the daemon's next touch would be SIGBUS too).
 * A REPLY 0 means: later requests of the connection go
 * into the ring, except the kick below and requests sent in its place
 * (see Wake-ups); answers, COMP_REPLYs and ASTs come as before.  On any error (a memfd
 * of the wrong size or unsealed: -EINVAL; a second ring: -EISCONN; no
 * memory to map it; the user, not root, has 64 rings mapped already:
 * -EDQUOT, plugin/client.c "Rings per user") the connection goes on
 * without a ring, and so does
 * a client that does not ask for one ($DLMD_RING=0 for libdlm): the
 * ring is an option of version 5, and a client of version 4 is refused
 * as every other version is (see Versions).
 * The ring (struct dlmp_ring, in host byte order: both ends are on one
 * machine) is DLMP_RING_SLOTS slots of DLMP_RING_SLOT_LEN bytes: u32
 * packet length, u32 zero, then one request packet exactly as it would
 * be sent on the socket (same header, same decoder).  rg_tail counts the
 * slots the client filled (it writes slot tail % SLOTS, then stores
 * tail + 1 with release order); rg_head counts those the daemon took (it
 * copies the slot, then stores head + 1).  Both wrap; the ring is full
 * at tail - head == DLMP_RING_SLOTS.
 *
 * Wake-ups.  The daemon reads the ring when the client kicks it, RING
 * with a = DLMP_RING_KICK on the socket (no answer), and then keeps
 * taking requests until the ring is empty; it may go on looking at the
 * ring for a while before it says it sleeps (dlm.conf client_spin_us,
 * plugin/client.c "Watching the rings"), which changes nothing for the
 * client: it kicks when, and only when, it finds rg_sleeping = 1.  The
 * client kicks only when the daemon said it would sleep: before it stops
 * taking, the daemon stores rg_sleeping = 1, then (a full barrier) reads
 * rg_tail again and goes on if anything came meanwhile.  The client,
 * after storing rg_tail (a full barrier), reads rg_sleeping and, if it is
 * 1, swaps it to 0 and the one thread that did so sends the kick.  One of
 * the two always sees the other's store, so no request is left asleep
 * in the ring; while the daemon is busy with a connection, the client
 * adds requests without any system call.  A client that finds
 * rg_sleeping = 1 before it writes a request may instead swap it to 0
 * first and, if it did so, send that request on the socket: the
 * request is the kick (libdlm does this for the requests whose answer
 * the sender waits for before it sends anything else).  So the order
 * holds, before it handles any request packet read from the socket of
 * a connection with a ring, the daemon takes every slot the ring then
 * holds (up to the rg_tail it reads once; a request on the socket comes
 * after everything written to the ring before it was sent); after each
 * read of the socket it takes the ring as after a kick.  Per wake-up the daemon takes at
 * most DLMP_RING_SLOTS requests from one ring before serving others (it
 * comes back to the rest without a kick).  A client that finds the ring
 * full sets rg_waiting = 1 and sleeps on rg_head (futex, shared); the
 * daemon, after taking from a ring whose rg_waiting is set, clears it and
 * wakes the futex.  The only answer on the socket that no request
 * waits for, the refusal with reqid 0 when the lockspace is released
 * under the connection, is announced by rg_notice = 1 (set before it is
 * sent, never cleared), so a client of a ring need not look at the
 * socket before each request that gets no answer.
 *
 * The answer ring (version 7).  The same memfd holds, after the request
 * slots, a ring the daemon writes.  A client that asks for it (RING
 * ATTACH with b = DLMP_RING_ANSWERS; with b = 0 answers stay on the
 * socket, as in version 6; other values: -EINVAL): once the ATTACH's
 * REPLY (sent on the socket) is out, every answer on the request connection (REPLY,
 * COMP_REPLY) goes into it instead of the socket, whatever way its
 * request came, except the refusal with reqid 0 (the socket, with
 * rg_notice) and a REPLY in another version.  Slot: u32 length, u32
 * zero, the packet as it would be sent.  rg_ans_tail counts the answers
 * the daemon wrote (it fills slot tail % DLMP_ANS_SLOTS, then stores
 * tail + 1); rg_ans_head those the client took.  The daemon writes while
 * tail - head < DLMP_ANS_SLOTS; a client that reads its answers never
 * fills it (at most DLMP_MAX_HELD requests in flight, each at most two
 * answers: DLMP_REPLY_HELD and the COMP_REPLY).  If it is full anyway,
 * the daemon sets rg_ans_socket = 1 and from then on writes every answer
 * of the connection on the socket: the client reads the socket once the
 * ring is empty and rg_ans_socket is set.  The same follows RING with
 * a = DLMP_RING_ANS_SOCKET (no answer): a child forked with the
 * connection, which cannot share the parent's reading of the ring, sends
 * it before its first request.  Wake-ups: a client that finds
 * the ring empty may look again for a while; before it sleeps it stores
 * rg_ans_sleeping = 1, then (a full barrier) reads rg_ans_tail again,
 * and sleeps on it (futex, shared, with a timeout: it looks at the
 * socket then, as a dlmd that died wakes nobody).  The daemon, after
 * storing rg_ans_tail (a full barrier), reads rg_ans_sleeping, and if
 * it is 1 swaps it to 0 and wakes the futex; so a pair of a request in
 * the ring and its answer in the ring costs no system call while both
 * sides are awake.  The daemon never reads rg_ans_tail back and writes
 * a slot only at its own tail: a client lying in rg_ans_head or
 * rg_ans_sleeping loses or delays its own answers, or costs the daemon
 * a futex wake per answer, nothing else.
 *
 * The client can write the ring at any moment, and the daemon trusts
 * nothing in it: it keeps its own head (never reading rg_head back),
 * copies each slot out before reading its length or decoding it (no
 * double fetch), treats a tail more than DLMP_RING_SLOTS ahead of its
 * head as a broken client (disconnected), and a slot length past
 * DLMP_MAX_MSG as a malformed request (answered -EBADMSG as on the
 * socket).  A hostile ring can only harm its own connection.
 *
 * Closing the bound connection (exit, crash, SIGKILL) releases the
 * connection's locks at once; PERSISTENT ones become orphans, which a later
 * LOCK with DLM_LKF_ORPHAN adopts or PURGE removes.  An adoption is
 * answered by its REPLY alone (value = the adopted lock's id; -EAGAIN when
 * the orphan is held in another mode, -ENOENT when there is none): no
 * completion AST follows, as with the kernel's device.
 *
 * AST epochs.  dlm_ls_purge() of the caller's own locks (its own pid)
 * removes them without ASTs, and the kernel also frees their callbacks
 * not yet read; but what the daemon wrote to the AST socket cannot be
 * taken back.  So every DLMP_AST carries, in its header's reqid field,
 * the connection's purge epoch: 0 at first, one more after each purge of
 * its own locks, wrapping.  That PURGE's REPLY gives the new epoch in
 * value2, and libdlm drops an AST whose epoch is older (serial number
 * arithmetic) than the latest its handle was given.  Answers on the
 * request connection need no epoch: each answers a request still waited
 * for (a held one of a purged lock gets its cancel completion, above).
 *
 * Refusal.  A connection the daemon will not serve (its user holds
 * dlm.conf's max_clients_per_uid connections already: -EUSERS; fds it
 * passed wait to be closed, plugin/client.c "Passed fds": -EMFILE) gets
 * one REPLY with reqid 0 and a negative errno as soon as it is accepted,
 * before any request, and is closed.  Clients never use reqid 0, so the
 * first read (or a send that fails because the daemon closed) finds it;
 * libdlm returns it as errno.
 *
 * Versions.  Every packet carries DLMP_VERSION and a mismatch is refused,
 * never guessed at.  A request of another version is answered with a
 * REPLY whose status is -EPROTONOSUPPORT: in the requester's version when
 * it is one whose REPLY is laid out as ours (1: the header and the 16-byte
 * REPLY have not changed since), so that an old libdlm reads a clear
 * EPROTONOSUPPORT; otherwise in ours.  libdlm likewise returns
 * -EPROTONOSUPPORT for an answer of another version (what an old dlmd
 * sends a new libdlm).  Version 7 (this one) added the answer ring
 * (see "The answer ring").  Version 6 allowed DLMP_LK_NEWID
 * with DLMP_LK_SYNC.  Version 5 added the request ring (RING).  Version 4 added DLMP_UL_NOREPLY.
 * Version 3 added lock ids chosen by the
 * client (DLMP_LK_NEWID, IDS, the block in LS_OPEN's REPLY), the TOKEN
 * request, and the requesting thread and transaction id in LOCK
 * (deadlock detection's waiter, DLMP_LK_BLOCKS).  Version 2 added
 * pipelining, DLMP_LK_SYNC, COMP_REPLY and
 * DLMP_REPLY_HELD; version 1 allowed one request in flight.
 *
 * Fencing tokens.  TOKEN (body: lkid u32, then a zero u32) asks for the
 * fencing token of one of the connection's own locks (core/token.c): the
 * REPLY has value = its low 32 bits, value2 = its high 32 bits; status
 * -ENOENT when the lock is unknown or does not hold CW, PW or EX now,
 * -EINVAL when the second word is not zero.  A query rather than a field
 * of the completion: no packet layout changes, and the answer is what
 * the daemon knows when asked (after a completion was dispatched it is
 * that completion's token, as the lock cannot change until the client
 * asks it to).
 *
 * Errors.  A malformed packet (short, bad magic, wrong length, unknown
 * type, inconsistent name length, unknown bits) gets a REPLY with a
 * negative errno (-EBADMSG, -EPROTONOSUPPORT, -EOPNOTSUPP, -EINVAL) and
 * reqid echoed when the header could be read; the connection stays
 * usable.  Status values in REPLY, COMP_REPLY and AST are 0 or negative
 * errnos (-DLM_EUNLOCK etc. in completions); libdlm turns them into
 * -1/errno and positive sb_status.
 *
 * Known limits: lockspace and resource names are 1..64 bytes; one open
 * lockspace per connection; range locks carry one inclusive [start, end]
 * pair.
 */
#ifndef DLMD_PROTO_H
#define DLMD_PROTO_H

#include <assert.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>

#define DLMP_MAGIC		0x504d4c44u	/* "DLMP" in memory order */
#define DLMP_VERSION		7
/* The oldest version whose REPLY is laid out like ours (see Versions). */
#define DLMP_VERSION_OLDEST_REPLY	1
/* What dlm_kernel_version() reports: the protocol version as x.y.z. */
#define DLMP_VERSION_MAJOR	7
#define DLMP_VERSION_MINOR	0
#define DLMP_VERSION_PATCH	0
/* The kernel DLM device interface (DLM_DEVICE_VERSION_*) whose semantics
 * dlmd gives: dlm_kernel_version() and dlm_library_version() report it,
 * as programs (lvmlockd) compare it with the kernel versions they know.
 * The dlmd protocol version above is shown by "dlmctl status". */
#define DLMP_DEVICE_COMPAT_MAJOR	6
#define DLMP_DEVICE_COMPAT_MINOR	0
#define DLMP_DEVICE_COMPAT_PATCH	2

#define DLMD_DEFAULT_SOCKET	"/run/dlmd/dlmd.sock"
#define DLMD_DEFAULT_CTL_SOCKET	"/run/dlmd/dlmd-ctl.sock"
#define DLMD_SOCKET_ENV		"DLMD_SOCKET"

#define DLMP_NAME_MAX		64	/* lockspace and resource names */
#define DLMP_LVB_LEN		32
#define DLMP_HDR_LEN		16
/* The largest packet either side sends or accepts. */
#define DLMP_MAX_MSG		256
/* Answers held for DLMP_LK_SYNC requests, per connection. */
#define DLMP_MAX_HELD		256
/* Lock ids per block reserved for a connection (core.h DLM_IDS_BLOCK). */
#define DLMP_IDS_BLOCK		1024

enum dlmp_type {
	DLMP_VERSION_REQ = 1,	/* -> REPLY value=major, value2=minor, value3=patch */
	DLMP_LS_CREATE = 2,	/* privileged; -> REPLY */
	DLMP_LS_OPEN = 3,	/* + SCM_RIGHTS AST socket; -> REPLY */
	DLMP_LS_RELEASE = 4,	/* privileged; -> REPLY */
	DLMP_LOCK = 5,		/* -> REPLY value=lkid */
	DLMP_UNLOCK = 6,	/* -> REPLY value=DLMP_UNLOCK_* */
	DLMP_PURGE = 7,		/* -> REPLY value=locks purged, value2=AST
				 * epoch (purge of one's own locks) */
	DLMP_DEADLOCK = 8,	/* -> REPLY value=DLMP_UNLOCK_* */
	DLMP_TOKEN = 9,		/* -> REPLY value=token low, value2=high */
	DLMP_IDS = 10,		/* -> REPLY value=first id of a new block,
				 * value2=its length */
	DLMP_RING = 11,		/* ATTACH + SCM_RIGHTS memfd: -> REPLY;
				 * KICK: no answer */
	DLMP_REPLY = 64,	/* daemon -> client, request connection */
	DLMP_AST = 65,		/* daemon -> client, AST socket */
	DLMP_COMP_REPLY = 66,	/* daemon -> client, request connection: the
				 * completion of a DLMP_LK_SYNC request */
};

/* LS_CREATE flags (the established DLM_LSFL_NEWEXCL value). */
#define DLMP_LSFL_NEWEXCL	0x8
/* LS_RELEASE flags. */
#define DLMP_RELEASE_FORCE	0x1

/* LOCK.lk_bits */
#define DLMP_LK_RANGE		0x1	/* range fields are meaningful */
#define DLMP_LK_LVB		0x2	/* lvb field is meaningful */
#define DLMP_LK_SYNC		0x4	/* LOCK, UNLOCK: the completion in a
					 * COMP_REPLY, no DLMP_AST */
#define DLMP_LK_NEWID		0x8	/* LOCK: a new lock whose id, in lk_lkid,
					 * the client took from its block; no
					 * REPLY, with DLMP_LK_SYNC no
					 * DLMP_REPLY_HELD (see "Lock ids
					 * chosen by the client") */
#define DLMP_LK_BLOCKS		0x10	/* LOCK: the requester blocks until it
					 * completes (deadlock detection) */
#define DLMP_LK_BITS		0x1f	/* every bit a LOCK may carry */
#define DLMP_UL_NOREPLY		0x8	/* UNLOCK: no REPLY, the outcome is
					 * the completion AST (see "Unlocks
					 * without a REPLY") */
#define DLMP_UL_BITS		(DLMP_LK_LVB | DLMP_LK_SYNC | DLMP_UL_NOREPLY)

/* RING's pair a. */
#define DLMP_RING_ATTACH	1
#define DLMP_RING_KICK		2
#define DLMP_RING_ANS_SOCKET	3	/* answers on the socket from now */
/* RING ATTACH's pair b: 0, or DLMP_RING_ANSWERS (the answer ring). */
#define DLMP_RING_ANSWERS	1

/* The request ring (see "The request ring").  Slot: u32 length, u32
 * zero, the packet. */
#define DLMP_RING_SLOTS		1024	/* a power of two */
#define DLMP_RING_SLOT_LEN	(8 + DLMP_MAX_MSG)
/* The answer ring (see "The answer ring"): slot u32 length, u32 zero, the
 * packet. */
#define DLMP_ANS_SLOTS		1024	/* a power of two, > 2 * MAX_HELD */
#define DLMP_ANS_SLOT_LEN	(8 + DLMP_MAX_MSG)

struct dlmp_ring {
	alignas(64) uint32_t	rg_tail;	/* client: slots filled */
	alignas(64) uint32_t	rg_head;	/* daemon: slots taken */
	alignas(64) uint32_t	rg_sleeping;	/* daemon: kick me */
	uint32_t		rg_notice;	/* daemon: read the socket */
	alignas(64) uint32_t	rg_waiting;	/* client: the ring was full */
	alignas(64) unsigned char rg_slots[DLMP_RING_SLOTS][DLMP_RING_SLOT_LEN];
	/* the answer ring */
	alignas(64) uint32_t	rg_ans_tail;	/* daemon: answers written */
	alignas(64) uint32_t	rg_ans_head;	/* client: answers taken */
	alignas(64) uint32_t	rg_ans_sleeping; /* client: wake me */
	uint32_t		rg_ans_socket;	/* daemon: answers go on the
						 * socket now */
	alignas(64) unsigned char rg_ans_slots[DLMP_ANS_SLOTS][DLMP_ANS_SLOT_LEN];
};

#define DLMP_RING_BYTES		sizeof(struct dlmp_ring)
static_assert(offsetof(struct dlmp_ring, rg_slots) == 256, "ring header");
static_assert((DLMP_RING_SLOTS & (DLMP_RING_SLOTS - 1)) == 0, "slots");
static_assert((DLMP_ANS_SLOTS & (DLMP_ANS_SLOTS - 1)) == 0, "answer slots");
static_assert(DLMP_ANS_SLOTS > 2 * DLMP_MAX_HELD, "answers in flight fit");

/* REPLY.value2 of a DLMP_LK_SYNC LOCK: not the answer yet, the lock is
 * waiting (value = its id) and a COMP_REPLY with this reqid follows. */
#define DLMP_REPLY_HELD		1

/* UNLOCK's REPLY value: what follows a successful request. */
#define DLMP_UNLOCK_AST		0	/* a completion AST */
#define DLMP_UNLOCK_NOTHING	1	/* a cancel found nothing to cancel
					 * (granted first): no AST follows */

/* AST.as_kind */
#define DLMP_AST_COMP		1
#define DLMP_AST_BAST		2

/* Body sizes (after the header), pinned. */
#define DLMP_LS_CREATE_LEN	12	/* flags u32, mode u32, namelen u16, pad u16, name */
#define DLMP_LS_OPEN_LEN	4	/* namelen u16, pad u16, name */
#define DLMP_LS_RELEASE_LEN	8	/* flags u32, namelen u16, pad u16, name */
#define DLMP_LOCK_LEN		120	/* see dlmp_lock; name follows */
#define DLMP_UNLOCK_LEN		68
#define DLMP_PURGE_LEN		8
#define DLMP_DEADLOCK_LEN	8
#define DLMP_TOKEN_LEN		8
#define DLMP_IDS_LEN		8	/* block done with u32 (0: none), pad u32 */
#define DLMP_RING_LEN		8	/* DLMP_RING_* u32, pad u32 */
#define DLMP_REPLY_LEN		16
#define DLMP_AST_LEN		88
#define DLMP_COMP_REPLY_LEN	48

static_assert(DLMP_HDR_LEN + DLMP_LOCK_LEN + DLMP_NAME_MAX <= DLMP_MAX_MSG,
	      "largest request fits DLMP_MAX_MSG");
static_assert(DLMP_HDR_LEN + DLMP_AST_LEN <= DLMP_MAX_MSG, "AST fits");
static_assert(DLMP_HDR_LEN + DLMP_COMP_REPLY_LEN <= DLMP_MAX_MSG,
	      "COMP_REPLY fits");

struct dlmp_hdr {
	uint32_t	h_magic;
	uint16_t	h_version;
	uint16_t	h_type;
	uint32_t	h_length;
	uint32_t	h_reqid;
};

/* Lockspace requests (LS_CREATE, LS_OPEN, LS_RELEASE). */
struct dlmp_ls {
	uint32_t	ls_flags;
	uint32_t	ls_mode;
	uint16_t	ls_namelen;
	char		ls_name[DLMP_NAME_MAX + 1];	/* NUL-terminated */
};

/* LOCK, byte offsets in the body:
 *   0 mode u8, 1 namelen u8, 2 bits u8, 3 pad, 4 flags u32, 8 lkid u32,
 *  12 parent u32, 16 range start u64, 24 range end u64, 32 castaddr u64,
 *  40 castparam u64, 48 bastaddr u64, 56 bastparam u64, 64 lksb u64,
 *  72 lvb[32], 104 tid u32, 108 pad u32 (0), 112 xid u64, 120 name[namelen].
 * tid: the requesting thread (gettid()); xid: dlm_ls_lockx's transaction
 * id, 0 for none.  Deadlock detection's waiter is the xid if there is
 * one, else the thread (core/deadlock.c). */
struct dlmp_lock {
	uint8_t		lk_mode;
	uint8_t		lk_namelen;
	uint8_t		lk_bits;
	uint32_t	lk_flags;
	uint32_t	lk_lkid;
	uint32_t	lk_parent;
	uint64_t	lk_range_start;
	uint64_t	lk_range_end;
	uint64_t	lk_castaddr;
	uint64_t	lk_castparam;
	uint64_t	lk_bastaddr;
	uint64_t	lk_bastparam;
	uint64_t	lk_lksb;
	char		lk_lvb[DLMP_LVB_LEN];
	uint32_t	lk_tid;
	uint64_t	lk_xid;
	char		lk_name[DLMP_NAME_MAX];
};

/* UNLOCK: 0 lkid u32, 4 flags u32, 8 bits u8 (DLMP_UL_BITS), 9 pad[3],
 * 12 castparam u64, 20 lksb u64, 28 lvb[32], 60 castaddr u64 (0: keep
 * the lock's completion AST address). */
struct dlmp_unlock {
	uint32_t	ul_lkid;
	uint32_t	ul_flags;
	uint8_t		ul_bits;
	uint64_t	ul_castparam;
	uint64_t	ul_lksb;
	char		ul_lvb[DLMP_LVB_LEN];
	uint64_t	ul_castaddr;
};

/* PURGE: 0 nodeid u32, 4 pid u32.  DEADLOCK: 0 lkid u32, 4 flags u32.
 * TOKEN: 0 lkid u32, 4 zero u32.
 * IDS: 0 first id of the block given back (0: none), 4 zero. */
struct dlmp_pair {
	uint32_t	pr_a;
	uint32_t	pr_b;
};

/* REPLY: 0 status i32, 4 value u32, 8 value2 u32, 12 value3 u32. */
struct dlmp_reply {
	int32_t		rp_status;
	uint32_t	rp_value;
	uint32_t	rp_value2;
	uint32_t	rp_value3;
};

/* AST: 0 kind u8, 1 grmode i8, 2 bastmode i8, 3 sbflags u8, 4 status i32,
 * 8 lkid u32, 12 bits u32 (DLMP_LK_LVB), 16 castaddr, 24 castparam,
 * 32 bastaddr, 40 bastparam, 48 lksb (u64 each), 56 lvb[32]. */
struct dlmp_ast {
	uint8_t		as_kind;
	int8_t		as_grmode;
	int8_t		as_bastmode;
	uint8_t		as_sbflags;
	int32_t		as_status;
	uint32_t	as_lkid;
	uint32_t	as_bits;
	uint64_t	as_castaddr;
	uint64_t	as_castparam;
	uint64_t	as_bastaddr;
	uint64_t	as_bastparam;
	uint64_t	as_lksb;
	char		as_lvb[DLMP_LVB_LEN];
};

/* COMP_REPLY: 0 status i32 (the completion's, as in an AST), 4 lkid u32,
 * 8 sbflags u8, 9 pad[3], 12 bits u32 (DLMP_LK_LVB), 16 lvb[32]. */
struct dlmp_comp {
	int32_t		cp_status;
	uint32_t	cp_lkid;
	uint8_t		cp_sbflags;
	uint32_t	cp_bits;
	char		cp_lvb[DLMP_LVB_LEN];
};

/* One decoded message. */
struct dlmp_msg {
	struct dlmp_hdr		m_hdr;
	union {
		struct dlmp_ls		ls;
		struct dlmp_lock	lock;
		struct dlmp_unlock	unlock;
		struct dlmp_pair	pair;
		struct dlmp_reply	reply;
		struct dlmp_ast		ast;
		struct dlmp_comp	comp;
	} m_u;
};

const char *dlmp_type_str(unsigned int type);

/* Is 'name' a valid lockspace name?  1..DLMP_NAME_MAX bytes, each a
 * graphic ASCII character (0x21..0x7e) other than '/', and not "." or
 * "..": names show up in logs, "dlmctl ls" and file-like places (the
 * configfs view's directories), so no control byte, space, path
 * separator or path step may hide in one.  Both sides check: libdlm before it
 * sends, dlmd (authoritatively) before it creates a lockspace. */
int dlmp_ls_name_valid(const char *name);

/* Decode the header only: 0, or -EBADMSG (short, bad magic, length not
 * equal to len) or -EPROTONOSUPPORT (other version; h_version says which).  On -EPROTONOSUPPORT
 * and on length errors the header fields are still filled in so that the
 * reply can echo reqid. */
int dlmp_decode_hdr(const void *buf, size_t len, struct dlmp_hdr *hdr);
/* Decode a whole message: 0 or a negative errno (-EBADMSG malformed,
 * -EPROTONOSUPPORT version, -EOPNOTSUPP unknown type, -EINVAL a name of
 * bad length).  'msg->m_hdr' is valid whenever the header was. */
int dlmp_decode(const void *buf, size_t len, struct dlmp_msg *msg);
/* Encode 'msg' (its m_hdr.h_type, h_reqid and the matching body; magic,
 * version and length are filled in) into buf.  Returns the length or
 * -ENOSPC / -EINVAL. */
int dlmp_encode(const struct dlmp_msg *msg, void *buf, size_t size);
/* The version to answer a request of 'version' in (see Versions). */
uint16_t dlmp_reply_version(uint16_t version);
/* Put 'version' in the header of the encoded message at buf. */
void dlmp_set_version(void *buf, uint16_t version);

#endif /* DLMD_PROTO_H */
