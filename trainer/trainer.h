/* trainer: one training run's model and everything a step changes.
 *
 * A Trainer owns the model's parameters, one micro-batch's gradient, the AdamW
 * moments (allocated and freed here and nowhere else), the activations a step
 * runs in, the schedule position (steps completed) and the position in the
 * training data (the batch sampler, whose state a checkpoint keeps). A step is
 *   loss = forward(batch); grads = 0; backward      (trainer_micro)
 *   norm = clip(grads); lr = schedule(step); AdamW  (trainer_update)
 * and trainer_step composes the two for the common case of one micro-batch a
 * step. A caller that sums several micro-batches (gradient accumulation, MPI
 * ranks) runs trainer_micro for each, folds the gradients itself and hands the
 * sum to trainer_update. The token ids, files and printing are the caller's; a
 * checkpoint is written and read by trainer/ckpt.h (ckpt_load_trainer fills a
 * Trainer's parameters and moments in place). */
#ifndef HEADCOUNT_TRAINER_H
#define HEADCOUNT_TRAINER_H

#include <stddef.h>
#include <stdint.h>

#include "data/batch.h"
#include "model/gpt.h"
#include "trainer/adamw.h"

/* What a step does besides the maths of the model: the settings of the
 * schedule, the regularisers and the optimizer (./train's flags of the same
 * names say what each does; the seed keys the dropout masks as
 * rng_hash(seed, RNG_STREAM_DROPOUT, micro-batch)), in the precision the step
 * computes in. */
typedef struct TrainHyper {
    long steps, warmup;
    float lr, min_lr, clip, dropout, head_dropout, head_gates;
    float route_balance; /* the routers' balance loss coefficient (0 without routing) */
    uint64_t seed;
    long micro;         /* micro-batches per step in all (accumulation x ranks), >= 1 */
    AdamW adam;         /* the optimizer's settings: beta1, beta2, eps, weight decay */
} TrainHyper;

typedef struct {
    Model model;
    Grads grads;            /* the gradient of the last trainer_micro */
    float *adam_m, *adam_v; /* [model.table.total] each */
    Activations acts;       /* for B rows of model.cfg.T; allocated by trainer_prepare */
    TrainHyper hp;
    int B;
    long step;              /* steps completed; the next update is AdamW's step + 1 */
    BatchSampler batches;   /* where the next batch is drawn (data/batch.h) */
    Bf16WeightSet bf16;     /* --precision bf16: the weight matrices' bf16 copies
                             * (model.bf16_copies), made by the first trainer_micro and
                             * rewritten by every update; code that writes the parameters
                             * in between frees them (bf16_weights_free) */
} Trainer;

/* What one update saw: the mean loss (the model's cross-entropy), the head
 * gates' penalty (head_gates x the expected L0 norm, added to the loss's
 * gradient; 0 without gates), the gradient norm before clipping and the
 * learning rate. */
typedef struct {
    double loss, gate_penalty, norm;
    float lr;
} TrainStep;

/* A fresh trainer: parameters drawn by params_init(seed), moments zero, step 0,
 * the batch sampler at the start of its seeded stream (RNG_STREAM_BATCH). */
int trainer_init(Trainer *t, const Config *cfg, uint64_t seed, char *err, size_t errlen);
/* The same with every parameter zero, for a loader that fills them (and the
 * moments, step and batch position) at once: ckpt_load_trainer. */
int trainer_init_zeroed(Trainer *t, const Config *cfg, char *err, size_t errlen);
/* Sets the step's settings and sizes the activations for batches of B rows of
 * model.cfg.T tokens (dropout buffers when hp->dropout > 0). Called once, after
 * either init; the memory of a batch is known only then on a resumed run. */
int trainer_prepare(Trainer *t, const TrainHyper *hp, int B, char *err, size_t errlen);
/* Releases everything; safe on a zeroed, half-built or freed Trainer. */
void trainer_free(Trainer *t);

/* Draws the next batch of B windows of ids[0..len) (len >= T + 1) into
 * inputs/targets [B][T] and moves the data position on (batch_next). */
void trainer_next_batch(Trainer *t, const TokenId *ids, size_t len, int *inputs,
                        int *targets);

/* Micro-batch i (0 .. hp.micro - 1) of the coming step on inputs/targets
 * [B][T]: returns its mean loss and leaves its gradient in t->grads. Its dropout
 * masks (and drawn head gates) depend on its number in the whole run,
 * step * micro + i, so a split of the micro-batches over ranks draws the same
 * masks. */
double trainer_micro(Trainer *t, const int *inputs, const int *targets, long i);
/* Adds the head gates' penalty gradient (with gates) to grad (P floats in the
 * parameters' layout: t->grads.data, or a sum of micro-batches), clips it and
 * applies AdamW at the scheduled learning rate, then counts
 * the step. When loss or the gradient norm is not finite nothing is updated and
 * -1 is returned (the caller decides how to stop); else 0. s may be NULL. */
int trainer_update(Trainer *t, float *grad, double loss, TrainStep *s);
/* One whole step of one micro-batch (hp.micro == 1): trainer_micro then
 * trainer_update on its gradient. Returns what trainer_update returns. */
int trainer_step(Trainer *t, const int *inputs, const int *targets, TrainStep *s);

#endif
