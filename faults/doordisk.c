/*
 * doordisk.c -- bitflip_page and zero_page on disk for an engine reached
 * through the door (flt_options.via_door with a file_kind: RocksDB,
 * SQLite).  Such an engine has no page format the fault library knows,
 * so the damage is placed by file kind and 4 KiB block, not by region:
 *
 *   files   the database directory's regular files that o.file_kind
 *           names (data, wal, control: RocksDB's *.sst, *.log,
 *           MANIFEST-* and the like; SQLite's database and its -wal or
 *           -journal), not empty, in name order;
 *   kind    one of the kinds those files have, drawn evenly (a run's one
 *           MANIFEST is drawn as often as its many tables);
 *   file    one file of that kind, drawn evenly;
 *   block   one 4 KiB block of it, drawn evenly (the last one may be
 *           short: only its bytes are touched, the file never grows).
 *
 *   bitflip_page  one bit of the block's bytes
 *   zero_page     the block's bytes all zero; a block already all zero
 *                 is left alone, and up to four are drawn for one that
 *                 is not
 *
 * Between operations (flt_tick: point tick/door) each class is drawn at
 * its odds; right before a kill's SIGKILL (point crash/door) a flip is
 * made whenever bitflip_page is on and a zeroed block at half the kills
 * whenever zero_page is on, so the restart's recovery meets damage
 * nothing of the dead process could write over.  The ledger line comes
 * first (FL1): file (relative to the directory), block (4 KiB units),
 * bit and mask of a flip, region (the file's kind), pre and post (XXH64
 * with seed DISK_HASH_SEED of the block as 4096 bytes, zeros past the
 * file's end: whether the damage is still there can be read later, and
 * never from a hash of the whole file, which stress's small-file check
 * takes with seed 0).  The bytes are changed with the library's own
 * calls (the caller is inside flt_door_bypass): never hooked, never in
 * the power-loss journal.
 *
 * Nothing goes into damage.c's table (its rules D1-D9 speak of our data
 * file), so V4b never calls such damage present: another engine's verify
 * reads neither every file nor every byte of one (RocksDB's checked scan
 * reads the live tables' data and index blocks, not their filters, the
 * log or the manifest; SQLite's integrity_check no free page), so damage
 * no report names is masked, and what the engine does with it (an error,
 * a report, a wrong, lost or resurrected value, an open that fails) is
 * what the oracle judges, by the engine's promise table for the class
 * and the file's kind (V10).
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <xxhash.h>

#include "doordisk_int.h"

#define DISK_BLOCK     FLT_DOOR_BLOCK
#define DISK_MAX_FILES 256
#define DISK_HASH_SEED 0x646f6f72u /* "door" */

typedef struct disk_file {
    char name[256];
    const char *kind;
    uint64_t size;
} disk_file;

int flt_door_disk(const flt_ctx *f) { return f->o.via_door && f->o.file_kind && f->db_dir; }

static int cmp_files(const void *a, const void *b) {
    return strcmp(((const disk_file *)a)->name, ((const disk_file *)b)->name);
}

/* The directory's files of a kind, not empty, sorted (into FS, at most
 * DISK_MAX_FILES): how many. */
static size_t list_files(flt_ctx *f, disk_file *fs) {
    DIR *d = opendir(f->db_dir);
    if (!d) return 0;
    size_t n = 0;
    struct dirent *de;
    char p[4400];
    while ((de = readdir(d)) != NULL && n < DISK_MAX_FILES) {
        const char *kind = strlen(de->d_name) < sizeof fs->name ? f->o.file_kind(de->d_name) : NULL;
        struct stat st;
        snprintf(p, sizeof p, "%s/%s", f->db_dir, de->d_name);
        if (!kind || stat(p, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0) continue;
        snprintf(fs[n].name, sizeof fs[n].name, "%s", de->d_name);
        fs[n].kind = kind;
        fs[n].size = (uint64_t)st.st_size;
        n++;
    }
    closedir(d);
    qsort(fs, n, sizeof *fs, cmp_files);
    return n;
}

/* A file for class CLS's damage: a kind among those present, then a file
 * of it, each drawn evenly from CLS's stream.  NULL when there is none. */
static const disk_file *pick_file(flt_ctx *f, flt_thr *t, int cls, const disk_file *fs, size_t n) {
    const char *kinds[DISK_MAX_FILES];
    size_t nk = 0;
    for (size_t i = 0; i < n; i++) {
        size_t k = 0;
        while (k < nk && strcmp(kinds[k], fs[i].kind)) k++;
        if (k == nk) kinds[nk++] = fs[i].kind;
    }
    if (!nk) return NULL;
    const char *kind = kinds[flt_below(f, t, cls, nk)];
    size_t of_kind = 0;
    for (size_t i = 0; i < n; i++) of_kind += !strcmp(fs[i].kind, kind);
    uint64_t j = flt_below(f, t, cls, of_kind);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(fs[i].kind, kind) && j-- == 0) return &fs[i];
    return NULL;
}

/* Block BLOCK of the file at PATH into BUF (DISK_BLOCK bytes, zeros past
 * the file's end): its bytes in the file, or 0 when none could be read. */
static size_t read_block(const char *path, uint64_t block, uint8_t *buf) {
    memset(buf, 0, DISK_BLOCK);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    ssize_t r = fd >= 0 ? pread(fd, buf, DISK_BLOCK, (off_t)(block * DISK_BLOCK)) : -1;
    if (fd >= 0) close(fd);
    return r > 0 ? (size_t)r : 0;
}

/* Write the N bytes of BUF at block BLOCK of the file at PATH: 1 if all went. */
static int write_block(const char *path, uint64_t block, const uint8_t *buf, size_t n) {
    int fd = open(path, O_WRONLY | O_CLOEXEC);
    ssize_t w = fd >= 0 ? pwrite(fd, buf, n, (off_t)(block * DISK_BLOCK)) : -1;
    if (fd >= 0) close(fd);
    return w == (ssize_t)n;
}

static flt_event disk_event(flt_ctx *f, flt_thr *t, int cls, const char *point, const disk_file *df, uint64_t block,
                            const uint8_t *pre) {
    flt_event e = flt_event_for(f, t, cls, point);
    e.file = df->name;
    e.block = (int64_t)block;
    e.region = df->kind;
    e.page_pre = XXH64(pre, DISK_BLOCK, DISK_HASH_SEED);
    return e;
}

/* A block drawn for class CLS: a file of FS[N], a block of it, its path
 * and its bytes (len read, 0 when nothing could be). */
typedef struct disk_block {
    const disk_file *df;
    uint64_t block;
    char path[4400];
    uint8_t buf[DISK_BLOCK];
    size_t len;
} disk_block;

/* Draw *B for CLS; 0, or -1 when there is no file to draw. */
static int draw_block(flt_ctx *f, flt_thr *t, int cls, const disk_file *fs, size_t n, disk_block *b) {
    b->df = pick_file(f, t, cls, fs, n);
    if (!b->df) return -1;
    b->block = flt_below(f, t, cls, (b->df->size + DISK_BLOCK - 1) / DISK_BLOCK);
    snprintf(b->path, sizeof b->path, "%s/%s", f->db_dir, b->df->name);
    b->len = read_block(b->path, b->block, b->buf);
    return 0;
}

/* One bit of one block of a drawn file flipped, at POINT. */
static void flip_block(flt_ctx *f, flt_thr *t, const char *point, const disk_file *fs, size_t n) {
    disk_block b;
    if (draw_block(f, t, FLT_BITFLIP_PAGE, fs, n, &b) || !b.len) return;
    uint64_t bit = flt_below(f, t, FLT_BITFLIP_PAGE, (uint64_t)b.len * 8);
    flt_event e = disk_event(f, t, FLT_BITFLIP_PAGE, point, b.df, b.block, b.buf);
    e.bit = (int64_t)bit;
    e.mask = 1u << (bit % 8);
    b.buf[bit / 8] ^= (uint8_t)e.mask;
    e.page_post = XXH64(b.buf, DISK_BLOCK, DISK_HASH_SEED);
    e.note = "one bit of a 4 KiB block of the file";
    if (flt_record(f, FLT_BITFLIP_PAGE, &e) == 0)
        write_block(b.path, b.block, b.buf, b.len); /* FL1: no line, no fault */
}

/* One block of a drawn file zeroed, at POINT: up to four draws for a
 * block not all zero already. */
static void zero_block(flt_ctx *f, flt_thr *t, const char *point, const disk_file *fs, size_t n) {
    static const uint8_t zeros[DISK_BLOCK];
    disk_block b;
    for (int k = 0; k < 4; k++) {
        if (draw_block(f, t, FLT_ZERO_PAGE, fs, n, &b)) return;
        if (!b.len || !memcmp(b.buf, zeros, DISK_BLOCK)) continue;
        flt_event e = disk_event(f, t, FLT_ZERO_PAGE, point, b.df, b.block, b.buf);
        e.page_post = XXH64(zeros, DISK_BLOCK, DISK_HASH_SEED);
        e.note = "a 4 KiB block of the file reads back all zero";
        if (flt_record(f, FLT_ZERO_PAGE, &e) == 0) write_block(b.path, b.block, zeros, b.len);
        return;
    }
}

void flt_door_disk_tick(flt_ctx *f, flt_thr *t) {
    int flip = flt_draw(f, t, FLT_BITFLIP_PAGE), zero = flt_draw(f, t, FLT_ZERO_PAGE);
    if (!flip && !zero) return;
    disk_file *fs = calloc(DISK_MAX_FILES, sizeof *fs);
    size_t n = fs ? list_files(f, fs) : 0;
    if (flip) flip_block(f, t, "tick/door", fs, n);
    if (zero) zero_block(f, t, "tick/door", fs, n);
    free(fs);
}

void flt_door_disk_at_crash(flt_ctx *f, flt_thr *t) {
    int flip = f->o.one_in[FLT_BITFLIP_PAGE] != 0;
    int zero = f->o.one_in[FLT_ZERO_PAGE] && flt_below(f, t, FLT_ZERO_PAGE, 2) == 0;
    if (!flip && !zero) return;
    disk_file *fs = calloc(DISK_MAX_FILES, sizeof *fs);
    size_t n = fs ? list_files(f, fs) : 0;
    if (flip) flip_block(f, t, "crash/door", fs, n);
    if (zero) zero_block(f, t, "crash/door", fs, n);
    free(fs);
}
