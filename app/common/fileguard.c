/* fileguard: identity checks, the checkpoint lock, leftovers, memory (see fileguard.h). */
#define _GNU_SOURCE /* fopencookie */
#include "app/common/fileguard.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trainer/ckpt.h"
#include "util/errbuf.h"
#include "util/sibling.h"

#define LOCK_MAGIC "headcount lock\n"

/* What a path names: an existing file by device and inode, a file that does not
 * exist yet by its resolved directory and name. */
typedef struct {
    int exists;
    dev_t dev;
    ino_t ino;
    char canon[2 * PATH_MAX + 2];
} FileKey;

/* Splits path into its directory (or ".") and last component. */
static void split_path(const char *path, char *dir, size_t dlen, const char **base)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, dlen, ".");
        *base = path;
    } else if (slash == path) {
        snprintf(dir, dlen, "/");
        *base = slash + 1;
    } else {
        snprintf(dir, dlen, "%.*s", (int)(slash - path), path);
        *base = slash + 1;
    }
}

int guard_resolve(const char *path, char *buf, size_t len)
{
    char cur[PATH_MAX], dir[PATH_MAX];
    const char *base;
    if ((size_t)snprintf(cur, sizeof cur, "%s", path) >= sizeof cur)
        return -1;
    for (int hops = 0; hops < 40; hops++) {
        struct stat lst;
        char target[PATH_MAX];
        if (lstat(cur, &lst) != 0 || !S_ISLNK(lst.st_mode))
            break;
        ssize_t n = readlink(cur, target, sizeof target - 1);
        if (n < 0)
            break;
        target[n] = '\0';
        if (target[0] == '/') {
            snprintf(cur, sizeof cur, "%s", target);
        } else {
            split_path(cur, dir, sizeof dir, &base);
            char joined[2 * PATH_MAX + 2];
            snprintf(joined, sizeof joined, "%s/%s", dir, target);
            if ((size_t)snprintf(cur, sizeof cur, "%s", joined) >= sizeof cur)
                return -1;
        }
    }
    return (size_t)snprintf(buf, len, "%s", cur) >= len ? -1 : 0;
}

static void key_of(const char *path, FileKey *k)
{
    struct stat st;
    memset(k, 0, sizeof *k);
    if (stat(path, &st) == 0) {
        k->exists = 1;
        k->dev = st.st_dev;
        k->ino = st.st_ino;
        return;
    }
    /* Not there: follow a dangling symlink to the file it would create. */
    char cur[PATH_MAX], dir[PATH_MAX];
    const char *base;
    if (guard_resolve(path, cur, sizeof cur))
        snprintf(cur, sizeof cur, "%.*s", PATH_MAX - 1, path);
    split_path(cur, dir, sizeof dir, &base);
    char real[PATH_MAX];
    if (!realpath(dir, real) ||
        (size_t)snprintf(k->canon, sizeof k->canon, "%s/%s", real, base) >= sizeof k->canon)
        snprintf(k->canon, sizeof k->canon, "%s", cur);
}

static int same_key(const FileKey *a, const FileKey *b)
{
    if (a->exists != b->exists)
        return 0;
    if (a->exists)
        return a->dev == b->dev && a->ino == b->ino;
    return strcmp(a->canon, b->canon) == 0;
}

int guard_same_file(const char *a, const char *b)
{
    FileKey ka, kb;
    key_of(a, &ka);
    key_of(b, &kb);
    return same_key(&ka, &kb);
}

/* Whether output o may be the same file as the entry x. */
static int allowed(const GuardPath *o, const GuardPath *x)
{
    return o->output && o->may_be && strcmp(o->may_be, x->flag) == 0;
}

int guard_check_output(const char *flag, const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0)
        return 0;
    if (S_ISDIR(st.st_mode))
        return err_set(err, errlen, "%s %s: is a directory, expected a file path", flag, path);
    if (!S_ISREG(st.st_mode))
        return err_set(err, errlen, "%s %s: not a regular file (a FIFO, device or socket); "
                       "outputs are written to a temporary beside the file and renamed over "
                       "it, so give the path of a plain file", flag, path);
    return 0;
}

int guard_check_paths(const GuardPath *p, int n, char *err, size_t errlen)
{
    for (int i = 0; i < n; i++)
        if (p[i].path && p[i].output && guard_check_output(p[i].flag, p[i].path, err, errlen))
            return -1;
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (!p[i].path || !p[j].path || !(p[i].output || p[j].output))
                continue;
            if (allowed(&p[i], &p[j]) || allowed(&p[j], &p[i]))
                continue;
            if (!guard_same_file(p[i].path, p[j].path))
                continue;
            /* Name the output first: it is the one that would do the damage. */
            const GuardPath *o = p[i].output ? &p[i] : &p[j], *x = o == &p[i] ? &p[j] : &p[i];
            return err_set(err, errlen, "%s %s is the same file as %s %s: %s; nothing was "
                           "written", o->flag, o->path, x->flag, x->path,
                           x->output ? "two outputs cannot share a file"
                                     : "an output must not overwrite an input");
        }
    return 0;
}

/* "pid N (command line)" of the process named in a lock file's text, or "". */
static void describe_holder(const char *text, char *buf, size_t len)
{
    buf[0] = '\0';
    const char *at = strstr(text, "pid ");
    long pid = at ? strtol(at + 4, NULL, 10) : 0;
    if (pid <= 0)
        return;
    char path[64], cmd[256] = "";
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    FILE *f = fopen(path, "rb");
    if (f) {
        size_t n = fread(cmd, 1, sizeof cmd - 1, f);
        fclose(f);
        for (size_t i = 0; i < n; i++)
            if (cmd[i] == '\0')
                cmd[i] = ' ';
        cmd[n] = '\0';
        while (n > 0 && cmd[n - 1] == ' ')
            cmd[--n] = '\0';
    }
    if (cmd[0])
        snprintf(buf, len, " (pid %ld: %s)", pid, cmd);
    else
        snprintf(buf, len, " (pid %ld)", pid);
}

/* OUT.lock beside the file a symlink at out points to; -1 when too long. */
static int lock_path_of(const char *out, char *buf, size_t len)
{
    char real[PATH_MAX];
    if (guard_resolve(out, real, sizeof real))
        return -1;
    return sibling_path(real, ".lock", buf, len);
}

/* "OUT is being written by another running process (pid N: cmd); ..." from the
 * lock file open on fd. */
static int busy(int fd, const char *flag, const char *out, char *err, size_t errlen)
{
    char text[256], who[400];
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    describe_holder(text, who, sizeof who);
    return err_set(err, errlen, "%s %s is being written by another running process%s; wait "
                   "for it to finish or choose another %s", flag, out, who, flag);
}

int guard_check_unlocked(const char *flag, const char *path, char *err, size_t errlen)
{
    char lock[PATH_MAX + 8];
    if (lock_path_of(path, lock, sizeof lock))
        return err_set(err, errlen, "%s %s: path too long", flag, path);
    int fd = open(lock, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0; /* no lock file: nobody holds it */
    struct stat st;
    int rc = 0;
    /* A shared lock is granted unless a writer holds the exclusive one. */
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && flock(fd, LOCK_SH | LOCK_NB) != 0 &&
        errno == EWOULDBLOCK)
        rc = busy(fd, flag, path, err, errlen);
    close(fd); /* also releases the shared lock */
    return rc;
}

int guard_lock(GuardLock *lk, const char *flag, const char *out, char *err, size_t errlen)
{
    lk->fd = -1;
    if (lock_path_of(out, lk->path, sizeof lk->path))
        return err_set(err, errlen, "%s %s: path too long", flag, out);
    for (int attempt = 0; attempt < 8; attempt++) {
        int created = 1;
        int fd = open(lk->path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno == EEXIST) {
            created = 0;
            fd = open(lk->path, O_RDWR | O_NOFOLLOW | O_CLOEXEC);
            if (fd < 0 && errno == ENOENT)
                continue; /* removed by its holder meanwhile */
        }
        if (fd < 0)
            return err_set(err, errlen, "%s: cannot open the lock file: %s", lk->path,
                           errno == ELOOP ? "it is a symlink" : strerror(errno));
        char text[256] = "";
        if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
            int saved = errno;
            if (saved == EWOULDBLOCK)
                busy(fd, flag, out, err, errlen);
            else
                err_set(err, errlen, "%s: cannot lock: %s", lk->path, strerror(saved));
            close(fd);
            return -1;
        }
        /* The holder we raced with may have removed the file before we locked it:
         * the lock counts only on the inode still at the path. */
        struct stat a, b;
        if (fstat(fd, &a) != 0 || stat(lk->path, &b) != 0 || a.st_dev != b.st_dev ||
            a.st_ino != b.st_ino) {
            close(fd);
            continue;
        }
        /* A file this program did not create must be one of its lock files (a
         * run that was killed leaves one behind); anything else is not ours. */
        ssize_t n = pread(fd, text, sizeof text - 1, 0);
        text[n > 0 ? n : 0] = '\0';
        if (!created && strncmp(text, LOCK_MAGIC, strlen(LOCK_MAGIC)) != 0) {
            close(fd);
            return err_set(err, errlen, "%s exists and is not a headcount lock file; %s %s "
                           "is locked through it, so move it away or choose another %s",
                           lk->path, flag, out, flag);
        }
        char rec[64];
        int len = snprintf(rec, sizeof rec, LOCK_MAGIC "pid %ld\n", (long)getpid());
        if (ftruncate(fd, 0) != 0 || pwrite(fd, rec, (size_t)len, 0) != len) {
            int saved = errno;
            close(fd);
            if (created)
                unlink(lk->path);
            return err_set(err, errlen, "%s: cannot write the lock file: %s", lk->path,
                           strerror(saved));
        }
        lk->fd = fd;
        return 0;
    }
    return err_set(err, errlen, "%s: the lock file keeps changing; is another run starting?",
                   lk->path);
}

void guard_unlock(GuardLock *lk)
{
    if (lk->fd < 0)
        return;
    struct stat a, b;
    /* Remove it while still holding it, and only if it is still ours. */
    if (fstat(lk->fd, &a) == 0 && stat(lk->path, &b) == 0 && a.st_dev == b.st_dev &&
        a.st_ino == b.st_ino)
        unlink(lk->path);
    close(lk->fd);
    lk->fd = -1;
}

const char *guard_lock_path(const GuardLock *lk)
{
    return lk->fd >= 0 ? lk->path : NULL;
}

int guard_leftovers(const char *out, char *list, size_t len)
{
    char dir[PATH_MAX], prefix[PATH_MAX];
    const char *base;
    split_path(out, dir, sizeof dir, &base);
    snprintf(prefix, sizeof prefix, "%s.tmp", base);
    size_t k = strlen(prefix);
    /* A long name's temporaries are named by sibling_path: NAME~HASH.tmp.XXXXXX. */
    char cut[PATH_MAX] = "";
    size_t kc = 0;
    if (sibling_path(base, ".tmp.XXXXXX", cut, sizeof cut) == 0 &&
        strncmp(cut, prefix, k) != 0) {
        kc = strlen(cut) - 7; /* without ".XXXXXX" */
        cut[kc] = '\0';
    }
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    int count = 0;
    size_t used = 0;
    if (len)
        list[0] = '\0';
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        int ours = strncmp(e->d_name, prefix, k) == 0 &&
                   (e->d_name[k] == '\0' || e->d_name[k] == '.');
        ours |= kc && strncmp(e->d_name, cut, kc) == 0 && e->d_name[kc] == '.';
        if (!ours)
            continue;
        count++;
        if (used < len) {
            int w = snprintf(list + used, len - used, "%s%s%s%s", used ? "\n" : "",
                             strcmp(dir, ".") ? dir : "", strcmp(dir, ".") ? "/" : "", e->d_name);
            used += w > 0 ? (size_t)w : 0;
        }
    }
    closedir(d);
    return count;
}

/* The stream of guard_fdopen: writes go straight to fd, and the first failure's
 * errno is kept in *error (stdio keeps only a flag, and errno is overwritten by
 * the calls after it). */
typedef struct {
    int fd;
    int *error;
} Sink;

static ssize_t sink_write(void *cookie, const char *buf, size_t n)
{
    Sink *k = cookie;
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(k->fd, buf + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (!*k->error)
                *k->error = w < 0 ? errno : EIO;
            return done ? (ssize_t)done : -1;
        }
        done += (size_t)w;
    }
    return (ssize_t)n;
}

static int sink_close(void *cookie)
{
    Sink *k = cookie;
    int rc = close(k->fd);
    if (rc != 0 && !*k->error)
        *k->error = errno;
    free(k);
    return rc;
}

FILE *guard_fdopen(int fd, int *error)
{
    Sink *k = malloc(sizeof *k);
    if (!k)
        return NULL;
    *k = (Sink){fd, error};
    *error = 0;
    cookie_io_functions_t io = {.read = NULL, .write = sink_write, .seek = NULL,
                                .close = sink_close};
    FILE *f = fopencookie(k, "w", io);
    if (!f)
        free(k);
    return f;
}

int guard_file_open(GuardFile *g, const char *path, char *err, size_t errlen)
{
    g->f = NULL;
    g->tmp[0] = '\0';
    if (guard_resolve(path, g->path, sizeof g->path))
        return err_set(err, errlen, "%s: path too long", path);
    int fd = ckpt_tmp_create(g->path, g->tmp, sizeof g->tmp);
    if (fd < 0) {
        int saved = errno;
        g->tmp[0] = '\0';
        return err_set(err, errlen, "%s: cannot write there: %s", path,
                       saved == ENOENT ? "directory does not exist" : strerror(saved));
    }
    g->fd = fd;
    g->f = guard_fdopen(fd, &g->error);
    if (!g->f) {
        int saved = errno;
        close(fd);
        unlink(g->tmp); /* ours: created above */
        g->tmp[0] = '\0';
        return err_set(err, errlen, "%s: cannot write: %s", path, strerror(saved));
    }
    return 0;
}

/* fsync of the directory holding path, so that a rename into it is durable. */
static void sync_dir(const char *path)
{
    char dir[PATH_MAX];
    const char *base;
    split_path(path, dir, sizeof dir, &base);
    int fd = open(dir, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        fsync(fd);
        close(fd);
    }
}

int guard_stream_close(FILE *f, int fd, const int *error)
{
    int bad = fflush(f) != 0 || ferror(f) ? (*error ? *error : EIO) : 0;
    if (!bad && fsync(fd) != 0)
        bad = errno;
    if (fclose(f) != 0 && !bad)
        bad = *error ? *error : EIO;
    return bad;
}

/* The first failure (an errno) in writing, flushing, fsyncing or closing g. */
static int finish(GuardFile *g)
{
    int bad = guard_stream_close(g->f, g->fd, &g->error);
    g->f = NULL;
    return bad;
}

static int failed(GuardFile *g, int bad, char *err, size_t errlen)
{
    guard_file_abort(g);
    return err_set(err, errlen, "%s: write failed: %s; the previous file (if any) is untouched",
                   g->path, strerror(bad));
}

int guard_file_finish(GuardFile *g, char *err, size_t errlen)
{
    if (!g->f)
        return 0;
    int bad = finish(g);
    return bad ? failed(g, bad, err, errlen) : 0;
}

int guard_file_commit(GuardFile *g, char *err, size_t errlen)
{
    if (!g->tmp[0])
        return err_set(err, errlen, "%s: no temporary to commit", g->path);
    if (guard_file_finish(g, err, errlen))
        return -1;
    if (rename(g->tmp, g->path) != 0)
        return failed(g, errno, err, errlen);
    g->tmp[0] = '\0';
    sync_dir(g->path);
    return 0;
}

void guard_file_abort(GuardFile *g)
{
    if (g->f)
        fclose(g->f);
    g->f = NULL;
    if (g->tmp[0])
        unlink(g->tmp); /* ours: created by guard_file_open */
    g->tmp[0] = '\0';
}

static const int HELD[GUARD_HELD_SIGNALS] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

/* The first signal that arrived while held (a handler can only reach a static). */
static volatile sig_atomic_t held_signal = 0;

static void hold_handler(int sig)
{
    if (!held_signal)
        held_signal = sig;
}

/* A handler, not a blocked mask: the mask is per thread, and a signal sent to the
 * process goes to any thread that does not block it (an OpenMP worker). */
void guard_hold_signals(GuardSignals *h)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = hold_handler;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESTART;
    held_signal = 0;
    for (int k = 0; k < GUARD_HELD_SIGNALS; k++)
        sigaction(HELD[k], &sa, &h->old[k]);
}

void guard_release_signals(GuardSignals *h)
{
    for (int k = 0; k < GUARD_HELD_SIGNALS; k++)
        sigaction(HELD[k], &h->old[k], NULL);
    if (held_signal)
        raise(held_signal);
}

unsigned long long guard_mem_available(void)
{
    FILE *f = fopen("/proc/meminfo", "r");
    if (!f)
        return 0;
    char line[256];
    unsigned long long kb = 0;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1)
            break;
    fclose(f);
    return kb * 1024ULL;
}

void guard_shell_quote(const char *s, char *buf, size_t len)
{
    static const char safe[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                               "0123456789_./:=,+-@%";
    if (*s && strspn(s, safe) == strlen(s) && s[0] != '-') {
        snprintf(buf, len, "%s", s);
        return;
    }
    size_t used = 0;
    if (len < 3) {
        if (len)
            buf[0] = '\0';
        return;
    }
    buf[used++] = '\'';
    for (; *s && used + 5 < len; s++) {
        if (*s == '\'') {
            memcpy(buf + used, "'\\''", 4);
            used += 4;
        } else {
            buf[used++] = *s;
        }
    }
    buf[used++] = '\'';
    buf[used] = '\0';
}
