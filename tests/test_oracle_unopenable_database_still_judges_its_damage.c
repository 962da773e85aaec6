/*
 * test_oracle_unopenable_database_still_judges_its_damage.c -- rule V4c
 * (oracle/verdict.h, docs/oracle.md): a database that did not open gets
 * no final verify, so the damage still in its closed files is read by the
 * engine's own page reader, and damage that reader passes is swallowed
 * even though the run is unrecoverable by design for another reason.
 *
 * Two halves.  The judge on hand-made input (reader reports, present
 * marks): what the rule concludes and what reader reports may never do.
 * Then the real stress binary ($BUILD/stress) on a crafted saved state: a
 * database whose meta page is flipped (the open fails, explained by the
 * flip's ledger line) and whose last block below the high-water mark is
 * zeroed (the block a zero-page rule that compares block + 1 takes for
 * never written), each with the ledger line and the pre/post hashes the
 * fault library writes at a kill's crash/data.  The planted bug
 * zero-page-last-block-fresh's stress binary, when built
 * (make $BUILD/mutants/zero-page-last-block-fresh/stress), must fail the
 * same state.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include "format.h"
#include "oracle_helpers.h"

static vd_report rep(const char *layer, int64_t block, int after_crash, int reader) {
    vd_report r = {.block = block, .offset = block * 4096, .entry = -1, .after_crash = after_crash, .reader = reader};
    snprintf(r.layer, sizeof r.layer, "%s", layer);
    snprintf(r.file, sizeof r.file, "data");
    return r;
}

/* The saved state of a kill: a flip of the meta page (block 0) that the
 * open after it reports, and a zero page at block 9, both carried; the
 * open failed (V8) on the flip alone. */
static vd_ctx *unopened_with_zero_page(void) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_PAGE] = c.class_on[VD_ZERO_PAGE] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v,
                       "{\"seq\":0,\"class\":\"bitflip_page\",\"point\":\"crash/data\",\"file\":\"data\",\"block\":0,"
                       "\"offset\":0,\"len\":4096,\"pre\":\"0x11\",\"post\":\"0x12\"}",
                       1);
    vd_add_ledger_line(v,
                       "{\"seq\":1,\"class\":\"zero_page\",\"point\":\"crash/data\",\"file\":\"data\",\"block\":9,"
                       "\"offset\":36864,\"len\":4096,\"pre\":\"0x21\",\"post\":\"0x22\"}",
                       1);
    vd_note_external_kill(v);
    vd_set_crash_check(v, VD_CHECK_NO_OPEN);
    vd_report open = rep("page_checksum", 0, 1, 0);
    vd_add_report(v, &open);
    return v;
}

Test(oracle_unopened, a_zero_page_the_reader_passes_is_swallowed_though_the_open_failed_by_design) {
    vd_ctx *v = unopened_with_zero_page();
    vd_result res;
    vd_settle(v, &res);
    /* Without the reader: unrecoverable by design, the zero page masked. */
    cr_assert(res.pass);
    cr_assert_neq(res.by_design[0], 0);
    cr_assert_eq(res.cls[VD_ZERO_PAGE].masked, 1);
    /* The reader read block 9 and block 0: it reported block 0 only. */
    vd_report r0 = rep("page_checksum", 0, 0, 1);
    vd_add_report(v, &r0);
    vd_mark_present(v, 0);
    vd_mark_present(v, 1);
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_ZERO_PAGE].swallowed, 1);
    cr_assert_eq(res.cls[VD_BITFLIP_PAGE].detected, 1);
    cr_assert_neq(res.by_design[0], 0, "the open is still explained by the flip");
    cr_assert_eq(res.false_alarms, 0);
    cr_assert_not(res.pass);
    vd_free(v);
}

Test(oracle_unopened, a_zero_page_the_reader_reports_is_detected) {
    vd_ctx *v = unopened_with_zero_page();
    vd_report r0 = rep("page_checksum", 0, 0, 1), r9 = rep("zero_page", 9, 0, 1);
    vd_add_report(v, &r0);
    vd_add_report(v, &r9);
    vd_mark_present(v, 0);
    vd_mark_present(v, 1);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_ZERO_PAGE].detected, 1);
    cr_assert_eq(res.cls[VD_ZERO_PAGE].swallowed, 0);
    cr_assert_neq(res.by_design[0], 0);
    cr_assert(res.pass);
    vd_free(v);
}

/* V1d holds for the reader too: a structure report at the zeroed block is
 * not the zero-page rule speaking. */
Test(oracle_unopened, a_reader_report_of_another_layer_credits_nothing) {
    vd_ctx *v = unopened_with_zero_page();
    vd_report r9 = rep("structure", 9, 0, 1);
    vd_add_report(v, &r9);
    vd_mark_present(v, 1);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.cls[VD_ZERO_PAGE].swallowed, 1);
    cr_assert_eq(res.false_alarms, 0);
    vd_free(v);
}

/* The reader reads a database recovery never finished: what it finds
 * where nothing was injected (a page redo would have rebuilt) is no false
 * alarm, and its exact match never explains a report of the failed open
 * as a neighbour's consequence (V1c). */
Test(oracle_unopened, reader_reports_are_never_false_alarms_and_never_explain_the_open) {
    vd_config c = judging();
    c.class_on[VD_BITFLIP_PAGE] = 1;
    vd_ctx *v = vd_new(&c);
    vd_add_ledger_line(v,
                       "{\"seq\":0,\"class\":\"bitflip_page\",\"point\":\"crash/data\",\"file\":\"data\",\"block\":5,"
                       "\"offset\":20480,\"len\":4096,\"pre\":\"0x11\",\"post\":\"0x12\"}",
                       1);
    vd_note_external_kill(v);
    vd_set_crash_check(v, VD_CHECK_NO_OPEN);
    vd_report open = rep("structure", 30, 1, 0);
    vd_report r5 = rep("page_checksum", 5, 0, 1), r20 = rep("page_checksum", 20, 0, 1);
    vd_add_report(v, &open);
    vd_add_report(v, &r5);
    vd_add_report(v, &r20);
    vd_mark_present(v, 0);
    vd_result res;
    vd_settle(v, &res);
    cr_assert_eq(res.false_alarms, 0);
    cr_assert_eq(res.cls[VD_BITFLIP_PAGE].detected, 1);
    cr_assert(res.unrecoverable);
    cr_assert_eq(res.by_design[0], 0, "by design: %s", res.by_design);
    cr_assert_neq(res.unrecoverable_why[0], 0);
    cr_assert_not(res.pass);
    vd_free(v);
    /* The same reports from the engine's own run (not the reader): the
     * exact match explains the open's structure report (V1c). */
    v = vd_new(&c);
    vd_add_ledger_line(v,
                       "{\"seq\":0,\"class\":\"bitflip_page\",\"point\":\"crash/data\",\"file\":\"data\",\"block\":5,"
                       "\"offset\":20480,\"len\":4096,\"pre\":\"0x11\",\"post\":\"0x12\"}",
                       1);
    vd_note_external_kill(v);
    vd_set_crash_check(v, VD_CHECK_NO_OPEN);
    r5.reader = 0, r5.after_crash = 1;
    vd_add_report(v, &open);
    vd_add_report(v, &r5);
    vd_settle(v, &res);
    cr_assert_neq(res.by_design[0], 0);
    vd_free(v);
}

/* ---- the stress binary on a crafted saved state ---- */

static const char *build_dir(void) {
    const char *b = getenv("BUILD");
    return b && *b ? b : "build";
}

/* Run PROG with ARGV (NULL-terminated, argv[0] included), output to LOG;
 * its exit status, or -1. */
static int run(const char *prog, char *const argv[], const char *log) {
    pid_t p = fork();
    if (p == 0) {
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) dup2(fd, 1), dup2(fd, 2);
        execv(prog, argv);
        _exit(127);
    }
    int st = 0;
    if (p < 0 || waitpid(p, &st, 0) != p || !WIFEXITED(st)) return -1;
    return WEXITSTATUS(st);
}

static char *slurp(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    char *s = calloc(1, 1 << 20);
    if (s) s[fread(s, 1, (1 << 20) - 1, f)] = 0;
    fclose(f);
    return s;
}

/* The counter NAME of class CLS in stress's JSON report TEXT, or -1. */
static long long class_count(const char *text, const char *cls, const char *name) {
    char key[64];
    snprintf(key, sizeof key, "\"%s\": {", cls);
    const char *p = text ? strstr(text, key) : NULL;
    if (!p) return -1;
    const char *end = strchr(p, '}');
    snprintf(key, sizeof key, "\"%s\": ", name);
    const char *q = strstr(p, key);
    return q && q < end ? atoll(q + strlen(key)) : -1;
}

typedef struct state {
    char dir[256], db[300], run_dir[320];
    uint32_t ps;
    uint64_t hwm;
} state;

static void path(char *out, size_t cap, const char *a, const char *b) { snprintf(out, cap, "%s/%s", a, b); }

static void common_args(const state *s, char *report, size_t cap, const char *name, char **argv, int *n) {
    static char db_arg[400], rep_arg[400];
    snprintf(db_arg, sizeof db_arg, "--db=%s", s->db);
    snprintf(report, cap, "%s/%s", s->dir, name);
    snprintf(rep_arg, sizeof rep_arg, "--report=%s", report);
    argv[(*n)++] = "stress";
    argv[(*n)++] = db_arg;
    argv[(*n)++] = rep_arg;
    argv[(*n)++] = "--threads=1";
    argv[(*n)++] = "--max_key=3000";
    argv[(*n)++] = "--page_size=4096";
}

/* A database written and closed cleanly by the real engine. */
static void make_db(state *s) {
    snprintf(s->dir, sizeof s->dir, "/tmp/test-unopened-XXXXXX");
    cr_assert_not_null(mkdtemp(s->dir));
    path(s->db, sizeof s->db, s->dir, "db");
    snprintf(s->run_dir, sizeof s->run_dir, "%s.expected", s->db);
    char prog[512], report[512], log[512];
    snprintf(prog, sizeof prog, "%s/stress", build_dir());
    cr_assert_eq(access(prog, X_OK), 0, "%s is not built", prog);
    char *argv[16];
    int n = 0;
    common_args(s, report, sizeof report, "create.json", argv, &n);
    argv[n++] = "--destroy_db_initially";
    argv[n++] = "--ops_per_thread=3000";
    argv[n] = NULL;
    path(log, sizeof log, s->dir, "create.log");
    cr_assert_eq(run(prog, argv, log), 0, "creating the database failed (%s)", log);
    char p[512];
    uint8_t ct[CONTROL_SIZE];
    path(p, sizeof p, s->db, CONTROL_NAME);
    int fd = open(p, O_RDONLY);
    cr_assert_eq(pread(fd, ct, sizeof ct, 0), (ssize_t)sizeof ct);
    close(fd);
    memcpy(&s->ps, ct + CT_PAGE_SIZE_OFF, 4);
    memcpy(&s->hwm, ct + CT_HWM_OFF, 8);
    cr_assert_eq(s->ps, 4096);
    cr_assert_gt(s->hwm, 3);
}

/* Damage BLOCK on disk as the fault library does at a kill (zero it, or
 * flip one bit), and append its ledger line; RESTORE: put the old bytes
 * back afterwards, so the damage is gone and its post hash no longer
 * matches. */
static void damage(const state *s, FILE *ledger, int seq, uint64_t block, int zero, int restore) {
    char p[512];
    path(p, sizeof p, s->db, "data");
    int fd = open(p, O_RDWR);
    cr_assert_geq(fd, 0);
    uint8_t old[4096], pg[4096];
    off_t at = (off_t)(block * s->ps);
    cr_assert_eq(pread(fd, old, s->ps, at), (ssize_t)s->ps);
    memcpy(pg, old, s->ps);
    if (zero)
        memset(pg, 0, s->ps);
    else
        pg[100] ^= 1;
    uint64_t pre = XXH64(old, s->ps, 0), post = XXH64(pg, s->ps, 0);
    cr_assert_eq(pwrite(fd, pg, s->ps, at), (ssize_t)s->ps);
    if (restore) cr_assert_eq(pwrite(fd, old, s->ps, at), (ssize_t)s->ps);
    close(fd);
    fprintf(ledger,
            "{\"seq\":%d,\"phase\":\"run\",\"class\":\"%s\",\"point\":\"crash/data\",\"file\":\"data\",\"block\":%llu,"
            "\"offset\":%llu,\"len\":%u%s,\"pre\":\"0x%llx\",\"post\":\"0x%llx\"}\n",
            seq, zero ? "zero_page" : "bitflip_page", (unsigned long long)block, (unsigned long long)(block * s->ps),
            s->ps, zero ? "" : ",\"mask\":\"0x1\",\"bit\":800", (unsigned long long)pre, (unsigned long long)post);
}

/* The state a kill left: the meta page flipped (the open fails on it), the
 * last block below the high-water mark zeroed (RESTORED: put back), the
 * run marked unclean so the next process judges both lines as carried. */
static void craft(const state *s, int restored) {
    char p[512];
    path(p, sizeof p, s->run_dir, "ledger");
    FILE *ledger = fopen(p, "a");
    cr_assert_not_null(ledger);
    damage(s, ledger, 0, 0, 0, 0);
    damage(s, ledger, 1, s->hwm - 1, 1, restored);
    fclose(ledger);
    path(p, sizeof p, s->run_dir, "stress_state");
    FILE *f = fopen(p, "w");
    cr_assert_not_null(f);
    fprintf(f, "epoch 1\nsettled 0\nclean 0\n");
    fclose(f);
}

/* Run PROG (a stress binary) on the crafted state: its exit status, and
 * its report in *REPORT (freed by the caller). */
static int judge_with(const state *s, const char *prog, char **report) {
    char rp[512], log[512];
    char *argv[16];
    int n = 0;
    common_args(s, rp, sizeof rp, "judged.json", argv, &n);
    argv[n++] = "--ops_per_thread=100";
    argv[n] = NULL;
    path(log, sizeof log, s->dir, "judged.log");
    int rc = run(prog, argv, log);
    *report = slurp(rp);
    cr_assert_not_null(*report, "no report (%s)", log);
    cr_assert_not_null(strstr(*report, "\"unrecoverable_by_design\": \""), "the open did not fail by design: %s",
                       *report);
    return rc;
}

static void cleanup(const state *s) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", s->dir);
    if (system(cmd)) {}
}

Test(stress_unopened, the_real_engine_reports_the_zero_page_so_the_run_passes) {
    state s;
    make_db(&s);
    craft(&s, 0);
    char prog[512], *report;
    snprintf(prog, sizeof prog, "%s/stress", build_dir());
    int rc = judge_with(&s, prog, &report);
    cr_assert_eq(rc, 0, "%s", report);
    cr_assert_eq(class_count(report, "zero_page", "detected"), 1, "%s", report);
    cr_assert_eq(class_count(report, "zero_page", "swallowed"), 0);
    cr_assert_eq(class_count(report, "bitflip_page", "detected"), 1);
    free(report);
    cleanup(&s);
}

/* Damage no longer there (the block holds its old bytes again): not judged
 * by the reader, masked as before, with the real engine whose reader
 * would pass the restored page (judging it would call it swallowed). */
Test(stress_unopened, damage_no_longer_on_disk_is_not_judged) {
    state s;
    make_db(&s);
    craft(&s, 1);
    char prog[512], *report;
    snprintf(prog, sizeof prog, "%s/stress", build_dir());
    int rc = judge_with(&s, prog, &report);
    cr_assert_eq(rc, 0, "%s", report);
    cr_assert_eq(class_count(report, "zero_page", "masked"), 1, "%s", report);
    cr_assert_eq(class_count(report, "zero_page", "swallowed"), 0);
    free(report);
    cleanup(&s);
}

Test(stress_unopened, a_zero_page_rule_that_passes_the_last_block_fails_the_run) {
    char prog[512];
    snprintf(prog, sizeof prog, "%s/mutants/zero-page-last-block-fresh/stress", build_dir());
    if (access(prog, X_OK) != 0)
        cr_skip_test("%s is not built (make %s): the judge's half of this proof runs above", prog, prog);
    state s;
    make_db(&s);
    craft(&s, 0);
    char *report;
    int rc = judge_with(&s, prog, &report);
    cr_assert_eq(rc, 1, "%s", report);
    cr_assert_eq(class_count(report, "zero_page", "swallowed"), 1, "%s", report);
    cr_assert_eq(class_count(report, "bitflip_page", "detected"), 1);
    free(report);
    cleanup(&s);
}
