/*
 * test_faults_door_io_errors_reach_another_engines_calls.c -- for an
 * engine with no fault points of its own (a file_kind in the options, as
 * stress gives RocksDB's and SQLite's), the door fails its plain file
 * calls with the I/O classes (faults/doorio.c): a read inside a file with
 * EIO (door/io/read), a write with EIO or ENOSPC (door/io/write), a
 * rename with EIO (door/io/meta); each in the ledger first, nothing
 * issued.  A read at or past the file's end touches no device and never
 * fails (the door once failed it, and SQLite took the EIO of its header
 * read for a corrupt database); and a file of no kind (an info log) draws
 * nothing.  A descriptor closed behind the door's back and reused for
 * another file is not taken for the one it was (DR3).
 */
#include <sys/syscall.h>

#include "door.h"
#include "faults_helpers.h"

static void door_fini(void) {
    flt_door_disarm();
    cu_fini();
}

/* "data" for the file named "f", NULL (no kind) for the others. */
static const char *kind_of(const char *rel) { return !strcmp(rel, "f") || !strcmp(rel, "g") ? "data" : NULL; }

static flt_ctx *armed(const char *run, const char *dir, int cls) {
    flt_options fo = fopts(run, dir, cu_seed(0xd01));
    fo.one_in[cls] = 1;
    fo.via_door = 1;
    fo.file_kind = kind_of;
    flt_ctx *f = fopen_ok(&fo);
    flt_thread_start(f, 0);
    cr_assert_eq(flt_door_arm(flt_hooks(f), dir), 0);
    return f;
}

Test(doorio, a_read_inside_the_file_fails_and_one_at_its_end_does_not, .timeout = 60, .fini = door_fini) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    static uint8_t buf[PS];
    char path[4096];
    tu_path(path, sizeof path, dir, "f");
    int fd = open(path, O_WRONLY | O_CREAT, 0644); /* before the door */
    cr_assert(fd >= 0);
    tu_fill(buf, PS, 3);
    cr_assert_eq(pwrite(fd, buf, PS, 0), (ssize_t)PS);
    close(fd);
    flt_ctx *f = armed(run, dir, FLT_READ_ERROR);
    fd = open(path, O_RDONLY);
    cr_assert(fd >= 0);
    errno = 0;
    cr_assert_eq(pread(fd, buf, PS, 0), -1);
    cr_assert_eq(errno, EIO);
    cr_assert_eq(pread(fd, buf, PS, PS), 0, "a read at the end returns 0 bytes, not EIO");
    cr_assert_eq(pread(fd, buf, 16, 2 * PS), 0);
    close(fd);
    cr_assert_eq(lg_lines_with(run, "\"point\":\"door/io/read\""), 1);
    cr_assert_eq(lg_lines_with(run, "\"file\":\"f\""), 1);
    flt_close(f);
}

Test(doorio, writes_and_renames_fail_before_anything_is_issued, .timeout = 60, .fini = door_fini) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    static uint8_t buf[PS];
    char path[4096], other[4096], log[4096];
    tu_path(path, sizeof path, dir, "f");
    tu_path(other, sizeof other, dir, "g");
    tu_path(log, sizeof log, dir, "LOG");
    flt_ctx *f = armed(run, dir, FLT_WRITE_ERROR);
    int fd = open(log, O_WRONLY | O_CREAT, 0644); /* no kind: the door lets it be */
    cr_assert(fd >= 0);
    cr_assert_eq(write(fd, "x", 1), 1);
    close(fd);
    fd = open(path, O_WRONLY | O_CREAT, 0644);
    cr_assert(fd < 0 && errno == EIO, "the create of a data file is a meta op: it fails");
    flt_close(f);
    flt_door_disarm();
    fd = open(path, O_WRONLY | O_CREAT, 0644);
    cr_assert(fd >= 0);
    close(fd);
    run = tu_tmpdir();
    f = armed(run, dir, FLT_WRITE_ERROR);
    fd = open(path, O_WRONLY);
    cr_assert(fd >= 0);
    tu_fill(buf, PS, 4);
    errno = 0;
    cr_assert_eq(pwrite(fd, buf, PS, 0), -1);
    cr_assert_eq(errno, EIO);
    close(fd);
    struct stat st;
    cr_assert_eq(stat(path, &st), 0);
    cr_assert_eq(st.st_size, 0, "nothing was issued");
    errno = 0;
    cr_assert_eq(rename(path, other), -1);
    cr_assert_eq(errno, EIO);
    cr_assert_eq(access(path, F_OK), 0);
    cr_assert_eq(lg_lines_with(run, "\"point\":\"door/io/write\""), 1);
    cr_assert_eq(lg_lines_with(run, "\"point\":\"door/io/meta\""), 1);
    cr_assert_eq(lg_lines_with(run, "LOG"), 0);
    flt_close(f);
}

Test(doorio, a_full_disk_fails_a_write_with_enospc, .timeout = 60, .fini = door_fini) {
    const char *run = tu_tmpdir(), *dir = tu_tmpdir();
    static uint8_t buf[PS];
    char path[4096];
    tu_path(path, sizeof path, dir, "f");
    int fd = open(path, O_WRONLY | O_CREAT, 0644);
    cr_assert(fd >= 0);
    close(fd);
    flt_ctx *f = armed(run, dir, FLT_NOSPACE);
    fd = open(path, O_WRONLY);
    cr_assert(fd >= 0);
    errno = 0;
    cr_assert_eq(write(fd, buf, PS), -1);
    cr_assert_eq(errno, ENOSPC);
    close(fd);
    cr_assert_eq(lg_lines_with(run, "\"err\":\"ENOSPC\""), 1);
    flt_close(f);
}

Test(doorio, a_descriptor_closed_behind_the_doors_back_and_reused_is_not_the_file_it_was, .timeout = 60,
     .fini = door_fini) {
    /* glibc's fclose closes without the door seeing it; the number then
     * names another file, and the door, which asks the descriptor's
     * device and inode at every call (DR3), must not fail its writes. */
    const char *run = tu_tmpdir(), *dir = tu_tmpdir(), *elsewhere = tu_tmpdir();
    char path[4096], other[4096];
    tu_path(path, sizeof path, dir, "f");
    tu_path(other, sizeof other, elsewhere, "not-the-database");
    int fd = open(path, O_WRONLY | O_CREAT, 0644); /* before the door: a create would fail */
    cr_assert(fd >= 0);
    close(fd);
    flt_ctx *f = armed(run, dir, FLT_WRITE_ERROR);
    fd = open(path, O_WRONLY);
    cr_assert(fd >= 0);
    errno = 0;
    cr_assert_eq(write(fd, "x", 1), -1, "the database's file is failed");
    cr_assert_eq(errno, EIO);
    cr_assert_eq(syscall(SYS_close, fd), 0);
    int again = (int)syscall(SYS_openat, AT_FDCWD, other, O_WRONLY | O_CREAT, 0644);
    cr_assert_eq(again, fd, "the kernel hands out the lowest free number");
    cr_assert_eq(write(again, "y", 1), 1, "a write of another file under a reused number passes");
    close(again);
    cr_assert_eq(lg_lines_with(run, "\"point\":\"door/io/write\""), 1);
    flt_close(f);
}
