/* Gradient checks for causal multi-head attention, for H = 1, 4, 8, 16, a head
 * size that is not C/H, and with attention dropout; plus the causal mask and the
 * row normalisation. Objective sum(out * R); tolerances as in test_layers.c
 * (see tu_gradcheck): qkv entries are O(1), h = 1e-2. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/vmath.h"
#include "model/attention.h"
#include "tests/testutil.h"

typedef struct {
    int B, T, H, D;
    float p;
    float *qkv, *out, *att, *attd, *R;
} AttCtx;

static double att_obj(void *ctx)
{
    AttCtx *c = ctx;
    attention_forward(c->out, c->att, c->attd, c->qkv, c->B, c->T, c->H, c->D, c->p, 77);
    size_t n = (size_t)c->B * c->T * c->H * c->D;
    double s = 0.0;
    for (size_t i = 0; i < n; i++)
        s += (double)c->out[i] * c->R[i];
    return s;
}

static void check_attention(int B, int T, int H, int D, float p)
{
    Rng rng;
    rng_init(&rng, 11, (uint64_t)(H * 100 + D));
    AttCtx c = {.B = B, .T = T, .H = H, .D = D, .p = p};
    size_t A = (size_t)H * D, nqkv = (size_t)B * T * 3 * A, tt = (size_t)B * H * T * T;
    c.qkv = tu_alloc_random(nqkv, &rng, -1, 1);
    c.out = calloc((size_t)B * T * A, sizeof(float));
    c.att = calloc(tt, sizeof(float));
    c.attd = calloc(tt, sizeof(float));
    c.R = tu_alloc_random((size_t)B * T * A, &rng, -1, 1);
    float *dqkv = calloc(nqkv, sizeof(float)), *datt = calloc(tt, sizeof(float));
    att_obj(&c);
    attention_backward(dqkv, datt, c.R, c.qkv, c.att, c.attd, B, T, H, D, p);
    int bad = tu_gradcheck("qkv", c.qkv, dqkv, nqkv, att_obj, &c, 1e-2, 1e-2, 1e-3, 400, &rng);
    cr_assert_eq(bad, 0, "%d attention gradient entries disagree (B=%d T=%d H=%d D=%d p=%g)", bad,
                 B, T, H, D, p);
    free(c.qkv); free(c.out); free(c.att); free(c.attd); free(c.R); free(dqkv); free(datt);
}

Test(attention, backward_matches_finite_differences_1_head) { check_attention(2, 9, 1, 16, 0); }
Test(attention, backward_matches_finite_differences_4_heads) { check_attention(2, 9, 4, 4, 0); }
Test(attention, backward_matches_finite_differences_8_heads) { check_attention(2, 9, 8, 2, 0); }
Test(attention, backward_matches_finite_differences_16_heads) { check_attention(1, 9, 16, 1, 0); }
/* D = 5 is not C/H for any C of the model and not a multiple of the vector width. */
Test(attention, backward_matches_finite_differences_odd_head_size) { check_attention(2, 7, 3, 5, 0); }
/* T = 37 spans several 16-row query blocks with a ragged last one. */
Test(attention, backward_matches_finite_differences_long_context) { check_attention(1, 37, 2, 8, 0); }
Test(attention, backward_matches_finite_differences_with_dropout) { check_attention(2, 9, 4, 4, 0.3f); }

Test(attention, weights_are_causal_and_rows_sum_to_one)
{
    Rng rng;
    rng_init(&rng, 12, 0);
    int B = 2, T = 20, H = 3, D = 4;
    size_t A = (size_t)H * D;
    float *qkv = tu_alloc_random((size_t)B * T * 3 * A, &rng, -2, 2);
    float *out = calloc((size_t)B * T * A, sizeof(float));
    float *att = malloc(sizeof(float) * B * H * T * T);
    for (size_t i = 0; i < (size_t)B * H * T * T; i++)
        att[i] = NAN;
    attention_forward(out, att, NULL, qkv, B, T, H, D, 0, 0);
    for (int bh = 0; bh < B * H; bh++)
        for (int i = 0; i < T; i++) {
            double s = 0.0;
            for (int j = 0; j < T; j++) {
                float a = att[((size_t)bh * T + i) * T + j];
                if (j > i)
                    cr_assert_eq(a, 0.0f, "future key %d visible from query %d", j, i);
                else
                    cr_assert(a > 0.0f && a <= 1.0f);
                s += a;
            }
            cr_assert_float_eq(s, 1.0, 1e-5, "row %d of pair %d sums to %g", i, bh, s);
        }
    /* The first query sees only itself: its output is its own value vector. */
    for (int h = 0; h < H; h++)
        for (int d = 0; d < D; d++)
            cr_assert_float_eq(out[h * D + d], qkv[2 * A + h * D + d], 1e-6);
    free(qkv); free(out); free(att);
}

/* The softmax row as plain 8-lane code: max, exp and sum in groups of 8 (the tail
 * padded), then one scale. attention_softmax_row may run the exp 16 lanes at a time
 * (AVX-512 builds); its bits must be these on every build. */
static void softmax_row_8(float *s, int n, float scale)
{
    float mx = -INFINITY;
    for (int j = 0; j < n; j++)
        mx = s[j] * scale > mx ? s[j] * scale : mx;
    v8f acc = v8_set1(0.0f);
    for (int j = 0; j < n; j += 8) {
        float x[8] = { 0 };
        for (int k = 0; k < 8 && j + k < n; k++)
            x[k] = s[j + k];
        v8f e = v8_exp(v8_load(x) * v8_set1(scale) - v8_set1(mx));
        for (int k = 0; k < 8 && j + k < n; k++) {
            s[j + k] = e[k];
            acc[k] += e[k];
        }
    }
    float inv = 1.0f / v8_hsum(acc);
    for (int j = 0; j < n; j++)
        s[j] *= inv;
}

/* Rows of every length from 1 to 80 (full 16-lane groups, a lone 8-lane group and
 * tails of each size): the same bits as softmax_row_8, and within 1e-6 of softmax in
 * double precision (a known answer, summing to one). */
Test(attention, softmax_row_has_the_8_lane_bits_and_the_exact_values)
{
    Rng rng;
    rng_init(&rng, 31, 0);
    for (int n = 1; n <= 80; n++) {
        float got[80], want[80], raw[80];
        for (int j = 0; j < n; j++)
            raw[j] = got[j] = want[j] = 8.0f * (rng_uniform(&rng) - 0.5f);
        attention_softmax_row(got, n, 0.3f);
        softmax_row_8(want, n, 0.3f);
        double mx = -INFINITY, z = 0.0, sum = 0.0;
        for (int j = 0; j < n; j++)
            mx = fmax(mx, 0.3 * raw[j]);
        for (int j = 0; j < n; j++)
            z += exp(0.3 * raw[j] - mx);
        for (int j = 0; j < n; j++) {
            cr_assert(memcmp(&got[j], &want[j], sizeof(float)) == 0,
                      "n=%d: p[%d] = %.9g, 8-lane code %.9g", n, j, got[j], want[j]);
            cr_assert_float_eq(got[j], exp(0.3 * raw[j] - mx) / z, 1e-6, "n=%d: p[%d]", n, j);
            sum += got[j];
        }
        cr_assert_float_eq(sum, 1.0, 1e-5, "n=%d: the row sums to %.9g", n, sum);
    }
}
