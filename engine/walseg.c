/*
 * walseg.c -- the log's geometry and files (wal.h, layout in format.h):
 * stream positions, sector trailers, block headers, the segment files'
 * names and listing, and what open and the tools ask of them.
 */
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <xxhash.h>

#include "crc32c.h"
#include "wal_int.h"

/* ---- stream positions ---------------------------------------------------- */

uint64_t wal_stream_advance(uint64_t pos, uint64_t n) { return stream_end(pos, n); }

uint64_t wal_payload_between(uint64_t a, uint64_t b) {
    uint64_t pa = a / WAL_BLOCK * WB_PAYLOAD + pay_before(blk_off(a));
    uint64_t pb = b / WAL_BLOCK * WB_PAYLOAD + pay_before(blk_off(b));
    return pb > pa ? pb - pa : 0;
}

/* ---- sector trailers ---------------------------------------------------------- */

int wal_sector_valid(const uint8_t *s) {
    uint32_t stored = fmt_get32(s + WAL_SECTOR_DATA);
    if (stored == crc32c(0, s, WAL_SECTOR_DATA)) return 1;
    /* Never written: zero throughout.  (A written sector whose data is
     * zero carries the check of zeros, never a zero trailer, unless the
     * CRC happens to be 0 -- and then it is all zero and valid anyway.) */
    return stored == 0 && s[0] == 0 && memcmp(s, s + 1, WAL_SECTOR_DATA - 1) == 0;
}

void wal_sector_seal(uint8_t *s) { fmt_put32(s + WAL_SECTOR_DATA, crc32c(0, s, WAL_SECTOR_DATA)); }

/* ---- segment files ------------------------------------------------------- */

/* 1 and *base if NAME is a segment name (16 lower-case hex digits). */
static int parse_seg_name(const char *name, uint64_t *base) {
    uint64_t v = 0;
    int i = 0;
    for (; name[i]; i++) {
        char c = name[i];
        if (i >= 16) return 0;
        if (c >= '0' && c <= '9')
            v = v << 4 | (uint64_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = v << 4 | (uint64_t)(c - 'a' + 10);
        else
            return 0;
    }
    if (i != 16) return 0;
    *base = v;
    return 1;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* The segment files of WALDIR, ascending, into *OUT (malloc'd, may be NULL
 * when *N is 0).  A missing directory is an empty list. */
int wal_seg_list(const char *waldir, uint64_t **out, size_t *n) {
    *out = NULL;
    *n = 0;
    DIR *d = opendir(waldir);
    if (!d) return errno == ENOENT ? ENG_OK : io_status_from_errno(errno);
    uint64_t *v = NULL;
    size_t cnt = 0, cap = 0;
    struct dirent *e;
    int rc = ENG_OK;
    while ((e = readdir(d)) != NULL) {
        uint64_t base;
        if (!parse_seg_name(e->d_name, &base)) continue;
        if (cnt == cap) {
            size_t ncap = cap ? 2 * cap : 16;
            uint64_t *nv = realloc(v, ncap * sizeof *nv);
            if (!nv) {
                rc = ENG_NOMEM;
                break;
            }
            v = nv;
            cap = ncap;
        }
        v[cnt++] = base;
    }
    closedir(d);
    if (rc != ENG_OK) {
        free(v);
        return rc;
    }
    if (cnt > 1) qsort(v, cnt, sizeof *v, cmp_u64);
    *out = v;
    *n = cnt;
    return ENG_OK;
}

/* 1 if WALDIR holds a segment file for BASE (used only after an open
 * failed, to tell a missing segment from an unreadable one). */
int wal_seg_exists(const char *waldir, uint64_t base) {
    uint64_t *v;
    size_t n;
    if (wal_seg_list(waldir, &v, &n) != ENG_OK) return 1; /* cannot tell: do not call it missing */
    int found = 0;
    for (size_t i = 0; i < n && !found; i++) found = v[i] == base;
    free(v);
    return found;
}

char *wal_path_join(const char *a, const char *b) {
    size_t la = strlen(a), lb = strlen(b);
    char *p = malloc(la + lb + 2);
    if (p) {
        memcpy(p, a, la);
        p[la] = '/';
        memcpy(p + la + 1, b, lb + 1);
    }
    return p;
}

/* ---- block headers ---------------------------------------------------------- */

/* Start block P at stream position LSN; the witness and checksum are
 * filled when the block is written (wal_wb_seal). */
void wal_wb_init(uint8_t *p, uint64_t lsn, uint32_t gen, uint16_t cont) {
    fmt_put64(p + WB_LSN_OFF, lsn);
    fmt_put64(p + WB_DURABLE_OFF, 0);
    fmt_put32(p + WB_GEN_OFF, gen);
    fmt_put16(p + WB_CONT_OFF, cont);
    fmt_put16(p + WB_MAGIC_OFF, WB_MAGIC);
    fmt_put64(p + WB_CHECK_OFF, 0);
}

/* Fill the witness, the header check and the trailers of the block's
 * first NSEC sectors (the ones holding bytes; the rest of a partly filled
 * block is zero, trailers included, and valid as "never written").  Runs
 * every time a block is written, so a rewritten partial block's sectors
 * carry checks of what they hold now (W1, W3). */
void wal_wb_seal(uint8_t *p, uint64_t durable, unsigned nsec) {
#ifdef ENG_BROKEN_SEAL_BEFORE_WITNESS
    /* planted bug (tests/mutants.txt): the sector trailers are computed
     * before the witness and the header check are filled in, so sector 0's
     * trailer covers stale header bytes: a log whose end lies in a block's
     * first sector reads as damaged (W3a) and the database does not open. */
    for (unsigned i = 0; i < nsec; i++) wal_sector_seal(p + i * WAL_SECTOR);
    fmt_put64(p + WB_DURABLE_OFF, durable);
    fmt_put64(p + WB_CHECK_OFF, XXH3_64bits(p, WB_CHECKED));
#else
    fmt_put64(p + WB_DURABLE_OFF, durable);
    fmt_put64(p + WB_CHECK_OFF, XXH3_64bits(p, WB_CHECKED));
    for (unsigned i = 0; i < nsec; i++) wal_sector_seal(p + i * WAL_SECTOR);
#endif
}

/* Why a header is not valid at POS (NULL if it is); *H gets its fields.
 * *EXPECTED / *FOUND describe the mismatch for a report. */
const char *wal_wb_check_at(const uint8_t *p, uint64_t pos, wb_hdr *h, uint64_t *expected, uint64_t *found) {
    wb_decode(p, h);
    uint64_t c = XXH3_64bits(p, WB_CHECKED);
#ifdef ENG_BROKEN_BLOCK_HEADER_CHECK_SKIPS_SUM
    /* planted bug (tests/mutants.txt): the header's own check is not
     * compared, as if sector 0's trailer covered it (the reader tests
     * trailers only where the log stops): magic and position pass a header
     * whose witness or generation was damaged, and a generation flipped
     * upwards makes every later block look older, so the log ends there as
     * a torn tail and the synced commits after it are trimmed silently. */
    if (0) {
#else
    if (h->check != c) {
#endif
        *expected = h->check;
        *found = c;
        return "lies in a block whose header fails its checksum";
    }
    if (h->magic != WB_MAGIC) {
        *expected = WB_MAGIC;
        *found = h->magic;
        return "lies in a block with a bad magic";
    }
    if (h->lsn != pos) {
        *expected = pos;
        *found = h->lsn;
        return "lies in a block from another position (stale or misdirected)";
    }
    return NULL;
}

/* ---- tools ------------------------------------------------------------------------ */

uint64_t wal_guess_seg_size(const char *dir) {
    uint64_t lo = 0, hi = 0;
    return wal_seg_size_bounds(dir, &lo, &hi) == ENG_OK ? lo : 0;
}

int wal_seg_size_bounds(const char *dir, uint64_t *lo, uint64_t *hi) {
    *lo = *hi = 0;
    char *waldir = wal_path_join(dir, WAL_DIR);
    if (!waldir) return ENG_NOMEM;
    uint64_t *v = NULL;
    size_t n = 0;
    int rc = wal_seg_list(waldir, &v, &n);
    if (rc == ENG_OK && n == 0) rc = ENG_NOTFOUND;
    if (rc == ENG_OK && n >= 2) {
        uint64_t step = 0;
        for (size_t i = 1; i < n; i++) {
            uint64_t d = v[i] - v[i - 1];
            if (d && (!step || d < step)) step = d;
        }
        /* a gap makes the smallest step a multiple of the size: keep the
         * power of two that divides it */
        *lo = *hi = step & (~step + 1);
    } else if (rc == ENG_OK) {
        char name[17];
        seg_name(name, v[0]);
        char *path = wal_path_join(waldir, name);
        struct stat st;
        uint64_t size = 0;
        if (path && stat(path, &st) == 0) size = (uint64_t)st.st_size;
        free(path);
        *lo = 64u << 10; /* the smallest legal size */
        while (*lo < size) *lo <<= 1;
        *hi = 1ull << 32; /* the largest */
        if (v[0]) {
            uint64_t align = v[0] & (~v[0] + 1);
            if (align < *hi) *hi = align;
        }
        if (*hi < *lo) *hi = *lo;
    }
    free(v);
    free(waldir);
    return rc;
}

int wal_list_segments(const char *dir, uint64_t **out, size_t *n) {
    *out = NULL;
    *n = 0;
    char *waldir = wal_path_join(dir, WAL_DIR);
    if (!waldir) return ENG_NOMEM;
    int rc = wal_seg_list(waldir, out, n);
    free(waldir);
    return rc;
}

int wal_check_segments(const char *dir, uint64_t seg_size, uint64_t from, uint64_t to, const eng_reporter *rep) {
    if (!valid_seg_size(seg_size) || to < from) return ENG_INVALID;
    uint64_t *v;
    size_t n;
    int rc = wal_list_segments(dir, &v, &n);
    if (rc != ENG_OK) return rc;
    uint64_t mask = seg_size - 1;
#ifdef ENG_BROKEN_SEGMENT_CHECK_SKIPS_CHECKPOINT_SEGMENT
    /* planted bug (tests/mutants.txt): < instead of <=, so the segment that
     * holds the checkpoint record is never required (nor any segment when
     * the redo point lies in the same one). */
    for (uint64_t s = from & ~mask; s < (to & ~mask) && rc == ENG_OK; s += seg_size) {
#else
    for (uint64_t s = from & ~mask; s <= (to & ~mask) && rc == ENG_OK; s += seg_size) {
#endif
        int found = 0;
        for (size_t i = 0; i < n && !found; i++) found = v[i] == s;
        if (found) continue;
        char name[17], file[64];
        seg_name(name, s);
        snprintf(file, sizeof file, "%s/%s", WAL_DIR, name);
        rc = eng_report(rep, ENG_LAYER_WAL, file, -1, -1, -1, s, 0,
                        "WAL segment %s is missing: the log from the redo point 0x%llx to the "
                        "checkpoint record 0x%llx that control names must be whole",
                        file, (unsigned long long)from, (unsigned long long)to);
    }
    free(v);
    return rc;
}

int wal_remove_segments(io_ctx *io, const char *dir) {
    uint64_t *v;
    size_t n;
    int rc = wal_list_segments(dir, &v, &n);
    if (rc != ENG_OK) return rc;
    char *waldir = wal_path_join(dir, WAL_DIR);
    if (!waldir) rc = ENG_NOMEM;
    for (size_t i = 0; i < n && rc == ENG_OK; i++) {
        char name[17];
        seg_name(name, v[i]);
        rc = io_unlink(io, waldir, name);
        if (rc == ENG_NOTFOUND) rc = ENG_OK; /* gone already: what we wanted */
    }
    free(waldir);
    free(v);
    return rc;
}
