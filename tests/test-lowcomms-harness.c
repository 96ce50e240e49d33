/*
 * tests/test-lowcomms-harness.c: see test-lowcomms-harness.h.
 */
#include "tests/test-lowcomms-harness.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

uint64_t h_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static unsigned char filler(uint64_t counter, size_t i)
{
	return (unsigned char)(counter * 31 + i * 7);
}

static void on_deliver(void *arg, uint32_t from, uint16_t type, uint32_t lsid,
		       const void *payload, size_t len)
{
	struct h_ep *ep = arg;
	const unsigned char *p = payload;
	uint64_t counter = 0;
	bool ok = len >= H_MSG_HDR && from >= 1 && from <= H_MAX_EP;

	if (ok) {
		for (int i = 0; i < H_MSG_HDR; i++)
			counter |= (uint64_t)p[i] << (8 * i);
		ok = counter == ep->ep_rx_next[from] &&
		     type == (uint16_t)(counter % 7 + 1) &&
		     lsid == (uint32_t)(counter ^ from);
		for (size_t i = H_MSG_HDR; ok && i < len; i++)
			ok = p[i] == filler(counter, i);
	}
	if (!ok) {
		if (!ep->ep_rx_errors)
			ep->ep_rx_first_bad = counter;
		ep->ep_rx_errors++;
		if (ep->ep_rx_errors < 5)
			fprintf(stderr,
				"node %u: from %u got counter %llu, expected %llu (len %zu)\n",
				ep->ep_id, from, (unsigned long long)counter,
				(unsigned long long)ep->ep_rx_next[from], len);
	}
	if (from >= 1 && from <= H_MAX_EP && counter >= ep->ep_rx_next[from])
		ep->ep_rx_next[from] = counter + 1;
	ep->ep_rx_total++;
}

static int on_fd_add(void *arg, int fd, short events)
{
	struct h_ep *ep = arg;
	struct h_world *w = ep->ep_world;

	if (fd < 0 || fd >= H_MAX_FDS || w->w_fds[fd].hf_ep >= 0)
		return -EINVAL;
	w->w_fds[fd].hf_ep = (int)(ep - w->w_eps);
	w->w_fds[fd].hf_events = events;
	return 0;
}

static int on_fd_mod(void *arg, int fd, short events)
{
	struct h_ep *ep = arg;
	struct h_world *w = ep->ep_world;

	if (fd < 0 || fd >= H_MAX_FDS || w->w_fds[fd].hf_ep != ep - w->w_eps)
		return -EINVAL;
	w->w_fds[fd].hf_events = events;
	return 0;
}

static void on_fd_del(void *arg, int fd)
{
	struct h_ep *ep = arg;
	struct h_world *w = ep->ep_world;

	if (fd >= 0 && fd < H_MAX_FDS)
		w->w_fds[fd].hf_ep = -1;
}

static void on_log(void *arg, int level, const char *msg)
{
	struct h_ep *ep = arg;

	if (strstr(msg, "refusing"))
		ep->ep_refused_logs++;
	if (level <= LOG_WARNING)
		ep->ep_warnings++;
	if (ep->ep_world->w_verbose || level <= LOG_ERR)
		fprintf(stderr, "[node %u] %d %s\n", ep->ep_id, level, msg);
}

static const struct lc_ops h_ops = {
	.ops_deliver = on_deliver,
	.ops_fd_add = on_fd_add,
	.ops_fd_mod = on_fd_mod,
	.ops_fd_del = on_fd_del,
	.ops_log = on_log,
};

void h_world_init(struct h_world *w)
{
	memset(w, 0, sizeof(*w));
	for (int i = 0; i < H_MAX_FDS; i++)
		w->w_fds[i].hf_ep = -1;
	w->w_verbose = getenv("LC_TEST_VERBOSE") != NULL;
}

void h_world_fini(struct h_world *w)
{
	for (int i = 0; i < H_MAX_EP; i++)
		h_ep_stop(w, i);
}

void h_config(struct lc_config *cfg, uint32_t nodeid, const char *addr)
{
	lc_config_default(cfg);
	cfg->cfg_nodeid = nodeid;
	cfg->cfg_port = 0;
	cfg->cfg_reconnect_min_ms = 5;
	cfg->cfg_reconnect_max_ms = 200;
	cfg->cfg_handshake_ms = 2000;
	if (addr && lc_addr_parse(addr, 0, &cfg->cfg_addrs[0]) == 0)
		cfg->cfg_naddrs = 1;
}

int h_ep_start(struct h_world *w, int idx, const char *addr, int port,
	       const struct lc_config *cfg)
{
	struct h_ep *ep = &w->w_eps[idx];
	struct lc_config def;
	int rv;

	if (!cfg) {
		h_config(&def, (uint32_t)idx + 1, addr);
		cfg = &def;
	}
	ep->ep_world = w;
	ep->ep_id = (uint32_t)idx + 1;
	ep->ep_cfg = *cfg;
	if (port > 0)
		ep->ep_cfg.cfg_port = (uint16_t)port;
	snprintf(ep->ep_addr, sizeof(ep->ep_addr), "%s", addr);
	ep->ep_lc = lc_new(&ep->ep_cfg, &h_ops, ep);
	if (!ep->ep_lc)
		return -errno;
	rv = lc_listen(ep->ep_lc);
	if (rv < 0) {
		lc_destroy(ep->ep_lc);
		ep->ep_lc = NULL;
		return rv;
	}
	ep->ep_port = lc_listen_port(ep->ep_lc);
	lc_timer(ep->ep_lc, h_now_ms());
	if (idx >= w->w_neps)
		w->w_neps = idx + 1;
	return 0;
}

void h_ep_stop(struct h_world *w, int idx)
{
	struct h_ep *ep = &w->w_eps[idx];

	if (ep->ep_lc) {
		lc_destroy(ep->ep_lc);
		ep->ep_lc = NULL;
	}
}

int h_ep_add_peers(struct h_world *w, int idx)
{
	struct h_ep *ep = &w->w_eps[idx];

	for (int j = 0; j < w->w_neps; j++) {
		struct h_ep *peer = &w->w_eps[j];
		struct sockaddr_storage ss;
		int rv;

		if (j == idx || !peer->ep_port)
			continue;
		rv = lc_addr_parse(peer->ep_addr, (uint16_t)peer->ep_port, &ss);
		if (rv < 0)
			return rv;
		rv = lc_node_add(ep->ep_lc, peer->ep_id, &ss, 1);
		if (rv < 0 && rv != -EEXIST)
			return rv;
	}
	return 0;
}

int h_poll(struct h_world *w, int timeout_ms)
{
	struct pollfd pfds[H_MAX_FDS];
	int owner[H_MAX_FDS];
	int n = 0, ready, seen = 0;
	uint64_t now;

	for (int fd = 0; fd < H_MAX_FDS; fd++) {
		if (w->w_fds[fd].hf_ep < 0)
			continue;
		pfds[n].fd = fd;
		pfds[n].events = w->w_fds[fd].hf_events;
		pfds[n].revents = 0;
		owner[n] = w->w_fds[fd].hf_ep;
		n++;
	}
	/* Do not sleep past the next lowcomms timer. */
	now = h_now_ms();
	for (int i = 0; i < w->w_neps; i++) {
		uint64_t next;

		if (!w->w_eps[i].ep_lc)
			continue;
		next = lc_next_timeout(w->w_eps[i].ep_lc);
		if (next <= now)
			timeout_ms = 0;
		else if (next - now < (uint64_t)timeout_ms)
			timeout_ms = (int)(next - now);
	}
	ready = poll(pfds, (nfds_t)n, timeout_ms);
	for (int i = 0; ready > 0 && i < n; i++) {
		int fd = pfds[i].fd;
		struct h_ep *ep;

		if (!pfds[i].revents)
			continue;
		/* An earlier event may have closed or moved this fd. */
		if (w->w_fds[fd].hf_ep != owner[i])
			continue;
		ep = &w->w_eps[owner[i]];
		if (ep->ep_lc)
			lc_fd_event(ep->ep_lc, fd, pfds[i].revents);
		seen++;
	}
	now = h_now_ms();
	for (int i = 0; i < w->w_neps; i++)
		if (w->w_eps[i].ep_lc)
			lc_timer(w->w_eps[i].ep_lc, now);
	return seen;
}

bool h_run_until(struct h_world *w, bool (*done)(struct h_world *, void *),
		 void *arg, int max_ms)
{
	uint64_t end = h_now_ms() + (uint64_t)max_ms;

	while (!done(w, arg)) {
		if (h_now_ms() >= end)
			return done(w, arg);
		h_poll(w, 10);
	}
	return true;
}

long h_send(struct h_world *w, int from, int to, long count)
{
	struct h_ep *src = &w->w_eps[from];
	struct h_ep *dst = &w->w_eps[to];
	unsigned char buf[H_MSG_HDR + 4096];
	size_t len = H_MSG_HDR + src->ep_msg_extra;
	long sent;

	if (len > sizeof(buf))
		return -EINVAL;
	for (sent = 0; sent < count; sent++) {
		uint64_t c = src->ep_tx_next[dst->ep_id];
		int rv;

		for (int i = 0; i < H_MSG_HDR; i++)
			buf[i] = (unsigned char)(c >> (8 * i));
		for (size_t i = H_MSG_HDR; i < len; i++)
			buf[i] = filler(c, i);
		rv = lc_send(src->ep_lc, dst->ep_id, (uint16_t)(c % 7 + 1),
			     (uint32_t)(c ^ src->ep_id), buf, len);
		if (rv == -ENOBUFS)
			break;
		if (rv < 0)
			return rv;
		src->ep_tx_next[dst->ep_id]++;
	}
	return sent;
}

bool h_pair_done(const struct h_world *w, int from, int to)
{
	const struct h_ep *src = &w->w_eps[from];
	const struct h_ep *dst = &w->w_eps[to];

	return dst->ep_rx_next[src->ep_id] == src->ep_tx_next[dst->ep_id];
}

bool h_all_done(struct h_world *w, void *unused)
{
	(void)unused;
	for (int i = 0; i < w->w_neps; i++)
		for (int j = 0; j < w->w_neps; j++)
			if (i != j && !h_pair_done(w, i, j))
				return false;
	return true;
}
