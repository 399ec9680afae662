/* infer_options: ./infer's command line (see infer_modes.h): the flag engine's
 * table made from INFER_FLAGS, --help, parsing with the rules between flags
 * that no row states, the sweep directories --ckpt may name, and the values
 * that need the checkpoint to read (--precision, --mask). */
#include "app/infer/infer_modes.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "app/common/cli.h"
#include "app/infer/infer_gold.h"
#include "app/infer/infer_sweep.h"
#include "data/conllu.h"

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
    int tree = o->text_file && conllu_is_path(o->text_file);
    if (o->sentence && !tree) {
        char shown[GOLD_SHOWN_MAX];
        gold_show_text(shown, o->sentence, strlen(o->sentence), o->sentence_n == 0);
        cli_usage_error("--sentence %s picks a sentence of a CoNLL-U --text-file (.conllu); "
                        "give one", shown);
    }
    if (tree && o->ckpt.n > 1)
        cli_usage_error("--text-file %s: the gold dependencies are shown for one model; give a "
                        "single --ckpt with a .conllu file", o->text_file);
    if ((o->text || o->text_file) && (o->prompt || o->prompt_file))
        cli_usage_error("--%s explores a given text, so a prompt would not be used; give "
                        "--explore with a prompt alone to explore a sample",
                        o->text ? "text" : "text-file");
    if (o->prompt_file && o->text_file && !strcmp(o->prompt_file, "-") &&
        !strcmp(o->text_file, "-"))
        cli_usage_error("only one of --prompt-file and --text-file can read standard input");
}

/* --sentence N|TEXT: a whole number (a sign and digits) is a sentence number,
 * range-checked, so that 0 or -1 is refused rather than looked up as a text;
 * anything else is a text (sentence_n 0), which must hold more than white
 * space. */
static void parse_sentence(InferOptions *o)
{
    const char *s = o->sentence;
    o->sentence_n = 1;
    if (!s)
        return;
    size_t k = s[0] == '+' || s[0] == '-';
    int digits = s[k] != '\0';
    for (; s[k]; k++)
        digits &= s[k] >= '0' && s[k] <= '9';
    if (digits) {
        o->sentence_n = cli_long("sentence", s, 1, 100000000);
        return;
    }
    o->sentence_n = 0;
    if (!s[strspn(s, " \t\n\r\f\v")])
        cli_usage_error("--sentence: the text is empty or only white space; give a "
                        "sentence's number or its text");
}

/* The Precision a --precision name (one of precision_names, which the flag
 * engine checked) stands for. */
Precision infer_precision(const char *name)
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
    const char *given[FLAG_PATHS_MAX] = {NULL};
    int ngiven = o->ckpt.n;
    memcpy(given, o->ckpt.path, (size_t)ngiven * sizeof given[0]);
    char err[9000];
    o->ckpt.n = 0;
    for (int k = 0; k < ngiven; k++) {
        struct stat st;
        if (!o->explore || stat(given[k], &st) != 0 || !S_ISDIR(st.st_mode)) {
            o->ckpt.path[o->ckpt.n++] = given[k];
            continue;
        }
        int room = INFER_CKPT_MAX - o->ckpt.n - (ngiven - k - 1);
        char **at = o->sweep_ckpt + o->nsweep;
        int n = infer_sweep_ckpts(given[k], at, room, INFER_CKPT_MAX - room, err,
                                  sizeof err);
        if (n < 0)
            cli_fail("%s", err);
        for (int j = 0; j < n; j++)
            o->ckpt.path[o->ckpt.n++] = at[j];
        o->nsweep += n;
    }
}

void infer_options_parse(int argc, char **argv, InferOptions *o)
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
    parse_sentence(o);
    check_flag_pairs(o);
}

/* "L.H,L.H" -> head_on[L*H] with the listed heads 0: at least one head, no
 * empty item (",," or a trailing comma) and no head listed twice. */
unsigned char *infer_parse_mask(const char *spec, const Config *c)
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
