/* matmul: the sgemm kernels (nt, nn, tn, and the epilogues the linear layer fuses
 * into them). The OpenMP linear layer built on them is kernels/linear.c, their causal
 * variants for attention kernels/matmul_causal.c, and the register tile and B-panel
 * packing both files share kernels/matmul_tile.h (AVX2) and kernels/matmul_tile512.h
 * (AVX-512).
 *
 * Three implementations of the same arithmetic: register-tiled micro-kernels on
 * AVX-512 (when the compiler targets AVX-512F and VL) or AVX2+FMA, and a portable C
 * one. Nothing here starts threads (attention calls the kernels inside its own
 * parallel loop). Tiling and measured speed are in docs/matmul.md; this comment states
 * the float operations, because the determinism contract in matmul.h is a promise
 * about them.
 *
 * All three kernels compute the same chains: C[i][j] is s = fma(a_ik, b_kj, s) over
 * k = 0..K-1 in order, starting from 0, or from the old C[i][j] when accumulating;
 * the linear layer's bias is added after the chain (out = s + bias[j]). So nt, nn and
 * tn give the same bits for the same product, whatever layout its operands have.
 * The tile holds up to 6 rows x PANEL columns of such chains in registers (PANEL = 16
 * with AVX2, 32 with AVX-512: the width changes how many chains run side by side, not
 * an operation of any chain, so both tiles give the same bits); blocking over k only
 * stores s to C and reloads it, which changes no bit. B is read through a packed
 * panel of PANEL columns: a copy of B's rows (nn, tn), or a gather of B's columns by
 * 8 x 8 transposes (nt).
 *
 * Edge tiles compute the same chains: a short last tile has its own row count, and
 * partial column vectors use masked loads and stores. So no float sum depends on the
 * tiling or on the split among threads.
 *
 * The portable code follows the same orders, with fmaf where the target has a fast
 * one (FP_FAST_FMAF; then its bits equal the vector paths') and a separate multiply
 * and add otherwise. tests/arch_check.sh compares the three builds' checkpoints. */
#include "kernels/matmul.h"
#include "kernels/matmul_kernels.h"
#include "kernels/matmul_tile.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#include "kernels/vmath.h"
#include "util/scratch.h"

#if MATMUL_AVX2

/* Cache blocking (floats). nn, nt: a KC x PANEL panel of B (16 or 32 KiB) stays in L1
 * while an MC x KC block of A sits in L2. tn: the same, with the MC_TN x KC block of A
 * packed (192 KiB: fewer rows would pack each B panel, from a large strided B, more
 * often). nn and nt pack their MC x KC
 * block of A too with the AVX2 tile (gemm_blocks); with the AVX-512 tile they read A
 * in place and pack a KG x NC block of B at once (below). The packing buffers are the
 * thread's scratch (util/scratch.h): 225 KiB at most per call on the AVX2 path, 512 KiB
 * on the AVX-512 one. */
enum { MC = 192, MC_TN = MATMUL_TN_ROWS };
_Static_assert(MC % 6 == 0 && MC_TN % 6 == 0, "A is packed in whole 6-row tiles");

/* Memory the next panel's packing will read: rows of `bytes` bytes, `stride` apart
 * (rows = 0: nothing). */
typedef struct {
    const char *p;
    size_t stride;
    int rows, bytes;
} Ahead;

/* Asks for rows r0..r1-1 of f in the cache (prefetches change no value). */
static inline void ahead_rows(Ahead f, int r0, int r1)
{
    for (int r = r0; r < imin(r1, f.rows); r++) {
        const char *row = f.p + (size_t)r * f.stride;
        for (int b = 0; b < f.bytes; b += 64)
            _mm_prefetch(row + b, _MM_HINT_T1);
        _mm_prefetch(row + f.bytes - 1, _MM_HINT_T1);
    }
}

/* The tiles of one stripe of C (M rows x PANEL columns) against a packed B panel; tile
 * t's A starts at a + t*tstep: full 6-row tiles, then the short one (tile_rows). The
 * full tiles are called directly, not through tile_rows' switch, which the compiler
 * does not see through. Each full tile first prefetches its share of `next` (the next
 * panel's B), so that packing it finds B in cache: B panels are 64-byte pieces of rows
 * a page or more apart, which the hardware prefetchers do not fetch ahead. */
ALWAYS_INLINE void stripe_bcast(int nc, int M, int kc, const float *a, size_t rsa, size_t csa,
                                size_t tstep, const float *bp, float *c, size_t ldc, int load_c,
                                int epi, Epi e, Ahead next)
{
    PanelMask mask = panel_mask(nc);
    int share = M >= 6 ? (next.rows + M / 6 - 1) / (M / 6) : 0;
    int i = 0;
    for (int t = 0; i + 6 <= M; i += 6, a += tstep, t++) {
        ahead_rows(next, t * share, (t + 1) * share);
        tile_nc(6, nc, mask, kc, a, rsa, csa, 1, bp, PANEL, c + (size_t)i * ldc, ldc, load_c, epi,
                epi_at(e, (size_t)i * ldc, 0));
    }
    if (i < M)
        tile_rows(M - i, nc, mask, kc, a, rsa, csa, bp, c + (size_t)i * ldc, ldc, load_c, epi,
                  epi_at(e, (size_t)i * ldc, 0));
}

/* One block of C (mc rows x N columns) += one k block: a(r, k) = a[r*rsa + k*csa]
 * (tile t's rows start at a + t*tstep). Each PANEL-column panel of B is first copied into
 * bp, so the kernel reads it at unit stride, free of cache-set conflicts: B rows
 * k0.. at B (nn, tn: row stride ldb) or, with trans, B's rows j are columns of the
 * product (nt: B[j][k] at B + j*ldb + k). epi, e: see tile_bcast. */
ALWAYS_INLINE void block_bcast(int trans, int mc, int N, int kc, const float *a, size_t rsa,
                               size_t csa, size_t tstep, const float *B, size_t ldb, float *bp,
                               float *C, size_t ldc, int load_c, int epi, Epi e)
{
    for (int j = 0; j < N; j += PANEL) {
        int nc = imin(PANEL, N - j), nn = imin(PANEL, N - j - PANEL);
        Ahead next = { NULL, ldb * sizeof(float), 0, 0 };
        if (trans)
            pack_panel_t(bp, B + (size_t)j * ldb, ldb, kc, nc);
        else
            pack_panel(bp, B + j, ldb, kc, nc);
        if (nn > 0 && trans)
            next = (Ahead){ (const char *)(B + (size_t)(j + PANEL) * ldb), ldb * sizeof(float), nn,
                            kc * (int)sizeof(float) };
        else if (nn > 0)
            next = (Ahead){ (const char *)(B + j + PANEL), ldb * sizeof(float), kc,
                            nn * (int)sizeof(float) };
        stripe_bcast(nc, mc, kc, a, rsa, csa, tstep, bp, C + j, ldc, load_c, epi,
                     epi_at(e, 0, j), next);
    }
}

#if MATMUL_AVX512

/* nn and nt with the AVX-512 tile: B is packed once per block of NC columns and KG k
 * (pack_b_block, 512 KiB of scratch), then every MC-row block of A sweeps it, its k
 * blocks in turn while its C block stays in L2. Packing each panel afresh for every
 * block of A (as the AVX2 path does) would repack B once per block of A and send each
 * C block through L3 between its k blocks; the chains, and so the bits, are the same
 * either way. A is read in place, six rows a stride apart: with this tile packing it
 * costs more than it saves (docs/matmul.md has the measurements behind both choices). */
enum { NC = 256, KG = 512 };
_Static_assert(KG % KC == 0, "a k group is whole KC blocks but its last");

/* Packs kg rows of k and nc columns of the product's B (b(k, j) at B + k*ldb + j, or
 * with trans at B + j*ldb + k) into bp: for each KC block of k, its PANEL-column
 * panels in order, each kc x PANEL (zero-padded). */
static void pack_b_block(int trans, float *bp, const float *B, size_t ldb, int kg, int nc)
{
    for (int k0 = 0; k0 < kg; k0 += KC) {
        int kc = imin(KC, kg - k0);
        for (int j = 0; j < nc; j += PANEL, bp += (size_t)kc * PANEL)
            if (trans)
                pack_panel_t(bp, B + (size_t)j * ldb + k0, ldb, kc, imin(PANEL, nc - j));
            else
                pack_panel(bp, B + (size_t)k0 * ldb + j, ldb, kc, imin(PANEL, nc - j));
    }
}

ALWAYS_INLINE void gemm_blocks(int trans, int M, int N, int K, const float *A, size_t lda,
                               const float *B, size_t ldb, float *C, size_t ldc,
                               int accumulate, int epi, Epi e)
{
    float *bp = scratch_floats(0, (size_t)KG * NC);
    Ahead none = { NULL, 0, 0, 0 };
    for (int j0 = 0; j0 < N; j0 += NC) {
        int nc = imin(NC, N - j0);
        for (int g0 = 0; g0 < K; g0 += KG) {
            int kg = imin(KG, K - g0);
            pack_b_block(trans, bp, trans ? B + (size_t)j0 * ldb + g0 : B + (size_t)g0 * ldb + j0,
                         ldb, kg, nc);
            for (int i0 = 0; i0 < M; i0 += MC) {
                int mc = imin(MC, M - i0);
                const float *bk = bp;
                for (int k0 = g0; k0 < g0 + kg; k0 += KC) {
                    int kc = imin(KC, g0 + kg - k0), load_c = accumulate || k0 > 0;
                    int last = k0 + kc >= K;
                    const float *a = A + (size_t)i0 * lda + k0;
                    for (int j = 0; j < nc; j += PANEL, bk += (size_t)kc * PANEL) {
                        int n = imin(PANEL, nc - j);
                        float *c = C + (size_t)i0 * ldc + j0 + j;
                        if (last)
                            stripe_bcast(n, mc, kc, a, lda, 1, 6 * lda, bk, c, ldc, load_c, epi,
                                         epi_at(e, (size_t)i0 * ldc, j0 + j), none);
                        else
                            stripe_bcast(n, mc, kc, a, lda, 1, 6 * lda, bk, c, ldc, load_c,
                                         EPI_NONE, e, none);
                    }
                }
            }
        }
    }
}

#else

/* Copies A[i][k] (i < mc, k < kc, row stride lda) as 6-row pieces: piece t holds
 * A[6t..6t+5][k] at ap + t*ps + 6*k (zero past mc), ps >= 6*kc + 2: the tiles then read
 * one unit-stride stream instead of six rows a stride apart, which saves more than
 * the copy costs. Eight k at a time through an 8 x 8
 * transpose of the piece's rows (two zero rows); each k's 8 lanes land as in
 * pack_tn_block, the last two overwritten by the next k or in the unread gap. */
static void pack_rows_block(float *ap, const float *A, size_t lda, int kc, int mc, size_t ps)
{
    for (int t = 0; t * 6 < mc; t++) {
        int R = imin(6, mc - 6 * t), k = 0;
        const float *src = A + (size_t)6 * t * lda;
        float *dst = ap + t * ps;
        for (; k + 8 <= kc; k += 8) {
            __m256 r[8];
            for (int q = 0; q < 8; q++)
                r[q] = q < R ? _mm256_loadu_ps(src + (size_t)q * lda + k) : _mm256_setzero_ps();
            transpose8(r);
            for (int q = 0; q < 8; q++)
                _mm256_storeu_ps(dst + 6 * (k + q), r[q]);
        }
        for (; k < kc; k++)
            for (int q = 0; q < 6; q++)
                dst[6 * k + q] = q < R ? src[(size_t)q * lda + k] : 0.0f;
    }
}

/* The k blocks of nn (trans = 0) or nt (trans = 1) over rows in blocks of MC, each
 * block of A packed (pack_rows_block), the epilogue on the last k block only. */
ALWAYS_INLINE void gemm_blocks(int trans, int M, int N, int K, const float *A, size_t lda,
                               const float *B, size_t ldb, float *C, size_t ldc,
                               int accumulate, int epi, Epi e)
{
    float *bp = scratch_floats(0, (size_t)KC * PANEL);
    float *ap = scratch_floats(1, (size_t)MC / 6 * (6 * KC + 8));
    for (int k0 = 0; k0 < K; k0 += KC) {
        int kc = imin(KC, K - k0), load_c = accumulate || k0 > 0, last = k0 + kc >= K;
        const float *Bk = trans ? B + k0 : B + (size_t)k0 * ldb;
        size_t ps = (size_t)6 * kc + 8;
        for (int i0 = 0; i0 < M; i0 += MC) {
            int mc = imin(MC, M - i0);
            float *c = C + (size_t)i0 * ldc;
            pack_rows_block(ap, A + (size_t)i0 * lda + k0, lda, kc, mc, ps);
            if (last)
                block_bcast(trans, mc, N, kc, ap, 1, 6, ps, Bk, ldb, bp, c, ldc, load_c, epi,
                            epi_at(e, (size_t)i0 * ldc, 0));
            else
                block_bcast(trans, mc, N, kc, ap, 1, 6, ps, Bk, ldb, bp, c, ldc, load_c,
                            EPI_NONE, e);
        }
    }
}

#endif

/* nn for one row of A (sampling): packing a panel of B would cost more than the one
 * tile that reads it, so the tiles read B in place. Same chains as gemm_blocks. */
ALWAYS_INLINE void gemm_row_epi(int N, int K, const float *a, const float *B, size_t ldb,
                                float *C, int accumulate, int epi, Epi e)
{
    for (int j = 0; j < N; j += PANEL) {
        int nc = imin(PANEL, N - j);
        tile_nc(1, nc, panel_mask(nc), K, a, 0, 1, 0, B + j, ldb, C + j, 0, accumulate, epi,
                epi_at(e, 0, j));
    }
}

static void gemm_nn_row(int N, int K, const float *a, const float *B, size_t ldb, float *C,
                        int accumulate, const float *bias)
{
    Epi e = { bias, NULL };
    if (bias)
        gemm_row_epi(N, K, a, B, ldb, C, accumulate, EPI_BIAS, e);
    else
        gemm_row_epi(N, K, a, B, ldb, C, accumulate, EPI_NONE, e);
}

static void gemm_nn(int M, int N, int K, const float *A, size_t lda, const float *B,
                    size_t ldb, float *C, size_t ldc, int accumulate)
{
    Epi none = { NULL, NULL };
    if (M == 1)
        gemm_nn_row(N, K, A, B, ldb, C, accumulate, NULL);
    else
        gemm_blocks(0, M, N, K, A, lda, B, ldb, C, ldc, accumulate, EPI_NONE, none);
}

/* gemm_nn, then C = C * s (s has C's layout). */
static void gemm_nn_scaled(int M, int N, int K, const float *A, size_t lda, const float *B,
                           size_t ldb, float *C, size_t ldc, const float *s)
{
    Epi e = { NULL, (float *)s }; /* EPI_SCALE only reads aux */
    gemm_blocks(0, M, N, K, A, lda, B, ldb, C, ldc, 0, EPI_SCALE, e);
}

/* C[M][N] (+)= A[M][K] . B[N][K]^T (+ bias[j] after the sum), K >= 1: as gemm_nn, with
 * B's panels gathered by pack_panel_t. */
static void gemm_nt(int M, int N, int K, const float *A, size_t lda, const float *B,
                    size_t ldb, float *C, size_t ldc, int accumulate, const float *bias)
{
    Epi e = { bias, NULL };
    if (bias)
        gemm_blocks(1, M, N, K, A, lda, B, ldb, C, ldc, accumulate, EPI_BIAS, e);
    else
        gemm_blocks(1, M, N, K, A, lda, B, ldb, C, ldc, accumulate, EPI_NONE, e);
}

/* x = A . B^T + bias as gemm_nt; C = gelu(x), dC = gelu'(x) (dC has C's layout). */
static void gemm_nt_gelu(int M, int N, int K, const float *A, size_t lda, const float *B,
                         size_t ldb, float *C, size_t ldc, const float *bias, float *dC)
{
    Epi e = { bias, dC };
    gemm_blocks(1, M, N, K, A, lda, B, ldb, C, ldc, 0, EPI_GELU, e);
#if MATMUL_AVX512
    _mm_sfence(); /* dC was written with streaming stores (stream16) */
#endif
}

/* Copies A[k][i] (k < kc, i < mc, row stride lda) as 6-column pieces: piece t holds
 * A[k][6t..6t+5] at ap + t*ps + 6*k (zero past mc), ps >= 6*kc + 2. A copy, not a
 * transpose: each piece is already contiguous in A. Each k moves 8 lanes (the piece's
 * 6, then the next piece's first two or zeros past the block); the two extra lanes
 * land where the next k's copy goes, or in the gap after the piece, never read. Rows
 * are taken 8 at a time for all pieces: going down one piece's whole column instead
 * read kc rows at stride lda, which for lda a multiple of 256 floats share a few L1
 * sets and were evicted before the next piece reused them. */
static void pack_tn_block(float *ap, const float *A, size_t lda, int kc, int mc, size_t ps)
{
    for (int k0 = 0; k0 < kc; k0 += 8) {
        int k1 = imin(k0 + 8, kc), t = 0;
        /* Pieces whose 8 loaded lanes lie inside the block: plain loads (masked ones
         * are slower); the last piece or two mask what lies past the block. */
        for (; 6 * t + 8 <= mc; t++) {
            const float *src = A + (size_t)k0 * lda + 6 * t;
            float *dst = ap + t * ps + 6 * k0;
            for (int k = k0; k < k1; k++, src += lda, dst += 6)
                _mm256_storeu_ps(dst, _mm256_loadu_ps(src));
        }
        for (; t * 6 < mc; t++) {
            __m256i m = mask_first(imin(6, mc - 6 * t));
            const float *src = A + (size_t)k0 * lda + 6 * t;
            float *dst = ap + t * ps + 6 * k0;
            for (int k = k0; k < k1; k++, src += lda, dst += 6)
                _mm256_storeu_ps(dst, _mm256_maskload_ps(src, m));
        }
    }
}

/* C[M][N] (+)= A[K][M]^T . B[K][N], K >= 1. Read in place, a tile's A would be one
 * cache line per k at stride lda, which for lda = 512 or 1024 floats keeps hitting the
 * same few L1 sets; so each MC_TN x KC block of A is first packed. */
static void gemm_tn(int M, int N, int K, const float *A, size_t lda, const float *B,
                    size_t ldb, float *C, size_t ldc, int accumulate)
{
    float *bp = scratch_floats(0, (size_t)KC * PANEL);
    float *ap = scratch_floats(1, (size_t)MC_TN / 6 * (6 * KC + 8));
    Epi none = { NULL, NULL };
    for (int k0 = 0; k0 < K; k0 += KC) {
        int kc = imin(KC, K - k0), load_c = accumulate || k0 > 0;
        for (int i0 = 0; i0 < M; i0 += MC_TN) {
            int mc = imin(MC_TN, M - i0);
            pack_tn_block(ap, A + (size_t)k0 * lda + i0, lda, kc, mc, (size_t)6 * kc + 8);
            block_bcast(0, mc, N, kc, ap, 1, 6, (size_t)6 * kc + 8, B + (size_t)k0 * ldb, ldb, bp,
                        C + (size_t)i0 * ldc, ldc, load_c, EPI_NONE, none);
        }
    }
}

#else /* portable */

#ifdef FP_FAST_FMAF
#define MADD(a, b, s) fmaf((a), (b), (s))
#else
#define MADD(a, b, s) ((s) + (a) * (b))
#endif

/* C[M][N] (+)= sum_k a(i,k) * b(k,j) (+ bias[j] after the sum), a(i,k) = A[i*rsa +
 * k*csa], b(k,j) = B[k*rsb + j*csb]; one row of C at a time, JC columns kept in a
 * local array so the j loop vectorises when csb = 1. */
static void gemm_bcast(int M, int N, int K, const float *A, size_t rsa, size_t csa,
                       const float *B, size_t rsb, size_t csb, float *C, size_t ldc,
                       int accumulate, const float *bias)
{
    enum { JC = 256 };
    float acc[JC];
    for (int j0 = 0; j0 < N; j0 += JC) {
        int nc = imin(JC, N - j0);
        for (int i = 0; i < M; i++) {
            float *c = C + (size_t)i * ldc + j0;
            for (int j = 0; j < nc; j++)
                acc[j] = accumulate ? c[j] : 0.0f;
            for (int k = 0; k < K; k++) {
                float a = A[(size_t)i * rsa + (size_t)k * csa];
                const float *b = B + (size_t)k * rsb + (size_t)j0 * csb;
                for (int j = 0; j < nc; j++)
                    acc[j] = MADD(a, b[(size_t)j * csb], acc[j]);
            }
            for (int j = 0; j < nc; j++)
                c[j] = bias ? acc[j] + bias[j0 + j] : acc[j];
        }
    }
}

static void gemm_nn(int M, int N, int K, const float *A, size_t lda, const float *B,
                    size_t ldb, float *C, size_t ldc, int accumulate)
{
    gemm_bcast(M, N, K, A, lda, 1, B, ldb, 1, C, ldc, accumulate, NULL);
}

static void gemm_tn(int M, int N, int K, const float *A, size_t lda, const float *B,
                    size_t ldb, float *C, size_t ldc, int accumulate)
{
    gemm_bcast(M, N, K, A, 1, lda, B, ldb, 1, C, ldc, accumulate, NULL);
}

static void gemm_nt(int M, int N, int K, const float *A, size_t lda, const float *B,
                    size_t ldb, float *C, size_t ldc, int accumulate, const float *bias)
{
    gemm_bcast(M, N, K, A, lda, 1, B, 1, ldb, C, ldc, accumulate, bias);
}

/* The epilogues of the AVX2 path, as a pass over the finished rows: C = gelu(C) and
 * dC = gelu'(C) (dC != NULL), or C = C * s (s != NULL); 8 lanes at a time through
 * vmath.h, padded at the end of a row, the same operations as the AVX2 tiles' (the
 * same bits where the target has a fast fmaf, as for the chains above). */
static void rows_epilogue(int M, int N, float *C, size_t ldc, float *dC, const float *s)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j += 8) {
            int n = imin(8, N - j);
            size_t at = (size_t)i * ldc + j;
            float t[8] = { 0 }, u[8] = { 0 };
            memcpy(t, C + at, (size_t)n * sizeof(float));
            v8f x = v8_load(t);
            if (s) {
                memcpy(u, s + at, (size_t)n * sizeof(float));
                v8_store(t, x * v8_load(u));
            } else {
                v8f g = v8_gelu_gate(x);
                v8_store(t, x * g);
                v8_store(u, v8_gelu_grad_gated(x, g));
                memcpy(dC + at, u, (size_t)n * sizeof(float));
            }
            memcpy(C + at, t, (size_t)n * sizeof(float));
        }
}

static void gemm_nn_row(int N, int K, const float *a, const float *B, size_t ldb, float *C,
                        int accumulate, const float *bias)
{
    gemm_bcast(1, N, K, a, 0, 1, B, ldb, 1, C, 0, accumulate, bias);
}

static void gemm_nn_scaled(int M, int N, int K, const float *A, size_t lda, const float *B,
                           size_t ldb, float *C, size_t ldc, const float *s)
{
    gemm_nn(M, N, K, A, lda, B, ldb, C, ldc, 0);
    rows_epilogue(M, N, C, ldc, NULL, s);
}

static void gemm_nt_gelu(int M, int N, int K, const float *A, size_t lda, const float *B,
                         size_t ldb, float *C, size_t ldc, const float *bias, float *dC)
{
    gemm_nt(M, N, K, A, lda, B, ldb, C, ldc, 0, bias);
    rows_epilogue(M, N, C, ldc, dC, NULL);
}

#endif

/* K = 0 leaves the empty sum: C = 0, or C unchanged when accumulating. */
static int empty_product(int M, int N, int K, float *C, int ldc, int accumulate)
{
    if (M <= 0 || N <= 0)
        return 1;
    if (K > 0)
        return 0;
    if (!accumulate)
        for (int i = 0; i < M; i++)
            memset(C + (size_t)i * ldc, 0, (size_t)N * sizeof(float));
    return 1;
}

void matmul_nt(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
              float *C, int ldc, int accumulate)
{
    if (!empty_product(M, N, K, C, ldc, accumulate))
        gemm_nt(M, N, K, A, (size_t)lda, B, (size_t)ldb, C, (size_t)ldc, accumulate, NULL);
}

void matmul_nn(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
              float *C, int ldc, int accumulate)
{
    if (!empty_product(M, N, K, C, ldc, accumulate))
        gemm_nn(M, N, K, A, (size_t)lda, B, (size_t)ldb, C, (size_t)ldc, accumulate);
}

void matmul_tn(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
              float *C, int ldc, int accumulate)
{
    if (!empty_product(M, N, K, C, ldc, accumulate))
        gemm_tn(M, N, K, A, (size_t)lda, B, (size_t)ldb, C, (size_t)ldc, accumulate);
}

/* The entry points kernels/linear.c builds the parallel layers from (matmul_kernels.h). */
void matmul_kernel_nt(int M, int N, int K, const float *A, size_t lda, const float *B,
                      size_t ldb, float *C, size_t ldc, const float *bias)
{
    gemm_nt(M, N, K, A, lda, B, ldb, C, ldc, 0, bias);
}

void matmul_kernel_nt_gelu(int M, int N, int K, const float *A, size_t lda, const float *B,
                           size_t ldb, float *C, size_t ldc, const float *bias, float *dC)
{
    gemm_nt_gelu(M, N, K, A, lda, B, ldb, C, ldc, bias, dC);
}

void matmul_kernel_nn_scaled(int M, int N, int K, const float *A, size_t lda, const float *B,
                             size_t ldb, float *C, size_t ldc, const float *s)
{
    gemm_nn_scaled(M, N, K, A, lda, B, ldb, C, ldc, s);
}

void matmul_kernel_nn_row(int N, int K, const float *a, const float *B, size_t ldb, float *C,
                          const float *bias)
{
    gemm_nn_row(N, K, a, B, ldb, C, 0, bias);
}
