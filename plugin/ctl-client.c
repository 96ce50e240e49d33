/*
 * plugin/ctl-client.c - one request to dlmd's control socket: connect,
 * send the line, read until the daemon closes (each read bounded by
 * CTL_TIMEOUT_MS), split "OK\n<body>" from "ERR <errno> <message>".
 */
#include <errno.h>
#include <stdbool.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "libdlm/dlmd_proto.h"
#include "plugin/ctl-client.h"

#define READ_CHUNK	4096

/* $DLMD_CTL_SOCKET through secure_getenv(), as libdlm reads its own: a
 * dlmctl or dlm_tool made setuid or given capabilities (to let an operator
 * group run it) must not be pointed by its invoker at a socket of their
 * own posing as dlmd (tests/test-libdlm-secure.sh); the default holds. */
const char *ctl_default_path(void)
{
	const char *path = secure_getenv("DLMD_CTL_SOCKET");

	return path && *path ? path : DLMD_DEFAULT_CTL_SOCKET;
}

static int connect_ctl(const char *prog, const char *path)
{
	struct sockaddr_un sa;
	int fd, e;

	if (strlen(path) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "%s: socket path too long: %s\n", prog, path);
		return -CTL_EXIT_USAGE;
	}
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	memcpy(sa.sun_path, path, strlen(path));
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
		return fd;
	e = errno;
	if (fd >= 0)
		close(fd);
	if (e == ENOENT || e == ECONNREFUSED) {
		fprintf(stderr, "%s: dlmd is not running (nothing listening on %s)\n",
			prog, path);
		return -CTL_EXIT_NOT_RUNNING;
	}
	fprintf(stderr, "%s: cannot connect to %s: %s\n", prog, path, strerror(e));
	return e == EACCES ? -CTL_EXIT_FAILED : -CTL_EXIT_NOT_RUNNING;
}

int ctl_request(const char *prog, const char *path, const char *req,
		char **body)
{
	size_t len = 0, cap = 0;
	char *out = NULL;
	int fd, rc = CTL_EXIT_NO_ANSWER;

	*body = NULL;
	fd = connect_ctl(prog, path);
	if (fd < 0)
		return -fd;
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) != (ssize_t)strlen(req)) {
		fprintf(stderr, "%s: cannot send to dlmd: %s\n", prog, strerror(errno));
		goto out;
	}
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, CTL_TIMEOUT_MS) <= 0) {
			fprintf(stderr, "%s: no answer from dlmd within %d s\n",
				prog, CTL_TIMEOUT_MS / 1000);
			goto out;
		}
		if (len + READ_CHUNK + 1 > cap) {
			char *o;

			cap = cap ? cap * 2 : 2 * READ_CHUNK;
			o = realloc(out, cap);
			if (!o) {
				fprintf(stderr, "%s: out of memory\n", prog);
				rc = CTL_EXIT_FAILED;
				goto out;
			}
			out = o;
		}
		n = recv(fd, out + len, READ_CHUNK, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	if (!out || len == 0) {
		fprintf(stderr, "%s: dlmd closed the connection without an answer\n",
			prog);
		goto out;
	}
	out[len] = '\0';
	if (!strncmp(out, "OK\n", 3)) {
		memmove(out, out + 3, len - 2);
		*body = out;
		out = NULL;
		rc = CTL_EXIT_OK;
	} else if (!strncmp(out, "ERR ", 4)) {
		char *msg = strchr(out + 4, ' ');

		msg = msg ? msg + 1 : out;
		memmove(out, msg, strlen(msg) + 1);
		*body = out;
		out = NULL;
		rc = CTL_EXIT_FAILED;
	} else {
		fprintf(stderr, "%s: malformed answer from dlmd\n", prog);
	}
out:
	free(out);
	close(fd);
	return rc;
}

/* The line of `ls` for lockspace NAME in LS, or NULL. */
static const char *ls_line(const char *ls, const char *name)
{
	size_t len = strlen(name);

	for (const char *l = ls; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : l)
		if (!strncmp(l, "name ", 5) && !strncmp(l + 5, name, len) &&
		    !strncmp(l + 5 + len, " id ", 4))
			return l;
	return NULL;
}

int ctl_join_wait(const char *prog, const char *path, const char *name)
{
	bool said = false;

	for (int waited = 0;; waited += CTL_JOIN_POLL_MS) {
		const char *l, *st;
		char *body;
		int rc = ctl_request(prog, path, "ls\n", &body);

		if (rc) {
			if (rc == CTL_EXIT_FAILED && body)
				fprintf(stderr, "%s: join %s: ls: %s", prog, name, body);
			free(body);
			return rc;
		}
		l = ls_line(body, name);
		if (!l) {
			fprintf(stderr, "%s: join %s: the lockspace is gone\n", prog, name);
			free(body);
			return CTL_EXIT_FAILED;
		}
		st = strstr(l, " state ");
		if (st && !strncmp(st + 7, "running ", 8)) {
			free(body);
			return CTL_EXIT_OK;
		}
		if (waited >= CTL_JOIN_TIMEOUT_MS || (!said && waited >= 2000)) {
			int n = (int)strcspn(l, "\n");
			const char *w = l[n] ? l + n + 1 : "";
			bool wl = !strncmp(w, "  wait ", 7);

			/* the lockspace's line and its "wait" line */
			fprintf(stderr, "%s: join %s: %s: %.*s%s%.*s\n", prog, name,
				waited >= CTL_JOIN_TIMEOUT_MS ?
				"not running yet (left joined)" : "waiting",
				n, l, wl ? "; " : "",
				wl ? (int)strcspn(w + 2, "\n") : 0, wl ? w + 2 : "");
			said = true;
			if (waited >= CTL_JOIN_TIMEOUT_MS) {
				free(body);
				return CTL_EXIT_FAILED;
			}
		}
		free(body);
		poll(NULL, 0, CTL_JOIN_POLL_MS);
	}
}
