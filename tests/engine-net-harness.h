/*
 * tests/engine-net-harness.h - a few lock engines (core/), one per node
 * id 1..nnodes, sharing one lockspace and joined by an in-memory network
 * that a test drains explicitly and whose clock it moves by hand.  The
 * network can lose the next message of a chosen type, make a node deaf
 * (everything sent to it is lost) or stopped (everything sent to it
 * waits until release_held()).  Every completion AST is recorded, and
 * every blocking AST (of a lock that asked for them: want_bast).
 *
 * Used by the tests of the engine's timers that span nodes: the audit of
 * waiting locks (tests/test-audit.c) and deadlock detection
 * (tests/test-deadlock.c).  The engine's own unit tests have a richer
 * harness of their own (tests/test-core.h) that records every AST and
 * recovery callback.
 */
#ifndef DLMD_ENGINE_NET_HARNESS_H
#define DLMD_ENGINE_NET_HARNESS_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"
#include "core/wire.h"

#define ENET_MAXNODES	3
#define ENET_MAXQ	1024
#define ENET_MAXCOMP	64

struct qmsg {
	uint32_t from, to;
	size_t len;
	unsigned char buf[DLM_WIRE_MAX_LEN];
};

/* One completion or blocking AST as a node's engine reported it. */
struct comp {
	int node;
	uint32_t lkid;
	int type;	/* DLM_AST_COMP or DLM_AST_BAST */
	int status;
	int grmode;	/* COMP; BAST: the mode blocked (bastmode) */
};

struct net;

/* What the engines' callbacks are given: the network and the node. */
struct enet_node {
	struct net *n;
	int node;
};

struct net {
	int nnodes;
	struct dlm_core *core[ENET_MAXNODES + 1];
	struct dlm_ls *ls[ENET_MAXNODES + 1];
	struct enet_node nodes[ENET_MAXNODES + 1];
	struct qmsg q[ENET_MAXQ];
	size_t nq;
	uint64_t now;
	uint64_t step_ms;	/* pass() ticks every node this often */
	struct comp comps[ENET_MAXCOMP];
	int ncomps;
	/* faults */
	int lose_type;		/* drop the next message of this type ... */
	uint32_t lose_to;	/* ... to this node (0: any) */
	int lost;		/* how many were dropped that way */
	int deaf;		/* node whose incoming messages are all lost */
	int stopped;		/* node whose incoming messages wait ... */
	struct qmsg held[ENET_MAXQ];	/* ... here */
	size_t nheld;
	/* optional: sees every log line of every engine */
	void (*on_log)(struct net *n, int node, enum dlm_log_level level,
		       const char *line);
};

/* nnodes engines configured as 'cfg' (our_nodeid filled in), each with
 * lockspace 'lsname' of members 1..nnodes, clocks at 1000 ms. */
struct net *enet_new(int nnodes, const char *lsname,
		     const struct dlm_core_config *cfg, uint64_t step_ms);
void net_free(struct net *n);
/* Deliver everything queued (and what it causes), in order, applying the
 * faults set; asserts every delivered message is accepted. */
void drain(struct net *n);
/* Let ms pass on every node, in steps of step_ms, draining after each. */
void pass(struct net *n, uint64_t ms);
/* Queue again what a stopped node was sent, in order. */
void release_held(struct net *n);
/* The completions of lkid (0: of any lock) on node, and the last one's
 * status and granted mode (either may be NULL). */
int comps_of(struct net *n, int node, uint32_t lkid, int *status,
	     int *grmode);
/* The completion and blocking ASTs of lkid on node, in order: their
 * count, and the first 'max' of their types (DLM_AST_COMP, DLM_AST_BAST)
 * and modes (granted; blocked). */
int asts_of(struct net *n, int node, uint32_t lkid, int *types, int *modes,
	    int max);

#endif
