/*
 * crc32c.h -- CRC32C (Castagnoli, the iSCSI/ext4 polynomial 0x1EDC6F41),
 * shared by the code that needs a small, fast check: the WAL's sector
 * trailers (wal.h) and the per key-value codes of cached pages (kvprot.c).
 *
 * crc32c() is the standard function (initial value and final xor ~0, so
 * crc32c(0, "123456789", 9) == 0xE3069283) and takes the SSE 4.2
 * instruction when the CPU has it, a table otherwise; both give the same
 * value.  The step functions expose the instruction itself for callers
 * that interleave several streams of their own (kvprot.c): they may be
 * called only from a function compiled for SSE 4.2 (CRC32C_HW_TARGET) and
 * only when crc32c_have_hw() said yes.
 */
#ifndef ENGINE_CRC32C_H
#define ENGINE_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC32C of P[0, LEN) continuing CRC (0 to start a new one). */
uint32_t crc32c(uint32_t crc, const void *p, size_t len);

/* 1 if the CPU has the CRC32C instruction (checked once). */
int crc32c_have_hw(void);

#if defined(__x86_64__)
#define CRC32C_HW        1
#define CRC32C_HW_TARGET __attribute__((target("sse4.2")))
static inline CRC32C_HW_TARGET uint64_t crc32c_step64(uint64_t crc, uint64_t word) {
    return __builtin_ia32_crc32di(crc, word);
}
static inline CRC32C_HW_TARGET uint32_t crc32c_step8(uint32_t crc, uint8_t byte) {
    return __builtin_ia32_crc32qi(crc, byte);
}
#else
#define CRC32C_HW 0
#endif

#endif
