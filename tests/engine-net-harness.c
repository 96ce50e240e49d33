/*
 * tests/engine-net-harness.c - engines on an in-memory network with
 * chosen faults: see tests/engine-net-harness.h.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "tests/engine-net-harness.h"

static void h_send(void *ctx, uint32_t to, const void *buf, size_t len)
{
	struct enet_node *c = ctx;
	struct net *n = c->n;

	assert_true(n->nq < ENET_MAXQ);
	assert_true(len <= sizeof(n->q[0].buf));
	n->q[n->nq].from = (uint32_t)c->node;
	n->q[n->nq].to = to;
	n->q[n->nq].len = len;
	memcpy(n->q[n->nq].buf, buf, len);
	n->nq++;
}

static void h_ast(void *ctx, const struct dlm_ast *a)
{
	struct enet_node *c = ctx;
	struct net *n = c->n;

	if (a->type != DLM_AST_COMP && a->type != DLM_AST_BAST)
		return;
	assert_true(n->ncomps < ENET_MAXCOMP);
	n->comps[n->ncomps].node = c->node;
	n->comps[n->ncomps].lkid = a->lkid;
	n->comps[n->ncomps].type = a->type;
	n->comps[n->ncomps].status = a->status;
	n->comps[n->ncomps].grmode = a->type == DLM_AST_BAST ? a->bastmode :
				     a->grmode;
	n->ncomps++;
}

static void h_log(void *ctx, enum dlm_log_level level, const char *line)
{
	struct enet_node *c = ctx;

	if (c->n->on_log)
		c->n->on_log(c->n, c->node, level, line);
	if (getenv("TEST_CORE_VERBOSE"))
		fprintf(stderr, "node %d: %s\n", c->node, line);
}

struct net *enet_new(int nnodes, const char *lsname,
		     const struct dlm_core_config *cfg, uint64_t step_ms)
{
	static const struct dlm_core_ops ops = {
		.send = h_send, .ast = h_ast, .log = h_log,
	};
	uint32_t members[ENET_MAXNODES];
	struct net *n = calloc(1, sizeof(*n));

	assert_non_null(n);
	assert_true(nnodes >= 1 && nnodes <= ENET_MAXNODES);
	n->nnodes = nnodes;
	n->now = 1000;
	n->step_ms = step_ms;
	for (int i = 0; i < nnodes; i++)
		members[i] = (uint32_t)(i + 1);
	for (int i = 1; i <= nnodes; i++) {
		struct dlm_core_config c = *cfg;

		c.our_nodeid = (uint32_t)i;
		n->nodes[i].n = n;
		n->nodes[i].node = i;
		n->core[i] = dlm_core_new(&c, &ops, &n->nodes[i]);
		assert_non_null(n->core[i]);
		dlm_core_tick(n->core[i], n->now);
		assert_int_equal(dlm_core_ls_create(n->core[i], lsname, members,
						    (unsigned int)nnodes, NULL,
						    &n->ls[i]), 0);
	}
	return n;
}

void net_free(struct net *n)
{
	for (int i = 1; i <= n->nnodes; i++)
		dlm_core_free(n->core[i]);
	free(n);
}

static int msg_type(const struct qmsg *m)
{
	return m->buf[6] | (m->buf[7] << 8);
}

void drain(struct net *n)
{
	for (int guard = 0; n->nq && guard < 100000; guard++) {
		struct qmsg m = n->q[0];

		memmove(n->q, n->q + 1, (n->nq - 1) * sizeof(n->q[0]));
		n->nq--;
		if ((int)m.to == n->deaf)
			continue;
		if ((int)m.to == n->stopped) {
			assert_true(n->nheld < ENET_MAXQ);
			n->held[n->nheld++] = m;
			continue;
		}
		if (n->lose_type && msg_type(&m) == n->lose_type &&
		    (!n->lose_to || m.to == n->lose_to)) {
			n->lose_type = 0;
			n->lost++;
			continue;
		}
		assert_int_equal(dlm_core_receive(n->core[m.to], m.from, m.buf,
						  m.len), 0);
	}
	assert_int_equal(n->nq, 0);
}

void pass(struct net *n, uint64_t ms)
{
	for (uint64_t t = 0; t < ms; t += n->step_ms) {
		n->now += n->step_ms;
		for (int i = 1; i <= n->nnodes; i++)
			dlm_core_tick(n->core[i], n->now);
		drain(n);
	}
}

void release_held(struct net *n)
{
	assert_true(n->nq + n->nheld <= ENET_MAXQ);
	memcpy(n->q + n->nq, n->held, n->nheld * sizeof(n->q[0]));
	n->nq += n->nheld;
	n->nheld = 0;
}

int comps_of(struct net *n, int node, uint32_t lkid, int *status,
	     int *grmode)
{
	int count = 0;

	for (int i = 0; i < n->ncomps; i++) {
		if (n->comps[i].node != node || n->comps[i].type != DLM_AST_COMP ||
		    (lkid && n->comps[i].lkid != lkid))
			continue;
		count++;
		if (status)
			*status = n->comps[i].status;
		if (grmode)
			*grmode = n->comps[i].grmode;
	}
	return count;
}

int asts_of(struct net *n, int node, uint32_t lkid, int *types, int *modes,
	    int max)
{
	int count = 0;

	for (int i = 0; i < n->ncomps; i++) {
		if (n->comps[i].node != node || n->comps[i].lkid != lkid)
			continue;
		if (count < max) {
			types[count] = n->comps[i].type;
			modes[count] = n->comps[i].grmode;
		}
		count++;
	}
	return count;
}
