/*
 * lowcomms/lowcomms.c: connections between dlmd nodes, batching, reliable
 * delivery across reconnects, admission by address and by the cluster key.
 *
 * THE PARTS.  A context knows the local node id, the listening sockets and a
 * node table.  A node (struct lc_node) holds everything that must survive a
 * dropped connection: the sequence state in both directions and the queue of
 * DATA frames not yet acknowledged by the peer.  A connection (struct
 * lc_conn) holds only socket state: the fd, a reassembler for what it reads,
 * and an output buffer into which queued frames are copied for writing.  A
 * connection can therefore be thrown away at any moment without losing a
 * message.
 *
 * SENDING.  lc_send() encodes the frame (header + payload) once, gives it the
 * node's next sequence number and appends it to the node's queue, straight
 * into the queue's current 64 KiB chunk (struct lc_qchunk: no allocation
 * per message, and acknowledged chunks are reused).  If the
 * node has no connection one is started; otherwise nothing else happens
 * yet: the caller's lc_flush() (dlmd calls it once per loop turn, after
 * its engine has said everything it had to) tries the write at once, and
 * lc_next_timeout() is due while queued frames wait unwritten, so a caller
 * that does not flush gets them out at its next lc_timer().  POLLOUT is
 * asked for only when a write would block or was cut short, and dropped
 * once the output is out: a message that the socket takes at once costs
 * one send() and no epoll_ctl (each lc_send() used to ask for POLLOUT and
 * each flush to drop it again, two epoll_ctl calls a message in dlmd).
 * A write copies as many queued frames as fit into one buffer (256 KiB)
 * and writes it with one send(): a burst of
 * small messages costs a handful of system calls, not one each.  Each frame's
 * ack field is patched with the current cumulative ack as it is copied, so
 * acks ride on data for free.  A frame stays queued after it is written until
 * the peer acknowledges it.  The queue is bounded (frames and bytes); past
 * the bound lc_send() fails with -ENOBUFS, which the caller sees as
 * backpressure.
 *
 * RECEIVING.  Bytes read go through the reassembler (frame.c), which checks
 * each header before anything else and closes the connection on the first bad
 * frame.  A DATA frame whose seq is the next expected one is delivered; one
 * below it is a duplicate (a resend after reconnect) and is dropped; one above
 * it would mean a lost frame and closes the connection as a protocol error
 * (reported through ops_frames_lost: the caller decides what it means).
 * The cumulative ack goes back in the next DATA frame going that way, or
 * else, when it is due, in a lone 32-byte ACK frame (DELAYED ACKS).
 *
 * HOLDING A NODE.  The application may refuse a message (ops_deliver
 * returns an error: dlmd's engine had no memory to take it, and it must
 * be offered again before anything later from that node).  The frame is
 * then not counted received: node_recv_next stays on it, so no ack
 * covers it, and the node is held: every DATA frame read from it from
 * then on is left unread (st_held_skipped) -- not delivered, not
 * acknowledged, not an error, not a gap -- while its acks of our frames
 * are still taken.  Nothing is kept here for it: the peer keeps every
 * such frame queued, unacknowledged, as it keeps any frame in flight,
 * so a held node costs the receiver no memory however long it lasts,
 * and the peer's queue bounds (cfg_queue_frames, cfg_queue_bytes; then
 * -ENOBUFS to its application) bound what waits.  lc_node_resume() ends
 * the hold; since a peer writes a frame once per connection, it drops
 * the connection and makes a new one at once: the HELLOs carry our ack
 * (the frame before the refused one), the peer resends from there, and
 * the refused frame is delivered again first, then the rest in order,
 * exactly once (duplicates are dropped by sequence number as after any
 * reconnect).  The price is a reconnect per resume; a refusal is rare
 * (dlmd: a transient out-of-memory).  A peer that waits for our ack
 * this way sees it in lc_node_wait_ms() (PEER UNREACHABLE): a hold that
 * lasts is, to the peer, a node that does not answer.  lc_node_remove()
 * forgets the hold with the node.
 *
 * DELAYED ACKS.  In request/reply traffic every ack can ride on data: the
 * replier's answer carries the ack of the request, and the requester's
 * next request carries the ack of the reply.  A lone ACK after each
 * message read would cost the reader a write and the peer a wake-up and a
 * read for nothing (it was the requester's fate in dlmd: the master woke
 * four times per lock+unlock pair instead of twice).  So an owed ack waits
 * for data to carry it, and goes alone only when it is due: when
 * cfg_ack_delay_ms (default 5 ms) have passed since the first frame it
 * would acknowledge was delivered (node_ack_due; lc_next_timeout() names
 * that time and lc_timer() writes it), or at once when the peer holds
 * ACK_MAX_FRAMES frames or ACK_MAX_BYTES payload bytes for us
 * unacknowledged, or a quarter of our own queue bounds if that is less
 * (the nodes of a cluster share their configuration, so that is the
 * peer's bound too).  Why this never stalls the peer: the peer's frames
 * stay queued until acked, and lc_send() fails -ENOBUFS at its bounds;
 * but of the frames we have received, fewer than a quarter of its bounds
 * are ever unacknowledged for longer than one read, and those for at most
 * the delay (plus a loop turn), whether or not we ever send data, so its
 * queue drains to below a quarter of its bounds after every read and to
 * nothing within the delay.  A peer whose bounds are lower than ours
 * waits at most the delay.  A stream is acked after every read as
 * before (a read of a full batch holds far more than ACK_MAX_FRAMES).
 * Why it never loses or repeats a message: only the peer's copy of a frame
 * waits longer; the frame is delivered here already, exactly once, and
 * node_recv_next, not the ack, is what drops duplicates.  If the
 * connection drops with an ack owed, the peer resends what we did not
 * ack, we drop it as duplicates, and our HELLO on the new connection
 * carries the cumulative ack (queue_hello()), which frees the peer's queue
 * and clears the ack owed.  lc_next_timeout() counts an ack's deadline
 * only on an established connection: a node without one waits for its
 * HELLO.
 * lc_destroy() writes a last ACK as before.
 *
 * CONNECTING AND THE HELLO HANDSHAKE.  A connection is made on demand by a
 * node with something to send, to the peer's first address (the next one
 * after each failure), from our own address of that family.  The accepting
 * side admits it only if the source address belongs to some node in its table
 * (else it is refused and logged).  An accept() that fails for want of fds
 * or memory leaves the connection queued: the listeners then leave the poll
 * set for ACCEPT_PAUSE_MS (lc_next_timeout() names the end, lc_timer()
 * brings them back) rather than be polled again at once, and the failure
 * is logged once a minute at most.  The initiator then writes HELLO; the
 * acceptor checks that the node id in it owns the source address, answers
 * with its own HELLO, and both may then send DATA.  Nothing but HELLO is
 * accepted before the handshake.
 *
 *   initiator                         acceptor
 *   CONNECTING --connect done-->  (accept: admitted by address)
 *  [with a key: INIT -->, <-- RESP, FIN -->, then records only; see below]
 *   HELLO_WAIT --HELLO(base,ack,epochs)--> HELLO_WAIT
 *   ESTABLISHED <--HELLO(base,ack,epochs)-- ESTABLISHED
 *
 * THE CLUSTER KEY (cfg_security LC_SEC_KEY; auth.c has the protocol and
 * why these primitives).  An address is easy to borrow: any process on a
 * node can connect from that node's address, and a host can take a dead
 * node's.  So with a key, before any HELLO, the two ends run auth.c's
 * handshake: the initiator's INIT names both node ids (the acceptor
 * applies the address rule to the id claimed there), each side sends a
 * fresh nonce, the acceptor's RESP and the initiator's FIN each carry a MAC
 * over the whole transcript with a key derived from the cluster key, and
 * both derive per-connection, per-direction session keys.  Only then do
 * HELLOs flow, so a stranger never reaches the code that replaces a node's
 * connection or takes its sequence state.  From the FIN on, each side's
 * bytes are records: every batch that fill_out() builds for one write (and
 * each HELLO and lone ACK) is sealed as one AEAD record
 * (ChaCha20-Poly1305, or when both CPUs have AES-NI AES-256-OCB from
 * libgcrypt, or AES-256-GCM; auth.c) whose nonce is the direction's record
 * counter; the reader opens each record in order, where it lies in the
 * read buffer (rec_read_cut() completes one that a read cut), and feeds its
 * plaintext to the frame reassembler.  The cost is one AEAD per write, not
 * per message, and no copy beyond the plaintext path's (bench/bench-lowcomms.c
 * measures it).  A record that fails to open (forged,
 * replayed, reordered, corrupted) or a handshake that does not prove the key
 * closes the connection with a log line that says so (rate-limited for
 * connections that never became a node's); a node's queue then goes out
 * again on a new connection as after any drop, so exactly-once is
 * untouched.  A record that cannot be sealed (OpenSSL failing) drops the
 * connection the same way.  Plain AEAD rather than a stream construction
 * such as crypto_secretstream: the nonces are
 * our counters, so "replayed" is a rule we state and test, and the session
 * keys already bind a stream to one connection (auth.c says more).
 * Without a key (LC_SEC_NONE, dlm.conf crypto = none) frames go out as
 * they are and admission is by address only; a keyed peer meeting a plain
 * one is refused with a line naming the mismatch.
 *
 * Each side keeps, per peer, a random epoch drawn when the node was added to
 * the table (so a restarted context, or a node removed and added again, has
 * a new one), and the peer's epoch learnt from its last HELLO.  A HELLO tells
 * the receiver:
 *  - the sender's epoch: if we know none (a peer never seen, or forgotten:
 *    lc_node_renew), the receiver takes it and starts expecting the
 *    sender's "send base" (the oldest frame it still holds), so the queued
 *    frames are delivered once, in order; if it differs from the one we
 *    know, the new epoch is paused (PEER RESTARTED, below);
 *  - the receiver's epoch as the sender knows it: if that is ours, the HELLO's
 *    ack is trusted and the acknowledged frames are dropped at once;
 * and after the handshake each side resends its whole unacknowledged queue.
 * Frames the peer already has are dropped there as duplicates.
 *
 * PEER RESTARTED: A NEW EPOCH IS PAUSED.  Every frame queued for a peer,
 * and every ack it sent us, belongs to one life of it: the one whose
 * epoch we know.  A HELLO with another epoch says that something holding
 * the node's address (and, with a key, the key) has no memory of that
 * life: the peer's context was made again (its daemon restarted), or it
 * renewed or removed us (its application took us for gone), or it is an
 * impostor (whoever can read the key file; KNOWN LIMITS).  Which of
 * these, lowcomms cannot tell, and each answer it could give alone is
 * wrong in one case: resending the queue to the new life gives a
 * restarted dlmd lock requests, grants and recovery messages of its
 * previous life (a unit test saw 50 of 50 delivered); dropping the queue
 * at the new epoch loses frames between two live daemons when the new
 * epoch is an impostor's (test-cluster-impostor step 7 stalled a client
 * so, and that drop was reverted).  A new epoch does not prove a restart;
 * the cluster manager's membership does.  So the rule:
 *  - a HELLO whose epoch differs from the known one is not taken: the
 *    node keeps the known epoch, its receive state and its whole queue;
 *    the new epoch is recorded (node_paused_epoch; logged once per pause;
 *    st_peer_restarts) and the connection that brought it is closed
 *    before anything more is read from it or written to it (an accepted
 *    one gets no HELLO of ours).  Nothing of ours goes to the new life,
 *    nothing of its reaches the application, and a connection of the
 *    known life, if there is one, is left as it is;
 *  - while paused, the node tries the peer's address again (with the
 *    reconnect backoff) whatever it has queued, so that the known life,
 *    if it is still there, is heard: a HELLO of the known epoch, or any
 *    frame on an established connection (only the known life has one),
 *    lifts the pause (logged; st_pauses_lifted): it was no restart, and
 *    the queue goes out as after any reconnect, exactly once.  (Frames
 *    a dead life wrote before it died, read after the new life's HELLO,
 *    lift it too: they are its own, delivered as they would have been;
 *    the new life's next HELLO pauses it again);
 *  - the application confirms a restart by lc_node_renew() (dlmd: the
 *    CPG leave of the daemon it knew; or lc_node_remove()): the queue is
 *    dropped there (st_stale_dropped), never before, and the next HELLO
 *    of any life is taken.  A paused node keeps its own epoch through
 *    that renew and numbers its next frame as the oldest dropped one: a
 *    paused life may have read a HELLO of ours (when we connected to it)
 *    and then expects exactly our send base under our epoch, having been
 *    sent nothing else; a new epoch of ours would be paused over there,
 *    with no departure of ours for its membership ever to confirm.  So
 *    does a node renewed again before any life of it was taken (the
 *    renew ends a pause, not the paused lives: two restarts, two leaves,
 *    and the second leave finds the node unpaused while the last life
 *    still knows our epoch from a HELLO read before the first).  A node
 *    renewed while not paused and with a known life draws a new epoch as
 *    before, so a live peer that kept state for us pauses that until its
 *    own membership agrees (the symmetric case: both sides see the same
 *    leave);
 *  - nothing here ends a pause by timeout: lowcomms never drops a queue
 *    on its own judgement.  lc_node_paused_ms() says how long a pause has
 *    lasted while the known life was not connected (a connection of the
 *    known life is proof enough that it lives), and a pause that the
 *    membership does not resolve is the application's to judge, as it
 *    judges a peer that does not ack (PEER UNREACHABLE): dlmd counts it
 *    as such a wait, so past peer_unreachable_secs the node is removed
 *    through the membership (corosync kill, fencing, then the leave and
 *    lc_node_renew()): a departure made by the membership, never a silent
 *    drop between live daemons.  The price: a restarted daemon whose old
 *    life's leave never reaches us costs a removal after that time, not a
 *    stall (plugin/comms.c, RESTARTED PEER);
 *  - a held node (HOLDING A NODE) stays held through a pause; the renew
 *    ends both.
 * Frames the application queues while paused are queued for the known
 * life, and dropped with it if the restart is confirmed: dlmd's engine
 * expects that of a departed node (what it was sent is lost; recovery
 * rebuilds from the survivors).
 *
 * SIMULTANEOUS CONNECT.  If both nodes connect at once, each sees a second
 * connection for the same peer when the HELLO arrives on the accepted one.
 * Both apply the same rule, so they keep the same one: the connection
 * initiated by the lower node id wins; between two connections initiated by
 * the same node the newer wins.  A HELLO carrying a new epoch where one
 * is known replaces nothing: it is paused (PEER RESTARTED).
 *
 * RECONNECT.  When a connection fails or drops, the node keeps its queue and
 * sequence state; if it has frames queued it retries after a backoff that
 * starts at cfg_reconnect_min_ms and doubles up to cfg_reconnect_max_ms.  A
 * connection that has not finished its handshake within cfg_handshake_ms is
 * closed.  Queued frames are discarded only by lc_node_remove() and
 * lc_node_renew() (the application's word that the peer's life is gone),
 * never by lowcomms on its own.
 *
 * PEER UNREACHABLE.  Reconnecting never gives up, so a path that is cut
 * for good (only this port dropped, the peer still alive) looks from here
 * like a queue that waits.  Each node remembers since when its oldest
 * queued frame has waited for an ack that advances: set when a frame is
 * queued on an empty queue, moved to "now" by every ack that drops
 * frames (what is left waits from then), cleared when the queue empties
 * or is dropped.  lc_node_wait_ms() reports it; a healthy peer acks
 * within cfg_ack_delay_ms, so a wait of seconds means the frames are
 * getting nowhere, through any number of reconnect attempts.  An idle
 * node (nothing queued) never waits, whatever its connection: nothing
 * depends on it.
 *
 * RESTARTING THE SOCKET LAYER.  Exactly-once rests on the receiver's memory:
 * per peer, the two epochs and the next sequence number it expects.  That
 * lives in the node, not in the connection, so killing every socket loses
 * nothing: lc_restart() aborts every connection, closes the listeners and
 * listens again on the same port, and the nodes stay as they were.  On
 * reconnect the receiver's HELLO carries its cumulative ack under the epoch
 * the sender knows, so the sender drops what was delivered before it
 * resends, and whatever is resent anyway (acks in flight when the sockets
 * died) is dropped by sequence number.  Destroying the context and creating
 * a new one is not a restart of the socket layer but of the node: the new
 * context has a new epoch and no memory of what the old one delivered;
 * the peer pauses it (PEER RESTARTED) until its application confirms
 * the restart, and then drops what it had queued for the old context, so
 * the new one gets none of it: neither the frames the old one delivered
 * whose ack never reached the sender (the ack is lost whenever the
 * connection is reset before it arrives; with usrsctp that is the rule,
 * not a race, because data arriving at a closed socket makes the stack
 * ABORT and the sending side's usrsctp reports the ABORT before the ack
 * it had received) nor those it never got.
 *
 * TRANSPORTS.  The bytes go through a transport (lowcomms_internal.h):
 * TCP (sock.c), the kernel's SCTP (sock.c) or libusrsctp (usrsctp.c), picked
 * at lc_new() from cfg_transport and, for SCTP, whether the kernel has it.
 * Everything above (frames, sequence numbers, HELLO, admission, resend) is
 * the same for all; SCTP carries the stream of frames as TCP does, but one
 * association spans all the addresses of both nodes, so a dead network is
 * survived without a reconnect.  usrsctp's sockets are not fds: the loop
 * watches an eventfd per socket instead, which only ever asks for POLLIN
 * (tr_notify_fd), and an event on it means "try both directions".
 *
 * KNOWN LIMITS.
 *  - Exactly-once holds while both contexts live (through any number of
 *    reconnects, lc_restart() calls and impostors' epochs).  A context
 *    destroyed with frames queued loses them (they were the application's
 *    to resend), and so does the peer's queue for it once the peer's
 *    application confirms the restart (PEER RESTARTED): nothing crosses
 *    from one life of a node to the next, and until the confirmation the
 *    two do not talk at all.  dlmd keeps one context for the life of the
 *    daemon, and a daemon that restarts comes back as a new member.
 *  - A pause rests on the application's membership: an application that
 *    never renews a node whose context restarted never talks to the new
 *    one (lc_node_paused_ms() grows; what to do is the caller's).  And a
 *    new life that read our HELLO while we did not read its own (the
 *    connection died in between, so we never paused it), followed by a
 *    renew of ours that drew a new epoch: that life pauses us in turn,
 *    and only a removal ends it (PEER UNREACHABLE in the caller): a
 *    narrow race that costs a removal, not a loss.  So does a life taken
 *    between two renews that are both older lives' leaves (a peer
 *    restarted twice, its leaves late): the second renew finds a known
 *    life and draws a new epoch, which that life, its own membership
 *    showing no departure of ours, pauses.
 *  - Queued frames are acknowledged by the peer's lowcomms, not its
 *    application: a frame is delivered to the callback before it is acked.
 *  - TCP uses one address per node at a time (failover to the next address
 *    only when a connect fails); multi-homing is SCTP's job.  With SCTP,
 *    admission looks at the primary source address of the association
 *    only, and the node table's addresses must all be of families the
 *    local addresses can reach.
 *  - The cluster key is shared: whoever can read the key file can pose as
 *    any node from that node's address (auth.c; the key file's mode is
 *    checked).  A handshake costs a round trip more than HELLO alone.
 *  - No keepalive of our own: a silently dead peer is noticed by TCP's
 *    timers or by the cluster manager, which calls lc_node_remove().
 *    A peer that stays in the cluster manager's view while our frames
 *    to it get nowhere (a firewall on our port only, a broken path) is
 *    not judged here: lc_node_wait_ms() says how long the oldest queued
 *    frame has waited without the peer's ack advancing (PEER
 *    UNREACHABLE), and the caller decides (dlmd: plugin/cluster.c,
 *    UNREACHABLE PEERS).
 *  - Sequence numbers are 32 bits; comparisons are wrap-safe as long as fewer
 *    than 2^31 frames are in flight to one node, which the queue limit
 *    guarantees.
 */
#include "lowcomms/lowcomms.h"
#include "lowcomms/auth.h"
#include "lowcomms/frame.h"
#include "lowcomms/lowcomms_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

/* Output buffer of a connection: frames are coalesced up to this size. */
#define OUT_BUF_SIZE		(256 * 1024)
/* One read buffer per context: what one read asks for.  With a key the
 * buffer has room for one whole record more (rbuf_cap()), see conn_read(). */
#define READ_BUF_SIZE		(512 * 1024)
/* A record that a read cut is read on straight into the connection's
 * record buffer when at least this much of it is missing; less is read
 * with what follows and copied (a system call costs more than the copy). */
#define READ_DIRECT_MIN		(16 * 1024)
/* Bounds on work per fd event, so one busy peer cannot starve others. */
#define READS_PER_EVENT		16
#define WRITES_PER_FLUSH	64
#define ACCEPTS_PER_EVENT	32
/* listen(2) backlog; small backlogs hang joins of many nodes. */
#define LISTEN_BACKLOG		128
#define LOG_LINE_MAX		256
/* At most one "refusing connection" line per interval. */
#define REFUSE_LOG_INTERVAL_MS	1000
/* accept() out of fds or memory: the listeners leave the poll set this long
 * (the connection stays queued, so a level-triggered poll would call
 * on_accept() again at once, for ever), and the failure is logged at most
 * once per ACCEPT_LOG_INTERVAL_MS. */
#define ACCEPT_PAUSE_MS		100
#define ACCEPT_LOG_INTERVAL_MS	60000
#define MAX_LISTENERS		LC_MAX_ADDRS
/* Room in an output buffer beyond out_cap(): handshake messages and the
 * header and tag of a record (LC_SEC_KEY). */
#define OUT_SLACK		256
/* First allocation of a connection's record buffer; it doubles as needed. */
#define REC_MIN_CAP		4096
/* A lone ACK goes at once when the peer holds this many frames or payload
 * bytes for us unacknowledged, or this share of our own queue bounds if
 * that is less (DELAYED ACKS). */
#define ACK_MAX_FRAMES		64
#define ACK_MAX_BYTES		(64 * 1024)
#define ACK_QUEUE_SHARE		4

/*
 * The send queue of a node: DATA frames, encoded once, kept until
 * acknowledged, back to back in chunks of QCHUNK_SIZE bytes (or one frame,
 * if larger), oldest first.  A frame's length and sequence number are read
 * from its own header.  Appending allocates only when the last chunk is
 * full, and a chunk whose frames are all acknowledged is kept as the
 * node's spare (or, the last one, emptied in place): a message costs no
 * malloc and no free, only its copy into the chunk.
 */
#define QCHUNK_SIZE		(64 * 1024)

struct lc_qchunk {
	struct lc_qchunk *qc_next;
	size_t qc_cap;
	size_t qc_used;			/* bytes of frames in qc_data */
	unsigned char qc_data[];
};

/* A place in the queue: a frame's start, or the end of a chunk (which
 * q_peek() reads as the start of the next one). */
struct lc_qpos {
	struct lc_qchunk *qp_ch;	/* NULL: no chunk yet */
	size_t qp_off;
};

enum conn_state {
	CONN_CONNECTING,	/* outgoing, connect() in progress */
	CONN_HELLO_WAIT,	/* socket up, waiting for the peer's HELLO */
	CONN_ESTABLISHED,	/* HELLOs exchanged, DATA flows */
};

struct lc_node;

struct lc_conn {
	struct lc_ctx *conn_ctx;
	struct lc_node *conn_node;	/* NULL: accepted, before HELLO */
	struct lc_conn *conn_prev;
	struct lc_conn *conn_next;
	struct lc_sock conn_sock;	/* conn_sock.sk_fd: what the loop watches */
	enum conn_state conn_state;
	bool conn_outgoing;		/* we called connect() */
	bool conn_abort;		/* reset rather than close gracefully */
	bool conn_heard;		/* a byte was read from it */
	short conn_events;		/* what the loop watches */
	uint64_t conn_deadline;		/* handshake must end by then */
	uint64_t conn_serial;		/* creation order */
	struct sockaddr_storage conn_peer;
	struct lc_reasm conn_ra;
	/* LC_SEC_KEY only: the handshake, then the record being read. */
	struct lc_hs conn_hs;
	unsigned char conn_hsbuf[LC_HS_MAX_LEN];
	size_t conn_hslen;
	unsigned char *conn_rec;	/* header + ciphertext so far */
	size_t conn_rec_len;
	size_t conn_rec_cap;
	const char *conn_why;		/* why the handshake or a record failed */
	int conn_seal_err;		/* a record could not be sealed */
	unsigned char *conn_out;
	size_t conn_out_len;		/* bytes in conn_out */
	size_t conn_out_off;		/* bytes of them already written */
};

struct lc_node {
	uint32_t node_id;
	struct sockaddr_storage node_addrs[LC_MAX_ADDRS];
	int node_naddrs;
	int node_addr_next;		/* address for the next connect */
	uint16_t node_udp_port;		/* usrsctp: its UDP port, 0 = ours */
	struct lc_conn *node_conn;	/* outgoing in progress or established */
	uint32_t node_epoch;		/* ours, for this peer */
	uint32_t node_peer_epoch;	/* the peer's, 0 = not known yet */
	uint32_t node_send_next;	/* seq of the next frame we queue */
	uint32_t node_sent_max;		/* highest seq ever written */
	uint32_t node_recv_next;	/* seq we expect next */
	uint32_t node_ack_sent;		/* last cumulative ack written */
	uint64_t node_ack_due;		/* a lone ACK goes then, 0 = none owed */
	size_t node_ack_bytes;		/* payload delivered since node_ack_sent */
	struct lc_qchunk *node_qfirst;	/* the send queue, oldest first */
	struct lc_qchunk *node_qlast;
	struct lc_qchunk *node_qspare;	/* an empty chunk kept for reuse */
	struct lc_qpos node_head;	/* oldest unacked frame */
	struct lc_qpos node_tx;		/* next frame to write */
	size_t node_qframes;
	size_t node_qbytes;
	/* since when the oldest queued frame waits for an ack that
	 * advances (lc_node_wait_ms); 0 = nothing queued */
	uint64_t node_wait_since;
	unsigned int node_backoff_ms;
	uint64_t node_retry_at;
	bool node_retry_pending;
	/* ops_deliver refused frame node_recv_next: nothing from the node
	 * is delivered until lc_node_resume() (HOLDING A NODE) */
	bool node_held;
	/* PEER RESTARTED: a HELLO brought this epoch while node_peer_epoch
	 * was known; nothing of ours goes to it and nothing of its is taken
	 * until the application confirms the known life's departure
	 * (lc_node_renew) or the known life is heard again.  0 = none. */
	uint32_t node_paused_epoch;
	/* since when the known life has not been connected while paused
	 * (lc_node_paused_ms) */
	uint64_t node_paused_since;
};

struct lc_ctx {
	struct lc_config ctx_cfg;
	bool ctx_sec;			/* cfg_security == LC_SEC_KEY */
	struct lc_keys *ctx_keys;	/* derived from cfg_key; secret.c's
					 * memory (LC_SEC_KEY only) */
	uint32_t ctx_suites;		/* record ciphers this CPU runs */
	const struct lc_ops *ctx_ops;
	void *ctx_arg;
	uint64_t ctx_now;		/* last lc_timer() time */
	uint32_t ctx_ack_frames;	/* a lone ACK goes at once past these */
	size_t ctx_ack_bytes;
	uint64_t ctx_serial;
	int ctx_in_callback;		/* depth of ops_deliver calls */
	const struct lc_transport *ctx_tr;
	void *ctx_tr_state;
	struct lc_sock ctx_listen[MAX_LISTENERS];
	int ctx_nlisten;
	int ctx_port;			/* bound port, or -1 */
	struct lc_node **ctx_nodes;	/* sorted by node id */
	size_t ctx_nnodes;
	size_t ctx_nodes_cap;
	struct lc_conn *ctx_conns;	/* list of all connections */
	struct lc_conn **ctx_fdmap;	/* fd -> connection */
	size_t ctx_fdmap_len;
	unsigned char *ctx_rbuf;
	struct lc_stats ctx_stats;
	struct lc_fault ctx_fault;
	uint32_t ctx_fault_count;	/* matching frames seen */
	uint64_t ctx_refuse_log_at;	/* next refusal may be logged then */
	uint64_t ctx_refuse_quiet;	/* refusals not logged since */
	uint64_t ctx_reject_log_at;	/* the same for failed handshakes */
	uint64_t ctx_reject_quiet;
	uint64_t ctx_accept_resume_at;	/* listeners paused until then, or 0 */
	uint64_t ctx_accept_log_at;	/* the same for accept failures */
	uint64_t ctx_accept_quiet;
};

/* Returned by a frame handler to close its connection without alarm. */
#define CLOSE_QUIETLY	(-EALREADY)
/* The same for a HELLO whose epoch is paused (PEER RESTARTED): the node
 * tries again later, whatever it has queued. */
#define CLOSE_PAUSED	(-ESTALE)

static const char *conn_state_str(enum conn_state state)
{
	switch (state) {
	case CONN_CONNECTING: return "connecting";
	case CONN_HELLO_WAIT: return "hello-wait";
	case CONN_ESTABLISHED: return "established";
	}
	return "?";
}

__attribute__((format(printf, 3, 4)))
static void lc_log(struct lc_ctx *ctx, int level, const char *fmt, ...)
{
	char line[LOG_LINE_MAX];
	va_list ap;

	if (!ctx->ctx_ops->ops_log)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	ctx->ctx_ops->ops_log(ctx->ctx_arg, level, line);
}

static void set_state(struct lc_conn *c, enum conn_state state)
{
	static const bool legal[3][3] = {
		/* from CONNECTING */ { false, true, false },
		/* from HELLO_WAIT */ { false, false, true },
		/* from ESTABLISHED */ { false, false, false },
	};

	if (!legal[c->conn_state][state])
		lc_log(c->conn_ctx, LOG_ERR, "bug: connection fd %d: %s -> %s",
		       c->conn_sock.sk_fd, conn_state_str(c->conn_state),
		       conn_state_str(state));
	lc_log(c->conn_ctx, LOG_DEBUG, "node %u fd %d: %s -> %s",
	       c->conn_node ? c->conn_node->node_id : 0, c->conn_sock.sk_fd,
	       conn_state_str(c->conn_state), conn_state_str(state));
	c->conn_state = state;
}

/*
 * Deadlines are computed from ctx_now.  lc_timer() sets it from the loop's
 * clock, but the loop may call lc_timer() only when a deadline is due, so
 * before computing a new deadline the clock is read here too (the same
 * CLOCK_MONOTONIC the caller is told to use).
 */
static uint64_t refresh_now(struct lc_ctx *ctx)
{
	struct timespec ts;
	uint64_t now;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
	if (now > ctx->ctx_now)
		ctx->ctx_now = now;
	return ctx->ctx_now;
}

static uint32_t new_epoch(void)
{
	static uint32_t fallback_counter;
	uint32_t e = 0;
	struct timespec ts;

	if (getrandom(&e, sizeof(e), GRND_NONBLOCK) != sizeof(e)) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		e = (uint32_t)ts.tv_nsec ^ ((uint32_t)getpid() << 16) ^
		    ++fallback_counter;
	}
	return e ? e : 1;
}

/* ---- node table ---------------------------------------------------- */

static size_t node_index(const struct lc_ctx *ctx, uint32_t nodeid, bool *found)
{
	size_t lo = 0, hi = ctx->ctx_nnodes;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint32_t id = ctx->ctx_nodes[mid]->node_id;

		if (id == nodeid) {
			*found = true;
			return mid;
		}
		if (id < nodeid)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = false;
	return lo;
}

static struct lc_node *find_node(const struct lc_ctx *ctx, uint32_t nodeid)
{
	bool found;
	size_t i = node_index(ctx, nodeid, &found);

	return found ? ctx->ctx_nodes[i] : NULL;
}

static bool node_has_ip(const struct lc_node *n,
			const struct sockaddr_storage *ss)
{
	for (int i = 0; i < n->node_naddrs; i++)
		if (lc_addr_same_ip(&n->node_addrs[i], ss))
			return true;
	return false;
}

static bool address_is_known(const struct lc_ctx *ctx,
			     const struct sockaddr_storage *ss)
{
	for (size_t i = 0; i < ctx->ctx_nnodes; i++)
		if (node_has_ip(ctx->ctx_nodes[i], ss))
			return true;
	return false;
}

/* ---- the send queue --------------------------------------------------- */

static uint32_t qf_len(const unsigned char *f)
{
	return dlm_get_le32(f + offsetof(struct lc_wire_hdr, wh_length));
}

static uint32_t qf_seq(const unsigned char *f)
{
	return dlm_get_le32(f + offsetof(struct lc_wire_hdr, wh_seq));
}

/* The frame at p, or NULL at the end of the queue. */
static unsigned char *q_peek(const struct lc_qpos *p)
{
	const struct lc_qchunk *ch = p->qp_ch;
	size_t off = p->qp_off;

	while (ch && off >= ch->qc_used) {
		ch = ch->qc_next;
		off = 0;
	}
	return ch ? (unsigned char *)ch->qc_data + off : NULL;
}

/* Move p past the frame f it is at (f from q_peek(p)). */
static void q_step(struct lc_qpos *p, const unsigned char *f)
{
	while (p->qp_off >= p->qp_ch->qc_used) {
		p->qp_ch = p->qp_ch->qc_next;
		p->qp_off = 0;
	}
	p->qp_off += qf_len(f);
}

/* Room for a frame of len bytes at the end of the queue, or NULL. */
static unsigned char *q_append(struct lc_node *n, size_t len)
{
	struct lc_qchunk *ch = n->node_qlast;
	size_t cap = len > QCHUNK_SIZE ? len : QCHUNK_SIZE;
	unsigned char *f;

	if (!ch || ch->qc_cap - ch->qc_used < len) {
		if (n->node_qspare && n->node_qspare->qc_cap >= cap) {
			ch = n->node_qspare;
			n->node_qspare = NULL;
		} else {
			ch = malloc(sizeof(*ch) + cap);
			if (!ch)
				return NULL;
			ch->qc_cap = cap;
		}
		ch->qc_next = NULL;
		ch->qc_used = 0;
		if (n->node_qlast) {
			n->node_qlast->qc_next = ch;
		} else {
			n->node_qfirst = ch;
			n->node_head = n->node_tx = (struct lc_qpos){ ch, 0 };
		}
		n->node_qlast = ch;
	}
	f = ch->qc_data + ch->qc_used;
	ch->qc_used += len;
	return f;
}

static void chunk_release(struct lc_node *n, struct lc_qchunk *ch)
{
	if (!n->node_qspare && ch->qc_cap == QCHUNK_SIZE)
		n->node_qspare = ch;
	else
		free(ch);
}

/* Move the head off chunks it has passed (freeing them); an emptied last
 * chunk is reused from its start. */
static void q_trim(struct lc_node *n)
{
	struct lc_qchunk *ch;

	while ((ch = n->node_head.qp_ch) &&
	       n->node_head.qp_off >= ch->qc_used) {
		if (!ch->qc_next) {
			/* the queue is empty: node_tx is here too */
			ch->qc_used = 0;
			n->node_head.qp_off = n->node_tx.qp_off = 0;
			return;
		}
		n->node_head = (struct lc_qpos){ ch->qc_next, 0 };
		if (n->node_tx.qp_ch == ch)
			n->node_tx = n->node_head;
		n->node_qfirst = ch->qc_next;
		chunk_release(n, ch);
	}
}

/* Drop the oldest frame (acknowledged). */
static void q_pop(struct lc_node *n)
{
	unsigned char *f;

	q_trim(n);
	f = n->node_head.qp_ch->qc_data + n->node_head.qp_off;
	if (n->node_tx.qp_ch == n->node_head.qp_ch &&
	    n->node_tx.qp_off == n->node_head.qp_off)
		q_step(&n->node_tx, f);
	n->node_head.qp_off += qf_len(f);
	n->node_qframes--;
	n->node_qbytes -= qf_len(f) - LC_FRAME_HDR_LEN;
	q_trim(n);
}

static void free_frames(struct lc_node *n)
{
	struct lc_qchunk *ch = n->node_qfirst, *next;

	while (ch) {
		next = ch->qc_next;
		free(ch);
		ch = next;
	}
	free(n->node_qspare);
	n->node_qfirst = n->node_qlast = n->node_qspare = NULL;
	n->node_head = n->node_tx = (struct lc_qpos){ NULL, 0 };
	n->node_qframes = 0;
	n->node_qbytes = 0;
	n->node_wait_since = 0;
}

/* Oldest sequence number we still hold (or would send next). */
static uint32_t send_base(const struct lc_node *n)
{
	return n->node_qframes ? qf_seq(q_peek(&n->node_head)) :
				 n->node_send_next;
}

static bool ack_owed(const struct lc_node *n)
{
	return n->node_ack_sent != n->node_recv_next - 1;
}

/* When a lone ACK goes at once: a share of a queue bound, at most max. */
static size_t ack_bound(size_t queue_bound, size_t max)
{
	size_t b = queue_bound / ACK_QUEUE_SHARE;

	return b > max ? max : b ? b : 1;
}

/* The cumulative ack `ack` is on its way (in DATA, ACK or HELLO). */
static void ack_written(struct lc_node *n, uint32_t ack)
{
	n->node_ack_sent = ack;
	if (!ack_owed(n)) {
		n->node_ack_due = 0;
		n->node_ack_bytes = 0;
	}
}

/* An ack is owed that no DATA frame will carry in time: the peer holds
 * enough frames for us, or it has waited its delay (DELAYED ACKS). */
static bool ack_due(const struct lc_ctx *ctx, const struct lc_node *n)
{
	if (!ack_owed(n))
		return false;
	return n->node_recv_next - 1 - n->node_ack_sent >= ctx->ctx_ack_frames ||
	       n->node_ack_bytes >= ctx->ctx_ack_bytes ||
	       ctx->ctx_now >= n->node_ack_due;
}

/* ---- fd map and connections ------------------------------------------ */

static int fdmap_set(struct lc_ctx *ctx, int fd, struct lc_conn *c)
{
	size_t len = ctx->ctx_fdmap_len;
	struct lc_conn **map;

	if ((size_t)fd >= len) {
		while (len <= (size_t)fd)
			len = len ? len * 2 : 64;
		map = realloc(ctx->ctx_fdmap, len * sizeof(*map));
		if (!map)
			return -ENOMEM;
		memset(map + ctx->ctx_fdmap_len, 0,
		       (len - ctx->ctx_fdmap_len) * sizeof(*map));
		ctx->ctx_fdmap = map;
		ctx->ctx_fdmap_len = len;
	}
	ctx->ctx_fdmap[fd] = c;
	return 0;
}

static struct lc_conn *fdmap_get(const struct lc_ctx *ctx, int fd)
{
	if (fd < 0 || (size_t)fd >= ctx->ctx_fdmap_len)
		return NULL;
	return ctx->ctx_fdmap[fd];
}

/* The largest batch of frames one write carries (one record's plaintext
 * with a key), for a largest message of max_msg bytes. */
static size_t batch_cap(size_t max_msg)
{
	/* Room for two of the largest frame (see LC_FAULT_DUPLICATE). */
	size_t max_frame = 2 * (LC_FRAME_HDR_LEN + max_msg);

	return max_frame > OUT_BUF_SIZE ? max_frame : OUT_BUF_SIZE;
}

static size_t out_cap(const struct lc_ctx *ctx)
{
	return batch_cap(ctx->ctx_cfg.cfg_max_msg);
}

/* Size of a context's read buffer: a read's worth, and with a key room
 * after it for the rest of the largest record a read can cut. */
static size_t rbuf_cap(const struct lc_config *cfg)
{
	if (cfg->cfg_security != LC_SEC_KEY)
		return READ_BUF_SIZE;
	return READ_BUF_SIZE + LC_REC_OVERHEAD + batch_cap(cfg->cfg_max_msg);
}

/* What the loop is asked to watch when lowcomms wants `events`: a
 * notification fd is only ever read. */
static short watch_events(const struct lc_ctx *ctx, short events)
{
	return ctx->ctx_tr->tr_notify_fd ? POLLIN : events;
}

/* Wrap a connected or accepted socket; it is closed on failure. */
static struct lc_conn *conn_new(struct lc_ctx *ctx, const struct lc_sock *sk,
				bool outgoing,
				const struct sockaddr_storage *peer,
				struct lc_node *n, enum conn_state state,
				short events)
{
	struct lc_conn *c = calloc(1, sizeof(*c));
	size_t max_len = LC_FRAME_HDR_LEN + ctx->ctx_cfg.cfg_max_msg;
	int fd = sk->sk_fd;

	if (!c)
		goto fail;
	c->conn_out = malloc(out_cap(ctx) + OUT_SLACK);
	if (!c->conn_out)
		goto fail_conn;
	if (lc_reasm_init(&c->conn_ra, max_len, n ? n->node_id : 0,
			  ctx->ctx_cfg.cfg_nodeid) < 0)
		goto fail_out;
	if (fdmap_set(ctx, fd, c) < 0)
		goto fail_ra;
	if (ctx->ctx_ops->ops_fd_add(ctx->ctx_arg, fd,
				     watch_events(ctx, events)) < 0) {
		ctx->ctx_fdmap[fd] = NULL;
		goto fail_ra;
	}
	c->conn_ctx = ctx;
	c->conn_node = n;
	c->conn_sock = *sk;
	c->conn_outgoing = outgoing;
	c->conn_state = state;
	c->conn_events = events;
	c->conn_deadline = refresh_now(ctx) + ctx->ctx_cfg.cfg_handshake_ms;
	c->conn_serial = ++ctx->ctx_serial;
	c->conn_peer = *peer;
	c->conn_next = ctx->ctx_conns;
	if (ctx->ctx_conns)
		ctx->ctx_conns->conn_prev = c;
	ctx->ctx_conns = c;
	return c;

fail_ra:
	lc_reasm_free(&c->conn_ra);
fail_out:
	free(c->conn_out);
fail_conn:
	free(c);
fail:
	{
		struct lc_sock tmp = *sk;

		ctx->ctx_tr->tr_close(&tmp, true);
	}
	return NULL;
}

static void schedule_retry(struct lc_ctx *ctx, struct lc_node *n)
{
	const struct lc_config *cfg = &ctx->ctx_cfg;

	if (!n->node_backoff_ms)
		n->node_backoff_ms = cfg->cfg_reconnect_min_ms;
	else if (n->node_backoff_ms < cfg->cfg_reconnect_max_ms / 2)
		n->node_backoff_ms *= 2;
	else
		n->node_backoff_ms = cfg->cfg_reconnect_max_ms;
	n->node_retry_at = refresh_now(ctx) + n->node_backoff_ms;
	n->node_retry_pending = true;
}

/*
 * Close and free a connection.  If it was its node's connection, the node
 * forgets it, will resend its whole queue on the next one, and schedules a
 * reconnect if it has anything to send (retry false: the node is going).
 */
static void conn_close(struct lc_conn *c, bool retry)
{
	struct lc_ctx *ctx = c->conn_ctx;
	struct lc_node *n = c->conn_node;

	if (n && n->node_conn == c) {
		n->node_conn = NULL;
		n->node_tx = n->node_head;
		if (c->conn_state == CONN_ESTABLISHED) {
			ctx->ctx_stats.st_conn_lost++;
			/* the known life is not connected from now */
			if (n->node_paused_epoch)
				n->node_paused_since = refresh_now(ctx);
		}
		if (retry && (n->node_qframes || n->node_paused_epoch))
			schedule_retry(ctx, n);
	}
	ctx->ctx_ops->ops_fd_del(ctx->ctx_arg, c->conn_sock.sk_fd);
	ctx->ctx_fdmap[c->conn_sock.sk_fd] = NULL;
	ctx->ctx_tr->tr_close(&c->conn_sock, c->conn_abort);
	if (c->conn_prev)
		c->conn_prev->conn_next = c->conn_next;
	else
		ctx->ctx_conns = c->conn_next;
	if (c->conn_next)
		c->conn_next->conn_prev = c->conn_prev;
	lc_reasm_free(&c->conn_ra);
	lc_hs_wipe(&c->conn_hs);
	free(c->conn_rec);
	free(c->conn_out);
	free(c);
}

static void conn_want(struct lc_conn *c, short events)
{
	struct lc_ctx *ctx = c->conn_ctx;

	if (c->conn_events == events)
		return;
	if (watch_events(ctx, c->conn_events) != watch_events(ctx, events) &&
	    ctx->ctx_ops->ops_fd_mod(ctx->ctx_arg, c->conn_sock.sk_fd,
				     watch_events(ctx, events)) < 0) {
		lc_log(ctx, LOG_ERR, "cannot watch fd %d", c->conn_sock.sk_fd);
		return;
	}
	c->conn_events = events;
}

/* Something to write now: bytes of a batch not yet written, or on an
 * established connection queued frames not yet written or an ack that is
 * due (one merely owed waits: lc_next_timeout() has its deadline). */
static bool conn_has_output(const struct lc_conn *c)
{
	const struct lc_node *n = c->conn_node;

	if (c->conn_out_off < c->conn_out_len)
		return true;
	if (c->conn_state != CONN_ESTABLISHED)
		return false;
	return q_peek(&n->node_tx) || ack_due(c->conn_ctx, n);
}

static void put_header(unsigned char *buf, const struct lc_ctx *ctx,
		       const struct lc_node *n, uint8_t kind, uint32_t len,
		       uint32_t seq)
{
	struct lc_frame_hdr h = {
		.fh_magic = LC_FRAME_MAGIC,
		.fh_version = LC_FRAME_VERSION,
		.fh_kind = kind,
		.fh_length = len,
		.fh_sender = ctx->ctx_cfg.cfg_nodeid,
		.fh_target = n->node_id,
		.fh_seq = seq,
		.fh_ack = n->node_recv_next - 1,
	};

	lc_frame_encode(buf, &h);
}

/*
 * Records (LC_SEC_KEY): frames appended to the output buffer between
 * rec_begin() and rec_end() become one sealed record, so a whole batch costs
 * one AEAD.  Without a key both do nothing and frames go out as they are.
 */
static size_t rec_begin(struct lc_conn *c)
{
	size_t at = c->conn_out_len;

	if (c->conn_ctx->ctx_sec)
		c->conn_out_len += LC_REC_HDR_LEN;
	return at;
}

static void rec_end(struct lc_conn *c, size_t at)
{
	struct lc_ctx *ctx = c->conn_ctx;
	size_t pt, len;

	if (!ctx->ctx_sec)
		return;
	pt = c->conn_out_len - at - LC_REC_HDR_LEN;
	if (!pt) {
		c->conn_out_len = at;
		return;
	}
	len = lc_rec_seal(&c->conn_hs.hs_tx, c->conn_out + at, pt);
	if (!len) {
		/* Nothing unsealed may go out: drop the batch, and the
		 * connection with it (conn_flush); the frames stay queued
		 * and go out again on a new connection. */
		lc_log(ctx, LOG_ERR, "node %u: cannot seal a record of %zu bytes",
		       c->conn_node ? c->conn_node->node_id : 0, pt);
		c->conn_out_len = at;
		c->conn_seal_err = -EIO;
		return;
	}
	c->conn_out_len = at + len;
	ctx->ctx_stats.st_records_sealed++;
}

/* A record suite's name, for logs. */
static const char *suite_name(uint32_t suite)
{
	switch (suite) {
	case LC_SUITE_AESOCB: return "AES-256-OCB";
	case LC_SUITE_AESGCM: return "AES-256-GCM";
	}
	return "ChaCha20-Poly1305";
}

/* Append our HELLO to the output buffer. */
static void queue_hello(struct lc_conn *c)
{
	struct lc_node *n = c->conn_node;
	size_t at = rec_begin(c);
	unsigned char *p = c->conn_out + c->conn_out_len;

	put_header(p, c->conn_ctx, n, LC_KIND_HELLO, LC_HELLO_LEN,
		   send_base(n));
	dlm_put_le32(p + LC_FRAME_HDR_LEN, n->node_epoch);
	dlm_put_le32(p + LC_FRAME_HDR_LEN + 4, n->node_peer_epoch);
	c->conn_out_len += LC_HELLO_LEN;
	ack_written(n, n->node_recv_next - 1);
	rec_end(c, at);
}

/* How many copies of frame f to write: 1, or 0 / 2 under a fault. */
static int fault_copies(struct lc_ctx *ctx, const unsigned char *f)
{
	const struct lc_fault *flt = &ctx->ctx_fault;
	uint16_t type;

	if (flt->flt_kind == LC_FAULT_NONE)
		return 1;
	type = dlm_get_le16(f + offsetof(struct lc_wire_hdr, wh_type));
	if (flt->flt_type && flt->flt_type != type)
		return 1;
	if (++ctx->ctx_fault_count % flt->flt_every)
		return 1;
	ctx->ctx_stats.st_faults++;
	return flt->flt_kind == LC_FAULT_SKIP ? 0 : 2;
}

/* Copy queued frames (and the ack) into the empty output buffer; with no
 * frame to carry the ack, a lone ACK frame only when it is due. */
static void fill_out(struct lc_conn *c)
{
	struct lc_ctx *ctx = c->conn_ctx;
	struct lc_node *n = c->conn_node;
	size_t cap = out_cap(ctx);
	uint32_t ack = n->node_recv_next - 1;
	size_t at = rec_begin(c), base = c->conn_out_len;
	unsigned char *f;

	while ((f = q_peek(&n->node_tx)) &&
	       c->conn_out_len + 2 * qf_len(f) <= cap) {
		int copies = fault_copies(ctx, f);
		uint32_t len = qf_len(f), seq = qf_seq(f);

		for (int i = 0; i < copies; i++) {
			unsigned char *p = c->conn_out + c->conn_out_len;

			memcpy(p, f, len);
			lc_frame_set_ack(p, ack);
			c->conn_out_len += len;
		}
		ctx->ctx_stats.st_frames_written++;
		if (lc_seq_after(seq, n->node_sent_max))
			n->node_sent_max = seq;
		else
			ctx->ctx_stats.st_frames_resent++;
		q_step(&n->node_tx, f);
	}
	if (c->conn_out_len > base)
		ack_written(n, ack);
	else if (ack_due(ctx, n)) {
		put_header(c->conn_out + base, ctx, n, LC_KIND_ACK,
			   LC_FRAME_HDR_LEN, 0);
		c->conn_out_len = base + LC_FRAME_HDR_LEN;
		ack_written(n, ack);
		ctx->ctx_stats.st_acks_sent++;
	}
	rec_end(c, at);
}

/*
 * Write what we can.  Returns 0, or a negative errno if the connection
 * broke (the caller closes it).  An ack owed, not yet due, and no DATA to
 * carry it is left for later (lc_timer()).  POLLOUT is asked for only
 * when the socket would not take everything (or the budget ran out), and
 * dropped when it has: a write that goes through at once costs no
 * epoll_ctl.
 */
static int conn_flush(struct lc_conn *c)
{
	struct lc_ctx *ctx = c->conn_ctx;
	ssize_t rv;

	for (int i = 0; i < WRITES_PER_FLUSH; i++) {
		if (c->conn_seal_err)
			return c->conn_seal_err;
		if (c->conn_out_off == c->conn_out_len) {
			c->conn_out_off = c->conn_out_len = 0;
			if (c->conn_state != CONN_ESTABLISHED)
				break;
			fill_out(c);
			if (c->conn_seal_err)
				return c->conn_seal_err;
			if (!c->conn_out_len)
				break;
		}
		rv = ctx->ctx_tr->tr_send(&c->conn_sock,
					  c->conn_out + c->conn_out_off,
					  c->conn_out_len - c->conn_out_off);
		if (rv == -EAGAIN)
			break;
		if (rv < 0)
			return (int)rv;
		ctx->ctx_stats.st_writes++;
		ctx->ctx_stats.st_bytes_written += (uint64_t)rv;
		c->conn_out_off += (size_t)rv;
	}
	conn_want(c, (short)(POLLIN | (conn_has_output(c) ? POLLOUT : 0)));
	return 0;
}

/* An established connection lc_timer() writes on: frames queued and no
 * write waiting for POLLOUT, or an ack due. */
static bool conn_flush_due(const struct lc_conn *c)
{
	return c->conn_out_off == c->conn_out_len && conn_has_output(c);
}

static void conn_fail(struct lc_conn *c, int level, const char *why, int err)
{
	struct lc_ctx *ctx = c->conn_ctx;
	char addr[LC_ADDR_STRLEN];

	lc_log(ctx, level, "closing connection to node %u (%s, %s): %s%s%s",
	       c->conn_node ? c->conn_node->node_id : 0,
	       lc_addr_str(&c->conn_peer, addr, sizeof(addr)),
	       conn_state_str(c->conn_state), why, err ? ": " : "",
	       err ? strerror(-err) : "");
	conn_close(c, true);
}

/* ---- connecting ---------------------------------------------------------- */

/*
 * Connect to n.  TCP: to the address after the last that failed, from our
 * first address of its family.  SCTP: one association over all of n's
 * addresses (the next one first, as primary path) from all of ours.
 */
static int start_connect(struct lc_ctx *ctx, struct lc_node *n)
{
	const struct lc_transport *tr = ctx->ctx_tr;
	const struct sockaddr_storage *dst = &n->node_addrs[n->node_addr_next];
	struct sockaddr_storage remotes[LC_MAX_ADDRS];
	char addr[LC_ADDR_STRLEN];
	struct lc_sock sk;
	struct lc_conn *c;
	int nremotes = tr->tr_multihomed ? n->node_naddrs : 1;
	int udp_port = n->node_udp_port;
	int rv;

	for (int i = 0; i < nremotes; i++)
		remotes[i] = n->node_addrs[(n->node_addr_next + i) %
					   n->node_naddrs];
	if (!udp_port && tr->tr_udp_port)
		udp_port = tr->tr_udp_port(ctx->ctx_tr_state);
	n->node_retry_pending = false;
	ctx->ctx_stats.st_connects++;
	rv = tr->tr_connect(ctx->ctx_tr_state, &ctx->ctx_cfg,
			    ctx->ctx_cfg.cfg_addrs, ctx->ctx_cfg.cfg_naddrs,
			    remotes, nremotes,
			    udp_port > 0 ? (uint16_t)udp_port : 0, &sk);
	if (rv < 0)
		goto fail;
	c = conn_new(ctx, &sk, true, dst, n, CONN_CONNECTING, POLLOUT);
	if (!c) {
		rv = -ENOMEM;
		goto fail;
	}
	n->node_conn = c;
	lc_log(ctx, LOG_DEBUG, "connecting to node %u at %s%s", n->node_id,
	       lc_addr_str(dst, addr, sizeof(addr)),
	       nremotes > 1 ? " and its other addresses" : "");
	return 0;

fail:
	lc_log(ctx, n->node_backoff_ms ? LOG_DEBUG : LOG_WARNING,
	       "cannot connect to node %u at %s: %s", n->node_id,
	       lc_addr_str(dst, addr, sizeof(addr)), strerror(-rv));
	n->node_addr_next = (n->node_addr_next + 1) % n->node_naddrs;
	schedule_retry(ctx, n);
	return rv;
}

/* The connect may have finished, one way or the other. */
static void on_connected(struct lc_conn *c)
{
	struct lc_node *n = c->conn_node;
	int err, rv;

	err = c->conn_ctx->ctx_tr->tr_connect_result(&c->conn_sock);
	if (err == -EAGAIN)
		return;
	if (err < 0) {
		n->node_addr_next = (n->node_addr_next + 1) % n->node_naddrs;
		conn_fail(c, n->node_backoff_ms ? LOG_DEBUG : LOG_WARNING,
			  "connect failed", err);
		return;
	}
	set_state(c, CONN_HELLO_WAIT);
	if (c->conn_ctx->ctx_sec) {
		/* HELLO follows once the peer has proved the key. */
		lc_hs_start_initiator(&c->conn_hs, c->conn_ctx->ctx_keys,
				      c->conn_ctx->ctx_cfg.cfg_nodeid,
				      n->node_id, c->conn_ctx->ctx_suites,
				      c->conn_out + c->conn_out_len);
		c->conn_out_len += LC_HS_INIT_LEN;
	} else {
		queue_hello(c);
	}
	rv = conn_flush(c);
	if (rv < 0)
		conn_fail(c, LOG_WARNING, "cannot write hello", rv);
}

/* ---- acknowledgements and the handshake ------------------------------ */

/* Frames from the peer are missing for good: tell the caller. */
static void report_lost(struct lc_ctx *ctx, struct lc_node *n, uint32_t got)
{
	if (!ctx->ctx_ops->ops_frames_lost)
		return;
	ctx->ctx_in_callback++;
	ctx->ctx_ops->ops_frames_lost(ctx->ctx_arg, n->node_id,
				      n->node_recv_next, got);
	ctx->ctx_in_callback--;
}

/* Drop every frame the peer has acknowledged. */
static int process_ack(struct lc_ctx *ctx, struct lc_node *n, uint32_t ack)
{
	unsigned char *f;
	size_t before = n->node_qframes;

	if (lc_seq_after(ack, n->node_send_next - 1)) {
		lc_log(ctx, LOG_ERR, "node %u acked %u, we sent only up to %u",
		       n->node_id, ack, n->node_send_next - 1);
		return -EPROTO;
	}
	while (n->node_qframes && (f = q_peek(&n->node_head)) &&
	       !lc_seq_after(qf_seq(f), ack))
		q_pop(n);
	/* progress: what is left waits from now (PEER UNREACHABLE) */
	if (n->node_qframes != before)
		n->node_wait_since = n->node_qframes ? refresh_now(ctx) : 0;
	return 0;
}

/* PEER RESTARTED: a HELLO brought epoch where another is known. */
static void pause_epoch(struct lc_ctx *ctx, struct lc_node *n, uint32_t epoch)
{
	/* a retry of the same life: said already; 0 is no life's */
	if (n->node_paused_epoch == epoch || !epoch)
		return;
	ctx->ctx_stats.st_peer_restarts++;
	if (n->node_paused_epoch) {
		lc_log(ctx, LOG_DEBUG, "node %u: epoch %08x paused too",
		       n->node_id, epoch);
		n->node_paused_epoch = epoch;
		return;
	}
	n->node_paused_epoch = epoch;
	n->node_paused_since = refresh_now(ctx);
	lc_log(ctx, LOG_NOTICE,
	       "node %u: a new epoch %08x where %08x is known (restarted, or "
	       "someone with the key): paused, %zu frames kept for %08x, "
	       "until that life's departure is confirmed or it answers again",
	       n->node_id, epoch, n->node_peer_epoch, n->node_qframes,
	       n->node_peer_epoch);
}

/* PEER RESTARTED: the known life was heard again. */
static void lift_pause(struct lc_ctx *ctx, struct lc_node *n)
{
	lc_log(ctx, LOG_NOTICE,
	       "node %u: epoch %08x heard again: epoch %08x was not its "
	       "restart; pause lifted, %zu frames kept", n->node_id,
	       n->node_peer_epoch, n->node_paused_epoch, n->node_qframes);
	n->node_paused_epoch = 0;
	n->node_paused_since = 0;
	ctx->ctx_stats.st_pauses_lifted++;
}

/*
 * A HELLO from node n: take its sequence state, or (a new epoch where
 * one is known) pause it: CLOSE_PAUSED, nothing of the node changed but
 * the pause (PEER RESTARTED).
 */
static int process_hello(struct lc_ctx *ctx, struct lc_node *n,
			 const struct lc_frame_hdr *h,
			 const unsigned char *payload)
{
	uint32_t epoch = dlm_get_le32(payload);
	uint32_t known = dlm_get_le32(payload + 4);

	if (n->node_peer_epoch && epoch != n->node_peer_epoch) {
		pause_epoch(ctx, n, epoch);
		return CLOSE_PAUSED;
	}
	if (n->node_paused_epoch)
		lift_pause(ctx, n);
	if (epoch != n->node_peer_epoch) {
		/* a peer never seen (or forgotten: lc_node_renew) */
		n->node_peer_epoch = epoch;
		n->node_recv_next = h->fh_seq;
		ack_written(n, h->fh_seq - 1);
	} else if (lc_seq_after(h->fh_seq, n->node_recv_next)) {
		lc_log(ctx, LOG_ERR,
		       "node %u resumes at %u but we expect %u: frames lost",
		       n->node_id, h->fh_seq, n->node_recv_next);
		report_lost(ctx, n, h->fh_seq);
		return -EPROTO;
	}
	if (known == n->node_epoch)
		return process_ack(ctx, n, h->fh_ack);
	return 0;
}

static void establish(struct lc_conn *c)
{
	struct lc_node *n = c->conn_node;

	set_state(c, CONN_ESTABLISHED);
	n->node_tx = n->node_head;
	n->node_backoff_ms = 0;
	n->node_retry_pending = false;
	c->conn_ctx->ctx_stats.st_established++;
	if (c->conn_ctx->ctx_ops->ops_established)
		c->conn_ctx->ctx_ops->ops_established(c->conn_ctx->ctx_arg,
						      n->node_id);
	lc_log(c->conn_ctx, LOG_INFO, "connected to node %u (%s, %s%s)",
	       n->node_id, c->conn_outgoing ? "outgoing" : "incoming",
	       c->conn_ctx->ctx_sec ? "key, " : "plaintext",
	       c->conn_ctx->ctx_sec ? suite_name(c->conn_hs.hs_tx.ae_suite) :
	       "");
}

/*
 * HELLO on an accepted connection: find the node, settle a duplicate
 * connection, take the peer's sequence state, answer.
 */
static int hello_incoming(struct lc_conn *c, const struct lc_frame_hdr *h,
			  const unsigned char *payload)
{
	struct lc_ctx *ctx = c->conn_ctx;
	struct lc_node *n = find_node(ctx, h->fh_sender);
	struct lc_conn *old;
	char addr[LC_ADDR_STRLEN];
	uint32_t epoch = dlm_get_le32(payload);
	int rv;

	if (!n || !node_has_ip(n, &c->conn_peer)) {
		lc_log(ctx, LOG_WARNING,
		       "connection from %s claims node %u, which does not have that address",
		       lc_addr_str(&c->conn_peer, addr, sizeof(addr)),
		       h->fh_sender);
		return -EPERM;
	}
	c->conn_node = n;
	lc_reasm_set_sender(&c->conn_ra, n->node_id);
	if (n->node_peer_epoch && epoch != n->node_peer_epoch) {
		/* PEER RESTARTED: the connection of the known life (if
		 * any) stays; this one goes; we try the node's address
		 * again later, whatever we have queued, to hear the known
		 * life if it is there */
		pause_epoch(ctx, n, epoch);
		if (!n->node_conn && !n->node_retry_pending)
			schedule_retry(ctx, n);
		c->conn_node = NULL;
		return CLOSE_QUIETLY;
	}
	old = n->node_conn;
	if (old) {
		bool keep_old = old->conn_outgoing &&
				ctx->ctx_cfg.cfg_nodeid < n->node_id;

		if (keep_old) {
			lc_log(ctx, LOG_DEBUG,
			       "node %u: simultaneous connect, keeping ours",
			       n->node_id);
			c->conn_node = NULL;
			return CLOSE_QUIETLY;
		}
		lc_log(ctx, LOG_DEBUG, "node %u: new connection replaces %s one",
		       n->node_id, conn_state_str(old->conn_state));
		conn_close(old, false);
	}
	n->node_conn = c;
	rv = process_hello(ctx, n, h, payload);
	if (rv < 0)
		return rv;
	queue_hello(c);
	establish(c);
	return 0;
}

/* ---- receiving ----------------------------------------------------------- */

static int on_data(struct lc_ctx *ctx, struct lc_node *n,
		   const struct lc_frame_hdr *h, const unsigned char *payload,
		   size_t len)
{
	int rv;

	if (n->node_held && !lc_seq_before(h->fh_seq, n->node_recv_next)) {
		/* not delivered, not acknowledged: the peer keeps it and
		 * sends it again on the connection lc_node_resume() makes */
		ctx->ctx_stats.st_held_skipped++;
		return 0;
	}
	if (h->fh_seq != n->node_recv_next) {
		if (lc_seq_before(h->fh_seq, n->node_recv_next)) {
			ctx->ctx_stats.st_dups_dropped++;
			return 0;
		}
		lc_log(ctx, LOG_ERR, "node %u: got seq %u, expected %u",
		       n->node_id, h->fh_seq, n->node_recv_next);
		report_lost(ctx, n, h->fh_seq);
		return -EPROTO;
	}
	ctx->ctx_in_callback++;
	rv = ctx->ctx_ops->ops_deliver(ctx->ctx_arg, n->node_id, h->fh_type,
				       h->fh_lsid, payload, len);
	ctx->ctx_in_callback--;
	if (rv < 0) {
		/* not taken: expected again from this very frame */
		n->node_held = true;
		ctx->ctx_stats.st_not_taken++;
		return 0;
	}
	n->node_recv_next++;
	if (!n->node_ack_due)
		n->node_ack_due = refresh_now(ctx) + ctx->ctx_cfg.cfg_ack_delay_ms;
	n->node_ack_bytes += len;
	ctx->ctx_stats.st_msgs_delivered++;
	return 0;
}

/* Reassembler callback: one whole, header-checked frame. */
static int on_frame(void *arg, const struct lc_frame_hdr *h,
		    const unsigned char *payload, size_t len)
{
	struct lc_conn *c = arg;
	struct lc_ctx *ctx = c->conn_ctx;
	struct lc_node *n = c->conn_node;
	int rv;

	if (c->conn_state != CONN_ESTABLISHED) {
		if (h->fh_kind != LC_KIND_HELLO) {
			lc_log(ctx, LOG_WARNING, "%s frame before hello",
			       lc_frame_kind_str(h->fh_kind));
			return -EPROTO;
		}
		if (!c->conn_outgoing)
			return hello_incoming(c, h, payload);
		rv = process_hello(ctx, n, h, payload);
		if (rv < 0)
			return rv;
		establish(c);
		return 0;
	}
	/* a frame of the known life: it is there (PEER RESTARTED) */
	if (n->node_paused_epoch)
		lift_pause(ctx, n);
	switch (h->fh_kind) {
	case LC_KIND_DATA:
		rv = process_ack(ctx, n, h->fh_ack);
		if (rv < 0)
			return rv;
		return on_data(ctx, n, h, payload, len);
	case LC_KIND_ACK:
		return process_ack(ctx, n, h->fh_ack);
	default:
		lc_log(ctx, LOG_WARNING, "node %u: unexpected %s frame",
		       n->node_id, lc_frame_kind_str(h->fh_kind));
		return -EPROTO;
	}
}

/* ---- the key handshake and records (LC_SEC_KEY) ------------------------ */

/* The handshake failed or a record did not open: count it, say why. */
static int auth_fail(struct lc_conn *c, const char *why)
{
	c->conn_ctx->ctx_stats.st_auth_failed++;
	c->conn_why = why;
	return -EACCES;
}

/* One whole handshake message in conn_hsbuf. */
static int hs_message(struct lc_conn *c, const struct lc_hs_msg *m)
{
	struct lc_ctx *ctx = c->conn_ctx;
	struct lc_hs *hs = &c->conn_hs;
	char addr[LC_ADDR_STRLEN];
	enum lc_hs_err err;
	struct lc_node *n;

	switch (hs->hs_state) {
	case LC_HSS_WAIT_INIT:
		if (m->hm_type != LC_HS_INIT)
			return auth_fail(c, lc_hs_err_str(LC_HSERR_TYPE));
		/* Admission by address first, as without a key: the node
		 * claimed must own the address the connection comes from. */
		n = find_node(ctx, m->hm_sender);
		if (!n || !node_has_ip(n, &c->conn_peer)) {
			lc_log(ctx, LOG_WARNING,
			       "connection from %s claims node %u, which does not have that address",
			       lc_addr_str(&c->conn_peer, addr, sizeof(addr)),
			       m->hm_sender);
			return -EPERM;
		}
		err = lc_hs_on_init(hs, m, c->conn_hsbuf,
				    c->conn_out + c->conn_out_len);
		if (err != LC_HSERR_NONE)
			return auth_fail(c, lc_hs_err_str(err));
		c->conn_out_len += LC_HS_RESP_LEN;
		return 0;
	case LC_HSS_WAIT_RESP:
		err = lc_hs_on_resp(hs, m, c->conn_hsbuf,
				    c->conn_out + c->conn_out_len);
		if (err != LC_HSERR_NONE)
			return auth_fail(c, lc_hs_err_str(err));
		c->conn_out_len += LC_HS_FIN_LEN;
		lc_log(ctx, LOG_DEBUG, "node %u proved the cluster key (%s)",
		       hs->hs_peer, suite_name(hs->hs_tx.ae_suite));
		queue_hello(c);
		return 0;
	case LC_HSS_WAIT_FIN:
		err = lc_hs_on_fin(hs, m, c->conn_hsbuf);
		if (err != LC_HSERR_NONE)
			return auth_fail(c, lc_hs_err_str(err));
		/* From now on every frame must come from that node. */
		lc_reasm_set_sender(&c->conn_ra, hs->hs_peer);
		lc_log(ctx, LOG_DEBUG, "node %u at %s proved the cluster key (%s)",
		       hs->hs_peer,
		       lc_addr_str(&c->conn_peer, addr, sizeof(addr)),
		       suite_name(hs->hs_rx.ae_suite));
		return 0;
	default:
		return auth_fail(c, lc_hs_err_str(LC_HSERR_STATE));
	}
}

/* Take handshake bytes; returns how many were used, or a negative errno. */
static ssize_t hs_feed(struct lc_conn *c, const unsigned char *p, size_t len)
{
	struct lc_hs_msg m;
	enum lc_hs_err err;
	size_t used = 0, need, take;
	int rv;

	for (;;) {
		err = lc_hs_parse(c->conn_hsbuf, c->conn_hslen, &m, &need);
		if (err == LC_HSERR_NONE)
			break;
		if (err != LC_HSERR_MORE)
			return auth_fail(c, lc_hs_err_str(err));
		if (used == len)
			return (ssize_t)used;
		if (c->conn_hslen < 4)
			need = 4;	/* judge the magic first */
		take = need - c->conn_hslen;
		if (take > len - used)
			take = len - used;
		memcpy(c->conn_hsbuf + c->conn_hslen, p + used, take);
		c->conn_hslen += take;
		used += take;
	}
	c->conn_hslen = 0;
	rv = hs_message(c, &m);
	return rv < 0 ? rv : (ssize_t)used;
}

static int rec_reserve(struct lc_conn *c, size_t want)
{
	return lc_buf_reserve(&c->conn_rec, &c->conn_rec_cap, want,
			      REC_MIN_CAP);
}

/* Open the whole record at rec and feed its frames to the reassembler. */
static int rec_open_feed(struct lc_conn *c, unsigned char *rec, size_t ct_len)
{
	size_t pt_len;

	if (lc_rec_open(&c->conn_hs.hs_rx, rec, ct_len, &pt_len) < 0)
		return auth_fail(c, "record failed authentication (forged, "
				    "replayed, reordered or corrupted)");
	return lc_reasm_feed(&c->conn_ra, rec + LC_REC_HDR_LEN, pt_len,
			     on_frame, c);
}

/* Take record bytes; each whole record is opened and its frames fed to the
 * reassembler.  A record wholly inside p is opened where it is (p is the
 * context's read buffer).  One cut by the end of p is left there when
 * keep_cut is set and its header is whole (conn_read() then reads its rest
 * straight after it), else copied to the connection's record buffer.
 * Returns how many bytes were used, or a negative errno. */
static ssize_t rec_feed(struct lc_conn *c, unsigned char *p, size_t len,
			bool keep_cut)
{
	size_t used = 0, take, ct_len = 0;
	int rv;

	while (used < len) {
		if (!c->conn_rec_len && len - used >= LC_REC_HDR_LEN) {
			ct_len = lc_rec_ct_len(p + used, out_cap(c->conn_ctx));
			if (!ct_len)
				return auth_fail(c, "malformed record (length "
						    "out of bounds)");
			if (len - used >= LC_REC_HDR_LEN + ct_len) {
				rv = rec_open_feed(c, p + used, ct_len);
				if (rv < 0)
					return rv;
				used += LC_REC_HDR_LEN + ct_len;
				continue;
			}
			if (keep_cut)
				break;
		}
		if (c->conn_rec_len < LC_REC_HDR_LEN) {
			rv = rec_reserve(c, LC_REC_HDR_LEN);
			if (rv < 0)
				return rv;
			take = LC_REC_HDR_LEN - c->conn_rec_len;
			if (take > len - used)
				take = len - used;
			memcpy(c->conn_rec + c->conn_rec_len, p + used, take);
			c->conn_rec_len += take;
			used += take;
			if (c->conn_rec_len < LC_REC_HDR_LEN)
				break;
		}
		ct_len = lc_rec_ct_len(c->conn_rec, out_cap(c->conn_ctx));
		if (!ct_len)
			return auth_fail(c, "malformed record (length out of bounds)");
		rv = rec_reserve(c, LC_REC_HDR_LEN + ct_len);
		if (rv < 0)
			return rv;
		take = LC_REC_HDR_LEN + ct_len - c->conn_rec_len;
		if (take > len - used)
			take = len - used;
		memcpy(c->conn_rec + c->conn_rec_len, p + used, take);
		c->conn_rec_len += take;
		used += take;
		if (c->conn_rec_len < LC_REC_HDR_LEN + ct_len)
			break;
		c->conn_rec_len = 0;
		rv = rec_open_feed(c, c->conn_rec, ct_len);
		if (rv < 0)
			return rv;
	}
	return (ssize_t)used;
}

/* Bytes read on a connection: handshake, then records (or, without a key,
 * frames straight to the reassembler).  With keep_cut a record cut by the
 * end of p may be left unused (rec_feed()).  Returns how many bytes were
 * used, or a negative errno. */
static ssize_t conn_input(struct lc_conn *c, unsigned char *p, size_t len,
			  bool keep_cut)
{
	size_t total = len;
	ssize_t used;
	int rv;

	if (!c->conn_ctx->ctx_sec) {
		/* Say plainly why a keyed peer gets nowhere with us. */
		if (c->conn_state != CONN_ESTABLISHED && !c->conn_ra.ra_len &&
		    len >= 4 && dlm_get_le32(p) == LC_HS_MAGIC) {
			c->conn_why = "peer authenticates with a cluster key, "
				      "we have crypto = none";
			return -EACCES;
		}
		rv = lc_reasm_feed(&c->conn_ra, p, len, on_frame, c);
		return rv < 0 ? rv : (ssize_t)len;
	}
	while (len) {
		if (c->conn_hs.hs_state != LC_HSS_DONE)
			used = hs_feed(c, p, len);
		else
			used = rec_feed(c, p, len, keep_cut);
		if (used < 0)
			return used;
		if (!used)
			break;
		p += used;
		len -= (size_t)used;
	}
	return (ssize_t)(total - len);
}

/* Close an accepted connection that failed authentication before it
 * became a node's; log why, at most once per REFUSE_LOG_INTERVAL_MS. */
static void reject(struct lc_conn *c)
{
	struct lc_ctx *ctx = c->conn_ctx;
	char addr[LC_ADDR_STRLEN], claim[32] = "";

	refresh_now(ctx);
	if (ctx->ctx_reject_log_at && ctx->ctx_now < ctx->ctx_reject_log_at) {
		ctx->ctx_reject_quiet++;
	} else {
		if (c->conn_hs.hs_peer)
			snprintf(claim, sizeof(claim), " claiming node %u",
				 c->conn_hs.hs_peer);
		lc_log(ctx, LOG_WARNING,
		       "rejecting connection from %s%s: %s (%llu more not logged)",
		       lc_addr_str(&c->conn_peer, addr, sizeof(addr)), claim,
		       c->conn_why, (unsigned long long)ctx->ctx_reject_quiet);
		ctx->ctx_reject_quiet = 0;
		ctx->ctx_reject_log_at = ctx->ctx_now + REFUSE_LOG_INTERVAL_MS;
	}
	conn_close(c, false);
}

/* Close c after its input failed with rv (conn_input(), rec_open_feed()). */
static void conn_input_fail(struct lc_conn *c, int rv)
{
	struct lc_ctx *ctx = c->conn_ctx;

	if (rv == CLOSE_QUIETLY || rv == CLOSE_PAUSED) {
		conn_close(c, rv == CLOSE_PAUSED);
		return;
	}
	ctx->ctx_stats.st_rejected++;
	if (rv == -EACCES && c->conn_why) {
		if (!c->conn_node) {
			/* Not (yet) a node's connection: a stranger may make
			 * many, so the log is rate-limited. */
			reject(c);
			return;
		}
		conn_fail(c, LOG_WARNING, c->conn_why, 0);
		return;
	}
	conn_fail(c, LOG_WARNING,
		  c->conn_ra.ra_err == LC_FERR_STOPPED ? "protocol error" :
		  lc_frame_err_str(c->conn_ra.ra_err), rv);
}

/* Read at most len bytes from c into buf: how many (not 0), or -EAGAIN,
 * or another negative errno once c has been failed (end of file, error). */
static ssize_t conn_recv(struct lc_conn *c, unsigned char *buf, size_t len)
{
	struct lc_ctx *ctx = c->conn_ctx;
	ssize_t got = ctx->ctx_tr->tr_recv(&c->conn_sock, buf, len);

	if (got == -EAGAIN)
		return got;
	if (got == 0) {
		conn_fail(c, LOG_INFO, "closed by peer", 0);
		return -EPIPE;
	}
	if (got < 0) {
		conn_fail(c, LOG_INFO, "read error", (int)got);
		return got;
	}
	ctx->ctx_stats.st_reads++;
	c->conn_heard = true;
	return got;
}

/* With a key, the bytes still missing of the record c has begun to read
 * into its record buffer (its header whole there), else 0; *ct_len: the
 * length the header announces. */
static size_t rec_missing(const struct lc_conn *c, size_t *ct_len)
{
	if (!c->conn_ctx->ctx_sec || c->conn_hs.hs_state != LC_HSS_DONE ||
	    c->conn_rec_len < LC_REC_HDR_LEN)
		return 0;
	*ct_len = lc_rec_ct_len(c->conn_rec, out_cap(c->conn_ctx));
	if (!*ct_len || LC_REC_HDR_LEN + *ct_len > c->conn_rec_cap)
		return 0;	/* rec_feed() fails it */
	return LC_REC_HDR_LEN + *ct_len - c->conn_rec_len;
}

/*
 * A read cut a record: its start is at buf + used, buf + got is the end of
 * the read.  Its rest is usually in the socket already, so it is read
 * straight after it (the read buffer has room for a whole record more,
 * rbuf_cap()) and the record is opened where it lies, with no copy; what
 * has not arrived yet goes to the record buffer with the start, and later
 * reads put the rest there directly.  Returns what conn_input() returns
 * for the bytes from buf + used on, or a negative errno with *closed set
 * if the read failed (c has then been failed already).
 */
static ssize_t rec_read_cut(struct lc_conn *c, unsigned char *buf,
			    size_t used, size_t got, bool *closed)
{
	size_t rec_len = LC_REC_HDR_LEN + dlm_get_le32(buf + used);
	ssize_t more;

	more = conn_recv(c, buf + got, rec_len - (got - used));
	if (more < 0 && more != -EAGAIN) {
		*closed = true;
		return more;
	}
	if (more > 0)
		got += (size_t)more;
	return conn_input(c, buf + used, got - used, false);
}

static void conn_read(struct lc_conn *c)
{
	struct lc_ctx *ctx = c->conn_ctx;
	unsigned char *buf = ctx->ctx_rbuf;
	size_t missing, ct_len = 0;
	bool closed = false;
	ssize_t got, rv;

	for (int i = 0; i < READS_PER_EVENT; i++) {
		missing = rec_missing(c, &ct_len);
		if (missing >= READ_DIRECT_MIN) {
			/* The rest of a record an earlier read cut: into
			 * the record buffer directly, not through buf. */
			got = conn_recv(c, c->conn_rec + c->conn_rec_len,
					missing);
			if (got == -EAGAIN)
				break;
			if (got < 0)
				return;
			c->conn_rec_len += (size_t)got;
			if ((size_t)got < missing)
				break;		/* the socket is drained */
			c->conn_rec_len = 0;
			rv = rec_open_feed(c, c->conn_rec, ct_len);
			if (rv < 0) {
				conn_input_fail(c, (int)rv);
				return;
			}
			continue;
		}
		got = conn_recv(c, buf, READ_BUF_SIZE);
		if (got == -EAGAIN)
			break;
		if (got < 0)
			return;
		rv = conn_input(c, buf, (size_t)got, true);
		if (rv >= 0 && rv < got && ctx->ctx_sec &&
		    c->conn_hs.hs_state == LC_HSS_DONE && !c->conn_rec_len &&
		    (size_t)(got - rv) >= LC_REC_HDR_LEN) {
			rv = rec_read_cut(c, buf, (size_t)rv, (size_t)got,
					  &closed);
			if (closed)
				return;
		}
		if (rv < 0) {
			conn_input_fail(c, (int)rv);
			return;
		}
		if ((size_t)got < READ_BUF_SIZE)
			break;
	}
	/* What the callbacks queued goes now, with the ack on it; a lone
	 * ACK goes only when due (DELAYED ACKS): until then the
	 * application's answer to what was read, or its next request, can
	 * carry it (one write per message each way, not two). */
	rv = conn_flush(c);
	if (rv < 0)
		conn_fail(c, LOG_INFO, "write error", (int)rv);
}

/* Close a connection from a stranger; log it, at a limited rate. */
static void refuse(struct lc_ctx *ctx, struct lc_sock *sk,
		   const struct sockaddr_storage *ss)
{
	char addr[LC_ADDR_STRLEN];

	ctx->ctx_tr->tr_close(sk, false);
	ctx->ctx_stats.st_refused++;
	refresh_now(ctx);
	if (ctx->ctx_refuse_log_at && ctx->ctx_now < ctx->ctx_refuse_log_at) {
		ctx->ctx_refuse_quiet++;
		return;
	}
	lc_log(ctx, LOG_WARNING,
	       "refusing connection from %s: not a cluster node address (%llu more not logged)",
	       lc_addr_str(ss, addr, sizeof(addr)),
	       (unsigned long long)ctx->ctx_refuse_quiet);
	ctx->ctx_refuse_quiet = 0;
	ctx->ctx_refuse_log_at = ctx->ctx_now + REFUSE_LOG_INTERVAL_MS;
}

/* accept() failed (EMFILE, ENFILE, ENOBUFS, ENOMEM...): the connection
 * stays queued, so take the listeners out of the poll set for
 * ACCEPT_PAUSE_MS (lc_timer() puts them back) instead of being called again
 * at once; log it rate-limited. */
static void accept_pause(struct lc_ctx *ctx, int err)
{
	refresh_now(ctx);
	if (!ctx->ctx_accept_resume_at)
		for (int i = 0; i < ctx->ctx_nlisten; i++)
			ctx->ctx_ops->ops_fd_mod(ctx->ctx_arg,
						 ctx->ctx_listen[i].sk_fd, 0);
	ctx->ctx_accept_resume_at = ctx->ctx_now + ACCEPT_PAUSE_MS;
	if (ctx->ctx_accept_log_at && ctx->ctx_now < ctx->ctx_accept_log_at) {
		ctx->ctx_accept_quiet++;
		return;
	}
	lc_log(ctx, LOG_ERR,
	       "accept: %s: not accepting for %d ms (%llu more not logged)",
	       strerror(-err), ACCEPT_PAUSE_MS,
	       (unsigned long long)ctx->ctx_accept_quiet);
	ctx->ctx_accept_quiet = 0;
	ctx->ctx_accept_log_at = ctx->ctx_now + ACCEPT_LOG_INTERVAL_MS;
}

static void accept_resume(struct lc_ctx *ctx)
{
	ctx->ctx_accept_resume_at = 0;
	for (int i = 0; i < ctx->ctx_nlisten; i++)
		ctx->ctx_ops->ops_fd_mod(ctx->ctx_arg, ctx->ctx_listen[i].sk_fd,
					 POLLIN);
}

/*
 * Accepted connections that have not said who they are (no HELLO yet)
 * from one address: at most PREHELLO_PER_ADDR.  Anyone on a node's
 * machine may connect from its address, and such a connection costs an
 * fd and memory here until its handshake time runs out; one local user
 * there holding thousands open would take this daemon's fds, and its
 * lock clients and peers would then wait at accept.  A node's dlmd has
 * one connection to us at a time (two, briefly, when it reconnects or
 * both ends connect at once): past the bound one from that address goes,
 * the oldest of those that have sent nothing if there is one, else the
 * oldest.  A dlmd sends its HELLO (or its first handshake message) as
 * soon as it has connected, so its connection has bytes read or waiting
 * by the time another is accepted; one that only sits there is the local
 * user's, who so cannot evict that node's dlmd's own handshake (it
 * could: the oldest went, whatever it had sent).  A user who sends the
 * start of a HELLO on each is not stopped from that: it must then win,
 * BOUND times over, the race against the rest of a real handshake (one
 * read in the plain protocol; with the key one round trip, INIT to FIN,
 * for a well-formed INIT proves nothing: tests/test-cluster-preflood.sh
 * floods so, and the real peer got through every time).  With the key,
 * a connection that has proved it (its FIN checked, its HELLO not read
 * yet) goes last of all: it is a node's dlmd, or someone who holds the
 * key and could pose as any node anyway; the flooder cannot prove it.
 */
#define PREHELLO_PER_ADDR	8

/* Has c sent anything: bytes read, or (kernel sockets) waiting? */
static bool conn_talked(struct lc_conn *c)
{
	char b;

	if (c->conn_heard)
		return true;
	if (c->conn_ctx->ctx_tr->tr_notify_fd)
		return false;	/* usrsctp: no socket to look at */
	return recv(c->conn_sock.sk_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
}

/* How readily c goes when its address has too many connections before
 * their HELLO: 0 it sent nothing, 1 it sent something but has not proved
 * the cluster key, 2 it proved it (a node's dlmd, or one who holds the
 * key and so could pose as any node anyway). */
static int prehello_rank(struct lc_conn *c)
{
	if (!conn_talked(c))
		return 0;
	if (c->conn_ctx->ctx_sec && c->conn_hs.hs_state == LC_HSS_DONE)
		return 2;
	return 1;
}

static void prehello_bound(struct lc_ctx *ctx, const struct sockaddr_storage *ss)
{
	static const char *const which[] = {
		"of those that sent nothing ",
		"of those that have not proved the key ", "",
	};
	struct lc_conn *victim = NULL;
	unsigned int n = 0;
	int rank = 3;

	for (struct lc_conn *c = ctx->ctx_conns; c; c = c->conn_next)
		if (!c->conn_outgoing && !c->conn_node &&
		    lc_addr_same_ip(&c->conn_peer, ss))
			n++;
	if (n < PREHELLO_PER_ADDR)
		return;
	for (struct lc_conn *c = ctx->ctx_conns; c; c = c->conn_next) {
		int r;

		if (c->conn_outgoing || c->conn_node ||
		    !lc_addr_same_ip(&c->conn_peer, ss))
			continue;
		r = prehello_rank(c);
		if (r < rank || (r == rank &&
				 c->conn_serial < victim->conn_serial)) {
			victim = c;
			rank = r;
		}
	}
	lc_log(ctx, LOG_DEBUG, "%u connections from one address before their "
	       "HELLO: the oldest %sis closed", n + 1, which[rank]);
	conn_close(victim, false);
}

static void on_accept(struct lc_ctx *ctx, struct lc_sock *lsock)
{
	char addr[LC_ADDR_STRLEN];
	struct lc_conn *c;
	struct sockaddr_storage ss;
	struct lc_sock sk;
	int rv;

	for (int i = 0; i < ACCEPTS_PER_EVENT; i++) {
		rv = ctx->ctx_tr->tr_accept(ctx->ctx_tr_state, &ctx->ctx_cfg,
					    lsock, &sk, &ss);
		if (rv == -EAGAIN)
			return;
		if (rv < 0) {
			accept_pause(ctx, rv);
			return;
		}
		lc_addr_unmap(&ss);
		if (!address_is_known(ctx, &ss)) {
			refuse(ctx, &sk, &ss);
			continue;
		}
		prehello_bound(ctx, &ss);
		c = conn_new(ctx, &sk, false, &ss, NULL, CONN_HELLO_WAIT,
			     POLLIN);
		if (!c) {
			lc_log(ctx, LOG_ERR, "no memory for a connection");
			continue;
		}
		if (ctx->ctx_sec)
			lc_hs_start_acceptor(&c->conn_hs, ctx->ctx_keys,
					     ctx->ctx_cfg.cfg_nodeid,
					     ctx->ctx_suites);
		ctx->ctx_stats.st_accepts++;
		lc_log(ctx, LOG_DEBUG, "accepted connection from %s",
		       lc_addr_str(&ss, addr, sizeof(addr)));
	}
}

int lc_fd_event(struct lc_ctx *ctx, int fd, short revents)
{
	struct lc_conn *c;
	int rv;

	const struct lc_transport *tr = ctx->ctx_tr;

	for (int i = 0; i < ctx->ctx_nlisten; i++) {
		struct lc_sock *l = &ctx->ctx_listen[i];

		if (l->sk_fd != fd)
			continue;
		if (tr->tr_event_begin)
			tr->tr_event_begin(l);
		on_accept(ctx, l);
		if (tr->tr_event_end)
			tr->tr_event_end(l, false);
		return 0;
	}
	c = fdmap_get(ctx, fd);
	if (!c)
		return -ENOENT;
	if (tr->tr_notify_fd) {
		/* "Something happened": look at both directions. */
		tr->tr_event_begin(&c->conn_sock);
		revents = POLLIN | POLLOUT;
	}
	if (c->conn_state == CONN_CONNECTING) {
		if (revents & (POLLOUT | POLLERR | POLLHUP))
			on_connected(c);
	} else if (revents & (POLLIN | POLLERR | POLLHUP)) {
		conn_read(c);	/* flushes, may free c */
	} else if (revents & POLLOUT) {
		rv = conn_flush(c);
		if (rv < 0)
			conn_fail(c, LOG_INFO, "write error", rv);
	}
	/* c may be gone; if the fd still maps to a connection, re-arm it. */
	c = fdmap_get(ctx, fd);
	if (c && tr->tr_event_end)
		tr->tr_event_end(&c->conn_sock,
				 c->conn_state != CONN_CONNECTING &&
				 conn_has_output(c));
	return 0;
}

/* ---- public API ------------------------------------------------------ */

void lc_config_default(struct lc_config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->cfg_port = LC_DEFAULT_PORT;
	cfg->cfg_max_msg = LC_DEFAULT_MAX_MSG;
	cfg->cfg_queue_frames = LC_DEFAULT_QUEUE_FRAMES;
	cfg->cfg_queue_bytes = LC_DEFAULT_QUEUE_BYTES;
	cfg->cfg_reconnect_min_ms = LC_DEFAULT_RECONNECT_MIN_MS;
	cfg->cfg_reconnect_max_ms = LC_DEFAULT_RECONNECT_MAX_MS;
	cfg->cfg_handshake_ms = LC_DEFAULT_HANDSHAKE_MS;
	cfg->cfg_ack_delay_ms = LC_DEFAULT_ACK_DELAY_MS;
	cfg->cfg_transport = LC_TRANSPORT_TCP;
	cfg->cfg_sctp_impl = LC_SCTP_AUTO;
	cfg->cfg_sctp_udp_port = LC_DEFAULT_SCTP_UDP_PORT;
}

int lc_transport_parse(const char *text, enum lc_transport_kind *kind)
{
	if (!strcmp(text, "tcp"))
		*kind = LC_TRANSPORT_TCP;
	else if (!strcmp(text, "sctp"))
		*kind = LC_TRANSPORT_SCTP;
	else
		return -EINVAL;
	return 0;
}

/*
 * The transport the config asks for, or NULL with *err set (a positive
 * errno).  SCTP, AUTO: the kernel's if socket() can open one; usrsctp if it
 * fails with EPROTONOSUPPORT (no SCTP in this kernel), and then *missing
 * gets that error for lc_new() to log.  Any other failure of the probe
 * (out of fds, denied by policy) fails lc_new(): the two SCTPs do not talk
 * to each other (usrsctp runs over UDP), so quietly taking the other one
 * would cut this node off from peers that use the kernel's.
 */
static const struct lc_transport *pick_transport(const struct lc_config *cfg,
						 int *err, int *missing)
{
	int probe;

	if (cfg->cfg_transport == LC_TRANSPORT_TCP)
		return &lc_transport_tcp;
	switch (cfg->cfg_sctp_impl) {
	case LC_SCTP_AUTO:
		probe = lc_sctp_kernel_probe();
		if (!probe)
			return &lc_transport_sctp_kernel;
		if (lc_sctp_kernel_missing(probe)) {
			*missing = probe;
			return &lc_transport_usrsctp;
		}
		*err = -probe;
		return NULL;
	case LC_SCTP_KERNEL:
		probe = lc_sctp_kernel_probe();
		if (!probe)
			return &lc_transport_sctp_kernel;
		*err = -probe;
		return NULL;
	case LC_SCTP_USER:
		return &lc_transport_usrsctp;
	}
	*err = EINVAL;
	return NULL;
}

static bool config_is_valid(const struct lc_config *cfg)
{
	if (!cfg->cfg_nodeid)
		return false;
	if (cfg->cfg_naddrs < 0 || cfg->cfg_naddrs > LC_MAX_ADDRS)
		return false;
	for (int i = 0; i < cfg->cfg_naddrs; i++)
		if (!lc_addr_len(&cfg->cfg_addrs[i]))
			return false;
	if (!cfg->cfg_max_msg ||
	    cfg->cfg_max_msg > LC_FRAME_LEN_LIMIT - LC_FRAME_HDR_LEN)
		return false;
	/* Keeps wrap-safe sequence comparisons valid. */
	if (!cfg->cfg_queue_frames || cfg->cfg_queue_frames >= (1u << 30))
		return false;
	if (!cfg->cfg_queue_bytes)
		return false;
	if (!cfg->cfg_reconnect_min_ms ||
	    cfg->cfg_reconnect_min_ms > cfg->cfg_reconnect_max_ms)
		return false;
	if (cfg->cfg_transport != LC_TRANSPORT_TCP &&
	    cfg->cfg_transport != LC_TRANSPORT_SCTP)
		return false;
	/* Plaintext only when asked for; a key of all zeros was never set. */
	if (cfg->cfg_security == LC_SEC_KEY) {
		unsigned char zero[LC_KEY_LEN] = { 0 };

		if (!cfg->cfg_key ||
		    !sodium_memcmp(cfg->cfg_key, zero, LC_KEY_LEN))
			return false;
	} else if (cfg->cfg_security != LC_SEC_NONE) {
		return false;
	}
	return cfg->cfg_handshake_ms > 0;
}

struct lc_ctx *lc_new(const struct lc_config *cfg, const struct lc_ops *ops,
		      void *arg)
{
	const struct lc_transport *tr;
	struct lc_ctx *ctx;
	int err = ENOMEM, missing = 0, rv;

	if (!config_is_valid(cfg) || !ops || !ops->ops_deliver ||
	    !ops->ops_fd_add || !ops->ops_fd_mod || !ops->ops_fd_del) {
		errno = EINVAL;
		return NULL;
	}
	if (sodium_init() < 0) {
		errno = EIO;
		return NULL;
	}
	/* Before OpenSSL or libgcrypt allocate: the session keys' memory. */
	lc_secret_setup();
	tr = pick_transport(cfg, &err, &missing);
	if (!tr)
		goto fail;
	err = ENOMEM;
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		goto fail;
	ctx->ctx_rbuf = malloc(rbuf_cap(cfg));
	if (!ctx->ctx_rbuf)
		goto fail_ctx;
	/* The derived keys: kept out of core dumps (secret.c). */
	if (cfg->cfg_security == LC_SEC_KEY) {
		ctx->ctx_keys = lc_secret_alloc(sizeof(*ctx->ctx_keys));
		if (!ctx->ctx_keys)
			goto fail_rbuf;
	}
	rv = tr->tr_open(cfg, &ctx->ctx_tr_state);
	if (rv < 0) {
		err = -rv;
		goto fail_keys;
	}
	ctx->ctx_tr = tr;
	ctx->ctx_cfg = *cfg;
	ctx->ctx_ack_frames = (uint32_t)ack_bound(cfg->cfg_queue_frames,
						  ACK_MAX_FRAMES);
	ctx->ctx_ack_bytes = ack_bound(cfg->cfg_queue_bytes, ACK_MAX_BYTES);
	ctx->ctx_sec = cfg->cfg_security == LC_SEC_KEY;
	if (ctx->ctx_sec)
		lc_keys_derive(cfg->cfg_key, ctx->ctx_keys);
	ctx->ctx_suites = lc_suites_local();
	if (cfg->cfg_suites)
		ctx->ctx_suites &= cfg->cfg_suites;
	/* The context keeps only what it derived, not the caller's key. */
	ctx->ctx_cfg.cfg_key = NULL;
	ctx->ctx_ops = ops;
	ctx->ctx_arg = arg;
	ctx->ctx_port = -1;
	/* Once per context, that is once per daemon. */
	if (missing)
		lc_log(ctx, LOG_NOTICE,
		       "no SCTP in this kernel (socket: %s): using usrsctp, "
		       "SCTP over UDP port %d; every node must",
		       strerror(-missing), tr->tr_udp_port(ctx->ctx_tr_state));
	return ctx;

fail_keys:
	lc_secret_free(ctx->ctx_keys);
fail_rbuf:
	free(ctx->ctx_rbuf);
fail_ctx:
	free(ctx);
fail:
	errno = err;
	return NULL;
}

static void free_node(struct lc_ctx *ctx, struct lc_node *n)
{
	struct lc_conn *c, *next;

	for (c = ctx->ctx_conns; c; c = next) {
		next = c->conn_next;
		if (c->conn_node == n)
			conn_close(c, false);
	}
	free_frames(n);
	free(n);
}

/* Best effort: tell the peer what we have received before we go. */
static void write_last_ack(struct lc_conn *c)
{
	struct lc_node *n = c->conn_node;
	unsigned char buf[LC_FRAME_HDR_LEN + LC_REC_OVERHEAD];
	size_t off = c->conn_ctx->ctx_sec ? LC_REC_HDR_LEN : 0, len;

	if (c->conn_state != CONN_ESTABLISHED ||
	    c->conn_out_off != c->conn_out_len || !ack_owed(n))
		return;
	put_header(buf + off, c->conn_ctx, n, LC_KIND_ACK, LC_FRAME_HDR_LEN,
		   0);
	len = LC_FRAME_HDR_LEN;
	if (c->conn_ctx->ctx_sec)
		len = lc_rec_seal(&c->conn_hs.hs_tx, buf, LC_FRAME_HDR_LEN);
	if (len && c->conn_ctx->ctx_tr->tr_send(&c->conn_sock, buf, len) ==
	    (ssize_t)len)
		ack_written(n, n->node_recv_next - 1);
}

void lc_destroy(struct lc_ctx *ctx)
{
	if (!ctx)
		return;
	for (struct lc_conn *c = ctx->ctx_conns; c; c = c->conn_next)
		write_last_ack(c);
	while (ctx->ctx_conns)
		conn_close(ctx->ctx_conns, false);
	for (size_t i = 0; i < ctx->ctx_nnodes; i++)
		free_node(ctx, ctx->ctx_nodes[i]);
	for (int i = 0; i < ctx->ctx_nlisten; i++) {
		ctx->ctx_ops->ops_fd_del(ctx->ctx_arg,
					 ctx->ctx_listen[i].sk_fd);
		ctx->ctx_tr->tr_close(&ctx->ctx_listen[i], false);
	}
	ctx->ctx_tr->tr_close_ctx(ctx->ctx_tr_state);
	lc_secret_free(ctx->ctx_keys);
	free(ctx->ctx_nodes);
	free(ctx->ctx_fdmap);
	free(ctx->ctx_rbuf);
	free(ctx);
}

/* Listen on naddrs addresses with one socket (TCP: naddrs is 1). */
static int listen_on(struct lc_ctx *ctx, const struct sockaddr_storage *addrs,
		     int naddrs)
{
	struct sockaddr_storage ss[LC_MAX_ADDRS];
	char text[LC_ADDR_STRLEN];
	struct lc_sock sk;
	uint16_t port = ctx->ctx_port > 0 ? (uint16_t)ctx->ctx_port :
					    ctx->ctx_cfg.cfg_port;
	int rv;

	for (int i = 0; i < naddrs; i++) {
		ss[i] = addrs[i];
		lc_addr_set_port(&ss[i], port);
	}
	rv = ctx->ctx_tr->tr_listen(ctx->ctx_tr_state, &ctx->ctx_cfg, ss,
				    naddrs, &sk, &port);
	if (rv < 0)
		goto fail;
	rv = ctx->ctx_ops->ops_fd_add(ctx->ctx_arg, sk.sk_fd, POLLIN);
	if (rv < 0) {
		ctx->ctx_tr->tr_close(&sk, false);
		goto fail;
	}
	ctx->ctx_port = port;
	ctx->ctx_listen[ctx->ctx_nlisten++] = sk;
	for (int i = 0; i < naddrs; i++) {
		lc_addr_set_port(&ss[i], port);
		lc_log(ctx, LOG_INFO, "listening on %s (%s)",
		       lc_addr_str(&ss[i], text, sizeof(text)),
		       ctx->ctx_tr->tr_name);
	}
	return 0;

fail:
	lc_log(ctx, LOG_ERR, "cannot listen on %s%s (%s): %s",
	       lc_addr_str(&ss[0], text, sizeof(text)),
	       naddrs > 1 ? " and others" : "", ctx->ctx_tr->tr_name,
	       strerror(-rv));
	return rv;
}

int lc_listen(struct lc_ctx *ctx)
{
	struct sockaddr_storage any;
	int port = ctx->ctx_port;	/* kept across lc_restart() */
	int rv;

	if (ctx->ctx_nlisten)
		return -EALREADY;
	if (!ctx->ctx_cfg.cfg_naddrs) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&any;

		memset(&any, 0, sizeof(any));
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_any;
		return listen_on(ctx, &any, 1);
	}
	if (ctx->ctx_tr->tr_multihomed)
		return listen_on(ctx, ctx->ctx_cfg.cfg_addrs,
				 ctx->ctx_cfg.cfg_naddrs);
	for (int i = 0; i < ctx->ctx_cfg.cfg_naddrs; i++) {
		rv = listen_on(ctx, &ctx->ctx_cfg.cfg_addrs[i], 1);
		if (rv < 0)
			goto fail;
	}
	return 0;

fail:
	while (ctx->ctx_nlisten) {
		struct lc_sock *l = &ctx->ctx_listen[--ctx->ctx_nlisten];

		ctx->ctx_ops->ops_fd_del(ctx->ctx_arg, l->sk_fd);
		ctx->ctx_tr->tr_close(l, false);
	}
	ctx->ctx_port = port;
	return rv;
}

int lc_restart(struct lc_ctx *ctx)
{
	if (ctx->ctx_in_callback)
		return -EBUSY;
	lc_log(ctx, LOG_NOTICE,
	       "restarting the socket layer (%s): resetting every connection",
	       ctx->ctx_tr->tr_name);
	/* conn_close() keeps each node's queue and sequence state and
	 * schedules a reconnect for a node with something to send. */
	while (ctx->ctx_conns) {
		ctx->ctx_conns->conn_abort = true;
		conn_close(ctx->ctx_conns, true);
	}
	while (ctx->ctx_nlisten) {
		struct lc_sock *l = &ctx->ctx_listen[--ctx->ctx_nlisten];

		ctx->ctx_ops->ops_fd_del(ctx->ctx_arg, l->sk_fd);
		ctx->ctx_tr->tr_close(l, true);
	}
	ctx->ctx_accept_resume_at = 0;	/* the new listeners are watched */
	return lc_listen(ctx);
}

int lc_listen_port(const struct lc_ctx *ctx)
{
	return ctx->ctx_port > 0 ? ctx->ctx_port : -ENOTCONN;
}

/* addrs[0..naddrs) as lc_node_add() keeps them: IPv4-mapped unmapped, a
 * port of 0 made the configured one.  -EINVAL for a count out of range or
 * an empty address. */
static int node_addrs_norm(const struct lc_ctx *ctx,
			   struct sockaddr_storage *out,
			   const struct sockaddr_storage *addrs, int naddrs)
{
	if (naddrs < 1 || naddrs > LC_MAX_ADDRS)
		return -EINVAL;
	for (int a = 0; a < naddrs; a++) {
		if (!lc_addr_len(&addrs[a]))
			return -EINVAL;
		out[a] = addrs[a];
		lc_addr_unmap(&out[a]);
		if (!lc_addr_port(&out[a]))
			lc_addr_set_port(&out[a], ctx->ctx_cfg.cfg_port);
	}
	return 0;
}

int lc_node_add(struct lc_ctx *ctx, uint32_t nodeid,
		const struct sockaddr_storage *addrs, int naddrs)
{
	struct sockaddr_storage norm[LC_MAX_ADDRS];
	struct lc_node **nodes, *n;
	bool found;
	size_t i;

	if (!nodeid || nodeid == ctx->ctx_cfg.cfg_nodeid ||
	    node_addrs_norm(ctx, norm, addrs, naddrs))
		return -EINVAL;
	i = node_index(ctx, nodeid, &found);
	if (found)
		return -EEXIST;
	if (ctx->ctx_nnodes == ctx->ctx_nodes_cap) {
		size_t cap = ctx->ctx_nodes_cap ? ctx->ctx_nodes_cap * 2 : 16;

		nodes = realloc(ctx->ctx_nodes, cap * sizeof(*nodes));
		if (!nodes)
			return -ENOMEM;
		ctx->ctx_nodes = nodes;
		ctx->ctx_nodes_cap = cap;
	}
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->node_id = nodeid;
	n->node_naddrs = naddrs;
	memcpy(n->node_addrs, norm, sizeof(norm[0]) * (size_t)naddrs);
	n->node_epoch = new_epoch();
	n->node_send_next = 1;
	n->node_sent_max = 0;
	n->node_recv_next = 1;
	n->node_ack_sent = 0;
	memmove(&ctx->ctx_nodes[i + 1], &ctx->ctx_nodes[i],
		(ctx->ctx_nnodes - i) * sizeof(*ctx->ctx_nodes));
	ctx->ctx_nodes[i] = n;
	ctx->ctx_nnodes++;
	return 0;
}

/*
 * A node's addresses changed (corosync's nodelist reloaded: a node that
 * moved is removed from it and added again at its new address, as
 * corosync refuses to change a known node's address in place).  Its
 * queue and sequence state stay: the node is the same life or not
 * according to its epoch, as always.  Its connections (to or from the old
 * addresses) close, and one to the new ones is made as usual: at once if
 * frames wait, the unacknowledged ones resent.  Before this, the addresses
 * of lc_node_add() stayed for the context's life: the moved node's dlmd
 * was refused as "not a cluster node address" and our connects went to
 * its old address, until the membership removed it as unreachable
 * (tests/test-cluster-nodelist.sh).
 */
int lc_node_set_addrs(struct lc_ctx *ctx, uint32_t nodeid,
		      const struct sockaddr_storage *addrs, int naddrs)
{
	struct sockaddr_storage a[LC_MAX_ADDRS];
	struct lc_node *n = find_node(ctx, nodeid);
	struct lc_conn *c, *next;
	bool same;
	int rv;

	if (ctx->ctx_in_callback)
		return -EBUSY;
	if (!n)
		return -ENOENT;
	rv = node_addrs_norm(ctx, a, addrs, naddrs);
	if (rv)
		return rv;
	same = naddrs == n->node_naddrs;
	for (int i = 0; same && i < naddrs; i++)
		same = lc_addr_same_ip(&a[i], &n->node_addrs[i]) &&
		       lc_addr_port(&a[i]) == lc_addr_port(&n->node_addrs[i]);
	if (same)
		return 0;
	memcpy(n->node_addrs, a, sizeof(a[0]) * (size_t)naddrs);
	n->node_naddrs = naddrs;
	n->node_addr_next = 0;
	lc_log(ctx, LOG_NOTICE, "node %u: its addresses changed; its "
	       "connections close and it is reached at the new ones", nodeid);
	for (c = ctx->ctx_conns; c; c = next) {
		next = c->conn_next;
		if (c->conn_node == n)
			conn_close(c, true);
	}
	return 1;
}

int lc_node_remove(struct lc_ctx *ctx, uint32_t nodeid)
{
	bool found;
	size_t i;

	if (ctx->ctx_in_callback)
		return -EBUSY;
	i = node_index(ctx, nodeid, &found);
	if (!found)
		return -ENOENT;
	lc_log(ctx, LOG_INFO, "closing connection to node %u", nodeid);
	free_node(ctx, ctx->ctx_nodes[i]);
	memmove(&ctx->ctx_nodes[i], &ctx->ctx_nodes[i + 1],
		(ctx->ctx_nnodes - i - 1) * sizeof(*ctx->ctx_nodes));
	ctx->ctx_nnodes--;
	return 0;
}

int lc_node_renew(struct lc_ctx *ctx, uint32_t nodeid)
{
	struct lc_node *n = find_node(ctx, nodeid), keep;
	struct lc_conn *c, *next;
	uint32_t base;

	if (ctx->ctx_in_callback)
		return -EBUSY;
	if (!n)
		return -ENOENT;
	base = send_base(n);
	if (n->node_paused_epoch || n->node_qframes)
		lc_log(ctx, LOG_INFO, "node %u renewed: %zu frames queued for "
		       "its previous life dropped%s", nodeid, n->node_qframes,
		       n->node_paused_epoch ? ", its new epoch's pause ends" :
		       "");
	else
		lc_log(ctx, LOG_INFO, "closing connection to node %u", nodeid);
	ctx->ctx_stats.st_stale_dropped += n->node_qframes;
	for (c = ctx->ctx_conns; c; c = next) {
		next = c->conn_next;
		if (c->conn_node == n)
			conn_close(c, false);
	}
	free_frames(n);
	/* what lc_node_add() was given stays; the rest starts as there */
	keep = *n;
	memset(n, 0, sizeof(*n));
	n->node_id = keep.node_id;
	memcpy(n->node_addrs, keep.node_addrs, sizeof(n->node_addrs));
	n->node_naddrs = keep.node_naddrs;
	n->node_udp_port = keep.node_udp_port;
	if (keep.node_paused_epoch || !keep.node_peer_epoch) {
		/* A paused life may have read a HELLO of ours (we connected
		 * to it): it knows our epoch and expects our send base next,
		 * having been sent nothing else.  Keep both, so that it sees
		 * neither a new epoch (which it would pause, with no
		 * departure of ours ever to confirm) nor a gap (PEER
		 * RESTARTED).  The same when no life was taken since the
		 * last renew: lives paused before it may still be there
		 * knowing our epoch (the renew ended their pause, not
		 * them), and no life has anything else of ours, since
		 * nothing is written before a HELLO is taken. */
		n->node_epoch = keep.node_epoch;
		n->node_send_next = base;
		n->node_sent_max = base - 1;
	} else {
		n->node_epoch = new_epoch();
		n->node_send_next = 1;
	}
	n->node_recv_next = 1;
	return 0;
}

int lc_send(struct lc_ctx *ctx, uint32_t nodeid, uint16_t type, uint32_t lsid,
	    const void *payload, size_t len)
{
	struct lc_node *n;
	unsigned char *f;
	struct lc_frame_hdr h;

	if (nodeid == ctx->ctx_cfg.cfg_nodeid)
		return -EINVAL;
	n = find_node(ctx, nodeid);
	if (!n)
		return -ENOENT;
	if (len > ctx->ctx_cfg.cfg_max_msg)
		return -EMSGSIZE;
	if (n->node_qframes >= ctx->ctx_cfg.cfg_queue_frames ||
	    n->node_qbytes + len > ctx->ctx_cfg.cfg_queue_bytes)
		return -ENOBUFS;
	f = q_append(n, LC_FRAME_HDR_LEN + len);
	if (!f)
		return -ENOMEM;
	h = (struct lc_frame_hdr) {
		.fh_magic = LC_FRAME_MAGIC,
		.fh_version = LC_FRAME_VERSION,
		.fh_kind = LC_KIND_DATA,
		.fh_type = type,
		.fh_length = (uint32_t)(LC_FRAME_HDR_LEN + len),
		.fh_lsid = lsid,
		.fh_sender = ctx->ctx_cfg.cfg_nodeid,
		.fh_target = nodeid,
		.fh_seq = n->node_send_next++,
		.fh_ack = 0,	/* patched when written */
	};
	lc_frame_encode(f, &h);
	if (len)
		memcpy(f + LC_FRAME_HDR_LEN, payload, len);
	if (!n->node_qframes++)
		n->node_wait_since = refresh_now(ctx);
	n->node_qbytes += len;
	ctx->ctx_stats.st_msgs_sent++;

	/* On a connection, the frame goes at the caller's lc_flush(), or
	 * at lc_timer() (lc_next_timeout() is then due), or with what a
	 * POLLOUT the connection already waits for writes: no epoll_ctl. */
	if (!n->node_conn && !n->node_retry_pending)
		start_connect(ctx, n);
	return 0;
}

void lc_flush(struct lc_ctx *ctx)
{
	struct lc_conn *c, *next;
	int rv;

	if (ctx->ctx_in_callback)
		return;
	for (c = ctx->ctx_conns; c; c = next) {
		next = c->conn_next;
		if (c->conn_state != CONN_ESTABLISHED || !conn_has_output(c))
			continue;
		rv = conn_flush(c);
		if (rv < 0)
			conn_fail(c, LOG_INFO, "write error", rv);
	}
}

long lc_queue_len(const struct lc_ctx *ctx, uint32_t nodeid)
{
	const struct lc_node *n = find_node(ctx, nodeid);

	return n ? (long)n->node_qframes : -ENOENT;
}

uint64_t lc_node_wait_ms(const struct lc_ctx *ctx, uint32_t nodeid,
			 uint64_t now_ms)
{
	const struct lc_node *n = find_node(ctx, nodeid);

	if (!n || !n->node_qframes || !n->node_wait_since ||
	    now_ms <= n->node_wait_since)
		return 0;
	return now_ms - n->node_wait_since;
}

void lc_timer(struct lc_ctx *ctx, uint64_t now_ms)
{
	struct lc_conn *c, *next;

	ctx->ctx_now = now_ms;
	if (ctx->ctx_accept_resume_at && now_ms >= ctx->ctx_accept_resume_at)
		accept_resume(ctx);
	for (c = ctx->ctx_conns; c; c = next) {
		next = c->conn_next;
		if (c->conn_state != CONN_ESTABLISHED) {
			if (now_ms >= c->conn_deadline)
				conn_fail(c, LOG_WARNING,
					  "handshake timed out", 0);
			continue;
		}
		/* Frames no lc_flush() wrote, and acks now due; a write
		 * that would block waits for its POLLOUT. */
		if (!ctx->ctx_in_callback && conn_flush_due(c)) {
			int rv = conn_flush(c);

			if (rv < 0)
				conn_fail(c, LOG_INFO, "write error", rv);
		}
	}
	for (size_t i = 0; i < ctx->ctx_nnodes; i++) {
		struct lc_node *n = ctx->ctx_nodes[i];

		if (!n->node_retry_pending || now_ms < n->node_retry_at)
			continue;
		n->node_retry_pending = false;
		if (!n->node_conn && (n->node_qframes || n->node_paused_epoch))
			start_connect(ctx, n);
	}
}

uint64_t lc_next_timeout(const struct lc_ctx *ctx)
{
	uint64_t next = ctx->ctx_accept_resume_at ? ctx->ctx_accept_resume_at :
						    UINT64_MAX;

	for (const struct lc_conn *c = ctx->ctx_conns; c; c = c->conn_next) {
		uint64_t at = c->conn_deadline;

		if (c->conn_state == CONN_ESTABLISHED) {
			if (c->conn_out_off < c->conn_out_len)
				continue;	/* POLLOUT comes */
			if (conn_flush_due(c))
				return ctx->ctx_now;
			at = c->conn_node->node_ack_due;
			if (!at)
				continue;
		}
		if (at < next)
			next = at;
	}
	for (size_t i = 0; i < ctx->ctx_nnodes; i++) {
		const struct lc_node *n = ctx->ctx_nodes[i];

		if (n->node_retry_pending && n->node_retry_at < next)
			next = n->node_retry_at;
	}
	return next;
}

int lc_set_fault(struct lc_ctx *ctx, const struct lc_fault *flt)
{
	if (flt->flt_kind != LC_FAULT_NONE && flt->flt_kind != LC_FAULT_DUPLICATE &&
	    flt->flt_kind != LC_FAULT_SKIP)
		return -EINVAL;
	if (flt->flt_kind != LC_FAULT_NONE && !flt->flt_every)
		return -EINVAL;
	/* Skipping every frame would never get one through. */
	if (flt->flt_kind == LC_FAULT_SKIP && flt->flt_every < 2)
		return -EINVAL;
	ctx->ctx_fault = *flt;
	ctx->ctx_fault_count = 0;
	if (flt->flt_kind != LC_FAULT_NONE)
		lc_log(ctx, LOG_NOTICE, "fault injection: %s every %u frames of type %u",
		       flt->flt_kind == LC_FAULT_SKIP ? "skip" : "duplicate",
		       flt->flt_every, flt->flt_type);
	return 0;
}

void lc_get_stats(const struct lc_ctx *ctx, struct lc_stats *st)
{
	*st = ctx->ctx_stats;
}

int lc_node_fd(const struct lc_ctx *ctx, uint32_t nodeid)
{
	const struct lc_node *n = find_node(ctx, nodeid);

	if (!n)
		return -ENOENT;
	if (!n->node_conn || n->node_conn->conn_state != CONN_ESTABLISHED)
		return -ENOTCONN;
	return n->node_conn->conn_sock.sk_fd;
}

int lc_node_reset(struct lc_ctx *ctx, uint32_t nodeid)
{
	struct lc_node *n = find_node(ctx, nodeid);

	if (ctx->ctx_in_callback)
		return -EBUSY;
	if (!n)
		return -ENOENT;
	if (!n->node_conn || n->node_conn->conn_state != CONN_ESTABLISHED)
		return -ENOTCONN;
	n->node_conn->conn_abort = true;
	conn_fail(n->node_conn, LOG_NOTICE, "reset on request", 0);
	return 0;
}

bool lc_node_paused(const struct lc_ctx *ctx, uint32_t nodeid)
{
	const struct lc_node *n = find_node(ctx, nodeid);

	return n && n->node_paused_epoch;
}

uint64_t lc_node_paused_ms(const struct lc_ctx *ctx, uint32_t nodeid,
			   uint64_t now_ms)
{
	const struct lc_node *n = find_node(ctx, nodeid);

	if (!n || !n->node_paused_epoch)
		return 0;
	if (n->node_conn && n->node_conn->conn_state == CONN_ESTABLISHED)
		return 0;	/* the known life is connected */
	return now_ms > n->node_paused_since ? now_ms - n->node_paused_since :
					       0;
}

bool lc_node_held(const struct lc_ctx *ctx, uint32_t nodeid)
{
	const struct lc_node *n = find_node(ctx, nodeid);

	return n && n->node_held;
}

int lc_node_resume(struct lc_ctx *ctx, uint32_t nodeid)
{
	struct lc_node *n = find_node(ctx, nodeid);

	if (ctx->ctx_in_callback)
		return -EBUSY;
	if (!n)
		return -ENOENT;
	if (!n->node_held)
		return 0;
	n->node_held = false;
	ctx->ctx_stats.st_resumes++;
	/* The peer sends a frame once per connection: what we left unread
	 * comes again only on a new one (its HELLO carries our ack). */
	if (n->node_conn) {
		n->node_conn->conn_abort = true;
		conn_close(n->node_conn, false);
	}
	lc_log(ctx, LOG_DEBUG, "node %u: resumed; reconnecting for what it "
	       "sent while held", nodeid);
	start_connect(ctx, n);
	return 0;
}

const char *lc_security_name(const struct lc_ctx *ctx)
{
	return ctx->ctx_sec ? "cluster key (AEAD records)" :
			      "none (plaintext, admission by address only)";
}

const char *lc_transport_name(const struct lc_ctx *ctx)
{
	return ctx->ctx_tr->tr_name;
}

int lc_udp_port(const struct lc_ctx *ctx)
{
	if (!ctx->ctx_tr->tr_udp_port)
		return -EOPNOTSUPP;
	return ctx->ctx_tr->tr_udp_port(ctx->ctx_tr_state);
}

int lc_node_set_udp_port(struct lc_ctx *ctx, uint32_t nodeid, uint16_t port)
{
	struct lc_node *n = find_node(ctx, nodeid);

	if (!ctx->ctx_tr->tr_udp_port)
		return -EOPNOTSUPP;
	if (!n)
		return -ENOENT;
	n->node_udp_port = port;
	return 0;
}
