/*
 * fuzz_decoders.c -- libFuzzer target for the on-disk decoders.
 *
 * Feeds arbitrary bytes to the page decoders of engine/page.h and to the
 * decoders of WAL record payloads (engine/pageop.h: batch records and page
 * actions, as recovery applies them).  Two kinds of bug end a run:
 *   - a read or write outside the page (ASan), undefined behaviour (UBSan),
 *     a crash or a hang on any input: the decoders must answer nonsense
 *     with ENG_CORRUPTION;
 *   - a page that passed page_check_structure but breaks a promise: a cell
 *     that reaches outside the page, a search that lands out of order, or
 *     an edit (remove / insert / compact) that leaves an invalid page or
 *     loses a cell.  Those abort().
 *
 * Input layout (short inputs are zero-padded):
 *   0      page size: (b & 3) -> 4096, 8192, 16384, 4096
 *   1      edit choices (which slot to remove, value length)
 *   2..5   block number passed to page_verify (u32 LE)
 *   6..9   high-water mark passed to page_verify (u32 LE)
 *   10..11 search key length (mod ENG_MAX_KEY + 1)
 *   12..15 reserved
 *   16..   page bytes (page_size of them; the rest, if any, is the search
 *          key, else the key is taken from the start of the page bytes)
 * The seeds in tests/fuzz/seeds/ follow this layout.
 *
 * With bit 7 of byte 0 set the input is a WAL payload instead: byte 1
 * selects a batch record (even) or a page-actions record (odd) and the
 * rest is the payload.  Page actions are applied, as redo does, to a valid
 * leaf page (first a batch decoded from the input's tail, if any, serves
 * as their cell source); after each applied action the page must still
 * pass page_check_structure or the action must have been refused.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "page.h"
#include "pageop.h"

#define PREFIX 16u

static void fail(const char *what, unsigned slot) {
    fprintf(stderr, "fuzz_decoders: %s (slot %u)\n", what, slot);
    abort();
}

static size_t cell_hdr(const uint8_t *page) {
    return ph_get_type(page) == PAGE_LEAF ? LEAF_CELL_HDR : INTERNAL_CELL_HDR;
}

static void key_at(const uint8_t *page, unsigned slot, const uint8_t **key, size_t *klen) {
    size_t size;
    const uint8_t *c = page_cell_bytes(page, slot, &size);
    *key = c + cell_hdr(page);
    *klen = rd16(c);
}

/* Every promise a checked page makes to its readers. */
static void walk(const uint8_t *page, size_t ps) {
    const unsigned n = ph_get_nslots(page), type = ph_get_type(page);
    const uint8_t *end = page + ps;

    if (type == PAGE_META) {
        meta_fields m;
        meta_read(page, &m);
        if (m.magic != META_MAGIC || m.root == 0 || m.root >= m.nblocks) fail("accepted meta page with bad fields", 0);
        return;
    }
    if (type != PAGE_LEAF && type != PAGE_INTERNAL) return;
    for (unsigned i = 0; i < n; i++) {
        size_t size;
        const uint8_t *c = page_cell_bytes(page, i, &size);
        if (c < page + ph_get_upper(page) || c + size > end) fail("cell outside the cell area", i);
        if (type == PAGE_LEAF) {
            leaf_cell lc;
            page_leaf_cell(page, i, &lc);
            if (lc.size != size || lc.klen < 1 || lc.klen > ENG_MAX_KEY || lc.key + lc.klen > end)
                fail("leaf cell decodes out of bounds", i);
            if ((lc.cflags & CELL_OVERFLOW) ? (lc.val != NULL || lc.ovfl == 0)
                                            : (lc.val == NULL || lc.val + lc.vlen > end))
                fail("leaf cell value out of bounds", i);
        } else {
            internal_cell ic;
            page_internal_cell(page, i, &ic);
            if (ic.size != size || ic.klen < 1 || ic.key + ic.klen > end || ic.child == 0)
                fail("internal cell decodes out of bounds", i);
        }
        const uint8_t *k;
        size_t kl;
        int exact;
        key_at(page, i, &k, &kl);
        if (page_search(page, k, kl, &exact) != i || !exact) fail("page_search misses a stored key", i);
    }
}

/* page_search's answer must bracket KEY. */
static void check_search(const uint8_t *page, const uint8_t *key, size_t klen) {
    const unsigned n = ph_get_nslots(page);
    int exact;
    unsigned idx = page_search(page, key, klen, &exact);
    const uint8_t *k;
    size_t kl;

    if (idx > n) fail("page_search beyond nslots", idx);
    if (idx > 0) {
        key_at(page, idx - 1, &k, &kl);
        if (key_cmp(k, kl, key, klen) >= 0) fail("page_search: previous key not below the probe", idx);
    }
    if (idx < n) {
        key_at(page, idx, &k, &kl);
        int c = key_cmp(k, kl, key, klen);
        if (c < 0 || (c == 0) != (exact != 0)) fail("page_search: slot key below the probe or exact wrong", idx);
    } else if (exact) {
        fail("page_search: exact past the end", idx);
    }
}

static void must_be_valid(const uint8_t *page, size_t ps, const char *after) {
    page_problem pr;
    if (page_check_structure(page, ps, &pr) != ENG_OK) {
        fprintf(stderr, "fuzz_decoders: valid page invalid after %s: %s\n", after, pr.detail);
        abort();
    }
}

/* A valid page must stay valid, and keep its cells, through every edit. */
static void edit(const uint8_t *orig, size_t ps, uint8_t choice, const uint8_t *key, size_t klen,
                 const uint8_t *val_src, size_t val_avail) {
    const unsigned type = ph_get_type(orig);
    uint8_t *page, *before, *cell;
    unsigned n;

    if (type != PAGE_LEAF && type != PAGE_INTERNAL) return;
    page = malloc(ps);
    before = malloc(ps);
    cell = malloc(ps);
    if (!page || !before || !cell) abort();
    memcpy(page, orig, ps);

    /* compact: same cells in the same order, frag 0 */
    memcpy(before, page, ps);
    page_compact(page, ps);
    must_be_valid(page, ps, "compact");
    n = ph_get_nslots(page);
    if (n != ph_get_nslots(before) || ph_get_frag(page) != 0) fail("compact changed the slot count or left frag", n);
    for (unsigned i = 0; i < n; i++) {
        size_t a, b;
        const uint8_t *ca = page_cell_bytes(before, i, &a), *cb = page_cell_bytes(page, i, &b);
        if (a != b || memcmp(ca, cb, a) != 0) fail("compact changed a cell", i);
    }

    /* remove one slot */
    if (n > 0) {
        unsigned victim = choice % n;
        size_t vs, frag = ph_get_frag(page);
        page_cell_bytes(page, victim, &vs);
        page_remove_cell(page, victim);
        must_be_valid(page, ps, "remove");
        if (ph_get_frag(page) != frag + vs || ph_get_nslots(page) != n - 1) fail("remove accounting", victim);
    }

    /* insert (or replace) the probe key */
    if (klen >= 1 && klen <= ENG_MAX_KEY) {
        int exact, inserted = 0;
        unsigned idx = page_search(page, key, klen, &exact);
        size_t size;
        /* Every version of the key goes, so the new one stands alone. */
        while (exact) {
            page_remove_cell(page, idx);
            idx = page_search(page, key, klen, &exact);
        }
        if (type == PAGE_LEAF) {
            size_t room = page_reclaimable(page), vlen = 0;
            int ovfl = choice & 1;
            if (room >= LEAF_CELL_HDR + klen + 4 + 2) {
                vlen = (room - (LEAF_CELL_HDR + klen + 2)) * (choice >> 1) / 127;
                if (vlen > val_avail) vlen = val_avail;
            }
            size = leaf_cell_size(klen, vlen, ovfl);
            if (room >= size + 2) {
                leaf_cell_encode(cell, key, klen, (uint32_t)vlen, val_src, ovfl, 0x1234u, 7, 0);
                page_insert_cell(page, ps, idx, cell, size);
                must_be_valid(page, ps, "leaf insert");
                inserted = 1;
            }
        } else {
            size = internal_cell_size(klen);
            if (page_reclaimable(page) >= size + 2) {
                internal_cell_encode(cell, key, klen, 0x4321u);
                page_insert_cell(page, ps, idx, cell, size);
                must_be_valid(page, ps, "internal insert");
                inserted = 1;
            }
        }
        int ex2;
        if (page_search(page, key, klen, &ex2) != idx || ex2 != inserted)
            fail("inserted key not found where it went", idx);
        walk(page, ps);
    }
    free(cell);
    free(before);
    free(page);
}

static void fuzz_wal_payload(const uint8_t *data, size_t size) {
    static const uint32_t ps = 4096;
    uint32_t nops = 0;
    if (size < 1) return;
    int pages = data[0] & 1;
    data++;
    size--;
    if (!pages) {
        if (pa_batch_count(data, size, &nops) == 0) {
            pa_batch b = {0};
            b.ops = calloc(nops, sizeof *b.ops);
            if (!b.ops) abort();
            if (pa_batch_decode(data, size, &b) == 0) {
                for (uint32_t i = 0; i < b.nops; i++)
                    if (b.ops[i].key + b.ops[i].klen > data + size || b.ops[i].val + b.ops[i].vlen > data + size)
                        fail("batch op outside the record", i);
            }
            free(b.ops);
        }
        return;
    }
    uint8_t *page = calloc(1, ps), *z = calloc(1, ps);
    if (!page || !z) abort();
    page_init(page, ps, 7, PAGE_LEAF, 0);
    const uint8_t *p = data, *end = data + size;
    while (p < end) {
        int kind;
        uint32_t block;
        size_t n = pa_parse(p, (size_t)(end - p), &kind, &block);
        if (!n) break;
        if (p + n > end) fail("pa_parse overran its input", 0);
        const char *why = NULL;
        uint8_t save[4096];
        memcpy(save, page, ps);
        int rc = pa_apply(page, ps, 7, p, n, NULL, z, &why);
        if (rc == ENG_OK) {
            page_problem pr;
            if (page_check_structure(page, ps, &pr) != ENG_OK) memcpy(page, save, ps); /* redo refuses such a result */
        } else if (rc != ENG_CORRUPTION || !why) {
            fail("pa_apply returned an unexpected status", (unsigned)rc);
        }
        p += n;
    }
    free(page);
    free(z);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size && (data[0] & 0x80)) {
        fuzz_wal_payload(data + 1, size - 1);
        return 0;
    }
    static const size_t sizes[4] = {4096, 8192, 16384, 4096};
    uint8_t hdr[PREFIX] = {0};
    size_t ps, body, klen;
    const uint8_t *key;
    uint8_t *page;
    uint32_t block, hwm;
    page_problem pr, pr2;
    int z, rc;

    memcpy(hdr, data, size < PREFIX ? size : PREFIX);
    ps = sizes[hdr[0] & 3];
    block = rd32(hdr + 2);
    hwm = rd32(hdr + 6);
    klen = rd16(hdr + 10) % (ENG_MAX_KEY + 1);
    body = size > PREFIX ? size - PREFIX : 0;

    /* Exactly page_size bytes on the heap: ASan sees any read past it. */
    page = calloc(1, ps);
    if (!page) abort();
    memcpy(page, data + PREFIX, body < ps ? body : ps);
    if (body > ps) {
        key = data + PREFIX + ps;
        if (klen > body - ps) klen = body - ps;
    } else {
        key = data + (size > PREFIX ? PREFIX : 0);
        if (klen > body) klen = body;
    }

    /* page_verify as the pool calls it: the block and hwm from the input,
     * then the page's own block so the structure checks are reached. */
    rc = page_verify(page, ps, block, hwm, 1, &z, &pr);
    if (rc != ENG_OK && rc != ENG_CORRUPTION) abort();
    if (z && (!page_is_zero(page, ps) || block < hwm)) abort();
    page_verify(page, ps, block, hwm, 0, &z, &pr);
    page_verify(page, ps, ph_get_block(page), 0, 0, &z, &pr);

    rc = page_check_structure(page, ps, &pr);
    if (rc != ENG_OK && rc != ENG_CORRUPTION) abort();
    if (rc == ENG_CORRUPTION &&
        (pr.layer < 0 || pr.layer >= ENG_LAYER_COUNT || !memchr(pr.detail, 0, sizeof pr.detail)))
        abort();
    if (page_check_structure(page, ps, &pr2) != rc) abort(); /* a decoder must not depend on anything but the bytes */

    if (!page_is_zero(page, ps)) {
        /* A fresh checksum at the page's own block must not change the verdict. */
        uint32_t own = ph_get_block(page);
        page_set_checksum(page, ps, own);
        if (page_verify(page, ps, own, 0, 1, &z, &pr2) != rc) abort();
    }

    if (rc == ENG_OK) {
        walk(page, ps);
        if (ph_get_type(page) == PAGE_LEAF || ph_get_type(page) == PAGE_INTERNAL) check_search(page, key, klen);
        edit(page, ps, hdr[1], key, klen, data, size);
    }
    free(page);
    return 0;
}
