/*
 * status.c -- names of statuses and layers, and the corruption report.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "status.h"

static const char *const status_names[ENG_STATUS_COUNT] = {
    [ENG_OK] = "ok",
    [ENG_NOTFOUND] = "not found",
    [ENG_CORRUPTION] = "corruption",
    [ENG_IOERR] = "I/O error",
    [ENG_NOSPACE] = "no space",
    [ENG_INVALID] = "invalid argument",
    [ENG_BUSY] = "busy (locked by another handle, or every cache frame pinned)",
    [ENG_NOMEM] = "out of memory",
    [ENG_READONLY] = "read-only",
    [ENG_POISONED] = "poisoned by an earlier write or sync failure; reopen",
    [ENG_NOTSUP] = "not supported",
};

const char *eng_strerror(int status) {
    if (status < 0 || status >= ENG_STATUS_COUNT) return "unknown status";
    return status_names[status];
}

const char *eng_planted_bug(void) {
#ifdef ENG_MUTANT
    return ENG_MUTANT; /* the Makefile's mutant rules define it as "NAME" */
#else
    return NULL;
#endif
}

static const char *const layer_names[ENG_LAYER_COUNT] = {
    [ENG_LAYER_PAGE_CHECKSUM] = "page_checksum",
    [ENG_LAYER_ZERO_PAGE] = "zero_page",
    [ENG_LAYER_PAGE_HEADER] = "page_header",
    [ENG_LAYER_STRUCTURE] = "structure",
    [ENG_LAYER_OVERFLOW] = "overflow",
    [ENG_LAYER_CONTROL] = "control",
    [ENG_LAYER_WAL] = "wal_record",
    [ENG_LAYER_KV_PROTECTION] = "kv_protection",
    [ENG_LAYER_VERSION] = "version",
    [ENG_LAYER_HINT_STATUS] = "hint_status",
};

const char *eng_layer_name(int layer) {
    if (layer < 0 || layer >= ENG_LAYER_COUNT) return "unknown";
    return layer_names[layer];
}

int eng_corruption_format(const eng_corruption *r, char *buf, size_t cap) {
    char blk[32] = "", off[32] = "", ent[32] = "";
    if (r->block >= 0) snprintf(blk, sizeof blk, " block=%lld", (long long)r->block);
    if (r->offset >= 0) snprintf(off, sizeof off, " offset=%lld", (long long)r->offset);
    if (r->entry >= 0) snprintf(ent, sizeof ent, " entry=%d", (int)r->entry);
    return snprintf(buf, cap, "corruption: layer=%s file=%s%s%s%s expected=0x%llx found=0x%llx: %s",
                    eng_layer_name(r->layer), r->file, blk, off, ent, (unsigned long long)r->expected,
                    (unsigned long long)r->found, r->detail);
}

int eng_report(const eng_reporter *rep, int layer, const char *file, int64_t block, int64_t offset, int32_t entry,
               uint64_t expected, uint64_t found, const char *fmt, ...) {
    eng_corruption r;
    memset(&r, 0, sizeof r);
    r.layer = layer;
    snprintf(r.file, sizeof r.file, "%s", file ? file : "");
    r.block = block;
    r.offset = offset;
    r.entry = entry;
    r.expected = expected;
    r.found = found;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r.detail, sizeof r.detail, fmt, ap);
    va_end(ap);
    if (rep && rep->fn) rep->fn(rep->ctx, &r);
    return ENG_CORRUPTION;
}
