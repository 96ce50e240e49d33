/*
 * plugin/http-parse.c - what an HTTP request to the metrics endpoint asks.
 *
 * No I/O and no state: dlmd_http_parse() looks at the bytes received so
 * far (plugin/metrics-http.c calls it after every read) and says whether
 * to read on or what to answer.  Only what GET /metrics needs is
 * understood; everything else is refused, never guessed:
 *
 *   request line   METHOD SP TARGET SP "HTTP/" DIGIT "." DIGIT, ended by
 *                  LF or CR LF.  METHOD is 1..16 capital letters, TARGET
 *                  printable ASCII without spaces; anything else is 400,
 *                  answered as soon as the line is complete.  A major
 *                  version other than 1 is 505.
 *   head           the request line and header lines up to an empty line,
 *                  at most DLMD_HTTP_REQ_MAX bytes (431 past it); header
 *                  lines are not interpreted.  A NUL byte anywhere is 400.
 *   verdict        GET with the path /metrics (a query string ignored):
 *                  200; another method: 405; another path: 404.  Given
 *                  only once the head is complete, so the whole request
 *                  has been read when the answer goes out.
 * The fuzz target tests/fuzz-http.c checks these rules on random input.
 */
#include <string.h>

#include "plugin/metrics.h"

#define HTTP_METHOD_MAX		16

/* The end of the head (after its blank line), or NULL. */
static const char *head_end(const char *buf, size_t len)
{
	for (size_t i = 0; i + 1 < len; i++) {
		if (buf[i] != '\n')
			continue;
		if (buf[i + 1] == '\n')
			return buf + i + 2;
		if (buf[i + 1] == '\r' && i + 2 < len && buf[i + 2] == '\n')
			return buf + i + 3;
	}
	return NULL;
}

/* The request line "METHOD SP TARGET SP HTTP/1.x" (its CR LF excluded,
 * 'n' bytes): the verdict, as if the head were complete. */
static enum dlmd_http_verdict judge_line(const char *s, size_t n)
{
	const char *sp1 = memchr(s, ' ', n), *sp2, *target, *ver;
	size_t mlen, tlen, vlen, plen;

	if (!sp1)
		return DLMD_HTTP_BAD_REQUEST;
	mlen = (size_t)(sp1 - s);
	target = sp1 + 1;
	sp2 = memchr(target, ' ', n - mlen - 1);
	if (!sp2)
		return DLMD_HTTP_BAD_REQUEST;
	tlen = (size_t)(sp2 - target);
	ver = sp2 + 1;
	vlen = n - mlen - tlen - 2;
	if (!mlen || mlen > HTTP_METHOD_MAX || !tlen || !vlen)
		return DLMD_HTTP_BAD_REQUEST;
	for (size_t i = 0; i < mlen; i++)
		if (s[i] < 'A' || s[i] > 'Z')
			return DLMD_HTTP_BAD_REQUEST;
	for (size_t i = 0; i < tlen; i++)
		if ((unsigned char)target[i] <= ' ' || (unsigned char)target[i] >= 0x7f)
			return DLMD_HTTP_BAD_REQUEST;
	if (vlen != 8 || memcmp(ver, "HTTP/", 5) || ver[5] < '0' || ver[5] > '9' ||
	    ver[6] != '.' || ver[7] < '0' || ver[7] > '9')
		return DLMD_HTTP_BAD_REQUEST;
	if (ver[5] != '1')
		return DLMD_HTTP_BAD_VERSION;
	if (mlen != 3 || memcmp(s, "GET", 3))
		return DLMD_HTTP_BAD_METHOD;
	plen = tlen;
	for (size_t i = 0; i < tlen; i++)
		if (target[i] == '?') {
			plen = i;
			break;
		}
	if (plen != 8 || memcmp(target, "/metrics", 8))
		return DLMD_HTTP_NOT_FOUND;
	return DLMD_HTTP_OK;
}

enum dlmd_http_verdict dlmd_http_parse(const char *buf, size_t len)
{
	const char *nl, *end;
	size_t n;
	enum dlmd_http_verdict v;

	if (memchr(buf, '\0', len))
		return DLMD_HTTP_BAD_REQUEST;
	nl = memchr(buf, '\n', len);
	if (!nl)
		return len >= DLMD_HTTP_REQ_MAX ? DLMD_HTTP_TOO_LARGE : DLMD_HTTP_MORE;
	n = (size_t)(nl - buf);
	if (n && buf[n - 1] == '\r')
		n--;
	v = judge_line(buf, n);
	if (v == DLMD_HTTP_BAD_REQUEST || v == DLMD_HTTP_BAD_VERSION)
		return v;	/* no need to read on */
	end = head_end(buf, len);
	if (!end)
		return len >= DLMD_HTTP_REQ_MAX ? DLMD_HTTP_TOO_LARGE : DLMD_HTTP_MORE;
	return v;
}

const char *dlmd_http_reason(enum dlmd_http_verdict v)
{
	switch (v) {
	case DLMD_HTTP_OK:		return "OK";
	case DLMD_HTTP_BAD_REQUEST:	return "Bad Request";
	case DLMD_HTTP_NOT_FOUND:	return "Not Found";
	case DLMD_HTTP_BAD_METHOD:	return "Method Not Allowed";
	case DLMD_HTTP_TOO_LARGE:	return "Request Header Fields Too Large";
	case DLMD_HTTP_BAD_VERSION:	return "HTTP Version Not Supported";
	case DLMD_HTTP_MORE:		break;
	}
	return "Internal Server Error";
}
