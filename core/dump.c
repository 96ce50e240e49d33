/*
 * core/dump.c - the debug dump of a lockspace, in the spirit of the
 * seeds' debugfs file, as stable text that tests and dlmctl read.
 *
 *   lockspace "<name>" id <8 hex> node <our id> members <id> <id> ...
 *   resource "<path>" master <id> <master-copy|local-copy|unknown> dir <id|parent> [lookup] [unused]
 *     lvb <64 hex> seq <n> <valid|invalid>         (on the master only)
 *     granted <lkid> <MODE> [range <hex>-<hex>] [node <id> remid <lkid>] [owner <n>] [orphan] [wait <op>] [token <n>]
 *     convert <lkid> <GRMODE>-><RQMODE> ...
 *     waiting <lkid> <RQMODE> ...
 *     lookup  <lkid> <RQMODE> ...               (waiting for the master)
 *       a queued lock on its master ends with " waits-for <lkid>,...":
 *       the locks (ids here) that keep it from being granted, the edges
 *       of the wait-for graph that core/deadlock.c chases; a process copy
 *       whose request a deadlock's victim cancels ends with " deadlock-victim"
 *   inflight "<path>"                             (after all resources)
 *     request <lkid> <RQMODE> ...               (request in flight)
 *   dirheld "<path>" node <id>                   (after those)
 *       a lookup of a name we direct, from the node its record names,
 *       held until the new master's DIR_MOVE moves the record (remastering:
 *       the node moved the resource away; resource.c dlm_dir_hold_lookup)
 *
 * "dir" is the node that holds a root resource's directory record; a
 * sub-resource has none (it is mastered with its parent, resource.c):
 * "dir parent".
 * Resources are listed in key order, locks in queue order.  A path is the
 * resource's name, or parent/child for sub-resources; bytes that are not
 * printable ASCII, and '"', '\' and '/', print as \xHH.  Lock ids and
 * remote ids are 8 hex digits.  "node" appears on master copies (the
 * owning node and its lock id) and on process copies of remotely
 * mastered resources ("node <master> remid <master copy id>").  "token"
 * is the fencing token (core/token.c, decimal) of a lock that holds CW,
 * PW or EX: the same number on the master's and the owner's copy, and
 * what dlm_ls_lock_token() gives the owner.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

struct outbuf {
	char *ob_buf;
	size_t ob_len;
	size_t ob_cap;
	int ob_err;
};

static void out(struct outbuf *ob, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void out(struct outbuf *ob, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (ob->ob_err)
		return;
	for (;;) {
		size_t room = ob->ob_cap - ob->ob_len;

		va_start(ap, fmt);
		n = vsnprintf(ob->ob_buf + ob->ob_len, room, fmt, ap);
		va_end(ap);
		if (n < 0) {
			ob->ob_err = -EINVAL;
			return;
		}
		if ((size_t)n < room) {
			ob->ob_len += (size_t)n;
			return;
		} else {
			size_t cap = ob->ob_cap * 2 + (size_t)n + 1;
			char *nb = realloc(ob->ob_buf, cap);

			if (!nb) {
				ob->ob_err = -ENOMEM;
				return;
			}
			ob->ob_buf = nb;
			ob->ob_cap = cap;
		}
	}
}

/* Bytes of a parent digest that a dump shows. */
#define DLM_KEY_DIGEST_PRINT	8

void dlm_key_format(const unsigned char *key, unsigned int keylen,
		    char *outs, size_t outlen)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	unsigned int i = 0, j0;

	if (!outlen)
		return;
	if (keylen > 1 + DLM_KEY_DIGEST_LEN && key[0] == DLM_KEY_DIGEST_MARK &&
	    outlen > 2 + 2 * DLM_KEY_DIGEST_PRINT + 6) {
		/* a deep sub-resource: "\#" (a name's backslash is always
		 * escaped, so no name prints this) and the parent digest's
		 * first bytes, then the name */
		outs[o++] = '\\';
		outs[o++] = '#';
		for (j0 = 0; j0 < DLM_KEY_DIGEST_PRINT; j0++) {
			outs[o++] = hex[key[1 + j0] >> 4];
			outs[o++] = hex[key[1 + j0] & 15];
		}
		i = 1 + DLM_KEY_DIGEST_LEN;
	}
	while (i < keylen && o + 5 < outlen) {
		unsigned int n = key[i++], j;

		if (o)
			outs[o++] = '/';
		for (j = 0; j < n && i < keylen && o + 5 < outlen; j++, i++) {
			unsigned char c = key[i];

			if (c >= 0x20 && c < 0x7f && c != '"' && c != '\\' &&
			    c != '/') {
				outs[o++] = (char)c;
			} else {
				outs[o++] = '\\';
				outs[o++] = 'x';
				outs[o++] = hex[c >> 4];
				outs[o++] = hex[c & 15];
			}
		}
	}
	outs[o] = '\0';
}

static const char *wait_str(int w)
{
	switch (w) {
	case DLM_WAIT_LOOKUP:
		return "lookup";
	case DLM_WAIT_REQUEST:
		return "request";
	case DLM_WAIT_CONVERT:
		return "convert";
	case DLM_WAIT_UNLOCK:
		return "unlock";
	case DLM_WAIT_CANCEL:
		return "cancel";
	default:
		return "none";
	}
}

struct edges {
	struct outbuf	*e_ob;
	bool		e_first;
};

static void dump_edge(void *arg, struct dlm_lkb *h)
{
	struct edges *e = arg;

	out(e->e_ob, "%s%08x", e->e_first ? " waits-for " : ",", h->lkb_id);
	e->e_first = false;
}

static void dump_lock(struct dlm_ls *ls, struct outbuf *ob, const char *what,
		      const struct dlm_rsb *r, const struct dlm_lkb *lkb)
{
	out(ob, "  %-7s %08x ", what, lkb->lkb_id);
	if (lkb->lkb_status == DLM_LKSTS_GRANTED)
		out(ob, "%s", dlm_mode_str(lkb->lkb_grmode));
	else if (lkb->lkb_status == DLM_LKSTS_CONVERT)
		out(ob, "%s->%s", dlm_mode_str(lkb->lkb_grmode),
		    dlm_mode_str(lkb->lkb_rqmode));
	else
		out(ob, "%s", dlm_mode_str(lkb->lkb_rqmode));
	if (lkb->lkb_status == DLM_LKSTS_GRANTED ||
	    lkb->lkb_status == DLM_LKSTS_CONVERT) {
		if (!dlm_range_is_whole(dlm_lkb_grrange(lkb)))
			out(ob, " range %" PRIx64 "-%" PRIx64,
			    dlm_lkb_grrange(lkb)->ra_start,
			    dlm_lkb_grrange(lkb)->ra_end);
	}
	if (lkb->lkb_status != DLM_LKSTS_GRANTED &&
	    !dlm_range_is_whole(dlm_lkb_rqrange(lkb)))
		out(ob, " rqrange %" PRIx64 "-%" PRIx64,
		    dlm_lkb_rqrange(lkb)->ra_start,
		    dlm_lkb_rqrange(lkb)->ra_end);
	if (is_master_copy(lkb))
		out(ob, " node %u remid %08x", lkb->lkb_nodeid, lkb->lkb_remid);
	else if (!is_master(ls, r) && r->res_nodeid)
		out(ob, " node %u remid %08x", r->res_nodeid, lkb->lkb_remid);
	if (!is_master_copy(lkb))
		out(ob, " owner %" PRIu64, lkb->lkb_ownerid);
	if (lkb->lkb_flags & LKBF_ORPHAN)
		out(ob, " orphan");
	if (lkb->lkb_wait_type != DLM_WAIT_NONE &&
	    lkb->lkb_wait_type != DLM_WAIT_LOOKUP)
		out(ob, " wait %s", wait_str(lkb->lkb_wait_type));
	if (holds_grmode(lkb) && dlm_lkb_token(lkb))
		out(ob, " token %" PRIu64, dlm_lkb_token(lkb));
	if ((lkb->lkb_status == DLM_LKSTS_WAITING ||
	     lkb->lkb_status == DLM_LKSTS_CONVERT) && is_master(ls, r)) {
		struct edges e = { ob, true };

		dlm_for_each_blocker(ls, r, lkb, dump_edge, &e);
	}
	if (lkb->lkb_flags & LKBF_DEADLK)
		out(ob, " deadlock-victim");
	out(ob, "\n");
}

static void dump_queue(struct dlm_ls *ls, struct outbuf *ob, const char *what,
		       const struct dlm_rsb *r, const struct dlm_list *q)
{
	const struct dlm_list *pos;

	dlm_list_for_each(pos, q)
		dump_lock(ls, ob, what, r,
			  dlm_container_of(pos, struct dlm_lkb, lkb_statequeue));
}

/* A resource to dump: an rsb, or a lone lock folded with its resource
 * (solo.c), held or tossed, which shows as the rsb and lkb it stands
 * for (dlm_solo_unfold makes exactly those) without being unfolded: a
 * dump every minute would otherwise undo the fold for good. */
struct dump_res {
	const unsigned char	*key;
	unsigned int		keylen;
	struct dlm_rsb		*r;
	const struct dlm_solo	*so;
};

static void collect_rsb(void *arg, struct dlm_hnode *n)
{
	struct dump_res **pp = arg;
	struct dlm_rsb *r = dlm_container_of(n, struct dlm_rsb, res_hnode);

	**pp = (struct dump_res){ r->res_key, r->res_keylen, r, NULL };
	(*pp)++;
}

static void collect_solo(void *arg, struct dlm_hnode *n)
{
	struct dump_res **pp = arg;
	const struct dlm_solo *so = dlm_container_of(n, struct dlm_solo,
						     so_keynode);

	**pp = (struct dump_res){ so->so_key, dlm_solo_keylen(so), NULL, so };
	(*pp)++;
}

static int cmp_res(const void *a, const void *b)
{
	const struct dump_res *x = a, *y = b;
	unsigned int n = x->keylen < y->keylen ? x->keylen : y->keylen;
	int c = memcmp(x->key, y->key, n);

	if (c)
		return c;
	return (int)x->keylen - (int)y->keylen;
}

/* As dump_lock and the resource's lines show its rsb and granted lkb:
 * mastered and directed here, its value never written (zeros, the
 * first sequence number, valid), the lock whole-range and idle. */
static void dump_solo(struct dlm_ls *ls, struct outbuf *ob,
		      const struct dlm_solo *so, const char *name)
{
	uint32_t us = dlm_our_nodeid(ls);
	int k;

	out(ob, "resource \"%s\" master %u master-copy dir %u%s\n", name, us,
	    dlm_dir_nodeid(ls, so->so_keynode.hn_hash),
	    dlm_solo_is_tossed(so) ? " unused" : "");
	out(ob, "  lvb ");
	for (k = 0; k < DLM_LVB_LEN; k++)
		out(ob, "00");
	out(ob, " seq %u valid\n", ls->ls_core->core_cfg.lvbseq_start);
	if (dlm_solo_is_tossed(so))
		return;
	out(ob, "  %-7s %08x %s owner %" PRIu64, "granted", dlm_solo_lkid(so),
	    dlm_mode_str(so->so_grmode), so->so_ownerid);
	if (dlm_token_mode(so->so_grmode) && so->so_token)
		out(ob, " token %" PRIu64, so->so_token);
	out(ob, "\n");
}

static void dump_dir_held(void *arg, const unsigned char *key,
			  unsigned int keylen, uint32_t node)
{
	char name[DLM_KEY_TEXT_LEN];

	dlm_key_format(key, keylen, name, sizeof(name));
	out(arg, "dirheld \"%s\" node %u\n", name, node);
}

int dlm_core_ls_dump(struct dlm_ls *ls, char **text)
{
	struct outbuf ob = { NULL, 0, 0, 0 };
	struct dump_res *all, *p;
	size_t n, i;
	char name[DLM_KEY_TEXT_LEN];
	unsigned int m;

	/* the rsbs and the lone locks' resources, held or tossed */
	n = ls->ls_rsbtbl.ht_count + ls->ls_solotbl.ht_count;
	all = malloc((n ? n : 1) * sizeof(*all));
	ob.ob_cap = 4096;
	ob.ob_buf = malloc(ob.ob_cap);
	if (!all || !ob.ob_buf) {
		free(all);
		free(ob.ob_buf);
		return -ENOMEM;
	}
	p = all;
	dlm_htab_walk(&ls->ls_rsbtbl, collect_rsb, &p);
	dlm_htab_walk(&ls->ls_solotbl, collect_solo, &p);
	qsort(all, n, sizeof(*all), cmp_res);

	out(&ob, "lockspace \"%s\" id %08x node %u members", ls->ls_name,
	    ls->ls_id, dlm_our_nodeid(ls));
	for (m = 0; m < ls->ls_nmembers; m++)
		out(&ob, " %u", ls->ls_members[m]);
	out(&ob, "\n");
	for (i = 0; i < n; i++) {
		struct dlm_rsb *r = all[i].r;
		int k;

		dlm_key_format(all[i].key, all[i].keylen, name, sizeof(name));
		if (!r) {
			dump_solo(ls, &ob, all[i].so, name);
			continue;
		}
		out(&ob, "resource \"%s\" master %u %s dir ", name,
		    r->res_nodeid,
		    !r->res_nodeid ? "unknown" :
		    is_master(ls, r) ? "master-copy" : "local-copy");
		if (r->res_parent)
			out(&ob, "parent");
		else
			out(&ob, "%u", dlm_dir_nodeid(ls, r->res_hnode.hn_hash));
		out(&ob, "%s%s\n",
		    (r->res_flags & RESF_LOOKUP) ? " lookup" : "",
		    (r->res_flags & RESF_TOSSED) ? " unused" : "");
		if (is_master(ls, r)) {
			out(&ob, "  lvb ");
			for (k = 0; k < DLM_LVB_LEN; k++)
				out(&ob, "%02x", (unsigned char)dlm_res_lvb(r)[k]);
			out(&ob, " seq %u %s\n", r->res_lvbseq,
			    (r->res_flags & RESF_VALNOTVALID) ? "invalid" : "valid");
		}
		dump_queue(ls, &ob, "granted", r, &r->res_grantq);
		dump_queue(ls, &ob, "convert", r, &r->res_convertq);
		dump_queue(ls, &ob, "waiting", r, &r->res_waitq);
		dump_queue(ls, &ob, "lookup", r, &r->res_lookupq);
	}
	free(all);
	/* requests in flight sit on no queue: list them from the waiters */
	{
		struct dlm_list *pos;

		dlm_list_for_each(pos, &ls->ls_waiters) {
			struct dlm_lkb *lkb = dlm_container_of(pos, struct dlm_lkb,
							       lkb_waiter);

			if (lkb->lkb_wait_type != DLM_WAIT_REQUEST)
				continue;
			dlm_key_format(lkb->lkb_rsb->res_key,
				       lkb->lkb_rsb->res_keylen, name, sizeof(name));
			out(&ob, "inflight \"%s\"\n", name);
			dump_lock(ls, &ob, "request", lkb->lkb_rsb, lkb);
		}
	}
	dlm_dir_held_each(ls, dump_dir_held, &ob);
	if (ob.ob_err) {
		free(ob.ob_buf);
		return ob.ob_err;
	}
	*text = ob.ob_buf;
	return 0;
}

/* ------------------------------------------------------------------ */
/* invariants                                                         */
/* ------------------------------------------------------------------ */

struct verify_ctx {
	struct dlm_ls *vc_ls;
	char *vc_why;
	size_t vc_len;
	int vc_err;
	uint64_t vc_ndlwait;	/* queued process copies (deadlock.c) */
	uint64_t vc_nlookups;	/* resources with a LOOKUP in flight */
	uint64_t vc_ntossed;	/* resources on the toss list */
};

static void verify_rsb(void *arg, struct dlm_hnode *n)
{
	struct verify_ctx *vc = arg;
	struct dlm_rsb *r = dlm_container_of(n, struct dlm_rsb, res_hnode);
	uint32_t count[DLM_NUM_MODES] = { 0 }, nranged = 0, nnoorder = 0, nlkbs = 0;

	if (r->res_flags & RESF_LOOKUP)
		vc->vc_nlookups++;
	if (r->res_flags & RESF_TOSSED)
		vc->vc_ntossed++;
	const struct dlm_list *qs[4] = { &r->res_grantq, &r->res_convertq,
					 &r->res_waitq, &r->res_lookupq };
	static const int sts[3] = { DLM_LKSTS_GRANTED, DLM_LKSTS_CONVERT,
				    DLM_LKSTS_WAITING };
	char name[DLM_KEY_TEXT_LEN];
	const struct dlm_list *pos;
	bool dlwait, want;
	int k, m;

	if (vc->vc_err)
		return;
	dlm_key_format(r->res_key, r->res_keylen, name, sizeof(name));
	for (k = 0; k < 4; k++) {
		dlm_list_for_each(pos, qs[k]) {
			const struct dlm_lkb *lkb = dlm_container_of(pos,
					struct dlm_lkb, lkb_statequeue);

			nlkbs++;
			if (lkb->lkb_rsb != r) {
				snprintf(vc->vc_why, vc->vc_len,
					 "%s: lock %08x on a queue of another resource",
					 name, lkb->lkb_id);
				vc->vc_err = -EUCLEAN;
				return;
			}
			if (k < 3 && lkb->lkb_status != sts[k]) {
				snprintf(vc->vc_why, vc->vc_len,
					 "%s: lock %08x on queue %d has status %d",
					 name, lkb->lkb_id, k, lkb->lkb_status);
				vc->vc_err = -EUCLEAN;
				return;
			}
			if (k < 2 && lkb->lkb_grmode >= 0) {
				count[lkb->lkb_grmode]++;
				if (!dlm_range_is_whole(dlm_lkb_grrange(lkb)))
					nranged++;
			}
			if (k == 2 && (lkb->lkb_exflags & DLM_LKF_NOORDER))
				nnoorder++;
			/* deadlock.c follows every queued process copy
			 * (but those it had no memory for, until a tick) */
			dlwait = lkb->lkb_flags & LKBF_DLWAIT;
			want = (k == 1 || k == 2) && !is_master_copy(lkb);
			if (dlwait != want &&
			    !(want && vc->vc_ls->ls_dl_unwatched)) {
				snprintf(vc->vc_why, vc->vc_len,
					 "%s: lock %08x on queue %d is %son ls_dlwait",
					 name, lkb->lkb_id, k,
					 (lkb->lkb_flags & LKBF_DLWAIT) ? "" : "not ");
				vc->vc_err = -EUCLEAN;
				return;
			}
			if (lkb->lkb_flags & LKBF_DLWAIT)
				vc->vc_ndlwait++;
		}
	}
	for (m = DLM_LOCK_NL + 1; m < DLM_NUM_MODES; m++) {
		/* a tossed rsb's counts are zero; its toss link has their
		 * place (core_internal.h) */
		uint32_t cnt = (r->res_flags & RESF_TOSSED) ? 0 :
			       r->res_grcount[m - 1];

		if (count[m] != cnt) {
			snprintf(vc->vc_why, vc->vc_len,
				 "%s: %u locks granted %s, counted %u", name,
				 count[m], dlm_mode_str(m), cnt);
			vc->vc_err = -EUCLEAN;
			return;
		}
	}
	if (nranged != ((r->res_flags & RESF_TOSSED) ? 0 : r->res_nranged) ||
	    nnoorder != r->res_nnoorder ||
	    nlkbs > r->res_nlkbs) {
		snprintf(vc->vc_why, vc->vc_len,
			 "%s: ranged %u/%u noorder %u/%u queued %u of %u held",
			 name, nranged, r->res_nranged, nnoorder, r->res_nnoorder,
			 nlkbs, r->res_nlkbs);
		vc->vc_err = -EUCLEAN;
	}
}

/* A count the lockspace keeps that is not what the resources say. */
static bool count_differs(char *why, size_t whylen, const char *what,
			  uint64_t counted, uint64_t kept)
{
	if (counted == kept)
		return false;
	snprintf(why, whylen, "%llu resources %s, the count says %llu",
		 (unsigned long long)counted, what, (unsigned long long)kept);
	return true;
}

int dlm_core_ls_verify(struct dlm_ls *ls, char *why, size_t whylen)
{
	struct verify_ctx vc = { ls, why, whylen, 0, 0, 0, 0 };
	const struct dlm_list *pos;
	uint64_t n = 0;

	dlm_htab_walk(&ls->ls_rsbtbl, verify_rsb, &vc);
	if (vc.vc_err)
		return vc.vc_err;
	if (dlm_solo_verify(ls, why, whylen))
		return -EUCLEAN;
	dlm_list_for_each(pos, &ls->ls_dlwait)
		n++;
	if (n != vc.vc_ndlwait) {
		snprintf(why, whylen, "ls_dlwait holds %llu locks, the queues %llu",
			 (unsigned long long)n, (unsigned long long)vc.vc_ndlwait);
		return -EUCLEAN;
	}
	if (count_differs(why, whylen, "look up their master (ls_nlookups)",
			  vc.vc_nlookups, ls->ls_nlookups) ||
	    count_differs(why, whylen, "are tossed (ls_ntossed)",
			  vc.vc_ntossed, ls->ls_ntossed))
		return -EUCLEAN;
	/* the master copies and records by node (resource.c) */
	if (dlm_bynode_verify(ls, why, whylen))
		return -EUCLEAN;
	/* the lookups the directory holds for a DIR_MOVE */
	return dlm_dir_held_verify(ls, why, whylen);
}
