/*
 * test_faults_door_short_transfers_return_their_count.c -- short_io
 * through the door for an engine with no fault points of its own (a
 * file_kind in the options, as stress gives RocksDB's and SQLite's): a
 * read or write of a database file moves only part of its range and the
 * call returns that count, as a kernel may (faults/doorio.c,
 * door/io/short); the rest is not transferred until the caller asks
 * again, and a caller that loops as SQLite's unixWrite and RocksDB's
 * PosixWrite do ends with every byte in place.  A write the door cut is
 * not a torn write: it is not reported complete.  An unpositioned call
 * advances the descriptor's offset by the count moved; a file of no kind
 * is never cut.
 */
#include "door.h"
#include "faults_helpers.h"

static void door_fini(void) {
    flt_door_disarm();
    cu_fini();
}

/* "data" for the file named "f", NULL (no kind) for the others. */
static const char *kind_of(const char *rel) { return !strcmp(rel, "f") ? "data" : NULL; }

static flt_ctx *armed(const char *run, const char *dir, uint64_t one_in) {
    flt_options fo = fopts(run, dir, cu_seed(0x5407));
    fo.one_in[FLT_SHORT_IO] = one_in;
    fo.via_door = 1;
    fo.file_kind = kind_of;
    flt_ctx *f = fopen_ok(&fo);
    flt_thread_start(f, 0);
    cr_assert_eq(flt_door_arm(flt_hooks(f), dir), 0);
    return f;
}

Test(doorshort, a_cut_write_returns_the_bytes_it_moved_and_a_loop_finishes_it, .timeout = 60, .fini = door_fini) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    static uint8_t buf[4 * PS], back[4 * PS];
    char path[4096];
    tu_path(path, sizeof path, dir, "f");
    flt_ctx *f = armed(run, dir, 1);
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    cr_assert(fd >= 0);
    tu_fill(buf, sizeof buf, 11);
    ssize_t first = pwrite(fd, buf, sizeof buf, 0);
    cr_assert(first > 0 && (size_t)first < sizeof buf, "the write returned %zd of %zu bytes", first, sizeof buf);
    struct stat st;
    cr_assert_eq(fstat(fd, &st), 0);
    cr_assert_eq(st.st_size, first, "the rest was not transferred");
    /* The engines' loop: ask again for what is left. */
    size_t done = (size_t)first, cuts = 1;
    while (done < sizeof buf) {
        ssize_t w = pwrite(fd, buf + done, sizeof buf - done, (off_t)done);
        cr_assert(w > 0, "a later part moved nothing");
        cuts += (size_t)w < sizeof buf - done;
        done += (size_t)w;
    }
    close(fd);
    cr_assert_eq(lg_lines_with(run, "\"point\":\"door/io/short\""), cuts, "one line per cut");
    cr_assert_eq(lg_lines_with(run, "\"class\":\"short_io\""), cuts);
    flt_close(f);
    flt_door_disarm();
    fd = open(path, O_RDONLY);
    cr_assert_eq(pread(fd, back, sizeof back, 0), (ssize_t)sizeof back);
    close(fd);
    cr_assert_eq(memcmp(back, buf, sizeof buf), 0, "every byte in place after the loop");
}

Test(doorshort, a_cut_read_returns_the_bytes_it_read, .timeout = 60, .fini = door_fini) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    static uint8_t buf[2 * PS], back[2 * PS];
    char path[4096];
    tu_path(path, sizeof path, dir, "f");
    int fd = open(path, O_WRONLY | O_CREAT, 0644); /* before the door */
    cr_assert(fd >= 0);
    tu_fill(buf, sizeof buf, 12);
    cr_assert_eq(pwrite(fd, buf, sizeof buf, 0), (ssize_t)sizeof buf);
    close(fd);
    flt_ctx *f = armed(run, dir, 1);
    fd = open(path, O_RDONLY);
    memset(back, 0xa5, sizeof back);
    ssize_t r = pread(fd, back, sizeof back, 0);
    cr_assert(r > 0 && (size_t)r < sizeof back, "the read returned %zd of %zu bytes", r, sizeof back);
    cr_assert_eq(memcmp(back, buf, (size_t)r), 0, "the bytes it returned are the file's");
    cr_assert_eq(back[r], 0xa5, "nothing past the count was read");
    cr_assert_eq(pread(fd, back, 16, sizeof buf), 0, "a read at the end is not cut: it moves nothing");
    close(fd);
    cr_assert_eq(lg_lines_with(run, "\"point\":\"door/io/short\""), 1);
    flt_close(f);
}

Test(doorshort, an_unpositioned_write_moves_the_offset_by_its_count, .timeout = 60, .fini = door_fini) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    static uint8_t buf[PS], back[2 * PS];
    char path[4096];
    tu_path(path, sizeof path, dir, "f");
    flt_ctx *f = armed(run, dir, 1);
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    cr_assert(fd >= 0);
    tu_fill(buf, sizeof buf, 13);
    ssize_t a = write(fd, buf, sizeof buf);
    cr_assert(a > 0 && (size_t)a < sizeof buf);
    cr_assert_eq(lseek(fd, 0, SEEK_CUR), a, "the offset moved by the count returned");
    ssize_t b = write(fd, buf + a, sizeof buf - (size_t)a);
    cr_assert(b > 0);
    close(fd);
    flt_close(f);
    flt_door_disarm();
    fd = open(path, O_RDONLY);
    cr_assert_eq(pread(fd, back, sizeof back, 0), a + b);
    close(fd);
    cr_assert_eq(memcmp(back, buf, (size_t)(a + b)), 0, "the second call went on where the first stopped");
}

Test(doorshort, a_file_of_no_kind_is_never_cut, .timeout = 60, .fini = door_fini) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    static uint8_t buf[PS];
    char path[4096];
    tu_path(path, sizeof path, dir, "LOG");
    flt_ctx *f = armed(run, dir, 1);
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    cr_assert(fd >= 0);
    for (int i = 0; i < 20; i++) cr_assert_eq(write(fd, buf, sizeof buf), (ssize_t)sizeof buf);
    close(fd);
    cr_assert_eq(lg_lines_with(run, "short_io"), 0);
    flt_close(f);
}
