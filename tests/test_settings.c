/* Settings table tests (trainer/settings): every row of TRAIN_SETTINGS has what
 * its kind needs (a flag, help, a range that holds its default, a type that
 * matches its C type, a checkpoint slot of its own when a resume keeps it), and
 * the copies the table drives are exact: a stored setting survives a checkpoint
 * save and load, and the step settings and the architecture reach TrainHyper
 * and Config with their values. A row that is declared only in part fails here. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <string.h>

#include "trainer/ckpt.h"
#include "trainer/settings.h"
#include "tests/ckpt_fixture.h"

/* The size of the C value each type stands for. */
static size_t type_size(SetType t)
{
    switch (t) {
    case SET_LONG: return sizeof(long);
    case SET_REAL:
    case SET_F32: return sizeof(double);
    case SET_SEED: return sizeof(uint64_t);
    case SET_PATH:
    case SET_NAME: return sizeof(const char *);
    case SET_SWITCH:
    case SET_CHOICE: return sizeof(int);
    }
    return 0;
}

static int is_number(SetType t)
{
    return t == SET_LONG || t == SET_REAL || t == SET_F32 || t == SET_SWITCH || t == SET_CHOICE;
}

Test(settings, every_row_has_a_flag_help_and_a_type_that_fits_its_field)
{
    for (int i = 0; i < SETTING_COUNT; i++) {
        const Setting *s = &settings_table[i];
        cr_assert(s->key && s->key[0], "row %d has no key", i);
        cr_assert(s->flag && s->flag[0], "%s: no flag", s->key);
        cr_assert(s->help && s->help[0], "%s: no help", s->key);
        cr_assert(s->meta != NULL, "%s: no value name for --help", s->key);
        cr_assert((unsigned)s->section < SEC_COUNT, "%s: section %d", s->key, (int)s->section);
        cr_assert_eq(s->size, type_size(s->type), "%s: a %zu-byte field for its type", s->key,
                     s->size);
        for (int j = 0; j < i; j++) {
            cr_assert(strcmp(s->flag, settings_table[j].flag) != 0, "--%s declared twice",
                      s->flag);
            cr_assert(!s->short_flag || s->short_flag != settings_table[j].short_flag,
                      "-%c is --%s's and --%s's", s->short_flag, settings_table[j].flag, s->flag);
        }
    }
}

Test(settings, every_range_holds_its_default)
{
    TrainSettings v;
    settings_defaults(&v);
    for (int i = 0; i < SETTING_COUNT; i++) {
        const Setting *s = &settings_table[i];
        if (s->type == SET_PATH || s->type == SET_NAME) {
            cr_assert(s->def == 0 && s->lo == 0 && s->hi == 0, "%s: a string with a range",
                      s->key);
            cr_assert(s->type != SET_NAME || s->def_str, "%s: a name without a default",
                      s->key);
            continue;
        }
        cr_assert_null(s->def_str, "%s: a number with a string default", s->key);
        if (s->type == SET_SEED) {
            cr_assert(s->lo == 0 && s->hi == 0, "%s: a seed takes any 64-bit value", s->key);
            continue;
        }
        cr_assert(is_number(s->type));
        cr_assert(s->lo <= s->hi, "%s: range [%g, %g]", s->key, s->lo, s->hi);
        cr_assert(s->def >= settings_min(s) && s->def <= s->hi,
                  "%s: default %g outside [%g, %g]", s->key, s->def, settings_min(s), s->hi);
        cr_assert(!s->zero_off || s->def == 0, "%s: zero_off but the default is %g", s->key,
                  s->def);
        cr_assert(s->type != SET_SWITCH || (s->lo == 0 && s->hi == 1), "%s: a switch is 0 or 1",
                  s->key);
        if (s->type == SET_CHOICE) {       /* the range is the names' indices */
            int n = 0;
            while (s->names && s->names[n])
                n++;
            cr_assert(n >= 2 && s->lo == 0 && s->hi == n - 1, "%s: %d names, range [%g, %g]",
                      s->key, n, s->lo, s->hi);
        }
        cr_assert(s->type == SET_CHOICE || !s->names, "%s: names without a choice", s->key);
        cr_assert(s->type != SET_LONG || s->def == (double)(long)s->def, "%s: default %g",
                  s->key, s->def);
    }
}

Test(settings, a_setting_a_resume_keeps_has_a_slot_of_its_own)
{
    char err[300];
    cr_assert_eq(ckpt_state_slots_check(err, sizeof err), 0, "%s", err);
    for (int i = 0; i < SETTING_COUNT; i++) {
        const Setting *s = &settings_table[i];
        if ((s->resume == RES_KEEP || s->resume == RES_CHANGE) && !s->derived)
            cr_assert(s->stored, "%s: a resume keeps it, but the checkpoint does not", s->key);
        cr_assert(!s->derived || (!s->stored && (s->resume == RES_KEEP ||
                                                 s->resume == RES_CHANGE)),
                  "%s: derived, but it has a slot or a resume does not read it", s->key);
        cr_assert(s->resume != RES_FRESH || (s->resume_why && s->resume_why[0]),
                  "%s: a fresh-only setting says why", s->key);
        cr_assert(s->resume != RES_EITHER || s->type == SET_SWITCH, "%s: EITHER is a switch's",
                  s->key);
        if (!s->stored)
            continue;
        int real = s->type == SET_REAL || s->type == SET_F32;
        cr_assert(real || s->type == SET_LONG || s->type == SET_SEED || s->type == SET_SWITCH ||
                  s->type == SET_CHOICE, "%s: a stored string", s->key);
        cr_assert_eq(s->slot_kind, real ? SLOT_REAL : SLOT_INT, "%s: in the wrong array",
                     s->key);
        cr_assert(s->resume != RES_RUN && s->resume != RES_ARCH,
                  "%s: stored, but a resume would not read it", s->key);
    }
}

Test(settings, architecture_and_optimizer_rows_name_real_fields)
{
    int seen[sizeof(Config) / sizeof(int)] = {0};
    for (int i = 0; i < SETTING_COUNT; i++) {
        const Setting *s = &settings_table[i];
        if (s->resume == RES_ARCH) {
            cr_assert_eq(s->type, SET_LONG, "%s", s->key);
            cr_assert(s->cfg_at % sizeof(int) == 0 && s->cfg_at < sizeof(Config), "%s", s->key);
            cr_assert_eq(seen[s->cfg_at / sizeof(int)]++, 0, "%s: a Config field twice", s->key);
        }
        if (s->to_adam)
            cr_assert(s->type == SET_REAL || s->type == SET_F32, "%s", s->key);
        if (s->step)
            cr_assert(s->stored && s->type != SET_PATH && s->type != SET_NAME &&
                      s->type != SET_SWITCH, "%s: a step setting the trainer cannot hold",
                      s->key);
    }
    cr_assert_eq(seen[offsetof(Config, V) / sizeof(int)], 0, "V comes from the tokenizer");
}

/* A value of s other than its default, inside its range, that keeps
 * min_lr <= lr and step <= steps when every setting takes one at once. */
static void nudge(TrainSettings *v, const Setting *s)
{
    void *p = (char *)v + s->at;
    switch (s->type) {
    case SET_LONG: {
        long x = *(long *)p;
        *(long *)p = x + 1 <= (long)s->hi ? x + 1 : x - 1;
        break;
    }
    case SET_REAL:
    case SET_F32: {
        double x = *(double *)p;
        *(double *)p = x != 0 ? x * 0.5 : s->hi * 0.5;
        break;
    }
    case SET_SEED: *(uint64_t *)p ^= 0x8000000000000001ULL; break;
    case SET_SWITCH: *(int *)p = !*(int *)p; break;
    case SET_CHOICE: *(int *)p = *(int *)p + 1 <= (int)s->hi ? *(int *)p + 1 : 0; break;
    default: break;
    }
}

Test(settings, every_stored_setting_survives_a_save_and_a_load)
{
    Fix f;
    /* the nudged head_gates is above 0, which a model with gates must carry */
    fix_init_gated(&f, "settings-roundtrip");
    TrainSettings want;
    settings_defaults(&want);
    for (int i = 0; i < SETTING_COUNT; i++)
        nudge(&want, &settings_table[i]);
    settings_store(&want, &f.ts);
    fix_save(&f, f.path, 1);
    Model m;
    Tokenizer tok;
    TrainState ts;
    int has;
    char err[2000];
    cr_assert_eq(ckpt_load(f.path, &m, &tok, NULL, &ts, &has, err, sizeof err), 0, "%s", err);
    cr_assert_eq(has, 1);
    TrainSettings got, defaults;
    settings_defaults(&got);
    settings_defaults(&defaults);
    for (int i = 0; i < SETTING_COUNT; i++) {
        const Setting *s = &settings_table[i];
        if (!s->stored)
            continue;
        settings_load_one(&ts, s, &got);
        const void *g = (const char *)&got + s->at, *w = (const char *)&want + s->at;
        cr_assert(memcmp((const char *)&defaults + s->at, w, s->size) != 0,
                  "%s: the nudge left the default", s->key);
        if (s->type == SET_F32)
            cr_assert_eq(*(const double *)g, (double)(float)*(const double *)w,
                         "%s: stored as %.17g", s->key, *(const double *)g);
        else
            cr_assert_eq(memcmp(g, w, s->size), 0, "%s: lost in the round trip", s->key);
    }
    model_free(&m);
    tok_free(&tok);
    fix_free(&f);
}

Test(settings, step_and_architecture_settings_reach_the_trainer_and_config)
{
    TrainSettings v;
    settings_defaults(&v);
    for (int i = 0; i < SETTING_COUNT; i++)
        nudge(&v, &settings_table[i]);
    TrainHyper hp;
    memset(&hp, 0, sizeof hp);
    settings_hyper(&v, &hp);
    cr_assert_eq(hp.lr, (float)v.lr);
    cr_assert_eq(hp.min_lr, (float)v.min_lr);
    cr_assert_eq(hp.warmup, v.warmup);
    cr_assert_eq(hp.steps, v.steps);
    cr_assert_eq(hp.clip, (float)v.clip);
    cr_assert_eq(hp.dropout, (float)v.dropout);
    cr_assert_eq(hp.seed, v.seed);
    cr_assert_eq(hp.adam.beta1, (float)v.beta1);
    cr_assert_eq(hp.adam.beta2, (float)v.beta2);
    cr_assert_eq(hp.adam.eps, (float)v.eps);
    cr_assert_eq(hp.adam.weight_decay, (float)v.wd);
    cr_assert_eq(hp.micro, 0, "micro is the caller's");
    for (int i = 0; i < SETTING_COUNT; i++) {
        const Setting *s = &settings_table[i];
        const void *x = (const char *)&v + s->at;
        const char *h = (const char *)&hp + s->hyper_at;
        if (s->to_adam)
            cr_assert_eq(*(const float *)((const char *)&hp.adam + s->adam_at),
                         (float)*(const double *)x, "%s", s->key);
        if (!s->step)
            continue;
        if (s->type == SET_REAL || s->type == SET_F32)
            cr_assert_eq(*(const float *)h, (float)*(const double *)x, "%s", s->key);
        else
            cr_assert_eq(memcmp(h, x, s->size), 0, "%s", s->key);
    }
    Config cfg = {.V = 77};
    settings_config(&v, &cfg);
    cr_assert(cfg.V == 77 && cfg.L == v.layers && cfg.H == v.heads && cfg.C == v.embd &&
                  cfg.D == v.head_size && cfg.T == v.block,
              "config V=%d L=%d H=%d C=%d D=%d T=%d", cfg.V, cfg.L, cfg.H, cfg.C, cfg.D, cfg.T);
}
