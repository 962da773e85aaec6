/*
 * damage_int.h -- what damage.c offers the injectors (inject.c,
 * cacheflip.c): the damage table of faults.h's D1-D9 and D7's watch of
 * cache flips.  Every function takes dmg_mu itself.
 */
#ifndef FAULTS_DAMAGE_INT_H
#define FAULTS_DAMAGE_INT_H

#include "frame.h"

/* Damage SEQ (a ledger line's seq) now in DIR/data at [OFF, OFF + LEN)
 * (LEN 0 and OFF UINT64_MAX: present for good, D5 and D7), put there by
 * the write CREATOR once it completes (NULL: it is on disk already).
 * MASK: a one-byte flip's XOR mask, so the same flip again cancels it
 * (D3); ZEROED: a zeroed page, which a later flip inside it unmakes (D8). */
void flt_damage_add(flt_ctx *f, uint64_t seq, uint64_t off, uint64_t len, uint8_t mask, const void *creator,
                    int zeroed);
/* after() of a write OP of the data file: D1 and D2. */
void flt_damage_written(flt_ctx *f, const eng_io_op *op);
/* D4: a failed fsync of the data file rolled old contents back. */
void flt_damage_unknown_all(flt_ctx *f);
/* D6: the data file was removed or created anew. */
void flt_damage_file_gone(flt_ctx *f);
/* Damage SEQ could not be made after all (its file write failed). */
void flt_damage_unknown_seq(flt_ctx *f, uint64_t seq);
/* D7: a cache flip SEQ of MASK at BYTE of BLOCK's frame (PS bytes, as it
 * is right after the flip). */
void flt_cflip_note(flt_ctx *f, uint64_t seq, uint64_t block, const uint8_t *frame, size_t ps, uint64_t byte,
                    uint8_t mask);
/* D7: a write OP of a whole page of the data file (PS bytes). */
void flt_cflip_written(flt_ctx *f, const eng_io_op *op, size_t ps);
/* Free D7's pending frame copies and the cache flips pair_of may name
 * (flt_close). */
void flt_cflips_free(flt_ctx *f);

#endif
