/*
 * test_faults_cache_flip_names_the_code_of_its_part.c -- every bitflip_cache
 * ledger line names the part of the page around its bit (part_offset,
 * part_len) and the per-KV code that covers that part (part_code), as
 * engine/kvprot.h lays the codes out:
 *   [0, 16)   checksum and LSN             "none"
 *   [16, 40)  the header's steering fields "page"  (the 4-byte page code)
 *   40 on, a page without slots            "page"  (one part, to its end)
 *   a leaf's hint byte                     "none"  (one byte)
 *   a slot, or a cell                      "entry" (the w-byte codes)
 * The oracle takes a pair of flips in one part at the odds of that code
 * (oracle/verdict.c part_odds).  When it took every part at the entry
 * codes' odds, 610 flips on a meta page let the verdict explain away a lost
 * key (2026-12-03, mutants seed 20261801).
 *
 * A fresh database with codes of width 1 and 400 puts in an 8 MiB cache
 * (everything resident), then 400 ticks with bitflip_cache on; each flip
 * is checked against the frame's layout and put back.
 */
#include "faults_helpers.h"

#define SEED  11u
#define TICKS 400

Test(faults_cache_flip, names_the_code_of_its_part) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    flt_options fo = fopts(run, dir, SEED);
    fo.one_in[FLT_BITFLIP_CACHE] = 1;
    flt_ctx *f = fopen_ok(&fo);
    tu_reports reps;
    tu_reports_init(&reps);
    eng_options o = tu_opts(ENG_IO_PSYNC, PS, 0, &reps);
    o.io_hooks = flt_hooks(f);
    o.checkpoint_wal_bytes = 0;
    o.cache_size = 8u << 20;
    o.block_protection_bytes_per_key = 1;
    eng_db *db = tu_open(dir, &o);
    char k[32];
    uint8_t v[512];
    size_t kl, vl;
    for (uint64_t i = 0; i < 400; i++) {
        kv(i, 0, k, &kl, v, &vl);
        cr_assert_eq(eng_put(db, k, kl, v, vl, NULL), ENG_OK);
    }
    flt_thread_start(f, 0);
    size_t seen = 0, by[3] = {0};
    for (uint64_t i = 0; i < TICKS; i++) {
        flt_pause(f, 0);
        flt_op(f, i);
        flt_tick(f, db);
        flt_pause(f, 1);
        lg l = lg_read(run);
        if (l.n == seen) {
            lg_free(&l);
            continue;
        }
        seen = l.n;
        const char *line = l.lines[l.n - 1];
        int64_t block = jnum(line, "block"), bit = jnum(line, "bit");
        int64_t po = jnum(line, "part_offset"), pl = jnum(line, "part_len");
        char code[16];
        cr_assert_not_null(jstr(line, "part_code", code, sizeof code), "no part_code: %s", line);
        uint64_t byte = (uint64_t)bit / 8, mask = jmask(line);
        size_t ps = 0;
        uint8_t *p = eng_debug_frame_bytes(db, (uint64_t)block, &ps);
        cr_assert_not_null(p, "%s", line);
        cr_assert(po >= 0 && pl > 0 && (uint64_t)po <= byte && byte < (uint64_t)(po + pl) && po + pl <= (int64_t)ps,
                  "the part does not hold the flipped byte: %s", line);
        uint8_t type = p[PH_TYPE_OFF] ^ (byte == PH_TYPE_OFF ? (uint8_t)mask : 0); /* before the flip */
        int slotted = type == PAGE_LEAF || type == PAGE_INTERNAL;
        const char *want;
        if (byte < PH_BLOCK_OFF) {
            want = "none";
            cr_assert(po == 0 && pl == PH_BLOCK_OFF, "%s", line);
        } else if (byte < PAGE_HDR) {
            want = "page";
            cr_assert(po == PH_BLOCK_OFF && pl == PAGE_HDR - PH_BLOCK_OFF, "%s", line);
        } else if (!slotted) {
            want = "page";
            cr_assert(po == PAGE_HDR && pl == (int64_t)ps - PAGE_HDR, "%s", line);
        } else if (type == PAGE_LEAF && byte < PAGE_HDR + LEAF_HINT_BYTES(ps)) {
            want = "none";
            cr_assert(pl == 1, "%s", line);
        } else {
            want = "entry";
        }
        cr_assert_str_eq(code, want, "byte %llu of a page of type %u: %s", (unsigned long long)byte, type, line);
        by[!strcmp(want, "none") ? 0 : !strcmp(want, "page") ? 1 : 2]++;
        p[byte] ^= (uint8_t)mask; /* put back: the next flip meets the page as it was */
        eng_debug_frame_release(db, (uint64_t)block);
        lg_free(&l);
    }
    cr_assert(by[0] && by[1] && by[2], "not every code met in %d ticks (seed %u): none %zu, page %zu, entry %zu", TICKS,
              SEED, by[0], by[1], by[2]);
    eng_close(db);
    flt_close(f);
}
