/* The trainer (trainer/trainer.h): its step is the hand-written step (forward,
 * zero, backward, clip, schedule, AdamW) bit for bit, with dropout and with
 * micro-batches folded by the caller; a trainer loaded from a checkpoint goes on
 * exactly as one that never stopped; a non-finite step changes nothing; every
 * init has a free that releases all (make test-asan checks for leaks) and is
 * safe on a failed init and twice. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trainer/ckpt.h"
#include "trainer/schedule.h"
#include "trainer/trainer.h"
#include "tests/testutil.h"

static const Config CFG = {.V = 13, .T = 8, .L = 2, .H = 4, .C = 16, .D = 4};
enum { B = 3, NBATCH = 4 };

/* Settings that exercise every part of an update: a warm-up, the cosine, a
 * clip below the gradient norm (so it scales), weight decay and dropout. */
static TrainHyper hyper(long micro)
{
    return (TrainHyper){.lr = 3e-3f, .min_lr = 3e-4f, .warmup = 1, .steps = 6, .clip = 0.05f,
                        .dropout = 0.1f, .seed = 77, .micro = micro,
                        .adam = {.beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f,
                                 .weight_decay = 0.1f}};
}

/* NBATCH batches of B x T random tokens and targets. */
static void batches(int tok[NBATCH][B * 8], int tgt[NBATCH][B * 8])
{
    Rng rng;
    rng_init(&rng, 5, 0);
    for (int k = 0; k < NBATCH; k++)
        for (int i = 0; i < B * CFG.T; i++) {
            tok[k][i] = (int)rng_below(&rng, (uint64_t)CFG.V);
            tgt[k][i] = (int)rng_below(&rng, (uint64_t)CFG.V);
        }
}

static void new_trainer(Trainer *t, long micro)
{
    char err[300];
    TrainHyper hp = hyper(micro);
    cr_assert_eq(trainer_init(t, &CFG, 11, err, sizeof err), 0, "%s", err);
    cr_assert_eq(trainer_prepare(t, &hp, B, err, sizeof err), 0, "%s", err);
}

/* The step as app/train/train_loop.c, bench_train and test_gpt wrote it before the
 * trainer existed, on its own model, gradients, moments and activations. */
typedef struct {
    Model m;
    Grads g;
    Activations a;
    float *mom, *vel;
    size_t P;
} Reference;

static void ref_init(Reference *r)
{
    char err[300];
    cr_assert_eq(model_init(&r->m, &CFG, err, sizeof err), 0, "%s", err);
    params_init(&r->m.table, r->m.params, 11);
    cr_assert_eq(grads_init(&r->g, &r->m, err, sizeof err), 0, "%s", err);
    cr_assert_eq(acts_init(&r->a, &CFG, B, CFG.T, 1, err, sizeof err), 0, "%s", err);
    r->P = r->m.table.total;
    r->mom = calloc(r->P, sizeof(float));
    r->vel = calloc(r->P, sizeof(float));
    cr_assert(r->mom && r->vel);
}

static void ref_free(Reference *r)
{
    free(r->mom);
    free(r->vel);
    acts_free(&r->a);
    grads_free(&r->g);
    model_free(&r->m);
}

/* Micro-batch n of the run: loss, and its gradient in r->g. */
static double ref_pass(Reference *r, const int *tok, const int *tgt, uint64_t n)
{
    const TrainHyper hp = hyper(1);
    PassOptions po = {.dropout = hp.dropout,
                      .dropout_key = rng_hash(hp.seed, RNG_STREAM_DROPOUT, n)};
    double loss = gpt_forward(&r->m, &r->a, tok, tgt, B, CFG.T, &po);
    grads_zero(&r->g);
    gpt_backward(&r->m, &r->g, &r->a, tok, tgt, B, CFG.T, &po);
    return loss;
}

static void ref_update(Reference *r, float *grad, long step, double *norm, float *lr)
{
    const TrainHyper hp = hyper(1);
    *norm = grad_clip(grad, r->P, hp.clip);
    *lr = schedule_lr(step, hp.steps, hp.warmup, hp.lr, hp.min_lr);
    adamw_update(r->m.params, grad, r->mom, r->vel, &r->m.table, &hp.adam, *lr, step + 1);
}

static void expect_same_state(const Trainer *t, const Reference *r, const char *when)
{
    size_t bytes = r->P * sizeof(float);
    cr_assert_eq(memcmp(t->model.params, r->m.params, bytes), 0, "%s: parameters differ", when);
    cr_assert_eq(memcmp(t->adam_m, r->mom, bytes), 0, "%s: first moments differ", when);
    cr_assert_eq(memcmp(t->adam_v, r->vel, bytes), 0, "%s: second moments differ", when);
}

Test(trainer, two_steps_are_the_hand_written_step_bit_for_bit)
{
    int tok[NBATCH][B * 8], tgt[NBATCH][B * 8];
    batches(tok, tgt);
    Trainer t;
    Reference r;
    new_trainer(&t, 1);
    ref_init(&r);
    expect_same_state(&t, &r, "after init");
    for (long step = 0; step < 2; step++) {
        TrainStep s;
        cr_assert_eq(trainer_step(&t, tok[step], tgt[step], &s), 0);
        double loss = ref_pass(&r, tok[step], tgt[step], (uint64_t)step), norm;
        float lr;
        ref_update(&r, r.g.data, step, &norm, &lr);
        cr_assert(memcmp(&s.loss, &loss, sizeof loss) == 0, "step %ld: loss %.17g vs %.17g",
                  step, s.loss, loss);
        cr_assert(memcmp(&s.norm, &norm, sizeof norm) == 0, "step %ld: norm %.17g vs %.17g",
                  step, s.norm, norm);
        cr_assert(norm > hyper(1).clip, "step %ld: norm %g does not reach the clip", step, norm);
        cr_assert_eq(s.lr, lr, "step %ld", step);
        cr_assert_eq(t.step, step + 1);
        expect_same_state(&t, &r, step ? "after step 2" : "after step 1");
    }
    trainer_free(&t);
    ref_free(&r);
}

/* --accum 2: the caller sums trainer_micro's gradients in order, scales once
 * (as dist_fold and dist_gather do) and hands the sum to trainer_update; the
 * dropout masks of micro-batch i of step s are those of number 2 s + i. */
Test(trainer, micro_batches_summed_by_the_caller_are_the_hand_written_accumulation)
{
    int tok[NBATCH][B * 8], tgt[NBATCH][B * 8];
    batches(tok, tgt);
    Trainer t;
    Reference r;
    new_trainer(&t, 2);
    ref_init(&r);
    float *acc = malloc(r.P * sizeof(float)), *racc = malloc(r.P * sizeof(float));
    cr_assert(acc && racc);
    for (long step = 0; step < 2; step++) {
        double loss = 0.0, rloss = 0.0;
        for (long i = 0; i < 2; i++) {
            const int *in = tok[2 * step + i], *tg = tgt[2 * step + i];
            loss += trainer_micro(&t, in, tg, i);
            rloss += ref_pass(&r, in, tg, (uint64_t)(2 * step + i));
            cr_assert_eq(memcmp(t.grads.data, r.g.data, r.P * sizeof(float)), 0,
                         "step %ld micro-batch %ld: gradients differ", step, i);
            for (size_t k = 0; k < r.P; k++) {
                acc[k] = i ? acc[k] + t.grads.data[k] : t.grads.data[k];
                racc[k] = i ? racc[k] + r.g.data[k] : r.g.data[k];
            }
        }
        for (size_t k = 0; k < r.P; k++) {
            acc[k] *= 0.5f;
            racc[k] *= 0.5f;
        }
        TrainStep s;
        double norm;
        float lr;
        cr_assert_eq(trainer_update(&t, acc, loss / 2, &s), 0);
        ref_update(&r, racc, step, &norm, &lr);
        cr_assert(memcmp(&s.norm, &norm, sizeof norm) == 0 && s.lr == lr && s.loss == rloss / 2);
        expect_same_state(&t, &r, step ? "after step 2" : "after step 1");
    }
    free(acc);
    free(racc);
    trainer_free(&t);
    ref_free(&r);
}

Test(trainer, a_non_finite_gradient_or_loss_changes_nothing)
{
    int tok[NBATCH][B * 8], tgt[NBATCH][B * 8];
    batches(tok, tgt);
    Trainer t;
    new_trainer(&t, 1);
    cr_assert_eq(trainer_step(&t, tok[0], tgt[0], NULL), 0);
    size_t P = t.model.table.total, bytes = P * sizeof(float);
    float *p = malloc(bytes), *m = malloc(bytes), *v = malloc(bytes);
    memcpy(p, t.model.params, bytes);
    memcpy(m, t.adam_m, bytes);
    memcpy(v, t.adam_v, bytes);
    double loss = trainer_micro(&t, tok[1], tgt[1], 0);
    t.grads.data[P / 2] = NAN;
    TrainStep s;
    cr_assert_eq(trainer_update(&t, t.grads.data, loss, &s), -1);
    cr_assert(isnan(s.norm), "norm %g", s.norm);
    loss = trainer_micro(&t, tok[1], tgt[1], 0);
    cr_assert_eq(trainer_update(&t, t.grads.data, INFINITY, &s), -1);
    cr_assert(memcmp(p, t.model.params, bytes) == 0 && memcmp(m, t.adam_m, bytes) == 0 &&
              memcmp(v, t.adam_v, bytes) == 0, "a refused update changed the state");
    cr_assert_eq(t.step, 1);
    cr_assert(isfinite(loss));
    free(p);
    free(m);
    free(v);
    trainer_free(&t);
}

/* Settings a checkpoint's reader accepts (trainer/limits.h) for hyper(). */
static void fill_state(TrainState *ts, const Trainer *t)
{
    TrainHyper hp = hyper(1);
    memset(ts, 0, sizeof *ts);
    ts->step = t->step; ts->steps = hp.steps; ts->batch = B; ts->warmup = hp.warmup;
    ts->eval_iters = 1; ts->seed = hp.seed; ts->best_step = -1; ts->accum = 1;
    ts->lr = hp.lr; ts->min_lr = hp.min_lr; ts->wd = hp.adam.weight_decay; ts->clip = hp.clip;
    ts->dropout = hp.dropout; ts->beta1 = hp.adam.beta1; ts->beta2 = hp.adam.beta2;
    ts->eps = hp.adam.eps;
    ts->precision = (int)t->model.precision;
    snprintf(ts->data_path, sizeof ts->data_path, "test");
    ts->adam_m = t->adam_m;
    ts->adam_v = t->adam_v;
}

/* Two steps, a checkpoint, a load and two more steps against four uninterrupted
 * steps, both trainers' models in precision p (the checkpoint keeps it). */
static void resume_case(Precision p)
{
    int tok[NBATCH][B * 8], tgt[NBATCH][B * 8];
    batches(tok, tgt);
    char err[2000], path[400];
    const char *dir = tu_tmpdir("trainer-resume");
    cr_assert_not_null(dir);
    snprintf(path, sizeof path, "%s/half.ckpt", dir);
    unsigned char vocab[13];
    for (int i = 0; i < CFG.V; i++)
        vocab[i] = (unsigned char)('a' + i);
    Tokenizer tok_text;
    cr_assert_eq(tok_from_parts(&tok_text, vocab, CFG.V, NULL, 0, err, sizeof err), 0, "%s", err);

    Trainer whole, half, resumed;
    new_trainer(&whole, 1);
    new_trainer(&half, 1);
    whole.model.precision = half.model.precision = p;
    double want[NBATCH];
    for (int k = 0; k < NBATCH; k++) {
        TrainStep s;
        cr_assert_eq(trainer_step(&whole, tok[k], tgt[k], &s), 0);
        want[k] = s.loss;
        if (k < 2)
            cr_assert_eq(trainer_step(&half, tok[k], tgt[k], NULL), 0);
    }
    TrainState ts;
    fill_state(&ts, &half);
    cr_assert_eq(ckpt_save(path, &half.model, &tok_text, half.step, &ts, err, sizeof err), 0,
                 "%s", err);
    trainer_free(&half);

    Tokenizer tok_back;
    TrainState back;
    int has = 0;
    TrainHyper hp = hyper(1);
    cr_assert_eq(ckpt_load_trainer(path, &resumed, &tok_back, &back, &has, err, sizeof err), 0,
                 "%s", err);
    cr_assert(has == 1 && resumed.step == 2 && back.step == 2);
    cr_assert_eq(resumed.model.precision, p, "the checkpoint lost the precision");
    cr_assert_eq(trainer_prepare(&resumed, &hp, B, err, sizeof err), 0, "%s", err);
    for (int k = 2; k < NBATCH; k++) {
        TrainStep s;
        cr_assert_eq(trainer_step(&resumed, tok[k], tgt[k], &s), 0);
        cr_assert(memcmp(&s.loss, &want[k], sizeof s.loss) == 0,
                  "step %d: loss %.17g resumed, %.17g uninterrupted", k + 1, s.loss, want[k]);
    }
    size_t bytes = whole.model.table.total * sizeof(float);
    cr_assert_eq(resumed.step, whole.step);
    cr_assert_eq(memcmp(resumed.model.params, whole.model.params, bytes), 0, "parameters differ");
    cr_assert_eq(memcmp(resumed.adam_m, whole.adam_m, bytes), 0, "first moments differ");
    cr_assert_eq(memcmp(resumed.adam_v, whole.adam_v, bytes), 0, "second moments differ");
    trainer_free(&resumed);
    trainer_free(&whole);
    tok_free(&tok_text);
    tok_free(&tok_back);
}

Test(trainer, a_trainer_loaded_from_a_checkpoint_continues_bit_identically)
{
    resume_case(PRECISION_FP32);
}

Test(trainer, a_bf16_trainer_loaded_from_a_checkpoint_continues_bit_identically)
{
    resume_case(PRECISION_BF16);
}

/* The trainer owns the data position: a fresh one draws the batches batch_init
 * with the run's seed and the batch stream would, and one loaded from a checkpoint
 * goes on drawing where the saved one stopped. */
Test(trainer, the_batch_position_is_the_trainers_and_a_checkpoint_keeps_it)
{
    TokenId ids[500];
    for (int i = 0; i < 500; i++)
        ids[i] = (TokenId)(i * 7 % CFG.V);
    char err[2000], path[400];
    TrainHyper hp = hyper(1);
    Trainer t, back;
    new_trainer(&t, 1);
    BatchSampler ref;
    batch_init(&ref, 11, RNG_STREAM_BATCH);
    int in[B * 8], tg[B * 8], rin[B * 8], rtg[B * 8];
    for (int k = 0; k < 3; k++) {
        trainer_next_batch(&t, ids, 500, in, tg);
        batch_next(&ref, ids, 500, B, CFG.T, rin, rtg);
        cr_assert(memcmp(in, rin, sizeof in) == 0 && memcmp(tg, rtg, sizeof tg) == 0,
                  "batch %d differs from batch_next's", k);
    }
    const char *dir = tu_tmpdir("trainer-batches");
    cr_assert_not_null(dir);
    snprintf(path, sizeof path, "%s/t.ckpt", dir);
    unsigned char vocab[13];
    for (int i = 0; i < CFG.V; i++)
        vocab[i] = (unsigned char)('a' + i);
    Tokenizer tok, tok_back;
    cr_assert_eq(tok_from_parts(&tok, vocab, CFG.V, NULL, 0, err, sizeof err), 0, "%s", err);
    TrainState ts;
    fill_state(&ts, &t);
    ts.batch_rng = t.batches.rng.state;
    cr_assert_eq(ckpt_save(path, &t.model, &tok, t.step, &ts, err, sizeof err), 0, "%s", err);
    cr_assert_eq(ckpt_load_trainer(path, &back, &tok_back, NULL, NULL, err, sizeof err), 0,
                 "%s", err);
    cr_assert_eq(trainer_prepare(&back, &hp, B, err, sizeof err), 0, "%s", err);
    trainer_next_batch(&t, ids, 500, in, tg);
    trainer_next_batch(&back, ids, 500, rin, rtg);
    cr_assert(memcmp(in, rin, sizeof in) == 0 && memcmp(tg, rtg, sizeof tg) == 0,
              "the loaded trainer draws another batch");
    trainer_free(&back);
    trainer_free(&t);
    tok_free(&tok);
    tok_free(&tok_back);
}

/* Whoever inits frees: free releases and clears every buffer, and is safe on
 * a zeroed trainer, after a failed init or prepare, and twice. */
Test(trainer, free_releases_everything_and_is_safe_on_failed_inits_and_twice)
{
    char err[300];
    Trainer t;
    memset(&t, 0, sizeof t);
    trainer_free(&t);
    Config bad = CFG;
    bad.H = 0;
    memset(&t, 0xff, sizeof t);
    cr_assert_eq(trainer_init(&t, &bad, 1, err, sizeof err), -1);
    cr_assert(strlen(err) > 0);
    trainer_free(&t);
    new_trainer(&t, 1);
    cr_assert(t.model.params && t.grads.data && t.adam_m && t.adam_v && t.acts.buf);
    trainer_free(&t);
    cr_assert(!t.model.params && !t.grads.data && !t.adam_m && !t.adam_v && !t.acts.buf,
              "trainer_free left a pointer set");
    trainer_free(&t);
    /* A prepare whose batch does not fit fails cleanly; free still releases all. */
    cr_assert_eq(trainer_init(&t, &CFG, 1, err, sizeof err), 0, "%s", err);
    TrainHyper hp = hyper(1);
    cr_assert_eq(trainer_prepare(&t, &hp, 0, err, sizeof err), -1);
    trainer_free(&t);
    cr_assert(!t.model.params && !t.acts.buf);
}
