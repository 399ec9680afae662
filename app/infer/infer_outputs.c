/* infer_outputs: the identity checks of ./infer's outputs (see infer_modes.h):
 * no output is an input or another output, and --report DIR is checked as a
 * whole. */
#include "app/infer/infer_modes.h"

#include <stdio.h>
#include <string.h>

#include "app/common/cli.h"
#include "app/common/fileguard.h"
#include "app/report/report.h"

/* "-" is standard input, not a file. */
static const char *file_arg(const char *path)
{
    return path && strcmp(path, "-") != 0 ? path : NULL;
}

/* Whether path lies directly in the directory dir (by identity). */
static int inside(const char *path, const char *dir)
{
    char parent[4200];
    snprintf(parent, sizeof parent, "%s", path);
    char *slash = strrchr(parent, '/');
    if (slash == parent)
        parent[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(parent, sizeof parent, ".");
    return guard_same_file(parent, dir);
}

/* No output may be an input or another output (fileguard.h), the training data
 * named by each checkpoint included (trained_on[k], NULL for none): the
 * explorer's files, and --report DIR as a whole: it must be new, empty or an
 * earlier report (report.h), none of its files may be an input, and no input
 * may lie inside it. */
void infer_check_outputs(const InferOptions *o, const char *const *trained_on)
{
    static const char *const REPORT_FILES[] = {"heads.csv", "heads.json", "summary.json",
                                               "relations.csv", "prune.csv", "index.html",
                                               REPORT_MARKER};
    enum { NREPORT = sizeof REPORT_FILES / sizeof REPORT_FILES[0],
           NMAX = 4 + 2 * INFER_CKPT_MAX + 2 + NREPORT };
    char report[NREPORT][4200], flags[NREPORT][64], dir[4096], heatmaps[4200], err[9000];
    GuardPath paths[NMAX] = {
        {"--eval", o->eval, 0, NULL}, {"--heads", o->heads, 0, NULL},
        {"--prompt-file", file_arg(o->prompt_file), 0, NULL},
        {"--text-file", file_arg(o->text_file), 0, NULL}};
    int n = 4;
    for (int k = 0; k < o->ckpt.n; k++) {
        paths[n++] = (GuardPath){"--ckpt", o->ckpt.path[k], 0, NULL};
        paths[n++] = (GuardPath){"the training data of --ckpt,", trained_on[k], 0, NULL};
    }
    int nin = n;
    paths[n++] = (GuardPath){"--explore", o->explore, 1, NULL};
    paths[n++] = (GuardPath){"--explore-json", o->explore_json, 1, NULL};
    if (o->report && guard_resolve(o->report, dir, sizeof dir))
        cli_usage_error("--report: the path is too long");
    for (int k = 0; o->report && k < NREPORT; k++) {
        snprintf(report[k], sizeof report[k], "%s/%s", dir, REPORT_FILES[k]);
        snprintf(flags[k], sizeof flags[k], "--report (its %s)", REPORT_FILES[k]);
        paths[n++] = (GuardPath){flags[k], report[k], 1, NULL};
    }
    if (guard_check_paths(paths, n, err, sizeof err))
        cli_usage_error("%s", err);
    /* Not over a checkpoint or log that a running ./train holds locked. */
    if ((o->explore && guard_check_unlocked("--explore", o->explore, err, sizeof err)) ||
        (o->explore_json &&
         guard_check_unlocked("--explore-json", o->explore_json, err, sizeof err)))
        cli_fail("%s", err);
    if (!o->report)
        return;
    snprintf(heatmaps, sizeof heatmaps, "%s/heatmaps", dir);
    for (int k = 0; k < nin; k++)
        if (paths[k].path && (inside(paths[k].path, dir) || inside(paths[k].path, heatmaps)))
            cli_usage_error("%s %s is inside --report %s, which the report replaces as a "
                            "whole; keep inputs out of it", paths[k].flag, paths[k].path,
                            o->report);
    if (report_check_dir(o->report, err, sizeof err))
        cli_usage_error("%s", err);
}
