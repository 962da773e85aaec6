/*
 * status.h -- corruption reporting shared by the engine's layers.
 *
 * Lower layers (bufpool, btree, control) notice corruption; the handle
 * (engine.c) counts it, remembers the last report and forwards it to the
 * user's callback.  A layer gets a reporter, not the handle, so it never
 * includes the layers above it.
 */
#ifndef ENGINE_STATUS_H
#define ENGINE_STATUS_H

#include <stdint.h>
#include "engine.h"

typedef struct eng_reporter {
    void (*fn)(void *ctx, const eng_corruption *r);
    void *ctx;
} eng_reporter;

/* Build a report and deliver it; returns ENG_CORRUPTION so callers can
 * `return eng_report(...)`.  FMT describes the problem for `detail`. */
int eng_report(const eng_reporter *rep, int layer, const char *file, int64_t block, int64_t offset, int32_t entry,
               uint64_t expected, uint64_t found, const char *fmt, ...) __attribute__((format(printf, 9, 10)));

#endif
