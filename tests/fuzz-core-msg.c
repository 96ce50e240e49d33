/*
 * tests/fuzz-core-msg.c - fuzz target for the engine's message intake.
 *
 * Node 1 of a three-node lockspace holds a few locks (local and as the
 * master of remote ones); the input is a sequence of messages, each a
 * little-endian 16-bit length, a sender byte (node 2 or 3) and the bytes,
 * fed to dlm_core_receive().  Whatever arrives, the engine must neither
 * crash, nor leak, nor trip the sanitizers.  Messages the engine sends
 * are dropped.  With the first byte's top bit set, the lockspace is in
 * recovery (event 1) while the messages arrive; a seed that must not be
 * starts with an empty record (length 0: no message), as a version 3
 * message's length, 134, has that bit set.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/core.h"
#include "core/wire.h"
#include "tests/fuzz-verdict.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void f_send(void *ctx, uint32_t to, const void *buf, size_t len)
{
	(void)ctx; (void)to; (void)buf; (void)len;
}

static void f_ast(void *ctx, const struct dlm_ast *a)
{
	(void)ctx; (void)a;
}

/* Returns the lock's id (0: refused); 'parent': a lock id or 0. */
static uint32_t lock_local(struct dlm_ls *ls, const char *name, int mode,
			   uint32_t flags, uint64_t owner, uint32_t parent)
{
	struct dlm_lock_req rq = { .mode = mode, .flags = flags, .name = name,
				   .namelen = (unsigned)strlen(name),
				   .owner = owner, .want_bast = 1,
				   .parent = parent };
	uint32_t id = 0;

	if (dlm_core_lock(ls, &rq, &id))
		return 0;
	return id;
}

/* A valid REQUEST from node 2 so that node 1 holds a master copy. */
static void remote_request(struct dlm_core *core, struct dlm_ls *ls,
			   const char *name, int mode, uint32_t lkid)
{
	unsigned char buf[DLM_WIRE_MAX_LEN], key[DLM_MAX_KEYLEN];
	struct dlm_msg m;
	int len;

	memset(&m, 0, sizeof(m));
	key[0] = (unsigned char)strlen(name);
	memcpy(key + 1, name, key[0]);
	m.m_type = DLM_MSG_REQUEST;
	m.m_lsid = dlm_core_ls_id(ls);
	m.m_from = 2;
	m.m_to = 1;
	m.m_lkid = lkid;
	m.m_rqmode = (int8_t)mode;
	m.m_grmode = DLM_LOCK_IV;
	m.m_grrange.ra_end = m.m_rqrange.ra_end = DLM_RANGE_MAX;
	m.m_key = key;
	m.m_keylen = (uint16_t)(key[0] + 1);
	m.m_owner = 77;
	len = dlm_msg_encode(&m, buf, sizeof(buf));
	if (len > 0)
		(void)dlm_core_receive(core, 2, buf, (size_t)len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct dlm_core_ops ops = { .send = f_send, .ast = f_ast };
	/* deadlock_ms: probes of our waiting locks go out while messages
	 * arrive, and probes that arrive are followed */
	struct dlm_core_config cfg = { .our_nodeid = 1, .toss_ms = 50,
				       .deadlock_ms = 40, .remaster_ticks = 4 };
	uint32_t members[3] = { 1, 2, 3 };
	struct dlm_core *core = dlm_core_new(&cfg, &ops, NULL);
	struct dlm_ls *ls;
	size_t off = 0;
	uint64_t now = 0;
	uint32_t d;
	int rv;

	if (!core)
		return 0;
	if (dlm_core_ls_create(core, "fuzz", members, 3, NULL, &ls)) {
		dlm_core_free(core);
		return 0;
	}
	/* names whose directory node is node 1 get mastered here */
	lock_local(ls, "a", DLM_LOCK_EX, 0, 1, 0);
	lock_local(ls, "b", DLM_LOCK_PR, DLM_LKF_VALBLK, 1, 0);
	lock_local(ls, "b", DLM_LOCK_EX, 0, 2, 0);
	lock_local(ls, "c", DLM_LOCK_NL, DLM_LKF_PERSISTENT, 3, 0);
	/* "d" (directory node 1, so mastered here) and a child of it,
	 * mastered with it: requests for "d"'s children (with "d" as parent
	 * key) reach the child path */
	d = lock_local(ls, "d", DLM_LOCK_PR, 0, 1, 0);
	if (d)
		lock_local(ls, "x", DLM_LOCK_PR, DLM_LKF_VALBLK, 1, d);
	remote_request(core, ls, "a", DLM_LOCK_PR, 5);
	remote_request(core, ls, "b", DLM_LOCK_CR, 6);
	(void)dlm_core_purge_owner(ls, 3);
	/* odd first bytes: fuzz a lockspace in recovery of event 1 */
	if (size && (data[0] & 0x80)) {
		(void)dlm_core_ls_stop(ls);
		(void)dlm_core_ls_start(ls, 1, members, 3);
	}

	while (off + 3 <= size) {
		size_t len = (size_t)data[off] | ((size_t)data[off + 1] << 8);
		uint32_t from = 2 + (data[off + 2] & 1);

		off += 3;
		if (len > size - off)
			len = size - off;
		if (!len)
			continue;	/* an empty record: only sets the first byte */
		rv = dlm_core_receive(core, from, data + off, len);
		/* malformed, or of another version (not: a lock or
		 * lockspace unknown here, -ENOENT) */
		if (rv == -EBADMSG || rv == -EPROTO)
			fuzz_refuse("dlm_core_receive");
		off += len;
		dlm_core_tick(core, now += 20);
	}
	dlm_core_free(core);
	return 0;
}
