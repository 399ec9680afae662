/* Gradient checks for every layer in model/layers.c and the linear layer of
 * kernels/matmul.c: central differences of sum(out * R), R fixed random, against
 * the hand-written backward. Tolerances: see tu_gradcheck; float32 forwards
 * with h = 1e-2 (inputs of order 1, so the truncation error h^2 f''' stays
 * near 1e-4) leave about 1e-4 relative noise, and rtol 1e-2 / atol 1e-3 sit
 * well above it while any real mistake (a wrong sign, a missing term) is O(1). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/layers.h"
#include "kernels/matmul.h"
#include "kernels/vmath.h"
#include "tests/testutil.h"

#define H_STEP 1e-2
#define RTOL 1e-2
#define ATOL 1e-3

/* sum(out * R) in double. */
static double dot_r(const float *out, const float *R, size_t n)
{
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)out[i] * R[i];
    return s;
}

/* ---- encoder ---- */
typedef struct {
    int B, T, C, V;
    int *tok;
    float *wte, *wpe, *out, *R;
} EncCtx;

static double enc_obj(void *p)
{
    EncCtx *c = p;
    encoder_forward(c->out, c->tok, c->wte, c->wpe, c->B, c->T, c->C);
    return dot_r(c->out, c->R, (size_t)c->B * c->T * c->C);
}

Test(layers, encoder_backward_matches_finite_differences)
{
    Rng rng;
    rng_init(&rng, 1, 0);
    EncCtx c = {.B = 3, .T = 5, .C = 7, .V = 4};
    size_t n = (size_t)c.B * c.T * c.C;
    c.tok = malloc(sizeof(int) * c.B * c.T);
    for (int i = 0; i < c.B * c.T; i++)
        c.tok[i] = (int)rng_below(&rng, (uint64_t)c.V);
    c.wte = tu_alloc_random((size_t)c.V * c.C, &rng, -1, 1);
    c.wpe = tu_alloc_random((size_t)c.T * c.C, &rng, -1, 1);
    c.out = calloc(n, sizeof(float));
    c.R = tu_alloc_random(n, &rng, -1, 1);
    float *dwte = calloc((size_t)c.V * c.C, sizeof(float));
    float *dwpe = calloc((size_t)c.T * c.C, sizeof(float));
    encoder_backward(dwte, dwpe, c.R, c.tok, c.B, c.T, c.C);
    int bad = tu_gradcheck("wte", c.wte, dwte, (size_t)c.V * c.C, enc_obj, &c, H_STEP, RTOL, ATOL,
                           1000, &rng);
    bad += tu_gradcheck("wpe", c.wpe, dwpe, (size_t)c.T * c.C, enc_obj, &c, H_STEP, RTOL, ATOL,
                        1000, &rng);
    cr_assert_eq(bad, 0, "%d encoder gradient entries disagree", bad);
    free(c.tok); free(c.wte); free(c.wpe); free(c.out); free(c.R); free(dwte); free(dwpe);
}

/* ---- layernorm ---- */
typedef struct {
    int N, C;
    float *in, *w, *b, *out, *mean, *rstd, *R;
} LnCtx;

static double ln_obj(void *p)
{
    LnCtx *c = p;
    layernorm_forward(c->out, c->mean, c->rstd, c->in, c->w, c->b, c->N, c->C);
    return dot_r(c->out, c->R, (size_t)c->N * c->C);
}

static void check_layernorm(int N, int C)
{
    Rng rng;
    rng_init(&rng, 2, (uint64_t)C);
    LnCtx c = {.N = N, .C = C};
    size_t n = (size_t)N * C;
    c.in = tu_alloc_random(n, &rng, -2, 2);
    c.w = tu_alloc_random((size_t)C, &rng, 0.5f, 1.5f);
    c.b = tu_alloc_random((size_t)C, &rng, -0.5f, 0.5f);
    c.out = calloc(n, sizeof(float));
    c.mean = calloc((size_t)N, sizeof(float));
    c.rstd = calloc((size_t)N, sizeof(float));
    c.R = tu_alloc_random(n, &rng, -1, 1);
    float *din = calloc(n, sizeof(float)), *dw = calloc((size_t)C, sizeof(float));
    float *db = calloc((size_t)C, sizeof(float));
    ln_obj(&c);
    layernorm_backward(din, dw, db, c.R, c.in, c.w, c.mean, c.rstd, N, C);
    int bad = tu_gradcheck("ln.in", c.in, din, n, ln_obj, &c, H_STEP, RTOL, ATOL, 300, &rng);
    bad += tu_gradcheck("ln.w", c.w, dw, (size_t)C, ln_obj, &c, H_STEP, RTOL, ATOL, 300, &rng);
    bad += tu_gradcheck("ln.b", c.b, db, (size_t)C, ln_obj, &c, H_STEP, RTOL, ATOL, 300, &rng);
    cr_assert_eq(bad, 0, "%d layernorm gradient entries disagree (N=%d C=%d)", bad, N, C);
    free(c.in); free(c.w); free(c.b); free(c.out); free(c.mean); free(c.rstd); free(c.R);
    free(din); free(dw); free(db);
}

Test(layers, layernorm_backward_matches_finite_differences)
{
    check_layernorm(4, 8);
    check_layernorm(3, 37); /* C not a multiple of 8 exercises the row-sum tail */
}

/* ---- gelu ---- */
typedef struct {
    size_t n;
    float *in, *out, *R;
} GeluCtx;

static double gelu_obj(void *p)
{
    GeluCtx *c = p;
    gelu_forward(c->out, c->in, c->n);
    return dot_r(c->out, c->R, c->n);
}

Test(layers, gelu_backward_matches_finite_differences)
{
    Rng rng;
    rng_init(&rng, 3, 0);
    GeluCtx c = {.n = 203};
    c.in = tu_alloc_random(c.n, &rng, -4, 4);
    c.out = calloc(c.n, sizeof(float));
    c.R = tu_alloc_random(c.n, &rng, -1, 1);
    float *din = calloc(c.n, sizeof(float));
    gelu_backward(din, c.R, c.in, c.n);
    /* h = 1e-3 here: GELU's curvature near 0 is O(1), and the entries are independent. */
    int bad = tu_gradcheck("gelu.in", c.in, din, c.n, gelu_obj, &c, 1e-3, RTOL, ATOL, 1000, &rng);
    cr_assert_eq(bad, 0, "%d gelu gradient entries disagree", bad);
    free(c.in); free(c.out); free(c.R); free(din);
}

Test(layers, gelu_matches_the_tanh_formula)
{
    for (float x = -6.0f; x <= 6.0f; x += 0.173f) {
        float y;
        gelu_forward(&y, &x, 1);
        double ref = 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
        cr_assert(fabs(y - ref) <= 2e-6 * (1.0 + fabs(ref)), "gelu(%g) = %g, tanh form %g", x, y,
                  ref);
    }
}

/* vmath's exp (softmax, cross-entropy and GELU all rest on it): within 2 float ulps
 * (relative 2^-22) of the exact value over its whole range, clamped outside it
 * (exp(-87) for anything smaller, exp(88) for anything larger), NaN kept. */
Test(layers, vmath_exp_is_within_two_ulps_and_clamps)
{
    double worst = 0.0;
    for (int i = 0; i <= 200000; i++) {
        float x = -87.0f + 175.0f * (float)i / 200000.0f;
        double want = exp((double)x), rel = fabs(vmath_exp(x) - want) / want;
        worst = rel > worst ? rel : worst;
        cr_assert(rel <= 0x1p-22, "exp(%.9g) = %.9g, exact %.9g", x, vmath_exp(x), want);
    }
    cr_log_info("vmath_exp: worst relative error %.3g (2 ulps = %.3g)", worst, 0x1p-22);
    cr_assert_eq(vmath_exp(-500.0f), vmath_exp(-87.0f));
    cr_assert_eq(vmath_exp(500.0f), vmath_exp(88.0f));
    cr_assert(vmath_exp(NAN) != vmath_exp(NAN), "exp(NaN) is not NaN");
}

/* ---- softmax + cross-entropy ---- */
typedef struct {
    int N, V;
    int *tgt;
    float *logits, *probs, *losses;
} CeCtx;

static double ce_obj(void *p)
{
    CeCtx *c = p;
    return crossentropy_forward(c->losses, c->probs, c->logits, c->tgt, c->N, c->V);
}

Test(layers, crossentropy_backward_matches_finite_differences)
{
    Rng rng;
    rng_init(&rng, 4, 0);
    CeCtx c = {.N = 6, .V = 13};
    size_t n = (size_t)c.N * c.V;
    c.tgt = malloc(sizeof(int) * c.N);
    for (int i = 0; i < c.N; i++)
        c.tgt[i] = (int)rng_below(&rng, (uint64_t)c.V);
    c.logits = tu_alloc_random(n, &rng, -3, 3);
    c.probs = calloc(n, sizeof(float));
    c.losses = calloc((size_t)c.N, sizeof(float));
    float *dlogits = calloc(n, sizeof(float));
    ce_obj(&c);
    crossentropy_backward(dlogits, c.probs, c.tgt, c.N, c.V, 1.0f / (float)c.N);
    int bad = tu_gradcheck("logits", c.logits, dlogits, n, ce_obj, &c, 1e-2, RTOL, ATOL, 1000,
                           &rng);
    cr_assert_eq(bad, 0, "%d cross-entropy gradient entries disagree", bad);
    free(c.tgt); free(c.logits); free(c.probs); free(c.losses); free(dlogits);
}

Test(layers, crossentropy_equals_log_softmax)
{
    float logits[5] = {1.0f, -2.0f, 0.5f, 3.0f, 0.0f}, probs[5], loss;
    int t = 2;
    crossentropy_forward(&loss, probs, logits, &t, 1, 5);
    double z = 0.0;
    for (int i = 0; i < 5; i++)
        z += exp(logits[i]);
    cr_assert_float_eq(loss, -(logits[2] - log(z)), 1e-6);
    double s = 0.0;
    for (int i = 0; i < 5; i++)
        s += probs[i];
    cr_assert_float_eq(s, 1.0, 1e-6);
}

/* ---- dropout ---- */
typedef struct {
    size_t n;
    float p;
    float *in, *out, *R;
} DropCtx;

static double drop_obj(void *ctx)
{
    DropCtx *c = ctx;
    dropout_forward(c->out, c->in, c->n, c->p, 99);
    return dot_r(c->out, c->R, c->n);
}

Test(layers, dropout_backward_matches_forward_mask)
{
    Rng rng;
    rng_init(&rng, 5, 0);
    DropCtx c = {.n = 4000, .p = 0.25f};
    c.in = tu_alloc_random(c.n, &rng, -1, 1);
    c.out = calloc(c.n, sizeof(float));
    c.R = tu_alloc_random(c.n, &rng, -1, 1);
    float *din = calloc(c.n, sizeof(float));
    dropout_backward(din, c.R, c.n, c.p, 99);
    int bad = tu_gradcheck("dropout.in", c.in, din, c.n, drop_obj, &c, 1e-2, RTOL, ATOL, 200, &rng);
    cr_assert_eq(bad, 0);
    size_t dropped = 0;
    drop_obj(&c);
    for (size_t i = 0; i < c.n; i++)
        dropped += c.out[i] == 0.0f;
    /* Binomial(4000, 0.25): mean 1000, sd 27; 6 sd either side. */
    cr_assert(dropped > 840 && dropped < 1160, "dropped %zu of 4000 at p = 0.25", dropped);
    free(c.in); free(c.out); free(c.R); free(din);
}

/* ---- head dropout ---- */

/* y[B][T][H*D] after head_dropout_forward against the rule written out: head h of
 * sequence b is kept when the top 24 bits of rng_hash(key, b H + h, 0) are at
 * least p 2^24, and then every one of its T*D values is the input times exactly
 * 1/(1 - p); otherwise every one is +0, even where the input was NaN or infinite. */
Test(layers, head_dropout_keeps_or_zeroes_whole_heads_by_the_hashed_rule)
{
    enum { B = 2000, T = 3, H = 8, D = 5, A = H * D };
    const float p = 0.25f;
    const uint64_t key = 0x5eedULL;
    Rng rng;
    rng_init(&rng, 11, 0);
    size_t n = (size_t)B * T * A;
    float *in = tu_alloc_random(n, &rng, -2, 2), *y = malloc(n * sizeof(float));
    in[3] = NAN;
    in[A + 7] = INFINITY;
    memcpy(y, in, n * sizeof(float));
    head_dropout_forward(y, B, T, H, D, p, key);
    float scale = 1.0f / (1.0f - p);
    long kept = 0;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            uint32_t u = (uint32_t)(rng_hash(key, (uint64_t)b * H + h, 0) >> 40);
            int keep = (double)u >= 0.25 * 16777216.0;
            kept += keep;
            for (int t = 0; t < T; t++)
                for (int d = 0; d < D; d++) {
                    size_t i = ((size_t)b * T + t) * A + (size_t)h * D + d;
                    float want = keep ? in[i] * scale : 0.0f;
                    int same = memcmp(&y[i], &want, sizeof want) == 0 ||
                               (isnan(want) && isnan(y[i]));
                    cr_assert(same, "b %d t %d h %d d %d: %g, want %g (keep %d)", b, t, h, d,
                              y[i], want, keep);
                }
        }
    /* Binomial(16000, 0.75): mean 12000, sd 55; 6 sd either side. */
    cr_assert(kept > 11670 && kept < 12330, "kept %ld of 16000 heads at p = 0.25", kept);
    free(in);
    free(y);
}

typedef struct {
    int B, T, H, D;
    float p;
    float *in, *out, *R;
} HeadDropCtx;

static double head_drop_obj(void *ctx)
{
    HeadDropCtx *c = ctx;
    size_t n = (size_t)c->B * c->T * c->H * c->D;
    memcpy(c->out, c->in, n * sizeof(float));
    head_dropout_forward(c->out, c->B, c->T, c->H, c->D, c->p, 99);
    return dot_r(c->out, c->R, n);
}

/* The backward applies the forward's mask: central differences of sum(y' R) agree
 * with it. And p = 0 is the identity, bit for bit (NaN included), both ways. */
Test(layers, head_dropout_backward_matches_forward_mask)
{
    Rng rng;
    rng_init(&rng, 6, 0);
    HeadDropCtx c = {.B = 6, .T = 4, .H = 4, .D = 3, .p = 0.5f};
    size_t n = (size_t)c.B * c.T * c.H * c.D;
    c.in = tu_alloc_random(n, &rng, -1, 1);
    c.out = calloc(n, sizeof(float));
    c.R = tu_alloc_random(n, &rng, -1, 1);
    float *dy = malloc(n * sizeof(float));
    memcpy(dy, c.R, n * sizeof(float));
    head_dropout_backward(dy, c.B, c.T, c.H, c.D, c.p, 99);
    int bad = tu_gradcheck("head_dropout.in", c.in, dy, n, head_drop_obj, &c, 1e-2, RTOL, ATOL,
                           (int)n, &rng);
    cr_assert_eq(bad, 0);
    size_t zero = 0;
    for (size_t i = 0; i < n; i++)
        zero += dy[i] == 0.0f;
    cr_assert(zero > 0 && zero < n, "the mask at p = 0.5 dropped %zu of %zu values", zero, n);
    memcpy(dy, c.in, n * sizeof(float));
    dy[5] = NAN;
    float *same = malloc(n * sizeof(float));
    memcpy(same, dy, n * sizeof(float));
    head_dropout_forward(dy, c.B, c.T, c.H, c.D, 0.0f, 99);
    head_dropout_backward(dy, c.B, c.T, c.H, c.D, 0.0f, 99);
    cr_assert(memcmp(dy, same, n * sizeof(float)) == 0, "p = 0 changed a bit");
    free(c.in); free(c.out); free(c.R); free(dy); free(same);
}

/* ---- linear layer ---- */
typedef struct {
    int N, IC, OC;
    float *in, *W, *b, *out, *R;
} LinCtx;

static double lin_obj(void *p)
{
    LinCtx *c = p;
    matmul_forward(c->out, c->in, c->W, c->b, c->N, c->IC, c->OC);
    return dot_r(c->out, c->R, (size_t)c->N * c->OC);
}

static void check_linear(int N, int IC, int OC)
{
    Rng rng;
    rng_init(&rng, 6, (uint64_t)(N * 1000 + IC * 10 + OC));
    LinCtx c = {.N = N, .IC = IC, .OC = OC};
    c.in = tu_alloc_random((size_t)N * IC, &rng, -1, 1);
    c.W = tu_alloc_random((size_t)OC * IC, &rng, -1, 1);
    c.b = tu_alloc_random((size_t)OC, &rng, -1, 1);
    c.out = calloc((size_t)N * OC, sizeof(float));
    c.R = tu_alloc_random((size_t)N * OC, &rng, -1, 1);
    float *din = calloc((size_t)N * IC, sizeof(float));
    float *dW = calloc((size_t)OC * IC, sizeof(float)), *db = calloc((size_t)OC, sizeof(float));
    matmul_backward(din, dW, db, c.R, c.in, c.W, N, IC, OC);
    int bad = tu_gradcheck("lin.in", c.in, din, (size_t)N * IC, lin_obj, &c, H_STEP, RTOL, ATOL,
                           200, &rng);
    bad += tu_gradcheck("lin.W", c.W, dW, (size_t)OC * IC, lin_obj, &c, H_STEP, RTOL, ATOL, 200,
                        &rng);
    bad += tu_gradcheck("lin.b", c.b, db, (size_t)OC, lin_obj, &c, H_STEP, RTOL, ATOL, 200, &rng);
    cr_assert_eq(bad, 0, "%d linear gradient entries disagree (N=%d IC=%d OC=%d)", bad, N, IC, OC);
    free(c.in); free(c.W); free(c.b); free(c.out); free(c.R); free(din); free(dW); free(db);
}

Test(layers, linear_backward_matches_finite_differences)
{
    check_linear(5, 7, 3);
    check_linear(19, 16, 24);
    check_linear(33, 40, 65);
}
