/*
 * tests/fuzz-cpg.c - fuzz target for the messages dlmds send each other
 * over CPG (plugin/cpgmsg.c).
 *
 * The input is one CPG message as corosync would deliver it.  Besides
 * the sanitizers' verdict, the decoders must be exact: a message they
 * accept (header, and a START's, JOIN's, LEAVE's, ANNOUNCE's, FAILED's,
 * FENCE_CLAIM's, FENCE_RESULT's or LS_RESTART's body) encodes back to the same bytes,
 * so nothing in it was skipped, guessed or left unchecked; every name
 * accepted is a valid lockspace name.
 *
 * The input is a message without its SEAL (no fuzzer forges a MAC):
 * the seal is checked apart.  The input as a sealed message must not
 * verify under the fuzz key (all zero, as with crypto = none); a message
 * the decoders accept, sealed under that key, verifies as its sender and
 * gives back its bytes, incarnation and sequence, and no longer verifies
 * with its last byte changed or as another pid.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/cpgmsg.h"
#include "tests/fuzz-verdict.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const unsigned char fuzz_key[CM_KEY_LEN];	/* zeros */

/* A message the decoders took: seal it, open it, break it. */
static void seal_check(const uint8_t *data, size_t size)
{
	static unsigned char sealed[CM_WIRE_MAX_LEN];
	struct cm_seal se = { 0x0123456789abcdefull, size + 1 }, back;
	const char *why = NULL;
	size_t len, inner = 0;

	memcpy(sealed, data, size);
	len = dlmd_cm_seal(sealed, size, fuzz_key, 7, 4242, &se);
	if (len != size + CM_SEAL_LEN ||
	    dlmd_cm_open(sealed, len, fuzz_key, 7, 4242, &back, &inner, &why) ||
	    inner != size || memcmp(sealed, data, size) ||
	    back.se_inc != se.se_inc || back.se_seq != se.se_seq)
		abort();
	if (!dlmd_cm_open(sealed, len, fuzz_key, 7, 4243, &back, &inner, &why))
		abort();
	sealed[len - 1] ^= 1;
	if (!dlmd_cm_open(sealed, len, fuzz_key, 7, 4242, &back, &inner, &why))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static unsigned char again[CM_MAX_LEN];
	static struct cm_start st;
	static struct cm_announce an;
	static struct cm_failed fl;
	struct cm_fence fc;
	struct cm_config cg;
	struct cm_restart rs;
	static struct cm_unreach ur;
	struct cm_name nm;
	struct cm_hdr h;
	const char *why = NULL;
	const unsigned char *body = data + CM_HDR_LEN;
	size_t blen = size - CM_HDR_LEN, len;
	struct cm_seal se;
	int rv;

	/* nothing the fuzzer writes carries a good MAC */
	if (!dlmd_cm_open(data, size, fuzz_key, 7, 4242, &se, &len, &why))
		abort();
	why = NULL;
	rv = dlmd_cm_hdr_decode(data, size, &h, &why);
	if (rv) {
		if (!why)
			abort();	/* a refusal says why */
		if (rv == -EPROTONOSUPPORT && h.h_version == CM_VERSION)
			abort();
		fuzz_refuse("dlmd_cm_hdr_decode");
		return 0;
	}
	if (h.h_length != size || size > CM_MAX_LEN)
		abort();
	why = NULL;
	switch (h.h_type) {
	case CM_START:
		if (dlmd_cm_start_decode(body, blen, &st, &why))
			break;
		if (!dlmd_cm_name_valid(st.st_ls.n_name))
			abort();
		len = dlmd_cm_start_encode(again, &h, &st);
		if (len != size || memcmp(again, data, size))
			abort();
		seal_check(data, size);
		return 0;
	case CM_JOIN:
	case CM_LEAVE:
		if (dlmd_cm_ls_decode(body, blen, &nm, &why))
			break;
		if (!dlmd_cm_name_valid(nm.n_name))
			abort();
		len = dlmd_cm_ls_encode(again, &h, h.h_type, nm.n_name);
		if (len != size || memcmp(again, data, size))
			abort();
		seal_check(data, size);
		return 0;
	case CM_ANNOUNCE:
		if (dlmd_cm_announce_decode(body, blen, &an, &why))
			break;
		for (uint32_t i = 0; i < an.an_count; i++)
			if (!dlmd_cm_name_valid(an.an_ls[i].n_name))
				abort();
		len = dlmd_cm_announce_encode(again, &h, &an);
		if (len != size || memcmp(again, data, size))
			abort();
		seal_check(data, size);
		return 0;
	case CM_FAILED:
		if (dlmd_cm_failed_decode(body, blen, &fl, &why))
			break;
		if (!dlmd_cm_name_valid(fl.fl_ls.n_name))
			abort();
		len = dlmd_cm_failed_encode(again, &h, &fl);
		if (len != size || memcmp(again, data, size))
			abort();
		seal_check(data, size);
		return 0;
	case CM_FENCE_CLAIM:
	case CM_FENCE_RESULT:
		if (dlmd_cm_fence_decode(body, blen, h.h_type, &fc, &why))
			break;
		if (!fc.fc_nodeid)
			abort();
		len = dlmd_cm_fence_encode(again, &h, h.h_type, &fc);
		if (len != size || memcmp(again, data, size))
			abort();
		seal_check(data, size);
		return 0;
	case CM_RESTART:
		if (dlmd_cm_restart_decode(body, blen, &rs, &why))
			break;
		if (!dlmd_cm_name_valid(rs.rs_ls.n_name) || !rs.rs_event)
			abort();
		len = dlmd_cm_restart_encode(again, &h, &rs);
		if (len != size || memcmp(again, data, size))
			abort();
		seal_check(data, size);
		return 0;
	case CM_UNREACH:
		if (dlmd_cm_unreach_decode(body, blen, &ur, &why))
			break;
		for (uint32_t i = 0; i < ur.ur_count; i++)
			if (!ur.ur_ids[i] || (i && ur.ur_ids[i] <= ur.ur_ids[i - 1]))
				abort();
		len = dlmd_cm_unreach_encode(again, &h, &ur);
		if (len != size || memcmp(again, data, size))
			abort();
		seal_check(data, size);
		return 0;
	case CM_CONFIG:
		if (dlmd_cm_config_decode(body, blen, &cg, &why))
			break;
		if ((cg.cg_flags && cg.cg_flags != CM_CONFIG_SYNC) ||
		    (!cg.cg_flags && cg.cg_view) ||
		    !cg.cg_nnodes || cg.cg_nnodes > DLM_MAX_NODES)
			abort();
		len = dlmd_cm_config_encode(again, &h, &cg);
		if (len != size || memcmp(again, data, size))
			abort();
		seal_check(data, size);
		return 0;
	default:
		fuzz_refuse("cluster.c (an unknown type)");
		return 0;	/* cluster.c ignores unknown types */
	}
	if (!why)
		abort();	/* a refused body says why */
	fuzz_refuse("the body's decoder");
	return 0;
}
