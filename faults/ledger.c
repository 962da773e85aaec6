/*
 * ledger.c -- the fault ledger (format and guarantees in ledger.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/json.h"
#include "ledger.h"

struct flt_ledger {
    int fd;
    _Atomic uint64_t seq;
};

flt_event flt_event_none(const char *cls, const char *point) {
    return (flt_event){.cls = cls,
                       .point = point,
                       .block = -1,
                       .offset = -1,
                       .len = -1,
                       .bit = -1,
                       .op = -1,
                       .thread = -1,
                       .part_offset = -1,
                       .pair_of = -1,
                       .part_len = -1,
                       .nbits = -1};
}

int flt_ledger_open(const char *run_dir, flt_ledger **out) {
    char path[4200];
    snprintf(path, sizeof path, "%s/ledger", run_dir);
    flt_ledger *l = calloc(1, sizeof *l);
    if (!l) return -ENOMEM;
    l->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (l->fd < 0) {
        int e = errno;
        free(l);
        return -e;
    }
    *out = l;
    return 0;
}

void flt_ledger_close(flt_ledger *l) {
    if (!l) return;
    close(l->fd);
    free(l);
}

int flt_ledger_append(flt_ledger *l, const flt_event *e) { return flt_ledger_append_seq(l, e, NULL); }

int flt_ledger_append_seq(flt_ledger *l, const flt_event *e, uint64_t *seq) {
    char line[2048], tmp[600];
    size_t n = 0;
    uint64_t my_seq = atomic_fetch_add(&l->seq, 1);
    if (seq) *seq = my_seq;
#define PUT(...) n += (size_t)snprintf(line + n, sizeof line - n, __VA_ARGS__)
#define PUTS(key, val)                         \
    do {                                       \
        if (val) {                             \
            json_escape(tmp, sizeof tmp, val); \
            PUT(",\"%s\":\"%s\"", key, tmp);   \
        }                                      \
    } while (0)
#define PUTI(key, val)                                              \
    do {                                                            \
        if ((val) >= 0) PUT(",\"%s\":%lld", key, (long long)(val)); \
    } while (0)
    PUT("{\"seq\":%llu", (unsigned long long)my_seq);
    PUTS("phase", e->phase ? e->phase : "run");
    PUTS("class", e->cls);
    PUTS("point", e->point);
    PUTS("file", e->file);
#ifndef ENG_BROKEN_LEDGER_REPORT_MATCHES_ANOTHER_BLOCK /* planted bug (tests/harness_mutants.txt): no place */
    PUTI("block", e->block);
    PUTI("offset", e->offset);
#endif
    PUTI("len", e->len);
    if (e->mask) PUT(",\"mask\":\"0x%llx\"", (unsigned long long)e->mask);
    PUTI("bit", e->bit);
    PUTI("part_offset", e->part_offset);
    PUTI("part_len", e->part_len);
    PUTS("part_code", e->part_code);
    PUTI("pair_of", e->pair_of);
    PUTS("pair_check", e->pair_check);
    PUTS("pattern", e->pattern);
    PUTS("region", e->region);
    PUTI("nbits", e->nbits);
    PUTS("bits", e->bits);
    PUTS("parity", e->parity);
    PUTS("check", e->check);
    if (e->page_post)
        PUT(",\"pre\":\"0x%llx\",\"post\":\"0x%llx\"", (unsigned long long)e->page_pre,
            (unsigned long long)e->page_post);
    PUTI("op", e->op);
    PUTI("thread", (int64_t)e->thread);
    PUTS("err", e->err);
    PUTS("note", e->note);
    PUTS("to", e->to);
    PUT("}\n");
#undef PUT
#undef PUTS
#undef PUTI
    if (n >= sizeof line) n = sizeof line - 1, line[n - 1] = '\n';
    ssize_t w = write(l->fd, line, n);
    return w == (ssize_t)n ? 0 : (w < 0 ? -errno : -EIO);
}

int flt_ledger_read(const char *run_dir, void (*fn)(void *ctx, const char *line), void *ctx) {
    char path[4200];
    snprintf(path, sizeof path, "%s/ledger", run_dir);
    FILE *f = fopen(path, "r");
    if (!f) return errno == ENOENT ? 0 : -errno;
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) > 0) {
        if (line[len - 1] == '\n') line[len - 1] = 0;
        fn(ctx, line);
    }
    free(line);
    fclose(f);
    return 0;
}
