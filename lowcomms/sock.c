/*
 * lowcomms/sock.c: the kernel-socket transports, TCP and kernel SCTP.
 *
 * Both are non-blocking stream sockets that the event loop polls directly:
 * sk_fd is the socket, POLLOUT means writable (or a connect finished),
 * SO_ERROR says how a connect ended.  They differ only in how a socket is
 * opened:
 *  - TCP: one listening socket per local address; an outgoing connection
 *    goes to one peer address from our address of the same family (the next
 *    peer address is tried when a connect fails).
 *  - SCTP (one-to-one style, SOCK_STREAM + IPPROTO_SCTP): one listening
 *    socket bound to every local address (SCTP_SOCKOPT_BINDX_ADD), and one
 *    association to every peer address (SCTP_SOCKOPT_CONNECTX), so the kernel
 *    fails over between paths by itself (timers in lowcomms_internal.h).
 *    The bytes of each send() are one SCTP message on stream 0; the reader
 *    treats what it receives as a byte stream, as with TCP.
 * The kernel SCTP calls are made through setsockopt, the interface libsctp
 * wraps, so only the header is needed, not the library: <netinet/sctp.h>
 * (libsctp-dev) where it is installed, else the kernel's <linux/sctp.h>
 * (linux-libc-dev), which is what <netinet/sctp.h> includes anyway.  The
 * kernel SCTP transport is compiled everywhere and used only when
 * socket(..., IPPROTO_SCTP) works (lc_sctp_kernel_probe()); where it fails
 * with EPROTONOSUPPORT lowcomms.c picks usrsctp and says so once.
 */
#include "lowcomms/lowcomms_internal.h"

#include <errno.h>
#include <netinet/in.h>
#if __has_include(<netinet/sctp.h>)
#include <netinet/sctp.h>
#else
#include <linux/sctp.h>
#endif
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

/* listen(2) backlog; small backlogs hang joins of many nodes. */
#define LISTEN_BACKLOG		128

static int fd_buffers(const struct lc_config *cfg, int fd)
{
	if (cfg->cfg_sndbuf &&
	    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &cfg->cfg_sndbuf,
		       sizeof(cfg->cfg_sndbuf)) < 0)
		return -errno;
	if (cfg->cfg_rcvbuf &&
	    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &cfg->cfg_rcvbuf,
		       sizeof(cfg->cfg_rcvbuf)) < 0)
		return -errno;
	return 0;
}

static int tcp_sockopts(const struct lc_config *cfg, int fd)
{
	int one = 1;

	/* We batch ourselves; Nagle would only add latency. */
	if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) < 0)
		return -errno;
	return fd_buffers(cfg, fd);
}

static int open_listener(int family, int proto, bool dual_stack, int *out)
{
	int one = 1, zero = 0;
	int fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
			proto);

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		goto fail;
	if (family == AF_INET6 && dual_stack &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof(zero)) < 0)
		goto fail;
	*out = fd;
	return 0;

fail:
	close(fd);
	return -errno;
}

static int listen_finish(int fd, struct lc_sock *out, uint16_t *port)
{
	struct sockaddr_storage bound;
	socklen_t len = sizeof(bound);

	if (listen(fd, LISTEN_BACKLOG) < 0 ||
	    getsockname(fd, (struct sockaddr *)&bound, &len) < 0)
		return -errno;
	*port = lc_addr_port(&bound);
	out->sk_fd = fd;
	out->sk_priv = NULL;
	return 0;
}

/* ---- TCP ------------------------------------------------------------- */

static int tcp_open(const struct lc_config *cfg, void **state)
{
	(void)cfg;
	*state = NULL;
	return 0;
}

static void tcp_close_ctx(void *state)
{
	(void)state;
}

/* TCP listens on one address per call (tr_multihomed is false). */
static int tcp_listen(void *state, const struct lc_config *cfg,
		      const struct sockaddr_storage *addrs, int naddrs,
		      struct lc_sock *out, uint16_t *port)
{
	int fd, rv;

	(void)state;
	(void)naddrs;
	rv = open_listener(addrs[0].ss_family, 0, !cfg->cfg_naddrs, &fd);
	if (rv < 0)
		return rv;
	if (bind(fd, (const struct sockaddr *)&addrs[0],
		 lc_addr_len(&addrs[0])) < 0) {
		rv = -errno;
		goto fail;
	}
	rv = listen_finish(fd, out, port);
	if (rv < 0)
		goto fail;
	return 0;

fail:
	close(fd);
	return rv;
}

static int fd_accept(struct lc_sock *lsock, struct lc_sock *out,
		     struct sockaddr_storage *peer)
{
	socklen_t len;
	int fd;

	for (;;) {
		len = sizeof(*peer);
		memset(peer, 0, sizeof(*peer));
		fd = accept4(lsock->sk_fd, (struct sockaddr *)peer, &len,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd >= 0)
			break;
		if (errno == EINTR || errno == ECONNABORTED)
			continue;
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	}
	out->sk_fd = fd;
	out->sk_priv = NULL;
	return 0;
}

static int tcp_accept(void *state, const struct lc_config *cfg,
		      struct lc_sock *lsock, struct lc_sock *out,
		      struct sockaddr_storage *peer)
{
	int rv;

	(void)state;
	rv = fd_accept(lsock, out, peer);
	if (rv < 0)
		return rv;
	rv = tcp_sockopts(cfg, out->sk_fd);
	if (rv < 0)
		close(out->sk_fd);
	return rv;
}

static int bind_source(int fd, const struct sockaddr_storage *src)
{
	struct sockaddr_storage ss = *src;

	lc_addr_set_port(&ss, 0);
	if (bind(fd, (struct sockaddr *)&ss, lc_addr_len(&ss)) < 0)
		return -errno;
	return 0;
}

/* TCP connects to remotes[0], from the first local address of its family. */
static int tcp_connect(void *state, const struct lc_config *cfg,
		       const struct sockaddr_storage *locals, int nlocals,
		       const struct sockaddr_storage *remotes, int nremotes,
		       uint16_t udp_port, struct lc_sock *out)
{
	const struct sockaddr_storage *dst = &remotes[0];
	int fd, rv;

	(void)state;
	(void)nremotes;
	(void)udp_port;
	fd = socket(dst->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    0);
	if (fd < 0)
		return -errno;
	rv = tcp_sockopts(cfg, fd);
	if (rv < 0)
		goto fail;
	for (int i = 0; i < nlocals; i++) {
		if (locals[i].ss_family != dst->ss_family)
			continue;
		rv = bind_source(fd, &locals[i]);
		if (rv < 0)
			goto fail;
		break;
	}
	if (connect(fd, (const struct sockaddr *)dst, lc_addr_len(dst)) < 0 &&
	    errno != EINPROGRESS) {
		rv = -errno;
		goto fail;
	}
	out->sk_fd = fd;
	out->sk_priv = NULL;
	return 0;

fail:
	close(fd);
	return rv;
}

static int fd_connect_result(struct lc_sock *sk)
{
	socklen_t len = sizeof(int);
	int err = 0;

	if (getsockopt(sk->sk_fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
		return -errno;
	return err == EINPROGRESS ? -EAGAIN : -err;
}

static ssize_t fd_send(struct lc_sock *sk, const void *buf, size_t len)
{
	ssize_t rv;

	do {
		rv = send(sk->sk_fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	} while (rv < 0 && errno == EINTR);
	if (rv < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return rv;
}

static ssize_t fd_recv(struct lc_sock *sk, void *buf, size_t len)
{
	ssize_t rv;

	do {
		rv = recv(sk->sk_fd, buf, len, MSG_DONTWAIT);
	} while (rv < 0 && errno == EINTR);
	if (rv < 0)
		return errno == EWOULDBLOCK ? -EAGAIN : -errno;
	return rv;
}

static void fd_close(struct lc_sock *sk, bool abort)
{
	struct linger lg = { .l_onoff = 1, .l_linger = 0 };

	/* A zero linger makes close() reset the connection (TCP RST, SCTP
	 * ABORT) rather than finish it gracefully.  Best effort. */
	if (abort)
		(void)setsockopt(sk->sk_fd, SOL_SOCKET, SO_LINGER, &lg,
				 sizeof(lg));
	close(sk->sk_fd);
	sk->sk_fd = -1;
}

const struct lc_transport lc_transport_tcp = {
	.tr_name = "tcp",
	.tr_multihomed = false,
	.tr_notify_fd = false,
	.tr_open = tcp_open,
	.tr_close_ctx = tcp_close_ctx,
	.tr_listen = tcp_listen,
	.tr_accept = tcp_accept,
	.tr_connect = tcp_connect,
	.tr_connect_result = fd_connect_result,
	.tr_send = fd_send,
	.tr_recv = fd_recv,
	.tr_close = fd_close,
};

/* ---- kernel SCTP ------------------------------------------------------- */

int lc_sctp_kernel_probe(void)
{
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, IPPROTO_SCTP);

	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

bool lc_sctp_kernel_missing(int err)
{
	return err == -EPROTONOSUPPORT || err == -ESOCKTNOSUPPORT;
}

/* Timers and behaviour of every association of this socket (inherited by
 * accepted sockets). */
static int sctp_sockopts(const struct lc_config *cfg, int fd)
{
	struct sctp_rtoinfo rto = {
		.srto_initial = LC_SCTP_RTO_INITIAL_MS,
		.srto_max = LC_SCTP_RTO_MAX_MS,
		.srto_min = LC_SCTP_RTO_MIN_MS,
	};
	struct sctp_paddrparams pp = {
		.spp_hbinterval = LC_SCTP_HB_INTERVAL_MS,
		.spp_pathmaxrxt = LC_SCTP_PATH_MAX_RXT,
		.spp_flags = SPP_HB_ENABLE,
	};
	struct sctp_assocparams ap = {
		.sasoc_asocmaxrxt = LC_SCTP_ASSOC_MAX_RXT,
	};
	int one = 1;

	if (setsockopt(fd, IPPROTO_SCTP, SCTP_NODELAY, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, IPPROTO_SCTP, SCTP_RTOINFO, &rto, sizeof(rto)) < 0 ||
	    setsockopt(fd, IPPROTO_SCTP, SCTP_PEER_ADDR_PARAMS, &pp,
		       sizeof(pp)) < 0 ||
	    setsockopt(fd, IPPROTO_SCTP, SCTP_ASSOCINFO, &ap, sizeof(ap)) < 0)
		return -errno;
	return fd_buffers(cfg, fd);
}

/* Bind fd to every address in addrs at port (0: any, the same for all). */
static int sctp_bind_all(int fd, const struct sockaddr_storage *addrs, int n,
			 uint16_t port)
{
	unsigned char buf[LC_ADDR_PACK_MAX];
	struct sockaddr_storage first = addrs[0];
	size_t len;
	int rv;

	lc_addr_set_port(&first, port);
	if (bind(fd, (struct sockaddr *)&first, lc_addr_len(&first)) < 0)
		return -errno;
	if (n == 1)
		return 0;
	if (!port) {
		struct sockaddr_storage bound;
		socklen_t blen = sizeof(bound);

		if (getsockname(fd, (struct sockaddr *)&bound, &blen) < 0)
			return -errno;
		port = lc_addr_port(&bound);
	}
	rv = lc_addr_pack(addrs + 1, n - 1, port, buf, &len);
	if (rv < 0)
		return rv;
	if (setsockopt(fd, IPPROTO_SCTP, SCTP_SOCKOPT_BINDX_ADD, buf,
		       (socklen_t)len) < 0)
		return -errno;
	return 0;
}

static int sctp_listen(void *state, const struct lc_config *cfg,
		       const struct sockaddr_storage *addrs, int naddrs,
		       struct lc_sock *out, uint16_t *port)
{
	int fd, rv;

	(void)state;
	rv = open_listener(lc_addr_family_for(addrs, naddrs, AF_INET6), IPPROTO_SCTP,
			   true, &fd);
	if (rv < 0)
		return rv;
	rv = sctp_sockopts(cfg, fd);
	if (rv < 0)
		goto fail;
	rv = sctp_bind_all(fd, addrs, naddrs, lc_addr_port(&addrs[0]));
	if (rv < 0)
		goto fail;
	rv = listen_finish(fd, out, port);
	if (rv < 0)
		goto fail;
	return 0;

fail:
	close(fd);
	return rv;
}

static int sctp_accept(void *state, const struct lc_config *cfg,
		       struct lc_sock *lsock, struct lc_sock *out,
		       struct sockaddr_storage *peer)
{
	(void)state;
	(void)cfg;
	/* Options were set on the listener and are inherited. */
	return fd_accept(lsock, out, peer);
}

static int sctp_connect(void *state, const struct lc_config *cfg,
			const struct sockaddr_storage *locals, int nlocals,
			const struct sockaddr_storage *remotes, int nremotes,
			uint16_t udp_port, struct lc_sock *out)
{
	unsigned char buf[LC_ADDR_PACK_MAX];
	int family = lc_addr_family_for(remotes, nremotes, AF_INET);
	size_t len;
	int fd, rv;

	(void)state;
	(void)udp_port;
	if (lc_addr_family_for(locals, nlocals, family) != family)
		family = AF_INET6;
	fd = socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    IPPROTO_SCTP);
	if (fd < 0)
		return -errno;
	rv = sctp_sockopts(cfg, fd);
	if (rv < 0)
		goto fail;
	if (nlocals) {
		rv = sctp_bind_all(fd, locals, nlocals, 0);
		if (rv < 0)
			goto fail;
	}
	rv = lc_addr_pack(remotes, nremotes, -1, buf, &len);
	if (rv < 0)
		goto fail;
	if (setsockopt(fd, IPPROTO_SCTP, SCTP_SOCKOPT_CONNECTX, buf,
		       (socklen_t)len) < 0 && errno != EINPROGRESS) {
		rv = -errno;
		goto fail;
	}
	out->sk_fd = fd;
	out->sk_priv = NULL;
	return 0;

fail:
	close(fd);
	return rv;
}

const struct lc_transport lc_transport_sctp_kernel = {
	.tr_name = "sctp (kernel)",
	.tr_multihomed = true,
	.tr_notify_fd = false,
	.tr_open = tcp_open,
	.tr_close_ctx = tcp_close_ctx,
	.tr_listen = sctp_listen,
	.tr_accept = sctp_accept,
	.tr_connect = sctp_connect,
	.tr_connect_result = fd_connect_result,
	.tr_send = fd_send,
	.tr_recv = fd_recv,
	.tr_close = fd_close,
};
