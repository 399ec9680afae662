/* matmul_causal: the causal products attention is built on (matmul_nt_causal,
 * matmul_nn_causal, matmul_tn_causal in matmul.h). They compute the same chains as
 * the dense products of kernels/matmul.c, with matmul_tile.h's tile (AVX2 or AVX-512:
 * panels of PANEL = 16 or 32 columns) or, in the portable build, through matmul_nt /
 * matmul_nn / matmul_tn one row at a time, so on the entries they compute they give
 * the dense products' bits. */
#include "kernels/matmul.h"
#include "kernels/matmul_tile.h"

#include <stddef.h>

#include "util/scratch.h"

#if MATMUL_AVX2

/* One tile of R = 1..6 rows against a PANEL-column panel, with runtime strides: the
 * building block of the causal products, whose row ranges differ per panel. Out of
 * line, so the causal loops share one copy of the instantiations. */
static void tile_any(int R, int nc, int K, const float *a, size_t rsa, size_t csa,
                     const float *bp, float *c, size_t ldc, int load_c)
{
    Epi none = { NULL, NULL };
    tile_rows(R, nc, panel_mask(nc), K, a, rsa, csa, bp, c, ldc, load_c, EPI_NONE, none);
}

/* nt_causal when all of B's panels fit in NT_ROWS_MAX floats (short keys, T x K of
 * at most 64 KiB: heads of 16 to 64 dimensions): B is packed once, then the tiles go
 * along C's rows, each 6-row tile across the panels up to its diagonal. Going down the
 * panels instead (as below) wrote C a 64-byte piece per row, 6 rows a page apart,
 * which for a fresh C stalls on every tile. */
enum { NT_ROWS_MAX = 16384 };

static void nt_causal_rows(int T, int K, const float *A, size_t lda, const float *B,
                           size_t ldb, float *C, size_t ldc, int accumulate)
{
    float *bp = scratch_floats(0, NT_ROWS_MAX);
    for (int j0 = 0; j0 < T; j0 += PANEL)
        pack_panel_t(bp + (size_t)j0 * K, B + (size_t)j0 * ldb, ldb, K, imin(PANEL, T - j0));
    for (int i = 0; i < T; i += 6) {
        int R = imin(6, T - i);
        for (int j0 = 0; j0 < i + R; j0 += PANEL)
            tile_any(R, imin(PANEL, T - j0), K, A + (size_t)i * lda, lda, 1, bp + (size_t)j0 * K,
                     C + (size_t)i * ldc + j0, ldc, accumulate);
    }
}

static void nt_causal(int T, int K, const float *A, size_t lda, const float *B, size_t ldb,
                      float *C, size_t ldc, int accumulate)
{
    if ((size_t)(T + PANEL - 1) / PANEL * PANEL * K <= NT_ROWS_MAX) {
        nt_causal_rows(T, K, A, lda, B, ldb, C, ldc, accumulate);
        return;
    }
    /* Longer keys: one panel of B at a time, its scores for query rows j0..T-1. */
    float *bp = scratch_floats(0, (size_t)KC * PANEL);
    for (int j0 = 0; j0 < T; j0 += PANEL) {
        int nc = imin(PANEL, T - j0);
        for (int k0 = 0; k0 < K; k0 += KC) {
            int kc = imin(KC, K - k0);
            pack_panel_t(bp, B + (size_t)j0 * ldb + k0, ldb, kc, nc);
            for (int i = j0; i < T; i += 6)
                tile_any(imin(6, T - i), nc, kc, A + (size_t)i * lda + k0, lda, 1, bp,
                         C + (size_t)i * ldc + j0, ldc, accumulate || k0 > 0);
        }
    }
}

/* nn_causal (upper = 0) and tn_causal (upper = 1): the same panels of B (rows k, PANEL
 * columns at a time), different row ranges per tile. */
static void causal_bcast(int upper, int T, int N, const float *A, size_t lda, const float *B,
                         size_t ldb, float *C, size_t ldc, int accumulate)
{
    float *bp = scratch_floats(0, (size_t)KC * PANEL);
    for (int j0 = 0; j0 < N; j0 += PANEL) {
        int nc = imin(PANEL, N - j0);
        for (int k0 = 0; k0 < T; k0 += KC) {
            int kc = imin(KC, T - k0);
            pack_panel(bp, B + (size_t)k0 * ldb + j0, ldb, kc, nc);
            if (!upper) {
                /* nn: tiles sit at multiples of 6; one whose last row is below k0 has no
                 * terms here. A tile's k stops after its last row (A is zero beyond). */
                for (int i = k0 / 6 * 6; i < T; i += 6) {
                    int R = imin(6, T - i);
                    tile_any(R, nc, imin(kc, i + R - k0), A + (size_t)i * lda + k0, lda, 1,
                             bp, C + (size_t)i * ldc + j0, ldc, accumulate || k0 > 0);
                }
            } else {
                /* tn: the tile of output rows i..i+R-1 sums k = i..T-1 (earlier A
                 * entries are zero): in this block from max(k0, i). */
                for (int i = 0; i < imin(T, k0 + kc); i += 6) {
                    int kb = imax(k0, i);
                    tile_any(imin(6, T - i), nc, k0 + kc - kb, A + (size_t)kb * lda + i, 1,
                             lda, bp + (size_t)PANEL * (kb - k0), C + (size_t)i * ldc + j0, ldc,
                             accumulate || kb > i);
                }
            }
        }
    }
}

static void nn_causal(int T, int N, const float *A, size_t lda, const float *B, size_t ldb,
                      float *C, size_t ldc, int accumulate)
{
    causal_bcast(0, T, N, A, lda, B, ldb, C, ldc, accumulate);
}

static void tn_causal(int T, int N, const float *A, size_t lda, const float *B, size_t ldb,
                      float *C, size_t ldc, int accumulate)
{
    causal_bcast(1, T, N, A, lda, B, ldb, C, ldc, accumulate);
}

/* The causal products on a subset of the query rows (matmul.h's *_causal_rows): the
 * same tiles over the compact rows, each 6-row tile's extent set by the last (largest)
 * position among its rows instead of by its own index. */
static void nt_rows(int M, const int *rows, int K, const float *A, size_t lda, const float *B,
                    size_t ldb, float *C, size_t ldc)
{
    int T = rows[M - 1] + 1; /* the keys any row reads */
    if ((size_t)(T + PANEL - 1) / PANEL * PANEL * K <= NT_ROWS_MAX) {
        float *bp = scratch_floats(0, NT_ROWS_MAX);
        for (int j0 = 0; j0 < T; j0 += PANEL)
            pack_panel_t(bp + (size_t)j0 * K, B + (size_t)j0 * ldb, ldb, K, imin(PANEL, T - j0));
        for (int r = 0; r < M; r += 6) {
            int R = imin(6, M - r), end = rows[r + R - 1] + 1;
            for (int j0 = 0; j0 < end; j0 += PANEL)
                tile_any(R, imin(PANEL, T - j0), K, A + (size_t)r * lda, lda, 1,
                         bp + (size_t)j0 * K, C + (size_t)r * ldc + j0, ldc, 0);
        }
        return;
    }
    float *bp = scratch_floats(0, (size_t)KC * PANEL);
    for (int j0 = 0; j0 < T; j0 += PANEL) {
        int nc = imin(PANEL, T - j0);
        for (int k0 = 0; k0 < K; k0 += KC) {
            int kc = imin(KC, K - k0);
            pack_panel_t(bp, B + (size_t)j0 * ldb + k0, ldb, kc, nc);
            for (int r = 0; r < M; r += 6) {
                int R = imin(6, M - r);
                if (rows[r + R - 1] >= j0)
                    tile_any(R, nc, kc, A + (size_t)r * lda + k0, lda, 1, bp,
                             C + (size_t)r * ldc + j0, ldc, k0 > 0);
            }
        }
    }
}

static void nn_rows(int M, const int *rows, int N, const float *A, size_t lda, const float *B,
                    size_t ldb, float *C, size_t ldc)
{
    int T = rows[M - 1] + 1;
    float *bp = scratch_floats(0, (size_t)KC * PANEL);
    for (int j0 = 0; j0 < N; j0 += PANEL) {
        int nc = imin(PANEL, N - j0);
        for (int k0 = 0; k0 < T; k0 += KC) {
            int kc = imin(KC, T - k0);
            pack_panel(bp, B + (size_t)k0 * ldb + j0, ldb, kc, nc);
            /* a tile's chains run over k <= its last row's position */
            for (int r = 0; r < M; r += 6) {
                int R = imin(6, M - r), end = rows[r + R - 1] + 1;
                if (end > k0)
                    tile_any(R, nc, imin(kc, end - k0), A + (size_t)r * lda + k0, lda, 1, bp,
                             C + (size_t)r * ldc + j0, ldc, k0 > 0);
            }
        }
    }
}

static void tn_rows(int M, const int *rows, int T, int N, const float *A, size_t lda,
                    const float *B, size_t ldb, float *C, size_t ldc)
{
    int last = rows[M - 1], done = imin(T, last / 6 * 6 + 6); /* rows the tiles write */
    float *bp = scratch_floats(0, (size_t)KC * PANEL);
    for (int j0 = 0; j0 < N; j0 += PANEL) {
        int nc = imin(PANEL, N - j0);
        for (int k0 = 0; k0 < M; k0 += KC) {
            int kc = imin(KC, M - k0);
            pack_panel(bp, B + (size_t)k0 * ldb + j0, ldb, kc, nc);
            /* The tile of output rows i..i+R-1 sums the compact rows r >= r0, the first
             * whose position is at least i (earlier ones are zero in its columns). */
            int r0 = 0;
            for (int i = 0; i <= last; i += 6) {
                while (rows[r0] < i)
                    r0++;
                if (r0 >= k0 + kc)
                    break;
                int kb = imax(k0, r0);
                tile_any(imin(6, T - i), nc, k0 + kc - kb, A + (size_t)kb * lda + i, 1, lda,
                         bp + (size_t)PANEL * (kb - k0), C + (size_t)i * ldc + j0, ldc, kb > r0);
            }
        }
    }
    for (int j = done; j < T; j++)
        for (int n = 0; n < N; n++)
            C[(size_t)j * ldc + n] = 0.0f;
}

#else /* portable */

static void nt_causal(int T, int K, const float *A, size_t lda, const float *B, size_t ldb,
                      float *C, size_t ldc, int accumulate)
{
    for (int i = 0; i < T; i++)
        matmul_nt(1, i + 1, K, A + (size_t)i * lda, (int)lda, B, (int)ldb, C + (size_t)i * ldc,
                  (int)ldc, accumulate);
}

static void nn_causal(int T, int N, const float *A, size_t lda, const float *B, size_t ldb,
                      float *C, size_t ldc, int accumulate)
{
    for (int i = 0; i < T; i++)
        matmul_nn(1, N, i + 1, A + (size_t)i * lda, (int)lda, B, (int)ldb, C + (size_t)i * ldc,
                  (int)ldc, accumulate);
}

static void tn_causal(int T, int N, const float *A, size_t lda, const float *B, size_t ldb,
                      float *C, size_t ldc, int accumulate)
{
    for (int i = 0; i < T; i++)
        matmul_tn(1, N, T - i, A + (size_t)i * lda + i, (int)lda, B + (size_t)i * ldb, (int)ldb,
                  C + (size_t)i * ldc, (int)ldc, accumulate);
}

static void nt_rows(int M, const int *rows, int K, const float *A, size_t lda, const float *B,
                    size_t ldb, float *C, size_t ldc)
{
    for (int r = 0; r < M; r++)
        matmul_nt(1, rows[r] + 1, K, A + (size_t)r * lda, (int)lda, B, (int)ldb,
                  C + (size_t)r * ldc, (int)ldc, 0);
}

static void nn_rows(int M, const int *rows, int N, const float *A, size_t lda, const float *B,
                    size_t ldb, float *C, size_t ldc)
{
    for (int r = 0; r < M; r++)
        matmul_nn(1, N, rows[r] + 1, A + (size_t)r * lda, (int)lda, B, (int)ldb,
                  C + (size_t)r * ldc, (int)ldc, 0);
}

static void tn_rows(int M, const int *rows, int T, int N, const float *A, size_t lda,
                    const float *B, size_t ldb, float *C, size_t ldc)
{
    int r0 = 0;
    for (int j = 0; j < T; j++) {
        while (r0 < M && rows[r0] < j)
            r0++;
        if (r0 < M)
            matmul_tn(1, N, M - r0, A + (size_t)r0 * lda + j, (int)lda, B + (size_t)r0 * ldb,
                      (int)ldb, C + (size_t)j * ldc, (int)ldc, 0);
        else
            for (int n = 0; n < N; n++)
                C[(size_t)j * ldc + n] = 0.0f;
    }
}

#endif

void matmul_nt_causal(int T, int K, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc, int accumulate)
{
    if (T > 0 && K > 0)
        nt_causal(T, K, A, (size_t)lda, B, (size_t)ldb, C, (size_t)ldc, accumulate);
}

void matmul_nn_causal(int T, int N, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc, int accumulate)
{
    if (T > 0 && N > 0)
        nn_causal(T, N, A, (size_t)lda, B, (size_t)ldb, C, (size_t)ldc, accumulate);
}

void matmul_tn_causal(int T, int N, const float *A, int lda, const float *B, int ldb,
                      float *C, int ldc, int accumulate)
{
    if (T > 0 && N > 0)
        tn_causal(T, N, A, (size_t)lda, B, (size_t)ldb, C, (size_t)ldc, accumulate);
}

void matmul_nt_causal_rows(int M, const int *rows, int K, const float *A, int lda,
                           const float *B, int ldb, float *C, int ldc)
{
    if (M > 0 && K > 0)
        nt_rows(M, rows, K, A, (size_t)lda, B, (size_t)ldb, C, (size_t)ldc);
}

void matmul_nn_causal_rows(int M, const int *rows, int N, const float *A, int lda,
                           const float *B, int ldb, float *C, int ldc)
{
    if (M > 0 && N > 0)
        nn_rows(M, rows, N, A, (size_t)lda, B, (size_t)ldb, C, (size_t)ldc);
}

void matmul_tn_causal_rows(int M, const int *rows, int T, int N, const float *A, int lda,
                           const float *B, int ldb, float *C, int ldc)
{
    if (M > 0 && N > 0)
        tn_rows(M, rows, T, N, A, (size_t)lda, B, (size_t)ldb, C, (size_t)ldc);
}
