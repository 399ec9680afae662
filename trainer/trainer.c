/* trainer: see trainer.h. The only place that allocates and frees the AdamW
 * moments and a training run's gradients. */
#include "trainer/trainer.h"

#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/gates.h"
#include "trainer/schedule.h"
#include "util/bigbuf.h"
#include "util/errbuf.h"
#include "util/rng.h"

int trainer_init_zeroed(Trainer *t, const Config *cfg, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    if (model_init(&t->model, cfg, err, errlen))
        return -1;
    size_t P = t->model.table.total;
    if (grads_init(&t->grads, &t->model, err, errlen)) {
        trainer_free(t);
        return -1;
    }
    t->adam_m = bigbuf_alloc(P);
    t->adam_v = bigbuf_alloc(P);
    if (!t->adam_m || !t->adam_v) {
        trainer_free(t);
        return err_set(err, errlen, "out of memory for the optimizer state (2 x %zu floats)", P);
    }
    return 0;
}

int trainer_init(Trainer *t, const Config *cfg, uint64_t seed, char *err, size_t errlen)
{
    if (trainer_init_zeroed(t, cfg, err, errlen))
        return -1;
    params_init(&t->model.table, t->model.params, seed);
    batch_init(&t->batches, seed, RNG_STREAM_BATCH);
    return 0;
}

void trainer_next_batch(Trainer *t, const TokenId *ids, size_t len, int *inputs,
                        int *targets)
{
    batch_next(&t->batches, ids, len, t->B, t->model.cfg.T, inputs, targets);
}

int trainer_prepare(Trainer *t, const TrainHyper *hp, int B, char *err, size_t errlen)
{
    assert(hp->micro >= 1 && !t->acts.buf);
    t->hp = *hp;
    t->B = B;
    return acts_init(&t->acts, &t->model.cfg, B, t->model.cfg.T, hp->dropout > 0.0f, err,
                     errlen);
}

void trainer_free(Trainer *t)
{
    t->model.bf16_copies = NULL;
    bf16_weights_free(&t->bf16);
    acts_free(&t->acts);
    bigbuf_free(t->adam_m);
    bigbuf_free(t->adam_v);
    t->adam_m = t->adam_v = NULL;
    grads_free(&t->grads);
    model_free(&t->model);
}

/* Whether tensor kind k is the weight of a bf16 product (model/gpt.c). */
static int bf16_product_weight(ParamKind k)
{
    return k == P_WTE || k == P_QKVW || k == P_PROJW || k == P_FCW || k == P_FCPROJW;
}

/* Makes the bf16 copies the model's products read (a pass of their own, once), where
 * the precision is bf16 and they are missing or of another kind than the model's
 * path reads; frees them in fp32. Without memory for them the layers round the weights
 * themselves, to the same bits. */
static void bf16_copies_sync(Trainer *t)
{
    Model *m = &t->model;
    Bf16CopyKind kind = bf16_copy_kind(m->bf16_path);
    if (m->precision == PRECISION_BF16 && t->bf16.w && t->bf16.kind == kind) {
        m->bf16_copies = &t->bf16;
        return;
    }
    m->bf16_copies = NULL;
    bf16_weights_free(&t->bf16);
    if (m->precision != PRECISION_BF16)
        return;
    const ParamTable *pt = &m->table;
    t->bf16.w = calloc((size_t)pt->n, sizeof *t->bf16.w);
    if (!t->bf16.w)
        return;
    t->bf16.n = pt->n, t->bf16.kind = kind;
    for (int k = 0; k < pt->n; k++) {
        const ParamSpec *s = &pt->spec[k];
        if (!bf16_product_weight(s->kind))
            continue;
        if (bf16_weight_init(&t->bf16.w[k], m->params + s->offset, s->rows, s->cols, kind)) {
            bf16_weights_free(&t->bf16);
            return;
        }
        bf16_weight_write(&t->bf16.w[k]);
    }
    m->bf16_copies = &t->bf16;
}

/* Makes room for the activations' copies rounded by their producers (acts_bf16_init:
 * Activations.rows_bf16, the rows of the LayerNorms' outputs, dlogits, the residual
 * gradient, attention's output and dqkv, and the columns of the residual gradient,
 * dlogits and dqkv; in_cols, the LayerNorms' and attention's outputs' columns; with the
 * pairs, mlp_bf16, the MLP's hidden rows and dfch's columns, and gelu_cols, fch_gelu's
 * columns), where the precision is bf16 and they are missing or of another kind than
 * the model's path reads; frees them in fp32. Without memory for them the products
 * round their inputs themselves, to the same bits. */
static void bf16_rows_sync(Trainer *t)
{
    const Model *m = &t->model;
    Bf16CopyKind kind = bf16_copy_kind(m->bf16_path);
    if (m->precision != PRECISION_BF16)
        acts_bf16_free(&t->acts);
    else if (!t->acts.rows_bf16.rows || t->acts.rows_bf16.kind != kind)
        (void)acts_bf16_init(&t->acts, kind);
}

double trainer_micro(Trainer *t, const int *inputs, const int *targets, long i)
{
    bf16_copies_sync(t);
    bf16_rows_sync(t);
    int B = t->B, T = t->model.cfg.T;
    uint64_t n = (uint64_t)t->step * (uint64_t)t->hp.micro + (uint64_t)i;
    PassOptions po = {.dropout = t->hp.dropout,
                      .dropout_key = rng_hash(t->hp.seed, RNG_STREAM_DROPOUT, n),
                      .head_dropout = t->hp.head_dropout,
                      .gate_noise = 1,
                      .route_balance = t->hp.route_balance,
                      .skip_unrouted = 1,
                      .backward_next = 1};
    double loss = gpt_forward(&t->model, &t->acts, inputs, targets, B, T, &po);
    grads_zero(&t->grads);
    gpt_backward(&t->model, &t->grads, &t->acts, inputs, targets, B, T, &po);
    return loss;
}

int trainer_update(Trainer *t, float *grad, double loss, TrainStep *s)
{
    const TrainHyper *hp = &t->hp;
    double penalty = 0.0;
    if (t->model.cfg.gates) {
        /* The expected-L0 penalty is a term of the step's loss, not of any one
         * micro-batch's: added once, into the folded gradient. */
        Weights gw;
        params_view(&t->model.table, grad, &gw);
        penalty = gates_penalty(t->model.w.log_alpha, gw.log_alpha,
                                (size_t)t->model.cfg.L * t->model.cfg.H, hp->head_gates);
    }
    double norm = grad_clip(grad, t->model.table.total, hp->clip);
    float lr = schedule_lr(t->step, hp->steps, hp->warmup, hp->lr, hp->min_lr);
    if (s)
        *s = (TrainStep){.loss = loss, .gate_penalty = penalty, .norm = norm, .lr = lr};
    if (!isfinite(loss) || !isfinite(norm))
        return -1;
    adamw_update_bf16(t->model.params, grad, t->adam_m, t->adam_v, &t->model.table, &hp->adam,
                      lr, t->step + 1, t->model.bf16_copies ? &t->bf16 : NULL);
    t->step++;
    return 0;
}

int trainer_step(Trainer *t, const int *inputs, const int *targets, TrainStep *s)
{
    assert(t->hp.micro == 1);
    double loss = trainer_micro(t, inputs, targets, 0);
    return trainer_update(t, t->grads.data, loss, s);
}
