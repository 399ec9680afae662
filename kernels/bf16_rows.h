/* bf16_rows: an activation's rows rounded to bf16 by the layer that produces it
 * (--precision bf16).
 *
 * bf16_forward rounds its input in[N][K] along the rows on every call, in a pass of
 * its own over memory. Where the input is written a row at a time (LayerNorm's output,
 * model/layers.h), its producer can round each row while it is still in cache, into a
 * Bf16Rows, and hand that to the product (bf16_forward_with's rin), which then reads
 * it instead of rounding. The copy is the one the product would make, bit for bit, in
 * the layout the code that runs reads (Bf16CopyKind, kernels/bf16_weight.h):
 *   BF16_COPY_FLOATS, for the emulation on the float32 kernels (bf16_emul.h):
 *     rows[N][K2] floats' bits (K2 = 2 bf16_pairs(K)), rows[n][k ^ 1] = bf16(in[n][k]),
 *     the padding of an odd K +0, and each row's smallest biased exponent (row_exp);
 *   BF16_COPY_PANELS, for the instruction and the step-by-step emulation:
 *     rows[N][bf16_pairs(K)] = bf16_round_rows(in).
 * It holds one matrix at a time (of, n, k say which); the product checks that it is
 * the rounding of its own input and of its kind, else rounds as before.
 *
 * A product can write its own output's rows the same way as its tiles finish
 * (bf16_forward_rounding, bf16_backward_rounding in kernels/bf16.h): a tile covers a
 * block of columns of some rows, so it rounds that block (bf16_rows_put_block) and
 * whoever walks all of a row's blocks sets the row's exponent from theirs
 * (bf16_rows_put_exps).
 *
 * It can also hold the same matrix's columns, for the backward's dW product, which sums
 * over the rows of its dout and so rounds dout down its columns (bf16_backward_with's
 * rdout; the residual gradient's producers write them, model/layers.h). A producer that
 * writes them goes over its rows in blocks of BF16_COL_ROWS, one thread a block, and
 * rounds each finished block into them (bf16_rows_put_cols), in the layout the dW
 * product reads:
 *   BF16_COPY_FLOATS: cols[2 bf16_pairs(n)][k] floats' bits, cols[i ^ 1][c] =
 *     bf16(x[i][c]) (the row past an odd n, the padding, +0), and each block's smallest
 *     biased exponent per column, col_exp[i / BF16_COL_ROWS][c]; a column's exponent is
 *     the least over the blocks (order-free, so any split gives the same);
 *   BF16_COPY_PANELS: cols[k][bf16_pairs(n)] = bf16_round_cols(x): a word holds rows 2p
 *     and 2p + 1, which a block keeps together (BF16_COL_ROWS is even).
 *
 * The dW product's other operand, the layer's forward input `in`, is rounded down its
 * columns too (bf16_backward_rounding's rin). A Bf16Rows made by bf16_rows_init_in_cols
 * holds such columns alone, no rows, from the forward to the backward (the LayerNorms
 * write them, model/layers.h; with the pairs fc's product fch_gelu's,
 * bf16_forward_rounding_cols), in the layout the dW product reads for `in`:
 *   BF16_COPY_FLOATS: as above (the emulation rounds both operands alike);
 *   BF16_COPY_PANELS: bf16_pack_cols(x)'s panels (kernels/bf16.h): panel q, pair p,
 *     column j at cols[(q bf16_pairs(n) + p) BF16_PANEL + j], the columns past k +0
 *     (cols_panels set). */
#ifndef HEADCOUNT_BF16_ROWS_H
#define HEADCOUNT_BF16_ROWS_H

#include <stddef.h>
#include <stdint.h>

#include "kernels/bf16_weight.h"

typedef struct Bf16Rows {
    Bf16CopyKind kind;
    int cap_n, cap_k;        /* the largest matrix it has room for */
    uint32_t *rows;          /* NULL: no memory (bf16_rows_init not called or failed) */
    unsigned char *row_exp;  /* [cap_n]; FLOATS only */
    const float *of;         /* the matrix of[n][k] whose rows it holds; NULL: none */
    int n, k;
    uint32_t *cols;          /* its columns (bf16_rows_init_cols); NULL: no memory */
    unsigned char *col_exp;  /* [blocks of BF16_COL_ROWS rows][cols_cap_k]; FLOATS only */
    int cols_cap_n, cols_cap_k;
    int has_cols;            /* the columns of the matrix started are written */
    int cols_panels;         /* PANELS: the columns in bf16_pack_cols's panels, for the
                                dW product's `in` (bf16_rows_init_in_cols) */
} Bf16Rows;

/* Rows per block of a producer that writes the columns: even, and 16 pairs, so that a
 * block's pairs of one column are a 64-byte line of the pairs' layout. */
enum { BF16_COL_ROWS = 32 };

/* Memory for the rows of matrices up to N x K (rounded by bf16_rows_start/_put);
 * -1 when out of memory (r is then safe to free). */
int bf16_rows_init(Bf16Rows *r, int N, int K, Bf16CopyKind kind);
/* Safe on a zeroed or freed Bf16Rows. */
void bf16_rows_free(Bf16Rows *r);
/* Bytes bf16_rows_init allocates (for memory estimates). */
size_t bf16_rows_bytes(int N, int K, Bf16CopyKind kind);

/* Memory for the columns of matrices up to N x K too (r initialised by bf16_rows_init);
 * -1 when out of memory (r then has none, and its rows are kept). */
int bf16_rows_init_cols(Bf16Rows *r, int N, int K);
/* Bytes bf16_rows_init_cols allocates. */
size_t bf16_rows_cols_bytes(int N, int K, Bf16CopyKind kind);

/* Memory for the columns alone of matrices up to N x K, in the layout the dW product
 * reads for its `in` (no rows: bf16_rows_of never returns it); -1 when out of memory (r
 * is then safe to free, and holds nothing). */
int bf16_rows_init_in_cols(Bf16Rows *r, int N, int K, Bf16CopyKind kind);
/* Bytes bf16_rows_init_in_cols allocates. */
size_t bf16_rows_in_cols_bytes(int N, int K, Bf16CopyKind kind);
/* Starts holding the columns of x[n][k] in r (from bf16_rows_init_in_cols): 1 when it
 * has room, and the caller must then write every block by bf16_rows_put_cols before a
 * product reads them; 0 when it has none (it then holds nothing). */
int bf16_rows_start_in_cols(Bf16Rows *r, const float *x, int n, int k);

/* Starts holding x[n][k] (n <= cap_n, k <= cap_k); every row must then be written by
 * bf16_rows_put before a product reads it. It holds no columns until
 * bf16_rows_start_cols. */
void bf16_rows_start(Bf16Rows *r, const float *x, int n, int k);
/* After bf16_rows_start: 1 when r has room for the matrix's columns, which the caller
 * must then write, every block by bf16_rows_put_cols, before a product reads them; 0
 * when it has none (it then holds no columns). */
int bf16_rows_start_cols(Bf16Rows *r);
/* Rounds the block of rows i0..i0+m-1 of the matrix started, x[m][k] (rows k apart),
 * into the columns: i0 a multiple of BF16_COL_ROWS, m = BF16_COL_ROWS or what ends the
 * matrix. Blocks may be written by different threads in any order. */
void bf16_rows_put_cols(Bf16Rows *r, int i0, int m, const float *x);
/* Rounds row i of the matrix started, from its values `row` (k floats); rows may be
 * written by different threads in any order. */
void bf16_rows_put(Bf16Rows *r, int i, const float *row);

/* Rounds the block x[m][n] (rows ldx apart) that is rows i0..i0+m-1, columns
 * j0..j0+n-1 of the matrix started, as bf16_rows_put rounds those elements: j0 even,
 * and n even unless the block ends the rows, so that no pair is split. For
 * BF16_COPY_FLOATS it lowers emin[r] to the smallest biased exponent of the block's row
 * r (start emin at 255); a row's exponent is the least over all its blocks. */
void bf16_rows_put_block(Bf16Rows *r, int i0, int m, int j0, int n, const float *x,
                         size_t ldx, unsigned char *emin);
/* Sets the exponents of rows i0..i0+m-1 (BF16_COPY_FLOATS; nothing for the pairs) from
 * emin[m], once every block of those rows is put. */
void bf16_rows_put_exps(Bf16Rows *r, int i0, int m, const unsigned char *emin);
/* Holds no matrix any more (a producer that was to write r and could not). */
void bf16_rows_drop(Bf16Rows *r);
/* Whether r has room for an n x k matrix. */
int bf16_rows_fits(const Bf16Rows *r, int n, int k);

/* r when it holds the rounding of in[N][K] in the layout `kind`, else NULL. */
const Bf16Rows *bf16_rows_of(const Bf16Rows *r, const float *in, int N, int K,
                             Bf16CopyKind kind);
/* r when it holds the rounding of x[N][K]'s columns in the layout `kind` that the dW
 * product reads for its dout, else NULL. */
const Bf16Rows *bf16_cols_of(const Bf16Rows *r, const float *x, int N, int K,
                             Bf16CopyKind kind);
/* r when it holds x[N][K]'s columns in the layout the dW product reads for its `in`
 * (bf16_rows_init_in_cols's), of kind `kind`, else NULL. */
const Bf16Rows *bf16_in_cols_of(const Bf16Rows *r, const float *x, int N, int K,
                                Bf16CopyKind kind);
/* e[k] = the smallest biased exponent of each column of the matrix whose columns r
 * holds (BF16_COPY_FLOATS): the least of its blocks'. */
void bf16_rows_col_exps(const Bf16Rows *r, unsigned char *e);

#endif
