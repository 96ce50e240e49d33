/*
 * tests/fuzz-daemon.h - the daemon state the dlmd fuzz targets
 * (tests/fuzz-client-proto.c, tests/fuzz-ctl.c) and tests/test-ctl-counters.c
 * drive: membership none, no main loop, the lock engine (plugin/daemon.c
 * starts both); made at the first input and kept, so that an input costs
 * what it does, not a daemon's start.
 */
#ifndef DLMD_TESTS_FUZZ_DAEMON_H
#define DLMD_TESTS_FUZZ_DAEMON_H

#include <stdlib.h>

#include "plugin/dlmd.h"

static inline struct dlmd *fuzz_daemon_state(void)
{
	static struct dlmd *d;

	if (d)
		return d;
	qb_log_init("fuzz", LOG_DAEMON, LOG_EMERG);
	qb_log_ctl(QB_LOG_SYSLOG, QB_LOG_CONF_ENABLED, QB_FALSE);
	d = calloc(1, sizeof(*d));
	if (!d)
		abort();
	dlmd_config_defaults(&d->d_cfg);
	d->d_cfg.cf_membership = DLMD_MEMBERSHIP_NONE;
	d->d_listen_fd = d->d_ctl_fd = d->d_metrics_fd = -1;
	if (dlmd_daemon_start(d))
		abort();
	return d;
}

#endif
