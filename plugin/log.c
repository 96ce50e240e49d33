/*
 * plugin/log.c - libqb logging and the flight recorder.
 *
 * Every log line goes through qb_log().  Targets: stderr when dlmd runs in
 * the foreground, syslog when the config says so (both filtered at the
 * configured level, both our own: "Sinks that never wait" below), and a
 * custom target, the flight recorder, which keeps
 * the last cf_flight_lines lines at every level including debug in a ring
 * buffer, so that "dlmctl dump" can show what happened just before a
 * problem even when the configured level hid it.
 *
 * libqb's logging is process-global, so the recorder is too (one per
 * process, like the log itself); the lock engine keeps none of this.
 * Lines come from dlmd's loop thread, and from the pacemaker libraries
 * in fence.c's history reader thread (THE HISTORY READER): our targets
 * and the recorder's dump hold log_mu.  That covers our sinks only:
 * libqb's qb_log_real_va_() guards against its own recursion with one
 * process-wide flag, set and tested without a lock or an atomic, so a
 * line logged by one thread while another is inside libqb's logging is
 * dropped (either thread's: loss, never a torn line or a crash; shown
 * by a test program of the fence3 review).  The reader logs nothing
 * itself; what pacemaker's libraries log from it (rare: errors of its
 * reads) can cost a line of the loop's now and then.  Not fixed: it is
 * inside libqb.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "plugin/dlmd.h"

#define FR_LINE_LEN	256	/* bytes kept of one line, NUL included */

struct flight_recorder {
	char		(*fr_lines)[FR_LINE_LEN];
	uint32_t	fr_cap;
	uint32_t	fr_head;	/* next slot to write */
	uint32_t	fr_count;
	int32_t		fr_target;
};

static struct flight_recorder recorder = { .fr_target = -1 };
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

/* The daemon's clock: monotonic milliseconds (what dlm_core_tick gets). */
uint64_t dlmd_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static const char *level_str(int level)
{
	switch (level) {
	case LOG_EMERG: case LOG_ALERT: case LOG_CRIT: case LOG_ERR:
		return "err";
	case LOG_WARNING:
		return "warning";
	case LOG_NOTICE:
		return "notice";
	case LOG_INFO:
		return "info";
	default:
		return "debug";
	}
}

static void fr_add(int priority, const char *msg)
{
	struct flight_recorder *fr = &recorder;
	struct timespec mono;

	if (!fr->fr_cap)
		return;
	clock_gettime(CLOCK_MONOTONIC, &mono);
	snprintf(fr->fr_lines[fr->fr_head], FR_LINE_LEN, "%llu.%03ld %-7s %s",
		 (unsigned long long)mono.tv_sec, mono.tv_nsec / 1000000,
		 level_str(priority), msg);
	fr->fr_head = (fr->fr_head + 1) % fr->fr_cap;
	if (fr->fr_count < fr->fr_cap)
		fr->fr_count++;
}

static void fr_log(int32_t t, struct qb_log_callsite *cs,
		   struct timespec *timestamp, const char *msg)
{
	pthread_mutex_lock(&log_mu);
	fr_add(cs->priority, msg);
	pthread_mutex_unlock(&log_mu);
}

/*
 * SINKS THAT NEVER WAIT.  libqb's own stderr and syslog targets write with
 * fprintf() and syslog(3), and both wait for as long as the reader does
 * not read: /dev/log's queue holds net.unix.max_dgram_qlen datagrams (10
 * to 512), a pipe or the journal's stream socket some kilobytes, and a
 * syslog daemon or journald that stalls (a slow disk, a remote queue
 * full, a restart) or a foreground dlmd's reader that stops (a pager, a
 * stopped "| tee") filled them.  The next log line then stopped dlmd
 * itself, in the kernel, for as long as its reader did: no lock granted,
 * no "dlmctl status" answered (the OCF monitor fails it), and after
 * peer_unreachable_secs the other nodes remove and fence this one.
 * So both sinks are custom targets here that write only what the reader
 * has room for at once: syslog datagrams on a non-blocking socket of our
 * own connected to /dev/log (with the header syslog(3) writes:
 * "<facility|level>Mmm dd hh:mm:ss dlmd[pid]: "), stderr after poll()
 * says it has room (a line is at most QB_LOG_MAX_LEN bytes: a pipe with
 * room takes it whole, a socket saying POLLOUT has a quarter of its
 * buffer free, a file always takes it, a pty or a tty may have room for
 * a few bytes only), with a write that does not wait either (stderr_fd,
 * below): it takes what there is room for.  A line that finds no room is
 * dropped and counted ("dlmctl status": log_lines_dropped), and the next
 * line that gets through that sink is preceded by one saying how many
 * went; the flight recorder, in memory, keeps them all ("dlmctl dump").
 * A stderr file on a full file system (ENOSPC, EDQUOT, EFBIG) has no
 * room too: its lines are counted, and the note says the file system was
 * full (test-daemon-env step 11; they went uncounted and unsaid).
 * A /dev/log with no reader (no syslog daemon) loses lines as syslog(3)
 * did: without counting them, trying to connect again at the next line.
 * tests/test-daemon-env.sh step 8 stops both readers under a dlmd.
 */
struct log_sink {
	int32_t		lk_target;	/* our custom target, or -1 */
	uint64_t	lk_dropped;	/* lines it had no room for */
	uint64_t	lk_told;	/* of those, said in it already */
};

static struct log_sink sink_stderr = { .lk_target = -1 };
static struct log_sink sink_syslog = { .lk_target = -1 };
static int syslog_fd = -1;
static bool syslog_stream;	/* /dev/log takes a stream (syslog-ng's
				 * unix-stream), not datagrams */

uint64_t dlmd_log_dropped(void)
{
	return sink_stderr.lk_dropped + sink_syslog.lk_dropped;
}

/* Connect syslog_fd to /dev/log, with datagrams or, where it is a
 * stream socket (EPROTOTYPE), as syslog(3) does then, a stream whose
 * messages end in a NUL; false if nothing listens there. */
static bool syslog_connect(void)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", _PATH_LOG);
	for (int i = 0; i < 2; i++) {
		syslog_stream = i == 1;
		syslog_fd = socket(AF_UNIX, (syslog_stream ? SOCK_STREAM :
					     SOCK_DGRAM) | SOCK_NONBLOCK |
				   SOCK_CLOEXEC, 0);
		if (syslog_fd < 0)
			return false;
		if (connect(syslog_fd, (struct sockaddr *)&sa, sizeof(sa)) == 0)
			return true;
		close(syslog_fd);
		syslog_fd = -1;
		if (errno != EPROTOTYPE)
			return false;
	}
	return false;
}

/* One datagram to syslog: 1 sent, 0 no room (the reader is behind),
 * -1 nobody listens.  A reader that went (a syslog daemon restarted)
 * is connected to again once. */
static int syslog_send(int level, const char *line)
{
	char buf[QB_LOG_MAX_LEN + 64], stamp[32];
	struct tm tm;
	time_t now = time(NULL);
	int n;

	if (!localtime_r(&now, &tm) ||
	    !strftime(stamp, sizeof(stamp), "%b %e %T", &tm))
		stamp[0] = '\0';
	n = snprintf(buf, sizeof(buf), "<%d>%s dlmd[%d]: %s", LOG_DAEMON |
		     (level < LOG_EMERG || level > LOG_DEBUG ? LOG_DEBUG : level),
		     stamp, (int)getpid(), line);
	if (n < 0)
		return -1;
	if ((size_t)n >= sizeof(buf))
		n = (int)sizeof(buf) - 1;
	for (int tries = 0; tries < 2; tries++) {
		ssize_t sent;

		if (syslog_fd < 0 && !syslog_connect())
			return -1;
		/* a stream's message ends in its NUL (in buf already) */
		sent = send(syslog_fd, buf, (size_t)n + syslog_stream,
			    MSG_DONTWAIT | MSG_NOSIGNAL);
		if (sent == (ssize_t)n + syslog_stream)
			return 1;
		if (sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK ||
				 errno == ENOBUFS))
			return 0;
		/* the reader went (or a stream took part of a message: its
		 * next one would be garbled): once more, anew */
		close(syslog_fd);
		syslog_fd = -1;
		if (sent > 0)
			return 0;
	}
	return -1;
}

/*
 * Where stderr's lines go: POLLOUT says only that some room is free (a
 * pty: any at all), and a blocking write of a whole line into less waits
 * for the reader (a stalled ssh, an XOFF).  So the write itself must not
 * wait, without changing fd 2's flags, which its other holders share (a
 * shell, "| tee"): a tty or a pipe is opened again through
 * /proc/self/fd/2, as a file description of our own made O_NONBLOCK; a
 * socket is sent to with MSG_DONTWAIT; a file (which never waits for a
 * reader) and anything that cannot be opened again keep fd 2, guarded by
 * poll() alone as before.
 */
static int stderr_fd = STDERR_FILENO;
static bool stderr_sock;

static void stderr_setup(void)
{
	struct stat st;
	int fd;

	stderr_fd = STDERR_FILENO;
	stderr_sock = false;
	if (fstat(STDERR_FILENO, &st))
		return;
	if (S_ISSOCK(st.st_mode)) {
		stderr_sock = true;
		return;
	}
	if (!S_ISCHR(st.st_mode) && !S_ISFIFO(st.st_mode))
		return;
	fd = open("/proc/self/fd/2", O_WRONLY | O_NONBLOCK | O_NOCTTY |
		  O_CLOEXEC);
	if (fd >= 0)
		stderr_fd = fd;
}

static void stderr_teardown(void)
{
	if (stderr_fd != STDERR_FILENO)
		close(stderr_fd);
	stderr_fd = STDERR_FILENO;
	stderr_sock = false;
}

/* the last line stderr had no room for found its file system full */
static bool stderr_nospace;

/* One line to stderr: 1 written, 0 no room, -1 it cannot be written.
 * (A tty with room for part of a line takes that part.) */
static int stderr_send(const char *line)
{
	struct pollfd p = { .fd = stderr_fd, .events = POLLOUT };
	size_t len = strlen(line);
	char buf[QB_LOG_MAX_LEN + 2];
	ssize_t n;

	if (poll(&p, 1, 0) != 1)
		return 0;
	if (!(p.revents & POLLOUT))
		return p.revents & (POLLERR | POLLHUP | POLLNVAL) ? -1 : 0;
	if (len > QB_LOG_MAX_LEN)
		len = QB_LOG_MAX_LEN;
	memcpy(buf, line, len);
	buf[len++] = '\n';
	n = stderr_sock ? send(stderr_fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL) :
	    write(stderr_fd, buf, len);
	if (n > 0)
		return 1;
	/* a file on a full file system (or past a quota or a size limit):
	 * no room for now, as a full pipe, so the lines it misses are
	 * counted and said once it takes lines again (they went unsaid) */
	if (n < 0 && (errno == ENOSPC || errno == EDQUOT || errno == EFBIG)) {
		stderr_nospace = true;
		return 0;
	}
	return n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -1;
}

static void sink_log_locked(int32_t t, struct qb_log_callsite *cs,
			    struct timespec *timestamp, const char *msg);

static void sink_log(int32_t t, struct qb_log_callsite *cs,
		     struct timespec *timestamp, const char *msg)
{
	pthread_mutex_lock(&log_mu);
	sink_log_locked(t, cs, timestamp, msg);
	pthread_mutex_unlock(&log_mu);
}

static void sink_log_locked(int32_t t, struct qb_log_callsite *cs,
			    struct timespec *timestamp, const char *msg)
{
	struct log_sink *k = t == sink_syslog.lk_target ? &sink_syslog :
			     &sink_stderr;
	char line[QB_LOG_MAX_LEN], note[96];
	int rv;

	if (k->lk_dropped > k->lk_told) {
		/* the reader is back: first, how much it missed */
		snprintf(note, sizeof(note), "%llu log lines dropped: %s",
			 (unsigned long long)(k->lk_dropped - k->lk_told),
			 k == &sink_stderr && stderr_nospace ?
			 "the log's file system was full" :
			 "the log's reader did not keep up");
		qb_log_target_format(t, cs, timestamp, note, line);
		rv = k == &sink_syslog ? syslog_send(LOG_WARNING, line) :
		     stderr_send(line);
		if (rv == 0) {
			k->lk_dropped++;
			return;
		}
		k->lk_told = k->lk_dropped;
		if (k == &sink_stderr)
			stderr_nospace = false;
	}
	qb_log_target_format(t, cs, timestamp, msg, line);
	rv = k == &sink_syslog ? syslog_send(cs->priority, line) :
	     stderr_send(line);
	/* the first of a run is noted where it can be (libqb drops a
	 * qb_log() made inside a target) */
	if (rv == 0 && k->lk_dropped++ == k->lk_told)
		fr_add(LOG_WARNING, k == &sink_syslog ?
		       "syslog (" _PATH_LOG ") is full: its lines are dropped "
		       "until its reader reads (status: log_lines_dropped)" :
		       (stderr_nospace ? "stderr's file system is full: its "
			"lines are dropped until there is room (status: "
			"log_lines_dropped)" :
			"stderr is full: its lines are dropped until its "
			"reader reads (status: log_lines_dropped)"));
}

/* Open, filter at LEVEL with FORMAT and enable one of our sinks. */
static int sink_open(struct log_sink *k, const char *format, int level)
{
	k->lk_target = qb_log_custom_open(sink_log, NULL, NULL, NULL);
	if (k->lk_target < 0)
		return k->lk_target;
	qb_log_format_set(k->lk_target, format);
	qb_log_ctl(k->lk_target, QB_LOG_CONF_MAX_LINE_LEN, QB_LOG_MAX_LEN);
	qb_log_filter_ctl(k->lk_target, QB_LOG_FILTER_ADD, QB_LOG_FILTER_FILE,
			  "*", level);
	qb_log_ctl(k->lk_target, QB_LOG_CONF_ENABLED, QB_TRUE);
	return 0;
}

static void sink_close(struct log_sink *k)
{
	if (k->lk_target >= 0)
		qb_log_custom_close(k->lk_target);
	k->lk_target = -1;
}

int dlmd_log_init(const struct dlmd_config *cf, bool to_stderr)
{
	struct flight_recorder *fr = &recorder;

	qb_log_init("dlmd", LOG_DAEMON, cf->cf_log_level);
	/* libqb's own syslog and stderr targets can wait: ours instead */
	qb_log_ctl(QB_LOG_SYSLOG, QB_LOG_CONF_ENABLED, QB_FALSE);
	qb_log_ctl(QB_LOG_STDERR, QB_LOG_CONF_ENABLED, QB_FALSE);
	if (cf->cf_log_syslog &&
	    sink_open(&sink_syslog, "%b", cf->cf_log_level) < 0)
		return -ENOMEM;
	if (to_stderr) {
		stderr_setup();
		if (sink_open(&sink_stderr, "%t dlmd[%P] %p: %b",
			      cf->cf_log_level) < 0)
			return -ENOMEM;
	}
	fr->fr_lines = calloc(cf->cf_flight_lines, FR_LINE_LEN);
	if (!fr->fr_lines)
		return -ENOMEM;
	fr->fr_cap = cf->cf_flight_lines;
	fr->fr_head = fr->fr_count = 0;
	fr->fr_target = qb_log_custom_open(fr_log, NULL, NULL, NULL);
	if (fr->fr_target < 0) {
		free(fr->fr_lines);
		fr->fr_lines = NULL;
		fr->fr_cap = 0;
		return fr->fr_target;
	}
	qb_log_filter_ctl(fr->fr_target, QB_LOG_FILTER_ADD, QB_LOG_FILTER_FILE,
			  "*", LOG_DEBUG);
	qb_log_ctl(fr->fr_target, QB_LOG_CONF_ENABLED, QB_TRUE);
	return 0;
}

void dlmd_log_fini(void)
{
	struct flight_recorder *fr = &recorder;

	if (fr->fr_target >= 0)
		qb_log_custom_close(fr->fr_target);
	fr->fr_target = -1;
	sink_close(&sink_syslog);
	sink_close(&sink_stderr);
	stderr_teardown();
	qb_log_fini();
	if (syslog_fd >= 0)
		close(syslog_fd);
	syslog_fd = -1;
	pthread_mutex_lock(&log_mu);
	free(fr->fr_lines);
	fr->fr_lines = NULL;
	fr->fr_cap = fr->fr_count = fr->fr_head = 0;
	pthread_mutex_unlock(&log_mu);
}

char *dlmd_escape(const char *s, char *buf, size_t size)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;

	if (!size)
		return buf;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c >= 0x20 && c < 0x7f && c != '\\') {
			if (o + 1 >= size)
				break;
			buf[o++] = (char)c;
		} else {
			if (o + 4 >= size)
				break;
			buf[o++] = '\\';
			buf[o++] = 'x';
			buf[o++] = hex[c >> 4];
			buf[o++] = hex[c & 15];
		}
	}
	buf[o] = '\0';
	return buf;
}

char *dlmd_log_flight_dump(void)
{
	struct flight_recorder *fr = &recorder;
	size_t size, off = 0;
	char *out;
	uint32_t start;

	pthread_mutex_lock(&log_mu);
	size = (size_t)fr->fr_count * (FR_LINE_LEN + 1) + 1;
	out = malloc(size);
	if (!out) {
		pthread_mutex_unlock(&log_mu);
		return NULL;
	}
	out[0] = '\0';
	if (!fr->fr_cap) {
		pthread_mutex_unlock(&log_mu);
		return out;
	}
	start = (fr->fr_head + fr->fr_cap - fr->fr_count) % fr->fr_cap;
	for (uint32_t i = 0; i < fr->fr_count; i++) {
		const char *l = fr->fr_lines[(start + i) % fr->fr_cap];
		size_t n = strlen(l);

		memcpy(out + off, l, n);
		off += n;
		out[off++] = '\n';
	}
	out[off] = '\0';
	pthread_mutex_unlock(&log_mu);
	return out;
}
