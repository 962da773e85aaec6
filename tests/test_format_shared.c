/*
 * test_format_shared.c -- engine/format.h, as the fault library sees it,
 * says where the engine really puts its bytes.
 *
 * The file is built against faults/frame.h (which takes the formats
 * from format.h) and engine.h only: no page.h, wal.h or control.h, none
 * of the engine's decoders.  It creates a database through the public API
 * at every page size, closes it, then reads the files raw and decodes
 * them with format.h's offsets, sizes and magics alone.
 *
 * Proves:
 *   - the control file: its size, magic, version, page size, flags,
 *     segment size and checksum where format.h puts them;
 *   - the data file: every page's header (block, type, checksum: the page
 *     hash of [PAGE_CHECKSUM_FROM, ps) seeded with the block, computed
 *     here from format.h's definition alone), the meta page's
 *     fields, a leaf's slot array right after its hint area
 *     (LEAF_HINT_BYTES: 80, 160, 320 bytes), valid hint nibbles, cells
 *     inside the page, overflow and internal pages where the header says;
 *   - the log: segment names, every block header (position, magic, check)
 *     and every sector trailer of the written blocks, and the record at
 *     the control file's redo point (position, type, length, checksum),
 *     gathered across trailers and block headers by WAL_BLOCK_PAYLOAD's
 *     geometry.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

#include "engine.h"
#include "faults/frame.h" /* format.h, from the fault library's side */
#include "testutil.h"

TestSuite(format_shared, .fini = tu_cleanup);

#define SEG_SIZE (64u << 10)
#define NKEYS    600u

/* ---- helpers ------------------------------------------------------------------ */

/* The whole file DIR/NAME (malloc'd), its size in *LEN. */
static uint8_t *slurp(const char *dir, const char *name, size_t *len) {
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDONLY);
    cr_assert(fd >= 0, "open %s: %s", path, strerror(errno));
    struct stat sb;
    cr_assert(fstat(fd, &sb) == 0);
    uint8_t *buf = malloc((size_t)sb.st_size + 1);
    cr_assert(buf);
    size_t done = 0;
    while (done < (size_t)sb.st_size) {
        ssize_t n = pread(fd, buf + done, (size_t)sb.st_size - done, (off_t)done);
        cr_assert(n > 0, "read %s", path);
        done += (size_t)n;
    }
    close(fd);
    *len = done;
    return buf;
}

/* CRC32C, bitwise (reflected 0x82F63B78, init and final xor ~0): an
 * independent check of the sector trailers. */
static uint32_t crc32c_ref(const uint8_t *p, size_t n) {
    uint32_t c = ~0u;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0x82F63B78u & (0u - (c & 1u)));
    }
    return ~c;
}

/* Create a database of page size PS under a fresh temp dir: keys with
 * small values (leaves and an internal level), one value large enough
 * for an overflow chain, reads (hint bits), a clean close. */
static const char *make_db(uint32_t ps) {
    const char *dir = tu_tmpdir_db();
    eng_options o;
    eng_options_init(&o);
    o.page_size = ps;
    o.wal_segment_size = SEG_SIZE;
    o.create_if_missing = 1;
    eng_db *db = NULL;
    cr_assert_eq(eng_open(dir, &o, &db), ENG_OK);
    char key[32], val[200];
    for (unsigned i = 0; i < NKEYS; i++) {
        tu_key(key, i);
        memset(val, 'a' + (int)(i % 26), sizeof val);
        cr_assert_eq(eng_put(db, key, strlen(key), val, sizeof val, NULL), ENG_OK);
    }
    size_t big = 3u * ps;
    uint8_t *bv = malloc(big);
    cr_assert(bv);
    tu_fill(bv, big, 7);
    cr_assert_eq(eng_put(db, "big", 3, bv, big, NULL), ENG_OK);
    free(bv);
    eng_buf got = {NULL, 0, 0};
    for (unsigned i = 0; i < NKEYS; i += 7) {
        tu_key(key, i);
        cr_assert_eq(eng_get(db, key, strlen(key), &got), ENG_OK);
    }
    eng_buf_free(&got);
    cr_assert_eq(eng_close(db), ENG_OK);
    return dir;
}

typedef struct ctl {
    uint32_t page_size, flags, wal_gen;
    uint64_t checkpoint_lsn, redo_lsn, seg_size;
} ctl;

static void read_control(const char *dir, ctl *c) {
    size_t len;
    uint8_t *b = slurp(dir, CONTROL_NAME, &len);
    cr_assert_eq(len, CONTROL_SIZE);
    cr_assert_eq(fmt_get64(b + CT_MAGIC_OFF), CT_MAGIC);
    cr_assert_eq(memcmp(b + CT_MAGIC_OFF, "ENGCTL01", 8), 0, "the magic reads \"ENGCTL01\" on disk");
    cr_assert_eq(fmt_get32(b + CT_VERSION_OFF), CT_VERSION);
    cr_assert_eq(fmt_get64(b + CT_SUM_OFF), XXH3_64bits(b, CT_SUM_OFF));
    c->page_size = fmt_get32(b + CT_PAGE_SIZE_OFF);
    c->flags = fmt_get32(b + CT_FLAGS_OFF);
    c->checkpoint_lsn = fmt_get64(b + CT_CHECKPOINT_LSN_OFF);
    c->redo_lsn = fmt_get64(b + CT_REDO_LSN_OFF);
    c->seg_size = fmt_get64(b + CT_SEG_SIZE_OFF);
    c->wal_gen = fmt_get32(b + CT_WAL_GEN_OFF);
    cr_assert_eq(fmt_get32(b + 20), 0, "bytes 20-23 are zero");
    cr_assert_eq(fmt_get32(b + 68), 0, "bytes 68-71 are zero");
    for (unsigned i = 80; i < CT_SUM_OFF; i++) cr_assert_eq(b[i], 0, "byte %u of the control file is zero", i);
    free(b);
}

/* ---- the control file ------------------------------------------------------ */

Test(format_shared, control_file_fields_where_format_h_says) {
    static const uint32_t sizes[] = {4096, 8192, 16384};
    for (size_t k = 0; k < 3; k++) {
        const char *dir = make_db(sizes[k]);
        ctl c;
        read_control(dir, &c);
        cr_assert_eq(c.page_size, sizes[k]);
        cr_assert_eq(c.flags, CONTROL_FLAG_CHECKSUMS);
        cr_assert_eq(c.seg_size, SEG_SIZE);
        cr_assert(c.redo_lsn <= c.checkpoint_lsn && c.checkpoint_lsn > 0);
        cr_assert(c.wal_gen >= 1);
    }
}

/* ---- the data file ------------------------------------------------------------ */

/* format.h's page hash, from its words alone: word j times key j (the
 * splitmix64 outputs from PAGE_HASH_KEY_SEED), carry-less, reduced mod
 * x^64 + PAGE_HASH_POLY, xored; then murmur3's finalizer with the seed. */
static uint64_t gf_mul(uint64_t a, uint64_t b) {
    uint64_t r = 0;
    for (int i = 0; i < 64; i++) {
        if (a >> i & 1) r ^= b;
        b = (b << 1) ^ (b >> 63 ? PAGE_HASH_POLY : 0); /* b * x mod P */
    }
    return r;
}
static uint64_t fmix(uint64_t k) {
    k ^= k >> 33;
    k *= 0xFF51AFD7ED558CCDull;
    k ^= k >> 33;
    k *= 0xC4CEB9FE1A85EC53ull;
    return k ^ k >> 33;
}
static uint64_t page_sum(const uint8_t *p, uint32_t ps, uint64_t block) {
    static uint64_t key[PAGE_HASH_KEYS];
    if (!key[0])
        for (uint64_t j = 0, x = PAGE_HASH_KEY_SEED; j < PAGE_HASH_KEYS; j++) {
            uint64_t z = (x += 0x9E3779B97F4A7C15ull);
            z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
            z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
            key[j] = z ^ (z >> 31);
        }
    uint64_t s = 0;
    for (uint32_t j = PAGE_CHECKSUM_FROM / 8; j < ps / 8; j++) s ^= gf_mul(fmt_get64(p + 8 * j), key[j]);
    uint64_t h = fmix(s ^ fmix((((uint64_t)0 << PAGE_SEED_FILE_SHIFT) ^ block) ^ PAGE_HASH_SEED_MIX));
    return h ? h : 1;
}

static void check_leaf(const uint8_t *p, uint32_t ps, uint64_t b) {
    unsigned n = ph_get_nslots(p);
    cr_assert_eq(ph_get_level(p), 0);
    cr_assert_eq(ph_get_lower(p), LEAF_SLOT_BASE(ps) + 2u * n, "block %llu: slots after the hint area",
                 (unsigned long long)b);
    cr_assert_eq(page_slot_base(p), LEAF_SLOT_BASE(ps));
    cr_assert(ph_get_upper(p) >= ph_get_lower(p) && ph_get_upper(p) <= ps);
    for (unsigned i = 0; i < n; i++) {
        unsigned h = leaf_hint_get(p, i);
        cr_assert(h == HINT_NONE || h == HINT_XMIN_C || h == HINT_XMIN_A || h == HINT_XMAX_C || h == HINT_XMAX_A,
                  "block %llu slot %u: hint 0x%x", (unsigned long long)b, i, h);
        uint16_t off = page_slot(p, i);
        cr_assert(off >= ph_get_upper(p) && off + LEAF_CELL_HDR <= ps);
        uint16_t klen = fmt_get16(p + off);
        uint8_t cflags = p[off + 2];
        uint32_t vlen = fmt_get32(p + off + 3);
        size_t size = LEAF_CELL_HDR + klen + ((cflags & CELL_OVERFLOW) ? 4u : vlen);
        cr_assert(off + size <= ps, "block %llu slot %u: cell inside the page", (unsigned long long)b, i);
        cr_assert(fmt_get64(p + off + LEAF_XMIN_OFF) >= 1, "a committed, unfrozen writer id");
        if (klen == 3 && memcmp(p + off + LEAF_CELL_HDR, "big", 3) == 0)
            cr_assert(cflags & CELL_OVERFLOW, "the large value lives in overflow pages");
    }
}

static void check_internal(const uint8_t *p, uint32_t ps, uint64_t nblocks) {
    unsigned n = ph_get_nslots(p);
    cr_assert(ph_get_level(p) >= 1);
    cr_assert_eq(ph_get_lower(p), PAGE_HDR + 2u * n);
    cr_assert(ph_get_aux(p) < nblocks, "the leftmost child is a block of the file");
    for (unsigned i = 0; i < n; i++) {
        uint16_t off = page_slot(p, i);
        cr_assert(off >= ph_get_upper(p) && off + INTERNAL_CELL_HDR + fmt_get16(p + off) <= ps);
        cr_assert(fmt_get32(p + off + 2) < nblocks, "a child is a block of the file");
    }
}

Test(format_shared, pages_decode_at_every_page_size) {
    static const uint32_t sizes[] = {4096, 8192, 16384};
    static const uint32_t hint_bytes[] = {80, 160, 320};
    for (size_t k = 0; k < 3; k++) {
        uint32_t ps = sizes[k];
        cr_assert_eq(LEAF_HINT_BYTES(ps), hint_bytes[k]);
        cr_assert(PAGE_HDR + LEAF_HINT_BYTES(ps) <= 512, "header and hints share the first sector");
        const char *dir = make_db(ps);
        size_t len;
        uint8_t *data = slurp(dir, "data", &len);
        cr_assert(len % ps == 0 && len / ps >= 3);
        uint64_t nblocks = len / ps;

        const uint8_t *meta = data;
        cr_assert_eq(ph_get_type(meta), PAGE_META);
        cr_assert_eq(fmt_get64(meta + META_OFF_MAGIC), META_MAGIC);
        cr_assert_eq(fmt_get32(meta + META_OFF_ROOT), 1, "the root is block 1");
        cr_assert_eq(fmt_get32(meta + META_OFF_NBLOCKS), nblocks);
        cr_assert(fmt_get32(meta + META_OFF_HEIGHT) >= 1);
        uint32_t nclog = fmt_get32(meta + META_OFF_CLOGN);
        cr_assert(nclog >= 1 && nclog <= META_CLOG_CAP(ps));
        for (unsigned i = 0; i < nclog; i++) {
            uint32_t cb = meta_clog_block(meta, i);
            cr_assert(cb < nblocks);
            cr_assert_eq(ph_get_type(data + (size_t)cb * ps), PAGE_CLOG);
            cr_assert_eq(ph_get_aux(data + (size_t)cb * ps), i);
        }

        unsigned seen[PAGE_TYPE_MAX + 1] = {0};
        for (uint64_t b = 0; b < nblocks; b++) {
            const uint8_t *p = data + b * ps;
            int zero = 1;
            for (uint32_t i = 0; i < ps && zero; i++) zero = p[i] == 0;
            if (zero) continue;
            cr_assert_eq(ph_get_block(p), b, "ph_block at %u", PH_BLOCK_OFF);
            cr_assert_eq(ph_get_checksum(p), page_sum(p, ps, b), "block %llu: checksum", (unsigned long long)b);
            int t = ph_get_type(p);
            cr_assert(t >= PAGE_META && t <= PAGE_TYPE_MAX, "block %llu: type %d", (unsigned long long)b, t);
            seen[t]++;
            if (t == PAGE_LEAF)
                check_leaf(p, ps, b);
            else if (t == PAGE_INTERNAL)
                check_internal(p, ps, nblocks);
            else if (t == PAGE_OVERFLOW)
                cr_assert(ph_get_aux(p) >= 1 && ph_get_aux(p) <= ps - PAGE_HDR);
            else if (t == PAGE_FREE)
                cr_assert(ph_get_aux(p) <= FREE_TRUNK_CAP(ps));
            else if (t == PAGE_CLOG)
                for (uint64_t j = 0; j < CLOG_PER_PAGE(ps); j++)
                    cr_assert(((p[PAGE_HDR + j / 4] >> (j % 4 * 2)) & 3u) != 3u, "no status 3");
        }
        cr_assert_eq(seen[PAGE_META], 1);
        cr_assert(seen[PAGE_LEAF] >= 2 && seen[PAGE_INTERNAL] >= 1 && seen[PAGE_OVERFLOW] >= 3);
        cr_assert_eq(ph_get_type(data + ps), PAGE_INTERNAL, "block 1 is the root");
        free(data);
    }
}

/* ---- the log ------------------------------------------------------------------- */

/* Gather N record bytes from stream position POS of segment SEG (starting
 * at LSN BASE) into OUT, skipping sector trailers and block headers. */
static uint64_t gather(const uint8_t *seg, uint64_t base, uint64_t pos, uint8_t *out, size_t n) {
    while (n > 0) {
        uint64_t off = pos - base;
        uint32_t in_blk = (uint32_t)(off % WAL_BLOCK), in_sec = (uint32_t)(off % WAL_SECTOR);
        if (in_blk == 0) {
            pos += WAL_BLOCK_HDR;
            continue;
        }
        if (in_sec >= WAL_SECTOR_DATA) {
            pos += WAL_SECTOR - in_sec;
            continue;
        }
        *out++ = seg[off];
        pos++;
        n--;
    }
    return pos;
}

Test(format_shared, wal_blocks_and_the_redo_record_decode) {
    cr_assert_eq(WAL_BLOCK_PAYLOAD, 4032u);
    cr_assert_eq(WAL_BLOCK_SECTORS * WAL_SECTOR, WAL_BLOCK);
    static const uint32_t sizes[] = {4096, 16384};
    for (size_t k = 0; k < 2; k++) {
        const char *dir = make_db(sizes[k]);
        ctl c;
        read_control(dir, &c);

        char waldir[512], name[64] = "";
        snprintf(waldir, sizeof waldir, "%s/%s", dir, WAL_DIR);
        DIR *d = opendir(waldir);
        cr_assert(d);
        uint64_t want = c.redo_lsn & ~(c.seg_size - 1);
        struct dirent *e;
        int nsegs = 0;
        while ((e = readdir(d)) != NULL) {
            if (e->d_name[0] == '.') continue;
            cr_assert_eq(strlen(e->d_name), WAL_SEG_NAME_LEN, "segment name %s", e->d_name);
            uint64_t v = strtoull(e->d_name, NULL, 16);
            cr_assert_eq(v % c.seg_size, 0);
            nsegs++;
            if (v == want) snprintf(name, sizeof name, "%s/%s", WAL_DIR, e->d_name);
        }
        closedir(d);
        cr_assert(nsegs >= 1 && name[0], "the segment of the redo point exists");

        size_t len;
        uint8_t *seg = slurp(dir, name, &len);
        cr_assert(len >= WAL_BLOCK && len % WAL_SECTOR == 0);
        /* Every written block: header at its own position, magic, check;
         * every sector passes its trailer or is all zero. */
        unsigned written = 0;
        for (size_t b = 0; b + WAL_BLOCK <= len; b += WAL_BLOCK) {
            const uint8_t *h = seg + b;
            if (fmt_get16(h + WB_MAGIC_OFF) == 0 && fmt_get64(h + WB_CHECK_OFF) == 0) continue; /* never written */
            written++;
            cr_assert_eq(fmt_get16(h + WB_MAGIC_OFF), WB_MAGIC);
            cr_assert_eq(fmt_get64(h + WB_LSN_OFF), want + b);
            cr_assert_eq(fmt_get64(h + WB_CHECK_OFF), XXH3_64bits(h, WB_CHECKED));
            cr_assert(fmt_get32(h + WB_GEN_OFF) <= c.wal_gen);
            cr_assert(fmt_get16(h + WB_CONT_OFF) <= WAL_BLOCK_PAYLOAD);
            cr_assert(fmt_get64(h + WB_DURABLE_OFF) <= want + b + WAL_BLOCK);
            for (unsigned s = 0; s < WAL_BLOCK_SECTORS; s++) {
                const uint8_t *sec = h + s * WAL_SECTOR;
                uint32_t trl = fmt_get32(sec + WAL_SECTOR_DATA);
                int zero = trl == 0;
                for (unsigned i = 0; i < WAL_SECTOR_DATA && zero; i++) zero = sec[i] == 0;
                cr_assert(zero || trl == crc32c_ref(sec, WAL_SECTOR_DATA), "block %zu sector %u: trailer",
                          b / WAL_BLOCK, s);
            }
        }
        cr_assert(written >= 1);

        /* The record at the redo point. */
        uint8_t hdr[WAL_REC_HDR];
        uint64_t pos = gather(seg, want, c.redo_lsn, hdr, sizeof hdr);
        uint32_t rlen = fmt_get32(hdr + XL_LEN_OFF);
        cr_assert_eq(fmt_get64(hdr + XL_LSN_OFF), c.redo_lsn);
        cr_assert(hdr[XL_TYPE_OFF] >= 1 && hdr[XL_TYPE_OFF] <= WAL_REC_TYPE_MAX);
        cr_assert_eq(fmt_get16(hdr + XL_RESERVED_OFF), 0);
        cr_assert(rlen >= WAL_REC_HDR && rlen <= WAL_REC_HDR + WAL_MAX_RECORD);
        if (c.redo_lsn == c.checkpoint_lsn) cr_assert_eq(hdr[XL_TYPE_OFF], WAL_REC_CHECKPOINT);
        uint8_t *rec = malloc(rlen);
        cr_assert(rec);
        memcpy(rec, hdr, WAL_REC_HDR);
        gather(seg, want, pos, rec + WAL_REC_HDR, rlen - WAL_REC_HDR);
        uint64_t stored = fmt_get64(rec + XL_CHECK_OFF);
        fmt_put64(rec + XL_CHECK_OFF, 0);
        cr_assert_eq(XXH3_64bits(rec, rlen), stored, "the redo record's checksum");
        free(rec);
        free(seg);
    }
}
