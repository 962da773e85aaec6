/*
 * format.h -- the on-disk formats, in one place: the data file's pages, the
 * write-ahead log's blocks and records, and the control file.
 *
 * Header-only and self-contained (it includes nothing of the engine), so
 * every reader of the bytes shares these definitions: the engine's layers
 * (page.h, wal.h and control.h include it and add their higher-level
 * declarations), the fault library (which aims flips at fields and must
 * know where they are), engine-tool and the tests.  Nothing here may
 * change without changing what is on disk; a copy of a value anywhere
 * else is a bug waiting for the next format change.
 *
 * All integers are little-endian.  The engine targets x86-64 and reads
 * header fields with memcpy (host order, the ph_get_* accessors below);
 * fmt_get* and fmt_put* are the byte-wise forms, exact on any host.
 *
 * ===== The data file (DIR/data) ==========================================
 *
 * Every block is one page of page_size bytes (4096, 8192 or 16384, fixed
 * at creation and recorded in the control file).
 *
 * The page hash (checksum.c).  Bytes [8j, 8j + 8) of a page are its word
 * d_j, little-endian; every word has a key K_j (PAGE_HASH_KEYS of them, the
 * outputs of splitmix64 started at PAGE_HASH_KEY_SEED, K_0 the first).  The
 * sum of the page is
 *
 *   S = xor over j = 1 .. page_size/8 - 1 of clmul(d_j, K_j) mod P,
 *   P = x^64 + x^4 + x^3 + x + 1   (GF(2^64); PAGE_HASH_POLY its low bits)
 *
 * with clmul the 128-bit carry-less product, and
 *
 *   ph_checksum = fmix64(S ^ fmix64(seed ^ PAGE_HASH_SEED_MIX)),
 *   seed = (file id << PAGE_SEED_FILE_SHIFT) ^ block,
 *
 * fmix64 being murmur3's 64-bit finalizer, and 1 stored for a result of 0.
 * S is linear in the bytes and keyed by position, so the sum of any span
 * of bytes (the words it overlaps, bytes outside it taken as zero) is the
 * same whoever computes it, and the spans that tile [8, page_size) xor to
 * S: one pass over a page yields its checksum and the sums of its cells,
 * which the buffer pool's per key-value codes are made from.  Any change
 * to the bytes escapes with odds 2^-64 over the keys (a multilinear hash
 * over a field), one or two flipped bits anywhere in a page never
 * (tests/test_page_hash_is_one_pass.c checks the 2^17 columns of the map).
 *
 * Page header (PAGE_HDR = 40 bytes, at the start of every page):
 *
 *   offset size field
 *   0      8    ph_checksum  the page hash (above) of bytes [8, page_size)
 *                            seeded with (file id << 56) ^ block, file id
 *                            0 for the data file; a result of 0 is stored
 *                            as 1, and 0 means "not set" (data checksums
 *                            off)
 *   8      8    ph_lsn       LSN of the last change
 *   16     4    ph_block     the block this page was written for
 *   20     1    ph_type      PAGE_META, PAGE_LEAF, PAGE_INTERNAL, ...
 *   21     1    ph_flags
 *   22     2    ph_nslots    number of slots (leaf / internal)
 *   24     2    ph_lower     end of the slot array (= base + 2*nslots)
 *   26     2    ph_upper     start of cell content (cells grow down from
 *                            the end of the page)
 *   28     2    ph_frag      bytes of dead cells between upper and the end
 *   30     2    ph_level     0 for leaves, height above the leaves otherwise
 *   32     4    ph_next      right sibling (leaf/internal), next overflow
 *                            page, next free-list trunk; 0 = none
 *   36     4    ph_aux       internal: leftmost child; overflow: payload
 *                            bytes; free-list trunk: entries; clog: page
 *                            index in the commit log
 *
 * Leaf and internal pages after the header:
 *
 *   40          leaf pages only: the hint area, LEAF_HINT_BYTES(page_size)
 *               bytes, one nibble of hint bits per slot (slot i: byte i/2,
 *               low nibble when i is even).  It lies inside the page's
 *               first 512-byte sector together with the header and the
 *               checksum, so a write that changed only hints is kept or
 *               lost whole by a torn write.
 *   base        slot array: u16 cell offsets, in key order (base is 40, or
 *               40 + LEAF_HINT_BYTES for leaves; lower = base + 2*nslots)
 *   ...         free space
 *   upper..end  cells
 *
 * Leaf cell (one version of a key; LEAF_CELL_HDR = 23 bytes, then data):
 *   0 u16 klen | 2 u8 cflags | 3 u32 vlen | 7 u64 xmin | 15 u64 xmax |
 *   23 key | value   (cflags & CELL_OVERFLOW: the value is replaced by the
 *                     u32 first overflow block; vlen stays the full length)
 * Internal cell (INTERNAL_CELL_HDR = 6 bytes): u16 klen | u32 child | key
 *
 * Meta page (block 0), after the header:
 *   40 u64 magic (META_MAGIC) | 48 u32 root | 52 u32 nblocks |
 *   56 u32 freelist | 60 u32 height | 64 u32 clog_pages |
 *   68 u32 clog block[clog_pages]  (the commit log's directory,
 *                                   META_CLOG_CAP(page_size) entries at most)
 * Overflow page:      ph_aux payload bytes right after the header.
 * Free-list trunk:    ph_aux u32 block numbers right after the header.
 * Commit-log page:    2 bits per transaction after the header (CLOG_*),
 *                     CLOG_PER_PAGE(page_size) transactions per page.
 *
 * ===== The log (DIR/wal/%016x segments) ===================================
 *
 * LSNs are byte positions in one endless stream that includes the block
 * headers and the sector trailers.  It is cut into segment files named by
 * the LSN they start at (WAL_SEG_NAME_LEN lower-case hex digits), and each
 * segment into WAL_BLOCK-byte blocks of eight WAL_SECTOR-byte sectors:
 *
 *   sector 0                    sector 1            ...  sector 7
 *   +--------+--------+------+  +--------+------+        +--------+------+
 *   | header | P 476  | trl  |  | P 508  | trl  |  ...   | P 508  | trl  |
 *   +--------+--------+------+  +--------+------+        +--------+------+
 *   0        32       508  512  512      1020 1024       3584     4092 4096
 *
 *   WAL_BLOCK_PAYLOAD = 476 + 7 * 508 = 4032 record bytes per block.
 *
 * Sector trailer (the last 4 bytes of every 512-byte sector):
 *   508    4    ws_check    CRC32C of the sector's bytes [0, 508); a sector
 *                           that is all zero, trailer included, is valid
 *                           too ("never written")
 *
 * Block header (WAL_BLOCK_HDR = 32 bytes, at the start of every block):
 *   offset size field
 *   0      8    wb_lsn      LSN of the block's first byte (its position)
 *   8      8    wb_durable  witness: every byte below this LSN was durable
 *                           when this block was last written
 *   16     4    wb_gen      log generation (raised on every open)
 *   20     2    wb_cont     record bytes at the start of the payload that
 *                           continue a record begun in an earlier block
 *                           (at most WAL_BLOCK_PAYLOAD)
 *   22     2    wb_magic    WB_MAGIC (0xA11E)
 *   24     8    wb_check    XXH3-64 of bytes [0, 24)
 *
 * Record (WAL_REC_HDR = 32 bytes of header, then the payload; starts
 * 8-byte aligned in the stream and may span sectors and blocks, skipping
 * their trailers and headers; zero padding up to the next 8-aligned
 * position):
 *   0      4    xl_len      header + payload bytes
 *   4      1    xl_type     WAL_REC_*
 *   5      1    xl_flags
 *   6      2    (zero)
 *   8      8    xl_prev     LSN of the previous record (continuity)
 *   16     8    xl_lsn      LSN of this record (its own position)
 *   24     8    xl_check    XXH3-64 of header (check as zero) + payload
 *
 * The rules the writer and the reader keep (W1-W4) are in wal.h.
 *
 * Record payloads (offsets from the payload's first byte; what each field
 * means and how redo applies it: pageop.h for batches and page actions,
 * engine.c for checkpoints):
 *
 *   WAL_REC_CHECKPOINT (CK_SIZE = 24 bytes):
 *     0 u64 redo LSN | 8 u64 last_seq | 16 u64 nblocks
 *   WAL_REC_BATCH:
 *     0 u64 seq | 8 u32 nops | 12 ops, each BR_OP_HDR = 7 bytes and data:
 *       0 u8 kind | 1 u16 klen | 3 u32 vlen | 7 key | value
 *   WAL_REC_PAGES:
 *     0 u64 batch LSN | 8 u32 op index | 12 actions
 *
 * A page action is a prefix of PA_PREFIX = 5 bytes, 0 u8 kind | 1 u32
 * block, then a body; offsets below are from the body's first byte:
 *
 *   PA_IMAGE     0 u16 hole start | 2 u16 hole len | 4 u8 codec |
 *                5 u32 stored len | 9 bytes
 *   PA_INIT      0 u8 type | 1 u16 level | 3 u32 next | 7 u32 aux      (11)
 *   PA_FREE      0 u32 next                                            (4)
 *   PA_OVFL      0 u32 next | 4 u32 len | 8 u8 src |
 *                  src 0: 9 bytes (len)
 *                  src 1: 9 u32 op | 13 u32 offset in its value        (17)
 *   PA_INSERT    0 u16 idx | 2 u8 replace | 3 cellsrc
 *   PA_REMOVE    0 u16 idx                                             (2)
 *   PA_SPLIT     0 u16 idx | 2 u8 replace | 3 u16 m | 5 u32 next | 9 cellsrc
 *   PA_META      0 u32 nblocks | 4 u32 freelist                        (8)
 *   PA_SETNEXT   0 u32 next                                            (4)
 *   PA_PUSHFREE  0 u32 freed block                                     (4)
 *   PA_POPFREE   (no body)
 *   PA_SETXMAX   0 u16 idx | 2 u64 xid                                 (10)
 *   PA_FREEZE    0 u16 idx                                             (2)
 *   PA_CLOGSET   0 u32 index | 4 u8 status                             (5)
 *   PA_CLOGDIR   0 u32 directory entry | 4 u32 block                   (8)
 *   PA_HINTS     0 u16 len | 2 bytes
 *   cellsrc      0 u8 src | src 0: 1 u16 len | 3 bytes
 *                           src 1: 1 u32 op | 5 u32 ovfl               (9)
 *   (n): the body's fixed size.
 *
 * ===== The control file (DIR/control) ======================================
 *
 * CONTROL_SIZE = 512 bytes, one sector, so a single write of it is not torn
 * by 512-byte-atomic devices; replaced atomically (control.h):
 *
 *   offset size field
 *   0      8    ct_magic          CT_MAGIC, "ENGCTL01"
 *   8      4    ct_version        CT_VERSION (3; version 2 had XXH3-64
 *                                 page checksums, and an engine refuses a
 *                                 version not its own with ENG_NOTSUP)
 *   12     4    ct_page_size
 *   16     4    ct_flags          bit 0: data_checksums
 *   20     4    (zero)
 *   24     8    ct_hwm            durable high-water mark: every block below
 *                                 it has been written and synced at least once
 *   32     8    ct_checkpoint_lsn LSN of the last checkpoint record
 *   40     8    ct_redo_lsn       where recovery starts replaying
 *   48     8    ct_last_seq       last commit sequence at the redo point
 *   56     8    ct_seg_size       WAL segment bytes
 *   64     4    ct_wal_gen        WAL generation: raised (and this file
 *                                 rewritten) on every open, before any
 *                                 WAL block is written
 *   68     4    (zero)
 *   72     8    ct_xid_limit      transaction ids at or above it were never
 *                                 used (raised before a batch takes one)
 *   80     424  (zero)
 *   504    8    ct_checksum       XXH3-64 of bytes [0, 504)
 */
#ifndef ENGINE_FORMAT_H
#define ENGINE_FORMAT_H

#include <stdint.h>
#include <string.h>

/* ---- little-endian accessors ---------------------------------------------- */

static inline uint16_t fmt_get16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t fmt_get32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t fmt_get64(const uint8_t *p) { return (uint64_t)fmt_get32(p) | (uint64_t)fmt_get32(p + 4) << 32; }
static inline void fmt_put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static inline void fmt_put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static inline void fmt_put64(uint8_t *p, uint64_t v) {
    for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* ---- pages ------------------------------------------------------------------ */

#define PAGE_HDR 40u

#define PH_CHECKSUM_OFF 0u
#define PH_LSN_OFF      8u
#define PH_BLOCK_OFF    16u
#define PH_TYPE_OFF     20u
#define PH_FLAGS_OFF    21u
#define PH_NSLOTS_OFF   22u
#define PH_LOWER_OFF    24u
#define PH_UPPER_OFF    26u
#define PH_FRAG_OFF     28u
#define PH_LEVEL_OFF    30u
#define PH_NEXT_OFF     32u
#define PH_AUX_OFF      36u

/* Page sizes a data file may have: 4096, 8192 or 16384. */
#define PAGE_SIZE_MIN 4096u
#define PAGE_SIZE_MAX 16384u

/* The checksum covers [PAGE_CHECKSUM_FROM, page_size), seeded with
 * (file id << PAGE_SEED_FILE_SHIFT) ^ block; the data file is file id 0.
 * The page hash's constants (drawn above). */
#define PAGE_CHECKSUM_FROM   8u
#define PAGE_SEED_FILE_SHIFT 56
#define PAGE_HASH_KEYS       (PAGE_SIZE_MAX / 8u)
#define PAGE_HASH_KEY_SEED   0x7061676568617368ull /* "pagehash" */
#define PAGE_HASH_POLY       0x1Bull               /* x^4 + x^3 + x + 1 */
#define PAGE_HASH_SEED_MIX   0x9E3779B97F4A7C15ull

enum page_type {
    PAGE_ZERO = 0, /* never written (all-zero) */
    PAGE_META = 1,
    PAGE_LEAF = 2,
    PAGE_INTERNAL = 3,
    PAGE_OVERFLOW = 4,
    PAGE_FREE = 5,
    PAGE_CLOG = 6,
    PAGE_TYPE_MAX = 6
};

/* Header accessors: pages are byte arrays, fields are read with memcpy so
 * alignment never matters. */
#define PAGE_FIELD(name, off, type)                      \
    static inline type ph_get_##name(const uint8_t *p) { \
        type v;                                          \
        memcpy(&v, p + (off), sizeof v);                 \
        return v;                                        \
    }                                                    \
    static inline void ph_set_##name(uint8_t *p, type v) { memcpy(p + (off), &v, sizeof v); }
PAGE_FIELD(checksum, PH_CHECKSUM_OFF, uint64_t)
PAGE_FIELD(lsn, PH_LSN_OFF, uint64_t)
PAGE_FIELD(block, PH_BLOCK_OFF, uint32_t)
PAGE_FIELD(type, PH_TYPE_OFF, uint8_t)
PAGE_FIELD(flags, PH_FLAGS_OFF, uint8_t)
PAGE_FIELD(nslots, PH_NSLOTS_OFF, uint16_t)
PAGE_FIELD(lower, PH_LOWER_OFF, uint16_t)
PAGE_FIELD(upper, PH_UPPER_OFF, uint16_t)
PAGE_FIELD(frag, PH_FRAG_OFF, uint16_t)
PAGE_FIELD(level, PH_LEVEL_OFF, uint16_t)
PAGE_FIELD(next, PH_NEXT_OFF, uint32_t)
PAGE_FIELD(aux, PH_AUX_OFF, uint32_t)
#undef PAGE_FIELD

/* Cells */
#define CELL_OVERFLOW     0x01u
#define LEAF_CELL_HDR     23u /* u16 klen, u8 cflags, u32 vlen, u64 xmin, u64 xmax */
#define LEAF_XMIN_OFF     7u
#define LEAF_XMAX_OFF     15u
#define INTERNAL_CELL_HDR 6u /* u16 klen, u32 child */

/* Hint area of a leaf: one nibble for each slot a page can hold (the
 * smallest cell is LEAF_CELL_HDR + 1 key byte, plus its slot), rounded to
 * 8 bytes; 80, 160 and 320 bytes for 4, 8 and 16 KiB pages. */
#define LEAF_HINT_BYTES(ps) (((((ps)-PAGE_HDR) / (LEAF_CELL_HDR + 3u)) / 2u + 8u) & ~7u)
#define LEAF_SLOT_BASE(ps)  (PAGE_HDR + LEAF_HINT_BYTES(ps))
/* Hint nibble states: each has even parity, so one flipped bit is never a
 * valid state (page.h: what each means to a reader). */
enum hint_state { HINT_NONE = 0x0, HINT_XMIN_C = 0x3, HINT_XMIN_A = 0x5, HINT_XMAX_C = 0x6, HINT_XMAX_A = 0x9 };

/* Free-list trunks */
#define FREE_TRUNK_CAP(ps) (((ps)-PAGE_HDR) / 4u)

/* Commit-log pages: 2 bits per transaction */
#define CLOG_PER_PAGE(ps) (((ps)-PAGE_HDR) * 4u)
enum clog_status { CLOG_IN_PROGRESS = 0, CLOG_COMMITTED = 1, CLOG_ABORTED = 2 };

/* Meta page fields right after the header */
#define META_MAGIC        0x32415441454d4745ull /* "EGMETA2" (versions, commit log) */
#define META_OFF_MAGIC    (PAGE_HDR + 0)
#define META_OFF_ROOT     (PAGE_HDR + 8)
#define META_OFF_NBLOCKS  (PAGE_HDR + 12)
#define META_OFF_FREELIST (PAGE_HDR + 16)
#define META_OFF_HEIGHT   (PAGE_HDR + 20)
#define META_OFF_CLOGN    (PAGE_HDR + 24)
#define META_CLOG_OFF     (PAGE_HDR + 28u)
#define META_CLOG_CAP(ps) (((ps)-META_CLOG_OFF) / 4u)

/* Start of the slot array, from the header (lower = base + 2*nslots); a
 * header damaged in the cache cannot move it before the header's end. */
static inline unsigned page_slot_base(const uint8_t *p) {
    unsigned lo = ph_get_lower(p), n2 = 2u * ph_get_nslots(p);
    return lo >= PAGE_HDR + n2 ? lo - n2 : PAGE_HDR;
}
/* Offset of the cell of slot I. */
static inline uint16_t page_slot(const uint8_t *p, unsigned i) {
    uint16_t v;
    memcpy(&v, p + page_slot_base(p) + 2u * i, 2);
    return v;
}
/* The hint nibble of leaf slot SLOT. */
static inline unsigned leaf_hint_get(const uint8_t *p, unsigned slot) {
    uint8_t b = p[PAGE_HDR + slot / 2u];
    return (slot & 1u) ? b >> 4 : b & 0xfu;
}
/* Commit-log directory entry I of the meta page (I < META_CLOG_CAP). */
static inline uint32_t meta_clog_block(const uint8_t *meta, unsigned i) {
    uint32_t v;
    memcpy(&v, meta + META_CLOG_OFF + 4u * i, 4);
    return v;
}

/* ---- the log ---------------------------------------------------------------- */

#define WAL_DIR          "wal"
#define WAL_SEG_NAME_LEN 16 /* "%016llx" of the segment's first LSN */

#define WAL_BLOCK          4096u
#define WAL_BLOCK_HDR      32u
#define WAL_SECTOR         512u
#define WAL_SECTOR_TRAILER 4u
#define WAL_SECTOR_DATA    (WAL_SECTOR - WAL_SECTOR_TRAILER)
#define WAL_BLOCK_SECTORS  (WAL_BLOCK / WAL_SECTOR)
#define WAL_BLOCK_PAYLOAD  (WAL_BLOCK - WAL_BLOCK_HDR - WAL_BLOCK_SECTORS * WAL_SECTOR_TRAILER)

/* Block header */
#define WB_LSN_OFF     0u
#define WB_DURABLE_OFF 8u
#define WB_GEN_OFF     16u
#define WB_CONT_OFF    20u
#define WB_MAGIC_OFF   22u
#define WB_CHECK_OFF   24u
#define WB_CHECKED     24u /* wb_check covers [0, WB_CHECKED) */
#define WB_MAGIC       0xA11Eu

/* Record header */
#define WAL_REC_HDR     32u
#define XL_LEN_OFF      0u
#define XL_TYPE_OFF     4u
#define XL_FLAGS_OFF    5u
#define XL_RESERVED_OFF 6u
#define XL_PREV_OFF     8u
#define XL_LSN_OFF      16u
#define XL_CHECK_OFF    24u
#define WAL_MAX_RECORD  (256u << 20) /* payload bytes of one record, at most */

/* Record types (payload formats live with their writers: engine.c and
 * pageop.h; the WAL only frames them). */
enum wal_rec_type {
    WAL_REC_BATCH = 1,      /* a write batch's operations (logical); the
                             * commit is its PA_OP_COMMIT PAGES record */
    WAL_REC_PAGES = 2,      /* page actions of one tree operation */
    WAL_REC_CHECKPOINT = 3, /* a completed checkpoint */
    WAL_REC_TYPE_MAX = 3
};

/* Checkpoint record payload */
#define CK_REDO_OFF     0u
#define CK_LAST_SEQ_OFF 8u
#define CK_NBLOCKS_OFF  16u
#define CK_SIZE         24u

/* Batch record payload, and each operation in it */
#define BR_SEQ_OFF     0u
#define BR_NOPS_OFF    8u
#define BR_OPS_OFF     12u
#define BR_OP_KIND_OFF 0u
#define BR_OP_KLEN_OFF 1u
#define BR_OP_VLEN_OFF 3u
#define BR_OP_HDR      7u /* then key, value */

/* Page record payload: its header (PA_REC_HDR bytes), then the actions */
#define PR_BATCH_LSN_OFF 0u
#define PR_OP_OFF        8u

/* Page actions: the prefix, then the body of each kind (offsets from the
 * body's first byte; _SIZE a body's fixed size) */
#define PA_KIND_OFF  0u
#define PA_BLOCK_OFF 1u
#define PA_PREFIX    5u

#define PA_IMAGE_HOLE_OFF     0u
#define PA_IMAGE_HOLE_LEN_OFF 2u
#define PA_IMAGE_CODEC_OFF    4u
#define PA_IMAGE_STORED_OFF   5u
#define PA_IMAGE_BYTES_OFF    9u
#define PA_CODEC_RAW          0u
#define PA_CODEC_ZSTD         1u

#define PA_INIT_TYPE_OFF  0u
#define PA_INIT_LEVEL_OFF 1u
#define PA_INIT_NEXT_OFF  3u
#define PA_INIT_AUX_OFF   7u
#define PA_INIT_SIZE      11u

#define PA_FREE_NEXT_OFF 0u
#define PA_FREE_SIZE     4u

#define PA_OVFL_NEXT_OFF   0u
#define PA_OVFL_LEN_OFF    4u
#define PA_OVFL_SRC_OFF    8u
#define PA_OVFL_BYTES_OFF  9u  /* src PA_SRC_BYTES */
#define PA_OVFL_OP_OFF     9u  /* src PA_SRC_OP */
#define PA_OVFL_VALOFF_OFF 13u /* src PA_SRC_OP: the offset in the op's value */
#define PA_OVFL_OP_SIZE    17u /* src PA_SRC_OP */

#define PA_INSERT_IDX_OFF     0u
#define PA_INSERT_REPLACE_OFF 2u
#define PA_INSERT_CELL_OFF    3u

#define PA_REMOVE_IDX_OFF 0u
#define PA_REMOVE_SIZE    2u

#define PA_SPLIT_IDX_OFF     0u
#define PA_SPLIT_REPLACE_OFF 2u
#define PA_SPLIT_M_OFF       3u
#define PA_SPLIT_NEXT_OFF    5u
#define PA_SPLIT_CELL_OFF    9u

#define PA_META_NBLOCKS_OFF  0u
#define PA_META_FREELIST_OFF 4u
#define PA_META_SIZE         8u

#define PA_SETNEXT_NEXT_OFF 0u
#define PA_SETNEXT_SIZE     4u

#define PA_PUSHFREE_FREED_OFF 0u
#define PA_PUSHFREE_SIZE      4u

#define PA_SETXMAX_IDX_OFF 0u
#define PA_SETXMAX_XID_OFF 2u
#define PA_SETXMAX_SIZE    10u

#define PA_FREEZE_IDX_OFF 0u
#define PA_FREEZE_SIZE    2u

#define PA_CLOGSET_INDEX_OFF  0u
#define PA_CLOGSET_STATUS_OFF 4u
#define PA_CLOGSET_SIZE       5u

#define PA_CLOGDIR_ENTRY_OFF 0u
#define PA_CLOGDIR_BLOCK_OFF 4u
#define PA_CLOGDIR_SIZE      8u

#define PA_HINTS_LEN_OFF   0u
#define PA_HINTS_BYTES_OFF 2u

/* A cell source (PA_INSERT, PA_SPLIT), and the source byte of PA_OVFL */
#define PA_SRC_BYTES 0u /* the bytes follow */
#define PA_SRC_OP    1u /* built from an operation of the record's batch */
#define CS_SRC_OFF   0u
#define CS_LEN_OFF   1u /* src PA_SRC_BYTES */
#define CS_BYTES_OFF 3u /* src PA_SRC_BYTES */
#define CS_OP_OFF    1u /* src PA_SRC_OP */
#define CS_OVFL_OFF  5u /* src PA_SRC_OP */
#define CS_OP_SIZE   9u /* src PA_SRC_OP */

/* ---- the control file ------------------------------------------------------ */

#define CONTROL_NAME           "control"
#define CONTROL_SIZE           512u
#define CONTROL_FLAG_CHECKSUMS 0x1u
#define CT_MAGIC               0x31304c5443474e45ull /* "ENGCTL01" */
#define CT_VERSION             3u
#define CT_MAGIC_OFF           0u
#define CT_VERSION_OFF         8u
#define CT_PAGE_SIZE_OFF       12u
#define CT_FLAGS_OFF           16u
#define CT_HWM_OFF             24u
#define CT_CHECKPOINT_LSN_OFF  32u
#define CT_REDO_LSN_OFF        40u
#define CT_LAST_SEQ_OFF        48u
#define CT_SEG_SIZE_OFF        56u
#define CT_WAL_GEN_OFF         64u
#define CT_XID_LIMIT_OFF       72u
#define CT_SUM_OFF             (CONTROL_SIZE - 8u) /* ct_checksum: XXH3-64 of [0, CT_SUM_OFF) */

#endif /* ENGINE_FORMAT_H */
