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
 * AVX2 build's) and a multiply and an add otherwise. */
#ifndef HEADCOUNT_VMATH_H
#define HEADCOUNT_VMATH_H

#include <math.h>
#include <string.h>
#if defined(__AVX__)
#include <immintrin.h>
#endif

typedef float v8f __attribute__((vector_size(32)));
typedef int v8i __attribute__((vector_size(32)));

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

static inline v8f v8_exp(v8f x)
{
    x = v8_clamp(x, v8_set1(-87.0f), v8_set1(88.0f));
    /* n = round(x / ln2) by the 1.5 * 2^23 trick (round-to-nearest mode). */
    const v8f magic = v8_set1(12582912.0f);
    v8f n = v8_fma(x, v8_set1(1.44269504088896341f), magic) - magic;
    /* r = x - n ln2, with ln2 split in two for accuracy (Cody-Waite). */
    v8f r = v8_fma(n, v8_set1(-0.693359375f), x);
    r = v8_fma(n, v8_set1(2.12194440e-4f), r);
    v8f p = v8_set1(1.9875691500e-4f);
    p = v8_fma(p, r, v8_set1(1.3981999507e-3f));
    p = v8_fma(p, r, v8_set1(8.3334519073e-3f));
    p = v8_fma(p, r, v8_set1(4.1665795894e-2f));
    p = v8_fma(p, r, v8_set1(1.6666665459e-1f));
    p = v8_fma(p, r, v8_set1(5.0000001201e-1f));
    p = v8_fma(p, r * r, r) + v8_set1(1.0f);
    v8i e = (__builtin_convertvector(n, v8i) + 127) << 23;
    return p * (v8f)e;
}

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

/* GELU, tanh form, as x * sigmoid(2u) with u = K (x + A x^3) (the same function:
 * 0.5 (1 + tanh(u)) = sigmoid(2u)), and its derivative
 * s + x s (1 - s) 2 u'(x), u' = K (1 + 3 A x^2). Shared by the element-wise layer and
 * the matmul epilogues, so the fused and the separate passes give the same bits. */
#define VMATH_GELU_K 0.7978845608028654f /* sqrt(2 / pi) */
#define VMATH_GELU_A 0.044715f

static inline v8f v8_gelu_gate(v8f x)
{
    v8f u = v8_set1(VMATH_GELU_K) * v8_fma(v8_set1(VMATH_GELU_A) * x * x, x, x);
    return v8_set1(1.0f) / (v8_set1(1.0f) + v8_exp(v8_set1(-2.0f) * u));
}

static inline v8f v8_gelu(v8f x)
{
    return x * v8_gelu_gate(x);
}

/* gelu'(x) given the gate s = v8_gelu_gate(x): the forward that stores both gelu(x)
 * and gelu'(x) computes s once; the bits equal v8_gelu_grad's. */
static inline v8f v8_gelu_grad_gated(v8f x, v8f s)
{
    v8f a3x = v8_set1(3.0f * VMATH_GELU_A) * x;
    v8f du = v8_set1(2.0f * VMATH_GELU_K) * v8_fma(a3x, x, v8_set1(1.0f));
    return v8_fma(x * s * (v8_set1(1.0f) - s), du, s);
}

static inline v8f v8_gelu_grad(v8f x)
{
    return v8_gelu_grad_gated(x, v8_gelu_gate(x));
}

#endif
