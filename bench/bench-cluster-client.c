/*
 * bench/bench-cluster-client.c - the client side of bench/bench-cluster.
 *
 *   bench-cluster-client pairs LS RES N      N lock(EX)+unlock pairs on RES,
 *                                            one at a time; prints the
 *                                            mean and median per pair (us)
 *   bench-cluster-client nl LS RES           hold NL on RES (so this node
 *                                            stays its master), until killed
 *   bench-cluster-client many LS PFX COUNT   EX on COUNT resources PFX-0..,
 *                                            WINDOW requests in flight;
 *                                            prints "held COUNT", holds
 *                                            until killed
 *   bench-cluster-client tcp-server PORT     echo one byte at a time
 *   bench-cluster-client tcp-client ADDR PORT N
 *                                            N one-byte round trips over TCP
 *                                            (TCP_NODELAY); mean and median
 */
#include <sys/types.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "libdlm/libdlm.h"

#define LKM_NLMODE	0
#define LKM_EXMODE	5
#define WINDOW		512	/* async requests in flight ("many") */
#define NAME_LEN	64
#define HOLD_SECS	86400

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void report(const char *what, uint64_t *v, size_t n)
{
	uint64_t sum = 0;

	for (size_t i = 0; i < n; i++)
		sum += v[i];
	qsort(v, n, sizeof(*v), cmp_u64);
	printf("%s: n %zu mean %.1f us median %.1f us p99 %.1f us\n", what, n,
	       (double)sum / (double)n / 1000.0, (double)v[n / 2] / 1000.0,
	       (double)v[n * 99 / 100] / 1000.0);
}

static dlm_lshandle_t get_ls(const char *name)
{
	dlm_lshandle_t ls = dlm_create_lockspace(name, 0666);

	if (!ls)
		ls = dlm_open_lockspace(name);
	if (!ls)
		perror(name);
	return ls;
}

static int do_pairs(const char *lsname, const char *res, size_t n)
{
	dlm_lshandle_t ls = get_ls(lsname);
	uint64_t *v = calloc(n, sizeof(*v));

	if (!ls || !v)
		return 1;
	for (size_t i = 0; i < n; i++) {
		struct dlm_lksb lksb;
		uint64_t t0 = now_ns();

		memset(&lksb, 0, sizeof(lksb));
		if (dlm_ls_lock_wait(ls, LKM_EXMODE, &lksb, 0, res,
				     (unsigned int)strlen(res), 0, NULL, NULL, NULL) ||
		    lksb.sb_status ||
		    dlm_ls_unlock_wait(ls, lksb.sb_lkid, 0, &lksb)) {
			perror("lock/unlock");
			return 1;
		}
		v[i] = now_ns() - t0;
	}
	report("lock+unlock pair", v, n);
	free(v);
	dlm_close_lockspace(ls);
	return 0;
}

static int do_hold_nl(const char *lsname, const char *res)
{
	dlm_lshandle_t ls = get_ls(lsname);
	struct dlm_lksb lksb;

	if (!ls)
		return 1;
	memset(&lksb, 0, sizeof(lksb));
	if (dlm_ls_lock_wait(ls, LKM_NLMODE, &lksb, 0, res,
			     (unsigned int)strlen(res), 0, NULL, NULL, NULL) ||
	    lksb.sb_status) {
		perror("lock NL");
		return 1;
	}
	printf("held\n");
	fflush(stdout);
	sleep(HOLD_SECS);
	return 0;
}

struct many {
	struct dlm_lksb	*m_lksb;
	size_t		m_done;
	size_t		m_failed;
};

static struct many many_state;

static void many_ast(void *arg)
{
	struct dlm_lksb *lksb = arg;

	if (lksb->sb_status)
		many_state.m_failed++;
	many_state.m_done++;
}

static int do_many(const char *lsname, const char *pfx, size_t count)
{
	dlm_lshandle_t ls = get_ls(lsname);
	uint64_t t0 = now_ns();
	size_t sent = 0;
	int fd;

	if (!ls)
		return 1;
	fd = dlm_ls_get_fd(ls);
	many_state.m_lksb = calloc(count, sizeof(struct dlm_lksb));
	if (!many_state.m_lksb)
		return 1;
	while (many_state.m_done < count) {
		while (sent < count && sent - many_state.m_done < WINDOW) {
			char name[NAME_LEN];

			snprintf(name, sizeof(name), "%s-%zu", pfx, sent);
			if (dlm_ls_lock(ls, LKM_EXMODE, &many_state.m_lksb[sent], 0,
					name, (unsigned int)strlen(name), 0, many_ast,
					&many_state.m_lksb[sent], NULL, NULL)) {
				perror("dlm_ls_lock");
				return 1;
			}
			sent++;
		}
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		if (poll(&pfd, 1, 1000) > 0)
			dlm_dispatch(fd);
	}
	printf("held %zu (failed %zu) in %.2f s\n", count, many_state.m_failed,
	       (double)(now_ns() - t0) / 1e9);
	fflush(stdout);
	sleep(HOLD_SECS);
	return 0;
}

static int do_tcp_server(int port)
{
	struct sockaddr_in sa;
	int one = 1, ls = socket(AF_INET, SOCK_STREAM, 0), c;
	char b;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) || listen(ls, 1)) {
		perror("tcp-server");
		return 1;
	}
	printf("listening\n");
	fflush(stdout);
	c = accept(ls, NULL, NULL);
	if (c < 0)
		return 1;
	setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	while (read(c, &b, 1) == 1)
		if (write(c, &b, 1) != 1)
			break;
	return 0;
}

static int do_tcp_client(const char *addr, int port, size_t n)
{
	struct sockaddr_in sa;
	int one = 1, s = socket(AF_INET, SOCK_STREAM, 0);
	uint64_t *v = calloc(n, sizeof(*v));
	char b = 'x';

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)port);
	if (s < 0 || !v || inet_pton(AF_INET, addr, &sa.sin_addr) != 1 ||
	    connect(s, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("tcp-client");
		return 1;
	}
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (size_t i = 0; i < n; i++) {
		uint64_t t0 = now_ns();

		if (write(s, &b, 1) != 1 || read(s, &b, 1) != 1)
			return 1;
		v[i] = now_ns() - t0;
	}
	report("tcp round trip", v, n);
	free(v);
	close(s);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "pairs"))
		return do_pairs(argv[2], argv[3], (size_t)atol(argv[4]));
	if (argc == 4 && !strcmp(argv[1], "nl"))
		return do_hold_nl(argv[2], argv[3]);
	if (argc == 5 && !strcmp(argv[1], "many"))
		return do_many(argv[2], argv[3], (size_t)atol(argv[4]));
	if (argc == 3 && !strcmp(argv[1], "tcp-server"))
		return do_tcp_server(atoi(argv[2]));
	if (argc == 5 && !strcmp(argv[1], "tcp-client"))
		return do_tcp_client(argv[2], atoi(argv[3]), (size_t)atol(argv[4]));
	fprintf(stderr, "usage: see bench/bench-cluster-client.c\n");
	return 2;
}
