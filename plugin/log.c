/*
 * plugin/log.c - libqb logging and the flight recorder.
 *
 * Every log line goes through qb_log().  Targets: stderr when dlmd runs in
 * the foreground, syslog when the config says so (both filtered at the
 * configured level), and a custom target, the flight recorder, which keeps
 * the last cf_flight_lines lines at every level including debug in a ring
 * buffer, so that "dlmctl dump" can show what happened just before a
 * problem even when the configured level hid it.
 *
 * libqb's logging is process-global, so the recorder is too (one per
 * process, like the log itself); the lock engine keeps none of this.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

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

static void fr_log(int32_t t, struct qb_log_callsite *cs,
		   struct timespec *timestamp, const char *msg)
{
	struct flight_recorder *fr = &recorder;
	struct timespec mono;

	if (!fr->fr_cap)
		return;
	clock_gettime(CLOCK_MONOTONIC, &mono);
	snprintf(fr->fr_lines[fr->fr_head], FR_LINE_LEN, "%llu.%03ld %-7s %s",
		 (unsigned long long)mono.tv_sec, mono.tv_nsec / 1000000,
		 level_str(cs->priority), msg);
	fr->fr_head = (fr->fr_head + 1) % fr->fr_cap;
	if (fr->fr_count < fr->fr_cap)
		fr->fr_count++;
}

int dlmd_log_init(const struct dlmd_config *cf, bool to_stderr)
{
	struct flight_recorder *fr = &recorder;

	qb_log_init("dlmd", LOG_DAEMON, cf->cf_log_level);
	qb_log_format_set(QB_LOG_SYSLOG, "%b");
	qb_log_ctl(QB_LOG_SYSLOG, QB_LOG_CONF_ENABLED,
		   cf->cf_log_syslog ? QB_TRUE : QB_FALSE);
	qb_log_filter_ctl(QB_LOG_SYSLOG, QB_LOG_FILTER_ADD,
			  QB_LOG_FILTER_FILE, "*", cf->cf_log_level);
	if (to_stderr) {
		qb_log_format_set(QB_LOG_STDERR, "%t dlmd[%P] %p: %b");
		qb_log_filter_ctl(QB_LOG_STDERR, QB_LOG_FILTER_ADD,
				  QB_LOG_FILTER_FILE, "*", cf->cf_log_level);
		qb_log_ctl(QB_LOG_STDERR, QB_LOG_CONF_ENABLED, QB_TRUE);
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
	qb_log_fini();
	free(fr->fr_lines);
	fr->fr_lines = NULL;
	fr->fr_cap = fr->fr_count = fr->fr_head = 0;
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
	size_t size = (size_t)fr->fr_count * (FR_LINE_LEN + 1) + 1, off = 0;
	char *out = malloc(size);
	uint32_t start;

	if (!out)
		return NULL;
	out[0] = '\0';
	if (!fr->fr_cap)
		return out;
	start = (fr->fr_head + fr->fr_cap - fr->fr_count) % fr->fr_cap;
	for (uint32_t i = 0; i < fr->fr_count; i++) {
		const char *l = fr->fr_lines[(start + i) % fr->fr_cap];
		size_t n = strlen(l);

		memcpy(out + off, l, n);
		off += n;
		out[off++] = '\n';
	}
	out[off] = '\0';
	return out;
}
