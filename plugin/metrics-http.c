/*
 * plugin/metrics-http.c - the metrics endpoint: GET /metrics over HTTP.
 *
 * Off by default; dlm.conf metrics_listen turns it on, on a TCP address
 * ("127.0.0.1:9527", "[::1]:9527") or a unix socket path (mode 0666: the
 * numbers are no secret, and a TCP port on localhost is open to every
 * local user anyway).  If the endpoint cannot listen, dlmd logs why and
 * runs without it: locking matters more than its numbers.
 *
 * A deliberately tiny HTTP/1.0 server, one request per connection, in the
 * daemon's loop.  No library: what it must do fits on this page, and what
 * it must not do (block, allocate per byte, trust a length) is easier to
 * see in 300 lines than in a framework.
 *
 *   accept   non-blocking; at most HTTP_MAX_CONNS at once: one more
 *            closes the oldest (so that a local user holding that many
 *            idle connections, each renewed within HTTP_TIMEOUT_MS, does
 *            not keep the scraper out: it would have to connect faster
 *            than the scraper asks); when fds run out the listener leaves the loop for
 *            DLMD_ACCEPT_PAUSE_MS (dlmd_accept() of ctl.c, which the
 *            control socket uses too).
 *   read     into a fixed buffer of DLMD_HTTP_REQ_MAX bytes until the
 *            end of the head (a blank line).  dlmd_http_parse()
 *            (plugin/http-parse.c, no I/O, a fuzz target) judges the
 *            bytes so far on every read: a malformed request line is
 *            answered 400 at once, a head past the buffer 431.  A body, if
 *            any, is never read.
 *   answer   200 with the Prometheus text (metrics.c) for GET /metrics
 *            (a query string is ignored), 404 for another path, 405 for
 *            another method, 505 for an HTTP version other than 1.x.
 *            The whole response is built first, then written without
 *            blocking (POLLOUT for what the socket does not take).
 *   close    after the response the write side is shut down and the
 *            connection drained until the client closes (so an error
 *            response is not lost to a reset when the client is still
 *            sending), then closed.
 *   time     HTTP_TIMEOUT_MS for the whole exchange; a client that is
 *            slower is dropped.
 * Every request costs one collect (metrics.c): no cache, the numbers are
 * always current.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <netinet/in.h>

#include "plugin/dlmd.h"

#define HTTP_MAX_CONNS		16
#define HTTP_TIMEOUT_MS		5000
#define HTTP_BACKLOG		16
#define HTTP_SOCKET_MODE	0666
#define NS_PER_MS		1000000ULL

struct dlmd_http_conn {
	struct dlmd_http_conn	*hc_next;
	struct dlmd		*hc_d;
	int			hc_fd;
	char			hc_req[DLMD_HTTP_REQ_MAX];
	size_t			hc_reqlen;
	char			*hc_out;	/* the response, once built */
	size_t			hc_outlen;
	size_t			hc_outoff;
	bool			hc_draining;	/* sent: wait for the client's EOF */
	qb_loop_timer_handle	hc_timer;
};

/* ------------------------------------------------------------------ */
/* the response                                                        */
/* ------------------------------------------------------------------ */

/* The whole response for verdict v (malloc'd into *out), or -ENOMEM. */
static int build_response(struct dlmd *d, enum dlmd_http_verdict v, char **out,
			  size_t *outlen)
{
	struct dlmd_sbuf body = { 0 }, resp = { 0 };

	if (v == DLMD_HTTP_OK)
		dlmd_metrics_prometheus(d, &body);
	else
		dlmd_sb_printf(&body, "%d %s%s\n", (int)v, dlmd_http_reason(v),
			       v == DLMD_HTTP_NOT_FOUND ? ": the metrics are at "
			       "/metrics" : "");
	dlmd_sb_printf(&resp, "HTTP/1.0 %d %s\r\nContent-Type: %s\r\n"
		       "Content-Length: %zu\r\nConnection: close\r\n%s\r\n",
		       (int)v, dlmd_http_reason(v), v == DLMD_HTTP_OK ?
		       "text/plain; version=0.0.4; charset=utf-8" : "text/plain",
		       body.sb_len, v == DLMD_HTTP_BAD_METHOD ? "Allow: GET\r\n" : "");
	if (body.sb_len)
		dlmd_sb_printf(&resp, "%s", body.sb_s);
	free(body.sb_s);
	if (body.sb_oom || resp.sb_oom) {
		free(resp.sb_s);
		return -ENOMEM;
	}
	*out = resp.sb_s;
	*outlen = resp.sb_len;
	return 0;
}

/* ------------------------------------------------------------------ */
/* connections                                                         */
/* ------------------------------------------------------------------ */

static void http_close(struct dlmd_http_conn *hc)
{
	struct dlmd *d = hc->hc_d;

	for (struct dlmd_http_conn **pp = &d->d_http_conns; *pp;
	     pp = &(*pp)->hc_next) {
		if (*pp == hc) {
			*pp = hc->hc_next;
			break;
		}
	}
	d->d_nhttp_conns--;
	qb_loop_timer_del(d->d_loop, hc->hc_timer);
	qb_loop_poll_del(d->d_loop, hc->hc_fd);
	close(hc->hc_fd);
	free(hc->hc_out);
	free(hc);
}

static void http_timeout(void *data)
{
	struct dlmd_http_conn *hc = data;

	log_debug("metrics: a client took more than %d ms; dropped",
		  HTTP_TIMEOUT_MS);
	hc->hc_timer = 0;
	http_close(hc);
}

static int http_ready(int32_t fd, int32_t revents, void *data);

/* Write what the socket takes; then shut down our side and drain. */
static void http_write(struct dlmd_http_conn *hc)
{
	switch (dlmd_send_rest(hc->hc_fd, hc->hc_out, hc->hc_outlen,
			       &hc->hc_outoff)) {
	case 0:
		qb_loop_poll_mod(hc->hc_d->d_loop, QB_LOOP_LOW, hc->hc_fd,
				 POLLOUT, hc, http_ready);
		return;
	case -1:
		http_close(hc);
		return;
	}
	if (shutdown(hc->hc_fd, SHUT_WR) < 0) {
		http_close(hc);
		return;
	}
	hc->hc_draining = true;
	qb_loop_poll_mod(hc->hc_d->d_loop, QB_LOOP_LOW, hc->hc_fd, POLLIN, hc,
			 http_ready);
}

static int http_ready(int32_t fd, int32_t revents, void *data)
{
	struct dlmd_http_conn *hc = data;
	enum dlmd_http_verdict v;
	ssize_t n;

	if (hc->hc_out && !hc->hc_draining) {
		http_write(hc);
		return 0;
	}
	if (hc->hc_draining) {
		char sink[512];

		n = recv(fd, sink, sizeof(sink), MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
			      errno == EINTR))
			return 0;
		if (n <= 0)
			http_close(hc);
		return 0;
	}
	n = recv(fd, hc->hc_req + hc->hc_reqlen, sizeof(hc->hc_req) - hc->hc_reqlen,
		 MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
		return 0;
	if (n <= 0) {
		http_close(hc);
		return 0;
	}
	hc->hc_reqlen += (size_t)n;
	v = dlmd_http_parse(hc->hc_req, hc->hc_reqlen);
	if (v == DLMD_HTTP_MORE)
		return 0;
	if (v != DLMD_HTTP_OK)
		log_debug("metrics: request answered %d %s", (int)v, dlmd_http_reason(v));
	if (build_response(hc->hc_d, v, &hc->hc_out, &hc->hc_outlen)) {
		log_warn("metrics: out of memory for a response");
		http_close(hc);
		return 0;
	}
	http_write(hc);
	return 0;
}

static int http_accept(int32_t fd, int32_t revents, void *data)
{
	struct dlmd *d = data;
	struct dlmd_http_conn *hc;
	int cfd = dlmd_accept(&d->d_metrics_pause);

	if (cfd < 0)
		return 0;
	if (d->d_nhttp_conns >= HTTP_MAX_CONNS) {
		struct dlmd_http_conn *oldest = d->d_http_conns;

		while (oldest->hc_next)	/* the list is newest first */
			oldest = oldest->hc_next;
		log_debug("metrics: %d connections open; the oldest closed",
			  HTTP_MAX_CONNS);
		http_close(oldest);
	}
	hc = calloc(1, sizeof(*hc));
	if (!hc) {
		close(cfd);
		return 0;
	}
	hc->hc_d = d;
	hc->hc_fd = cfd;
	if (qb_loop_poll_add(d->d_loop, QB_LOOP_LOW, cfd, POLLIN, hc, http_ready)) {
		close(cfd);
		free(hc);
		return 0;
	}
	if (qb_loop_timer_add(d->d_loop, QB_LOOP_LOW, HTTP_TIMEOUT_MS * NS_PER_MS,
			      hc, http_timeout, &hc->hc_timer)) {
		qb_loop_poll_del(d->d_loop, cfd);
		close(cfd);
		free(hc);
		return 0;
	}
	hc->hc_next = d->d_http_conns;
	d->d_http_conns = hc;
	d->d_nhttp_conns++;
	return 0;
}

int dlmd_metrics_listen(struct dlmd *d)
{
	const char *spec = d->d_cfg.cf_metrics_listen;
	struct sockaddr_storage ss;
	socklen_t sslen;
	int fd = -1, one = 1, rv;

	if (!spec[0])
		return 0;
	rv = dlmd_metrics_addr_parse(spec, &ss, &sslen);
	if (rv)
		goto fail;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		rv = -errno;
		goto fail;
	}
	if (ss.ss_family != AF_UNIX &&
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0) {
		rv = -errno;
		goto fail;
	}
	if (ss.ss_family == AF_UNIX)
		rv = dlmd_bind_unix(fd, (struct sockaddr *)&ss, sslen,
				    HTTP_SOCKET_MODE);
	else
		rv = bind(fd, (struct sockaddr *)&ss, sslen) < 0 ? -errno : 0;
	if (!rv && listen(fd, HTTP_BACKLOG) < 0)
		rv = -errno;
	if (rv)
		goto fail;
	rv = qb_loop_poll_add(d->d_loop, QB_LOOP_LOW, fd, POLLIN, d, http_accept);
	if (rv)
		goto fail;
	d->d_metrics_fd = fd;
	d->d_metrics_pause = (struct dlmd_accept_pause){
		d->d_loop, &d->d_metrics_fd, http_accept, d, 0 };
	log_notice("metrics: serving GET /metrics on %s", spec);
	return 0;
fail:
	if (fd >= 0)
		close(fd);
	log_err("metrics: cannot listen on %s: %s; running without the metrics "
		"endpoint", spec, strerror(-rv));
	return rv;
}

void dlmd_metrics_fini(struct dlmd *d)
{
	while (d->d_http_conns)
		http_close(d->d_http_conns);
	dlmd_accept_unpause(&d->d_metrics_pause);
	if (d->d_metrics_fd >= 0) {
		qb_loop_poll_del(d->d_loop, d->d_metrics_fd);
		close(d->d_metrics_fd);
		if (d->d_cfg.cf_metrics_listen[0] == '/')
			unlink(d->d_cfg.cf_metrics_listen);
		d->d_metrics_fd = -1;
	}
}
