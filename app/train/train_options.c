/* train_options: flags, help and parsing for ./train over the settings table (see
 * train_options.h and trainer/settings.h), through the flag engine
 * (app/common/flags.h). */
#include "app/train/train_options.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/common/cli.h"
#include "app/common/flags.h"
#include "data/corpus.h"
#include "util/json.h"

enum { NSET = SETTING_COUNT };

static const char *const SECTIONS[SEC_COUNT] = {
    [SEC_FILES] = "data and output", [SEC_MODEL] = "model", [SEC_TRAINING] = "training",
    [SEC_PROGRAM] = "program"};

/* The built-in corpora's recipes. The text corpus: words, 1,536 byte-pair
 * tokens, at which every word of the documents' sentences ("The tired cat
 * slept on the warm mat.") is one token (at 1,024 "mat" and "down" are split)
 * and whole sentences of the corpus fit a 64-token context (--vocab 0 trains
 * on bytes); the learning rate at which a byte-level model's layer-0 heads
 * become previous-token heads (docs/heads.md, "How the byte-level recipe was
 * chosen"; at --data's 1e-3 they stay spread over the tokens before); 4,000
 * steps, at which a word-level model retrieves the re-mentioned noun itself,
 * not only its class; an 800-step warm-up, after which it copies a repeated
 * name's next piece as its first choice in 92 % of the rows in each of 5 seeds
 * (after a 100-step one, 85-92 % on the corpus of then: docs/heads.md, "What
 * was tried"); and a position embedding that starts at 5 times the token
 * embedding's scale (0.1) and is not decayed, with which a word-level model's
 * layer-0 heads become previous-token heads in 4 of 5 seeds (docs/heads.md,
 * "What was tried"; with either change alone they do not). The induction task:
 * the recipe of docs/corpus.md ("The induction task"). docs/settings.md's table
 * shows them; a test holds it to them. */
const Recipe train_recipes[] = {
    {"text", SETTING_VOCAB, 1536},
    {"text", SETTING_STEPS, 4000},
    {"text", SETTING_LR, 5e-3},
    {"text", SETTING_MIN_LR, 5e-4},
    {"text", SETTING_WARMUP, 800},
    {"text", SETTING_POS_STD, 0.1},
    {"text", SETTING_POS_DECAY, 1},
    {"induction", SETTING_LAYERS, 2},
    {"induction", SETTING_HEADS, 4},
    {"induction", SETTING_EMBD, 64},
    {"induction", SETTING_BLOCK, 64},
    {"induction", SETTING_BATCH, 32},
    {"induction", SETTING_STEPS, 3000},
    {"induction", SETTING_LR, 5e-3},
    {"induction", SETTING_MIN_LR, 5e-4},
    {"induction", SETTING_WARMUP, 200},
};
const int train_recipe_count = (int)(sizeof train_recipes / sizeof train_recipes[0]);

static void usage(void);

static const char *const EXTRA[] = {"print-settings", NULL};

/* The flag engine's rows, made once from settings_table (train_flags). */
static Flag ROWS[NSET];
static const FlagTable FLAGS = {.rows = ROWS, .n = NSET, .extra = EXTRA, .usage = usage,
                                .version = "train (headcount) " HEADCOUNT_VERSION};

static FlagType flag_type(SetType t)
{
    switch (t) {
    case SET_LONG: return FLAG_LONG;
    case SET_REAL: return FLAG_REAL;
    case SET_F32: return FLAG_F32;
    case SET_SEED: return FLAG_SEED;
    case SET_PATH: return FLAG_PATH;
    case SET_NAME: return FLAG_NAME;
    case SET_SWITCH: return FLAG_SWITCH;
    case SET_CHOICE: return FLAG_CHOICE;
    }
    return FLAG_LONG;
}

/* The engine's resume rule of a setting, with why it holds. */
static FlagResume flag_resume(const Setting *s, const char **why)
{
    *why = s->resume_why;
    switch (s->resume) {
    case RES_RUN: return FLAG_RESUME_RUN;
    case RES_ARCH:
        if (!*why)
            *why = "the architecture comes from the checkpoint";
        return FLAG_RESUME_AGREE;
    case RES_KEEP:
        if (!*why)
            *why = "an exact resume continues the run as it was set up";
        return FLAG_RESUME_AGREE;
    case RES_CHANGE: return FLAG_RESUME_CHANGE;
    case RES_FRESH: return FLAG_RESUME_FRESH;
    case RES_EITHER: return FLAG_RESUME_EITHER;
    }
    return FLAG_RESUME_RUN;
}

/* The flag table: each setting's row as the engine reads it; every default is
 * shown in --help. */
static const FlagTable *train_flags(void)
{
    if (ROWS[0].flag)
        return &FLAGS;
    for (int i = 0; i < NSET; i++) {
        const Setting *s = &settings_table[i];
        Flag *f = &ROWS[i];
        *f = (Flag){.flag = s->flag, .short_flag = s->short_flag, .type = flag_type(s->type),
                    .at = s->at, .def = s->def, .def_str = s->def_str, .names = s->names,
                    .lo = s->lo, .hi = s->hi, .zero_off = s->zero_off, .show_def = 1,
                    .def_text = s->def_text, .meta = s->meta, .section = (int)s->section,
                    .help = s->help, .more = s->more};
        f->resume = flag_resume(s, &f->resume_why);
    }
    return &FLAGS;
}

/* The recipe of the built-in corpus o trains on: "text", "induction", or NULL
 * for --data. */
static const char *recipe_name(const Options *o, const unsigned char *given)
{
    if (train_is_induction(o))
        return "induction";
    return given[SETTING_DATA] ? NULL : "text";
}

/* Gives o the values of corpus' recipe for each setting not given. */
static void apply_recipe(Options *o, const char *corpus, const unsigned char *given)
{
    for (int k = 0; corpus && k < train_recipe_count; k++) {
        const Recipe *r = &train_recipes[k];
        if (strcmp(r->corpus, corpus) != 0 || given[r->setting])
            continue;
        const Setting *s = &settings_table[r->setting];
        if (s->type == SET_LONG)
            *(long *)((char *)o + s->at) = (long)r->value;
        else if (s->type == SET_CHOICE)
            *(int *)((char *)o + s->at) = (int)r->value;
        else
            *(double *)((char *)o + s->at) = r->value;
    }
}

/* One help line: the flags by which a recipe differs from the defaults. */
static void print_recipe(const char *label, const char *corpus)
{
    Options d, r;
    unsigned char none[GIVEN_COUNT] = {0};
    flags_defaults(&FLAGS, &d);
    r = d;
    apply_recipe(&r, corpus, none);
    printf("  %-28s", label);
    for (int i = 0; i < NSET; i++) {
        if (flags_same(&ROWS[i], &d, &r))
            continue;
        char v[64];
        flags_format(&ROWS[i], &r, v, sizeof v);
        printf(" --%s %s", ROWS[i].flag, v);
    }
    printf("\n");
}

static void usage(void)
{
    Options d;
    flags_defaults(&FLAGS, &d);
    printf("usage: ./train [--data FILE] [options]\n"
           "Trains a small GPT (bytes or byte-pair tokens, multi-head attention) and writes a\n"
           "checkpoint.\n"
           "Without --data it trains on the built-in generated corpus (docs/corpus.md),\n"
           "with that corpus' own recipe (below).\n");
    for (int sec = 0; sec < SEC_COUNT; sec++) {
        printf("\n%s:\n", SECTIONS[sec]);
        flags_print_section(&FLAGS, sec, &d);
        if (sec == SEC_PROGRAM)
            printf("%-24s this help\n%-24s the version\n%-24s print the settings these flags "
                   "give, as JSON, and exit\n%-24s (with --resume: the resumed run's, after "
                   "its checks)\n", "  -h, --help", "      --version", "      --print-settings",
                   "");
    }
    printf("\nThe defaults above are for --data; each built-in corpus has its own recipe,\n"
           "which any flag given overrides:\n");
    print_recipe("--corpus text (the default)", "text");
    print_recipe("--corpus induction", "induction");
    printf("\nOutputs are never the same file as an input; other files are never written or\n"
           "deleted (docs/checkpoint.md, \"Files\").\n");
}

/* --print-settings: what a run with these flags would use, for scripts: one JSON
 * object keyed by the settings' field names (a path not given is null; 0 for
 * head_size and threads means automatic). */
void train_options_print(const Options *o)
{
    printf("{");
    for (int i = 0; i < NSET; i++) {
        const Setting *s = &settings_table[i];
        const void *v = (const char *)o + s->at;
        printf("%s\"%s\":", i ? "," : "", s->key);
        switch (s->type) {
        case SET_LONG: printf("%ld", *(const long *)v); break;
        case SET_REAL:
        case SET_F32: json_fput_shortest(stdout, *(const double *)v); break;
        case SET_SEED: printf("%llu", (unsigned long long)*(const uint64_t *)v); break;
        case SET_PATH:
        case SET_NAME: {
            const char *str = *(const char *const *)v;
            if (str)
                json_fput_string(stdout, str);
            else
                printf("null");
            break;
        }
        case SET_SWITCH: printf("%s", *(const int *)v ? "true" : "false"); break;
        case SET_CHOICE: printf("\"%s\"", s->names[*(const int *)v]); break;
        }
    }
    printf(",\"version\":\"%s\"}\n", HEADCOUNT_VERSION);
    cli_close_stdout();
    exit(0);
}

/* --heads-every writes its metrics to the log: without --log it is a usage
 * error. Checked once the settings are known: after parsing a fresh run's flags,
 * and after a resume has taken the checkpoint's (--heads-every among them). */
static void require_log_for_heads(const Options *o)
{
    if (o->heads_every && !o->log)
        cli_usage_error("--heads-every %ld needs --log FILE to write the metrics to",
                        o->heads_every);
}

void train_options_resume(Options *o, const unsigned char *given, const Config *cfg,
                          const TrainState *ts, long ranks, const char *ckpt)
{
    Options have = *o;
    for (int i = 0; i < NSET; i++) {
        const Setting *s = &settings_table[i];
        if (s->resume == RES_ARCH)
            *(long *)((char *)&have + s->at) = *(const int *)((const char *)cfg + s->cfg_at);
        else
            settings_load_one(ts, s, &have);
    }
    /* The derived rows: the text, which a --corpus cannot choose when the run
     * trained on a file; the micro-batches a step, shared among the ranks; and
     * the checkpoint, which the run continues into. */
    CorpusSource source = corpus_source_of(ts->data_path);
    if (given[SETTING_CORPUS] && source == CORPUS_SOURCE_FILE)
        cli_usage_error("--corpus %s contradicts the checkpoint, which trained on %s (pass "
                        "--data FILE to continue on another file)", o->corpus, ts->data_path);
    have.data = source == CORPUS_SOURCE_FILE ? ts->data_path : NULL;
    have.corpus = source == CORPUS_SOURCE_INDUCTION ? "induction" : "text";
    if (ts->accum % ranks != 0)
        cli_usage_error("the run sums %ld micro-batches a step, which %ld ranks cannot share "
                        "evenly; resume it on a number of ranks that divides %ld", ts->accum,
                        ranks, ts->accum);
    have.accum = ts->accum / ranks;
    have.out = ckpt;
    flags_resume(train_flags(), o, &have, given, ckpt);
    require_log_for_heads(o);
}

void train_options_record(const Options *o, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < NSET && k < len; i++) {
        const Setting *s = &settings_table[i];
        if (!s->in_log)
            continue;
        char v[64], quoted[6 * sizeof v + 3]; /* every byte \u00XX at worst, quotes, NUL */
        flags_format(&train_flags()->rows[i], o, v, sizeof v);
        int named = s->type == SET_NAME || s->type == SET_CHOICE;
        if (named)
            json_string(quoted, v);
        k += (size_t)snprintf(buf + k, len - k, "%s\"%s\":%s", k ? "," : "", s->key,
                              named ? quoted : v);
    }
}

void train_options_say(const Options *o, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < NSET && k < len; i++) {
        const Setting *s = &settings_table[i];
        if (!s->say)
            continue;
        char v[64];
        flags_format(&train_flags()->rows[i], o, v, sizeof v);
        k += (size_t)snprintf(buf + k, len - k, ", %s %s", s->say, v);
    }
}

int train_is_induction(const Options *o)
{
    return strcmp(o->corpus, "induction") == 0;
}

/* HEADCOUNT_TEST_STEPS=N, for tests only (tests/readme_check.sh runs README's
 * commands as written, in minutes): a run takes at most N steps, and says so on
 * stderr. Not a setting: nothing records it but the steps the run took. */
static void cap_steps_for_tests(Options *o)
{
    const char *cap = getenv("HEADCOUNT_TEST_STEPS");
    if (!cap || !*cap)
        return;
    char *end;
    long n = strtol(cap, &end, 10);
    if (*end || n < 1)
        cli_usage_error("HEADCOUNT_TEST_STEPS: expected a whole number of steps >= 1, got '%s'",
                        cap);
    if (o->steps > n) {
        fprintf(stderr, "train: note: HEADCOUNT_TEST_STEPS=%ld: %ld steps, not %ld (a test "
                "setting)\n", n, n, o->steps);
        o->steps = n;
    }
}

void train_options_parse(int argc, char **argv, Options *o, unsigned char given[GIVEN_COUNT])
{
    flags_parse(train_flags(), argc, argv, o, given);
    if (given[SETTING_DATA] && given[SETTING_CORPUS])
        cli_usage_error("--data and --corpus both choose the training text; give one");
    apply_recipe(o, recipe_name(o, given), given);
    if (given[SETTING_VAL_FRAC] && o->val_frac == 0)
        cli_usage_error("--val-frac 0 holds nothing out, so there would be no val loss to "
                        "measure; give a fraction above 0 (e.g. 0.01)");
    if (o->min_lr > o->lr)
        cli_usage_error("--min-lr %g is above --lr %g", o->min_lr, o->lr);
    if (!o->resume)
        require_log_for_heads(o);
    cap_steps_for_tests(o);
    if (given[GIVEN_PRINT_SETTINGS] && !o->resume)
        train_options_print(o); /* with --resume, train.c prints once the checkpoint is read */
    if (o->data && strlen(o->data) >= CKPT_PATH_MAX)
        cli_usage_error("--data: the path is %zu bytes; a checkpoint records at most %d, so "
                        "the run could not be resumed (use a shorter path)", strlen(o->data),
                        CKPT_PATH_MAX - 1);
}
