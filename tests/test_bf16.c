/* Tests for kernels/bf16: the rounding and the chain's step with known answers, the
 * step and the rounding against the CPU's own instructions (builds with AVX512_BF16),
 * the tiled kernel against a chain of bf16_fma steps bit for bit on random and edge
 * inputs, the layer against a double reference within a bound derived from bf16's
 * unit roundoff, the GELU epilogue against gelu_forward, and thread counts; then the
 * emulation on the float32 kernels (kernels/bf16_emul.h) at its exponent bounds with
 * known answers, and against the step chain around them and on any float bits, on
 * both paths where the build has the instruction. */
#include "kernels/bf16.h"
#include "kernels/matmul.h"
#include "model/layers.h"
#include "tests/testutil.h"
#include "util/rng.h"

#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if BF16_NATIVE
#include <immintrin.h>
#endif

/* Same bits, or both NaN (NaN payloads are not promised: bf16.h). */
static int same(float a, float b)
{
    return tu_bits(a) == tu_bits(b) || (isnan(a) && isnan(b));
}

Test(bf16, rounding_is_nearest_even_with_signed_zero_denormals_and_quiet_nan)
{
    cr_assert_eq(bf16_from_float(1.0f), 0x3f80);
    cr_assert_eq(bf16_from_float(1.0f + 0x1p-8f), 0x3f80, "a tie goes to the even 1.0");
    cr_assert_eq(bf16_from_float(1.0f + 0x3p-8f), 0x3f82, "a tie goes to the even 1+2^-6");
    cr_assert_eq(bf16_from_float(1.0f + 0x1p-8f + 0x1p-20f), 0x3f81, "above the tie: up");
    cr_assert_eq(bf16_from_float(-1.0f - 0x1p-9f), 0xbf80, "below the tie: down");
    cr_assert_eq(bf16_from_float(0x1.fffffep127f), 0x7f80, "the largest float rounds to inf");
    cr_assert_eq(bf16_from_float(-INFINITY), 0xff80);
    cr_assert_eq(bf16_from_float(0x1p-127f), 0x0000, "a denormal becomes +0");
    cr_assert_eq(bf16_from_float(-0x1p-140f), 0x8000, "a negative denormal becomes -0");
    cr_assert_eq(bf16_from_float(-0.0f), 0x8000);
    cr_assert_eq(bf16_from_float(tu_from_bits(0x007fffffu)), 0x0000, "the largest denormal: +0");
    cr_assert_eq(bf16_from_float(0x1p-126f), 0x0080, "the smallest normal is kept");
    cr_assert_eq(bf16_from_float(tu_from_bits(0x7f800001u)), 0x7fc0, "a signalling NaN made quiet");
    cr_assert_eq(bf16_from_float(tu_from_bits(0xffc12345u)), 0xffc1, "a quiet NaN truncated");
    cr_assert(bf16_to_float(0x3f81) == 1.0f + 0x1p-7f);
}

/* One pair's two steps: the odd element first (bf16.h). */
static float pair_ref(float acc, Bf16 a0, Bf16 a1, Bf16 b0, Bf16 b1)
{
    return bf16_fma(bf16_fma(acc, a1, b1), a0, b0);
}

static Bf16 bf(float x)
{
    return bf16_from_float(x);
}

Test(bf16, step_known_answers_order_flush_and_the_tininess_window)
{
    /* acc = 1, odd product 2^24, even product -2^24: odd first gives
     * (1 + 2^24) = 2^24 (the tie goes to even), then 0; even first would give 1. */
    cr_assert(pair_ref(1.0f, bf(-0x1p12f), bf(0x1p12f), bf(0x1p12f), bf(0x1p12f)) == 0.0f);
    /* A product below 2^-126 alone: flushed to a zero of its sign. */
    cr_assert_eq(tu_bits(bf16_fma(0.0f, bf(-0x1p-65f), bf(0x1p-65f))), 0x80000000u);
    /* A denormal bf16 input reads as zero: 0x0001 * 2^100 would be 2^-33. */
    cr_assert_eq(tu_bits(bf16_fma(0.0f, 0x0001, bf(0x1p100f))), 0u);
    /* A denormal accumulator reads as zero: 2^-126 + 5 * 2^-149 would be normal. */
    cr_assert(bf16_fma(tu_from_bits(5), bf(0x1p-63f), bf(0x1p-63f)) == 0x1p-126f);
    /* 2^-126 - 1.25 * 2^-151: fma rounds it to 2^-126, the instruction (tininess after
     * rounding to 24 bits) flushes it to +0; 2^-126 - 2^-151 is a tie that rounds up
     * to 2^-126 either way and is kept. */
    cr_assert_eq(tu_bits(bf16_fma(0x1p-126f, bf(-1.25f * 0x1p-75f), bf(0x1p-76f))), 0u);
    cr_assert(bf16_fma(0x1p-126f, bf(-0x1p-75f), bf(0x1p-76f)) == 0x1p-126f);
    /* Overflow of the product alone does not overflow the sum: fma is exact. */
    cr_assert(bf16_fma(-0x1.fffffep127f, bf(0x1p64f), bf(0x1p64f)) == 0x1p104f);
    cr_assert(isnan(bf16_fma(INFINITY, bf(-INFINITY), bf(1.0f))));
}

/* A random bf16 of one of several kinds: any bit pattern (denormals, inf, NaN
 * included), or a normal value with its exponent near 0, near the bottom of the
 * range, or near the top. */
static Bf16 random_bf16(Rng *rng, int kind)
{
    uint32_t r = (uint32_t)rng_u64(rng);
    Bf16 sign_frac = (Bf16)(r & 0x807fu);
    int e;
    switch (kind) {
    case 0: return (Bf16)r;
    case 1: e = 127 - 10 + (int)((r >> 16) % 21); break;
    case 2: e = 30 + (int)((r >> 16) % 60); break;
    default: e = 200 + (int)((r >> 16) % 55); break;
    }
    return (Bf16)(sign_frac | (unsigned)e << 7);
}

#if BF16_NATIVE
static float instruction_pair(float acc, Bf16 a0, Bf16 a1, Bf16 b0, Bf16 b1)
{
    __m512i va = _mm512_set1_epi32((int)((uint32_t)a0 | (uint32_t)a1 << 16));
    __m512i vb = _mm512_set1_epi32((int)((uint32_t)b0 | (uint32_t)b1 << 16));
    __m512 r = _mm512_dpbf16_ps(_mm512_set1_ps(acc), (__m512bh)va, (__m512bh)vb);
    return _mm512_cvtss_f32(r);
}
#endif

Test(bf16, emulated_step_equals_the_vdpbf16ps_instruction_on_this_cpu)
{
#if BF16_NATIVE
    Rng rng;
    rng_init(&rng, 40, 1);
    for (long i = 0; i < 4000000; i++) {
        int kind = (int)(i % 4);
        Bf16 a0 = random_bf16(&rng, kind), a1 = random_bf16(&rng, kind);
        Bf16 b0 = random_bf16(&rng, kind), b1 = random_bf16(&rng, kind);
        if (kind == 2) {   /* exponents of b that put the products within 2^+-3 of 2^-126 */
            b0 = (Bf16)((b0 & 0x807fu) | (unsigned)(125 - ((a0 >> 7) & 0xff) +
                                                     (int)rng_below(&rng, 7)) << 7);
            b1 = (Bf16)((b1 & 0x807fu) | (unsigned)(125 - ((a1 >> 7) & 0xff) +
                                                     (int)rng_below(&rng, 7)) << 7);
        }
        float acc;
        switch (i % 5) {
        case 0: acc = -(bf16_to_float(a1) * bf16_to_float(b1)); break; /* cancellation */
        case 1: acc = -(bf16_to_float(a0) * bf16_to_float(b0)); break;
        case 2: acc = tu_from_bits((uint32_t)rng_u64(&rng)); break;         /* any float */
        case 3: acc = kind == 2 ? 0x1p-126f : bf16_to_float(random_bf16(&rng, kind)); break;
        default: acc = 0.0f; break;
        }
        float want = instruction_pair(acc, a0, a1, b0, b1);
        float got = pair_ref(acc, a0, a1, b0, b1);
        cr_assert(same(got, want), "acc %a a (%a, %a) b (%a, %a): emulated %a, vdpbf16ps %a",
                  acc, bf16_to_float(a0), bf16_to_float(a1), bf16_to_float(b0),
                  bf16_to_float(b1), got, want);
    }
#else
    cr_skip_test("this build does not target AVX512_BF16");
#endif
}

Test(bf16, rounding_equals_vcvtneps2bf16_on_this_cpu)
{
#if BF16_NATIVE
    Rng rng;
    rng_init(&rng, 40, 2);
    for (long i = 0; i < (1 << 22); i += 16) {
        uint32_t u[16];
        for (int t = 0; t < 16; t++)
            u[t] = i < 65536 ? (uint32_t)(i + t) << 16 | (uint32_t)(i + t) : (uint32_t)rng_u64(&rng);
        __m256bh h = _mm512_cvtneps_pbh(_mm512_loadu_ps((const float *)u));
        uint16_t want[16];
        memcpy(want, &h, sizeof want);
        for (int t = 0; t < 16; t++)
            cr_assert_eq(bf16_from_float(tu_from_bits(u[t])), want[t], "%08x: %04x, expected %04x",
                         u[t], bf16_from_float(tu_from_bits(u[t])), want[t]);
    }
#else
    cr_skip_test("this build does not target AVX512_BF16");
#endif
}

/* The chain of bf16.h for one output from pairs of rounded values. */
static float chain_ref(const uint32_t *a, const uint32_t *w, size_t wstride, int P)
{
    float acc = 0.0f;
    for (int p = 0; p < P; p++)
        acc = pair_ref(acc, (Bf16)a[p], (Bf16)(a[p] >> 16), (Bf16)w[p * wstride],
                       (Bf16)(w[p * wstride] >> 16));
    return acc;
}

Test(bf16, kernel_equals_the_step_chain_bit_for_bit_on_random_and_edge_inputs)
{
    Rng rng;
    rng_init(&rng, 40, 3);
    static const int shapes[][3] = { { 1, 1, 1 }, { 7, 3, 33 }, { 13, 300, 64 }, { 6, 257, 32 },
                                     { 20, 2, 5 }, { 12, 600, 40 } };
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int kind = 0; kind < 4; kind++) {
            int M = shapes[s][0], P = shapes[s][1], OC = shapes[s][2];
            int nq = (OC + BF16_PANEL - 1) / BF16_PANEL;
            uint32_t *a = malloc((size_t)M * P * 4), *w = malloc((size_t)nq * P * BF16_PANEL * 4);
            float *out = malloc((size_t)M * OC * 4), *bias = malloc((size_t)OC * 4);
            cr_assert(a && w && out && bias);
            for (size_t i = 0; i < (size_t)M * P; i++)
                a[i] = random_bf16(&rng, kind) | (uint32_t)random_bf16(&rng, kind) << 16;
            for (size_t i = 0; i < (size_t)nq * P * BF16_PANEL; i++)
                w[i] = random_bf16(&rng, kind) | (uint32_t)random_bf16(&rng, kind) << 16;
            /* Large cancellations: every odd row's weights are the negated even row's. */
            for (int q = 0; q < nq; q++)
                for (int p = 0; p < P; p++)
                    for (int j = 1; j < BF16_PANEL; j += 2)
                        w[((size_t)q * P + p) * BF16_PANEL + j] =
                            w[((size_t)q * P + p) * BF16_PANEL + j - 1] ^ 0x80008000u ^
                            (rng_below(&rng, 4) == 0 ? 0x00010000u : 0u);
            for (int o = 0; o < OC; o++)
                bias[o] = kind == 0 ? 0.0f : rng_uniform(&rng) - 0.5f;
            for (int q = 0; q < nq; q++) {
                int n = OC - q * BF16_PANEL < BF16_PANEL ? OC - q * BF16_PANEL : BF16_PANEL;
                Bf16Epilogue e = { 0, bias + q * BF16_PANEL, NULL, NULL };
                bf16_kernel_nt(M, n, P, a, (size_t)P, w + (size_t)q * P * BF16_PANEL,
                               out + q * BF16_PANEL, (size_t)OC, &e, BF16_AUTO);
            }
            for (int i = 0; i < M; i++)
                for (int o = 0; o < OC; o++) {
                    const uint32_t *wq = w + (size_t)(o / BF16_PANEL) * P * BF16_PANEL;
                    float want = chain_ref(a + (size_t)i * P, wq + o % BF16_PANEL, BF16_PANEL, P) +
                                 bias[o];
                    float got = out[(size_t)i * OC + o];
                    cr_assert(same(got, want), "M=%d P=%d OC=%d kind %d: out[%d][%d] = %a, chain %a",
                              M, P, OC, kind, i, o, got, want);
                }
            free(a);
            free(w);
            free(out);
            free(bias);
        }
}

static float *random_floats(Rng *rng, size_t n, float scale)
{
    float *x = malloc(n * sizeof(float));
    cr_assert(x);
    for (size_t i = 0; i < n; i++)
        x[i] = (float)rng_normal(rng) * scale;
    return x;
}

static const int layer_shapes[][3] = {
    /* N, IC, OC: odd sizes, the logits width, training-like shapes */
    { 67, 40, 65 }, { 13, 5, 7 }, { 1, 1, 1 }, { 256, 128, 384 }, { 96, 512, 128 },
    { 200, 301, 300 }, { 6, 1536, 33 },
};

Test(bf16, layer_is_within_the_bf16_bound_of_the_exact_product)
{
    /* Each factor is rounded once: x' = x (1 + d), |d| <= u = 2^-8, so a product is off
     * by at most (2u + u^2) |x w|; the K-term float sum adds at most gamma_K =
     * K u32 / (1 - K u32) (u32 = 2^-24) of the sum of |x' w'| <= (1 + u)^2 sum |x w|;
     * the bias adds one float rounding of the result. */
    const double u = 0x1p-8, u32 = 0x1p-24;
    Rng rng;
    rng_init(&rng, 40, 4);
    for (size_t s = 0; s < sizeof layer_shapes / sizeof layer_shapes[0]; s++) {
        int N = layer_shapes[s][0], IC = layer_shapes[s][1], OC = layer_shapes[s][2];
        float *in = random_floats(&rng, (size_t)N * IC, 1.0f);
        float *W = random_floats(&rng, (size_t)OC * IC, 0.05f);
        float *bias = random_floats(&rng, (size_t)OC, 0.1f);
        float *out = malloc((size_t)N * OC * sizeof(float));
        cr_assert(out);
        bf16_forward(out, NULL, in, W, bias, N, IC, OC, BF16_AUTO);
        double gamma = IC * u32 / (1.0 - IC * u32);
        for (int n = 0; n < N; n++)
            for (int o = 0; o < OC; o++) {
                double ref = 0.0, mag = 0.0;
                for (int k = 0; k < IC; k++) {
                    double p = (double)in[(size_t)n * IC + k] * W[(size_t)o * IC + k];
                    ref += p;
                    mag += fabs(p);
                }
                ref += bias[o];
                double err = fabs(out[(size_t)n * OC + o] - ref);
                double bound = (2 * u + u * u + gamma * (1 + u) * (1 + u)) * mag +
                               u32 * (fabs(ref) + mag) + 1e-30;
                cr_assert(err <= bound, "N=%d IC=%d OC=%d: out[%d][%d] = %.9g, exact %.9g, "
                          "error %.3g over the bound %.3g", N, IC, OC, n, o,
                          out[(size_t)n * OC + o], ref, err, bound);
            }
        /* The rounding is really there: most outputs differ from the float32 layer's. */
        float *fp32 = malloc((size_t)N * OC * sizeof(float));
        cr_assert(fp32);
        matmul_forward(fp32, in, W, bias, N, IC, OC);
        size_t differ = 0;
        for (size_t i = 0; i < (size_t)N * OC; i++)
            differ += tu_bits(fp32[i]) != tu_bits(out[i]);
        if (IC >= 16)
            cr_assert(differ * 2 > (size_t)N * OC, "N=%d IC=%d OC=%d: only %zu outputs differ "
                      "from float32's", N, IC, OC, differ);
        free(fp32);
        free(in);
        free(W);
        free(bias);
        free(out);
    }
}

static void assert_same_bits(const float *got, const float *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(same(got[i], want[i]), "%s: element %zu is %a, expected %a", what, i, got[i],
                  want[i]);
}

Test(bf16, gelu_layer_equals_plain_layer_then_gelu_forward)
{
    Rng rng;
    rng_init(&rng, 40, 5);
    for (size_t s = 0; s < sizeof layer_shapes / sizeof layer_shapes[0]; s++) {
        int N = layer_shapes[s][0], IC = layer_shapes[s][1], OC = layer_shapes[s][2];
        size_t no = (size_t)N * OC;
        float *in = random_floats(&rng, (size_t)N * IC, 1.0f);
        float *W = random_floats(&rng, (size_t)OC * IC, 0.1f);
        float *bias = random_floats(&rng, (size_t)OC, 0.1f);
        float *pre = malloc(no * 4), *act = malloc(no * 4), *dg = malloc(no * 4);
        float *want = malloc(no * 4), *dwant = malloc(no * 4), *ones = malloc(no * 4);
        cr_assert(pre && act && dg && want && dwant && ones);
        bf16_forward(pre, NULL, in, W, bias, N, IC, OC, BF16_AUTO);
        bf16_forward(act, dg, in, W, bias, N, IC, OC, BF16_AUTO);
        gelu_forward(want, pre, no);
        for (size_t i = 0; i < no; i++) {
            ones[i] = 1.0f;
            dwant[i] = 0.0f;
        }
        gelu_backward(dwant, ones, pre, no);   /* 0 + 1 * gelu'(pre) */
        assert_same_bits(act, want, no, "gelu(x)");
        assert_same_bits(dg, dwant, no, "gelu'(x)");
        free(in), free(W), free(bias), free(pre), free(act), free(dg), free(want),
            free(dwant), free(ones);
    }
}

Test(bf16, thread_counts_and_prepacked_weights_give_the_same_bits)
{
    Rng rng;
    rng_init(&rng, 40, 6);
    for (size_t s = 0; s < sizeof layer_shapes / sizeof layer_shapes[0]; s++) {
        int N = layer_shapes[s][0], IC = layer_shapes[s][1], OC = layer_shapes[s][2];
        size_t no = (size_t)N * OC;
        float *in = random_floats(&rng, (size_t)N * IC, 1.0f);
        float *W = random_floats(&rng, (size_t)OC * IC, 0.1f);
        float *bias = random_floats(&rng, (size_t)OC, 0.1f);
        float *ref = malloc(no * 4), *got = malloc(no * 4);
        uint32_t *wp = malloc(bf16_packed_size(OC, IC) * 4);
        cr_assert(ref && got && wp);
        omp_set_num_threads(1);
        bf16_forward(ref, NULL, in, W, bias, N, IC, OC, BF16_AUTO);
        for (int threads = 2; threads <= 3; threads++) {
            omp_set_num_threads(threads);
            bf16_forward(got, NULL, in, W, bias, N, IC, OC, BF16_AUTO);
            assert_same_bits(got, ref, no, "threads");
        }
        bf16_pack_weights(wp, W, OC, IC);
        for (int n = 0; n < N; n++)              /* one row at a time, as the sampler */
            bf16_forward_packed(got + (size_t)n * OC, NULL, in + (size_t)n * IC, wp, bias, 1,
                                IC, OC, BF16_AUTO);
        assert_same_bits(got, ref, no, "prepacked, row by row");
        free(in), free(W), free(bias), free(ref), free(got), free(wp);
    }
    omp_set_num_threads(2);
}

/* The chain of bf16.h over k < K of x[k * xs] y[k * ys], each value rounded to bf16
 * first (a missing k of an odd K is +0), starting from acc. */
static float chain_of(float acc, const float *x, size_t xs, const float *y, size_t ys, int K)
{
    for (int k = 0; k < K; k += 2) {
        Bf16 x0 = bf16_from_float(x[k * xs]), y0 = bf16_from_float(y[k * ys]);
        Bf16 x1 = k + 1 < K ? bf16_from_float(x[(k + 1) * xs]) : 0;
        Bf16 y1 = k + 1 < K ? bf16_from_float(y[(k + 1) * ys]) : 0;
        acc = pair_ref(acc, x0, x1, y0, y1);
    }
    return acc;
}

static const int backward_shapes[][3] = {
    /* N, IC, OC: odd sizes everywhere, and training-like shapes */
    { 13, 5, 7 }, { 1, 1, 1 }, { 67, 40, 65 }, { 96, 128, 384 }, { 37, 300, 33 },
};

Test(bf16, backward_is_the_documented_chains_bit_for_bit)
{
    Rng rng;
    rng_init(&rng, 40, 7);
    for (size_t s = 0; s < sizeof backward_shapes / sizeof backward_shapes[0]; s++) {
        int N = backward_shapes[s][0], IC = backward_shapes[s][1], OC = backward_shapes[s][2];
        float *in = random_floats(&rng, (size_t)N * IC, 1.0f);
        float *W = random_floats(&rng, (size_t)OC * IC, 0.1f);
        float *dout = random_floats(&rng, (size_t)N * OC, 0.01f);
        float *dg = random_floats(&rng, (size_t)N * IC, 1.0f);
        float *dW0 = random_floats(&rng, (size_t)OC * IC, 0.001f);
        float *din = malloc((size_t)N * IC * 4), *dins = malloc((size_t)N * IC * 4);
        float *dW = malloc((size_t)OC * IC * 4);
        float *db = calloc((size_t)OC, 4), *db32 = calloc((size_t)OC, 4);
        cr_assert(din && dins && dW && db && db32);
        memcpy(dW, dW0, (size_t)OC * IC * 4);
        bf16_backward(din, dW, db, dout, in, W, NULL, N, IC, OC, BF16_AUTO);
        bf16_backward(dins, NULL, NULL, dout, in, W, dg, N, IC, OC, BF16_AUTO);
        matmul_backward(NULL, NULL, db32, dout, in, W, N, IC, OC);
        for (int n = 0; n < N; n++)
            for (int i = 0; i < IC; i++) {
                float want = chain_of(0.0f, dout + (size_t)n * OC, 1, W + i, (size_t)IC, OC);
                size_t at = (size_t)n * IC + i;
                cr_assert(same(din[at], want), "N=%d IC=%d OC=%d: din[%d][%d] = %a, chain %a", N,
                          IC, OC, n, i, din[at], want);
                cr_assert(same(dins[at], want * dg[at]), "din with gelu' [%d][%d]", n, i);
            }
        for (int o = 0; o < OC; o++)
            for (int i = 0; i < IC; i++) {
                size_t at = (size_t)o * IC + i;
                float want = chain_of(dW0[at], dout + o, (size_t)OC, in + i, (size_t)IC, N);
                cr_assert(same(dW[at], want), "N=%d IC=%d OC=%d: dW[%d][%d] = %a, chain %a", N, IC,
                          OC, o, i, dW[at], want);
            }
        assert_same_bits(db, db32, (size_t)OC, "dbias is matmul_backward's");
        free(in), free(W), free(dout), free(dg), free(dW0), free(din), free(dins), free(dW),
            free(db), free(db32);
    }
}

Test(bf16, backward_is_within_the_bf16_bound_and_thread_counts_agree)
{
    /* The bound of layer_is_within_the_bf16_bound_of_the_exact_product, for sums of
     * OC terms (din) and N terms (dW, whose old value adds one more term). */
    const double u = 0x1p-8, u32 = 0x1p-24;
    Rng rng;
    rng_init(&rng, 40, 8);
    for (size_t s = 0; s < sizeof backward_shapes / sizeof backward_shapes[0]; s++) {
        int N = backward_shapes[s][0], IC = backward_shapes[s][1], OC = backward_shapes[s][2];
        float *in = random_floats(&rng, (size_t)N * IC, 1.0f);
        float *W = random_floats(&rng, (size_t)OC * IC, 0.1f);
        float *dout = random_floats(&rng, (size_t)N * OC, 0.01f);
        float *din[3], *dW[3];
        for (int t = 0; t < 3; t++) {
            omp_set_num_threads(t + 1);
            din[t] = malloc((size_t)N * IC * 4);
            dW[t] = calloc((size_t)OC * IC, 4);
            cr_assert(din[t] && dW[t]);
            bf16_backward(din[t], dW[t], NULL, dout, in, W, NULL, N, IC, OC, BF16_AUTO);
        }
        omp_set_num_threads(2);
        for (int t = 1; t < 3; t++) {
            assert_same_bits(din[t], din[0], (size_t)N * IC, "din, threads");
            assert_same_bits(dW[t], dW[0], (size_t)OC * IC, "dW, threads");
        }
        for (int n = 0; n < N; n++)
            for (int i = 0; i < IC; i++) {
                double ref = 0, mag = 0;
                for (int o = 0; o < OC; o++) {
                    double p = (double)dout[(size_t)n * OC + o] * W[(size_t)o * IC + i];
                    ref += p, mag += fabs(p);
                }
                double gamma = OC * u32 / (1 - OC * u32);
                double bound = (2 * u + u * u + gamma * (1 + u) * (1 + u)) * mag + 1e-30;
                cr_assert(fabs(din[0][(size_t)n * IC + i] - ref) <= bound, "din[%d][%d]", n, i);
            }
        for (int o = 0; o < OC; o++)
            for (int i = 0; i < IC; i++) {
                double ref = 0, mag = 0;
                for (int n = 0; n < N; n++) {
                    double p = (double)dout[(size_t)n * OC + o] * in[(size_t)n * IC + i];
                    ref += p, mag += fabs(p);
                }
                double gamma = (N + 1) * u32 / (1 - (N + 1) * u32);
                double bound = (2 * u + u * u + gamma * (1 + u) * (1 + u)) * mag + 1e-30;
                cr_assert(fabs(dW[0][(size_t)o * IC + i] - ref) <= bound, "dW[%d][%d]", o, i);
            }
        for (int t = 0; t < 3; t++)
            free(din[t]), free(dW[t]);
        free(in), free(W), free(dout);
    }
}

/* A bf16 value as a float: biased exponent e (1..254), random sign and fraction. */
static float bf16_valued(Rng *rng, int e)
{
    uint32_t r = (uint32_t)rng_u64(rng);
    return tu_from_bits((r & 0x80000000u) | (uint32_t)e << 23 | (r & 0x7fu) << 16);
}

static float scaled(float m, int e)
{
    return ldexpf(m, e - 127);
}

/* The emulation's bounds (kernels/bf16_emul.h) at their edges, through the layer:
 * 2^(ea-127) (1 + 2^-7)^2 - 2^(ea-127) (1 + 2^-6) 2^(eb-127) is one unit of the
 * products, 2^(ea+eb-268): with ea + eb = 141 that is 2^-127, a denormal that fma keeps
 * and the instruction flushes to +0; with 142 it is 2^-126, kept by both. Likewise an
 * old dW of 2^-104 + 2^-127 (biased exponent 23) minus a product of 2^-104 leaves
 * 2^-127: flushed. The other rows and columns are ordinary, so the float32 kernels do
 * take the product and these outputs are their exceptions. */
Test(bf16, emulation_flushes_at_its_exponent_bounds)
{
    enum { N = 12, OC = 12 };
    for (int path = BF16_AUTO; path <= BF16_EMULATED; path++) {
        float in[N][2], W[OC][2], out[N][OC];
        for (int n = 0; n < N; n++)
            in[n][0] = 1.5f, in[n][1] = -0.75f;
        for (int o = 0; o < OC; o++)
            W[o][0] = 0.25f, W[o][1] = 1.25f;
        in[0][0] = scaled(1.0f, 70), in[0][1] = scaled(1.0f + 0x1p-7f, 70);
        W[0][0] = scaled(-1.0f - 0x1p-6f, 71), W[0][1] = scaled(1.0f + 0x1p-7f, 71);
        W[1][0] = scaled(-1.0f - 0x1p-6f, 72), W[1][1] = scaled(1.0f + 0x1p-7f, 72);
        bf16_forward(&out[0][0], NULL, &in[0][0], &W[0][0], NULL, N, 2, OC, (Bf16Path)path);
        cr_assert_eq(tu_bits(out[0][0]), 0u, "exponents 70 + 71: %a, expected +0", out[0][0]);
        cr_assert(out[0][1] == 0x1p-126f, "exponents 70 + 72: %a, expected 2^-126", out[0][1]);
        cr_assert(out[1][2] == 1.5f * 0.25f - 0.75f * 1.25f);
        uint32_t wp[BF16_PANEL];            /* the sampler's packed path, row by row */
        float row[OC];
        bf16_pack_weights(wp, &W[0][0], OC, 2);
        for (int n = 0; n < N; n++) {
            bf16_forward_packed(row, NULL, in[n], wp, NULL, 1, 2, OC, (Bf16Path)path);
            assert_same_bits(row, out[n], OC, "packed");
        }
        /* dW[o][i] += dout[0][o] in[0][i] + dout[1][o] in[1][i] (odd first) */
        float dout[2][OC], x[2][N], dW[OC][N];
        for (int o = 0; o < OC; o++)
            dout[0][o] = 0.5f, dout[1][o] = 0.0f;
        for (int i = 0; i < N; i++)
            x[0][i] = -0.25f, x[1][i] = 3.0f;
        for (int o = 0; o < OC; o++)
            for (int i = 0; i < N; i++)
                dW[o][i] = 1.0f;
        dout[0][0] = 0x1p-52f, x[0][0] = -0x1p-52f, x[0][1] = -0x1p-52f;
        dW[0][0] = 0x1p-104f + 0x1p-127f;      /* exponent 23: from it, the step */
        dW[0][1] = 0x1p-103f + 0x1p-126f;      /* exponent 24: the float32 kernels' */
        bf16_backward(NULL, &dW[0][0], NULL, &dout[0][0], &x[0][0], NULL, NULL, 2, N, OC,
                      (Bf16Path)path);
        cr_assert_eq(tu_bits(dW[0][0]), 0u, "old exponent 23: %a, expected +0", dW[0][0]);
        cr_assert(dW[0][1] == 0x1p-103f - 0x1p-104f + 0x1p-126f, "old exponent 24: %a",
                  dW[0][1]);
        cr_assert(dW[1][2] == 1.0f - 0.125f);
    }
}

/* Operands around the emulation's exponent test (kernels/bf16_emul.h: an output runs
 * on the float32 kernels when its operands' smallest biased exponents sum to >= 142).
 * Line r of v (elements v[r * rs + k * ks], k < K) has exponent e0 + r % spread, or
 * low + r % 8 on every ninth line; a twin line's pairs have two equal elements, another
 * line's odd element is its even one negated and moved by one bf16 step. Twin lines
 * against the others make each pair's two products nearly cancel, to about
 * 2^(ex + ey - 261): the chains of the ordinary lines (exponents summing to 142..147)
 * wander close to 2^-126 on the float32 kernels, and those of the ninth lines (down to
 * 134) through tiny values, as exceptions. */
static void near_the_bound(Rng *rng, float *v, int lines, int K, size_t rs, size_t ks, int e0,
                           int spread, int low, int twin)
{
    for (int r = 0; r < lines; r++)
        for (int k = 0; k < K; k++) {
            float *at = v + (size_t)r * rs + (size_t)k * ks;
            if (k % 2 == 0)
                *at = bf16_valued(rng, r % 9 == 4 ? low + r % 8 : e0 + r % spread);
            else if (twin)
                *at = at[-(long)ks];
            else
                *at = tu_from_bits((tu_bits(at[-(long)ks]) ^ 0x80000000u) +
                                (rng_below(rng, 2) ? 0x10000u : 0xffff0000u));
        }
}

/* Any float bits (NaN, infinities, denormals), or ordinary values with one in 64 of
 * them any bits. */
static void any_bits(Rng *rng, float *v, size_t n, int sprinkled)
{
    for (size_t i = 0; i < n; i++)
        v[i] = sprinkled && rng_below(rng, 64) ? (float)rng_normal(rng)
                                              : tu_from_bits((uint32_t)rng_u64(rng));
}

/* Old dW values: zero, denormal, small normals (below 2^-103, which the float32 kernels
 * cannot start a chain from) and ordinary ones. */
static void mixed_old_values(Rng *rng, float *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        switch (rng_below(rng, 16)) {
        case 0: v[i] = tu_from_bits((uint32_t)rng_u64(rng) & 0x807fffffu); break;
        case 1: v[i] = bf16_valued(rng, 1 + (int)rng_below(rng, 30)) * 1.001f; break;
        case 2: v[i] = rng_below(rng, 2) ? 0.0f : -0.0f; break;
        default: v[i] = (float)rng_normal(rng) * 0x1p-100f; break;
        }
}

static const int bound_shapes[][3] = { { 37, 60, 33 }, { 13, 7, 70 }, { 96, 128, 64 } };

/* The emulated layer (both paths in a build with the instruction) against the step
 * chain on the operands above (kind 0), on any float bits (1: mostly exceptions, so
 * the step-by-step tiles) and on ordinary values sprinkled with any bits (2). */
Test(bf16, emulated_layer_equals_the_step_chain_near_the_bound_and_on_any_bits)
{
    Rng rng;
    rng_init(&rng, 40, 9);
    for (size_t s = 0; s < sizeof bound_shapes / sizeof bound_shapes[0]; s++)
        for (int kind = 0; kind < 3; kind++)
            for (int path = BF16_AUTO; path <= BF16_EMULATED; path++) {
                int N = bound_shapes[s][0], IC = bound_shapes[s][1], OC = bound_shapes[s][2];
                float *in = malloc((size_t)N * IC * 4), *W = malloc((size_t)OC * IC * 4);
                float *dout = malloc((size_t)N * OC * 4), *out = malloc((size_t)N * OC * 4);
                float *din = malloc((size_t)N * IC * 4), *dW0 = malloc((size_t)OC * IC * 4);
                float *dW = malloc((size_t)OC * IC * 4), *bias = malloc((size_t)OC * 4);
                cr_assert(in && W && dout && out && din && dW0 && dW && bias);
                for (int o = 0; o < OC; o++)
                    bias[o] = (float)rng_normal(&rng) * 0x1p-120f;
                /* forward: in's rows (twins) against W's rows */
                if (kind == 0) {
                    near_the_bound(&rng, in, N, IC, (size_t)IC, 1, 64, 1, 56, 1);
                    near_the_bound(&rng, W, OC, IC, (size_t)IC, 1, 78, 6, 70, 0);
                } else {
                    any_bits(&rng, in, (size_t)N * IC, kind == 2);
                    any_bits(&rng, W, (size_t)OC * IC, kind == 2);
                }
                uint32_t *wp = malloc(bf16_packed_size(OC, IC) * 4);
                cr_assert(wp);
                bf16_pack_weights(wp, W, OC, IC);
                for (int packed = 0; packed < 2; packed++) {
                    if (packed)                 /* the sampler's path, row by row */
                        for (int n = 0; n < N; n++)
                            bf16_forward_packed(out + (size_t)n * OC, NULL, in + (size_t)n * IC,
                                                wp, bias, 1, IC, OC, (Bf16Path)path);
                    else
                        bf16_forward(out, NULL, in, W, bias, N, IC, OC, (Bf16Path)path);
                    for (int n = 0; n < N; n++)
                        for (int o = 0; o < OC; o++) {
                            float want = chain_of(0.0f, in + (size_t)n * IC, 1, W + (size_t)o * IC,
                                                  1, IC) + bias[o];
                            cr_assert(same(out[(size_t)n * OC + o], want), "forward N=%d IC=%d "
                                      "OC=%d kind %d path %d packed %d: out[%d][%d] = %a, chain "
                                      "%a", N, IC, OC, kind, path, packed, n, o,
                                      out[(size_t)n * OC + o], want);
                        }
                }
                free(wp);
                /* din: dout's rows (twins over o) against W's columns */
                if (kind == 0) {
                    near_the_bound(&rng, dout, N, OC, (size_t)OC, 1, 64, 1, 56, 1);
                    near_the_bound(&rng, W, IC, OC, 1, (size_t)IC, 78, 6, 70, 0);
                } else {
                    any_bits(&rng, dout, (size_t)N * OC, kind == 2);
                }
                bf16_backward(din, NULL, NULL, dout, in, W, NULL, N, IC, OC, (Bf16Path)path);
                for (int n = 0; n < N; n++)
                    for (int i = 0; i < IC; i++) {
                        float want = chain_of(0.0f, dout + (size_t)n * OC, 1, W + i, (size_t)IC, OC);
                        cr_assert(same(din[(size_t)n * IC + i], want), "din N=%d IC=%d OC=%d kind "
                                  "%d path %d: din[%d][%d] = %a, chain %a", N, IC, OC, kind, path,
                                  n, i, din[(size_t)n * IC + i], want);
                    }
                /* dW: dout's columns (twins over n) against in's, from mixed old values */
                if (kind == 0) {
                    near_the_bound(&rng, dout, OC, N, 1, (size_t)OC, 64, 1, 56, 1);
                    near_the_bound(&rng, in, IC, N, 1, (size_t)IC, 78, 6, 70, 0);
                }
                mixed_old_values(&rng, dW0, (size_t)OC * IC);
                memcpy(dW, dW0, (size_t)OC * IC * 4);
                bf16_backward(NULL, dW, NULL, dout, in, W, NULL, N, IC, OC, (Bf16Path)path);
                for (int o = 0; o < OC; o++)
                    for (int i = 0; i < IC; i++) {
                        size_t at = (size_t)o * IC + i;
                        float want = chain_of(dW0[at], dout + o, (size_t)OC, in + i, (size_t)IC, N);
                        cr_assert(same(dW[at], want), "dW N=%d IC=%d OC=%d kind %d path %d: "
                                  "dW[%d][%d] = %a from %a, chain %a", N, IC, OC, kind, path, o,
                                  i, dW[at], dW0[at], want);
                    }
                free(in), free(W), free(dout), free(out), free(din), free(dW0), free(dW),
                    free(bias);
            }
}
