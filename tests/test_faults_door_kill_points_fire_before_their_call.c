/*
 * test_faults_door_kill_points_fire_before_their_call.c -- the door's
 * kill points (faults.h: kill/door/OP/KIND) for an engine with none of
 * its own: armed with odds 1 in 1 on one point, a program's plain file
 * calls run until the first call of that point's kind on a file of its
 * kind, and the process dies by SIGKILL before that call is issued; the
 * ledger's last line names the point and the file, every other call
 * before it happened, and the kinds come from flt_options.file_kind.
 */
#include <sys/wait.h>

#include "faults_helpers.h"
#include "door.h"

static const char *kind_by_name(const char *rel) {
    if (!strcmp(rel, "t.log")) return "wal";
    if (!strcmp(rel, "MANIFEST")) return "control";
    return NULL; /* "info": none */
}

/* In a child: the door armed with POINT at odds 1 in 1, then a create
 * and write of an info file (no kind), a write and fsync of t.log, a
 * write and fsync of MANIFEST, a rename of MANIFEST to CURRENT.  Returns
 * the child's wait status. */
static int run_child(const char *run, const char *dir, const char *point) {
    pid_t pid = fork();
    cr_assert(pid >= 0);
    if (pid == 0) {
        flt_options fo = fopts(run, dir, 7);
        fo.kill_random_test = 1;
        fo.kill_points = point;
        fo.via_door = 1;
        fo.file_kind = kind_by_name;
        flt_ctx *f = NULL;
        if (flt_open(&fo, &f) != ENG_OK) _exit(10);
        flt_thread_start(f, 0);
        if (flt_door_arm(flt_hooks(f), dir)) _exit(11);
        char p[4096], q[4096];
        const char *names[] = {"info", "t.log", "MANIFEST"};
        for (int i = 0; i < 3; i++) {
            tu_path(p, sizeof p, dir, names[i]);
            int fd = open(p, O_WRONLY | O_CREAT, 0644);
            if (fd < 0 || write(fd, "abcd", 4) != 4) _exit(12);
            if (i && fsync(fd)) _exit(13);
            close(fd);
        }
        tu_path(p, sizeof p, dir, "MANIFEST");
        tu_path(q, sizeof q, dir, "CURRENT");
        if (rename(p, q)) _exit(14);
        _exit(0);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR) {}
    return st;
}

static void last_ledger_line(const char *run, char *out, size_t cap) {
    char p[4096];
    tu_path(p, sizeof p, run, "ledger");
    FILE *f = fopen(p, "r");
    cr_assert(f != NULL, "no ledger in %s", run);
    out[0] = 0;
    char line[1024];
    while (fgets(line, sizeof line, f)) snprintf(out, cap, "%s", line);
    fclose(f);
}

static off_t size_of_file(const char *dir, const char *name) {
    char p[4096];
    tu_path(p, sizeof p, dir, name);
    struct stat sb;
    return stat(p, &sb) == 0 ? sb.st_size : -1;
}

Test(door, each_kill_point_fires_before_its_first_call, .timeout = 120) {
    static const struct {
        const char *point, *file;
        off_t log, manifest, current; /* sizes after the kill (-1: missing) */
    } cases[] = {
        {"kill/door/write/wal", "t.log", 0, -1, -1},       {"kill/door/sync/wal", "t.log", 4, -1, -1},
        {"kill/door/write/control", "MANIFEST", 4, 0, -1}, {"kill/door/sync/control", "MANIFEST", 4, 4, -1},
        {"kill/door/rename", "MANIFEST", 4, 4, -1},        {"kill/door/create", "info", -1, -1, -1},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *run = tu_tmpdir(), *dir = tu_tmpdir();
        int st = run_child(run, dir, cases[i].point);
        cr_assert(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL, "%s: the child was not killed (status %d)",
                  cases[i].point, st);
        char line[1024], want[256];
        last_ledger_line(run, line, sizeof line);
        snprintf(want, sizeof want, "\"point\":\"%s\"", cases[i].point);
        cr_assert(strstr(line, "\"class\":\"kill\"") && strstr(line, want), "%s: ledger says %s", cases[i].point, line);
        snprintf(want, sizeof want, "\"file\":\"%s\"", cases[i].file);
        cr_assert(strstr(line, want), "%s: ledger says %s", cases[i].point, line);
        cr_assert_eq(size_of_file(dir, "t.log"), cases[i].log, "%s: t.log", cases[i].point);
        cr_assert_eq(size_of_file(dir, "MANIFEST"), cases[i].manifest, "%s: MANIFEST", cases[i].point);
        cr_assert_eq(size_of_file(dir, "CURRENT"), cases[i].current, "%s: CURRENT", cases[i].point);
    }
}

Test(door, a_door_kill_point_needs_the_door) {
    /* Listed without via_door: no point of the list can be armed. */
    flt_options fo = fopts(tu_tmpdir(), tu_tmpdir(), 7);
    fo.kill_random_test = 1;
    fo.kill_points = "kill/door/sync/wal";
    flt_ctx *f = NULL;
    cr_assert_neq(flt_open(&fo, &f), ENG_OK);
}
