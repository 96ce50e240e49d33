/*
 * tests/sim-trace.c - the ring of recent events.
 *
 * Every operation issued, message delivered, AST received and engine log
 * line is one short text line.  The last SIM_TRACE_LEN of them are kept
 * and printed when a check fails, so a failure report shows what led to
 * it; with -v every line is printed as it happens instead.  Lines carry
 * the step number and virtual time, never an address, so two runs of one
 * seed print the same bytes.
 */
#include <stdio.h>
#include <string.h>

#include "tests/sim.h"

void trace_add(struct sim_trace *t, const char *line)
{
	if (t->t_stream) {
		fprintf(t->t_stream, "%s\n", line);
		return;
	}
	snprintf(t->t_text[t->t_next], SIM_TRACE_TEXT, "%s", line);
	t->t_next = (t->t_next + 1) % SIM_TRACE_LEN;
	t->t_count++;
}

void trace_print(const struct sim_trace *t, FILE *out)
{
	unsigned int n = t->t_count < SIM_TRACE_LEN ? (unsigned int)t->t_count
						    : SIM_TRACE_LEN;
	unsigned int i = (t->t_next + SIM_TRACE_LEN - n) % SIM_TRACE_LEN;

	if (t->t_stream)
		return;
	fprintf(out, "--- trace: last %u of %llu events ---\n", n,
		(unsigned long long)t->t_count);
	while (n--) {
		fprintf(out, "%s\n", t->t_text[i]);
		i = (i + 1) % SIM_TRACE_LEN;
	}
}

/* A resource key ("\1a\1x": components with a length byte) as text:
 * printable bytes as is, others as \xNN, components joined by '/'; long
 * runs of one byte are shortened to "<byte>*<count>". */
void trace_key(const unsigned char *key, unsigned int keylen, char *out, size_t outlen)
{
	size_t o = 0;
	unsigned int i = 0;

	if (!outlen)
		return;
	out[0] = '\0';
	if (keylen > 1 + DLM_KEY_DIGEST_LEN && key[0] == DLM_KEY_DIGEST_MARK &&
	    outlen > 32) {
		/* a deep sub-resource: its parent's digest, then its name */
		o = (size_t)snprintf(out, outlen, "\\#%02x%02x%02x%02x", key[1],
				     key[2], key[3], key[4]);
		i = 1 + DLM_KEY_DIGEST_LEN;
	}
	while (i < keylen && o + 16 < outlen) {
		unsigned int n = key[i++], j;

		if (o)
			out[o++] = '/';
		for (j = 0; j < n && i + j < keylen && o + 12 < outlen; ) {
			unsigned char c = key[i + j];
			unsigned int run = 1;

			while (j + run < n && i + j + run < keylen &&
			       key[i + j + run] == c)
				run++;
			if (c >= 0x21 && c < 0x7f && c != '\\' && c != '/')
				out[o++] = (char)c;
			else
				o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
			if (run > 3) {
				o += (size_t)snprintf(out + o, outlen - o, "*%u", run);
				j += run;
			} else {
				j++;
			}
		}
		i += n;
		out[o] = '\0';
	}
	out[o < outlen ? o : outlen - 1] = '\0';
}
