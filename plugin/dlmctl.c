/*
 * plugin/dlmctl.c - the control tool for dlmd.
 *
 *   dlmctl [-s SOCKET] [--json] ls | status | metrics | dump | config |
 *          lockdump LOCKSPACE | join LOCKSPACE | leave [--force] LOCKSPACE |
 *          fence_ack NODEID | debug_frames_lost NODEID |
 *          debug_recovery_fail
 *   dlmctl --help | --version
 *
 * Talks to the daemon's control socket (protocol: plugin/ctl.c): the
 * socket is -s, else $DLMD_CTL_SOCKET, else the default path.  Prints the
 * body of the answer on stdout ("no lockspaces" for an empty ls).  Options
 * go anywhere on the line, in short or GNU long form; what is missing or
 * extra is said in one line, with a pointer to --help.  Exit codes:
 *   0  success
 *   1  the daemon refused or failed the command (its reason on stderr)
 *   2  usage error
 *   3  the daemon is not running (no socket, or nobody listening)
 *   4  no answer within CTL_TIMEOUT_MS, or a broken answer
 */
#include <getopt.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libdlm/dlmd_proto.h"
#include "plugin/ctl-client.h"

#define PROG			"dlmctl"
#define EXIT_USAGE		CTL_EXIT_USAGE
#define OPT_OPERAND		1	/* getopt_long's code for a non-option */

/* What a verb's one operand is. */
enum verb_arg {
	ARG_NONE,
	ARG_LS,		/* a lockspace name */
	ARG_NODE,	/* a node id */
};

/* The verbs, their operand, and which options go with them. */
struct verb {
	const char	*v_name;
	enum verb_arg	v_arg;
	bool		v_json;		/* takes --json */
	bool		v_force;	/* takes --force */
};

static const struct verb verbs[] = {
	{ "ls",			ARG_NONE,	true,	false },
	{ "status",		ARG_NONE,	true,	false },
	{ "metrics",		ARG_NONE,	false,	false },
	{ "dump",		ARG_NONE,	false,	false },
	{ "config",		ARG_NONE,	false,	false },
	{ "lockdump",		ARG_LS,		false,	false },
	{ "join",		ARG_LS,		false,	false },
	{ "leave",		ARG_LS,		false,	true },
	{ "fence_ack",		ARG_NODE,	false,	false },
	{ "debug_frames_lost",	ARG_NODE,	false,	false },
	{ "debug_recovery_fail",	ARG_NONE,	false,	false },
};

static const struct option long_opts[] = {
	{ "socket",	required_argument,	NULL, 's' },
	{ "json",	no_argument,		NULL, 'j' },
	{ "force",	no_argument,		NULL, 'f' },
	{ "help",	no_argument,		NULL, 'h' },
	{ "version",	no_argument,		NULL, 'V' },
	{ NULL,		0,			NULL, 0 }
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: dlmctl [OPTION]... COMMAND [ARG]\n"
		"Inspect and steer dlmd, the lock manager daemon of this node.\n\n"
		"Commands:\n"
		"  ls                 lockspaces, members, state (--json)\n"
		"  status             daemon status (--json: with every metric)\n"
		"  metrics            every metric, in the Prometheus text format\n"
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
		"  debug_recovery_fail\n"
		"                     tests: the next recovery step here fails once\n\n"
		"Options:\n"
		"  -s, --socket=PATH  the control socket (default $DLMD_CTL_SOCKET,\n"
		"                     else %s)\n"
		"  -j, --json         ls and status in JSON\n"
		"  -f, --force        leave even a lockspace in use\n"
		"  -h, --help         print this help, then exit\n"
		"  -V, --version      print the version, then exit\n\n"
		"Exit status: 0 done, 1 refused or failed by dlmd, 2 usage error,\n"
		"3 dlmd not running, 4 no answer from dlmd.\n",
		DLMD_DEFAULT_CTL_SOCKET);
}

/* A usage error: what is wrong, then where to look; EXIT_USAGE. */
static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad_usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, PROG ": ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\nTry '" PROG " --help' for more information.\n");
	va_end(ap);
	return EXIT_USAGE;
}

static bool is_node_id(const char *s)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return false;
	v = strtoull(s, &end, 10);
	return !*end && v && v <= UINT32_MAX;
}

int main(int argc, char **argv)
{
	const char *path = ctl_default_path();
	const char *verb_name = NULL, *arg = NULL, *extra = NULL;
	const struct verb *v = NULL;
	bool json = false, force = false;
	char req[DLMP_NAME_MAX + 64];
	char *body;
	int opt, rc;

	/* "-" first: operands come back in order (code OPT_OPERAND), so
	 * options may follow the command, as in "leave --force LS", even
	 * with POSIXLY_CORRECT set. */
	while ((opt = getopt_long(argc, argv, "-s:jfhV", long_opts, NULL)) != -1) {
		switch (opt) {
		case OPT_OPERAND:
			if (!verb_name)
				verb_name = optarg;
			else if (!arg)
				arg = optarg;
			else if (!extra)
				extra = optarg;
			break;
		case 's':
			path = optarg;
			break;
		case 'j':
			json = true;
			break;
		case 'f':
			force = true;
			break;
		case 'h':
			usage(stdout);
			return CTL_EXIT_OK;
		case 'V':
			printf(PROG " (dlmd) %s\nclient protocol %d.%d.%d\n",
			       PACKAGE_VERSION, DLMP_VERSION_MAJOR,
			       DLMP_VERSION_MINOR, DLMP_VERSION_PATCH);
			return CTL_EXIT_OK;
		default:	/* getopt_long said what is wrong */
			fprintf(stderr, "Try '" PROG " --help' for more information.\n");
			return EXIT_USAGE;
		}
	}
	/* after "--", operands only */
	for (; optind < argc; optind++) {
		if (!verb_name)
			verb_name = argv[optind];
		else if (!arg)
			arg = argv[optind];
		else if (!extra)
			extra = argv[optind];
	}
	if (!verb_name)
		return bad_usage("missing the command");
	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(verbs[i].v_name, verb_name))
			v = &verbs[i];
	if (!v)
		return bad_usage("unknown command '%s'", verb_name);
	if (v->v_arg != ARG_NONE && !arg)
		return bad_usage("%s: missing %s", v->v_name,
				 v->v_arg == ARG_LS ? "the lockspace name" :
				 "the node id");
	if (v->v_arg == ARG_NONE && arg)
		return bad_usage("%s takes no argument, not '%s'", v->v_name, arg);
	if (extra)
		return bad_usage("%s takes one argument; '%s' is one too many",
				 v->v_name, extra);
	if (json && !v->v_json)
		return bad_usage("--json goes with ls and status, not %s", v->v_name);
	if (force && !v->v_force)
		return bad_usage("--force goes with leave, not %s", v->v_name);
	if (v->v_arg == ARG_NODE && !is_node_id(arg))
		return bad_usage("%s: '%s' is not a node id", v->v_name, arg);
	if (v->v_arg == ARG_LS &&
	    (strlen(arg) > DLMP_NAME_MAX || strpbrk(arg, " \n")))
		return bad_usage("bad lockspace name '%s'", arg);
	snprintf(req, sizeof(req), "%s%s%s%s%s\n", v->v_name, json ? "-json" : "",
		 force ? "-force" : "",
		 arg ? " " : "", arg ? arg : "");

	rc = ctl_request(PROG, path, req, &body);
	if (rc == CTL_EXIT_OK) {
		if (!strcmp(v->v_name, "ls") && !json && !*body)
			printf("no lockspaces\n");
		fputs(body, stdout);
		if (!strcmp(v->v_name, "join"))
			rc = ctl_join_wait(PROG, path, arg);
	} else if (rc == CTL_EXIT_FAILED && body) {
		fprintf(stderr, PROG ": %s%s%s: %s", v->v_name, arg ? " " : "",
			arg ? arg : "", body);
	}
	free(body);
	return rc;
}
