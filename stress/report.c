/*
 * report.c: the verdict (judge), the report, the watchdog.
 * Internal to the stress driver (stress_int.h).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/json.h"
#include "oracle/report_line.h"
#include "stress_int.h"

const char *const st_op_names[OP_TYPES] = {"get",    "put",    "delete",   "batch",  "scan",    "checkpoint",
                                           "verify", "reopen", "snapshot", "vacuum", "restart", "aborted"};

/* ---- report ---- */

/* Note in R the ledger's `region` of the injection at index K of the
 * judge (from its ledger LINE; "" none). */
static void note_region(st_regions *r, size_t k, const char *line) {
    if (k >= r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 256;
        while (cap <= k) cap *= 2;
        char(*n)[24] = realloc(r->name, cap * sizeof *n);
        if (!n) return;
        r->name = n, r->cap = cap;
    }
    while (r->n <= k) r->name[r->n++][0] = 0;
    const char *p = strstr(line, "\"region\":\"");
    if (!p) return;
    p += 10;
    size_t n = 0;
    while (p[n] && p[n] != '"' && n + 1 < sizeof r->name[k]) n++;
    memcpy(r->name[k], p, n);
    r->name[k][n] = 0;
}

/* "regions": {class: {region: {"injected": n, OUTCOME: n ...}}}: each
 * injection that names a region, counted once as injected and once under
 * its outcome (the class table's keys), so a region never hit, or one
 * whose damage is never detected, shows in crashtest's table. */
static void write_regions(FILE *f, const st_regions *r, vd_ctx *v) {
    fprintf(f, "  \"regions\": {");
    size_t n = v ? vd_injection_count(v) : 0;
    if (n > r->n) n = r->n;
    int first_cls = 1;
    for (int c = 0; c < VD_CLASS_COUNT; c++) {
        int first_reg = 1;
        for (size_t k = 0; k < n; k++) {
            if (vd_injection_at(v, k)->cls != c || !r->name[k][0]) continue;
            int seen = 0; /* one entry per region, written at its first injection */
            for (size_t q = 0; q < k && !seen; q++)
                seen = vd_injection_at(v, q)->cls == c && !strcmp(r->name[q], r->name[k]);
            if (seen) continue;
            uint64_t injected = 0, by[VD_OUTCOME_COUNT] = {0};
            for (size_t q = k; q < n; q++) {
                const vd_injection *o = vd_injection_at(v, q);
                if (o->cls != c || strcmp(r->name[q], r->name[k])) continue;
                injected++;
                if (o->outcome > VD_PENDING && o->outcome < VD_OUTCOME_COUNT) by[o->outcome]++;
            }
            if (first_reg) {
                fprintf(f, "%s\n    \"%s\": {", first_cls ? "" : ",", vd_class_name(c));
                first_cls = 0;
            }
            fprintf(f, "%s\"%s\": {\"injected\": %llu", first_reg ? "" : ", ", r->name[k],
                    (unsigned long long)injected);
            for (int o = VD_PENDING + 1; o < VD_OUTCOME_COUNT; o++)
                if (by[o]) fprintf(f, ", \"%s\": %llu", vd_outcome_name(o), (unsigned long long)by[o]);
            fputc('}', f);
            first_reg = 0;
        }
        if (!first_reg) fputc('}', f);
    }
    fprintf(f, "%s},\n", first_cls ? "" : "\n  ");
}

static void write_counts(FILE *f, const vd_counts *c) {
    int first = 1;
    fputc('{', f);
#define VD_OUT(n) fprintf(f, "%s\"" #n "\": %llu", first ? "" : ", ", (unsigned long long)c->n), first = 0;
    VD_COUNTERS(VD_OUT)
#undef VD_OUT
    fputc('}', f);
}

static void write_report_to(FILE *f, st_driver *d, const vd_result *res, vd_ctx *v, uint64_t trace_hash, int hang) {
    fprintf(f, "{\n  \"seed\": %llu,\n  \"engine\": \"%s\",\n  \"options\": ", (unsigned long long)d->o.seed,
            d->E->name);
    st_options_json(&d->o, f);
    if (d->E->planted_bug && d->E->planted_bug()) {
        fprintf(f, ",\n  \"planted_bug\": ");
        json_fput_str(f, d->E->planted_bug());
    }
    fprintf(f, ",\n  \"mode\": \"%s\",\n", res->measuring ? "measuring" : "judging");
    if (res->measuring) {
        fprintf(f, "  \"measuring_why\": ");
        json_fput_str(f, res->measuring_why);
        fprintf(f, ",\n");
    }
    fprintf(f, "  \"ops\": {");
    for (int i = 0; i < OP_TYPES; i++)
        fprintf(f, "%s\"%s\": %llu", i ? ", " : "", st_op_names[i], (unsigned long long)atomic_load(&d->ops[i]));
    fprintf(f,
            "},\n  \"checks\": {\"verified\": %llu, \"ambiguous\": %llu, \"unverifiable\": %llu, "
            "\"batches_cut\": %llu},\n",
            (unsigned long long)atomic_load(&d->verified), (unsigned long long)atomic_load(&d->ambiguous),
            (unsigned long long)atomic_load(&d->unverifiable), (unsigned long long)atomic_load(&d->batches_cut));
    fprintf(f, "  \"classes\": {\n");
    for (int c = 0; c <= VD_CLASS_COUNT; c++) {
        fprintf(f, "    \"%s\": ", vd_class_name(c));
        write_counts(f, &res->cls[c]);
        fprintf(f, "%s\n", c < VD_CLASS_COUNT ? "," : "");
    }
    fprintf(f, "  },\n");
    write_regions(f, &d->regions, v);
    fprintf(f, "  \"totals\": ");
    write_counts(f, &res->total);
    fprintf(f, ",\n  \"injections_per_point\": {");
    if (v) {
        /* From the ledger lines judged here (libfiu points and hooks alike). */
        const char *names[128];
        uint64_t counts[128];
        size_t np = 0;
        for (size_t i = 0; i < vd_injection_count(v); i++) {
            const vd_injection *j = vd_injection_at(v, i);
            const char *pt = j->point[0] ? j->point : "?";
            size_t k = 0;
            while (k < np && strcmp(names[k], pt)) k++;
            if (k == np && np < 128) names[np] = pt, counts[np++] = 0;
            if (k < np) counts[k]++;
        }
        for (size_t k = 0; k < np; k++) {
            fprintf(f, "%s", k ? ", " : "");
            json_fput_str(f, names[k]);
            fprintf(f, ": %llu", (unsigned long long)counts[k]);
        }
        if (d->sweep.trials) fprintf(f, "%s\"sweep/wal\": %llu", np ? ", " : "", (unsigned long long)d->sweep.trials);
    }
    /* Per engine point this process armed: times reached (checked while
     * armed) and fired (the fault library's counts; a point not enabled
     * is never reached, a killed process writes no report). */
    flt_counts fc;
    flt_get_counts(d->flt, &fc);
    /* Pauses made to widen race windows (faults/delay.c): no class's. */
    fprintf(f, "},\n  \"delays\": %llu", (unsigned long long)fc.delays);
    if (d->o.wal_sweep) {
        fprintf(f,
                ",\n  \"wal_sweep\": {\"trials\": %llu, \"zeroed\": %llu, \"detected\": %llu, \"swallowed\": "
                "%llu, \"skipped\": ",
                (unsigned long long)d->sweep.trials, (unsigned long long)d->sweep.zeroed,
                (unsigned long long)d->sweep.detected, (unsigned long long)d->sweep.swallowed);
        json_fput_str(f, d->sweep.skipped);
        fputc('}', f);
    }
    fprintf(f, ",\n  \"fault_points_reached\": {");
    {
        int first = 1;
        for (size_t i = 0; i < st_point_count(d); i++) {
            int k = flt_point_index(d->flt, st_point_name(d, i));
            if (k < 0 || k >= 64 || (!fc.point_checks[k] && !fc.point_hits[k])) continue;
            fprintf(f, "%s", first ? "" : ", ");
            json_fput_str(f, st_point_name(d, i));
            fprintf(f, ": {\"reached\": %llu, \"fired\": %llu}", (unsigned long long)fc.point_checks[k],
                    (unsigned long long)fc.point_hits[k]);
            first = 0;
        }
    }
    char esc[VD_ESCAPE_JSON_MAX] = "{}";
    if (v) vd_escape_rates_json(v, esc, sizeof esc);
    fprintf(f, "},\n  \"escape_rate_per_protection_width\": %s,\n", esc);
    fprintf(f, "  \"reports\": %llu,\n  \"false_alarms\": %llu,\n", (unsigned long long)res->reports,
            (unsigned long long)res->false_alarms);
    fprintf(f, "  \"post_crash_check\": \"%s\",\n",
            d->crash_check == VD_CHECK_NONE      ? "none"
            : d->crash_check == VD_CHECK_PASSED  ? "passed"
            : d->crash_check == VD_CHECK_NO_OPEN ? "no_open"
                                                 : "failed");
    fprintf(f, "  \"unrecoverable\": %s,\n", atomic_load(&d->unrecoverable) || res->unrecoverable ? "true" : "false");
    fprintf(f, "  \"unrecoverable_by_design\": ");
    if (res->by_design[0])
        json_fput_str(f, res->by_design);
    else
        fprintf(f, "null");
    fprintf(f, ",\n  \"unrecoverable_why\": ");
    if (res->unrecoverable_why[0])
        json_fput_str(f, res->unrecoverable_why);
    else
        fprintf(f, "null");
    fprintf(f, ",\n");
    fprintf(f, "  \"trace_hash\": \"%016llx\",\n", (unsigned long long)trace_hash);
    fprintf(f, "  \"elapsed_s\": %.3f,\n", st_now() - d->t0);
    uint64_t wops = 0;
    for (uint64_t i = 0; i < d->o.threads && d->w; i++) wops += atomic_load(&d->w[i].done);
    fprintf(f, "  \"workload_s\": %.3f,\n  \"workload_ops_per_s\": %.0f,\n", d->work_s,
            d->work_s > 0 ? (double)wops / d->work_s : 0.0);
    fprintf(f, "  \"repro\": ");
    json_fput_str(f, d->repro);
    fprintf(f, ",\n  \"verdict\": \"%s\"\n}\n", hang ? "fail" : res->pass ? "pass" : "fail");
}

void st_write_report(st_driver *d, const vd_result *res, vd_ctx *v, uint64_t trace_hash, int hang) {
    if (!d->o.report) return;
    char tmp[4200];
    snprintf(tmp, sizeof tmp, "%s.tmp", d->o.report);
    FILE *f = fopen(tmp, "w");
    if (!f) {
        fprintf(stderr, "stress: cannot write %s: %s\n", tmp, strerror(errno));
        return;
    }
    write_report_to(f, d, res, v, trace_hash, hang);
    if (fclose(f) == 0) rename(tmp, d->o.report);
}

typedef struct ledger_feed {
    vd_ctx *v;
    st_regions *regions;
    size_t i, from, own_from;
    XXH3_state_t *h;
} ledger_feed;

static void feed_line(void *ctx, const char *line) {
    ledger_feed *lf = ctx;
    size_t i = lf->i++;
    if (i < lf->from) return;
    if (vd_add_ledger_line(lf->v, line, i < lf->own_from) == 0)
        note_region(lf->regions, vd_injection_count(lf->v) - 1, line);
    if (i >= lf->own_from && lf->h) XXH3_64bits_update(lf->h, line, strlen(line));
}

/* V4b for page flips and zeroed blocks carrying their hashes (the flips
 * of any process, and the zeroed block of a crash): a damaged block
 * that still hashes to what the fault made of it is still there, and the
 * final verify just read it from disk.  Not when it also hashes to what
 * some fault found there (a second flip of the same bit undid the first). */
int st_flip_undone(vd_ctx *v, size_t k) {
    const vd_injection *j = vd_injection_at(v, k);
    for (size_t q = 0; q < vd_injection_count(v); q++) {
        const vd_injection *o = vd_injection_at(v, q);
        if (q != k && o->page_post && o->block == j->block && o->page_pre == j->page_post && !strcmp(o->file, j->file))
            return 1;
    }
    return 0;
}

static void mark_flipped_pages_present(vd_ctx *v, const char *db, uint32_t ps) {
    char p[4200];
    st_path_in(p, sizeof p, db, "data");
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    uint8_t *buf = ps ? malloc(ps) : NULL;
    for (size_t k = 0; fd >= 0 && buf && k < vd_injection_count(v); k++) {
        const vd_injection *j = vd_injection_at(v, k);
        if ((j->cls != VD_BITFLIP_PAGE && j->cls != VD_ZERO_PAGE) || !j->page_post || j->block < 0 ||
            strcmp(j->file, "data"))
            continue;
        if (pread(fd, buf, ps, (off_t)((uint64_t)j->block * ps)) != (ssize_t)ps) continue;
        if (XXH64(buf, ps, 0) != j->page_post) continue;
        if (!st_flip_undone(v, k)) vd_mark_present(v, k);
    }
    free(buf);
    if (fd >= 0) close(fd);
}

/* XXH64 of the whole file at PATH into *H, if it is a regular file of at
 * most ST_SMALL_FILE_MAX bytes: 1, else 0. */
static int small_file_hash(const char *path, uint64_t *h) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)ST_SMALL_FILE_MAX) return 0;
    uint8_t *buf = malloc(ST_SMALL_FILE_MAX);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 && buf ? read(fd, buf, ST_SMALL_FILE_MAX) : -1;
    if (fd >= 0) close(fd);
    if (n >= 0) *h = XXH64(buf, (size_t)n, 0);
    free(buf);
    return n >= 0;
}

void st_note_small_files(st_driver *d) {
    d->small_noted = 1;
    DIR *dir = opendir(d->o.db);
    if (!dir) return;
    struct dirent *de;
    char p[4200];
    while ((de = readdir(dir)) != NULL && d->nsmall < ST_SMALL_FILES) {
        if (de->d_name[0] == '.' || strlen(de->d_name) >= sizeof d->small[0].name) continue;
        st_path_in(p, sizeof p, d->o.db, de->d_name);
        if (!small_file_hash(p, &d->small[d->nsmall].hash)) continue;
        snprintf(d->small[d->nsmall].name, sizeof d->small[0].name, "%s", de->d_name);
        d->nsmall++;
    }
    closedir(dir);
}

/* V4b for flips of a whole small file (a page flip whose file is not the
 * data file: the control file at a crash, hashed whole before and after):
 * still there when the file hashed to what the flip made of it at this
 * process's first open (which read it) or, after a clean close, now (the
 * final verify read it); not when that is also what a later flip found
 * there (a second flip of the same bit undid it). */
static void mark_flipped_files_present(vd_ctx *v, st_driver *d) {
    char p[4200];
    for (size_t k = 0; k < vd_injection_count(v); k++) {
        const vd_injection *j = vd_injection_at(v, k);
        if (j->cls != VD_BITFLIP_PAGE || !j->page_post || !j->file[0] || !strcmp(j->file, "data") ||
            !strncmp(j->file, "wal", 3))
            continue;
        int there = 0;
        for (int i = 0; i < d->nsmall && !there; i++)
            there = !strcmp(d->small[i].name, j->file) && d->small[i].hash == j->page_post;
        uint64_t now = 0;
        st_path_in(p, sizeof p, d->o.db, j->file);
        if (!there && d->final_verified && small_file_hash(p, &now)) there = now == j->page_post;
        if (there && !st_flip_undone(v, k)) vd_mark_present(v, k);
    }
}

static void ignore_report(void *ctx, const st_corruption *r) {
    (void)ctx;
    (void)r;
}

/* V4b: the high-water mark of the closed files the final verify read (the
 * control file's, through the engine's page reader), or UINT64_MAX when
 * the engine has no such reader or its control file does not check. */
static uint64_t final_hwm(st_driver *d) {
    uint64_t hwm = UINT64_MAX;
    if (!d->E->check_block) return UINT64_MAX;
    int st = d->E->check_block(d->o.db, 0, ignore_report, NULL, &hwm);
    return st == ST_OK || st == ST_CORRUPTION ? hwm : UINT64_MAX;
}

/* Feed the judge everything this run knows: the ledger lines not yet
 * judged (carried ones from a crashed run first), the reports and the
 * observations; settle.  *TRACE_HASH: the per-thread op hashes and this
 * process's ledger lines. */
vd_ctx *st_judge(st_driver *d, vd_result *res, uint64_t *trace_hash) {
    vd_ctx *v = vd_new(&d->vc);
    XXH3_state_t *h = XXH3_createState();
    XXH3_64bits_reset(h);
    for (uint64_t i = 0; i < d->o.threads && d->w; i++) {
        uint64_t dg = XXH3_64bits_digest(d->w[i].hash);
        XXH3_64bits_update(h, &dg, sizeof dg);
    }
    ledger_feed lf = {v, &d->regions, 0, d->ledger_settled, d->ledger_start, h};
    d->regions.n = 0;
    flt_ledger_read(d->run_dir, feed_line, &lf);
    *trace_hash = XXH3_64bits_digest(h);
    XXH3_freeState(h);
    int carried_crash = d->crashed_before ? st_load_carried(d->run_dir, v) : 0;
    for (size_t i = 0; i < vd_injection_count(v); i++) {
        const vd_injection *j = vd_injection_at(v, i);
        if (j->carried && (j->cls == VD_KILL || j->cls == VD_POWER_LOSS)) carried_crash = 1;
    }
    if (d->crashed_before && !carried_crash) vd_note_external_kill(v);
    pthread_mutex_lock(&d->mu);
    for (size_t i = 0; i < d->nreports; i++) vd_add_report(v, &d->reports[i]);
    for (size_t i = 0; i < d->nobs; i++) vd_add_observation(v, &d->obs[i]);
    pthread_mutex_unlock(&d->mu);
    vd_set_crash_check(v, d->crash_check);
    if (d->reopen_failed) vd_note_reopen_failed(v);
    if (d->final_verified) vd_note_final_hwm(v, final_hwm(d));
    for (size_t i = 0; i < d->ndamage; i++) vd_note_damage_present(v, (int64_t)d->damage[i]);
    if (d->final_verified) mark_flipped_pages_present(v, d->o.db, d->eo.page_size);
    mark_flipped_files_present(v, d);
    vd_settle(v, res);
    return v;
}

/* ---- watchdog and status line ---- */

uint64_t st_total_done(const st_driver *d) {
    uint64_t n = 0;
    for (uint64_t i = 0; i < d->o.threads; i++) n += atomic_load(&d->w[i].done);
    return n;
}

void *st_watchdog_main(void *arg) {
    st_driver *d = arg;
    int tty = isatty(2);
    uint64_t last = 0, last_change_at = 0, tick = 0, prev = 0, sub = 0;
    uint64_t written = 0; /* the last count in RUN_DIR/progress */
    while (!atomic_load(&d->watch_stop)) {
        /* The op count every 20 ms (one pwrite: cheap), so a process a
         * timer kills 58 ms in still leaves what it did (at 200 ms it
         * left 0, and shrink measured no run); the rest every 200 ms. */
        usleep(20000);
        uint64_t n = st_total_done(d);
        if (!d->o.verification_only && n != written) st_write_progress(d->run_dir, written = n);
        if (++sub % 10) continue;
        if (++tick % 5) continue;
        uint64_t secs = tick / 5;
        if (n != last) last = n, last_change_at = secs;
        if (tty) {
            uint64_t inj = st_injections_so_far(d->flt);
            fprintf(stderr, "\r[stress] %6.1fs  ops %llu (%llu/s)  faults %llu  detections %llu  failures %llu   ",
                    st_now() - d->t0, (unsigned long long)n, (unsigned long long)(n - prev), (unsigned long long)inj,
                    (unsigned long long)atomic_load(&d->detections), (unsigned long long)atomic_load(&d->failures));
            prev = n;
        }
        if (secs - last_change_at >= d->o.hang_seconds && !atomic_load(&d->watch_stop)) {
            fprintf(stderr, "\nstress: FAILURE hang: no operation finished for %llu s\n    repro: %s\n",
                    (unsigned long long)d->o.hang_seconds, d->repro);
            st_observe(d, VD_OBS_HANG, -1, 0, 0, 0, 0);
            vd_result res;
            uint64_t th;
            vd_ctx *v = st_judge(d, &res, &th);
            st_write_report(d, &res, v, th, 1);
            _exit(EXIT_FAIL);
        }
    }
    if (tty) fputc('\n', stderr);
    return NULL;
}
