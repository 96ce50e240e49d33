/*
 * plugin/dlmctl.c - the control tool for dlmd.
 *
 *   dlmctl [-s SOCKET] [--json] ls | status | dump | config |
 *          lockdump LOCKSPACE | join LOCKSPACE | leave LOCKSPACE |
 *          fence_ack NODEID | debug_frames_lost NODEID
 *
 * Talks to the daemon's control socket (protocol: plugin/ctl.c): the
 * socket is -s, else $DLMD_CTL_SOCKET, else the default path.  Prints the
 * body of the answer on stdout.  Exit codes:
 *   0  success
 *   1  the daemon refused or failed the command (its reason on stderr)
 *   2  usage error
 *   3  the daemon is not running (no socket, or nobody listening)
 *   4  no answer within DLMCTL_TIMEOUT_MS, or a broken answer
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "libdlm/dlmd_proto.h"

#define DLMCTL_TIMEOUT_MS	10000
#define DLMCTL_JOIN_TIMEOUT_MS	60000
#define DLMCTL_JOIN_POLL_MS	20
#define EXIT_FAILED		1
#define EXIT_USAGE		2
#define EXIT_NOT_RUNNING	3
#define EXIT_NO_ANSWER		4

static void usage(FILE *f)
{
	fprintf(f,
		"usage: dlmctl [-s SOCKET] [--json] COMMAND [ARG]\n"
		"commands:\n"
		"  ls                 lockspaces, members, state (--json)\n"
		"  status             daemon status (--json)\n"
		"  dump               the daemon's flight recorder (recent log)\n"
		"  config             the daemon's effective configuration\n"
		"  lockdump LS        the lock dump of lockspace LS\n"
		"  join LS            create lockspace LS on this node; returns once it\n"
		"                     runs (up to 60 s)\n"
		"  leave LS           remove lockspace LS from this node (forced)\n"
		"  fence_ack NODEID   declare a failed node fenced (recovery goes on);\n"
		"                     refused for a node in the current cluster view\n"
		"  debug_frames_lost NODEID\n"
		"                     tests: act as if frames from NODEID were lost\n"
		"The control socket is -s, $DLMD_CTL_SOCKET or %s.\n",
		DLMD_DEFAULT_CTL_SOCKET);
}

/*
 * One request, one answer: connect, send REQ, read until the daemon
 * closes.  *OUT is the NUL-terminated answer.  Returns 0 or an exit code
 * (its reason on stderr).
 */
static int ctl_request(const char *path, const char *req, char **outp)
{
	struct sockaddr_un sa;
	char *out = NULL;
	size_t outlen = 0, outcap = 0;
	int fd, n;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "dlmctl: socket path too long: %s\n", path);
		return EXIT_USAGE;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int e = errno;

		if (e == ENOENT || e == ECONNREFUSED) {
			fprintf(stderr, "dlmctl: dlmd is not running (nothing "
				"listening on %s)\n", path);
			return EXIT_NOT_RUNNING;
		}
		fprintf(stderr, "dlmctl: cannot connect to %s: %s\n", path,
			strerror(e));
		return e == EACCES ? EXIT_FAILED : EXIT_NOT_RUNNING;
	}
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req)) {
		fprintf(stderr, "dlmctl: cannot send to dlmd: %s\n", strerror(errno));
		close(fd);
		return EXIT_NO_ANSWER;
	}
	/* Read until the daemon closes; bounded by the timeout per read. */
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };

		if (poll(&pfd, 1, DLMCTL_TIMEOUT_MS) <= 0) {
			fprintf(stderr, "dlmctl: no answer from dlmd within %d s\n",
				DLMCTL_TIMEOUT_MS / 1000);
			free(out);
			close(fd);
			return EXIT_NO_ANSWER;
		}
		if (outlen + 4096 + 1 > outcap) {
			char *o;

			outcap = outcap ? outcap * 2 : 8192;
			o = realloc(out, outcap);
			if (!o) {
				fprintf(stderr, "dlmctl: out of memory\n");
				free(out);
				close(fd);
				return EXIT_FAILED;
			}
			out = o;
		}
		n = (int)recv(fd, out + outlen, 4096, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		outlen += (size_t)n;
	}
	close(fd);
	if (!out || outlen == 0) {
		fprintf(stderr, "dlmctl: dlmd closed the connection without an answer\n");
		free(out);
		return EXIT_NO_ANSWER;
	}
	out[outlen] = '\0';
	*outp = out;
	return 0;
}

/* The line of `ls` for lockspace NAME in OUT, or NULL. */
static const char *ls_line(const char *out, const char *name)
{
	size_t len = strlen(name);

	for (const char *l = out; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l)
		if (!strncmp(l, "name ", 5) && !strncmp(l + 5, name, len) &&
		    !strncmp(l + 5 + len, " id ", 4))
			return l;
	return NULL;
}

/*
 * `join` returns once the lockspace runs here, as dlm_tool join does:
 * until then (its first membership agreed and recovered) it cannot be
 * used.  A lockspace that waits (for fencing, say) is said once with its
 * reason; after DLMCTL_JOIN_TIMEOUT_MS it is an error, and the lockspace
 * stays joined.
 */
static int join_wait(const char *path, const char *name)
{
	bool said = false;

	for (int waited = 0;; waited += DLMCTL_JOIN_POLL_MS) {
		const char *l, *st;
		char *out = NULL;
		int rv = ctl_request(path, "ls\n", &out);

		if (rv)
			return rv;
		l = strncmp(out, "OK\n", 3) ? NULL : ls_line(out + 3, name);
		if (!l) {
			fprintf(stderr, "dlmctl: join %s: the lockspace is gone\n", name);
			free(out);
			return EXIT_FAILED;
		}
		st = strstr(l, " state ");
		if (st && !strncmp(st + 7, "running ", 8)) {
			free(out);
			return 0;
		}
		if (waited >= DLMCTL_JOIN_TIMEOUT_MS || (!said && waited >= 2000)) {
			int n = (int)strcspn(l, "\n");
			const char *w = l[n] ? l + n + 1 : "";
			bool wl = !strncmp(w, "  wait ", 7);

			/* the lockspace's line and its "wait" line */
			fprintf(stderr, "dlmctl: join %s: %s: %.*s%s%.*s\n", name,
				waited >= DLMCTL_JOIN_TIMEOUT_MS ?
				"not running yet (left joined)" : "waiting",
				n, l, wl ? "; " : "",
				wl ? (int)strcspn(w + 2, "\n") : 0, wl ? w + 2 : "");
			said = true;
			if (waited >= DLMCTL_JOIN_TIMEOUT_MS) {
				free(out);
				return EXIT_FAILED;
			}
		}
		free(out);
		poll(NULL, 0, DLMCTL_JOIN_POLL_MS);
	}
}

int main(int argc, char **argv)
{
	const char *path = getenv("DLMD_CTL_SOCKET");
	const char *verb = NULL, *arg = NULL;
	bool json = false, needs_arg;
	char req[DLMP_NAME_MAX + 64];
	char *out = NULL;
	int i, rv;

	if (!path || !*path)
		path = DLMD_DEFAULT_CTL_SOCKET;
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j")) {
			json = true;
		} else if (!strcmp(argv[i], "-s") && i + 1 < argc) {
			path = argv[++i];
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (argv[i][0] == '-') {
			usage(stderr);
			return EXIT_USAGE;
		} else if (!verb) {
			verb = argv[i];
		} else if (!arg) {
			arg = argv[i];
		} else {
			usage(stderr);
			return EXIT_USAGE;
		}
	}
	if (!verb) {
		usage(stderr);
		return EXIT_USAGE;
	}
	needs_arg = !strcmp(verb, "lockdump") || !strcmp(verb, "join") ||
		    !strcmp(verb, "leave") || !strcmp(verb, "fence_ack") ||
		    !strcmp(verb, "debug_frames_lost");
	if (strcmp(verb, "ls") && strcmp(verb, "status") && strcmp(verb, "dump") &&
	    strcmp(verb, "config") && !needs_arg) {
		fprintf(stderr, "dlmctl: unknown command '%s'\n", verb);
		usage(stderr);
		return EXIT_USAGE;
	}
	if (needs_arg != (arg != NULL) ||
	    (json && strcmp(verb, "ls") && strcmp(verb, "status"))) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (arg && (strlen(arg) > DLMP_NAME_MAX || strpbrk(arg, " \n"))) {
		fprintf(stderr, "dlmctl: bad lockspace name '%s'\n", arg);
		return EXIT_USAGE;
	}
	snprintf(req, sizeof(req), "%s%s%s%s\n", verb, json ? "-json" : "",
		 arg ? " " : "", arg ? arg : "");

	rv = ctl_request(path, req, &out);
	if (rv)
		return rv;
	if (!strncmp(out, "OK\n", 3)) {
		fputs(out + 3, stdout);
		free(out);
		return strcmp(verb, "join") ? 0 : join_wait(path, arg);
	}
	if (!strncmp(out, "ERR ", 4)) {
		char *msg = strchr(out + 4, ' ');

		fprintf(stderr, "dlmctl: %s %s: %s", verb, arg ? arg : "",
			msg ? msg + 1 : out);
		free(out);
		return EXIT_FAILED;
	}
	fprintf(stderr, "dlmctl: malformed answer from dlmd\n");
	free(out);
	return EXIT_NO_ANSWER;
}
