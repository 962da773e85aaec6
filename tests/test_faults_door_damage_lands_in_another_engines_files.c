/*
 * test_faults_door_damage_lands_in_another_engines_files.c -- bitflip_page
 * and zero_page on disk for an engine reached through the door (a
 * file_kind in the options, as stress gives RocksDB's and SQLite's; no
 * page format the library knows: faults/doordisk.c).  Between operations
 * (flt_tick, point tick/door) a flip changes exactly one bit of one 4 KiB
 * block of a file of a kind, and a zeroed block is all zero with the file's
 * size unchanged (a short last block too); right before the SIGKILL of a
 * crash (flt_crash_now, point crash/door) a flip lands in the files the
 * restart will read.  Each is in the ledger first with its file, block,
 * the file's kind as region and the block's pre and post hashes (XXH64,
 * seed "door", of the block as 4096 bytes), and a file of no kind (an
 * info log) is never touched.
 */
#include <sys/wait.h>
#include <xxhash.h>

#include "faults_helpers.h"

#define DOOR_SEED 0x646f6f72u

/* RocksDB's names: tables, logs, the manifest; LOG is its info log. */
static const char *kind_of(const char *rel) {
    size_t n = strlen(rel);
    if (n > 4 && !strcmp(rel + n - 4, ".sst")) return "data";
    if (n > 4 && !strcmp(rel + n - 4, ".log")) return "wal";
    if (!strncmp(rel, "MANIFEST-", 9)) return "control";
    return NULL;
}

static const struct {
    const char *name;
    size_t size;
} files[] = {{"000007.sst", 3 * PS + 100}, {"000009.log", 2 * PS}, {"MANIFEST-000005", 700}, {"LOG", 2 * PS}};
#define NFILES (sizeof files / sizeof *files)

static uint8_t orig[NFILES][4 * PS];

static void make_files(const char *dir) {
    char p[4096];
    for (size_t i = 0; i < NFILES; i++) {
        tu_fill(orig[i], files[i].size, 70 + i);
        tu_path(p, sizeof p, dir, files[i].name);
        int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        cr_assert(fd >= 0);
        cr_assert_eq(write(fd, orig[i], files[i].size), (ssize_t)files[i].size);
        close(fd);
    }
}

/* A round of its own: no ledger yet, the files as make_files writes them. */
static void fresh(const char *run, const char *dir) {
    char p[4200];
    snprintf(p, sizeof p, "%s/ledger", run);
    unlink(p);
    make_files(dir);
}

/* The bits of file I that differ from what make_files wrote; *AT the
 * first differing byte.  Its size must be unchanged. */
static size_t changed_bits(const char *dir, size_t i, size_t *at, size_t *zero_run) {
    char p[4096];
    static uint8_t now[4 * PS];
    tu_path(p, sizeof p, dir, files[i].name);
    int fd = open(p, O_RDONLY);
    cr_assert(fd >= 0);
    cr_assert_eq(read(fd, now, sizeof now), (ssize_t)files[i].size, "%s kept its size", files[i].name);
    close(fd);
    size_t bits = 0;
    *at = (size_t)-1, *zero_run = 0;
    for (size_t k = 0; k < files[i].size; k++) {
        if (now[k] == orig[i][k]) continue;
        if (*at == (size_t)-1) *at = k;
        bits += (size_t)__builtin_popcount(now[k] ^ orig[i][k]);
    }
    for (size_t k = *at == (size_t)-1 ? files[i].size : *at; k < files[i].size && !now[k]; k++) ++*zero_run;
    return bits;
}

/* The one ledger line of RUN holding NEEDLE, into LINE. */
static int ledger_line(const char *run, const char *needle, char *line, size_t cap) {
    char p[4200];
    snprintf(p, sizeof p, "%s/ledger", run);
    FILE *f = fopen(p, "r");
    int n = 0;
    char buf[2048];
    while (f && fgets(buf, sizeof buf, f))
        if (strstr(buf, needle)) n++, snprintf(line, cap, "%s", buf);
    if (f) fclose(f);
    return n;
}

static long long field(const char *line, const char *key) {
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(line, k);
    if (!p) return -1;
    p += strlen(k);
    if (*p == '"') return (long long)strtoull(p + 1, NULL, 16); /* pre, post, mask: "0x..." */
    return strtoll(p, NULL, 10);
}

static flt_ctx *door_damage(const char *run, const char *dir, int cls, uint64_t salt) {
    flt_options fo = fopts(run, dir, cu_seed(salt));
    fo.one_in[cls] = 1;
    fo.via_door = 1;
    fo.file_kind = kind_of;
    return fopen_ok(&fo);
}

/* The file a ledger line names: its index in files[]. */
static size_t file_of(const char *line) {
    for (size_t i = 0; i < NFILES; i++) {
        char k[80];
        snprintf(k, sizeof k, "\"file\":\"%s\"", files[i].name);
        if (strstr(line, k)) return i;
    }
    cr_assert_fail("the line names none of the files: %s", line);
    return 0;
}

Test(doordisk, a_tick_flips_one_bit_of_one_block_of_a_file_of_a_kind, .timeout = 60, .fini = cu_fini) {
    int kinds_hit[NFILES] = {0};
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    for (uint64_t round = 0; round < 24; round++) {
        fresh(run, dir);
        flt_ctx *f = door_damage(run, dir, FLT_BITFLIP_PAGE, 0xf11b + round);
        flt_tick(f, NULL);
        flt_close(f);
        char line[2048];
        cr_assert_eq(ledger_line(run, "\"point\":\"tick/door\"", line, sizeof line), 1, "one flip per tick");
        cr_assert(strstr(line, "\"class\":\"bitflip_page\""), "%s", line);
        size_t i = file_of(line), at, zr;
        cr_assert(kind_of(files[i].name) != NULL, "a file of no kind is never touched");
        kinds_hit[i]++;
        char region[64];
        snprintf(region, sizeof region, "\"region\":\"%s\"", kind_of(files[i].name));
        cr_assert(strstr(line, region), "the region is the file's kind: %s", line);
        size_t total = 0;
        for (size_t k = 0; k < NFILES; k++) {
            size_t b = changed_bits(dir, k, &at, &zr);
            total += b;
            if (b) {
                cr_assert_eq(k, i, "the bit changed in the file the line names");
                cr_assert_eq((long long)(at / PS), field(line, "block"), "and in its block");
            }
        }
        cr_assert_eq(total, 1, "exactly one bit changed (%zu)", total);
        /* pre and post: the block as 4096 bytes, before and after. */
        uint8_t blk[PS] = {0};
        long long b = field(line, "block");
        size_t len = files[i].size - (size_t)b * PS < PS ? files[i].size - (size_t)b * PS : PS;
        memcpy(blk, orig[i] + b * PS, len);
        cr_assert_eq((unsigned long long)field(line, "pre"), (unsigned long long)XXH64(blk, PS, DOOR_SEED));
        cr_assert_eq(field(line, "mask"), 1ll << (field(line, "bit") % 8));
        blk[field(line, "bit") / 8] ^= (uint8_t)field(line, "mask");
        cr_assert_eq((unsigned long long)field(line, "post"), (unsigned long long)XXH64(blk, PS, DOOR_SEED));
    }
    cr_assert(kinds_hit[0] && kinds_hit[1] && kinds_hit[2], "every kind is drawn: %d %d %d", kinds_hit[0], kinds_hit[1],
              kinds_hit[2]);
}

Test(doordisk, a_tick_zeroes_one_block_and_keeps_the_files_size, .timeout = 60, .fini = cu_fini) {
    int short_block = 0;
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    for (uint64_t round = 0; round < 24; round++) {
        fresh(run, dir);
        flt_ctx *f = door_damage(run, dir, FLT_ZERO_PAGE, 0x2e40 + round);
        flt_tick(f, NULL);
        flt_close(f);
        char line[2048];
        cr_assert_eq(ledger_line(run, "\"point\":\"tick/door\"", line, sizeof line), 1);
        cr_assert(strstr(line, "\"class\":\"zero_page\""), "%s", line);
        size_t i = file_of(line), at, zr;
        long long b = field(line, "block");
        size_t len = files[i].size - (size_t)b * PS < PS ? files[i].size - (size_t)b * PS : PS;
        short_block |= len < PS;
        cr_assert(changed_bits(dir, i, &at, &zr) > 0);
        cr_assert_eq(at / PS, (size_t)b, "the zeroed block is the line's");
        cr_assert_geq(zr + (at - (size_t)b * PS), len, "the whole block reads back zero");
        for (size_t k = 0; k < NFILES; k++)
            if (k != i) cr_assert_eq(changed_bits(dir, k, &at, &zr), 0, "%s untouched", files[k].name);
        static const uint8_t zeros[PS];
        cr_assert_eq((unsigned long long)field(line, "post"), (unsigned long long)XXH64(zeros, PS, DOOR_SEED));
    }
    cr_assert(short_block, "a short last block was drawn and zeroed within the file");
}

Test(doordisk, a_crash_flips_a_bit_right_before_its_sigkill, .timeout = 60, .fini = cu_fini) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    make_files(dir);
    fflush(NULL);
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        flt_ctx *f = door_damage(run, dir, FLT_BITFLIP_PAGE, 0xc4a5);
        flt_crash_now(f);
    }
    int status = 0;
    cr_assert_eq(waitpid(pid, &status, 0), pid);
    cr_assert(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "the child died by SIGKILL");
    char line[2048];
    cr_assert_eq(ledger_line(run, "\"point\":\"crash/door\"", line, sizeof line), 1, "one flip at the crash");
    size_t i = file_of(line), at, zr, total = 0;
    for (size_t k = 0; k < NFILES; k++) total += changed_bits(dir, k, &at, &zr);
    cr_assert_eq(total, 1, "one bit of %s changed before the kill", files[i].name);
}
