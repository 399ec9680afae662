/* matmul: the sgemm kernels (nt, nn, tn) and the OpenMP linear layer built on them.
 *
 * Two implementations of the same arithmetic: an AVX2+FMA one with register-tiled
 * micro-kernels, used when the compiler targets AVX2 and FMA, and a portable C one.
 * The matmul_* kernels never start threads (attention calls them inside its own
 * parallel loop); only matmul_forward / matmul_backward do. Tiling and measured speed
 * are in docs/matmul.md; this comment states the float operations, because the
 * determinism contract in matmul.h is a promise about them.
 *
 * nn and tn (broadcast kernels): C[i][j] is one chain s = fma(a_ik, b_kj, s) over
 * k = 0..K-1 in order, starting from 0, or from the old C[i][j] when accumulating.
 * The AVX2 tile holds 6 rows x 16 columns of such chains in registers; blocking over
 * k only stores s to C and reloads it, which changes no bit.
 *
 * nt (dot-product kernel): with l[0..7] = 0, lane q accumulates l[q] = fma(a_k, b_k,
 * l[q]) for k = q, q+8, q+16, ... < K in order; then dot = ((l0+l2) + (l1+l3)) +
 * ((l4+l6) + (l5+l7)); then C = dot, or C = C_old + dot when accumulating (the old
 * value enters last, after the reduction), or out = dot + bias in matmul_forward.
 * The AVX2 tile holds 3 rows x 4 columns of eight-lane accumulators; the last partial
 * chunk of k is read with masked loads, whose zero lanes add fma(0, 0, l) = l (l is
 * never -0, as it starts at +0), so it equals skipping them.
 *
 * Edge tiles compute the same chains: rows past the edge repeat the last valid row
 * pointer and their results are dropped, nt narrows its tile at the right edge, and
 * nn/tn partial column vectors use masked loads and stores. So no float
 * sum depends on the tiling or on the split among threads.
 *
 * The portable code follows the same orders, with fmaf where the target has a fast
 * one (FP_FAST_FMAF; then its bits equal the AVX2 path's) and a separate multiply
 * and add otherwise. */
#include "matmul.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__AVX2__) && defined(__FMA__)
#define MATMUL_AVX2 1
#include <immintrin.h>
#else
#define MATMUL_AVX2 0
#endif

#define ALWAYS_INLINE static inline __attribute__((always_inline))

static int imin(int a, int b) { return a < b ? a : b; }
static int imax(int a, int b) { return a > b ? a : b; }

/* The nt lane reduction; reduce4 below is its vector form. */
static inline float tree8(const float l[8])
{
    return ((l[0] + l[2]) + (l[1] + l[3])) + ((l[4] + l[6]) + (l[5] + l[7]));
}

#if MATMUL_AVX2

/* Cache blocking (floats). nn: a KC x 16 panel of B (16 KiB) stays in L1 while an
 * MC x KC block of A sits in L2. tn: the same, with the MC_TN x KC block of A packed
 * (96 KiB). nt: NT_BLOCK floats of B rows (24 KiB) stay in L1 while NT_MB rows of A
 * pass by. The packing buffers live on the stack: 112 KiB at most, per call. */
enum { KC = 256, MC = 96, MC_TN = 96, NT_MB = 96, NT_BLOCK = 6144 };
_Static_assert(MC_TN % 6 == 0, "tn packs whole 6-row tiles");

/* Lane mask selecting the first n (0..8) lanes. */
static inline __m256i mask_first(int n)
{
    return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

ALWAYS_INLINE __m256 load8(const float *p, int masked, __m256i mask)
{
    return masked ? _mm256_maskload_ps(p, mask) : _mm256_loadu_ps(p);
}

ALWAYS_INLINE void store8(float *p, __m256 v, int masked, __m256i mask)
{
    if (masked)
        _mm256_maskstore_ps(p, mask, v);
    else
        _mm256_storeu_ps(p, v);
}

/* One tile of C for nn/tn: 6 rows x 8*nv columns (nv = 1 or 2), of which the first mr
 * rows are live; `masked` means C's last vector of columns is partial (lanes in mask).
 *   a -> A element (i0, k0); (r, k) at a + min(r, mr-1)*rsa + k*csa
 *   b -> packed B panel, row k at b + 16*k (zero past the live columns)
 *   c -> C[i0][j0], row r at c + r*ldc
 * load_c: start each chain from C (accumulating or a later k block), else from 0. */
ALWAYS_INLINE void tile_bcast(int nv, int masked, __m256i mask, int mr, int K, const float *a,
                              size_t rsa, size_t csa, const float *b, float *c, size_t ldc,
                              int load_c)
{
    __m256 acc[6][2];
    for (int r = 0; r < 6; r++)
        for (int v = 0; v < nv; v++)
            acc[r][v] = (load_c && r < mr)
                            ? load8(c + r * ldc + 8 * v, masked && v == nv - 1, mask)
                            : _mm256_setzero_ps();
    const float *ar[6];
    for (int r = 0; r < 6; r++)
        ar[r] = a + (size_t)imin(r, mr - 1) * rsa;
    for (int k = 0; k < K; k++) {
        __m256 b0 = _mm256_load_ps(b + 16 * k);
        __m256 b1 = nv == 2 ? _mm256_load_ps(b + 16 * k + 8) : b0;
        for (int r = 0; r < 6; r++) {
            __m256 av = _mm256_broadcast_ss(ar[r] + (size_t)k * csa);
            acc[r][0] = _mm256_fmadd_ps(av, b0, acc[r][0]);
            if (nv == 2)
                acc[r][1] = _mm256_fmadd_ps(av, b1, acc[r][1]);
        }
    }
    for (int r = 0; r < 6; r++)
        if (r < mr)
            for (int v = 0; v < nv; v++)
                store8(c + r * ldc + 8 * v, acc[r][v], masked && v == nv - 1, mask);
}

/* Copies B[0..kc-1][0..nc-1] (row stride ldb) into a kc x 16 panel, zero-padded. */
static void pack_panel(float *bp, const float *b, size_t ldb, int kc, int nc)
{
    for (int k = 0; k < kc; k++, b += ldb, bp += 16) {
        if (nc == 16) {
            _mm256_store_ps(bp, _mm256_loadu_ps(b));
            _mm256_store_ps(bp + 8, _mm256_loadu_ps(b + 8));
        } else {
            for (int j = 0; j < 16; j++)
                bp[j] = j < nc ? b[j] : 0.0f;
        }
    }
}

/* The tiles of one stripe of C (M rows x 16 columns) against a packed B panel; tile
 * t's A starts at a + t*tstep. Full 6-row tiles get their own instantiation so their
 * row offsets are constants. */
ALWAYS_INLINE void stripe_bcast(int nv, int masked, __m256i mask, int M, int kc,
                                const float *a, size_t rsa, size_t csa, size_t tstep,
                                const float *bp, float *c, size_t ldc, int load_c)
{
    int i = 0;
    for (; i + 6 <= M; i += 6, a += tstep)
        tile_bcast(nv, masked, mask, 6, kc, a, rsa, csa, bp, c + (size_t)i * ldc, ldc, load_c);
    if (i < M)
        tile_bcast(nv, masked, mask, M - i, kc, a, rsa, csa, bp, c + (size_t)i * ldc, ldc,
                   load_c);
}

/* One block of C (mc rows x N columns) += one k block: a(r, k) = a[r*rsa + k*csa]
 * (tile t's rows start at a + t*tstep), B rows k0.. at B. Each 16-column panel of B is
 * first copied (not transposed) into bp, so the kernel reads it at unit stride, free
 * of cache-set conflicts. */
ALWAYS_INLINE void block_bcast(int mc, int N, int kc, const float *a, size_t rsa, size_t csa,
                               size_t tstep, const float *B, size_t ldb, float *bp, float *C,
                               size_t ldc, int load_c)
{
    for (int j = 0; j < N; j += 16) {
        int nc = imin(16, N - j);
        __m256i mask = mask_first(nc > 8 ? nc - 8 : nc);
        float *c = C + j;
        pack_panel(bp, B + j, ldb, kc, nc);
        if (nc == 16)
            stripe_bcast(2, 0, mask, mc, kc, a, rsa, csa, tstep, bp, c, ldc, load_c);
        else if (nc > 8)
            stripe_bcast(2, 1, mask, mc, kc, a, rsa, csa, tstep, bp, c, ldc, load_c);
        else if (nc == 8)
            stripe_bcast(1, 0, mask, mc, kc, a, rsa, csa, tstep, bp, c, ldc, load_c);
        else
            stripe_bcast(1, 1, mask, mc, kc, a, rsa, csa, tstep, bp, c, ldc, load_c);
    }
}

/* C[M][N] (+)= A[M][K] . B[K][N], K >= 1. A is read in place: its six rows per tile
 * are six unit-stride streams. */
static void gemm_nn(int M, int N, int K, const float *A, size_t lda, const float *B,
                    size_t ldb, float *C, size_t ldc, int accumulate)
{
    _Alignas(64) float bp[KC * 16];
    for (int k0 = 0; k0 < K; k0 += KC) {
        int kc = imin(KC, K - k0), load_c = accumulate || k0 > 0;
        for (int i0 = 0; i0 < M; i0 += MC)
            block_bcast(imin(MC, M - i0), N, kc, A + (size_t)i0 * lda + k0, lda, 1, 6 * lda,
                        B + (size_t)k0 * ldb, ldb, bp, C + (size_t)i0 * ldc, ldc, load_c);
    }
}

/* Copies A[k][i] (k < kc, i < mc, row stride lda) as 6-column pieces: piece t holds
 * A[k][6t..6t+5] at ap + t*6*kc + 6*k (zero past mc). A copy, not a transpose: each
 * piece is already contiguous in A. */
static void pack_tn_block(float *ap, const float *A, size_t lda, int kc, int mc)
{
    for (int t = 0; t * 6 < mc; t++) {
        int live = imin(6, mc - 6 * t);
        for (int k = 0; k < kc; k++) {
            const float *src = A + (size_t)k * lda + 6 * t;
            for (int r = 0; r < 6; r++)
                ap[6 * k + r] = r < live ? src[r] : 0.0f;
        }
        ap += 6 * kc;
    }
}

/* C[M][N] (+)= A[K][M]^T . B[K][N], K >= 1. Read in place, a tile's A would be one
 * cache line per k at stride lda, which for lda = 512 or 1024 floats keeps hitting the
 * same few L1 sets; so each MC_TN x KC block of A is first packed. */
static void gemm_tn(int M, int N, int K, const float *A, size_t lda, const float *B,
                    size_t ldb, float *C, size_t ldc, int accumulate)
{
    _Alignas(64) float bp[KC * 16];
    _Alignas(64) float ap[MC_TN * KC];
    for (int k0 = 0; k0 < K; k0 += KC) {
        int kc = imin(KC, K - k0), load_c = accumulate || k0 > 0;
        for (int i0 = 0; i0 < M; i0 += MC_TN) {
            int mc = imin(MC_TN, M - i0);
            pack_tn_block(ap, A + (size_t)k0 * lda + i0, lda, kc, mc);
            block_bcast(mc, N, kc, ap, 1, 6, (size_t)6 * kc, B + (size_t)k0 * ldb, ldb, bp,
                        C + (size_t)i0 * ldc, ldc, load_c);
        }
    }
}

/* Finishes four dot products: result q = tree8(lanes of cq). unpack + add pairs
 * lanes (0,2), (1,3), (4,6), (5,7); the shuffles + add join those pairs; the last
 * add joins the two 128-bit halves: the bracketing of tree8. */
ALWAYS_INLINE __m128 reduce4(__m256 c0, __m256 c1, __m256 c2, __m256 c3)
{
    __m256 s01 = _mm256_add_ps(_mm256_unpacklo_ps(c0, c1), _mm256_unpackhi_ps(c0, c1));
    __m256 s23 = _mm256_add_ps(_mm256_unpacklo_ps(c2, c3), _mm256_unpackhi_ps(c2, c3));
    __m256 t = _mm256_add_ps(_mm256_shuffle_ps(s01, s23, _MM_SHUFFLE(1, 0, 1, 0)),
                             _mm256_shuffle_ps(s01, s23, _MM_SHUFFLE(3, 2, 3, 2)));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1));
}

/* One tile of C for nt: 3 rows (A rows ar[0..2], mr live; dead rows repeat the last
 * live pointer) x nr columns (B rows br[0..nr-1]; nr = 4, or 1..3 at the right edge
 * so that a narrow edge does not cost a full tile).
 * c -> C[i0][j0]; add (may be NULL) -> value added after the dot, row r at
 * add + r*ld_add (C itself when accumulating, the bias with ld_add = 0). */
ALWAYS_INLINE void tile_dot(int nr, int mr, int K, const float *const ar[3],
                            const float *const br[4], float *c, size_t ldc, const float *add,
                            size_t ld_add)
{
    __m256 acc[3][4];
    for (int r = 0; r < 3; r++)
        for (int q = 0; q < 4; q++)
            acc[r][q] = _mm256_setzero_ps();
    const float *a0 = ar[0], *a1 = ar[1], *a2 = ar[2];
    int k = 0;
    /* The empty asm statements pin the loaded vectors in registers (12 accumulators
     * + 3 + 1 = 16): gcc would otherwise fold them into the FMAs as memory operands
     * and load each one 3 or 4 times, which makes the loop load-bound. */
    for (; k + 8 <= K; k += 8) {
        __m256 a[3] = { _mm256_loadu_ps(a0 + k), _mm256_loadu_ps(a1 + k),
                        _mm256_loadu_ps(a2 + k) };
        __asm__("" : "+x"(a[0]), "+x"(a[1]), "+x"(a[2]));
        for (int q = 0; q < nr; q++) {
            __m256 bv = _mm256_loadu_ps(br[q] + k);
            __asm__("" : "+x"(bv));
            for (int r = 0; r < 3; r++)
                acc[r][q] = _mm256_fmadd_ps(a[r], bv, acc[r][q]);
        }
    }
    if (k < K) {
        __m256i m = mask_first(K - k);
        __m256 a[3] = { _mm256_maskload_ps(a0 + k, m), _mm256_maskload_ps(a1 + k, m),
                        _mm256_maskload_ps(a2 + k, m) };
        for (int q = 0; q < nr; q++) {
            __m256 bv = _mm256_maskload_ps(br[q] + k, m);
            for (int r = 0; r < 3; r++)
                acc[r][q] = _mm256_fmadd_ps(a[r], bv, acc[r][q]);
        }
    }
    __m128 dots[3];
    for (int r = 0; r < 3; r++)
        dots[r] = reduce4(acc[r][0], acc[r][imin(1, nr - 1)], acc[r][imin(2, nr - 1)],
                          acc[r][nr - 1]);
    for (int r = 0; r < mr; r++) {
        __m128 d = dots[r];
        float *cr = c + r * ldc;
        const float *addr = add ? add + r * ld_add : NULL;
        if (nr == 4) {
            if (addr)
                d = _mm_add_ps(_mm_loadu_ps(addr), d);
            _mm_storeu_ps(cr, d);
        } else {
            float t[4];
            _mm_storeu_ps(t, d);
            for (int q = 0; q < nr; q++)
                cr[q] = addr ? addr[q] + t[q] : t[q];
        }
    }
}

/* The 3 x 4 tiles of one block of C for nt. */
static void dot_block(int M, int N, int K, const float *A, size_t lda, const float *B,
                      size_t ldb, float *C, size_t ldc, const float *add, size_t ld_add)
{
    for (int i = 0; i < M; i += 3) {
        int mr = imin(3, M - i);
        const float *ar[3];
        for (int r = 0; r < 3; r++)
            ar[r] = A + (size_t)(i + imin(r, mr - 1)) * lda;
        for (int j = 0; j < N; j += 4) {
            int nc = imin(4, N - j);
            const float *br[4];
            for (int q = 0; q < 4; q++)
                br[q] = B + (size_t)(j + imin(q, nc - 1)) * ldb;
            const float *addij = add ? add + (size_t)i * ld_add + j : NULL;
            float *cij = C + (size_t)i * ldc + j;
            switch (nc) {
            case 1:
                tile_dot(1, mr, K, ar, br, cij, ldc, addij, ld_add);
                break;
            case 2:
                tile_dot(2, mr, K, ar, br, cij, ldc, addij, ld_add);
                break;
            case 3:
                tile_dot(3, mr, K, ar, br, cij, ldc, addij, ld_add);
                break;
            default:
                tile_dot(4, mr, K, ar, br, cij, ldc, addij, ld_add);
            }
        }
    }
}

/* C[M][N] = add + A[M][K] . B[N][K]^T, `add` as in tile_dot (row stride ld_add). */
static void gemm_dot(int M, int N, int K, const float *A, size_t lda, const float *B,
                     size_t ldb, float *C, size_t ldc, const float *add, size_t ld_add)
{
    int jb = imax(4, (NT_BLOCK / imax(K, 1)) & ~3);
    for (int i0 = 0; i0 < M; i0 += NT_MB)
        for (int j0 = 0; j0 < N; j0 += jb)
            dot_block(imin(NT_MB, M - i0), imin(jb, N - j0), K, A + (size_t)i0 * lda, lda,
                      B + (size_t)j0 * ldb, ldb, C + (size_t)i0 * ldc + j0, ldc,
                      add ? add + (size_t)i0 * ld_add + j0 : NULL, ld_add);
}

#else /* portable */

#ifdef FP_FAST_FMAF
#define MADD(a, b, s) fmaf((a), (b), (s))
#else
#define MADD(a, b, s) ((s) + (a) * (b))
#endif

/* C[M][N] (+)= sum_k a(i,k) * B[k][j], a(i,k) = A[i*rsa + k*csa]; one row of C at a
 * time, JC columns kept in a local array so the j loop vectorises. */
static void gemm_bcast(int M, int N, int K, const float *A, size_t rsa, size_t csa,
                       const float *B, size_t ldb, float *C, size_t ldc, int accumulate)
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
                const float *b = B + (size_t)k * ldb + j0;
                for (int j = 0; j < nc; j++)
                    acc[j] = MADD(a, b[j], acc[j]);
            }
            memcpy(c, acc, (size_t)nc * sizeof(float));
        }
    }
}

static void gemm_nn(int M, int N, int K, const float *A, size_t lda, const float *B,
                    size_t ldb, float *C, size_t ldc, int accumulate)
{
    gemm_bcast(M, N, K, A, lda, 1, B, ldb, C, ldc, accumulate);
}

static void gemm_tn(int M, int N, int K, const float *A, size_t lda, const float *B,
                    size_t ldb, float *C, size_t ldc, int accumulate)
{
    gemm_bcast(M, N, K, A, 1, lda, B, ldb, C, ldc, accumulate);
}

/* The nt scheme of the header comment for one pair of rows. */
static float dot_lanes(const float *a, const float *b, int K)
{
    float l[8] = { 0 };
    int k = 0;
    for (; k + 8 <= K; k += 8)
        for (int q = 0; q < 8; q++)
            l[q] = MADD(a[k + q], b[k + q], l[q]);
    for (int q = 0; k + q < K; q++)
        l[q] = MADD(a[k + q], b[k + q], l[q]);
    return tree8(l);
}

static void gemm_dot(int M, int N, int K, const float *A, size_t lda, const float *B,
                     size_t ldb, float *C, size_t ldc, const float *add, size_t ld_add)
{
    enum { JB = 64 };
    for (int j0 = 0; j0 < N; j0 += JB)
        for (int i = 0; i < M; i++)
            for (int j = j0; j < imin(j0 + JB, N); j++) {
                float d = dot_lanes(A + (size_t)i * lda, B + (size_t)j * ldb, K);
                C[(size_t)i * ldc + j] = add ? add[(size_t)i * ld_add + j] + d : d;
            }
}

#endif

void matmul_nt(int M, int N, int K, const float *A, int lda, const float *B, int ldb,
              float *C, int ldc, int accumulate)
{
    if (M <= 0 || N <= 0)
        return;
    gemm_dot(M, N, K, A, (size_t)lda, B, (size_t)ldb, C, (size_t)ldc,
             accumulate ? C : NULL, (size_t)ldc);
}

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

/* The split of an M x N output among threads into about per_thread tiles per thread:
 * columns in blocks of at most max_cols, rows in blocks of at least min_rows, and
 * narrower column blocks when the rows alone do not give enough tiles. Sizes are
 * multiples of the kernel tile. Only speed depends on the split. */
typedef struct {
    int M, N, rb, cb, nrb, ncb;
} Tiles;

static int ceil_div(int a, int b) { return (a + b - 1) / b; }

static Tiles tiles_plan(int M, int N, int row_align, int col_align, int min_rows, int max_cols,
                        int per_thread)
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
    int nrb = imax(1, imin(ceil_div(want, ncb), M / min_rows));
    if (nrb * ncb < want)
        ncb = imax(ncb, imin(ceil_div(want, nrb), ceil_div(N, col_align)));
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
    *m = imin(t->rb, t->M - *i0);
    *n = imin(t->cb, t->N - *j0);
}

/* Below this many flops a product runs on the calling thread alone. */
#define PARALLEL_MIN_FLOPS (1 << 20)

void matmul_forward(float *out, const float *in, const float *W, const float *bias,
                    int N, int IC, int OC)
{
    Tiles t = tiles_plan(N, OC, 3, 4, 48, 192, 4);
    double flops = 2.0 * N * IC * OC;
    #pragma omp parallel for schedule(dynamic, 1) if (flops >= PARALLEL_MIN_FLOPS)
    for (int tile = 0; tile < t.nrb * t.ncb; tile++) {
        int i0, j0, m, n;
        tile_at(&t, tile, &i0, &j0, &m, &n);
        gemm_dot(m, n, IC, in + (size_t)i0 * IC, (size_t)IC, W + (size_t)j0 * IC,
                 (size_t)IC, out + (size_t)i0 * OC + j0, (size_t)OC,
                 bias ? bias + j0 : NULL, 0);
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
 * three gradients share no output, so threads move on without a barrier). */
void matmul_backward(float *din, float *dW, float *dbias, const float *dout, const float *in,
                     const float *W, int N, int IC, int OC)
{
    Tiles tin = tiles_plan(din ? N : 0, IC, 6, 16, 48, 256, 4); /* din: nn over (n, ic) */
    Tiles tw = tiles_plan(dW ? OC : 0, IC, 6, 16, 48, 128, 2);  /* dW: tn over (oc, ic) */
    int nb = dbias ? (OC + 63) / 64 : 0;                /* dbias: 64 columns each */
    double flops = 2.0 * N * IC * OC * ((din != NULL) + (dW != NULL));
    #pragma omp parallel if (flops >= PARALLEL_MIN_FLOPS)
    {
        #pragma omp for schedule(dynamic, 1) nowait
        for (int tile = 0; tile < tin.nrb * tin.ncb; tile++) {
            int i0, j0, m, n;
            tile_at(&tin, tile, &i0, &j0, &m, &n);
            matmul_nn(m, n, OC, dout + (size_t)i0 * OC, OC, W + j0, IC,
                     din + (size_t)i0 * IC + j0, IC, 1);
        }
        #pragma omp for schedule(dynamic, 1) nowait
        for (int tile = 0; tile < tw.nrb * tw.ncb; tile++) {
            int i0, j0, m, n;
            tile_at(&tw, tile, &i0, &j0, &m, &n);
            matmul_tn(m, n, N, dout + i0, OC, in + j0, IC, dW + (size_t)i0 * IC + j0, IC, 1);
        }
        #pragma omp for schedule(dynamic, 1) nowait
        for (int b = 0; b < nb; b++)
            bias_grad(dbias, dout, N, OC, 64 * b, imin(64, OC - 64 * b));
    }
}
