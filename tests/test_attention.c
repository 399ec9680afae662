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

/* The routed passes (attention_forward_routed, attention_backward_routed) against
 * the plain ones, bit for bit, on random q, k, v and a random choice of K of the H
 * heads per token (sequence 0 always takes heads 0..K-1, so one head is chosen at
 * every row and one, when K < H, at none): the routed output is the plain one at a
 * chosen row and exactly 0 at another; att and attd the same; and the gradient of
 * qkv is the plain backward's for dout zeroed at the rows not chosen, while the
 * routed backward gets dout unzeroed there (it must not read it).
 * attention_fill_unrouted then restores the plain att entirely. */
static void check_routed(int B, int T, int H, int D, int K, float p)
{
    Rng rng;
    rng_init(&rng, 23, (uint64_t)(H * 1000 + K * 10 + T));
    size_t A = (size_t)H * D, N = (size_t)B * T, nqkv = N * 3 * A, tt = (size_t)B * H * T * T;
    float *qkv = tu_alloc_random(nqkv, &rng, -1, 1), *dout = tu_alloc_random(N * A, &rng, -1, 1);
    float *on = calloc(N * H, sizeof(float)), *dmasked = malloc(N * A * sizeof(float));
    for (size_t n = 0; n < N; n++) {
        int pick[16];
        for (int h = 0; h < H; h++)
            pick[h] = h;
        for (int k = 0; k < K && n >= (size_t)T; k++) { /* a partial shuffle */
            int j = k + (int)rng_below(&rng, (uint64_t)(H - k)), x = pick[k];
            pick[k] = pick[j];
            pick[j] = x;
        }
        for (int k = 0; k < K; k++)
            on[n * H + pick[k]] = 1.0f;
        for (size_t i = 0; i < A; i++)
            dmasked[n * A + i] = on[n * H + i / D] != 0.0f ? dout[n * A + i] : 0.0f;
    }
    float *out[2], *att[2], *attd[2], *dqkv[2], *datt = malloc(tt * sizeof(float));
    for (int k = 0; k < 2; k++) {
        out[k] = malloc(N * A * sizeof(float));
        att[k] = malloc(tt * sizeof(float));
        attd[k] = malloc(tt * sizeof(float));
        dqkv[k] = malloc(nqkv * sizeof(float));
        /* NaN everywhere first: every value the passes leave must be written */
        for (size_t i = 0; i < N * A; i++)
            out[k][i] = NAN;
        for (size_t i = 0; i < tt; i++)
            att[k][i] = attd[k][i] = NAN;
        for (size_t i = 0; i < nqkv; i++)
            dqkv[k][i] = NAN;
    }
    attention_forward(out[0], att[0], attd[0], qkv, B, T, H, D, p, 91);
    attention_backward(dqkv[0], datt, dmasked, qkv, att[0], attd[0], B, T, H, D, p);
    attention_forward_routed(out[1], att[1], attd[1], qkv, on, B, T, H, D, p, 91);
    attention_backward_routed(dqkv[1], datt, dout, qkv, att[1], attd[1], on, B, T, H, D, p);
    for (size_t n = 0; n < N; n++)
        for (size_t i = 0; i < A; i++) {
            float want = on[n * H + i / D] != 0.0f ? out[0][n * A + i] : 0.0f;
            cr_assert(memcmp(&want, &out[1][n * A + i], sizeof want) == 0,
                      "out[%zu][%zu]: %a routed, %a plain (H=%d K=%d T=%d)", n, i,
                      out[1][n * A + i], want, H, K, T);
        }
    for (size_t i = 0; i < tt; i++) {
        size_t row = i / T, bh = row / T, t = row % T, b = bh / H, h = bh % H;
        int chosen = on[(b * T + t) * H + h] != 0.0f;
        float want = chosen ? att[0][i] : 0.0f, wantd = chosen ? attd[0][i] : 0.0f;
        cr_assert(memcmp(&want, &att[1][i], sizeof want) == 0, "att[%zu]", i);
        if (p > 0.0f)
            cr_assert(memcmp(&wantd, &attd[1][i], sizeof wantd) == 0, "attd[%zu]", i);
    }
    for (size_t i = 0; i < nqkv; i++)
        cr_assert(memcmp(&dqkv[0][i], &dqkv[1][i], sizeof(float)) == 0,
                  "dqkv[%zu]: %a routed, %a plain (H=%d K=%d T=%d p=%g)", i, dqkv[1][i],
                  dqkv[0][i], H, K, T, p);
    attention_fill_unrouted(att[1], qkv, on, B, T, H, D);
    cr_assert(memcmp(att[0], att[1], tt * sizeof(float)) == 0, "the filled att differs");
    for (int k = 0; k < 2; k++) {
        free(out[k]); free(att[k]); free(attd[k]); free(dqkv[k]);
    }
    free(qkv); free(dout); free(on); free(dmasked); free(datt);
}

Test(attention, routed_passes_are_the_plain_ones_times_the_choice_bit_for_bit)
{
    static const int cases[][4] = {
        /* H, K, T, D */
        {1, 1, 9, 16}, {4, 1, 9, 8}, {4, 2, 37, 8}, {4, 3, 20, 5}, {8, 1, 37, 4},
        {8, 2, 70, 4}, {8, 7, 37, 4}, {16, 1, 37, 2}, {16, 4, 70, 4}, {16, 15, 9, 1},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int *k = cases[c];
        check_routed(3, k[2], k[0], k[3], k[1], 0.0f);
        check_routed(2, k[2], k[0], k[3], k[1], 0.2f);
    }
}

/* Past the products' blocks: more than KC = 256 routed rows of one head (the weight
 * gradients' k blocks) and keys past what one packing holds (T x D > 16384). */
Test(attention, routed_passes_match_the_plain_ones_on_long_rows)
{
    check_routed(1, 300, 16, 4, 15, 0.0f);
    check_routed(1, 300, 2, 64, 1, 0.1f);
}
