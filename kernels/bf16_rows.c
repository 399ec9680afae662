/* bf16_rows: see bf16_rows.h. A row is rounded by the functions the products' own
 * passes call for each of their rows (bf16_round_row, bf16_emul_round_row), so the
 * copy is theirs by construction. */
#include "kernels/bf16_rows.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/bf16_emul.h"
#include "util/bigbuf.h"

/* Words a row of K floats takes in the layout `kind`. */
static size_t row_words(int K, Bf16CopyKind kind)
{
    return kind == BF16_COPY_FLOATS ? (size_t)2 * bf16_pairs(K) : (size_t)bf16_pairs(K);
}

size_t bf16_rows_bytes(int N, int K, Bf16CopyKind kind)
{
    size_t b = (size_t)N * row_words(K, kind) * sizeof(uint32_t);
    return kind == BF16_COPY_FLOATS ? b + (size_t)N : b;
}

int bf16_rows_init(Bf16Rows *r, int N, int K, Bf16CopyKind kind)
{
    assert(N > 0 && K > 0);
    memset(r, 0, sizeof *r);
    r->kind = kind, r->cap_n = N, r->cap_k = K;
    r->rows = (uint32_t *)bigbuf_alloc((size_t)N * row_words(K, kind));
    int ok = r->rows != NULL;
    if (ok && kind == BF16_COPY_FLOATS)
        ok = (r->row_exp = malloc((size_t)N)) != NULL;
    if (!ok) {
        bf16_rows_free(r);
        return -1;
    }
    return 0;
}

void bf16_rows_free(Bf16Rows *r)
{
    bigbuf_free((float *)r->rows);
    free(r->row_exp);
    bigbuf_free((float *)r->cols);
    free(r->col_exp);
    memset(r, 0, sizeof *r);
}

/* Blocks of BF16_COL_ROWS rows in N. */
static size_t col_blocks(int N)
{
    return (size_t)(N + BF16_COL_ROWS - 1) / BF16_COL_ROWS;
}

/* Words the columns of N x K take in the layout `kind`. */
static size_t col_words(int N, int K, Bf16CopyKind kind)
{
    size_t w = (size_t)bf16_pairs(N) * K;
    return kind == BF16_COPY_FLOATS ? 2 * w : w;
}

size_t bf16_rows_cols_bytes(int N, int K, Bf16CopyKind kind)
{
    size_t b = col_words(N, K, kind) * sizeof(uint32_t);
    return kind == BF16_COPY_FLOATS ? b + col_blocks(N) * K : b;
}

int bf16_rows_init_cols(Bf16Rows *r, int N, int K)
{
    assert(r->rows && N > 0 && K > 0);
    bigbuf_free((float *)r->cols);
    free(r->col_exp);
    r->cols = (uint32_t *)bigbuf_alloc(col_words(N, K, r->kind));
    r->col_exp = NULL;
    int ok = r->cols != NULL;
    if (ok && r->kind == BF16_COPY_FLOATS)
        ok = (r->col_exp = malloc(col_blocks(N) * K)) != NULL;
    if (!ok) {
        bigbuf_free((float *)r->cols);
        free(r->col_exp);
        r->cols = NULL, r->col_exp = NULL, r->cols_cap_n = r->cols_cap_k = 0;
        return -1;
    }
    r->cols_cap_n = N, r->cols_cap_k = K;
    r->has_cols = 0;
    return 0;
}

/* Words the columns of N x K take as the dW product's `in`: the pairs' panels. */
static size_t in_col_words(int N, int K, Bf16CopyKind kind)
{
    if (kind == BF16_COPY_FLOATS)
        return col_words(N, K, kind);
    return (size_t)(K + BF16_PANEL - 1) / BF16_PANEL * (size_t)bf16_pairs(N) * BF16_PANEL;
}

size_t bf16_rows_in_cols_bytes(int N, int K, Bf16CopyKind kind)
{
    size_t b = in_col_words(N, K, kind) * sizeof(uint32_t);
    return kind == BF16_COPY_FLOATS ? b + col_blocks(N) * K : b;
}

int bf16_rows_init_in_cols(Bf16Rows *r, int N, int K, Bf16CopyKind kind)
{
    assert(N > 0 && K > 0);
    memset(r, 0, sizeof *r);
    r->kind = kind;
    r->cols = (uint32_t *)bigbuf_alloc(in_col_words(N, K, kind));
    int ok = r->cols != NULL;
    if (ok && kind == BF16_COPY_FLOATS)
        ok = (r->col_exp = malloc(col_blocks(N) * K)) != NULL;
    if (!ok) {
        bf16_rows_free(r);
        return -1;
    }
    r->cap_n = r->cols_cap_n = N, r->cap_k = r->cols_cap_k = K;
    r->cols_panels = kind == BF16_COPY_PANELS;
    return 0;
}

int bf16_rows_start_in_cols(Bf16Rows *r, const float *x, int n, int k)
{
    if (!r->cols || r->rows || !x || n <= 0 || k <= 0 || n > r->cols_cap_n ||
        k > r->cols_cap_k) {
        bf16_rows_drop(r);
        return 0;
    }
    r->of = x, r->n = n, r->k = k;
    r->has_cols = 1;
    return 1;
}

void bf16_rows_start(Bf16Rows *r, const float *x, int n, int k)
{
    assert(r->rows && n > 0 && k > 0 && n <= r->cap_n && k <= r->cap_k);
    r->of = x, r->n = n, r->k = k;
    r->has_cols = 0;
}

int bf16_rows_start_cols(Bf16Rows *r)
{
    r->has_cols = r->cols && r->of && r->n <= r->cols_cap_n && r->k <= r->cols_cap_k;
    return r->has_cols;
}

/* Columns per chunk of a block (the block's keys, or its pairs, on the stack). */
enum { COL_CHUNK = 64 };

void bf16_rows_put_cols(Bf16Rows *r, int i0, int m, const float *x)
{
    assert(r->has_cols && i0 % BF16_COL_ROWS == 0 && m > 0 && i0 + m <= r->n &&
           (m == BF16_COL_ROWS || i0 + m == r->n));
    int K = r->k;
    for (int c0 = 0; c0 < K; c0 += COL_CHUNK) {
        int nc = K - c0 < COL_CHUNK ? K - c0 : COL_CHUNK;
        if (r->kind == BF16_COPY_FLOATS) {
            /* as bf16_emul.c's round_cols_swapped: row i into row i ^ 1 */
            uint32_t kmin[COL_CHUNK];
            for (int c = 0; c < nc; c++)
                kmin[c] = UINT32_MAX;
            for (int i = 0; i < m; i += 2) {
                const float *x0 = x + (size_t)i * K + c0;
                uint32_t *d0 = r->cols + (size_t)(i0 + i) * K + c0, *d1 = d0 + K;
                for (int c = 0; c < nc; c++) {
                    uint32_t u0, u1 = 0;
                    memcpy(&u0, x0 + c, sizeof u0);
                    if (i + 1 < m)
                        memcpy(&u1, x0 + K + c, sizeof u1);
                    uint32_t r0 = bf16_round_bits(u0), r1 = bf16_round_bits(u1);
                    d0[c] = r1 << 16;                   /* +0: the padding row */
                    d1[c] = r0 << 16;
                    uint32_t k0 = bf16_emul_key(r0), k1 = i + 1 < m ? bf16_emul_key(r1)
                                                                    : UINT32_MAX;
                    uint32_t k = k0 < k1 ? k0 : k1;
                    kmin[c] = k < kmin[c] ? k : kmin[c];
                }
            }
            unsigned char *e = r->col_exp + (size_t)(i0 / BF16_COL_ROWS) * K + c0;
            for (int c = 0; c < nc; c++)
                e[c] = bf16_emul_exp(kmin[c]);
        } else if (r->cols_panels) {
            /* as bf16.c's pack_cols_for: the block's pairs of a panel are one run, the
             * panel's columns past k +0 (a chunk is whole panels) */
            int P = bf16_pairs(r->n), np = (m + 1) / 2;
            for (int j0 = c0; j0 < c0 + nc; j0 += BF16_PANEL) {
                int nj = c0 + nc - j0 < BF16_PANEL ? c0 + nc - j0 : BF16_PANEL;
                uint32_t *dst = r->cols + ((size_t)(j0 / BF16_PANEL) * P + i0 / 2) * BF16_PANEL;
                for (int i = 0; i < np; i++, dst += BF16_PANEL) {
                    const float *x0 = x + (size_t)2 * i * K + j0;
                    for (int j = 0; j < nj; j++) {
                        uint32_t u0, u1 = 0;       /* a missing row: +0 */
                        memcpy(&u0, x0 + j, sizeof u0);
                        if (2 * i + 1 < m)
                            memcpy(&u1, x0 + K + j, sizeof u1);
                        dst[j] = bf16_round_bits(u0) | bf16_round_bits(u1) << 16;
                    }
                    for (int j = nj; j < BF16_PANEL; j++)
                        dst[j] = 0;
                }
            }
        } else {
            /* as bf16.c's round_cols_for: the block's pairs of a column are one run */
            int P = bf16_pairs(r->n), np = (m + 1) / 2;
            uint32_t t[BF16_COL_ROWS / 2][COL_CHUNK];
            for (int i = 0; i < np; i++) {
                const float *x0 = x + (size_t)2 * i * K + c0;
                for (int c = 0; c < nc; c++) {
                    uint32_t u0, u1 = 0;           /* a missing row: +0 */
                    memcpy(&u0, x0 + c, sizeof u0);
                    if (2 * i + 1 < m)
                        memcpy(&u1, x0 + K + c, sizeof u1);
                    t[i][c] = bf16_round_bits(u0) | bf16_round_bits(u1) << 16;
                }
            }
            for (int c = 0; c < nc; c++)
                for (int i = 0; i < np; i++)
                    r->cols[(size_t)(c0 + c) * P + i0 / 2 + i] = t[i][c];
        }
    }
}

void bf16_rows_col_exps(const Bf16Rows *r, unsigned char *e)
{
    assert(r->has_cols && r->kind == BF16_COPY_FLOATS);
    int K = r->k;
    memset(e, 255, (size_t)K);
    for (size_t b = 0; b < col_blocks(r->n); b++) {
        const unsigned char *eb = r->col_exp + b * K;
        for (int c = 0; c < K; c++)
            e[c] = eb[c] < e[c] ? eb[c] : e[c];
    }
}

void bf16_rows_put(Bf16Rows *r, int i, const float *row)
{
    uint32_t *dst = r->rows + (size_t)i * row_words(r->k, r->kind);
    if (r->kind == BF16_COPY_FLOATS)
        r->row_exp[i] = bf16_emul_round_row((float *)dst, row, r->k);
    else
        bf16_round_row(dst, row, r->k);
}

void bf16_rows_put_block(Bf16Rows *r, int i0, int m, int j0, int n, const float *x,
                         size_t ldx, unsigned char *emin)
{
    assert(j0 % 2 == 0 && (n % 2 == 0 || j0 + n == r->k) && j0 + n <= r->k);
    size_t words = row_words(r->k, r->kind);
    for (int i = 0; i < m; i++) {
        /* a block's pairs are the row's: j0 even, and an odd n ends the row, where
         * the row's own rounding pads the same way */
        uint32_t *dst = r->rows + (size_t)(i0 + i) * words;
        if (r->kind == BF16_COPY_FLOATS) {
            unsigned char e = bf16_emul_round_row((float *)dst + j0, x + (size_t)i * ldx, n);
            emin[i] = e < emin[i] ? e : emin[i];
        } else {
            bf16_round_row(dst + j0 / 2, x + (size_t)i * ldx, n);
        }
    }
}

void bf16_rows_put_exps(Bf16Rows *r, int i0, int m, const unsigned char *emin)
{
    if (r->kind == BF16_COPY_FLOATS)
        memcpy(r->row_exp + i0, emin, (size_t)m);
}

void bf16_rows_drop(Bf16Rows *r)
{
    r->of = NULL, r->n = r->k = 0;
    r->has_cols = 0;
}

int bf16_rows_fits(const Bf16Rows *r, int n, int k)
{
    return r && r->rows && n > 0 && k > 0 && n <= r->cap_n && k <= r->cap_k;
}

const Bf16Rows *bf16_rows_of(const Bf16Rows *r, const float *in, int N, int K,
                             Bf16CopyKind kind)
{
    return r && r->rows && r->of == in && r->n == N && r->k == K && r->kind == kind ? r : NULL;
}

/* r when it holds x[N][K]'s columns of kind `kind`, in either layout. */
static const Bf16Rows *cols_of(const Bf16Rows *r, const float *x, int N, int K,
                               Bf16CopyKind kind)
{
    return r && r->cols && r->has_cols && r->of == x && r->n == N && r->k == K &&
           r->kind == kind ? r : NULL;
}

const Bf16Rows *bf16_cols_of(const Bf16Rows *r, const float *x, int N, int K,
                             Bf16CopyKind kind)
{
    return cols_of(r, x, N, K, kind) && !r->cols_panels ? r : NULL;
}

const Bf16Rows *bf16_in_cols_of(const Bf16Rows *r, const float *x, int N, int K,
                                Bf16CopyKind kind)
{
    /* the floats' layout is the same for dW's two operands */
    return cols_of(r, x, N, K, kind) && (kind == BF16_COPY_FLOATS || r->cols_panels) ? r
                                                                                 : NULL;
}
