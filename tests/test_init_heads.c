/* --init-heads same (params_same_heads, model/params.h): every head of a layer
 * starts as a copy of head 0 while every other parameter keeps its random draw;
 * without dropout or head dropout the heads then stay identical to the last bit
 * through training, at 1 and 2 threads (identical heads get identical
 * gradients), and dropout, head dropout and head gates break the symmetry. The command line: random is the
 * run without the flag, same trains identical heads, a resumed run refuses it,
 * and an unknown name is one usage-error line. */
#include <criterion/criterion.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/ckpt.h"
#include "trainer/trainer.h"
#include "tests/progutil.h"
#include "tests/testutil.h"

/* Parameters of layer l's heads that differ from head 0's: q, k, v rows (weights
 * and biases) and projection columns, counted per element. */
static long differing(const Model *m, int l)
{
    const Config *c = &m->cfg;
    int H = c->H, D = c->D, A = H * D, C = c->C;
    const LayerWeights *lw = &m->w.layer[l];
    long n = 0;
    for (int h = 1; h < H; h++) {
        for (int part = 0; part < 3; part++)
            for (int d = 0; d < D; d++) {
                size_t r0 = (size_t)part * A + d, rh = r0 + (size_t)h * D;
                n += memcmp(lw->qkvw + rh * C, lw->qkvw + r0 * C, (size_t)C * sizeof(float)) != 0;
                n += memcmp(&lw->qkvb[rh], &lw->qkvb[r0], sizeof(float)) != 0;
            }
        for (int r = 0; r < C; r++)
            n += memcmp(lw->projw + (size_t)r * A + (size_t)h * D, lw->projw + (size_t)r * A,
                        (size_t)D * sizeof(float)) != 0;
    }
    return n;
}

Test(init_heads, same_copies_head_0_and_leaves_every_other_draw)
{
    Config cfg = {.V = 13, .T = 8, .L = 2, .H = 4, .C = 16, .D = 4};
    char err[256];
    Model a, b;
    cr_assert_eq(model_init(&a, &cfg, err, sizeof err), 0, "%s", err);
    cr_assert_eq(model_init(&b, &cfg, err, sizeof err), 0, "%s", err);
    params_init(&a.table, a.params, 7);
    params_init(&b.table, b.params, 7);
    cr_assert(differing(&a, 0) > 0 && differing(&a, 1) > 0, "random heads start identical");
    params_same_heads(&b.table, b.params);
    int A = cfg.H * cfg.D;
    for (int l = 0; l < cfg.L; l++) {
        cr_assert_eq(differing(&b, l), 0, "layer %d: heads differ after the copy", l);
        const LayerWeights *x = &a.w.layer[l], *y = &b.w.layer[l];
        for (int part = 0; part < 3; part++)   /* head 0's own draw, as it was */
            cr_assert_eq(memcmp(x->qkvw + (size_t)part * A * cfg.C,
                                y->qkvw + (size_t)part * A * cfg.C,
                                (size_t)cfg.D * cfg.C * sizeof(float)), 0);
        for (int r = 0; r < cfg.C; r++)
            cr_assert_eq(memcmp(x->projw + (size_t)r * A, y->projw + (size_t)r * A,
                                (size_t)cfg.D * sizeof(float)), 0);
    }
    /* everything but qkv.w, qkv.b and proj.w keeps its bits */
    for (int k = 0; k < a.table.n; k++) {
        const ParamSpec *s = &a.table.spec[k];
        if (s->kind == P_QKVW || s->kind == P_QKVB || s->kind == P_PROJW)
            continue;
        cr_assert_eq(memcmp(a.params + s->offset, b.params + s->offset, s->count * sizeof(float)),
                     0, "%s changed", s->name);
    }
    model_free(&a);
    model_free(&b);
}

/* A trainer from --init-heads same trained `steps` steps on random batches
 * (with head gates of that LAMBDA when cfg->gates). */
static void train_same_gated(Trainer *t, const Config *cfg, float dropout, float head_dropout,
                             float head_gates, int threads, int steps)
{
    char err[256];
    omp_set_num_threads(threads);
    TrainHyper hp = {.lr = 3e-3f, .min_lr = 3e-4f, .steps = steps, .warmup = 5, .clip = 1.0f,
                     .dropout = dropout, .head_dropout = head_dropout, .head_gates = head_gates,
                     .seed = 5, .micro = 1, .adam = {0.9f, 0.99f, 1e-8f, 0.1f}};
    cr_assert_eq(trainer_init(t, cfg, 5, err, sizeof err), 0, "%s", err);
    params_same_heads(&t->model.table, t->model.params);
    cr_assert_eq(trainer_prepare(t, &hp, 4, err, sizeof err), 0, "%s", err);
    enum { B = 4 };
    int T = cfg->T, *in = malloc(sizeof(int) * B * T), *tg = malloc(sizeof(int) * B * T);
    Rng rng;
    rng_init(&rng, 11, 0);
    for (int s = 0; s < steps; s++) {
        for (int i = 0; i < B * T; i++) {
            in[i] = (int)rng_below(&rng, (uint64_t)cfg->V);
            tg[i] = (int)rng_below(&rng, (uint64_t)cfg->V);
        }
        TrainStep st;
        cr_assert_eq(trainer_step(t, in, tg, &st), 0);
    }
    free(in);
    free(tg);
}

static void train_same(Trainer *t, const Config *cfg, float dropout, float head_dropout,
                       int threads, int steps)
{
    train_same_gated(t, cfg, dropout, head_dropout, 0.0f, threads, steps);
}

/* Sizes past the kernels' tile edges (C = 40, D = 10, T = 37) so that heads fall in
 * different tiles of every product. */
Test(init_heads, heads_stay_identical_through_training_without_noise_at_1_and_2_threads)
{
    Config cfg = {.V = 29, .T = 37, .L = 2, .H = 4, .C = 40, .D = 10};
    Trainer t[2];
    for (int k = 0; k < 2; k++) {
        train_same(&t[k], &cfg, 0.0f, 0.0f, k + 1, 30);
        for (int l = 0; l < cfg.L; l++)
            cr_assert_eq(differing(&t[k].model, l), 0, "%d thread(s), layer %d: heads differ "
                         "after 30 steps", k + 1, l);
    }
    cr_assert_eq(memcmp(t[0].model.params, t[1].model.params,
                        t[0].model.table.total * sizeof(float)), 0, "1 and 2 threads differ");
    trainer_free(&t[0]);
    trainer_free(&t[1]);
}

Test(init_heads, dropout_or_head_dropout_makes_the_heads_differ)
{
    Config cfg = {.V = 29, .T = 16, .L = 2, .H = 4, .C = 16, .D = 4};
    Trainer t;
    train_same(&t, &cfg, 0.1f, 0.0f, 1, 3);
    cr_assert(differing(&t.model, 0) > 0 && differing(&t.model, 1) > 0, "dropout left them same");
    trainer_free(&t);
    train_same(&t, &cfg, 0.0f, 0.3f, 1, 3);
    cr_assert(differing(&t.model, 0) > 0 && differing(&t.model, 1) > 0,
              "head dropout left them same");
    trainer_free(&t);
}

/* Head gates draw each head's gate from its own noise while training (the
 * hard-concrete draw), so they too break the symmetry: README and --help say
 * so. Their log_alpha start equal, so it is the draw, not the start. */
Test(init_heads, head_gates_make_the_heads_differ)
{
    Config cfg = {.V = 29, .T = 16, .L = 2, .H = 4, .C = 16, .D = 4, .gates = 1};
    Trainer t;
    train_same_gated(&t, &cfg, 0.0f, 0.0f, 0.05f, 1, 3);
    cr_assert(differing(&t.model, 0) > 0 && differing(&t.model, 1) > 0, "gates left them same");
    trainer_free(&t);
    char *out;
    int rc = tu_run(&out, "%s/train --help", tu_bin());
    cr_assert_eq(rc, 0, "%s", out);
    const char *flag = strstr(out, "--init-heads");
    cr_assert(flag && strstr(flag, "dropout, head dropout or gates break it"),
              "--help does not say gates break the symmetry:\n%s", out);
    free(out);
}

Test(init_heads, command_line_random_is_the_default_and_same_trains_identical_heads)
{
    Env e;
    env_init(&e, "init-heads");
    char ck[3][400];
    const char *extra[3] = {"", "--init-heads random", "--init-heads same"};
    for (int i = 0; i < 3; i++) {
        snprintf(ck[i], sizeof ck[i], "%s/r%d.ckpt", e.dir, i);
        char *out;
        int rc = tu_run(&out, "%s/train " TINY " --heads 4 --steps 6 --data %s --out %s %s",
                        tu_bin(), e.data, ck[i], extra[i]);
        cr_assert_eq(rc, 0, "%s", out);
        free(out);
    }
    cr_assert(same_files(ck[0], ck[1]), "--init-heads random differs from no flag");
    Model m;
    Tokenizer tok;
    char err[2000];
    cr_assert_eq(ckpt_load(ck[2], &m, &tok, NULL, NULL, NULL, err, sizeof err), 0, "%s", err);
    cr_assert_eq(differing(&m, 0), 0, "--init-heads same: heads differ after 6 steps");
    model_free(&m);
    tok_free(&tok);
    char *out;
    int rc = tu_run(&out, "%s/train --resume %s --steps 8 --init-heads same", tu_bin(), ck[2]);
    expect_error(out, rc, 2, "train", "--init-heads chooses a fresh run's initialisation");
    free(out);
    refuse_train(&e, "--init-heads twin", 2, "--init-heads 'twin': expected random or same");
}
