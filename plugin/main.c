/*
 * plugin/main.c - dlmd: start-up, the main loop, shut-down.
 *
 *   dlmd [-f|--foreground] [-D|--debug] [-c|--config dlm.conf]
 *   dlmd -h|--help, dlmd -V|--version
 *
 * Start-up, in order, so that a bad config or a second instance fails
 * before anything is touched:
 *   1. read the config (errors name the file and line; exit 1);
 *   2. take the single-instance lock: an flock on "<socket_path>.lock".
 *      If another dlmd holds it, print "another dlmd (pid N) is already
 *      running on SOCKET" and exit 1.  The lock, not the socket file,
 *      decides, so a stale socket left by a crash never blocks a start.
 *      Likewise the control socket's, the metrics socket's and the pid
 *      file's (lock_paths: "another dlmd (pid N) has the control socket
 *      PATH");
 *   3. daemonize unless -f (the lock fd is inherited; the pid written
 *      into the lock file and the pid file is the daemon's);
 *   4. logging, RLIMIT_NOFILE raised to its hard limit (each client
 *      costs two fds), the libqb loop, membership (cluster.c, which tells us our
 *      node id), the engine, the client and control sockets, and the
 *      metrics endpoint if dlm.conf asks for one (metrics-http.c; a
 *      failure there is logged, not fatal);
 *   5. run the loop: client and control fds, corosync fds, a timer that
 *      hands the monotonic clock to dlm_core_tick() every scan_secs, and
 *      SIGTERM/SIGINT, which stop the loop - unless a lockspace is in
 *      use (a client has it open, or it holds orphaned persistent locks):
 *      then the signal is refused with a log line naming the lockspaces,
 *      as dlm_controld refuses, because leaving would hand those locks to
 *      other nodes under their holders (see ls_in_use()).  SIGHUP,
 *      SIGUSR1 and SIGUSR2 are logged and ignored (nothing is reloaded),
 *      instead of killing dlmd by their default action.
 * Shut-down undoes it in reverse: clients are closed (their locks purged),
 * lockspaces released with force, groups left, sockets and pid file
 * removed.  Exit code 0 after a signal, 1 when corosync went away.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "plugin/dlmd.h"

#define MS_PER_SEC	1000ULL
#define NS_PER_MS	1000000ULL

static const struct option long_opts[] = {
	{ "config",	required_argument,	NULL, 'c' },
	{ "foreground",	no_argument,		NULL, 'f' },
	{ "debug",	no_argument,		NULL, 'D' },
	{ "help",	no_argument,		NULL, 'h' },
	{ "version",	no_argument,		NULL, 'V' },
	{ NULL,		0,			NULL, 0 }
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: dlmd [OPTION]...\n"
		"The distributed lock manager daemon of this node (dlmd(8)).\n\n"
		"  -c, --config=FILE  config file (default %s)\n"
		"  -f, --foreground   stay in the foreground, log to stderr\n"
		"  -D, --debug        like --foreground, with log_level debug\n"
		"  -h, --help         print this help, then exit\n"
		"  -V, --version      print the version, then exit\n",
		DLMD_DEFAULT_CONF);
}

/* mkdir -p for the directory part of 'path' (mode 0755).  Returns 0, or
 * the last mkdir's failure other than EEXIST (-errno): what to report if
 * the file then cannot be opened for want of its directory (ENOENT says
 * less than EROFS or EACCES). */
static int make_parent_dirs(const char *path)
{
	char buf[PATH_MAX];
	int rv = 0;

	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			rv = -errno;
		*p = '/';
	}
	return rv;
}

/* errno of an open() of a file whose directory make_parent_dirs() made
 * (mk its result), as -errno */
static int open_error(int mk)
{
	return errno == ENOENT && mk ? mk : -errno;
}

/*
 * The paths a dlmd takes for itself: its client socket, control socket
 * and metrics socket are made afresh at start (a file there is unlinked
 * first) and removed at exit, and so is its pid file.  Each is held by
 * an flock for dlmd's life: "<socket_path>.lock" (the single-instance
 * lock, which the OCF agent looks at), "<control_socket>.lock", the
 * metrics socket's "<path>.lock" and the pid file itself.  A second
 * dlmd with a client socket of its own but another of a running dlmd's
 * paths (a test config that kept the default control_socket or
 * pid_file, say) took it over: dlmctl then steered the second, and
 * when it stopped it removed the first's control socket and pid file,
 * the first running on unreachable by dlmctl and by the OCF agent's
 * monitor.  Now it does not start, naming the dlmd that holds the path.
 */
enum { LOCK_SOCKET, LOCK_CTL, LOCK_METRICS, LOCK_PID, NLOCKS };

struct path_locks {
	int	pl_fd[NLOCKS];		/* -1: none */
	int	pl_pid_err;		/* the pid file could not be opened
					 * (-errno: a warning once logging
					 * runs; dlmd starts without it) */
	char	pl_metrics_unsafe[PATH_MAX + 64];	/* why the metrics
					 * socket's directories are unsafe
					 * (logged once logging runs; dlmd
					 * starts without it), or "" */
};

/* flock 'path' (made if absent, never through a symlink: someone who may
 * write the directory could point it at any file, which we would
 * truncate: write_pid), for the file 'file' that 'what' names: its fd, or
 * -1 after printing why (*held: another dlmd holds it). */
static int lock_path(const char *path, const char *what, const char *file,
		     bool *held)
{
	char pidbuf[32] = "";
	int fd, mk;
	ssize_t n;

	*held = false;
	mk = make_parent_dirs(path);
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		fd = open_error(mk);
		fprintf(stderr, "dlmd: cannot open lock file %s: %s\n", path,
			strerror(-fd));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		n = pread(fd, pidbuf, sizeof(pidbuf) - 1, 0);
		pidbuf[n > 0 ? n : 0] = '\0';
		pidbuf[strcspn(pidbuf, "\n")] = '\0';
		if (!strcmp(what, "socket"))
			fprintf(stderr, "dlmd: another dlmd (pid %s) is already "
				"running on socket %s; not starting\n",
				pidbuf[0] ? pidbuf : "?", file);
		else
			fprintf(stderr, "dlmd: another dlmd (pid %s) has the %s "
				"%s; not starting\n", pidbuf[0] ? pidbuf : "?",
				what, file);
		close(fd);
		*held = true;
		return -1;
	}
	return fd;
}

static void unlock_paths(struct path_locks *pl)
{
	for (int i = 0; i < NLOCKS; i++) {
		if (pl->pl_fd[i] >= 0)
			close(pl->pl_fd[i]);
		pl->pl_fd[i] = -1;
	}
}

/*
 * Whoever may replace a file in the directory of the client or control
 * socket, or rename that directory (or one above it), can put a socket of
 * their own at the path and pose as dlmd: libdlm would send it its
 * requests, dlmctl its commands, and believe the answers.  So dlmd does
 * not start with such a socket in a directory another user may write:
 * the socket's own directory writable by group or others at all, one
 * above it so writable without the sticky bit (on the path as written
 * and on the path it resolves to), any of them owned by another user
 * than root and ours, or a symlink another user owns.  A sticky
 * directory above (/tmp) is fine: there only a file's owner may remove
 * or rename it; as the socket's own it is not: while dlmd is down
 * anyone could make a socket there, or take its lock file.  /run/dlmd,
 * made 0755 by root, is fine.  The metrics socket (metrics_listen, a
 * path) gets the same check: there that user could serve the scraper
 * dlmd's metrics of their own, or hold its lock file and so keep dlmd
 * from starting; it is not made (nor locked), and dlmd runs without it,
 * as when it cannot listen (tests/test-socket-paths.sh).
 * path_dir_unsafe: why the directories of 'file' are unsafe, into why
 * (the directory, the reason), or 0 if they are not.
 */
static int dir_unsafe(const char *dir, bool sticky_ok, char *why, size_t size)
{
	uid_t me = geteuid();
	struct stat st;

	if (lstat(dir, &st) < 0)
		return 0;	/* not there: what opens in it fails */
	if (S_ISLNK(st.st_mode) && st.st_uid != 0 && st.st_uid != me) {
		snprintf(why, size, "%s is a symlink of uid %u", dir,
			 (unsigned)st.st_uid);
		return 1;
	}
	if (stat(dir, &st) < 0)
		return 0;
	if (st.st_uid != 0 && st.st_uid != me) {
		snprintf(why, size, "directory %s is owned by uid %u", dir,
			 (unsigned)st.st_uid);
		return 1;
	}
	if ((st.st_mode & (S_IWGRP | S_IWOTH)) &&
	    !(sticky_ok && (st.st_mode & S_ISVTX))) {
		snprintf(why, size, "directory %s is writable by %s (mode 0%o%s)",
			 dir, st.st_mode & S_IWOTH ? "others" : "its group",
			 (unsigned)(st.st_mode & 07777),
			 sticky_ok ? ", no sticky bit" : "");
		return 1;
	}
	return 0;
}

/* dir_unsafe for 'path' (absolute) and every directory above it; those
 * above may be sticky */
static int dirs_unsafe(const char *path, char *why, size_t size)
{
	char buf[PATH_MAX];
	char *slash;
	bool first = true;

	snprintf(buf, sizeof(buf), "%s", path);
	for (;;) {
		if (dir_unsafe(buf[0] ? buf : "/", !first, why, size))
			return 1;
		first = false;
		slash = strrchr(buf, '/');
		if (!slash || !buf[0])
			return 0;
		*slash = '\0';
	}
}

static int path_dir_unsafe(const char *file, char *why, size_t size)
{
	char dir[PATH_MAX], real[PATH_MAX];
	char *slash;

	snprintf(dir, sizeof(dir), "%s", file);
	slash = strrchr(dir, '/');
	if (!slash)
		return 0;	/* config.c allows only absolute paths */
	*slash = '\0';
	if (dirs_unsafe(dir, why, size))
		return 1;
	if (realpath(dir[0] ? dir : "/", real) && dirs_unsafe(real, why, size))
		return 1;
	return 0;
}

/* Take every lock of the paths dlm.conf gives us (above): 0, or -1 after
 * printing why (another dlmd holds one; two keys name one file). */
static int lock_paths(const struct dlmd_config *cf, struct path_locks *pl)
{
	const char *file[NLOCKS] = {
		cf->cf_socket_path, cf->cf_ctl_socket_path,
		cf->cf_metrics_listen[0] == '/' ? cf->cf_metrics_listen : NULL,
		cf->cf_pid_file,
	};
	static const char *const key[NLOCKS] = {
		"socket_path", "control_socket", "metrics_listen", "pid_file",
	};
	static const char *const what[NLOCKS] = {
		"socket", "control socket", "metrics socket", "pid file",
	};
	char path[PATH_MAX];
	bool held;

	for (int i = 0; i < NLOCKS; i++)
		pl->pl_fd[i] = -1;
	pl->pl_pid_err = 0;
	for (int i = 0; i < NLOCKS; i++)
		for (int j = i + 1; j < NLOCKS; j++)
			if (file[i] && file[j] && !strcmp(file[i], file[j])) {
				fprintf(stderr, "dlmd: %s and %s are the same "
					"file, %s; not starting\n", key[i],
					key[j], file[i]);
				return -1;
			}
	for (int i = LOCK_SOCKET; i <= LOCK_CTL; i++) {
		char why[PATH_MAX + 64];

		make_parent_dirs(file[i]);
		if (path_dir_unsafe(file[i], why, sizeof(why))) {
			fprintf(stderr, "dlmd: %s %s: %s: another user could "
				"replace the socket and pose as dlmd; not "
				"starting\n", key[i], file[i], why);
			return -1;
		}
	}
	pl->pl_metrics_unsafe[0] = '\0';
	if (file[LOCK_METRICS] &&
	    path_dir_unsafe(file[LOCK_METRICS], pl->pl_metrics_unsafe,
			    sizeof(pl->pl_metrics_unsafe)))
		file[LOCK_METRICS] = NULL;
	for (int i = 0; i < NLOCKS; i++) {
		if (!file[i])
			continue;
		if (i == LOCK_PID) {
			/* the pid file is its own lock; one that cannot be
			 * opened (a symlink, a read-only directory) is
			 * warned about and done without, as before */
			int mk = make_parent_dirs(file[i]);
			int fd = open(file[i], O_RDWR | O_CREAT | O_CLOEXEC |
				      O_NOFOLLOW, 0644);

			if (fd < 0) {
				pl->pl_pid_err = open_error(mk);
				continue;
			}
			if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
				pl->pl_fd[i] = fd;
				continue;
			}
			close(fd);
			/* held: lock_path says by whom */
		}
		snprintf(path, sizeof(path), "%s%s", file[i],
			 i == LOCK_PID ? "" : ".lock");
		pl->pl_fd[i] = lock_path(path, what[i], file[i], &held);
		if (pl->pl_fd[i] < 0) {
			unlock_paths(pl);
			return -1;
		}
	}
	return 0;
}

static void write_pid(int fd)
{
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());

	if (fd < 0)
		return;
	if (ftruncate(fd, 0) < 0 || pwrite(fd, buf, (size_t)n, 0) != n)
		log_warn("cannot record our pid: %s", strerror(errno));
}

/* Each client costs two fds: take all the fds we are allowed, so the
 * per-user connection limit (max_clients_per_uid), not a low default
 * soft limit, decides.  Running out anyway is handled (client.c). */
static void raise_nofile_limit(void)
{
	struct rlimit rl;
	rlim_t was;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
		return;
	was = rl.rlim_cur;
	rl.rlim_cur = rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		log_warn("cannot raise RLIMIT_NOFILE from %llu to %llu: %s",
			 (unsigned long long)was, (unsigned long long)rl.rlim_max,
			 strerror(errno));
	else
		log_info("RLIMIT_NOFILE raised from %llu to %llu",
			 (unsigned long long)was, (unsigned long long)rl.rlim_max);
}

/* Below NOFILE_MIN fds dlmd cannot even set itself up (libqb's loop
 * crashed in qb_loop_signal_add() when it had no fd left for its signal
 * pipe: "ulimit -n 6" was a SIGSEGV at start), so it refuses to start,
 * saying why. */
#define NOFILE_MIN	32

static bool nofile_enough(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= NOFILE_MIN)
		return true;
	log_err("RLIMIT_NOFILE is %llu (hard limit %llu): dlmd needs at least "
		"%d fds to start, and two more for each client; not starting",
		(unsigned long long)rl.rlim_cur, (unsigned long long)rl.rlim_max,
		NOFILE_MIN);
	return false;
}

/* The same at the very start, before logging is set up and before the
 * lock files take their fds: a hard limit below NOFILE_MIN cannot be
 * raised, so a "ulimit -n 6" is said plainly rather than as a lock file
 * that could not be opened. */
static bool nofile_hard_enough(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_max >= NOFILE_MIN)
		return true;
	fprintf(stderr, "dlmd: RLIMIT_NOFILE is %llu (hard limit %llu): dlmd "
		"needs at least %d fds to start, and two more for each "
		"client; not starting\n", (unsigned long long)rl.rlim_cur,
		(unsigned long long)rl.rlim_max, NOFILE_MIN);
	return false;
}

/*
 * Whether dlmd may leave a lockspace by itself, on a signal.  Not while a
 * client on this node has it open, nor while a process left persistent
 * locks in it (orphans, which their owner will adopt when it restarts):
 * leaving would release those locks cluster-wide, and another node would
 * be granted them while their holder here still believes it holds them.
 * The established dlm_controld refuses to stop with lockspaces for the
 * same reason.  A dlmd that is killed instead is fenced by the others
 * (cluster.c), which is safe: its clients die with the node.
 */
static int32_t on_signal(int32_t sig, void *data)
{
	struct dlmd *d = data;
	unsigned int busy = 0;

	for (struct dlmd_ls *dl = d->d_lockspaces; dl; dl = dl->dl_next) {
		struct dlm_ls_stats st;

		if (!dlmd_ls_in_use(dl))
			continue;
		dlm_core_ls_stats(dl->dl_core, &st);
		log_warn("lockspace %s is in use: %u client connections, "
			 "%llu orphaned locks", dl->dl_name, dl->dl_nopen,
			 (unsigned long long)st.ls_orphans);
		busy++;
	}
	if (busy) {
		log_warn("signal %d: shutdown refused, %u lockspaces in use; "
			 "stop their users (and adopt or purge their orphans, "
			 "or \"dlmctl leave --force\" them) first. Killing dlmd instead "
			 "gets this node fenced", sig, busy);
		return 0;
	}
	log_notice("signal %d: shutting down", sig);
	/* the loop ends after this turn, whose jobs may still hold a
	 * client's LS_OPEN or LOCK: refused from here (client.c,
	 * stop_refuses), or the stop would leave a lockspace in use */
	d->d_stop_accepted = true;
	qb_loop_stop(d->d_loop);
	return 0;
}

/*
 * SIGHUP (a reload, a log rotation's "kill -HUP", the terminal of a
 * foreground dlmd closing), SIGUSR1 and SIGUSR2: their default action
 * kills the process, which would end every lock of this node at once and
 * get it fenced, past the refusal above.  dlmd reloads nothing (dlm.conf
 * is read at start; its log goes to syslog and stderr, no file to
 * reopen), so they are logged and otherwise ignored.
 */
static int32_t on_signal_ignored(int32_t sig, void *data)
{
	(void)data;
	log_warn("signal %d (%s) ignored: dlmd reloads nothing (dlm.conf is "
		 "read at start; restart dlmd to apply a change), and only "
		 "SIGTERM or SIGINT stops it", sig, strsignal(sig));
	return 0;
}

static qb_loop_timer_handle tick_timer;

static void on_tick(void *data)
{
	struct dlmd *d = data;

	dlm_core_tick(d->d_core, dlmd_now_ms());
	dlmd_flush(d);
	dlmd_view_tick(d);
	/* a peer's message the engine did not take: offered again now */
	dlmd_comms_retry_held(d);
	qb_loop_timer_add(d->d_loop, QB_LOOP_LOW,
			  (uint64_t)d->d_cfg.cf_scan_secs * MS_PER_SEC * NS_PER_MS,
			  d, on_tick, &tick_timer);
}

static void release_all_lockspaces(struct dlmd *d)
{
	while (d->d_lockspaces) {
		struct dlmd_ls *dl = d->d_lockspaces;

		if (dlmd_ls_release(d, dl, true, NULL)) {
			log_err("cannot release lockspace %s", dl->dl_name);
			break;
		}
	}
}

/*
 * Started with stdin, stdout or stderr closed ("dlmd -f 2>&-" from a
 * careless script), the first files dlmd opens would take those numbers:
 * the lock file became fd 0 and libqb's signal pipe fd 2, so every log
 * line written to stderr went into the pipe the loop reads signals from.
 * /dev/null takes any of them that is closed.
 */
static void std_fds_open(void)
{
	/* in order: open() takes the lowest free number, this fd */
	for (int fd = 0; fd <= 2; fd++)
		if (fcntl(fd, F_GETFD) < 0 && errno == EBADF &&
		    open("/dev/null", fd ? O_WRONLY : O_RDONLY) < 0)
			exit(1);
}

/*
 * Every fd above 2 that dlmd finds at start is its starter's: a shell's
 * own pipe (bash keeps one at 255), a CI runner's, a "7>&1" of a script.
 * dlmd takes none (no LISTEN_FDS: it makes its own sockets), and one it
 * kept would be held for as long as dlmd runs, by the daemon and by
 * every fence_command it spawns: the reader of that pipe never sees its
 * end ("dlmd -c conf 7>&1 | cat" never ended; tests/test-daemon-env.sh
 * step 10).  So all go, before dlmd opens anything of its own.
 */
static void inherited_fds_close(void)
{
	struct rlimit rl;

	if (close_range(3, ~0U, 0) == 0)
		return;
	/* a kernel before 5.9: each fd below the hard limit (an fd the
	 * starter opened under a higher one stays; none is that high) */
	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_max > 1U << 20)
		rl.rlim_max = 1U << 20;
	for (rlim_t fd = 3; fd < rl.rlim_max; fd++)
		(void)close((int)fd);
}

int main(int argc, char **argv)
{
	const char *conf = DLMD_DEFAULT_CONF;
	bool conf_given = false, foreground = false, debug = false;
	struct path_locks locks;
	struct dlmd *d;
	int opt, rv, exit_code = 1;

	std_fds_open();
	inherited_fds_close();
	while ((opt = getopt_long(argc, argv, "c:fDhV", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'c':
			conf = optarg;
			conf_given = true;
			break;
		case 'f':
			foreground = true;
			break;
		case 'D':
			foreground = debug = true;
			break;
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("dlmd %s\nclient protocol %d.%d.%d\n", PACKAGE_VERSION,
			       DLMP_VERSION_MAJOR, DLMP_VERSION_MINOR,
			       DLMP_VERSION_PATCH);
			return 0;
		default:	/* getopt_long said what is wrong */
			fprintf(stderr, "Try 'dlmd --help' for more information.\n");
			return 2;
		}
	}
	if (optind != argc) {
		fprintf(stderr, "dlmd: unexpected argument '%s' (dlmd takes no "
			"operands)\nTry 'dlmd --help' for more information.\n",
			argv[optind]);
		return 2;
	}
	d = calloc(1, sizeof(*d));
	if (!d) {
		fprintf(stderr, "dlmd: out of memory\n");
		return 1;
	}
	d->d_listen_fd = d->d_ctl_fd = d->d_metrics_fd = -1;
	dlmd_config_defaults(&d->d_cfg);
	if (dlmd_config_load(&d->d_cfg, conf, conf_given)) {
		fprintf(stderr, "dlmd: bad configuration, not starting\n");
		free(d);
		return 1;
	}
	if (debug)
		d->d_cfg.cf_log_level = LOG_DEBUG;
	/* before the lock files take fds: said on stderr, no log yet */
	if (!nofile_hard_enough()) {
		free(d);
		return 1;
	}
	if (lock_paths(&d->d_cfg, &locks)) {
		free(d);
		return 1;
	}
	if (!foreground && daemon(0, 0) < 0) {
		fprintf(stderr, "dlmd: daemon: %s\n", strerror(errno));
		unlock_paths(&locks);
		free(d);
		return 1;
	}
	signal(SIGPIPE, SIG_IGN);
	if (dlmd_log_init(&d->d_cfg, foreground)) {
		fprintf(stderr, "dlmd: cannot set up logging\n");
		goto out_lock;
	}
	raise_nofile_limit();
	if (!nofile_enough())
		goto out_log;
	for (int i = 0; i < NLOCKS; i++)
		write_pid(locks.pl_fd[i]);
	rv = locks.pl_pid_err;
	if (rv)
		log_warn("pid file %s: %s", d->d_cfg.cf_pid_file, strerror(-rv));
	log_notice("dlmd %s starting (config %s)", PACKAGE_VERSION,
		   d->d_cfg.cf_file[0] ? d->d_cfg.cf_file : "defaults");
	d->d_start_ms = dlmd_now_ms();
	d->d_loop = qb_loop_create();
	if (!d->d_loop) {
		log_err("cannot create the main loop");
		goto out_log;
	}
	/* SIGTERM/SIGINT are ours from here on: one that arrives while we
	 * connect to corosync is logged and stops the loop at once, instead
	 * of killing the process silently with its default action. */
	qb_loop_signal_add(d->d_loop, QB_LOOP_HIGH, SIGTERM, d, on_signal, NULL);
	qb_loop_signal_add(d->d_loop, QB_LOOP_HIGH, SIGINT, d, on_signal, NULL);
	qb_loop_signal_add(d->d_loop, QB_LOOP_HIGH, SIGHUP, d, on_signal_ignored,
			   NULL);
	qb_loop_signal_add(d->d_loop, QB_LOOP_HIGH, SIGUSR1, d,
			   on_signal_ignored, NULL);
	qb_loop_signal_add(d->d_loop, QB_LOOP_HIGH, SIGUSR2, d,
			   on_signal_ignored, NULL);
	if (dlmd_daemon_start(d))
		goto out_cluster;
	dlm_core_tick(d->d_core, dlmd_now_ms());
	if (dlmd_view_init(d)) {
		log_err("cannot set up the configfs view: out of memory");
		goto out_sockets;
	}
	make_parent_dirs(d->d_cfg.cf_socket_path);
	make_parent_dirs(d->d_cfg.cf_ctl_socket_path);
	if (dlmd_client_listen(d) || dlmd_ctl_listen(d))
		goto out_sockets;
	if (locks.pl_metrics_unsafe[0])
		log_err("metrics_listen %s: %s: another user could replace "
			"the socket and pose as dlmd; running without the "
			"metrics endpoint", d->d_cfg.cf_metrics_listen,
			locks.pl_metrics_unsafe);
	else
		(void)dlmd_metrics_listen(d);	/* logs; dlmd runs without it */
	qb_loop_timer_add(d->d_loop, QB_LOOP_LOW,
			  (uint64_t)d->d_cfg.cf_scan_secs * MS_PER_SEC * NS_PER_MS,
			  d, on_tick, &tick_timer);
	log_notice("dlmd ready: node %u, clients on %s, control on %s",
		   d->d_nodeid, d->d_cfg.cf_socket_path,
		   d->d_cfg.cf_ctl_socket_path);
	qb_loop_run(d->d_loop);
	exit_code = d->d_exit_code;
	qb_loop_timer_del(d->d_loop, tick_timer);

out_sockets:
	dlmd_metrics_fini(d);
	dlmd_ctl_fini(d);
	dlmd_client_fini(d);
	release_all_lockspaces(d);
	dlmd_view_fini(d);
out_cluster:
	dlmd_engine_free(d);
	dlmd_cluster_fini(d);
	qb_loop_destroy(d->d_loop);
	if (locks.pl_fd[LOCK_PID] >= 0)	/* ours, not a symlink's */
		unlink(d->d_cfg.cf_pid_file);
	log_notice("dlmd stopped (exit %d)", exit_code);
out_log:
	dlmd_log_fini();
out_lock:
	unlock_paths(&locks);
	free(d);
	return exit_code;
}
