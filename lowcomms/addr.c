/*
 * lowcomms/addr.c: socket address helpers for the node table.
 *
 * Admission compares the source address of an incoming connection with the
 * addresses of every node, ignoring ports (the peer connects from an
 * ephemeral port).  A dual-stack listener reports IPv4 peers as IPv4-mapped
 * IPv6 addresses; they are unmapped first so that a node configured with
 * 10.0.0.1 matches ::ffff:10.0.0.1.
 */
#include "lowcomms/lowcomms.h"
#include "lowcomms/lowcomms_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

socklen_t lc_addr_len(const struct sockaddr_storage *ss)
{
	switch (ss->ss_family) {
	case AF_INET:
		return sizeof(struct sockaddr_in);
	case AF_INET6:
		return sizeof(struct sockaddr_in6);
	default:
		return 0;
	}
}

uint16_t lc_addr_port(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return ntohs(((const struct sockaddr_in *)ss)->sin_port);
	if (ss->ss_family == AF_INET6)
		return ntohs(((const struct sockaddr_in6 *)ss)->sin6_port);
	return 0;
}

void lc_addr_set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

void lc_addr_unmap(struct sockaddr_storage *ss)
{
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	struct sockaddr_in s4;

	if (ss->ss_family != AF_INET6 || !IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr))
		return;
	memset(&s4, 0, sizeof(s4));
	s4.sin_family = AF_INET;
	s4.sin_port = s6->sin6_port;
	memcpy(&s4.sin_addr, &s6->sin6_addr.s6_addr[12], sizeof(s4.sin_addr));
	memset(ss, 0, sizeof(*ss));
	memcpy(ss, &s4, sizeof(s4));
}

bool lc_addr_same_ip(const struct sockaddr_storage *a,
		     const struct sockaddr_storage *b)
{
	struct sockaddr_storage ua = *a, ub = *b;

	lc_addr_unmap(&ua);
	lc_addr_unmap(&ub);
	if (ua.ss_family != ub.ss_family)
		return false;
	if (ua.ss_family == AF_INET)
		return ((struct sockaddr_in *)&ua)->sin_addr.s_addr ==
		       ((struct sockaddr_in *)&ub)->sin_addr.s_addr;
	if (ua.ss_family == AF_INET6)
		return !memcmp(&((struct sockaddr_in6 *)&ua)->sin6_addr,
			       &((struct sockaddr_in6 *)&ub)->sin6_addr,
			       sizeof(struct in6_addr));
	return false;
}

const char *lc_addr_str(const struct sockaddr_storage *ss, char *buf,
			size_t len)
{
	char host[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		inet_ntop(AF_INET, &((const struct sockaddr_in *)ss)->sin_addr,
			  host, sizeof(host));
		snprintf(buf, len, "%s:%u", host, lc_addr_port(ss));
	} else if (ss->ss_family == AF_INET6) {
		inet_ntop(AF_INET6,
			  &((const struct sockaddr_in6 *)ss)->sin6_addr,
			  host, sizeof(host));
		snprintf(buf, len, "[%s]:%u", host, lc_addr_port(ss));
	} else {
		snprintf(buf, len, "(family %d)", ss->ss_family);
	}
	return buf;
}

int lc_addr_parse(const char *text, uint16_t port, struct sockaddr_storage *ss)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

	memset(ss, 0, sizeof(*ss));
	if (inet_pton(AF_INET, text, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons(port);
		return 0;
	}
	if (inet_pton(AF_INET6, text, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(port);
		return 0;
	}
	return -EINVAL;
}

int lc_addr_family_for(const struct sockaddr_storage *addrs, int n, int dflt)
{
	int family = n ? AF_INET : dflt;

	for (int i = 0; i < n; i++)
		if (addrs[i].ss_family == AF_INET6)
			family = AF_INET6;
	return family;
}

int lc_addr_pack(const struct sockaddr_storage *addrs, int n, int port,
		 unsigned char *buf, size_t *len)
{
	size_t off = 0;

	for (int i = 0; i < n; i++) {
		struct sockaddr_storage ss = addrs[i];
		socklen_t l = lc_addr_len(&ss);

		if (!l)
			return -EINVAL;
		if (port >= 0)
			lc_addr_set_port(&ss, (uint16_t)port);
		memcpy(buf + off, &ss, l);
		off += l;
	}
	*len = off;
	return 0;
}
