/*
 * plugin/cpgmsg.h - the messages dlmds send each other over CPG
 * (plugin/cluster.c's lockspace protocol), and their codec.
 *
 * Every message has a fixed little-endian header:
 *
 *    0 magic "DLMC"   4 version(16) type(16)   8 length (whole message)
 *   12 sender node id   16 target node id (0: everyone)
 *   20 lockspace id     24 sequence (the sender's change count, for logs)
 *
 * followed by a body of the type's layout.  START (type 1):
 *
 *    0 last event (0: the sender never ran the lockspace)
 *    4 flags (none defined yet; sent as 0)
 *    8 nmembers   12 nprev
 *   16 nmembers node ids (the change the START answers), then nprev node
 *      ids (the members of the sender's last event)
 *
 * The decoders take nothing on trust: a message whose length is not
 * exactly what its header and counts say, of another magic or version,
 * or with more than DLM_MAX_NODES ids, is refused; tests/fuzz-cpg.c
 * checks that whatever they accept encodes back to the same bytes.
 */
#ifndef DLMD_CPGMSG_H
#define DLMD_CPGMSG_H

#include <stddef.h>
#include <stdint.h>

#include "core/core.h"

#define CM_MAGIC		0x434d4c44u	/* "DLMC" little-endian */
#define CM_VERSION		1
#define CM_HDR_LEN		28
#define CM_START_FIXED		16	/* last_event, flags, nmembers, nprev */
#define CM_MAX_LEN		(CM_HDR_LEN + CM_START_FIXED + 2 * 4 * DLM_MAX_NODES)

enum cm_type {
	CM_START = 1,
};

struct cm_hdr {
	uint32_t	h_magic;
	uint16_t	h_version;
	uint16_t	h_type;
	uint32_t	h_length;
	uint32_t	h_sender;
	uint32_t	h_target;
	uint32_t	h_lsid;
	uint32_t	h_seq;
};

struct cm_start {
	uint32_t	st_last_event;		/* 0: fresh */
	uint32_t	st_flags;		/* none defined yet */
	uint32_t	st_nmembers;
	uint32_t	st_members[DLM_MAX_NODES];
	uint32_t	st_nprev;
	uint32_t	st_prev[DLM_MAX_NODES];
};

/* A START's whole message into buf (CM_MAX_LEN bytes); h_magic,
 * h_version, h_type and h_length are filled in here.  Returns its
 * length. */
size_t dlmd_cm_start_encode(unsigned char *buf, const struct cm_hdr *h,
			    const struct cm_start *st);
/* The header of a message of 'len' bytes: 0, or -EINVAL with *why. */
int dlmd_cm_hdr_decode(const unsigned char *msg, size_t len, struct cm_hdr *h,
		       const char **why);
/* A START's body (what follows the header): 0, or -EINVAL with *why. */
int dlmd_cm_start_decode(const unsigned char *body, size_t len,
			 struct cm_start *st, const char **why);

#endif
