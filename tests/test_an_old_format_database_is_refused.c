/*
 * test_an_old_format_database_is_refused.c -- a database of an earlier
 * format version (engine/format.h ct_version: version 2 had XXH3-64 page
 * checksums, this engine's pages carry the page hash) is refused, with a
 * status that says it is no damage and a report that says why.
 *
 * Proves, on a database whose control file is rewritten, whole and valid,
 * as version 2:
 *   - eng_open (writable or read-only) and eng_probe_dir return
 *     ENG_NOTSUP, not ENG_CORRUPTION;
 *   - the open delivers one report, layer control, file control, that
 *     names both versions (expected 3, found 2, and the words
 *     "format version 2" and "this engine's 3");
 *   - nothing is written: the control file and the data file are as they
 *     were, and no file is created or removed;
 *   - a version no engine wrote (9) is still damage: ENG_CORRUPTION.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <xxhash.h>

#include "engine.h"
#include "format.h"
#include "testutil.h"

TestSuite(old_format, .fini = tu_cleanup);

static const char *make_db(void) {
    const char *dir = tu_tmpdir_db();
    eng_options o;
    eng_options_init(&o);
    o.create_if_missing = 1;
    eng_db *db;
    cr_assert_eq(eng_open(dir, &o, &db), ENG_OK);
    for (uint64_t i = 0; i < 200; i++) {
        char k[16];
        size_t kl = tu_key(k, i);
        cr_assert_eq(eng_put(db, k, kl, k, kl, NULL), ENG_OK);
    }
    cr_assert_eq(eng_close(db), ENG_OK);
    return dir;
}

/* Rewrite DIR's control file as version V, its checksum made right. */
static void set_version(const char *dir, uint32_t v, uint8_t *out) {
    char path[512];
    tu_path(path, sizeof path, dir, CONTROL_NAME);
    FILE *f = fopen(path, "r+b");
    cr_assert(f);
    uint8_t b[CONTROL_SIZE];
    cr_assert_eq(fread(b, 1, sizeof b, f), sizeof b);
    fmt_put32(b + CT_VERSION_OFF, v);
    fmt_put64(b + CT_SUM_OFF, XXH3_64bits(b, CT_SUM_OFF));
    cr_assert_eq(fseek(f, 0, SEEK_SET), 0);
    cr_assert_eq(fwrite(b, 1, sizeof b, f), sizeof b);
    cr_assert_eq(fclose(f), 0);
    memcpy(out, b, sizeof b);
}

/* Names of DIR's entries and of its wal/, with sizes, as one string. */
static void listing(const char *dir, char *buf, size_t cap) {
    size_t off = 0;
    buf[0] = 0;
    for (int sub = 0; sub < 2; sub++) {
        char d[512];
        if (sub)
            tu_path(d, sizeof d, dir, WAL_DIR);
        else
            snprintf(d, sizeof d, "%s", dir);
        DIR *h = opendir(d);
        cr_assert(h);
        struct dirent *e;
        while ((e = readdir(h)) && off + 100 < cap) {
            char p[1024];
            struct stat st;
            snprintf(p, sizeof p, "%s/%s", d, e->d_name);
            if (stat(p, &st) == 0 && S_ISREG(st.st_mode))
                off += (size_t)snprintf(buf + off, cap - off, "%s/%s:%lld ", sub ? "wal" : "", e->d_name,
                                        (long long)st.st_size);
        }
        closedir(h);
    }
}

static int open_with(const char *dir, int read_only, tu_reports *reps) {
    eng_options o;
    eng_options_init(&o);
    o.read_only = read_only;
    o.on_corruption = tu_collect;
    o.on_corruption_ctx = reps;
    eng_db *db = NULL;
    int rc = eng_open(dir, &o, &db);
    if (rc == ENG_OK) eng_close(db);
    return rc;
}

Test(old_format, a_version_2_database_is_refused_as_not_supported_and_left_as_it_was) {
    const char *dir = make_db();
    uint8_t ctl[CONTROL_SIZE], after[CONTROL_SIZE];
    set_version(dir, 2, ctl);
    char before_list[4096], after_list[4096], reports[2048];
    listing(dir, before_list, sizeof before_list);
    static tu_reports reps;
    for (int ro = 0; ro < 2; ro++) {
        tu_reports_init(&reps);
        int rc = open_with(dir, ro, &reps);
        cr_assert_eq(rc, ENG_NOTSUP, "%s open: %s", ro ? "read-only" : "writable", eng_strerror(rc));
        cr_assert_eq(reps.total, 1, "%s", tu_reports_str(&reps, reports, sizeof reports));
        const eng_corruption *r = &reps.r[0];
        cr_assert_eq(r->layer, ENG_LAYER_CONTROL);
        cr_assert_str_eq(r->file, CONTROL_NAME);
        cr_assert_eq(r->expected, CT_VERSION);
        cr_assert_eq(r->found, 2);
        cr_assert(strstr(r->detail, "format version 2") && strstr(r->detail, "this engine's 3"), "detail: %s",
                  r->detail);
    }
    cr_assert_eq(eng_probe_dir(dir, NULL, NULL), ENG_NOTSUP);
    tu_path(reports, sizeof reports, dir, CONTROL_NAME);
    FILE *f = fopen(reports, "rb");
    cr_assert(f);
    cr_assert_eq(fread(after, 1, sizeof after, f), sizeof after);
    fclose(f);
    cr_assert_eq(memcmp(ctl, after, sizeof ctl), 0, "the control file was changed");
    listing(dir, after_list, sizeof after_list);
    cr_assert_str_eq(after_list, before_list);
}

Test(old_format, a_version_no_engine_wrote_is_damage) {
    const char *dir = make_db();
    uint8_t ctl[CONTROL_SIZE];
    set_version(dir, 9, ctl);
    static tu_reports reps;
    tu_reports_init(&reps);
    cr_assert_eq(open_with(dir, 0, &reps), ENG_CORRUPTION);
    cr_assert(tu_reports_has(&reps, ENG_LAYER_CONTROL, CONTROL_NAME, -1));
}
