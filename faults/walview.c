/*
 * walview.c -- a stretch of one WAL segment read and labeled (walview.h).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "walview.h"

int flt_is_segment_name(const char *s) {
    size_t n = 0;
    for (; s[n]; n++)
        if (!((s[n] >= '0' && s[n] <= '9') || (s[n] >= 'a' && s[n] <= 'f'))) return 0;
    return n == 16;
}

void flt_wal_view_free(flt_wal_view *v) {
    free(v->buf);
    free(v->lab);
    free(v->recs);
    v->buf = v->lab = NULL;
    v->recs = NULL;
}

int flt_wal_view_load(const char *db_dir, const char *rel, uint64_t off, uint64_t len, flt_wal_view *v) {
    memset(v, 0, sizeof *v);
    if (strncmp(rel, "wal/", 4) != 0 || !flt_is_segment_name(rel + 4)) return 0;
    snprintf(v->rel, sizeof v->rel, "%s", rel);
    snprintf(v->path, sizeof v->path, "%s/%s", db_dir, rel);
    struct stat st;
    if (stat(v->path, &st) != 0 || !st.st_size) return 0;
    v->size = (uint64_t)st.st_size;
    uint64_t hi = off + len + WAL_BLOCK < v->size ? off + len + WAL_BLOCK : v->size;
    uint64_t lo = off / WAL_BLOCK * WAL_BLOCK;
    lo = lo >= 2 * WAL_BLOCK ? lo - 2 * WAL_BLOCK : 0;
    if (hi <= lo) return 0;
    v->lo = lo, v->n = hi - lo;
    v->buf = malloc(v->n);
    v->lab = malloc(v->n);
    size_t cap = v->n / WAL_REC_HDR + 1;
    v->recs = malloc(cap * sizeof *v->recs);
    int fd = open(v->path, O_RDONLY | O_CLOEXEC);
    int ok = fd >= 0 && v->buf && v->lab && v->recs && pread(fd, v->buf, v->n, (off_t)lo) == (ssize_t)v->n;
    if (fd >= 0) close(fd);
    if (!ok) {
        flt_wal_view_free(v);
        return 0;
    }
    uint64_t base = strtoull(rel + 4, NULL, 16);
    v->nrec = flt_wal_label(v->buf, lo, v->n, base, v->lab, v->recs, cap);
    if (v->nrec > cap) v->nrec = cap;
    return 1;
}

uint64_t flt_wal_view_nth(const flt_wal_view *v, uint64_t a, uint64_t b, int l, uint64_t k) {
    for (uint64_t o = a; o < b; o++)
        if (v->lab[o - v->lo] == l && k-- == 0) return o;
    return a;
}

uint64_t flt_wal_view_count(const flt_wal_view *v, uint64_t a, uint64_t b, int l) {
    uint64_t n = 0;
    for (uint64_t o = a; o < b; o++) n += v->lab[o - v->lo] == l;
    return n;
}
