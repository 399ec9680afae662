/* infer_sweep: the checkpoints a sweep directory of scripts/ablate.sh holds,
 * for `./infer --explore OUT.html --ckpt DIR`. A run of the sweep lives in
 * DIR/runs/[L<L>-]H<H>-D<D>-s<seed> (two digits of H, three of D, and the L prefix
 * for a depth other than train's: scripts/ablate_report.py, runs_of) and is
 * finished once its done.json is there; its model is model.ckpt. The explorer
 * takes the first seed of each (L, H, D), ordered by L (the prefixed depths first),
 * H, then D (a sweep of both arms has up to two runs per L and H). Loading and checking
 * the checkpoints is the caller's. */
#include "app/infer/infer_sweep.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/errbuf.h"

typedef struct {
    int L, H, D, seed;   /* L: 0 for a run of train's own depth (no L prefix) */
    char name[64];
} SweepRun;

/* The whole number after the letter c at *p, moved past it: 1 .. 999999 (no sign,
 * no overflow), else 0. */
static int name_number(const char **p, char c, int *out)
{
    const char *s = *p;
    if (*s++ != c || *s < '0' || *s > '9')
        return 0;
    long v = 0;
    while (*s >= '0' && *s <= '9' && v <= 999999)
        v = v * 10 + (*s++ - '0');
    if (v < 1 || v > 999999)
        return 0;
    *out = (int)v;
    *p = s;
    return 1;
}

/* [L<L>-]H<H>-D<D>-s<seed> with every number in 1 .. 999999 and nothing after it
 * (a run of another depth than train's carries the L prefix: ablate_report.py). */
static int parse_run_name(const char *name, SweepRun *r)
{
    const char *p = name;
    size_t len = strlen(name);
    r->L = 0;
    if (len >= sizeof r->name || (*p == 'L' && !(name_number(&p, 'L', &r->L) && *p++ == '-')))
        return 0;
    if (!name_number(&p, 'H', &r->H) || *p++ != '-' || !name_number(&p, 'D', &r->D) ||
        *p++ != '-' || !name_number(&p, 's', &r->seed) || *p != '\0')
        return 0;
    memcpy(r->name, name, len + 1);
    return 1;
}

/* By depth (the runs of other depths first, by L, then train's own), H, then D. */
static int by_l_h_d(const void *a, const void *b)
{
    const SweepRun *x = a, *y = b;
    int lx = x->L ? x->L : 1 << 30, ly = y->L ? y->L : 1 << 30;
    if (lx != ly)
        return (lx > ly) - (lx < ly);
    return x->H != y->H ? (x->H > y->H) - (x->H < y->H) : (x->D > y->D) - (x->D < y->D);
}

static int exists(const char *dir, const char *run, const char *file)
{
    char path[4400];
    struct stat st;
    snprintf(path, sizeof path, "%s/runs/%s/%s", dir, run, file);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int infer_sweep_ckpts(const char *dir, char **paths, int max, int others, char *err,
                      size_t errlen)
{
    char runs[4200];
    snprintf(runs, sizeof runs, "%s/runs", dir);
    DIR *d = opendir(runs);
    if (!d)
        return err_set(err, errlen, "--ckpt %s is a directory but has no runs/ directory (a "
                       "sweep directory of scripts/ablate.sh has one)", dir);
    SweepRun found[INFER_SWEEP_SCAN];
    int n = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        SweepRun r;
        if (!parse_run_name(de->d_name, &r) || !exists(dir, r.name, "done.json") ||
            !exists(dir, r.name, "model.ckpt"))
            continue;
        int k = 0;
        while (k < n && (found[k].L != r.L || found[k].H != r.H || found[k].D != r.D))
            k++;
        if (k < n) {
            if (r.seed < found[k].seed)
                found[k] = r;
            continue;
        }
        if (n == INFER_SWEEP_SCAN || n == max) {
            closedir(d);
            if (n == INFER_SWEEP_SCAN)
                return err_set(err, errlen, "--ckpt %s: more than %d shapes (depth, head count "
                               "and head size)", dir, INFER_SWEEP_SCAN);
            return err_set(err, errlen, "--ckpt %s: more than %d shapes (depth, head count and "
                           "head size)%s; the compare page shows at most %d models", dir, max,
                           others ? " beside the other --ckpt models" : "", max + others);
        }
        found[n++] = r;
    }
    closedir(d);
    if (n == 0)
        return err_set(err, errlen, "--ckpt %s: no finished run in %s (a run is finished once "
                       "its done.json is written)", dir, runs);
    qsort(found, (size_t)n, sizeof found[0], by_l_h_d);
    for (int k = 0; k < n; k++) {
        size_t len = strlen(runs) + strlen(found[k].name) + sizeof "/model.ckpt" + 1;
        paths[k] = malloc(len);
        if (!paths[k]) {
            for (int j = 0; j < k; j++)
                free(paths[j]);
            return err_set(err, errlen, "out of memory");
        }
        snprintf(paths[k], len, "%s/%s/model.ckpt", runs, found[k].name);
    }
    return n;
}
