/*
 * tests/secenv-client.c - which socket libdlm connects to when its
 * environment is someone else's (tests/test-libdlm-secure.sh).
 *
 * Usage: secenv-client LISTEN_PATH
 *
 * Listens (unix SEQPACKET, never accepting) at LISTEN_PATH, then has a
 * child call dlm_open_lockspace(), which connects to $DLMD_SOCKET or the
 * default socket, and watches the listener: a connection pending there
 * means libdlm took its socket from the environment.  Prints one line,
 * "secure N connected" or "secure N not-connected", N being
 * getauxval(AT_SECURE) (1 when run setuid: then the environment is the
 * invoker's, not the program's) and exits 0; 1 on a setup failure.
 *
 * libdlm is compiled in (not the libtool library), so the setuid copy the
 * test makes is a plain executable that needs no LD_LIBRARY_PATH.  Every
 * exit is _exit(): a sanitizer's leak check at exit cannot ptrace a
 * setuid process.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "libdlm/libdlm.h"

#define POLLS		200	/* of 100 ms: the child's answer at most */

static void die(const char *what)
{
	fprintf(stderr, "secenv-client: %s: %s\n", what, strerror(errno));
	_exit(1);
}

int main(int argc, char **argv)
{
	struct sockaddr_un sa;
	struct pollfd pfd;
	int lfd, status, connected = 0, exited = 0;
	pid_t child;

	if (argc != 2 || strlen(argv[1]) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "usage: secenv-client LISTEN_PATH\n");
		_exit(1);
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	strcpy(sa.sun_path, argv[1]);
	unlink(argv[1]);
	lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		die("socket");
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		die("bind");
	if (listen(lfd, 4) < 0)
		die("listen");
	fflush(stdout);
	child = fork();
	if (child < 0)
		die("fork");
	if (child == 0) {
		/* connects, sends, then waits for an answer that the
		 * listener never gives, or fails: either way the parent
		 * decides by the listener alone */
		dlm_lshandle_t ls = dlm_open_lockspace("secenv");

		_exit(ls ? 0 : 2);
	}
	pfd.fd = lfd;
	pfd.events = POLLIN;
	for (int i = 0; i < POLLS && !connected; i++) {
		int rv = poll(&pfd, 1, 100);

		if (rv < 0 && errno != EINTR)
			die("poll");
		if (rv > 0 && (pfd.revents & POLLIN))
			connected = 1;
		if (!exited && waitpid(child, &status, WNOHANG) == child)
			exited = 1;
		if (exited && !connected) {
			/* one more look: it connected before it exited */
			connected = poll(&pfd, 1, 0) > 0 &&
				    (pfd.revents & POLLIN);
			break;
		}
	}
	if (!exited) {
		kill(child, SIGKILL);
		waitpid(child, &status, 0);
	}
	unlink(argv[1]);
	printf("secure %lu %s\n", getauxval(AT_SECURE),
	       connected ? "connected" : "not-connected");
	fflush(stdout);
	_exit(0);
}
