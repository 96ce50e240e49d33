/*
 * tests/fuzz-cpg.c - fuzz target for the messages dlmds send each other
 * over CPG (plugin/cpgmsg.c).
 *
 * The input is one CPG message as corosync would deliver it.  Besides
 * the sanitizers' verdict, the decoders must be exact: a message they
 * accept (header, and a START's body) encodes back to the same bytes, so
 * nothing in it was skipped, guessed or left unchecked.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/cpgmsg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char again[CM_MAX_LEN];
	struct cm_start st;
	struct cm_hdr h;
	const char *why = NULL;
	size_t len;

	if (dlmd_cm_hdr_decode(data, size, &h, &why)) {
		if (!why)
			abort();	/* a refusal says why */
		return 0;
	}
	if (h.h_length != size || size > CM_MAX_LEN)
		abort();
	if (h.h_type != CM_START)
		return 0;	/* cluster.c ignores unknown types */
	why = NULL;
	if (dlmd_cm_start_decode(data + CM_HDR_LEN, size - CM_HDR_LEN, &st, &why)) {
		if (!why)
			abort();
		return 0;
	}
	len = dlmd_cm_start_encode(again, &h, &st);
	if (len != size || memcmp(again, data, size))
		abort();
	return 0;
}
