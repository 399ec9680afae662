/* An activation's rows rounded to bf16 by its producer (kernels/bf16_rows.h): the copy
 * equals, bit for bit, the rounding the product makes of the same values (the pairs of
 * bf16_round_rows; the emulation's swapped floats, element by element from
 * bf16_from_float, with each row's smallest exponent), on odd and even shapes and on any
 * float bits (denormals, infinities, NaN); LayerNorm writing it leaves its own output's
 * bits and writes the rounding of that output; and the product reading the copy gives
 * the bits of the product rounding its input, forward and GELU, on both paths and
 * kinds, with and without W's copies, at 1 and 2 threads. Likewise the cross-entropy
 * backward writing dlogits' rows keeps dlogits' bits and writes their rounding, and the
 * backward reading dout's rows for din gives the bits of the backward rounding dout
 * (din, dW, dbias). So do the residual gradient's producers, the LayerNorm's backward
 * (dres) and the dropout's (dbranch), and proj's backward reading their rows gives its
 * bits; and the columns those producers write for dW (as bf16_round_cols, or the
 * emulation's floats with each column's smallest exponent) are the rounding of their
 * finished output, and the backward reading them gives its bits and reads them (one
 * bit flipped moves dW). Attention's forward writing its output's rows and its
 * backward writing dqkv's (plain and routed) keep their outputs' bits and write the
 * rounding of the finished rows, and proj's forward and qkv's backward reading them
 * give their bits. The cross-entropy's and attention's backward write dlogits' and
 * dqkv's columns too, the rounding of the finished matrix, which the logits' and qkv's
 * dW read to the same bits, and write the rows alone into a copy without room for the
 * columns. The columns of the dW products' `in` that the forward's producers write and
 * keep for the backward (the LayerNorm's, attention's; as bf16_pack_cols's panels, or
 * the emulation's floats) are the rounding of their outputs, and the backward reading
 * them gives its bits and reads them. (The trainer's use of it is tested with the
 * weights' copies: tests/test_bf16_weight.c.) */
#include <criterion/criterion.h>
#include <math.h>
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/bf16.h"
#include "kernels/bf16_rows.h"
#include "kernels/bf16_weight.h"
#include "model/attention.h"
#include "model/layers.h"
#include "tests/testutil.h"
#include "util/rng.h"

/* Values that a rounding must treat apart: zeros, denormals, the float extremes, ties
 * and near-ties of the bf16 rounding, infinities, quiet and signalling NaN. */
static const uint32_t SPECIAL[] = {
    0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x00400000u, 0x00800000u,
    0x80800000u, 0x7f7fffffu, 0xff7f8000u, 0x3f808000u, 0x3f818000u, 0x3f807fffu,
    0x7f800000u, 0xff800000u, 0x7fc00000u, 0x7f800001u, 0xffa00000u, 0x7fffffffu,
};
enum { NSPECIAL = sizeof SPECIAL / sizeof SPECIAL[0] };

/* Ordinary values, with one in `rare` of them any float bits or a SPECIAL (0: none). */
static float *values(Rng *rng, size_t n, float scale, int rare)
{
    float *x = malloc((n ? n : 1) * sizeof(float));
    cr_assert(x);
    for (size_t i = 0; i < n; i++) {
        if (rare && rng_below(rng, (uint64_t)rare) == 0)
            x[i] = rng_below(rng, 2) ? tu_from_bits((uint32_t)rng_u64(rng))
                                     : tu_from_bits(SPECIAL[rng_below(rng, NSPECIAL)]);
        else
            x[i] = (float)rng_normal(rng) * scale;
    }
    return x;
}

/* The biased exponent of the smallest nonzero bf16 magnitude in x[n], 255 where all
 * round to zero: from bf16_from_float alone. */
static int smallest_exponent(const float *x, int n)
{
    unsigned m = 0x10000;
    for (int k = 0; k < n; k++) {
        unsigned a = bf16_from_float(x[k]) & 0x7fffu;
        if (a && a < m)
            m = a;
    }
    return m == 0x10000 ? 255 : (int)(m >> 7);
}

/* r's copy against the rounding of x[N][K] made here (pairs: by bf16_round_rows; floats:
 * element by element). */
static void expect_rounding_of(const Bf16Rows *r, const float *x, int N, int K,
                               const char *what)
{
    cr_assert(r->of == x && r->n == N && r->k == K, "%s: it says it holds another matrix",
              what);
    if (r->kind == BF16_COPY_PANELS) {
        size_t n = (size_t)N * bf16_pairs(K);
        uint32_t *want = malloc(n * 4);
        cr_assert(want);
        bf16_round_rows(want, x, N, K);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(r->rows[i], want[i], "%s %dx%d: pair %zu is %08x, expected %08x",
                         what, N, K, i, r->rows[i], want[i]);
        free(want);
        return;
    }
    int K2 = 2 * bf16_pairs(K);
    for (int n = 0; n < N; n++) {
        for (int k = 0; k < K2; k++) {
            uint32_t want = (k ^ 1) < K ? (uint32_t)bf16_from_float(x[(size_t)n * K + (k ^ 1)])
                                              << 16
                                        : 0;
            cr_assert_eq(r->rows[(size_t)n * K2 + k], want, "%s %dx%d: [%d][%d] is %08x, "
                         "expected %08x", what, N, K, n, k, r->rows[(size_t)n * K2 + k], want);
        }
        cr_assert_eq(r->row_exp[n], smallest_exponent(x + (size_t)n * K, K),
                     "%s %dx%d: row %d's exponent", what, N, K, n);
    }
}

/* r's columns against the rounding of x[N][K]'s columns made here (pairs: by
 * bf16_round_cols; floats: element by element, row i of x into row i ^ 1, with each
 * column's smallest exponent). */
static void expect_cols_of(const Bf16Rows *r, const float *x, int N, int K, const char *what)
{
    cr_assert(bf16_cols_of(r, x, N, K, r->kind), "%s: it holds no columns of this matrix",
              what);
    int P = bf16_pairs(N);
    if (r->kind == BF16_COPY_PANELS) {
        size_t n = (size_t)K * P;
        uint32_t *want = malloc(n * 4);
        cr_assert(want);
        bf16_round_cols(want, x, N, K);
        for (size_t i = 0; i < n; i++)
            cr_assert_eq(r->cols[i], want[i], "%s %dx%d: column pair %zu is %08x, expected "
                         "%08x", what, N, K, i, r->cols[i], want[i]);
        free(want);
        return;
    }
    for (int i = 0; i < 2 * P; i++)
        for (int c = 0; c < K; c++) {
            uint32_t want = (i ^ 1) < N
                                ? (uint32_t)bf16_from_float(x[(size_t)(i ^ 1) * K + c]) << 16
                                : 0;
            cr_assert_eq(r->cols[(size_t)i * K + c], want, "%s %dx%d: column [%d][%d] is "
                         "%08x, expected %08x", what, N, K, i, c, r->cols[(size_t)i * K + c],
                         want);
        }
    unsigned char *e = malloc((size_t)K);
    float *col = malloc((size_t)N * sizeof(float));
    cr_assert(e && col);
    bf16_rows_col_exps(r, e);
    for (int c = 0; c < K; c++) {
        for (int n = 0; n < N; n++)
            col[n] = x[(size_t)n * K + c];
        cr_assert_eq(e[c], smallest_exponent(col, N), "%s %dx%d: column %d's exponent", what,
                     N, K, c);
    }
    free(e), free(col);
}

/* x[N][K]'s rows and columns put into r as a producer puts them, the blocks of rows in
 * reverse order (any order must do). */
static void put_rows_and_cols(Bf16Rows *r, const float *x, int N, int K)
{
    bf16_rows_start(r, x, N, K);
    cr_assert(bf16_rows_start_cols(r), "no room for the columns of %dx%d", N, K);
    for (int n = N - 1; n >= 0; n--)
        bf16_rows_put(r, n, x + (size_t)n * K);
    for (int n0 = (N - 1) / BF16_COL_ROWS * BF16_COL_ROWS; n0 >= 0; n0 -= BF16_COL_ROWS) {
        int m = N - n0 < BF16_COL_ROWS ? N - n0 : BF16_COL_ROWS;
        bf16_rows_put_cols(r, n0, m, x + (size_t)n0 * K);
    }
}

/* r's columns of x[N][K] as the dW product's `in` (bf16_rows_init_in_cols) against the
 * product's own rounding of them (pairs: bf16_pack_cols's panels, padding included;
 * floats: as expect_cols_of), and that nothing reads them as rows or, in the pairs, as
 * dout's columns. */
static void expect_in_cols_of(const Bf16Rows *r, const float *x, int N, int K,
                              const char *what)
{
    cr_assert(bf16_in_cols_of(r, x, N, K, r->kind), "%s: it holds no columns of this matrix",
              what);
    cr_assert(!bf16_rows_of(r, x, N, K, r->kind), "%s: it holds no rows", what);
    if (r->kind == BF16_COPY_FLOATS) {
        expect_cols_of(r, x, N, K, what);
        return;
    }
    cr_assert(!bf16_cols_of(r, x, N, K, r->kind), "%s: the panels read as dout's columns",
              what);
    size_t n = bf16_packed_size(K, N);
    uint32_t *want = malloc(n * 4);
    cr_assert(want);
    bf16_pack_cols(want, x, N, K);
    for (size_t i = 0; i < n; i++)
        cr_assert_eq(r->cols[i], want[i], "%s %dx%d: panel word %zu is %08x, expected %08x",
                     what, N, K, i, r->cols[i], want[i]);
    free(want);
}

/* x[N][K]'s columns put into r (from bf16_rows_init_in_cols) as the LayerNorm's forward
 * puts them, the blocks in reverse order. */
static void put_in_cols(Bf16Rows *r, const float *x, int N, int K)
{
    cr_assert(bf16_rows_start_in_cols(r, x, N, K), "no room for the columns of %dx%d", N, K);
    for (int n0 = (N - 1) / BF16_COL_ROWS * BF16_COL_ROWS; n0 >= 0; n0 -= BF16_COL_ROWS) {
        int m = N - n0 < BF16_COL_ROWS ? N - n0 : BF16_COL_ROWS;
        bf16_rows_put_cols(r, n0, m, x + (size_t)n0 * K);
    }
}

static const int shapes[][2] = {
    /* N, K: odd and even lengths, one element, a NANO row */
    { 1, 1 }, { 3, 7 }, { 5, 8 }, { 17, 33 }, { 9, 384 }, { 4, 129 },
};

Test(bf16_rows, rows_equal_the_products_roundings_on_any_bits)
{
    Rng rng;
    rng_init(&rng, 71, 0);
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
        for (int rare = 0; rare <= 2; rare++)       /* none, 1 in 2, every value */
            for (int kind = BF16_COPY_FLOATS; kind <= BF16_COPY_PANELS; kind++) {
                int N = shapes[s][0], K = shapes[s][1];
                float *x = values(&rng, (size_t)N * K, 1.0f, rare == 2 ? 1 : rare * 2);
                Bf16Rows r;
                cr_assert_eq(bf16_rows_init(&r, N + 2, K + 3, (Bf16CopyKind)kind), 0);
                bf16_rows_start(&r, x, N, K);
                for (int n = N - 1; n >= 0; n--)        /* any order */
                    bf16_rows_put(&r, n, x + (size_t)n * K);
                char what[64];
                snprintf(what, sizeof what, "rare %d kind %d", rare, kind);
                expect_rounding_of(&r, x, N, K, what);
                bf16_rows_free(&r);
                free(x);
            }
}

/* The columns, on one block and several, with an odd last block and odd widths. */
Test(bf16_rows, cols_equal_the_products_roundings_on_any_bits)
{
    static const int col_shapes[][2] = {
        { 1, 1 }, { 3, 7 }, { 32, 5 }, { 33, 64 }, { 65, 129 }, { 97, 3 }, { 128, 66 },
    };
    Rng rng;
    rng_init(&rng, 77, 0);
    for (size_t s = 0; s < sizeof col_shapes / sizeof col_shapes[0]; s++)
        for (int rare = 0; rare <= 2; rare++)       /* none, 1 in 2, every value */
            for (int kind = BF16_COPY_FLOATS; kind <= BF16_COPY_PANELS; kind++) {
                int N = col_shapes[s][0], K = col_shapes[s][1];
                float *x = values(&rng, (size_t)N * K, 1.0f, rare == 2 ? 1 : rare * 2);
                Bf16Rows r;
                cr_assert_eq(bf16_rows_init(&r, N + 2, K + 3, (Bf16CopyKind)kind), 0);
                cr_assert_eq(bf16_rows_init_cols(&r, N + 1, K + 1), 0);
                put_rows_and_cols(&r, x, N, K);
                char what[64];
                snprintf(what, sizeof what, "cols rare %d kind %d", rare, kind);
                expect_rounding_of(&r, x, N, K, what);
                expect_cols_of(&r, x, N, K, what);
                /* starting another matrix forgets the columns; without room, none */
                bf16_rows_start(&r, x, N, K);
                cr_assert(!bf16_cols_of(&r, x, N, K, (Bf16CopyKind)kind));
                bf16_rows_start(&r, x, N + 2, K);
                cr_assert(!bf16_rows_start_cols(&r) && !bf16_cols_of(&r, x, N + 2, K,
                                                                     (Bf16CopyKind)kind));
                bf16_rows_free(&r);
                free(x);
            }
}

/* `in`'s columns, held alone for the dW product: one block and several, odd and even N
 * not a multiple of 32, widths of a part of a panel, several panels and chunks. */
Test(bf16_rows, in_cols_equal_the_products_roundings_on_any_bits)
{
    static const int in_shapes[][2] = {
        { 1, 1 }, { 3, 7 }, { 32, 5 }, { 33, 64 }, { 65, 129 }, { 70, 96 }, { 97, 33 },
    };
    Rng rng;
    rng_init(&rng, 79, 0);
    for (size_t s = 0; s < sizeof in_shapes / sizeof in_shapes[0]; s++)
        for (int rare = 0; rare <= 2; rare++)       /* none, 1 in 2, every value */
            for (int kind = BF16_COPY_FLOATS; kind <= BF16_COPY_PANELS; kind++) {
                int N = in_shapes[s][0], K = in_shapes[s][1];
                float *x = values(&rng, (size_t)N * K, 1.0f, rare == 2 ? 1 : rare * 2);
                Bf16Rows r;
                cr_assert_eq(bf16_rows_init_in_cols(&r, N + 1, K + 1, (Bf16CopyKind)kind), 0);
                /* a matrix smaller than the room, over stale words: it is laid out for
                 * its own N and K, as the product rounds it, and writes every word */
                size_t room = kind == BF16_COPY_FLOATS
                                  ? (size_t)2 * bf16_pairs(N + 1) * (K + 1)
                                  : bf16_packed_size(K + 1, N + 1);
                for (size_t i = 0; i < room; i++)
                    r.cols[i] = 0xdeadbeefu;
                put_in_cols(&r, x, N, K);
                char what[64];
                snprintf(what, sizeof what, "in cols rare %d kind %d", rare, kind);
                expect_in_cols_of(&r, x, N, K, what);
                /* without room it holds nothing */
                cr_assert(!bf16_rows_start_in_cols(&r, x, N + 2, K));
                cr_assert(!bf16_in_cols_of(&r, x, N, K, (Bf16CopyKind)kind) &&
                          !bf16_in_cols_of(&r, x, N + 2, K, (Bf16CopyKind)kind));
                bf16_rows_free(&r);
                free(x);
            }
}

/* Every SPECIAL value at every position of a row of odd and of even length. */
Test(bf16_rows, special_values_at_every_position)
{
    for (int K = 5; K <= 6; K++)
        for (int kind = BF16_COPY_FLOATS; kind <= BF16_COPY_PANELS; kind++) {
            int N = NSPECIAL * K;
            float *x = malloc((size_t)N * K * sizeof(float));
            cr_assert(x);
            for (int n = 0; n < N; n++)
                for (int k = 0; k < K; k++)
                    x[(size_t)n * K + k] = k == n % K ? tu_from_bits(SPECIAL[n / K]) : 1.5f;
            Bf16Rows r;
            cr_assert_eq(bf16_rows_init(&r, N, K, (Bf16CopyKind)kind), 0);
            bf16_rows_start(&r, x, N, K);
            for (int n = 0; n < N; n++)
                bf16_rows_put(&r, n, x + (size_t)n * K);
            expect_rounding_of(&r, x, N, K, "specials");
            /* and down the columns: column k holds every SPECIAL, at rows of both
             * parities (K odd) or of one (K even) */
            cr_assert_eq(bf16_rows_init_cols(&r, N, K), 0);
            put_rows_and_cols(&r, x, N, K);
            expect_cols_of(&r, x, N, K, "specials' columns");
            bf16_rows_free(&r);
            free(x);
        }
}

static void expect_same(const float *got, const float *want, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        cr_assert(tu_bits(got[i]) == tu_bits(want[i]) || (isnan(got[i]) && isnan(want[i])),
                  "%s: element %zu is %a, expected %a", what, i, got[i], want[i]);
}

/* The LayerNorm's forward writing its output's rows and, for the dW product that reads
 * it in the backward, its columns (odd and even N, not multiples of 32 among them). */
Test(bf16_rows, layernorm_keeps_its_bits_and_writes_the_rounding_of_its_output)
{
    static const int ln_shapes[][2] = { { 3, 7 }, { 64, 24 }, { 130, 385 }, { 512, 64 },
                                        { 97, 33 } };
    Rng rng;
    rng_init(&rng, 72, 0);
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        for (size_t s = 0; s < sizeof ln_shapes / sizeof ln_shapes[0]; s++)
            for (int rare = 0; rare <= 1; rare++)
                for (int kind = BF16_COPY_FLOATS; kind <= BF16_COPY_PANELS; kind++) {
                    int N = ln_shapes[s][0], C = ln_shapes[s][1];
                    size_t nc = (size_t)N * C;
                    /* rare: a few rows with any bits (NaN, infinite or denormal outputs) */
                    float *x = values(&rng, nc, 2.0f, rare ? 50 : 0);
                    float *w = values(&rng, (size_t)C, 1.0f, 0), *b = values(&rng, (size_t)C,
                                                                             0.1f, 0);
                    /* tiny weights and no bias make some outputs denormal */
                    if (rare)
                        for (int c = 0; c < C; c += 3)
                            w[c] *= 0x1p-125f, b[c] = 0.0f;
                    float *out[2], *mean[2], *rstd[2];
                    for (int i = 0; i < 2; i++) {
                        out[i] = malloc(nc * 4), mean[i] = malloc((size_t)N * 4);
                        rstd[i] = malloc((size_t)N * 4);
                        cr_assert(out[i] && mean[i] && rstd[i]);
                    }
                    Bf16Rows r, rc;
                    cr_assert_eq(bf16_rows_init(&r, N, C, (Bf16CopyKind)kind), 0);
                    cr_assert_eq(bf16_rows_init_in_cols(&rc, N, C, (Bf16CopyKind)kind), 0);
                    layernorm_forward(out[0], mean[0], rstd[0], x, w, b, N, C);
                    layernorm_forward_rounded(out[1], mean[1], rstd[1], x, w, b, N, C, &r,
                                              &rc);
                    char what[96];
                    snprintf(what, sizeof what, "layernorm %dx%d rare %d kind %d threads %d", N,
                             C, rare, kind, threads);
                    expect_same(out[1], out[0], nc, what);
                    expect_same(mean[1], mean[0], (size_t)N, what);
                    expect_same(rstd[1], rstd[0], (size_t)N, what);
                    expect_rounding_of(&r, out[1], N, C, what);
                    expect_in_cols_of(&rc, out[1], N, C, what);
                    if (rare) {
                        size_t denormal = 0;
                        for (size_t i = 0; i < nc; i++)
                            denormal += (tu_bits(out[1][i]) & 0x7f800000u) == 0 && out[1][i] != 0;
                        cr_assert(denormal > 0, "%s: no denormal output to round", what);
                    }
                    bf16_rows_free(&r), bf16_rows_free(&rc);
                    for (int i = 0; i < 2; i++)
                        free(out[i]), free(mean[i]), free(rstd[i]);
                    free(x), free(w), free(b);
                }
    }
}

/* The forward (plain and GELU) reading in's rows of `kind` against the same call
 * rounding in, on `path`, with W rounded or read from its copies of the same kind; and
 * a copy of another matrix, which the product must not read. */
static void product_case(Rng *rng, int N, int IC, int OC, int rare, Bf16CopyKind kind,
                         Bf16Path path)
{
    size_t no = (size_t)N * OC, ni = (size_t)N * IC, nw = (size_t)OC * IC;
    float *in = values(rng, ni, 1.0f, rare), *W = values(rng, nw, 0.05f, rare);
    float *bias = values(rng, (size_t)OC, 0.1f, 0), *other = values(rng, ni, 1.0f, 0);
    float *out[2], *gd[2];
    for (int r = 0; r < 2; r++) {
        out[r] = malloc(no * 4), gd[r] = malloc(no * 4);
        cr_assert(out[r] && gd[r]);
    }
    Bf16Weight c;
    cr_assert_eq(bf16_weight_init(&c, W, OC, IC, kind), 0);
    bf16_weight_write(&c);
    Bf16Rows rows, stale;
    cr_assert_eq(bf16_rows_init(&rows, N, IC, kind), 0);
    cr_assert_eq(bf16_rows_init(&stale, N, IC, kind), 0);
    bf16_rows_start(&rows, in, N, IC);
    bf16_rows_start(&stale, in, N, IC - 1 > 0 ? IC - 1 : IC);   /* another shape */
    for (int n = 0; n < N; n++) {
        bf16_rows_put(&rows, n, in + (size_t)n * IC);
        bf16_rows_put(&stale, n, other + (size_t)n * IC);
    }
    char what[160];
    for (int gelu = 0; gelu < 2; gelu++)
        for (int withw = 0; withw < 2; withw++)
            for (int which = 0; which < 2; which++) {
                const Bf16Rows *rin = which ? &rows : (IC > 1 ? &stale : NULL);
                snprintf(what, sizeof what, "N=%d IC=%d OC=%d rare %d kind %d path %d gelu %d "
                         "W copies %d %s", N, IC, OC, rare, (int)kind, (int)path, gelu, withw,
                         which ? "rows" : "another matrix's rows");
                bf16_forward_with(out[0], gelu ? gd[0] : NULL, in, NULL, W, withw ? &c : NULL,
                                  bias, N, IC, OC, path);
                bf16_forward_with(out[1], gelu ? gd[1] : NULL, in, rin, W, withw ? &c : NULL,
                                  bias, N, IC, OC, path);
                expect_same(out[1], out[0], no, what);
                if (gelu)
                    expect_same(gd[1], gd[0], no, what);
            }
    bf16_rows_free(&rows);
    bf16_rows_free(&stale);
    bf16_weight_free(&c);
    for (int r = 0; r < 2; r++)
        free(out[r]), free(gd[r]);
    free(in), free(W), free(bias), free(other);
}

static const int product_shapes[][3] = {
    /* N, IC, OC */
    { 13, 5, 7 }, { 67, 40, 65 }, { 200, 96, 130 }, { 7, 1, 3 },
};

Test(bf16_rows, products_reading_the_rows_give_the_products_bits)
{
    Rng rng;
    rng_init(&rng, 73, 0);
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        for (size_t s = 0; s < sizeof product_shapes / sizeof product_shapes[0]; s++)
            for (int rare = 0; rare <= 1; rare++)   /* 1: any bits, so exceptions and tiles */
                for (int kind = BF16_COPY_FLOATS; kind <= BF16_COPY_PANELS; kind++)
                    for (int path = BF16_AUTO; path <= BF16_EMULATED; path++)
                        product_case(&rng, product_shapes[s][0], product_shapes[s][1],
                                     product_shapes[s][2], rare, (Bf16CopyKind)kind,
                                     (Bf16Path)path);
    }
}

/* A backward (A -> C, dout = dres, dbranch, dlogits or dqkv) reading r, the copy of
 * dout[N][C] (its rows, and its columns where r holds them), as rdout against the same
 * call rounding dout: din, dW and dbias, on both paths (a path that reads the other
 * layout rounds dout itself; the emulation's tiles read the pairs). */
static void expect_backward_reads(Rng *rng, const Bf16Rows *r, const float *dout, int N,
                                  int C, const char *what)
{
    int A = C + 3;
    size_t na = (size_t)N * A, nw = (size_t)C * A;
    float *in = values(rng, na, 1.0f, 0), *W = values(rng, nw, 0.05f, 0);
    float *din[2] = { malloc(na * 4), malloc(na * 4) };
    float *gW[2] = { malloc(nw * 4), malloc(nw * 4) };
    float *gb[2] = { malloc((size_t)C * 4), malloc((size_t)C * 4) };
    cr_assert(din[0] && din[1] && gW[0] && gW[1] && gb[0] && gb[1]);
    char full[200];
    for (int path = BF16_AUTO; path <= BF16_EMULATED; path++) {
        for (int i = 0; i < 2; i++) {
            memset(din[i], 0, na * 4), memset(gW[i], 0, nw * 4);
            memset(gb[i], 0, (size_t)C * 4);
            bf16_backward_with(din[i], gW[i], gb[i], dout, i ? r : NULL, in, W, NULL, NULL, N,
                               A, C, (Bf16Path)path);
        }
        snprintf(full, sizeof full, "%s: the backward reading it, path %d", what, path);
        expect_same(din[1], din[0], na, full);
        expect_same(gW[1], gW[0], nw, full);
        expect_same(gb[1], gb[0], (size_t)C, full);
    }
    for (int i = 0; i < 2; i++)
        free(din[i]), free(gW[i]), free(gb[i]);
    free(in), free(W);
}

Test(bf16_rows, crossentropy_backward_keeps_its_bits_and_writes_the_rounding_of_dlogits)
{
    static const int ce_shapes[][2] = { { 3, 7 }, { 64, 24 }, { 130, 385 }, { 96, 1536 },
                                        { 97, 33 } };
    Rng rng;
    rng_init(&rng, 74, 0);
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        for (size_t s = 0; s < sizeof ce_shapes / sizeof ce_shapes[0]; s++)
            for (int rare = 0; rare <= 1; rare++)
                for (int kind = BF16_COPY_FLOATS; kind <= BF16_COPY_PANELS; kind++) {
                    int N = ce_shapes[s][0], V = ce_shapes[s][1];
                    size_t nv = (size_t)N * V;
                    /* rare: probabilities of any bits (NaN, infinite, denormal dlogits);
                     * dlogits' old values too, since the backward adds into them */
                    float *probs = values(&rng, nv, 0.01f, rare ? 40 : 0);
                    float *old = values(&rng, nv, 1e-3f, rare ? 40 : 0);
                    int *targets = malloc((size_t)N * sizeof(int));
                    float *d[2] = { malloc(nv * 4), malloc(nv * 4) };
                    cr_assert(targets && d[0] && d[1]);
                    for (int n = 0; n < N; n++)
                        targets[n] = (int)rng_below(&rng, (uint64_t)V);
                    memcpy(d[0], old, nv * 4);
                    memcpy(d[1], old, nv * 4);
                    Bf16Rows r, narrow;
                    cr_assert_eq(bf16_rows_init(&r, N + 1, V + 2, (Bf16CopyKind)kind), 0);
                    cr_assert_eq(bf16_rows_init_cols(&r, N + 1, V + 1), 0);
                    crossentropy_backward(d[0], probs, targets, N, V, 1.0f / (float)N);
                    crossentropy_backward_rounded(d[1], probs, targets, N, V, 1.0f / (float)N,
                                                  &r);
                    char what[96];
                    snprintf(what, sizeof what, "crossentropy %dx%d rare %d kind %d threads %d",
                             N, V, rare, kind, threads);
                    expect_same(d[1], d[0], nv, what);
                    expect_rounding_of(&r, d[1], N, V, what);
                    expect_cols_of(&r, d[1], N, V, what);
                    /* the logits' dW reading the columns (any bits in dlogits make the
                     * step-by-step tiles run: kept to the smaller shapes) */
                    if (!rare || nv <= 64 * 1024)
                        expect_backward_reads(&rng, &r, d[1], N, V, what);
                    /* a copy with room for the rows and not the columns writes the rows
                     * alone */
                    cr_assert_eq(bf16_rows_init(&narrow, N, V, (Bf16CopyKind)kind), 0);
                    cr_assert_eq(bf16_rows_init_cols(&narrow, N, V - 1 > 0 ? V - 1 : 1), 0);
                    memcpy(d[1], old, nv * 4);
                    crossentropy_backward_rounded(d[1], probs, targets, N, V, 1.0f / (float)N,
                                                  &narrow);
                    expect_same(d[1], d[0], nv, what);
                    expect_rounding_of(&narrow, d[1], N, V, what);
                    cr_assert(!bf16_cols_of(&narrow, d[1], N, V, (Bf16CopyKind)kind),
                              "%s: columns without room", what);
                    bf16_rows_free(&r);
                    bf16_rows_free(&narrow);
                    free(probs), free(old), free(targets), free(d[0]), free(d[1]);
                }
    }
}

/* The backward (plain and with the GELU's dgelu) reading dout's rows of `kind` for din
 * against the same call rounding dout: din, dW (from the same old values) and dbias, on
 * `path`, with W rounded or read from its copies of the same kind; and a copy of
 * another matrix, which the backward must not read. */
static void backward_case(Rng *rng, int N, int IC, int OC, int rare, Bf16CopyKind kind,
                          Bf16Path path)
{
    size_t no = (size_t)N * OC, ni = (size_t)N * IC, nw = (size_t)OC * IC;
    float *dout = values(rng, no, 1.0f, rare), *in = values(rng, ni, 1.0f, rare);
    float *W = values(rng, nw, 0.05f, rare), *dg = values(rng, ni, 1.0f, 0);
    float *dW0 = values(rng, nw, 0.01f, 0), *db0 = values(rng, (size_t)OC, 0.01f, 0);
    float *other = values(rng, no, 1.0f, 0);
    float *din[2], *dW[2], *db[2];
    for (int r = 0; r < 2; r++) {
        din[r] = malloc(ni * 4), dW[r] = malloc(nw * 4), db[r] = malloc((size_t)OC * 4);
        cr_assert(din[r] && dW[r] && db[r]);
    }
    Bf16Weight c;
    cr_assert_eq(bf16_weight_init(&c, W, OC, IC, kind), 0);
    bf16_weight_write(&c);
    Bf16Rows rows, stale;
    cr_assert_eq(bf16_rows_init(&rows, N, OC, kind), 0);
    cr_assert_eq(bf16_rows_init(&stale, N, OC, kind), 0);
    bf16_rows_start(&rows, dout, N, OC);
    bf16_rows_start(&stale, other, N, OC);                     /* another matrix */
    for (int n = 0; n < N; n++) {
        bf16_rows_put(&rows, n, dout + (size_t)n * OC);
        bf16_rows_put(&stale, n, other + (size_t)n * OC);
    }
    char what[160];
    for (int gelu = 0; gelu < 2; gelu++)
        for (int withw = 0; withw < 2; withw++)
            for (int which = 0; which < 2; which++) {
                const Bf16Rows *rdout = which ? &rows : &stale;
                snprintf(what, sizeof what, "N=%d IC=%d OC=%d rare %d kind %d path %d gelu %d "
                         "W copies %d %s", N, IC, OC, rare, (int)kind, (int)path, gelu, withw,
                         which ? "rows" : "another matrix's rows");
                for (int r = 0; r < 2; r++) {
                    memcpy(dW[r], dW0, nw * 4);
                    memcpy(db[r], db0, (size_t)OC * 4);
                    bf16_backward_with(din[r], dW[r], db[r], dout, r ? rdout : NULL, in, W,
                                       withw ? &c : NULL, gelu ? dg : NULL, N, IC, OC, path);
                }
                expect_same(din[1], din[0], ni, what);
                expect_same(dW[1], dW[0], nw, what);
                expect_same(db[1], db[0], (size_t)OC, what);
            }
    bf16_rows_free(&rows);
    bf16_rows_free(&stale);
    bf16_weight_free(&c);
    for (int r = 0; r < 2; r++)
        free(din[r]), free(dW[r]), free(db[r]);
    free(dout), free(in), free(W), free(dg), free(dW0), free(db0), free(other);
}

Test(bf16_rows, backward_reading_douts_rows_gives_the_backwards_bits)
{
    Rng rng;
    rng_init(&rng, 75, 0);
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        for (size_t s = 0; s < sizeof product_shapes / sizeof product_shapes[0]; s++)
            for (int rare = 0; rare <= 1; rare++)   /* 1: any bits, so exceptions and tiles */
                for (int kind = BF16_COPY_FLOATS; kind <= BF16_COPY_PANELS; kind++)
                    for (int path = BF16_AUTO; path <= BF16_EMULATED; path++)
                        backward_case(&rng, product_shapes[s][0], product_shapes[s][1],
                                      product_shapes[s][2], rare, (Bf16CopyKind)kind,
                                      (Bf16Path)path);
    }
}

/* The backward reads the columns it is handed for dW: with them it gives the bits of
 * the backward rounding dout, and with one bit of them flipped it gives another dW
 * where the code that runs reads that layout (and the same dW where it does not). For
 * the floats the values are ordinary (the emulation on the float32 kernels reads them);
 * for the pairs a row of dout and one of in are planted tiny, 2^-100, so that every
 * output of dW is an exception and the emulation leaves dW to the tiles, which read
 * the pairs. */
Test(bf16_rows, backward_reads_douts_columns_for_dw)
{
    Rng rng;
    rng_init(&rng, 78, 0);
    for (int threads = 1; threads <= 2; threads++)
        for (int kind = BF16_COPY_FLOATS; kind <= BF16_COPY_PANELS; kind++)
            for (int N = 69; N <= 70; N++) {
                omp_set_num_threads(threads);
                int C = 40, A = 37;
                size_t nc = (size_t)N * C, na = (size_t)N * A, nw = (size_t)C * A;
                float *dout = values(&rng, nc, 0.1f, 0), *in = values(&rng, na, 1.0f, 0);
                float *W = values(&rng, nw, 0.05f, 0);
                if (kind == BF16_COPY_PANELS) {
                    for (int c = 0; c < C; c++)
                        dout[c] = 0x1p-100f;
                    for (int a = 0; a < A; a++)
                        in[A + a] = 0x1p-100f;
                }
                Bf16Rows r;
                cr_assert_eq(bf16_rows_init(&r, N, C, (Bf16CopyKind)kind), 0);
                cr_assert_eq(bf16_rows_init_cols(&r, N, C), 0);
                put_rows_and_cols(&r, dout, N, C);
                float *din[3], *gW[3], *gb[3];
                for (int i = 0; i < 3; i++) {
                    din[i] = calloc(na, 4), gW[i] = calloc(nw, 4), gb[i] = calloc((size_t)C, 4);
                    cr_assert(din[i] && gW[i] && gb[i]);
                }
                for (int path = BF16_AUTO; path <= BF16_EMULATED; path++) {
                    for (int i = 0; i < 3; i++) {
                        memset(din[i], 0, na * 4), memset(gW[i], 0, nw * 4);
                        memset(gb[i], 0, (size_t)C * 4);
                        /* the low bit of dout[2][0]'s bf16 flipped in the copy's columns */
                        uint32_t *w = kind == BF16_COPY_PANELS ? &r.cols[1]
                                                               : &r.cols[(size_t)3 * C];
                        uint32_t bit = kind == BF16_COPY_PANELS ? 1u : 1u << 16;
                        if (i == 2)
                            *w ^= bit;
                        bf16_backward_with(din[i], gW[i], gb[i], dout, i ? &r : NULL, in, W,
                                           NULL, NULL, N, A, C, (Bf16Path)path);
                        if (i == 2)
                            *w ^= bit;
                    }
                    char what[96];
                    snprintf(what, sizeof what, "columns read, %dx%d kind %d path %d threads "
                             "%d", N, C, kind, path, threads);
                    expect_same(din[1], din[0], na, what);
                    expect_same(gW[1], gW[0], nw, what);
                    expect_same(gb[1], gb[0], (size_t)C, what);
                    /* the floats are read by the emulation on the float32 kernels alone
                     * (a build without it, or the instruction, reads pairs) */
                    int reads = kind == BF16_COPY_PANELS ||
                                (bf16_emulated((Bf16Path)path) && bf16_emulation_fast());
                    int moved = 0;
                    for (size_t i = 0; i < nw; i++)
                        moved |= tu_bits(gW[2][i]) != tu_bits(gW[0][i]);
                    cr_assert_eq(moved, reads, "%s: a flipped bit of the columns %s dW's bits",
                                 what, moved ? "moved" : "left");
                }
                for (int i = 0; i < 3; i++)
                    free(din[i]), free(gW[i]), free(gb[i]);
                bf16_rows_free(&r);
                free(dout), free(in), free(W);
            }
}

/* The backward reads `in`'s columns it is handed for dW (rin, written as the LayerNorm's
 * forward writes them), alone and with dout's columns from rdout: it gives the bits of
 * the backward rounding both, and with one bit of in's copy flipped another dW where
 * the code that runs reads that layout (the same where it does not). Values as in the
 * test above: ordinary for the floats, a row of dout and one of in planted at 2^-100
 * for the pairs, so that the tiles, which read them, compute dW. */
Test(bf16_rows, backward_reads_ins_columns_for_dw)
{
    Rng rng;
    rng_init(&rng, 80, 0);
    for (int threads = 1; threads <= 2; threads++)
        for (int kind = BF16_COPY_FLOATS; kind <= BF16_COPY_PANELS; kind++)
            for (int N = 69; N <= 70; N++) {
                omp_set_num_threads(threads);
                int C = 40, A = 37;     /* in[N][A] -> dout[N][C]; A: a panel and a part */
                size_t nc = (size_t)N * C, na = (size_t)N * A, nw = (size_t)C * A;
                float *dout = values(&rng, nc, 0.1f, 0), *in = values(&rng, na, 1.0f, 0);
                float *W = values(&rng, nw, 0.05f, 0);
                if (kind == BF16_COPY_PANELS) {
                    for (int c = 0; c < C; c++)
                        dout[c] = 0x1p-100f;
                    for (int a = 0; a < A; a++)
                        in[A + a] = 0x1p-100f;
                }
                Bf16Rows ri, rd;
                cr_assert_eq(bf16_rows_init_in_cols(&ri, N, A, (Bf16CopyKind)kind), 0);
                put_in_cols(&ri, in, N, A);
                cr_assert_eq(bf16_rows_init(&rd, N, C, (Bf16CopyKind)kind), 0);
                cr_assert_eq(bf16_rows_init_cols(&rd, N, C), 0);
                put_rows_and_cols(&rd, dout, N, C);
                /* 0: no copies; 1: in's; 2: in's and dout's; 3: in's, one bit flipped */
                float *din[4], *gW[4], *gb[4];
                for (int i = 0; i < 4; i++) {
                    din[i] = calloc(na, 4), gW[i] = calloc(nw, 4), gb[i] = calloc((size_t)C, 4);
                    cr_assert(din[i] && gW[i] && gb[i]);
                }
                /* the low bit of in[2][0]'s bf16: pairs, panel 0's pair 1, column 0's low
                 * half; floats, row 2 swapped into row 3 */
                uint32_t *flip = kind == BF16_COPY_PANELS ? &ri.cols[BF16_PANEL]
                                                          : &ri.cols[(size_t)3 * A];
                uint32_t bit = kind == BF16_COPY_PANELS ? 1u : 1u << 16;
                for (int path = BF16_AUTO; path <= BF16_EMULATED; path++) {
                    for (int i = 0; i < 4; i++) {
                        memset(din[i], 0, na * 4), memset(gW[i], 0, nw * 4);
                        memset(gb[i], 0, (size_t)C * 4);
                        if (i == 3)
                            *flip ^= bit;
                        bf16_backward_rounding(din[i], NULL, gW[i], gb[i], dout,
                                               i == 2 ? &rd : NULL, in, i ? &ri : NULL, W,
                                               NULL, NULL, N, A, C, (Bf16Path)path);
                        if (i == 3)
                            *flip ^= bit;
                    }
                    char what[96];
                    snprintf(what, sizeof what, "in's columns read, %dx%d kind %d path %d "
                             "threads %d", N, A, kind, path, threads);
                    for (int i = 1; i <= 2; i++) {
                        expect_same(din[i], din[0], na, what);
                        expect_same(gW[i], gW[0], nw, what);
                        expect_same(gb[i], gb[0], (size_t)C, what);
                    }
                    int reads = kind == BF16_COPY_PANELS ||
                                (bf16_emulated((Bf16Path)path) && bf16_emulation_fast());
                    int moved = 0;
                    for (size_t i = 0; i < nw; i++)
                        moved |= tu_bits(gW[3][i]) != tu_bits(gW[0][i]);
                    cr_assert_eq(moved, reads, "%s: a flipped bit of in's columns %s dW's "
                                 "bits", what, moved ? "moved" : "left");
                }
                for (int i = 0; i < 4; i++)
                    free(din[i]), free(gW[i]), free(gb[i]);
                bf16_rows_free(&ri), bf16_rows_free(&rd);
                free(dout), free(in), free(W);
            }
}

/* The residual gradient's producers (layernorm_backward_rounded, dropout_backward_rounded)
 * against the plain ones on the same old values (they add into them), the copy against
 * the rounding of the finished rows, and the backward reading it. */
static void residual_case(Rng *rng, int N, int C, int rare, Bf16CopyKind kind, int threads)
{
    size_t nc = (size_t)N * C;
    /* rare: inputs and old sums of any bits (NaN, infinite, denormal dres) */
    float *x = values(rng, nc, 2.0f, rare ? 50 : 0), *dy = values(rng, nc, 0.1f, rare ? 50 : 0);
    float *w = values(rng, (size_t)C, 1.0f, 0), *old = values(rng, nc, 0.01f, rare ? 40 : 0);
    float *dw0 = values(rng, (size_t)C, 0.01f, 0), *db0 = values(rng, (size_t)C, 0.01f, 0);
    float *mean = malloc((size_t)N * 4), *rstd = malloc((size_t)N * 4), *ln = malloc(nc * 4);
    float *d[2] = { malloc(nc * 4), malloc(nc * 4) }, *db[2], *dw[2];
    cr_assert(mean && rstd && ln && d[0] && d[1]);
    layernorm_forward(ln, mean, rstd, x, w, w, N, C);       /* mean and rstd as stored */
    Bf16Rows r;
    cr_assert_eq(bf16_rows_init(&r, N + 1, C + 2, kind), 0);
    cr_assert_eq(bf16_rows_init_cols(&r, N + 1, C), 0);
    char what[128];
    snprintf(what, sizeof what, "layernorm backward %dx%d rare %d kind %d threads %d", N, C,
             rare, (int)kind, threads);
    for (int i = 0; i < 2; i++) {
        memcpy(d[i], old, nc * 4);
        dw[i] = malloc((size_t)C * 4), db[i] = malloc((size_t)C * 4);
        cr_assert(dw[i] && db[i]);
        memcpy(dw[i], dw0, (size_t)C * 4), memcpy(db[i], db0, (size_t)C * 4);
    }
    layernorm_backward(d[0], dw[0], db[0], dy, x, w, mean, rstd, N, C);
    layernorm_backward_rounded(d[1], dw[1], db[1], dy, x, w, mean, rstd, N, C, &r);
    expect_same(d[1], d[0], nc, what);
    expect_same(dw[1], dw[0], (size_t)C, what);
    expect_same(db[1], db[0], (size_t)C, what);
    expect_rounding_of(&r, d[1], N, C, what);
    expect_cols_of(&r, d[1], N, C, what);
    expect_backward_reads(rng, &r, d[1], N, C, what);

    /* the dropout's dbranch, added into zeros as gpt_backward does and into old values;
     * p = 0 copies */
    float *b[2] = { malloc(nc * 4), malloc(nc * 4) };
    cr_assert(b[0] && b[1]);
    static const float ps[] = { 0.1f, 0.5f, 0.0f };
    for (int k = 0; k < 3; k++)
        for (int zero = 0; zero < 2; zero++) {
            for (int i = 0; i < 2; i++)
                if (zero)
                    memset(b[i], 0, nc * 4);
                else
                    memcpy(b[i], old, nc * 4);
            uint64_t key = rng_u64(rng);
            dropout_backward(b[0], d[0], nc, ps[k], key);
            dropout_backward_rounded(b[1], d[0], N, C, ps[k], key, &r);
            snprintf(what, sizeof what, "dropout backward %dx%d p %g zeroed %d rare %d kind %d "
                     "threads %d", N, C, ps[k], zero, rare, (int)kind, threads);
            expect_same(b[1], b[0], nc, what);
            expect_rounding_of(&r, b[1], N, C, what);
            expect_cols_of(&r, b[1], N, C, what);
            if (zero)
                expect_backward_reads(rng, &r, b[1], N, C, what);
        }
    bf16_rows_free(&r);
    for (int i = 0; i < 2; i++)
        free(d[i]), free(dw[i]), free(db[i]), free(b[i]);
    free(x), free(dy), free(w), free(old), free(dw0), free(db0), free(mean), free(rstd), free(ln);
}

Test(bf16_rows, residual_gradients_producers_keep_their_bits_and_write_the_rounding)
{
    static const int res_shapes[][2] = { { 3, 7 }, { 64, 24 }, { 130, 385 }, { 512, 64 },
                                         { 97, 33 } };
    Rng rng;
    rng_init(&rng, 76, 0);
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        for (size_t s = 0; s < sizeof res_shapes / sizeof res_shapes[0]; s++)
            for (int rare = 0; rare <= 1; rare++)
                for (int kind = BF16_COPY_FLOATS; kind <= BF16_COPY_PANELS; kind++)
                    residual_case(&rng, res_shapes[s][0], res_shapes[s][1], rare,
                                  (Bf16CopyKind)kind, threads);
    }
}

/* The GELU's output and dfch, rounded by the products that write them
 * (bf16_forward_rounding, bf16_backward_rounding): the product's bits are those of the
 * product that writes no copy, the copy is the rounding of its finished output (for
 * dfch its columns too), and the next product reading it gives the bits of that product
 * rounding its input. The cases:
 * ordinary values; planted chains whose first step is a denormal the instruction flushes
 * (the emulation recomputes those outputs after its float32 tiles, and the copy must
 * hold the recomputed ones); every value of any bits (the step-by-step tiles). */
enum { ORDINARY, PLANTED, ANY_BITS };

/* a0 a0 = 2^-120 (1 + 2^-3 + 2^-8) (PLANT_SUM), a tie in bf16; a1 a1 = 2^-130, which
 * the instruction flushes (the chain takes the odd element first) and fma keeps, so
 * fma's sum lies above the tie: rounded before the fix, the copy would be one ulp off. */
static const float PLANT_A0 = 0x1.1p-60f, PLANT_A1 = 0x1p-65f;
static const float PLANT_SUM = 0x1.21p-120f;

/* A planted chain at output (i, j) of a product whose row i of the left operand is
 * a[i * ai + k * ak] and column j of the right one b[j * bj + k * bk], k < K: the pairs
 * (a0, a1), (a0, a1) in k = 0, 1, zeros after them. */
static void plant(float *a, size_t ai, size_t ak, float *b, size_t bj, size_t bk, int i, int j,
                  int K)
{
    for (int k = 0; k < K; k++) {
        float v = k == 0 ? PLANT_A0 : k == 1 ? PLANT_A1 : 0.0f;
        a[(size_t)i * ai + (size_t)k * ak] = v;
        b[(size_t)j * bj + (size_t)k * bk] = v;
    }
}

static const int rounding_shapes[][3] = {
    /* N, IC, OC: several row bands and column blocks, an odd output width */
    { 13, 5, 7 }, { 200, 40, 300 }, { 97, 33, 513 }, { 7, 1, 3 },
};

/* fc's forward writing its output's rows into rows of `kind`, against the same forward
 * writing none; then fcproj's forward (OC -> 9) reading them against rounding its
 * input. With the columns too (bf16_forward_rounding_cols): the tiles write them, the
 * emulation on the float32 kernels drops them; where written they are
 * bf16_rows_put_cols's of the finished output, and fcproj's dW reading them as rin
 * gives the bits of the dW rounding its in. */
static void forward_rounding_case(Rng *rng, int N, int IC, int OC, int mode,
                                  Bf16CopyKind kind, Bf16Path path)
{
    size_t no = (size_t)N * OC, ni = (size_t)N * IC, nw = (size_t)OC * IC;
    int any = mode == ANY_BITS, O2 = 9;
    float *in = values(rng, ni, 1.0f, any), *W = values(rng, nw, 0.05f, any);
    float *bias = values(rng, (size_t)OC, 0.1f, 0), *W2 = values(rng, (size_t)O2 * OC, 0.05f, 0);
    int pi[2] = { N / 2, N - 1 }, pj[2] = { OC / 2, OC - 1 };
    if (mode == PLANTED)
        for (int t = 0; t < 2; t++) {
            plant(in, (size_t)IC, 1, W, (size_t)IC, 1, pi[t], pj[t], IC);
            bias[pj[t]] = 0.0f;
        }
    float *out[2], *gd[2], *y[2];
    for (int r = 0; r < 2; r++) {
        out[r] = malloc(no * 4), gd[r] = malloc(no * 4), y[r] = malloc((size_t)N * O2 * 4);
        cr_assert(out[r] && gd[r] && y[r]);
    }
    Bf16Weight c;
    cr_assert_eq(bf16_weight_init(&c, W, OC, IC, kind), 0);
    bf16_weight_write(&c);
    Bf16Rows rows, small, cols, small_cols;
    cr_assert_eq(bf16_rows_init(&rows, N, OC + 1, kind), 0);
    cr_assert_eq(bf16_rows_init(&small, N, OC > 1 ? OC - 1 : 1, kind), 0);
    cr_assert_eq(bf16_rows_init_in_cols(&cols, N + 1, OC + 1, kind), 0);
    cr_assert_eq(bf16_rows_init_in_cols(&small_cols, N > 1 ? N - 1 : 1, OC, kind), 0);
    float *dy = values(rng, (size_t)N * O2, 0.1f, 0), *gW[2], *gin[2], *gb[2];
    for (int r = 0; r < 2; r++) {
        gW[r] = malloc((size_t)O2 * OC * 4), gin[r] = malloc(no * 4), gb[r] = malloc(O2 * 4);
        cr_assert(gW[r] && gin[r] && gb[r]);
    }
    /* the float32 kernels' emulation computes ordinary products: no columns; the tiles
     * always write them */
    int floats = bf16_emulated(path) && bf16_emulation_fast();
    char what[160];
    for (int gelu = 0; gelu < 2; gelu++)
        for (int withw = 0; withw < 2; withw++) {
            snprintf(what, sizeof what, "forward N=%d IC=%d OC=%d mode %d kind %d path %d "
                     "gelu %d W copies %d threads %d", N, IC, OC, mode, (int)kind, (int)path,
                     gelu, withw, omp_get_max_threads());
            bf16_rows_start(&rows, in, N, IC);      /* it held another matrix before */
            bf16_forward_with(out[0], gelu ? gd[0] : NULL, in, NULL, W, withw ? &c : NULL,
                              bias, N, IC, OC, path);
            bf16_forward_rounding(out[1], gelu ? gd[1] : NULL, &rows, in, NULL, W,
                                  withw ? &c : NULL, bias, N, IC, OC, path);
            expect_same(out[1], out[0], no, what);
            if (gelu)
                expect_same(gd[1], gd[0], no, what);
            expect_rounding_of(&rows, out[1], N, OC, what);
            if (mode == PLANTED && !gelu)               /* the instruction's sum */
                for (int t = 0; t < 2; t++)
                    cr_assert_eq(tu_bits(out[1][(size_t)pi[t] * OC + pj[t]]),
                                 tu_bits(PLANT_SUM), "%s: planted output %d is %a", what, t,
                                 out[1][(size_t)pi[t] * OC + pj[t]]);
            bf16_forward_with(y[0], NULL, out[1], NULL, W2, NULL, NULL, N, OC, O2, path);
            bf16_forward_with(y[1], NULL, out[1], &rows, W2, NULL, NULL, N, OC, O2, path);
            expect_same(y[1], y[0], (size_t)N * O2, what);
            /* without room for the output the copy holds nothing afterwards */
            bf16_rows_start(&small, out[1], N, OC > 1 ? OC - 1 : 1);
            bf16_forward_rounding(out[1], gelu ? gd[1] : NULL, &small, in, NULL, W,
                                  withw ? &c : NULL, bias, N, IC, OC, path);
            expect_same(out[1], out[0], no, what);
            cr_assert(small.of == NULL, "%s: a copy too small still holds a matrix", what);
            /* the columns as well */
            bf16_forward_rounding_cols(out[1], gelu ? gd[1] : NULL, &rows, &cols, in, NULL, W,
                                       withw ? &c : NULL, bias, N, IC, OC, path);
            expect_same(out[1], out[0], no, what);
            expect_rounding_of(&rows, out[1], N, OC, what);
            int held = bf16_in_cols_of(&cols, out[1], N, OC, kind) != NULL;
            if (floats && mode == ORDINARY)
                cr_assert(!held && cols.of == NULL, "%s: the emulation wrote the columns",
                          what);
            if (!floats)
                cr_assert(held, "%s: the tiles wrote no columns", what);
            if (held) {
                Bf16Rows want;
                cr_assert_eq(bf16_rows_init_in_cols(&want, N, OC, kind), 0);
                put_in_cols(&want, out[1], N, OC);
                expect_in_cols_of(&cols, out[1], N, OC, what);
                size_t nw2 = kind == BF16_COPY_PANELS ? bf16_packed_size(OC, N)
                                                      : (size_t)2 * bf16_pairs(N) * OC;
                for (size_t i = 0; i < nw2; i++)
                    cr_assert_eq(cols.cols[i], want.cols[i], "%s: word %zu is %08x, "
                                 "bf16_rows_put_cols wrote %08x", what, i, cols.cols[i],
                                 want.cols[i]);
                bf16_rows_free(&want);
            }
            for (int r = 0; r < 2; r++) {
                memset(gW[r], 0, (size_t)O2 * OC * 4), memset(gb[r], 0, O2 * 4);
                bf16_backward_rounding(gin[r], NULL, gW[r], gb[r], dy, NULL, out[1],
                                       r ? &cols : NULL, W2, NULL, NULL, N, OC, O2, path);
            }
            expect_same(gW[1], gW[0], (size_t)O2 * OC, what);
            expect_same(gin[1], gin[0], no, what);
            expect_same(gb[1], gb[0], (size_t)O2, what);
            /* without room for the output the columns hold nothing afterwards */
            put_in_cols(&small_cols, out[1], N > 1 ? N - 1 : 1, OC);
            bf16_forward_rounding_cols(out[1], gelu ? gd[1] : NULL, NULL, &small_cols, in,
                                       NULL, W, withw ? &c : NULL, bias, N, IC, OC, path);
            expect_same(out[1], out[0], no, what);
            cr_assert(small_cols.of == NULL || N == 1,
                      "%s: columns too small still hold a matrix", what);
        }
    bf16_rows_free(&rows);
    bf16_rows_free(&small);
    bf16_rows_free(&cols);
    bf16_rows_free(&small_cols);
    for (int r = 0; r < 2; r++)
        free(gW[r]), free(gin[r]), free(gb[r]);
    free(dy);
    bf16_weight_free(&c);
    for (int r = 0; r < 2; r++)
        free(out[r]), free(gd[r]), free(y[r]);
    free(in), free(W), free(bias), free(W2);
}

Test(bf16_rows, forward_writing_its_outputs_rows_keeps_its_bits_and_writes_their_rounding)
{
    Rng rng;
    rng_init(&rng, 76, 0);
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        for (size_t s = 0; s < sizeof rounding_shapes / sizeof rounding_shapes[0]; s++)
            for (int mode = ORDINARY; mode <= ANY_BITS; mode++)
                for (int kind = BF16_COPY_FLOATS; kind <= BF16_COPY_PANELS; kind++)
                    for (int path = BF16_AUTO; path <= BF16_EMULATED; path++)
                        if (mode != PLANTED || rounding_shapes[s][1] >= 2)
                            forward_rounding_case(&rng, rounding_shapes[s][0],
                                                  rounding_shapes[s][1], rounding_shapes[s][2],
                                                  mode, (Bf16CopyKind)kind, (Bf16Path)path);
    }
}

/* fcproj's backward (OC -> IC: din = dfch, times dgelu) writing din's rows into rows of
 * `kind`, against the same backward writing none (din, dW, dbias); then fc's backward
 * (IC -> 11: din's rows are its dout's) reading them against rounding its dout. */
static void backward_rounding_case(Rng *rng, int N, int IC, int OC, int mode,
                                   Bf16CopyKind kind, Bf16Path path)
{
    size_t no = (size_t)N * OC, ni = (size_t)N * IC, nw = (size_t)OC * IC;
    int any = mode == ANY_BITS, I2 = 11;
    size_t n2 = (size_t)N * I2, nw2 = (size_t)IC * I2;
    float *dout = values(rng, no, 1.0f, any), *in = values(rng, ni, 1.0f, any);
    float *W = values(rng, nw, 0.05f, any), *dg = values(rng, ni, 1.0f, 0);
    float *dW0 = values(rng, nw, 0.01f, 0), *db0 = values(rng, (size_t)OC, 0.01f, 0);
    float *in2 = values(rng, n2, 1.0f, 0), *W2 = values(rng, nw2, 0.05f, 0);
    int pi[2] = { N / 2, N - 1 }, pj[2] = { IC / 2, IC - 1 };
    if (mode == PLANTED)            /* dout's row i, W's column j (W[o][j], o < OC) */
        for (int t = 0; t < 2; t++) {
            plant(dout, (size_t)OC, 1, W, 1, (size_t)IC, pi[t], pj[t], OC);
            dg[(size_t)pi[t] * IC + pj[t]] = 1.0f;
        }
    float *din[2], *dW[2], *db[2], *din2[2], *dW2[2];
    for (int r = 0; r < 2; r++) {
        din[r] = malloc(ni * 4), dW[r] = malloc(nw * 4), db[r] = malloc((size_t)OC * 4);
        din2[r] = malloc(n2 * 4), dW2[r] = malloc(nw2 * 4);
        cr_assert(din[r] && dW[r] && db[r] && din2[r] && dW2[r]);
    }
    Bf16Weight c;
    cr_assert_eq(bf16_weight_init(&c, W, OC, IC, kind), 0);
    bf16_weight_write(&c);
    Bf16Rows rows;
    cr_assert_eq(bf16_rows_init(&rows, N + 3, IC, kind), 0);
    cr_assert_eq(bf16_rows_init_cols(&rows, N + 3, IC), 0);
    char what[160];
    for (int gelu = 0; gelu < 2; gelu++)
        for (int withw = 0; withw < 2; withw++) {
            snprintf(what, sizeof what, "backward N=%d IC=%d OC=%d mode %d kind %d path %d "
                     "gelu %d W copies %d threads %d", N, IC, OC, mode, (int)kind, (int)path,
                     gelu, withw, omp_get_max_threads());
            bf16_rows_start(&rows, dout, N, 1);     /* it held another matrix before */
            for (int r = 0; r < 2; r++) {
                memcpy(dW[r], dW0, nw * 4);
                memcpy(db[r], db0, (size_t)OC * 4);
                bf16_backward_rounding(din[r], r ? &rows : NULL, dW[r], db[r], dout, NULL, in,
                                       NULL, W, withw ? &c : NULL, gelu ? dg : NULL, N, IC, OC,
                                       path);
            }
            expect_same(din[1], din[0], ni, what);
            expect_same(dW[1], dW[0], nw, what);
            expect_same(db[1], db[0], (size_t)OC, what);
            expect_rounding_of(&rows, din[1], N, IC, what);
            expect_cols_of(&rows, din[1], N, IC, what);
            if (mode == PLANTED)                    /* the instruction's sum, times 1 */
                for (int t = 0; t < 2; t++)
                    cr_assert_eq(tu_bits(din[1][(size_t)pi[t] * IC + pj[t]]),
                                 tu_bits(PLANT_SUM), "%s: planted output %d is %a", what, t,
                                 din[1][(size_t)pi[t] * IC + pj[t]]);
            for (int r = 0; r < 2; r++) {
                memset(dW2[r], 0, nw2 * 4);
                bf16_backward_with(din2[r], dW2[r], NULL, din[1], r ? &rows : NULL, in2, W2,
                                   NULL, NULL, N, I2, IC, path);
            }
            expect_same(din2[1], din2[0], n2, what);
            expect_same(dW2[1], dW2[0], nw2, what);
        }
    bf16_rows_free(&rows);
    bf16_weight_free(&c);
    for (int r = 0; r < 2; r++)
        free(din[r]), free(dW[r]), free(db[r]), free(din2[r]), free(dW2[r]);
    free(dout), free(in), free(W), free(dg), free(dW0), free(db0), free(in2), free(W2);
}

Test(bf16_rows, backward_writing_dins_rows_keeps_its_bits_and_writes_their_rounding)
{
    Rng rng;
    rng_init(&rng, 77, 0);
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        for (size_t s = 0; s < sizeof rounding_shapes / sizeof rounding_shapes[0]; s++)
            for (int mode = ORDINARY; mode <= ANY_BITS; mode++)
                for (int kind = BF16_COPY_FLOATS; kind <= BF16_COPY_PANELS; kind++)
                    for (int path = BF16_AUTO; path <= BF16_EMULATED; path++)
                        /* din's columns are the shapes' OC, its sum over their IC */
                        if (mode != PLANTED || rounding_shapes[s][1] >= 2)
                            backward_rounding_case(&rng, rounding_shapes[s][0],
                                                   rounding_shapes[s][2], rounding_shapes[s][1],
                                                   mode, (Bf16CopyKind)kind, (Bf16Path)path);
    }
}

/* Attention's rows, rounded once every head has written its slice
 * (attention_forward_rounded, attention_backward_rounded and its routed variant):
 * against the functions writing no copy on the same inputs, the copy against the
 * rounding of the finished rows, and the next product reading it. */

/* proj's forward (K -> 6) reading r, the copy of x[N][K], as rin against the same call
 * rounding x, on both paths. */
static void expect_forward_reads(Rng *rng, const Bf16Rows *r, const float *x, int N, int K,
                                 const char *what)
{
    int OC = 6;
    float *W = values(rng, (size_t)OC * K, 0.05f, 0), *bias = values(rng, (size_t)OC, 0.1f, 0);
    float *y[2] = { malloc((size_t)N * OC * 4), malloc((size_t)N * OC * 4) };
    cr_assert(y[0] && y[1]);
    char full[256];
    for (int path = BF16_AUTO; path <= BF16_EMULATED; path++) {
        for (int i = 0; i < 2; i++)
            bf16_forward_with(y[i], NULL, x, i ? r : NULL, W, NULL, bias, N, K, OC,
                              (Bf16Path)path);
        snprintf(full, sizeof full, "%s: the forward reading it, path %d", what, path);
        expect_same(y[1], y[0], (size_t)N * OC, full);
    }
    free(y[0]), free(y[1]), free(W), free(bias);
}

/* How many of x[n] are denormal. */
static size_t denormals(const float *x, size_t n)
{
    size_t c = 0;
    for (size_t i = 0; i < n; i++)
        c += (tu_bits(x[i]) & 0x7f800000u) == 0 && x[i] != 0;
    return c;
}

static void attention_case(Rng *rng, int B, int T, int H, int D, float p, int rare,
                           Bf16CopyKind kind, int threads)
{
    int N = B * T, A = H * D;
    size_t nq = (size_t)N * 3 * A, na = (size_t)N * A, tt = (size_t)B * H * T * T;
    /* rare: inputs of any bits (NaN, infinite outputs), and head 0's v and dout so small
     * that its outputs are denormal */
    float *qkv = values(rng, nq, 1.0f, rare ? 400 : 0), *dout = values(rng, na, 1.0f,
                                                                       rare ? 200 : 0);
    if (rare)
        for (int n = 0; n < N; n++)
            for (int d = 0; d < D; d++) {
                qkv[(size_t)n * 3 * A + 2 * A + d] *= 0x1p-126f;
                dout[(size_t)n * A + d] *= 0x1p-126f;
            }
    float *on = malloc((size_t)N * H * 4);
    cr_assert(on);
    for (int n = 0; n < N; n++)           /* head 0 chosen everywhere, the last nowhere */
        for (int h = 0; h < H; h++)
            on[(size_t)n * H + h] = h == 0 ? 1.0f : h == H - 1 && H > 2 ? 0.0f
                                                                        : (float)rng_below(rng, 2);
    float *out[2], *att[2], *attd[2], *dqkv[2], *datt[2];
    for (int i = 0; i < 2; i++) {
        out[i] = malloc(na * 4), att[i] = malloc(tt * 4), attd[i] = malloc(tt * 4);
        dqkv[i] = malloc(nq * 4), datt[i] = malloc(tt * 4);
        cr_assert(out[i] && att[i] && attd[i] && dqkv[i] && datt[i]);
    }
    Bf16Rows r, small, rc, small_cols, narrow;
    cr_assert_eq(bf16_rows_init(&r, N + 1, 3 * A + 2, kind), 0);
    cr_assert_eq(bf16_rows_init_cols(&r, N + 1, 3 * A + 1), 0);
    cr_assert_eq(bf16_rows_init(&small, N, A - 1 > 0 ? A - 1 : 1, kind), 0);
    cr_assert_eq(bf16_rows_init_in_cols(&rc, N, A, kind), 0);
    cr_assert_eq(bf16_rows_init_in_cols(&small_cols, N, A - 1 > 0 ? A - 1 : 1, kind), 0);
    /* room for dqkv's rows, not its columns */
    cr_assert_eq(bf16_rows_init(&narrow, N, 3 * A, kind), 0);
    cr_assert_eq(bf16_rows_init_cols(&narrow, N, 3 * A - 1), 0);
    uint64_t key = rng_u64(rng);
    char what[160];
    snprintf(what, sizeof what, "attention B %d T %d H %d D %d p %g rare %d kind %d threads %d",
             B, T, H, D, p, rare, (int)kind, threads);

    attention_forward(out[0], att[0], attd[0], qkv, B, T, H, D, p, key);
    attention_forward_rounded(out[1], att[1], attd[1], qkv, B, T, H, D, p, key, &r, NULL);
    expect_same(out[1], out[0], na, what);
    expect_same(att[1], att[0], tt, what);
    if (p > 0.0f)
        expect_same(attd[1], attd[0], tt, what);
    expect_rounding_of(&r, out[1], N, A, what);
    /* and its columns, for proj's dW, with and without the rows */
    for (int rows = 0; rows < 2; rows++) {
        attention_forward_rounded(out[1], att[1], attd[1], qkv, B, T, H, D, p, key,
                                  rows ? &r : NULL, &rc);
        expect_same(out[1], out[0], na, what);
        expect_same(att[1], att[0], tt, what);
        expect_in_cols_of(&rc, out[1], N, A, what);
        if (rows)
            expect_rounding_of(&r, out[1], N, A, what);
    }
    if (rare)
        cr_assert(denormals(out[1], na) > 0, "%s: no denormal output to round", what);
    expect_forward_reads(rng, &r, out[1], N, A, what);
    /* a copy without room for out is dropped: it then holds nothing */
    small.of = qkv, small.n = 1, small.k = 1;
    small_cols.of = qkv, small_cols.n = 1, small_cols.k = 1, small_cols.has_cols = 1;
    attention_forward_rounded(out[1], att[1], attd[1], qkv, B, T, H, D, p, key, &small,
                              &small_cols);
    cr_assert(small.of == NULL, "%s: a copy too small was not dropped", what);
    cr_assert(small_cols.of == NULL && !small_cols.has_cols, "%s: columns too small were not "
              "dropped", what);
    expect_same(out[1], out[0], na, what);

    for (int routed = 0; routed < 2; routed++) {
        char full[200];
        snprintf(full, sizeof full, "%s backward%s", what, routed ? " routed" : "");
        for (int i = 0; i < 2; i++) {
            memset(dqkv[i], 0xff, nq * 4);    /* NaN: the backward overwrites dqkv */
            memset(datt[i], 0xff, tt * 4);
        }
        if (routed) {
            attention_backward_routed(dqkv[0], datt[0], dout, qkv, att[0], attd[0], on, B, T,
                                      H, D, p);
            attention_backward_routed_rounded(dqkv[1], datt[1], dout, qkv, att[0], attd[0], on,
                                              B, T, H, D, p, &r);
        } else {
            attention_backward(dqkv[0], datt[0], dout, qkv, att[0], attd[0], B, T, H, D, p);
            attention_backward_rounded(dqkv[1], datt[1], dout, qkv, att[0], attd[0], B, T, H,
                                       D, p, &r);
        }
        expect_same(dqkv[1], dqkv[0], nq, full);
        expect_same(datt[1], datt[0], tt, full);
        expect_rounding_of(&r, dqkv[1], N, 3 * A, full);
        expect_cols_of(&r, dqkv[1], N, 3 * A, full);
        if (rare)
            cr_assert(denormals(dqkv[1], nq) > 0, "%s: no denormal dqkv to round", full);
        expect_backward_reads(rng, &r, dqkv[1], N, 3 * A, full);
    }
    attention_backward_rounded(dqkv[1], datt[1], dout, qkv, att[0], attd[0], B, T, H, D, p,
                               &small);
    cr_assert(small.of == NULL, "%s: a copy too small for dqkv was not dropped", what);
    /* a copy without room for the columns holds the rows alone */
    attention_backward_rounded(dqkv[1], datt[1], dout, qkv, att[0], attd[0], B, T, H, D, p,
                               &narrow);
    expect_rounding_of(&narrow, dqkv[1], N, 3 * A, what);
    cr_assert(!bf16_cols_of(&narrow, dqkv[1], N, 3 * A, kind), "%s: dqkv's columns without "
              "room", what);
    bf16_rows_free(&r);
    bf16_rows_free(&small);
    bf16_rows_free(&rc), bf16_rows_free(&small_cols);
    bf16_rows_free(&narrow);
    for (int i = 0; i < 2; i++)
        free(out[i]), free(att[i]), free(attd[i]), free(dqkv[i]), free(datt[i]);
    free(qkv), free(dout), free(on);
}

Test(bf16_rows, attention_keeps_its_bits_and_writes_the_rounding_of_its_rows)
{
    /* B, T, H, D: one head, odd head sizes, more pairs than threads, 16 heads */
    static const int att_shapes[][4] = {
        { 1, 5, 1, 7 }, { 2, 9, 4, 3 }, { 3, 17, 8, 5 }, { 2, 12, 16, 4 }, { 2, 33, 4, 16 },
    };
    static const float ps[] = { 0.0f, 0.1f };
    Rng rng;
    rng_init(&rng, 78, 0);
    for (int threads = 1; threads <= 2; threads++) {
        omp_set_num_threads(threads);
        for (size_t s = 0; s < sizeof att_shapes / sizeof att_shapes[0]; s++)
            for (int k = 0; k < 2; k++)
                for (int rare = 0; rare <= 1; rare++)
                    for (int kind = BF16_COPY_FLOATS; kind <= BF16_COPY_PANELS; kind++)
                        attention_case(&rng, att_shapes[s][0], att_shapes[s][1],
                                       att_shapes[s][2], att_shapes[s][3], ps[k], rare,
                                       (Bf16CopyKind)kind, threads);
    }
}
