/* matmul_ref: see matmul_ref.h. */
#include "tests/matmul_ref.h"

#include <criterion/criterion.h>
#include <math.h>
#include <stdlib.h>

const char *const kind_name[3] = { "nt", "nn", "tn" };

float *alloc_uniform(size_t n, Rng *rng)
{
    float *p = malloc((n ? n : 1) * sizeof(float));
    cr_assert(p, "out of memory");
    for (size_t i = 0; i < n; i++)
        p[i] = 2.0f * rng_uniform(rng) - 1.0f;
    return p;
}

static size_t a_size(const Prod *p)
{
    return (size_t)(p->kind == TN ? p->K : p->M) * p->lda;
}

static size_t b_size(const Prod *p)
{
    return (size_t)(p->kind == NT ? p->N : p->K) * p->ldb;
}

float a_at(const Prod *p, int i, int k)
{
    return p->kind == TN ? p->A[(size_t)k * p->lda + i] : p->A[(size_t)i * p->lda + k];
}

float b_at(const Prod *p, int k, int j)
{
    return p->kind == NT ? p->B[(size_t)j * p->ldb + k] : p->B[(size_t)k * p->ldb + j];
}

/* Random operands; strides are the minimum plus pad (so pad > 0 gives odd strides). */
Prod prod_make(Kind kind, int M, int N, int K, int pad, Rng *rng)
{
    Prod p = { kind, M, N, K, 0, 0, N + pad, NULL, NULL, NULL };
    p.lda = (kind == TN ? M : K) + pad;
    p.ldb = (kind == NT ? K : N) + pad;
    p.A = alloc_uniform(a_size(&p), rng);
    p.B = alloc_uniform(b_size(&p), rng);
    p.C = alloc_uniform((size_t)M * p.ldc, rng);
    return p;
}

void prod_free(Prod *p)
{
    free(p->A);
    free(p->B);
    free(p->C);
}


/* got vs the double reference old + sum_k a*b. Any order of float additions and
 * FMAs over n terms is within n*u*(sum of |terms|) of the exact sum to first order
 * (u = 2^-24; Higham, Accuracy and Stability, 3.1); K products and the old value give
 * n <= K + 1, and we allow 2(K + 4). A dropped, doubled or
 * misplaced term is off by about sum/K, far outside the bound for K < 10^5. */
void check_reference(const Prod *p, const float *old, const float *got, int accumulate,
                            const char *what)
{
    double u = ldexp(1.0, -24);
    for (int i = 0; i < p->M; i++)
        for (int j = 0; j < p->N; j++) {
            size_t at = (size_t)i * p->ldc + j;
            double s = accumulate ? old[at] : 0.0, mag = fabs(s);
            for (int k = 0; k < p->K; k++) {
                double t = (double)a_at(p, i, k) * b_at(p, k, j);
                s += t;
                mag += fabs(t);
            }
            double err = fabs(got[at] - s), tol = 2.0 * (p->K + 4) * u * mag;
            if (!(err <= tol))
                cr_assert_fail("%s %s M=%d N=%d K=%d lda=%d ldb=%d ldc=%d acc=%d: "
                               "C[%d][%d] = %.9g, reference %.9g, |err| %.3g > tol %.3g",
                               what, kind_name[p->kind], p->M, p->N, p->K, p->lda, p->ldb,
                               p->ldc, accumulate, i, j, got[at], s, err, tol);
        }
}
