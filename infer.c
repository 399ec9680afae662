/* infer: uses a checkpoint: --eval scores a file, --heads analyses what every
 * attention head does, --explore writes an interactive page of every head's
 * attention on a text, and otherwise it samples text. This file parses flags,
 * loads and checks the checkpoints and picks the mode; each mode's driver is in
 * app/infer/ (infer_sample.c, infer_eval.c, infer_heads.c, infer_explore.c). */
#include "app/infer/infer.h"

#include <math.h>
#include <stddef.h>
#include <omp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/common/cli.h"
#include "app/common/fileguard.h"
#include "app/common/flags.h"
#include "app/infer/infer_sweep.h"
#include "app/report/report.h"
#include "data/induction.h"
#include "data/corpus.h"
#include "trainer/ckpt.h"
#include "model/evaluate.h"

static const Flag ROWS[] = {
#define INFER_ROW(ID, field, ctype, ...) {.at = offsetof(InferOptions, field), __VA_ARGS__},
    INFER_FLAGS(INFER_ROW)
#undef INFER_ROW
};
enum { NFLAGS = sizeof ROWS / sizeof ROWS[0] };

/* The headings of --help's groups after the modes ("" is a blank line). */
static const char *const SECTIONS[FSEC_COUNT] = {
    [FSEC_CKPT] = "", [FSEC_SAMPLING] = "sampling:", [FSEC_HEADS] = "heads analysis:",
    [FSEC_EXPLORER] = "explorer:", [FSEC_SHARED] = "shared:"};

static void usage(void);

static const FlagTable FLAGS = {.rows = ROWS, .n = NFLAGS, .usage = usage,
                                .version = "infer (headcount) " HEADCOUNT_VERSION,
                                .default_mode = MODE_SAMPLE};

static void usage(void)
{
    InferOptions d;
    flags_defaults(&FLAGS, &d);
    printf("usage: ./infer --ckpt CKPT [mode] [options]\n"
           "Uses a checkpoint written by ./train. Modes:\n"
           "%-24s sample text to stdout\n", "  (default)");
    for (int sec = 0; sec < FSEC_COUNT; sec++) {
        if (SECTIONS[sec])
            printf("%s\n", SECTIONS[sec]);
        flags_print_section(&FLAGS, sec, &d);
        if (sec == FSEC_HEADS)
            infer_heads_legend(stdout, "  ");
    }
    printf("%-24s this help\n%-24s print the version and exit\n", "  -h, --help",
           "      --version");
}

/* The rules between flags that no row states, after the engine's mode check. */
static void check_flag_pairs(const InferOptions *o)
{
    if (o->explore && (o->eval || o->heads))
        cli_usage_error("--explore is its own mode; give it without --%s",
                        o->eval ? "eval" : "heads");
    if (o->text && o->text_file)
        cli_usage_error("--text and --text-file both given; give one");
    if (o->ckpt.n > 1 && !o->text && !o->text_file)
        cli_usage_error("--explore with %d checkpoints needs --text or --text-file: the one "
                        "text every model is shown on", o->ckpt.n);
    if (o->ckpt.n > 1 && (o->explore_json || o->mask))
        cli_usage_error("--%s works on one model; give a single --ckpt with it",
                        o->explore_json ? "explore-json" : "mask");
    if ((o->text || o->text_file) && (o->prompt || o->prompt_file))
        cli_usage_error("--%s explores a given text, so a prompt would not be used; give "
                        "--explore with a prompt alone to explore a sample",
                        o->text ? "text" : "text-file");
    if (o->prompt_file && o->text_file && !strcmp(o->prompt_file, "-") &&
        !strcmp(o->text_file, "-"))
        cli_usage_error("only one of --prompt-file and --text-file can read standard input");
}

/* The Precision a --precision name (one of precision_names, which the flag
 * engine checked) stands for. */
static Precision precision_flag(const char *name)
{
    int k = 0;
    while (k + 1 < PRECISION_COUNT && strcmp(name, precision_names[k]) != 0)
        k++;
    return (Precision)k;
}

/* With --explore, each --ckpt that names a directory stands for the sweep's
 * checkpoints (infer_sweep.h), in its place; the other modes load the path as
 * a checkpoint file, which a directory is not. */
static void expand_sweeps(InferOptions *o)
{
    FlagPaths given = {.n = o->ckpt.n};
    memcpy(given.path, o->ckpt.path, (size_t)given.n * sizeof given.path[0]);
    char err[9000];
    o->ckpt.n = 0;
    for (int k = 0; k < given.n; k++) {
        struct stat st;
        if (!o->explore || stat(given.path[k], &st) != 0 || !S_ISDIR(st.st_mode)) {
            o->ckpt.path[o->ckpt.n++] = given.path[k];
            continue;
        }
        int room = INFER_CKPT_MAX - o->ckpt.n - (given.n - k - 1);
        char **at = o->sweep_ckpt + o->nsweep;
        int n = infer_sweep_ckpts(given.path[k], at, room, INFER_CKPT_MAX - room, err,
                                  sizeof err);
        if (n < 0)
            cli_fail("%s", err);
        for (int j = 0; j < n; j++)
            o->ckpt.path[o->ckpt.n++] = at[j];
        o->nsweep += n;
    }
}

static void parse(int argc, char **argv, InferOptions *o)
{
    unsigned char given[NFLAGS] = {0};
    memset(o, 0, sizeof *o);
    flags_parse(&FLAGS, argc, argv, o, given);
    if (!o->ckpt.n)
        cli_usage_error("--ckpt CKPT is required");
    expand_sweeps(o);
    if (o->eval && o->heads)
        cli_usage_error("--eval and --heads are separate modes; give one");
    if (o->prompt && o->prompt_file)
        cli_usage_error("--prompt and --prompt-file both given; give one");
    flags_check_modes(&FLAGS, o, given);
    check_flag_pairs(o);
}

/* "L.H,L.H" -> head_on[L*H] with the listed heads 0: at least one head, no
 * empty item (",," or a trailing comma) and no head listed twice. */
static unsigned char *parse_mask(const char *spec, const Config *c)
{
    if (!spec[0])
        cli_usage_error("--mask '': no head given; list heads as layer.head pairs like 0.1,2.3");
    unsigned char *on = malloc((size_t)c->L * c->H);
    if (!on)
        cli_fail("out of memory");
    memset(on, 1, (size_t)c->L * c->H);
    const char *p = spec;
    while (*p) {
        char *end;
        long l = strtol(p, &end, 10);
        if (end == p || *end != '.')
            cli_usage_error("--mask: expected layer.head pairs like 0.1,2.3, got '%s'", spec);
        p = end + 1;
        long h = strtol(p, &end, 10);
        if (end == p || (*end != ',' && *end != '\0'))
            cli_usage_error("--mask: expected layer.head pairs like 0.1,2.3, got '%s'", spec);
        if (l < 0 || l >= c->L || h < 0 || h >= c->H)
            cli_usage_error("--mask: head %ld.%ld does not exist (the model has layers 0..%d "
                            "and heads 0..%d)", l, h, c->L - 1, c->H - 1);
        if (!on[l * c->H + h])
            cli_usage_error("--mask '%s': head %ld.%ld is listed twice", spec, l, h);
        on[l * c->H + h] = 0;
        if (*end == ',' && end[1] == '\0')
            cli_usage_error("--mask '%s': ends with a comma; list heads as layer.head pairs "
                            "like 0.1,2.3", spec);
        p = *end == ',' ? end + 1 : end;
    }
    return on;
}

/* --explore with --text or --text-file: the page of that text through the one
 * model, or the compare page through every --ckpt (state[k]: model k's
 * training state, NULL for none). */
static int run_explore_text(const InferOptions *o, const Model *m, const Tokenizer *tok,
                            const TrainState *const *state)
{
    TextFile f = {.bytes = NULL};
    const unsigned char *bytes = (const unsigned char *)o->text;
    size_t nbytes = o->text ? strlen(o->text) : 0;
    const char *source = "the --text argument";
    if (o->text_file) {
        infer_read_input(&f, o->text_file, "text-file");
        bytes = f.bytes;
        nbytes = f.n;
        source = f.name;
    }
    int rc = o->ckpt.n > 1 ? infer_compare(o, m, tok, state, bytes, nbytes, source)
                           : infer_explore(o, m, tok, bytes, nbytes, source, 0);
    if (o->text_file)
        textfile_free(&f);
    return rc;
}

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
static void check_outputs(const InferOptions *o, const char *const *trained_on)
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

int main(int argc, char **argv)
{
    cli_prog = "infer";
    cli_hold_std_fds();
    cli_bounded_spin_openmp(argv);
    InferOptions o;
    parse(argc, argv, &o);
    /* A file over `ulimit -f` is a write error (EFBIG) with a message, not a kill. */
    signal(SIGXFSZ, SIG_IGN);
    if (o.threads)
        omp_set_num_threads((int)o.threads);
    /* Every --ckpt (several only for --explore), each with its training state. */
    int n = o.ckpt.n;
    Model *m = calloc((size_t)n, sizeof *m);
    Tokenizer *tok = calloc((size_t)n, sizeof *tok);
    TrainState *ts = calloc((size_t)n, sizeof *ts);
    if (!m || !tok || !ts)
        cli_fail("out of memory");
    const TrainState *state[INFER_CKPT_MAX];
    const char *trained_on[INFER_CKPT_MAX];
    char err[1500];
    Bf16Path bf16_path = cli_bf16_path();
    int bf16 = 0;
    for (int k = 0; k < n; k++) {
        long steps;
        int has_state;
        if (ckpt_load(o.ckpt.path[k], &m[k], &tok[k], &steps, &ts[k], &has_state, err,
                      sizeof err))
            cli_fail("%s", err);
        int file = has_state && corpus_source_of(ts[k].data_path) == CORPUS_SOURCE_FILE;
        trained_on[k] = file ? ts[k].data_path : NULL;
        state[k] = has_state ? &ts[k] : NULL;
        if (o.precision)
            m[k].precision = precision_flag(o.precision);
        m[k].bf16_path = bf16_path;
        bf16 |= m[k].precision == PRECISION_BF16;
    }
    if (bf16)
        cli_say_bf16(bf16_path);
    check_outputs(&o, trained_on);
    if (o.mask)
        o.head_on = parse_mask(o.mask, &m[0].cfg);
    o.train_state = state[0];
    int rc;
    if (o.eval)
        rc = infer_eval(&o, &m[0], &tok[0]);
    else if (o.heads)
        rc = infer_heads(&o, &m[0], &tok[0]);
    else if (o.explore && (o.text || o.text_file))
        rc = run_explore_text(&o, m, tok, state);
    else
        rc = infer_sample(&o, &m[0], &tok[0]);
    free(o.head_on);
    for (int k = 0; k < o.nsweep; k++)
        free(o.sweep_ckpt[k]);
    for (int k = 0; k < n; k++) {
        model_free(&m[k]);
        tok_free(&tok[k]);
    }
    free(m);
    free(tok);
    free(ts);
    if (rc == 0)
        cli_close_stdout();
    return rc;
}
