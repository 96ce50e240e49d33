/*
 * tests/lowcomms-sctp-peer.c: one end of test-lowcomms-sctp-netns.sh.
 *
 * A lowcomms node over SCTP with several addresses, in its own network
 * namespace.  As the sender it streams --count numbered messages to the
 * peer at --rate per second (so the stream lasts long enough for a link to
 * be cut in the middle), then waits until the peer has acknowledged them
 * all.  As the receiver it checks that the numbers arrive as 0, 1, 2, ...
 * (any loss, repeat or reordering is counted), writes its progress to
 * --progress every PROGRESS_MS, and once it has them all keeps serving for
 * LINGER_MS so that its last acknowledgements reach the sender.
 *
 * Both print one result line ("sender: ..." / "receiver: ...") with the
 * number of lost connections: with multi-homing a cut link must not cost
 * the association, so the script expects 0.  Exit 0 on success, 1 on a
 * failed check or timeout, 2 on bad usage.  Every wait is bounded by
 * --timeout.
 *
 * The receiver also reports its longest stall: the longest time, between
 * the first message and the last, in which the stream did not advance.
 * After a cut link that is the failover time; with --max-stall S it gives
 * up (FAILED, "stalled") as soon as the stream has stood still for S
 * seconds, rather than waiting out --timeout.
 *
 * Usage: lowcomms-sctp-peer send|recv --id N --addr A [--addr A2]
 *          --peer-id M --peer-addr B [--peer-addr B2] [--port P]
 *          [--count C] [--rate R] [--timeout S] [--progress FILE]
 *          [--max-stall S]
 */
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "lowcomms/lowcomms.h"

#define MAX_FDS		64
#define MSG_LEN		64
#define MSG_TYPE	7
#define PROGRESS_MS	100
#define LINGER_MS	1500
#define POLL_MS		10
#define DEFAULT_COUNT	200000L
#define DEFAULT_RATE	40000L
#define DEFAULT_TIMEOUT	60
#define DEFAULT_PORT	21064

struct peer {
	struct lc_ctx *p_lc;
	struct pollfd p_fds[MAX_FDS];
	int p_nfds;
	uint64_t p_rx_next;	/* next counter expected */
	uint64_t p_rx_total;
	uint64_t p_rx_bad;	/* out of order, repeated or garbled */
	uint64_t p_rx_moved_at;	/* when p_rx_next last advanced, 0: never */
	uint64_t p_rx_max_stall; /* longest time it stood still, ms */
	bool p_verbose;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int fd_add(void *arg, int fd, short events)
{
	struct peer *p = arg;

	if (p->p_nfds == MAX_FDS)
		return -ENOSPC;
	p->p_fds[p->p_nfds].fd = fd;
	p->p_fds[p->p_nfds].events = events;
	p->p_nfds++;
	return 0;
}

static int fd_mod(void *arg, int fd, short events)
{
	struct peer *p = arg;

	for (int i = 0; i < p->p_nfds; i++) {
		if (p->p_fds[i].fd == fd) {
			p->p_fds[i].events = events;
			return 0;
		}
	}
	return -ENOENT;
}

static void fd_del(void *arg, int fd)
{
	struct peer *p = arg;

	for (int i = 0; i < p->p_nfds; i++) {
		if (p->p_fds[i].fd == fd) {
			p->p_fds[i] = p->p_fds[--p->p_nfds];
			return;
		}
	}
}

static void on_log(void *arg, int level, const char *msg)
{
	struct peer *p = arg;

	if (p->p_verbose || level <= LOG_NOTICE)
		fprintf(stderr, "lowcomms: %s\n", msg);
}

static int deliver(void *arg, uint32_t from, uint16_t type, uint32_t lsid,
		   const void *payload, size_t len)
{
	struct peer *p = arg;
	uint64_t counter;

	(void)from;
	(void)lsid;
	p->p_rx_total++;
	if (len != MSG_LEN || type != MSG_TYPE) {
		p->p_rx_bad++;
		return 0;
	}
	memcpy(&counter, payload, sizeof(counter));
	if (counter != p->p_rx_next) {
		if (p->p_rx_bad < 5)
			fprintf(stderr, "receiver: got %llu, expected %llu\n",
				(unsigned long long)counter,
				(unsigned long long)p->p_rx_next);
		p->p_rx_bad++;
	}
	if (counter >= p->p_rx_next)
		p->p_rx_next = counter + 1;
	return 0;
}

static const struct lc_ops peer_ops = {
	.ops_deliver = deliver,
	.ops_fd_add = fd_add,
	.ops_fd_mod = fd_mod,
	.ops_fd_del = fd_del,
	.ops_log = on_log,
};

static void run_once(struct peer *p)
{
	struct pollfd fds[MAX_FDS];
	uint64_t now = now_ms(), next = lc_next_timeout(p->p_lc);
	int n = p->p_nfds, timeout = POLL_MS;

	if (next <= now)
		timeout = 0;
	else if (next - now < (uint64_t)timeout)
		timeout = (int)(next - now);
	memcpy(fds, p->p_fds, sizeof(fds[0]) * (size_t)n);
	if (poll(fds, (nfds_t)n, timeout) > 0)
		for (int i = 0; i < n; i++)
			if (fds[i].revents)
				lc_fd_event(p->p_lc, fds[i].fd, fds[i].revents);
	lc_timer(p->p_lc, now_ms());
	lc_flush(p->p_lc);
}

/*
 * The receiver's stall clock, called once per loop turn: the time since the
 * stream last advanced counts from its first message until its last.
 * Returns how long it has stood still now (ms).
 */
static uint64_t watch_stall(struct peer *p, uint64_t now, uint64_t *seen)
{
	uint64_t still;

	if (p->p_rx_next == *seen) {
		still = p->p_rx_moved_at ? now - p->p_rx_moved_at : 0;
		if (still > p->p_rx_max_stall)
			p->p_rx_max_stall = still;
		return still;
	}
	*seen = p->p_rx_next;
	p->p_rx_moved_at = now;
	return 0;
}

static void write_progress(const char *path, uint64_t count)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "%llu\n", (unsigned long long)count);
	if (fclose(f) == 0)
		rename(tmp, path);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: lowcomms-sctp-peer send|recv --id N --addr A [--addr A2] "
		"--peer-id M --peer-addr B [--peer-addr B2] [--port P] "
		"[--count C] [--rate R] [--timeout S] [--progress FILE] "
		"[--max-stall S]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "id", required_argument, NULL, 'i' },
		{ "addr", required_argument, NULL, 'a' },
		{ "peer-id", required_argument, NULL, 'I' },
		{ "peer-addr", required_argument, NULL, 'A' },
		{ "port", required_argument, NULL, 'p' },
		{ "count", required_argument, NULL, 'c' },
		{ "rate", required_argument, NULL, 'r' },
		{ "timeout", required_argument, NULL, 't' },
		{ "progress", required_argument, NULL, 'P' },
		{ "max-stall", required_argument, NULL, 'S' },
		{ "verbose", no_argument, NULL, 'v' },
		{ NULL, 0, NULL, 0 },
	};
	struct sockaddr_storage peer_addrs[LC_MAX_ADDRS];
	struct peer p = { 0 };
	struct lc_config cfg;
	struct lc_stats st;
	const char *progress = NULL;
	long count = DEFAULT_COUNT, rate = DEFAULT_RATE;
	int timeout_s = DEFAULT_TIMEOUT, port = DEFAULT_PORT, npeer = 0, opt;
	int max_stall_s = 0;	/* 0: wait out the timeout */
	uint32_t peer_id = 0;
	uint64_t start, deadline, sent = 0, last_progress = 0, done_at = 0;
	uint64_t lost_during = 0, rx_seen = 0;
	bool sender, ok = false, stalled = false;
	unsigned char msg[MSG_LEN];

	if (argc < 2)
		usage();
	if (!strcmp(argv[1], "send"))
		sender = true;
	else if (!strcmp(argv[1], "recv"))
		sender = false;
	else
		usage();
	lc_config_default(&cfg);
	cfg.cfg_transport = LC_TRANSPORT_SCTP;
	optind = 2;
	while ((opt = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (opt) {
		case 'i':
			cfg.cfg_nodeid = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'a':
			if (cfg.cfg_naddrs == LC_MAX_ADDRS ||
			    lc_addr_parse(optarg, 0,
					  &cfg.cfg_addrs[cfg.cfg_naddrs]) < 0)
				usage();
			cfg.cfg_naddrs++;
			break;
		case 'I':
			peer_id = (uint32_t)strtoul(optarg, NULL, 0);
			break;
		case 'A':
			if (npeer == LC_MAX_ADDRS ||
			    lc_addr_parse(optarg, 0, &peer_addrs[npeer]) < 0)
				usage();
			npeer++;
			break;
		case 'p':
			port = atoi(optarg);
			break;
		case 'c':
			count = atol(optarg);
			break;
		case 'r':
			rate = atol(optarg);
			break;
		case 't':
			timeout_s = atoi(optarg);
			break;
		case 'P':
			progress = optarg;
			break;
		case 'S':
			max_stall_s = atoi(optarg);
			break;
		case 'v':
			p.p_verbose = true;
			break;
		default:
			usage();
		}
	}
	if (!cfg.cfg_nodeid || !peer_id || !npeer || count <= 0 || rate <= 0 ||
	    port <= 0 || port > UINT16_MAX || max_stall_s < 0)
		usage();
	/* Peer addresses carry port 0: lc_node_add() gives them ours. */
	cfg.cfg_port = (uint16_t)port;
	/* Both ends derive the same test key (crypto on, as in production). */
	{
		static const char material[] =
			"lowcomms-sctp-peer: the test's cluster key material";
		static unsigned char key[LC_KEY_LEN];

		cfg.cfg_security = LC_SEC_KEY;
		if (lc_key_derive(material, sizeof(material), key) < 0)
			return 1;
		cfg.cfg_key = key;
	}

	p.p_lc = lc_new(&cfg, &peer_ops, &p);
	if (!p.p_lc) {
		fprintf(stderr, "lc_new: %s\n", strerror(errno));
		return 1;
	}
	if (lc_listen(p.p_lc) < 0 ||
	    lc_node_add(p.p_lc, peer_id, peer_addrs, npeer) < 0) {
		fprintf(stderr, "cannot listen or add the peer\n");
		lc_destroy(p.p_lc);
		return 1;
	}
	fprintf(stderr, "%s: node %u over %s, %d local and %d peer addresses\n",
		sender ? "sender" : "receiver", cfg.cfg_nodeid,
		lc_transport_name(p.p_lc), cfg.cfg_naddrs, npeer);
	start = now_ms();
	deadline = start + (uint64_t)timeout_s * 1000;
	while (now_ms() < deadline) {
		uint64_t now = now_ms();

		if (sender) {
			uint64_t due = (now - start) * (uint64_t)rate / 1000;

			if (due > (uint64_t)count)
				due = (uint64_t)count;
			while (sent < due) {
				memset(msg, 0, sizeof(msg));
				memcpy(msg, &sent, sizeof(sent));
				if (lc_send(p.p_lc, peer_id, MSG_TYPE, 1, msg,
					    sizeof(msg)) < 0)
					break;
				sent++;
			}
			if (sent == (uint64_t)count &&
			    lc_queue_len(p.p_lc, peer_id) == 0) {
				ok = true;
				break;
			}
		} else {
			if (p.p_rx_next < (uint64_t)count &&
			    watch_stall(&p, now, &rx_seen) >
			    (uint64_t)max_stall_s * 1000 && max_stall_s) {
				stalled = true;
				break;
			}
			if (progress && now - last_progress >= PROGRESS_MS) {
				write_progress(progress, p.p_rx_next);
				last_progress = now;
			}
			if (p.p_rx_next >= (uint64_t)count && !done_at) {
				done_at = now;
				/* Connections lost while the stream ran; the
				 * sender closing when done is not one. */
				lc_get_stats(p.p_lc, &st);
				lost_during = st.st_conn_lost;
			}
			if (done_at && now - done_at >= LINGER_MS) {
				ok = true;
				break;
			}
		}
		run_once(&p);
	}
	lc_get_stats(p.p_lc, &st);
	if (sender) {
		printf("sender: sent %llu unacked %ld conn_lost %llu resent %llu %s\n",
		       (unsigned long long)sent, lc_queue_len(p.p_lc, peer_id),
		       (unsigned long long)st.st_conn_lost,
		       (unsigned long long)st.st_frames_resent,
		       ok ? "ok" : "TIMEOUT");
	} else {
		if (progress)
			write_progress(progress, p.p_rx_next);
		ok = ok && p.p_rx_bad == 0 && p.p_rx_total == (uint64_t)count;
		if (p.p_rx_next < (uint64_t)count)
			watch_stall(&p, now_ms(), &rx_seen);
		printf("receiver: received %llu of %ld bad %llu conn_lost %llu dups_dropped %llu max_stall_ms %llu %s%s\n",
		       (unsigned long long)p.p_rx_total, count,
		       (unsigned long long)p.p_rx_bad,
		       (unsigned long long)lost_during,
		       (unsigned long long)st.st_dups_dropped,
		       (unsigned long long)p.p_rx_max_stall,
		       ok ? "ok" : "FAILED", stalled ? " stalled" : "");
	}
	fflush(stdout);
	lc_destroy(p.p_lc);
	return ok ? 0 : 1;
}
