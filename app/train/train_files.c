/* train_files: the files a ./train run writes, claimed before anything is
 * written (see train_run.h): no output is an input or another output, the
 * checkpoints and the log are locked against a second run, and the log is
 * opened (a fresh one as a temporary renamed into place, a resumed one mended
 * and appended to). Checkpoint saves are train_loop.c's. */
#include "app/train/train_run.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app/common/cli.h"
#include "app/common/fileguard.h"

/* The --keep-best path: x.ckpt -> x.best.ckpt, anything else -> anything.best;
 * 0 when it does not fit in len bytes. */
static int best_path(const char *out, char *buf, size_t len)
{
    size_t n = strlen(out);
    int w;
    if (n > 5 && strcmp(out + n - 5, ".ckpt") == 0)
        w = snprintf(buf, len, "%.*s.best.ckpt", (int)(n - 5), out);
    else
        w = snprintf(buf, len, "%s.best", out);
    return w >= 0 && (size_t)w < len;
}

void run_name_best(Run *r)
{
    if (r->o.keep_best && !best_path(r->o.out, r->files.best, sizeof r->files.best))
        cli_usage_error("--keep-best: the path of the best checkpoint beside --out is too long");
}

/* Before anything is written: no output is an input or another output, the
 * checkpoints can be written and are locked against a second trainer, and the
 * leftovers of interrupted saves are reported (never removed). */
void run_claim_outputs(Run *r)
{
    Options *o = &r->o;
    char err[5000];
    /* A symlink at --out: the checkpoint is the file it points to, written
     * (and locked) there, so every spelling of it shares one lock. */
    if (guard_resolve(o->out, r->files.out, sizeof r->files.out))
        cli_usage_error("--out: the path is too long");
    o->out = r->files.out;
    run_name_best(r);
    if (!run_lead(r))
        return;
    GuardPath paths[] = {
        {"--data", o->data, 0, NULL},
        {"--resume", o->resume, 0, NULL},
        {"--out", o->out, 1, "--resume"},
        {"--keep-best", r->files.best[0] ? r->files.best : NULL, 1, NULL},
        {"--log", o->log, 1, NULL},
    };
    if (guard_check_paths(paths, (int)(sizeof paths / sizeof paths[0]), err, sizeof err))
        cli_usage_error("%s", err);
    if (ckpt_check_writable(o->out, err, sizeof err))
        cli_fail("--out %s", err);
    if (r->files.best[0] && ckpt_check_writable(r->files.best, err, sizeof err))
        cli_fail("--keep-best %s", err);
    if (guard_lock(&r->files.lock, "--out", o->out, err, sizeof err))
        cli_fail("%s", err);
    r->stop.lock_paths[0] = guard_lock_path(&r->files.lock);
    if (r->files.best[0] &&
        guard_lock(&r->files.best_lock, "--keep-best", r->files.best, err, sizeof err))
        cli_fail("%s", err);
    r->stop.lock_paths[1] = guard_lock_path(&r->files.best_lock);
    /* The log is locked like a checkpoint: a second run writing it (a fresh
     * one would replace it, a resumed one interleave with it) is refused. */
    if (o->log && guard_lock(&r->files.log_lock, "--log", o->log, err, sizeof err))
        cli_fail("%s", err);
    r->stop.lock_paths[2] = guard_lock_path(&r->files.log_lock);
    for (int k = 0; k < 2; k++) {
        const char *path = k ? r->files.best : o->out;
        if (!path[0])
            continue;
        char list[2000];
        int n = guard_leftovers(path, list, sizeof list);
        if (n)
            fprintf(stderr, "train: note: %d leftover temporary file%s of an interrupted save "
                    "beside %s (not removed; delete %s when no run writes there):\n%s\n", n,
                    n > 1 ? "s" : "", path, n > 1 ? "them" : "it", list);
    }
}

/* A log a resumed run appends to must end in a complete line. A run stopped in
 * the middle of a write (killed, or by a program older than the checked writes)
 * can leave part of a record after the last newline: that part, and only when
 * it is the start of one of our records, is cut with a note; anything else
 * there is refused, so the run never glues its records onto a broken line nor
 * cuts what is not ours. Returns the log's length, ready to append to. */
static off_t mend_log_tail(const Run *r, int fd, off_t size)
{
    static const char head[] = "{\"type\":\"";
    char buf[4096];
    off_t end = size; /* the bytes at [end, size) follow the last newline */
    while (end > 0) {
        size_t want = end < (off_t)sizeof buf ? (size_t)end : sizeof buf;
        ssize_t n = pread(fd, buf, want, end - (off_t)want);
        if (n != (ssize_t)want)
            cli_fail("--log %s: cannot read its end: %s", r->o.log,
                     n < 0 ? strerror(errno) : "the file shrank");
        size_t k = want;
        while (k > 0 && buf[k - 1] != '\n')
            k--;
        end -= (off_t)(want - k);
        if (k > 0)
            break;
    }
    if (end == size)
        return size;
    size_t tail = (size_t)(size - end), look = tail < sizeof head - 1 ? tail : sizeof head - 1;
    if (pread(fd, buf, look, end) != (ssize_t)look || memcmp(buf, head, look) != 0)
        cli_fail("--log %s: does not end in a complete line (%zu bytes after its last "
                 "newline, not the start of a record), so it is not a log this run can append "
                 "to; nothing was written", r->o.log, tail);
    if (ftruncate(fd, end) != 0)
        cli_fail("--log %s: cannot cut its incomplete last record: %s", r->o.log, strerror(errno));
    fprintf(stderr, "train: note: --log %s ended in an incomplete record (a run stopped while "
            "writing it); cut its %zu bytes after the last complete line before appending\n",
            r->o.log, tail);
    return end;
}

/* A resumed run appends to its log (mended first: mend_log_tail); a fresh one
 * writes a temporary beside it, renamed over the log once its first record is
 * written (place_log), so a log that cannot be written leaves an earlier one as
 * it was. */
void run_open_log(Run *r)
{
    if (!r->o.log || !run_lead(r))
        return;
    int fd;
    off_t end = 0;
    if (r->o.resume) {
        /* O_NONBLOCK: a FIFO put there since the check must not block the open. */
        fd = open(r->o.log, O_RDWR | O_APPEND | O_CREAT | O_NONBLOCK | O_CLOEXEC, 0666);
        struct stat st;
        if (fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode))) {
            close(fd);
            cli_fail("--log %s: not a regular file (a FIFO, device or socket)", r->o.log);
        }
        if (fd >= 0) {
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
            end = mend_log_tail(r, fd, st.st_size);
        }
    } else {
        char real[4200];
        if (guard_resolve(r->o.log, real, sizeof real))
            cli_fail("--log %s: the path is too long", r->o.log);
        fd = ckpt_tmp_create(real, r->files.log_tmp, sizeof r->files.log_tmp);
        if (fd < 0)
            r->files.log_tmp[0] = '\0';
    }
    if (fd < 0)
        cli_fail("--log %s: cannot open for writing: %s", r->o.log,
                 errno == ENOENT ? "directory does not exist" : strerror(errno));
    r->files.log_fd = fd;
    r->files.log_end = end;
}

/* A fresh log's first record is written: fsync it and rename it into place. */
void run_place_log(Run *r)
{
    if (r->files.log_fd < 0 || !r->files.log_tmp[0])
        return;
    char real[4200];
    int bad = r->files.log_errno;
    if (!bad && fsync(r->files.log_fd) != 0)
        bad = errno ? errno : EIO;
    if (!bad && (guard_resolve(r->o.log, real, sizeof real) || rename(r->files.log_tmp, real) != 0))
        bad = errno ? errno : ENAMETOOLONG;
    if (bad) {
        unlink(r->files.log_tmp); /* ours: created by open_log */
        cli_fail("--log %s: write failed: %s; nothing was written there (and nothing trained)",
                 r->o.log, strerror(bad));
    }
    r->files.log_tmp[0] = '\0';
}
