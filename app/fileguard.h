/* fileguard: what the programs do so that no file the user did not name as an
 * output is ever written or deleted.
 *
 * - Identity: every output path is compared with every input path, and with the
 *   other outputs, by the file it names (device and inode after following
 *   symlinks; for a file that does not exist yet, its resolved directory and
 *   name), never by spelling.
 * - One writer per checkpoint: an advisory lock (flock) on OUT.lock, held while
 *   the program runs and released by the kernel if it dies; a second program
 *   aimed at the same checkpoint is refused, naming the holder's pid.
 * - Leftovers: temporary files of an interrupted save (OUT.tmp.XXXXXX, or the
 *   OUT.tmp of older versions) are listed so they can be reported, never removed.
 * - Memory: an estimate is compared with MemAvailable before allocating.
 * Functions return 0 or -1 with one line in err; only main prints. */
#ifndef HEADCOUNT_FILEGUARD_H
#define HEADCOUNT_FILEGUARD_H

#include <stddef.h>

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

/* The lock beside one checkpoint path. */
typedef struct {
    int fd;             /* -1 when not held */
    char path[4200];    /* OUT.lock */
} GuardLock;

/* Takes the lock for checkpoint path out (creating OUT.lock if needed); -1 with
 * the reason when another live process holds it (named by pid and command) or
 * when OUT.lock exists and is not a lock file of ours. */
int guard_lock(GuardLock *lk, const char *out, char *err, size_t errlen);
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
