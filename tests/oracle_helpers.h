/*
 * oracle_helpers.h -- what the oracle's test files (test_oracle*.c) share:
 * the judge's sources compiled in (they test its static rules; the
 * generic test rule links only the engine library) and the configuration
 * of a judging run.
 */
#ifndef ORACLE_HELPERS_H
#define ORACLE_HELPERS_H

#include <criterion/criterion.h>
#include <string.h>

#include "oracle/verdict.c"

static inline vd_config judging(void) {
    vd_config c = {.data_checksums = 1, .full_page_writes = 1, .page_size = 4096, .wal_segment_size = 1u << 20};
    return c;
}

#endif
