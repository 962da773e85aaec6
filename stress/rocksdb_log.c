/*
 * rocksdb_log.c -- a RocksDB log file's records checked on their own
 * (rocksdb_log.h draws the format).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rocksdb_log.h"

/* The fault door's (faults/door.h), weak: a binary without the door (the
 * adapter's own suite) has no door to pass. */
extern void flt_door_bypass(int on) __attribute__((weak));

#define LOG_BLOCK   32768u
#define HEADER      7u
#define RECYCLABLE  11u
#define MASK_DELTA  0xa282ead8u
#define CRC32C_POLY 0x82f63b78u

static uint32_t crc_table[256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ CRC32C_POLY : c >> 1;
        crc_table[i] = c;
    }
}

static uint32_t crc32c(const uint8_t *p, size_t n) {
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) c = crc_table[(c ^ p[i]) & 0xff] ^ (c >> 8);
    return c ^ 0xffffffffu;
}

static uint32_t unmask(uint32_t m) {
    uint32_t r = m - MASK_DELTA;
    return (r >> 17) | (r << 15);
}

static uint32_t le32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The records of BLOCK (N bytes, at file offset AT): 1 with the first
 * failing one's range, 0 when all hold, 2 when the walk ends here (RL1). */
static int check_block(const uint8_t *b, size_t n, uint64_t at, uint64_t *off, uint64_t *len) {
    size_t i = 0;
    while (n - i >= HEADER) {
        uint32_t length = (uint32_t)b[i + 4] | (uint32_t)b[i + 5] << 8;
        uint8_t type = b[i + 6];
        if (type == 0 && length == 0) return 0; /* preallocated: the block's rest is skipped */
        size_t head = type >= 5 && type <= 8 ? RECYCLABLE : HEADER;
        if (n - i < head || length > n - i - head) return 2; /* RL1 */
        /* The CRC covers the type byte, a recyclable record's log number
         * and the payload: the bytes from the type on. */
        if (crc32c(b + i + 6, head - 6 + length) != unmask(le32(b + i))) {
            *off = at + i;
            *len = head + length;
            return 1;
        }
        i += head + length;
    }
    return 0;
}

/* The walk, its reads the harness's own: past the fault door, which
 * must neither fault nor count them as the engine's. */
static int walk(const char *path, uint64_t *off, uint64_t *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    uint8_t *b = malloc(LOG_BLOCK);
    int found = b ? 0 : -1;
    for (uint64_t at = 0; found == 0; at += LOG_BLOCK) {
        ssize_t n = pread(fd, b, LOG_BLOCK, (off_t)at);
        if (n < 0) found = -1;
        if (n <= 0) break;
        found = check_block(b, (size_t)n, at, off, len);
        if ((size_t)n < LOG_BLOCK) break; /* the file's last block */
    }
    free(b);
    close(fd);
    return found == 2 ? 0 : found;
}

int st_rocksdb_log_bad_record(const char *path, uint64_t *off, uint64_t *len) {
    pthread_once(&crc_once, crc_init);
    if (flt_door_bypass) flt_door_bypass(1);
    int found = walk(path, off, len);
    if (flt_door_bypass) flt_door_bypass(0);
    return found;
}
