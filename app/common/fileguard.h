/* fileguard: what the programs do so that no file the user did not name as an
 * output is ever written or deleted.
 *
 * - Identity: every output path is compared with every input path, and with the
 *   other outputs, by the file it names (device and inode after following
 *   symlinks; for a file that does not exist yet, its resolved directory and
 *   name), never by spelling. An output that exists must be a regular file: a
 *   FIFO or a device is refused before anything is opened (opening a FIFO for
 *   writing would wait forever for a reader).
 * - Atomic outputs: every file is written whole to a fresh temporary beside it
 *   (PATH.tmp.XXXXXX), each write checked, flushed, fsynced and renamed over
 *   PATH (the file a symlink at PATH points to), so a full disk, `ulimit -f` or
 *   a crash leaves the previous file as it was.
 * - One writer per checkpoint and per log: an advisory lock (flock) on OUT.lock,
 *   held while the program runs and released by the kernel if it dies; a second
 *   program aimed at the same file is refused, naming the holder's pid, and so
 *   is a one-shot output (--dump-val, the explorer) aimed at it.
 * - Leftovers: temporary files of an interrupted save (OUT.tmp.XXXXXX, or the
 *   OUT.tmp of older versions) are listed so they can be reported, never removed.
 * - Memory: an estimate is compared with MemAvailable before allocating.
 * Functions return 0 or -1 with one line in err; only main prints. */
#ifndef HEADCOUNT_FILEGUARD_H
#define HEADCOUNT_FILEGUARD_H

#include <signal.h>
#include <stddef.h>
#include <stdio.h>

/* One path a program reads or writes, with the flag that named it. */
typedef struct {
    const char *flag; /* "--data", "--out", ... */
    const char *path; /* NULL entries are skipped */
    int output;       /* 1 when the program writes it */
    const char *may_be; /* flag of an input this output may legitimately be (the
                         * checkpoint --resume continues into), or NULL */
} GuardPath;

/* 0 when no output names the same file as an input or another output; else -1
 * with "--log X is the same file as --data Y" in err. */
int guard_check_paths(const GuardPath *paths, int n, char *err, size_t errlen);

/* 1 when a and b name the same file (existing or not), 0 otherwise. */
int guard_same_file(const char *a, const char *b);

/* The path a write to path replaces: path itself, or where the chain of symlinks
 * at path ends (a dangling link: the file it would create). -1 when too long. */
int guard_resolve(const char *path, char *buf, size_t len);

/* 0 when path may be written as an output: missing, or a regular file; else -1
 * with "FLAG PATH: not a regular file ..." or "... is a directory" in err. */
int guard_check_output(const char *flag, const char *path, char *err, size_t errlen);

/* A stream writing to fd (which it closes) that keeps the first failed write's
 * errno in *error, so that a message can say why (EFBIG, ENOSPC); NULL when out
 * of memory. */
FILE *guard_fdopen(int fd, int *error);

/* Flushes, fsyncs and closes such a stream f on descriptor fd: 0, or the errno of
 * the first failure (the stream's kept *error where it has one, else EIO). */
int guard_stream_close(FILE *f, int fd, const int *error);

/* An output written whole to a temporary and renamed into place on commit. */
typedef struct {
    FILE *f;          /* the temporary, open for writing; NULL when not open */
    int fd, error;    /* its descriptor; the first failed write's errno, or 0 */
    char path[4200];  /* the file it replaces (symlinks followed) */
    char tmp[4300];   /* PATH.tmp.XXXXXX */
} GuardFile;

/* Creates the temporary beside path (symlinks followed); -1 with the reason. */
int guard_file_open(GuardFile *g, const char *path, char *err, size_t errlen);
/* Checks every write, flushes, fsyncs and closes the temporary; on failure it
 * is removed, -1 with the reason. Lets several files be completed before any is
 * renamed into place. */
int guard_file_finish(GuardFile *g, char *err, size_t errlen);
/* guard_file_finish (when not done yet), then renames the temporary over the
 * path. On failure the temporary is removed and the previous file is untouched;
 * -1 with the reason (e.g. "File too large", "No space left on device"). */
int guard_file_commit(GuardFile *g, char *err, size_t errlen);
/* Closes and removes the temporary; safe on a file not open. */
void guard_file_abort(GuardFile *g);

/* SIGINT, SIGTERM, SIGHUP and SIGQUIT are held while a program writes and commits
 * its outputs, so that none is cut short: a signal that arrives meanwhile is
 * recorded, and raised again (with the actions restored) on release. */
#define GUARD_HELD_SIGNALS 4
typedef struct {
    struct sigaction old[GUARD_HELD_SIGNALS];
} GuardSignals;
void guard_hold_signals(GuardSignals *h);
void guard_release_signals(GuardSignals *h);

/* The lock beside one checkpoint path. */
typedef struct {
    int fd;             /* -1 when not held */
    char path[4200];    /* OUT.lock */
} GuardLock;

/* Takes the lock for the output path out, named by flag ("--out", "--log"),
 * creating OUT.lock if needed, beside the file a symlink at out points to, so
 * every spelling of one file shares one lock; -1 with the reason when another
 * live process holds it (named by pid and command) or when OUT.lock exists and
 * is not a lock file of ours. A run locks its checkpoints and its log alike, so
 * no file is one run's checkpoint and another's log. */
int guard_lock(GuardLock *lk, const char *flag, const char *out, char *err, size_t errlen);
/* 0 when no running program holds the lock of output path (or there is none);
 * else -1 with "FLAG PATH is being written by another running process (pid N:
 * ...)". For outputs written once (--dump-val, the explorer's files), which must
 * not replace a checkpoint or log a running ./train holds. Creates nothing. */
int guard_check_unlocked(const char *flag, const char *path, char *err, size_t errlen);
/* Removes OUT.lock and releases the lock; safe on a lock not taken. */
void guard_unlock(GuardLock *lk);
/* The lock file's path while held, for removal from a signal handler (unlink is
 * async-signal-safe), or NULL. */
const char *guard_lock_path(const GuardLock *lk);

/* Names (one per line, at most len bytes) of leftover temporaries of out in its
 * directory: OUT.tmp and OUT.tmp.*; returns how many. */
int guard_leftovers(const char *out, char *list, size_t len);

/* Bytes available for new allocations (MemAvailable), or 0 when unknown. */
unsigned long long guard_mem_available(void);

/* Writes s to buf so that a POSIX shell reads it back as one word. */
void guard_shell_quote(const char *s, char *buf, size_t len);

#endif
