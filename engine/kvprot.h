/*
 * kvprot.h -- per key-value protection of cached pages (docs/engine.md, Per
 * key-value protection).
 *
 * With block_protection_bytes_per_key w in {1, 2, 4, 8}, every cached
 * frame carries, beside its bytes (never on disk):
 *   - one w-byte code per slot: a hash of the cell's bytes seeded with the
 *     slot's offset value, so a code vouches for the slot that points at
 *     the cell too (slot i is the i-th code);
 *   - a 4-byte page code over the header fields [16, 40) (block, type,
 *     slot count, bounds, level, links): the fields that steer every read;
 *     for pages without slots (meta, overflow, free list, commit log) it
 *     covers the whole page from byte 16;
 *   - the number of codes (2 bytes): the slot count the codes were made
 *     for, compared with the header's on every check, and 2 bytes of
 *     flags (KV_UNIQUE_KEYS), bound into the page code.
 * Frame overhead: 8 bytes of pointer plus these 8, so 16 bytes per page
 * and w bytes per entry (kv_memory).  The leaf hint area is not covered:
 * hints change under a shared latch without touching a code, and each
 * hint state is an even-parity nibble, so a flipped bit there is caught
 * by the state check instead (page.h); two flips in a nibble can make
 * another valid state, so readers use a hint only where the transaction
 * status copy agrees (btree.c bt_version_state).
 *
 * Each entry code is a hash of the cell: the page hash's sum of the cell's
 * bytes (checksum.h: keyed by their place in the page, so the slot that
 * points at the cell is bound too) with the slot offset mixed in, through
 * murmur3's 64-bit finalizer, truncated to 8w bits, its three lowest bits
 * replaced by parities of the cell header, the slot offset, and the key
 * and value: any single flipped bit, in a slot, a length or the bytes, is
 * always caught, whatever w; two flips in one part escape with odds
 * 2^-(8w-3) (1 in 32 at w = 1; RocksDB's truncated hash misses 1 in 256
 * of all flips at w = 1, single ones included; crashtest.py protection
 * measures these odds per width and flip pattern).  A page read from disk
 * with checksums on is coded in the pass that checks its checksum
 * (kv_compute_checked): the sums of its cells are parts of the page's
 * sum.  The page code keeps one parity bit (2^-31 otherwise; a slotted
 * page's 24 header bytes go through the CRC instruction where the CPU has
 * it, a page without slots through the page hash's sum of its bytes from
 * offset 16).
 *
 * The checks (btree*.c, bufpool.c):
 *   KV0  a leaf read from disk for a reader is not coded at load: the page
 *        checksum just checked proves its bytes, and its reader keeps the
 *        exclusive latch that check ran under (nothing, hint or flip
 *        injector, can touch the frame before the reader is done).  Its
 *        next use codes it under the exclusive latch, codes first and then
 *        the checksum over the same bytes, so a flip at any moment fails
 *        one of them; a read that would learn a hint codes it first.  Most
 *        leaves a small cache loads are never used twice: their coding was
 *        the cost of protection there.  The pool chooses by how many of its
 *        lazy leaves are used again (bufpool.c lazy_choice; the option
 *        kv_lazy_leaves forces it either way)
 *   KV1  a binary search is proven by its two bracketing entries (sorted
 *        order does the rest: whatever garbage steered the search, two
 *        adjacent verified keys around the target prove the position)
 *   KV1u a search that finds its key in a leaf flagged KV_UNIQUE_KEYS (the
 *        page code, flag included, checked on the way down) is proven by
 *        the found entry alone: it is the key's only version there, so no
 *        entry below it can hold a newer one
 *   KV1f a get that finds its key needs no proof of the route down: the
 *        verified entry holding the key is the key's, and every version of
 *        a key lives in one leaf.  Its descent checks each internal page's
 *        code and the entry whose child pointer it follows (never a garbage
 *        pointer), not the separator to the right; a get that does not find
 *        its key, or meets anything odd, descends again with KV1 in full
 *   KV2v an entry may be read before it is verified when nothing is done
 *        with what was read until one check after all the reads (no hint
 *        learned, no pointer followed, lengths clamped to the page): a bit
 *        flipped before or during the reads fails that check
 *   KV2  every entry whose key or value is returned, compared or followed
 *        is verified first (values, versions, scans, child pointers)
 *   KV3  a page an operation changes is verified whole before the change
 *        and its codes recomputed after it (redo too)
 *   KV4  a dirty page is verified whole, on the copy about to be written,
 *        before every write-back; a mismatch is never written (the handle
 *        is poisoned: the log still holds the page's changes)
 */
#ifndef ENGINE_KVPROT_H
#define ENGINE_KVPROT_H

#include <stddef.h>
#include <stdint.h>

#include "page.h"

typedef struct kv_codes {
    uint8_t *code;      /* n * w bytes */
    uint16_t n;         /* codes made (the slot count then; pages hold at most
                     * 16 KiB, so fewer than 2^13 slots) */
    uint16_t flags : 4; /* KV_UNIQUE_KEYS; bound into the page code */
    uint16_t cap : 12;  /* bytes allocated at code, in 64-byte units */
    uint32_t page;      /* page code, the flags mixed in */
} kv_codes;

/* Leaf flag: when the codes were made, no two adjacent entries had equal
 * keys (every key has one version in the page).  A lookup that finds its
 * key in such a page needs no bracket below it (KV1u).  The flag flips the
 * page code's parity bit, so a flipped flag is always a page code
 * mismatch. */
#define KV_UNIQUE_KEYS 1u

/* The code of LEN bytes at P (SEED binds a cell to its slot), w bytes. */
uint64_t kv_code(const uint8_t *p, size_t len, uint64_t seed, unsigned w);

/* The entry code of a leaf cell of LEN bytes at P whose slot holds SEED
 * (the cell's offset in its page, so the page starts at P - SEED; SEED +
 * LEN at most PAGE_SIZE_MAX; the page's 64-byte blocks the cell overlaps
 * readable), width W: the code kv_compute stores for it
 * and the checks recompute (hash, three parity bits).  For
 * bench/bench_hashes.c, so the benchmark times the code the engine runs
 * rather than a copy of it. */
uint64_t kv_leaf_entry_code(const uint8_t *p, size_t len, uint64_t seed, unsigned w);
/* The page hash implementation the codes run on this CPU (checksum.h
 * cs_impl: 0 portable C, 1 PCLMULQDQ, 2 AVX-512), for bench_hashes.c. */
int kv_hash_impl(void);

/* Recompute every code of PAGE (PS bytes) into C for width W (0: free).
 * Returns the change of allocated bytes (for the pool's accounting).
 * Every function here that hashes adds the bytes it hashed to *HASHED
 * when HASHED is not NULL (the pool's kv_check_bytes, kv_code_bytes). */
int64_t kv_compute(kv_codes *c, const uint8_t *page, uint32_t ps, unsigned w, uint64_t *hashed);
/* kv_compute, and in the same pass over the page its checksum at BLOCK
 * into *CHECKSUM (W may be 0: then only the checksum).  Each byte is read
 * once for both, so a flip in the page fails the checksum if it landed
 * before the pass read it, or a code if after: never coded as right and
 * proven by the checksum at once.  The checksum is page_checksum's for
 * every page that passes page_check_structure (decode.h); for one that
 * fails, it may differ, and the caller, which rejects such a page anyway,
 * hashes it again to say why (bufpool.c load_frame). */
int64_t kv_compute_checked(kv_codes *c, const uint8_t *page, uint32_t ps, unsigned w, uint32_t block,
                           uint64_t *checksum, uint64_t *hashed);
void kv_free(kv_codes *c);

/* The flags the codes in C were made with (0 when W is 0). */
static inline unsigned kv_flags(const kv_codes *c) { return c->flags; }

/* Checks; 0 when right, else 1 with *entry (-1: the page code) and the
 * expected / found codes filled.  Bounds are clamped to the page, so a
 * damaged header never sends a check outside it. */
int kv_check_page(const kv_codes *c, const uint8_t *page, uint32_t ps, unsigned w, uint64_t *exp, uint64_t *found,
                  uint64_t *hashed);
int kv_check_entry(const kv_codes *c, const uint8_t *page, uint32_t ps, unsigned w, unsigned slot, uint64_t *exp,
                   uint64_t *found, uint64_t *hashed);
/* Page code, every entry, and (leaves) the hint area's states. */
int kv_check_all(const kv_codes *c, const uint8_t *page, uint32_t ps, unsigned w, int32_t *entry, uint64_t *exp,
                 uint64_t *found, uint64_t *hashed);

/* Memory the codes of a page with N entries take at width W (0 if W 0). */
static inline uint64_t kv_memory(uint32_t n, unsigned w) { return w ? 16u + (uint64_t)n * w : 0; }

#endif
