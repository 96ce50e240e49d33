/*
 * tests/cpg-peer.c - a stranger in dlmd's daemon group, for the tests:
 * joins the CPG group "dlmd:daemon" as a process that is no dlmd, sends
 * one message of protocol VERSION (a START of lockspace LS, as a dlmd of
 * that version would), stays a member for SECONDS (dispatching what it is
 * sent, which it ignores), then leaves.
 *
 *   cpg-peer VERSION SECONDS [LS]
 *
 * With VERSION 1 it stands for an older dlmd (CPG protocol 1), whose
 * daemon group messages a current dlmd must refuse, and which never
 * announces its lockspaces.  It has no cluster key: nothing it sends
 * carries a seal (plugin/cpgmsg.h), so the dlmds that saw it join never
 * take it for a dlmd.  Exits 0 if it could join, send and leave.
 *
 *   cpg-peer forge SECONDS LS
 *
 * A process that is no dlmd beside its node's dlmd (run by a user whose
 * group corosync's uidgid admits, as pacemaker's haclient): once its
 * join is delivered it answers the sync as its node's dlmd would, an
 * ANNOUNCE of no lockspace for the configuration it sees (which would
 * make it a known daemon), then sends a LEAVE of LS as its node
 * (tests/test-cluster-cpg-stranger.sh); unsealed, both are dropped.
 *
 * With CPG_PEER_STOP=FILE in the environment it leaves as soon as FILE
 * exists (looked for every 100 ms), before its SECONDS are up: a test
 * that has seen what it wanted beside the peer need not wait them out.
 */
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <corosync/cpg.h>

#include "plugin/cpgmsg.h"

static void deliver(cpg_handle_t h, const struct cpg_name *g, uint32_t nodeid,
		    uint32_t pid, void *msg, size_t len)
{
}

/* The configuration as plugin/cluster.c's view_of() numbers it: FNV-1a
 * of the (node id, pid) pairs in ascending order (this test's copy). */
static uint32_t view;
static bool have_view;

static void confchg(cpg_handle_t h, const struct cpg_name *g,
		    const struct cpg_address *m, size_t nm,
		    const struct cpg_address *l, size_t nl,
		    const struct cpg_address *j, size_t nj)
{
	uint32_t v = 2166136261u;
	uint64_t prev = 0;

	for (size_t k = 0; k < nm; k++) {
		uint64_t next = UINT64_MAX;

		for (size_t i = 0; i < nm; i++) {
			uint64_t x = (uint64_t)m[i].nodeid << 32 | m[i].pid;

			if ((k == 0 || x > prev) && x < next)
				next = x;
		}
		for (int b = 0; b < 8; b++) {
			v ^= (uint8_t)(next >> (8 * b));
			v *= 16777619u;
		}
		prev = next;
	}
	if (!have_view) {	/* our own join: the one to answer */
		view = v;
		have_view = true;
	}
}

static cs_error_t send_buf(cpg_handle_t cpg, unsigned char *buf, size_t len)
{
	struct iovec iov = { .iov_base = buf, .iov_len = len };
	cs_error_t e = CS_ERR_TRY_AGAIN;

	for (int i = 0; i < 100 && e == CS_ERR_TRY_AGAIN; i++) {
		e = cpg_mcast_joined(cpg, CPG_TYPE_AGREED, &iov, 1);
		if (e == CS_ERR_TRY_AGAIN)
			usleep(20000);
	}
	return e;
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int main(int argc, char **argv)
{
	cpg_callbacks_t cb = { .cpg_deliver_fn = deliver,
			       .cpg_confchg_fn = confchg };
	static struct cm_start st;
	unsigned char buf[CM_MAX_LEN];
	struct cm_hdr h;
	struct cpg_name gn;
	struct iovec iov;
	cpg_handle_t cpg;
	unsigned int nodeid = 0;
	uint64_t end;
	long version, secs;
	const char *stop;
	bool forge;
	size_t len;
	cs_error_t e;
	int fd;

	if (argc < 3 || argc > 4 || (!strcmp(argv[1], "forge") && argc != 4)) {
		fprintf(stderr, "usage: cpg-peer VERSION SECONDS [LS]\n"
			"       cpg-peer forge SECONDS LS\n");
		return 2;
	}
	forge = !strcmp(argv[1], "forge");
	version = forge ? CM_VERSION : strtol(argv[1], NULL, 10);
	secs = strtol(argv[2], NULL, 10);
	if (version < 0 || version > 65535 || secs < 0 || secs > 600) {
		fprintf(stderr, "cpg-peer: bad VERSION or SECONDS\n");
		return 2;
	}
	e = cpg_initialize(&cpg, &cb);
	if (e != CS_OK) {
		fprintf(stderr, "cpg-peer: cpg_initialize: %d\n", (int)e);
		return 1;
	}
	cpg_local_get(cpg, &nodeid);
	memset(&gn, 0, sizeof(gn));
	gn.length = (uint32_t)snprintf(gn.value, sizeof(gn.value), "dlmd:daemon");
	for (int i = 0; i < 100; i++) {
		e = cpg_join(cpg, &gn);
		if (e != CS_ERR_TRY_AGAIN)
			break;
		usleep(20000);
	}
	if (e != CS_OK || cpg_fd_get(cpg, &fd) != CS_OK) {
		fprintf(stderr, "cpg-peer: cpg_join: %d\n", (int)e);
		cpg_finalize(cpg);
		return 1;
	}
	memset(&h, 0, sizeof(h));
	h.h_sender = nodeid;
	if (forge) {
		static struct cm_announce an;

		/* our join's confchg first (bounded: 10 s) */
		for (int i = 0; i < 100 && !have_view; i++) {
			struct pollfd p = { .fd = fd, .events = POLLIN };

			if (poll(&p, 1, 100) > 0 &&
			    cpg_dispatch(cpg, CS_DISPATCH_ALL) != CS_OK)
				break;
		}
		if (!have_view) {
			fprintf(stderr, "cpg-peer: no confchg of our join\n");
			cpg_finalize(cpg);
			return 1;
		}
		an.an_flags = CM_ANN_FIRST | CM_ANN_LAST;
		an.an_view = view;
		len = dlmd_cm_announce_encode(buf, &h, &an);
		e = len ? send_buf(cpg, buf, len) : CS_ERR_INVALID_PARAM;
		if (e == CS_OK) {
			len = dlmd_cm_ls_encode(buf, &h, CM_LEAVE, argv[3]);
			e = len ? send_buf(cpg, buf, len) : CS_ERR_INVALID_PARAM;
		}
		if (e != CS_OK) {
			fprintf(stderr, "cpg-peer: cannot send: %d\n", (int)e);
			cpg_finalize(cpg);
			return 1;
		}
		printf("cpg-peer: node %u in dlmd:daemon, sent an ANNOUNCE of "
		       "view %u and a LEAVE of %s\n", nodeid, view, argv[3]);
		fflush(stdout);
		goto stay;
	}
	memset(&st, 0, sizeof(st));
	snprintf(st.st_ls.n_name, sizeof(st.st_ls.n_name), "%s",
		 argc == 4 ? argv[3] : "cpgpeer");
	st.st_set.es_remaster_window = 32;	/* dlm.conf's default */
	st.st_nmembers = 1;
	st.st_members[0] = nodeid;
	len = dlmd_cm_start_encode(buf, &h, &st);
	buf[4] = (unsigned char)version;	/* the version field */
	buf[5] = (unsigned char)(version >> 8);
	iov.iov_base = buf;
	iov.iov_len = len;
	for (int i = 0; i < 100; i++) {
		e = cpg_mcast_joined(cpg, CPG_TYPE_AGREED, &iov, 1);
		if (e != CS_ERR_TRY_AGAIN)
			break;
		usleep(20000);
	}
	if (e != CS_OK) {
		fprintf(stderr, "cpg-peer: cpg_mcast_joined: %d\n", (int)e);
		cpg_finalize(cpg);
		return 1;
	}
	printf("cpg-peer: node %u in dlmd:daemon, sent a version %ld START\n",
	       nodeid, version);
	fflush(stdout);
stay:
	end = now_ms() + (uint64_t)secs * 1000;
	stop = getenv("CPG_PEER_STOP");
	while (now_ms() < end) {
		struct pollfd p = { .fd = fd, .events = POLLIN };

		if (stop && *stop && access(stop, F_OK) == 0)
			break;
		if (poll(&p, 1, 100) > 0 &&
		    cpg_dispatch(cpg, CS_DISPATCH_ALL) != CS_OK)
			break;
	}
	for (int i = 0; i < 100; i++) {
		e = cpg_leave(cpg, &gn);
		if (e != CS_ERR_TRY_AGAIN)
			break;
		usleep(20000);
	}
	cpg_finalize(cpg);
	return e == CS_OK ? 0 : 1;
}
