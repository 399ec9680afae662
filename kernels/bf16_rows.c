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
    memset(r, 0, sizeof *r);
}

void bf16_rows_start(Bf16Rows *r, const float *x, int n, int k)
{
    assert(r->rows && n > 0 && k > 0 && n <= r->cap_n && k <= r->cap_k);
    r->of = x, r->n = n, r->k = k;
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
