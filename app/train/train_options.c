/* train_options: flags, help and parsing for ./train over the settings table (see
 * train_options.h and trainer/settings.h). */
#include "app/train/train_options.h"

#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/common/cli.h"
#include "util/json.h"

enum { NSET = SETTING_COUNT };

static const char *const SECTIONS[SEC_COUNT] = {
    [SEC_FILES] = "data and output", [SEC_MODEL] = "model", [SEC_TRAINING] = "training",
    [SEC_PROGRAM] = "program"};
/* The option id of row i. */
static int opt_id(int i)
{
    return OPT_FIRST + 1 + i;
}

static void *value_of(Options *o, const Setting *s)
{
    return (char *)o + s->at;
}

static const void *cvalue_of(const Options *o, const Setting *s)
{
    return (const char *)o + s->at;
}

/* The value as --help and messages print it. */
static void format_value(const Options *o, const Setting *s, char *buf, size_t len)
{
    const void *v = cvalue_of(o, s);
    switch (s->type) {
    case SET_LONG: snprintf(buf, len, "%ld", *(const long *)v); break;
    case SET_REAL:
    case SET_F32: cli_format_double(buf, len, *(const double *)v); break;
    case SET_SEED: snprintf(buf, len, "%llu", (unsigned long long)*(const uint64_t *)v); break;
    case SET_PATH:
    case SET_NAME:
        snprintf(buf, len, "%s", *(const char *const *)v ? *(const char *const *)v : "none");
        break;
    case SET_SWITCH: snprintf(buf, len, "%s", *(const int *)v ? "on" : "off"); break;
    case SET_CHOICE: snprintf(buf, len, "%s", s->names[*(const int *)v]); break;
    }
}

static int same_value(const Options *a, const Options *b, const Setting *s);
static void induction_recipe(Options *o, const unsigned char *given);
static void text_recipe(Options *o, const unsigned char *given);

/* One help line: the flags by which a recipe differs from the defaults. */
static void print_recipe(const char *name, void (*recipe)(Options *, const unsigned char *))
{
    Options d, r;
    unsigned char none[OPT_COUNT] = {0};
    settings_defaults(&d);
    r = d;
    recipe(&r, none);
    printf("  %-28s", name);
    for (int i = 0; i < NSET; i++) {
        const Setting *s = &settings_table[i];
        if (same_value(&d, &r, s))
            continue;
        char v[64];
        format_value(&r, s, v, sizeof v);
        printf(" --%s %s", s->flag, v);
    }
    printf("\n");
}

static void usage(void)
{
    Options d;
    settings_defaults(&d);
    printf("usage: ./train [--data FILE] [options]\n"
           "Trains a small GPT (bytes or byte-pair tokens, multi-head attention) and writes a\n"
           "checkpoint.\n"
           "Without --data it trains on the built-in generated corpus (docs/corpus.md),\n"
           "with that corpus' own recipe (below).\n");
    for (int sec = 0; sec < SEC_COUNT; sec++) {
        printf("\n%s:\n", SECTIONS[sec]);
        for (int i = 0; i < NSET; i++) {
            const Setting *s = &settings_table[i];
            if ((int)s->section != sec)
                continue;
            char left[64], def[64];
            if (s->short_flag)
                snprintf(left, sizeof left, "  -%c, --%s %s", s->short_flag, s->flag, s->meta);
            else
                snprintf(left, sizeof left, "      --%s %s", s->flag, s->meta);
            if (s->def_text)
                snprintf(def, sizeof def, "%s", s->def_text);
            else
                format_value(&d, s, def, sizeof def);
            printf("%-24s %s (default: %s)\n", left, s->help, def);
            if (s->more)
                printf("%-24s %s\n", "", s->more);
        }
        if (sec == SEC_PROGRAM)
            printf("%-24s this help\n%-24s the version\n%-24s print the settings these flags "
                   "give, as JSON, and exit\n", "  -h, --help", "      --version",
                   "      --print-settings");
    }
    printf("\nThe defaults above are for --data; each built-in corpus has its own recipe,\n"
           "which any flag given overrides:\n");
    print_recipe("--corpus text (the default)", text_recipe);
    print_recipe("--corpus induction", induction_recipe);
    printf("\nOutputs are never the same file as an input; other files are never written or\n"
           "deleted (docs/checkpoint.md, \"Files\").\n");
}

/* --print-settings: what a run with these flags would use, for scripts: one JSON
 * object keyed by the settings' field names (a path not given is null; 0 for
 * head_size and threads means automatic). */
static void print_settings_json(const Options *o)
{
    printf("{");
    for (int i = 0; i < NSET; i++) {
        const Setting *s = &settings_table[i];
        const void *v = cvalue_of(o, s);
        printf("%s\"%s\":", i ? "," : "", s->key);
        switch (s->type) {
        case SET_LONG: printf("%ld", *(const long *)v); break;
        case SET_REAL:
        case SET_F32: printf("%.17g", *(const double *)v); break;
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
}

static void copy_value(Options *dst, const Options *src, const Setting *s)
{
    switch (s->type) {
    case SET_LONG: *(long *)value_of(dst, s) = *(const long *)cvalue_of(src, s); break;
    case SET_REAL:
    case SET_F32: *(double *)value_of(dst, s) = *(const double *)cvalue_of(src, s); break;
    case SET_SEED: *(uint64_t *)value_of(dst, s) = *(const uint64_t *)cvalue_of(src, s); break;
    case SET_CHOICE: *(int *)value_of(dst, s) = *(const int *)cvalue_of(src, s); break;
    default: break;
    }
}

/* Whether two values of setting s are the same setting (F32 as the optimizer
 * sees them). */
static int same_value(const Options *a, const Options *b, const Setting *s)
{
    const void *x = cvalue_of(a, s), *y = cvalue_of(b, s);
    switch (s->type) {
    case SET_LONG: return *(const long *)x == *(const long *)y;
    case SET_REAL: return *(const double *)x == *(const double *)y;
    case SET_F32: return (float)*(const double *)x == (float)*(const double *)y;
    case SET_SEED: return *(const uint64_t *)x == *(const uint64_t *)y;
    case SET_CHOICE: return *(const int *)x == *(const int *)y;
    default: return 1;
    }
}

void train_options_resume(Options *o, const unsigned char *given, const Config *c,
                          const TrainState *ts)
{
    Options have = *o;
    for (int i = 0; i < NSET; i++) {
        const Setting *s = &settings_table[i];
        const char *why;
        if (s->resume == RES_ARCH) {
            *(long *)value_of(&have, s) = *(const int *)((const char *)c + s->cfg_at);
            why = "the architecture comes from the checkpoint";
        } else if (s->resume == RES_KEEP || s->resume == RES_CHANGE) {
            settings_load_one(ts, s, &have);
            why = "an exact resume continues the run as it was set up";
        } else {
            continue;
        }
        if (s->resume == RES_CHANGE) {
            if (!given[opt_id(i)])
                copy_value(o, &have, s);
            continue;
        }
        if (given[opt_id(i)] && !same_value(o, &have, s)) {
            char want[64], got[64];
            format_value(o, s, want, sizeof want);
            format_value(&have, s, got, sizeof got);
            cli_usage_error("--%s %s contradicts the checkpoint (%s): %s", s->flag, want, got,
                            why);
        }
        copy_value(o, &have, s);
    }
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
        format_value(o, s, v, sizeof v);
        if (s->type == SET_NAME)
            json_string(quoted, v);
        k += (size_t)snprintf(buf + k, len - k, "%s\"%s\":%s", k ? "," : "", s->key,
                              s->type == SET_NAME ? quoted : v);
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
        format_value(o, s, v, sizeof v);
        k += (size_t)snprintf(buf + k, len - k, ", %s %s", s->say, v);
    }
}

int train_is_induction(const Options *o)
{
    return strcmp(o->corpus, "induction") == 0;
}

/* --corpus induction: the recipe of docs/corpus.md ("The induction task"), for
 * every setting the command line does not give. */
static void induction_recipe(Options *o, const unsigned char *given)
{
    if (!given[OPT_LAYERS]) o->layers = 2;
    if (!given[OPT_HEADS]) o->heads = 4;
    if (!given[OPT_EMBD]) o->embd = 64;
    if (!given[OPT_BLOCK]) o->block = 64;
    if (!given[OPT_BATCH]) o->batch = 32;
    if (!given[OPT_STEPS]) o->steps = 3000;
    if (!given[OPT_WARMUP]) o->warmup = 200;
    if (!given[OPT_LR]) o->lr = 5e-3;
    if (!given[OPT_MIN_LR]) o->min_lr = 5e-4;
}

/* The built-in text corpus (no --data, no --corpus induction): words, 1,536
 * byte-pair tokens, at which every word of the documents' sentences ("The
 * tired cat slept on the warm mat.") is one token (at 1,024 "mat" and "down"
 * are split) and whole sentences of the corpus fit a 64-token context
 * (--vocab 0 trains on bytes); and the learning rate at which the layer-0
 * heads become sharp previous-token heads within the default 2,000 steps
 * (docs/heads.md, "What we tried for the previous-token head"); at --data's
 * 1e-3 they stay spread over the tokens before. */
static void text_recipe(Options *o, const unsigned char *given)
{
    if (!given[OPT_VOCAB]) o->vocab = 1536;
    if (!given[OPT_LR]) o->lr = 5e-3;
    if (!given[OPT_MIN_LR]) o->min_lr = 5e-4;
}

/* A CHOICE's names as "a, b or c". */
static const char *choice_list(const Setting *s)
{
    static char buf[256];
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; s->names[i] && k < sizeof buf; i++) {
        const char *sep = i == 0 ? "" : s->names[i + 1] ? ", " : " or ";
        k += (size_t)snprintf(buf + k, sizeof buf - k, "%s%s", sep, s->names[i]);
    }
    return buf;
}

/* One flag's value from optarg, checked against the setting's range. */
static void parse_value(Options *o, const Setting *s, const char *arg)
{
    void *v = value_of(o, s);
    switch (s->type) {
    case SET_LONG:
        /* A zero_off setting takes 0 too: its default, or off (--vocab 0: bytes). */
        *(long *)v = s->zero_off && strcmp(arg, "0") == 0
                         ? 0
                         : cli_long(s->flag, arg, (long)s->lo, (long)s->hi);
        break;
    case SET_REAL:
    case SET_F32: *(double *)v = cli_double(s->flag, arg, s->lo, s->hi); break;
    case SET_SEED: *(uint64_t *)v = cli_u64(s->flag, arg); break;
    case SET_PATH:
        if (!arg[0])
            cli_usage_error("--%s '': the path is empty; give a file name", s->flag);
        *(const char **)v = arg;
        break;
    case SET_NAME: {
        char list[200] = "";
        for (size_t k = 0, n = 0; s->names[k]; k++) {
            if (strcmp(arg, s->names[k]) == 0) {
                *(const char **)v = s->names[k];
                return;
            }
            n += (size_t)snprintf(list + n, n < sizeof list ? sizeof list - n : 0, "%s%s",
                                  k ? " or " : "", s->names[k]);
        }
        cli_usage_error("--%s '%s': expected %s", s->flag, arg, list);
    }
    case SET_SWITCH: *(int *)v = 1; break;
    case SET_CHOICE:
        for (int k = 0; s->names[k]; k++)
            if (strcmp(arg, s->names[k]) == 0) {
                *(int *)v = k;
                return;
            }
        cli_usage_error("--%s '%s': expected %s", s->flag, arg, choice_list(s));
    }
}

void train_options_parse(int argc, char **argv, Options *o, unsigned char given[OPT_COUNT])
{
    static struct option longs[NSET + 4];
    static CliShort shorts[NSET + 1];
    static char shortopts[3 * NSET + 4];
    size_t nshorts = 0, k = 0;
    shortopts[k++] = ':';
    for (int i = 0; i < NSET; i++) {
        const Setting *s = &settings_table[i];
        longs[i] = (struct option){s->flag, s->type == SET_SWITCH ? no_argument
                                                                   : required_argument, 0,
                                   opt_id(i)};
        if (s->short_flag) {
            shorts[nshorts++] = (CliShort){s->short_flag, opt_id(i)};
            shortopts[k++] = s->short_flag;
            if (s->type != SET_SWITCH)
                shortopts[k++] = ':';
        }
    }
    settings_defaults(o);
    longs[NSET] = (struct option){"help", no_argument, 0, OPT_HELP};
    longs[NSET + 1] = (struct option){"version", no_argument, 0, OPT_VERSION};
    longs[NSET + 2] = (struct option){"print-settings", no_argument, 0, OPT_PRINT_SETTINGS};
    longs[NSET + 3] = (struct option){0, 0, 0, 0};
    shorts[nshorts++] = (CliShort){'h', OPT_HELP};
    shortopts[k++] = 'h';
    shortopts[k] = '\0';
    int c;
    while ((c = cli_next_option(argc, argv, shortopts, longs, shorts, nshorts)) != -1) {
        if (c > OPT_FIRST && c < OPT_HELP) {
            given[c] = 1;
            parse_value(o, &settings_table[c - OPT_FIRST - 1], optarg);
            continue;
        }
        switch (c) {
        case OPT_HELP: usage(); cli_close_stdout(); exit(0);
        case OPT_VERSION:
            printf("train (headcount) %s\n", HEADCOUNT_VERSION);
            cli_close_stdout();
            exit(0);
        case OPT_PRINT_SETTINGS: given[c] = 1; break;
        default: cli_usage_error("unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        cli_usage_error("unexpected argument '%s' (flags take the form --name value)",
                        argv[optind]);
    if (given[OPT_DATA] && given[OPT_CORPUS])
        cli_usage_error("--data and --corpus both choose the training text; give one");
    if (train_is_induction(o))
        induction_recipe(o, given);
    else if (!given[OPT_DATA])
        text_recipe(o, given);
    if (given[OPT_VAL_FRAC] && o->val_frac == 0)
        cli_usage_error("--val-frac 0 holds nothing out, so there would be no val loss to "
                        "measure; give a fraction above 0 (e.g. 0.01)");
    if (o->min_lr > o->lr)
        cli_usage_error("--min-lr %g is above --lr %g", o->min_lr, o->lr);
    if (o->heads_every && !o->log && !o->resume)
        cli_usage_error("--heads-every %ld needs --log FILE to write the metrics to",
                        o->heads_every);
    if (given[OPT_PRINT_SETTINGS]) {
        print_settings_json(o);
        cli_close_stdout();
        exit(0);
    }
    if (o->data && strlen(o->data) >= CKPT_PATH_MAX)
        cli_usage_error("--data: the path is %zu bytes; a checkpoint records at most %d, so "
                        "the run could not be resumed (use a shorter path)", strlen(o->data),
                        CKPT_PATH_MAX - 1);
}
