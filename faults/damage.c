/*
 * damage.c -- damage still on disk: the table behind flt_damage_present
 * (faults.h, rules D1-D9) and D7's watch of cache flips in header bytes
 * until their frame's next write-back.  The injectors (inject.c's hooks
 * and ticks, cacheflip.c's cache flips) say what they put where; this
 * file decides, from the writes and fsyncs that follow, whether it is
 * still there.  Every doubt resolves toward "gone": present must be a
 * fact, for the oracle fails a run on it (V4b, V4c).  All under dmg_mu.
 */
#include <stdlib.h>
#include <string.h>

#include "damage_int.h"

void flt_damage_add(flt_ctx *f, uint64_t seq, uint64_t off, uint64_t len, uint8_t mask, const void *creator,
                    int zeroed) {
    pthread_mutex_lock(&f->dmg_mu);
    if (mask && len == 1 && !creator) {
        /* D3: the same flip again restores the byte.  Only a flip of the
         * file's bytes in place (a tick) can undo one; a write's flip
         * comes with a whole new page, which overwrites any older flip
         * (D2 at its after()) rather than undoing it.  The flip undone
         * may be a tick's or a completed write's in-flight flip (its
         * mask is kept for this). */
        for (size_t i = 0; i < f->ndmg; i++) {
            flt_damage *d = &f->dmg[i];
            if (d->state == FLT_DMG_PRESENT && !d->creator && d->len == 1 && d->off == off && d->mask == mask) {
                d->state = FLT_DMG_UNKNOWN;
                pthread_mutex_unlock(&f->dmg_mu);
                return;
            }
        }
        /* D8: a zeroed page with a bit set is no zero page any more. */
        for (size_t i = 0; i < f->ndmg; i++) {
            flt_damage *d = &f->dmg[i];
            if (d->state == FLT_DMG_PRESENT && !d->creator && d->zeroed && off - d->off < d->len)
                d->state = FLT_DMG_UNKNOWN;
        }
    }
    if (zeroed && !creator) {
        /* D9: a block zeroed in place holds nothing of what was in it. */
        for (size_t i = 0; i < f->ndmg; i++) {
            flt_damage *d = &f->dmg[i];
            if (d->state == FLT_DMG_PRESENT && !d->creator && d->len && d->off < off + len && off < d->off + d->len)
                d->state = FLT_DMG_GONE;
        }
    }
    if (f->ndmg == f->capdmg) {
        /* Drop what can never be present again (gone or unknown, its write
         * done) before growing: every data write scans the table, so it
         * holds live damage only, not a process's whole history. */
        size_t w = 0;
        for (size_t i = 0; i < f->ndmg; i++)
            if (f->dmg[i].state == FLT_DMG_PRESENT || f->dmg[i].creator) f->dmg[w++] = f->dmg[i];
        f->ndmg = w;
    }
    if (f->ndmg == f->capdmg) {
        size_t cap = f->capdmg ? 2 * f->capdmg : 64;
        flt_damage *n = realloc(f->dmg, cap * sizeof *n);
        if (!n) { /* without an entry the damage only ever counts as masked */
            pthread_mutex_unlock(&f->dmg_mu);
            return;
        }
        f->dmg = n, f->capdmg = cap;
    }
    f->dmg[f->ndmg++] = (flt_damage){seq, off, len, mask, creator, FLT_DMG_PRESENT, zeroed};
    pthread_mutex_unlock(&f->dmg_mu);
}

/* after() of a write to the data file: D1 for the damage OP itself puts
 * on disk, D2 for what it overwrites.  A failed write may have put any
 * part of what it issued on disk: damage there is then unknown. */
void flt_damage_written(flt_ctx *f, const eng_io_op *op) {
    pthread_mutex_lock(&f->dmg_mu);
    int failed = op->result < 0;
    uint64_t lo = op->offset, hi = op->offset + (failed ? op->issued : (uint64_t)op->result);
    for (size_t i = 0; i < f->ndmg; i++) {
        flt_damage *d = &f->dmg[i];
        if (d->creator == op) {
            d->creator = NULL;
            if (failed) d->state = FLT_DMG_UNKNOWN;
        } else if (d->state == FLT_DMG_PRESENT && lo < hi && d->off < hi && lo < d->off + d->len) {
            d->state = failed ? FLT_DMG_UNKNOWN : FLT_DMG_GONE;
        }
    }
    pthread_mutex_unlock(&f->dmg_mu);
}

/* D4: old contents of the data file came back. */
void flt_damage_unknown_all(flt_ctx *f) {
    pthread_mutex_lock(&f->dmg_mu);
    for (size_t i = 0; i < f->ndmg; i++) /* read flips (D5, no range) were taken in: they stay */
        if (f->dmg[i].state == FLT_DMG_PRESENT && f->dmg[i].len) f->dmg[i].state = FLT_DMG_UNKNOWN;
    pthread_mutex_unlock(&f->dmg_mu);
}

/* The data file was removed (debris of an interrupted creation): what was
 * in it is gone with it (D2). */
void flt_damage_file_gone(flt_ctx *f) {
    pthread_mutex_lock(&f->dmg_mu);
    for (size_t i = 0; i < f->ndmg; i++)
        if (f->dmg[i].state == FLT_DMG_PRESENT && f->dmg[i].len) f->dmg[i].state = FLT_DMG_GONE;
    pthread_mutex_unlock(&f->dmg_mu);
}

size_t flt_damage_present(flt_ctx *f, uint64_t *seqs, size_t cap) {
    size_t n = 0;
    if (!f) return 0;
    pthread_mutex_lock(&f->dmg_mu);
    for (size_t i = 0; i < f->ndmg; i++) {
        const flt_damage *d = &f->dmg[i];
        if (d->state != FLT_DMG_PRESENT || d->creator) continue;
        if (n < cap) seqs[n] = d->seq;
        n++;
    }
    pthread_mutex_unlock(&f->dmg_mu);
    return n;
}

void flt_damage_unknown_seq(flt_ctx *f, uint64_t seq) {
    pthread_mutex_lock(&f->dmg_mu);
    for (size_t i = 0; i < f->ndmg; i++)
        if (f->dmg[i].seq == seq) f->dmg[i].state = FLT_DMG_UNKNOWN;
    pthread_mutex_unlock(&f->dmg_mu);
}

/* D7, at the flip (the frame latched, so no write-back is copying it):
 * every pending copy of BLOCK takes the flip too, and a flip in the
 * header bytes the page code covers, past the stamped fields, gets a
 * copy of its own.  Full: the oldest is dropped (it only counts as
 * masked). */
void flt_cflip_note(flt_ctx *f, uint64_t seq, uint64_t block, const uint8_t *frame, size_t ps, uint64_t byte,
                    uint8_t mask) {
    pthread_mutex_lock(&f->dmg_mu);
    for (size_t i = 0; i < f->ncflips; i++)
        if (f->cflips[i].block == block) f->cflips[i].frame[byte] ^= mask;
    if (byte >= FLT_PAGE_STAMPED && byte < PAGE_HDR) {
        if (!f->cflips) f->cflips = calloc(FLT_CFLIP_MAX, sizeof *f->cflips);
        uint8_t *copy = f->cflips ? malloc(ps) : NULL;
        if (copy) {
            memcpy(copy, frame, ps);
            if (f->ncflips == FLT_CFLIP_MAX) {
                free(f->cflips[0].frame);
                memmove(f->cflips, f->cflips + 1, (FLT_CFLIP_MAX - 1) * sizeof *f->cflips);
                f->ncflips--;
            }
            f->cflips[f->ncflips++] = (flt_cflip){seq, block, copy};
        }
    }
    pthread_mutex_unlock(&f->dmg_mu);
}

/* D7, at a write of a whole page of the data file, paused or not (the
 * final flush writes with injection paused): a pending flip of that
 * block whose frame is written unchanged since the flip was carried to
 * disk under a fresh checksum, past the check that must refuse a frame
 * that differs from its codes (KV4).  It stays present for good, like a
 * read flip taken in (D5).  Either way the entry ends: the frame's next
 * state is what this write put on disk. */
void flt_cflip_written(flt_ctx *f, const eng_io_op *op, size_t ps) {
    if (!op->buf || op->len != ps || op->offset % ps != 0) return;
    uint64_t block = op->offset / ps;
    pthread_mutex_lock(&f->dmg_mu);
    size_t w = 0;
    uint64_t carried[FLT_CFLIP_MAX];
    size_t ncarried = 0;
    for (size_t i = 0; i < f->ncflips; i++) {
        flt_cflip *c = &f->cflips[i];
        if (c->block != block) {
            f->cflips[w++] = *c;
            continue;
        }
        if (memcmp((const uint8_t *)op->buf + FLT_PAGE_STAMPED, c->frame + FLT_PAGE_STAMPED, ps - FLT_PAGE_STAMPED) ==
            0)
            carried[ncarried++] = c->seq;
        free(c->frame);
    }
    f->ncflips = w;
    pthread_mutex_unlock(&f->dmg_mu);
    for (size_t i = 0; i < ncarried; i++) flt_damage_add(f, carried[i], UINT64_MAX, 0, 0, NULL, 0);
}

void flt_cflips_free(flt_ctx *f) {
    for (size_t b = 0; b < FLT_CRECENT_BUCKETS; b++)
        while (f->crecent[b]) {
            flt_crecent *r = f->crecent[b];
            f->crecent[b] = r->next;
            free(r);
        }
    for (size_t i = 0; i < f->ncflips; i++) free(f->cflips[i].frame);
    free(f->cflips);
    f->cflips = NULL;
    f->ncflips = 0;
}
