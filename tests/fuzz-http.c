/*
 * tests/fuzz-http.c - fuzz target for the metrics endpoint's request
 * parser (plugin/http-parse.c).
 *
 * The input is the bytes a client sent so far.  Besides the sanitizers'
 * verdict (the parser reads only the len bytes it is given: the input is
 * copied into a buffer of exactly that size), the rules of the file's
 * header must hold:
 *   - "read on" only while the input is under DLMD_HTTP_REQ_MAX bytes,
 *     has no NUL and no complete head;
 *   - 200 only for a request line "GET /metrics HTTP/1.x" (or with a
 *     query string) whose head is complete;
 *   - every verdict has a reason phrase;
 *   - a verdict given for a prefix is final: the bytes after it do not
 *     change it when they do not complete anything the prefix lacked
 *     (checked for the verdicts 400 and 505, which the parser gives as
 *     soon as the request line is complete).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plugin/metrics.h"
#include "tests/fuzz-verdict.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Is there an empty line (LF LF or LF CR LF) in buf? */
static int has_head_end(const char *buf, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++)
		if (buf[i] == '\n' && (buf[i + 1] == '\n' ||
		     (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n')))
			return 1;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf;
	enum dlmd_http_verdict v;

	if (size > 2 * DLMD_HTTP_REQ_MAX)
		return 0;	/* the endpoint never holds more */
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	v = dlmd_http_parse(buf, size);
	if (v == DLMD_HTTP_BAD_REQUEST || v == DLMD_HTTP_BAD_VERSION ||
	    v == DLMD_HTTP_TOO_LARGE)
		fuzz_refuse("dlmd_http_parse");
	if (!dlmd_http_reason(v)[0])
		abort();
	switch (v) {
	case DLMD_HTTP_MORE:
		if (size >= DLMD_HTTP_REQ_MAX || memchr(buf, '\0', size) ||
		    has_head_end(buf, size))
			abort();
		break;
	case DLMD_HTTP_OK:
		if (size < 22 || memcmp(buf, "GET /metrics", 12) ||
		    (buf[12] != ' ' && buf[12] != '?') || !has_head_end(buf, size) ||
		    memchr(buf, '\0', size))
			abort();
		break;
	case DLMD_HTTP_BAD_REQUEST:
	case DLMD_HTTP_BAD_VERSION: {
		/* the same verdict for every longer input that begins so */
		const char *nl = memchr(buf, '\n', size);

		if (nl && !memchr(buf, '\0', size)) {
			size_t cut = (size_t)(nl - buf) + 1;

			if (dlmd_http_parse(buf, cut) != v)
				abort();
		}
		break;
	}
	case DLMD_HTTP_NOT_FOUND:
	case DLMD_HTTP_BAD_METHOD:
		if (!has_head_end(buf, size) || memchr(buf, '\0', size))
			abort();
		break;
	case DLMD_HTTP_TOO_LARGE:
		if (size < DLMD_HTTP_REQ_MAX)
			abort();
		break;
	default:
		abort();
	}
	free(buf);
	return 0;
}
