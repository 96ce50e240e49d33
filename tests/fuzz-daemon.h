/*
 * tests/fuzz-daemon.h - the daemon state the dlmd fuzz targets drive
 * (tests/fuzz-client-proto.c, tests/fuzz-ctl.c): membership none, no main
 * loop, the lock engine; made at the first input and kept, so that an
 * input costs what it does, not a daemon's start.
 */
#ifndef DLMD_TESTS_FUZZ_DAEMON_H
#define DLMD_TESTS_FUZZ_DAEMON_H

#include <stdlib.h>

#include "plugin/dlmd.h"

static inline struct dlmd *fuzz_daemon_state(void)
{
	static struct dlmd *d;
	struct dlm_core_config ccfg = { .our_nodeid = 1, .toss_ms = 10000 };

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
	d->d_msgs_tail = &d->d_msgs;
	if (dlmd_cluster_init(d))
		abort();
	d->d_core = dlm_core_new(&ccfg, &dlmd_core_ops, d);
	if (!d->d_core)
		abort();
	return d;
}

#endif
