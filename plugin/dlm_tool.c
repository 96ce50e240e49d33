/*
 * plugin/dlm_tool.c - the established dlm_tool's everyday verbs, for
 * administrators, crmsh, pacemaker's controld agent and scripts, as a
 * front end to dlmd's control socket (plugin/ctl.c, as dlmctl uses it):
 *
 *   dlm_tool [-n] ls [LS]            lockspaces, in dlm_tool's layout
 *   dlm_tool [-v] status             daemon and node state
 *   dlm_tool dump                    the daemon's debug log
 *   dlm_tool dump_config             the effective configuration, key=val
 *   dlm_tool [-M] lockdump LS        one line per lock
 *   dlm_tool lockdebug LS            per resource: master, LVB, queues
 *   dlm_tool join LS / leave LS      create / remove the lockspace here
 *   dlm_tool fence_ack NODEID        declare a failed node fenced
 *
 * The layouts are dlm_tool's (dlm 4.x), field for field where dlmd keeps
 * the same fact.  What dlmd does not keep is printed as 0 and documented
 * in dlm_tool(8): the joined/remove/failed counts of a change, a node's
 * add/remove/fail/fence times, the lockspace flags.  Where a lockspace
 * waits, "new status    wait <what>" says for what ("wait fencing" is
 * what the controld agent looks for); status -v prints
 * "stateful_merge_wait=0" on a line of its own, as that agent reads it
 * (dlmd never merges stateful partitions: the side without quorum is
 * fenced).  Exit codes are dlmctl's (plugin/ctl-client.h).
 */
#include <errno.h>
#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libdlm/dlmd_proto.h"
#include "plugin/ctl-client.h"

#define PROG		"dlm_tool"
#define MAX_IDS		128	/* members of one lockspace (DLM_MAX_NODES) */
#define NAME_MAX_TEXT	1024	/* an escaped resource name */

struct opts {
	bool	all_nodes;	/* -n */
	bool	verbose;	/* -v */
	bool	mstcpy;		/* -M */
	unsigned int mode;	/* -m */
};

/* dlm_tool's options are short, as the established tool's; GNU's two
 * long ones are understood too. */
static const struct option long_opts[] = {
	{ "help",	no_argument,	NULL, 'h' },
	{ "version",	no_argument,	NULL, 'V' },
	{ NULL,		0,		NULL, 0 }
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage:\n\n"
		"dlm_tool [options] [ls|status|dump|dump_config|fence_ack|\n"
		"                    join|leave|lockdump|lockdebug]\n\n"
		"Options:\n"
		"  -n               Show all node information in ls\n"
		"  -v               Verbose status (and lockdebug)\n"
		"  -M               Print MSTCPY locks in lockdump\n"
		"                   (remote locks that are locally mastered)\n"
		"  -m <mode>        Permission mode for join (octal; dlmd: 0600)\n"
		"  -w, -s           Accepted for lockdebug, no effect\n"
		"  -h, --help       Print this help, then exit\n"
		"  -V, --version    Print program version information, then exit\n\n"
		"A front end to dlmd (see dlm_tool(8), dlmctl(8)); the control\n"
		"socket is $DLMD_CTL_SOCKET or %s.\n", DLMD_DEFAULT_CTL_SOCKET);
}

/* One control request; prints dlmd's refusal.  0 with *body, or an exit
 * code. */
static int ask(const char *req, char **body)
{
	int rc = ctl_request(PROG, ctl_default_path(), req, body);

	if (rc == CTL_EXIT_FAILED && *body) {
		fprintf(stderr, PROG ": %s", *body);
		free(*body);
		*body = NULL;
	}
	return rc;
}

/* ----------------------------------------------------------------- ls */

/* The value after "key " in a space-separated line, as a number list. */
static unsigned int id_list(const char *line, const char *key, uint32_t *ids)
{
	char pat[32];
	const char *p;
	unsigned int n = 0;

	snprintf(pat, sizeof(pat), " %s ", key);
	p = strstr(line, pat);
	if (!p)
		return 0;
	p += strlen(pat);
	while (n < MAX_IDS) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);

		if (end == p)
			break;
		ids[n++] = (uint32_t)v;
		p = end;
		if (*p == ' ')
			p++;
	}
	return n;
}

static void print_ids(const char *label, const uint32_t *ids, unsigned int n)
{
	printf("%s", label);
	for (unsigned int i = 0; i < n; i++)
		printf("%u ", ids[i]);
	printf("\n");
}

/* The first word of dlmd's wait description, as dlm_tool names the
 * conditions: "fencing", "quorum", "messages" (starts from members),
 * "recovery". */
static const char *wait_word(const char *wait)
{
	if (!strncmp(wait, "fencing", 7))
		return "fencing";
	if (!strncmp(wait, "quorum", 6))
		return "quorum";
	if (!strncmp(wait, "members", 7) || !strncmp(wait, "join", 4) ||
	    !strncmp(wait, "start", 5))
		return "messages";
	return "recovery";
}

/* One lockspace: dlmd's "name ... group ..." line and its "  wait" line. */
static void show_ls(const char *line, const char *wait, const struct opts *o)
{
	char name[DLMP_NAME_MAX + 1], state[32];
	uint32_t members[MAX_IDS], group[MAX_IDS];
	unsigned int id = 0, event = 0, nm, ng;
	const char *ev;
	bool waiting;

	if (sscanf(line, "name %64s id %x state %31s", name, &id, state) != 3)
		return;
	ev = strstr(line, " event ");
	if (ev)
		sscanf(ev, " event %u", &event);
	nm = id_list(line, "members", members);
	ng = id_list(line, "group", group);
	waiting = strcmp(wait, "none") && strcmp(wait, "-");
	printf("name          %s\n", name);
	printf("id            0x%08x\n", id);
	printf("flags         0x%08x %s\n", 0u, strcmp(state, "running") ? "kern_stop" : "");
	printf("change        member %u joined 0 remove 0 failed 0 seq %u,%u\n",
	       nm, event, event);
	print_ids("members       ", members, nm);
	if (waiting) {
		printf("new change    member %u joined 0 remove 0 failed 0 seq %u,%u\n",
		       ng, event + 1, event + 1);
		printf("new status    wait %s (dlmd: %s)\n", wait_word(wait), wait);
		print_ids("new members   ", group, ng);
	}
	if (o->all_nodes) {
		printf("all nodes\n");
		for (unsigned int i = 0; i < ng; i++) {
			bool member = false;

			for (unsigned int j = 0; j < nm; j++)
				member |= members[j] == group[i];
			printf("nodeid %u member %d failed 0 start %d seq_add 0 "
			       "seq_rem 0 check %s\n", group[i], member ? 1 : 0,
			       member ? 1 : 0,
			       waiting && !strcmp(wait_word(wait), "fencing") ?
			       "fence" : "none");
		}
	}
	printf("\n");
}

static int do_ls(const char *lsname, const struct opts *o)
{
	char *body, *line, *save = NULL, *prev = NULL;
	bool header = false;
	int rc = ask("ls\n", &body);

	if (rc)
		return rc;
	for (line = strtok_r(body, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(line, "name ", 5)) {
			prev = line;
			continue;
		}
		if (prev && !strncmp(line, "  wait ", 7)) {
			char name[DLMP_NAME_MAX + 1];

			if (sscanf(prev, "name %64s", name) == 1 &&
			    (!lsname || !strcmp(lsname, name))) {
				if (!header)
					printf("dlm lockspaces\n");
				header = true;
				show_ls(prev, line + 7, o);
			}
			prev = NULL;
		}
	}
	free(body);
	return 0;
}

/* ------------------------------------------------------------- status */

/* "key value" lines of dlmctl status: the value of 'key', or "". */
static const char *status_value(char *body, const char *key, char *out, size_t len)
{
	size_t kl = strlen(key);

	out[0] = '\0';
	for (char *p = body; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (!strncmp(p, key, kl) && p[kl] == ' ') {
			const char *v = p + kl + 1;
			size_t n = strcspn(v, "\n");

			snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), v);
			break;
		}
	}
	return out;
}

static int do_status(const struct opts *o)
{
	char *body, pid[32], nodeid[32], quorate[16], nodes[4096], uptime[32];
	uint32_t fencing[MAX_IDS];
	unsigned int nf = 0;
	char *ls = NULL;
	int rc = ask("status\n", &body);

	if (rc)
		return rc;
	status_value(body, "pid", pid, sizeof(pid));
	status_value(body, "nodeid", nodeid, sizeof(nodeid));
	status_value(body, "quorate", quorate, sizeof(quorate));
	status_value(body, "nodes", nodes, sizeof(nodes));
	status_value(body, "uptime", uptime, sizeof(uptime));
	/* nodes the lockspaces wait to see fenced */
	if (ask("ls\n", &ls) == 0) {
		for (char *p = strstr(ls, "  wait fencing"); p && nf < MAX_IDS;
		     p = strstr(p + 1, "  wait fencing")) {
			char *q = p + strlen("  wait fencing");

			while (*q && *q != '\n' && nf < MAX_IDS) {
				char *end;
				unsigned long v = strtoul(q, &end, 10);

				if (end == q) {
					q++;
					continue;
				}
				fencing[nf++] = (uint32_t)v;
				q = end;
			}
		}
		free(ls);
	}
	if (o->verbose) {
		/* one key=value a line, as scripts cut them */
		printf("our_nodeid=%s\n", nodeid);
		printf("daemon_pid=%s\n", pid);
		printf("quorate=%d\n", !strcmp(quorate, "yes"));
		printf("fence_pending=%u\n", nf);
		printf("stateful_merge_wait=0\n");
	}
	printf("cluster nodeid %s quorate %d ring seq 0 0\n", nodeid,
	       !strcmp(quorate, "yes"));
	printf("daemon now %lu fence_pid 0 \n", strtoul(uptime, NULL, 10));
	/* "nodes 1(addr) 2(addr)": the cluster view */
	for (char *p = nodes; *p; ) {
		char *end;
		unsigned long v = strtoul(p, &end, 10);

		if (end == p) {
			p++;
			continue;
		}
		printf("node %lu M add 0 rem 0 fail 0 fence 0 at 0 0\n", v);
		p = strchr(end, ' ');
		if (!p)
			break;
	}
	for (unsigned int i = 0; i < nf; i++)
		printf("node %u X add 0 rem 0 fail 0 fence 0 at 0 0\n", fencing[i]);
	free(body);
	return 0;
}

/* --------------------------------------------------------- the dumps */

static int do_dump(void)
{
	char *body;
	int rc = ask("dump\n", &body);

	if (rc)
		return rc;
	fputs(body, stdout);
	free(body);
	return 0;
}

/* dlmd prints "key = value"; dlm_tool dump_config prints key=value. */
static int do_dump_config(void)
{
	char *body, *line, *save = NULL;
	int rc = ask("config\n", &body);

	if (rc)
		return rc;
	for (line = strtok_r(body, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char *eq = strstr(line, " = ");

		if (!eq)
			continue;
		*eq = '\0';
		printf("%s=%s\n", line, eq + 3);
	}
	free(body);
	return 0;
}

/* A lock line of the engine's dump (core/dump.c dump_lock). */
struct lockline {
	char		queue[16];	/* granted convert waiting lookup request */
	uint32_t	id;
	int		gr, rq;		/* DLM_LOCK_* or -1 */
	uint32_t	node;		/* "node N": the master, or a copy's owner node */
	uint32_t	remid;
	bool		has_owner;
	unsigned long long owner;
};

static int mode_num(const char *s)
{
	static const char *const names[] = { "NL", "CR", "CW", "PR", "PW", "EX" };

	for (int i = 0; i < 6; i++)
		if (!strncmp(s, names[i], 2))
			return i;
	return -1;
}

static const char *mode_name(int m)
{
	static const char *const names[] = { "NL", "CR", "CW", "PR", "PW", "EX" };

	return m >= 0 && m < 6 ? names[m] : "IV";
}

static bool parse_lock(const char *line, struct lockline *l)
{
	char mode[16];
	const char *p;

	memset(l, 0, sizeof(*l));
	l->gr = l->rq = -1;
	if (sscanf(line, " %15s %x %15s", l->queue, &l->id, mode) != 3)
		return false;
	if (!strcmp(l->queue, "granted")) {
		l->gr = mode_num(mode);
	} else if (!strcmp(l->queue, "convert")) {
		l->gr = mode_num(mode);
		l->rq = strlen(mode) >= 6 ? mode_num(mode + 4) : -1;
	} else {
		l->rq = mode_num(mode);
	}
	p = strstr(line, " node ");
	if (p)
		sscanf(p, " node %u remid %x", &l->node, &l->remid);
	p = strstr(line, " owner ");
	if (p && sscanf(p, " owner %llu", &l->owner) == 1)
		l->has_owner = true;
	return true;
}

/* lockdebug: one resource's queues, printed when the next one starts. */
struct rsbout {
	char	*q[3];		/* Granted, Convert, Waiting */
	size_t	qlen[3];
	FILE	*f[3];
};

static void rsb_flush(struct rsbout *ro)
{
	static const char *const titles[] = { "Granted", "Convert", "Waiting" };

	for (int i = 0; i < 3; i++) {
		if (!ro->f[i])
			continue;
		fclose(ro->f[i]);
		printf("%s\n%s", titles[i], ro->q[i] ? ro->q[i] : "");
		free(ro->q[i]);
		ro->q[i] = NULL;
		ro->f[i] = NULL;
	}
}

static bool rsb_start(struct rsbout *ro)
{
	for (int i = 0; i < 3; i++) {
		ro->f[i] = open_memstream(&ro->q[i], &ro->qlen[i]);
		if (!ro->f[i])
			return false;
	}
	return true;
}

/* The lockspace's dump (core/dump.c), in dlm_tool's lockdump layout or,
 * with 'debug', per resource as lockdebug shows it. */
static int do_lockdump(const char *lsname, const struct opts *o, bool debug)
{
	char req[DLMP_NAME_MAX + 16], name[NAME_MAX_TEXT], role[32];
	char *body, *line, *save = NULL;
	struct rsbout ro;
	uint32_t master = 0;
	bool is_master = false, in_rsb = false;
	int rc;

	memset(&ro, 0, sizeof(ro));
	snprintf(req, sizeof(req), "lockdump %s\n", lsname);
	rc = ask(req, &body);
	if (rc)
		return rc;
	name[0] = '\0';
	for (line = strtok_r(body, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct lockline l;
		int qi;

		if (!strncmp(line, "resource \"", 10) || !strncmp(line, "inflight \"", 10)) {
			const char *q = strrchr(line, '"');
			size_t n = q > line + 10 ? (size_t)(q - (line + 10)) : 0;

			snprintf(name, sizeof(name), "%.*s", (int)n, line + 10);
			master = 0;
			role[0] = '\0';
			if (q)
				sscanf(q + 1, " master %u %31s", &master, role);
			is_master = !strcmp(role, "master-copy");
			if (debug) {
				rsb_flush(&ro);
				in_rsb = line[0] == 'r' && rsb_start(&ro);
				if (in_rsb) {
					printf("\nResource len %2zu  \"%s\"\n", n, name);
					if (is_master)
						printf("Master\n");
					else if (master)
						printf("Master:%u\n", master);
					else
						printf("Master: unknown\n");
				}
			}
			continue;
		}
		if (!strncmp(line, "  lvb ", 6)) {
			if (debug && in_rsb && o->verbose)
				printf("LVB %s\n", line + 6);
			continue;
		}
		if (!parse_lock(line, &l))
			continue;
		if (debug) {
			FILE *f;

			qi = !strcmp(l.queue, "granted") ? 0 :
			     !strcmp(l.queue, "convert") ? 1 :
			     !strcmp(l.queue, "waiting") ? 2 : -1;
			if (!in_rsb || qi < 0)
				continue;
			f = ro.f[qi];
			fprintf(f, "%08x %s", l.id, mode_name(l.gr));
			if (l.rq >= 0)
				fprintf(f, " (%s)", mode_name(l.rq));
			if (!l.has_owner)
				fprintf(f, " Remote: %3u %08x", l.node, l.remid);
			else if (!is_master && l.node)
				fprintf(f, " Master: %3u %08x", l.node, l.remid);
			if (l.has_owner)
				fprintf(f, " pid %llu", l.owner >> 32);
			fprintf(f, "\n");
			continue;
		}
		if (!l.has_owner) {
			/* a master copy: a remote lock mastered here */
			if (o->mstcpy)
				printf("id %08x gr %s rq %s pid 0 MSTCPY %u \"%s\"\n",
				       l.id, mode_name(l.gr), mode_name(l.rq), l.node,
				       name);
			continue;
		}
		/* master: 0 when mastered here, as the kernel's lkb_nodeid */
		printf("id %08x gr %s rq %s pid %llu master %u \"%s\"\n", l.id,
		       mode_name(l.gr), mode_name(l.rq), l.owner >> 32,
		       is_master ? 0 : master, name);
	}
	rsb_flush(&ro);
	free(body);
	return 0;
}

/* --------------------------------------------------------- the verbs */

static int do_simple(const char *verb, const char *arg, const char *before,
		     const char *after)
{
	char req[DLMP_NAME_MAX + 32], *body;
	int rc;

	if (before)
		printf("%s", before);
	fflush(stdout);
	snprintf(req, sizeof(req), "%s %s\n", verb, arg);
	rc = ask(req, &body);
	if (rc)
		return rc;
	fputs(body, stdout);
	free(body);
	if (!strcmp(verb, "join")) {
		rc = ctl_join_wait(PROG, ctl_default_path(), arg);
		if (rc)
			return rc;
	}
	if (after)
		printf("%s", after);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { .mode = 0600 };
	const char *verb, *arg;
	char line[DLMP_NAME_MAX + 64];
	int c;

	while ((c = getopt_long(argc, argv, "nvMm:wshV", long_opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			o.all_nodes = true;
			break;
		case 'v':
			o.verbose = true;
			break;
		case 'M':
			o.mstcpy = true;
			break;
		case 'm':
			o.mode = (unsigned int)strtoul(optarg, NULL, 8);
			break;
		case 'w':
		case 's':
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf(PROG " (dlmd) %s\n"
			       "a front end to dlmd, client protocol %d.%d.%d\n",
			       PACKAGE_VERSION, DLMP_VERSION_MAJOR,
			       DLMP_VERSION_MINOR, DLMP_VERSION_PATCH);
			return 0;
		default:
			fprintf(stderr, "Please use '-h' for usage.\n");
			return CTL_EXIT_USAGE;
		}
	}
	if (optind >= argc) {
		usage(stderr);
		return CTL_EXIT_USAGE;
	}
	verb = argv[optind];
	arg = optind + 1 < argc ? argv[optind + 1] : NULL;
	if (arg && (strlen(arg) > DLMP_NAME_MAX || strpbrk(arg, " \n"))) {
		fprintf(stderr, PROG ": bad argument '%s'\n", arg);
		return CTL_EXIT_USAGE;
	}
	if (!strcmp(verb, "ls"))
		return do_ls(arg, &o);
	if (!strcmp(verb, "status"))
		return do_status(&o);
	if (!strcmp(verb, "dump"))
		return do_dump();
	if (!strcmp(verb, "dump_config"))
		return do_dump_config();
	if (strcmp(verb, "lockdump") && strcmp(verb, "lockdebug") &&
	    strcmp(verb, "leave") && strcmp(verb, "join") &&
	    strcmp(verb, "fence_ack")) {
		fprintf(stderr, PROG ": unknown command '%s'\n", verb);
		usage(stderr);
		return CTL_EXIT_USAGE;
	}
	if (!arg) {
		if (!strcmp(verb, "fence_ack"))
			fprintf(stderr, "nodeid required\n");
		else
			fprintf(stderr, "lockspace name required\n");
		return CTL_EXIT_USAGE;
	}
	if (!strcmp(verb, "lockdump"))
		return do_lockdump(arg, &o, false);
	if (!strcmp(verb, "lockdebug"))
		return do_lockdump(arg, &o, true);
	if (!strcmp(verb, "leave")) {
		snprintf(line, sizeof(line), "Leaving lockspace \"%s\"\n", arg);
		return do_simple("leave", arg, line, "done\n");
	}
	if (!strcmp(verb, "join")) {
		if (o.mode != 0600) {
			fprintf(stderr, PROG ": dlmd creates lockspaces from the "
				"control socket with mode 0600 only\n");
			return CTL_EXIT_USAGE;
		}
		snprintf(line, sizeof(line),
			 "Joining lockspace \"%s\" permission 600\n", arg);
		return do_simple("join", arg, line, "done\n");
	}
	return do_simple("fence_ack", arg, NULL, NULL);
}
