/* vmath: 8-lane exp, GELU and dot product, written with GCC vector extensions.
 *
 * Softmax, cross-entropy and GELU spend most of their time in exp. libm's expf is
 * scalar; this one runs 8 lanes at once on AVX2 and still compiles (as SSE or
 * scalar code) without it. Every element, whether in a full group of 8 or in a
 * padded tail, goes through the same operations, so results never depend on
 * where an array was split between threads.
 *
 * Accuracy: the Cephes expf polynomial on [-ln2/2, ln2/2] after the usual
 * range reduction x = n ln2 + r, about 1 ulp over [-87, 88]. Inputs are clamped
 * to that range (exp(-87) ~ 1.6e-38 stands in for smaller results).
 *
 * The polynomials run on fused multiply-adds (v8_fma): with FMA hardware that is
 * one instruction per step and halves exp's cost, since the build compiles with
 * -ffp-contract=off and the compiler fuses nothing by itself. Like the matmul
 * kernels, the portable build uses fmaf where it is fast (then its bits equal the
 * AVX2 build's) and a multiply and an add otherwise.
 *
 * exp and the GELU come in two widths, v8_ and v16_ (16 lanes: one AVX-512 register,
 * used by the AVX-512 matmul epilogues and attention's softmax), generated from one
 * text (VMATH_DEFINE) so that a lane gets the same operations, hence the same bits, at
 * either width. The sums (v8_hsum, vmath_dot) exist at 8 lanes only: their tree fixes
 * the order of a reduction, which must not depend on the vector width (16-lane values
 * join an 8-lane sum through v8_add_halves). */
#ifndef HEADCOUNT_VMATH_H
#define HEADCOUNT_VMATH_H

#include <math.h>
#include <string.h>
#if defined(__AVX__)
#include <immintrin.h>
#endif

typedef float v8f __attribute__((vector_size(32)));
typedef int v8i __attribute__((vector_size(32)));
typedef float v16f __attribute__((vector_size(64)));
typedef int v16i __attribute__((vector_size(64)));

static inline v8f v8_load(const float *p)
{
    v8f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void v8_store(float *p, v8f v)
{
    memcpy(p, &v, sizeof v);
}

static inline v8f v8_set1(float x)
{
    return (v8f){x, x, x, x, x, x, x, x};
}

/* Lane-wise select: mask lanes all-ones take a, zero lanes take b. */
static inline v8f v8_select(v8i mask, v8f a, v8f b)
{
    return (v8f)(((v8i)a & mask) | ((v8i)b & ~mask));
}

/* a * b + c, rounded once where the target has a fast fused multiply-add. */
static inline v8f v8_fma(v8f a, v8f b, v8f c)
{
#if defined(__FMA__)
    return (v8f)_mm256_fmadd_ps((__m256)a, (__m256)b, (__m256)c);
#elif defined(FP_FAST_FMAF)
    v8f r;
    for (int k = 0; k < 8; k++)
        r[k] = fmaf(a[k], b[k], c[k]);
    return r;
#else
    return a * b + c;
#endif
}

/* min(x, hi) and max(x, lo) that keep a NaN x (as the selects they stand for):
 * one instruction each on AVX. */
static inline v8f v8_clamp(v8f x, v8f lo, v8f hi)
{
#if defined(__AVX__)
    x = (v8f)_mm256_min_ps((__m256)hi, (__m256)x); /* hi < x ? hi : x */
    return (v8f)_mm256_max_ps((__m256)lo, (__m256)x); /* lo > x ? lo : x */
#else
    x = v8_select(x > hi, hi, x);
    return v8_select(x < lo, lo, x);
#endif
}

/* 16 lanes: the same primitives; where the target has no AVX-512 each is done as two
 * 8-lane halves (the same operation per lane, so the same bits). These are static
 * inline and never cross a call boundary, so GCC's note that 64-byte vectors are
 * passed differently with and without AVX-512 (-Wpsabi) does not apply to them. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
static inline v16f v16_set1(float x)
{
    return (v16f){x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x};
}

static inline v16f v16_load(const float *p)
{
    v16f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static inline void v16_store(float *p, v16f v)
{
    memcpy(p, &v, sizeof v);
}

/* Lanes 8h .. 8h+7 of v. */
static inline v8f v16_half(v16f v, int h)
{
    v8f r;
    memcpy(&r, (const float *)&v + 8 * h, sizeof r);
    return r;
}

/* acc + lanes 0-7 of v, then + lanes 8-15: an 8-lane running sum fed 16 values in the
 * order two 8-lane steps would feed them (the same bits as those steps). */
static inline v8f v8_add_halves(v8f acc, v16f v)
{
    acc += v16_half(v, 0);
    return acc + v16_half(v, 1);
}

#if !defined(__AVX512F__)
static inline v16f v16_join(v8f lo, v8f hi)
{
    v16f r;
    memcpy(&r, &lo, sizeof lo);
    memcpy((float *)&r + 8, &hi, sizeof hi);
    return r;
}
#endif

static inline v16f v16_fma(v16f a, v16f b, v16f c)
{
#if defined(__AVX512F__)
    return (v16f)_mm512_fmadd_ps((__m512)a, (__m512)b, (__m512)c);
#else
    return v16_join(v8_fma(v16_half(a, 0), v16_half(b, 0), v16_half(c, 0)),
                    v8_fma(v16_half(a, 1), v16_half(b, 1), v16_half(c, 1)));
#endif
}

static inline v16f v16_clamp(v16f x, v16f lo, v16f hi)
{
#if defined(__AVX512F__)
    x = (v16f)_mm512_min_ps((__m512)hi, (__m512)x); /* hi < x ? hi : x */
    return (v16f)_mm512_max_ps((__m512)lo, (__m512)x); /* lo > x ? lo : x */
#else
    return v16_join(v8_clamp(v16_half(x, 0), v16_half(lo, 0), v16_half(hi, 0)),
                    v8_clamp(v16_half(x, 1), v16_half(lo, 1), v16_half(hi, 1)));
#endif
}

/* GELU, tanh form, as x * sigmoid(2u) with u = K (x + A x^3) (the same function:
 * 0.5 (1 + tanh(u)) = sigmoid(2u)), and its derivative
 * s + x s (1 - s) 2 u'(x), u' = K (1 + 3 A x^2). Shared by the element-wise layer and
 * the matmul epilogues, so the fused and the separate passes give the same bits. */
#define VMATH_GELU_K 0.7978845608028654f /* sqrt(2 / pi) */
#define VMATH_GELU_A 0.044715f

/* For a width W (8 or 16: prefix vW_, types vWf, vWi):
 *   vW_exp(x): the Cephes expf polynomial after x = n ln2 + r (Cody-Waite), n by the
 *     1.5 * 2^23 rounding trick (round-to-nearest mode), 2^n built in the exponent;
 *   vW_gelu_gate(x) = sigmoid(2u), so gelu(x) = x * vW_gelu_gate(x);
 *   vW_gelu_grad_gated(x, s) = gelu'(x) given the gate s = vW_gelu_gate(x) (the
 *     forward that stores both gelu(x) and gelu'(x) computes s once). */
#define VMATH_DEFINE(P, VF, VI)                                                          \
    static inline VF P##_exp(VF x)                                                       \
    {                                                                                    \
        x = P##_clamp(x, P##_set1(-87.0f), P##_set1(88.0f));                             \
        const VF magic = P##_set1(12582912.0f);                                          \
        VF n = P##_fma(x, P##_set1(1.44269504088896341f), magic) - magic;                \
        VF r = P##_fma(n, P##_set1(-0.693359375f), x);                                   \
        r = P##_fma(n, P##_set1(2.12194440e-4f), r);                                     \
        VF p = P##_set1(1.9875691500e-4f);                                               \
        p = P##_fma(p, r, P##_set1(1.3981999507e-3f));                                   \
        p = P##_fma(p, r, P##_set1(8.3334519073e-3f));                                   \
        p = P##_fma(p, r, P##_set1(4.1665795894e-2f));                                   \
        p = P##_fma(p, r, P##_set1(1.6666665459e-1f));                                   \
        p = P##_fma(p, r, P##_set1(5.0000001201e-1f));                                   \
        p = P##_fma(p, r * r, r) + P##_set1(1.0f);                                       \
        VI e = (__builtin_convertvector(n, VI) + 127) << 23;                             \
        return p * (VF)e;                                                                \
    }                                                                                    \
    static inline VF P##_gelu_gate(VF x)                                                 \
    {                                                                                    \
        VF u = P##_set1(VMATH_GELU_K) * P##_fma(P##_set1(VMATH_GELU_A) * x * x, x, x);   \
        return P##_set1(1.0f) / (P##_set1(1.0f) + P##_exp(P##_set1(-2.0f) * u));         \
    }                                                                                    \
    static inline VF P##_gelu_grad_gated(VF x, VF s)                                     \
    {                                                                                    \
        VF a3x = P##_set1(3.0f * VMATH_GELU_A) * x;                                      \
        VF du = P##_set1(2.0f * VMATH_GELU_K) * P##_fma(a3x, x, P##_set1(1.0f));         \
        return P##_fma(x * s * (P##_set1(1.0f) - s), du, s);                             \
    }

VMATH_DEFINE(v8, v8f, v8i)
VMATH_DEFINE(v16, v16f, v16i)
#pragma GCC diagnostic pop

/* The same function for one value, bit-identical to a lane of v8_exp. */
static inline float vmath_exp(float x)
{
    v8f v = v8_exp(v8_set1(x));
    return v[0];
}

/* The eight lanes of v summed by one fixed tree, (0+4 + 1+5) + (2+6 + 3+7): every
 * lane-wise sum in the project is joined this way, so its order depends only on n. */
static inline float v8_hsum(v8f v)
{
    return ((v[0] + v[4]) + (v[1] + v[5])) + ((v[2] + v[6]) + (v[3] + v[7]));
}

/* Sum of a[i] * b[i], i < n: eight lanes of fused multiply-adds over full chunks,
 * joined by a fixed tree, then the tail in order; the order depends only on n. */
static inline float vmath_dot(const float *a, const float *b, int n)
{
    v8f acc = v8_set1(0.0f);
    int i = 0;
    for (; i + 8 <= n; i += 8)
        acc = v8_fma(v8_load(a + i), v8_load(b + i), acc);
    float s = v8_hsum(acc);
    for (; i < n; i++)
        s += a[i] * b[i];
    return s;
}

static inline v8f v8_gelu(v8f x)
{
    return x * v8_gelu_gate(x);
}

static inline v8f v8_gelu_grad(v8f x)
{
    return v8_gelu_grad_gated(x, v8_gelu_gate(x));
}

#endif
