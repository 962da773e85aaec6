/*
 * test_btree_meta_count_flipped_in_cache_is_refused.c -- a flip of the
 * meta page's block count in the cache is refused by the next allocation,
 * from the free list as from the end of the file, and the handle's count
 * and the data file stay as they were.
 *
 * The bug it caught (crashtest.py mutants, the catalogue run of the
 * fourteenth session, kv-checks-nothing, seed 84595132249066): with the
 * per-KV checks made blind, a cache flip raised the cached meta page's
 * block count to 12,848,899.  Allocation checked the count against the
 * blocks this handle allocated only on its path past the end; the free-
 * list path took it, logged it and stored it as the handle's count, so the
 * next allocation past the end wrote block 12,848,899 (a 210 GB sparse
 * file) and the verify that followed read every block up to it (the run
 * was ended as a hang).  At w = 0 (no per-KV codes, bitflip_cache only
 * measured) the real engine did the same.
 */
#include <sys/stat.h>

#include "testutil.h"

#include "page.h"

#define T_OPTS .timeout = 60, .fini = tu_cleanup

#define PS      4096u
#define NKEYS   300
#define BIG     20000u /* an overflow value: several pages each */
#define FLIPPED (1u << 23)

static void put_big(eng_db *db, int i, int expect) {
    static uint8_t v[BIG];
    char kb[32];
    size_t kl = tu_key(kb, (uint64_t)i);
    tu_fill(v, sizeof v, (uint64_t)i);
    int rc = eng_put(db, kb, kl, v, sizeof v, NULL);
    cr_assert_eq(rc, expect, "put of key %d: %s, expected %s", i, eng_strerror(rc), eng_strerror(expect));
}

/* Open a fresh database at w = 0 with NKEYS overflow values, then delete
 * every other one and vacuum when FREE_SOME (their pages go onto the free
 * list). */
static eng_db *fill(const char *dir, tu_reports *reps, int free_some) {
    eng_options o = tu_opts(ENG_IO_PSYNC, PS, 0, reps);
    o.block_protection_bytes_per_key = 0;
    eng_db *db = tu_open(dir, &o);
    for (int i = 0; i < NKEYS; i++) put_big(db, i, ENG_OK);
    for (int i = 0; free_some && i < NKEYS; i += 2) {
        char kb[32];
        size_t kl = tu_key(kb, (uint64_t)i);
        cr_assert_eq(eng_delete(db, kb, kl, NULL), ENG_OK);
    }
    if (free_some) {
        eng_vacuum_stats vs;
        cr_assert_eq(eng_vacuum(db, &vs), ENG_OK);
    }
    return db;
}

/* Raise the cached meta page's block count by one bit, as a memory fault
 * would (the page on disk and the handle's count unchanged). */
static uint32_t flip_count(eng_db *db, int want_free_list) {
    size_t ps = 0;
    uint8_t *m = eng_debug_frame_bytes(db, 0, &ps);
    cr_assert(m != NULL && ps == PS, "the meta page is not resident");
    uint32_t was = rd32(m + META_OFF_NBLOCKS), head = rd32(m + META_OFF_FREELIST);
    if ((head != 0) != want_free_list) eng_debug_frame_release(db, 0);
    cr_assert_eq(head != 0, want_free_list, "the free list's head is %u", head);
    wr32(m + META_OFF_NBLOCKS, was | FLIPPED);
    eng_debug_frame_release(db, 0);
    return was;
}

static uint64_t file_size(const char *dir) {
    char path[4096];
    struct stat st;
    tu_path(path, sizeof path, dir, "data");
    cr_assert_eq(stat(path, &st), 0);
    return (uint64_t)st.st_size;
}

static void check_refused(eng_db *db, const char *dir, tu_reports *reps, uint32_t was) {
    uint64_t size = file_size(dir);
    tu_reports_reset(reps);
    put_big(db, NKEYS + 1, ENG_CORRUPTION);
    cr_assert(tu_reports_has(reps, ENG_LAYER_STRUCTURE, "data", 0), "no structure report names the meta page");
    cr_assert_eq(eng_debug_nblocks(db), was, "the handle's block count went from %u to %llu", was,
                 (unsigned long long)eng_debug_nblocks(db));
    cr_assert_leq(file_size(dir), size, "the data file grew from %llu to %llu bytes", (unsigned long long)size,
                  (unsigned long long)file_size(dir));
}

Test(meta_count_flipped_in_cache, is_refused_by_an_allocation_from_the_free_list, T_OPTS) {
    const char *dir = tu_tmpdir();
    tu_reports reps;
    tu_reports_init(&reps);
    eng_db *db = fill(dir, &reps, 1);
    uint32_t was = flip_count(db, 1);
    cr_assert_eq(eng_debug_nblocks(db), was);
    check_refused(db, dir, &reps, was);
    eng_close(db);
}

Test(meta_count_flipped_in_cache, is_refused_by_an_allocation_past_the_end, T_OPTS) {
    const char *dir = tu_tmpdir();
    tu_reports reps;
    tu_reports_init(&reps);
    eng_db *db = fill(dir, &reps, 0);
    uint32_t was = flip_count(db, 0);
    check_refused(db, dir, &reps, was);
    eng_close(db);
}

/* Freeing logs the count it read too: a vacuum that frees pages must not
 * make a flipped count the meta page's (and, through the log, the count a
 * reopen trusts). */
Test(meta_count_flipped_in_cache, is_refused_by_freeing_pages, T_OPTS) {
    const char *dir = tu_tmpdir();
    tu_reports reps;
    tu_reports_init(&reps);
    eng_db *db = fill(dir, &reps, 0);
    for (int i = 1; i < NKEYS; i += 2) {
        char kb[32];
        size_t kl = tu_key(kb, (uint64_t)i);
        cr_assert_eq(eng_delete(db, kb, kl, NULL), ENG_OK);
    }
    uint32_t was = flip_count(db, 0);
    tu_reports_reset(&reps);
    eng_vacuum_stats vs;
    int rc = eng_vacuum(db, &vs);
    cr_assert_eq(rc, ENG_CORRUPTION, "vacuum: %s", eng_strerror(rc));
    cr_assert(tu_reports_has(&reps, ENG_LAYER_STRUCTURE, "data", 0), "no structure report names the meta page");
    cr_assert_eq(eng_debug_nblocks(db), was);
    eng_close(db);
}
