/*
 * plugin/daemon.c - the wiring of the daemon's files.
 *
 * Each file calls only files below it (plugin/dlmd.h has the order); what
 * a file below must report up goes through a table of function pointers
 * it is given at start.  comms.c's and fence.c's tables are filled by
 * cluster.c, the file right above them; the two tables below reach past
 * one level (engine.c to cluster.c and client.c, cluster.c to client.c
 * and view.c), so they are filled here, at the top, where every file is
 * known.  main.c and the fuzz targets start the daemon through
 * dlmd_daemon_start().
 */
#include <errno.h>
#include <string.h>

#include "plugin/dlmd.h"

static int ls_drop(struct dlmd *d, struct dlmd_ls *dl)
{
	return dlmd_ls_release(d, dl, true, NULL);
}

static const struct dlmd_cluster_up cluster_up = {
	.cu_ls_join_done = dlmd_ls_join_done,
	.cu_ls_drop = ls_drop,
	.cu_view_ls_changed = dlmd_view_ls_changed,
	.cu_view_nodes_changed = dlmd_view_nodes_changed,
};

static const struct dlmd_engine_up engine_up = {
	.eu_ast = dlmd_client_deliver_ast,
	.eu_recovery_done = dlmd_cluster_recovery_done,
	.eu_recovery_failed = dlmd_cluster_recovery_failed,
};

int dlmd_daemon_start(struct dlmd *d)
{
	int rv = dlmd_cluster_init(d, &cluster_up);

	if (rv) {
		/* The line before says which part failed (corosync, fencing,
		 * the node-to-node transport or its key). */
		log_err("cluster start-up (membership %s) failed: %s; not "
			"starting", dlmd_cluster_source_str(d), strerror(-rv));
		return rv;
	}
	rv = dlmd_engine_new(d, &engine_up);
	if (rv)
		log_err("cannot create the lock engine");
	return rv;
}
