/*
 * lowcomms/lowcomms_internal.h: helpers shared inside lowcomms/ only.
 */
#ifndef DLMD_LOWCOMMS_INTERNAL_H
#define DLMD_LOWCOMMS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <sys/types.h>

#include "lowcomms/lowcomms.h"

/* Room for "[ffff:...:ffff]:65535". */
#define LC_ADDR_STRLEN 64

/*
 * Transports.  lowcomms.c owns the protocol (framing, sequence numbers,
 * handshake, admission); a transport only moves bytes.  It hands lowcomms.c
 * a socket as a struct lc_sock whose sk_fd is what the event loop watches:
 * the socket itself for kernel sockets, an eventfd for usrsctp, whose
 * sockets are not file descriptors (see usrsctp.c).
 *
 * Every call returns 0 (or a byte count) or a negative errno; -EAGAIN means
 * "not now, wait for the fd".  A byte stream in, the same byte stream out:
 * SCTP transports send each write as one message on stream 0, ordered, and
 * the receiver reads bytes without regard to message boundaries.
 */
struct lc_sock {
	int sk_fd;		/* watched by the event loop */
	void *sk_priv;		/* the transport's own state, or NULL */
};

struct lc_transport {
	const char *tr_name;
	/* One socket listens on, and one association uses, every address. */
	bool tr_multihomed;
	/* The loop watches sk_fd with these events when lowcomms wants
	 * `wanted` (usrsctp: POLLIN on the eventfd, whatever is wanted). */
	bool tr_notify_fd;
	/* Per context: take / drop what the transport needs (usrsctp: a
	 * reference on the process's stack).  *state is the transport's. */
	int (*tr_open)(const struct lc_config *cfg, void **state);
	void (*tr_close_ctx)(void *state);
	/* Listen on addrs (all with the wanted port, 0 = any); *port gets the
	 * bound one. */
	int (*tr_listen)(void *state, const struct lc_config *cfg,
			 const struct sockaddr_storage *addrs, int naddrs,
			 struct lc_sock *out, uint16_t *port);
	/* One pending connection, or -EAGAIN; peer gets its (primary)
	 * address. */
	int (*tr_accept)(void *state, const struct lc_config *cfg,
			 struct lc_sock *lsock, struct lc_sock *out,
			 struct sockaddr_storage *peer);
	/* Start a non-blocking connect from locals (may be 0 of them) to
	 * remotes; the first remote is the primary.  udp_port: the peer's
	 * SCTP-over-UDP port (usrsctp only). */
	int (*tr_connect)(void *state, const struct lc_config *cfg,
			  const struct sockaddr_storage *locals, int nlocals,
			  const struct sockaddr_storage *remotes, int nremotes,
			  uint16_t udp_port, struct lc_sock *out);
	/* After the fd reported the connect finished: 0, -EAGAIN (still in
	 * progress) or why it failed. */
	int (*tr_connect_result)(struct lc_sock *sk);
	ssize_t (*tr_send)(struct lc_sock *sk, const void *buf, size_t len);
	/* Bytes read, 0 at the end of the stream. */
	ssize_t (*tr_recv)(struct lc_sock *sk, void *buf, size_t len);
	/* Close (abort: drop unsent data and reset the peer at once; usrsctp
	 * always aborts, see us_close()). */
	void (*tr_close)(struct lc_sock *sk, bool abort);
	/* Around the handling of an fd event (may be NULL): begin consumes
	 * the notification, end re-arms it if work is left (readable data, or
	 * room to write when want_write). */
	void (*tr_event_begin)(struct lc_sock *sk);
	void (*tr_event_end)(struct lc_sock *sk, bool want_write);
	/* The stack's SCTP-over-UDP port (usrsctp), else 0. */
	int (*tr_udp_port)(void *state);
};

/*
 * SCTP timers, the same for the kernel and usrsctp.  The defaults of RFC 9260
 * (RTO up to 60 s, a path declared dead after 5 retransmissions) would leave
 * messages stuck on a cut link for minutes; with these a path that stops
 * answering is abandoned after about PATH_MAX_RXT retransmission timeouts of
 * at most RTO_MAX each, and retransmissions and new data go to another path
 * from the first timeout on (PATH_PF_THRESHOLD).  Heartbeats probe idle paths so that a cut is noticed,
 * and a healed path is used again, without traffic.
 */
#define LC_SCTP_RTO_INITIAL_MS	300
#define LC_SCTP_RTO_MIN_MS	100
#define LC_SCTP_RTO_MAX_MS	1000
#define LC_SCTP_HB_INTERVAL_MS	500
#define LC_SCTP_PATH_MAX_RXT	2
/* A path is "potentially failed" (RFC 7829) after more than this many
 * timeouts in a row, and new data then goes to another path until it
 * answers again: 0 means at the first timeout, so a cut costs one RTO
 * (at most RTO_MAX) rather than PATH_MAX_RXT + 1 backed-off ones.  The
 * kernel's SCTP does this by default (net.sctp.pf_retrans = 0); usrsctp
 * has it off unless told (usrsctp.c, FAILOVER). */
#define LC_SCTP_PATH_PF_THRESHOLD	0
/* The association dies after this many timeouts in a row on every path. */
#define LC_SCTP_ASSOC_MAX_RXT	10

extern const struct lc_transport lc_transport_tcp;
extern const struct lc_transport lc_transport_sctp_kernel;
extern const struct lc_transport lc_transport_usrsctp;
/* Whether this kernel can open SCTP sockets: 0, or socket()'s negative
 * errno (-EPROTONOSUPPORT: built without SCTP, or the module is absent). */
int lc_sctp_kernel_probe(void);
/* Whether a probe error means "this kernel has no SCTP" (use usrsctp)
 * rather than a failure to report (out of fds, denied by policy). */
bool lc_sctp_kernel_missing(int err);

/* Length of the sockaddr for its family, or 0 if the family is not IP. */
socklen_t lc_addr_len(const struct sockaddr_storage *ss);
uint16_t lc_addr_port(const struct sockaddr_storage *ss);
void lc_addr_set_port(struct sockaddr_storage *ss, uint16_t port);
/* Same host address (ports ignored); an IPv4-mapped IPv6 address equals
 * the IPv4 address it maps. */
bool lc_addr_same_ip(const struct sockaddr_storage *a,
		     const struct sockaddr_storage *b);
/* Turn an IPv4-mapped IPv6 address into plain IPv4, in place. */
void lc_addr_unmap(struct sockaddr_storage *ss);
/* The family of a socket that can hold every address in the list: IPv6
 * if any is IPv6 (IPv4 ones then travel as mapped addresses); dflt if the
 * list is empty. */
int lc_addr_family_for(const struct sockaddr_storage *addrs, int n, int dflt);
/* Pack n addresses back to back, each of its family's length, as SCTP's
 * bindx and connectx want them; port >= 0 replaces each address's port.
 * buf must hold LC_ADDR_PACK_MAX bytes. */
#define LC_ADDR_PACK_MAX	(LC_MAX_ADDRS * sizeof(struct sockaddr_in6))
int lc_addr_pack(const struct sockaddr_storage *addrs, int n, int port,
		 unsigned char *buf, size_t *len);
/* "1.2.3.4:5" or "[::1]:5" into buf (LC_ADDR_STRLEN bytes). */
const char *lc_addr_str(const struct sockaddr_storage *ss, char *buf,
			size_t len);

#endif /* DLMD_LOWCOMMS_INTERNAL_H */
