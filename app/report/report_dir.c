/* report_dir: where ./infer --report DIR puts a heads report. It checks DIR
 * first (nothing there, an empty directory, or an earlier report of ours: its
 * marker and only the files a report writes), writes every file into a fresh
 * directory beside it, and puts that in place of DIR as a whole, removing the
 * earlier report; nothing of a failed report is left behind. The files
 * themselves come from report.c (data) and report_page.c (pictures). */
#define _GNU_SOURCE /* RENAME_EXCHANGE for renameat2 */
#include "app/report/report.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "app/common/fileguard.h"
#include "app/report/report_files.h"
#include "app/report/report_page.h"
#include "util/errbuf.h"
#include "util/sibling.h"

/* The names a report writes: a file at the top, a heatmap in heatmaps/. */
static const char *const TOP_FILES[] = {REPORT_MARKER, "heads.csv", "heads.json",
                                        "summary.json", "relations.csv", "ablation.csv", "tokens.csv",
                                        "prune.csv",
                                        "index.html"};

static int is_top_file(const char *name)
{
    for (size_t k = 0; k < sizeof TOP_FILES / sizeof TOP_FILES[0]; k++)
        if (strcmp(name, TOP_FILES[k]) == 0)
            return 1;
    return 0;
}

/* "text_L0_H1.svg" or "probe_L2_H3.svg". */
static int is_heatmap(const char *name)
{
    int l, h, n = -1;
    if (sscanf(name, "text_L%d_H%d.svg%n", &l, &h, &n) == 2 && n > 0 && name[n] == '\0')
        return 1;
    n = -1;
    return sscanf(name, "probe_L%d_H%d.svg%n", &l, &h, &n) == 2 && n > 0 && name[n] == '\0';
}

/* Appends "name" to the list of files in the way (at most len bytes in all). */
static void note_foreign(char *list, size_t len, int *count, const char *dir, const char *name)
{
    size_t used = strlen(list);
    if (++*count <= 8 && used < len)
        snprintf(list + used, len - used, "%s%.1000s/%s", used ? ", " : "", dir, name);
}

/* Whether dir (an existing directory) holds only an earlier report of ours: the
 * marker, the report's files and heatmaps/ with its SVGs. The others go to list
 * (up to 8 named) and their number is returned; *marked says whether the marker
 * is there. */
static int foreign_files(const char *dir, int *marked, char *list, size_t len)
{
    int count = 0;
    *marked = 0;
    list[0] = '\0';
    DIR *d = opendir(dir);
    if (!d) {
        snprintf(list, len, "%s (unreadable: %s)", dir, strerror(errno));
        return 1;
    }
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        const char *name = e->d_name;
        if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
            continue;
        struct stat st;
        char path[4400];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        int is_dir = lstat(path, &st) == 0 && S_ISDIR(st.st_mode);
        int is_reg = lstat(path, &st) == 0 && S_ISREG(st.st_mode);
        if (is_reg && strcmp(name, REPORT_MARKER) == 0)
            *marked = 1;
        if (is_reg && is_top_file(name))
            continue;
        if (is_dir && strcmp(name, "heatmaps") == 0) {
            DIR *h = opendir(path);
            struct dirent *x;
            while (h && (x = readdir(h)) != NULL) {
                char sub[4700];
                snprintf(sub, sizeof sub, "%s/%s", path, x->d_name);
                if (strcmp(x->d_name, ".") == 0 || strcmp(x->d_name, "..") == 0 ||
                    (is_heatmap(x->d_name) && lstat(sub, &st) == 0 && S_ISREG(st.st_mode)))
                    continue;
                note_foreign(list, len, &count, path, x->d_name);
            }
            if (h)
                closedir(h);
            else
                note_foreign(list, len, &count, dir, name);
            continue;
        }
        note_foreign(list, len, &count, dir, name);
    }
    closedir(d);
    return count;
}

/* What is at dir: 0 nothing, 1 an empty directory, 2 an earlier report of ours;
 * -1 with the reason when a report must not be written there. */
static int dir_state(const char *dir, char *err, size_t errlen)
{
    struct stat st;
    if (lstat(dir, &st) != 0) {
        if (errno != ENOENT)
            return err_set(err, errlen, "--report %s: %s", dir, strerror(errno));
        return 0;
    }
    if (S_ISLNK(st.st_mode))
        return err_set(err, errlen, "--report %s is a symbolic link; a report replaces its "
                       "directory as a whole, so give the directory's own path or a new "
                       "directory name", dir);
    if (!S_ISDIR(st.st_mode))
        return err_set(err, errlen, "--report %s exists and is not a directory; give a new "
                       "directory name", dir);
    char list[1500];
    int marked, n = foreign_files(dir, &marked, list, sizeof list);
    if (n == 0 && marked)
        return 2;
    if (!marked) {
        /* No marker: every file there is the user's (or another program's). */
        list[0] = '\0';
        n = 0;
        DIR *d = opendir(dir);
        struct dirent *e;
        while (d && (e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                note_foreign(list, sizeof list, &n, dir, e->d_name);
        if (d)
            closedir(d);
        if (n == 0)
            return 1;
    }
    return err_set(err, errlen, "--report %s holds %d file%s that no earlier report of "
                   "./infer wrote there (%s%s): a report writes only into a new or empty "
                   "directory, or over its own earlier report (marked by %s); give a new "
                   "directory name or move them", dir, n, n > 1 ? "s" : "", list,
                   n > 8 ? ", ..." : "", REPORT_MARKER);
}

int report_check_dir(const char *dir, char *err, size_t errlen)
{
    return dir_state(dir, err, errlen) < 0 ? -1 : 0;
}

/* Removes a report tree of ours (dir/heatmaps/<heatmaps>, dir/<report files>,
 * the two directories); a file not of a report is left, and so is its directory. */
static void remove_report_tree(const char *dir)
{
    char sub[4200], path[4500];
    snprintf(sub, sizeof sub, "%s/heatmaps", dir);
    DIR *d = opendir(sub);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (is_heatmap(e->d_name)) {
            snprintf(path, sizeof path, "%s/%s", sub, e->d_name);
            unlink(path);
        }
    if (d)
        closedir(d);
    rmdir(sub);
    for (size_t k = 0; k < sizeof TOP_FILES / sizeof TOP_FILES[0]; k++) {
        snprintf(path, sizeof path, "%s/%s", dir, TOP_FILES[k]);
        unlink(path);
    }
    rmdir(dir);
}

static int write_files(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    char sub[4200];
    if (report_heatmap_dir(sub, sizeof sub, dir, err, errlen))
        return -1;
    if (mkdir(sub, 0777) != 0)
        return err_set(err, errlen, "cannot create directory %s: %s", sub, strerror(errno));
    if (report_write_data(dir, r, err, errlen) || report_write_heatmaps(dir, r, err, errlen) ||
        report_write_index(dir, r, err, errlen))
        return -1;
    ReportOut o;
    if (report_out_open(&o, dir, REPORT_MARKER, err, errlen))
        return -1;
    fputs(REPORT_MARKER_TEXT, o.f);
    return report_out_close(&o, err, errlen);
}

/* Puts the complete report at tmp in place of dir (state as dir_state said):
 * renamed over a missing or empty dir; over an earlier report, the two are
 * swapped in one step where the system can (renameat2's RENAME_EXCHANGE), or
 * else the old one is moved aside first; the old one is then removed. */
static int put_in_place(const char *tmp, const char *dir, int state, char *err, size_t errlen)
{
    if (state < 2) {
        if (rename(tmp, dir) != 0)
            return err_set(err, errlen, "cannot rename the report into %s: %s", dir,
                           strerror(errno));
        return 0;
    }
#ifdef SYS_renameat2
    if (syscall(SYS_renameat2, AT_FDCWD, tmp, AT_FDCWD, dir, RENAME_EXCHANGE) == 0) {
        remove_report_tree(tmp); /* now the earlier report */
        return 0;
    }
#endif
    char old[4300];
    if (sibling_path(dir, ".old.XXXXXX", old, sizeof old) || !mkdtemp(old))
        return err_set(err, errlen, "cannot move the earlier report in %s aside: %s", dir,
                       strerror(errno));
    if (rename(dir, old) != 0) {
        int saved = errno;
        rmdir(old);
        return err_set(err, errlen, "cannot move the earlier report in %s aside: %s", dir,
                       strerror(saved));
    }
    if (rename(tmp, dir) != 0) {
        int saved = errno;
        rename(old, dir);
        return err_set(err, errlen, "cannot rename the report into %s: %s", dir,
                       strerror(saved));
    }
    remove_report_tree(old);
    return 0;
}

int report_write(const char *dir, const HeadsReport *r, char *err, size_t errlen)
{
    char real[4096], tmp[4200];
    if (guard_resolve(dir, real, sizeof real))
        return err_set(err, errlen, "%.200s...: path too long", dir);
    int state = dir_state(real, err, errlen);
    if (state < 0)
        return -1;
    size_t n = strlen(real);
    while (n > 1 && real[n - 1] == '/')
        real[--n] = '\0';
    if (sibling_path(real, ".tmp.XXXXXX", tmp, sizeof tmp) || !mkdtemp(tmp))
        return err_set(err, errlen, "cannot create a directory beside %s: %s", real,
                       errno == ENOENT ? "its parent directory does not exist"
                                       : strerror(errno));
    mode_t mask = umask(0);
    umask(mask);
    chmod(tmp, 0777 & ~mask); /* mkdtemp makes it 0700; a report gets a directory's mode */
    if (write_files(tmp, r, err, errlen) || put_in_place(tmp, real, state, err, errlen)) {
        remove_report_tree(tmp);
        return -1;
    }
    return 0;
}
