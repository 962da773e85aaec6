/*
 * test_faults_door_inflight_flips_one_bit_of_a_transfer.c --
 * bitflip_inflight through the door for an engine with no fault points
 * of its own (a file_kind in the options, as stress gives RocksDB's and
 * SQLite's; faults/doorio.c).  A write of a file of a kind reaches the
 * disk with exactly one bit flipped while the caller's buffer keeps its
 * bytes (door/inflight/write); a read of one hands the caller its bytes
 * with exactly one bit flipped, within the bytes the read moved, while the
 * file on disk keeps them (door/inflight/read).  Each flip is in the ledger
 * with the file below the database directory, its kind as region, the 4
 * KiB block of the flipped byte and the bit within that block (block *
 * 4096 + bit / 8 is the byte's offset in the file, bit % 8 its mask), and
 * the transfer in the note.  A file of no kind (RocksDB's info log) is
 * never flipped, and at one_in 0 nothing is.
 */
#include "door.h"
#include "faults_helpers.h"

static void door_fini(void) {
    flt_door_disarm();
    cu_fini();
}

/* RocksDB's names: tables, logs, the manifest; LOG is its info log. */
static const char *kind_of(const char *rel) {
    size_t n = strlen(rel);
    if (n > 4 && !strcmp(rel + n - 4, ".sst")) return "data";
    if (n > 4 && !strcmp(rel + n - 4, ".log")) return "wal";
    if (!strncmp(rel, "MANIFEST-", 9)) return "control";
    return NULL;
}

/* The door armed with bitflip_inflight at FLIP_ONE_IN and sync_error at
 * SYNC_ONE_IN (a class that keeps doorio.c's before() in the chain
 * without touching a read or a write: no test here syncs). */
static flt_ctx *armed(const char *run, const char *dir, uint64_t flip_one_in, uint64_t sync_one_in, uint64_t salt) {
    flt_options fo = fopts(run, dir, cu_seed(salt));
    fo.one_in[FLT_BITFLIP_INFLIGHT] = flip_one_in;
    fo.one_in[FLT_SYNC_ERROR] = sync_one_in;
    fo.via_door = 1;
    fo.file_kind = kind_of;
    flt_ctx *f = fopen_ok(&fo);
    flt_thread_start(f, 0);
    cr_assert_eq(flt_door_arm(flt_hooks(f), dir), 0);
    return f;
}

/* DIR/NAME holding LEN bytes of BYTES; called with the door disarmed. */
static void put_file(const char *dir, const char *name, const uint8_t *bytes, size_t len) {
    char p[4096];
    int fd = open(tu_path(p, sizeof p, dir, name), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, bytes, len), (ssize_t)len);
    close(fd);
}

/* LEN bytes of DIR/NAME at OFF into OUT, all of them there; called with
 * the door disarmed, so what comes back is the disk's. */
static void disk(const char *dir, const char *name, uint64_t off, uint8_t *out, size_t len) {
    char p[4096];
    int fd = open(tu_path(p, sizeof p, dir, name), O_RDONLY);
    cr_assert(fd >= 0, "open %s: %s", name, strerror(errno));
    cr_assert_eq(pread(fd, out, len, (off_t)off), (ssize_t)len, "%s holds [%llu, +%zu)", name, (unsigned long long)off,
                 len);
    close(fd);
}

/* A transfer of a file and how it was meant to go. */
typedef struct xfer {
    const char *name;
    uint64_t off;
    size_t len;
} xfer;

/* The one ledger line of RUN at POINT naming X's file and, in its note,
 * X's transfer of MOVED bytes (WHAT: "read" or "write"), into LINE. */
static void flip_line(const char *run, const char *point, const char *what, const xfer *x, size_t moved, char *line,
                      size_t cap) {
    char note[128];
    snprintf(note, sizeof note, "\"note\":\"one bit of a %s of %zu bytes at offset %llu\"", what, moved,
             (unsigned long long)x->off);
    lg l = lg_read(run);
    size_t n = 0;
    for (size_t i = 0; i < l.n; i++)
        if (line_is(l.lines[i], "point", point) && line_is(l.lines[i], "file", x->name) && strstr(l.lines[i], note))
            n++, snprintf(line, cap, "%s", l.lines[i]);
    lg_free(&l);
    cr_assert_eq(n, 1, "one line at %s for %s with %s", point, x->name, note);
}

/* X's MOVED bytes as meant (WANT) and as they arrived (GOT) differ in
 * exactly one bit, and the ledger line at POINT places it: the file's
 * kind as region, the flipped byte's file offset as block * 4096 +
 * bit / 8 and its mask as 1 << bit % 8.  The position is drawn, so it is
 * read off the bytes. */
static void check_flip(const char *run, const char *point, const char *what, const xfer *x, const uint8_t *want,
                       const uint8_t *got, size_t moved) {
    size_t byte = 0;
    uint8_t mask = 0;
    cr_assert_eq(one_bit_diff(want, got, moved, &byte, &mask), 1, "%s: exactly one bit of the %s differs", x->name,
                 what);
    char line[2048];
    flip_line(run, point, what, x, moved, line, sizeof line);
    cr_assert(line_is(line, "class", "bitflip_inflight"), "%s", line);
    cr_assert(line_is(line, "region", kind_of(x->name)), "the region is the file's kind: %s", line);
    int64_t block = jnum(line, "block"), bit = jnum(line, "bit");
    cr_assert(block >= 0 && bit >= 0 && bit < (int64_t)PS * 8, "block and bit in 4 KiB: %s", line);
    cr_assert_eq((uint64_t)block * PS + (uint64_t)bit / 8, x->off + byte, "the line places the flipped byte: %s", line);
    cr_assert_eq(1u << (bit % 8), mask, "bit %% 8 is the flipped bit of its byte: %s", line);
    cr_assert_eq(jmask(line), (uint64_t)mask, "the mask is the flipped bit: %s", line);
}

Test(doorflip, a_write_reaches_the_disk_with_one_bit_flipped_and_the_callers_buffer_kept, .timeout = 60,
     .fini = door_fini) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    /* A table written where it crosses blocks, a log appended to by two
     * unpositioned writes, a manifest shorter than a block. */
    static const xfer xs[] = {{"000007.sst", PS + 37, 3 * PS},
                              {"000009.log", 0, 1000},
                              {"000009.log", 1000, 5000},
                              {"MANIFEST-000005", 0, 300}};
    enum { NX = sizeof xs / sizeof *xs };
    static uint8_t buf[NX][3 * PS], want[NX][3 * PS], got[3 * PS];
    flt_ctx *f = armed(run, dir, 1, 0, 0xf1e1);
    for (size_t i = 0; i < NX; i++) {
        char p[4096];
        tu_fill(buf[i], xs[i].len, 90 + i);
        memcpy(want[i], buf[i], xs[i].len);
        int fd = open(tu_path(p, sizeof p, dir, xs[i].name), O_WRONLY | O_CREAT, 0644);
        cr_assert(fd >= 0);
        ssize_t w;
        if (!strcmp(xs[i].name, "000007.sst")) {
            w = pwrite(fd, buf[i], xs[i].len, (off_t)xs[i].off);
        } else {
            cr_assert_eq(lseek(fd, (off_t)xs[i].off, SEEK_SET), (off_t)xs[i].off);
            w = write(fd, buf[i], xs[i].len);
            cr_assert_eq(lseek(fd, 0, SEEK_CUR), (off_t)(xs[i].off + xs[i].len), "the offset moved by the whole");
        }
        cr_assert_eq(w, (ssize_t)xs[i].len, "the write is reported whole");
        close(fd);
        /* The flip is in the copy the door issued, never the caller's. */
        cr_assert_eq(memcmp(buf[i], want[i], xs[i].len), 0, "%s: the caller's buffer is unchanged", xs[i].name);
    }
    flt_door_disarm();
    flt_close(f);
    for (size_t i = 0; i < NX; i++) {
        disk(dir, xs[i].name, xs[i].off, got, xs[i].len);
        check_flip(run, "door/inflight/write", "write", &xs[i], want[i], got, xs[i].len);
    }
    cr_assert_eq(lg_lines_with(run, "\"class\":\"bitflip_inflight\""), NX, "one flip per write, no other");
}

Test(doorflip, a_read_hands_the_caller_one_flipped_bit_and_leaves_the_disk_alone, .timeout = 60, .fini = door_fini) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    static const struct {
        const char *name;
        size_t size;
    } files[] = {{"000007.sst", 3 * PS + 100}, {"000009.log", 2 * PS}, {"MANIFEST-000005", 700}};
    static uint8_t orig[3][4 * PS], buf[2 * PS], now[4 * PS];
    for (size_t i = 0; i < 3; i++) {
        tu_fill(orig[i], files[i].size, 40 + i);
        put_file(dir, files[i].name, orig[i], files[i].size);
    }
    /* A table read across a block boundary, a log read to its end by two
     * unpositioned reads (the second moves less than it asked for), a
     * manifest asked for more than it holds: the bit is among the bytes
     * moved, the rest of the buffer untouched. */
    static const xfer xs[] = {{"000007.sst", PS - 5, 2 * PS},
                              {"000009.log", 0, 3000},
                              {"000009.log", 3000, 2 * PS},
                              {"MANIFEST-000005", 0, 2 * PS}};
    static const size_t file_of[] = {0, 1, 1, 2};
    enum { NX = sizeof xs / sizeof *xs };
    flt_ctx *f = armed(run, dir, 1, 0, 0xf1e2);
    int fds[3];
    for (size_t i = 0; i < 3; i++) {
        char p[4096];
        fds[i] = open(tu_path(p, sizeof p, dir, files[i].name), O_RDONLY);
        cr_assert(fds[i] >= 0);
    }
    for (size_t i = 0; i < NX; i++) {
        size_t k = file_of[i], moved = files[k].size - xs[i].off < xs[i].len ? files[k].size - xs[i].off : xs[i].len;
        memset(buf, 0xa5, sizeof buf);
        ssize_t r = k == 1 ? read(fds[k], buf, xs[i].len) : pread(fds[k], buf, xs[i].len, (off_t)xs[i].off);
        cr_assert_eq(r, (ssize_t)moved, "%s: the read moved what the file holds", xs[i].name);
        check_flip(run, "door/inflight/read", "read", &xs[i], orig[k] + xs[i].off, buf, moved);
        for (size_t b = moved; b < xs[i].len; b++) cr_assert_eq(buf[b], 0xa5, "byte %zu was not read into", b);
    }
    /* A read at the end moves nothing: nothing to flip. */
    cr_assert_eq(read(fds[1], buf, PS), 0);
    cr_assert_eq(pread(fds[2], buf, PS, 700), 0);
    for (size_t i = 0; i < 3; i++) close(fds[i]);
    flt_door_disarm();
    flt_close(f);
    cr_assert_eq(lg_lines_with(run, "\"class\":\"bitflip_inflight\""), NX, "one flip per read that moved bytes");
    for (size_t i = 0; i < 3; i++) {
        disk(dir, files[i].name, 0, now, files[i].size);
        cr_assert_eq(memcmp(now, orig[i], files[i].size), 0, "%s on disk is as written", files[i].name);
    }
}

Test(doorflip, a_file_of_no_kind_is_never_flipped, .timeout = 60, .fini = door_fini) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    static uint8_t want[2 * PS], buf[2 * PS], back[2 * PS];
    char p[4096];
    tu_fill(want, sizeof want, 61);
    memcpy(buf, want, sizeof buf);
    flt_ctx *f = armed(run, dir, 1, 0, 0xf1e3);
    int fd = open(tu_path(p, sizeof p, dir, "LOG"), O_RDWR | O_CREAT, 0644);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, buf, PS), (ssize_t)PS);
    cr_assert_eq(pwrite(fd, buf + PS, PS, PS), (ssize_t)PS);
    cr_assert_eq(pread(fd, back, sizeof back, 0), (ssize_t)sizeof back);
    cr_assert_eq(memcmp(back, want, sizeof back), 0, "the info log reads back as written");
    cr_assert_eq(lseek(fd, 0, SEEK_SET), 0);
    memset(back, 0, sizeof back);
    cr_assert_eq(read(fd, back, sizeof back), (ssize_t)sizeof back);
    cr_assert_eq(memcmp(back, want, sizeof back), 0);
    close(fd);
    /* The class is firing: the same write to a table is flipped. */
    fd = open(tu_path(p, sizeof p, dir, "000011.sst"), O_WRONLY | O_CREAT, 0644);
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, buf, PS), (ssize_t)PS);
    close(fd);
    flt_door_disarm();
    flt_close(f);
    disk(dir, "LOG", 0, back, sizeof back);
    cr_assert_eq(memcmp(back, want, sizeof back), 0, "the info log on disk is as written");
    cr_assert_eq(memcmp(buf, want, sizeof buf), 0, "the caller's buffer is unchanged");
    cr_assert_eq(lg_lines_with(run, "\"class\":\"bitflip_inflight\""), 1, "only the table's write was flipped");
    cr_assert_eq(lg_lines_with(run, "\"file\":\"000011.sst\""), 1);
    cr_assert_eq(lg_lines_with(run, "LOG"), 0);
}

Test(doorflip, at_one_in_zero_nothing_is_flipped, .timeout = 60, .fini = door_fini) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    static uint8_t want[3 * PS], buf[3 * PS], back[3 * PS];
    char p[4096];
    tu_fill(want, sizeof want, 62);
    memcpy(buf, want, sizeof buf);
    /* sync_error on keeps doorio.c's before() on every call: the writes
     * and reads below pass through it and draw the class at odds 0. */
    flt_ctx *f = armed(run, dir, 0, 1, 0xf1e4);
    const char *names[] = {"000013.sst", "000015.log", "MANIFEST-000017"};
    for (size_t i = 0; i < 3; i++) {
        int fd = open(tu_path(p, sizeof p, dir, names[i]), O_RDWR | O_CREAT, 0644);
        cr_assert(fd >= 0);
        cr_assert_eq(write(fd, buf, PS + 11), (ssize_t)(PS + 11));
        cr_assert_eq(pwrite(fd, buf + PS + 11, sizeof buf - PS - 11, PS + 11), (ssize_t)(sizeof buf - PS - 11));
        memset(back, 0, sizeof back);
        cr_assert_eq(pread(fd, back, sizeof back, 0), (ssize_t)sizeof back);
        cr_assert_eq(memcmp(back, want, sizeof back), 0, "%s reads back as written", names[i]);
        close(fd);
    }
    flt_door_disarm();
    flt_close(f);
    for (size_t i = 0; i < 3; i++) {
        disk(dir, names[i], 0, back, sizeof back);
        cr_assert_eq(memcmp(back, want, sizeof back), 0, "%s on disk is as written", names[i]);
    }
    cr_assert_eq(memcmp(buf, want, sizeof buf), 0, "the caller's buffer is unchanged");
    cr_assert_eq(lg_lines_with(run, "\"class\":\"bitflip_inflight\""), 0);
}
