/*
 * run_dir.c: the files of the run directory (stress_state, reports,
 * observations) and what a crashed predecessor left in them.
 * Internal to the stress driver (stress_int.h).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oracle/report_line.h"
#include "stress_int.h"

/* ---- files of the run directory ---- */

/* Append one whole line (oracle/report_line.h) to FD (-1: none). */
static int append_line(int fd, const char *line, int n) {
    if (fd < 0) return 0;
    if (n < 0) return -1;
    return write(fd, line, (size_t)n) == n ? 0 : -1;
}

void st_path_in(char *out, size_t cap, const char *dir, const char *name) { snprintf(out, cap, "%s/%s", dir, name); }

/* stress_state: "epoch N\nsettled L\nclean C\n" (whole file rewritten). */
int st_read_state(const char *run_dir, uint64_t *epoch, size_t *settled, int *clean) {
    char p[4200];
    st_path_in(p, sizeof p, run_dir, "stress_state");
    FILE *f = fopen(p, "r");
    if (!f) return -1;
    unsigned long long e = 0, s = 0;
    int c = 1;
    int n = fscanf(f, "epoch %llu\nsettled %llu\nclean %d", &e, &s, &c);
    fclose(f);
    if (n != 3) return -1;
    *epoch = e, *settled = (size_t)s, *clean = c;
    return 0;
}

int st_write_state(const char *run_dir, uint64_t epoch, size_t settled, int clean) {
    char p[4200], tmp[4300];
    st_path_in(p, sizeof p, run_dir, "stress_state");
    snprintf(tmp, sizeof tmp, "%s.tmp", p);
    FILE *f = fopen(tmp, "w");
    if (!f) return -1;
    fprintf(f, "epoch %llu\nsettled %llu\nclean %d\n", (unsigned long long)epoch, (unsigned long long)settled, clean);
    if (fflush(f) || fsync(fileno(f))) {
        fclose(f);
        return -1;
    }
    fclose(f);
    return rename(tmp, p);
}

/* progress: "ops N\n", this process's workload ops so far (rewritten
 * every 20 ms by the watchdog, right before a kill point's SIGKILL and at
 * the workload's end): what a killed process did, for crashtest.py
 * shrink's measure of a run. */
void st_write_progress(const char *run_dir, uint64_t ops) {
    char p[4200], line[64];
    st_path_in(p, sizeof p, run_dir, "progress");
    int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return;
    int n = snprintf(line, sizeof line, "ops %llu\n", (unsigned long long)ops);
    if (pwrite(fd, line, (size_t)n, 0) != n || ftruncate(fd, n)) {}
    close(fd);
}

static void count_line(void *ctx, const char *line) {
    (void)line;
    (*(size_t *)ctx)++;
}

size_t st_ledger_lines(const char *run_dir) {
    size_t n = 0;
    flt_ledger_read(run_dir, count_line, &n);
    return n;
}

/* ---- observations and reports ---- */

uint64_t st_injections_so_far(flt_ctx *flt) {
    if (!flt) return 0;
    flt_counts c;
    flt_get_counts(flt, &c);
    uint64_t n = 0;
    for (int i = 0; i < FLT_CLASS_COUNT; i++) n += c.injected[i];
    return n;
}

void st_observe(st_driver *d, int kind, int thread, uint64_t op, int status, uint64_t key, int after_crash) {
    vd_observation o = {.kind = kind,
                        .thread = thread,
                        .op = (int64_t)op,
                        .status = status,
                        .key = key,
                        .inj_mark = st_injections_so_far(d->flt),
                        .after_crash = after_crash};
    pthread_mutex_lock(&d->mu);
    if (d->nobs == d->capobs) {
        size_t nc = d->capobs ? 2 * d->capobs : 256;
        void *p = realloc(d->obs, nc * sizeof *d->obs);
        if (p) d->obs = p, d->capobs = nc;
    }
    if (d->nobs < d->capobs) d->obs[d->nobs++] = o;
    char line[ORC_LINE_MAX];
    append_line(d->obs_fd, line, orc_obs_line_format(line, sizeof line, &o));
    pthread_mutex_unlock(&d->mu);
}

void st_on_corruption(void *ctx, const st_corruption *r) {
    st_driver *d = ctx;
    vd_report v = {
        .block = r->block, .offset = r->offset, .entry = r->entry, .after_crash = atomic_load(&d->recovering)};
    snprintf(v.layer, sizeof v.layer, "%s", r->layer ? r->layer : "");
    snprintf(v.file, sizeof v.file, "%s", r->file ? r->file : "");
    snprintf(v.detail, sizeof v.detail, "%s", r->detail ? r->detail : "");
    atomic_fetch_add(&d->detections, 1);
    pthread_mutex_lock(&d->mu);
    if (d->nreports == d->capreports) {
        size_t nc = d->capreports ? 2 * d->capreports : 256;
        void *p = realloc(d->reports, nc * sizeof *d->reports);
        if (p) d->reports = p, d->capreports = nc;
    }
    if (d->nreports < d->capreports) d->reports[d->nreports++] = v;
    char line[ORC_LINE_MAX];
    append_line(d->reports_fd, line, orc_report_line_format(line, sizeof line, &v));
    pthread_mutex_unlock(&d->mu);
}

/* Earlier processes' reports and observations (a crashed run's) come
 * back as carried input for the verdict. */
int st_load_carried(const char *run_dir, vd_ctx *v) {
    int died = 0; /* the earlier process recorded its own crash or hang */
    char p[4200];
    char *line = NULL;
    size_t cap = 0;
    for (int which = 0; which < 2; which++) {
        st_path_in(p, sizeof p, run_dir, which ? ORC_OBSERVATIONS_FILE : ORC_REPORTS_FILE);
        FILE *f = fopen(p, "r");
        if (!f) continue;
        while (getline(&line, &cap, f) >= 0) {
            if (which == 0) {
                vd_report r;
                if (orc_report_line_parse(line, &r)) continue; /* not a line we wrote whole */
                vd_add_report(v, &r);
            } else {
                vd_observation o;
                if (orc_obs_line_parse(line, &o)) continue;
                o.key = 0; /* a carried observation's key has never been judged */
                o.carried = 1;
                if (o.kind == VD_OBS_CRASH || o.kind == VD_OBS_HANG) died = 1;
                vd_add_observation(v, &o);
            }
        }
        fclose(f);
    }
    free(line);
    return died;
}
