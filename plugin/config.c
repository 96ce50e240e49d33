/*
 * plugin/config.c - dlm.conf.
 *
 * Format: one "key = value" per line; '#' starts a comment; blank lines
 * are ignored; whitespace around key and value is ignored.  Every key has
 * a default (below, and in plugin/dlm.conf.example), so an empty or absent
 * file is a valid configuration.  An unknown key, a repeated key, a value
 * out of range or a line without '=' is an error: "FILE:LINE: reason" on
 * stderr and dlmd exits non-zero, before it touches anything.
 *
 * Keys and defaults:
 *   port              21064        node-to-node transport port
 *   buffer_size       1048576      transport buffer bytes (4096..67108864)
 *   toss_secs         10           keep an unused resource this long
 *   max_tossed_resources 65536     unused resources one lockspace keeps
 *                                  at most; past it the oldest are
 *                                  dropped before toss_secs (0: no bound;
 *                                  core/resource.c, "Toss list")
 *   scan_secs         5            how often to scan for unused resources
 *   audit_secs        10           ask a lock's master about a lock that
 *                                  waits this long (0: never; core/audit.c)
 *   deadlock_secs     5            look for a deadlock through a request
 *                                  that waits this long, and again as often
 *                                  (0: never; core/deadlock.c)
 *   remaster_secs     0            move a resource's master to the node
 *                                  that makes most of its lock requests,
 *                                  at most once this often (0: never;
 *                                  core/remaster.c; rounded up to whole
 *                                  scan_secs, the engine's tick)
 *   remaster_window   32           lock requests per remastering window,
 *                                  3/4 of which one node must make
 *                                  (4..65534)
 *   remaster_shared   0            1: a resource that other nodes lock
 *                                  too may move, their locks re-pointed
 *                                  (core/remaster.c; 0 or 1)
 *   fold_lone_locks   1            1: a lock alone on its resource is
 *                                  one record (on a name another node
 *                                  directs once its lookup made this
 *                                  node master; core/solo.c; 0 or 1)
 *   recover_timer     60           seconds before a stuck recovery is logged
 *   peer_unreachable_secs 20       a member whose dlmd our frames have not
 *                                  got through to for this long, while
 *                                  corosync keeps it, is reported; one end
 *                                  of the cut is removed from the cluster
 *                                  and fenced (0: never; plugin/cluster.c,
 *                                  UNREACHABLE PEERS)
 *   socket_path       /run/dlmd/dlmd.sock      client socket (libdlm)
 *   control_socket    /run/dlmd/dlmd-ctl.sock  dlmctl's socket (mode 0600)
 *   pid_file          /run/dlmd/dlmd.pid
 *   socket_owner      root         user or numeric uid owning socket_path
 *   socket_group      root         group or numeric gid of socket_path
 *   socket_mode       0660         octal; who may connect and lock at all
 *   admin_group       (none)       group whose members may create and
 *                                  remove lockspaces (root always may)
 *   log_level         info         err, warning, notice, info, debug
 *   log_syslog        yes          also log to syslog (yes/no)
 *   membership        corosync     corosync, or none (one node, tests)
 *   nodeid            1            our node id when membership = none
 *   enable_fencing    1            fence failed nodes before recovery (0/1)
 *   fence_command     (none)       run "CMD NODEID" to fence a failed node;
 *                                  exit 0 means fenced (plugin/fence.c)
 *   fence_timeout_secs 60          a fence_command still running after
 *                                  this long is killed (its process group:
 *                                  SIGTERM, then SIGKILL) and the attempt
 *                                  fails (1..86400; no "never": a command
 *                                  that hangs would stall recovery)
 *   fence_pacemaker   auto         learn fencing results from pacemaker's
 *                                  fencer: auto (when it is reachable,
 *                                  else fence_command), yes (always), no
 *   fence_pacemaker_wait_secs 5    no fencing newer than the fencer's
 *                                  history at the failure, none under
 *                                  way, after this long: dlmd asks the
 *                                  fencer itself (0..3600)
 *   fence_pacemaker_action reboot  what dlmd asks the fencer: reboot, off
 *   flight_recorder_lines 4096     lines kept for "dlmctl dump" (16..1048576)
 *   crypto            key          key: peers prove the cluster key and
 *                                  every frame is sealed; none: plaintext,
 *                                  admission by address only (a warning)
 *   key_file          /etc/corosync/authkey   the cluster key (mode 0600)
 *   secure_heap_size  1048576      bytes of the memory kept out of core
 *                                  dumps that holds the session keys (a
 *                                  power of two, 1024..1073741824)
 *   max_clients_per_uid 1024       client connections one user may hold
 *                                  (1..1048576; root is not limited)
 *   max_locks_per_uid 1048576      locks (orphans included) one user may
 *                                  hold in all lockspaces (1..4294967295;
 *                                  root is not limited): one more is
 *                                  refused EDQUOT (plugin/client.c)
 *   client_spin_us    50           how long dlmd keeps watching the request
 *                                  rings of busy clients after the last
 *                                  request, instead of sleeping until a
 *                                  kick (0..1000000; 0: never; see
 *                                  plugin/client.c "Watching the rings")
 *   peer_spin_us      0            how long dlmd keeps its loop turning
 *                                  (polling, yielding) after a peer's
 *                                  message, instead of sleeping
 *                                  (0..1000000; 0: never; see
 *                                  plugin/comms.c "WATCHING THE PEERS")
 *   ast_queue_limit   67108864     bytes of unread ASTs dlmd keeps for all
 *                                  clients together (65536..4294967295);
 *                                  past it the client with the most is
 *                                  disconnected (plugin/client.c)
 *   configfs_dir      /run/dlmd/configfs   where dlmd keeps a view of the
 *                                  cluster laid out as the kernel's
 *                                  /sys/kernel/config (dlm/cluster/...,
 *                                  plugin/view.c); none: no view
 *   metrics_listen    none         the metrics endpoint (GET /metrics,
 *                                  plugin/metrics-http.c): ADDR:PORT with
 *                                  a numeric IPv4 address, [ADDR]:PORT
 *                                  with IPv6, or an absolute unix socket
 *                                  path; none: off
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

#include "plugin/dlmd.h"

#define LINE_MAX_LEN	1024

void dlmd_config_defaults(struct dlmd_config *cf)
{
	memset(cf, 0, sizeof(*cf));
	cf->cf_port = 21064;
	cf->cf_buffer_size = 1048576;
	cf->cf_toss_secs = 10;
	cf->cf_max_tossed = 65536;
	cf->cf_fold = 1;
	cf->cf_scan_secs = 5;
	cf->cf_audit_secs = 10;
	cf->cf_deadlock_secs = 5;
	cf->cf_remaster_secs = 0;
	cf->cf_remaster_window = DLMD_REMASTER_WINDOW;
	cf->cf_recover_timer = 60;
	cf->cf_peer_unreachable_secs = 20;
	snprintf(cf->cf_socket_path, sizeof(cf->cf_socket_path), "%s",
		 DLMD_DEFAULT_SOCKET);
	snprintf(cf->cf_ctl_socket_path, sizeof(cf->cf_ctl_socket_path), "%s",
		 DLMD_DEFAULT_CTL_SOCKET);
	snprintf(cf->cf_pid_file, sizeof(cf->cf_pid_file), "%s",
		 DLMD_DEFAULT_PIDFILE);
	cf->cf_socket_uid = 0;
	cf->cf_socket_gid = 0;
	cf->cf_socket_mode = 0660;
	cf->cf_log_level = LOG_INFO;
	cf->cf_log_syslog = true;
	cf->cf_membership = DLMD_MEMBERSHIP_COROSYNC;
	cf->cf_nodeid = 1;
	cf->cf_enable_fencing = true;
	cf->cf_fence_timeout_secs = 60;
	cf->cf_fence_pcmk_wait_secs = 5;
	cf->cf_flight_lines = 4096;
	cf->cf_crypto_none = false;
	snprintf(cf->cf_key_file, sizeof(cf->cf_key_file), "%s",
		 DLMD_DEFAULT_KEY_FILE);
	cf->cf_secure_heap_size = 1048576;
	cf->cf_max_clients_per_uid = 1024;
	cf->cf_ast_queue_limit = 64u << 20;
	cf->cf_max_locks_per_uid = 1u << 20;
	cf->cf_client_spin_us = 50;
	cf->cf_peer_spin_us = 0;	/* measured no gain: off (comms.c) */
	snprintf(cf->cf_configfs_dir, sizeof(cf->cf_configfs_dir), "%s",
		 DLMD_DEFAULT_CONFIGFS_DIR);
}

static int parse_u32(const char *v, uint32_t min, uint32_t max, int base,
		     uint32_t *out)
{
	char *end;
	unsigned long long x;

	if (!*v || *v == '-' || *v == '+')
		return -EINVAL;
	errno = 0;
	x = strtoull(v, &end, base);
	if (errno || *end || x < min || x > max)
		return -EINVAL;
	*out = (uint32_t)x;
	return 0;
}

static int parse_bool(const char *v, bool *out)
{
	if (!strcmp(v, "1") || !strcmp(v, "yes") || !strcmp(v, "true") ||
	    !strcmp(v, "on"))
		*out = true;
	else if (!strcmp(v, "0") || !strcmp(v, "no") || !strcmp(v, "false") ||
		 !strcmp(v, "off"))
		*out = false;
	else
		return -EINVAL;
	return 0;
}

static int parse_path(const char *v, char *out, size_t size)
{
	if (v[0] != '/' || strlen(v) >= size)
		return -EINVAL;
	snprintf(out, size, "%s", v);
	return 0;
}

static int parse_user(const char *v, uid_t *out)
{
	uint32_t n;
	struct passwd *pw;

	if (!parse_u32(v, 0, UINT32_MAX - 1, 10, &n)) {
		*out = (uid_t)n;
		return 0;
	}
	pw = getpwnam(v);
	if (!pw)
		return -ENOENT;
	*out = pw->pw_uid;
	return 0;
}

static int parse_group(const char *v, gid_t *out)
{
	uint32_t n;
	struct group *gr;

	if (!parse_u32(v, 0, UINT32_MAX - 1, 10, &n)) {
		*out = (gid_t)n;
		return 0;
	}
	gr = getgrnam(v);
	if (!gr)
		return -ENOENT;
	*out = gr->gr_gid;
	return 0;
}

/*
 * metrics_listen's value: "ADDR:PORT" (numeric IPv4), "[ADDR]:PORT"
 * (numeric IPv6) or "/absolute/path" (a unix socket).  Names are not
 * resolved: the config is read before the network may be up, and an
 * endpoint that moves with DNS is not what an operator wants.
 */
int dlmd_metrics_addr_parse(const char *text, struct sockaddr_storage *ss,
			    socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *colon, *h = text;
	size_t hlen;
	uint32_t port;

	memset(ss, 0, sizeof(*ss));
	if (text[0] == '/') {
		struct sockaddr_un *sun = (struct sockaddr_un *)ss;

		if (strlen(text) >= sizeof(sun->sun_path))
			return -EINVAL;
		sun->sun_family = AF_UNIX;
		memcpy(sun->sun_path, text, strlen(text) + 1);
		*len = sizeof(*sun);
		return 0;
	}
	colon = strrchr(text, ':');
	if (!colon || parse_u32(colon + 1, 1, 65535, 10, &port))
		return -EINVAL;
	hlen = (size_t)(colon - text);
	if (text[0] == '[') {
		if (hlen < 2 || text[hlen - 1] != ']')
			return -EINVAL;
		h = text + 1;
		hlen -= 2;
	}
	if (!hlen || hlen >= sizeof(host))
		return -EINVAL;
	memcpy(host, h, hlen);
	host[hlen] = '\0';
	if (text[0] == '[') {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;

		if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
			return -EINVAL;
		sin6->sin6_family = AF_INET6;
		sin6->sin6_port = htons((uint16_t)port);
		*len = sizeof(*sin6);
	} else {
		struct sockaddr_in *sin = (struct sockaddr_in *)ss;

		if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
			return -EINVAL;
		sin->sin_family = AF_INET;
		sin->sin_port = htons((uint16_t)port);
		*len = sizeof(*sin);
	}
	return 0;
}

static const char *const level_names[] = {
	[LOG_ERR] = "err", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
	[LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

static int parse_level(const char *v, int *out)
{
	for (int i = LOG_ERR; i <= LOG_DEBUG; i++) {
		if (level_names[i] && !strcmp(v, level_names[i])) {
			*out = i;
			return 0;
		}
	}
	return -EINVAL;
}

/* One key: parse 'v' into cf.  Returns 0, -EINVAL (bad value, 'why' set)
 * or -ENOENT (unknown key). */
static int set_key(struct dlmd_config *cf, const char *k, const char *v,
		   const char **why)
{
	uint32_t n;
	int rv;

#define U32(name, field, min, max) \
	if (!strcmp(k, name)) { \
		*why = "expected an integer in " #min ".." #max; \
		rv = parse_u32(v, min, max, 10, &n); \
		if (!rv) \
			cf->field = n; \
		return rv; \
	}
	U32("port", cf_port, 1, 65535)
	U32("buffer_size", cf_buffer_size, 4096, 67108864)
	U32("toss_secs", cf_toss_secs, 1, 86400)
	U32("max_tossed_resources", cf_max_tossed, 0, 4294967295)
	U32("scan_secs", cf_scan_secs, 1, 3600)
	U32("audit_secs", cf_audit_secs, 0, 86400)
	U32("deadlock_secs", cf_deadlock_secs, 0, 86400)
	U32("remaster_secs", cf_remaster_secs, 0, 86400)
	U32("remaster_window", cf_remaster_window, 4, 65534)
	U32("remaster_shared", cf_remaster_shared, 0, 1)
	U32("fold_lone_locks", cf_fold, 0, 1)
	U32("recover_timer", cf_recover_timer, 1, 86400)
	U32("peer_unreachable_secs", cf_peer_unreachable_secs, 0, 86400)
	U32("nodeid", cf_nodeid, 1, 0x7fffffff)
	U32("flight_recorder_lines", cf_flight_lines, 16, 1048576)
	U32("max_clients_per_uid", cf_max_clients_per_uid, 1, 1048576)
	U32("ast_queue_limit", cf_ast_queue_limit, 65536, 4294967295)
	U32("max_locks_per_uid", cf_max_locks_per_uid, 1, 4294967295)
	U32("fence_timeout_secs", cf_fence_timeout_secs, 1, 86400)
	U32("fence_pacemaker_wait_secs", cf_fence_pcmk_wait_secs, 0, 3600)
	U32("client_spin_us", cf_client_spin_us, 0, 1000000)
	U32("peer_spin_us", cf_peer_spin_us, 0, 1000000)
#undef U32
	if (!strcmp(k, "secure_heap_size")) {
		*why = "expected a power of two in 1024..1073741824";
		rv = parse_u32(v, 1024, 1073741824, 10, &n);
		if (!rv && (n & (n - 1)))
			rv = -EINVAL;
		if (!rv)
			cf->cf_secure_heap_size = n;
		return rv;
	}
	if (!strcmp(k, "socket_path")) {
		*why = "expected an absolute path shorter than 108 bytes";
		return parse_path(v, cf->cf_socket_path, sizeof(cf->cf_socket_path));
	}
	if (!strcmp(k, "control_socket")) {
		*why = "expected an absolute path shorter than 108 bytes";
		return parse_path(v, cf->cf_ctl_socket_path,
				  sizeof(cf->cf_ctl_socket_path));
	}
	if (!strcmp(k, "pid_file")) {
		*why = "expected an absolute path";
		return parse_path(v, cf->cf_pid_file, sizeof(cf->cf_pid_file));
	}
	if (!strcmp(k, "socket_owner")) {
		*why = "no such user";
		return parse_user(v, &cf->cf_socket_uid) ? -EINVAL : 0;
	}
	if (!strcmp(k, "socket_group")) {
		*why = "no such group";
		return parse_group(v, &cf->cf_socket_gid) ? -EINVAL : 0;
	}
	if (!strcmp(k, "admin_group")) {
		*why = "no such group";
		rv = parse_group(v, &cf->cf_admin_gid) ? -EINVAL : 0;
		if (!rv)
			cf->cf_have_admin_group = true;
		return rv;
	}
	if (!strcmp(k, "socket_mode")) {
		*why = "expected an octal mode such as 0660";
		rv = parse_u32(v, 0, 0777, 8, &n);
		if (!rv)
			cf->cf_socket_mode = (mode_t)n;
		return rv;
	}
	if (!strcmp(k, "log_level")) {
		*why = "expected err, warning, notice, info or debug";
		return parse_level(v, &cf->cf_log_level);
	}
	if (!strcmp(k, "log_syslog")) {
		*why = "expected yes or no";
		return parse_bool(v, &cf->cf_log_syslog);
	}
	if (!strcmp(k, "enable_fencing")) {
		*why = "expected 0 or 1";
		return parse_bool(v, &cf->cf_enable_fencing);
	}
	if (!strcmp(k, "fence_command")) {
		*why = "expected a command shorter than 1024 bytes";
		if (!*v || strlen(v) >= sizeof(cf->cf_fence_command))
			return -EINVAL;
		snprintf(cf->cf_fence_command, sizeof(cf->cf_fence_command), "%s", v);
		return 0;
	}
	if (!strcmp(k, "fence_pacemaker_action")) {
		*why = "expected reboot or off";
		if (!strcmp(v, "reboot"))
			cf->cf_fence_pcmk_off = false;
		else if (!strcmp(v, "off"))
			cf->cf_fence_pcmk_off = true;
		else
			return -EINVAL;
		return 0;
	}
	if (!strcmp(k, "fence_pacemaker")) {
		*why = "expected auto, yes or no";
		if (!strcmp(v, "auto")) {
			cf->cf_fence_pcmk = DLMD_FENCE_PCMK_AUTO;
		} else if (!strcmp(v, "yes")) {
			*why = "this dlmd was built without pacemaker's fencing "
			       "API (configure found no pacemaker-fencing)";
			if (!dlmd_fence_pcmk_built())
				return -EINVAL;
			cf->cf_fence_pcmk = DLMD_FENCE_PCMK_YES;
		} else if (!strcmp(v, "no")) {
			cf->cf_fence_pcmk = DLMD_FENCE_PCMK_NO;
		} else {
			return -EINVAL;
		}
		return 0;
	}
	if (!strcmp(k, "protocol")) {
		*why = "expected tcp, sctp or detect";
		if (!strcmp(v, "tcp") || !strcmp(v, "0"))
			cf->cf_protocol = DLMD_PROTO_TCP;
		else if (!strcmp(v, "sctp") || !strcmp(v, "1"))
			cf->cf_protocol = DLMD_PROTO_SCTP;
		else if (!strcmp(v, "detect") || !strcmp(v, "2"))
			cf->cf_protocol = DLMD_PROTO_DETECT;
		else
			return -EINVAL;
		return 0;
	}
	if (!strcmp(k, "crypto")) {
		*why = "expected key or none";
		if (!strcmp(v, "key"))
			cf->cf_crypto_none = false;
		else if (!strcmp(v, "none"))
			cf->cf_crypto_none = true;
		else
			return -EINVAL;
		return 0;
	}
	if (!strcmp(k, "key_file")) {
		*why = "expected an absolute path";
		return parse_path(v, cf->cf_key_file, sizeof(cf->cf_key_file));
	}
	if (!strcmp(k, "configfs_dir")) {
		*why = "expected an absolute path or none";
		if (!strcmp(v, "none")) {
			cf->cf_configfs_dir[0] = '\0';
			return 0;
		}
		if (!strcmp(v, "/"))
			return -EINVAL;
		return parse_path(v, cf->cf_configfs_dir,
				  sizeof(cf->cf_configfs_dir));
	}
	if (!strcmp(k, "metrics_listen")) {
		struct sockaddr_storage ss;
		socklen_t len;

		*why = "expected none, ADDR:PORT (numeric IPv4), [ADDR]:PORT "
		       "(numeric IPv6) or an absolute unix socket path shorter "
		       "than 108 bytes";
		if (!strcmp(v, "none")) {
			cf->cf_metrics_listen[0] = '\0';
			return 0;
		}
		if (strlen(v) >= sizeof(cf->cf_metrics_listen) ||
		    dlmd_metrics_addr_parse(v, &ss, &len))
			return -EINVAL;
		snprintf(cf->cf_metrics_listen, sizeof(cf->cf_metrics_listen),
			 "%s", v);
		return 0;
	}
	if (!strcmp(k, "membership")) {
		*why = "expected corosync or none";
		if (!strcmp(v, "corosync"))
			cf->cf_membership = DLMD_MEMBERSHIP_COROSYNC;
		else if (!strcmp(v, "none"))
			cf->cf_membership = DLMD_MEMBERSHIP_NONE;
		else
			return -EINVAL;
		return 0;
	}
	return -ENOENT;
}

static char *trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\n' ||
			 e[-1] == '\r'))
		*--e = '\0';
	return s;
}

#define MAX_KEYS	64

int dlmd_config_load(struct dlmd_config *cf, const char *path, bool must_exist)
{
	struct stat st;
	FILE *f;
	int fd, rv;

	/* O_NONBLOCK: a FIFO given for the file is refused below, not
	 * waited on for a writer (dlmd -c FIFO hung at start) */
	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0) {
		if (errno == ENOENT && !must_exist)
			return 0;
		rv = -errno;
		fprintf(stderr, "dlmd: cannot read config %s: %s\n", path,
			strerror(errno));
		return rv;
	}
	/* Only a regular file: a device may never end (dlmd -c /dev/zero
	 * read empty lines for ever), a FIFO or a socket waits on a writer;
	 * a directory read as an empty file and dlmd ran on the defaults. */
	if (fstat(fd, &st) < 0)
		st.st_mode = 0;
	if (!S_ISREG(st.st_mode)) {
		rv = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		fprintf(stderr, "%s: cannot read: %s\n", path, rv == -EISDIR ?
			strerror(EISDIR) : "not a regular file");
		close(fd);
		return rv;
	}
	f = fdopen(fd, "r");
	if (!f) {
		rv = -errno;
		fprintf(stderr, "dlmd: cannot read config %s: %s\n", path,
			strerror(errno));
		close(fd);
		return rv;
	}
	snprintf(cf->cf_file, sizeof(cf->cf_file), "%s", path);
	rv = dlmd_config_parse(cf, f, path, stderr);
	fclose(f);
	return rv;
}

/* An error line, or nothing when errf is NULL. */
static void errmsg(FILE *errf, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void errmsg(FILE *errf, const char *fmt, ...)
{
	va_list ap;

	if (!errf)
		return;
	va_start(ap, fmt);
	vfprintf(errf, fmt, ap);
	va_end(ap);
}

/* One line of f into line (at most size - 1 bytes, its '\n' kept), as
 * fgets() reads it, but a NUL byte is told (*nul, and the line ends
 * there): fgets() cannot tell one, so a line cut by a NUL
 * ("max_clients_per_uid = 5<NUL>0") was taken for its first part.
 * False at the end of the file (or an error) with nothing read. */
static bool read_line(FILE *f, char *line, size_t size, bool *nul)
{
	size_t n = 0;
	int c;

	*nul = false;
	while (n + 1 < size && (c = getc(f)) != EOF) {
		if (c == '\0') {
			*nul = true;
			break;
		}
		line[n++] = (char)c;
		if (c == '\n')
			break;
	}
	line[n] = '\0';
	return n > 0 || *nul;
}

/* s for an error line: bytes outside printable ASCII as '?' (a binary
 * file given for the config put its raw bytes on the terminal) */
static const char *shown(const char *s, char *buf, size_t size)
{
	size_t i = 0;

	for (; s[i] && i + 1 < size; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	buf[i] = '\0';
	return buf;
}

/* The parser proper, on an open stream ('path' names it in errors, which
 * go to errf); the config fuzz target (tests/fuzz-config.c) feeds it from
 * memory. */
int dlmd_config_parse(struct dlmd_config *cf, FILE *f, const char *path,
		      FILE *errf)
{
	char line[LINE_MAX_LEN + 2], seen[MAX_KEYS][48];
	char ks[LINE_MAX_LEN + 2], vs[LINE_MAX_LEN + 2];
	unsigned int lineno = 0, nseen = 0;
	bool nul;
	int rv = 0;

	while (read_line(f, line, sizeof(line), &nul)) {
		char *s, *eq, *k, *v, *hash;
		const char *why = "bad value";

		lineno++;
		if (nul) {
			errmsg(errf, "%s:%u: a NUL byte (not a text file?)\n",
			       path, lineno);
			rv = -EINVAL;
			break;
		}
		if (strlen(line) > LINE_MAX_LEN) {
			errmsg(errf, "%s:%u: line too long\n", path, lineno);
			rv = -EINVAL;
			break;
		}
		hash = strchr(line, '#');
		if (hash)
			*hash = '\0';
		s = trim(line);
		if (!*s)
			continue;
		eq = strchr(s, '=');
		if (!eq) {
			errmsg(errf, "%s:%u: expected \"key = value\"\n", path,
				lineno);
			rv = -EINVAL;
			break;
		}
		*eq = '\0';
		k = trim(s);
		v = trim(eq + 1);
		for (unsigned int i = 0; i < nseen; i++) {
			if (!strcmp(seen[i], k)) {
				errmsg(errf, "%s:%u: key '%s' given twice\n",
					path, lineno, shown(k, ks, sizeof(ks)));
				rv = -EINVAL;
				goto out;
			}
		}
		rv = set_key(cf, k, v, &why);
		if (rv == -ENOENT) {
			errmsg(errf, "%s:%u: unknown key '%s'\n", path, lineno,
			       shown(k, ks, sizeof(ks)));
			rv = -EINVAL;
			break;
		}
		if (rv) {
			errmsg(errf, "%s:%u: bad value '%s' for %s: %s\n", path,
				lineno, shown(v, vs, sizeof(vs)),
				shown(k, ks, sizeof(ks)), why);
			rv = -EINVAL;
			break;
		}
		if (nseen < MAX_KEYS)
			snprintf(seen[nseen++], sizeof(seen[0]), "%s", k);
	}
	/* getc() ends at an error as at the end: a read error halfway
	 * would run dlmd on half the settings */
	if (!rv && ferror(f)) {
		rv = -errno;
		if (rv >= 0)
			rv = -EIO;
		errmsg(errf, "%s: cannot read: %s\n", path, strerror(-rv));
	}
out:
	return rv;
}

/* The crypto keys', configfs_dir's and metrics_listen's lines, after
 * the others (frees s). */
static char *dump_crypto(char *s, const struct dlmd_config *cf)
{
	char *t = NULL;

	if (asprintf(&t, "%scrypto = %s\nkey_file = %s\nsecure_heap_size = %u\n"
		     "configfs_dir = %s\nmetrics_listen = %s\n", s,
		     cf->cf_crypto_none ? "none" : "key", cf->cf_key_file,
		     cf->cf_secure_heap_size,
		     cf->cf_configfs_dir[0] ? cf->cf_configfs_dir : "none",
		     cf->cf_metrics_listen[0] ? cf->cf_metrics_listen : "none") < 0)
		t = NULL;
	free(s);
	return t;
}

char *dlmd_config_dump(const struct dlmd_config *cf)
{
	char *s = NULL;
	char admin[32] = "(none)";

	if (cf->cf_have_admin_group)
		snprintf(admin, sizeof(admin), "%u", (unsigned)cf->cf_admin_gid);
	if (asprintf(&s,
		     "port = %u\nprotocol = %s\nbuffer_size = %u\ntoss_secs = %u\n"
		     "max_tossed_resources = %u\nscan_secs = %u\n"
		     "audit_secs = %u\ndeadlock_secs = %u\n"
		     "remaster_secs = %u\nremaster_window = %u\n"
		     "remaster_shared = %u\nfold_lone_locks = %u\n"
		     "recover_timer = %u\npeer_unreachable_secs = %u\n"
		     "socket_path = %s\ncontrol_socket = %s\n"
		     "pid_file = %s\nsocket_owner = %u\nsocket_group = %u\n"
		     "socket_mode = 0%o\nadmin_group = %s\nlog_level = %s\n"
		     "log_syslog = %s\nmembership = %s\nnodeid = %u\n"
		     "enable_fencing = %d\nfence_command = %s\n"
		     "fence_timeout_secs = %u\n"
		     "fence_pacemaker = %s\nfence_pacemaker_wait_secs = %u\n"
		     "fence_pacemaker_action = %s\nflight_recorder_lines = %u\n"
		     "max_clients_per_uid = %u\nast_queue_limit = %u\n"
		     "max_locks_per_uid = %u\nclient_spin_us = %u\n"
		     "peer_spin_us = %u\n",
		     cf->cf_port,
		     cf->cf_protocol == DLMD_PROTO_SCTP ? "sctp" :
		     cf->cf_protocol == DLMD_PROTO_DETECT ? "detect" : "tcp",
		     cf->cf_buffer_size, cf->cf_toss_secs, cf->cf_max_tossed,
		     cf->cf_scan_secs, cf->cf_audit_secs, cf->cf_deadlock_secs,
		     cf->cf_remaster_secs, cf->cf_remaster_window,
		     cf->cf_remaster_shared, cf->cf_fold,
		     cf->cf_recover_timer, cf->cf_peer_unreachable_secs,
		     cf->cf_socket_path,
		     cf->cf_ctl_socket_path, cf->cf_pid_file,
		     (unsigned)cf->cf_socket_uid, (unsigned)cf->cf_socket_gid,
		     (unsigned)cf->cf_socket_mode, admin,
		     level_names[cf->cf_log_level] ? level_names[cf->cf_log_level] : "?",
		     cf->cf_log_syslog ? "yes" : "no",
		     cf->cf_membership == DLMD_MEMBERSHIP_NONE ? "none" : "corosync",
		     cf->cf_nodeid, cf->cf_enable_fencing ? 1 : 0,
		     cf->cf_fence_command[0] ? cf->cf_fence_command : "(none)",
		     cf->cf_fence_timeout_secs,
		     cf->cf_fence_pcmk == DLMD_FENCE_PCMK_YES ? "yes" :
		     cf->cf_fence_pcmk == DLMD_FENCE_PCMK_NO ? "no" : "auto",
		     cf->cf_fence_pcmk_wait_secs,
		     cf->cf_fence_pcmk_off ? "off" : "reboot",
		     cf->cf_flight_lines, cf->cf_max_clients_per_uid,
		     cf->cf_ast_queue_limit, cf->cf_max_locks_per_uid,
		     cf->cf_client_spin_us, cf->cf_peer_spin_us) < 0)
		return NULL;
	return dump_crypto(s, cf);
}
