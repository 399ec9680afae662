/* Tests for kernels/matmul: the three sgemm kernels against a double-precision
 * reference (tests/matmul_ref.h) on many shapes and strides, the float-operation
 * scheme documented in kernels/matmul.c bit for bit, and the determinism contract
 * of matmul.h (any sub-block, any thread count: same bits). The linear layer and
 * the fused, causal and transposed products built on them are in test_linear.c.
 * Timing is left to bench/bench_matmul.c. */
#include "model/layers.h"
#include "kernels/matmul.h"
#include "util/rng.h"
#include "kernels/vmath.h"
#include "tests/matmul_ref.h"

#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static const SgemmFn kind_fn[] = { matmul_nt, matmul_nn, matmul_tn };

static void prod_run(const Prod *p, float *C, int accumulate)
{
    kind_fn[p->kind](p->M, p->N, p->K, p->A, p->lda, p->B, p->ldb, C, p->ldc, accumulate);
}

/* Cells of C past column N (ldc padding) must be left alone. */
static void check_padding(const Prod *p, const float *old, const float *got)
{
    for (int i = 0; i < p->M; i++)
        for (int j = p->N; j < p->ldc; j++) {
            size_t at = (size_t)i * p->ldc + j;
            cr_assert(memcmp(&old[at], &got[at], sizeof(float)) == 0,
                      "%s M=%d N=%d: padding C[%d][%d] changed", kind_name[p->kind], p->M, p->N,
                      i, j);
        }
}

/* Runs p with accumulate 0 and 1 and checks both against the reference. */
static void check_product(Prod *p)
{
    size_t n = (size_t)p->M * p->ldc;
    float *c = malloc(n * sizeof(float));
    cr_assert(c);
    for (int accumulate = 0; accumulate <= 1; accumulate++) {
        memcpy(c, p->C, n * sizeof(float));
        prod_run(p, c, accumulate);
        check_reference(p, p->C, c, accumulate, "reference");
        check_padding(p, p->C, c);
    }
    free(c);
}

Test(matmul, kernels_match_double_reference_for_all_small_shapes)
{
    Rng rng;
    rng_init(&rng, 1, 100);
    for (int kind = NT; kind <= TN; kind++)
        for (int M = 1; M <= 20; M++)
            for (int N = 1; N <= 20; N++)
                for (int K = 1; K <= 20; K += (N % 3) + 1) {
                    Prod p = prod_make((Kind)kind, M, N, K, (M + N + K) % 4, &rng);
                    check_product(&p);
                    prod_free(&p);
                }
}

/* Shapes past every tile, block and edge size: k blocks (> 256), row blocks, the
 * logits width 65, head sizes that are not multiples of 8, and odd strides. */
Test(matmul, kernels_match_double_reference_for_large_and_odd_shapes)
{
    static const int shapes[][4] = {
        /* M, N, K, pad */
        { 67, 65, 128, 0 }, { 130, 65, 37, 3 }, { 101, 40, 5, 1 },   { 64, 24, 64, 7 },
        { 23, 129, 300, 2 }, { 200, 33, 520, 0 }, { 97, 17, 1030, 5 }, { 7, 250, 9, 1 },
        { 1, 300, 70, 0 },  { 300, 1, 70, 3 },  { 65, 128, 255, 0 }, { 50, 48, 257, 1 },
    };
    Rng rng;
    rng_init(&rng, 2, 100);
    for (int kind = NT; kind <= TN; kind++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            Prod p = prod_make((Kind)kind, shapes[s][0], shapes[s][1], shapes[s][2],
                               shapes[s][3], &rng);
            check_product(&p);
            prod_free(&p);
        }
}

/* The scheme in kernels/matmul.c's header comment, one element at a time. The AVX2 path
 * and the portable path on a target with fast fmaf use fmaf; the portable path
 * without it uses a separate multiply and add. */
#if (defined(__AVX2__) && defined(__FMA__)) || defined(FP_FAST_FMAF)
static float madd(float a, float b, float s) { return fmaf(a, b, s); }
#else
static float madd(float a, float b, float s) { return s + a * b; }
#endif

static float scheme_element(const Prod *p, int i, int j, float old, int accumulate)
{
    float s = accumulate ? old : 0.0f;
    for (int k = 0; k < p->K; k++)
        s = madd(a_at(p, i, k), b_at(p, k, j), s);
    return s;
}

Test(matmul, kernels_follow_the_documented_float_scheme_bit_for_bit)
{
    /* Every kind of column panel on both tiles (AVX2: 16 wide, AVX-512: 32 wide):
     * full, one full vector, partial in the first or the second vector, several. */
    static const int shapes[][3] = { { 1, 1, 1 },    { 5, 7, 3 },     { 13, 33, 17 },
                                     { 7, 65, 40 },  { 19, 18, 300 }, { 12, 16, 8 },
                                     { 8, 31, 21 },  { 6, 48, 33 },   { 11, 96, 5 },
                                     { 3, 113, 2 },  { 200, 290, 600 }, { 13, 40, 1100 } };
    /* The last two cross the AVX-512 path's blocks: 192 rows of A, 256 columns and 512
     * k of packed B (several k groups, a short last one, epilogue-free early blocks). */
    Rng rng;
    rng_init(&rng, 3, 100);
    for (int kind = NT; kind <= TN; kind++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int accumulate = 0; accumulate <= 1; accumulate++) {
                Prod p = prod_make((Kind)kind, shapes[s][0], shapes[s][1], shapes[s][2], 1,
                                   &rng);
                size_t n = (size_t)p.M * p.ldc;
                float *c = malloc(n * sizeof(float));
                cr_assert(c);
                memcpy(c, p.C, n * sizeof(float));
                prod_run(&p, c, accumulate);
                for (int i = 0; i < p.M; i++)
                    for (int j = 0; j < p.N; j++) {
                        size_t at = (size_t)i * p.ldc + j;
                        float want = scheme_element(&p, i, j, p.C[at], accumulate);
                        cr_assert(memcmp(&want, &c[at], sizeof(float)) == 0,
                                  "%s M=%d N=%d K=%d acc=%d: C[%d][%d] = %.9g, scheme %.9g",
                                  kind_name[kind], p.M, p.N, p.K, accumulate, i, j, c[at],
                                  want);
                    }
                free(c);
                prod_free(&p);
            }
}

/* Computing the sub-block rows i0..i0+m-1, columns j0..j0+n-1 on its own (a
 * different place in every tile) gives the same bits as the whole product. */
static void check_sub_block(const Prod *p, const float *whole, int accumulate, int i0,
                            int j0, int m, int n)
{
    size_t cn = (size_t)p->M * p->ldc;
    float *c = malloc(cn * sizeof(float));
    cr_assert(c);
    memcpy(c, p->C, cn * sizeof(float));
    const float *a = p->kind == TN ? p->A + i0 : p->A + (size_t)i0 * p->lda;
    const float *b = p->kind == NT ? p->B + (size_t)j0 * p->ldb : p->B + j0;
    float *cs = c + (size_t)i0 * p->ldc + j0;
    kind_fn[p->kind](m, n, p->K, a, p->lda, b, p->ldb, cs, p->ldc, accumulate);
    for (int i = i0; i < i0 + m; i++)
        for (int j = j0; j < j0 + n; j++) {
            size_t at = (size_t)i * p->ldc + j;
            cr_assert(memcmp(&c[at], &whole[at], sizeof(float)) == 0,
                      "%s M=%d N=%d K=%d acc=%d, block (%d,%d) %dx%d: C[%d][%d] = %.9g, "
                      "whole product %.9g",
                      kind_name[p->kind], p->M, p->N, p->K, accumulate, i0, j0, m, n, i, j,
                      c[at], whole[at]);
        }
    free(c);
}

Test(matmul, any_sub_block_gives_the_same_bits_as_the_whole_product)
{
    static const int shapes[][3] = { { 37, 45, 29 }, { 50, 70, 261 }, { 130, 65, 128 },
                                     { 9, 130, 5 } };
    Rng rng;
    rng_init(&rng, 4, 100);
    for (int kind = NT; kind <= TN; kind++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int accumulate = 0; accumulate <= 1; accumulate++) {
                Prod p = prod_make((Kind)kind, shapes[s][0], shapes[s][1], shapes[s][2], 3,
                                   &rng);
                size_t cn = (size_t)p.M * p.ldc;
                float *whole = malloc(cn * sizeof(float));
                cr_assert(whole);
                memcpy(whole, p.C, cn * sizeof(float));
                prod_run(&p, whole, accumulate);
                for (int t = 0; t < 12; t++) {
                    int i0 = (int)rng_below(&rng, (uint64_t)p.M);
                    int j0 = (int)rng_below(&rng, (uint64_t)p.N);
                    int m = 1 + (int)rng_below(&rng, (uint64_t)(p.M - i0));
                    int n = 1 + (int)rng_below(&rng, (uint64_t)(p.N - j0));
                    if (t == 0) /* a single element, alone in its tile */
                        m = n = 1;
                    check_sub_block(&p, whole, accumulate, i0, j0, m, n);
                }
                free(whole);
                prod_free(&p);
            }
}

Test(matmul, zero_k_gives_zero_or_leaves_c)
{
    Rng rng;
    rng_init(&rng, 5, 100);
    for (int kind = NT; kind <= TN; kind++) {
        Prod p = prod_make((Kind)kind, 5, 9, 1, 1, &rng);
        p.K = 0;
        size_t n = (size_t)p.M * p.ldc;
        float *c = malloc(n * sizeof(float));
        cr_assert(c);
        memcpy(c, p.C, n * sizeof(float));
        prod_run(&p, c, 1);
        cr_assert(memcmp(c, p.C, n * sizeof(float)) == 0, "%s K=0 acc=1 changed C",
                  kind_name[kind]);
        prod_run(&p, c, 0);
        for (int i = 0; i < p.M; i++)
            for (int j = 0; j < p.N; j++)
                cr_assert(c[(size_t)i * p.ldc + j] == 0.0f, "%s K=0: C[%d][%d] = %g",
                          kind_name[kind], i, j, c[(size_t)i * p.ldc + j]);
        check_padding(&p, p.C, c);
        free(c);
        prod_free(&p);
    }
}
