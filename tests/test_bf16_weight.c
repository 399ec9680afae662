/* The weights' bf16 copies (kernels/bf16_weight.h): written by a pass of their own or
 * row by row inside AdamW's update (trainer/adamw.c), they equal, bit for bit, the
 * roundings the layers make of W themselves (bf16_pack_weights, bf16_pack_cols, and
 * the emulation's float copies with their smallest exponents); the layers reading
 * them give the bits of the layers rounding W, on both paths and kinds, on ordinary
 * values and on any float bits (whose exceptions send the emulation to its tiles);
 * and a bf16 training run whose updates write the copies (and whose activations'
 * producers round their rows, kernels/bf16_rows.h) leaves the parameters and moments of
 * one that rounds W and the inputs at every call, at 1 and 2 threads, with and without
 * dropout. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/bf16.h"
#include "kernels/bf16_weight.h"
#include "trainer/adamw.h"
#include "trainer/schedule.h"
#include "trainer/trainer.h"
#include "tests/testutil.h"
#include "util/rng.h"

/* Ordinary values, with one in `rare` of them any float bits (0: none). */
static float *values(Rng *rng, size_t n, float scale, int rare)
{
    float *x = malloc((n ? n : 1) * sizeof(float));
    cr_assert(x);
    for (size_t i = 0; i < n; i++)
        x[i] = rare && rng_below(rng, (uint64_t)rare) == 0 ? tu_from_bits((uint32_t)rng_u64(rng))
                                                           : (float)rng_normal(rng) * scale;
    return x;
}

/* The biased exponent of the smallest nonzero bf16 magnitude among n values x[k * s],
 * 255 where all round to zero: computed here from bf16_from_float alone. */
static int smallest_exponent(const float *x, int n, size_t s)
{
    unsigned m = 0x10000;
    for (int k = 0; k < n; k++) {
        unsigned a = bf16_from_float(x[(size_t)k * s]) & 0x7fffu;
        if (a && a < m)
            m = a;
    }
    return m == 0x10000 ? 255 : (int)(m >> 7);
}

/* c's copies against the roundings of its W made here (panels: by the layers' own
 * packers; floats: element by element from bf16_from_float). */
static void expect_copies_of(const Bf16Weight *c, const char *what)
{
    int OC = c->OC, IC = c->IC;
    const float *W = c->W;
    if (c->kind == BF16_COPY_PANELS) {
        size_t nf = bf16_packed_size(OC, IC), nb = bf16_packed_size(IC, OC);
        uint32_t *f = malloc(nf * 4), *b = malloc(nb * 4);
        cr_assert(f && b);
        bf16_pack_weights(f, W, OC, IC);
        bf16_pack_cols(b, W, OC, IC);
        cr_assert(!memcmp(f, c->fwd, nf * 4), "%s %dx%d: the forward panels differ", what, OC,
                  IC);
        cr_assert(!memcmp(b, c->bwd, nb * 4), "%s %dx%d: the column panels differ", what, OC,
                  IC);
        free(f), free(b);
        return;
    }
    int K2 = 2 * bf16_pairs(IC), R2 = 2 * bf16_pairs(OC);
    for (int o = 0; o < OC; o++)
        for (int k = 0; k < K2; k++) {
            uint32_t want = (k ^ 1) < IC ? (uint32_t)bf16_from_float(W[(size_t)o * IC + (k ^ 1)])
                                               << 16
                                         : 0;
            cr_assert_eq(c->fwd[(size_t)o * K2 + k], want, "%s %dx%d: fwd[%d][%d]", what, OC,
                         IC, o, k);
        }
    for (int r = 0; r < R2; r++)
        for (int i = 0; i < IC; i++) {
            uint32_t want = (r ^ 1) < OC ? (uint32_t)bf16_from_float(W[(size_t)(r ^ 1) * IC + i])
                                               << 16
                                         : 0;
            cr_assert_eq(c->bwd[(size_t)r * IC + i], want, "%s %dx%d: bwd[%d][%d]", what, OC,
                         IC, r, i);
        }
    for (int o = 0; o < OC; o++)
        cr_assert_eq(c->row_exp[o], smallest_exponent(W + (size_t)o * IC, IC, 1),
                     "%s %dx%d: row %d's exponent", what, OC, IC, o);
    for (int i = 0; i < IC; i++) {
        uint32_t k = UINT32_MAX;
        for (int part = 0; part < BF16_WEIGHT_PARTS; part++) {
            uint32_t kp = c->col_key[(size_t)part * IC + i];
            k = kp < k ? kp : k;
        }
        int e = k == UINT32_MAX ? 255 : (int)((k + 1u) >> 7);
        cr_assert_eq(e, smallest_exponent(W + i, OC, (size_t)IC), "%s %dx%d: column %d's "
                     "exponent", what, OC, IC, i);
    }
}

static const int shapes[][2] = {
    /* OC, IC: odd and even, fewer rows than blocks, a panel and a half */
    { 1, 1 }, { 7, 5 }, { 33, 40 }, { 65, 64 }, { 48, 97 }, { 130, 24 },
};

Test(bf16_weight, copies_equal_the_layers_roundings_on_any_bits)
{
    Rng rng;
    rng_init(&rng, 61, 0);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int kind = BF16_COPY_FLOATS; kind <= BF16_COPY_PANELS; kind++)
            for (int rare = 0; rare <= 4; rare += 4) {
                int OC = shapes[s][0], IC = shapes[s][1];
                float *W = values(&rng, (size_t)OC * IC, 0.05f, rare);
                Bf16Weight c;
                cr_assert_eq(bf16_weight_init(&c, W, OC, IC, (Bf16CopyKind)kind), 0);
                bf16_weight_write(&c);
                expect_copies_of(&c, kind == BF16_COPY_FLOATS ? "floats" : "panels");
                bf16_weight_free(&c);
                bf16_weight_free(&c);           /* safe twice */
                free(W);
            }
}

/* A parameter table's matrices (each with a copy of `kind`), updated by adamw_update
 * and by adamw_update_bf16 at `threads` threads: the same parameters and moments, and
 * the fused copies equal a separate pass's over the updated weights. */
static void fused_update_case(Bf16CopyKind kind, int threads)
{
    Config cfg = {.V = 37, .T = 8, .L = 2, .H = 3, .C = 18, .D = 6};
    ParamTable t;
    params_table_init(&t, &cfg);
    Rng rng;
    rng_init(&rng, 62, (uint64_t)threads);
    float *p0 = values(&rng, t.total, 0.02f, 0), *g = values(&rng, t.total, 0.01f, 0);
    float *m0 = values(&rng, t.total, 0.001f, 0), *v0 = values(&rng, t.total, 1e-6f, 0);
    for (size_t i = 0; i < t.total; i++)
        v0[i] = fabsf(v0[i]);
    size_t bytes = t.total * sizeof(float);
    float *p[2], *m[2], *v[2];
    for (int r = 0; r < 2; r++) {
        p[r] = malloc(bytes), m[r] = malloc(bytes), v[r] = malloc(bytes);
        cr_assert(p[r] && m[r] && v[r]);
        memcpy(p[r], p0, bytes), memcpy(m[r], m0, bytes), memcpy(v[r], v0, bytes);
    }
    Bf16WeightSet set = { t.n, kind, calloc((size_t)t.n, sizeof(Bf16Weight)) };
    cr_assert(set.w);
    for (int k = 0; k < t.n; k++)
        if (t.spec[k].rows > 1)
            cr_assert_eq(bf16_weight_init(&set.w[k], p[1] + t.spec[k].offset, t.spec[k].rows,
                                          t.spec[k].cols, kind), 0);
    AdamW opt = {0.9f, 0.95f, 1e-8f, 0.1f};
    omp_set_num_threads(threads);
    for (long step = 1; step <= 3; step++) {
        adamw_update(p[0], g, m[0], v[0], &t, &opt, 3e-3f, step);
        adamw_update_bf16(p[1], g, m[1], v[1], &t, &opt, 3e-3f, step, &set);
    }
    cr_assert(!memcmp(p[0], p[1], bytes) && !memcmp(m[0], m[1], bytes) &&
                  !memcmp(v[0], v[1], bytes),
              "threads %d: the update with copies moved other bits", threads);
    for (int k = 0; k < t.n; k++)
        if (set.w[k].W) {
            expect_copies_of(&set.w[k], t.spec[k].name);
            Bf16Weight sep;                     /* the separate pass, compared whole */
            cr_assert_eq(bf16_weight_init(&sep, set.w[k].W, set.w[k].OC, set.w[k].IC, kind), 0);
            bf16_weight_write(&sep);
            int OC = sep.OC, IC = sep.IC;
            size_t nf = kind == BF16_COPY_FLOATS ? (size_t)OC * 2 * bf16_pairs(IC)
                                                 : bf16_packed_size(OC, IC);
            size_t nb = kind == BF16_COPY_FLOATS ? (size_t)2 * bf16_pairs(OC) * IC
                                                 : bf16_packed_size(IC, OC);
            cr_assert(!memcmp(sep.fwd, set.w[k].fwd, nf * 4) &&
                      !memcmp(sep.bwd, set.w[k].bwd, nb * 4), "%s: fused copy differs",
                      t.spec[k].name);
            if (kind == BF16_COPY_FLOATS)
                cr_assert(!memcmp(sep.row_exp, set.w[k].row_exp, (size_t)OC) &&
                          !memcmp(sep.col_key, set.w[k].col_key,
                                  (size_t)BF16_WEIGHT_PARTS * IC * 4),
                          "%s: fused exponents differ", t.spec[k].name);
            bf16_weight_free(&sep);
        }
    bf16_weights_free(&set);
    bf16_weights_free(&set);
    for (int r = 0; r < 2; r++)
        free(p[r]), free(m[r]), free(v[r]);
    free(p0), free(g), free(m0), free(v0);
}

Test(bf16_weight, fused_update_equals_update_then_separate_pass)
{
    for (int threads = 1; threads <= 3; threads++) {
        fused_update_case(BF16_COPY_FLOATS, threads);
        fused_update_case(BF16_COPY_PANELS, threads);
    }
}

static void expect_same(const float *got, const float *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(tu_bits(got[i]) == tu_bits(want[i]) || (isnan(got[i]) && isnan(want[i])),
                  "%s: element %zu is %a, expected %a", what, i, got[i], want[i]);
}

/* Forward (plain and GELU), din (plain and times gelu') and dW with W's copies of
 * `kind` against the same calls rounding W, on `path`. */
static void layer_case(Rng *rng, int N, int IC, int OC, int rare, Bf16CopyKind kind,
                       Bf16Path path)
{
    size_t no = (size_t)N * OC, ni = (size_t)N * IC, nw = (size_t)OC * IC;
    float *in = values(rng, ni, 1.0f, rare), *W = values(rng, nw, 0.05f, rare);
    float *bias = values(rng, (size_t)OC, 0.1f, 0), *dout = values(rng, no, 0.01f, rare);
    float *dg = values(rng, ni, 1.0f, 0), *dW0 = values(rng, nw, 0.01f, 0);
    float *out[2], *gd[2], *din[2], *dW[2];
    for (int r = 0; r < 2; r++) {
        out[r] = malloc(no * 4), gd[r] = malloc(no * 4), din[r] = malloc(ni * 4);
        dW[r] = malloc(nw * 4);
        cr_assert(out[r] && gd[r] && din[r] && dW[r]);
    }
    Bf16Weight c;
    cr_assert_eq(bf16_weight_init(&c, W, OC, IC, kind), 0);
    bf16_weight_write(&c);
    char what[160];
    snprintf(what, sizeof what, "N=%d IC=%d OC=%d rare %d kind %d path %d", N, IC, OC, rare,
             (int)kind, (int)path);
    for (int gelu = 0; gelu < 2; gelu++) {
        for (int r = 0; r < 2; r++)
            bf16_forward_with(out[r], gelu ? gd[r] : NULL, in, NULL, W, r ? &c : NULL, bias, N, IC, OC,
                              path);
        expect_same(out[1], out[0], no, what);
        if (gelu)
            expect_same(gd[1], gd[0], no, what);
        for (int r = 0; r < 2; r++) {
            memcpy(dW[r], dW0, nw * 4);
            bf16_backward_with(din[r], dW[r], NULL, dout, NULL, in, W, r ? &c : NULL,
                               gelu ? dg : NULL, N, IC, OC, path);
        }
        expect_same(din[1], din[0], ni, what);
        expect_same(dW[1], dW[0], nw, what);
    }
    bf16_weight_free(&c);
    for (int r = 0; r < 2; r++)
        free(out[r]), free(gd[r]), free(din[r]), free(dW[r]);
    free(in), free(W), free(bias), free(dout), free(dg), free(dW0);
}

static const int layer_shapes[][3] = {
    /* N, IC, OC */
    { 13, 5, 7 }, { 67, 40, 65 }, { 200, 96, 130 },
};

Test(bf16_weight, layers_reading_the_copies_give_the_layers_bits)
{
    Rng rng;
    rng_init(&rng, 63, 0);
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        for (size_t s = 0; s < sizeof layer_shapes / sizeof layer_shapes[0]; s++)
            for (int rare = 0; rare <= 1; rare++)   /* 1: any bits, so exceptions and tiles */
                for (int kind = BF16_COPY_FLOATS; kind <= BF16_COPY_PANELS; kind++)
                    for (int path = BF16_AUTO; path <= BF16_EMULATED; path++)
                        layer_case(&rng, layer_shapes[s][0], layer_shapes[s][1],
                                   layer_shapes[s][2], rare, (Bf16CopyKind)kind, (Bf16Path)path);
    }
}

/* The native kernel reading the panels: the same as above on BF16_AUTO, which only a
 * build targeting AVX512_BF16 runs on the instruction. */
Test(bf16_weight, native_layers_reading_the_panels_give_the_layers_bits)
{
#if BF16_NATIVE
    Rng rng;
    rng_init(&rng, 64, 0);
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        for (size_t s = 0; s < sizeof layer_shapes / sizeof layer_shapes[0]; s++)
            for (int rare = 0; rare <= 1; rare++)
                layer_case(&rng, layer_shapes[s][0], layer_shapes[s][1], layer_shapes[s][2],
                           rare, BF16_COPY_PANELS, BF16_AUTO);
    }
#else
    cr_skip_test("this build does not target AVX512_BF16 (the emulation's use of the panels "
                 "is tested above)");
#endif
}

static const Config CFG = {.V = 29, .T = 8, .L = 2, .H = 2, .C = 24, .D = 12};
enum { B = 3, STEPS = 4 };

static TrainHyper hyper(void)
{
    return (TrainHyper){.lr = 3e-3f, .min_lr = 3e-4f, .warmup = 1, .steps = STEPS,
                        .clip = 0.05f, .dropout = 0.1f, .seed = 5, .micro = 1,
                        .adam = {.beta1 = 0.9f, .beta2 = 0.99f, .eps = 1e-8f,
                                 .weight_decay = 0.1f}};
}

/* STEPS bf16 steps of a trainer (its updates write the copies, its layers read them;
 * its LayerNorms round their outputs, its cross-entropy backward dlogits' rows and
 * columns, the residual gradient's producers (the LayerNorms' backward without
 * dropout, the dropout's backward with it) their rows and columns, attention's forward
 * its output's rows for proj and its backward dqkv's rows and columns for qkv's
 * backward and, in the pairs' layout (the instruction, a build without FMA), fc's
 * product the GELU's output and fcproj's din product dfch's rows and columns for the
 * products, kernels/bf16_rows.h; and the LayerNorms' forward their outputs' columns
 * for qkv's, fc's and the logits' dW, and attention its output's for proj's,
 * Activations.in_cols; in the pairs' layout fc's product the GELU's output's columns
 * for fcproj's dW, Activations.gelu_cols)
 * against the same steps written out with the model's copies unset, activations
 * without rounded rows and adamw_update (the layers round W, their inputs, dlogits and
 * dout at every call), at 1 and 2 threads, with dropout and without. */
Test(bf16_weight, training_with_fused_copies_keeps_the_bits)
{
    char err[300];
    Rng rng;
    rng_init(&rng, 65, 0);
    int tok[STEPS][B * 8], tgt[STEPS][B * 8];
    for (int k = 0; k < STEPS; k++)
        for (int i = 0; i < B * CFG.T; i++) {
            tok[k][i] = (int)rng_below(&rng, (uint64_t)CFG.V);
            tgt[k][i] = (int)rng_below(&rng, (uint64_t)CFG.V);
        }
    for (int drop = 0; drop < 2; drop++)
        for (int threads = 1; threads <= 2; threads++)
            for (int path = BF16_AUTO; path <= BF16_EMULATED; path++) {
                TrainHyper hp = hyper();
                hp.dropout = drop ? hp.dropout : 0.0f;
                omp_set_num_threads(threads);
                Trainer t[2];
                for (int r = 0; r < 2; r++) {
                    cr_assert_eq(trainer_init(&t[r], &CFG, 9, err, sizeof err), 0, "%s", err);
                    cr_assert_eq(trainer_prepare(&t[r], &hp, B, err, sizeof err), 0, "%s", err);
                    t[r].model.precision = PRECISION_BF16;
                    t[r].model.bf16_path = (Bf16Path)path;
                }
                for (long k = 0; k < STEPS; k++) {
                    TrainStep s;
                    cr_assert_eq(trainer_step(&t[0], tok[k], tgt[k], &s), 0);
                    cr_assert(t[0].model.bf16_copies, "the trainer made no copies");
                    cr_assert(t[0].acts.rows_bf16.rows, "the trainer made no room for the "
                              "rounded rows");
                    cr_assert(t[0].acts.rows_bf16.cols &&
                                  t[0].acts.rows_bf16.cols_cap_k >= 3 * CFG.H * CFG.D &&
                                  t[0].acts.rows_bf16.cols_cap_k >= CFG.V,
                              "the trainer made no room for the columns of dqkv and dlogits");
                    for (int i = 0; i < 3 * CFG.L + 1; i++)
                        cr_assert(t[0].acts.in_cols && t[0].acts.in_cols[i].cols &&
                                      t[0].acts.in_cols[i].has_cols,
                                  "dW's input %d has no columns from its producer", i);
                    cr_assert(!t[0].acts.mlp_bf16.rows == (t[0].acts.rows_bf16.kind !=
                                                           BF16_COPY_PANELS),
                              "the MLP's rows are made for the pairs' layout alone");
                    cr_assert(!t[0].acts.mlp_bf16.rows == !t[0].acts.mlp_bf16.cols,
                              "dfch's columns are made with the MLP's rows");
                    Activations *ta = &t[0].acts;
                    cr_assert(!ta->gelu_cols == (ta->rows_bf16.kind != BF16_COPY_PANELS),
                              "the GELU's columns are made for the pairs' layout alone");
                    for (int l = 0; ta->gelu_cols && l < CFG.L; l++)
                        cr_assert(bf16_in_cols_of(&ta->gelu_cols[l],
                                                  ta->fch_gelu + l * ta->N * ta->C * 4,
                                                  B * CFG.T, 4 * CFG.C, BF16_COPY_PANELS),
                                  "layer %d's fch_gelu has no columns from fc's product", l);
                    Trainer *r = &t[1];
                    PassOptions po = {.dropout = hp.dropout,
                                      .dropout_key = rng_hash(hp.seed, RNG_STREAM_DROPOUT,
                                                              (uint64_t)k),
                                      .gate_noise = 1};
                    double loss = gpt_forward(&r->model, &r->acts, tok[k], tgt[k], B, CFG.T, &po);
                    grads_zero(&r->grads);
                    gpt_backward(&r->model, &r->grads, &r->acts, tok[k], tgt[k], B, CFG.T, &po);
                    size_t P = r->model.table.total;
                    grad_clip(r->grads.data, P, hp.clip);
                    float lr = schedule_lr(k, hp.steps, hp.warmup, hp.lr, hp.min_lr);
                    adamw_update(r->model.params, r->grads.data, r->adam_m, r->adam_v,
                                 &r->model.table, &hp.adam, lr, k + 1);
                    cr_assert(!memcmp(&loss, &s.loss, sizeof loss), "step %ld: loss %a, with "
                              "copies %a", k, loss, s.loss);
                    size_t bytes = P * sizeof(float);
                    cr_assert(!memcmp(t[0].model.params, r->model.params, bytes) &&
                                  !memcmp(t[0].adam_m, r->adam_m, bytes) &&
                                  !memcmp(t[0].adam_v, r->adam_v, bytes),
                              "dropout %g threads %d path %d step %ld: the state differs",
                              (double)hp.dropout, threads, path, k);
                }
                trainer_free(&t[0]);
                trainer_free(&t[1]);
            }
}
