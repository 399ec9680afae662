/* matmul_ref: the double-precision reference of the product tests
 * (test_matmul.c, test_linear.c): random operands of C[M][N] (+)= op(A) . op(B)
 * with leading dimensions, and a check of a result against the exact sum within
 * a bound on float rounding. */
#ifndef HEADCOUNT_MATMUL_REF_H
#define HEADCOUNT_MATMUL_REF_H

#include <stddef.h>

#include "util/rng.h"

typedef enum { NT, NN, TN } Kind;

typedef void (*SgemmFn)(int, int, int, const float *, int, const float *, int, float *, int,
                        int);

extern const char *const kind_name[3]; /* "nt", "nn", "tn" */

/* The operands of one product C[M][N] (+)= op(A) . op(B) with leading dimensions. */
typedef struct {
    Kind kind;
    int M, N, K, lda, ldb, ldc;
    float *A, *B, *C;
} Prod;

/* n floats uniform in [-1, 1) (at least one allocated). */
float *alloc_uniform(size_t n, Rng *rng);
/* Random operands; strides are the minimum plus pad (so pad > 0 gives odd strides). */
Prod prod_make(Kind kind, int M, int N, int K, int pad, Rng *rng);
void prod_free(Prod *p);
/* op(A)[i][k] and op(B)[k][j]. */
float a_at(const Prod *p, int i, int k);
float b_at(const Prod *p, int k, int j);
/* got vs the double reference old + sum_k a*b (old only when accumulate); fails
 * the test naming the cell. */
void check_reference(const Prod *p, const float *old, const float *got, int accumulate,
                     const char *what);

#endif
