/*
 * crc32c.c -- CRC32C (contract in crc32c.h).
 *
 * The hardware path runs one stream of 8-byte steps: about 3 cycles per
 * 8 bytes (the instruction's latency), so a 508-byte WAL sector costs
 * some 200 cycles, nothing next to the write that carries it.  The table
 * path (reflected polynomial 0x82F63B78, a byte at a time) exists for
 * CPUs without SSE 4.2 and gives the same values.
 */
#include <string.h>

#include "crc32c.h"

static uint32_t table[256];
static int table_ready;

static void table_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1)));
        table[i] = c;
    }
    __atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

static uint32_t crc32c_sw(uint32_t c, const uint8_t *p, size_t len) {
    /* Racing initialisers compute the same table: harmless. */
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE)) table_init();
    for (size_t i = 0; i < len; i++) c = table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c;
}

#if CRC32C_HW
static int have_hw = -1;

int crc32c_have_hw(void) {
    int h = __atomic_load_n(&have_hw, __ATOMIC_RELAXED);
    if (h < 0) {
        h = __builtin_cpu_supports("sse4.2") ? 1 : 0;
        __atomic_store_n(&have_hw, h, __ATOMIC_RELAXED);
    }
    return h;
}

static CRC32C_HW_TARGET uint32_t crc32c_hw(uint32_t c, const uint8_t *p, size_t len) {
    uint64_t x = c;
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        x = crc32c_step64(x, w);
    }
    uint32_t y = (uint32_t)x;
    if (i + 4 <= len) {
        uint32_t w;
        memcpy(&w, p + i, 4);
        y = __builtin_ia32_crc32si(y, w);
        i += 4;
    }
    for (; i < len; i++) y = crc32c_step8(y, p[i]);
    return y;
}
#else
int crc32c_have_hw(void) { return 0; }
#endif

uint32_t crc32c(uint32_t crc, const void *p, size_t len) {
    uint32_t c = ~crc;
#if CRC32C_HW
    if (crc32c_have_hw()) return ~crc32c_hw(c, p, len);
#endif
    return ~crc32c_sw(c, p, len);
}
