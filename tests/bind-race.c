/*
 * tests/bind-race.c - the race a user who may write the directory of one
 * of dlmd's unix sockets would try to win, won every time (LD_PRELOAD,
 * for tests/test-socket-paths.sh only).
 *
 * After each successful bind() of a unix socket whose path lies under
 * $BIND_RACE_DIR, the socket file is renamed aside (PATH.moved) and a
 * symlink to $BIND_RACE_TARGET put in its place: what a chmod() or
 * chown() of the path that follows the bind then reaches is the target.
 * Every other bind is the real one, untouched.
 */
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

int bind(int fd, const struct sockaddr *sa, socklen_t len);

int bind(int fd, const struct sockaddr *sa, socklen_t len)
{
	int (*real)(int, const struct sockaddr *, socklen_t) =
		(int (*)(int, const struct sockaddr *, socklen_t))dlsym(RTLD_NEXT,
									 "bind");
	const char *dir = getenv("BIND_RACE_DIR");
	const char *target = getenv("BIND_RACE_TARGET");
	const struct sockaddr_un *su = (const struct sockaddr_un *)sa;
	char path[sizeof(su->sun_path) + 1], moved[PATH_MAX];
	int rv = real(fd, sa, len);

	if (rv || !dir || !target || sa->sa_family != AF_UNIX)
		return rv;
	memcpy(path, su->sun_path, sizeof(su->sun_path));
	path[sizeof(su->sun_path)] = '\0';
	if (strncmp(path, dir, strlen(dir)) || path[strlen(dir)] != '/')
		return rv;
	snprintf(moved, sizeof(moved), "%s.moved", path);
	if (rename(path, moved) == 0 && symlink(target, path) == 0)
		fprintf(stderr, "bind-race: %s now points to %s\n", path, target);
	return rv;
}
