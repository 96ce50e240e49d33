/*
 * core/le.h - little-endian loads and stores on byte buffers.
 *
 * Every wire format of dlmd (the engine's messages in core/wire.h, the
 * lowcomms frame and handshake, the daemon-group CPG messages, the client
 * protocol) writes its integers least significant byte first.  These are
 * the only helpers that do it: each codec includes this header instead of
 * keeping its own copy.  They work byte by byte, so the buffer may be
 * unaligned and the host of either byte order; nothing here depends on
 * struct packing.  Pure static inline code, no I/O, so core/ may use it;
 * lowcomms/, plugin/ and libdlm/ include it as "core/le.h".  It is not
 * installed: libdlm.h does not need it.
 */
#ifndef DLMD_CORE_LE_H
#define DLMD_CORE_LE_H

#include <stdint.h>

static inline void dlm_put_le16(unsigned char *p, uint16_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
}

static inline void dlm_put_le32(unsigned char *p, uint32_t v)
{
	dlm_put_le16(p, (uint16_t)v);
	dlm_put_le16(p + 2, (uint16_t)(v >> 16));
}

static inline void dlm_put_le64(unsigned char *p, uint64_t v)
{
	dlm_put_le32(p, (uint32_t)v);
	dlm_put_le32(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t dlm_get_le16(const unsigned char *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t dlm_get_le32(const unsigned char *p)
{
	return (uint32_t)dlm_get_le16(p) |
	       ((uint32_t)dlm_get_le16(p + 2) << 16);
}

static inline uint64_t dlm_get_le64(const unsigned char *p)
{
	return (uint64_t)dlm_get_le32(p) |
	       ((uint64_t)dlm_get_le32(p + 4) << 32);
}

#endif /* DLMD_CORE_LE_H */
