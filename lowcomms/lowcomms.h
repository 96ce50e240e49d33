/*
 * lowcomms/lowcomms.h: node-to-node transport for dlmd.
 *
 * A context holds a node table (node id -> addresses), one listening socket
 * per local address, and at most one connection per peer.  It never blocks
 * and has no threads and no event loop: the caller's loop watches the file
 * descriptors the context hands out through lc_ops, calls lc_fd_event() when
 * one is ready and lc_timer() when lc_next_timeout() says so.
 *
 * Messages are opaque (type, lockspace id, payload).  Delivery to a peer is
 * reliable and in order for as long as both nodes keep each other in their
 * node tables: a dropped connection is re-established and nothing is lost or
 * repeated.  lc_node_remove() declares a node gone and throws away what was
 * queued for it.  The protocol and its limits are described in lowcomms.c
 * and frame.c.
 *
 * Every function returns 0 (or a count) on success or a negative errno.
 * Callbacks must not call lc_node_remove() (it returns -EBUSY there) or
 * lc_destroy(); they may call lc_send() and the query functions.
 *
 * Driving it from a loop:
 *   ctx = lc_new(&cfg, &ops, arg);  lc_listen(ctx);  lc_node_add(...) each peer
 *   loop:
 *     wait on the fds from ops_fd_add/mod with the events asked for, until
 *       lc_next_timeout(ctx) at the latest;
 *     lc_fd_event(ctx, fd, revents) for each ready fd (deliveries happen here);
 *     lc_timer(ctx, now_ms);
 *     lc_flush(ctx)  (optional: writes what was queued this round now rather
 *                     than at the next lc_timer(), which lc_next_timeout()
 *                     makes due at once; saves a loop turn of latency)
 * lc_send() only queues; bytes move in lc_fd_event(), lc_flush() and
 * lc_timer().  Acks wait for data to carry them up to cfg_ack_delay_ms
 * (lc_next_timeout() includes that deadline).
 */
#ifndef DLMD_LOWCOMMS_H
#define DLMD_LOWCOMMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#define LC_DEFAULT_PORT			21064
#define LC_DEFAULT_MAX_MSG		(64 * 1024)
#define LC_DEFAULT_QUEUE_FRAMES		(256 * 1024)
#define LC_DEFAULT_QUEUE_BYTES		(64u * 1024 * 1024)
#define LC_DEFAULT_RECONNECT_MIN_MS	100
#define LC_DEFAULT_RECONNECT_MAX_MS	5000
#define LC_DEFAULT_HANDSHAKE_MS		10000
/* How long an ack may wait for a DATA frame to carry it (lowcomms.c,
 * DELAYED ACKS). */
#define LC_DEFAULT_ACK_DELAY_MS		5
#define LC_MAX_ADDRS			4
/* SCTP over UDP (RFC 6951) when the kernel has no SCTP: IANA's port. */
#define LC_DEFAULT_SCTP_UDP_PORT	9899

/* The carrier of lowcomms' frames; the protocol above is the same. */
enum lc_transport_kind {
	LC_TRANSPORT_TCP = 0,	/* default; one address per node at a time */
	LC_TRANSPORT_SCTP,	/* one association over all of a node's
				 * addresses, failing over between them */
};

/* Which SCTP: the kernel's if it has one, else libusrsctp (AUTO: when
 * socket(IPPROTO_SCTP) fails with EPROTONOSUPPORT, logged once at lc_new;
 * the two do not interoperate, so every node must end up with the same). */
enum lc_sctp_impl {
	LC_SCTP_AUTO = 0,
	LC_SCTP_KERNEL,
	LC_SCTP_USER,
};

/*
 * Who may talk to us (auth.c).  There is no default: a config that does
 * not say is refused by lc_new(), so plaintext is always a choice.
 */
enum lc_security {
	LC_SEC_UNSET = 0,
	LC_SEC_NONE,		/* plaintext, peers admitted by address only */
	LC_SEC_KEY,		/* handshake proving cfg_key, sealed records */
};

/* The cluster key lowcomms uses, derived from a key file's bytes. */
#define LC_KEY_LEN		32

struct lc_ctx;

struct lc_config {
	uint32_t cfg_nodeid;		/* our node id, not 0 */
	/* Local addresses: listen on each; the first of a family is also the
	 * source address of outgoing connections of that family.  None: listen
	 * on the IPv6 wildcard, dual stack.  A port here is ignored. */
	struct sockaddr_storage cfg_addrs[LC_MAX_ADDRS];
	int cfg_naddrs;
	uint16_t cfg_port;		/* listen port; 0 = any (tests) */
	size_t cfg_max_msg;		/* largest payload lc_send accepts */
	size_t cfg_queue_frames;	/* per peer, unacked + unsent */
	size_t cfg_queue_bytes;		/* per peer, payload bytes */
	unsigned int cfg_reconnect_min_ms;
	unsigned int cfg_reconnect_max_ms;
	unsigned int cfg_handshake_ms;	/* connect + HELLO must finish in */
	/* An ack no DATA frame has carried goes alone after this long (or
	 * sooner, when the peer holds many frames for us); 0 = at once. */
	unsigned int cfg_ack_delay_ms;
	int cfg_sndbuf;			/* SO_SNDBUF, 0 = kernel default */
	int cfg_rcvbuf;			/* SO_RCVBUF, 0 = kernel default */
	enum lc_transport_kind cfg_transport;
	enum lc_sctp_impl cfg_sctp_impl;
	/* libusrsctp only: the process's SCTP-over-UDP port, and every
	 * peer's unless lc_node_set_udp_port() says otherwise.  0 = any free
	 * port (tests; see lc_udp_port()). */
	uint16_t cfg_sctp_udp_port;
	enum lc_security cfg_security;
	/* LC_SEC_KEY: the cluster key, LC_KEY_LEN bytes (from lc_key_load()
	 * or lc_key_derive()) that the caller keeps in lc_secret_alloc()
	 * memory and may wipe once lc_new() returned: lc_new() derives the
	 * context's keys from it and keeps neither the bytes nor the pointer.
	 * A pointer, not the bytes: a struct lc_config is an ordinary
	 * variable (a stack frame, the context's copy of it), where a key
	 * would be in a core dump. */
	const unsigned char *cfg_key;
	/* LC_SEC_KEY: record ciphers we offer and accept, a set of auth.h's
	 * LC_SUITE_*; 0 = every one this CPU runs.  ChaCha20-Poly1305 is
	 * always in (tests use 1 to force it where an AES suite would win). */
	uint32_t cfg_suites;
};

/* Log levels are syslog's (LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG). */
struct lc_ops {
	/* A whole message from node `from`, in order, exactly once.  0: it
	 * was taken.  A negative errno (-EAGAIN): NOT taken (the application
	 * has no memory for it now): the node is held (lowcomms.c, HOLDING
	 * A NODE): the frame is not acknowledged, and neither it nor any
	 * later frame from the node is delivered until lc_node_resume(),
	 * after which they come again, in order, from that one. */
	int (*ops_deliver)(void *arg, uint32_t from, uint16_t type,
			   uint32_t lsid, const void *payload, size_t len);
	/* Watch fd for events (POLLIN / POLLOUT bits of poll.h). */
	int (*ops_fd_add)(void *arg, int fd, short events);
	int (*ops_fd_mod)(void *arg, int fd, short events);
	/* Stop watching fd; it is closed right after. */
	void (*ops_fd_del)(void *arg, int fd);
	void (*ops_log)(void *arg, int level, const char *msg);
	/* Optional (may be NULL): the peer skipped frames we never got (a
	 * HELLO resuming past what we expect, or a DATA frame beyond the
	 * next one) while its epoch is unchanged.  They cannot come back:
	 * the connection is closed as a protocol error, and every reconnect
	 * will find the same gap until the caller removes the node.  What
	 * to do about it (the exactly-once stream is broken) is the
	 * caller's decision. */
	void (*ops_frames_lost)(void *arg, uint32_t from, uint32_t expected,
				uint32_t got);
	/* Optional (may be NULL): a connection to node `nodeid` completed
	 * its handshake (either side opened it); for the caller's
	 * per-peer counts. */
	void (*ops_established)(void *arg, uint32_t nodeid);
};

/* Counters, for logs, tests and dlmctl. */
struct lc_stats {
	uint64_t st_msgs_sent;		/* accepted by lc_send */
	uint64_t st_msgs_delivered;
	uint64_t st_frames_written;	/* DATA frames put on a socket */
	uint64_t st_frames_resent;	/* ... of which repeats after reconnect */
	uint64_t st_acks_sent;		/* standalone ACK frames */
	uint64_t st_writes;		/* successful write system calls */
	uint64_t st_bytes_written;
	uint64_t st_reads;
	uint64_t st_dups_dropped;	/* DATA frames already delivered */
	uint64_t st_connects;		/* outgoing connection attempts */
	uint64_t st_accepts;		/* incoming connections admitted */
	uint64_t st_refused;		/* incoming from an unknown address */
	uint64_t st_rejected;		/* connections closed on a bad frame */
	uint64_t st_established;	/* handshakes completed */
	uint64_t st_conn_lost;		/* established connections lost */
	uint64_t st_peer_restarts;	/* a new epoch where one was known:
					 * paused (lowcomms.c, PEER RESTARTED) */
	uint64_t st_pauses_lifted;	/* ... and then the known one was heard
					 * again (it was no restart) */
	uint64_t st_stale_dropped;	/* frames dropped by lc_node_renew():
					 * queued for the peer's previous life */
	uint64_t st_faults;		/* frames hit by lc_set_fault() */
	uint64_t st_auth_failed;	/* handshakes that did not prove the key,
					 * records that failed to open */
	uint64_t st_records_sealed;	/* LC_SEC_KEY: AEAD records written */
	uint64_t st_not_taken;		/* deliveries refused (node held) */
	uint64_t st_held_skipped;	/* DATA frames read while their node
					 * was held, left to the peer's queue */
	uint64_t st_resumes;		/* lc_node_resume() of a held node */
};

/*
 * Fault injection, switched at run time (tests, and the daemon's debug
 * commands).  It acts on DATA frames as they are copied to a socket; the
 * queue is untouched, so the reliable layer has to repair the damage and
 * the application should still see every message exactly once.
 */
enum lc_fault_kind {
	LC_FAULT_NONE = 0,
	LC_FAULT_DUPLICATE,	/* write the frame twice */
	LC_FAULT_SKIP,		/* leave it out: the peer sees a gap, drops
				 * the connection, and it is resent */
};

struct lc_fault {
	enum lc_fault_kind flt_kind;
	uint16_t flt_type;	/* application type, 0 = any */
	uint32_t flt_every;	/* every Nth matching frame; >= 2 for SKIP */
};

/* Fill cfg with defaults; the caller then sets cfg_nodeid and addresses. */
void lc_config_default(struct lc_config *cfg);

/* "tcp" or "sctp" (the daemon's `transport` key) into *kind; -EINVAL. */
int lc_transport_parse(const char *text, enum lc_transport_kind *kind);

/* Parse a numeric IPv4 or IPv6 address and a port into *ss. */
int lc_addr_parse(const char *text, uint16_t port, struct sockaddr_storage *ss);

/*
 * The cluster key from a key file (corosync's authkey, or dlm.conf's
 * key_file): a regular file of 32..4096 bytes, root's or ours, that only
 * its owner may read or write (a symbolic link, a FIFO, a device: refused,
 * without waiting for a writer), at an absolute path with no symbolic
 * link on it, whose directories are root's or ours and writable by no one
 * else unless sticky (auth.c, THE KEY).  The bytes are read into secret memory
 * and hashed into key with dlmd's own context (auth.c); give it a key in
 * lc_secret_alloc() memory.  Returns 0, or a negative errno with why (a
 * line for the log, which names the file and never holds its bytes).
 */
int lc_key_load(const char *path, unsigned char key[LC_KEY_LEN], char *why,
		size_t whylen);
/* The same from key material in memory (tests): 0 or -EINVAL (length). */
int lc_key_derive(const void *material, size_t len,
		  unsigned char key[LC_KEY_LEN]);

/*
 * Memory for key material, kept out of core dumps (lowcomms/secret.c):
 * lc_secret_alloc() gives len zeroed bytes in pages marked MADV_DONTDUMP
 * and locked where RLIMIT_MEMLOCK allows (NULL, errno ENOMEM, only if
 * there is no memory); lc_secret_free() wipes and frees it (NULL: nothing).
 * lc_secret_setup(), once per process before OpenSSL or libgcrypt
 * allocate anything (lc_new() and the record ciphers call it), sends what
 * they allocate between lc_secret_begin() and lc_secret_end() to OpenSSL's
 * secure heap (the session keys in their cipher contexts).
 * lc_secret_status(): a line for the log saying which of that holds.
 * lc_secret_fallbacks(): how many such allocations found the secure heap
 * full and went to ordinary memory; lc_secret_on_full(fn, arg): fn is
 * called once, in the thread that ends the lc_secret_begin/end that first
 * found it full, with a line for the log (set it before connections).
 * lc_secret_burn_stack(): wipe the stack below the caller's frame, where
 * what made a key left copies of it.
 */
void *lc_secret_alloc(size_t len);
void lc_secret_free(void *p);
void lc_secret_setup(void);
void lc_secret_begin(void);
void lc_secret_end(void);
const char *lc_secret_status(void);
unsigned long lc_secret_fallbacks(void);
void lc_secret_on_full(void (*fn)(void *arg, const char *msg), void *arg);
void lc_secret_burn_stack(void);
/* The size of OpenSSL's secure heap, where the session keys go: a power of
 * two in LC_SECRET_HEAP_MIN..LC_SECRET_HEAP_MAX, set before the first
 * lc_new() or lc_secret_setup() (-EBUSY after, unless it is the size in
 * use; -EINVAL out of range).  A heap too small for a connection's keys
 * (a test's) sends them all to ordinary memory, counted and logged. */
#define LC_SECRET_HEAP_DEFAULT	(1024 * 1024)
#define LC_SECRET_HEAP_MIN	1024
#define LC_SECRET_HEAP_MAX	(1024 * 1024 * 1024)
int lc_secret_heap_size(size_t bytes);

/* A context; ops and arg are kept (ops must outlive it).  NULL on
 * failure with errno set (EPROTONOSUPPORT: the SCTP asked for is not
 * there; EADDRINUSE: the SCTP-over-UDP port is taken; with AUTO, another
 * error of the kernel SCTP probe, e.g. EMFILE or EACCES). */
struct lc_ctx *lc_new(const struct lc_config *cfg, const struct lc_ops *ops,
		      void *arg);
/* Closes everything, best effort to write a last ack to each peer. */
void lc_destroy(struct lc_ctx *ctx);

/* Open the listening sockets.  Returns 0 or a negative errno
 * (-EADDRINUSE when the port is taken). */
int lc_listen(struct lc_ctx *ctx);
/* The port actually bound (useful with cfg_port 0), or a negative errno. */
int lc_listen_port(const struct lc_ctx *ctx);

/* Add a peer with up to LC_MAX_ADDRS addresses; a port of 0 in an address
 * means the configured port.  -EEXIST if the node is there, -EINVAL for
 * our own id or a bad address. */
int lc_node_add(struct lc_ctx *ctx, uint32_t nodeid,
		const struct sockaddr_storage *addrs, int naddrs);
/* Give a known node new addresses (as lc_node_add() takes them): 0 if
 * they are the ones it has, 1 if they changed (its connections closed;
 * queue and sequence state kept, the queue resent over a new one),
 * -ENOENT for an unknown node, -EINVAL, -EBUSY inside a callback. */
int lc_node_set_addrs(struct lc_ctx *ctx, uint32_t nodeid,
		      const struct sockaddr_storage *addrs, int naddrs);
/* Declare a node gone: close its connection, drop its queues and sequence
 * state.  Adding it again starts a new epoch. */
int lc_node_remove(struct lc_ctx *ctx, uint32_t nodeid);
/* lc_node_remove() and lc_node_add() again with the same addresses, in
 * place: nothing is allocated, so it cannot fail for want of memory (a
 * node removed whose add then failed was refused for good).  This is
 * also how the caller confirms that the life of the peer it knew is
 * gone: a paused new epoch (lc_node_paused) is taken at its next HELLO
 * (and the node keeps its epoch and numbering then: lowcomms.c, PEER
 * RESTARTED). */
int lc_node_renew(struct lc_ctx *ctx, uint32_t nodeid);
/* Whether a HELLO brought nodeid a new epoch while its known one lives
 * on: that life is paused, nothing of ours goes to it and nothing of its
 * is delivered, until lc_node_renew() / lc_node_remove() (the caller's
 * membership says the known life left) or the known life is heard
 * again (lowcomms.c, PEER RESTARTED). */
bool lc_node_paused(const struct lc_ctx *ctx, uint32_t nodeid);
/* How long (ms, lc_timer()'s clock) nodeid has been paused while its
 * known life had no established connection; 0 when not paused or while
 * the known life is connected.  A pause that lasts is for the caller's
 * membership to resolve (dlmd: plugin/comms.c, dlmd_comms_wait_ms). */
uint64_t lc_node_paused_ms(const struct lc_ctx *ctx, uint32_t nodeid,
			   uint64_t now_ms);

/*
 * Queue a message for nodeid; never blocks.  The connection is made on
 * demand and the write happens at lc_flush() or lc_timer() (or, when the
 * socket was full, once it is writable again).  -ENOENT unknown node, -EINVAL to ourselves, -EMSGSIZE
 * over cfg_max_msg, -ENOBUFS when the peer's queue is at its limit (try
 * again when lc_queue_len() has gone down), -ENOMEM.
 */
int lc_send(struct lc_ctx *ctx, uint32_t nodeid, uint16_t type, uint32_t lsid,
	    const void *payload, size_t len);
/* Write what is queued now (and acks that are due). */
void lc_flush(struct lc_ctx *ctx);
/* Messages queued for nodeid and not yet acknowledged, or -ENOENT. */
long lc_queue_len(const struct lc_ctx *ctx, uint32_t nodeid);
/* How long (ms, at now_ms on lc_timer()'s clock) the oldest frame queued
 * for nodeid has waited without an ack that advances; 0 when nothing is
 * queued or the node is unknown.  Grows through reconnect attempts: a
 * path cut for good shows here (lowcomms.c, PEER UNREACHABLE). */
uint64_t lc_node_wait_ms(const struct lc_ctx *ctx, uint32_t nodeid,
			 uint64_t now_ms);

/* An fd handed out through ops_fd_add is ready (poll revents bits).
 * -ENOENT if the fd is not ours. */
int lc_fd_event(struct lc_ctx *ctx, int fd, short revents);
/* Run timers (reconnect backoff, handshake timeouts, delayed acks) and
 * write what no lc_flush() has.  now_ms is
 * CLOCK_MONOTONIC in milliseconds (lowcomms also reads that clock when it
 * sets a deadline); call at least when lc_next_timeout() has passed. */
void lc_timer(struct lc_ctx *ctx, uint64_t now_ms);
/* The next time (same clock) lc_timer() has work, or UINT64_MAX. */
uint64_t lc_next_timeout(const struct lc_ctx *ctx);

void lc_get_stats(const struct lc_ctx *ctx, struct lc_stats *st);
/* Set (or with LC_FAULT_NONE clear) the fault to inject; -EINVAL. */
int lc_set_fault(struct lc_ctx *ctx, const struct lc_fault *flt);
/* The fd of the established connection to nodeid (for tests and
 * diagnostics), or -ENOTCONN / -ENOENT.  With usrsctp this is the eventfd
 * the loop watches, not a socket: use lc_node_reset() to break it. */
int lc_node_fd(const struct lc_ctx *ctx, uint32_t nodeid);
/* Abort the connection to nodeid as if the network had reset it (the peer
 * sees a reset, both sides reconnect and resend).  Fault injection for
 * tests and debug commands; -ENOTCONN, -ENOENT, -EBUSY in a callback. */
int lc_node_reset(struct lc_ctx *ctx, uint32_t nodeid);
/* Whether ops_deliver refused a frame from nodeid and it is held. */
bool lc_node_held(const struct lc_ctx *ctx, uint32_t nodeid);
/* Deliver from a held node again: the frame it refused comes first, then
 * the rest in order (the connection is dropped and made again at once,
 * so that the peer sends what we have not acknowledged).  0 (also when
 * the node was not held), -ENOENT, -EBUSY in a callback. */
int lc_node_resume(struct lc_ctx *ctx, uint32_t nodeid);

/*
 * Kill and restart the socket layer, keeping everything else: every
 * connection is aborted (the peers see a reset, as if the host's network
 * stack had been restarted) and the listening sockets are closed and opened
 * again on the same port.  The node table, the sequence state in both
 * directions and the queues are kept, so the peers reconnect, each side's
 * HELLO carries its cumulative ack, and nothing is lost or delivered twice.
 * This is the way to recover from a broken socket layer while staying a
 * member; lc_destroy() and lc_new() start a new epoch instead (see KNOWN
 * LIMITS in lowcomms.c).  Returns 0, -EBUSY in a callback, or lc_listen()'s
 * error: then nothing listens until lc_listen() succeeds (call it again
 * later; -EADDRINUSE can last while aborted associations are torn down).
 */
int lc_restart(struct lc_ctx *ctx);

/* "authenticated (...)" or "none (plaintext)", for the daemon's log. */
const char *lc_security_name(const struct lc_ctx *ctx);

/* "tcp", "sctp (kernel)" or "sctp (usrsctp)". */
const char *lc_transport_name(const struct lc_ctx *ctx);
/* usrsctp: the SCTP-over-UDP port this process uses; else -EOPNOTSUPP. */
int lc_udp_port(const struct lc_ctx *ctx);
/* usrsctp: the SCTP-over-UDP port of nodeid, when it is not ours (several
 * processes on one host).  Takes effect at the next connect. */
int lc_node_set_udp_port(struct lc_ctx *ctx, uint32_t nodeid, uint16_t port);

#endif /* DLMD_LOWCOMMS_H */
