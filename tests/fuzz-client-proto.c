/*
 * tests/fuzz-client-proto.c - fuzz target for dlmd's client protocol.
 *
 * Each input is a sequence of packets, each a little-endian 16-bit length
 * followed by that many bytes (a length past the end takes what is
 * left).  A daemon state (membership none, no main loop; made once and
 * kept) gets a fresh lockspace "fuzz" and a root client already bound to
 * it; every packet goes
 * through dlmd_client_request() exactly as if read from the socket, an
 * LS_OPEN packet with a fresh AST socket attached.  Replies and ASTs are
 * drained and decoded like libdlm would.  Whatever arrives, the daemon
 * must neither crash, nor leak, nor trip the sanitizers; every answer on
 * the request connection must be a well-formed REPLY or COMP_REPLY and
 * every AST a well-formed AST; a packet is answered at once unless it is
 * a DLMP_LK_SYNC request the daemon holds (dlmd_proto.h), and the held
 * ones never pass DLMP_MAX_HELD.  A RING ATTACH packet gets a fresh
 * sealed memfd; once the daemon took one, every later packet goes
 * through that request ring instead (its slot length the packet's, not
 * cut to what a slot holds) and the daemon is made to take it, as a
 * kick would: the same decoder behind the ring's own checks.  The two
 * high bits of a packet's length (no packet is that long) choose
 * otherwise once there is a ring: FUZZ_LEFT, the packet is put in the
 * ring and left there (as by a client whose kick is still owed: it gets
 * no answer yet); FUZZ_SOCKET, it is read from the socket (a request
 * sent in place of a kick), and the daemon must then have taken
 * everything the ring held before it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "plugin/dlmd.h"
#include "tests/fuzz-daemon.h"
#include "tests/raw-client.h"
#include "tests/fuzz-verdict.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_LS		"fuzz"
#define MAX_PACKETS	64

/* Read what the daemon wrote to fd; returns how many packets.  'asts':
 * fd is an AST socket (else the request connection). */
static int drain(int fd, bool asts)
{
	unsigned char buf[DLMP_MAX_MSG];
	struct dlmp_msg m;
	int n_msgs = 0;
	ssize_t n;

	while ((n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
		int rv = dlmp_decode(buf, (size_t)n, &m);

		if (rv == -EPROTONOSUPPORT && !asts &&
		    m.m_hdr.h_version == dlmp_reply_version(m.m_hdr.h_version)) {
			/* the answer to a request of an older version, in
			 * that version: a REPLY laid out as ours, refusing */
			dlmp_set_version(buf, DLMP_VERSION);
			if (dlmp_decode(buf, (size_t)n, &m) ||
			    m.m_hdr.h_type != DLMP_REPLY ||
			    m.m_u.reply.rp_status != -EPROTONOSUPPORT)
				abort();
			n_msgs++;
			continue;
		}
		if (rv)
			abort();	/* the daemon sent garbage */
		if (asts ? m.m_hdr.h_type != DLMP_AST :
			   m.m_hdr.h_type != DLMP_REPLY &&
			   m.m_hdr.h_type != DLMP_COMP_REPLY)
			abort();
		n_msgs++;
	}
	return n_msgs;
}

/* May the daemon leave this packet unanswered for now?  A LOCK or UNLOCK
 * asking for DLMP_LK_SYNC, or an LS_CREATE waiting for its lockspace's
 * first membership; and a LOCK with DLMP_LK_NEWID or an UNLOCK with
 * DLMP_UL_NOREPLY is never answered on the request connection (its
 * outcome is an AST). */
static bool may_hold(const uint8_t *p, size_t len)
{
	struct dlmp_msg m;

	if (dlmp_decode(p, len, &m))
		return false;
	if (m.m_hdr.h_type == DLMP_LOCK)
		return (m.m_u.lock.lk_bits & (DLMP_LK_SYNC | DLMP_LK_NEWID)) != 0;
	if (m.m_hdr.h_type == DLMP_UNLOCK)
		return (m.m_u.unlock.ul_bits &
			(DLMP_LK_SYNC | DLMP_UL_NOREPLY)) != 0;
	if (m.m_hdr.h_type == DLMP_RING)	/* a kick has no answer, nor has
						 * ANS_SOCKET (dlmd_proto.h) */
		return m.m_u.pair.pr_a == DLMP_RING_KICK ||
		       m.m_u.pair.pr_a == DLMP_RING_ANS_SOCKET;
	return m.m_hdr.h_type == DLMP_LS_CREATE;
}

/* A sealed memfd for a RING ATTACH, mapped at *ring (NULL on failure:
 * then the packet goes without it). */
static int ring_fd(struct dlmp_ring **ring)
{
	int fd = memfd_create("fuzz-ring", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	void *p;

	*ring = NULL;
	if (fd < 0)
		return -1;
	if (ftruncate(fd, (off_t)DLMP_RING_BYTES) ||
	    fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW)) {
		close(fd);
		return -1;
	}
	p = mmap(NULL, DLMP_RING_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		close(fd);
		return -1;
	}
	*ring = p;
	return fd;
}

/* The routing bits of a packet's length (see above). */
#define FUZZ_LEFT	0x8000u
#define FUZZ_SOCKET	0x4000u
#define FUZZ_LEN	0x3fffu

/* Put one packet into the ring (a full ring is taken first, as the
 * client waits for room); 'left': without having the daemon take it. */
static void ring_put(struct dlmd *d, struct dlmd_client *c,
		     struct dlmp_ring *ring, const uint8_t *p, size_t len,
		     bool left)
{
	uint32_t tail = __atomic_load_n(&ring->rg_tail, __ATOMIC_RELAXED);
	unsigned char *slot = ring->rg_slots[tail & (DLMP_RING_SLOTS - 1)];
	uint32_t len32 = (uint32_t)len;

	if (tail - __atomic_load_n(&ring->rg_head, __ATOMIC_ACQUIRE) >=
	    DLMP_RING_SLOTS)
		dlmd_client_ring_take(d, c);
	memcpy(slot, &len32, sizeof(len32));
	memcpy(slot + 8, p, len < DLMP_MAX_MSG ? len : DLMP_MAX_MSG);
	__atomic_store_n(&ring->rg_tail, tail + 1, __ATOMIC_RELEASE);
	if (left)
		return;
	dlmd_client_ring_take(d, c);
	if (__atomic_load_n(&ring->rg_head, __ATOMIC_ACQUIRE) != tail + 1)
		abort();	/* the daemon left it in the ring */
}

/* Take the answers the daemon wrote into the ring's answer ring (an
 * ATTACH that asked for one: dlmd_proto.h "The answer ring"); each must
 * decode.  How many. */
static int ans_drain(struct dlmp_ring *ring)
{
	uint32_t head = __atomic_load_n(&ring->rg_ans_head, __ATOMIC_RELAXED);
	uint32_t tail = __atomic_load_n(&ring->rg_ans_tail, __ATOMIC_ACQUIRE);
	int n = 0;

	for (; head != tail; head++, n++) {
		const unsigned char *slot =
			ring->rg_ans_slots[head & (DLMP_ANS_SLOTS - 1)];
		struct dlmp_msg m;
		uint32_t len;

		memcpy(&len, slot, sizeof(len));
		if (len > DLMP_MAX_MSG || dlmp_decode(slot + 8, len, &m))
			abort();	/* the daemon wrote garbage */
	}
	__atomic_store_n(&ring->rg_ans_head, head, __ATOMIC_RELEASE);
	return n;
}

static void open_ls(struct dlmd *d, struct dlmd_client *c, int *ast_peer)
{
	struct dlmp_msg m;
	unsigned char buf[DLMP_MAX_MSG];
	int sv[2], len;

	raw_ls_msg(&m, DLMP_LS_OPEN, FUZZ_LS);
	len = dlmp_encode(&m, buf, sizeof(buf));
	if (len < 0 || socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv))
		abort();
	dlmd_client_request(d, c, buf, (size_t)len, sv[1]);
	*ast_peer = sv[0];
}

/* Each input gets a fresh lockspace and client of the kept daemon
 * (tests/fuzz-daemon.h) and leaves no lockspace behind, so every input
 * starts from the same state. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct dlmd *d = fuzz_daemon_state();
	struct dlmd_client *c;
	struct dlmd_ls *dl;
	int sv[2], ast_peer = -1, extra_peers[MAX_PACKETS], nextra = 0;
	struct dlmp_ring *ring = NULL, *maps[MAX_PACKETS];
	int nmaps = 0;
	size_t off = 0;

	if (dlmd_ls_create(d, FUZZ_LS, 0666, 0, 0, false, &dl))
		abort();
	if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv))
		abort();
	c = dlmd_client_new(d, sv[1], 1234, 0, 0);
	if (!c)
		abort();
	open_ls(d, c, &ast_peer);
	if (drain(sv[0], false) != 1)
		abort();

	for (int i = 0; i < MAX_PACKETS && off + 2 <= size; i++) {
		size_t len = (size_t)data[off] | ((size_t)data[off + 1] << 8);
		unsigned int route = (unsigned int)len & (FUZZ_LEFT | FUZZ_SOCKET);
		struct dlmp_msg pm;
		int passed = -1;
		bool answered = true;

		len &= FUZZ_LEN;
		off += 2;
		if (len > size - off)
			len = size - off;
		if (dlmp_decode(data + off, len, &pm))
			fuzz_refuse("dlmp_decode");
		/* An LS_OPEN gets an AST socket, as libdlm sends one. */
		if (len >= DLMP_HDR_LEN && data[off + 6] == DLMP_LS_OPEN &&
		    data[off + 7] == 0 && nextra < MAX_PACKETS) {
			int p[2];

			if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, p))
				abort();
			passed = p[1];
			extra_peers[nextra++] = p[0];
		}
		/* A RING ATTACH gets a memfd, as libdlm sends one. */
		if (!ring && len >= DLMP_HDR_LEN + 4 && data[off + 6] == DLMP_RING &&
		    data[off + 7] == 0 && data[off + DLMP_HDR_LEN] == DLMP_RING_ATTACH &&
		    (passed = ring_fd(&maps[nmaps])) >= 0) {
			struct dlmp_ring *r = maps[nmaps++];

			dlmd_client_request(d, c, data + off, len, passed);
			/* took it: later packets through the ring */
			if (__atomic_load_n(&r->rg_sleeping, __ATOMIC_ACQUIRE))
				ring = r;
		} else if (ring && (route & FUZZ_SOCKET)) {
			dlmd_client_socket_request(d, c, data + off, len, passed);
			/* whatever the ring held went first */
			if (__atomic_load_n(&ring->rg_head, __ATOMIC_ACQUIRE) !=
			    __atomic_load_n(&ring->rg_tail, __ATOMIC_ACQUIRE))
				abort();
		} else if (ring) {
			answered = !(route & FUZZ_LEFT);
			ring_put(d, c, ring, data + off, len, !answered);
		} else {
			dlmd_client_request(d, c, data + off, len, passed);
		}
		if (drain(sv[0], false) + (ring ? ans_drain(ring) : 0) == 0 &&
		    answered && !may_hold(data + off, len))
			abort();	/* a request went unanswered */
		if (dlmd_client_nheld(c) > DLMP_MAX_HELD)
			abort();
		drain(ast_peer, true);
		off += len;
	}
	dlmd_client_close(d, c);
	for (int i = 0; i < nmaps; i++)
		munmap(maps[i], DLMP_RING_BYTES);
	close(sv[0]);
	close(ast_peer);
	for (int i = 0; i < nextra; i++)
		close(extra_peers[i]);
	while (d->d_lockspaces)
		if (dlmd_ls_release(d, d->d_lockspaces, true, NULL))
			abort();
	return 0;
}
