/* Head gates (model/gates.h): the evaluation gate and the penalty at points with
 * known values, the drawn gate's probabilities of 0 and 1 against the
 * hard-concrete's closed forms, central differences for the gate layer (into its
 * input and into log_alpha) at H = 1, 4, 8, 16 and for the penalty, and thread
 * counts giving the same bits. The whole model with gates is checked in
 * test_gpt.c. */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "model/gates.h"
#include "tests/testutil.h"

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

static double logit(double p)
{
    return log(p) - log1p(-p);
}

Test(gates, evaluation_gate_has_its_known_values)
{
    float dz;
    /* sigmoid(0) = 1/2: z = 1/2 (1.2) - 0.1 = 0.5, dz = 1.2 / 4 = 0.3 */
    cr_assert_float_eq(gate_eval(0.0f, &dz), 0.5f, 1e-7);
    cr_assert_float_eq(dz, 0.3f, 1e-7);
    /* the initial log_alpha opens the gate fully: sigmoid(3) 1.2 - 0.1 = 1.0431 */
    cr_assert_eq(gate_eval(GATE_LOG_ALPHA_INIT, &dz), 1.0f);
    cr_assert_eq(dz, 0.0f);
    /* sigmoid(-3) 1.2 - 0.1 = -0.0431: closed */
    cr_assert_eq(gate_eval(-3.0f, &dz), 0.0f);
    cr_assert_eq(dz, 0.0f);
    /* the edges: z = 0 at sigmoid = 1/12, z = 1 at sigmoid = 11/12 */
    cr_assert_float_eq(gate_eval((float)logit(1.0 / 12.0) + 1e-3f, NULL), 0.0f, 1e-3);
    cr_assert_float_eq(gate_eval((float)logit(11.0 / 12.0) - 1e-3f, NULL), 1.0f, 1e-3);
    cr_assert_eq(gates_open((const float[]){0.0f, -3.0f, 3.0f, -2.5f, -2.0f}, 5), 3);
}

/* With s = sigmoid((logit u + a) / beta): z = 0 when s <= 1/12, that is
 * P(z = 0) = sigmoid(beta logit(1/12) - a), and z = 1 when s >= 11/12,
 * P(z = 1) = 1 - sigmoid(beta logit(11/12) - a). 200,000 draws per log_alpha;
 * the bound is 5 binomial standard deviations. Draws with other keys or indices
 * differ. */
Test(gates, drawn_gate_is_zero_and_one_as_often_as_the_hard_concrete_says)
{
    const float alphas[] = {-1.5f, 0.0f, 0.7f, 3.0f};
    const int n = 200000;
    for (size_t k = 0; k < sizeof alphas / sizeof alphas[0]; k++) {
        float a = alphas[k];
        long zero = 0, one = 0;
        for (int i = 0; i < n; i++) {
            float z = gate_sample(a, 77, (uint64_t)i, NULL);
            cr_assert(z >= 0.0f && z <= 1.0f);
            zero += z == 0.0f;
            one += z == 1.0f;
        }
        double p0 = sigmoid(GATE_BETA * logit(1.0 / 12.0) - a);
        double p1 = 1.0 - sigmoid(GATE_BETA * logit(11.0 / 12.0) - a);
        double s0 = 5 * sqrt(p0 * (1 - p0) / n), s1 = 5 * sqrt(p1 * (1 - p1) / n);
        cr_assert(fabs((double)zero / n - p0) < s0, "log_alpha %g: P(z=0) %g, expected %g", a,
                  (double)zero / n, p0);
        cr_assert(fabs((double)one / n - p1) < s1, "log_alpha %g: P(z=1) %g, expected %g", a,
                  (double)one / n, p1);
    }
    int same_key = 0, same_i = 0;
    for (int i = 0; i < 100; i++) {
        float z = gate_sample(0.0f, 1, (uint64_t)i, NULL);
        same_key += z == gate_sample(0.0f, 2, (uint64_t)i, NULL);
        same_i += z == gate_sample(0.0f, 1, (uint64_t)i + 100, NULL);
    }
    cr_assert(same_key < 50 && same_i < 50, "draws repeat: %d across keys, %d across indices",
              same_key, same_i);
}

/* At log_alpha = beta ln(-gamma / zeta) each head's P(open) is sigmoid(0) = 1/2. */
Test(gates, penalty_is_lambda_times_the_expected_open_heads)
{
    float la0 = (float)(GATE_BETA * log(0.1 / 1.1));
    float la[4] = {la0, la0, la0, la0}, d[4] = {0};
    double pen = gates_penalty(la, d, 4, 2.0f);
    cr_assert_float_eq(pen, 4.0, 1e-6);
    for (int i = 0; i < 4; i++)
        cr_assert_float_eq(d[i], 0.5f, 1e-6, "%g", (double)d[i]); /* 2 x 1/4 */
    float open[2] = {30.0f, 30.0f}, shut[2] = {-30.0f, -30.0f};
    cr_assert_float_eq(gates_penalty(open, NULL, 2, 1.0f), 2.0, 1e-9);
    cr_assert_float_eq(gates_penalty(shut, NULL, 2, 1.0f), 0.0, 1e-9);
}

typedef struct {
    float *la, *dla;
    size_t n;
    float lambda;
} PenCtx;

static double pen_obj(void *ctx)
{
    PenCtx *p = ctx;
    return gates_penalty(p->la, NULL, p->n, p->lambda);
}

/* Tolerance: the penalty is summed in double from floats, so h = 1e-3 leaves
 * a truncation error of O(h^2) ~ 1e-6 relative; rtol 1e-3. */
Test(gates, penalty_gradient_matches_finite_differences)
{
    Rng rng;
    rng_init(&rng, 3, 0);
    enum { n = 24 };
    float la[n], d[n] = {0};
    tu_fill(la, n, &rng, -4.0f, 4.0f);
    gates_penalty(la, d, n, 0.37f);
    PenCtx c = {la, d, n, 0.37f};
    cr_assert_eq(tu_gradcheck("penalty", la, d, n, pen_obj, &c, 1e-3, 1e-3, 1e-5, n, &rng), 0);
}

/* The gate layer alone: objective sum(out . R) for a fixed random R in double,
 * where out = z(log_alpha) in, the gates drawn (noise) or evaluated. */
typedef struct {
    int B, T, H, D, noise;
    float *in, *la, *z, *dz, *out, *R;
} LayerCtx;

static double layer_obj(void *ctx)
{
    LayerCtx *c = ctx;
    size_t n = (size_t)c->B * c->T * c->H * c->D;
    gates_draw(c->z, c->dz, c->la, c->B, c->H, c->noise, 4242);
    gates_forward(c->out, c->in, c->z, c->B, c->T, c->H, c->D);
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)c->out[i] * c->R[i];
    return s;
}

/* Tolerance: out is one float product per element, so the objective's rounding
 * noise is ~1e-7 of its terms' size; with h = 1e-3 that is ~1e-4 in the numeric
 * value, within atol 1e-3 of the tensor's largest gradient and rtol 1e-2. The
 * log_alpha of a drawn gate sits on a clamp kink only with probability ~h, and
 * the draws of key 4242 avoid it. */
static void check_layer(int H, int noise)
{
    LayerCtx c = {.B = 3, .T = 5, .H = H, .D = 3, .noise = noise};
    size_t n = (size_t)c.B * c.T * H * c.D, bh = (size_t)c.B * H;
    Rng rng;
    rng_init(&rng, 10 + (uint64_t)H, 0);
    c.in = tu_alloc_random(n, &rng, -1.0f, 1.0f);
    c.R = tu_alloc_random(n, &rng, -1.0f, 1.0f);
    c.la = tu_alloc_random((size_t)H, &rng, -1.0f, 1.0f);
    c.out = malloc(n * sizeof(float));
    c.z = malloc(bh * sizeof(float));
    c.dz = malloc(bh * sizeof(float));
    float *din = malloc(n * sizeof(float)), *dla = calloc((size_t)H, sizeof(float));
    layer_obj(&c);
    memcpy(din, c.R, n * sizeof(float));
    gates_backward(din, dla, c.in, c.z, c.dz, c.B, c.T, H, c.D);
    int bad = tu_gradcheck("in", c.in, din, n, layer_obj, &c, 1e-3, 1e-2, 1e-3, 8, &rng);
    bad += tu_gradcheck("log_alpha", c.la, dla, (size_t)H, layer_obj, &c, 1e-3, 1e-2, 1e-3, H,
                        &rng);
    cr_assert_eq(bad, 0, "H = %d, noise %d: %d gradients disagree", H, noise, bad);
    free(c.in); free(c.R); free(c.la); free(c.out); free(c.z); free(c.dz);
    free(din); free(dla);
}

Test(gates, gate_layer_gradient_matches_finite_differences_1_head)
{
    check_layer(1, 1);
    check_layer(1, 0);
}
Test(gates, gate_layer_gradient_matches_finite_differences_4_heads)
{
    check_layer(4, 1);
    check_layer(4, 0);
}
Test(gates, gate_layer_gradient_matches_finite_differences_8_heads)
{
    check_layer(8, 1);
    check_layer(8, 0);
}
Test(gates, gate_layer_gradient_matches_finite_differences_16_heads)
{
    check_layer(16, 1);
    check_layer(16, 0);
}

/* Large enough to cross the parallel threshold: 8 x 64 x 16 x 4 elements. */
Test(gates, one_and_two_threads_give_identical_bits)
{
    enum { B = 8, T = 64, H = 16, D = 4 };
    size_t n = (size_t)B * T * H * D;
    Rng rng;
    rng_init(&rng, 5, 0);
    float *in = tu_alloc_random(n, &rng, -1.0f, 1.0f), *dy = tu_alloc_random(n, &rng, -1.0f, 1.0f);
    float *la = tu_alloc_random(H, &rng, -2.0f, 2.0f), z[B * H], dz[B * H];
    float *out[2], *din[2], dla[2][H];
    gates_draw(z, dz, la, B, H, 1, 99);
    for (int k = 0; k < 2; k++) {
        omp_set_num_threads(k + 1);
        out[k] = malloc(n * sizeof(float));
        din[k] = malloc(n * sizeof(float));
        memcpy(din[k], dy, n * sizeof(float));
        memset(dla[k], 0, sizeof dla[k]);
        gates_forward(out[k], in, z, B, T, H, D);
        gates_backward(din[k], dla[k], in, z, dz, B, T, H, D);
    }
    cr_assert(memcmp(out[0], out[1], n * sizeof(float)) == 0);
    cr_assert(memcmp(din[0], din[1], n * sizeof(float)) == 0);
    cr_assert(memcmp(dla[0], dla[1], sizeof dla[0]) == 0);
    for (int k = 0; k < 2; k++) {
        free(out[k]);
        free(din[k]);
    }
    free(in); free(dy); free(la);
}
