/*
 * test_btree_meta_count_flipped_in_cache_is_refused.c -- a flip of the
 * meta page's block count in the cache is refused by the next allocation,
 * from the free list as from the end of the file, and the handle's count
 * and the data file stay as they were.
 *
 * The bug it guards against (crashtest.py mutants, planted bug
 * kv-checks-nothing, seed 84595132249066 reaches it): with the per-KV
 * checks made blind, a cache flip raises the cached meta page's block
 * count to 12,848,899.  An allocation that checked the count against the
 * blocks this handle allocated only on its path past the end would take
 * it on the free-list path, log it and store it as the handle's count;
 * the next allocation past the end would write block 12,848,899 (a 210 GB
 * sparse file) and the verify after it read every block up to it (the run
 * ends as a hang).  At w = 0 (no per-KV codes, bitflip_cache only
 * measured) the real engine meets such a flip too, planted bug or not.
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

/* Delete every other overflow value (keys FIRST, FIRST + 2, ...); with
 * VACUUM, vacuum too: their pages go onto the free list. */
static void delete_half(eng_db *db, int first, int vacuum) {
    for (int i = first; i < NKEYS; i += 2) {
        char kb[32];
        size_t kl = tu_key(kb, (uint64_t)i);
        cr_assert_eq(eng_delete(db, kb, kl, NULL), ENG_OK);
    }
    eng_vacuum_stats vs;
    if (vacuum) cr_assert_eq(eng_vacuum(db, &vs), ENG_OK);
}

/* A fresh database at w = 0 in a directory of its own, with NKEYS
 * overflow values. */
typedef struct fx {
    const char *dir;
    tu_reports reps;
    eng_db *db;
} fx;

static void fill(fx *x) {
    x->dir = tu_tmpdir();
    tu_reports_init(&x->reps);
    eng_options o = tu_opts(ENG_IO_PSYNC, PS, 0, &x->reps);
    o.block_protection_bytes_per_key = 0;
    x->db = tu_open(x->dir, &o);
    for (int i = 0; i < NKEYS; i++) put_big(x->db, i, ENG_OK);
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

/* The next allocation (a put of an overflow value) fails with a
 * structure report at the meta page, and changes neither the handle's
 * count (WAS) nor the data file's size. */
static void check_refused(fx *x, uint32_t was) {
    uint64_t size = file_size(x->dir);
    tu_reports_reset(&x->reps);
    put_big(x->db, NKEYS + 1, ENG_CORRUPTION);
    cr_assert(tu_reports_has(&x->reps, ENG_LAYER_STRUCTURE, "data", 0), "no structure report names the meta page");
    cr_assert_eq(eng_debug_nblocks(x->db), was, "the handle's block count went from %u to %llu", was,
                 (unsigned long long)eng_debug_nblocks(x->db));
    cr_assert_leq(file_size(x->dir), size, "the data file grew from %llu to %llu bytes", (unsigned long long)size,
                  (unsigned long long)file_size(x->dir));
}

Test(meta_count_flipped_in_cache, is_refused_by_an_allocation_from_the_free_list, T_OPTS) {
    fx x;
    fill(&x);
    delete_half(x.db, 0, 1);
    check_refused(&x, flip_count(x.db, 1));
    eng_close(x.db);
}

Test(meta_count_flipped_in_cache, is_refused_by_an_allocation_past_the_end, T_OPTS) {
    fx x;
    fill(&x);
    check_refused(&x, flip_count(x.db, 0));
    eng_close(x.db);
}

/* Freeing logs the count it read too: a vacuum that frees pages must not
 * make a flipped count the meta page's (and, through the log, the count a
 * reopen trusts). */
Test(meta_count_flipped_in_cache, is_refused_by_freeing_pages, T_OPTS) {
    fx x;
    fill(&x);
    delete_half(x.db, 1, 0);
    uint32_t was = flip_count(x.db, 0);
    tu_reports_reset(&x.reps);
    eng_vacuum_stats vs;
    int rc = eng_vacuum(x.db, &vs);
    cr_assert_eq(rc, ENG_CORRUPTION, "vacuum: %s", eng_strerror(rc));
    cr_assert(tu_reports_has(&x.reps, ENG_LAYER_STRUCTURE, "data", 0), "no structure report names the meta page");
    cr_assert_eq(eng_debug_nblocks(x.db), was);
    eng_close(x.db);
}
