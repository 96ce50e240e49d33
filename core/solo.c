/*
 * core/solo.c - lone locks folded with their resources (issue 14).
 *
 * The common lock is alone on its resource: a name locked by one client,
 * granted at once, whole range, no value block, unlocked later.  As an
 * lkb and an rsb that is two malloc chunks of 176 B and two hash
 * buckets, 360 B a lock at a million.  Folded, it is one struct
 * dlm_solo (about 100 B and its key, a 112 B chunk for a key of 8 B)
 * and its buckets in two tables of its own.
 *
 * When.  dlm_core_config.fold on; the lockspace running with this node
 * the name's directory node (its only member: no other node can name
 * the resource or the lock, and this node is its directory and master;
 * or beside other members: "Shared lockspaces" at the end; a name
 * another node directs folds once its lookup made this node master:
 * "Names other nodes direct"); a new request (not a conversion) on a root name with no rsb,
 * no directory record and no solo, without VALBLK, PERSISTENT, ORPHAN,
 * a parent, a value or a partial range.  Nothing else is there, so the
 * request is granted at once, whatever its mode and flags: dlm_solo_lock
 * does what request_lock, dispatch_request and grant_lock do for it and
 * casts the same completion.
 *
 * Kept apart.  A solo is in ls_solotbl (by key) and ls_soloids (by lock
 * id) and on its owner's ow_solos, never in ls_rsbtbl, ls_lkbtbl,
 * ls_dirtbl or on ow_locks, and is a type of its own: no walk, queue or
 * container_of of the other files can take it for an lkb or an rsb (the
 * confusion that would merge or lose two locks).  The few places that
 * must see every lock or every name ask here as well: lock ids handed
 * out (dlm_lkid_in_use), the counts (dlm_core_ls_stats), the walk
 * (dlm_core_ls_walk), verify, a purge and the drop of a lockspace.
 *
 * Done folded.  What leaves it a lone lock is done on it, answered as
 * the unfolded engine answers: a plain or forced unlock while running,
 * or one with VALBLK or IVVALBLK from below PW (which writes nothing:
 * do_unlock); a cancel (the lock is granted: nothing to cancel, -EBUSY,
 * with no memory needed); a conversion (alone, it is granted at once)
 * that neither writes nor invalidates the value (VALBLK or IVVALBLK
 * from PW or EX down), asks no partial range and no PERSISTENT, while
 * running: with VALBLK it reads the value, never written, so zeros
 * (dlm_solo_convert; lock.c convert_solo); a refused conversion; a
 * NOQUEUE request on its name that it refuses, without NOQUEUEBAST
 * (dlm_solo_refuse; lock.c solo_refuses); and a dump, which shows solos
 * as the rsbs and lkbs they stand for (dump.c): a monitor that dumps
 * every minute would otherwise undo the fold.
 *
 * Unfolded.  Anything else that reaches a solo's name or lock id makes
 * it an rsb and an lkb again first (dlm_solo_unfold), exactly those the
 * unfolded path would have made (the rsb its own directory record, the
 * lock granted on it with its token, its remastering count, what it
 * read), and then goes on as for any lock: a second request on the name
 * that it does not refuse, a request naming it as parent, a conversion
 * or an unlock that writes or invalidates the value, a conversion with
 * a partial range or PERSISTENT, any unlock or conversion while the
 * lockspace is stopped; those whose directory moves to a node that
 * joins, when a recovery starts, and those a recovery message names,
 * before it is taken ("Recovery", at the end); and the one a lock
 * message names, before it is taken ("Shared lockspaces").  A dump
 * shows solos as they are.
 * Unfolding allocates, so it can fail: each unfold is whole or nothing
 * (an rsb and an lkb are made first; only then does the solo go), and
 * the call that needed it fails -ENOMEM having changed nothing else (a
 * recovery start fails and is run again; a message is not taken, and is
 * offered again).  Solos unfolded before a failure stay unfolded: they
 * are ordinary locks, just bigger.
 *
 * Tossed.  Unlocked (or purged), a solo stays as its resource tossed,
 * as an unused rsb does (resource.c, "Toss list"): so_grmode
 * DLM_LOCK_IV, in ls_solotbl only (its id goes), on ls_solo_toss by
 * so_ownerqueue, so_toss_time its time there; counted in ls_tossed.
 * dlm_toss_expire drops it at toss_ms, dlm_toss_trim first when more
 * than max_tossed resources are tossed in all; a lock on its name that
 * may fold takes it again (no allocation, and the name's bucket chain
 * holds it first: at 10M held, looking up a name that is not there at
 * all walked chains of cold records, 3/4 of a pair's time); anything
 * else drops it, as its expiry would: a tossed resource that never had
 * a value block and no other node knows holds nothing a new one lacks.
 *
 * What differs from the unfolded path.  Its lock's place on ow_locks is
 * taken when it unfolds (an owner's locks are only ever purged newest
 * first for children's sake, and a solo has none).  A purge tosses an
 * owner's solos at once, stopped or not (a purged lock gets no AST and
 * a solo blocks nobody).  A tossed resource that is dropped early (by a
 * request that does not fold, a recovery, a message, a dump) is not
 * counted in ls_toss_evicted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/core_internal.h"

/* The lkb table's hash of an id is the id (resource.c lkid_hash); the
 * solo id table's the same, for the same reasons. */
static uint32_t soloid_hash(uint32_t id)
{
	return id;
}

static struct dlm_solo *solo_of_id(struct dlm_hnode *n)
{
	return dlm_container_of(n, struct dlm_solo, so_idnode);
}

static struct dlm_solo *solo_of_key(struct dlm_hnode *n)
{
	return dlm_container_of(n, struct dlm_solo, so_keynode);
}


static uint32_t solo_exflags(const struct dlm_solo *so)
{
	return so->so_idnode.hn_spare;
}

struct dlm_solo *dlm_solo_find_id(struct dlm_ls *ls, uint32_t id)
{
	struct dlm_hnode *n;

	if (!id || !ls->ls_soloids.ht_count)
		return NULL;
	for (n = dlm_htab_chain(&ls->ls_soloids, soloid_hash(id)); n;
	     n = n->hn_next)
		if (n->hn_hash == id)
			return solo_of_id(n);
	return NULL;
}

/* A solo named key, held or tossed (dlm_solo_is_tossed). */
struct dlm_solo *dlm_solo_find_key(struct dlm_ls *ls, const unsigned char *key,
				   unsigned int keylen, uint32_t hash)
{
	struct dlm_hnode *n;

	if (!ls->ls_solotbl.ht_count)
		return NULL;
	for (n = dlm_htab_chain(&ls->ls_solotbl, hash); n; n = n->hn_next) {
		struct dlm_solo *so = solo_of_key(n);

		if (n->hn_hash == hash && dlm_solo_keylen(so) == keylen &&
		    !memcmp(so->so_key, key, keylen))
			return so;
	}
	return NULL;
}

/* so_flags: folded once a lookup made this node master of a name another
 * node directed ("Names other nodes direct"): its record is (or was) on
 * that node, which the directory step tells again (recover.c step_dir).
 * Not an LKBF_ flag: masked off at the unfold. */
#define SOLO_REMOTE	0x80000000u

/* The request flags a folded lock may carry: those that change nothing
 * for a request granted at once on an empty resource, or only matter
 * later to a conversion (which unfolds it and finds them in exflags). */
#define SOLO_FLAGS (DLM_LKF_NOQUEUE | DLM_LKF_CONVDEADLK | DLM_LKF_NODLCKWT | \
		    DLM_LKF_EXPEDITE | DLM_LKF_NOQUEUEBAST | DLM_LKF_HEADQUE | \
		    DLM_LKF_NOORDER | DLM_LKF_ALTPR | DLM_LKF_ALTCW)

/* May req (a valid new request whose range is 'range') be folded, if its
 * name turns out to be free and this node directs it
 * (dlm_solo_may_fold_name)?  See "When" above. */
bool dlm_solo_may_fold(struct dlm_ls *ls, const struct dlm_lock_req *req,
		       const struct dlm_range *range)
{
	return ls->ls_core->core_cfg.fold && dlm_ls_running(ls) &&
	       !(req->flags & ~(uint32_t)SOLO_FLAGS) && !req->parent &&
	       !req->lvb && dlm_range_is_whole(range);
}

static void solo_ast(struct dlm_ls *ls, const struct dlm_solo *so,
		     int status, uint64_t astarg)
{
	struct dlm_core *core = ls->ls_core;
	struct dlm_ast ast = {
		.type = DLM_AST_COMP, .ls = ls, .ls_ctx = ls->ls_ctx,
		.lkid = dlm_solo_lkid(so), .owner = so->so_ownerid,
		.astarg = astarg, .status = status,
		.grmode = so->so_grmode, .bastmode = DLM_LOCK_IV,
	};

	if (status == 0 && dlm_token_mode(so->so_grmode))
		ast.token = so->so_token;
	/* what it read: the value, never written (cast_local) */
	if (status == 0 && (so->so_flags & LKBF_VALBLK))
		ast.lvb = dlm_lvb_zero;
	core->core_ops.ast(core->core_ctx, &ast);
}

/* req granted at once as a solo named key (hash): 'tossed', the name's
 * tossed solo, taken again; or NULL, and the name has no rsb, no
 * directory record and no solo.  The caller checked dlm_solo_may_fold
 * and req->newid.  -ENOMEM having changed nothing. */
int dlm_solo_lock(struct dlm_ls *ls, const struct dlm_lock_req *req,
		  struct dlm_solo *tossed, const unsigned char *key,
		  unsigned int keylen, uint32_t hash, uint32_t *lkid_out)
{
	struct dlm_owner *ow;
	struct dlm_solo *so = tossed;

	ow = dlm_owner_get(ls, req->owner, true);
	if (!ow)
		return -ENOMEM;
	if (so) {
		uint32_t remote = so->so_flags & SOLO_REMOTE;

		dlm_list_del(&so->so_ownerqueue);
		ls->ls_nsolo_tossed--;
		memset(&so->so_idnode, 0, offsetof(struct dlm_solo, so_key) -
					  offsetof(struct dlm_solo, so_idnode));
		so->so_flags = remote;
	} else {
		so = dlm_malloc(ls->ls_core,
				offsetof(struct dlm_solo, so_key) + keylen);
		if (!so) {
			dlm_owner_put(ls, ow);
			return -ENOMEM;
		}
		memset(so, 0, offsetof(struct dlm_solo, so_key));
		memcpy(so->so_key, key, keylen);
		so->so_keynode.hn_hash = hash;
		so->so_keynode.hn_spare = keylen;
	}
	/* made, or tossed, while running: in this event */
	so->so_de_event = ls->ls_event;
	so->so_idnode.hn_hash = req->newid ? req->newid : dlm_lkid_new(ls);
	so->so_idnode.hn_spare = req->flags;
	so->so_ownerid = req->owner;
	so->so_astarg = req->astarg;
	so->so_dl_waiter = req->waiter;
	if (req->want_bast)
		so->so_flags |= LKBF_WANT_BAST;
	if (req->waiter && (req->waiter_flags & DLM_WAITER_XID))
		so->so_flags |= LKBF_DLXID;
	if (req->waiter_flags & DLM_WAITER_ASYNC)
		so->so_flags |= LKBF_DLASYNC;
	so->so_grmode = (int8_t)req->mode;
	so->so_token = dlm_token_mode(req->mode) ? dlm_token_mint(ls) : 0;
	/* a tossed one is its record still, confirmed when it was made */
	if (!tossed)
		dlm_htab_insert(&ls->ls_solotbl, &so->so_keynode);
	dlm_htab_insert(&ls->ls_soloids, &so->so_idnode);
	dlm_list_add_tail(&so->so_ownerqueue, &ow->ow_solos);
	*lkid_out = dlm_solo_lkid(so);
	solo_ast(ls, so, 0, so->so_astarg);
	return 0;
}

/* Take held so out of its id table and its owner's list, and out of
 * the key table too unless it stays there tossed; the owner record goes
 * if that was its last lock and put_owner says so. */
static void solo_unlink(struct dlm_ls *ls, struct dlm_solo *so, bool put_owner,
			bool keep_key)
{
	if (!keep_key)
		dlm_htab_remove(&ls->ls_solotbl, &so->so_keynode);
	dlm_htab_remove(&ls->ls_soloids, &so->so_idnode);
	dlm_list_del(&so->so_ownerqueue);
	if (put_owner) {
		struct dlm_owner *ow = dlm_owner_get(ls, so->so_ownerid, false);

		if (ow)
			dlm_owner_put(ls, ow);
	}
}

/* Held so, unlinked but for its key, becomes its resource tossed. */
static void solo_toss(struct dlm_ls *ls, struct dlm_solo *so)
{
	uint32_t remote = so->so_flags & SOLO_REMOTE;

	memset(&so->so_idnode, 0, offsetof(struct dlm_solo, so_key) -
				  offsetof(struct dlm_solo, so_idnode));
	so->so_flags = remote;
	so->so_grmode = DLM_LOCK_IV;
	so->so_de_event = ls->ls_event;
	so->so_toss_time = ls->ls_core->core_now;
	dlm_list_add_tail(&so->so_ownerqueue, &ls->ls_solo_toss);
	ls->ls_nsolo_tossed++;
}

static bool solo_directed_here(struct dlm_ls *ls, const struct dlm_solo *so);
static void solo_forget(struct dlm_ls *ls, struct dlm_solo *so);
static void solo_send_remove(struct dlm_ls *ls, const struct dlm_solo *so);

/* Tossed so goes, with its directory record: as toss_drop drops an rsb
 * mastered here (a record elsewhere is told, REMOVE: "Names other nodes
 * direct"). */
static void solo_toss_drop(struct dlm_ls *ls, struct dlm_solo *so)
{
	if (!solo_directed_here(ls, so))
		solo_send_remove(ls, so);
	solo_forget(ls, so);
}

/* Tossed so goes, its record already dealt with. */
static void solo_forget(struct dlm_ls *ls, struct dlm_solo *so)
{
	dlm_list_del(&so->so_ownerqueue);
	ls->ls_nsolo_tossed--;
	dlm_htab_remove(&ls->ls_solotbl, &so->so_keynode);
	if (so->so_flags & SOLO_REMOTE)
		ls->ls_nsolo_remote--;
	free(so);
}

/* A plain (or forced) unlock of a granted lone lock, running: what
 * unlock_lkb and finish_lkb do for it; its resource is tossed. */
int dlm_solo_unlock(struct dlm_ls *ls, struct dlm_solo *so,
		    const struct dlm_unlock_req *req)
{
	solo_ast(ls, so, -DLM_EUNLOCK, req->astarg);
	solo_unlink(ls, so, true, true);
	solo_toss(ls, so);
	return 0;
}

/* A conversion of held so that leaves it a lone lock (lock.c
 * convert_solo checked it): what convert_lock, convert_here, do_convert
 * and grant_lock do for it.  Alone, it is granted at once; the value is
 * neither written nor invalidated (convert_solo), so with VALBLK the
 * lock reads it: zeros, valid, the first sequence number.  1: too many
 * conversions to count here (so_nconv), it must be an lkb first. */
int dlm_solo_convert(struct dlm_ls *ls, struct dlm_solo *so,
		     const struct dlm_lock_req *req, uint32_t *lkid_out)
{
	bool writes = so->so_grmode >= DLM_LOCK_PW &&
		      req->mode <= so->so_grmode;

	if (so->so_nconv == UINT16_MAX)
		return 1;
	so->so_nconv++;
	so->so_idnode.hn_spare = req->flags;
	so->so_astarg = req->astarg;
	so->so_dl_waiter = req->waiter;
	so->so_flags &= ~(uint32_t)(LKBF_WANT_BAST | LKBF_DLXID | LKBF_DLASYNC |
				    LKBF_VALBLK);
	if (req->want_bast)
		so->so_flags |= LKBF_WANT_BAST;
	if (req->waiter && (req->waiter_flags & DLM_WAITER_XID))
		so->so_flags |= LKBF_DLXID;
	if (req->waiter_flags & DLM_WAITER_ASYNC)
		so->so_flags |= LKBF_DLASYNC;
	if (req->flags & DLM_LKF_VALBLK)
		so->so_flags |= LKBF_VALBLK;
	/* grant_lock: a writer without VALBLK writes nothing and keeps
	 * what it knew; a reader reads, or forgets without VALBLK */
	if (!writes) {
		if (req->flags & DLM_LKF_VALBLK) {
			so->so_flags |= LKBF_LVB_KNOWN;
			so->so_lvbread = 1;
		} else {
			so->so_flags &= ~(uint32_t)LKBF_LVB_KNOWN;
		}
	}
	so->so_grmode = (int8_t)req->mode;
	so->so_token = dlm_token_mode(req->mode) ? dlm_token_mint(ls) : 0;
	*lkid_out = dlm_solo_lkid(so);
	solo_ast(ls, so, 0, so->so_astarg);
	return 0;
}

/* A NOQUEUE request on held so's name that so refuses (lock.c
 * solo_refuses), as request_lock, do_request and finish_lkb refuse it:
 * a lock id taken (or the client's own), the remastering count of the
 * request (so_nconv), the completion -EAGAIN, and nothing left of it.
 * So a try-lock on a held lone lock does not unfold it (and needs no
 * memory).  1: too many operations to count here, it must unfold. */
int dlm_solo_refuse(struct dlm_ls *ls, struct dlm_solo *so,
		    const struct dlm_lock_req *req, uint32_t *lkid_out)
{
	struct dlm_core *core = ls->ls_core;
	struct dlm_ast ast = {
		.type = DLM_AST_COMP, .ls = ls, .ls_ctx = ls->ls_ctx,
		.owner = req->owner, .astarg = req->astarg,
		.status = -EAGAIN, .grmode = DLM_LOCK_IV,
		.bastmode = DLM_LOCK_IV,
	};

	if (so->so_nconv == UINT16_MAX)
		return 1;
	so->so_nconv++;
	ast.lkid = req->newid ? req->newid : dlm_lkid_new(ls);
	*lkid_out = ast.lkid;
	core->core_ops.ast(core->core_ctx, &ast);
	return 0;
}

/* Tossed solos older than toss_ms (all with 'all'), as dlm_toss_expire
 * drops rsbs. */
void dlm_solo_toss_expire(struct dlm_ls *ls, uint64_t now, bool all)
{
	uint32_t toss_ms = ls->ls_core->core_cfg.toss_ms;

	while (!dlm_list_empty(&ls->ls_solo_toss)) {
		struct dlm_solo *so = dlm_list_first(&ls->ls_solo_toss,
						     struct dlm_solo,
						     so_ownerqueue);

		if (!all && (uint32_t)now - (uint32_t)so->so_toss_time < toss_ms)
			break;
		solo_toss_drop(ls, so);
	}
}

/* Past max_tossed resources tossed in all (rsbs and solos), the oldest
 * tossed solos go now, as dlm_toss_trim drops rsbs (and only where it
 * may: see there); then dlm_toss_trim trims the rsbs. */
void dlm_solo_toss_trim(struct dlm_ls *ls)
{
	uint32_t max = ls->ls_core->core_cfg.max_tossed;

	if (!max || !dlm_ls_running(ls))
		return;
	while (ls->ls_nsolo_tossed &&
	       ls->ls_ntossed + ls->ls_nsolo_tossed > max) {
		solo_toss_drop(ls, dlm_list_first(&ls->ls_solo_toss,
						  struct dlm_solo,
						  so_ownerqueue));
		ls->ls_toss_evicted++;
	}
}

/* The event of so's record, unfolded: the one it was made in while the
 * lockspace runs; while it does not, the recovery's own, which kept it
 * (a solo stays folded through a recovery, "Recovery" below, and is its
 * record, registered by its master with its directory node, this one):
 * unfolded before a full rebuild's sweep, an older event would have
 * dlm_dir_sweep take the record of a resource this node masters. */
static uint32_t solo_de_event(const struct dlm_ls *ls,
			      const struct dlm_solo *so)
{
	return dlm_ls_running(ls) ? so->so_de_event : ls->ls_event;
}

static int solo_unfold_tossed(struct dlm_ls *ls, struct dlm_solo *so);

/* r, just made for a solo while the lockspace does not run, on a name
 * another node directs: the recovery's steps look at it from here
 * (recover.c dlm_recover_track_rsb), so the directory step registers it
 * as it would have registered the solo (dir_register_solos), which is
 * gone.  Unregistered, a full rebuild's sweep lost its record and the
 * next asker became a second master (dlm-sim --fold --faults seed 26:
 * a conversion while stopped unfolded it between step_start and the
 * directory step).  -ENOMEM, or 0. */
static int solo_track(struct dlm_ls *ls, struct dlm_rsb *r)
{
	if (dlm_ls_running(ls) ||
	    dlm_dir_nodeid(ls, r->res_hnode.hn_hash) == dlm_our_nodeid(ls))
		return 0;
	return dlm_recover_track_rsb(ls, r);
}

/* so as the rsb and lkb it stands for; whole or nothing. */
int dlm_solo_unfold(struct dlm_ls *ls, struct dlm_solo *so)
{
	unsigned int keylen = dlm_solo_keylen(so);
	uint32_t hash = so->so_keynode.hn_hash, us = dlm_our_nodeid(ls);
	struct dlm_owner *ow;
	struct dlm_lkb *lkb;
	struct dlm_rsb *r;

	if (dlm_solo_is_tossed(so)) {
		/* as its expiry would (see "Tossed" above); on a name
		 * another node directs, the tossed rsb it stands for, whose
		 * record there names us ("Names other nodes direct") */
		if (!solo_directed_here(ls, so))
			return solo_unfold_tossed(ls, so);
		solo_toss_drop(ls, so);
		return 0;
	}
	ow = dlm_owner_get(ls, so->so_ownerid, false);
	if (!ow)
		return -EUCLEAN;	/* dlm_solo_verify says so too */
	r = dlm_rsb_create(ls, so->so_key, keylen, hash);
	if (!r)
		return -ENOMEM;
	/* a new rsb is on no list and no directory record yet: freed, it
	 * leaves nothing behind */
	lkb = dlm_lkb_create(ls, dlm_solo_lkid(so));
	if (!lkb || solo_track(ls, r)) {
		if (lkb)
			dlm_lkb_free(ls, lkb);
		dlm_rsb_free(ls, r);
		return -ENOMEM;
	}
	solo_unlink(ls, so, false, false);

	r->res_nodeid = us;
	if (solo_directed_here(ls, so))
		dlm_dir_self_adopt(ls, r, solo_de_event(ls, so));
	/* its request, its conversions and the requests it refused
	 * (do_request and do_convert count each) */
	dlm_remaster_count(ls, r, us);
	while (so->so_nconv--)
		dlm_remaster_count(ls, r, us);
	lkb->lkb_flags = (so->so_flags & ~SOLO_REMOTE) | LKBF_OWNED;
	if (so->so_lvbread)
		lkb->lkb_lvbseq = ls->ls_core->core_cfg.lvbseq_start;
	lkb->lkb_exflags = solo_exflags(so);
	lkb->lkb_ownerid = so->so_ownerid;
	lkb->lkb_astarg = so->so_astarg;
	lkb->lkb_dl_waiter = so->so_dl_waiter;
	dlm_list_add_tail(&lkb->lkb_ownerqueue, &ow->ow_locks);
	lkb->lkb_rsb = r;
	dlm_rsb_hold(ls, r);
	dlm_grant_unfolded(ls, r, lkb, so->so_grmode);
	lkb->lkb_token = so->so_token;
	if (so->so_flags & SOLO_REMOTE)
		ls->ls_nsolo_remote--;
	free(so);
	return 0;
}

int dlm_solo_unfold_id(struct dlm_ls *ls, uint32_t id)
{
	struct dlm_solo *so = dlm_solo_find_id(ls, id);

	return so ? dlm_solo_unfold(ls, so) : 0;
}

int dlm_solo_unfold_key(struct dlm_ls *ls, const unsigned char *key,
			unsigned int keylen, uint32_t hash)
{
	struct dlm_solo *so = dlm_solo_find_key(ls, key, keylen, hash);

	return so ? dlm_solo_unfold(ls, so) : 0;
}

/* Every solo (what a recovery start did before "Recovery"; now only
 * bench-core --unfold, which times it); on -ENOMEM those unfolded stay
 * so (ordinary locks).  By owner, oldest first: unfolding changes
 * neither the owner table nor the owners (the solo tables shrink as they empty, which a walk of
 * theirs would not survive). */
int dlm_solo_unfold_all(struct dlm_ls *ls)
{
	size_t b;

	dlm_solo_toss_expire(ls, 0, true);
	for (b = 0; b < ls->ls_ownertbl.ht_nbuckets &&
		    ls->ls_soloids.ht_count; b++) {
		struct dlm_hnode *n;

		for (n = ls->ls_ownertbl.ht_buckets[b]; n; n = n->hn_next) {
			struct dlm_owner *ow = dlm_container_of(n, struct dlm_owner,
								ow_hnode);

			while (!dlm_list_empty(&ow->ow_solos)) {
				int rv = dlm_solo_unfold(ls,
					dlm_list_first(&ow->ow_solos,
						       struct dlm_solo,
						       so_ownerqueue));

				if (rv)
					return rv;
			}
		}
	}
	return ls->ls_soloids.ht_count ? -EUCLEAN : 0;
}

/* The owner's solos are unlocked, with no AST (a purge), their
 * resources tossed; how many.  The caller puts the owner. */
int dlm_solo_purge_owner(struct dlm_ls *ls, struct dlm_owner *ow)
{
	int count = 0;

	while (!dlm_list_empty(&ow->ow_solos)) {
		struct dlm_solo *so = dlm_list_first(&ow->ow_solos,
						     struct dlm_solo,
						     so_ownerqueue);

		solo_unlink(ls, so, false, true);
		solo_toss(ls, so);
		count++;
	}
	return count;
}

static void free_hnode_solo(void *arg, struct dlm_hnode *n)
{
	(void)arg;
	free(solo_of_id(n));
}

/* ls_solotbl's nodes: the tossed are freed here, the held with
 * ls_soloids'. */
static void free_hnode_tossed(void *arg, struct dlm_hnode *n)
{
	struct dlm_solo *so = solo_of_key(n);

	(void)arg;
	if (dlm_solo_is_tossed(so))
		free(so);
}

/* Every solo freed, with nothing cast (the lockspace goes); the owner
 * records go with their table (dlm_lock_drop_all). */
void dlm_solo_drop_all(struct dlm_ls *ls)
{
	dlm_htab_drain(&ls->ls_solotbl, free_hnode_tossed, NULL);
	dlm_htab_drain(&ls->ls_soloids, free_hnode_solo, NULL);
	dlm_list_init(&ls->ls_solo_toss);
	ls->ls_nsolo_tossed = 0;
	ls->ls_nsolo_remote = 0;
}

struct solo_walk {
	struct dlm_ls *ls;
	void (*fn)(void *arg, const struct dlm_lock_info *li);
	void *arg;
};

static void walk_solo(void *arg, struct dlm_hnode *n)
{
	struct solo_walk *w = arg;
	struct dlm_solo *so = solo_of_id(n);
	struct dlm_lock_info li;

	/* as lock.c walk_one describes the lock unfolded */
	memset(&li, 0, sizeof(li));
	li.lkid = dlm_solo_lkid(so);
	li.nodeid = dlm_our_nodeid(w->ls);
	li.is_master = 1;
	li.status = DLM_LKSTS_GRANTED;
	li.grmode = so->so_grmode;
	li.rqmode = DLM_LOCK_IV;
	li.grrange = dlm_range_whole;
	li.rqrange = dlm_range_whole;
	li.owner = so->so_ownerid;
	li.exflags = solo_exflags(so);
	if (dlm_token_mode(so->so_grmode))
		li.token = so->so_token;
	li.key = so->so_key;
	li.keylen = dlm_solo_keylen(so);
	w->fn(w->arg, &li);
}

void dlm_solo_walk(struct dlm_ls *ls,
		   void (*fn)(void *arg, const struct dlm_lock_info *li),
		   void *arg)
{
	struct solo_walk w = { ls, fn, arg };

	dlm_htab_walk(&ls->ls_soloids, walk_solo, &w);
}

static int solo_verify_directed(struct dlm_ls *ls, char *why, size_t whylen);

struct solo_verify {
	struct dlm_ls *ls;
	const char *bad;
	uint32_t lkid;
};

static void verify_solo(void *arg, struct dlm_hnode *n)
{
	struct solo_verify *v = arg;
	struct dlm_ls *ls = v->ls;
	struct dlm_solo *so = solo_of_id(n);
	const unsigned char *key = so->so_key;
	unsigned int keylen = dlm_solo_keylen(so);
	uint32_t hash = so->so_keynode.hn_hash;
	struct dlm_owner *ow;

	if (v->bad)
		return;
	v->lkid = dlm_solo_lkid(so);
	if (dlm_solo_is_tossed(so)) {
		v->bad = "is held and tossed";
		return;
	}
	ow = dlm_owner_get(ls, so->so_ownerid, false);
	if (dlm_solo_find_key(ls, key, keylen, hash) != so)
		v->bad = "is not found by its key";
	else if (hash != dlm_hash_bytes(key, keylen))
		v->bad = "has a key whose hash is not its own";
	else if (dlm_lkb_find(ls, dlm_solo_lkid(so)))
		v->bad = "has the id of an lkb";
	else if (dlm_rsb_find(ls, key, keylen, hash))
		v->bad = "has the name of an rsb";
	else if (dlm_dir_has_record(ls, key, keylen, hash))
		v->bad = "has a directory record apart";
	else if (!ow)
		v->bad = "has no owner record";
	else if (so->so_grmode > DLM_LOCK_EX)
		v->bad = "holds no mode";
}

/* Each held solo found by key and by id, in neither rsb, lkb nor
 * directory table, with an owner record; the owners' lists hold them
 * all; each tossed one found by key, with no id, in no other table, on
 * ls_solo_toss, which holds them all. */
int dlm_solo_verify(struct dlm_ls *ls, char *why, size_t whylen)
{
	struct solo_verify v = { ls, NULL, 0 };
	size_t owned = 0, tossed = 0, b;
	struct dlm_list *pos;

	if (solo_verify_directed(ls, why, whylen))
		return -EUCLEAN;

	if (ls->ls_solotbl.ht_count !=
	    ls->ls_soloids.ht_count + ls->ls_nsolo_tossed) {
		snprintf(why, whylen, "%zu solos by key, %zu by id, %llu tossed",
			 ls->ls_solotbl.ht_count, ls->ls_soloids.ht_count,
			 (unsigned long long)ls->ls_nsolo_tossed);
		return -EUCLEAN;
	}
	dlm_htab_walk(&ls->ls_soloids, verify_solo, &v);
	if (v.bad) {
		snprintf(why, whylen, "solo %08x %s", v.lkid, v.bad);
		return -EUCLEAN;
	}
	dlm_list_for_each(pos, &ls->ls_solo_toss) {
		struct dlm_solo *so = dlm_container_of(pos, struct dlm_solo,
						       so_ownerqueue);
		unsigned int keylen = dlm_solo_keylen(so);
		uint32_t hash = so->so_keynode.hn_hash;

		tossed++;
		if (!dlm_solo_is_tossed(so) || dlm_solo_lkid(so) ||
		    dlm_solo_find_key(ls, so->so_key, keylen, hash) != so ||
		    dlm_rsb_find(ls, so->so_key, keylen, hash) ||
		    dlm_dir_has_record(ls, so->so_key, keylen, hash)) {
			snprintf(why, whylen, "a tossed solo is not alone in "
				 "the tables, by its key only");
			return -EUCLEAN;
		}
	}
	if (tossed != ls->ls_nsolo_tossed) {
		snprintf(why, whylen, "ls_solo_toss holds %zu solos, its count "
			 "%llu", tossed, (unsigned long long)ls->ls_nsolo_tossed);
		return -EUCLEAN;
	}
	for (b = 0; b < ls->ls_ownertbl.ht_nbuckets; b++) {
		struct dlm_hnode *n;

		for (n = ls->ls_ownertbl.ht_buckets[b]; n; n = n->hn_next) {
			struct dlm_owner *ow = dlm_container_of(n, struct dlm_owner,
								ow_hnode);
			struct dlm_list *q;

			dlm_list_for_each(q, &ow->ow_solos)
				owned++;
		}
	}
	if (owned != ls->ls_soloids.ht_count) {
		snprintf(why, whylen, "owners hold %zu solos, the table %zu",
			 owned, ls->ls_soloids.ht_count);
		return -EUCLEAN;
	}
	return 0;
}

/*
 * Shared lockspaces (issue 14, session 16).  A lockspace with other
 * members folds too, on the names this node directs: where the fold
 * finds no rsb, no directory record and no solo for a name whose
 * directory node is this one, no other node masters it or has asked
 * who does (a lookup it answered left a record; one on its way has not
 * been answered, and when it comes it finds the solo unfolded first),
 * so the unfolded path would make this node its master and directory
 * record at once (lock.c, the dlm_dir_lookup of a name directed here):
 * the solo is that master copy and that record, as on a node alone.
 * The names other nodes direct fold later, once their lookup is
 * answered: "Names other nodes direct", below.
 *
 * What unfolds.  Other nodes can reach a solo's resource only by its
 * name: a LOOKUP (to its directory node, here), a REQUEST (to its
 * master, here, from a node that took the name's master from an older
 * record), a REMOVE and the remastering messages; each carries the
 * name in m_key, and dlm_lock_receive unfolds that one name first
 * (dlm_solo_unfold_msg), not the lockspace; a tossed solo there becomes
 * the tossed rsb it stands for (solo_unfold_tossed), so the name stays
 * mastered here as it would unfolded.  A lock message naming a
 * lock id (CONVERT, UNLOCK, CANCEL, the replies, GRANT, BAST, AUDIT,
 * the deadlock probes, REPOINT) names a lock another node knows of: a
 * process copy this node sent a request for, or a master copy another
 * node's request made; a solo is neither (it never left this node), so
 * none of them can name one.  A recovery message names resources too:
 * "Recovery" below.
 *
 * Tossed solos of a shared lockspace expire as a node alone drops them:
 * the record goes with the resource; another node that still takes this
 * node for the name's master (its copy from a lookup before the fold)
 * sends its REQUEST here and is told to look up again, as after any
 * expiry.
 */

/*
 * Names other nodes direct (issue 14, session 17).  With N members
 * about N-1 in N of a node's names are directed by another node, and a
 * lone lock there stayed an rsb and an lkb: 360 B at 1M where a solo
 * takes 120, so a node's lone locks on evenly spread names averaged 240
 * B with 2 members, 280 with 3.  Such a lock now folds too, once its
 * lookup is answered.
 *
 *   When.  The request cannot fold at once: no node may master a root
 *   it does not direct without asking its directory node D (resource.c,
 *   "What it does not give").  So it goes as ever: an rsb, a LOOKUP to
 *   D, the lkb on res_lookupq.  When the LOOKUP_REPLY names this node
 *   master and the request was granted here, alone, lock.c's
 *   receive_lookup_reply offers the rsb to dlm_solo_fold_rsb, which
 *   folds it if it is exactly what a solo stands for: a root mastered
 *   here, no flag, no value, no other lock or waiter, its one lock a
 *   granted process copy as "When" above has it, remastering off (the
 *   rsb's remastering window would be lost; with it on nothing folds
 *   after a lookup).  The rsb and lkb are freed; the solo takes the
 *   lock's id.  A lookup that names another master, a request that
 *   waits, a second lock waiting for the same lookup: nothing folds.
 *
 *   What the solo stores.  One bit, SOLO_REMOTE in so_flags: it was
 *   folded after a lookup, so its record is on another node (no byte
 *   more: the directory node is a function of the name's hash and the
 *   members, dlm_dir_nodeid).  The solo is the master copy; it is not
 *   a directory record here (solo_directed_here false), and
 *   ls_nsolo_remote counts these so that ls_dir_entries leaves them
 *   out.  Everything else is as for any solo.
 *
 *   What the directory node knows.  The record its LOOKUP made, naming
 *   this node, exactly as for an rsb mastered here: an ordinary
 *   dirent (about 64-80 B there, paid by the unfolded path the same).
 *   It is never told of the fold or the unfold, since neither changes
 *   who masters the name.
 *
 *   The messages, each against what the unfolded path does:
 *   - LOOKUP of another node Y goes to D, who answers "this node"; Y's
 *     REQUEST comes here, names the key, and unfolds the solo first
 *     (dlm_solo_unfold_msg): a held one into the rsb and lkb it stands
 *     for, with no record here (its name is directed elsewhere); a
 *     tossed one into the tossed rsb mastered here (solo_unfold_tossed),
 *     which takes Y's lock as master.  As unfolded.
 *   - Its own unlock tosses it, as any solo; a lock of this node on the
 *     name takes it again with no message (lock.c request_lock: a
 *     tossed solo is mastered here whoever directs its name), as a
 *     tossed rsb mastered here is taken again with no lookup.
 *   - Expiry (toss_ms, max_tossed): solo_toss_drop sends D the REMOVE
 *     with its key and frees it, what toss_drop does for a tossed rsb
 *     mastered here; so D never keeps a record naming this node for a
 *     name it forgot.  The REMOVE/LOOKUP race is the rsb's: if Y's
 *     LOOKUP is answered "this node" before the REMOVE arrives, Y's
 *     REQUEST finds nothing here, is refused -EBADR and Y looks up
 *     again; D forgets the record only if it still names this node
 *     (dlm_dir_remove), so Y's second lookup, or one after it, makes Y
 *     master: one master, and no record left naming a master that
 *     forgot (test_remote_remove_lookup_race).  A lock of this node on
 *     the name after the expiry makes an rsb and looks up: its LOOKUP
 *     follows its REMOVE on the same link (FIFO), so D forgets first,
 *     then records whoever asks first.  A tossed solo that a request
 *     which cannot fold meets becomes the tossed rsb (dlm_solo_unfold),
 *     not dropped: dropping it would need the REMOVE too, for nothing.
 *   - No lock message naming a lock id can name it (it never left this
 *     node), as for any solo; remastering is off.
 *
 *   Recovery.  A death or a join does not unfold these (dlm_solo_
 *   recover_start looks only at names directed here, solo_moves).
 *   Instead the directory step registers them as the roots mastered
 *   here that they are (recover.c dir_register_solos, a walk of the solo
 *   table): in a full rebuild every one whose name another member now
 *   directs, in a partial one those whose directory node departed
 *   (dir_moved); one whose name is now directed here (its directory
 *   node died and this node is the next heaviest) is its own record
 *   from then on, as a solo folded here.  So a full rebuild's sweep
 *   keeps their records and a partial one moves those it must
 *   (test_remote_join_registers, test_remote_death_registers; sim-
 *   broken.test fold-remote-no-register: registering none, the joiner
 *   or the new directory node hands the name to a second master).
 *   A solo unfolded while the lockspace does not run (a conversion or
 *   unlock while stopped, a recovery message naming it) becomes an rsb
 *   step_start may not have collected; solo_track puts it on the
 *   recovery's list (dlm_recover_track_rsb) so that the directory step
 *   registers it in the solo's place (test_remote_unfold_while_
 *   recovering; dlm-sim --fold --faults seed 26 before it: a second
 *   master).  Unfolded before step_start, step_start collects it; after
 *   the directory step, the solo was registered already.  A REMOVE of
 *   an expired one in flight at a stop is the rsb's case (recover.c,
 *   PARTIAL DIRECTORY, held_removes).  A solo never has a lookup in
 *   flight.
 *
 *   Verify: a solo of a name another node directs must carry
 *   SOLO_REMOTE (one folded here whose directory moved away and was
 *   kept is the recfold-keep-moved fault), and ls_nsolo_remote counts
 *   them.
 */

/*
 * Recovery (issue 18, session 16).  A recovery started with every solo
 * unfolded first: at 1M solos half a second of CPU and 250 MB at the
 * worst moment (one rsb and one lkb each: bench-core --unfold), and
 * without that memory the start failed and was retried: a stall.  Yet
 * nothing about most solos changes.  A solo is a master copy of a name
 * this node directs, with one lock, a local one.  What a recovery does
 * is about departed nodes' locks and masters, lookups in flight, and
 * the directory; so for a solo:
 *
 *   - Its lock is local and granted: the purge takes departed nodes'
 *     master copies, the resends go to new masters of resources whose
 *     master departed, the grants follow a purge; none is about it.
 *   - Its master is this node, which survives; no other node holds a
 *     lock on it or a copy of it (a lookup of another node would have
 *     unfolded it), so no RC_LOCK, RC_LOOKUP or MIGRATE is about it,
 *     unless stale (below).
 *   - Its directory.  Rendezvous placement (resource.c, "Directory"):
 *     a death moves only the names the departed directed, and a solo's
 *     name was directed here, by a member that stays.  So at a start
 *     whose members are all of the last start's (deaths, or none), no
 *     solo's directory moves, and no solo is even looked at
 *     (dlm_solo_recover_start: a compare of the member lists).  A node
 *     joining takes the names it now outweighs everybody for: the
 *     solos of those names unfold at the start, before step_start
 *     collects the rsbs, so the rebuild (full: a join always votes no,
 *     recover.c PARTIAL DIRECTORY) registers them with their new
 *     directory node like any root mastered here; their tossed ones go,
 *     as at their expiry (nobody else knows the name).  The others
 *     stay folded.  Each start does this against the members of the
 *     start before, so every solo is of a name directed here by the
 *     members of the last start (what verify checks once running).
 *   - The directory rebuild.  This node is the solo's master and its
 *     directory node: registering it would be a message to itself, so
 *     there is nothing to send, and the solo is its own record,
 *     whatever the rebuild: a partial one keeps records; a full one's
 *     sweep (dlm_dir_sweep) walks ls_dirtbl and the rsbs, neither of
 *     which holds a solo.  One unfolded while the lockspace does not
 *     run (a second request on its name, an unlock or a conversion while
 *     stopped, a recovery message) becomes an rsb that step_start never saw and
 *     step_dir never registered: its record takes the recovery's event
 *     (solo_de_event), as registering it would have, so the sweep of a
 *     full rebuild keeps it (test-core-solo-shared
 *     test_shared_full_rebuild_unfold: with the older event the sweep
 *     dropped it and another node was granted a second EX).
 *   - Lookups during and after the recovery.  Another node reaches the
 *     name only by a message carrying its key.  Lock messages unfold it
 *     as when running ("Shared lockspaces"; those of the stop are held
 *     and replayed at finish, so unfolded then).  Recovery messages
 *     that carry keys (RC_LOOKUP, RC_DIR_ADD, RC_DIR_ADDS' list,
 *     RC_DIR_DROP, RC_LOCK and its parent's key, the replies) unfold
 *     the solos of those names first once the lockspace stopped
 *     (dlm_solo_unfold_rc, receive_ls), a tossed one into the tossed
 *     rsb it stands for: none should name a solo, but a stale one (a
 *     node's copy from before the fold, whose master it thinks
 *     departed) then finds what the unfolded path would have, and
 *     -ENOMEM leaves the message to be offered again.  RC_STATUS names
 *     nothing and unfolds nothing.
 *
 * So a death unfolds no solo (counted: ls_unfolds_rec, the unfolds a
 * start or a recovery message made), a join only those whose directory
 * moves.  (test-core-solo-shared test_shared_death_keeps_folded,
 * test_shared_join_unfolds_moved; dlm-sim --fold --faults, and
 * sim-broken.test recfold-keep-moved: a start that keeps folded a solo
 * whose directory moved to the joiner, which the joiner then gives a
 * second master.)
 */

/* Is this node the directory node of the name (hash): may a lock on it
 * fold?  (With this node alone, every name is.) */
bool dlm_solo_may_fold_name(struct dlm_ls *ls, uint32_t hash)
{
	uint32_t us = dlm_our_nodeid(ls);

	if (ls->ls_nmembers == 1)
		return ls->ls_members[0] == us;
	return dlm_dir_nodeid(ls, hash) == us;
}

/* Tossed so as the rsb it stands for, tossed, mastered and directed
 * here, as the unfolded path would have left it (its toss time starts
 * again): another node that asks for the name finds this node its
 * master still, as it would have without the fold.  (dlm_solo_unfold
 * drops a tossed solo instead: right too, as its expiry, but then the
 * name's mastery moves to whoever asks first, and recover.c's and
 * remaster.c's tests, and a node's cached master, see a change the
 * unfolded path would not make.)  -ENOMEM having changed nothing. */
static int solo_unfold_tossed(struct dlm_ls *ls, struct dlm_solo *so)
{
	uint32_t event = solo_de_event(ls, so), us = dlm_our_nodeid(ls);
	struct dlm_rsb *r;

	r = dlm_rsb_create(ls, so->so_key, dlm_solo_keylen(so),
			   so->so_keynode.hn_hash);
	if (!r)
		return -ENOMEM;
	if (solo_track(ls, r)) {
		dlm_rsb_free(ls, r);
		return -ENOMEM;
	}
	solo_forget(ls, so);	/* its record stays, now the rsb's */
	r->res_nodeid = us;
	if (dlm_dir_nodeid(ls, r->res_hnode.hn_hash) == us)
		dlm_dir_self_adopt(ls, r, event);
	dlm_remaster_count(ls, r, us);
	dlm_rsb_hold(ls, r);
	dlm_rsb_release(ls, r);
	return 0;
}

/* The solo named key, if any, unfolded (a tossed one as the tossed rsb
 * it stands for: solo_unfold_tossed), counted in *counter; -ENOMEM
 * having changed nothing. */
static int solo_unfold_key(struct dlm_ls *ls, const unsigned char *key,
			   unsigned int keylen, uint64_t *counter)
{
	struct dlm_solo *so;
	int rv;

	so = dlm_solo_find_key(ls, key, keylen, dlm_hash_bytes(key, keylen));
	if (!so)
		return 0;
	rv = dlm_solo_is_tossed(so) ? solo_unfold_tossed(ls, so) :
				      dlm_solo_unfold(ls, so);
	if (!rv)
		(*counter)++;
	return rv;
}

/* A lock message m (not a recovery one) finds the solo of the name it
 * carries unfolded, or its tossed solo made the tossed rsb it stands for
 * (solo_unfold_tossed: mastery stays here); -ENOMEM having changed
 * nothing else (offered again).  See "What unfolds" above. */
int dlm_solo_unfold_msg(struct dlm_ls *ls, const struct dlm_msg *m)
{
	if (!m->m_keylen || !ls->ls_solotbl.ht_count ||
	    ls->ls_core->core_fault == DLM_FAULT_FOLD_MSG_SKIP)
		return 0;
	return solo_unfold_key(ls, m->m_key, m->m_keylen, &ls->ls_unfolds_msg);
}

/* dlm_solo_lock, counted in ls_folds_shared while the lockspace has
 * other members. */
int dlm_solo_lock_counted(struct dlm_ls *ls, const struct dlm_lock_req *req,
			  struct dlm_solo *tossed, const unsigned char *key,
			  unsigned int keylen, uint32_t hash, uint32_t *lkid_out)
{
	int rv = dlm_solo_lock(ls, req, tossed, key, keylen, hash, lkid_out);

	if (!rv && ls->ls_nmembers > 1)
		ls->ls_folds_shared++;
	return rv;
}

/* Every solo, held or tossed, is of a name this node directs while the
 * lockspace runs; 0 or -EUCLEAN with why. */
static int solo_verify_directed(struct dlm_ls *ls, char *why, size_t whylen)
{
	size_t b, remote = 0;

	for (b = 0; b < ls->ls_solotbl.ht_nbuckets; b++) {
		struct dlm_hnode *n;

		for (n = ls->ls_solotbl.ht_buckets[b]; n; n = n->hn_next)
			if (solo_of_key(n)->so_flags & SOLO_REMOTE)
				remote++;
	}
	if (remote != ls->ls_nsolo_remote) {
		snprintf(why, whylen, "%zu solos folded after a lookup, "
			 "counted %llu", remote,
			 (unsigned long long)ls->ls_nsolo_remote);
		return -EUCLEAN;
	}
	if (!dlm_ls_running(ls))
		return 0;
	for (b = 0; b < ls->ls_solotbl.ht_nbuckets; b++) {
		struct dlm_hnode *n;

		for (n = ls->ls_solotbl.ht_buckets[b]; n; n = n->hn_next) {
			/* one folded after its lookup is registered where
			 * its name's directory is, whichever node directs it
			 * (recover.c step_dir): "Names other nodes direct" */
			if ((solo_of_key(n)->so_flags & SOLO_REMOTE) ||
			    dlm_solo_may_fold_name(ls, n->hn_hash))
				continue;
			snprintf(why, whylen, "solo %08x of a name directed "
				 "by node %u", dlm_solo_lkid(solo_of_key(n)),
				 dlm_dir_nodeid(ls, n->hn_hash));
			return -EUCLEAN;
		}
	}
	return 0;
}

/* Does the directory of the name (hash) move away from this node with
 * the members (n): does another of them direct it? */
static bool solo_moves(struct dlm_ls *ls, const uint32_t *members,
		       unsigned int n, uint32_t hash)
{
	if (ls->ls_core->core_fault == DLM_FAULT_RECFOLD_KEEP_MOVED)
		return false;
	/* a name another node directed: registered with its directory
	 * node, whoever, at the directory step (recover.c step_dir) */
	if (!dlm_solo_may_fold_name(ls, hash))
		return false;
	return dlm_dir_nodeid_of(members, n, hash) != dlm_our_nodeid(ls);
}

/* A recovery starts with members (n), ls_members still the last start's:
 * the solos, held and tossed, whose name another of them directs now
 * unfold (a tossed one goes, as its expiry); the rest stay folded.  If
 * every one of members is of ls_members and this node is one of them,
 * nothing moves (rendezvous) and no solo is looked at.  -ENOMEM having
 * unfolded some (ordinary locks).  See "Recovery" above. */
int dlm_solo_recover_start(struct dlm_ls *ls, const uint32_t *members,
			   unsigned int nmembers)
{
	uint32_t us = dlm_our_nodeid(ls);
	bool subset = false;
	struct dlm_list *pos, *tmp;
	unsigned int i, j;
	size_t b;

	if (!ls->ls_solotbl.ht_count)
		return 0;
	for (i = 0; i < nmembers && members[i] != us; i++)
		;
	if (i < nmembers) {
		subset = true;
		for (i = 0; i < nmembers && subset; i++) {
			for (j = 0; j < ls->ls_nmembers &&
				    ls->ls_members[j] != members[i]; j++)
				;
			subset = j < ls->ls_nmembers;
		}
	}
	if (subset)
		goto kept;
	dlm_list_for_each_safe(pos, tmp, &ls->ls_solo_toss) {
		struct dlm_solo *so = dlm_container_of(pos, struct dlm_solo,
						       so_ownerqueue);

		if (!solo_moves(ls, members, nmembers, so->so_keynode.hn_hash))
			continue;
		solo_toss_drop(ls, so);
		ls->ls_unfolds_rec++;
	}
	/* by owner, as dlm_solo_unfold_all: unfolding one changes neither
	 * the owner table nor another solo's place on its owner's list */
	for (b = 0; b < ls->ls_ownertbl.ht_nbuckets &&
		    ls->ls_soloids.ht_count; b++) {
		struct dlm_hnode *n;

		for (n = ls->ls_ownertbl.ht_buckets[b]; n; n = n->hn_next) {
			struct dlm_owner *ow = dlm_container_of(n, struct dlm_owner,
								ow_hnode);

			dlm_list_for_each_safe(pos, tmp, &ow->ow_solos) {
				struct dlm_solo *so = dlm_container_of(pos,
						struct dlm_solo, so_ownerqueue);
				int rv;

				if (!solo_moves(ls, members, nmembers,
						so->so_keynode.hn_hash))
					continue;
				rv = dlm_solo_unfold(ls, so);
				if (rv)
					return rv;
				ls->ls_unfolds_rec++;
			}
		}
	}
kept:
	ls->ls_folds_kept_rec += dlm_solo_count(ls);
	return 0;
}

/* The solo named key, if any, unfolded for a recovery message: a tossed
 * one as the tossed rsb it stands for (mastered here, as a lock message
 * finds it). */
static int solo_unfold_rc_key(struct dlm_ls *ls, const unsigned char *key,
			      unsigned int keylen)
{
	return solo_unfold_key(ls, key, keylen, &ls->ls_unfolds_rec);
}

/* A recovery message m, the lockspace stopped: the solos of the names it
 * carries (its key and parent's key; RC_DIR_ADDS' list) unfold first;
 * -ENOMEM having unfolded some (the message is offered again).  See
 * "Recovery" above. */
int dlm_solo_unfold_rc(struct dlm_ls *ls, const struct dlm_msg *m)
{
	const unsigned char *key;
	unsigned int off = 0, keylen;
	int rv;

	if (!ls->ls_solotbl.ht_count)
		return 0;
	if (m->m_type == DLM_RC_DIR_ADDS) {
		while (dlm_key_list_next(m->m_key, m->m_keylen, &off, &key,
					 &keylen)) {
			rv = solo_unfold_rc_key(ls, key, keylen);
			if (rv)
				return rv;
		}
		return 0;
	}
	if (m->m_pkey && m->m_pkeylen) {
		rv = solo_unfold_rc_key(ls, m->m_pkey, m->m_pkeylen);
		if (rv)
			return rv;
	}
	return m->m_keylen ? solo_unfold_rc_key(ls, m->m_key, m->m_keylen) : 0;
}

/* Is this node the directory node of so's name, by the members of the
 * last start: is so its own directory record?  (Else its record is on
 * that node and names this one: "Names other nodes direct".) */
static bool solo_directed_here(struct dlm_ls *ls, const struct dlm_solo *so)
{
	return dlm_solo_may_fold_name(ls, so->so_keynode.hn_hash);
}

/* Tell the directory node of so's name that this node masters it no
 * more, as dlm_send_remove does for an rsb. */
static void solo_send_remove(struct dlm_ls *ls, const struct dlm_solo *so)
{
	struct dlm_msg m;

	if (ls->ls_core->core_fault == DLM_FAULT_FOLD_REMOTE_NO_REMOVE)
		return;
	dlm_msg_init(&m, DLM_MSG_REMOVE);
	m.m_key = so->so_key;
	m.m_keylen = (uint16_t)dlm_solo_keylen(so);
	dlm_send_msg(ls, &m, dlm_dir_nodeid(ls, so->so_keynode.hn_hash));
}

/* The lkb flags a granted lone lock's lkb may have to fold: those a
 * solo keeps (so_flags) and LKBF_OWNED. */
#define SOLO_LKBF (LKBF_OWNED | LKBF_WANT_BAST | LKBF_DLXID | LKBF_DLASYNC)

/* r, a root whose lookup (LOOKUP_REPLY) has just made this node its
 * master on a name another node directs, folded with its one lock if
 * that is a lone lock as "When" has it (granted at once, whole range,
 * no value, flags a solo keeps), and nothing else is there: no other
 * lock, no waiter, no value, no remastering.  r and its lkb are freed:
 * the caller must not touch r again.  Nothing done for want of memory
 * (it stays unfolded).  See "Names other nodes direct". */
void dlm_solo_fold_rsb(struct dlm_ls *ls, struct dlm_rsb *r)
{
	uint32_t us = dlm_our_nodeid(ls), hash = r->res_hnode.hn_hash;
	unsigned int keylen = r->res_keylen;
	struct dlm_lkb *lkb;
	struct dlm_owner *ow;
	struct dlm_solo *so;

	if (!ls->ls_core->core_cfg.fold || !dlm_ls_running(ls) ||
	    dlm_remaster_on(ls) || r->res_parent || r->res_nodeid != us ||
	    (r->res_flags & ~RESF_REC_STALE) || r->res_nlkbs != 1 ||
	    r->res_lvb ||
	    r->res_nnoorder ||
	    r->res_lvbseq != ls->ls_core->core_cfg.lvbseq_start ||
	    dlm_list_empty(&r->res_grantq) ||
	    r->res_grantq.next != r->res_grantq.prev ||
	    !dlm_list_empty(&r->res_convertq) ||
	    !dlm_list_empty(&r->res_waitq) ||
	    !dlm_list_empty(&r->res_lookupq) ||
	    dlm_dir_nodeid(ls, hash) == us)
		return;
	lkb = dlm_list_first(&r->res_grantq, struct dlm_lkb, lkb_statequeue);
	if (lkb->lkb_nodeid != us || (lkb->lkb_flags & ~(uint32_t)SOLO_LKBF) ||
	    !(lkb->lkb_flags & LKBF_OWNED) ||
	    (lkb->lkb_exflags & ~(uint32_t)SOLO_FLAGS) ||
	    lkb->lkb_status != DLM_LKSTS_GRANTED ||
	    lkb->lkb_wait_type != DLM_WAIT_NONE ||
	    lkb->lkb_rqmode != DLM_LOCK_IV || lkb->lkb_ranges ||
	    lkb->lkb_lvb || lkb->lkb_lvbseq || lkb->lkb_parent_id ||
	    lkb->lkb_nchildren || lkb->lkb_qwait || lkb->lkb_sbflags ||
	    !dlm_list_empty(&lkb->lkb_waiter) ||
	    dlm_solo_find_key(ls, r->res_key, keylen, hash))
		return;
	ow = dlm_owner_get(ls, lkb->lkb_ownerid, false);
	if (!ow)
		return;
	so = dlm_malloc(ls->ls_core, offsetof(struct dlm_solo, so_key) + keylen);
	if (!so)
		return;
	memset(so, 0, offsetof(struct dlm_solo, so_key));
	memcpy(so->so_key, r->res_key, keylen);
	so->so_keynode.hn_hash = hash;
	so->so_keynode.hn_spare = (uint16_t)keylen;
	so->so_de_event = ls->ls_event;
	so->so_ownerid = lkb->lkb_ownerid;
	so->so_astarg = lkb->lkb_astarg;
	so->so_dl_waiter = lkb->lkb_dl_waiter;
	so->so_flags = (lkb->lkb_flags & ~(uint32_t)LKBF_OWNED) | SOLO_REMOTE;
	so->so_grmode = (int8_t)lkb->lkb_grmode;
	so->so_token = lkb->lkb_token;

	/* the lkb and the rsb go (neither is on any other list: checked
	 * above), then the solo takes the lock's id and the name */
	dlm_list_del(&lkb->lkb_statequeue);
	dlm_list_del(&lkb->lkb_ownerqueue);
	so->so_idnode.hn_hash = lkb->lkb_id;
	so->so_idnode.hn_spare = lkb->lkb_exflags;
	dlm_lkb_free(ls, lkb);
	r->res_nlkbs = 0;
	dlm_rsb_free(ls, r);
	dlm_htab_insert(&ls->ls_solotbl, &so->so_keynode);
	dlm_htab_insert(&ls->ls_soloids, &so->so_idnode);
	dlm_list_add_tail(&so->so_ownerqueue, &ow->ow_solos);
	ls->ls_folds_remote++;
	ls->ls_nsolo_remote++;
}
