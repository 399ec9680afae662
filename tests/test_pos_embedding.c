/* The position embedding's two settings. --pos-std (params_scale_positions,
 * model/params.h): its initial values are the same draws scaled from
 * PARAMS_INIT_STD to the given standard deviation, and every other parameter
 * keeps its bits; the default is the draw as it was, a resumed run refuses the
 * flag, the built-in text corpus' recipe sets it, and a value out of range is
 * one usage-error line. --pos-decay off (params_decay_positions): AdamW leaves
 * it undecayed, so one step differs from a decayed one by exactly the decay
 * term on it and nowhere else; a checkpoint stores the choice, a resumed run
 * keeps it (3 + 3 steps are 6) and refuses the other, and ./train passes it
 * to the optimiser the right way round. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpt.h"
#include "trainer/ckpt.h"
#include "trainer/trainer.h"
#include "util/rng.h"
#include "tests/progutil.h"
#include "tests/testutil.h"

static void fresh(Model *m, const Config *cfg, uint64_t seed)
{
    char err[256];
    cr_assert_eq(model_init(m, cfg, err, sizeof err), 0, "%s", err);
    params_init(&m->table, m->params, seed);
}

Test(pos_embedding, scales_the_position_draws_and_leaves_every_other_parameter)
{
    Config cfg = {.V = 13, .T = 8, .L = 2, .H = 4, .C = 16, .D = 4};
    Model a, b, c;
    fresh(&a, &cfg, 7);
    fresh(&b, &cfg, 7);
    fresh(&c, &cfg, 7);
    params_scale_positions(&b.table, b.params, 0.1);
    params_scale_positions(&c.table, c.params, PARAMS_INIT_STD);
    cr_assert_eq(memcmp(a.params, c.params, a.table.total * sizeof(float)), 0,
                 "--pos-std 0.02 changed the draws");
    const ParamSpec *pe = params_spec(&a.table, P_WPE);
    for (size_t j = 0; j < pe->count; j++) {
        float x = a.params[pe->offset + j], y = b.params[pe->offset + j];
        cr_assert_eq(y, (float)(5.0 * x), "wpe[%zu]: %.9g is not 5 x %.9g", j, y, x);
    }
    for (int k = 0; k < a.table.n; k++) {
        const ParamSpec *s = &a.table.spec[k];
        if (s->kind == P_WPE)
            continue;
        cr_assert_eq(memcmp(a.params + s->offset, b.params + s->offset, s->count * sizeof(float)),
                     0, "%s changed", s->name);
    }
    model_free(&a);
    model_free(&b);
    model_free(&c);
}

/* On the recipe's 64 x 128 table the scaled draws have the standard deviation
 * asked for (8,192 normals: a sample s.d. within 3 % of it). */
Test(pos_embedding, the_scaled_table_has_the_standard_deviation_asked_for)
{
    Config cfg = {.V = 13, .T = 64, .L = 1, .H = 4, .C = 128, .D = 32};
    Model m;
    fresh(&m, &cfg, 1);
    params_scale_positions(&m.table, m.params, 0.1);
    const ParamSpec *pe = params_spec(&m.table, P_WPE);
    double sum = 0, sq = 0;
    for (size_t j = 0; j < pe->count; j++) {
        double x = m.params[pe->offset + j];
        sum += x;
        sq += x * x;
    }
    double mean = sum / pe->count, sd = sqrt(sq / pe->count - mean * mean);
    cr_assert(fabs(sd - 0.1) < 0.003, "s.d. %.5f, asked 0.1", sd);
    cr_assert(fabs(mean) < 0.005, "mean %.5f", mean);
    model_free(&m);
}

Test(pos_embedding, command_line_default_log_resume_and_range)
{
    Env e;
    env_init(&e, "pos-std");
    char ck[2][400];
    const char *extra[2] = {"", "--pos-std 0.02"};
    for (int i = 0; i < 2; i++) {
        snprintf(ck[i], sizeof ck[i], "%s/r%d.ckpt", e.dir, i);
        char *out;
        int rc = tu_run(&out, "%s/train " TINY " --steps 4 --data %s --out %s %s", tu_bin(),
                        e.data, ck[i], extra[i]);
        cr_assert_eq(rc, 0, "%s", out);
        free(out);
    }
    cr_assert(same_files(ck[0], ck[1]), "--pos-std 0.02 differs from no flag with --data");
    char *out;
    int rc = tu_run(&out, "%s/train " TINY " --steps 4 --data %s --out %s --log %s --pos-std 0.1",
                    tu_bin(), e.data, e.out, e.log);
    cr_assert_eq(rc, 0, "%s", out);
    free(out);
    cr_assert(!same_files(ck[0], e.out), "--pos-std 0.1 trained the same model");
    char *log = tu_read_text(e.log);
    cr_assert(log && strstr(log, "\"pos_std\":0.1,"), "log: %s", log);
    free(log);
    rc = tu_run(&out, "%s/train --resume %s --steps 8 --pos-std 0.1", tu_bin(), e.out);
    expect_error(out, rc, 2, "train", "--pos-std sets a fresh run's initial position embedding");
    free(out);
    rc = tu_run(&out, "%s/train --print-settings", tu_bin());
    cr_assert_eq(rc, 0, "%s", out);
    cr_assert(strstr(out, "\"pos_std\":0.1,"), "recipe: %s", out);
    free(out);
    refuse_train(&e, "--pos-std 11", 2, "--pos-std: expected a number in [0, 10], got '11'");
}

/* One step of a fresh trainer (seed 5) on a random batch, the position
 * embedding decayed or not: its parameters after the step in out. */
static void one_step(int decay, float lr, float wd, float *out, size_t *n, float *wpe0,
                     size_t *wpe_at, size_t *wpe_count)
{
    Config cfg = {.V = 11, .T = 8, .L = 1, .H = 2, .C = 8, .D = 4};
    char err[256];
    Trainer t;
    TrainHyper hp = {.lr = lr, .min_lr = lr, .steps = 10, .warmup = 0, .clip = 0, .seed = 5,
                     .micro = 1, .adam = {0.9f, 0.99f, 1e-8f, wd}};
    cr_assert_eq(trainer_init(&t, &cfg, 5, err, sizeof err), 0, "%s", err);
    params_decay_positions(&t.model.table, decay);
    cr_assert_eq(trainer_prepare(&t, &hp, 2, err, sizeof err), 0, "%s", err);
    const ParamSpec *pe = params_spec(&t.model.table, P_WPE);
    *wpe_at = pe->offset;
    *wpe_count = pe->count;
    memcpy(wpe0, t.model.params + pe->offset, pe->count * sizeof(float));
    int in[16], tg[16];
    Rng rng;
    rng_init(&rng, 3, 0);
    for (int i = 0; i < 16; i++) {
        in[i] = (int)rng_below(&rng, 11);
        tg[i] = (int)rng_below(&rng, 11);
    }
    TrainStep st;
    cr_assert_eq(trainer_step(&t, in, tg, &st), 0);
    *n = t.model.table.total;
    memcpy(out, t.model.params, *n * sizeof(float));
    trainer_free(&t);
}

Test(pos_embedding, decay_off_leaves_out_exactly_the_decay_term_on_the_positions)
{
    enum { MAXP = 4096 };
    static float on[MAXP], off[MAXP], wpe0[MAXP];
    size_t n, at, count;
    float lr = 1e-2f, wd = 0.5f;
    one_step(1, lr, wd, on, &n, wpe0, &at, &count);
    cr_assert(n <= MAXP);
    one_step(0, lr, wd, off, &n, wpe0, &at, &count);
    for (size_t i = 0; i < n; i++) {
        if (i >= at && i < at + count) {
            /* on = p0 (1 - lr wd) - u, off = p0 - u: off - on = p0 lr wd */
            double want = (double)wpe0[i - at] * lr * wd, got = (double)off[i] - on[i];
            cr_assert(fabs(got - want) <= 1e-6 + 1e-3 * fabs(want),
                      "wpe[%zu]: off - on = %.9g, want p0 lr wd = %.9g", i - at, got, want);
        } else {
            cr_assert_eq(on[i], off[i], "parameter %zu changed with the position decay", i);
        }
    }
    ParamTable t;
    Config cfg = {.V = 11, .T = 8, .L = 2, .H = 2, .C = 8, .D = 4};
    params_table_init(&t, &cfg);
    params_decay_positions(&t, 0);
    for (int k = 0; k < t.n; k++)
        cr_assert_eq(t.spec[k].decay, t.spec[k].kind != P_WPE && t.spec[k].rows > 1, "%s",
                     t.spec[k].name);
}

Test(pos_embedding, decay_is_stored_and_a_resumed_run_keeps_it)
{
    Env e;
    env_init(&e, "pos-decay");
    expect_resume_matches(&e, TINY " --pos-decay off", "--pos-decay on",
                          "--pos-decay on contradicts the checkpoint (off)");
    char path[400];
    snprintf(path, sizeof path, "%s/part.ckpt", e.dir);
    Model m;
    Tokenizer tok;
    TrainState ts;
    int has;
    char err[2000];
    cr_assert_eq(ckpt_load(path, &m, &tok, NULL, &ts, &has, err, sizeof err), 0, "%s", err);
    cr_assert(has && ts.pos_decay == 1, "stored pos_decay %d", ts.pos_decay);
    model_free(&m);
    tok_free(&tok);
    refuse_train(&e, "--pos-decay maybe", 2, "--pos-decay 'maybe': expected on or off");
}

/* train's --pos-decay reaches the optimiser the right way round: one step of
 * ./train (lr constant, no warm-up) with the embedding decayed and one without
 * differ only in the position table, by the decay term lr wd p there (the
 * table's values, p0, are within lr of p after one step). */
Test(pos_embedding, train_decays_the_positions_with_on_and_not_with_off)
{
    Env e;
    env_init(&e, "pos-decay-train");
    const double lr = 1e-3, wd = 0.5;
    const char *choice[2] = {"on", "off"};
    char ck[2][400];
    Model m[2];
    for (int i = 0; i < 2; i++) {
        snprintf(ck[i], sizeof ck[i], "%s/%s.ckpt", e.dir, choice[i]);
        char *out;
        int rc = tu_run(&out, "%s/train " TINY " --steps 1 --data %s --lr %g --min-lr %g "
                        "--warmup 0 --wd %g --pos-decay %s --out %s", tu_bin(), e.data, lr, lr,
                        wd, choice[i], ck[i]);
        cr_assert_eq(rc, 0, "%s", out);
        free(out);
        Tokenizer tok;
        char err[2000];
        cr_assert_eq(ckpt_load(ck[i], &m[i], &tok, NULL, NULL, NULL, err, sizeof err), 0, "%s",
                     err);
        tok_free(&tok);
    }
    const ParamSpec *pe = params_spec(&m[0].table, P_WPE);
    double num = 0, den = 0;
    for (size_t i = 0; i < m[0].table.total; i++) {
        float on = m[0].params[i], off = m[1].params[i];
        if (i >= pe->offset && i < pe->offset + pe->count) {
            num += ((double)off - on) * off;
            den += (double)off * off;
        } else {
            cr_assert_eq(on, off, "parameter %zu differs with --pos-decay", i);
        }
    }
    /* off - on = lr wd p0 on every entry: the slope of off - on against off. */
    double slope = num / den;
    cr_assert(slope > 0.8 * lr * wd && slope < 1.2 * lr * wd,
              "off - on = %.3g x off, want lr wd = %.3g (negative: the flag is inverted)",
              slope, lr * wd);
    model_free(&m[0]);
    model_free(&m[1]);
}
