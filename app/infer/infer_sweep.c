/* infer_sweep: the checkpoints a sweep directory of scripts/ablate.sh holds,
 * for `./infer --explore OUT.html --ckpt DIR`. A run of the sweep lives in
 * DIR/runs/H<H>-D<D>-s<seed> (two digits of H, three of D: scripts/ablate_report.py,
 * runs_of) and is finished once its done.json is there; its model is
 * model.ckpt. The explorer takes the first seed of each (H, D), ordered by H,
 * then D (a sweep of both arms has up to two runs per H). Loading and checking
 * the checkpoints is the caller's. */
#include "app/infer/infer_sweep.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/errbuf.h"

typedef struct {
    int H, D, seed;
    char name[64];
} SweepRun;

/* H<H>-D<D>-s<seed> with every number positive and nothing after it. */
static int parse_run_name(const char *name, SweepRun *r)
{
    int end = -1;
    size_t len = strlen(name);
    if (len >= sizeof r->name ||
        sscanf(name, "H%d-D%d-s%d%n", &r->H, &r->D, &r->seed, &end) != 3 || end < 0 ||
        name[end] != '\0' || r->H < 1 || r->D < 1 || r->seed < 1)
        return 0;
    memcpy(r->name, name, len + 1);
    return 1;
}

static int by_h_d(const void *a, const void *b)
{
    const SweepRun *x = a, *y = b;
    return x->H != y->H ? (x->H > y->H) - (x->H < y->H) : (x->D > y->D) - (x->D < y->D);
}

static int exists(const char *dir, const char *run, const char *file)
{
    char path[4400];
    struct stat st;
    snprintf(path, sizeof path, "%s/runs/%s/%s", dir, run, file);
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int infer_sweep_ckpts(const char *dir, char **paths, int max, char *err, size_t errlen)
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
        while (k < n && (found[k].H != r.H || found[k].D != r.D))
            k++;
        if (k < n) {
            if (r.seed < found[k].seed)
                found[k] = r;
            continue;
        }
        if (n == INFER_SWEEP_SCAN || n == max) {
            closedir(d);
            return err_set(err, errlen, "--ckpt %s: more than %d head counts and head sizes; "
                           "the compare page shows at most %d models", dir, max, max);
        }
        found[n++] = r;
    }
    closedir(d);
    if (n == 0)
        return err_set(err, errlen, "--ckpt %s: no finished run in %s (a run is finished once "
                       "its done.json is written)", dir, runs);
    qsort(found, (size_t)n, sizeof found[0], by_h_d);
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
