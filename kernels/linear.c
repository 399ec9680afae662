/* linear: the linear layer on OpenMP (see matmul.h): each product split into
 * independent output tiles, every tile computed by one thread with matmul.c's
 * kernels, so the split changes no bit (the determinism contract in matmul.h). The
 * kernels and their float operations are in matmul.c; tiling and speed in
 * docs/matmul.md. */
#include "kernels/matmul.h"
#include "kernels/matmul_kernels.h"

#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

static int lin_min(int a, int b) { return a < b ? a : b; }
static int lin_max(int a, int b) { return a > b ? a : b; }

/* The split of an M x N output among threads into about per_thread tiles per thread:
 * columns in blocks of at most max_cols, rows in blocks of at least min_rows (and of
 * at most max_rows, which wins over min_rows), and narrower column blocks when the
 * rows alone do not give enough tiles. Sizes are multiples of the kernel tile. Only
 * speed depends on the split. */
typedef struct {
    int M, N, rb, cb, nrb, ncb;
} Tiles;

static int ceil_div(int a, int b) { return (a + b - 1) / b; }

static Tiles tiles_plan(int M, int N, int row_align, int col_align, int min_rows, int max_rows,
                        int max_cols, int per_thread)
{
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    Tiles t = { M, N, row_align, col_align, 0, 0 };
    if (M <= 0 || N <= 0)
        return t;
    int want = threads * per_thread;
    int ncb = ceil_div(N, max_cols);
    int nrb = lin_max(1, lin_min(ceil_div(want, ncb), M / min_rows));
    if (nrb * ncb < want)
        ncb = lin_max(ncb, lin_min(ceil_div(want, nrb), ceil_div(N, col_align)));
    nrb = lin_max(nrb, ceil_div(M, max_rows));
    /* A tile count that is not a multiple of the thread count leaves threads idle at
     * the end (9 tiles on 2 threads: one waits a whole tile); add row blocks. */
    while ((nrb * ncb) % threads != 0 && nrb < M / min_rows)
        nrb++;
    t.rb = ceil_div(ceil_div(M, nrb), row_align) * row_align;
    t.cb = ceil_div(ceil_div(N, ncb), col_align) * col_align;
    t.nrb = ceil_div(M, t.rb);
    t.ncb = ceil_div(N, t.cb);
    return t;
}

/* Tile number `tile`: rows i0..i0+m-1, columns j0..j0+n-1. */
static void tile_at(const Tiles *t, int tile, int *i0, int *j0, int *m, int *n)
{
    *i0 = tile / t->ncb * t->rb;
    *j0 = tile % t->ncb * t->cb;
    *m = lin_min(t->rb, t->M - *i0);
    *n = lin_min(t->cb, t->N - *j0);
}

/* Below this many flops a product runs on the calling thread alone. */
#define PARALLEL_MIN_FLOPS (1 << 20)

/* The forward's tiles, about 4 per thread; dgelu != NULL: the fused GELU (out = gelu,
 * dgelu = its derivative). */
static void forward_tiles(float *out, float *dgelu, const float *in, const float *W,
                          const float *bias, int N, int IC, int OC)
{
    Tiles t = tiles_plan(N, OC, 6, MATMUL_PANEL, 48, N, 256, 4);
    double flops = 2.0 * N * IC * OC;
    #pragma omp parallel for schedule(dynamic, 1) if (flops >= PARALLEL_MIN_FLOPS)
    for (int tile = 0; tile < t.nrb * t.ncb; tile++) {
        int i0, j0, m, n;
        tile_at(&t, tile, &i0, &j0, &m, &n);
        size_t at = (size_t)i0 * OC + j0;
        const float *a = in + (size_t)i0 * IC, *b = W + (size_t)j0 * IC;
        const float *bj = bias ? bias + j0 : NULL;
        if (dgelu)
            matmul_kernel_nt_gelu(m, n, IC, a, (size_t)IC, b, (size_t)IC, out + at, (size_t)OC, bj,
                                  dgelu + at);
        else
            matmul_kernel_nt(m, n, IC, a, (size_t)IC, b, (size_t)IC, out + at, (size_t)OC, bj);
    }
}

void matmul_forward(float *out, const float *in, const float *W, const float *bias,
                    int N, int IC, int OC)
{
    forward_tiles(out, NULL, in, W, bias, N, IC, OC);
}

void matmul_forward_gelu(float *act, float *dgelu, const float *in, const float *W,
                         const float *bias, int N, int IC, int OC)
{
    forward_tiles(act, dgelu, in, W, bias, N, IC, OC);
}

void matmul_forward_t(float *out, const float *in, const float *Wt, const float *bias, int N,
                      int IC, int OC)
{
    Tiles t = tiles_plan(N, OC, 1, MATMUL_PANEL, 1, N, 256, 2);
    double flops = 2.0 * N * IC * OC;
    #pragma omp parallel for schedule(dynamic, 1) if (flops >= PARALLEL_MIN_FLOPS)
    for (int tile = 0; tile < t.nrb * t.ncb; tile++) {
        int i0, j0, m, n;
        tile_at(&t, tile, &i0, &j0, &m, &n);
        for (int i = i0; i < i0 + m; i++)
            matmul_kernel_nn_row(n, IC, in + (size_t)i * IC, Wt + j0, (size_t)OC,
                                 out + (size_t)i * OC + j0, bias ? bias + j0 : NULL);
    }
}

/* dbias[o0..o0+no-1] += dout[0][o] + dout[1][o] + ... in order of n. */
static void bias_grad(float *dbias, const float *dout, int N, int OC, int o0, int no)
{
    enum { OB = 64 };
    float s[OB];
    memcpy(s, dbias + o0, (size_t)no * sizeof(float));
    for (int n = 0; n < N; n++) {
        const float *d = dout + (size_t)n * OC + o0;
        for (int o = 0; o < no; o++)
            s[o] += d[o];
    }
    memcpy(dbias + o0, s, (size_t)no * sizeof(float));
}

/* One parallel region; each loop hands out independent output tiles (nowait: the
 * three gradients share no output, so threads move on without a barrier). The dW
 * tiles (the larger ones) go first, so the smaller din tiles even out the end.
 * din = dout . W, or with dgelu != NULL din = dgelu * (dout . W); overwritten. */
static void backward_tiles(float *din, float *dW, float *dbias, const float *dout,
                           const float *in, const float *W, const float *dgelu, int N, int IC,
                           int OC)
{
    /* din: nn over (n, ic). dW: tn over (oc, ic), in tiles of at most MATMUL_TN_ROWS
     * rows, so that each k block of a tile packs its B panels once, and as wide as the
     * layer (up to MATMUL_TN_COLS columns), so that fewer tiles pack the same A rows. */
    Tiles tin = tiles_plan(din ? N : 0, IC, 6, MATMUL_PANEL, 48, N, 256, 4);
    Tiles tw = tiles_plan(dW ? OC : 0, IC, 6, MATMUL_PANEL, 48, MATMUL_TN_ROWS, MATMUL_TN_COLS, 2);
    int nb = dbias ? (OC + 63) / 64 : 0;                /* dbias: 64 columns each */
    double flops = 2.0 * N * IC * OC * ((din != NULL) + (dW != NULL));
    #pragma omp parallel if (flops >= PARALLEL_MIN_FLOPS)
    {
        #pragma omp for schedule(dynamic, 1) nowait
        for (int tile = 0; tile < tw.nrb * tw.ncb; tile++) {
            int i0, j0, m, n;
            tile_at(&tw, tile, &i0, &j0, &m, &n);
            matmul_tn(m, n, N, dout + i0, OC, in + j0, IC, dW + (size_t)i0 * IC + j0, IC, 1);
        }
        #pragma omp for schedule(dynamic, 1) nowait
        for (int tile = 0; tile < tin.nrb * tin.ncb; tile++) {
            int i0, j0, m, n;
            tile_at(&tin, tile, &i0, &j0, &m, &n);
            size_t at = (size_t)i0 * IC + j0;
            if (dgelu)
                matmul_kernel_nn_scaled(m, n, OC, dout + (size_t)i0 * OC, (size_t)OC, W + j0,
                                        (size_t)IC, din + at, (size_t)IC, dgelu + at);
            else
                matmul_nn(m, n, OC, dout + (size_t)i0 * OC, OC, W + j0, IC, din + at, IC, 0);
        }
        #pragma omp for schedule(dynamic, 1) nowait
        for (int b = 0; b < nb; b++)
            bias_grad(dbias, dout, N, OC, 64 * b, lin_min(64, OC - 64 * b));
    }
}

void matmul_backward(float *din, float *dW, float *dbias, const float *dout, const float *in,
                     const float *W, int N, int IC, int OC)
{
    backward_tiles(din, dW, dbias, dout, in, W, NULL, N, IC, OC);
}

void matmul_backward_gelu(float *din, float *dW, float *dbias, const float *dout,
                          const float *in, const float *W, const float *dgelu, int N, int IC,
                          int OC)
{
    backward_tiles(din, dW, dbias, dout, in, W, dgelu, N, IC, OC);
}
