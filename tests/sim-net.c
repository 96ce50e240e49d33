/*
 * tests/sim-net.c - the simulator's network.
 *
 * One queue per ordered pair of nodes (a link).  A message sent at time
 * 'now' gets a delivery time now + a random delay of 0..n_max_delay ms,
 * raised if needed to the delivery time of the message before it on the
 * same link: links are FIFO, as a TCP connection (or lowcomms' sequenced
 * delivery across reconnects) is.  Across links anything goes, so the
 * engines see every interleaving the delays allow.
 *
 * net_pick() chooses at random among the link heads that are due; the
 * simulator advances time to net_next_due() when none is.  A dead node's
 * traffic is dropped with net_drop_node() (--faults: what a dead node
 * sent is lost, and it receives nothing).  Each message carries the
 * sender's membership event, so that a rejection can be judged: only
 * between two live nodes of the same membership is it a violation.
 *
 * A partition (net_cut, --partitions) holds every message between the
 * cut-off nodes and the others, those in flight and those sent later,
 * until it heals: then they arrive, in order, as over a TCP connection
 * (or lowcomms' resend) that outlived a short cut.
 *
 * A link drop (net_link_drop, --link-drops: see dlm-sim.c, "LINK
 * DROPS") is the same for one pair of nodes, both ways, with no
 * membership change: what is in flight between them, and what either
 * sends the other until the connection is back, arrives after it, in
 * order, once.  The two directions come back a little apart (each
 * resends its own queue after the new HELLO).  A one-way drop is a
 * hold (lowcomms.c, HOLDING A NODE: a receiver whose engine could not
 * take a message reads nothing more from that peer until it resumes,
 * while its own messages still go).  With a broken transport
 * (--fault link-dup, link-lose) the first message in flight on each
 * direction is delivered twice, or never.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "tests/sim.h"

static bool crosses(const struct sim_net *net, uint32_t from, uint32_t to)
{
	/* a cut is a 32-bit mask: partitions run with at most
	 * SIM_FAULT_MAX_NODES nodes, a node past bit 31 is never in one */
	bool f = from <= 32 && (net->n_cut & (1u << (from - 1)));
	bool t = to <= 32 && (net->n_cut & (1u << (to - 1)));

	return f != t;
}

/* Cut the nodes in 'cut' (bit id - 1) off the others until heal_at. */
void net_cut(struct sim_net *net, uint32_t cut, uint64_t heal_at)
{
	unsigned int f, t;

	net->n_cut = cut;
	net->n_heal_at = heal_at;
	for (f = 1; f <= net->n_nodes; f++)
		for (t = 1; t <= net->n_nodes; t++) {
			struct sim_link *l = &net->n_link[f - 1][t - 1];
			struct sim_msg *m;

			if (!crosses(net, f, t))
				continue;
			for (m = l->l_head; m; m = m->m_next)
				if (m->m_due < heal_at)
					m->m_due = heal_at;
			if (l->l_head && l->l_last_due < heal_at)
				l->l_last_due = heal_at;
		}
}

/* The connection between nodes a and b drops now and is back at up_at
 * (each direction's resend a few ms apart): what is on either link, and
 * what is sent on it before then, arrives after, in order, once; or,
 * with 'broken', the first message on each link twice, or never.  With
 * 'one_way' only the link from a to b (a hold at b). */
void net_link_drop(struct sim_net *net, struct sim_rng *rng, uint32_t a,
		   uint32_t b, uint64_t up_at, bool one_way,
		   enum sim_link_fault broken)
{
	struct sim_link *ls[2] = { &net->n_link[a - 1][b - 1],
				   &net->n_link[b - 1][a - 1] };
	unsigned int k;

	for (k = 0; k < (one_way ? 1u : 2u); k++) {
		struct sim_link *l = ls[k];
		uint64_t up = up_at + rng_below(rng, net->n_max_delay + 1);
		struct sim_msg *m;

		if (l->l_down_until < up)
			l->l_down_until = up;
		for (m = l->l_head; m; m = m->m_next) {
			net->n_link_held++;
			if (m->m_due < l->l_down_until)
				m->m_due = l->l_down_until;
		}
		if (l->l_head && l->l_last_due < l->l_down_until)
			l->l_last_due = l->l_down_until;
		m = l->l_head;
		if (!m)
			continue;
		if (broken == LINK_FAULT_DUP) {
			/* resent after the reconnect, and not dropped as a
			 * duplicate by its receiver */
			struct sim_msg *dup = malloc(sizeof(*dup) + m->m_len);

			if (!dup)
				continue;
			memcpy(dup, m, sizeof(*dup) + m->m_len);
			m->m_next = dup;
			if (l->l_tail == m)
				l->l_tail = dup;
			l->l_sent++;
			net->n_inflight++;
			net->n_sent++;
		} else if (broken == LINK_FAULT_LOSE) {
			/* not resent after the reconnect */
			l->l_head = m->m_next;
			if (!l->l_head)
				l->l_tail = NULL;
			free(m);
			l->l_delivered++;
			net->n_inflight--;
		}
	}
}

void net_init(struct sim_net *net, unsigned int nnodes, uint32_t max_delay)
{
	memset(net, 0, sizeof(*net));
	net->n_nodes = nnodes;
	net->n_max_delay = max_delay;
}

int net_send(struct sim_net *net, struct sim_rng *rng, uint64_t now,
	     uint32_t from, uint32_t to, const void *buf, size_t len, uint32_t event)
{
	struct sim_link *l;
	struct sim_msg *m;
	uint64_t due;

	if (from < 1 || from > net->n_nodes || to < 1 || to > net->n_nodes)
		return -EINVAL;
	m = malloc(sizeof(*m) + len);
	if (!m)
		return -ENOMEM;
	l = &net->n_link[from - 1][to - 1];
	due = now + rng_below(rng, net->n_max_delay + 1) + net->n_lag;
	net->n_lag = 0;
	if (crosses(net, from, to) && now < net->n_heal_at && due < net->n_heal_at)
		due = net->n_heal_at;
	if (now < l->l_down_until) {
		net->n_link_held++;
		if (due < l->l_down_until)
			due = l->l_down_until;
	}
	if (due < l->l_last_due)
		due = l->l_last_due;
	l->l_last_due = due;
	m->m_next = NULL;
	m->m_due = due;
	m->m_event = event;
	m->m_from = from;
	m->m_to = to;
	m->m_len = len;
	memcpy(m->m_data, buf, len);
	if (l->l_tail)
		l->l_tail->m_next = m;
	else
		l->l_head = m;
	l->l_tail = m;
	l->l_sent++;
	net->n_inflight++;
	net->n_sent++;
	return 0;
}

/* Take a random due link head (the caller frees it), or NULL. */
struct sim_msg *net_pick(struct sim_net *net, struct sim_rng *rng, uint64_t now)
{
	struct sim_link *due[SIM_MAX_NODES * SIM_MAX_NODES];
	unsigned int ndue = 0, f, t;
	struct sim_link *l;
	struct sim_msg *m;

	if (!net->n_inflight)
		return NULL;
	for (f = 0; f < net->n_nodes; f++)
		for (t = 0; t < net->n_nodes; t++) {
			l = &net->n_link[f][t];
			if (l->l_head && l->l_head->m_due <= now)
				due[ndue++] = l;
		}
	if (!ndue)
		return NULL;
	l = due[rng_below(rng, ndue)];
	m = l->l_head;
	l->l_head = m->m_next;
	if (!l->l_head)
		l->l_tail = NULL;
	l->l_delivered++;
	net->n_inflight--;
	net->n_delivered++;
	return m;
}

/* Put m, just picked, back at the head of its link, due at 'due': its
 * receiver could not take it yet (dlm_core_receive's -ENOMEM); what
 * follows it on the link stays behind it. */
void net_requeue(struct sim_net *net, struct sim_msg *m, uint64_t due)
{
	struct sim_link *l = &net->n_link[m->m_from - 1][m->m_to - 1];

	m->m_due = due;
	m->m_next = l->l_head;
	l->l_head = m;
	if (!l->l_tail)
		l->l_tail = m;
	if (l->l_last_due < due)
		l->l_last_due = due;
	l->l_delivered--;
	net->n_inflight++;
	net->n_delivered--;
}

uint64_t net_next_due(const struct sim_net *net)
{
	uint64_t best = UINT64_MAX;
	unsigned int f, t;

	for (f = 0; f < net->n_nodes; f++)
		for (t = 0; t < net->n_nodes; t++) {
			const struct sim_msg *m = net->n_link[f][t].l_head;

			if (m && m->m_due < best)
				best = m->m_due;
		}
	return best;
}

static void link_clear(struct sim_net *net, struct sim_link *l)
{
	struct sim_msg *m, *next;

	for (m = l->l_head; m; m = next) {
		next = m->m_next;
		free(m);
		l->l_delivered++;
		net->n_inflight--;
	}
	l->l_head = l->l_tail = NULL;
	l->l_down_until = 0;	/* a node that comes back connects anew */
}

void net_drop_node(struct sim_net *net, uint32_t node)
{
	unsigned int i;

	for (i = 0; i < net->n_nodes; i++) {
		link_clear(net, &net->n_link[node - 1][i]);
		link_clear(net, &net->n_link[i][node - 1]);
	}
}

void net_free(struct sim_net *net)
{
	unsigned int f, t;

	for (f = 0; f < net->n_nodes; f++)
		for (t = 0; t < net->n_nodes; t++)
			link_clear(net, &net->n_link[f][t]);
}
