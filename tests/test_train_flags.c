/* ./train's flag table (TRAIN_FLAGS, app/train/train_options.h) and what it
 * copies: every row has what the flag engine needs (a flag, a key, help, a
 * range that holds its default, a type that matches its field); every setting
 * a checkpoint stores (trainer/ckpt.c's ckpt_settings) has a row with the same
 * range and a rule that reads it back on --resume; and the plain copies of
 * train_options.c are complete: a stored setting survives a checkpoint save
 * and load, and the step settings and the architecture reach TrainHyper and
 * Config with their values. A row declared only in part fails here. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "app/train/train_options.h"
#include "tests/ckpt_fixture.h"

static const Flag ROWS[OPT_COUNT] = {TRAIN_FLAGS(TRAIN_FLAG_ROW)};
#define ROW_SIZE(ID, field, ctype, ...) [OPT_##ID] = sizeof(ctype),
static const size_t SIZES[OPT_COUNT] = {TRAIN_FLAGS(ROW_SIZE)};
static const FlagTable TABLE = {.rows = ROWS, .n = OPT_COUNT};

/* The size of the C value each type stands for. */
static size_t type_size(FlagType t)
{
    switch (t) {
    case FLAG_LONG: return sizeof(long);
    case FLAG_REAL:
    case FLAG_F32: return sizeof(double);
    case FLAG_SEED: return sizeof(uint64_t);
    case FLAG_PATH:
    case FLAG_TEXT:
    case FLAG_NAME: return sizeof(const char *);
    case FLAG_PATHS: return sizeof(FlagPaths);
    case FLAG_SWITCH:
    case FLAG_CHOICE: return sizeof(int);
    }
    return 0;
}

static int name_count(const Flag *f)
{
    int n = 0;
    while (f->names && f->names[n])
        n++;
    return n;
}

/* The smallest value a row takes: lo, or 0 for a zero_off one. */
static double row_min(const Flag *f)
{
    return f->zero_off && f->lo > 0 ? 0 : f->lo;
}

Test(train_flags, every_row_has_a_flag_key_help_and_a_type_that_fits_its_field)
{
    for (int i = 0; i < OPT_COUNT; i++) {
        const Flag *f = &ROWS[i];
        cr_assert(f->key && f->key[0], "row %d has no key", i);
        cr_assert(f->flag && f->flag[0], "%s: no flag", f->key);
        cr_assert(f->help && f->help[0], "%s: no help", f->key);
        cr_assert(f->meta != NULL, "%s: no value name for --help", f->key);
        cr_assert((unsigned)f->section < SEC_COUNT, "%s: section %d", f->key, f->section);
        cr_assert_eq(SIZES[i], type_size(f->type), "%s: a %zu-byte field for its type", f->key,
                     SIZES[i]);
        cr_assert(f->type != FLAG_PATHS && f->type != FLAG_TEXT, "%s: ./train prints no such "
                  "value in --print-settings", f->key);
        for (int j = 0; j < i; j++) {
            const Flag *g = &ROWS[j];
            cr_assert(strcmp(f->flag, g->flag) != 0, "--%s declared twice", f->flag);
            cr_assert(!f->alias || (strcmp(f->alias, g->flag) != 0 &&
                                    (!g->alias || strcmp(f->alias, g->alias) != 0)),
                      "--%s: its alias --%s is taken", f->flag, f->alias);
            cr_assert(!g->alias || strcmp(f->flag, g->alias) != 0, "--%s is --%s's alias",
                      f->flag, g->flag);
            cr_assert(!f->short_flag || f->short_flag != g->short_flag,
                      "-%c is --%s's and --%s's", f->short_flag, g->flag, f->flag);
        }
    }
}

Test(train_flags, every_range_holds_its_default)
{
    for (int i = 0; i < OPT_COUNT; i++) {
        const Flag *f = &ROWS[i];
        if (f->type == FLAG_PATH || f->type == FLAG_NAME) {
            cr_assert(f->def == 0 && f->lo == 0 && f->hi == 0, "%s: a string with a range",
                      f->key);
            cr_assert(f->type != FLAG_NAME || f->def_str, "%s: a name without a default",
                      f->key);
            continue;
        }
        cr_assert_null(f->def_str, "%s: a number with a string default", f->key);
        if (f->type == FLAG_SEED || f->type == FLAG_SWITCH) {
            cr_assert(f->lo == 0 && f->hi == 0, "%s: a seed or switch with a range", f->key);
            cr_assert(f->type != FLAG_SWITCH || f->def == 0, "%s: a switch that starts on",
                      f->key);
            continue;
        }
        if (f->type == FLAG_CHOICE) {
            int n = name_count(f);
            cr_assert(n >= 2 && f->def >= 0 && f->def < n, "%s: default %g of %d names", f->key,
                      f->def, n);
            continue;
        }
        cr_assert(!f->names, "%s: names without a choice", f->key);
        cr_assert(f->lo <= f->hi, "%s: range [%g, %g]", f->key, f->lo, f->hi);
        cr_assert(f->def >= row_min(f) && f->def <= f->hi, "%s: default %g outside [%g, %g]",
                  f->key, f->def, row_min(f), f->hi);
        cr_assert(!f->zero_off || f->def == 0, "%s: zero_off but the default is %g", f->key,
                  f->def);
        cr_assert(f->type != FLAG_LONG || f->def == (double)(long)f->def, "%s: default %g",
                  f->key, f->def);
    }
}

static const Flag *row_of_key(const char *key)
{
    for (int i = 0; i < OPT_COUNT; i++)
        if (strcmp(ROWS[i].key, key) == 0)
            return &ROWS[i];
    return NULL;
}

/* The settings a resume takes from elsewhere than the training state's slots:
 * the header's dimensions, and what train_options_resume works out (the data
 * file, the corpus, the micro-batches a step, the checkpoint to continue into). */
static const char *const NOT_IN_SLOTS[] = {"layers", "heads", "embd", "head_size", "block",
                                           "head_routing",
                                           "data", "corpus", "accum", "out", NULL};

Test(train_flags, every_stored_setting_has_a_row_with_its_range_and_a_resume_rule)
{
    char err[300];
    cr_assert_eq(ckpt_state_slots_check(err, sizeof err), 0, "%s", err);
    for (int k = 0; k < ckpt_setting_count; k++) {
        const CkptSetting *s = &ckpt_settings[k];
        const Flag *f = row_of_key(s->key);
        cr_assert_not_null(f, "the checkpoint stores %s, which no flag sets", s->key);
        cr_assert(f->resume == FLAG_RESUME_AGREE || f->resume == FLAG_RESUME_CHANGE ||
                  f->resume == FLAG_RESUME_EITHER, "--%s: stored, but a resume would not read it",
                  f->flag);
        cr_assert_eq(s->real, f->type == FLAG_REAL || f->type == FLAG_F32, "%s: in the wrong "
                     "array", s->key);
        if (f->type == FLAG_SEED) {
            cr_assert(s->lo > s->hi, "the seed takes any value");
            continue;
        }
        double lo = row_min(f), hi = f->hi;
        if (f->type == FLAG_SWITCH)
            lo = 0, hi = 1;
        if (f->type == FLAG_CHOICE)
            lo = 0, hi = name_count(f) - 1;
        cr_assert(s->lo == lo && s->hi == hi, "%s: the checkpoint accepts [%g, %g], --%s gives "
                  "[%g, %g]", s->key, s->lo, s->hi, f->flag, lo, hi);
    }
    for (int i = 0; i < OPT_COUNT; i++) {
        const Flag *f = &ROWS[i];
        cr_assert(f->resume != FLAG_RESUME_FRESH || (f->resume_why && f->resume_why[0]),
                  "--%s: a fresh-only setting says why", f->flag);
        cr_assert(f->resume != FLAG_RESUME_AGREE || (f->resume_why && f->resume_why[0]),
                  "--%s: says why the checkpoint's value holds", f->flag);
        cr_assert(f->resume != FLAG_RESUME_EITHER || f->type == FLAG_SWITCH,
                  "--%s: EITHER is a switch's", f->flag);
        if (f->resume == FLAG_RESUME_RUN || f->resume == FLAG_RESUME_FRESH)
            continue;
        int stored = 0, other = 0;
        for (int k = 0; k < ckpt_setting_count; k++)
            stored |= strcmp(ckpt_settings[k].key, f->key) == 0;
        for (int k = 0; NOT_IN_SLOTS[k]; k++)
            other |= strcmp(NOT_IN_SLOTS[k], f->key) == 0;
        cr_assert(stored != other, "--%s: a resume reads it, but %s", f->flag,
                  stored ? "it is also worked out elsewhere" : "the checkpoint does not hold it");
    }
}

/* A value of f other than its default, inside its range, that keeps
 * min_lr <= lr when every setting takes one at once. */
static void nudge(Options *o, const Flag *f)
{
    void *p = (char *)o + f->at;
    switch (f->type) {
    case FLAG_LONG: {
        long x = *(long *)p;
        *(long *)p = x + 1 <= (long)f->hi ? x + 1 : x - 1;
        break;
    }
    case FLAG_REAL:
    case FLAG_F32: {
        double x = *(double *)p;
        *(double *)p = x != 0 ? x * 0.5 : f->hi * 0.5;
        break;
    }
    case FLAG_SEED: *(uint64_t *)p ^= 0x8000000000000001ULL; break;
    case FLAG_SWITCH: *(int *)p = !*(int *)p; break;
    case FLAG_CHOICE: *(int *)p = *(int *)p + 1 < name_count(f) ? *(int *)p + 1 : 0; break;
    default: break;
    }
}

/* The TrainState fields of the stored settings, as ckpt_settings names them. */
#define STORED_FIELDS(X)                                                                       \
    X(save_every) X(allow_binary) X(vocab) X(batch) X(steps) X(lr) X(min_lr) X(warmup) X(wd) \
    X(pos_decay) X(beta1) X(beta2) X(eps) X(clip) X(dropout) X(head_dropout) X(head_gates)     \
    X(routing_balance) X(precision) X(seed) X(val_frac) X(eval_every) X(eval_iters)

Test(train_flags, every_stored_setting_survives_a_save_and_a_load)
{
    Fix f;
    /* the nudged head_gates is above 0, which a model with gates must carry */
    fix_init_gated(&f, "settings-roundtrip");
    Options want, defaults;
    flags_defaults(&TABLE, &want);
    defaults = want;
    for (int i = 0; i < OPT_COUNT; i++)
        nudge(&want, &ROWS[i]);
    TrainState plain = f.ts;
    train_options_store(&defaults, &plain);
    train_options_store(&want, &f.ts);
    int n = 0;
#define DIFFERS(field)                                                                         \
    cr_assert(f.ts.field != plain.field, #field ": the nudge did not reach the training state"); \
    cr_assert_str_eq(ckpt_settings[n].key, #field);                                            \
    n++;
    STORED_FIELDS(DIFFERS)
    cr_assert_eq(n, ckpt_setting_count, "a stored setting this test does not check");
    cr_assert_eq(f.ts.beta1, (double)(float)want.beta1, "stored as the optimizer's float");
    cr_assert_eq(f.ts.lr, want.lr);
    fix_save(&f, f.path, 1);
    Model m;
    Tokenizer tok;
    TrainState ts;
    int has;
    char err[2000];
    cr_assert_eq(ckpt_load(f.path, &m, &tok, NULL, &ts, &has, err, sizeof err), 0, "%s", err);
    cr_assert_eq(has, 1);
#define SAME(field) cr_assert(ts.field == f.ts.field, #field ": lost in the round trip");
    STORED_FIELDS(SAME)
    model_free(&m);
    tok_free(&tok);
    fix_free(&f);
}

Test(train_flags, step_and_architecture_settings_reach_the_trainer_and_config)
{
    Options v;
    flags_defaults(&TABLE, &v);
    for (int i = 0; i < OPT_COUNT; i++)
        nudge(&v, &ROWS[i]);
    TrainHyper hp = train_options_hyper(&v);
    cr_assert_eq(hp.lr, (float)v.lr);
    cr_assert_eq(hp.min_lr, (float)v.min_lr);
    cr_assert_eq(hp.warmup, v.warmup);
    cr_assert_eq(hp.steps, v.steps);
    cr_assert_eq(hp.clip, (float)v.clip);
    cr_assert_eq(hp.dropout, (float)v.dropout);
    cr_assert_eq(hp.head_dropout, (float)v.head_dropout);
    cr_assert_eq(hp.head_gates, (float)v.head_gates);
    cr_assert_eq(hp.seed, v.seed);
    cr_assert_eq(hp.adam.beta1, (float)v.beta1);
    cr_assert_eq(hp.adam.beta2, (float)v.beta2);
    cr_assert_eq(hp.adam.eps, (float)v.eps);
    cr_assert_eq(hp.adam.weight_decay, (float)v.wd);
    cr_assert_eq(hp.micro, 0, "micro is the caller's");
    Config cfg = train_options_config(&v, 77);
    cr_assert(cfg.V == 77 && cfg.L == v.layers && cfg.H == v.heads && cfg.C == v.embd &&
                  cfg.D == v.head_size && cfg.T == v.block && cfg.gates == (v.head_gates > 0),
              "config V=%d L=%d H=%d C=%d D=%d T=%d", cfg.V, cfg.L, cfg.H, cfg.C, cfg.D, cfg.T);
    /* No head size: the width over the heads, where the heads divide it. */
    v.head_size = 0;
    v.embd = 12;
    v.heads = 4;
    cr_assert_eq(train_options_config(&v, 77).D, 3);
    v.heads = 5;
    cr_assert_eq(train_options_config(&v, 77).D, 0, "5 heads do not divide 12 channels");
}
