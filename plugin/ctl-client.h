/*
 * plugin/ctl-client.h - one request to dlmd's control socket (protocol:
 * plugin/ctl.c), shared by dlmctl and its dlm_tool front end.
 */
#ifndef DLMD_PLUGIN_CTL_CLIENT_H
#define DLMD_PLUGIN_CTL_CLIENT_H

/* Exit codes of both tools. */
#define CTL_EXIT_OK		0
#define CTL_EXIT_FAILED		1	/* the daemon refused or failed it */
#define CTL_EXIT_USAGE		2
#define CTL_EXIT_NOT_RUNNING	3	/* no socket, or nobody listening */
#define CTL_EXIT_NO_ANSWER	4	/* no answer in time, or a broken one */

#define CTL_TIMEOUT_MS		10000	/* per read of the answer */

/* The control socket: $DLMD_CTL_SOCKET, else the default path. */
const char *ctl_default_path(void);

/* Send 'req' (one line, with its newline) to the control socket at
 * 'path' and read the whole answer.  CTL_EXIT_OK: *body is the answer
 * after "OK\n".  CTL_EXIT_FAILED: *body is the daemon's message (the ERR
 * line's text after the errno).  Other codes: *body is NULL and the
 * reason was printed on stderr, prefixed with 'prog'.  The caller frees
 * *body. */
int ctl_request(const char *prog, const char *path, const char *req,
		char **body);

/*
 * After a successful "join NAME": wait until the lockspace runs here, as
 * dlm_tool join does (its first membership agreed and recovered).  One
 * that waits (for fencing, say) is said once on stderr after 2 s with its
 * state and reason; after CTL_JOIN_TIMEOUT_MS it is an error
 * (CTL_EXIT_FAILED) and the lockspace stays joined.
 */
#define CTL_JOIN_TIMEOUT_MS	60000
#define CTL_JOIN_POLL_MS	20
int ctl_join_wait(const char *prog, const char *path, const char *name);

#endif /* DLMD_PLUGIN_CTL_CLIENT_H */
