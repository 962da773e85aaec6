/*
 * test_faults_delays_pause_at_every_site_and_replay.c -- the delay
 * injector (faults/delay.c, delay_one_in): pauses come at every engine
 * delay/... point a workload reaches and on each side of the I/O hooks'
 * reads, writes and fsyncs; each is a ledger line of class "delay" within
 * delay_max_us and counted as no fault; one seed and one thread give the
 * same pauses twice; and the engine's results do not change.
 *
 * Part of the faults suite; helpers in faults_helpers.h.
 */
#include "faults_helpers.h"

#define MAX_US 300

/* N committed puts, a checkpoint, every key read back, through the
 * library's hooks with pauses at odds 1 in ONE_IN; returns the ledger. */
static lg run_with_delays(uint64_t seed, uint64_t one_in, uint64_t n, flt_counts *counts) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    flt_options fo = fopts(run, dir, seed);
    fo.delay_one_in = one_in;
    fo.delay_max_us = MAX_US;
    flt_ctx *f = fopen_ok(&fo);
    flt_thread_start(f, 0);
    eng_options o = eopts(ENG_IO_PSYNC, flt_hooks(f), NULL);
    o.sync_mode = ENG_SYNC_COMMIT;
    eng_db *db = tu_open(dir, &o);
    char k[32];
    uint8_t v[512];
    size_t kl, vl;
    for (uint64_t i = 0; i < n; i++) {
        flt_op(f, i);
        kv(i, 1, k, &kl, v, &vl);
        cr_assert_eq(eng_put(db, k, kl, v, vl, NULL), ENG_OK);
    }
    cr_assert_eq(eng_checkpoint(db), ENG_OK);
    for (uint64_t i = 0; i < n; i++) {
        kv(i, 1, k, &kl, v, &vl);
        eng_buf got = {0};
        cr_assert_eq(eng_get(db, k, kl, &got), ENG_OK);
        cr_assert(got.len == vl && !memcmp(got.data, v, vl), "key %llu changed under pauses", (unsigned long long)i);
        eng_buf_free(&got);
    }
    flt_pause(f, 1);
    tu_close(db);
    check_counts(f, run);
    flt_get_counts(f, counts);
    flt_close(f);
    return lg_read(run);
}

static int is_hook_site(const char *point) {
    static const char *const sites[] = {"hook/read/before", "hook/read/after",  "hook/write/before",
                                        "hook/write/after", "hook/sync/before", "hook/sync/after"};
    for (size_t i = 0; i < sizeof sites / sizeof *sites; i++)
        if (!strcmp(point, sites[i])) return 1;
    return 0;
}

Test(faults_delays, every_site_a_workload_reaches_pauses_and_says_so, T_OPTS) {
    flt_counts c;
    lg l = run_with_delays(7, 1, 120, &c);
    size_t delays = lg_count(&l, "delay");
    cr_assert_eq(c.delays, delays, "counted %llu pauses, ledger %zu", (unsigned long long)c.delays, delays);
    for (int cls = 0; cls < FLT_CLASS_COUNT; cls++)
        cr_assert_eq(c.injected[cls], 0, "a pause counted as %s", flt_class_name(cls));
    /* At odds 1 in 1 every opportunity pauses: every engine delay point
     * the workload reached has a line, and so has each hook side of a
     * write and an fsync (reads may all hit the cache). */
    size_t ndelay_points = 0;
    for (size_t i = 0; i < eng_fault_point_count(); i++) {
        const char *name = eng_fault_point_name(i);
        if (strncmp(name, "delay/", 6)) continue;
        ndelay_points++;
        cr_assert(c.point_checks[i] == c.point_hits[i], "%s: reached %llu, paused %llu", name,
                  (unsigned long long)c.point_checks[i], (unsigned long long)c.point_hits[i]);
        if (!strcmp(name, "delay/wal/before_sync") || !strcmp(name, "delay/commit/before_publish") ||
            !strcmp(name, "delay/checkpoint/after_redo_point") || !strcmp(name, "delay/checkpoint/before_control") ||
            !strcmp(name, "delay/bufpool/before_write_back") || !strcmp(name, "delay/bufpool/before_page_latch") ||
            !strcmp(name, "delay/bufpool/after_page_release"))
            cr_assert(c.point_hits[i] > 0, "%s never paused", name);
    }
    cr_assert(ndelay_points >= 9, "the catalogue lists %zu delay points", ndelay_points);
    const char *need[] = {"hook/write/before", "hook/write/after", "hook/sync/before", "hook/sync/after"};
    for (size_t k = 0; k < sizeof need / sizeof *need; k++)
        cr_assert_not_null(lg_nth_at(&l, "delay", need[k], 0), "no pause at %s", need[k]);
    size_t yields = 0;
    for (size_t k = 0; k < l.n; k++) {
        const char *line = l.lines[k];
        if (!line_is(line, "class", "delay")) continue;
        char point[128];
        cr_assert_not_null(jstr(line, "point", point, sizeof point), "%s", line);
        cr_assert(is_hook_site(point) || (point_index(point) >= 0 && !strncmp(point, "delay/", 6)),
                  "a pause at an unknown site: %s", line);
        int64_t us = jnum(line, "len");
        cr_assert(us >= 0 && us <= MAX_US, "a pause out of [0, %d] us: %s", MAX_US, line);
        /* The thread's own stream; the op once one began (the open's
         * writes come before the first). */
        cr_assert(jnum(line, "thread") == 0, "%s", line);
        yields += us == 0;
    }
    cr_assert(yields > 0 && yields < delays, "%zu yields among %zu pauses", yields, delays);
    lg_free(&l);
}

/* The ledger's pauses as "point len" lines, for comparing two runs. */
static char *pauses_of(const lg *l) {
    size_t cap = 64 * l->n + 1, n = 0;
    char *s = calloc(1, cap);
    for (size_t k = 0; k < l->n; k++) {
        char point[128];
        if (!line_is(l->lines[k], "class", "delay") || !jstr(l->lines[k], "point", point, sizeof point)) continue;
        n += (size_t)snprintf(s + n, cap - n, "%s %lld %lld\n", point, (long long)jnum(l->lines[k], "len"),
                              (long long)jnum(l->lines[k], "op"));
    }
    return s;
}

Test(faults_delays, one_seed_and_one_thread_give_the_same_pauses, T_OPTS) {
    flt_counts c;
    lg a = run_with_delays(11, 4, 80, &c), b = run_with_delays(11, 4, 80, &c), d = run_with_delays(12, 4, 80, &c);
    char *pa = pauses_of(&a), *pb = pauses_of(&b), *pd = pauses_of(&d);
    cr_assert(strlen(pa) > 0, "no pause at odds 1 in 4");
    cr_assert_str_eq(pa, pb, "one seed, two different sets of pauses");
    cr_assert_str_neq(pa, pd, "two seeds, the same pauses");
    free(pa);
    free(pb);
    free(pd);
    lg_free(&a);
    lg_free(&b);
    lg_free(&d);
}

Test(faults_delays, no_pause_while_paused_or_off, T_OPTS) {
    flt_counts c;
    lg l = run_with_delays(7, 0, 40, &c);
    cr_assert_eq(lg_count(&l, "delay"), 0, "delays off, yet a pause");
    cr_assert_eq(c.delays, 0);
    lg_free(&l);
}

Test(faults_delays, delay_sites_must_name_sites_and_need_pauses, T_OPTS) {
    cr_assert_null(flt_delay_sites_invalid("hook/sync/after, delay/commit/before_publish"));
    const char *bad = "hook/sync/after,delay/no/such";
    cr_assert_eq(flt_delay_sites_invalid(bad), bad + strlen("hook/sync/after,"));
    cr_assert_not_null(flt_delay_sites_invalid("kill/wal/after_sync"), "a kill point is no delay site");
    cr_assert_not_null(flt_delay_sites_invalid(" , "), "no site named");
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    flt_options fo = fopts(run, dir, 1);
    fo.delay_sites = "hook/sync/after";
    flt_ctx *f = NULL;
    cr_assert_eq(flt_open(&fo, &f), ENG_INVALID, "sites without delay_one_in would never pause");
    fo.delay_one_in = 2;
    fo.delay_sites = "hook/sync/later";
    cr_assert_eq(flt_open(&fo, &f), ENG_INVALID, "an unknown site");
    cr_assert_null(f);
}
