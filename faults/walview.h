/*
 * walview.h -- a stretch of one WAL segment read from disk and labeled by
 * the format (place.h, flt_wal_label): what inject.c's WAL flips, at a
 * tick and at the crash, draw a byte from.  Reads files; draws nothing.
 */
#ifndef FAULTS_WALVIEW_H
#define FAULTS_WALVIEW_H

#include <stddef.h>
#include <stdint.h>

#include "place.h"

/* Bytes [lo, lo + n) of the segment REL ("wal/" + 16 hex digits) under
 * the database directory, from two blocks before the bytes of interest,
 * so that their records are walked from a block where one starts, to a
 * block past them, so that a record header that begins in them and ends
 * after them is read whole: LAB labels each byte (FLT_WR_*), RECS the
 * records that start in it. */
typedef struct flt_wal_view {
    char rel[24], path[4300];
    uint64_t size, lo, n;
    uint8_t *buf, *lab;
    flt_wal_rec *recs;
    size_t nrec;
} flt_wal_view;

/* Load REL's bytes around [OFF, OFF + LEN) (clamped to the file) from
 * DB_DIR.  1 if loaded (free it), 0 if not (nothing to free). */
int flt_wal_view_load(const char *db_dir, const char *rel, uint64_t off, uint64_t len, flt_wal_view *v);
void flt_wal_view_free(flt_wal_view *v);

/* The K-th byte (0-based) labeled L in [A, B) of V: its file offset (A
 * when there are fewer). */
uint64_t flt_wal_view_nth(const flt_wal_view *v, uint64_t a, uint64_t b, int l, uint64_t k);
/* How many bytes of [A, B) are labeled L. */
uint64_t flt_wal_view_count(const flt_wal_view *v, uint64_t a, uint64_t b, int l);

/* walzero.c: the sectors of V below file offset END, newest first, at
 * most CAP, that a block of V's own on disk witnesses durable (W3b: a
 * valid header of the sector's block's generation or newer, durable mark
 * past the failing record): zeroed, each must be reported. */
size_t flt_wal_zero_candidates(const flt_wal_view *v, uint64_t end, uint64_t *out, size_t cap);

/* 1 if S is a WAL segment's file name (16 lowercase hex digits). */
int flt_is_segment_name(const char *s);

#endif
