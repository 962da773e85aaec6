/*
 * sweep.c -- the log sweep (--wal_sweep N), before the open of a run that
 * follows a crash.
 *
 * On a copy of the database (its files linked; a log segment copied
 * before it is changed), up to N bits of the log records the recovery
 * replays are flipped, one at a time (the fault library's sites: the
 * newest sectors first), and the engine's recovery, read-only and without
 * hooks (adapter check_log), must refuse each with a report on that
 * segment.  A flip it opens over is a damaged record taken for a torn
 * tail, records that were on disk cut without a word: swallowed, a
 * failure.  Each trial is judged alone, in the class bitflip_wal at the
 * point sweep/wal (docs/fault-classes.md).  The database is never
 * touched; the copy is removed.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "stress_int.h"

/* What one trial's recovery reported: whether a report matches the flip
 * (J) by the oracle's own rule of place (V1: for the log, any block the
 * failing record spans, in whichever segment it began). */
typedef struct trial {
    const vd_config *vc;
    vd_injection j;
    int n, matched;
    char first[240];
} trial;

static void note_report(void *ctx, const st_corruption *r) {
    trial *t = ctx;
    vd_report v = {.block = r->block, .offset = r->offset, .entry = r->entry};
    snprintf(v.layer, sizeof v.layer, "%s", r->layer ? r->layer : "");
    snprintf(v.file, sizeof v.file, "%s", r->file ? r->file : "");
    if (t->vc && vd_report_matches(t->vc, &v, &t->j)) t->matched = 1;
    if (t->n++ == 0)
        snprintf(t->first, sizeof t->first, "layer=%s file=%s block=%lld: %s", v.layer, v.file, (long long)r->block,
                 r->detail ? r->detail : "");
}

/* FROM's regular files into TO (made), linked where the file system
 * allows, else copied; its "wal" folder likewise.  0, or -1. */
static int link_dir(const char *from, const char *to) {
    DIR *dp = opendir(from);
    if (!dp || (mkdir(to, 0755) && errno != EEXIST)) {
        if (dp) closedir(dp);
        return -1;
    }
    int rc = 0;
    for (struct dirent *e; (e = readdir(dp));) {
        char a[4400], b[4400];
        struct stat st;
        if (e->d_name[0] == '.') continue;
        snprintf(a, sizeof a, "%s/%s", from, e->d_name);
        snprintf(b, sizeof b, "%s/%s", to, e->d_name);
        if (lstat(a, &st)) continue;
        if (S_ISDIR(st.st_mode) && !strcmp(e->d_name, "wal"))
            rc |= link_dir(a, b);
        else if (S_ISREG(st.st_mode) && link(a, b))
            rc |= flt_copy_file(a, b) ? -1 : 0;
    }
    closedir(dp);
    return rc;
}

/* PATH's own copy, no longer a link to the database's file. */
static int own_copy(const char *path) {
    char tmp[4416];
    snprintf(tmp, sizeof tmp, "%s.own", path);
    return flt_copy_file(path, tmp) || rename(tmp, path) ? -1 : 0;
}

/* Damage site S of the segment at PATH, or (UNDO) put back what SAVED
 * holds: a bit flipped (flipped back), or a sector zeroed (restored). */
static int damage(const char *path, const flt_sweep_site *s, uint8_t saved[512], int undo) {
    int fd = open(path, O_RDWR | O_CLOEXEC);
    size_t len = s->zero ? 512 : 1;
    uint8_t b[512];
    int ok = fd >= 0 && pread(fd, b, len, (off_t)s->off) == (ssize_t)len;
    if (ok && !undo) memcpy(saved, b, len);
    if (s->zero)
        memset(b, 0, len);
    else
        b[0] ^= (uint8_t)(1u << s->bit);
    ok = ok && pwrite(fd, undo && s->zero ? saved : b, len, (off_t)s->off) == (ssize_t)len;
    if (fd >= 0) close(fd);
    return ok ? 0 : -1;
}

/* One trial: site S of segment REL (its file PATH, first LSN BASE) in
 * the copy COPY; counted in D->sweep. */
static void one_trial(st_driver *d, const char *copy, const char *rel, const char *path, uint64_t base,
                      const flt_sweep_site *s, const st_log_extent *undamaged) {
    trial t = {.vc = &d->vc};
    t.j.cls = VD_BITFLIP_WAL;
    snprintf(t.j.cls_name, sizeof t.j.cls_name, "bitflip_wal");
    snprintf(t.j.phase, sizeof t.j.phase, "run");
    snprintf(t.j.point, sizeof t.j.point, "sweep/wal");
    snprintf(t.j.file, sizeof t.j.file, "%s", rel);
    t.j.block = (int64_t)s->block, t.j.offset = (int64_t)s->off;
    t.j.len = s->zero ? 512 : 1, t.j.bit = s->zero ? -1 : s->bit;
    st_log_extent ext = {0};
    uint8_t saved[512];
    if (damage(path, s, saved, 0)) return;
    st_open_options eo = d->eo;
    eo.io_hooks = NULL;
    int rc = d->E->check_log(copy, &eo, note_report, &t, &ext);
    if (damage(path, s, saved, 1)) d->sweep.broken = 1; /* the copy cannot be trusted further */
    if (rc != ST_OK && rc != ST_CORRUPTION) {
        fprintf(stderr, "stress: wal sweep: the recovery of the copy ended %s: trial not counted\n",
                st_status_name(rc));
        return;
    }
    d->sweep.trials++;
    d->sweep.zeroed += s->zero != 0;
    if (rc == ST_CORRUPTION && t.matched) {
        d->sweep.detected++;
        return;
    }
    d->sweep.swallowed++;
    char said[600];
    if (rc == ST_OK && ext.end < undamaged->end)
        snprintf(said, sizeof said,
                 "opened it, replaying the log only to LSN 0x%llx (undamaged: 0x%llx), and reported nothing: a "
                 "damaged record taken for a torn tail",
                 (unsigned long long)ext.end, (unsigned long long)undamaged->end);
    else if (rc == ST_OK)
        snprintf(said, sizeof said,
                 "opened it, replaying the whole log (to LSN 0x%llx), and reported nothing: damage its checks exist "
                 "to find passed unseen",
                 (unsigned long long)ext.end);
    else
        snprintf(said, sizeof said, "refused it without a report at the flip's place (first: %s)", t.first);
    char what[32];
    if (s->zero)
        snprintf(what, sizeof what, "its 512-byte sector zeroed");
    else
        snprintf(what, sizeof what, "bit %d", s->bit);
    fprintf(stderr,
            "stress: FAILURE swallowed: bitflip_wal injected at sweep/wal (file %s block %llu offset %llu %s, %s, "
            "LSN 0x%llx) in a copy of the crashed database: the engine's recovery %s\n    repro: %s\n",
            rel, (unsigned long long)s->block, (unsigned long long)s->off, what, s->region,
            (unsigned long long)(base + s->off), said, d->repro);
}

/* The trials in the segment whose first LSN is BASE, over its file
 * offsets [LO, HI); *LEFT: trials still to make. */
static void sweep_segment(st_driver *d, const char *copy, uint64_t base, uint64_t lo, uint64_t hi,
                          const st_log_extent *undamaged, uint64_t *left) {
    char rel[24], path[4400];
    snprintf(rel, sizeof rel, "wal/%016llx", (unsigned long long)base);
    snprintf(path, sizeof path, "%s/%s", copy, rel);
    flt_sweep_site sites[256];
    size_t cap = *left < 256 ? (size_t)*left : 256;
    size_t n = flt_wal_sweep_sites(copy, rel, lo, hi, d->o.seed ^ base, sites, cap);
    if (!n || own_copy(path)) return;
    for (size_t i = 0; i < n && !d->sweep.broken; i++) one_trial(d, copy, rel, path, base, &sites[i], undamaged);
    *left -= n;
}

void st_wal_sweep(st_driver *d) {
    if (!d->o.wal_sweep || !d->crashed_before || !d->E->check_log) return;
    char copy[4200];
    snprintf(copy, sizeof copy, "%s/wal-sweep", d->run_dir);
    st_rm_rf(copy);
    st_open_options eo = d->eo;
    eo.io_hooks = NULL;
    trial base = {0};
    st_log_extent ext = {0};
    int rc = link_dir(d->o.db, copy) ? ST_IOERR : d->E->check_log(copy, &eo, note_report, &base, &ext);
    if (rc != ST_OK)
        snprintf(d->sweep.skipped, sizeof d->sweep.skipped, "the undamaged copy does not open (%s)",
                 st_status_name(rc));
    else if (!ext.segment_size || ext.end <= ext.redo)
        snprintf(d->sweep.skipped, sizeof d->sweep.skipped, "no log to replay");
    uint64_t left = d->o.wal_sweep, size = ext.segment_size;
    for (uint64_t seg = size ? (ext.end - 1) & ~(size - 1) : 0; rc == ST_OK && size && ext.end > ext.redo && left;
         seg -= size) {
        uint64_t lo = ext.redo > seg ? ext.redo - seg : 0, hi = ext.end < seg + size ? ext.end - seg : size;
        sweep_segment(d, copy, seg, lo, hi, &ext, &left);
        if (seg <= ext.redo || d->sweep.broken) break;
    }
    if (d->sweep.skipped[0]) fprintf(stderr, "stress: wal sweep: skipped: %s\n", d->sweep.skipped);
    st_rm_rf(copy);
}

void st_sweep_judged(const st_driver *d, vd_result *res) {
    vd_counts *c[] = {&res->cls[VD_BITFLIP_WAL], &res->total};
    for (size_t i = 0; i < 2; i++) {
        c[i]->injected += d->sweep.trials;
        c[i]->detected += d->sweep.detected;
        c[i]->swallowed += d->sweep.swallowed;
    }
    if (d->sweep.swallowed) res->pass = 0;
}
