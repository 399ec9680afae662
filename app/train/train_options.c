/* train_options: flags, help and parsing for ./train over its rows (TRAIN_FLAGS,
 * train_options.h), through the flag engine (app/common/flags.h), and the
 * copies of the values into what a checkpoint, the model and a step hold. */
#include "app/train/train_options.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app/common/cli.h"
#include "data/corpus.h"
#include "util/json.h"

enum { NSET = OPT_COUNT };

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
    {"text", OPT_VOCAB, 1536},
    {"text", OPT_STEPS, 4000},
    {"text", OPT_LR, 5e-3},
    {"text", OPT_MIN_LR, 5e-4},
    {"text", OPT_WARMUP, 800},
    {"text", OPT_POS_STD, 0.1},
    {"text", OPT_POS_DECAY, 1},
    {"induction", OPT_LAYERS, 2},
    {"induction", OPT_HEADS, 4},
    {"induction", OPT_EMBD, 64},
    {"induction", OPT_BLOCK, 64},
    {"induction", OPT_BATCH, 32},
    {"induction", OPT_STEPS, 3000},
    {"induction", OPT_LR, 5e-3},
    {"induction", OPT_MIN_LR, 5e-4},
    {"induction", OPT_WARMUP, 200},
};
const int train_recipe_count = (int)(sizeof train_recipes / sizeof train_recipes[0]);

static void usage(void);

static const char *const EXTRA[] = {"print-settings", NULL};

static const Flag ROWS[NSET] = {TRAIN_FLAGS(TRAIN_FLAG_ROW)};
static const FlagTable FLAGS = {.rows = ROWS, .n = NSET, .extra = EXTRA, .usage = usage,
                                .version = "train (headcount) " HEADCOUNT_VERSION};

const FlagTable *train_flags(void)
{
    return &FLAGS;
}

/* The recipe of the built-in corpus o trains on: "text", "induction", or NULL
 * for --data. */
static const char *recipe_name(const Options *o, const unsigned char *given)
{
    if (train_is_induction(o))
        return "induction";
    return given[OPT_DATA] ? NULL : "text";
}

/* Gives o the values of corpus' recipe for each setting not given. */
static void apply_recipe(Options *o, const char *corpus, const unsigned char *given)
{
    for (int k = 0; corpus && k < train_recipe_count; k++) {
        const Recipe *r = &train_recipes[k];
        if (strcmp(r->corpus, corpus) != 0 || given[r->flag])
            continue;
        const Flag *f = &ROWS[r->flag];
        if (f->type == FLAG_LONG)
            *(long *)((char *)o + f->at) = (long)r->value;
        else if (f->type == FLAG_CHOICE)
            *(int *)((char *)o + f->at) = (int)r->value;
        else
            *(double *)((char *)o + f->at) = r->value;
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
        const Flag *f = &ROWS[i];
        const void *v = (const char *)o + f->at;
        printf("%s\"%s\":", i ? "," : "", f->key);
        switch (f->type) {
        case FLAG_LONG: printf("%ld", *(const long *)v); break;
        case FLAG_REAL:
        case FLAG_F32: json_fput_shortest(stdout, *(const double *)v); break;
        case FLAG_SEED: printf("%llu", (unsigned long long)*(const uint64_t *)v); break;
        case FLAG_PATH:
        case FLAG_TEXT:
        case FLAG_NAME: {
            const char *str = *(const char *const *)v;
            if (str)
                json_fput_string(stdout, str);
            else
                printf("null");
            break;
        }
        case FLAG_SWITCH: printf("%s", *(const int *)v ? "true" : "false"); break;
        case FLAG_CHOICE: printf("\"%s\"", f->names[*(const int *)v]); break;
        case FLAG_PATHS: break; /* ./train has none */
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

/* --routing-balance weighs the routers' loss: given to a run without routers (no
 * --head-routing, or a resumed checkpoint trained without) it would do nothing,
 * so it is a usage error. Checked after parsing a fresh run and after a resume
 * has taken the checkpoint's K. */
static void require_routing_for_balance(const Options *o, const unsigned char *given)
{
    if (given[OPT_ROUTING_BALANCE] && !o->head_routing)
        cli_usage_error("--routing-balance %g weighs the routers' balance loss, and %s has no "
                        "routers; give it with --head-routing K", o->routing_balance,
                        o->resume ? "the checkpoint's model" : "a run without --head-routing");
}

void train_options_resume(Options *o, const unsigned char *given, const Config *cfg,
                          const TrainState *ts, long ranks, const char *ckpt)
{
    /* What the checkpoint holds: its dimensions and its training state. */
    Options have = *o;
    have.layers = cfg->L;
    have.heads = cfg->H;
    have.embd = cfg->C;
    have.head_size = cfg->D;
    have.block = cfg->T;
    have.save_every = ts->save_every;
    have.allow_binary = ts->allow_binary;
    have.vocab = ts->vocab;
    have.batch = ts->batch;
    have.steps = ts->steps;
    have.lr = ts->lr;
    have.min_lr = ts->min_lr;
    have.warmup = ts->warmup;
    have.wd = ts->wd;
    have.pos_decay = ts->pos_decay;
    have.beta1 = ts->beta1;
    have.beta2 = ts->beta2;
    have.eps = ts->eps;
    have.clip = ts->clip;
    have.dropout = ts->dropout;
    have.head_dropout = ts->head_dropout;
    have.head_gates = ts->head_gates;
    have.head_routing = cfg->route_k;
    have.routing_balance = cfg->route_k ? ts->routing_balance : o->routing_balance;
    have.precision = ts->precision;
    have.seed = ts->seed;
    have.val_frac = ts->val_frac;
    have.eval_every = ts->eval_every;
    have.eval_iters = ts->eval_iters;
    /* What the checkpoint implies: the text, which a --corpus cannot choose when
     * the run trained on a file; the micro-batches a step, shared among the
     * ranks; and the checkpoint, which the run continues into. */
    CorpusSource source = corpus_source_of(ts->data_path);
    if (given[OPT_CORPUS] && source == CORPUS_SOURCE_FILE)
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
    flags_resume(&FLAGS, o, &have, given, ckpt);
    require_log_for_heads(o);
    require_routing_for_balance(o, given);
}

void train_options_record(const Options *o, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < NSET && k < len; i++) {
        const Flag *f = &ROWS[i];
        if (!f->in_log)
            continue;
        /* routing's keys only in a routed run's record: a plain run's is as it was */
        if ((i == OPT_HEAD_ROUTING || i == OPT_ROUTING_BALANCE) && !o->head_routing)
            continue;
        char v[64], quoted[6 * sizeof v + 3]; /* every byte \u00XX at worst, quotes, NUL */
        flags_format(f, o, v, sizeof v);
        int named = f->type == FLAG_NAME || f->type == FLAG_CHOICE;
        if (named)
            json_string(quoted, v);
        k += (size_t)snprintf(buf + k, len - k, "%s\"%s\":%s", k ? "," : "", f->key,
                              named ? quoted : v);
    }
}

void train_options_say(const Options *o, char *buf, size_t len)
{
    size_t k = 0;
    buf[0] = '\0';
    for (int i = 0; i < NSET && k < len; i++) {
        const Flag *f = &ROWS[i];
        if (!f->say)
            continue;
        char v[64];
        flags_format(f, o, v, sizeof v);
        k += (size_t)snprintf(buf + k, len - k, ", %s %s", f->say, v);
    }
}

void train_options_store(const Options *o, TrainState *ts)
{
    ts->save_every = o->save_every;
    ts->allow_binary = o->allow_binary;
    ts->vocab = o->vocab;
    ts->batch = o->batch;
    ts->steps = o->steps;
    ts->lr = o->lr;
    ts->min_lr = o->min_lr;
    ts->warmup = o->warmup;
    ts->wd = o->wd;
    ts->pos_decay = o->pos_decay;
    ts->beta1 = (double)(float)o->beta1;
    ts->beta2 = (double)(float)o->beta2;
    ts->eps = (double)(float)o->eps;
    ts->clip = o->clip;
    ts->dropout = o->dropout;
    ts->head_dropout = o->head_dropout;
    ts->head_gates = o->head_gates;
    /* 0 without routing, so that a plain run's checkpoint is the bytes it was */
    ts->routing_balance = o->head_routing ? o->routing_balance : 0.0;
    ts->precision = o->precision;
    ts->seed = o->seed;
    ts->val_frac = o->val_frac;
    ts->eval_every = o->eval_every;
    ts->eval_iters = o->eval_iters;
}

Config train_options_config(const Options *o, int V)
{
    Config cfg = {.V = V};
    cfg.L = (int)o->layers;
    cfg.H = (int)o->heads;
    cfg.C = (int)o->embd;
    cfg.D = o->head_size ? (int)o->head_size : config_head_size(cfg.C, cfg.H);
    cfg.T = (int)o->block;
    cfg.gates = o->head_gates > 0;
    cfg.route_k = (int)o->head_routing;
    return cfg;
}

TrainHyper train_options_hyper(const Options *o)
{
    TrainHyper hp = {0};
    hp.steps = o->steps;
    hp.warmup = o->warmup;
    hp.lr = (float)o->lr;
    hp.min_lr = (float)o->min_lr;
    hp.clip = (float)o->clip;
    hp.dropout = (float)o->dropout;
    hp.head_dropout = (float)o->head_dropout;
    hp.head_gates = (float)o->head_gates;
    hp.route_balance = o->head_routing ? (float)o->routing_balance : 0.0f;
    hp.seed = o->seed;
    hp.adam.beta1 = (float)o->beta1;
    hp.adam.beta2 = (float)o->beta2;
    hp.adam.eps = (float)o->eps;
    hp.adam.weight_decay = (float)o->wd;
    return hp;
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
    if (given[OPT_DATA] && given[OPT_CORPUS])
        cli_usage_error("--data and --corpus both choose the training text; give one");
    apply_recipe(o, recipe_name(o, given), given);
    if (given[OPT_VAL_FRAC] && o->val_frac == 0)
        cli_usage_error("--val-frac 0 holds nothing out, so there would be no val loss to "
                        "measure; give a fraction above 0 (e.g. 0.01)");
    if (o->min_lr > o->lr)
        cli_usage_error("--min-lr %g is above --lr %g", o->min_lr, o->lr);
    if (o->head_routing && o->head_gates > 0)
        cli_usage_error("--head-routing %ld and --head-gates %g both choose which heads a token "
                        "uses; give one", o->head_routing, o->head_gates);
    /* The model's rules (config_validate) on a fresh run's flags before any work, so
     * that --head-routing above --n-heads stops here; the vocabulary is known only
     * once the text is read (1 stands in: the real one is checked then, as is a
     * head count that does not divide the width). */
    Config early = train_options_config(o, 1);
    char why[200];
    if (!o->resume && early.D && config_validate(&early, why, sizeof why))
        cli_usage_error("%s", why);
    if (!o->resume) {
        require_log_for_heads(o);
        require_routing_for_balance(o, given);
    }
    cap_steps_for_tests(o);
    if (given[GIVEN_PRINT_SETTINGS] && !o->resume)
        train_options_print(o); /* with --resume, train.c prints once the checkpoint is read */
    if (o->data && strlen(o->data) >= CKPT_PATH_MAX)
        cli_usage_error("--data: the path is %zu bytes; a checkpoint records at most %d, so "
                        "the run could not be resumed (use a shorter path)", strlen(o->data),
                        CKPT_PATH_MAX - 1);
}
