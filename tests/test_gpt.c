/* Whole-model tests: the gradient of the mean loss against central differences
 * for every parameter tensor (H = 1, 4, 8, 16, a head size that is not C/H,
 * dropout, head dropout at each H, a silenced head, a vocabulary of 3,000
 * tokens, head gates at each H); where head dropout and head gates act; thread-count bit identity of forward and
 * backward; one batch overfits. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "model/gpt.h"
#include "trainer/trainer.h"
#include "tests/testutil.h"

typedef struct {
    Model m;
    Grads g;
    Activations a;
    int B, T;
    int *tok, *tgt;
    PassOptions po;
} GptCtx;

static double gpt_obj(void *ctx)
{
    GptCtx *c = ctx;
    return gpt_forward(&c->m, &c->a, c->tok, c->tgt, c->B, c->T, &c->po);
}

/* A small model with parameters spread wider than the real init (uniform
 * +-0.3, LayerNorm weights near 1), so every nonlinearity is exercised. */
static void setup(GptCtx *c, Config cfg, int B, int T, float dropout, uint64_t seed)
{
    char err[256];
    memset(c, 0, sizeof *c);
    cr_assert_eq(model_init(&c->m, &cfg, err, sizeof err), 0, "%s", err);
    cr_assert_eq(grads_init(&c->g, &c->m, err, sizeof err), 0, "%s", err);
    cr_assert_eq(acts_init(&c->a, &cfg, B, T, dropout > 0, err, sizeof err), 0, "%s", err);
    Rng rng;
    rng_init(&rng, seed, 0);
    const ParamTable *t = &c->m.table;
    for (int k = 0; k < t->n; k++) {
        const ParamSpec *s = &t->spec[k];
        float lo = -0.3f, hi = 0.3f;
        if (s->init == INIT_ONE) {
            lo = 0.7f;
            hi = 1.3f;
        }
        tu_fill(c->m.params + s->offset, s->count, &rng, lo, hi);
    }
    c->B = B;
    c->T = T;
    c->tok = malloc(sizeof(int) * B * T);
    c->tgt = malloc(sizeof(int) * B * T);
    for (int i = 0; i < B * T; i++) {
        c->tok[i] = (int)rng_below(&rng, (uint64_t)cfg.V);
        c->tgt[i] = (int)rng_below(&rng, (uint64_t)cfg.V);
    }
    c->po.dropout = dropout;
    c->po.dropout_key = 1234;
}

static void teardown(GptCtx *c)
{
    grads_free(&c->g);
    model_free(&c->m);
    acts_free(&c->a);
    free(c->tok);
    free(c->tgt);
}

/* Tolerance: the loss is a float32 mean of O(1) terms, so its rounding noise is
 * ~1e-7; with h = 3e-3 that is ~2e-5 in a numeric gradient, covered by atol
 * 1e-3 of the tensor's largest entry (>= 1e-2 here) and rtol 2e-2. */
static void check_model_gated(Config cfg, float dropout, float head_dropout,
                              const unsigned char *head_on, int gate_noise)
{
    GptCtx c;
    setup(&c, cfg, 2, cfg.T, dropout, 21 + (uint64_t)cfg.H);
    c.po.head_on = head_on;
    c.po.head_dropout = head_dropout;
    c.po.gate_noise = gate_noise;
    gpt_obj(&c);
    if (head_dropout > 0.0f) {
        /* The check means something only when the mask drops some heads of some
         * sequences and keeps others: a dropped (layer, sequence, head) has an
         * output of exact zeros (a kept one, with these weights, never does). */
        size_t N = (size_t)c.B * c.T, A = (size_t)cfg.H * cfg.D, zero = 0, heads = 0;
        for (int l = 0; l < cfg.L; l++)
            for (int b = 0; b < c.B; b++)
                for (int h = 0; h < cfg.H; h++, heads++) {
                    int all = 1;
                    for (int t = 0; t < c.T; t++)
                        for (int d = 0; d < cfg.D; d++)
                            all &= c.a.atty[(size_t)l * N * A + ((size_t)b * c.T + t) * A +
                                            (size_t)h * cfg.D + d] == 0.0f;
                    zero += all;
                }
        cr_assert(zero > 0 && zero < heads, "head dropout %g dropped %zu of %zu heads",
                  head_dropout, zero, heads);
    }
    grads_zero(&c.g);
    gpt_backward(&c.m, &c.g, &c.a, c.tok, c.tgt, c.B, c.T, &c.po);
    Rng rng;
    rng_init(&rng, 5, 0);
    int bad = 0;
    const ParamTable *t = &c.m.table;
    for (int k = 0; k < t->n; k++) {
        const ParamSpec *s = &t->spec[k];
        /* every head gate's log_alpha, a few entries of the other tensors */
        int checks = s->kind == P_GATES ? (int)s->count : 6;
        bad += tu_gradcheck(s->name, c.m.params + s->offset, c.g.data + s->offset, s->count,
                            gpt_obj, &c, 3e-3, 2e-2, 1e-3, checks, &rng);
    }
    cr_assert_eq(bad, 0, "%d parameter gradients disagree (H=%d D=%d dropout=%g head "
                 "dropout=%g gates=%d noise=%d)", bad, cfg.H, cfg.D, dropout, head_dropout,
                 cfg.gates, gate_noise);
    teardown(&c);
}

static void check_model_with(Config cfg, float dropout, float head_dropout,
                             const unsigned char *head_on)
{
    check_model_gated(cfg, dropout, head_dropout, head_on, 0);
}

static void check_model(Config cfg, float dropout, const unsigned char *head_on)
{
    check_model_with(cfg, dropout, 0.0f, head_on);
}

#define CFG(h, d) ((Config){.V = 11, .T = 8, .L = 2, .H = (h), .C = 16, .D = (d)})

Test(gpt, model_gradient_matches_finite_differences_1_head) { check_model(CFG(1, 16), 0, NULL); }
Test(gpt, model_gradient_matches_finite_differences_4_heads) { check_model(CFG(4, 4), 0, NULL); }
Test(gpt, model_gradient_matches_finite_differences_8_heads) { check_model(CFG(8, 2), 0, NULL); }
Test(gpt, model_gradient_matches_finite_differences_16_heads) { check_model(CFG(16, 1), 0, NULL); }
Test(gpt, model_gradient_matches_finite_differences_head_size_not_c_over_h)
{
    check_model(CFG(4, 6), 0, NULL);
}
Test(gpt, model_gradient_matches_finite_differences_with_dropout) { check_model(CFG(4, 4), 0.2f, NULL); }
/* Head dropout at p = 0.5 (with H = 1 there are only L * B = 4 decisions, and the
 * key of setup() drops some and keeps some: check_model_with asserts it). */
Test(gpt, model_gradient_matches_finite_differences_with_head_dropout_1_head)
{
    check_model_with(CFG(1, 16), 0, 0.5f, NULL);
}
Test(gpt, model_gradient_matches_finite_differences_with_head_dropout_4_heads)
{
    check_model_with(CFG(4, 4), 0, 0.5f, NULL);
}
Test(gpt, model_gradient_matches_finite_differences_with_head_dropout_8_heads)
{
    check_model_with(CFG(8, 2), 0, 0.5f, NULL);
}
Test(gpt, model_gradient_matches_finite_differences_with_head_dropout_16_heads)
{
    check_model_with(CFG(16, 1), 0, 0.5f, NULL);
}
Test(gpt, model_gradient_matches_finite_differences_with_head_dropout_and_a_silenced_head)
{
    unsigned char on[8] = {1, 1, 0, 1, 1, 1, 1, 1};
    check_model_with(CFG(4, 6), 0.2f, 0.3f, on);
}

/* In layer 0 the heads' outputs before the mask are the same with and without head
 * dropout, so each (sequence, head) slice of atty must be either exactly the
 * undropped one times 1/(1 - p), at every position, or exactly zero; the layers
 * draw their masks independently (layer 1's pattern differs from layer 0's), and
 * the kept fraction is near 1 - p. */
Test(gpt, head_dropout_scales_or_zeroes_each_sequences_heads_per_layer)
{
    enum { B = 16, T = 8, H = 8, D = 2 };
    const float p = 0.5f;
    GptCtx c;
    Config cfg = CFG(H, D);
    setup(&c, cfg, B, T, 0, 4);
    size_t N = (size_t)B * T, A = (size_t)H * D;
    gpt_obj(&c);
    float *plain = malloc(N * A * sizeof(float));
    memcpy(plain, c.a.atty, N * A * sizeof(float));
    c.po.head_dropout = p;
    gpt_obj(&c);
    unsigned char kept[2][B * H];
    long nkept = 0, differ = 0;
    for (int l = 0; l < 2; l++)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++) {
                int zero = 1, scaled = 1;
                for (int t = 0; t < T; t++)
                    for (int d = 0; d < D; d++) {
                        size_t i = ((size_t)b * T + t) * A + (size_t)h * D + d;
                        float y = c.a.atty[(size_t)l * N * A + i];
                        zero &= y == 0.0f;
                        if (l == 0)
                            scaled &= y == plain[i] * (1.0f / (1.0f - p));
                    }
                cr_assert(l == 1 || zero || scaled, "layer 0 sequence %d head %d: neither "
                          "dropped nor scaled by exactly 1/(1-p)", b, h);
                kept[l][b * H + h] = !zero;
                nkept += !zero;
            }
    for (int i = 0; i < B * H; i++)
        differ += kept[0][i] != kept[1][i];
    cr_assert(differ > 0, "layers 0 and 1 dropped the same heads");
    /* Binomial(256, 0.5): mean 128, sd 8; 5 sd either side. */
    cr_assert(nkept > 88 && nkept < 168, "kept %ld of 256 heads at p = 0.5", nkept);
    free(plain);
    teardown(&c);
}

/* Head dropout draws from a site of its own: turning it on leaves the attention
 * dropout masks of every layer as they were (the zeros of attd on and below the
 * diagonal are the dropped weights; a softmax weight of exact zero does not occur
 * with these weights). */
Test(gpt, head_dropout_leaves_the_attention_dropout_masks_unchanged)
{
    enum { B = 3, T = 8, H = 4, D = 4 };
    GptCtx c;
    Config cfg = CFG(H, D);
    setup(&c, cfg, B, T, 0.3f, 8);
    size_t TT = (size_t)B * H * T * T, n = (size_t)cfg.L * TT;
    gpt_obj(&c);
    unsigned char *dropped = malloc(n);
    for (size_t i = 0; i < n; i++)
        dropped[i] = c.a.attd[i] == 0.0f;
    c.po.head_dropout = 0.5f;
    gpt_obj(&c);
    size_t zeros = 0;
    for (size_t i = 0; i < n; i++) {
        size_t row = i / T % T, col = i % T;
        if (col > row)
            continue;
        zeros += dropped[i];
        cr_assert_eq(dropped[i], c.a.attd[i] == 0.0f, "layer %zu, weight %zu: the mask moved",
                     i / TT, i % TT);
    }
    cr_assert(zeros > 0, "no attention weight was dropped");
    free(dropped);
    teardown(&c);
}

Test(gpt, model_gradient_matches_finite_differences_with_a_silenced_head)
{
    unsigned char on[8] = {1, 0, 1, 1, 1, 1, 1, 0};
    check_model(CFG(4, 4), 0, on);
}

/* A byte-pair vocabulary: V in the thousands, so the tied embedding and the
 * softmax are wide and most rows of wte get their gradient only through the
 * output (their tokens are not in the batch). */
#define CFG_WIDE(h, d) ((Config){.V = 3000, .T = 8, .L = 1, .H = (h), .C = 16, .D = (d)})

Test(gpt, model_gradient_matches_finite_differences_v3000_1_head)
{
    check_model(CFG_WIDE(1, 16), 0, NULL);
}
Test(gpt, model_gradient_matches_finite_differences_v3000_4_heads)
{
    check_model(CFG_WIDE(4, 4), 0, NULL);
}
Test(gpt, model_gradient_matches_finite_differences_v3000_8_heads)
{
    check_model(CFG_WIDE(8, 2), 0, NULL);
}
Test(gpt, model_gradient_matches_finite_differences_v3000_16_heads)
{
    check_model(CFG_WIDE(16, 1), 0, NULL);
}

/* Head gates (model/gates.h): the gradient through the gated forward and into
 * log_alpha, with the drawn gates of training (some clamped to 0 or 1, whose
 * log_alpha gets no gradient from that sequence) and with the evaluation gates
 * (log_alpha in +-0.3 keeps all inside the clamp); then with head dropout and
 * dropout beside them. */
#define CFG_GATED(h, d) \
    ((Config){.V = 11, .T = 8, .L = 2, .H = (h), .C = 16, .D = (d), .gates = 1})

Test(gpt, gated_model_gradient_matches_finite_differences_1_head)
{
    check_model_gated(CFG_GATED(1, 16), 0, 0, NULL, 1);
    check_model_gated(CFG_GATED(1, 16), 0, 0, NULL, 0);
}
Test(gpt, gated_model_gradient_matches_finite_differences_4_heads)
{
    check_model_gated(CFG_GATED(4, 4), 0, 0, NULL, 1);
    check_model_gated(CFG_GATED(4, 4), 0, 0, NULL, 0);
}
Test(gpt, gated_model_gradient_matches_finite_differences_8_heads)
{
    check_model_gated(CFG_GATED(8, 2), 0, 0, NULL, 1);
    check_model_gated(CFG_GATED(8, 2), 0, 0, NULL, 0);
}
Test(gpt, gated_model_gradient_matches_finite_differences_16_heads)
{
    check_model_gated(CFG_GATED(16, 1), 0, 0, NULL, 1);
    check_model_gated(CFG_GATED(16, 1), 0, 0, NULL, 0);
}
Test(gpt, gated_model_gradient_matches_finite_differences_with_dropouts_and_a_silenced_head)
{
    unsigned char on[8] = {1, 1, 0, 1, 1, 1, 1, 1};
    check_model_gated(CFG_GATED(4, 6), 0.2f, 0.3f, on, 1);
}

/* The gates of a gated forward: drawn ones differ between sequences and lie in
 * [0, 1], with some exactly 0 or 1 and some between; evaluation ones are the
 * same for every sequence; the projection's input is the gate times the heads'
 * outputs, bit for bit. */
Test(gpt, gated_forward_multiplies_each_head_by_its_gate)
{
    enum { B = 16, T = 4, H = 4, D = 4 };
    GptCtx c;
    Config cfg = {.V = 11, .T = T, .L = 2, .H = H, .C = 16, .D = D, .gates = 1};
    setup(&c, cfg, B, T, 0, 12);
    for (int i = 0; i < 2 * H; i++)
        c.m.w.log_alpha[i] = (float)(i - 4) * 0.5f;
    size_t N = (size_t)B * T, A = (size_t)H * D;
    for (int noise = 0; noise < 2; noise++) {
        c.po.gate_noise = noise;
        gpt_obj(&c);
        int zero = 0, one = 0, between = 0, differ = 0;
        for (int l = 0; l < 2; l++)
            for (int b = 0; b < B; b++)
                for (int h = 0; h < H; h++) {
                    float z = c.a.gate[((size_t)l * B + b) * H + h];
                    cr_assert(z >= 0.0f && z <= 1.0f, "gate %g", z);
                    zero += z == 0.0f;
                    one += z == 1.0f;
                    between += z > 0.0f && z < 1.0f;
                    differ += z != c.a.gate[(size_t)l * B * H + h];
                    for (int t = 0; t < T; t++)
                        for (int d = 0; d < D; d++) {
                            size_t i = (size_t)l * N * A + ((size_t)b * T + t) * A + h * D + d;
                            cr_assert(c.a.atty[i] == z * c.a.atty_open[i]);
                        }
                }
        if (noise)
            cr_assert(zero && one && between && differ, "drawn gates: %d zero, %d one, %d "
                      "between, %d differ from sequence 0's", zero, one, between, differ);
        else
            cr_assert(differ == 0, "evaluation gates differ between sequences");
    }
    teardown(&c);
}

Test(gpt, silenced_head_changes_the_loss_and_gets_no_gradient)
{
    GptCtx c;
    setup(&c, CFG(4, 4), 2, 8, 0, 3);
    double full = gpt_obj(&c);
    unsigned char on[8] = {1, 1, 0, 1, 1, 1, 1, 1};
    c.po.head_on = on;
    double masked = gpt_obj(&c);
    cr_assert_neq(full, masked);
    grads_zero(&c.g);
    gpt_backward(&c.m, &c.g, &c.a, c.tok, c.tgt, c.B, c.T, &c.po);
    /* Head 2 of layer 0 owns q rows [8, 12) of qkv.w: with the head silenced
     * nothing downstream depends on them. */
    const float *dq = c.g.w.layer[0].qkvw;
    for (int r = 8; r < 12; r++)
        for (int k = 0; k < 16; k++)
            cr_assert_eq(dq[r * 16 + k], 0.0f);
    teardown(&c);
}

static void run_pass(GptCtx *c, int threads, double *loss, float *grads)
{
    omp_set_num_threads(threads);
    *loss = gpt_obj(c);
    grads_zero(&c->g);
    gpt_backward(&c->m, &c->g, &c->a, c->tok, c->tgt, c->B, c->T, &c->po);
    memcpy(grads, c->g.data, c->m.table.total * sizeof(float));
}

/* One pass at 1 and at 2 threads gives the same loss and gradients, bit for bit;
 * the loss of the 2-thread pass goes to *loss. */
static void expect_thread_identity(GptCtx *c, double *loss)
{
    size_t P = c->m.table.total;
    float *g1 = malloc(P * sizeof(float)), *g2 = malloc(P * sizeof(float));
    double l1;
    run_pass(c, 1, &l1, g1);
    run_pass(c, 2, loss, g2);
    cr_assert(memcmp(&l1, loss, sizeof l1) == 0, "loss %.17g vs %.17g", l1, *loss);
    cr_assert(memcmp(g1, g2, P * sizeof(float)) == 0, "gradients differ between 1 and 2 threads");
    free(g1);
    free(g2);
}

Test(gpt, one_and_two_threads_give_identical_bits)
{
    /* Sizes past every kernel's tile edges: C = 40, 3 heads of 13, T = 37, V = 29;
     * dropout and head dropout on. */
    GptCtx c;
    setup(&c, ((Config){.V = 29, .T = 37, .L = 2, .H = 3, .C = 40, .D = 13}), 3, 37, 0.1f, 9);
    c.po.head_dropout = 0.3f;
    double loss;
    expect_thread_identity(&c, &loss);
    teardown(&c);
}

Test(gpt, one_and_two_threads_give_identical_bits_with_head_gates)
{
    GptCtx c;
    setup(&c, ((Config){.V = 29, .T = 37, .L = 2, .H = 3, .C = 40, .D = 13, .gates = 1}), 3, 37,
          0.1f, 9);
    c.po.head_dropout = 0.3f;
    c.po.gate_noise = 1;
    double loss;
    expect_thread_identity(&c, &loss);
    teardown(&c);
}

Test(gpt, bf16_one_and_two_threads_give_identical_bits_and_differ_from_fp32)
{
    GptCtx c;
    setup(&c, ((Config){.V = 29, .T = 37, .L = 2, .H = 3, .C = 40, .D = 13}), 3, 37, 0.1f, 9);
    float *g = malloc(c.m.table.total * sizeof(float));
    double l32, l16;
    run_pass(&c, 2, &l32, g);
    free(g);
    c.m.precision = PRECISION_BF16;
    expect_thread_identity(&c, &l16);
    /* Rounding the products' inputs moves the loss by about bf16's 2^-8 relative
     * error, far more than float32's. */
    cr_assert(l16 != l32 && fabs(l16 - l32) < 0.05 * fabs(l32), "bf16 loss %.17g, fp32 %.17g",
              l16, l32);
    teardown(&c);
}

/* The batch of setup(), trained by trainer_step at a constant learning rate
 * (min_lr = lr, no warm-up) from the real initialisation. */
Test(gpt, a_tiny_model_overfits_one_batch)
{
    GptCtx c;
    Config cfg = {.V = 20, .T = 16, .L = 2, .H = 4, .C = 32, .D = 8};
    setup(&c, cfg, 4, 16, 0, 17);
    char err[256];
    Trainer t;
    TrainHyper hp = {.lr = 3e-3f, .min_lr = 3e-3f, .steps = 300, .clip = 1.0f, .micro = 1,
                     .adam = {0.9f, 0.99f, 1e-8f, 0.0f}};
    cr_assert_eq(trainer_init(&t, &cfg, 17, err, sizeof err), 0, "%s", err);
    cr_assert_eq(trainer_prepare(&t, &hp, 4, err, sizeof err), 0, "%s", err);
    double first = 0, loss = 0;
    for (int step = 0; step < 300; step++) {
        TrainStep s;
        cr_assert_eq(trainer_step(&t, c.tok, c.tgt, &s), 0, "step %d: loss %g", step, s.loss);
        cr_assert_eq(s.lr, 3e-3f, "step %d: lr %g", step, s.lr);
        loss = s.loss;
        if (step == 0)
            first = loss;
    }
    cr_assert(first > 2.5, "initial loss %g should be near ln(20) = 3.0", first);
    cr_assert(loss < 0.1, "loss after 300 steps on one batch is %g, expected < 0.1", loss);
    trainer_free(&t);
    teardown(&c);
}

/* The gate gradient is d loss / d xi at xi = 1 for out_h -> xi out_h: scaling a
 * head's output by (1 +- e) is the same as scaling its value rows of qkv.w and
 * qkv.b by (1 +- e), which the finite difference does. */
typedef struct {
    GptCtx *c;
    int layer, head;
    float *saved;
    size_t nsaved;
    double xi;
} GateCtx;

static double gate_obj(void *ctx)
{
    GateCtx *g = ctx;
    Config cfg = g->c->m.cfg;
    int A = cfg.H * cfg.D;
    LayerWeights *lw = &g->c->m.w.layer[g->layer];
    size_t k = 0;
    for (int r = 2 * A + g->head * cfg.D; r < 2 * A + (g->head + 1) * cfg.D; r++) {
        for (int i = 0; i < cfg.C; i++)
            lw->qkvw[(size_t)r * cfg.C + i] = (float)(g->saved[k++] * g->xi);
        lw->qkvb[r] = (float)(g->saved[k++] * g->xi);
    }
    double loss = gpt_obj(g->c);
    k = 0;
    for (int r = 2 * A + g->head * cfg.D; r < 2 * A + (g->head + 1) * cfg.D; r++) {
        for (int i = 0; i < cfg.C; i++)
            lw->qkvw[(size_t)r * cfg.C + i] = g->saved[k++];
        lw->qkvb[r] = g->saved[k++];
    }
    return loss;
}

Test(gpt, head_gate_gradient_matches_finite_differences)
{
    GptCtx c;
    Config cfg = CFG(4, 4);
    setup(&c, cfg, 2, 8, 0, 31);
    double hg[8] = {0};
    c.po.head_grad = hg;
    gpt_obj(&c);
    grads_zero(&c.g);
    gpt_backward(&c.m, &c.g, &c.a, c.tok, c.tgt, c.B, c.T, &c.po);
    c.po.head_grad = NULL;
    for (int l = 0; l < 2; l++)
        for (int h = 0; h < 4; h++) {
            GateCtx g = {&c, l, h, malloc(sizeof(float) * cfg.D * (cfg.C + 1)), 0, 1.0};
            LayerWeights *lw = &c.m.w.layer[l];
            size_t k = 0;
            int A = cfg.H * cfg.D;
            for (int r = 2 * A + h * cfg.D; r < 2 * A + (h + 1) * cfg.D; r++) {
                for (int i = 0; i < cfg.C; i++)
                    g.saved[k++] = lw->qkvw[(size_t)r * cfg.C + i];
                g.saved[k++] = lw->qkvb[r];
            }
            double e = 1e-3;
            g.xi = 1 + e;
            double fp = gate_obj(&g);
            g.xi = 1 - e;
            double fm = gate_obj(&g);
            double num = (fp - fm) / (2 * e), a = hg[l * 4 + h];
            cr_assert(fabs(num - a) <= 2e-2 * fabs(num) + 1e-4, "head %d.%d: analytic %g numeric %g",
                      l, h, a, num);
            free(g.saved);
        }
    teardown(&c);
}

/* The checkpoint reader sizes files with config_param_count (a closed formula,
 * usable before the table can be built); the model allocates by the parameter
 * table. They must agree for every shape, including head sizes that are not
 * C / H and the largest dimensions. */
Test(gpt, the_parameter_count_formula_matches_the_parameter_table)
{
    static const int shapes[][6] = {
        /* V, T, L, H, C, D */
        {1, 1, 1, 1, 1, 1},       {65, 64, 4, 4, 128, 32},  {65, 256, 6, 6, 384, 64},
        {27, 64, 2, 16, 64, 4},   {256, 4096, 1, 1, 8, 3},  {3, 7, 5, 3, 10, 7},
        {256, 17, 64, 2, 16, 5},  {100, 300, 3, 256, 64, 64}, {65, 64, 1, 1, 8192, 1},
    };
    ParamTable *t = malloc(sizeof *t);
    cr_assert_not_null(t);
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        const int *s = shapes[i];
        for (int gates = 0; gates < 2; gates++) {
            Config c = {.V = s[0], .T = s[1], .L = s[2], .H = s[3], .C = s[4], .D = s[5],
                        .gates = gates};
            char err[300];
            cr_assert_eq(config_validate(&c, err, sizeof err), 0, "shape %zu: %s", i, err);
            params_table_init(t, &c);
            cr_assert_eq(t->total, config_param_count(&c), "shape %zu gates %d: table %zu, "
                         "formula %zu", i, gates, t->total, config_param_count(&c));
        }
    }
    free(t);
}
