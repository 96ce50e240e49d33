/*
 * plugin/dlmctl.c - the control tool for dlmd.
 *
 *   dlmctl [-s SOCKET] [--json] ls | status | dump | config |
 *          lockdump LOCKSPACE | join LOCKSPACE | leave [--force] LOCKSPACE |
 *          fence_ack NODEID | debug_frames_lost NODEID
 *
 * Talks to the daemon's control socket (protocol: plugin/ctl.c): the
 * socket is -s, else $DLMD_CTL_SOCKET, else the default path.  Prints the
 * body of the answer on stdout.  Exit codes:
 *   0  success
 *   1  the daemon refused or failed the command (its reason on stderr)
 *   2  usage error
 *   3  the daemon is not running (no socket, or nobody listening)
 *   4  no answer within CTL_TIMEOUT_MS, or a broken answer
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libdlm/dlmd_proto.h"
#include "plugin/ctl-client.h"

#define EXIT_USAGE		CTL_EXIT_USAGE

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
		"  leave [--force] LS remove lockspace LS from this node; refused while\n"
		"                     a client has it open or it holds orphaned locks,\n"
		"                     unless --force (their locks are dropped)\n"
		"  fence_ack NODEID   declare a failed node fenced (recovery goes on);\n"
		"                     refused for a node in the current cluster view\n"
		"  debug_frames_lost NODEID\n"
		"                     tests: act as if frames from NODEID were lost\n"
		"The control socket is -s, $DLMD_CTL_SOCKET or %s.\n",
		DLMD_DEFAULT_CTL_SOCKET);
}

int main(int argc, char **argv)
{
	const char *path = ctl_default_path();
	const char *verb = NULL, *arg = NULL;
	bool json = false, force = false, needs_arg;
	char req[DLMP_NAME_MAX + 64];
	char *body;
	int i, rc;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json") || !strcmp(argv[i], "-j")) {
			json = true;
		} else if (!strcmp(argv[i], "--force") || !strcmp(argv[i], "-f")) {
			force = true;
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
	    (json && strcmp(verb, "ls") && strcmp(verb, "status")) ||
	    (force && strcmp(verb, "leave"))) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (arg && (strlen(arg) > DLMP_NAME_MAX || strpbrk(arg, " \n"))) {
		fprintf(stderr, "dlmctl: bad lockspace name '%s'\n", arg);
		return EXIT_USAGE;
	}
	snprintf(req, sizeof(req), "%s%s%s%s%s\n", verb, json ? "-json" : "",
		 force ? "-force" : "",
		 arg ? " " : "", arg ? arg : "");

	rc = ctl_request("dlmctl", path, req, &body);
	if (rc == CTL_EXIT_OK) {
		fputs(body, stdout);
		if (!strcmp(verb, "join"))
			rc = ctl_join_wait("dlmctl", path, arg);
	} else if (rc == CTL_EXIT_FAILED && body) {
		fprintf(stderr, "dlmctl: %s %s: %s", verb, arg ? arg : "", body);
	}
	free(body);
	return rc;
}
