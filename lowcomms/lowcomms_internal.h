/*
 * lowcomms/lowcomms_internal.h: helpers shared inside lowcomms/ only.
 */
#ifndef DLMD_LOWCOMMS_INTERNAL_H
#define DLMD_LOWCOMMS_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Room for "[ffff:...:ffff]:65535". */
#define LC_ADDR_STRLEN 64

/* Length of the sockaddr for its family, or 0 if the family is not IP. */
socklen_t lc_addr_len(const struct sockaddr_storage *ss);
uint16_t lc_addr_port(const struct sockaddr_storage *ss);
void lc_addr_set_port(struct sockaddr_storage *ss, uint16_t port);
/* Same host address (ports ignored); an IPv4-mapped IPv6 address equals
 * the IPv4 address it maps. */
bool lc_addr_same_ip(const struct sockaddr_storage *a,
		     const struct sockaddr_storage *b);
/* Turn an IPv4-mapped IPv6 address into plain IPv4, in place. */
void lc_addr_unmap(struct sockaddr_storage *ss);
/* "1.2.3.4:5" or "[::1]:5" into buf (LC_ADDR_STRLEN bytes). */
const char *lc_addr_str(const struct sockaddr_storage *ss, char *buf,
			size_t len);

#endif /* DLMD_LOWCOMMS_INTERNAL_H */
